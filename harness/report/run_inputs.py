"""What a run used, read from the run folder, so a report regenerated later
says what the run saw rather than what the checkout holds today.

    RUN_DIR/lock-order/NAME.lock-order   the lock-order files the run was checked
                                         against (written by the run); a run without
                                         them falls back to the checkout's file, and
                                         the report says so
    RUN_DIR/series/NAME/PATCH            the patch text of every series the run built,
                                         copied here the first time a report of the
                                         run is written, each checked against the
                                         sha256 the manifest recorded
    RUN_DIR/icount-spread.json           the measured rerun spread of -icount rates
                                         the verdicts were judged with, copied from
                                         the checkout's results/icount-spread/ the
                                         first time
"""

from __future__ import annotations

import hashlib
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from harness import lockorder
from harness.analysis import rerun
from harness.kernels import series
from harness.layout import Layout

LOCK_ORDER_DIR = "lock-order"
SERIES_DIR = "series"
SPREAD_FILE = "icount-spread.json"
# The measurement committed with the checkout (harness/run/icount_spread.py).
CHECKOUT_SPREAD = Path("results") / "icount-spread" / "boots.json"


@dataclass(frozen=True)
class LockOrderSource:
    kernel: str
    path: Path
    shown_as: str  # how the report names the file
    from_run: bool  # False: today's checkout, the run kept no copy
    order: lockorder.LockOrder | None  # None: no file at all


def lock_order(layout: Layout, run_dir: Path, kernel: str,
               recorded: str | None) -> LockOrderSource:
    """The lock-order file a kernel of this run was checked against.

    recorded: the path relative to the repository that lockorder.json names
    (the run's own record of which file it used)."""
    series_name = kernel.split("@", 1)[0]
    for name in (kernel, series_name):
        copy = run_dir / LOCK_ORDER_DIR / f"{name}.lock-order"
        if copy.is_file():
            return LockOrderSource(kernel, copy, f"{LOCK_ORDER_DIR}/{copy.name} of this run",
                                   True, lockorder.parse(copy))
    path = layout.repo / recorded if recorded else layout.design_file(series.spec_of(kernel),
                                                                      "lock-order")
    shown = str(path.relative_to(layout.repo)) if path.is_relative_to(layout.repo) else str(path)
    order = lockorder.parse(path) if path.is_file() else None
    return LockOrderSource(kernel, path, f"{shown} of today's checkout", False, order)


class PatchMismatch(Exception):
    pass


@dataclass(frozen=True)
class RunPatch:
    series: str
    index: int  # 1-based within its series
    file: str
    sha256: str
    subject: str
    path: Path | None  # the copy in the run folder; None when it could not be had


def series_of_run(manifest: dict) -> dict[str, list[dict]]:
    """Each series' own patches as the run's manifest lists them, in order."""
    out: dict[str, list[dict]] = {}
    for info in manifest["kernels"].values():
        for p in info["patches"]:
            entries = out.setdefault(p["series"], [])
            if all(e["file"] != p["file"] for e in entries):
                entries.append(p)
    return out


def stable_fixes(manifest: dict) -> list[dict]:
    """The fixes of 6.1 itself that every kernel of the run carries, mainline included
    (series-stable), as the manifest lists them: none in a run of stock 6.1."""
    return series_of_run(manifest).get(series.STABLE, [])


def source_phrase(manifest: dict) -> str:
    """What every kernel of the run is built on, mainline included: stock 6.1, or 6.1
    plus the stable fixes, named."""
    version = ", ".join(sorted({k["kernel_version"] for k in manifest["kernels"].values()}))
    fixes = stable_fixes(manifest)
    if not fixes:
        return f"stock {version}"
    named = "; ".join('"' + re.sub(r"^\s*\[PATCH[^]]*\]\s*", "", p["subject"]) + '"'
                      for p in fixes)
    return (f"{version} plus {len(fixes)} fix{'es' if len(fixes) > 1 else ''} of 6.1's own "
            f"(series-{series.STABLE}: {named}), so mainline is not stock 6.1")


def subject_of(path: Path) -> str:
    """The Subject of a format-patch mail, continuation lines joined, without [PATCH n/m]."""
    lines = path.read_text(errors="replace").splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Subject:"):
            text = line[len("Subject:"):]
            for more in lines[i + 1:]:
                if not more.startswith((" ", "\t")):
                    break
                text += " " + more.strip()
            return re.sub(r"^\s*\[PATCH[^]]*\]\s*", "", text).strip()
    return path.name


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def patches(layout: Layout, run_dir: Path, manifest: dict) -> dict[str, list[RunPatch]]:
    """The run's patches, from RUN_DIR/series/, copied there from the checkout
    when missing and the checkout still holds the same bytes."""
    out: dict[str, list[RunPatch]] = {}
    for name, entries in series_of_run(manifest).items():
        kept = run_dir / SERIES_DIR / name
        found = []
        for index, p in enumerate(entries, 1):
            copy = kept / p["file"]
            if not copy.is_file():
                source = layout.series_dir(name) / p["file"]
                if source.is_file() and _sha256(source) == p["sha256"]:
                    kept.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(source, copy)
            if copy.is_file() and _sha256(copy) != p["sha256"]:
                raise PatchMismatch(f"{copy}: sha256 differs from the one manifest.json "
                                    f"recorded for {name}/{p['file']}")
            found.append(RunPatch(name, index, p["file"], p["sha256"],
                                  subject_of(copy) if copy.is_file() else p.get("subject", ""),
                                  copy if copy.is_file() else None))
        out[name] = found
    return out


def rerun_spread(layout: Layout, run_dir: Path) -> rerun.RerunSpread | None:
    """The -icount rerun spread this run's report uses: the run's copy, made from the
    checkout's measurement the first time; None when neither exists."""
    copy = run_dir / SPREAD_FILE
    if not copy.is_file():
        measured = layout.repo / CHECKOUT_SPREAD
        if not measured.is_file():
            return None
        shutil.copy2(measured, copy)
    return rerun.parse(copy, f"{SPREAD_FILE} of this run (from {CHECKOUT_SPREAD})")
