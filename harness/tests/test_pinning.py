"""vCPU pinning: the host's NUMA layout, which core each vCPU gets, and QMP for real."""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from harness.boot import pinning, qemu


def fake_sys(root: Path, nodes: dict[int, str], siblings: dict[int, str]) -> Path:
    """A /sys with the given node cpulists and per-CPU hyperthread sibling lists."""
    for node, cpulist in nodes.items():
        d = root / "devices/system/node" / f"node{node}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(cpulist + "\n")
    for cpu, listed in siblings.items():
        d = root / "devices/system/cpu" / f"cpu{cpu}/topology"
        d.mkdir(parents=True)
        (d / "thread_siblings_list").write_text(listed + "\n")
    return root


# Two sockets of 4 cores with 2 threads each: threads n and n+8 share a core.
TWO_SOCKETS = ({0: "0-3,8-11", 1: "4-7,12-15"},
               {c: f"{c % 8},{c % 8 + 8}" for c in range(16)})


def test_cpulists_parse():
    assert pinning.parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert pinning.parse_cpulist("") == []


def test_topology_puts_one_thread_per_core_first(tmp_path):
    topo = pinning.read_topology(fake_sys(tmp_path, *TWO_SOCKETS))
    assert topo.nodes == {0: (0, 1, 2, 3, 8, 9, 10, 11), 1: (4, 5, 6, 7, 12, 13, 14, 15)}


def test_topology_without_numa_nodes_is_one_node(tmp_path):
    (tmp_path / "devices/system/cpu").mkdir(parents=True)
    (tmp_path / "devices/system/cpu/online").write_text("0-5\n")
    assert pinning.read_topology(tmp_path).nodes == {0: (0, 1, 2, 3, 4, 5)}


def test_vcpus_that_fit_stay_on_one_node_on_separate_cores(tmp_path):
    topo = pinning.read_topology(fake_sys(tmp_path, *TWO_SOCKETS))
    every = set(range(16))
    four = pinning.plan(4, topo, every)
    assert four.cpus == (0, 1, 2, 3) and four.numa_nodes == (0,)
    # Node 0 partly taken from us (a cluster job's cgroup): node 1 has more room.
    assert pinning.plan(4, topo, every - {0, 1}).numa_nodes == (1,)
    eight = pinning.plan(8, topo, every)
    assert eight.numa_nodes == (0,) and len(set(eight.cpus)) == 8


def test_vcpus_beyond_a_node_spread_and_beyond_the_host_are_not_pinned(tmp_path):
    topo = pinning.read_topology(fake_sys(tmp_path, *TWO_SOCKETS))
    twelve = pinning.plan(12, topo, set(range(16)))
    assert twelve.numa_nodes == (0, 1) and len(set(twelve.cpus)) == 12
    over = pinning.plan(32, topo, set(range(16)))
    assert over.cpus == () and "oversubscribed" in over.reason


@pytest.mark.boot
def test_vcpu_threads_found_over_qmp_and_pinned(tmp_path):
    """A real QEMU (paused, no guest) with 2 vCPUs: each vCPU thread gets its own core."""
    if not shutil.which(qemu.QEMU):
        pytest.skip(f"{qemu.QEMU} is not installed")
    cores = sorted(os.sched_getaffinity(0))
    control = Path(tempfile.mkdtemp(prefix="inode-duel-qmp-"))
    sock = control / "qmp.sock"
    proc = subprocess.Popen([qemu.QEMU, "-nodefaults", "-display", "none", "-S", "-accel", "tcg",
                             "-smp", "2", "-qmp", f"unix:{sock},server=on,wait=off"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        topo = pinning.Topology({0: tuple(cores)})
        record = pinning.pin(proc.pid, 2, sock, topo)
        threads = pinning.qmp_vcpu_threads(sock)
        affinity = {i: os.sched_getaffinity(tid) for i, tid in threads.items()}
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(control)
    if len(cores) < 2:
        assert record["method"] == "none"
        return
    assert record["method"] == "vcpu-threads"
    assert sorted(record["threads"]) == ["0", "1"]
    for index, item in record["threads"].items():
        assert item["thread"] == threads[int(index)]
        assert item["cpu"] == cores[int(index)]
        assert affinity[int(index)] == {cores[int(index)]}  # what the kernel says
    # QEMU's main thread was left alone.
    assert proc.pid not in {item["thread"] for item in record["threads"].values()}
