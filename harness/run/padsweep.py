"""The padded-lock sweep: the scaling model's contention against a measured one.

At 2 vCPUs the icache locks are almost never busy, so a measured contention
says little about the model. The padlock measurement kernel (mainline plus
padlock/0001-*.patch, an image of its own, never compared) lengthens the
sb-list critical section by a knob and counts, without lockdep,
acquisitions, contended acquisitions and the time held (/proc/padlock).

One 2-vCPU boot runs create+unlink on tmpfs (two sb-list acquisitions per
operation) at every knob value, with one worker and then two. From the
one-worker step the model takes the lock's utilisation U = held time /
elapsed time; by the arrival theorem a second CPU arriving at the lock finds
it held with probability U, so the predicted contention per acquisition with
two workers is U (docs/scaling-model.md, "At 2 vCPUs"). The two-worker step
measures it. Both steps run in the same boot, so TCG's slowdown of a 2-vCPU
guest touches both alike.

Two vCPUs run together only while the host runs both vCPU threads at once:
a sampler reads the host's schedstat of QEMU's vCPU threads every few
milliseconds during each step and reports the share of the step both ran
(a lower bound, the sum of their runs less the interval, and an upper
bound, the shorter run), beside the comparison.

    python3 -m harness.run.padsweep --loops 0,200,1000,... [--out DIR] [--ops N]

Boots are timed: run them on a quiet host (no build, no other guest).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from harness import lockorder, progress
from harness.boot import qemu, runner
from harness.boot.corun import CoRunSampler
from harness.guest import initramfs, plan, workloads
from harness.kernels import kbuild, series
from harness.layout import REPO_ROOT, Layout, default_layout

SOURCE = REPO_ROOT / "padlock"
PATCH = SOURCE / "0001-padlock-a-knob-that-pads-the-sb-list-critical-sectio.patch"
KERNEL = "mainline+padlock"
KNOB = "/sys/module/inode/parameters/padlock_loops"
DEFAULT_LOOPS = (0, 300, 1000, 3000, 10000, 30000, 100000)
DEFAULT_OPS = 2000
AIM = 0.15  # the aim: contention per acquisition within 15%
RESULT = re.compile(r"^result phase=\S+ ops=(\d+) elapsed_ns=(\d+) procs=(\d+)")
COUNTER = re.compile(r"^(loops|acquisitions|contentions|held_ns) (\d+)$", re.M)


def measurement_kernel() -> series.Kernel:
    return series.Kernel(KERNEL, (series.Patch("padlock", 1, PATCH),))


def build_image(layout: Layout, build_missing: bool = True) -> kbuild.KernelImage:
    return kbuild.build_kernel(layout, measurement_kernel(), "perf",
                               build_missing=build_missing)


def workload(loops: int, ops: int) -> workloads.Workload:
    """create+unlink with the knob set and the counters printed before and after."""
    text = "\n".join([
        f"name     = padlock-{loops}",
        f"summary  = create+unlink with the sb-list section padded by {loops} loops",
        f"run      = echo {loops} > {KNOB}; cat /proc/padlock; "
        f"createunlink -p {{procs}} -n {ops} {{dir}}; cat /proc/padlock",
        "output   = result-lines",
        "fs       = tmpfs",
        "procs    = 1 2",
        "timeout  = 600",
        "unit     = create+unlink", ""])
    return workloads.parse(REPO_ROOT / "padlock" / f"padlock-{loops}.wl", text)


# -- reading a step and comparing ---------------------------------------------------------------

@dataclass(frozen=True)
class StepCounts:
    loops: int
    procs: int
    ops: int
    elapsed_s: float
    acquisitions: int
    contentions: int
    held_s: float

    @property
    def utilisation(self) -> float:
        """The share of the step's time the lock was held (any CPU)."""
        return self.held_s / self.elapsed_s

    @property
    def contention(self) -> float:
        return self.contentions / self.acquisitions if self.acquisitions else 0.0


class SweepError(Exception):
    pass


def read_step(text: str, source: str) -> StepCounts:
    """A step's stdout: /proc/padlock before, the result line, /proc/padlock after."""
    blocks = [{k: int(v) for k, v in COUNTER.findall("loops " + part)}
              for part in text.split("loops ")[1:]]
    result = next((RESULT.match(line) for line in text.splitlines() if RESULT.match(line)),
                  None)
    if len(blocks) != 2 or result is None:
        raise SweepError(f"{source}: expected /proc/padlock twice around a result line")
    first, last = blocks
    return StepCounts(last["loops"], int(result.group(3)), int(result.group(1)),
                      int(result.group(2)) * 1e-9,
                      last["acquisitions"] - first["acquisitions"],
                      last["contentions"] - first["contentions"],
                      (last["held_ns"] - first["held_ns"]) * 1e-9)


