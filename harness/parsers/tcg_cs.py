"""Parse the output of the tcg-cs QEMU plugin (tcg-cs/plugin.c).

Tab-separated lines: a header "tcg-cs 1"; per window the guest closed,

    window  LABEL  INSTRUCTIONS  INTERRUPT_INSTRUCTIONS  ROLE_HELD_INSTRUCTIONS
    cs      LABEL  CLASS  SITE  ACQUISITIONS  INSTRUCTIONS  MIN  MAX  INTERRUPT_INSTRUCTIONS  INTERRUPTED
    note    LABEL  KEY    VALUE

and, when QEMU exited normally, "boot KEY VALUE" lines. LABEL is
"<step>.<phase>", the name of the lock_stat file of the same window. A
section's INSTRUCTIONS is the sum over its ACQUISITIONS of the guest
instructions from the acquiring atomic to the releasing store, both counted,
less those of interrupts that arrived meanwhile (INTERRUPT_INSTRUCTIONS, in
INTERRUPTED of the sections); MIN and MAX are of the same own lengths. A
window's ROLE_HELD_INSTRUCTIONS ran with at least one lock of an icache
role held (the harness told the plugin which classes have one).
"""

from __future__ import annotations

from dataclasses import dataclass, field

HEADER = ("tcg-cs", "1")


class TcgCsError(Exception):
    pass


@dataclass(frozen=True)
class Section:
    """Critical sections of one lock class entered from one call site."""
    lock_class: str
    site: int  # address of the call into the lock function (0: unknown)
    acquisitions: int
    instructions: int  # own: interrupts excluded
    min: int
    max: int
    interrupt_instructions: int
    interrupted: int  # sections an interrupt arrived in


@dataclass
class Window:
    label: str
    instructions: int
    interrupt_instructions: int  # of interrupts that arrived while a lock was held
    role_held_instructions: int  # with a lock of an icache role held, interrupts included
    sections: list[Section] = field(default_factory=list)
    notes: dict[str, int] = field(default_factory=dict)

    def by_class(self) -> dict[str, tuple[int, int, int]]:
        """Class -> (acquisitions, own instructions, interrupt instructions), all call sites."""
        out: dict[str, tuple[int, int, int]] = {}
        for s in self.sections:
            n, total, irq = out.get(s.lock_class, (0, 0, 0))
            out[s.lock_class] = (n + s.acquisitions, total + s.instructions,
                                 irq + s.interrupt_instructions)
        return out


@dataclass(frozen=True)
class Output:
    windows: dict[str, Window]  # by label; a label seen twice keeps its last window
    boot: dict[str, int]  # empty when QEMU did not exit normally


def _int(text: str, source: str, lineno: int, base: int = 10) -> int:
    try:
        return int(text, base)
    except ValueError:
        raise TcgCsError(f"{source}:{lineno}: not a number: {text!r}") from None


def parse(text: str, source: str = "tcg-cs output") -> Output:
    lines = text.split("\n")
    # The plugin writes a window at once and flushes it; a QEMU killed while
    # it wrote leaves an unterminated last line, which is dropped.
    lines.pop()
    if not lines or tuple(lines[0].split("\t")) != HEADER:
        raise TcgCsError(f"{source}:1: not tcg-cs plugin output (expected 'tcg-cs\\t1')")
    windows: dict[str, Window] = {}
    boot: dict[str, int] = {}
    current: Window | None = None
    for lineno, line in enumerate(lines[1:], 2):
        parts = line.split("\t")
        kind = parts[0]
        if kind == "window" and len(parts) == 5:
            instructions, irq, role_held = (_int(p, source, lineno) for p in parts[2:5])
            if not (0 <= irq <= instructions and 0 <= role_held <= instructions):
                raise TcgCsError(f"{source}:{lineno}: inconsistent window: {line!r}")
            current = Window(parts[1], instructions, irq, role_held)
            windows[current.label] = current
        elif kind in ("cs", "note"):
            if current is None or len(parts) < 2 or parts[1] != current.label:
                raise TcgCsError(f"{source}:{lineno}: {kind} line outside its window: {line!r}")
            if kind == "cs" and len(parts) == 10:
                n, total, low, high, irq, interrupted = (_int(p, source, lineno)
                                                         for p in parts[4:10])
                if (n <= 0 or not (low <= high) or not (n * low <= total <= n * high)
                        or not (0 <= interrupted <= n) or (irq > 0) != (interrupted > 0)):
                    raise TcgCsError(f"{source}:{lineno}: inconsistent section: {line!r}")
                current.sections.append(Section(parts[2], _int(parts[3], source, lineno, 16),
                                                n, total, low, high, irq, interrupted))
            elif kind == "note" and len(parts) == 4:
                current.notes[parts[2]] = _int(parts[3], source, lineno)
            else:
                raise TcgCsError(f"{source}:{lineno}: malformed {kind} line: {line!r}")
        elif kind == "boot" and len(parts) == 3:
            boot[parts[1]] = _int(parts[2], source, lineno)
        else:
            raise TcgCsError(f"{source}:{lineno}: unexpected line: {line!r}")
    return Output(windows, boot)
