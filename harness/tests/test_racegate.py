"""make race-gate, judged on captured boots: one clean, one with 6.1's dcache race."""

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from harness import lockorder
from harness.boot import qemu, runner
from harness.guest import plan
from harness.kernels import kbuild, series
from harness.layout import Layout, default_layout
from harness.report import record_table
from harness.run import racegate, records
from harness.tests.conftest import SOAK_IMAGES

DATA = Path(__file__).resolve().parent.parent / "test_data" / "racegate"


def record_of(folder: str, kernel: str) -> runner.BootRecord:
    (step,) = plan.make_steps([(racegate.workload(600), racegate.FS, 8)])
    return runner.read_boot(DATA / folder, [step],
                            lockorder.for_kernel(default_layout(), kernel))


def test_a_clean_boot_passes_with_its_figures():
    row = racegate.read_row(record_of("chinner-virt_spin_lock", "chinner"), "chinner",
                            "virt_spin_lock")
    assert (row.seen, row.status, row.files, row.lost, row.rounds, row.reports) == \
        ("virt_spin_lock", "ok", 43008, 0, 672, ())
    assert row.passed and row.why() == "clean"
    # The same boot given the other spinlock: the guest did not run what was asked.
    wrong = racegate.read_row(record_of("chinner-virt_spin_lock", "chinner"), "chinner",
                              "qspinlock")
    assert not wrong.passed and wrong.why() == "the guest ran virt_spin_lock"


def test_the_dcache_race_fails_the_gate_and_names_its_reports():
    row = racegate.read_row(record_of("mainline-warn-virt_spin_lock", "mainline"),
                            "mainline", "virt_spin_lock")
    assert not row.passed and row.files is None
    assert "bad-unlock: bad unlock balance in dentry_unlink_inode" in row.reports
    assert row.why().startswith(f"step {row.status}; no syncrace result line; ")
    text = racegate.table([row])
    assert "| mainline | virt_spin_lock | virt_spin_lock | " in text and "FAILED: " in text


def test_the_gate_gives_each_boot_the_spinlock_it_names():
    for lock, shown in racegate.LOCKS.items():
        model = qemu.cpu_model("tcg", qemu.Machine("tcg", 8, hypervisor=shown).hypervisor)
        assert model == ("max" if lock == "virt_spin_lock" else "max,-hypervisor")


def test_a_runs_record_counts_the_gate_for_the_kernels_very_patches(tmp_path):
    """The summary a gate writes, read back as a compare's record reads it: boots of
    an image of the kernel's own patches count, another image's are named."""
    image = kbuild.identity(SOAK_IMAGES["chinner", "debug"])
    rows = [racegate.read_row(record_of("chinner-virt_spin_lock", "chinner"), "chinner", lock)
            for lock in racegate.LOCKS]  # the second: asked for qspinlock, ran virt_spin_lock
    folder = tmp_path / "results" / "race-gate" / "20261207-224500"
    folder.mkdir(parents=True)
    racegate.write_summary(folder, {"chinner": image}, rows, {"chinner": 2}, 600, 8,
                           finished=True)
    layout = Layout(repo=tmp_path, build=tmp_path, ccache=tmp_path, results=tmp_path / "results")
    collected = records.collect(layout, {"chinner/perf": image})
    assert record_table.race_gate_cell(collected, "chinner", False) == (
        "1 of 2 boots clean (virt_spin_lock 1), syncrace 600 s at 8 vCPUs, 0 kernel reports "
        "(race-gate/20261207-224500)")
    assert record_table.race_gate_cell(collected, "chinner", True) == \
        "1/2 clean (virt_spin_lock only)"
    # The same boots summarised again (--read) count once.
    again = folder.with_name("20261207-230000-read")
    shutil.copytree(folder, again)
    assert record_table.race_gate_cell(records.collect(layout, {"chinner/perf": image}),
                                       "chinner", True) == "1/2 clean (virt_spin_lock only)"
    other = dataclasses.replace(image, patches_digest="0000000000000001")
    assert record_table.race_gate_cell(records.collect(layout, {"chinner/perf": other}),
                                       "chinner", True) == record_table.NOT_RUN


def boot_folder_with_image(tmp_path, kernel: str) -> Path:
    """The captured chinner boot, its QEMU command pointed at an image folder whose
    meta.json carries `kernel`'s patches of this checkout (the image is not kept)."""
    boot = tmp_path / "boot"
    shutil.copytree(DATA / "chinner-virt_spin_lock", boot)
    image = tmp_path / "image"
    image.mkdir()
    patches = series.resolve(default_layout(), kernel).patches
    (image / "meta.json").write_text(json.dumps({
        "kernel": kernel, "flavour": "debug", "key": "65853ca7d5c88b99", "commit": "c",
        "patches": [{"series": p.series, "file": p.path.name, "sha256": p.sha256}
                    for p in patches]}))
    q = json.loads((boot / "qemu.json").read_text())
    q["command"][q["command"].index("-kernel") + 1] = str(image / "bzImage")
    (boot / "qemu.json").write_text(json.dumps(q))
    return boot


def test_boots_made_earlier_are_read_into_a_summary_the_record_counts(tmp_path):
    boot = boot_folder_with_image(tmp_path, "chinner")
    out = tmp_path / "results" / "race-gate"
    assert racegate.read_boots(default_layout(), {"chinner": [boot]}, out) == 0
    (summary,) = out.glob("*-read/summary.md")
    assert "| chinner | virt_spin_lock | virt_spin_lock | 607 | 672 | 43,008 | 0 | passed |" \
        in summary.read_text()
    layout = Layout(repo=tmp_path, build=tmp_path, ccache=tmp_path, results=tmp_path / "results")
    image = kbuild.identity(kbuild.KernelImage("chinner", "debug", "65853ca7d5c88b99",
                                               tmp_path / "image"))
    collected = records.collect(layout, {"chinner/perf": image})
    assert record_table.race_gate_cell(collected, "chinner", True) == \
        "1/1 clean (virt_spin_lock only)"


def test_a_boot_of_other_patches_is_refused_naming_its_folder(tmp_path):
    boot = boot_folder_with_image(tmp_path, "piggin")
    with pytest.raises(racegate.GateError, match=f"^{boot}: booted piggin/debug "):
        racegate.read_boots(default_layout(), {"chinner": [boot]}, tmp_path / "out")
