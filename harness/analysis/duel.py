"""chinner against piggin, per workload case and per kind of evidence.

The question of the project is which of the two designs; mainline (which
already has chinner's lock order) is a reference and base the common
ancestor. Every entry holds the two designs' figures, the references', the
ratio piggin/chinner with its uncertainty, which design the evidence puts
ahead (or neither, with the smallest difference it could have shown) and by
which rule. A prediction is kept apart from every measurement.

Kinds of evidence, in the order the report gives them:

  shared      acquisitions per operation of the locks inodes share (hash, sb
              list, LRU, writeback, base's global): exact lock_stat counts
  per_inode   acquisitions per operation of i_lock, one lock per inode
  cs          instructions held per shared-lock acquisition (tcg-cs plugin,
              perf kernels, no lockdep)
  retries     retries per operation, per counter and kind (debug kernels);
              the two series count different things, never compared as one
  price       guest instructions spent in failed trylock loops per operation
              (tcg-cs on several vCPUs round robin, rows
              trylock_retry_instructions_per_op.SITE): what the retries cost
  contention  contended shared-lock acquisitions per operation at 2 vCPUs or
              more (debug kernels, whose lockdep lengthens every section)
  icount      single-thread rate at 1 vCPU under -icount
  timed       throughput in wall-clock time (TCG), per vCPU count
  paired      every timed case at once, the boot as the unit: each boot paired
              with the other design's boot of the same round (analysis/rounds.py)
  latency     99th-percentile latency of an operation (TCG)
  prediction  the queueing model's throughput at 64 CPUs: a prediction
"""

from __future__ import annotations

import dataclasses
import json
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from harness.analysis import evidence, rerun, retry_counters, rounds, stats
from harness.analysis.evidence import Case
from harness.run.matrix import OVERSUBSCRIBED
from harness.run.tidy import Row

FIRST, SECOND = "chinner", "piggin"
REFERENCES = ("mainline", "base")
PER_INODE_ROLES = ("i_lock",)
# The control of an exact count: 6.1 already has chinner's lock order, so the two take
# the same icache locks per operation (design.md, section 6's counts agree).
CONTROL = "mainline"
# Two critical-section lengths of the tcg-cs plugin closer than this are the same
# design cost: interrupts are counted apart, and three boots repeat within 0.04%
# (NOTES, tcg-cs), so a 1% difference is far outside their noise.
CS_TOLERANCE = evidence.EXACT_TOLERANCE
PREDICTION_CPUS = 64

KINDS = {
    "shared": "shared-lock acquisitions/op (exact, debug kernels)",
    "per_inode": "i_lock acquisitions/op (exact, debug kernels)",
    "cs": "instructions per shared-lock critical section (tcg-cs, perf kernels)",
    "retries": "retries/op by counter (debug kernels; kinds differ, never compared)",
    "price": "instructions in failed trylock loops per op (tcg-cs, vCPUs round robin)",
    "contention": "contended shared-lock acquisitions/op (debug kernels, lockdep slows "
                  "every section)",
    "inode_contention": "contended i_lock acquisitions/op (debug kernels): inodes the "
                        "workers share, such as a hot file or the one anon inode",
    "icount": "single-thread rate, 1 vCPU -icount",
    "timed": "throughput, wall clock under TCG",
    "paired": "throughput over every timed case, boot against boot of one round",
    "latency": "p99 latency per operation, wall clock under TCG",
    "prediction": f"PREDICTION: throughput at {PREDICTION_CPUS} CPUs (queueing model)",
}
MEASURED = tuple(k for k in KINDS if k != "prediction")


