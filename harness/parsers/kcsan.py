"""KCSAN's data-race reports on a console, each with both access stacks.

6.1's kernel/kcsan/report.c prints a race as

    ==================================================================
    BUG: KCSAN: data-race in iput / prune_icache_sb

    write to 0xffff88800a1b2c48 of 8 bytes by task 87 on cpu 1:
     iput+0x1a3/0x2f0
     do_unlinkat+0x1b2/0x320
     ...

    read to 0xffff88800a1b2c48 of 8 bytes by task 91 on cpu 0:
     prune_icache_sb+0x54/0x120
     ...

    value changed: 0x0000000000000060 -> 0x0000000000000020

    Reported by Kernel Concurrency Sanitizer on:
    CPU: 0 PID: 91 Comm: reclaim Not tainted 6.1.192 #1
    Hardware name: QEMU Standard PC (i440FX + PIIX, 1996), ...
    ==================================================================

the other task's access first (the one that set up the watchpoint), then
the reporting task's; the two functions of the title in lexical order, so a
race keeps its title from run to run. A race whose other access is not
known (only a changed value was seen) has one access, "race at unknown
origin, with read to ...", and one function in its title. ASSERT_EXCLUSIVE_*
checks print "assert: race" and "assert no writes to ...". Accesses are
"read", "write" or "read-write", "(marked)" when READ_ONCE()-like,
"(reordered)" under weak-memory modelling (KCSAN_STRICT; the "+-> reordered
to: FUNC" line after such a stack is passed over); with KCSAN_VERBOSE the
held locks of each task and its irq trace follow its stack. Reports are rate-limited per pair of
access sites (KCSAN_REPORT_ONCE_IN_MS), so a count here is of reports.

Two keys group reports: `site_key`, the pair of access sites (function and
offset, what KCSAN rate-limits by), identifies a race within one image;
`function_key`, the pair of functions and access types, identifies it across
kernels, whose offsets differ wherever their code does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.parsers import kernel_reports
from harness.parsers import report_frames as frames

HEADLINE = re.compile(r"^BUG: KCSAN: (?P<kind>data-race|assert: race) in (?P<where>.+?)\s*$")
_ACCESS = (r"(?P<type>(?:read-write|read|write|assert no (?:writes|accesses))"
           r"(?: \((?:marked|reordered|marked, reordered)\))?) to 0x(?P<address>[0-9a-f]+) "
           r"of (?P<size>\d+) bytes by (?:task (?P<task>\d+)|(?P<interrupt>interrupt)) "
           r"on cpu (?P<cpu>\d+):\s*$")
ACCESS = re.compile("^" + _ACCESS)
UNKNOWN_ORIGIN = re.compile("^race at unknown origin, with " + _ACCESS)
VALUE_CHANGED = re.compile(r"^value changed: (?P<old>0x[0-9a-f]+) -> (?P<new>0x[0-9a-f]+)")
HELD_LOCK = re.compile(r"^\s*#\d+: [0-9a-f]+ \((?P<lock>.+?)\)\{")
REPORTER = re.compile(r"^CPU: (?P<cpu>\d+) PID: (?P<pid>\d+) Comm: (?P<comm>\S+)")
END = re.compile(r"^=+\s*$")
SELFTEST = re.compile(r"^kcsan: selftest: (?P<passed>\d+)/(?P<total>\d+) tests passed")
ENABLED = re.compile(r"^kcsan: (?:enabled early|(?:non-)?strict mode configured)")
_FRAME_TEXT = re.compile(r"(?P<func>[A-Za-z0-9_.]+)\+(?P<offset>0x[0-9a-f]+)/(?P<size>0x[0-9a-f]+)")
# A report without its closing line (a truncated console) stops here.
MAX_REPORT_LINES = 300


@dataclass(frozen=True)
class Frame:
    func: str  # without a compiler suffix (.isra.0, .constprop.0)
    offset: int
    size: int

    @property
    def site(self) -> str:
        """'iput+0x1a3': one instruction of one image."""
        return f"{self.func}+{self.offset:#x}"

    @property
    def text(self) -> str:
        return f"{self.func}+{self.offset:#x}/{self.size:#x}"


@dataclass(frozen=True)
class Access:
    type: str  # read, write, read-write, each maybe "(marked)"/"(reordered)"; assert no ...
    address: int
    size: int  # bytes
    task: int | None  # pid; None: in an interrupt
    cpu: int
    frames: tuple[Frame, ...]  # the access first
    held_locks: tuple[str, ...] = ()  # lockdep class names, with KCSAN_VERBOSE

    @property
    def site(self) -> str:
        return self.frames[0].site if self.frames else "?"

    @property
    def function(self) -> str:
        return self.frames[0].func if self.frames else "?"

    @property
    def plain_type(self) -> str:
        """The access without "(marked)" and "(reordered)": read, write, read-write."""
        return self.type.split(" (", 1)[0]

    @property
    def marked(self) -> bool:
        return "marked" in self.type


@dataclass(frozen=True)
class Race:
    kind: str  # data-race, assert: race
    title: str  # "KCSAN: data-race in A / B", as syzbot names it
    accesses: tuple[Access, ...]  # the other task's first, then the reporter's; one if unknown
    value_change: tuple[str, str] | None  # (old, new), when the watcher saw one
    reporter: str  # "comm/pid on cpu N" of the reporting task
    line: int  # 1-based console line of the headline

    @property
    def unknown_origin(self) -> bool:
        return len(self.accesses) == 1

    @property
    def site_key(self) -> tuple:
        """The race within one image: its kind and the pair of access sites."""
        return (self.kind, tuple(sorted((a.site, a.plain_type) for a in self.accesses)))

    @property
    def function_key(self) -> tuple:
        """The race across kernels: its kind and the pair of functions and access types."""
        return (self.kind, tuple(sorted((a.function, a.plain_type) for a in self.accesses)))


def parse_frame(text: str) -> Frame | None:
    match = _FRAME_TEXT.fullmatch(text.strip())
    if not match:
        return None
    return Frame(match.group("func").split(".", 1)[0], int(match.group("offset"), 16),
                 int(match.group("size"), 16))


def _access(match: re.Match) -> dict:
    return {"type": match.group("type"), "address": int(match.group("address"), 16),
            "size": int(match.group("size")),
            "task": None if match.group("interrupt") else int(match.group("task")),
            "cpu": int(match.group("cpu")), "frames": [], "held_locks": []}


def _frame_of(msg: str) -> Frame | None:
    if not frames.reliable(frames.FRAME.match(msg)):
        return None
    text = _FRAME_TEXT.search(msg)
    return parse_frame(text.group(0)) if text else None


def _read_report(msgs: list[str]) -> tuple[list[dict], tuple[str, str] | None, str, int]:
    """The accesses, value change and reporter of a report's lines after its headline;
    and how many lines it took (up to its closing line)."""
    accesses: list[dict] = []
    value_change = None
    reporter = ""
    current = None
    in_stack = False
    for used, msg in enumerate(msgs, 1):
        if END.match(msg) or used > MAX_REPORT_LINES:
            return accesses, value_change, reporter, used
        if HEADLINE.match(msg):  # the next report: this one lost its end
            return accesses, value_change, reporter, used - 1
        start = ACCESS.match(msg) or UNKNOWN_ORIGIN.match(msg)
        if start:
            current = _access(start)
            accesses.append(current)
            in_stack = True
            continue
        if not msg.strip():
            in_stack = False
            continue
        frame = _frame_of(msg) if in_stack and current is not None else None
        if frame:
            current["frames"].append(frame)
            continue
        lock = HELD_LOCK.match(msg)
        changed = VALUE_CHANGED.match(msg)
        who = REPORTER.match(msg)
        if lock and current is not None:
            current["held_locks"].append(lock.group("lock"))
        elif changed:
            value_change = (changed.group("old"), changed.group("new"))
        elif who:
            reporter = f"{who.group('comm')}/{who.group('pid')} on cpu {who.group('cpu')}"
    return accesses, value_change, reporter, len(msgs)


def _parse_stream(lines: list) -> list[Race]:
    races = []
    i = 0
    while i < len(lines):
        head = HEADLINE.match(lines[i].msg)
        if not head:
            i += 1
            continue
        msgs = [line.msg for line in lines[i + 1:i + 1 + MAX_REPORT_LINES]]
        accesses, value_change, reporter, used = _read_report(msgs)
        races.append(Race(
            head.group("kind"), kernel_reports.kcsan_title(lines[i].msg),
            tuple(Access(a["type"], a["address"], a["size"], a["task"], a["cpu"],
                         tuple(a["frames"]), tuple(a["held_locks"]))
                  for a in accesses),
            value_change, reporter, lines[i].number))
        i += 1 + used
    return races


def parse(text: str) -> tuple[Race, ...]:
    """Every KCSAN report of a console log, in the order their headlines appear.
    With CONFIG_PRINTK_CALLER each task or CPU is read as its own stream, so
    two reports printed at once do not cut each other."""
    streams: dict[str, list] = {}
    for line in kernel_reports.console_lines(text):
        streams.setdefault(line.context, []).append(line)
    races = [r for lines in streams.values() for r in _parse_stream(lines)]
    return tuple(sorted(races, key=lambda r: r.line))


@dataclass(frozen=True)
class Armed:
    """Whether KCSAN watched in a boot: a boot with no report counts only if it did."""
    enabled: bool  # "kcsan: enabled early" or its mode line
    selftest: tuple[int, int] | None  # (passed, total)

    @property
    def ok(self) -> bool:
        return self.enabled and self.selftest is not None and self.selftest[0] == self.selftest[1]


def armed(text: str) -> Armed:
    enabled = False
    selftest = None
    for line in kernel_reports.console_lines(text):
        if ENABLED.match(line.msg):
            enabled = True
        test = SELFTEST.match(line.msg)
        if test:
            selftest = (int(test.group("passed")), int(test.group("total")))
    return Armed(enabled, selftest)
