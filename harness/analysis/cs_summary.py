"""The evidence for the tcg-cs numbers: repeatability, counts, lockdep's share.

    python3 -m harness.analysis.cs_summary [RUN_DIR] [--boots BOOT_DIR ...]
                                           [--debug-icount BOOT_DIR ...] [--validate]

reads the tidy rows of a run and of boot folders (`harness boot K --cs`,
`harness boot K --flavour debug --cpus 1`) and prints Markdown tables:
  - repeatability: per kernel, workload case and role with at least
    MIN_ACQUISITIONS acquisitions in every boot, the mean and coefficient of
    variation of cs_instructions_per_acq over the run's tcg-cs boots;
  - instructions per operation, and those with no icache lock held: mean
    and CV over the same boots;
  - acquisitions per operation of the plugin (perf kernel) against
    lock_stat's exact counts (debug kernel, 1 vCPU) of the same windows, in
    the run and, with --debug-icount, in those boots;
  - with --debug-icount (boot folders of `harness boot K --flavour debug
    --cpus 1 --icount`): lock_stat's mean hold time under -icount, turned
    into instructions (-icount shift=2: 4 ns each), against the plugin's
    (lock_stat's hold times include interrupts: the plugin's column with
    them is the one to compare);
  - cache lines per acquisition of each role (read, written, W, s, cold,
    chain entries; tcg-cs boots) and failed trylocks per call site with
    what their retries cost (tcg-cs-rr boots);
  - with --validate: every call site of the run's tcg-cs boots whose
    section is straight-line code, its length from the image's disassembly
    against the plugin's shortest (analysis/cs_validation.py);
  - with --percentiles: per kernel, case and role of each tcg-cs boot, where
    p50, p90 and p99 of the sections' own lengths lie: the histogram's bucket
    (plugin output version 3), or, from older output, bounds from each call
    site's shortest and longest section (percentile_bounds).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from harness import lockorder
from harness.analysis import cs_validation
from harness.boot import tcg_cs
from harness.layout import default_layout
from harness.parsers import tcg_cs as plugin_output
from harness.run import tidy

MIN_ACQUISITIONS = 1000
CV_LIMIT = 0.01
NS_PER_INSN = 4  # qemu.ICOUNT: shift=2

Case = tuple[str, str, str, str]  # workload, fs, procs, phase


@dataclass(frozen=True)
class Repeatability:
    kernel: str
    case: Case
    role: str
    boots: int
    min_acquisitions: int
    mean: float  # own instructions per acquisition
    cv: float
    interrupt_mean: float  # instructions of interrupts per acquisition
    total_cv: float  # of own plus interrupts


def _case(row: tidy.Row) -> Case:
    return row.workload, row.fs, str(row.procs), row.phase


def cs_rows(rows: list[tidy.Row]) -> list[tidy.Row]:
    return [r for r in rows if r.mode == tcg_cs.MODE and r.status == "ok"]


def _cv(values: list[float]) -> float:
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean else 0.0


def repeatability(rows: list[tidy.Row]) -> list[Repeatability]:
    by_metric: dict[str, dict[tuple, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for r in cs_rows(rows):
        if r.metric in ("cs_instructions_per_acq", "cs_interrupt_instructions_per_acq",
                        "cs_acquisitions"):
            by_metric[r.metric][r.kernel, _case(r), r.lock][r.cell] = r.value
    lengths = by_metric["cs_instructions_per_acq"]
    out = []
    for key, per_boot in sorted(lengths.items()):
        counts = by_metric["cs_acquisitions"][key]
        irq = by_metric["cs_interrupt_instructions_per_acq"][key]
        values = list(per_boot.values())
        if len(values) < 2 or min(counts.values()) < MIN_ACQUISITIONS:
            continue
        totals = [per_boot[cell] + irq.get(cell, 0.0) for cell in per_boot]
        out.append(Repeatability(key[0], key[1], key[2], len(values), int(min(counts.values())),
                                 statistics.fmean(values), _cv(values),
                                 statistics.fmean(irq.values()) if irq else 0.0, _cv(totals)))
    return out


def per_op(rows: list[tidy.Row]) -> list[tuple]:
    """(kernel, case, boots, instructions/op, its CV, unlocked instructions/op, its CV)."""
    values: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in cs_rows(rows):
        if r.metric in ("instructions_per_op", "unlocked_instructions_per_op") and not r.lock:
            values[r.kernel, _case(r)][r.metric].append(r.value)
    out = []
    for (kernel, case), metrics in sorted(values.items()):
        total, unlocked = metrics["instructions_per_op"], metrics["unlocked_instructions_per_op"]
        if len(total) >= 2 and len(unlocked) >= 2:
            out.append((kernel, case, len(total), statistics.fmean(total), _cv(total),
                        statistics.fmean(unlocked), _cv(unlocked)))
    return out


def agreement(rows: list[tidy.Row],
              icount_exact: dict[tuple, list[float]]) -> list[tuple]:
    """(kernel, case, role, plugin, lock_stat in the run, lock_stat under -icount), per op."""
    plugin: dict[tuple, list[float]] = defaultdict(list)
    exact: dict[tuple, list[float]] = defaultdict(list)
    for r in rows:
        key = (r.kernel, _case(r), r.lock)
        if r.mode == tcg_cs.MODE and r.metric == "cs_acquisitions_per_op" and r.status == "ok":
            plugin[key].append(r.value)
        elif (r.flavour == "debug" and r.mode != "tcg-icount" and r.cpus == 1
              and r.metric == "acquisitions_per_op" and r.status == "ok"):
            exact[key].append(r.value)
    mean = lambda values: statistics.fmean(values) if values else None  # noqa: E731
    return [(k[0], k[1], k[2], mean(plugin.get(k)), mean(exact.get(k)), mean(icount_exact.get(k)))
            for k in sorted(set(plugin) | set(exact))]


def kernel_of(meta: dict) -> str:
    """The kernel an image's meta.json names (its tcg-cs measurement image counts as
    the kernel it measures)."""
    return meta["kernel"].removesuffix("+tcg-cs")


def rows_of_boot(boot: Path, repetition: int = 1) -> list[tidy.Row]:
    """The rows a run would have of a boot folder made by `harness boot`.

    The kernel is the image's (its tcg-cs measurement image counts as the
    kernel it measures), the mode tcg-cs, tcg-icount or tcg from the QEMU
    command kept with the boot.
    """
    command = json.loads((boot / "qemu.json").read_text())["command"]
    meta = json.loads((tcg_cs.image_of_boot(boot) / "meta.json").read_text())
    kernel = kernel_of(meta)
    cpus = int(command[command.index("-smp") + 1])
    mode = (tcg_cs.mode_of(cpus) if "-plugin" in command else
            "tcg-icount" if "-icount" in command else "tcg")
    record = json.loads((boot / "boot.json").read_text())
    rows = []
    for step in record["steps"]:
        if not step["numbers"]:
            continue
        workload, fs, procs = step["label"].split("/")
        for fig in step["numbers"]["figures"]:
            rows.append(tidy.Row(kernel, meta["flavour"], mode, workload, fs, cpus,
                                 int(procs.lstrip("p")), repetition, fig["phase"], fig["lock"],
                                 fig["metric"], fig["value"], fig["unit"], step["status"],
                                 f"{boot.name}/{step['step']}"))
    return rows


LINE_COLUMNS = ("cs_lines_read_per_acq", "cs_lines_written_per_acq",
                "cs_lines_from_previous_per_acq", "cs_lockword_line_written_share",
                "cs_cold_lines_per_acq", "cs_chain_entries_per_acq")


@dataclass(frozen=True)
class LineCounts:
    kernel: str
    case: Case
    role: str
    boots: int
    means: dict[str, float]  # LINE_COLUMNS -> mean over boots (absent: not measured)
    touched_cv: float | None  # of read + written lines per acquisition, over boots (>= 2)


def line_counts(rows: list[tidy.Row]) -> list[LineCounts]:
    """Per kernel, case and role: the cache-line figures of the tcg-cs boots."""
    values: dict[tuple, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for r in cs_rows(rows):
        if r.metric in LINE_COLUMNS and r.lock:
            values[r.kernel, _case(r), r.lock][r.metric][r.cell] = r.value
    out = []
    for (kernel, case, role), metrics in sorted(values.items()):
        read, written = metrics[LINE_COLUMNS[0]], metrics[LINE_COLUMNS[1]]
        touched = [read[c] + written[c] for c in read if c in written]
        out.append(LineCounts(kernel, case, role, len(read),
                              {m: statistics.fmean(v.values()) for m, v in metrics.items()},
                              _cv(touched) if len(touched) >= 2 else None))
    return out


def trylock_sites(rows: list[tidy.Row]) -> list[tuple]:
    """(kernel, case, cpus, role, site, failures, acquired, retries, insn per retry, skips,
    abandoned): the round-robin boots' trylock figures, means over boots."""
    values: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.mode == tcg_cs.MODE_RR and r.status == "ok" and r.metric.startswith("trylock_"):
            metric, site = r.metric.split(".", 1)
            values[r.kernel, _case(r), r.cpus, r.lock, site][metric].append(r.value)
    mean = lambda v: statistics.fmean(v) if v else None  # noqa: E731
    return [(*key, mean(m["trylock_failures"]), mean(m["trylock_acquired"]),
             mean(m["trylock_retries"]), mean(m["trylock_retry_instructions_per_retry"]),
             mean(m["trylock_skips"]), mean(m["trylock_abandoned"]))
            for key, m in sorted(values.items())]


