"""The model's inputs from a run: sources, fallbacks, scopes, bucket counts; validation."""

import dataclasses
import json

import pytest

from harness import cli, lockscope
from harness.analysis import machines, queueing, scaling_inputs
from harness.analysis import source_lines
from harness.analysis import scaling_validation
from harness.layout import default_layout
from harness.run import tidy
from harness.tests.conftest import CASE, lock_rows, mainline_rows
from harness.tests.conftest import scaling_row as row









def test_fallback_inputs_are_derived_and_labelled(tmp_path):
    inputs = scaling_inputs.case_inputs(default_layout(), mainline_rows(), {}, "mainline", CASE)
    assert inputs.insn_per_op == pytest.approx(20000.0)
    assert inputs.insn_source == scaling_inputs.FALLBACK_INSN
    assert "lockdep" in inputs.hold_source and "fallback" in inputs.hold_source
    assert inputs.fallbacks == ["instructions/op", "sb_list hold", "i_lock hold"]
    profile = inputs.machine_profile(0.5)  # 10 µs per operation
    locks = {lock.name: lock for lock in profile.locks}
    assert locks["sb_list"].hold_ns == pytest.approx(0.01 * 10000)  # 10 µs of 1000 µs
    assert locks["sb_list"].shared and not locks["i_lock"].shared
    assert profile.think_ns == pytest.approx(10000 - 2 * 100 - 8 * 50)
    assert queueing.solve(profile, 1).at(1).ops_per_s == pytest.approx(1e5)


def test_tcg_cs_counts_replace_both_fallbacks():
    rows = mainline_rows() + [
        row("mainline", "perf", "tcg-cs", 1, 1, "", "instructions_per_op", 16000.0),
        row("mainline", "perf", "tcg-cs", 1, 1, "sb_list", "cs_instructions_per_acq", 80.0),
        row("mainline", "perf", "tcg-cs", 1, 1, "i_lock", "cs_instructions_per_acq", 40.0)]
    inputs = scaling_inputs.case_inputs(default_layout(), rows, {}, "mainline", CASE)
    assert inputs.insn_per_op == 16000.0 and inputs.insn_source == scaling_inputs.CS_INSN
    assert inputs.hold_source == scaling_inputs.CS_HOLD and inputs.fallbacks == []
    locks = {lock.name: lock for lock in inputs.machine_profile(0.5).locks}
    assert locks["sb_list"].hold_ns == pytest.approx(40.0)
    # The debug-time profile keeps lock_stat's shares: it is compared with lock_stat.
    debug = {lock.name: lock for lock in inputs.debug_profile().locks}
    assert debug["sb_list"].hold_ns == pytest.approx(10000.0)


def test_a_role_the_case_never_took_stays_out_of_the_model():
    # lock_stat's zero for wb (the flusher never ran in the window): no queue,
    # and no fallback hold time reported for a lock nobody held.
    rows = mainline_rows() + lock_rows("mainline", 1, 1, 1000.0, [("wb", 0.0, 0.0, 0, 0)])[1:]
    rows += [
        row("mainline", "perf", "tcg-cs", 1, 1, "", "instructions_per_op", 16000.0),
        row("mainline", "perf", "tcg-cs", 1, 1, "sb_list", "cs_instructions_per_acq", 80.0),
        row("mainline", "perf", "tcg-cs", 1, 1, "i_lock", "cs_instructions_per_acq", 40.0)]
    inputs = scaling_inputs.case_inputs(default_layout(), rows, {}, "mainline", CASE)
    assert [r.role for r in inputs.roles] == ["sb_list", "i_lock"]
    assert inputs.hold_source == scaling_inputs.CS_HOLD


