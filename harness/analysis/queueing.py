"""A closed queueing model of the inode cache's locks: throughput at N CPUs.

This is a prediction, not a measurement. It turns a lock profile measured at
1 CPU (how often each icache lock is taken per operation, its critical
section's instructions and the cache lines it moves, how long the rest of an
operation takes) into throughput, lock utilisation, contention and spin time
at any CPU count. docs/scaling-model.md explains where every input comes
from and how the model was validated.

The network
-----------
N CPUs each run the workload's operations back to back: a closed network
with N customers. One operation is

  * Z (``think_ns``) plus B (``blocked_ns``: grace-period, I/O and other
    waits, measured as wall minus CPU time): a delay station;
  * for every shared lock class k: A_k acquisitions; a class with M_k
    instances (hash buckets, or the inodes the workers share for per-inode
    locks) is M_k single-server FCFS stations visited A_k / M_k times each;
  * locks never shared between CPUs (per-CPU lists, per-inode locks of
    workers that share no inode): part of the delay, they never queue.

Service time: the lines a critical section moves
------------------------------------------------
One acquisition costs its instructions H, its cold lines C times m (memory),
and the lines it must take from the CPU that held the lock before: the lock
word itself and W data lines that an earlier critical section of the same
lock instance wrote last, each a transfer t. With j CPUs at the instance on
arrival's completion (the holder and j - 1 waiters):

  * j = 1 (found free): S(1) = H + C m + (1 - 1/n) t (1 + W); the previous
    holder was another CPU with probability 1 - 1/n. The lock is taken
    while those lines arrive, so the transfer is the lock's time;
  * j >= 2, queued spinlock (qspinlock): S(j) = H + C m + t (1 + W + s).
    One waiter spins on the pending bit, or the head of the MCS queue on the
    lock word: the release hands it the line, one transfer. The new holder
    then writes the next waiter's MCS node (kernel/locking/qspinlock.c,
    arch_mcs_spin_unlock_contended() after "locked:"), a store that drains
    from the store buffer while the section runs: it is not charged;
  * j >= 2, test-and-set bit lock (hlist_bl: every waiter polls the word):
    S(j) = H + C m + t (j - 1 + W + s), the hand-off growing with the
    waiters as in Boyd-Wickizer, Kaashoek, Morris and Zeldovich, "Non-scalable
    locks are dangerous" (Linux Symposium 2012, section 4);

s (``lockword_written``) is the share of sections that write data on the
lock word's own line: a spinning waiter holds that line, so the write costs
one more transfer. t and m are the target machine's (machines.py) at n CPUs.

Nested locks: a lock taken inside another (``inside``) lengthens the outer
hold by its residence less its instructions (which the outer's measured
instructions already hold). At each n the inner station is solved first: its
residence depends only on the n - 1 solution, so one pass reaches the fixed
point of "the outer hold includes the inner wait".

Solution: exact mean value analysis with load-dependent stations
-------------------------------------------------------------------
(Reiser and Lavenberg, JACM 1980; the load-dependent form as in Menasce,
Almeida and Dowdy, "Performance by Design", 2004.) For n = 1 .. N, with
p_k(j | n) the probability that an instance of lock k holds j CPUs:

  R_k(n)   = sum_{j=1..n} j * S_k(j) * p_k(j-1 | n-1)      per visit
  X(n)     = n / (Z + B + sum_private A H + sum_k A_k R_k - nested part)
  p_k(j|n) = X(n) * (A_k / M_k) * S_k(j) * p_k(j-1 | n-1),  j = 1..n
  p_k(0|n) = 1 - sum_{j>=1} p_k(j | n)

With t = m = 0 every S_k is constant and this is the textbook exact MVA.
Level n of the recursion uses the n-CPU costs (the 1 - 1/n, the machine's
t(n)), which makes the result an approximation of the N-CPU network's exact
product-form solution; the tests bound its error. Service times are taken as
exponential (as exact MVA requires); real critical sections are closer to
constant, which halves the residual time an arriving CPU waits for.

Outputs at each n: throughput X(n), per-instance utilisation 1 - p_k(0|n),
contentions per operation A_k (1 - p_k(0 | n-1)) (arrival theorem), wait per
operation A_k (R_k - service), and the share of every CPU's time spent
waiting for lock k, X W_k / n.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

KINDS = ("qspinlock", "bitlock")
NS = 1e-9
TAIL = 1e-18  # queue-length probabilities below this are dropped


class ProfileError(Exception):
    pass


@dataclass(frozen=True)
class Costs:
    """What one cache line costs at some CPU count of the target machine."""
    transfer_ns: float  # t: a line another CPU wrote last
    memory_ns: float = 0.0  # m: a line nobody touched for a long time
    # kappa: a lock-word transfer of a contended hand-off costs (1 + kappa) t, the
    # line being wanted by the waiters and the arrivals at once (fitted on one
    # calibration family: anchors.py; 0 is the idle-fabric transfer).
    contended_factor: float = 0.0
    # The lock-word transfers of a hand-off through an MCS queue (handoff_transfers);
    # the solver checks set it to 1 to tell the model's falls from a defect.
    mcs_transfers: int = 3


# The lock-word line transfers on the path from one holder to the next, with j
# CPUs at the instance (the holder and j - 1 waiters):
#   qspinlock, j = 2: the waiter spins on the pending bit; the release hands it
#     the line once and its clear_pending_set_locked() finds it exclusive.
#   qspinlock, j >= 3: the head of the MCS queue reads the released word (1),
#     then, holding the lock, reads its node's next pointer, which the
#     successor wrote when it queued (1), and writes the successor's node,
#     on which the successor spins (1) (kernel/locking/qspinlock.c, after
#     "locked:"); a store, but the section's first atomic or the release must
#     wait for it to drain.
#   bit lock: every waiter polls the word and races for it with an atomic,
#     so a hand-off moves it once per waiter (Boyd-Wickizer et al., 2012).
MCS_HANDOFF_TRANSFERS = 3


def handoff_transfers(kind: str, present: int, mcs: int = MCS_HANDOFF_TRANSFERS) -> int:
    if kind == "bitlock":
        return present - 1
    return 1 if present == 2 else mcs


class CostModel(Protocol):
    def at(self, cpus: int) -> Costs: ...


@dataclass(frozen=True)
class FixedCosts:
    """The same t and m at every CPU count (a --handoff-ns of the command line)."""
    transfer_ns: float
    memory_ns: float = 0.0
    contended_factor: float = 0.0

    def at(self, cpus: int) -> Costs:
        return Costs(self.transfer_ns, self.memory_ns, self.contended_factor)


@dataclass(frozen=True)
class Lock:
    """One lock class of the profile."""
    name: str
    acquisitions_per_op: float
    hold_ns: float  # the critical section's instructions (and any fixed time)
    instances: int = 1
    kind: str = "qspinlock"
    shared: bool = True  # False: per-CPU or per-inode, never queues
    lines_from_previous: float = 0.0  # W
    lockword_written: float = 0.0  # s, 0..1
    cold_lines: float = 0.0  # C
    per_inode: bool = False  # queues over the profile's shared inodes, if any
    inside: str = ""  # the lock held around this one's nested acquisitions
    inside_share: float = 0.0  # the share of acquisitions made inside it
    # Failed trylocks of this lock per operation, measured with two CPUs, and what
    # one costs (the retry loop's instructions: dropping the outer lock, cpu_relax,
    # taking it again). A queued lock's failures scale with the odds b / (1 - b) of
    # finding an instance held, from their value at two CPUs, where the one other
    # CPU holds it with the model's probability b2: with n CPUs, each of the n - 1
    # others does, b = 1 - (1 - b2)^(n - 1). That depends on n alone, not on the
    # level's queues, which the retries' own time would feed back into. A private
    # lock's failures stay what they were at two CPUs.
    retries_at_two: float = 0.0
    retry_ns: float = 0.0

    @property
    def demand_ns(self) -> float:
        """Instructions per operation, every instance together."""
        return self.acquisitions_per_op * self.hold_ns

    def fixed_ns(self, costs: Costs) -> float:
        """What an acquisition costs whoever held the lock before."""
        return self.hold_ns + self.cold_lines * costs.memory_ns

    def service_ns(self, present: int, cpus: int, costs: Costs, nested_ns: float = 0.0) -> float:
        """Mean service of one acquisition with `present` CPUs at the instance."""
        base = self.fixed_ns(costs) + nested_ns
        if present <= 1:
            return base + (1 - 1 / cpus) * costs.transfer_ns * (1 + self.lines_from_previous)
        handoff = handoff_transfers(self.kind, present, costs.mcs_transfers) \
            * (1 + costs.contended_factor)
        return base + costs.transfer_ns * (handoff + self.lines_from_previous
                                           + self.lockword_written)


@dataclass(frozen=True)
class Profile:
    think_ns: float
    locks: tuple[Lock, ...]
    blocked_ns: float = 0.0  # waits off the CPU per operation (wall minus CPU)
    shared_inodes: int | None = None  # the inodes all workers share (hot-inode workloads)

    def queues(self, lock: Lock) -> bool:
        if lock.acquisitions_per_op <= 0:
            return False
        return lock.shared or (lock.per_inode and self.shared_inodes is not None)

    def instances(self, lock: Lock) -> int:
        if lock.per_inode and not lock.shared and self.shared_inodes is not None:
            return self.shared_inodes
        return lock.instances

    @property
    def queued(self) -> tuple[Lock, ...]:
        return tuple(lock for lock in self.locks if self.queues(lock))

    def private_ns(self, costs: Costs) -> float:
        """The never-queued locks' time per operation (less nested instructions, which
        the outer lock's instructions hold)."""
        return sum(lock.acquisitions_per_op * lock.fixed_ns(costs) - self.nested_ns(lock)
                   for lock in self.locks if not self.queues(lock))

    def nested_ns(self, lock: Lock) -> float:
        """Instructions per operation of `lock` run inside its outer lock's section."""
        return self.nested_share(lock) * lock.acquisitions_per_op * lock.hold_ns

    def cycle_share(self, lock: Lock, residence: float) -> float:
        """What a queued lock adds to an operation outside its outer lock's residence:
        nested in a queued outer, the outer's residence holds its wait; nested in a
        private one, the outer's instructions hold its instructions."""
        share = self.nested_share(lock)
        own = lock.acquisitions_per_op * residence
        if share and self.queues(self._outer(lock)):
            return own * (1 - share)
        return own - self.nested_ns(lock)

    def bound_ops_per_s(self, cpus: int, costs: Costs) -> float:
        """min(N / (Z + B + sum D), 1 / max D) with each station's cheapest service:
        no network can do better (the asymptotic bounds)."""
        cheapest = {lock.name: min(lock.service_ns(j, cpus, costs) for j in (1, 2))
                    for lock in self.queued}
        total = self.think_ns + self.blocked_ns + self.private_ns(costs) + sum(
            self.cycle_share(lock, cheapest[lock.name]) for lock in self.queued)
        bound = cpus / (total * NS)
        worst = max((lock.acquisitions_per_op / self.instances(lock) * cheapest[lock.name]
                     for lock in self.queued), default=0.0)
        return min(bound, 1.0 / (worst * NS)) if worst > 0 else bound

    def _outer(self, lock: Lock) -> Lock:
        return next(o for o in self.locks if o.name == lock.inside)

    def nested_share(self, lock: Lock) -> float:
        """The share of `lock`'s acquisitions made inside another lock of the profile."""
        present = any(o.name == lock.inside and o.acquisitions_per_op > 0 for o in self.locks)
        return lock.inside_share if lock.inside and present else 0.0

    def busiest(self, cpus: int, costs: Costs) -> tuple[str, float]:
        """The lock whose instance demand is largest, and 1 / its A S(1)."""
        best = max(self.queued, default=None, key=lambda lock: lock.acquisitions_per_op
                   / self.instances(lock) * lock.service_ns(1, cpus, costs))
        if best is None:
            return "", math.inf
        demand = best.acquisitions_per_op / self.instances(best) * best.service_ns(1, cpus, costs)
        return best.name, 1.0 / (demand * NS)


