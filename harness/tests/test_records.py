"""The soaks of a run's own images: collected into records.json.

On a real soak summary (harness/test_data/soak: mainline/debug, the image of
the 2026-12-04 reference), the same soak as the summary of the code before
soaks named their images, and the captured meta.json of three images.
"""

import dataclasses
import json
import shutil

import pytest

from harness.kernels import kbuild
from harness.run import records
from harness.tests.conftest import SOAK_DATA, SOAK_IMAGES

SOAK = "20261206-090333"
BEFORE = "20261206-090333-before-images"
IDENTITIES = {f"{k}/{f}": kbuild.identity(image) for (k, f), image in SOAK_IMAGES.items()}


def soaks_of(layout, *folders):
    for folder in folders:
        shutil.copytree(SOAK_DATA / folder, layout.soaks / folder)
    return layout


def test_the_soak_of_the_runs_very_image_counts(layout):
    collected = records.collect(soaks_of(layout, SOAK), IDENTITIES)
    (found,) = collected.ours("mainline", "debug")
    assert (found.folder, found.started, found.finished) == (SOAK, "2026-12-06T09:03:37+0000",
                                                             False)
    assert found.image == IDENTITIES["mainline/debug"]
    t = found.tally
    assert (t.boots, t.workload_s, t.cpus, t.statuses, t.report_count, t.damaged_records) == \
        (1, 56.7, {"2": 1}, {"ok": 1}, 0, 0)
    assert collected.others("mainline", "debug") == []
    assert collected.ours("chinner", "debug") == collected.others("chinner", "debug") == []
    assert (collected.read, collected.unreadable) == (1, [])


def test_a_summary_from_before_soaks_named_their_images_never_counts(layout):
    collected = records.collect(soaks_of(layout, SOAK, BEFORE), IDENTITIES)
    assert [s.folder for s in collected.ours("mainline", "debug")] == [SOAK]
    assert collected.others("mainline", "debug") == [
        records.Unnamed(BEFORE, "mainline", "debug", 1)]
    assert collected.read == 2


def test_a_soak_of_another_image_is_kept_to_be_named_not_counted(layout):
    # The run's mainline/debug built another way: the soak's image is not the run's.
    rebuilt = dataclasses.replace(IDENTITIES["mainline/debug"], key="0123456789abcdef")
    collected = records.collect(soaks_of(layout, SOAK), {**IDENTITIES,
                                                         "mainline/debug": rebuilt})
    assert collected.ours("mainline", "debug") == []
    (other,) = collected.others("mainline", "debug")
    assert other.image.key == "d4a094542ede0508"


def test_soaks_of_kernels_or_flavours_the_run_did_not_boot_are_left_out(layout):
    collected = records.collect(soaks_of(layout, SOAK, BEFORE),
                                {k: v for k, v in IDENTITIES.items() if k != "mainline/debug"})
    assert (collected.soaks, collected.unnamed, collected.read) == ([], [], 2)


def test_a_damaged_summary_is_named_and_passed_over(layout):
    soaks_of(layout, SOAK)
    real = (SOAK_DATA / SOAK / "summary.json").read_text()
    cut = layout.soaks / "20261206-100000" / "summary.json"
    cut.parent.mkdir()
    cut.write_text(real[:len(real) // 2])  # a soak killed while writing, before writes were whole
    shapeless = layout.soaks / "20261206-110000" / "summary.json"
    shapeless.parent.mkdir()
    data = json.loads(real)
    data["images"].pop("mainline/debug")  # a tally whose image is not named
    shapeless.write_text(json.dumps(data))
    collected = records.collect(layout, IDENTITIES)
    assert [s.folder for s in collected.ours("mainline", "debug")] == [SOAK]
    assert len(collected.unreadable) == 2
    # Named under the results folder: records.json is published with the run.
    assert collected.unreadable[0].startswith(
        "soak/20261206-100000/summary.json: not a soak summary (JSONDecodeError")
    assert collected.unreadable[1].startswith(
        "soak/20261206-110000/summary.json: not a soak summary (KeyError: 'mainline/debug')")
    with pytest.raises(records.SummaryError, match=str(cut)):
        records.read_summary(cut)


def test_records_json_keeps_what_was_collected(layout, tmp_path):
    soaks_of(layout, SOAK, BEFORE)
    (layout.soaks / "20261206-100000").mkdir()
    (layout.soaks / "20261206-100000" / "summary.json").write_text("{")
    run = tmp_path / "run"
    run.mkdir()
    assert records.load(run) is None  # a run made before runs kept records.json
    records.write(layout, run, SOAK_IMAGES)
    loaded = records.load(run)
    assert loaded == records.collect(layout, IDENTITIES)
    assert loaded is not None and len(loaded.ours("mainline", "debug")) == 1
    assert len(loaded.others("mainline", "debug")) == 1 and len(loaded.unreadable) == 1
    (run / records.RECORDS).write_text('{"images": {}}')
    with pytest.raises(records.SummaryError, match=f"{run / records.RECORDS}: not a records file"):
        records.load(run)
