"""make kcsan: every kernel's kcsan image over every default workload at 2 and 4 vCPUs.

Each kernel boots its kcsan image (configs/kcsan.config: KCSAN, the data-race
detector) once per vCPU count and default workload, and runs that workload
on every filesystem it declares at its most processes (races need
company; the workloads' `flavours` key chooses a compare's boots, not
these). Mainline comes first: it is the control that tells 6.1's races from
the series'. Every KCSAN report is parsed with both access stacks
(parsers/kcsan.py), its racing lines traced to the patch that wrote them
(kcsan_origin.py), and the races deduplicated and classified over every
kernel (kcsan_summary.py).

Each step is a cell (results/cells/), keyed by the kernel image, the guest,
the workload and the boot, so `make kcsan` again measures only what is
missing or changed (a series kernel rebuilt with other patches is measured
anew; mainline's cells stay). A step that could not run (its boot died
first) is run again once, in a boot of its own. A step's races are those
printed from its start to the next step's (its aftermath: writeback, RCU
callbacks), the first step's also those of the boot before it. With a
budget, no boot starts that is expected to end past it: on a host where a
command should last minutes, `make kcsan BUDGET=18m` again and again
measures the matrix in parts. results/kcsan/ holds the boots and
summary.md and summary.json, of every cell planned (measured or not),
rewritten before and after every boot.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import mean

from harness import host, lockorder, progress
from harness.boot import qemu, runner
from harness.guest import initramfs, plan
from harness.guest.workloads import Workload
from harness.kernels import kbuild, series
from harness.kernels.kbuild import KernelImage
from harness.layout import Layout, slug
from harness.parsers import kcsan as kcsan_parser
from harness.run import cells, kcsan_summary, matrix
from harness.run.kcsan_origin import OriginError, Origins, PatchRef
from harness.run.kcsan_summary import CONTROL, AccessSeen, CellResult, RaceSeen

FLAVOUR = "kcsan"
KCSAN_CPUS = (2, 4)
MAX_ATTEMPTS = 2  # boots a step may take: the first, and one more if it could not run
CALLER_FRAMES = 6  # frames below the racing one traced to patches (who called it)
BOOT_OVERHEAD_S = 90.0  # a kcsan boot beyond its steps until one is measured here
FATES = "kcsan/fates"  # in the repository: the declared fate of each race read


@dataclass(frozen=True)
class KcsanCell:
    kernel: str
    cpus: int
    workload: Workload
    fs: str
    procs: int
    key: str
    mode: str

    @property
    def label(self) -> str:
        return f"{self.kernel}/{FLAVOUR} {self.cpus} vCPUs {self.workload.name}/{self.fs}/p{self.procs}"

    @property
    def history(self) -> list:
        """The kind of step (cells.StoredCell.history): its time estimates the next."""
        return [self.workload.name, self.fs, FLAVOUR, self.mode, self.cpus]

    def step(self, step_id: str) -> plan.Step:
        return plan.Step(step_id, self.workload, self.fs, self.procs)


@dataclass
class Setup:
    """What every boot of one make kcsan shares. The summary is of the whole matrix
    (kernels, cpus); this run boots the part asked for (boot_kernels, boot_cpus)."""
    layout: Layout
    kernels: list[str]  # mainline first
    workloads: list[Workload]
    cpus: tuple[int, ...]
    images: dict[str, KernelImage]  # every kernel's, built or not (its cells' keys)
    orders: dict[str, lockorder.LockOrder]
    files: initramfs.GuestFiles
    machine: host.Machine
    out: Path
    fates: dict[str, str]
    boot_kernels: tuple[str, ...] = ()  # () : every kernel
    boot_cpus: tuple[int, ...] = ()  # (): every vCPU count
    origins: dict[str, Origins | str] = field(default_factory=dict)  # kernel -> it, or why not

    def boots(self, cell: KcsanCell) -> bool:
        """Whether this run boots the cell (when it is missing)."""
        return ((not self.boot_kernels or cell.kernel in self.boot_kernels)
                and (not self.boot_cpus or cell.cpus in self.boot_cpus))

    def origins_of(self, kernel: str) -> Origins | str:
        if kernel not in self.origins:
            try:
                self.origins[kernel] = Origins(self.layout, self.images[kernel])
            except OriginError as e:
                self.origins[kernel] = str(e)
        return self.origins[kernel]


def plan_cells(setup: Setup) -> list[KcsanCell]:
    """Every cell, in boot order: kernel (mainline first), vCPUs, workload, filesystem."""
    out = []
    for kernel in setup.kernels:
        image = setup.images[kernel]
        for cpus in setup.cpus:
            mode = matrix.boot_mode(setup.machine.accel, cpus, setup.machine.cores)
            for workload in setup.workloads:
                procs = max(workload.procs_for(cpus))
                config = matrix.BootConfig(kernel, FLAVOUR, mode, cpus, 1, workload.cmdline)
                for fs in workload.filesystems:
                    key = matrix.cell_key(image, setup.files.digests[workload.name], config,
                                          workload, fs, procs, setup.machine)
                    out.append(KcsanCell(kernel, cpus, workload, fs, procs, key, mode))
    return out


def boots_of(pending: list[KcsanCell]) -> list[list[KcsanCell]]:
    """The pending cells as boots: one per kernel, vCPU count and workload."""
    groups: dict[tuple, list[KcsanCell]] = defaultdict(list)
    for cell in pending:
        groups[cell.kernel, cell.cpus, cell.workload.name].append(cell)
    return list(groups.values())


def _patch_label(patch: PatchRef | None) -> str | None:
    return f"{patch.label}: {patch.subject}" if patch else None


def trace(origins: Origins | str, race: kcsan_parser.Race) -> RaceSeen:
    """A parsed race with each access's racing lines and the patches that wrote them."""
    traced_ok = not isinstance(origins, str)  # a string says why the image cannot be traced
    accesses = []
    for a in race.accesses:
        traced = a.frames[:1 + CALLER_FRAMES]
        lines = origins.lines(list(traced)) if traced_ok else {}
        own = lines.get(a.frames[0], ()) if a.frames else ()
        deeper = [line for f in traced[1:] for line in lines.get(f, ())]
        written = origins.written_by([*own, *deeper]) if traced_ok else {}
        patch = next((written[l.file, l.line] for l in own if written.get((l.file, l.line))),
                     None)
        caller = next((written[l.file, l.line] for l in deeper
                       if written.get((l.file, l.line))), None)
        accesses.append(AccessSeen(
            a.type, a.function, a.site, tuple(f"{l.file}:{l.line} {l.function}" for l in own),
            _patch_label(patch), _patch_label(caller), tuple(f.text for f in a.frames),
            a.held_locks))
    return RaceSeen(race.title, key_text(race.function_key), key_text(race.site_key),
                    tuple(accesses),
                    " -> ".join(race.value_change) if race.value_change else "", race.line)


