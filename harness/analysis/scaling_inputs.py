"""The scaling model's inputs, taken from a run: per kernel and workload case,
each icache lock role's acquisitions, hold time and scope, and the rest of an
operation.

Where each number comes from (docs/scaling-model.md has the reasoning):

  acquisitions per op   debug kernel, 1 vCPU, lock_stat (exact counts)
  instructions per op   perf kernel, mode "tcg-cs", metric instructions_per_op
                        (guest instructions counted by the critical-section
                        plugin); fallback: the 1-vCPU -icount rate, where
                        QEMU's shift=2 makes every guest instruction 4 ns of
                        virtual time, so instructions/op = 1 / (ops/s * 4 ns)
  hold per acquisition  perf kernel, mode "tcg-cs", metric
                        cs_instructions_per_acq; fallback: the share of a
                        debug operation's time the role was held
                        (holdtime_avg * debug ops/s), which lockdep's
                        bookkeeping inside every critical section inflates
  cache lines per acq   perf kernel, mode "tcg-cs", per role (optional rows):
                        cs_lines_read_per_acq, cs_lines_written_per_acq,
                        cs_lines_from_previous_per_acq (W),
                        cs_lockword_line_written_share (s),
                        cs_cold_lines_per_acq (C), cs_chain_entries_per_acq
                        (hash); RoleInput.lines, None in runs whose plugin
                        counted no lines. The model takes W, s and C
                        (RoleInput.counted); fallback: source_lines.py,
                        counted by hand from the 6.1 source
  nesting               cs_inside_share.OUTER (the share of acquisitions made
                        holding OUTER); fallback: no nesting
  blocked per op        perf kernel, 1 vCPU, metric blocked_ns_per_op (wall
                        minus CPU time of the step's window); fallback: none
  shared inodes         the workload declaration's shared_inodes (hot-inode
                        workloads); fallback: the workers share no inode
  scope, instances      the kernel's lock-scope file; per-bucket counts from
                        the boot console ("Inode-cache hash table entries")
  real nanoseconds      instructions * ns per instruction of the target machine
                        (machines.py), plus the lines it moves

Holds are kept as shares of one operation's time, so one set of inputs gives
the profile of any time base: the real machine (instructions * ns/insn), the
perf kernel under TCG (1 / TCG ops/s) or the debug kernel (1 / debug ops/s).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

from harness import lockscope
from harness.analysis import evidence, source_lines
from harness.analysis.queueing import Lock, Profile
from harness.guest import workloads as workload_files
from harness.layout import Layout
from harness.parsers import hash_tables
from harness.run.tidy import Row

# -icount shift=2: 2^2 ns of virtual time per guest instruction.
ICOUNT_NS_PER_INSN = 4.0
# What a --profile without a machine is solved with (the model of issue 14's
# knobs): a hand-off of 100 ns, 0.4 ns per instruction, 100 ns per cold line.
NS_PER_INSN = 0.4
HANDOFF_NS = 100.0
MEMORY_NS = 100.0

CS_MODE = "tcg-cs"
SCALING_JSON = "scaling.json"
FALLBACK_INSN = "instructions/op from the 1-vCPU -icount rate (fallback: no tcg-cs counts)"
FALLBACK_HOLD = ("hold per acquisition as its share of a debug-kernel operation (fallback: "
                 "no tcg-cs counts; lockdep's bookkeeping inside critical sections inflates it)")
CS_INSN = "instructions/op counted by the tcg-cs plugin"
CS_HOLD = "critical-section instructions counted by the tcg-cs plugin"
CS_LINES = "cache lines counted by the tcg-cs plugin"
SOURCE_LINES = ("cache lines counted by hand from the 6.1 source (tcg-cs counted no "
                "lines for the role)")
NO_LINES = "no cache lines counted (the lock word's transfer alone)"
# The per-role line metrics of the tcg-cs rows, by the RoleLines field they fill.
LINE_METRICS = {"read": "cs_lines_read_per_acq", "written": "cs_lines_written_per_acq",
                "from_previous": "cs_lines_from_previous_per_acq",
                "lockword_line_written_share": "cs_lockword_line_written_share",
                "cold": "cs_cold_lines_per_acq", "chain_entries": "cs_chain_entries_per_acq"}
# The three the model takes, by the LineCounts field they feed.
MODEL_LINE_METRICS = {"from_previous": "cs_lines_from_previous_per_acq",
                      "lockword_written": "cs_lockword_line_written_share",
                      "cold": "cs_cold_lines_per_acq"}
INSIDE_METRIC = "cs_inside_share."  # + the outer role
BLOCKED_METRIC = "blocked_ns_per_op"


class InputError(Exception):
    pass


@dataclass(frozen=True)
class RoleLines:
    """The cache lines (64 B) of one acquisition of a role, from the tcg-cs
    plugin (perf kernel, 1 vCPU): means over the run's tcg-cs boots. Counts
    leave out the lock word's own line (the hand-off), the stack and
    interrupts (harness/boot/tcg_cs.py)."""
    read: float  # distinct lines only read (cs_lines_read_per_acq)
    written: float  # distinct lines written (cs_lines_written_per_acq)
    from_previous: float  # W: last written inside an earlier section of the same lock
    lockword_line_written_share: float  # s: sections writing the lock word's line, 0..1
    cold: float  # lines no instruction touched for the plugin's cold stretch before
    chain_entries: float | None  # hash roles: chain entries visited; None for others


@dataclass(frozen=True)
class LineCounts:
    """What the model takes of a role's lines: measured (RoleLines) or counted by
    hand from the source."""
    from_previous: float = 0.0  # W
    lockword_written: float = 0.0  # s
    cold: float = 0.0  # C
    source: str = NO_LINES


@dataclass(frozen=True)
class RoleInput:
    role: str
    acquisitions_per_op: float
    debug_share: float  # hold per acquisition / one debug operation's time
    cs_share: float | None  # critical-section instructions / instructions per op
    scope: lockscope.RoleScope
    instances: int | None  # None: private scope, or bucket count unknown
    lines: RoleLines | None = None  # None: a run without the plugin's line counts
    counted: LineCounts = LineCounts()  # the model's W, s, C, measured or from the source
    inside: str = ""  # the role held around a share of this one's acquisitions
    inside_share: float = 0.0
    # Failed trylocks of the role per op at RR_CPUS vCPUs round robin (tcg-cs-rr), and
    # the retry loops' instructions per failure; 0 where the run has no such boots.
    retries_at_two: float = 0.0
    retry_instructions: float = 0.0

    def share(self, production: bool) -> float:
        return self.cs_share if production and self.cs_share is not None else self.debug_share


@dataclass(frozen=True)
class CaseInputs:
    kernel: str
    case: evidence.Case
    unit: str
    roles: tuple[RoleInput, ...]
    insn_per_op: float | None
    insn_source: str
    hold_source: str
    debug_ops_per_s: float
    notes: tuple[str, ...]
    blocked_ns_per_op: float | None = None  # perf kernel, 1 vCPU: wall minus CPU
    shared_inodes: int | None = None

    @property
    def fallbacks(self) -> list[str]:
        """The inputs tcg-cs did not count, which fell back (FALLBACK_INSN, FALLBACK_HOLD):
        a prediction that rests on one is weaker, and says so."""
        found = ["instructions/op"] if self.insn_source == FALLBACK_INSN else []
        return found + [f"{r.role} hold" for r in self.roles
                        if r.cs_share is None and r.acquisitions_per_op > 0]

    @property
    def lines_source(self) -> str:
        sources = sorted({r.counted.source for r in self.roles})
        return "; ".join(sources)

    def _nested_share(self, r: RoleInput) -> float:
        """The share of r's acquisitions inside another role of the profile: their
        instructions are inside that role's, and counted once."""
        outer = next((o for o in self.roles if o.role == r.inside and not o.scope.under
                      and o.acquisitions_per_op > 0), None)
        return r.inside_share if outer is not None else 0.0

    def profile(self, op_ns: float, *, production: bool, blocked_ns: float = 0.0) -> Profile:
        """The lock profile of one operation lasting op_ns at 1 CPU (its instructions;
        blocked_ns more off the CPU).

        production: shares from the tcg-cs counts when there are any, the cache lines
        each section moves, and bit locks where the scope says so (the debug kernel
        wraps them in spinlocks, and its validation runs at no hand-off cost).
        """
        locks, locked = [], 0.0
        for r in self.roles:
            if r.scope.under or r.acquisitions_per_op <= 0:
                continue  # its time is inside the serialising role's hold
            hold = r.share(production) * op_ns
            locked += r.acquisitions_per_op * hold * (1 - self._nested_share(r))
            queued = r.scope.shared and r.instances is not None
            lines = r.counted if production else LineCounts()
            retry_ns = (r.retry_instructions / self.insn_per_op * op_ns
                        if production and self.insn_per_op else 0.0)
            locks.append(Lock(r.role, r.acquisitions_per_op, hold,
                              instances=r.instances if queued else 1,
                              kind="bitlock" if production and r.scope.bitlock else "qspinlock",
                              shared=queued, lines_from_previous=lines.from_previous,
                              lockword_written=lines.lockword_written, cold_lines=lines.cold,
                              per_inode=r.scope.scope == "per-inode", inside=r.inside,
                              inside_share=r.inside_share,
                              retries_at_two=r.retries_at_two if retry_ns else 0.0,
                              retry_ns=retry_ns))
        think = op_ns - locked
        if think < 0:
            raise InputError(f"{self.kernel} {self.case.label}: the locks' hold time "
                             f"({locked:.0f} ns) exceeds the operation ({op_ns:.0f} ns)")
        names = {lock.name for lock in locks}
        locks = [lock if lock.inside in names else replace(lock, inside="", inside_share=0.0)
                 for lock in locks]
        return Profile(think, tuple(locks), blocked_ns, self.shared_inodes)

    def machine_profile(self, ns_per_insn: float = NS_PER_INSN) -> Profile:
        if self.insn_per_op is None:
            raise InputError(f"{self.kernel} {self.case.label}: no instructions per op "
                             "(neither tcg-cs nor -icount rows)")
        return self.profile(self.insn_per_op * ns_per_insn, production=True,
                            blocked_ns=self.blocked_ns_per_op or 0.0)

    def debug_profile(self) -> Profile:
        return self.profile(1e9 / self.debug_ops_per_s, production=False)


