"""Parse what the workload programs print: one line per timed phase.

    result phase=create-unlink ops=4000 elapsed_ns=2604519870 procs=2 p50_ns=...

Throughput comes from the guest's own clock (elapsed_ns), never the host's.

Programs that print no such line are read by regular expressions with named
groups, declared with the workload (parse_matches).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


class OutputError(Exception):
    pass


@dataclass(frozen=True)
class Phase:
    name: str
    ops: int
    elapsed_ns: int
    procs: int
    extra: dict[str, float]

    @property
    def ops_per_s(self) -> float:
        return self.ops / (self.elapsed_ns / 1e9) if self.elapsed_ns else 0.0


def parse(text: str) -> list[Phase]:
    phases = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.startswith("result "):
            continue
        fields = {}
        for item in line.split()[1:]:
            key, sep, value = item.partition("=")
            if not sep:
                raise OutputError(f"line {lineno}: {item!r} is not key=value")
            fields[key] = value
        try:
            name = fields.pop("phase")
            ops, elapsed, procs = (int(fields.pop(k)) for k in ("ops", "elapsed_ns", "procs"))
            extra = {k: float(v) for k, v in fields.items()}
        except KeyError as err:
            raise OutputError(f"line {lineno}: missing {err}") from None
        except ValueError as err:
            raise OutputError(f"line {lineno}: {err}") from None
        phases.append(Phase(name, ops, elapsed, procs, extra))
    return phases


# -- a program's own output lines, read by the 'match' keys of its declaration

UNITS = (("_ns", "ns"), ("_us", "us"), ("_ms", "ms"), ("_mb_s", "MB/s"), ("_s", "s"))

# How the values a group reads from several lines become one figure (reduce.GROUP).
REDUCTIONS = {
    "sum": sum,
    "last": lambda values: values[-1],
    "min": min,
    "max": max,
    "mean": lambda values: sum(values) / len(values),
}
# ops counts the operations of every line (a program printing one count per
# second, or per worker); any other group keeps the last line's value (a
# summary printed once, a program's final rate).
DEFAULT_REDUCTIONS = {"ops": "sum"}
DEFAULT_REDUCTION = "last"


def reduction_of(group: str, chosen: dict[str, str]) -> str:
    """The reduction of a group: the declaration's reduce.GROUP, else the default."""
    return chosen.get(group) or DEFAULT_REDUCTIONS.get(group, DEFAULT_REDUCTION)


@dataclass(frozen=True)
class Pattern:
    """One 'match' key: a compiled regular expression and the phase it feeds."""
    phase: str | None  # None: the group 'phase', else default_phase
    regex: re.Pattern
    where: str  # FILE:LINE of the key, for messages


@dataclass
class MatchedPhase:
    name: str
    ops: int | None = None  # reduced over the lines (default: summed)
    rate: float | None = None  # operations per second (default: the last line's)
    elapsed_s: float | None = None
    extra: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Line:
    """A line of the program's output and where it fell: before, inside or
    after the timed window."""
    text: str
    place: str


LINE = re.compile(rb"([^\r\n]*)(\r\n|\r|\n|$)")


def placed_lines(data: bytes, start: int = 0, end: int = -1) -> list[Line]:
    """The lines of one stream, placed by the window's byte offsets in it
    (end -1: the window runs to the end); split at \\n and \\r as stepwatch does."""
    lines = []
    for found in LINE.finditer(data):
        if not found.group(0):
            break
        offset = found.start()
        place = "before" if offset < start else \
            "after" if 0 <= end <= offset else "inside"
        if found.group(1) or found.group(2):
            lines.append(Line(found.group(1).decode(errors="replace"), place))
    return lines


def unit_of(group: str) -> str:
    """A figure's unit from its name's suffix: max_latency_ms -> ms,
    throughput_mb_s -> MB/s."""
    return next((unit for suffix, unit in UNITS if group.endswith(suffix)), "")


def _values(groups: dict[str, str], where: str, line: str) -> dict[str, float]:
    """A matched line's numbers by group ('phase' is a name, not a number)."""
    values = {}
    for key, value in groups.items():
        if key == "phase":
            continue
        try:
            values[key] = int(value) if key == "ops" else float(value)
        except ValueError as err:
            raise OutputError(f"{where}: line {line.strip()!r}: {err}") from None
    return values


def _phase(name: str, values: dict[str, list[float]], chosen: dict[str, str]) -> MatchedPhase:
    reduced = {group: REDUCTIONS[reduction_of(group, chosen)](found)
               for group, found in values.items()}
    phase = MatchedPhase(name, rate=reduced.pop("rate", None),
                         elapsed_s=reduced.pop("elapsed_s", None))
    if "ops" in reduced:
        phase.ops = int(reduced.pop("ops"))
    phase.extra = reduced
    return phase


def _hits(pattern: Pattern, lines: list[Line]) -> list[tuple[Line, re.Match]]:
    """The lines a pattern reads: those inside the window, else (a summary
    printed when the run ends) those after it; never those before it."""
    found = [(line, m) for line in lines if (m := pattern.regex.search(line.text))]
    for place in ("inside", "after"):
        hits = [(line, m) for line, m in found if line.place == place]
        if hits:
            return hits
    if found:
        raise OutputError(f"{pattern.where}: only lines before the timed window matched "
                          f"{pattern.regex.pattern!r} (first: {found[0][0].text.strip()!r}): "
                          f"what a program prints before lock-start is not counted")
    raise OutputError(f"{pattern.where}: no line of the output matched "
                      f"{pattern.regex.pattern!r}")


def parse_matches(lines: str | list[Line], patterns: list[Pattern], default_phase: str,
                  reductions: dict[str, str] | None = None) -> list[MatchedPhase]:
    """Phases from the lines the patterns match, in the order first seen; each
    group's values over the lines reduced as reductions says (group -> sum,
    last, min, max or mean; reduction_of gives the defaults). A pattern that
    matches no line is an error: its figures were declared, not delivered.
    Plain text: every line is inside the window."""
    if isinstance(lines, str):
        lines = [Line(text, "inside") for text in lines.splitlines()]
    found: dict[str, dict[str, list[float]]] = {}
    for pattern in patterns:
        for line, match in _hits(pattern, lines):
            groups = {k: v for k, v in match.groupdict().items() if v is not None}
            name = pattern.phase or groups.get("phase") or default_phase
            values = found.setdefault(name, {})
            for group, value in _values(groups, pattern.where, line.text).items():
                values.setdefault(group, []).append(value)
    return [_phase(name, values, reductions or {}) for name, values in found.items()]


def count_operations(lines: list[Line], pattern: Pattern) -> int:
    """How many operations a program's output says ran (a declaration's
    ops-count): the sum of the group ops over the lines that count, or the
    different values of the group id, or else the lines the pattern matches."""
    hits = _hits(pattern, lines)
    groups = pattern.regex.groupindex
    if "ops" in groups:
        try:
            return sum(int(m.group("ops")) for _, m in hits if m.group("ops") is not None)
        except ValueError as err:
            raise OutputError(f"{pattern.where}: {err}") from None
    if "id" in groups:
        return len({m.group("id") for _, m in hits})
    return len(hits)
