"""chinner against piggin on real rows of the 2026-12-04 reference (harness/test_data)."""

import dataclasses
import math
from pathlib import Path

import pytest

from harness.analysis import boot_perm, duel, evidence, stats
from harness.report import blocks, duel_section
from harness.run import tidy
from harness.tests.conftest import row

DATA = Path(__file__).resolve().parent.parent / "test_data" / "reference-20261204"
XFS = evidence.Case("create-unlink", "xfs", "create-unlink")
EXT4 = evidence.Case("create-unlink", "ext4", "create-unlink")
KERNELS = ["mainline", "base", "chinner", "piggin"]


@pytest.fixture(scope="module")
def rows():
    return tidy.read(DATA / "create-unlink-ext4-xfs.tsv")


@pytest.fixture(scope="module")
def entries(rows):
    return duel.entries(rows, KERNELS, None, DATA / "no-scaling.json")


def find(entries, case, kind, detail):
    (e,) = [e for e in entries if e.case == case and e.kind == kind and e.detail == detail]
    return e


def test_a_separation_in_every_boot_reads_as_a_loss(rows):
    """piggin on create-unlink/xfs at 1 vCPU: every piggin boot below every boot of the
    other three kernels, yet no t interval of three wild boots separates it."""
    (v,) = [v for v in evidence.verdicts(rows, "mainline", KERNELS)
            if v.case == XFS and v.evidence == "tcg" and v.cpus == 1]
    assert max(v.values["piggin"]) < min(x for k in ("mainline", "base", "chinner")
                                         for x in v.values[k])
    assert v.rank("piggin").p == pytest.approx(2 / 220)
    assert v.outcome("piggin") == "worse"  # the 2026-12-04 report said "-63.6% ≈"
    # Against chinner, whose boots spread widest, the interval alone calls it noise; the
    # rank test over all twelve boots does not.
    assert not v.comparison("piggin", "chinner").significant
    assert v.outcome("piggin", "chinner") == "worse"
    assert v.decided_by("piggin", "chinner") == "rank"
    e = find(duel.entries(rows, KERNELS, None, DATA / "none.json"), XFS, "timed", "1 vCPU")
    assert e.ahead == "chinner" and e.rule == "rank test" and e.behind_alone()
    assert 0 < e.low < e.ratio < 0.4 < e.high  # the interval stays above zero


def test_its_p99_latency_and_the_two_vcpu_cells_agree(entries):
    two = find(entries, XFS, "timed", "2 vCPUs")
    assert two.ahead == "chinner" and two.rule == "interval" and two.high < 0.4
    p99 = find(entries, XFS, "latency", "2 vCPUs")
    assert p99.ahead == "chinner" and p99.low > 5  # p99 latency many times chinner's


def test_shared_traffic_is_the_same_and_piggins_extra_is_its_own_i_lock(entries):
    shared = find(entries, EXT4, "shared", "1 vCPU")
    assert shared.ahead == "" and shared.figures["piggin"].mean == \
        shared.figures["chinner"].mean == pytest.approx(4.0005)
    per_inode = find(entries, EXT4, "per_inode", "1 vCPU")
    assert per_inode.ahead == "chinner" and per_inode.rule == "exact"
    assert (per_inode.figures["chinner"].mean, per_inode.figures["piggin"].mean) == (11.0, 17.0)


def test_critical_sections_come_from_tcg_cs_not_lockdep(rows, entries):
    lengths = evidence.cs_lengths(rows, EXT4)
    assert lengths["piggin", "hash"].mean == pytest.approx(17.5)
    assert lengths["chinner", "hash"].mean == pytest.approx(26.0, rel=1e-4)
    cs = find(entries, EXT4, "cs", "1 vCPU")
    assert cs.ahead == "piggin" and cs.ratio < 1 - duel.CS_TOLERANCE


def test_retries_are_listed_by_counter_never_compared(entries):
    e = find(entries, XFS, "retries", "2 vCPUs")
    assert e.ahead == "?" and e.ratio is None
    assert [name for name, _ in e.counters["piggin"]] == ["sb_list_gp_wait"]
    assert [name for name, _ in e.counters["chinner"]] == ["wb_list_relock"]


def test_background_noise_in_exact_counts_is_not_a_loss():
    # fstree walk on tmpfs took 0.0075 and 0.0080 acquisitions/op: kernel threads.
    rows = [row("mainline", "acquisitions_per_op", 0.0075, flavour="debug", lock="i_lock",
                cpus=1), row("piggin", "acquisitions_per_op", 0.0080, flavour="debug",
                             lock="i_lock", cpus=1),
            row("mainline", "throughput", 1.0), row("piggin", "throughput", 1.0)]
    (v,) = [v for v in evidence.verdicts(rows, "mainline") if v.evidence == "exact"]
    assert v.outcome("piggin") == "even"
    assert v.detectable("piggin") == pytest.approx(evidence.EXACT_FLOOR / 0.0080)