@dataclass(frozen=True)
class Point:
    """The model's answer at one CPU count."""
    cpus: int
    ops_per_s: float
    utilization: dict[str, float]  # per instance: share of time the lock is held
    contentions_per_op: dict[str, float]
    wait_ns_per_op: dict[str, float]
    spin_share: dict[str, float]  # share of every CPU's time spent waiting for the lock
    bound_ops_per_s: float  # the asymptotic bound with this CPU count's costs


@dataclass(frozen=True)
class Prediction:
    profile: Profile
    costs: CostModel
    points: tuple[Point, ...]  # cpus 1 .. max, in order

    def at(self, cpus: int) -> Point:
        return self.points[cpus - 1]

    @property
    def bottleneck(self) -> str:
        """The lock busiest at the largest CPU count ("" when no lock is shared)."""
        last = self.points[-1].utilization
        if not last:
            return ""
        n = self.points[-1].cpus
        costs = self.costs.at(n)
        demands = {lock.name: lock.acquisitions_per_op / self.profile.instances(lock)
                   * lock.service_ns(1, n, costs) for lock in self.profile.queued}
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
    visits: float  # per operation, at one instance
    probabilities: list[float] = field(default_factory=lambda: [1.0])  # p(j | n-1)
    services: list[float] = field(default_factory=list)  # S(1..) at this level
    residence: float = 0.0  # per visit, at this level
    arrival_service: float = 0.0
    busy_at_two: float | None = None  # b2: an arrival finds the instance held, two CPUs


