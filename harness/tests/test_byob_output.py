"""The numbers of outside programs, from the records of a real debug boot
(harness/test_data/byob/README.md says how they were captured)."""

import dataclasses

import pytest

from harness import lockorder
from harness.boot import channel, measure
from harness.guest import plan, workloads
from harness.layout import REPO_ROOT

DATA = REPO_ROOT / "harness" / "test_data" / "byob"
MAINLINE = lockorder.parse(lockorder.MAINLINE_FILE)
NAMES = ("stress-dentry", "dbench", "fsmark-0b", "stress-inode-flags")


@pytest.fixture(scope="module")
def boot():
    known = workloads.load_all(DATA / "workloads")
    steps = plan.make_steps([(known[name], "ext4", 2) for name in NAMES])
    received = channel.parse((DATA / "captured-mainline-debug-c2-ext4-p2.results.raw")
                             .read_bytes())
    assert received.damaged == ()
    return steps, received


def figures(numbers: measure.StepNumbers) -> dict[tuple[str, str, str], float]:
    return {(f.phase, f.lock, f.metric): f.value for f in numbers.figures}


def test_stress_ng_rows_and_exact_counts_of_its_window(boot):
    steps, received = boot
    numbers = measure.step_numbers(steps[0], received, MAINLINE)
    assert numbers.error == "" and numbers.exit_code == 0 and numbers.lockstat_valid
    got = figures(numbers)
    # stress-ng's own figures, from its stderr: 8192 bogo ops at 713.81 per second.
    assert got["dentry", "", "ops"] == 8192
    assert got["dentry", "", "throughput"] == 713.81
    # One dentry bogo op creates and unlinks a file: on ext4 that is 2 inode-hash
    # and 2 sb-list acquisitions (docs/design.md section 6), here within 1%: the
    # window opened at the dispatch line and closed at the metrics header.
    assert got["dentry", "hash", "acquisitions_per_op"] == pytest.approx(2.0, rel=0.01)
    assert got["dentry", "sb_list", "acquisitions_per_op"] == pytest.approx(2.0, rel=0.01)
    assert got["dentry", "i_lock", "acquisitions_per_op"] == pytest.approx(11.0, rel=0.01)


def test_dbench_ops_add_up_over_its_table_and_rate_is_the_window(boot):
    steps, received = boot
    got = figures(measure.step_numbers(steps[1], received, MAINLINE))
    assert got["dbench", "", "ops"] == 7022  # the sum of its operation table
    window = measure.Window.parse(received.text("s02.window"))
    assert got["dbench", "", "elapsed"] == window.window_s == pytest.approx(4.03, abs=0.01)
    assert got["dbench", "", "throughput"] == pytest.approx(7022 / window.window_s)
    assert got["dbench", "", "throughput_mb_s"] == 18.3086
    assert got["dbench", "", "max_latency_ms"] == 59.725
    assert got["dbench", "i_lock", "acquisitions_per_op"] > 0


def test_fs_mark_phases_each_with_its_own_lock_window(boot):
    steps, received = boot
    numbers = measure.step_numbers(steps[2], received, MAINLINE)
    got = figures(numbers)
    for phase in ("create", "traverse", "unlink"):
        assert got[phase, "", "ops"] == 2000
        assert got[phase, "", "throughput"] > 0
    # Creating an ext4 file takes the inode-hash lock once, unlinking it once
    # more on the final iput and once at eviction: exact within half a percent.
    assert got["create", "hash", "acquisitions_per_op"] == pytest.approx(1.0, rel=0.005)
    assert got["unlink", "sb_list", "acquisitions_per_op"] == pytest.approx(2.0, rel=0.005)
    # fs_mark's own report: files/s summed over its processes, and its overhead.
    assert got["fs_mark", "", "throughput"] == 1615.0
    assert got["fs_mark", "", "app_overhead_us"] == 545266
    assert ("fs_mark", "hash", "acquisitions_per_op") not in got  # no window of its own


def test_output_none_reports_wall_time_and_exit_status_and_no_throughput(boot):
    steps, received = boot
    numbers = measure.step_numbers(steps[3], received, MAINLINE)
    got = figures(numbers)
    assert numbers.error == ""
    assert got["stress-inode-flags", "", "exit_code"] == 0
    assert got["stress-inode-flags", "", "elapsed"] == pytest.approx(10.37, abs=0.01)
    assert not any(metric == "throughput" for _, _, metric in got)
    assert "no throughput" in numbers.note
    assert got["stress-inode-flags", "i_lock", "acquisitions"] > 0  # counts, not per op


def replaced(received: channel.Received, name: str, data: bytes | None) -> channel.Received:
    records = tuple(r for r in received.records if r.name != name)
    if data is not None:
        records += (channel.Record(name, data),)
    return dataclasses.replace(received, records=records)


def test_declared_output_that_is_missing_is_an_error(boot):
    steps, received = boot
    silent = replaced(received, "s03.out", b"fs_mark crashed before printing anything\n")
    numbers = measure.step_numbers(steps[2], silent, MAINLINE)
    assert "printed no 'result phase=...' line" in numbers.error
    no_match = replaced(received, "s01.err", b"stress-ng: info: something else\n")
    numbers = measure.step_numbers(steps[0], no_match, MAINLINE)
    assert "stress-dentry.wl:11: no line of the output matched" in numbers.error


def test_a_window_that_never_opened_is_an_error(boot):
    steps, received = boot
    unopened = replaced(received, "s02.window",
                        b"command_ns=4544337600 window_ns=0 opened=0 closed=0\n")
    numbers = measure.step_numbers(steps[1], unopened, MAINLINE)
    assert numbers.error == ("the lock-start line ('releasing clients') never appeared in "
                             "the output")
