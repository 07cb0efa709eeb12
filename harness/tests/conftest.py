"""Shared test fixtures and helpers: a tiny kernel repository and series folders,
tidy rows and small run folders."""

import json
import subprocess

import pytest

from harness.analysis import evidence
from harness.kernels import kbuild, series, source
from harness.layout import REPO_ROOT, Layout
from harness.run import tidy

PATCH = """\
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Test <test@localhost>
Date: Thu, 3 Dec 2026 00:00:00 +0000
Subject: [PATCH] {subject}

Why this change.

Signed-off-by: Test <test@localhost>
---
 fs/inode.c | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/fs/inode.c b/fs/inode.c
--- a/fs/inode.c
+++ b/fs/inode.c
@@ -1,3 +1,3 @@
 line one
-{old}
+{new}
 line three
--
2.39.5
"""


@pytest.fixture
def layout(tmp_path) -> Layout:
    repo = tmp_path / "repo"
    src = tmp_path / "build" / "src"
    (src / "fs").mkdir(parents=True)
    (src / "fs" / "inode.c").write_text("line one\nline two\nline three\n")
    git = ["git", "-C", str(src), *source.GIT_OPTIONS]
    subprocess.run(["git", "init", "-q", str(src)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "pristine"], check=True)
    subprocess.run([*git, "tag", "pristine/1"], check=True)
    for name in series.BISECTABLE:
        (repo / f"series-{name}").mkdir(parents=True)
        (repo / f"series-{name}" / "series").write_text("")
    return Layout(repo=repo, build=tmp_path / "build", ccache=tmp_path / "ccache",
                  results=tmp_path / "results")


INFO = source.SourceInfo("1", "6.1.0", "pristine/1")


def add_patch(layout, name, filename, **fields):
    d = layout.series_dir(name)
    (d / filename).write_text(PATCH.format(**fields))
    with open(d / "series", "a") as f:
        f.write(filename + "\n")


def row(kernel, metric, value, *, flavour="perf", mode="tcg", cpus=2, rep=1, lock="",
        phase="create-unlink", fs="tmpfs", cell=None, status="ok"):
    return tidy.Row(kernel, flavour, mode, "create-unlink", fs, cpus, cpus, rep, phase, lock,
                    metric, value, "", status, cell or f"{kernel}-{flavour}-{mode}-{cpus}-{rep}")


def make_run(tmp_path):
    rows = []
    for rep, (m, b) in enumerate(((1000, 500), (1010, 505), (990, 495)), 1):
        for cpus in (1, 2):
            rows += [row("mainline", "throughput", m * cpus, rep=rep, cpus=cpus),
                     row("base", "throughput", b, rep=rep, cpus=cpus)]
    for kernel, extra in (("mainline", 0.0), ("base", 6.0)):
        for lock, acq, hold in (("i_lock", 8.0, 40.0), ("sb_list", 2.0, 6.0),
                                ("global", extra, 30.0 if extra else 0.0)):
            if acq:
                rows.append(row(kernel, "acquisitions_per_op", acq, flavour="debug", lock=lock))
                rows.append(row(kernel, "holdtime_per_op", hold, flavour="debug", lock=lock))
                rows.append(row(kernel, "contentions_per_op", 0.01, flavour="debug", lock=lock))
        rows.append(row(kernel, "lockdep_reports", 0, flavour="debug"))
    rows.append(row("base", "retries.sb_walk_per_op", 0.25, flavour="debug"))
    run = tmp_path / "run"
    run.mkdir()
    tidy.write(rows, run / "tidy.tsv")
    manifest = {
        "created": "2026-12-03T10:00:00+0000", "wall_seconds": 600.0, "accel": "tcg",
        "host": {"cpus": 2, "qemu": "QEMU emulator version 7.2.22", "kernel": "6.1.0"},
        "matrix": {"kernels": ["mainline", "base"], "cpus": [1, 2], "workloads": ["create-unlink"],
                   "repeat": 3, "debug_repeat": 1, "icount_repeat": 0, "flavours": ["perf", "debug"]},
        "oversubscribed": [], "reruns": 0,
        "kernels": {k: {"kernel_version": "6.1.192", "package_version": "6.1.192-3",
                        "patches": [], "images": {"perf": {"key": "k1", "commit": "c"}}}
                    for k in ("mainline", "base")},
        "boots": [{"directory": "boots/x", "status": "ok", "wall_s": 10, "to_init_s": 5,
                   "reports": []}],
    }
    (run / "manifest.json").write_text(json.dumps(manifest))
    (run / "lockorder.json").write_text(json.dumps({
        "mainline": {"lock_order_file": "harness/mainline.lock-order",
                     "edges": [["&s->s_inode_list_lock", "&sb->s_type->i_lock_key#3",
                                "sb_list", "i_lock"]],
                     "role_edges": [["sb_list", "i_lock"]], "violations": []}}))
    return run


