"""Statistics over repetitions: means, intervals that respect the data, rank tests.

Small samples (3-10 boots) are the rule here, so intervals use Student's t.
Rates and counts are positive and their spread grows with their size, so
intervals of a rate and of the ratio of two rates are taken on log values
(Welch's t on the logs, turned back by exp): they cannot cross zero, and a
ratio's interval is the same whichever kernel is on top.

With three boots a kernel, no interval from t can separate a tight kernel
from a wild one however far apart they are, so timed comparisons also get
an exact rank test: is one kernel's set of boots placed where chance would
rarely put it among every boot of the case (all kernels pooled)? A kernel
whose every boot lies below every other kernel's boot is that case.
"""

from __future__ import annotations

import functools
import itertools
import math
import statistics
from dataclasses import dataclass

# Two-sided 95% quantiles of Student's t by degrees of freedom.
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131,
        16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 25: 2.060, 30: 2.042,
        40: 2.021, 60: 2.000, 120: 1.980}
# The level of every test and interval of the report.
ALPHA = 0.05
# Beyond this many arrangements a rank test uses the normal approximation.
EXACT_ARRANGEMENTS = 200_000
INTERVAL_METHOD = "95% interval of the ratio from Welch's t on log values"
RANK_METHOD = ("exact rank-sum test of one kernel's boots against every other boot of the "
               "case (all kernels pooled), two-sided")


def t95(dof: float) -> float:
    """The two-sided 95% quantile of t; a fractional dof (Welch) rounds down."""
    dof = math.floor(dof)
    if dof < 1:
        return math.inf
    known = [d for d in _T95 if d <= dof]
    return _T95[max(known)] if dof <= 120 else 1.960


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    stddev: float  # sample standard deviation; 0 for n == 1
    # Mean and sample standard deviation of the natural logs, when every value is
    # positive (None otherwise: a zero count, a change that can be negative).
    log_mean: float | None = None
    log_sd: float | None = None

    @property
    def cov(self) -> float:
        """Coefficient of variation (stddev / mean), NaN when undefined."""
        return self.stddev / self.mean if self.n > 1 and self.mean else math.nan

    @property
    def half_width(self) -> float:
        """Half the arithmetic 95% confidence interval of the mean (inf with one sample)."""
        if self.n < 2:
            return math.inf
        return t95(self.n - 1) * self.stddev / math.sqrt(self.n)

    @property
    def low(self) -> float:
        """The 95% interval's lower end: on log values for positive data, so above zero."""
        if self.n < 2:
            return -math.inf
        if self.log_sd is None or self.log_mean is None:
            return self.mean - self.half_width
        return math.exp(self.log_mean - t95(self.n - 1) * self.log_sd / math.sqrt(self.n))

    @property
    def high(self) -> float:
        if self.n < 2:
            return math.inf
        if self.log_sd is None or self.log_mean is None:
            return self.mean + self.half_width
        return math.exp(self.log_mean + t95(self.n - 1) * self.log_sd / math.sqrt(self.n))


def summarize(values: list[float]) -> Summary:
    if not values:
        raise ValueError("no values to summarize")
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    log_mean = log_sd = None
    if all(v > 0 for v in values):
        logs = [math.log(v) for v in values]
        log_mean = statistics.fmean(logs)
        log_sd = statistics.stdev(logs) if len(logs) > 1 else 0.0
    return Summary(len(values), statistics.fmean(values), sd, log_mean, log_sd)


@dataclass(frozen=True)
class Ratio:
    """candidate / baseline: the ratio of geometric means and its 95% interval."""
    value: float
    low: float
    high: float

    @property
    def excludes_one(self) -> bool:
        return self.low > 1 or self.high < 1

    @property
    def change(self) -> float:
        return self.value - 1


def ratio(candidate: Summary, baseline: Summary) -> Ratio | None:
    """The ratio of two positive samples with Welch's interval on the log scale;
    None when either side has fewer than two values or a value that is not positive."""
    a, b = candidate, baseline
    if a.n < 2 or b.n < 2 or None in (a.log_sd, b.log_sd, a.log_mean, b.log_mean):
        return None
    va, vb = a.log_sd ** 2 / a.n, b.log_sd ** 2 / b.n  # type: ignore[operator]
    diff = a.log_mean - b.log_mean  # type: ignore[operator]
    se = math.sqrt(va + vb)
    if se == 0:
        return Ratio(math.exp(diff), math.exp(diff), math.exp(diff))
    dof = (va + vb) ** 2 / ((va ** 2 / (a.n - 1) if va else 0) + (vb ** 2 / (b.n - 1) if vb else 0))
    half = t95(dof) * se
    return Ratio(math.exp(diff), math.exp(diff - half), math.exp(diff + half))


