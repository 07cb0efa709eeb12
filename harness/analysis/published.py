"""Published many-core figures about the icache locks, and what the model says.

Each claim is a number someone measured on a big machine and posted to LKML,
with the mainline workload case whose measured profile stands in for theirs
and the model quantity comparable with it. Every claim is evaluated with
the same knobs (the documented default hand-off and ns per instruction):
nothing is tuned per case. The workloads differ from theirs (machines,
filesystems, benchmarks), so the difference says how far the model's
mechanism and this machine's profile carry, not a fit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from harness.analysis import queueing
from harness.analysis.queueing import Profile
from harness.analysis.scaling_inputs import CaseInputs

MAX_CPUS = 256


@dataclass(frozen=True)
class Claim:
    key: str
    who: str
    source: str  # where the figure was published
    text: str  # the claim in a sentence, with their numbers
    published: float  # the number compared
    published_text: str
    case: tuple[str, str, str]  # mainline (workload, fs, phase) used as the profile
    quantity: str  # see _evaluate
    role: str
    cpus: int
    unit: str


CLAIMS = (
    Claim("chinner-cap", "Dave Chinner, Dec 2023",
          "http://mail.spinics.net/lists/linux-fsdevel/msg257126.html (linux-fsdevel, the "
          "cover letter of his vfs inode cache scalability series)",
          "the sb inode list lock, two exclusive acquisitions per inode cycled through the "
          "cache, tops out XFS at around 600,000-700,000 inodes/s",
          650_000.0, "600,000-700,000 inodes/s", ("create-unlink", "tmpfs", "create-unlink"),
          "plateau", "sb_list", MAX_CPUS, "inodes/s"),
    Claim("chinner-from", "Dave Chinner, Dec 2023", "same post",
          "the sb inode list lock becomes a single point of contention from ~16 threads",
          16.0, "~16 threads", ("create-unlink", "tmpfs", "create-unlink"),
          "saturation_cpus", "sb_list", MAX_CPUS, "CPUs"),
    Claim("chinner-percpu", "Dave Chinner, Dec 2023", "same post",
          "per-CPU sb inode lists (dlist) doubled the rate at 32 threads: 12.8 million inodes "
          "in ~20 s before, ~10 s after",
          2.0, "2x (20 s / 10 s)", ("create-unlink", "tmpfs", "create-unlink"),
          "ratio_private", "sb_list", 32, "x"),
    Claim("guzik-hash", "Mateusz Guzik, Jun 2024",
          "https://lkml.iu.edu/hypermail/linux/kernel/2406.1/03449.html (\"[PATCH v4 0/2] "
          "rcu-based inode lookup for iget*\", 11 Jun 2024)",
          "removing one of the two inode_hash_lock acquisitions per ext4 inode instantiated "
          "took the benchmark from 46.118 s to 21.581 s at ~1900% CPU (about 20 busy CPUs)",
          46.118 / 21.581, "2.14x (46.118 s / 21.581 s)", ("fstree", "ext4", "walk"),
          "ratio_halved", "hash", 20, "x"),
    Claim("long-add", "Waiman Long, 2016",
          "https://www.mail-archive.com/linux-kernel@vger.kernel.org/msg1186860.html "
          "(\"[PATCH v4 4/5] vfs: Use dlock list for superblock's inode list\", Jul 2016)",
          "1000 threads on a 4-socket E7-4820 v3 (40 cores, 80 threads): spinlock "
          "contention in inode_sb_list_add was about 79% of CPU time",
          0.79, "79% of CPU time", ("fstree", "tmpfs", "create"),
          "spin_share", "sb_list", 80, "share"),
    Claim("long-del", "Waiman Long, 2016", "same patch",
          "... and in inode_sb_list_del about 93% of CPU time", 0.93, "93% of CPU time",
          ("fstree", "tmpfs", "unlink"), "spin_share", "sb_list", 80, "share"),
)


@dataclass(frozen=True)
class Outcome:
    claim: Claim
    model: float | None  # None: the run lacks the case or the role
    detail: str  # how the model number was obtained

    @property
    def difference(self) -> float | None:
        """Model over published, minus one."""
        if self.model is None or not self.claim.published:
            return None
        return self.model / self.claim.published - 1


def _without(profile: Profile, role: str, **changes) -> Profile:
    return Profile(profile.think_ns, tuple(replace(lock, **changes) if lock.name == role
                                           else lock for lock in profile.locks))


def _evaluate(claim: Claim, profile: Profile, handoff_ns: float) -> tuple[float, str]:
    base = queueing.solve(profile, claim.cpus, handoff_ns)
    if claim.quantity == "plateau":
        best = max(base.points, key=lambda p: p.ops_per_s)
        return best.ops_per_s, f"highest throughput up to {claim.cpus} CPUs, at {best.cpus}"
    if claim.quantity == "saturation_cpus":
        best = max(p.ops_per_s for p in base.points)
        first = next(p for p in base.points if p.ops_per_s >= 0.9 * best)
        return float(first.cpus), "fewest CPUs reaching 90% of the highest throughput"
    if claim.quantity == "ratio_private":
        other = queueing.solve(_without(profile, claim.role, shared=False), claim.cpus,
                               handoff_ns)
        return (other.at(claim.cpus).ops_per_s / base.at(claim.cpus).ops_per_s,
                f"{claim.role} made per-CPU (never queues), throughput ratio at {claim.cpus}")
    if claim.quantity == "ratio_halved":
        lock = next(l for l in profile.locks if l.name == claim.role)
        other = queueing.solve(_without(profile, claim.role,
                                        acquisitions_per_op=lock.acquisitions_per_op / 2),
                               claim.cpus, handoff_ns)
        return (other.at(claim.cpus).ops_per_s / base.at(claim.cpus).ops_per_s,
                f"{claim.role} acquisitions per op halved "
                f"({lock.acquisitions_per_op:g} to {lock.acquisitions_per_op / 2:g}), "
                f"throughput ratio at {claim.cpus}")
    if claim.quantity == "spin_share":
        return (base.at(claim.cpus).spin_share.get(claim.role, 0.0),
                f"share of every CPU's time waiting for {claim.role} at {claim.cpus} CPUs")
    raise ValueError(f"unknown quantity {claim.quantity}")


def evaluate(inputs: list[CaseInputs], handoff_ns: float, ns_per_insn: float,
             kernel: str = "mainline") -> list[Outcome]:
    by_case = {(i.case.workload, i.case.fs, i.case.phase): i for i in inputs
               if i.kernel == kernel}
    out = []
    for claim in CLAIMS:
        case = by_case.get(claim.case)
        if case is None or case.insn_per_op is None:
            out.append(Outcome(claim, None, f"{kernel} has no {' '.join(claim.case)} in this run"))
            continue
        profile = case.machine_profile(ns_per_insn)
        if not any(l.name == claim.role and l.shared for l in profile.locks):
            out.append(Outcome(claim, None, f"{claim.role} is not a shared lock in {kernel}'s "
                                            f"{case.case.label}"))
            continue
        value, detail = _evaluate(claim, profile, handoff_ns)
        out.append(Outcome(claim, value, f"{kernel} {case.case.label}: {detail}"))
    return out
