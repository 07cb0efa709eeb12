"""harness.kernels.vmlinux: the ELF of an image, its strings, the tcg-cs class markers.

The marker bytes are captured from mainline+tcg-cs/perf (inode_init_always:
`cs cmpq $NAME, (%rax)` twice, then `cs cmpq $NAME, 0x88(%rbx)`), placed in a
small ELF made here at their real addresses, beside the strings they name.
"""

import struct

import pytest

from harness.kernels import vmlinux

TEXT = 0xffffffff81129084
MARKERS = bytes.fromhex("2e48813820e18b81" "2e4881382fe18b81"
                        "4c8da688000000" "2e4881bb8800000057e18b81")
STRINGS = 0xffffffff818be120
DATA = b"&inode->i_lock\0&sb->s_type->i_lock_key\0"
DATA += b"\0" * (0x157 - 0x120 - len(DATA)) + b"&sb->s_type->i_mutex_key\0\"sb_inode_list_lock\"\0"


def make_elf(segments):
    """A 64-bit little-endian ELF with one PT_LOAD per (vaddr, flags, bytes)."""
    header_size, phentsize = 64, 56
    offset = header_size + phentsize * len(segments)
    phdrs, blobs = b"", b""
    for vaddr, flags, blob in segments:
        phdrs += struct.pack("<IIQQQQQQ", 1, flags, offset + len(blobs), vaddr, 0, len(blob),
                             len(blob), 0x1000)
        blobs += blob
    ident = b"\x7fELF\x02\x01\x01" + b"\0" * 9
    header = ident + struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, 0, header_size, 0, 0, header_size,
                                 phentsize, len(segments), 0, 0, 0)
    return header + phdrs + blobs


@pytest.fixture
def elf():
    return vmlinux.Elf(make_elf([(TEXT, 5, MARKERS), (STRINGS, 4, DATA)]))


def test_class_markers_resolve_to_the_strings_lockdep_would_name(elf):
    assert vmlinux.class_marker_names(elf) == {
        0xffffffff818be120: "&inode->i_lock",
        0xffffffff818be12f: "&sb->s_type->i_lock_key",
        0xffffffff818be157: "&sb->s_type->i_mutex_key",
    }


def test_strings_are_read_where_they_are(elf):
    assert elf.cstring(STRINGS + 15) == "&sb->s_type->i_lock_key"
    assert elf.cstring(STRINGS + len(DATA) + 10) is None  # outside every segment
    assert elf.find_strings("&sb->s_type->i_mutex_key") == [0xffffffff818be157]
    assert vmlinux.unquote(elf.cstring(0xffffffff818be170)) == "sb_inode_list_lock"


def test_not_an_elf_is_an_error():
    with pytest.raises(vmlinux.VmlinuxError, match="x.bin: not a 64-bit"):
        vmlinux.Elf(b"MZ" + b"\0" * 100, "x.bin")


def test_system_map_and_function_ranges(tmp_path):
    path = tmp_path / "System.map"
    path.write_text("ffffffff81392d20 T _raw_spin_lock\nffffffff81392d40 T _raw_spin_lock_bh\n"
                    "ffffffff81a094c0 d inode_hash_lock\n")
    symbols = vmlinux.read_system_map(path)
    assert vmlinux.function_ranges(symbols, ("_raw_spin_lock",)) == {
        "_raw_spin_lock": (0xffffffff81392d20, 0xffffffff81392d40)}
    path.write_text("ffffffff81392d20 T _raw_spin_lock\nnot a line\n")
    with pytest.raises(vmlinux.VmlinuxError, match=r"System.map:2:"):
        vmlinux.read_system_map(path)


def test_the_elf_is_taken_out_of_the_gzip_stream_of_a_bzimage(tmp_path):
    import gzip
    inner = make_elf([(TEXT, 5, MARKERS)])
    bzimage = tmp_path / "bzImage"
    # A setup header with a false gzip magic first, then the payload.
    bzimage.write_bytes(b"\x1f\x8b\x08 not gzip" + b"\0" * 64 + gzip.compress(inner) + b"\0" * 8)
    assert vmlinux.extract(bzimage) == inner
    cached = vmlinux.cached_elf(bzimage, tmp_path / "cache", "k1")
    assert cached.read_bytes() == inner
    bzimage.write_bytes(b"no payload")
    with pytest.raises(vmlinux.VmlinuxError, match="no gzip-compressed ELF"):
        vmlinux.extract(bzimage)
