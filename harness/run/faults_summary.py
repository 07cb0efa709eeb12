"""The summary of a faults run: what was injected, what failed, what the kernels said.

Pure: the measured cells (CellResult, derived from their boot folders by
run/faults.py) in, summary.md and summary.json out. Per kernel and per
workload and filesystem, mainline beside each series: the faults injected
(the kernel's own counters, exact), the operations that failed and with
which errno (the workload's errors line), and every kernel report. A report
is set apart by whether mainline, the control, gave one of the same kind
and title: under the same faults (the same round, workload, filesystem and
vCPUs: the faults are drawn without the kernel) or in another cell of the
run; such a report is 6.1's own. One that only a series gives is a finding.
Titles name a function (syzkaller's style), so a bug that shows in a
function a series renamed reads as a finding: its call chain, in the boot
folder's console at the given line, says which it is.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

CONTROL = "mainline"
ATTR_SHORT = {"failslab": "slab", "fail_page_alloc": "page", "fail_make_request": "block"}

OWN_CONTROL = "mainline's own (6.1)"
OWN_SAME = "6.1's own: mainline gave it under the same faults"
OWN_ELSEWHERE = "6.1's own: mainline gave it under other faults"
FINDING = "finding: only this series gave it"
UNPAIRED = "unclassified: mainline's cell with these faults is not measured"


@dataclass(frozen=True)
class Seen:
    """A kernel report seen while a step ran."""
    kind: str
    title: str
    line: int  # console line of its first line


@dataclass(frozen=True)
class CellResult:
    """One measured faults step, as the summary needs it."""
    kernel: str
    round: int
    workload: str
    fs: str
    cpus: int
    faults: str  # the settings' label (guest/faults.Faults.label)
    status: str  # the step's class (boot/runner.py)
    boot: str  # boot folder, relative to the results folder
    step: str
    wall_s: float | None
    injected: dict[str, int]  # fault_attr -> faults injected (fault_injection.injected)
    bounds_reached: tuple[str, ...]  # fault_attrs that injected all the faults asked
    fault_error: str  # why no fault was armed or counted ("" when they were)
    failed: dict[str, int]  # "op.ERRNO" -> operations that failed so
    reports: tuple[Seen, ...]
    sites: dict[str, int]  # where the console showed faults injected -> how many

    @property
    def pair(self) -> tuple[int, str, str, int]:
        """What this cell shares with the same cell of another kernel: its faults."""
        return self.round, self.workload, self.fs, self.cpus

    @property
    def failed_total(self) -> int:
        return sum(self.failed.values())

    @property
    def injected_total(self) -> int:
        return sum(self.injected.values())


@dataclass(frozen=True)
class Classified:
    result: CellResult
    report: Seen
    verdict: str


def classify(results: list[CellResult]) -> list[Classified]:
    """Every report of every cell, set apart by what mainline gave."""
    control = {r.pair: {(s.kind, s.title) for s in r.reports}
               for r in results if r.kernel == CONTROL}
    anywhere = {key for keys in control.values() for key in keys}
    out = []
    for r in results:
        for seen in r.reports:
            key = (seen.kind, seen.title)
            if r.kernel == CONTROL:
                verdict = OWN_CONTROL
            elif key in control.get(r.pair, set()):
                verdict = OWN_SAME
            elif key in anywhere:
                verdict = OWN_ELSEWHERE
            elif r.pair not in control:
                verdict = UNPAIRED
            else:
                verdict = FINDING
            out.append(Classified(r, seen, verdict))
    return out


def errno_of(op_errno: str) -> str:
    return op_errno.rsplit(".", 1)[-1]


def _errnos(results: list[CellResult]) -> Counter:
    counts: Counter = Counter()
    for r in results:
        for op_errno, n in r.failed.items():
            counts[errno_of(op_errno)] += n
    return counts


def _injected(results: list[CellResult]) -> str:
    totals: Counter = Counter()
    for r in results:
        totals.update(r.injected)
    return " / ".join(str(totals[attr]) for attr in ATTR_SHORT)


def _listing(counts: Counter, limit: int = 4) -> str:
    items = [f"{name} {n}" for name, n in counts.most_common(limit)]
    rest = len(counts) - limit
    return ", ".join(items + ([f"{rest} more"] if rest > 0 else [])) or "0"


def _reports_cell(classified: list[Classified]) -> str:
    if not classified:
        return "0"
    own = sum(1 for c in classified if c.verdict in (OWN_CONTROL, OWN_SAME, OWN_ELSEWHERE))
    findings = sum(1 for c in classified if c.verdict == FINDING)
    other = len(classified) - own - findings
    parts = [f"6.1's own {own}"] if own else []
    parts += [f"**findings {findings}**"] if findings else []
    parts += [f"unclassified {other}"] if other else []
    kinds = Counter(c.report.kind for c in classified)
    return f"{len(classified)} ({', '.join(parts)}; {_listing(kinds)})"


def kernel_order(results: list[CellResult]) -> list[str]:
    """mainline first, then the series in their first-seen order."""
    names = list(dict.fromkeys(r.kernel for r in results))
    return sorted(names, key=lambda k: (k != CONTROL, names.index(k)))


def kernel_table(results: list[CellResult], classified: list[Classified],
                 planned: dict[str, int]) -> list[str]:
    lines = ["| kernel | cells measured | step status | faults injected (slab / page / block) "
             "| operations failed | by errno | reports |", "|---|---|---|---|---|---|---|"]
    for kernel in kernel_order(results):
        mine = [r for r in results if r.kernel == kernel]
        status = Counter(r.status for r in mine)
        lines.append(
            f"| {kernel} | {len(mine)} of {planned.get(kernel, len(mine))} | "
            f"{', '.join(f'{s} {n}' for s, n in sorted(status.items()))} | {_injected(mine)} | "
            f"{sum(r.failed_total for r in mine)} | {_listing(_errnos(mine))} | "
            f"{_reports_cell([c for c in classified if c.result.kernel == kernel])} |")
    return lines


def pair_table(results: list[CellResult], classified: list[Classified]) -> list[str]:
    """Workload and filesystem rows, a column per kernel (mainline first)."""
    kernels = kernel_order(results)
    lines = ["| workload | fs | vCPUs | " + " | ".join(kernels) + " |",
             "|---|---|---|" + "---|" * len(kernels)]
    rows = sorted({(r.workload, r.fs, r.cpus) for r in results})
    for workload, fs, cpus in rows:
        cells = []
        for kernel in kernels:
            mine = [r for r in results
                    if (r.kernel, r.workload, r.fs, r.cpus) == (kernel, workload, fs, cpus)]
            if not mine:
                cells.append("not measured")
                continue
            found = [c for c in classified if c.result in mine]
            cells.append(f"injected {sum(r.injected_total for r in mine)}, failed "
                         f"{sum(r.failed_total for r in mine)} ({_listing(_errnos(mine), 2)}), "
                         f"reports {_reports_cell(found)}")
        lines.append(f"| {workload} | {fs} | {cpus} | " + " | ".join(cells) + " |")
    return lines


def report_table(classified: list[Classified]) -> list[str]:
    if not classified:
        return ["No kernel report in any measured cell."]
    lines = ["| kernel | round | workload/fs | faults | kind | title | verdict | console |",
             "|---|---|---|---|---|---|---|---|"]
    order = {k: i for i, k in enumerate(kernel_order([c.result for c in classified]))}
    for c in sorted(classified, key=lambda c: (c.verdict != FINDING, order[c.result.kernel],
                                                c.result.pair, c.report.line)):
        r = c.result
        verdict = f"**{c.verdict}**" if c.verdict == FINDING else c.verdict
        lines.append(f"| {r.kernel} | {r.round} | {r.workload}/{r.fs} | {r.faults} | "
                     f"{c.report.kind} | {c.report.title} | {verdict} | "
                     f"{r.boot}/console.log:{c.report.line} |")
    return lines


def detail_lines(results: list[CellResult]) -> list[str]:
    """Per kernel: failed operations by operation, and where faults were injected."""
    lines = []
    for kernel in kernel_order(results):
        mine = [r for r in results if r.kernel == kernel]
        by_op: Counter = Counter()
        sites: Counter = Counter()
        for r in mine:
            by_op.update(r.failed)
            sites.update(r.sites)
        unarmed = sorted({r.fault_error for r in mine if r.fault_error})
        lines += [f"- **{kernel}**: operations failed: {_listing(by_op, 8)}; faults the "
                  f"console showed ({sum(sites.values())} of {sum(r.injected_total for r in mine)}"
                  f" injected; __GFP_NOWARN ones print nothing): {_listing(sites, 5)}"
                  + (f"; not armed: {'; '.join(unarmed)}" if unarmed else "")]
    return lines


def markdown(results: list[CellResult], meta: dict, planned: dict[str, int]) -> str:
    classified = classify(results)
    findings = sum(1 for c in classified if c.verdict == FINDING)
    bound_cells = sum(1 for r in results if r.bounds_reached)
    lines = [f"# Faults, seed {meta['seed']}: {len(results)} of {sum(planned.values())} cells "
             f"measured, {meta['wall_s'] / 3600:.2f} h"
             + (f" of the {meta['duration_s'] / 3600:.2f} h asked" if meta.get('duration_s')
                else ""), "", meta["state"], "",
             f"Rounds {', '.join(map(str, meta['rounds']))}; workloads "
             f"{', '.join(meta['workloads'])} on every filesystem they declare, at "
             f"{', '.join(map(str, meta['cpus']))} vCPUs. Each step's faults are drawn from the "
             "seed, the round and the step, never the kernel: every kernel met the same settings. "
             "Injected faults are the kernel's counters, exact until a step's bound is reached "
             "(then the console's count when higher: two tasks injecting the last fault at "
             f"once are counted once); the bound was reached in {bound_cells} of "
             f"{len(results)} cells. Failed operations are the workload's count by errno. "
             f"Findings (reports only a series gave): {findings}.", "",
             "## Per kernel", "", *kernel_table(results, classified, planned), "",
             "## Per workload and filesystem, mainline beside each series", "",
             *pair_table(results, classified), "",
             "## Every kernel report", "", *report_table(classified), "",
             "## What failed and where faults were injected", "", *detail_lines(results)]
    return "\n".join(lines) + "\n"


def write(out: Path, results: list[CellResult], meta: dict, planned: dict[str, int]) -> None:
    """summary.md and summary.json, written whole each time (a killed run leaves both)."""
    (out / "summary.md").write_text(markdown(results, meta, planned))
    (out / "summary.json").write_text(json.dumps({
        **meta, "planned": planned,
        "cells": [asdict(r) for r in results],
        "reports": [{"kernel": c.result.kernel, "pair": list(c.result.pair),
                     "boot": c.result.boot, "kind": c.report.kind, "title": c.report.title,
                     "line": c.report.line, "verdict": c.verdict} for c in classify(results)],
    }, indent=1) + "\n")
