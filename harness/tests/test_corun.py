"""The co-run share's bounds (boot/corun.py), from schedstat samples."""

import pytest

from harness.boot.corun import CoRun


def test_a_sample_charged_late_cannot_push_the_lower_bound_past_the_upper():
    """A 5 ms sample in which schedstat charged one thread 7 ms (run before the sample,
    accounted in it) and the other 4 ms: unclamped, the lower bound 6 ms would exceed the
    upper 4 ms, as in the duel run of 2026-12-07 (create-unlink on ext4: 0.17 and 0.137)."""
    record = CoRun(ran_s=[0.0, 0.0])
    record.add([0.007, 0.004], 0.005)
    low, high = record.together
    assert low <= high + 1e-12  # equal here, up to rounding
    assert (low, high) == pytest.approx((0.8, 0.8))
    assert record.ran_s == pytest.approx([0.005, 0.004])


def test_runs_one_at_a_time_give_a_lower_bound_of_zero():
    record = CoRun(ran_s=[0.0, 0.0])
    record.add([0.003, 0.002], 0.005)
    record.add([0.0, 0.005], 0.005)
    assert record.together == pytest.approx((0.0, 0.2))
