"""The report's opening: chinner against piggin, the answer in words, then the evidence.

Everything here is read from analysis/duel.py's entries (one per case and kind
of evidence) and the run's record (lockdep, sanitizers, soaks, cost in code);
every sentence of the answer is built from them. Measured evidence and the
model's prediction never share a table.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from harness.analysis import duel, evidence, retry_counters, stats
from harness.analysis.duel import FIRST, SECOND
from harness.report.blocks import (Block, Heading, Para, Table, apart_text, fmt, pct, pct_abs,
                                   plural, reach_text, times)

# What each kind of evidence is, in a few words, and whether it is a cost the user pays
# (decides) or a mechanism that explains one.
# Contention is counted on lockdep kernels, whose bookkeeping lengthens every critical
# section: it explains a cost, it is not one a user pays (design.md: waits are measured
# without lockdep).
COSTS = ("price", "icount", "timed", "paired", "latency")
MECHANISMS = ("shared", "per_inode", "cs", "retries", "contention", "inode_contention")
# Kinds decided by a statistical test, whose claims chance alone makes now and then.
TESTED = ("price", "icount", "timed", "paired", "latency", "contention", "inode_contention")
SHORT = {"shared": "shared-lock traffic", "per_inode": "per-inode (i_lock) traffic",
         "cs": "shared critical sections", "retries": "retries",
         "price": "failed-trylock instructions (tcg-cs)",
         "contention": "shared-lock contention (lockdep kernels)",
         "inode_contention": "i_lock contention (lockdep kernels)",
         "icount": "single-thread cost (-icount)",
         "paired": "timed, boot against boot (all cases)",
         "timed": "timed throughput (TCG)", "latency": "p99 latency (TCG)",
         "prediction": "PREDICTION at 64 CPUs"}


@dataclass(frozen=True)
class Context:
    """What the opening needs besides the entries."""
    entries: list[duel.Entry]
    cross: list[evidence.CrossCase]  # every ordered pair of kernels, over the timed cells
    cores: int
    noise: tuple[float, float] | None  # lowest and highest CoV of the timed cells
    record: list[list[str]]  # rows of the robustness record (duel_record_rows)
    # "workload" or "workload/phase" -> the design difference it works (the manifest's
    # "differences", from the workloads' difference keys); empty for older runs
    differences: dict[str, str] = field(default_factory=dict)
    # differences that workloads in reach declare and the run did not measure ->
    # those workloads (the manifest's "differences_not_measured")
    not_measured: dict[str, list[str]] = field(default_factory=dict)

    @property
    def flagged(self) -> list[evidence.CrossCase]:
        return [c for c in self.cross if c.flagged]

    def confounded(self, e: duel.Entry) -> bool:
        """A timed win of a design whose timings the cross-case check flags, unless the
        other design's boots lie apart from every other kernel's; a claim with a caveat
        of its own (a fixed boot order)."""
        if e.ahead in (FIRST, SECOND) and e.caveat:
            return True
        if e.kind not in ("timed", "latency") or e.ahead not in (FIRST, SECOND):
            return False
        suspect = {c.kernel for c in self.flagged if c.covers(e.cpus, e.case)}
        return e.ahead in suspect and not e.behind_alone()

    def claims(self, design: str, kinds: tuple[str, ...]) -> list[duel.Entry]:
        return [e for e in self.entries if e.kind in kinds and e.ahead == design
                and not self.confounded(e)]

    def difference(self, case: evidence.Case) -> str:
        return self.differences.get(f"{case.workload}/{case.phase}",
                                    self.differences.get(case.workload, ""))

    def by_difference(self) -> list[tuple[str, "Context"]]:
        """Each design difference the run's workloads declare, with its entries alone, in
        the order the entries first name it; the prediction and the all-case pairing,
        which belong to no one difference, are left out."""
        groups: dict[str, list[duel.Entry]] = {}
        for e in self.entries:
            name = self.difference(e.case)
            if name and not e.prediction and e.case != duel.ALL_CASES:
                groups.setdefault(name, []).append(e)
        return [(name, Context(found, self.cross, self.cores, self.noise, self.record,
                               self.differences, self.not_measured))
                for name, found in groups.items()]


def change_text(ratio: float | None, low: float | None = None,
                high: float | None = None) -> str:
    """piggin against chinner: "-28%" or "6.8x" (beyond a factor of two), with its interval."""
    if ratio is None or not math.isfinite(ratio):
        return "n/a"
    # Decided on the figures as written, so 2.00 -> 4.00 reads "2.0x" however the
    # division rounds.
    big = round(ratio, 3) >= 2 or round(ratio, 3) <= 0.5 \
        or (high is not None and round(high, 3) >= 2 and ratio > 1) \
        or (low is not None and 0 < round(low, 3) <= 0.5 and ratio < 1)

    def one(x: float, digits: int = 2) -> str:
        return times(x, digits) if big else pct(x - 1, digits)

    text = one(ratio)
    if low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
        a, b = one(low), one(high)
        # An interval that excludes no change must not read as reaching it ("to 1.0x").
        digits = 2
        while (low > 1 or high < 1) and one(1.0) in (a, b) and digits < 6:
            digits += 1
            a, b = one(low, digits), one(high, digits)
        text += f" ({a} to {b})" if a != b else ""
    return text


def figure_text(e: duel.Entry, kernel: str) -> str:
    if e.kind == "retries":
        found = e.counters.get(kernel, [])
        if not found:
            return "none" if kernel in e.counters else ""
        return "; ".join(f"{name} {fmt(value, 2)} "
                         f"({retry_counters.describe(name, kernel).kind})"
                         for name, value in found[:2]) + (
            f"; {len(found) - 2} more" if len(found) > 2 else "")
    s = e.figures.get(kernel)
    if s is None:
        return ""
    if e.kind == "latency":
        return f"{fmt(s.mean / 1e6, 2)} ms"
    spread = f" (CoV {fmt(s.cov * 100, 2)}%)" if e.kind in ("timed", "icount") and s.n > 1 \
        else ""
    return fmt(s.mean) + spread


def ahead_text(e: duel.Entry, ctx: Context) -> str:
    if e.kind == "retries":
        return "not compared (different kinds)"
    if e.ahead == "?":
        return f"no claim: {e.note}"
    fell_back = f"; fallback inputs: {e.fallbacks}" if e.fallbacks else ""
    if not e.ahead:
        if e.prediction:
            return (f"neither: not {apart_text(e.detectable)} apart on every target machine "
                    f"(band {span_text([e.low, e.high])}){fell_back}")
        if e.kind in ("contention", "inode_contention") and e.ratio is None:
            return "neither (no contention)"
        if e.note and not math.isfinite(e.detectable):
            return f"neither: {e.note}"
        reach = f"; could show {apart_text(e.detectable)} or more" \
            if math.isfinite(e.detectable) else ""
        return f"neither{reach}"
    text = f"**{e.ahead}** ({e.rule})"
    if e.rule == "rank test" and e.low is not None and e.high is not None \
            and e.low < 1 < e.high:
        text += "; its 95% interval includes no change"
    if e.caveat:
        text += f"; not counted: {e.caveat}"
    elif ctx.confounded(e):
        text += "; its timings are flagged by the cross-case check"
    elif e.kind in ("timed", "latency") and e.behind_alone():
        text += f"; every {e.behind} boot beyond every other kernel's"
    return ("predicted " + text + fell_back) if e.prediction else text


def span_text(ratios: list[float]) -> str:
    """The lowest and highest of several ratios, both in the same form."""
    if not ratios:
        return "none"
    low, high = min(ratios), max(ratios)
    if change_text(low) == change_text(high):
        return change_text(low)
    if high >= 2 or low <= 0.5:
        return f"{times(low)} to {times(high)}"
    return f"{pct(low - 1)} to {pct(high - 1)}"


def glance_measured(ctx: Context) -> Table:
    rows = []
    for t in duel.by_kind([e for e in ctx.entries if not e.prediction]):
        if t.kind == "retries":
            # Not "ahead": a retry is a cost of its design, and the two series count
            # different kinds. Below EXACT_FLOOR per op a retry is background (a stray
            # relock of the flusher), as in the exact counts.
            fired = {k: len([e for e in t.entries
                             if any(v >= evidence.EXACT_FLOOR for _, v in e.counters.get(k, []))])
                     for k in (FIRST, SECOND)}
            rows.append([SHORT[t.kind], "mechanism", str(len(t.entries)),
                         *[f"not compared; {fired[k]} cases retry at least "
                           f"{fmt(evidence.EXACT_FLOOR, 1)}/op" for k in (FIRST, SECOND)],
                         "", "", "", "the series count different kinds", "n/a"])
            continue
        first = [e for e in t.ahead(FIRST) if not ctx.confounded(e)]
        flagged = len(t.ahead(FIRST)) - len(first)
        apart = [e.ratio for e in t.ahead(FIRST) + t.ahead(SECOND)
                 if e.ratio is not None and math.isfinite(e.ratio)]
        rows.append([SHORT[t.kind], "cost" if t.kind in COSTS else "mechanism",
                     str(len(t.entries)),
                     str(len(first)) + (f" (+{flagged} flagged)" if flagged else ""),
                     str(len([e for e in t.ahead(SECOND) if not ctx.confounded(e)])),
                     str(len(t.level)), str(len(t.unclaimed)),
                     _by_chance(t),
                     span_text(apart), reach_text(t.detectable)])
    return Table(["evidence (measured)", "kind", "comparisons", f"{FIRST} ahead",
                  f"{SECOND} ahead", "neither", "no claim",
                  f"claims expected by chance ({stats.ALPHA} each)",
                  f"{SECOND} against {FIRST} where apart",
                  "smallest difference it could show (median)"], rows)


def _by_chance(t: duel.KindTally) -> str:
    """Claims expected by chance: ALPHA per test, and where the kind has a negative
    control (mainline against chinner, the same locks), the rate the control shows."""
    if t.kind not in TESTED:
        return "0 (counts)"
    text = fmt(len(t.entries) * stats.ALPHA, 2)
    rejected, controls = _control_rejections(t.entries)
    if controls:
        text += (f"; by the control ({duel.CONTROL} against {FIRST}, the same locks): "
                 f"{fmt(len(t.entries) * rejected / controls, 2)}, its test rejecting "
                 f"in {rejected} of {controls}")
    return text


def _control_rejections(found: list[duel.Entry]) -> tuple[int, int]:
    """How often the negative control's test rejected, of the entries that have one."""
    controls = [e.control_p for e in found if math.isfinite(e.control_p)]
    return sum(1 for p in controls if p < stats.ALPHA), len(controls)


