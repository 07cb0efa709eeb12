"""How long the measuring of a run will take, learnt from the steps measured before.

Step wall times come from the stored cells (results/cells/) and, before a
machine has measured a kind of step itself, from the reference run's
step-times.json: the results folder in use first, else the one committed
in the checkout. The estimate sharpens while a run goes on, as each new
cell is added.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from harness.layout import Layout
from harness.run import tidy
from harness.run.cells import CellStore
from harness.run.matrix import Cell

STEP_TIMES = "step-times.json"
# A boot's wall time beyond its steps' (QEMU start to /init, final dumps):
# (run wall time - step wall times) / boots was 4.4 s and 4.9 s in two
# default runs here.
BOOT_OVERHEAD_S = 5.0
UNKNOWN_STEP_S = 30.0
# Writing report.md, report.html and the charts of a default run, checkpatch of
# the series' patches included: 39 s in the cold default run of 2026-12-06 on a
# quiet host (the reference run's, with base too: 1m59s).
REPORT_S = 40.0


class StepTimes:
    """Wall seconds of measured cells by kind of step (Cell.history).

    A step never measured counts as the median of the same workload and
    flavour on other boots, else of steps on the same kind of boot, else
    UNKNOWN_STEP_S.
    """

    def __init__(self, layout: Layout) -> None:
        self.seen: dict[tuple, list[float]] = {}
        for cell in CellStore(layout).all():
            if cell.wall_s:
                self.add(tuple(cell.history), cell.wall_s)
        self.prior: dict[tuple, list[float]] = {}
        for folder in (layout.reference, layout.committed_reference):
            prior = folder / STEP_TIMES
            if prior.exists():
                for item in json.loads(prior.read_text()):
                    self.prior[tuple(item["history"])] = [item["median_s"]]
                break

    def add(self, history: tuple, wall_s: float) -> None:
        self.seen.setdefault(tuple(history), []).append(wall_s)

    def step(self, history: tuple) -> float:
        likenesses = (lambda key: key == history,
                      lambda key: key[:3] == history[:3],  # workload, fs, flavour
                      lambda key: key[2:] == history[2:])  # flavour, mode, cpus
        for alike in likenesses:
            for known in (self.seen, self.prior):
                times = [t for key, ts in known.items() if alike(key) for t in ts]
                if times:
                    return statistics.median_high(times)
        return UNKNOWN_STEP_S

    def boot(self, cells: list[Cell]) -> float:
        """Seconds one boot of these cells should take."""
        return BOOT_OVERHEAD_S + sum(self.step(cell.history) for cell in cells)

    def estimate(self, pending: list[list[Cell]]) -> float:
        """Seconds the pending boots (each a list of cells) should take."""
        return sum(self.boot(cells) for cells in pending)


def step_times_of_run(layout: Layout, run_dir: Path) -> list[dict]:
    """Median step wall time per kind of step among the cells of a run."""
    store = CellStore(layout)
    times: dict[tuple, list[float]] = {}
    for key in sorted({row.cell for row in tidy.read(tidy.table_in(run_dir))}):
        cell = store.get(key)
        if cell and cell.wall_s:
            times.setdefault(tuple(cell.history), []).append(cell.wall_s)
    return [{"history": list(h), "median_s": round(statistics.median_high(t), 2), "cells": len(t)}
            for h, t in sorted(times.items())]
