"""Cost claims against chance with the boot as the unit (analysis/boot_perm.py), on real
rows: the committed reference (run 20261206-094619) and the 2026-12-04 reference."""

import dataclasses
from pathlib import Path

import pytest

from harness.analysis import boot_perm, duel
from harness.report import run_inputs
from harness.layout import default_layout
from harness.run import tidy

REFERENCE = Path(__file__).resolve().parent.parent / "test_data" / "reference-20261206-094619"
OLDER = Path(__file__).resolve().parent.parent / "test_data" / "rounds" / \
    "reference-20261204-perf-throughput.tsv"
KERNELS = ["mainline", "base", "chinner", "piggin"]


@pytest.fixture(scope="module")
def reference():
    return tidy.read(tidy.table_in(REFERENCE))


def test_the_permutation_decides_every_test_as_the_duel_does(reference):
    """The labelling as measured gives the duel's own claims, kind by kind and count by
    count, and its tests are the duel's cost tests that could claim."""
    spread = run_inputs.rerun_spread(default_layout(), REFERENCE)
    entries = duel.entries(reference, KERNELS, spread, REFERENCE / "scaling.json")
    perm = boot_perm.analyse(reference, duel.ISOLATED, spread)
    for kind in boot_perm.COUNTED:
        chances = perm.chance(lambda t: t.kind == kind)
        for cpus in sorted({e.cpus for e in entries if e.kind == kind}):
            mine = [e for e in entries if e.kind == kind and e.cpus == cpus and e.ahead != "?"]
            if not mine:
                continue
            claims = [e for e in mine if e.ahead in ("chinner", "piggin")]
            assert (chances[cpus].tests, chances[cpus].claims) == (len(mine), len(claims)), \
                (kind, cpus)
    every = perm.chance()
    # Three timed boots a kernel at 2 vCPUs: C(6, 3) = 20 labellings, the one measured
    # and its mirror alike, so no count of claims can go below p = 0.1.
    assert every[2].labellings == 20 and every[2].least_p == pytest.approx(0.1)
    assert every[2].boots == {"tcg": (3, 3)}
    # At 1 vCPU the -icount boots (two a kernel) are relabelled too, apart from the timed.
    assert every[1].boots == {"tcg": (3, 3), "tcg-icount": (2, 2)}
    assert every[1].labellings == 20 * 6


def test_a_boots_luck_moves_all_its_tests_together(reference):
    """43 throughput and 43 p99 tests of the same boots are not 86 tries: across the 20
    labellings of the reference's 2-vCPU boots, most make no claim at all and one (with
    its mirror) makes over twenty at once; independent tests at 0.05 would make 0 claims
    one time in ten and 10 or more about once in 2,500."""
    perm = boot_perm.analyse(reference, duel.ISOLATED)
    assert len([t for t in perm.tests if t.cpus == 2]) == 46
    counts = [bin(m).count("1") for m in perm.masks["tcg", 2]]
    assert counts.count(0) / len(counts) > 0.5 > 0.95 ** 46
    assert max(counts) >= 20


def six_rounds(reference, planted: float):
    """Six rounds of chinner and piggin at 2 vCPUs from two real runs (the 2026-12-04
    reference's rounds 1-3, the 2026-12-06 one's as rounds 4-6), the cases both ran, with
    piggin's throughput and p99 latency scaled by `planted` in every cell."""
    older = tidy.read(OLDER)
    keep = {(r.workload, r.fs, r.phase) for r in older} & \
        {(r.workload, r.fs, r.phase) for r in reference}
    rows = []
    for source, shift in ((older, 0), (reference, 3)):
        for r in source:
            if (r.flavour == "perf" and r.mode == "tcg" and r.cpus == 2 and r.kernel in
                    ("chinner", "piggin") and (r.workload, r.fs, r.phase) in keep
                    and r.metric in ("throughput", "p99_ns")):
                factor = planted if r.kernel == "piggin" else 1.0
                value = r.value * factor if r.metric == "throughput" else r.value / factor
                rows.append(dataclasses.replace(r, repetition=r.repetition + shift,
                                                value=value))
    return rows


def test_six_rounds_can_see_what_three_cannot(reference):
    """A doubling of piggin's throughput planted in every cell of real boots: six rounds
    a kernel put its claims beyond chance, three cannot whatever they claim (p 0.1 at
    best); a tripling reaches the least p 924 labellings allow; with nothing planted the
    same six rounds claim nothing beyond chance."""
    planted = boot_perm.analyse(six_rounds(reference, 2.0), duel.ISOLATED).chance()[2]
    assert planted.boots == {"tcg": (6, 6)} and planted.labellings == 924
    assert planted.claims > 10 and planted.p < 0.05
    three = boot_perm.analyse([r for r in six_rounds(reference, 2.0) if r.repetition > 3],
                              duel.ISOLATED).chance()[2]
    assert three.claims > 5 and three.p == pytest.approx(three.least_p) == pytest.approx(0.1)
    tripled = boot_perm.analyse(six_rounds(reference, 3.0), duel.ISOLATED).chance()[2]
    assert tripled.p == pytest.approx(2 / 924)
    null = boot_perm.analyse(six_rounds(reference, 1.0), duel.ISOLATED).chance()[2]
    assert null.p > 0.05


def test_many_boots_are_sampled_with_the_labelling_measured_and_its_mirror(reference):
    rows = six_rounds(reference, 1.0)
    extra = [dataclasses.replace(r, repetition=7) for r in rows if r.repetition == 1]
    perm = boot_perm.analyse(rows + extra, duel.ISOLATED)  # C(14, 7) = 3432 labellings
    assert perm.sampled["tcg", 2] and len(perm.masks["tcg", 2]) == boot_perm.MAX_LABELLINGS
    # The labelling measured first: its claims are the observed ones.
    observed = [t for t in perm.tests if t.decided(boot_perm.observed(t, duel.ISOLATED))]
    assert bin(perm.masks["tcg", 2][0]).count("1") == len(observed)
