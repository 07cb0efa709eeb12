"""A closed queueing model of the inode cache's locks: throughput at N CPUs.

This is a prediction, not a measurement. It turns a lock profile measured at
1 CPU (how often each icache lock is taken per operation, how long it is
held, how long the rest of the operation takes) into throughput, lock
utilisation, contention and spin time at any CPU count. docs/scaling-model.md
explains where every input comes from and how the model was validated.

The network
-----------
N CPUs each run the workload's operations back to back: a closed network
with N customers. One operation is

  * Z (``think_ns``): the work outside every shared lock, a delay station
    (every CPU does it at once, nobody queues);
  * for every shared lock class k: A_k acquisitions (``acquisitions_per_op``)
    each holding the lock H_k ns (``hold_ns``). A class with M_k instances
    (``instances``: hash buckets) is M_k single-server FCFS stations, each
    visited A_k / M_k times per operation (the hash spreads operations
    evenly over the buckets);
  * locks that are never shared between CPUs (per-CPU lists, per-inode
    i_lock in workloads whose workers share no inode: ``shared: false``)
    are part of the delay: their hold time adds to every operation and
    they never queue.

Lock hand-off
-------------
A spinlock held by one CPU and wanted by another costs a cache-line
transfer ``c`` (``handoff_ns``) besides the critical section itself. The
service time of one acquisition at an instance holding j CPUs (the holder
and j - 1 spinning waiters) is

  * queued spinlock (qspinlock, MCS-like): S(j) = H + c for j >= 2, H for
    j = 1. A waiter spins on its own line; the hand-off is one transfer
    whatever the queue length;
  * test-and-set bit lock (``bitlock``: hlist_bl, bit_spin_lock):
    S(j) = H + c * (j - 1). Every waiter hammers the same line, and the
    release has to get past all of them before the next holder's atomic
    wins: the hand-off grows linearly with the waiters, the collapse
    Boyd-Wickizer, Kaashoek, Morris and Zeldovich modelled in "Non-scalable
    locks are dangerous" (Linux Symposium 2012, section 4) for ticket locks.

An uncontended acquisition finds the lock's line in another CPU's cache
with probability 1 - 1/n on n CPUs (the previous acquirer was any CPU):
that miss delays the acquiring CPU by c but does not hold the lock, so it is
added to the delay station: Z(n) = Z + c (1 - 1/n) sum_k A_k over shared
locks.

Solution: exact mean value analysis with load-dependent stations
-------------------------------------------------------------------
(Reiser and Lavenberg, "Mean-value analysis of closed multichain queuing
networks", JACM 1980; the load-dependent form as in Menasce, Almeida and
Dowdy, "Performance by Design", 2004.) For n = 1 .. N, with
p_k(j | n) the probability that an instance of lock k holds j CPUs:

  R_k(n)   = sum_{j=1..n} j * S_k(j) * p_k(j-1 | n-1)      per visit
  X(n)     = n / (Z(n) + sum_k A_k R_k(n) + sum_u A_u H_u)
  p_k(j|n) = X(n) * (A_k / M_k) * S_k(j) * p_k(j-1 | n-1),  j = 1..n
  p_k(0|n) = 1 - sum_{j>=1} p_k(j | n)

With c = 0 every S_k is constant and this is the textbook exact MVA
(R = S (1 + Q(n-1))); with N = 1 it is X = 1 / (Z + sum_k A_k H_k).
When c > 0, level n of the recursion uses the n-CPU costs (the 1 - 1/n
miss, and so the n-CPU machine), which makes the result an approximation
of the exact solution of the N-CPU network, accurate to the second order
in c. Service times are taken as exponential (as exact MVA requires); real
critical sections are closer to constant, which halves the residual time
an arriving CPU waits for: the model over-states wait per contention
rather than under-states it.

Outputs at each n: throughput X(n) (operations/s), per-instance lock
utilisation U_k = 1 - p_k(0|n), contentions per operation (an arriving CPU
finds the instance busy with probability 1 - p_k(0 | n-1), the arrival
theorem), wait per operation A_k (R_k - service), and the share of every
CPU's time spent spinning on lock k, X W_k / n.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

KINDS = ("qspinlock", "bitlock")
NS = 1e-9
TAIL = 1e-18  # queue-length probabilities below this are dropped


class ProfileError(Exception):
    pass


@dataclass(frozen=True)
class Lock:
    """One lock class of the profile."""
    name: str
    acquisitions_per_op: float
    hold_ns: float
    instances: int = 1
    kind: str = "qspinlock"
    shared: bool = True  # False: per-CPU or per-inode, never queues

    @property
    def demand_ns(self) -> float:
        """Hold time per operation, every instance together (no hand-off)."""
        return self.acquisitions_per_op * self.hold_ns

    @property
    def instance_demand_ns(self) -> float:
        """Hold time per operation at one instance."""
        return self.demand_ns / self.instances

    def service_ns(self, present: int, handoff_ns: float) -> float:
        """Mean service of one acquisition with `present` CPUs at the instance."""
        if present <= 1:
            return self.hold_ns
        if self.kind == "bitlock":
            return self.hold_ns + handoff_ns * (present - 1)
        return self.hold_ns + handoff_ns


@dataclass(frozen=True)
class Profile:
    think_ns: float
    locks: tuple[Lock, ...]

    @property
    def queued(self) -> tuple[Lock, ...]:
        return tuple(lock for lock in self.locks if lock.shared and lock.acquisitions_per_op > 0)

    @property
    def unshared_ns(self) -> float:
        return sum(lock.demand_ns for lock in self.locks if not lock.shared)

    def bound_ops_per_s(self, cpus: int) -> float:
        """The asymptotic bound min(N / (Z + sum D), 1 / max D), without hand-off."""
        total = self.think_ns + sum(lock.demand_ns for lock in self.locks)
        bound = cpus / (total * NS)
        worst = max((lock.instance_demand_ns for lock in self.queued), default=0.0)
        return min(bound, 1.0 / (worst * NS)) if worst > 0 else bound


@dataclass(frozen=True)
class Point:
    """The model's answer at one CPU count."""
    cpus: int
    ops_per_s: float
    utilization: dict[str, float]  # per instance: share of time the lock is held
    contentions_per_op: dict[str, float]
    wait_ns_per_op: dict[str, float]
    spin_share: dict[str, float]  # share of every CPU's time spent waiting for the lock


