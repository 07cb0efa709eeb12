"""Would syncrace catch base's old sync hole? A mutant kernel answers it.

Before issue 28, base 0001 marked a live dirty inode I_WILL_FREE while it
waited for the busy global lock after ->drop_inode(); writeback and sync
skip such an inode, so sync() could return before its data was on the disk.
syncrace (workloads/syncrace.wl) checks exactly that property, but under TCG
it never hit the window in the runs of 2026-12-06 (0 files lost on the
unfixed series). The mutant kernel base+synchole (base plus
synchole/0001-*.patch, an image of its own, never compared) puts the old
window back, widens it at run time (inode.synchole_delay_us, a udelay()
inside it) and counts the windows opened (/proc/synchole).

One debug boot of the mutant runs syncrace at each delay on ext4 and xfs;
a control boot runs the same syncrace on base as it is. The check passes
when syncrace reports lost files on the mutant (with the windows counted)
and none on base: then the workload would catch the hole, and the fix
closed it.

    python3 -m harness.run.synchole [--delays 0,2000] [--seconds 60] [--cpus 4]

Nothing here is timed; the race needs 3 vCPUs or more (syncrace.wl).
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
from harness.guest import initramfs, plan, protocol, workloads
from harness.kernels import kbuild, series
from harness.layout import REPO_ROOT, Layout, default_layout

SOURCE = REPO_ROOT / "synchole"
PATCH = SOURCE / "0001-synchole-base-s-sync-hole-re-opened-with-a-knob-that.patch"
KERNEL = "base+synchole"
CONTROL = "base"
FLAVOUR = "debug"
KNOB = "/sys/module/inode/parameters/synchole_delay_us"
DEFAULT_DELAYS = (0, 2000)
DEFAULT_SECONDS = 60
DEFAULT_CPUS = 4
FILESYSTEMS = ("ext4", "xfs")
RESULT = re.compile(r"^result phase=sync-check ops=(\d+) .*?\blost=(\d+)\b.*?\brounds=(\d+)\b",
                    re.M)
WINDOWS = re.compile(r"^windows (\d+)$", re.M)


class HoleError(Exception):
    pass


def mutant_kernel(layout: Layout) -> series.Kernel:
    base = series.resolve(layout, CONTROL)
    return series.Kernel(KERNEL, base.patches + (series.Patch("synchole", 1, PATCH),))


def syncrace_command(seconds: int) -> str:
    """workloads/syncrace.wl's command, with the run's length."""
    return (f"syncrace -p {{procs}} -n 64 -t {seconds} -D -d {{dev}} -c /tmp -L {{prefix}} "
            "{dir}")


def workload(delay_us: int | None, seconds: int) -> workloads.Workload:
    """syncrace at one delay, /proc/synchole read around it; None: the control (no knob)."""
    command = syncrace_command(seconds)
    if delay_us is None:
        name, run = "synchole-control", command
    else:
        name = f"synchole-{delay_us}"
        # The step's shell runs with -e: syncrace's failure must not skip the count after.
        run = (f"echo {delay_us} > {KNOB}; cat /proc/synchole; rc=0; {command} || rc=$?; "
               "cat /proc/synchole; exit $rc")
    text = "\n".join([
        f"name     = {name}",
        f"summary  = syncrace for {seconds} s"
        + ("" if delay_us is None else f" with the mutant's window widened by {delay_us} us"),
        f"run      = {run}",
        "output   = result-lines",
        f"fs       = {' '.join(FILESYSTEMS)}",
        "windowed = yes",
        f"timeout  = {seconds * 4 + 120}",
        "unit     = file", ""])
    return workloads.parse(SOURCE / f"{name}.wl", text)


@dataclass(frozen=True)
class HoleRow:
    kernel: str
    delay_us: int | None  # None: the control
    fs: str
    status: str  # the step's status in its boot record
    files: int
    lost: int
    rounds: int
    windows: int | None  # windows opened during the step; None: the control has none

    @property
    def label(self) -> str:
        return "control" if self.delay_us is None else f"{self.delay_us} us"


def read_step(text: str, source: str, kernel: str, delay_us: int | None, fs: str,
              status: str) -> HoleRow:
    """A step's stdout: the result line, and /proc/synchole before and after (mutant)."""
    result = RESULT.search(text)
    if result is None:
        raise HoleError(f"{source}: no syncrace result line (step status {status})")
    windows = None
    if delay_us is not None:
        counts = [int(n) for n in WINDOWS.findall(text)]
        if len(counts) != 2:
            raise HoleError(f"{source}: expected /proc/synchole before and after syncrace, "
                            f"found {len(counts)}")
        windows = counts[1] - counts[0]
    return HoleRow(kernel, delay_us, fs, status, int(result.group(1)), int(result.group(2)),
                   int(result.group(3)), windows)


def read_boot(record: runner.BootRecord, steps: list[plan.Step], kernel: str,
              delays: dict[str, int | None]) -> list[HoleRow]:
    rows = []
    for step in steps:
        out = record.directory / "files" / f"{step.id}.out"
        outcome = record.step(step.id)
        status = outcome.status if outcome else "lost"
        if not out.exists():
            raise HoleError(f"{record.directory}: step {step.label} left no output "
                            f"(status {status})")
        rows.append(read_step(out.read_text(errors="replace"), str(out), kernel,
                              delays[step.workload.name], step.fs, status))
    return rows


