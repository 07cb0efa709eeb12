"""The tcg-cs plugin's output: parser, figures, and the disassembly check.

captured-mainline-default.out: the plugin's output of one tcg-cs boot of the
mainline perf kernel with tcg-cs/0001-*.patch, default workloads (see
harness/test_data/tcg-cs/README.md for the command). captured-*.objdump:
`objdump -d --no-show-raw-insn` of the same image (the ELF inside its
bzImage) for _raw_spin_lock, _raw_spin_trylock and new_inode.
"""

import dataclasses
import glob
from pathlib import Path

import pytest

from harness import host, lockorder
from harness.analysis import cs_validation
from harness.boot import measure, tcg_cs
from harness.guest import plan, workloads
from harness.kernels import objdump as disasm
from harness.kernels import vmlinux
from harness.layout import REPO_ROOT
from harness.parsers import tcg_cs as parser

DATA = Path(__file__).resolve().parent.parent / "test_data" / "tcg-cs"
MAINLINE = lockorder.parse(lockorder.MAINLINE_FILE)
CAPTURED = DATA / "captured-mainline-default.out"


def captured() -> parser.Output:
    return parser.parse(CAPTURED.read_text(), str(CAPTURED))


def test_captured_output_has_a_window_per_lock_stat_window():
    out = captured()
    # Steps of the default workloads at 1 vCPU, named like their lock_stat files.
    assert {"s01.create-unlink", "s02.create-unlink", "s03.filecreate", "s04.filecreate",
            "s05.create", "s05.walk", "s05.unlink", "s07.open-by-handle"} <= set(out.windows)
    for window in out.windows.values():
        assert window.instructions > 0
        assert window.sections
        for s in window.sections:
            assert s.min <= s.instructions / s.acquisitions <= s.max
            assert (s.interrupted > 0) == (s.interrupt_instructions > 0)
    # ext4 create+unlink waits for its disk: interrupts land in its sections.
    assert out.windows["s02.create-unlink"].interrupt_instructions > 0
    assert out.boot["windows"] == len(out.windows)
    assert out.boot["acquire_on_held"] == 0  # no release the plugin missed


def test_captured_classes_are_lockdep_names():
    classes = {s.lock_class for w in captured().windows.values() for s in w.sections}
    assert {"&sb->s_type->i_lock_key", "&s->s_inode_list_lock", "inode_hash_lock",
            "&lru->node[i].lock"} <= classes


def test_bad_header_names_the_file_and_line():
    with pytest.raises(parser.TcgCsError, match=r"x.out:1:"):
        parser.parse("window\ts01.a\t5\n", "x.out")


def test_section_outside_its_window_is_an_error_with_its_line():
    text = "tcg-cs\t1\nwindow\ts01.a\t100\t0\t0\ncs\ts02.b\tc\t0\t1\t5\t5\t5\t0\t0\n"
    with pytest.raises(parser.TcgCsError, match=r"x.out:3: cs line outside its window"):
        parser.parse(text, "x.out")


@pytest.mark.parametrize("section", [
    "2\t5\t3\t9\t0\t0",  # a mean below the minimum
    "2\t10\t5\t5\t0\t1",  # interrupted without interrupt instructions
    "2\t10\t5\t5\t40\t3",  # more interrupted sections than sections
])
def test_inconsistent_section_is_an_error(section):
    text = f"tcg-cs\t1\nwindow\ts01.a\t100\t0\t0\ncs\ts01.a\tc\t0\t{section}\n"
    with pytest.raises(parser.TcgCsError, match=r"x.out:3: inconsistent"):
        parser.parse(text, "x.out")


def test_unterminated_last_line_of_a_killed_qemu_is_dropped():
    text = CAPTURED.read_text()
    cut = text.index("boot\t")
    out = parser.parse(text[:cut + 7], str(CAPTURED))
    assert out.boot == {}
    assert len(out.windows) == len(captured().windows)


