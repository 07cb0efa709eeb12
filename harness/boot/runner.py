"""Run one boot: a kernel image, a machine, a list of steps; classify what happened.

Everything the boot produced is kept in its folder: plan.sh, console.log,
results.raw, the decoded records under files/, host.json (what the host saw:
exit code, timeout, wall time, CPU used by others, each step's window) and
boot.json with the classification of the boot and of each step. A finished
boot folder can be read again with read_boot: the numbers and statuses are
always derived from the raw console and records by the current parsers.

Boot classes (first that applies): panic, timeout, hang, lockdep, warning,
workload-error, unchecked, ok. A step gets the class of what happened while
it ran: a step that began and never ended in a boot that panicked is
'panic'; steps after it are 'not-run'. 'hang' is an RCU stall, a soft or
hard lockup, a hung task or a workqueue lockup (a trylock loop that
livelocked shows up here). A debug step during which lockdep was switched
off (by an earlier report, its tables full, a taint) without a locking
report of its own is 'unchecked', never 'ok': lockdep was not looking.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness import progress
from harness.boot import channel, corun, measure, qemu, tcg_cs
from harness.guest import faults, initramfs, plan, protocol
from harness.kernels.kbuild import KernelImage
from harness.lockorder import LockOrder
from harness.parsers import kernel_reports

LOCKDEP_KINDS = kernel_reports.LOCKING_KINDS | {"rcu", "sleep-in-atomic"}
WARNING_KINDS = {"warn", "bug", "bad-page"}
BOOT_SLACK_S = 120  # boot, setup and dumps on top of the steps' own limits
HOST_VIEW = "host.json"


@dataclass(frozen=True)
class StepWindow:
    """One plan step as seen from the host: wall time and CPU others used."""
    step: str
    wall_s: float
    others_cpu_s: float


@dataclass
class StepClock:
    """Times the guest's steps from its console markers (a qemu.Watcher)."""
    started_at: float = 0.0
    to_init_s: float | None = None
    windows: list[StepWindow] = field(default_factory=list)
    meter: qemu.CpuMeter | None = None
    _open: dict[str, tuple[float, float]] = field(default_factory=dict)

    def started(self, meter: qemu.CpuMeter) -> None:
        self.meter = meter
        self.started_at = time.monotonic()

    def line(self, text: str) -> None:
        now = time.monotonic()
        if self.to_init_s is None and protocol.INIT_STARTED in text:
            self.to_init_s = now - self.started_at
        mark = protocol.step_mark(text)
        if mark and mark[1] == "begin":
            self._open[mark[0]] = (now, self.meter())
        elif mark and mark[0] in self._open:
            t0, c0 = self._open.pop(mark[0])
            self.windows.append(StepWindow(mark[0], now - t0, max(0.0, self.meter() - c0)))


@dataclass(frozen=True)
class HostView:
    """What the host saw of a boot; saved as host.json in its folder."""
    exit_code: int | None
    timed_out: bool
    wall_s: float
    others_cpu_s: float
    to_init_s: float | None
    windows: tuple[StepWindow, ...]
    # step -> (lower, upper) bound of the share of it both vCPUs ran at once
    # (boot/corun.py); sampled in the debug boots with two vCPUs or more.
    together: dict[str, tuple[float, float]] = field(default_factory=dict)

    def save(self, directory: Path) -> None:
        (directory / HOST_VIEW).write_text(json.dumps(asdict(self), indent=1) + "\n")

    @classmethod
    def load(cls, directory: Path) -> HostView:
        data = json.loads((directory / HOST_VIEW).read_text())
        data["windows"] = tuple(StepWindow(**w) for w in data["windows"])
        data["together"] = {k: tuple(v) for k, v in data.get("together", {}).items()}
        return cls(**data)


@dataclass(frozen=True)
class StepOutcome:
    step: str
    label: str
    status: str  # ok, unchecked, lockdep, warning, workload-error, panic, timeout, not-run, lost
    numbers: measure.StepNumbers | None
    reports: tuple[dict, ...]
    wall_s: float | None
    others_cpu_s: float | None
    together: tuple[float, float] | None = None  # HostView.together of the step


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
    spinlock: str | None = None  # as the guest's init saw it (protocol.guest_spinlock)
    crng: str | None = None  # ready or unseeded when the init started (protocol.guest_crng)

    def step(self, step_id: str) -> StepOutcome | None:
        return next((s for s in self.steps if s.step == step_id), None)


