"""The -icount rerun spread: read from measured boots, and the rule it imposes."""

import json

import pytest

from harness.analysis import evidence, rerun
from harness.report import document, run_inputs
from harness.layout import Layout
from harness.run import tidy
from harness.tests.conftest import row
from harness.tests.conftest import make_run


def boots(values: list[float], label: str = "create-unlink on tmpfs") -> list[dict]:
    return [{"boot": f"20261203-1830{i:02d}-mainline-icount", "kernel": "mainline",
             "status": "ok", "disk": "fresh" if i % 2 else "ext4-2048M.img",
             "loadavg_before": [1.0 + i, 1.0, 1.0], "rates": {label: v}}
            for i, v in enumerate(values)]


def write_spread(path, values, label="create-unlink on tmpfs"):
    path.write_text(json.dumps(boots(values, label)))
    return path


def test_spread_of_measured_boots(tmp_path):
    spread = rerun.parse(write_spread(tmp_path / "b.json", [1000.0, 1010.0, 990.0, 1000.0]))
    case = spread.cases["create-unlink on tmpfs"]
    assert (spread.boots, spread.fresh_disks, spread.kernel) == (4, 2, "mainline")
    assert case.relative_sd == pytest.approx(0.008165, rel=1e-3)
    assert (case.low, case.high) == (pytest.approx(-0.01), pytest.approx(0.01))
    # t(3 dof) * sd * sqrt(1/2 + 1/2): what two means of two boots differ by on a rerun.
    assert case.min_effect(2, 2) == pytest.approx(3.182 * 0.008165, rel=1e-3)
    assert case.min_effect(8, 8) < case.min_effect(2, 2)  # more boots claim smaller effects
    assert spread.measured == "2026-12-03 18:30 to 2026-12-03 18:30"


def test_spread_refuses_what_it_cannot_measure(tmp_path):
    with pytest.raises(rerun.SpreadError, match="2 usable boots"):
        rerun.parse(write_spread(tmp_path / "b.json", [1.0, 2.0]))
    bad = tmp_path / "bad.json"
    bad.write_text("[\n{")
    with pytest.raises(rerun.SpreadError, match=r"bad.json:2: not JSON"):
        rerun.parse(bad)


def icount_rows(mainline, other, kernel="piggin"):
    rows = []
    for rep, (m, o) in enumerate(zip(mainline, other), 1):
        rows += [row("mainline", "throughput", m, mode="tcg-icount", cpus=1, rep=rep),
                 row(kernel, "throughput", o, mode="tcg-icount", cpus=1, rep=rep)]
    return rows


def test_a_difference_inside_the_rerun_spread_is_not_claimed(tmp_path):
    # Two boots each that agree to 0.01%: the run's intervals separate a 0.7% drop ...
    rows = icount_rows([3507.0, 3507.5], [3482.0, 3482.2])
    (v,) = [v for v in evidence.verdicts(rows, "mainline") if v.evidence == "icount"]
    assert v.outcome_by_intervals("piggin") == "worse"
    # Without a measured rerun spread nothing says what a rerun does: no claim.
    assert v.outcome("piggin") == "unclaimed"
    assert v.unclaimed_reason("piggin") == "its rerun spread was never measured"
    # ... and the same kernel moves by far more than that between boots.
    spread = rerun.parse(write_spread(tmp_path / "b.json", [3639, 3668, 3801, 3538, 3442, 3757],
                                      "create-unlink on tmpfs"))
    (v,) = [v for v in evidence.verdicts(rows, "mainline", spread=spread)
            if v.evidence == "icount"]
    assert v.outcome_by_intervals("piggin") == "worse"
    assert v.outcome("piggin") == "even"
    assert not v.decided
    (t,) = [t for t in evidence.tallies([v]) if t.kernel == "piggin"]
    assert t.worse == [] and len(t.even) == 1


def test_a_difference_beyond_the_rerun_spread_stays(tmp_path):
    rows = icount_rows([12987.0, 12988.0], [12968.0, 12968.5])  # -0.15%
    spread = rerun.parse(write_spread(tmp_path / "b.json",
                                      [12989.0, 12992.0, 12990.0, 12987.0, 12991.0]))
    (v,) = [v for v in evidence.verdicts(rows, "mainline", spread=spread)
            if v.evidence == "icount"]
    assert v.outcome("piggin") == "worse" and v.decided


def test_report_shows_how_a_verdict_changes_on_a_rerun(tmp_path):
    run = make_run(tmp_path)
    rows_path = run / "tidy.tsv"
    tidy.write(tidy.read(rows_path) + icount_rows([3507.0, 3507.5], [3482.0, 3482.2], "base"),
               rows_path)
    repo = tmp_path / "repo"
    write_spread_path = repo / run_inputs.CHECKOUT_SPREAD
    write_spread_path.parent.mkdir(parents=True)
    write_spread(write_spread_path, [3639, 3668, 3801, 3538, 3442, 3757])
    layout = Layout(repo=repo, build=tmp_path / "build", ccache=tmp_path / "c",
                    results=tmp_path / "results")
    text = document.write(layout, run, "mainline")[0].read_text()
    section = text.split("### Would these verdicts survive a rerun?")[1].split("\n## ")[0]
    assert "| create-unlink on tmpfs | 3.7% | 5.0% | 3.0% | -5.5% to +4.4% | 9.5% |" in section
    assert "base -0.72%: worse → even" in section
    assert "measured on a busy host" in section  # load up to 6.0 on 2 cores
    assert ("1 comparison of -icount rates with mainline would be claimed better or worse; "
            "0 of them exceed") in section
    # The run keeps the spread it was judged with.
    assert (run / run_inputs.SPREAD_FILE).exists()