@dataclass(frozen=True)
class Entry:
    case: Case
    kind: str
    detail: str  # "1 vCPU", "2 vCPUs, 2 workers", a counter's name ...
    unit: str
    lower_is_better: bool | None  # None: not a cost on its own (retries)
    figures: dict[str, stats.Summary]  # kernel -> figure
    ratio: float | None  # piggin / chinner
    low: float | None  # its 95% interval (or the prediction's band over the target machines)
    high: float | None
    ahead: str  # FIRST, SECOND, "" (not apart) or "?" (no claim possible)
    rule: str  # what decided: exact, interval, rank, rate test, rerun floor, band
    detectable: float  # smallest relative difference it could have shown (NaN: n/a)
    note: str = ""
    counters: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    values: dict[str, list[float]] = field(default_factory=dict)  # kernel -> one per boot
    caveat: str = ""  # why a claim cannot be counted for the design ahead
    cpus: int = 0  # the vCPU count of its figures (0: no one count)
    fallbacks: str = ""  # a prediction's inputs tcg-cs did not count, per kernel
    # contention: the p of the same test between CONTROL and FIRST, which take the same
    # locks (NaN: no control); how often it rejects is the test's real false-claim rate
    control_p: float = math.nan

    @property
    def prediction(self) -> bool:
        return self.kind == "prediction"

    @property
    def behind(self) -> str:
        return {FIRST: SECOND, SECOND: FIRST}.get(self.ahead, "")

    def behind_alone(self) -> bool:
        """The design behind lies apart from every boot of every other kernel of the case
        (the rank test of its boots against all the others'): the gap is its own doing,
        not the other design's luck."""
        behind = self.behind
        if not behind or not self.values.get(behind):
            return False
        mine = self.values[behind]
        others = [v for k, vs in self.values.items() if k != behind for v in vs]
        if not others:
            return False
        # What the report says of such a case, literally: every boot beyond every other.
        beyond = (min(mine) > max(others)) if self.lower_is_better else \
            (max(mine) < min(others))
        test = stats.rank_test(mine, others)
        return beyond and test is not None and test.apart and \
            test.higher == bool(self.lower_is_better)


def _ahead(outcome: str, lower_is_better: bool) -> str:
    """The outcome of piggin against chinner as the design it puts ahead."""
    if outcome == "better":
        return SECOND
    if outcome == "worse":
        return FIRST
    return "?" if outcome == "unclaimed" else ""


def _from_verdict(v: evidence.Verdict, kind: str, detail: str, note: str = "") -> Entry | None:
    if FIRST not in v.summaries or SECOND not in v.summaries:
        return None
    c = v.comparison(SECOND, FIRST)
    assert c is not None
    r = c.ratio
    outcome = v.outcome(SECOND, FIRST)
    ratio = c.candidate.mean / c.baseline.mean if c.baseline.mean else None
    rule = {"exact": "exact", "interval": "interval", "rank": "rank test"}.get(
        v.decided_by(SECOND, FIRST), "")
    if kind == "icount" and rule:
        rule = "interval and rerun floor"
    if outcome == "unclaimed":
        note = note or v.unclaimed_reason(SECOND, FIRST)
    elif v.identical:
        note = note or ("every boot of every kernel gave the same figure: below the "
                        "measurement's resolution")
    return Entry(v.case, kind, detail, v.unit, not v.higher_is_better,
                 {k: s for k, s in v.summaries.items() if k in (FIRST, SECOND) + REFERENCES},
                 ratio, r.low if r else None, r.high if r else None,
                 _ahead(outcome, not v.higher_is_better), rule,
                 v.detectable(SECOND, FIRST), note, values=dict(v.values), cpus=v.cpus)


def _exact(rows: list[Row], case: Case, cpus: int, roles: tuple[str, ...] | None,
           kind: str, order: list[str]) -> Entry | None:
    values = evidence.acquisition_values(rows, case, cpus, roles)
    if not values:
        return None
    summaries = {k: stats.summarize(x) for k, x in evidence._ordered(values, order).items()}
    v = evidence.Verdict(case, "exact", cpus, "acquisitions/op", False, summaries, FIRST,
                         values=values)
    if cpus > 1 and FIRST in summaries and SECOND in summaries:
        # On several vCPUs piggin's failed trylocks retake the shared locks as often as
        # they fail, which varies from boot to boot: a measured figure, not an exact one.
        if v.same(FIRST, SECOND):
            return None  # nothing failed in either: the 1-vCPU exact entry says it all
        return _by_boots(v, kind, f"{cpus} vCPUs",
                         "with retries, counts vary from boot to boot")
    if CONTROL in summaries and FIRST in summaries and not v.same(CONTROL, FIRST):
        # mainline takes chinner's locks, so their counts differ only by what varies from
        # boot to boot (a background loop, the flusher): the count is not exact here, and
        # chinner against piggin is decided as a measured figure, by its boots.
        return _by_boots(v, kind, f"{cpus} vCPU",
                         f"not exact here: {CONTROL} and {FIRST} take the same locks yet "
                         f"{CONTROL} {summaries[CONTROL].mean:.3g} against "
                         f"{summaries[FIRST].mean:.3g}")
    return _from_verdict(v, kind, f"{cpus} vCPU")


