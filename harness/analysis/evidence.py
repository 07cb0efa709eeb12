"""From the tidy table to the answers: who wins, by how much, how sure, and why.

Kinds of evidence, in the order of how much they can carry on a TCG host
(docs/design.md section 6):

  exact     icache lock acquisitions per operation (debug flavour): counts,
            identical across boots; two kernels differ beyond EXACT_TOLERANCE
            and EXACT_FLOOR (what kernel threads add to a counting window);
  icount    operations per emulated second at 1 vCPU under -icount: the
            single-thread cost, repeatable for most workloads but not all (a
            few depend on the ext4 image and on I/O timing), so a difference
            counts only beyond the rerun spread measured for its workload
            (analysis/rerun.py) as well as outside the run's own intervals,
            and never with a boot that stalled on its own;
  tcg       throughput at N vCPUs in plain TCG: wall time, noisy; apart when
            the ratio's interval on log values excludes 1, or when every boot
            of one kernel lies beyond the other's and the rank test over all
            boots of the case puts one apart (stats.py);
  scaling   N workers over 1 in the same boot, judged like tcg.

cross_case() looks over every timed cell at once for a kernel whose timings
win beyond chance while its instruction counts do not differ.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from harness.analysis import rerun, rounds, stats
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


# lock_stat counts every acquisition in the counting window, kernel threads'
# (the flusher, kswapd, RCU callbacks) too. Two exact counts are the same
# design cost when they differ by less than EXACT_TOLERANCE of the larger or
# by less than EXACT_FLOOR acquisitions per operation: one in a hundred
# operations is what that background adds to a window (fstree walk on tmpfs
# took 0.0075 and 0.0080 acquisitions/op in two kernels of the same design).
EXACT_TOLERANCE = 0.01
EXACT_FLOOR = 0.01


def same_count(x: float, y: float) -> bool:
    """Exact counts that differ by less than what background kernel activity in the
    counting window adds."""
    return abs(x - y) <= max(EXACT_TOLERANCE * max(abs(x), abs(y)), EXACT_FLOOR)


@dataclass(frozen=True)
class Verdict:
    case: Case
    evidence: str  # exact, icount, tcg, scaling
    cpus: int
    unit: str
    higher_is_better: bool
    summaries: dict[str, stats.Summary]  # kernel -> summary
    baseline: str
    spread: rerun.CaseSpread | None = None  # -icount: how far a rerun moves this case
    # kernel -> the values summarised, one per boot (the rank test reads them)
    values: dict[str, list[float]] = field(default_factory=dict)
    procs: int = 0  # workers (0: as many as vCPUs)
    stalled: frozenset[str] = frozenset()  # kernels with a boot that stalled (-icount)

    @property
    def winner(self) -> str:
        pick = max if self.higher_is_better else min
        return pick(self.summaries, key=lambda k: self.summaries[k].mean)

    def same(self, a: str, b: str) -> bool:
        x, y = self.summaries[a].mean, self.summaries[b].mean
        return self.evidence == "exact" and same_count(x, y)

    def repeats(self, kernel: str) -> bool:
        """Every debug boot of the kernel gave the same count (one boot: nothing to
        disagree with). An exact count that the boots do not repeat (a crowded chain's
        contents, a background loop) is a measured figure, decided by the boots."""
        found = self.values.get(kernel, [])
        return len(found) < 2 or same_count(min(found), max(found))

    @property
    def leaders(self) -> list[str]:
        """The winner and every kernel whose exact count equals it."""
        return [k for k in self.summaries if k == self.winner or self.same(k, self.winner)]

    def comparison(self, kernel: str, against: str | None = None) -> stats.Comparison | None:
        against = against or self.baseline
        if against not in self.summaries or kernel not in self.summaries or kernel == against:
            return None
        return stats.Comparison(self.summaries[kernel], self.summaries[against])

    def outcome(self, kernel: str, against: str | None = None) -> str:
        """Against the baseline (or `against`): better or worse (an exact count that
        is not the same, a timed figure the statistics separate), even (the same
        count, or inside the noise), or unclaimed (no interval: one boot on a side,
        or an -icount case whose rerun spread was never measured)."""
        return self._outcome(kernel, against, rerun_rule=True)

    def outcome_by_intervals(self, kernel: str, against: str | None = None) -> str:
        """The outcome by the run's own intervals alone, as before the rerun rule."""
        return self._outcome(kernel, against, rerun_rule=False)

    def _outcome(self, kernel: str, against: str | None, rerun_rule: bool) -> str:
        c = self.comparison(kernel, against)
        if c is None:
            return "unclaimed"
        exact = self.evidence == "exact" and self.repeats(kernel) and \
            self.repeats(against or self.baseline)
        if exact:
            decided = not self.same(kernel, against or self.baseline)
        elif c.candidate.n < 2 or c.baseline.n < 2:
            return "unclaimed"
        elif self.evidence == "icount":
            if rerun_rule and (self.spread is None or {kernel, against or self.baseline}
                               & self.stalled):
                return "unclaimed"
            decided = c.significant and (not rerun_rule or self.beyond_rerun(c))
        else:
            decided = c.significant or self.rank_apart(kernel, against or self.baseline)
        if not decided:
            return "even"
        return "better" if (c.change > 0) == self.higher_is_better else "worse"

    def unclaimed_reason(self, kernel: str, against: str | None = None) -> str:
        c = self.comparison(kernel, against)
        if c is None or c.candidate.n < 2 or c.baseline.n < 2:
            return "one boot on a side, no interval"
        reasons = []
        stalled = sorted({kernel, against or self.baseline} & self.stalled)
        if stalled:
            reasons.append(f"a boot of {' and '.join(stalled)} stalled (rerun it)")
        if self.spread is None:
            reasons.append("its rerun spread was never measured")
        return "; ".join(reasons)

    def rank(self, kernel: str) -> stats.RankTest | None:
        """The exact rank test of one kernel's boots against every other boot of the case."""
        mine = self.values.get(kernel, [])
        others = [v for k, vs in self.values.items() if k != kernel for v in vs]
        return stats.rank_test(mine, others)

    def rank_apart(self, a: str, b: str) -> bool:
        """Every boot of one of the two lies beyond every boot of the other, and the rank
        test over every boot of the case puts one of them apart on that side."""
        va, vb = self.values.get(a, []), self.values.get(b, [])
        if stats.every_boot_beyond(vb, va):
            a, b, va, vb = b, a, vb, va
        if not stats.every_boot_beyond(va, vb):
            return False
        top, bottom = self.rank(a), self.rank(b)
        return bool((top and top.apart and top.higher) or
                    (bottom and bottom.apart and not bottom.higher))

    def decided_by(self, kernel: str, against: str | None = None) -> str:
        """Which rule separated the two: exact, interval, rank, or "" (not separated)."""
        if self.outcome(kernel, against) not in ("better", "worse"):
            return ""
        if self.evidence == "exact" and self.repeats(kernel) and \
                self.repeats(against or self.baseline):
            return "exact"
        c = self.comparison(kernel, against)
        return "interval" if c is not None and c.significant else "rank"

    def min_effect(self, c: stats.Comparison) -> float | None:
        """The rerun spread of this case for these sample sizes (None: not measured)."""
        if self.spread is None:
            return None
        return self.spread.min_effect(c.candidate.n, c.baseline.n)

    def beyond_rerun(self, c: stats.Comparison) -> bool:
        floor = self.min_effect(c)
        return floor is not None and abs(c.change) > floor

    def detectable(self, kernel: str, against: str | None = None) -> float:
        """The smallest relative difference this evidence could have shown between the two:
        the exact tolerance, the -icount rerun floor (or the intervals' reach), or the
        width of a timed ratio's interval."""
        c = self.comparison(kernel, against)
        if c is None or self.identical:
            return math.nan
        if self.evidence == "exact" and self.repeats(kernel) and \
                self.repeats(against or self.baseline):
            base = max(c.baseline.mean, c.candidate.mean)
            return max(EXACT_TOLERANCE, EXACT_FLOOR / base) if base else math.nan
        reach = c.detectable
        floor = self.min_effect(c) if self.evidence == "icount" else None
        return max(reach, floor) if floor is not None else reach

    @property
    def identical(self) -> bool:
        """Every boot of every kernel gave the same figure: the measurement's resolution
        (a clock in milliseconds, say) hides any difference, so it shows none."""
        found = {v for vs in self.values.values() for v in vs}
        return self.evidence != "exact" and len(found) == 1 and \
            sum(len(vs) for vs in self.values.values()) > 2

    @property
    def decided(self) -> bool:
        """The leaders' lead over every other kernel holds up to the evidence."""
        others = [k for k in self.summaries if k not in self.leaders]
        for kernel in others:
            if self.outcome(kernel, self.winner) not in ("better", "worse"):
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


