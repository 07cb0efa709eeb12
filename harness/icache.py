"""The icache lock classes, by role, and their lock_stat figures per operation.

Roles are the vocabulary shared by every kernel, so charts can put the
global lock of base next to the bucket locks of piggin:

    global   the re-created 2.6.36 inode lock (base)
    hash     inode_hash_lock, or per-bucket hash locks
    sb_list  s_inode_list_lock, or per-CPU sb inode list locks
    i_lock   inode->i_lock (one lockdep class per filesystem type)
    lru      the list_lru node locks (inode LRU, shared class with dentries in 6.1)
    wb       wb->list_lock
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from harness.parsers.lockstat import LockClass

ROLES = ("global", "hash", "sb_list", "i_lock", "lru", "wb")

# Class-name patterns (fnmatch, '#N' and '/N' suffixes stripped) per role.
# A series' lock-order file may add its own (see lockorder.py).
DEFAULT_PATTERNS: dict[str, tuple[str, ...]] = {
    "global": ("inode_cache_lock",),
    "hash": ("inode_hash_lock", "*inode_hash_bucket*", "*i_hash_lock*"),
    "sb_list": ("&s->s_inode_list_lock", "*sb_inode_list*", "*inode_list_lock*"),
    "i_lock": ("&sb->s_type->i_lock_key",),
    "lru": ("&lru->node[[]i].lock", "*inode_lru*"),
    "wb": ("&wb->list_lock",),
}


def base_name(name: str) -> str:
    """Strip lockdep's '#N' (name version) and '/N' (subclass) suffixes."""
    for sep in ("/", "#"):
        head, _, tail = name.rpartition(sep)
        if head and tail.isdigit():
            name = head
    return name


def role_of(name: str, patterns: dict[str, tuple[str, ...]] = DEFAULT_PATTERNS) -> str | None:
    plain = base_name(name)
    for role in ROLES:
        if any(fnmatch.fnmatchcase(plain, p) for p in patterns.get(role, ())):
            return role
    return None


@dataclass(frozen=True)
class RoleTotals:
    role: str
    classes: tuple[str, ...]
    acquisitions: int
    contentions: int
    holdtime_total_us: float
    waittime_total_us: float
    holdtime_max_us: float
    waittime_max_us: float
    # Acquisitions (contentions) whose previous acquirer of the same lock
    # instance ran on another CPU: how widely the role's instances are shared.
    acq_bounces: int = 0
    con_bounces: int = 0

    @property
    def holdtime_avg_us(self) -> float:
        return self.holdtime_total_us / self.acquisitions if self.acquisitions else 0.0


def totals_by_role(classes: tuple[LockClass, ...],
                   patterns: dict[str, tuple[str, ...]] = DEFAULT_PATTERNS) -> list[RoleTotals]:
    grouped: dict[str, list[LockClass]] = {}
    for lock in classes:
        role = role_of(lock.name, patterns)
        if role:
            grouped.setdefault(role, []).append(lock)
    out = []
    for role in ROLES:
        locks = grouped.get(role, [])
        if not locks:
            continue
        out.append(RoleTotals(
            role=role,
            classes=tuple(dict.fromkeys(lock.name for lock in locks)),
            acquisitions=sum(lock.acquisitions for lock in locks),
            contentions=sum(lock.contentions for lock in locks),
            holdtime_total_us=sum(lock.holdtime_total_us for lock in locks),
            waittime_total_us=sum(lock.waittime_total_us for lock in locks),
            holdtime_max_us=max(lock.holdtime_max_us for lock in locks),
            waittime_max_us=max(lock.waittime_max_us for lock in locks),
            acq_bounces=sum(lock.acq_bounces for lock in locks),
            con_bounces=sum(lock.con_bounces for lock in locks)))
    return out