def _by_boots(v: evidence.Verdict, kind: str, detail: str, why: str) -> Entry | None:
    """A count that is not exact, decided as a measured figure by its boots."""
    s = v.summaries
    boots = min(s[FIRST].n, s.get(SECOND, s[FIRST]).n)
    return _from_verdict(dataclasses.replace(v, evidence="counted"), kind, detail, note=(
        f"{why}; decided by the boots" + ("" if boots > 1 else ", one per kernel: no claim")))


def shared_roles(rows: list[Row]) -> tuple[str, ...]:
    return tuple(sorted({r.lock for r in rows if r.lock and r.lock not in PER_INODE_ROLES}))


def cs_per_boot(rows: list[Row], case: Case, roles: tuple[str, ...]) -> dict[str, list[float]]:
    """Per kernel: instructions held per acquisition of the shared locks, weighted by how
    often each is taken, one value per tcg-cs boot."""
    held: dict[tuple[str, str], float] = defaultdict(float)
    taken: dict[tuple[str, str], float] = defaultdict(float)
    for r in evidence._ok(rows):
        if r.mode == "tcg-cs" and r.lock in roles and evidence._in_case(r, case):
            if r.metric == "cs_instructions_per_op":
                held[r.kernel, r.cell] += r.value
            elif r.metric == "cs_acquisitions_per_op":
                taken[r.kernel, r.cell] += r.value
    out: dict[str, list[float]] = defaultdict(list)
    for key, acquisitions in taken.items():
        if acquisitions > 0 and key in held:
            out[key[0]].append(held[key] / acquisitions)
    return dict(out)


def _cs(rows: list[Row], case: Case, order: list[str]) -> Entry | None:
    values = cs_per_boot(rows, case, shared_roles(rows))
    if FIRST not in values or SECOND not in values:
        return None
    summaries = {k: stats.summarize(v) for k, v in evidence._ordered(values, order).items()}
    c = stats.Comparison(summaries[SECOND], summaries[FIRST])
    r = c.ratio
    apart = abs(c.change) > CS_TOLERANCE and (r is None or r.excludes_one)
    ahead = "" if not apart else (SECOND if c.change < 0 else FIRST)
    return Entry(case, "cs", "1 vCPU", "instructions/acquisition", True,
                 {k: s for k, s in summaries.items() if k in (FIRST, SECOND) + REFERENCES},
                 summaries[SECOND].mean / summaries[FIRST].mean,
                 r.low if r else None, r.high if r else None, ahead,
                 "interval, beyond 1%" if apart else "",
                 max(CS_TOLERANCE, c.detectable if r else 0.0))


def _retries(rows: list[Row], case: Case, cpus: int) -> Entry | None:
    counters: dict[str, list[tuple[str, float]]] = {FIRST: [], SECOND: []}
    for (kernel, label, counter), value in sorted(evidence.retries(rows, cpus).items()):
        if label == case.label and kernel in counters and value > 0:
            counters[kernel].append((counter, value))
    if not any(counters.values()):
        return None
    for kernel in counters:
        counters[kernel].sort(key=lambda c: -c[1])
    kinds = {k: sorted({retry_counters.describe(n, k).kind for n, _ in cs})
             for k, cs in counters.items()}
    crowded = any(r.mode.endswith(OVERSUBSCRIBED) for r in rows
                  if r.flavour == "debug" and r.cpus == cpus)
    return Entry(case, "retries", f"{cpus} vCPUs" + (", oversubscribed" if crowded else ""),
                 "per op", None, {}, None, None, None, "?",
                 "", math.nan, "different kinds, not compared: " + "; ".join(
                     f"{k} {', '.join(v) or 'none'}" for k, v in kinds.items()),
                 counters=counters)


PRICE_METRIC = "trylock_retry_instructions_per_op."


