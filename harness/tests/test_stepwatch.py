"""stepwatch, the guest's step runner, compiled and run here on the host.

Its lock_stat files are pointed at a scratch folder (INODE_DUEL_PROC_DIR):
the host kernel's counters are never touched.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.boot.measure import Window
from harness.guest import initramfs


@pytest.fixture(scope="module")
def stepwatch(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("helper")
    binary = initramfs.compile_helper(out)
    (out / "phase").symlink_to(binary.name)
    return binary


def run(stepwatch: Path, tmp_path: Path, command: str, start: str = "", end: str = "",
        **env) -> subprocess.CompletedProcess:
    proc = tmp_path / "proc"
    proc.mkdir(exist_ok=True)
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    environ = {"PATH": f"{stepwatch.parent}:/usr/bin:/bin", "TMPDIR": str(scratch),
               "INODE_DUEL_PREFIX": str(tmp_path / "s01"), "INODE_DUEL_PROCS": "2",
               "INODE_DUEL_LOCK_START": start, "INODE_DUEL_LOCK_END": end,
               "INODE_DUEL_PROC_DIR": str(proc), **env}
    # As run_step runs it: a process group of its own, killed when it ends.
    proc = subprocess.Popen([str(stepwatch), "-p", str(tmp_path / "s01"), "-C", str(scratch),
                             "--", command], env=environ, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def window(tmp_path: Path) -> Window:
    return Window.parse((tmp_path / "s01.window").read_text())


def test_run_line_is_contained_in_its_own_shell(stepwatch, tmp_path):
    """Redirections, pipes and ';' act inside the step; its exit status is the step's."""
    done = run(stepwatch, tmp_path, 'echo out; echo err >&2; echo x > "$TMPDIR/f"; '
                                    'cat f | tr x y; exit 3')
    assert done.returncode == 3
    assert done.stdout == "out\ny\n"  # the cat ran in TMPDIR, the working directory
    assert done.stderr == "err\n"
    assert (tmp_path / "scratch" / "f").read_text() == "x\n"
    w = window(tmp_path)
    assert w.opened and w.closed and 0 < w.window_s <= w.command_s


def test_a_failing_command_fails_the_step(stepwatch, tmp_path):
    done = run(stepwatch, tmp_path, "false; echo never")
    assert done.returncode == 1 and "never" not in done.stdout


# A real program that buffers stdout when it is not a terminal (Debian's python3
# without PYTHONUNBUFFERED): 'start', 0.4 s of work, 'end'.
BUFFERED = (f"{sys.executable} -c 'import time; print(\"start\"); time.sleep(0.4); "
            f"print(\"end\")'")


def test_window_follows_the_lines_of_a_buffering_program(stepwatch, tmp_path):
    done = run(stepwatch, tmp_path, BUFFERED, start="start", end="end")
    assert done.stdout == "start\nend\n"  # raw terminal: no \r added
    w = window(tmp_path)
    assert w.opened and w.closed
    assert 0.35 < w.window_s < w.command_s


def test_through_a_pipe_the_start_line_comes_late(stepwatch, tmp_path):
    """Why stdout is a terminal: piped, the same program's lines arrive together
    at its exit and the window would be empty."""
    done = run(stepwatch, tmp_path, BUFFERED + " | cat", start="start", end="end")
    assert done.stdout == "start\nend\n"
    assert window(tmp_path).window_s < 0.1


def test_lock_stat_is_bracketed_by_the_lines(stepwatch, tmp_path):
    """Reset when the start line appears (stderr counts too), saved when the end
    line appears; what the 'kernel' counts after the end is not in the window."""
    fake = tmp_path / "proc" / "lock_stat"
    (tmp_path / "proc").mkdir()
    fake.write_text("setup\n")
    command = (f"echo go >&2; sleep 0.3; cat {fake} > {tmp_path}/seen; "
               f"echo counted > {fake}; echo stop; sleep 0.3; echo teardown > {fake}")
    done = run(stepwatch, tmp_path, command, start="go", end="stop")
    assert done.returncode == 0
    assert (tmp_path / "seen").read_text().startswith("0\n")  # reset at the start line
    assert (tmp_path / "s01.all.lock_stat").read_text() == "counted\n"
    w = window(tmp_path)
    assert 0.25 < w.window_s < w.command_s - 0.25