def glance_predicted(ctx: Context) -> Table | None:
    found = [e for e in ctx.entries if e.prediction]
    if not found:
        return None
    t = duel.KindTally("prediction", found)
    return Table(["PREDICTION (model, not measured)", "cases", f"predicted {FIRST} ahead",
                  f"predicted {SECOND} ahead", "no prediction (the sweep's rule)",
                  "withheld (the model's held-out record falls short)",
                  f"{SECOND} against {FIRST} (lowest to highest)"],
                 [[KIND_LONG["prediction"], str(len(found)), str(len(t.ahead(FIRST))),
                   str(len(t.ahead(SECOND))), str(len(t.level)), str(len(t.unclaimed)),
                   span_text(t.ratios)]])


KIND_LONG = duel.KINDS


def workload_table(ctx: Context, kernels: list[str]) -> Table:
    """Every entry, workload by workload; timed cells that separate nothing are folded."""
    refs = [k for k in duel.REFERENCES if k in kernels]
    header = ["workload", "evidence", FIRST, SECOND,
              f"{SECOND} against {FIRST} (95% interval; a prediction: its band)",
              "ahead", *[f"{k} ({'reference' if k == 'mainline' else 'ancestor'})"
                         for k in refs]]
    rows = []
    for case in dict.fromkeys(e.case for e in ctx.entries):
        mine = [e for e in ctx.entries if e.case == case]
        quiet = [e for e in mine if e.kind in ("timed", "latency") and e.ahead == ""]
        for e in mine:
            if e in quiet:
                continue
            rows.append([case.label, (SHORT[e.kind] if e.prediction
                                      else f"{SHORT[e.kind]}, {e.detail}") + (
                f" ({e.unit})" if e.unit and e.kind not in ("retries", "latency") else ""),
                figure_text(e, FIRST), figure_text(e, SECOND),
                change_text(e.ratio, e.low, e.high) if e.kind != "retries" else "",
                ahead_text(e, ctx), *[figure_text(e, k) for k in refs]])
        if quiet:
            reach = [e.detectable for e in quiet if math.isfinite(e.detectable)]
            rows.append([case.label, f"timed throughput and p99 latency, "
                         f"{plural(len(quiet), 'comparison')}", "", "", "",
                         "neither" + (f"; could show {apart_text(min(reach))} or more at best"
                                      if reach else ""), *["" for _ in refs]])
    return Table(header, rows)


