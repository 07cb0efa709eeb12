"""Lock-scope files: every shipped one parses and covers every role; errors name file:line."""

from pathlib import Path

import pytest

from harness import lockorder, lockscope
from harness.layout import default_layout

REPO = Path(__file__).resolve().parent.parent.parent
SHIPPED = [REPO / "harness" / "mainline.lock-scope"] + sorted(REPO.glob("series-*/lock-scope"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.parent.name + "/" + p.name)
def test_shipped_files_declare_every_role_the_kernel_has(path):
    scope = lockscope.parse(path)
    expected = set(lockorder.ROLES) - ({"global"} if "series-base" not in str(path) else set())
    assert set(scope.roles) == expected


def test_shipped_scopes_say_what_each_design_is():
    layout = default_layout()
    mainline = lockscope.load_for(layout, "mainline").roles
    base = lockscope.load_for(layout, "base").roles
    chinner = lockscope.load_for(layout, "chinner@9").roles
    piggin = lockscope.load_for(layout, "piggin").roles
    assert mainline["hash"].scope == "global" and mainline["sb_list"].scope == "per-superblock"
    assert base["global"].scope == "global" and base["hash"].under == "global"
    for design in (chinner, piggin):
        assert (design["hash"].scope, design["hash"].table, design["hash"].bitlock) == \
            ("per-bucket", "Inode-cache", True)
        assert design["sb_list"].scope == "per-cpu" and not design["sb_list"].shared
    assert all(r["i_lock"].scope == "per-inode" for r in (mainline, base, chinner, piggin))


@pytest.mark.parametrize("text, message", [
    ("hash\n", ":1: expected 'ROLE SCOPE"),
    ("# c\nhashes global\n", ":2: unknown role 'hashes'"),
    ("hash worldwide\n", ":1: unknown scope 'worldwide'"),
    ("hash global\nhash global\n", ":2: role hash already declared on line 1"),
    ("hash per-bucket\n", ":1: per-bucket needs the hash table's console name"),
    ("hash per-bucket bitlock\n", ":1: per-bucket needs the hash table's console name"),
    ("hash global spinny\n", ":1: unexpected 'spinny'"),
    ("hash global under hash\n", ":1: 'under' needs another role"),
    ("hash global under global\n", ":1: hash is under global, which the file does not declare"),
])
def test_bad_lines_name_the_file_and_line(tmp_path, text, message):
    path = tmp_path / "lock-scope"
    path.write_text(text)
    with pytest.raises(lockscope.LockScopeError) as err:
        lockscope.parse(path)
    assert str(err.value).startswith(str(path)) and message in str(err.value)


def test_bitlock_and_under_together(tmp_path):
    path = tmp_path / "lock-scope"
    path.write_text("global global\nhash per-bucket Inode-cache under global bitlock\n")
    role = lockscope.parse(path).roles["hash"]
    assert (role.table, role.bitlock, role.under, role.line) == ("Inode-cache", True, "global", 2)
    assert role.describe(131072) == "per-bucket (131,072 buckets), bit lock, under global"


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.parent.name + "/" + p.name)
def test_the_shared_and_per_inode_split_agrees_with_every_lock_scope_file(path):
    # lockorder.SHARING is one table for every kernel: a series whose lock-scope
    # file made another role per-inode (or i_lock shared) must change it.
    for role, scope in lockscope.parse(path).roles.items():
        per_inode = scope.scope == "per-inode"
        assert (lockorder.SHARING[role] == lockorder.PER_INODE) == per_inode, role
