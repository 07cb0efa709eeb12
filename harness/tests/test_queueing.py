"""The queueing model against closed forms, textbook MVA, an exact product-form
solution and hand-computed cases."""

import json
from dataclasses import replace
import math
import time
from decimal import Decimal, getcontext

import pytest

from harness.analysis import machines, queueing
from harness.analysis.queueing import Costs, FixedCosts, Lock, Profile


def textbook_mva(think: float, demands: list[float], n_max: int) -> list[float]:
    """Exact MVA for single-server stations (Lazowska et al., Quantitative System
    Performance, 1984, ch. 6), written independently of the module: X(1..n_max)."""
    queues = [0.0] * len(demands)
    out = []
    for n in range(1, n_max + 1):
        residence = [d * (1 + q) for d, q in zip(demands, queues)]
        x = n / (think + sum(residence))
        queues = [x * r for r in residence]
        out.append(x)
    return out


def _power(poly: list[Decimal], exponent: int, degree: int) -> list[Decimal]:
    """poly ** exponent, truncated after `degree` (repeated squaring)."""
    result = [Decimal(1)] + [Decimal(0)] * degree
    base = poly[:degree + 1] + [Decimal(0)] * (degree + 1 - len(poly))
    while exponent:
        if exponent & 1:
            result = _times(result, base, degree)
        base = _times(base, base, degree)
        exponent >>= 1
    return result


def _times(a: list[Decimal], b: list[Decimal], degree: int) -> list[Decimal]:
    out = [Decimal(0)] * (degree + 1)
    for i, x in enumerate(a):
        if x:
            for j in range(degree + 1 - i):
                out[i + j] += x * b[j]
    return out


def exact_product_form(think: float, stations: list[tuple[float, int, list[float]]],
                       n: int) -> float:
    """X(n) of a closed product-form network: a delay station `think` ns and, per
    station kind, (visits per instance, instances, service S(1..n) in ns), solved by the
    normalising constant G (Buzen's convolution): X(n) = G(n-1) / G(n), in ops/ns.
    Written independently of the module (no mean value analysis)."""
    getcontext().prec = 50
    g = [Decimal(think) ** j / math.factorial(j) for j in range(n + 1)]
    for visits, instances, services in stations:
        f = [Decimal(1)]
        for j in range(1, n + 1):
            f.append(f[-1] * Decimal(visits) * Decimal(services[j - 1]))
        g = _times(g, _power(f, instances, n), n)
    return float(g[n - 1] / g[n])


PROFILES = [
    Profile(1000.0, (Lock("a", 2.0, 50.0), Lock("b", 1.0, 120.0))),
    Profile(0.0, (Lock("only", 1.0, 10.0),)),
    Profile(8000.0, (Lock("hash", 2.0, 40.0, instances=1), Lock("sb", 2.0, 35.0),
                     Lock("lru", 1.0, 20.0), Lock("i_lock", 8.0, 30.0, shared=False))),
]
LINES = Profile(3000.0, (Lock("sb", 2.0, 6.0, lines_from_previous=1.5, lockword_written=0.75),
                         Lock("hash", 2.0, 20.0, cold_lines=1.0),
                         Lock("i_lock", 8.0, 15.0, shared=False, per_inode=True,
                              lines_from_previous=1.0)))


@pytest.mark.parametrize("profile", PROFILES)
def test_no_line_costs_one_instance_equals_textbook_mva(profile):
    prediction = queueing.solve(profile, 64, 0.0)
    think = profile.think_ns + profile.private_ns(Costs(0.0))
    expected = textbook_mva(think, [lock.demand_ns for lock in profile.queued], 64)
    for point, x in zip(prediction.points, expected):
        assert point.ops_per_s == pytest.approx(x / 1e-9, rel=1e-9)


@pytest.mark.parametrize("profile", PROFILES + [LINES])
@pytest.mark.parametrize("machine", machines.MACHINES)
def test_one_cpu_is_one_over_the_operation(profile, machine):
    # At one CPU no line comes from another CPU: instructions, cold lines, blocked time.
    point = queueing.solve(profile, 1, machine).points[0]
    m = machine.memory_ns
    total = profile.think_ns + profile.blocked_ns + sum(
        lock.acquisitions_per_op * (lock.hold_ns + lock.cold_lines * m) for lock in profile.locks)
    assert point.ops_per_s == pytest.approx(1 / (total * 1e-9), rel=1e-12)
    assert all(c == 0 for c in point.contentions_per_op.values())


