"""The published anchors (anchors.toml): the file, how an anchor is judged, the
calibration of the contended hand-off, and the rule a pair's prediction must pass."""

import dataclasses
import math
from pathlib import Path

import pytest

from harness.analysis import anchors, evidence, machines, queueing, scaling_inputs, verdicts
from harness.layout import default_layout
from harness.report import anchors_section
from harness.run import tidy
from harness.tests.conftest import CASE, mainline_rows

REFERENCE = Path(__file__).resolve().parent.parent / "test_data" / "reference-20261206-094619"


@pytest.fixture(scope="module")
def committed():
    return anchors.load()


@pytest.fixture(scope="module")
def reference_record():
    rows = tidy.read(tidy.table_in(REFERENCE))
    inputs = scaling_inputs.run_inputs(default_layout(), REFERENCE, rows, ["mainline"])
    return anchors.record(inputs)


def test_every_anchor_names_its_source_machine_role_and_evidence(committed):
    assert {a.role for a in committed.anchors} == set(anchors.ROLES)
    for a in committed.anchors:
        assert a.source and a.quote.strip() and a.machine in committed.machines
        if a.role == "not-modelled":
            assert a.notes  # the reason
            continue
        assert a.mix_evidence and a.lock and (a.single_thread_ns or a.single_thread_case)
        assert any(acq.role == a.lock for acq in a.before.acquisitions)
    # The calibration family is one family; Long's machines are the four-socket profile.
    assert {a.family for a in committed.of_role("calibration")} == {"chinner-2023-xfs-walk"}
    assert committed.machines["long-2016-e7-4820v3"].profile == "4s"
    assert not committed.machines["chinner-2023-vm"].known
    assert len(committed.sha256) == 64


@pytest.mark.parametrize("change, message", [
    ('role = "calibration"', "role: expected one of"),
    ("held_out_set = 2", r"held_out_set: expected a whole number >= 1, got 0"),
    ('machine = "chinner-2023-vm"', r"machine: no \[\[machine\]\] with key 'nowhere'"),
    ('"sb_list.add" = 1', r"op_mix.sb_list.nope: no \[sections\] entry"),
])
def test_a_bad_anchor_names_the_file_and_the_key(tmp_path, committed, change, message):
    text = committed.path.read_text()
    bad = {'role = "calibration"': ('role = "calibration"', 'role = "fitted"'),
           'machine = "chinner-2023-vm"': ('machine = "chinner-2023-vm"',
                                           'machine = "nowhere"'),
           '"sb_list.add" = 1': ('"sb_list.add" = 1', '"sb_list.nope" = 1'),
           "held_out_set = 2": ("held_out_set = 2", "held_out_set = 0")}[change]
    path = tmp_path / "anchors.toml"
    path.write_text(text.replace(*bad, 1))
    with pytest.raises(anchors.AnchorError, match=message) as err:
        anchors.load(path)
    assert str(path) in str(err.value)


def _measured() -> anchors.Measured:
    section = anchors.Section(20.0, 1.0, 1.0, 0.0, "test")
    return anchors.Measured({"sb_list.add": section}, None, "", {})


def _anchor(**fields) -> anchors.Anchor:
    add = anchors.State((anchors.Acquisition("sb_list.add", 1.0),))
    base = dict(key="a", family="f", role="held-out", who="w", date="d", source="s",
                quote="q", machine="m", threads=32, quantity="rate", value=1.0, unit="op/s",
                workload="w", lock="sb_list", single_thread_ns=20000.0, mix_evidence="e",
                before=add)
    return anchors.Anchor(**(base | fields))


def _file(anchor_list, profile="") -> anchors.AnchorFile:
    judging = anchors.Judging(1.25, 1.25, 0.1, 1.5, 0.05, 2.0)
    return anchors.AnchorFile(Path("x.toml"), "0" * 64, judging, {}, None,
                              {"m": anchors.AnchorMachine("m", "", profile, "", "")},
                              tuple(anchor_list))


def test_the_second_set_is_held_out_with_the_first_sets_rules(committed):
    second = [a for a in committed.anchors if a.held_out_set == 2]
    # Registered after the first evaluation: held out only, never the calibration family
    # or a negative control, and in families of their own.
    assert second and {a.role for a in second} == {"held-out"}
    first_families = {a.family for a in committed.anchors if a.held_out_set == 1}
    assert not first_families & {a.family for a in second}
    assert all(a.held_out_set == 1 for a in committed.of_role(
        "calibration", "negative-control", "not-modelled"))


def test_the_record_counts_each_registration_set_apart():
    measured = _measured()
    two = machines.by_key("2s")
    short = dict(single_thread_ns=5000.0)  # the lock saturates: the anchors are diagnostic
    truth = anchors.model_value(_anchor(**short), measured, two)
    first = _anchor(key="a1", family="one", value=truth, **short)
    second = _anchor(key="b1", family="two", value=truth / 3, held_out_set=2, **short)
    calibration = _anchor(key="c", family="cal", role="calibration", value=truth, **short)
    found = _file([first, second, calibration], "2s")
    rec = anchors.Record(found, measured, None, tuple(
        anchors.judge(a, found, measured, (two,)) for a in found.anchors))
    assert rec.held_out_sets() == {1: ["one"], 2: ["two"]}
    assert rec.family_holds("one") and rec.family_holds("two") is False
    text = anchors_section.AnchorsBlocks(None, rec)._sets_text()
    assert "the first set" in text and "1 of 1 judged families hold" in text
    assert "the second set" in text and "0 of 1 judged families hold" in text


