"""The guest as one workload's steps will find it: its paths, its PATH, its scripts.

The guest is busybox (every applet in /bin, /bin/sh is busybox sh), the
harness's programs, the programs of workloads/src, and what the workload
declares. Nothing else: no bash, no python, no /usr/bin/env unless a
workload brings them. A view answers, before anything boots, whether a
program the guest will run is there.
"""

from __future__ import annotations

import posixpath
import stat

from harness.guest.deps import GuestFile
from harness.guest.protocol import GUEST_PATH

MAX_LINKS = 16


class GuestView:
    def __init__(self, files: list[GuestFile]):
        self.files = {f.path: f for f in files}

    def lookup(self, path: str) -> GuestFile | None:
        """The file at a guest path, symbolic links followed; None if nothing is there."""
        for _ in range(MAX_LINKS):
            found = self.files.get(posixpath.normpath(path))
            if found is None or not stat.S_ISLNK(found.mode):
                return found
            target = found.data.decode(errors="replace")
            path = target if target.startswith("/") else \
                posixpath.join(posixpath.dirname(path), target)
        return None

    def on_path(self, name: str) -> str | None:
        """Where the guest's shell finds an executable named name, as PATH is searched."""
        for folder in GUEST_PATH.split(":"):
            found = self.lookup(f"{folder}/{name}")
            if found is not None and executable(found):
                return f"{folder}/{name}"
        return None

    def named(self, name: str) -> list[str]:
        """Every guest path whose last part is name: where a program is, off PATH."""
        return sorted(p for p in self.files if posixpath.basename(p) == name)


def executable(f: GuestFile) -> bool:
    return stat.S_ISREG(f.mode) and bool(f.mode & 0o111)


def interpreter(f: GuestFile) -> list[str]:
    """The words of a script's #! line ([] for a binary)."""
    if not f.data.startswith(b"#!"):
        return []
    first = f.data[2:].split(b"\n", 1)[0].decode(errors="replace")
    return first.split()
