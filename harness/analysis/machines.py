"""The target machines of the scaling model: what a cache line costs on each.

The model (queueing.py) charges a critical section for the cache lines it
moves: t (``transfer_ns``) for a line another CPU wrote last, m
(``memory_ns``) for a line nobody touched for a long time. Both come from
latencies published for named machines, never from the anchors the model is
checked against (anchors.py). Each figure says where it comes from.

A machine's t and m are the means over all pairs of its CPUs: a line another
CPU wrote last comes from another socket with probability
p = (S - 1) c / (S c - 1) (S sockets of c CPUs each), and a line in memory is
homed on another socket with probability 1 - 1/S:

    t = (1 - p) t_local + p t_remote
    m = m_local / S + m_remote (1 - 1/S)

They are the same at every CPU count: which socket the next holder runs on
is not modelled, only how often a transfer crosses one on this machine.

A guest instruction costs 1 / (clock) ns on each machine (one instruction
per cycle at the base clock, as in the earlier knob of 0.4 ns at 2.5 GHz).
CPU counts beyond a machine's own are modelled with its latencies, as if it
had more cores of the same kind: the curve beyond that point is a what-if.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.analysis.queueing import Costs

FDIO_CLX = ("FD.io CSIT, Cascade Lake testbed server s32-t27-sut1, Intel MLC 3.7 "
            "(github.com/FDio/csit, docs/report/introduction/"
            "test_environment_sut_calib_clx.rst, commit 0d0c903a): idle latency 81.2 ns "
            "local, 130.2 ns remote; L2->L2 HITM 55.6 ns in a socket, 115.6 ns across "
            "sockets with the line homed in the writer's socket, 178.2 ns homed in the "
            "reader's. Its CPU is named in the testbed's Spectre/Meltdown page "
            "(test_environment_sut_meltspec_clx.rst): Intel Xeon Gold 6252N @ 2.30GHz, "
            "2 x 24 cores, 96 threads")
INTEL_E7_BLOG = ("Intel, \"Memory Latencies on Intel Xeon Processor E5-4600 and E7-4800 "
                 "product families\" (software.intel.com blog, 2014-01-28), Intel MLC on a "
                 "four-socket E7-4800: 135-136 ns local, 194-202 ns remote (mean of the 12 "
                 "remote entries: 197 ns)")
NVIENNOT = ("github.com/nviennot/core-to-core-latency, README (commit 0dddf509): median "
            "core-to-core latency, Intel Xeon E5-2695 v4 (Broadwell, the ring generation "
            "after Haswell-EX): 44 ns in a socket")


@dataclass(frozen=True)
class Machine:
    key: str
    name: str
    sockets: int
    cpus_per_socket: int  # hardware threads
    clock_ghz: float
    transfer_local_ns: float
    transfer_remote_ns: float
    memory_local_ns: float
    memory_remote_ns: float
    sources: tuple[str, ...]
    note: str = ""
    # kappa of queueing.Costs: fitted on the calibration anchors (anchors.py), never
    # a published latency; 0 until a calibration sets it.
    contended_factor: float = 0.0

    @property
    def ns_per_insn(self) -> float:
        return 1.0 / self.clock_ghz

    @property
    def transfer_ns(self) -> float:
        cpus = self.sockets * self.cpus_per_socket
        remote = (self.sockets - 1) * self.cpus_per_socket / (cpus - 1)
        return (1 - remote) * self.transfer_local_ns + remote * self.transfer_remote_ns

    @property
    def memory_ns(self) -> float:
        return (self.memory_local_ns / self.sockets
                + self.memory_remote_ns * (1 - 1 / self.sockets))

    def at(self, cpus: int) -> Costs:
        return Costs(self.transfer_ns, self.memory_ns, self.contended_factor)

    def describe(self) -> str:
        return (f"{self.name}: t {self.transfer_local_ns:g} ns in a socket"
                + (f", {self.transfer_remote_ns:g} ns across" if self.sockets > 1 else "")
                + f"; m {self.memory_local_ns:g} ns local"
                + (f", {self.memory_remote_ns:g} ns remote" if self.sockets > 1 else "")
                + f"; {1 / self.clock_ghz:.2f} ns per instruction"
                + (f"; kappa {self.contended_factor:.2f} (fitted)" if self.contended_factor
                   else ""))


MACHINES = (
    Machine("1s", "one socket of a two-socket Intel Xeon Gold 6252N (Cascade Lake, 24 cores, "
            "48 threads)", 1, 48, 2.3, 55.6, 55.6, 81.2, 81.2, (FDIO_CLX,)),
    Machine("2s", "two-socket Intel Xeon Gold 6252N (Cascade Lake, 2 x 24 cores, 96 threads)",
            2, 48, 2.3, 55.6, (115.6 + 178.2) / 2, 81.2, 130.2, (FDIO_CLX,),
            "across sockets: the mean of the two homes, a line is homed in either socket "
            "alike"),
    Machine("4s", "four-socket Intel Xeon E7-4800 v3 class (Haswell-EX, 4 x 10 cores, "
            "80 threads, as Waiman Long's E7-4820 v3)", 4, 20, 1.9, 44.0, 197.0, 135.0, 197.0,
            (INTEL_E7_BLOG, NVIENNOT),
            "no core-to-core figure of a four-socket E7 was found: in a socket the ring "
            "latency of the next generation (44 ns), across sockets the remote memory "
            "latency of the same platform (on the two-socket Cascade Lake the remote HITM, "
            "116-178 ns, brackets its remote memory latency, 130 ns)"),
)
DEFAULT = "2s"


class MachineError(Exception):
    pass


def by_key(key: str) -> Machine:
    for machine in MACHINES:
        if machine.key == key:
            return machine
    raise MachineError(f"unknown machine {key!r} (known: "
                       f"{', '.join(m.key for m in MACHINES)})")
