"""Disassembly of a kernel image's ELF with binutils' objdump, as data.

`objdump -d --no-show-raw-insn` of the ELF harness.kernels.vmlinux takes
out of a bzImage: the perf images carry no debug information, so System.map
and this are what the harness knows of the code the guest ran.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

LINE = re.compile(r"^\s*([0-9a-f]+):\s+(\S.*)$")
PREFIXES = {"lock", "ds", "cs", "data16", "rex", "rex.W", "notrack", "bnd", "rep", "repz",
            "repnz", "repe", "repne"}
BRANCHES = {"call", "ret", "jmp", "iret", "iretq", "sysret", "ud2", "int3", "hlt"}


class ObjdumpError(Exception):
    pass


@dataclass(frozen=True)
class Insn:
    address: int
    mnemonic: str  # without prefixes
    operands: str
    rep: bool = False  # a rep/repz/repnz prefix


def disassemble_text(elf: Path, start: int, stop: int) -> str:
    """objdump's output for [start, stop) of elf."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--start-address={start:#x}",
                          f"--stop-address={stop:#x}", str(elf)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise ObjdumpError(f"objdump {elf}: {out.stderr.strip()}")
    return out.stdout


def disassemble(elf: Path, start: int, stop: int) -> list[Insn]:
    return parse_objdump(disassemble_text(elf, start, stop))


def parse_objdump(text: str) -> list[Insn]:
    """Instructions of `objdump -d --no-show-raw-insn` output."""
    insns = []
    for line in text.splitlines():
        match = LINE.match(line)
        if not match or match.group(2).startswith("(bad)"):
            continue
        words = match.group(2).split()
        at = next((k for k, w in enumerate(words) if w not in PREFIXES), 0)
        insns.append(Insn(int(match.group(1), 16), words[at], " ".join(words[at + 1:]),
                          any(w.startswith("rep") for w in words[:at])))
    return insns


def branch_target(insn: Insn) -> int | None:
    """The target of a direct jump or call (objdump prints it as a bare hex address)."""
    match = re.fullmatch(r"(?:0x)?([0-9a-f]+)(?: <.*>)?", insn.operands)
    return int(match.group(1), 16) if match else None
