"""A built kernel as data: the ELF inside its bzImage, strings at addresses, System.map.

The harness keeps bzImage and System.map of every image; the ELF (stripped,
with its program headers) is the gzip stream inside bzImage, extracted here
with the standard library, so nothing outside the image folder is needed to
read the kernel's strings or to disassemble it with objdump.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

ELF_MAGIC = b"\x7fELF"
PT_LOAD = 1
PF_X = 1


class VmlinuxError(Exception):
    pass


def extract(bzimage: Path) -> bytes:
    """The vmlinux ELF inside a gzip-compressed bzImage (CONFIG_KERNEL_GZIP)."""
    data = bzimage.read_bytes()
    start = data.find(b"\x1f\x8b\x08")
    while start >= 0:
        try:
            out = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data[start:])
        except zlib.error:
            out = b""
        if out.startswith(ELF_MAGIC):
            return out
        start = data.find(b"\x1f\x8b\x08", start + 1)
    raise VmlinuxError(f"{bzimage}: no gzip-compressed ELF inside (is CONFIG_KERNEL_GZIP set?)")


def cached_elf(bzimage: Path, cache_dir: Path, key: str) -> Path:
    """The extracted ELF as a file (for objdump), made once per image key."""
    path = cache_dir / f"vmlinux-{key}"
    if not path.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".partial")
        tmp.write_bytes(extract(bzimage))
        tmp.rename(path)
    return path


@dataclass(frozen=True)
class Segment:
    vaddr: int
    offset: int
    size: int
    executable: bool


class Elf:
    """The loadable segments of a 64-bit little-endian ELF: enough to read memory."""

    def __init__(self, data: bytes, name: str = "vmlinux") -> None:
        if not data.startswith(ELF_MAGIC) or data[4] != 2 or data[5] != 1:
            raise VmlinuxError(f"{name}: not a 64-bit little-endian ELF")
        self.data = data
        phoff, = struct.unpack_from("<Q", data, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
        self.segments = []
        for i in range(phnum):
            p_type, p_flags, p_offset, p_vaddr, _paddr, p_filesz = struct.unpack_from(
                "<IIQQQQ", data, phoff + i * phentsize)
            if p_type == PT_LOAD and p_filesz:
                self.segments.append(Segment(p_vaddr, p_offset, p_filesz, bool(p_flags & PF_X)))

    def read(self, vaddr: int, size: int) -> bytes | None:
        for seg in self.segments:
            if seg.vaddr <= vaddr and vaddr + size <= seg.vaddr + seg.size:
                start = seg.offset + vaddr - seg.vaddr
                return self.data[start:start + size]
        return None

    def cstring(self, vaddr: int, limit: int = 256) -> str | None:
        """The printable NUL-terminated string at vaddr, or None."""
        for seg in self.segments:
            if seg.vaddr <= vaddr < seg.vaddr + seg.size:
                start = seg.offset + vaddr - seg.vaddr
                end = self.data.find(b"\0", start, start + limit)
                if end < 0:
                    return None
                raw = self.data[start:end]
                if raw and all(0x20 <= b < 0x7f for b in raw):
                    return raw.decode()
                return None
        return None

    def find_strings(self, text: str) -> list[int]:
        """Addresses of every NUL-terminated copy of text in the loadable segments."""
        needle = b"\0" + text.encode() + b"\0"
        found = []
        for seg in self.segments:
            blob = self.data[seg.offset:seg.offset + seg.size]
            at = blob.find(needle)
            while at >= 0:
                found.append(seg.vaddr + at + 1)
                at = blob.find(needle, at + 1)
        return found

    def executable(self) -> list[tuple[int, bytes]]:
        return [(seg.vaddr, self.data[seg.offset:seg.offset + seg.size])
                for seg in self.segments if seg.executable]


@dataclass(frozen=True)
class Symbol:
    address: int
    kind: str  # nm's type letter
    name: str


def read_system_map(path: Path) -> list[Symbol]:
    """System.map sorted by address; a malformed line is an error naming it."""
    symbols = []
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        parts = line.split()
        if len(parts) != 3:
            raise VmlinuxError(f"{path}:{lineno}: expected 'ADDRESS TYPE NAME': {line!r}")
        try:
            symbols.append(Symbol(int(parts[0], 16), parts[1], parts[2]))
        except ValueError:
            raise VmlinuxError(f"{path}:{lineno}: bad address {parts[0]!r}") from None
    symbols.sort(key=lambda s: s.address)
    return symbols


def function_ranges(symbols: list[Symbol], names: tuple[str, ...]) -> dict[str, tuple[int, int]]:
    """[start, end) of each named text symbol: end is the next symbol's address."""
    out = {}
    for i, sym in enumerate(symbols):
        if sym.name in names and sym.kind in "tT":
            end = next((s.address for s in symbols[i + 1:] if s.address > sym.address), None)
            if end is not None:
                out[sym.name] = (sym.address, end)
    return out


def class_marker_names(elf: Elf) -> dict[int, str]:
    """Class names of the tcg-cs patch's markers: `cs cmpq $NAME, mem` -> {NAME: string}.

    The marker is 2e, a REX.W prefix, 81 /7, ModRM (and SIB, displacement),
    then the 32-bit immediate, sign-extended to the address of the string.
    A byte pattern that is not really such an instruction gives an address
    holding no string, and is skipped.
    """
    names: dict[int, str] = {}
    for _base, text in elf.executable():
        at = text.find(b"\x2e")
        while 0 <= at < len(text) - 8:
            rex, op, modrm = text[at + 1], text[at + 2], text[at + 3]
            if 0x48 <= rex <= 0x4f and op == 0x81 and (modrm >> 3) & 7 == 7 and modrm >> 6 != 3:
                mod, rm = modrm >> 6, modrm & 7
                i = at + 4
                base = None
                if rm == 4:
                    base = text[i] & 7
                    i += 1
                if mod == 1:
                    i += 1
                elif mod == 2 or (mod == 0 and (rm == 5 or base == 5)):
                    i += 4
                imm, = struct.unpack_from("<i", text, i)
                address = imm & 0xffffffffffffffff
                name = elf.cstring(address)
                if name is not None:
                    names[address] = unquote(name)
            at = text.find(b"\x2e", at + 1)
    return names


def unquote(name: str) -> str:
    """lockdep_set_class_and_name(lock, key, "name") is marked with #name: "\\"name\\""."""
    if len(name) >= 2 and name[0] == name[-1] == '"':
        return name[1:-1]
    return name