def key_text(key: tuple) -> str:
    """A race's key as text: "data-race: evict (read) / insert_inode_locked (write)"."""
    kind, pairs = key
    return f"{kind}: " + " / ".join(f"{where} ({access})" for where, access in pairs)


def step_races(races: tuple[kcsan_parser.Race, ...], spans: dict[str, tuple[int, int | None]],
               step_ids: list[str]) -> dict[str, list[kcsan_parser.Race]]:
    """Each step's races: from its begin marker to the next step's; the first step's
    also those before it (the boot's). A step that never began has none."""
    begins = sorted((spans[s][0], s) for s in step_ids if s in spans)
    out: dict[str, list[kcsan_parser.Race]] = {s: [] for s in step_ids}
    for race in races:
        owner = next((s for begin, s in reversed(begins) if begin <= race.line),
                     begins[0][1] if begins else None)
        if owner:
            out[owner].append(race)
    return out


@dataclass
class BootRead:
    """One boot folder read back: each step's result, and which steps must run again."""
    results: dict[str, CellResult]  # cell key -> result
    again: list[str]  # cell keys of steps that could not run


def read_boot(setup: Setup, directory: Path, members: list[tuple[KcsanCell, str]]) -> BootRead:
    kernel = members[0][0].kernel
    record = runner.read_boot(directory, [c.step(s) for c, s in members], setup.orders[kernel])
    console = (directory / "console.log").read_text(errors="replace")
    races = step_races(kcsan_parser.parse(console), runner.step_lines(console),
                       [s for _, s in members])
    armed = kcsan_parser.armed(console).ok
    origins = setup.origins_of(kernel) if any(races.values()) else ""
    read = BootRead({}, [])
    for cell, step_id in members:
        outcome = record.step(step_id)
        read.results[cell.key] = CellResult(
            cell.kernel, cell.cpus, cell.workload.name, cell.fs, cell.procs, outcome.status,
            str(directory.relative_to(setup.layout.results)), step_id, outcome.wall_s, armed,
            tuple(trace(origins, race) for race in races[step_id]),
            origins if isinstance(origins, str) else "")
        if outcome.status in ("not-run", "lost"):
            read.again.append(cell.key)
    return read


