"""Did a boot's vCPUs really run at once? The host's view, per step.

On a 2-core host QEMU's vCPU threads share the cores with everything else: a
step timed at 2 vCPUs may have run them one at a time for much of it, and a
lock can only be contended while both run. A watcher samples the vCPU
threads' run time (their schedstat) every SAMPLE_S while each step runs and
bounds the share of the step both ran at once: at least the sum of their runs
less the interval, at most the shorter run (per sample, summed).
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.boot import qemu
from harness.guest import protocol

SAMPLE_S = 0.005
VCPU_THREAD = re.compile(r"CPU (\d+)/(TCG|KVM)")


def vcpu_threads(pid: int) -> list[int]:
    """QEMU's vCPU threads (named "CPU N/TCG" or "CPU N/KVM"), in vCPU order."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            match = VCPU_THREAD.fullmatch((task / "comm").read_text().strip())
        except OSError:
            continue
        if match:
            found.append((int(match.group(1)), int(task.name)))
    return [tid for _, tid in sorted(found)]


def run_ns(pid: int, tid: int) -> int:
    """Nanoseconds the thread has run on a CPU (the first field of its schedstat)."""
    return int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])


@dataclass
class CoRun:
    """Both vCPU threads of a step: how long each ran, and how long both at once."""
    wall_s: float = 0.0
    ran_s: list[float] = field(default_factory=list)
    both_low_s: float = 0.0  # sum over samples of max(0, r1 + r2 - interval)
    both_high_s: float = 0.0  # sum over samples of min(r1, r2)

    def add(self, ran: list[float], interval: float) -> None:
        """One sample: each vCPU thread's run time over an interval of `interval` s."""
        # schedstat charges run time when the thread is next accounted, so a sample
        # can carry time run before it: no thread runs longer than the sample, and
        # without this clamp the lower bound could pass the upper.
        deltas = [min(d, interval) for d in ran]
        self.wall_s += interval
        self.ran_s = [r + d for r, d in zip(self.ran_s, deltas)]
        if len(deltas) >= 2:
            self.both_low_s += max(0.0, deltas[0] + deltas[1] - interval)
            self.both_high_s += min(deltas[0], deltas[1])

    @property
    def together(self) -> tuple[float, float]:
        """(lower, upper) bound of the share of the step both vCPUs ran."""
        if not self.wall_s:
            return (0.0, 0.0)
        return (self.both_low_s / self.wall_s, self.both_high_s / self.wall_s)


class CoRunSampler:
    """A boot watcher: samples the vCPU threads' run time while each step runs."""

    def __init__(self) -> None:
        self.pid = 0
        self.steps: dict[str, CoRun] = {}
        self._stop: threading.Event | None = None
        self._thread: threading.Thread | None = None

    def started(self, meter: qemu.CpuMeter) -> None:
        self.pid = meter.pid

    def line(self, text: str) -> None:
        mark = protocol.step_mark(text)
        if not mark:
            return
        if mark[1] == "begin":
            self._begin(mark[0])
        else:
            self._end()

    def _begin(self, step: str) -> None:
        self._end()
        self._stop = threading.Event()
        record = self.steps.setdefault(step, CoRun())
        self._thread = threading.Thread(target=self._sample, args=(record, self._stop),
                                        daemon=True)
        self._thread.start()

    def _end(self) -> None:
        if self._stop is not None and self._thread is not None:
            self._stop.set()
            self._thread.join()
        self._stop = self._thread = None

    def _sample(self, record: CoRun, stop: threading.Event) -> None:
        try:
            threads = vcpu_threads(self.pid)
            before = [run_ns(self.pid, t) for t in threads]
            last = time.monotonic()
            record.ran_s = [0.0] * len(threads)
            while not stop.wait(SAMPLE_S):
                now, runs = time.monotonic(), [run_ns(self.pid, t) for t in threads]
                record.add([(b - a) * 1e-9 for a, b in zip(before, runs)], now - last)
                before, last = runs, now
        except OSError:
            return  # QEMU ended meanwhile
