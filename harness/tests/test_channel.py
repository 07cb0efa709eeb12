"""The result channel: records are trusted only when whole and checksummed."""

import base64
import gzip
import hashlib
import re
import subprocess
import time
from pathlib import Path

import pytest

from harness.boot import channel
from harness.guest import protocol
from harness.layout import REPO_ROOT

GUEST_LIB = Path(__file__).resolve().parents[1] / "guest" / "rootfs" / "inode-duel.sh"
ESCAPE_SOURCE = REPO_ROOT / "harness" / "test_data" / "programs" / "escape.c"


def guest_shell(tmp_path: Path, script: str, timeout: float = 30) -> subprocess.CompletedProcess:
    """Run script with the guest's shell library sourced, in busybox sh on the host."""
    definitions = tmp_path / "protocol.sh"
    # The harness's files in the test's folder, not the guest's /run/inode-duel.
    definitions.write_text(protocol.shell_definitions() + f"HARNESS_DIR='{tmp_path}'\n")
    return subprocess.run(["/bin/busybox", "sh", "-c", f". {GUEST_LIB}; {script}"],
                          env={"PATH": "/bin:/usr/bin", "INODE_DUEL_PROTOCOL": str(definitions),
                               "INODE_DUEL_LIB": str(GUEST_LIB)},
                          capture_output=True, text=True, timeout=timeout, check=True)


def encode(name: str, data: bytes) -> bytes:
    body = base64.encodebytes(gzip.compress(data))
    head = f"@@record {name} {len(data)} {hashlib.sha256(data).hexdigest()}\n".encode()
    return head + body + f"@@end {name}\n".encode()


def test_whole_records_decode():
    raw = encode("a.out", b"result phase=x ops=1\n") + encode("b", b"")
    got = channel.parse(raw)
    assert [r.name for r in got.records] == ["a.out", "b"]
    assert got.get("a.out") == b"result phase=x ops=1\n"
    assert got.damaged == ()


def test_record_cut_by_a_crash_is_damaged_not_data():
    whole = encode("first", b"kept\n")
    cut = encode("second", b"x" * 5000)[:60]
    got = channel.parse(whole + cut)
    assert got.get("first") == b"kept\n"
    assert got.get("second") is None
    assert [d.name for d in got.damaged] == ["second"]
    assert "cut short" in got.damaged[0].reason


def test_corrupted_byte_fails_the_checksum():
    data = b"0123456789" * 100
    raw = bytearray(encode("f", data))
    raw[:] = raw.replace(f"{len(data)} ".encode(), f"{len(data) + 1} ".encode(), 1)
    got = channel.parse(bytes(raw))
    assert got.records == ()
    assert "size" in got.damaged[0].reason


def test_serial_line_endings_are_tolerated():
    raw = encode("f", b"abc\n").replace(b"\n", b"\r\n")
    assert channel.parse(raw).get("f") == b"abc\n"


def test_guest_emit_function_round_trips(tmp_path):
    """The guest's own shell emit() (run here with busybox sh) produces what parse reads."""
    payload = tmp_path / "payload"
    payload.write_bytes(bytes(range(256)) * 40)
    out = tmp_path / "port"
    guest_shell(tmp_path, f"results_open {out}; emit payload {payload}; "
                          f"emit_text note 'hello world'")
    got = channel.parse(out.read_bytes())
    assert got.damaged == ()
    assert got.get("payload") == payload.read_bytes()
    assert got.text("note") == "hello world\n"


def gone(pid: int, within_s: float = 5.0) -> bool:
    """The process is dead (gone or a zombie) now or soon: SIGKILL is not instant."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        stat = Path(f"/proc/{pid}/stat")
        try:
            if stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_step_command_leaves_nothing_running(tmp_path):
    """Whatever a step's command starts in the background dies with the step."""
    pidfile = tmp_path / "orphan.pid"
    guest_shell(tmp_path, f"run_limited s01 30 {tmp_path}/s01 "
                          f"sh -c 'sleep 300 & echo $! > {pidfile}'; echo rc=$?")
    assert gone(int(pidfile.read_text()))


def test_step_timeout_kills_the_whole_process_group(tmp_path):
    """At its limit a step's command and every process it started are killed."""
    pidfile = tmp_path / "child.pid"
    done = guest_shell(tmp_path, f"run_limited s01 1 {tmp_path}/s01 "
                                 f"sh -c 'sleep 300 & echo $! > {pidfile}; sleep 300'; "
                                 f"echo rc=$?; ls {tmp_path}/s01.timedout")
    assert "rc=137" in done.stdout
    assert f"{tmp_path}/s01.timedout" in done.stdout
    assert gone(int(pidfile.read_text()))


@pytest.fixture(scope="module")
def escape(tmp_path_factory) -> Path:
    """A program whose workers move to process groups of their own and ignore SIGTERM."""
    binary = tmp_path_factory.mktemp("escape") / "escape"
    subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-static", "-o", str(binary),
                    str(ESCAPE_SOURCE)], check=True)
    return binary


def escapees(output: str) -> list[tuple[int, int, int]]:
    """(pid, pgid, sid) of every process the escape program said it started."""
    return [tuple(map(int, m)) for m in re.findall(r"escape pid=(\d+) pgid=(\d+) sid=(\d+)",
                                                     output)]


def test_step_limit_kills_workers_in_process_groups_of_their_own(tmp_path, escape):
    """fsstress's case: setpgid(0, 0) in every process and SIGTERM ignored. At the
    limit the whole session goes, so no worker outlives the step."""
    out = tmp_path / "s01.out"
    done = guest_shell(tmp_path, f"run_limited s01 2 {tmp_path}/s01 {escape}; echo rc=$?; "
                                 f"ls {tmp_path}/s01.timedout")
    assert "rc=137" in done.stdout and f"{tmp_path}/s01.timedout" in done.stdout
    started = escapees(out.read_text())
    assert len(started) == 3
    assert len({pgid for _, pgid, _ in started}) == 3  # three groups, one session
    assert len({sid for _, _, sid in started}) == 1
    assert all(gone(pid) for pid, _, _ in started)


def test_workers_left_behind_by_a_command_that_ended_are_killed(tmp_path, escape):
    out = tmp_path / "s01.out"
    done = guest_shell(tmp_path, f"run_limited s01 60 {tmp_path}/s01 {escape} -e; echo rc=$?")
    assert "rc=0" in done.stdout
    started = escapees(out.read_text())
    assert len(started) == 3 and all(gone(pid) for pid, _, _ in started)
