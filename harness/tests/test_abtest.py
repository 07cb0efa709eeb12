"""A/A and A/B timed boots in rounds (run/abtest.py)."""

import json
import subprocess
from pathlib import Path

import pytest

from harness.boot import qemu
from harness.kernels import kbuild
from harness.layout import default_layout
from harness.run import abtest, tidy


def test_rounds_hold_every_label_once_per_vcpu_count_in_a_seeded_or_fixed_order():
    fixed = abtest.schedule(["A", "B", "C"], 2, [1, 2], "fixed", seed=1)
    assert [(r, c, pos, label) for r, c, pos, label in fixed][:3] == [
        (1, 1, 1, "A"), (1, 1, 2, "B"), (1, 1, 3, "C")]
    assert len(fixed) == 12
    drawn = abtest.schedule(["A", "B", "C"], 8, [1], "random", seed=3)
    assert drawn == abtest.schedule(["A", "B", "C"], 8, [1], "random", seed=3)
    rounds = [tuple(label for r, _, _, label in drawn if r == n) for n in range(1, 9)]
    assert all(sorted(r) == ["A", "B", "C"] for r in rounds)
    assert len(set(rounds)) > 1


def test_an_image_folder_without_meta_is_named(tmp_path):
    with pytest.raises(SystemExit, match=f"--image A={tmp_path}: expected LABEL=DIR"):
        abtest.image_at(f"A={tmp_path}")


@pytest.mark.boot
def test_one_image_under_two_labels_boots_in_rounds_and_is_analysed(tmp_path):
    """The mechanics, on the image make test builds (timings here mean nothing)."""
    image = kbuild.build(default_layout(), "mainline", "debug")
    out = tmp_path / "aa"
    assert abtest.main(["--out", str(out), "--image", f"A={image.directory}",
                        "--image", f"B={image.directory}", "--rounds", "1", "--cpus", "1",
                        "--workloads", "create-unlink"]) == 0
    boots = json.loads((out / abtest.BOOTS).read_text())
    assert sorted((b["label"], b["round"], b["cpus"]) for b in boots) == [
        ("A", 1, 1), ("B", 1, 1)]
    assert {b["status"] for b in boots} == {"ok"}
    rows = tidy.read(out / abtest.TABLE)
    assert {(r.kernel, r.fs) for r in rows} == {(label, fs) for label in "AB"
                                               for fs in ("tmpfs", "ext4", "xfs")}
    report = abtest.analyse(out)
    assert report.startswith("B against A: faster in ")
    assert "1 round pairs" in report and "by position in the round: 1:" in report


def test_a_labels_settings_reach_its_qemu_process():
    assert abtest.settings_of(["B=no-thp,pin"], ["A", "B"]) == {"B": ("no-thp", "pin")}
    with pytest.raises(SystemExit, match="--setting C=pin"):
        abtest.settings_of(["C=pin"], ["A", "B"])
    with pytest.raises(SystemExit, match="huge"):
        abtest.settings_of(["A=huge"], ["A", "B"])
    child = subprocess.Popen(["sleep", "5"], preexec_fn=qemu._without_thp)
    try:
        status = Path(f"/proc/{child.pid}/status").read_text()
        if "THP_enabled:" not in status:
            pytest.skip("this host's kernel does not show THP_enabled")
        assert status.split("THP_enabled:")[1].split()[0] == "0"
    finally:
        child.kill()
        child.wait()
