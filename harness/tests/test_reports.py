"""kernel_reports.parse against console logs.

captured-*: real consoles of this project's guests: a clean boot of the
mainline debug kernel, and captured-splat-NAME.log, one boot per kind of the
splat generator (test_data/splat/, made by its capture.py); a NAME joining
kinds with "+" is one boot that wrote them in turn, one marked step each.
synthetic-*: console prefixes no guest of ours prints (PRINTK_CALLER ids,
journald), laid out as 6.1 x86_64 prints them, with invented addresses; and
a hard lockup, which needs a PMU that TCG lacks: the NMI-time registers and
stack of the real rcu-stall-irqsoff capture under the headline, irq-trace
lines and panic of kernel/watchdog_hld.c and kernel/panic.c.
"""

import re
from pathlib import Path

import pytest

from harness.parsers import kernel_reports

DATA = Path(__file__).resolve().parent.parent / "test_data" / "console"


def read(name: str) -> str:
    with open(DATA / name, newline="") as f:  # keep \r\n as captured
        return f.read()


def summary(text: str):
    return [(r.kind, r.title, r.line) for r in kernel_reports.parse(text)]


# One report per file, each what the splat generator's kind prints on 6.1.
SINGLE = [
    ("captured-splat-circular.log", "circular", "possible deadlock in idsplat_circular"),
    ("captured-splat-recursive.log", "recursive", "possible deadlock in idsplat_recursive"),
    ("captured-splat-inconsistent.log", "inconsistent",
     "inconsistent lock state in idsplat_inconsistent"),
    ("captured-splat-irq-inversion.log", "irq-inversion",
     "possible deadlock in idsplat_irq_inversion"),
    ("captured-splat-irq-order.log", "irq-inversion", "possible deadlock in idsplat_irq_order"),
    ("captured-splat-bad-unlock.log", "bad-unlock", "bad unlock balance in idsplat_bad_unlock"),
    ("captured-splat-held-lock-freed.log", "held-lock-freed",
     "held lock freed in idsplat_held_lock_freed"),
    # Built with O=: the kernel prints ../../src/lib/...; the title has the tree path.
    ("captured-splat-rcu.log", "rcu", "suspicious RCU usage at lib/inode_duel_splat.c:195"),
]


@pytest.mark.parametrize("name, kind, title", SINGLE)
def test_lockdep_and_rcu_reports(name, kind, title):
    text = read(name)
    (report,) = kernel_reports.parse(text)
    assert (report.kind, report.title) == (kind, title)
    assert report.as_json() == {"kind": kind, "title": title}
    lines = text.split("\n")
    # The report starts at the "=====" banner above the headline and ends
    # with the stack printed below "stack backtrace:".
    assert re.fullmatch(r"\[ *[\d.]+\] =+\r?", lines[report.line - 1])
    assert "WARNING: " in lines[report.line]
    body = report.text.split("\n")
    assert body[0].startswith("====") and body[1].startswith("WARNING: ")
    assert "stack backtrace:" in body
    assert body[-1] == " </TASK>"
    assert "/ # " not in report.text  # the shell prompt after the report


def test_circular_report_keeps_the_dependency_chain():
    (report,) = kernel_reports.parse(read("captured-splat-circular.log"))
    body = report.text.split("\n")
    assert any(line.startswith("-> #1 (idsplat_circ") for line in body)
    assert body.count("Call Trace:") == 1


def test_the_lockdep_headline_is_not_a_second_warn():
    kinds = [r.kind for name, _, _ in SINGLE for r in kernel_reports.parse(read(name))]
    assert "warn" not in kinds and len(kinds) == len(SINGLE)


CAPTURED_OTHERS = [
    ("captured-splat-sleep-in-atomic.log", "sleep-in-atomic",
     "BUG: sleeping function called from invalid context in idsplat_sleep_in_atomic"),
    ("captured-splat-warn.log", "warn", "WARNING in idsplat_warn"),
    ("captured-splat-bug.log", "bug", "kernel BUG in idsplat_bug"),
    ("captured-splat-panic.log", "panic", "kernel panic: inode-duel: deliberate panic"),
]


@pytest.mark.parametrize("name, kind, title", CAPTURED_OTHERS)
def test_captured_non_lockdep_reports(name, kind, title):
    assert [(r.kind, r.title) for r in kernel_reports.parse(read(name))] == [(kind, title)]