def detectable_ratio(a: Summary, b: Summary) -> float:
    """The smallest relative difference the ratio interval of these two samples
    could tell from none: exp(its half-width) - 1 (inf with one boot a side)."""
    r = ratio(a, b)
    if r is None:
        return math.inf
    return math.sqrt(r.high / r.low) - 1


@dataclass(frozen=True)
class RankTest:
    """Where one kernel's boots fall among every boot of a case."""
    p: float  # two-sided
    higher: bool  # the kernel's boots sit above the others' (else below)
    n: int  # the kernel's boots
    others: int  # every other boot of the case
    method: str = "exact"  # or "normal approximation"

    @property
    def apart(self) -> bool:
        return self.p < ALPHA


def rank_test(mine: list[float], others: list[float]) -> RankTest | None:
    """Exact two-sided rank-sum (Mann-Whitney) test of `mine` against `others`.

    Under the hypothesis that the kernel makes no difference, every choice of
    len(mine) boots out of all of them is as likely; p is the share of choices
    whose rank sum lies at least as far from its mean as the observed one.
    """
    if len(mine) < 2 or not others:
        return None
    pooled = sorted(mine + others)
    ranks = _ranks(pooled)
    observed = sum(ranks[v] for v in mine)
    n, m = len(mine), len(others)
    centre = n * (n + m + 1) / 2
    distance = abs(observed - centre) - 1e-9
    higher = observed > centre
    total = math.comb(n + m, n)
    if total <= EXACT_ARRANGEMENTS:
        sums = _rank_sums(tuple(ranks[v] for v in pooled), n)
        extreme = sum(count for s, count in sums if abs(s - centre) >= distance)
        return RankTest(extreme / total, higher, n, m)
    sd = math.sqrt(n * m * (n + m + 1) / 12)
    z = max(0.0, distance - 0.5) / sd
    return RankTest(math.erfc(z / math.sqrt(2)), higher, n, m, "normal approximation")


@functools.lru_cache(maxsize=256)
def _rank_sums(all_ranks: tuple[float, ...], n: int) -> tuple[tuple[float, int], ...]:
    """Every rank sum of n of the pooled ranks, with how many choices give it: the
    null distribution of the rank-sum statistic. It depends on the ranks alone (and
    without ties on the sample sizes alone), so the many tests of a permutation over
    boots share it."""
    counts: dict[float, int] = {}
    for pick in itertools.combinations(all_ranks, n):
        s = sum(pick)
        counts[s] = counts.get(s, 0) + 1
    return tuple(sorted(counts.items()))


def _ranks(pooled: list[float]) -> dict[float, float]:
    """Value -> its rank among the sorted values (ties share their mean rank)."""
    ranks: dict[float, float] = {}
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1] == pooled[i]:
            j += 1
        ranks[pooled[i]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def every_boot_beyond(a: list[float], b: list[float]) -> bool:
    """Every value of a lies above every value of b."""
    return bool(a) and bool(b) and min(a) > max(b)


def sign_test(wins: int, n: int) -> float:
    """Two-sided exact binomial p of `wins` out of `n` when each way is as likely."""
    if n == 0:
        return 1.0
    k = max(wins, n - wins)
    tail = sum(math.comb(n, i) for i in range(k, n + 1)) / 2 ** n
    return min(1.0, 2 * tail)


@dataclass(frozen=True)
class Comparison:
    candidate: Summary
    baseline: Summary

    @property
    def change(self) -> float:
        """Relative change of the candidate's mean against the baseline's."""
        return (self.candidate.mean - self.baseline.mean) / self.baseline.mean \
            if self.baseline.mean else math.nan

    @property
    def ratio(self) -> Ratio | None:
        return ratio(self.candidate, self.baseline)

    @property
    def significant(self) -> bool:
        """True when the 95% interval of the ratio excludes 1 (for positive data),
        else when the two arithmetic 95% intervals do not overlap."""
        a, b = self.candidate, self.baseline
        if a.n < 2 or b.n < 2:
            return False
        r = self.ratio
        if r is not None:
            return r.excludes_one
        return a.low > b.high or b.low > a.high

    @property
    def detectable(self) -> float:
        """Smallest relative difference this pair of samples could resolve."""
        if self.ratio is not None:
            return detectable_ratio(self.candidate, self.baseline)
        if not self.baseline.mean:
            return math.nan
        return (self.candidate.half_width + self.baseline.half_width) / abs(self.baseline.mean)


def _binom_pmf(k: int, n: int, p: float) -> float:
    if p <= 0:
        return 1.0 if k == 0 else 0.0
    if p >= 1:
        return 1.0 if k == n else 0.0
    return math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
                    + k * math.log(p) + (n - k) * math.log1p(-p))


