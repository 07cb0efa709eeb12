"""The locks outside the icache roles that a case's debug boots see (lock_stat).

    python3 -m harness.analysis.other_locks ONE_CPU_BOOT TWO_CPU_BOOT WORKLOAD/FS/PHASE

The scaling model has no station for any lock but the icache roles, and its
held-out record fails where a publisher's run was limited elsewhere
(docs/scaling-model.md, "Post-look"). A term for those locks would need, per
lock class of the case standing in for the anchor: how often an operation
takes it, how long it holds it, and whether the CPUs share one instance.
This lists what the debug boots give of that: every lock class the 1-vCPU
boot's lock_stat saw in the case's window, per operation, and, from the
2-vCPU boot of the same run, the share of its acquisitions that bounced
between the CPUs (lock_stat's acq-bounces: the previous acquirer of that
instance ran on the other CPU) and its contentions per operation. A class
the two workers do not share bounces only when a worker migrates.

What it cannot give is said beside the table: lock_stat keeps classes, not
instances; its hold times are lockdep's (the bookkeeping of every lock taken
inside is part of the hold); read-side holds (rwsem, rwlock, RCU) do not
exclude each other; sleeping locks without a lockdep map (a struct
semaphore, such as xfs_buf's b_sema) do not appear at all.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from harness import lockorder
from harness.boot import channel
from harness.parsers import lockstat

RESULTS_FILE = "results.raw"
PLAN_FILE = "plan.sh"
_STEP = re.compile(r"^run_step (?P<step>s\d+) ")
_CASE = re.compile(r"^# (?P<workload>[^/\s]+)/(?P<fs>[^/\s]+)/p(?P<procs>\d+)\s*$")
SIDE = {"W": "write", "R": "read", None: "exclusive"}  # lock_stat's -W/-R rows, or neither


class OtherLocksError(Exception):
    pass


@dataclass(frozen=True)
class ClassFigures:
    name: str
    rw: str | None
    role: str | None  # the icache role the class belongs to, None outside them
    acquisitions_per_op: float  # at 1 vCPU
    hold_us_per_op: float  # lock_stat's hold time at 1 vCPU, per operation
    hold_us_avg: float
    bounce_share: float | None  # acq-bounces / acquisitions at 2 vCPUs (None: not seen)
    contentions_per_op: float | None  # at 2 vCPUs

    @property
    def exclusive(self) -> bool:
        """A write or plain hold: read-side holds do not exclude each other."""
        return self.rw != "R"


def steps(boot: Path) -> dict[tuple[str, str], list[tuple[str, int]]]:
    """(workload, fs) -> the boot's steps of it, with their worker counts (plan.sh: each
    run_step line is followed by its '# WORKLOAD/FS/pN' comment)."""
    out: dict[tuple[str, str], list[tuple[str, int]]] = {}
    step = None
    for line in (boot / PLAN_FILE).read_text().splitlines():
        found = _STEP.match(line)
        if found:
            step = found["step"]
            continue
        case = _CASE.match(line)
        if case and step:
            out.setdefault((case["workload"], case["fs"]), []).append(
                (step, int(case["procs"])))
            step = None
    return out


def _ops(received: channel.Received, step: str, phase: str) -> int:
    text = received.text(f"{step}.out") or ""
    found = re.search(rf"\bphase={re.escape(phase)} ops=(\d+)", text)
    if not found or int(found[1]) <= 0:
        raise OtherLocksError(f"{step}.out: no result line with ops for phase {phase}")
    return int(found[1])


def window(boot: Path, workload: str, fs: str, phase: str,
           most_workers: bool) -> tuple[list[lockstat.LockClass], int]:
    """The lock_stat classes of a case's window and its operations; of the case's step
    with the most workers (or the fewest)."""
    found = steps(boot).get((workload, fs))
    if not found:
        raise OtherLocksError(f"{boot}: no step of {workload}/{fs} in {PLAN_FILE}")
    step = max(found, key=lambda s: s[1])[0] if most_workers else \
        min(found, key=lambda s: s[1])[0]
    received = channel.parse((boot / RESULTS_FILE).read_bytes())
    text = received.text(f"{step}.{phase}.lock_stat")
    if text is None:
        raise OtherLocksError(f"{boot}: no lock_stat of {step}.{phase}")
    parsed = lockstat.parse(text)
    if not parsed.valid:
        raise OtherLocksError(f"{boot}: lock_stat of {step}.{phase} is void (lockdep report)")
    return list(parsed.classes), _ops(received, step, phase)


def figures(one_cpu: Path, two_cpu: Path, workload: str, fs: str,
            phase: str) -> list[ClassFigures]:
    """Every class the 1-vCPU boot saw in the case, most hold time per operation first."""
    roles = lockorder.parse(lockorder.MAINLINE_FILE)  # the icache roles' class names
    one, ops_one = window(one_cpu, workload, fs, phase, most_workers=False)
    two, ops_two = window(two_cpu, workload, fs, phase, most_workers=True)
    at_two = {(c.name, c.rw): c for c in two}
    out = []
    for c in one:
        if c.acquisitions <= 0:
            continue
        other = at_two.get((c.name, c.rw))
        bounced, contended = (other.acq_bounces / other.acquisitions,
                              other.contentions / ops_two) \
            if other is not None and other.acquisitions > 0 else (None, None)
        out.append(ClassFigures(
            c.name, c.rw, roles.role_of(c.name), c.acquisitions / ops_one,
            c.holdtime_total_us / ops_one, c.holdtime_avg_us, bounced, contended))
    return sorted(out, key=lambda f: -f.hold_us_per_op)


def table(found: list[ClassFigures], min_acquisitions: float) -> list[str]:
    lines = ["| class | hold | icache role | acq/op (1 vCPU) | lock_stat hold/op, us | "
             "hold avg, us | bounced at 2 vCPUs | contentions/op at 2 |",
             "|---|---|---|---|---|---|---|---|"]
    for f in found:
        if f.acquisitions_per_op < min_acquisitions:
            continue
        bounce = "not seen" if f.bounce_share is None else f"{f.bounce_share:.2f}"
        con = "-" if f.contentions_per_op is None else f"{f.contentions_per_op:.4f}"
        lines.append(f"| {f.name} | {SIDE[f.rw]} | {f.role or '-'} | "
                     f"{f.acquisitions_per_op:.2f} | {f.hold_us_per_op:.2f} | "
                     f"{f.hold_us_avg:.2f} | {bounce} | {con} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.analysis.other_locks",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("one_cpu", type=Path, help="a debug boot folder at 1 vCPU")
    parser.add_argument("two_cpu", type=Path, help="a debug boot folder at 2 vCPUs")
    parser.add_argument("case", help="WORKLOAD/FS/PHASE, e.g. fstree/xfs/create")
    parser.add_argument("--min-acquisitions", type=float, default=0.2,
                        help="leave out classes taken less often per operation (0.2)")
    args = parser.parse_args(argv)
    parts = args.case.split("/")
    if len(parts) != 3:
        parser.error(f"case: expected WORKLOAD/FS/PHASE, got {args.case!r}")
    try:
        found = figures(args.one_cpu, args.two_cpu, *parts)
    except (OtherLocksError, OSError) as err:
        print(f"other_locks: {err}", file=sys.stderr)
        return 1
    print("\n".join(table(found, args.min_acquisitions)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
