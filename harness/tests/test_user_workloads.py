"""A user's own workloads never turn `make test` red.

A user who declared five benchmarks of their own in workloads/ saw
test_soak fail (it counted every declaration of the live folder). Here a
copy of the checkout gets what a user adds: valid declarations committed
to workloads/, broken ones left beside them, and a WORKLOADS_DIR of more;
the tests that read workloads then run in that copy and must pass.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from harness.layout import REPO_ROOT

TESTS = REPO_ROOT / "harness" / "tests"
# Test modules that read workload declarations (this one aside).
READS_WORKLOADS = re.compile(r"\bworkloads\.(load_all|read_all|parse|select)\b|\bshipped\.")
GIT = ["git", "-c", "user.name=test", "-c", "user.email=test@localhost", "-c",
       "commit.gpgsign=false"]

USER_WORKLOAD = """\
name     = {name}
summary  = a user's benchmark, built elsewhere
binaries = {binary}
run      = {binary} --help
output   = none
fs       = ext4 xfs
procs    = 1 cpus
default  = {default}
"""
BROKEN = "name = {name}\nsummary = half written\nrun = fsstress -p {{procs}}\noutput = csv\n"


def modules_reading_workloads(tests: Path = TESTS) -> list[str]:
    return sorted(p.name for p in tests.glob("test_*.py")
                  if p.name != Path(__file__).name and READS_WORKLOADS.search(p.read_text()))


def checkout_copy(where: Path) -> Path:
    """The checkout's tracked files (as they are now), as a git repository of its own."""
    listed = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files", "-z"], check=True,
                            capture_output=True).stdout.decode().split("\0")
    copy = where / "checkout"
    for name in filter(None, listed):
        if name.startswith("results/") or not (REPO_ROOT / name).is_file():
            continue
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / name, copy / name)
    subprocess.run(["git", "init", "-q", str(copy)], check=True)
    subprocess.run([*GIT, "-C", str(copy), "add", "-A"], check=True)
    subprocess.run([*GIT, "-C", str(copy), "commit", "-qm", "the checkout"], check=True)
    return copy


def add_user_workloads(copy: Path, where: Path, binary: Path) -> Path:
    """Five benchmarks of binary committed to workloads/ (as the user did), two
    broken drafts beside them, and a WORKLOADS_DIR folder of the user's own."""
    shutil.copy("/bin/busybox", binary)
    for i in range(5):
        name = f"user-bench-{i}"
        (copy / "workloads" / f"{name}.wl").write_text(USER_WORKLOAD.format(
            name=name, binary=binary, default="yes" if i == 0 else "no"))
    subprocess.run([*GIT, "-C", str(copy), "add", "workloads"], check=True)
    subprocess.run([*GIT, "-C", str(copy), "commit", "-qm", "my benchmarks"], check=True)
    for name in ("draft", "create-unlink-copy"):
        (copy / "workloads" / f"{name}.wl").write_text(BROKEN.format(name=name))
    own = where / "my-workloads"
    own.mkdir()
    (own / "fsstress.wl").write_text(BROKEN.format(name="fsstress"))
    (own / "create-unlink.wl").write_text(BROKEN.format(name="create-unlink"))
    return own


def test_the_tests_that_read_workloads_are_found():
    found = modules_reading_workloads()
    assert {"test_soak.py", "test_workloads.py", "test_deps.py", "test_check.py"} <= set(found)


@pytest.fixture
def elsewhere():
    """Where the user built their benchmark: not under /tmp, which the guest
    does not keep."""
    folder = Path(tempfile.mkdtemp(prefix="inode-duel-test-", dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder)


def test_make_test_stays_green_with_a_users_workloads(tmp_path, elsewhere):
    copy = checkout_copy(tmp_path)
    own = add_user_workloads(copy, tmp_path, elsewhere / "bench")
    env = dict(os.environ, WORKLOADS_DIR=str(own), BUILD_DIR=str(tmp_path / "build"),
               RESULTS_DIR=str(tmp_path / "results"))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m",
         "not boot and not tree and not extra_image",
         *[f"harness/tests/{m}" for m in modules_reading_workloads(copy / "harness" / "tests")]],
        cwd=copy, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout.splitlines()[-1]