def _create_unlink_figures() -> dict[tuple[str, str], float]:
    create = workloads.parse(REPO_ROOT / "workloads" / "create-unlink.wl")
    step = plan.make_steps([(create, "tmpfs", 1)])[0]
    numbers = measure.StepNumbers(0, False, (measure.Figure("create-unlink", "", "ops", 2000,
                                                            "create+unlink"),), None, "")
    numbers = tcg_cs.with_figures(numbers, step, captured(), MAINLINE)
    assert numbers.error == ""
    return {(f.lock, f.metric): f.value for f in numbers.figures}


def test_figures_of_tmpfs_create_unlink_match_lock_stats_exact_counts():
    figures = _create_unlink_figures()
    # lock_stat counts 8 i_lock and 2 s_inode_list_lock acquisitions per
    # tmpfs create+unlink (NOTES.md); the plugin counts the same events.
    assert figures["i_lock", "cs_acquisitions_per_op"] == pytest.approx(8.0, rel=0.005)
    assert figures["sb_list", "cs_acquisitions_per_op"] == pytest.approx(2.0, rel=0.005)
    held = sum(v for (lock, metric), v in figures.items() if metric == "cs_instructions_per_op")
    assert 0 < held < figures["", "instructions_per_op"]
    # What runs with some role held is at least the longest role's own share
    # and at most all roles' own shares plus the interrupts that came meanwhile.
    unlocked = figures["", "unlocked_instructions_per_op"]
    assert (figures["", "instructions_per_op"] - held
            - figures["", "cs_interrupt_instructions_per_op"]) <= unlocked
    assert unlocked <= figures["", "instructions_per_op"] - figures["i_lock", "cs_instructions_per_op"]
    for role in ("i_lock", "sb_list"):
        assert figures[role, "cs_instructions_per_acq"] == pytest.approx(
            figures[role, "cs_instructions_per_op"] / figures[role, "cs_acquisitions_per_op"])


def test_a_step_without_its_window_is_an_error():
    create = workloads.parse(REPO_ROOT / "workloads" / "create-unlink.wl")
    step = plan.Step("s99", create, "tmpfs", 1)
    numbers = measure.StepNumbers(0, False,
                                  (measure.Figure("create-unlink", "", "ops", 10, "op"),), None, "")
    numbers = tcg_cs.with_figures(numbers, step, captured(), MAINLINE)
    assert numbers.error == "tcg-cs: no plugin window for phase create-unlink"


def test_inode_hash_table_bit_locks_are_the_hash_role():
    roles = tcg_cs.with_tables(MAINLINE)
    assert roles.role_of("Inode-cache") == "hash"
    assert roles.role_of("Dentry cache") is None
    assert MAINLINE.role_of("Inode-cache") is None  # the lock-order itself is left alone


def objdump(name: str) -> list[disasm.Insn]:
    return disasm.parse_objdump((DATA / f"captured-{name}.objdump").read_text())


def test_lock_fast_path_follows_a_successful_cmpxchg():
    assert cs_validation.lock_fast_path(objdump("raw_spin_lock")) == 3  # cmpxchg, jne, ret
    assert cs_validation.lock_fast_path(objdump("raw_spin_trylock")) == 4  # cmpxchg, je, mov, ret


# new_inode() of the captured image: spin_lock(&inode->i_lock) at 0x...a069,
# inode_sb_list_add() inlined with its spin_lock(&sb->s_inode_list_lock) at
# 0x...a088. Both lock addresses are in %rax, which the call clobbers: the
# code reloads it before the release (movb $0x0 at 0x...a079 and 0x...a0c3),
# so the automatic check leaves these sites out and they are checked here
# with the release found by reading the disassembly.
I_LOCK_CALL, SB_LIST_CALL = 0xffffffff8112a069, 0xffffffff8112a088
RELEASES = {I_LOCK_CALL: 0xffffffff8112a079, SB_LIST_CALL: 0xffffffff8112a0c3}


def straight_line_count(insns, call, release):
    """Instructions after the call up to and including the release; no branch between."""
    path = [i for i in insns if call < i.address <= release]
    assert path[-1].mnemonic == "movb" and path[-1].operands.startswith("$0x0,")
    assert not [i for i in path if i.mnemonic.startswith("j") or i.mnemonic in
                disasm.BRANCHES or i.rep]
    return len(path)


