"""Shared test fixtures: a tiny kernel repository and series folders."""

import subprocess

import pytest

from harness.kernels import series, source
from harness.layout import Layout

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
    for name in series.SERIES_NAMES:
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