def manifest_for(layout: Layout, kernels: list[str]) -> dict:
    out = {}
    for kernel in kernels:
        patches = series.resolve(layout, kernel).patches
        out[kernel] = {"package_version": "6.1.192-3", "kernel_version": "6.1.192",
                       "images": {}, "patches": [
                           {"series": p.series, "file": p.path.name, "sha256": p.sha256,
                            "subject": p.subject} for p in patches]}
    return {"kernels": out}


CASE = evidence.Case("create-unlink", "tmpfs", "create-unlink")


def scaling_row(kernel, flavour, mode, cpus, procs, lock, metric, value, rep=1, unit=""):
    return tidy.Row(kernel, flavour, mode, CASE.workload, CASE.fs, cpus, procs, rep, CASE.phase,
                    lock, metric, value, unit, "ok", f"{kernel}-{flavour}-{mode}-{cpus}-{rep}")


def lock_rows(kernel, cpus, procs, rate, locks):
    """Debug rows: throughput and (role, acquisitions/op, hold µs, contentions/op, wait µs/op)."""
    out = [scaling_row(kernel, "debug", "tcg", cpus, procs, "", "throughput", rate, unit="op/s")]
    for role, acq, hold, cont, wait in locks:
        out += [scaling_row(kernel, "debug", "tcg", cpus, procs, role, "acquisitions_per_op", acq),
                scaling_row(kernel, "debug", "tcg", cpus, procs, role, "holdtime_avg", hold),
                scaling_row(kernel, "debug", "tcg", cpus, procs, role, "holdtime_per_op", acq * hold),
                scaling_row(kernel, "debug", "tcg", cpus, procs, role, "contentions_per_op", cont),
                scaling_row(kernel, "debug", "tcg", cpus, procs, role, "waittime_per_op", wait)]
    return out


def mainline_rows():
    # 1000 debug ops/s: an operation is 1000 µs; sb_list 2 x 10 µs is 2% of it.
    rows = lock_rows("mainline", 1, 1, 1000.0, [("sb_list", 2.0, 10.0, 0, 0),
                                                 ("i_lock", 8.0, 5.0, 0, 0)])
    rows += lock_rows("mainline", 2, 2, 1800.0, [("sb_list", 2.0, 10.0, 0.05, 0.4),
                                                  ("i_lock", 8.0, 5.0, 0.0, 0.0)])
    # -icount: 12500 ops/s is 80 µs of virtual time, 20,000 instructions at 4 ns.
    rows.append(scaling_row("mainline", "perf", "tcg-icount", 1, 1, "", "throughput", 12500.0,
                    unit="op/s"))
    for rep, (one, two) in enumerate(((10000.0, 18000.0), (10200.0, 18400.0),
                                      (9800.0, 17600.0)), 1):
        rows.append(scaling_row("mainline", "perf", "tcg", 1, 1, "", "throughput", one, rep, "op/s"))
        rows.append(scaling_row("mainline", "perf", "tcg", 2, 2, "", "throughput", two, rep, "op/s"))
    return rows


SOAK_DATA = REPO_ROOT / "harness" / "test_data" / "soak"
# Images of the shared store whose meta.json test_data/soak keeps: the reference's.
SOAK_IMAGES = {(k, "debug"): kbuild.KernelImage(k, "debug", key,
                                                SOAK_DATA / "images" / f"{k}-debug-{key}")
               for k, key in (("mainline", "d4a094542ede0508"), ("chinner", "62fd62ed7848af14"),
                              ("piggin", "4b0b3931b2aa9ffb"))}