COSTS = [FixedCosts(0.0), FixedCosts(50.0, 80.0), FixedCosts(200.0, 200.0), *machines.MACHINES]
BIT_BUCKETS = Profile(500.0, (
    Lock("bucket", 2.0, 300.0, instances=16, kind="bitlock", lines_from_previous=1.0),
    Lock("sb", 2.0, 60.0, lockword_written=1.0)))


@pytest.mark.parametrize("profile", PROFILES + [LINES, BIT_BUCKETS])
@pytest.mark.parametrize("costs", COSTS)
def test_throughput_never_beats_the_bounds(profile, costs):
    prediction = queueing.solve(profile, 256, costs)
    assert [v for v in queueing.violations(prediction) if "falls" not in v] == []
    for point in prediction.points:
        assert all(0.0 <= u <= 1.0 for u in point.utilization.values())


@pytest.mark.parametrize("profile", [p for p in PROFILES if p.think_ns > 0] + [LINES])
@pytest.mark.parametrize("costs", COSTS)
def test_throughput_never_falls_with_queued_spinlocks(profile, costs):
    # Not a law of the model: with no work outside the lock (think 0) one CPU keeps
    # the lock's lines and two pay a transfer, and a bit lock collapses (below).
    assert queueing.violations(queueing.solve(profile, 256, costs)) == []


def test_hand_computed_two_cpus_no_line_costs():
    # Z = 1 ns, one lock of 1 ns: n=1: R=1, X=1/2, Q=1/2; n=2: R=1.5, X=2/2.5=0.8.
    prediction = queueing.solve(Profile(1.0, (Lock("l", 1.0, 1.0),)), 2)
    assert prediction.at(2).ops_per_s == pytest.approx(0.8e9)
    # The arriving CPU finds the other at the lock half the time.
    assert prediction.at(2).contentions_per_op["l"] == pytest.approx(0.5)
    assert prediction.at(2).wait_ns_per_op["l"] == pytest.approx(0.5)


def test_hand_computed_queued_lock_with_lines():
    # Z = 10, H = 2, W = 1, s = 1, t = 1, m unused; the 2-CPU network's costs at every
    # level: S(1) = 2 + (1 - 1/2) * 1 * (1 + 1) = 3; S(2) = 2 + 1 * (1 + 1 + 1) = 5.
    # n = 1: X = 1/13, p(1|1) = 3/13. n = 2: R = 1 * 3 * (10/13) + 2 * 5 * (3/13)
    # = 60/13; X = 2 / (10 + 60/13).
    lock = Lock("l", 1.0, 2.0, lines_from_previous=1.0, lockword_written=1.0)
    prediction = queueing.solve(Profile(10.0, (lock,)), 2, FixedCosts(1.0))
    assert prediction.at(1).ops_per_s == pytest.approx(1 / 12 * 1e9)  # one CPU: no transfer
    assert prediction.at(2).ops_per_s == pytest.approx(2 / (10 + 60 / 13) * 1e9)
    # The uncontended transfer is the lock's: with the lock alone busy the model
    # does not exceed 1 / S(1), however many CPUs.
    assert queueing.solve(Profile(0.0, (lock,)), 64, FixedCosts(1.0)).at(64).ops_per_s <= \
        1e9 / 3 * (1 + 1e-9)


def test_hand_computed_bit_lock():
    # Z = 1, H = 1, t = 1, one bit lock, no lines; 2-CPU costs: S(1) = H + (1 - 1/2) t
    # = 1.5, S(2) = H + t = 2. n=1: X = 1/2.5, p(1|1) = 0.6.
    # n=2: R = 1 * 1.5 * 0.4 + 2 * 2 * 0.6 = 3; X = 2 / 4.
    prediction = queueing.solve(Profile(1.0, (Lock("b", 1.0, 1.0, kind="bitlock"),)), 2, 1.0)
    assert prediction.at(1).ops_per_s == pytest.approx(0.5e9)
    assert prediction.at(2).ops_per_s == pytest.approx(0.5e9)


