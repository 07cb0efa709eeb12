"""make faults: the faults of a step, how the guest arms them, what comes back, the summary.

The guest's shell functions run here in busybox sh against a scratch folder
laid out like debugfs (FAULTS_DEBUGFS, FAULTS_SYSBLOCK): the host kernel's
fault injection is never touched. The workload programs run here with
INODE_DUEL_FAULTS=1 and arm nothing (not the guest).
"""

import os
import subprocess
from pathlib import Path

import pytest

from harness.boot import channel, runner
from harness.guest import faults, plan, protocol
from harness.layout import REPO_ROOT, default_layout
from harness.parsers import fault_injection
from harness.run import faults as faults_run
from harness.run import faults_summary
from harness.run.faults_summary import CellResult, Seen
from harness.tests import shipped

ROOTFS = REPO_ROOT / "harness" / "guest" / "rootfs"
DATA = REPO_ROOT / "harness" / "test_data" / "faults"


def test_faults_are_drawn_from_seed_round_and_step_never_the_kernel():
    first = faults_run.draw_faults(1, 1, "torture", "ext4", 2)
    assert faults_run.draw_faults(1, 1, "torture", "ext4", 2) == first
    drawn = {faults_run.draw_faults(seed, r, w, fs, 2) for seed in (1, 2, 3) for r in (1, 2)
             for w in faults_run.FAULT_WORKLOADS for fs in protocol.FILESYSTEMS}
    assert len(drawn) > 10
    for f in drawn:
        assert f.slab_percent in faults_run.SLAB_PERCENT
        assert f.slab_times in faults_run.SLAB_TIMES
    tmpfs = [faults_run.draw_faults(1, r, w, "tmpfs", 2) for r in range(1, 20)
             for w in faults_run.FAULT_WORKLOADS]
    assert {(f.block_percent, f.block_times, f.block_scope) for f in tmpfs} == {(0, 0, "task")}
    for r in (1, 2):
        for w in faults_run.FAULT_WORKLOADS:
            scopes = {faults_run.draw_faults(1, r, w, fs, 2).block_scope for fs in ("ext4", "xfs")}
            assert scopes == set(faults_run.BLOCK_SCOPES)
    assert {f.page_percent for f in tmpfs} == {0, *faults_run.PAGE_PERCENT}


def test_a_faults_step_is_armed_before_run_step_and_read_back_after():
    settings = faults.Faults(2, 50, 0, 0, 1, 10, "disk")
    assert settings.label == "slab 2%x50, page off, block 1%x10 disk"
    assert faults.Faults(2, 50, 0, 0, 0, 0).label == "slab 2%x50, page off, block off"
    step = plan.Step("s01", shipped.workload("nsmix"), "ext4", 2, settings)
    assert step.label == "nsmix/ext4/p2 [slab 2%x50, page off, block 1%x10 disk]"
    lines = plan.render([step], 2, "test").splitlines()
    run = next(i for i, line in enumerate(lines) if line.startswith("run_step s01"))
    assert lines[run - 1] == "faults_arm /dev/vda 2 50 0 0 1 10 disk"
    assert lines[run + 1] == "faults_save s01"
    plain = plan.render([plan.Step("s01", shipped.workload("nsmix"), "ext4", 2)], 2, "test")
    assert "faults_" not in plain


def test_faults_boots_mark_the_inode_and_dentry_caches_for_failslab():
    cmdline = runner.boot_cmdline("faults", "tcg")
    assert "slub_debug=A,ext4_inode_cache,xfs_inode,xfs_ili,shmem_inode_cache,inode_cache," \
           "dentry" in cmdline.split()
    assert runner.detector_cmdline("faults", "tcg") in cmdline  # KASAN under TCG: slow
    assert runner.boot_cmdline("sanitize", "tcg") == \
        f"{runner.SEED_CRNG} {runner.detector_cmdline('sanitize', 'tcg')}"
    assert runner.boot_cmdline("debug", "tcg") == runner.SEED_CRNG


def scratch_debugfs(tmp_path: Path) -> dict[str, str]:
    debugfs, sysblock, slab = tmp_path / "debugfs", tmp_path / "block", tmp_path / "slab"
    for attr in faults.ATTRS:
        (debugfs / attr).mkdir(parents=True)
    (sysblock / "vda").mkdir(parents=True)
    for cache, marked in (("dentry", 1), ("ext4_inode_cache", 1), ("kmalloc-64", 0)):
        (slab / cache).mkdir(parents=True)
        (slab / cache / "failslab").write_text(f"{marked}\n")
    definitions = tmp_path / "protocol.sh"
    definitions.write_text(protocol.shell_definitions() + f"HARNESS_DIR='{tmp_path}'\n")
    return {"PATH": "/bin:/usr/bin", "INODE_DUEL_PROTOCOL": str(definitions),
            "FAULTS_DEBUGFS": str(debugfs), "FAULTS_SYSBLOCK": str(sysblock),
            "FAULTS_SLAB": str(slab)}