def _odds(busy: float) -> float:
    return busy / (1.0 - busy) if busy < 1.0 else math.inf


def _retry_ns(lock: Lock, station: _Station | None, n: int) -> float:
    """What failed trylocks of `lock` add to an operation with n CPUs."""
    if lock.retries_at_two <= 0 or n < 2:
        return 0.0
    failures = lock.retries_at_two
    b2 = station.busy_at_two if station is not None else None
    if b2:
        busy = 1.0 - (1.0 - b2) ** (n - 1)
        failures *= min(_odds(busy) / _odds(b2), RETRY_CAP)
    return failures * lock.retry_ns


def _nesting_order(profile: Profile) -> list[Lock]:
    """The queued locks, every inner one before the lock it is nested in."""
    queued = {lock.name: lock for lock in profile.queued}
    order: list[Lock] = []

    def depth(lock: Lock, seen: tuple[str, ...] = ()) -> int:
        inners = [i for i in queued.values() if i.inside == lock.name]
        if lock.name in seen:
            raise ProfileError(f"locks nest in a cycle: {' -> '.join(seen + (lock.name,))}")
        return 1 + max((depth(i, seen + (lock.name,)) for i in inners), default=0)

    for lock in sorted(queued.values(), key=depth):
        order.append(lock)
    return order


