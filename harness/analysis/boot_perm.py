"""Cost claims against chance with the boot as the unit: a permutation over boots.

The cost tests of one vCPU count come from a few boots: every timed case and
its p99 latency from the same timed boots of each kernel (one boot runs every
workload step), the -icount cases from the same -icount boots. Under TCG a
whole boot runs fast or slow (analysis/rounds.py), so the tests of one boot
set are not independent, and a binomial chance of "k claims in n tests at
ALPHA each" counts one boot's luck once per test: 43 throughput and 43 p99
tests of the same six boots are not 86 tries.

Here the claims are held against their own null distribution instead. If
the two designs cost the same, which of the pair's boots carry which label
is arbitrary: the boots of each family (a mode at a vCPU count: the timed
boots, the -icount boots, the round-robin tcg-cs boots) are relabelled
between the two kernels in every way (a seeded sample beyond MAX_LABELLINGS),
every test is decided again by its own rule on the relabelled boots (the
other kernels' boots stay as they are), and the chance p is the share of
labellings with as many claims or more. A boot's luck moves all its tests
together in every labelling, so their dependence is kept, not assumed away.
The families of one vCPU count are relabelled independently of each other.

Its reach is the boots: with n boots a kernel in a family the smallest p is
2 / C(2n, n) (the labelling and its mirror give the same claims): 0.1 with
three timed boots each, so no count of claims from three rounds can be
beyond chance, and 0.0022 with six.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Callable

from harness.analysis import duel, evidence, rerun, stats
from harness.analysis.duel import Pair
from harness.analysis.evidence import Case
from harness.run.tidy import Row

# Beyond this many labellings of one family, a seeded sample of them (the labelling
# observed and its mirror always among them).
MAX_LABELLINGS = 2000
SEED = 1
# The kinds whose claims are counted against chance (the boot-paired test is the
# permutation's own kind of evidence, shown beside it, never added to the count).
COUNTED = ("timed", "latency", "icount", "price")

Unit = tuple[str, int]  # one boot of a family: (kernel, repetition)


@dataclass(frozen=True)
class Test:
    """One cost test between the pair: the boots it reads and how it decides."""
    kind: str
    case: Case
    cpus: int  # the vCPU count it speaks for
    procs: int
    family: tuple[str, int]  # (mode, vCPUs) of the boots it reads
    units: dict[Unit, list[float]]  # the pair's boots and their values
    # What the test says when the units in the set carry the first kernel's label and
    # the others the second's: "claim" (either design ahead), "even" or "unclaimed".
    outcome: Callable[[frozenset[Unit]], str] = field(compare=False, repr=False)

    def decided(self, first: frozenset[Unit]) -> bool:
        return self.outcome(first) == "claim"


@dataclass(frozen=True)
class Chance:
    """The claims of a set of tests at one vCPU count against the permutation."""
    cpus: int
    tests: int
    claims: int  # as measured (the labelling observed)
    p: float  # the share of labellings with as many claims or more
    least_p: float  # the smallest p these boots allow
    labellings: int  # how many were decided (a sample beyond MAX_LABELLINGS a family)
    sampled: bool
    boots: dict[str, tuple[int, int]]  # mode -> boots of the first and of the second

    @property
    def boots_text(self) -> str:
        """'3 + 3 timed boots, 2 + 2 -icount boots'."""
        names = {"tcg": "timed", "kvm": "timed", "tcg-icount": "-icount",
                 "tcg-cs-rr": "round-robin tcg-cs"}
        return ", ".join(f"{a} + {b} {names.get(mode, mode)} boots"
                         for mode, (a, b) in self.boots.items())


def _values(units: dict[Unit, list[float]], first: frozenset[Unit],
            pair: Pair) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {pair.first: [], pair.second: []}
    for unit, found in sorted(units.items()):
        out[pair.first if unit in first else pair.second] += found
    return out


def _verdict_claim(case: Case, evidence_kind: str, cpus: int, unit: str, higher: bool,
                   units: dict[Unit, list[float]], others: dict[str, list[float]],
                   pair: Pair, procs: int = 0, spread: rerun.CaseSpread | None = None,
                   stalled: frozenset[Unit] = frozenset(),
                   stalled_others: frozenset[str] = frozenset()
                   ) -> Callable[[frozenset[Unit]], str]:
    """The claim of an evidence.Verdict of the case under a labelling: the same rule as
    the duel's entry (interval, rank test over every boot of the case; -icount's rerun
    floor and stalled boots), the second against the first."""
    fixed = {k: stats.summarize(v) for k, v in others.items() if v}

    def outcome(first: frozenset[Unit]) -> str:
        values = _values(units, first, pair)
        if not values[pair.first] or not values[pair.second]:
            return "unclaimed"
        summaries = {k: stats.summarize(v) for k, v in values.items()} | fixed
        stalled_now = stalled_others | {pair.first if u in first else pair.second
                                        for u in stalled}
        v = evidence.Verdict(case, evidence_kind, cpus, unit, higher, summaries, pair.first,
                             spread, values | {k: others[k] for k in fixed}, procs,
                             frozenset(stalled_now))
        found = v.outcome(pair.second, pair.first)
        return "claim" if found in ("better", "worse") else found
    return outcome


def _by_unit(rows: list[Row], keep: Callable[[Row], bool],
             pair: Pair) -> tuple[dict[Unit, list[float]], dict[str, list[float]]]:
    """The values of the rows kept: the pair's by boot, the other kernels' as lists."""
    units: dict[Unit, list[float]] = defaultdict(list)
    others: dict[str, list[float]] = defaultdict(list)
    for r in evidence._ok(rows):
        if keep(r):
            if r.kernel in pair.kernels:
                units[r.kernel, r.repetition].append(r.value)
            else:
                others[r.kernel].append(r.value)
    return dict(units), dict(others)


def tests(rows: list[Row], pair: Pair,
          spread: rerun.RerunSpread | None = None) -> list[Test]:
    """Every cost test between the pair that could make a claim as measured (two boots a
    side and, for -icount, what its rule needs), as duel.entries makes them."""
    mode = evidence.plain_mode(rows)
    grouped = evidence.by_case(rows)
    out: list[Test] = []
    for case, cpus, procs in evidence.timed_cells(rows, mode):
        mine = grouped[case]
        unit = next((r.unit for r in mine if r.metric == "throughput" and r.unit), "")

        def timed(r: Row, metric: tuple[str, ...]) -> bool:
            return (r.flavour == "perf" and r.mode == mode and r.metric in metric
                    and not r.lock and r.cpus == cpus and r.procs == procs
                    and evidence._in_case(r, case))
        for kind, metrics, higher, what in (
                ("timed", ("throughput",), True, unit),
                ("latency", evidence.LATENCY_METRICS["p99"], False, "ns")):
            units, others = _by_unit(mine, lambda r, m=metrics: timed(r, m), pair)
            out.append(Test(kind, case, cpus, procs, (mode, cpus), units,
                            _verdict_claim(case, "tcg", cpus, what, higher, units, others,
                                           pair, procs)))
    for case in evidence.cases(rows):
        mine = grouped[case]
        units, others = _by_unit(mine, lambda r: (
            r.flavour == "perf" and r.mode == "tcg-icount" and r.metric == "throughput"
            and not r.lock and r.cpus == 1 and r.procs == 1 and evidence._in_case(r, case)),
            pair)
        if units:
            unit = next((r.unit for r in mine if r.mode == "tcg-icount"
                         and r.metric == "throughput"), "")
            stalls = evidence.stalled_boots(mine, case)
            stalled = frozenset((s.kernel, s.repetition) for s in stalls
                                if s.kernel in pair.kernels)
            stalled_others = frozenset(s.kernel for s in stalls if s.kernel not in pair.kernels)
            out.append(Test("icount", case, 1, 1, ("tcg-icount", 1), units, _verdict_claim(
                case, "icount", 1, unit, True, units, others, pair, 0,
                spread.cases.get(case.label) if spread else None, stalled, stalled_others)))
    price_cpus = sorted({r.cpus for r in rows if r.metric.startswith(duel.PRICE_METRIC)})
    for cpus in price_cpus:
        for case in evidence.cases(rows):
            values = duel.price_per_boot(grouped[case], case, cpus)
            if not any(v for k in pair.kernels for v in values.get(k, [])):
                continue
            units = _price_units(grouped[case], case, cpus, pair)

            def price(first: frozenset[Unit], units=units) -> str:
                said = duel.price_claim(_values(units, first, pair), pair)
                return "claim" if said in pair.kernels else "unclaimed" if said == "?" \
                    else "even"
            out.append(Test("price", case, cpus, cpus, ("tcg-cs-rr", cpus), units, price))
    observed = [t for t in out if _testable(t, pair)]
    return observed


def _price_units(rows: list[Row], case: Case, cpus: int, pair: Pair) -> dict[Unit, list[float]]:
    """duel.price_per_boot's values of the pair, by boot."""
    per_boot: dict[Unit, float] = defaultdict(float)
    for r in evidence._ok(rows):
        if r.kernel in pair.kernels and r.cpus == cpus and evidence._in_case(r, case):
            if r.mode.startswith("tcg-cs"):
                per_boot.setdefault((r.kernel, r.repetition), 0.0)
            if r.metric.startswith(duel.PRICE_METRIC):
                per_boot[r.kernel, r.repetition] += r.value
    return {u: [v] for u, v in per_boot.items()}


