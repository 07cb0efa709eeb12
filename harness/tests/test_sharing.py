"""Sharing figures: bounces per role from lock_stat, hash table sizes from the console.

captured-mainline-debug-2cpu-tmpfs-unlink.lock_stat: the unlink window of
`python3 -m harness boot mainline --flavour debug --cpus 2 --workloads
default` (fstree on tmpfs, 2 workers, 2 vCPUs), 2026-12-03, files/s07.unlink.lock_stat.
"""

from pathlib import Path

import pytest

from harness import lockorder
from harness.boot import measure
from harness.parsers import hash_tables, lockstat

DATA = Path(__file__).resolve().parent.parent / "test_data"
MAINLINE = lockorder.parse(lockorder.MAINLINE_FILE)


def test_role_totals_sum_the_bounces_of_every_class_of_a_role():
    # captured-mainline-debug-ext4-unlink.lock_stat: inode_hash_lock 16 of 300
    # acquisitions bounced; the i_lock classes (#1 twice, plain) 0 + 194 + 0.
    dump = lockstat.parse((DATA / "lockstat" / "captured-mainline-debug-ext4-unlink.lock_stat")
                          .read_text())
    totals = {t.role: t for t in MAINLINE.totals_by_role(dump.classes)}
    assert (totals["hash"].acq_bounces, totals["hash"].acquisitions) == (16, 300)
    assert (totals["sb_list"].acq_bounces, totals["sb_list"].acquisitions) == (17, 303)
    i_lock = [c for c in dump.classes if MAINLINE.role_of(c.name) == "i_lock"]
    assert totals["i_lock"].acq_bounces == sum(c.acq_bounces for c in i_lock) > 0
    assert totals["i_lock"].con_bounces == sum(c.con_bounces for c in i_lock)


def test_lock_figures_carry_bounces_and_bounces_per_op():
    role = lockorder.RoleTotals("sb_list", ("&s->s_inode_list_lock",), 400, 4, 10.0, 2.0, 1.0,
                             1.0, acq_bounces=100, con_bounces=3)
    figures = {f.metric: f.value for f in measure._lock_figures("create", role, 200)}
    assert figures["acq_bounces"] == 100 and figures["con_bounces"] == 3
    assert figures["acq_bounces_per_op"] == 0.5 and figures["con_bounces_per_op"] == 0.015


def test_hash_table_sizes_from_a_captured_console():
    console = (DATA / "console" / "captured-mainline-debug-clean-boot.log").read_text(
        errors="replace")
    tables = hash_tables.parse(console)
    assert tables["Inode-cache"] == 131072 and tables["Dentry cache"] == 262144
    assert tables["futex"] == 512


def test_hash_table_lines_without_timestamps_and_with_crlf():
    text = ("Inode-cache hash table entries: 65536 (order: 7, 524288 bytes, linear)\r\n"
            "random line: entries: 5\r\n")
    assert hash_tables.parse(text) == {"Inode-cache": 65536}


def test_a_two_cpu_window_shows_which_roles_the_workers_share():
    path = DATA / "lockstat" / "captured-mainline-debug-2cpu-tmpfs-unlink.lock_stat"
    dump = lockstat.parse(path.read_text())
    totals = {t.role: t for t in MAINLINE.totals_by_role(dump.classes)}
    # The per-superblock list is shared by both workers: 296 of its 4008
    # acquisitions came after the other vCPU's. The per-inode i_lock bounced
    # on 2070 of 20040, about one unlink in two (5 i_lock acquisitions each):
    # consistent with a worker unlinking on the other vCPU than the one it
    # created its files on, not with workers sharing inodes.
    assert (totals["sb_list"].acq_bounces, totals["sb_list"].acquisitions) == (296, 4008)
    assert (totals["sb_list"].con_bounces, totals["sb_list"].contentions) == (4, 4)
    assert (totals["i_lock"].acq_bounces, totals["i_lock"].acquisitions) == (2070, 20040)


def test_a_role_the_window_never_took_is_a_zero_and_a_role_the_design_lacks_is_absent():
    path = DATA / "lockstat" / "captured-mainline-debug-2cpu-tmpfs-unlink.lock_stat"
    dump = lockstat.parse(path.read_text())
    totals = {t.role: t for t in MAINLINE.totals_by_role(dump.classes)}
    # tmpfs hashes no inode: the window has no inode_hash_lock line.
    assert not [c for c in dump.classes if MAINLINE.role_of(c.name) == "hash"]
    assert (totals["hash"].acquisitions, totals["hash"].classes) == (0, ())
    assert totals["hash"].holdtime_avg_us == 0.0
    assert "global" not in totals  # 6.1 has no global inode lock


def test_a_roles_line_names_the_final_kernels_roles(tmp_path):
    order = tmp_path / "x.lock-order"
    order.write_text("roles hash i_lock\nhash -> i_lock\nglobal -> hash  # bisection only\n")
    assert lockorder.parse(order).roles == ("hash", "i_lock")
    order.write_text("hash -> i_lock\nglobal -> hash\n")
    assert lockorder.parse(order).roles == ("global", "hash", "i_lock")
    order.write_text("roles hash inode\n")
    with pytest.raises(lockorder.LockOrderError, match=r"x.lock-order:1: unknown role 'inode'"):
        lockorder.parse(order)


def test_shared_and_per_inode_figures_split_the_roles_of_a_captured_window():
    dump = lockstat.parse((DATA / "lockstat" / "captured-mainline-debug-ext4-unlink.lock_stat")
                          .read_text())
    roles = MAINLINE.totals_by_role(dump.classes)
    figures = {f.metric: f for f in measure._sharing_figures("unlink", roles, 100)}
    by_role = {r.role: r for r in roles}
    shared = sum(by_role[r].acquisitions for r in ("hash", "sb_list", "lru", "wb"))
    assert figures["shared.acquisitions"].value == shared > 0
    assert figures["per-inode.acquisitions"].value == by_role["i_lock"].acquisitions > 0
    assert figures["per-inode.acquisitions_per_op"].value == by_role["i_lock"].acquisitions / 100
    assert figures["shared.waittime_per_op"].unit == "us/op"
    assert all(f.lock == "" for f in figures.values())  # no role: never summed with roles
    assert not any("holdtime" in m for m in figures)  # lockdep-inflated: left out
