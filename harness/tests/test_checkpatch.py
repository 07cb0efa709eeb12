"""Every committed patch passes the kernel's scripts/checkpatch.pl.

Runs the real checkpatch.pl of the extracted linux-source-6.1 tree (extracted
on first use, as `make compare` does).
"""

import pytest

from harness.kernels import bisect_check, series, source
from harness.layout import default_layout

BROKEN = """\
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Test <test@localhost>
Date: Thu, 3 Dec 2026 00:00:00 +0000
Subject: [PATCH] fs: a patch checkpatch must reject

Signed-off-by: Test <test@localhost>
---
 fs/inode.c | 1 +
 1 file changed, 1 insertion(+)

diff --git a/fs/inode.c b/fs/inode.c
--- a/fs/inode.c
+++ b/fs/inode.c
@@ -1,2 +1,3 @@
 #include <linux/fs.h>
+int broken_thing( int x ){return x;}
 #include <linux/mm.h>
--
2.39.5
"""


pytestmark = pytest.mark.tree


@pytest.fixture(scope="module")
def layout():
    layout = default_layout()
    source.ensure_pristine(layout)
    return layout


def committed_patches():
    layout = default_layout()
    return [p for name in series.SERIES_NAMES for p in series.read_series(layout, name)]


@pytest.mark.parametrize("patch", committed_patches(), ids=lambda p: p.path.name)
def test_committed_patch_has_no_checkpatch_errors(layout, patch):
    errors, _warnings, report = bisect_check.checkpatch(layout, patch)
    assert errors == 0, report


def test_checkpatch_errors_are_counted(layout, tmp_path):
    path = tmp_path / "0001-broken.patch"
    path.write_text(BROKEN)
    errors, _warnings, report = bisect_check.checkpatch(layout, series.Patch("test", 1, path))
    assert errors >= 2, report
