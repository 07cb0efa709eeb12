"""Run one boot: a kernel image, a machine, a list of steps; classify what happened.

Everything the boot produced is kept in its folder: plan.sh, console.log,
results.raw, the decoded records under files/, and boot.json with the
classification of the boot and of each step.

Boot classes (first that applies): panic, timeout, lockdep, warning,
workload-error, ok. A step gets the class of what happened while it ran:
a step that began and never ended in a boot that panicked is 'panic'; steps
after it are 'not-run'.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from harness import icache
from harness.boot import channel, measure, qemu, tcg_cs
from harness.guest import initramfs, plan
from harness.parsers import kernel_reports
from harness.kernels.kbuild import KernelImage

LOCKDEP_KINDS = {"circular", "recursive", "inconsistent", "irq-inversion", "bad-unlock",
                 "held-lock-freed", "rcu", "sleep-in-atomic"}
MARK = re.compile(r"inode-duel: step (\S+) (begin|end)")
BOOT_SLACK_S = 120  # boot, setup and dumps on top of the steps' own limits


@dataclass(frozen=True)
class StepOutcome:
    step: str
    label: str
    status: str  # ok, lockdep, warning, workload-error, panic, timeout, not-run, lost
    numbers: measure.StepNumbers | None
    reports: tuple[dict, ...]
    wall_s: float | None
    others_cpu_s: float | None


@dataclass(frozen=True)
class BootRecord:
    directory: Path
    status: str
    wall_s: float
    to_init_s: float | None
    others_cpu_s: float
    reports: tuple[dict, ...]
    damaged: tuple[str, ...]
    steps: tuple[StepOutcome, ...]


def step_lines(console_text: str) -> dict[str, tuple[int, int | None]]:
    """Console line span (begin, end) of each step, from the guest's markers."""
    spans: dict[str, tuple[int, int | None]] = {}
    for lineno, line in enumerate(console_text.splitlines(), 1):
        mark = MARK.search(line)
        if not mark:
            continue
        if mark.group(2) == "begin":
            spans[mark.group(1)] = (lineno, None)
        elif mark.group(1) in spans:
            spans[mark.group(1)] = (spans[mark.group(1)][0], lineno)
    return spans


def classify_boot(outcome: qemu.BootOutcome, found: tuple[kernel_reports.Report, ...],
                  received: channel.Received, steps: list[StepOutcome]) -> str:
    kinds = {r.kind for r in found}
    finished = received.get("done") is not None
    if "panic" in kinds or (not finished and not outcome.timed_out):
        return "panic"
    if outcome.timed_out:
        return "timeout"
    if kinds & LOCKDEP_KINDS:
        return "lockdep"
    if kinds & {"warn", "bug"}:
        return "warning"
    if any(s.status == "workload-error" for s in steps):
        return "workload-error"
    return "ok"


def _step_status(numbers: measure.StepNumbers, step_reports: list[kernel_reports.Report],
                 ended: bool, boot_timed_out: bool) -> str:
    kinds = {r.kind for r in step_reports}
    if not ended:
        return "timeout" if boot_timed_out else "panic"
    if kinds & LOCKDEP_KINDS:
        return "lockdep"
    if "panic" in kinds:
        return "panic"
    if numbers.exit_code is None:
        return "lost"
    if numbers.exit_code != 0 or numbers.error:
        return "workload-error"
    if kinds & {"warn", "bug"}:
        return "warning"
    return "ok"


def boot_timeout(steps: list[plan.Step], machine: qemu.Machine) -> float:
    """Sum of the steps' own limits plus slack; -icount runs slower than wall time."""
    total = BOOT_SLACK_S + sum(s.workload.timeout_s for s in steps)
    return total * (4 if machine.plugin else 2 if machine.icount else 1)


def run_boot(image: KernelImage, files: initramfs.GuestFiles, machine: qemu.Machine,
             steps: list[plan.Step], directory: Path, header: str,
             patterns: dict[str, tuple[str, ...]] = icache.DEFAULT_PATTERNS,
             timeout_s: float | None = None, on_line=None) -> BootRecord:
    directory.mkdir(parents=True, exist_ok=True)
    plan_path = directory / "plan.sh"
    plan_path.write_text(plan.render(steps, machine.cpus, header))
    needs_disk = any(s.fs == "ext4" for s in steps)
    disk = initramfs.scratch_disk(files, directory) if needs_disk else None
    spec = qemu.BootSpec(image.bzimage, files.initramfs, plan_path, machine,
                         timeout_s or boot_timeout(steps, machine), disk=disk)
    try:
        outcome = qemu.boot(spec, directory, on_line=on_line)
    finally:
        if disk:
            initramfs.remove_scratch(disk)
    return record_boot(outcome, steps, directory, patterns)


def record_boot(outcome: qemu.BootOutcome, steps: list[plan.Step], directory: Path,
                patterns: dict[str, tuple[str, ...]] = icache.DEFAULT_PATTERNS) -> BootRecord:
    """Parse and classify a finished boot, and save its decoded records."""
    console_text = outcome.console.read_text(errors="replace")
    found = kernel_reports.parse(console_text)
    received = channel.parse(outcome.results.read_bytes() if outcome.results.exists() else b"")
    files_dir = directory / "files"
    files_dir.mkdir(exist_ok=True)
    for record in received.records:
        (files_dir / record.name.replace("/", "_")).write_bytes(record.data)
    spans = step_lines(console_text)
    windows = {w.step: w for w in outcome.steps}
    cs_output = tcg_cs.read_output(directory)
    outcomes: list[StepOutcome] = []
    for step in steps:
        span = spans.get(step.id)
        if span is None:
            outcomes.append(StepOutcome(step.id, step.label, "not-run", None, (), None, None))
            continue
        begin, end = span
        last = end if end is not None else float("inf")
        step_reports = [r for r in found if begin <= r.line <= last]
        numbers = measure.step_numbers(step, received, patterns)
        if cs_output is not None:
            numbers = tcg_cs.with_figures(numbers, step, cs_output, patterns)
        status = _step_status(numbers, step_reports, end is not None, outcome.timed_out)
        window = windows.get(step.id)
        outcomes.append(StepOutcome(
            step.id, step.label, status, numbers, tuple(r.as_json() for r in step_reports),
            window.wall_s if window else None, window.others_cpu_s if window else None))
    status = classify_boot(outcome, found, received, outcomes)
    record = BootRecord(directory, status, outcome.wall_s, outcome.to_init_s,
                        outcome.others_cpu_s, tuple(r.as_json() for r in found),
                        tuple(f"{d.name}: {d.reason}" for d in received.damaged),
                        tuple(outcomes))
    summary = asdict(record)
    summary["directory"] = str(directory)
    (directory / "boot.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    return record
