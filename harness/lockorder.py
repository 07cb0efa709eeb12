"""The icache locks: their roles, each design's lock order, and what lockdep saw.

Roles are the vocabulary shared by every kernel, so charts can put the
global lock of base next to the bucket locks of piggin:

    global   the re-created 2.6.36 inode lock (base)
    hash     inode_hash_lock, or per-bucket hash locks
    sb_list  s_inode_list_lock, or per-CPU sb inode list locks
    i_lock   inode->i_lock (one lockdep class per filesystem type)
    lru      the list_lru node locks (inode LRU, shared class with dentries in 6.1)
    wb       wb->list_lock

Each series ships series-NAME/lock-order, the edges its design allows among
the icache locks; mainline's (6.1's order, from the fs/inode.c header) is
harness/mainline.lock-order. Format, one item a line ('#' starts a comment):

    class ROLE PATTERN     lockdep class names (fnmatch, without lockdep's '#N'
                           and '/N' suffixes) that belong to ROLE, in addition
                           to DEFAULT_PATTERNS
    ROLE -> ROLE           lockdep may see the second taken while the first is held
    roles ROLE...          the roles the series' final kernel has, when its edges
                           name more (edges kept for its bisection points); by
                           default the roles its edges name

A LockOrder is the one object that maps lock classes to roles (for the
lock_stat figures of a boot) and judges the edges of /proc/lockdep (for
conformance): every part of the harness gets both from here.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path

from harness.kernels import series
from harness.layout import Layout
from harness.parsers import lockdep_graph
from harness.parsers.lockstat import LockClass

ROLES = ("global", "hash", "sb_list", "i_lock", "lru", "wb")

# What the duel is about, per role: a lock many inodes share (the global lock,
# the hash, the sb, LRU and writeback lists: the workers of a workload meet
# one instance or a few of them, whatever files they use) or one per inode
# (i_lock: workers meet on it only when they use the same inode, a hot inode
# or the one anon inode). Every series' lock-scope file agrees: i_lock is its
# only per-inode role (harness/tests/test_lockscope.py holds them to it).
SHARED, PER_INODE = "shared", "per-inode"
SHARING = {"global": SHARED, "hash": SHARED, "sb_list": SHARED, "i_lock": PER_INODE,
           "lru": SHARED, "wb": SHARED}

# Class-name patterns (fnmatch, '#N' and '/N' suffixes stripped) per role;
# a lock-order file may add its own.
DEFAULT_PATTERNS: dict[str, tuple[str, ...]] = {
    "global": ("inode_cache_lock",),
    "hash": ("inode_hash_lock", "*inode_hash_bucket*", "*i_hash_lock*"),
    "sb_list": ("&s->s_inode_list_lock", "*sb_inode_list*", "*inode_list_lock*"),
    "i_lock": ("&sb->s_type->i_lock_key",),
    "lru": ("&lru->node[[]i].lock", "*inode_lru*"),
    "wb": ("&wb->list_lock",),
}

MAINLINE_FILE = Path(__file__).resolve().parent / "mainline.lock-order"

# (held class, taken class, held role, taken role), as lockdep printed the names
Edge = tuple[str, str, str, str]


class LockOrderError(Exception):
    pass


def base_name(name: str) -> str:
    """Strip lockdep's '#N' (name version) and '/N' (subclass) suffixes."""
    for sep in ("/", "#"):
        head, _, tail = name.rpartition(sep)
        if head and tail.isdigit():
            name = head
    return name


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


@dataclass(frozen=True)
class LockOrder:
    path: Path
    patterns: dict[str, tuple[str, ...]]
    allowed: frozenset[tuple[str, str]]
    declared_roles: tuple[str, ...] = ()

    def role_of(self, name: str) -> str | None:
        plain = base_name(name)
        for role in ROLES:
            if any(fnmatch.fnmatchcase(plain, p) for p in self.patterns.get(role, ())):
                return role
        return None

    @property
    def roles(self) -> tuple[str, ...]:
        """The roles this design has, in ROLES order: its 'roles' line, or those its
        allowed edges name."""
        named = set(self.declared_roles) or {role for edge in self.allowed for role in edge}
        return tuple(role for role in ROLES if role in named)

    def totals_by_role(self, classes: tuple[LockClass, ...]) -> list[RoleTotals]:
        """lock_stat classes summed per icache role, in ROLES order.

        lock_stat prints no line for a class nobody acquired in the window,
        so a role of this design without a line is a measured zero, not a
        missing figure: without its row, whether a step's writeback thread
        happened to run would decide which rows a cell has.
        """
        grouped: dict[str, list[LockClass]] = {}
        for lock in classes:
            role = self.role_of(lock.name)
            if role:
                grouped.setdefault(role, []).append(lock)
        out = []
        for role in ROLES:
            locks = grouped.get(role)
            if not locks:
                if role in self.roles:
                    out.append(RoleTotals(role, (), 0, 0, 0.0, 0.0, 0.0, 0.0))
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

    def icache_edges(self, edges: tuple[tuple[str, str], ...]) -> list[Edge]:
        """The lockdep edges whose both ends are icache classes, with their roles."""
        out = []
        for held, taken in edges:
            held_role, taken_role = self.role_of(held), self.role_of(taken)
            if held_role and taken_role:
                out.append((held, taken, held_role, taken_role))
        return out

    def allows(self, edge: Edge) -> bool:
        return (edge[2], edge[3]) in self.allowed

    def violations(self, edges: list[Edge]) -> list[Edge]:
        return [e for e in edges if not self.allows(e)]


def parse(path: Path) -> LockOrder:
    patterns = dict(DEFAULT_PATTERNS)
    allowed = set()
    declared: tuple[str, ...] = ()
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        edge = re.fullmatch(r"(\w+)\s*->\s*(\w+)", line)
        klass = re.fullmatch(r"class\s+(\w+)\s+(\S+)", line)
        listed = re.fullmatch(r"roles((?:\s+\w+)+)", line)
        roles = (edge.groups() if edge else klass.groups()[:1] if klass
                 else tuple(listed.group(1).split()) if listed else ())
        for role in roles:
            if role not in ROLES:
                raise LockOrderError(f"{path}:{lineno}: unknown role {role!r} "
                                     f"(roles: {', '.join(ROLES)})")
        if edge:
            allowed.add((edge.group(1), edge.group(2)))
        elif klass:
            role, pattern = klass.groups()
            patterns[role] = patterns[role] + (pattern,)
        elif listed:
            declared += roles
        else:
            raise LockOrderError(f"{path}:{lineno}: expected 'ROLE -> ROLE', "
                                 f"'class ROLE PATTERN' or 'roles ROLE...', got {line!r}")
    return LockOrder(path, patterns, frozenset(allowed), tuple(declared))


def for_kernel(layout: Layout, kernel: str) -> LockOrder:
    path = layout.design_file(series.spec_of(kernel), "lock-order")
    if not path.exists():
        raise LockOrderError(f"{path} is missing: every series ships its lock-order")
    return parse(path)


def edges_of_boot(boot_dir: Path, order: LockOrder) -> list[Edge]:
    """The icache lock-order edges of a debug boot's /proc/lockdep dump."""
    dump = boot_dir / "files" / "lockdep"
    if not dump.exists():
        return []
    return order.icache_edges(lockdep_graph.parse(dump.read_text(errors="replace")))
