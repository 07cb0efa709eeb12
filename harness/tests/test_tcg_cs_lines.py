"""The tcg-cs plugin's cache lines, checked section by section against the code.

captured-mainline-lines.out: the plugin's output of a 1-vCPU tcg-cs boot of
mainline (create-unlink on tmpfs and ext4, igetstorm on ext4) with five
call sites traced line by line; captured-mainline-FUNCTION.objdump: the
disassembly of the functions they are in, from the same image
(harness/test_data/tcg-cs/README.md has the commands). What each section
must touch comes from its source and its disassembly; the tests compare it
with what the plugin measured, for every traced section.

In this image (struct inode without ACLs or security): i_sb at 0x18, i_ino
at 0x28, i_lock at 0x70, i_state at 0x80, i_hash at 0xc0, i_sb_list at
0xf0; struct super_block has s_inode_list_lock at 0x500 (cacheline
aligned) and s_inodes right after it, at 0x508.
"""

from pathlib import Path

import pytest

from harness.boot import tcg_cs
from harness.kernels import objdump
from harness.lockorder import parse, MAINLINE_FILE
from harness.parsers import tcg_cs as parser

DATA = Path(__file__).resolve().parent.parent / "test_data" / "tcg-cs"
CAPTURED = DATA / "captured-mainline-lines.out"


def captured() -> parser.Output:
    return parser.parse(CAPTURED.read_text(), str(CAPTURED))


def code(function: str) -> list[objdump.Insn]:
    path = DATA / f"captured-mainline-{function}.objdump"
    if not path.exists():  # captured earlier from the same image (test_tcg_cs.py)
        path = DATA / f"captured-{function}.objdump"
    return objdump.parse_objdump(path.read_text())


def at(insns: list[objdump.Insn], mnemonic: str, operands: str, after: int = 0) -> int:
    """The address of the first instruction after `after` with these mnemonic and operands."""
    return next(i.address for i in insns
                if i.address > after and i.mnemonic == mnemonic and i.operands == operands)


def site_of(sections: list[parser.TracedSection]) -> int:
    [site] = {s.site for s in sections}
    return site


def traced(function: str, lock_class: str) -> list[parser.TracedSection]:
    """Traced sections of lock_class whose call site is inside function."""
    insns = code(function)
    low, high = insns[0].address, insns[-1].address
    found = [t for w in captured().windows.values() for t in w.traced
             if low <= t.site <= high and t.lock_class == lock_class]
    assert len(found) >= 20, f"{function}: only {len(found)} traced sections"
    return found


def line(address: int) -> int:
    return address >> 6  # the direct map keeps 64-byte alignment


def by_insn(section: parser.TracedSection) -> dict[int, parser.TracedLine]:
    out = {t.insn: t for t in section.touched}
    assert len(out) == len(section.touched), "two lines first touched by one instruction"
    return out


def test_inode_sb_list_add_touches_what_list_add_writes():
    # new_inode() -> inode_sb_list_add(): list_add(&inode->i_sb_list, &sb->s_inodes)
    # under sb->s_inode_list_lock. After the lock call the code reads
    # inode->i_sb, then s_inodes.next (the lock's own line), writes the old
    # first entry's prev, the new entry's next and prev, s_inodes.next.
    insns = code("new_inode")
    sections = traced("new_inode", "&s->s_inode_list_lock")
    site = site_of(sections)
    i_sb = at(insns, "mov", "0x18(%rbx),%rax", site)
    head_next = at(insns, "mov", "0x508(%rax),%rcx", site)
    next_prev = at(insns, "mov", "%rdx,0x8(%rcx)", site)
    own_next = at(insns, "mov", "%rcx,0xf0(%rbx)", site)
    own_prev = at(insns, "mov", "%rcx,0xf8(%rbx)", site)
    for section in sections:
        lines = by_insn(section)
        inode = lines[i_sb].vaddr - 0x18
        assert lines[i_sb].flags.rstrip("cp") == "R"
        assert lines[head_next].vaddr == section.lock + 8
        assert lines[head_next].flags.rstrip("cp") == "RWL"  # s: the head beside the lock
        assert lines[next_prev].flags.startswith("W")
        assert lines[own_next].vaddr == inode + 0xf0 and lines[own_next].flags.startswith("W")
        straddles = line(inode + 0xf8) != line(inode + 0xf0)
        assert (own_prev in lines) == straddles
        assert set(lines) <= {i_sb, head_next, next_prev, own_next, own_prev}
        assert (section.lines.read, section.lines.written) == (1, 2 + straddles)
        assert (section.lines.lockline_written, section.lines.chain) == (1, 0)
        assert section.lines.prev == sum("p" in t.flags for t in section.touched)


