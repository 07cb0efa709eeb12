"""make race-gate: syncrace at 8 vCPUs for 600 s on every kernel's debug image, under
both spinlocks a 6.1 guest can run.

6.1's shrink_lock_dentry() re-checks only the count after re-locking, never
->d_inode, so it can unlock an i_lock it never took: lockdep's "bad unlock
balance" at dentry_unlink_inode, then sleep-in-atomic, and lockdep turns
itself off for the rest of the boot (NOTES.md, issue 39). series-stable/0001
fixes it under every kernel. On stock 6.1 it showed at 87 s of syncrace with
the hypervisor bit visible (the guest then runs the test-and-set
virt_spin_lock) and not in 600 s with queued spinlocks, whose fair hand-off
closes the window far more often: so each kernel boots both ways, and one
clean boot under queued spinlocks alone says little.

The gate passes when every boot ran the spinlock it was given (the guest's
init says which), its syncrace step ran to its end, no kernel report came,
and syncrace lost no file. Nothing here is timed; results/race-gate/STAMP/
keeps the boots and summary.md and summary.json, rewritten after every boot.

    python3 -m harness.run.racegate [--kernels mainline base chinner piggin]
                                    [--seconds 600] [--cpus 8] [--locks qspinlock ...]
    python3 -m harness.run.racegate --read KERNEL=BOOT_DIR ...

--read boots nothing: it writes the summary of gate boots made earlier, each
derived again from its folder by today's parsers (the spinlock it was given
from QEMU's -cpu, its image from -kernel, checked to carry KERNEL's patches).
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
from harness.boot import qemu, runner, tcg_cs
from harness.guest import initramfs, plan, workloads
from harness.kernels import kbuild, series
from harness.layout import REPO_ROOT, Layout, default_layout
from harness.run import synchole

FLAVOUR = "debug"
KERNELS = ("mainline", "base", "chinner", "piggin")
# The spinlock a guest runs, by whether QEMU shows it the hypervisor bit.
LOCKS = {"virt_spin_lock": True, "qspinlock": False}
DEFAULT_SECONDS = 600
DEFAULT_CPUS = 8
FS = "ext4"
BOOT_OVERHEAD_S = 30  # a debug boot beyond its step, measured on the gate boots


class GateError(Exception):
    pass


def workload(seconds: int) -> workloads.Workload:
    """workloads/syncrace.wl at the gate's length."""
    text = "\n".join([
        "name     = race-gate",
        f"summary  = syncrace for {seconds} s: sync and syncfs against final iputs and "
        "drop_caches, the load that drove 6.1's shrink_lock_dentry() race",
        f"run      = {synchole.syncrace_command(seconds)}",
        "output   = result-lines",
        f"fs       = {FS}",
        "windowed = yes",
        f"timeout  = {seconds + 300}",
        "unit     = file", ""])
    return workloads.parse(REPO_ROOT / "workloads" / "race-gate.wl", text)


@dataclass(frozen=True)
class GateRow:
    kernel: str
    lock: str  # the spinlock the boot was given
    seen: str | None  # the one the guest's init reported
    boot: str  # its folder, resolved (a boot read again is the same boot)
    status: str  # the syncrace step's status
    seconds: float | None  # the step's wall time
    files: int | None  # checked against the disk; None: no result line
    lost: int | None
    rounds: int | None
    reports: tuple[str, ...]  # "kind: title" of every kernel report of the boot

    @property
    def passed(self) -> bool:
        return (self.seen == self.lock and self.status == "ok" and self.lost == 0
                and not self.reports)

    def why(self) -> str:
        """What failed, or 'clean'."""
        problems = []
        if self.seen != self.lock:
            problems.append(f"the guest ran {self.seen or 'an unreported spinlock'}")
        if self.status != "ok":
            problems.append(f"step {self.status}")
        if self.files is None:
            problems.append("no syncrace result line")
        elif self.lost:
            problems.append(f"{self.lost:,} files lost")
        problems += list(self.reports)
        return "; ".join(problems) or "clean"


