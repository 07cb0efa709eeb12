"""Workload declarations: workloads/*.wl, read and validated before anything is built.

A declaration is 'key = value' lines; '#' starts a comment. Keys:

    name      unique name, [a-z0-9-]+ (required; must match the file name)
    summary   one line: what it does and which kernel path it aims at (required)
    run       the guest command (required); placeholders:
                {procs}  worker processes   {cpus}  vCPUs of the boot
                {dir}    the work directory (a fresh mount of {fs})
                {dev}    the block device under {dir} (ext4, xfs), else empty
                {source} what to mount on {dir}: the device, or tmpfs
                {fs}     tmpfs, ext4 or xfs
                {prefix} where the command leaves extra output (lock_stat
                         windows {prefix}.PHASE.lock_stat, fio {prefix}.fio.json)
    output    result-lines (our C programs) or fio-json (required)
    fs        filesystems to run on, from: tmpfs ext4 xfs (required)
    procs     worker counts, numbers or 'cpus' (default: cpus); several give
              several steps in one boot, so thread counts compare inside a boot
    windowed  yes if the command resets and saves lock_stat around its own
              timed phases (-L {prefix}); no: the harness does it around the
              whole command (default: no)
    timeout   seconds the step may take in the guest before it is killed (default 300)
    default   yes if it belongs to the default matrix (default: no)
    unit      what one operation is, for the report (default: op)
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from pathlib import Path

from harness.guest.protocol import FILESYSTEMS, WORK_DIR

OUTPUTS = ("result-lines", "fio-json")
PLACEHOLDERS = {"procs", "cpus", "dir", "dev", "source", "fs", "prefix"}
KEYS = {"name", "summary", "run", "output", "fs", "procs", "windowed", "timeout",
        "default", "unit"}
REQUIRED = ("name", "summary", "run", "output", "fs")


class WorkloadError(Exception):
    pass


@dataclass(frozen=True)
class Workload:
    name: str
    summary: str
    run: str
    output: str
    filesystems: tuple[str, ...]
    procs: tuple[str, ...]  # numbers as strings, or "cpus"
    windowed: bool
    timeout_s: int
    default: bool
    unit: str
    path: Path
    text: str  # the declaration, for the cell cache key

    def procs_for(self, cpus: int) -> list[int]:
        counts = [cpus if p == "cpus" else int(p) for p in self.procs]
        return list(dict.fromkeys(counts))

    def command(self, *, procs: int, cpus: int, fs: str, dev: str, prefix: str) -> str:
        """The run line for one step; dev is the fs's block device, "" for tmpfs."""
        return self.run.format(procs=procs, cpus=cpus, fs=fs, prefix=prefix, dir=WORK_DIR,
                               dev=dev, source=dev or fs)


def _fail(path: Path, lineno: int | None, message: str):
    where = f"{path}:{lineno}" if lineno else str(path)
    raise WorkloadError(f"{where}: {message}")


def _yes_no(path: Path, key: str, lineno: int, value: str) -> bool:
    if value not in ("yes", "no"):
        _fail(path, lineno, f"{key} must be yes or no, not {value!r}")
    return value == "yes"


def parse(path: Path, text: str | None = None) -> Workload:
    text = path.read_text() if text is None else text
    values: dict[str, tuple[int, str]] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if "=" not in line:
            _fail(path, lineno, f"expected 'key = value', got {line!r}")
        key, value = (part.strip() for part in line.split("=", 1))
        if key not in KEYS:
            _fail(path, lineno, f"unknown key {key!r} (known: {', '.join(sorted(KEYS))})")
        if key in values:
            _fail(path, lineno, f"{key} given twice (first on line {values[key][0]})")
        if not value:
            _fail(path, lineno, f"{key} has no value")
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
    try:
        fields = {f for _, f, _, _ in string.Formatter().parse(run) if f is not None}
    except ValueError as err:
        _fail(path, lineno, f"run: {err}")
    unknown = fields - PLACEHOLDERS
    if unknown:
        _fail(path, lineno, f"run: unknown placeholder {{{sorted(unknown)[0]}}} "
                            f"(known: {', '.join(sorted(PLACEHOLDERS))})")
    lineno, output = values["output"]
    if output not in OUTPUTS:
        _fail(path, lineno, f"output must be one of {', '.join(OUTPUTS)}, not {output!r}")
    lineno, fs_value = values["fs"]
    filesystems = tuple(fs_value.split())
    for fs in filesystems:
        if fs not in FILESYSTEMS:
            _fail(path, lineno, f"unknown fs {fs!r} (known: {', '.join(FILESYSTEMS)})")
    lineno, procs_value = get("procs", "cpus")
    procs = tuple(procs_value.split())
    for p in procs:
        if p != "cpus" and not (p.isdigit() and 0 < int(p) <= 64):
            _fail(path, lineno, f"procs: {p!r} is neither 'cpus' nor a count from 1 to 64")
    lineno, timeout = get("timeout", "300")
    if not timeout.isdigit() or int(timeout) == 0:
        _fail(path, lineno, f"timeout must be a positive number of seconds, not {timeout!r}")
    windowed = _yes_no(path, "windowed", *get("windowed", "no"))
    default = _yes_no(path, "default", *get("default", "no"))
    return Workload(name=name, summary=values["summary"][1], run=run, output=output,
                    filesystems=filesystems, procs=procs, windowed=windowed,
                    timeout_s=int(timeout), default=default, unit=get("unit", "op")[1],
                    path=path, text=text)


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
