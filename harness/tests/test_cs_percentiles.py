"""The report's percentiles of critical sections and waits (duel_section), on the
rows of a real run: pct-small-tidy.tsv is the tcg-cs, tcg-cs-rr and throughput
rows of a small compare with the histogram plugin (harness/test_data/tcg-cs/
README.md gives the command)."""

from pathlib import Path

from harness.analysis import evidence
from harness.report import duel_section
from harness.run import tidy

ROWS = tidy.read(Path(__file__).resolve().parent.parent / "test_data" / "tcg-cs"
                 / "pct-small-tidy.tsv")
KERNELS = ["mainline", "chinner", "piggin"]


def by_case(table) -> dict:
    return {(row[0], row[1]): row[2:] for row in table.rows}


def test_hold_percentiles_per_kernel_and_role():
    table = duel_section.cs_percentile_table(ROWS, KERNELS)
    assert table.header == ["workload", "lock", "chinner (p50 / p90 / p99)",
                            "piggin (p50 / p90 / p99)", "mainline (p50 / p90 / p99)"]
    cells = by_case(table)
    # piggin's sb-list sections are shorter at every percentile (its per-CPU lists).
    assert cells["create-unlink on tmpfs", "sb_list"] == ["12 / 14 / 14", "10 / 11 / 11",
                                                         "11 / 13 / 13"]
    # A tail the means hide: the i_lock's p99 on ext4 is 112 in every kernel.
    assert [c.split(" / ")[2] for c in cells["create-unlink on ext4", "i_lock"]] == \
        ["112"] * 3
    # piggin takes no wb lock in create-unlink on xfs: an empty cell, not a zero.
    assert cells["create-unlink on xfs", "wb"][1] == ""


def test_waits_are_counted_and_kernels_that_had_none_say_zero():
    table = duel_section.cs_percentile_table(ROWS, KERNELS, wait=True)
    assert by_case(table) == {("hotinode handle on ext4", "i_lock"): ["0", "1: 7 / 7 / 7", "0"]}


def test_a_run_without_histograms_says_so():
    percentiles = {f"{m}_p{q}" for m in ("cs_instructions", "cs_wait_instructions")
                   for q in evidence.CS_PERCENTILES} | {"cs_waits"}
    old = [r for r in ROWS if r.metric not in percentiles]
    assert any(r.metric == "cs_instructions_per_acq" for r in old)
    assert evidence.cs_percentiles(old, evidence.cases(old)[0]) == {}
    [block] = duel_section.cs_percentile_blocks(old, KERNELS, duel_section.duel.ISOLATED)
    assert "not measured in this run" in block.text


def test_blocks_name_what_the_numbers_are():
    holds, table, waits, wait_table = duel_section.cs_percentile_blocks(
        ROWS, KERNELS, duel_section.duel.ISOLATED)
    assert "1 vCPU (-icount)" in holds.text and "9/8" in holds.text
    assert "2 vCPUs round robin" in waits.text and "holder's own instructions" in waits.text
    assert wait_table.rows


def test_boots_that_differ_show_their_range():
    assert duel_section.percentile_text([22.0, 24.0, 22.0]) == "22-24"
    assert duel_section.percentile_text([1536.0]) == "1,536"
