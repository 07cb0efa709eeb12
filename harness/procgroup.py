"""Child processes in their own process group, stopped with everything they started."""

from __future__ import annotations

import os
import signal
import subprocess


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL, to the process group of a child started with
    start_new_session=True (make and its compilers; QEMU)."""
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 30)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