def test_the_cross_case_check_flags_chinners_timings():
    rows = tidy.read(DATA / "perf-throughput.tsv")
    chinner = evidence.cross_case(rows, "chinner", "mainline")
    assert (chinner.wins, chinner.cells) == (32, 37) and chinner.p < 1e-5
    assert chinner.icount_median < 0.001 and chinner.flagged
    # piggin and base show no such pattern; the losing side of a pattern is not flagged.
    assert not evidence.cross_case(rows, "piggin", "mainline").flagged
    assert not evidence.cross_case(rows, "base", "mainline").flagged
    assert not evidence.cross_case(rows, "mainline", "chinner").flagged
    assert stats.sign_test(16, 37) > 0.5


def test_a_boot_that_stalled_decides_nothing():
    rows = tidy.read(DATA / "icount-fstree-xfs.tsv")
    walk = evidence.Case("fstree", "xfs", "walk")
    stalls = {(s.kernel, s.repetition): s for s in evidence.stalled_boots(rows, walk)}
    chinner = stalls["chinner", 2]
    assert chinner.drop == pytest.approx(-0.63, abs=0.01)
    assert chinner.slowest_ns == pytest.approx(206.6e6, rel=1e-3)
    assert ("mainline", 1) not in stalls and ("piggin", 2) not in stalls
    (v,) = [v for v in evidence.verdicts(rows, "mainline") if v.case == walk]
    assert v.outcome("chinner") == "unclaimed"
    assert v.unclaimed_reason("chinner") == (
        "a boot of chinner stalled (rerun it); its rerun spread was never measured")


def test_the_price_of_retries_is_read_from_the_round_robin_rows():
    """Rows as the tcg-cs plugin on several vCPUs writes them (metric
    trylock_retry_instructions_per_op.SITE, lock the role): piggin's failed trylock
    loops cost instructions, chinner's boots have none."""
    rows = []
    for rep, spent in enumerate((41.0, 44.0, 39.0), 1):
        for kernel in ("chinner", "piggin"):
            cell = f"{kernel}-rr-{rep}"
            rows.append(row(kernel, "instructions_per_op", 90000.0, mode="tcg-cs-rr",
                            cell=cell, rep=rep))
            if kernel == "piggin":
                rows += [row(kernel, "trylock_retry_instructions_per_op.find_inode_fast",
                             spent, mode="tcg-cs-rr", lock="hash", cell=cell, rep=rep),
                         row(kernel, "trylock_retry_instructions_per_op.inode_lru_isolate",
                             1.0, mode="tcg-cs-rr", lock="lru", cell=cell, rep=rep)]
    case = evidence.Case("create-unlink", "tmpfs", "create-unlink")
    assert duel.price_per_boot(rows, case, 2) == {"chinner": [0.0, 0.0, 0.0],
                                                  "piggin": [42.0, 45.0, 40.0]}
    e = duel._price(rows, case, 2, ["chinner", "piggin"])
    assert e.ahead == "chinner" and e.rule == "interval" and e.unit == "instructions/op"


def test_round_robin_boots_with_no_failed_trylock_are_measured_not_missing():
    """The duel run of 2026-12-07: one tcg-cs-rr boot of each at 2 vCPUs, no icache
    trylock failed in either (only ext4's block-group locks did): an entry that says
    so, with no claim (one boot a side), not a kind the run "did not measure"."""
    rows = [row(kernel, "instructions_per_op", 90000.0, mode="tcg-cs-rr",
                cell=f"{kernel}-rr", rep=1) for kernel in ("chinner", "piggin")]
    case = evidence.Case("create-unlink", "tmpfs", "create-unlink")
    e = duel._price(rows, case, 2, ["chinner", "piggin"])
    assert (e.ahead, e.ratio, e.boots) == ("?", 1.0, (1, 1))
    assert e.note == "no failed icache trylock in any round-robin boot of either"


def test_boot_against_boot_is_judged_per_vcpu_count_never_pooled():
    """piggin below chinner in all 6 boot pairs of the 2026-12-04 reference, three at each
    vCPU count: per count, three pairs cannot go below p = 0.25, so nothing is claimed
    (pooled, the six made a claim at 0.031), and both counts lean the same way."""
    rows = tidy.read(DATA / "perf-throughput.tsv")
    order = ["mainline", "base", "chinner", "piggin"]
    found = [e for e in duel.entries(rows, KERNELS, None, DATA / "none.json", order)
             if e.kind == "paired"]
    assert [(e.cpus, e.detail) for e in found] == [(1, "1 vCPU, 3 boot pairs"),
                                                   (2, "2 vCPUs, 3 boot pairs")]
    for e in found:
        assert e.ahead == "" and not e.rule and e.low < e.ratio < 1 < e.high
        assert e.note == ("piggin faster in 0 of 3 pairs (sign-flip p = 0.25; 3 pairs "
                          "cannot go below 0.25)")
    assert duel.sign_flip(rows).status == "no flip"
    chinner = evidence.cross_case(rows, "chinner", "mainline")
    assert (chinner.pairs_won, len(chinner.pair_ratios)) == (4, 6) and chinner.p_pairs > 0.2


