"""Measuring a run: boot what is pending, store each cell, rerun what a busy host spoiled.

The boots themselves are an executor's job. LocalExecutor boots them one
after the other on this machine; another executor (a cluster's) only has
to run the same BootJobs and hand back their records. Everything else, the
rerun policy, the cell store, the progress and the estimate, is here and
the same for all of them.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Protocol

from harness import host, lockorder, progress
from harness.boot import qemu, runner, tcg_cs
from harness.guest import initramfs, plan, protocol
from harness.kernels.kbuild import LOCKDEP_FLAVOURS, KernelImage
from harness.layout import Layout
from harness.run import tidy
from harness.run.cells import CellStore, StoredCell, rows_for, stall_ns
from harness.run.estimate import StepTimes
from harness.run.matrix import BootConfig, Cell

DISTURBED_CORES = 0.25  # other processes' average CPU use (cores) that spoils a timed step


@dataclass
class BootJob:
    """One boot to run: a configuration and the cells it measures."""
    config: BootConfig
    image: KernelImage
    cells: list[Cell]
    boot_id: str
    directory: Path
    order: lockorder.LockOrder

    @property
    def steps(self) -> list[plan.Step]:
        return plan.make_steps([(c.workload, c.fs, c.procs) for c in self.cells])

    @property
    def header(self) -> str:
        c = self.config
        return (f"inode-duel boot {self.boot_id}\nkernel {c.kernel} ({self.image.key}), "
                f"{c.flavour}, {c.mode}, {c.cpus} vCPUs")


class Watch(Protocol):
    """What an executor reports while it runs boots."""

    def boot_started(self, job: BootJob) -> None: ...

    def console_line(self, job: BootJob, line: str) -> None: ...


class Executor(Protocol):
    """Runs BootJobs and yields each with its record, in the order they finish.

    Each boot folder it hands back holds the host.Node that ran it
    (node.json). A job it yields may carry other cells than it was given:
    the same cells re-keyed for the machine they really ran on
    (matrix.on_machine). parallel: how many boots run at once, for the time
    estimate.
    """
    parallel: int

    def run(self, jobs: list[BootJob], watch: Watch) -> Iterator[tuple[BootJob,
                                                                        runner.BootRecord]]: ...


def job_machine(layout: Layout, job: BootJob, accel: str) -> qemu.Machine:
    """The machine of a boot; a tcg-cs one carries the plugin configured for its folder."""
    if job.config.mode in (tcg_cs.MODE, tcg_cs.MODE_RR):
        return tcg_cs.machine(layout, job.image, job.directory, job.order, job.config.cpus,
                              repetition=job.config.repetition)
    return job.config.machine(accel)


@dataclass
class LocalExecutor:
    """Boots on this machine, one at a time (two guests would time each other)."""
    files: initramfs.GuestFiles
    accel: str
    layout: Layout
    parallel: int = 1

    def __post_init__(self) -> None:
        self.node = host.this_node(self.accel)

    def run(self, jobs: list[BootJob], watch: Watch):
        for job in jobs:
            watch.boot_started(job)
            record = runner.run_boot(job.image, self.files,
                                     job_machine(self.layout, job, self.accel),
                                     job.steps, job.directory, job.header, job.order,
                                     on_line=lambda line, job=job: watch.console_line(job, line))
            self.node.save(job.directory)
            yield job, record


@dataclass
class Placement:
    """Where a run's boots go: the machine they are planned for, the executor that runs
    them, and other machines whose stored cells count as done (the other kinds of node
    of a cluster partition, seen in earlier runs)."""
    node: host.Node  # the machine and what else the manifest says of the host
    executor: Executor
    described: dict  # the executor and its knobs, for the manifest
    also_known: list[host.Machine] = field(default_factory=list)

    @property
    def machine(self) -> host.Machine:
        return self.node.machine


def disturbed(outcome: runner.StepOutcome) -> bool:
    if outcome.wall_s is None or outcome.others_cpu_s is None or outcome.wall_s <= 0:
        return False
    return outcome.others_cpu_s / outcome.wall_s > DISTURBED_CORES


def why_rerun(config: BootConfig, outcome: runner.StepOutcome) -> str:
    """Why a step's figures must not stand, "" when they may: a timed step on a busy
    host, an -icount step with a stall of its own."""
    # Only plain-mode perf steps are timings: -icount and tcg-cs count
    # instructions, and an oversubscribed boot is never timed.
    if config.flavour == "perf" and config.mode in ("tcg", "kvm") and disturbed(outcome):
        return (f"host busy ({outcome.others_cpu_s:.1f} CPU s of others in "
                f"{outcome.wall_s:.1f}s)")
    stalled = stall_ns(config, outcome)
    if stalled:
        return f"stalled: one operation took {stalled / 1e6:.0f} ms of emulated time"
    return ""


@dataclass
class Measured:
    rows: list[tidy.Row] = field(default_factory=list)
    edges: dict[str, set[lockorder.Edge]] = field(default_factory=dict)
    boots: list[runner.BootRecord] = field(default_factory=list)
    reruns: int = 0
    unmeasured: list[str] = field(default_factory=list)  # cells every attempt failed
    # (flavour, mode) -> [boots, wall seconds], reruns included
    boot_time: dict[tuple[str, str], list[float]] = field(default_factory=dict)

    def count_boot(self, config: BootConfig, wall_s: float) -> None:
        spent = self.boot_time.setdefault((config.flavour, config.mode), [0, 0.0])
        spent[0] += 1
        spent[1] += wall_s

    @property
    def stages(self) -> list[dict]:
        """The boots stage of the run's timing (run/stages.py), per flavour and mode."""
        return [{"stage": "boots", "flavour": flavour, "mode": mode, "boots": int(n),
                 "seconds": round(seconds, 1)}
                for (flavour, mode), (n, seconds) in sorted(self.boot_time.items())]


