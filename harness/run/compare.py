"""A comparison run, from the matrix to the run folder, in the order it happens.

    1. the guest (initramfs and disks) and the kernel images (built if missing;
       never measure while a kernel builds)
    2. the placement: where the boots run (this machine, or a cluster's nodes,
       run/slurm.py) and the accelerator there (KVM probed with a real boot,
       else TCG)
    3. plan: every boot configuration and its cells (run/matrix.py)
    4. reuse: cells measured before get their rows derived again from their
       boot folders (run/cells.py); the rest is pending
    5. measure: an executor boots what is pending (run/execute.py), with an
       estimate of the time left (run/estimate.py)
    6. finish: tidy.tsv, lockorder.json, manifest.json and the lock-order
       files used (run/finish.py)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from harness import host, lockorder, progress
from harness.boot import qemu, runner
from harness.guest import initramfs, protocol
from harness.kernels import buildtime, kbuild, series, source
from harness.layout import Layout
from harness.run import cells, execute, finish, records, tidy
from harness.run.estimate import REPORT_S, StepTimes
from harness.run.matrix import BootPlan, Cell, Matrix, plan_boots
from harness.run.stages import Estimate, Stages


@dataclass
class CompareResult:
    run_dir: Path
    rows: list[tidy.Row] = field(default_factory=list)
    boots: list[runner.BootRecord] = field(default_factory=list)
    reruns: int = 0


def image_list(matrix: Matrix) -> list[tuple[str, str]]:
    """(kernel, flavour) of every image the run boots; tcg-cs boots run the perf image."""
    return [(k, f) for k in matrix.kernels for f in matrix.flavours]


def plan_images(layout: Layout, matrix: Matrix,
                build_missing: bool = True) -> list[buildtime.PlannedBuild]:
    """Every image of the run, built or not, with the time each build should take."""
    return buildtime.plan(layout, [
        kbuild.planned_image(layout, series.resolve(layout, k), f, build_missing=build_missing)
        for k, f in image_list(matrix)])


def build_images(layout: Layout, planned: list[buildtime.PlannedBuild], stages: Stages,
                 after_s: float, build_missing: bool = True
                 ) -> dict[tuple[str, str], kbuild.KernelImage]:
    """Build what is missing, in order; after_s: the estimate of what follows the
    builds (measuring, report), for the time left."""
    images = {}
    if build_missing and any(p.kind for p in planned):
        with stages.timed("tree"):
            source.ensure_pristine(layout)
    for i, build in enumerate(planned, 1):
        image = build.image
        left = sum(p.seconds for p in planned[i - 1:]) + after_s
        progress.say(f"image {i}/{len(planned)}: {image.kernel}/{image.flavour}: "
                     + (f"{build.kind} build, about {progress.format_duration(build.seconds)}"
                        if build.kind else "built") +
                     f"; about {progress.format_duration(left)} left in all")
        with stages.timed("image", kernel=image.kernel, flavour=image.flavour,
                          built=bool(build.kind), kind=build.kind, cache=build.cache,
                          estimate_s=round(build.seconds)) as entry:
            image = kbuild.build(layout, image.kernel, image.flavour,
                                 build_missing=build_missing)
            if build.kind and kbuild.is_built(image):  # the cores it kept busy
                entry["cpu_s"] = image.meta.get("cpu_seconds")
            images[image.kernel, image.flavour] = image
    return images


def probe_spec(layout: Layout, image: kbuild.KernelImage, files: initramfs.GuestFiles,
               machine: qemu.Machine) -> qemu.BootSpec:
    probe_plan = layout.accel_probe / "plan.sh"
    probe_plan.write_text(f"echo '{protocol.MARK} probe'\n")
    return qemu.BootSpec(image.bzimage, files.initramfs, probe_plan, machine, timeout_s=60)


# Where the boots of a run go, given the guest files, an image to probe the
# accelerator with and the accelerator asked for (None: probe).
Site = Callable[[Layout, initramfs.GuestFiles, kbuild.KernelImage, "str | None"],
                execute.Placement]


def local_site(layout: Layout, files: initramfs.GuestFiles, probe_image: kbuild.KernelImage,
               accel: str | None) -> execute.Placement:
    """This machine, one boot at a time."""
    if accel is None:
        accel = qemu.probe_accel(layout.accel_probe,
                                 lambda m: probe_spec(layout, probe_image, files, m))
    executor = execute.LocalExecutor(files, accel, layout)
    return execute.Placement(executor.node, executor, {"kind": "local"})


def measuring_estimate(layout: Layout, matrix: Matrix, images: dict, files: initramfs.GuestFiles,
                       machine: host.Machine, times: StepTimes) -> tuple[int, float]:
    """Boots and seconds of the cells not measured yet, before anything is built: image
    keys are known without the images (the probe's answer, or TCG, for the accelerator)."""
    store = cells.CellStore(layout)
    pending = [[c for c in boot.cells if not store.get(c.key)]
               for boot in plan_boots(matrix, images, files.digests, machine)]
    pending = [p for p in pending if p]
    return len(pending), times.estimate(pending)


def first_estimate(layout: Layout, matrix: Matrix, planned: list[buildtime.PlannedBuild],
                   files: initramfs.GuestFiles, accel: str | None, times: StepTimes,
                   started: float) -> tuple[Estimate, float]:
    """The whole run's time, said before the first build; and the part after the builds."""
    guess = host.this_machine(accel or qemu.known_accel(layout.accel_probe) or "tcg")
    boots_left, measuring_s = measuring_estimate(
        layout, matrix, {(p.image.kernel, p.image.flavour): p.image for p in planned}, files,
        guess, times)
    building_s = sum(p.seconds for p in planned)
    if any(p.kind for p in planned) and not (layout.src / ".git").exists():
        building_s += buildtime.TREE_S
    after_s = measuring_s + REPORT_S
    first = Estimate(time.monotonic() - started, building_s + after_s)
    progress.say(f"{len(planned)} images ({sum(1 for p in planned if p.kind)} to build, "
                 f"about {progress.format_duration(building_s)}), {boots_left} boots to "
                 f"measure (about {progress.format_duration(measuring_s)}), report: about "
                 f"{progress.format_duration(first.total_s)} in all")
    return first, after_s


@dataclass
class Reused:
    """What earlier runs measured of this run's cells."""
    rows: list[tidy.Row] = field(default_factory=list)
    edges: dict[str, set[lockorder.Edge]] = field(default_factory=dict)
    boots: list[runner.BootRecord] = field(default_factory=list)
    cells: int = 0
    reruns: int = 0  # of the reused cells, when they were measured


def reuse(layout: Layout, plans: list[list[BootPlan]], orders: dict[str, lockorder.LockOrder],
          run_dir: Path) -> tuple[Reused, list[tuple]]:
    """Stored cells of the run's boots (measured on any machine of the placement: the
    plans of the other machines have the same boots and cells in the same order), and
    what is left to measure, per boot."""
    store = cells.CellStore(layout)
    reused = Reused()
    pending = []
    for i, boot in enumerate(plans[0]):
        stored = [next(((alt, s) for alt in alternatives if (s := store.get(alt.key))),
                       (cell, None))
                  for cell, *alternatives in zip(boot.cells,
                                                 *(plan[i].cells for plan in plans))]
        done = [(cell, s) for cell, s in stored if s]
        rows, seen, records = cells.derive(layout, done, orders[boot.config.kernel])
        reused.rows += rows
        reused.boots += records
        reused.edges.setdefault(boot.config.kernel, set()).update(seen)
        for _, s in done:
            execute.link_tree(layout.results / s.boot, run_dir / "boots" / Path(s.boot).name)
        reused.cells += len(done)
        reused.reruns += sum(s.reruns for _, s in done)
        todo: list[Cell] = [cell for cell, s in stored if not s]
        if todo:
            pending.append((boot.config, boot.image, todo))
    return reused, pending


def run(layout: Layout, matrix: Matrix, run_dir: Path, accel: str | None = None,
        on_line=None, site: Site = local_site, build_missing: bool = True) -> CompareResult:
    started = time.monotonic()
    stages = Stages()
    run_dir.mkdir(parents=True, exist_ok=True)
    finish.check_resumable(run_dir)
    orders = {k: lockorder.for_kernel(layout, k) for k in matrix.kernels}
    with stages.timed("initramfs"):
        files = initramfs.prepare(layout, matrix.workloads)
    planned = plan_images(layout, matrix, build_missing)
    times = StepTimes(layout)
    first, after_s = first_estimate(layout, matrix, planned, files, accel, times, started)
    images = build_images(layout, planned, stages, after_s, build_missing)
    with stages.timed("probe"):
        placement = site(layout, files, images[matrix.kernels[0], matrix.flavours[0]], accel)
    machine = placement.machine
    plans = [plan_boots(matrix, images, files.digests, m)
             for m in [machine] + [m for m in placement.also_known if m.accel == machine.accel]]
    reused, pending = reuse(layout, plans, orders, run_dir)

    total_cells = sum(len(todo) for _, _, todo in pending)
    measuring_s = times.estimate([t for _, _, t in pending]) / placement.executor.parallel
    progress.say(f"{len(plans[0])} boot configurations, {total_cells} cells to measure in "
                 f"{len(pending)} boots, {reused.cells} reused from earlier runs "
                 f"({machine.accel}); about {progress.format_duration(measuring_s)} of measuring")
    measured = execute.measure(layout, pending, orders, run_dir, placement.executor, times,
                               matrix.max_reruns, on_line)
    stages.entries += measured.stages
    result = CompareResult(run_dir, reused.rows + measured.rows, measured.boots,
                           measured.reruns)
    edges = reused.edges
    for kernel, seen in measured.edges.items():
        edges.setdefault(kernel, set()).update(seen)
    with stages.timed("finish"):
        finish.write_table(result.rows, run_dir)
        finish.write_lock_orders(run_dir, orders)
        finish.write_conformance(layout, run_dir, orders, edges)
    finish.write_manifest(layout, run_dir, matrix, images, placement,
                          time.monotonic() - started, result.boots, reused.boots,
                          result.reruns + reused.reruns, measured.unmeasured,
                          finish.Timing(stages.entries, first.at_s, first.total_s))
    # After the manifest: the record of the run's images is read from elsewhere and
    # must never cost the run what it measured.
    records.write(layout, run_dir, images)
    return result
