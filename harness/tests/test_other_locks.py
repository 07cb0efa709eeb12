"""The lock classes outside the icache roles that a case's debug boots see."""

import pytest

from harness.analysis import other_locks
from harness.tests.test_channel import encode

HEADER = "lock_stat version 0.4\n" + "-" * 40 + "\n" + (
    "class name    con-bounces    contentions   waittime-min   waittime-max waittime-total"
    "   waittime-avg    acq-bounces   acquisitions   holdtime-min   holdtime-max "
    "holdtime-total   holdtime-avg\n") + "-" * 40 + "\n\n"


def _row(name: str, contentions: int, acq_bounces: int, acquisitions: int,
         hold_total_us: float) -> str:
    return (f"{name:>40s}: {0:13d} {contentions:14d} {0:14.2f} {0:14.2f} {0:14.2f} {0:14.2f} "
            f"{acq_bounces:14d} {acquisitions:14d} {0:14.2f} {0:14.2f} {hold_total_us:14.2f} "
            f"{hold_total_us / acquisitions:14.2f}\n")


def _boot(tmp_path, name: str, procs: int, rows: str, ops: int):
    boot = tmp_path / name
    boot.mkdir()
    (boot / "plan.sh").write_text(
        "run_step s01 tmpfs none 60 program 1 'other -p 1'\n# other/tmpfs/p1\n"
        f"run_step s02 xfs /dev/vdb 300 program {procs} 'fstree -p {procs}'\n"
        f"# fstree/xfs/p{procs}\n")
    (boot / "results.raw").write_bytes(
        encode("s02.out", f"result phase=create ops={ops} elapsed_ns=1\n".encode())
        + encode("s02.create.lock_stat", (HEADER + rows).encode()))
    return boot


def test_a_class_per_operation_and_whether_the_two_cpus_shared_it(tmp_path):
    one = _boot(tmp_path, "c1", 1,
                _row("base_crng.lock", 0, 0, 4000, 40000.0)
                + _row("&s->s_inode_list_lock", 0, 0, 2000, 1600.0)
                + _row("&xfs_dir_ilock_class/5", 0, 0, 2000, 300000.0), 2000)
    two = _boot(tmp_path, "c2", 2,
                _row("base_crng.lock", 400, 4800, 8000, 80000.0)
                + _row("&s->s_inode_list_lock", 8, 3200, 4000, 3200.0)
                + _row("&xfs_dir_ilock_class/5", 0, 0, 4000, 600000.0), 4000)
    found = {f.name: f for f in other_locks.figures(one, two, "fstree", "xfs", "create")}
    crng, sb, dirlock = (found[n] for n in ("base_crng.lock", "&s->s_inode_list_lock",
                                            "&xfs_dir_ilock_class/5"))
    assert crng.role is None and crng.acquisitions_per_op == 2.0
    assert crng.hold_us_per_op == 20.0 and crng.bounce_share == 0.6
    assert crng.contentions_per_op == 0.1
    assert sb.role == "sb_list" and sb.bounce_share == 0.8
    # A per-directory lock of private directories never bounces.
    assert dirlock.bounce_share == 0.0 and dirlock.exclusive
    # Most hold time per operation first.
    assert list(found) == ["&xfs_dir_ilock_class/5", "base_crng.lock",
                           "&s->s_inode_list_lock"]
    table = other_locks.table(list(found.values()), 0.2)
    assert any(line.startswith("| base_crng.lock | exclusive | - | 2.00 |") for line in table)


def test_a_case_the_boot_did_not_run_is_an_error(tmp_path):
    one = _boot(tmp_path, "c1", 1, _row("x", 0, 0, 1, 1.0), 1)
    with pytest.raises(other_locks.OtherLocksError, match="no step of fstree/ext4"):
        other_locks.figures(one, one, "fstree", "ext4", "create")
