"""reduce.GROUP: how a match group's values over several lines become one figure.

On real output: will-it-scale's open1 and unlink1 as a debug boot captured
them (harness/test_data/byob-window/README.md), one line a second of the
form 'min:M max:X total:T', three of them inside the window. Each
reduction's figure is checked against the same lines read here on their own.
"""

import re
import statistics

import pytest

from harness import lockorder
from harness.boot import channel, measure
from harness.guest import plan, workloads
from harness.layout import REPO_ROOT

DATA = REPO_ROOT / "harness" / "test_data" / "byob-window"
MAINLINE = lockorder.parse(lockorder.MAINLINE_FILE)
SECOND = re.compile(r"^min:(\d+) max:(\d+) total:(\d+)$")
# open1's declaration as captured, reading every number of its per-second lines.
MATCH = ("match.open1 = ^min:(?P<min_per_task>\\d+) max:(?P<max_per_task>\\d+) "
         "total:(?P<ops>\\d+)$")


@pytest.fixture(scope="module")
def received():
    found = channel.parse((DATA / "captured-mainline-debug-c2-ext4-p2.results.raw")
                          .read_bytes())
    assert found.damaged == ()
    return found


def window_seconds(received, step: str) -> list[tuple[int, int, int]]:
    """(min, max, total) of each line from 'measurement' to 'average' (the window)."""
    lines = received.text(f"{step}.out").splitlines()
    inside = lines[lines.index("measurement"):]
    return [tuple(int(g) for g in m.groups()) for line in inside if (m := SECOND.match(line))]


def open1(received, *extra: str, match: str = MATCH) -> dict[str, float]:
    """open1's figures, its captured declaration given match and extra keys."""
    path = DATA / "workloads" / "wis-open1.wl"
    text = re.sub(r"^match\.open1 .*$", match.replace("\\", "\\\\"), path.read_text(),
                  flags=re.MULTILINE)
    workload = workloads.parse(path, text + "".join(f"{line}\n" for line in extra))
    step = plan.Step("s02", workload, "ext4", 2)  # open1 was the boot's second step
    numbers = measure.step_numbers(step, received, MAINLINE)
    assert numbers.error == ""
    return {f.metric: f.value for f in numbers.figures if f.phase == "open1" and not f.lock}


def test_the_captured_window_has_lines_that_differ(received):
    """Every reduction below would give the same figure on one line or equal ones."""
    seconds = window_seconds(received, "s02")
    assert len(seconds) == 3
    assert len({s[1] for s in seconds}) == 3 and len({s[0] for s in seconds}) == 3


def test_by_default_ops_are_summed_and_other_groups_keep_the_last_line(received):
    seconds = window_seconds(received, "s02")
    got = open1(received)
    assert got["ops"] == sum(s[2] for s in seconds) == 11374
    assert got["max_per_task"] == seconds[-1][1] == 1391
    assert got["min_per_task"] == seconds[-1][0] == 1321


def test_sum(received):
    seconds = window_seconds(received, "s02")
    got = open1(received, "reduce.max_per_task = sum")
    assert got["max_per_task"] == sum(s[1] for s in seconds)


def test_last(received):
    """reduce.ops = last: a program that prints a running total."""
    seconds = window_seconds(received, "s02")
    got = open1(received, "reduce.ops = last")
    assert got["ops"] == seconds[-1][2] == 2712


def test_min(received):
    seconds = window_seconds(received, "s02")
    got = open1(received, "reduce.min_per_task = min")
    assert got["min_per_task"] == min(s[0] for s in seconds) == 1190


def test_max(received):
    """will-it-scale's busiest task in any second, not in the last one."""
    seconds = window_seconds(received, "s02")
    got = open1(received, "reduce.max_per_task = max", "reduce.ops = max")
    assert got["max_per_task"] == max(s[1] for s in seconds) == 4263
    assert got["ops"] == max(s[2] for s in seconds)


def test_mean(received):
    """The per-second totals as the rate: their mean is operations per second,
    and ops over it the seconds the window held."""
    seconds = window_seconds(received, "s02")
    match = MATCH.replace("total:(?P<ops>\\d+)", "total:(?P<rate>\\d+)")
    got = open1(received, "reduce.rate = mean", "reduce.max_per_task = mean",
                match=match + "\nmatch.open1 = ^min:\\d+ max:\\d+ total:(?P<ops>\\d+)$")
    assert got["throughput"] == pytest.approx(statistics.mean(s[2] for s in seconds))
    assert got["max_per_task"] == pytest.approx(statistics.mean(s[1] for s in seconds))
    assert got["elapsed"] == pytest.approx(len(seconds))


@pytest.mark.parametrize("key, problem", [
    ("reduce.max_per_task = median", "'median' is not a reduction (known: sum, last, min, "
                                     "max, mean)"),
    ("reduce.ops = mean", "ops counts operations, and a mean of counts counts none"),
    ("reduce.latency = max", "no match key has a group 'latency'"),
])
def test_a_reduction_that_cannot_be_is_refused(key, problem):
    path = DATA / "workloads" / "wis-open1.wl"
    with pytest.raises(workloads.WorkloadError, match=re.escape(problem)):
        workloads.parse(path, path.read_text() + key + "\n")
