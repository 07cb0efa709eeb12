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
a control boot runs the same syncrace on base as it is. The mutant lists
the inode numbers of the windows it opened on dirty inodes, and syncrace
names the inode of each file it found missing, so a loss is tied to a
window on that very inode, or not. The check passes when the mutant lost a
file inside a window it opened on it, and base lost none. base losing none
at natural width does not by itself tell fixed from unfixed (the mutant
loses none there either): the control shows that base loses nothing
where the mutant's widened window does.

    python3 -m harness.run.synchole [--delays 0,2000] [--seconds 60] [--cpus 4]

Nothing here is timed; the race needs 3 vCPUs or more (syncrace.wl).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from harness import lockorder, progress
from harness.boot import qemu, runner
from harness.guest import initramfs, plan, workloads
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
COUNTS = re.compile(r"^windows (\d+)\ndirty_windows (\d+)\nlisted_from (\d+)$", re.M)
DIRTY = re.compile(r"^dirty_window (\d+) (\d+)$", re.M)
LOST_INODE = re.compile(r": not on the disk when \S+ returned: .*\(inode (\d+) generation (\d+)\)$",
                        re.M)


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
        run = (f"echo {delay_us} > {KNOB}; echo mark > /proc/synchole; cat /proc/synchole; "
               f"rc=0; {command} || rc=$?; cat /proc/synchole; exit $rc")
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
    reports: tuple[str, ...]  # kinds of the kernel reports during the step
    files: int
    lost: int
    rounds: int
    # (inode number, generation) of the lost files syncrace named (20 at most); numbers
    # are reused round after round, the pair is not
    lost_inodes: tuple[tuple[int, int], ...]
    windows: int | None = None  # windows opened during the step; None: the control
    dirty_windows: int | None = None  # of them on a dirty inode
    dirty_inodes: frozenset[tuple[int, int]] = frozenset()  # (number, generation) of those
    listed_all: bool = True  # every dirty window of the step was listed (ring not wrapped)

    @property
    def label(self) -> str:
        return "control" if self.delay_us is None else f"{self.delay_us} us"

    @property
    def in_windows(self) -> int:
        """Lost files whose inode had a window opened on it while dirty, in this step."""
        return sum(1 for ino in self.lost_inodes if ino in self.dirty_inodes)


def read_step(out: str, err: str, source: str, kernel: str, delay_us: int | None, fs: str,
              status: str, reports: tuple[str, ...] = ()) -> HoleRow:
    """A step's stdout (the result line; /proc/synchole before and after, on the mutant)
    and stderr (syncrace's lost files with their inode numbers)."""
    result = RESULT.search(out)
    if result is None:
        raise HoleError(f"{source}: no syncrace result line (step status {status})")
    row = HoleRow(kernel, delay_us, fs, status, reports, int(result.group(1)),
                  int(result.group(2)), int(result.group(3)),
                  tuple((int(i), int(g)) for i, g in LOST_INODE.findall(err)))
    if delay_us is None:
        return row
    counts = [tuple(map(int, c)) for c in COUNTS.findall(out)]
    if len(counts) != 2:
        raise HoleError(f"{source}: expected /proc/synchole before and after syncrace, "
                        f"found {len(counts)}")
    (windows0, dirty0, _), (windows1, dirty1, listed_from) = counts
    after = out[out.rindex("\nwindows ") if "\nwindows " in out else 0:]
    return replace(row, windows=windows1 - windows0, dirty_windows=dirty1 - dirty0,
                   dirty_inodes=frozenset((int(i), int(g)) for i, g in DIRTY.findall(after)),
                   listed_all=listed_from <= dirty0)


def read_boot(record: runner.BootRecord, steps: list[plan.Step], kernel: str,
              delays: dict[str, int | None]) -> tuple[list[HoleRow], list[str]]:
    """The rows of the steps that left their output, and what is wrong with the others."""
    rows, problems = [], []
    for step in steps:
        files = record.directory / "files"
        outcome = record.step(step.id)
        status = outcome.status if outcome else "lost"
        out = files / f"{step.id}.out"
        if not out.exists():
            problems.append(f"{record.directory}: step {step.label} left no output "
                            f"(status {status})")
            continue
        err = files / f"{step.id}.err"
        try:
            rows.append(read_step(
                out.read_text(errors="replace"),
                err.read_text(errors="replace") if err.exists() else "", str(out), kernel,
                delays[step.workload.name], step.fs, status,
                tuple(sorted({r.get("kind", "?") for r in outcome.reports})) if outcome
                else ()))
        except HoleError as e:
            problems.append(str(e))
    return rows, problems


