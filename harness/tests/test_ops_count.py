"""output = none: declared operations, and ops-count reading back how many ran.

On real output: the byob-window boot's records (fsstress declared, will-it-scale
read back; harness/test_data/byob-window/README.md) and fsstress -v logs of
two builds (harness/test_data/fsstress-verbose/README.md).
"""

import re

import pytest

from harness import cli, lockorder
from harness.boot import channel, measure, runner
from harness.guest import plan, workloads
from harness.layout import REPO_ROOT, default_layout
from harness.parsers import workload_output
from harness.report import document
from harness.run import tidy
from harness.tests.conftest import make_run

WINDOW = REPO_ROOT / "harness" / "test_data" / "byob-window"
VERBOSE = REPO_ROOT / "harness" / "test_data" / "fsstress-verbose"
MAINLINE = lockorder.parse(lockorder.MAINLINE_FILE)
FSSTRESS_IDS = re.compile(r"^(\d+/\d+): ")


@pytest.fixture(scope="module")
def received():
    found = channel.parse((WINDOW / "captured-mainline-debug-c2-ext4-p2.results.raw")
                          .read_bytes())
    assert found.damaged == ()
    return found


def fsstress_step() -> plan.Step:
    workload = workloads.parse(WINDOW / "workloads" / "fsstress.wl")
    return plan.Step("s01", workload, "ext4", 2)


def test_declared_operations_are_marked_as_such(received):
    numbers = measure.step_numbers(fsstress_step(), received, MAINLINE)
    got = {(f.phase, f.metric): f.value for f in numbers.figures if not f.lock}
    assert got["fsstress", "ops"] == got["fsstress", measure.DECLARED_OPS] == 1000
    assert got["fsstress", "throughput"] > 0
    assert "fsstress: the throughput is of the 1000 operations declared (ops), not measured" \
        in numbers.note


def test_the_boot_summary_says_declared_not_measured(received):
    step = fsstress_step()
    numbers = measure.step_numbers(step, received, MAINLINE)
    outcome = runner.StepOutcome(step.id, step.label, "ok", numbers, (), 10.0, 0.0)
    record = runner.BootRecord(WINDOW, "ok", 60.0, 5.0, 0.0, (), (), (outcome,))
    item = cli.boot_summary(record)["steps"][0]
    assert "fsstress fsstress-op/s (ops declared, not measured)" in item


def unlink1_read_back(ops_count: str) -> plan.Step:
    """wis-unlink1 as a program that reports nothing but its per-second lines:
    output none, 100 operations a process declared, ops-count on the lines."""
    path = WINDOW / "workloads" / "wis-unlink1.wl"
    text = re.sub(r"^(output|match\.unlink1|unit\.max_per_task) .*\n", "", path.read_text(),
                  flags=re.MULTILINE)
    text += f"output = none\nops = 100 * {{procs}}\nops-count = {ops_count}\n"
    return plan.Step("s03", workloads.parse(path, text), "ext4", 2)


def unlink1_window_totals(received) -> list[int]:
    lines = received.text("s03.out").splitlines()
    inside = lines[lines.index("measurement"):]
    return [int(m.group(1)) for line in inside
            if (m := re.match(r"^min:\d+ max:\d+ total:(\d+)$", line))]


def test_ops_count_sums_its_group_in_the_window(received):
    totals = unlink1_window_totals(received)
    numbers = measure.step_numbers(
        unlink1_read_back(r"^min:\d+ max:\d+ total:(?P<ops>\d+)$"), received, MAINLINE)
    assert numbers.error == ""
    got = {f.metric: f.value for f in numbers.figures if not f.lock}
    assert got["ops"] == sum(totals) == 530
    assert measure.DECLARED_OPS not in got
    window = measure.Window.parse(received.text("s03.window"))
    assert got["throughput"] == pytest.approx(sum(totals) / window.window_s)
    assert "wis-unlink1: 200 operations declared, 530 counted (ops-count)" in numbers.note
    # The lock counts are per operation counted: unlink1's 2 hash acquisitions each.
    hash_per_op = next(f.value for f in numbers.figures
                       if f.lock == "hash" and f.metric == "acquisitions_per_op")
    assert hash_per_op == pytest.approx(2.0, rel=0.01)


def test_ops_count_without_a_group_counts_lines(received):
    numbers = measure.step_numbers(unlink1_read_back(r"^min:\d+ max:\d+ total:\d+$"),
                                   received, MAINLINE)
    ops = next(f.value for f in numbers.figures if f.metric == "ops" and not f.lock)
    assert ops == len(unlink1_window_totals(received)) == 3


def test_ops_count_that_matches_nothing_is_an_error(received):
    numbers = measure.step_numbers(unlink1_read_back(r"^completed (?P<ops>\d+)$"),
                                   received, MAINLINE)
    assert "wis-unlink1.wl:" in numbers.error and "no line of the output matched" in \
        numbers.error


@pytest.mark.parametrize("log, logged", [("recipe-build.out", 389),
                                         ("old-recipe-build.out", 317)])
def test_ops_count_by_id_counts_each_operation_once(log, logged):
    """fsstress -v prints some operations over several lines and a few on none;
    a build that compiled operations out prints nothing for them."""
    data = (VERBOSE / log).read_bytes()
    lines = workload_output.placed_lines(data)
    ids = {m.group(1) for line in data.decode().splitlines() if (m := FSSTRESS_IDS.match(line))}
    pattern = workload_output.Pattern(None, re.compile(r"^(?P<id>\d+/\d+): "), "fsstress.wl:9")
    assert workload_output.count_operations(lines, pattern) == len(ids) == logged
    assert len(lines) > logged  # more lines than operations


@pytest.mark.parametrize("extra, problem", [
    ("ops-count = ^(?P<id>\\d+) (?P<ops>\\d+)$", "ops-count: one group at most"),
    ("ops-count = ^(?P<count>\\d+)$", "ops-count: one group at most"),
    ("ops-count = ^(\\d+$", "ops-count: not a regular expression"),
])
def test_an_ops_count_that_cannot_be_read_is_refused(extra, problem):
    path = WINDOW / "workloads" / "fsstress.wl"
    with pytest.raises(workloads.WorkloadError, match=re.escape(problem)):
        workloads.parse(path, path.read_text() + extra + "\n")


def test_ops_count_needs_declared_ops():
    path = WINDOW / "workloads" / "fsstress.wl"
    text = re.sub(r"^ops .*\n", "", path.read_text(), flags=re.MULTILINE)
    with pytest.raises(workloads.WorkloadError, match="ops-count reads back the operations"):
        workloads.parse(path, text + "ops-count = ^x$\n")


def test_the_report_marks_a_case_of_declared_operations(tmp_path, received):
    """The fsstress step's real figures as a run's rows, beside make_run's cases."""
    run = make_run(tmp_path)
    rows = tidy.read(run / "tidy.tsv")
    numbers = measure.step_numbers(fsstress_step(), received, MAINLINE)
    for kernel in ("mainline", "base"):
        rows += [tidy.Row(kernel, flavour, "tcg", "fsstress", "ext4", 2, 2, 1, f.phase, f.lock,
                          f.metric, f.value, f.unit, "ok", f"{kernel}-{flavour}")
                 for flavour in ("perf", "debug") for f in numbers.figures]
    tidy.write(rows, run / "tidy.tsv")
    text = document.write(default_layout(), run, "mainline")[0].read_text()
    fsstress = text.split("### fsstress on ext4")[1].split("###")[0]
    assert "**Throughput of declared operations, not measured.**" in fsstress
    assert text.count("Throughput of declared operations, not measured") == 1
