"""Timing comparisons with the boot, not the case, as the unit.

Under TCG a boot runs at a speed of its own for all of its steps: in the
2026-12-04 reference the mean log deviation of a perf boot's cases from
their medians spread with a standard deviation of 0.14 between boots,
where the mean of 17-20 cases of one boot would move by only 0.05 if the
cases were independent. The cases of one boot are not independent
samples, and a sign test over cases counts one boot's luck once per case:
chinner beat mainline in 32 of 37 timing cases (one-sided p 4e-6 as a sign
test over cases) from six pairs of boots, two of which carried it.

Here each boot of a kernel is paired with the baseline's boot of the same
round (repetition and vCPU count: the boots of a round run one after the
other), each pair gives one number, the mean log ratio over the timing
cases the two share, and the test is an exact permutation test of the
pairs' signs (each sign flip as likely under "no difference"). With n pairs
the smallest p it can give is 2 / 2**n (two-sided): 6 pairs cannot go
below 0.031.
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from dataclasses import dataclass

from harness.run.tidy import Row

TIMED_MODES = ("tcg", "kvm")
EXACT_UP_TO = 16  # pairs; beyond, a seeded sample of sign flips
SAMPLED_FLIPS = 100_000


@dataclass(frozen=True)
class Pair:
    cpus: int
    repetition: int
    cases: int  # timing cases both boots measured
    log_ratio: float  # mean over those cases of log(kernel / baseline)
    wins: int  # cases where the kernel was faster


@dataclass(frozen=True)
class Comparison:
    kernel: str
    baseline: str
    pairs: tuple[Pair, ...]
    case_wins: int  # over the cases' means, as a per-case sign test counts them
    cases: int

    @property
    def log_ratio(self) -> float:
        return statistics.fmean(p.log_ratio for p in self.pairs)

    @property
    def p_pairs(self) -> float:
        """Two-sided exact (or sampled) sign-flip permutation p over the pairs."""
        return sign_flip_p([p.log_ratio for p in self.pairs])

    @property
    def p_cases(self) -> float:
        """Two-sided binomial sign test over cases, as if they were independent."""
        return binomial_two_sided(self.case_wins, self.cases)


def _case(row: Row) -> tuple:
    return (row.machine, row.workload, row.phase, row.fs, row.cpus, row.procs)


def throughputs(rows: list[Row]) -> dict[tuple[str, int, int], dict[tuple, float]]:
    """(kernel, cpus, repetition) -> case -> throughput, of the timed perf rows."""
    out: dict[tuple[str, int, int], dict[tuple, float]] = {}
    for r in rows:
        if (r.flavour == "perf" and r.mode in TIMED_MODES and r.metric == "throughput"
                and not r.lock and r.status == "ok" and r.value > 0):
            out.setdefault((r.kernel, r.cpus, r.repetition), {})[_case(r)] = r.value
    return out


def compare(rows: list[Row], kernel: str, baseline: str) -> Comparison:
    boots = throughputs(rows)
    pairs = []
    for (name, cpus, rep), mine in sorted(boots.items()):
        theirs = boots.get((baseline, cpus, rep))
        if name != kernel or not theirs:
            continue
        logs = [math.log(mine[c] / theirs[c]) for c in sorted(set(mine) & set(theirs))]
        if logs:
            pairs.append(Pair(cpus, rep, len(logs), statistics.fmean(logs),
                              sum(1 for x in logs if x > 0)))
    wins = cases = 0
    for case in sorted({c for (name, _, _), v in boots.items() if name == kernel for c in v}):
        a = [v[case] for (n, _, _), v in boots.items() if n == kernel and case in v]
        b = [v[case] for (n, _, _), v in boots.items() if n == baseline and case in v]
        if a and b:
            cases += 1
            wins += statistics.fmean(a) > statistics.fmean(b)
    return Comparison(kernel, baseline, tuple(pairs), wins, cases)


def sign_flip_p(values: list[float], seed: int = 1) -> float:
    """Two-sided p of a mean this far from zero when each sign is a coin toss."""
    if not values:
        return 1.0
    observed = abs(sum(values))
    if len(values) <= EXACT_UP_TO:
        flips = itertools.product((1, -1), repeat=len(values))
        total = 2 ** len(values)
    else:
        rng = random.Random(seed)
        flips = ([rng.choice((1, -1)) for _ in values] for _ in range(SAMPLED_FLIPS))
        total = SAMPLED_FLIPS
    extreme = sum(1 for signs in flips
                  if abs(sum(s * v for s, v in zip(signs, values))) >= observed - 1e-12)
    return extreme / total


def binomial_two_sided(k: int, n: int) -> float:
    """Two-sided sign test: P(a count at least as far from n/2 as k), fair coin."""
    if n == 0:
        return 1.0
    far = abs(k - n / 2)
    return min(1.0, sum(math.comb(n, i) for i in range(n + 1) if abs(i - n / 2) >= far) / 2 ** n)


def boot_factors(rows: list[Row]) -> dict[tuple[str, int, int], float]:
    """(kernel, cpus, repetition) -> mean log deviation of the boot's cases from
    each case's median over every boot: how fast the whole boot ran."""
    boots = throughputs(rows)
    by_case: dict[tuple, list[float]] = {}
    for values in boots.values():
        for case, v in values.items():
            by_case.setdefault(case, []).append(math.log(v))
    median = {case: statistics.median(v) for case, v in by_case.items()}
    return {boot: statistics.fmean(math.log(v) - median[c] for c, v in values.items())
            for boot, values in boots.items()}


@dataclass(frozen=True)
class RunEffect:
    """Whether whole runs move a timed difference: the round pairs of several runs of
    the same images (abtest folders, or compares), one run's pairs against the others'."""
    kernel: str
    baseline: str
    cpus: int
    by_run: dict[str, list[float]]  # run -> its round pairs' mean log ratios

    @property
    def means(self) -> dict[str, float]:
        return {run: statistics.fmean(v) for run, v in self.by_run.items() if v}

    @property
    def spread(self) -> float:
        """Largest less smallest run mean (log ratio): the run-level effect's size."""
        values = list(self.means.values())
        return max(values) - min(values) if len(values) > 1 else 0.0

    @property
    def p(self) -> float:
        """Permutation p (seeded sample, or exact when small) that the runs' pairs come
        from one distribution: the statistic is the spread of run means, the pairs
        shuffled between runs keeping each run's count."""
        groups = [v for v in self.by_run.values() if v]
        if len(groups) < 2:
            return 1.0
        pooled = [x for g in groups for x in g]
        sizes = [len(g) for g in groups]

        def spread(values: list[float]) -> float:
            means, start = [], 0
            for n in sizes:
                means.append(statistics.fmean(values[start:start + n]))
                start += n
            return max(means) - min(means)

        observed = spread(pooled)
        rng = random.Random(1)
        trials = SAMPLED_FLIPS // 10
        extreme = 0
        for _ in range(trials):
            shuffled = pooled[:]
            rng.shuffle(shuffled)
            extreme += spread(shuffled) >= observed - 1e-12
        return extreme / trials


def run_effects(runs: dict[str, list[Row]], kernel: str, baseline: str) -> list[RunEffect]:
    """Per vCPU count: each run's round pairs of kernel against baseline."""
    by_cpus: dict[int, dict[str, list[float]]] = {}
    for run, rows in runs.items():
        for pair in compare(rows, kernel, baseline).pairs:
            by_cpus.setdefault(pair.cpus, {}).setdefault(run, []).append(pair.log_ratio)
    return [RunEffect(kernel, baseline, cpus, found) for cpus, found in sorted(by_cpus.items())]
