"""Boot one kernel in QEMU under a hard timeout, keeping its console and results.

The console (ttyS0) is written to console.log and handed line by line to
the caller's watchers; results arrive on a virtio-serial port into
results.raw (see channel.py and guest/protocol.py). This module knows how
to start, watch and stop QEMU, nothing of what the lines mean: a guest that
hangs is killed at its timeout; a panic ends QEMU at once (panic=-1 with
-no-reboot). Watchers get a CpuMeter, so they can tell how much CPU the
rest of the host used while something they care about ran.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from harness import procgroup, progress
from harness.boot import pinning
from harness.guest import protocol

QEMU = "qemu-system-x86_64"
ICOUNT = "shift=2,sleep=off,align=off"
# A kernel that sees one CPU patches its LOCK prefixes out ("SMP
# alternatives: switching to UP code"); -icount boots are 1 vCPU, so they
# keep the SMP code the multi-vCPU boots run. -icount counts a LOCK-prefixed
# instruction as one either way: the rates are the same with and without
# (NOTES.md, "Issue 26 (method)"), and neither prices an atomic.
ICOUNT_CMDLINE = "noreplace-smp"
# With sleep=off, QEMU moves the virtual clock to the next timer's deadline
# whenever the vCPU idles, so an operation waiting for the disk took a
# timer period or none, by how fast the host completed the I/O: -icount
# rates of XFS varied by 7-64% (CoV of 3 boots) on a busy host, one XFS
# walk took 206 ms in the 2026-12-04 reference. A guest that polls when
# idle never idles: the wait is the instructions it polls while the I/O
# completes, and the same cases varied by 0.23% at most (2026-12-06, load
# 7-16 on 2 cores; sleep=on: up to 9.8%). Rate boots only: a tcg-cs boot
# counts instructions, which polling would add to.
POLL_IDLE_CMDLINE = "idle=poll"


class QemuError(Exception):
    pass


# Guest memory grows with the vCPUs: 2 GiB (what up to 4 vCPUs always had,
# so their cells stay comparable) plus 128 MiB for every vCPU beyond 4, for
# the per-CPU kernel data (lock_stat keeps ~1.3 MB of counters per CPU) and
# the workers, one per vCPU, with their files on tmpfs: 16 vCPUs 3.5 GiB,
# 64 vCPUs 9.5 GiB, 256 vCPUs 33.5 GiB.
BASE_MEMORY_MB = 2048
MEMORY_PER_EXTRA_VCPU_MB = 128


def memory_for(cpus: int) -> int:
    return BASE_MEMORY_MB + MEMORY_PER_EXTRA_VCPU_MB * max(0, cpus - 4)


@dataclass(frozen=True)
class Machine:
    accel: str  # "kvm" or "tcg"
    cpus: int
    icount: bool = False
    plugin: str = ""  # -plugin argument (TCG plugin and its options), see boot/tcg_cs.py
    cmdline: str = ""  # kernel command line words this kind of machine adds
    poll_idle: bool = False  # -icount rate boots: the guest polls when idle (POLL_IDLE_CMDLINE)
    # Host-side settings of the noise study (harness/run/abtest.py --setting): QEMU's
    # memory without transparent huge pages (whether guest RAM and TCG's code buffer
    # get them depends on the host's fragmentation at the time), and TCG's vCPU
    # threads pinned to cores as KVM's are (boot/pinning.py).
    no_thp: bool = False
    pin: bool = False
    # Show the guest the hypervisor bit, so 6.1 runs the test-and-set virt_spin_lock
    # (cpu_model): only the race gate (run/racegate.py), where that lock's unfair
    # hand-off opened 6.1's dcache race and the queued one did not.
    hypervisor: bool = False

    @property
    def memory_mb(self) -> int:
        return memory_for(self.cpus)

    @property
    def kernel_words(self) -> str:
        """Kernel command line words this machine adds (part of a cell's key)."""
        return " ".join(filter(None, [ICOUNT_CMDLINE if self.icount else "",
                                      POLL_IDLE_CMDLINE if self.poll_idle else "",
                                      self.cmdline]))

    def __post_init__(self) -> None:
        if self.plugin and self.accel != "tcg":
            raise QemuError("-plugin needs TCG")
        if self.icount and self.cpus != 1:
            raise QemuError("-icount runs are 1 vCPU only (with 2 vCPUs the guest hung "
                            "before /init on this machine)")
        if self.icount and self.accel != "tcg":
            raise QemuError("-icount needs TCG")
        if self.poll_idle and not self.icount:
            raise QemuError("a guest that polls when idle is for -icount rate boots only: "
                            "under wall-clock timing it would take a host core")


@dataclass(frozen=True)
class BootSpec:
    bzimage: Path
    initramfs: Path
    plan: Path
    machine: Machine
    timeout_s: float
    disks: tuple[Path, ...] = ()  # attached in order: /dev/vda, /dev/vdb, ...
    cmdline: str = ""


@dataclass(frozen=True)
class BootOutcome:
    exit_code: int | None  # None when killed at the timeout
    timed_out: bool
    wall_s: float
    others_cpu_s: float  # CPU the rest of the host used during the boot


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


class Watcher(Protocol):
    """Sees a boot's console lines as they arrive."""

    def started(self, meter: "CpuMeter") -> None: ...

    def line(self, text: str) -> None: ...


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


def cpu_model(accel: str, hypervisor: bool = False) -> str:
    """QEMU's -cpu for an accelerator. The hypervisor bit is hidden unless asked for:
    a 6.1 guest that sees it replaces every queued spinlock with the test-and-set
    virt_spin_lock (arch/x86/kernel/paravirt.c, native_pv_lock_init), a lock no
    bare-metal machine runs. The guest's init says which one it got."""
    return ("host" if accel == "kvm" else "max") + ("" if hypervisor else ",-hypervisor")


def command(spec: BootSpec, results: Path, qmp: Path | None = None) -> list[str]:
    """qmp: a control socket, through which the vCPU threads are found (pinning.py)."""
    m = spec.machine
    cmdline = " ".join(filter(None, [
        "console=ttyS0", "panic=-1", "rdinit=/init", "nokaslr", m.kernel_words, spec.cmdline]))
    # debug-threads: QEMU names each vCPU thread ("CPU 0/TCG"), so the host can tell
    # them apart (the padlock sweep samples their schedstat).
    cmd = [QEMU, "-nodefaults", "-no-reboot", "-display", "none", "-nic", "none",
           "-name", "inode-duel,debug-threads=on",
           "-machine", "pc", "-m", str(m.memory_mb), "-smp", str(m.cpus),
           "-kernel", str(spec.bzimage), "-initrd", str(spec.initramfs),
           "-append", cmdline,
           "-fw_cfg", f"name={protocol.PLAN_FW_CFG},file={spec.plan}",
           "-serial", "stdio", "-monitor", "none",
           "-device", "virtio-serial-pci,id=ports",
           "-chardev", f"file,id=results,path={results}",
           "-device", f"virtserialport,bus=ports.0,chardev=results,name={protocol.RESULTS_PORT}"]
    qboot = Path("/usr/share/qemu/qboot.rom")
    if qboot.exists():
        cmd += ["-bios", str(qboot)]
    if m.accel == "kvm":
        cmd += ["-accel", "kvm", "-cpu", cpu_model(m.accel, m.hypervisor)]
    else:
        # A plugin with several vCPUs keeps per-vCPU state without locks: one
        # host thread runs them round robin (tcg_cs.py, mode tcg-cs-rr).
        single = ",thread=single" if m.plugin and m.cpus > 1 else ""
        cmd += ["-accel", f"tcg{single}", "-cpu", cpu_model(m.accel, m.hypervisor)]
        if m.icount:
            cmd += ["-icount", ICOUNT]
        if m.plugin:
            cmd += ["-plugin", m.plugin]
    if qmp:
        cmd += ["-qmp", f"unix:{qmp},server=on,wait=off"]
    for disk in spec.disks:
        # cache=unsafe: guest flushes do not reach the host disk, whose latency
        # would otherwise be measured instead of the kernel's locking.
        cmd += ["-drive", f"file={disk},format=raw,if=virtio,cache=unsafe"]
    return cmd


PR_SET_THP_DISABLE = 41  # linux/prctl.h


def _without_thp() -> None:
    """In the child before exec: no transparent huge pages for QEMU (inherited across
    exec; prctl(2), PR_SET_THP_DISABLE)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_THP_DISABLE)")


def boot(spec: BootSpec, out_dir: Path, watchers: tuple[Watcher, ...] = ()) -> BootOutcome:
    """Run one boot to its end or its timeout; console.log and results.raw stay in out_dir."""
    if not shutil.which(QEMU):
        raise QemuError(f"{QEMU} not found: apt-get install qemu-system-x86")
    out_dir.mkdir(parents=True, exist_ok=True)
    console = out_dir / "console.log"
    results = out_dir / "results.raw"
    # Under KVM the vCPU threads are pinned (pinning.py); the socket lives in a
    # short private folder, as unix socket paths are limited to 107 bytes.
    control = Path(tempfile.mkdtemp(prefix="inode-duel-qmp-")) \
        if spec.machine.accel == "kvm" or spec.machine.pin \
        else None
    qmp = control / "qmp.sock" if control else None
    cmd = command(spec, results, qmp)
    (out_dir / "qemu.json").write_text(json.dumps({
        "command": cmd, "timeout_s": spec.timeout_s,
        "host_settings": {"no_thp": spec.machine.no_thp, "pin": spec.machine.pin}}, indent=1))
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=_without_thp if spec.machine.no_thp else None)
    if control:
        try:
            pinning.save(out_dir, pinning.pin(proc.pid, spec.machine.cpus, qmp))
        except BaseException:
            procgroup.stop(proc)
            raise
        finally:
            shutil.rmtree(control, ignore_errors=True)
    meter = CpuMeter(proc.pid)
    for watcher in watchers:
        watcher.started(meter)
    deadline = started + spec.timeout_s
    timed_out = False
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
                    for watcher in watchers:
                        watcher.line(line)
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
                       wall_s=time.monotonic() - started, others_cpu_s=others)


def known_accel(probe_dir: Path) -> str | None:
    """The probe's answer on this host boot, if it was probed since the host booted."""
    cache = probe_dir.with_name(probe_dir.name + ".json")
    if not cache.exists():
        return None
    known = json.loads(cache.read_text())
    boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return known["accel"] if known.get("boot_id") == boot_id else None


def probe_accel(probe_dir: Path, spec_for: callable) -> str:
    """kvm if a real short boot under KVM reaches the end of its plan, else tcg.

    /dev/kvm exists on these machines but QEMU hangs with it, so only a boot
    tells. The answer is kept per host boot (boot_id) beside the probe's folder.
    """
    known = known_accel(probe_dir)
    if known:
        return known
    boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    cache = probe_dir.with_name(probe_dir.name + ".json")
    accel = "tcg"
    reason = "/dev/kvm is not usable"
    if os.access("/dev/kvm", os.R_OK | os.W_OK):
        shutil.rmtree(probe_dir, ignore_errors=True)
        probe_dir.mkdir(parents=True)
        progress.say("probing KVM with a short boot (falls back to TCG)")
        outcome = boot(spec_for(Machine("kvm", 1)), probe_dir)
        text = (probe_dir / "console.log").read_text(errors="replace")
        if not outcome.timed_out and protocol.PLAN_FINISHED in text:
            accel, reason = "kvm", f"probe boot finished in {outcome.wall_s:.1f}s"
        else:
            reason = ("probe boot timed out" if outcome.timed_out
                      else f"probe boot ended without finishing (exit {outcome.exit_code})")
    progress.say(f"accelerator: {accel} ({reason})")
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"boot_id": boot_id, "accel": accel, "reason": reason}))
    return accel
