"""Finishing a run: its tidy table, lock-order conformance, manifest and the lock orders it used.

The run folder then holds everything the report reads: nothing is looked up
in the checkout again, so a report regenerated later describes the run as
it was (lock-order/ keeps a copy of every kernel's lock-order file).
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from harness import host, lockorder
from harness.boot import pinning, runner
from harness.kernels.kbuild import KernelImage, own_patches
from harness.layout import Layout
from harness.run import tidy
from harness.run.execute import Placement
from harness.run.matrix import Matrix

LOCK_ORDERS = "lock-order"
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Timing:
    """How long each stage of a run took (run/stages.py) and what was first estimated."""
    stages: list[dict]
    first_estimate_at_s: float
    first_estimate_s: float

    def as_json(self, wall_s: float) -> dict:
        return {"stages": self.stages,
                "first_estimate": {"printed_at_s": round(self.first_estimate_at_s, 1),
                                   "total_s": round(self.first_estimate_s),
                                   # estimate over the run's wall time; the report,
                                   # written after the manifest, adds its own stage
                                   "ratio": round(self.first_estimate_s / wall_s, 3)
                                   if wall_s else None}}


def add_stage(run_dir: Path, stage: str, seconds: float) -> None:
    """Record a stage that ran after the manifest was written (the report)."""
    path = run_dir / MANIFEST
    manifest = json.loads(path.read_text())
    # The pass that just ran: a resume's report is the resume's, never the first pass's.
    now = manifest["resumes"][-1] if manifest.get("resumes") else manifest
    timing = now.setdefault("timing", {"stages": []})
    timing["stages"].append({"stage": stage, "seconds": round(seconds, 1)})
    path.write_text(json.dumps(manifest, indent=1) + "\n")


def lock_order_copy(run_dir: Path, kernel: str) -> Path:
    """Where a run keeps the lock-order file a kernel was judged by."""
    return run_dir / LOCK_ORDERS / f"{kernel}.lock-order"


def write_lock_orders(run_dir: Path, orders: dict[str, lockorder.LockOrder]) -> None:
    (run_dir / LOCK_ORDERS).mkdir(parents=True, exist_ok=True)
    for kernel, order in orders.items():
        shutil.copyfile(order.path, lock_order_copy(run_dir, kernel))


def write_conformance(layout: Layout, run_dir: Path, orders: dict[str, lockorder.LockOrder],
                      edges: dict[str, set[lockorder.Edge]]) -> None:
    """Per kernel: the icache edges lockdep saw, and those its lock-order does not allow."""
    out = {}
    for kernel, seen in sorted(edges.items()):
        order = orders[kernel]
        out[kernel] = {
            "lock_order_file": str(order.path.relative_to(layout.repo)),
            "edges": sorted(list(e) for e in seen),
            "role_edges": sorted({(e[2], e[3]) for e in seen}),
            "violations": sorted(list(e) for e in order.violations(sorted(seen))),
        }
    (run_dir / "lockorder.json").write_text(json.dumps(out, indent=1) + "\n")


def machines_of_run(run_dir: Path, planned: host.Node) -> dict[str, dict]:
    """Every machine whose boots the run holds (measured or reused), by Machine.id."""
    nodes = [planned] + [node for folder in sorted((run_dir / "boots").glob("*"))
                         if (node := host.Node.load(folder))]
    machines: dict[str, dict] = {}
    for node in nodes:
        entry = machines.setdefault(node.machine.id, dict(node.machine.as_json(), hosts=[]))
        if node.hostname not in entry["hosts"]:
            entry["hosts"].append(node.hostname)
    return machines


def boot_entry(layout: Layout, boot: runner.BootRecord) -> dict:
    node = host.Node.load(boot.directory)
    return {"directory": str(boot.directory.relative_to(layout.results)),
            "status": boot.status, "wall_s": round(boot.wall_s, 1),
            "to_init_s": boot.to_init_s and round(boot.to_init_s, 2),
            "spinlock": boot.spinlock,
            "crng": boot.crng,
            "reports": list(boot.reports), "damaged": list(boot.damaged),
            "machine": node.machine.id if node else None,
            "node": node.hostname if node else None,
            "pinning": pinning.load(boot.directory)}


def write_manifest(layout: Layout, run_dir: Path, matrix: Matrix,
                   images: dict[tuple[str, str], KernelImage], placement: Placement,
                   wall_s: float, boots: list[runner.BootRecord],
                   reused_boots: list[runner.BootRecord], reruns: int,
                   unmeasured: list[str], timing: Timing | None = None) -> None:
    """boots: measured by this run; reused_boots: earlier boots whose cells it reuses."""
    kernels = {}
    for (kernel, flavour), image in images.items():
        meta = image.meta
        own = own_patches(meta)
        kernels.setdefault(kernel, {"kernel_version": meta["kernel_version"],
                                    "package_version": meta["package_version"],
                                    "patches": own, "images": {}})
        kernels[kernel]["images"][flavour] = {
            "key": image.key, "commit": meta["commit"],
            # applied after the kernel's own (the perf flavour's tcg-cs markers)
            "flavour_patches": [p for p in meta["patches"] if p not in own]}
    machine, node = placement.machine, placement.node
    manifest = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "wall_seconds": round(wall_s, 1),
        "accel": machine.accel,
        # The machine the boots were planned for: this host, or the cluster node
        # that answered the probe. "machines" has every machine of the rows.
        "host": {"cpus": machine.cores, "cpu_model": machine.cpu_model, "machine": machine.id,
                 "qemu": node.qemu, "kernel": node.kernel, "hostname": node.hostname},
        "executor": placement.described,
        "machines": machines_of_run(run_dir, node),
        "matrix": {"kernels": matrix.kernels, "cpus": matrix.cpus,
                   "workloads": [w.name for w in matrix.workloads], "repeat": matrix.repeat,
                   "debug_repeat": matrix.debug_repeat, "icount_repeat": matrix.icount_repeat,
                   "cs_repeat": matrix.cs_repeat,
                   "flavours": list(matrix.flavours), "order_seed": matrix.order_seed,
                   # debug-only boots of the count-boots workloads, never timed
                   "count_cpus": matrix.counted_cpus},
        "oversubscribed": [c for c in matrix.cpus + matrix.counted_cpus if c > machine.cores],
        # What each workload (or phase) was written to set apart: the report answers
        # per design difference (workloads.py, the difference keys).
        "differences": {w.name + (f"/{phase}" if phase else ""): text
                        for w in matrix.workloads for phase, text in w.differences},
        # and those no workload of the run measures, with the workloads that would
        "differences_not_measured": matrix.differences_elsewhere,
        "kernels": kernels,
        "boots": [boot_entry(layout, b) for b in boots],
        "reused_boots": [boot_entry(layout, b) for b in reused_boots],
        # Records that arrived incomplete or failed their checksum, in every
        # boot the run's rows come from: a correct transport keeps this at zero.
        "damaged_records": sum(len(b.damaged) for b in boots + reused_boots),
        "reruns": reruns,
        # Cells whose every boot failed (a job lost on a cluster, a guest that
        # never reached the step): not in tidy.tsv, named here.
        "unmeasured": unmeasured,
    }
    if timing:
        manifest["timing"] = timing.as_json(wall_s)
    path = run_dir / MANIFEST
    if path.exists():
        manifest = resumed(_earlier_manifest(path), manifest)
    path.write_text(json.dumps(manifest, indent=1) + "\n")


def _earlier_manifest(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ManifestError(f"{path}: the run's earlier manifest cannot be read ({e}); "
                            "move it aside to resume the run in place") from e


class ManifestError(Exception):
    pass


def check_resumable(run_dir: Path) -> None:
    """Before measuring: a run resumed in its own folder can keep its earlier manifest."""
    if (run_dir / MANIFEST).exists():
        _earlier_manifest(run_dir / MANIFEST)


def resumed(earlier: dict, now: dict) -> dict:
    """The manifest of a run resumed in its own folder (make compare RUN_DIR=<that run>).

    What the first pass measured stays as it recorded it: its start, wall time,
    timing and boots. The boots this pass reuses from the first are the first's;
    what this pass did itself (its wall time, the boots it measured, its timing)
    is appended to "resumes", so no pass's record overwrites another's.
    """
    earlier_dirs = {b["directory"] for b in earlier["boots"]}
    merged = dict(now)
    # The matrix too: its order seed is what ordered the first pass's boots.
    for key in ("created", "wall_seconds", "timing", "matrix", "host", "executor"):
        if key in earlier:
            merged[key] = earlier[key]
        else:
            merged.pop(key, None)
    merged["boots"] = earlier["boots"] + now["boots"]
    merged["reused_boots"] = [b for b in now["reused_boots"] if b["directory"] not in earlier_dirs]
    this_pass = {"created": now["created"], "wall_seconds": now["wall_seconds"],
                 "boots_measured": len(now["boots"]),
                 "boots_reused": len(now["reused_boots"])}
    if "timing" in now:
        this_pass["timing"] = now["timing"]
    if "matrix" in now and now["matrix"] != earlier.get("matrix"):
        this_pass["matrix"] = now["matrix"]
    merged["resumes"] = earlier.get("resumes", []) + [this_pass]
    return merged


def write_table(rows: list[tidy.Row], run_dir: Path) -> None:
    tidy.write(rows, run_dir / "tidy.tsv")
