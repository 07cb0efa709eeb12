"""The slide deck of a run: every slide renders, has text, and is not blank.

Checked as a person would: each PDF page rendered to pixels (pdftoppm) and
read back as text (pdftotext).
"""

import json
import subprocess
from collections import Counter

import pytest

from harness.kernels import kbuild
from harness.report import charts, deck_text, document, duel_section, slides, svg_pages
from harness.run import records, soak, tidy
from harness.layout import Layout, default_layout
from harness.tests.conftest import row
from harness.tests.conftest import SOAK_IMAGES, manifest_for

KERNELS = ("mainline", "base", "chinner", "piggin")
# icache locks per create+unlink on tmpfs, by kernel: piggin takes i_lock 6 more times.
LOCKS = {"mainline": {"i_lock": 8.0, "sb_list": 2.0}, "base": {"i_lock": 8.0, "sb_list": 2.0,
                                                             "global": 3.0},
         "chinner": {"i_lock": 8.0, "sb_list": 2.0}, "piggin": {"i_lock": 14.0, "sb_list": 2.0}}
EDGES = {"mainline": [("sb_list", "i_lock")], "base": [("global", "i_lock")],
         "chinner": [("sb_list", "i_lock"), ("hash", "i_lock")],
         "piggin": [("i_lock", "sb_list"), ("i_lock", "hash")]}
CLASS = {"sb_list": "sb_inode_list_lock", "i_lock": "&sb->s_type->i_lock_key#3",
         "hash": "inode_hash_bucket_lock", "global": "inode_cache_lock"}


@pytest.fixture
def run(tmp_path):
    """A run of the four kernels: exact counts, -icount, TCG, lock-order edges, and the
    committed series as its patches; no kernel tree."""
    layout = Layout(repo=default_layout().repo, build=tmp_path / "build",
                    ccache=tmp_path / "ccache", results=tmp_path / "results")
    rows = []
    for i, kernel in enumerate(KERNELS):
        for lock, acquisitions in LOCKS[kernel].items():
            rows.append(row(kernel, "acquisitions_per_op", acquisitions, flavour="debug",
                            lock=lock, cpus=1))
            rows.append(row(kernel, "contentions_per_op", 0.0, flavour="debug", lock=lock, cpus=1))
            rows.append(row(kernel, "holdtime_per_op", acquisitions * 3.5, flavour="debug",
                            lock=lock, cpus=1))
        rows.append(row(kernel, "lockdep_reports", 0, flavour="debug", cpus=1))
        for rep in (1, 2):
            rows.append(row(kernel, "throughput", 12987.0 - 10 * i + rep, mode="tcg-icount",
                            cpus=1, rep=rep))
            for cpus in (1, 2):
                rows.append(row(kernel, "throughput", 13000.0 * cpus + 300 * rep - 50 * i,
                                cpus=cpus, rep=rep))
    folder = tmp_path / "default"
    folder.mkdir()
    tidy.write(rows, folder / "tidy.tsv")
    manifest = manifest_for(layout, list(KERNELS))
    manifest.update({
        "created": "2026-12-03T12:47:37+0000", "wall_seconds": 840.0, "accel": "tcg",
        "host": {"cpus": 2, "qemu": "QEMU emulator version 7.2.22", "kernel": "6.1.0"},
        "matrix": {"kernels": list(KERNELS), "cpus": [1, 2], "workloads": ["create-unlink"],
                   "repeat": 2, "debug_repeat": 1, "icount_repeat": 2,
                   "flavours": ["perf", "debug"]},
        "oversubscribed": [], "reruns": 0,
        "boots": [{"directory": f"boots/20261203-1233{i:02d}-{k}-debug-tcg-c1-r1",
                   "status": "ok", "wall_s": 30.0, "to_init_s": 6.0, "reports": []}
                  for i, k in enumerate(KERNELS)]})
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "lockorder.json").write_text(json.dumps({
        k: {"lock_order_file": "harness/mainline.lock-order" if k == "mainline"
            else f"series-{k}/lock-order",
            "edges": [[CLASS[a], CLASS[b], a, b] for a, b in EDGES[k]],
            "role_edges": [list(e) for e in EDGES[k]], "violations": []} for k in KERNELS}))
    return layout, folder


