"""From the tidy table to the answers: who wins, by how much, how sure, and why.

Three kinds of evidence, in the order of how much they can carry on a TCG
host (docs/design.md section 6):

  exact     icache lock acquisitions per operation (debug flavour): counts,
            identical across boots, any difference is real;
  icount    operations per emulated second at 1 vCPU under -icount: the
            single-thread cost, repeatable for most workloads but not all (a
            few depend on the ext4 image and on I/O timing), so a difference
            counts only beyond the rerun spread measured for its workload
            (analysis/rerun.py) as well as outside the run's own intervals;
  tcg       throughput at N vCPUs in plain TCG: wall time, noisy, significant
            only when the 95% intervals do not overlap.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from harness.analysis import rerun, stats
from harness.run.tidy import Row

EVIDENCE = {
    "exact": "icache lock acquisitions per operation (exact counts, debug kernels)",
    "icount": "single-thread rate at 1 vCPU under -icount (emulated time; a difference counts "
              "only where the intervals separate and it exceeds the rerun spread of its "
              "workload)",
    "tcg": "throughput under TCG (wall time, noisy)",
    "scaling": "throughput of N workers over 1 worker in the same boot (TCG; boot-to-boot "
               "noise cancels)",
}
LOCK_METRICS = ("acquisitions_per_op", "holdtime_per_op", "contentions_per_op",
                "waittime_per_op")


@dataclass(frozen=True)
class Case:
    """A workload's timed phase on one filesystem: the unit a verdict is about."""
    workload: str
    fs: str
    phase: str

    @property
    def label(self) -> str:
        return f"{self.workload} {self.phase} on {self.fs}" if self.phase != self.workload \
            else f"{self.workload} on {self.fs}"

    @property
    def slug(self) -> str:
        return f"{self.workload}-{self.fs}-{self.phase}".replace("/", "_")


# lock_stat counts every acquisition in the window, kernel threads' too: exact
# counts this close are the same design cost.
EXACT_TOLERANCE = 0.01


@dataclass(frozen=True)
class Verdict:
    case: Case
    evidence: str  # exact, icount, tcg
    cpus: int
    unit: str
    higher_is_better: bool
    summaries: dict[str, stats.Summary]  # kernel -> summary
    baseline: str
    spread: rerun.CaseSpread | None = None  # -icount: how far a rerun moves this case

    @property
    def winner(self) -> str:
        pick = max if self.higher_is_better else min
        return pick(self.summaries, key=lambda k: self.summaries[k].mean)

    def same(self, a: str, b: str) -> bool:
        """Exact counts of two kernels that differ by less than what background
        kernel activity in the counting window adds."""
        x, y = self.summaries[a].mean, self.summaries[b].mean
        return self.evidence == "exact" and abs(x - y) <= EXACT_TOLERANCE * max(abs(x), abs(y))

    @property
    def leaders(self) -> list[str]:
        """The winner and every kernel whose exact count equals it."""
        return [k for k in self.summaries if k == self.winner or self.same(k, self.winner)]

    def comparison(self, kernel: str) -> stats.Comparison | None:
        if self.baseline not in self.summaries or kernel == self.baseline:
            return None
        return stats.Comparison(self.summaries[kernel], self.summaries[self.baseline])

    def outcome(self, kernel: str) -> str:
        """Against the baseline: better or worse (an exact count that is not the
        same, a timed figure whose interval separates), even (the same count, or
        inside the noise), or unclaimed (one boot on a side, no interval)."""
        return self._outcome(kernel, rerun_rule=True)

    def outcome_by_intervals(self, kernel: str) -> str:
        """The outcome by the run's own intervals alone, as before the rerun rule."""
        return self._outcome(kernel, rerun_rule=False)

    def _outcome(self, kernel: str, rerun_rule: bool) -> str:
        c = self.comparison(kernel)
        if self.evidence == "exact":
            decided = not self.same(kernel, self.baseline)
        elif c.candidate.n < 2 or c.baseline.n < 2:
            return "unclaimed"
        else:
            decided = c.significant and (not rerun_rule or self.beyond_rerun(c))
        if not decided:
            return "even"
        return "better" if (c.change > 0) == self.higher_is_better else "worse"

    def min_effect(self, c: stats.Comparison) -> float | None:
        """The rerun spread of this case for these sample sizes (None: not measured)."""
        if self.spread is None:
            return None
        return self.spread.min_effect(c.candidate.n, c.baseline.n)

    def beyond_rerun(self, c: stats.Comparison) -> bool:
        floor = self.min_effect(c)
        return floor is None or abs(c.change) > floor

    @property
    def decided(self) -> bool:
        """The leaders' lead over every other kernel holds up to the evidence."""
        best = self.summaries[self.winner]
        others = [k for k in self.summaries if k not in self.leaders]
        for kernel in others:
            c = stats.Comparison(best, self.summaries[kernel])
            if not (self.evidence == "exact" or (c.significant and self.beyond_rerun(c))):
                return False
        return bool(others)


