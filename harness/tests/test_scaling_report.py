"""The report's Scaling prediction section, from a small run with every input kind."""

import dataclasses
import json

from harness.layout import default_layout
from harness.report import document
from harness.run import tidy
from harness.tests.conftest import lock_rows, mainline_rows
from harness.tests.conftest import scaling_row as row


def make_run(tmp_path):
    rows = mainline_rows()
    base = [dataclasses.replace(r, kernel="base") for r in mainline_rows()
            if not (r.flavour == "debug" and r.lock)]
    base += lock_rows("base", 1, 1, 1000.0, [("global", 3.0, 20.0, 0, 0),
                                              ("sb_list", 2.0, 10.0, 0, 0),
                                              ("i_lock", 8.0, 5.0, 0, 0)])
    base += [r for r in lock_rows("base", 2, 2, 1800.0, [("global", 3.0, 20.0, 0.08, 2.0),
                                                          ("sb_list", 2.0, 10.0, 0, 0)])
             if r.lock]
    # Bounces at 2 vCPUs: mainline's per-inode i_lock bounces a third of the time.
    for kernel, role, acq, bounces in (("mainline", "i_lock", 16000, 5000),
                                       ("mainline", "sb_list", 4000, 1800),
                                       ("base", "global", 6000, 0)):
        rows.append(row(kernel, "debug", "tcg", 2, 2, role, "acquisitions", acq))
        rows.append(row(kernel, "debug", "tcg", 2, 2, role, "acq_bounces", bounces))
    run = tmp_path / "run"
    run.mkdir()
    tidy.write(rows + base, run / "tidy.tsv")
    (run / "manifest.json").write_text(json.dumps({
        "created": "2026-12-03T10:00:00+0000", "wall_seconds": 60.0, "accel": "tcg",
        "host": {"cpus": 2, "qemu": "QEMU 7.2", "kernel": "6.1"},
        "matrix": {"kernels": ["mainline", "base"], "cpus": [1, 2],
                   "workloads": ["create-unlink"], "repeat": 3, "debug_repeat": 1,
                   "icount_repeat": 1, "flavours": ["perf", "debug"]},
        "oversubscribed": [], "reruns": 0, "boots": [],
        "kernels": {k: {"kernel_version": "6.1.192", "package_version": "6.1.192-3",
                        "patches": [], "images": {}} for k in ("mainline", "base")}}))
    return run


def test_the_section_follows_the_verdict_and_is_labelled_a_prediction(tmp_path):
    run = make_run(tmp_path)
    md, _ = document.write(default_layout(), run, "mainline")
    text = md.read_text()
    start = text.index("## Scaling prediction (a model, not a measurement)")
    verdict = text.index("## Every kernel against mainline (secondary)")
    assert verdict < start < text.index("## Workloads")
    section = text[start:text.index("## Workloads")]
    glance = text[verdict:start]
    # Predictions stand in a table of their own, never beside measured "better" cases.
    assert "| base | throughput at 64 CPUs (predicted) | 0 | 0 | 1 (" in glance
    assert "| base | PREDICTION" not in glance
    # The base kernel's global lock caps it; mainline's sb list caps mainline.
    assert "| create-unlink on tmpfs | global (global) |" in section
    assert "| create-unlink on tmpfs | sb_list (per-superblock) |" in section
    assert "fallback" in section and "lockdep" in section
    # Validation: 2-vCPU contention predicted from 1 vCPU (0.04 against 0.05 measured).
    assert "| create-unlink on tmpfs | mainline | sb_list | queue | 0.0400 | 0.0500 | -20% ★" \
        in section
    # The per-inode i_lock bouncing a third of the time contradicts its declared scope.
    assert "mainline i_lock is declared per-inode but 31.2% of its acquisitions bounced" in section
    assert "base global is declared global but none of its 6000 acquisitions bounced" in section
    assert (run / "charts" / "scaling-create-unlink-tmpfs-create-unlink.png").stat().st_size > 1000
    saved = json.loads((run / "scaling.json").read_text())
    assert saved["knobs"]["handoff_ns"] == 100.0 and len(saved["cases"]) == 2
    assert saved["validation"]["contention"]["count"] == 2
