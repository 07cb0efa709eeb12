"""The measurement matrix: which boots to run, in what order, reusing what is done.

A cell is one step (workload, fs, procs) of one boot configuration (kernel,
flavour, mode, vCPUs, repetition). Finished cells are stored under
results/cells/ keyed by everything that shaped them (kernel image key,
initramfs, workload declaration, machine), so an interrupted compare resumes
where it stopped and a changed kernel never inherits old numbers.

Order: repetitions outermost and kernels inside (A B A B, not A A B B), so a
slow phase of the host hits every kernel alike (design.md section 6).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness import lockorder, progress
from harness.boot import qemu, runner, tcg_cs
from harness.guest import initramfs, plan
from harness.kernels import kbuild
from harness.parsers import lockdep_graph
from harness.run import tidy
from harness.layout import Layout
from harness.guest.workloads import Workload

DISTURBED_CORES = 0.25  # other processes' average CPU use (cores) that spoils a timed step


@dataclass(frozen=True)
class BootConfig:
    kernel: str
    flavour: str
    mode: str  # tcg, tcg-icount, kvm
    cpus: int
    repetition: int

    @property
    def label(self) -> str:
        return (f"{self.kernel}/{self.flavour} {self.mode} {self.cpus}cpu "
                f"rep{self.repetition}")

    @property
    def slug(self) -> str:
        return (f"{self.kernel.replace('@', '_at_')}-{self.flavour}-{self.mode}-"
                f"c{self.cpus}-r{self.repetition}")

    def machine(self, accel: str) -> qemu.Machine:
        return qemu.Machine(accel, self.cpus, icount=self.mode == "tcg-icount")


@dataclass(frozen=True)
class Matrix:
    kernels: list[str]
    cpus: list[int]
    workloads: list[Workload]
    repeat: int  # perf boots per kernel and vCPU count
    debug_repeat: int = 1  # lock counts are exact: one debug boot settles them
    icount_repeat: int = 0  # 1-vCPU -icount perf boots per kernel
    cs_repeat: int = 0  # 1-vCPU tcg-cs boots per kernel (critical-section lengths)
    flavours: tuple[str, ...] = ("perf", "debug")
    max_reruns: int = 2

    def boots(self, accel: str) -> list[BootConfig]:
        plain = "kvm" if accel == "kvm" else "tcg"
        configs: list[BootConfig] = []
        if "debug" in self.flavours:
            for rep in range(1, self.debug_repeat + 1):
                configs += [BootConfig(k, "debug", plain, c, rep)
                            for c in self.cpus for k in self.kernels]
        if "perf" in self.flavours:
            if accel == "tcg":
                for rep in range(1, self.icount_repeat + 1):
                    configs += [BootConfig(k, "perf", "tcg-icount", 1, rep) for k in self.kernels]
                for rep in range(1, self.cs_repeat + 1):
                    configs += [BootConfig(k, "perf", tcg_cs.MODE, 1, rep) for k in self.kernels]
            for rep in range(1, self.repeat + 1):
                configs += [BootConfig(k, "perf", plain, c, rep)
                            for c in self.cpus for k in self.kernels]
        return configs


@dataclass
class Cell:
    config: BootConfig
    workload: Workload
    fs: str
    procs: int
    key: str
    stored: dict | None = None

    @property
    def label(self) -> str:
        return f"{self.config.label} {self.workload.name}/{self.fs}/p{self.procs}"


@dataclass
class CompareResult:
    run_dir: Path
    rows: list[tidy.Row] = field(default_factory=list)
    boots: list[runner.BootRecord] = field(default_factory=list)
    reruns: int = 0
    # kernel -> icache edges lockdep observed: (held, taken, held role, taken role)
    edges: dict[str, set[tuple[str, str, str, str]]] = field(default_factory=dict)


def observed_edges(boot_dir: Path, patterns: dict[str, tuple[str, ...]]) -> list[list[str]]:
    """The icache lock-order edges of a debug boot's /proc/lockdep."""
    dump = boot_dir / "files" / "lockdep"
    if not dump.exists():
        return []
    edges = lockdep_graph.parse(dump.read_text(errors="replace"))
    return [list(e) for e in lockorder.icache_edges(edges, patterns)]


def cell_key(image: kbuild.KernelImage, initramfs: Path, config: BootConfig,
             workload: Workload, fs: str, procs: int, accel: str) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([image.key, initramfs.name, config.flavour, config.mode, accel,
                         config.cpus, config.repetition, fs, procs]).encode())
    if config.mode == tcg_cs.MODE:  # the plugin measures: a changed one measures anew
        h.update(tcg_cs.plugin_digest().encode())
    h.update(workload.text.encode())
    return h.hexdigest()[:20]