def test_a_design_is_behind_alone_only_if_every_boot_of_it_is_beyond_every_other(entries):
    """The report writes "every piggin boot beyond every other kernel's" for such a case:
    a rank test that puts the design's boots apart while one boot of another kernel lies
    among them is not that."""
    import dataclasses
    p99 = find(entries, XFS, "latency", "2 vCPUs")
    assert p99.behind == "piggin" and p99.behind_alone()
    mixed = dict(p99.values)
    slowest = max(mixed["piggin"])
    mixed["mainline"] = sorted(mixed["mainline"])[:-1] + [slowest * 0.99]
    among = dataclasses.replace(p99, values=mixed)
    others = [v for k, vs in mixed.items() if k != "piggin" for v in vs]
    assert stats.rank_test(mixed["piggin"], others).apart
    assert not among.behind_alone()


ANON = Path(__file__).resolve().parent.parent / "test_data" / "duel-20261206"


def test_the_shared_anon_inodes_i_lock_contention_is_a_kind_of_its_own():
    """anonstorm: every file stands on the one anon inode, so its i_lock is the lock the
    workers share; the shared-lock kinds see no contention at all there."""
    rows = tidy.read(ANON / "anonstorm-debug.tsv")
    found = duel.entries(rows, KERNELS, None, ANON / "no-scaling.json")
    eventfd = evidence.Case("anonstorm", "tmpfs", "eventfd")
    shared = find(found, eventfd, "contention", "2 vCPUs")
    assert shared.ratio is None  # no shared-lock contention in either design
    inode = find(found, eventfd, "inode_contention", "2 vCPUs")
    assert inode.figures["piggin"].mean > 0 and inode.figures["chinner"].mean > 0
    counts = duel.contention_counts(rows, eventfd, 2, duel.PER_INODE_ROLES)
    (x, ex), (y, ey) = counts["piggin"], counts["chinner"]
    assert inode.ratio == pytest.approx((x / ex) / (y / ey))


def test_a_kind_of_evidence_the_run_lacks_is_said_not_measured(entries):
    """The 2026-12-04 rows have no round-robin tcg-cs boots: the report must say the
    price of failed trylocks was not measured, not stay silent on it."""
    assert not [e for e in entries if e.kind == "price"]
    ctx = duel_section.Context(entries, [], 2, None, [])
    text = duel_section._cannot(ctx)
    assert "what this run did not measure: failed-trylock instructions (tcg-cs)" in text
    assert "single-thread cost (-icount) (" not in text  # measured: not listed


def test_a_sign_flip_is_confirmed_only_when_both_counts_are_apart():
    """The 2026-12-06 reference's pattern, planted: piggin's 1-vCPU boots four times as
    fast, its 2-vCPU boots as measured (behind in 3 of 3 rounds). The counts lean
    opposite ways and differ (their ratio's interval excludes 1), yet the 2-vCPU lean's
    own interval includes no change: not a confirmed flip."""
    rows = tidy.read(DATA / "perf-throughput.tsv")
    flipped = [dataclasses.replace(r, value=r.value * (4.0 if r.kernel == "piggin" else 1.0))
               if r.cpus == 1 else r for r in rows]
    flip = duel.sign_flip(flipped)
    one, two = flip.leans
    assert one.low > 1 and two.ratio < 1 < two.high
    assert flip.opposite and flip.status == "not confirmed"
    assert flip.between.high < 1  # 2 vCPUs against 1: the counts do differ
    said = duel_section.flip_sentence(flip)
    assert "**The sign flip is not confirmed**" in said
    assert "its interval excludes no change: the counts differ" in said
    # Both sides apart (2-vCPU boots halved as well): confirmed, with its size.
    both = [dataclasses.replace(r, value=r.value * (0.5 if r.kernel == "piggin" else 1.0))
            if r.cpus == 2 else r for r in flipped]
    assert duel.sign_flip(both).status == "confirmed"
    assert "**The sign flip between chinner and piggin is confirmed**" in \
        duel_section.flip_sentence(duel.sign_flip(both))


def context(rows, found, **more):
    """The duel's context of rows, with the permutation over their boots."""
    return duel_section.Context(found, [], 2, None, [], more.get("differences", {}),
                                more.get("not_measured", {}), duel.ISOLATED,
                                boot_perm.analyse(rows, duel.ISOLATED),
                                duel.sign_flip(rows))


