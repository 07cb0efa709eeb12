"""Turn the records of one step into numbers: throughput, latency, lock figures.

Lock figures are divided by the operations of the same timed window, so
'acquisitions per operation' is exact (docs/design.md section 6).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.analysis import retry_counters
from harness.lockorder import PER_INODE, SHARED, SHARING, LockOrder, RoleTotals
from harness.boot import channel
from harness.parsers import fio, lockstat, workload_output
from harness.guest.plan import Step
from harness.guest.workloads import RATE_WINDOW_TOLERANCE


# The metric that says a phase's operations are declared, not read back.
DECLARED_OPS = "ops_declared"


@dataclass(frozen=True)
class Figure:
    phase: str
    lock: str
    metric: str
    value: float
    unit: str


@dataclass(frozen=True)
class StepNumbers:
    exit_code: int | None  # None: the step never reported its end
    timed_out: bool  # killed at the step's own limit
    figures: tuple[Figure, ...]
    lockstat_valid: bool | None  # None: no lock_stat (perf flavour)
    error: str  # why numbers are missing, "" if none
    lockdep_on: bool | None = None  # debug_locks at the step's end; None: no lockdep (perf)
    note: str = ""  # what a reader should know about the figures (no throughput, ...)


@dataclass(frozen=True)
class PhaseOps:
    name: str
    ops: int | None  # None: the program did not say
    elapsed_s: float | None
    extra: dict[str, float]
    rate: float | None = None  # ops/s as the program reported it
    declared: bool = False  # ops is what the workload declares, not what ran

    @property
    def throughput(self) -> float | None:
        if self.rate is not None:
            return self.rate
        if self.ops is not None and self.elapsed_s:
            return self.ops / self.elapsed_s
        return None


class MissingOutput(Exception):
    """The step did not deliver what its declaration promised."""


@dataclass(frozen=True)
class Window:
    """stepwatch's record of a step: how long the command and the timed window
    took, and where the window lies in the command's stdout and stderr (byte
    offsets; to -1: the end). Boots before 2026-12-06 did not say: their whole
    output counts as inside."""
    command_s: float
    window_s: float
    opened: bool
    closed: bool
    out: tuple[int, int] = (0, -1)
    err: tuple[int, int] = (0, -1)

    @classmethod
    def parse(cls, text: str | None) -> Window | None:
        if not text:
            return None
        fields = _parse_status(text)
        try:
            spans = [(int(fields.get(f"{s}_from", "0")), int(fields.get(f"{s}_to", "-1")))
                     for s in ("out", "err")]
            return cls(int(fields["command_ns"]) / 1e9, int(fields["window_ns"]) / 1e9,
                       fields["opened"] == "1", fields["closed"] == "1", *spans)
        except (KeyError, ValueError):
            return None


def output_lines(step: Step, received: channel.Received,
                 window: Window | None) -> list[workload_output.Line]:
    """The command's stdout and stderr, each line placed before, inside or after
    the timed window."""
    out, err = (received.get(f"{step.id}.{name}") or b"" for name in ("out", "err"))
    if window is None or step.workload.window != "lines":
        return workload_output.placed_lines(out) + workload_output.placed_lines(err)
    return (workload_output.placed_lines(out, *window.out)
            + workload_output.placed_lines(err, *window.err))


def _window_error(step: Step, window: Window | None) -> str:
    """Why the lock-start/-end window of a step is not usable, "" if it is."""
    workload = step.workload
    if workload.window != "lines" or window is None:
        return ""
    if not window.opened:
        return f"the lock-start line ({workload.lock_start!r}) never appeared in the output"
    if not window.closed:
        return f"the lock-end line ({workload.lock_end!r}) never appeared in the output"
    return ""


def _timed_s(step: Step, window: Window | None) -> float | None:
    """The harness's timing of the step's timed part: the window between the
    lock-start/-end lines, else the whole command."""
    if window is None:
        return None
    return window.window_s if step.workload.window == "lines" else window.command_s


def _phases(step: Step, received: channel.Received, window: Window | None,
            notes: list[str]) -> list[PhaseOps]:
    workload = step.workload
    phases: list[PhaseOps] = []
    out = received.text(f"{step.id}.out") or ""
    if workload.output == "fio-json":
        text = received.text(f"{step.id}.fio.json")
        if text is None:
            raise MissingOutput("output = fio-json, but fio left no JSON report")
        run = fio.parse(text)
        # Timed by the engine's own clock around each operation (ns): fio's
        # runtime is whole milliseconds, mostly of fio's own work (parsers/fio.py).
        phases += [PhaseOps(job.name, job.ops, job.busy_s or job.runtime_ms / 1000.0, {
            **{f"clat_p{k.split('.')[0]}_ns": float(v)
               for k, v in job.clat_ns_percentiles.items()
               if k.split(".")[0] in ("50", "90", "99")},
            "clat_max_ns": job.clat_ns_max,
            "fio_runtime_ms": float(job.runtime_ms)}) for job in run.jobs]
    elif workload.output == "result-lines":
        phases += [PhaseOps(p.name, p.ops, p.elapsed_ns / 1e9, p.extra)
                   for p in workload_output.parse(out)]
        if not phases:
            raise MissingOutput("output = result-lines, but the program printed no "
                                "'result phase=...' line")
    elif workload.output == "none" and workload.ops:
        phases.append(_declared_operations(step, received, window, notes))
    if workload.matches:
        phases += _matched(step, received, window, notes)
    names = [p.name for p in phases]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise MissingOutput(f"phase {twice[0]!r} reported twice (by result lines and a match "
                            f"key?): name the match key's phase otherwise")
    return phases


def _declared_operations(step: Step, received: channel.Received, window: Window | None,
                         notes: list[str]) -> PhaseOps:
    """output = none with ops: the harness's timing of the operations the
    workload declares, or, with ops-count, of those its output says ran."""
    workload = step.workload
    declared = workload.ops_for(step.procs)
    timed = _timed_s(step, window)
    if workload.ops_count is None:
        notes.append(f"{workload.name}: the throughput is of the {declared} operations "
                     f"declared (ops), not measured: ops-count would read back how many ran")
        return PhaseOps(workload.name, declared, timed, {}, declared=True)
    pattern = workload_output.Pattern(None, workload.ops_count,
                                      f"{workload.path}:{workload.line_of('ops-count')}")
    counted = workload_output.count_operations(output_lines(step, received, window), pattern)
    if counted != declared:
        notes.append(f"{workload.name}: {declared} operations declared, {counted} counted "
                     f"(ops-count): the throughput is of those counted")
    return PhaseOps(workload.name, counted, timed, {})


def _matched(step: Step, received: channel.Received, window: Window | None,
             notes: list[str]) -> list[PhaseOps]:
    """The phases of the match keys, read from the lines of the timed window (or
    the summary after it); elapsed is elapsed_s, else ops/rate, else the window."""
    workload = step.workload
    patterns = [workload_output.Pattern(m.phase, m.pattern, f"{workload.path}:{m.lineno}")
                for m in workload.matches]
    timed = _timed_s(step, window)
    phases = []
    for m in workload_output.parse_matches(output_lines(step, received, window), patterns,
                                           workload.name, dict(workload.reductions)):
        elapsed = m.elapsed_s
        if elapsed is None and m.ops is not None and m.rate:
            elapsed = m.ops / m.rate
            notes += _rate_note(m.name, elapsed, timed)
        phases.append(PhaseOps(m.name, m.ops, timed if elapsed is None else elapsed, m.extra,
                               m.rate))
    return phases


def _rate_note(phase: str, elapsed: float, timed: float | None) -> list[str]:
    """A warning when ops/rate and the timed window disagree: the program's rate
    covers another interval than the window its lock counts come from."""
    if not timed or abs(elapsed - timed) <= RATE_WINDOW_TOLERANCE * timed:
        return []
    return [f"{phase}: ops/rate gives {elapsed:.3g} s but the timed window was {timed:.3g} s "
            f"({(elapsed - timed) / timed:+.0%}): the throughput is the program's own rate, "
            f"over another interval than the window"]


def _parse_status(text: str | None) -> dict[str, str]:
    if not text:
        return {}
    return dict(item.partition("=")[::2] for item in text.split())


# /proc/stat counts CPU time in USER_HZ ticks (100 per second on Linux/x86).
USER_HZ = 100


def idle_seconds(text: str) -> float | None:
    """Idle and I/O-wait time of all CPUs between the two `cpu` lines of /proc/stat
    a window's .cpustat record holds (its start, its end); None when unreadable."""
    lines = [line.split() for line in text.splitlines() if line.startswith("cpu ")]
    if len(lines) != 2 or any(len(fields) < 6 for fields in lines):
        return None
    try:
        begin, end = ([int(x) for x in fields[1:]] for fields in lines)
    except ValueError:
        return None
    return ((end[3] + end[4]) - (begin[3] + begin[4])) / USER_HZ


