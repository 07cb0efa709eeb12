"""Which function names a kernel report: its stack frames, read as syzkaller reads them.

Frames, register and "at:" lines as 6.1 x86_64 prints them (older layouts
too), the skip lists that pass over where a report was printed to reach
where the bug is, and the choice of one function per kind of report:
first meaningful frame, the stuck CPU of a stall, the cause of a hang.
Used by kernel_reports for its titles and report bounds.
"""

from __future__ import annotations

import re

# " foo+0x1/0x2", " ? foo+0x1/0x2", " [<ffffffff81000000>] foo+0x1/0x2",
# " [<ffffffff81000000>] ? foo+0x1/0x2" (old kernels put "?" after the PC),
# "  foo.isra.0+0x1/0x2 [module]", " foo+0x1/0x2 mm/x.c:12 [inline]",
# and symbolized inline frames " foo mm/x.c:12 [inline]".
FRAME = re.compile(
    r"^\s+(?P<q>\?\s+)?(?:\[<?[0-9a-fA-Fx]+>?\]\s+){0,2}(?P<q2>\?\s+)?"
    r"(?P<func>[A-Za-z0-9_]+)(?:(?:\.[A-Za-z0-9_.]+)?\+0x[0-9a-f]+/0x[0-9a-f]+"
    r"|\s+\S+:\d+\s+\[inline\])")
STACK_MARKER = re.compile(r"^\s*</?(?:TASK|IRQ|NMI|SOFTIRQ|EOI|#[A-Z]+)>\s*$")
REGISTERS = re.compile(
    r"^(?:RIP|EIP|RSP|ESP|RAX|RBX|RCX|RDX|RSI|RDI|RBP|EAX|EBX|ECX|EDX|ESI|EDI|EBP|"
    r"R\d+|FS|GS|CS|DS|ES|CR0|CR2|CR3|CR4|DR0|DR3|DR6|PKRU|Code):")
FUNC = r"(?P<func>[A-Za-z0-9_]+)(?:\.|\+|\(\))"
AT = re.compile(r"at: (?:\[<[0-9a-fA-F]+>\] +)?" + FUNC)
PC_FUNC = re.compile(r"\[<[0-9a-fA-F]+>\] +" + FUNC)
RIP = re.compile(r"^N?[RE]?IP: (?:[0-9a-f]+:)?(?:\[<[0-9a-fA-F]+>\] +)?" + FUNC)
WARN_AT = re.compile(r" at (?:\S+:\d+ )?" + FUNC)
SRC = re.compile(r"^(?P<src>[A-Za-z0-9_\-/.]+\.[a-z]+:\d+) ")
# A kernel built with O= prints __FILE__ relative to the object folder
# ("../../src/lib/x.c"): cut the path back to the tree's top-level folder.
_TREE_TOP = re.compile(r"(?:^|/)((?:arch|block|certs|crypto|drivers|fs|include|init|io_uring|ipc|"
                       r"kernel|lib|mm|net|rust|samples|security|sound|virt)/.*)$")


def tree_path(path: str) -> str:
    match = _TREE_TOP.search(path)
    return match.group(1) if match else path


def _prefixes(*patterns: str) -> re.Pattern:
    """Names starting with one of patterns, leading underscores ignored."""
    return re.compile(r"^_*(?:" + "|".join(patterns) + ")")


