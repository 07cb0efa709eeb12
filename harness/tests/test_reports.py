"""kernel_reports.parse against console logs.

captured-*: real consoles of this project's guests: a clean boot of the
mainline debug kernel, and captured-splat-KIND.log, one boot per kind of the
splat generator (test_data/splat/, made by its capture.py).
synthetic-*: console prefixes no guest of ours prints (PRINTK_CALLER ids,
journald), laid out as 6.1 x86_64 prints them, with invented addresses.
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
    # idsplat_bad_unlock is inlined: the unlock site is in idsplat_write.cold.
    ("captured-splat-bad-unlock.log", "bad-unlock", "bad unlock balance in idsplat_write"),
    ("captured-splat-held-lock-freed.log", "held-lock-freed",
     "held lock freed in idsplat_held_lock_freed"),
    # Built with O=: the kernel prints ../../src/lib/...; the title has the tree path.
    ("captured-splat-rcu.log", "rcu", "suspicious RCU usage at lib/inode_duel_splat.c:168"),
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