def price_per_boot(rows: list[Row], case: Case, cpus: int) -> dict[str, list[float]]:
    """Per kernel: instructions its failed trylock loops spent per operation, summed over
    trylock sites and roles (one unit, instructions), one value per round-robin boot."""
    per_boot: dict[tuple[str, str], float] = defaultdict(float)
    for r in evidence._ok(rows):
        if r.metric.startswith(PRICE_METRIC) and r.cpus == cpus and evidence._in_case(r, case):
            per_boot[r.kernel, r.cell] += r.value
    cells = {(r.kernel, r.cell) for r in evidence._ok(rows) if r.cpus == cpus
             and r.mode.startswith("tcg-cs") and evidence._in_case(r, case)}
    out: dict[str, list[float]] = defaultdict(list)
    for kernel, cell in sorted(cells):
        out[kernel].append(per_boot.get((kernel, cell), 0.0))  # no failed trylock: 0
    return dict(out)


def _price(rows: list[Row], case: Case, cpus: int, order: list[str]) -> Entry | None:
    values = price_per_boot(rows, case, cpus)
    if FIRST not in values or SECOND not in values or not any(
            v for k in (FIRST, SECOND) for v in values[k]):
        return None
    ordered = evidence._ordered(values, order)
    summaries = {k: stats.summarize(v) for k, v in ordered.items()}
    c = stats.Comparison(summaries[SECOND], summaries[FIRST])
    apart = c.significant
    ahead = "" if not apart else (SECOND if c.change < 0 else FIRST)
    if min(len(values[FIRST]), len(values[SECOND])) < 2:
        ahead = "?"
    r = c.ratio
    first = summaries[FIRST].mean
    return Entry(case, "price", f"{cpus} vCPUs", "instructions/op", True,
                 {k: s for k, s in summaries.items() if k in (FIRST, SECOND) + REFERENCES},
                 summaries[SECOND].mean / first if first else math.inf,
                 r.low if r else None, r.high if r else None, ahead,
                 "interval" if apart else "", c.detectable if first else math.nan,
                 "one boot on a side, no interval" if ahead == "?" else "",
                 values=ordered)


def contention_counts(rows: list[Row], case: Case, cpus: int,
                      roles: tuple[str, ...]) -> dict[str, tuple[int, float]]:
    """Per kernel: contended acquisitions of `roles` and operations, summed over its
    debug boots at `cpus` vCPUs (the counts behind contentions/op)."""
    events: dict[str, float] = defaultdict(float)
    ops: dict[tuple[str, str], float] = {}
    for r in evidence._ok(rows):
        if not (r.flavour == "debug" and r.cpus == cpus and r.procs == cpus
                and evidence._in_case(r, case)):
            continue
        if r.metric == "contentions" and r.lock in roles:
            events[r.kernel] += r.value
        elif r.metric == "ops" and not r.lock:
            ops[r.kernel, r.cell] = r.value
    exposure: dict[str, float] = defaultdict(float)
    for (kernel, _), n in ops.items():
        exposure[kernel] += n
    return {k: (int(round(events.get(k, 0.0))), exposure[k]) for k in exposure}


def _contention(rows: list[Row], case: Case, cpus: int, roles: tuple[str, ...],
                kind: str = "contention") -> Entry | None:
    counts = contention_counts(rows, case, cpus, roles)
    if FIRST not in counts or SECOND not in counts:
        return None
    (x, ex), (y, ey) = counts[SECOND], counts[FIRST]
    figures = {k: stats.summarize([n / e]) for k, (n, e) in counts.items() if e and
               k in (FIRST, SECOND) + REFERENCES}
    test = stats.rate_ratio(x, ex, y, ey)
    if test is None:
        return Entry(case, kind, f"{cpus} vCPUs", "contentions/op", True, figures,
                     None, None, None, "", "", math.nan, "no contention in either")
    apart = test.p < stats.ALPHA
    ahead = "" if not apart else (SECOND if test.value < 1 else FIRST)
    note = f"{x} against {y} contended acquisitions"
    # The rate test takes each count as Poisson; mainline takes chinner's locks, so if
    # the test puts the two apart, counts vary between boots beyond that (lockdep's
    # timing, a background loop) and chinner against piggin decides nothing.
    control = counts.get(CONTROL)
    check = stats.rate_ratio(control[0], control[1], y, ey) if control else None
    if apart and check is not None and check.p < stats.ALPHA:
        ahead = "?"
        note += (f"; no claim: {CONTROL} and {FIRST} take the same locks yet the same test "
                 f"puts them {check.value:.2g}x apart")
    return Entry(case, kind, f"{cpus} vCPUs", "contentions/op", True, figures,
                 test.value, test.low, test.high, ahead,
                 "rate test" if ahead in (FIRST, SECOND) else "",
                 math.sqrt(test.high / test.low) - 1 if test.low > 0 and
                 math.isfinite(test.high) else math.nan, note,
                 control_p=check.p if check is not None else math.nan)


