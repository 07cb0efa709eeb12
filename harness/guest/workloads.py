"""Workload declarations: *.wl files, read and validated before anything is built.

Declarations live in one or more folders (the checkout's workloads/, or
WORKLOADS_DIR / --workloads-dir: harness/layout.py). A declaration is
'key = value' lines. A line whose first non-blank character is '#' is a
comment; a '#' anywhere else is part of the value (a run line or a regular
expression may hold one). Keys:

    name      unique name, [a-z0-9-]+ (required; must match the file name)
    summary   one line: what it does and which kernel path it aims at (required)
    run       the guest command (required): one line of shell, run by sh -e in
              a session of its own (busybox sh: the guest has no other shell
              unless a workload brings one), inside the step's markers, timing
              and time limit; its pipes and redirections stay inside it. At the
              limit, and when the command ends, every process it started is
              killed, whatever process group it moved to.
              The working directory and TMPDIR are {tmp} (a program that
              unmounts {dir} must 'cd /' first). Placeholders:
                {procs}  worker processes   {cpus}  vCPUs of the boot
                {dir}    the work directory (a fresh mount of {fs})
                {tmp}    a scratch directory on {fs}, also $TMPDIR and the
                         guest's /tmp (a link to it)
                {dev}    the block device under {dir} (ext4, xfs), else empty
                {source} what to mount on {dir}: the device, or tmpfs
                {fs}     tmpfs, ext4 or xfs
                {prefix} where the command leaves extra output (lock_stat
                         windows {prefix}.PHASE.lock_stat, fio {prefix}.fio.json),
                         in the harness's own tmpfs
              Other braces are left alone ('{print $1}', '${HOME}').
              `phase NAME OPS COMMAND...` in a run line times COMMAND, brackets
              the lock counts around it and prints its result line (see the
              README): several timed phases from programs that time nothing.
              check-workloads resolves every program the line would execute
              (through wrappers such as timeout, env, nice, taskset) as the
              guest will: on its PATH or at the path written (guest/check.py
              says which arguments count as programs).
    output    what the step reports (required):
                result-lines  'result phase=... ops=... elapsed_ns=...' lines
                              (our C programs, and the `phase` helper)
                fio-json      {prefix}.fio.json
                match         lines of the program's own output, read by the
                              'match' keys
                none          nothing: wall time and exit status, no
                              throughput (unless 'ops' names the operations)
    match     a regular expression (Python) tried on every line of stdout and
    match.PHASE   stderr; may be given several times. Named groups: ops
              (summed over the lines that match, unless reduce.ops says
              otherwise), rate (operations per second), elapsed_s, phase
              (plain 'match' only; else the phase is the workload's name or
              PHASE); any other group becomes a figure of its own, its unit
              from 'unit.GROUP' or else from the suffix (_ns _us _ms _s
              _mb_s). A group read from several lines keeps the last line's
              value unless reduce.GROUP says otherwise. Allowed with output result-lines or
              match. A match key that matches no line makes the step a
              workload-error. With lock-start or lock-end, a key reads the
              lines inside the window (the start and end lines included); a
              key that matches none there reads the lines after it (a summary
              the program prints when its run ends); lines before the window
              (setup, warm-up) never count. When a key gives both ops and rate
              (and no elapsed_s), the elapsed time is ops/rate; the step notes
              it when that differs from the timed window by more than
              RATE_WINDOW_TOLERANCE.
    unit.GROUP  the unit of the figure a match key's group GROUP reads
              ('unit.max_lat = us')
    reduce.GROUP  how the values a group reads from several lines (of every
              match key of the phase) become its one figure: sum, last,
              min, max or mean (ops: not mean). Default: ops sum, every
              other group last ('reduce.max_per_task = max')
    ops       output none: the operations of the timed window, a number or a
              product or sum of numbers and {procs}: '2000 * {procs}'. Without
              ops-count they are declared, not measured, and the step and the
              report say so
    ops-count output none with ops: a regular expression on the program's
              output (the lines that count, as for match) that reads back how
              many operations ran: with a group ops, the sum of its numbers;
              with a group id, how many different ids it matched (a program
              that logs each operation under its own name, maybe over several
              lines: fsstress -v's '^(?P<id>[0-9]+/[0-9]+): '); with neither, the
              lines it matched. The throughput is then of the operations
              counted, and the step notes when they are not those declared
    lock-start  a line containing this text (stdout or stderr) opens the
              timed window and the lock_stat window (default: the command's
              start); the program's stdout is then a terminal, so stdio
              writes each line as it is printed
    lock-end  a line containing this text closes them (default: the command's end)
    binaries  host programs the guest needs, copied in with the shared
              libraries they link. A script (#!) is refused unless the
              guest has its interpreter at the path it names (busybox sh is
              /bin/sh)
    files     data files the guest needs, copied in as they are
              binaries and files follow one path rule: a path is absolute, or
              relative to the folder of the .wl file and inside it (no '..').
              An absolute path is kept in the guest; a relative one goes to
              /usr/local/bin/NAME (binaries: on the guest's PATH) or
              /workloads/PATH (files)
    packages  Debian packages the guest needs: installed by make; their
              files (not documentation) and the shared libraries of their
              programs are copied in at their own paths
    fs        filesystems to run on, from: tmpfs ext4 xfs (required)
    procs     worker counts, numbers or 'cpus' (default: cpus); several give
              several steps in one boot, so thread counts compare inside a
              boot. 'N<=cpus' runs N workers only in boots with N vCPUs or more
    windowed  yes if the command resets and saves lock_stat around its own
              timed phases (-L {prefix}, or the phase helper); no: the harness
              does it around the whole command or the lock-start/-end lines
              (default: no)
    timeout   seconds the step may take in the guest before it is killed (default 300)
    default   yes if it belongs to the default matrix (default: no)
    count-boots  yes: it also runs in the matrix's count boots (COUNT_CPUS,
              default 4 vCPUs: debug flavour only, never timed, oversubscribed
              beyond the host's cores), for the retries and contention counts
              that need more CPUs at once than the timed boots have (default: no)
    flavours  the kernel flavours whose boots run it (default: every one the
              run has): 'debug' for a workload whose evidence is lock counts
              and retries, when a boot of its own per timed boot would cost
              more than its timing could tell
    cmdline   kernel parameters the workload needs (e.g. ihash_entries=64):
              its steps get boots of their own with them, never shared with
              other workloads' steps; the parameters are part of its cells' key
    unit      what one operation is, for the report (default: op)
    shared-inodes  how many inodes all the workers share (a hot-inode
              workload: every worker on the same N files); the scaling model
              queues per-inode locks over that many instances (default: the
              workers share no inode)
    background  the phases ('all', or phase names) in which a process loops beside
              the workers (a syncfs or drop_caches loop, walkers against churn):
              the workers are not alike, which the scaling model's symmetric
              validation cannot represent, so its summary leaves them out and
              lists them apart (default: none). For the report only, as
              difference
    difference  the difference between the two designs the workload puts
    difference.PHASE  to work, in a few words ('the reference count under
              i_lock'); the report answers per difference. PHASE gives a
              phase one of its own. For the report only: it is not part of
              the cells' key, so writing one measures nothing anew

Every problem of a file is reported, each with its file and line; load_all
reads every file of every folder before it gives up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from harness.guest.protocol import FILESYSTEMS, SCRATCH_DIR, WORK_DIR
from harness.parsers.workload_output import REDUCTIONS

OUTPUTS = ("result-lines", "fio-json", "match", "none")
PLACEHOLDERS = ("procs", "cpus", "dir", "tmp", "dev", "source", "fs", "prefix")
SINGLE_KEYS = {"name", "summary", "run", "output", "fs", "procs", "windowed", "timeout",
               "default", "unit", "ops", "ops-count", "lock-start", "lock-end", "binaries",
               "packages", "files", "shared-inodes", "count-boots", "flavours", "cmdline",
               "background"}
REQUIRED = ("name", "summary", "run", "output", "fs")
MATCH_GROUPS = {"ops", "rate", "elapsed_s", "phase"}
# ops-count's groups: numbers of operations (summed), or each operation's own
# name (counted once however many lines it prints); with neither, one per line.
OPS_COUNT_GROUPS = ("ops", "id")
PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
PHASE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
UNIT_TEXT = re.compile(r"\S+")
OPS_EXPR = re.compile(r"\d+(\s*[*+]\s*\d+)*")
PROCS_CONDITIONAL = re.compile(r"(\d+)<=cpus")
# ops/rate against the timed window: beyond this relative difference the step
# says so (a rate measured over another interval than the window).
RATE_WINDOW_TOLERANCE = 0.10
# Kernel parameters: name or name=value words, nothing a shell or the command
# line's own syntax would read otherwise.
CMDLINE_WORD = re.compile(r"[A-Za-z0-9_.-]+(=[A-Za-z0-9_.,:-]+)?")
FLAVOURS = ("perf", "debug", "sanitize")


class WorkloadError(Exception):
    """Bad declarations: every problem found, each 'FILE:LINE: message'."""

    def __init__(self, problems: str | list[str]):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True)
class Match:
    """One 'match' key: which phase its lines feed, and where it was declared."""
    phase: str | None  # None: the group 'phase' of each line, else the workload's name
    pattern: re.Pattern
    lineno: int

    @property
    def key(self) -> str:
        return f"match.{self.phase}" if self.phase else "match"


@dataclass(frozen=True)
class Declared:
    """A value of binaries, packages or files, with the line that declared it."""
    value: str
    lineno: int


@dataclass(frozen=True)
class Workload:
    name: str
    summary: str
    run: str
    output: str
    filesystems: tuple[str, ...]
    procs: tuple[str, ...]  # numbers as strings, "cpus", or "N<=cpus"
    windowed: bool
    timeout_s: int
    default: bool
    unit: str
    path: Path
    text: str  # the declaration, for the cell cache key
    matches: tuple[Match, ...] = ()
    ops: str = ""  # output none: the operation count, with placeholders
    ops_count: re.Pattern | None = None  # output none: reads back how many operations ran
    lock_start: str = ""
    lock_end: str = ""
    binaries: tuple[Declared, ...] = ()
    packages: tuple[Declared, ...] = ()
    files: tuple[Declared, ...] = ()
    figure_units: tuple[tuple[str, str], ...] = ()  # (group, unit) from unit.GROUP keys
    reductions: tuple[tuple[str, str], ...] = ()  # (group, sum|last|min|max|mean): reduce.GROUP
    key_lines: tuple[tuple[str, int], ...] = ()  # (key, line) of the single keys
    shared_inodes: int | None = None  # the inodes all workers share (hot-inode workloads)
    count_boots: bool = False
    flavours: tuple[str, ...] = FLAVOURS
    cmdline: str = ""
    differences: tuple[tuple[str, str], ...] = ()  # (phase, or "" for the workload; text)
    background: tuple[str, ...] = ()  # phases with a process looping beside the workers

    def has_background(self, phase: str) -> bool:
        return "all" in self.background or phase in self.background

    @property
    def measured_text(self) -> str:
        """The declaration without its report-only keys: what the cells are keyed by."""
        return REPORT_ONLY.sub("", self.text)

    def difference(self, phase: str) -> str:
        """The design difference a phase works, or the workload's ("" if none given)."""
        found = dict(self.differences)
        return found.get(phase, found.get("", ""))

    def line_of(self, key: str) -> int:
        """The line that declared key (0: not declared)."""
        return dict(self.key_lines).get(key, 0)

    @property
    def folder(self) -> Path:
        """Where relative binaries and files are found: the declaration's folder."""
        return self.path.parent

    @property
    def window(self) -> str:
        """Who brackets lock_stat: the program, the harness around the command,
        or the harness at the lock-start/-end lines."""
        if self.windowed:
            return "program"
        return "lines" if self.lock_start or self.lock_end else "harness"

    def procs_for(self, cpus: int) -> list[int]:
        counts = []
        for p in self.procs:
            conditional = PROCS_CONDITIONAL.fullmatch(p)
            if conditional:
                if int(conditional.group(1)) <= cpus:
                    counts.append(int(conditional.group(1)))
            else:
                counts.append(cpus if p == "cpus" else int(p))
        return list(dict.fromkeys(counts))

    def command(self, *, procs: int, cpus: int, fs: str, dev: str, prefix: str) -> str:
        """The run line for one step; dev is the fs's block device, "" for tmpfs."""
        return substitute(self.run, _values(procs=procs, cpus=cpus, fs=fs, dev=dev,
                                            prefix=prefix))

    def ops_for(self, procs: int) -> int | None:
        """The declared operation count of one step (output none), if any."""
        if not self.ops:
            return None
        return evaluate_ops(substitute(self.ops, {"procs": str(procs)}))