def _exact_stations(profile: Profile, costs: Costs, n: int):
    return [(lock.acquisitions_per_op / profile.instances(lock), profile.instances(lock),
             [lock.service_ns(j, n, costs) for j in range(1, n + 1)])
            for lock in profile.queued]


@pytest.mark.parametrize("kind, limit", [("qspinlock", 0.001), ("bitlock", 0.03)])
@pytest.mark.parametrize("machine", machines.MACHINES)
def test_load_dependent_stations_agree_with_the_exact_product_form(kind, limit, machine):
    # A lock near saturation at 16-64 CPUs, with the lines of a list section, and a
    # spread table of bit-lock buckets: level n of the recursion uses n-CPU costs,
    # the exact solution the N-CPU network's.
    profiles = [Profile(20000.0, (Lock("l", 2.0, 30.0, kind=kind, lines_from_previous=1.5,
                                       lockword_written=0.75, cold_lines=0.5),)),
                Profile(2000.0, (Lock("b", 3.0, 40.0, instances=8, kind=kind,
                                      lines_from_previous=1.0, cold_lines=1.0),))]
    worst = 0.0
    for profile in profiles:
        prediction = queueing.solve(profile, 64, machine)
        for n in (2, 4, 8, 16, 32, 64):
            costs = machine.at(n)
            exact = exact_product_form(profile.think_ns + profile.private_ns(costs),
                                       _exact_stations(profile, costs, n), n)
            worst = max(worst, abs(prediction.at(n).ops_per_s * 1e-9 / exact - 1))
    assert worst < limit


def test_the_exact_solution_is_exact_where_mva_is():
    # No line costs: MVA and the convolution must agree to rounding.
    profile = Profile(1000.0, (Lock("a", 2.0, 50.0), Lock("b", 1.0, 120.0, instances=4)))
    prediction = queueing.solve(profile, 32, 0.0)
    exact = exact_product_form(1000.0, _exact_stations(profile, Costs(0.0), 32), 32)
    assert prediction.at(32).ops_per_s * 1e-9 == pytest.approx(exact, rel=1e-12)


def test_bit_lock_collapses_where_a_queued_lock_levels_off():
    locks = lambda kind: Profile(2000.0, (Lock("l", 1.0, 100.0, kind=kind),))  # noqa: E731
    queued = queueing.solve(locks("qspinlock"), 128, 100.0)
    bit = queueing.solve(locks("bitlock"), 128, 100.0)
    # The queued lock levels off at 1 / (H + 3 t), an MCS queue's hand-off; the bit
    # lock loses throughput with every CPU.
    assert queued.at(128).ops_per_s == pytest.approx(
        1 / ((100 + queueing.MCS_HANDOFF_TRANSFERS * 100) * 1e-9), rel=0.02)
    assert bit.at(128).ops_per_s < 0.5 * max(p.ops_per_s for p in bit.points)
    assert queueing.violations(queued) == []
    assert any("falls" in v for v in queueing.violations(bit))


def test_a_contended_hand_off_costs_more_only_when_contended():
    lock = Lock("l", 1.0, 100.0, lines_from_previous=1.0)
    idle, loaded = Costs(100.0, 0.0), Costs(100.0, 0.0, contended_factor=2.0)
    # Found free, or handed to the one pending waiter: kappa changes nothing for j = 1.
    assert lock.service_ns(1, 8, loaded) == lock.service_ns(1, 8, idle)
    assert lock.service_ns(2, 8, loaded) == 100 + 100 * (1 + 3 * 1)
    # An MCS queue: three lock-word transfers, each (1 + kappa) t.
    assert lock.service_ns(5, 8, idle) == 100 + 100 * (1 + 3)
    assert lock.service_ns(5, 8, loaded) == 100 + 100 * (1 + 3 * 3)
    bit = Lock("b", 1.0, 100.0, kind="bitlock")
    assert bit.service_ns(5, 8, loaded) == 100 + 100 * 4 * 3


def test_buckets_spread_the_demand():
    one = Profile(1000.0, (Lock("hash", 2.0, 200.0, instances=1),))
    many = Profile(1000.0, (Lock("hash", 2.0, 200.0, instances=1024),))
    x_one = queueing.solve(one, 64).at(64).ops_per_s
    x_many = queueing.solve(many, 64).at(64).ops_per_s
    assert x_one == pytest.approx(1 / 400e-9, rel=0.01)  # capped by the one lock
    assert x_many == pytest.approx(64 / 1400e-9, rel=0.01)  # nearly linear