def cs_role_table(rows: list, kernels: list[str]) -> Table | None:
    """Critical-section length per shared role, case by case (tcg-cs)."""
    out = []
    order = [k for k in (FIRST, SECOND) + duel.REFERENCES if k in kernels]
    for case in evidence.cases(rows):
        lengths = evidence.cs_lengths(rows, case)
        for role in [r for r in ("global", "hash", "sb_list", "lru", "wb", "i_lock")
                     if any(key[1] == r for key in lengths)]:
            cells = [fmt(lengths[k, role].mean) if (k, role) in lengths else "" for k in order]
            first, second = lengths.get((FIRST, role)), lengths.get((SECOND, role))
            ratio = second.mean / first.mean if first and second and first.mean else None
            out.append([case.label, role, *cells, change_text(ratio)])
    if not out:
        return None
    return Table(["workload", "lock", *[f"{k} (instructions)" for k in order],
                  f"{SECOND} against {FIRST}"], out)


def set_aside_text(c: evidence.CrossCase) -> str:
    """Where a flag sets timed wins aside: at 1 vCPU, and above only in the cases
    where the two kernels take the same locks."""
    text = "at 1 vCPU"
    for cpus, compared, apart in c.locks:
        text += (f"; at {cpus} vCPUs " +
                 (f"in the {compared - apart} of {plural(compared, 'case')} where their "
                  f"lock counts are the same" if compared else
                  "in no case (no debug boot counted their locks)"))
    return text


