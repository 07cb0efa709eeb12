"""What each /proc/icache_retries counter counts, and of which kind it is.

Both series export their lock-order price through /proc/icache_retries in
the debug kernels (one "name count" line per counter), but the counters are
not of one kind and must never be summed across kinds:

    trylock-retry  piggin: a spin_trylock of i_lock under a list or bucket lock
                   failed; the walker dropped the list lock, relaxed and tried
                   again (the design's loops)
    skip           a failed trylock of i_lock whose inode was passed over, with
                   no retry (6.1's own LRU walk, kept by chinner)
    relock         chinner: a lock dropped and re-taken in the lock order,
                   whether or not anything changed meanwhile (the design's
                   structural price, paid on every pass)
    re-check       chinner: after a relock or a wait the state had changed and
                   the operation went round again
    wait           a sleep until something else finished (a grace period, an
                   inode being freed), then the lookup or the walk again
    restart        a walk that dropped its lock to reschedule and began again

The names come from the series' patches (piggin 0001 and later,
include/linux/icache_retry.h; chinner 0007, fs/internal.h);
harness/tests/test_retries.py holds this table to the counters the
patches define, so a counter added to a series without a line here fails.
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("trylock-retry", "skip", "relock", "re-check", "wait", "restart")


@dataclass(frozen=True)
class Counter:
    name: str  # as /proc/icache_retries prints it
    series: str  # the series that defines it
    kind: str  # one of KINDS
    counts: str  # what one count is


COUNTERS = {c.name: c for c in (
    # piggin: i_lock outermost, walkers trylock it under their list lock
    Counter("hash_find", "piggin", "trylock-retry",
            "find_inode (ilookup5, iget5_locked, inode_insert5: tmpfs handles, NFS): a trylock "
            "of the i_lock of an inode of the same superblock in the chain failed under the "
            "bucket lock; the whole lookup started again"),
    Counter("hash_find_fast", "piggin", "trylock-retry",
            "find_inode_fast (iget_locked, ilookup: ext4): the trylock of the matching inode's "
            "i_lock failed under the bucket lock; the lookup started again"),
    Counter("hash_insert", "piggin", "trylock-retry",
            "iget_locked, inode_insert5, insert_inode_locked: a trylock of an inode of the same "
            "number in the chain failed while inserting; both locks dropped, insert again"),
    Counter("lru_isolate", "piggin", "trylock-retry",
            "inode_lru_isolate: the trylock of an LRU inode's i_lock failed under the LRU lock; "
            "the LRU lock was dropped and the walk retried (LRU_RETRY)"),
    Counter("wb_queue_io", "piggin", "trylock-retry",
            "queue_io (move_expired_inodes): the trylock of a dirty inode's i_lock failed under "
            "wb->list_lock; the list lock was dropped and the tail looked at again"),
    Counter("wb_sb_inodes", "piggin", "trylock-retry",
            "writeback_sb_inodes, the b_io walk: the trylock of an inode's i_lock failed under "
            "wb->list_lock; dropped and looked at the tail again"),
    Counter("wb_redirty", "piggin", "trylock-retry",
            "redirty_tail_trylock (an inode of another superblock on b_io): the trylock failed; "
            "list lock dropped and re-taken, the list looked at again"),
    Counter("wb_wait_more_io", "piggin", "trylock-retry",
            "wb_writeback's wait on b_more_io: the trylock of the inode to wait on failed; "
            "dropped and looked at the list again"),
    Counter("wb_switch", "piggin", "trylock-retry",
            "cgroup writeback switch (process_inode_switch_wbs): the trylock failed, retried"),
    Counter("wb_switch_prepare", "piggin", "trylock-retry",
            "cgroup writeback switch (isw_prepare_wbs_switch): the trylock failed, retried"),
    Counter("sb_list_gp_wait", "piggin", "wait",
            "inode_init_always: an inode that left its sb list less than an RCU grace period "
            "ago (XFS's recycle) was re-initialised, so the caller slept for a grace period "
            "(synchronize_rcu) first: the price of walking the sb lists under RCU"),
    *(Counter(f"sb_walk_{site}", "piggin", "trylock-retry",
              f"{function}, at the bisection points before piggin's RCU walk (patch 9): the "
              "trylock of an inode's i_lock failed under the sb list lock; the walk dropped "
              "its locks and resumed after the last inode it took")
      for site, function in (("evict", "evict_inodes"), ("invalidate", "invalidate_inodes"),
                             ("drop_pagecache", "drop_pagecache_sb"),
                             ("fsnotify", "fsnotify_unmount_inodes"),
                             ("dquot", "add_dquot_ref"), ("landlock", "hook_sb_delete"),
                             ("bdev", "sync_bdevs"))),
    Counter("iput_global", "piggin", "trylock-retry",
            "iput's final drop at the bisection points that still have base's global lock: "
            "the trylock of inode_cache_lock failed, retried"),
    # chinner: i_lock innermost, drop and re-take
    Counter("lru_isolate_skip", "chinner", "skip",
            "inode_lru_isolate: the trylock of an LRU inode's i_lock failed; the inode was "
            "skipped (LRU_SKIP), as in 6.1"),
    Counter("lru_isolate_retry", "chinner", "re-check",
            "inode_lru_isolate: the inode had pages or buffers; both locks were dropped to "
            "free them and the walk retried (LRU_RETRY), as in 6.1"),
    Counter("hash_wait_freeing", "chinner", "wait",
            "find_inode, find_inode_fast: the match was being freed; slept until it was gone "
            "and searched the chain again"),
    Counter("hash_insert_race", "chinner", "re-check",
            "iget_locked, inode_insert5: another CPU inserted the same inode while the hash "
            "lock was dropped to allocate; its inode is used instead"),
    Counter("hash_unhashed_retry", "chinner", "re-check",
            "a lookup waited for a new inode (I_NEW) that was then unhashed; looked up again"),
    Counter("iput_final_relock", "chinner", "relock",
            "iput_final: i_lock dropped around write_inode_now (I_WILL_FREE) and re-taken"),
    Counter("sb_walk_restart", "chinner", "restart",
            "evict_inodes, invalidate_inodes: the walk dropped the sb list lock to reschedule "
            "and began again from the head"),
    Counter("wb_list_relock", "chinner", "relock",
            "locked_inode_to_wb_and_lock_list: i_lock dropped and wb->list_lock taken "
            "(list lock before i_lock), on every call"),
    Counter("recheck_wb_changed", "chinner", "re-check",
            "locked_inode_to_wb_and_lock_list: after the relock the inode had moved to another "
            "wb; i_lock taken again and the loop went round"),
)}


def counter(name: str) -> Counter | None:
    """The description of a counter, None for one this table does not know."""
    return COUNTERS.get(name)


def unit_of(name: str) -> str:
    """What a count of this counter is, for the tidy table: 'trylock-retry', ... or
    'count' for a counter this table does not know."""
    known = COUNTERS.get(name)
    return known.kind if known else "count"
