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


def test_a_ratio_interval_never_crosses_zero():
    # Three boots as wild as TCG gives: the arithmetic interval of the mean goes negative.
    wild = stats.summarize([3784.1, 5831.4, 11113.8])
    assert wild.mean - wild.half_width < 0
    assert 0 < wild.low < wild.mean < wild.high
    r = stats.ratio(stats.summarize([2278.0, 2296.7, 2459.7]), wild)
    assert 0 < r.low < r.value < r.high
    # The interval is the same whichever side is on top.
    back = stats.ratio(wild, stats.summarize([2278.0, 2296.7, 2459.7]))
    assert back.low == pytest.approx(1 / r.high) and back.high == pytest.approx(1 / r.low)


def test_rank_test_counts_every_arrangement():
    # 3 boots lowest among 12: one arrangement of C(12, 3) = 220 on each side.
    test = stats.rank_test([1.0, 2.0, 3.0], [float(v) for v in range(4, 13)])
    assert test.p == pytest.approx(2 / 220) and not test.higher and test.apart
    # 3 against 3 can never reach 5%: complete separation is 2 of 20 arrangements.
    assert stats.rank_test([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]).p == pytest.approx(0.1)
    assert stats.rank_test([1.0, 5.0, 9.0], [2.0, 6.0, 8.0, 3.0]).p > 0.5
    assert stats.every_boot_beyond([5.0, 6.0], [1.0, 4.9]) and \
        not stats.every_boot_beyond([5.0, 6.0], [5.5])


def test_sign_test_and_rate_ratio_against_hand_computation():
    assert stats.sign_test(32, 37) == pytest.approx(2 * sum(
        math.comb(37, i) for i in range(32, 38)) / 2 ** 37)
    assert stats.sign_test(5, 10) == 1.0
    # 10 events against 20 over equal exposure: the split 10/30 has a Clopper-Pearson
    # interval of 0.1729-0.5281, a rate ratio of 0.209-1.119.
    r = stats.rate_ratio(10, 1000.0, 20, 1000.0)
    assert r.value == 0.5 and r.p == pytest.approx(0.0987, abs=1e-3)
    assert r.low == pytest.approx(0.209, abs=2e-3) and r.high == pytest.approx(1.119, abs=2e-3)
    assert stats.rate_ratio(0, 10.0, 0, 10.0) is None