def test_clean_boot_has_no_reports():
    text = read("captured-mainline-debug-clean-boot.log")
    assert "\r\n" in text
    assert kernel_reports.parse(text) == ()


def test_one_boot_with_caller_ids_and_crlf():
    text = read("synthetic-caller-crlf-sleep-warn-bug-oops-panic.txt")
    assert summary(text) == [
        ("sleep-in-atomic",
         "BUG: sleeping function called from invalid context in idsplat_sleep_in_atomic", 6),
        ("warn", "WARNING in idsplat_warn", 39),
        ("bug", "kernel BUG in idsplat_bug", 83),
        ("bug", "BUG: unable to handle kernel NULL pointer dereference in virtnet_poll", 130),
        ("panic", "kernel panic: Fatal exception in interrupt", 190),
    ]


def test_warn_splat_is_one_report_from_cut_here_to_end_trace():
    text = read("synthetic-caller-crlf-sleep-warn-bug-oops-panic.txt")
    warn = kernel_reports.parse(text)[1]
    body = warn.text.split("\n")
    assert body[0] == "------------[ cut here ]------------"
    assert body[1] == "inode-duel: deliberate warning"  # WARN()'s own message
    assert body[-1] == "---[ end trace 0000000000000000 ]---"
    # a line another CPU printed in the middle belongs to another stream
    assert "virtio_net" not in warn.text
    assert all("\r" not in line and not line.startswith("[") for line in body)


def test_oops_line_continues_its_bug_report_and_panic_is_separate():
    text = read("synthetic-caller-crlf-sleep-warn-bug-oops-panic.txt")
    oops, panic = kernel_reports.parse(text)[3:]
    body = oops.text.split("\n")
    assert "Oops: 0000 [#2] PREEMPT SMP NOPTI" in body
    assert "---[ end trace 0000000000000000 ]---" in body
    assert body[-1].startswith("CR2: ")  # the register summary after the marker
    assert panic.text.split("\n") == [
        "Kernel panic - not syncing: Fatal exception in interrupt",
        "Kernel Offset: disabled",
        "---[ end Kernel panic - not syncing: Fatal exception in interrupt ]---"]


def test_bug_report_ends_before_the_next_report():
    text = read("synthetic-caller-crlf-sleep-warn-bug-oops-panic.txt")
    bug = kernel_reports.parse(text)[2]
    assert bug.text.split("\n")[:3] == ["------------[ cut here ]------------",
                                        "kernel BUG at lib/inode_duel_splat.c:189!",
                                        "invalid opcode: 0000 [#1] PREEMPT SMP NOPTI"]
    assert "NULL pointer" not in bug.text


def test_journald_prefix():
    assert summary(read("synthetic-journal-warn-panic.txt")) == [
        ("warn", "WARNING in idsplat_warn", 3),
        ("panic", "kernel panic: inode-duel: deliberate panic", 45),
    ]


def _reprefix(text: str, prefix) -> str:
    out = []
    for i, line in enumerate(text.split("\n")):
        m = re.match(r"^\[ *[\d.]+\] ?", line)
        out.append(prefix(i, line[m.end():]) if m else line)
    return "\n".join(out)


@pytest.mark.parametrize("prefix", [
    lambda i, msg: msg,  # no prefix at all
    lambda i, msg: "<4>[%5d.%06d] %s" % (i, i, msg),  # syslog level, /dev/kmsg style
    lambda i, msg: "[%5d.%06d][ T1234] %s" % (i, i, msg),  # CONFIG_PRINTK_CALLER
    lambda i, msg: "2026-12-03T08:40:01+0000 guest kernel: " + msg,  # journalctl -o short-iso
])
@pytest.mark.parametrize("name, kind, title", SINGLE[:3] + SINGLE[5:6])
def test_prefixes_do_not_change_titles(prefix, name, kind, title):
    assert [(r.kind, r.title) for r in kernel_reports.parse(_reprefix(read(name), prefix))] == [
        (kind, title)]


# Small texts below reproduce single layout rules (older kernels, KASAN,
# GPF) that the generator does not produce; real reports have more lines.