@dataclass
class _Running:
    first_cell: int  # cells of the boots started before it
    labels: dict[str, str]  # step id -> label
    step_s: dict[str, float]  # step id -> its estimated seconds, in step order
    others_s: float  # estimate of the other unfinished boots, over the parallelism
    first_step_at: float | None = None

    def left(self, step_id: str, now: float) -> float:
        """Seconds left when step_id begins: its estimate, its successors' and the
        other boots', scaled by this boot's pace so far (measured over estimated
        seconds of its finished steps), so a busy or slow host lengthens it."""
        ids = list(self.step_s)
        k = ids.index(step_id)
        if self.first_step_at is None:
            self.first_step_at = now
        done_s = sum(self.step_s[i] for i in ids[:k])
        pace = (now - self.first_step_at) / done_s if done_s > 0 else 1.0
        return pace * (sum(self.step_s[i] for i in ids[k:]) + self.others_s)


@dataclass
class _Progress:
    """The progress lines of the measuring: boot i of n, cell j of m, time left.

    Boots may run side by side (a cluster): each running boot keeps its own
    clock and cell numbers, and the time left is the pending estimate over
    the executor's parallelism.
    """
    times: StepTimes
    total_cells: int
    total_boots: int
    parallel: int = 1
    on_line: object = None
    pending_s: float = 0.0  # estimate of the boots handed to the executor, not finished
    boots_started: int = 0
    cells_started: int = 0
    running: dict[str, _Running] = field(default_factory=dict)

    def boot_started(self, job: BootJob) -> None:
        self.boots_started += 1
        left = self.pending_s / max(1, self.parallel)
        steps = job.steps
        others_s = max(0.0, self.pending_s - self.times.boot(job.cells)) / max(1, self.parallel)
        self.running[job.boot_id] = _Running(
            self.cells_started, {step.id: step.label for step in steps},
            {step.id: self.times.step(cell.history) for step, cell in zip(steps, job.cells)},
            others_s)
        self.cells_started += len(job.cells)
        progress.say(f"boot {self.boots_started}/{self.total_boots}: {job.config.label}: "
                     f"{len(job.cells)} steps, about {progress.format_duration(left)} left")

    def console_line(self, job: BootJob, line: str) -> None:
        mark = protocol.step_mark(line)
        run = self.running.get(job.boot_id)
        if run and mark and mark[1] == "begin" and mark[0] in run.labels:
            index = run.first_cell + list(run.labels).index(mark[0]) + 1
            left = run.left(mark[0], time.monotonic())
            progress.say(f"  cell {index}/{self.total_cells}: {run.labels[mark[0]]} "
                         f"(about {progress.format_duration(left)} left)")
        if self.on_line:
            self.on_line(line)

    def boot_finished(self, job: BootJob) -> None:
        self.running.pop(job.boot_id, None)
        self.pending_s -= self.times.boot(job.cells)


