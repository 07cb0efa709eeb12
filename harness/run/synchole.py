"""Would syncrace catch base's old sync hole, and does base as it is close it?
Two kernels answer it, under the same widening.

Before issue 28, base 0001 marked a live dirty inode I_WILL_FREE while it
waited for the busy global lock after ->drop_inode(); writeback and sync
skip such an inode, so sync() could return before its data was on the disk.
syncrace (workloads/syncrace.wl) checks exactly that property, but under TCG
it never hit the window at its natural width (0 files lost on the unfixed
series, 2026-12-06). Two kernels of their own, never compared, share a knob
(inode.synchole_delay_us) and a counter (/proc/synchole, the windows and the
inode number and generation of those on a dirty inode):

    base+widening  base plus synchole/0001: base as it is, its drop path held
                   open for the knob's delay (spinning: it holds the global lock
                   and i_lock there) wherever the old window could open, at
                   every final drop of a filesystem with a ->drop_inode() of
                   its own; the control
    base+synchole  base+widening plus synchole/0002: the old window put back
                   and widened by as much (a sleep inside it); the mutant

One debug boot of each runs syncrace at each delay on ext4 and xfs. syncrace
names the inode of each file it found missing, so a loss is tied to a window
on that very inode, or not. The check passes when the mutant, widened, lost a
file inside a window it opened on it, and base lost none in any step, its
widened steps held open on dirty inodes: base losing none where the mutant's
widened window loses files is what shows the fix closes the hole; base losing
none unwidened would not (the unwidened mutant lost 1 file in its first 12
steps of 60 s, NOTES.md).

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
from harness.guest import initramfs, plan, workloads
from harness.kernels import kbuild, series
from harness.layout import REPO_ROOT, Layout, default_layout

SOURCE = REPO_ROOT / "synchole"
WIDENING = SOURCE / "0001-synchole-base-s-drop-path-held-open-as-long-as-the-m.patch"
HOLE = SOURCE / "0002-synchole-base-s-old-sync-hole-re-opened-widened-by-t.patch"
KERNEL = "base+synchole"  # the mutant
CONTROL = "base+widening"  # base as it is, widened as much
BASE = "base"
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


def control_kernel(layout: Layout) -> series.Kernel:
    base = series.resolve(layout, BASE)
    return series.Kernel(CONTROL, base.patches + (series.Patch("synchole", 1, WIDENING),))


def mutant_kernel(layout: Layout) -> series.Kernel:
    return series.Kernel(KERNEL, control_kernel(layout).patches
                         + (series.Patch("synchole", 2, HOLE),))


def syncrace_command(seconds: int) -> str:
    """workloads/syncrace.wl's command, with the run's length."""
    return (f"syncrace -p {{procs}} -n 64 -t {seconds} -D -d {{dev}} -c /tmp -L {{prefix}} "
            "{dir}")


def workload(delay_us: int, seconds: int) -> workloads.Workload:
    """syncrace at one delay (both kernels' knob), /proc/synchole read around it."""
    command = syncrace_command(seconds)
    name = f"synchole-{delay_us}"
    # The step's shell runs with -e: syncrace's failure must not skip the count after.
    run = (f"echo {delay_us} > {KNOB}; echo mark > /proc/synchole; cat /proc/synchole; "
           f"rc=0; {command} || rc=$?; cat /proc/synchole; exit $rc")
    text = "\n".join([
        f"name     = {name}",
        f"summary  = syncrace for {seconds} s with the drop path's window widened by "
        f"{delay_us} us",
        f"run      = {run}",
        "output   = result-lines",
        f"fs       = {' '.join(FILESYSTEMS)}",
        "windowed = yes",
        f"timeout  = {seconds * 4 + 120}",
        "unit     = file", ""])
    return workloads.parse(SOURCE / f"{name}.wl", text)


@dataclass(frozen=True)
class HoleRow:
    kernel: str  # KERNEL (the mutant) or CONTROL
    delay_us: int  # the knob during the step
    fs: str
    status: str  # the step's status in its boot record
    reports: tuple[str, ...]  # kinds of the kernel reports during the step
    files: int
    lost: int
    rounds: int
    # (inode number, generation) of the lost files syncrace named (20 at most); numbers
    # are reused round after round, the pair is not
    lost_inodes: tuple[tuple[int, int], ...]
    windows: int  # windows opened (mutant) or places held open (control) in the step
    dirty_windows: int  # of them on a dirty inode
    dirty_inodes: frozenset[tuple[int, int]] = frozenset()  # (number, generation) of those
    listed_all: bool = True  # every dirty window of the step was listed (ring not wrapped)

    @property
    def label(self) -> str:
        return f"{self.delay_us} us"

    @property
    def widened(self) -> bool:
        return self.delay_us > 0

    @property
    def in_windows(self) -> int:
        """Lost files whose inode had a window opened on it while dirty, in this step."""
        return sum(1 for ino in self.lost_inodes if ino in self.dirty_inodes)


def read_step(out: str, err: str, source: str, kernel: str, delay_us: int, fs: str,
              status: str, reports: tuple[str, ...] = ()) -> HoleRow:
    """A step's stdout (the result line; /proc/synchole before and after) and stderr
    (syncrace's lost files with their inode numbers)."""
    result = RESULT.search(out)
    if result is None:
        raise HoleError(f"{source}: no syncrace result line (step status {status})")
    counts = [tuple(map(int, c)) for c in COUNTS.findall(out)]
    if len(counts) != 2:
        raise HoleError(f"{source}: expected /proc/synchole before and after syncrace, "
                        f"found {len(counts)}")
    (windows0, dirty0, _), (windows1, dirty1, listed_from) = counts
    # The step's dirty windows are those the second read lists (the mark came just before
    # the first).
    after = out[out.rindex("\nwindows "):]
    return HoleRow(kernel, delay_us, fs, status, reports, int(result.group(1)),
                   int(result.group(2)), int(result.group(3)),
                   tuple((int(i), int(g)) for i, g in LOST_INODE.findall(err)),
                   windows1 - windows0, dirty1 - dirty0,
                   frozenset((int(i), int(g)) for i, g in DIRTY.findall(after)),
                   listed_from <= dirty0)


def read_boot(record: runner.BootRecord, steps: list[plan.Step], kernel: str,
              delays: dict[str, int]) -> tuple[list[HoleRow], list[str]]:
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
    """What the widened steps say: the mutant's, and the control's."""
    lost: int  # files the widened mutant lost
    in_windows: int  # of them inside a window the mutant opened on their inode
    windows: int  # windows the widened mutant opened
    control_lost: int | None  # files the control lost in any step; None: no control boot
    control_files: int
    control_held: int  # places the widened control held open on a dirty inode
    problems: tuple[str, ...]  # steps or boots that could not be read

    @property
    def caught(self) -> bool:
        return self.in_windows > 0

    @property
    def control_tested(self) -> bool:
        return self.control_lost is not None and self.control_held > 0

    @property
    def passed(self) -> bool:
        return self.caught and self.control_tested and self.control_lost == 0

    @property
    def inconclusive(self) -> bool:
        return not self.passed and not self.control_lost and bool(self.problems)

    def sentence(self) -> str:
        if not self.windows:
            what = ("the widened mutant never opened its window (the global lock was never "
                    "busy after ->drop_inode): nothing was tested")
        elif self.caught:
            what = (f"syncrace caught the re-opened hole: {plural(self.lost, 'file')} lost "
                    f"on the widened mutant, {self.in_windows} of them inside a window it "
                    f"opened on that very inode")
        else:
            what = (f"syncrace did not catch the re-opened hole in {self.windows:,} widened "
                    f"windows ({plural(self.lost, 'file')} lost, none inside a window on "
                    f"its inode)")
        if self.control_lost is None:
            control = "no control boot"
        elif not self.control_held:
            control = (f"base, widened as much, was never held open on a dirty inode: the "
                       f"control tested nothing (it lost {self.control_lost} of "
                       f"{self.control_files:,} files)")
        else:
            control = (f"base, widened as much ({self.control_held:,} drops of dirty inodes "
                       f"held open), lost {self.control_lost} of {self.control_files:,} files")
        more = f"; {plural(len(self.problems), 'step')} could not be read" if self.problems else ""
        return f"{what}; {control}{more}"


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def verdict(rows: list[HoleRow], problems: list[str] = ()) -> Verdict:
    mutant = [r for r in rows if r.kernel == KERNEL and r.widened]
    control = [r for r in rows if r.kernel == CONTROL]
    return Verdict(sum(r.lost for r in mutant), sum(r.in_windows for r in mutant),
                   sum(r.windows for r in mutant),
                   sum(r.lost for r in control) if control else None,
                   sum(r.files for r in control),
                   sum(r.dirty_windows for r in control if r.widened), tuple(problems))


def table(rows: list[HoleRow]) -> str:
    lines = ["| kernel | widened by | fs | windows or held drops (on dirty inodes) | rounds | "
             "files checked | files lost | in a window on its inode | step | kernel reports |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        windows = (f"{r.windows:,} ({r.dirty_windows:,}"
                   f"{'' if r.listed_all else ', not all listed'})")
        lines.append(f"| {r.kernel} | {r.label} | {r.fs} | {windows} | {r.rounds} | "
                     f"{r.files:,} | {r.lost:,} | {r.in_windows} | {r.status} | "
                     f"{', '.join(r.reports) or 'none'} |")
    return "\n".join(lines)


def boot_steps(layout: Layout, image: kbuild.KernelImage, kernel: str,
               items: list[tuple[workloads.Workload, int]], cpus: int, out: Path,
               files: initramfs.GuestFiles) -> tuple[list[HoleRow], list[str]]:
    steps = plan.make_steps([(w, fs, 2) for w, _ in items for fs in FILESYSTEMS])
    delays = {w.name: d for w, d in items}
    boot_dir = out / f"{kernel}-c{cpus}"
    progress.say(f"synchole: {kernel}/{FLAVOUR} at {cpus} vCPUs, {len(steps)} steps, "
                 f"folder {boot_dir}")
    record = runner.run_boot(image, files, qemu.Machine("tcg", cpus), steps, boot_dir,
                             f"synchole {kernel}", lockorder.for_kernel(layout, BASE),
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
    widened = (kbuild.build_kernel(layout, control_kernel(layout), FLAVOUR,
                                   build_missing=build_missing) if control else None)
    known = workloads.load_all(layout.workloads)
    if "syncrace" not in known:
        raise HoleError(f"no syncrace workload in {', '.join(map(str, layout.workloads))}")
    files = initramfs.prepare(layout, [known["syncrace"]])
    folder = out / time.strftime("%Y%m%d-%H%M%S")
    items = [(workload(d, seconds), d) for d in delays]
    rows, problems = boot_steps(layout, mutant, KERNEL, items, cpus, folder, files)
    if widened is not None:
        more, trouble = boot_steps(layout, widened, CONTROL, items, cpus, folder, files)
        rows, problems = rows + more, problems + trouble
    found = verdict(rows, problems)
    (folder / "synchole.json").write_text(json.dumps(
        {"mutant_image": str(mutant.directory),
         "control_image": str(widened.directory) if widened else None, "cpus": cpus,
         "seconds": seconds, "rows": [asdict(r) | {"dirty_inodes": sorted(r.dirty_inodes)}
                                      for r in rows],
         "lost": found.lost, "in_windows": found.in_windows, "windows": found.windows,
         "control_lost": found.control_lost, "control_held": found.control_held,
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
    parser.add_argument("--out", help="where the boots go (default: RESULTS_DIR/synchole)")
    parser.add_argument("--no-control", action="store_true",
                        help="skip the boot of base+widening (the check cannot pass)")
    parser.add_argument("--build-only", action="store_true", help="build the images and stop")
    parser.add_argument("--no-build", action="store_true", help="fail if an image is missing")
    args = parser.parse_args(argv)
    layout = default_layout()
    try:
        if args.build_only:
            for kernel in (mutant_kernel(layout), control_kernel(layout)):
                print(kbuild.build_kernel(layout, kernel, FLAVOUR).directory)
            return 0
        delays = [int(x) for x in args.delays.replace(",", " ").split()]
        return run(layout, delays, args.seconds, args.cpus,
                   Path(args.out) if args.out else layout.results / "synchole",
                   not args.no_control, not args.no_build)
    except (HoleError, kbuild.BuildError, series.SeriesError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