def test_the_answer_is_given_per_design_difference(rows, entries):
    """Each workload (or phase) names the design difference it works; the report groups
    the comparisons by it. Here the one case of the captured rows: create-unlink, where
    piggin's XFS recycle wait (2026-12-04) cost it every timed comparison of XFS: six
    claims, all from three boots a kernel at each vCPU count, which no permutation of
    three boots a side can put beyond chance (p = 0.1 at best)."""
    differences = {"create-unlink": "list membership under i_lock (create, unlink)"}
    ctx = context(rows, entries, differences=differences)
    [d] = duel_section.difference_verdicts(ctx)
    assert d.name == differences["create-unlink"]
    assert {e.case for e in d.sub.entries} == {XFS, EXT4}
    assert not [e for e in d.sub.entries if e.prediction or e.kind == "paired"]
    costs = [e for e in d.sub.entries if e.kind in duel_section.COUNTED and e.ahead != "?"]
    assert d.tests == len(costs) and d.claims == len([e for e in costs if e.ahead]) == 6
    assert [c.cpus for c in d.counts] == [1, 2]
    assert [c.chance.p for c in d.counts] == [0.1, 0.1] and not d.decided
    assert d.text.startswith("at 1 vCPU: neither ahead beyond chance (2 claims in 4 tests")
    [row] = duel_section.difference_table(ctx).rows
    assert row[0] == d.name and row[1] == "create-unlink on ext4, create-unlink on xfs"
    assert "per-inode (i_lock) traffic 2" in row[5]  # a mechanism, not a cost
    assert duel_section.difference_sentence(ctx).endswith(f"{d.name}: {d.text}.")
    # A run made before differences were declared answers as before.
    assert duel_section.difference_table(duel_section.Context(entries, [], 2, None, [])) is None


def test_differences_the_run_did_not_measure_are_named_not_dropped(entries):
    differences = {"create-unlink": "list membership under i_lock (create, unlink)"}
    walks = {"sb inode list walks (RCU in piggin)": ["sbwalk", "syncrace"]}
    ctx = duel_section.Context(entries, [], 2, None, [], differences, walks)
    said = duel_section.difference_sentence(ctx)
    assert said.startswith("Per design difference (the workloads' own declarations)")
    assert said.endswith("Not measured in this run, so not answered: sb inode list walks "
                         "(RCU in piggin) (sbwalk, syncrace) (WORKLOADS=default,sbwalk,"
                         "syncrace adds them).")
    # Every sub-context keeps them, and a run with nothing left out says nothing more.
    assert all(sub.not_measured == walks for _, sub in ctx.by_difference())
    assert "Not measured" not in duel_section.difference_sentence(
        duel_section.Context(entries, [], 2, None, [], differences))


def test_holms_step_down_over_the_counts():
    assert duel_section.holm([0.01, 0.04]) == [True, True]  # 0.01 < 0.025, 0.04 < 0.05
    assert duel_section.holm([0.03, 0.04]) == [False, False]  # 0.03 >= 0.025: stop
    assert duel_section.holm([0.2, 0.001, 0.03]) == [False, True, False]


def test_a_count_the_control_does_not_reproduce_is_not_exact():
    """mainline and chinner take the same locks: where their counts differ (a background
    loop beside the workers) one debug boot per kernel decides nothing; where they agree
    (hotinode handle) the count stays exact."""
    rows = tidy.read(DATA.parent / "reference-20261206" / "background-counts.tsv")
    order = ["mainline", "base", "chinner", "piggin"]
    sync = evidence.Case("hotinode", "ext4", "write-vs-sync")
    e = duel._exact(rows, sync, 1, duel.PER_INODE_ROLES, "per_inode", order)
    assert e.figures["mainline"].mean == pytest.approx(7.72, abs=0.01)
    assert e.figures["chinner"].mean == pytest.approx(8.00, abs=0.01)
    assert e.ahead == "?" and e.rule == ""
    assert e.note.startswith("not exact here: mainline and chinner take the same locks yet "
                             "mainline 7.72 against 8; decided by the boots, one per kernel")
    handle = evidence.Case("hotinode", "ext4", "handle")
    e = duel._exact(rows, handle, 1, duel.PER_INODE_ROLES, "per_inode", order)
    assert e.ahead == "chinner" and e.rule == "exact" and not e.note
    for fs in ("ext4", "xfs"):
        lookups = evidence.Case("reclaim", fs, "lookup-under-reclaim")
        assert duel._exact(rows, lookups, 1, duel.PER_INODE_ROLES, "per_inode",
                           order).ahead == "?"


