"""lockdep_graph.parse against /proc/lockdep.

captured-*: a real /proc/lockdep of the 6.1 debug kernel (PROVE_LOCKING, no
DEBUG_LOCKDEP; keys print as "(____ptrval____)").
synthetic-*: printed with l_show()'s formats (lockdep_proc.c, 6.1.192), with
and without the CONFIG_DEBUG_LOCKDEP "OPS:" field.
"""

from pathlib import Path

from harness.parsers import lockdep_graph

DATA = Path(__file__).resolve().parent.parent / "test_data" / "lockdep"
CAPTURED = DATA / "captured-mainline-debug.lockdep"

SYNTHETIC_EDGES = (
    ("&type->i_mutex_dir_key#3", "&sb->s_type->i_lock_key#3"),
    ("&type->i_mutex_dir_key#3", "&s->s_inode_list_lock"),
    ("&type->i_mutex_dir_key#3", "rcu_read_lock"),
    ("&sb->s_type->i_lock_key#3", "&lru->node[i].lock"),
    ("inode_hash_lock", "&sb->s_type->i_lock_key#3"),
    ("&type->i_mutex_dir_key#3/1", "&type->i_mutex_dir_key#3"),
    ("(wq_completion)events", "(work_completion)(&(&wb->dwork)->work)"),
)


def test_synthetic_edges_in_file_order():
    assert lockdep_graph.parse((DATA / "synthetic-lockdep.txt").read_text()) == SYNTHETIC_EDGES


def test_debug_lockdep_ops_field_does_not_change_the_edges():
    text = (DATA / "synthetic-lockdep-debug_lockdep.txt").read_text()
    assert " OPS:" in text
    assert lockdep_graph.parse(text) == SYNTHETIC_EDGES


def test_edges_are_deduplicated_and_crlf_is_accepted():
    text = (DATA / "synthetic-lockdep.txt").read_text()
    assert lockdep_graph.parse((text + text).replace("\n", "\r\n")) == SYNTHETIC_EDGES


def test_without_prove_locking_there_are_no_edges():
    # l_show() without CONFIG_PROVE_LOCKING: "KEY: NAME" and no "->" lines.
    text = "all lock classes:\n00000000a1b2c3d4: inode_hash_lock\n00000000a1b2c3e0: rcu_read_lock\n"
    assert lockdep_graph.parse(text) == ()


def test_captured_edge_count_and_first_edges():
    edges = lockdep_graph.parse(CAPTURED.read_text())
    assert len(edges) == 1157  # every " -> [...]" line; none repeats
    assert edges[:3] == (("console_lock", "resource_lock"),
                         ("console_lock", "&c->lock"),
                         ("console_lock", "kbd_event_lock"))


def test_captured_icache_edges():
    edges = lockdep_graph.parse(CAPTURED.read_text())
    after_hash = [b for a, b in edges if a == "inode_hash_lock"]
    assert after_hash == ["&sb->s_type->i_lock_key#3", "&sb->s_type->i_lock_key#13",
                          "&s->s_inode_list_lock", "&sb->s_type->i_lock_key#14"]
    assert [b for a, b in edges if a == "&sb->s_type->i_lock_key#3"] == [
        "&dentry->d_lock", "&xa->xa_lock#3"]
    # subclass and version suffixes are part of the name
    assert ("&type->s_umount_key#3/1", "&sb->s_type->i_lock_key#3") in edges