def test_plugin_measures_exactly_what_the_disassembly_gives():
    fast = cs_validation.lock_fast_path(objdump("raw_spin_lock"))
    insns = objdump("new_inode")
    for window in ("s01.create-unlink", "s02.create-unlink"):
        sections = {s.site: s for s in captured().windows[window].sections}
        for site, lock_class, caller in ((I_LOCK_CALL, "&sb->s_type->i_lock_key", 2),
                                         (SB_LIST_CALL, "&s->s_inode_list_lock", 10)):
            assert straight_line_count(insns, site, RELEASES[site]) == caller
            section = sections[site]
            assert section.lock_class == lock_class
            assert section.min == section.max == fast + caller
            assert section.acquisitions == 2000  # one per create+unlink


def test_automatic_check_needs_a_preserved_lock_register():
    insns = objdump("new_inode")
    before = [i for i in insns if i.address < SB_LIST_CALL]
    assert cs_validation.lock_operand(before) is None  # lea 0x500(%rax),%rdi
    mov_rbx = [disasm.Insn(1, "mov", "%rbx,%rdi")]
    assert cs_validation.lock_operand(mov_rbx) == ("(%rbx)", "rbx")
    after = [disasm.Insn(2, "movb", "$0x0,0x4(%rbx)"),  # another field: not the lock
             disasm.Insn(3, "mov", "%eax,0x10(%rbx)"),
             disasm.Insn(4, "movb", "$0x0,(%rbx)")]
    assert cs_validation.straight_line_release(after, ("(%rbx)", "rbx")) == 3
    rewritten = [disasm.Insn(2, "mov", "0x8(%rbx),%rbx")] + after
    assert cs_validation.straight_line_release(rewritten, ("(%rbx)", "rbx")) is None
    string_copy = [disasm.Insn(2, "movsq", "%ds:(%rsi),%es:(%rdi)", rep=True)] + after
    assert cs_validation.straight_line_release(string_copy, ("(%rbx)", "rbx")) is None


def _row(kernel, mode, metric, value, lock="i_lock", cell="c1", flavour="perf", cpus=1):
    from harness.run import tidy
    return tidy.Row(kernel, flavour, mode, "create-unlink", "tmpfs", cpus, 1, 1, "create-unlink",
                    lock, metric, value, "", "ok", cell)


def test_summary_cv_is_over_boots_and_skips_rare_roles():
    from harness.analysis import cs_summary
    rows = []
    for cell, own, irq in (("a", 30.0, 0.0), ("b", 30.3, 3.0), ("c", 29.7, 0.0)):
        rows += [_row("k", "tcg-cs", "cs_instructions_per_acq", own, cell=cell),
                 _row("k", "tcg-cs", "cs_interrupt_instructions_per_acq", irq, cell=cell),
                 _row("k", "tcg-cs", "cs_acquisitions", 16000, cell=cell),
                 _row("k", "tcg-cs", "cs_instructions_per_acq", 12.0, lock="lru", cell=cell),
                 _row("k", "tcg-cs", "cs_acquisitions", 999, lock="lru", cell=cell)]
    [rep] = cs_summary.repeatability(rows)
    assert (rep.role, rep.boots, rep.min_acquisitions) == ("i_lock", 3, 16000)
    assert rep.mean == pytest.approx(30.0)
    assert rep.cv == pytest.approx(0.01)  # stdev 0.3 of a mean of 30
    assert rep.interrupt_mean == pytest.approx(1.0)
    assert rep.total_cv > rep.cv


def test_summary_agreement_pairs_the_plugin_with_one_vcpu_lock_stat():
    from harness.analysis import cs_summary
    rows = [_row("k", "tcg-cs", "cs_acquisitions_per_op", 8.0),
            _row("k", "tcg", "acquisitions_per_op", 8.0, flavour="debug"),
            _row("k", "tcg", "acquisitions_per_op", 9.5, flavour="debug", cpus=2)]
    [(kernel, case, role, mine, exact, icount)] = cs_summary.agreement(rows, {})
    assert (kernel, role, mine, exact, icount) == ("k", "i_lock", 8.0, 8.0, None)