def _ok(rows: list[Row]) -> list[Row]:
    return [r for r in rows if r.status in ("ok", "warning")]


def _means(rows: list[Row], **match) -> dict[str, float]:
    """lock -> mean value over the rows matching every field given."""
    values: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        if all(getattr(r, k) == v for k, v in match.items()):
            values[r.lock].append(r.value)
    return {k: sum(v) / len(v) for k, v in values.items()}


def _case_match(case: evidence.Case) -> dict:
    return {"workload": case.workload, "fs": case.fs, "phase": case.phase}


# -- hash table sizes from the boots' consoles ---------------------------------------------

_HEADER = re.compile(r"^# kernel (?P<kernel>\S+) \((?P<key>[^)]*)\), (?P<flavour>\w+),", re.M)


def boot_kernel(boot_dir: Path) -> tuple[str, str] | None:
    """(kernel, flavour) of a boot folder: from a compare boot's plan.sh header,
    or from a manual boot's summary.json image folder (KERNEL-FLAVOUR-KEY)."""
    plan = boot_dir / "plan.sh"
    if plan.exists():
        match = _HEADER.search(plan.read_text(errors="replace"))
        if match:
            return match.group("kernel"), match.group("flavour")
    summary = boot_dir / "summary.json"
    if summary.exists():
        image = Path(json.loads(summary.read_text()).get("image", "")).name
        parts = image.rsplit("-", 2)
        if len(parts) == 3:
            return parts[0], parts[1]
    return None