def _values(*, procs: int, cpus: int, fs: str, dev: str, prefix: str) -> dict[str, str]:
    return {"procs": str(procs), "cpus": str(cpus), "fs": fs, "prefix": prefix,
            "dir": WORK_DIR, "tmp": SCRATCH_DIR, "dev": dev, "source": dev or fs}


def substitute(text: str, values: dict[str, str]) -> str:
    """Known {placeholders} replaced; any other brace left as written."""
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def evaluate_ops(expr: str) -> int:
    """'2000 * 4 + 1' -> 8001: products of numbers, summed."""
    if not OPS_EXPR.fullmatch(expr.strip()):
        raise ValueError(f"{expr!r} is not a sum or product of numbers")
    total = 0
    for term in expr.split("+"):
        product = 1
        for factor in term.split("*"):
            product *= int(factor)
        total += product
    return total


def _unknown_placeholders(text: str, allowed) -> list[str]:
    return sorted({m.group(1) for m in PLACEHOLDER.finditer(text)} - set(allowed))


# -- reading one file: every problem is collected, then raised together


@dataclass
class _Lines:
    """The key = value lines of one file, and every problem found in it."""
    path: Path
    values: dict[str, tuple[int, str]] = field(default_factory=dict)
    matches: list[Match] = field(default_factory=list)
    units: dict[str, tuple[int, str]] = field(default_factory=dict)  # unit.GROUP
    reductions: dict[str, tuple[int, str]] = field(default_factory=dict)  # reduce.GROUP
    differences: dict[str, tuple[int, str]] = field(default_factory=dict)  # difference[.PHASE]
    found: list[tuple[int, str]] = field(default_factory=list)  # (line, message)

    def fail(self, lineno: int | None, message: str) -> None:
        where = f"{self.path}:{lineno}" if lineno else str(self.path)
        self.found.append((lineno or 0, f"{where}: {message}"))

    @property
    def problems(self) -> list[str]:
        """In the order of the file's lines; the file's own (missing keys) first."""
        return [message for _, message in sorted(self.found, key=lambda f: f[0])]

    def get(self, key: str, default: str) -> tuple[int, str]:
        return self.values.get(key, (0, default))


