"""KCSAN: the parser, tracing racing lines to patches, dedupe and classification, the plan.

captured-kcsan-mainline-c2.log is a real console: mainline's kcsan image
(configs/kcsan.config) over the default workloads at 2 vCPUs, 2026-12-07,
with two races of 6.1's own, one between two tasks and one between two timer
interrupts; captured-kcsan-unknown-origin-mainline-c4.log one boot of make
kcsan at 4 vCPUs with a race whose other access KCSAN did not see;
captured-kcsan-verbose-mainline-c2.log the image with lockdep and
KCSAN_VERBOSE (the held locks and irq trace of each task after its stack).
test_data/kcsan holds addr2line's and nm's real output for the first one's
frames, from the same image's vmlinux.
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest

from harness import host
from harness.boot import runner
from harness.guest import initramfs
from harness.kernels import kbuild, source
from harness.parsers import kcsan, kernel_reports
from harness.run import kcsan as kcsan_run
from harness.run import kcsan_origin, kcsan_summary
from harness.run.kcsan_origin import PatchRef, SourceLine
from harness.tests import shipped

DATA = Path(__file__).resolve().parent.parent / "test_data"
CONSOLE = (DATA / "console" / "captured-kcsan-mainline-c2.log").read_text()
ADDR2LINE = (DATA / "kcsan" / "addr2line-mainline-kcsan.txt").read_text()
NM = (DATA / "kcsan" / "nm-mainline-kcsan.txt").read_text()


def races():
    return kcsan.parse(CONSOLE)


# ------------------------------------------------------------------ parser

def test_both_races_of_the_capture_with_both_accesses():
    hash_race, timer_race = races()
    assert hash_race.title == "KCSAN: data-race in evict / insert_inode_locked"
    assert hash_race.line == 244 and hash_race.kind == "data-race"
    other, this = hash_race.accesses  # the watcher's access first, then the reporter's
    assert (other.type, other.size, other.task, other.cpu, other.marked) == \
        ("write (marked)", 8, 215, 1, True)
    assert other.frames[0] == kcsan.Frame("insert_inode_locked", 0x177, 0x2c0)
    assert [f.func for f in other.frames[1:3]] == ["__ext4_new_inode", "ext4_create"]
    assert len(other.frames) == 10 and len(this.frames) == 7
    assert (this.type, this.task, this.site) == ("read", 216, "evict+0x1cd")
    assert other.address == this.address == 0xffff888002959780
    assert hash_race.value_change == ("0xffff88807cf7ab70", "0xffff88800296e018")
    assert hash_race.reporter == "createunlink/216 on cpu 0"
    assert not hash_race.unknown_origin
    # both accesses of the timer race were made in interrupts
    assert [(a.task, a.cpu, a.function) for a in timer_race.accesses] == \
        [(None, 1, "hrtimer_active"), (None, 0, "__hrtimer_run_queues")]
    assert timer_race.value_change is None
    # compiler suffixes are not part of a function's name
    assert kcsan.Frame("call_timer_fn", 0xe, 0x90) in timer_race.accesses[0].frames


def test_a_race_of_unknown_origin_has_one_access_and_a_title_without_offsets():
    text = (DATA / "console" / "captured-kcsan-unknown-origin-mainline-c4.log").read_text()
    (race,) = kcsan.parse(text)
    assert race.unknown_origin
    # the headline names the frame with its offset (%pS): the title does not
    assert race.title == "KCSAN: data-race in virtqueue_get_buf_ctx_split"
    (access,) = race.accesses
    assert (access.type, access.size, access.task, access.cpu, access.site) == \
        ("read", 2, 1, 2, "virtqueue_get_buf_ctx_split+0x5e")
    assert len(access.frames) == 14 and race.value_change == ("0x0002", "0x0003")
    assert race.function_key == ("data-race", (("virtqueue_get_buf_ctx_split", "read"),))
    (report,) = kernel_reports.parse(text)
    assert report.title == race.title


def test_a_verbose_report_gives_the_locks_the_task_held_not_its_irq_trace_as_frames():
    text = (DATA / "console" / "captured-kcsan-verbose-mainline-c2.log").read_text()
    (race,) = kcsan.parse(text)
    irq, task = race.accesses
    assert irq.task is None and irq.held_locks == ()  # an interrupt holds no task's locks
    assert task.held_locks == ("(wq_completion)xfs-inodegc/vdb",
                               "(work_completion)(&(&gc->work)->work)", "sb_internal#2")
    # "hardirqs last enabled at (N): [<...>] _raw_spin_unlock_irqrestore+0x2b/0x40" and
    # the like follow the locks: they are not frames of the stack
    assert [f.func for f in task.frames][-2:] == ["kthread", "ret_from_fork"]
    assert len(task.frames) == 8
    assert race.reporter == "kworker/1:1/27 on cpu 1"


def test_the_keys_pair_sites_within_an_image_and_functions_across_kernels():
    hash_race, _ = races()
    assert hash_race.site_key == ("data-race", (("evict+0x1cd", "read"),
                                                ("insert_inode_locked+0x177", "write")))
    assert hash_race.function_key == ("data-race", (("evict", "read"),
                                                    ("insert_inode_locked", "write")))
    # the same race at other offsets (another kernel's code) is the same race
    moved = dataclasses.replace(hash_race, accesses=tuple(
        dataclasses.replace(a, frames=(dataclasses.replace(a.frames[0], offset=1),))
        for a in hash_race.accesses))
    assert moved.function_key == hash_race.function_key
    assert moved.site_key != hash_race.site_key


def test_kernel_reports_names_a_race_as_syzbot_does_and_leaves_lockdep_on():
    found = [r for r in kernel_reports.parse(CONSOLE)]
    assert [(r.kind, r.title) for r in found] == [
        ("data-race", "KCSAN: data-race in evict / insert_inode_locked"),
        ("data-race", "KCSAN: data-race in __hrtimer_run_queues / hrtimer_active")]
    assert not any(r.lockdep_off for r in found)
    # the report runs from the "=" line above its headline to the one closing it
    assert found[0].text.splitlines()[0].startswith("====")
    assert found[0].text.splitlines()[-1].startswith("====")
    assert "value changed" in found[0].text


def test_a_boot_says_kcsan_watched():
    assert kcsan.armed(CONSOLE) == kcsan.Armed(True, (4, 4))
    assert kcsan.armed(CONSOLE).ok
    without = "\n".join(l for l in CONSOLE.splitlines() if "selftest" not in l)
    assert not kcsan.armed(without).ok


def test_a_truncated_report_keeps_what_it_printed():
    cut = "\n".join(CONSOLE.splitlines()[:258])  # the console ends at the second access
    (race,) = kcsan.parse(cut)
    assert len(race.accesses) == 2 and race.accesses[1].frames == ()


def test_each_race_belongs_to_the_step_that_printed_it():
    spans = runner.step_lines(CONSOLE)
    owned = kcsan_run.step_races(races(), spans, sorted(spans))
    assert {s: [r.line for r in found] for s, found in owned.items() if found} == \
        {"s05": [244], "s09": [299]}
    # a race before the first step (at boot) is the first step's
    early = kcsan_run.step_races(races(), {"s05": (260, 270), "s09": (280, 400)}, ["s05", "s09"])
    assert [r.line for r in early["s05"]] == [244]


# ------------------------------------------------------------------ origins

def test_addr2line_gives_each_frame_its_inline_chain_innermost_first():
    chains = kcsan_origin.parse_addr2line(ADDR2LINE)
    evict = chains[0xffffffff811d03fc]
    assert [(l.function, l.file, l.line) for l in evict] == [
        ("hlist_unhashed", "include/linux/list.h", 876),
        ("inode_unhashed", "include/linux/fs.h", 722),
        ("remove_inode_hash", "include/linux/fs.h", 3290),
        ("evict", "fs/inode.c", 711)]
    assert chains[0xffffffff810dcc9a] == (SourceLine("hrtimer_active", "kernel/time/hrtimer.c",
                                                     1680),)  # "(discriminator 1)" dropped


def test_a_frame_is_the_byte_before_its_return_address():
    symbols = kcsan_origin.parse_nm(NM)
    (hash_race, _) = races()
    address = kcsan_origin.frame_address(symbols, hash_race.accesses[1].frames[0])
    assert address == 0xffffffff811d03fc  # evict+0x1cd - 1: the line addr2line placed
    assert kcsan_origin.frame_address(symbols, kcsan.Frame("no_such_function", 4, 8)) is None


def test_a_name_defined_twice_is_told_apart_by_its_size():
    symbols = {"show": [(0x1000, 0x40), (0x2000, 0x80)]}
    assert kcsan_origin.frame_address(symbols, kcsan.Frame("show", 0x10, 0x80)) == 0x200f
    assert kcsan_origin.frame_address(symbols, kcsan.Frame("show", 0x10, 0x40)) == 0x100f


def _patched_tree(layout) -> dict:
    """The fixture's tree with one patch commit on top of pristine/1, as an image's meta."""
    src = layout.src
    (src / "fs" / "inode.c").write_text("line one\nline two, locked\nline three\n")
    git = ["git", "-C", str(src), *source.GIT_OPTIONS]
    subprocess.run([*git, "commit", "-qam", "fs: lock line two"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    return {"kernel": "piggin", "flavour": "kcsan", "commit": commit, "package_version": "1",
            "patches": [{"series": "piggin", "file": "0004-fs-lock-line-two.patch",
                         "subject": "fs: lock line two"}]}


def test_blame_names_the_patch_that_wrote_a_line_and_6_1_for_the_rest(layout):
    blame = kcsan_origin.ImageBlame(layout.src, _patched_tree(layout))
    lines = [SourceLine("f", "fs/inode.c", 2), SourceLine("f", "fs/inode.c", 3)]
    assert blame.written_by(lines) == {
        ("fs/inode.c", 2): PatchRef("piggin", 4, "fs: lock line two"),
        ("fs/inode.c", 3): None}
    assert PatchRef("piggin", 4, "x").label == "piggin 0004"


def test_an_image_whose_commits_are_not_its_patches_is_refused(layout):
    meta = _patched_tree(layout)
    meta["patches"] = []
    with pytest.raises(kcsan_origin.OriginError, match="1 commits above pristine/1 but 0"):
        kcsan_origin.ImageBlame(layout.src, meta)


# ------------------------------------------------------------------ dedupe and classes

class Written:
    """Origins that say which lines a patch wrote: stands in for an image's vmlinux and tree."""

    def __init__(self, by_function: dict[str, PatchRef]) -> None:
        self.by_function = by_function

    def lines(self, frames):
        return {f: (SourceLine(f.func, "fs/x.c", f.offset),) for f in frames}

    def written_by(self, lines):
        return {(l.file, l.line): self.by_function.get(l.function) for l in lines}


