"""Workload declarations are validated before anything is built."""

from pathlib import Path

import pytest

from harness.guest import workloads
from harness.tests import shipped

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
    assert w.shared_inodes is None
    hot = workloads.parse(write(tmp_path, GOOD + "shared-inodes = 4\n"))
    assert hot.shared_inodes == 4  # the scaling model queues per-inode locks over 4


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
    known = shipped.tracked()
    assert any(w.default for w in known.values())
    assert workloads.select(known, "all") == list(known.values())
    with pytest.raises(workloads.WorkloadError, match="unknown workload 'nope'"):
        workloads.select(known, "nope")


def declared(tmp_path, name, extra=""):
    text = GOOD.replace("name = demo", f"name = {name}") + extra
    return workloads.parse(write(tmp_path, text, f"{name}.wl"))


def test_default_and_all_stand_for_their_workloads_among_names(tmp_path):
    known = {w.name: w for w in (declared(tmp_path, "a", "default = yes\n"),
                                 declared(tmp_path, "b"), declared(tmp_path, "c"))}
    assert [w.name for w in workloads.select(known, "")] == ["a"]
    assert [w.name for w in workloads.select(known, "default,c")] == ["a", "c"]
    assert [w.name for w in workloads.select(known, "c a default")] == ["c", "a"]
    assert [w.name for w in workloads.select(known, "b,all")] == ["b", "a", "c"]


def test_differences_no_chosen_workload_measures_are_named_with_their_workloads(tmp_path):
    walks = "difference = sb inode list walks\n"
    known = {w.name: w for w in (
        declared(tmp_path, "churn", "difference = list membership\n"),
        declared(tmp_path, "walk", walks),
        declared(tmp_path, "race", "difference.sync-check = sb inode list walks\n"),
        declared(tmp_path, "plain"))}
    assert workloads.differences_elsewhere(known, [known["churn"]]) == {
        "sb inode list walks": ["walk", "race/sync-check"]}
    assert workloads.differences_elsewhere(known, [known["churn"], known["walk"]]) == {}


OUTSIDE = """\
# stress-ng as a user would declare it
name       = outside
summary    = an outside program   # this is part of the summary, not a comment
packages   = busybox-static
binaries   = /usr/bin/env
run        = stress-ng --dentry {procs} --temp-path {tmp} | awk '{print $1}' > {tmp}/log; cat {tmp}/log
output     = match
match      = (?P<phase>dentry)\\s+(?P<ops>\\d+)
match.total = ^total (?P<rate>[0-9.]+) ops/s, p99 (?P<p99_latency_ms>[0-9.]+) ms
lock-start = dispatching hogs
procs      = 1 2 8<=cpus
fs         = ext4
"""


def test_outside_program_declaration(tmp_path):
    w = workloads.parse(write(tmp_path, OUTSIDE, "outside.wl"))
    assert w.summary == "an outside program   # this is part of the summary, not a comment"
    assert [p.value for p in w.packages] == ["busybox-static"]
    assert [(b.value, b.lineno) for b in w.binaries] == [("/usr/bin/env", 5)]
    assert [(m.phase, m.lineno) for m in w.matches] == [(None, 8), ("total", 9)]
    assert w.window == "lines" and w.lock_start == "dispatching hogs" and w.lock_end == ""
    # Known placeholders are filled in; a shell's or awk's braces are left alone.
    assert w.command(procs=2, cpus=2, fs="ext4", dev="/dev/vda", prefix="/tmp/s01") == (
        "stress-ng --dentry 2 --temp-path /mnt/work/.tmp | awk '{print $1}' > "
        "/mnt/work/.tmp/log; cat /mnt/work/.tmp/log")
    assert w.procs_for(2) == [1, 2] and w.procs_for(8) == [1, 2, 8]


def test_ops_names_the_operations_of_a_silent_program(tmp_path):
    text = GOOD.replace("output = result-lines", "output = none\nops = 2000 * {procs} + 1")
    w = workloads.parse(write(tmp_path, text.replace("windowed = yes\n", "")))
    assert w.ops_for(4) == 8001 and w.window == "harness"