def cross_case_block(ctx: Context) -> list[Block]:
    if not ctx.cross:
        return []
    rows = [[c.kernel, c.against, f"{c.wins} of {c.cells}", f"{c.p:.2g}",
             change_text(c.median_ratio),
             f"{c.pairs_won} of {len(c.pair_ratios)}, p = {c.p_pairs:.2g}"
             if c.pair_ratios else "no pairs",
             (f"apart in {c.icount_apart} of {c.icount_cases}; median difference "
              f"{pct_abs(c.icount_median)}") if c.icount_cases else "not measured",
             f"**flagged**, {set_aside_text(c)}" if c.flagged else ""]
            for c in ctx.cross if c.wins * 2 >= c.cells]
    text = ("Cross-case check: over every timed cell where two kernels both ran, how often "
            "one kernel's mean throughput was the higher (two-sided sign test). A kernel that "
            f"wins beyond chance (p < {stats.ALPHA}) while -icount puts the instructions of the "
            f"two at least {evidence.ICOUNT_SHARE} times closer than the timed lead is "
            "flagged: its timed lead does not come from the code it runs but from how this "
            "host runs it, so its timed wins are not counted for it above unless the other "
            "design's boots lie apart from every other kernel's. -icount runs one vCPU: on "
            "more, a lead could come from contention, which equal instructions do not rule "
            "out, so a flag sets aside wins at a higher vCPU count only in the cases where "
            "the debug boots counted the same lock acquisitions per operation for the two "
            f"kernels at that count (within {pct_abs(evidence.EXACT_TOLERANCE)} or "
            f"{fmt(evidence.EXACT_FLOOR, 1)}/op). Cells that come from one boot "
            "(the phases of one program, the worker counts of one boot) are not independent "
            "and a whole boot runs fast or slow under TCG, so beside the count over cells "
            "stands the test with the boot as the unit (analysis/rounds.py): each boot paired "
            "with the other kernel's boot of the same round, an exact sign-flip test over the "
            "pairs' mean log ratios. A pattern over cells that the pairs do not confirm is "
            "boot luck counted once per case.")
    return [Para(text), Table(["kernel", "against", "higher mean: cells", "sign test p",
                               "median change", "higher: boot pairs", "-icount", ""], rows)]


# One design is ahead "on balance" when its measured cost claims outnumber the other's
# by this factor; below it the answer says neither.
BALANCE = 3


def _claims_text(ctx: Context, design: str, kinds: tuple[str, ...]) -> str:
    """'i_lock contention 3 (2.3x-2.9x), per-inode (i_lock) traffic 2': what a design is
    ahead in, by kind, with piggin's change against chinner where the kind has ratios."""
    found = ctx.claims(design, kinds)
    parts = []
    for kind in dict.fromkeys(e.kind for e in found):
        mine = [e for e in found if e.kind == kind]
        ratios = [e.ratio for e in mine if e.ratio and math.isfinite(e.ratio)]
        parts.append(f"{SHORT[kind]} {len(mine)}" + (f" ({span_text(ratios)})" if ratios
                                                       else ""))
    return ", ".join(parts) or "none"


@dataclass(frozen=True)
class DifferenceVerdict:
    """One design difference: its cost claims, its tests, and whether they beat chance."""
    name: str
    sub: "Context"  # the difference's own entries
    claims: int  # cost comparisons with a design ahead
    tests: int  # cost comparisons made
    p: float  # chance of this many claims or more when nothing differs (ALPHA per test)
    decided: bool  # beyond chance after Holm's correction over the run's differences

    @property
    def text(self) -> str:
        counts = (f"{plural(self.claims, 'claim')} in {plural(self.tests, 'test')}, "
                  f"chance p = {self.p:.2g} before Holm's step-down over the differences")
        if self.decided:
            return f"{verdict(self.sub)} ({counts})"
        if self.claims:
            return f"not beyond chance ({counts})"
        if not self.tests:
            return "no cost measured (its cases have no timed or -icount boots)"
        return f"no difference this run could detect ({plural(self.tests, 'test')})"

    @property
    def short(self) -> tuple[str, str]:
        """For a slide: the verdict in a word or two, and 'claims/tests (p)'."""
        counts = f"{self.claims}/{self.tests} (p {self.p:.2g})"
        if not self.decided:
            return ("chance only" if self.claims else "none detected" if self.tests
                    else "not timed"), counts
        return verdict(self.sub).replace(" is ahead", ""), counts


