"""What make runs, read with make -n: the echoed commands are the ones that run."""

import subprocess

from harness.layout import REPO_ROOT


def planned(*args: str) -> list[str]:
    done = subprocess.run(["make", "-n", "-C", str(REPO_ROOT), *args], capture_output=True,
                          text=True, check=True)
    return [line for line in done.stdout.splitlines() if " -m harness " in line
            or " -m pytest " in line]


def test_compare_echoes_only_the_knobs_that_were_set():
    assert planned("compare")[-1].endswith("-m harness compare")
    assert planned("compare", "KERNELS=mainline piggin", "CPUS=1", "REPEAT=2",
                   "WORKLOADS_DIR=/tmp/mine")[-1].split(" -m harness ")[1] == \
        "compare --kernels mainline piggin --cpus 1 --repeat 2 --workloads-dir '/tmp/mine'"


def test_make_test_builds_its_kernel_before_pytest_starts():
    commands = planned("test")
    assert commands[-2].endswith("-m harness build mainline --flavour debug")
    assert " -m pytest " in commands[-1]


def test_make_kcsan_passes_its_budget_and_kernels():
    assert planned("kcsan")[-1].endswith("-m harness kcsan")
    assert planned("kcsan", "KERNELS=mainline piggin", "CPUS=2", "BUDGET=18m")[-1].split(
        " -m harness ")[1] == "kcsan --kernels mainline piggin --cpus 2 --budget 18m"
