"""/proc/icache_retries counters: every one the series define is described, by kind."""

import re

import pytest

from harness import retries
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


def test_kinds_are_known_and_units_carry_them():
    assert {c.kind for c in retries.COUNTERS.values()} <= set(retries.KINDS)
    assert retries.unit_of("hash_find_fast") == "trylock-retry"
    assert retries.unit_of("wb_list_relock") == "relock"
    assert retries.unit_of("sb_list_gp_wait") == "wait"
    assert retries.unit_of("never_heard_of") == "count"
    assert retries.counter("never_heard_of") is None