@dataclass(frozen=True)
class Prediction:
    profile: Profile
    handoff_ns: float
    points: tuple[Point, ...]  # cpus 1 .. max, in order

    def at(self, cpus: int) -> Point:
        return self.points[cpus - 1]

    @property
    def bottleneck(self) -> str:
        """The lock busiest at the largest CPU count ("" when no lock is shared)."""
        last = self.points[-1].utilization
        if not last:
            return ""
        demands = {lock.name: lock.instance_demand_ns for lock in self.profile.queued}
        return max(last, key=lambda name: (last[name], demands[name]))

    def half_linear_cpus(self) -> int | None:
        """The smallest CPU count at which throughput is below half of linear
        scaling from 1 CPU (None: never, up to the largest CPU count)."""
        one = self.points[0].ops_per_s
        for point in self.points:
            if point.ops_per_s < 0.5 * point.cpus * one:
                return point.cpus
        return None

    def as_json(self, cpus: list[int]) -> dict:
        points = [self.at(n) for n in cpus]
        return {
            "cpus": cpus,
            "ops_per_s": [p.ops_per_s for p in points],
            "bottleneck": self.bottleneck,
            "utilization": {lock.name: [p.utilization[lock.name] for p in points]
                            for lock in self.profile.queued},
        }


@dataclass
class _Station:
    """The marginal queue-length distribution of one instance of a shared lock."""
    lock: Lock
    probabilities: list[float] = field(default_factory=lambda: [1.0])  # p(j | n-1)

    @property
    def visits(self) -> float:
        return self.lock.acquisitions_per_op / self.lock.instances


def solve(profile: Profile, max_cpus: int, handoff_ns: float = 0.0) -> Prediction:
    """Throughput and lock figures at 1 .. max_cpus CPUs."""
    if max_cpus < 1:
        raise ValueError("max_cpus must be at least 1")
    if handoff_ns < 0:
        raise ValueError("handoff_ns must not be negative")
    stations = [_Station(lock) for lock in profile.queued]
    acquisitions = sum(lock.acquisitions_per_op for lock in profile.queued)
    points = []
    for n in range(1, max_cpus + 1):
        think = profile.think_ns + profile.unshared_ns + handoff_ns * (1 - 1 / n) * acquisitions
        services, residence, arrival_service = [], [], []
        for st in stations:
            p = st.probabilities  # p(j | n-1), j = 0 .. n-1 (or fewer: tail dropped)
            s_j = [st.lock.service_ns(j, handoff_ns) for j in range(1, len(p) + 1)]  # S(1..)
            services.append(s_j)
            residence.append(sum(j * s * q for j, (s, q) in enumerate(zip(s_j, p), 1)))
            arrival_service.append(sum(s * q for s, q in zip(s_j, p)))
        cycle = think + sum(st.lock.acquisitions_per_op * r for st, r in zip(stations, residence))
        x = n / (cycle * NS)  # operations per second
        utilization, contentions, wait, spin = {}, {}, {}, {}
        for st, s_j, r, s_arrival in zip(stations, services, residence, arrival_service):
            name = st.lock.name
            busy_at_arrival = 1.0 - st.probabilities[0]
            rate = x * NS * st.visits  # visits per ns to this instance
            new = [rate * s * q for s, q in zip(s_j, st.probabilities)]
            total = sum(new)
            if total > 1.0:  # rounding at saturation: keep a distribution
                new = [q / total for q in new]
                total = 1.0
            # States no CPU will ever reach (a hash bucket holding 40 CPUs)
            # only slow the recursion down: drop the negligible tail.
            while len(new) > 1 and new[-1] < TAIL:
                new.pop()
            st.probabilities = [1.0 - total] + new
            utilization[name] = total
            contentions[name] = st.lock.acquisitions_per_op * busy_at_arrival
            wait[name] = st.lock.acquisitions_per_op * max(0.0, r - s_arrival)
            spin[name] = x * NS * wait[name] / n
        points.append(Point(n, x, utilization, contentions, wait, spin))
    return Prediction(profile, handoff_ns, tuple(points))


