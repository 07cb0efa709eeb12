"""make check-workloads: each declaration against the guest its steps will meet.

Beyond parsing (guest/workloads.py): every binary and data file exists on
the host with its libraries, every package is installed or installable,
the program of every command of the run line is in the guest (on its PATH,
or at the path written), and no script is carried without its interpreter
(the guest's only shell is busybox sh). Every problem of every workload is
reported together, each naming its file and line.
"""

from __future__ import annotations

import dataclasses
import posixpath

from harness.guest import deps, runline
from harness.guest.deps import GuestFile
from harness.guest.guestview import GuestView, executable, interpreter
from harness.guest.protocol import GUEST_PATH, HARNESS_DIR, SCRATCH_DIR, WORK_DIR
from harness.guest.workloads import Workload, WorkloadError

# Programs a run line makes for itself while it runs: not checkable before.
RUNTIME_PLACES = (WORK_DIR + "/", SCRATCH_DIR + "/", "/tmp/")


def check(workloads: list[Workload], base: list[GuestFile],
          programs: dict[str, GuestFile]) -> list[str]:
    """Notes (packages make installs later; what waits for them); raises a
    WorkloadError listing every problem. base is the harness's part of the
    guest, programs ours (/bin)."""
    notes, problems, waiting = deps.check_packages(workloads)
    for workload in workloads:
        pending = sorted(waiting & {p.value for p in workload.packages})
        files, missing = _files(_without(workload, pending), programs)
        problems += missing
        if missing:  # the run line is judged once what it calls is there
            continue
        view = GuestView(base + list(programs.values()) + files)
        problems += binary_problems(workload, view)
        if pending:
            notes.append(f"{workload.path}: the run line is checked once "
                         f"{', '.join(pending)} is installed")
        else:
            problems += run_line_problems(workload, view)
    if problems:
        raise WorkloadError(problems)
    return notes


def _files(workload: Workload, programs: dict[str, GuestFile]) -> tuple[list[GuestFile],
                                                                        list[str]]:
    """The workload's guest files, and the problems of each kind of them."""
    files, problems = deps.programs_named(workload, programs), []
    for kind in (deps.binary_files, deps.package_files, deps.data_files):
        try:
            files += kind(workload)
        except WorkloadError as err:
            problems += err.problems
    return files, problems


def _without(workload: Workload, packages: list[str]) -> Workload:
    """The workload without packages not installed yet: their files are unknown."""
    return dataclasses.replace(workload, packages=tuple(
        p for p in workload.packages if p.value not in packages))


def binary_problems(workload: Workload, view: GuestView) -> list[str]:
    """Declared binaries that are scripts without their interpreter in the guest."""
    problems = []
    for item in workload.binaries:
        guest = deps.binary_guest_path(item, deps.declared_host_path(workload, "binaries", item))
        found = view.lookup(guest)
        problem = found and script_problem(view, guest, found)
        if problem:
            problems.append(f"{workload.path}:{item.lineno}: binaries: {problem}")
    return problems


def script_problem(view: GuestView, path: str, found: GuestFile) -> str:
    """Why a script at a guest path cannot run there ("" if it can, or is no script)."""
    words = interpreter(found)
    if not words:
        return ""
    shell = view.lookup(words[0])
    if shell is None or not executable(shell):
        others = [p for p in view.named(posixpath.basename(words[0]))
                  if executable(view.lookup(p) or found)]
        hint = (f"; the guest has it at {others[0]}: write #!{others[0]}" if others else
                "; bring the interpreter (packages or binaries) or use a static binary")
        return (f"{path} is a script for {words[0]}, which the guest does not have (its "
                f"shell is busybox sh, /bin/sh){hint}")
    if posixpath.basename(words[0]) == "env" and len(words) > 1 and \
            not view.on_path(words[1]):
        return (f"{path} is a script for '{' '.join(words)}': the guest has no {words[1]} on "
                f"its PATH ({GUEST_PATH})")
    return ""


def run_line_problems(workload: Workload, view: GuestView) -> list[str]:
    where = f"{workload.path}:{workload.line_of('run')}: run"
    command = workload.command(procs=1, cpus=1, fs=workload.filesystems[0], dev="/dev/vda",
                               prefix=f"{HARNESS_DIR}/s01")
    # A declared binary's own problems are told on its line (binary_problems).
    declared = {deps.binary_guest_path(item, deps.declared_host_path(workload, "binaries", item))
                for item in workload.binaries}
    problems = []
    for program in runline.programs(command):
        problem = program_problem(view, program, frozenset(declared))
        if problem:
            problems.append(f"{where}: {problem}")
    return problems


def program_problem(view: GuestView, program: str, declared: frozenset[str] = frozenset()) -> str:
    """Why the guest's shell would not run program ("" if it would, or cannot be
    known); the scripts among declared paths are not judged again."""
    if "/" in program:
        if not program.startswith("/") or program.startswith(RUNTIME_PLACES):
            return ""
        found = view.lookup(program)
        if found is None:
            return f"{program} is not in the guest: declare it in binaries (an absolute " \
                   f"path is kept) or packages"
        if not executable(found):
            return (f"{program} is not executable in the guest (files are data, copied "
                    f"0644): run it as 'sh {program}', or declare it in binaries")
        return "" if program in declared else script_problem(view, program, found)
    where = view.on_path(program)
    if where is None:
        elsewhere = view.named(program)
        if elsewhere:
            return (f"{program} is not on the guest's PATH ({GUEST_PATH}); it is at "
                    f"{elsewhere[0]} in the guest: write that path, or declare the binary "
                    f"relative to the .wl file's folder (it then goes to /usr/local/bin)")
        return (f"{program} is not on the guest's PATH ({GUEST_PATH}): the guest is busybox "
                f"and what the workloads declare; declare it in binaries or packages")
    if where in declared:
        return ""
    return script_problem(view, where, view.lookup(where) or GuestFile(where, 0, b"", ""))
