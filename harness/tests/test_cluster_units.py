"""The pure parts of running elsewhere: node specs, rows per machine, memory, distcc env,
what a run does with cells every attempt failed, and many-CPU points for the model."""

import json

from harness import host
from harness.analysis import evidence, many_cpus
from harness.boot import qemu, runner
from harness.kernels import kbuild
from harness.layout import REPO_ROOT, Layout
from harness.report import document
from harness.run import execute, matrix, nodejob, tidy
from harness.run.estimate import StepTimes
from harness.tests.conftest import row
from harness.tests.conftest import make_run
from harness.tests import shipped

CREATE = shipped.workload("create-unlink")


def test_job_spec_round_trips_and_parses_the_declaration_it_carries(tmp_path):
    spec = nodejob.JobSpec("b1", "mainline", "debug", "k", "/s/images/x", "/s/guest/i.cpio",
                           {"ext4": "/s/guest/e.img"}, "tcg", 2, False,
                           [nodejob.StepSpec("create-unlink", CREATE.text, "ext4", 2)],
                           "header", "/s/lock-order", "/s/boots/b1")
    spec.save(tmp_path / "job.json")
    again = nodejob.JobSpec.load(tmp_path / "job.json")
    assert again == spec
    (step,) = again.plan_steps()
    assert step.workload.text == CREATE.text and (step.fs, step.procs) == ("ext4", 2)
    assert again.machine == qemu.Machine("tcg", 2)


def test_a_bad_job_spec_names_its_file(tmp_path):
    (tmp_path / "job.json").write_text("{}")
    try:
        nodejob.JobSpec.load(tmp_path / "job.json")
    except nodejob.NodeJobError as err:
        assert str(tmp_path / "job.json") in str(err)
    else:
        raise AssertionError("accepted an empty spec")


def test_node_of_a_boot_folder_round_trips(tmp_path):
    node = host.Node(host.Machine("Some CPU", 64, "kvm"), "n1", "QEMU 7.2", "6.1.0")
    node.save(tmp_path)
    assert host.Node.load(tmp_path) == node
    assert json.loads((tmp_path / host.NODE_FILE).read_text())["machine"]["id"] == \
        node.machine.id
    assert host.Node.load(tmp_path / "missing") is None


def test_guest_memory_grows_with_vcpus_and_stays_for_small_guests():
    assert [qemu.Machine("tcg", c).memory_mb for c in (1, 2, 4)] == [2048] * 3
    assert qemu.Machine("kvm", 16).memory_mb == 2048 + 12 * 128
    assert qemu.Machine("kvm", 64).memory_mb > qemu.Machine("kvm", 32).memory_mb


def test_distcc_only_when_asked(tmp_path):
    layout = Layout(tmp_path, tmp_path / "build", tmp_path / "ccache", tmp_path / "results")
    plain = kbuild.build_env(layout, {"PATH": "/usr/bin"})
    assert "CCACHE_PREFIX" not in plain
    assert kbuild.distcc_slots(plain) == 0
    over = kbuild.build_env(layout, {"PATH": "/usr/bin", "DISTCC_HOSTS": "a/4 b/8"})
    assert over["CCACHE_PREFIX"] == "distcc"
    # Everything that makes ccache hit is the same with and without distcc.
    assert {k: v for k, v in over.items() if k != "DISTCC_HOSTS" and k != "CCACHE_PREFIX"} == plain


def test_old_tables_without_a_machine_column_still_read(tmp_path):
    path = tmp_path / "tidy.tsv"
    tidy.write([row("mainline", "throughput", 1.0)], path)
    lines = path.read_text().splitlines()
    path.write_text("\n".join(line.rsplit("\t", 1)[0] for line in lines) + "\n")
    (old,) = tidy.read(path)
    assert old.machine == "" and old.value == 1.0


