"""The committed reference run: results/reference/, and whether it is current.

A reference is a run's report, charts, tidy table, lock-order conformance
and manifest, with the inputs the report reads (lock-order files, patch
text) and the slide deck, without the raw boot folders. Its manifest holds the sha256
of every patch each kernel was built from, so staleness is a comparison
with the series files of the checkout.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from harness.kernels import series
from harness.run import estimate, tidy
from harness.layout import Layout

KEPT = ("report.md", "report.html", "tidy.tsv", "manifest.json", "lockorder.json")
COPIED = tuple(name for name in KEPT if name != "tidy.tsv")  # the table goes compressed
# What the run used and the report read, where the run has it: the lock-order
# files, the patch text, the code-cost measurements, the -icount rerun
# spread, the slide deck, the scaling model's predictions with the hash
# table sizes they used (the boot folders, not published, no longer give them),
# and the soaks of the run's images (run/records.py).
KEPT_IF_PRESENT = ("lock-order", "series", "code-cost.json", "icount-spread.json",
                   "slides.pdf", "scaling.json", "records.json")


class ReferenceError(Exception):
    pass


@dataclass(frozen=True)
class Staleness:
    kernel: str
    reason: str


def directory(layout: Layout) -> Path:
    return layout.reference


def publish(layout: Layout, run_dir: Path) -> Path:
    """Copy a run's report material into results/reference/ (replacing it)."""
    missing = [name for name in KEPT if not (run_dir / name).exists()]
    if missing:
        raise ReferenceError(f"{run_dir}: missing {', '.join(missing)} (run make report first)")
    target = directory(layout)
    staging = target.with_name("reference.partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name in COPIED:
        shutil.copy2(run_dir / name, staging / name)
    tidy.compress(run_dir / "tidy.tsv", staging / tidy.COMPRESSED)
    for name in KEPT_IF_PRESENT:
        if (run_dir / name).is_dir():
            shutil.copytree(run_dir / name, staging / name)
        elif (run_dir / name).is_file():
            shutil.copy2(run_dir / name, staging / name)
    # How long each kind of step took here: a fresh clone's first estimate.
    (staging / estimate.STEP_TIMES).write_text(
        json.dumps(estimate.step_times_of_run(layout, run_dir), indent=1) + "\n")
    charts = staging / "charts"
    charts.mkdir()
    for chart in sorted((run_dir / "charts").iterdir()):
        if chart.suffix in (".png", ".svg"):
            shutil.copy2(chart, charts / chart.name)
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target


def stale(layout: Layout, manifest: dict) -> list[Staleness]:
    """Kernels of a manifest whose patches differ from the checkout's series."""
    out = []
    for kernel, info in manifest["kernels"].items():
        try:
            current = series.resolve(layout, kernel).patches
        except series.SeriesError as err:
            out.append(Staleness(kernel, str(err)))
            continue
        recorded = [(p["series"], p["file"], p["sha256"]) for p in info["patches"]]
        now = [(p.series, p.path.name, p.sha256) for p in current]
        if recorded != now:
            changed = sorted({f"{s}/{f}" for s, f, _ in set(recorded) ^ set(now)})
            out.append(Staleness(kernel, "patches differ: " + ", ".join(changed)))
    return out


def check(layout: Layout) -> list[Staleness]:
    manifest_path = directory(layout) / "manifest.json"
    if not manifest_path.exists():
        raise ReferenceError(f"{manifest_path} does not exist: no reference run committed")
    return stale(layout, json.loads(manifest_path.read_text()))
