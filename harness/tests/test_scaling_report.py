"""The report's Scaling prediction section, from a small run with every input kind."""

import dataclasses
import json

from harness import lockscope
from harness.analysis import evidence
from harness.layout import default_layout
from harness.report import document, scaling_section
from harness.run import tidy
from harness.tests.conftest import lock_rows, mainline_rows
from harness.tests.conftest import scaling_row as row


def make_run(tmp_path):
    rows = mainline_rows()
    base = [dataclasses.replace(r, kernel="base") for r in mainline_rows()
            if not (r.flavour == "debug" and r.lock)]
    base += lock_rows("base", 1, 1, 1000.0, [("global", 3.0, 20.0, 0, 0),
                                              ("sb_list", 2.0, 10.0, 0, 0),
                                              ("i_lock", 8.0, 5.0, 0, 0)])
    base += [r for r in lock_rows("base", 2, 2, 1800.0, [("global", 3.0, 20.0, 0.08, 2.0),
                                                          ("sb_list", 2.0, 10.0, 0, 0)])
             if r.lock]
    # Bounces at 2 vCPUs: mainline's per-inode i_lock bounces a third of the time.
    for kernel, role, acq, bounces in (("mainline", "i_lock", 16000, 5000),
                                       ("mainline", "sb_list", 4000, 1800),
                                       ("base", "global", 6000, 0)):
        rows.append(row(kernel, "debug", "tcg", 2, 2, role, "acquisitions", acq))
        rows.append(row(kernel, "debug", "tcg", 2, 2, role, "acq_bounces", bounces))
    run = tmp_path / "run"
    run.mkdir()
    tidy.write(rows + base, run / "tidy.tsv")
    (run / "manifest.json").write_text(json.dumps({
        "created": "2026-12-03T10:00:00+0000", "wall_seconds": 60.0, "accel": "tcg",
        "host": {"cpus": 2, "qemu": "QEMU 7.2", "kernel": "6.1"},
        "matrix": {"kernels": ["mainline", "base"], "cpus": [1, 2],
                   "workloads": ["create-unlink"], "repeat": 3, "debug_repeat": 1,
                   "icount_repeat": 1, "flavours": ["perf", "debug"]},
        "oversubscribed": [], "reruns": 0, "boots": [],
        "kernels": {k: {"kernel_version": "6.1.192", "package_version": "6.1.192-3",
                        "patches": [], "images": {}} for k in ("mainline", "base")}}))
    return run


def test_the_section_follows_the_verdict_and_is_labelled_a_prediction(tmp_path):
    run = make_run(tmp_path)
    md, _ = document.write(default_layout(), run, "mainline")
    text = md.read_text()
    start = text.index("## Scaling prediction (a model, not a measurement)")
    verdict = text.index("## Every kernel against mainline (secondary)")
    assert verdict < start < text.index("## Workloads")
    section = text[start:text.index("## Workloads")]
    glance = text[verdict:start]
    # Predictions stand in a table of their own, never beside measured "better" cases,
    # and are withheld while the held-out record falls short.
    assert "| all | PREDICTION at 64 CPUs: withheld" in glance
    assert "| base | PREDICTION" not in glance
    # The base kernel's global lock caps it; mainline's sb list caps mainline.
    assert "| create-unlink on tmpfs | global (global) |" in section
    assert "| create-unlink on tmpfs | sb_list (per-superblock) |" in section
    assert "fallback" in section and "lockdep" in section
    # Validation: 2-vCPU contention predicted from 1 vCPU (0.04 against 0.05 measured).
    assert "| create-unlink on tmpfs | mainline | sb_list | queue | 0.0400 | 0.0500 | -20% ★" \
        in section
    # The per-inode i_lock bouncing a third of the time contradicts its declared scope.
    assert "mainline i_lock is declared per-inode but 31.2% of its acquisitions bounced" in section
    assert "base global is declared global but none of its 6000 acquisitions bounced" in section
    assert (run / "charts" / "scaling-create-unlink-tmpfs-create-unlink.png").stat().st_size > 1000
    saved = json.loads((run / "scaling.json").read_text())
    assert set(saved["knobs"]["machines"]) == {"1s", "2s", "4s"} and len(saved["cases"]) == 2
    assert saved["validation"]["contention"]["count"] == 2
    assert saved["checks"] == {"failed": []}
    # Bands over the machines, two significant digits; the checks, the anchors and what
    # is not claimed are there; the 2-over-1 ratio is a harness check.
    assert "Solver checks" in section and "All 6 pass." in section
    # The anchors come first; a run without their sections calibrates nothing, and the
    # pairs it lacks are named, never predicted.
    assert section.index("### The published record") < section.index("### Calibration") \
        < section.index("### Held out") < section.index("### The pairs at many CPUs") \
        < section.index("### Predicted throughput against CPUs")
    assert "Not calibrated" in section
    assert "**The record does not allow verdicts at many CPUs.**" in section
    assert "this run has no chinner and piggin inputs" in section
    assert "### What is not claimed" in section
    assert "A harness check, not validation" in section
    assert "cache lines counted by hand from the 6.1 source" in section
    assert saved["anchors"]["verdicts_allowed"] is False