def test_questionable_frames_and_old_style_addresses_are_skipped():
    text = "\n".join([
        "BUG: sleeping function called from invalid context at mm/slab.h:723",
        "in_atomic(): 1, irqs_disabled(): 0, pid: 1, name: sh",
        "Call Trace:",
        " [<ffffffff81a1b2c3>] dump_stack+0x19/0x1b",
        " [<ffffffff810a2d4e>] __might_sleep+0xde/0x120",
        " [<ffffffff810a0000>] ? stale_function+0x10/0x20",
        " [<ffffffff811c3d4e>] kmem_cache_alloc+0x4e/0x210",
        " [<ffffffff81234567>] real_caller+0x17/0x40",
    ])
    (report,) = kernel_reports.parse(text)
    # kmem_cache_alloc is not skipped for this kind, as in syzkaller
    assert report.title == "BUG: sleeping function called from invalid context in kmem_cache_alloc"


def test_older_headlines():
    text = "\n".join([
        "=========================",
        "[ BUG: held lock freed! ]",
        "-------------------------",
        "sh/1 is freeing memory ffff88003a4c5e00-ffff88003a4c5fff, with a lock still held there!",
        " (&obj->lock){+.+...}, at: [<ffffffff81234567>] old_function+0x3e/0x60",
    ])
    (report,) = kernel_reports.parse(text)
    assert (report.kind, report.title) == ("held-lock-freed", "held lock freed in old_function")
    assert report.line == 1


def test_kasan_and_gpf_titles():
    text = "\n".join([
        "==================================================================",
        "BUG: KASAN: use-after-free in iput+0x5b/0x4a0",
        "Read of size 8 at addr ffff888012345678 by task sh/1",
        "",
        "==================================================================",
        "general protection fault, probably for non-canonical address 0xdffffc0000000001: 0000 [#1] PREEMPT SMP KASAN",
        "KASAN: null-ptr-deref in range [0x0000000000000008-0x000000000000000f]",
        "CPU: 0 PID: 1 Comm: sh Not tainted 6.1.192 #1 ",
        "RIP: 0010:evict+0x4d/0x3c0",
        "Call Trace:",
        " <TASK>",
        " iput+0x3ab/0x4a0",
        " </TASK>",
        "---[ end trace 0000000000000000 ]---",
    ])
    assert summary(text) == [("bug", "KASAN: use-after-free Read in iput", 1),
                             ("bug", "general protection fault in evict", 6)]
    kasan = kernel_reports.parse(text)[0].text.split("\n")
    assert kasan[0] == kasan[-1] == "=" * 66  # KASAN's own banners bound it


def test_warn_function_in_the_skip_list_falls_back_to_the_stack():
    text = "\n".join([
        "------------[ cut here ]------------",
        "WARNING: CPU: 1 PID: 7 at kernel/locking/lockdep.c:5000 __lock_acquire+0x1f/0x2200",
        "RIP: 0010:__lock_acquire+0x1f/0x2200",
        "Call Trace:",
        " <TASK>",
        " lock_acquire+0xc7/0x2e0",
        " ? ihold+0x10/0x30",
        " _raw_spin_lock+0x30/0x40",
        " inode_sb_list_add+0x1c/0x60",
        " new_inode+0x3a/0x50",
        " </TASK>",
        "---[ end trace 0000000000000000 ]---",
    ])
    # Skips are prefixes, not substrings: inode_sb_list_add is where the
    # icache bug would be, so it names the report.
    assert summary(text) == [("warn", "WARNING in inode_sb_list_add", 1)]


# ------------------------------------------------------ stalls and lockups

def only(name: str) -> kernel_reports.Report:
    (report,) = kernel_reports.parse(read(name))
    return report


# name, kind, title, headline start, last line of the report
HANGS = [
    ("captured-splat-rcu-stall.log", "rcu-stall", "INFO: rcu detected stall in idsplat_rcu_stall",
     "rcu: INFO: rcu_sched self-detected stall on CPU", " </TASK>"),
    # Detected by CPU 0, the stack of CPU 1 by NMI.
    ("captured-splat-rcu-stall-irqsoff.log", "rcu-stall",
     "INFO: rcu detected stall in idsplat_spin_irqs_off",
     "rcu: INFO: rcu_sched detected stalls on CPUs/tasks:", " </TASK>"),
    ("captured-splat-rcu-stall-expedited.log", "rcu-stall",
     "INFO: rcu detected stall in idsplat_spin_preempt_off",
     "rcu: INFO: rcu_sched detected expedited stalls on CPUs/tasks: {", " </TASK>"),
    ("captured-splat-soft-lockup.log", "soft-lockup", "BUG: soft lockup in idsplat_soft_lockup",
     "watchdog: BUG: soft lockup - CPU#1 stuck for ", " </TASK>"),
    # The lock dump that khungtaskd prints after the task belongs to it.
    ("captured-splat-hung-task.log", "hung-task", "INFO: task hung in idsplat_hung_task",
     "INFO: task sh:43 blocked for more than 3 seconds.",
     "============================================="),
    ("captured-splat-wq-lockup.log", "wq-lockup", "BUG: workqueue lockup",
     "BUG: workqueue lockup - pool cpus=0 ", "pool 0: cpus=0 node=0 flags=0x0 nice=0 hung=3s "),
]


