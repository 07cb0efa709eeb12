"""How long the image builds of a run will take, said before the first one starts.

A build compiles the whole tree when its flavour's object folder holds no
kernel yet (full), and what the patches changed otherwise (incremental:
every series changes include/linux/fs.h, so about half of the tree). A
compiler cache with no kernel in it (a fresh machine) makes every compile
miss (cold). The time of a build is the median of, first found:

- warm cache: earlier builds of the same flavour and kind in the image
  store (their meta.json);
- the builds of the same flavour, kind and cache state that the reference
  run made (its manifest's timing stages: a reference measured from a
  fresh clone holds cold ones);
- COLD_BUILD_S, measured here.
"""

from __future__ import annotations

import json
import os
import statistics
from dataclasses import dataclass
from pathlib import Path

from harness.kernels.kbuild import KernelImage, is_built
from harness.layout import Layout

# Seconds of builds from an empty compiler cache, -j2 on 2 cores, measured by
# the cold make compare of a fresh clone on a quiet host, 2026-12-06 (NOTES.md,
# "Issue 30"). Full (empty object folder): mainline perf 564 s, debug 570 s.
# Incremental (the next kernel in the folder; base's and the series' header
# changes rebuild most of the tree, piggin 1138 perf and 1176 debug steps of
# about 1440): chinner and piggin perf 391 and 353 s, debug 515 and 477 s (the
# medians here). Sanitize (KASAN): mainline full 24m00s and chinner
# incremental 8m58s on 2026-12-06 with 4-vCPU guests beside them, not measured
# quiet. The reference run's own builds replace them once it was measured from
# a fresh clone (reference_history).
COLD_BUILD_S = {("perf", "full"): 564.0, ("debug", "full"): 570.0,
                ("perf", "incremental"): 372.0, ("debug", "incremental"): 496.0,
                ("sanitize", "full"): 1440.0, ("sanitize", "incremental"): 538.0}
# Extracting linux-source-6.1 into the build folder and committing it: 36 s in
# the same cold run (83 s with the host busy earlier that day).
TREE_S = 36.0
# A compiler cache with fewer results than this holds no kernel tree: cold.
WARM_CACHE_RESULTS = 700


@dataclass(frozen=True)
class PlannedBuild:
    image: KernelImage
    kind: str  # full, incremental, or "" when the image is built already
    cache: str  # cold or warm: the compiler cache when the run began
    seconds: float  # estimated; 0 for a built image


def cache_results(ccache: Path, enough: int = WARM_CACHE_RESULTS) -> int:
    """Compile results in a ccache folder (files ending in R), counting up to enough."""
    found = 0
    for _, _, names in os.walk(ccache):
        found += sum(1 for name in names if name.endswith("R"))
        if found >= enough:
            break
    return found


def store_history(images: Path) -> dict[tuple[str, str], list[float]]:
    """(flavour, kind) -> seconds of the builds of the image store."""
    out: dict[tuple[str, str], list[float]] = {}
    for meta_path in sorted(images.glob("*/meta.json")):
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError):
            continue
        if meta.get("build_kind") and meta.get("build_seconds"):
            out.setdefault((meta["flavour"], meta["build_kind"]), []).append(
                float(meta["build_seconds"]))
    return out


def reference_history(layout: Layout, cache: str) -> dict[tuple[str, str], list[float]]:
    """(flavour, kind) -> seconds of the builds the reference run made with such a cache."""
    for folder in (layout.reference, layout.committed_reference):
        manifest = folder / "manifest.json"
        if manifest.exists():
            stages = json.loads(manifest.read_text()).get("timing", {}).get("stages", [])
            out: dict[tuple[str, str], list[float]] = {}
            for s in stages:
                if s.get("stage") == "image" and s.get("built") and s.get("cache") == cache:
                    out.setdefault((s["flavour"], s["kind"]), []).append(float(s["seconds"]))
            return out
    return {}


def plan(layout: Layout, images: list[KernelImage]) -> list[PlannedBuild]:
    """Each image of a run, in build order, with the kind and time of its build."""
    cache = "cold" if cache_results(layout.ccache) < WARM_CACHE_RESULTS else "warm"
    sources = ([store_history(layout.images)] if cache == "warm" else []) + [
        reference_history(layout, cache)]
    has_kernel = {f: (layout.objects / f / "vmlinux").exists() for f in {i.flavour for i in images}}
    out = []
    for image in images:
        if is_built(image):
            out.append(PlannedBuild(image, "", cache, 0.0))
            continue
        kind = "incremental" if has_kernel[image.flavour] else "full"
        has_kernel[image.flavour] = True
        seen = next((s[image.flavour, kind] for s in sources if s.get((image.flavour, kind))),
                    None)
        seconds = statistics.median(seen) if seen else COLD_BUILD_S.get(
            (image.flavour, kind), COLD_BUILD_S[("perf", kind)])
        out.append(PlannedBuild(image, kind, cache, seconds))
    return out