@dataclass(frozen=True)
class Comparison:
    loops: int
    one: StepCounts  # one worker
    two: StepCounts  # two workers
    together: tuple[float, float]  # both vCPUs ran at once, during the two-worker step

    @property
    def predicted(self) -> float:
        """Contention per acquisition with two workers: the one-worker utilisation."""
        return self.one.utilisation

    @property
    def error(self) -> float | None:
        """(predicted - measured) / measured; None when nothing was contended."""
        measured = self.two.contention
        return (self.predicted - measured) / measured if measured else None

    def row(self) -> dict:
        error = self.error
        return {"loops": self.loops, "utilisation_1": self.one.utilisation,
                "predicted_contention": self.predicted,
                "measured_contention": self.two.contention, "error": error,
                "within_aim": error is not None and abs(error) <= AIM,
                "both_vcpus_ran": list(self.together),
                "one": asdict(self.one), "two": asdict(self.two)}


def compare(boot_dir: Path, steps: list[plan.Step], sampler: CoRunSampler) -> list[Comparison]:
    counts: dict[tuple[int, int], StepCounts] = {}
    together: dict[int, tuple[float, float]] = {}
    for step in steps:
        out = boot_dir / "files" / f"{step.id}.out"
        if not out.exists():
            raise SweepError(f"{boot_dir}: step {step.label} left no output")
        found = read_step(out.read_text(errors="replace"), str(out))
        counts[found.loops, step.procs] = found
        if step.procs == 2 and step.id in sampler.steps:
            together[found.loops] = sampler.steps[step.id].together
    return [Comparison(loops, counts[loops, 1], counts[loops, 2],
                       together.get(loops, (0.0, 0.0)))
            for loops in sorted({k for k, _ in counts}) if (loops, 2) in counts]


def table(results: list[Comparison]) -> str:
    lines = ["| loops | U (1 worker) | contention/acq predicted | measured | error | "
             "both vCPUs ran |", "|---|---|---|---|---|---|"]
    for c in results:
        low, high = c.together
        error = "n/a" if c.error is None else f"{c.error * 100:+.0f}%"
        lines.append(f"| {c.loops} | {c.one.utilisation:.3f} | {c.predicted:.3f} | "
                     f"{c.two.contention:.3f} | {error} | {low * 100:.0f}-{high * 100:.0f}% |")
    return "\n".join(lines)


def image_at(directory: Path) -> kbuild.KernelImage:
    """A built image folder (KERNEL-FLAVOUR-KEY), used as it is."""
    kernel, flavour, key = directory.name.rsplit("-", 2)
    image = kbuild.KernelImage(kernel, flavour, key, directory)
    if not kbuild.is_built(image):
        raise SweepError(f"{directory}: not a built kernel image (no bzImage or meta.json)")
    return image


def run(layout: Layout, loops: list[int], ops: int, out: Path, build_missing: bool,
        image_dir: Path | None = None) -> int:
    image = image_at(image_dir) if image_dir else build_image(layout, build_missing)
    known = workloads.load_all(layout.workloads)
    files = initramfs.prepare(layout, [known["create-unlink"]])
    steps = plan.make_steps([(workload(n, ops), "tmpfs", p) for n in loops for p in (1, 2)])
    boot_dir = out / time.strftime("%Y%m%d-%H%M%S")
    sampler = CoRunSampler()
    progress.say(f"padlock sweep: {len(loops)} knob values, {len(steps)} steps in one "
                 f"2-vCPU boot, folder {boot_dir}")
    record = runner.run_boot(image, files, qemu.Machine("tcg", 2), steps, boot_dir,
                             "padlock sweep", lockorder.for_kernel(layout, "mainline"),
                             on_line=runner.step_progress(len(steps)), watchers=(sampler,))
    if record.status != "ok":
        print(f"error: the boot ended {record.status} ({boot_dir})", file=sys.stderr)
        return 1
    results = compare(boot_dir, steps, sampler)
    (boot_dir / "padsweep.json").write_text(json.dumps(
        {"image": str(image.directory), "others_cpu_s": record.others_cpu_s,
         "rows": [c.row() for c in results]}, indent=1) + "\n")
    (boot_dir / "padsweep.md").write_text(table(results) + "\n")
    print(table(results))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.run.padsweep",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--loops", default=",".join(map(str, DEFAULT_LOOPS)),
                        help="knob values, comma separated")
    parser.add_argument("--ops", type=int, default=DEFAULT_OPS, help="create+unlink per worker")
    parser.add_argument("--out", default="results/padsweep", help="where the boots go")
    parser.add_argument("--build-only", action="store_true", help="build the image and stop")
    parser.add_argument("--no-build", action="store_true", help="fail if the image is missing")
    parser.add_argument("--image", help="a built image folder to boot instead")
    args = parser.parse_args(argv)
    layout = default_layout()
    if args.build_only:
        image = build_image(layout)
        print(image.directory)
        return 0
    loops = [int(x) for x in args.loops.replace(",", " ").split()]
    try:
        return run(layout, loops, args.ops, Path(args.out), not args.no_build,
                   Path(args.image) if args.image else None)
    except (SweepError, kbuild.BuildError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