def print_lines_and_trylocks(rows: list[tidy.Row], out=sys.stdout) -> None:
    counts = line_counts(rows)
    if counts:
        print("\n## Cache lines per acquisition (tcg-cs, means over boots)\n", file=out)
        print("| kernel | case | role | boots | read | written | W | s | cold | chain "
              "| CV of touched |", file=out)
        print("|---|---|---|---|---|---|---|---|---|---|---|", file=out)
        for c in counts:
            cells = " | ".join("" if m not in c.means else f"{c.means[m]:.2f}"
                               for m in LINE_COLUMNS)
            cv = "n/a" if c.touched_cv is None else f"{100 * c.touched_cv:.2f}%"
            print(f"| {c.kernel} | {_fmt_case(c.case)} | {c.role} | {c.boots} | {cells} | "
                  f"{cv} |", file=out)
    sites = trylock_sites(rows)
    if sites:
        print("\n## Failed trylocks per call site (tcg-cs-rr, means over boots)\n", file=out)
        print("| kernel | case | vCPUs | role | site | failed | acquired | retries "
              "| insn per retry | skips | abandoned |", file=out)
        print("|---|---|---|---|---|---|---|---|---|---|---|", file=out)
        fmt = lambda v: "" if v is None else f"{v:.1f}"  # noqa: E731
        for kernel, case, cpus, role, site, *numbers in sites:
            print(f"| {kernel} | {_fmt_case(case)} | {cpus} | {role} | {site} | "
                  + " | ".join(fmt(v) for v in numbers) + " |", file=out)