def _testable(t: Test, pair: Pair) -> bool:
    """A test that could claim as measured: what makes an entry's "ahead" anything but
    "?" (two boots a side; for -icount a measured rerun spread and no stalled boot)."""
    return t.outcome(observed(t, pair)) != "unclaimed"


def observed(t: Test, pair: Pair) -> frozenset[Unit]:
    return frozenset(u for u in t.units if u[0] == pair.first)


@dataclass
class Permutation:
    """The labellings of every family of the pair's tests, and which tests claim in each."""
    pair: Pair
    tests: list[Test]
    # family -> the claims of each labelling, as a bit mask over the tests' indices
    masks: dict[tuple[str, int], list[int]]
    symmetric: dict[tuple[str, int], int]  # labellings that mirror the observed one
    sampled: dict[tuple[str, int], bool]
    boots: dict[tuple[str, int], tuple[int, int]]

    def chance(self, keep: Callable[[Test], bool] = lambda t: True) -> dict[int, Chance]:
        """Per vCPU count, the claims of the tests kept against the permutation."""
        out = {}
        for cpus in sorted({t.cpus for t in self.tests}):
            chosen = [i for i, t in enumerate(self.tests) if t.cpus == cpus and keep(t)]
            if not chosen:
                continue
            mask = sum(1 << i for i in chosen)
            families = sorted({self.tests[i].family for i in chosen})
            total: Counter[int] = Counter({0: 1})
            labellings, least, observed_claims = 1, 1.0, 0
            for f in families:
                counts = Counter(bin(m & mask).count("1") for m in self.masks[f])
                observed_claims += bin(self.masks[f][0] & mask).count("1")
                total = _convolve(total, counts)
                labellings *= len(self.masks[f])
                least *= self.symmetric[f] / len(self.masks[f])
            p = sum(n for c, n in total.items() if c >= observed_claims) / labellings \
                if observed_claims else 1.0
            out[cpus] = Chance(cpus, len(chosen), observed_claims, p, least, labellings,
                               any(self.sampled[f] for f in families),
                               {f[0]: self.boots[f] for f in families})
        return out


