"""Parse /proc/lock_stat ("lock_stat version 0.4", kernel/locking/lockdep_proc.c).

Layout, as seq_stats() and seq_header() print it in 6.1:

    lock_stat version 0.4
    *WARNING* lock debugging disabled!! - possibly due to a lockdep warning
    ----------------------------------------------------------------- (221)
                                  class name    con-bounces    contentions ...
    -----------------------------------------------------------------
    <blank>
                                   NAME:  12 numeric columns           (one row)
                                 NAME-W:  ...                 (rwlock/rwsem:
                                 NAME-R:  ...                  write, then read)
                                   ----   (dashes under the name)
                                   NAME        count   [<addr>] sym+0x1/0x2
                                   ----                      (contention points,
                                   NAME        count   [<addr>] sym+0x1/0x2
                                                              then contending)
    <blank>
    ....................................................... (221 dots)
    <blank>

The name is right-aligned in 40 columns ("%40s:", or "%38s-W:" / "%38s-R:"
when the class has both write and read holds). A class with only read holds
prints only its "-R" row; a class never acquired prints no row at all. The
name is printed as the kernel keeps it: cut to 37 characters, then "#N" when
name_version > 1 and "/N" for a subclass. Each row is:

    con-bounces contentions waittime-min waittime-max waittime-total
    waittime-avg acq-bounces acquisitions holdtime-min holdtime-max
    holdtime-total holdtime-avg

counts as "%lu", times as microseconds "%lld.%02d" (nanoseconds / 1000,
rounded to 10 ns). Rows are sorted by contentions, most contended first.

The dump is void when it carries the *WARNING* line: debug_locks went to 0
after a lockdep report and lock_stat stopped counting.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

HEADER_PREFIX = "lock_stat version "
SUPPORTED_VERSION = "0.4"
DISABLED_WARNING = "*WARNING* lock debugging disabled!!"

_COUNT = r"\s+(\d+)"
_TIME = r"\s+(-?\d+\.\d+)"
# Lazy name, so "foo-W:" splits into name "foo" and rw "-W".
_ROW = re.compile(
    r"^\s*(?P<name>.*?)(?P<rw>-[WR])?:"
    + _COUNT * 2 + _TIME * 4 + _COUNT * 2 + _TIME * 4
    + r"\s*$"
)
# "%40s %14lu %29s %pS": name, count, "[<address>]", symbol.
_POINT = re.compile(
    r"^\s*(?P<name>.*?)\s+(?P<count>\d+)\s+\[<[^>]*>\]\s+(?P<symbol>\S.*?)\s*$"
)
_DASHES = re.compile(r"^\s*-+\s*$")
_DOTS = re.compile(r"^\s*\.+\s*$")

JSON_FIELDS = (
    "name", "rw",
    "con_bounces", "contentions",
    "waittime_min_us", "waittime_max_us", "waittime_total_us", "waittime_avg_us",
    "acq_bounces", "acquisitions",
    "holdtime_min_us", "holdtime_max_us", "holdtime_total_us", "holdtime_avg_us",
)


@dataclass(frozen=True)
class LockClass:
    name: str
    rw: str | None  # "W", "R", or None for a lock without read side
    con_bounces: int
    contentions: int
    waittime_min_us: float
    waittime_max_us: float
    waittime_total_us: float
    waittime_avg_us: float
    acq_bounces: int
    acquisitions: int
    holdtime_min_us: float
    holdtime_max_us: float
    holdtime_total_us: float
    holdtime_avg_us: float
    # (count, symbol) per call site; shared by the -W and -R rows of a class.
    contention_points: tuple[tuple[int, str], ...] = ()
    contending_points: tuple[tuple[int, str], ...] = ()

    def as_json(self) -> dict:
        return {field: getattr(self, field) for field in JSON_FIELDS}


@dataclass(frozen=True)
class LockStat:
    valid: bool
    classes: tuple[LockClass, ...]

    def as_json(self) -> dict:
        return {"valid": self.valid,
                "classes": [c.as_json() for c in self.classes]}


def _row_fields(match: re.Match) -> dict:
    g = match.groups()[2:]  # skip name and rw
    counts = [int(g[i]) for i in (0, 1, 6, 7)]
    times = [float(g[i]) for i in (2, 3, 4, 5, 8, 9, 10, 11)]
    return {
        "name": match.group("name"),
        "rw": match.group("rw")[1] if match.group("rw") else None,
        "con_bounces": counts[0], "contentions": counts[1],
        "waittime_min_us": times[0], "waittime_max_us": times[1],
        "waittime_total_us": times[2], "waittime_avg_us": times[3],
        "acq_bounces": counts[2], "acquisitions": counts[3],
        "holdtime_min_us": times[4], "holdtime_max_us": times[5],
        "holdtime_total_us": times[6], "holdtime_avg_us": times[7],
    }


class _Block:
    """The rows and call sites of one class while they are being read."""

    def __init__(self, first_row: dict):
        self.rows = [first_row]
        self.points: tuple[list, list] = ([], [])
        self.section = -1  # -1: no dashes yet, 0: contention, 1: contending

    @property
    def name(self) -> str:
        return self.rows[0]["name"]

    def accepts_row(self, row: dict) -> bool:
        # Only a "-R" row continues the "-W" row of the same class.
        last = self.rows[-1]
        return (self.section < 0 and last["rw"] == "W" and row["rw"] == "R"
                and row["name"] == last["name"])

    def finish(self) -> list[LockClass]:
        contention, contending = (tuple(p) for p in self.points)
        return [LockClass(**row, contention_points=contention,
                          contending_points=contending) for row in self.rows]


def parse(text: str) -> LockStat:
    """Parse a /proc/lock_stat dump; text without one gives valid=False, no classes.

    Lines that belong to none of the layouts above (kernel messages that a
    serial console interleaved, a shell prompt) are skipped.
    """
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    start = None
    for i, line in enumerate(lines):
        if line.strip().startswith(HEADER_PREFIX):
            if start is not None:
                raise ValueError("more than one lock_stat dump in the text")
            start = i
    if start is None:
        return LockStat(valid=False, classes=())
    version = lines[start].strip()[len(HEADER_PREFIX):].strip()
    if version != SUPPORTED_VERSION:
        # Another column layout: refuse rather than misread the numbers.
        return LockStat(valid=False, classes=())

    valid = True
    classes: list[LockClass] = []
    block: _Block | None = None
    for line in lines[start + 1:]:
        stripped = line.strip()
        if stripped.startswith(DISABLED_WARNING):
            valid = False
            continue
        row = _ROW.match(line)
        if row:
            fields = _row_fields(row)
            if block is not None and block.accepts_row(fields):
                block.rows.append(fields)
            else:
                if block is not None:
                    classes.extend(block.finish())
                block = _Block(fields)
            continue
        if block is None:
            continue  # header lines
        if _DASHES.match(line):
            block.section = min(block.section + 1, 1)
            continue
        if _DOTS.match(line):
            classes.extend(block.finish())
            block = None
            continue
        point = _POINT.match(line)
        if point and block.section >= 0 and point.group("name") == block.name:
            block.points[block.section].append(
                (int(point.group("count")), point.group("symbol")))
    if block is not None:
        classes.extend(block.finish())
    return LockStat(valid=valid, classes=tuple(classes))
