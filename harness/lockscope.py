"""Lock-scope files: how widely each icache lock role is shared in a kernel.

Each series ships series-NAME/lock-scope beside its lock-order; mainline's is
harness/mainline.lock-scope. The scaling model (analysis/queueing.py) reads
it to decide which roles queue and over how many instances, and the report
checks it against the bounces lock_stat measured. Format, one role a line:

    ROLE SCOPE [TABLE] [bitlock] [under ROLE]

SCOPE is one of

    global              one lock for the whole machine
    per-superblock      one per mounted filesystem (the workers share one)
    per-bdi-writeback   one per backing device's writeback context
    per-numa-node       one per NUMA node (and per superblock, list_lru)
    per-bucket TABLE    one per bucket of the hash table that the kernel
                        announces as "TABLE hash table entries: N" on its
                        console; N comes from the boot, not from this file
    per-cpu             one per CPU (taken on the local CPU's instance)
    per-inode           one per inode

`bitlock`: in the production (perf) kernel the lock is a test-and-set bit
lock (hlist_bl), whose hand-off cost grows with its waiters; the debug
kernel wraps it in a spinlock so lock_stat can see it.
`under ROLE`: every acquisition happens with ROLE held, which serialises it:
it never queues on its own, and its hold time is part of ROLE's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.kernels import series
from harness.layout import Layout
from harness.lockorder import ROLES

SCOPES = ("global", "per-superblock", "per-bdi-writeback", "per-numa-node", "per-bucket",
          "per-cpu", "per-inode")
# Scopes whose one instance every worker of a workload on one filesystem shares.
SHARED_SCOPES = ("global", "per-superblock", "per-bdi-writeback", "per-numa-node")
# Scopes whose instances the workers of the default workloads never share.
PRIVATE_SCOPES = ("per-cpu", "per-inode")


class LockScopeError(Exception):
    pass


@dataclass(frozen=True)
class RoleScope:
    role: str
    scope: str
    table: str = ""  # per-bucket: the hash table's console name
    bitlock: bool = False
    under: str = ""  # the role that serialises this one, if any
    line: int = 0

    @property
    def shared(self) -> bool:
        return self.scope in SHARED_SCOPES or self.scope == "per-bucket"

    def describe(self, buckets: int | None = None) -> str:
        text = self.scope
        if self.scope == "per-bucket":
            text += f" ({buckets:,} buckets)" if buckets else f" ({self.table} buckets)"
        if self.bitlock:
            text += ", bit lock"
        if self.under:
            text += f", under {self.under}"
        return text


@dataclass(frozen=True)
class LockScope:
    path: Path
    roles: dict[str, RoleScope]


def parse(path: Path) -> LockScope:
    roles: dict[str, RoleScope] = {}
    try:
        text = path.read_text()
    except OSError as err:
        raise LockScopeError(f"{path}: {err.strerror}") from err
    for lineno, raw in enumerate(text.splitlines(), 1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        where = f"{path}:{lineno}"
        if len(words) < 2:
            raise LockScopeError(f"{where}: expected 'ROLE SCOPE [TABLE] [bitlock] "
                                 f"[under ROLE]', got {raw.strip()!r}")
        role, scope, rest = words[0], words[1], words[2:]
        if role not in ROLES:
            raise LockScopeError(f"{where}: unknown role {role!r} "
                                 f"(roles: {', '.join(ROLES)})")
        if role in roles:
            raise LockScopeError(f"{where}: role {role} already declared on line "
                                 f"{roles[role].line}")
        if scope not in SCOPES:
            raise LockScopeError(f"{where}: unknown scope {scope!r} "
                                 f"(scopes: {', '.join(SCOPES)})")
        table = ""
        if scope == "per-bucket":
            if not rest or rest[0] in ("bitlock", "under"):
                raise LockScopeError(f"{where}: per-bucket needs the hash table's console "
                                     "name, e.g. 'per-bucket Inode-cache'")
            table, rest = rest[0], rest[1:]
        bitlock = under = None
        while rest:
            word = rest.pop(0)
            if word == "bitlock" and bitlock is None:
                bitlock = True
            elif word == "under" and under is None and rest:
                under = rest.pop(0)
                if under not in ROLES or under == role:
                    raise LockScopeError(f"{where}: 'under' needs another role, got {under!r}")
            else:
                raise LockScopeError(f"{where}: unexpected {word!r} "
                                     "(options: bitlock, under ROLE)")
        roles[role] = RoleScope(role, scope, table, bool(bitlock), under or "", lineno)
    for scope in roles.values():
        if scope.under and scope.under not in roles:
            raise LockScopeError(f"{path}:{scope.line}: {scope.role} is under {scope.under}, "
                                 f"which the file does not declare")
    return LockScope(path, roles)


def load_for(layout: Layout, kernel: str) -> LockScope:
    path = layout.design_file(series.spec_of(kernel), "lock-scope")
    if not path.exists():
        raise LockScopeError(f"{path} is missing: every series ships its lock-scope")
    return parse(path)
