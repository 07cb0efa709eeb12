"""Planning: interleaved order, cell keys; the host-load guard of the measuring."""

from harness import host
from harness.boot import runner
from harness.kernels import kbuild
from harness.run import execute, matrix
from harness.tests import shipped


def test_kernels_are_interleaved_within_each_repetition():
    m = matrix.Matrix(kernels=["mainline", "base"], cpus=[1, 2], workloads=[], repeat=2,
                      icount_repeat=1)
    boots = m.boots("tcg", 2)
    perf = [(b.repetition, b.cpus, b.kernel) for b in boots
            if b.mode == "tcg" and b.flavour == "perf"]
    # A B A B, never A A B B: a slow phase of the host hits both kernels. Each
    # round (repetition, vCPUs) has every kernel once, in an order of its own.
    rounds = [perf[i:i + 2] for i in range(0, len(perf), 2)]
    assert [(r[0][0], r[0][1]) for r in rounds] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert all(sorted(k for _, _, k in r) == ["base", "mainline"] for r in rounds)
    icount = [b for b in boots if b.mode == "tcg-icount"]
    assert [(b.kernel, b.cpus) for b in icount] == [("mainline", 1), ("base", 1)]
    assert {b.mode for b in m.boots("kvm", 2)} == {"kvm"}


def test_the_order_within_each_timed_round_is_drawn_from_the_runs_seed():
    def order(seed):
        m = matrix.Matrix(kernels=["mainline", "base", "chinner", "piggin"], cpus=[1, 2],
                          workloads=[], repeat=8, order_seed=seed)
        return [b.kernel for b in m.boots("tcg", 2) if b.mode == "tcg" and b.flavour == "perf"]
    assert order(7) == order(7)  # the manifest's seed gives the run's order again
    assert order(7) != order(8)
    rounds = [order(7)[i:i + 4] for i in range(0, 64, 4)]
    assert len({tuple(r) for r in rounds}) > 1  # not one order repeated
    assert {r[0] for r in rounds} == {"mainline", "base", "chinner", "piggin"}
    untimed = matrix.Matrix(kernels=["mainline", "base"], cpus=[1], workloads=[],
                            order_seed=7).boots("tcg", 2)
    assert [b.kernel for b in untimed if b.flavour == "debug"] == ["mainline", "base"]


def test_more_vcpus_than_cores_is_marked_oversubscribed_and_never_timed():
    m = matrix.Matrix(kernels=["mainline"], cpus=[1, 2, 16], workloads=[], repeat=1,
                      icount_repeat=1)
    modes = {(b.flavour, b.cpus, b.mode) for b in m.boots("tcg", 2)}
    assert ("perf", 16, "tcg-oversubscribed") in modes
    assert ("debug", 16, "tcg-oversubscribed") in modes
    assert ("perf", 2, "tcg") in modes and ("perf", 1, "tcg-icount") in modes
    assert {b.mode for b in m.boots("kvm", 64) if b.cpus == 16} == {"kvm"}


def outcome(wall, others):
    return runner.StepOutcome("s01", "x", "ok", None, (), wall, others)


def test_host_load_guard():
    assert not execute.disturbed(outcome(10.0, 1.0))  # 0.1 core of others: fine
    assert execute.disturbed(outcome(10.0, 5.0))  # half a core: rerun
    assert not execute.disturbed(outcome(None, None))


