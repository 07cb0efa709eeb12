"""Outside programs through the documented path, in a real guest: stress-ng and
fs_mark from Debian, declared in workloads/*.wl, nothing in workloads/src.

Boots the mainline debug kernel once (about a minute under TCG): exact lock
counts come from its lock_stat.
"""

import pytest

from harness import lockorder
from harness.boot import channel, qemu, runner
from harness.guest import initramfs, plan, workloads
from harness.kernels import kbuild
from harness.layout import REPO_ROOT, default_layout
from harness.tests import shipped

pytestmark = pytest.mark.boot
MAINLINE = lockorder.parse(lockorder.MAINLINE_FILE)
SHELL_LINE = REPO_ROOT / "harness" / "test_data" / "workloads" / "shell-line.wl"


@pytest.fixture(scope="module")
def boot(tmp_path_factory):
    layout = default_layout()
    names = ("stress-dentry", "stress-inode-flags", "fsmark-0b")
    chosen = [shipped.workload(name) for name in names] + [workloads.parse(SHELL_LINE)]
    image = kbuild.build(layout, "mainline", "debug")
    files = initramfs.prepare(layout, chosen)
    steps = plan.make_steps([(w, "ext4", 1) for w in chosen])
    folder = tmp_path_factory.mktemp("byob")
    record = runner.run_boot(image, files, qemu.Machine("tcg", 2), steps, folder,
                             "outside programs", MAINLINE)
    return record, folder


def figures(outcome: runner.StepOutcome) -> dict[tuple[str, str, str], float]:
    return {(f.phase, f.lock, f.metric): f.value for f in outcome.numbers.figures}


def test_every_step_is_ok(boot):
    record, _ = boot
    assert record.status == "ok", record
    assert [s.status for s in record.steps] == ["ok"] * 4
    assert record.damaged == ()


def test_stress_ng_dentry_gives_its_rate_and_exact_counts(boot):
    record, _ = boot
    got = figures(record.steps[0])
    ops = got["dentry", "", "ops"]
    assert ops == 2048 and got["dentry", "", "throughput"] > 0
    # A dentry bogo op creates and unlinks a file: 2 inode-hash and 2 sb-list
    # acquisitions on ext4 (docs/design.md section 6). The window opens at the
    # dispatch line, so the count is at least that (a window opened late by a
    # buffered line would count less), plus a fixed cost of the stressor's
    # start: 108 hash and 74-81 sb-list acquisitions at 1024 and at 4096 ops
    # alike, 106 on tmpfs, which hashes no file (other filesystems' inodes),
    # measured 2026-12-03. Never the rest of the program's run.
    for lock in ("hash", "sb_list"):
        extra = (got["dentry", lock, "acquisitions_per_op"] - 2.0) * ops
        assert 0 <= extra < 150, (lock, extra)


def test_stress_ng_inode_flags_reports_time_and_status_only(boot):
    record, _ = boot
    outcome = record.steps[1]
    got = figures(outcome)
    assert got["stress-inode-flags", "", "exit_code"] == 0
    assert got["stress-inode-flags", "", "elapsed"] > 5
    assert not any(metric == "throughput" for _, _, metric in got)
    assert "no throughput" in outcome.numbers.note


def test_fs_mark_gate_phases(boot):
    record, _ = boot
    got = figures(record.steps[2])
    for phase in ("create", "traverse", "unlink", "fs_mark"):
        assert got[phase, "", "throughput"] > 0, phase
    assert got["create", "hash", "acquisitions_per_op"] == pytest.approx(1.0, rel=0.01)
    assert got["unlink", "sb_list", "acquisitions_per_op"] == pytest.approx(2.0, rel=0.01)


def test_run_line_stays_inside_its_step(boot):
    record, folder = boot
    outcome = record.steps[3]
    assert figures(outcome)["line", "", "ops"] == 7
    received = channel.parse((folder / "results.raw").read_bytes())
    # TMPDIR is on the filesystem under test, not the harness's tmpfs /tmp;
    # awk's braces reached awk.
    assert received.text("s04.err") == "kept # not a comment\next2/ext3\nbraces phase=line\n"