@pytest.mark.parametrize("name, kind, title, head, last", HANGS)
def test_stalls_lockups_and_hung_tasks(name, kind, title, head, last):
    report = only(name)
    assert (report.kind, report.title) == (kind, title)
    body = report.text.split("\n")
    assert body[0].startswith(head)
    assert body[-1].startswith(last)
    assert not report.lockdep_off  # detectors leave lockdep on
    # What follows the report on the console is not part of it.
    assert "inode-duel:" not in report.text and "took too long" not in report.text


def test_stall_detected_by_another_cpu_keeps_the_nmi_backtrace():
    body = only("captured-splat-rcu-stall-irqsoff.log").text.split("\n")
    assert "Sending NMI from CPU 0 to CPUs 1:" in body
    assert "NMI backtrace for cpu 1" in body
    assert "RIP: 0010:idsplat_spin_irqs_off+0x1e/0x40" in body


@pytest.mark.parametrize("name, rip, title", [
    # The tick interrupted the spin inside the clock it reads.
    ("captured-splat-rcu-stall.log", "RIP: 0010:read_hpet+0x7c/0xe0",
     "INFO: rcu detected stall in idsplat_rcu_stall"),
    # The NMI came in the irq tracing of read_hpet()'s irq restore.
    ("captured-splat-rcu-stall-expedited.log", "RIP: 0010:trace_hardirqs_on+0x2b/0xc0",
     "INFO: rcu detected stall in idsplat_spin_preempt_off"),
])
def test_stall_title_skips_the_clock_the_cpu_was_reading(name, rip, title):
    report = only(name)
    assert rip in report.text.split("\n")
    assert report.title == title


def test_hung_task_report_holds_the_lock_dump():
    body = only("captured-splat-hung-task.log").text.split("\n")
    assert "Showing all locks held in the system:" in body
    assert any("(idsplat_hung_mutex)" in line and "idsplat_holder_fn" in line for line in body)


def test_workqueue_lockup_holds_the_busy_workqueues():
    body = only("captured-splat-wq-lockup.log").text.split("\n")
    assert "    in-flight: 6:idsplat_wq_hog BAR(44)" in body
    assert "    pending: idsplat_wq_starved, vmstat_shepherd" in body


def test_a_stall_then_a_lockdep_report_are_two_reports():
    text = read("captured-splat-rcu-stall+circular.log")
    stall, circular = kernel_reports.parse(text)
    assert (stall.kind, circular.kind) == ("rcu-stall", "circular")
    assert stall.title == "INFO: rcu detected stall in idsplat_rcu_stall"
    assert circular.title == "possible deadlock in idsplat_circular"
    assert stall.text.split("\n")[-1] == " </TASK>"
    assert "circular" not in stall.text and "rcu_sched" not in circular.text
    assert circular.text.startswith("=====")
    lines = text.split("\n")
    step_2 = next(i for i, line in enumerate(lines, 1) if "step s02 begin" in line)
    assert stall.line < step_2 < circular.line


def test_hard_lockup_then_its_panic():
    text = read("synthetic-hard-lockup-panic.txt")
    assert summary(text) == [("hard-lockup", "BUG: hard lockup in idsplat_spin_irqs_off", 2),
                             ("panic", "kernel panic: Hard LOCKUP", 28)]
    lockup, panic = kernel_reports.parse(text)
    assert lockup.text.split("\n")[-1] == " </TASK>"
    assert "irq event stamp: 3721" in lockup.text.split("\n")
    assert (lockup.lockdep_off, panic.lockdep_off) == (False, True)


# ---------------------------------------------- lockdep switching itself off