PIGGIN_4 = PatchRef("piggin", 4, "fs: icache lock i_count with i_lock")


def cell(kernel: str, found, workload="create-unlink", status="ok", armed=True, cpus=2):
    return kcsan_summary.CellResult(kernel, cpus, workload, "ext4", cpus, status,
                                    f"kcsan/boots/{kernel}", "s01", 10.0, armed, tuple(found))


def test_a_race_mainline_gives_too_is_6_1s_on_every_kernel():
    hash_race, _ = races()
    results = [cell("mainline", [kcsan_run.trace(Written({}), hash_race)]),
               cell("piggin", [kcsan_run.trace(Written({}), hash_race)] * 2)]
    (d,) = kcsan_summary.distinct(results, {})
    assert (d.klass, d.fate, kcsan_summary.why(d)) == (kcsan_summary.SIXONE,
                                                       kcsan_summary.FATE_SIXONE, "mainline gave it")
    assert dict(d.kernels) == {"mainline": 1, "piggin": 2}
    assert dict(d.cells) == {"mainline": 1, "piggin": 1}
    # the two reports on piggin are one pair of access sites (KCSAN printed it twice)
    assert d.sites["piggin"] == {"data-race: evict+0x1cd (read) / insert_inode_locked+0x177 "
                                 "(write)"}


