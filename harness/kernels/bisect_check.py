"""bisect-check: every patch of a series builds, boots and passes checkpatch.

For each point NAME@1 .. NAME@N: checkpatch the patch that point adds, build
the debug kernel, boot it on 2 vCPUs with a short workload on tmpfs and ext4,
and require a clean boot (no lockdep report, no warning) with throughput.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from harness import lockorder, progress
from harness.boot import qemu, runner
from harness.guest import initramfs, plan, workloads
from harness.kernels import kbuild, series, source
from harness.layout import Layout

SMOKE_WORKLOAD = "create-unlink"


@dataclass(frozen=True)
class PointResult:
    kernel: str
    patch: str
    checkpatch_errors: int
    checkpatch_warnings: int
    boot_status: str
    throughput: tuple[float, ...]
    folder: str

    @property
    def ok(self) -> bool:
        return (self.checkpatch_errors == 0 and self.boot_status == "ok"
                and bool(self.throughput) and all(t > 0 for t in self.throughput))


def checkpatch(layout: Layout, patch: series.Patch) -> tuple[int, int, str]:
    """Errors and warnings of scripts/checkpatch.pl (from the pristine tree)."""
    script = layout.src / "scripts" / "checkpatch.pl"
    out = subprocess.run(["perl", str(script), "--no-tree", "--terse", str(patch.path)],
                         capture_output=True, text=True)
    total = re.search(r"total: (\d+) errors, (\d+) warnings", out.stdout)
    if not total:
        # --terse prints nothing at all for a clean patch.
        if out.returncode == 0 and not out.stdout.strip():
            return 0, 0, ""
        return 1, 0, out.stdout + out.stderr
    return int(total.group(1)), int(total.group(2)), out.stdout


def check_series(layout: Layout, name: str, cpus: int = 2) -> list[PointResult]:
    source.ensure_pristine(layout)
    patches = series.read_series(layout, name)
    if not patches:
        raise series.SeriesError(f"series-{name} has no patches")
    smoke = workloads.parse(layout.own_workloads / f"{SMOKE_WORKLOAD}.wl")
    results = []
    meter = progress.Steps(len(patches), f"bisect-check {name}")
    for patch in patches:
        kernel = f"{name}@{patch.index}"
        meter.start(f"{kernel}: {patch.subject}")
        errors, warnings, report = checkpatch(layout, patch)
        if errors:
            progress.say(f"  checkpatch: {errors} errors in {patch.path.name}\n{report}")
        image = kbuild.build(layout, kernel, "debug")
        steps = plan.make_steps([(smoke, fs, cpus) for fs in smoke.filesystems])
        # Prepared after the build, which may wait long for the build lock:
        # checkouts sharing the build folder prune old initramfs files meanwhile.
        files = initramfs.prepare(layout, [smoke])
        folder = layout.bisect_dir(kernel, image.key)
        record = runner.run_boot(image, files, qemu.Machine("tcg", cpus), steps, folder,
                                 f"bisect-check {kernel}", lockorder.for_kernel(layout, kernel))
        throughput = tuple(f.value for s in record.steps if s.numbers
                           for f in s.numbers.figures if f.metric == "throughput")
        result = PointResult(kernel, patch.path.name, errors, warnings, record.status,
                             throughput, str(folder))
        progress.say(f"  {kernel}: checkpatch {errors} errors/{warnings} warnings, boot "
                     f"{record.status}, throughput {', '.join(f'{t:.0f}' for t in throughput)}"
                     + ("" if result.ok else "  <-- FAILS"))
        results.append(result)
        meter.finish()
    return results