def page_pixels(pdf, page):
    """The share of a page's pixels that are not white, from pdftoppm's PGM."""
    out = subprocess.run(["pdftoppm", "-gray", "-r", "30", "-f", str(page), "-l", str(page),
                          str(pdf)], capture_output=True, check=True).stdout
    fields = out.split(maxsplit=4)  # P5, width, height, maxval, pixels
    assert fields[0] == b"P5"
    width, height = int(fields[1]), int(fields[2])
    pixels = fields[4][:width * height]
    return sum(1 for p in pixels if p < 200) / len(pixels)


def page_text(pdf, page):
    return subprocess.run(["pdftotext", "-f", str(page), "-l", str(page), "-layout", str(pdf),
                           "-"], capture_output=True, text=True, check=True).stdout


def test_every_slide_renders_with_its_message(run):
    layout, folder = run
    pdf = slides.write(layout, folder, "mainline")
    titles = json.loads((folder / "slides" / "titles.json").read_text())
    pages = int(next(line.split()[1] for line in subprocess.run(
        ["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout.splitlines()
        if line.startswith("Pages:")))
    assert pages == len(titles) <= slides.MAX_SLIDES
    report = document.write(layout, folder, "mainline")[0].read_text()
    for page, title in enumerate(titles, 1):
        text = " ".join(page_text(pdf, page).split())
        assert " ".join(title.split()[:3]) in text, (page, title, text[:200])
        assert len(text) > len(title) + 20, (page, "a title and nothing else")
        assert page_pixels(pdf, page) > 0.01, (page, "blank page")
        # What a reader would catch: a count missing, "1 cases", an interval with equal
        # ends (the figures on a slide are checked against the report when it is written).
        assert deck_text.defects(page_text(pdf, page)) == [], (page, title)
    # Messages are computed from the run, not typed in: the question, then the answer.
    assert titles[0] == "chinner or piggin: how to break up the global inode_lock?"
    deck = slides.Deck(layout, folder, "mainline")
    assert titles[1] == ("Answer (isolated pair): " + duel_section.verdict(deck.ctx)
                         + "; beyond 2 CPUs it cannot say")
    assert titles[2] == "chinner: hash, sb_list → i_lock; piggin: i_lock → hash, sb_list"
    assert titles[3] == "Shared locks: the same in 1 of 1 case; i_lock: piggin more in 1 (+75%)"
    assert titles[9] == "Scaling prediction: not in this run"
    assert titles[-1] == "What would change the answer"
    assert "piggin" in report and "+75%" in report
    # The same run makes the same deck, byte for byte: a regenerated deck is no churn.
    first = pdf.read_bytes()
    assert slides.write(layout, folder, "mainline").read_bytes() == first


def test_the_text_checks_catch_the_defects_of_the_2026_12_04_deck():
    """Each sentence is as the deck of the 2026-12-04 reference printed it."""
    assert deck_text.defects("Sanitizers: sanitize boots in this run.") == [
        "no count before ': sanitize boots'"]
    assert deck_text.defects("piggin is better in 1 cases") == ["'1 cases': a plural after one"]
    assert deck_text.defects("1 vCPU -icount rate, 17 cases: piggin worse in 2 (-0.2% to "
                             "-0.2%)") == ["'-0.2% to -0.2%': an interval whose ends read "
                                           "the same"]
    assert deck_text.defects("TCG throughput: piggin worse in 1 (-80.8%)",
                             report="| create-unlink on xfs | -79.5% ✓ |") == [
        "'-80.8%' is on the slide but not in the report"]
    # What it must let pass: counts, kinds between a count and its noun, possessives.
    assert deck_text.defects("32 of 37 timed cells; the other design's boots; 0 in 2 debug "
                             "boots; 1 case; (-0.20% to +0.25%)", report="-0.20% +0.25%") == []


def test_the_scaling_slide_takes_the_reports_prediction(run):
    layout, folder = run
    deck = slides.Deck(layout, folder, "mainline")
    stem = deck.folder / "prediction"
    chart = charts.clustered_bars(stem, "predicted", ["1"], ["chinner"],
                                  [("ops/s", {("1", "chinner"): 1.0})], ["chinner"])
    deck.blocks += [document.Heading(2, "Scaling prediction"),
                    document.Para("The model, at length."),
                    document.ChartBlock(chart, "create-unlink on tmpfs: predicted throughput. "
                                               "Points: measured")]
    page = deck.scaling()
    assert page.title.startswith("Scaling prediction (a model's prediction")
    # The report's chart, drawn again in the slide's large type.
    (picture,) = page.parts
    assert picture.captions == ["create-unlink on tmpfs: predicted; dotted: the target "
                                "machines' band"]
    assert picture.paths == [deck.folder / "scaling.svg"]
    assert f"DejaVu Sans,{slides.CHART_PX}" in (deck.folder / "scaling.gp").read_text()


def test_a_page_that_says_too_much_is_refused(tmp_path):
    page = svg_pages.Page("Too much", [svg_pages.Text("word " * 2000)])
    with pytest.raises(svg_pages.PageError, match="slide 1 .'Too much'. overflows"):
        svg_pages.write_pdf([page], tmp_path, tmp_path / "deck.pdf", 0)


def test_a_caption_wider_than_its_picture_is_refused(tmp_path):
    picture = tmp_path / "p.svg"
    picture.write_text("<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'/>")
    page = svg_pages.Page("Wide", [svg_pages.Picture([picture], ["caption " * 60])])
    with pytest.raises(svg_pages.PageError, match="caption .* is wider than its picture"):
        svg_pages.write_pdf([page], tmp_path, tmp_path / "deck.pdf", 0)


def test_the_answer_says_which_pair_which_counts_which_reach_and_the_answer(run):
    layout, folder = run
    deck = slides.Deck(layout, folder, "mainline")
    page = deck.answer()
    grid, notes = page.parts
    found = duel_section.count_verdicts(deck.ctx)
    assert [cells[:2] for cells in grid.rows] == [["isolated", str(c.cpus)] for c in found]
    assert "Reach (throughput, -icount): the median smallest difference" in notes.items[-1]
    for cells, c in zip(grid.rows, found):
        assert cells[2] == duel_section._reach_values(c.reach, ["timed", "icount"])
        assert cells[3] == f"{len(c.first)} / {len(c.second)} of {c.chance.tests}"
        assert cells[5] == c.text
    # Two boots a kernel: no count of claims could be beyond chance, and the chance p
    # says so (the least p the boots allow, beside it).
    assert all(c.chance.least_p >= 0.05 for c in found)
    assert notes.items[0].startswith("The isolated pair: chinner against piggin, the same "
                                     "structures (per-CPU sb lists, per-bucket hash); the "
                                     "i_lock model differs, and with it how sb lists are "
                                     "walked (RCU in piggin). The historical pair "
                                     "(chinner-2.6.39 against piggin-2010) is not in this run")
    # No tally of mechanisms on the answer: a contention count cannot slip into it.
    assert not any("contention" in cell for cells in grid.rows for cell in cells)


def test_the_answer_names_the_differences_the_run_did_not_measure(run):
    layout, folder = run
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["differences"] = {"create-unlink": "list membership under i_lock (create, unlink)"}
    manifest["differences_not_measured"] = {"sb inode list walks (RCU in piggin)":
                                            ["sbwalk", "syncrace"]}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    deck = slides.Deck(layout, folder, "mainline")
    # The report's answer per difference names it, with the workloads that would measure it.
    assert "Not measured in this run, so not answered: sb inode list walks (RCU in piggin) " \
        "(sbwalk, syncrace)" in deck.report_text


def test_small_type_is_refused(tmp_path):
    picture = tmp_path / "p.svg"
    picture.write_text("<svg xmlns='http://www.w3.org/2000/svg' width='3000' height='1000'/>")
    page = svg_pages.Page("Tiny", [svg_pages.Picture([picture], [], text_px=20)])
    with pytest.raises(svg_pages.PageError, match="smallest type at 10px"):
        svg_pages.write_pdf([page], tmp_path, tmp_path / "deck.pdf", 0)
    page = svg_pages.Page("Tiny", [svg_pages.Text("footnote", size=16)])
    with pytest.raises(svg_pages.PageError, match="16px text"):
        svg_pages.write_pdf([page], tmp_path, tmp_path / "deck.pdf", 0)


def test_the_record_slide_fits_the_soaks_of_both_flavours(run):
    """A record row per soak flavour would not fit a slide: the deck has one, short,
    beside the other checkers', a column per kernel."""
    layout, folder = run
    manifest = json.loads((folder / "manifest.json").read_text())
    images = {}
    for kernel in ("chinner", "piggin"):
        image = SOAK_IMAGES[kernel, "debug"]
        manifest["kernels"][kernel]["images"] = {
            f: {"key": image.key, "commit": "c"} for f in ("perf", "debug", "sanitize")}
        images.update({(kernel, f): image for f in ("debug", "sanitize")})
    (folder / "manifest.json").write_text(json.dumps(manifest))
    summary = layout.soaks / "20261207-080000"
    summary.mkdir(parents=True)
    asked = soak.Plan(1, 36000.0, "2026-12-07T08:00:00+0000",
                      {"piggin/debug": kbuild.identity(images["piggin", "debug"])})
    many = soak.Tally(boots=312, step_seconds=30000.0, statuses=Counter(ok=311, lockdep=1),
                      cpus=Counter({1: 100, 2: 112, 4: 100}), reports=Counter(circular=1),
                      first={"circular": "possible deadlock in iput (0002-piggin-debug-c2)"})
    soak.write_summary(summary, asked, {("piggin", "debug"): many}, [], 36000.0, finished=True)
    records.write(layout, folder, images)
    deck = slides.Deck(layout, folder, "mainline")
    page = deck.record()
    assert page.title.startswith("Record: 1 kernel report, 0 data races of their own, "
                                 "0 lock-order violations")
    text = svg_pages.render(page, 1, 1)  # raises PageError if the table does not fit
    # piggin's soak counts; chinner's image had none
    assert "8.33 h, 1 report" in text and "not run" in text


def test_the_flip_slide_plots_every_round_and_says_whether_the_sign_flips(run):
    layout, folder = run
    deck = slides.Deck(layout, folder, "mainline")
    page = deck.flip()
    flip = deck.ctx.flip
    assert [x.cpus for x in flip.leans] == [1, 2] and all(x.pairs == 2 for x in flip.leans)
    assert page.title.startswith("Boot against boot: piggin ")
    assert page.title.endswith({"no flip": "; no sign flip",
                                "confirmed": "; the sign flip is confirmed",
                                "not confirmed": "; the sign flip is not confirmed"}
                               [flip.status])
    data = (deck.folder / "flip.dat").read_text()
    assert data.count("\n") > 4  # a dot per round at each count, and the means
    text = svg_pages.render(page, 1, 1)  # raises PageError if it does not fit
    assert "2 rounds per count, so the sign-flip test cannot go below p = 0.5" in \
        svg_pages.page_text(page)
    assert "flip.svg" in text


def test_the_timed_slide_is_a_dot_per_boot_of_the_largest_difference(run):
    layout, folder = run
    deck = slides.Deck(layout, folder, "mainline")
    page = deck.timed()
    found = duel_section.largest_per_count(deck.ctx)
    assert [e.cpus for e in found] == [1, 2]
    assert page.title.startswith("Largest timed difference per vCPU count, boot by boot: ")
    dots = (deck.folder / "timed.dat").read_text().split("\n\n\n")
    # Every kernel's boots of each count's cell: two each, over chinner's geometric mean.
    assert [len([line for line in block.splitlines() if not line.startswith("#")])
            for block in dots] == [4, 4, 4, 4]


def test_a_deck_leaves_the_reports_charts_alone(run):
    """`make slides` while a report of the same run is open (or being written): the
    deck's own report draws into slides/, never into the report's charts/."""
    layout, folder = run
    document.write(layout, folder, "mainline")
    before = {p.name: p.stat().st_mtime_ns for p in (folder / "charts").iterdir()}
    assert before, "the report drew no chart"
    slides.write(layout, folder, "mainline")
    after = {p.name: p.stat().st_mtime_ns for p in (folder / "charts").iterdir()}
    assert after == before