def test_compare_runs_tcg_cs_boots_per_kernel_and_repetition_under_tcg_only():
    from harness.run import matrix
    m = matrix.Matrix(kernels=["mainline", "base"], cpus=[1, 2], workloads=[], repeat=1,
                      cs_repeat=2)
    cs = [b for b in m.boots("tcg", 2) if b.mode == tcg_cs.MODE]
    assert [(b.kernel, b.flavour, b.cpus, b.repetition) for b in cs] == [
        ("mainline", "perf", 1, 1), ("base", "perf", 1, 1),
        ("mainline", "perf", 1, 2), ("base", "perf", 1, 2)]
    assert matrix.image_of(cs[0]) == ("mainline", "perf")  # the perf image carries the markers
    assert matrix.image_of(matrix.BootConfig("base", "perf", "tcg", 2, 1)) == ("base", "perf")
    assert not [b for b in m.boots("kvm", 2) if b.mode == tcg_cs.MODE]
    debug_only = matrix.Matrix(kernels=["mainline"], cpus=[1], workloads=[], repeat=1,
                               cs_repeat=2, flavours=("debug",))
    assert not [b for b in debug_only.boots("tcg", 2) if b.mode == tcg_cs.MODE]


def test_a_changed_plugin_measures_its_cells_anew(tmp_path, monkeypatch):
    from harness.kernels import kbuild
    from harness.run import matrix
    create = workloads.parse(REPO_ROOT / "workloads" / "create-unlink.wl")
    image = kbuild.KernelImage("base", "perf", "k1", tmp_path)
    config = matrix.BootConfig("base", "perf", tcg_cs.MODE, 1, 1)

    def key():
        return matrix.cell_key(image, "guest-a", config, create, "ext4", 1,
                               host.Machine("Some CPU", 2, "tcg"))
    before = key()
    monkeypatch.setattr(tcg_cs, "plugin_digest", lambda: "another plugin")
    assert key() != before


# -- version 2: cache lines and round robin (captured-mainline-lines.out, -rr.out) --

LINES = DATA / "captured-mainline-lines.out"
RR = DATA / "captured-mainline-rr.out"


def test_version_2_output_has_its_configuration_and_line_sums():
    out = parser.parse(LINES.read_text(), str(LINES))
    assert out.version == 2 and out.lines_tracked
    assert out.config["cold_lines"] == tcg_cs.COLD_LINES and out.config["vcpus"] == 1
    for window in out.windows.values():
        assert 0 < window.cold_accesses < window.accesses
        for s in window.sections:
            assert s.lines.lockline_written <= s.acquisitions
            assert s.lines.prev <= s.acquisitions * 64  # sanity: a bounded count
    # Every note the plugin keeps about itself is zero over the whole boot.
    checks = ("acquire_on_held", "exit_without_entry", "slow_mismatch", "no_hwaddr",
              "beyond_memory", "writer_forgotten", "held_overflow", "pending_overflow")
    assert {k: out.boot[k] for k in checks} == dict.fromkeys(checks, 0)


