"""The summary of make kcsan: every distinct race, its class, patch and fate, where seen.

Pure: the measured cells (CellResult, derived from their boot folders by
run/kcsan.py, each race's racing lines already traced to the patch that
wrote them by kcsan_origin.py) in, summary.md and summary.json out.

A race is one pair of functions and access types (parsers/kcsan.py
function_key): the same race on two kernels has other offsets wherever their
code differs, never other functions. It is classified, mainline the control:

- 6.1's: mainline gave it, or no patch of the kernel wrote a racing line
  (the lines of each access's first frame, with what was inlined there);
- a common patch's: mainline gave it and its racing lines are a patch's
  that mainline carries too (a stable fix applied to every kernel);
- the series': only series kernels gave it and a patch of theirs wrote a
  racing line; the patch is named per kernel.

Its fate is declared by whoever read it (kcsan/fates: fixed, or the
argument the patch carries), or else follows from its class; a race of the
series' own without a declared fate is "unexplained".
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness.report.blocks import plural

CONTROL = "mainline"
SIXONE = "6.1's"
COMMON = "a common patch's"
SERIES = "the series'"
UNEXPLAINED = "unexplained"
FATE_SIXONE = "6.1's own: left to upstream, shown for every kernel alike"
FATE_COMMON = "in a patch every kernel carries, mainline too"


@dataclass(frozen=True)
class AccessSeen:
    """One access of a race as the summary needs it."""
    type: str  # read, write, read-write, "(marked)"
    function: str
    site: str  # function+offset: one instruction of one image
    lines: tuple[str, ...]  # "fs/inode.c:1761 iput": the racing lines, innermost first
    patch: str | None  # "piggin 0007: subject", the patch that wrote a racing line
    caller_patch: str | None  # the first patch that wrote a line deeper in the stack
    stack: tuple[str, ...]  # the frames as printed
    held_locks: tuple[str, ...] = ()


@dataclass(frozen=True)
class RaceSeen:
    title: str
    key: str  # function_key, as text: the race on every kernel
    sites: str  # site_key, as text: the pair of access sites in one image
    accesses: tuple[AccessSeen, ...]
    value_change: str  # "0x... -> 0x..." or ""
    line: int  # console line of the headline


@dataclass(frozen=True)
class CellResult:
    """One measured kcsan step."""
    kernel: str
    cpus: int
    workload: str
    fs: str
    procs: int
    status: str  # the step's class (boot/runner.py)
    boot: str  # boot folder, relative to the results folder
    step: str
    wall_s: float | None
    armed: bool  # the boot's console says KCSAN was on and its selftest passed
    races: tuple[RaceSeen, ...]
    origin_error: str = ""  # why the racing lines could not be traced ("" when they were)


@dataclass
class Distinct:
    """One race over every kernel."""
    key: str
    title: str
    kernels: Counter = field(default_factory=Counter)  # kernel -> reports
    cells: Counter = field(default_factory=Counter)  # kernel -> cells that gave it
    sites: dict[str, set[str]] = field(default_factory=dict)  # kernel -> pairs of access sites
    patches: dict[str, set[str]] = field(default_factory=dict)  # kernel -> racing-line patches
    callers: dict[str, set[str]] = field(default_factory=dict)  # kernel -> caller patches
    first: dict[str, str] = field(default_factory=dict)  # kernel -> "boot/console.log:line"
    example: RaceSeen | None = None  # a report of it, a series kernel's when there is one
    klass: str = ""
    fate: str = ""

    @property
    def reports(self) -> int:
        return sum(self.kernels.values())


def read_fates(text: str) -> dict[str, str]:
    """kcsan/fates: "TITLE<tab>FATE" lines, # comments; a title is the report's
    ("KCSAN: data-race in A / B")."""
    fates = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if "\t" not in line:
            raise ValueError(f"kcsan fates line {lineno}: expected TITLE<tab>FATE: {line!r}")
        title, fate = line.split("\t", 1)
        fates[title.strip()] = fate.strip()
    return fates


def distinct(results: list[CellResult], fates: dict[str, str]) -> list[Distinct]:
    """Every race of every cell, one entry per function_key, classified."""
    found: dict[str, Distinct] = {}
    for r in results:
        for race in r.races:
            d = found.setdefault(race.key, Distinct(race.key, race.title))
            d.kernels[r.kernel] += 1
            d.first.setdefault(r.kernel, f"{r.boot}/console.log:{race.line}")
            d.sites.setdefault(r.kernel, set()).add(race.sites)
            d.patches.setdefault(r.kernel, set()).update(
                a.patch for a in race.accesses if a.patch)
            d.callers.setdefault(r.kernel, set()).update(
                a.caller_patch for a in race.accesses if a.caller_patch)
            if d.example is None or (r.kernel != CONTROL and any(a.patch for a in race.accesses)):
                d.example = race
        for key in {race.key for race in r.races}:
            found[key].cells[r.kernel] += 1
    for d in found.values():
        d.klass = classify(d)
        d.fate = fates.get(d.title) or {SIXONE: FATE_SIXONE, COMMON: FATE_COMMON}.get(
            d.klass, UNEXPLAINED)
    return sorted(found.values(), key=lambda d: (d.klass != SERIES, -d.reports, d.title))


def classify(d: Distinct) -> str:
    if CONTROL in d.kernels:
        return COMMON if d.patches.get(CONTROL) else SIXONE
    if any(d.patches.get(k) for k in d.kernels):
        return SERIES
    return SIXONE


def why(d: Distinct) -> str:
    """The evidence for the class, in a few words."""
    if d.klass == COMMON:
        return f"mainline gave it; racing lines by {', '.join(sorted(d.patches[CONTROL]))}"
    if CONTROL in d.kernels:
        return "mainline gave it"
    if d.klass == SERIES:
        return "; ".join(f"{k}: {', '.join(sorted(p))}" for k, p in sorted(d.patches.items()) if p)
    callers = sorted({p for ps in d.callers.values() for p in ps})
    return ("not on mainline, but no patch wrote its racing lines"
            + (f"; reached through {', '.join(callers)}" if callers else ""))


def kernel_order(results: list[CellResult]) -> list[str]:
    names = list(dict.fromkeys(r.kernel for r in results))
    return sorted(names, key=lambda k: (k != CONTROL, names.index(k)))


def per_kernel(results: list[CellResult], races: list[Distinct],
               planned: dict[str, int]) -> dict[str, dict]:
    """kernel -> cells planned and measured, boots with KCSAN armed, reports, and the
    distinct races it gave by class (what the record table reads)."""
    out = {}
    for kernel in kernel_order(results) + [k for k in planned if k not in
                                           {r.kernel for r in results}]:
        mine = [r for r in results if r.kernel == kernel]
        by_class = Counter(d.klass for d in races if kernel in d.kernels)
        out[kernel] = {
            "planned": planned.get(kernel, len(mine)), "measured": len(mine),
            "statuses": dict(Counter(r.status for r in mine)),
            "unarmed": sum(1 for r in mine if not r.armed),
            "reports": sum(len(r.races) for r in mine),
            "races": sum(by_class.values()), "by_class": dict(by_class),
            "step_hours": round(sum(r.wall_s or 0.0 for r in mine) / 3600, 3)}
    return out


def _kernels_cell(d: Distinct, order: list[str]) -> str:
    return ", ".join(f"{k} {d.kernels[k]} ({plural(d.cells[k], 'cell')}, "
                     f"{plural(len(d.sites[k]), 'pair')} of sites)"
                     for k in order if k in d.kernels)


def kernel_table(kernels: dict[str, dict]) -> list[str]:
    lines = ["| kernel | cells measured | step status | KCSAN not armed | reports "
             "| distinct races | by class |", "|---|---|---|---|---|---|---|"]
    for kernel, k in kernels.items():
        status = ", ".join(f"{s} {n}" for s, n in sorted(k["statuses"].items())) or "-"
        classes = ", ".join(f"{c} {n}" for c, n in sorted(k["by_class"].items())) or "0"
        lines.append(f"| {kernel} | {k['measured']} of {k['planned']} | {status} | "
                     f"{k['unarmed']} | {k['reports']} | {k['races']} | {classes} |")
    return lines


def race_table(races: list[Distinct], order: list[str]) -> list[str]:
    if not races:
        return ["No data race reported in any measured cell."]
    lines = ["| race | class | patch (racing lines) | fate | kernels seen on (reports) | "
             "first report |", "|---|---|---|---|---|---|"]
    for d in races:
        fate = f"**{d.fate}**" if d.fate == UNEXPLAINED else d.fate
        klass = f"**{d.klass}**" if d.klass == SERIES else d.klass
        first = d.first[next(k for k in order if k in d.first)]
        lines.append(f"| {d.title} | {klass} | {why(d)} | {fate} | {_kernels_cell(d, order)} | "
                     f"{first} |")
    return lines


def race_details(races: list[Distinct]) -> list[str]:
    """Both accesses of each race of the series' own: type, site, racing lines, stack."""
    out = []
    for d in (d for d in races if d.klass == SERIES and d.example):
        out += [f"### {d.title}", ""]
        for a in d.example.accesses:
            out.append(f"- {a.type} at {a.site}: lines {', '.join(a.lines) or 'unknown'}; "
                       f"written by {a.patch or '6.1'}"
                       + (f"; locks held: {', '.join(a.held_locks)}" if a.held_locks else "")
                       + f"; stack: {' < '.join(a.stack[:8])}")
        if d.example.value_change:
            out.append(f"- value changed: {d.example.value_change}")
        out.append("")
    return out


