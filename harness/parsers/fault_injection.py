"""What fault injection did in a step: its counters and the stacks of its faults.

The guest's faults_save (guest/rootfs/faults.sh) sends one record per
faults step: the slab caches failslab may fail (marked at boot), then a
line per debugfs fault_attr:

    caches dentry ext4_inode_cache inode_cache shmem_inode_cache xfs_ili xfs_inode
    failslab probability=2 times=50 left=13 task_filter=Y
    fail_page_alloc probability=0 times=0 left=0 task_filter=Y
    fail_make_request probability=1 times=10 left=10 task_filter=Y

times is what the step asked for, left what the kernel's counter held after
the step: it counts down once per injected fault, so while it has not
reached 0, times - left faults were injected, exactly. Once it reaches 0 it
may be short: should_fail_ex() reads the countdown before it injects and
decrements it after (atomic_dec_not_zero), so two tasks injecting at once on
the last one are counted once. Seen on mainline on 2026-12-06: times=40,
left=0, 41 faults on the console and 41 failed operations. injected() then
takes the console's count when it is higher. A kernel without fault
injection sends one line, "error WHY".

With verbose=2 every injected fault prints on the console

    FAULT_INJECTION: forcing a failure.
    name failslab, interval 1, probability 2, space 0, times 49
    CPU: 1 PID: 123 Comm: torture Not tainted 6.1.192 #1
    Call Trace:
     <TASK>
     dump_stack_lvl+0x...
     should_fail_ex+0x...
     ...
     __d_alloc+0x...

(allocations asked with __GFP_NOWARN fail without a word: the counter
counts them, the console does not). Each one's site is the first frames of
its stack past the fault, allocator and block plumbing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from harness.parsers import kernel_reports
from harness.parsers import report_frames as frames

HEADLINE = "FAULT_INJECTION: forcing a failure."
_NAME = re.compile(r"^name (?P<attr>\S+), interval \d+, probability \d+, space -?\d+, "
                   r"times -?\d+")
_TASK = re.compile(r"^CPU: \d+ PID: \d+ Comm: (?P<comm>\S+)")
_FIELD = re.compile(r"^(?P<key>[a-z_]+)=(?P<value>\S+)$")
# Frames between the faulting call and the code that asked: the fault's own
# report, the slab and page allocators, the block submission path.
PLUMBING = frames._prefixes(
    r"dump_stack", r"fail_dump", r"should_fail", r"slab_pre_alloc_hook",
    r"kmem_cache_alloc", r"kmem_cache_zalloc", r"kmalloc",
    r"slab_alloc", r"_slab_alloc", r"alloc_slab_page", r"allocate_slab", r"new_slab",
    r"alloc_pages", r"prepare_alloc_pages", r"folio_alloc", r"alloc_inode_sb",
    r"submit_bio", r"submit_bh", r"bio_")
SITE_FRAMES = 3  # frames that name a site


class FaultRecordError(Exception):
    pass


@dataclass(frozen=True)
class AttrCount:
    """One fault_attr of a step: what was asked and how many faults it injected."""
    attr: str
    probability: int  # percent, as the kernel held it during the step
    times: int  # faults asked for at most
    left: int  # the kernel's countdown after the step

    @property
    def injected(self) -> int:
        return self.times - self.left


@dataclass(frozen=True)
class FaultRecord:
    counts: tuple[AttrCount, ...]
    error: str = ""  # why no fault was armed ("" when they were)
    caches: tuple[str, ...] = ()  # the slab caches failslab could fail

    def injected(self, attr: str) -> int:
        return sum(c.injected for c in self.counts if c.attr == attr)


def parse_record(text: str, name: str = "faults record") -> FaultRecord:
    """A step's ID.faults record; a line that is not one raises, naming it."""
    counts = []
    caches: tuple[str, ...] = ()
    for lineno, line in enumerate(text.splitlines(), 1):
        words = line.split()
        if not words:
            continue
        if words[0] == "error":
            return FaultRecord((), " ".join(words[1:]) or "unknown")
        if words[0] == "caches":
            caches = tuple(words[1:])
            continue
        fields = {}
        for word in words[1:]:
            match = _FIELD.match(word)
            if not match:
                raise FaultRecordError(f"{name}:{lineno}: {word!r} is not key=value")
            fields[match["key"]] = match["value"]
        try:
            count = AttrCount(words[0], int(fields["probability"]), int(fields["times"]),
                              int(fields["left"]))
        except (KeyError, ValueError) as err:
            raise FaultRecordError(f"{name}:{lineno}: {line.strip()!r}: {err}") from None
        if not 0 <= count.left <= count.times:
            raise FaultRecordError(f"{name}:{lineno}: left={count.left} outside 0..times="
                                   f"{count.times}")
        counts.append(count)
    return FaultRecord(tuple(counts), "", caches)


def injected(record: FaultRecord, shown: list[InjectedFault]) -> dict[str, tuple[int, bool]]:
    """attr -> (faults injected, whether its bound was reached) for one step;
    shown: the faults the console showed while the step ran."""
    out = {}
    for count in record.counts:
        reached = count.times > 0 and count.left == 0
        printed = sum(1 for fault in shown if fault.attr == count.attr)
        out[count.attr] = (max(count.injected, printed) if reached else count.injected, reached)
    return out


@dataclass(frozen=True)
class InjectedFault:
    """One fault the console reported."""
    line: int  # console line (1-based) of its headline
    attr: str  # failslab, fail_page_alloc, fail_make_request ("" if cut off)
    task: str  # the task it failed ("" without a stack)
    chain: tuple[str, ...]  # functions past the plumbing, innermost first

    @property
    def site(self) -> str:
        return " < ".join(self.chain[:SITE_FRAMES]) or "(no stack)"


def _stack(msgs: list[str]) -> tuple[str, tuple[str, ...]]:
    """(task, meaningful frames) of the dump following a headline."""
    task = next((m["comm"] for m in map(_TASK.match, msgs[:4]) if m), "")
    funcs = frames.stack_funcs(msgs)
    return task, tuple(f for f in funcs if frames.meaningful(f, PLUMBING))


def parse_console(text: str) -> list[InjectedFault]:
    """Every injected fault the console shows, in console order."""
    lines = kernel_reports.console_lines(text)
    found = []
    for i, head in enumerate(lines):
        if not head.msg.startswith(HEADLINE):
            continue
        # The rest of this fault's dump: the same task's (or CPU's) lines up to
        # the end of its stack or the next fault.
        own = [ln.msg for ln in lines[i + 1:i + 200] if ln.context == head.context]
        end = next((k for k, msg in enumerate(own) if msg.startswith(HEADLINE)), len(own))
        own = own[:end]
        name = _NAME.match(own[0]) if own else None
        task, chain = _stack(own) if name else ("", ())
        found.append(InjectedFault(head.number, name["attr"] if name else "", task, chain))
    return found
