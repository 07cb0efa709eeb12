"""check-workloads: what the guest will meet, every problem with its file and line.

Declarations are written here the way a user writes theirs, in a folder of
their own; the programs are the host's busybox (static) and scripts made
here.
"""

import shutil
import tempfile
from pathlib import Path

import pytest

from harness.guest import check, initramfs, runline, workloads
from harness.layout import REPO_ROOT, Layout

BASE = """\
name     = {name}
summary  = a workload of the test
run      = {run}
output   = none
fs       = ext4
procs    = 1
"""


def declare(folder: Path, name: str, run: str, extra: str = "") -> Path:
    path = folder / f"{name}.wl"
    path.write_text(BASE.format(name=name, run=run) + extra)
    return path


@pytest.fixture(scope="module")
def guest(tmp_path_factory):
    """The harness's part of the guest and our programs, as check-workloads builds them."""
    out = tmp_path_factory.mktemp("guest")
    layout = Layout(repo=REPO_ROOT, build=out, ccache=out, results=out)
    programs = initramfs.program_files(initramfs.compile_workloads(layout, out / "bin"))
    return initramfs.harness_files(initramfs.compile_helper(out / "helper")), programs


def problems(guest, *paths: Path) -> list[str]:
    base, programs = guest
    try:
        check.check([workloads.parse(p) for p in paths], base, programs)
    except workloads.WorkloadError as err:
        return err.problems
    return []