def step_lines(console_text: str) -> dict[str, tuple[int, int | None]]:
    """Console line span (begin, end) of each step, from the guest's markers."""
    spans: dict[str, tuple[int, int | None]] = {}
    for lineno, line in enumerate(console_text.splitlines(), 1):
        mark = protocol.step_mark(line)
        if not mark:
            continue
        if mark[1] == "begin":
            spans[mark[0]] = (lineno, None)
        elif mark[0] in spans:
            spans[mark[0]] = (spans[mark[0]][0], lineno)
    return spans


def classify_boot(host: HostView, found: tuple[kernel_reports.Report, ...],
                  received: channel.Received, steps: list[StepOutcome]) -> str:
    kinds = {r.kind for r in found}
    finished = received.get("done") is not None
    if "panic" in kinds or (not finished and not host.timed_out):
        return "panic"
    if host.timed_out:
        return "timeout"
    if kinds & kernel_reports.HANG_KINDS:
        return "hang"
    if kinds & LOCKDEP_KINDS:
        return "lockdep"
    if kinds & WARNING_KINDS:
        return "warning"
    if any(s.status == "workload-error" for s in steps):
        return "workload-error"
    if any(s.status == "unchecked" for s in steps):
        return "unchecked"
    return "ok"


def _step_status(numbers: measure.StepNumbers, step_reports: list[kernel_reports.Report],
                 ended: bool, boot_timed_out: bool, lockdep_went_off: bool) -> str:
    kinds = {r.kind for r in step_reports}
    if not ended:
        return "timeout" if boot_timed_out else "panic"
    if kinds & kernel_reports.HANG_KINDS:
        return "hang"
    if kinds & LOCKDEP_KINDS:
        return "lockdep"
    if "panic" in kinds:
        return "panic"
    if numbers.exit_code is None:
        return "lost"
    if numbers.exit_code != 0 or numbers.error:
        return "workload-error"
    if kinds & WARNING_KINDS:
        return "warning"
    if numbers.lockdep_on is False or lockdep_went_off:
        return "unchecked"
    return "ok"


# A KASAN guest under TCG runs tens of times slower than on hardware while
# its clock follows the host's, so ordinary kernel work outlasts the default
# 21 s RCU stall timeout: on 2026-12-04 mainline's sanitize kernel reported
# a stall while unpacking its initramfs at boot, the host busy with builds.
# Its detectors are stretched to their maxima; a livelock outlasts them all.
SLOW_GUEST_DETECTORS = ("rcupdate.rcu_cpu_stall_timeout=300", "watchdog_thresh=60",
                        "workqueue.watchdog_thresh=300",
                        "sysctl.kernel.hung_task_timeout_secs=600")


SLOW_FLAVOURS = ("sanitize", "faults", "kcsan")  # KASAN and KCSAN kernels
SAMPLED_FLAVOURS = ("debug",)  # untimed boots whose vCPUs' co-running is sampled


def detector_cmdline(flavour: str, accel: str) -> str:
    """Kernel command line words that set the hang detectors for this boot."""
    return " ".join(SLOW_GUEST_DETECTORS) if flavour in SLOW_FLAVOURS and accel == "tcg" else ""


# Seed the guest's CRNG from the CPU's RDRAND at boot (QEMU's max and host CPUs have
# it). Unready, as the images' configuration leaves it (RANDOM_TRUST_CPU off), 6.1
# takes the global base_crng.lock on every get_random_u32(), and input_pool.lock too
# while the CRNG is empty (random.c, crng_make_state): every inode create on tmpfs,
# ext4 and xfs (i_generation) took global locks no seeded machine takes (one of
# each per create in the reference's debug boots); the init says whether the CRNG was
# ready (protocol.guest_crng).
SEED_CRNG = "random.trust_cpu=on"


def boot_cmdline(flavour: str, accel: str) -> str:
    """Kernel command line words a flavour's boots add: the CRNG seeded, the hang
    detectors, and for faults the slab caches failslab may fail (guest/faults.py)."""
    words = [SEED_CRNG, detector_cmdline(flavour, accel)]
    if flavour == "faults":
        words.append(faults.KERNEL_CMDLINE)
    return " ".join(w for w in words if w)


def boot_timeout(steps: list[plan.Step], machine: qemu.Machine) -> float:
    """Sum of the steps' own limits plus slack; -icount runs slower than wall time."""
    total = BOOT_SLACK_S + sum(s.workload.timeout_s for s in steps)
    return total * (4 if machine.plugin else 2 if machine.icount else 1)


class _LinePrinter:
    def __init__(self, on_line) -> None:
        self.on_line = on_line

    def started(self, meter: qemu.CpuMeter) -> None:
        pass

    def line(self, text: str) -> None:
        self.on_line(text)


