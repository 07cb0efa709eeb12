"""The soaks of a run's own images: collected into records.json, read by the report.

On a real soak summary (harness/test_data/soak: mainline/debug, the image of
the 2026-12-04 reference), the same soak as the summary of the code before
soaks named their images, and the captured meta.json of three images.
"""

import dataclasses
import json
import shutil
from collections import Counter

import pytest

from harness.kernels import kbuild
from harness.layout import Layout, default_layout
from harness.report import document, records_section
from harness.run import records, soak
from harness.tests.conftest import SOAK_DATA, SOAK_IMAGES, make_run

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


def test_soaks_of_kernels_the_run_did_not_boot_are_left_out(layout):
    collected = records.collect(soaks_of(layout, SOAK, BEFORE),
                                {k: v for k, v in IDENTITIES.items() if k != "mainline/debug"})
    assert (collected.soaks, collected.unnamed, collected.read) == ([], [], 2)


def test_a_soak_of_a_flavour_the_run_did_not_boot_counts_by_its_patches(layout):
    """A duel boots no sanitize or kcsan image: their soaks count when the image was
    built from the kernel's very patches, as make kcsan's cells do."""
    perf = dataclasses.replace(IDENTITIES["mainline/debug"], key="fedcba9876543210")
    collected = records.collect(soaks_of(layout, SOAK), {"mainline/perf": perf})
    assert [s.folder for s in collected.ours("mainline", "debug")] == [SOAK]
    patched = dataclasses.replace(perf, patches=1, patches_digest="0000000000000001")
    collected = records.collect(layout, {"mainline/perf": patched})
    assert collected.ours("mainline", "debug") == []
    assert records_section.cell(collected, "mainline", "debug") == (
        "no soak of a debug image of its very patches (digest 0000000000000001)")


def test_kcsan_races_in_a_soak_are_classified_as_make_kcsan_classified_them(tmp_path):
    """A kcsan soak's data races are not kernel reports: each is counted apart, with
    make kcsan's class for a race it saw, and said to be unseen otherwise."""
    seen = "KCSAN: data-race in __hrtimer_run_queues / hrtimer_active"
    unseen = "KCSAN: data-race in iput / evict"
    tally = soak.Tally(boots=2, step_seconds=600.0, statuses=Counter(kcsan=2),
                       cpus=Counter({2: 2}), reports=Counter({"data-race": 3}),
                       first={"data-race": f"{seen} (0001-piggin-kcsan-c2)"})
    boots = [{"boot": f"000{i}-piggin-kcsan-c2", "kernel": "piggin", "flavour": "kcsan",
              "cpus": 2, "status": "kcsan", "steps": [], "damaged": [],
              "reports": [{"kind": "data-race", "title": t} for t in titles]}
             for i, titles in ((1, [seen, unseen]), (2, [seen]))]
    out = tmp_path / "results" / "soak" / "20261207-230000"
    out.mkdir(parents=True)
    kcsan_image = dataclasses.replace(IDENTITIES["piggin/debug"], key="1111222233334444")
    asked = soak.Plan(1, 600.0, "2026-12-07T23:00:00+0000", {"piggin/kcsan": kcsan_image})
    soak.write_summary(out, asked, {("piggin", "kcsan"): tally}, boots, 600.0, finished=True)
    layout = Layout(repo=tmp_path, build=tmp_path, ccache=tmp_path, results=tmp_path / "results")
    collected = dataclasses.replace(
        records.collect(layout, {"piggin/debug": IDENTITIES["piggin/debug"]}),
        races=[records.RaceRecord(seen, "6.1's", "upstream", "mainline too", {"mainline": 1})])
    (found,) = collected.ours("piggin", "kcsan")
    assert found.tally.races == {seen: 2, unseen: 1}
    assert records_section.races_text(collected, [found]) == (
        "KCSAN: 3 data-race reports, 2 distinct: 1 6.1's, 1 not seen by make kcsan")
    assert records_section.report_count(collected, ("piggin",)) == 0
    assert records_section.deck_cell(collected, "piggin") == "2 boots, 0.17 h, 0 reports, 3 races"


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


