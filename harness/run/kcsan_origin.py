"""Who wrote the racing lines: a race's frames to file:line, and each line to its patch.

A kcsan image keeps vmlinux with line tables (configs/kcsan.config). Each
frame of a report, "iput+0x1a3/0x2f0", is the function's address (nm) plus
the offset, less one: KCSAN's frames are return addresses, the access's own
frame included (the instruction after its call to __tsan_read8), and one
byte back lands in the call, on the access's line. addr2line -i turns it
into the chain of lines the compiler inlined there, innermost first. The
kernel tree holds every image's source as commits, pristine 6.1 and then one
commit per patch (kernels/series.py), so git blame at the image's commit says
which patch wrote each line, or that 6.1 did.

The racing lines of an access are those of its first frame (the function
that made the access and what was inlined into it): the first of them that a
patch wrote names the patch. Lines deeper in the stack are the callers: a
race in 6.1's code that a patch's caller reaches is told apart from one no
patch comes near.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.kernels import source
from harness.kernels.kbuild import KernelImage
from harness.layout import Layout
from harness.parsers.kcsan import Frame
from harness.parsers.report_frames import tree_path


class OriginError(Exception):
    pass


@dataclass(frozen=True)
class SourceLine:
    function: str
    file: str  # relative to the tree's top
    line: int


@dataclass(frozen=True)
class PatchRef:
    """A patch of an image, as its meta.json lists it."""
    series: str
    index: int  # 1-based within its series
    subject: str

    @property
    def label(self) -> str:
        return f"{self.series} {self.index:04d}"


_ADDRESS = re.compile(r"^0x(?P<address>[0-9a-f]+)$")
_LOCATION = re.compile(r"^(?P<file>.+?):(?P<line>\d+|\?)(?: \(discriminator \d+\))?$")


def parse_addr2line(text: str) -> dict[int, tuple[SourceLine, ...]]:
    """`addr2line -a -f -i` output: per address, its inline chain, innermost first.
    Lines addr2line cannot place ("??:0", "?") are left out."""
    chains: dict[int, list[SourceLine]] = {}
    current: list[SourceLine] | None = None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        address = _ADDRESS.match(lines[i].strip())
        if address:
            current = chains.setdefault(int(address.group("address"), 16), [])
            i += 1
            continue
        if current is not None and i + 1 < len(lines):
            function, where = lines[i].strip(), _LOCATION.match(lines[i + 1].strip())
            if where and where.group("line") not in ("?", "0") and function != "??":
                current.append(SourceLine(function, tree_path(where.group("file")),
                                          int(where.group("line"))))
            i += 2
            continue
        i += 1
    return {address: tuple(chain) for address, chain in chains.items()}


def parse_nm(text: str) -> dict[str, list[tuple[int, int]]]:
    """`nm -S` output: text symbol -> [(address, size)], one per definition
    (a static function's name may be defined in several files)."""
    out: dict[str, list[tuple[int, int]]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            out.setdefault(parts[3].split(".", 1)[0], []).append(
                (int(parts[0], 16), int(parts[1], 16)))
    return out


def frame_address(symbols: dict[str, list[tuple[int, int]]], frame: Frame) -> int | None:
    """The byte before the frame's return address; a name defined several times is
    told apart by the size the console printed."""
    found = symbols.get(frame.func, [])
    sized = [address for address, size in found if size == frame.size] or \
        [address for address, _ in found]
    return sized[0] + frame.offset - 1 if sized and frame.offset else None


def _run(cmd: list[str], what: str) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise OriginError(f"{what}: {' '.join(cmd[:3])} failed: {out.stderr.strip()[:300]}")
    return out.stdout


def parse_blame(text: str) -> dict[int, str]:
    """`git blame --porcelain` output: final line number -> commit."""
    out = {}
    for line in text.splitlines():
        header = re.match(r"^([0-9a-f]{40}) \d+ (\d+)(?: (\d+))?$", line)
        if header:
            out[int(header.group(2))] = header.group(1)
    return out


class ImageLines:
    """Frames of one image to source lines: nm and addr2line on its vmlinux."""

    def __init__(self, vmlinux: Path) -> None:
        if not vmlinux.exists():
            raise OriginError(f"{vmlinux.parent}: no vmlinux (an image built without debug "
                              "information cannot place a frame on a line)")
        self.vmlinux = vmlinux
        self.symbols = parse_nm(_run(["nm", "-S", "--defined-only", str(vmlinux)], "nm"))
        self._lines: dict[Frame, tuple[SourceLine, ...]] = {}

    def lines(self, frames: list[Frame]) -> dict[Frame, tuple[SourceLine, ...]]:
        """Each frame's inline chain of source lines, innermost first (empty when unknown)."""
        todo = {f: frame_address(self.symbols, f) for f in frames if f not in self._lines}
        addresses = sorted({a for a in todo.values() if a is not None})
        chains = parse_addr2line(_run(["addr2line", "-a", "-f", "-i", "-e", str(self.vmlinux),
                                       *(f"{a:#x}" for a in addresses)], "addr2line")
                                 ) if addresses else {}
        for frame, address in todo.items():
            self._lines[frame] = chains.get(address, ()) if address is not None else ()
        return {f: self._lines[f] for f in frames}


class ImageBlame:
    """Source lines of one image to the patch that wrote them: git blame at its commit."""

    def __init__(self, src: Path, meta: dict) -> None:
        self.src = src
        self.commit = meta["commit"]
        tag = f"pristine/{meta['package_version']}"
        commits = source.git(src, "rev-list", "--reverse", f"{tag}..{self.commit}", check=False)
        if commits.returncode != 0:
            raise OriginError(f"{src}: commit {self.commit} of {meta['kernel']}/"
                              f"{meta['flavour']} is not in the kernel tree")
        shas = commits.stdout.split()
        if len(shas) != len(meta["patches"]):
            raise OriginError(f"{meta['kernel']}/{meta['flavour']}: {len(shas)} commits above "
                              f"{tag} but {len(meta['patches'])} patches in its meta.json")
        self.patches = {sha: PatchRef(p["series"], _index(p["file"]), p["subject"])
                        for sha, p in zip(shas, meta["patches"])}
        self._blame: dict[tuple[str, int], PatchRef | None] = {}

    def written_by(self, lines: list[SourceLine]) -> dict[tuple[str, int], PatchRef | None]:
        """The patch that wrote each line at the image's commit; None: 6.1 did."""
        by_file: dict[str, set[int]] = {}
        for line in lines:
            if (line.file, line.line) not in self._blame:
                by_file.setdefault(line.file, set()).add(line.line)
        for path, numbers in by_file.items():
            ranges = [arg for n in sorted(numbers) for arg in ("-L", f"{n},{n}")]
            blamed = source.git(self.src, "blame", "--porcelain", *ranges, self.commit,
                                "--", path, check=False)
            commits = parse_blame(blamed.stdout) if blamed.returncode == 0 else {}
            for n in numbers:
                self._blame[path, n] = self.patches.get(commits.get(n, ""))
        return {(l.file, l.line): self._blame[l.file, l.line] for l in lines}


class Origins:
    """One image: frames to source lines, and those to the patches that wrote them."""

    def __init__(self, layout: Layout, image: KernelImage) -> None:
        self.lines = ImageLines(image.vmlinux).lines
        self.written_by = ImageBlame(layout.src, image.meta).written_by


def _index(file_name: str) -> int:
    """The patch's place in its series, from its file name (NNNN-...)."""
    match = re.match(r"(\d+)-", file_name)
    return int(match.group(1)) if match else 0
