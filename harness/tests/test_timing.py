"""A run's stage times, as the README gives them (run/timing.py).

small-run-manifest.json: `harness compare --kernels mainline --flavours debug
--cpus 1 --workloads create-unlink --repeat 0 --icount-repeat 0 --cs-repeat 0`,
the image already built, 2026-12-06 (host busy).
"""

import json
from pathlib import Path

import pytest

from harness.run import timing

DATA = Path(__file__).resolve().parent.parent / "test_data" / "timing"


def test_a_run_lists_its_stages_its_total_and_how_far_the_first_estimate_was():
    manifest = json.loads((DATA / "small-run-manifest.json").read_text())
    lines = timing.summary(manifest, "small-run-manifest.json")
    assert lines[:6] == ["- initramfs: 0s", "- image mainline/debug: found (0s)", "- probe: 0s",
                         "- boots debug tcg: 1 in 20s", "- finish: 0s", "- report: 1s"]
    assert lines[6] == ("- in all 21s (2026-12-06T06:51; 0 images built, 1 boots measured, "
                        "0 reused)")
    assert lines[7] == "- first estimate, printed after 0s: 31s, +48% of the real total"


def test_a_built_image_says_its_kind_cache_estimate_and_cores():
    stage = {"stage": "image", "kernel": "base", "flavour": "perf", "built": True,
             "kind": "incremental", "cache": "cold", "estimate_s": 480, "seconds": 450.0,
             "cpu_s": 810.0}
    assert timing.stage_line(stage) == ("image base/perf: 7m30s (incremental build, cold "
                                        "compiler cache, estimated 8m00s, 1.80 cores busy)")


def test_a_run_without_timing_is_named():
    with pytest.raises(timing.TimingError, match="old.json: no timing"):
        timing.summary({"wall_seconds": 1.0}, "old.json")
