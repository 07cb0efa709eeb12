"""Cache lines per critical section, counted by hand from the 6.1 source.

The tcg-cs plugin measures what every critical section moves (per role:
cs_lines_from_previous_per_acq W, cs_lockword_line_written_share s,
cs_cold_lines_per_acq C). A run measured before the plugin counted lines
has none of those rows; these counts, read off the source, stand in for
them, and every output that uses them says so. They describe the default
workloads' pattern: short lists (a worker adds an inode and removes it soon
after), hash chains almost empty in the guest's table.

W: data lines an earlier critical section of the same lock instance wrote
last (a transfer each when that section ran on another CPU); the lock
word's own line is not among them (it comes with the acquisition).
s: the share of sections that write data on the lock word's line.
C: lines nobody touched for a long stretch (a memory access each).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Lines:
    from_previous: float  # W
    lockword_written: float  # s
    cold: float  # C
    why: str


SB_LIST = Lines(1.5, 0.75, 0.0, (
    "inode_sb_list_add() (fs/inode.c) list_add()s to sb->s_inodes, which shares the lock's "
    "line (include/linux/fs.h: s_inodes follows s_inode_list_lock "
    "____cacheline_aligned_in_smp), and writes the old first entry's i_sb_list, which the "
    "previous add wrote: W 1, s 1; inode_sb_list_del()'s list_del_init() writes both "
    "neighbours, recent entries or the head in a short list: W 2, s 1/2; the mean of one "
    "of each"))
GLOBAL_HASH = Lines(0.0, 0.0, 1.0, (
    "inode_hash_lock has a line of its own (fs/inode.c, __cacheline_aligned_in_smp); an "
    "insert or removal (hlist_add_head_rcu, hlist_del_init_rcu) writes a bucket of a "
    "131072-bucket table that the previous holder almost never touched: no line from it, "
    "the bucket cold"))
BUCKET_HASH = Lines(0.0, 0.5, 1.0, (
    "hlist_bl: the lock is bit 0 of the bucket's head pointer (include/linux/list_bl.h, "
    "hlist_bl_lock); an insert writes the head (s 1), a removal writes it when the inode "
    "is first in its chain, a lookup only reads it; the bucket is cold"))
LRU = Lines(1.5, 1.0, 0.0, (
    "list_lru_add()/list_lru_del() (mm/list_lru.c): the list head and nr_items share the "
    "lock's line (struct list_lru_node, ____cacheline_aligned_in_smp): s 1; an add at the "
    "tail writes the last entry, which the previous add wrote (W 1), a del both neighbours "
    "(W 2)"))
I_LOCK = Lines(1.0, 0.0, 0.0, (
    "per inode (include/linux/fs.h struct inode): the sections change i_state, a line the "
    "previous holder wrote; it matters only where workers share inodes"))
I_LOCK_REFS = Lines(2.0, 0.0, 0.0, (
    "per inode: piggin's sections write i_refs (the former i_count) besides i_state, two "
    "lines the previous holder wrote; it matters only where workers share inodes"))
WB = Lines(1.0, 0.5, 0.0, (
    "struct bdi_writeback (include/linux/backing-dev-defs.h): list_lock shares its line "
    "with b_more_io and b_dirty_time; a list move writes one entry the previous holder "
    "wrote"))
PER_CPU_LIST = Lines(0.0, 1.0, 0.0, (
    "a per-CPU list taken on the local CPU: its lines stay in that CPU's cache"))
GLOBAL_LOCK = Lines(2.5, 0.0, 1.0, (
    "base's inode_cache_lock holds the sb list and hash operations (the sb list's W 1.5), "
    "and i_state (W 1), and a cold hash bucket"))

SOURCE_LINES: dict[tuple[str, str], Lines] = {
    ("mainline", "sb_list"): SB_LIST, ("mainline", "hash"): GLOBAL_HASH,
    ("mainline", "lru"): LRU, ("mainline", "i_lock"): I_LOCK, ("mainline", "wb"): WB,
    ("base", "global"): GLOBAL_LOCK, ("base", "sb_list"): SB_LIST,
    ("base", "hash"): GLOBAL_HASH, ("base", "lru"): LRU, ("base", "i_lock"): I_LOCK,
    ("base", "wb"): WB,
    ("chinner", "hash"): BUCKET_HASH, ("chinner", "sb_list"): PER_CPU_LIST,
    ("chinner", "lru"): LRU, ("chinner", "i_lock"): I_LOCK, ("chinner", "wb"): WB,
    ("piggin", "hash"): BUCKET_HASH, ("piggin", "sb_list"): PER_CPU_LIST,
    ("piggin", "lru"): LRU, ("piggin", "i_lock"): I_LOCK_REFS, ("piggin", "wb"): WB,
}


def lines_for(kernel: str, role: str) -> Lines | None:
    """The counts of a final kernel's role; None for bisection points and unknown roles
    (their designs differ from the final kernel's)."""
    return SOURCE_LINES.get((kernel, role))
