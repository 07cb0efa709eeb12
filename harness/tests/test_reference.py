"""The reference run: publishing it, and telling whether it is current."""

import json

import pytest

from harness.kernels import series
from harness.report import reference
from harness.run import estimate
from harness.run.cells import CellStore, StoredCell
from harness.layout import default_layout
from harness.tests.conftest import add_patch
from harness.tests.conftest import make_run


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
        list(reference.COPIED) + ["tidy.tsv.gz", "charts", estimate.STEP_TIMES])
    assert [p.name for p in (target / "charts").iterdir()] == ["a.png"]
    # A run whose report wrote scaling.json publishes it too: its hash table sizes
    # come from boot consoles the reference does not keep.
    (run / "scaling.json").write_text("{}")
    # And the soaks of its images, collected when it finished from results/soak, which
    # the reference does not keep.
    (run / "records.json").write_text('{"soaks": []}')
    target = reference.publish(layout, run)
    assert (target / "scaling.json").read_text() == "{}"
    assert (target / "records.json").read_text() == '{"soaks": []}'


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


def test_reference_step_times_estimate_a_fresh_clone(layout, tmp_path):
    run = make_run(tmp_path)
    for name in ("report.md", "report.html"):
        (run / name).write_text("r")
    (run / "charts").mkdir()
    history = ["create-unlink", "tmpfs", "perf", "tcg", 2]
    boot = layout.boot_dir("b1")
    boot.mkdir(parents=True)
    (boot / "host.json").write_text("{}")
    for n, wall in enumerate((4.0, 5.0, 9.0)):
        CellStore(layout).put(f"mainline-perf-tcg-2-{n + 1}",
                              StoredCell("x", "boots/b1", f"s0{n + 1}", 0, wall, history))
    fresh = estimate.StepTimes(layout)
    assert fresh.step(tuple(history)) == 5.0
    reference.publish(layout, run)
    (item,) = json.loads((reference.directory(layout) / estimate.STEP_TIMES).read_text())
    assert item == {"history": history, "median_s": 5.0, "cells": 3}

    # A clone without cells estimates from the reference, then learns.
    for path in layout.cells.iterdir():
        path.unlink()
    times = estimate.StepTimes(layout)
    assert times.step(tuple(history)) == 5.0
    assert times.step(("fstree", "tmpfs", "perf", "tcg", 2)) == 5.0  # same kind of boot
    # The same workload on another kind of boot (-icount at 1 vCPU) takes about as long.
    assert times.step(("create-unlink", "tmpfs", "perf", "tcg-icount", 1)) == 5.0
    assert times.step(("fstree", "tmpfs", "debug", "tcg", 1)) == estimate.UNKNOWN_STEP_S
    times.add(("fstree", "tmpfs", "debug", "tcg", 1), 60.0)
    assert times.step(("fstree", "tmpfs", "debug", "tcg", 1)) == 60.0


def test_committed_reference_matches_the_committed_series():
    """Change a series, regenerate the reference (make compare; make reference)."""
    assert reference.check(default_layout()) == []


def test_step_times_come_from_the_checkouts_reference_when_results_are_elsewhere(layout):
    history = ["fstree", "ext4", "debug", "tcg", 1]
    committed = layout.repo / "results" / "reference"
    committed.mkdir(parents=True)
    (committed / estimate.STEP_TIMES).write_text(json.dumps(
        [{"history": history, "median_s": 7.5, "cells": 4}]))
    assert layout.results != layout.repo / "results"
    assert estimate.StepTimes(layout).step(tuple(history)) == 7.5


def test_publish_keeps_what_the_report_reads(layout, tmp_path):
    run = make_run(tmp_path)
    for name in ("report.md", "report.html"):
        (run / name).write_text("r")
    (run / "charts").mkdir()
    (run / "lock-order").mkdir()
    (run / "lock-order" / "piggin.lock-order").write_text("i_lock -> hash\n")
    (run / "series" / "piggin").mkdir(parents=True)
    (run / "series" / "piggin" / "0001-a.patch").write_text("patch")
    (run / "code-cost.json").write_text("{}")
    target = reference.publish(layout, run)
    assert (target / "lock-order" / "piggin.lock-order").read_text() == "i_lock -> hash\n"
    assert (target / "series" / "piggin" / "0001-a.patch").read_text() == "patch"
    assert (target / "code-cost.json").exists()
    assert not (target / "slides.pdf").exists()  # this run has no deck


def test_the_committed_reference_keeps_its_table_compressed_and_whole():
    # A repository file stays under 4 MiB: the reference's table is gzipped, and
    # every reader finds it where a run folder would have tidy.tsv.
    from harness.run import tidy
    ref = default_layout().reference
    assert tidy.table_in(ref) == ref / tidy.COMPRESSED
    assert not (ref / "tidy.tsv").exists()
    rows = tidy.read(tidy.table_in(ref))
    assert len(rows) > 1000 and {r.kernel for r in rows} >= {"mainline", "chinner", "piggin"}
    assert (ref / tidy.COMPRESSED).stat().st_size < 4 * 1024 * 1024