def test_shared_traffic_where_trylocks_fail_is_shown_but_decided_by_boots():
    rows = tidy.read(DATA.parent / "reference-20261206" / "background-counts.tsv")
    order = ["mainline", "base", "chinner", "piggin"]
    handle = evidence.Case("hotinode", "ext4", "handle")
    roles = duel.shared_roles(rows)
    four = duel._exact(rows, handle, 4, roles, "shared", order)
    assert four.detail == "4 vCPUs" and four.ratio == pytest.approx(5.703, abs=0.001)
    assert four.ahead == "?" and four.note.endswith("one per kernel: no claim")
    one = duel._exact(rows, handle, 1, roles, "shared", order)
    assert one.ahead == "" and not one.note  # exact and equal: no trylock fails on 1 vCPU


def test_the_headline_is_per_vcpu_count_and_needs_its_claims_beyond_chance(rows, entries):
    # Six claims for chinner (XFS's recycle wait), but from three boots a kernel: the
    # permutation over boots cannot go below 0.1 at either count.
    ctx = context(rows, entries)
    found = duel_section.count_verdicts(ctx)
    assert [(c.cpus, len(c.first), len(c.second), c.chance.least_p) for c in found] == \
        [(1, 2, 0, 0.1), (2, 4, 0, 0.1)]
    assert duel_section.verdict(ctx) == "neither ahead beyond chance at 1 or 2 vCPUs"
    # Without a claim at one count, the counts read apart.
    quiet = [e for e in entries if not (e.cpus == 1 and e.ahead in ("chinner", "piggin")
                                        and e.kind in duel_section.COUNTED)]
    tests = boot_perm.tests(rows, duel.ISOLATED)
    quiet_ctx = dataclasses.replace(ctx, entries=quiet, perm=boot_perm.permute(
        [t for t in tests if t.cpus == 2], duel.ISOLATED))
    assert duel_section.verdict(quiet_ctx) == "neither ahead beyond chance at 2 vCPUs"


def test_a_flag_sets_aside_wins_above_one_vcpu_only_where_the_locks_are_the_same():
    # -icount runs one vCPU: it says chinner runs mainline's instructions, not that the
    # two contend alike at 2 vCPUs. Only the 2-vCPU lock counts of the debug boots do.
    timed = tidy.read(DATA / "perf-throughput.tsv")
    walk = evidence.Case("fstree", "tmpfs", "walk")
    alone = evidence.cross_case(timed, "chinner", "mainline")
    assert alone.flagged and alone.locks == ((2, 0, 0),)
    assert alone.covers(1, walk) and not alone.covers(2, walk)
    counted = timed + tidy.read(DATA / "debug-acquisitions-c2.tsv")
    chinner = evidence.cross_case(counted, "chinner", "mainline")
    assert chinner.locks == ((2, 17, 0),) and chinner.covers(2, walk)
    # piggin takes other locks than mainline at 2 vCPUs, except where neither takes
    # any: a pattern stands in the cases that differ and only there.
    piggin = evidence.cross_case(counted, "piggin", "mainline")
    (cpus, compared, apart), = piggin.locks
    assert (cpus, compared) == (2, 17) and 0 < apart < compared
    assert not piggin.covers(2, evidence.Case("create-unlink", "tmpfs", "create-unlink"))
    assert piggin.covers(2, evidence.Case("igetstorm", "ext4", "open-by-handle"))


def test_chinners_flag_sets_aside_its_two_vcpu_wins_only_with_the_two_vcpu_lock_counts():
    timed = tidy.read(DATA / "perf-throughput.tsv")
    counts = tidy.read(DATA / "debug-acquisitions-c2.tsv")

    def set_aside(rows):
        found = duel.entries(rows, KERNELS, None, DATA / "no-scaling.json")
        ctx = duel_section.Context(found, [evidence.cross_case(rows, "chinner", "mainline")],
                                   2, None, [])
        return {(e.case.label, e.cpus) for e in found if ctx.confounded(e)}

    without = set_aside(timed)
    assert ("fstree create on tmpfs", 1) in without
    assert not [c for c in without if c[1] == 2]
    with_counts = set_aside(timed + counts)
    assert {("fstree create on ext4", 2), ("fstree walk on tmpfs", 2)} <= with_counts
    assert without < with_counts


def test_a_prediction_that_rests_on_a_fallback_says_so_in_its_row():
    case = evidence.Case("fstree", "xfs", "unlink")
    found = {("chinner", case): duel.Predicted(900.0, 1000.0, 1100.0, ("wb hold",)),
             ("piggin", case): duel.Predicted(1900.0, 2000.0, 2100.0, ())}
    allowed = {case: duel.PairRule("piggin", True, "")}
    e = duel._prediction(found, allowed, case)
    assert e.ahead == "piggin" and e.fallbacks == "chinner: wb hold"
    text = duel_section.ahead_text(e, duel_section.Context([e], [], 2, None, []))
    assert text.startswith("predicted **piggin**") and text.endswith(
        "fallback inputs: chinner: wb hold")
    found["chinner", case] = duel.Predicted(900.0, 1000.0, 1100.0, ())
    assert "fallback" not in duel_section.ahead_text(
        duel._prediction(found, allowed, case), duel_section.Context([e], [], 2, None, []))