def _in_case(r: Row, case: Case) -> bool:
    return (r.workload, r.fs, r.phase) == (case.workload, case.fs, case.phase)


def throughput_values(rows: list[Row], case: Case, mode: str, cpus: int,
                      procs: int | None = None) -> tuple[dict[str, list[float]], str]:
    """Per kernel, a case's throughput in each perf boot (one value per repetition)."""
    values: dict[str, list[float]] = defaultdict(list)
    unit = ""
    for r in _ok(rows):
        if (r.flavour == "perf" and r.metric == "throughput" and r.mode == mode
                and _in_case(r, case) and r.cpus == cpus and r.procs == (procs or cpus)):
            values[r.kernel].append(r.value)
            unit = r.unit
    return dict(values), unit


def throughput(rows: list[Row], case: Case, mode: str, cpus: int,
               procs: int | None = None) -> tuple[dict[str, stats.Summary], str]:
    """Per kernel, the summary over repetitions of a case's throughput."""
    values, unit = throughput_values(rows, case, mode, cpus, procs)
    return {k: stats.summarize(v) for k, v in values.items()}, unit


def scaling_values(rows: list[Row], case: Case, mode: str, cpus: int) -> dict[str, list[float]]:
    """Per kernel: throughput with `cpus` workers over 1 worker, each pair from one boot."""
    by_boot: dict[tuple[str, int], dict[int, float]] = defaultdict(dict)
    for r in _ok(rows):
        if (r.flavour == "perf" and r.metric == "throughput" and r.mode == mode
                and r.cpus == cpus and r.procs in (1, cpus) and _in_case(r, case)):
            by_boot[r.kernel, r.repetition][r.procs] = r.value
    ratios: dict[str, list[float]] = defaultdict(list)
    for (kernel, _), values in by_boot.items():
        if values.get(1) and cpus in values:
            ratios[kernel].append(values[cpus] / values[1])
    return dict(ratios)


