"""lockstat.parse against /proc/lock_stat dumps.

captured-*: a real dump from the 6.1 debug kernel (mainline, ext4 unlink).
synthetic-*: printed by a scratch generator with seq_header()/seq_stats()'s
formats from kernel/locking/lockdep_proc.c (6.1.192), for numbers chosen
here (the -disabled-crlf one adds the debug_locks warning and \r\n).
"""

import json
from pathlib import Path

import pytest

from harness.parsers import lockstat

DATA = Path(__file__).resolve().parent.parent / "test_data" / "lockstat"
CAPTURED = DATA / "captured-mainline-debug-ext4-unlink.lock_stat"


def read(name: str) -> str:
    with open(DATA / name, newline="") as f:  # keep \r\n as captured
        return f.read()


def rows(stat, name):
    return [c for c in stat.classes if c.name == name]


# ---------------------------------------------------------------- synthetic

def test_synthetic_classes_in_dump_order():
    stat = lockstat.parse(read("synthetic-lock_stat.txt"))
    assert stat.valid
    assert [(c.name, c.rw) for c in stat.classes] == [
        ("&sb->s_type->i_lock_key#3", None),
        ("&type->i_mutex_dir_key#2/1", "W"),
        ("&type->i_mutex_dir_key#2/1", "R"),
        ("inode_hash_lock", None),
        ("(wq_completion)events", None),
        ("rcu_read_lock", "R"),  # read side only: a lone -R row
        ("&lru lock with spaces (test)", None),
    ]


def test_synthetic_every_column_of_a_row():
    (i_lock,) = rows(lockstat.parse(read("synthetic-lock_stat.txt")), "&sb->s_type->i_lock_key#3")
    assert (i_lock.con_bounces, i_lock.contentions) == (37, 52)
    assert (i_lock.waittime_min_us, i_lock.waittime_max_us,
            i_lock.waittime_total_us, i_lock.waittime_avg_us) == (0.12, 48.21, 391.77, 7.53)
    assert (i_lock.acq_bounces, i_lock.acquisitions) == (2104, 88011)
    assert (i_lock.holdtime_min_us, i_lock.holdtime_max_us,
            i_lock.holdtime_total_us, i_lock.holdtime_avg_us) == (0.10, 51.38, 9913.00, 0.11)
    assert i_lock.contention_points == ((31, "iput+0x1a4/0x5c0"),
                                        (21, "inode_sb_list_add+0x2c/0x90"))
    assert i_lock.contending_points == ((40, "iput+0x1a4/0x5c0"),
                                        (12, "evict+0xa8/0x260"))


def test_synthetic_rw_rows_share_the_call_sites_of_their_class():
    w, r = rows(lockstat.parse(read("synthetic-lock_stat.txt")), "&type->i_mutex_dir_key#2/1")
    assert (w.rw, w.contentions, w.acquisitions, w.waittime_max_us) == ("W", 9, 1200, 880.12)
    assert (r.rw, r.contentions, r.acquisitions, r.holdtime_total_us) == ("R", 3, 5012, 3011.0)
    assert w.contention_points == r.contention_points == (
        (8, "filename_create+0x9a/0x180"), (4, "lookup_slow+0x28/0x50"))
    assert w.contending_points[1] == (1, "do_unlinkat+0x12e/0x2f0")


def test_uncontended_classes_have_no_call_sites():
    stat = lockstat.parse(read("synthetic-lock_stat.txt"))
    (hash_lock,) = rows(stat, "inode_hash_lock")
    assert hash_lock.contention_points == hash_lock.contending_points == ()
    assert (hash_lock.contentions, hash_lock.acquisitions) == (0, 4410)


def test_disabled_dump_with_crlf_is_parsed_but_void():
    stat = lockstat.parse(read("synthetic-lock_stat-disabled-crlf.txt"))
    assert "\r\n" in read("synthetic-lock_stat-disabled-crlf.txt")
    assert not stat.valid
    assert len(stat.classes) == 7
    assert rows(stat, "rcu_read_lock")[0].acquisitions == 690125


