"""Which design the model says is ahead at many CPUs, only where that survives.

The rule (issue 37), fixed before any prediction of a pair was read:

  For a pair (A against B), a workload case and a target machine, N is
  X_A / X_B - 1 at AT_CPUS CPUs with the central inputs. The sweep solves both
  kernels again at every corner of

    t, the transfer cost of a line      x 0.5 and x 2 (TRANSFER_SCALES)
    kappa, the contended hand-off       the calibration's leave-one-out band
    ns per instruction (IPC)            x 0.5 and x 1 (an IPC of 2 and of 1)
    blocked time per operation          0 and as measured (set equal across
                                        the kernels of a case: BLOCKED)

  "A ahead by N%" stands only when N has the same sign at every corner, |N| is
  at least twice the half-width of the corners' range, and |N| exceeds the
  model's held-out error (anchors.Record.held_out_error); otherwise "no
  prediction". Everything here is a prediction of the queueing model, not a
  measurement.

Blocked time: the guest's idle time per operation is read from tick-sampled
/proc/stat, in steps of about 1,667 ns, and differed between kernels on the
same code path (base 3,333 ns against mainline 10,000 ns on XFS walk). A
comparison must not rest on it, so every kernel of a case gets the same value:
the median of the kernels' measured values (BLOCKED).
"""

from __future__ import annotations

import itertools
import statistics
from dataclasses import dataclass, replace

from harness.analysis import evidence, machines, queueing
from harness.analysis.anchors import Calibration
from harness.analysis.scaling_inputs import CaseInputs

AT_CPUS = 64
TRANSFER_SCALES = (0.5, 2.0)
NS_PER_INSN_SCALES = (0.5, 1.0)
SIGN_MARGIN = 2.0  # |N| at least this many half-widths of the sweep
BLOCKED = ("blocked time set equal across the kernels of a case: the median of their "
           "measured values (tick-sampled idle time, not comparable kernel to kernel)")
ISOLATED = ("chinner", "piggin")
HISTORICAL = ("chinner-2.6.39", "piggin-2010")
PAIRS = {"isolated": ISOLATED, "historical": HISTORICAL}
PAIR_TEXT = {
    "isolated": "the isolated pair: chinner against piggin, the same structures "
                "(per-CPU sb lists, per-bucket hash); the i_lock model differs, and with it "
                "how sb lists are walked (RCU in piggin)",
    "historical": "the historical pair: chinner-2.6.39 (Dave's lock order with 2.6.39's "
                  "global inode_hash_lock, on 6.1's per-sb list, LRU and writeback locks) "
                  "against piggin-2010 (Nick's: per-bucket hash, per-CPU sb lists, and our "
                  "grace-period wait before XFS recycles an inode)",
}


@dataclass(frozen=True)
class Corner:
    transfer_scale: float
    kappa: float
    ns_scale: float
    blocked: bool


@dataclass(frozen=True)
class PairVerdict:
    pair: str  # isolated, historical
    first: str
    second: str
    case: evidence.Case
    machine: str
    change: float  # N: first over second, less 1, central inputs
    low: float  # the smallest and largest N over the sweep's corners
    high: float
    held_out_error: float | None
    verdict: str  # "first", "second" (ahead), or "" (no prediction)
    why: str  # why there is no prediction, or the margin

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    @property
    def text(self) -> str:
        if not self.verdict:
            return f"no prediction ({self.why})"
        ahead = self.first if self.verdict == "first" else self.second
        return f"{ahead} ahead by {abs(self.change):.0%} at {AT_CPUS} CPUs on {self.machine}"


def equal_blocked(inputs: list[CaseInputs]) -> dict[evidence.Case, float]:
    """Per case: the median of its kernels' measured blocked time (0 where none)."""
    by_case: dict[evidence.Case, list[float]] = {}
    for i in inputs:
        if i.blocked_ns_per_op is not None:
            by_case.setdefault(i.case, []).append(i.blocked_ns_per_op)
    return {case: statistics.median(values) for case, values in by_case.items()}


def throughput(inputs: CaseInputs, machine: machines.Machine, corner: Corner,
               blocked_ns: float, cpus: int = AT_CPUS) -> float:
    target = replace(machine, transfer_local_ns=machine.transfer_local_ns
                     * corner.transfer_scale,
                     transfer_remote_ns=machine.transfer_remote_ns * corner.transfer_scale,
                     contended_factor=corner.kappa)
    profile = inputs.profile(inputs.insn_per_op * machine.ns_per_insn * corner.ns_scale,
                             production=True,
                             blocked_ns=blocked_ns if corner.blocked else 0.0)
    return queueing.solve(profile, cpus, target).at(cpus).ops_per_s


def corners(kappa: float, low: float, high: float) -> tuple[Corner, list[Corner]]:
    central = Corner(1.0, kappa, 1.0, True)
    swept = [Corner(t, k, ns, b) for t, k, ns, b in itertools.product(
        TRANSFER_SCALES, sorted({low, high}), NS_PER_INSN_SCALES, (False, True))]
    return central, swept


def judge(pair: str, first: CaseInputs, second: CaseInputs, machine: machines.Machine,
          calibration: Calibration | None, blocked_ns: float,
          held_out_error: float | None) -> PairVerdict:
    fit = calibration.fits.get(machine.key) if calibration else None
    kappa, low, high = (fit.kappa, fit.low, fit.high) if fit else (0.0, 0.0, 0.0)
    central, swept = corners(kappa, low, high)
    change = lambda c: (throughput(first, machine, c, blocked_ns)  # noqa: E731
                        / throughput(second, machine, c, blocked_ns) - 1)
    n = change(central)
    values = [change(c) for c in swept] + [n]
    lo, hi = min(values), max(values)
    verdict, why = "", ""
    if fit is None:
        why = "no calibration: the hand-off factor is unfitted"
    elif held_out_error is None:
        why = "no held-out error: the model was not checked"
    elif lo < 0 < hi or n == 0:
        why = f"the sign changes over the sweep ({lo:+.1%} to {hi:+.1%})"
    elif abs(n) < SIGN_MARGIN * (hi - lo) / 2:
        why = (f"{n:+.1%} is within {SIGN_MARGIN:g} half-widths of the sweep "
               f"({lo:+.1%} to {hi:+.1%})")
    elif abs(n) <= held_out_error:
        why = f"{n:+.1%} is within the held-out error ({held_out_error:.0%})"
    else:
        verdict = "first" if n > 0 else "second"
        why = f"sweep {lo:+.1%} to {hi:+.1%}, held-out error {held_out_error:.0%}"
    return PairVerdict(pair, first.kernel, second.kernel, first.case, machine.key, n, lo, hi,
                       held_out_error, verdict, why)


def pair_verdicts(inputs: list[CaseInputs], calibration: Calibration | None,
                  held_out_error: float | None,
                  targets: tuple[machines.Machine, ...] = machines.MACHINES
                  ) -> list[PairVerdict]:
    """Every pair of PAIRS whose two kernels the run has for a case, on every machine."""
    blocked = equal_blocked(inputs)
    by_key = {(i.kernel, i.case): i for i in inputs if i.insn_per_op is not None}
    out = []
    for pair, (a, b) in PAIRS.items():
        for case in sorted({c for _, c in by_key}, key=lambda c: (c.workload, c.fs, c.phase)):
            first, second = by_key.get((a, case)), by_key.get((b, case))
            if first is None or second is None:
                continue
            for machine in targets:
                out.append(judge(pair, first, second, machine, calibration,
                                 blocked.get(case, 0.0), held_out_error))
    return out