DIFFERENCE_KEY = "difference"
# The keys that only say what a workload is for: left out of Workload.measured_text.
REPORT_ONLY = re.compile(r"^\s*(difference(\.[^=\s]+)?|background)\s*=.*$\n?", re.MULTILINE)


def _is_difference_key(key: str) -> bool:
    return key == DIFFERENCE_KEY or key.startswith(DIFFERENCE_KEY + ".")


def _is_match_key(key: str) -> bool:
    return key == "match" or key.startswith("match.")


def _read_line(lines: _Lines, lineno: int, line: str) -> None:
    if "=" not in line:
        lines.fail(lineno, f"expected 'key = value', got {line!r}")
        return
    key, value = (part.strip() for part in line.split("=", 1))
    if key not in SINGLE_KEYS and not _is_match_key(key) and not key.startswith("unit.") \
            and not key.startswith("reduce.") and not _is_difference_key(key):
        known = sorted(SINGLE_KEYS | {"match", "match.PHASE", "unit.GROUP", "reduce.GROUP",
                                      "difference", "difference.PHASE"})
        lines.fail(lineno, f"unknown key {key!r} (known: {', '.join(known)})")
    elif not value:
        lines.fail(lineno, f"{key} has no value")
    elif _is_match_key(key):
        match = _match(lines, key, lineno, value)
        if match:
            lines.matches.append(match)
    elif key.startswith("unit."):
        _figure_unit(lines, key, lineno, value)
    elif key.startswith("reduce."):
        _reduction(lines, key, lineno, value)
    elif _is_difference_key(key):
        _difference(lines, key, lineno, value)
    elif key in lines.values:
        lines.fail(lineno, f"{key} given twice (first on line {lines.values[key][0]})")
    else:
        lines.values[key] = (lineno, value)