# Frames that say where the report was printed, not where the bug is: the
# locking primitives, lockdep itself, the WARN/BUG machinery, printk, sanitizers
# and string helpers, after syzkaller's list (pkg/report/linux.go). Matched as
# prefixes of the name without its leading underscores, not as substrings, so
# that generic_shutdown_super or inode_sb_list_add stay visible.
SKIP = _prefixes(
    r"(do_)?raw_(spin|read|write)_(lock|trylock|unlock)", r"(spin|read|write)_(lock|trylock|unlock)",
    r"lock_(acquire|release|acquired|contended|is_held|class)", r"lockdep",
    r"reacquire_held_locks", r"mark_(lock|usage|held_locks)", r"validate_chain",
    r"check_(noncircular|prev_add|prevs_add|irq_usage|deadlock|flags|wait_context|usage)",
    r"print_(circular|usage|bad_irq|irq_inversion|deadlock|lock|unlock|held|freed|shortest)",
    r"(register|look_up)_lock_class", r"assign_lock_key", r"save_trace",
    r"(add|lookup)_chain_cache",
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
)
# syzkaller's extra skips for circular dependencies: these workqueue
# functions take the locks of work items they run or flush.
SKIP_CIRCULAR = re.compile("process_one_work|flush_workqueue|drain_workqueue|destroy_workqueue")
SKIP_SCHEDULE = re.compile("schedule|msleep|ssleep|usleep")
SKIP_SPINLOCK = _prefixes(r"spin_(bug|dump)", r"rwlock_bug")
# The page allocator's free and check paths, after syzkaller's list for "Bad page".
SKIP_BAD_PAGE = _prefixes(
    r"bad_page", r"(free|put|get|update|release)_page", r"free_pages", r"free_unref",
    r"free_pcp", r"free_tail_pages", r"folio", r"page_frag_free", r"check_new_page",
    r"dump_page", r"free_the_page", r"alloc_pages")
# Where a stalled or locked-up CPU is interrupted, not where it is stuck: the
# tick and the detectors, interrupt and NMI entry, clocks (read_hpet() saves
# and restores irqs, traced) and busy waits.
SKIP_STALL = _prefixes(
    r"rcu_", r"(asm_)?sysvec_", r"(asm_)?common_interrupt", r"irq_exit", r"irqentry_",
    r"hrtimer_", r"tick_", r"update_process_times", r"watchdog_", r"nmi_", r"default_do_nmi",
    r"show_regs", r"show_trace", r"sched_show_task", r"dump_cpu_task", r"print_(cpu|other_cpu)_stall",
    r"check_cpu_stall", r"ktime_get", r"read_(tsc|hpet)", r"acpi_pm_read", r"(native_)?sched_clock",
    r"clocksource_", r"timekeeping_", r"(const_)?udelay", r"delay_(tsc|loop|halt)", r"cpu_relax",
    r"rep_nop", r"(native_)?safe_halt", r"trace_hardirqs_", r"(arch_)?local_irq_")
# Where a hung task sleeps, not why: the scheduler, waits and sleeping locks.
SKIP_HUNG = _prefixes(
    r"(io_|preempt_)?schedule", r"context_switch", r"switch_to", r"wait_for_(common|completion)",
    r"do_wait_for_common", r"wait_on_(bit|page|buffer|folio)", r"out_of_line_wait_on_bit",
    r"bit_wait", r"(prepare_to|finish)_wait", r"kthread$", r"[mus]sleep", r"do_nanosleep",
    r"hrtimer_nanosleep", r"(percpu_)?rwsem_down", r"percpu_down", r"rt_mutex",
    r"(down|up)_(read|write)_slowpath", r"rtnl_lock_killable")
# syzkaller's buckets for hung tasks: every wait for a grace period is one.
_HUNG_ANCHORS = (("synchronize_rcu", "synchronize_rcu"), ("synchronize_srcu", "synchronize_rcu"),
                 ("synchronize_net", "synchronize_rcu"), ("synchronize_sched", "synchronize_rcu"),
                 ("rtnl_lock", "rtnl_lock"))


def meaningful(func: str | None, extra: re.Pattern | None = None) -> bool:
    return bool(func) and not SKIP.match(func.lstrip("_")) and not (extra and extra.search(func))


def call_trace(msg: str) -> bool:
    return msg.strip().lower().startswith("call trace:")  # arm64: "Call trace:"


def reliable(frame: re.Match | None) -> bool:
    # "?" marks a stale return address the unwinder found on the stack.
    return bool(frame) and not frame.group("q") and not frame.group("q2")


def in_trace(msg: str) -> bool:
    return bool(FRAME.match(msg) or STACK_MARKER.match(msg) or REGISTERS.match(msg)
                or msg.strip() in ("<EOI>", ""))


