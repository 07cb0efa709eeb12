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

from harness import lockorder, progress
from harness.boot import qemu, runner
from harness.guest import initramfs, protocol
from harness.kernels import kbuild
from harness.layout import Layout
from harness.run import cells, execute, finish, tidy
from harness.run.estimate import StepTimes
from harness.run.matrix import Cell, Matrix, plan_boots


@dataclass
class CompareResult:
    run_dir: Path
    rows: list[tidy.Row] = field(default_factory=list)
    boots: list[runner.BootRecord] = field(default_factory=list)
    reruns: int = 0


def build_images(layout: Layout, matrix: Matrix,
                 build_missing: bool = True) -> dict[tuple[str, str], kbuild.KernelImage]:
    needed = [(k, f) for k in matrix.kernels for f in matrix.flavours]
    images = {}
    for i, (kernel, flavour) in enumerate(needed, 1):
        progress.say(f"kernel {i}/{len(needed)}: {kernel}/{flavour}")
        images[kernel, flavour] = kbuild.build(layout, kernel, flavour,
                                               build_missing=build_missing)
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


def run(layout: Layout, matrix: Matrix, run_dir: Path, accel: str | None = None,
        on_line=None, site: Site = local_site, build_missing: bool = True) -> CompareResult:
    started = time.monotonic()
    run_dir.mkdir(parents=True, exist_ok=True)
    orders = {k: lockorder.for_kernel(layout, k) for k in matrix.kernels}
    files = initramfs.prepare(layout, matrix.workloads)
    images = build_images(layout, matrix, build_missing)
    placement = site(layout, files, images[matrix.kernels[0], matrix.flavours[0]], accel)
    machine = placement.machine
    accel = machine.accel
    # A cell measured on any machine of the placement counts as done; the
    # plans of the other machines have the same boots and cells in the same order.
    plans = [plan_boots(matrix, images, files.digests, m)
             for m in [machine] + [m for m in placement.also_known if m.accel == accel]]
    boots = plans[0]

    result = CompareResult(run_dir)
    edges: dict[str, set[lockorder.Edge]] = {}
    store = cells.CellStore(layout)
    pending = []
    reused = 0
    reused_boots: list[runner.BootRecord] = []
    reused_reruns = 0  # of the reused cells, when they were measured
    for i, boot in enumerate(boots):
        stored = [next(((alt, s) for alt in alternatives if (s := store.get(alt.key))),
                       (cell, None))
                  for cell, *alternatives in zip(boot.cells,
                                                 *(plan[i].cells for plan in plans))]
        done = [(cell, s) for cell, s in stored if s]
        rows, seen, records = cells.derive(layout, done, orders[boot.config.kernel])
        result.rows += rows
        reused_boots += records
        edges.setdefault(boot.config.kernel, set()).update(seen)
        for _, s in done:
            execute.link_tree(layout.results / s.boot, run_dir / "boots" / Path(s.boot).name)
        reused += len(done)
        reused_reruns += sum(s.reruns for _, s in done)
        todo: list[Cell] = [cell for cell, s in stored if not s]
        if todo:
            pending.append((boot.config, boot.image, todo))

    times = StepTimes(layout)
    total_cells = sum(len(todo) for _, _, todo in pending)
    measuring_s = times.estimate([t for _, _, t in pending]) / placement.executor.parallel
    progress.say(f"{len(boots)} boot configurations, {total_cells} cells to measure in "
                 f"{len(pending)} boots, {reused} reused from earlier runs ({accel}); "
                 f"about {progress.format_duration(measuring_s)} of measuring")
    measured = execute.measure(layout, pending, orders, run_dir, placement.executor, times,
                               matrix.max_reruns, on_line)
    result.rows += measured.rows
    result.boots = measured.boots
    result.reruns = measured.reruns
    for kernel, seen in measured.edges.items():
        edges.setdefault(kernel, set()).update(seen)

    finish.write_table(result.rows, run_dir)
    finish.write_lock_orders(run_dir, orders)
    finish.write_conformance(layout, run_dir, orders, edges)
    finish.write_manifest(layout, run_dir, matrix, images, placement,
                          time.monotonic() - started, result.boots, reused_boots,
                          result.reruns + reused_reruns, measured.unmeasured)
    return result