def test_report_of_two_machines_keeps_them_apart(tmp_path):
    run = make_run(tmp_path)
    rows = tidy.read(run / "tidy.tsv")
    other = [tidy.Row(**{**r.__dict__, "machine": "bbbb", "value": r.value * 2}) for r in rows]
    tidy.write([tidy.Row(**{**r.__dict__, "machine": "aaaa"}) for r in rows] + other,
               run / "tidy.tsv")
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["machines"] = {m: {"cpu_model": f"CPU {m}", "cores": 2, "accel": "tcg",
                                "hosts": [f"host-{m}"]} for m in ("aaaa", "bbbb")}
    (run / "manifest.json").write_text(json.dumps(manifest))
    md, _ = document.write(Layout(REPO_ROOT, tmp_path, tmp_path, tmp_path), run, "mainline")
    text = md.read_text()
    first, second = text.index("# On machine aaaa"), text.index("# On machine bbbb")
    assert text.count("## Every kernel against mainline") == 2 and first < second
    # Each machine's verdict sees its own numbers only: twice the values, the same changes.
    assert text[first:second].count("+60%") >= 1 and text[second:].count("+60%") >= 1
    assert (run / "charts" / "aaaa-exact-acquisitions.png").exists()
    assert (run / "charts" / "bbbb-exact-acquisitions.png").exists()


def test_oversubscribed_cells_are_named_and_not_timed(tmp_path):
    run = make_run(tmp_path)
    rows = tidy.read(run / "tidy.tsv")
    rows.append(row("mainline", "throughput", 1e9, mode="tcg-oversubscribed", cpus=16))
    tidy.write(rows, run / "tidy.tsv")
    assert all(v.cpus != 16 for v in evidence.verdicts(rows, "mainline"))
    md, _ = document.write(Layout(REPO_ROOT, tmp_path, tmp_path, tmp_path), run, "mainline")
    assert "Oversubscribed, not timed: 1 cell at 16 vCPUs (tcg-oversubscribed)" in md.read_text()


def test_many_cpu_points_are_real_kvm_cells_per_machine():
    case = evidence.Case("create-unlink", "tmpfs", "create-unlink")

    def kvm(value, cpus, machine, mode="kvm", rep=1):
        return tidy.Row(**{**row("mainline", "throughput", value, mode=mode, cpus=cpus,
                                 rep=rep).__dict__, "machine": machine})
    rows = [kvm(100, 1, "m1"), kvm(180, 2, "m1"), kvm(600, 8, "m1"), kvm(620, 8, "m1", rep=2),
            kvm(999, 16, "m1", mode="kvm-oversubscribed"), kvm(50, 1, "m2"),
            row("mainline", "throughput", 5.0, cpus=8)]  # TCG: not a point
    assert many_cpus.has_many_cpu_cells(rows)
    points = many_cpus.measured_points(rows, case)
    assert list(points) == ["m1"]  # m2 has no many-CPU cell
    assert [(p.cpus, p.throughput.n, p.throughput.mean) for p in points["m1"]["mainline"]] == [
        (1, 1, 100.0), (2, 1, 180.0), (8, 2, 610.0)]
    assert not many_cpus.has_many_cpu_cells(rows[:2] + rows[4:])


class FailingExecutor:
    """Every boot ends before its first step (a job that keeps failing on a cluster)."""
    parallel = 1

    def __init__(self):
        self.boots = 0

    def run(self, jobs, watch):
        for job in jobs:
            self.boots += 1
            job.directory.mkdir(parents=True)
            steps = tuple(runner.StepOutcome(s.id, s.label, "not-run", None, (), None, None)
                          for s in job.steps)
            yield job, runner.BootRecord(job.directory, "lost", 0.0, None, 0.0, (), (), steps)


def test_cells_every_attempt_failed_are_named_not_dropped(tmp_path):
    layout = Layout(REPO_ROOT, tmp_path / "build", tmp_path / "ccache", tmp_path / "results")
    m = matrix.Matrix(kernels=["mainline"], cpus=[1], workloads=[CREATE], repeat=1, cs_repeat=0,
                      icount_repeat=0, flavours=("perf",))
    image = kbuild.KernelImage("mainline", "perf", "k1", tmp_path)
    (boot,) = matrix.plan_boots(m, {("mainline", "perf"): image}, {CREATE.name: "g"},
                                host.Machine("cpu", 2, "tcg"))
    executor = FailingExecutor()
    order = execute.lockorder.parse(execute.lockorder.MAINLINE_FILE)
    result = execute.measure(layout, [(boot.config, image, boot.cells)], {"mainline": order},
                             tmp_path / "run", executor, StepTimes(layout), m.max_reruns)
    assert executor.boots == m.max_reruns + 2  # every attempt the run allows
    assert result.unmeasured == [cell.label for cell in boot.cells]
    assert result.rows == [] and not layout.cells.exists()