def test_sb_list_del_init_in_evict_touches_its_neighbours():
    # evict() -> inode_sb_list_del(): list_del_init(&inode->i_sb_list). It
    # reads its own prev and next, writes next->prev and prev->next, then
    # its own next and prev (INIT_LIST_HEAD), and reloads inode->i_sb for
    # the unlock. create-unlink removes the inode it added last: its prev
    # is the list head, on the lock's line.
    insns = code("evict")
    sections = traced("evict", "&s->s_inode_list_lock")
    site = site_of(sections)
    own_prev = at(insns, "mov", "0xf8(%rbx),%rax", site)
    own_next = at(insns, "mov", "0xf0(%rbx),%rdx", site)
    next_prev = at(insns, "mov", "%rax,0x8(%rdx)", site)
    prev_next = at(insns, "mov", "%rdx,(%rax)", site)
    i_sb = at(insns, "mov", "0x18(%rbx),%rax", site)
    for section in sections:
        lines = by_insn(section)
        inode = lines[own_prev].vaddr - 0xf8
        assert lines[own_prev].flags.rstrip("cp") == "RW"
        assert (own_next in lines) == (line(inode + 0xf0) != line(inode + 0xf8))
        assert lines[next_prev].flags.startswith("W")
        assert lines[prev_next].vaddr == section.lock + 8 and "L" in lines[prev_next].flags
        assert lines[i_sb].flags.rstrip("cp") == "R" and lines[i_sb].vaddr == inode + 0x18
        assert set(lines) <= {own_prev, own_next, next_prev, prev_next, i_sb}
        assert section.lines.read == 1
        assert section.lines.written == 2 + (own_next in lines)
        assert section.lines.lockline_written == 1
        assert section.lines.prev == sum("p" in t.flags for t in section.touched)


def test_a_line_an_earlier_section_wrote_last_is_from_previous():
    # The sb-list sections of each window are traced one after the other
    # from the window's start: all of them, as tmpfs and ext4 create+unlink
    # take that lock twice per operation, in the add and in the removal
    # (lock_stat). If an earlier traced section of the same lock wrote a
    # line and no instruction touched the line since that section ended
    # (its gap reaches back before then), its last write was inside that
    # section: the line must be W ("p").
    checked = 0
    for window in captured().windows.values():
        written: dict[tuple[int, int], int] = {}  # (lock, line) -> end of its last writer
        sections = [t for t in window.traced if t.lock_class == "&s->s_inode_list_lock"]
        for section in sorted(sections, key=lambda t: t.id):
            for t in section.touched:
                end = written.get((section.lock, line(t.vaddr)))
                if "L" not in t.flags and end is not None and t.gap is not None \
                        and t.time - t.gap <= end:
                    assert "p" in t.flags, (window.label, section.id, t)
                    checked += 1
            for t in section.touched:
                if "W" in t.flags and "L" not in t.flags:
                    # Its length leaves out interrupts: an end too early is the safe side.
                    written[section.lock, line(t.vaddr)] = section.start + section.length - 1
    assert checked >= 40


def test_hash_insert_writes_the_bucket_and_the_new_entry():
    # ext4's insert_inode_locked(): under inode_hash_lock, walk the chain for
    # the inode number (no match: a new inode), then take the inode's i_lock
    # (the cmpxchg in _raw_spin_lock), set i_state and hlist_add_head_rcu():
    # write the new entry's pprev and next, the bucket head, and the old
    # first entry's pprev when there was one.
    insns = code("insert_inode_locked")
    sections = traced("insert_inode_locked", "inode_hash_lock")
    site = site_of(sections)
    head = at(insns, "mov", "0x0(%r13),%rbx", site)
    walk = at(insns, "cmp", "%r12,0x28(%rbx)", site)
    writes = {at(insns, "mov", "%r13,0xc8(%rbp)", site), at(insns, "mov", "%rax,0xc0(%rbp)", site),
              at(insns, "mov", "%rdx,0x8(%rax)", site),
              at(insns, "orq", "$0x8008,0x80(%rbp)", site),
              at(code("raw_spin_lock"), "cmpxchg", "%edx,(%rdi)")}
    for section in sections:
        lines = by_insn(section)
        entries = [t for t in section.touched if t.insn == walk]
        assert lines[head].flags.rstrip("cp") == "RW"  # read by the walk, written by the add
        assert all(t.flags.rstrip("cp") == "R" for t in entries)
        assert set(lines) - {head, walk} <= writes
        assert all("W" in lines[i].flags for i in set(lines) - {head, walk})
        assert section.lines.chain == len(entries) == section.lines.read
        assert section.lines.written == len(lines) - len(entries)
        assert section.lines.lockline_written == 0  # inode_hash_lock has its line alone


def test_failing_lookup_reads_only_the_bucket():
    # iget_locked()'s first section: find_inode_fast() under inode_hash_lock.
    # Right after igetstorm's cache drop the inode is not cached: the walk
    # reads the bucket head and, the chains being empty here, nothing else.
    fast = code("find_inode_fast")
    head = fast[[i.operands.endswith(",%rbx") and i.mnemonic == "mov" for i in fast].index(True)]
    failing = [s for s in traced("iget_locked", "inode_hash_lock")
               if s.lines.written == 0]
    assert len(failing) >= 5
    for section in failing:
        [only] = section.touched
        assert only.insn == head.address and only.flags.rstrip("cp") == "R"
        assert (section.lines.read, section.lines.chain, section.lines.cold) == (1, 0, 0)