@dataclass(frozen=True)
class TableSize:
    entries: int
    source: str  # the boot folder whose console announced it


def hash_table_sizes(run_dir: Path) -> dict[str, dict[str, TableSize]]:
    """kernel -> table -> size, from the consoles of the run's boots (perf boots
    preferred: the production kernel's table), else as an earlier report of
    this run recorded them in scaling.json."""
    found: dict[str, dict[str, TableSize]] = {}
    boots = run_dir / "boots"
    for boot in sorted(boots.iterdir()) if boots.is_dir() else []:
        owner = boot_kernel(boot)
        console = boot / "console.log"
        if owner is None or not console.exists():
            continue
        kernel, flavour = owner
        for table, entries in hash_tables.parse(console.read_text(errors="replace")).items():
            known = found.setdefault(kernel, {}).get(table)
            if known is None or flavour == "perf":
                found[kernel][table] = TableSize(entries, f"console of boot {boot.name}")
    recorded = run_dir / SCALING_JSON
    if recorded.exists():
        for kernel, tables in json.loads(recorded.read_text()).get("hash_tables", {}).items():
            for table, item in tables.items():
                found.setdefault(kernel, {}).setdefault(
                    table, TableSize(item["entries"], item["source"]))
    return found


# -- inputs per kernel and case --------------------------------------------------------------

def _instructions(ok: list[Row], kernel: str, m: dict) -> tuple[float | None, str]:
    cs = dict(kernel=kernel, flavour="perf", mode=CS_MODE, cpus=1, **m)
    cs_insn = _means(ok, metric="instructions_per_op", **cs).get("")
    icount_rate = _means(ok, metric="throughput", lock="", kernel=kernel, flavour="perf",
                         mode="tcg-icount", cpus=1, procs=1, **m).get("")
    if cs_insn:
        return cs_insn, CS_INSN
    if icount_rate:
        return 1.0 / (icount_rate * ICOUNT_NS_PER_INSN * 1e-9), FALLBACK_INSN
    return None, "no instructions per op in this run"


