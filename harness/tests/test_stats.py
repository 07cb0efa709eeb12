"""Statistics: values checked against hand computation."""

import math

import pytest

from harness.analysis import stats


def test_summary_of_three():
    s = stats.summarize([10.0, 12.0, 14.0])
    assert s.mean == 12.0
    assert s.stddev == pytest.approx(2.0)
    assert s.cov == pytest.approx(2.0 / 12.0)
    # t(2) = 4.303: 4.303 * 2 / sqrt(3)
    assert s.half_width == pytest.approx(4.303 * 2.0 / math.sqrt(3))


def test_single_value_has_no_interval():
    s = stats.summarize([5.0])
    assert s.stddev == 0 and math.isinf(s.half_width) and math.isnan(s.cov)


def test_t_quantiles_fall_back_to_smaller_dof():
    assert stats.t95(22) == stats.t95(20)
    assert stats.t95(1000) == 1.960
    assert math.isinf(stats.t95(0))


def test_overlapping_intervals_are_not_significant():
    c = stats.Comparison(stats.summarize([100, 110, 90]), stats.summarize([105, 95, 100]))
    assert c.change == pytest.approx(0.0)
    assert not c.significant


def test_separated_intervals_are_significant():
    c = stats.Comparison(stats.summarize([200, 201, 199, 200]),
                         stats.summarize([100, 101, 99, 100]))
    assert c.change == pytest.approx(1.0)
    assert c.significant
    assert 0 < c.detectable < 0.1


def test_one_boot_each_is_never_significant():
    c = stats.Comparison(stats.summarize([8.0]), stats.summarize([11.0]))
    assert not c.significant and math.isinf(c.detectable)
