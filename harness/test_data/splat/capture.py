"""Capture real kernel reports for the parser tests (see README.md here).

Builds mainline debug plus the splat generator patch, boots it once per
kind, and saves each console as harness/test_data/console/captured-splat-KIND.log.

    /usr/bin/python3 harness/test_data/splat/capture.py [KIND...]

A stall or lockup kind hogs a CPU for as long as its detector needs at
the timeouts its boot sets on the kernel command line; the boot of every
kind is otherwise the same.
"""

import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from harness import progress  # noqa: E402
from harness.boot import qemu  # noqa: E402
from harness.guest import initramfs  # noqa: E402
from harness.kernels import kbuild, series  # noqa: E402
from harness.layout import default_layout  # noqa: E402
from harness.parsers import kernel_reports  # noqa: E402

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Capture:
    kind: str
    seconds: int | None = None  # how long the kind hogs a CPU ("KIND SECONDS")
    cmdline: str = ""  # detector timeouts that the hog outlasts
    timeout_s: float = 180


# Detectors fire well inside the hog, and no other detector does:
# - RCU stalls: 3 s timeout (the minimum) plus the 5 s PROVE_RCU adds; the
#   soft lockup detector needs 2 * watchdog_thresh = 20 s.
# - expedited: 500 ms plus 25 %, reported again only after 3 * that + 3 jiffies.
# - soft lockup: 2 * watchdog_thresh = 4 s; reported again after 4 s more.
# - hung task: reported 3 to 6 s after the task blocked, once (warnings=1).
# - workqueue: the watchdog looks every 2 s and reports a pool stuck for 2 s.
CAPTURES = tuple(Capture(kind) for kind in (
    "circular", "recursive", "inconsistent", "irq-inversion", "irq-order", "bad-unlock",
    "held-lock-freed", "rcu", "sleep-in-atomic", "warn", "bug", "panic",
    "lockdep-keys", "lockdep-entries", "lockdep-chains", "lockdep-chain-hlocks",
    "lockdep-stack-trace", "lockdep-depth", "bad-page", "non-static-key", "bad-subclass",
    "unregistered-key", "wait-context", "nested-lock", "bad-contention", "lock-held-to-user",
    "locks-held-at-exit", "spinlock-bad-magic",
)) + (
    Capture("rcu-stall", 12, "rcupdate.rcu_cpu_stall_timeout=3"),
    Capture("rcu-stall-irqsoff", 12, "rcupdate.rcu_cpu_stall_timeout=3"),
    Capture("rcu-stall-expedited", 1, "rcupdate.rcu_exp_cpu_stall_timeout=500"),
    Capture("soft-lockup", 6, "watchdog_thresh=2"),
    Capture("hung-task", 8, "sysctl.kernel.hung_task_timeout_secs=3 "
                            "sysctl.kernel.hung_task_warnings=1"),
    Capture("wq-lockup", 5, "workqueue.watchdog_thresh=2"),
)
BY_KIND = {c.kind: c for c in CAPTURES}


def plan_text(capture: Capture) -> str:
    word = capture.kind if capture.seconds is None else f"{capture.kind} {capture.seconds}"
    # From a child shell: 'bug' kills the writer, which must not be init.
    # The sleep lets reports printed after the write returns (a kthread's
    # exit) reach the console.
    return f"sh -c 'echo \"{word}\" > /proc/inode_duel_splat'\nsleep 2\n"


def main(kinds: list[str]) -> None:
    unknown = [k for k in kinds if k not in BY_KIND]
    if unknown:
        sys.exit(f"capture.py: unknown kind {', '.join(unknown)}; known: {', '.join(BY_KIND)}")
    layout = default_layout()
    patch = series.Patch("splat", 1, HERE / "0001-inode-duel-splat-generator.patch")
    image = kbuild.build_kernel(layout, series.Kernel("splat", (patch,)), "debug",
                                extra_fragments=(HERE / "splat.config",))
    files = initramfs.prepare(layout)
    out = layout.build / "splat"
    for kind in kinds:
        capture = BY_KIND[kind]
        plan = out / f"{kind}.sh"
        plan.parent.mkdir(parents=True, exist_ok=True)
        plan.write_text(plan_text(capture))
        spec = qemu.BootSpec(image.bzimage, files.initramfs, plan, qemu.Machine("tcg", 2),
                             capture.timeout_s, cmdline=capture.cmdline)
        outcome = qemu.boot(spec, out / kind)
        target = layout.repo / "harness" / "test_data" / "console" / f"captured-splat-{kind}.log"
        target.write_bytes(outcome.console.read_bytes())
        found = kernel_reports.parse(target.read_text(errors="replace"))
        progress.say(f"{kind}: exit {outcome.exit_code}, {outcome.wall_s:.0f}s, {target.name}: "
                     + ("; ".join(f"{r.kind} '{r.title}'" for r in found) or "no report"))


if __name__ == "__main__":
    main(sys.argv[1:] or list(BY_KIND))