def cells_dir(layout: Layout) -> Path:
    return layout.results / "cells"


def load_cell(layout: Layout, key: str) -> dict | None:
    path = cells_dir(layout) / f"{key}.json"
    return json.loads(path.read_text()) if path.exists() else None


def store_cell(layout: Layout, key: str, content: dict) -> None:
    directory = cells_dir(layout)
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f"{key}.partial"
    tmp.write_text(json.dumps(content, indent=1) + "\n")
    tmp.rename(directory / f"{key}.json")


def disturbed(outcome: runner.StepOutcome) -> bool:
    if outcome.wall_s is None or outcome.others_cpu_s is None or outcome.wall_s <= 0:
        return False
    return outcome.others_cpu_s / outcome.wall_s > DISTURBED_CORES


def rows_for(cell: Cell, outcome: runner.StepOutcome, boot_id: str,
             reruns: int) -> list[dict]:
    c = cell.config
    def row(phase, lock, metric, value, unit):
        return tidy.Row(c.kernel, c.flavour, c.mode, cell.workload.name, cell.fs, c.cpus,
                        cell.procs, c.repetition, phase, lock, metric, value, unit,
                        outcome.status, cell.key)
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
    rows.append(row("all", "", "reruns", reruns, "count"))
    if outcome.wall_s and outcome.others_cpu_s is not None:
        rows.append(row("all", "", "host_others_cores", outcome.others_cpu_s / outcome.wall_s,
                        "cores"))
    return tidy.to_dicts(rows)


STEP_TIMES = "step-times.json"
# A boot's wall time beyond its steps' (QEMU start to /init, final dumps):
# (run wall time - step wall times) / boots was 4.4 s and 4.9 s in two
# default runs here.
BOOT_OVERHEAD_S = 5.0
UNKNOWN_STEP_S = 30.0


class StepTimes:
    """Wall seconds of measured cells by (workload, fs, flavour, mode, cpus).

    Loaded from the stored cells and fed each new cell, so the estimate of
    what is left sharpens while a run goes on. A step never measured counts
    as the median of the same workload and flavour on other boots, else of
    steps on the same kind of boot, else UNKNOWN_STEP_S.
    """

    def __init__(self, layout: Layout) -> None:
        self.seen: dict[tuple, list[float]] = {}
        directory = cells_dir(layout)
        for path in directory.glob("*.json") if directory.exists() else ():
            cell = json.loads(path.read_text())
            if cell.get("wall_s") and cell.get("history"):
                self.add(tuple(cell["history"]), cell["wall_s"])
        # Before any cell of its own: the reference run's times (this machine's),
        # from the results folder in use, else the one committed in the checkout.
        self.prior: dict[tuple, list[float]] = {}
        for folder in (layout.results, layout.repo / "results"):
            prior = folder / "reference" / STEP_TIMES
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

    def estimate(self, pending: list[tuple[BootConfig, list[Cell]]]) -> float:
        """Seconds the pending boots should take."""
        return sum(BOOT_OVERHEAD_S + sum(self.step(cell_history(config, cell)) for cell in cells)
                   for config, cells in pending)


def step_times_of_run(layout: Layout, run_dir: Path) -> list[dict]:
    """Median step wall time per kind of step among the cells of a run."""
    times: dict[tuple, list[float]] = {}
    for key in sorted({row.cell for row in tidy.read(run_dir / "tidy.tsv")}):
        cell = load_cell(layout, key)
        if cell and cell.get("wall_s") and cell.get("history"):
            times.setdefault(tuple(cell["history"]), []).append(cell["wall_s"])
    return [{"history": list(h), "median_s": round(statistics.median_high(t), 2), "cells": len(t)}
            for h, t in sorted(times.items())]


def cell_history(config: BootConfig, cell: Cell) -> tuple:
    return (cell.workload.name, cell.fs, config.flavour, config.mode, config.cpus)


def image_of(config: BootConfig) -> tuple[str, str]:
    """The images key of a boot: tcg-cs boots the perf kernel plus its marker patch."""
    return config.kernel, tcg_cs.IMAGE if config.mode == tcg_cs.MODE else config.flavour


def link_tree(source: Path, target: Path) -> None:
    if target.exists():
        return
    shutil.copytree(source, target, copy_function=os.link)