TABLES = [
    ("captured-splat-lockdep-keys.log", "BUG: MAX_LOCKDEP_KEYS too low!"),
    ("captured-splat-lockdep-entries.log", "BUG: MAX_LOCKDEP_ENTRIES too low!"),
    ("captured-splat-lockdep-chains.log", "BUG: MAX_LOCKDEP_CHAINS too low!"),
    ("captured-splat-lockdep-chain-hlocks.log", "BUG: MAX_LOCKDEP_CHAIN_HLOCKS too low!"),
    ("captured-splat-lockdep-stack-trace.log", "BUG: MAX_STACK_TRACE_ENTRIES too low!"),
    ("captured-splat-lockdep-depth.log", "BUG: MAX_LOCK_DEPTH too low!"),
]


@pytest.mark.parametrize("name, title", TABLES)
def test_lockdep_tables_full(name, title):
    report = only(name)
    assert (report.kind, report.title) == (kernel_reports.LOCKDEP_OFF, title)
    assert report.lockdep_off
    body = report.text.split("\n")
    assert body[:2] == [title, "turning off the locking correctness validator."]
    assert body[-1] == " </TASK>"
    assert kernel_reports.lockdep_off_line(kernel_reports.parse(read(name))) == report.line


LOCK_BUGS = [
    ("captured-splat-non-static-key.log", "non-static-key",
     "INFO: trying to register non-static key in idsplat_non_static_key"),
    ("captured-splat-bad-subclass.log", "bad-subclass",
     "BUG: looking up invalid subclass in idsplat_bad_subclass"),
    # The BUG line and the DEBUG_LOCKS_WARN_ON() splat right after it.
    ("captured-splat-unregistered-key.log", "unregistered-key",
     "BUG: key has not been registered in idsplat_unregistered_key"),
    ("captured-splat-nested-lock.log", "nested-lock",
     "Nested lock was not taken in idsplat_nested_lock"),
    ("captured-splat-bad-contention.log", "bad-contention",
     "bad contention in idsplat_bad_contention"),
    ("captured-splat-lock-held-to-user.log", "lock-held",
     "BUG: lock held when returning to user space in idsplat_lock_held_to_user"),
    ("captured-splat-locks-held-at-exit.log", "lock-held",
     "BUG: still has locks held in idsplat_exit_holding"),
    ("captured-splat-spinlock-bad-magic.log", "spinlock",
     "BUG: spinlock bad magic in idsplat_spinlock_bad_magic"),
]


@pytest.mark.parametrize("name, kind, title", LOCK_BUGS)
def test_other_lockdep_reports_switch_it_off(name, kind, title):
    report = only(name)
    assert (report.kind, report.title) == (kind, title)
    assert kind in kernel_reports.LOCKING_KINDS
    assert report.lockdep_off
    assert "inode-duel:" not in report.text


def test_unregistered_key_report_ends_with_its_warning():
    body = only("captured-splat-unregistered-key.log").text.split("\n")
    assert body[0].startswith("BUG: key ") and "DEBUG_LOCKS_WARN_ON(1)" in body
    assert body[-1] == "---[ end trace 0000000000000000 ]---"


def test_report_without_a_stack_ends_with_its_held_locks():
    body = only("captured-splat-lock-held-to-user.log").text.split("\n")
    assert body[1] == "WARNING: lock held when returning to user space!"
    assert body[-1].startswith(" #0: ") and "(idsplat_user_held)" in body[-1]


def test_bad_page_taint_switches_lock_debugging_off_after_the_report():
    text = read("captured-splat-bad-page.log")
    bad_page, taint = kernel_reports.parse(text)
    assert (bad_page.kind, bad_page.title) == ("bad-page", "BUG: Bad page state in idsplat_bad_page")
    assert (taint.kind, taint.title) == (kernel_reports.LOCKDEP_OFF,
                                         "Disabling lock debugging due to kernel taint")
    assert bad_page.text.split("\n")[-1] == " </TASK>"
    assert taint.text == "Disabling lock debugging due to kernel taint"
    assert (bad_page.lockdep_off, taint.lockdep_off) == (False, True)
    assert kernel_reports.lockdep_off_line(kernel_reports.parse(text)) == taint.line


