"""How good the scaling model is where this machine can check it: 2 vCPUs.

From the 1-vCPU inputs alone (scaling_inputs.CaseInputs) the model predicts
what the run measured at 2 vCPUs:

  * debug kernels: contentions per operation and wait time per operation of
    every icache lock role. Inputs and measurement share one time base (the
    debug kernel under TCG), so the hand-off cost is 0 here: a cache-line
    transfer between two host cores is tens of nanoseconds against critical
    sections of microseconds under emulation.
  * perf kernels: the throughput of 2 vCPUs over 1 vCPU, with the 1-vCPU TCG
    rate as the operation's time and the lock shares of the inputs.

Errors are (predicted - measured) / measured. The aim is 25% where the
measured contention is at least AIM_CONTENTION per operation; below that the
counts are a handful of events per window and their relative error says
little.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from harness.analysis import evidence, queueing, stats
from harness.analysis.scaling_inputs import CaseInputs
from harness.run.tidy import Row

AIM_CONTENTION = 0.01  # per operation
AIM_ERROR = 0.25
AIM_SIGNED = 0.10  # the signed median's aim (issue 37): no lean either way


def error(predicted: float, measured: float) -> float:
    return (predicted - measured) / measured if measured else math.nan


@dataclass(frozen=True)
class LockCheck:
    kernel: str
    case: evidence.Case
    role: str
    predicted_contentions: float
    measured_contentions: float
    predicted_wait_us: float
    measured_wait_us: float
    modelled_as: str  # "queue", "under ROLE", a private scope, or why it does not queue
    # The workers are alike (no process looping beside them: the workload's
    # `background`); the model's symmetric network represents only those.
    symmetric: bool = True
    # (lower, upper) bound of the share of the step both vCPUs ran at once, the mean
    # over the step's boots; None where the boots were not sampled (boot/corun.py).
    together: tuple[float, float] | None = None

    @property
    def in_aim(self) -> bool:
        """A row the 25% aim applies to: measured contention high enough to count, and
        workers the symmetric model represents."""
        return self.measured_contentions >= AIM_CONTENTION and self.symmetric

    @property
    def contention_error(self) -> float:
        return error(self.predicted_contentions, self.measured_contentions)

    @property
    def wait_error(self) -> float:
        return error(self.predicted_wait_us, self.measured_wait_us)


@dataclass(frozen=True)
class RatioCheck:
    kernel: str
    case: evidence.Case
    predicted: float
    measured: float  # mean 2-vCPU rate / mean 1-vCPU rate
    measured_low: float  # from the two 95% intervals
    measured_high: float
    in_boot: stats.Summary | None  # 2 workers / 1 worker in the same 2-vCPU boot

    @property
    def error(self) -> float:
        return error(self.predicted, self.measured)

    @property
    def in_boot_error(self) -> float:
        return error(self.predicted, self.in_boot.mean) if self.in_boot else math.nan


def _debug_two_cpu(rows: list[Row], inputs: CaseInputs) -> dict[tuple[str, str], float]:
    figures = evidence.lock_figures(rows, inputs.case, 2)
    return {(role, metric): value for (kernel, role, metric), value in figures.items()
            if kernel == inputs.kernel}


def together(rows: list[Row], kernel: str, case: evidence.Case) -> tuple[float, float] | None:
    """The mean co-running share bounds of a kernel's 2-vCPU debug steps of a case."""
    found = {m: [r.value for r in rows if r.metric == m and r.kernel == kernel
                 and r.flavour == "debug" and r.cpus == 2 and r.status in ("ok", "warning")
                 and (r.workload, r.fs) == (case.workload, case.fs)]
             for m in ("vcpus_together_low", "vcpus_together_high")}
    if not all(found.values()):
        return None
    return (statistics.mean(found["vcpus_together_low"]),
            statistics.mean(found["vcpus_together_high"]))


def lock_checks(rows: list[Row], all_inputs: list[CaseInputs],
                background: set[evidence.Case] = frozenset()) -> list[LockCheck]:
    """background: the cases whose workers have a process looping beside them."""
    out = []
    for inputs in all_inputs:
        measured = _debug_two_cpu(rows, inputs)
        if not measured:
            continue
        shared = together(rows, inputs.kernel, inputs.case)
        point = queueing.solve(inputs.debug_profile(), 2, 0.0).at(2)
        for r in inputs.roles:
            if (r.role, "contentions_per_op") not in measured:
                continue
            if r.role in point.contentions_per_op:
                modelled = "queue"
            elif r.scope.under:
                modelled = f"under {r.scope.under}"
            elif r.scope.shared:
                modelled = "no queue (bucket count unknown)"
            else:
                modelled = r.scope.scope
            out.append(LockCheck(
                inputs.kernel, inputs.case, r.role,
                point.contentions_per_op.get(r.role, 0.0),
                measured[r.role, "contentions_per_op"],
                point.wait_ns_per_op.get(r.role, 0.0) / 1000.0,
                measured.get((r.role, "waittime_per_op"), 0.0), modelled,
                inputs.case not in background, shared))
    return out


def _rate(rows: list[Row], case: evidence.Case, kernel: str, cpus: int) -> stats.Summary | None:
    summaries, _ = evidence.throughput(rows, case, evidence.plain_mode(rows), cpus)
    return summaries.get(kernel)


def ratio_checks(rows: list[Row], all_inputs: list[CaseInputs]) -> list[RatioCheck]:
    out = []
    mode = evidence.plain_mode(rows)
    for inputs in all_inputs:
        one, two = (_rate(rows, inputs.case, inputs.kernel, n) for n in (1, 2))
        if not one or not two:
            continue
        prediction = queueing.solve(inputs.profile(1e9 / one.mean, production=True), 2, 0.0)
        low = two.low / one.high if math.isfinite(one.half_width) and one.low > 0 else math.nan
        high = two.high / one.low if math.isfinite(one.half_width) and one.low > 0 else math.nan
        in_boot = evidence.scaling(rows, inputs.case, mode, 2).get(inputs.kernel)
        out.append(RatioCheck(inputs.kernel, inputs.case,
                              prediction.at(2).ops_per_s / prediction.at(1).ops_per_s,
                              two.mean / one.mean, low, high, in_boot))
    return out


@dataclass(frozen=True)
class ErrorSummary:
    """The errors of a set of checks: how many, median and worst |error|, within aim,
    and the signed median (a bias the absolute one hides)."""
    count: int
    median_abs: float
    worst_abs: float
    within_aim: int
    median: float = math.nan

    @staticmethod
    def of(errors: list[float]) -> "ErrorSummary":
        finite = [e for e in errors if math.isfinite(e)]
        if not finite:
            return ErrorSummary(0, math.nan, math.nan, 0)
        absolute = [abs(e) for e in finite]
        return ErrorSummary(len(finite), statistics.median(absolute), max(absolute),
                            sum(1 for e in absolute if e <= AIM_ERROR),
                            statistics.median(finite))
