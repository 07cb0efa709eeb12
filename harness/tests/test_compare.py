"""The matrix: interleaved order, the host-load guard, cell keys."""

from pathlib import Path

from harness.boot import runner
from harness.guest import workloads
from harness.kernels import kbuild
from harness.run import compare
from harness.layout import REPO_ROOT


def test_kernels_are_interleaved_within_each_repetition():
    m = compare.Matrix(kernels=["mainline", "base"], cpus=[1, 2], workloads=[], repeat=2,
                       icount_repeat=1)
    boots = m.boots("tcg")
    perf = [(b.repetition, b.kernel) for b in boots if b.mode == "tcg" and b.flavour == "perf"]
    # A B A B, never A A B B: a slow phase of the host hits both kernels.
    assert [k for _, k in perf] == ["mainline", "base"] * 4
    assert [r for r, _ in perf] == [1, 1, 1, 1, 2, 2, 2, 2]
    icount = [b for b in boots if b.mode == "tcg-icount"]
    assert [(b.kernel, b.cpus) for b in icount] == [("mainline", 1), ("base", 1)]
    assert {b.mode for b in m.boots("kvm")} == {"kvm"}


def outcome(wall, others):
    return runner.StepOutcome("s01", "x", "ok", None, (), wall, others)


def test_host_load_guard():
    assert not compare.disturbed(outcome(10.0, 1.0))  # 0.1 core of others: fine
    assert compare.disturbed(outcome(10.0, 5.0))  # half a core: rerun
    assert not compare.disturbed(outcome(None, None))


def test_cell_key_changes_with_everything_that_shapes_a_cell(tmp_path):
    create = workloads.load_all(REPO_ROOT / "workloads")["create-unlink"]
    image = kbuild.KernelImage("base", "perf", "k1", tmp_path)
    config = compare.BootConfig("base", "perf", "tcg", 2, 1)
    key = compare.cell_key(image, Path("initramfs-a.cpio"), config, create, "ext4", 2, "tcg")
    assert key == compare.cell_key(image, Path("initramfs-a.cpio"), config, create, "ext4", 2,
                                   "tcg")
    other_image = kbuild.KernelImage("base", "perf", "k2", tmp_path)
    changed = [
        compare.cell_key(other_image, Path("initramfs-a.cpio"), config, create, "ext4", 2, "tcg"),
        compare.cell_key(image, Path("initramfs-b.cpio"), config, create, "ext4", 2, "tcg"),
        compare.cell_key(image, Path("initramfs-a.cpio"), config, create, "tmpfs", 2, "tcg"),
        compare.cell_key(image, Path("initramfs-a.cpio"),
                         compare.BootConfig("base", "perf", "tcg", 2, 2), create, "ext4", 2,
                         "tcg"),
    ]
    assert key not in changed and len(set(changed)) == 4
