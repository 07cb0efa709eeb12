"""The report of a run folder: verdict first, charts rendered, HTML self-contained."""

import json
import re

from harness.kernels import series
from harness.report import blocks, document
from harness.layout import default_layout
from harness.tests.conftest import make_run




def test_report_of_a_run(tmp_path):
    run = make_run(tmp_path)
    md, page = document.write(default_layout(), run, "mainline")
    text = md.read_text()
    # The verdict against mainline comes before the workloads, and says who wins on
    # which evidence; with no chinner or piggin in the run, the duel has nothing to say.
    start = text.index("## Every kernel against mainline (secondary)")
    assert text.index("## The answer: chinner against piggin") < start
    assert start < text.index("## Workloads")
    verdict = text[start:text.index("## Workloads")]
    assert "| create-unlink on tmpfs | lock acquisitions/op (exact), 2 vCPU" in verdict
    assert "+60%" in verdict  # base takes 16 icache locks per op against 10
    assert "**mainline**" in verdict
    # The why column names the lock taken most, never lockdep's hold time as a cost.
    assert "base: i_lock 8.0/op" in verdict and "held" not in verdict
    assert "| base | lock acquisitions/op (exact), 2 vCPU | 0 | 0 | 1 (+60%) | 0 |" in verdict
    for chart in ("throughput-create-unlink-tmpfs-create-unlink", "locks-create-unlink-tmpfs-"
                  "create-unlink-c2", "retries-base-sb_walk", "lockorder-mainline",
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


def test_the_report_says_mainline_is_not_stock_when_the_run_carries_stable_fixes(tmp_path):
    run = make_run(tmp_path)
    stock = document.write(default_layout(), run, "mainline")[0].read_text()
    assert "every kernel, mainline included, is stock 6.1.192." in stock
    # The committed series-stable, as a run that built it records it for every kernel.
    fixes = [{"series": p.series, "file": p.path.name, "sha256": p.sha256,
              "subject": p.subject}
             for p in series.resolve(default_layout(), "mainline").patches]
    assert fixes and {f["series"] for f in fixes} == {"stable"}
    manifest = json.loads((run / "manifest.json").read_text())
    for kernel in manifest["kernels"].values():
        kernel["patches"] = fixes + kernel["patches"]
    (run / "manifest.json").write_text(json.dumps(manifest))
    text = document.write(default_layout(), run, "mainline")[0].read_text()
    subject = fixes[0]["subject"].split("] ", 1)[-1]
    assert (f"every kernel, mainline included, is 6.1.192 plus 1 fix of 6.1's own "
            f"(series-stable: \"{subject}\"), so mainline is not stock 6.1.") in text


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


def test_a_run_that_reuses_cells_counts_and_lists_the_boots_they_come_from(tmp_path):
    run = make_run(tmp_path)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["reused_boots"] = [{
        "directory": "boots/earlier-mainline-sanitize-tcg-c1-r1", "status": "hang",
        "wall_s": 900, "to_init_s": 70, "damaged": [],
        "reports": [{"kind": "rcu-stall", "title": "INFO: rcu detected stall in __orc_find"}]}]
    (run / "manifest.json").write_text(json.dumps(manifest))
    text = document.write(default_layout(), run, "mainline")[0].read_text()
    assert "2 boots (1 measured by this run, 1 reused from earlier runs)" in text
    assert "| boots/earlier-mainline-sanitize-tcg-c1-r1 | rcu-stall | INFO: rcu detected stall" \
        in text


def test_a_size_of_difference_uses_the_notation_of_changes():
    # Below a factor of two a percentage, beyond it a factor: "+351%" would read as
    # either 3.5x or 4.5x, and a table of "0.45x" changes beside it as yet another scale.
    assert blocks.apart_text(0.41) == "41%"
    assert blocks.apart_text(-0.41) == "41%"
    assert blocks.apart_text(3.51) == "4.5x"
    assert blocks.apart_text(1.0) == "2.0x"
    assert blocks.apart_text(float("inf")) == "n/a"
    assert blocks.reach_text([0.11, 1.4, 3.93]) == "2.4x (best 11%)"
