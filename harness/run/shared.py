"""The shared directory of a cluster run: what the nodes read, placed once per content.

    code/<digest>/        the harness package the jobs run (python3 -m harness node-boot)
    images/<image>/       bzImage and meta.json of every kernel image booted
    guest/                the initramfs and the pristine disk images

A file is hard-linked when the shared directory is on the same file system
as the build folder, else copied (sparse); either way atomically, and
never again once there: names carry the content (digests, image keys) or,
for the pristine disks, their modification time.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from harness.guest import initramfs
from harness.kernels.kbuild import KernelImage
from harness.layout import REPO_ROOT


def place(source: Path, target: Path) -> None:
    """A file into the shared directory: a hard link when it is on the same file system,
    else a (sparse) copy; atomic, and kept when already there."""
    if target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    try:
        os.link(source, partial)
    except OSError:
        subprocess.run(["cp", "--sparse=always", str(source), str(partial)], check=True)
    partial.rename(target)


def _code_files() -> list[Path]:
    """The harness package as the nodes need it: no tests, no captured test data."""
    package = REPO_ROOT / "harness"
    return sorted(p for p in package.rglob("*") if p.is_file()
                  and not {"tests", "test_data", "__pycache__"} & set(p.relative_to(package).parts))


@dataclass(frozen=True)
class Staging:
    shared: Path
    code: Path  # the staged checkout: python3 -m harness runs from here
    files: initramfs.GuestFiles  # the staged initramfs and disks

    def image(self, image: KernelImage) -> Path:
        """The image's folder in the shared directory (bzImage and meta.json)."""
        target = self.shared / "images" / image.directory.name
        for name in ("bzImage", "meta.json"):
            place(image.directory / name, target / name)
        return target


def stage(shared: Path, files: initramfs.GuestFiles) -> Staging:
    """The code and guest files into the shared directory (once per content)."""
    digest = hashlib.sha256()
    files_of_code = _code_files()
    for path in files_of_code:
        digest.update(str(path.relative_to(REPO_ROOT)).encode() + b"\0" + path.read_bytes())
    code = shared / "code" / digest.hexdigest()[:16]
    if not code.exists():
        partial = code.with_name(code.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        for path in files_of_code:
            target = partial / path.relative_to(REPO_ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
        partial.rename(code)
    guest = shared / "guest"
    staged_initramfs = guest / files.initramfs.name
    place(files.initramfs, staged_initramfs)
    disks = {}
    for fs, disk in files.disks.items():
        # Pristine disks are made once per build folder, not named by content:
        # their modification time tells a remade one apart.
        disks[fs] = guest / f"{disk.stem}-{disk.stat().st_mtime_ns}{disk.suffix}"
        place(disk, disks[fs])
    return Staging(shared, code,
                   replace(files, initramfs=staged_initramfs, disks=disks))