def scaling(rows: list[Row], case: Case, mode: str, cpus: int) -> dict[str, stats.Summary]:
    return {k: stats.summarize(v) for k, v in scaling_values(rows, case, mode, cpus).items()}


def main_procs(rows: list[Row], case: Case, cpus: int) -> int:
    """The workers of a case's debug step at `cpus` vCPUs: as many as vCPUs where the
    boots ran that step, else the most they ran (a workload that fixes its workers, as
    hotinode-crowd's four at every vCPU count)."""
    found = {r.procs for r in rows if r.flavour == "debug" and r.cpus == cpus
             and _in_case(r, case)}
    return cpus if cpus in found or not found else max(found)


def lock_figures(rows: list[Row], case: Case, cpus: int,
                 procs: int | None = None) -> dict[tuple[str, str, str], float]:
    """(kernel, role, metric) -> mean over debug repetitions, for one case (its step with
    `procs` workers, default as many as vCPUs)."""
    values: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for r in _ok(rows):
        if (r.flavour == "debug" and r.lock and r.metric in LOCK_METRICS and r.cpus == cpus
                and r.procs == (procs or cpus) and _in_case(r, case)):
            values[r.kernel, r.lock, r.metric].append(r.value)
    return {k: sum(v) / len(v) for k, v in values.items()}


