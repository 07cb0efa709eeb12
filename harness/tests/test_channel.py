"""The result channel: records are trusted only when whole and checksummed."""

import base64
import gzip
import hashlib
import subprocess
from pathlib import Path

from harness.boot import channel

GUEST_LIB = Path(__file__).resolve().parents[1] / "guest" / "rootfs" / "inode-duel.sh"


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
    script = (f"RESULTS={out}; stty() {{ :; }}; . {GUEST_LIB}; RESULTS={out}; "
              f"emit payload {payload}; emit_text note 'hello world'")
    subprocess.run(["/bin/busybox", "sh", "-c", script], check=True,
                   env={"PATH": "/bin:/usr/bin"})
    got = channel.parse(out.read_bytes())
    assert got.damaged == ()
    assert got.get("payload") == payload.read_bytes()
    assert got.text("note") == "hello world\n"
