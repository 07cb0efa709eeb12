"""make faults: fault injection in the inode cache on every kernel, mainline as the control.

Every kernel boots its faults image (configs/faults.config: the sanitize
checkers plus fault injection) and runs each workload of FAULT_WORKLOADS on
every filesystem it declares, while the kernel fails a share of the inode
and dentry cache allocations, of the larger page allocations and of the
block requests of the workload's own tasks (guest/faults.py says what and
how). What a step is asked to fail is drawn from the seed, the round and the
step alone, never the kernel, so every kernel meets the faults mainline
met: a report mainline gives under them is 6.1's own, one that only a
series gives is a finding (faults_summary.py).

A round is every workload and filesystem once per vCPU count, mainline
first; one boot runs one workload on each of its filesystems, so every
step on ext4 or XFS starts from a fresh copy of the disk: a journal that an
earlier step's fault aborted, or a filesystem it shut down, never stands in
a later step's way, and a report that switches lockdep off costs at most
two more steps. Each measured step is a
cell (results/cells/), keyed by the kernel image, the guest, the workload,
the round and the step's faults, so a run that stops resumes: `make faults`
again measures only what is missing. A step that could not run (its boot
died first, its disk did not mount) or ran after an earlier step's report
had switched lockdep off is run again in a boot of its own, up to
MAX_ATTEMPTS times in all. Without a duration one round is measured; with
one, rounds follow until the time is up. results/faults/seed<S>/ holds the
boots and summary.md and summary.json, rewritten before and after every boot.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness import host, lockorder, progress
from harness.boot import qemu, runner
from harness.guest import initramfs, plan, protocol
from harness.guest.faults import Faults
from harness.guest.workloads import Workload
from harness.kernels import kbuild
from harness.kernels.kbuild import KernelImage
from harness.layout import Layout, slug
from harness.parsers import fault_injection, kernel_reports
from harness.run import cells, faults_summary, matrix
from harness.run.faults_summary import CONTROL, CellResult, Seen

FLAVOUR = "faults"
FAULT_WORKLOADS = ("torture", "create-unlink", "fstree", "sbwalk", "nsmix")
FAULT_CPUS = (2,)
MAX_ATTEMPTS = 2  # boots a step may take: the first, and one more if it could not run
# What a step may be asked to fail: percent of the eligible calls, at most so many times.
SLAB_PERCENT, SLAB_TIMES = (1, 2, 5), (20, 50, 100)
PAGE_PERCENT, PAGE_TIMES = (1, 2), (5, 10, 20)
PAGE_SHARE = 0.5  # of the steps fail larger page allocations too
BLOCK_PERCENT, BLOCK_TIMES = (1, 2, 5), (5, 10, 20)
# guest/faults.py; not drawn: each round has both on every workload, ext4 and
# XFS swapping them from one round to the next.
BLOCK_SCOPES = ("task", "disk")


def draw_faults(seed: int, round_no: int, workload: str, fs: str, cpus: int) -> Faults:
    """One step's faults, from the seed, the round and the step alone."""
    rng = random.Random(f"faults/{seed}/{round_no}/{workload}/{fs}/{cpus}")
    slab = rng.choice(SLAB_PERCENT), rng.choice(SLAB_TIMES)
    page = rng.choice(PAGE_PERCENT), rng.choice(PAGE_TIMES)
    block = rng.choice(BLOCK_PERCENT), rng.choice(BLOCK_TIMES)
    if rng.random() >= PAGE_SHARE:
        page = (0, 0)
    if fs not in protocol.DISK_FILESYSTEMS:
        return Faults(*slab, *page, 0, 0)
    scope = BLOCK_SCOPES[(round_no + protocol.DISK_FILESYSTEMS.index(fs)) % 2]
    return Faults(*slab, *page, *block, scope)


@dataclass(frozen=True)
class FaultCell:
    round: int
    kernel: str
    workload: Workload
    fs: str
    cpus: int
    procs: int
    faults: Faults
    key: str

    @property
    def label(self) -> str:
        return (f"{self.kernel} round {self.round} {self.workload.name}/{self.fs} "
                f"{self.cpus} vCPUs [{self.faults.label}]")

    def step(self, step_id: str) -> plan.Step:
        return plan.Step(step_id, self.workload, self.fs, self.procs, self.faults)


