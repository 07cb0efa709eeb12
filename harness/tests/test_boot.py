"""End to end: build (or reuse) the mainline debug kernel and boot it under TCG.

These boot real kernels in QEMU (a few tens of seconds each, after a build of
4-10 minutes when nothing is cached).
"""

import dataclasses
import json
import os
import shutil
import subprocess
import sys

import pytest

from harness import lockorder
from harness.boot import channel, qemu, runner
from harness.guest import initramfs, plan, workloads
from harness.kernels import kbuild, series
from harness.run import compare, matrix, records, tidy
from harness.layout import REPO_ROOT, default_layout
from harness.tests import shipped
from harness.tests.conftest import SOAK_DATA

pytestmark = pytest.mark.boot
TEST_WORKLOADS = REPO_ROOT / "harness" / "test_data" / "workloads"
MAINLINE = lockorder.parse(lockorder.MAINLINE_FILE)
HOG_S = 600  # upper bound of the CPU hog's life; it is killed when the boot ends


@pytest.fixture(scope="module")
def built():
    layout = default_layout()
    image = kbuild.build(layout, "mainline", "debug")
    return layout, image, initramfs.prepare(layout, [shipped.workload("create-unlink")])


def test_hung_guest_is_killed_classified_and_next_boot_runs(built, tmp_path):
    layout, image, files = built
    hang = workloads.parse(TEST_WORKLOADS / "hang.wl")
    steps = plan.make_steps([(hang, "tmpfs", 1)])
    record = runner.run_boot(image, files, qemu.Machine("tcg", 2), steps, tmp_path / "hung",
                             "hang test", MAINLINE, timeout_s=60)
    assert record.status == "timeout"
    assert [s.status for s in record.steps] == ["timeout"]
    console = (tmp_path / "hung" / "console.log").read_text()
    assert "inode-duel: step s01 begin" in console
    assert "killed at the 60s timeout" in console
    assert json.loads((tmp_path / "hung" / "boot.json").read_text())["status"] == "timeout"

    # The next boot is unaffected.
    create = shipped.workload("create-unlink")
    steps = plan.make_steps([(create, "tmpfs", 1)])
    record = runner.run_boot(image, files, qemu.Machine("tcg", 1), steps, tmp_path / "next",
                             "after the hang", MAINLINE)
    assert record.status == "ok"


def test_mainline_debug_boot_measures_throughput_and_locks(built, tmp_path):
    layout, image, files = built
    create = shipped.workload("create-unlink")
    steps = plan.make_steps([(create, "tmpfs", 2), (create, "ext4", 2)])
    record = runner.run_boot(image, files, qemu.Machine("tcg", 2), steps, tmp_path / "boot",
                             "end-to-end test", MAINLINE)
    assert record.status == "ok", record
    assert record.reports == ()
    assert record.damaged == ()
    # The guest runs the queued spinlock of bare metal, as its init saw it.
    assert record.spinlock == "qspinlock"
    # Its CRNG seeded from RDRAND before the first step (runner.SEED_CRNG): unseeded,
    # every inode create would take two global locks of the random driver.
    assert record.crng == "ready"
    for outcome in record.steps:
        assert outcome.status == "ok"
        figures = {(f.phase, f.lock, f.metric): f.value for f in outcome.numbers.figures}
        assert figures["create-unlink", "", "throughput"] > 0
        assert figures["create-unlink", "i_lock", "acquisitions"] > 0
        assert figures["create-unlink", "sb_list", "acquisitions_per_op"] > 0
        assert outcome.numbers.lockstat_valid is True
    ext4 = {(f.lock, f.metric): f.value for f in record.steps[1].numbers.figures}
    # tmpfs never hashes inodes; ext4 does (docs/design.md section 6).
    assert ext4["hash", "acquisitions_per_op"] > 0


def test_busy_host_loses_no_record(built, tmp_path):
    """With every host core kept busy by a hog of our own, every record arrives whole."""
    layout, image, files = built
    create = shipped.workload("create-unlink")
    steps = plan.make_steps([(create, fs, 2) for fs in ("tmpfs", "ext4", "xfs")])
    cores = os.cpu_count() or 1
    hogs = [subprocess.Popen([sys.executable, "-c", f"import time\nend = time.time() + {HOG_S}"
                              "\nwhile time.time() < end: pass"]) for _ in range(2 * cores)]
    try:
        record = runner.run_boot(image, files, qemu.Machine("tcg", 2), steps,
                                 tmp_path / "busy", "busy host", MAINLINE)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert record.damaged == ()
    assert [s.status for s in record.steps] == ["ok"] * 3, record
    # Each step's output, status and lock_stat window arrived.
    received = channel.parse((tmp_path / "busy" / "results.raw").read_bytes())
    for step in steps:
        for name in ("out", "err", "status", "create-unlink.lock_stat"):
            assert received.get(f"{step.id}.{name}") is not None, (step.id, name)
    assert received.get("done") is not None
    # The hog really ran beside the guest.
    assert record.others_cpu_s > 0.5 * record.wall_s


