"""Decode the records a guest sent on its result port (see guest/inode-duel.sh).

    @@record NAME SIZE SHA256
    base64 of gzip(content), wrapped
    @@end NAME

A record counts only if it is complete and its content has the announced size
and sha256. A record cut short by a crash, or garbled, is reported as damaged
and never mistaken for data.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import zlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Record:
    name: str
    data: bytes


@dataclass(frozen=True)
class Damaged:
    name: str
    reason: str


@dataclass(frozen=True)
class Received:
    records: tuple[Record, ...]
    damaged: tuple[Damaged, ...]

    def get(self, name: str) -> bytes | None:
        for record in self.records:
            if record.name == name:
                return record.data
        return None

    def text(self, name: str) -> str | None:
        data = self.get(name)
        return None if data is None else data.decode(errors="replace")


def _decode(name: str, size: str, sha: str, body: list[str]) -> Record | Damaged:
    try:
        data = gzip.decompress(base64.b64decode("".join(body), validate=True))
    except (binascii.Error, OSError, EOFError, zlib.error) as err:
        return Damaged(name, f"undecodable: {err}")
    if not size.isdigit() or len(data) != int(size):
        return Damaged(name, f"size {len(data)} but header says {size}")
    if hashlib.sha256(data).hexdigest() != sha:
        return Damaged(name, "sha256 mismatch")
    return Record(name, data)


def parse(raw: bytes) -> Received:
    records: list[Record] = []
    damaged: list[Damaged] = []
    current: tuple[str, str, str] | None = None
    body: list[str] = []
    for line in raw.decode("ascii", errors="replace").splitlines():
        line = line.strip("\r\n\0 ")
        if line.startswith("@@record "):
            if current:
                damaged.append(Damaged(current[0], "interrupted by the next record"))
            fields = line.split()
            if len(fields) != 4:
                damaged.append(Damaged("?", f"bad header: {line!r}"))
                current = None
                continue
            current, body = (fields[1], fields[2], fields[3]), []
        elif line.startswith("@@end "):
            if current is None or line.split(maxsplit=1)[1] != current[0]:
                damaged.append(Damaged(line[6:], "end without its header"))
            else:
                result = _decode(*current, body)
                (records if isinstance(result, Record) else damaged).append(result)
            current = None
        elif current is not None and line:
            body.append(line)
    if current is not None:
        damaged.append(Damaged(current[0], "cut short (guest stopped while sending)"))
    return Received(tuple(records), tuple(damaged))
