"""make check-workloads: each declaration against the guest its steps will meet.

Beyond parsing (guest/workloads.py): every binary and data file exists on
the host with its libraries, every package is installed or installable,
and no script is carried without its interpreter (the guest's only shell is
busybox sh). Of the run line (guest/runline.py reads it), in the guest:

- every program it would execute, wrappers and what they run included
  (timeout -s KILL 60 PROG), is on the guest's PATH or at the path written;
- every script a shell would read (sh FILE, . FILE) is there;
- an absolute path given to a command is taken for a program that command
  runs, and must be there, when it lies in a folder the guest runs
  programs from: a folder of the guest's PATH or of a declared binary. A
  path elsewhere is data or output (the program's own business, not
  judged);
- no word names a declared binary by its host path (bin/prog, the host's
  absolute path) where the guest has it elsewhere (/usr/local/bin/prog).

Paths the line makes while it runs ({dir}, {tmp}, /tmp, relative ones) are
left to the boot. Every problem of every workload is reported together,
each naming its file and line.
"""

from __future__ import annotations

import dataclasses
import difflib
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
    binaries = _binaries(workload)
    problems = []
    for item in runline.named(command):
        problem = _word_problem(view, item, binaries)
        if problem:
            problems.append(f"{where}: {problem}")
    return problems


def _word_problem(view: GuestView, item: runline.Named, binaries: DeclaredBinaries) -> str:
    spelling = binaries.host_spelling(item.word)
    if spelling:
        return spelling
    if item.role == runline.PROGRAM:
        return program_problem(view, item.word, binaries.guest_paths)
    if item.role == runline.SCRIPT:
        return script_file_problem(view, item.word)
    return argument_problem(view, item.word, binaries.folders)


@dataclasses.dataclass(frozen=True)
class DeclaredBinaries:
    """A workload's binaries as the run line may name them: their guest paths,
    the guest folders they are in, and how binaries spells each (the host's path)."""
    guest_paths: frozenset[str]
    folders: frozenset[str]  # with the guest's PATH: where a program is looked for
    spelled: dict[str, str]  # as written in binaries, and its host path -> guest path

    def host_spelling(self, word: str) -> str:
        """Why a word that names a declared binary as the host has it is wrong in
        the guest ("" if it is not such a word)."""
        guest = self.spelled.get(word)
        if guest is None or guest == word or "/" not in word:  # a bare name: found on PATH
            return ""
        name = posixpath.basename(guest)
        hint = f"write {name} (it is on the guest's PATH) or {guest}" if \
            posixpath.dirname(guest) in GUEST_PATH.split(":") else f"write {guest}"
        return (f"{word} is where binaries takes the program from on the host; the guest "
                f"has it at {guest}: {hint}")


def _binaries(workload: Workload) -> DeclaredBinaries:
    spelled = {}
    for item in workload.binaries:
        host = deps.declared_host_path(workload, "binaries", item)
        guest = deps.binary_guest_path(item, host)
        spelled.update({item.value: guest, str(host): guest})
    guests = frozenset(spelled.values())
    return DeclaredBinaries(guests, frozenset(GUEST_PATH.split(":")) |
                            {posixpath.dirname(g) for g in guests}, spelled)


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


def script_file_problem(view: GuestView, script: str) -> str:
    """Why a shell could not read its commands from script ("" if it could, or
    it is made while the line runs)."""
    if not script.startswith("/") or script.startswith(RUNTIME_PLACES) or \
            view.lookup(script) is not None:
        return ""
    return (f"{script} is not in the guest, and a shell would read its commands from it: "
            f"declare it in files (an absolute path is kept) or binaries")


def argument_problem(view: GuestView, argument: str, folders: frozenset[str]) -> str:
    """An absolute path given to a command, in a folder the guest runs programs
    from (its PATH, the folders of declared binaries), is taken for a program
    that command runs (a wrapper's: wis {tmp} /opt/bench/prog): the guest must
    have it. Paths elsewhere are data or output, the program's own business."""
    path = posixpath.normpath(argument)
    folder = posixpath.dirname(path)
    if not argument.startswith("/") or folder not in folders or view.lookup(path) is not None:
        return ""
    near = difflib.get_close_matches(posixpath.basename(path), [
        posixpath.basename(p) for p in view.files
        if posixpath.dirname(p) == folder and executable(view.lookup(p) or view.files[p])], 1)
    hint = f" (did you mean {folder}/{near[0]}?)" if near else ""
    return (f"{argument} is not in the guest{hint}: a path in {folder}, where the guest "
            f"keeps programs, is taken for a program its command runs; declare it in "
            f"binaries (an absolute path is kept) or packages")
