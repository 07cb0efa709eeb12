"""The tcg-cs plugin's histograms (output version 3): hold lengths per (class, site)
and spin_lock waits, on real captures (harness/test_data/tcg-cs/README.md says how
they were made: capture.py hist)."""

import dataclasses
import glob
from pathlib import Path

import pytest

from harness import lockorder
from harness.analysis import cs_summary
from harness.boot import tcg_cs
from harness.parsers import tcg_cs as parser

DATA = Path(__file__).resolve().parent.parent / "test_data" / "tcg-cs"
HIST = DATA / "captured-mainline-hist.out"  # 1 vCPU, -icount
HIST_RR = DATA / "captured-mainline-hist-rr.out"  # 2 vCPUs round robin
OLD = [DATA / "captured-mainline-default.out", DATA / "captured-mainline-lines.out",
       DATA / "captured-mainline-rr.out"]


def read(path: Path) -> parser.Output:
    return parser.parse(path.read_text(), str(path))


@pytest.mark.parametrize("path", [HIST, HIST_RR])
def test_every_section_group_has_its_hold_histogram_within_its_sum(path):
    out = read(path)
    assert out.version == 3 and out.config["hist_sub_buckets"] == 8
    for window in out.windows.values():
        assert set(window.holds) == {(s.lock_class, s.site) for s in window.sections}
        for s in window.sections:
            h = window.holds[s.lock_class, s.site]
            assert h.count == s.acquisitions
            # Each section lies in its bucket, so the buckets bound the cs line's sum.
            low = sum(b * n for b, n in h.buckets)
            high = sum(parser.bucket_high(b, 8) * n for b, n in h.buckets)
            assert low <= s.instructions < high
            assert h.percentile(0.01)[0] <= h.percentile(0.5)[0] <= h.percentile(0.99)[0]


def test_one_vcpu_never_waits_and_its_percentiles_are_the_ones_measured():
    out = read(HIST)
    assert all(not w.waits for w in out.windows.values())
    assert out.boot["slow_acquired"] == 0
    # create-unlink on tmpfs: every sb-list section of new_inode and evict is
    # 11 to 13 instructions long (exact buckets below 16), so p50 and p99 are too.
    sb = out.windows["s01.create-unlink"].histograms_by_class("hold")["&s->s_inode_list_lock"]
    assert sb.count == 4000
    assert sb.percentile(0.5) == (11, 12) and sb.percentile(0.99) == (13, 14)
    # The i_lock's sections spread over buckets: its p99 is far above its p50.
    ilock = out.windows["s01.create-unlink"].histograms_by_class("hold")[
        "&sb->s_type->i_lock_key"]
    assert ilock.percentile(0.5) == (28, 30) and ilock.percentile(0.99) == (80, 88)


def test_waits_are_the_rest_of_a_section_and_account_for_every_slow_acquisition():
    out = read(HIST_RR)
    assert out.config["vcpus"] == 2
    waits = 0
    for window in out.windows.values():
        counted = sum(h.count for h in window.waits.values())
        # Each spin_lock that came back from the slow path inside the window
        # has a wait, or is counted as unseen (no vCPU held the lock when its
        # cmpxchg failed: a waiter with the pending bit had it).
        assert counted + window.notes.get("wait_unseen", 0) == window.notes.get(
            "slow_acquired", 0)
        longest = {}
        for s in window.sections:
            longest[s.lock_class] = max(longest.get(s.lock_class, 0), s.max)
        for (lock_class, _), h in window.waits.items():
            # The rest of a holder's section is no longer than the class's longest.
            assert h.buckets[-1][0] <= longest[lock_class]
        waits += counted
    assert waits == 14
    # ext4's block-group lock: sections of about 11,600 instructions (the
    # inode bitmap's checksum), whose waits fall anywhere inside one.
    recreate = out.windows["s02.recreate"].histograms_by_class("wait")["&bgl->locks[i].lock"]
    assert recreate.count == 11 and recreate.buckets[0][0] < 1000 < recreate.buckets[-1][0]


@pytest.mark.parametrize("path", OLD)
def test_older_output_reads_without_histograms(path):
    out = read(path)
    assert out.version in (1, 2)
    assert all(not w.holds and not w.waits for w in out.windows.values())


def _with(path: Path, old: str, new: str) -> str:
    text = path.read_text()
    assert text.count(old) == 1
    return text.replace(old, new)


@pytest.mark.parametrize("old, new, error", [
    # a count that is not the cs line's acquisitions
    ("&s->s_inode_list_lock\tffffffff811299ef\t11:2000",
     "&s->s_inode_list_lock\tffffffff811299ef\t11:2001",
     "hold histogram not of the sections before it"),
    # the cs line's shortest section (11) in no bucket of the histogram
    ("&s->s_inode_list_lock\tffffffff811299ef\t11:2000",
     "&s->s_inode_list_lock\tffffffff811299ef\t10:1,11:1999",
     "hold histogram not of the sections before it"),
    # a bucket the plugin cannot write: 17 lies in the bucket of 16
    ("&mm->page_table_lock\tffffffff810e3a0d\t18:1",
     "&mm->page_table_lock\tffffffff810e3a0d\t17:1", "inconsistent hist line"),
    ("hold\t&mm->page_table_lock\tffffffff810e3a0d",
     "spin\t&mm->page_table_lock\tffffffff810e3a0d", "malformed hist line"),
])
def test_a_histogram_that_does_not_fit_is_an_error_naming_its_line(old, new, error):
    text = _with(HIST, old, new)
    with pytest.raises(parser.TcgCsError, match=error):
        parser.parse(text, "x.out")