@dataclass(frozen=True)
class Setup:
    """What every boot of one faults run shares."""
    layout: Layout
    seed: int
    kernels: list[str]  # mainline first when asked for
    workloads: list[Workload]
    cpus: tuple[int, ...]
    images: dict[str, KernelImage]
    orders: dict[str, lockorder.LockOrder]
    files: initramfs.GuestFiles
    machine: host.Machine
    out: Path


def cell_key(setup: Setup, kernel: str, round_no: int, workload: Workload, fs: str,
             cpus: int, procs: int, faults: Faults) -> str:
    """A compare cell's key of the faults boot, and the step's faults."""
    mode = matrix.boot_mode(setup.machine.accel, cpus, setup.machine.cores)
    config = matrix.BootConfig(kernel, FLAVOUR, mode, cpus, round_no)
    base = matrix.cell_key(setup.images[kernel], setup.files.digests[workload.name], config,
                           workload, fs, procs, setup.machine)
    return hashlib.sha256(f"{base}\n{faults.label}".encode()).hexdigest()[:20]


def plan_round(setup: Setup, round_no: int) -> list[FaultCell]:
    """Every cell of one round, kernel by kernel (mainline first)."""
    out = []
    for kernel in setup.kernels:
        for cpus in setup.cpus:
            for workload in setup.workloads:
                procs = max(workload.procs_for(cpus))
                for fs in workload.filesystems:
                    faults = draw_faults(setup.seed, round_no, workload.name, fs, cpus)
                    out.append(FaultCell(round_no, kernel, workload, fs, cpus, procs, faults,
                                         cell_key(setup, kernel, round_no, workload, fs, cpus,
                                                  procs, faults)))
    return out


def _failed(outcome: runner.StepOutcome) -> dict[str, int]:
    """The workload's errors line: "op.ERRNO" -> operations that failed so."""
    figures = outcome.numbers.figures if outcome.numbers else ()
    return {f.metric.removeprefix("errors."): int(f.value) for f in figures
            if f.phase == "errors" and f.metric.startswith("errors.")}


def _fault_record(directory: Path, step: str) -> fault_injection.FaultRecord:
    """The step's faults record; one that never came says so as its error."""
    path = directory / "files" / f"{step}.faults"
    if not path.exists():
        return fault_injection.FaultRecord((), "no faults record (the step did not end)")
    return fault_injection.parse_record(path.read_text(), str(path))


def cell_result(layout: Layout, cell: FaultCell, directory: Path, outcome: runner.StepOutcome,
                span: tuple[int, int | None] | None,
                found: tuple[kernel_reports.Report, ...],
                injected: list[fault_injection.InjectedFault]) -> CellResult:
    """What the summary needs of one step, from its boot's console and records."""
    begin, end = span if span else (0, -1)
    last = end if end is not None else float("inf")
    record = _fault_record(directory, outcome.step)
    shown = [fault for fault in injected if begin <= fault.line <= last]
    counts = fault_injection.injected(record, shown)
    sites: dict[str, int] = defaultdict(int)
    for fault in shown:
        sites[fault.site] += 1
    return CellResult(
        cell.kernel, cell.round, cell.workload.name, cell.fs, cell.cpus, cell.faults.label,
        outcome.status, str(directory.relative_to(layout.results)), outcome.step,
        outcome.wall_s, {attr: n for attr, (n, _) in counts.items()},
        tuple(attr for attr, (_, reached) in counts.items() if reached), record.error,
        _failed(outcome),
        tuple(Seen(r.kind, r.title, r.line) for r in found if begin <= r.line <= last),
        dict(sites))


@dataclass
class BootRead:
    """One boot folder read back: each step's result, and which steps must run again."""
    results: dict[str, CellResult]  # cell key -> result
    again: list[str]  # cell keys of steps that could not run, or ran with lockdep off