def test_compare_writes_a_run_and_resumes_without_redoing_cells(built, tmp_path):
    layout, _, _ = built
    layout = dataclasses.replace(layout, results=tmp_path / "results")
    create = shipped.workload("create-unlink")
    walks = {"sb inode list walks (RCU in piggin)": ["sbwalk"]}
    wanted = matrix.Matrix(kernels=["mainline"], cpus=[1], workloads=[create], repeat=0,
                           flavours=("debug",), differences_elsewhere=walks)
    first = compare.run(layout, wanted, tmp_path / "run1", accel="tcg")
    assert len(first.boots) == 1 and first.boots[0].status == "ok"
    rows = tidy.read(tmp_path / "run1" / "tidy.tsv")
    assert {(r.fs, r.metric) for r in rows} >= {("tmpfs", "throughput"), ("ext4", "throughput")}
    conformance = json.loads((tmp_path / "run1" / "lockorder.json").read_text())
    assert conformance["mainline"]["edges"], "lockdep saw no icache edges"
    assert conformance["mainline"]["violations"] == []
    manifest = json.loads((tmp_path / "run1" / "manifest.json").read_text())
    # mainline is stock 6.1 plus the stable fixes every kernel carries, and nothing else
    assert [(p["series"], p["file"]) for p in manifest["kernels"]["mainline"]["patches"]] \
        == [(p.series, p.path.name) for p in series.resolve(layout, "mainline").patches]
    assert {p["series"] for p in manifest["kernels"]["mainline"]["patches"]} == {"stable"}
    assert manifest["differences"] == {"create-unlink": create.differences[0][1]}
    assert manifest["differences_not_measured"] == walks
    # The time of each stage, and the estimate printed before the first build.
    timing = manifest["timing"]
    stages = [s["stage"] for s in timing["stages"]]
    assert stages[:2] == ["initramfs", "image"] and stages[-1] == "finish", stages
    [boots] = [s for s in timing["stages"] if s["stage"] == "boots"]
    assert (boots["flavour"], boots["mode"], boots["boots"]) == ("debug", "tcg", 1)
    assert boots["seconds"] == pytest.approx(first.boots[0].wall_s, abs=0.1)
    assert timing["first_estimate"]["total_s"] > 0

    # Interrupted or not, the same compare again reuses every finished cell. Its end
    # collects the soaks of its images; a damaged soak summary costs it nothing.
    shutil.copytree(SOAK_DATA / "20261206-090333", layout.soaks / "20261206-090333")
    (layout.soaks / "20261206-100000").mkdir()
    (layout.soaks / "20261206-100000" / "summary.json").write_text('{"tallies": ')
    second = compare.run(layout, wanted, tmp_path / "run2", accel="tcg")
    assert second.boots == []
    assert sorted(map(repr, tidy.read(tmp_path / "run2" / "tidy.tsv"))) == sorted(map(repr, rows))
    kept = records.load(tmp_path / "run2")
    assert kept is not None and kept.read == 2
    assert [u.split(":")[0] for u in kept.unreadable] == ["soak/20261206-100000/summary.json"]
    key = json.loads((tmp_path / "run2" / "manifest.json").read_text())[
        "kernels"]["mainline"]["images"]["debug"]["key"]
    assert kept.images["mainline/debug"].key == key
    # The captured soak booted d4a094542ede0508: it counts if and only if this is that image.
    assert bool(kept.ours("mainline", "debug")) == (key == "d4a094542ede0508")

    # Resumed in its own folder (to pick up a soak made after it), the run keeps what
    # its first pass measured and records the resume beside it.
    again = compare.run(layout, wanted, tmp_path / "run1", accel="tcg")
    assert again.boots == []
    resumed = json.loads((tmp_path / "run1" / "manifest.json").read_text())
    for key in ("created", "wall_seconds", "timing", "boots"):
        assert resumed[key] == manifest[key], key
    assert resumed["reused_boots"] == []
    [resume] = resumed["resumes"]
    assert (resume["boots_measured"], resume["boots_reused"]) == (0, 1)
    assert resume["wall_seconds"] < manifest["wall_seconds"]


def test_kernel_parameters_and_count_boots_in_a_real_compare(built, tmp_path):
    """A workload with a cmdline boots apart with it; count boots are debug only and
    run only the workloads that ask (here at 2 vCPUs: the planner does not care
    whether the count boots are oversubscribed)."""
    layout, _, _ = built
    layout = dataclasses.replace(layout, results=tmp_path / "results")
    create = workloads.load_all(layout.workloads)["create-unlink"]
    crowded = workloads.parse(REPO_ROOT / "harness" / "test_data" / "cmdline" / "crowded.wl")
    wanted = matrix.Matrix(kernels=["mainline"], cpus=[1], workloads=[create, crowded],
                           repeat=0, flavours=("debug",), count_cpus=(2,))
    result = compare.run(layout, wanted, tmp_path / "run", accel="tcg")
    assert sorted(b.directory.name.split("-", 2)[2] for b in result.boots) == [
        "mainline-debug-tcg-c1-r1", "mainline-debug-tcg-c1-r1-ihash_entries-16",
        "mainline-debug-tcg-c2-r1-ihash_entries-16"]
    assert all(b.status == "ok" for b in result.boots), result.boots
    for boot in result.boots:
        console = (boot.directory / "console.log").read_text(errors="replace")
        crowded_boot = boot.directory.name.endswith("ihash_entries-16")
        assert ("Inode-cache hash table entries: 16 " in console) == crowded_boot
    rows = tidy.read(tmp_path / "run" / "tidy.tsv")
    assert {(r.workload, r.cpus) for r in rows} == {("create-unlink", 1), ("crowded", 1),
                                                    ("crowded", 2)}
    shared = {r.cpus: r.value for r in rows if r.workload == "crowded"
              and r.metric == "shared.acquisitions_per_op"}
    assert shared[1] == pytest.approx(1.0, abs=0.05)  # 6.1: one hash lock per lookup
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["matrix"]["count_cpus"] == [2]
