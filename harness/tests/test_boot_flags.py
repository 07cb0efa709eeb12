"""`harness boot` and `harness compare` spell what they share the same way,
and both warn when a workload's processes outnumber a boot's vCPUs."""

import argparse

import pytest

from harness import cli
from harness.guest import workloads
from harness.run import matrix
from harness.tests import shipped


def subparser(name: str) -> argparse.ArgumentParser:
    parser = cli.build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def spellings(name: str) -> dict[str, set[str]]:
    """Option strings by destination."""
    found: dict[str, set[str]] = {}
    for action in subparser(name)._actions:
        if action.option_strings and action.dest != "help":
            found.setdefault(action.dest, set()).update(action.option_strings)
    return found


def test_every_option_boot_and_compare_share_is_spelt_alike():
    boot, compare = spellings("boot"), spellings("compare")
    shared = boot.keys() & compare.keys()
    assert {"flavours", "cpus", "workloads", "accel", "verbose", "images", "no_build",
            "workloads_dir"} <= shared
    assert {dest: boot[dest] for dest in shared} == {dest: compare[dest] for dest in shared}
    assert boot["flavours"] == {"--flavours", "--flavour"}


@pytest.mark.parametrize("command", [
    ["boot", "mainline"], ["compare"], ["build", "mainline"]])
def test_flavours_and_the_older_flavour_give_the_same(command):
    parse = cli.build_parser().parse_args
    assert parse(command + ["--flavours", "perf", "debug"]).flavours == ["perf", "debug"]
    assert parse(command + ["--flavour", "perf", "--flavour", "debug"]).flavours == \
        ["perf", "debug"]
    assert parse(command).flavours is None  # each command's own default


def test_boot_takes_several_vcpu_counts_as_compare_does():
    args = cli.build_parser().parse_args(["boot", "mainline", "--cpus", "1", "2"])
    assert args.cpus == ["1", "2"]


def test_boot_help_says_procs_and_fs_override_the_workloads():
    text = subparser("boot").format_help()
    assert "overrides every chosen workload's own procs" in " ".join(text.split())
    assert "overrides every chosen workload's own fs" in " ".join(text.split())


def test_compare_warns_of_more_processes_than_vcpus():
    """dbench's procs are 1 2 4 8<=cpus: at 1 and 2 vCPUs some of its steps
    oversubscribe their boot; create-unlink's (1 cpus) never do."""
    dbench = shipped.workload("dbench")
    wanted = matrix.Matrix(kernels=["mainline"], cpus=[1, 2],
                           workloads=[dbench, shipped.workload("create-unlink")])
    assert wanted.oversubscribed("tcg", 2) == [
        f"dbench runs more processes than its boot has vCPUs (2 at 1 vCPU; 4 at 1 and 2 "
        f"vCPUs; procs of {dbench.path}:{dbench.line_of('procs')}): they take turns on the "
        f"vCPUs, so those steps time the guest's scheduler as much as the workload; "
        f"'N<=cpus' in procs runs N only where it fits"]
    assert matrix.Matrix(kernels=["mainline"], cpus=[4], workloads=[dbench],
                         icount_repeat=0, cs_repeat=0).oversubscribed("tcg", 2) == []


def test_boot_warns_of_procs_given_on_its_command_line():
    """boot --procs 2 at 1 vCPU: the option, not the declaration, is named."""
    create = shipped.workload("create-unlink")
    assert workloads.oversubscribed([(create, 2, 1)], "--procs 2")[0].startswith(
        "create-unlink runs more processes than its boot has vCPUs (2 at 1 vCPU; --procs 2)")
    assert workloads.oversubscribed([(create, 1, 1), (create, 2, 2)]) == []
