"""The README's outside-program recipes build, and keep the operations they claim.

workloads/recipes/ builds xfstests' fsstress and will-it-scale's tests
static, from the versions workloads/recipes/versions pins. The tests build
them from sources found on this machine, never downloaded: XFSTESTS_SRC
and WILL_IT_SCALE_SRC name git clones holding the pinned commits (the
commit is taken with git archive: the clone is not touched). Without them,
or without the Debian packages the recipes need, they are skipped and say
why.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from harness.layout import REPO_ROOT

RECIPES = REPO_ROOT / "workloads" / "recipes"
SOURCES = {"xfstests": ("XFSTESTS_SRC", "https://git.kernel.org/pub/scm/fs/xfs/xfstests-dev.git"),
           "will-it-scale": ("WILL_IT_SCALE_SRC",
                             "https://github.com/antonblanchard/will-it-scale")}
NEEDS = {"xfstests": {"/usr/include/xfs/xfs.h": "xfslibs-dev",
                      "/usr/lib/x86_64-linux-gnu/libaio.a": "libaio-dev",
                      "/usr/lib/x86_64-linux-gnu/liburing.a": "liburing-dev"},
         "will-it-scale": {"/usr/lib/x86_64-linux-gnu/libhwloc.a": "libhwloc-dev"}}
# fsstress takes these out of its mix itself unless the directory is on btrfs.
BTRFS_ONLY = {"snapshot", "subvol_create", "subvol_delete"}
# fsstress -v logs an operation as 'PROC/OP: ...', on one line or several.
LOGGED = re.compile(r"^(\d+/\d+): ", re.MULTILINE)
# An operation alone with a few creates and writes to act on (fsstress picks
# operations at random by frequency): of RUN numbered operations, those of a
# compiled-out operation log nothing, about half.
RUN = 100
LOGGED_AT_LEAST = 90


def pinned() -> dict[str, tuple[str, str]]:
    """name -> (version, commit) from workloads/recipes/versions."""
    out = {}
    for line in (RECIPES / "versions").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version, commit = line.split()
            out[name] = (version, commit)
    return out


def sources(name: str, into: Path) -> Path:
    """The pinned commit of a project, extracted from the clone its variable
    names; the test is skipped, saying why, when there is none."""
    variable, upstream = SOURCES[name]
    version, commit = pinned()[name]
    clone = os.environ.get(variable)
    if not clone:
        pytest.skip(f"{variable} is not set: point it at a git clone of {name} ({upstream}) "
                    f"holding {commit} ({version}); the test never downloads")
    missing = [package for path, package in NEEDS[name].items() if not Path(path).exists()]
    if missing:
        pytest.skip(f"the {name} recipe needs {', '.join(missing)}: apt-get install "
                    f"{' '.join(missing)}")
    archive = subprocess.run(["git", "-C", clone, "archive", "--format=tar", commit],
                             capture_output=True)
    if archive.returncode != 0:
        pytest.skip(f"{variable}={clone} does not hold {name} {commit} ({version}): "
                    f"{archive.stderr.decode().strip()}")
    into.mkdir()
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def build(script: str, *args: str) -> None:
    done = subprocess.run([str(RECIPES / script), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


def static(program: Path) -> bool:
    out = subprocess.run(["ldd", str(program)], capture_output=True, text=True)
    return "not a dynamic executable" in out.stdout + out.stderr


def mix(fsstress: Path) -> dict[str, int]:
    """fsstress's default mix: operation -> frequency (-S c prints it as -f options,
    then exits 1 for want of a directory)."""
    listed = subprocess.run([str(fsstress), "-S", "c"], capture_output=True, text=True).stdout
    return {name: int(freq) for name, freq in re.findall(r"-f (\w+)=(\d+)", listed)}


def logged(fsstress: Path, operation: str, where: Path) -> int:
    """How many of RUN operations logged themselves with operation in the mix."""
    (where / operation).mkdir(parents=True)
    done = subprocess.run(
        [str(fsstress), "-d", str(where / operation), "-z", "-f", "creat=1", "-f", "write=1",
         "-f", f"{operation}=2", "-n", str(RUN), "-p", "1", "-s", "1", "-v"],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return len(set(LOGGED.findall(done.stdout)))


def test_fsstress_builds_static_and_runs_every_operation_of_its_mix(tmp_path):
    src = sources("xfstests", tmp_path / "xfstests")
    build("build-fsstress.sh", str(src), str(tmp_path / "bin"))
    fsstress = tmp_path / "bin" / "fsstress"
    assert static(fsstress)
    operations = mix(fsstress)
    assert sum(operations.values()) == 99  # the mix the README counts in units
    silent = {op: n for op in sorted(set(operations) - BTRFS_ONLY)
              if (n := logged(fsstress, op, tmp_path / "run")) < LOGGED_AT_LEAST}
    assert silent == {}, f"operations that do nothing (of {RUN} logged): {silent}"


@pytest.mark.parametrize("test, testcase", [("open1", "Separate file open/close"),
                                            ("unlink1", "Separate file open/close/unlink")])
def test_will_it_scale_builds_static_and_measures(tmp_path, test, testcase):
    src = sources("will-it-scale", tmp_path / "will-it-scale")
    build("build-will-it-scale.sh", str(src), str(tmp_path / "bin"), test)
    program = tmp_path / "bin" / f"{test}_processes"
    assert static(program)
    done = subprocess.run([str(program), "-t", "1", "-s", "1", "-n"], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"testcase:{testcase}"
    measured = lines[lines.index("measurement") + 1:]
    totals = [int(m.group(1)) for line in measured
              if (m := re.fullmatch(r"min:\d+ max:\d+ total:(\d+)", line))]
    assert totals and all(t > 0 for t in totals)


def test_the_readme_names_the_pinned_versions_and_the_recipes():
    readme = (REPO_ROOT / "README.md").read_text()
    for name, (version, commit) in pinned().items():
        assert commit[:12] in readme, name
        if version != "-":
            assert version in readme, name
    for script in ("build-fsstress.sh", "build-will-it-scale.sh"):
        assert f"workloads/recipes/{script}" in readme
        assert os.access(RECIPES / script, os.X_OK)