def _level(stations: list[_Station], n: int, costs: Costs) -> None:
    """Service and residence of every station at n CPUs, inner locks first."""
    for st in stations:
        nested = sum(inner.lock.inside_share * inner.lock.acquisitions_per_op
                     / st.lock.acquisitions_per_op
                     * (inner.residence - inner.lock.hold_ns)
                     for inner in stations if inner.lock.inside == st.lock.name)
        p = st.probabilities  # p(j | n-1), j = 0 .. n-1 (or fewer: tail dropped)
        st.services = [st.lock.service_ns(j, n, costs, nested) for j in range(1, len(p) + 1)]
        st.residence = sum(j * s * q for j, (s, q) in enumerate(zip(st.services, p), 1))
        st.arrival_service = sum(s * q for s, q in zip(st.services, p))


def _update(st: _Station, x: float) -> float:
    """p(j | n) from the throughput at n; returns the utilisation."""
    rate = x * NS * st.visits  # visits per ns to this instance
    new = [rate * s * q for s, q in zip(st.services, st.probabilities)]
    total = sum(new)
    if total > 1.0:  # rounding at saturation: keep a distribution
        new = [q / total for q in new]
        total = 1.0
    # States no CPU will ever reach (a hash bucket holding 40 CPUs) only slow
    # the recursion down: drop the negligible tail.
    while len(new) > 1 and new[-1] < TAIL:
        new.pop()
    st.probabilities = [1.0 - total] + new
    return total


def as_costs(costs: CostModel | float) -> CostModel:
    return FixedCosts(float(costs)) if isinstance(costs, (int, float)) else costs


