"""Check the tcg-cs plugin against critical sections whose length the disassembly gives.

A spinlock taken at a call site and released by straight-line code has one
possible length: the lock function's instructions from its cmpxchg to its
return on the uncontended path, plus the caller's from the instruction
after the call to the release, both ends counted. Straight-line here means:
the lock's address is `lea OFF(%REG),%rdi` or `mov %REG,%rdi` before the
call with REG a register the call preserves (rbx, rbp, r12-r15), nothing
writes REG afterwards, and the first `movb $0x0` to that very operand comes
before any branch, call, return or rep-prefixed string instruction (QEMU,
like its -icount, counts each iteration of those). The plugin's shortest
section of that site must be exactly that long (longer ones are sections an
interrupt landed in). Every such site of a boot is a check of the method,
independent of it: objdump reads the very image the guest ran.

Kernels patch some of their code at boot (alternatives, jump labels, the
lock prefixes of a uniprocessor): a site whose code changed at run time can
differ from the image, and is reported as such, never adjusted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from harness.boot import tcg_cs as mode
from harness.kernels import vmlinux
from harness.kernels.objdump import BRANCHES, Insn, branch_target, disassemble
from harness.layout import Layout
from harness.parsers import tcg_cs

# Registers a call preserves, with the names of their parts.
PRESERVED = {"rbx": ("rbx", "ebx", "bx", "bl", "bh"), "rbp": ("rbp", "ebp", "bp", "bpl"),
             **{f"r{n}": (f"r{n}", f"r{n}d", f"r{n}w", f"r{n}b") for n in range(12, 16)}}
MAX_INSNS = 400  # longer straight-line code than this is not looked for


@dataclass(frozen=True)
class SiteCheck:
    site: int
    function: str  # function+offset of the call site
    lock_class: str
    expected: int  # from the disassembly
    measured_min: int
    measured_max: int
    acquisitions: int

    @property
    def agrees(self) -> bool:
        return self.measured_min == self.expected


def lock_fast_path(insns: list[Insn]) -> int | None:
    """Instructions of a lock function from its cmpxchg to its return, on success.

    A successful cmpxchg sets ZF: jne/jnz fall through, je/jz are taken.
    """
    by_address = {insn.address: i for i, insn in enumerate(insns)}
    i = next((k for k, insn in enumerate(insns) if insn.mnemonic.startswith("cmpxchg")), None)
    count = 0
    while i is not None and i < len(insns) and count < MAX_INSNS:
        insn = insns[i]
        count += 1
        if insn.mnemonic == "ret":
            return count
        if insn.mnemonic in ("jne", "jnz"):
            i += 1
        elif insn.mnemonic in ("je", "jz", "jmp"):
            i = by_address.get(branch_target(insn))
        elif insn.mnemonic.startswith("j") or insn.mnemonic in BRANCHES:
            return None
        else:
            i += 1
    return None


def lock_operand(before_call: list[Insn]) -> tuple[str, str] | None:
    """(memory operand, register) of the lock the call takes, from how %rdi was set.

    None unless it is `lea OFF(%REG),%rdi` or `mov %REG,%rdi` with REG
    preserved by the call and not written between that and the call.
    """
    for insn in reversed(before_call):
        if insn.operands.endswith(",%rdi"):
            memory = re.fullmatch(r"(-?(?:0x[0-9a-f]+)?\(%(\w+)\)),%rdi", insn.operands)
            if insn.mnemonic == "lea" and memory and memory.group(2) in PRESERVED:
                return normal(memory.group(1)), memory.group(2)
            register = re.fullmatch(r"%(\w+),%rdi", insn.operands)
            if insn.mnemonic == "mov" and register and register.group(1) in PRESERVED:
                return f"(%{register.group(1)})", register.group(1)
            return None
        if insn.mnemonic in BRANCHES or insn.mnemonic.startswith("j"):
            return None
    return None


def normal(operand: str) -> str:
    return operand[3:] if operand.startswith("0x0(") else operand


def writes(insn: Insn, register: str) -> bool:
    """Whether insn may write register (as its destination, AT&T: the last operand)."""
    last = insn.operands.rsplit(",", 1)[-1]
    return any(last == f"%{name}" for name in PRESERVED[register])


def straight_line_release(insns: list[Insn], lock: tuple[str, str]) -> int | None:
    """Instructions up to and including the release of lock, if nothing can branch first."""
    operand, register = lock
    for count, insn in enumerate(insns, 1):
        if insn.mnemonic == "movb" and insn.operands.startswith("$0x0,") and \
                normal(insn.operands[len("$0x0,"):]) == operand:
            return count
        if (insn.mnemonic.startswith("j") or insn.mnemonic in BRANCHES or insn.rep
                or writes(insn, register)):
            return None
    return None


class Image:
    """An image's ELF and symbols, with the lengths already worked out."""

    def __init__(self, elf: Path, symbols: list[vmlinux.Symbol]) -> None:
        self.elf = elf
        self.symbols = symbols
        self.fast_paths: dict[int, int | None] = {}
        self.lengths: dict[int, int | None] = {}

    def fast_path(self, function: int) -> int | None:
        if function not in self.fast_paths:
            end = next((s.address for s in self.symbols if s.address > function), function + 64)
            self.fast_paths[function] = lock_fast_path(disassemble(self.elf, function, end))
        return self.fast_paths[function]

    def expected_length(self, site: int) -> int | None:
        """The one possible length of a section entered by the call at site, or None."""
        if site not in self.lengths:
            self.lengths[site] = self._expected_length(site)
        return self.lengths[site]

    def _expected_length(self, site: int) -> int | None:
        caller_of = containing(self.symbols, site)
        if caller_of is None:
            return None
        start = site - caller_of[1]
        insns = disassemble(self.elf, start, site + 5 + 8 * MAX_INSNS)
        at = next((i for i, insn in enumerate(insns) if insn.address == site), None)
        if at is None or insns[at].mnemonic != "call":
            return None  # a tail jump returns elsewhere: no straight line to follow
        target = branch_target(insns[at])
        function = containing(self.symbols, target) if target else None
        lock = lock_operand(insns[:at])
        if function is None or function[1] != 0 or lock is None:
            return None
        callee = self.fast_path(target)
        caller = straight_line_release(insns[at + 1:at + 1 + MAX_INSNS], lock)
        if callee is None or caller is None:
            return None
        return callee + caller