def _retries(text: str) -> dict[str, int]:
    counts = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
    return counts


def step_numbers(step: Step, received: channel.Received, order: LockOrder) -> StepNumbers:
    workload = step.workload
    status = _parse_status(received.text(f"{step.id}.status"))
    exit_code = int(status["exit"]) if status.get("exit", "").lstrip("-").isdigit() else None
    window = Window.parse(received.text(f"{step.id}.window"))
    figures: list[Figure] = []
    error = ""
    phases: list[PhaseOps] = []
    notes: list[str] = []
    if exit_code is not None:  # a step that never ended has nothing to miss yet
        try:
            phases = _phases(step, received, window, notes)
        except (workload_output.OutputError, fio.FioError) as err:
            error = f"unparsable output: {err}"
        except MissingOutput as err:
            error = str(err)
        error = error or _window_error(step, window)
    if status.get("timedout") == "1":
        error = f"killed at its {workload.timeout_s}s limit"
    elif exit_code not in (None, 0):
        error = (received.text(f"{step.id}.err") or "").strip()[-500:] or f"exit {exit_code}"
    if workload.output == "none" and not workload.ops:
        notes.append("no throughput: output = none (declare ops to get one)")
        if exit_code is not None:
            figures.append(Figure(workload.name, "", "exit_code", exit_code, ""))
        timed = _timed_s(step, window)
        if timed is not None:
            figures.append(Figure(workload.name, "", "elapsed", timed, "s"))
    figures += [f for phase in phases for f in _phase_figures(step, phase)]
    # Lock windows: per phase when the program windowed them, else one for the
    # step, named after its phase when it has exactly one (after the workload
    # when it has none).
    if workload.window == "program":
        windows = {p.name: (p.name, p.ops or 0) for p in phases}
    else:
        label = phases[0].name if len(phases) == 1 else "all" if phases else workload.name
        windows = {"all": (label, sum(p.ops or 0 for p in phases))}
    valid: bool | None = None
    for window_name, (phase, ops) in windows.items():
        text = received.text(f"{step.id}.{window_name}.lock_stat")
        if text is not None:
            dump = lockstat.parse(text)
            valid = dump.valid if valid is None else (valid and dump.valid)
            roles = order.totals_by_role(dump.classes)
            for role in roles:
                figures += _lock_figures(phase, role, ops)
            figures += _sharing_figures(phase, roles, ops)
        cpustat = received.text(f"{step.id}.{window_name}.cpustat")
        idle = idle_seconds(cpustat) if cpustat is not None else None
        if idle is not None:
            figures.append(Figure(phase, "", "cpu_idle", idle, "s"))
            if ops:
                # At 1 vCPU: the time the only CPU waited for the workers per operation.
                figures.append(Figure(phase, "", "blocked_ns_per_op", idle * 1e9 / ops, "ns"))
        retries = received.text(f"{step.id}.{window_name}.retries")
        if retries is not None:
            figures += _retry_figures(phase, _retries(retries), ops, workload.unit)
    lockdep_on = {"1": True, "0": False}.get(status.get("debug_locks", ""))
    return StepNumbers(exit_code, status.get("timedout") == "1", tuple(figures), valid, error,
                       lockdep_on, "; ".join(notes))