def cost_tests(ctx: Context) -> int:
    """The cost comparisons that could have made a claim."""
    return len([e for e in ctx.entries if e.kind in COSTS and e.ahead != "?"])


def chance_p(claims: int, tests: int) -> float:
    """P(at least `claims` of `tests` independent tests claim at ALPHA when nothing differs)."""
    a = stats.ALPHA
    return sum(math.comb(tests, k) * a ** k * (1 - a) ** (tests - k)
               for k in range(claims, tests + 1)) if claims else 1.0


def difference_verdicts(ctx: Context) -> list[DifferenceVerdict]:
    """Each difference's cost claims against chance, Holm's step-down over the
    differences: a difference with one claim in a few tests decides nothing."""
    found = []
    for name, sub in ctx.by_difference():
        claims = len(sub.claims(FIRST, COSTS)) + len(sub.claims(SECOND, COSTS))
        tests = cost_tests(sub)
        found.append((name, sub, claims, tests, chance_p(claims, tests)))
    decided, m, failed = set(), len(found), False
    for i, (name, _, claims, _, p) in enumerate(sorted(found, key=lambda f: f[4])):
        failed = failed or not claims or p >= stats.ALPHA / (m - i)
        if not failed:
            decided.add(name)
    return [DifferenceVerdict(name, sub, claims, tests, p, name in decided)
            for name, sub, claims, tests, p in found]


def difference_table(ctx: Context) -> Table | None:
    """The answer per design difference: which design each one's evidence puts ahead."""
    verdicts = difference_verdicts(ctx)
    if not verdicts:
        return None
    rows = []
    for d in verdicts:
        cases = list(dict.fromkeys(e.case.label for e in d.sub.entries))
        level = [e for e in d.sub.entries if e.ahead == "" and e.kind != "retries"]
        unclaimed = [e for e in d.sub.entries if e.ahead == "?"]
        rows.append([d.name, ", ".join(cases), d.text, _claims_text(d.sub, FIRST, COSTS),
                     _claims_text(d.sub, SECOND, COSTS), _claims_text(d.sub, FIRST, MECHANISMS),
                     _claims_text(d.sub, SECOND, MECHANISMS),
                     f"{len(level)} / {len(unclaimed)}"])
    return Table(["design difference", "cases", "on its costs", f"costs: {FIRST} ahead",
                  f"costs: {SECOND} ahead", f"mechanisms: {FIRST} lower",
                  f"mechanisms: {SECOND} lower", "neither / no claim"], rows)


def difference_sentence(ctx: Context) -> str:
    """One clause per design difference, from difference_table's verdicts, and the
    differences the run did not measure."""
    verdicts = difference_verdicts(ctx)
    said = ("Per design difference (the workloads' own declarations), on costs: "
            + "; ".join(f"{d.name}: {d.text}" for d in verdicts) + ".") if verdicts else ""
    return " ".join(filter(None, [said, not_measured_sentence(ctx)]))


def not_measured_sentence(ctx: Context) -> str:
    """The differences no workload of the run measures, and which workloads would."""
    if not ctx.not_measured:
        return ""
    names = sorted({n.split("/")[0] for found in ctx.not_measured.values() for n in found})
    return ("Not measured in this run, so not answered: "
            + "; ".join(f"{text} ({', '.join(found)})"
                        for text, found in ctx.not_measured.items())
            + f" (WORKLOADS=default,{','.join(names)} adds them).")


def verdict(ctx: Context) -> str:
    """The answer in one phrase: which design the measured costs put ahead."""
    first, second = ctx.claims(FIRST, COSTS), ctx.claims(SECOND, COSTS)
    if (first or second) and chance_p(len(first) + len(second), cost_tests(ctx)) >= stats.ALPHA:
        return "neither design is ahead beyond chance"
    if first and not second:
        return f"{FIRST} is ahead"
    if second and not first:
        return f"{SECOND} is ahead"
    if len(first) >= BALANCE * len(second) and first:
        return f"{FIRST} is ahead on balance"
    if len(second) >= BALANCE * len(first) and second:
        return f"{SECOND} is ahead on balance"
    if first or second:
        return "neither design is ahead"
    return "the two designs cost the same within what this machine can measure"


