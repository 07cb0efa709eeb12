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
SPECIAL_GROUPS = ("phase", "ops", "rate", "elapsed_s")


@dataclass(frozen=True)
class Pattern:
    """One 'match' key: a compiled regular expression and the phase it feeds."""
    phase: str | None  # None: the group 'phase', else default_phase
    regex: re.Pattern
    where: str  # FILE:LINE of the key, for messages


@dataclass
class MatchedPhase:
    name: str
    ops: int | None = None  # summed over the lines
    rate: float | None = None  # operations per second, the last line's
    elapsed_s: float | None = None
    extra: dict[str, float] = field(default_factory=dict)


def unit_of(group: str) -> str:
    """A figure's unit from its name's suffix: max_latency_ms -> ms,
    throughput_mb_s -> MB/s."""
    return next((unit for suffix, unit in UNITS if group.endswith(suffix)), "")


def parse_matches(text: str, patterns: list[Pattern], default_phase: str) -> list[MatchedPhase]:
    """Phases from the lines the patterns match, in the order first seen. A pattern
    that matches no line is an error: its figures were declared, not delivered."""
    phases: dict[str, MatchedPhase] = {}
    lines = text.splitlines()
    for pattern in patterns:
        hits = 0
        for line in lines:
            found = pattern.regex.search(line)
            if not found:
                continue
            hits += 1
            groups = {k: v for k, v in found.groupdict().items() if v is not None}
            name = pattern.phase or groups.get("phase") or default_phase
            phase = phases.setdefault(name, MatchedPhase(name))
            try:
                if "ops" in groups:
                    phase.ops = (phase.ops or 0) + int(groups["ops"])
                if "rate" in groups:
                    phase.rate = float(groups["rate"])
                if "elapsed_s" in groups:
                    phase.elapsed_s = float(groups["elapsed_s"])
                for key, value in groups.items():
                    if key not in SPECIAL_GROUPS:
                        phase.extra[key] = float(value)
            except ValueError as err:
                raise OutputError(f"{pattern.where}: line {line.strip()!r}: {err}") from None
        if not hits:
            raise OutputError(f"{pattern.where}: no line of the output matched "
                              f"{pattern.regex.pattern!r}")
    return list(phases.values())
