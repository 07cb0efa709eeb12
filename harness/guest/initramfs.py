"""The guest's userspace: an initramfs and the disk images, made on the host.

The initramfs holds the harness's part of the guest: busybox (static), the
init scripts of harness/guest/rootfs/, the protocol values of
harness/guest/protocol.py and stepwatch (harness/guest/helper/, static),
which runs every step's command. Beside it, the programs of workloads/src
(gcc -static) and what the workloads of the run declare: host binaries,
Debian packages and data files with the shared libraries they link
(guest/deps.py). It is rebuilt only when its content changes.

What shapes a workload's steps in the guest is the harness's part plus the
workload's own programs and data, not the rest of the image: each workload
gets a digest of exactly those (GuestFiles.digests), and its cells are keyed
by it, so adding a workload keeps every other workload's cells.

Each disk-backed filesystem of protocol.DISK_FILESYSTEMS has a pristine
image; every boot gets copies.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness import progress
from harness.guest import deps, protocol, workloads
from harness.guest.deps import GuestFile
from harness.layout import Layout

ROOTFS_DIR = Path(__file__).resolve().parent / "rootfs"
HELPER_SOURCE = Path(__file__).resolve().parent / "helper" / "stepwatch.c"
GUEST_SCRIPTS = ("fiostep",)  # rootfs scripts a run line may call, in /bin
BUSYBOX = Path("/bin/busybox")
HOST_PACKAGES = {BUSYBOX: "busybox-static"}
DISK_MB = 2048
# mkfs per disk filesystem: enough inodes for the many-file workloads, and
# nothing left for the guest to initialise lazily while it is measured.
MKFS = {
    "ext4": ["mkfs.ext4", "-q", "-F", "-N", "400000", "-E",
             "lazy_itable_init=0,lazy_journal_init=0"],
    "xfs": ["mkfs.xfs", "-q", "-f"],
}
MKFS_PACKAGES = {"ext4": "e2fsprogs", "xfs": "xfsprogs"}
Entries = dict[str, tuple[int, bytes]]  # cpio name (no leading /) -> (mode, content)


class GuestError(Exception):
    pass


@dataclass(frozen=True)
class GuestFiles:
    initramfs: Path
    disks: dict[str, Path]  # filesystem -> pristine image; each boot gets copies
    digests: dict[str, str]  # workload name -> digest of what shapes its steps in the guest


def compile_workloads(layout: Layout, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(["make", "-s", "-C", str(layout.workload_sources), f"OUT={out}"],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise GuestError("building the workload programs failed:\n" + result.stdout + result.stderr)
    return sorted(p for p in out.iterdir() if p.is_file() and os.access(p, os.X_OK))


def compile_helper(out: Path) -> Path:
    """stepwatch, static, named by its source's digest: checkouts sharing a build
    folder never overwrite each other's."""
    source = HELPER_SOURCE.read_bytes()
    binary = out / f"stepwatch-{hashlib.sha256(source).hexdigest()[:16]}"
    if not binary.exists():
        out.mkdir(parents=True, exist_ok=True)
        partial = binary.with_suffix(".partial")
        result = subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-static", "-o",
                                 str(partial), str(HELPER_SOURCE)], capture_output=True, text=True)
        if result.returncode != 0:
            raise GuestError(f"building {HELPER_SOURCE} failed:\n{result.stderr}")
        partial.rename(binary)
    return binary


def _newc_entry(name: str, mode: int, data: bytes, ino: int) -> bytes:
    fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name) + 1, 0]
    header = b"070701" + b"".join(b"%08X" % f for f in fields)
    blob = header + name.encode() + b"\0"
    blob += b"\0" * (-len(blob) % 4)
    blob += data
    blob += b"\0" * (-len(blob) % 4)
    return blob


def write_cpio(entries: Entries, path: Path) -> None:
    """An uncompressed newc archive, deterministic: mtimes and owners are zero.

    Uncompressed because the guest unpacks it under emulation, where gunzip of
    tens of megabytes costs more than copying them.
    """
    with open(path, "wb") as out:
        for ino, name in enumerate(sorted(entries), 1):
            mode, data = entries[name]
            out.write(_newc_entry(name, mode, data, ino))
        out.write(_newc_entry("TRAILER!!!", 0, b"", 0))


def add(entries: Entries, files: list[GuestFile]) -> None:
    """Files into the archive, with their directories; a file may come twice (a
    library two programs link) but never with two contents."""
    for f in files:
        parts = f.path.strip("/").split("/")
        for i in range(1, len(parts)):
            entries.setdefault("/".join(parts[:i]), (stat.S_IFDIR | 0o755, b""))
        name = "/".join(parts)
        old = entries.get(name)
        if old is not None and old != (f.mode, f.data) and not (
                stat.S_ISDIR(old[0]) and stat.S_ISDIR(f.mode)):
            raise GuestError(f"{f.origin}: {f.path} is already in the guest with other "
                             f"content (the harness's own, or another workload's)")
        if old is None or not stat.S_ISDIR(old[0]):
            entries[name] = (f.mode, f.data)


