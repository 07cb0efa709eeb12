"""Capture real kernel reports for the parser tests (see README.md here).

Builds mainline debug plus the splat generator patch, boots it once per
capture, and saves each console as
harness/test_data/console/captured-splat-NAME.log. A boot that did not
get as far as its writes (TCG boots under load have panicked early) keeps
the previous file and fails the run.

    /usr/bin/python3 harness/test_data/splat/capture.py [NAME...]

A stall or lockup kind hogs a CPU for as long as its detector needs at
the timeouts its boot sets on the kernel command line; the boot of every
kind is otherwise the same. A few boots write several kinds, one step
each, to capture how reports follow one another.
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
    name: str  # the kind, or kinds joined by "+" for a boot that writes several
    writes: tuple[str, ...]  # "KIND" or "KIND SECONDS" (how long it hogs a CPU)
    cmdline: str = ""  # detector timeouts that the hogs outlast
    timeout_s: float = 180


def single(kind: str, seconds: int | None = None, cmdline: str = "") -> Capture:
    return Capture(kind, (kind if seconds is None else f"{kind} {seconds}",), cmdline)


# Detectors fire well inside the hog, and no other detector does:
# - RCU stalls: 3 s timeout (the minimum) plus the 5 s PROVE_RCU adds; the
#   soft lockup detector needs 2 * watchdog_thresh = 20 s.
# - expedited: 500 ms plus 25 %, reported again only after 3 * that + 3 jiffies.
# - soft lockup: more than 2 * watchdog_thresh = 4 units of 2^30 ns since
#   the watchdog last ran, seen by a check every 0.8 s: 5.4 to 7.2 s; then
#   again 5.4 s later.
# - hung task: reported 3 to 6 s after the task blocked, once (warnings=1).
# - workqueue: the watchdog looks every 2 s and reports a pool stuck for 2 s.
RCU_STALL = "rcupdate.rcu_cpu_stall_timeout=3"
HUNG_TASK = "sysctl.kernel.hung_task_timeout_secs=3 sysctl.kernel.hung_task_warnings=1"
CAPTURES = tuple(single(kind) for kind in (
    "circular", "recursive", "inconsistent", "irq-inversion", "irq-order", "bad-unlock",
    "held-lock-freed", "rcu", "sleep-in-atomic", "warn", "bug", "panic",
    "lockdep-keys", "lockdep-entries", "lockdep-chains", "lockdep-chain-hlocks",
    "lockdep-stack-trace", "lockdep-depth", "bad-page", "non-static-key", "bad-subclass",
    "unregistered-key", "wait-context", "nested-lock", "bad-contention", "lock-held-to-user",
    "locks-held-at-exit", "spinlock-bad-magic",
)) + (
    single("rcu-stall", 12, RCU_STALL),
    single("rcu-stall-irqsoff", 12, RCU_STALL),
    single("rcu-stall-expedited", 1, "rcupdate.rcu_exp_cpu_stall_timeout=500"),
    single("soft-lockup", 9, "watchdog_thresh=2"),
    single("hung-task", 8, HUNG_TASK),
    single("wq-lockup", 5, "workqueue.watchdog_thresh=2"),
    # A stall, then a lockdep report: two reports, one after the other.
    Capture("rcu-stall+circular", ("rcu-stall 12", "circular"), RCU_STALL),
    # Lockdep off after the bad page: the circular dependency written next
    # is not reported, and the hung task's lock dump says lockdep is off.
    Capture("bad-page+circular+hung-task", ("bad-page", "circular", "hung-task 8"), HUNG_TASK),
)
BY_NAME = {c.name: c for c in CAPTURES}


def plan_text(capture: Capture) -> str:
    """One step per write, marked as the harness marks a plan's steps."""
    lines = []
    for number, word in enumerate(capture.writes, 1):
        step = f"s{number:02d}"
        # From a child shell: 'bug' kills the writer, which must not be init.
        # The sleep lets reports printed after the write returns (a
        # kthread's exit) reach the console within the step.
        lines += [f"echo 'inode-duel: step {step} begin'",
                  f"sh -c 'echo \"{word}\" > /proc/inode_duel_splat'",
                  "sleep 2",
                  f"echo 'inode-duel: step {step} end'"]
    return "\n".join(lines) + "\n"


def main(names: list[str]) -> None:
    unknown = [k for k in names if k not in BY_NAME]
    if unknown:
        sys.exit(f"capture.py: unknown capture {', '.join(unknown)}; known: {', '.join(BY_NAME)}")
    layout = default_layout()
    patch = series.Patch("splat", 1, HERE / "0001-inode-duel-splat-generator.patch")
    image = kbuild.build_kernel(layout, series.Kernel("splat", (patch,)), "debug",
                                extra_fragments=(HERE / "splat.config",))
    files = initramfs.prepare(layout)
    out = layout.splat
    failed = []
    for name in names:
        capture = BY_NAME[name]
        plan = out / f"{name}.sh"
        plan.parent.mkdir(parents=True, exist_ok=True)
        plan.write_text(plan_text(capture))
        spec = qemu.BootSpec(image.bzimage, files.initramfs, plan, qemu.Machine("tcg", 2),
                             capture.timeout_s, cmdline=capture.cmdline)
        outcome = qemu.boot(spec, out / name)
        console_log = out / name / "console.log"
        console = console_log.read_text(errors="replace")
        found = kernel_reports.parse(console)
        summary = "; ".join(f"{r.kind} '{r.title}'" for r in found) or "no report"
        progress.say(f"{name}: exit {outcome.exit_code}, {outcome.wall_s:.0f}s: {summary}")
        triggered = [w.split()[0] for w in capture.writes
                     if f"inode_duel_splat: triggering {w.split()[0]}" in console]
        if len(triggered) < len(capture.writes):
            failed.append(name)
            progress.say(f"{name}: the boot did not reach every write; see {console_log}")
            continue
        target = layout.repo / "harness" / "test_data" / "console" / f"captured-splat-{name}.log"
        target.write_bytes(console_log.read_bytes())
    if failed:
        sys.exit(f"capture.py: not captured: {', '.join(failed)}")


if __name__ == "__main__":
    main(sys.argv[1:] or list(BY_NAME))