def _latency(rows: list[Row], case: Case, cpus: int, procs: int, order: list[str]) -> Entry | None:
    mode = evidence.plain_mode(rows)
    values = evidence.latency_values(rows, case, mode, cpus, procs, "p99")
    if FIRST not in values or SECOND not in values:
        return None
    ordered = evidence._ordered(values, order)
    v = evidence.Verdict(case, "tcg", cpus, "ns", False,
                         {k: stats.summarize(x) for k, x in ordered.items()}, FIRST,
                         values=ordered, procs=procs)
    return _from_verdict(v, "latency", _cells(cpus, procs))


def _cells(cpus: int, procs: int) -> str:
    text = f"{cpus} vCPU" + ("s" if cpus > 1 else "")
    return text + (f", {procs} worker" + ("s" if procs > 1 else "") if procs != cpus else "")


def _timed(rows: list[Row], case: Case, order: list[str]) -> list[Entry]:
    mode = evidence.plain_mode(rows)
    out = []
    for c, cpus, procs in evidence.timed_cells(rows, mode):
        if c != case:
            continue
        values, unit = evidence.throughput_values(rows, case, mode, cpus, procs)
        ordered = evidence._ordered(values, order)
        v = evidence.Verdict(case, "tcg", cpus, unit, True,
                             {k: stats.summarize(x) for k, x in ordered.items()}, FIRST,
                             values=ordered, procs=procs)
        entry = _from_verdict(v, "timed", _cells(cpus, procs))
        if entry:
            out.append(entry)
            latency = _latency(rows, case, cpus, procs, order)
            if latency:
                out.append(latency)
    return out


ALL_CASES = Case("every timed case", "every filesystem", "every timed case")