def _match(lines: _Lines, key: str, lineno: int, value: str) -> Match | None:
    phase = key[len("match."):] if key.startswith("match.") else None
    if phase is not None and not PHASE_NAME.fullmatch(phase):
        lines.fail(lineno, f"{key}: {phase!r} is not a phase name (letters, digits, _ . -)")
        return None
    try:
        pattern = re.compile(value)
    except re.error as err:
        lines.fail(lineno, f"{key}: not a regular expression: {err}")
        return None
    groups = set(pattern.groupindex)
    if not groups:
        lines.fail(lineno, f"{key}: no named group: name what it reads, e.g. (?P<ops>\\d+) "
                           f"or (?P<rate>[0-9.]+)")
    elif phase is not None and "phase" in groups:
        lines.fail(lineno, f"{key}: a group 'phase' and a phase in the key: choose one")
    else:
        return Match(phase, pattern, lineno)
    return None


def _difference(lines: _Lines, key: str, lineno: int, value: str) -> None:
    phase = key[len(DIFFERENCE_KEY) + 1:]
    if key in lines.differences:
        lines.fail(lineno, f"{key} given twice (first on line {lines.differences[key][0]})")
    elif key != DIFFERENCE_KEY and not PHASE_NAME.fullmatch(phase):
        lines.fail(lineno, f"{key}: {phase!r} is not a phase name (letters, digits, _ . -)")
    else:
        lines.differences[key] = (lineno, " ".join(value.split()))