def test_a_histogram_in_version_2_output_is_an_unexpected_line():
    line = next(x for x in HIST.read_text().splitlines() if x.startswith("hist\t"))
    label = line.split("\t")[1]
    text = f"tcg-cs\t2\nconfig\thist_sub_buckets\t8\nwindow\t{label}\t100\t0\t0\t10\t1\n{line}\n"
    with pytest.raises(parser.TcgCsError, match="x.out:4: unexpected line"):
        parser.parse(text, "x.out")


def test_buckets_are_an_eighth_of_a_power_of_two_wide():
    lows = sorted({parser.bucket_low(v, 8) for v in range(100_000)})
    assert lows[:17] == list(range(16)) + [16]
    for low, nxt in zip(lows, lows[1:]):
        assert parser.bucket_high(low, 8) == nxt
        assert nxt - low <= max(1, low // 8)
    h = parser.Histogram(8, ((3, 1), (16, 2), (18, 7)))
    assert h.percentile(0.1) == (3, 4) and h.percentile(0.3) == (16, 18)
    assert h.percentile(0.31) == (18, 20) and (h + h).count == 20


MAINLINE = tcg_cs.with_tables(lockorder.parse(lockorder.MAINLINE_FILE))


def figures_of(out: parser.Output, label: str, order=MAINLINE) -> dict:
    return {(f.lock, f.metric): f.value for f in tcg_cs.cs_figures.window_figures(
        label.split(".", 1)[1], 1000, out.windows[label], order, out)}


def test_percentile_figures_per_role_over_its_classes_and_sites():
    out = read(HIST)
    figures = figures_of(out, "s01.create-unlink")
    # new_inode's sb-list sections are 11 instructions, evict's 13: half each.
    assert [figures["sb_list", f"cs_instructions_p{q}"] for q in (50, 90, 99)] == [11, 13, 13]
    # The i_lock's mean (31) lies above its median: a few long sections pull it.
    assert figures["i_lock", "cs_instructions_p50"] == 28
    assert figures["i_lock", "cs_instructions_per_acq"] > 28
    assert figures["i_lock", "cs_instructions_p99"] == 80
    # A hash lookup of igetstorm: iget's inode_hash_lock sections.
    figures = figures_of(out, "s02.open-by-handle")
    assert (figures["hash", "cs_instructions_p50"], figures["hash", "cs_instructions_p99"]) \
        == (44, 60)
    assert not [k for k in figures if k[1].startswith("cs_wait")]  # one vCPU never waits
    # Output without histograms gives no percentile figures.
    old = read(OLD[1])
    percentiles = {f"{m}_p{q}" for m in ("cs_instructions", "cs_wait_instructions")
                   for q in (50, 90, 99)}
    assert figures.keys() & {("hash", m) for m in percentiles}
    assert not {m for _, m in figures_of(old, "s01.create-unlink")} & percentiles


def test_wait_figures_count_a_roles_waits():
    out = read(HIST_RR)
    window = out.windows["s02.recreate"]
    # No icache lock waited in this capture: ext4's block-group lock stands in
    # for the wb role here.
    order = dataclasses.replace(MAINLINE, patterns={**MAINLINE.patterns,
                                                    "wb": (glob.escape("&bgl->locks[i].lock"),)})
    figures = figures_of(out, "s02.recreate", order)
    waits = window.histograms_by_class("wait")["&bgl->locks[i].lock"]
    assert figures["wb", "cs_waits"] == waits.count == 11
    assert figures["wb", "cs_wait_instructions_p50"] == waits.percentile(0.5)[0]
    assert figures["wb", "cs_wait_instructions_p99"] == waits.buckets[-1][0]
    assert ("i_lock", "cs_waits") not in figures_of(out, "s02.recreate")


@pytest.mark.parametrize("path", [HIST, HIST_RR])
def test_bounds_from_each_sites_min_and_max_hold_the_measured_percentile(path):
    """What output without histograms can say (cs_summary --percentiles), checked
    against the histograms of the same windows."""
    out = read(path)
    checked = exact = 0
    for window in out.windows.values():
        for lock_class, h in window.histograms_by_class("hold").items():
            sections = [s for s in window.sections if s.lock_class == lock_class]
            for q in cs_summary.PERCENTILES:
                at_least, at_most = cs_summary.percentile_bounds(sections, q)
                low, high = h.percentile(q)
                assert at_least < high and low <= at_most  # the bucket meets the bounds
                checked += 1
                exact += at_least == at_most
    assert checked >= 126 and exact > checked / 3  # 182 of 387 exact with 2 vCPUs
    sb = [s for s in out.windows[next(iter(out.windows))].sections
          if s.lock_class == "&s->s_inode_list_lock"]
    if path == HIST:  # new_inode's 11 and evict's 13, all of one length each
        assert [cs_summary.percentile_bounds(sb, q) for q in (0.5, 0.99)] == [(11, 11), (13, 13)]