def test_an_icount_step_with_a_stall_of_its_own_is_rerun_and_never_judged():
    from harness.boot import measure
    from harness.run import cells

    def step(longest_ns, wall=10.0, others=0.0):
        figures = (measure.Figure("walk", "", "throughput", 15000.0, "file/s"),
                   measure.Figure("walk", "", "max_ns", longest_ns, "ns"))
        numbers = measure.StepNumbers(0, False, figures, None, "")
        return runner.StepOutcome("s01", "fstree/xfs/p1", "ok", numbers, (), wall, others)
    icount = matrix.BootConfig("chinner", "perf", "tcg-icount", 1, 2)
    timed = matrix.BootConfig("chinner", "perf", "tcg", 1, 2)
    # the 2026-12-04 reference: one walk on XFS took 206 ms of emulated time
    assert execute.why_rerun(icount, step(206_647_268)) == \
        "stalled: one operation took 207 ms of emulated time"
    assert execute.why_rerun(icount, step(5_200_000)) == ""  # the slowest seen without idling
    assert execute.why_rerun(timed, step(206_647_268)) == ""  # wall-clock boots: no such rule
    assert execute.why_rerun(timed, step(1e6, 10.0, 5.0)).startswith("host busy")
    fstree = shipped.workload("fstree")
    cell = matrix.Cell(icount, fstree, "xfs", 1, "k", "m")
    assert {r.status for r in cells.rows_for(cell, step(206_647_268), 2)} == {"stalled"}
    assert {r.status for r in cells.rows_for(cell, step(5_200_000), 0)} == {"ok"}


def test_time_left_follows_the_boots_pace():
    running = execute._Running(0, {"s01": "a", "s02": "b", "s03": "c"},
                               {"s01": 10.0, "s02": 10.0, "s03": 20.0}, others_s=40.0)
    assert running.left("s01", 100.0) == 80.0  # nothing measured yet: the estimate
    # s01 took 30 s where 10 were expected (a busy host): three times as long to go.
    assert running.left("s02", 130.0) == 3.0 * (10.0 + 20.0 + 40.0)
    assert running.left("s03", 135.0) == 1.75 * (20.0 + 40.0)  # 35 s for 20 s


def test_cell_key_changes_with_everything_that_shapes_a_measurement(tmp_path):
    create = shipped.workload("create-unlink")
    image = kbuild.KernelImage("base", "perf", "k1", tmp_path)
    config = matrix.BootConfig("base", "perf", "tcg", 2, 1)
    here = host.Machine("Some CPU", 2, "tcg")

    def key(image=image, guest="initramfs-a", config=config, fs="ext4", machine=here):
        return matrix.cell_key(image, guest, config, create, fs, 2, machine)

    changed = [
        key(image=kbuild.KernelImage("base", "perf", "k2", tmp_path)),
        key(guest="initramfs-b"),
        key(fs="tmpfs"),
        key(config=matrix.BootConfig("base", "perf", "tcg", 2, 2)),
        key(machine=host.Machine("Another CPU", 2, "tcg")),
        key(machine=host.Machine("Some CPU", 64, "tcg")),
        key(machine=host.Machine("Some CPU", 2, "kvm")),
    ]
    assert key() == key()
    assert key() not in changed and len(set(changed)) == len(changed)


def test_plan_has_every_cell_of_every_boot(tmp_path):
    chosen = [shipped.workload("create-unlink"), shipped.workload("fstree")]
    m = matrix.Matrix(kernels=["mainline"], cpus=[1, 2], workloads=chosen, repeat=1,
                      icount_repeat=0, cs_repeat=0, flavours=("perf",))
    image = kbuild.KernelImage("mainline", "perf", "k1", tmp_path)
    boots = matrix.plan_boots(m, {("mainline", "perf"): image},
                              {w.name: "g" for w in chosen}, host.Machine("cpu", 2, "tcg"))
    assert [b.config.cpus for b in boots] == [1, 2]
    per_boot = sum(len(w.filesystems) * len(w.procs_for(1)) for w in chosen)
    assert len(boots[0].cells) == per_boot
    assert len({c.key for b in boots for c in b.cells}) == sum(len(b.cells) for b in boots)


