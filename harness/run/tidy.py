"""The tidy table: one row per measured number, the only thing the report reads.

Tab-separated with a header, so gnuplot and any spreadsheet read it as is.
"""

from __future__ import annotations

import csv
import gzip
import io
from dataclasses import astuple, dataclass, fields
from pathlib import Path


@dataclass(frozen=True)
class Row:
    kernel: str
    flavour: str  # perf or debug
    mode: str  # tcg, tcg-icount or kvm
    workload: str
    fs: str
    cpus: int
    procs: int
    repetition: int
    phase: str  # the workload's timed phase ("all" for whole-step figures)
    lock: str  # icache lock role for lock metrics, else ""
    metric: str
    value: float
    unit: str
    status: str  # the step's classification (ok, lockdep, ...)
    cell: str  # cell key: which boot and step produced it
    # host.Machine.id of the machine it was measured on (manifest.json's
    # "machines" describes each): rows of different machines are never
    # averaged together. "" in tables written before the column existed.
    machine: str = ""


COLUMNS = [f.name for f in fields(Row)]
_TYPES = {f.name: f.type for f in fields(Row)}
# Columns a table may lack because it predates them, and the value they then take.
ADDED_LATER = {"machine": ""}


def write(rows: list[Row], path: Path) -> None:
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter="\t", lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow(astuple(row))
    tmp = path.with_suffix(".partial")
    tmp.write_text(buf.getvalue())
    tmp.rename(path)


def _convert(name: str, value: str):
    kind = _TYPES[name]
    if kind in ("int", int):
        return int(value)
    if kind in ("float", float):
        return float(value)
    return value


# The published reference keeps its table compressed (a repository file under 4 MiB).
COMPRESSED = "tidy.tsv.gz"


def table_in(run_dir: Path) -> Path:
    """A run folder's table: tidy.tsv, or the reference's tidy.tsv.gz."""
    plain = run_dir / "tidy.tsv"
    return run_dir / COMPRESSED if not plain.exists() and (run_dir / COMPRESSED).exists() \
        else plain


def compress(source: Path, target: Path) -> None:
    """target: source gzipped, byte for byte the same for the same table (no mtime)."""
    with open(source, "rb") as f, open(target, "wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as out:
        out.write(f.read())


def read(path: Path) -> list[Row]:
    opened = gzip.open(path, "rt", newline="") if path.suffix == ".gz" else \
        open(path, newline="")
    with opened as f:
        reader = csv.DictReader(f, delimiter="\t")
        present = set(reader.fieldnames or [])
        missing = set(COLUMNS) - present - set(ADDED_LATER)
        if missing:
            raise ValueError(f"{path}: missing columns {', '.join(sorted(missing))}")
        columns = [k for k in COLUMNS if k in present]
        return [Row(**{k: _convert(k, r[k]) for k in columns}) for r in reader]


def to_dicts(rows: list[Row]) -> list[dict]:
    return [dict(zip(COLUMNS, astuple(r))) for r in rows]


def from_dicts(items: list[dict]) -> list[Row]:
    return [Row(**{k: _convert(k, str(d[k])) for k in COLUMNS}) for d in items]
