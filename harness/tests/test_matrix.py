"""Planning: interleaved order, cell keys; the host-load guard of the measuring."""

from harness import host
from harness.boot import runner
from harness.guest import workloads
from harness.kernels import kbuild
from harness.layout import REPO_ROOT
from harness.run import execute, matrix


def test_kernels_are_interleaved_within_each_repetition():
    m = matrix.Matrix(kernels=["mainline", "base"], cpus=[1, 2], workloads=[], repeat=2,
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
    assert not execute.disturbed(outcome(10.0, 1.0))  # 0.1 core of others: fine
    assert execute.disturbed(outcome(10.0, 5.0))  # half a core: rerun
    assert not execute.disturbed(outcome(None, None))


def test_cell_key_changes_with_everything_that_shapes_a_measurement(tmp_path):
    create = workloads.load_all(REPO_ROOT / "workloads")["create-unlink"]
    image = kbuild.KernelImage("base", "perf", "k1", tmp_path)
    config = matrix.BootConfig("base", "perf", "tcg", 2, 1)
    here = host.Machine("Some CPU", 2, "tcg")

    def key(image=image, guest="initramfs-a", config=config, fs="ext4", machine=here):
        return matrix.cell_key(image, guest, config, create, fs, 2, machine)

    changed = [
        key(image=kbuild.KernelImage("base", "perf", "k2", tmp_path)),
        key(guest="initramfs-b"),
        key(fs="tmpfs"),
        key(config=matrix.BootConfig("base", "perf", "tcg", 2, 2)),
        key(machine=host.Machine("Another CPU", 2, "tcg")),
        key(machine=host.Machine("Some CPU", 64, "tcg")),
        key(machine=host.Machine("Some CPU", 2, "kvm")),
    ]
    assert key() == key()
    assert key() not in changed and len(set(changed)) == len(changed)


def test_plan_has_every_cell_of_every_boot(tmp_path):
    known = workloads.load_all(REPO_ROOT / "workloads")
    chosen = [known["create-unlink"], known["fstree"]]
    m = matrix.Matrix(kernels=["mainline"], cpus=[1, 2], workloads=chosen, repeat=1,
                      icount_repeat=0, cs_repeat=0, flavours=("perf",))
    image = kbuild.KernelImage("mainline", "perf", "k1", tmp_path)
    boots = matrix.plan_boots(m, {("mainline", "perf"): image}, "g",
                              host.Machine("cpu", 2, "tcg"))
    assert [b.config.cpus for b in boots] == [1, 2]
    per_boot = sum(len(w.filesystems) * len(w.procs_for(1)) for w in chosen)
    assert len(boots[0].cells) == per_boot
    assert len({c.key for b in boots for c in b.cells}) == sum(len(b.cells) for b in boots)