def test_a_prediction_is_a_claim_only_where_the_sweeps_rule_and_the_record_allow(tmp_path):
    import json
    case = evidence.Case("anonstorm", "tmpfs", "epoll")
    found = {("chinner", case): duel.Predicted(1.9e6, 2.0e6, 2.1e6, ()),
             ("piggin", case): duel.Predicted(0.9e6, 1.0e6, 1.1e6, ())}
    pair = {"pair": "isolated", "workload": "anonstorm", "fs": "tmpfs", "phase": "epoll",
            "machine": "2s", "rule": "first", "why": "sweep +90% to +97%"}
    saved = tmp_path / "scaling.json"
    for allowed, ahead in ((True, "chinner"), (False, "?")):
        saved.write_text(json.dumps({"anchors": {"verdicts_allowed": allowed},
                                     "pairs": [pair, dict(pair, machine="4s")]}))
        e = duel._prediction(found, duel.pair_rules(saved), case)
        assert e.ahead == ahead
        assert ("withheld" in e.note) == (not allowed)
    # A rule that passes on one machine and not another makes no design ahead.
    saved.write_text(json.dumps({"anchors": {"verdicts_allowed": True},
                                 "pairs": [pair, dict(pair, machine="4s", rule="no prediction",
                                                      why="the sign changes")]}))
    assert duel._prediction(found, duel.pair_rules(saved), case).ahead == ""
    # Without the rule's outcome (an old run), no claim.
    assert duel._prediction(found, {}, case).ahead == "?"


def test_the_answer_says_what_its_cost_tests_could_show_before_any_verdict(rows, entries):
    # "neither is ahead" from tests that could only see a factor of two is not
    # evidence of equal cost: the opening gives each kind's reach per vCPU count, first.
    ctx = context(rows, entries)
    text = duel_section.answer(ctx)[0]
    assert text.startswith("**Asked of the isolated pair: chinner against piggin, the same "
                           "structures")
    reach = text.index("Reach, the smallest difference the cost tests could show (median), "
                       "before any verdict: at 1 vCPU timed throughput (TCG) ")
    assert reach < text.index("neither ahead beyond chance")
    for cpus in (1, 2):
        timed = sorted(e.detectable for e in entries if e.kind == "timed" and e.cpus == cpus
                       and e.ahead != "?" and e.detectable == e.detectable)
        assert (f"timed throughput (TCG) {blocks.apart_text(timed[len(timed) // 2])} "
                f"({len(timed)} tests)") in text


def test_a_claim_by_the_rank_test_alone_says_its_interval_includes_no_change(entries):
    # create-unlink on XFS at 1 vCPU: every piggin boot below every other, yet the
    # interval of its ratio to chinner spans 0.097x to 1.4x.
    ctx = duel_section.Context(entries, [], 2, None, [])
    ranked = [e for e in entries if e.rule == "rank test" and e.ahead in ("chinner", "piggin")]
    assert ranked
    for e in ranked:
        spans = e.low < 1 < e.high
        assert ("interval includes no change" in duel_section.ahead_text(e, ctx)) == spans
    assert any(e.low < 1 < e.high for e in ranked)


def test_a_ratio_of_two_as_written_is_a_factor_either_way():
    assert duel_section.change_text(4.0 / 2.0) == "2.0x"
    assert duel_section.change_text(1.9999999) == "2.0x"
    assert duel_section.change_text(0.5000001) == "0.50x"
    assert duel_section.change_text(1.5) == "+50%"


def test_contention_claims_count_only_with_boots_and_a_control_that_holds():
    # mainline and chinner take the same locks, so how often the contention test puts
    # those two apart is its real false-claim rate. anonstorm's i_lock contention of the
    # 2026-12-06 reference: one debug boot a kernel, and the control rejects in 3 of 3.
    rows = tidy.read(DATA.parent / "duel-20261206" / "anonstorm-debug.tsv")
    found = [e for e in duel.entries(rows, KERNELS, None, DATA / "no-scaling.json")
             if e.kind == "inode_contention"]
    assert len(found) == 3 and all(e.control_p < 0.05 for e in found)
    assert all(e.control == (3, 3) for e in found) and not duel.control_holds(3, 3)
    # No claim counts: each is shown, with what it would say and why not.
    assert all(e.ahead in ("", "?") for e in found)
    shown = [e for e in found if e.shown]
    assert shown and all("shown, not counted: 1 debug boot per kernel" in e.note for e in shown)
    ctx = duel_section.Context(found, [], 2, None, [])
    text = duel_section.ahead_text(shown[0], ctx)
    assert text.startswith(f"shown, not counted: the test puts **{shown[0].shown}** ahead")
    assert text.endswith("[control (mainline against chinner, the same locks) rejects in "
                         "3 of 3: it fails]")
    # The glance table counts none of them for either design, and says why.
    row = next(r for r in duel_section.glance_measured(ctx).rows
               if r[0] == "i_lock contention (lockdep kernels)")
    assert row[4:6] == ["0", "0"] and f"({len(shown)} shown, not counted)" in row[7]
    assert row[-1] == "control (mainline against chinner, the same locks) rejects in 3 of 3: " \
        "it fails"
    # A control that rejects at about its nominal rate holds; one with no test does not.
    assert duel.control_holds(1, 20) and duel.control_holds(0, 3)
    assert not duel.control_holds(4, 20) and not duel.control_holds(0, 0)