def test_rcu_then_atomic_sleep_then_wait_context_are_three_reports():
    # A mutex in an RCU read-side section: RCU-lockdep and might_sleep()
    # complain first (lockdep stays on), then lockdep (and goes off).
    text = read("captured-splat-wait-context.log")
    reports = kernel_reports.parse(text)
    assert [(r.kind, r.title, r.lockdep_off) for r in reports] == [
        ("rcu", "suspicious RCU usage at include/linux/rcupdate.h:417", False),
        ("sleep-in-atomic",
         "BUG: sleeping function called from invalid context in idsplat_wait_context", False),
        ("wait-context", "BUG: Invalid wait context in idsplat_wait_context", True)]
    assert kernel_reports.lockdep_off_line(reports) == reports[2].line
    assert reports[2].text.split("\n")[:2] == ["=============================",
                                                "[ BUG: Invalid wait context ]"]


def step_spans(text: str) -> dict[str, tuple[int, int]]:
    """Console lines of each step, from the markers the plan printed."""
    spans: dict[str, list[int]] = {}
    for number, line in enumerate(text.split("\n"), 1):
        mark = re.search(r"inode-duel: step (\S+) (begin|end)", line)
        if mark:
            spans.setdefault(mark.group(1), []).append(number)
    return {step: (lines[0], lines[1]) for step, lines in spans.items()}


def test_steps_after_lockdep_went_off_are_unchecked_not_clean():
    # Step 1 frees a bad page (the taint switches lockdep off), step 2
    # makes a circular dependency that lockdep no longer reports, step 3
    # hangs a task whose lock dump says lockdep is off.
    text = read("captured-splat-bad-page+circular+hung-task.log")
    reports = kernel_reports.parse(text)
    spans = step_spans(text)
    off = kernel_reports.lockdep_off_line(reports)
    assert spans["s01"][0] < off < spans["s01"][1]
    assert off < spans["s02"][0] and off < spans["s03"][0]
    assert "inode_duel_splat: triggering circular" in text
    in_step_2 = [r for r in reports if spans["s02"][0] <= r.line <= spans["s02"][1]]
    assert in_step_2 == []  # looks clean, but nothing was checked
    (hung,) = [r for r in reports if spans["s03"][0] <= r.line <= spans["s03"][1]]
    assert hung.kind == "hung-task" and hung.lockdep_off
    assert hung.text.split("\n")[-1] == "INFO: lockdep is turned off."


@pytest.mark.parametrize("name", [
    "captured-splat-rcu.log", "captured-splat-sleep-in-atomic.log", "captured-splat-warn.log",
    "captured-splat-rcu-stall.log", "captured-splat-soft-lockup.log",
    "captured-splat-hung-task.log", "captured-splat-wq-lockup.log",
    "captured-mainline-debug-clean-boot.log"])
def test_lockdep_stays_on(name):
    reports = kernel_reports.parse(read(name))
    assert not any(r.lockdep_off for r in reports)
    assert kernel_reports.lockdep_off_line(reports) is None


@pytest.mark.parametrize("name", [name for name, _, _ in SINGLE if "rcu" not in name]
                         + ["captured-splat-bug.log", "captured-splat-panic.log"])
def test_lockdep_reports_oops_and_panic_switch_it_off(name):
    (report,) = kernel_reports.parse(read(name))
    assert report.lockdep_off
    assert kernel_reports.lockdep_off_line([report]) == report.line


def test_debug_locks_warn_on_switches_lockdep_off():
    # The unregistered-key capture without its BUG line: the WARN alone,
    # DEBUG_LOCKS_WARN_ON(1) as its message.
    text = "\n".join(line for line in read("captured-splat-unregistered-key.log").split("\n")
                     if "has not been registered" not in line)
    (report,) = kernel_reports.parse(text)
    assert (report.kind, report.title) == ("warn", "WARNING in idsplat_unregistered_key")
    assert report.lockdep_off
    assert not only("captured-splat-warn.log").lockdep_off  # a plain WARN leaves it on


def test_lockdep_off_line_is_the_first_such_report():
    reports = kernel_reports.parse(read("captured-splat-bad-page+circular+hung-task.log"))
    assert kernel_reports.lockdep_off_line(reports) == reports[1].line
    assert kernel_reports.lockdep_off_line(reversed(reports)) == reports[1].line
    assert kernel_reports.lockdep_off_line(()) is None


def test_every_kind_is_known():
    kinds = {r.kind for path in DATA.iterdir() for r in kernel_reports.parse(read(path.name))}
    assert kinds <= set(kernel_reports.KINDS)
    assert set(kernel_reports.KINDS) - kinds == set()  # each kind has a test text


