"""The record per kernel: make faults' and make kcsan's cells collected into records.json,
counted for a kernel of the very patches the run booted, and the report's record table.

The images are the captured meta.json of test_data/soak (the reference's); the
faults and kcsan summaries are written by their own writers, as the targets
write them.
"""

import dataclasses
import json

from harness.kernels import kbuild
from harness.parsers import kcsan
from harness.report import record_table
from harness.run import faults_summary, kcsan_summary, records, tidy
from harness.run import kcsan as kcsan_run
from harness.run.faults_summary import Seen
from harness.run.kcsan_origin import PatchRef
from harness.tests.conftest import SOAK_IMAGES
from harness.tests.test_kcsan import CONSOLE, Written, cell

IDENTITIES = {f"{k}/{f}": kbuild.identity(image) for (k, f), image in SOAK_IMAGES.items()}
KERNELS = ["mainline", "chinner", "piggin"]


def faults_cell(kernel: str, reports=()) -> faults_summary.CellResult:
    return faults_summary.CellResult(kernel, 1, "torture", "ext4", 2, "s", "ok",
                                     f"faults/seed1/boots/{kernel}", "s01", 360.0,
                                     {"failslab": 3}, (), "", {}, tuple(reports), {})


def write_stores(layout, piggin_digest: str | None = None) -> None:
    """A faults round of mainline and piggin (piggin's report only piggin gave), and
    make kcsan on mainline and piggin (a race of each's own)."""
    images = {k: dataclasses.asdict(IDENTITIES[f"{k}/debug"]) for k in ("mainline", "piggin")}
    if piggin_digest:
        images["piggin"]["patches_digest"] = piggin_digest
    out = layout.faults / "seed1"
    out.mkdir(parents=True)
    meta = {"seed": 1, "rounds": [1], "cpus": [2], "workloads": ["torture"], "wall_s": 720.0,
            "duration_s": None, "state": "Finished.", "finished": True, "boots": [],
            "images": images}
    faults_summary.write(out, [faults_cell("mainline"), faults_cell(
        "piggin", [Seen("warn", "WARNING in iput", 300)])], meta, {"mainline": 1, "piggin": 1})
    hash_race, timer_race = kcsan.parse(CONSOLE)
    own = kcsan_run.trace(Written({"hrtimer_active": PatchRef("piggin", 4, "fs: lock")}),
                          timer_race)
    results = [cell("mainline", [kcsan_run.trace(Written({}), hash_race)]),
               cell("piggin", [kcsan_run.trace(Written({}), hash_race), own])]
    layout.kcsan.mkdir(parents=True)
    kcsan_summary.write(layout.kcsan, results, {
        "state": "Finished.", "workloads": ["create-unlink"], "cpus": [2],
        "kernels": ["mainline", "piggin"], "finished": True, "images": images},
        {"mainline": 2, "piggin": 2}, {})


def test_faults_and_kcsan_cells_count_for_a_kernel_of_the_same_patches(layout):
    write_stores(layout)
    collected = records.collect(layout, IDENTITIES)
    (faults,) = collected.checked("faults", "piggin")
    assert (faults.measured, faults.planned, faults.reports, faults.by_class,
            faults.step_hours) == (1, 1, 1, {faults_summary.FINDING: 1}, 0.1)
    (races,) = collected.checked("kcsan", "piggin")
    assert (races.measured, races.planned, races.reports, races.by_class) == (
        1, 2, 2, {kcsan_summary.SIXONE: 1, kcsan_summary.SERIES: 1})
    assert collected.checked("kcsan", "chinner") == []
    assert collected.read == 2  # the faults and the kcsan summaries
    assert {r.klass for r in collected.races} == {kcsan_summary.SIXONE, kcsan_summary.SERIES}


def test_cells_of_other_patches_are_named_never_counted(layout):
    write_stores(layout, piggin_digest="0123456789abcdef")
    collected = records.collect(layout, IDENTITIES)
    assert collected.checked("kcsan", "piggin") == collected.checked("faults", "piggin") == []
    assert record_table.kcsan_cell(collected, "piggin", short=False) == (
        "no make kcsan cell of these patches; not counted: kcsan (1 cells, patch digest "
        "0123456789abcdef)")
    assert record_table.kcsan_cell(collected, "piggin", short=True) == record_table.NOT_RUN


