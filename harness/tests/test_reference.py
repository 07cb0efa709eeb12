"""The reference run: publishing it, and telling whether it is current."""

import pytest

from harness import reference, series
from harness.tests.conftest import add_patch
from harness.tests.test_report import make_run


def test_publish_keeps_report_material_not_raw_boots(layout, tmp_path):
    run = make_run(tmp_path)
    (run / "boots").mkdir()
    (run / "boots" / "console.log").write_text("raw")
    (run / "report.md").write_text("# r")
    (run / "report.html").write_text("<html>")
    (run / "charts").mkdir()
    (run / "charts" / "a.png").write_bytes(b"png")
    (run / "charts" / "a.gp").write_text("plot")
    target = reference.publish(layout, run)
    assert sorted(p.name for p in target.iterdir()) == sorted(
        list(reference.KEPT) + ["charts"])
    assert [p.name for p in (target / "charts").iterdir()] == ["a.png"]


def test_staleness_follows_patch_contents(layout):
    add_patch(layout, "base", "0001-a.patch", subject="a", old="line two", new="line 2")
    patch = layout.series_dir("base") / "0001-a.patch"
    (p,) = series.resolve(layout, "base").patches
    manifest = {"kernels": {
        "mainline": {"patches": []},
        "base": {"patches": [{"series": "base", "file": "0001-a.patch", "sha256": p.sha256}]}}}
    assert reference.stale(layout, manifest) == []
    patch.write_text(patch.read_text() + "\n")
    (stale,) = reference.stale(layout, manifest)
    assert stale.kernel == "base" and "base/0001-a.patch" in stale.reason


def test_missing_reference_is_a_clear_error(layout):
    with pytest.raises(reference.ReferenceError, match="no reference run committed"):
        reference.check(layout)
