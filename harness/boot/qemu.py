"""Boot one kernel in QEMU with a plan, under a hard timeout, keeping everything.

The console (ttyS0) is read line by line into console.log; results arrive on
ttyS1 into results.raw (see channel.py). A guest that hangs is killed at its
timeout; a panic ends QEMU at once (panic=-1 with -no-reboot). While the guest
runs, the CPU time used by other host processes is sampled at each step
marker: under TCG a busy host ruins timings, so disturbed steps can be rerun.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness import procgroup, progress

QEMU = "qemu-system-x86_64"
ICOUNT = "shift=2,sleep=off,align=off"
STEP_MARK = re.compile(r"inode-duel: step (\S+) (begin|end)")


class QemuError(Exception):
    pass


@dataclass(frozen=True)
class Machine:
    accel: str  # "kvm" or "tcg"
    cpus: int
    memory_mb: int = 2048
    icount: bool = False
    plugin: str = ""  # -plugin argument (TCG plugin and its options), see boot/tcg_cs.py
    cmdline: str = ""  # kernel command line words this kind of machine adds

    def __post_init__(self) -> None:
        if self.plugin and self.accel != "tcg":
            raise QemuError("-plugin needs TCG")
        if self.icount and self.cpus != 1:
            raise QemuError("-icount runs are 1 vCPU only (with 2 vCPUs the guest hung "
                            "before /init on this machine)")
        if self.icount and self.accel != "tcg":
            raise QemuError("-icount needs TCG")


@dataclass(frozen=True)
class BootSpec:
    bzimage: Path
    initramfs: Path
    plan: Path
    machine: Machine
    timeout_s: float
    disk: Path | None = None
    cmdline: str = ""


@dataclass(frozen=True)
class StepWindow:
    """One plan step as seen from the host: wall time and CPU others used."""
    step: str
    wall_s: float
    others_cpu_s: float


@dataclass
class BootOutcome:
    exit_code: int | None
    timed_out: bool
    wall_s: float
    console: Path
    results: Path
    others_cpu_s: float  # over the whole boot
    steps: list[StepWindow] = field(default_factory=list)
    to_init_s: float | None = None  # QEMU start to "init started"


def host_busy_seconds() -> float:
    """CPU seconds the whole host has spent not idle since it booted."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def process_seconds(pid: int) -> float:
    """CPU seconds used by a process (all its threads)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """CPU time the host spent on anything but this QEMU and this harness."""

    def __init__(self, qemu_pid: int) -> None:
        self.pid = qemu_pid
        self.start = self._others()

    def _others(self) -> float:
        own = sum(os.times()[:2])
        return host_busy_seconds() - process_seconds(self.pid) - own

    def __call__(self) -> float:
        return max(0.0, self._others() - self.start)


def command(spec: BootSpec, results: Path) -> list[str]:
    m = spec.machine
    cmdline = " ".join(filter(None, [
        "console=ttyS0", "panic=-1", "rdinit=/init", "nokaslr", m.cmdline, spec.cmdline]))
    cmd = [QEMU, "-nodefaults", "-no-reboot", "-display", "none", "-nic", "none",
           "-machine", "pc", "-m", str(m.memory_mb), "-smp", str(m.cpus),
           "-kernel", str(spec.bzimage), "-initrd", str(spec.initramfs),
           "-append", cmdline,
           "-fw_cfg", f"name=opt/inode-duel/plan,file={spec.plan}",
           "-serial", "stdio", "-serial", f"file:{results}", "-monitor", "none"]
    qboot = Path("/usr/share/qemu/qboot.rom")
    if qboot.exists():
        cmd += ["-bios", str(qboot)]
    if m.accel == "kvm":
        cmd += ["-accel", "kvm", "-cpu", "host"]
    else:
        cmd += ["-accel", "tcg", "-cpu", "max"]
        if m.icount:
            cmd += ["-icount", ICOUNT]
        if m.plugin:
            cmd += ["-plugin", m.plugin]
    if spec.disk:
        # cache=unsafe: guest flushes do not reach the host disk, whose latency
        # would otherwise be measured instead of the kernel's locking.
        cmd += ["-drive", f"file={spec.disk},format=raw,if=virtio,cache=unsafe"]
    return cmd


def boot(spec: BootSpec, out_dir: Path, on_line=None) -> BootOutcome:
    """Run one boot to its end or its timeout; console.log and results.raw stay in out_dir."""
    if not shutil.which(QEMU):
        raise QemuError(f"{QEMU} not found: apt-get install qemu-system-x86")
    out_dir.mkdir(parents=True, exist_ok=True)
    console = out_dir / "console.log"
    results = out_dir / "results.raw"
    cmd = command(spec, results)
    (out_dir / "qemu.json").write_text(json.dumps({"command": cmd,
                                                   "timeout_s": spec.timeout_s}, indent=1))
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    meter = CpuMeter(proc.pid)
    deadline = started + spec.timeout_s
    timed_out = False
    to_init = None
    open_steps: dict[str, tuple[float, float]] = {}
    steps: list[StepWindow] = []
    pending = b""
    try:
        with open(console, "wb") as log:
            fd = proc.stdout.fileno()
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                ready, _, _ = select.select([fd], [], [], min(left, 1.0))
                if not ready:
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                log.write(chunk)
                log.flush()
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for raw in lines:
                    line = raw.decode(errors="replace").rstrip("\r")
                    now = time.monotonic()
                    if to_init is None and "inode-duel: init started" in line:
                        to_init = now - started
                    mark = STEP_MARK.search(line)
                    if mark and mark.group(2) == "begin":
                        open_steps[mark.group(1)] = (now, meter())
                    elif mark and mark.group(1) in open_steps:
                        t0, c0 = open_steps.pop(mark.group(1))
                        steps.append(StepWindow(mark.group(1), now - t0, max(0.0, meter() - c0)))
                    if on_line:
                        on_line(line)
            others = meter()
            if timed_out:
                log.write(f"\n[inode-duel: killed at the {spec.timeout_s:.0f}s timeout]\n".encode())
                procgroup.stop(proc)
            exit_code = proc.wait()
    except BaseException:
        # Interrupted: the guest must not outlive us (start_new_session keeps
        # a terminal's Ctrl-C from reaching it).
        procgroup.stop(proc)
        raise
    return BootOutcome(exit_code=None if timed_out else exit_code, timed_out=timed_out,
                       wall_s=time.monotonic() - started, console=console, results=results,
                       others_cpu_s=others, steps=steps, to_init_s=to_init)


def probe_accel(layout_guest: Path, spec_for: callable) -> str:
    """kvm if a real short boot under KVM reaches the end of its plan, else tcg.

    /dev/kvm exists on these machines but QEMU hangs with it, so only a boot
    tells. The answer is kept per host boot (boot_id).
    """
    boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    cache = layout_guest / "accel.json"
    if cache.exists():
        known = json.loads(cache.read_text())
        if known.get("boot_id") == boot_id:
            return known["accel"]
    accel = "tcg"
    reason = "/dev/kvm is not usable"
    if os.access("/dev/kvm", os.R_OK | os.W_OK):
        probe_dir = layout_guest / "kvm-probe"
        shutil.rmtree(probe_dir, ignore_errors=True)
        progress.say("probing KVM with a short boot (falls back to TCG)")
        outcome = boot(spec_for(Machine("kvm", 1)), probe_dir)
        text = outcome.console.read_text(errors="replace")
        if not outcome.timed_out and "inode-duel: plan finished" in text:
            accel, reason = "kvm", f"probe boot finished in {outcome.wall_s:.1f}s"
        else:
            reason = ("probe boot timed out" if outcome.timed_out
                      else f"probe boot ended without finishing (exit {outcome.exit_code})")
    progress.say(f"accelerator: {accel} ({reason})")
    cache.write_text(json.dumps({"boot_id": boot_id, "accel": accel, "reason": reason}))
    return accel
