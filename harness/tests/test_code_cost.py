"""Cost in code: counts read off patch text, the run's copy of its patches,
and the numbers kept for machines without the kernel tree."""

import hashlib
import json
import re

import pytest

from harness.kernels import series
from harness.layout import Layout, default_layout
from harness.report import code_cost, patch_text, run_inputs
from harness.tests.conftest import manifest_for

# A trylock loop (one trylock, one cpu_relax, one goto again), one drop and
# re-take of i_lock, a comment that names a trylock, and a mail signature
# ("-- ") that must not be read as a removed line.
LOOP_PATCH = """\
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Test <test@localhost>
Date: Thu, 3 Dec 2026 00:00:00 +0000
Subject: [PATCH 1/1] fs: a trylock loop and a drop-and-retake,
 with a subject on two lines

Signed-off-by: Test <test@localhost>
---
 fs/inode.c  | 13 +++++++++++--
 fs/super.c  |  1 -
 2 files changed, 11 insertions(+), 3 deletions(-)

diff --git a/fs/inode.c b/fs/inode.c
--- a/fs/inode.c
+++ b/fs/inode.c
@@ -10,6 +10,15 @@
 static void walk(struct super_block *sb)
 {
-	spin_lock(&sb->s_inode_list_lock);
+again:
+	spin_lock(&sb->s_inode_list_lock);
+	if (!spin_trylock(&inode->i_lock)) {
+		spin_unlock(&sb->s_inode_list_lock);
+		cpu_relax();
+		goto again;
+	}
+	/* spin_trylock() in a comment is not a call site */
+	spin_unlock(&inode->i_lock);
+	spin_lock(&inode->i_lock);
 	do_things();
 	spin_unlock(&sb->s_inode_list_lock);
 }
@@ -40,4 +49,2 @@
 static void old(void)
 {
-	spin_unlock(&inode->i_lock);
-	spin_lock(&inode->i_lock);
diff --git a/fs/super.c b/fs/super.c
--- a/fs/super.c
+++ b/fs/super.c
@@ -1,2 +1,1 @@
 keep
-	cpu_relax();
-- 
2.39.5
"""


def test_counts_of_a_small_patch(tmp_path):
    path = tmp_path / "0001-loop.patch"
    path.write_text(LOOP_PATCH)
    counts = patch_text.count(path)
    assert counts.files == (("fs/inode.c", 10, 3), ("fs/super.c", 0, 1))
    assert (counts.added, counts.removed) == (10, 4)
    assert counts.trylocks == 1  # the comment does not count
    assert counts.retry_jumps == 1
    assert counts.cpu_relax == 0  # one added in inode.c, one removed from super.c
    # One drop and re-take added in the first hunk, one removed in the second.
    assert counts.relocks == 0
    hunks = patch_text.hunks(LOOP_PATCH)
    assert [h.path for h in hunks] == ["fs/inode.c", "fs/inode.c", "fs/super.c"]
    assert patch_text.relocks(hunks[0].after) == 1
    assert hunks[2].removed == ("\tcpu_relax();",)  # not the signature's "-- "
    assert run_inputs.subject_of(path) == ("fs: a trylock loop and a drop-and-retake, "
                                           "with a subject on two lines")


def test_a_broken_hunk_names_the_file_and_line():
    broken = LOOP_PATCH.replace(" \tdo_things();", "X\tdo_things();")
    with pytest.raises(patch_text.PatchTextError, match=r"patch:\d+: hunk of fs/inode.c"):
        patch_text.hunks(broken)


def test_numstat_agrees_with_the_diffstat_of_every_committed_patch():
    """git apply --numstat against the summary git format-patch wrote in each mail."""
    layout = default_layout()
    patches = [p for name in series.SERIES_NAMES for p in series.read_series(layout, name)]
    assert patches
    for p in patches:
        summary = re.search(r"^ (\d+) files? changed(?:, (\d+) insertions?\(\+\))?"
                            r"(?:, (\d+) deletions?\(-\))?", p.path.read_text(), re.M)
        counts = patch_text.count(p.path)
        assert (len(counts.files), counts.added, counts.removed) == tuple(
            int(g or 0) for g in summary.groups()), p.path.name




@pytest.fixture
def treeless(tmp_path) -> Layout:
    """The checkout's series, a build folder without a kernel tree."""
    return Layout(repo=default_layout().repo, build=tmp_path / "build",
                  ccache=tmp_path / "ccache", results=tmp_path / "results")


