"""match honours the window: the records of a real boot of outside programs
(harness/test_data/byob-window/README.md says how they were captured)."""

import dataclasses
import re

import pytest

from harness import lockorder
from harness.boot import channel, measure
from harness.guest import plan, workloads
from harness.layout import REPO_ROOT
from harness.parsers import workload_output

DATA = REPO_ROOT / "harness" / "test_data" / "byob-window"
MAINLINE = lockorder.parse(lockorder.MAINLINE_FILE)
NAMES = ("fsstress", "wis-open1", "wis-unlink1", "stress-dentry", "dbench")
TOTAL = re.compile(r"^min:\d+ max:\d+ total:(\d+)$")


@pytest.fixture(scope="module")
def boot():
    known = workloads.load_all(DATA / "workloads")
    steps = plan.make_steps([(known[name], "ext4", 2) for name in NAMES])
    received = channel.parse((DATA / "captured-mainline-debug-c2-ext4-p2.results.raw")
                             .read_bytes())
    assert received.damaged == ()
    return steps, received


def figures(numbers: measure.StepNumbers) -> dict[tuple[str, str, str], float]:
    return {(f.phase, f.lock, f.metric): f.value for f in numbers.figures}


def totals(out: str) -> tuple[int, int]:
    """will-it-scale's per-second totals: (from 'measurement' to 'average', all)."""
    lines = out.splitlines()
    inside = lines[lines.index("measurement"):]
    return (sum(int(m.group(1)) for line in inside if (m := TOTAL.match(line))),
            sum(int(m.group(1)) for line in lines if (m := TOTAL.match(line))))


def test_will_it_scale_counts_only_the_lines_of_its_window(boot):
    steps, received = boot
    numbers = measure.step_numbers(steps[1], received, MAINLINE)
    assert numbers.error == "" and numbers.note == ""
    got = figures(numbers)
    window, everything = totals(received.text("s02.out"))
    assert everything > 2 * window  # six warm-up seconds before three measured ones
    assert got["open1", "", "ops"] == window
    timed = measure.Window.parse(received.text("s02.window"))
    assert got["open1", "", "throughput"] == pytest.approx(window / timed.window_s)
    # A figure's unit from unit.max_per_task, not from its name.
    max_per_task = next(f for f in numbers.figures if f.metric == "max_per_task")
    assert max_per_task.unit == "op/s"


def test_exact_counts_need_the_operations_of_the_same_window(boot):
    """unlink1 creates and unlinks a file per operation: on ext4 2 inode-hash, 2
    sb-list and 11 i_lock acquisitions (docs/design.md section 6). With the
    window's operations the counts come out exact; with the whole output's
    (the old reading) they would be a third of that."""
    steps, received = boot
    got = figures(measure.step_numbers(steps[2], received, MAINLINE))
    assert got["unlink1", "hash", "acquisitions_per_op"] == pytest.approx(2.0, rel=0.01)
    assert got["unlink1", "sb_list", "acquisitions_per_op"] == pytest.approx(2.0, rel=0.01)
    assert got["unlink1", "i_lock", "acquisitions_per_op"] == pytest.approx(11.0, rel=0.01)
    window, everything = totals(received.text("s03.out"))
    assert got["unlink1", "hash", "acquisitions"] / everything < 1.0


@pytest.mark.parametrize("index, phase, ops", [(3, "dentry", 4096), (4, "dbench", None)])
def test_a_summary_after_the_window_is_read(boot, index, phase, ops):
    """stress-ng's metrics line and dbench's operation table come after lock-end."""
    steps, received = boot
    numbers = measure.step_numbers(steps[index], received, MAINLINE)
    assert numbers.error == ""
    lines = measure.output_lines(steps[index], received, measure.Window.parse(
        received.text(f"{steps[index].id}.window")))
    matched = [line for line in lines for m in steps[index].workload.matches
               if m.pattern.search(line.text)]
    assert matched and {line.place for line in matched} == {"after"}
    got = figures(numbers)
    assert got[phase, "", "ops"] == (ops or got[phase, "", "ops"]) > 0


def test_lines_only_before_the_window_are_an_error(boot):
    """A key that matches nothing but the warm-up says so: those lines are not counted."""
    steps, received = boot
    first = next(line for line in received.text("s02.out").splitlines() if TOTAL.match(line))
    warm = dataclasses.replace(steps[1].workload, matches=(workloads.Match(
        "warm", re.compile(re.escape(first).replace(r"total:", "total:(?P<ops>") + ")"),
        9),))
    numbers = measure.step_numbers(dataclasses.replace(steps[1], workload=warm), received,
                                   MAINLINE)
    assert "only lines before the timed window matched" in numbers.error
    assert f"first: {first!r}" in numbers.error


def test_fsstress_rate_is_the_harness_timing_of_its_declared_operations(boot):
    steps, received = boot
    got = figures(measure.step_numbers(steps[0], received, MAINLINE))
    timed = measure.Window.parse(received.text("s01.window"))
    assert got["fsstress", "", "ops"] == 1000
    assert got["fsstress", "", "throughput"] == pytest.approx(1000 / timed.command_s)


def test_ops_and_rate_that_disagree_with_the_window_are_noted():
    assert measure._rate_note("dentry", 7.31, 11.04) == [
        "dentry: ops/rate gives 7.31 s but the timed window was 11 s (-34%): the throughput "
        "is the program's own rate, over another interval than the window"]
    assert measure._rate_note("dentry", 10.5, 11.04) == []  # within RATE_WINDOW_TOLERANCE


def test_placed_lines_follow_stepwatchs_offsets():
    lines = workload_output.placed_lines(b"warm\nstart\nx\nend\nsummary\n", 5, 17)
    assert [(line.text, line.place) for line in lines] == [
        ("warm", "before"), ("start", "inside"), ("x", "inside"), ("end", "inside"),
        ("summary", "after")]
