"""Verdicts from a tidy table: winners, exact counts, noise."""

from harness.analysis import evidence
from harness.report import document
from harness.run import tidy
from harness.tests.conftest import row




def test_exact_lock_counts_decide_even_with_two_kernels_one_boot_each():
    rows = [row("mainline", "acquisitions_per_op", 8.0, flavour="debug", lock="i_lock"),
            row("mainline", "acquisitions_per_op", 2.0, flavour="debug", lock="sb_list"),
            row("base", "acquisitions_per_op", 8.0, flavour="debug", lock="i_lock"),
            row("base", "acquisitions_per_op", 2.0, flavour="debug", lock="sb_list"),
            row("base", "acquisitions_per_op", 6.0, flavour="debug", lock="global"),
            row("mainline", "throughput", 1000.0), row("base", "throughput", 900.0)]
    exact = [v for v in evidence.verdicts(rows, "mainline") if v.evidence == "exact"]
    assert len(exact) == 1
    v = exact[0]
    assert v.summaries["mainline"].mean == 10.0 and v.summaries["base"].mean == 16.0
    assert v.winner == "mainline" and v.decided
    assert v.comparison("base").change == 0.6


def test_equal_exact_counts_share_the_win_and_tiny_differences_are_the_same():
    rows = []
    for kernel, i_lock, extra in (("mainline", 8.0, 0.0), ("chinner", 8.05, 0.0),
                                  ("base", 8.0, 3.0), ("piggin", 14.0, 0.0)):
        rows.append(row(kernel, "acquisitions_per_op", i_lock, flavour="debug", lock="i_lock",
                        cpus=1))
        if extra:
            rows.append(row(kernel, "acquisitions_per_op", extra, flavour="debug",
                            lock="global", cpus=1))
        rows.append(row(kernel, "throughput", 1000.0))
    (v,) = [v for v in evidence.verdicts(rows, "mainline") if v.evidence == "exact"]
    assert v.leaders == ["mainline", "chinner"] and v.decided
    assert v.same("chinner", "mainline") and not v.same("base", "mainline")
    assert document.winner_text(v) == "**mainline = chinner**"
    assert document.verdict_cells(v, ["mainline", "chinner", "base", "piggin"]) == [
        "8.00", "+0.63% (same)", "+38%", "+75%"]


def test_noisy_throughput_is_not_decided():
    rows = [row(k, "throughput", v, rep=i + 1)
            for k, vals in (("mainline", (1000, 1300, 800)), ("base", (950, 1200, 900)))
            for i, v in enumerate(vals)]
    (v,) = [v for v in evidence.verdicts(rows, "mainline") if v.evidence == "tcg"]
    assert v.winner == "mainline"
    assert not v.decided


def test_separated_throughput_is_decided_and_icount_is_its_own_evidence():
    rows = [row(k, "throughput", v, rep=i + 1)
            for k, vals in (("mainline", (1000, 1010, 990)), ("base", (500, 505, 495)))
            for i, v in enumerate(vals)]
    rows += [row("mainline", "throughput", 1545.0, mode="tcg-icount", cpus=1),
             row("base", "throughput", 1400.0, mode="tcg-icount", cpus=1)]
    verdicts = {v.evidence: v for v in evidence.verdicts(rows, "mainline")}
    assert verdicts["tcg"].decided and verdicts["tcg"].winner == "mainline"
    assert verdicts["icount"].summaries["base"].mean == 1400.0
    assert verdicts["icount"].cpus == 1


def test_failed_steps_do_not_count():
    rows = [row("mainline", "throughput", 1000.0), row("base", "throughput", 1.0,
                                                        status="lockdep")]
    (v,) = evidence.verdicts(rows, "mainline")
    assert list(v.summaries) == ["mainline"]


def test_lockdep_counts_keep_zeros():
    rows = [row("mainline", "lockdep_reports", 0, flavour="debug"),
            row("base", "lockdep_reports", 1, flavour="debug", status="lockdep")]
    assert evidence.lockdep_counts(rows) == {("mainline", "create-unlink", "tmpfs"): 0,
                                             ("base", "create-unlink", "tmpfs"): 1}


