"""Run-to-run spread of -icount rates: one kernel image booted again and again.

    python3 -m harness.run.icount_spread --out DIR [--kernel mainline] [--boots 4]
                                         [--fresh-disk]

Each boot runs the default workloads at 1 vCPU under -icount, as the
-icount cells of `make compare` do (the same QEMU options and kernel
command line: qemu.ICOUNT, qemu.ICOUNT_CMDLINE, qemu.POLL_IDLE_CMDLINE). With --fresh-disk every
boot gets disk images made anew by mkfs for every disk filesystem of the
matrix (ext4: a new UUID and directory hash seed; XFS: a new UUID), as a
fresh clone's first run does; without it every boot starts from the build
folder's images, as the boots of one run do. DIR/boots.json collects the
rates of every boot (appended to, so several invocations make one sample)
with the host's load average before and after each boot: -icount time is
emulated, but say what the host was doing. A boots.json measured with
other -icount options, another kernel command line or another image is
not appended to: its spread is of another method.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import replace
from pathlib import Path

from harness import lockorder, progress
from harness.boot import qemu, runner
from harness.guest import initramfs, plan, protocol, workloads
from harness.kernels import kbuild
from harness.layout import default_layout

BOOTS_FILE = "boots.json"


class SpreadError(Exception):
    pass


def rates(record: runner.BootRecord, steps: list[plan.Step]) -> dict[str, float]:
    """Case label (workload, phase, fs) -> operations per emulated second."""
    out = {}
    for step, outcome in zip(steps, record.steps):
        if outcome.status != "ok" or not outcome.numbers:
            continue
        for fig in outcome.numbers.figures:
            if fig.metric == "throughput" and not fig.lock:
                phase = "" if fig.phase == step.workload.name else f" {fig.phase}"
                out[f"{step.workload.name}{phase} on {step.fs}"] = fig.value
    return out


def method(machine: qemu.Machine, image: kbuild.KernelImage) -> dict[str, str]:
    """What makes two boots' rates comparable: the QEMU options, command line and image."""
    return {"icount": qemu.ICOUNT, "cmdline": machine.kernel_words, "image": image.key}


def check_method(collected: list[dict], wanted: dict[str, str], boots_file: Path) -> None:
    for boot in collected:
        have = {key: boot.get(key, "") for key in wanted}
        if have != wanted:
            raise SpreadError(
                f"{boots_file}: boot {boot['boot']} was measured with {have}, this one would "
                f"be {wanted}: a spread is of one method (use another --out, or remove it)")


def fresh_disks(files: initramfs.GuestFiles, folder: Path) -> initramfs.GuestFiles:
    """The guest files with every disk image made anew in the boot folder."""
    disks = {}
    for fs in protocol.disk_devices(set(files.disks)):
        disks[fs] = folder / f"fresh-{fs}.img"
        initramfs.make_disk(disks[fs], fs)
    return replace(files, disks={**files.disks, **disks})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.run.icount_spread",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--kernel", default="mainline")
    parser.add_argument("--boots", type=int, default=4)
    parser.add_argument("--fresh-disk", action="store_true")
    args = parser.parse_args(argv)
    layout = default_layout()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    image = kbuild.build(layout, args.kernel, "perf")
    files = initramfs.prepare(layout)
    order = lockorder.for_kernel(layout, args.kernel)
    chosen = workloads.select(workloads.load_all(layout.workloads), "default")
    steps = plan.make_steps([(w, fs, p) for w in chosen for fs in w.filesystems
                             for p in w.procs_for(1)])
    machine = qemu.Machine("tcg", 1, icount=True, poll_idle=True)  # as compare's -icount boots
    boots_file = out / BOOTS_FILE
    collected = json.loads(boots_file.read_text()) if boots_file.exists() else []
    check_method(collected, method(machine, image), boots_file)
    meter = progress.Steps(args.boots, f"icount spread {args.kernel}")
    for n in range(args.boots):
        name = f"{time.strftime('%Y%m%d-%H%M%S')}-{args.kernel}-icount"
        folder = out / name
        folder.mkdir()
        guest = fresh_disks(files, folder) if args.fresh_disk else files
        meter.start(name + (" (fresh disk images)" if args.fresh_disk else ""))
        load_before = os.getloadavg()
        record = runner.run_boot(image, guest, machine, steps, folder, "icount spread", order)
        for disk in set(guest.disks.values()) - set(files.disks.values()):
            disk.unlink()
        collected.append({"boot": name, "kernel": args.kernel, **method(machine, image),
                          "initramfs": files.initramfs.name,
                          "disk": "fresh" if args.fresh_disk else "build folder",
                          "status": record.status, "wall_s": round(record.wall_s, 1),
                          "loadavg_before": [round(x, 2) for x in load_before],
                          "loadavg_after": [round(x, 2) for x in os.getloadavg()],
                          "others_cpu_s": round(record.others_cpu_s, 1),
                          "rates": rates(record, steps)})
        boots_file.write_text(json.dumps(collected, indent=1) + "\n")
        meter.finish()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
