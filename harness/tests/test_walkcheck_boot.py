"""piggin 0011's walk-count assertion in a real guest: a walk of the sb inode
lists that never counted itself is caught even while another walk of the same
superblock keeps the superblock's count up.

Builds piggin's debug image with walkcheck/ (a test patch, never a kernel
under comparison: /proc/walkcheck walks the lists of the writer's
superblock, counted or not) and boots it once at 1 vCPU, two steps on tmpfs.
The uncounted walk raises the superblock's count as another task's walk
would, so the assertion as it was before issue 39 (the count above zero)
cannot catch it; the per-task lockdep map does. With that old assertion the
second test fails (no report; measured 2026-12-07, NOTES.md).
"""

from pathlib import Path

import pytest

from harness import lockorder
from harness.boot import qemu, runner
from harness.guest import initramfs, plan, workloads
from harness.kernels import kbuild, series
from harness.layout import REPO_ROOT, Layout, default_layout

pytestmark = [pytest.mark.boot, pytest.mark.extra_image]
PATCH = REPO_ROOT / "walkcheck" / "0001-walkcheck-an-uncounted-walk-of-the-sb-inode-lists-be.patch"
MODES = ("counted", "uncounted")


def walkcheck_kernel(below: series.Kernel) -> series.Kernel:
    return series.Kernel(f"{below.name}+walkcheck",
                         below.patches + (series.Patch("walkcheck", 1, PATCH),))


def walkcheck_workload(mode: str) -> workloads.Workload:
    text = "\n".join([
        f"name    = walkcheck-{mode}",
        f"summary = one {mode} walk of the inode lists of the step's tmpfs",
        f"run     = echo {mode} > /proc/walkcheck",
        "output  = none",
        "ops     = 1",
        "fs      = tmpfs",
        "procs   = 1",
        "unit    = walk", ""])
    return workloads.parse(Path(f"walkcheck-{mode}.wl"), text)


def boot_walkcheck(layout: Layout, below: series.Kernel, folder: Path) -> runner.BootRecord:
    """The two walks, counted then uncounted, in one debug boot of below+walkcheck."""
    image = kbuild.build_kernel(layout, walkcheck_kernel(below), "debug")
    chosen = [walkcheck_workload(mode) for mode in MODES]
    files = initramfs.prepare(layout, chosen)
    steps = plan.make_steps([(w, "tmpfs", 1) for w in chosen])
    return runner.run_boot(image, files, qemu.Machine("tcg", 1), steps, folder, "walkcheck",
                           lockorder.for_kernel(layout, "piggin"))


@pytest.fixture(scope="module")
def boot(tmp_path_factory):
    layout = default_layout()
    folder = tmp_path_factory.mktemp("walkcheck")
    return boot_walkcheck(layout, series.resolve(layout, "piggin"), folder), folder


def walked(folder: Path, mode: str) -> int:
    """The inodes the walk of that mode visited, from its console line."""
    for line in (folder / "console.log").read_text(errors="replace").splitlines():
        if f"walkcheck: {mode} walk of " in line:
            return int(line.split(f"walkcheck: {mode} walk of ", 1)[1].split()[0])
    raise AssertionError(f"no {mode} walk on the console")


def test_a_counted_walk_passes(boot):
    record, folder = boot
    counted = record.steps[0]
    assert counted.label.startswith("walkcheck-counted"), counted.label
    assert counted.status == "ok" and counted.reports == (), counted
    assert walked(folder, "counted") > 0


def test_an_uncounted_walk_beside_another_walks_count_is_caught(boot):
    record, folder = boot
    uncounted = record.steps[1]
    assert uncounted.label.startswith("walkcheck-uncounted"), uncounted.label
    inodes = walked(folder, "uncounted")
    assert inodes > 0
    # The assertion is in sb_inode_next_rcu(), at every step of the walk (lockdep_assert,
    # not _once): one WARN per inode and one for the step that ends the walk.
    assert [(r["kind"], r["title"]) for r in uncounted.reports] == \
        [("warn", "WARNING in sb_inode_next_rcu")] * (inodes + 1), uncounted.reports