def counted(found: list[duel.Entry]) -> str:
    """Claims by kind, and how many of them one workload case holds (one cause, counted
    once per vCPU count and per kind)."""
    kinds = dict.fromkeys(e.kind for e in found)
    text = ", ".join(f"{SHORT[k]} {len([e for e in found if e.kind == k])}" for k in kinds)
    cases: dict[evidence.Case, int] = {}
    for e in found:
        cases[e.case] = cases.get(e.case, 0) + 1
    busy = [(n, c) for c, n in cases.items() if n > 1]
    if busy:
        n, case = max(busy, key=lambda x: x[0])
        text += f"; {n} of them on {case.label}"
    return text


def answer(ctx: Context) -> list[str]:
    """The answer in words, from the entries: costs first, then mechanisms, then what
    this machine cannot decide."""
    first, second = ctx.claims(FIRST, COSTS), ctx.claims(SECOND, COSTS)
    lead = f"**On what this run measured, {verdict(ctx)}"
    if first or second:
        tests = cost_tests(ctx)
        lead += (f": {SECOND} costs more in {plural(len(first), 'comparison')}"
                 + (f" ({counted(first)})" if first else "")
                 + f", {FIRST} in {len(second)}" + (f" ({counted(second)})" if second else "")
                 + f", of {tests} cost tests (chance p = "
                 f"{chance_p(len(first) + len(second), tests):.2g})")
    paragraphs = [lead + ".** " + _power(ctx) + _largest(ctx) + _smallest(ctx),
                  difference_sentence(ctx)]
    paragraphs.append(_mechanisms(ctx))
    paragraphs.append(_cannot(ctx))
    return [p for p in paragraphs if p]


def _power(ctx: Context) -> str:
    """What the cost tests could have shown, per kind: a "neither" from tests that
    could only see a factor of two is no evidence of equal cost."""
    tested = [e for e in ctx.entries if e.kind in COSTS and e.ahead != "?"]
    parts = []
    for kind in dict.fromkeys(e.kind for e in tested):
        reach = sorted(e.detectable for e in tested if e.kind == kind
                       and math.isfinite(e.detectable))
        if reach:
            parts.append(f"{SHORT[kind]} {apart_text(reach[len(reach) // 2])} "
                         f"({plural(len(reach), 'test')})")
    return ("The smallest difference the cost tests could show, per kind (median): "
            + ", ".join(parts) + ". ") if parts else ""


def _smallest(ctx: Context) -> str:
    """How large the single-thread claims are: usually fractions of a percent."""
    found = [e for e in ctx.entries if e.kind == "icount" and e.ahead in (FIRST, SECOND)
             and e.ratio]
    if not found:
        return ""
    return (f" Single-thread cost (-icount) separates them in {plural(len(found), 'case')} "
            f"by {span_text([e.ratio for e in found if e.ratio])} ({SECOND} against {FIRST}).")


def _largest(ctx: Context) -> str:
    """The largest measured difference that is not confounded, and what fired there."""
    found = [e for e in ctx.entries if e.kind == "timed" and e.ahead in (FIRST, SECOND)
             and not ctx.confounded(e) and e.ratio]
    if not found:
        return ""
    e = max(found, key=lambda e: abs(math.log(e.ratio)))  # type: ignore[arg-type]
    text = (f"The largest: {e.case.label} at {e.detail}, {SECOND}'s throughput "
            f"{change_text(e.ratio)} of {FIRST}'s (95% interval "
            f"{change_text(e.low)} to {change_text(e.high)}"
            + (f"; separated by the {e.rule})" if e.rule != "interval" else ")"))
    if e.behind_alone():
        text += f", every {e.behind} boot below every boot of the other kernels"
    latency = [x for x in ctx.entries if x.kind == "latency" and x.case == e.case
               and x.detail == e.detail and x.ratio]
    if latency:
        text += f"; its p99 latency {change_text(latency[0].ratio)}"
    fired = [x for x in ctx.entries if x.kind == "retries" and x.case == e.case]
    counters = [(n, v) for x in fired for n, v in x.counters.get(e.behind, [])]
    only_here = [n for n, _ in counters if not any(
        n in [c for c, _ in x.counters.get(e.behind, [])] for x in ctx.entries
        if x.kind == "retries" and x.case != e.case)]
    if only_here:
        c = retry_counters.describe(only_here[0], e.behind)
        text += (f". {e.behind}'s counter {c.name} fires in this case and in no other: "
                 f"{c.what}")
    return text + "."