def read_row(record: runner.BootRecord, kernel: str, lock: str) -> GateRow:
    """A gate boot's row from its record and syncrace's output."""
    (outcome,) = record.steps
    out = record.directory / "files" / f"{outcome.step}.out"
    result = synchole.RESULT.search(out.read_text(errors="replace")) if out.exists() else None
    files, lost, rounds = (int(g) for g in result.groups()) if result else (None, None, None)
    return GateRow(kernel, lock, record.spinlock, str(record.directory.resolve()), outcome.status,
                   outcome.wall_s, files, lost, rounds,
                   tuple(f"{r['kind']}: {r['title']}" for r in record.reports))


def table(rows: list[GateRow]) -> str:
    lines = ["| kernel | spinlock given | guest ran | syncrace s | rounds | files checked | "
             "files lost | verdict | boot |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r.kernel} | {r.lock} | {r.seen or '?'} | "
            f"{'-' if r.seconds is None else f'{r.seconds:.0f}'} | "
            f"{'-' if r.rounds is None else r.rounds} | "
            f"{'-' if r.files is None else f'{r.files:,}'} | "
            f"{'-' if r.lost is None else r.lost} | "
            f"{'passed' if r.passed else 'FAILED: ' + r.why()} | {Path(r.boot).name} |")
    return "\n".join(lines)


def write_summary(folder: Path, images: dict[str, kbuild.ImageIdentity], rows: list[GateRow],
                  planned: dict[str, int], seconds: int, cpus: int, finished: bool) -> str:
    """summary.md and summary.json; `images` names each kernel's debug image, so a run's
    record can count the gate for the kernel's very patches (run/records.py); `planned`
    its boots."""
    passed = sum(r.passed for r in rows)
    total = sum(planned.values())
    state = (f"{passed} of {total} boots passed" if finished else
             f"{len(rows)} of {total} boots so far, {passed} passed (still running, or "
             "stopped: the boots not listed did not run)")
    text = "\n".join([
        f"# Race gate: syncrace on {FS} for {seconds} s at {cpus} vCPUs, debug images", "",
        state + ".", "", table(rows), ""])
    (folder / "summary.md").write_text(text)
    (folder / "summary.json").write_text(json.dumps(
        {"seconds": seconds, "cpus": cpus, "planned": planned, "finished": finished,
         "images": {k: asdict(i) for k, i in sorted(images.items())},
         "passed": finished and passed == total,
         "rows": [asdict(r) | {"passed": r.passed} for r in rows]}, indent=1) + "\n")
    return text


def run(layout: Layout, kernels: list[str], locks: list[str], seconds: int, cpus: int,
        out: Path, build_missing: bool) -> int:
    """0: every boot passed; 1: one failed."""
    images = {}
    for i, kernel in enumerate(kernels, 1):
        progress.say(f"race gate: image {i}/{len(kernels)}: {kernel}/{FLAVOUR}")
        images[kernel] = kbuild.build(layout, kernel, FLAVOUR, build_missing=build_missing)
    identities = {k: kbuild.identity(image) for k, image in images.items()}
    gate = workload(seconds)
    files = initramfs.prepare(layout, [gate])
    (step,) = plan.make_steps([(gate, FS, cpus)])
    folder = out / time.strftime("%Y%m%d-%H%M%S")
    folder.mkdir(parents=True)
    cells = [(k, lock) for lock in locks for k in kernels]
    planned = {k: len(locks) for k in kernels}
    rows: list[GateRow] = []
    for n, (kernel, lock) in enumerate(cells, 1):
        left = (len(cells) - n + 1) * (seconds + BOOT_OVERHEAD_S)
        progress.say(f"race gate: boot {n}/{len(cells)}: {kernel} with {lock} "
                     f"(about {progress.format_duration(left)} left)")
        machine = qemu.Machine("tcg", cpus, hypervisor=LOCKS[lock])
        record = runner.run_boot(images[kernel], files, machine, [step],
                                 folder / f"{kernel}-{lock}", f"race gate {kernel} {lock}",
                                 lockorder.for_kernel(layout, kernel))
        rows.append(read_row(record, kernel, lock))
        progress.say(f"  {rows[-1].why() if not rows[-1].passed else 'passed'}")
        write_summary(folder, identities, rows, planned, seconds, cpus, finished=False)
    print(write_summary(folder, identities, rows, planned, seconds, cpus, finished=True),
          end="")
    return 0 if all(r.passed for r in rows) else 1