def _binom_tail(k: int, n: int, p: float, upper: bool) -> float:
    """P(X >= k) (upper) or P(X <= k) for X ~ Binomial(n, p)."""
    span = range(k, n + 1) if upper else range(0, k + 1)
    return min(1.0, sum(_binom_pmf(i, n, p) for i in span))


@dataclass(frozen=True)
class RateRatio:
    """Two event counts over their exposures (say, contentions over operations):
    the ratio of the rates, its exact 95% interval and a two-sided p."""
    value: float
    low: float
    high: float
    p: float


def rate_ratio(x: int, exposure_x: float, y: int, exposure_y: float) -> RateRatio | None:
    """Poisson counts compared through the binomial split of their sum (exact, with a
    Clopper-Pearson interval of the split turned into a ratio of rates)."""
    n = x + y
    if n == 0 or exposure_x <= 0 or exposure_y <= 0:
        return None
    share = exposure_x / (exposure_x + exposure_y)
    observed = _binom_pmf(x, n, share)
    p = min(1.0, sum(q for q in (_binom_pmf(i, n, share) for i in range(n + 1))
                     if q <= observed * (1 + 1e-9)))

    def bound(upper: bool) -> float:
        if (x == 0 and not upper) or (x == n and upper):
            return 0.0 if not upper else 1.0
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            tail = _binom_tail(x, n, mid, upper=not upper)
            if (tail > ALPHA / 2) == upper:
                lo = mid
            else:
                hi = mid
        return (lo + hi) / 2

    def as_ratio(q: float) -> float:
        return math.inf if q >= 1 else (q / (1 - q)) * (exposure_y / exposure_x)

    value = (x / exposure_x) / (y / exposure_y) if y else math.inf
    return RateRatio(value, as_ratio(bound(False)), as_ratio(bound(True)), p)


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-12:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1 - front * _betacf(b, a, 1 - x) / b


def t_two_sided_p(t: float, dof: float) -> float:
    """P(|T| >= |t|) for Student's t with dof degrees of freedom (normal beyond 1e6)."""
    if not math.isfinite(t):
        return 0.0
    if dof > 1e6:
        return math.erfc(abs(t) / math.sqrt(2))
    return incomplete_beta(dof / 2, 0.5, dof / (dof + t * t))


def overdispersed_rate_ratio(a: list[tuple[float, float]],
                             b: list[tuple[float, float]]) -> RateRatio | None:
    """Event counts of boots, (count, exposure) each, of two kernels: the ratio of their
    rates (a over b), a two-sided p and a 95% interval, with the boot as the unit.

    A Poisson test takes every event as independent, but a boot's count moves as a
    whole (lockdep's timing, a background loop): the spread of the boots' counts
    around their kernel's rate, over what Poisson allows, widens the test (the
    quasi-Poisson dispersion, at least 1, with t on the boots' degrees of freedom).
    Needs two boots a side; None without any event."""
    if len(a) < 2 or len(b) < 2:
        return None
    x, ex = sum(c for c, _ in a), sum(e for _, e in a)
    y, ey = sum(c for c, _ in b), sum(e for _, e in b)
    if x + y == 0 or ex <= 0 or ey <= 0:
        return None
    chi2 = 0.0
    for boots, total, exposure in ((a, x, ex), (b, y, ey)):
        rate = total / exposure
        for count, e in boots:
            expected = rate * e
            if expected > 0:
                chi2 += (count - expected) ** 2 / expected
    dof = len(a) + len(b) - 2
    dispersion = max(1.0, chi2 / dof)
    share = ex / (ex + ey)
    n = x + y
    z = (x - n * share) / math.sqrt(dispersion * n * share * (1 - share))
    p = t_two_sided_p(z, dof)
    # The interval of the log ratio, half a count added to an empty side.
    xs, ys = (x or 0.5), (y or 0.5)
    value = (x / ex) / (y / ey) if y else math.inf
    centre = math.log((xs / ex) / (ys / ey))
    half = t95(dof) * math.sqrt(dispersion * (1 / xs + 1 / ys))
    return RateRatio(value, math.exp(centre - half), math.exp(centre + half), p)


def binomial_upper(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p): how often a test at level p rejects k or more
    times in n tries when every null holds."""
    return _binom_tail(k, n, p, upper=True) if k > 0 else 1.0
