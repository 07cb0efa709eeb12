"""The guest's userspace: an initramfs and the disk images, made on the host.

The initramfs holds busybox (static), fio with the shared libraries it links
and the job files of workloads/fio/, the workload programs compiled here with
gcc -static, the init scripts of harness/guest/rootfs/ and the protocol
values of harness/guest/protocol.py. It is rebuilt only when one of those
inputs changes (content hash). Each disk-backed filesystem of
protocol.DISK_FILESYSTEMS has a pristine image; every boot gets copies.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness import progress
from harness.guest import protocol
from harness.layout import Layout

ROOTFS_DIR = Path(__file__).resolve().parent / "rootfs"
BUSYBOX = Path("/bin/busybox")
FIO = Path("/usr/bin/fio")
HOST_PACKAGES = {BUSYBOX: "busybox-static", FIO: "fio"}
DISK_MB = 2048
# mkfs per disk filesystem: enough inodes for the many-file workloads, and
# nothing left for the guest to initialise lazily while it is measured.
MKFS = {
    "ext4": ["mkfs.ext4", "-q", "-F", "-N", "400000", "-E",
             "lazy_itable_init=0,lazy_journal_init=0"],
    "xfs": ["mkfs.xfs", "-q", "-f"],
}
MKFS_PACKAGES = {"ext4": "e2fsprogs", "xfs": "xfsprogs"}


class GuestError(Exception):
    pass


@dataclass(frozen=True)
class GuestFiles:
    initramfs: Path
    disks: dict[str, Path]  # filesystem -> pristine image; each boot gets copies


def shared_libraries(binary: Path) -> list[Path]:
    """The libraries the dynamic loader would map for binary, loader included."""
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    libs = []
    for line in out.splitlines():
        match = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
        if match:
            libs.append(Path(match.group(1)))
        elif "not found" in line:
            raise GuestError(f"{binary}: {line.strip()}")
    return libs


def compile_workloads(layout: Layout, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(["make", "-s", "-C", str(layout.workloads / "src"), f"OUT={out}"],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise GuestError("building the workload programs failed:\n" + result.stdout + result.stderr)
    return sorted(p for p in out.iterdir() if p.is_file() and os.access(p, os.X_OK))


def _newc_entry(name: str, mode: int, data: bytes, ino: int) -> bytes:
    fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name) + 1, 0]
    header = b"070701" + b"".join(b"%08X" % f for f in fields)
    blob = header + name.encode() + b"\0"
    blob += b"\0" * (-len(blob) % 4)
    blob += data
    blob += b"\0" * (-len(blob) % 4)
    return blob


def write_cpio(entries: dict[str, tuple[int, bytes]], path: Path) -> None:
    """An uncompressed newc archive, deterministic: mtimes and owners are zero.

    Uncompressed because the guest unpacks it under emulation, where gunzip of
    tens of megabytes costs more than copying them.
    """
    with open(path, "wb") as out:
        for ino, name in enumerate(sorted(entries), 1):
            mode, data = entries[name]
            out.write(_newc_entry(name, mode, data, ino))
        out.write(_newc_entry("TRAILER!!!", 0, b"", 0))


def _add_file(entries: dict, guest_path: str, host_path: Path, mode: int = 0o755) -> None:
    parts = guest_path.strip("/").split("/")
    for i in range(1, len(parts)):
        entries.setdefault("/".join(parts[:i]), (stat.S_IFDIR | 0o755, b""))
    entries["/".join(parts)] = (stat.S_IFREG | mode, host_path.read_bytes())


def initramfs_entries(layout: Layout, workload_bins: list[Path]) -> dict[str, tuple[int, bytes]]:
    for binary, package in HOST_PACKAGES.items():
        if not binary.exists():
            raise GuestError(f"{binary} is missing: apt-get install {package}")
    entries: dict[str, tuple[int, bytes]] = {}
    for d in ("dev", "proc", "sys", "tmp", "mnt", "mnt/work", "sys/kernel/debug"):
        entries[d] = (stat.S_IFDIR | 0o755, b"")
    _add_file(entries, "init", ROOTFS_DIR / "init")
    _add_file(entries, "lib/inode-duel.sh", ROOTFS_DIR / "inode-duel.sh", 0o644)
    entries["lib/inode-duel-protocol.sh"] = (stat.S_IFREG | 0o644,
                                             protocol.shell_definitions().encode())
    _add_file(entries, "bin/fiostep", ROOTFS_DIR / "fiostep")
    for jobfile in sorted((layout.workloads / "fio").glob("*.fio")):
        _add_file(entries, f"workloads/fio/{jobfile.name}", jobfile, 0o644)
    _add_file(entries, "bin/busybox", BUSYBOX)
    applets = subprocess.run([str(BUSYBOX), "--list"], capture_output=True, text=True,
                             check=True).stdout.split()
    for applet in applets:
        if applet != "busybox":
            entries[f"bin/{applet}"] = (stat.S_IFLNK | 0o777, b"busybox")
    _add_file(entries, "bin/fio", FIO)
    for lib in shared_libraries(FIO):
        _add_file(entries, str(lib), lib.resolve(), 0o755)
    for binary in workload_bins:
        _add_file(entries, f"bin/{binary.name}", binary)
    return entries


def make_disk(path: Path, fs: str, size_mb: int = DISK_MB) -> None:
    """A fresh image of one disk filesystem."""
    if not shutil.which(MKFS[fs][0]):
        raise GuestError(f"{MKFS[fs][0]} is missing: apt-get install {MKFS_PACKAGES[fs]}")
    tmp = path.with_suffix(".tmp")
    tmp.unlink(missing_ok=True)
    with open(tmp, "wb") as f:
        f.truncate(size_mb << 20)
    result = subprocess.run([*MKFS[fs], str(tmp)], capture_output=True, text=True)
    if result.returncode != 0:
        raise GuestError(f"{MKFS[fs][0]} {tmp} failed: {result.stderr.strip()}")
    tmp.rename(path)


def prepare(layout: Layout) -> GuestFiles:
    """Build (or reuse) the initramfs and the pristine ext4 image."""
    guest = layout.guest
    bins = compile_workloads(layout, guest / "bin")
    entries = initramfs_entries(layout, bins)
    digest = hashlib.sha256()
    for name in sorted(entries):
        digest.update(name.encode() + b"\0%o\0" % entries[name][0] + entries[name][1])
    initramfs = guest / f"initramfs-{digest.hexdigest()[:16]}.cpio"
    if not initramfs.exists():
        progress.say(f"writing {initramfs.name} ({len(entries)} entries)")
        # Other checkouts sharing this build folder may still boot older ones.
        for old in sorted(guest.glob("initramfs-*.cpio"), key=lambda p: p.stat().st_mtime)[:-3]:
            old.unlink(missing_ok=True)
        partial = initramfs.with_suffix(".partial")
        write_cpio(entries, partial)
        partial.rename(initramfs)
    disks = {}
    for fs in protocol.DISK_FILESYSTEMS:
        disks[fs] = guest / f"{fs}-{DISK_MB}M.img"
        if not disks[fs].exists():
            progress.say(f"making {disks[fs].name}")
            make_disk(disks[fs], fs)
    return GuestFiles(initramfs, disks)


def scratch_disks(files: GuestFiles, filesystems: set[str], where: Path) -> list[Path]:
    """Private copies (sparse, so cheap) of the disks one boot needs, in the
    order that gives them protocol.disk_devices' names."""
    copies = []
    for fs in protocol.disk_devices(filesystems):
        copy = where / f"{fs}.img"
        subprocess.run(["cp", "--sparse=always", str(files.disks[fs]), str(copy)], check=True)
        copies.append(copy)
    return copies
