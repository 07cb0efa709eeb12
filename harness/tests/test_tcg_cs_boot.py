"""End to end: the tcg-cs mode on the mainline perf kernel (which carries the markers).

Builds (or reuses) mainline/perf, about 10 minutes from a warm
compiler cache when missing, then one boot of about 10 seconds.
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


def test_mainline_tcg_cs_boot_measures_critical_sections(tmp_path):
    layout = default_layout()
    image = tcg_cs.build_image(layout, "mainline")
    files = initramfs.prepare(layout)
    create = shipped.workload("create-unlink")
    steps = plan.make_steps([(create, "tmpfs", 1)])
    order = lockorder.for_kernel(layout, "mainline")
    machine = tcg_cs.machine(layout, image, tmp_path, order)
    record = runner.run_boot(image, files, machine, steps, tmp_path, "tcg-cs test", order)
    assert record.status == "ok", record
    [outcome] = record.steps
    figures = {(f.lock, f.metric): f.value for f in outcome.numbers.figures}

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

    # Sections that are straight-line code in this very image last exactly
    # as long as its disassembly says.
    checks = cs_validation.check_boot(layout, tmp_path)
    assert len(checks) >= 3
    assert [c for c in checks if not c.agrees] == []
