"""The padded-lock sweep: the knob's workload, the host's co-run sampler on real
threads, and the comparison's arithmetic."""

import subprocess
import sys
import textwrap
import time

import pytest

from harness.guest import protocol
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
        while len(padsweep.vcpu_threads(proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(padsweep.vcpu_threads(proc.pid)) == 2
        sampler = padsweep.CoRunSampler()
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
    assert 0.8 < run.wall_s < 1.5 and len(run.ran_s) == 2
    assert all(0 < r <= run.wall_s * 1.05 for r in run.ran_s)
    assert 0.0 <= low <= high <= 1.0 and high * run.wall_s <= min(run.ran_s) * 1.001


def test_the_knob_is_set_and_the_counters_read_around_the_command():
    w = padsweep.workload(3000, 500)
    command = w.command(procs=2, cpus=2, fs="tmpfs", dev="", prefix="/tmp/s01")
    assert command.startswith(f"echo 3000 > {padsweep.KNOB}; cat /proc/padlock; ")
    assert "createunlink -p 2 -n 500" in command and command.endswith("cat /proc/padlock")
    assert w.procs_for(2) == [1, 2] and w.filesystems == ("tmpfs",)


def _out(loops, before, after, ops, elapsed_ns, procs):
    block = "loops {}\nacquisitions {}\ncontentions {}\nheld_ns {}\n"
    return (block.format(loops, *before) + f"result phase=create-unlink ops={ops} "
            f"elapsed_ns={elapsed_ns} procs={procs}\n" + block.format(loops, *after))


def test_the_prediction_is_the_one_worker_utilisation():
    # One worker: 2000 acquisitions held 0.3 s of a 1 s step, U = 0.3.
    one = padsweep.read_step(_out(300, (10, 0, 1000), (2010, 0, 300_001_000), 1000,
                                  1_000_000_000, 1), "s01.out")
    two = padsweep.read_step(_out(300, (2010, 0, 0), (6010, 1300, 0), 2000,
                                  1_200_000_000, 2), "s02.out")
    assert one.utilisation == pytest.approx(0.3) and two.contention == pytest.approx(0.325)
    comparison = padsweep.Comparison(300, one, two, (0.4, 0.9))
    assert comparison.predicted == pytest.approx(0.3)
    assert comparison.error == pytest.approx(0.3 / 0.325 - 1)
    assert comparison.row()["within_aim"]
    assert "| 300 | 0.300 | 0.300 | 0.325 | -8% | 40-90% |" in padsweep.table([comparison])
    with pytest.raises(padsweep.SweepError, match="s03.out"):
        padsweep.read_step("result phase=x ops=1 elapsed_ns=1 procs=1\n", "s03.out")