def debug_icount_figures(rows: list[tidy.Row], metric: str) -> dict[tuple, list[float]]:
    """(kernel, case, role) -> a lock_stat figure of the -icount debug boots, per boot."""
    out: dict[tuple, list[float]] = defaultdict(list)
    for r in rows:
        if (r.flavour == "debug" and r.mode == "tcg-icount" and r.metric == metric and r.lock
                and r.status == "ok"):
            out[r.kernel, _case(r), r.lock].append(r.value)
    return out


def _fmt_case(case: Case) -> str:
    workload, fs, procs, phase = case
    return f"{workload}/{fs}/p{procs} {phase}"


def print_tables(rows: list[tidy.Row], out=sys.stdout) -> bool:
    """The tables; True when every repeatability CV is within CV_LIMIT."""
    reps = repeatability(rows)
    print(f"## Repeatability of cs_instructions_per_acq (roles with >= {MIN_ACQUISITIONS} "
          "acquisitions in every boot)\n", file=out)
    print("| kernel | case | role | boots | min acq | own insn/acq | CV | interrupt insn/acq "
          "| CV with interrupts |", file=out)
    print("|---|---|---|---|---|---|---|---|---|", file=out)
    for r in reps:
        print(f"| {r.kernel} | {_fmt_case(r.case)} | {r.role} | {r.boots} | "
              f"{r.min_acquisitions} | {r.mean:.2f} | {100 * r.cv:.3f}% | "
              f"{r.interrupt_mean:.2f} | {100 * r.total_cv:.2f}% |", file=out)
    worst = max((r.cv for r in reps), default=0.0)
    print(f"\nlargest CV {100 * worst:.3f}% over {len(reps)} (kernel, case, role)\n", file=out)

    print("## Instructions per operation (all, and with no icache lock held)\n", file=out)
    print("| kernel | case | boots | insn/op | CV | unlocked insn/op | CV |", file=out)
    print("|---|---|---|---|---|---|---|", file=out)
    for kernel, case, boots, total, total_cv, unlocked, unlocked_cv in per_op(rows):
        print(f"| {kernel} | {_fmt_case(case)} | {boots} | {total:.0f} | {100 * total_cv:.3f}% "
              f"| {unlocked:.0f} | {100 * unlocked_cv:.3f}% |", file=out)
    print(file=out)

    print("## Acquisitions per operation: plugin (perf, -icount) against lock_stat (debug, "
          "1 vCPU: the run's boot, and -icount boots)\n", file=out)
    print("| kernel | case | role | plugin | lock_stat | difference | lock_stat -icount "
          "| difference |", file=out)
    print("|---|---|---|---|---|---|---|---|", file=out)
    fmt = lambda v: "n/a" if v is None else f"{v:.4f}"  # noqa: E731
    diff = lambda a, b: f"{100 * (a - b) / b:+.2f}%" if a is not None and b else "n/a"  # noqa
    icount_exact = debug_icount_figures(rows, "acquisitions_per_op")
    for kernel, case, role, mine, exact, exact_icount in agreement(rows, icount_exact):
        print(f"| {kernel} | {_fmt_case(case)} | {role} | {fmt(mine)} | {fmt(exact)} | "
              f"{diff(mine, exact)} | {fmt(exact_icount)} | {diff(mine, exact_icount)} |",
              file=out)

    holds = debug_icount_figures(rows, "holdtime_avg")  # us
    if holds:
        own: dict[tuple, list[float]] = defaultdict(list)
        irq: dict[tuple, list[float]] = defaultdict(list)
        for r in cs_rows(rows):
            key = (r.kernel, _case(r), r.lock)
            if r.metric == "cs_instructions_per_acq":
                own[key].append(r.value)
            elif r.metric == "cs_interrupt_instructions_per_acq":
                irq[key].append(r.value)
        print("\n## Hold time per acquisition: lock_stat under -icount (debug) against the "
              f"plugin (perf), in instructions ({NS_PER_INSN} ns each)\n", file=out)
        print("| kernel | case | role | lock_stat | plugin with interrupts | lockdep factor "
              "| plugin own |", file=out)
        print("|---|---|---|---|---|---|---|", file=out)
        for key in sorted(set(holds) & set(own)):
            debug = statistics.fmean(holds[key]) * 1000.0 / NS_PER_INSN
            total = statistics.fmean(own[key]) + statistics.fmean(irq.get(key, [0.0]))
            print(f"| {key[0]} | {_fmt_case(key[1])} | {key[2]} | {debug:.1f} | {total:.1f} | "
                  f"{debug / total:.1f}x | {statistics.fmean(own[key]):.1f} |", file=out)
    return worst <= CV_LIMIT