def guest_shell(tmp_path: Path, env: dict[str, str], script: str) -> subprocess.CompletedProcess:
    return subprocess.run(["/bin/busybox", "sh", "-c",
                           f". {ROOTFS / 'inode-duel.sh'}; . {ROOTFS / 'faults.sh'}; {script}"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=30,
                          check=True)


def test_the_guest_arms_task_filtered_faults_and_reports_what_was_injected(tmp_path):
    env = scratch_debugfs(tmp_path)
    debugfs, disk = Path(env["FAULTS_DEBUGFS"]), Path(env["FAULTS_SYSBLOCK"]) / "vda"
    # Armed; then the kernel's countdowns as a step would leave them; then saved.
    armed = guest_shell(tmp_path, env, 'faults_arm /dev/vda 2 50 0 0 1 10 task; '
                        'echo "$INODE_DUEL_FAULTS" > armed.env; '
                        f'echo 13 > {debugfs}/failslab/times; '
                        f'cat {disk}/make-it-fail > disk.armed; '
                        'exec 9> results.raw; faults_save s01; echo "[$INODE_DUEL_FAULTS]"')
    assert (tmp_path / "armed.env").read_text() == "1\n"
    assert (tmp_path / "disk.armed").read_text() == "1\n"
    assert armed.stdout == "[]\n"  # unset again
    for attr in faults.ATTRS:
        assert (debugfs / attr / "task-filter").read_text() == "Y\n"
        assert (debugfs / attr / "verbose").read_text() == "2\n"
        assert (debugfs / attr / "probability").read_text() == "0\n"  # off after the step
    assert (debugfs / "failslab" / "ignore-gfp-wait").read_text() == "N\n"
    assert (debugfs / "failslab" / "cache-filter").read_text() == "Y\n"
    assert (debugfs / "fail_page_alloc" / "min-order").read_text() == "1\n"
    assert (disk / "make-it-fail").read_text() == "0\n"
    received = channel.parse((tmp_path / "results.raw").read_bytes())
    record = fault_injection.parse_record(received.text("s01.faults"))
    assert record.error == ""
    assert record.caches == ("dentry", "ext4_inode_cache")
    # The probability read back is the one the step ran with (set, then saved).
    assert [(c.attr, c.times, c.left, c.injected) for c in record.counts] == [
        ("failslab", 50, 13, 37), ("fail_page_alloc", 0, 0, 0), ("fail_make_request", 10, 10, 0)]


def test_in_the_disk_scope_every_request_may_fail_while_the_program_holds_the_disk(tmp_path):
    env = scratch_debugfs(tmp_path)
    debugfs, disk = Path(env["FAULTS_DEBUGFS"]), Path(env["FAULTS_SYSBLOCK"]) / "vda"
    guest_shell(tmp_path, env, 'faults_arm /dev/vda 2 50 0 0 5 10 disk; '
                'echo "$INODE_DUEL_FAULTS_DISK" > disk.env; '
                f'cat {disk}/make-it-fail > disk.armed; '
                f'cat {debugfs}/fail_make_request/task-filter > block.filter; '
                'exec 9> results.raw; faults_save s01; echo "[$INODE_DUEL_FAULTS_DISK]" > after')
    # The program, not the harness, arms the disk (workloads/src/faults.h).
    assert (tmp_path / "disk.env").read_text() == f"{disk / 'make-it-fail'}\n"
    assert (tmp_path / "disk.armed").read_text() == "0\n"
    assert (tmp_path / "block.filter").read_text() == "N\n"
    assert (tmp_path / "after").read_text() == "[]\n"
    record = fault_injection.parse_record(
        channel.parse((tmp_path / "results.raw").read_bytes()).text("s01.faults"))
    assert [c.times for c in record.counts] == [50, 0, 10]


def test_a_kernel_without_fault_injection_says_so_in_the_record(tmp_path):
    env = scratch_debugfs(tmp_path)
    (Path(env["FAULTS_DEBUGFS"]) / "fail_make_request").rmdir()
    out = guest_shell(tmp_path, env, "faults_arm none 2 50 0 0 0 0 task; exec 9> results.raw; "
                      "faults_save s02")
    assert "not a faults kernel" in out.stdout
    record = fault_injection.parse_record(
        channel.parse((tmp_path / "results.raw").read_bytes()).text("s02.faults"))
    assert record.counts == () and "not a faults kernel" in record.error


def test_a_bad_record_line_is_named():
    with pytest.raises(fault_injection.FaultRecordError, match=r"s03.faults:2: .*left"):
        fault_injection.parse_record("failslab probability=1 times=5 left=5\n"
                                     "fail_page_alloc probability=1 times=5\n", "s03.faults")
    with pytest.raises(fault_injection.FaultRecordError, match=r"x:1: left=9 outside"):
        fault_injection.parse_record("failslab probability=1 times=5 left=9\n", "x")


@pytest.fixture(scope="module")
def programs(tmp_path_factory) -> Path:
    from harness.guest import initramfs
    out = tmp_path_factory.mktemp("bin")
    initramfs.compile_workloads(default_layout(), out)
    return out


def run_program(programs: Path, tmp_path: Path, *args: str, faults_step: bool) -> list[str]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    env = {"PATH": "/usr/bin:/bin", **({"INODE_DUEL_FAULTS": "1"} if faults_step else {})}
    out = subprocess.run([str(programs / args[0]), *args[1:], str(work)], env=env,
                         capture_output=True, text=True, timeout=120, check=True)
    assert not os.listdir(work)  # the teardown removed everything
    return out.stdout.splitlines()


def test_nsmix_keeps_its_table_in_step_with_the_filesystem(programs, tmp_path):
    """Nothing injected on the host: every operation the table allowed succeeded."""
    mix, errors = run_program(programs, tmp_path, "nsmix", "-p", "2", "-t", "2", "-S", "7",
                              faults_step=True)
    assert errors == "result phase=errors ops=0 elapsed_ns=0 procs=2"
    fields = dict(item.split("=") for item in mix.split()[1:])
    ops = ("create", "mkdir", "symlink", "link", "unlink", "rmdir", "rename", "exchange",
           "rendir", "stat")
    assert all(int(fields[op]) > 0 for op in ops), fields
    counters = set(fields) - {"phase", "ops", "elapsed_ns", "procs", "seed"}
    assert sum(int(fields[op]) for op in counters) == int(fields["ops"])


def test_outside_a_faults_step_the_programs_print_what_they_printed(programs, tmp_path):
    for args in (("createunlink", "-p", "2", "-n", "200"), ("fstree", "-p", "2", "-n", "50"),
                 ("torture", "-p", "2", "-t", "1"), ("sbwalk", "-p", "1", "-n", "20")):
        plain = run_program(programs, tmp_path, *args, faults_step=False)
        assert plain and not any("phase=errors" in line for line in plain), args
        armed = run_program(programs, tmp_path, *args, faults_step=True)
        assert armed[-1].startswith("result phase=errors ops=0 "), args
        assert [line.split()[1] for line in armed[:-1]] == [line.split()[1] for line in plain]


def result(kernel, *reports, workload="torture", fs="ext4", round_no=1, **kw) -> CellResult:
    fields = dict(kernel=kernel, round=round_no, workload=workload, fs=fs, cpus=2,
                  faults="slab 2%x50, page off, block 1%x10", status="ok",
                  boot=f"faults/seed1/boots/{kernel}", step="s01", wall_s=10.0,
                  injected={"failslab": 37, "fail_page_alloc": 0, "fail_make_request": 4},
                  bounds_reached=(), fault_error="", failed={"create.ENOMEM": 30, "stat.EIO": 2},
                  reports=tuple(Seen(kind, title, 100 + i)
                                for i, (kind, title) in enumerate(reports)),
                  sites={"__d_alloc < d_alloc < lookup_one_qstr_excl": 20})
    fields.update(kw)
    return CellResult(**fields)


def test_reports_are_set_apart_by_what_mainline_gave():
    warn = ("warn", "WARNING in ext4_evict_inode")
    results = [result("mainline", warn), result("mainline", workload="nsmix"),
               result("piggin", warn), result("piggin", ("bug", "KASAN: use-after-free in "
                                                          "iput"), workload="nsmix"),
               result("chinner", warn, workload="nsmix"),
               result("base", ("warn", "WARNING in evict"), workload="fstree")]
    verdicts = {(c.result.kernel, c.result.workload, c.report.title): c.verdict
                for c in faults_summary.classify(results)}
    assert verdicts == {
        ("mainline", "torture", warn[1]): faults_summary.OWN_CONTROL,
        ("piggin", "torture", warn[1]): faults_summary.OWN_SAME,
        ("piggin", "nsmix", "KASAN: use-after-free in iput"): faults_summary.FINDING,
        ("chinner", "nsmix", warn[1]): faults_summary.OWN_ELSEWHERE,
        ("base", "fstree", "WARNING in evict"): faults_summary.UNPAIRED}


def test_the_summary_puts_mainline_beside_each_series(tmp_path):
    results = [result("piggin", ("bug", "KASAN: use-after-free in iput")),
               result("mainline"), result("mainline", fs="xfs", status="lost",
                                          injected={}, failed={}, sites={},
                                          fault_error="no faults record")]
    meta = {"seed": 3, "rounds": [1], "cpus": [2], "workloads": ["torture"],
            "wall_s": 1800.0, "duration_s": None, "state": "Finished.", "boots": []}
    faults_summary.write(tmp_path, results, meta, {"mainline": 3, "piggin": 3})
    text = (tmp_path / "summary.md").read_text()
    lines = text.splitlines()
    assert lines[0] == "# Faults, seed 3: 3 of 6 cells measured, 0.50 h"
    assert "Findings (reports only a series gave): 1." in text
    assert "| mainline | 2 of 3 | lost 1, ok 1 | 37 / 0 / 4 | 32 | ENOMEM 30, EIO 2 | 0 |" in lines
    assert "| workload | fs | vCPUs | mainline | piggin |" in lines
    row = next(line for line in lines if line.startswith("| torture | ext4 | 2 |"))
    assert row.index("reports 0") < row.index("**findings 1**")
    assert "| torture | xfs | 2 | injected 0, failed 0 (0), reports 0 | not measured |" in lines
    finding = next(line for line in lines if line.startswith("| piggin | 1 | torture/ext4 |"))
    assert "**finding: only this series gave it**" in finding
    assert "faults/seed1/boots/piggin/console.log:100" in finding
    assert "not armed: no faults record" in text


def captured_console() -> str:
    import gzip
    return gzip.decompress((DATA / "console.log.gz").read_bytes()).decode()


def test_captured_faults_are_found_with_their_sites_and_tasks():
    console = captured_console()
    shown = fault_injection.parse_console(console)
    spans = runner.step_lines(console)
    per_step = {step: [f for f in shown if begin <= f.line <= end]
                for step, (begin, end) in spans.items()}
    assert {step: len(found) for step, found in per_step.items()} == \
        {"s01": 41, "s02": 20, "s03": 22}
    # Two vCPUs printed at once: the caller ids keep each stack whole.
    assert {f.task for f in per_step["s01"]} == {"createunlink"}
    assert {f.site for f in per_step["s01"]} == {
        "__d_alloc < d_alloc < d_alloc_parallel", "shmem_alloc_inode < alloc_inode < new_inode"}
    assert "ext4_alloc_inode < alloc_inode < iget_locked" in {f.site for f in per_step["s02"]}
    # The disk scope: the log's own write failed, in a kworker.
    [block] = [f for f in per_step["s03"] if f.attr == "fail_make_request"]
    assert block.task.startswith("kworker") and block.chain[0].startswith("xlog_")


def test_injected_takes_the_console_where_a_countdown_ran_out_short():
    console = captured_console()
    shown = fault_injection.parse_console(console)
    spans = runner.step_lines(console)
    got = {}
    for step, (begin, end) in spans.items():
        record = fault_injection.parse_record((DATA / f"{step}.faults").read_text())
        got[step] = fault_injection.injected(record,
                                             [f for f in shown if begin <= f.line <= end])
    # times=40, left=0, yet 41 faults on the console and 41 failed creates.
    assert got["s01"]["failslab"] == (41, True)
    # Page faults in slab refills are __GFP_NOWARN: the counter has 10, the console 1.
    assert got["s03"]["fail_page_alloc"] == (10, True)
    assert got["s03"]["fail_make_request"] == (1, False)
    assert got["s02"]["fail_make_request"] == (0, False)
    lines = {step: (DATA / f"{step}.out").read_text().splitlines()[-1] for step in got}
    assert lines["s01"].endswith("ops=41 elapsed_ns=0 procs=2 errors.create.ENOMEM=22 "
                                 "errors.create.ENOSPC=19")