def _phase_figures(step: Step, phase: PhaseOps) -> list[Figure]:
    """A phase's own figures: operations, elapsed time, throughput and the
    program's extra figures with their units."""
    workload = step.workload
    out = []
    if phase.ops is not None:
        out.append(Figure(phase.name, "", "ops", phase.ops, workload.unit))
    if phase.declared:  # the report marks the throughput: declared, not measured
        out.append(Figure(phase.name, "", DECLARED_OPS, phase.ops, workload.unit))
    if phase.elapsed_s is not None:
        out.append(Figure(phase.name, "", "elapsed", phase.elapsed_s, "s"))
    if phase.throughput is not None:
        out.append(Figure(phase.name, "", "throughput", phase.throughput, f"{workload.unit}/s"))
    units = dict(workload.figure_units)
    out += [Figure(phase.name, "", key, value, units.get(key) or workload_output.unit_of(key))
            for key, value in phase.extra.items()]
    return out


def _retry_figures(phase: str, counts: dict[str, int], ops: int, unit: str) -> list[Figure]:
    """Each counter on its own, its kind as its unit (analysis/retry_counters.py): a
    trylock retry, a relock and a wait are different prices, never added up. A
    counter the catalogue does not know keeps the plain unit 'count'."""
    out = []
    for name, count in counts.items():
        known = retry_counters.COUNTERS.get(name)
        kind = known.kind if known else "count"
        out.append(Figure(phase, "", f"retries.{name}", count, kind))
        if ops:
            out.append(Figure(phase, "", f"retries.{name}_per_op", count / ops,
                              f"{kind} per {unit}"))
    return out