def test_line_figures_are_sums_over_a_roles_sections_per_acquisition():
    out = parser.parse(LINES.read_text(), str(LINES))
    window = out.windows["s01.create-unlink"]
    figures = {(f.lock, f.metric): f.value for f in tcg_cs.cs_figures.window_figures(
        "create-unlink", 2000, window, tcg_cs.with_tables(MAINLINE), out)}
    sb = [s for s in window.sections if s.lock_class == "&s->s_inode_list_lock"]
    n = sum(s.acquisitions for s in sb)
    total = sum((s.lines for s in sb), parser.Lines())
    assert figures["sb_list", "cs_lines_read_per_acq"] == pytest.approx(total.read / n)
    assert figures["sb_list", "cs_lines_written_per_acq"] == pytest.approx(total.written / n)
    assert figures["sb_list", "cs_lines_from_previous_per_acq"] == pytest.approx(total.prev / n)
    assert figures["sb_list", "cs_lockword_line_written_share"] == total.lockline_written / n
    assert figures["sb_list", "cs_cold_lines_per_acq"] == pytest.approx(total.cold / n)
    assert ("sb_list", "cs_chain_entries_per_acq") not in figures  # hash only
    assert figures["", "cs_cold_access_share"] == pytest.approx(
        window.cold_accesses / window.accesses)
    # Version 1 output (no lines tracked) gives no line figures at all.
    old = tcg_cs.cs_figures.window_figures("create-unlink", 2000,
                                           captured().windows["s01.create-unlink"],
                                           tcg_cs.with_tables(MAINLINE), captured())
    assert not [f for f in old if "lines" in f.metric or "cold" in f.metric]


@pytest.mark.parametrize("line, error", [
    ("trylock\ts01.a\tc\t10\t2\t1\t0\t5\t0\t0\t0", "inconsistent trylock"),  # retries > failures
    ("trylock\ts01.a\tc\t10\t2\t1\t1\t5\t0\t0", "malformed trylock"),
    ("tline\ts01.a\t7\tffff\tffff\t9\tRX\t5", "malformed tline"),
    ("tline\ts01.a\t7\tffff\tffff\t9\tR\t5", "tline line before its tsec"),
])
def test_bad_version_2_lines_name_the_line(line, error):
    text = f"tcg-cs\t2\nwindow\ts01.a\t100\t0\t0\t10\t1\n{line}\n"
    with pytest.raises(parser.TcgCsError, match=rf"x.out:3: {error}"):
        parser.parse(text, "x.out")


def test_round_robin_output_counts_failed_trylocks_per_site():
    out = parser.parse(RR.read_text(), str(RR))
    assert out.config["vcpus"] == 2 and not out.lines_tracked
    # Contended spin_locks went to the queued slow path and came back with
    # their lock; every lock function's outcome met its entry.
    assert out.boot["slow_acquired"] > 0
    assert out.boot["exit_without_entry"] == out.boot["acquire_on_held"] == 0
    trylocks = [t for w in out.windows.values() for t in w.trylocks]
    assert trylocks
    for t in trylocks:
        assert t.failed >= t.retry_failures >= t.retries
        assert t.retries + t.skips + t.abandoned >= 1


def test_trylock_figures_are_per_site_never_summed():
    out = parser.parse(RR.read_text(), str(RR))
    label, window = next((k, w) for k, w in out.windows.items() if w.trylocks)
    [t] = window.trylocks[:1]
    # No icache class failed a trylock in this mainline capture: its class
    # stands in for i_lock here.
    order = dataclasses.replace(MAINLINE, patterns={**MAINLINE.patterns,
                                                    "i_lock": (glob.escape(t.lock_class),)})
    symbols = vmlinux.read_system_map(DATA / "captured-mainline-rr.System.map")
    out = dataclasses.replace(out, site_names=tcg_cs.cs_figures.site_names(symbols, {t.site}))
    figures = {(f.lock, f.metric): f.value for f in tcg_cs.cs_figures.window_figures(
        label.split(".", 1)[1], 1000, window, order, out)}
    site = out.site_names[t.site]
    assert site.startswith(tuple(s.name + "+0x" for s in symbols))
    assert figures["i_lock", f"trylock_failures.{site}"] == t.failed
    assert figures["i_lock", f"trylock_failures_per_op.{site}"] == t.failed / 1000
    assert figures["i_lock", f"trylock_retries.{site}"] == t.retries
    if t.retries:
        assert figures["i_lock", f"trylock_retry_instructions_per_retry.{site}"] == \
            t.retry_instructions / t.retries
    sites = {m.split(".", 1)[1] for (_, m) in figures if m.startswith("trylock_failures.")}
    assert len(sites) == len({x.site for x in window.trylocks if x.lock_class == t.lock_class})