# A lock nearly always held would make its failed trylocks' odds unbounded; past this
# many times their two-CPU rate the operation is all retries, and the retry loop's
# own queueing (not modelled) would govern it.
RETRY_CAP = 1000.0
# Up to this many CPUs every count is solved by a recursion of its own, with that
# count's costs at every level (exact for the product-form network of N CPUs);
# beyond, the recursion goes on from there with each level's costs. The (1 - 1/n)
# of a found-free section changes by less than 1/EXACT_CPUS past that point, so the
# error against the exact solution stays small (harness/tests/test_queueing.py).
EXACT_CPUS = 16


def _step(profile: Profile, stations: list[_Station], n: int, cpus: int,
          costs: Costs) -> Point:
    """One level of the recursion: n CPUs in the network, costs of `cpus` CPUs."""
    if costs.transfer_ns < 0 or costs.memory_ns < 0:
        raise ValueError("line costs must not be negative")
    _level(stations, cpus, costs)
    if n == 2:
        for st in stations:
            st.busy_at_two = 1.0 - st.probabilities[0]
    by_name = {st.lock.name: st for st in stations}
    cycle = profile.think_ns + profile.blocked_ns + profile.private_ns(costs) + sum(
        profile.cycle_share(st.lock, st.residence) for st in stations) + sum(
        _retry_ns(lock, by_name.get(lock.name), n) for lock in profile.locks)
    x = n / (cycle * NS)  # operations per second
    utilization, contentions, wait, spin = {}, {}, {}, {}
    for st in stations:
        name = st.lock.name
        busy_at_arrival = 1.0 - st.probabilities[0]
        utilization[name] = _update(st, x)
        contentions[name] = st.lock.acquisitions_per_op * busy_at_arrival
        wait[name] = st.lock.acquisitions_per_op * max(0.0, st.residence - st.arrival_service)
        spin[name] = x * NS * wait[name] / n
    return Point(n, x, utilization, contentions, wait, spin,
                 profile.bound_ops_per_s(cpus, costs))


def _stations(profile: Profile) -> list[_Station]:
    return [_Station(lock, lock.acquisitions_per_op / profile.instances(lock))
            for lock in _nesting_order(profile)]


def solve(profile: Profile, max_cpus: int, costs: CostModel | float = 0.0) -> Prediction:
    """Throughput and lock figures at 1 .. max_cpus CPUs; `costs` is a machine
    (machines.Machine), FixedCosts, or a hand-off in ns (t alone, m = 0)."""
    if max_cpus < 1:
        raise ValueError("max_cpus must be at least 1")
    model = as_costs(costs)
    points: list[Point] = []
    stations: list[_Station] = []
    for target in range(1, min(max_cpus, EXACT_CPUS) + 1):
        here = model.at(target)
        stations = _stations(profile)
        for n in range(1, target + 1):
            point = _step(profile, stations, n, target, here)
        points.append(point)
    for n in range(EXACT_CPUS + 1, max_cpus + 1):
        points.append(_step(profile, stations, n, n, model.at(n)))
    return Prediction(profile, model, tuple(points))


# -- checks every prediction of a run must pass (docs/scaling-model.md) --------------------

# A section that finds the lock free is cheaper than a queued one (by s t, and by
# the 1/n chance that it took the lock from itself), so a lock near saturation
# serves a little faster than its queued rate and throughput falls by parts per
# ten thousand as CPUs are added (at most 6e-5 over the reference's cases). Falls
# below this share, far under the two significant digits the report prints, are
# not counted; anything larger is a defect (or a bit lock's collapse, or nesting).
MONOTONE_TOLERANCE = 1e-3


@dataclass(frozen=True)
class _FlatHandoff:
    """A cost model whose MCS queue hands off like a pending waiter (one transfer,
    no contended factor): the solver checks' control."""
    model: CostModel

    def at(self, cpus: int) -> Costs:
        costs = self.model.at(cpus)
        return Costs(costs.transfer_ns, costs.memory_ns, 0.0, 1)