def run(layout: Layout, matrix: Matrix, run_dir: Path, accel: str | None = None,
        on_line=None) -> CompareResult:
    started = time.monotonic()
    run_dir.mkdir(parents=True, exist_ok=True)
    result = CompareResult(run_dir)
    files = initramfs.prepare(layout)

    # Build what is missing first: never measure while a kernel builds.
    images: dict[tuple[str, str], kbuild.KernelImage] = {}
    needed = [(k, f) for k in matrix.kernels for f in matrix.flavours]
    for i, (kernel, flavour) in enumerate(needed, 1):
        progress.say(f"kernel {i}/{len(needed)}: {kernel}/{flavour}")
        images[kernel, flavour] = kbuild.build(layout, kernel, flavour)
    if matrix.cs_repeat and "perf" in matrix.flavours:
        for i, kernel in enumerate(matrix.kernels, 1):
            progress.say(f"measurement kernel {i}/{len(matrix.kernels)}: {kernel}/{tcg_cs.IMAGE}")
            images[kernel, tcg_cs.IMAGE] = tcg_cs.build_image(layout, kernel)

    if accel is None:
        first = images[needed[0]]
        accel = qemu.probe_accel(layout.guest, lambda m: probe_spec(layout, first, files, m))
    configs = matrix.boots(accel)
    patterns = {k: lockorder.patterns_for(layout, k) for k in matrix.kernels}

    pending: list[tuple[BootConfig, list[Cell]]] = []
    reused = 0
    for config in configs:
        image = images[image_of(config)]
        cells = []
        for workload in matrix.workloads:
            for fs in workload.filesystems:
                for procs in workload.procs_for(config.cpus):
                    key = cell_key(image, files.initramfs, config, workload, fs, procs, accel)
                    cells.append(Cell(config, workload, fs, procs, key, load_cell(layout, key)))
        reused += sum(1 for c in cells if c.stored)
        todo = [c for c in cells if not c.stored]
        for cell in cells:
            if cell.stored:
                # The same image can carry two names (piggin and piggin@10):
                # rows are the run's kernel's.
                result.rows += [dataclasses.replace(r, kernel=config.kernel)
                                for r in tidy.from_dicts(cell.stored["rows"])]
                result.edges.setdefault(config.kernel, set()).update(
                    tuple(e) for e in cell.stored.get("edges", []))
                link_tree(layout.results / cell.stored["boot"],
                          run_dir / "boots" / Path(cell.stored["boot"]).name)
        if todo:
            pending.append((config, todo))
    total_cells = sum(len(t) for _, t in pending)
    times = StepTimes(layout)
    estimate = times.estimate(pending)
    progress.say(f"{len(configs)} boot configurations, {total_cells} cells to measure in "
                 f"{len(pending)} boots, {reused} reused from earlier runs ({accel}); "
                 f"about {progress.format_duration(estimate)} of measuring")

    meter = progress.Steps(len(pending), "boot")
    attempts = 0
    measured = 0
    while pending:
        config, todo = pending.pop(0)
        left_at_start = times.estimate([(config, todo)] + pending)
        boot_started = time.monotonic()
        meter.start(f"{config.label}: {len(todo)} steps", left_s=left_at_start)
        image = images[image_of(config)]
        boot_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{config.slug}"
        boot_dir = layout.results / "boots" / boot_id
        steps = plan.make_steps([(c.workload, c.fs, c.procs) for c in todo])
        header = (f"inode-duel boot {boot_id}\nkernel {config.kernel} ({image.key}), "
                  f"{config.flavour}, {config.mode}, {config.cpus} vCPUs")
        labels = {step.id: step.label for step in steps}

        def show_cell(line: str, first: int = measured) -> None:
            mark = runner.MARK.search(line)
            if mark and mark.group(2) == "begin" and mark.group(1) in labels:
                index = first + list(labels).index(mark.group(1)) + 1
                left = max(0.0, left_at_start - (time.monotonic() - boot_started))
                progress.say(f"  cell {index}/{total_cells}: {labels[mark.group(1)]} "
                             f"(about {progress.format_duration(left)} left)")
            if on_line:
                on_line(line)

        machine = (tcg_cs.machine(layout, image, boot_dir, patterns[config.kernel])
                   if config.mode == tcg_cs.MODE else config.machine(accel))
        record = runner.run_boot(image, files, machine, steps, boot_dir, header,
                                 patterns[config.kernel], on_line=show_cell)
        measured += len(todo)
        result.boots.append(record)
        progress.say(f"  {config.label}: {record.status} in {record.wall_s:.0f}s"
                     + (f" ({len(record.reports)} kernel reports)" if record.reports else ""))
        edges = observed_edges(boot_dir, patterns[config.kernel]) \
            if config.flavour == "debug" else []
        retry: list[Cell] = []
        for cell, outcome in zip(todo, record.steps):
            reruns = (cell.stored or {}).get("reruns", 0)
            timed = config.flavour == "perf" and config.mode not in ("tcg-icount", tcg_cs.MODE)
            if outcome.status == "not-run":
                retry.append(cell)
                continue
            if timed and disturbed(outcome) and reruns < matrix.max_reruns:
                progress.say(f"  {cell.label}: host busy ({outcome.others_cpu_s:.1f} CPU s "
                             f"of others in {outcome.wall_s:.1f}s), will rerun")
                cell.stored = {"reruns": reruns + 1}
                result.reruns += 1
                retry.append(cell)
                continue
            content = {"label": cell.label, "boot": f"boots/{boot_id}", "step": outcome.step,
                       "status": outcome.status, "reruns": reruns, "wall_s": outcome.wall_s,
                       "history": list(cell_history(config, cell)),
                       "rows": rows_for(cell, outcome, boot_id, reruns), "edges": edges}
            store_cell(layout, cell.key, content)
            times.add(cell_history(config, cell), outcome.wall_s)
            result.rows += tidy.from_dicts(content["rows"])
            result.edges.setdefault(config.kernel, set()).update(tuple(e) for e in edges)
        link_tree(boot_dir, run_dir / "boots" / boot_id)
        meter.finish()
        attempts += 1
        if retry and attempts < len(configs) * (matrix.max_reruns + 2):
            pending.append((config, retry))
            meter.total += 1
            total_cells += len(retry)
    tidy.write(result.rows, run_dir / "tidy.tsv")
    write_conformance(layout, run_dir, result)
    write_manifest(layout, run_dir, matrix, images, accel, time.monotonic() - started, result)
    return result


