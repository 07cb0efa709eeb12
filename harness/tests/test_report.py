"""The report of a run folder: verdict first, charts rendered, HTML self-contained."""

import dataclasses
import json
import re
import shutil
from pathlib import Path

from harness.analysis import boot_perm, duel
from harness.kernels import series
from harness.report import blocks, document, duel_section, scaling_section
from harness.layout import default_layout
from harness.run import tidy
from harness.tests.conftest import make_run




def test_report_of_a_run(tmp_path):
    run = make_run(tmp_path)
    md, page = document.write(default_layout(), run, "mainline")
    text = md.read_text()
    # The verdict against mainline comes before the workloads, and says who wins on
    # which evidence; with no chinner or piggin in the run, the duel has nothing to say.
    start = text.index("## Every kernel against mainline (secondary)")
    assert text.index("**No answer: this run has neither pair** (chinner and piggin; "
                      "chinner-2.6.39 and piggin-2010).") < start
    assert text.index("## The answer, the isolated pair: chinner against piggin") < start
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


REFERENCE = Path(__file__).resolve().parent.parent / "test_data" / "reference-20261206-094619"


class _NoScaling:
    """The scaling section, left out: it takes minutes on the reference and says nothing
    before the first table (it has its own tests)."""

    def __init__(self, *args, **kwargs):
        pass

    def blocks(self):
        return []

    def glance_rows(self):
        return []


def test_the_first_screen_of_the_rendered_reference(tmp_path, monkeypatch):
    """The committed reference, rendered: at most 150 words before the first table, and
    those words name the pair and what is equal in it, the vCPU counts, the reach and
    the answer, each as the run's own figures give it."""
    run = tmp_path / "reference"
    shutil.copytree(REFERENCE, run, ignore=shutil.ignore_patterns(
        "charts", "report.*", "slides*"))
    monkeypatch.setattr(scaling_section, "Section", _NoScaling)
    builder = document.ReportBuilder(default_layout(), run, "mainline")
    blocks_ = builder.build()
    text = document.render_markdown(blocks_, run)
    assert duel_section.words_before_table(text) <= 150
    head = text.split("\n|", 1)[0]
    assert head.startswith("# inode-duel: chinner against piggin\n\n**The isolated pair: "
                           "chinner against piggin, the same structures (per-CPU sb lists, "
                           "per-bucket hash); the i_lock model differs, and with it how sb "
                           "lists are walked (RCU in piggin)**; reach")
    (ctx,) = builder.duel_contexts().values()
    found = duel_section.count_verdicts(ctx)
    assert [c.cpus for c in found] == [1, 2]
    for c in found:
        assert f"{duel_section._reach_values(c.reach, ['timed', 'latency', 'icount'])} " \
               f"at {c.where}" in head
    assert f"**Answer: {duel_section.verdict(ctx)}**" in head
    assert "The historical pair (chinner-2.6.39 against piggin-2010) is not in this run." \
        in head
    # The run's provenance follows the table; the answer's details follow it.
    assert text.index("| isolated: chinner against piggin | 1 |") < text.index("Run reference")
    assert text.index("Run reference") < text.index("## The answer, the isolated pair")


def test_the_committed_reference_answers_within_150_words():
    """results/reference as published (make reference): its report's first screen stays
    under 150 words and gives an answer for every pair the run has."""
    committed = Path(__file__).resolve().parents[2] / "results" / "reference"
    text = (committed / "report.md").read_text()
    head = text.split("\n|", 1)[0]
    assert duel_section.words_before_table(text) <= 150
    kernels = json.loads((committed / "manifest.json").read_text())["kernels"]
    for pair in duel.pairs_in(list(kernels)):
        assert f"**The {pair.name} pair: {pair.first}" in head
    assert head.count("**Answer: ") == len(duel.pairs_in(list(kernels)))


def test_the_first_screen_of_two_pairs_stays_short():
    """With both pairs (the reference's chinner and piggin boots standing in for the
    historical pair as well, its timed and -icount rows only), the words before the
    first table stay under 150 and name both pairs."""
    rows = [r for r in tidy.read(tidy.table_in(REFERENCE))
            if r.flavour == "perf" and r.mode in ("tcg", "tcg-icount")]
    named = {"chinner": "chinner-2.6.39", "piggin": "piggin-2010"}
    rows += [dataclasses.replace(r, kernel=named[r.kernel]) for r in rows
             if r.kernel in named]
    kernels = ["mainline", "base", "chinner", "piggin", "chinner-2.6.39", "piggin-2010"]
    contexts = []
    for pair in duel.pairs_in(kernels):
        entries = duel.entries(rows, kernels, None, REFERENCE / "none.json", None, pair)
        contexts.append(duel_section.Context(entries, [], 2, None, [], pair=pair,
                                             perm=boot_perm.analyse(rows, pair)))
    assert [c.pair.name for c in contexts] == ["isolated", "historical"]
    text = document.render_markdown([blocks.Heading(1, "inode-duel: chinner against "
                                                       "piggin; chinner-2.6.39 against "
                                                       "piggin-2010"),
                                     *duel_section.first_screen(contexts, kernels)],
                                    REFERENCE)
    assert duel_section.words_before_table(text) <= 150
    assert ("**The historical pair: chinner-2.6.39 (Dave's lock order with 2.6.39's global "
            "inode_hash_lock") in text
    assert "| historical: chinner-2.6.39 against piggin-2010 | 2 |" in text
    assert "not in this run" not in text


