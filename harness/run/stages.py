"""The stages of a run and how long each took, for its manifest.

A stage is one of: tree (extracting the kernel source), image (one per
kernel and flavour, built or found), initramfs, probe (the accelerator),
boots (per flavour and mode, the wall time of its boots), finish (tidy
table and lock orders) and report. The first estimate of the whole run,
and when it was printed, are kept beside them so that a run says how far
off it was.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Estimate:
    at_s: float  # seconds after the run started that it was printed
    total_s: float  # the whole run, builds, measuring and report included


@dataclass
class Stages:
    entries: list[dict] = field(default_factory=list)

    @contextmanager
    def timed(self, stage: str, **what):
        """Time the block; it may add to the stage's entry, which it is given."""
        entry = {"stage": stage, **what}
        started = time.monotonic()
        try:
            yield entry
        finally:
            entry["seconds"] = round(time.monotonic() - started, 1)
            self.entries.append(entry)
