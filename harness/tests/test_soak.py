"""make soak: durations, reproducible mixes, the summary table."""

import json
import random
from collections import Counter

import pytest

from harness.guest import workloads
from harness.kernels import kbuild
from harness.layout import REPO_ROOT
from harness.run import records, soak
from harness.tests.conftest import SOAK_IMAGES

# The tests' own declarations, never the live workloads folder: a user's
# additions there must not change what this test draws.
KNOWN = list(workloads.load_all([REPO_ROOT / "harness" / "test_data" / "workloads",
                                 REPO_ROOT / "harness" / "test_data" / "byob" / "workloads"])
             .values())


def plan(seed: int, duration_s: float, *kernels: str) -> soak.Plan:
    """A soak's plan naming the captured debug images of these kernels."""
    return soak.Plan(seed, duration_s, "2026-12-06T09:03:37+0000",
                     {f"{k}/debug": kbuild.identity(SOAK_IMAGES[k, "debug"]) for k in kernels})


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
    soak.write_summary(tmp_path, plan(1, 7200.0, "piggin", "chinner"),
                       {("piggin", "debug"): tally, ("chinner", "debug"): quiet},
                       [{"boot": "x"}] * 5, 7200.0, finished=True)
    lines = (tmp_path / "summary.md").read_text().splitlines()
    assert lines[0] == "# Soak, seed 1: 5 boots in 2.00 h of the 2.00 h asked"
    assert lines[2] == "Finished: the time was up."
    assert "| chinner | debug | 3 | 2: 3 | 0.50 | ok 3 | 0 | 0 |" in lines
    assert ("| piggin | debug | 2 | 1: 1, 4: 1 | 1.50 | lockdep 1, ok 1 | 1 | circular 1 "
            "(possible deadlock in iput (0002-piggin-debug-c2)) |") in lines
    tallies = json.loads((tmp_path / "summary.json").read_text())["tallies"]
    assert tallies["piggin/debug"]["damaged_records"] == 1
    assert tallies["piggin/debug"]["cpus"] == {"1": 1, "4": 1}


def test_summary_of_a_soak_killed_during_a_boot_names_that_boot(tmp_path):
    """The summary written before a boot starts is what a killed soak leaves."""
    done = soak.Tally(boots=1, step_seconds=600.0, statuses=Counter(ok=1), cpus=Counter({1: 1}))
    soak.write_summary(tmp_path, plan(1, 3600.0, "mainline"), {("mainline", "debug"): done},
                       [{"boot": "0001-mainline-debug-c1"}], 3060.0,
                       running="0002-mainline-debug-c4")
    lines = (tmp_path / "summary.md").read_text().splitlines()
    assert lines[0] == "# Soak, seed 1: 1 boots in 0.85 h of the 1.00 h asked"
    assert lines[2].startswith("Boot 0002-mainline-debug-c4 was running when this was written")
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert (summary["finished"], summary["running"], summary["duration_s"]) == \
        (False, "0002-mainline-debug-c4", 3600.0)


def test_summary_names_the_image_of_every_kernel_and_flavour(tmp_path):
    """What a compare run matches its own images against (run/records.py)."""
    tally = soak.Tally(boots=1, step_seconds=56.7, statuses=Counter(ok=1), cpus=Counter({2: 1}))
    soak.write_summary(tmp_path, plan(1, 600.0, "mainline", "piggin"),
                       {("mainline", "debug"): tally},
                       [{"boot": "0001-mainline-debug-c2", "kernel": "mainline", "flavour": "debug",
                         "cpus": 2, "status": "ok", "steps": [], "reports": [], "damaged": []}],
                       80.0)
    lines = (tmp_path / "summary.md").read_text().splitlines()
    # piggin's 14 patches of its own (captured meta.json) and mainline's none; the
    # digest of no patches is the sha256 of nothing.
    assert lines[4] == (
        "Started 2026-12-06T09:03:37+0000. Images: mainline/debug d4a094542ede0508 "
        "(0 patches of its own, digest e3b0c44298fc1c14); piggin/debug 4b0b3931b2aa9ffb "
        "(14 patches of its own, digest " + plan(1, 1, "piggin").images["piggin/debug"]
        .patches_digest + ").")
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["images"]["piggin/debug"]["key"] == "4b0b3931b2aa9ffb"
    assert summary["images"]["mainline/debug"]["commit"] == \
        "1b970f0b7ce9f78058496ecdc0ec8871b907ac0c"
    # What a compare reads back is what the soak wrote, and nothing is left half-written.
    (read,), unnamed = records.read_summary(tmp_path / "summary.json")
    assert unnamed == [] and read.image == plan(1, 1, "mainline").images["mainline/debug"]
    assert (read.tally.boots, read.tally.workload_s, read.finished) == (1, 56.7, False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json", "summary.md"]


def test_a_boot_draws_its_mix_from_one_kernel_command_line():
    crowded = workloads.parse(REPO_ROOT / "harness" / "test_data" / "cmdline" / "crowded.wl")
    rng = random.Random(3)
    mixes = [soak.draw_mix(rng, KNOWN + [crowded], 2) for _ in range(60)]
    assert all(len({s.workload.cmdline for s in m}) == 1 for m in mixes)
    # The one-step group repeats its step rather than make a short boot.
    alone = [m for m in mixes if m[0].workload.cmdline]
    assert alone and all(soak.STEPS_PER_BOOT[0] <= len(m) for m in alone)
