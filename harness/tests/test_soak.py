"""make soak: durations, reproducible mixes, the summary table."""

import json
import random
from collections import Counter

import pytest

from harness.guest import workloads
from harness.layout import REPO_ROOT
from harness.run import soak

# The tests' own declarations, never the live workloads folder: a user's
# additions there must not change what this test draws.
KNOWN = list(workloads.load_all([REPO_ROOT / "harness" / "test_data" / "workloads",
                                 REPO_ROOT / "harness" / "test_data" / "byob" / "workloads"])
             .values())


def test_durations():
    assert soak.parse_duration("90s") == 90
    assert soak.parse_duration("45m") == 2700
    assert soak.parse_duration("2h") == 7200
    assert soak.parse_duration("30") == 30
    with pytest.raises(ValueError, match="duration 'soon'"):
        soak.parse_duration("soon")


def test_mixes_are_reproducible_and_varied():
    first = [[s.label for s in soak.draw_mix(random.Random(7), KNOWN, 2)] for _ in range(3)]
    again = [[s.label for s in soak.draw_mix(random.Random(7), KNOWN, 2)] for _ in range(3)]
    assert first == again
    rng = random.Random(7)
    mixes = [soak.draw_mix(rng, KNOWN, 4) for _ in range(20)]
    assert all(soak.STEPS_PER_BOOT[0] <= len(m) <= soak.STEPS_PER_BOOT[1] for m in mixes)
    assert len({s.workload.name for m in mixes for s in m}) == len(KNOWN)
    assert all(len({s.id for s in m}) == len(m) for m in mixes)


def test_summary_counts_reports_by_kind_with_the_first_title(tmp_path):
    tally = soak.Tally(boots=2, step_seconds=5400.0, statuses=Counter(ok=1, lockdep=1),
                       cpus=Counter({4: 1, 1: 1}), damaged=1, reports=Counter(circular=1),
                       first={"circular": "possible deadlock in iput (0002-piggin-debug-c2)"})
    quiet = soak.Tally(boots=3, step_seconds=1800.0, statuses=Counter(ok=3), cpus=Counter({2: 3}))
    soak.write_summary(tmp_path, {("piggin", "debug"): tally, ("base", "sanitize"): quiet},
                       [{"boot": "x"}] * 5, 1, 7200.0, 7200.0, finished=True)
    lines = (tmp_path / "summary.md").read_text().splitlines()
    assert lines[0] == "# Soak, seed 1: 5 boots in 2.00 h of the 2.00 h asked"
    assert lines[2] == "Finished: the time was up."
    assert "| base | sanitize | 3 | 2: 3 | 0.50 | ok 3 | 0 | 0 |" in lines
    assert ("| piggin | debug | 2 | 1: 1, 4: 1 | 1.50 | lockdep 1, ok 1 | 1 | circular 1 "
            "(possible deadlock in iput (0002-piggin-debug-c2)) |") in lines
    tallies = json.loads((tmp_path / "summary.json").read_text())["tallies"]
    assert tallies["piggin/debug"]["damaged_records"] == 1
    assert tallies["piggin/debug"]["cpus"] == {"1": 1, "4": 1}


def test_summary_of_a_soak_killed_during_a_boot_names_that_boot(tmp_path):
    """The summary written before a boot starts is what a killed soak leaves."""
    done = soak.Tally(boots=1, step_seconds=600.0, statuses=Counter(ok=1), cpus=Counter({1: 1}))
    soak.write_summary(tmp_path, {("base", "debug"): done}, [{"boot": "0001-base-debug-c1"}],
                       1, 3060.0, 3600.0, running="0002-base-debug-c4")
    lines = (tmp_path / "summary.md").read_text().splitlines()
    assert lines[0] == "# Soak, seed 1: 1 boots in 0.85 h of the 1.00 h asked"
    assert lines[2].startswith("Boot 0002-base-debug-c4 was running when this was written")
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert (summary["finished"], summary["running"], summary["duration_s"]) == \
        (False, "0002-base-debug-c4", 3600.0)


def test_a_boot_draws_its_mix_from_one_kernel_command_line():
    crowded = workloads.parse(REPO_ROOT / "harness" / "test_data" / "cmdline" / "crowded.wl")
    rng = random.Random(3)
    mixes = [soak.draw_mix(rng, KNOWN + [crowded], 2) for _ in range(60)]
    assert all(len({s.workload.cmdline for s in m}) == 1 for m in mixes)
    # The one-step group repeats its step rather than make a short boot.
    alone = [m for m in mixes if m[0].workload.cmdline]
    assert alone and all(soak.STEPS_PER_BOOT[0] <= len(m) for m in alone)
