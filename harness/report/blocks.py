"""The pieces a report is made of, and how numbers are written in them.

The report (document.py) and the sections kept in their own modules build
lists of these; render_markdown and render_html in document.py turn them
into text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from harness.report import charts


@dataclass
class Heading:
    level: int
    text: str


@dataclass
class Para:
    text: str  # Markdown subset: **bold**, `code`


@dataclass
class Bullets:
    items: list[str]  # Markdown subset, as Para


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]


@dataclass
class ChartBlock:
    chart: charts.Chart
    caption: str


@dataclass
class ChartRow:
    """Several charts side by side (HTML) or one after another (Markdown)."""
    items: list[ChartBlock] = field(default_factory=list)


Block = Heading | Para | Bullets | Table | ChartBlock | ChartRow


def fmt(value: float | None, digits: int = 3) -> str:
    """A figure to `digits` significant digits (whole numbers rounded too: 2,215 is
    "2,220" at three), which is what the measurements here support."""
    if value is None or (isinstance(value, float) and (math.isnan(value) or math.isinf(value))):
        return "n/a"
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = digits - 1 - magnitude
    rounded = round(value, decimals)
    if rounded and math.floor(math.log10(abs(rounded))) > magnitude:  # 9.99 -> 10.0
        decimals -= 1
    return f"{round(value, decimals):,.{max(0, decimals)}f}"


def pct(change: float, digits: int = 2) -> str:
    """A relative change with its sign, to two significant digits (never dropping whole
    percent digits: +254%, +40%, +6.7%, -0.045%)."""
    if change is None or math.isnan(change) or math.isinf(change):
        return "n/a"
    value = change * 100
    if abs(value) < 0.0005:  # below what any evidence here resolves
        return "+0%"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:+.{decimals}f}%"
    return "+0%" if float(text[:-1]) == 0 else text


def pct_abs(change: float, digits: int = 2) -> str:
    """A size of a difference, without a sign: "1.0%", "41%"."""
    return pct(abs(change), digits).lstrip("+") if change is not None else "n/a"


def times(value: float | None, digits: int = 2) -> str:
    """A ratio as "0.34x"."""
    return "n/a" if value is None or not math.isfinite(value) else f"{fmt(value, digits)}x"


def interval(low: float | None, high: float | None, digits: int = 2) -> str:
    """"0.10-1.4", or "" when there is none; a degenerate one (both ends the same at
    the digits shown) is written once, as "exactly X"."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return ""
    a, b = fmt(low, digits), fmt(high, digits)
    return f"exactly {a}" if a == b else f"{a}-{b}"


def apart_text(size: float) -> str:
    """The size of a difference (a relative change, no sign) in the notation of
    changes: "41%" below a factor of two, "4.5x" from there on ("+351%" would read
    as either 3.5x or 4.5x)."""
    if size is None or not math.isfinite(size):
        return "n/a"
    return times(1 + abs(size)) if abs(size) >= 1 else pct_abs(size)


def reach_text(values: list[float]) -> str:
    """The smallest differences comparisons could show: their median, and the best."""
    found = sorted(v for v in values if math.isfinite(v))
    if not found:
        return "n/a"
    median = found[len(found) // 2]
    return apart_text(median) + ("" if apart_text(found[0]) == apart_text(median)
                                 else f" (best {apart_text(found[0])})")


def pct_range(low: float, high: float) -> str:
    """"-5.5% to +4.4%", or one figure when both ends read the same."""
    a, b = pct(low), pct(high)
    return a if a == b else f"{a} to {b}"


def outcome_cell(changes: list[float]) -> str:
    """How many cases, and the range of their changes."""
    if not changes:
        return "0"
    return f"{len(changes)} ({pct_range(min(changes), max(changes))})"


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """"1 case", "3 cases": the count always written before the noun."""
    return f"{n} {noun if n == 1 else (nouns or noun + 's')}"