def _paired(rows: list[Row], boot_order: list[str] | None) -> Entry | None:
    """piggin's boots against chinner's of the same round, over every case they share:
    a boot's luck counts once, not once per case."""
    c = rounds.compare(rows, SECOND, FIRST)
    if not c.pairs:
        return None
    logs = [p.log_ratio for p in c.pairs]
    mean = statistics.fmean(logs)
    half = (stats.t95(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
            if len(logs) > 1 else math.inf)
    by_cpus = {n: [p.log_ratio for p in c.pairs if p.cpus == n]
               for n in sorted({p.cpus for p in c.pairs})}
    split = "; ".join(f"{n} vCPU{'s' if n > 1 else ''}: {sum(1 for x in v if x > 0)} of {len(v)}"
                      for n, v in by_cpus.items())
    # Pooled over vCPU counts whose pairs lean opposite ways, the test would average
    # two different effects into one: no claim, and the note says where each leans.
    flipped = len({statistics.fmean(v) > 0 for v in by_cpus.values()}) > 1
    apart = c.p_pairs < stats.ALPHA and not flipped
    ahead = "?" if flipped else "" if not apart else (SECOND if mean > 0 else FIRST)
    caveat = ""
    if apart and boot_order and all(k in boot_order for k in (FIRST, SECOND)):
        caveat = (f"every round booted the kernels in one order ({', '.join(boot_order)}): "
                  "a place in the order and a design look alike")
    return Entry(ALL_CASES, "paired", f"{len(c.pairs)} boot pairs", "ratio", False, {},
                 math.exp(mean), math.exp(mean - half), math.exp(mean + half), ahead,
                 f"sign-flip test over boot pairs, p = {c.p_pairs:.2g}" if apart else "",
                 math.exp(half) - 1 if math.isfinite(half) else math.nan,
                 f"{SECOND} faster in {sum(1 for x in logs if x > 0)} of {len(logs)} pairs"
                 + (f" ({split})" if len(by_cpus) > 1 else "")
                 + (": the vCPU counts lean opposite ways, not pooled" if flipped else ""),
                 caveat=caveat)


@dataclass(frozen=True)
class Predicted:
    """One kernel-case's throughput at PREDICTION_CPUS over the target machines."""
    low: float
    mid: float  # on the default machine
    high: float
    fallbacks: tuple[str, ...]  # inputs tcg-cs did not count (scaling_inputs.fallbacks)

    @property
    def band(self) -> tuple[float, float, float]:
        return self.low, self.mid, self.high


def predictions(scaling_json: Path) -> dict[tuple[str, Case], Predicted]:
    """(kernel, case) -> its predicted throughput at PREDICTION_CPUS, from the run's
    scaling.json (empty when it has none)."""
    if not scaling_json.is_file():
        return {}
    out = {}
    for c in json.loads(scaling_json.read_text()).get("cases", []):
        if PREDICTION_CPUS not in c.get("cpus", []):
            continue
        i = c["cpus"].index(PREDICTION_CPUS)
        band = (c.get("ops_per_s_band") or [[None, None]] * len(c["cpus"]))[i]
        mid = c["ops_per_s"][i]
        values = [v for v in (band[0], mid, band[1]) if v is not None]
        out[c["kernel"], Case(c["workload"], c["fs"], c["phase"])] = Predicted(
            min(values), mid, max(values), tuple(c.get("inputs", {}).get("fallbacks", [])))
    return out


@dataclass(frozen=True)
class PairRule:
    """What the scaling section's rule (analysis/verdicts.py) said of the isolated pair
    in a case: the design ahead on every machine where the rule passed ("" where it
    passed nowhere or the machines disagree), whether the held-out record allows
    verdicts at all, and why not."""
    ahead: str
    allowed: bool
    why: str


def pair_rules(scaling_json: Path) -> dict[Case, PairRule]:
    """case -> the rule's outcome for chinner against piggin, from scaling.json."""
    if not scaling_json.is_file():
        return {}
    data = json.loads(scaling_json.read_text())
    allowed = bool((data.get("anchors") or {}).get("verdicts_allowed"))
    by_case: dict[Case, list[dict]] = {}
    for v in data.get("pairs", []):
        if v["pair"] == "isolated":
            by_case.setdefault(Case(v["workload"], v["fs"], v["phase"]), []).append(v)
    out = {}
    for case, found in by_case.items():
        sides = {FIRST if v["rule"] == "first" else SECOND for v in found
                 if v["rule"] in ("first", "second")}
        ahead = next(iter(sides)) if len(sides) == 1 and all(
            v["rule"] in ("first", "second") for v in found) else ""
        why = ("withheld: the model's held-out record falls short of what verdicts at many "
               "CPUs need" if not allowed else found[0]["why"] if not ahead else "")
        out[case] = PairRule(ahead, allowed, why)
    return out


def _prediction(found: dict, rules: dict[Case, PairRule], case: Case) -> Entry | None:
    first, second = found.get((FIRST, case)), found.get((SECOND, case))
    if not first or not second:
        return None
    ratios = [s / f for s, f in zip(second.band, first.band)]
    low, high = min(ratios), max(ratios)
    rule = rules.get(case)
    # Only the sweep's rule, on a record that allows verdicts, makes a design ahead; a
    # withheld one is no claim ("?"), a rule that passes nowhere is "not apart".
    ahead = "?" if rule is None or not rule.allowed else rule.ahead
    figures = {k: stats.summarize([found[k, case].mid]) for k in (FIRST, SECOND) + REFERENCES
               if (k, case) in found}
    fell_back = "; ".join(f"{k}: {', '.join(p.fallbacks)}"
                          for k, p in ((FIRST, first), (SECOND, second)) if p.fallbacks)
    return Entry(case, "prediction", f"{PREDICTION_CPUS} CPUs", "ops/s", False, figures,
                 ratios[1], low, high, ahead,
                 "the sweep's rule (Scaling prediction)" if ahead not in ("", "?") else "",
                 math.nan, "a prediction, not a measurement"
                 + (f"; {rule.why}" if rule and rule.why else ""), fallbacks=fell_back)


def entries(rows: list[Row], kernels: list[str], spread: rerun.RerunSpread | None,
            scaling_json: Path, boot_order: list[str] | None = None) -> list[Entry]:
    """Every entry of the duel, case by case in the order of KINDS, then the boot-paired
    comparison over every case. boot_order: the one order every round booted the
    kernels in, when the run did not draw one per round (None: drawn)."""
    order = [k for k in (FIRST, SECOND) + REFERENCES if k in kernels]
    debug_cpus = sorted({r.cpus for r in rows if r.flavour == "debug"})
    # Contention on more vCPUs than the host has cores is the host descheduling lock
    # holders, not the design: counted only where the vCPUs had cores of their own.
    uncrowded = sorted({r.cpus for r in rows if r.flavour == "debug"
                        and not r.mode.endswith(OVERSUBSCRIBED)})
    price_cpus = sorted({r.cpus for r in rows if r.metric.startswith(PRICE_METRIC)})
    icount = {v.case: v for v in evidence.verdicts(rows, FIRST, order, spread)
              if v.evidence == "icount"}
    found = predictions(scaling_json)
    rules = pair_rules(scaling_json)
    out: list[Entry] = []
    for case in evidence.cases(rows):
        found_here: list[Entry | None] = []
        if debug_cpus:
            found_here.append(_exact(rows, case, debug_cpus[0], shared_roles(rows), "shared",
                                     order))
            found_here.append(_exact(rows, case, debug_cpus[0], PER_INODE_ROLES, "per_inode",
                                     order))
        # The same traffic where piggin's trylocks can fail (hotinode handle at 4 vCPUs:
        # the hash lock 5.7 times per op in piggin, once in chinner).
        found_here += [_exact(rows, case, n, shared_roles(rows), "shared", order)
                       for n in debug_cpus[1:]]
        found_here.append(_cs(rows, case, order))
        found_here += [_retries(rows, case, n) for n in debug_cpus if n > 1]
        found_here += [_price(rows, case, n, order) for n in price_cpus]
        found_here += [_contention(rows, case, n, shared_roles(rows)) for n in uncrowded
                       if n > 1]
        # piggin's i_lock guards the refcount too: where workers share an inode it is
        # the lock that serialises them (hotinode, anonstorm).
        found_here += [_contention(rows, case, n, PER_INODE_ROLES, "inode_contention")
                       for n in uncrowded if n > 1]
        if case in icount:
            found_here.append(_from_verdict(icount[case], "icount", "1 vCPU"))
        found_here += _timed(rows, case, order)
        found_here.append(_prediction(found, rules, case))
        out += [e for e in found_here if e is not None]
    paired = _paired(rows, boot_order) if FIRST in kernels and SECOND in kernels else None
    return out + ([paired] if paired else [])


@dataclass(frozen=True)
class KindTally:
    """One kind of evidence over every case: where each design is ahead."""
    kind: str
    entries: list[Entry]

    def ahead(self, design: str) -> list[Entry]:
        return [e for e in self.entries if e.ahead == design]

    @property
    def level(self) -> list[Entry]:
        return [e for e in self.entries if e.ahead == ""]

    @property
    def unclaimed(self) -> list[Entry]:
        return [e for e in self.entries if e.ahead == "?"]

    @property
    def detectable(self) -> list[float]:
        return [e.detectable for e in self.entries if math.isfinite(e.detectable)]

    @property
    def ratios(self) -> list[float]:
        return [e.ratio for e in self.entries if e.ratio is not None and math.isfinite(e.ratio)]


def by_kind(found: list[Entry]) -> list[KindTally]:
    kinds = [k for k in KINDS if any(e.kind == k for e in found)]
    return [KindTally(k, [e for e in found if e.kind == k]) for k in kinds]


def median_ratio(entries: list[Entry]) -> float:
    ratios = [e.ratio for e in entries if e.ratio is not None and math.isfinite(e.ratio)]
    return statistics.median(ratios) if ratios else math.nan