def test_a_cell_measured_on_another_machine_takes_that_machines_key_and_mode(tmp_path):
    create = shipped.workload("create-unlink")
    m = matrix.Matrix(kernels=["mainline"], cpus=[8], workloads=[create], repeat=1,
                      icount_repeat=0, flavours=("perf",))
    image = kbuild.KernelImage("mainline", "perf", "k1", tmp_path)
    big, small = host.Machine("cpu", 64, "kvm"), host.Machine("cpu", 4, "kvm")
    digests = {"create-unlink": "g"}
    (boot,) = matrix.plan_boots(m, {("mainline", "perf"): image}, digests, big)
    cell = boot.cells[0]
    assert cell.machine == big.id and cell.config.mode == "kvm"
    moved = matrix.on_machine(cell, image, digests, small)
    assert moved.machine == small.id and moved.config.mode == "kvm-oversubscribed"
    (planned_small,) = matrix.plan_boots(m, {("mainline", "perf"): image}, digests, small)
    # The key is the one a run planned for that machine looks up: resume finds it.
    assert moved.key == planned_small.cells[0].key != cell.key


def test_sanitize_cells_under_tcg_are_keyed_on_their_hang_detector_thresholds(tmp_path,
                                                                             monkeypatch):
    create = shipped.workload("create-unlink")
    here = host.Machine("Some CPU", 2, "tcg")

    def key(flavour, mode="tcg"):
        image = kbuild.KernelImage("base", flavour, "k1", tmp_path)
        config = matrix.BootConfig("base", flavour, mode, 2, 1)
        return matrix.cell_key(image, "g", config, create, "ext4", 2, here)

    assert runner.detector_cmdline("sanitize", "tcg")
    assert not runner.detector_cmdline("sanitize", "kvm")
    assert not runner.detector_cmdline("debug", "tcg")
    before = {f: key(f) for f in ("perf", "debug", "sanitize")}
    kvm_before = key("sanitize", "kvm")
    monkeypatch.setattr(runner, "SLOW_GUEST_DETECTORS", ("rcupdate.rcu_cpu_stall_timeout=60",))
    assert key("sanitize") != before["sanitize"]
    assert key("perf") == before["perf"] and key("debug") == before["debug"]
    assert key("sanitize", "kvm") == kvm_before


def _declared(tmp_path, name, extra):
    text = (shipped.FOLDER / "create-unlink.wl").read_text().replace(
        "name     = create-unlink", f"name     = {name}")
    return shipped.workloads.parse(tmp_path / f"{name}.wl", text + extra)


def test_count_boots_are_debug_only_and_run_only_the_workloads_that_ask(tmp_path):
    plain = _declared(tmp_path, "plain", "")
    counted = _declared(tmp_path, "counted", "count-boots = yes\n")
    m = matrix.Matrix(kernels=["mainline"], cpus=[1, 2], workloads=[plain, counted], repeat=1,
                      icount_repeat=0, cs_repeat=0)
    images = {("mainline", f): kbuild.KernelImage("mainline", f, "k1", tmp_path)
              for f in ("perf", "debug")}
    boots = matrix.plan_boots(m, images, {"plain": "g", "counted": "g"},
                              host.Machine("cpu", 2, "tcg"))
    four = [b for b in boots if b.config.cpus == 4]
    assert [(b.config.flavour, b.config.mode) for b in four] == \
        [("debug", "tcg-oversubscribed")]
    assert {c.workload.name for c in four[0].cells} == {"counted"}
    assert {c.workload.name for b in boots if b.config.cpus == 2 for c in b.cells} == \
        {"plain", "counted"}
    # No workload asks, or no debug flavour, or 4 is a timed vCPU count already: none.
    assert not matrix.Matrix(kernels=["mainline"], cpus=[1], workloads=[plain]).counted_cpus
    assert not matrix.Matrix(kernels=["mainline"], cpus=[1], workloads=[counted],
                             flavours=("perf",)).counted_cpus
    assert not matrix.Matrix(kernels=["mainline"], cpus=[4], workloads=[counted]).counted_cpus