def containing(symbols: list[vmlinux.Symbol], address: int) -> tuple[str, int] | None:
    """(function, offset) of a text address."""
    best = None
    for sym in symbols:
        if sym.kind not in "tT":
            continue
        if sym.address > address:
            break
        best = sym
    return (best.name, address - best.address) if best else None


def check_window(image: Image, window: tcg_cs.Window) -> list[SiteCheck]:
    """Every call site of the window whose section is straight-line code."""
    checks = []
    for section in window.sections:
        if not section.site:
            continue
        expected = image.expected_length(section.site)
        if expected is None:
            continue
        where = containing(image.symbols, section.site)
        checks.append(SiteCheck(section.site, f"{where[0]}+{where[1]:#x}" if where else "?",
                                section.lock_class, expected, section.min, section.max,
                                section.acquisitions))
    return checks


def image_of(layout: Layout, image_dir: Path) -> Image:
    key = json.loads((image_dir / "meta.json").read_text())["key"]
    return Image(vmlinux.cached_elf(image_dir / "bzImage", layout.build / "tcg-cs", key),
                 vmlinux.read_system_map(image_dir / "System.map"))


def check_boot(layout: Layout, boot_dir: Path,
               images: dict[Path, Image] | None = None) -> list[SiteCheck]:
    """Every straight-line call site of every window of a tcg-cs boot folder."""
    images = {} if images is None else images
    image_dir = mode.image_of_boot(boot_dir)
    if image_dir not in images:
        images[image_dir] = image_of(layout, image_dir)
    output = mode.read_output(boot_dir)
    checks = []
    for window in output.windows.values() if output else ():
        checks += check_window(images[image_dir], window)
    return checks
