"""What a cluster node runs: one boot described in JSON, or the probe of its machine.

The cluster executor (run/slurm.py) writes a JobSpec per boot into the
shared directory and submits `python3 -m harness node-boot SPEC`; the node
boots with runner.run_boot into the spec's folder in the shared directory
and writes node.json (host.Node: its CPU model, usable cores, accelerator,
name, QEMU) last, so a folder with node.json is a finished boot. A job that
is requeued (preempted) starts its folder over. `node-probe SPEC` prints
the node's host.Node, after probing KVM with a real boot unless the
accelerator is given.

Everything a node reads is named in the spec by absolute paths in the
shared directory: the kernel image, initramfs, pristine disks and the
lock-order file; the workload declarations travel in the spec itself.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
from dataclasses import asdict, dataclass
from pathlib import Path

from harness import host, lockorder
from harness.boot import qemu, runner
from harness.guest import initramfs, plan, protocol, workloads
from harness.kernels.kbuild import KernelImage


class NodeJobError(Exception):
    pass


@dataclass(frozen=True)
class StepSpec:
    workload: str  # the declaration's file name, for messages
    declaration: str  # the .wl text: the node parses exactly what the cell key hashed
    fs: str
    procs: int


@dataclass(frozen=True)
class JobSpec:
    boot_id: str
    kernel: str
    flavour: str
    image_key: str
    image_dir: str  # staged image folder (bzImage)
    initramfs: str
    disks: dict[str, str]  # filesystem -> staged pristine image
    accel: str
    cpus: int
    icount: bool
    steps: list[StepSpec]
    header: str
    lock_order: str  # staged lock-order file
    out: str  # the boot folder to write, in the shared directory

    def save(self, path: Path) -> None:
        tmp = path.with_suffix(".partial")
        tmp.write_text(json.dumps(asdict(self), indent=1) + "\n")
        tmp.rename(path)

    @classmethod
    def load(cls, path: Path) -> JobSpec:
        try:
            data = json.loads(path.read_text())
            data["steps"] = [StepSpec(**s) for s in data["steps"]]
            return cls(**data)
        except (OSError, ValueError, TypeError, KeyError) as err:
            raise NodeJobError(f"{path}: not a job spec: {err}") from err

    @property
    def machine(self) -> qemu.Machine:
        return qemu.Machine(self.accel, self.cpus, icount=self.icount)

    def plan_steps(self) -> list[plan.Step]:
        items = [(workloads.parse(Path(f"{s.workload}.wl"), s.declaration), s.fs, s.procs)
                 for s in self.steps]
        return plan.make_steps(items)


def kvm_usable() -> bool:
    return os.access("/dev/kvm", os.R_OK | os.W_OK)


def run_job(spec: JobSpec) -> runner.BootRecord:
    """Boot on this node into spec.out; node.json is written last."""
    if spec.accel == "kvm" and not kvm_usable():
        raise NodeJobError(f"{socket.gethostname()}: the boot is planned for KVM but /dev/kvm "
                           "is not usable here")
    out = Path(spec.out)
    shutil.rmtree(out, ignore_errors=True)  # a requeued job starts over
    image = KernelImage(spec.kernel, spec.flavour, spec.image_key, Path(spec.image_dir))
    # The submitting host keyed the cells: a node needs no workload digests.
    files = initramfs.GuestFiles(Path(spec.initramfs),
                                 {fs: Path(p) for fs, p in spec.disks.items()}, digests={})
    order = lockorder.parse(Path(spec.lock_order))
    record = runner.run_boot(image, files, spec.machine, spec.plan_steps(), out, spec.header,
                             order, on_line=_marker_printer)
    print(json.dumps({"status": record.status, "folder": str(record.directory),
                      "wall_s": round(record.wall_s, 1),
                      "steps": [[s.label, s.status] for s in record.steps]}), flush=True)
    host.this_node(spec.accel).save(out)
    return record


def _marker_printer(line: str) -> None:
    """The guest's progress markers in the job's output file."""
    if protocol.MARK in line:
        print(line, flush=True)


@dataclass(frozen=True)
class ProbeSpec:
    accel: str | None  # None: probe KVM with a real boot
    bzimage: str
    initramfs: str
    probe_root: str  # the probe boots' folders, one per node

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1) + "\n")

    @classmethod
    def load(cls, path: Path) -> ProbeSpec:
        try:
            return cls(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError) as err:
            raise NodeJobError(f"{path}: not a probe spec: {err}") from err


def probe(spec: ProbeSpec) -> host.Node:
    accel = spec.accel
    if accel is None:
        folder = Path(spec.probe_root) / socket.gethostname()

        def spec_for(machine: qemu.Machine) -> qemu.BootSpec:
            plan_path = folder / "plan.sh"  # probe_accel has made the folder afresh
            plan_path.write_text(f"echo '{protocol.MARK} probe'\n")
            return qemu.BootSpec(Path(spec.bzimage), Path(spec.initramfs), plan_path, machine,
                                 timeout_s=60)
        accel = qemu.probe_accel(folder, spec_for)
    return host.this_node(accel)


def cmd_node_boot(args) -> int:
    run_job(JobSpec.load(Path(args.spec)))
    return 0


def cmd_node_probe(args) -> int:
    node = probe(ProbeSpec.load(Path(args.spec)))
    print(json.dumps(dict(asdict(node), machine=node.machine.as_json())))
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("node-boot", help="(cluster nodes) run one boot of a job spec")
    p.add_argument("spec", help="JSON job spec written by the cluster executor")
    p.set_defaults(func=cmd_node_boot)
    p = sub.add_parser("node-probe", help="(cluster nodes) print this node's machine")
    p.add_argument("spec", help="JSON probe spec written by the cluster executor")
    p.set_defaults(func=cmd_node_probe)