def test_found_lookup_counts_the_entries_its_walk_visits():
    # The later rounds find the inode: the walk's per-entry load is the
    # i_ino compare at the top of find_inode_fast()'s loop, once per entry
    # up to the match; the match's i_lock is taken and i_count raised.
    fast = code("find_inode_fast")
    walk = at(fast, "cmp", "%rbp,0x28(%rbx)")
    loop = [i for i in fast if i.mnemonic == "jne" and objdump.branch_target(i)
            and objdump.branch_target(i) < i.address]
    first_load = next(i for i in fast if i.address >= objdump.branch_target(loop[0])
                      and "(%rbx)" in i.operands)
    assert first_load.address == walk
    found = [s for s in traced("iget_locked", "inode_hash_lock") if s.lines.chain]
    assert len(found) >= 10
    count = at(fast, "incl", "0x130(%rbx)")
    for section in found:
        assert list(section.chain_loads) == [walk]
        assert section.lines.chain == section.chain_loads[walk]
        # One distinct entry per load: each visited inode's i_ino line is its own.
        assert sum(t.insn == walk for t in section.touched) == section.lines.chain
        assert "W" in by_insn(section)[count].flags


def test_chain_entries_per_acquisition_is_the_mean_over_sections():
    roles = tcg_cs.with_tables(parse(MAINLINE_FILE))
    output = captured()
    window = output.windows["s03.open-by-handle"]
    figures = {(f.lock, f.metric): f.value for f in tcg_cs.cs_figures.window_figures(
        "open-by-handle", 5000, window, roles, output)}
    hash_sections = [s for s in window.sections if s.lock_class == "inode_hash_lock"]
    n = sum(s.acquisitions for s in hash_sections)
    assert figures["hash", "cs_chain_entries_per_acq"] == pytest.approx(
        sum(s.lines.chain for s in hash_sections) / n)
    # igetstorm -n 1000 -r 5: the first round misses 1000 times (lookup and
    # insert, both on empty chains here), the other four find each inode,
    # nearly always first in its chain (131072 buckets).
    files, rounds = 1000, 5
    hits = files * (rounds - 1)
    assert n == files * rounds + files
    assert hits / n <= figures["hash", "cs_chain_entries_per_acq"] < 1.01 * hits / n
    assert figures["hash", "cs_lockword_line_written_share"] == 0.0
    assert ("i_lock", "cs_chain_entries_per_acq") not in figures


def _tidy_rows(output: parser.Output, label: str, ops: float, rep: int) -> list:
    """The tidy rows a run would have of one captured window (tcg-cs, 1 vCPU)."""
    from harness.run import tidy
    phase = label.split(".", 1)[1]
    figures = tcg_cs.cs_figures.window_figures(phase, ops, output.windows[label],
                                               tcg_cs.with_tables(parse(MAINLINE_FILE)), output)
    return [tidy.Row("mainline", "perf", tcg_cs.MODE, "create-unlink", "tmpfs", 1, 1, rep,
                     phase, f.lock, f.metric, f.value, f.unit, "ok", f"boot{rep}/s01")
            for f in figures]


def test_scaling_inputs_take_each_roles_lines_and_do_without():
    from harness.analysis import scaling_inputs
    rows = _tidy_rows(captured(), "s01.create-unlink", 2000, 1)
    match = dict(kernel="mainline", flavour="perf", mode=tcg_cs.MODE, cpus=1,
                 workload="create-unlink", fs="tmpfs", phase="create-unlink")
    lines = scaling_inputs.role_lines(rows, match)
    figures = {(r.lock, r.metric): r.value for r in rows}
    sb = lines["sb_list"]
    assert sb.written == figures["sb_list", "cs_lines_written_per_acq"]
    assert sb.from_previous == figures["sb_list", "cs_lines_from_previous_per_acq"]
    assert sb.lockword_line_written_share == 1.0 and sb.chain_entries is None
    assert set(lines) == {"sb_list", "i_lock"} | ({"lru"} & {r.lock for r in rows})
    # A run from before the plugin counted lines: no line inputs at all.
    old = [r for r in rows if "lines" not in r.metric and "cold" not in r.metric]
    assert scaling_inputs.role_lines(old, match) == {}


def test_case_inputs_carry_the_lines_into_each_role():
    from harness.analysis import scaling_inputs
    from harness.layout import default_layout
    from harness.tests.conftest import CASE, mainline_rows
    cs_rows = _tidy_rows(captured(), "s01.create-unlink", 2000, 1)
    inputs = scaling_inputs.case_inputs(default_layout(), mainline_rows() + cs_rows, {},
                                        "mainline", CASE)
    by_role = {r.role: r for r in inputs.roles}
    assert by_role["sb_list"].lines.lockword_line_written_share == 1.0
    assert by_role["i_lock"].lines.read > 0
    without = scaling_inputs.case_inputs(default_layout(), mainline_rows(), {}, "mainline", CASE)
    assert all(r.lines is None for r in without.roles)
