"""Progress lines on stderr: what is happening, which step of how many, time left.

stdout stays for the JSON the subcommands print.
"""

from __future__ import annotations

import sys
import time


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def format_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Steps:
    """Counts steps of a known total and estimates the time left from those done."""

    def __init__(self, total: int, what: str) -> None:
        self.total = total
        self.what = what
        self.done = 0
        self.started = time.monotonic()

    def start(self, label: str, left_s: float | None = None) -> None:
        """left_s: the caller's own estimate of the time left, if it has a better one."""
        eta = ""
        if left_s is not None:
            eta = f", about {format_duration(left_s)} left"
        elif self.done:
            per_step = (time.monotonic() - self.started) / self.done
            eta = f", about {format_duration(per_step * (self.total - self.done))} left"
        say(f"{self.what} {self.done + 1}/{self.total}: {label}{eta}")

    def finish(self) -> None:
        self.done += 1
