"""The evidence for the tcg-cs numbers of a run: repeatability, counts, lockdep's share.

    python3 -m harness.analysis.cs_summary RUN_DIR [--debug-icount BOOT_DIR ...]

prints Markdown tables:
  - repeatability: per kernel, workload case and role with at least
    MIN_ACQUISITIONS acquisitions in every boot, the mean and coefficient of
    variation of cs_instructions_per_acq over the run's tcg-cs boots;
  - acquisitions per operation of the plugin (perf kernel) against
    lock_stat's exact counts (debug kernel, 1 vCPU) of the same windows;
  - with --debug-icount (boot folders of `harness boot K --flavour debug
    --cpus 1 --icount`): lock_stat's mean hold time under -icount, turned
    into instructions (-icount shift=2: 4 ns each), against the plugin's.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from harness.boot import tcg_cs
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
    mean: float
    cv: float


def _case(row: tidy.Row) -> Case:
    return row.workload, row.fs, str(row.procs), row.phase


def cs_rows(rows: list[tidy.Row]) -> list[tidy.Row]:
    return [r for r in rows if r.mode == tcg_cs.MODE and r.status == "ok"]


def repeatability(rows: list[tidy.Row]) -> list[Repeatability]:
    lengths: dict[tuple, list[float]] = defaultdict(list)
    counts: dict[tuple, list[float]] = defaultdict(list)
    for r in cs_rows(rows):
        key = (r.kernel, _case(r), r.lock)
        if r.metric == "cs_instructions_per_acq":
            lengths[key].append(r.value)
        elif r.metric == "cs_acquisitions":
            counts[key].append(r.value)
    out = []
    for key, values in sorted(lengths.items()):
        if len(values) < 2 or min(counts[key]) < MIN_ACQUISITIONS:
            continue
        mean = statistics.fmean(values)
        out.append(Repeatability(key[0], key[1], key[2], len(values), int(min(counts[key])),
                                 mean, statistics.stdev(values) / mean))
    return out


def agreement(rows: list[tidy.Row]) -> list[tuple]:
    """(kernel, case, role, plugin acquisitions/op, lock_stat acquisitions/op)."""
    plugin: dict[tuple, list[float]] = defaultdict(list)
    exact: dict[tuple, list[float]] = defaultdict(list)
    for r in rows:
        key = (r.kernel, _case(r), r.lock)
        if r.mode == tcg_cs.MODE and r.metric == "cs_acquisitions_per_op" and r.status == "ok":
            plugin[key].append(r.value)
        elif (r.flavour == "debug" and r.cpus == 1 and r.metric == "acquisitions_per_op"
              and r.status == "ok"):
            exact[key].append(r.value)
    return [(k[0], k[1], k[2], statistics.fmean(plugin.get(k, [0.0])),
             statistics.fmean(exact.get(k, [0.0])))
            for k in sorted(set(plugin) | set(exact))]


def debug_icount_holds(boot_dirs: list[Path]) -> dict[tuple, list[float]]:
    """(kernel, case, role) -> mean hold times (ns) of lock_stat in -icount debug boots."""
    out: dict[tuple, list[float]] = defaultdict(list)
    for boot in boot_dirs:
        summary = json.loads((boot / "summary.json").read_text())
        kernel = json.loads((Path(summary["image"]) / "meta.json").read_text())["kernel"]
        record = json.loads((boot / "boot.json").read_text())
        for step in record["steps"]:
            if step["status"] != "ok" or not step["numbers"]:
                continue
            workload, fs, procs = step["label"].split("/")
            for fig in step["numbers"]["figures"]:
                if fig["metric"] == "holdtime_avg" and fig["lock"]:
                    case = (workload, fs, procs.lstrip("p"), fig["phase"])
                    out[kernel, case, fig["lock"]].append(fig["value"] * 1000.0)
    return out


def _fmt_case(case: Case) -> str:
    workload, fs, procs, phase = case
    return f"{workload}/{fs}/p{procs} {phase}"


def print_tables(rows: list[tidy.Row], debug_boots: list[Path], out=sys.stdout) -> bool:
    """The tables; True when every repeatability CV is within CV_LIMIT."""
    reps = repeatability(rows)
    print(f"## Repeatability of cs_instructions_per_acq (roles with >= {MIN_ACQUISITIONS} "
          "acquisitions in every boot)\n", file=out)
    print("| kernel | case | role | boots | min acq | mean insn/acq | CV |", file=out)
    print("|---|---|---|---|---|---|---|", file=out)
    for r in reps:
        print(f"| {r.kernel} | {_fmt_case(r.case)} | {r.role} | {r.boots} | "
              f"{r.min_acquisitions} | {r.mean:.2f} | {100 * r.cv:.3f}% |", file=out)
    worst = max((r.cv for r in reps), default=0.0)
    print(f"\nlargest CV {100 * worst:.3f}% over {len(reps)} (kernel, case, role)\n", file=out)

    print("## Acquisitions per operation: plugin (perf) against lock_stat (debug, 1 vCPU)\n",
          file=out)
    print("| kernel | case | role | plugin | lock_stat | difference |", file=out)
    print("|---|---|---|---|---|---|", file=out)
    for kernel, case, role, mine, exact in agreement(rows):
        diff = f"{100 * (mine - exact) / exact:+.2f}%" if exact else "n/a"
        print(f"| {kernel} | {_fmt_case(case)} | {role} | {mine:.4f} | {exact:.4f} | {diff} |",
              file=out)

    if debug_boots:
        holds = debug_icount_holds(debug_boots)
        lengths: dict[tuple, list[float]] = defaultdict(list)
        for r in cs_rows(rows):
            if r.metric == "cs_instructions_per_acq":
                lengths[r.kernel, _case(r), r.lock].append(r.value)
        print("\n## Hold time per acquisition: lock_stat under -icount (debug) against the "
              f"plugin (perf), in instructions ({NS_PER_INSN} ns each)\n", file=out)
        print("| kernel | case | role | lock_stat insn | plugin insn | lockdep factor |",
              file=out)
        print("|---|---|---|---|---|---|", file=out)
        for key in sorted(set(holds) & set(lengths)):
            debug = statistics.fmean(holds[key]) / NS_PER_INSN
            perf = statistics.fmean(lengths[key])
            print(f"| {key[0]} | {_fmt_case(key[1])} | {key[2]} | {debug:.1f} | {perf:.1f} | "
                  f"{debug / perf:.2f}x |", file=out)
    return worst <= CV_LIMIT


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.analysis.cs_summary",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--debug-icount", nargs="*", type=Path, default=[],
                        help="boot folders of 1-vCPU -icount debug boots")
    args = parser.parse_args(argv)
    rows = tidy.read(args.run_dir / "tidy.tsv")
    return 0 if print_tables(rows, args.debug_icount) else 1


if __name__ == "__main__":
    sys.exit(main())