PERCENTILES = (0.5, 0.9, 0.99)


def percentile_bounds(sections: list[plugin_output.Section], q: float) -> tuple[int, int]:
    """Where the q-quantile of the sections' own lengths lies, from each call site's
    shortest and longest alone (output without histograms): every section lies
    between its site's two, so the quantile lies between that of every section at
    its site's shortest and that of every one at its site's longest. Exact where
    each site's sections are all one length."""
    def quantile(values: list[tuple[int, int]]) -> int:
        return plugin_output.Histogram(1, tuple(sorted(values))).percentile(q)[0]

    def merged(key) -> list[tuple[int, int]]:
        counts: dict[int, int] = defaultdict(int)
        for s in sections:
            counts[key(s)] += s.acquisitions
        return list(counts.items())
    return quantile(merged(lambda s: s.min)), quantile(merged(lambda s: s.max))


@dataclass(frozen=True)
class Percentiles:
    kernel: str
    case: Case
    role: str
    acquisitions: int
    ranges: tuple[tuple[int, int], ...]  # per PERCENTILES: where it lies, both included
    measured: bool  # from the plugin's histograms, else bounds from each site's min and max


def boot_percentiles(boot: Path) -> list[Percentiles]:
    """Per step, phase and icache role of a tcg-cs boot folder: where its percentiles lie."""
    output = tcg_cs.read_output(boot)
    if output is None:
        return []
    kernel = kernel_of(json.loads((tcg_cs.image_of_boot(boot) / "meta.json").read_text()))
    roles = tcg_cs.with_tables(lockorder.for_kernel(default_layout(), kernel))
    steps = {s["step"]: s["label"].split("/") for s in
             json.loads((boot / "boot.json").read_text())["steps"]}
    out = []
    for label, window in output.windows.items():
        step, phase = label.split(".", 1)
        workload, fs, procs = steps[step]
        by_role: dict[str, list[plugin_output.Section]] = defaultdict(list)
        for s in window.sections:
            role = roles.role_of(s.lock_class)
            if role:
                by_role[role].append(s)
        for role, sections in sorted(by_role.items()):
            holds = [window.holds[s.lock_class, s.site] for s in sections
                     if (s.lock_class, s.site) in window.holds]
            if len(holds) == len(sections):
                merged = holds[0]
                for h in holds[1:]:
                    merged = merged + h
                ranges = tuple((low, high - 1) for low, high in
                               (merged.percentile(q) for q in PERCENTILES))
            else:
                ranges = tuple(percentile_bounds(sections, q) for q in PERCENTILES)
            out.append(Percentiles(kernel, (workload, fs, procs.lstrip("p"), phase), role,
                                   sum(s.acquisitions for s in sections), ranges,
                                   len(holds) == len(sections)))
    return out


