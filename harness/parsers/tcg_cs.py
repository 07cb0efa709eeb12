"""Parse the output of the tcg-cs QEMU plugin (tcg-cs/plugin.c).

Tab-separated lines: a header "tcg-cs 2" ("tcg-cs 1": the plugin before
cache lines and trylock retries, still read), "config KEY VALUE" lines
(lines, cold_lines, vcpus, retry_horizon); per window the guest closed,

    window  LABEL  INSTRUCTIONS  INTERRUPT_INSTRUCTIONS  ROLE_HELD_INSTRUCTIONS  ACCESSES  COLD
    cs      LABEL  CLASS  SITE  ACQUISITIONS  INSTRUCTIONS  MIN  MAX  INTERRUPT_INSTRUCTIONS
                   INTERRUPTED  LINES_READ  LINES_WRITTEN  LINES_PREV  LOCKLINE_WRITTEN
                   COLD  CHAIN
    trylock LABEL  CLASS  SITE  FAILED  RETRIES  RETRY_FAILURES  RETRY_INSTRUCTIONS
                   SKIPS  SKIP_INSTRUCTIONS  ABANDONED
    note    LABEL  KEY    VALUE
    tsec    LABEL  ID  CLASS  SITE  LOCK  START  LENGTH  READ  WRITTEN  PREV  COLD
                   LOCKLINE_WRITTEN  CHAIN
    tline   LABEL  ID  VADDR  INSN  TIME  FLAGS  GAP
    tchain  LABEL  ID  INSN  LOADS

and, when QEMU exited normally, "boot KEY VALUE" lines. LABEL is
"<step>.<phase>", the name of the lock_stat file of the same window. A
section's INSTRUCTIONS is the sum over its ACQUISITIONS of the guest
instructions from the acquiring atomic to the releasing store, both counted,
less those of interrupts that arrived meanwhile (INTERRUPT_INSTRUCTIONS, in
INTERRUPTED of the sections); MIN and MAX are of the same own lengths. A
window's ROLE_HELD_INSTRUCTIONS ran with at least one lock of an icache
role held (the harness told the plugin which classes have one). The line
columns are sums over the sections (plugin.c says what each counts); a
trylock episode runs from a vCPU's first failed trylock of a lock at a site
to its success there: a retry if no other lock's trylock succeeded at the
site meanwhile, else a skip. tsec/tline/tchain give traced sections line
by line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

HEADERS = {("tcg-cs", "1"): 1, ("tcg-cs", "2"): 2}


class TcgCsError(Exception):
    pass


@dataclass(frozen=True)
class Lines:
    """Cache-line sums over a group of sections (zero when the plugin tracked none)."""
    read: int = 0  # lines only read
    written: int = 0  # lines written (and maybe read)
    prev: int = 0  # lines last written inside an earlier section of the same lock
    lockline_written: int = 0  # sections that wrote the lock word's line beside the word
    cold: int = 0  # lines missing the plugin's simulated cache (cold_lines lines, LRU)
    chain: int = 0  # hash sections: chain entries visited

    def __add__(self, other: Lines) -> Lines:
        return Lines(self.read + other.read, self.written + other.written,
                     self.prev + other.prev, self.lockline_written + other.lockline_written,
                     self.cold + other.cold, self.chain + other.chain)


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
    lines: Lines = Lines()


@dataclass(frozen=True)
class Trylock:
    """Failed trylocks of one class at one call site, and their retries."""
    lock_class: str
    site: int
    failed: int
    retries: int  # episodes (first failure to success) that tried only this lock
    retry_failures: int
    retry_instructions: int  # the failing vCPU's, over those episodes
    skips: int  # episodes in which the site succeeded on other locks meanwhile
    skip_instructions: int
    abandoned: int  # episodes that never met their success within the horizon


@dataclass(frozen=True)
class TracedLine:
    vaddr: int  # first access to the line: data address
    insn: int  # and the instruction
    time: int  # and the vCPU's instruction count
    flags: str  # R read, W written, c cold, p previous, L the lock word's line
    gap: int | None  # instructions since the line's previous access (None: never)


@dataclass
class TracedSection:
    id: int
    lock_class: str
    site: int
    lock: int
    start: int  # the vCPU's instruction count at the acquisition
    length: int
    lines: Lines
    touched: list[TracedLine] = field(default_factory=list)
    chain_loads: dict[int, int] = field(default_factory=dict)  # instruction -> loads


@dataclass
class Window:
    label: str
    instructions: int
    interrupt_instructions: int  # of interrupts that arrived while a lock was held
    role_held_instructions: int  # with a lock of an icache role held, interrupts included
    accesses: int = 0  # memory accesses (lines touched) while the window was open
    cold_accesses: int = 0  # of those, missing the simulated cache
    sections: list[Section] = field(default_factory=list)
    trylocks: list[Trylock] = field(default_factory=list)
    notes: dict[str, int] = field(default_factory=dict)
    traced: list[TracedSection] = field(default_factory=list)

    def by_class(self) -> dict[str, tuple[int, int, int]]:
        """Class -> (acquisitions, own instructions, interrupt instructions), all call sites."""
        out: dict[str, tuple[int, int, int]] = {}
        for s in self.sections:
            n, total, irq = out.get(s.lock_class, (0, 0, 0))
            out[s.lock_class] = (n + s.acquisitions, total + s.instructions,
                                 irq + s.interrupt_instructions)
        return out

    def lines_by_class(self) -> dict[str, Lines]:
        out: dict[str, Lines] = {}
        for s in self.sections:
            out[s.lock_class] = out.get(s.lock_class, Lines()) + s.lines
        return out


@dataclass(frozen=True)
class Output:
    windows: dict[str, Window]  # by label; a label seen twice keeps its last window
    boot: dict[str, int]  # empty when QEMU did not exit normally
    version: int = 1
    config: dict[str, int] = field(default_factory=dict)
    # function+offset of call sites, where the harness resolved them (boot/tcg_cs.py)
    site_names: dict[int, str] = field(default_factory=dict)

    @property
    def lines_tracked(self) -> bool:
        return bool(self.config.get("lines"))


def _int(text: str, source: str, lineno: int, base: int = 10) -> int:
    try:
        return int(text, base)
    except ValueError:
        raise TcgCsError(f"{source}:{lineno}: not a number: {text!r}") from None


class _Reader:
    """One pass over the lines; each kind of line has its method."""

    def __init__(self, source: str, version: int) -> None:
        self.source = source
        self.version = version
        self.windows: dict[str, Window] = {}
        self.boot: dict[str, int] = {}
        self.config: dict[str, int] = {}
        self.current: Window | None = None
        self.traced: dict[int, TracedSection] = {}
        self.lineno = 0

    def error(self, what: str, line: str) -> TcgCsError:
        return TcgCsError(f"{self.source}:{self.lineno}: {what}: {line!r}")

    def ints(self, parts: list[str], base: int = 10) -> list[int]:
        return [_int(p, self.source, self.lineno, base) for p in parts]

    def read(self, line: str) -> None:
        parts = line.split("\t")
        kind = parts[0]
        if kind == "window" and len(parts) == (5 if self.version == 1 else 7):
            self.window(parts, line)
        elif kind in ("cs", "note", "trylock", "tsec", "tline", "tchain"):
            if self.current is None or len(parts) < 2 or parts[1] != self.current.label:
                raise self.error(f"{kind} line outside its window", line)
            getattr(self, kind)(parts, line)
        elif kind in ("boot", "config") and len(parts) == 3:
            target = self.boot if kind == "boot" else self.config
            target[parts[1]] = _int(parts[2], self.source, self.lineno)
        else:
            raise self.error("unexpected line", line)

    def window(self, parts: list[str], line: str) -> None:
        instructions, irq, role_held, *rest = self.ints(parts[2:])
        accesses, cold = rest if rest else (0, 0)
        if not (0 <= irq <= instructions and 0 <= role_held <= instructions
                and 0 <= cold <= accesses):
            raise self.error("inconsistent window", line)
        self.current = Window(parts[1], instructions, irq, role_held, accesses, cold)
        self.windows[self.current.label] = self.current
        self.traced = {}

    def cs(self, parts: list[str], line: str) -> None:
        if len(parts) != (10 if self.version == 1 else 16):
            raise self.error("malformed cs line", line)
        n, total, low, high, irq, interrupted, *line_sums = self.ints(parts[4:])
        if (n <= 0 or not (low <= high) or not (n * low <= total <= n * high)
                or not (0 <= interrupted <= n) or (irq > 0) != (interrupted > 0)):
            raise self.error("inconsistent section", line)
        lines = Lines(*line_sums) if line_sums else Lines()
        if lines.lockline_written > n or min(line_sums, default=0) < 0:
            raise self.error("inconsistent section", line)
        site = _int(parts[3], self.source, self.lineno, 16)
        assert self.current is not None
        self.current.sections.append(Section(parts[2], site, n, total, low, high, irq,
                                             interrupted, lines))

    def trylock(self, parts: list[str], line: str) -> None:
        if len(parts) != 11:
            raise self.error("malformed trylock line", line)
        numbers = self.ints(parts[4:])
        if numbers[2] < numbers[1] or min(numbers) < 0:
            raise self.error("inconsistent trylock line", line)
        site = _int(parts[3], self.source, self.lineno, 16)
        assert self.current is not None
        self.current.trylocks.append(Trylock(parts[2], site, *numbers))

    def note(self, parts: list[str], line: str) -> None:
        if len(parts) != 4:
            raise self.error("malformed note line", line)
        assert self.current is not None
        self.current.notes[parts[2]] = _int(parts[3], self.source, self.lineno)

    def tsec(self, parts: list[str], line: str) -> None:
        if len(parts) != 14:
            raise self.error("malformed tsec line", line)
        ident = _int(parts[2], self.source, self.lineno)
        site, lock = self.ints([parts[4], parts[5]], 16)
        start, length, read, written, prev, cold, lockline, chain = self.ints(parts[6:])
        traced = TracedSection(ident, parts[3], site, lock, start, length,
                               Lines(read, written, prev, lockline, cold, chain))
        self.traced[ident] = traced
        assert self.current is not None
        self.current.traced.append(traced)

    def _traced(self, parts: list[str], line: str) -> TracedSection:
        traced = self.traced.get(_int(parts[2], self.source, self.lineno))
        if traced is None:
            raise self.error(f"{parts[0]} line before its tsec line", line)
        return traced

    def tline(self, parts: list[str], line: str) -> None:
        if len(parts) != 8 or not set(parts[6]) <= set("RWcpL"):
            raise self.error("malformed tline line", line)
        vaddr, insn = self.ints(parts[3:5], 16)
        time = _int(parts[5], self.source, self.lineno)
        gap = None if parts[7] == "-" else _int(parts[7], self.source, self.lineno)
        self._traced(parts, line).touched.append(TracedLine(vaddr, insn, time, parts[6], gap))

    def tchain(self, parts: list[str], line: str) -> None:
        if len(parts) != 5:
            raise self.error("malformed tchain line", line)
        insn = _int(parts[3], self.source, self.lineno, 16)
        self._traced(parts, line).chain_loads[insn] = _int(parts[4], self.source, self.lineno)


def parse(text: str, source: str = "tcg-cs output") -> Output:
    lines = text.split("\n")
    # The plugin writes a window at once and flushes it; a QEMU killed while
    # it wrote leaves an unterminated last line, which is dropped.
    lines.pop()
    version = HEADERS.get(tuple(lines[0].split("\t"))) if lines else None
    if version is None:
        raise TcgCsError(f"{source}:1: not tcg-cs plugin output (expected 'tcg-cs\\t1' "
                         "or 'tcg-cs\\t2')")
    reader = _Reader(source, version)
    for lineno, line in enumerate(lines[1:], 2):
        reader.lineno = lineno
        reader.read(line)
    return Output(reader.windows, reader.boot, version, reader.config)
