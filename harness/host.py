"""The machine the harness runs on: what a measurement depends on besides the guest.

Cells are keyed by machine_id, so figures from different hardware (or from
TCG and KVM) never meet in one average; the manifest records the rest.
Every boot folder holds the Node that ran it (node.json): on a cluster that
is the node the job landed on, not the host that planned the run.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
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


def usable_cores() -> int:
    """The CPUs this process may run on: a cluster job may be given fewer than the node has."""
    return len(os.sched_getaffinity(0)) or os.cpu_count() or 1


def this_machine(accel: str) -> Machine:
    return Machine(cpu_model(), usable_cores(), accel)


NODE_FILE = "node.json"


@dataclass(frozen=True)
class Node:
    """The host one boot ran on, as it saw itself: kept in the boot folder."""
    machine: Machine
    hostname: str
    qemu: str
    kernel: str  # the host's kernel release

    def save(self, directory: Path) -> None:
        data = dict(asdict(self), machine=self.machine.as_json())
        (directory / NODE_FILE).write_text(json.dumps(data, indent=1) + "\n")

    @classmethod
    def load(cls, directory: Path) -> Node | None:
        """The node of a boot folder, None for folders made before node.json existed."""
        path = directory / NODE_FILE
        if not path.exists():
            return None
        data = json.loads(path.read_text())
        machine = {k: v for k, v in data.pop("machine").items() if k != "id"}
        return cls(Machine(**machine), **data)


def this_node(accel: str) -> Node:
    return Node(this_machine(accel), socket.gethostname(), qemu_version(), os.uname().release)
