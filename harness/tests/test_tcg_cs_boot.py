"""End to end: the tcg-cs mode on the mainline perf kernel (which carries the markers).

Builds (or reuses) mainline/perf, about 10 minutes from a warm
compiler cache when missing, then boots of 10 to 60 seconds.
"""

import pytest

from harness import lockorder
from harness.analysis import cs_validation
from harness.boot import runner, tcg_cs
from harness.guest import initramfs, plan
from harness.layout import default_layout
from harness.tests import shipped

# Another kernel image than the one make test builds: make test-extra runs it.
pytestmark = [pytest.mark.boot, pytest.mark.extra_image]


def boot_create_unlink(folder, cpus=1, options=None):
    layout = default_layout()
    image = tcg_cs.build_image(layout, "mainline")
    files = initramfs.prepare(layout)
    create = shipped.workload("create-unlink")
    steps = plan.make_steps([(create, "tmpfs", cpus)])
    order = lockorder.for_kernel(layout, "mainline")
    machine = tcg_cs.machine(layout, image, folder, order, cpus, options)
    record = runner.run_boot(image, files, machine, steps, folder, "tcg-cs test", order)
    assert record.status == "ok", record
    [outcome] = record.steps
    return {(f.lock, f.metric): f.value for f in outcome.numbers.figures}


def test_mainline_tcg_cs_boot_measures_critical_sections(tmp_path):
    layout = default_layout()
    figures = boot_create_unlink(tmp_path)

    # The counts lock_stat gives for tmpfs create+unlink (NOTES.md): the same events.
    assert figures["i_lock", "cs_acquisitions_per_op"] == pytest.approx(8.0, rel=0.002)
    assert figures["sb_list", "cs_acquisitions_per_op"] == pytest.approx(2.0, rel=0.002)
    for role in ("i_lock", "sb_list"):
        # From the acquiring cmpxchg to the releasing store: a few to a few
        # hundred instructions on this path.
        assert 3 <= figures[role, "cs_instructions_per_acq"] <= 500
    held = sum(v for (lock, metric), v in figures.items()
               if lock and metric == "cs_instructions_per_op")
    assert 0 < held < figures["", "instructions_per_op"]
    assert figures.get(("", "cs_note.acquire_on_held"), 0) == 0

    # The sb-list add and removal (list_add/list_del_init beside the list
    # head on the lock's line): s is 1, a line read (inode->i_sb), two or
    # three written (test_tcg_cs_lines.py checks them line by line).
    assert figures["sb_list", "cs_lockword_line_written_share"] == 1.0
    assert figures["sb_list", "cs_lines_read_per_acq"] == pytest.approx(1.0)
    assert 2.0 <= figures["sb_list", "cs_lines_written_per_acq"] <= 3.0
    assert 0 < figures["sb_list", "cs_lines_from_previous_per_acq"] <= \
        figures["sb_list", "cs_lines_written_per_acq"] + figures["sb_list", "cs_lines_read_per_acq"]
    assert figures["", "cs_cold_cache_lines"] == tcg_cs.COLD_LINES

    # Sections that are straight-line code in this very image last exactly
    # as long as its disassembly says.
    checks = cs_validation.check_boot(layout, tmp_path)
    assert len(checks) >= 3
    assert [c for c in checks if not c.agrees] == []


def test_tracking_lines_changes_no_instruction_count(tmp_path):
    # The same image with and without the memory callbacks: every count the
    # plugin made before lines were tracked stays what it was. -icount
    # boots differ from one another by a few interrupts' worth (NOTES.md:
    # CV <= 0.04% over boots); the shortest section of an icache call site
    # is code, not timing (the scheduler's are not), and must be the same
    # instruction for instruction.
    with_lines = boot_create_unlink(tmp_path / "lines")
    without = boot_create_unlink(tmp_path / "plain", options=tcg_cs.Options(lines=False))
    assert ("sb_list", "cs_lines_written_per_acq") not in without
    # Background work (a kworker, a timer) adds an acquisition or two per
    # window now and then: 8.001 i_lock per op against 8.000 was seen.
    for key in [k for k in without if k[1] in ("cs_acquisitions_per_op",)]:
        assert with_lines[key] == pytest.approx(without[key], rel=0.001), key
    for key in [k for k in without if k[1] in ("instructions_per_op",
                                               "cs_instructions_per_acq")]:
        assert with_lines[key] == pytest.approx(without[key], rel=0.002), key
    lines, plain = (tcg_cs.read_output(tmp_path / d) for d in ("lines", "plain"))
    roles = tcg_cs.with_tables(lockorder.for_kernel(default_layout(), "mainline"))
    minimum = {}
    for output in (lines, plain):
        for s in output.windows["s01.create-unlink"].sections:
            if s.acquisitions >= 100 and s.site and roles.role_of(s.lock_class):
                minimum.setdefault((s.lock_class, s.site), []).append(s.min)
    both = {k: v for k, v in minimum.items() if len(v) == 2}
    assert len(both) >= 10
    assert {k: v for k, v in both.items() if v[0] != v[1]} == {}


def test_two_vcpus_round_robin_count_the_same_sections(tmp_path):
    # Mode tcg-cs-rr: two vCPUs on one host thread, no -icount. Two workers
    # create and unlink in their own directories: per operation the same
    # acquisitions as one worker on one vCPU.
    figures = boot_create_unlink(tmp_path, cpus=2)
    assert figures["i_lock", "cs_acquisitions_per_op"] == pytest.approx(8.0, rel=0.002)
    assert figures["sb_list", "cs_acquisitions_per_op"] == pytest.approx(2.0, rel=0.002)
    output = tcg_cs.read_output(tmp_path)
    assert output.config["vcpus"] == 2
    assert output.boot["exit_without_entry"] == 0 and output.boot["acquire_on_held"] == 0
