"""Lock contention on the perf kernels without lockdep: `perf lock contention`.

Kernel developers measure lock waits today with perf: `perf lock record`
records the lock:contention_begin/end tracepoints (with call chains) while a
command runs, and `perf lock contention` sums them per caller. The
measurement image KERNEL+perflock is the perf kernel plus perf events and
trace events for it (configs/perflock.config, built by --build-only or the
first run; the perf flavour stays without: they move -icount rates);
the guest gets Debian's linux-perf 6.1 (the perf binary and its libraries)
through the workload's `packages`, and tracefs is mounted by the run line.

One boot (2 vCPUs by default) runs create+unlink on tmpfs under
`perf lock record -a` with one worker and then two, and then, to show the
tracepoints fire at all, two shell loops creating and removing files in one
shared directory (its i_rwsem is a contended rwsem). Each step's stdout
keeps perf's report; this module parses the rows (contended, total wait,
max wait, average wait, lock type, caller) and names the icache role of
each caller it knows.

    python3 -m harness.run.perflock [--kernel mainline] [--cpus 2] [--out DIR] [--ops N]

The waits are timed: measure them on a quiet host. What 6.1's tracepoints
can see at 2 vCPUs is in NOTES.md, "Issue 25 (model)".
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
from harness.run import padsweep

TRACEFS = "mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true"
ROW = re.compile(r"^\s*(\d+)\s+([\d.]+ [mun]?s)\s+([\d.]+ [mun]?s)\s+([\d.]+ [mun]?s)\s+"
                 r"(\S+(?::\S+)?)\s+(\S+)")
UNITS = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}
# Callers (function names as perf prints them) of the icache locks in 6.1.
ROLES = {"inode_sb_list_add": "sb_list", "evict": "sb_list", "iget_locked": "hash",
         "insert_inode_locked": "hash", "__remove_inode_hash": "hash",
         "inode_insert5": "hash", "ilookup": "hash", "list_lru_add": "lru",
         "list_lru_del": "lru", "iput": "i_lock", "__iget": "i_lock"}


@dataclass(frozen=True)
class Contention:
    contended: int
    total_wait_ns: float
    max_wait_ns: float
    avg_wait_ns: float
    kind: str  # spinlock, rwsem:W, mutex, ...
    caller: str  # symbol+offset
    role: str  # the icache role of the caller, "" when not an icache lock


def _ns(text: str) -> float:
    value, unit = text.split()
    return float(value) * UNITS[unit]


def parse(text: str) -> list[Contention]:
    """The rows of `perf lock contention` (perf 6.1's table)."""
    out = []
    for line in text.splitlines():
        match = ROW.match(line)
        if not match:
            continue
        caller = match.group(6)
        function = caller.split("+", 1)[0]
        out.append(Contention(int(match.group(1)), _ns(match.group(2)), _ns(match.group(3)),
                              _ns(match.group(4)), match.group(5), caller,
                              ROLES.get(function, "")))
    return out


def workloads_for(ops: int) -> list[workloads.Workload]:
    """create+unlink under perf lock record; the shared-directory loops."""
    record = "perf lock record -a -o /tmp/perf-{procs}.data --"
    report = "perf lock contention -i /tmp/perf-{procs}.data -E 40 -k wait_total 2>&1"
    create = "\n".join([
        "name     = perflock-create-unlink",
        "summary  = create+unlink of one file per worker under perf lock record",
        f"run      = {TRACEFS}; {record} createunlink -p {{procs}} -n {ops} {{dir}}; {report}",
        "output   = result-lines", "fs       = tmpfs", "procs    = 1 2", "timeout  = 900",
        "packages = linux-perf", "unit     = create+unlink", ""])
    loops = " & ".join(f"(i=0; while [ $i -lt {ops // 4} ]; do : > d/{who}$i; rm -f d/{who}$i; "
                       "i=$((i+1)); done)" for who in ("a", "b"))
    shared = "\n".join([
        "name     = perflock-shared-dir",
        "summary  = two shell loops creating and removing files in one directory",
        f"run      = {TRACEFS}; mkdir d; {record} sh -c '{loops} & wait'; {report}",
        "output   = none", f"ops      = {ops // 2}", "fs       = tmpfs", "procs    = 2",
        "timeout  = 900", "packages = linux-perf", "unit     = create+remove", ""])
    return [workloads.parse(REPO_ROOT / "harness" / "run" / f"{w.split()[2]}.wl", w)
            for w in (create, shared)]


FRAGMENT = REPO_ROOT / "configs" / "perflock.config"


def build_image(layout: Layout, kernel: str, build_missing: bool = True) -> kbuild.KernelImage:
    """KERNEL's perf image with perf events and trace events (configs/perflock.config),
    under a name of its own (KERNEL+perflock): the perf flavour itself stays without."""
    own = series.resolve(layout, kernel)
    return kbuild.build_kernel(layout, series.Kernel(f"{own.name}+perflock", own.patches),
                               "perf", extra_fragments=(FRAGMENT,), build_missing=build_missing)


def run(layout: Layout, kernel: str, cpus: int, ops: int, out: Path,
        build_missing: bool, image_dir: Path | None = None) -> int:
    image = padsweep.image_at(image_dir) if image_dir else \
        build_image(layout, kernel, build_missing)
    chosen = workloads_for(ops)
    known = workloads.load_all(layout.workloads)
    files = initramfs.prepare(layout, chosen + [known["create-unlink"]])
    items = [(chosen[0], "tmpfs", p) for p in (1, 2) if p <= cpus] + [(chosen[1], "tmpfs", 2)]
    steps = plan.make_steps(items)
    boot_dir = out / f"{time.strftime('%Y%m%d-%H%M%S')}-{kernel}-c{cpus}"
    progress.say(f"perf lock contention: {kernel}/perf, {cpus} vCPUs, {len(steps)} steps, "
                 f"folder {boot_dir}")
    record = runner.run_boot(image, files, qemu.Machine("tcg", cpus), steps, boot_dir,
                             "perf lock contention", lockorder.for_kernel(layout, kernel))
    found = {}
    for step in steps:
        text = (boot_dir / "files" / f"{step.id}.out").read_text(errors="replace") \
            if (boot_dir / "files" / f"{step.id}.out").exists() else ""
        found[step.label] = [asdict(c) for c in parse(text)]
    (boot_dir / "perflock.json").write_text(json.dumps(
        {"image": str(image.directory), "status": record.status,
         "others_cpu_s": record.others_cpu_s, "steps": found}, indent=1) + "\n")
    for label, rows in found.items():
        print(f"{label}: {len(rows)} rows")
        for row in rows[:12]:
            print(f"  {row['contended']:>6} {row['total_wait_ns'] / 1e3:>10.1f} us  "
                  f"{row['kind']:<10} {row['caller']} {row['role']}")
    return 0 if record.status == "ok" else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.run.perflock",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernel", default="mainline")
    parser.add_argument("--cpus", type=int, default=2)
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--out", default="results/perflock")
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--image", help="a built perf image folder to boot instead")
    parser.add_argument("--build-only", action="store_true", help="build the image and stop")
    args = parser.parse_args(argv)
    if args.build_only:
        print(build_image(default_layout(), args.kernel).directory)
        return 0
    try:
        return run(default_layout(), args.kernel, args.cpus, args.ops, Path(args.out),
                   not args.no_build, Path(args.image) if args.image else None)
    except (padsweep.SweepError, kbuild.BuildError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