def test_an_anchor_is_judged_on_its_own_machine_alone():
    measured = _measured()
    four = machines.by_key("4s")
    truth = anchors.model_value(_anchor(), measured, four)
    known = anchors.judge(_anchor(value=truth), _file([], "4s"), measured, machines.MACHINES)
    assert known.judged_on == ("4s",) and known.status == "holds"
    # Unknown machine: every profile decides; it holds only if it holds on all of them.
    unknown = anchors.judge(_anchor(value=truth), _file([]), measured, machines.MACHINES)
    assert set(unknown.judged_on) == {"1s", "2s", "4s"}
    others = [anchors.model_value(_anchor(), measured, m) for m in machines.MACHINES]
    inside = [abs(math.log(v / truth)) <= math.log(1.25) for v in others]
    assert unknown.status == ("holds" if all(inside) else "untestable")


def test_an_anchor_the_model_meets_without_its_lock_is_non_diagnostic():
    measured = _measured()
    two = machines.by_key("2s")
    # At 2 threads a lock held 20 insns of a 20 us operation changes nothing.
    free = anchors.model_value(_anchor(threads=2), measured, two, without="sb_list")
    outcome = anchors.judge(_anchor(threads=2, value=free), _file([], "2s"), measured,
                            (two,))
    assert outcome.status == "non-diagnostic"
    # At 32 threads of 5 us operations the same lock saturates: without it the model
    # is far off.
    short = dict(single_thread_ns=5000.0)
    capped = anchors.model_value(_anchor(**short), measured, two)
    assert anchors.model_value(_anchor(**short), measured, two, without="sb_list") > 2 * capped
    assert anchors.judge(_anchor(value=capped, **short), _file([], "2s"), measured,
                         (two,)).status == "holds"


def test_the_calibration_recovers_a_planted_hand_off_factor():
    measured = _measured()
    two = machines.by_key("2s")
    planted = dataclasses.replace(two, contended_factor=3.0)
    family = [_anchor(key=f"r{n}", role="calibration", threads=n,
                      value=anchors.model_value(_anchor(threads=n), measured, planted))
              for n in (16, 24, 32, 48)]
    fitted = anchors.calibrate(_file(family, "2s"), measured, (two,))
    assert fitted.fits["2s"].kappa == pytest.approx(3.0, abs=0.02)
    assert fitted.fits["2s"].low <= 3.0 + 0.02 and fitted.fits["2s"].high >= 3.0 - 0.02
    assert not fitted.per_machine


def test_a_negative_control_must_predict_no_gain():
    measured = _measured()
    two = machines.by_key("2s")
    after = anchors.State((anchors.Acquisition("sb_list.add", 1.0),), private=("sb_list",))
    control = _anchor(role="negative-control", quantity="ratio", value=1.0, after=after,
                      single_thread_ns=5000.0)
    outcome = anchors.judge(control, _file([], "2s"), measured, (two,))
    gain = outcome.values["2s"] - 1
    assert gain > 0.05 and outcome.status == "fails"
    quiet = dataclasses.replace(control, threads=2)
    assert anchors.judge(quiet, _file([], "2s"), measured, (two,)).status == "holds"


def test_the_reference_record_calibrates_and_judges_every_held_out_anchor(reference_record):
    rec = reference_record
    assert rec.calibration is not None and rec.calibration.per_machine
    for fit in rec.calibration.fits.values():
        assert 0 < fit.low <= fit.kappa <= fit.high < anchors.KAPPA_MAX
    # Every anchor the file models was solved from the reference's sections.
    assert not [o.anchor.key for o in rec.outcomes if o.status == "unevaluated"]
    # The lines a chain walk reads per entry: measured, and of the order of a line or two.
    assert 0.5 < rec.measured.lines_per_chain_entry < 4
    found = anchors.criteria(rec)
    assert len(found) == 3
    assert anchors.verdicts_allowed(rec) == all(c.met for c in found)


def _pair(hot: bool):
    inputs = scaling_inputs.case_inputs(default_layout(), mainline_rows(), {}, "mainline", CASE)
    inputs = dataclasses.replace(inputs, insn_per_op=20000.0)
    other = dataclasses.replace(inputs, kernel="piggin")
    if hot:  # every worker on one inode: piggin's per-inode lock queues
        other = dataclasses.replace(other, shared_inodes=1)
    return dataclasses.replace(inputs, kernel="chinner"), other


def test_a_pair_verdict_needs_the_sign_to_survive_the_sweep():
    fit = anchors.Fit(2.0, 1.5, 2.5, 0.1)
    calibration = anchors.Calibration({"2s": fit}, "f", ("a",), False)
    two = machines.by_key("2s")
    same = verdicts.judge("isolated", *_pair(False), two, calibration, 0.0, 0.3)
    assert same.change == pytest.approx(0.0, abs=1e-9) and same.verdict == ""
    hot = verdicts.judge("isolated", *_pair(True), two, calibration, 0.0, 0.3)
    assert hot.change > 0 and hot.low > 0 and hot.verdict == "first"
    assert "chinner ahead by" in hot.text and "64 CPUs on 2s" in hot.text
    # The same difference inside a larger held-out error is no prediction.
    doubtful = verdicts.judge("isolated", *_pair(True), two, calibration, 0.0, 10.0)
    assert doubtful.verdict == "" and "held-out error" in doubtful.why


def test_blocked_time_is_the_same_for_every_kernel_of_a_case():
    a, b = _pair(False)
    a = dataclasses.replace(a, blocked_ns_per_op=3333.0)
    b = dataclasses.replace(b, blocked_ns_per_op=10000.0)
    c = dataclasses.replace(b, kernel="base", blocked_ns_per_op=1667.0)
    assert verdicts.equal_blocked([a, b, c]) == {CASE: 3333.0}
    assert queueing.MCS_HANDOFF_TRANSFERS == 3 and isinstance(CASE, evidence.Case)