def read_boot(setup: Setup, directory: Path, members: list[tuple[FaultCell, str]]) -> BootRead:
    kernel = members[0][0].kernel
    record = runner.read_boot(directory, [c.step(s) for c, s in members], setup.orders[kernel])
    console = (directory / "console.log").read_text(errors="replace")
    found = kernel_reports.parse(console)
    off = kernel_reports.lockdep_off_line(found)
    injected = fault_injection.parse_console(console)
    spans = runner.step_lines(console)
    read = BootRead({}, [])
    for cell, step_id in members:
        outcome = record.step(step_id)
        span = spans.get(step_id)
        read.results[cell.key] = cell_result(setup.layout, cell, directory, outcome, span,
                                             found, injected)
        lockdep_was_off = (outcome.status == "unchecked" and span is not None
                           and off is not None and off < span[0])
        if outcome.status in ("not-run", "lost") or lockdep_was_off:
            read.again.append(cell.key)
    return read


@dataclass
class Progress:
    """The run so far: results, boots, time."""
    started: float
    deadline: float | None
    duration_s: float | None
    results: dict[str, CellResult] = field(default_factory=dict)
    boots: list[dict] = field(default_factory=list)
    cells_booted: int = 0
    boot_seconds: float = 0.0
    rounds: list[int] = field(default_factory=list)

    def time_up(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def left_s(self, cells_left: int) -> float | None:
        """Time left: from this run's seconds per cell, capped by the deadline."""
        estimate = (self.boot_seconds / self.cells_booted * cells_left
                    if self.cells_booted else None)
        if self.deadline is None:
            return estimate
        remaining = max(0.0, self.deadline - time.monotonic())
        return remaining if estimate is None else min(estimate, remaining)


def load_stored(setup: Setup, state: Progress, planned: list[FaultCell]) -> None:
    """Cells an earlier run measured: read back from their boot folders."""
    store = cells.CellStore(setup.layout)
    by_boot: dict[str, list[tuple[FaultCell, str]]] = defaultdict(list)
    for cell in planned:
        stored = store.get(cell.key)
        if stored and cell.key not in state.results:
            by_boot[stored.boot].append((cell, stored.step))
    for boot, members in by_boot.items():
        state.results.update(read_boot(setup, setup.layout.results / boot, members).results)


def boot_once(setup: Setup, state: Progress, pending: list[FaultCell], attempt: int,
              planned_left: int) -> list[FaultCell]:
    """One boot of one kernel's pending cells; returns those to run again."""
    kernel, round_no = pending[0].kernel, pending[0].round
    steps = [cell.step(f"s{i:02d}") for i, cell in enumerate(pending, 1)]
    name = f"{time.strftime('%Y%m%d-%H%M%S')}-r{round_no}-{slug(kernel)}-a{attempt}"
    directory = setup.out / "boots" / name
    left = state.left_s(planned_left)
    progress.say(f"faults boot {len(state.boots) + 1}: {kernel} round {round_no}"
                 f"{' (again)' if attempt > 1 else ''}, {len(steps)} steps on "
                 f"{pending[0].cpus} vCPUs; {len(state.results)} cells measured, {planned_left} "
                 f"to go" + (f", about {progress.format_duration(left)} left" if left else ""))
    write_summary(setup, state, running=name)
    record = runner.run_boot(setup.images[kernel], setup.files,
                             qemu.Machine(setup.machine.accel, pending[0].cpus), steps,
                             directory, f"faults seed {setup.seed} round {round_no}",
                             setup.orders[kernel])
    read = read_boot(setup, directory, [(c, s.id) for c, s in zip(pending, steps)])
    state.boots.append({"boot": name, "kernel": kernel, "round": round_no, "steps": len(steps),
                        "status": record.status, "wall_s": round(record.wall_s, 1)})
    state.cells_booted += len(steps)
    state.boot_seconds += record.wall_s
    store = cells.CellStore(setup.layout)
    again = []
    for cell, step in zip(pending, steps):
        if cell.key in read.again and attempt < MAX_ATTEMPTS:
            again.append(cell)
            continue
        result = read.results[cell.key]
        state.results[cell.key] = result
        mode = matrix.boot_mode(setup.machine.accel, cell.cpus, setup.machine.cores)
        store.put(cell.key, cells.StoredCell(cell.label, result.boot, step.id, 0, result.wall_s,
                                             [cell.workload.name, cell.fs, FLAVOUR, mode,
                                              cell.cpus]))
    progress.say(f"  {record.status} in {record.wall_s:.0f}s: "
                 f"{sum(len(r.reports) for k, r in read.results.items())} kernel reports"
                 + (f"; {len(again)} steps to run again" if again else ""))
    return again


def run_round(setup: Setup, state: Progress, round_no: int) -> None:
    planned = plan_round(setup, round_no)
    load_stored(setup, state, planned)
    state.rounds.append(round_no)
    for kernel in setup.kernels:
        for cpus in setup.cpus:
            for workload in setup.workloads:
                pending = [c for c in planned
                           if (c.kernel, c.cpus, c.workload) == (kernel, cpus, workload)
                           and c.key not in state.results]
                attempt = 0
                while pending and not state.time_up():
                    attempt += 1
                    left = sum(1 for c in planned if c.key not in state.results)
                    pending = boot_once(setup, state, pending, attempt, left)


def faults(layout: Layout, kernels: list[str], known: list[Workload],
           duration_s: float | None, cpus: tuple[int, ...] = FAULT_CPUS, seed: int = 1,
           accel: str = "tcg", names: tuple[str, ...] = FAULT_WORKLOADS) -> Path:
    """Measure one round (no duration) or rounds until the time is up; the folder.
    names: the workloads of a round (the tests run fewer)."""
    out = layout.faults / f"seed{seed}"
    out.mkdir(parents=True, exist_ok=True)
    kernels = sorted(kernels, key=lambda k: k != CONTROL)
    declared = {w.name: w for w in known}
    missing = [name for name in names if name not in declared]
    if missing:
        raise ValueError(f"make faults needs the workloads {', '.join(missing)}: no "
                         f"workloads/NAME.wl declares them")
    chosen = [declared[name] for name in names]
    images = {}
    for i, kernel in enumerate(kernels, 1):
        progress.say(f"kernel {i}/{len(kernels)}: {kernel}/{FLAVOUR}")
        images[kernel] = kbuild.build(layout, kernel, FLAVOUR)
    setup = Setup(layout, seed, kernels, chosen, cpus, images,
                  {k: lockorder.for_kernel(layout, k) for k in kernels},
                  initramfs.prepare(layout, chosen), host.this_machine(accel), out)
    started = time.monotonic()
    state = Progress(started, started + duration_s if duration_s else None, duration_s)
    round_no = 1
    while True:
        run_round(setup, state, round_no)
        if state.deadline is None or state.time_up():
            break
        round_no += 1
    write_summary(setup, state, finished=True)
    return out


def write_summary(setup: Setup, state: Progress, running: str | None = None,
                  finished: bool = False) -> None:
    rounds = state.rounds or [1]
    planned: dict[str, int] = defaultdict(int)
    keys = set()
    for round_no in rounds:
        for cell in plan_round(setup, round_no):
            planned[cell.kernel] += 1
            keys.add(cell.key)
    if finished:
        state_line = "Finished." if not state.time_up() else "Finished: the time was up."
    elif running:
        state_line = (f"Boot {running} was running when this was written; if make faults is "
                      "no longer running, it stopped there (run it again to resume).")
    else:
        state_line = "Between boots."
    meta = {"seed": setup.seed, "rounds": rounds, "cpus": list(setup.cpus),
            "workloads": [w.name for w in setup.workloads], "kernels": setup.kernels,
            "wall_s": round(time.monotonic() - state.started, 1),
            "duration_s": state.duration_s, "state": state_line, "finished": finished,
            "running": running, "boots": state.boots,
            # Which patches each kernel's cells ran: a compare's record counts them for
            # its kernel when its own patches are the same (run/records.py).
            "images": {k: asdict(kbuild.identity(i)) for k, i in setup.images.items()}}
    results = [r for k, r in state.results.items() if k in keys]
    faults_summary.write(setup.out, results, meta, dict(planned))
