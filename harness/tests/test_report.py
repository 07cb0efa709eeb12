"""The report of a run folder: verdict first, charts rendered, HTML self-contained."""

import json

from harness.report import document
from harness.run import tidy
from harness.layout import default_layout
from harness.tests.test_analysis import row


def make_run(tmp_path):
    rows = []
    for rep, (m, b) in enumerate(((1000, 500), (1010, 505), (990, 495)), 1):
        for cpus in (1, 2):
            rows += [row("mainline", "throughput", m * cpus, rep=rep, cpus=cpus),
                     row("base", "throughput", b, rep=rep, cpus=cpus)]
    for kernel, extra in (("mainline", 0.0), ("base", 6.0)):
        for lock, acq, hold in (("i_lock", 8.0, 40.0), ("sb_list", 2.0, 6.0),
                                ("global", extra, 30.0 if extra else 0.0)):
            if acq:
                rows.append(row(kernel, "acquisitions_per_op", acq, flavour="debug", lock=lock))
                rows.append(row(kernel, "holdtime_per_op", hold, flavour="debug", lock=lock))
                rows.append(row(kernel, "contentions_per_op", 0.01, flavour="debug", lock=lock))
        rows.append(row(kernel, "lockdep_reports", 0, flavour="debug"))
    rows.append(row("base", "retries.sb_walk_per_op", 0.25, flavour="debug"))
    run = tmp_path / "run"
    run.mkdir()
    tidy.write(rows, run / "tidy.tsv")
    manifest = {
        "created": "2026-12-03T10:00:00+0000", "wall_seconds": 600.0, "accel": "tcg",
        "host": {"cpus": 2, "qemu": "QEMU emulator version 7.2.22", "kernel": "6.1.0"},
        "matrix": {"kernels": ["mainline", "base"], "cpus": [1, 2], "workloads": ["create-unlink"],
                   "repeat": 3, "debug_repeat": 1, "icount_repeat": 0, "flavours": ["perf", "debug"]},
        "oversubscribed": [], "reruns": 0,
        "kernels": {k: {"kernel_version": "6.1.192", "package_version": "6.1.192-3",
                        "patches": [], "images": {"perf": {"key": "k1", "commit": "c"}}}
                    for k in ("mainline", "base")},
        "boots": [{"directory": "boots/x", "status": "ok", "wall_s": 10, "to_init_s": 5,
                   "reports": []}],
    }
    (run / "manifest.json").write_text(json.dumps(manifest))
    (run / "lockorder.json").write_text(json.dumps({
        "mainline": {"lock_order_file": "harness/mainline.lock-order",
                     "edges": [["&s->s_inode_list_lock", "&sb->s_type->i_lock_key#3",
                                "sb_list", "i_lock"]],
                     "role_edges": [["sb_list", "i_lock"]], "violations": []}}))
    return run


def test_report_of_a_run(tmp_path):
    run = make_run(tmp_path)
    md, page = document.write(default_layout(), run, "mainline")
    text = md.read_text()
    # The verdict comes first, and says who wins on which evidence.
    assert text.index("## Verdict") < text.index("## Workloads")
    verdict = text[text.index("## Verdict"):text.index("## Workloads")]
    assert "| create-unlink on tmpfs | lock acquisitions/op (exact), 2 vCPU" in verdict
    assert "+60.0%" in verdict  # base takes 16 icache locks per op against 10
    assert "**mainline**" in verdict
    assert "base: i_lock 8.0/op, held 40 µs/op" in verdict
    assert "| base | lock acquisitions/op (exact), 2 vCPU | 0 | 0 | 1 (+60.0%) |" in verdict
    for chart in ("throughput-create-unlink-tmpfs-create-unlink", "locks-create-unlink-tmpfs-"
                  "create-unlink-c2", "retries", "lockdep", "lockorder-mainline",
                  "exact-acquisitions"):
        png = run / "charts" / f"{chart}.png"
        assert png.exists() and png.stat().st_size > 1000, chart
        assert (run / "charts" / f"{chart}.svg").exists()
    html = page.read_text()
    assert html.count("data:image/png;base64,") >= 5
    assert "<th>workload</th>" in html