def acquisition_values(rows: list[Row], case: Case, cpus: int,
                       roles: tuple[str, ...] | None = None,
                       procs: int | None = None) -> dict[str, list[float]]:
    """Per kernel: icache lock acquisitions per operation (of `roles`, default every
    role), one value per debug boot (of the step with `procs` workers, default as many
    as vCPUs)."""
    per_boot: dict[tuple[str, str], float] = defaultdict(float)
    for r in _ok(rows):
        if (r.flavour == "debug" and r.lock and r.metric == "acquisitions_per_op"
                and r.cpus == cpus and r.procs == (procs or cpus) and _in_case(r, case)
                and (roles is None or r.lock in roles)):
            per_boot[r.kernel, r.cell] += r.value
    by_kernel: dict[str, list[float]] = defaultdict(list)
    for (kernel, _), value in per_boot.items():
        by_kernel[kernel].append(round(value, 6))
    return dict(by_kernel)


def total_acquisitions(rows: list[Row], case: Case, cpus: int) -> dict[str, stats.Summary]:
    """Per kernel: all icache lock acquisitions per operation, one value per boot."""
    return {k: stats.summarize(v) for k, v in acquisition_values(rows, case, cpus).items()}


def cs_lengths(rows: list[Row], case: Case) -> dict[tuple[str, str], stats.Summary]:
    """(kernel, role) -> critical-section length in guest instructions per acquisition,
    over the tcg-cs boots (perf kernels, no lockdep): what a lock is really held for."""
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in _ok(rows):
        if r.mode == "tcg-cs" and r.lock and r.metric == "cs_instructions_per_acq" \
                and _in_case(r, case):
            values[r.kernel, r.lock].append(r.value)
    return {k: stats.summarize(v) for k, v in values.items()}


# The plugin's percentiles (boot/cs_figures.py), and the modes that measure them.
CS_PERCENTILES = (50, 90, 99)


def cs_percentiles(rows: list[Row], case: Case, wait: bool = False
                   ) -> dict[tuple[str, str], dict[str, list[float]]]:
    """(kernel, role) -> "p50"/"p90"/"p99" -> one value per boot: of the sections' own
    lengths (tcg-cs, 1 vCPU), or with wait of the rest of the holder's section a
    spin_lock waited for, and "waits" their count (tcg-cs-rr, several vCPUs). Each
    value is the smallest of its histogram bucket (1/8 of a power of 2 wide)."""
    prefix, mode = ("cs_wait_instructions_p", "tcg-cs-rr") if wait else ("cs_instructions_p",
                                                                        "tcg-cs")
    names = {f"{prefix}{q}": f"p{q}" for q in CS_PERCENTILES}
    out: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in _ok(rows):
        if r.mode != mode or not r.lock or not _in_case(r, case):
            continue
        if r.metric in names:
            out[r.kernel, r.lock][names[r.metric]].append(r.value)
        elif wait and r.metric == "cs_waits":
            out[r.kernel, r.lock]["waits"].append(r.value)
    return {k: dict(v) for k, v in out.items()}


def hottest_lock(figures: dict[tuple[str, str, str], float], kernel: str) -> tuple[str, dict]:
    """The icache lock role a kernel takes most often per operation."""
    roles = {role for (k, role, _) in figures if k == kernel}
    if not roles:
        return "", {}
    # sorted: ties (every role at 0) name the same role in every report of the run
    role = max(sorted(roles), key=lambda r: figures.get((kernel, r, "acquisitions_per_op"), 0.0))
    return role, {m: figures.get((kernel, role, m), math.nan) for m in LOCK_METRICS}


