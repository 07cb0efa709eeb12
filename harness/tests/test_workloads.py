"""Workload declarations are validated before anything is built."""

from pathlib import Path

import pytest

from harness.guest import workloads
from harness.layout import REPO_ROOT

GOOD = """\
name = demo
summary = a demo
run = createunlink -p {procs} -n 10 -L {prefix} {dir}
output = result-lines
fs = tmpfs ext4
procs = 1 cpus
windowed = yes
"""


def write(tmp_path: Path, text: str, name: str = "demo.wl") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_good_declaration(tmp_path):
    w = workloads.parse(write(tmp_path, GOOD))
    assert w.filesystems == ("tmpfs", "ext4")
    assert w.procs_for(2) == [1, 2]
    assert w.procs_for(1) == [1]
    assert w.command(procs=2, cpus=2, fs="ext4", dev="/dev/vda", prefix="/tmp/s01") == \
        "createunlink -p 2 -n 10 -L /tmp/s01 /mnt/work"


@pytest.mark.parametrize("change, message", [
    (("fs = tmpfs ext4", "fs = tmpfs xfs2"), "demo.wl:5: unknown fs 'xfs2'"),
    (("run = createunlink", "run = {bogus} createunlink"), "demo.wl:3: run: unknown placeholder"),
    (("windowed = yes", "windowed = maybe"), "demo.wl:7: windowed must be yes or no"),
    (("procs = 1 cpus", "procs = 0"), "demo.wl:6: procs"),
    (("output = result-lines", "output = csv"), "demo.wl:4: output must be"),
    (("summary = a demo", "summary a demo"), "demo.wl:2: expected 'key = value'"),
    (("name = demo", "name = other"), "demo.wl:1: name 'other' does not match"),
])
def test_malformed_declaration_names_file_and_line(tmp_path, change, message):
    path = write(tmp_path, GOOD.replace(*change))
    with pytest.raises(workloads.WorkloadError, match=message.replace("{", r"\{")):
        workloads.parse(path)


def test_duplicate_and_missing_keys(tmp_path):
    with pytest.raises(workloads.WorkloadError, match="demo.wl:8: fs given twice"):
        workloads.parse(write(tmp_path, GOOD + "fs = ext4\n"))
    with pytest.raises(workloads.WorkloadError, match="missing required key 'output'"):
        workloads.parse(write(tmp_path, GOOD.replace("output = result-lines\n", "")))


def test_every_shipped_workload_is_valid():
    known = workloads.load_all(REPO_ROOT / "workloads")
    assert any(w.default for w in known.values())
    assert workloads.select(known, "all") == list(known.values())
    with pytest.raises(workloads.WorkloadError, match="unknown workload 'nope'"):
        workloads.select(known, "nope")
