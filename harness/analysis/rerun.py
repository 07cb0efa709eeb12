"""How much an -icount rate moves when the same kernel is booted again.

The boots of one run share one ext4 image and one host afternoon; a rerun
(a fresh clone makes its own ext4 image, whose directory hash seed is
random) does not. The spread is measured by harness/run/icount_spread.py:
many boots of one kernel image, some on the build folder's ext4 image and
some each on an image made anew, and kept as a list of boots with their
rates (icount-spread.json). Two means of n boots each then differ on a
rerun by a relative standard deviation of sd * sqrt(1/n1 + 1/n2): a
difference between kernels smaller than the 95% quantile of that is not
claimed, however narrow the run's own intervals are.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path

from harness.analysis import stats


class SpreadError(Exception):
    pass


@dataclass(frozen=True)
class CaseSpread:
    case: str  # evidence.Case.label
    boots: int
    relative_sd: float  # sample standard deviation over the boots / their mean
    low: float  # lowest and highest rate seen, relative to the mean
    high: float
    # The same over the boots that shared the build folder's ext4 image, and over
    # those that each had a fresh one (None: fewer than 3 such boots).
    same_image_sd: float | None = None
    fresh_image_sd: float | None = None

    def min_effect(self, n1: int, n2: int) -> float:
        """The smallest relative difference between two means of n1 and n2 boots that
        a rerun would not be expected to erase (95%)."""
        return stats.t95(self.boots - 1) * self.relative_sd * math.sqrt(1 / n1 + 1 / n2)


@dataclass(frozen=True)
class RerunSpread:
    source: str  # where the boots were read from, as the report names it
    kernel: str
    boots: int
    fresh_disks: int
    measured: str  # first and last boot
    host_load: tuple[float, float]  # range of the 1-minute load average before the boots
    cases: dict[str, CaseSpread]


def parse(path: Path, shown_as: str | None = None) -> RerunSpread:
    try:
        boots = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise SpreadError(f"{path}:{err.lineno}: not JSON: {err.msg}") from None
    ok = [b for b in boots if b.get("status") == "ok"]
    if len(ok) < 3:
        raise SpreadError(f"{path}: {len(ok)} usable boots; a spread needs at least 3")
    kernels = sorted({b["kernel"] for b in ok})
    if len(kernels) != 1:
        raise SpreadError(f"{path}: boots of {', '.join(kernels)}; the spread is of one kernel")
    labels = sorted({label for b in ok for label in b["rates"]})
    cases = {}
    for label in labels:
        values = [b["rates"][label] for b in ok if label in b["rates"]]
        if len(values) < 3:
            continue
        mean = statistics.fmean(values)
        cases[label] = CaseSpread(
            label, len(values), statistics.stdev(values) / mean, min(values) / mean - 1,
            max(values) / mean - 1,
            _relative_sd([b["rates"][label] for b in ok
                          if label in b["rates"] and b["disk"] != "fresh"]),
            _relative_sd([b["rates"][label] for b in ok
                          if label in b["rates"] and b["disk"] == "fresh"]))
    loads = [b["loadavg_before"][0] for b in ok]
    return RerunSpread(shown_as or str(path), kernels[0], len(ok),
                       sum(1 for b in ok if b["disk"] == "fresh"),
                       f"{_when(ok[0]['boot'])} to {_when(ok[-1]['boot'])}",
                       (min(loads), max(loads)), cases)


def _relative_sd(values: list[float]) -> float | None:
    return statistics.stdev(values) / statistics.fmean(values) if len(values) >= 3 else None


def _when(boot: str) -> str:
    """'20261203-183020-...' (icount_spread's boot names) as '2026-12-03 18:30'."""
    day, clock = boot.split("-")[:2]
    return f"{day[:4]}-{day[4:6]}-{day[6:8]} {clock[:2]}:{clock[2:4]}"
