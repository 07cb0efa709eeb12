"""Parse the output of the tcg-cs QEMU plugin (tcg-cs/plugin.c).

Tab-separated lines: a header "tcg-cs 3" ("tcg-cs 2": the plugin before
histograms, "tcg-cs 1": before cache lines and trylock retries, both still
read), "config KEY VALUE" lines (lines, cold_lines, vcpus, retry_horizon,
hist_sub_buckets); per window the guest closed,

    window  LABEL  INSTRUCTIONS  INTERRUPT_INSTRUCTIONS  ROLE_HELD_INSTRUCTIONS  ACCESSES  COLD
    cs      LABEL  CLASS  SITE  ACQUISITIONS  INSTRUCTIONS  MIN  MAX  INTERRUPT_INSTRUCTIONS
                   INTERRUPTED  LINES_READ  LINES_WRITTEN  LINES_PREV  LOCKLINE_WRITTEN
                   COLD  CHAIN
    hist    LABEL  hold|wait  CLASS  SITE  LOW:COUNT,LOW:COUNT,...
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
by line. A hist line (version 3) counts per bucket, named by its smallest
value, the own lengths of the sections of the cs line before it ("hold"),
or the waits of its (class, site)'s spin_locks that went to the queued slow
path ("wait": the rest of the section of the vCPU that held the lock when
the cmpxchg failed, in the holder's own instructions from then to its
release, several vCPUs only; a waiter queued behind another also waits for
that one's section, which is not counted); buckets are hist_sub_buckets to a
power of 2 (Histogram).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

HEADERS = {("tcg-cs", "1"): 1, ("tcg-cs", "2"): 2, ("tcg-cs", "3"): 3}
HISTOGRAMS = ("hold", "wait")


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


def bucket_low(value: int, sub_buckets: int) -> int:
    """The smallest value of value's bucket: values below sub_buckets (a power of 2)
    have a bucket each, every power of 2 above is cut into sub_buckets equal ones."""
    if value < sub_buckets:
        return value
    step = 1 << (value.bit_length() - sub_buckets.bit_length())
    return value - value % step


def bucket_high(low: int, sub_buckets: int) -> int:
    """The first value past the bucket whose smallest value is low."""
    if low < sub_buckets:
        return low + 1
    return low + (1 << (low.bit_length() - sub_buckets.bit_length()))


@dataclass(frozen=True)
class Histogram:
    """Counts of instruction counts in log-spaced buckets (bucket_low): a bucket is at
    most 1/sub_buckets of its smallest value wide, so a percentile is known to that."""
    sub_buckets: int
    buckets: tuple[tuple[int, int], ...]  # (smallest value, count), ascending, counts > 0

    @property
    def count(self) -> int:
        return sum(n for _, n in self.buckets)

    def percentile(self, q: float) -> tuple[int, int]:
        """The bucket (smallest value, first value past it) holding the q-quantile: the
        smallest value at or below which at least q of the counts lie."""
        if not self.buckets or not 0 < q <= 1:
            raise ValueError(f"percentile {q} of {self.count} values")
        rank = max(1, math.ceil(q * self.count - 1e-9))
        seen = 0
        for low, n in self.buckets:
            seen += n
            if seen >= rank:
                return low, bucket_high(low, self.sub_buckets)
        raise AssertionError("unreachable: rank <= count")

    def __add__(self, other: Histogram) -> Histogram:
        if self.sub_buckets != other.sub_buckets:
            raise ValueError("histograms of different bucket widths")
        merged: dict[int, int] = dict(self.buckets)
        for low, n in other.buckets:
            merged[low] = merged.get(low, 0) + n
        return Histogram(self.sub_buckets, tuple(sorted(merged.items())))


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
    # (class, site) -> sections' own lengths; -> spin_lock waits in the slow path
    holds: dict[tuple[str, int], Histogram] = field(default_factory=dict)
    waits: dict[tuple[str, int], Histogram] = field(default_factory=dict)

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

    def histograms_by_class(self, what: str) -> dict[str, Histogram]:
        """Class -> the hold (or wait) histogram over all its call sites."""
        out: dict[str, Histogram] = {}
        for (lock_class, _), h in (self.holds if what == "hold" else self.waits).items():
            out[lock_class] = out[lock_class] + h if lock_class in out else h
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
        elif kind in ("cs", "hist", "note", "trylock", "tsec", "tline", "tchain") and (
                kind != "hist" or self.version >= 3):
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

    def hist(self, parts: list[str], line: str) -> None:
        sub = self.config.get("hist_sub_buckets", 0)
        if len(parts) != 6 or parts[2] not in HISTOGRAMS or sub < 1 or sub & (sub - 1):
            raise self.error("malformed hist line", line)
        pairs = [p.split(":") for p in parts[5].split(",")]
        if any(len(p) != 2 for p in pairs):
            raise self.error("malformed hist line", line)
        buckets = tuple((low, n) for low, n in (self.ints(p) for p in pairs))
        lows = [low for low, _ in buckets]
        if (lows != sorted(set(lows)) or any(n <= 0 for _, n in buckets)
                or any(bucket_low(low, sub) != low for low in lows)):
            raise self.error("inconsistent hist line", line)
        key = (parts[3], _int(parts[4], self.source, self.lineno, 16))
        histogram = Histogram(sub, buckets)
        assert self.current is not None
        if parts[2] == "wait":
            self.current.waits[key] = histogram
            return
        # A hold histogram counts the sections of the cs line just before it.
        section = self.current.sections[-1] if self.current.sections else None
        if (section is None or (section.lock_class, section.site) != key
                or histogram.count != section.acquisitions
                or bucket_low(section.min, sub) != lows[0]
                or bucket_low(section.max, sub) != lows[-1]):
            raise self.error("hold histogram not of the sections before it", line)
        self.current.holds[key] = histogram

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
        raise TcgCsError(f"{source}:1: not tcg-cs plugin output (expected 'tcg-cs\\t1', "
                         "'tcg-cs\\t2' or 'tcg-cs\\t3')")
    reader = _Reader(source, version)
    for lineno, line in enumerate(lines[1:], 2):
        reader.lineno = lineno
        reader.read(line)
    return Output(reader.windows, reader.boot, version, reader.config)