def test_nested_roles_and_bucket_counts_from_a_boot_console(tmp_path):
    layout = default_layout()
    run = tmp_path / "run"
    boot = run / "boots" / "20261203-120000-chinner-perf-tcg-c1-r1"
    boot.mkdir(parents=True)
    (boot / "plan.sh").write_text("# inode-duel boot x\n# kernel chinner (abc), perf, tcg, "
                                  "1 vCPUs\n")
    (boot / "console.log").write_text(
        "[    0.000000] Inode-cache hash table entries: 65536 (order: 7, 524288 bytes)\n")
    tables = scaling_inputs.hash_table_sizes(run)
    assert tables["chinner"]["Inode-cache"].entries == 65536
    rows = mainline_rows() + [dataclasses.replace(r, kernel=k) for r in mainline_rows()
                              for k in ("base", "chinner")]
    rows += lock_rows("base", 1, 1, 1000.0, [("global", 3.0, 20.0, 0, 0)])
    rows += lock_rows("chinner", 1, 1, 1000.0, [("hash", 2.0, 4.0, 0, 0)])
    base = scaling_inputs.case_inputs(layout, rows, tables, "base", CASE)
    names = [lock.name for lock in base.machine_profile().locks]
    assert "sb_list" not in names and "global" in names  # sb_list is under global in base
    chinner = scaling_inputs.case_inputs(layout, rows, tables, "chinner", CASE)
    hash_lock = next(l for l in chinner.machine_profile().locks if l.name == "hash")
    assert (hash_lock.instances, hash_lock.kind, hash_lock.shared) == (65536, "bitlock", True)
    assert next(l for l in chinner.debug_profile().locks if l.name == "hash").kind == "qspinlock"
    # No console for piggin-like kernels: the buckets never queue, and the inputs say so.
    no_console = scaling_inputs.case_inputs(layout, rows, {}, "chinner", CASE)
    assert not next(l for l in no_console.machine_profile().locks if l.name == "hash").shared
    assert any("no console" in note for note in no_console.notes)


def test_recorded_table_sizes_serve_a_run_without_boots(tmp_path):
    (tmp_path / "scaling.json").write_text(json.dumps({"hash_tables": {"piggin": {
        "Inode-cache": {"entries": 131072, "source": "console of boot b1"}}}}))
    size = scaling_inputs.hash_table_sizes(tmp_path)["piggin"]["Inode-cache"]
    assert (size.entries, size.source) == (131072, "console of boot b1")


def test_two_cpu_contention_is_predicted_from_one_cpu_alone(tmp_path):
    rows = mainline_rows()
    inputs = scaling_inputs.run_inputs(default_layout(), tmp_path, rows, ["mainline"])
    (check,) = [c for c in scaling_validation.lock_checks(rows, inputs) if c.role == "sb_list"]
    # Closed form at N = 2 without hand-off: the other CPU holds the lock a share
    # U = X(1) * A * H = 1000/s * 2 * 10 µs = 0.02 of the time; per op A * U = 0.04.
    assert check.predicted_contentions == pytest.approx(0.04)
    assert check.measured_contentions == 0.05 and check.in_aim
    assert check.contention_error == pytest.approx(-0.2)
    # A workload with a process looping beside its workers is a class of its own.
    (apart,) = [c for c in scaling_validation.lock_checks(rows, inputs, {CASE})
                if c.role == "sb_list"]
    assert not apart.symmetric and not apart.in_aim and apart.together is None
    summary = scaling_validation.ErrorSummary.of([-0.2, 0.1, -0.4])
    assert summary.median == pytest.approx(-0.2) and summary.median_abs == pytest.approx(0.2)
    (i_lock,) = [c for c in scaling_validation.lock_checks(rows, inputs) if c.role == "i_lock"]
    assert i_lock.modelled_as == "per-inode" and i_lock.predicted_contentions == 0
    (ratio,) = scaling_validation.ratio_checks(rows, inputs)
    assert ratio.measured == pytest.approx(18000 / 10000)
    assert 1.9 < ratio.predicted < 2.0
    assert ratio.measured_low < ratio.measured < ratio.measured_high


