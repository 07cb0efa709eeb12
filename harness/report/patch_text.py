"""Counts read off the text of one git format-patch file: what it adds and removes.

Every count here is a proxy a reviewer can check by reading the patch: the
net change in lines of the tree that match a pattern (occurrences in added
lines minus occurrences in removed lines), so a series' count is the sum of
its patches' counts and equals the change between the tree before and after.
Comment lines do not count as code.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

# Call sites that take a lock only if it is free.
TRYLOCK = re.compile(r"\b\w*trylock\w*\s*\(")
# Jumps back to a retry label: the goto-again shape of a restart loop.
RETRY_JUMP = re.compile(r"\bgoto\s+(again|retry|repeat|restart|relock|redo)\w*\s*;")
CPU_RELAX = re.compile(r"\bcpu_relax\s*\(")
# lock and unlock calls: (prefix, operation, first argument), e.g.
# spin_unlock(&inode->i_lock) -> ("spin", "unlock", "&inode->i_lock").
LOCK_CALL = re.compile(r"\b(\w+?)_(unlock|trylock|lock)(?:_irq|_irqsave|_irqrestore|_bh|_nested)?"
                       r"\s*\(\s*([^,()]*(?:\([^()]*\))?[^,()]*)")
# The project's own /proc/icache_retries counters: instrumentation, not design.
INSTRUMENTATION = re.compile(r"icache_retr|\bICR_[A-Z_]+|ICACHE_RETR")


class PatchTextError(Exception):
    pass


@dataclass(frozen=True)
class Hunk:
    path: str
    before: tuple[str, ...]  # context and removed lines, in order
    after: tuple[str, ...]  # context and added lines, in order
    added: tuple[str, ...]
    removed: tuple[str, ...]


@dataclass(frozen=True)
class PatchCounts:
    files: tuple[tuple[str, int, int], ...]  # (path, added, removed) from git apply --numstat
    trylocks: int
    retry_jumps: int
    cpu_relax: int
    relocks: int  # a lock released and the same lock taken again further down a hunk
    instrumentation: int  # added lines of the /proc/icache_retries counters

    @property
    def added(self) -> int:
        return sum(a for _, a, _ in self.files)

    @property
    def removed(self) -> int:
        return sum(r for _, _, r in self.files)


def numstat(path: Path) -> tuple[tuple[str, int, int], ...]:
    """git's own diffstat of a patch file; needs no kernel tree."""
    out = subprocess.run(["git", "apply", "--numstat", str(path)], capture_output=True,
                         text=True)
    if out.returncode != 0:
        raise PatchTextError(f"{path}: git apply --numstat failed: {out.stderr.strip()}")
    files = []
    for lineno, line in enumerate(out.stdout.splitlines(), 1):
        added, removed, name = line.split("\t", 2)
        # Binary files show "-": they add no lines of code.
        files.append((name, int(added) if added != "-" else 0,
                      int(removed) if removed != "-" else 0))
    return tuple(files)


HUNK_HEADER = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def hunks(text: str, name: str = "patch") -> list[Hunk]:
    """The hunks of a unified diff; a hunk ends where its header's line counts
    say, so the mail signature ("-- ") is never taken for a removed line."""
    out = []
    path = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("+++ "):
            path = line[4:].split("\t")[0]
            path = path[2:] if path.startswith("b/") else path
        header = HUNK_HEADER.match(line)
        if not header:
            i += 1
            continue
        old_left = int(header.group(1) or 1)
        new_left = int(header.group(2) or 1)
        before, after, added, removed = [], [], [], []
        i += 1
        while (old_left > 0 or new_left > 0) and i < len(lines):
            body = lines[i]
            kind, content = (body[:1], body[1:]) if body else (" ", "")
            if kind == " ":
                before.append(content)
                after.append(content)
                old_left -= 1
                new_left -= 1
            elif kind == "-":
                before.append(content)
                removed.append(content)
                old_left -= 1
            elif kind == "+":
                after.append(content)
                added.append(content)
                new_left -= 1
            elif kind != "\\":  # "\ No newline at end of file"
                raise PatchTextError(f"{name}:{i + 1}: hunk of {path} ends early: {body!r}")
            i += 1
        out.append(Hunk(path, tuple(before), tuple(after), tuple(added), tuple(removed)))
    return out


def code_of(line: str) -> str:
    """A line without its comment; empty for comment lines."""
    stripped = line.strip()
    if stripped.startswith(("*", "/*", "//")):
        return ""
    return re.sub(r"/\*.*?(\*/|$)|//.*$", "", line)


def _occurrences(pattern: re.Pattern, lines: tuple[str, ...]) -> int:
    return sum(len(pattern.findall(code_of(line))) for line in lines)


def relocks(lines: tuple[str, ...]) -> int:
    """Unlocks of a lock expression followed, further down, by a lock or trylock
    of the same expression: each such pair is one drop and re-take."""
    released: dict[tuple[str, str], int] = {}
    count = 0
    for line in lines:
        for prefix, op, arg in LOCK_CALL.findall(code_of(line)):
            key = (prefix, re.sub(r"\s+", "", arg))
            if op == "unlock":
                released[key] = released.get(key, 0) + 1
            elif released.get(key):
                released[key] -= 1
                count += 1
    return count


def count(path: Path) -> PatchCounts:
    text = path.read_text(errors="replace")
    found = hunks(text, str(path))
    return PatchCounts(
        files=numstat(path),
        trylocks=sum(_occurrences(TRYLOCK, h.added) - _occurrences(TRYLOCK, h.removed)
                     for h in found),
        retry_jumps=sum(_occurrences(RETRY_JUMP, h.added) - _occurrences(RETRY_JUMP, h.removed)
                        for h in found),
        cpu_relax=sum(_occurrences(CPU_RELAX, h.added) - _occurrences(CPU_RELAX, h.removed)
                      for h in found),
        relocks=sum(relocks(h.after) - relocks(h.before) for h in found),
        instrumentation=sum(1 for h in found for line in h.added if INSTRUMENTATION.search(line)))
