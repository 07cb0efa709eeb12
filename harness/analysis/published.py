"""Published many-core figures about the icache locks, and what the model says.

Each anchor is a number someone measured on a big machine and posted to
LKML, the tolerance the model must land in, the mainline workload case whose
measured profile stands in for theirs, why that profile fits their setup,
and the model quantity comparable with it. Every anchor is evaluated with
the same constants: the target machines of machines.py, whose line costs
come from published latencies, never from these anchors. Their machines are
not ours (Chinner's and Guzik's are not named beyond "a 32 core + 24GB RAM
vm"), so each anchor is solved on every target machine and reported as a
band; where the publisher's machine is of one of our classes (Long's
four-socket E7), that machine's value decides.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from harness.analysis import machines, queueing
from harness.analysis.queueing import Lock, Profile
from harness.analysis.scaling_inputs import CaseInputs

MAX_CPUS = 256
CHINNER_SOURCE = ("https://lore.kernel.org/all/20231206060629.2827226-1-david@fromorbit.com/ "
                  "(linux-fsdevel, 6 Dec 2023, \"[PATCH 0/11] vfs: inode cache scalability "
                  "improvements\", also http://mail.spinics.net/lists/linux-fsdevel/"
                  "msg257126.html)")
CHINNER_PROFILE = (
    "mainline create-unlink on XFS: two sb-list acquisitions per inode (his \"two exclusive "
    "lock operations per inode we cycle through the inode cache\"), no inode hash (XFS keeps "
    "its own), and about the same work per inode: his XFS walk takes 11.621 s for 400,000 "
    "inodes at 1 thread, 29 us each, against this profile's instructions at the machine's "
    "clock")
GUZIK_SOURCE = ("https://lkml.iu.edu/hypermail/linux/kernel/2406.1/03449.html (\"[PATCH v4 "
                "0/2] rcu-based inode lookup for iget*\", 11 Jun 2024) and patch 1/2 "
                "(20240611173824.535995-2-mjguzik@gmail.com on patchwork)")
GUZIK_PROFILE = (
    "mainline fstree walk on ext4 (a stat of every file of a tree, caches dropped: "
    "iget_locked's failing lookup and its insert under inode_hash_lock, the sb-list add "
    "nested in the insert), with what his run adds: 20 million files where about 15 "
    "million fit, so every stat also evicts an inode (one more hash and sb-list "
    "acquisition), and 2^20 buckets for 15 million cached inodes, so a failing lookup "
    "walks about 14 cold entries under the lock")
LONG_SOURCE = ("https://www.mail-archive.com/linux-kernel@vger.kernel.org/msg1186860.html "
               "(\"[PATCH v4 4/5] vfs: Use dlock list for superblock's inode list\", Jul 2016; "
               "also http://mail.spinics.net/lists/linux-fsdevel/msg94658.html)")
LONG_PROFILE = (
    "mainline fstree create and unlink on tmpfs: one sb-list add (create) or del (unlink) per "
    "operation and nothing from the disk, like his microbenchmark of threads that attach "
    "procfs inodes and exit")

# Guzik's run: 20 million files, about 15 million cached inodes (his slabinfo), and
# 2^20 buckets in a 24 GB VM (alloc_large_system_hash, one bucket per 16 KB of memory
# rounded to a power of two): the chains of a failing lookup.
GUZIK_CACHED = 15_000_000
GUZIK_BUCKETS = 2 ** 20
GUZIK_STATS = 20_000_000


@dataclass(frozen=True)
class Anchor:
    key: str
    who: str
    source: str
    text: str  # the claim in a sentence, with their numbers
    published: float
    published_text: str
    low: float  # the model must land in [low, high]
    high: float
    case: tuple[str, str, str]  # mainline (workload, fs, phase) used as the profile
    why_profile: str
    quantity: str  # see _evaluate
    role: str
    cpus: int
    unit: str
    machine: str = ""  # the target machine of the publisher's class, if any


# Anchors whose figure is a change of design (after over before), the kind of figure a
# prediction of chinner against piggin is; the others are absolute rates and shares.
RELATIVE = ("ratio_private", "guzik_ratio")


def _around(value: float, rel: float) -> tuple[float, float]:
    return value * (1 - rel), value * (1 + rel)


ANCHORS = (
    Anchor("chinner-plateau", "Dave Chinner, Dec 2023", CHINNER_SOURCE,
           "the sb inode list lock tops out XFS at around 600,000-700,000 inodes/s",
           650_000.0, "600,000-700,000 inodes/s", 450_000.0, 950_000.0,
           ("create-unlink", "xfs", "create-unlink"), CHINNER_PROFILE, "plateau", "sb_list",
           MAX_CPUS, "inodes/s"),
    Anchor("chinner-16", "Dave Chinner, Dec 2023", CHINNER_SOURCE,
           "his XFS walk at 16 threads: 6.4 million inodes in 12.148 s",
           6_400_000 / 12.148, "527k inodes/s", *_around(6_400_000 / 12.148, 0.25),
           ("create-unlink", "xfs", "create-unlink"), CHINNER_PROFILE, "throughput", "sb_list",
           16, "inodes/s"),
    Anchor("chinner-32", "Dave Chinner, Dec 2023", CHINNER_SOURCE,
           "his XFS walk at 32 threads: 12.8 million inodes in 20.518 s",
           12_800_000 / 20.518, "624k inodes/s", *_around(12_800_000 / 20.518, 0.25),
           ("create-unlink", "xfs", "create-unlink"), CHINNER_PROFILE, "throughput", "sb_list",
           32, "inodes/s"),
    Anchor("chinner-percpu", "Dave Chinner, Dec 2023", CHINNER_SOURCE,
           "per-CPU sb inode lists (dlist) at 32 threads: the walk in 10.308 s against 20.518 s",
           20.518 / 10.308, "1.99x (20.518 s / 10.308 s)", 1.5, 2.5,
           ("create-unlink", "xfs", "create-unlink"), CHINNER_PROFILE, "ratio_private",
           "sb_list", 32, "x"),
    Anchor("guzik-ratio", "Mateusz Guzik, Jun 2024", GUZIK_SOURCE,
           "an RCU lookup before the locked insert (one inode_hash_lock acquisition less per "
           "inode) took 20 threads stat()ing 20 million ext4 files from 46.118 s to 21.581 s",
           46.118 / 21.581, "2.14x (46.118 s / 21.581 s)", 46.118 / 21.581 - 0.5,
           46.118 / 21.581 + 0.5, ("fstree", "ext4", "walk"), GUZIK_PROFILE, "guzik_ratio",
           "hash", 20, "x"),
    Anchor("guzik-before", "Mateusz Guzik, Jun 2024", GUZIK_SOURCE,
           "before: 20 million stats in 46.118 s", GUZIK_STATS / 46.118, "434k stats/s",
           *_around(GUZIK_STATS / 46.118, 0.35), ("fstree", "ext4", "walk"), GUZIK_PROFILE,
           "guzik_before", "hash", 20, "stats/s"),
    Anchor("guzik-after", "Mateusz Guzik, Jun 2024", GUZIK_SOURCE,
           "after: 20 million stats in 21.581 s", GUZIK_STATS / 21.581, "927k stats/s",
           *_around(GUZIK_STATS / 21.581, 0.35), ("fstree", "ext4", "walk"), GUZIK_PROFILE,
           "guzik_after", "hash", 20, "stats/s"),
    Anchor("long-add", "Waiman Long, Jul 2016", LONG_SOURCE,
           "1000 threads on a four-socket E7-4820 v3 (40 cores, 80 threads): spinlock "
           "contention in inode_sb_list_add about 79% of CPU time",
           0.79, "79% of CPU time", 0.79 - 0.12, 0.79 + 0.12, ("fstree", "tmpfs", "create"),
           LONG_PROFILE, "spin_share", "sb_list", 80, "share", "4s"),
    Anchor("long-del", "Waiman Long, Jul 2016", LONG_SOURCE,
           "... and in inode_sb_list_del about 93% of CPU time", 0.93, "93% of CPU time",
           0.93 - 0.06, 0.93 + 0.06, ("fstree", "tmpfs", "unlink"), LONG_PROFILE, "spin_share",
           "sb_list", 80, "share", "4s"),
)


@dataclass(frozen=True)
class Outcome:
    anchor: Anchor
    values: dict[str, float]  # machine key -> model value
    detail: str  # how the model number was obtained, or why there is none

    @property
    def band(self) -> tuple[float, float] | None:
        return (min(self.values.values()), max(self.values.values())) if self.values else None

    @property
    def deciding(self) -> list[str]:
        """The machines whose values decide: the publisher's class, else all."""
        return [self.anchor.machine] if self.anchor.machine in self.values else \
            list(self.values)

    @property
    def relative(self) -> bool:
        return self.anchor.quantity in RELATIVE

    @property
    def within(self) -> list[str]:
        return [k for k, v in self.values.items() if self.anchor.low <= v <= self.anchor.high]

    @property
    def holds(self) -> bool | None:
        """Inside the tolerance on the publisher's machine class, or (machine unknown)
        on at least one target machine; None without a value."""
        if not self.values:
            return None
        return any(k in self.within for k in self.deciding)


