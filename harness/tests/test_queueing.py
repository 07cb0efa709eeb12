"""The queueing model against closed forms, textbook MVA and hand-computed cases."""

import json
import math

import pytest

from harness.analysis import queueing
from harness.analysis.queueing import Lock, Profile


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


PROFILES = [
    Profile(1000.0, (Lock("a", 2.0, 50.0), Lock("b", 1.0, 120.0))),
    Profile(0.0, (Lock("only", 1.0, 10.0),)),
    Profile(8000.0, (Lock("hash", 2.0, 40.0, instances=1), Lock("sb", 2.0, 35.0),
                     Lock("lru", 1.0, 20.0), Lock("i_lock", 8.0, 30.0, shared=False))),
]


@pytest.mark.parametrize("profile", PROFILES)
def test_zero_handoff_one_instance_equals_textbook_mva(profile):
    prediction = queueing.solve(profile, 64, handoff_ns=0.0)
    think = profile.think_ns + profile.unshared_ns
    expected = textbook_mva(think, [lock.demand_ns for lock in profile.queued], 64)
    for point, x in zip(prediction.points, expected):
        assert point.ops_per_s == pytest.approx(x / 1e-9, rel=1e-9)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("handoff", [0.0, 100.0])
def test_one_cpu_is_one_over_think_plus_demands(profile, handoff):
    point = queueing.solve(profile, 1, handoff).points[0]
    total = profile.think_ns + sum(lock.demand_ns for lock in profile.locks)
    assert point.ops_per_s == pytest.approx(1 / (total * 1e-9), rel=1e-12)
    assert all(c == 0 for c in point.contentions_per_op.values())


@pytest.mark.parametrize("profile", PROFILES + [
    Profile(500.0, (Lock("bucket", 2.0, 300.0, instances=16, kind="bitlock"),
                    Lock("sb", 2.0, 60.0))),
    Profile(100.0, (Lock("tas", 1.0, 80.0, kind="bitlock"),))])
@pytest.mark.parametrize("handoff", [0.0, 50.0, 200.0])
def test_throughput_never_beats_the_asymptotic_bounds(profile, handoff):
    prediction = queueing.solve(profile, 256, handoff)
    for point in prediction.points:
        assert point.ops_per_s <= profile.bound_ops_per_s(point.cpus) * (1 + 1e-9)
        assert all(0.0 <= u <= 1.0 for u in point.utilization.values())


def test_hand_computed_two_cpus_no_handoff():
    # Z = 1 ns, one lock of 1 ns: n=1: R=1, X=1/2, Q=1/2; n=2: R=1.5, X=2/2.5=0.8.
    prediction = queueing.solve(Profile(1.0, (Lock("l", 1.0, 1.0),)), 2)
    assert prediction.at(2).ops_per_s == pytest.approx(0.8e9)
    # The arriving CPU finds the other at the lock half the time.
    assert prediction.at(2).contentions_per_op["l"] == pytest.approx(0.5)
    assert prediction.at(2).wait_ns_per_op["l"] == pytest.approx(0.5)


def test_hand_computed_bit_lock_with_handoff():
    # Z = 1, H = 1, c = 1, one bit lock. n=1: X = 1/2, p(1|1) = 1/2.
    # n=2: Z(2) = 1 + c(1 - 1/2) = 1.5; S(1) = 1, S(2) = H + c = 2;
    # R = 1*S(1)*p(0|1) + 2*S(2)*p(1|1) = 0.5 + 2 = 2.5; X = 2 / 4 = 0.5:
    # the second CPU buys nothing.
    prediction = queueing.solve(Profile(1.0, (Lock("b", 1.0, 1.0, kind="bitlock"),)), 2, 1.0)
    assert prediction.at(1).ops_per_s == pytest.approx(0.5e9)
    assert prediction.at(2).ops_per_s == pytest.approx(0.5e9)


def test_bit_lock_collapses_where_a_queued_lock_levels_off():
    locks = lambda kind: Profile(2000.0, (Lock("l", 1.0, 100.0, kind=kind),))
    queued = queueing.solve(locks("qspinlock"), 128, 100.0)
    bit = queueing.solve(locks("bitlock"), 128, 100.0)
    # Both saturate near 1 / (H + c); the bit lock then loses throughput with every CPU.
    assert queued.at(128).ops_per_s == pytest.approx(1 / 200e-9, rel=0.02)
    assert bit.at(128).ops_per_s < 0.5 * max(p.ops_per_s for p in bit.points)
    assert queued.at(128).ops_per_s >= queued.at(64).ops_per_s * 0.999


def test_buckets_spread_the_demand():
    one = Profile(1000.0, (Lock("hash", 2.0, 200.0, instances=1),))
    many = Profile(1000.0, (Lock("hash", 2.0, 200.0, instances=1024),))
    x_one = queueing.solve(one, 64).at(64).ops_per_s
    x_many = queueing.solve(many, 64).at(64).ops_per_s
    assert x_one == pytest.approx(1 / 400e-9, rel=0.01)  # capped by the one lock
    assert x_many == pytest.approx(64 / 1400e-9, rel=0.01)  # nearly linear


def test_unshared_locks_never_queue():
    profile = Profile(1000.0, (Lock("i_lock", 8.0, 100.0, shared=False),))
    prediction = queueing.solve(profile, 32, 200.0)
    assert prediction.at(32).ops_per_s == pytest.approx(32 / 1800e-9)
    assert prediction.bottleneck == "" and prediction.half_linear_cpus() is None


def test_bottleneck_and_half_linear_point():
    profile = Profile(1000.0, (Lock("small", 1.0, 10.0), Lock("big", 2.0, 100.0)))
    prediction = queueing.solve(profile, 64)
    assert prediction.bottleneck == "big"
    n = prediction.half_linear_cpus()
    one = prediction.at(1).ops_per_s
    assert prediction.at(n).ops_per_s < 0.5 * n * one <= prediction.at(n - 1).ops_per_s * 2 * \
        (n / (n - 1))
    assert prediction.at(n - 1).ops_per_s >= 0.5 * (n - 1) * one
    # Spin share is the time every CPU waits: with the lock saturated most time is waiting.
    assert prediction.at(64).spin_share["big"] > 0.8


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
])
def test_bad_profiles_name_the_file_and_the_field(tmp_path, content, message):
    path = tmp_path / "p.json"
    path.write_text(content)
    with pytest.raises(queueing.ProfileError) as err:
        queueing.load_profile(path)
    assert str(path) in str(err.value) and message in str(err.value)


def test_solver_is_fast_enough_for_a_report():
    # 256 CPUs, a big hash table and five other locks: the report solves hundreds.
    import time
    profile = Profile(8000.0, tuple(Lock(f"l{i}", 2.0, 40.0) for i in range(5))
                      + (Lock("hash", 2.0, 40.0, instances=131072, kind="bitlock"),))
    started = time.perf_counter()
    queueing.solve(profile, 256, 100.0)
    assert time.perf_counter() - started < 2.0
    assert math.isfinite(queueing.solve(profile, 256, 100.0).at(256).ops_per_s)
