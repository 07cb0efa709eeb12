"""Parse /proc/lockdep into the lock-order edges lockdep observed.

l_show() in kernel/locking/lockdep_proc.c (6.1) prints, after a first line
"all lock classes:", one block per class in use:

    KEY[ OPS:%8ld][ FD:%5ld BD:%5ld USAGE]: NAME
     -> [KEY] NAME2
     -> [KEY] NAME3
    <blank>

KEY is "%p" (hashed unless no_hash_pointers). OPS only with
CONFIG_DEBUG_LOCKDEP; FD, BD and the usage characters (e.g. "+.+.") and the
"->" lines only with CONFIG_PROVE_LOCKING. NAME is print_name(): the class
name, "#N" when name_version > 1, "/N" for a subclass (a class without a
name prints its key's symbol instead). A "->" line lists a class in
locks_after at distance 1: NAME2 was taken while NAME was held, so the edge
is NAME -> NAME2.
"""

from __future__ import annotations

import re

_CLASS = re.compile(
    r"^(?P<key>[0-9a-fA-Fx]+|\(_+ptrval_+\))"
    r"(?: OPS:\s*\d+)?"
    r"(?: FD:\s*\d+ BD:\s*\d+ (?P<usage>\S+))?"
    r": (?P<name>.+?)\s*$"
)
_EDGE = re.compile(r"^ -> \[(?P<key>[^\]]*)\] (?P<name>.+?)\s*$")


def parse(text: str) -> tuple[tuple[str, str], ...]:
    """Edges (held, then taken) in file order, each once."""
    edges: dict[tuple[str, str], None] = {}  # ordered set
    current: str | None = None
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        edge = _EDGE.match(line)
        if edge:
            if current is not None:
                edges.setdefault((current, edge.group("name")), None)
            continue
        cls = _CLASS.match(line)
        if cls:
            current = cls.group("name")
        elif not line.strip():
            current = None  # a blank line ends a class block
    return tuple(edges)
