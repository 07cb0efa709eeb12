"""Find kernel reports (lockdep, RCU, atomic sleep, WARN, BUG/Oops, panic) in a console log.

Each report gets a kind and a title in syzbot's style, so one bug keeps one
title across runs and kernels:

    kind             headline (6.1 wording; older "INFO:"/"[ INFO: ... ]" too)
    circular         WARNING: possible circular locking dependency detected
    recursive        WARNING: possible recursive locking detected
    inconsistent     WARNING: inconsistent lock state
    irq-inversion    WARNING: possible irq lock inversion dependency detected
                     WARNING: SOFTIRQ-safe -> SOFTIRQ-unsafe lock order detected
    bad-unlock       WARNING: bad unlock balance detected!
    held-lock-freed  WARNING: held lock freed!  (BUG: in older kernels)
    rcu              WARNING: suspicious RCU usage
    sleep-in-atomic  BUG: sleeping function called from invalid context at F:L
                     BUG: scheduling while atomic: comm/pid/count
    warn             WARNING: CPU: N PID: N at FILE:LINE FUNC+0x../0x..
    bug              kernel BUG at FILE:LINE!, BUG: unable to handle ...,
                     BUG: kernel NULL pointer dereference, general protection
                     fault, Oops:, BUG: KASAN: ...
    panic            Kernel panic - not syncing: REASON

FUNC in a title is chosen as syzkaller's pkg/report/linux.go does: the
function of the "at:" line of the lock being acquired (recursive, irq
kinds), of the lock taken (inconsistent) or held (held lock freed); for a
circular dependency the first of: that function, the held lock's, the
frames of the dependency chain; for a bad unlock the "[<pc>] FUNC" line
after "is trying to release lock"; for WARN and BUG the function of the
WARNING line, then of RIP, then the Call Trace; for an atomic sleep the
Call Trace. Frames whose name starts with one of _SKIP's prefixes (locking
primitives, lockdep, printk, dump_stack, ...) are passed over, and "?"
frames never count.

Where a report ends: WARN and BUG splats at "---[ end trace", a panic at
"---[ end Kernel panic"; lockdep and RCU reports after the stack printed
below "stack backtrace:"; atomic-sleep reports after their one stack. Any
new headline ends the report before it, except an "Oops:" line inside the
BUG report it belongs to. A panic after an Oops is a report of its own.

Lines may carry console prefixes ("[    1.234567] ", "[ T123] "/"[ C0] " with
CONFIG_PRINTK_CALLER, syslog "<4>", journald "... kernel: ") and \\r\\n
ends. With caller ids, each task or CPU is read as its own stream, so
reports printed concurrently on two CPUs do not cut each other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KINDS = ("circular", "recursive", "inconsistent", "irq-inversion", "bad-unlock",
         "held-lock-freed", "rcu", "sleep-in-atomic", "warn", "bug", "panic")

# Lockdep and RCU reports: print_kernel_ident(), locks, then
# "stack backtrace:" and dump_stack().
_LOCKDEP_KINDS = frozenset({"circular", "recursive", "inconsistent", "irq-inversion",
                            "bad-unlock", "held-lock-freed", "rcu"})

# A report without an end marker or a final stack (a truncated log) stops here.
MAX_REPORT_LINES = 1000


@dataclass(frozen=True)
class Report:
    kind: str
    title: str
    line: int  # 1-based line of the report's first line in the input
    text: str  # the report, console prefixes removed

    def as_json(self) -> dict:
        return {"kind": self.kind, "title": self.title}


# ---------------------------------------------------------------- prefixes

_JOURNAL = re.compile(
    r"^(?:\d{4}-\d\d-\d\dT\S+|\S+\s+\d+\s+\d\d:\d\d:\d\d(?:\.\d+)?)\s+\S+\s+kernel: ")
_DROPPED = re.compile(r"^\*\* \d+ printk messages dropped \*\*\s?")
_SYSLOG = re.compile(r"^<\d+>")
_TIMESTAMP = re.compile(r"^\[\s*\d+\.\d+\]")
_CALLER = re.compile(r"^\s?\[\s*([CT]\d+)\]")


@dataclass(frozen=True)
class _Line:
    number: int  # 1-based in the input
    context: str  # "T123", "C0", or "" without CONFIG_PRINTK_CALLER
    msg: str  # the printk text


def _split(text: str) -> list[_Line]:
    out = []
    for number, raw in enumerate(text.split("\n"), 1):
        msg = raw.rstrip("\r")
        m = _JOURNAL.match(msg)
        if m:
            msg = msg[m.end():]
        msg = _DROPPED.sub("", msg)
        msg = _SYSLOG.sub("", msg)
        context = ""
        m = _TIMESTAMP.match(msg)
        if m:
            msg = msg[m.end():]
            c = _CALLER.match(msg)
            if c:
                context = c.group(1)
                msg = msg[c.end():]
            if msg.startswith(" "):
                msg = msg[1:]  # the one space printk puts after the prefix
        out.append(_Line(number, context, msg))
    return out


# --------------------------------------------------------------- headlines

_LOCKDEP_HEAD = r"^\[? ?(?:WARNING|INFO|BUG): "
_HEADLINES: tuple[tuple[re.Pattern, str], ...] = tuple(
    (re.compile(pattern), kind) for pattern, kind in (
        (_LOCKDEP_HEAD + r"possible circular locking dependency detected", "circular"),
        (_LOCKDEP_HEAD + r"possible recursive locking detected", "recursive"),
        (_LOCKDEP_HEAD + r"inconsistent lock state", "inconsistent"),
        (_LOCKDEP_HEAD + r"possible irq lock inversion dependency detected", "irq-inversion"),
        (_LOCKDEP_HEAD + r"[A-Z-]+-safe -> [A-Z-]+-unsafe lock order detected",
         "irq-inversion"),
        (_LOCKDEP_HEAD + r"bad unlock balance detected!", "bad-unlock"),
        (_LOCKDEP_HEAD + r"held lock freed!", "held-lock-freed"),
        (_LOCKDEP_HEAD + r"suspicious RCU usage", "rcu"),
        (r"^BUG: sleeping function called from invalid context", "sleep-in-atomic"),
        (r"^BUG: scheduling while atomic", "sleep-in-atomic"),
        (r"^WARNING: (?:CPU: \d+ PID: \d+ )?at ", "warn"),
        (r"^[Kk]ernel BUG at ", "bug"),
        (r"^BUG: (?:unable to handle|[Kk]ernel NULL pointer dereference)", "bug"),
        (r"^BUG: KASAN: ", "bug"),
        (r"^general protection fault", "bug"),
        (r"^Unable to handle kernel ", "bug"),
        (r"^Oops: ", "bug"),
        (r"^Kernel panic - not syncing: ", "panic"),
    ))

# Second headline of one BUG splat: __die_header() after the BUG: line.
_DIE_HEADER = re.compile(r"^(?:Oops|invalid opcode|Bad pagetable): [0-9a-f]{4} \[#\d+\]")
_CUT_HERE = re.compile(r"^-+\[ cut here \]-+\s*$")
_EQUALS = re.compile(r"^=+\s*$")


def _headline(msg: str) -> str | None:
    for pattern, kind in _HEADLINES:
        if pattern.match(msg):
            return kind
    return None


# ------------------------------------------------------------------ stacks

# " foo+0x1/0x2", " ? foo+0x1/0x2", " [<ffffffff81000000>] foo+0x1/0x2",
# " [<ffffffff81000000>] ? foo+0x1/0x2" (old kernels put "?" after the PC),
# "  foo.isra.0+0x1/0x2 [module]", " foo+0x1/0x2 mm/x.c:12 [inline]",
# and symbolized inline frames " foo mm/x.c:12 [inline]".
_FRAME = re.compile(
    r"^\s+(?P<q>\?\s+)?(?:\[<?[0-9a-fA-Fx]+>?\]\s+){0,2}(?P<q2>\?\s+)?"
    r"(?P<func>[A-Za-z0-9_]+)(?:(?:\.[A-Za-z0-9_.]+)?\+0x[0-9a-f]+/0x[0-9a-f]+"
    r"|\s+\S+:\d+\s+\[inline\])")
_STACK_MARKER = re.compile(r"^\s*</?(?:TASK|IRQ|NMI|SOFTIRQ|EOI|#[A-Z]+)>\s*$")
_REGISTERS = re.compile(
    r"^(?:RIP|EIP|RSP|ESP|RAX|RBX|RCX|RDX|RSI|RDI|RBP|EAX|EBX|ECX|EDX|ESI|EDI|EBP|"
    r"R\d+|FS|GS|CS|DS|ES|CR0|CR2|CR3|CR4|DR0|DR3|DR6|PKRU|Code):")
_FUNC = r"(?P<func>[A-Za-z0-9_]+)(?:\.|\+|\(\))"
_AT = re.compile(r"at: (?:\[<[0-9a-fA-F]+>\] +)?" + _FUNC)
_PC_FUNC = re.compile(r"\[<[0-9a-fA-F]+>\] +" + _FUNC)
_RIP = re.compile(r"^N?[RE]?IP: (?:[0-9a-f]+:)?(?:\[<[0-9a-fA-F]+>\] +)?" + _FUNC)
_WARN_AT = re.compile(r" at (?:\S+:\d+ )?" + _FUNC)
_SRC = re.compile(r"^(?P<src>[A-Za-z0-9_\-/.]+\.[a-z]+:\d+) ")
# A kernel built with O= prints __FILE__ relative to the object folder
# ("../../src/lib/x.c"): cut the path back to the tree's top-level folder.
_TREE_TOP = re.compile(r"(?:^|/)((?:arch|block|certs|crypto|drivers|fs|include|init|io_uring|ipc|"
                       r"kernel|lib|mm|net|rust|samples|security|sound|virt)/.*)$")


def _tree_path(path: str) -> str:
    match = _TREE_TOP.search(path)
    return match.group(1) if match else path

# Frames that say where the report was printed, not where the bug is: the
# locking primitives, lockdep itself, the WARN/BUG machinery, printk, sanitizers
# and string helpers, after syzkaller's list (pkg/report/linux.go). Matched as
# prefixes of the name without its leading underscores, not as substrings, so
# that generic_shutdown_super or inode_sb_list_add stay visible.
_SKIP = re.compile("|".join((
    r"(do_)?raw_(spin|read|write)_(lock|trylock|unlock)", r"(spin|read|write)_(lock|trylock|unlock)",
    r"lock_(acquire|release|acquired|contended|is_held|class)", r"lockdep",
    r"reacquire_held_locks", r"mark_(lock|usage|held_locks)", r"validate_chain",
    r"check_(noncircular|prev_add|prevs_add|irq_usage|deadlock|flags|wait_context|usage)",
    r"print_(circular|usage|bad_irq|irq_inversion|deadlock|lock|unlock|held|freed|shortest)",
    r"(mutex|rt_mutex)_(lock|trylock|unlock|remove_waiter)", r"mutex_lock",
    r"(down|up)(_read|_write)?(_nested|_killable|_interruptible|_trylock)?$",
    r"rwsem_", r"osq_(lock|unlock)", r"wake_up", r"refcount_",
    r"dump_stack", r"might_(sleep|resched|fault)", r"warn", r"report_bug", r"fixup_bug",
    r"handle_bug", r"(asm_)?exc_", r"do_error", r"invalid_op", r"panic", r"v?printk",
    r"debug_object", r"list_\w*_valid", r"kasan", r"asan", r"sanitizer",
    r"check_memory_region", r"print_address_description",
    r"mem(cpy|cmp|set|chr|move)$", r"str(cmp|ncmp|cpy|lcpy|ncpy|scpy|len|nstr|nlen|chr)$",
    r"(copy_to|copy_from|put|get)_user", r"v?s?n?printf$", r"kv?asprintf",
    r"x86_indirect_thunk",
)))
# syzkaller's extra skips for circular dependencies: these workqueue
# functions take the locks of work items they run or flush.
_SKIP_CIRCULAR = re.compile("process_one_work|flush_workqueue|drain_workqueue|destroy_workqueue")
_SKIP_SCHEDULE = re.compile("schedule|msleep|ssleep|usleep")


def _meaningful(func: str | None, extra: re.Pattern | None = None) -> bool:
    return bool(func) and not _SKIP.match(func.lstrip("_")) and not (extra and extra.search(func))


def _call_trace(msg: str) -> bool:
    return msg.strip().lower().startswith("call trace:")  # arm64: "Call trace:"


def _reliable(frame: re.Match | None) -> bool:
    # "?" marks a stale return address the unwinder found on the stack.
    return bool(frame) and not frame.group("q") and not frame.group("q2")


def _in_trace(msg: str) -> bool:
    return bool(_FRAME.match(msg) or _STACK_MARKER.match(msg) or _REGISTERS.match(msg)
                or msg.strip() in ("<EOI>", ""))


def _trace_end(lines: list[_Line], call_trace: int, limit: int) -> int:
    """Index of the last line of the stack that "Call Trace:" at call_trace opens."""
    last = call_trace
    for j in range(call_trace + 1, limit):
        msg = lines[j].msg
        if msg.strip() == "</TASK>":
            return j  # the task stack is always printed last
        if not _in_trace(msg):
            break
        if msg.strip():
            last = j
    return last


def _stack_funcs(msgs: list[str]) -> list[str]:
    """Functions of the first "Call Trace:", "?" frames left out."""
    funcs = []
    for i in range(len(msgs)):
        if _call_trace(msgs[i]):
            for msg in msgs[i + 1:]:
                if not _in_trace(msg):
                    break
                frame = _FRAME.match(msg)
                if _reliable(frame):
                    funcs.append(frame.group("func"))
                if msg.strip() == "</TASK>":
                    break
            break
    return funcs


# ------------------------------------------------------------------ titles

def _first_after(msgs: list[str], anchor: str, pattern: re.Pattern) -> str | None:
    """The func of the first match of pattern on or after the line containing anchor."""
    for i, msg in enumerate(msgs):
        if anchor in msg:
            for later in msgs[i:]:
                m = pattern.search(later)
                if m:
                    return m.group("func")
            return None
    return None


def _first(candidates, extra: re.Pattern | None = None) -> str | None:
    for func in candidates:
        if _meaningful(func, extra):
            return func
    return None


def _in(prefix: str, func: str | None) -> str:
    return f"{prefix} in {func}" if func else prefix


def _circular_func(msgs: list[str]) -> str | None:
    # syzkaller: the acquire site of the new lock, then of the held lock,
    # then the frames of the dependency chain, skipping the usual frames.
    ats: list[str] = []
    chain: list[str] = []
    for msg in msgs:
        if _call_trace(msg):
            break
        if len(ats) < 2:
            m = _AT.search(msg)
            if m:
                ats.append(m.group("func"))
            continue
        frame = _FRAME.match(msg)
        if _reliable(frame):
            chain.append(frame.group("func"))
    return _first(ats + chain, _SKIP_CIRCULAR)


def _bug_title(head: str, msgs: list[str]) -> str:
    rip = next((m.group("func") for m in map(_RIP.match, msgs) if m), None)
    func = _first([rip] + _stack_funcs(msgs))
    kasan = re.match(r"^BUG: KASAN: (\S+) in ", head)
    if kasan:
        access = next((m.group(1) for m in
                       (re.search(r"\b(Read|Write) of size", msg) for msg in msgs) if m), None)
        where = re.match(r"^BUG: KASAN: \S+ in " + _FUNC, head)
        what = f"{kasan.group(1)} {access}" if access else kasan.group(1)
        return _in(f"KASAN: {what}", where.group("func") if where else func)
    if re.match(r"^[Kk]ernel BUG at ", head):
        return _in("kernel BUG", func)
    if re.match(r"^BUG: (?:unable to handle kernel NULL pointer|[Kk]ernel NULL pointer)", head):
        return _in("BUG: unable to handle kernel NULL pointer dereference", func)
    if head.startswith("BUG: unable to handle"):
        return _in("BUG: unable to handle kernel paging request", func)
    if head.startswith("Unable to handle kernel paging request"):
        return _in("unable to handle kernel paging request", func)
    if head.startswith("general protection fault"):
        return _in("general protection fault", func)
    return _in("Oops", func)


def _title(kind: str, msgs: list[str]) -> str:
    head = msgs[0]
    if kind == "circular":
        return _in("possible deadlock", _circular_func(msgs))
    if kind == "recursive":
        return _in("possible deadlock",
                   _first_after(msgs, "is trying to acquire lock", _AT))
    if kind == "irq-inversion":
        anchor = ("just changed the state of lock" if "irq lock inversion" in head
                  else "is trying to acquire")
        return _in("possible deadlock", _first_after(msgs, anchor, _AT))
    if kind == "inconsistent":
        return _in("inconsistent lock state", _first_after(msgs, "takes", _AT))
    if kind == "bad-unlock":
        return _in("bad unlock balance",
                   _first_after(msgs, "is trying to release lock", _PC_FUNC))
    if kind == "held-lock-freed":
        return _in("held lock freed", _first_after(msgs, "held lock freed", _AT))
    if kind == "rcu":
        src = next((m.group("src") for m in map(_SRC.match, msgs[1:]) if m), None)
        return f"suspicious RCU usage at {_tree_path(src)}" if src else "suspicious RCU usage"
    if kind == "sleep-in-atomic":
        if head.startswith("BUG: scheduling while atomic"):
            return _in("BUG: scheduling while atomic",
                       _first(_stack_funcs(msgs), _SKIP_SCHEDULE))
        return _in("BUG: sleeping function called from invalid context",
                   _first(_stack_funcs(msgs)))
    if kind == "warn":
        at = _WARN_AT.search(head)
        rip = next((m.group("func") for m in map(_RIP.match, msgs) if m), None)
        return _in("WARNING", _first([at.group("func") if at else None, rip]
                                     + _stack_funcs(msgs)))
    if kind == "bug":
        return _bug_title(head, msgs)
    if kind == "panic":
        return "kernel panic: " + head[len("Kernel panic - not syncing: "):].strip()
    raise ValueError(kind)


# ------------------------------------------------------------------ bounds

def _end(lines: list[_Line], start: int, kind: str) -> int:
    """Index of the last line of the report whose headline is lines[start]."""
    limit = min(len(lines), start + MAX_REPORT_LINES)
    bug_headline = lines[start].msg
    kasan = bug_headline.startswith("BUG: KASAN:")
    last_trace_end = None
    backtrace_seen = False
    j = start + 1
    while j < limit:
        msg = lines[j].msg
        head = _headline(msg)
        if head is not None:
            continuation = (kind == "bug" and _DIE_HEADER.match(msg)
                            and not _DIE_HEADER.match(bug_headline))
            if not continuation:
                break
            bug_headline = msg  # one die header per splat
        stripped = msg.strip()
        if kind == "warn" and stripped.startswith("---[ end trace"):
            return j
        if kind == "bug" and stripped.startswith("---[ end trace"):
            # x86 oops_end() repeats the registers after the marker, "in
            # case the oops scrolled away".
            while j + 1 < limit and _REGISTERS.match(lines[j + 1].msg):
                j += 1
            return j
        if kind == "panic" and stripped.startswith("---[ end Kernel panic"):
            return j
        if kasan and _EQUALS.match(msg):
            return j  # KASAN closes its report with a line of "="
        if stripped == "stack backtrace:":
            backtrace_seen = True
        if _call_trace(msg):
            last_trace_end = _trace_end(lines, j, limit)
            final = (kind == "sleep-in-atomic"
                     or (kind in _LOCKDEP_KINDS and backtrace_seen))
            if final:
                return last_trace_end
            j = last_trace_end + 1
            continue
        j += 1
    if last_trace_end is not None:
        return last_trace_end
    # No stack and no marker: stop before the next headline, blank lines trimmed.
    end = j - 1
    while end > start and not lines[end].msg.strip():
        end -= 1
    return end


def _begin(lines: list[_Line], start: int, kind: str, floor: int) -> int:
    """Index of the first line: the headline, or the banner printed just before it."""
    above = start - 1
    if above < floor:
        return start
    if kind in _LOCKDEP_KINDS or lines[start].msg.startswith("BUG: KASAN:"):
        return above if _EQUALS.match(lines[above].msg) else start
    if kind == "bug":
        return above if _CUT_HERE.match(lines[above].msg) else start
    if kind == "warn":
        # WARN(cond, fmt, ...) prints "cut here", then its message, then
        # the WARNING: line.
        for i in range(above, max(floor, start - 10) - 1, -1):
            if _CUT_HERE.match(lines[i].msg):
                return i
            if _headline(lines[i].msg) is not None:
                break
    return start


def _parse_stream(lines: list[_Line]) -> list[Report]:
    reports = []
    floor = 0  # first index not inside an earlier report
    i = 0
    while i < len(lines):
        kind = _headline(lines[i].msg)
        if kind is None:
            i += 1
            continue
        end = _end(lines, i, kind)
        begin = _begin(lines, i, kind, floor)
        body = lines[begin:end + 1]
        reports.append(Report(
            kind=kind,
            title=_title(kind, [line.msg for line in lines[i:end + 1]]),
            line=body[0].number,
            text="\n".join(line.msg for line in body),
        ))
        floor = end + 1
        i = end + 1
    return reports


def parse(text: str) -> tuple[Report, ...]:
    """Every report in a console log, in the order their first lines appear."""
    streams: dict[str, list[_Line]] = {}
    for line in _split(text):
        streams.setdefault(line.context, []).append(line)
    reports = [r for lines in streams.values() for r in _parse_stream(lines)]
    return tuple(sorted(reports, key=lambda r: r.line))
