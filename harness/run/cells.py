"""The cell store (results/cells/) and the rows of a cell.

A stored cell says where its measurement is (boot folder and step id), how
often it was rerun and how long it took; it holds no figures. Its rows are
derived from the boot folder's console and records every time a run uses
it, by today's parsers and the run's lock-order files, so a change to
either never leaves old figures in a new table. A cell whose boot folder
is gone or was made before host.json existed is measured again.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from harness import lockorder
from harness.boot import runner
from harness.kernels.kbuild import LOCKDEP_FLAVOURS
from harness.layout import Layout
from harness.run import tidy
from harness.run.matrix import BootConfig, Cell

FORMAT = 2  # cells of format 1 carried their rows: not trusted, measured again
# One operation of an -icount step longer than this (emulated time) is a stall:
# 12.5 million instructions at 4 ns each, where the slowest operation of
# any default case took 5.2 ms in -icount boots that never idle (qemu.py;
# 2026-12-06). run/execute.py runs a stalled step again; one that stalled
# every time keeps the status "stalled", which no verdict reads.
STALL_NS = 50e6
STALL_METRICS = ("max_ns", "clat_max_ns")


@dataclass(frozen=True)
class StoredCell:
    label: str
    boot: str  # boot folder, relative to the results folder
    step: str  # step id in that boot
    reruns: int  # times it was measured again because the host was busy
    wall_s: float | None
    history: list  # Cell.history, for time estimates
    format: int = FORMAT


class CellStore:
    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.directory = layout.cells

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.json"

    def get(self, key: str) -> StoredCell | None:
        path = self.path(key)
        if not path.exists():
            return None
        data = json.loads(path.read_text())
        if data.get("format") != FORMAT:
            return None
        stored = StoredCell(**data)
        if not (self.layout.results / stored.boot / runner.HOST_VIEW).exists():
            return None
        return stored

    def put(self, key: str, cell: StoredCell) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.directory / f"{key}.partial"
        tmp.write_text(json.dumps(asdict(cell), indent=1) + "\n")
        tmp.rename(self.path(key))

    def all(self) -> list[StoredCell]:
        found = (self.get(p.stem) for p in sorted(self.directory.glob("*.json"))) \
            if self.directory.exists() else ()
        return [cell for cell in found if cell]


def stall_ns(config: BootConfig, outcome: runner.StepOutcome) -> float | None:
    """The longest operation of an -icount step when it is a stall, else None."""
    if config.mode != "tcg-icount" or not outcome.numbers:
        return None
    longest = max((f.value for f in outcome.numbers.figures
                   if f.metric in STALL_METRICS and not f.lock), default=0.0)
    return longest if longest >= STALL_NS else None


def rows_for(cell: Cell, outcome: runner.StepOutcome, reruns: int,
             spinlock: str | None = None) -> list[tidy.Row]:
    """The tidy rows of one measured step; spinlock: the boot's, as its guest saw it."""
    c = cell.config
    status = "stalled" if outcome.status == "ok" and stall_ns(c, outcome) else outcome.status

    def row(phase, lock, metric, value, unit):
        return tidy.Row(c.kernel, c.flavour, c.mode, cell.workload.name, cell.fs, c.cpus,
                        cell.procs, c.repetition, phase, lock, metric, value, unit,
                        status, cell.key, cell.machine)
    rows = []
    if outcome.numbers:
        for fig in outcome.numbers.figures:
            # lock_stat stops counting after a lockdep report: such figures are void.
            if fig.lock and outcome.numbers.lockstat_valid is False:
                continue
            rows.append(row(fig.phase, fig.lock, fig.metric, fig.value, fig.unit))
        if outcome.numbers.lockstat_valid is not None:
            rows.append(row("all", "", "lockstat_valid", int(outcome.numbers.lockstat_valid), ""))
    rows.append(row("all", "", "lockdep_reports",
                    sum(1 for r in outcome.reports if r["kind"] in runner.LOCKDEP_KINDS),
                    "count"))
    for kind, count in sorted(Counter(r["kind"] for r in outcome.reports).items()):
        rows.append(row("all", "", f"reports.{kind}", count, "count"))
    rows.append(row("all", "", "reruns", reruns, "count"))
    if spinlock:  # 1: the queued spinlock of bare metal; 0: the test-and-set virt_spin_lock
        rows.append(row("all", "", "guest_qspinlock", int(spinlock == "qspinlock"), ""))
    if outcome.together is not None:  # the share of the step both vCPUs ran at once
        rows.append(row("all", "", "vcpus_together_low", outcome.together[0], "share"))
        rows.append(row("all", "", "vcpus_together_high", outcome.together[1], "share"))
    if outcome.wall_s and outcome.others_cpu_s is not None:
        rows.append(row("all", "", "host_others_cores", outcome.others_cpu_s / outcome.wall_s,
                        "cores"))
    return rows


def derive(layout: Layout, cells: list[tuple[Cell, StoredCell]],
           order: lockorder.LockOrder
           ) -> tuple[list[tidy.Row], list[lockorder.Edge], list[runner.BootRecord]]:
    """Rows of stored cells, the icache edges and the records of their boots,
    from the boot folders.

    Each boot folder is read once, with the steps of the cells it holds.
    """
    by_boot: dict[str, list[tuple[Cell, StoredCell]]] = {}
    for cell, stored in cells:
        by_boot.setdefault(stored.boot, []).append((cell, stored))
    rows: list[tidy.Row] = []
    edges: list[lockorder.Edge] = []
    records: list[runner.BootRecord] = []
    for boot, members in by_boot.items():
        directory = layout.results / boot
        record = runner.read_boot(directory, [cell.step(stored.step) for cell, stored in members],
                                  order)
        records.append(record)
        for cell, stored in members:
            rows += rows_for(cell, record.step(stored.step), stored.reruns, record.spinlock)
        if members[0][0].config.flavour in LOCKDEP_FLAVOURS:
            edges += lockorder.edges_of_boot(directory, order)
    return rows, edges, records