def test_records_json_keeps_the_checks_and_reads_a_run_from_before_them(layout, tmp_path):
    write_stores(layout)
    run = tmp_path / "run"
    run.mkdir()
    records.write(layout, run, SOAK_IMAGES)
    assert records.load(run) == records.collect(layout, IDENTITIES)
    data = json.loads((run / records.RECORDS).read_text())
    del data["checks"], data["races"]  # records.json as runs wrote it before
    (run / records.RECORDS).write_text(json.dumps(data))
    assert records.load(run).checks == []


def debug_rows(kernel: str, reports: dict[str, int]) -> list[tidy.Row]:
    return [tidy.Row(kernel, "debug", "tcg", w, "ext4", 2, 2, 1, "all", "", "lockdep_reports",
                     n, "count", "ok", f"{kernel}-{w}", "m") for w, n in reports.items()]


def test_the_record_table_gives_every_checker_per_kernel(layout):
    write_stores(layout)
    collected = records.collect(layout, IDENTITIES)
    rows = debug_rows("piggin", {"torture": 1, "fstree": 0}) + debug_rows("mainline", {"fstree": 0})
    boots = {("piggin", "debug"): 1, ("mainline", "debug"): 1}
    table = {r[0]: r[1:] for r in record_table.rows(collected, rows, KERNELS, boots)}
    assert table["lockdep (this run's debug boots)"] == [
        "0 reports in 1 cell (1 boot)", "no debug boot in this run", "1 report in 2 cells (1 boot)"]
    assert table["sanitize: KASAN, list, object, RCU (this run)"] == ["not in this run"] * 3
    assert table["kcsan: data races (make kcsan)"][2] == (
        "1 of 2 cells, 2 KCSAN reports, 2 distinct races (6.1's 1, the series' 1)")
    assert table["faults: injected failures (make faults)"][0] == (
        "1 of 1 cells (faults/seed1), 0 kernel reports, 0 findings (reports only a series gave)")
    assert table["faults: injected failures (make faults)"][1].startswith(
        "no make faults cell of these patches")
    assert table["soak: workload-hours (make soak)"] == ["no soak of these images"] * 3
    short = {r[0]: r[1:] for r in record_table.rows(collected, rows, KERNELS, boots, short=True)}
    assert short["kcsan"] == ["1 of 2 cells", "not run", "1 of 2 cells"]
    assert short["kcsan races"] == ["1: own 0, 6.1 1", "not run", "2: own 1, 6.1 1"]
    assert short["faults"] == ["0 in 1 cell", "not run", "1 in 1 cell"]
    assert short["lockdep"] == ["0 in 1 boot", "not run", "1 in 1 boot"]
    assert record_table.rows(None, rows, KERNELS, boots)[2][1] == record_table.NO_RECORD


def test_the_section_lists_lockdep_per_workload_and_every_counted_race(layout):
    write_stores(layout)
    collected = records.collect(layout, IDENTITIES)
    rows = debug_rows("piggin", {"torture": 1, "fstree": 0})
    blocks = record_table.section(collected, rows, KERNELS, {("piggin", "debug"): 1})
    tables = [b for b in blocks if isinstance(b, record_table.Table)]
    assert tables[1].rows == [["fstree/ext4", "-", "-", "0 in 1 cell"],
                              ["torture/ext4", "-", "-", "1 in 1 cell"]]
    races = tables[2].rows
    assert races[0][:2] == ["KCSAN: data-race in __hrtimer_run_queues / hrtimer_active",
                            kcsan_summary.SERIES]
    assert races[0][3] == kcsan_summary.UNEXPLAINED and races[0][4] == "piggin 1"
    assert races[1][4] == "mainline 1, piggin 1"


def test_kcsan_cells_planned_but_not_measured_with_this_guest_say_so(layout):
    """make kcsan keys its cells by image and guest: after the guest changed, its summary
    plans a kernel's cells and counts none measured until it runs again."""
    write_stores(layout)
    collected = records.collect(layout, IDENTITIES)
    (tally,) = collected.checked("kcsan", "piggin")
    unmeasured = dataclasses.replace(collected, checks=[
        dataclasses.replace(tally, measured=0, reports=0, by_class={})])
    assert record_table.kcsan_cell(unmeasured, "piggin", short=False) == (
        "0 of 2 cells measured with the image and guest as they are now (make kcsan "
        "measures them)")
    assert record_table.kcsan_cell(unmeasured, "piggin", short=True) == record_table.NOT_RUN
