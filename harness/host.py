"""The machine the harness runs on: what a measurement depends on besides the guest.

Cells are keyed by machine_id, so figures from different hardware (or from
TCG and KVM) never meet in one average; the manifest records the rest.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from harness.boot.qemu import QEMU


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def qemu_version() -> str:
    try:
        out = subprocess.run([QEMU, "--version"], capture_output=True, text=True)
    except FileNotFoundError:
        return "not installed"
    return out.stdout.splitlines()[0] if out.returncode == 0 else "unknown"


@dataclass(frozen=True)
class Machine:
    cpu_model: str
    cores: int
    accel: str

    @property
    def id(self) -> str:
        """Short and stable: the same CPU model, core count and accelerator."""
        text = f"{self.cpu_model}\n{self.cores}\n{self.accel}"
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    def as_json(self) -> dict:
        return dict(asdict(self), id=self.id)


def this_machine(accel: str) -> Machine:
    return Machine(cpu_model(), os.cpu_count() or 1, accel)