def _cs_role_figures(ok: list[Row], kernel: str, m: dict) -> dict[str, dict[str, float]]:
    """role -> metric -> mean over the tcg-cs boots, for the per-role metrics."""
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in ok:
        if (r.lock and r.kernel == kernel and r.flavour == "perf" and r.mode == CS_MODE
                and r.cpus == 1 and all(getattr(r, k) == v for k, v in m.items())):
            out[r.lock][r.metric].append(r.value)
    return {role: {k: sum(v) / len(v) for k, v in metrics.items()}
            for role, metrics in out.items()}


RR_MODE = "tcg-cs-rr"
RR_CPUS = 2
FAILURES = "trylock_failures_per_op."
RETRY_INSTRUCTIONS = "trylock_retry_instructions_per_op."


def _retries(ok: list[Row], kernel: str, m: dict) -> dict[str, tuple[float, float]]:
    """role -> (failed trylocks per op, retry instructions per failure) at RR_CPUS vCPUs
    round robin, summed over the role's trylock sites, means over the run's boots."""
    per_boot: dict[tuple[str, int], dict[str, float]] = defaultdict(
        lambda: {"failures": 0.0, "instructions": 0.0})
    for r in ok:
        if (r.lock and r.kernel == kernel and r.mode == RR_MODE and r.cpus == RR_CPUS
                and all(getattr(r, k) == v for k, v in m.items())):
            if r.metric.startswith(FAILURES):
                per_boot[r.lock, r.repetition]["failures"] += r.value
            elif r.metric.startswith(RETRY_INSTRUCTIONS):
                per_boot[r.lock, r.repetition]["instructions"] += r.value
    roles: dict[str, list[dict[str, float]]] = defaultdict(list)
    for (role, _), figures in per_boot.items():
        roles[role].append(figures)
    out = {}
    for role, boots in roles.items():
        failures = sum(b["failures"] for b in boots) / len(boots)
        instructions = sum(b["instructions"] for b in boots) / len(boots)
        if failures > 0:
            out[role] = (failures, instructions / failures)
    return out


def _lines(figures: dict[str, float], kernel: str, role: str) -> LineCounts:
    """W, s and C of a role: measured when the run has the rows, else from the source."""
    if any(metric in figures for metric in MODEL_LINE_METRICS.values()):
        return LineCounts(*(figures.get(metric, 0.0) for metric in MODEL_LINE_METRICS.values()),
                          source=CS_LINES)
    counted = source_lines.lines_for(kernel, role)
    if counted is None:
        return LineCounts()
    return LineCounts(counted.from_previous, counted.lockword_written, counted.cold,
                      SOURCE_LINES)


def _inside(figures: dict[str, float]) -> tuple[str, float]:
    """The outer role a share of the acquisitions nest in (the largest share)."""
    shares = {k[len(INSIDE_METRIC):]: v for k, v in figures.items()
              if k.startswith(INSIDE_METRIC) and v > 0}
    if not shares:
        return "", 0.0
    outer = max(shares, key=lambda k: shares[k])
    return outer, min(1.0, shares[outer])


# The kernel parameter that sizes the inode hash (fs/inode.c); alloc_large_system_hash
# rounds the entries it is given up to a power of two.
HASH_PARAMETERS = {"Inode-cache": "ihash_entries"}


def _declared_entries(layout: Layout, workload: str, table: str | None) -> int | None:
    """The hash table size a workload's own kernel parameters set (igetstorm-crowded's
    ihash_entries=16), rounded up to a power of two as the kernel does; None without one.
    Its boots' consoles are not the ones the run's table sizes come from (perf boots
    of the default table)."""
    parameter = HASH_PARAMETERS.get(table or "")
    if parameter is None:
        return None
    try:
        declared = workload_files.read_all(layout.workloads)[0].get(workload)
    except OSError:
        return None
    for word in (declared.cmdline.split() if declared else []):
        name, _, value = word.partition("=")
        if name == parameter and value.isdigit() and int(value) > 0:
            return 1 << (int(value) - 1).bit_length()
    return None


def _instances(scope: lockscope.RoleScope, tables: dict[str, dict[str, TableSize]],
               kernel: str, notes: list[str], declared: int | None = None) -> int | None:
    if scope.scope == "per-bucket":
        if declared is not None:
            return declared
        size = tables.get(kernel, {}).get(scope.table)
        if size is None:
            notes.append(f"{scope.role}: no console of {kernel} gave the {scope.table} hash "
                         "table size; its buckets are modelled as never contended")
        return size.entries if size else None
    return 1 if scope.shared else None