def test_kernel_parameters_get_boots_of_their_own_and_flavours_are_kept(tmp_path):
    plain = _declared(tmp_path, "plain", "")
    crowded = _declared(tmp_path, "crowded", "cmdline = ihash_entries=16\nflavours = debug\n")
    m = matrix.Matrix(kernels=["mainline"], cpus=[2], workloads=[plain, crowded], repeat=1,
                      icount_repeat=0, cs_repeat=0)
    images = {("mainline", f): kbuild.KernelImage("mainline", f, "k1", tmp_path)
              for f in ("perf", "debug")}
    boots = matrix.plan_boots(m, images, {"plain": "g", "crowded": "g"},
                              host.Machine("cpu", 2, "tcg"))
    shapes = [(b.config.flavour, b.config.cmdline, {c.workload.name for c in b.cells})
              for b in boots]
    assert shapes == [("debug", "", {"plain"}), ("debug", "ihash_entries=16", {"crowded"}),
                      ("perf", "", {"plain"})]
    debug_slugs = [b.config.slug for b in boots if b.config.flavour == "debug"]
    assert debug_slugs == ["mainline-debug-tcg-c2-r1",
                           "mainline-debug-tcg-c2-r1-ihash_entries-16"]
    assert "[ihash_entries=16]" in boots[1].config.label
    # The parameters are keyed into the cells through the declaration.
    keys = {c.key for b in boots for c in b.cells}
    assert len(keys) == sum(len(b.cells) for b in boots)


def test_a_default_compare_runs_mainline_and_the_two_designs_and_full_adds_base():
    from harness import cli
    from harness.layout import default_layout
    layout = default_layout()
    assert cli.compare_kernels(layout, full=False) == ["mainline", "chinner", "piggin"]
    assert cli.compare_kernels(layout, full=True) == cli.existing_kernels(layout)
    assert "base" in cli.compare_kernels(layout, full=True)


def test_the_duel_times_its_pair_for_more_rounds_and_prices_the_retries(tmp_path):
    from harness import cli
    from harness.boot import tcg_cs
    from harness.layout import default_layout
    kernels = cli.compare_kernels(default_layout(), full=False, duel=True)
    assert kernels == ["mainline", "chinner", "piggin", "chinner-2.6.39", "piggin-2010"]
    plain = _declared(tmp_path, "plain", "")
    counted = _declared(tmp_path, "counted", "count-boots = yes\n")
    m = matrix.Matrix(kernels=kernels, cpus=[1, 2], workloads=[plain, counted], repeat=3,
                      duel_repeat=6, rr_repeat=1, order_seed=3)
    boots = m.boots("tcg", 2)
    perf = [b for b in boots if b.flavour == "perf" and b.mode == "tcg"]
    for cpus in (1, 2):
        rounds = {}
        for b in perf:
            if b.cpus == cpus:
                rounds.setdefault(b.repetition, []).append(b.kernel)
        # Six rounds per vCPU count for the pair; every kernel in the first three only.
        assert sorted(rounds) == [1, 2, 3, 4, 5, 6]
        assert all(sorted(rounds[r]) == sorted(kernels) for r in (1, 2, 3))
        assert all(sorted(rounds[r]) == ["chinner", "piggin"] for r in (4, 5, 6))
    rr = [b for b in boots if b.mode == tcg_cs.MODE_RR]
    assert [(b.kernel, b.cpus) for b in rr] == [(k, matrix.RR_CPUS) for k in kernels]
    assert [w.name for w in m.workloads_for(rr[0])] == ["counted"]
    assert matrix.image_of(rr[0]) == (rr[0].kernel, tcg_cs.FLAVOUR)
    # Without the pair, no extra rounds.
    alone = matrix.Matrix(kernels=["mainline"], cpus=[1], workloads=[plain], repeat=2,
                          duel_repeat=6)
    assert {b.repetition for b in alone.boots("tcg", 2) if b.flavour == "perf"
            and b.mode == "tcg"} == {1, 2}