def _figure_unit(lines: _Lines, key: str, lineno: int, value: str) -> None:
    group = key[len("unit."):]
    if key in lines.units:
        lines.fail(lineno, f"{key} given twice (first on line {lines.units[key][0]})")
    elif group in MATCH_GROUPS:
        lines.fail(lineno, f"{key}: {group} is not a figure of its own (the units of "
                           f"{', '.join(sorted(MATCH_GROUPS))} are fixed; 'unit' names what "
                           f"one operation is)")
    elif not UNIT_TEXT.fullmatch(value):
        lines.fail(lineno, f"{key}: a unit is one word, not {value!r}")
    else:
        lines.units[key] = (lineno, value)


def _reduction(lines: _Lines, key: str, lineno: int, value: str) -> None:
    group = key[len("reduce."):]
    if key in lines.reductions:
        lines.fail(lineno, f"{key} given twice (first on line {lines.reductions[key][0]})")
    elif value not in REDUCTIONS:
        lines.fail(lineno, f"{key}: {value!r} is not a reduction (known: "
                           f"{', '.join(REDUCTIONS)})")
    elif group == "phase":
        lines.fail(lineno, f"{key}: the group phase names a phase, it has no values to reduce")
    elif group == "ops" and value == "mean":
        lines.fail(lineno, f"{key}: ops counts operations, and a mean of counts counts none: "
                           f"sum, last, min or max")
    else:
        lines.reductions[key] = (lineno, value)


def _read(path: Path, text: str) -> _Lines:
    lines = _Lines(path)
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line and not line.startswith("#"):
            _read_line(lines, lineno, line)
    for key in REQUIRED:
        if key not in lines.values:
            lines.fail(None, f"missing required key {key!r}")
    return lines


# -- checking the values, each on its own


def _check_name(lines: _Lines) -> str:
    lineno, name = lines.get("name", "")
    if name and not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name):
        lines.fail(lineno, f"name {name!r} must be lower case letters, digits and dashes")
    elif name and lines.path.suffix == ".wl" and lines.path.stem != name:
        lines.fail(lineno, f"name {name!r} does not match the file name {lines.path.name}")
    return name


def _check_run(lines: _Lines) -> str:
    lineno, run = lines.get("run", "")
    unknown = _unknown_placeholders(run, PLACEHOLDERS)
    if unknown:
        lines.fail(lineno, f"run: unknown placeholder {{{unknown[0]}}} "
                           f"(known: {', '.join(PLACEHOLDERS)})")
    return run


