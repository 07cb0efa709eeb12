"""records -> numbers -> status, on a real boot folder (harness/test_data/boot/)."""

import base64
import gzip
import hashlib
import shutil

import pytest

from harness import host, lockorder
from harness.boot import channel, measure, runner
from harness.guest import plan, workloads
from harness.kernels.kbuild import KernelImage
from harness.layout import REPO_ROOT, Layout
from harness.run import cells, matrix
from harness.tests import shipped

CAPTURED = REPO_ROOT / "harness" / "test_data" / "boot" / "mainline-debug-1cpu"
TEST_WORKLOADS = REPO_ROOT / "harness" / "test_data" / "workloads"
MAINLINE = lockorder.parse(lockorder.MAINLINE_FILE)
CREATE = shipped.workload("create-unlink")
STEPS = plan.make_steps([(CREATE, "tmpfs", 1), (CREATE, "ext4", 1),
                         (workloads.parse(TEST_WORKLOADS / "overrun.wl"), "tmpfs", 1),
                         (workloads.parse(TEST_WORKLOADS / "fails.wl"), "tmpfs", 1)])


def figures(outcome):
    return {(f.phase, f.lock, f.metric): f.value for f in outcome.numbers.figures}


def test_captured_boot_reads_again_step_by_step():
    record = runner.read_boot(CAPTURED, STEPS, MAINLINE)
    assert [s.status for s in record.steps] == ["ok", "ok", "workload-error", "workload-error"]
    assert record.status == "workload-error"
    assert record.damaged == () and record.reports == ()
    overrun, fails = record.steps[2].numbers, record.steps[3].numbers
    assert overrun.timed_out and overrun.exit_code == 137
    assert overrun.error == "killed at its 3s limit"
    assert not fails.timed_out and fails.exit_code == 3 and fails.error == "no such thing"
    assert all(s.numbers.lockdep_on is True for s in record.steps)
    # The host's windows of each step came back from host.json.
    assert all(s.wall_s and s.wall_s > 0 for s in record.steps)


def test_exact_lock_counts_of_the_captured_boot():
    record = runner.read_boot(CAPTURED, STEPS, MAINLINE)
    tmpfs, ext4 = figures(record.steps[0]), figures(record.steps[1])
    phase = "create-unlink"
    # docs/design.md section 6: tmpfs i_lock 8, sb list 2 per create+unlink;
    # ext4 takes the hash lock twice and i_lock 11 times.
    assert tmpfs[phase, "i_lock", "acquisitions_per_op"] == 8.0
    assert tmpfs[phase, "sb_list", "acquisitions_per_op"] == 2.0
    # tmpfs never hashes: lock_stat has no line for the hash lock, a measured zero.
    assert tmpfs[phase, "hash", "acquisitions_per_op"] == 0.0
    assert tmpfs[phase, "hash", "holdtime_max"] == 0.0
    assert ext4[phase, "hash", "acquisitions_per_op"] == 2.0
    assert ext4[phase, "i_lock", "acquisitions_per_op"] == 11.0
    assert tmpfs[phase, "", "ops"] == 2000 and tmpfs[phase, "", "throughput"] > 0


def test_a_guest_that_stopped_early_is_a_panic_and_its_last_steps_are_lost(tmp_path):
    raw = (CAPTURED / "results.raw").read_bytes()
    cut = raw[:raw.index(b"@@record s03.out")]
    folder = tmp_path / "boot"
    shutil.copytree(CAPTURED, folder)
    (folder / "results.raw").write_bytes(cut)
    record = runner.read_boot(folder, STEPS, MAINLINE)
    assert record.status == "panic"  # no 'done' record and no timeout
    assert [s.status for s in record.steps[:2]] == ["ok", "ok"]
    assert record.steps[2].status == "lost"  # it ended, but its status never arrived


def _encode(name: str, data: bytes) -> bytes:
    return (f"@@record {name} {len(data)} {hashlib.sha256(data).hexdigest()}\n".encode()
            + base64.encodebytes(gzip.compress(data)) + f"@@end {name}\n".encode())


def test_a_step_that_ends_with_lockdep_off_is_unchecked_not_ok(tmp_path):
    """Synthetic: s02's status record rewritten as if lockdep had switched itself off."""
    received = channel.parse((CAPTURED / "results.raw").read_bytes())
    raw = b""
    for rec in received.records:
        data = rec.data
        if rec.name == "s02.status":
            data = data.replace(b"debug_locks=1", b"debug_locks=0")
        raw += _encode(rec.name, data)
    folder = tmp_path / "boot"
    shutil.copytree(CAPTURED, folder)
    (folder / "results.raw").write_bytes(raw)
    record = runner.read_boot(folder, STEPS[:2], MAINLINE)
    assert [s.status for s in record.steps] == ["ok", "unchecked"]
    assert record.status == "unchecked"


