"""The sync-hole mutant check: its kernel, its workloads, reading captured steps,
and the verdict's arithmetic."""

import pytest

from harness.kernels import series
from harness.layout import REPO_ROOT, default_layout
from harness.run import synchole


DATA = REPO_ROOT / "harness" / "test_data" / "synchole"


def test_the_control_is_base_widened_and_the_mutant_the_control_plus_the_old_window():
    layout = default_layout()
    control, mutant = synchole.control_kernel(layout), synchole.mutant_kernel(layout)
    base = [p.path.name for p in series.resolve(layout, "base").patches]
    assert [p.path.name for p in control.patches] == base + [synchole.WIDENING.name]
    assert [p.path.name for p in mutant.patches] == base + [synchole.WIDENING.name,
                                                           synchole.HOLE.name]
    widening, hole = synchole.WIDENING.read_text(), synchole.HOLE.read_text()
    # The control holds base's drop path open under its locks (a spin, not a sleep)
    # wherever the old window could open; the mutant puts the window back: I_WILL_FREE
    # on a live inode, both locks let go, the same knob's delay as a sleep.
    assert "synchole_delay_us" in widening and "udelay(" in widening
    assert "op->drop_inode != generic_delete_inode" in widening
    assert "inode->i_state |= I_WILL_FREE;" in hole and "fsleep(delay)" in hole
    assert "synchole_delay_us" not in hole.split("\n---\n", 1)[1].replace(
        "Signed-off-by", "")  # one knob, defined by the control's patch


def test_both_kernels_mark_and_read_the_counter_around_syncrace():
    command = synchole.workload(2000, 30).command(procs=2, cpus=4, fs="ext4",
                                                  dev="/dev/vdb", prefix="/h/s01")
    knob, mark, before, zero, run, after, leave = [c.strip() for c in command.split(";")]
    assert knob == f"echo 2000 > {synchole.KNOB}"
    assert mark == "echo mark > /proc/synchole"
    assert before == after == "cat /proc/synchole"
    assert run.startswith("syncrace -p 2 -n 64 -t 30 -D -d /dev/vdb")
    # syncrace's own verdict (exit 1 when a file was lost) is the step's, and the step's
    # shell (sh -e) still reads the counter after a failure.
    assert (zero, leave) == ("rc=0", "exit $rc") and run.endswith(" || rc=$?")


def counts(windows, dirty, listed_from, inodes=()):
    return (f"delay_us 2000\nwindows {windows}\ndirty_windows {dirty}\n"
            f"listed_from {listed_from}\n"
            + "".join(f"dirty_window {i} {g}\n" for i, g in inodes))


RESULT = ("result phase=sync-check ops=640 elapsed_ns=20000000000 procs=2 lost={lost} "
          "lost_delalloc={lost} lost_unwritten=0 rounds=10 syncs=5 syncfs=5\n")
ERR = "syncrace: /mnt/work/r7/f3: not on the disk when sync() returned: delayed allocation " \
      "(inode {ino} generation {gen})\n"


def test_a_lost_file_is_tied_to_a_window_on_its_own_inode():
    windows = [(12, 7), (13, 8), (14, 9), (13, 10)]
    out = counts(5, 2, 2) + RESULT.format(lost=3) + counts(9, 6, 2, windows)
    # Inode 13 again, a later inode with that number: its own generation decides.
    err = "".join(ERR.format(ino=i, gen=g) for i, g in [(13, 8), (13, 11), (99, 1)])
    row = synchole.read_step(out, err, "s01.out", synchole.KERNEL, 2000, "ext4",
                             "workload-error")
    assert (row.files, row.lost, row.rounds, row.windows, row.dirty_windows) == \
        (640, 3, 10, 4, 4)
    assert row.lost_inodes == ((13, 8), (13, 11), (99, 1))
    assert row.in_windows == 1 and row.listed_all
    # More dirty windows than the ring holds: the first ones of the step are not listed.
    wrapped = synchole.read_step(counts(5, 2, 2) + RESULT.format(lost=0) + counts(9, 6, 4),
                                 "", "s02.out", synchole.KERNEL, 2000, "ext4", "ok")
    assert not wrapped.listed_all


def test_a_step_without_its_counters_or_result_is_an_error_naming_it():
    with pytest.raises(synchole.HoleError, match="s02.out: expected /proc/synchole"):
        synchole.read_step(counts(5, 2, 2) + RESULT.format(lost=0), "", "s02.out",
                           synchole.KERNEL, 0, "xfs", "ok")
    with pytest.raises(synchole.HoleError, match="s03.out: no syncrace result line"):
        synchole.read_step(counts(1, 0, 0), "", "s03.out", synchole.KERNEL, 0, "xfs", "lost")


