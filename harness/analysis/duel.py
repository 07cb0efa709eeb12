"""A pair of designs, per workload case and per kind of evidence.

The question of the project is which of the two designs, asked of two pairs
(analysis/verdicts.py: PAIRS): the isolated pair, chinner against piggin on
the same structures, and the historical pair, chinner-2.6.39 against
piggin-2010, as a 2010 summit had them. mainline (which already has
chinner's lock order) is a reference and base the common ancestor. Every
entry holds the pair's figures, the references', the ratio second/first
(piggin/chinner) with its uncertainty, which design the evidence puts ahead
(or neither, with the smallest difference it could have shown) and by which
rule. A prediction is kept apart from every measurement.

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
  paired      every timed case of one vCPU count at once, the boot as the unit:
              each boot paired with the other design's boot of the same round
              (analysis/rounds.py); never pooled over vCPU counts
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
from harness.analysis.verdicts import PAIR_TEXT, PAIRS
from harness.run.matrix import OVERSUBSCRIBED
from harness.run.tidy import Row

FIRST, SECOND = PAIRS["isolated"]
REFERENCES = ("mainline", "base")
PER_INODE_ROLES = ("i_lock",)
# The control of an exact count: 6.1 already has chinner's lock order, so the two take
# the same icache locks per operation (design.md, section 6's counts agree).
CONTROL = "mainline"
# The negative control of every test between two kernels' counts: mainline against the
# isolated pair's chinner, which take the same locks; whichever pair a test is about,
# how often this control rejects is the test's own false-claim rate.
CONTROL_PAIR = (CONTROL, FIRST)
# A contention test's negative control must take the same locks, not only as many: for
# i_lock, mainline and chinner (one i_lock model); for the shared locks, mainline and
# chinner-2.6.39 (6.1's global inode_hash_lock and per-sb list lock), never chinner,
# whose per-bucket hash and per-CPU lists contend differently by design.
CONTENTION_CONTROLS = {"contention": (CONTROL, PAIRS["historical"][0]),
                       "inode_contention": CONTROL_PAIR}
# A contention claim counts only from this many debug boots per kernel (issue 38): the
# boot is the unit of a count that moves as a whole with lockdep's timing.
MIN_CONTENTION_BOOTS = 3


@dataclass(frozen=True)
class Pair:
    """Two designs compared: first (Dave Chinner's) and second (Nick Piggin's)."""
    name: str  # a key of verdicts.PAIRS: isolated, historical
    first: str
    second: str

    @property
    def text(self) -> str:
        """What the pair is and what is equal between its two kernels (verdicts.PAIR_TEXT)."""
        return PAIR_TEXT[self.name]

    @property
    def kernels(self) -> tuple[str, str]:
        return self.first, self.second

    def other(self, design: str) -> str:
        return {self.first: self.second, self.second: self.first}.get(design, "")


ISOLATED = Pair("isolated", *PAIRS["isolated"])
HISTORICAL = Pair("historical", *PAIRS["historical"])
ALL_PAIRS = (ISOLATED, HISTORICAL)


def pairs_in(kernels: list[str]) -> list[Pair]:
    """The pairs whose two kernels the run has, isolated first."""
    return [p for p in ALL_PAIRS if p.first in kernels and p.second in kernels]
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
    first: str = FIRST  # the pair the entry compares
    second: str = SECOND
    # A test that is shown, not counted (contention without enough boots, or whose
    # negative control fails): the design it would put ahead; ahead is then "?".
    shown: str = ""
    # contention: how often the kind's negative control rejected, of its tests
    control: tuple[int, int] | None = None
    boots: tuple[int, int] = (0, 0)  # boots behind the first's and the second's figure
    exact: bool = False  # an exact count every debug boot repeats (decided by "exact")

    @property
    def prediction(self) -> bool:
        return self.kind == "prediction"

    @property
    def behind(self) -> str:
        return {self.first: self.second, self.second: self.first}.get(self.ahead, "")

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


def _ahead(outcome: str, pair: Pair) -> str:
    """The outcome of the second against the first as the design it puts ahead."""
    if outcome == "better":
        return pair.second
    if outcome == "worse":
        return pair.first
    return "?" if outcome == "unclaimed" else ""


def _kept(pair: Pair) -> tuple[str, ...]:
    """The kernels whose figures an entry of the pair keeps: the pair and the references."""
    return pair.kernels + REFERENCES


def _from_verdict(v: evidence.Verdict, kind: str, detail: str, pair: Pair = ISOLATED,
                  note: str = "") -> Entry | None:
    first, second = pair.kernels
    if first not in v.summaries or second not in v.summaries:
        return None
    c = v.comparison(second, first)
    assert c is not None
    r = c.ratio
    outcome = v.outcome(second, first)
    ratio = c.candidate.mean / c.baseline.mean if c.baseline.mean else None
    rule = {"exact": "exact", "interval": "interval", "rank": "rank test"}.get(
        v.decided_by(second, first), "")
    if kind == "icount" and rule:
        rule = "interval and rerun floor"
    if outcome == "unclaimed":
        note = note or v.unclaimed_reason(second, first)
    elif v.identical:
        note = note or ("every boot of every kernel gave the same figure: below the "
                        "measurement's resolution")
    return Entry(v.case, kind, detail, v.unit, not v.higher_is_better,
                 {k: s for k, s in v.summaries.items() if k in _kept(pair)},
                 ratio, r.low if r else None, r.high if r else None,
                 _ahead(outcome, pair), rule,
                 v.detectable(second, first), note, values=dict(v.values), cpus=v.cpus,
                 first=first, second=second,
                 boots=(v.summaries[first].n, v.summaries[second].n))


def _exact(rows: list[Row], case: Case, cpus: int, roles: tuple[str, ...] | None,
           kind: str, order: list[str], pair: Pair = ISOLATED) -> Entry | None:
    first, second = pair.kernels
    procs = evidence.main_procs(rows, case, cpus)
    values = evidence.acquisition_values(rows, case, cpus, roles, procs)
    if not values:
        return None
    summaries = {k: stats.summarize(x) for k, x in evidence._ordered(values, order).items()}
    v = evidence.Verdict(case, "exact", cpus, "acquisitions/op", False, summaries, first,
                         values=values)
    if cpus > 1 and first in summaries and second in summaries:
        # On several vCPUs piggin's failed trylocks retake the shared locks as often as
        # they fail, which varies from boot to boot: a measured figure, not an exact one.
        if v.same(first, second):
            return None  # nothing failed in either: the 1-vCPU exact entry says it all
        return _by_boots(v, kind, _cells(cpus, procs),
                         "with retries, counts vary from boot to boot", pair)
    control, model = CONTROL_PAIR
    if control in summaries and model in summaries and not v.same(control, model):
        # mainline takes chinner's locks, so their counts differ only by what varies from
        # boot to boot (a background loop, the flusher): the count is not exact here, and
        # the pair is decided as a measured figure, by its boots.
        return _by_boots(v, kind, _cells(cpus, procs),
                         f"not exact here: {control} and {model} take the same locks yet "
                         f"{control} {summaries[control].mean:.3g} against "
                         f"{summaries[model].mean:.3g}", pair)
    varied = unrepeated(values, pair.kernels + CONTROL_PAIR)
    if varied:
        # An exact count is one every debug boot repeats (issue 38: igetstorm-crowded's
        # chains differ from boot to boot, and so did its count): where the boots of a
        # kernel disagree, the count is measured, not exact, and decided by the boots.
        return _by_boots(v, kind, _cells(cpus, procs),
                         "not exact here: the debug boots disagree ("
                         + "; ".join(f"{k} {lo:.4g} to {hi:.4g}" for k, lo, hi in varied)
                         + ")", pair)
    found = _from_verdict(v, kind, _cells(cpus, procs), pair)
    return dataclasses.replace(found, exact=True) if found else None


def unrepeated(values: dict[str, list[float]],
               kernels: tuple[str, ...]) -> list[tuple[str, float, float]]:
    """The kernels among `kernels` whose debug boots gave counts that are not the same
    (evidence.same_count): (kernel, lowest, highest). One boot a kernel: none."""
    out = []
    for k in dict.fromkeys(kernels):
        found = values.get(k, [])
        if len(found) > 1 and not evidence.same_count(min(found), max(found)):
            out.append((k, min(found), max(found)))
    return out


def _by_boots(v: evidence.Verdict, kind: str, detail: str, why: str,
              pair: Pair = ISOLATED) -> Entry | None:
    """A count that is not exact, decided as a measured figure by its boots."""
    s = v.summaries
    if pair.first not in s:
        return None
    first = s[pair.first]
    boots = min(first.n, s.get(pair.second, first).n)
    return _from_verdict(dataclasses.replace(v, evidence="counted"), kind, detail, pair, note=(
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


def _cs(rows: list[Row], case: Case, order: list[str], pair: Pair = ISOLATED) -> Entry | None:
    first, second = pair.kernels
    values = cs_per_boot(rows, case, shared_roles(rows))
    if first not in values or second not in values:
        return None
    summaries = {k: stats.summarize(v) for k, v in evidence._ordered(values, order).items()}
    c = stats.Comparison(summaries[second], summaries[first])
    r = c.ratio
    apart = abs(c.change) > CS_TOLERANCE and (r is None or r.excludes_one)
    ahead = "" if not apart else (second if c.change < 0 else first)
    return Entry(case, "cs", "1 vCPU", "instructions/acquisition", True,
                 {k: s for k, s in summaries.items() if k in _kept(pair)},
                 summaries[second].mean / summaries[first].mean,
                 r.low if r else None, r.high if r else None, ahead,
                 "interval, beyond 1%" if apart else "",
                 max(CS_TOLERANCE, c.detectable if r else 0.0), first=first, second=second,
                 boots=(summaries[first].n, summaries[second].n))


def _retries(rows: list[Row], case: Case, cpus: int, pair: Pair = ISOLATED) -> Entry | None:
    counters: dict[str, list[tuple[str, float]]] = {pair.first: [], pair.second: []}
    for (kernel, label, counter), value in sorted(evidence.retries(rows, cpus,
                                                                   fixed=True).items()):
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
    return Entry(case, "retries", _cells(cpus, evidence.main_procs(rows, case, cpus))
                 + (", oversubscribed" if crowded else ""),
                 "per op", None, {}, None, None, None, "?",
                 "", math.nan, "different kinds, not compared: " + "; ".join(
                     f"{k} {', '.join(v) or 'none'}" for k, v in kinds.items()),
                 counters=counters, cpus=cpus, first=pair.first, second=pair.second)


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


def price_claim(values: dict[str, list[float]], pair: Pair) -> str:
    """The design the failed-trylock instructions put ahead: "" (neither), or "?" with
    fewer than two boots on a side (the rule of _price, for a permutation over boots)."""
    a, b = values.get(pair.first, []), values.get(pair.second, [])
    if min(len(a), len(b)) < 2:
        return "?"
    c = stats.Comparison(stats.summarize(b), stats.summarize(a))
    return "" if not c.significant else (pair.second if c.change < 0 else pair.first)


def _price(rows: list[Row], case: Case, cpus: int, order: list[str],
           pair: Pair = ISOLATED) -> Entry | None:
    first, second = pair.kernels
    values = price_per_boot(rows, case, cpus)
    if first not in values or second not in values:
        return None
    ordered = evidence._ordered(values, order)
    if not any(v for k in (first, second) for v in values[k]):
        # Measured, and nothing to price: no icache trylock of either failed in its
        # round-robin boots. Equal, but only as far as those boots go.
        return Entry(case, "price", f"{cpus} vCPUs", "instructions/op", True,
                     {k: stats.summarize(v) for k, v in ordered.items() if k in _kept(pair)},
                     1.0, None, None, "?", "", math.nan,
                     "no failed icache trylock in any round-robin boot of either",
                     values=ordered, cpus=cpus, first=first, second=second,
                     boots=(len(values[first]), len(values[second])))
    summaries = {k: stats.summarize(v) for k, v in ordered.items()}
    c = stats.Comparison(summaries[second], summaries[first])
    ahead = price_claim(values, pair)
    r = c.ratio
    mean = summaries[first].mean
    return Entry(case, "price", f"{cpus} vCPUs", "instructions/op", True,
                 {k: s for k, s in summaries.items() if k in _kept(pair)},
                 summaries[second].mean / mean if mean else math.inf,
                 r.low if r else None, r.high if r else None, ahead,
                 "interval" if ahead in pair.kernels else "",
                 c.detectable if mean else math.nan,
                 "one boot on a side, no interval" if ahead == "?" else "",
                 values=ordered, cpus=cpus, first=first, second=second,
                 boots=(len(values[first]), len(values[second])))


def contention_boots(rows: list[Row], case: Case, cpus: int,
                     roles: tuple[str, ...]) -> dict[str, list[tuple[int, float]]]:
    """Per kernel: (contended acquisitions of `roles`, operations) of each of its debug
    boots at `cpus` vCPUs (the counts behind contentions/op), the boot as the unit."""
    events: dict[tuple[str, str], float] = defaultdict(float)
    ops: dict[tuple[str, str], float] = {}
    procs = evidence.main_procs(rows, case, cpus)
    for r in evidence._ok(rows):
        if not (r.flavour == "debug" and r.cpus == cpus and r.procs == procs
                and evidence._in_case(r, case)):
            continue
        if r.metric == "contentions" and r.lock in roles:
            events[r.kernel, r.cell] += r.value
        elif r.metric == "ops" and not r.lock:
            ops[r.kernel, r.cell] = r.value
    out: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for (kernel, cell), n in sorted(ops.items()):
        out[kernel].append((int(round(events.get((kernel, cell), 0.0))), n))
    return dict(out)


def contention_counts(rows: list[Row], case: Case, cpus: int,
                      roles: tuple[str, ...]) -> dict[str, tuple[int, float]]:
    """Per kernel: contended acquisitions of `roles` and operations, summed over its
    debug boots at `cpus` vCPUs (the counts behind contentions/op)."""
    return {k: (sum(c for c, _ in boots), sum(e for _, e in boots))
            for k, boots in contention_boots(rows, case, cpus, roles).items()}


def contention_test(a: list[tuple[int, float]],
                    b: list[tuple[int, float]]) -> stats.RateRatio | None:
    """a's contention rate against b's: with MIN_CONTENTION_BOOTS boots a side the boots'
    own spread widens the test (stats.overdispersed_rate_ratio); with fewer, the counts
    summed and taken as Poisson (stats.rate_ratio), which is shown, never counted."""
    if min(len(a), len(b)) >= MIN_CONTENTION_BOOTS:
        return stats.overdispersed_rate_ratio(a, b)
    return stats.rate_ratio(sum(c for c, _ in a), sum(e for _, e in a),
                            sum(c for c, _ in b), sum(e for _, e in b))


def plural_boots(n: int) -> str:
    return f"{n} debug boot" + ("" if n == 1 else "s")


def _contention(rows: list[Row], case: Case, cpus: int, roles: tuple[str, ...],
                kind: str = "contention", pair: Pair = ISOLATED) -> Entry | None:
    first, second = pair.kernels
    boots = contention_boots(rows, case, cpus, roles)
    if first not in boots or second not in boots:
        return None
    detail = _cells(cpus, evidence.main_procs(rows, case, cpus))
    counts = {k: (sum(c for c, _ in b), sum(e for _, e in b)) for k, b in boots.items()}
    (x, _), (y, _) = counts[second], counts[first]
    figures = {k: stats.summarize([n / e]) for k, (n, e) in counts.items() if e and
               k in _kept(pair)}
    n_boots = (len(boots[first]), len(boots[second]))
    test = contention_test(boots[second], boots[first])
    control, model = CONTENTION_CONTROLS[kind]
    check = (contention_test(boots[control], boots[model])
             if control in boots and model in boots else None)
    control_p = check.p if check is not None else math.nan
    if test is None:
        return Entry(case, kind, detail, "contentions/op", True, figures,
                     None, None, None, "", "", math.nan, "no contention in either",
                     first=first, second=second, boots=n_boots, control_p=control_p)
    apart = test.p < stats.ALPHA
    ahead = "" if not apart else (second if test.value < 1 else first)
    note = f"{x} against {y} contended acquisitions"
    shown = ""
    few = min(n_boots + ((len(boots[control]), len(boots[model])) if check else ()))
    if apart and few < MIN_CONTENTION_BOOTS:
        shown, ahead = ahead, "?"
        note += (f"; shown, not counted: {plural_boots(few)} per kernel, a contention "
                 f"claim needs {MIN_CONTENTION_BOOTS}")
    elif apart and check is not None and check.p < stats.ALPHA:
        # The control takes the same locks: where the same test puts those two apart,
        # it puts apart what does not differ, and the pair's claim here decides nothing.
        shown, ahead = ahead, "?"
        note += (f"; shown, not counted: {control} and {model} take the same locks yet the "
                 f"same test puts them {check.value:.2g}x apart")
    return Entry(case, kind, detail, "contentions/op", True, figures,
                 test.value, test.low, test.high, ahead,
                 ("rate test, boots as units" if few >= MIN_CONTENTION_BOOTS else "rate test")
                 if ahead in pair.kernels else "",
                 math.sqrt(test.high / test.low) - 1 if test.low > 0 and
                 math.isfinite(test.high) else math.nan, note,
                 control_p=control_p, first=first, second=second, shown=shown, boots=n_boots)


CONTENTION_KINDS = ("contention", "inode_contention")


def control_holds(rejected: int, tests: int) -> bool:
    """The negative control rejects at about its nominal rate: no more often than a test
    at ALPHA does by chance (the chance of so many rejections or more is at least ALPHA).
    No control test at all is no evidence that it holds."""
    return tests > 0 and stats.binomial_upper(rejected, tests, stats.ALPHA) >= stats.ALPHA


def _judge_controls(found: list[Entry]) -> list[Entry]:
    """Per contention kind: how often its negative control rejected, on every entry of the
    kind; where the control fails, or has no test, no claim of the kind is counted (each
    is shown, with what it would say)."""
    out = list(found)
    for kind in CONTENTION_KINDS:
        mine = [i for i, e in enumerate(out) if e.kind == kind]
        ps = [out[i].control_p for i in mine if math.isfinite(out[i].control_p)]
        control = (sum(1 for p in ps if p < stats.ALPHA), len(ps))
        holds = control_holds(*control)
        for i in mine:
            e = dataclasses.replace(out[i], control=control)
            if not holds and e.ahead in (e.first, e.second):
                same = CONTENTION_CONTROLS[kind]
                why = (f"its negative control ({same[0]} against {same[1]}, "
                       f"the same locks) rejects in {control[0]} of {control[1]}"
                       if control[1] else "no negative control in this run")
                e = dataclasses.replace(e, shown=e.ahead, ahead="?", rule="",
                                        note=e.note + f"; shown, not counted: {why}")
            out[i] = e
    return out


def _latency(rows: list[Row], case: Case, cpus: int, procs: int, order: list[str],
             pair: Pair = ISOLATED) -> Entry | None:
    mode = evidence.plain_mode(rows)
    values = evidence.latency_values(rows, case, mode, cpus, procs, "p99")
    if pair.first not in values or pair.second not in values:
        return None
    ordered = evidence._ordered(values, order)
    v = evidence.Verdict(case, "tcg", cpus, "ns", False,
                         {k: stats.summarize(x) for k, x in ordered.items()}, pair.first,
                         values=ordered, procs=procs)
    return _from_verdict(v, "latency", _cells(cpus, procs), pair)


def _cells(cpus: int, procs: int) -> str:
    text = f"{cpus} vCPU" + ("s" if cpus > 1 else "")
    return text + (f", {procs} worker" + ("s" if procs > 1 else "") if procs != cpus else "")


def _timed(rows: list[Row], case: Case, order: list[str],
           pair: Pair = ISOLATED) -> list[Entry]:
    mode = evidence.plain_mode(rows)
    out = []
    for c, cpus, procs in evidence.timed_cells(rows, mode):
        if c != case:
            continue
        values, unit = evidence.throughput_values(rows, case, mode, cpus, procs)
        ordered = evidence._ordered(values, order)
        v = evidence.Verdict(case, "tcg", cpus, unit, True,
                             {k: stats.summarize(x) for k, x in ordered.items()}, pair.first,
                             values=ordered, procs=procs)
        entry = _from_verdict(v, "timed", _cells(cpus, procs), pair)
        if entry:
            out.append(entry)
            latency = _latency(rows, case, cpus, procs, order, pair)
            if latency:
                out.append(latency)
    return out


ALL_CASES = Case("every timed case", "every filesystem", "every timed case")


@dataclass(frozen=True)
class Lean:
    """The pair's boot pairs at one vCPU count: second over first, per round, as the
    geometric mean of the timed cases both boots ran (analysis/rounds.py)."""
    cpus: int
    ratios: tuple[float, ...]  # one per boot pair (round)
    ratio: float  # their geometric mean
    low: float  # its 95% interval (t on the pairs' log ratios)
    high: float
    p: float  # exact sign-flip test over the pairs, two-sided
    repetitions: tuple[int, ...] = ()

    @property
    def pairs(self) -> int:
        return len(self.ratios)

    @property
    def least_p(self) -> float:
        """The smallest p the sign-flip test can give with this many pairs."""
        return 2 / 2 ** self.pairs if self.pairs else 1.0

    @property
    def apart(self) -> bool:
        return self.low > 1 or self.high < 1


def leans(rows: list[Row], pair: Pair = ISOLATED) -> list[Lean]:
    """Per vCPU count (never pooled), the pair's boot pairs."""
    c = rounds.compare(rows, pair.second, pair.first)
    out = []
    for n in sorted({p.cpus for p in c.pairs}):
        mine = [p for p in c.pairs if p.cpus == n]
        logs = [p.log_ratio for p in mine]
        mean = statistics.fmean(logs)
        half = (stats.t95(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
                if len(logs) > 1 else math.inf)
        out.append(Lean(n, tuple(math.exp(x) for x in logs), math.exp(mean),
                        math.exp(mean - half), math.exp(mean + half),
                        rounds.sign_flip_p(logs), tuple(p.repetition for p in mine)))
    return out


@dataclass(frozen=True)
class SignFlip:
    """Whether the pair's timed lean changes sign between vCPU counts: each count's boot
    pairs, and the change between the lowest and the highest count (the ratio of their
    geometric means, Welch's interval on the logs)."""
    pair: Pair
    leans: tuple[Lean, ...]
    between: stats.Ratio | None  # the highest count's ratio over the lowest's

    @property
    def opposite(self) -> bool:
        """The counts lean opposite ways (by their geometric means)."""
        return len({lean.ratio > 1 for lean in self.leans if lean.ratio != 1}) > 1

    @property
    def status(self) -> str:
        """'confirmed' (opposite ways, and each side's interval excludes no change), 'not
        confirmed' (opposite ways, an interval includes no change), 'no flip' (the same
        way), 'one count' (a single vCPU count)."""
        if len(self.leans) < 2:
            return "one count"
        if not self.opposite:
            return "no flip"
        down = min(self.leans, key=lambda x: x.ratio)
        up = max(self.leans, key=lambda x: x.ratio)
        return "confirmed" if down.high < 1 < up.low else "not confirmed"


def sign_flip(rows: list[Row], pair: Pair = ISOLATED) -> SignFlip:
    found = leans(rows, pair)
    between = None
    if len(found) > 1:
        low, high = found[0], found[-1]
        between = stats.ratio(stats.summarize(list(high.ratios)),
                              stats.summarize(list(low.ratios)))
    return SignFlip(pair, tuple(found), between)


def _paired(rows: list[Row], boot_order: list[str] | None,
            pair: Pair = ISOLATED) -> list[Entry]:
    """The second's boots against the first's of the same round, over every case they
    share, per vCPU count: a boot's luck counts once, not once per case, and a lean at
    one vCPU count never averages with another's."""
    first, second = pair.kernels
    out = []
    for lean in leans(rows, pair):
        apart = lean.p < stats.ALPHA
        ahead = "" if not apart else (second if lean.ratio > 1 else first)
        caveat = ""
        if apart and boot_order and all(k in boot_order for k in pair.kernels):
            caveat = (f"every round booted the kernels in one order ({', '.join(boot_order)}): "
                      "a place in the order and a design look alike")
        unit = f"{lean.cpus} vCPU" + ("s" if lean.cpus > 1 else "")
        out.append(Entry(
            ALL_CASES, "paired", f"{unit}, {lean.pairs} boot pairs", "ratio", False, {},
            lean.ratio, lean.low, lean.high, ahead,
            f"sign-flip test over boot pairs, p = {lean.p:.2g}" if apart else "",
            math.sqrt(lean.high / lean.low) - 1 if math.isfinite(lean.high) else math.nan,
            f"{second} faster in {sum(1 for r in lean.ratios if r > 1)} of {lean.pairs} pairs"
            f" (sign-flip p = {lean.p:.2g}; {lean.pairs} pairs cannot go below "
            f"{lean.least_p:.2g})", caveat=caveat, cpus=lean.cpus, first=first,
            second=second, values={second: list(lean.ratios)},
            boots=(lean.pairs, lean.pairs)))
    return out


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


def pair_rules(scaling_json: Path, pair: Pair = ISOLATED) -> dict[Case, PairRule]:
    """case -> the rule's outcome for the pair (chinner against piggin), from
    scaling.json."""
    if not scaling_json.is_file():
        return {}
    data = json.loads(scaling_json.read_text())
    allowed = bool((data.get("anchors") or {}).get("verdicts_allowed"))
    by_case: dict[Case, list[dict]] = {}
    for v in data.get("pairs", []):
        if v["pair"] == pair.name:
            by_case.setdefault(Case(v["workload"], v["fs"], v["phase"]), []).append(v)
    out = {}
    for case, found in by_case.items():
        sides = {pair.first if v["rule"] == "first" else pair.second for v in found
                 if v["rule"] in ("first", "second")}
        ahead = next(iter(sides)) if len(sides) == 1 and all(
            v["rule"] in ("first", "second") for v in found) else ""
        why = ("withheld: the model's held-out record falls short of what verdicts at many "
               "CPUs need" if not allowed else found[0]["why"] if not ahead else "")
        out[case] = PairRule(ahead, allowed, why)
    return out


def _prediction(found: dict, rules: dict[Case, PairRule], case: Case,
                pair: Pair = ISOLATED) -> Entry | None:
    first, second = found.get((pair.first, case)), found.get((pair.second, case))
    if not first or not second:
        return None
    ratios = [s / f for s, f in zip(second.band, first.band)]
    low, high = min(ratios), max(ratios)
    rule = rules.get(case)
    # Only the sweep's rule, on a record that allows verdicts, makes a design ahead; a
    # withheld one is no claim ("?"), a rule that passes nowhere is "not apart".
    ahead = "?" if rule is None or not rule.allowed else rule.ahead
    figures = {k: stats.summarize([found[k, case].mid]) for k in _kept(pair)
               if (k, case) in found}
    fell_back = "; ".join(f"{k}: {', '.join(p.fallbacks)}"
                          for k, p in ((pair.first, first), (pair.second, second))
                          if p.fallbacks)
    return Entry(case, "prediction", f"{PREDICTION_CPUS} CPUs", "ops/s", False, figures,
                 ratios[1], low, high, ahead,
                 "the sweep's rule (Scaling prediction)" if ahead not in ("", "?") else "",
                 math.nan, "a prediction, not a measurement"
                 + (f"; {rule.why}" if rule and rule.why else ""), fallbacks=fell_back,
                 first=pair.first, second=pair.second)


def entries(rows: list[Row], kernels: list[str], spread: rerun.RerunSpread | None,
            scaling_json: Path, boot_order: list[str] | None = None,
            pair: Pair = ISOLATED) -> list[Entry]:
    """Every entry of the pair's duel, case by case in the order of KINDS, then the
    boot-paired comparison over every case, per vCPU count. boot_order: the one order
    every round booted the kernels in, when the run did not draw one per round (None:
    drawn)."""
    first, second = pair.kernels
    order = [k for k in _kept(pair) if k in kernels]
    debug_cpus = sorted({r.cpus for r in rows if r.flavour == "debug"})
    # Contention on more vCPUs than the host has cores is the host descheduling lock
    # holders, not the design: counted only where the vCPUs had cores of their own.
    uncrowded = sorted({r.cpus for r in rows if r.flavour == "debug"
                        and not r.mode.endswith(OVERSUBSCRIBED)})
    price_cpus = sorted({r.cpus for r in rows if r.metric.startswith(PRICE_METRIC)})
    icount = {v.case: v for v in evidence.verdicts(rows, first, order, spread)
              if v.evidence == "icount"}
    found = predictions(scaling_json)
    rules = pair_rules(scaling_json, pair)
    out: list[Entry] = []
    for case in evidence.cases(rows):
        found_here: list[Entry | None] = []
        if debug_cpus:
            found_here.append(_exact(rows, case, debug_cpus[0], shared_roles(rows), "shared",
                                     order, pair))
            found_here.append(_exact(rows, case, debug_cpus[0], PER_INODE_ROLES, "per_inode",
                                     order, pair))
        # The same traffic where piggin's trylocks can fail (hotinode handle at 4 vCPUs:
        # the hash lock 5.7 times per op in piggin, once in chinner).
        found_here += [_exact(rows, case, n, shared_roles(rows), "shared", order, pair)
                       for n in debug_cpus[1:]]
        found_here.append(_cs(rows, case, order, pair))
        found_here += [_retries(rows, case, n, pair) for n in debug_cpus if n > 1]
        found_here += [_price(rows, case, n, order, pair) for n in price_cpus]
        found_here += [_contention(rows, case, n, shared_roles(rows), pair=pair)
                       for n in uncrowded if n > 1]
        # piggin's i_lock guards the refcount too: where workers share an inode it is
        # the lock that serialises them (hotinode, anonstorm).
        found_here += [_contention(rows, case, n, PER_INODE_ROLES, "inode_contention", pair)
                       for n in uncrowded if n > 1]
        if case in icount:
            found_here.append(_from_verdict(icount[case], "icount", "1 vCPU", pair))
        found_here += _timed(rows, case, order, pair)
        found_here.append(_prediction(found, rules, case, pair))
        out += [e for e in found_here if e is not None]
    out = _judge_controls(out)
    return out + (_paired(rows, boot_order, pair) if first in kernels and second in kernels
                  else [])


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