def _check_output(lines: _Lines) -> str:
    lineno, output = lines.get("output", "")
    matches = lines.matches
    if output and output not in OUTPUTS:
        lines.fail(lineno, f"output must be one of {', '.join(OUTPUTS)}, not {output!r}")
    elif output == "match" and not matches:
        lines.fail(lineno, "output = match needs at least one 'match' key")
    elif matches and output and output not in ("match", "result-lines"):
        lines.fail(matches[0].lineno, f"{matches[0].key} needs output = match or "
                                      f"result-lines, not {output}")
    groups = {g for m in matches for g in m.pattern.groupindex} - MATCH_GROUPS
    for key, (unit_line, _) in lines.units.items():
        if key[len("unit."):] not in groups:
            lines.fail(unit_line, f"{key}: no match key has a group {key[len('unit.'):]!r} "
                                  f"(figures: {', '.join(sorted(groups)) or 'none'})")
    read = {g for m in matches for g in m.pattern.groupindex} - {"phase"}
    for key, (reduce_line, _) in lines.reductions.items():
        if key[len("reduce."):] not in read:
            lines.fail(reduce_line, f"{key}: no match key has a group {key[len('reduce.'):]!r} "
                                    f"(groups: {', '.join(sorted(read)) or 'none'})")
    return output


def _check_ops(lines: _Lines, output: str) -> str:
    lineno, ops = lines.get("ops", "")
    if not ops:
        return ops
    if output != "none":
        lines.fail(lineno, f"ops names the operations of a program that reports none: "
                           f"it needs output = none, not {output}")
    unknown = _unknown_placeholders(ops, ("procs",))
    if unknown:
        lines.fail(lineno, f"ops: unknown placeholder {{{unknown[0]}}} (known: procs)")
        return ops
    try:
        evaluate_ops(substitute(ops, {"procs": "1"}))
    except ValueError as err:
        lines.fail(lineno, f"ops: {err}")
    return ops


def _check_ops_count(lines: _Lines, ops: str) -> re.Pattern | None:
    lineno, value = lines.get("ops-count", "")
    if not value:
        return None
    if not ops:
        lines.fail(lineno, "ops-count reads back the operations 'ops' declares: it needs "
                           "output = none and ops (a program that reports its operations "
                           "is output = match)")
        return None
    try:
        pattern = re.compile(value)
    except re.error as err:
        lines.fail(lineno, f"ops-count: not a regular expression: {err}")
        return None
    groups = set(pattern.groupindex)
    if not groups <= set(OPS_COUNT_GROUPS) or len(groups) > 1:
        lines.fail(lineno, f"ops-count: one group at most, ops (numbers of operations, "
                           f"summed) or id (an operation's name, counted once), not "
                           f"{', '.join(sorted(groups))}")
        return None
    return pattern


def _check_filesystems(lines: _Lines) -> tuple[str, ...]:
    lineno, value = lines.get("fs", "")
    for fs in value.split():
        if fs not in FILESYSTEMS:
            lines.fail(lineno, f"unknown fs {fs!r} (known: {', '.join(FILESYSTEMS)})")
    return tuple(value.split())


def _check_procs(lines: _Lines) -> tuple[str, ...]:
    lineno, value = lines.get("procs", "cpus")
    for p in value.split():
        conditional = PROCS_CONDITIONAL.fullmatch(p)
        count = conditional.group(1) if conditional else p
        if p != "cpus" and not (count.isdigit() and 0 < int(count) <= 64):
            lines.fail(lineno, f"procs: {p!r} is neither 'cpus', a count from 1 to 64 nor "
                               f"'N<=cpus'")
    return tuple(value.split())


def _check_timeout(lines: _Lines) -> int:
    lineno, timeout = lines.get("timeout", "300")
    if not timeout.isdigit() or int(timeout) == 0:
        lines.fail(lineno, f"timeout must be a positive number of seconds, not {timeout!r}")
        return 0
    return int(timeout)


def _check_yes_no(lines: _Lines, key: str, default: str) -> bool:
    lineno, value = lines.get(key, default)
    if value not in ("yes", "no"):
        lines.fail(lineno, f"{key} must be yes or no, not {value!r}")
    return value == "yes"