def row(kernel, delay, lost, windows, in_windows=0, dirty=None):
    inodes = tuple((i, 1) for i in range(lost))
    return synchole.HoleRow(kernel, delay, "ext4", "ok", (), 640, lost, 10, inodes,
                            windows, windows if dirty is None else dirty,
                            frozenset(inodes[:in_windows]))


MUTANT, CONTROL = synchole.KERNEL, synchole.CONTROL


def test_the_check_passes_only_on_a_widened_loss_inside_a_window_and_none_on_widened_base():
    caught = synchole.verdict([row(MUTANT, 0, 0, 12), row(MUTANT, 2000, 4, 30, 3),
                               row(CONTROL, 0, 0, 40), row(CONTROL, 2000, 0, 35, dirty=9)])
    assert caught.passed and (caught.windows, caught.lost, caught.in_windows) == (30, 4, 3)
    assert caught.sentence() == (
        "syncrace caught the re-opened hole: 4 files lost on the widened mutant, 3 of them "
        "inside a window it opened on that very inode; base, widened as much (9 drops of "
        "dirty inodes held open), lost 0 of 1,280 files")
    # Losses the windows do not explain decide nothing.
    elsewhere = synchole.verdict([row(MUTANT, 2000, 2, 30, 0), row(CONTROL, 2000, 0, 35)])
    assert not elsewhere.passed and "none inside a window on its inode" in \
        elsewhere.sentence()
    # A loss on base, widened or not, fails the check.
    both = synchole.verdict([row(MUTANT, 2000, 4, 30, 4), row(CONTROL, 0, 1, 40),
                             row(CONTROL, 2000, 0, 35)])
    assert not both.passed and not both.inconclusive
    assert "lost 1 of 1,280 files" in both.sentence()


def test_the_mutant_counts_only_when_widened():
    natural = synchole.verdict([row(MUTANT, 0, 3, 30, 3), row(MUTANT, 2000, 0, 30),
                                row(CONTROL, 2000, 0, 35)])
    assert not natural.caught and not natural.passed


def test_a_control_never_widened_on_a_dirty_inode_or_never_booted_tested_nothing():
    unwidened = synchole.verdict([row(MUTANT, 2000, 4, 30, 4), row(CONTROL, 0, 0, 40)])
    assert not unwidened.passed and "the control tested nothing" in unwidened.sentence()
    clean = synchole.verdict([row(MUTANT, 2000, 4, 30, 4), row(CONTROL, 2000, 0, 35, dirty=0)])
    assert not clean.passed and "the control tested nothing" in clean.sentence()
    alone = synchole.verdict([row(MUTANT, 2000, 4, 30, 4)])
    assert not alone.passed and alone.sentence().endswith("no control boot")


def test_a_mutant_that_never_opened_its_window_tested_nothing():
    idle = synchole.verdict([row(MUTANT, 2000, 0, 0), row(CONTROL, 2000, 0, 35)])
    assert not idle.passed and "nothing was tested" in idle.sentence()


def test_steps_that_could_not_be_read_make_a_miss_inconclusive_not_a_failure():
    missed = synchole.verdict([row(MUTANT, 2000, 0, 30)], ["boot ended panic"])
    assert missed.inconclusive and not missed.passed
    assert missed.sentence().endswith("no control boot; 1 step could not be read")


def captured(name: str) -> str:
    return (DATA / name).read_text()


def test_captured_widened_step_ties_every_lost_file_to_a_window_on_it():
    row = synchole.read_step(captured("delay2000-ext4.out"), captured("delay2000-ext4.err"),
                             "s03.out", synchole.KERNEL, 2000, "ext4", "workload-error")
    assert (row.files, row.lost, row.rounds) == (24960, 14, 390)
    assert (row.windows, row.dirty_windows, row.listed_all) == (1768, 315, True)
    assert len(row.lost_inodes) == 14 and row.in_windows == 14
    # The numbers alone would match far more often: the generations are what tie.
    numbers = {ino for ino, _ in row.dirty_inodes}
    assert len(numbers) < len(row.dirty_inodes)


def test_captured_plain_mutant_loses_nothing():
    plain = synchole.read_step(captured("delay0-ext4.out"), "", "s01.out", synchole.KERNEL, 0,
                               "ext4", "lockdep")
    assert (plain.files, plain.lost, plain.windows, plain.dirty_windows) == (11392, 0, 997, 202)


def test_captured_widened_control_is_held_open_on_dirty_inodes_and_loses_nothing():
    control = synchole.read_step(captured("control-delay2000-ext4.out"), "", "s03.out",
                                 synchole.CONTROL, 2000, "ext4", "ok")
    assert (control.files, control.lost, control.rounds) == (2624, 0, 41)
    assert (control.windows, control.dirty_windows, control.listed_all) == (8469, 102, True)
    assert control.in_windows == 0 and len(control.dirty_inodes) == 96
