"""Parse fio's --output-format=json for the metadata engines.

Facts for fio 3.33 (engines/filecreate.c, filestat.c, filedelete.c, and the
captures in harness/test_data/fio/):

- The engines time each create / stat / unlink themselves and record it
  with add_clat_sample(): the latency is in "clat_ns"; "lat_ns" and
  "slat_ns" stay empty (N = 0) because the engines are FIO_NOSTATS.
- The samples go to the direction chosen in the engine's init():
  DDIR_READ if the job reads (rw=read, the default, or any mixed rw),
  DDIR_WRITE otherwise. The other directions stay at zero.
- One clat sample per file operation, so clat_ns.N counts files created,
  statted or deleted. total_ios counts io_units (one per file only while
  filesize <= bs) and "iops" is total_ios per "runtime" millisecond; the
  two agree for the usual filesize == bs jobs.
- "runtime" is whole milliseconds, and most of it is fio's own work
  between operations: in the guest under -icount a filecreate job spent
  93% of its time in user space and 63 ms of 972 inside its 1000 creates
  on tmpfs, so every kernel read the same 1028.8/s (786.16/s on ext4).
  busy_s, the time inside the operations from clat (nanoseconds), is what
  the kernel did.
- With group_reporting=1 one entry stands for numjobs jobs (in the job's
  or the global options); its clat samples are all of theirs.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

DIRECTIONS = ("read", "write", "trim")
# Modes where the engines' init() picks DDIR_WRITE: td_write() without
# td_read(). Everything else, trim-only included, lands on DDIR_READ (0).
_WRITE_ONLY_MODES = {"write", "randwrite", "trimwrite"}


class FioError(ValueError):
    """No fio JSON in the text, or JSON not laid out as fio 3.33 writes it."""


@dataclass(frozen=True)
class FioJob:
    name: str
    error: int
    direction: str  # "read", "write" or "trim": where fio accounted the ops
    ops: int  # file operations done (clat samples; total_ios if latency is off)
    runtime_ms: int
    ops_per_s: float
    clat_ns_mean: float
    # "50.000000" -> ns, as fio prints the keys; empty when there were no samples.
    clat_ns_percentiles: dict[str, int] = field(default_factory=dict)
    jobs: int = 1  # the jobs a group_reporting entry stands for
    clat_ns_max: float = 0.0  # the longest operation

    @property
    def busy_s(self) -> float | None:
        """Seconds each job spent inside its operations (clat), None without samples."""
        if not self.clat_ns_mean or not self.ops:
            return None
        return self.ops * self.clat_ns_mean / self.jobs / 1e9


@dataclass(frozen=True)
class FioRun:
    jobs: tuple[FioJob, ...]

    @property
    def total_ops(self) -> int:
        return sum(job.ops for job in self.jobs)

    def as_json(self) -> dict:
        return {"jobs": [asdict(job) for job in self.jobs]}


def extract_json(text: str) -> dict:
    """The first JSON object in text; fio may print warnings before it."""
    decoder = json.JSONDecoder()
    pos = 0
    while True:
        start = text.find("{", pos)
        if start < 0:
            raise FioError("no JSON object in fio output")
        # Only a "{" that opens a line can start fio's object.
        if start == 0 or text[start - 1] in "\r\n":
            try:
                obj, _ = decoder.raw_decode(text, start)
            except json.JSONDecodeError:
                obj = None
            if isinstance(obj, dict) and "jobs" in obj:
                return obj
        pos = start + 1


def _direction(job: dict) -> str:
    def samples(d: str) -> int:
        stats = job.get(d) or {}
        return (stats.get("clat_ns") or {}).get("N", 0) or stats.get("total_ios", 0)

    busiest = max(DIRECTIONS, key=samples)
    if samples(busiest):
        return busiest
    # Nothing done (an error, or an empty job): where fio would have put it.
    rw = (job.get("job options") or {}).get("rw", "read")
    return "write" if rw in _WRITE_ONLY_MODES else "read"


def _jobs(job: dict, global_options: dict) -> int:
    options = {**global_options, **(job.get("job options") or {})}
    if options.get("group_reporting", "0") in ("0", ""):
        return 1
    return int(options.get("numjobs", "1"))


def _job(job: dict, global_options: dict) -> FioJob:
    direction = _direction(job)
    stats = job.get(direction) or {}
    clat = stats.get("clat_ns") or {}
    ops = int(clat.get("N", 0)) or int(stats.get("total_ios", 0))
    runtime_ms = int(stats.get("runtime", 0))
    return FioJob(
        name=job.get("jobname", ""),
        error=int(job.get("error", 0)),
        direction=direction,
        ops=ops,
        runtime_ms=runtime_ms,
        ops_per_s=ops * 1000.0 / runtime_ms if runtime_ms else 0.0,
        clat_ns_mean=float(clat.get("mean", 0.0)),
        clat_ns_percentiles={k: int(v) for k, v in (clat.get("percentile") or {}).items()},
        jobs=_jobs(job, global_options),
        clat_ns_max=float(clat.get("max", 0.0)),
    )


def parse(text: str) -> FioRun:
    data = extract_json(text)
    try:
        return FioRun(jobs=tuple(_job(job, data.get("global options") or {})
                                 for job in data["jobs"]))
    except (TypeError, ValueError, AttributeError) as err:
        raise FioError(f"unexpected fio JSON: {err}") from err