@dataclass
class Progress:
    """The run so far: results, boots, and what a step and a boot take."""
    started: float
    budget_s: float | None
    prior: dict[tuple, list[float]]  # StoredCell.history -> seconds of stored kcsan steps
    results: dict[str, CellResult] = field(default_factory=dict)
    boots: list[dict] = field(default_factory=list)
    overheads: list[float] = field(default_factory=list)  # boot wall beyond its steps

    def step_s(self, cell: KcsanCell) -> float | None:
        same = self.prior.get(tuple(cell.history))
        if same:
            return mean(same)
        alike = [s for h, seconds in self.prior.items() if h[-1] == cell.cpus for s in seconds]
        return mean(alike) if alike else None

    def boot_s(self, boot: list[KcsanCell]) -> float | None:
        steps = [self.step_s(c) for c in boot]
        if any(s is None for s in steps):
            return None
        overhead = mean(self.overheads) if self.overheads else BOOT_OVERHEAD_S
        return sum(steps) + overhead

    def left_s(self, boots: list[list[KcsanCell]]) -> float | None:
        estimates = [self.boot_s(b) for b in boots]
        return None if any(e is None for e in estimates) else sum(estimates)

    def fits(self, boot: list[KcsanCell]) -> bool:
        """Whether the boot may start: no budget, the first boot, or expected inside it."""
        if self.budget_s is None or not self.boots:
            return True
        elapsed = time.monotonic() - self.started
        expected = self.boot_s(boot)
        return elapsed + (expected or 0.0) <= self.budget_s and elapsed < self.budget_s


def stored_times(layout: Layout) -> dict[tuple, list[float]]:
    times: dict[tuple, list[float]] = defaultdict(list)
    for stored in cells.CellStore(layout).all():
        if len(stored.history) == 5 and stored.history[2] == FLAVOUR and stored.wall_s:
            times[tuple(stored.history)].append(stored.wall_s)
    return times


def load_stored(setup: Setup, state: Progress, planned: list[KcsanCell]) -> None:
    """Cells measured before: read back from their boot folders."""
    store = cells.CellStore(setup.layout)
    by_boot: dict[str, list[tuple[KcsanCell, str]]] = defaultdict(list)
    for cell in planned:
        stored = store.get(cell.key)
        if stored and cell.key not in state.results:
            by_boot[stored.boot].append((cell, stored.step))
    for boot, members in by_boot.items():
        state.results.update(read_boot(setup, setup.layout.results / boot, members).results)


def boot_once(setup: Setup, state: Progress, pending: list[KcsanCell], attempt: int,
              number: int, boots_left: list[list[KcsanCell]]) -> list[KcsanCell]:
    """One boot of one kernel, vCPU count and workload; returns the cells to run again."""
    first = pending[0]
    steps = [cell.step(f"s{i:02d}") for i, cell in enumerate(pending, 1)]
    name = (f"{time.strftime('%Y%m%d-%H%M%S')}-{slug(first.kernel)}-c{first.cpus}-"
            f"{first.workload.name}-a{attempt}")
    directory = setup.out / "boots" / name
    left = state.left_s(boots_left)
    progress.say(f"kcsan boot {number}/{number + len(boots_left) - 1}: {first.kernel} "
                 f"{first.cpus} vCPUs, {first.workload.name} on {', '.join(c.fs for c in pending)}"
                 f"{' (again)' if attempt > 1 else ''}"
                 + (f", about {progress.format_duration(left)} left" if left else ""))
    write_summary(setup, state, running=name)
    record = runner.run_boot(setup.images[first.kernel], setup.files,
                             qemu.Machine(setup.machine.accel, first.cpus), steps, directory,
                             f"kcsan {first.kernel} {first.cpus} vCPUs {first.workload.name}",
                             setup.orders[first.kernel])
    read = read_boot(setup, directory, [(c, s.id) for c, s in zip(pending, steps)])
    step_seconds = sum(o.wall_s or 0.0 for o in record.steps)
    state.overheads.append(max(0.0, record.wall_s - step_seconds))
    races = sum(len(read.results[c.key].races) for c in pending)
    state.boots.append({"boot": name, "kernel": first.kernel, "cpus": first.cpus,
                        "workload": first.workload.name, "steps": len(steps),
                        "status": record.status, "wall_s": round(record.wall_s, 1),
                        "races": races})
    store = cells.CellStore(setup.layout)
    again = []
    for cell, step in zip(pending, steps):
        if cell.key in read.again and attempt < MAX_ATTEMPTS:
            again.append(cell)
            continue
        result = read.results[cell.key]
        state.results[cell.key] = result
        state.prior.setdefault(tuple(cell.history), []).append(result.wall_s or 0.0)
        store.put(cell.key, cells.StoredCell(cell.label, result.boot, step.id, 0, result.wall_s,
                                             cell.history))
    progress.say(f"  {record.status} in {progress.format_duration(record.wall_s)}: "
                 f"{races} KCSAN reports" + (f"; {len(again)} steps to run again" if again else ""))
    return again


