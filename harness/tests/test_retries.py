"""/proc/icache_retries counters: every one the series define is in the catalogue
(analysis/retry_counters.py), and the tidy rows carry each counter's kind."""

import re

import pytest

from harness.analysis import retry_counters as retries
from harness.boot import measure
from harness.layout import REPO_ROOT

# The name tables of the counters in the series' patches: piggin's
# [ICACHE_RETRY_X] = "name", chinner's [ICR_X] = "name".
NAME_LINE = re.compile(r'^\+\s*\[(?:ICACHE_RETRY|ICR)_\w+\]\s*=\s*"(\w+)",', re.M)


def defined_in(series: str) -> set[str]:
    text = "".join(p.read_text() for p in sorted((REPO_ROOT / f"series-{series}").glob("0*.patch")))
    return set(NAME_LINE.findall(text))


@pytest.mark.parametrize("series", ["piggin", "chinner"])
def test_every_counter_a_series_defines_is_described_and_no_more(series):
    defined = defined_in(series)
    assert defined, f"no counter names found in series-{series}: did the table's form change?"
    described = {c.name for c in retries.COUNTERS.values() if c.series == series}
    assert defined == described


def test_kinds_are_known():
    assert {c.kind for c in retries.COUNTERS.values()} <= set(retries.KINDS) - {"unknown"}
    assert [f.unit for f in measure._retry_figures("x", {"never_heard_of": 3}, 0, "op")] == \
        ["count"]


# Captured 2026-12-06 from the debug boots at 2 vCPUs of compare run 20261206-094619
# (the series of issue 28), the write-vs-sync window of hotinode/ext4/p2 (2000 writes).
CAPTURED = REPO_ROOT / "harness" / "test_data" / "retries"


def test_retry_figures_of_captured_windows_keep_each_counter_and_its_kind():
    piggin = measure._retries(
        (CAPTURED / "captured-piggin-debug-2cpu-hotinode-ext4-write-vs-sync.retries").read_text())
    chinner = measure._retries(
        (CAPTURED / "captured-chinner-debug-2cpu-hotinode-ext4-write-vs-sync.retries").read_text())
    assert set(piggin) == {c.name for c in retries.COUNTERS.values()
                           if c.series == "piggin" and not c.name.startswith("sb_walk_")
                           and c.name != "iput_global"}
    assert set(chinner) == {c.name for c in retries.COUNTERS.values() if c.series == "chinner"}
    assert piggin["wb_queue_io"] > 0 and chinner["wb_list_relock"] > 0
    figures = {f.metric: f for f in measure._retry_figures("write-vs-sync", piggin, 2000, "op")}
    queue_io = figures["retries.wb_queue_io_per_op"]
    assert queue_io.value == piggin["wb_queue_io"] / 2000
    assert queue_io.unit == "trylock-retry per op"
    assert figures["retries.sb_list_gp_wait"].unit == "wait"
    relock = measure._retry_figures("write-vs-sync", chinner, 2000, "op")
    assert {f.unit for f in relock if f.metric == "retries.wb_list_relock_per_op"} == \
        {"relock per op"}
