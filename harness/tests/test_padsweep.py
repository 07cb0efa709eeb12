"""The padded-lock sweep: the knob's workload, the host's co-run sampler on real
threads, and the comparison's arithmetic."""

import dataclasses
import subprocess
import sys
import textwrap
import time

import pytest

from harness.guest import protocol
from harness.layout import REPO_ROOT
from harness.boot import corun
from harness.run import padsweep

# Two busy threads named like QEMU's vCPU threads, in a process of their own.
BUSY = textwrap.dedent("""
    import threading, time
    def spin(name):
        with open(f"/proc/self/task/{threading.get_native_id()}/comm", "w") as f:
            f.write(name)
        end = time.monotonic() + 3
        while time.monotonic() < end:
            pass
    threads = [threading.Thread(target=spin, args=(f"CPU {i}/TCG",)) for i in range(2)]
    for t in threads: t.start()
    for t in threads: t.join()
""")


class Meter:
    def __init__(self, pid):
        self.pid = pid


def test_the_sampler_reads_the_vcpu_threads_of_a_real_process():
    proc = subprocess.Popen([sys.executable, "-c", BUSY])
    try:
        deadline = time.monotonic() + 5
        while len(corun.vcpu_threads(proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(corun.vcpu_threads(proc.pid)) == 2
        sampler = corun.CoRunSampler()
        sampler.started(Meter(proc.pid))
        sampler.line(f"{protocol.MARK} step s01 begin: busy")
        time.sleep(1.0)
        sampler.line(f"{protocol.MARK} step s01 end: exit 0")
    finally:
        proc.kill()
        proc.wait()
    run = sampler.steps["s01"]
    low, high = run.together
    # Each thread ran at most the wall time; both-at-once is bounded by the shorter.
    # At least the second slept between the marks; a loaded host may add to it.
    assert run.wall_s >= 0.99 and len(run.ran_s) == 2
    assert all(0 < r <= run.wall_s * 1.05 for r in run.ran_s)
    assert 0.0 <= low <= high <= 1.0 and high * run.wall_s <= min(run.ran_s) * 1.001


def test_the_knob_is_set_and_the_counters_read_around_the_command():
    w = padsweep.workload(3000, 500)
    command = w.command(procs=2, cpus=2, fs="tmpfs", dev="", prefix="/tmp/s01")
    assert command.startswith(f"echo 3000 > {padsweep.KNOB}; cat /proc/padlock; ")
    assert "createunlink -p 2 -n 500" in command and command.endswith("cat /proc/padlock")
    assert w.procs_for(2) == [1, 2] and w.filesystems == ("tmpfs",)


CAPTURES = REPO_ROOT / "harness" / "test_data" / "padlock"


def test_a_real_step_output_gives_the_counts_and_the_comparison():
    one = padsweep.read_step((CAPTURES / "loops300-p1.out").read_text(), "p1")
    two = padsweep.read_step((CAPTURES / "loops300-p2.out").read_text(), "p2")
    assert (one.loops, one.procs, one.ops) == (300, 1, 1000)
    assert one.acquisitions == 2012 and one.contentions == 1
    assert one.utilisation == pytest.approx(0.28612724 / 0.45955049)
    assert (two.procs, two.ops) == (2, 2000) and two.acquisitions >= 4000
    comparison = padsweep.Comparison(300, one, two, (0.01, 0.06))
    assert comparison.predicted == one.utilisation
    assert comparison.error == pytest.approx((one.utilisation - two.contention)
                                             / two.contention)
    assert f"| 300 | {one.utilisation:.3f} |" in padsweep.table([comparison])
    none = padsweep.Comparison(300, one, dataclasses.replace(two, contentions=0), (0, 0))
    assert none.error is None and not none.row()["within_aim"]
    assert "| n/a |" in padsweep.table([none])
    with pytest.raises(padsweep.SweepError, match="s03.out"):
        padsweep.read_step("result phase=x ops=1 elapsed_ns=1 procs=1\n", "s03.out")


PERF_CAPTURES = REPO_ROOT / "harness" / "test_data" / "perflock"


def test_perf_lock_contention_rows_are_read_from_a_real_report():
    from harness.run import perflock
    rows = perflock.parse((PERF_CAPTURES / "shared-dir-c2.out").read_text())
    assert len(rows) == 4
    first = rows[0]
    assert (first.contended, first.kind, first.caller) == (9, "rwlock:R", "__do_sys_wait4+0x86")
    assert first.total_wait_ns == pytest.approx(46.42e6) and first.role == ""
    assert sum(r.contended for r in rows) == 22
    (only,) = perflock.parse((PERF_CAPTURES / "create-unlink-c2.out").read_text())
    assert only.kind == "rwlock:R" and only.max_wait_ns == pytest.approx(3.23e6)
    assert not any(r.kind == "spinlock" for r in rows + [only])
