"""Run-to-run spread of -icount rates: one kernel image booted again and again.

    python3 -m harness.run.icount_spread --out DIR [--kernel mainline] [--boots 4]
                                         [--fresh-disk]

Each boot runs the default workloads at 1 vCPU under -icount, as the
-icount cells of `make compare` do. With --fresh-disk every boot gets an ext4
image made anew by mkfs.ext4 (a new UUID and directory hash seed), as a
fresh clone's first run does; without it every boot starts from the build
folder's image, as the boots of one run do. DIR/boots.json collects the
rates of every boot (appended to, so several invocations make one sample)
with the host's load average before and after each boot: -icount time is
emulated, but say what the host was doing.
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
from harness.guest import initramfs, plan, workloads
from harness.kernels import kbuild
from harness.layout import default_layout

BOOTS_FILE = "boots.json"


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
    boots_file = out / BOOTS_FILE
    collected = json.loads(boots_file.read_text()) if boots_file.exists() else []
    meter = progress.Steps(args.boots, f"icount spread {args.kernel}")
    for n in range(args.boots):
        name = f"{time.strftime('%Y%m%d-%H%M%S')}-{args.kernel}-icount"
        folder = out / name
        folder.mkdir()
        guest = files
        if args.fresh_disk:
            disk = folder / "fresh-ext4.img"
            initramfs.make_disk(disk, "ext4")
            guest = replace(files, disks={**files.disks, "ext4": disk})
        meter.start(name + (" (fresh ext4 image)" if args.fresh_disk else ""))
        load_before = os.getloadavg()
        record = runner.run_boot(image, guest, qemu.Machine("tcg", 1, icount=True), steps,
                                 folder, "icount spread", order)
        if args.fresh_disk:
            disk.unlink()
        collected.append({"boot": name, "kernel": args.kernel, "image": image.key,
                          "initramfs": files.initramfs.name,
                          "disk": "fresh" if args.fresh_disk else files.disks["ext4"].name,
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
