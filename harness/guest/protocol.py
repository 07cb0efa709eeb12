"""The guest protocol: what the host and the guest's shell agree on, in one place.

The console (ttyS0) carries human-readable progress lines that start with
MARK; the host times steps by them. Results travel on a virtio-serial port
named RESULTS_PORT, as records (see boot/channel.py). The plan reaches the
guest through QEMU's fw_cfg as PLAN_FW_CFG. Each filesystem under test is
mounted on WORK_DIR (a step's programs get SCRATCH_DIR on it as TMPDIR);
disk-backed ones are virtio disks attached in the
order of DISK_FILESYSTEMS, so their device names follow from which of them
a boot needs.

The guest's shell library (rootfs/inode-duel.sh) reads these values from
/lib/inode-duel-protocol.sh, which shell_definitions() writes into the
initramfs: nothing here is spelled twice.
"""

from __future__ import annotations

import re

MARK = "inode-duel:"
INIT_STARTED = f"{MARK} init started"
# "inode-duel: init started, 2 cpus, kernel 6.1.192, spinlock qspinlock, crng ready"
INIT_SPINLOCK = re.compile(re.escape(INIT_STARTED) + r".*, spinlock ([^\s,]+)")
INIT_CRNG = re.compile(re.escape(INIT_STARTED) + r".*, crng (\S+)")
PLAN_FINISHED = f"{MARK} plan finished"
PLAN_FW_CFG = "opt/inode-duel/plan"
RESULTS_PORT = "inode-duel.results"
WORK_DIR = "/mnt/work"
# A scratch directory on the filesystem under test, for programs that write
# temporary files ($TMPDIR, {tmp}); the guest's /tmp is a link to it, so a
# program that writes /tmp whatever TMPDIR says, as will-it-scale does,
# writes on the filesystem under test too.
SCRATCH_DIR = f"{WORK_DIR}/.tmp"
# The harness's own tmpfs in the guest: the plan, every step's output, lock_stat
# and status files ({prefix} is HARNESS_DIR/STEP), never on the filesystem under test.
HARNESS_DIR = "/run/inode-duel"
# The PATH of every step: busybox and the harness's programs first; declared
# binaries and packages keep the paths they have on the host, relative
# binaries go to /usr/local/bin.
GUEST_PATH = "/bin:/sbin:/usr/bin:/usr/sbin:/usr/local/bin"
MEMORY_FILESYSTEMS = ("tmpfs",)
DISK_FILESYSTEMS = ("ext4", "xfs")
FILESYSTEMS = MEMORY_FILESYSTEMS + DISK_FILESYSTEMS

# "inode-duel: step s01 begin: CMD" and "inode-duel: step s01 end: exit 0"
STEP_MARK = re.compile(re.escape(MARK) + r" step (\S+) (begin|end)")


def step_mark(line: str) -> tuple[str, str] | None:
    """(step id, "begin" or "end") if the console line is a step marker."""
    found = STEP_MARK.search(line)
    return (found.group(1), found.group(2)) if found else None


def guest_spinlock(console_text: str) -> str | None:
    """The spinlock the guest's init saw its kernel run (qspinlock or
    virt_spin_lock); None for a boot that never said (older boots, no init)."""
    found = INIT_SPINLOCK.search(console_text)
    return found.group(1) if found else None


def guest_crng(console_text: str) -> str | None:
    """Whether the guest's CRNG was seeded when its init started (ready or
    unseeded); None for a boot whose init did not say (older boots)."""
    found = INIT_CRNG.search(console_text)
    return found.group(1) if found else None


def disk_devices(filesystems: set[str] | list[str]) -> dict[str, str]:
    """The guest device of each disk a boot attaches: /dev/vda, /dev/vdb, ..."""
    needed = [fs for fs in DISK_FILESYSTEMS if fs in filesystems]
    return {fs: f"/dev/vd{chr(ord('a') + i)}" for i, fs in enumerate(needed)}


def shell_definitions() -> str:
    """/lib/inode-duel-protocol.sh: the values above for the guest's shell."""
    values = {"MARK": MARK, "PLAN_FW_CFG": PLAN_FW_CFG, "RESULTS_PORT": RESULTS_PORT,
              "WORK_DIR": WORK_DIR, "SCRATCH_DIR": SCRATCH_DIR, "GUEST_PATH": GUEST_PATH,
              "HARNESS_DIR": HARNESS_DIR}
    return ("# Generated from harness/guest/protocol.py: the host's side of the protocol.\n"
            + "".join(f"{name}='{value}'\n" for name, value in values.items()))