def test_an_exact_count_the_debug_boots_do_not_repeat_is_decided_by_the_boots():
    """igetstorm-crowded on tmpfs: the chains differ from boot to boot, and piggin's i_lock
    per op with them (11.54 in the 2026-12-06 reference, 10.56 in the rerun of
    2026-12-07, issue 38). A second debug boot of each kernel: the reference's rows, and
    piggin's scaled to the rerun's count. Where a kernel's boots disagree the count is
    not exact; where every boot repeats (every other kernel here) it stays exact."""
    reference = Path(__file__).resolve().parent.parent / "test_data" / "reference-20261206-094619"
    crowded = evidence.Case("igetstorm-crowded", "tmpfs", "open-by-handle")
    rows = [r for r in tidy.read(tidy.table_in(reference)) if r.flavour == "debug"
            and r.cpus == 1 and evidence._in_case(r, crowded)]
    (piggin,) = evidence.acquisition_values(rows, crowded, 1, duel.PER_INODE_ROLES)["piggin"]
    assert piggin == pytest.approx(11.542, abs=0.001)
    again = [dataclasses.replace(r, cell=r.cell + "-again", repetition=2, value=(
        r.value * 10.56 / piggin if r.kernel == "piggin" and r.lock == "i_lock"
        and r.metric == "acquisitions_per_op" else r.value)) for r in rows]
    order = ["mainline", "base", "chinner", "piggin"]
    one = duel._exact(rows, crowded, 1, duel.PER_INODE_ROLES, "per_inode", order)
    assert one.exact and one.ahead == "chinner" and one.rule == "exact"
    two = duel._exact(rows + again, crowded, 1, duel.PER_INODE_ROLES, "per_inode", order)
    assert not two.exact and two.rule != "exact"
    assert two.note.startswith("not exact here: the debug boots disagree (piggin 10.56 to "
                               "11.54); decided by the boots")
    assert duel.unrepeated({"chinner": [2.0015, 2.0015], "piggin": [10.56, 11.542]},
                           ("chinner", "piggin")) == [("piggin", 10.56, 11.542)]
    # The shared locks repeat in every boot of every kernel: still exact.
    shared = duel._exact(rows + again, crowded, 1, duel.shared_roles(rows), "shared", order)
    assert shared.exact


def test_the_secondary_table_calls_a_count_exact_only_where_the_boots_repeat_it():
    """The same rows as the duel's test above, against mainline: piggin's i_lock count
    of igetstorm-crowded on tmpfs, one boot each, is exact; with a second boot that
    does not repeat it, it is decided by the boots (interval or rank), never 'exact'."""
    reference = Path(__file__).resolve().parent.parent / "test_data" / "reference-20261206-094619"
    crowded = evidence.Case("igetstorm-crowded", "tmpfs", "open-by-handle")
    rows = [r for r in tidy.read(tidy.table_in(reference)) if r.flavour == "debug"
            and r.cpus == 1 and r.lock == "i_lock" and evidence._in_case(r, crowded)
            and r.metric == "acquisitions_per_op"]
    rows.append(dataclasses.replace(rows[0], value=1.0, metric="throughput", lock=""))
    (piggin,) = [r.value for r in rows if r.kernel == "piggin" and r.lock]
    again = [dataclasses.replace(r, cell=r.cell + "-again", value=r.value * (
        10.56 / piggin if r.kernel == "piggin" else 1.0)) for r in rows if r.lock]
    for found, exact in ((rows, True), (rows + again, False)):
        (v,) = [v for v in evidence.verdicts(found, "mainline", KERNELS)
                if v.evidence == "exact"]
        assert v.repeats("mainline") and v.repeats("piggin") == exact
        assert v.outcome("piggin") == "worse"
        assert (v.decided_by("piggin") == "exact") == exact


