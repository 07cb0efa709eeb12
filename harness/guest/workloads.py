"""Workload declarations: workloads/*.wl, read and validated before anything is built.

A declaration is 'key = value' lines. A line whose first non-blank
character is '#' is a comment; a '#' anywhere else is part of the value (a
run line or a regular expression may hold one). Keys:

    name      unique name, [a-z0-9-]+ (required; must match the file name)
    summary   one line: what it does and which kernel path it aims at (required)
    run       the guest command (required): one line of shell, run by sh -e in
              a shell and process group of its own, inside the step's markers,
              timing and time limit; its pipes and redirections stay inside it.
              The working directory and TMPDIR are {tmp} (a program that
              unmounts {dir} must 'cd /' first). Placeholders:
                {procs}  worker processes   {cpus}  vCPUs of the boot
                {dir}    the work directory (a fresh mount of {fs})
                {tmp}    a scratch directory on {fs} (also $TMPDIR): the
                         guest's /tmp is the harness's own tmpfs
                {dev}    the block device under {dir} (ext4, xfs), else empty
                {source} what to mount on {dir}: the device, or tmpfs
                {fs}     tmpfs, ext4 or xfs
                {prefix} where the command leaves extra output (lock_stat
                         windows {prefix}.PHASE.lock_stat, fio {prefix}.fio.json)
              Other braces are left alone ('{print $1}', '${HOME}').
              `phase NAME OPS COMMAND...` in a run line times COMMAND, brackets
              the lock counts around it and prints its result line (see the
              README): several timed phases from programs that time nothing.
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
              (summed over the lines that match), rate (operations per
              second), elapsed_s, phase (plain 'match' only; else the phase is
              the workload's name or PHASE); any other group becomes a figure
              of its own, its unit from the suffix (_ns _us _ms _s _mb_s).
              Allowed with output result-lines or match. A match key that
              matches no line makes the step a workload-error.
    ops       output none: the operations of the timed window, a number or a
              product or sum of numbers and {procs}: '2000 * {procs}'
    lock-start  a line containing this text (stdout or stderr) opens the
              timed window and the lock_stat window (default: the command's
              start); the program's stdout is then a terminal, so stdio
              writes each line as it is printed
    lock-end  a line containing this text closes them (default: the command's end)
    binaries  host programs the guest needs: absolute paths, or paths
              relative to workloads/; copied in at their own path (relative
              ones to /usr/local/bin) with the shared libraries they link
    packages  Debian packages the guest needs: installed by make; their
              files (not documentation) and the shared libraries of their
              programs are copied in at their own paths
    files     data files relative to workloads/, copied to /workloads/PATH
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
    unit      what one operation is, for the report (default: op)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from harness.guest.protocol import FILESYSTEMS, SCRATCH_DIR, WORK_DIR

OUTPUTS = ("result-lines", "fio-json", "match", "none")
PLACEHOLDERS = ("procs", "cpus", "dir", "tmp", "dev", "source", "fs", "prefix")
SINGLE_KEYS = {"name", "summary", "run", "output", "fs", "procs", "windowed", "timeout",
               "default", "unit", "ops", "lock-start", "lock-end", "binaries", "packages",
               "files"}
REQUIRED = ("name", "summary", "run", "output", "fs")
MATCH_GROUPS = {"ops", "rate", "elapsed_s", "phase"}
PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
PHASE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
OPS_EXPR = re.compile(r"\d+(\s*[*+]\s*\d+)*")
PROCS_CONDITIONAL = re.compile(r"(\d+)<=cpus")


class WorkloadError(Exception):
    pass


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
    lock_start: str = ""
    lock_end: str = ""
    binaries: tuple[Declared, ...] = ()
    packages: tuple[Declared, ...] = ()
    files: tuple[Declared, ...] = ()

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


def _fail(path: Path, lineno: int | None, message: str):
    where = f"{path}:{lineno}" if lineno else str(path)
    raise WorkloadError(f"{where}: {message}")


def _yes_no(path: Path, key: str, lineno: int, value: str) -> bool:
    if value not in ("yes", "no"):
        _fail(path, lineno, f"{key} must be yes or no, not {value!r}")
    return value == "yes"


def _unknown_placeholders(text: str, allowed) -> list[str]:
    return sorted({m.group(1) for m in PLACEHOLDER.finditer(text)} - set(allowed))


def _match(path: Path, key: str, lineno: int, value: str) -> Match:
    phase = key[len("match."):] if key.startswith("match.") else None
    if phase is not None and not PHASE_NAME.fullmatch(phase):
        _fail(path, lineno, f"{key}: {phase!r} is not a phase name (letters, digits, _ . -)")
    try:
        pattern = re.compile(value)
    except re.error as err:
        _fail(path, lineno, f"{key}: not a regular expression: {err}")
    groups = set(pattern.groupindex)
    if not groups:
        _fail(path, lineno, f"{key}: no named group: name what it reads, e.g. (?P<ops>\\d+) "
                            f"or (?P<rate>[0-9.]+)")
    if phase is not None and "phase" in groups:
        _fail(path, lineno, f"{key}: a group 'phase' and a phase in the key: choose one")
    return Match(phase, pattern, lineno)


def parse(path: Path, text: str | None = None) -> Workload:
    text = path.read_text() if text is None else text
    values: dict[str, tuple[int, str]] = {}
    matches: list[Match] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            _fail(path, lineno, f"expected 'key = value', got {line!r}")
        key, value = (part.strip() for part in line.split("=", 1))
        if key not in SINGLE_KEYS and key != "match" and not key.startswith("match."):
            _fail(path, lineno, f"unknown key {key!r} (known: "
                                f"{', '.join(sorted(SINGLE_KEYS | {'match', 'match.PHASE'}))})")
        if not value:
            _fail(path, lineno, f"{key} has no value")
        if key == "match" or key.startswith("match."):
            matches.append(_match(path, key, lineno, value))
            continue
        if key in values:
            _fail(path, lineno, f"{key} given twice (first on line {values[key][0]})")
        values[key] = (lineno, value)
    for key in REQUIRED:
        if key not in values:
            _fail(path, None, f"missing required key {key!r}")

    def get(key: str, default: str) -> tuple[int, str]:
        return values.get(key, (0, default))

    lineno, name = values["name"]
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]*", name):
        _fail(path, lineno, f"name {name!r} must be lower case letters, digits and dashes")
    if path.suffix == ".wl" and path.stem != name:
        _fail(path, lineno, f"name {name!r} does not match the file name {path.name}")
    lineno, run = values["run"]
    unknown = _unknown_placeholders(run, PLACEHOLDERS)
    if unknown:
        _fail(path, lineno, f"run: unknown placeholder {{{unknown[0]}}} "
                            f"(known: {', '.join(PLACEHOLDERS)})")
    lineno, output = values["output"]
    if output not in OUTPUTS:
        _fail(path, lineno, f"output must be one of {', '.join(OUTPUTS)}, not {output!r}")
    if output == "match" and not matches:
        _fail(path, lineno, "output = match needs at least one 'match' key")
    if matches and output not in ("match", "result-lines"):
        _fail(path, matches[0].lineno, f"{matches[0].key} needs output = match or "
                                       f"result-lines, not {output}")
    ops_line, ops = get("ops", "")
    if ops:
        if output != "none":
            _fail(path, ops_line, f"ops names the operations of a program that reports none: "
                                  f"it needs output = none, not {output}")
        unknown = _unknown_placeholders(ops, ("procs",))
        if unknown:
            _fail(path, ops_line, f"ops: unknown placeholder {{{unknown[0]}}} (known: procs)")
        try:
            evaluate_ops(substitute(ops, {"procs": "1"}))
        except ValueError as err:
            _fail(path, ops_line, f"ops: {err}")
    lineno, fs_value = values["fs"]
    filesystems = tuple(fs_value.split())
    for fs in filesystems:
        if fs not in FILESYSTEMS:
            _fail(path, lineno, f"unknown fs {fs!r} (known: {', '.join(FILESYSTEMS)})")
    lineno, procs_value = get("procs", "cpus")
    procs = tuple(procs_value.split())
    for p in procs:
        conditional = PROCS_CONDITIONAL.fullmatch(p)
        count = conditional.group(1) if conditional else p
        if p != "cpus" and not (count.isdigit() and 0 < int(count) <= 64):
            _fail(path, lineno, f"procs: {p!r} is neither 'cpus', a count from 1 to 64 nor "
                                f"'N<=cpus'")
    lineno, timeout = get("timeout", "300")
    if not timeout.isdigit() or int(timeout) == 0:
        _fail(path, lineno, f"timeout must be a positive number of seconds, not {timeout!r}")
    windowed = _yes_no(path, "windowed", *get("windowed", "no"))
    default = _yes_no(path, "default", *get("default", "no"))
    lock_start, lock_end = get("lock-start", "")[1], get("lock-end", "")[1]
    if windowed and (lock_start or lock_end):
        key = "lock-start" if lock_start else "lock-end"
        _fail(path, values[key][0], f"{key} with windowed = yes: the program brackets its "
                                    f"own lock windows, the harness cannot also do it")

    def declared(key: str) -> tuple[Declared, ...]:
        lineno, value = get(key, "")
        return tuple(Declared(item, lineno) for item in value.split())

    return Workload(name=name, summary=values["summary"][1], run=run, output=output,
                    filesystems=filesystems, procs=procs, windowed=windowed,
                    timeout_s=int(timeout), default=default, unit=get("unit", "op")[1],
                    path=path, text=text, matches=tuple(matches), ops=ops,
                    lock_start=lock_start, lock_end=lock_end, binaries=declared("binaries"),
                    packages=declared("packages"), files=declared("files"))


def load_all(directory: Path) -> dict[str, Workload]:
    """Every declaration in directory, validated; the first bad one raises."""
    workloads: dict[str, Workload] = {}
    for path in sorted(directory.glob("*.wl")):
        workload = parse(path)
        workloads[workload.name] = workload
    if not workloads:
        raise WorkloadError(f"{directory}: no workload declarations (*.wl)")
    return workloads


def select(workloads: dict[str, Workload], spec: str) -> list[Workload]:
    """WORKLOADS= value: 'default', 'all', or names separated by spaces or commas."""
    if spec in ("", "default"):
        chosen = [w for w in workloads.values() if w.default]
    elif spec == "all":
        chosen = list(workloads.values())
    else:
        chosen = []
        for name in re.split(r"[\s,]+", spec.strip()):
            if name not in workloads:
                raise WorkloadError(f"unknown workload {name!r} (known: "
                                    f"{', '.join(sorted(workloads))})")
            chosen.append(workloads[name])
    return chosen