def verdicts(rows: list[Row], baseline: str, kernel_order: list[str] | None = None,
             spread: rerun.RerunSpread | None = None) -> list[Verdict]:
    """spread: the measured rerun spread of -icount rates; without it no -icount
    difference is claimed (the run's own intervals cannot say what a rerun does)."""
    out = []
    cpus_debug = sorted({r.cpus for r in rows if r.flavour == "debug"})
    mode = plain_mode(rows)
    cpus_timed = sorted({r.cpus for r in rows if r.flavour == "perf" and r.mode == mode})

    def add(case: Case, kind: str, cpus: int, unit: str, higher: bool,
            values: dict[str, list[float]], case_spread=None,
            stalled: frozenset[str] = frozenset()) -> None:
        if values:
            ordered = _ordered(values, kernel_order)
            out.append(Verdict(case, kind, cpus, unit, higher,
                               {k: stats.summarize(v) for k, v in ordered.items()},
                               baseline, case_spread, ordered, stalled=stalled))

    grouped = by_case(rows)
    for case in cases(rows):
        mine = grouped[case]
        for cpus in cpus_debug[:1]:
            add(case, "exact", cpus, "acquisitions/op", False,
                acquisition_values(mine, case, cpus))
        values, unit = throughput_values(mine, case, "tcg-icount", 1)
        add(case, "icount", 1, unit, True, values,
            spread.cases.get(case.label) if spread else None,
            frozenset(b.kernel for b in stalled_boots(mine, case)))
        for cpus in cpus_timed:
            values, unit = throughput_values(mine, case, mode, cpus)
            add(case, "tcg", cpus, unit, True, values)
            if cpus > 1:
                add(case, "scaling", cpus, "x of 1 worker", True,
                    scaling_values(mine, case, mode, cpus))
    return out


def by_case(rows: list[Row]) -> dict[Case, list[Row]]:
    """The rows of each case: the per-case figures scan these, not the whole run,
    which made a report quadratic in the run's size."""
    out: dict[Case, list[Row]] = defaultdict(list)
    for r in rows:
        out[Case(r.workload, r.fs, r.phase)].append(r)
    return out


@dataclass(frozen=True)
class Tally:
    """How one kernel fared against another (the baseline) over every case of one kind
    of evidence: the relative changes of the cases of each outcome (Verdict.outcome)."""
    kernel: str
    evidence: str
    cpus: int
    better: list[float]
    worse: list[float]
    even: list[float]  # the same count, or inside the noise
    unclaimed: int  # no interval: one boot on a side, or no rerun spread measured
    detectable: list[float] = field(default_factory=list)  # per case, what it could show

    @property
    def cases(self) -> int:
        return len(self.better) + len(self.worse) + len(self.even) + self.unclaimed


def tallies(verdicts: list[Verdict], against: str | None = None) -> list[Tally]:
    """Per kernel other than the baseline (or `against`), per evidence and vCPU count."""
    groups: dict[tuple[str, str, int], dict[str, list[float]]] = {}
    for v in verdicts:
        for kernel in v.summaries:
            c = v.comparison(kernel, against)
            if c is None:
                continue
            outcomes = groups.setdefault((kernel, v.evidence, v.cpus), defaultdict(list))
            outcomes[v.outcome(kernel, against)].append(c.change)
            outcomes["detectable"].append(v.detectable(kernel, against))
    return [Tally(k, e, n, o["better"], o["worse"], o["even"], len(o["unclaimed"]),
                  o["detectable"]) for (k, e, n), o in groups.items()]


def _ordered(values: dict, order: list[str] | None) -> dict:
    keys = [k for k in (order or []) if k in values] + \
        [k for k in values if k not in (order or [])]
    return {k: values[k] for k in keys}


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


def retries(rows: list[Row], cpus: int,
            fixed: bool = False) -> dict[tuple[str, str, str], float]:
    """(kernel, case label, counter) -> retries per operation (debug, mean over boots);
    `fixed`: a case whose workload fixes its workers counted at its own (main_procs)."""
    values: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    workers: dict[Case, int] = {}
    if fixed:
        for case, mine in by_case([r for r in rows if r.flavour == "debug"
                                   and r.cpus == cpus]).items():
            workers[case] = main_procs(mine, case, cpus)
    for r in _ok(rows):
        if (r.flavour == "debug" and r.metric.startswith("retries.")
                and r.metric.endswith("_per_op") and r.cpus == cpus
                and r.procs == workers.get(Case(r.workload, r.fs, r.phase), cpus)):
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