def test_a_workload_that_fixes_its_workers_is_read_at_its_own_count():
    """hotinode-crowd runs four workers whatever the vCPUs: its debug rows have 4 workers
    at 2 vCPUs, and no step with as many workers as vCPUs. The reference's 4-vCPU
    hotinode count boots (four workers), read as such a step at 2 vCPUs: its retries,
    locks and contention are the case's, not dropped for want of a 2-worker step."""
    reference = Path(__file__).resolve().parent.parent / "test_data" / "reference-20261206-094619"
    handle = evidence.Case("hotinode", "ext4", "handle")
    rows = [dataclasses.replace(r, cpus=2, mode="tcg") for r in
            tidy.read(tidy.table_in(reference)) if r.flavour == "debug" and r.cpus == 4
            and evidence._in_case(r, handle)]
    assert {r.procs for r in rows} == {4}
    assert evidence.main_procs(rows, handle, 2) == 4
    assert not evidence.retries(rows, 2)  # read as 2 workers, the step is not there
    fixed = evidence.retries(rows, 2, fixed=True)
    assert fixed["piggin", handle.label, "hash_find_fast"] == pytest.approx(4.70, abs=0.01)
    found = duel.entries(rows, KERNELS, None, DATA / "none.json")
    retries = find(found, handle, "retries", "2 vCPUs, 4 workers")
    assert retries.counters["piggin"][0][0] == "hash_find_fast"
    shared = find(found, handle, "shared", "2 vCPUs, 4 workers")
    assert shared.ratio == pytest.approx(5.703, abs=0.001)


def test_shared_lock_contention_is_controlled_by_kernels_that_take_the_same_locks():
    """mainline and chinner take as many shared locks but not the same ones (a global
    hash and per-sb lists against per-bucket bit locks and per-CPU lists): their
    contention differs by design, so they are no negative control of it (in the
    reference of 2026-12-06 they were, and it rejected in 15 of 19). Its control is
    mainline against chinner-2.6.39 (6.1's own hash and list locks); a run without
    chinner-2.6.39 has none (planted here: mainline's debug rows relabelled), while the
    i_lock control stays mainline against chinner."""
    rows = tidy.read(tidy.table_in(DATA.parent / "reference-20261206-094619"))

    def contention(found, kind):
        return [e for e in found if e.kind == kind and e.detail.startswith("2 vCPU")]
    found = duel.entries(rows, KERNELS, None, DATA / "no-scaling.json")
    alone = contention(found, "contention")
    assert alone and all(math.isnan(e.control_p) for e in alone)
    assert all(e.control == (0, 0) for e in alone)
    assert any(math.isfinite(e.control_p) for e in contention(found, "inode_contention"))
    planted = rows + [dataclasses.replace(r, kernel="chinner-2.6.39") for r in rows
                      if r.kernel == "mainline" and r.flavour == "debug"]
    with_control = contention(duel.entries(planted, KERNELS + ["chinner-2.6.39"], None,
                                           DATA / "no-scaling.json"), "contention")
    measured = [e for e in with_control if math.isfinite(e.control_p)]
    assert measured and all(e.control_p > 0.5 for e in measured)
    assert all(e.control[0] == 0 for e in with_control)


def test_a_timed_lead_from_one_session_is_not_replicated(rows, entries):
    """A whole session can run one kernel fast (README, "Noise between runs"): a lead
    beyond chance that rests on timed claims stands only when two sessions timed it;
    one resting on -icount alone needs no second session."""
    found = duel_section.count_verdicts(context(rows, entries))
    two = next(c for c in found if c.cpus == 2)
    assert any(e.kind in duel_section.SESSION_BOUND for e in two.first)
    decided = dataclasses.replace(two, decided=True)
    assert dataclasses.replace(decided, sessions=1).text == \
        "chinner ahead in one session only: not replicated"
    assert dataclasses.replace(decided, sessions=1).short == "not replicated"
    assert dataclasses.replace(decided, sessions=2).text == "chinner ahead"
    icount = [dataclasses.replace(e, kind="icount") for e in two.first]
    assert dataclasses.replace(decided, sessions=1, first=icount).text == "chinner ahead"
    assert dataclasses.replace(decided, sessions=0).short == "not replicated"
    # Each design difference is judged on the pair's sessions, at its own vCPU count.
    both = frozenset((k, c) for k in ("chinner", "piggin") for c in (1, 2))
    at_two = duel_section.Session("20261207-192225", "20261207-193407", 12, (1, 2), both)
    at_one = duel_section.Session("20261207-150331", "20261207-150331", 6, (1,),
                                  frozenset({("chinner", 1), ("piggin", 1)}))
    ctx = dataclasses.replace(context(rows, entries), sessions=[at_one, at_two])
    assert all(sub.sessions == [at_one, at_two] for _, sub in ctx.by_difference())
    assert {c.cpus: c.sessions for c in duel_section.count_verdicts(ctx)} == {1: 2, 2: 1}