def test_the_record_row_of_a_soaked_image_gives_boots_hours_and_reports(layout):
    collected = records.collect(soaks_of(layout, SOAK, BEFORE), IDENTITIES)
    row, sanitize, kcsan = records_section.record_rows(collected, ["mainline", "chinner"])
    assert [sanitize[0], kcsan[0]] == ["soak of the sanitize images: random mixes",
                                       "soak of the kcsan images: random mixes"]
    chinner = IDENTITIES["chinner/debug"]
    assert row == [
        "soak of the debug images: random mixes",
        "1 boot, 0.02 workload-hours, 0 kernel reports (soak 20261206-090333 (2026-12-06, "
        "unfinished); image d4a094542ede0508, patch digest e3b0c44298fc1c14)",
        f"no soak run on this run's image 62fd62ed7848af14, patch digest "
        f"{chinner.patches_digest} (results/soak, at the run's end or at report --records)"]
    # A slide's table does not wrap: one row for every flavour, boots, hours and reports.
    assert records_section.deck_row(collected, ["mainline", "chinner"]) \
        == ["soak: random mixes", "1 boot, 0.02 h, 0 reports", "none of these images"]
    assert records_section.deck_row(None, ["chinner"])[1] == "no record kept"


def test_reports_found_by_a_soak_reach_the_record_and_the_deck(tmp_path):
    """A tally with a report, written by the soak and read back as a compare reads it."""
    tally = soak.Tally(boots=2, step_seconds=5400.0, statuses=Counter(ok=1, lockdep=1),
                       cpus=Counter({4: 1, 1: 1}), reports=Counter(circular=1),
                       first={"circular": "possible deadlock in iput (0002-piggin-debug-c2)"})
    out = tmp_path / "results" / "soak" / "20261207-080000"
    out.mkdir(parents=True)
    asked = soak.Plan(1, 7200.0, "2026-12-07T08:00:00+0000",
                      {"piggin/debug": IDENTITIES["piggin/debug"]})
    boots = [{"boot": f"000{i}-piggin-debug-c{c}", "kernel": "piggin", "flavour": "debug",
              "cpus": c, "status": status, "steps": [], "damaged": [], "reports": reports}
             for i, c, status, reports in (
                 (1, 1, "ok", []),
                 (2, 4, "lockdep", [{"kind": "circular",
                                     "title": "possible deadlock in iput"}]))]
    soak.write_summary(out, asked, {("piggin", "debug"): tally}, boots, 7200.0, finished=True)
    layout = Layout(repo=tmp_path, build=tmp_path, ccache=tmp_path, results=tmp_path / "results")
    collected = records.collect(layout, IDENTITIES)
    assert records_section.cell(collected, "piggin", "debug").startswith(
        "2 boots, 1.50 workload-hours, 1 kernel report (circular 1) (soak 20261207-080000 "
        "(2026-12-07); image 4b0b3931b2aa9ffb")
    assert records_section.tally_text(collected.ours("piggin", "debug")) == (
        "2 boots (1 at 1 vCPU, 1 at 4 vCPUs), 1.50 workload-hours; status lockdep 1, ok 1; "
        "1 kernel report: circular 1 (first: possible deadlock in iput (0002-piggin-debug-c2)); "
        "0 damaged records")
    assert records_section.report_count(collected, ("chinner", "piggin")) == 1
    assert records_section.report_count(collected, ("chinner",)) == 0