def stack_funcs(msgs: list[str]) -> list[str]:
    """Functions of the first "Call Trace:", "?" frames left out."""
    funcs = []
    for i in range(len(msgs)):
        if call_trace(msgs[i]):
            for msg in msgs[i + 1:]:
                if not in_trace(msg):
                    break
                frame = FRAME.match(msg)
                if reliable(frame):
                    funcs.append(frame.group("func"))
                if msg.strip() == "</TASK>":
                    break
            break
    return funcs


# Stack dumps of a stall report that are not of a stalled CPU.
_GP_KTHREAD_DUMP = re.compile(r"(?:RCU grace-period kthread stack dump|"
                              r"Stack dump where RCU GP kthread last ran):")
_CPU_DUMP = re.compile(r"^(?:NMI backtrace for cpu|Task dump for CPU|Sending NMI from CPU|"
                       r"CPU: \d+ PID: )")


def stuck_frames(msgs: list[str]) -> list[str]:
    """Functions of the first stuck CPU's dump, most telling first: the RIP
    lines (the interrupted code), the frames of its task stack, then those
    of its interrupt stacks. NMI stacks (the backtrace machinery) and dumps
    of RCU's grace-period kthread are left out."""
    rips: list[str] = []
    task: list[str] = []
    irq: list[str] = []
    gp_dump = False
    section = "task"
    tracing = False
    for msg in msgs[1:]:
        stripped = msg.strip()
        if _GP_KTHREAD_DUMP.search(msg):
            gp_dump = True
        elif _CPU_DUMP.match(msg):
            gp_dump = False
        if gp_dump:
            continue
        marker = STACK_MARKER.match(msg)
        if marker:
            name = stripped.strip("<>/")
            if stripped.startswith("</") or name == "EOI":
                section = "task"
                if name == "TASK" and (rips or task or irq):
                    break  # the end of the first dump
            else:
                section = {"IRQ": "irq", "SOFTIRQ": "irq", "NMI": "nmi"}.get(name, "task")
            continue
        if call_trace(msg):
            tracing = True
            continue
        rip_line = RIP.match(msg)
        if rip_line and section != "nmi":
            rips.append(rip_line.group("func"))
            continue
        frame = FRAME.match(msg)
        if tracing and reliable(frame) and section != "nmi":
            (irq if section == "irq" else task).append(frame.group("func"))
        elif tracing and not in_trace(msg) and (rips or task or irq):
            break  # a dump without "<TASK>" markers ended
    return rips + task + irq


def hung_func(msgs: list[str]) -> str | None:
    funcs = stack_funcs(msgs)
    for func in funcs:
        for anchor, bucket in _HUNG_ANCHORS:
            if anchor in func:
                return bucket
    return first(funcs, SKIP_HUNG)


def first_after(msgs: list[str], anchor: str, pattern: re.Pattern) -> str | None:
    """The func of the first match of pattern on or after the line containing anchor."""
    for i, msg in enumerate(msgs):
        if anchor in msg:
            for later in msgs[i:]:
                m = pattern.search(later)
                if m:
                    return m.group("func")
            return None
    return None


def first(candidates, extra: re.Pattern | None = None) -> str | None:
    for func in candidates:
        if meaningful(func, extra):
            return func
    return None


def circular_func(msgs: list[str]) -> str | None:
    # syzkaller: the acquire site of the new lock, then of the held lock,
    # then the frames of the dependency chain, skipping the usual frames.
    ats: list[str] = []
    chain: list[str] = []
    for msg in msgs:
        if call_trace(msg):
            break
        if len(ats) < 2:
            m = AT.search(msg)
            if m:
                ats.append(m.group("func"))
            continue
        frame = FRAME.match(msg)
        if reliable(frame):
            chain.append(frame.group("func"))
    return first(ats + chain, SKIP_CIRCULAR)


def rip(msgs: list[str]) -> str | None:
    return next((m.group("func") for m in map(RIP.match, msgs) if m), None)