def test_a_race_in_lines_a_series_patch_wrote_is_the_series_and_names_the_patch():
    hash_race, timer_race = races()
    piggin = kcsan_run.trace(Written({"evict": PIGGIN_4}), hash_race)
    assert piggin.accesses[1].patch == "piggin 0004: fs: icache lock i_count with i_lock"
    assert piggin.accesses[0].patch is None  # insert_inode_locked: 6.1's lines
    results = [cell("mainline", [kcsan_run.trace(Written({}), timer_race)]),
               cell("piggin", [piggin])]
    own, sixone = kcsan_summary.distinct(results, {})
    assert (own.klass, own.fate) == (kcsan_summary.SERIES, kcsan_summary.UNEXPLAINED)
    assert kcsan_summary.why(own) == "piggin: piggin 0004: fs: icache lock i_count with i_lock"
    assert sixone.klass == kcsan_summary.SIXONE
    fates = kcsan_summary.read_fates(f"# read 2026-12-07\n{own.title}\tfixed in piggin 0004 v2\n")
    (own, _) = kcsan_summary.distinct(results, fates)
    assert own.fate == "fixed in piggin 0004 v2"


def test_a_race_only_a_series_gave_in_6_1s_lines_is_6_1s_and_says_who_called():
    hash_race, _ = races()
    # the racing frames are 6.1's; a patch wrote a caller's line (ext4_create's)
    traced = kcsan_run.trace(Written({"ext4_create": PIGGIN_4}), hash_race)
    assert traced.accesses[0].caller_patch.startswith("piggin 0004")
    (d,) = kcsan_summary.distinct([cell("mainline", []), cell("piggin", [traced])], {})
    assert d.klass == kcsan_summary.SIXONE
    assert kcsan_summary.why(d) == ("not on mainline, but no patch wrote its racing lines; "
                                    "reached through piggin 0004: fs: icache lock i_count "
                                    "with i_lock")