def harness_files(helper: Path) -> list[GuestFile]:
    """The harness's part of the guest: what every step runs on."""
    for binary, package in HOST_PACKAGES.items():
        if not binary.exists():
            raise GuestError(f"{binary} is missing: apt-get install {package}")
    origin = "the harness"
    files = [GuestFile(f"/{d}", stat.S_IFDIR | 0o755, b"", origin)
             for d in ("dev", "proc", "sys", "tmp", "mnt", "mnt/work", "sys/kernel/debug")]
    files += [deps.regular("/init", ROOTFS_DIR / "init", origin, 0o755),
              deps.regular("/lib/inode-duel.sh", ROOTFS_DIR / "inode-duel.sh", origin, 0o644),
              deps.regular("/lib/inode-duel-faults.sh", ROOTFS_DIR / "faults.sh", origin, 0o644),
              GuestFile("/lib/inode-duel-protocol.sh", stat.S_IFREG | 0o644,
                        protocol.shell_definitions().encode(), origin),
              deps.regular("/bin/stepwatch", helper, origin, 0o755),
              GuestFile("/bin/phase", stat.S_IFLNK | 0o777, b"stepwatch", origin),
              deps.regular("/bin/busybox", BUSYBOX, origin, 0o755)]
    applets = subprocess.run([str(BUSYBOX), "--list"], capture_output=True, text=True,
                             check=True).stdout.split()
    files += [GuestFile(f"/bin/{applet}", stat.S_IFLNK | 0o777, b"busybox", origin)
              for applet in applets if applet != "busybox"]
    return files


def program_files(workload_bins: list[Path]) -> dict[str, GuestFile]:
    """/bin programs a run line may name: ours from workloads/src and the
    harness's guest scripts."""
    programs = {p.name: deps.regular(f"/bin/{p.name}", p, f"workloads/src ({p.name})", 0o755)
                for p in workload_bins}
    for script in GUEST_SCRIPTS:
        programs[script] = deps.regular(f"/bin/{script}", ROOTFS_DIR / script,
                                        f"the harness ({script})", 0o755)
    return programs


def digest(files: list[GuestFile]) -> str:
    h = hashlib.sha256()
    for f in sorted(files, key=lambda f: f.path):
        h.update(f.path.encode() + b"\0%o\0%d\0" % (f.mode, len(f.data)) + f.data)
    return h.hexdigest()[:20]


def workload_digests(base: list[GuestFile], per_workload: dict[str, list[GuestFile]]) -> dict[str, str]:
    """Per workload: the harness's part and its own programs and data, nothing else."""
    base_digest = digest(base)
    return {name: digest([GuestFile("/", 0, base_digest.encode(), "")] + files)
            for name, files in per_workload.items()}


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


def prepare(layout: Layout, chosen: list[workloads.Workload] | None = None) -> GuestFiles:
    """Build (or reuse) the initramfs carrying the chosen workloads (default:
    every declared one) and the pristine disk images."""
    guest = layout.guest
    if chosen is None:
        chosen = list(workloads.load_all(layout.workloads).values())
    programs = program_files(compile_workloads(layout, guest / "bin"))
    base = harness_files(compile_helper(guest / "helper"))
    entries: Entries = {}
    add(entries, base)
    add(entries, list(programs.values()))
    per_workload = {}
    for workload in chosen:
        try:
            per_workload[workload.name] = deps.workload_files(workload, programs)
        except workloads.WorkloadError as err:
            raise GuestError(str(err)) from None
        add(entries, per_workload[workload.name])
    h = hashlib.sha256()
    for name in sorted(entries):
        h.update(name.encode() + b"\0%o\0" % entries[name][0] + entries[name][1])
    initramfs = guest / f"initramfs-{h.hexdigest()[:16]}.cpio"
    if not initramfs.exists():
        progress.say(f"writing {initramfs.name} ({len(entries)} entries)")
        # Other checkouts sharing this build folder may still boot older ones.
        for old in sorted(guest.glob("initramfs-*.cpio"), key=lambda p: p.stat().st_mtime)[:-5]:
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
    return GuestFiles(initramfs, disks, workload_digests(base, per_workload))


def scratch_disks(files: GuestFiles, filesystems: set[str], where: Path) -> list[Path]:
    """Private copies (sparse, so cheap) of the disks one boot needs, in the
    order that gives them protocol.disk_devices' names."""
    copies = []
    for fs in protocol.disk_devices(filesystems):
        copy = where / f"{fs}.img"
        subprocess.run(["cp", "--sparse=always", str(files.disks[fs]), str(copy)], check=True)
        copies.append(copy)
    return copies