def _with(profile: Profile, role: str, **changes) -> Profile:
    return replace(profile, locks=tuple(replace(lock, **changes) if lock.name == role
                                        else lock for lock in profile.locks))


def _lock(profile: Profile, role: str) -> Lock:
    return next(lock for lock in profile.locks if lock.name == role)


def guzik_profile(profile: Profile, after: bool) -> tuple[Profile, float]:
    """The fstree walk profile as Guzik's run sees it (GUZIK_PROFILE): per stat a failing
    lookup walking a full chain of cold entries, the insert (with the sb-list add nested)
    and the eviction's removal. After his patch the lookup runs under RCU outside the lock
    and the insert finds the chain warm. Returns the profile and the cold lines walked
    outside any lock per stat (the unlocked lookup's)."""
    sb = _lock(profile, "sb_list")
    lookup_cold = GUZIK_CACHED / GUZIK_BUCKETS + 1  # the chain and its bucket
    insert_cold, remove_cold = 0.0, 2.0  # remove: *pprev and the next entry's pprev
    if after:
        count, cold, outside = 2.0, (insert_cold + remove_cold) / 2, lookup_cold
    else:
        count, cold, outside = 3.0, (lookup_cold + insert_cold + remove_cold) / 3, 0.0
    changed = _with(profile, "hash", acquisitions_per_op=count, cold_lines=cold,
                    lines_from_previous=0.0, lockword_written=0.0)
    # The eviction's sb-list del: an entry of a list of millions, its neighbours cold.
    adds = sb.acquisitions_per_op
    changed = _with(changed, "sb_list", acquisitions_per_op=adds + 1,
                    cold_lines=(sb.cold_lines * adds + 3.0) / (adds + 1),
                    lines_from_previous=sb.lines_from_previous * adds / (adds + 1),
                    lockword_written=sb.lockword_written * adds / (adds + 1),
                    inside="hash", inside_share=adds / (adds + 1))
    return changed, outside


