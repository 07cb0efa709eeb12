"""Planning a run: the measurement matrix, its boots and its cells.

A cell is one step (workload, fs, procs) of one boot configuration (kernel,
flavour, mode, vCPUs, repetition). Its key names everything that shapes
the measurement itself: the kernel image, the guest (initramfs), the
workload declaration, the boot configuration and the machine. What only
shapes the numbers derived from it (parsers, lock-order files) is not in
the key: the rows of a reused cell are derived again from its boot folder.

Order: repetitions outermost and kernels inside (A B A B, not A A B B), so a
slow phase of the host hits every kernel alike (docs/design.md section 6).

The defaults here are the only ones: the command line and the Makefile
pass a knob only when it is set.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field

from harness import host
from harness.boot import qemu, tcg_cs
from harness.guest import plan
from harness.guest.workloads import Workload
from harness.kernels.kbuild import DEFAULT_FLAVOURS, KernelImage
from harness.layout import slug

DEFAULT_WORKLOADS = "default"
# FULL=1: every workload, more boots for tighter intervals.
FULL = {"repeat": 5, "icount_repeat": 3, "workloads": "all"}


@dataclass(frozen=True)
class BootConfig:
    kernel: str
    flavour: str
    mode: str  # tcg, tcg-icount, kvm
    cpus: int
    repetition: int

    @property
    def label(self) -> str:
        return (f"{self.kernel}/{self.flavour} {self.mode} {self.cpus}cpu "
                f"rep{self.repetition}")

    @property
    def slug(self) -> str:
        return (f"{slug(self.kernel)}-{self.flavour}-{self.mode}-"
                f"c{self.cpus}-r{self.repetition}")

    def machine(self, accel: str) -> qemu.Machine:
        return qemu.Machine(accel, self.cpus, icount=self.mode == "tcg-icount")


@dataclass(frozen=True)
class Matrix:
    kernels: list[str]
    cpus: list[int]
    workloads: list[Workload]
    repeat: int = 3  # perf boots per kernel and vCPU count, kernels interleaved
    debug_repeat: int = 1  # debug and sanitize boots: lock counts are exact, one settles them
    icount_repeat: int = 2  # 1-vCPU -icount perf boots per kernel (single-thread cost)
    cs_repeat: int = 3  # 1-vCPU tcg-cs boots per kernel (critical-section lengths)
    flavours: tuple[str, ...] = DEFAULT_FLAVOURS
    max_reruns: int = 2  # of a timed step disturbed by a busy host

    def boots(self, accel: str) -> list[BootConfig]:
        plain = "kvm" if accel == "kvm" else "tcg"
        configs: list[BootConfig] = []
        for flavour in ("debug", "sanitize"):  # untimed: lock counts and reports
            if flavour in self.flavours:
                for rep in range(1, self.debug_repeat + 1):
                    configs += [BootConfig(k, flavour, plain, c, rep)
                                for c in self.cpus for k in self.kernels]
        if "perf" in self.flavours:
            if accel == "tcg":
                for rep in range(1, self.icount_repeat + 1):
                    configs += [BootConfig(k, "perf", "tcg-icount", 1, rep) for k in self.kernels]
                for rep in range(1, self.cs_repeat + 1):
                    configs += [BootConfig(k, "perf", tcg_cs.MODE, 1, rep) for k in self.kernels]
            for rep in range(1, self.repeat + 1):
                configs += [BootConfig(k, "perf", plain, c, rep)
                            for c in self.cpus for k in self.kernels]
        return configs


@dataclass
class Cell:
    config: BootConfig
    workload: Workload
    fs: str
    procs: int
    key: str

    @property
    def label(self) -> str:
        return f"{self.config.label} {self.workload.name}/{self.fs}/p{self.procs}"

    @property
    def history(self) -> tuple:
        """The kind of step, for time estimates: (workload, fs, flavour, mode, cpus)."""
        return (self.workload.name, self.fs, self.config.flavour, self.config.mode,
                self.config.cpus)

    def step(self, step_id: str) -> plan.Step:
        return plan.Step(step_id, self.workload, self.fs, self.procs)


@dataclass
class BootPlan:
    """One boot configuration of the run and all its cells."""
    config: BootConfig
    image: KernelImage
    cells: list[Cell] = field(default_factory=list)


def cell_key(image: KernelImage, guest_digest: str, config: BootConfig, workload: Workload,
             fs: str, procs: int, machine: host.Machine) -> str:
    h = hashlib.sha256()
    h.update(json.dumps([image.key, guest_digest, config.flavour, config.mode, machine.id,
                         config.cpus, config.repetition, fs, procs]).encode())
    h.update(workload.text.encode())
    if config.mode == tcg_cs.MODE:  # the plugin measures: a changed one measures anew
        h.update(tcg_cs.plugin_digest().encode())
    return h.hexdigest()[:20]


def image_of(config: BootConfig) -> tuple[str, str]:
    """The images key of a boot: tcg-cs boots the perf kernel plus its marker patch."""
    return config.kernel, tcg_cs.IMAGE if config.mode == tcg_cs.MODE else config.flavour


def plan_boots(matrix: Matrix, images: dict[tuple[str, str], KernelImage], guest_digest: str,
               machine: host.Machine) -> list[BootPlan]:
    """Every boot configuration of the matrix with its cells, in run order."""
    boots = []
    for config in matrix.boots(machine.accel):
        image = images[image_of(config)]
        boot = BootPlan(config, image)
        for workload in matrix.workloads:
            for fs in workload.filesystems:
                for procs in workload.procs_for(config.cpus):
                    key = cell_key(image, guest_digest, config, workload, fs, procs, machine)
                    boot.cells.append(Cell(config, workload, fs, procs, key))
        boots.append(boot)
    return boots


def default_cpus() -> list[int]:
    """1 and 2 vCPUs, never more than the host has (more is asked for explicitly)."""
    return [c for c in (1, 2) if c <= (os.cpu_count() or 1)]
