"""Pinning a KVM guest's vCPU threads to host cores, one NUMA node when they fit.

Under KVM each vCPU is a host thread; left to the host scheduler, threads
wander between cores and NUMA nodes, and a lock holder's cache lines with
them. QEMU 7.2 has no vCPU affinity option, so the harness asks QEMU for
the thread of each vCPU over QMP (query-cpus-fast) and sched_setaffinity()s
each to its own core. Cores are taken from one NUMA node when the vCPUs fit
in the CPUs this process may use there, else node by node; within a node
one hardware thread per physical core comes first. When QMP does not answer,
every QEMU thread is bound to the chosen cores instead (the taskset of the
whole process). With more vCPUs than usable CPUs nothing is pinned: stacking
vCPUs on one core would be worse than letting them float, and such a boot
is marked oversubscribed anyway (run/matrix.py).

What was done is kept in the boot folder (pinning.json) and the manifest.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import asdict, dataclass
from pathlib import Path

PINNING_FILE = "pinning.json"
SYS = Path("/sys")
QMP_WAIT_S = 10.0


class PinningError(Exception):
    pass


def parse_cpulist(text: str) -> list[int]:
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        cpus += range(int(low), int(high or low) + 1)
    return cpus


@dataclass(frozen=True)
class Topology:
    """NUMA nodes and their CPUs, first hardware thread of each core first."""
    nodes: dict[int, tuple[int, ...]]


def read_topology(sys_root: Path = SYS) -> Topology:
    """From /sys/devices/system/node (one node of every CPU when it is absent)."""
    cpu_dir = sys_root / "devices/system/cpu"

    def thread_rank(cpu: int) -> int:
        siblings = cpu_dir / f"cpu{cpu}/topology/thread_siblings_list"
        listed = parse_cpulist(siblings.read_text()) if siblings.exists() else [cpu]
        return listed.index(cpu) if cpu in listed else 0

    node_dirs = sorted((sys_root / "devices/system/node").glob("node[0-9]*"),
                       key=lambda d: int(d.name[4:]))
    nodes = {int(d.name[4:]): parse_cpulist((d / "cpulist").read_text()) for d in node_dirs}
    if not nodes:
        nodes = {0: parse_cpulist((cpu_dir / "online").read_text())}
    return Topology({n: tuple(sorted(cpus, key=lambda c: (thread_rank(c), c)))
                     for n, cpus in nodes.items() if cpus})


@dataclass(frozen=True)
class Plan:
    cpus: tuple[int, ...]  # host CPU of vCPU i; empty when nothing is pinned
    numa_nodes: tuple[int, ...]
    reason: str


def plan(vcpus: int, topology: Topology, allowed: set[int]) -> Plan:
    """Which host CPU each vCPU gets."""
    usable = {n: [c for c in cpus if c in allowed] for n, cpus in topology.nodes.items()}
    fits = [n for n, cpus in usable.items() if len(cpus) >= vcpus]
    if fits:
        # The node with the most usable CPUs: the most room for QEMU's own threads.
        node = max(fits, key=lambda n: (len(usable[n]), -n))
        return Plan(tuple(usable[node][:vcpus]), (node,),
                    f"{vcpus} vCPUs on NUMA node {node}")
    spread = [(n, c) for n, cpus in usable.items() for c in cpus]
    if len(spread) >= vcpus:
        chosen = spread[:vcpus]
        nodes = tuple(dict.fromkeys(n for n, _ in chosen))
        return Plan(tuple(c for _, c in chosen), nodes,
                    f"{vcpus} vCPUs do not fit one NUMA node: spread over nodes "
                    f"{' '.join(map(str, nodes))}")
    return Plan((), (), f"{vcpus} vCPUs on {len(spread)} usable host CPUs: oversubscribed, "
                        "not pinned")


def qmp_vcpu_threads(path: Path, wait_s: float = QMP_WAIT_S) -> dict[int, int]:
    """vCPU index -> host thread id, from QEMU's QMP socket (query-cpus-fast)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(max(1.0, deadline - time.monotonic()))
            sock.connect(str(path))
            break
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            if time.monotonic() > deadline:
                raise PinningError(f"no QMP socket at {path} after {wait_s:.0f}s")
            time.sleep(0.05)
    with sock, sock.makefile("rwb") as stream:
        def reply() -> dict:
            while True:
                line = stream.readline()
                if not line:
                    raise PinningError("QMP closed the connection")
                message = json.loads(line)
                if "event" in message:
                    continue
                if "error" in message:
                    raise PinningError(f"QMP error: {message['error']}")
                return message

        def execute(command: str) -> object:
            stream.write(json.dumps({"execute": command}).encode() + b"\n")
            stream.flush()
            return reply().get("return")

        reply()  # the greeting
        execute("qmp_capabilities")
        cpus = execute("query-cpus-fast")
    return {int(c["cpu-index"]): int(c["thread-id"]) for c in cpus}


def pin(pid: int, vcpus: int, qmp: Path | None, topology: Topology | None = None) -> dict:
    """Pin a running QEMU's vCPU threads; returns what was done (for pinning.json)."""
    topology = topology or read_topology()
    allowed = os.sched_getaffinity(0)
    chosen = plan(vcpus, topology, allowed)
    record = {"plan": asdict(chosen), "method": "none", "threads": {}}
    if not chosen.cpus:
        return record
    try:
        if qmp is None:
            raise PinningError("no QMP socket")
        threads = qmp_vcpu_threads(qmp)
        if sorted(threads) != list(range(vcpus)):
            raise PinningError(f"QMP listed vCPUs {sorted(threads)}, expected {vcpus}")
        for index, tid in sorted(threads.items()):
            os.sched_setaffinity(tid, {chosen.cpus[index]})
            record["threads"][str(index)] = {"thread": tid, "cpu": chosen.cpus[index]}
        record["method"] = "vcpu-threads"
    except (PinningError, OSError, ValueError) as err:
        record["fallback_reason"] = str(err)
        # The whole process on the chosen cores: no core per vCPU, but the NUMA node holds.
        try:
            for task in Path(f"/proc/{pid}/task").iterdir():
                try:
                    os.sched_setaffinity(int(task.name), set(chosen.cpus))
                except ProcessLookupError:
                    continue  # a thread that ended meanwhile
            record["method"] = "process"
        except OSError as gone:
            record["fallback_reason"] += f"; process affinity: {gone}"
    return record


def save(directory: Path, record: dict) -> None:
    (directory / PINNING_FILE).write_text(json.dumps(record, indent=1) + "\n")


def load(directory: Path) -> dict | None:
    path = directory / PINNING_FILE
    return json.loads(path.read_text()) if path.exists() else None