def step_progress(total: int):
    """A run_boot on_line that says "step i/total done" as the guest ends each step."""
    done = [0]

    def on_line(text: str) -> None:
        mark = protocol.step_mark(text)
        if mark and mark[1] != "begin":
            done[0] += 1
            progress.say(f"  step {done[0]}/{total} done")
    return on_line


def run_boot(image: KernelImage, files: initramfs.GuestFiles, machine: qemu.Machine,
             steps: list[plan.Step], directory: Path, header: str, order: LockOrder,
             timeout_s: float | None = None, on_line=None,
             watchers: tuple[qemu.Watcher, ...] = ()) -> BootRecord:
    """Boot, keep everything in directory, and return the boot's record; `watchers`
    see the console too (the padlock sweep samples the host's scheduler with one)."""
    # Mixed kernel parameters are refused before anything is written.
    cmdline = " ".join(filter(None, [boot_cmdline(image.flavour, machine.accel),
                                     plan.kernel_cmdline(steps)]))
    directory.mkdir(parents=True, exist_ok=True)
    plan_path = directory / "plan.sh"
    plan_path.write_text(plan.render(steps, machine.cpus, header))
    disks = initramfs.scratch_disks(files, {s.fs for s in steps}, directory)
    spec = qemu.BootSpec(image.bzimage, files.initramfs, plan_path, machine,
                         timeout_s or boot_timeout(steps, machine), disks=tuple(disks),
                         cmdline=cmdline)
    clock = StepClock()
    seen = (clock, _LinePrinter(on_line)) if on_line else (clock,)
    # Untimed boots with vCPUs to share: whether they ran at once, per step (the model's
    # 2-vCPU validation reads it beside each contention figure).
    sampler = corun.CoRunSampler() if machine.cpus >= 2 and image.flavour in \
        SAMPLED_FLAVOURS and not any(isinstance(w, corun.CoRunSampler) for w in watchers) \
        else None
    try:
        outcome = qemu.boot(spec, directory, seen + watchers + ((sampler,) if sampler else ()))
    finally:
        for disk in disks:
            disk.unlink(missing_ok=True)
    together = {step: run.together for step, run in sampler.steps.items()} if sampler else {}
    HostView(outcome.exit_code, outcome.timed_out, outcome.wall_s, outcome.others_cpu_s,
             clock.to_init_s, tuple(clock.windows), together).save(directory)
    received = channel.parse(_read_results(directory))
    files_dir = directory / "files"
    files_dir.mkdir(exist_ok=True)
    for record in received.records:
        (files_dir / record.name.replace("/", "_")).write_bytes(record.data)
    record = record_boot(HostView.load(directory), steps, directory, order)
    summary = asdict(record)
    summary["directory"] = str(directory)
    (directory / "boot.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    return record


def read_boot(directory: Path, steps: list[plan.Step], order: LockOrder) -> BootRecord:
    """The record of a boot folder made earlier, derived again by today's parsers."""
    return record_boot(HostView.load(directory), steps, directory, order)


def _read_results(directory: Path) -> bytes:
    path = directory / "results.raw"
    return path.read_bytes() if path.exists() else b""


def record_boot(host: HostView, steps: list[plan.Step], directory: Path,
                order: LockOrder) -> BootRecord:
    """Parse and classify a finished boot from its console and records."""
    console_text = (directory / "console.log").read_text(errors="replace")
    found = kernel_reports.parse(console_text)
    received = channel.parse(_read_results(directory))
    spans = step_lines(console_text)
    off_line = kernel_reports.lockdep_off_line(found)
    windows = {w.step: w for w in host.windows}
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
        numbers = measure.step_numbers(step, received, order)
        if cs_output is not None:
            numbers = tcg_cs.with_figures(numbers, step, cs_output, order)
        # Lockdep went off before this step ended (only meaningful where it was on).
        went_off = (numbers.lockdep_on is not None and off_line is not None
                    and off_line <= last)
        status = _step_status(numbers, step_reports, end is not None, host.timed_out, went_off)
        window = windows.get(step.id)
        outcomes.append(StepOutcome(
            step.id, step.label, status, numbers, tuple(r.as_json() for r in step_reports),
            window.wall_s if window else None, window.others_cpu_s if window else None,
            host.together.get(step.id)))
    status = classify_boot(host, found, received, outcomes)
    return BootRecord(directory, status, host.wall_s, host.to_init_s, host.others_cpu_s,
                      tuple(r.as_json() for r in found),
                      tuple(f"{d.name}: {d.reason}" for d in received.damaged),
                      tuple(outcomes), protocol.guest_spinlock(console_text),
                      protocol.guest_crng(console_text))