def test_unshared_locks_never_queue_until_the_workers_share_inodes():
    profile = Profile(1000.0, (Lock("i_lock", 8.0, 100.0, shared=False, per_inode=True),))
    prediction = queueing.solve(profile, 32, 200.0)
    assert prediction.at(32).ops_per_s == pytest.approx(32 / 1800e-9)
    assert prediction.bottleneck == "" and prediction.half_linear_cpus() is None
    hot = queueing.solve(Profile(1000.0, profile.locks, shared_inodes=1), 32, 200.0)
    assert hot.bottleneck == "i_lock" and hot.at(32).ops_per_s < 0.5 * 32 / 1800e-9
    two = queueing.solve(Profile(1000.0, profile.locks, shared_inodes=2), 32, 200.0)
    assert hot.at(32).ops_per_s < two.at(32).ops_per_s


def test_blocked_time_is_a_delay():
    profile = Profile(1000.0, (Lock("l", 1.0, 100.0),), blocked_ns=9000.0)
    prediction = queueing.solve(profile, 8, 50.0)
    assert prediction.at(1).ops_per_s == pytest.approx(1 / 10100e-9)
    # Blocked CPUs do not hold the lock: at 8 CPUs the lock is barely busy.
    assert prediction.at(8).ops_per_s == pytest.approx(8 / 10100e-9, rel=0.02)


def test_a_nested_lock_lengthens_the_outer_hold():
    # The outer's 40 ns hold a nested section's 10 ns on every other acquisition; apart,
    # the outer's own 35 ns and the same sb list sections.
    inner = Lock("sb", 1.0, 10.0, lines_from_previous=1.0, inside="hash", inside_share=1.0)
    nested = Profile(2000.0, (Lock("hash", 2.0, 40.0), inner))
    apart = Profile(2000.0, (Lock("hash", 2.0, 35.0),
                             Lock("sb", 1.0, 10.0, lines_from_previous=1.0)))
    for n in (1, 8, 64):
        a, b = queueing.solve(nested, n, 100.0).at(n), queueing.solve(apart, n, 100.0).at(n)
        if n == 1:  # nothing to wait for: the same operation
            assert a.ops_per_s == pytest.approx(b.ops_per_s)
        else:  # the hash lock is held while waiting for the sb list: busier, slower
            assert a.utilization["hash"] > b.utilization["hash"]
            assert a.ops_per_s < b.ops_per_s
    # The bounds hold; throughput may fall past saturation, the outer hold growing
    # with the inner lock's queue (the collapse nesting is known for).
    assert [v for v in queueing.violations(queueing.solve(nested, 256, 100.0))
            if "falls" not in v] == []


def test_profile_json_round_trip_and_output_shape(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"think_ns": 1000, "locks": [
        {"name": "sb", "acquisitions_per_op": 2, "hold_ns": 50, "instances": 1,
         "kind": "qspinlock"},
        {"name": "hash", "acquisitions_per_op": 1, "hold_ns": 40, "instances": 4096,
         "kind": "bitlock"}]}))
    profile = queueing.load_profile(path)
    assert queueing.profile_from_json(queueing.profile_to_json(profile), "x") == profile
    out = queueing.solve(profile, 8, 100.0).as_json([1, 2, 8])
    assert out["cpus"] == [1, 2, 8] and len(out["ops_per_s"]) == 3
    assert out["bottleneck"] == "sb" and set(out["utilization"]) == {"sb", "hash"}
    assert out["ops_per_s"][0] == pytest.approx(1 / 1140e-9)
    for profile in (LINES, Profile(10.0, LINES.locks, blocked_ns=5.0, shared_inodes=3)):
        assert queueing.profile_from_json(queueing.profile_to_json(profile), "x") == profile


