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


def fmt(value: float, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and (math.isnan(value) or math.isinf(value))):
        return "n/a"
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    return f"{value:,.{decimals}f}"


def pct(change: float) -> str:
    if math.isnan(change):
        return "n/a"
    # -icount separates differences of hundredths of a percent: show them.
    decimals = 2 if 0 < abs(change) < 0.001 else 1
    return f"{change * 100:+.{decimals}f}%"


def outcome_cell(changes: list[float]) -> str:
    """How many cases, and the range of their changes."""
    if not changes:
        return "0"
    low, high = min(changes), max(changes)
    spread = pct(low) if low == high else f"{pct(low)} to {pct(high)}"
    return f"{len(changes)} ({spread})"