@dataclass(frozen=True)
class Verdict:
    lost: int  # files the mutant lost
    in_windows: int  # of them inside a window the mutant opened on their inode
    control_lost: int | None  # files base lost; None: no control boot
    control_files: int
    windows: int  # windows the mutant opened in all
    problems: tuple[str, ...]  # steps or boots that could not be read

    @property
    def caught(self) -> bool:
        return self.in_windows > 0

    @property
    def passed(self) -> bool:
        return self.caught and not self.control_lost

    @property
    def inconclusive(self) -> bool:
        return not self.caught and bool(self.problems)

    def sentence(self) -> str:
        if not self.windows:
            what = ("the mutant never opened its window (the global lock was never busy "
                    "after ->drop_inode): nothing was tested")
        elif self.caught:
            what = (f"syncrace caught the re-opened hole: {plural(self.lost, 'file')} lost "
                    f"on the mutant, {self.in_windows} of them inside a window it opened on "
                    f"that very inode")
        else:
            what = (f"syncrace did not catch the re-opened hole in {self.windows:,} windows "
                    f"({plural(self.lost, 'file')} lost, none inside a window on its inode)")
        control = ("no control boot" if self.control_lost is None else
                   f"base lost {self.control_lost} of {self.control_files:,} files")
        more = f"; {plural(len(self.problems), 'step')} could not be read" if self.problems else ""
        return f"{what}; {control}{more}"


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def verdict(rows: list[HoleRow], problems: list[str] = ()) -> Verdict:
    mutant = [r for r in rows if r.delay_us is not None]
    control = [r for r in rows if r.delay_us is None]
    return Verdict(sum(r.lost for r in mutant), sum(r.in_windows for r in mutant),
                   sum(r.lost for r in control) if control else None,
                   sum(r.files for r in control), sum(r.windows or 0 for r in mutant),
                   tuple(problems))


def table(rows: list[HoleRow]) -> str:
    lines = ["| kernel | window widened by | fs | windows (on dirty inodes) | rounds | "
             "files checked | files lost | in a window on its inode | step | kernel reports |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        windows = "-" if r.windows is None else (
            f"{r.windows:,} ({r.dirty_windows:,}{'' if r.listed_all else ', not all listed'})")
        inside = "-" if r.windows is None else str(r.in_windows)
        lines.append(f"| {r.kernel} | {r.label} | {r.fs} | {windows} | {r.rounds} | "
                     f"{r.files:,} | {r.lost:,} | {inside} | {r.status} | "
                     f"{', '.join(r.reports) or 'none'} |")
    return "\n".join(lines)


def boot_steps(layout: Layout, image: kbuild.KernelImage, kernel: str,
               items: list[tuple[workloads.Workload, int | None]], cpus: int, out: Path,
               files: initramfs.GuestFiles) -> tuple[list[HoleRow], list[str]]:
    steps = plan.make_steps([(w, fs, 2) for w, _ in items for fs in FILESYSTEMS])
    delays = {w.name: d for w, d in items}
    boot_dir = out / f"{kernel}-c{cpus}"
    progress.say(f"synchole: {kernel}/{FLAVOUR} at {cpus} vCPUs, {len(steps)} steps, "
                 f"folder {boot_dir}")
    record = runner.run_boot(image, files, qemu.Machine("tcg", cpus), steps, boot_dir,
                             f"synchole {kernel}", lockorder.for_kernel(layout, CONTROL),
                             on_line=runner.step_progress(len(steps)))
    rows, problems = read_boot(record, steps, kernel, delays)
    if record.status in ("panic", "timeout", "hang"):  # its steps' figures are kept
        problems.insert(0, f"{boot_dir}: the boot ended {record.status}")
    return rows, problems


def run(layout: Layout, delays: list[int], seconds: int, cpus: int, out: Path,
        control: bool, build_missing: bool) -> int:
    """0: passed; 1: the check failed; 2: inconclusive (a boot or step could not be read)."""
    mutant = kbuild.build_kernel(layout, mutant_kernel(layout), FLAVOUR,
                                 build_missing=build_missing)
    base = (kbuild.build_kernel(layout, series.resolve(layout, CONTROL), FLAVOUR,
                                build_missing=build_missing) if control else None)
    known = workloads.load_all(layout.workloads)
    if "syncrace" not in known:
        raise HoleError(f"no syncrace workload in {', '.join(map(str, layout.workloads))}")
    files = initramfs.prepare(layout, [known["syncrace"]])
    folder = out / time.strftime("%Y%m%d-%H%M%S")
    rows, problems = boot_steps(layout, mutant, KERNEL,
                                [(workload(d, seconds), d) for d in delays], cpus, folder, files)
    if base is not None:
        more, trouble = boot_steps(layout, base, CONTROL, [(workload(None, seconds), None)],
                                   cpus, folder, files)
        rows, problems = rows + more, problems + trouble
    found = verdict(rows, problems)
    (folder / "synchole.json").write_text(json.dumps(
        {"mutant_image": str(mutant.directory),
         "control_image": str(base.directory) if base else None, "cpus": cpus,
         "seconds": seconds, "rows": [asdict(r) | {"dirty_inodes": sorted(r.dirty_inodes)}
                                      for r in rows],
         "lost": found.lost, "in_windows": found.in_windows,
         "control_lost": found.control_lost, "windows": found.windows,
         "problems": list(problems), "passed": found.passed,
         "inconclusive": found.inconclusive}, indent=1) + "\n")
    text = "\n".join([table(rows), "", *problems, found.sentence(), ""])
    (folder / "synchole.md").write_text(text)
    print(text, end="")
    return 0 if found.passed else 2 if found.inconclusive else 1


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
