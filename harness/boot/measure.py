"""Turn the records of one step into numbers: throughput, latency, lock figures.

Lock figures are divided by the operations of the same timed window, so
'acquisitions per operation' is exact (docs/design.md section 6).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.lockorder import LockOrder, RoleTotals
from harness.boot import channel
from harness.parsers import fio, lockstat, workload_output
from harness.guest.plan import Step


@dataclass(frozen=True)
class Figure:
    phase: str
    lock: str
    metric: str
    value: float
    unit: str


@dataclass(frozen=True)
class StepNumbers:
    exit_code: int | None  # None: the step never reported its end
    timed_out: bool  # killed at the step's own limit
    figures: tuple[Figure, ...]
    lockstat_valid: bool | None  # None: no lock_stat (perf flavour)
    error: str  # why numbers are missing, "" if none
    lockdep_on: bool | None = None  # debug_locks at the step's end; None: no lockdep (perf)


@dataclass(frozen=True)
class PhaseOps:
    name: str
    ops: int
    elapsed_s: float
    extra: dict[str, float]


def _phases(step: Step, received: channel.Received) -> list[PhaseOps]:
    if step.workload.output == "fio-json":
        text = received.text(f"{step.id}.fio.json")
        if text is None:
            return []
        run = fio.parse(text)
        return [PhaseOps(job.name, job.ops, job.runtime_ms / 1000.0, {
            f"clat_p{k.split('.')[0]}_ns": float(v) for k, v in job.clat_ns_percentiles.items()
            if k.split(".")[0] in ("50", "90", "99")}) for job in run.jobs]
    text = received.text(f"{step.id}.out") or ""
    return [PhaseOps(p.name, p.ops, p.elapsed_ns / 1e9, p.extra)
            for p in workload_output.parse(text)]


def _parse_status(text: str | None) -> dict[str, str]:
    if not text:
        return {}
    return dict(item.partition("=")[::2] for item in text.split())


def _retries(text: str) -> dict[str, int]:
    counts = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
    return counts


def step_numbers(step: Step, received: channel.Received, order: LockOrder) -> StepNumbers:
    status = _parse_status(received.text(f"{step.id}.status"))
    exit_code = int(status["exit"]) if status.get("exit", "").lstrip("-").isdigit() else None
    figures: list[Figure] = []
    error = ""
    try:
        phases = _phases(step, received)
    except (workload_output.OutputError, fio.FioError) as err:
        phases, error = [], f"unparsable output: {err}"
    if status.get("timedout") == "1":
        error = f"killed at its {step.workload.timeout_s}s limit"
    elif exit_code not in (None, 0):
        error = (received.text(f"{step.id}.err") or "").strip()[-500:] or f"exit {exit_code}"
    for phase in phases:
        figures += [Figure(phase.name, "", "ops", phase.ops, step.workload.unit),
                    Figure(phase.name, "", "elapsed", phase.elapsed_s, "s")]
        if phase.elapsed_s > 0:
            figures.append(Figure(phase.name, "", "throughput", phase.ops / phase.elapsed_s,
                                  f"{step.workload.unit}/s"))
        for key, value in phase.extra.items():
            figures.append(Figure(phase.name, "", key, value, "ns" if key.endswith("_ns") else ""))

    # Lock windows: per phase when the program windowed them, else one for the step.
    windows = ({p.name: p.ops for p in phases} if step.workload.windowed
               else {"all": sum(p.ops for p in phases)})
    valid: bool | None = None
    for phase, ops in windows.items():
        text = received.text(f"{step.id}.{phase}.lock_stat")
        if text is not None:
            dump = lockstat.parse(text)
            valid = dump.valid if valid is None else (valid and dump.valid)
            for role in order.totals_by_role(dump.classes):
                figures += _lock_figures(phase, role, ops)
        retries = received.text(f"{step.id}.{phase}.retries")
        if retries is not None:
            for name, count in _retries(retries).items():
                figures.append(Figure(phase, "", f"retries.{name}", count, "count"))
                if ops:
                    figures.append(Figure(phase, "", f"retries.{name}_per_op", count / ops,
                                          f"per {step.workload.unit}"))
    lockdep_on = {"1": True, "0": False}.get(status.get("debug_locks", ""))
    return StepNumbers(exit_code, status.get("timedout") == "1", tuple(figures), valid, error,
                       lockdep_on)


def _lock_figures(phase: str, role: RoleTotals, ops: int) -> list[Figure]:
    out = [
        Figure(phase, role.role, "acquisitions", role.acquisitions, "count"),
        Figure(phase, role.role, "contentions", role.contentions, "count"),
        Figure(phase, role.role, "holdtime_total", role.holdtime_total_us, "us"),
        Figure(phase, role.role, "waittime_total", role.waittime_total_us, "us"),
        Figure(phase, role.role, "holdtime_max", role.holdtime_max_us, "us"),
        Figure(phase, role.role, "waittime_max", role.waittime_max_us, "us"),
        Figure(phase, role.role, "holdtime_avg", role.holdtime_avg_us, "us"),
        Figure(phase, role.role, "acq_bounces", role.acq_bounces, "count"),
        Figure(phase, role.role, "con_bounces", role.con_bounces, "count"),
    ]
    if ops:
        out += [
            Figure(phase, role.role, "acquisitions_per_op", role.acquisitions / ops, "per op"),
            Figure(phase, role.role, "contentions_per_op", role.contentions / ops, "per op"),
            Figure(phase, role.role, "holdtime_per_op", role.holdtime_total_us / ops, "us/op"),
            Figure(phase, role.role, "waittime_per_op", role.waittime_total_us / ops, "us/op"),
            Figure(phase, role.role, "acq_bounces_per_op", role.acq_bounces / ops, "per op"),
            Figure(phase, role.role, "con_bounces_per_op", role.con_bounces / ops, "per op"),
        ]
    return out