def _mechanisms(ctx: Context) -> str:
    parts = []
    for kind in MECHANISMS:
        found = [e for e in ctx.entries if e.kind == kind]
        if not found:
            continue
        if kind == "retries":
            parts.append(_retries_phrase(found))
            continue
        a, b = [e for e in found if e.ahead == FIRST], [e for e in found if e.ahead == SECOND]
        level = [e for e in found if e.ahead == ""]
        open_ = [e for e in found if e.ahead == "?"]
        unclaimed = ""
        if open_:
            ratios = [e.ratio for e in open_ if e.ratio and math.isfinite(e.ratio)]
            unclaimed = (f", no claim in {len(open_)}"
                         + (f" ({SECOND} {span_text(ratios)})" if ratios else ""))
        if not a and not b:
            parts.append(f"{SHORT[kind]}: the same in {len(level)}{unclaimed} of "
                         f"{plural(len(found), 'comparison')}")
            continue
        ratios = [e.ratio for e in a + b if e.ratio]
        parts.append(f"{SHORT[kind]}: {FIRST} lower in {len(a)}, {SECOND} lower in {len(b)} "
                     f"({SECOND} {span_text(ratios)}), the same in {len(level)}{unclaimed} of "
                     f"{plural(len(found), 'comparison')}" + _control_caveat(found))
    if not parts:
        return ""
    return "What differs: " + "; ".join(parts) + "."


def _control_caveat(found: list[duel.Entry]) -> str:
    """Where the kind's negative control rejects more often than ALPHA, its claims are
    weaker than their p says."""
    rejected, controls = _control_rejections(found)
    if not controls or rejected <= stats.ALPHA * controls:
        return ""
    return (f" (but its test puts {duel.CONTROL} and {FIRST}, which take the same locks, "
            f"apart in {rejected} of {controls}: these claims are weak)")


def _retries_phrase(found: list[duel.Entry]) -> str:
    """Which counters fired, per design, with their kind and in how many cases."""
    phrases = []
    for design in (FIRST, SECOND):
        cases: dict[str, set] = {}
        for e in found:
            for name, per_op in e.counters.get(design, []):
                # A stray relock of the flusher's in a workload without writeback is
                # background, as in the exact counts.
                if per_op >= evidence.EXACT_FLOOR:
                    cases.setdefault(name, set()).add(e.case)
        phrases.append(f"{design}'s " + (", ".join(
            f"{name} ({retry_counters.describe(name, design).kind}) in "
            f"{plural(len(c), 'case')}" for name, c in sorted(cases.items())) or "none fired"))
    return (f"retries of at least {fmt(evidence.EXACT_FLOOR, 1)} per op: " + "; ".join(phrases)
            + " (different kinds: never compared)")


def _cannot(ctx: Context) -> str:
    parts = [f"how either design scales beyond {ctx.cores} CPUs (this host has "
             f"{ctx.cores} cores and runs guests under TCG)"]
    predicted = [e for e in ctx.entries if e.prediction]
    if predicted:
        t = duel.KindTally("prediction", predicted)
        parts[-1] += (f"; the queueing model's verdicts at {duel.PREDICTION_CPUS} CPUs are "
                      f"withheld in {len(t.unclaimed)} of {plural(len(predicted), 'case')} "
                      "(its held-out record falls short of what verdicts need), and its "
                      f"sweep's rule gives one in {len(t.ahead(FIRST)) + len(t.ahead(SECOND))}")
    timed = [e for e in ctx.entries if e.kind == "timed" and math.isfinite(e.detectable)]
    if timed:
        reach = sorted(e.detectable for e in timed)
        parts.append(f"timed differences below what the boots of one case can separate "
                     f"here: {apart_text(reach[0])} at best, "
                     f"{apart_text(reach[len(reach) // 2])} typically (median), "
                     f"{apart_text(reach[-1])} at worst"
                     + (f" (boots of one kernel vary by {pct_abs(ctx.noise[0])} to "
                        f"{pct_abs(ctx.noise[1])}, CoV)" if ctx.noise else ""))
    for c in ctx.flagged:
        parts.append(f"whether {c.kernel}'s timed lead over {c.against} is its own: it is "
                     f"higher in {c.wins} of {c.cells} cells (sign test p = {c.p:.2g}, median "
                     f"{change_text(c.median_ratio)}) but in {c.pairs_won} of "
                     f"{len(c.pair_ratios)} boot pairs (p = {c.p_pairs:.2g}), while -icount "
                     f"puts their instructions {pct_abs(c.icount_median)} apart (median); "
                     f"its timed wins set aside {set_aside_text(c)}")
    for e in [e for e in ctx.entries if e.caveat and e.ahead in (FIRST, SECOND)]:
        parts.append(f"whether {e.behind}'s lag {SHORT[e.kind]} ({change_text(e.ratio)}, "
                     f"{e.rule}) is its design's: {e.caveat}")
    unclaimed = [e for e in ctx.entries if e.kind == "icount" and e.ahead == "?"]
    unmeasured = [e for e in unclaimed if "never measured" in e.note]
    stalled = [e for e in unclaimed if "stalled" in e.note]
    if unmeasured:
        parts.append(f"single-thread cost in {plural(len(unmeasured), 'case')} whose -icount "
                     "rerun spread was never measured ("
                     + ", ".join(e.case.label for e in unmeasured) + ")")
    if stalled:
        parts.append(f"single-thread cost in {plural(len(stalled), 'case')} where a boot "
                     "stalled on its own and wants a rerun ("
                     + ", ".join(e.case.label for e in stalled) + ")")
    absent = [k for k in duel.MEASURED if not any(e.kind == k for e in ctx.entries)]
    if absent:
        parts.append("what this run did not measure: "
                     + ", ".join(f"{SHORT[k]} ({duel.KINDS[k]})" for k in absent))
    return "What this machine cannot decide: " + "; ".join(parts) + "."


