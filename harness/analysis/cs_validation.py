"""Check the tcg-cs plugin against critical sections whose length the disassembly gives.

A spinlock taken at a call site and released by straight-line code (no
branch, call or return between the call's return and the releasing
`movb $0x0`) has one possible length: the lock function's instructions
from its cmpxchg to its return on the uncontended path, plus the caller's
from the instruction after the call to the release, both ends counted. The
plugin's shortest section of that site must be exactly that long (longer
ones are sections an interrupt landed in). Every such site of a boot is a
check of the method, independent of it: objdump reads the very image the
guest ran.

Kernels patch some of their code at boot (alternatives, jump labels, the
lock prefixes of a uniprocessor): a site whose code changed at run time can
differ from the image, and is reported as such, never adjusted.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.kernels import vmlinux
from harness.parsers import tcg_cs

LINE = re.compile(r"^\s*([0-9a-f]+):\s+(\S.*)$")
PREFIXES = {"lock", "ds", "cs", "data16", "rex", "rex.W", "notrack", "bnd", "rep", "repz",
            "repnz", "repe", "repne"}
BRANCHES = {"call", "ret", "jmp", "iret", "iretq", "sysret", "ud2", "int3", "hlt"}
MAX_INSNS = 400  # longer straight-line code than this is not looked for


class ValidationError(Exception):
    pass


@dataclass(frozen=True)
class Insn:
    address: int
    mnemonic: str  # without prefixes
    operands: str


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


def disassemble(elf: Path, start: int, stop: int) -> list[Insn]:
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--start-address={start:#x}",
                          f"--stop-address={stop:#x}", str(elf)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise ValidationError(f"objdump {elf}: {out.stderr.strip()}")
    return parse_objdump(out.stdout)


def parse_objdump(text: str) -> list[Insn]:
    """Instructions of `objdump -d --no-show-raw-insn` output."""
    insns = []
    for line in text.splitlines():
        match = LINE.match(line)
        if not match or match.group(2).startswith("(bad)"):
            continue
        words = match.group(2).split()
        at = next((k for k, w in enumerate(words) if w not in PREFIXES), 0)
        insns.append(Insn(int(match.group(1), 16), words[at], " ".join(words[at + 1:])))
    return insns


def branch_target(insn: Insn) -> int | None:
    """The target of a direct jump or call (objdump prints it as a bare hex address)."""
    match = re.fullmatch(r"(?:0x)?([0-9a-f]+)(?: <.*>)?", insn.operands)
    return int(match.group(1), 16) if match else None


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


def straight_line_release(insns: list[Insn]) -> int | None:
    """Instructions up to and including the first `movb $0x0,`, if no branch comes first."""
    for count, insn in enumerate(insns, 1):
        if insn.mnemonic == "movb" and insn.operands.startswith("$0x0,"):
            return count
        if insn.mnemonic.startswith("j") or insn.mnemonic in BRANCHES:
            return None
    return None


def expected_length(elf: Path, symbols: list[vmlinux.Symbol], site: int) -> int | None:
    """The one possible length of a section entered by the call at site, or None."""
    at_site = disassemble(elf, site, site + 16)
    if not at_site or at_site[0].address != site or at_site[0].mnemonic != "call":
        return None  # a tail jump returns elsewhere: no straight line to follow
    target = branch_target(at_site[0])
    function = containing(symbols, target) if target else None
    if function is None or function[1] != 0:
        return None
    end = next((s.address for s in symbols if s.address > target), target + 64)
    callee = lock_fast_path(disassemble(elf, target, end))
    after = site + 5  # call rel32
    caller = straight_line_release(disassemble(elf, after, after + 8 * MAX_INSNS)[:MAX_INSNS])
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


def check_window(elf: Path, symbols: list[vmlinux.Symbol],
                 window: tcg_cs.Window) -> list[SiteCheck]:
    """Every call site of the window whose section is straight-line code."""
    checks = []
    for section in window.sections:
        if not section.site:
            continue
        expected = expected_length(elf, symbols, section.site)
        if expected is None:
            continue
        where = containing(symbols, section.site)
        checks.append(SiteCheck(section.site, f"{where[0]}+{where[1]:#x}" if where else "?",
                                section.lock_class, expected, section.min, section.max,
                                section.acquisitions))
    return checks
