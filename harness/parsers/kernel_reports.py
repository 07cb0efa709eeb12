"""Find kernel reports (lockdep, RCU, stalls, lockups, WARN, BUG, panic) in a console log.

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
    wait-context     [ BUG: Invalid wait context ]
    nested-lock      WARNING: Nested lock was not taken
    bad-contention   WARNING: bad contention detected!
    lock-held        WARNING: comm/pid still has locks held!
                     WARNING: lock held when returning to user space!
    non-static-key   INFO: trying to register non-static key.
    bad-subclass     BUG: looking up invalid subclass: N
    unregistered-key BUG: key ADDR has not been registered!  (and its WARN)
    spinlock         BUG: spinlock bad magic on CPU#N, comm/pid  (rwlock too)
    lockdep-off      BUG: MAX_LOCKDEP_KEYS too low!  (ENTRIES, CHAINS,
                     CHAIN_HLOCKS, STACK_TRACE_ENTRIES, LOCK_DEPTH), and
                     Disabling lock debugging due to kernel taint
    rcu              WARNING: suspicious RCU usage
    sleep-in-atomic  BUG: sleeping function called from invalid context at F:L
                     BUG: scheduling while atomic: comm/pid/count
    rcu-stall        rcu: INFO: rcu_sched self-detected stall on CPU,
                     ... detected stalls on CPUs/tasks:, ... detected
                     expedited stalls on CPUs/tasks: { ... }
    soft-lockup      watchdog: BUG: soft lockup - CPU#N stuck for Ns! [comm:pid]
    hard-lockup      NMI watchdog: Watchdog detected hard LOCKUP on cpu N
    hung-task        INFO: task comm:pid blocked for more than N seconds.
    wq-lockup        BUG: workqueue lockup - pool cpus=N ... stuck for Ns!
    bad-page         BUG: Bad page state in process comm  pfn:N (map too)
    warn             WARNING: CPU: N PID: N at FILE:LINE FUNC+0x../0x..
    bug              kernel BUG at FILE:LINE!, BUG: unable to handle ...,
                     BUG: kernel NULL pointer dereference, general protection
                     fault, Oops:, BUG: KASAN: ...
    panic            Kernel panic - not syncing: REASON
    data-race        BUG: KCSAN: data-race in A / B  (assert: race too;
                     parsers/kcsan.py reads both accesses)

FUNC in a title is chosen as syzkaller's pkg/report/linux.go does: the
function of the "at:" line of the lock being acquired (recursive, irq
kinds, wait context, nested lock), of the lock taken (inconsistent) or
held (held lock freed, locks held); for a circular dependency the first of:
that function, the held lock's, the frames of the dependency chain; for a
bad unlock or contention the "[<pc>] FUNC" line after "is trying to
release/contend lock"; for WARN and BUG the function of the WARNING line,
then of RIP, then the Call Trace; for an atomic sleep, a bad key or
subclass, a spinlock or page bug the Call Trace. Frames whose name starts
with one of report_frames.SKIP's prefixes (locking primitives, lockdep,
printk, dump_stack, ...) are passed over, and "?" frames never count.

Stalls and lockups are named by the first meaningful frame of the stuck
CPU: its RIP, then the frames of its task stack, skipping the interrupt,
timer, clock and busy-wait frames the detector interrupted it in. That is
syzkaller's frame for a CPU spinning in a trylock loop, but not for every
stall: syzkaller walks down to the frame above a dispatcher (a syscall
entry, a work item's callback) to group stalls of one root; here the
spinning function is what a locking patch is judged by. A hung task is
named by the first frame of its stack that is not sleeping or locking,
with syzkaller's two buckets: synchronize_rcu (and its kin) and rtnl_lock.
Table exhaustion and workqueue lockups carry no function, as in syzkaller.

Where a report ends: WARN and BUG splats at "---[ end trace", a panic at
"---[ end Kernel panic"; lockdep and RCU reports after the stack printed
below "stack backtrace:"; atomic sleeps, bad keys and subclasses, spinlock
and page bugs, and table exhaustion after their one stack; stalls, lockups
and hung tasks after the last line of their dumps (per-CPU stall lines, NMI
backtraces, task stacks, held locks, busy workqueues); the taint line is a
report of one line. Any new headline ends the report before it, except an
"Oops:" line inside the BUG report it belongs to, and the next pool of one
workqueue lockup. A panic after an Oops is a report of its own.

Lockdep stops checking for the rest of the boot after any report that
calls debug_locks_off(): every lockdep report but "suspicious RCU usage",
table exhaustion, the taint line (a bad page, KASAN, a proprietary module
...), a spinlock bug, a DEBUG_LOCKS_WARN_ON() warning, an Oops (oops_enter())
and a panic. Report.lockdep_off marks them (and a hung task whose lock dump
says "INFO: lockdep is turned off."); lockdep_off_line() gives the line of
the first.

Lines may carry console prefixes ("[    1.234567] ", "[ T123] "/"[ C0] " with
CONFIG_PRINTK_CALLER, syslog "<4>", journald "... kernel: ") and \\r\\n
ends. With caller ids, each task or CPU is read as its own stream, so
reports printed concurrently on two CPUs do not cut each other.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from harness.parsers import report_frames as frames

# Reports of lockdep and the lock debugging code: each one means a locking bug.
LOCKING_KINDS = frozenset({
    "circular", "recursive", "inconsistent", "irq-inversion", "bad-unlock", "held-lock-freed",
    "wait-context", "nested-lock", "bad-contention", "lock-held", "non-static-key",
    "bad-subclass", "unregistered-key", "spinlock"})
# A CPU or a task that stopped making progress.
HANG_KINDS = frozenset({"rcu-stall", "soft-lockup", "hard-lockup", "hung-task", "wq-lockup"})
# Lockdep switched itself off without finding a locking bug.
LOCKDEP_OFF = "lockdep-off"
# KCSAN saw two accesses race: a finding to classify (make kcsan), not a broken boot.
DATA_RACE = "data-race"
KINDS = tuple(sorted(LOCKING_KINDS | HANG_KINDS | {
    LOCKDEP_OFF, "rcu", "sleep-in-atomic", "bad-page", "warn", "bug", "panic", DATA_RACE}))

# A report without an end marker or a final stack (a truncated log) stops here.
MAX_REPORT_LINES = 1000


@dataclass(frozen=True)
class Report:
    kind: str
    title: str
    line: int  # 1-based line of the report's first line in the input
    text: str  # the report, console prefixes removed
    lockdep_off: bool = False  # lockdep checks nothing after this report

    def as_json(self) -> dict:
        return {"kind": self.kind, "title": self.title}


def lockdep_off_line(reports: Iterable[Report]) -> int | None:
    """First console line (1-based) of the first report after which lockdep
    checked nothing more, or None if it was on to the end.

    Lockdep reports, lock_stat and RCU-lockdep reports of everything printed
    after that report are missing, not clean.
    """
    return min((r.line for r in reports if r.lockdep_off), default=None)


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


def console_lines(text: str) -> list[_Line]:
    """A console log's lines without their prefixes, each with the task or CPU
    that printed it (CONFIG_PRINTK_CALLER), for other parsers of the console."""
    return _split(text)


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
        (_LOCKDEP_HEAD + r"Invalid wait context", "wait-context"),
        (_LOCKDEP_HEAD + r"Nested lock was not taken", "nested-lock"),
        (_LOCKDEP_HEAD + r"bad contention detected!", "bad-contention"),
        (_LOCKDEP_HEAD + r".+ still has locks held!", "lock-held"),
        (_LOCKDEP_HEAD + r"lock held when returning to user space!", "lock-held"),
        (r"^INFO: trying to register non-static key", "non-static-key"),
        (r"^BUG: looking up invalid subclass: ", "bad-subclass"),
        (r"^BUG: key [0-9a-fx]+ has not been registered!", "unregistered-key"),
        (r"^BUG: (?:spinlock|rwlock) .+ on CPU#\d+", "spinlock"),
        (r"^BUG: MAX_[A-Z_]+ too low!", LOCKDEP_OFF),
        (r"^Disabling lock debugging due to kernel taint", LOCKDEP_OFF),
        (_LOCKDEP_HEAD + r"suspicious RCU usage", "rcu"),
        (r"^BUG: sleeping function called from invalid context", "sleep-in-atomic"),
        (r"^BUG: scheduling while atomic", "sleep-in-atomic"),
        (r"^(?:rcu: )?INFO: rcu_\w+ (?:self-)?detected (?:expedited )?stall", "rcu-stall"),
        (r"^(?:(?:NMI )?watchdog: )?BUG: soft lockup - CPU#\d+ stuck for ", "soft-lockup"),
        (r"^(?:NMI watchdog: )?Watchdog detected hard LOCKUP on cpu \d+", "hard-lockup"),
        (r"^INFO: task .+:\d+ blocked (?:in I/O wait )?for more than \d+ seconds", "hung-task"),
        (r"^BUG: workqueue lockup - pool", "wq-lockup"),
        (r"^BUG: Bad page (?:state|map) in process ", "bad-page"),
        (r"^WARNING: (?:CPU: \d+ PID: \d+ )?at ", "warn"),
        (r"^[Kk]ernel BUG at ", "bug"),
        (r"^BUG: (?:unable to handle|[Kk]ernel NULL pointer dereference)", "bug"),
        (r"^BUG: KASAN: ", "bug"),
        (r"^BUG: KCSAN: ", DATA_RACE),
        (r"^general protection fault", "bug"),
        (r"^Unable to handle kernel ", "bug"),
        (r"^Oops: ", "bug"),
        (r"^Kernel panic - not syncing: ", "panic"),
    ))

# Lockdep and RCU reports: print_kernel_ident(), locks, then
# "stack backtrace:" and dump_stack().
_LOCKDEP_KINDS = frozenset({"circular", "recursive", "inconsistent", "irq-inversion",
                            "bad-unlock", "held-lock-freed", "wait-context", "nested-lock",
                            "bad-contention", "rcu"})
# Reports whose first stack is their last line.
_ONE_STACK_KINDS = frozenset({"sleep-in-atomic", "non-static-key", "bad-subclass", "spinlock",
                              "bad-page", LOCKDEP_OFF})
# lockdep_print_held_locks() without a stack: lockdep_sys_exit().
_HELD_LOCKS_ONLY = re.compile(r"lock held when returning to user space")
_HELD_LOCKS_BODY = re.compile(
    r"^(?:-+\s*$|\S+ #\d+ (?:Not tainted|Tainted: )|"
    r"\S.* is leaving the kernel with locks still held!|\d+ locks? held by |"
    r"no locks held by | #\d+: )")
# Lines of the dumps that follow a stall, lockup or hung task: per-CPU RCU
# lines, NMI backtraces and task dumps, held locks, busy workqueues.
_HANG_BODY = re.compile("|".join((
    r"\s", r"rcu: ", r"INFO: Stall ended before state dump start", r"INFO: lockdep is turned off",
    r"All QSes seen", r"Sending NMI from CPU", r"NMI backtrace for cpu", r"Task dump for CPU",
    r"CPU: \d+ PID: ", r"Hardware name: ", r"task:\S", r"Modules linked in:",
    r"irq event stamp:", r"(?:hard|soft)irqs last", r"Showing all locks held in the system",
    r"Showing busy workqueues", r"workqueue \S+: flags=", r"pool \d+:", r"\d+ locks? held by ",
    r"no locks held by ", r"=+\s*$", r"Workqueue: ", r"blocking rcu_node",
    r"Offline CPU \d+ blocking", r'"echo 0 > /proc/sys/kernel/hung_task_timeout_secs"',
    r"Future hung task reports are suppressed", r"Preemption disabled at:",
)))
# Messages of a WARN that calls debug_locks_off(): DEBUG_LOCKS_WARN_ON(),
# DEBUG_RWSEMS_WARN_ON(), lockdep's own graph and chain-key checks.
_LOCKDEP_WARN = re.compile(
    r"^(?:DEBUG_LOCKS_WARN_ON\(|DEBUG_RWSEMS_WARN_ON\(|lockdep bfs error:|hm#[12], depth:)")
# Kinds after which lockdep checks nothing: each calls debug_locks_off()
# (panic() too). So does an Oops of kind "bug", through oops_enter(), but
# not a KASAN report: the taint line that follows it does.
_LOCKDEP_OFF_KINDS = LOCKING_KINDS | {LOCKDEP_OFF, "panic"}

# Second headline of one BUG splat: __die_header() after the BUG: line.
_DIE_HEADER = re.compile(r"^(?:Oops|invalid opcode|Bad pagetable): [0-9a-f]{4} \[#\d+\]")
_CUT_HERE = re.compile(r"^-+\[ cut here \]-+\s*$")
_EQUALS = re.compile(r"^=+\s*$")


def _headline(msg: str) -> str | None:
    for pattern, kind in _HEADLINES:
        if pattern.match(msg):
            return kind
    return None


# ------------------------------------------------------------------ titles

def _in(prefix: str, func: str | None) -> str:
    return f"{prefix} in {func}" if func else prefix


def _bug_title(head: str, msgs: list[str]) -> str:
    func = frames.first([frames.rip(msgs)] + frames.stack_funcs(msgs))
    kasan = re.match(r"^BUG: KASAN: (\S+) in ", head)
    if kasan:
        access = next((m.group(1) for m in
                       (re.search(r"\b(Read|Write) of size", msg) for msg in msgs) if m), None)
        where = re.match(r"^BUG: KASAN: \S+ in " + frames.FUNC, head)
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


def _lockdep_title(kind: str, head: str, msgs: list[str]) -> str:
    if kind == "circular":
        return _in("possible deadlock", frames.circular_func(msgs))
    if kind == "recursive":
        return _in("possible deadlock",
                   frames.first_after(msgs, "is trying to acquire lock", frames.AT))
    if kind == "irq-inversion":
        anchor = ("just changed the state of lock" if "irq lock inversion" in head
                  else "is trying to acquire")
        return _in("possible deadlock", frames.first_after(msgs, anchor, frames.AT))
    if kind == "inconsistent":
        return _in("inconsistent lock state", frames.first_after(msgs, "takes", frames.AT))
    if kind == "bad-unlock":
        return _in("bad unlock balance",
                   frames.first_after(msgs, "is trying to release lock", frames.PC_FUNC))
    if kind == "held-lock-freed":
        return _in("held lock freed", frames.first_after(msgs, "held lock freed", frames.AT))
    if kind == "wait-context":
        return _in("BUG: Invalid wait context", frames.first_after(msgs, "is trying to lock", frames.AT))
    if kind == "nested-lock":
        return _in("Nested lock was not taken", frames.first_after(msgs, "is trying to lock", frames.AT))
    if kind == "bad-contention":
        return _in("bad contention",
                   frames.first_after(msgs, "is trying to contend lock", frames.PC_FUNC))
    if kind == "lock-held":
        if _HELD_LOCKS_ONLY.search(head):
            return _in("BUG: lock held when returning to user space",
                       frames.first_after(msgs, "leaving the kernel with locks still held", frames.AT))
        return _in("BUG: still has locks held", frames.first_after(msgs, "still has locks held", frames.AT))
    if kind == "non-static-key":
        return _in("INFO: trying to register non-static key", frames.first(frames.stack_funcs(msgs)))
    if kind == "bad-subclass":
        return _in("BUG: looking up invalid subclass", frames.first(frames.stack_funcs(msgs)))
    if kind == "unregistered-key":
        return _in("BUG: key has not been registered", frames.first([frames.rip(msgs)] + frames.stack_funcs(msgs)))
    if kind == "spinlock":
        what = re.match(r"^BUG: (spinlock|rwlock) (.+?) on CPU#", head)
        return _in(f"BUG: {what.group(1)} {what.group(2)}",
                   frames.first(frames.stack_funcs(msgs), frames.SKIP_SPINLOCK))
    raise ValueError(kind)


def _hang_title(kind: str, head: str, msgs: list[str]) -> str:
    if kind == "rcu-stall":
        return _in("INFO: rcu detected stall", frames.first(frames.stuck_frames(msgs), frames.SKIP_STALL))
    if kind == "soft-lockup":
        return _in("BUG: soft lockup", frames.first(frames.stuck_frames(msgs), frames.SKIP_STALL))
    if kind == "hard-lockup":
        return _in("BUG: hard lockup", frames.first(frames.stuck_frames(msgs), frames.SKIP_STALL))
    if kind == "hung-task":
        return _in("INFO: task hung", frames.hung_func(msgs))
    if kind == "wq-lockup":
        return "BUG: workqueue lockup"
    raise ValueError(kind)


_KCSAN_OFFSET = re.compile(r"\+0x[0-9a-f]+/0x[0-9a-f]+")


def kcsan_title(head: str) -> str:
    """syzbot's "KCSAN: data-race in A / B". A race of unknown origin names its one frame
    with its offset (%pS), which differs from image to image: cut, as syzbot does."""
    return _KCSAN_OFFSET.sub("", head[len("BUG: "):].strip())


def _title(kind: str, msgs: list[str]) -> str:
    head = msgs[0]
    if kind in LOCKING_KINDS:
        return _lockdep_title(kind, head, msgs)
    if kind in HANG_KINDS:
        return _hang_title(kind, head, msgs)
    if kind == LOCKDEP_OFF:
        return head.strip()
    if kind == "rcu":
        src = next((m.group("src") for m in map(frames.SRC.match, msgs[1:]) if m), None)
        return f"suspicious RCU usage at {frames.tree_path(src)}" if src else "suspicious RCU usage"
    if kind == "sleep-in-atomic":
        if head.startswith("BUG: scheduling while atomic"):
            return _in("BUG: scheduling while atomic",
                       frames.first(frames.stack_funcs(msgs), frames.SKIP_SCHEDULE))
        return _in("BUG: sleeping function called from invalid context",
                   frames.first(frames.stack_funcs(msgs)))
    if kind == "bad-page":
        what = "map" if head.startswith("BUG: Bad page map") else "state"
        return _in(f"BUG: Bad page {what}", frames.first(frames.stack_funcs(msgs), frames.SKIP_BAD_PAGE))
    if kind == "warn":
        at = frames.WARN_AT.search(head)
        return _in("WARNING", frames.first([at.group("func") if at else None, frames.rip(msgs)]
                                     + frames.stack_funcs(msgs)))
    if kind == "bug":
        return _bug_title(head, msgs)
    if kind == "panic":
        return "kernel panic: " + head[len("Kernel panic - not syncing: "):].strip()
    if kind == DATA_RACE:
        return kcsan_title(head)
    raise ValueError(kind)


def _switches_lockdep_off(kind: str, msgs: list[str]) -> bool:
    if kind in _LOCKDEP_OFF_KINDS:
        return True
    if kind == "bug":
        return not msgs[0].startswith("BUG: KASAN:")
    if kind == "warn":
        return any(_LOCKDEP_WARN.match(msg) for msg in msgs)
    if kind == "hung-task":
        # debug_show_all_locks() says so when an earlier report switched it off
        return any(msg.startswith("INFO: lockdep is turned off") for msg in msgs)
    return False


# ------------------------------------------------------------------ bounds

def _trace_end(lines: list[_Line], call_trace: int, limit: int) -> int:
    """Index of the last line of the stack that "Call Trace:" at call_trace opens."""
    last = call_trace
    for j in range(call_trace + 1, limit):
        msg = lines[j].msg
        if msg.strip() == "</TASK>":
            return j  # the task stack is always printed last
        if not frames.in_trace(msg):
            break
        if msg.strip():
            last = j
    return last


def _trim(lines: list[_Line], start: int, end: int) -> int:
    while end > start and not lines[end].msg.strip():
        end -= 1
    return end


def _hang_end(lines: list[_Line], start: int, limit: int, kind: str) -> int:
    """Last line of a stall, lockup or hung task: its dumps, whatever their order."""
    last = start
    j = start + 1
    while j < limit:
        msg = lines[j].msg
        head = _headline(msg)
        if head is not None and not (kind == "wq-lockup" and head == "wq-lockup"):
            break  # one watchdog pass reports each stuck pool, then dumps them all
        if frames.call_trace(msg):
            last = _trace_end(lines, j, limit)
            j = last + 1
            continue
        if not msg.strip():
            j += 1  # a blank line belongs only if more of the report follows
            continue
        if not (head or _HANG_BODY.match(msg) or frames.in_trace(msg)):
            break
        last = j
        j += 1
    return last


def _held_locks_end(lines: list[_Line], start: int, limit: int) -> int:
    last = start
    for j in range(start + 1, limit):
        msg = lines[j].msg
        if _HELD_LOCKS_BODY.match(msg):
            last = j
        elif msg.strip():
            break
    return last


def _end(lines: list[_Line], start: int, kind: str) -> int:
    """Index of the last line of the report whose headline is lines[start]."""
    limit = min(len(lines), start + MAX_REPORT_LINES)
    bug_headline = lines[start].msg
    if kind in HANG_KINDS:
        return _hang_end(lines, start, limit, kind)
    if kind == "lock-held" and _HELD_LOCKS_ONLY.search(bug_headline):
        return _held_locks_end(lines, start, limit)
    if bug_headline.startswith("Disabling lock debugging"):
        return start
    # KASAN and KCSAN close their reports with a line of "="
    sanitizer = bug_headline.startswith(("BUG: KASAN:", "BUG: KCSAN:"))
    last_trace_end = None
    backtrace_seen = False
    key_warn = False  # the WARN that follows an unregistered key belongs to it
    j = start + 1
    while j < limit:
        msg = lines[j].msg
        head = _headline(msg)
        if head is not None:
            continuation = (kind == "bug" and _DIE_HEADER.match(msg)
                            and not _DIE_HEADER.match(bug_headline))
            if kind == "unregistered-key" and head == "warn" and not key_warn:
                continuation = key_warn = True
            if not continuation:
                break
            bug_headline = msg  # one die header per splat
        stripped = msg.strip()
        if kind == "unregistered-key" and not key_warn and j > start + 3:
            return start  # no WARN followed: the report is its one line
        if kind in ("warn", "unregistered-key") and stripped.startswith("---[ end trace"):
            return j
        if kind == "bug" and stripped.startswith("---[ end trace"):
            # x86 oops_end() repeats the registers after the marker, "in
            # case the oops scrolled away".
            while j + 1 < limit and frames.REGISTERS.match(lines[j + 1].msg):
                j += 1
            return j
        if kind == "panic" and stripped.startswith("---[ end Kernel panic"):
            return j
        if sanitizer and _EQUALS.match(msg):
            return j
        if stripped == "stack backtrace:":
            backtrace_seen = True
        if frames.call_trace(msg):
            last_trace_end = _trace_end(lines, j, limit)
            final = (kind in _ONE_STACK_KINDS
                     or (kind in _LOCKDEP_KINDS | {"lock-held"} and backtrace_seen))
            if final:
                return last_trace_end
            j = last_trace_end + 1
            continue
        j += 1
    if last_trace_end is not None:
        return last_trace_end
    if kind == "unregistered-key":
        return start
    # No stack and no marker: stop before the next headline, blank lines trimmed.
    return _trim(lines, start, j - 1)


def _begin(lines: list[_Line], start: int, kind: str, floor: int) -> int:
    """Index of the first line: the headline, or the banner printed just before it."""
    above = start - 1
    if above < floor:
        return start
    if (kind in _LOCKDEP_KINDS or kind == "lock-held"
            or lines[start].msg.startswith(("BUG: KASAN:", "BUG: KCSAN:"))):
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
        msgs = [line.msg for line in lines[i:end + 1]]
        reports.append(Report(
            kind=kind,
            title=_title(kind, msgs),
            line=body[0].number,
            text="\n".join(line.msg for line in body),
            lockdep_off=_switches_lockdep_off(kind, [line.msg for line in body]),
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