def write_conformance(layout: Layout, run_dir: Path, result: CompareResult) -> None:
    """Per kernel: the icache edges lockdep saw, and those its lock-order does not allow."""
    out = {}
    for kernel, edges in sorted(result.edges.items()):
        try:
            order = lockorder.load_for(layout, kernel)
        except lockorder.LockOrderError as err:
            out[kernel] = {"error": str(err), "edges": sorted(list(e) for e in edges)}
            continue
        out[kernel] = {
            "lock_order_file": str(order.path.relative_to(layout.repo)),
            "edges": sorted(list(e) for e in edges),
            "role_edges": sorted({(e[2], e[3]) for e in edges}),
            "violations": sorted(list(e) for e in edges if not order.allows(e)),
        }
    (run_dir / "lockorder.json").write_text(json.dumps(out, indent=1) + "\n")


def probe_spec(layout: Layout, image: kbuild.KernelImage, files: initramfs.GuestFiles,
               machine: qemu.Machine) -> qemu.BootSpec:
    probe_plan = layout.guest / "probe-plan.sh"
    probe_plan.write_text("echo 'inode-duel: probe'\n")
    return qemu.BootSpec(image.bzimage, files.initramfs, probe_plan, machine, timeout_s=60)


def write_manifest(layout: Layout, run_dir: Path, matrix: Matrix,
                   images: dict[tuple[str, str], kbuild.KernelImage], accel: str,
                   wall_s: float, result: CompareResult) -> None:
    kernels = {}
    for (kernel, flavour), image in images.items():
        meta = image.meta
        kernels.setdefault(kernel, {"kernel_version": meta["kernel_version"],
                                    "package_version": meta["package_version"],
                                    "patches": meta["patches"], "images": {}})
        kernels[kernel]["images"][flavour] = {"key": image.key, "commit": meta["commit"]}
    manifest = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "wall_seconds": round(wall_s, 1),
        "accel": accel,
        "host": {"cpus": os.cpu_count(), "qemu": qemu_version(),
                 "kernel": os.uname().release},
        "matrix": {"kernels": matrix.kernels, "cpus": matrix.cpus,
                   "workloads": [w.name for w in matrix.workloads], "repeat": matrix.repeat,
                   "debug_repeat": matrix.debug_repeat, "icount_repeat": matrix.icount_repeat,
                   "cs_repeat": matrix.cs_repeat,
                   "flavours": list(matrix.flavours)},
        "oversubscribed": [c for c in matrix.cpus if c > (os.cpu_count() or 1)],
        "kernels": kernels,
        "boots": [{"directory": str(b.directory.relative_to(layout.results)),
                   "status": b.status, "wall_s": round(b.wall_s, 1),
                   "to_init_s": b.to_init_s and round(b.to_init_s, 2),
                   "reports": list(b.reports)} for b in result.boots],
        "reruns": result.reruns,
    }
    (run_dir / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")


def qemu_version() -> str:
    import subprocess
    out = subprocess.run([qemu.QEMU, "--version"], capture_output=True, text=True)
    return out.stdout.splitlines()[0] if out.returncode == 0 else "unknown"