def read_boots(layout: Layout, folders: dict[str, list[Path]], out: Path) -> int:
    """The gate's summary of boots made earlier (a boot of syncrace alone, as `run`
    makes), each derived again by today's parsers: its image from QEMU's command, the
    spinlock it was given from -cpu, the kernel checked against the image's patches."""
    found = []
    for kernel, boots in folders.items():
        digest = series.resolve(layout, kernel).patch_digest[:16]
        for folder in boots:
            try:
                command = json.loads((folder / "qemu.json").read_text())["command"]
                image_dir = tcg_cs.image_of_boot(folder)
                cpu = command[command.index("-cpu") + 1]
                cpus = int(command[command.index("-smp") + 1])
                run_line = (folder / "plan.sh").read_text()
            except (OSError, ValueError, KeyError, IndexError, tcg_cs.TcgCsError) as e:
                raise GateError(f"{folder}: not a boot folder of the gate ({e})") from None
            seconds = re.search(r"syncrace .*-t (\d+)", run_line)
            meta = json.loads((image_dir / "meta.json").read_text())
            image = kbuild.KernelImage(kernel, meta["flavour"], meta["key"], image_dir)
            ident = kbuild.identity(image)
            if ident.patches_digest != digest or meta["flavour"] != FLAVOUR or not seconds:
                raise GateError(f"{folder}: booted {meta['kernel']}/{meta['flavour']} (patch "
                                f"digest {ident.patches_digest}), not {kernel}/{FLAVOUR} "
                                f"({digest}) with syncrace's length in its plan")
            lock = next(name for name, shown in LOCKS.items()
                        if shown == (cpu == qemu.cpu_model("tcg", True)))
            (step,) = plan.make_steps([(workload(int(seconds.group(1))), FS, cpus)])
            record = runner.read_boot(folder, [step], lockorder.for_kernel(layout, kernel))
            found.append((read_row(record, kernel, lock), ident, int(seconds.group(1)), cpus))
    if len({(s, c) for _, _, s, c in found}) != 1:
        raise GateError("the boots ran syncrace for different lengths or vCPU counts: "
                        + ", ".join(f"{r.boot} {s} s {c} vCPUs" for r, _, s, c in found))
    folder = out / (time.strftime("%Y%m%d-%H%M%S") + "-read")
    folder.mkdir(parents=True)
    rows = [r for r, _, _, _ in found]
    images = {r.kernel: i for r, i, _, _ in found}
    _, _, seconds_, cpus_ = found[0]
    planned = {k: sum(1 for r in rows if r.kernel == k) for k in images}
    print(write_summary(folder, images, rows, planned, seconds_, cpus_, finished=True),
          end="")
    return 0 if all(r.passed for r in rows) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.run.racegate",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", nargs="+", default=list(KERNELS))
    parser.add_argument("--locks", nargs="+", default=list(LOCKS), choices=list(LOCKS),
                        help="the spinlocks to boot each kernel with (default: both)")
    parser.add_argument("--seconds", type=int, default=DEFAULT_SECONDS)
    parser.add_argument("--cpus", type=int, default=DEFAULT_CPUS)
    parser.add_argument("--out", help="where the boots go (default: RESULTS_DIR/race-gate)")
    parser.add_argument("--no-build", action="store_true", help="fail if an image is missing")
    parser.add_argument("--read", nargs="+", metavar="KERNEL=BOOT_DIR",
                        help="no boots: the summary of boots made earlier, each named with "
                        "its kernel")
    args = parser.parse_args(argv)
    layout = default_layout()
    out = Path(args.out) if args.out else layout.results / "race-gate"
    try:
        if args.read:
            folders: dict[str, list[Path]] = {}
            for item in args.read:
                kernel, _, folder = item.partition("=")
                folders.setdefault(kernel, []).append(Path(folder))
            return read_boots(layout, folders, out)
        return run(layout, args.kernels, args.locks, args.seconds, args.cpus,
                   out, not args.no_build)
    except (GateError, kbuild.BuildError, series.SeriesError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