def test_line_rows_replace_the_source_counts_and_nest():
    rows = mainline_rows() + [
        row("mainline", "perf", "tcg-cs", 1, 1, "", "instructions_per_op", 16000.0),
        row("mainline", "perf", "tcg-cs", 1, 1, "sb_list", "cs_instructions_per_acq", 80.0),
        row("mainline", "perf", "tcg-cs", 1, 1, "sb_list", "cs_lines_from_previous_per_acq",
            2.5),
        row("mainline", "perf", "tcg-cs", 1, 1, "sb_list", "cs_lockword_line_written_share",
            0.5),
        row("mainline", "perf", "tcg-cs", 1, 1, "sb_list", "cs_cold_lines_per_acq", 1.25),
        row("mainline", "perf", "tcg-cs", 1, 1, "sb_list", "cs_inside_share.i_lock", 0.5),
        row("mainline", "perf", "tcg-cs", 1, 1, "i_lock", "cs_instructions_per_acq", 40.0)]
    inputs = scaling_inputs.case_inputs(default_layout(), rows, {}, "mainline", CASE)
    roles = {r.role: r for r in inputs.roles}
    assert roles["sb_list"].counted == scaling_inputs.LineCounts(2.5, 0.5, 1.25,
                                                               scaling_inputs.CS_LINES)
    # i_lock has no line rows: the hand count from the source, labelled.
    assert roles["i_lock"].counted.source == scaling_inputs.SOURCE_LINES
    assert roles["i_lock"].counted.from_previous == source_lines.I_LOCK.from_previous
    locks = {lock.name: lock for lock in inputs.machine_profile(0.5).locks}
    assert (locks["sb_list"].lines_from_previous, locks["sb_list"].cold_lines) == (2.5, 1.25)
    assert (locks["sb_list"].inside, locks["sb_list"].inside_share) == ("i_lock", 0.5)
    # Half the sb list sections run inside i_lock's: their 40 ns are counted once.
    profile = inputs.machine_profile(0.5)
    assert profile.think_ns == pytest.approx(8000 - 2 * 40 * 0.5 - 8 * 20)
    debug = {lock.name: lock for lock in inputs.debug_profile().locks}
    assert debug["sb_list"].lines_from_previous == 0  # emulated time: no line costs


def test_blocked_time_and_shared_inodes_reach_the_profile(tmp_path):
    rows = mainline_rows() + [row("mainline", "perf", "tcg", 1, 1, "", "blocked_ns_per_op",
                                  3000.0, unit="ns")]
    inputs = scaling_inputs.case_inputs(default_layout(), rows, {}, "mainline", CASE)
    assert inputs.blocked_ns_per_op == 3000.0
    profile = inputs.machine_profile(0.5)
    assert profile.blocked_ns == 3000.0
    assert queueing.solve(profile, 1).at(1).ops_per_s == pytest.approx(1e9 / 13000)
    hot = dataclasses.replace(inputs, shared_inodes=2).machine_profile(0.5)
    assert hot.shared_inodes == 2 and any(lock.name == "i_lock" for lock in hot.queued)