def _shared_inodes(layout: Layout, workload: str) -> int | None:
    """The inodes every worker of a workload shares, as its declaration says (the
    hot-inode workloads); None when it declares none or cannot be read."""
    try:
        declared = workload_files.read_all(layout.workloads)[0].get(workload)
    except OSError:
        return None
    return declared.shared_inodes if declared is not None else None


def _hold_source(roles: list[RoleInput]) -> str:
    counted = [r.role for r in roles if r.cs_share is not None]
    if not counted:
        return FALLBACK_HOLD
    if len(counted) == len(roles):
        return CS_HOLD
    return f"{CS_HOLD} for {', '.join(counted)}; for the other roles {FALLBACK_HOLD}"


def case_inputs(layout: Layout, rows: list[Row], tables: dict[str, dict[str, TableSize]],
                kernel: str, case: evidence.Case) -> CaseInputs | None:
    """The inputs of one kernel and case, or None when the run lacks the debug
    1-vCPU lock figures or throughput they need."""
    m = _case_match(case)
    # Every figure below is of this kernel and case: filter once, not per figure
    # (the run's other rows made the report quadratic in the run's size).
    ok = [r for r in _ok(rows) if r.kernel == kernel
          and (r.workload, r.fs, r.phase) == (case.workload, case.fs, case.phase)]
    debug = dict(kernel=kernel, flavour="debug", cpus=1, procs=1, **m)
    acquisitions = _means(ok, metric="acquisitions_per_op", **debug)
    holds_us = _means(ok, metric="holdtime_avg", **debug)
    debug_rate = _means(ok, metric="throughput", lock="", **debug).get("")
    if not acquisitions or not debug_rate:
        return None
    unit = next((r.unit for r in ok if r.metric == "throughput" and r.kernel == kernel
                 and (r.workload, r.fs, r.phase) == (case.workload, case.fs, case.phase)), "")
    scope_file = lockscope.load_for(layout, kernel)
    insn, insn_source = _instructions(ok, kernel, m)
    figures = _cs_role_figures(ok, kernel, m)
    lines = role_lines(ok, dict(kernel=kernel, flavour="perf", mode=CS_MODE, cpus=1, **m))
    notes: list[str] = []
    retries = _retries(ok, kernel, m)
    roles = []
    for role, count in acquisitions.items():
        if not role or not count:  # a role the case never took queues nowhere
            continue
        scope = scope_file.roles.get(role)
        if scope is None:
            raise lockscope.LockScopeError(
                f"{scope_file.path}: role {role} was measured in {kernel} but is not declared")
        mine = figures.get(role, {})
        cs_hold = mine.get("cs_instructions_per_acq")
        outer, share = _inside(mine)
        roles.append(RoleInput(role, count, holds_us.get(role, 0.0) * 1e-6 * debug_rate,
                               cs_hold / insn if cs_hold and insn else None, scope,
                               _instances(scope, tables, kernel, notes, _declared_entries(
                                   layout, case.workload, scope.table)),
                               lines.get(role), _lines(mine, kernel, role), outer, share,
                               *retries.get(role, (0.0, 0.0))))
    blocked = _means(ok, metric=BLOCKED_METRIC, lock="", kernel=kernel, flavour="perf",
                     mode="tcg", cpus=1, procs=1, **m).get("")
    return CaseInputs(kernel, case, unit, tuple(roles), insn, insn_source, _hold_source(roles),
                      debug_rate, tuple(notes), blocked, _shared_inodes(layout, case.workload))


def role_lines(rows: list[Row], match: dict) -> dict[str, RoleLines]:
    """role -> its line counts, for the roles with every count but the hash-only one."""
    means = {field: _means(rows, metric=metric, **match) for field, metric in LINE_METRICS.items()}
    out = {}
    for role in means["read"]:
        values = {field: means[field].get(role) for field in LINE_METRICS}
        if role and all(v is not None for f, v in values.items() if f != "chain_entries"):
            out[role] = RoleLines(**values)
    return out


def run_inputs(layout: Layout, run_dir: Path, rows: list[Row],
               kernels: list[str]) -> list[CaseInputs]:
    tables = hash_table_sizes(run_dir)
    out = []
    for case in evidence.cases(rows):
        for kernel in kernels:
            inputs = case_inputs(layout, rows, tables, kernel, case)
            if inputs:
                out.append(inputs)
    return out