def _check_window(lines: _Lines, windowed: bool) -> tuple[str, str]:
    lock_start, lock_end = lines.get("lock-start", "")[1], lines.get("lock-end", "")[1]
    if windowed and (lock_start or lock_end):
        key = "lock-start" if lock_start else "lock-end"
        lines.fail(lines.values[key][0], f"{key} with windowed = yes: the program brackets "
                                         f"its own lock windows, the harness cannot also do it")
    return lock_start, lock_end


def _check_shared_inodes(lines: _Lines) -> int | None:
    lineno, shared = lines.get("shared-inodes", "")
    if not shared:
        return None
    if not (shared.isdigit() and int(shared) > 0):
        lines.fail(lineno, f"shared-inodes must be a positive number of inodes, not {shared!r}")
        return None
    return int(shared)


def _check_paths(lines: _Lines, key: str) -> tuple[Declared, ...]:
    """binaries and files: absolute, or relative to the declaration's folder and inside it."""
    lineno, value = lines.get(key, "")
    items = tuple(Declared(item, lineno) for item in value.split())
    for item in items:
        if not Path(item.value).is_absolute() and ".." in Path(item.value).parts:
            lines.fail(lineno, f"{key}: {item.value} leaves the folder of this declaration: "
                               f"give an absolute path (kept at that path in the guest), or "
                               f"keep the .wl file beside it (WORKLOADS_DIR)")
    return items


def _check_flavours(lines: _Lines) -> tuple[str, ...]:
    lineno, value = lines.get("flavours", " ".join(FLAVOURS))
    for flavour in value.split():
        if flavour not in FLAVOURS:
            lines.fail(lineno, f"flavours: unknown flavour {flavour!r} "
                               f"(known: {', '.join(FLAVOURS)})")
    return tuple(value.split())


def _check_cmdline(lines: _Lines) -> str:
    lineno, value = lines.get("cmdline", "")
    for word in value.split():
        if not CMDLINE_WORD.fullmatch(word):
            lines.fail(lineno, f"cmdline: {word!r} is not a kernel parameter "
                               f"(name or name=value of letters, digits, _ . , : -)")
    return " ".join(value.split())


def parse(path: Path, text: str | None = None) -> Workload:
    """One declaration; a WorkloadError lists every problem of the file."""
    text = path.read_text() if text is None else text
    lines = _read(path, text)
    output = _check_output(lines)
    windowed = _check_yes_no(lines, "windowed", "no")
    lock_start, lock_end = _check_window(lines, windowed)
    workload = Workload(
        name=_check_name(lines), summary=lines.get("summary", "")[1], run=_check_run(lines),
        output=output, filesystems=_check_filesystems(lines), procs=_check_procs(lines),
        windowed=windowed, timeout_s=_check_timeout(lines),
        default=_check_yes_no(lines, "default", "no"), unit=lines.get("unit", "op")[1],
        path=path, text=text, matches=tuple(lines.matches), ops=_check_ops(lines, output),
        ops_count=_check_ops_count(lines, lines.get("ops", "")[1]),
        lock_start=lock_start, lock_end=lock_end, binaries=_check_paths(lines, "binaries"),
        packages=tuple(Declared(v, lines.get("packages", "")[0])
                       for v in lines.get("packages", "")[1].split()),
        files=_check_paths(lines, "files"),
        figure_units=tuple((k[len("unit."):], u) for k, (_, u) in lines.units.items()),
        reductions=tuple((k[len("reduce."):], r) for k, (_, r) in lines.reductions.items()),
        key_lines=tuple((key, lineno) for key, (lineno, _) in lines.values.items()),
        shared_inodes=_check_shared_inodes(lines),
        count_boots=_check_yes_no(lines, "count-boots", "no"),
        flavours=_check_flavours(lines), cmdline=_check_cmdline(lines),
        background=tuple(lines.get("background", "")[1].split()),
        differences=tuple((k[len(DIFFERENCE_KEY) + 1:], v)
                          for k, (_, v) in lines.differences.items()))
    if lines.problems:
        raise WorkloadError(lines.problems)
    return workload


def _folders(folders: Path | Iterable[Path]) -> list[Path]:
    return [folders] if isinstance(folders, Path) else list(folders)