@pytest.mark.parametrize("prefix", [
    lambda i, msg: "<4>[%5d.%06d] %s" % (i, i, msg),
    lambda i, msg: "[%5d.%06d][ T1234] %s" % (i, i, msg),
])
@pytest.mark.parametrize("name", ["captured-splat-rcu-stall-irqsoff.log",
                                  "captured-splat-hung-task.log",
                                  "captured-splat-wq-lockup.log",
                                  "captured-splat-lockdep-keys.log",
                                  "captured-splat-lock-held-to-user.log"])
def test_prefixes_do_not_change_new_reports(prefix, name):
    plain = [(r.kind, r.title, r.text) for r in kernel_reports.parse(read(name))]
    assert [(r.kind, r.title, r.text)
            for r in kernel_reports.parse(_reprefix(read(name), prefix))] == plain


# Small texts: single title rules for stalls and hangs in places the
# generator cannot put them (a trylock loop in fs/inode.c, a grace period).

def test_stall_in_a_trylock_loop_is_named_by_the_looping_function():
    text = "\n".join([
        "rcu: INFO: rcu_sched self-detected stall on CPU",
        "rcu: \t1-....: (5250 ticks this GP) idle=2f4c/1/0x4000000000000000 softirq=1/1 fqs=2",
        "\t(t=5251 jiffies g=2157 q=12 ncpus=2)",
        "CPU: 1 PID: 120 Comm: fio Not tainted 6.1.192+ #2",
        "RIP: 0010:do_raw_spin_trylock+0x2a/0x80",
        "Call Trace:",
        " <TASK>",
        " _raw_spin_trylock+0x1c/0x50",
        " ? inode_lru_isolate+0x4a/0x1f0",
        " inode_lru_isolate+0x4a/0x1f0",
        " __list_lru_walk_one+0x7e/0x170",
        " list_lru_walk_one+0x4b/0x70",
        " prune_icache_sb+0x3e/0x90",
        " </TASK>",
    ])
    assert summary(text) == [("rcu-stall", "INFO: rcu detected stall in inode_lru_isolate", 1)]


def test_stall_title_passes_over_the_starved_grace_period_kthread():
    # print_cpu_stall() dumps a starved GP kthread before the stalled CPU.
    text = "\n".join([
        "rcu: INFO: rcu_sched self-detected stall on CPU",
        "rcu: \t0-....: (5250 ticks this GP) idle=2f4c/1/0x4000000000000000 softirq=1/1 fqs=0",
        "\t(t=5251 jiffies g=2157 q=12 ncpus=1)",
        "rcu: rcu_sched kthread starved for 5251 jiffies! g2157 f0x0 RCU_GP_WAIT_FQS(5) "
        "->state=0x0 ->cpu=0",
        "rcu: \tUnless rcu_sched kthread gets sufficient CPU time, OOM is now expected behavior.",
        "rcu: RCU grace-period kthread stack dump:",
        "task:rcu_sched       state:R  running task     stack:0     pid:14    ppid:2      "
        "flags:0x00004000",
        "Call Trace:",
        " <TASK>",
        " __schedule+0x27a/0x7f0",
        " schedule_timeout+0x94/0x260",
        " rcu_gp_fqs_loop+0x11f/0x480",
        " </TASK>",
        "CPU: 0 PID: 120 Comm: fio Not tainted 6.1.192+ #2",
        "RIP: 0010:evict_inodes+0x3e/0x160",
        "Call Trace:",
        " <TASK>",
        " generic_shutdown_super+0x42/0x120",
        " </TASK>",
    ])
    assert summary(text) == [("rcu-stall", "INFO: rcu detected stall in evict_inodes", 1)]


def test_task_hung_in_a_grace_period_is_one_bucket():
    text = "\n".join([
        "INFO: task umount:311 blocked for more than 122 seconds.",
        "task:umount          state:D stack:0     pid:311   ppid:1      flags:0x00004000",
        "Call Trace:",
        " <TASK>",
        " __schedule+0x27a/0x7f0",
        " schedule+0x57/0xa0",
        " schedule_timeout+0x1f5/0x260",
        " __wait_for_common+0xb0/0x1c0",
        " __synchronize_srcu+0xfb/0x150",
        " fsnotify_connector_destroy_workfn+0x3c/0x60",
        " </TASK>",
    ])
    assert summary(text) == [("hung-task", "INFO: task hung in synchronize_rcu", 1)]