def _guzik(profile: Profile, after: bool, cpus: int, machine: machines.Machine) -> float:
    changed, outside = guzik_profile(profile, after)
    changed = replace(changed, think_ns=changed.think_ns
                      + outside * machine.memory_ns)
    return queueing.solve(changed, cpus, machine).at(cpus).ops_per_s


def _evaluate(anchor: Anchor, profile: Profile, machine: machines.Machine) -> float:
    if anchor.quantity == "guzik_before":
        return _guzik(profile, False, anchor.cpus, machine)
    if anchor.quantity == "guzik_after":
        return _guzik(profile, True, anchor.cpus, machine)
    if anchor.quantity == "guzik_ratio":
        return _guzik(profile, True, anchor.cpus, machine) / _guzik(profile, False, anchor.cpus,
                                                                     machine)
    base = queueing.solve(profile, anchor.cpus, machine)
    if anchor.quantity == "plateau":
        return max(p.ops_per_s for p in base.points)
    if anchor.quantity == "throughput":
        return base.at(anchor.cpus).ops_per_s
    if anchor.quantity == "ratio_private":
        other = queueing.solve(_with(profile, anchor.role, shared=False), anchor.cpus, machine)
        return other.at(anchor.cpus).ops_per_s / base.at(anchor.cpus).ops_per_s
    if anchor.quantity == "spin_share":
        return base.at(anchor.cpus).spin_share.get(anchor.role, 0.0)
    raise ValueError(f"unknown quantity {anchor.quantity}")


DETAILS = {
    "plateau": "the highest throughput up to {cpus} CPUs",
    "throughput": "throughput at {cpus} CPUs",
    "ratio_private": "{role} made per-CPU (never queues) over as is, throughput at {cpus} CPUs",
    "guzik_ratio": "after over before at {cpus} CPUs (GUZIK_PROFILE, harness/analysis/"
                   "published.py)",
    "guzik_before": "throughput at {cpus} CPUs, three hash acquisitions per stat",
    "guzik_after": "throughput at {cpus} CPUs, two hash acquisitions per stat",
    "spin_share": "share of every CPU's time waiting for {role} at {cpus} CPUs",
}


def evaluate(inputs: list[CaseInputs], kernel: str = "mainline") -> list[Outcome]:
    by_case = {(i.case.workload, i.case.fs, i.case.phase): i for i in inputs
               if i.kernel == kernel}
    out = []
    for anchor in ANCHORS:
        case = by_case.get(anchor.case)
        if case is None or case.insn_per_op is None:
            out.append(Outcome(anchor, {}, f"{kernel} has no {' '.join(anchor.case)} in this "
                                           "run"))
            continue
        values = {}
        for machine in machines.MACHINES:
            profile = case.machine_profile(machine.ns_per_insn)
            if not any(lock.name == anchor.role and profile.queues(lock)
                       for lock in profile.locks):
                break
            values[machine.key] = _evaluate(anchor, profile, machine)
        detail = (f"{kernel} {case.case.label}: "
                  + DETAILS[anchor.quantity].format(cpus=anchor.cpus, role=anchor.role)
                  if values else f"{anchor.role} is not a shared lock in {kernel}'s "
                                 f"{case.case.label}")
        out.append(Outcome(anchor, values, detail))
    return out


BEFORE_FILE = Path(__file__).with_name("published_before.json")


@dataclass(frozen=True)
class Before:
    """What the model of issue 14 said of an anchor, as that run recorded it."""
    claim: str
    model: float


def before() -> tuple[str, dict[str, Before]]:
    """(where the numbers come from, anchor key -> the earlier model's value)."""
    data = json.loads(BEFORE_FILE.read_text())
    return data["source"], {k: Before(v["claim"], v["model"]) for k, v in data["anchors"].items()}