def read_all(folders: Path | Iterable[Path]) -> tuple[dict[str, Workload], list[str]]:
    """Every declaration of the folders that is valid, and the problems of every
    one that is not (each 'FILE:LINE: message')."""
    workloads: dict[str, Workload] = {}
    problems: list[str] = []
    folders = _folders(folders)
    for folder in folders:
        if not folder.is_dir():
            problems.append(f"{folder}: no such folder of workload declarations")
            continue
        for path in sorted(folder.glob("*.wl")):
            try:
                workload = parse(path)
            except WorkloadError as err:
                problems += err.problems
                continue
            if workload.name in workloads:
                problems.append(f"{path}: workload {workload.name!r} is declared twice: "
                                f"also in {workloads[workload.name].path}")
                continue
            workloads[workload.name] = workload
    if not workloads and not problems:
        problems.append(f"{', '.join(map(str, folders))}: no workload declarations (*.wl)")
    return workloads, problems


PROBLEM_PLACE = re.compile(r"(.*?):(\d+): ")


def in_file_order(problems: list[str]) -> list[str]:
    """'FILE:LINE: message' problems by file, then line ('FILE: ...' first)."""
    def place(problem: str) -> tuple[str, int]:
        found = PROBLEM_PLACE.match(problem)
        return (found.group(1), int(found.group(2))) if found else \
            (problem.split(": ", 1)[0], 0)
    return sorted(problems, key=place)


def load_all(folders: Path | Iterable[Path]) -> dict[str, Workload]:
    """Every declaration of the folders, validated; a WorkloadError lists every
    problem of every file."""
    workloads, problems = read_all(folders)
    if problems:
        raise WorkloadError(problems)
    return workloads


def oversubscribed(runs: Iterable[tuple[Workload, int, int]], override: str = "") -> list[str]:
    """One warning per workload whose steps run more processes than their boot has
    vCPUs; runs: (workload, procs, vCPUs) of every step planned. override: the
    command-line option that set procs instead of the declarations ('--procs 4')."""
    found: dict[str, tuple[Workload, dict[int, set[int]]]] = {}
    for workload, procs, cpus in runs:
        if procs > cpus:
            found.setdefault(workload.name, (workload, {}))[1].setdefault(procs, set()).add(cpus)
    warnings = []
    for workload, counts in found.values():
        pairs = "; ".join(f"{procs} at {' and '.join(map(str, sorted(cpus)))} vCPU"
                          f"{'s' if max(cpus) > 1 else ''}"
                          for procs, cpus in sorted(counts.items()))
        where = override or f"procs of {workload.path}:{workload.line_of('procs')}"
        warnings.append(
            f"{workload.name} runs more processes than its boot has vCPUs ({pairs}; {where}): "
            f"they take turns on the vCPUs, so those steps time the guest's scheduler as "
            f"much as the workload; 'N<=cpus' in procs runs N only where it fits")
    return warnings


def differences_elsewhere(known: dict[str, Workload], chosen: list[Workload]
                          ) -> dict[str, list[str]]:
    """The design differences that workloads in reach declare and no chosen one does:
    difference -> the workloads (or workload/phase) that would measure it."""
    measured = {text for w in chosen for _, text in w.differences}
    out: dict[str, list[str]] = {}
    for w in known.values():
        for phase, text in w.differences:
            if text not in measured:
                out.setdefault(text, []).append(w.name + (f"/{phase}" if phase else ""))
    return out


def select(workloads: dict[str, Workload], spec: str) -> list[Workload]:
    """WORKLOADS= value: names separated by spaces or commas, where 'default' stands
    for the workloads that say default = yes and 'all' for every one; empty: default."""
    chosen: dict[str, Workload] = {}
    for name in re.split(r"[\s,]+", spec.strip() or "default"):
        if name == "default":
            found = [w for w in workloads.values() if w.default]
            if not found:
                folders = sorted({str(w.folder) for w in workloads.values()})
                raise WorkloadError(f"no workload of {', '.join(folders)} says default = yes: "
                                    f"name the ones to run (WORKLOADS=...), or 'all'")
        elif name == "all":
            found = list(workloads.values())
        elif name in workloads:
            found = [workloads[name]]
        else:
            raise WorkloadError(f"unknown workload {name!r} (known: "
                                f"{', '.join(sorted(workloads))})")
        chosen.update((w.name, w) for w in found)
    return list(chosen.values())