# Lock figures summed over the roles of one kind of sharing (lockorder.SHARING).
# Hold times are left out: lockdep's bookkeeping inflates them many times.
SHARING_METRICS = ("acquisitions", "contentions", "waittime_total", "acq_bounces")


def _sharing_figures(phase: str, roles: list[RoleTotals], ops: int) -> list[Figure]:
    """Shared and per-inode locks of a window: metrics 'shared.acquisitions_per_op',
    'per-inode.contentions', ... (lock column empty: these are no role)."""
    out = []
    for sharing in (SHARED, PER_INODE):
        members = [r for r in roles if SHARING[r.role] == sharing]
        for metric in SHARING_METRICS:
            total = sum(getattr(r, f"{metric}_us" if metric == "waittime_total" else metric)
                        for r in members)
            unit = "us" if metric == "waittime_total" else "count"
            out.append(Figure(phase, "", f"{sharing}.{metric}", total, unit))
            if ops:
                name = "waittime_per_op" if metric == "waittime_total" else f"{metric}_per_op"
                out.append(Figure(phase, "", f"{sharing}.{name}", total / ops,
                                  "us/op" if unit == "us" else "per op"))
    return out


def _lock_figures(phase: str, role: RoleTotals, ops: int) -> list[Figure]:
    out = [
        Figure(phase, role.role, "acquisitions", role.acquisitions, "count"),
        Figure(phase, role.role, "contentions", role.contentions, "count"),
        Figure(phase, role.role, "holdtime_total", role.holdtime_total_us, "us"),
        Figure(phase, role.role, "waittime_total", role.waittime_total_us, "us"),
        Figure(phase, role.role, "holdtime_max", role.holdtime_max_us, "us"),
        Figure(phase, role.role, "waittime_max", role.waittime_max_us, "us"),
        Figure(phase, role.role, "holdtime_avg", role.holdtime_avg_us, "us"),
        Figure(phase, role.role, "acq_bounces", role.acq_bounces, "count"),
        Figure(phase, role.role, "con_bounces", role.con_bounces, "count"),
    ]
    if ops:
        out += [
            Figure(phase, role.role, "acquisitions_per_op", role.acquisitions / ops, "per op"),
            Figure(phase, role.role, "contentions_per_op", role.contentions / ops, "per op"),
            Figure(phase, role.role, "holdtime_per_op", role.holdtime_total_us / ops, "us/op"),
            Figure(phase, role.role, "waittime_per_op", role.waittime_total_us / ops, "us/op"),
            Figure(phase, role.role, "acq_bounces_per_op", role.acq_bounces / ops, "per op"),
            Figure(phase, role.role, "con_bounces_per_op", role.con_bounces / ops, "per op"),
        ]
    return out
