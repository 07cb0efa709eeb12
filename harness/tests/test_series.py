"""Kernel names, series files and git am failures that name the hunk."""

import subprocess

import pytest

from harness.kernels import series
from harness.tests.conftest import INFO, add_patch


def test_names_resolve_to_patch_lists(layout):
    add_patch(layout, "base", "0001-a.patch", subject="a", old="line two", new="line 2")
    add_patch(layout, "piggin", "0001-b.patch", subject="b", old="line 2", new="line II")
    add_patch(layout, "piggin", "0002-c.patch", subject="c", old="line II", new="line 2b")
    assert series.resolve(layout, "mainline").patches == ()
    assert [p.path.name for p in series.resolve(layout, "piggin").patches] == \
        ["0001-a.patch", "0001-b.patch", "0002-c.patch"]
    assert [p.path.name for p in series.resolve(layout, "piggin@1").patches] == \
        ["0001-a.patch", "0001-b.patch"]
    assert series.expand_names(layout, ["piggin@*"]) == ["piggin@0", "piggin@1", "piggin@2"]
    with pytest.raises(series.SeriesError, match="has only 2 patches"):
        series.resolve(layout, "piggin@3")
    with pytest.raises(series.SeriesError, match="unknown kernel 'nick'"):
        series.resolve(layout, "nick")


def test_every_kernel_mainline_included_carries_the_stable_fixes(layout):
    add_patch(layout, "stable", "0001-fix.patch", subject="fix", old="line one", new="line 1")
    add_patch(layout, "base", "0001-a.patch", subject="a", old="line two", new="line 2")
    add_patch(layout, "piggin", "0001-b.patch", subject="b", old="line 2", new="line II")
    names = {k: [(p.series, p.index) for p in series.resolve(layout, k).patches]
             for k in ("mainline", "base", "piggin", "piggin@0", "base@0", "stable@0")}
    assert names == {"mainline": [("stable", 1)],
                     "base": [("stable", 1), ("base", 1)],
                     "piggin": [("stable", 1), ("base", 1), ("piggin", 1)],
                     # NAME@K counts NAME's own patches only
                     "piggin@0": [("stable", 1), ("base", 1)],
                     "base@0": [("stable", 1)], "stable@0": []}
    assert series.resolve(layout, "stable@1").patches == series.resolve(layout, "mainline").patches
    assert series.expand_names(layout, ["stable@*"]) == ["stable@0", "stable@1"]
    with pytest.raises(series.SeriesError, match="mainline has no patches of its own"):
        series.resolve(layout, "mainline@1")
    with pytest.raises(series.SeriesError, match="stable is not a kernel"):
        series.resolve(layout, "stable")


def test_missing_patch_names_series_file_and_line(layout):
    (layout.series_dir("chinner") / "series").write_text("# comment\nnot-there.patch\n")
    with pytest.raises(series.SeriesError, match=r"series-chinner/series:2: not-there.patch"):
        series.read_series(layout, "chinner")


def test_checkout_applies_and_caches(layout):
    add_patch(layout, "base", "0001-a.patch", subject="a", old="line two", new="line 2")
    kernel = series.resolve(layout, "base")
    commit = series.checkout(layout, INFO, kernel)
    assert (layout.src / "fs" / "inode.c").read_text() == "line one\nline 2\nline three\n"
    assert series.checkout(layout, INFO, kernel) == commit


def test_failed_patch_names_series_patch_and_hunk(layout):
    add_patch(layout, "base", "0001-a.patch", subject="a", old="line two", new="line 2")
    add_patch(layout, "chinner", "0001-ok.patch", subject="ok", old="line 2", new="line B")
    add_patch(layout, "chinner", "0002-stale.patch", subject="stale one",
              old="line two", new="line C")
    with pytest.raises(series.SeriesError) as err:
        series.checkout(layout, INFO, series.resolve(layout, "chinner"))
    message = str(err.value)
    assert "series-chinner: patch 2 (0002-stale.patch" in message
    assert "stale one" in message
    assert "hunk at fs/inode.c:1 failed" in message
    # The tree is left clean for the next attempt.
    status = subprocess.run(["git", "-C", str(layout.src), "status", "--porcelain"],
                            capture_output=True, text=True).stdout
    assert status == ""


def test_the_historical_pair_is_named_and_carries_its_own_structures():
    from harness import lockscope
    from harness.layout import default_layout
    layout = default_layout()
    dave = series.resolve(layout, "chinner-2.6.39")
    nick = series.resolve(layout, "piggin-2010")
    assert dave.name == "chinner-2.6.39"
    assert [p.path.name for p in dave.patches] == [
        p.path.name for p in series.resolve(layout, "chinner@7").patches]
    names = [p.path.name for p in nick.patches]
    assert not any(n.startswith(("0011-", "0012-", "0013-")) and "piggin" in str(p.path)
                   for n, p in zip(names, nick.patches))
    # Dave's 2.6.39 kernel keeps 6.1's global hash and per-sb list; Nick's has his own.
    assert lockscope.load_for(layout, "chinner-2.6.39").roles["hash"].scope == "global"
    assert lockscope.load_for(layout, "chinner").roles["hash"].scope == "per-bucket"
    assert lockscope.load_for(layout, "piggin-2010").roles["hash"].scope == "per-bucket"
    with pytest.raises(series.SeriesError, match="chinner-2.6.39"):
        series.resolve(layout, "dave")