# Latency percentiles per operation as the programs report them (our C programs:
# p50_ns, p99_ns; fio: clat_p50_ns, clat_p99_ns).
LATENCY_METRICS = {"p50": ("p50_ns", "clat_p50_ns"), "p99": ("p99_ns", "clat_p99_ns")}


def latency_values(rows: list[Row], case: Case, mode: str, cpus: int, procs: int,
                   percentile: str) -> dict[str, list[float]]:
    """Per kernel, one latency percentile of a case in each perf boot, in ns."""
    names = LATENCY_METRICS[percentile]
    values: dict[str, list[float]] = defaultdict(list)
    for r in _ok(rows):
        if (r.flavour == "perf" and r.mode == mode and r.metric in names and not r.lock
                and _in_case(r, case) and r.cpus == cpus and r.procs == procs):
            values[r.kernel].append(r.value)
    return dict(values)


def timed_cells(rows: list[Row], mode: str) -> list[tuple[Case, int, int]]:
    """Every (case, vCPUs, workers) timed in the plain mode."""
    found = {(Case(r.workload, r.fs, r.phase), r.cpus, r.procs) for r in _ok(rows)
             if r.flavour == "perf" and r.mode == mode and r.metric == "throughput"}
    return sorted(found, key=lambda c: (c[0].workload, c[0].fs, c[0].phase, c[1], c[2]))


# A timed lead is not the code's own when -icount puts the instructions this much
# closer together (their median difference at most a tenth of the lead).
ICOUNT_SHARE = 10


@dataclass(frozen=True)
class CrossCase:
    """One kernel against another over every timed cell where both ran: how often its
    mean throughput was the higher, and whether -icount calls the two equal."""
    kernel: str
    against: str
    wins: int
    cells: int
    p: float  # two-sided sign test
    median_ratio: float
    icount_cases: int  # -icount cases where both ran
    icount_apart: int  # of those, where a difference was claimed
    icount_median: float  # median absolute -icount change (NaN: no -icount case)
    # The boot as the unit (analysis/rounds.py): each boot paired with the other
    # kernel's boot of the same round, their mean log ratio over the cases they share.
    pair_ratios: tuple[float, ...] = ()  # exp of each pair's mean log ratio
    p_pairs: float = 1.0  # exact sign-flip test over the pairs, two-sided
    # Per timed vCPU count above one: (vCPUs, cases whose icache lock acquisitions per op
    # the debug boots of both kernels counted there, of those the cases where they differ).
    locks: tuple[tuple[int, int, int], ...] = ()
    same_locks: frozenset[tuple[int, Case]] = frozenset()  # (vCPUs, case): counts equal

    @property
    def pairs_won(self) -> int:
        return sum(1 for r in self.pair_ratios if r > 1)

    def covers(self, cpus: int, case: Case) -> bool:
        """Whether a flag speaks for a timed figure of `case` at `cpus` vCPUs. -icount
        runs one vCPU; on more, a lead could come from contention, which the same
        instructions do not rule out, unless the two kernels take the same locks in
        that case there."""
        return cpus <= 1 or (cpus, case) in self.same_locks

    @property
    def flagged(self) -> bool:
        """Wins beyond chance (more often, not less) while the instruction counts say the
        two differ by at most a tenth of the timed lead: the lead is not the code's."""
        lead = abs(math.log(self.median_ratio)) if self.median_ratio > 0 else math.inf
        return (self.p < stats.ALPHA and self.wins * 2 > self.cells and self.icount_cases > 0
                and self.icount_median * ICOUNT_SHARE < lead)