@pytest.mark.parametrize("text, message", [
    (GOOD + "colour = blue\n", "demo.wl:8: unknown key 'colour'"),
    (GOOD + "shared-inodes = 0\n", "demo.wl:8: shared-inodes must be a positive number"),
    (GOOD.replace("output = result-lines", "output = match"),
     "demo.wl:4: output = match needs at least one 'match' key"),
    (GOOD + "match = (?P<ops>\\d+\n", "demo.wl:8: match: not a regular expression"),
    (GOOD + "match = \\d+ ops\n", "demo.wl:8: match: no named group"),
    (GOOD + "match.x y = (?P<ops>\\d+)\n", "demo.wl:8: match.x y: 'x y' is not a phase name"),
    (GOOD + "match.x = (?P<phase>\\w+) (?P<ops>\\d+)\n", "demo.wl:8: match.x: a group 'phase'"),
    (GOOD.replace("output = result-lines", "output = fio-json") + "match = (?P<ops>\\d+)\n",
     "demo.wl:8: match needs output = match or result-lines"),
    (GOOD + "ops = 1000\n", "demo.wl:8: ops names the operations of a program that reports "
                            "none: it needs output = none"),
    (GOOD.replace("output = result-lines", "output = none") + "ops = {procs} ** 2\n",
     "demo.wl:8: ops: '1 \\*\\* 2' is not a sum or product"),
    (GOOD.replace("output = result-lines", "output = none") + "ops = {cpus}\n",
     "demo.wl:8: ops: unknown placeholder {cpus}"),
    (GOOD + "lock-start = go\n", "demo.wl:8: lock-start with windowed = yes"),
    (GOOD.replace("procs = 1 cpus", "procs = 1 8<=host"), "demo.wl:6: procs: '8<=host'"),
])
def test_new_keys_are_checked_with_file_and_line(tmp_path, text, message):
    with pytest.raises(workloads.WorkloadError, match=message.replace("{", r"\{")):
        workloads.parse(write(tmp_path, text))


def test_kernel_parameters_flavours_and_count_boots(tmp_path):
    w = workloads.parse(write(tmp_path, GOOD + "cmdline = ihash_entries=16  foo\n"
                                       "flavours = debug\ncount-boots = yes\n"))
    assert w.cmdline == "ihash_entries=16 foo"
    assert w.flavours == ("debug",) and w.count_boots
    plain = workloads.parse(write(tmp_path, GOOD))
    assert plain.cmdline == "" and plain.flavours == workloads.FLAVOURS
    assert not plain.count_boots


@pytest.mark.parametrize("line, message", [
    ("cmdline = ihash_entries=16;reboot", "demo.wl:8: cmdline: 'ihash_entries=16;reboot' is "
                                          "not a kernel parameter"),
    ("cmdline = init={procs}", "demo.wl:8: cmdline: 'init={procs}'"),
    ("flavours = debug fast", "demo.wl:8: flavours: unknown flavour 'fast'"),
    ("count-boots = 4", "demo.wl:8: count-boots must be yes or no"),
])
def test_bad_kernel_parameters_and_flavours_name_file_and_line(tmp_path, line, message):
    with pytest.raises(workloads.WorkloadError, match=message.replace("{", r"\{")):
        workloads.parse(write(tmp_path, GOOD + line + "\n"))


def test_a_difference_names_what_a_workload_sets_apart_and_measures_nothing_anew(tmp_path):
    text = GOOD + "difference = the reference count  under i_lock\n" \
                  "difference.walk = none: the control\n"
    w = workloads.parse(write(tmp_path, text))
    assert w.difference("create") == "the reference count under i_lock"
    assert w.difference("walk") == "none: the control"
    assert workloads.parse(write(tmp_path, GOOD)).difference("walk") == ""
    # Not in the cells' key: declaring one re-measures nothing.
    assert w.measured_text == GOOD


@pytest.mark.parametrize("line, message", [
    ("difference.a b = x", "demo.wl:8: difference.a b: 'a b' is not a phase name"),
    ("difference =", "demo.wl:8: difference has no value"),
])
def test_a_bad_difference_names_file_and_line(tmp_path, line, message):
    with pytest.raises(workloads.WorkloadError, match=message):
        workloads.parse(write(tmp_path, GOOD + line + "\n"))
    with pytest.raises(workloads.WorkloadError, match="demo.wl:9: difference given twice"):
        workloads.parse(write(tmp_path, GOOD + "difference = a\ndifference = b\n"))