def _ok(rows: list[Row]) -> list[Row]:
    return [r for r in rows if r.status in ("ok", "warning")]


def kernels_in(rows: list[Row], order: list[str] | None = None) -> list[str]:
    seen = list(dict.fromkeys(r.kernel for r in rows))
    if order:
        return [k for k in order if k in seen] + [k for k in seen if k not in order]
    return seen


def cases(rows: list[Row]) -> list[Case]:
    found = {Case(r.workload, r.fs, r.phase) for r in rows
             if r.metric == "throughput" and r.lock == ""}
    return sorted(found, key=lambda c: (c.workload, c.fs, c.phase))


def plain_mode(rows: list[Row]) -> str:
    """The accelerator of the run's timed boots: kvm or tcg."""
    return "kvm" if any(r.mode == "kvm" for r in rows) else "tcg"


def throughput(rows: list[Row], case: Case, mode: str, cpus: int,
               procs: int | None = None) -> tuple[dict[str, stats.Summary], str]:
    """Per kernel, the summary over repetitions of a case's throughput."""
    values: dict[str, list[float]] = defaultdict(list)
    unit = ""
    for r in _ok(rows):
        if (r.flavour == "perf" and r.metric == "throughput" and r.mode == mode
                and (r.workload, r.fs, r.phase) == (case.workload, case.fs, case.phase)
                and r.cpus == cpus and r.procs == (procs or cpus)):
            values[r.kernel].append(r.value)
            unit = r.unit
    return {k: stats.summarize(v) for k, v in values.items()}, unit


def scaling(rows: list[Row], case: Case, mode: str, cpus: int) -> dict[str, stats.Summary]:
    """Per kernel: throughput with `cpus` workers over 1 worker, each pair from one boot."""
    by_boot: dict[tuple[str, int], dict[int, float]] = defaultdict(dict)
    for r in _ok(rows):
        if (r.flavour == "perf" and r.metric == "throughput" and r.mode == mode
                and r.cpus == cpus and r.procs in (1, cpus)
                and (r.workload, r.fs, r.phase) == (case.workload, case.fs, case.phase)):
            by_boot[r.kernel, r.repetition][r.procs] = r.value
    ratios: dict[str, list[float]] = defaultdict(list)
    for (kernel, _), values in by_boot.items():
        if values.get(1) and cpus in values:
            ratios[kernel].append(values[cpus] / values[1])
    return {k: stats.summarize(v) for k, v in ratios.items()}


def lock_figures(rows: list[Row], case: Case, cpus: int) -> dict[tuple[str, str, str], float]:
    """(kernel, role, metric) -> mean over debug repetitions, for one case."""
    values: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for r in _ok(rows):
        if (r.flavour == "debug" and r.lock and r.metric in LOCK_METRICS and r.cpus == cpus
                and r.procs == cpus
                and (r.workload, r.fs, r.phase) == (case.workload, case.fs, case.phase)):
            values[r.kernel, r.lock, r.metric].append(r.value)
    return {k: sum(v) / len(v) for k, v in values.items()}


def total_acquisitions(rows: list[Row], case: Case, cpus: int) -> dict[str, stats.Summary]:
    """Per kernel: all icache lock acquisitions per operation, one value per boot."""
    per_boot: dict[tuple[str, str], float] = defaultdict(float)
    for r in _ok(rows):
        if (r.flavour == "debug" and r.lock and r.metric == "acquisitions_per_op"
                and r.cpus == cpus and r.procs == cpus
                and (r.workload, r.fs, r.phase) == (case.workload, case.fs, case.phase)):
            per_boot[r.kernel, r.cell] += r.value
    by_kernel: dict[str, list[float]] = defaultdict(list)
    for (kernel, _), value in per_boot.items():
        by_kernel[kernel].append(round(value, 6))
    return {k: stats.summarize(v) for k, v in by_kernel.items()}


def hottest_lock(figures: dict[tuple[str, str, str], float], kernel: str) -> tuple[str, dict]:
    """The icache lock role a kernel spends most hold time on per operation."""
    roles = {role for (k, role, _) in figures if k == kernel}
    if not roles:
        return "", {}
    role = max(roles, key=lambda r: figures.get((kernel, r, "holdtime_per_op"), 0.0))
    return role, {m: figures.get((kernel, role, m), math.nan) for m in LOCK_METRICS}