@pytest.mark.parametrize("text", [
    "",
    "cat: can't open '/proc/lock_stat': No such file or directory\n",
    "lock_stat version 0.3\n" + "-" * 221 + "\n",  # another column layout
])
def test_not_a_dump(text):
    assert lockstat.parse(text) == lockstat.LockStat(valid=False, classes=())


def test_two_dumps_are_refused():
    text = read("synthetic-lock_stat.txt")
    with pytest.raises(ValueError):
        lockstat.parse(text + text)


def test_as_json_has_exactly_the_agreed_fields():
    data = lockstat.parse(read("synthetic-lock_stat.txt")).as_json()
    assert set(data) == {"valid", "classes"}
    first = data["classes"][0]
    assert list(first) == [
        "name", "rw", "con_bounces", "contentions", "waittime_min_us",
        "waittime_max_us", "waittime_total_us", "waittime_avg_us", "acq_bounces",
        "acquisitions", "holdtime_min_us", "holdtime_max_us", "holdtime_total_us",
        "holdtime_avg_us"]
    assert isinstance(first["contentions"], int) and isinstance(first["waittime_min_us"], float)
    assert json.loads(json.dumps(data)) == data


# ----------------------------------------------------------------- captured

def test_captured_dump_row_count_and_validity():
    stat = lockstat.parse(CAPTURED.read_text())
    assert stat.valid
    assert len(stat.classes) == 121  # every "NAME[-W|-R]:" row of the file


def test_captured_icache_locks():
    stat = lockstat.parse(CAPTURED.read_text())
    i_locks = [c for c in stat.classes if c.name.startswith("&sb->s_type->i_lock_key")]
    assert i_locks and all(c.acquisitions > 0 for c in i_locks)
    (plain,) = rows(stat, "&sb->s_type->i_lock_key")
    assert (plain.acquisitions, plain.holdtime_total_us, plain.holdtime_max_us) == (3, 17.55, 10.24)
    (hash_lock,) = rows(stat, "inode_hash_lock")
    assert (hash_lock.acq_bounces, hash_lock.acquisitions, hash_lock.holdtime_max_us) == (16, 300, 379.41)
    (sb_list,) = rows(stat, "&s->s_inode_list_lock")
    assert sb_list.acquisitions == 303


def test_captured_name_versions_above_9_are_cut_to_one_digit():
    # seq_stats() prints "#%d" into 3 bytes: versions 10..19 all read "#1".
    # /proc/lockdep of the same boot has i_lock_key#13 and #14.
    stat = lockstat.parse(CAPTURED.read_text())
    same_name = rows(stat, "&sb->s_type->i_lock_key#1")
    assert [c.acquisitions for c in same_name] == [6, 1800]


def test_captured_contention_points_with_unhashed_ptrval():
    stat = lockstat.parse(CAPTURED.read_text())
    pi_lock = stat.classes[0]  # rows are sorted by contentions
    assert (pi_lock.name, pi_lock.contentions, pi_lock.acquisitions) == ("&p->pi_lock", 115, 2408)
    assert pi_lock.contention_points == ((115, "try_to_wake_up+0x42/0x3a0"),)
    assert pi_lock.contending_points == ((115, "try_to_wake_up+0x42/0x3a0"),)
    (rq,) = rows(stat, "&rq->__lock")
    assert len(rq.contention_points) == 4 and len(rq.contending_points) == 3


def test_captured_rw_classes():
    stat = lockstat.parse(CAPTURED.read_text())
    assert [(c.rw, c.acquisitions) for c in rows(stat, "tasklist_lock")] == [("W", 903), ("R", 901)]
    assert [(c.rw, c.acquisitions) for c in rows(stat, "&mm->mmap_lock")] == [("W", 617), ("R", 19762)]


def test_captured_dump_read_through_a_serial_console():
    text = CAPTURED.read_text()
    console = ("/ # cat /proc/lock_stat\r\n" + text.replace("\n", "\r\n")
               + "[   12.000001] random: crng init done\r\n/ # ")
    assert lockstat.parse(console) == lockstat.parse(text)