# -- profiles as JSON: {"think_ns": Z, "locks": [{...}, ...]} ---------------------------

def _number(value, where: str, *, minimum: float = 0.0, integer: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ProfileError(f"{where}: expected a number, got {value!r}")
    if value < minimum:
        raise ProfileError(f"{where}: must be at least {minimum:g}, got {value!r}")
    if integer and value != int(value):
        raise ProfileError(f"{where}: must be a whole number, got {value!r}")
    return int(value) if integer else float(value)


def profile_from_json(data, source: str) -> Profile:
    """A profile from parsed JSON; errors name `source` and the field."""
    if not isinstance(data, dict):
        raise ProfileError(f"{source}: expected a JSON object with think_ns and locks")
    unknown = set(data) - {"think_ns", "locks"}
    if unknown:
        raise ProfileError(f"{source}: unknown field {sorted(unknown)[0]!r}")
    if "think_ns" not in data:
        raise ProfileError(f"{source}: think_ns: missing")
    think = _number(data["think_ns"], f"{source}: think_ns")
    items = data.get("locks")
    if not isinstance(items, list):
        raise ProfileError(f"{source}: locks: expected a list, got {items!r}")
    locks, names = [], set()
    for i, item in enumerate(items):
        where = f"{source}: locks[{i}]"
        if not isinstance(item, dict):
            raise ProfileError(f"{where}: expected an object")
        unknown = set(item) - {"name", "acquisitions_per_op", "hold_ns", "instances", "kind",
                               "shared"}
        if unknown:
            raise ProfileError(f"{where}.{sorted(unknown)[0]}: unknown field")
        for required in ("name", "acquisitions_per_op", "hold_ns"):
            if required not in item:
                raise ProfileError(f"{where}.{required}: missing")
        name = item["name"]
        if not isinstance(name, str) or not name:
            raise ProfileError(f"{where}.name: expected a non-empty string, got {name!r}")
        if name in names:
            raise ProfileError(f"{where}.name: {name!r} appears twice")
        names.add(name)
        kind = item.get("kind", "qspinlock")
        if kind not in KINDS:
            raise ProfileError(f"{where}.kind: expected one of {', '.join(KINDS)}, got {kind!r}")
        shared = item.get("shared", True)
        if not isinstance(shared, bool):
            raise ProfileError(f"{where}.shared: expected true or false, got {shared!r}")
        locks.append(Lock(
            name=name,
            acquisitions_per_op=_number(item["acquisitions_per_op"],
                                        f"{where}.acquisitions_per_op"),
            hold_ns=_number(item["hold_ns"], f"{where}.hold_ns"),
            instances=int(_number(item.get("instances", 1), f"{where}.instances", minimum=1,
                                  integer=True)),
            kind=kind, shared=shared))
    total = think + sum(lock.demand_ns for lock in locks)
    if total <= 0:
        raise ProfileError(f"{source}: think_ns: an operation must take some time "
                           "(think_ns and every hold_ns are zero)")
    return Profile(think, tuple(locks))


def load_profile(path: Path) -> Profile:
    try:
        data = json.loads(path.read_text())
    except OSError as err:
        raise ProfileError(f"{path}: {err.strerror}") from err
    except json.JSONDecodeError as err:
        raise ProfileError(f"{path}:{err.lineno}: not JSON: {err.msg}") from err
    return profile_from_json(data, str(path))


def profile_to_json(profile: Profile) -> dict:
    return {"think_ns": profile.think_ns,
            "locks": [{"name": lock.name, "acquisitions_per_op": lock.acquisitions_per_op,
                       "hold_ns": lock.hold_ns, "instances": lock.instances,
                       "kind": lock.kind, "shared": lock.shared} for lock in profile.locks]}