def violations(prediction: Prediction, rel: float = 1e-9) -> list[str]:
    """Where throughput exceeds the asymptotic bound or 1 / (A S) of the busiest lock,
    or falls as CPUs are added while no lock's service grew: a solver defect. A fall
    while the busiest lock's 1 / (A S) shrinks is the model's own prediction (the
    lines a hand-off moves cost more once other CPUs hold the lock: piggin's one anon
    inode), not a defect; so is a fall that the MCS queue's dearer hand-off or the
    failed trylocks' growing odds explain (it disappears when that hand-off costs what
    a pending waiter's does and nothing retries)."""
    found = _violations(prediction, rel)
    profile = prediction.profile
    if any("falls" in v for v in found) and (
            any(lock.kind == "qspinlock" for lock in profile.queued)
            or any(lock.retries_at_two for lock in profile.locks)):
        # The control: hand-offs that cost a pending waiter's, and no failed trylocks
        # (their odds grow with the CPU count by design).
        plain = replace(profile, locks=tuple(replace(lock, retries_at_two=0.0)
                                             for lock in profile.locks))
        flat = solve(plain, prediction.points[-1].cpus, _FlatHandoff(prediction.costs))
        if not any("falls" in v for v in _violations(flat, rel)):
            found = [v for v in found if "falls" not in v]
    return found


def _violations(prediction: Prediction, rel: float) -> list[str]:
    out = []
    previous, previous_cap = 0.0, math.inf
    for point in prediction.points:
        name, cap = prediction.profile.busiest(point.cpus, prediction.costs.at(point.cpus))
        slower_lock = bool(name) and cap < previous_cap * (1 - MONOTONE_TOLERANCE)
        if point.ops_per_s < previous * (1 - MONOTONE_TOLERANCE) and not slower_lock:
            out.append(f"throughput falls from {previous:.6g} to {point.ops_per_s:.6g} "
                       f"at {point.cpus} CPUs")
        if point.ops_per_s > point.bound_ops_per_s * (1 + rel):
            out.append(f"throughput {point.ops_per_s:.6g} above the bound "
                       f"{point.bound_ops_per_s:.6g} at {point.cpus} CPUs")
        if name and point.ops_per_s > cap * (1 + rel):
            out.append(f"throughput {point.ops_per_s:.6g} above 1/(A S) of {name}, {cap:.6g}, "
                       f"at {point.cpus} CPUs")
        # After a fall the lock explains, the level it fell to is the one to hold.
        previous = point.ops_per_s if slower_lock else max(previous, point.ops_per_s)
        if name:
            previous_cap = min(previous_cap, cap)
    return out


# -- profiles as JSON: {"think_ns": Z, "locks": [{...}, ...]} ---------------------------

LOCK_FIELDS = {"name", "acquisitions_per_op", "hold_ns", "instances", "kind", "shared",
               "lines_from_previous", "lockword_written", "cold_lines", "per_inode", "inside",
               "inside_share", "retries_at_two", "retry_ns"}
PROFILE_FIELDS = {"think_ns", "locks", "blocked_ns", "shared_inodes"}


