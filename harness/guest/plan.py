"""The plan of one boot: which workload steps the guest runs, as a shell script.

The guest's /init sources it; the functions it calls live in
guest/rootfs/inode-duel.sh. One boot runs several steps to save boot time.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from harness.guest import protocol
from harness.guest.faults import Faults, save_line
from harness.guest.workloads import Workload


@dataclass(frozen=True)
class Step:
    id: str  # s01, s02, ...: names the step's records
    workload: Workload
    fs: str
    procs: int
    faults: Faults | None = None  # fault injection around the step (make faults)

    @property
    def label(self) -> str:
        label = f"{self.workload.name}/{self.fs}/p{self.procs}"
        return f"{label} [{self.faults.label}]" if self.faults else label


def make_steps(items: list[tuple[Workload, str, int]]) -> list[Step]:
    return [Step(f"s{i:02d}", w, fs, procs) for i, (w, fs, procs) in enumerate(items, 1)]


class MixedCmdline(ValueError):
    """Steps whose workloads declare different kernel parameters share a boot."""


def kernel_cmdline(steps: list[Step]) -> str:
    """The kernel parameters a boot of these steps needs: those their workloads
    declare (cmdline), which must be the same for every step of one boot."""
    wanted = {step.workload.cmdline for step in steps}
    if len(wanted) > 1:
        names = "; ".join(f"{cmdline or '(none)'}: "
                          + ", ".join(s.label for s in steps if s.workload.cmdline == cmdline)
                          for cmdline in sorted(wanted))
        raise MixedCmdline(f"one boot cannot give its steps different kernel parameters "
                           f"({names}): boot them apart")
    return wanted.pop() if wanted else ""


def cmdline_slug(cmdline: str) -> str:
    """Kernel parameters as part of a folder name: 'ihash_entries=16' -> 'ihash_entries-16'."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", cmdline)


def by_cmdline(items: list[tuple[Workload, str, int]]
               ) -> dict[str, list[tuple[Workload, str, int]]]:
    """Workload steps grouped by the kernel parameters they declare, in order."""
    groups: dict[str, list[tuple[Workload, str, int]]] = {}
    for item in items:
        groups.setdefault(item[0].cmdline, []).append(item)
    return groups


def render(steps: list[Step], cpus: int, header: str) -> str:
    """The plan: one run_step line per step. The run line travels as one quoted
    argument, so its ';', '|', '>' and '#' act inside the step's own shell."""
    lines = [f"# {line}" for line in header.splitlines()]
    lines.append(f"echo '{protocol.MARK} plan of {len(steps)} steps'")
    devices = protocol.disk_devices({step.fs for step in steps})
    for step in steps:
        dev = devices.get(step.fs, "")
        workload = step.workload
        command = workload.command(procs=step.procs, cpus=cpus, fs=step.fs, dev=dev,
                                   prefix=f"{protocol.HARNESS_DIR}/{step.id}")
        args = ["run_step", step.id, step.fs, dev or "none", str(workload.timeout_s),
                workload.window, str(step.procs), command]
        if workload.window == "lines":
            args += [workload.lock_start, workload.lock_end]
        if step.faults:
            lines.append(" ".join(shlex.quote(a) for a in step.faults.arm_line(dev)))
        lines.append(" ".join(shlex.quote(arg) for arg in args))
        if step.faults:
            lines.append(" ".join(save_line(step.id)))
        lines.append(f"# {shlex.quote(step.label)}")
    lines.append("finish")
    return "\n".join(lines) + "\n"
