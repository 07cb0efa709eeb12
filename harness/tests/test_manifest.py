"""A run's manifest when the run is resumed in its own folder (run/finish.py)."""

import pytest

from harness.run import finish


def boot(name: str) -> dict:
    return {"directory": f"boots/{name}", "status": "ok", "wall_s": 60.0}


FIRST = {"created": "2026-12-06T09:46:19+0000", "wall_seconds": 1473.0,
         "matrix": {"kernels": ["mainline"], "order_seed": 930599953},
         "timing": {"stages": [{"stage": "boots", "seconds": 1400.0}]},
         "boots": [boot("a"), boot("b")], "reused_boots": [boot("old")], "reruns": 1}


def test_a_resume_keeps_the_first_pass_and_records_its_own():
    now = {"created": "2026-12-06T12:00:00+0000", "wall_seconds": 3.5,
           "timing": {"stages": [{"stage": "finish", "seconds": 1.0}]},
           "boots": [boot("c")], "reused_boots": [boot("a"), boot("b"), boot("old")],
           "reruns": 1, "matrix": {"kernels": ["mainline"], "order_seed": 1864530242}}
    merged = finish.resumed(FIRST, now)
    assert merged["matrix"] == FIRST["matrix"]  # the seed that ordered the boots
    assert (merged["created"], merged["wall_seconds"]) == (FIRST["created"], 1473.0)
    assert merged["timing"] == FIRST["timing"]
    assert [b["directory"] for b in merged["boots"]] == ["boots/a", "boots/b", "boots/c"]
    assert [b["directory"] for b in merged["reused_boots"]] == ["boots/old"]
    assert merged["resumes"] == [{"created": now["created"], "wall_seconds": 3.5,
                                  "boots_measured": 1, "boots_reused": 3,
                                  "timing": now["timing"], "matrix": now["matrix"]}]
    # A second resume adds to the list; the first pass still stands.
    twice = finish.resumed(merged, dict(now, boots=[], created="2026-12-06T13:00:00+0000"))
    assert [r["created"][11:13] for r in twice["resumes"]] == ["12", "13"]
    assert twice["wall_seconds"] == 1473.0 and len(twice["boots"]) == 3


def test_a_damaged_earlier_manifest_stops_the_resume_before_it_measures(tmp_path):
    (tmp_path / finish.MANIFEST).write_text('{"created": ')
    with pytest.raises(finish.ManifestError, match=r"manifest.json: the run's earlier manifest"):
        finish.check_resumable(tmp_path)
    finish.check_resumable(tmp_path / "fresh")  # no manifest yet: nothing to keep


def test_the_report_says_the_run_was_resumed():
    from harness.report.document import resumes_phrase
    assert resumes_phrase(FIRST) == ""
    resumes = [{"wall_seconds": 3.5, "boots_measured": 0}, {"wall_seconds": 60.0,
                                                            "boots_measured": 1}]
    assert resumes_phrase(dict(FIRST, resumes=resumes)) == \
        ", resumed in place twice (64 s, 1 boot measured)"


def test_a_resumes_report_is_timed_in_the_resume(tmp_path):
    import json
    merged = finish.resumed(FIRST, {"created": "x", "wall_seconds": 3.5, "boots": [],
                                    "reused_boots": [], "timing": {"stages": []}})
    (tmp_path / finish.MANIFEST).write_text(json.dumps(merged))
    finish.add_stage(tmp_path, "report", 40.4)
    kept = json.loads((tmp_path / finish.MANIFEST).read_text())
    assert kept["timing"] == FIRST["timing"]
    assert kept["resumes"][0]["timing"]["stages"] == [{"stage": "report", "seconds": 40.4}]