def test_a_race_in_a_patch_mainline_carries_too_is_a_common_patchs():
    hash_race, _ = races()
    stable = PatchRef("stable", 1, "dcache: re-check d_inode after relocking")
    traced = kcsan_run.trace(Written({"evict": stable}), hash_race)
    (d,) = kcsan_summary.distinct([cell("mainline", [traced]), cell("chinner", [traced])], {})
    assert (d.klass, d.fate) == (kcsan_summary.COMMON, kcsan_summary.FATE_COMMON)


def test_an_untraceable_image_still_classifies_by_mainline():
    hash_race, _ = races()
    traced = kcsan_run.trace("no vmlinux", hash_race)
    assert [a.lines for a in traced.accesses] == [(), ()]
    (d,) = kcsan_summary.distinct([cell("chinner", [traced])], {})
    assert d.klass == kcsan_summary.SIXONE


def test_fates_need_a_tab():
    with pytest.raises(ValueError, match="line 2: expected TITLE<tab>FATE"):
        kcsan_summary.read_fates("# comment\nKCSAN: data-race in a / b fixed\n")


def test_the_summary_counts_per_kernel_and_lists_each_race(tmp_path):
    hash_race, timer_race = races()
    results = [cell("mainline", [kcsan_run.trace(Written({}), hash_race)]),
               cell("mainline", [], workload="fstree", armed=False),
               cell("piggin", [kcsan_run.trace(Written({"hrtimer_active": PIGGIN_4}),
                                               timer_race)], status="warning")]
    meta = {"state": "Finished.", "workloads": ["create-unlink", "fstree"], "cpus": [2],
            "kernels": ["mainline", "piggin"], "finished": True,
            "images": {"piggin": {"key": "k", "patches": 15, "patches_digest": "d"}}}
    kcsan_summary.write(tmp_path, results, meta, {"mainline": 2, "piggin": 2, "chinner": 2}, {})
    text = (tmp_path / "summary.md").read_text()
    assert text.startswith("# KCSAN: 3 of 6 cells measured, 2 distinct races")
    assert "Races of the series' own: 1, 1 unexplained." in text
    assert "| mainline | 2 of 2 | ok 2 | 1 | 1 | 1 | 6.1's 1 |" in text
    assert "| piggin | 1 of 2 | warning 1 | 0 | 1 | 1 | the series' 1 |" in text
    assert "| chinner | 0 of 2 | - | 0 | 0 | 0 | 0 |" in text
    assert ("| KCSAN: data-race in __hrtimer_run_queues / hrtimer_active | **the series'** | "
            "piggin: piggin 0004: fs: icache lock i_count with i_lock | **unexplained** | "
            "piggin 1 (1 cell, 1 pair of sites) | kcsan/boots/piggin/console.log:299 |") in text
    assert "### KCSAN: data-race in __hrtimer_run_queues / hrtimer_active" in text
    summary = (tmp_path / "summary.json").read_text()
    assert '"by_class"' in summary and '"the series\'": 1' in summary