def cross_case(rows: list[Row], kernel: str, against: str,
               spread: rerun.RerunSpread | None = None) -> CrossCase | None:
    mode = plain_mode(rows)
    ratios = []
    grouped = by_case(rows)
    for case, cpus, procs in timed_cells(rows, mode):
        values, _ = throughput_values(grouped[case], case, mode, cpus, procs)
        if values.get(kernel) and values.get(against):
            ratios.append(statistics.fmean(values[kernel]) / statistics.fmean(values[against]))
    if not ratios:
        return None
    wins = sum(1 for r in ratios if r > 1)
    icount = [v for v in verdicts(rows, against, [against, kernel], spread)
              if v.evidence == "icount" and v.comparison(kernel) is not None]
    changes = [v.comparison(kernel).change for v in icount]  # type: ignore[union-attr]
    apart = sum(1 for v in icount if v.outcome(kernel) in ("better", "worse"))
    paired = rounds.compare(rows, kernel, against)
    traffic = {cpus: _lock_traffic(grouped, kernel, against, cpus)
               for cpus in sorted({c for _, c, _ in timed_cells(rows, mode) if c > 1})}
    locks = tuple((cpus, len(compared), len(compared - same))
                  for cpus, (compared, same) in traffic.items())
    same_locks = frozenset((cpus, case) for cpus, (_, same) in traffic.items()
                           for case in same)
    return CrossCase(kernel, against, wins, len(ratios), stats.sign_test(wins, len(ratios)),
                     statistics.median(ratios), len(icount), apart,
                     statistics.median(abs(c) for c in changes) if changes else math.nan,
                     tuple(math.exp(p.log_ratio) for p in paired.pairs),
                     paired.p_pairs if paired.pairs else 1.0, locks, same_locks)


def _lock_traffic(grouped: dict[Case, list[Row]], kernel: str, against: str,
                  cpus: int) -> tuple[set[Case], set[Case]]:
    """The cases whose lock acquisitions per op both kernels' debug boots counted at
    `cpus` vCPUs, and of those the cases where the two counts are the same."""
    compared, same = set(), set()
    for case, mine in grouped.items():
        values = acquisition_values(mine, case, cpus)
        if values.get(kernel) and values.get(against):
            compared.add(case)
            if same_count(statistics.fmean(values[kernel]),
                          statistics.fmean(values[against])):
                same.add(case)
    return compared, same


# A boot of an -icount case stalled when its rate falls this far below the median of
# every boot of the case while its median operation takes no longer: one operation
# waited (on I/O, with the virtual clock running), the code did not change.
STALL_DROP = 0.05


@dataclass(frozen=True)
class Stall:
    kernel: str
    repetition: int
    drop: float  # its rate against the case's median rate, minus 1
    slowest_ns: float  # its slowest operation


def stalled_boots(rows: list[Row], case: Case, mode: str = "tcg-icount") -> list[Stall]:
    """The boots of a 1-vCPU case whose rate a stall of their own pulled down."""
    figures: dict[tuple[str, int], dict[str, float]] = defaultdict(dict)
    for r in _ok(rows):
        if (r.flavour == "perf" and r.mode == mode and r.cpus == 1 and not r.lock
                and _in_case(r, case) and r.metric in ("throughput", "p50_ns", "max_ns")):
            figures[r.kernel, r.repetition][r.metric] = r.value
    boots = {k: f for k, f in figures.items() if "throughput" in f}
    if len(boots) < 3:
        return []
    rate = statistics.median(f["throughput"] for f in boots.values())
    medians = [f["p50_ns"] for f in boots.values() if "p50_ns" in f]
    typical = statistics.median(medians) if medians else None
    out = []
    for (kernel, rep), f in sorted(boots.items()):
        drop = f["throughput"] / rate - 1
        same_median = typical is None or f.get("p50_ns", typical) <= typical * (1 + STALL_DROP)
        if drop < -STALL_DROP and same_median:
            out.append(Stall(kernel, rep, drop, f.get("max_ns", math.nan)))
    return out
