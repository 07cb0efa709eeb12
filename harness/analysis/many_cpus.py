"""Measured throughput at many vCPUs: what the scaling-prediction charts plot beside the model.

The scaling model (report/scaling_section.py) predicts what this 2-core,
TCG-only machine cannot measure. Where a run holds real many-CPU cells (a
KVM host, a cluster node), these are its measured points:

    perf rows, mode exactly "kvm" (never kvm-oversubscribed, never TCG: TCG
    wall time at many vCPUs measures the emulator), cpus > MAX_LOCAL_CPUS,
    procs == cpus, status ok or warning, metric throughput;

summarised over repetitions per machine (rows of different machines are
never averaged together), case and kernel. The 1- and 2-vCPU KVM points of
the same machine are included, so a curve starts where the model does.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from harness.analysis import stats
from harness.analysis.evidence import Case
from harness.run.tidy import Row

MAX_LOCAL_CPUS = 2  # what the development machine measures itself
MODE = "kvm"


@dataclass(frozen=True)
class Point:
    cpus: int
    throughput: stats.Summary  # over repetitions
    unit: str


def _measured(row: Row) -> bool:
    return (row.flavour == "perf" and row.mode == MODE and row.metric == "throughput"
            and row.lock == "" and row.procs == row.cpus and row.status in ("ok", "warning"))


def has_many_cpu_cells(rows: list[Row]) -> bool:
    """Whether a run measured anything the model should be plotted against."""
    return any(_measured(r) and r.cpus > MAX_LOCAL_CPUS for r in rows)


def measured_points(rows: list[Row], case: Case) -> dict[str, dict[str, list[Point]]]:
    """machine -> kernel -> points by vCPU count, for machines with many-CPU cells."""
    values: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    units: dict[tuple[str, str, int], str] = {}
    for r in rows:
        if _measured(r) and (r.workload, r.fs, r.phase) == (case.workload, case.fs, case.phase):
            values[r.machine, r.kernel, r.cpus].append(r.value)
            units[r.machine, r.kernel, r.cpus] = r.unit
    many = {machine for machine, _, cpus in values if cpus > MAX_LOCAL_CPUS}
    out: dict[str, dict[str, list[Point]]] = {}
    for (machine, kernel, cpus), found in sorted(values.items()):
        if machine in many:
            out.setdefault(machine, {}).setdefault(kernel, []).append(
                Point(cpus, stats.summarize(found), units[machine, kernel, cpus]))
    return out