def verdicts(rows: list[Row], baseline: str, kernel_order: list[str] | None = None,
             spread: rerun.RerunSpread | None = None) -> list[Verdict]:
    """spread: the measured rerun spread of -icount rates; without it an -icount
    difference is judged by the run's own intervals alone."""
    out = []
    cpus_debug = sorted({r.cpus for r in rows if r.flavour == "debug"})
    mode = plain_mode(rows)
    cpus_timed = sorted({r.cpus for r in rows if r.flavour == "perf" and r.mode == mode})
    for case in cases(rows):
        for cpus in cpus_debug[:1]:
            summaries = total_acquisitions(rows, case, cpus)
            if summaries:
                out.append(Verdict(case, "exact", cpus, "acquisitions/op", False,
                                   _ordered(summaries, kernel_order), baseline))
        summaries, unit = throughput(rows, case, "tcg-icount", 1)
        if summaries:
            out.append(Verdict(case, "icount", 1, unit, True,
                               _ordered(summaries, kernel_order), baseline,
                               spread.cases.get(case.label) if spread else None))
        for cpus in cpus_timed:
            summaries, unit = throughput(rows, case, mode, cpus)
            if summaries:
                out.append(Verdict(case, "tcg", cpus, unit, True,
                                   _ordered(summaries, kernel_order), baseline))
            if cpus > 1:
                ratios = scaling(rows, case, mode, cpus)
                if ratios:
                    out.append(Verdict(case, "scaling", cpus, "x of 1 worker", True,
                                       _ordered(ratios, kernel_order), baseline))
    return out


@dataclass(frozen=True)
class Tally:
    """How one kernel fared against the baseline over every case of one kind of evidence:
    the relative changes of the cases of each outcome (Verdict.outcome)."""
    kernel: str
    evidence: str
    cpus: int
    better: list[float]
    worse: list[float]
    even: list[float]  # the same count, or inside the noise
    unclaimed: int  # one boot on a side: no interval


def tallies(verdicts: list[Verdict]) -> list[Tally]:
    """Per kernel other than the baseline, per evidence and vCPU count: its outcomes."""
    groups: dict[tuple[str, str, int], dict[str, list[float]]] = {}
    for v in verdicts:
        for kernel in v.summaries:
            c = v.comparison(kernel)
            if c is None:
                continue
            outcomes = groups.setdefault((kernel, v.evidence, v.cpus), defaultdict(list))
            outcomes[v.outcome(kernel)].append(c.change)
    return [Tally(k, e, n, o["better"], o["worse"], o["even"], len(o["unclaimed"]))
            for (k, e, n), o in groups.items()]


def _ordered(summaries: dict[str, stats.Summary], order: list[str] | None) -> dict:
    keys = [k for k in (order or []) if k in summaries] + \
        [k for k in summaries if k not in (order or [])]
    return {k: summaries[k] for k in keys}


def lockdep_counts(rows: list[Row]) -> dict[tuple[str, str, str], int]:
    """(kernel, workload, fs) -> lockdep reports seen in debug boots (0 shown as 0)."""
    counts: dict[tuple[str, str, str], int] = {}
    for r in rows:
        if r.flavour == "debug" and r.metric == "lockdep_reports":
            key = (r.kernel, r.workload, r.fs)
            counts[key] = counts.get(key, 0) + int(r.value)
    return counts


def kernel_reports(rows: list[Row], flavour: str) -> dict[tuple[str, str, str], dict[str, int]]:
    """(kernel, workload, fs) -> kernel reports by kind in the boots of one flavour.

    Every measured step of the flavour has an entry, so a case where the
    checkers found nothing is there with no kinds: zero is shown as zero.
    """
    found: dict[tuple[str, str, str], dict[str, int]] = {}
    for r in rows:
        if r.flavour != flavour:
            continue
        key = (r.kernel, r.workload, r.fs)
        if r.metric == "lockdep_reports":
            found.setdefault(key, {})
        elif r.metric.startswith("reports."):
            kinds = found.setdefault(key, {})
            kind = r.metric.split(".", 1)[1]
            kinds[kind] = kinds.get(kind, 0) + int(r.value)
    return found


def retries(rows: list[Row], cpus: int) -> dict[tuple[str, str, str], float]:
    """(kernel, case label, counter) -> retries per operation (debug, mean over boots)."""
    values: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for r in _ok(rows):
        if (r.flavour == "debug" and r.metric.startswith("retries.")
                and r.metric.endswith("_per_op") and r.cpus == cpus and r.procs == cpus):
            counter = r.metric[len("retries."):-len("_per_op")]
            values[r.kernel, Case(r.workload, r.fs, r.phase).label, counter].append(r.value)
    return {k: sum(v) / len(v) for k, v in values.items()}


def noise(rows: list[Row]) -> list[tuple[Case, int, float, float]]:
    """(case, cpus, worst CoV over kernels, reruns) of the TCG throughput cells."""
    out = []
    reruns: dict[tuple, float] = defaultdict(float)
    for r in rows:
        if r.flavour == "perf" and r.metric == "reruns":
            reruns[r.workload, r.fs, r.cpus] += r.value
    mode = plain_mode(rows)
    for case in cases(rows):
        for cpus in sorted({r.cpus for r in rows if r.flavour == "perf" and r.mode == mode}):
            summaries, _ = throughput(rows, case, mode, cpus)
            covs = [s.cov for s in summaries.values() if s.n > 1]
            if covs:
                out.append((case, cpus, max(covs), reruns[case.workload, case.fs, cpus]))
    return out