@pytest.mark.parametrize("content, message", [
    ("{", "p.json:1: not JSON"),
    ("[]", "expected a JSON object"),
    ('{"locks": []}', "think_ns: missing"),
    ('{"think_ns": "x", "locks": []}', "think_ns: expected a number"),
    ('{"think_ns": 1, "locks": {}}', "locks: expected a list"),
    ('{"think_ns": 1, "locks": [{"name": "a", "hold_ns": 1}]}',
     "locks[0].acquisitions_per_op: missing"),
    ('{"think_ns": 1, "locks": [{"name": "a", "acquisitions_per_op": 1, "hold_ns": -2}]}',
     "locks[0].hold_ns: must be at least 0"),
    ('{"think_ns": 1, "locks": [{"name": "a", "acquisitions_per_op": 1, "hold_ns": 1,'
     ' "instances": 0.5}]}', "locks[0].instances: must be at least 1"),
    ('{"think_ns": 1, "locks": [{"name": "a", "acquisitions_per_op": 1, "hold_ns": 1,'
     ' "kind": "mutex"}]}', "locks[0].kind: expected one of qspinlock, bitlock"),
    ('{"think_ns": 1, "locks": [{"name": "a", "acquisitions_per_op": 1, "hold_ns": 1,'
     ' "colour": 1}]}', "locks[0].colour: unknown field"),
    ('{"think_ns": 1, "locks": [{"name": "a", "acquisitions_per_op": 1, "hold_ns": 1},'
     ' {"name": "a", "acquisitions_per_op": 1, "hold_ns": 1}]}', "locks[1].name: 'a' appears"),
    ('{"think_ns": 0, "locks": []}', "an operation must take some time"),
    ('{"think_ns": 1, "locks": [{"name": "a", "acquisitions_per_op": 1, "hold_ns": 1,'
     ' "lockword_written": 2}]}', "locks[0].lockword_written: must be at most 1"),
    ('{"think_ns": 1, "locks": [{"name": "a", "acquisitions_per_op": 1, "hold_ns": 1,'
     ' "inside": "b"}]}', "locks[0].inside: no lock named 'b'"),
    ('{"think_ns": 1, "locks": [{"name": "a", "acquisitions_per_op": 1, "hold_ns": 1,'
     ' "inside": "b"}, {"name": "b", "acquisitions_per_op": 1, "hold_ns": 1, "inside": "a"}]}',
     "locks nest in a cycle"),
    ('{"think_ns": 1, "shared_inodes": 0, "locks": []}', "shared_inodes: must be at least 1"),
])
def test_bad_profiles_name_the_file_and_the_field(tmp_path, content, message):
    path = tmp_path / "p.json"
    path.write_text(content)
    with pytest.raises(queueing.ProfileError) as err:
        queueing.load_profile(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_solver_is_fast_enough_for_a_report():
    # 256 CPUs, a big hash table and five other locks: the report solves hundreds.
    profile = Profile(8000.0, tuple(Lock(f"l{i}", 2.0, 40.0, lines_from_previous=1.0)
                                    for i in range(5))
                      + (Lock("hash", 2.0, 40.0, instances=131072, kind="bitlock"),))
    started = time.perf_counter()
    queueing.solve(profile, 256, machines.by_key("4s"))
    assert time.perf_counter() - started < 2.0
    assert math.isfinite(queueing.solve(profile, 256, 100.0).at(256).ops_per_s)


def test_failed_trylocks_cost_their_loop_and_grow_with_the_odds_of_a_held_lock():
    hot = Lock("i_lock", 4.0, 200.0, shared=False, per_inode=True,
               retries_at_two=0.5, retry_ns=300.0)
    shared = Profile(5000.0, (hot,), shared_inodes=1)
    never = Profile(5000.0, (replace(hot, retries_at_two=0.0),), shared_inodes=1)
    one, two = (queueing.solve(p, 16, 100.0) for p in (shared, never))
    # One CPU never fails a trylock; with two, 0.5 failures of 300 ns per op.
    assert one.at(1).ops_per_s == two.at(1).ops_per_s
    assert 1e9 / one.at(2).ops_per_s > 1e9 / two.at(2).ops_per_s
    # The odds of meeting the inode held grow with the CPUs, and so do the failures.
    slower = [two.at(n).ops_per_s / one.at(n).ops_per_s for n in (2, 8, 16)]
    assert slower[0] < slower[1] < slower[2]
    assert queueing.violations(one) == []
    # A private lock's measured failures stay what they were at two CPUs.
    private = Profile(5000.0, (hot,))
    cost = [n * 1e9 / queueing.solve(private, n, 100.0).at(n).ops_per_s for n in (2, 16)]
    assert cost[0] == pytest.approx(cost[1])
