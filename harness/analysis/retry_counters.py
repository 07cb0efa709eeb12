"""What each /proc/icache_retries counter counts, read from the series that define it.

The two series count different things under one file name. piggin's
counters (series-piggin 0001, added to by 0003, 0005, 0006, 0009) count
failed trylocks after which a walker or lookup dropped its locks and tried
again, plus one wait for an RCU grace period. chinner's (series-chinner
0007) count every drop and re-take of a lock whether or not anything had
changed, re-checks that did find a change, trylocks that skipped an inode,
and sleeps on an inode being freed. A count of one kind is not a count of
another: the report never adds them up.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.kernels import series

# Kinds, in the order the report lists them: what one increment means.
# The kinds' names are those of the tidy rows' units (boot/measure.py: a counter's
# rows have unit "trylock-retry", per op "trylock-retry per open").
KINDS = {
    "trylock-retry": "a trylock failed; the locks held dropped, the walk or lookup retried",
    "skip": "a trylock failed; the inode was skipped, nothing retried",
    "relock": "a lock dropped and re-taken, counted every time, changed or not",
    "re-check": "after a lock was dropped the state had changed, or had to be made to "
                "change; the operation went round again",
    "wait": "the task slept until something else finished",
    "ns-waited": "nanoseconds the task slept in the waits counted beside it",
    "restart": "a walk dropped its lock to reschedule and began again from the head",
    "unknown": "not described here: read the series' patch that adds it",
}


@dataclass(frozen=True)
class Counter:
    name: str
    series: str
    kind: str
    what: str  # the site, in a few words, from the patch that adds the counter


COUNTERS = {c.name: c for c in [
    # series-piggin: trylock loops where i_lock nests outside a list lock
    Counter("hash_find", "piggin", "trylock-retry",
            "find_inode() (ilookup5_nowait and iget5 lookups): a same-sb inode of the hash "
            "chain was busy, the lookup restarted"),
    Counter("hash_find_fast", "piggin", "trylock-retry",
            "find_inode_fast() (ilookup, iget_locked): a same-sb inode of the chain was busy, "
            "the lookup restarted"),
    Counter("hash_insert", "piggin", "trylock-retry",
            "iget_locked(), inode_insert5(), insert_inode_locked(): a busy chain inode, the "
            "insert restarted"),
    Counter("lru_isolate", "piggin", "trylock-retry",
            "inode_lru_isolate(): i_lock busy under the LRU lock; locks dropped, the walk "
            "retried"),
    Counter("wb_queue_io", "piggin", "trylock-retry",
            "queue_io (move_expired_inodes): i_lock busy under wb->list_lock, backed off"),
    Counter("wb_sb_inodes", "piggin", "trylock-retry",
            "writeback_sb_inodes(), the b_io walk: i_lock busy, backed off"),
    Counter("wb_redirty", "piggin", "trylock-retry",
            "redirty_tail_trylock(): i_lock busy, list lock dropped and re-taken"),
    Counter("wb_wait_more_io", "piggin", "trylock-retry",
            "wb_writeback(), the wait on b_more_io: i_lock busy, backed off"),
    Counter("wb_switch", "piggin", "trylock-retry",
            "process_inode_switch_wbs() (cgroup writeback): i_lock busy, retried"),
    Counter("wb_switch_prepare", "piggin", "trylock-retry",
            "isw_prepare_wbs_switch() (cgroup writeback): i_lock busy, retried"),
    Counter("iput_global", "piggin", "trylock-retry",
            "iput(), bisection points piggin@4-6 only: the global lock busy at the final drop"),
    Counter("sb_list_gp_wait", "piggin", "wait",
            "inode_init_always(): an inode that left its sb list (XFS's recycle) waited "
            "synchronously for an RCU grace period before joining one again (piggin 0011: "
            "only if a walk of that sb's list was running when it left)"),
    Counter("sb_list_gp_wait_ns", "piggin", "ns-waited",
            "inode_init_always(): the time the sb_list_gp_wait waits took"),
    *[Counter(f"sb_walk_{site}", "piggin", "trylock-retry",
              f"{fn}: i_lock busy under the sb list lock, backed off (piggin@2-8 only; "
              "the RCU walk of 0009 removes it)")
      for site, fn in (("evict", "evict_inodes()"), ("invalidate", "invalidate_inodes()"),
                       ("drop_pagecache", "drop_pagecache_sb()"),
                       ("fsnotify", "fsnotify_unmount_inodes()"), ("dquot", "add_dquot_ref()"),
                       ("landlock", "hook_sb_delete()"), ("bdev", "sync_bdevs()"))],
    # series-chinner 0007: drop and re-take, re-checks, skips and waits
    Counter("wb_list_relock", "chinner", "relock",
            "locked_inode_to_wb_and_lock_list(): i_lock dropped to take wb->list_lock, which "
            "nests outside it"),
    Counter("recheck_wb_changed", "chinner", "re-check",
            "the same with cgroup writeback: the inode's wb changed while i_lock was dropped"),
    Counter("iput_final_relock", "chinner", "relock",
            "iput_final(): i_lock dropped for write_inode_now() and re-taken"),
    Counter("lru_isolate_retry", "chinner", "re-check",
            "inode_lru_isolate(): LRU lock and i_lock dropped to strip an inode's pages, the "
            "walk retried"),
    Counter("sb_walk_restart", "chinner", "restart",
            "evict_inodes(), invalidate_inodes(): the sb list lock dropped to reschedule, the "
            "walk restarted"),
    Counter("lru_isolate_skip", "chinner", "skip",
            "inode_lru_isolate(): i_lock busy under the LRU lock, the inode skipped"),
    Counter("hash_wait_freeing", "chinner", "wait",
            "find_inode(), find_inode_fast(): the inode found was being freed; slept, walked "
            "the chain again"),
    Counter("hash_insert_race", "chinner", "re-check",
            "iget_locked(), iget5_locked(): another task inserted the inode first; ours "
            "destroyed"),
    Counter("hash_unhashed_retry", "chinner", "re-check",
            "the I_NEW inode waited for was unhashed meanwhile; looked up again"),
]}


def describe(name: str, kernel: str) -> Counter:
    """The counter of that name, or an uncatalogued one named as such. bisection points
    (NAME@K) and kernels of the same series share their counters."""
    owner = series.spec_of(kernel).split("@")[0]
    known = COUNTERS.get(name)
    if known is not None and known.series == owner:
        return known
    return Counter(name, owner, "unknown", KINDS["unknown"])
