"""End to end: build (or reuse) the mainline debug kernel and boot it under TCG.

These boot real kernels in QEMU (a few tens of seconds each, after a build of
4-10 minutes when nothing is cached).
"""

import dataclasses
import json

import pytest

from harness.boot import qemu, runner
from harness.guest import initramfs, plan, workloads
from harness.kernels import kbuild
from harness.run import compare, tidy
from harness.layout import REPO_ROOT, default_layout

pytestmark = pytest.mark.boot
TEST_WORKLOADS = REPO_ROOT / "harness" / "test_data" / "workloads"


@pytest.fixture(scope="module")
def built():
    layout = default_layout()
    image = kbuild.build(layout, "mainline", "debug")
    return layout, image, initramfs.prepare(layout)


def test_hung_guest_is_killed_classified_and_next_boot_runs(built, tmp_path):
    layout, image, files = built
    hang = workloads.parse(TEST_WORKLOADS / "hang.wl")
    steps = plan.make_steps([(hang, "tmpfs", 1)])
    record = runner.run_boot(image, files, qemu.Machine("tcg", 2), steps, tmp_path / "hung",
                             "hang test", timeout_s=60)
    assert record.status == "timeout"
    assert [s.status for s in record.steps] == ["timeout"]
    console = (tmp_path / "hung" / "console.log").read_text()
    assert "inode-duel: step s01 begin" in console
    assert "killed at the 60s timeout" in console
    assert json.loads((tmp_path / "hung" / "boot.json").read_text())["status"] == "timeout"

    # The next boot is unaffected.
    create = workloads.load_all(layout.workloads)["create-unlink"]
    steps = plan.make_steps([(create, "tmpfs", 1)])
    record = runner.run_boot(image, files, qemu.Machine("tcg", 1), steps, tmp_path / "next",
                             "after the hang")
    assert record.status == "ok"


def test_mainline_debug_boot_measures_throughput_and_locks(built, tmp_path):
    layout, image, files = built
    create = workloads.load_all(layout.workloads)["create-unlink"]
    steps = plan.make_steps([(create, "tmpfs", 2), (create, "ext4", 2)])
    record = runner.run_boot(image, files, qemu.Machine("tcg", 2), steps, tmp_path / "boot",
                             "end-to-end test")
    assert record.status == "ok", record
    assert record.reports == ()
    assert record.damaged == ()
    for outcome in record.steps:
        assert outcome.status == "ok"
        figures = {(f.phase, f.lock, f.metric): f.value for f in outcome.numbers.figures}
        assert figures["create-unlink", "", "throughput"] > 0
        assert figures["create-unlink", "i_lock", "acquisitions"] > 0
        assert figures["create-unlink", "sb_list", "acquisitions_per_op"] > 0
        assert outcome.numbers.lockstat_valid is True
    ext4 = {(f.lock, f.metric): f.value for f in record.steps[1].numbers.figures}
    # tmpfs never hashes inodes; ext4 does (design.md section 6).
    assert ext4["hash", "acquisitions_per_op"] > 0


def test_compare_writes_a_run_and_resumes_without_redoing_cells(built, tmp_path):
    layout, _, _ = built
    layout = dataclasses.replace(layout, results=tmp_path / "results")
    create = workloads.load_all(layout.workloads)["create-unlink"]
    matrix = compare.Matrix(kernels=["mainline"], cpus=[1], workloads=[create], repeat=0,
                            flavours=("debug",))
    first = compare.run(layout, matrix, tmp_path / "run1", accel="tcg")
    assert len(first.boots) == 1 and first.boots[0].status == "ok"
    rows = tidy.read(tmp_path / "run1" / "tidy.tsv")
    assert {(r.fs, r.metric) for r in rows} >= {("tmpfs", "throughput"), ("ext4", "throughput")}
    conformance = json.loads((tmp_path / "run1" / "lockorder.json").read_text())
    assert conformance["mainline"]["edges"], "lockdep saw no icache edges"
    assert conformance["mainline"]["violations"] == []
    manifest = json.loads((tmp_path / "run1" / "manifest.json").read_text())
    assert manifest["kernels"]["mainline"]["patches"] == []

    # Interrupted or not, the same compare again reuses every finished cell.
    second = compare.run(layout, matrix, tmp_path / "run2", accel="tcg")
    assert second.boots == []
    assert sorted(map(repr, tidy.read(tmp_path / "run2" / "tidy.tsv"))) == sorted(map(repr, rows))