def test_scaling_pairs_workers_counts_of_the_same_boot():
    rows = []
    for rep, (one, two) in enumerate(((1000, 1800), (600, 1080), (900, 1620)), 1):
        rows.append(tidy.Row("base", "perf", "tcg", "create-unlink", "tmpfs", 2, 1, rep,
                             "create-unlink", "", "throughput", one, "", "ok", f"a{rep}"))
        rows.append(tidy.Row("base", "perf", "tcg", "create-unlink", "tmpfs", 2, 2, rep,
                             "create-unlink", "", "throughput", two, "", "ok", f"b{rep}"))
    case = evidence.Case("create-unlink", "tmpfs", "create-unlink")
    s = evidence.scaling(rows, case, "tcg", 2)["base"]
    # The boots differ by 40%, the ratio inside each boot does not.
    assert s.n == 3 and abs(s.mean - 1.8) < 1e-9 and s.stddev < 1e-9


def test_tallies_count_each_kernels_outcomes_by_evidence():
    rows = []
    for kernel, i_lock in (("mainline", 8.0), ("chinner", 8.05), ("piggin", 14.0)):
        rows.append(row(kernel, "acquisitions_per_op", i_lock, flavour="debug", lock="i_lock",
                        cpus=1))
    # TCG: piggin separates (worse), chinner is inside the noise.
    for kernel, vals in (("mainline", (1000, 1010, 990)), ("chinner", (900, 1200, 1000)),
                         ("piggin", (500, 505, 495))):
        rows += [row(kernel, "throughput", v, rep=i + 1) for i, v in enumerate(vals)]
    # -icount: one boot of chinner, so no claim.
    rows += [row("mainline", "throughput", v, mode="tcg-icount", cpus=1, rep=i + 1)
             for i, v in enumerate((1545.0, 1546.0))]
    rows.append(row("chinner", "throughput", 1600.0, mode="tcg-icount", cpus=1))
    tallies = {(t.kernel, t.evidence): t
               for t in evidence.tallies(evidence.verdicts(rows, "mainline"))}
    assert "mainline" not in {k for k, _ in tallies}
    chinner, piggin = tallies["chinner", "exact"], tallies["piggin", "exact"]
    assert (len(chinner.even), chinner.better, chinner.worse) == (1, [], [])
    assert piggin.worse == [0.75] and piggin.even == []
    assert tallies["chinner", "tcg"].even and not tallies["chinner", "tcg"].worse
    assert len(tallies["piggin", "tcg"].worse) == 1
    assert tallies["chinner", "icount"].unclaimed == 1
    table = document.glance_table(evidence.verdicts(rows, "mainline"),
                                ["mainline", "chinner", "piggin"])
    assert table.rows[0][:2] == ["chinner", "lock acquisitions/op (exact), 1 vCPU"]
    assert ["piggin", "lock acquisitions/op (exact), 1 vCPU", "0", "0", "1 (+75%)", "0",
            "1.0%"] in table.rows


def test_sanitizer_reports_by_case_show_zero_as_zero():
    rows = [row("piggin", "lockdep_reports", 0, flavour="sanitize", fs="ext4"),
            row("piggin", "reports.bug", 1, flavour="sanitize", fs="ext4"),
            row("piggin", "reports.bug", 1, flavour="sanitize", fs="ext4", rep=2),
            row("mainline", "lockdep_reports", 0, flavour="sanitize", fs="ext4"),
            row("mainline", "lockdep_reports", 0, flavour="debug", fs="ext4"),
            row("mainline", "reports.warn", 1, flavour="debug", fs="ext4")]
    assert evidence.kernel_reports(rows, "sanitize") == {
        ("piggin", "create-unlink", "ext4"): {"bug": 2},
        ("mainline", "create-unlink", "ext4"): {}}