def test_costs_of_the_committed_series_without_a_tree(treeless, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    manifest = manifest_for(treeless, ["mainline", "base", "chinner", "piggin"])
    conformance = {"piggin": {"lock_order_file": "series-piggin/lock-order", "edges": [
        ["&sb->s_type->i_lock_key#3", "inode_hash_bucket_lock", "i_lock", "hash"],
        ["&sb->s_type->i_lock_key#4", "sb_inode_list_lock", "i_lock", "sb_list"]]}}
    costs = {c.name: c for c in code_cost.costs(treeless, run, manifest, conformance)}
    assert list(costs) == ["base", "chinner", "piggin"]
    piggin = costs["piggin"]
    assert len(piggin.patches) == len(series.read_series(treeless, "piggin"))
    # The run folder now holds the patch text, byte for byte.
    for p in piggin.patches:
        assert p.path == run / "series" / "piggin" / p.file
        assert hashlib.sha256(p.path.read_bytes()).hexdigest() == p.sha256
    # The tree scope is base's patches plus the series'.
    assert piggin.tree("added") == costs["base"].review("added") + piggin.review("added")
    # Without build/src: no checkpatch, no fs/inode.c, and nothing invented.
    assert piggin.checkpatch is None and piggin.lock_doc_lines is None
    assert piggin.lock_classes == ["&sb->s_type->i_lock_key", "inode_hash_bucket_lock",
                                   "sb_inode_list_lock"]
    assert piggin.lock_order_shown_as == "series-piggin/lock-order of today's checkout"
    assert costs["base"].lock_classes is None  # no debug boot of base in this run


def test_report_reads_the_runs_copy_not_the_checkout(treeless, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    manifest = manifest_for(treeless, ["base"])
    first = code_cost.costs(treeless, run, manifest, {})[0]
    # A checkout whose series moved on: the run's copy still answers.
    moved = Layout(repo=tmp_path / "elsewhere", build=treeless.build,
                   ccache=treeless.ccache, results=treeless.results)
    again = code_cost.costs(moved, run, manifest, {})[0]
    assert again.review("added") == first.review("added") and not again.missing
    # A copy that is not what the run built is refused, naming the file.
    copy = first.patches[0].path
    copy.write_text(copy.read_text() + "\n")
    with pytest.raises(run_inputs.PatchMismatch, match=copy.name):
        code_cost.costs(moved, run, manifest, {})


def test_a_run_whose_patches_are_gone_says_which(tmp_path):
    layout = Layout(repo=tmp_path / "repo", build=tmp_path / "build",
                    ccache=tmp_path / "ccache", results=tmp_path / "results")
    run = tmp_path / "run"
    run.mkdir()
    manifest = {"kernels": {"base": {"package_version": "6.1.192-3", "patches": [
        {"series": "base", "file": "0001-gone.patch", "sha256": "0" * 64, "subject": "gone"}]}}}
    (cost,) = code_cost.costs(layout, run, manifest, {})
    assert cost.missing == ["0001-gone.patch"] and cost.own == []


def test_tree_facts_are_kept_for_machines_without_the_tree(treeless, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    manifest = manifest_for(treeless, ["base"])
    (run / code_cost.COST_FILE).write_text(json.dumps({
        "mainline_lock_doc_lines": 30,
        "series": {"base": {"lock_doc_lines": 43, "checkpatch": [
            {"file": "x", "sha256": "y", "errors": 0, "warnings": 2}]}}}))
    (cost,) = code_cost.costs(treeless, run, manifest, {})
    assert (cost.checkpatch, cost.lock_doc_lines) == ((0, 2), 43)
    assert code_cost.mainline_lock_doc_lines(run) == 30


def test_compile_check_counts_only_for_the_runs_patches(treeless, tmp_path):
    repo = tmp_path / "repo"
    (repo / "series-base").mkdir(parents=True)
    layout = Layout(repo=repo, build=treeless.build, ccache=treeless.ccache,
                    results=treeless.results)
    manifest = manifest_for(treeless, ["base"])
    digest = code_cost.patch_digest(manifest["kernels"]["base"]["patches"])
    assert digest == series.resolve(treeless, "base").patch_digest
    result = {"patch_digest": digest, "grep": "", "files": ["a.c", "b.c", "c.c"],
              "failed": [], "not_in_config": ["c.c"], "measured": "2026-12-03T18:00:00"}
    older = dict(result, patch_digest="0" * 64, files=["a.c"])
    (repo / "series-base" / code_cost.COMPILE_CHECK_FILE).write_text(json.dumps([older, result]))
    assert code_cost.compile_check_for(layout, "base", manifest) == result