def test_a_start_line_that_never_comes_leaves_the_window_unopened(stepwatch, tmp_path):
    run(stepwatch, tmp_path, "echo something else", start="never printed")
    w = window(tmp_path)
    assert not w.opened and w.window_s == 0
    assert not (tmp_path / "s01.all.lock_stat").exists()


def test_phase_times_and_brackets_one_command(stepwatch, tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "lock_stat").write_text("before\n")
    done = run(stepwatch, tmp_path, f"phase walk 42 sh -c 'sleep 0.2; "
                                    f"echo during > {tmp_path}/proc/lock_stat'; echo after")
    lines = done.stdout.splitlines()
    assert lines[1] == "after"
    fields = dict(item.split("=") for item in lines[0].split()[1:])
    assert lines[0].startswith("result ")
    assert fields["phase"] == "walk" and fields["ops"] == "42" and fields["procs"] == "2"
    assert int(fields["elapsed_ns"]) > 0.15e9
    assert (tmp_path / "s01.walk.lock_stat").read_text() == "during\n"


def test_phase_fails_when_its_start_line_never_comes(stepwatch, tmp_path):
    done = run(stepwatch, tmp_path, "phase -s ready x 1 echo hello")
    assert done.returncode == 1
    assert "result" not in done.stdout
    assert "the start line ('ready') never appeared" in done.stderr


def test_group_is_killed_with_the_step_not_left_behind(stepwatch, tmp_path):
    """The command stays in stepwatch's process group, the one run_step kills."""
    pidfile = tmp_path / "pid"
    proc = subprocess.Popen([str(stepwatch), "-p", str(tmp_path / "s01"), "--",
                             f"sleep 300 & echo $! > {pidfile}; wait"],
                            start_new_session=True)
    for _ in range(100):
        if pidfile.exists() and pidfile.read_text().strip():
            break
        subprocess.run(["sleep", "0.05"])
    child = int(pidfile.read_text())
    assert os.getpgid(child) == proc.pid
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def test_a_process_left_holding_the_terminal_delays_nothing_measured(stepwatch, tmp_path):
    """The command ends while a process it started still holds its stdout: the
    window closes with the command; stepwatch stops reading after a bound."""
    started = time.monotonic()
    done = run(stepwatch, tmp_path, "echo go; sleep 30 & echo bye", start="go")
    assert done.returncode == 0 and done.stdout.startswith("go\nbye\n")
    assert time.monotonic() - started < 20
    w = window(tmp_path)
    assert w.opened and w.closed and w.window_s < 1.0


def test_window_says_where_it_lies_in_each_stream(stepwatch, tmp_path):
    """Byte offsets of the window in stdout and stderr: the start and end lines
    inside, what each stream printed before and after outside."""
    command = ("echo warm; echo warm-err >&2; sleep 0.2; echo go; echo in; echo in-err >&2; "
               "sleep 0.2; echo stop; echo summary; echo late-err >&2")
    done = run(stepwatch, tmp_path, command, start="go", end="stop")
    w = window(tmp_path)
    out, err = done.stdout.encode(), done.stderr.encode()
    assert out[w.out[0]:w.out[1]] == b"go\nin\nstop\n"
    assert err[w.err[0]:w.err[1]] == b"in-err\n"
    assert out[w.out[1]:] == b"summary\n" and err[w.err[1]:] == b"late-err\n"


def test_without_lines_to_watch_the_whole_output_is_the_window(stepwatch, tmp_path):
    run(stepwatch, tmp_path, "echo a; echo b >&2")
    assert (window(tmp_path).out, window(tmp_path).err) == ((0, -1), (0, -1))