# ------------------------------------------------------------------ the plan

def setup_of(tmp_path, kernels=("piggin", "mainline")) -> kcsan_run.Setup:
    chosen = [shipped.workload(n) for n in ("create-unlink", "igetstorm-crowded")]
    images = {k: kbuild.KernelImage(k, "kcsan", f"key-{k}", tmp_path / k) for k in kernels}
    files = initramfs.GuestFiles(tmp_path / "initramfs", {}, {w.name: w.name for w in chosen})
    return kcsan_run.Setup(None, sorted(kernels, key=lambda k: k != "mainline"), chosen, (2, 4),
                           images, {}, files, host.Machine("cpu", 2, "tcg"), tmp_path, {})


def test_the_plan_boots_mainline_first_a_workload_each_at_its_most_processes(tmp_path):
    planned = kcsan_run.plan_cells(setup_of(tmp_path))
    assert [(c.kernel, c.cpus, c.workload.name, c.fs, c.procs) for c in planned[:7]] == [
        ("mainline", 2, "create-unlink", "tmpfs", 2), ("mainline", 2, "create-unlink", "ext4", 2),
        ("mainline", 2, "create-unlink", "xfs", 2),
        ("mainline", 2, "igetstorm-crowded", "tmpfs", 2),
        ("mainline", 2, "igetstorm-crowded", "ext4", 2),
        ("mainline", 4, "create-unlink", "tmpfs", 4), ("mainline", 4, "create-unlink", "ext4", 4)]
    assert {c.mode for c in planned if c.cpus == 4} == {"tcg-oversubscribed"}
    assert len({c.key for c in planned}) == len(planned) == 20
    boots = kcsan_run.boots_of(planned)
    assert len(boots) == 8 and [len(b) for b in boots[:2]] == [3, 2]
    # another image of piggin: its cells are new, mainline's stay
    again = setup_of(tmp_path)
    again.images["piggin"] = dataclasses.replace(again.images["piggin"], key="rebuilt")
    changed = {c.key for c in planned} - {c.key for c in kcsan_run.plan_cells(again)}
    assert len(changed) == 10 and all(c.kernel == "piggin" for c in planned if c.key in changed)


def test_a_budget_starts_no_boot_expected_to_end_past_it(tmp_path):
    boot = kcsan_run.boots_of(kcsan_run.plan_cells(setup_of(tmp_path)))[0]
    history = tuple(boot[0].history)
    state = kcsan_run.Progress(0.0, 600.0, {history: [100.0]})
    assert state.step_s(boot[0]) == 100.0
    assert state.step_s(boot[1]) == 100.0  # no step of its kind yet: its vCPU count's mean
    assert state.boot_s(boot) == 3 * 100.0 + kcsan_run.BOOT_OVERHEAD_S
    assert state.fits(boot)  # the first boot always starts
    state.boots.append({})
    state.started = __import__("time").monotonic() - 250.0
    assert not state.fits(boot)  # 250 s gone, 390 s expected: past 600 s
    assert kcsan_run.Progress(0.0, None, {}).left_s([boot]) is None


def test_a_run_boots_the_part_asked_for_and_summarises_the_whole_matrix(tmp_path):
    setup = dataclasses.replace(setup_of(tmp_path), boot_kernels=("piggin",), boot_cpus=(4,))
    planned = kcsan_run.plan_cells(setup)
    booted = [c for c in planned if setup.boots(c)]
    assert {(c.kernel, c.cpus) for c in booted} == {("piggin", 4)}
    assert len(planned) == 20 and len(booted) == 5