def _convolve(a: Counter[int], b: Counter[int]) -> Counter[int]:
    out: Counter[int] = Counter()
    for x, m in a.items():
        for y, n in b.items():
            out[x + y] += m * n
    return out


def permute(tests_: list[Test], pair: Pair) -> Permutation:
    """Decide every test under every labelling of its family's boots (the observed one
    first)."""
    by_family: dict[tuple[str, int], list[int]] = defaultdict(list)
    for i, t in enumerate(tests_):
        by_family[t.family].append(i)
    masks, symmetric, sampled, boots = {}, {}, {}, {}
    for family, indices in by_family.items():
        units = sorted({u for i in indices for u in tests_[i].units})
        firsts = frozenset(u for u in units if u[0] == pair.first)
        n = len(firsts)
        mirror = frozenset(u for u in units if u not in firsts)
        total = math.comb(len(units), n)
        if total <= MAX_LABELLINGS:
            picks = [firsts] + [frozenset(c) for c in itertools.combinations(units, n)
                                if frozenset(c) != firsts]
            sampled[family] = False
        else:
            rng = random.Random(SEED)
            picks = [firsts] + ([mirror] if len(mirror) == n else [])
            while len(picks) < MAX_LABELLINGS:
                picks.append(frozenset(rng.sample(units, n)))
            sampled[family] = True
        symmetric[family] = 2 if len(mirror) == n and mirror != firsts else 1
        boots[family] = (n, len(units) - n)
        masks[family] = [sum(1 << i for i in indices if tests_[i].decided(pick))
                          for pick in picks]
    return Permutation(pair, tests_, masks, symmetric, sampled, boots)


def analyse(rows: list[Row], pair: Pair,
            spread: rerun.RerunSpread | None = None) -> Permutation:
    return permute(tests(rows, pair, spread), pair)