@pytest.fixture
def elsewhere():
    """A folder outside /tmp (the guest's /tmp is not the image's: an absolute
    path there cannot be kept)."""
    folder = Path(tempfile.mkdtemp(prefix="inode-duel-test-", dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder)


@pytest.fixture
def tool(elsewhere) -> Path:
    """A static program built elsewhere, outside any workloads folder."""
    (elsewhere / "bin").mkdir()
    shutil.copy("/bin/busybox", elsewhere / "bin" / "mytool")
    return elsewhere / "bin" / "mytool"


def test_an_absolute_binary_is_not_on_the_guests_path(tmp_path, guest, tool):
    off_path = declare(tmp_path, "off", "mytool --help", f"binaries = {tool}\n")
    assert problems(guest, off_path) == [
        f"{off_path}:3: run: mytool is not on the guest's PATH "
        f"(/bin:/sbin:/usr/bin:/usr/sbin:/usr/local/bin); it is at {tool} in the guest: write "
        f"that path, or declare the binary relative to the .wl file's folder (it then goes to "
        f"/usr/local/bin)"]
    by_path = declare(tmp_path, "bypath", f"{tool} --help", f"binaries = {tool}\n")
    assert problems(guest, by_path) == []


def test_a_relative_binary_is_on_the_path(tmp_path, guest, tool):
    (tmp_path / "bin").mkdir()
    shutil.copy(tool, tmp_path / "bin" / "mytool")
    assert problems(guest, declare(tmp_path, "rel", "mytool --help",
                                   "binaries = bin/mytool\n")) == []


def test_a_program_nothing_declares_is_named(tmp_path, guest):
    path = declare(tmp_path, "nothing", "cd {tmp} && fsstress -p {procs} | grep -v x")
    assert problems(guest, path) == [
        f"{path}:3: run: fsstress is not on the guest's PATH "
        f"(/bin:/sbin:/usr/bin:/usr/sbin:/usr/local/bin): the guest is busybox and what the "
        f"workloads declare; declare it in binaries or packages"]


def test_busybox_ours_and_the_shell_resolve(tmp_path, guest):
    line = ("for i in 1 2; do createunlink -p {procs} -n 1 {dir}; done; X=1 env Y=2 awk "
            "'{print $1}' < /proc/mounts > {tmp}/m; phase -s a go 10 sh -c 'exit 0'; "
            "[ -s {tmp}/m ] && echo $(( {procs} * 2 ))")
    assert problems(guest, declare(tmp_path, "fine", line)) == []


def test_scripts_without_their_interpreter_are_refused(tmp_path, guest):
    (tmp_path / "bash.sh").write_text("#!/bin/bash\necho hi\n")
    (tmp_path / "sh.sh").write_text("#!/bin/sh\necho hi\n")
    (tmp_path / "env.sh").write_text("#!/usr/bin/env python3\nprint(1)\n")
    for script in ("bash.sh", "sh.sh", "env.sh"):
        (tmp_path / script).chmod(0o755)
    bash = declare(tmp_path, "bash", "bash.sh", "binaries = bash.sh\n")
    assert problems(guest, bash) == [
        f"{bash}:7: binaries: /usr/local/bin/bash.sh is a script for /bin/bash, which the "
        f"guest does not have (its shell is busybox sh, /bin/sh); bring the interpreter "
        f"(packages or binaries) or use a static binary"]
    assert problems(guest, declare(tmp_path, "sh", "sh.sh", "binaries = sh.sh\n")) == []
    env = declare(tmp_path, "env", "env.sh", "binaries = env.sh\n")
    assert problems(guest, env) == [
        f"{env}:7: binaries: /usr/local/bin/env.sh is a script for /usr/bin/env, which the "
        f"guest does not have (its shell is busybox sh, /bin/sh); the guest has it at "
        f"/bin/env: write #!/bin/env"]


def test_a_data_file_is_not_a_program(tmp_path, guest):
    (tmp_path / "gate.sh").write_text("echo hi\n")
    path = declare(tmp_path, "data", "/workloads/gate.sh", "files = gate.sh\n")
    assert problems(guest, path) == [
        f"{path}:3: run: /workloads/gate.sh is not executable in the guest (files are data, "
        f"copied 0644): run it as 'sh /workloads/gate.sh', or declare it in binaries"]
    assert problems(guest, declare(tmp_path, "data2", "sh /workloads/gate.sh",
                                   "files = gate.sh\n")) == []


def test_binaries_and_files_follow_one_path_rule(tmp_path, guest, tool):
    """Absolute, or relative to the declaration's folder and inside it: the same
    for both keys. An absolute one is kept at its path in the guest."""
    folder = tmp_path / "mine"
    folder.mkdir()
    for key in ("binaries", "files"):
        path = declare(folder, key, "true", f"{key} = ../build/bin/mytool\n")
        with pytest.raises(workloads.WorkloadError, match=(
                f"{key}.wl:7: {key}: ../build/bin/mytool leaves the folder of this "
                f"declaration: give an absolute path")):
            workloads.parse(path)
    data = tool.parent / "data.txt"
    data.write_text("x\n")
    path = declare(folder, "absolute", f"cat {data}", f"files = {data}\nbinaries = {tool}\n")
    assert problems(guest, path) == []
    files = {f.path for f in check.deps.workload_files(workloads.parse(path), {})}
    assert files == {str(data), str(tool)}


def test_an_absolute_path_under_tmp_cannot_be_kept(tmp_path, guest):
    """The guest's /tmp is the scratch directory of the filesystem under test: a
    program built in /tmp and declared by its absolute path would vanish there."""
    tool = tmp_path / "mytool"
    shutil.copy("/bin/busybox", tool)
    path = declare(tmp_path, "intmp", f"{tool}", f"binaries = {tool}\n")
    assert problems(guest, path) == [
        f"{path}:7: binaries: {tool} would be {tool} in the guest, but the guest's /tmp is "
        f"not the image's (/tmp is the scratch directory of the filesystem under test): copy "
        f"it beside the .wl file and declare it relative, or keep it in another folder"]


def test_every_problem_of_every_file_is_reported(tmp_path, guest):
    """One broken declaration never hides another's problems."""
    (tmp_path / "a.wl").write_text("name = a\nsummary = s\nrun = true\noutput = csv\n"
                                   "fs = tmpfs zfs\n")
    (tmp_path / "b.wl").write_text("name = b\nsummary = s\nrun = true\nfs = tmpfs\n"
                                   "colour = blue\n")
    declare(tmp_path, "c", "true")
    known, found = workloads.read_all(tmp_path)
    assert list(known) == ["c"]
    assert workloads.in_file_order(found) == [
        f"{tmp_path}/a.wl:4: output must be one of result-lines, fio-json, match, none, not "
        f"'csv'",
        f"{tmp_path}/a.wl:5: unknown fs 'zfs' (known: tmpfs, ext4, xfs)",
        f"{tmp_path}/b.wl: missing required key 'output'",
        f"{tmp_path}/b.wl:5: unknown key 'colour' (known: background, binaries, cmdline, "
        f"count-boots, default, difference, difference.PHASE, files, flavours, fs, "
        f"lock-end, lock-start, match, match.PHASE, name, ops, ops-count, output, "
        f"packages, procs, reduce.GROUP, run, shared-inodes, summary, timeout, unit, "
        f"unit.GROUP, windowed)"]
    with pytest.raises(workloads.WorkloadError) as raised:
        workloads.load_all(tmp_path)
    assert raised.value.problems == found


def test_every_missing_binary_and_file_of_one_workload_is_named(tmp_path, guest):
    path = declare(tmp_path, "many", "true", "binaries = bin/a bin/b\nfiles = x.txt\n")
    assert problems(guest, path) == [
        f"{path}:7: binaries: bin/a does not exist (relative to {tmp_path})",
        f"{path}:7: binaries: bin/b does not exist (relative to {tmp_path})",
        f"{path}:8: files: x.txt does not exist (relative to {tmp_path})"]


def test_a_folder_without_default_workloads_asks_for_names(tmp_path):
    declare(tmp_path, "mine", "true")
    known = workloads.load_all(tmp_path)
    with pytest.raises(workloads.WorkloadError, match=f"no workload of {tmp_path} says "
                                                      f"default = yes: name the ones to run"):
        workloads.select(known, "default")
    assert workloads.select(known, "all") == [known["mine"]]


def test_the_same_name_in_two_folders_is_refused(tmp_path):
    for folder in ("one", "two"):
        (tmp_path / folder).mkdir()
        declare(tmp_path / folder, "same", "true")
    with pytest.raises(workloads.WorkloadError, match=f"{tmp_path}/two/same.wl: workload "
                                                      f"'same' is declared twice: also in "
                                                      f"{tmp_path}/one/same.wl"):
        workloads.load_all([tmp_path / "one", tmp_path / "two"])
    with pytest.raises(workloads.WorkloadError, match="nowhere: no such folder"):
        workloads.load_all([tmp_path / "nowhere"])


@pytest.mark.parametrize("line, programs", [
    ("stress-ng --dentry 2 --metrics-brief 2>&1 | tail -3", ["stress-ng", "tail"]),
    ("cd / && sbwalk -d /dev/vda /mnt/work", ["sbwalk"]),
    ("if ! ./mine; then exec /opt/x/bin/y -v > out; fi", ["./mine", "/opt/x/bin/y"]),
    ("sh -c 'fsstress; will-it-scale'", ["sh", "fsstress", "will-it-scale"]),
    ("echo $(date +%s) `uname -r` $((2 * 3))", ["date", "uname"]),
    # env's options come before its assignments: after one, '-i' would be the program.
    ("$PROG -x; env -i A=1 prog2 arg", ["env", "prog2"]),
    ("phase -s start -e end create 100 fs_mark -d x", ["phase", "fs_mark"]),
    ("for f in a b; do wc -l $f; done", ["wc"]),
    ("timeout -s KILL 600 /opt/b/prog -d {dir}", ["timeout", "/opt/b/prog"]),
    ("timeout --signal=KILL -k5 60s env -u HOME X=1 nice -n 5 taskset -c 0,1 prog",
     ["timeout", "env", "nice", "taskset", "prog"]),
    ("nice -10 ionice -c3 stdbuf -oL chrt -f 10 setsid -w time -o /x prog",
     ["nice", "ionice", "stdbuf", "chrt", "setsid", "time", "prog"]),
    ("taskset -p 1 123; ionice -p 5; chrt -p 10 7; command -v x", ["taskset", "ionice", "chrt"]),
    ("exec -a name prog; command prog2; xargs -n 1 -P 4 rm < list", ["prog", "prog2", "xargs",
                                                                     "rm"]),
    ("busybox sed -n 1p f; chroot /new prog; eval $CMD", ["busybox", "sed", "chroot"]),
])
def test_the_programs_a_run_line_shows(line, programs):
    assert runline.programs(line) == programs


def test_scripts_and_paths_a_run_line_gives_commands():
    assert runline.named("sh -e /workloads/gate.sh a/b x; . /lib/x.sh; sh -s < in; "
                         "wis {tmp} /opt/b/prog") == [
        runline.Named("sh", runline.PROGRAM), runline.Named("/workloads/gate.sh", runline.SCRIPT),
        runline.Named("a/b", runline.ARGUMENT), runline.Named("/lib/x.sh", runline.SCRIPT),
        runline.Named("wis", runline.PROGRAM), runline.Named("/opt/b/prog", runline.ARGUMENT)]


def test_a_missing_program_behind_a_wrapper_is_named(tmp_path, guest):
    """The issue's case: only the first word was checked, so a misspelt program
    behind timeout passed and failed at boot with exit 127."""
    path = declare(tmp_path, "wrapped", "timeout -s KILL 60 /abs/missing -d {dir}")
    assert problems(guest, path) == [
        f"{path}:3: run: /abs/missing is not in the guest: declare it in binaries (an "
        f"absolute path is kept) or packages"]
    nested = declare(tmp_path, "nested", "env -i X=1 taskset -c 0 nice -n 5 fsstres -p 2")
    assert problems(guest, nested) == [
        f"{nested}:3: run: nice is not on the guest's PATH "
        f"(/bin:/sbin:/usr/bin:/usr/sbin:/usr/local/bin): the guest is busybox and what the "
        f"workloads declare; declare it in binaries or packages",
        f"{nested}:3: run: fsstres is not on the guest's PATH "
        f"(/bin:/sbin:/usr/bin:/usr/sbin:/usr/local/bin): the guest is busybox and what the "
        f"workloads declare; declare it in binaries or packages"]
    inner = declare(tmp_path, "inner", "sh -c 'cd {tmp} && timeout 5 nosuchprog'")
    assert [p.split(": run: ")[1].split(" is ")[0] for p in problems(guest, inner)] == [
        "nosuchprog"]


def test_a_program_a_wrapper_takes_as_argument_must_be_there(tmp_path, guest, tool):
    """An absolute path in a folder the guest runs programs from (its PATH, the
    folders of declared binaries) is taken for a program its command runs."""
    wrapper = tool.parent / "wis"
    shutil.copy(tool, wrapper)
    typo = tool.parent / "mytoool"
    path = declare(tmp_path, "wis", f"{wrapper} {{tmp}} {typo} -t {{procs}}",
                   f"binaries = {wrapper} {tool}\n")
    assert problems(guest, path) == [
        f"{path}:3: run: {typo} is not in the guest (did you mean {tool}?): a path in "
        f"{tool.parent}, where the guest keeps programs, is taken for a program its command "
        f"runs; declare it in binaries (an absolute path is kept) or packages"]
    right = declare(tmp_path, "wis2", f"{wrapper} {{tmp}} {tool} -t {{procs}}",
                    f"binaries = {wrapper} {tool}\n")
    assert problems(guest, right) == []
    on_path = declare(tmp_path, "wis3", f"{wrapper} {{tmp}} /usr/local/bin/mytool",
                      f"binaries = {wrapper}\n")
    assert problems(guest, on_path) == [
        f"{on_path}:3: run: /usr/local/bin/mytool is not in the guest: a path in "
        f"/usr/local/bin, where the guest keeps programs, is taken for a program its command "
        f"runs; declare it in binaries (an absolute path is kept) or packages"]


def test_paths_that_are_data_or_made_at_runtime_are_not_judged(tmp_path, guest):
    """Honest about what the text shows: a path outside the guest's program
    folders is the program's data or output; {dir}, {tmp} and /tmp are made
    while the line runs."""
    path = declare(tmp_path, "data", "cat /etc/nosuch.conf > /opt/out/log; "
                                     "timeout 5 {tmp}/built-here; /tmp/made-here -o /srv/x; "
                                     "sh {dir}/script.sh")
    assert problems(guest, path) == []


def test_a_script_the_shell_reads_must_be_there(tmp_path, guest):
    path = declare(tmp_path, "script", "sh -e /workloads/gate.sh; . /lib/inode-duel.sh")
    assert problems(guest, path) == [
        f"{path}:3: run: /workloads/gate.sh is not in the guest, and a shell would read its "
        f"commands from it: declare it in files (an absolute path is kept) or binaries"]


def test_a_binary_named_by_its_host_path_is_told_its_guest_path(tmp_path, guest, tool):
    (tmp_path / "bin").mkdir()
    shutil.copy(tool, tmp_path / "bin" / "mytool")
    relative = declare(tmp_path, "rel", "timeout 60 bin/mytool -x", "binaries = bin/mytool\n")
    assert problems(guest, relative) == [
        f"{relative}:3: run: bin/mytool is where binaries takes the program from on the host; "
        f"the guest has it at /usr/local/bin/mytool: write mytool (it is on the guest's PATH) "
        f"or /usr/local/bin/mytool"]
    host = tmp_path / "bin" / "mytool"
    wrapped = declare(tmp_path, "hostpath", f"mytool {host}", "binaries = bin/mytool\n")
    assert [p.split(": run: ")[1] for p in problems(guest, wrapped)] == [
        f"{host} is where binaries takes the program from on the host; the guest has it at "
        f"/usr/local/bin/mytool: write mytool (it is on the guest's PATH) or "
        f"/usr/local/bin/mytool"]


def test_check_workloads_exits_non_zero_naming_the_file(tmp_path, monkeypatch, capsys):
    """The command as `make check-workloads` runs it, on a user's folder."""
    from harness import cli
    folder = tmp_path / "mine"
    folder.mkdir()
    path = declare(folder, "typo", "timeout -s KILL 60 /abs/missing")
    monkeypatch.setenv("BUILD_DIR", str(tmp_path / "build"))
    assert cli.main(["check-workloads", "--workloads-dir", str(folder)]) == 1
    assert f"error: {path}:3: run: /abs/missing is not in the guest" in capsys.readouterr().err
