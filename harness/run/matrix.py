"""Planning a run: the measurement matrix, its boots and its cells.

A cell is one step (workload, fs, procs) of one boot configuration (kernel,
flavour, mode, vCPUs, repetition). Its key names everything that shapes
the measurement itself: the kernel image, the guest as the workload sees it
(the harness's part of the initramfs and the workload's own programs and
data, guest/initramfs.py: not the whole image, so adding a workload keeps
the cells of the others), the workload declaration, the boot configuration
and the machine. What only
shapes the numbers derived from it (parsers, lock-order files) is not in
the key: the rows of a reused cell are derived again from its boot folder.

Order: repetitions outermost and kernels inside (A B A B, not A A B B), so a
slow phase of the host hits every kernel alike (docs/design.md section 6).
Within each round of timed boots (one repetition at one vCPU count) the
kernels come in an order drawn from the run's order_seed: a kernel that
always booted right after another, or first in its round, would carry
whatever that position does to a boot's speed (NOTES.md, "Issue 26
(method)"). Rounds of untimed boots keep the given order.

A boot with more vCPUs than the machine has cores is oversubscribed: its
mode says so (tcg-oversubscribed, kvm-oversubscribed), so its throughput is
never taken for a timing (the analysis times only the plain modes) while
its exact lock counts still count.

Count boots (count_cpus, default 4 vCPUs) are debug boots only, of the
workloads that ask for them (count-boots = yes): retries and contention
need more CPUs at once than a timed boot may have, and on a 2-core host
such a boot is oversubscribed, so it is never timed. A workload that
declares kernel parameters (cmdline) gets boots of its own, one per boot
configuration it runs in, and a workload may keep to some flavours
(flavours = debug): see guest/workloads.py.

The defaults here are the only ones: the command line and the Makefile
pass a knob only when it is set.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from dataclasses import dataclass, field, replace

from harness import host
from harness.boot import qemu, runner, tcg_cs
from harness.guest import plan
from harness.guest.workloads import Workload, oversubscribed
from harness.kernels.kbuild import DEFAULT_FLAVOURS, KernelImage
from harness.layout import slug

DEFAULT_WORKLOADS = "default"
# vCPUs of the count boots: debug only, for the workloads with count-boots = yes.
COUNT_CPUS = (4,)
OVERSUBSCRIBED = "-oversubscribed"
# FULL=1: every workload, more boots for tighter intervals.
FULL = {"repeat": 5, "icount_repeat": 3, "workloads": "all"}
# The pair the duel is about: the rounds of duel_repeat beyond repeat time them alone.
DUEL_PAIR = ("chinner", "piggin")
# DUEL=1 (make duel, the reference): both pairs (the isolated one and the historical
# one, series.HISTORICAL), six timed rounds of the isolated pair per vCPU count, three
# debug boots per kernel (a contention claim needs boots to compare, issue 38), the
# failed trylocks' instructions of the retrying workloads (tcg-cs round robin at 2
# vCPUs), and the workloads only the duel needs.
DUEL = {"duel_repeat": 6, "debug_repeat": 3, "rr_repeat": 1,
        "workloads": "default,sbwalk-churn,hotinode-crowd"}
RR_CPUS = 2  # tcg-cs-rr boots: two vCPUs round robin


@dataclass(frozen=True)
class BootConfig:
    kernel: str
    flavour: str
    mode: str  # tcg, tcg-icount, kvm; tcg-oversubscribed, kvm-oversubscribed
    cpus: int
    repetition: int
    # Kernel parameters its workloads declare (they boot apart from the others).
    cmdline: str = ""

    @property
    def label(self) -> str:
        return (f"{self.kernel}/{self.flavour} {self.mode} {self.cpus}cpu "
                f"rep{self.repetition}" + (f" [{self.cmdline}]" if self.cmdline else ""))

    @property
    def slug(self) -> str:
        return (f"{slug(self.kernel)}-{self.flavour}-{self.mode}-"
                f"c{self.cpus}-r{self.repetition}"
                + (f"-{plan.cmdline_slug(self.cmdline)}" if self.cmdline else ""))

    @property
    def accel(self) -> str:
        return "kvm" if self.mode.startswith("kvm") else "tcg"

    def machine(self, accel: str) -> qemu.Machine:
        """The QEMU machine of the boot (a tcg-cs boot's adds the plugin: tcg_cs.machine)."""
        return qemu.Machine(accel, self.cpus, icount=self.mode in ("tcg-icount", tcg_cs.MODE),
                            poll_idle=self.mode == "tcg-icount")


@dataclass(frozen=True)
class Matrix:
    kernels: list[str]
    cpus: list[int]
    workloads: list[Workload]
    repeat: int = 3  # perf boots per kernel and vCPU count, kernels interleaved
    debug_repeat: int = 1  # debug and sanitize boots: lock counts are exact, one settles them
    icount_repeat: int = 2  # 1-vCPU -icount perf boots per kernel (single-thread cost)
    # 1-vCPU tcg-cs boots per kernel (critical-section lengths; cache lines in the
    # first): two, since their counts repeat within 0.04% from boot to boot (NOTES,
    # tcg-cs) and a third cost a minute of the default run (NOTES, issue 24)
    cs_repeat: int = 2
    # Timed rounds of DUEL_PAIR per vCPU count when more than repeat: the rounds past
    # repeat boot the pair alone, interleaved in a drawn order as every round.
    duel_repeat: int = 0
    # 2-vCPU tcg-cs-rr boots per kernel of the count-boots workloads: the instructions
    # of failed trylock loops (boot/tcg_cs.py, mode tcg-cs-rr).
    rr_repeat: int = 0
    flavours: tuple[str, ...] = DEFAULT_FLAVOURS
    max_reruns: int = 2  # of a timed step disturbed by a busy host
    # the kernels' order in each round of timed boots; a new one per run, kept
    # in the manifest so that a run's order can be had again
    order_seed: int = field(default_factory=lambda: random.SystemRandom().randrange(1, 2**31))
    count_cpus: tuple[int, ...] = COUNT_CPUS  # debug-only boots (count-boots workloads)
    # design differences that workloads in reach declare and none of these measures:
    # difference -> those workloads (the report names them as not measured)
    differences_elsewhere: dict[str, list[str]] = field(default_factory=dict)

    def round_orders(self) -> random.Random:
        return random.Random(self.order_seed)

    @property
    def counted_cpus(self) -> list[int]:
        """The count boots' vCPUs that the timed boots do not already have."""
        if "debug" not in self.flavours or not any(w.count_boots for w in self.workloads):
            return []
        return [c for c in self.count_cpus if c not in self.cpus]

    def boots(self, accel: str, cores: int) -> list[BootConfig]:
        """Every boot on a machine with this accelerator and this many cores."""
        configs: list[BootConfig] = []
        for flavour in ("debug", "sanitize"):  # untimed: lock counts and reports
            if flavour in self.flavours:
                for rep in range(1, self.debug_repeat + 1):
                    configs += [BootConfig(k, flavour, boot_mode(accel, c, cores), c, rep)
                                for c in self.cpus for k in self.kernels]
        for rep in range(1, self.debug_repeat + 1):
            configs += [BootConfig(k, "debug", boot_mode(accel, c, cores), c, rep)
                        for c in self.counted_cpus for k in self.kernels]
        if "perf" in self.flavours:
            if accel == "tcg":
                for rep in range(1, self.icount_repeat + 1):
                    configs += [BootConfig(k, "perf", "tcg-icount", 1, rep) for k in self.kernels]
                for rep in range(1, self.cs_repeat + 1):
                    configs += [BootConfig(k, "perf", tcg_cs.MODE, 1, rep) for k in self.kernels]
                if any(w.count_boots for w in self.workloads):
                    for rep in range(1, self.rr_repeat + 1):
                        configs += [BootConfig(k, "perf", tcg_cs.MODE_RR, RR_CPUS, rep)
                                    for k in self.kernels]
            orders = self.round_orders()
            pair = [k for k in self.kernels if k in DUEL_PAIR]
            for rep in range(1, max(self.repeat, self.duel_repeat if pair else 0) + 1):
                for c in self.cpus:
                    kernels = list(self.kernels) if rep <= self.repeat else list(pair)
                    orders.shuffle(kernels)
                    configs += [BootConfig(k, "perf", boot_mode(accel, c, cores), c, rep)
                                for k in kernels]
        return configs

    def oversubscribed(self, accel: str, cores: int) -> list[str]:
        """A warning per workload whose steps would run more processes than their
        boot has vCPUs (workloads.oversubscribed)."""
        return oversubscribed((w, procs, config.cpus) for config in self.boots(accel, cores)
                              for w in self.workloads_for(config)
                              for procs in w.procs_for(config.cpus))

    def workloads_for(self, config: BootConfig) -> list[Workload]:
        """The workloads a boot configuration runs: their flavours, and only those
        that ask for count boots in one."""
        if config.mode == tcg_cs.MODE_RR:  # the retrying workloads only
            return [w for w in self.workloads if config.flavour in w.flavours and w.count_boots]
        counting = config.cpus in self.counted_cpus
        return [w for w in self.workloads if config.flavour in w.flavours
                and (w.count_boots or not counting)]


def boot_mode(accel: str, cpus: int, cores: int) -> str:
    """kvm or tcg, marked oversubscribed when the vCPUs outnumber the machine's cores."""
    plain = "kvm" if accel == "kvm" else "tcg"
    return plain + OVERSUBSCRIBED if cpus > cores else plain


@dataclass
class Cell:
    config: BootConfig
    workload: Workload
    fs: str
    procs: int
    key: str
    machine: str  # host.Machine.id of the machine the key names

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
    """guest_digest: the workload's (initramfs.GuestFiles.digests)."""
    h = hashlib.sha256()
    h.update(json.dumps([image.key, guest_digest, config.flavour, config.mode, machine.id,
                         config.cpus, config.repetition, fs, procs]).encode())
    h.update(workload.measured_text.encode())
    h.update(qemu.cpu_model(machine.accel).encode())  # which spinlock the guest runs
    cmdline = runner.boot_cmdline(config.flavour, config.accel)
    if cmdline:  # other thresholds (or caches that may fail), other reports
        h.update(cmdline.encode())
    words = config.machine(machine.accel).kernel_words
    if words:  # -icount boots keep the SMP code (qemu.ICOUNT_CMDLINE)
        h.update(words.encode())
    if config.mode in (tcg_cs.MODE, tcg_cs.MODE_RR):  # a changed plugin measures anew
        h.update(tcg_cs.plugin_digest().encode())
    return h.hexdigest()[:20]


def image_of(config: BootConfig) -> tuple[str, str]:
    """The images key of a boot: tcg-cs boots run the perf image, which carries the markers."""
    return config.kernel, (tcg_cs.FLAVOUR if config.mode in (tcg_cs.MODE, tcg_cs.MODE_RR)
                           else config.flavour)


def plan_boots(matrix: Matrix, images: dict[tuple[str, str], KernelImage],
               guest_digests: dict[str, str], machine: host.Machine) -> list[BootPlan]:
    """Every boot configuration of the matrix with its cells, in run order;
    guest_digests: per workload name, as initramfs.prepare gives them."""
    boots = []
    for config in matrix.boots(machine.accel, machine.cores):
        image = images[image_of(config)]
        chosen = matrix.workloads_for(config)
        # Workloads with kernel parameters of their own boot apart, one boot per set.
        for cmdline in dict.fromkeys(w.cmdline for w in chosen):
            boot = BootPlan(replace(config, cmdline=cmdline), image)
            for workload in (w for w in chosen if w.cmdline == cmdline):
                for fs in workload.filesystems:
                    for procs in workload.procs_for(config.cpus):
                        key = cell_key(image, guest_digests[workload.name], boot.config,
                                       workload, fs, procs, machine)
                        boot.cells.append(Cell(boot.config, workload, fs, procs, key,
                                               machine.id))
            if boot.cells:
                boots.append(boot)
    return boots


def on_machine(cell: Cell, image: KernelImage, guest_digests: dict[str, str],
               machine: host.Machine) -> Cell:
    """The same cell measured on another machine (a cluster node that differs from the
    one the run was planned for): its mode and key follow that machine."""
    config = cell.config
    if config.mode != "tcg-icount":
        config = replace(config, mode=boot_mode(machine.accel, config.cpus, machine.cores))
    key = cell_key(image, guest_digests[cell.workload.name], config, cell.workload, cell.fs,
                   cell.procs, machine)
    return replace(cell, config=config, key=key, machine=machine.id)


def default_cpus() -> list[int]:
    """1 and 2 vCPUs, never more than the host has (more is asked for explicitly)."""
    return [c for c in (1, 2) if c <= (os.cpu_count() or 1)]