def blocks(ctx: Context, rows: list, kernels: list[str]) -> list[Block]:
    out: list[Block] = [Heading(2, f"The answer: {FIRST} against {SECOND}")]
    out += [Para(p) for p in answer(ctx)]
    out.append(Para(
        f"At a glance: per kind of evidence, in how many comparisons (workload cases, and "
        f"vCPU counts where timed) each design is ahead. *Cost*: what a user pays (time, "
        f"instructions); *mechanism*: what explains a cost (lock traffic, critical "
        f"sections, retries, contention on the lockdep kernels). Rules: exact counts "
        f"differ beyond {pct_abs(evidence.EXACT_TOLERANCE)} and "
        f"{fmt(evidence.EXACT_FLOOR, 1)} acquisitions/op (EXACT_TOLERANCE, EXACT_FLOOR: "
        f"kernel threads add that much to a window); timed figures by the "
        f"{stats.INTERVAL_METHOD}, or by an {stats.RANK_METHOD} (p < {stats.ALPHA}) when every "
        f"boot of one design lies beyond every boot of the other; -icount also beyond its "
        f"measured rerun spread; contention by an exact test of the two counts. With "
        f"{stats.ALPHA} per test, about one comparison in {round(1 / stats.ALPHA)} is "
        f"claimed by chance alone. Changes are {SECOND}'s against {FIRST}'s, written as a "
        f"percentage below a factor of two and as a factor (x) from there on; so is the "
        f"smallest difference a comparison could show."))
    table = difference_table(ctx)
    if table:
        out.append(Para(
            f"Per design difference: the comparisons of the workload cases that declare it "
            f"(their difference keys). A difference's verdict rests on its costs alone "
            f"(timed, latency, -icount, failed-trylock instructions), and only when its claims "
            f"are beyond chance: the chance p is that of so many claims or more among its "
            f"tests when nothing differs ({stats.ALPHA} per test), held to Holm's step-down "
            f"over the run's differences. Mechanisms (lock traffic, critical sections, "
            f"contention on the lockdep kernels) explain a cost and decide nothing; the "
            f"columns count the comparisons of each kind with {SECOND}'s change against "
            f"{FIRST}'s where apart."))
        out.append(table)
    out.append(glance_measured(ctx))
    predicted = glance_predicted(ctx)
    if predicted:
        out.append(predicted)
    out += cross_case_block(ctx)
    if ctx.record:
        out.append(Para("The record of each design beyond the timed cases:"))
        out.append(Table(["record", FIRST, SECOND], ctx.record))
    out.append(Heading(3, f"{FIRST} against {SECOND}, workload by workload"))
    out.append(Para(
        f"Each figure is the mean over boots (CoV beside timed ones); the change is "
        f"{SECOND}'s against {FIRST}'s with its 95% interval; *ahead* names the design the "
        f"evidence puts ahead and the rule that decided, or says what difference it could "
        f"have shown. mainline (6.1, already {FIRST}'s lock order) is a reference, base "
        f"(one global inode_cache_lock) the ancestor of both."))
    out.append(workload_table(ctx, kernels))
    roles = cs_role_table(rows, kernels)
    if roles:
        out.append(Heading(3, "Critical sections by lock (tcg-cs)"))
        out.append(Para(
            "Guest instructions from a spinlock's acquiring instruction to its release, per "
            "acquisition, perf kernels at 1 vCPU under -icount, mean over the tcg-cs boots "
            "(interrupts that land inside a section counted apart). Unlike lock_stat's hold "
            "times, lockdep's bookkeeping is not in them."))
        out.append(roles)
    return out