def test_the_record_row_names_soaks_of_other_images(layout):
    ours = IDENTITIES["mainline/debug"]
    rebuilt = dataclasses.replace(ours, key="0123456789abcdef")
    collected = records.collect(soaks_of(layout, SOAK, BEFORE), {"mainline/debug": rebuilt})
    assert records_section.cell(collected, "mainline", "debug") == (
        "no soak run on this run's image 0123456789abcdef, patch digest e3b0c44298fc1c14 "
        "(results/soak, at the run's end or at report --records); not counted: soak 20261206-090333 (image d4a094542ede0508), "
        "soak 20261206-090333-before-images (image not recorded)")
    named = [records_section.other_text(o, rebuilt) for o in collected.others("mainline", "debug")]
    assert named == [
        "soak 20261206-090333 (1 boot) booted image d4a094542ede0508 (0 patches of its own, "
        "digest e3b0c44298fc1c14): the same patches of its own, so another source, "
        "configuration or compiler",
        "soak 20261206-090333-before-images (1 boot) did not record its image: its summary "
        "predates soaks naming them"]
    patched = dataclasses.replace(rebuilt, patches=1, patches_digest="0000000000000001")
    assert records_section.other_text(collected.others("mainline", "debug")[0], patched) \
        .endswith("digest e3b0c44298fc1c14): other patches")


def test_what_the_record_rows_say_when_there_is_nothing_to_count(layout):
    collected = records.collect(layout, IDENTITIES)
    rows = records_section.record_rows(collected, ["chinner", "piggin"])
    assert [r[0] for r in rows] == ["soak of the debug images: random mixes",
                                    "soak of the sanitize images: random mixes",
                                    "soak of the kcsan images: random mixes"]
    assert rows[0][2].startswith("no soak run on this run's image 4b0b3931b2aa9ffb")
    assert rows[1][1:] == [
        f"no soak of a sanitize image of its very patches (digest "
        f"{IDENTITIES[k + '/debug'].patches_digest})" for k in ("chinner", "piggin")]
    old = records_section.record_rows(None, ["chinner", "piggin"])
    assert old[0][1] == old[0][2] == records_section.PREDATES
    for row in rows + old:
        assert not any("not recorded with this run" in c for c in row)


def test_the_report_has_a_section_on_the_soaks_of_the_runs_images(layout):
    run = make_run(layout.results.parent)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["kernels"]["mainline"]["images"]["debug"] = {"key": "d4a094542ede0508",
                                                          "commit": "c"}
    (run / "manifest.json").write_text(json.dumps(manifest))
    text = document.write(default_layout(), run, "mainline")[0].read_text()
    section = text.split("## Soaks of this run's images")[1].split("\n## ")[0]
    assert "No soak record: this run was made before runs kept one (records.json)." in section
    records.write(soaks_of(layout, SOAK, BEFORE), run, {("mainline", "debug"):
                                                        SOAK_IMAGES["mainline", "debug"]})
    text = document.write(default_layout(), run, "mainline")[0].read_text()
    section = text.split("## Soaks of this run's images")[1].split("\n## ")[0]
    assert ("The run read 2 summaries (soak, faults, kcsan, race gate) under results/ when "
            "it finished or at `report --records`.") in section
    assert ("| mainline | debug | image d4a094542ede0508 (0 patches of its own, digest "
            "e3b0c44298fc1c14) | soak 20261206-090333 (2026-12-06, unfinished) | 1 boot "
            "(1 at 2 vCPUs), 0.02 workload-hours; status ok 1; 0 kernel reports; "
            "0 damaged records |") in section
    assert ("mainline/debug: soak 20261206-090333-before-images (1 boot) did not record "
            "its image") in section
    assert "not recorded with this run" not in text


def test_a_run_s_record_is_collected_again_for_its_own_images(tmp_path):
    """report --records: a soak summary written after the run ended counts for the run's
    very images as it would have at its end; a run folder without records.json is an
    error that names the file."""
    layout = default_layout()
    layout = dataclasses.replace(layout, results=tmp_path / "results")
    run = tmp_path / "run"
    run.mkdir()
    with pytest.raises(records.SummaryError, match="records.json: the run keeps no record"):
        records.refresh(layout, run)
    image = records.ImageIdentity("c69d8c47dcbc029c", "528e5f9b59a4", 1, "f5da39c3c4916b5c")
    (run / records.RECORDS).write_text(json.dumps(dataclasses.asdict(records.Collected(
        {"mainline/debug": image}, [], [], 0, [])), indent=1))
    records.refresh(layout, run)
    again = records.load(run)
    assert again.images == {"mainline/debug": image} and again.read == 0