def markdown(results: list[CellResult], meta: dict, planned: dict[str, int],
             fates: dict[str, str]) -> str:
    races = distinct(results, fates)
    order = kernel_order(results)
    kernels = per_kernel(results, races, planned)
    own = [d for d in races if d.klass == SERIES]
    unexplained = sum(1 for d in own if d.fate == UNEXPLAINED)
    untraced = sorted({r.origin_error for r in results if r.origin_error})
    lines = [f"# KCSAN: {len(results)} of {sum(planned.values())} cells measured, "
             f"{plural(len(races), 'distinct race')}", "", meta["state"], "",
             f"Every default workload ({', '.join(meta['workloads'])}) on every filesystem it "
             f"declares, at its most processes, at {' and '.join(map(str, meta['cpus']))} vCPUs, "
             "one boot per kernel, vCPU count and workload, on each kernel's kcsan image "
             "(configs/kcsan.config). A race is a pair of functions and access types; its "
             "class says whose code raced (mainline is the control), its patch which patch "
             "wrote the racing lines (git blame at the image's commit of the lines its "
             "frames map to). Reports are rate-limited per pair of access sites "
             "(one in 3 s), so counts are of reports. "
             f"Races of the series' own: {len(own)}, {unexplained} unexplained.",
             "", image_line(meta.get("images", {})), "",
             "## Per kernel", "", *kernel_table(kernels), "",
             "## Every distinct race", "", *race_table(races, order), ""]
    if own:
        lines += ["## The series' own races, both accesses", "", *race_details(own)]
    if untraced:
        lines += ["Racing lines not traced (their races are classified by mainline alone): "
                  + "; ".join(untraced), ""]
    return "\n".join(lines) + "\n"


def image_line(images: dict[str, dict]) -> str:
    if not images:
        return "Images: not recorded."
    return "Images: " + "; ".join(
        f"{kernel} {i['key']} ({i['patches']} patches of its own, digest {i['patches_digest']})"
        for kernel, i in images.items()) + "."


def write(out: Path, results: list[CellResult], meta: dict, planned: dict[str, int],
          fates: dict[str, str]) -> None:
    """summary.md and summary.json, each written whole (a killed run leaves both)."""
    races = distinct(results, fates)
    _write_whole(out / "summary.md", markdown(results, meta, planned, fates))
    _write_whole(out / "summary.json", json.dumps({
        **meta, "planned": planned,
        "per_kernel": per_kernel(results, races, planned),
        "races": [{"title": d.title, "key": d.key, "class": d.klass, "fate": d.fate,
                   "why": why(d), "kernels": dict(d.kernels), "cells": dict(d.cells),
                   "patches": {k: sorted(p) for k, p in d.patches.items()},
                   "first": d.first,
                   "example": asdict(d.example) if d.example else None} for d in races],
        "cells": [asdict(r) for r in results]}, indent=1) + "\n")


def _write_whole(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    partial.replace(path)
