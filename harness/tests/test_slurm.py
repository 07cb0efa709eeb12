"""The Slurm executor on a real one-node cluster (munged, slurmctld, slurmd started here).

A small matrix (mainline debug, 1 vCPU, create-unlink) goes through the
cluster and through the local executor; the cells must agree in shape and
status, carry the node's machine, and resume. A task cancelled while it
boots must come back as a lost boot whose cells are measured again.
"""

import dataclasses
import json
import socket
import subprocess

import pytest

from harness import host
from harness.kernels import kbuild
from harness.guest import initramfs
from harness.layout import default_layout
from harness.run import compare, matrix, slurm, tidy
from harness.tests.minicluster import PARTITION, ClusterError, MiniCluster
from harness.tests import shipped

pytestmark = pytest.mark.boot


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    minicluster = MiniCluster(tmp_path_factory.mktemp("slurm"))
    try:
        minicluster.start()
    except ClusterError as err:
        pytest.skip(f"no one-node Slurm cluster on this machine: {err}")
    try:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("SLURM_CONF", str(minicluster.conf))
            yield minicluster
    finally:
        minicluster.stop()


@pytest.fixture(scope="module")
def built():
    layout = default_layout()
    image = kbuild.build(layout, "mainline", "debug")
    return layout, image, initramfs.prepare(layout, [shipped.workload("create-unlink")])


def small_matrix(layout) -> matrix.Matrix:
    create = shipped.workload("create-unlink")
    return matrix.Matrix(kernels=["mainline"], cpus=[1], workloads=[create], repeat=0,
                         flavours=("debug",))


def shape(rows: list[tidy.Row]) -> list[tuple]:
    return sorted({(r.kernel, r.flavour, r.mode, r.workload, r.fs, r.cpus, r.procs,
                    r.repetition, r.phase, r.lock, r.metric, r.status) for r in rows})


def test_the_cluster_runs_a_job(cluster):
    out = subprocess.run(["srun", "--partition", PARTITION, "hostname"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == socket.gethostname()


def test_compare_through_slurm_matches_the_local_executor_and_resumes(built, cluster,
                                                                       tmp_path):
    layout, _, _ = built
    wanted = small_matrix(layout)
    local_layout = dataclasses.replace(layout, results=tmp_path / "local")
    local = compare.run(local_layout, wanted, tmp_path / "local-run", accel="tcg")
    config = slurm.SlurmConfig(PARTITION, tmp_path / "shared")
    cluster_layout = dataclasses.replace(layout, results=tmp_path / "cluster")
    remote = compare.run(cluster_layout, wanted, tmp_path / "cluster-run", accel="tcg",
                         site=slurm.site(config))

    local_rows = tidy.read(tmp_path / "local-run" / "tidy.tsv")
    remote_rows = tidy.read(tmp_path / "cluster-run" / "tidy.tsv")
    assert [b.status for b in local.boots] == [b.status for b in remote.boots] == ["ok"]
    assert shape(remote_rows) == shape(local_rows)
    assert {r.status for r in remote_rows} == {"ok"}
    # Exact lock counts agree across executors. lock_stat also counts kernel
    # threads (the writeback flusher, the LRU shrinker): their few acquisitions
    # in a window depend on timing, up to 0.01 per op here.
    def exact(rows):
        return {(r.fs, r.lock): r.value for r in rows if r.metric == "acquisitions_per_op"}
    for key, value in exact(local_rows).items():
        assert exact(remote_rows)[key] == pytest.approx(value, rel=0.02, abs=0.01), key

    # The node reported its own machine, and the rows and manifest carry it.
    (boot,) = remote.boots
    node = host.Node.load(boot.directory)
    assert node.hostname == cluster.node
    assert boot.directory.parent == cluster_layout.boots
    for name in ("console.log", "results.raw", "host.json", "slurm.out"):
        assert (boot.directory / name).exists(), name
    assert {r.machine for r in remote_rows} == {node.machine.id}
    manifest = json.loads((tmp_path / "cluster-run" / "manifest.json").read_text())
    assert manifest["executor"]["kind"] == "slurm"
    assert manifest["machines"][node.machine.id]["hosts"] == [cluster.node]
    assert manifest["boots"][0]["node"] == cluster.node
    assert manifest["unmeasured"] == []
    assert not list((tmp_path / "shared" / "boots").iterdir())  # every folder came home

    again = compare.run(cluster_layout, wanted, tmp_path / "cluster-run2", accel="tcg",
                        site=slurm.site(config))
    assert again.boots == []
    assert shape(tidy.read(tmp_path / "cluster-run2" / "tidy.tsv")) == shape(remote_rows)


def test_a_cancelled_task_is_reported_lost_and_its_cells_measured_again(built, cluster,
                                                                         tmp_path):
    layout, _, _ = built
    cancelled = []

    def cancel_once(line: str) -> None:
        if not cancelled:
            cancelled.append(line)
            subprocess.run(["scancel", "--name", "inode-duel"], check=True)

    config = slurm.SlurmConfig(PARTITION, tmp_path / "shared", poll_s=0.5, lost_after_s=1.0)
    run_layout = dataclasses.replace(layout, results=tmp_path / "results")
    result = compare.run(run_layout, small_matrix(layout), tmp_path / "run", accel="tcg",
                         on_line=cancel_once, site=slurm.site(config))
    assert cancelled
    assert [b.status for b in result.boots] == ["lost", "ok"]
    lost = json.loads((result.boots[0].directory / slurm.SLURM_FILE).read_text())
    assert lost["state"] == "CANCELLED", lost
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert [b["status"] for b in manifest["boots"]] == ["lost", "ok"]
    assert manifest["unmeasured"] == []
    rows = tidy.read(tmp_path / "run" / "tidy.tsv")
    (create,) = small_matrix(layout).workloads
    assert {(r.fs, r.status) for r in rows if r.metric == "throughput"} == {
        (fs, "ok") for fs in create.filesystems}