def print_percentiles(boot_dirs: list[Path], out=sys.stdout) -> None:
    print("\n## Percentiles of critical sections (own instructions; each boot's mode is in "
          "its folder name: tcg-cs at 1 vCPU with -icount, tcg-cs-rr round robin)\n",
          file=out)
    print("Each a-b: where p50, p90, p99 lie, both included: the plugin's histogram bucket "
          "(measured), or bounds from each call site's shortest and longest section "
          "(bounds: output before histograms).\n", file=out)
    print("| boot | kernel | case | role | acquisitions | p50 | p90 | p99 | from |", file=out)
    print("|---|---|---|---|---|---|---|---|---|", file=out)
    text = lambda r: f"{r[0]}" if r[0] == r[1] else f"{r[0]}-{r[1]}"  # noqa: E731
    for boot in boot_dirs:
        for p in boot_percentiles(boot):
            print(f"| {boot.name} | {p.kernel} | {_fmt_case(p.case)} | {p.role} | "
                  f"{p.acquisitions} | {' | '.join(text(r) for r in p.ranges)} | "
                  f"{'measured' if p.measured else 'bounds'} |", file=out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.analysis.cs_summary",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path, nargs="?")
    parser.add_argument("--boots", nargs="*", type=Path, default=[],
                        help="boot folders of `harness boot K --cs` or debug 1-vCPU boots")
    parser.add_argument("--debug-icount", nargs="*", type=Path, default=[],
                        help="boot folders of 1-vCPU -icount debug boots")
    parser.add_argument("--validate", action="store_true",
                        help="check straight-line sections against the disassembly")
    parser.add_argument("--percentiles", action="store_true",
                        help="where p50/p90/p99 of each role's sections lie, per tcg-cs boot")
    args = parser.parse_args(argv)
    rows = tidy.read(tidy.table_in(args.run_dir)) if args.run_dir else []
    for i, boot in enumerate(args.boots + args.debug_icount, 1):
        rows += rows_of_boot(boot, i)
    repeatable = print_tables(rows)
    print_lines_and_trylocks(rows)
    cs_boots = [b for b in args.boots if (b / tcg_cs.OUTPUT).exists()]
    if args.run_dir:
        cs_boots += sorted((args.run_dir / "boots").glob(f"*-{tcg_cs.MODE}-c1-*"))
    agree = print_validation(cs_boots) if args.validate else True
    if args.percentiles:
        print_percentiles(cs_boots)
    return 0 if repeatable and agree else 1


def print_validation(boot_dirs: list[Path], out=sys.stdout) -> bool:
    """Straight-line sections per boot; True when every one agrees."""
    layout = default_layout()
    print("\n## Straight-line sections: disassembly against the plugin\n", file=out)
    print("| boot | sites | agree | disagreeing (site, class, expected, measured min) |",
          file=out)
    print("|---|---|---|---|", file=out)
    every = True
    images: dict = {}
    for boot in boot_dirs:
        checks = cs_validation.check_boot(layout, boot, images)
        sites = {c.site: c for c in checks}  # a site seen in several windows once
        bad = [c for c in sites.values() if not c.agrees]
        every = every and not bad
        print(f"| {boot.name} | {len(sites)} | {len(sites) - len(bad)} | "
              + "; ".join(f"{c.function} {c.lock_class} {c.expected} {c.measured_min}"
                          for c in bad) + " |", file=out)
    return every


if __name__ == "__main__":
    sys.exit(main())