def test_grace_period_waits_are_shown_per_kernel_and_vcpu_count():
    """piggin's sb_list_gp_wait fired on XFS create-unlink in the 2026-12-04 reference:
    its waits per op beside the case's throughput and p99, per vCPU count, at the
    step with as many workers as vCPUs; chinner has no such wait."""
    rows = tidy.read(Path(__file__).resolve().parent.parent / "test_data" /
                     "reference-20261204" / "create-unlink-ext4-xfs.tsv")
    heading, _, table = duel_section.gp_wait_blocks(rows, ["mainline", "base", "chinner",
                                                           "piggin"])
    assert heading.text == "Grace-period waits (piggin's 0011)"
    piggin = [r for r in table.rows if r[2] == "piggin"]
    assert [r[:4] for r in piggin] == [["create-unlink on xfs", "1 vCPU", "piggin", "0.00150"],
                                       ["create-unlink on xfs", "2 vCPUs", "piggin", "0.00300"]]
    assert all(r[3] == "none: its walks hold the list lock"
               for r in table.rows if r[2] == "chinner")
    assert {r[0] for r in table.rows} == {"create-unlink on xfs"}  # ext4 never waited
    # A run without the wait anywhere says so, and what would measure it.
    (_, said) = duel_section.gp_wait_blocks([r for r in rows if r.fs == "ext4"], ["piggin"])
    assert "make duel runs sbwalk-churn" in said.text


def test_what_piggins_retries_cost_where_they_fire():
    """The reference's hotinode cases, where piggin's trylocks fail at 4 vCPUs: its
    retries per op beside chinner's, lock_stat's hold and wait (means and maxima, said
    to be no percentiles), and the round-robin price said not measured (no such boots)."""
    rows = [r for r in tidy.read(tidy.table_in(REFERENCE)) if r.workload == "hotinode"]
    kernels = ["mainline", "base", "chinner", "piggin"]
    ctx = duel_section.Context(duel.entries(rows, kernels, None, REFERENCE / "none.json"),
                               [], 2, None, [])
    heading, text, table = duel_section.retry_price_blocks(ctx, rows)
    assert heading.text == "What piggin's retries cost"
    assert "**none in this run: not measured**" in text.text
    assert "no distribution: the figures are means and maxima over the debug boots, not " \
        "percentiles" in text.text
    handle = [r for r in table.rows if r[0] == "hotinode handle on ext4"]
    assert [r[1:3] for r in handle] == [["4 vCPUs", "piggin"], ["4 vCPUs", "chinner"]]
    assert handle[0][3].startswith("hash_find_fast 4.7")
    assert handle[0][4] == handle[0][5] == "not measured"
    assert handle[0][7].startswith("i_lock: hold ") and " µs mean, " in handle[0][7]
    # A round-robin boot that ran the case with no icache trylock failing: measured, 0.
    # (Planted: the reference has no tcg-cs-rr boots; the duel run of 2026-12-07 had
    # one per kernel, and none failed.)
    rr = [dataclasses.replace(r, mode="tcg-cs-rr", flavour="perf", cpus=2, repetition=1)
          for r in rows if r.metric == "ops" and r.flavour == "debug" and r.cpus == 2
          and r.repetition == 1 and r.kernel in ("chinner", "piggin")]
    assert rr
    heading, text, table = duel_section.retry_price_blocks(ctx, rows + rr)
    assert "2 boots in this run, 0 where a boot ran the case and no icache trylock failed" \
        in text.text
    handle = [r for r in table.rows if r[0] == "hotinode handle on ext4"]
    assert handle[0][4:7] == ["0", "0", "none failed"]


def test_the_timed_rounds_name_the_sessions_they_come_from():
    """The duel run of 2026-12-07: every perf boot of chinner and piggin was planned in
    one session (19:22, reruns at 19:31 and 19:34), so its rounds share that session's
    luck and the report says so; boots of other kernels and modes do not count."""
    directories = ["boots/20261207-192225-chinner-perf-tcg-c1-r1",
                   "boots/20261207-192225-piggin-perf-tcg-c2-r6",
                   "boots/20261207-193124-piggin-perf-tcg-c1-r3",
                   "boots/20261207-193407b-chinner-perf-tcg-c2-r1",
                   "boots/20261207-182647-piggin-debug-tcg-c2-r1",
                   "boots/20261207-182647-chinner-perf-tcg-cs-c1-r1",
                   "boots/20261207-150000-mainline-perf-tcg-c1-r1"]
    (one,) = duel_section.timed_sessions(directories, ("chinner", "piggin"))
    assert one.text() == "2026-12-07 19:22-19:34, 4 boots"
    assert "comes from one session (2026-12-07 19:22-19:34, 4 boots)" in \
        duel_section.sessions_sentence([one])
    two = duel_section.timed_sessions(directories + ["boots/20261207-150331-chinner-perf-tcg-"
                                                     "c1-r1"], ("chinner", "piggin"))
    assert [s.boots for s in two] == [1, 4]
    # A second session of 1-vCPU boots replicates nothing at 2 vCPUs, nor does a
    # session that timed one kernel alone (a rerun).
    assert [s.cpus for s in two] == [(1,), (1, 2)]
    assert not two[0].replicates(("chinner", "piggin"), 1)
    assert two[1].replicates(("chinner", "piggin"), 1)
    assert "but only 1 of them timed chinner and piggin at every vCPU count" in \
        duel_section.sessions_sentence(two, ("chinner", "piggin"))
    assert duel_section.sessions_sentence(two).startswith(" The timed boots come from 2 "
                                                          "sessions (2026-12-07 15:03, 1 boot;")
