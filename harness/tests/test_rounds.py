"""The boot, not the case, as the unit of a timing comparison (analysis/rounds.py).

reference-20261204-perf-throughput.tsv: the perf throughput rows of the
committed reference run of 2026-12-04 (results/reference at that date), 4
kernels, 3 repetitions at 1 and 2 vCPUs, kernels always booted in the order
mainline, base, chinner, piggin.
"""

import math
from pathlib import Path

import pytest

from harness.analysis import rounds
from harness.run import tidy

DATA = Path(__file__).resolve().parent.parent / "test_data" / "rounds"
ROWS = tidy.read(DATA / "reference-20261204-perf-throughput.tsv")


def test_chinner_beat_mainline_in_32_of_37_cases_from_six_pairs_of_boots_two_of_which_carried_it():
    c = rounds.compare(ROWS, "chinner", "mainline")
    assert (c.case_wins, c.cases) == (32, 37)
    assert c.p_cases < 1e-5  # counted as 37 independent cases
    assert len(c.pairs) == 6 and c.p_pairs == pytest.approx(14 / 64)  # not significant
    big = [p for p in c.pairs if p.log_ratio > 0.3]
    assert [(p.cpus, p.repetition) for p in big] == [(1, 3), (2, 1)]
    assert all(p.wins >= 15 for p in big)  # whole boots faster, case after case


def test_a_kernel_slower_in_every_pair_is_as_significant_as_six_pairs_allow():
    c = rounds.compare(ROWS, "piggin", "mainline")
    assert all(p.log_ratio < 0 for p in c.pairs)
    assert c.p_pairs == pytest.approx(2 / 64)
    assert c.case_wins == 16 and c.p_cases > 0.5  # the case count sees nothing


def test_boots_run_at_speeds_of_their_own():
    factors = rounds.boot_factors(ROWS)
    assert len(factors) == 24
    spread = max(factors.values()) - min(factors.values())
    assert 0.4 < spread < 0.6  # a factor of about 1.6 between the fastest and slowest boot


def test_sign_flip_and_binomial_tests():
    assert rounds.sign_flip_p([1.0, 1.0, 1.0]) == pytest.approx(2 / 8)
    assert rounds.sign_flip_p([1.0, -1.0]) == 1.0
    assert rounds.sign_flip_p([0.1] * 20) == pytest.approx(2 / 2 ** 20, abs=5e-5)  # sampled
    assert rounds.binomial_two_sided(5, 5) == pytest.approx(2 / 32)
    assert rounds.binomial_two_sided(2, 4) == 1.0


def test_a_whole_run_that_moves_one_kernel_is_told_from_one_that_does_not():
    import dataclasses
    # The captured run twice, and once with every chinner boot twice as fast: a run-level
    # effect planted on real boot-to-boot noise.
    shifted = [dataclasses.replace(r, value=r.value * 2.0) if r.kernel == "chinner" else r
               for r in ROWS]
    same = rounds.run_effects({"a": ROWS, "b": ROWS}, "chinner", "mainline")
    moved = rounds.run_effects({"a": ROWS, "b": shifted}, "chinner", "mainline")
    assert [e.cpus for e in same] == [e.cpus for e in moved] == [1, 2]
    for e in same:
        assert e.spread == pytest.approx(0.0, abs=1e-12) and e.p == 1.0
    for e in moved:
        assert e.spread == pytest.approx(math.log(2.0), rel=1e-9)
        # Three round pairs per run and vCPU count: the shift is larger than the pairs'
        # own spread, so the permutation puts it apart as far as 3 + 3 pairs allow
        # (the observed split and its mirror of the 20: 0.1).
        assert e.p == pytest.approx(0.1, abs=0.01)
