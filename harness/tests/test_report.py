"""The report of a run folder: verdict first, charts rendered, HTML self-contained."""

import json
import re

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
    # Charts are linked, not embedded a second time, and every link resolves.
    assert "base64" not in html
    links = re.findall(r"<img alt='[^']*' src='([^']+)'>", html)
    assert len(links) >= 5 and all((run / link).is_file() for link in links)
    assert "<th>workload</th>" in html
    # A list is a list: every <li> inside a <ul>.
    assert html.count("<li>") >= 3
    assert re.sub(r"<ul>(<li>.*?</li>)+</ul>", "", html).count("<li>") == 0


def test_report_reads_the_runs_lock_order_files(tmp_path):
    run = make_run(tmp_path)
    md, _ = document.write(default_layout(), run, "mainline")
    # An old run without its own copy says that the checkout's file was drawn.
    assert "mainline (harness/mainline.lock-order of today's checkout)" in md.read_text()
    assert "**This run kept no copy of the lock-order files of mainline**" in md.read_text()
    (run / "lock-order").mkdir()
    (run / "lock-order" / "mainline.lock-order").write_text("sb_list -> i_lock\nhash -> lru\n")
    md, _ = document.write(default_layout(), run, "mainline")
    text = md.read_text()
    assert "mainline (lock-order/mainline.lock-order of this run)" in text
    assert "kept no copy" not in text
    # The run's file, not the checkout's, decides the dashed "allowed" edges.
    dot = (run / "charts" / "lockorder-mainline.dot").read_text()
    assert '"hash" -> "lru" [style=dashed' in dot
    assert '"wb"' not in dot  # the checkout's file allows wb -> i_lock


def test_noise_caveat_comes_from_the_run(tmp_path):
    run = make_run(tmp_path)
    md, _ = document.write(default_layout(), run, "mainline")
    caveats = md.read_text().split("## Caveats")[1]
    assert "13-40%" not in caveats
    # mainline's three boots: 1000, 1010, 990 (CoV 1.0%); base's 500, 505, 495 (1.0%).
    assert "coefficient of variation of 1.0-1.0% in this run" in caveats
