"""The workloads the project ships, as tests must read them.

A user adds declarations of their own to workloads/ or to a folder of
WORKLOADS_DIR; no test may depend on them. Tests take the shipped ones by
name, or the set git tracks, never a glob of the live folder and never the
environment (test_user_workloads.py checks that).
"""

from __future__ import annotations

import subprocess

from harness.guest import workloads
from harness.layout import REPO_ROOT

FOLDER = REPO_ROOT / "workloads"


def workload(name: str) -> workloads.Workload:
    return workloads.parse(FOLDER / f"{name}.wl")


def tracked() -> dict[str, workloads.Workload]:
    """Every declaration git tracks in workloads/ (a checkout that is not a git
    repository: every file of the folder)."""
    listed = subprocess.run(["git", "-C", str(REPO_ROOT), "ls-files", "--", "workloads/*.wl"],
                            capture_output=True, text=True)
    paths = [REPO_ROOT / line for line in listed.stdout.split()] if listed.returncode == 0 \
        else sorted(FOLDER.glob("*.wl"))
    return {w.name: w for w in map(workloads.parse, paths)}