def test_predict_command_on_a_run_and_on_a_profile(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    tidy.write(mainline_rows(), run / "tidy.tsv")
    assert cli.main(["predict", str(run), "--cpus", "1,2,64", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (case,) = out["cases"]
    assert case["kernel"] == "mainline" and case["cpus"] == [1, 2, 64]
    assert case["bottleneck"] == "sb_list" and "prediction" in out["knobs"]["note"]
    assert set(case["machines"]) == {m.key for m in machines.MACHINES}
    assert case["checks"] == {} and case["machine"] == machines.DEFAULT
    assert case["inputs"]["instructions_source"] == scaling_inputs.FALLBACK_INSN
    assert case["inputs"]["fallbacks"] == ["instructions/op", "sb_list hold", "i_lock hold"]
    assert case["inputs"]["lines_source"] == scaling_inputs.SOURCE_LINES
    low, high = case["ops_per_s_band"][2]
    assert low <= case["ops_per_s"][2] <= high
    profile = tmp_path / "p.json"
    profile.write_text(json.dumps(case["profile"]))
    assert cli.main(["predict", "--profile", str(profile), "--cpus", "1", "2", "64",
                     "--machine", machines.DEFAULT, "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["ops_per_s"] == pytest.approx(case["ops_per_s"])
    # A profile of issue 14's format (no lines, no machine): t 100 ns, m 100 ns.
    profile.write_text('{"think_ns": 9000, "locks": [{"name": "x", "acquisitions_per_op": 2, '
                       '"hold_ns": 50}]}')
    assert cli.main(["predict", "--profile", str(profile), "--cpus", "1,64", "--json"]) == 0
    old = json.loads(capsys.readouterr().out)
    assert old["ops_per_s"][0] == pytest.approx(1e9 / 9100)
    assert old["ops_per_s"][1] <= 1e9 / (2 * 50 + 2 * 100) * 1.0001
    profile.write_text('{"think_ns": 5, "locks": [{"name": "x", "acquisitions_per_op": 1}]}')
    assert cli.main(["predict", "--profile", str(profile), "--json"]) == 1
    assert f"{profile}: locks[0].hold_ns: missing" in capsys.readouterr().err


def test_a_manual_boot_is_known_by_its_image_folder(tmp_path):
    boot = tmp_path / "boots" / "20261203-183000-mainline-debug-manual"
    boot.mkdir(parents=True)
    (boot / "plan.sh").write_text("# manual boot\n")
    (boot / "summary.json").write_text(json.dumps(
        {"image": "/work/main/build/images/mainline-debug-d4a094542ede0508"}))
    assert scaling_inputs.boot_kernel(boot) == ("mainline", "debug")
    (boot / "summary.json").write_text(json.dumps({"image": "/somewhere/odd"}))
    assert scaling_inputs.boot_kernel(boot) is None


def test_the_workload_declaration_says_how_many_inodes_the_workers_share(tmp_path):
    layout = dataclasses.replace(default_layout(), repo=tmp_path)
    (tmp_path / "workloads").mkdir()
    (tmp_path / "workloads" / "hot.wl").write_text(
        "name = hot\nsummary = s\nrun = true\noutput = none\nfs = tmpfs\nshared-inodes = 4\n")
    assert scaling_inputs._shared_inodes(layout, "hot") == 4
    assert scaling_inputs._shared_inodes(layout, "absent") is None


def test_a_workloads_own_hash_size_sets_its_buckets():
    # igetstorm-crowded boots with ihash_entries=16: its chains are the guest's 16, not the
    # default table the perf boots' consoles announce (the crowding the case exists for).
    layout = default_layout()
    assert scaling_inputs._declared_entries(layout, "igetstorm-crowded", "Inode-cache") == 16
    assert scaling_inputs._declared_entries(layout, "igetstorm", "Inode-cache") is None
    assert scaling_inputs._declared_entries(layout, "igetstorm-crowded", None) is None
    scope = lockscope.RoleScope("hash", "per-bucket", "Inode-cache")
    notes: list[str] = []
    tables = {"chinner": {"Inode-cache": scaling_inputs.TableSize(1 << 17, "console")}}
    assert scaling_inputs._instances(scope, tables, "chinner", notes, 16) == 16
    assert scaling_inputs._instances(scope, tables, "chinner", notes) == 1 << 17


def test_failed_trylocks_at_two_vcpus_round_robin_reach_the_model():
    rows = mainline_rows() + [
        row("mainline", "perf", "tcg-cs", 1, 1, "", "instructions_per_op", 16000.0),
        row("mainline", "perf", "tcg-cs", 1, 1, "i_lock", "cs_instructions_per_acq", 40.0)]
    for rep, (a, b) in enumerate(((0.25, 0.15), (0.35, 0.25)), 1):  # two sites, two boots
        for site, failures in (("find_inode_fast+0x5c", a), ("writeback_sb_inodes+0x1f0", b)):
            rows += [row("mainline", "perf", "tcg-cs-rr", 2, 2, "i_lock",
                         f"trylock_failures_per_op.{site}", failures, rep),
                     row("mainline", "perf", "tcg-cs-rr", 2, 2, "i_lock",
                         f"trylock_retry_instructions_per_op.{site}", failures * 120.0, rep)]
    inputs = scaling_inputs.case_inputs(default_layout(), rows, {}, "mainline", CASE)
    i_lock = next(r for r in inputs.roles if r.role == "i_lock")
    assert i_lock.retries_at_two == pytest.approx(0.5)  # (0.4 + 0.6) / 2 boots
    assert i_lock.retry_instructions == pytest.approx(120.0)
    lock = next(lk for lk in inputs.machine_profile(0.5).locks if lk.name == "i_lock")
    assert lock.retries_at_two == pytest.approx(0.5) and lock.retry_ns == pytest.approx(60.0)
    # The debug-time profile (validation against lock_stat) carries none.
    assert all(lk.retries_at_two == 0 for lk in inputs.debug_profile().locks)