def _number(value, where: str, *, minimum: float = 0.0, maximum: float = math.inf,
            integer: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ProfileError(f"{where}: expected a number, got {value!r}")
    if value < minimum:
        raise ProfileError(f"{where}: must be at least {minimum:g}, got {value!r}")
    if value > maximum:
        raise ProfileError(f"{where}: must be at most {maximum:g}, got {value!r}")
    if integer and value != int(value):
        raise ProfileError(f"{where}: must be a whole number, got {value!r}")
    return int(value) if integer else float(value)


def _flag(item: dict, key: str, where: str, default: bool) -> bool:
    value = item.get(key, default)
    if not isinstance(value, bool):
        raise ProfileError(f"{where}.{key}: expected true or false, got {value!r}")
    return value


def _lock_from_json(item, where: str) -> Lock:
    if not isinstance(item, dict):
        raise ProfileError(f"{where}: expected an object")
    unknown = set(item) - LOCK_FIELDS
    if unknown:
        raise ProfileError(f"{where}.{sorted(unknown)[0]}: unknown field")
    for required in ("name", "acquisitions_per_op", "hold_ns"):
        if required not in item:
            raise ProfileError(f"{where}.{required}: missing")
    name = item["name"]
    if not isinstance(name, str) or not name:
        raise ProfileError(f"{where}.name: expected a non-empty string, got {name!r}")
    kind = item.get("kind", "qspinlock")
    if kind not in KINDS:
        raise ProfileError(f"{where}.kind: expected one of {', '.join(KINDS)}, got {kind!r}")
    inside = item.get("inside", "")
    if not isinstance(inside, str):
        raise ProfileError(f"{where}.inside: expected a lock name, got {inside!r}")
    number = lambda key, **kw: _number(item.get(key, 0.0), f"{where}.{key}", **kw)  # noqa: E731
    return Lock(
        name=name, acquisitions_per_op=number("acquisitions_per_op"),
        hold_ns=number("hold_ns"),
        instances=int(_number(item.get("instances", 1), f"{where}.instances", minimum=1,
                              integer=True)),
        kind=kind, shared=_flag(item, "shared", where, True),
        lines_from_previous=number("lines_from_previous"),
        lockword_written=number("lockword_written", maximum=1.0),
        cold_lines=number("cold_lines"), per_inode=_flag(item, "per_inode", where, False),
        inside=inside, inside_share=number("inside_share", maximum=1.0),
        retries_at_two=number("retries_at_two"), retry_ns=number("retry_ns"))


def _check_nesting(locks: list[Lock], source: str) -> None:
    names = {lock.name for lock in locks}
    for i, lock in enumerate(locks):
        if lock.inside and lock.inside not in names:
            raise ProfileError(f"{source}: locks[{i}].inside: no lock named {lock.inside!r}")
        if lock.inside == lock.name:
            raise ProfileError(f"{source}: locks[{i}].inside: a lock cannot nest in itself")
    try:
        _nesting_order(Profile(0.0, tuple(locks)))
    except ProfileError as err:
        raise ProfileError(f"{source}: {err}") from None


def profile_from_json(data, source: str) -> Profile:
    """A profile from parsed JSON; errors name `source` and the field."""
    if not isinstance(data, dict):
        raise ProfileError(f"{source}: expected a JSON object with think_ns and locks")
    unknown = set(data) - PROFILE_FIELDS
    if unknown:
        raise ProfileError(f"{source}: unknown field {sorted(unknown)[0]!r}")
    if "think_ns" not in data:
        raise ProfileError(f"{source}: think_ns: missing")
    think = _number(data["think_ns"], f"{source}: think_ns")
    blocked = _number(data.get("blocked_ns", 0.0), f"{source}: blocked_ns")
    shared_inodes = data.get("shared_inodes")
    if shared_inodes is not None:
        shared_inodes = int(_number(shared_inodes, f"{source}: shared_inodes", minimum=1,
                                    integer=True))
    items = data.get("locks")
    if not isinstance(items, list):
        raise ProfileError(f"{source}: locks: expected a list, got {items!r}")
    locks, names = [], set()
    for i, item in enumerate(items):
        lock = _lock_from_json(item, f"{source}: locks[{i}]")
        if lock.name in names:
            raise ProfileError(f"{source}: locks[{i}].name: {lock.name!r} appears twice")
        names.add(lock.name)
        locks.append(lock)
    _check_nesting(locks, source)
    if think + blocked + sum(lock.demand_ns for lock in locks) <= 0:
        raise ProfileError(f"{source}: think_ns: an operation must take some time "
                           "(think_ns and every hold_ns are zero)")
    return Profile(think, tuple(locks), blocked, shared_inodes)


def load_profile(path: Path) -> Profile:
    try:
        data = json.loads(path.read_text())
    except OSError as err:
        raise ProfileError(f"{path}: {err.strerror}") from err
    except json.JSONDecodeError as err:
        raise ProfileError(f"{path}:{err.lineno}: not JSON: {err.msg}") from err
    return profile_from_json(data, str(path))


def profile_to_json(profile: Profile) -> dict:
    out: dict = {"think_ns": profile.think_ns, "blocked_ns": profile.blocked_ns,
                 "locks": [{"name": lock.name, "acquisitions_per_op": lock.acquisitions_per_op,
                            "hold_ns": lock.hold_ns, "instances": lock.instances,
                            "kind": lock.kind, "shared": lock.shared,
                            "lines_from_previous": lock.lines_from_previous,
                            "lockword_written": lock.lockword_written,
                            "cold_lines": lock.cold_lines, "per_inode": lock.per_inode,
                            "inside": lock.inside, "inside_share": lock.inside_share,
                            "retries_at_two": lock.retries_at_two, "retry_ns": lock.retry_ns}
                           for lock in profile.locks]}
    if profile.shared_inodes is not None:
        out["shared_inodes"] = profile.shared_inodes
    return out