def kcsan(layout: Layout, kernels: list[str], known: list[Workload],
          cpus: tuple[int, ...] = KCSAN_CPUS, accel: str = "tcg",
          budget_s: float | None = None, every_kernel: list[str] | None = None) -> Path:
    """Measure what is missing of these kernels and vCPU counts (within the budget);
    the summary, of every_kernel (default: these) at KCSAN_CPUS and these vCPU counts,
    is in the folder returned."""
    out = layout.kcsan
    out.mkdir(parents=True, exist_ok=True)
    matrix_kernels = sorted(dict.fromkeys([*(every_kernel or []), *kernels]),
                            key=lambda k: k != CONTROL)
    chosen = [w for w in known if w.default]
    images = {}
    for i, kernel in enumerate(kernels, 1):
        progress.say(f"kernel {i}/{len(kernels)}: {kernel}/{FLAVOUR}")
        images[kernel] = kbuild.build(layout, kernel, FLAVOUR)
    for kernel in matrix_kernels:  # not booted now: their cells' keys, built or not
        images.setdefault(kernel, kbuild.planned_image(layout, series.resolve(layout, kernel),
                                                       FLAVOUR))
    fates_path = layout.repo / FATES
    fates = kcsan_summary.read_fates(fates_path.read_text()) if fates_path.exists() else {}
    setup = Setup(layout, matrix_kernels, chosen, tuple(sorted({*KCSAN_CPUS, *cpus})), images,
                  {k: lockorder.for_kernel(layout, k) for k in matrix_kernels},
                  initramfs.prepare(layout, chosen), host.this_machine(accel), out, fates,
                  tuple(kernels), tuple(cpus))
    state = Progress(time.monotonic(), budget_s, stored_times(layout))
    planned = plan_cells(setup)
    load_stored(setup, state, planned)
    number = 0
    while True:
        boots = boots_of([c for c in planned if c.key not in state.results and setup.boots(c)])
        if not boots or not state.fits(boots[0]):
            break
        pending, attempt = boots[0], 0
        number += 1
        while pending and attempt < MAX_ATTEMPTS:
            attempt += 1
            pending = boot_once(setup, state, pending, attempt, number, boots)
    left = [c for c in planned if c.key not in state.results]
    asked_left = sum(1 for c in left if setup.boots(c))
    if asked_left:
        progress.say(f"kcsan: {asked_left} cells left past the budget: run it again to go on")
    write_summary(setup, state, finished=not left,
                  others_left=len(left) - asked_left if not asked_left else 0)
    return out


def write_summary(setup: Setup, state: Progress, running: str | None = None,
                  finished: bool = False, others_left: int = 0) -> None:
    """others_left: cells of kernels or vCPU counts this run was not asked to boot, when
    every cell it was asked for is measured."""
    planned_cells = plan_cells(setup)
    keys = {c.key for c in planned_cells}
    planned: dict[str, int] = defaultdict(int)
    for cell in planned_cells:
        planned[cell.kernel] += 1
    if finished:
        state_line = "Finished: every planned cell is measured."
    elif others_left:
        state_line = (f"Every cell this run was asked for is measured; {others_left} cells "
                      "of other kernels or vCPU counts are not (make kcsan measures them).")
    elif running:
        state_line = (f"Boot {running} was running when this was written; if make kcsan is "
                      "no longer running, it stopped there (run it again to resume).")
    else:
        state_line = "Stopped at its budget, or between boots: run make kcsan again to go on."
    meta = {"cpus": list(setup.cpus), "workloads": [w.name for w in setup.workloads],
            "kernels": setup.kernels, "state": state_line, "finished": finished,
            "running": running, "wall_s": round(time.monotonic() - state.started, 1),
            "boots": state.boots,
            "images": {k: asdict(kbuild.identity(i)) for k, i in setup.images.items()
                       if kbuild.is_built(i)}}
    results = [r for k, r in state.results.items() if k in keys]
    kcsan_summary.write(setup.out, results, meta, dict(planned), setup.fates)
