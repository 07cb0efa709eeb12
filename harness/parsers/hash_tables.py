"""The sizes of the kernel's boot-time hash tables, from its console.

alloc_large_system_hash() (mm/page_alloc.c in 6.1) announces every table it
allocates:

    [    0.000000] Inode-cache hash table entries: 131072 (order: 8, 1048576 bytes, linear)

The entry count depends on the guest's memory, not on the kernel's bucket
type, so it is read from each boot rather than assumed. A table announced
twice (the early and the late allocation of one table) keeps its last size.
"""

from __future__ import annotations

import re

_LINE = re.compile(r"^(?:\[\s*\d+\.\d+\]\s*)?(?P<name>\S.*?) hash table entries: "
                   r"(?P<entries>\d+) \(order: ")


def parse(console: str) -> dict[str, int]:
    """Table name -> entries, for every table the console announces."""
    tables: dict[str, int] = {}
    for line in console.replace("\r", "").splitlines():
        match = _LINE.match(line.strip())
        if match:
            tables[match.group("name")] = int(match.group("entries"))
    return tables
