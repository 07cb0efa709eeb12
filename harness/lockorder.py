"""Lock-order files: the edges a design allows among the icache locks.

Each series ships series-NAME/lock-order; mainline's (6.1's order, from the
fs/inode.c header) is harness/mainline.lock-order. Format, one item a line:

    class ROLE PATTERN     lockdep class names (fnmatch, without lockdep's '#N'
                           and '/N' suffixes) that belong to ROLE, in addition
                           to icache.DEFAULT_PATTERNS
    ROLE -> ROLE           lockdep may see the second taken while the first is held

Roles are those of icache.py. The conformance check maps every edge of
/proc/lockdep whose both ends are icache classes to roles and reports the
edges the file does not allow.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from harness import icache
from harness.kernels import series
from harness.layout import Layout

HERE = Path(__file__).resolve().parent


class LockOrderError(Exception):
    pass


@dataclass(frozen=True)
class LockOrder:
    path: Path
    patterns: dict[str, tuple[str, ...]]
    allowed: frozenset[tuple[str, str]]

    def allows(self, edge: tuple[str, str, str, str] | list[str]) -> bool:
        """An icache edge (held, taken, held_role, taken_role) this design allows."""
        return (edge[2], edge[3]) in self.allowed


@dataclass(frozen=True)
class Violation:
    held: str  # class names as lockdep printed them
    taken: str
    held_role: str
    taken_role: str


def parse(path: Path) -> LockOrder:
    patterns = {role: tuple(p) for role, p in icache.DEFAULT_PATTERNS.items()}
    allowed = set()
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        edge = re.fullmatch(r"(\w+)\s*->\s*(\w+)", line)
        klass = re.fullmatch(r"class\s+(\w+)\s+(\S+)", line)
        if edge:
            for role in edge.groups():
                if role not in icache.ROLES:
                    raise LockOrderError(f"{path}:{lineno}: unknown role {role!r} "
                                         f"(roles: {', '.join(icache.ROLES)})")
            allowed.add((edge.group(1), edge.group(2)))
        elif klass:
            role, pattern = klass.groups()
            if role not in icache.ROLES:
                raise LockOrderError(f"{path}:{lineno}: unknown role {role!r}")
            patterns[role] = patterns[role] + (pattern,)
        else:
            raise LockOrderError(f"{path}:{lineno}: expected 'ROLE -> ROLE' or "
                                 f"'class ROLE PATTERN', got {line!r}")
    return LockOrder(path, patterns, frozenset(allowed))


def file_for(layout: Layout, kernel: str) -> Path:
    """The lock-order of the design a kernel implements (NAME@K: its series')."""
    name = kernel.split("@", 1)[0]
    if name == "mainline" or not series.series_exists(layout, name):
        return HERE / "mainline.lock-order"
    return layout.series_dir(name) / "lock-order"


def load_for(layout: Layout, kernel: str) -> LockOrder:
    path = file_for(layout, kernel)
    if not path.exists():
        raise LockOrderError(f"{path} is missing: every series ships its lock-order")
    return parse(path)


def patterns_for(layout: Layout, kernel: str) -> dict[str, tuple[str, ...]]:
    path = file_for(layout, kernel)
    return parse(path).patterns if path.exists() else dict(icache.DEFAULT_PATTERNS)


def icache_edges(edges: tuple[tuple[str, str], ...],
                 patterns: dict[str, tuple[str, ...]]) -> list[tuple[str, str, str, str]]:
    """(held, taken, held_role, taken_role) for edges between icache classes."""
    out = []
    for held, taken in edges:
        held_role, taken_role = icache.role_of(held, patterns), icache.role_of(taken, patterns)
        if held_role and taken_role:
            out.append((held, taken, held_role, taken_role))
    return out


def violations(edges: tuple[tuple[str, str], ...], order: LockOrder) -> list[Violation]:
    return [Violation(*e) for e in icache_edges(edges, order.patterns) if not order.allows(e)]