def test_rows_are_derived_again_with_the_lock_order_of_today(tmp_path):
    """A stored cell holds no figures: a changed lock-order file changes its rows."""
    layout = Layout(repo=REPO_ROOT, build=tmp_path / "build", ccache=tmp_path / "cc",
                    results=tmp_path / "results")
    shutil.copytree(CAPTURED, layout.boot_dir("b1"))
    config = matrix.BootConfig("mainline", "debug", "tcg", 1, 1)
    image = KernelImage("mainline", "debug", "k", tmp_path)
    here = host.Machine("cpu", 2, "tcg")
    cell = matrix.Cell(config, CREATE, "tmpfs", 1,
                       matrix.cell_key(image, "g", config, CREATE, "tmpfs", 1, here), here.id)
    stored = cells.StoredCell(cell.label, "boots/b1", "s01", 0, 2.6, list(cell.history))
    cells.CellStore(layout).put(cell.key, stored)
    assert cells.CellStore(layout).get(cell.key) == stored

    def lock_roles(order):
        rows, edges, records = cells.derive(layout, [(cell, stored)], order)
        # The reused boot itself, for the manifest: its reports and damaged records count.
        assert [r.directory for r in records] == [layout.boot_dir("b1")]
        return ({r.lock for r in rows if r.metric == "acquisitions_per_op" and r.value},
                edges)

    roles, edges = lock_roles(MAINLINE)
    assert roles == {"i_lock", "sb_list"}
    assert edges and not MAINLINE.violations(edges)
    changed = tmp_path / "changed.lock-order"
    changed.write_text(lockorder.MAINLINE_FILE.read_text()
                       + "class global &sb->s_type->i_lock_key\n")
    roles_after, edges_after = lock_roles(lockorder.parse(changed))
    assert roles_after == {"global", "sb_list"}
    # The same edges now violate the changed order: conformance is derived again too.
    assert lockorder.parse(changed).violations(edges_after)


def test_a_cell_whose_boot_folder_is_gone_is_measured_again(tmp_path):
    layout = Layout(repo=REPO_ROOT, build=tmp_path / "build", ccache=tmp_path / "cc",
                    results=tmp_path / "results")
    store = cells.CellStore(layout)
    store.put("k1", cells.StoredCell("x", "boots/missing", "s01", 0, 1.0, []))
    assert store.get("k1") is None
    (layout.cells / "k2.json").write_text('{"label": "old", "rows": []}')  # format 1
    assert store.get("k2") is None


def test_steps_after_lockdep_went_off_are_unchecked_and_a_hung_task_is_a_hang(tmp_path):
    """The console of a real boot (the splat generator's bad-page+circular+hung-task
    capture): s01 taints the kernel (lockdep off), s02's circular dependency is never
    reported, s03 hangs a task. Its records are rebuilt here, claiming lockdep on, so
    only the console can tell."""
    folder = tmp_path / "boot"
    folder.mkdir()
    shutil.copy(REPO_ROOT / "harness" / "test_data" / "console" /
                "captured-splat-bad-page+circular+hung-task.log", folder / "console.log")
    # Each step delivered its declared output: a missing one is a workload-error.
    raw = b"".join(_encode(f"s0{i}.out", b"result phase=x ops=1 elapsed_ns=1 procs=1\n")
                   + _encode(f"s0{i}.status", b"exit=0 timedout=0 debug_locks=1\n")
                   for i in (1, 2, 3)) + _encode("done", b"ok\n")
    (folder / "results.raw").write_bytes(raw)
    runner.HostView(0, False, 30.0, 0.0, 5.0, ()).save(folder)
    steps = plan.make_steps([(workloads.parse(TEST_WORKLOADS / "fails.wl"), "tmpfs", 1)] * 3)
    record = runner.read_boot(folder, steps, MAINLINE)
    assert [s.status for s in record.steps] == ["warning", "unchecked", "hang"]
    assert record.status == "hang"


def test_idle_time_of_a_window_is_read_from_its_cpustat():
    # The CPUs' idle and I/O-wait ticks between the window's two /proc/stat lines:
    # the time the workers were blocked (issue 25's blocked time per operation).
    captures = REPO_ROOT / "harness" / "test_data" / "cpustat"
    assert measure.idle_seconds((captures / "tmpfs-create-unlink.cpustat").read_text()) == 0.0
    assert measure.idle_seconds((captures / "xfs-fstree-walk.cpustat").read_text()) == \
        pytest.approx(0.06)
    assert measure.idle_seconds("cpu  1 2 3\n") is None