def test_every_case_of_the_reference_passes_the_solver_checks():
    # Issue 25: throughput never falls with N and never exceeds the bounds or 1/(A S)
    # of the busiest lock, to 256 CPUs, for every kernel-case of the committed
    # reference on every target machine (the model of issue 14 failed it).
    from pathlib import Path

    from harness.analysis import anchors, machines, predict, scaling_inputs
    reference = Path(__file__).resolve().parent.parent / "test_data" / "reference-20261206-094619"
    rows = tidy.read(tidy.table_in(reference))
    # With the hand-off factor the report fits, as with none.
    calibration = anchors.record(scaling_inputs.run_inputs(
        default_layout(), reference, rows, ["mainline"])).calibration
    fitted = anchors.fitted_machines(calibration)
    assert all(m.contended_factor > 0 for m in fitted)
    results = predict.run_predictions(default_layout(), reference, 256, fitted, rows=rows) \
        + predict.run_predictions(default_layout(), reference, 256, rows=rows)
    assert len(results) >= 120
    failed = {(r.inputs.kernel, r.inputs.case.label): r.violations() for r in results
              if r.violations()}
    assert failed == {}
    assert all(set(r.solved) == {m.key for m in machines.MACHINES} for r in results)


def test_a_fall_the_hot_locks_hand_off_explains_is_a_prediction_not_a_defect():
    # piggin's anonstorm: every operation takes the one anon inode's i_lock 4 times;
    # from 2 CPUs on, each hand-off moves its lines, so 1/(A S) drops tenfold and the
    # model predicts a lower rate than at 1 CPU on the four-socket machine.
    from pathlib import Path

    from harness.analysis import predict
    reference = Path(__file__).resolve().parent.parent / "test_data" / "reference-20261206-094619"
    (result,) = [r for r in predict.run_predictions(default_layout(), reference, 8)
                 if r.inputs.kernel == "piggin" and r.inputs.case.label ==
                 "anonstorm epoll on tmpfs"]
    profile, prediction = result.solved["4s"]
    rates = [p.ops_per_s for p in prediction.points]
    assert min(rates[1:]) < rates[0]
    caps = [prediction.profile.busiest(n, prediction.costs.at(n))[1] for n in (1, 2)]
    assert caps[1] < caps[0] / 5
    assert result.violations() == {}


def test_a_private_lock_bouncing_on_a_declared_shared_inode_is_no_contradiction():
    scope = lockscope.RoleScope("i_lock", "per-inode")
    anon = evidence.Case("anonstorm", "tmpfs", "epoll")
    walk = evidence.Case("fstree", "tmpfs", "unlink")
    items = [(anon, 0.45, 5000.0), (walk, 0.10, 5000.0)]
    flags = scaling_section._scope_flags("mainline", "i_lock", scope, items, {anon: 1})
    assert len(flags) == 1 and "fstree unlink on tmpfs" in flags[0]
    assert len(scaling_section._scope_flags("mainline", "i_lock", scope, items, {})) == 2


def test_a_change_near_the_same_within_threshold_shows_its_side():
    assert scaling_section._pct(-0.046) == "-4.6%"
    assert scaling_section._pct(-0.054) == "-5.4%"
    assert scaling_section._pct(-0.12) == "-12%" and scaling_section._pct(0.001) == "0%"