def link_tree(source: Path, target: Path) -> None:
    if target.exists():
        return
    shutil.copytree(source, target, copy_function=os.link)


def measure(layout: Layout, pending: list[tuple[BootConfig, KernelImage, list[Cell]]],
            orders: dict[str, lockorder.LockOrder], run_dir: Path, executor: Executor,
            times: StepTimes, max_reruns: int, on_line=None) -> Measured:
    """Boot every pending configuration; store each cell; rerun disturbed timed steps."""
    store = CellStore(layout)
    result = Measured()
    reruns: dict[str, int] = {}
    total_cells = sum(len(cells) for _, _, cells in pending)
    watch = _Progress(times, total_cells, len(pending), executor.parallel, on_line)
    attempts_left = len(pending) * (max_reruns + 2)
    while pending and attempts_left > 0:
        # Named when planned; one batch holds each configuration once, so
        # the slug keeps them apart.
        stamp = time.strftime('%Y%m%d-%H%M%S')
        while any(layout.boot_dir(f"{stamp}-{c.slug}").exists() for c, _, _ in pending):
            stamp += "b"
        jobs = [BootJob(config, image, cells, f"{stamp}-{config.slug}",
                        layout.boot_dir(f"{stamp}-{config.slug}"), orders[config.kernel])
                for config, image, cells in pending]
        pending = []
        watch.pending_s = times.estimate([job.cells for job in jobs])
        for job, record in executor.run(jobs, watch):
            attempts_left -= 1
            watch.boot_finished(job)
            result.boots.append(record)
            result.count_boot(job.config, record.wall_s)
            progress.say(f"  {job.config.label}: {record.status} in {record.wall_s:.0f}s"
                         + (f" ({len(record.reports)} kernel reports)" if record.reports else "")
                         + (f"; {len(record.damaged)} damaged records" if record.damaged
                            else ""))
            edges = lockorder.edges_of_boot(job.directory, job.order) \
                if job.config.flavour in LOCKDEP_FLAVOURS else []
            retry: list[Cell] = []
            for cell, outcome in zip(job.cells, record.steps):
                done = reruns.get(cell.key, 0)
                if outcome.status == "not-run":
                    retry.append(cell)
                    continue
                why = why_rerun(job.config, outcome)
                if why and done < max_reruns:
                    progress.say(f"  {cell.label}: {why}, will rerun")
                    reruns[cell.key] = done + 1
                    result.reruns += 1
                    retry.append(cell)
                    continue
                store.put(cell.key, StoredCell(
                    cell.label, str(job.directory.relative_to(layout.results)), outcome.step,
                    done, outcome.wall_s, list(cell.history)))
                times.add(cell.history, outcome.wall_s)
                result.rows += rows_for(cell, outcome, done, record.spinlock)
                result.edges.setdefault(job.config.kernel, set()).update(edges)
            link_tree(job.directory, run_dir / "boots" / job.boot_id)
            if retry:
                pending.append((job.config, job.image, retry))
                watch.total_boots += 1
                watch.total_cells += len(retry)
    # Out of attempts: said and kept in the manifest, never dropped in silence.
    result.unmeasured = [cell.label for _, _, cells in pending for cell in cells]
    if result.unmeasured:
        progress.say(f"{len(result.unmeasured)} cells not measured after every attempt: "
                     + "; ".join(result.unmeasured))
    return result
