"""Statistics over repetitions: mean, spread, confidence, comparison.

Small samples (3-10 boots) are the rule here, so intervals use Student's t.
Two kernels differ significantly when their 95% intervals do not overlap:
conservative, easy to read off a chart, and what the report marks.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

# Two-sided 95% quantiles of Student's t by degrees of freedom.
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131,
        16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 25: 2.060, 30: 2.042,
        40: 2.021, 60: 2.000, 120: 1.980}


def t95(dof: int) -> float:
    if dof < 1:
        return math.inf
    known = [d for d in _T95 if d <= dof]
    return _T95[max(known)] if dof <= 120 else 1.960


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    stddev: float  # sample standard deviation; 0 for n == 1

    @property
    def cov(self) -> float:
        """Coefficient of variation (stddev / mean), NaN when undefined."""
        return self.stddev / self.mean if self.n > 1 and self.mean else math.nan

    @property
    def half_width(self) -> float:
        """Half the 95% confidence interval of the mean (inf with one sample)."""
        if self.n < 2:
            return math.inf
        return t95(self.n - 1) * self.stddev / math.sqrt(self.n)

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width


def summarize(values: list[float]) -> Summary:
    if not values:
        raise ValueError("no values to summarize")
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return Summary(len(values), statistics.fmean(values), sd)


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
    def significant(self) -> bool:
        """True when the two 95% intervals do not overlap."""
        a, b = self.candidate, self.baseline
        if a.n < 2 or b.n < 2:
            return False
        return a.low > b.high or b.low > a.high

    @property
    def detectable(self) -> float:
        """Smallest relative difference this pair of samples could resolve.

        Two non-overlapping intervals need the means at least the sum of the
        half-widths apart; expressed against the baseline mean.
        """
        if not self.baseline.mean:
            return math.nan
        return (self.candidate.half_width + self.baseline.half_width) / abs(self.baseline.mean)