@dataclass(frozen=True)
class Verdict:
    caught: bool  # the mutant lost files in some step
    control_clean: bool | None  # base lost none; None: no control boot
    windows: int  # windows the mutant opened in all

    @property
    def passed(self) -> bool:
        return self.caught and self.control_clean is not False

    def sentence(self) -> str:
        if not self.windows:
            return ("the mutant never opened its window (the global lock was never busy "
                    "after ->drop_inode): nothing was tested")
        what = ("syncrace caught the re-opened hole" if self.caught else
                f"syncrace did not catch the re-opened hole in {self.windows} windows")
        control = {None: "no control boot", True: "base lost nothing",
                   False: "base lost files too"}[self.control_clean]
        return f"{what}; {control}"


def verdict(rows: list[HoleRow]) -> Verdict:
    mutant = [r for r in rows if r.delay_us is not None]
    control = [r for r in rows if r.delay_us is None]
    return Verdict(any(r.lost for r in mutant),
                   (not any(r.lost for r in control)) if control else None,
                   sum(r.windows or 0 for r in mutant))


def table(rows: list[HoleRow]) -> str:
    lines = ["| kernel | window widened by | fs | windows opened | rounds | files checked | "
             "files lost | step |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        windows = "-" if r.windows is None else f"{r.windows:,}"
        lines.append(f"| {r.kernel} | {r.label} | {r.fs} | {windows} | {r.rounds} | "
                     f"{r.files:,} | {r.lost:,} | {r.status} |")
    return "\n".join(lines)


def boot_steps(layout: Layout, image: kbuild.KernelImage, kernel: str,
               items: list[tuple[workloads.Workload, int | None]], cpus: int, out: Path,
               files: initramfs.GuestFiles) -> list[HoleRow]:
    steps = plan.make_steps([(w, fs, 2) for w, _ in items for fs in FILESYSTEMS])
    delays = {w.name: d for w, d in items}
    boot_dir = out / f"{kernel}-c{cpus}"
    progress.say(f"synchole: {kernel}/{FLAVOUR} at {cpus} vCPUs, {len(steps)} steps, "
                 f"folder {boot_dir}")
    record = runner.run_boot(image, files, qemu.Machine("tcg", cpus), steps, boot_dir,
                             f"synchole {kernel}", lockorder.for_kernel(layout, CONTROL),
                             on_line=_progress(len(steps)))
    if record.status in ("panic", "timeout", "hang"):
        raise HoleError(f"{boot_dir}: the boot ended {record.status}")
    return read_boot(record, steps, kernel, delays)


def run(layout: Layout, delays: list[int], seconds: int, cpus: int, out: Path,
        control: bool, build_missing: bool) -> int:
    mutant = kbuild.build_kernel(layout, mutant_kernel(layout), FLAVOUR,
                                 build_missing=build_missing)
    base = (kbuild.build_kernel(layout, series.resolve(layout, CONTROL), FLAVOUR,
                                build_missing=build_missing) if control else None)
    files = initramfs.prepare(layout, [workloads.load_all(layout.workloads)["syncrace"]])
    folder = out / time.strftime("%Y%m%d-%H%M%S")
    rows = boot_steps(layout, mutant, KERNEL, [(workload(d, seconds), d) for d in delays],
                      cpus, folder, files)
    if base is not None:
        rows += boot_steps(layout, base, CONTROL, [(workload(None, seconds), None)], cpus,
                           folder, files)
    found = verdict(rows)
    (folder / "synchole.json").write_text(json.dumps(
        {"mutant_image": str(mutant.directory),
         "control_image": str(base.directory) if base else None, "cpus": cpus,
         "seconds": seconds, "rows": [asdict(r) for r in rows],
         "caught": found.caught, "control_clean": found.control_clean,
         "windows": found.windows, "passed": found.passed}, indent=1) + "\n")
    text = f"{table(rows)}\n\n{found.sentence()}\n"
    (folder / "synchole.md").write_text(text)
    print(text, end="")
    return 0 if found.passed else 1


def _progress(total: int):
    done = [0]

    def on_line(text: str) -> None:
        mark = protocol.step_mark(text)
        if mark and mark[1] != "begin":
            done[0] += 1
            progress.say(f"  step {done[0]}/{total} done")
    return on_line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.run.synchole",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--delays", default=",".join(map(str, DEFAULT_DELAYS)),
                        help="widenings of the window in microseconds, comma separated")
    parser.add_argument("--seconds", type=int, default=DEFAULT_SECONDS,
                        help="syncrace's length per step")
    parser.add_argument("--cpus", type=int, default=DEFAULT_CPUS,
                        help="vCPUs (the race needs 3 or more)")
    parser.add_argument("--out", default="results/synchole", help="where the boots go")
    parser.add_argument("--no-control", action="store_true", help="skip the boot of base")
    parser.add_argument("--build-only", action="store_true", help="build the images and stop")
    parser.add_argument("--no-build", action="store_true", help="fail if an image is missing")
    args = parser.parse_args(argv)
    layout = default_layout()
    try:
        if args.build_only:
            print(kbuild.build_kernel(layout, mutant_kernel(layout), FLAVOUR).directory)
            return 0
        delays = [int(x) for x in args.delays.replace(",", " ").split()]
        return run(layout, delays, args.seconds, args.cpus, Path(args.out),
                   not args.no_control, not args.no_build)
    except (HoleError, kbuild.BuildError, series.SeriesError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
