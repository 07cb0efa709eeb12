"""The sync-hole mutant check: its kernel, its workloads, reading captured steps,
and the verdict's arithmetic."""

import pytest

from harness.layout import REPO_ROOT, default_layout
from harness.run import synchole


DATA = REPO_ROOT / "harness" / "test_data" / "synchole"


def test_the_mutant_is_base_plus_the_one_patch_that_reopens_the_window():
    kernel = synchole.mutant_kernel(default_layout())
    names = [p.path.name for p in kernel.patches]
    assert names[-1] == synchole.PATCH.name and synchole.PATCH.is_file()
    assert [p.series for p in kernel.patches[:-1]] == ["base"] * (len(names) - 1)
    text = synchole.PATCH.read_text()
    # The old window: I_WILL_FREE set on a live inode, i_lock dropped, the global lock
    # taken; and the knob that widens it.
    assert "inode->i_state |= I_WILL_FREE;" in text and "synchole_delay_us" in text


def test_the_mutant_workload_sets_the_knob_and_reads_the_counter_around_syncrace():
    command = synchole.workload(2000, 30).command(procs=2, cpus=4, fs="ext4",
                                                  dev="/dev/vdb", prefix="/h/s01")
    knob, before, zero, run, after, leave = [c.strip() for c in command.split(";")]
    assert knob == f"echo 2000 > {synchole.KNOB}"
    assert before == after == "cat /proc/synchole"
    assert run.startswith("syncrace -p 2 -n 64 -t 30 -D -d /dev/vdb")
    # syncrace's own verdict (exit 1 when a file was lost) is the step's, and the step's
    # shell (sh -e) still reads the counter after a failure.
    assert (zero, leave) == ("rc=0", "exit $rc") and run.endswith(" || rc=$?")


def test_the_control_runs_syncrace_alone():
    command = synchole.workload(None, 30).command(procs=2, cpus=4, fs="xfs",
                                                  dev="/dev/vdc", prefix="/h/s03")
    assert command.startswith("syncrace ") and "synchole" not in command


def step(lost=0, windows=(5, 9)):
    text = "".join(f"delay_us 2000\nwindows {w}\n" for w in windows[:1])
    text += (f"result phase=sync-check ops=640 elapsed_ns=20000000000 procs=2 lost={lost} "
             f"lost_delalloc={lost} lost_unwritten=0 rounds=10 syncs=5 syncfs=5\n")
    text += "".join(f"delay_us 2000\nwindows {w}\n" for w in windows[1:])
    return text


def test_a_mutant_step_counts_the_windows_it_opened():
    row = synchole.read_step(step(lost=3), "s01.out", synchole.KERNEL, 2000, "ext4",
                             "workload-error")
    assert (row.files, row.lost, row.rounds, row.windows) == (640, 3, 10, 4)


def test_a_step_without_its_counters_or_result_is_an_error_naming_it():
    with pytest.raises(synchole.HoleError, match="s02.out: expected /proc/synchole"):
        synchole.read_step(step(windows=(5,)), "s02.out", synchole.KERNEL, 0, "xfs", "ok")
    with pytest.raises(synchole.HoleError, match="s03.out: no syncrace result line"):
        synchole.read_step("windows 1\n", "s03.out", synchole.KERNEL, 0, "xfs", "lost")


def row(delay, lost, windows):
    kernel = synchole.CONTROL if delay is None else synchole.KERNEL
    return synchole.HoleRow(kernel, delay, "ext4", "ok", 640, lost, 10, windows)


def test_the_check_passes_only_when_the_mutant_loses_files_and_base_does_not():
    caught = synchole.verdict([row(0, 0, 12), row(2000, 4, 30), row(None, 0, None)])
    assert caught.passed and caught.windows == 42
    assert "caught" in caught.sentence() and "base lost nothing" in caught.sentence()
    missed = synchole.verdict([row(0, 0, 12), row(2000, 0, 30), row(None, 0, None)])
    assert not missed.passed and "did not catch the re-opened hole in 42 windows" \
        in missed.sentence()
    both = synchole.verdict([row(2000, 4, 30), row(None, 1, None)])
    assert not both.passed and "base lost files too" in both.sentence()


def test_a_mutant_that_never_opened_its_window_tested_nothing():
    idle = synchole.verdict([row(2000, 0, 0), row(None, 0, None)])
    assert not idle.passed and "nothing was tested" in idle.sentence()


def test_captured_mutant_steps_give_their_windows_and_losses():
    plain = synchole.read_step((DATA / "delay0-ext4.out").read_text(), "s01.out",
                               synchole.KERNEL, 0, "ext4", "ok")
    assert (plain.files, plain.lost, plain.rounds, plain.windows) == (16512, 0, 258, 1336)
    widened = synchole.read_step((DATA / "delay2000-ext4-lost.out").read_text(), "s03.out",
                                 synchole.KERNEL, 2000, "ext4", "workload-error")
    assert (widened.files, widened.lost, widened.rounds, widened.windows) == \
        (22272, 2, 348, 1949)


def test_a_captured_step_that_never_read_its_counter_after_is_refused():
    with pytest.raises(synchole.HoleError, match="s03.out: expected /proc/synchole before "
                       "and after syncrace, found 1"):
        synchole.read_step((DATA / "delay2000-ext4-no-count-after.out").read_text(),
                           "s03.out", synchole.KERNEL, 2000, "ext4", "workload-error")


def test_the_captured_control_has_no_counter_to_read():
    control = synchole.read_step((DATA / "control-ext4.out").read_text(), "s01.out",
                                 synchole.CONTROL, None, "ext4", "ok")
    assert (control.files, control.lost, control.windows, control.label) == \
        (12160, 0, None, "control")
