"""End to end: mainline's faults image under fault injection, and make faults resuming.

Builds (or reuses) mainline/faults, another image than the one make test
builds (5-30 minutes when missing), then boots it twice: three steps under
chosen faults, and a faults run of one workload (tmpfs, ext4, XFS) that a
second run finds done. About 5.5 minutes on 2026-12-06 with the host shared.
"""

import dataclasses
import json

import pytest

from harness import lockorder
from harness.boot import qemu, runner
from harness.guest import faults, initramfs, plan
from harness.kernels import kbuild
from harness.layout import default_layout
from harness.parsers import fault_injection
from harness.run import faults as faults_run
from harness.tests import shipped

pytestmark = [pytest.mark.boot, pytest.mark.extra_image]


@pytest.fixture(scope="module")
def built():
    layout = default_layout()
    return layout, kbuild.build(layout, "mainline", "faults")


def test_the_kernel_fails_what_the_step_asks_and_the_workload_counts_it(built, tmp_path):
    layout, image = built
    known = {name: shipped.workload(name) for name in ("create-unlink", "nsmix", "fstree")}
    files = initramfs.prepare(layout, [known[n] for n in ("create-unlink", "nsmix", "fstree")])
    steps = [plan.Step("s01", known["create-unlink"], "tmpfs", 2, faults.Faults(5, 40, 0, 0, 0, 0)),
             plan.Step("s02", known["nsmix"], "ext4", 2,
                       faults.Faults(2, 20, 0, 0, 5, 10, "task")),
             plan.Step("s03", known["fstree"], "xfs", 2,
                       faults.Faults(1, 20, 2, 10, 2, 10, "disk"))]
    order = lockorder.for_kernel(layout, "mainline")
    record = runner.run_boot(image, files, qemu.Machine("tcg", 2), steps, tmp_path, "faults test",
                             order)
    assert record.damaged == ()
    # Every step ran and the plan finished: the faults functions run in PID 1.
    assert record.status != "panic" and "not-run" not in {s.status for s in record.steps}
    assert record.steps[0].status == "ok", record
    console = (tmp_path / "console.log").read_text()
    assert "slub_debug=A,ext4_inode_cache" in console  # the command line, echoed at boot
    shown = fault_injection.parse_console(console)
    spans = runner.step_lines(console)
    for step, outcome in zip(steps, record.steps):
        counts = fault_injection.parse_record((tmp_path / "files" / f"{step.id}.faults")
                                              .read_text())
        assert counts.error == ""
        assert sorted(counts.caches) == sorted(faults.FAILSLAB_CACHES)
        asked = step.faults.asked()
        for count in counts.counts:
            assert (count.probability, count.times) == asked[count.attr]
        figures = {f.metric: f.value for f in outcome.numbers.figures if f.phase == "errors"}
        begin, end = spans[step.id]
        here = [f for f in shown if begin <= f.line <= end]
        # The console shows no more than were injected (__GFP_NOWARN ones fail
        # silently); a countdown that reached 0 may be short by a race.
        injected = fault_injection.injected(counts, here)
        for attr, (n, reached) in injected.items():
            assert len([f for f in here if f.attr == attr]) <= n
            assert n <= asked[attr][1] or reached
        assert all(f.chain for f in here)
        if step.id == "s01":
            # 5% of tmpfs's inode and dentry allocations: 40 of them fail long
            # before 2 x 2000 creates are done, and each is a failed create.
            assert injected["failslab"] == (max(40, len(here)), True)
            # A dentry that cannot be had is ENOMEM; tmpfs turns a failed
            # inode allocation into ENOSPC (shmem_mknod).
            assert figures["errors.create.ENOMEM"] + figures["errors.create.ENOSPC"] \
                == sum(injected[a][0] for a in injected)
            assert {f.attr for f in here} == {"failslab"}
            assert {f.chain[0] for f in here} <= {"__d_alloc", "shmem_alloc_inode"}


def test_make_faults_resumes_without_booting_again(built, tmp_path):
    layout, _ = built
    layout = dataclasses.replace(layout, results=tmp_path / "results")
    known = [shipped.workload("create-unlink")]
    out = faults_run.faults(layout, ["mainline"], known, None, seed=5, names=("create-unlink",))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["finished"] and len(summary["boots"]) >= 1
    assert {(c["workload"], c["fs"]) for c in summary["cells"]} == {
        ("create-unlink", fs) for fs in ("tmpfs", "ext4", "xfs")}
    # Every create allocates an inode from a cache failslab may fail, but on
    # XFS (__GFP_NOFAIL inodes; one name per worker, so a dentry is rarely new).
    assert all(c["injected"]["failslab"] > 0 for c in summary["cells"]
               if c["fs"] != "xfs"), summary["cells"]
    again = faults_run.faults(layout, ["mainline"], known, None, seed=5, names=("create-unlink",))
    assert again == out
    resumed = json.loads((out / "summary.json").read_text())
    assert resumed["boots"] == [] and resumed["cells"] == summary["cells"]
