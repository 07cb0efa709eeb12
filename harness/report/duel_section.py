"""The report's opening: a pair of designs, the answer in words, then the evidence.

Two pairs answer two questions (analysis/verdicts.py, PAIRS): the isolated
pair (chinner against piggin, the same structures) and the historical pair
(chinner-2.6.39 against piggin-2010). Everything here is read from
analysis/duel.py's entries of a pair (one per case and kind of evidence),
analysis/boot_perm.py's permutation over boots (the chance of a count of
cost claims, per vCPU count) and the run's record (lockdep, sanitizers,
soaks, cost in code); every sentence of the answer is built from them. The
reach of each kind of test is said before any verdict; verdicts are per vCPU
count, never pooled; measured evidence and the model's prediction never
share a table.
"""

from __future__ import annotations

import math
import re
import statistics
import time
from dataclasses import dataclass, field

from harness.analysis import boot_perm, duel, evidence, retry_counters, stats
from harness.layout import slug
from harness.report import charts
from harness.report.blocks import (Block, ChartBlock, Heading, Para, Table, apart_text, fmt,
                                   pct, pct_abs, plural, reach_text, times)

# What each kind of evidence is, in a few words, and whether it is a cost the user pays
# (decides) or a mechanism that explains one.
# Contention is counted on lockdep kernels, whose bookkeeping lengthens every critical
# section: it explains a cost, it is not one a user pays (design.md: waits are measured
# without lockdep).
COSTS = ("price", "icount", "timed", "paired", "latency")
MECHANISMS = ("shared", "per_inode", "cs", "retries", "contention", "inode_contention")
# Kinds decided by a statistical test, whose claims chance alone makes now and then.
TESTED = ("price", "icount", "timed", "paired", "latency", "contention", "inode_contention")
# Cost kinds whose claims are counted against chance (the permutation over boots); the
# boot-paired test is that permutation's own kind, shown beside it.
COUNTED = boot_perm.COUNTED
# Short names of the cost kinds for the reach (the first screen).
REACH = {"timed": "throughput", "latency": "p99", "icount": "-icount",
         "price": "failed-trylock instructions"}
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
    pair: duel.Pair = duel.ISOLATED
    # the pair's cost tests under every labelling of their boots (None: not computed)
    perm: boot_perm.Permutation | None = None
    flip: duel.SignFlip | None = None
    # When the pair's timed boots were planned (timed_sessions): rounds of one session
    # share its luck, which no interval over them includes
    sessions: list[Session] = field(default_factory=list)

    @property
    def first(self) -> str:
        return self.pair.first

    @property
    def second(self) -> str:
        return self.pair.second

    @property
    def flagged(self) -> list[evidence.CrossCase]:
        return [c for c in self.cross if c.flagged]

    def confounded(self, e: duel.Entry) -> bool:
        """A timed win of a design whose timings the cross-case check flags, unless the
        other design's boots lie apart from every other kernel's; a claim with a caveat
        of its own (a fixed boot order)."""
        if e.ahead in self.pair.kernels and e.caveat:
            return True
        if e.kind not in ("timed", "latency") or e.ahead not in self.pair.kernels:
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
                               self.differences, self.not_measured, self.pair, self.perm,
                               self.flip, self.sessions))
                for name, found in groups.items()]

    def cost_chance(self, keep=lambda t: True) -> dict[int, boot_perm.Chance]:
        """Per vCPU count: the cost claims of the tests kept against the permutation."""
        return self.perm.chance(keep) if self.perm else {}

    def case_chance(self) -> dict[int, boot_perm.Chance]:
        """The permutation restricted to this context's cases (a design difference's)."""
        cases = {e.case for e in self.entries}
        return self.cost_chance(lambda t: t.case in cases)


def change_text(ratio: float | None, low: float | None = None,
                high: float | None = None) -> str:
    """The second against the first: "-28%" or "6.8x" (beyond a factor of two), with its
    interval."""
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


def control_text(e: duel.Entry) -> str:
    """A contention entry's negative control: how often the same test put two kernels
    that take the same locks apart, over the kind's cases."""
    if e.kind not in duel.CONTENTION_KINDS or e.control is None:
        return ""
    rejected, tests = e.control
    if not tests:
        return "no negative control in this run"
    held = "holds" if duel.control_holds(rejected, tests) else "fails"
    control, model = duel.CONTENTION_CONTROLS[e.kind]
    return (f"control ({control} against {model}, the same locks) rejects in {rejected} of "
            f"{tests}: it {held}")


def ahead_text(e: duel.Entry, ctx: Context) -> str:
    if e.kind == "retries":
        return "not compared (different kinds)"
    control = control_text(e)
    if control:
        control = f" [{control}]"
    if e.ahead == "?" and e.shown:
        return f"shown, not counted: the test puts **{e.shown}** ahead; {e.note}{control}"
    if e.ahead == "?":
        return f"no claim: {e.note}{control}"
    fell_back = f"; fallback inputs: {e.fallbacks}" if e.fallbacks else ""
    if not e.ahead:
        if e.prediction:
            return (f"neither: not {apart_text(e.detectable)} apart on every target machine "
                    f"(band {span_text([e.low, e.high])}){fell_back}")
        if e.kind in ("contention", "inode_contention") and e.ratio is None:
            return f"neither (no contention){control}"
        if e.note and not math.isfinite(e.detectable):
            return f"neither: {e.note}{control}"
        reach = f"; could show {apart_text(e.detectable)} or more" \
            if math.isfinite(e.detectable) else ""
        return f"neither{reach}{control}"
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
    return ("predicted " + text + fell_back) if e.prediction else text + control


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


def _kind_label(kind: str, cpus: int) -> str:
    """A kind of evidence, with its vCPU count where a cost is judged per count."""
    if kind in COUNTED + ("paired",) and cpus:
        return f"{SHORT[kind]}, {cpus} vCPU" + ("s" if cpus > 1 else "")
    return SHORT[kind]


def tallies(ctx: Context) -> list[tuple[duel.KindTally, int]]:
    """The measured entries by kind, the cost kinds apart per vCPU count (never pooled)."""
    out = []
    for t in duel.by_kind([e for e in ctx.entries if not e.prediction]):
        if t.kind in COUNTED + ("paired",):
            for cpus in sorted({e.cpus for e in t.entries}):
                out.append((duel.KindTally(t.kind, [e for e in t.entries if e.cpus == cpus]),
                            cpus))
        else:
            out.append((t, 0))
    return out


def glance_measured(ctx: Context) -> Table:
    first, second = ctx.pair.kernels
    rows = []
    for t, cpus in tallies(ctx):
        if t.kind == "retries":
            # Not "ahead": a retry is a cost of its design, and the two series count
            # different kinds. Below EXACT_FLOOR per op a retry is background (a stray
            # relock of the flusher), as in the exact counts.
            fired = {k: len([e for e in t.entries
                             if any(v >= evidence.EXACT_FLOOR for _, v in e.counters.get(k, []))])
                     for k in (first, second)}
            rows.append([SHORT[t.kind], "mechanism", str(len(t.entries)), "n/a",
                         *[f"not compared; {fired[k]} cases retry at least "
                           f"{fmt(evidence.EXACT_FLOOR, 1)}/op" for k in (first, second)],
                         "", "", "", "the series count different kinds"])
            continue
        mine = [e for e in t.ahead(first) if not ctx.confounded(e)]
        flagged = len(t.ahead(first)) - len(mine)
        apart = [e.ratio for e in t.ahead(first) + t.ahead(second)
                 if e.ratio is not None and math.isfinite(e.ratio)]
        shown = [e for e in t.unclaimed if e.shown]
        rows.append([_kind_label(t.kind, cpus), "cost" if t.kind in COSTS else "mechanism",
                     str(len(t.entries)), reach_text(t.detectable),
                     str(len(mine)) + (f" (+{flagged} flagged)" if flagged else ""),
                     str(len([e for e in t.ahead(second) if not ctx.confounded(e)])),
                     str(len(t.level)),
                     str(len(t.unclaimed)) + (f" ({len(shown)} shown, not counted)"
                                              if shown else ""),
                     span_text(apart), _by_chance(ctx, t, cpus)])
    return Table(["evidence (measured)", "kind", "comparisons",
                  "smallest difference it could show (median)", f"{first} ahead",
                  f"{second} ahead", "neither", "no claim", f"{second} against {first} where apart",
                  "chance"], rows)


def _by_chance(ctx: Context, t: duel.KindTally, cpus: int) -> str:
    """What chance alone gives: for the cost kinds, the permutation over boots (the share
    of labellings of the boots with as many claims); for contention, how often its
    negative control (two kernels that take the same locks) rejects; counts are
    exact."""
    if t.kind in COUNTED:
        found = ctx.cost_chance(lambda test: test.kind == t.kind).get(cpus)
        return chance_text(found) if found else "no test (one boot on a side)"
    if t.kind == "paired":
        return "its own permutation (sign flips of the boot pairs)"
    if t.kind in duel.CONTENTION_KINDS:
        controls = [e.control for e in t.entries if e.control]
        return control_text(t.entries[0]) if controls else "no negative control"
    if t.kind not in TESTED:
        return "none (counts)"
    return ""


def chance_text(c: boot_perm.Chance, boots: bool = True) -> str:
    """'1 claim in 53 tests, permutation p = 0.8 (3 + 3 timed boots, 2 + 2 -icount boots;
    it cannot go below 0.033)'; without `boots`, '1 claim in 53 tests, p = 0.8'."""
    if not boots:
        return f"{plural(c.claims, 'claim')} in {plural(c.tests, 'test')}, p = {c.p:.2g}"
    return (f"{plural(c.claims, 'claim')} in {plural(c.tests, 'test')}, permutation p = "
            f"{c.p:.2g} ({c.boots_text}; it cannot go below {c.least_p:.2g})")


def _control_rejections(found: list[duel.Entry]) -> tuple[int, int]:
    """How often the negative control's test rejected, of the entries that have one."""
    controls = [e.control_p for e in found if math.isfinite(e.control_p)]
    return sum(1 for p in controls if p < stats.ALPHA), len(controls)


def glance_predicted(ctx: Context) -> Table | None:
    first, second = ctx.pair.kernels
    found = [e for e in ctx.entries if e.prediction]
    if not found:
        return None
    t = duel.KindTally("prediction", found)
    return Table(["PREDICTION (model, not measured)", "cases", f"predicted {first} ahead",
                  f"predicted {second} ahead", "no prediction (the sweep's rule)",
                  "withheld (the model's held-out record falls short)",
                  f"{second} against {first} (lowest to highest)"],
                 [[KIND_LONG["prediction"], str(len(found)), str(len(t.ahead(first))),
                   str(len(t.ahead(second))), str(len(t.level)), str(len(t.unclaimed)),
                   span_text(t.ratios)]])


KIND_LONG = duel.KINDS


def workload_table(ctx: Context, kernels: list[str]) -> Table:
    """Every entry, workload by workload; timed cells that separate nothing are folded."""
    first, second = ctx.pair.kernels
    refs = [k for k in duel.REFERENCES if k in kernels]
    header = ["workload", "evidence", first, second,
              f"{second} against {first} (95% interval; a prediction: its band)",
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
                figure_text(e, first), figure_text(e, second),
                change_text(e.ratio, e.low, e.high) if e.kind != "retries" else "",
                ahead_text(e, ctx), *[figure_text(e, k) for k in refs]])
        if quiet:
            reach = [e.detectable for e in quiet if math.isfinite(e.detectable)]
            rows.append([case.label, f"timed throughput and p99 latency, "
                         f"{plural(len(quiet), 'comparison')}", "", "", "",
                         "neither" + (f"; could show {apart_text(min(reach))} or more at best"
                                      if reach else ""), *["" for _ in refs]])
    return Table(header, rows)


ROLE_ORDER = ("global", "hash", "sb_list", "lru", "wb", "i_lock")


def cs_role_table(rows: list, kernels: list[str], pair: duel.Pair = duel.ISOLATED
                  ) -> Table | None:
    """Critical-section length per shared role, case by case (tcg-cs)."""
    out = []
    order = [k for k in pair.kernels + duel.REFERENCES if k in kernels]
    for case in evidence.cases(rows):
        lengths = evidence.cs_lengths(rows, case)
        for role in [r for r in ROLE_ORDER if any(key[1] == r for key in lengths)]:
            cells = [fmt(lengths[k, role].mean) if (k, role) in lengths else "" for k in order]
            first, second = lengths.get((pair.first, role)), lengths.get((pair.second, role))
            ratio = second.mean / first.mean if first and second and first.mean else None
            out.append([case.label, role, *cells, change_text(ratio)])
    if not out:
        return None
    return Table(["workload", "lock", *[f"{k} (instructions)" for k in order],
                  f"{pair.second} against {pair.first}"], out)


def percentile_text(values: list[float]) -> str:
    """One boot's percentile, or the range over boots when they differ."""
    low, high = min(values), max(values)
    return f"{low:,.0f}" if low == high else f"{low:,.0f}-{high:,.0f}"


def percentiles_text(found: dict[str, list[float]]) -> str:
    """"28 / 80 / 112": p50 / p90 / p99."""
    return " / ".join(percentile_text(found[f"p{q}"]) for q in evidence.CS_PERCENTILES
                      if f"p{q}" in found)


def cs_percentile_table(rows: list, kernels: list[str], pair: duel.Pair = duel.ISOLATED,
                        wait: bool = False) -> Table | None:
    """p50 / p90 / p99 per shared role, case by case: of the sections' own lengths
    (tcg-cs), or with wait of the waits the round-robin boots saw (tcg-cs-rr), with
    their count before them."""
    order = [k for k in pair.kernels + duel.REFERENCES if k in kernels]
    measured = {r.kernel for r in rows if r.mode == ("tcg-cs-rr" if wait else "tcg-cs")
                and r.metric == "cs_instructions_p50"}
    out = []
    for case in evidence.cases(rows):
        found = evidence.cs_percentiles(rows, case, wait)
        for role in [r for r in ROLE_ORDER if any(key[1] == r for key in found)]:
            cells = []
            for k in order:
                if (k, role) in found:
                    waits = found[k, role].get("waits", [])
                    count = f"{percentile_text(waits)}: " if wait else ""
                    cells.append(count + percentiles_text(found[k, role]))
                else:
                    cells.append("0" if wait and k in measured else "")
            out.append([case.label, role, *cells])
    if not out:
        return None
    what = "waits: p50 / p90 / p99" if wait else "p50 / p90 / p99"
    return Table(["workload", "lock", *[f"{k} ({what})" for k in order]], out)


def cs_percentile_blocks(rows: list, kernels: list[str], pair: duel.Pair) -> list[Block]:
    """The distributions of critical sections and of spin_lock waits, where the run's
    tcg-cs boots measured them (the plugin's histograms, output version 3)."""
    holds = cs_percentile_table(rows, kernels, pair)
    if holds is None:
        return [Para("Percentiles of these lengths: not measured in this run (its tcg-cs "
                     "boots ran the plugin before its histograms).")]
    boots = sorted({len({r.repetition for r in rows if r.kernel == k and r.mode == "tcg-cs"
                              and r.metric == "cs_instructions_p50"}) for k in kernels} - {0})
    each = "-".join(str(n) for n in (boots[0], boots[-1]) if boots) if len(set(boots)) > 1 \
        else str(boots[0]) if boots else "no"
    out: list[Block] = [Para(
        "Their distribution: p50 / p90 / p99 of the same own lengths over every section of "
        "the role in the phase, guest instructions under TCG at 1 vCPU (-icount), "
        f"{each} tcg-cs boot{'' if each == '1' else 's'} a kernel (a range where boots "
        "differ). Each is the smallest value of the plugin's "
        "histogram bucket holding it: buckets are 1/8 of a power of 2 wide, so the true "
        "percentile lies below 9/8 of the value shown (exact below 16)."), holds]
    cpus = sorted({r.cpus for r in rows if r.mode == "tcg-cs-rr"})
    waits = cs_percentile_table(rows, kernels, pair, wait=True)
    if not cpus:
        return out
    vcpus = " and ".join(str(c) for c in cpus)
    text = (f"Waits, from the tcg-cs-rr boots ({vcpus} vCPUs round robin on one host thread, "
            "buckets as above): a spin_lock that went to the queued slow path waited for the "
            "rest of its holder's section, counted in the holder's own instructions from the "
            "failed cmpxchg to the release (with more than 2 vCPUs a waiter queued behind "
            "another also waits for that one's section, which is not counted). Under round "
            "robin a vCPU waits only when QEMU "
            "switched the holder out inside its section, so waits are few and tell how much "
            "of a section is left where a waiter arrives, not how often or how long vCPUs "
            "wait on hardware; the bit locks of the series' hash buckets are not seen "
            "waiting, and waits whose holder the plugin did not see are left out "
            "(cs_note.wait_unseen).")
    if waits is None:
        return out + [Para(text + " No spin_lock of an icache role waited in these boots.")]
    return out + [Para(text + " Each cell: the waits, then p50 / p90 / p99."), waits]


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
# Timed kinds: the whole-session drift moves them; -icount and tcg-cs counts are not timed.
SESSION_BOUND = ("timed", "latency")


def _claims_text(ctx: Context, design: str, kinds: tuple[str, ...]) -> str:
    """'i_lock contention 3 (2.3x-2.9x), per-inode (i_lock) traffic 2': what a design is
    ahead in, by kind, with the second's change against the first where the kind has
    ratios."""
    found = ctx.claims(design, kinds)
    parts = []
    for kind in dict.fromkeys(e.kind for e in found):
        mine = [e for e in found if e.kind == kind]
        ratios = [e.ratio for e in mine if e.ratio and math.isfinite(e.ratio)]
        parts.append(f"{SHORT[kind]} {len(mine)}" + (f" ({span_text(ratios)})" if ratios
                                                       else ""))
    return ", ".join(parts) or "none"


def holm(ps: list[float]) -> list[bool]:
    """Holm's step-down at ALPHA: which of the p values are rejected."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out, failed = [False] * len(ps), False
    for rank, i in enumerate(order):
        failed = failed or ps[i] >= stats.ALPHA / (len(ps) - rank)
        out[i] = not failed
    return out


@dataclass(frozen=True)
class CountVerdict:
    """The answer of a pair (or a design difference's cases) at one vCPU count, on its
    counted costs: the claims of each design (flagged ones set aside) against the
    permutation over boots, Holm's step-down over the counts (or differences) judged."""
    pair: duel.Pair
    cpus: int
    chance: boot_perm.Chance
    first: list[duel.Entry]  # the first design's cost claims that count
    second: list[duel.Entry]
    decided: bool
    reach: dict[str, float]  # kind -> median smallest difference its tests could show
    sessions: int  # sessions the pair's timed boots at this count come from (timed_sessions)

    @property
    def where(self) -> str:
        return f"{self.cpus} vCPU" + ("s" if self.cpus > 1 else "")

    @property
    def text(self) -> str:
        """The answer in a phrase: 'neither ahead beyond chance', 'chinner ahead', ..."""
        a, b = self.first, self.second
        if not self.chance.claims:
            return "no difference detected"
        if not self.decided:
            return "neither ahead beyond chance"
        if a and (not b or len(a) >= BALANCE * len(b)):
            ahead, claims = self.pair.first, a
        elif b and (not a or len(b) >= BALANCE * len(a)):
            ahead, claims = self.pair.second, b
        else:
            return "claims beyond chance for both: neither ahead"
        # A whole session can run one kernel fast (README, "Noise between runs"): a lead
        # that rests on timed claims stands only when the timed boots span two sessions.
        if self.sessions < 2 and any(e.kind in SESSION_BOUND for e in claims):
            if not self.sessions:
                return f"{ahead} ahead, not shown replicated: the timed sessions are unknown"
            return f"{ahead} ahead in one session only: not replicated"
        return f"{ahead} ahead" + (" on balance" if a and b else "")

    @property
    def short(self) -> str:
        """For a slide's cell: 'neither', 'chinner ahead', 'none detected'."""
        t = self.text
        if t.startswith("no difference"):
            return "none detected"
        if t.startswith("neither") or t.startswith("claims"):
            return "neither"
        if t.endswith("not replicated") or "not shown replicated" in t:
            return "not replicated"
        return t

    @property
    def counts(self) -> str:
        """'1 claim in 53 tests, p = 0.8'."""
        return (f"{self.chance.claims} of {self.chance.tests} "
                f"(p {self.chance.p:.2g}, least {self.chance.least_p:.2g})")


def reach_by_kind(ctx: Context, cpus: int) -> dict[str, float]:
    """Per counted cost kind at a vCPU count: the median smallest difference its tests
    could have shown (those that could claim at all)."""
    out = {}
    for kind in COUNTED:
        found = sorted(e.detectable for e in ctx.entries if e.kind == kind and e.cpus == cpus
                       and e.ahead != "?" and math.isfinite(e.detectable))
        if found:
            out[kind] = found[len(found) // 2]
    return out


def reach_phrase(reach: dict[str, float]) -> str:
    """'throughput 2.4x, p99 latency 2.3x, -icount 0.74%'."""
    return ", ".join(f"{REACH[k]} {apart_text(v)}" for k, v in reach.items()) or "none"


def count_verdicts(ctx: Context, chances: dict[int, boot_perm.Chance] | None = None,
                   decided: list[bool] | None = None) -> list[CountVerdict]:
    """Per vCPU count: the context's counted costs against chance (Holm over its counts
    unless `decided` is given)."""
    chances = ctx.cost_chance() if chances is None else chances
    counts = sorted(chances)
    decided = decided if decided is not None else holm([chances[n].p for n in counts])
    out = []
    for n, passed in zip(counts, decided):
        claims = [e for e in ctx.entries if e.kind in COUNTED and e.cpus == n]
        mine = Context(claims, ctx.cross, ctx.cores, ctx.noise, [], {}, {}, ctx.pair)
        out.append(CountVerdict(ctx.pair, n, chances[n], mine.claims(ctx.first, COUNTED),
                                mine.claims(ctx.second, COUNTED), passed,
                                reach_by_kind(ctx, n),
                                sum(1 for s in ctx.sessions
                                    if s.replicates(ctx.pair.kernels, n))))
    return out


@dataclass(frozen=True)
class DifferenceVerdict:
    """One design difference: its cost claims per vCPU count against the permutation."""
    name: str
    sub: "Context"  # the difference's own entries
    counts: list[CountVerdict]  # per vCPU count

    @property
    def claims(self) -> int:
        return sum(c.chance.claims for c in self.counts)

    @property
    def tests(self) -> int:
        return sum(c.chance.tests for c in self.counts)

    @property
    def decided(self) -> bool:
        return any(c.decided for c in self.counts)

    @property
    def text(self) -> str:
        if not self.counts:
            return "no cost measured (its cases have no timed or -icount boots)"
        return "; ".join(f"at {c.where}: {c.text} ({chance_text(c.chance, False)})"
                         for c in self.counts)

    @property
    def short(self) -> tuple[str, str]:
        """For a slide: the verdict per count in a word or two, and 'claims/tests'."""
        if not self.counts:
            return "not timed", "0/0"
        return ("; ".join(f"{c.cpus}: {c.short}" for c in self.counts),
                "; ".join(f"{c.chance.claims}/{c.chance.tests}" for c in self.counts))


def cost_tests(ctx: Context) -> int:
    """The cost comparisons that could have made a claim."""
    return len([e for e in ctx.entries if e.kind in COUNTED and e.ahead != "?"])


def difference_verdicts(ctx: Context) -> list[DifferenceVerdict]:
    """Each difference's cost claims per vCPU count against the permutation over boots,
    Holm's step-down over every difference and count: a difference with one claim in a
    few tests decides nothing."""
    found = [(name, sub, sub.case_chance()) for name, sub in ctx.by_difference()]
    keys = [(i, n) for i, (_, _, chances) in enumerate(found) for n in sorted(chances)]
    passed = dict(zip(keys, holm([found[i][2][n].p for i, n in keys])))
    return [DifferenceVerdict(name, sub, count_verdicts(
        sub, chances, [passed[i, n] for n in sorted(chances)]))
            for i, (name, sub, chances) in enumerate(found)]


def difference_table(ctx: Context) -> Table | None:
    """The answer per design difference: which design each one's evidence puts ahead."""
    first, second = ctx.pair.kernels
    verdicts = difference_verdicts(ctx)
    if not verdicts:
        return None
    rows = []
    for d in verdicts:
        cases = list(dict.fromkeys(e.case.label for e in d.sub.entries))
        level = [e for e in d.sub.entries if e.ahead == "" and e.kind != "retries"]
        unclaimed = [e for e in d.sub.entries if e.ahead == "?"]
        rows.append([d.name, ", ".join(cases), d.text, _claims_text(d.sub, first, COSTS),
                     _claims_text(d.sub, second, COSTS), _claims_text(d.sub, first, MECHANISMS),
                     _claims_text(d.sub, second, MECHANISMS),
                     f"{len(level)} / {len(unclaimed)}"])
    return Table(["design difference", "cases", "on its costs, per vCPU count",
                  f"costs: {first} ahead", f"costs: {second} ahead",
                  f"mechanisms: {first} lower", f"mechanisms: {second} lower",
                  "neither / no claim"], rows)


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
    """The answer in one phrase, per vCPU count: 'at 1 vCPU neither ahead beyond chance;
    at 2 vCPUs chinner ahead' (one phrase when every count agrees)."""
    found = count_verdicts(ctx)
    if not found:
        return "no cost was measured"
    texts = [c.text for c in found]
    if len(set(texts)) == 1:
        counts = [str(c.cpus) for c in found]
        where = " or ".join([", ".join(counts[:-1]), counts[-1]] if len(counts) > 1
                            else counts)
        return f"{texts[0]} at {where} vCPU" + ("s" if found[-1].cpus > 1 else "")
    return "; ".join(f"at {c.where} {c.text}" for c in found)


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
    """The answer in words, from the entries: the pair and what is equal in it, the reach
    of each kind of cost test, then the verdict per vCPU count, then mechanisms and what
    this machine cannot decide."""
    lead = f"**Asked of {ctx.pair.text}.** " + _power(ctx)
    found = count_verdicts(ctx)
    if found:
        said = "; ".join(f"at {c.where}, {c.text}" for c in found)
        lead += f" **{said[0].upper()}{said[1:]}.** " + " ".join(
            f"At {c.where}: {_count_detail(c)}." for c in found)
    paragraphs = [lead + _largest(ctx) + _smallest(ctx), flip_sentence(ctx.flip, ctx.sessions),
                  difference_sentence(ctx)]
    paragraphs.append(_mechanisms(ctx))
    paragraphs.append(_cannot(ctx))
    return [p for p in paragraphs if p]


def _count_detail(c: CountVerdict) -> str:
    a, b = c.pair.kernels
    text = (f"{b} costs more in {plural(len(c.first), 'comparison')}"
            + (f" ({counted(c.first)})" if c.first else "")
            + f", {a} in {len(c.second)}" + (f" ({counted(c.second)})" if c.second else "")
            + f"; {chance_text(c.chance)}; Holm's step-down over the vCPU counts")
    if c.chance.least_p >= stats.ALPHA:
        text += (f": with these boots no count of claims can be beyond chance (the least "
                 f"p they allow is {c.chance.least_p:.2g})")
    return text


@dataclass(frozen=True)
class Session:
    """Timed boots planned close together (compare names a batch of boots by when it
    planned them): from its first batch to its last, and how many boots."""
    first: str  # YYYYMMDD-HHMMSS
    last: str
    boots: int
    cpus: tuple[int, ...] = ()  # the vCPU counts its boots ran
    # (kernel, vCPUs) of its boots: a session replicates a count only where it timed both
    # kernels of the pair there (a rerun of one boot replicates nothing)
    timed: frozenset[tuple[str, int]] = frozenset()

    def replicates(self, kernels: tuple[str, ...], cpus: int) -> bool:
        return all((slug(k), cpus) in self.timed for k in kernels)

    def text(self) -> str:
        day, start = self.first.split("-")
        end = self.last.split("-")[1]
        return (f"{day[:4]}-{day[4:6]}-{day[6:]} {start[:2]}:{start[2:4]}"
                + (f"-{end[:2]}:{end[2:4]}" if end[:4] != start[:4] else "")
                + f", {plural(self.boots, 'boot')}")


SESSION_GAP_S = 1800  # batches further apart than this are sessions of their own


def batch_stamp(directory: str) -> str | None:
    """'boots/20261207-193407b-chinner-...' -> '20261207-193407': when compare planned the
    boot's batch (a b after it keeps apart batches planned in one second)."""
    match = re.match(r"(\d{8}-\d{6})b*-", directory.split("/")[-1])
    return match.group(1) if match else None


def timed_sessions(directories: list[str], kernels: tuple[str, ...]) -> list[Session]:
    """The sessions of the kernels' timed (perf, tcg) boots, from their folder names
    (boots/STAMP-KERNEL-perf-tcg-cN-rK, STAMP as compare planned the batch)."""
    stamps = []
    for d in directories:
        stamp = batch_stamp(d)
        match = re.fullmatch(r"\d{8}-\d{6}b*-(.+)-perf-tcg-c(\d+)-r\d+", d.split("/")[-1])
        if stamp and match and match.group(1) in {slug(k) for k in kernels}:
            stamps.append((stamp, int(match.group(2)), match.group(1)))
    out: list[Session] = []
    for stamp, cpus, kernel in sorted(stamps):
        at = time.mktime(time.strptime(stamp, "%Y%m%d-%H%M%S"))
        if out and at - time.mktime(time.strptime(out[-1].last, "%Y%m%d-%H%M%S")) \
                <= SESSION_GAP_S:
            last = out[-1]
            out[-1] = Session(last.first, stamp, last.boots + 1,
                              tuple(sorted(set(last.cpus) | {cpus})),
                              last.timed | {(kernel, cpus)})
        else:
            out.append(Session(stamp, stamp, 1, (cpus,), frozenset({(kernel, cpus)})))
    return out


def sessions_sentence(sessions: list[Session], kernels: tuple[str, ...] = ()) -> str:
    """Whether the timed rounds share one session's luck: a whole run can drift (the A/A
    study of the README's noise section), and the boot-pair intervals cannot see it. A
    session that timed only one kernel somewhere (reruns) replicates nothing there."""
    if not sessions:
        return ""
    counts = sorted({c for s in sessions for c in s.cpus})
    full = [s for s in sessions if kernels and all(s.replicates(kernels, c) for c in counts)]
    if len(sessions) > 1 and kernels and len(full) <= 1:
        return (f" The timed boots come from {len(sessions)} sessions ("
                + "; ".join(s.text() for s in sessions) + f"), but only {len(full)} of them "
                f"timed {' and '.join(kernels)} at every vCPU count: the rounds share its "
                "luck (README, \"Noise between runs\"), which these intervals do not include.")
    if len(sessions) == 1:
        return (f" Every timed boot of the pair comes from one session ({sessions[0].text()}):"
                " a whole session can run one kernel fast or slow (README, \"Noise between "
                "runs\"), which these intervals, built from its rounds alone, do not include.")
    return (f" The timed boots come from {len(sessions)} sessions ("
            + "; ".join(s.text() for s in sessions) + ").")


def flip_sentence(flip: duel.SignFlip | None, sessions: list[Session] | None = None) -> str:
    """Whether the timed lean changes sign between vCPU counts: confirmed with its size
    and interval, or not, computed from the boot pairs of each count; and the sessions
    its rounds come from."""
    if flip is None or not flip.leans:
        return ""
    return _flip_sentence(flip) + sessions_sentence(sessions or [], flip.pair.kernels)


def _flip_sentence(flip: duel.SignFlip) -> str:
    first, second = flip.pair.kernels
    each = "; ".join(
        f"at {x.cpus} vCPU{'s' if x.cpus > 1 else ''} {second}'s throughput is "
        f"{change_text(x.ratio, x.low, x.high)} of {first}'s over {plural(x.pairs, 'boot pair')}"
        f" (per round: {', '.join(fmt(r, 2) for r in x.ratios)}; sign-flip p = {x.p:.2g})"
        for x in flip.leans)
    text = (f"**Boot against boot, per vCPU count** (geometric mean over the timed cases "
            f"both boots ran, 95% interval): {each}.")
    if flip.status == "one count":
        return text
    between = flip.between
    lo, hi = flip.leans[0], flip.leans[-1]
    size = (f" The change from {lo.cpus} to {hi.cpus} vCPUs is "
            f"{change_text(between.value, between.low, between.high)}" if between else "")
    if flip.status == "confirmed":
        return (text + f" **The sign flip between {first} and {second} is confirmed**: the "
                "counts lean opposite ways and each count's interval excludes no change."
                + size + ".")
    if flip.status == "not confirmed":
        differ = between is not None and (between.low > 1 or between.high < 1)
        return (text + " **The sign flip is not confirmed**: the counts lean opposite ways "
                "by their means, but an interval includes no change, so it may be boot "
                "luck." + size + ("; its interval excludes no change: the counts differ, "
                                  "the signs are not shown to." if differ else "."))
    return text + " No sign flip: every count leans the same way." + size + "."


def _power(ctx: Context) -> str:
    """What the cost tests could have shown, per kind and vCPU count (before any verdict):
    a "neither" from tests that could only see a factor of two is no evidence of equal
    cost."""
    parts = []
    for n in sorted({e.cpus for e in ctx.entries if e.kind in COUNTED}):
        reach = reach_by_kind(ctx, n)
        tests = {k: len([e for e in ctx.entries if e.kind == k and e.cpus == n
                         and e.ahead != "?" and math.isfinite(e.detectable)])
                 for k in reach}
        if reach:
            parts.append(f"at {n} vCPU{'s' if n > 1 else ''} " + ", ".join(
                f"{SHORT[k]} {apart_text(v)} ({plural(tests[k], 'test')})"
                for k, v in reach.items()))
    return ("Reach, the smallest difference the cost tests could show (median), before "
            "any verdict: " + "; ".join(parts) + ".") if parts else ""


def _smallest(ctx: Context) -> str:
    """How large the single-thread claims are: usually fractions of a percent."""
    found = [e for e in ctx.entries if e.kind == "icount" and e.ahead in ctx.pair.kernels
             and e.ratio]
    if not found:
        return ""
    return (f" Single-thread cost (-icount) separates them in {plural(len(found), 'case')} "
            f"by {span_text([e.ratio for e in found if e.ratio])} ({ctx.second} against "
            f"{ctx.first}).")


def largest_entry(ctx: Context) -> duel.Entry | None:
    found = [e for e in ctx.entries if e.kind == "timed" and e.ahead in ctx.pair.kernels
             and not ctx.confounded(e) and e.ratio]
    return max(found, key=lambda e: abs(math.log(e.ratio or 1.0))) if found else None


def _largest(ctx: Context) -> str:
    """The largest measured difference that is not confounded, and what fired there."""
    e = largest_entry(ctx)
    if e is None:
        return ""
    text = (f" The largest: {e.case.label} at {e.detail}, {ctx.second}'s throughput "
            f"{change_text(e.ratio)} of {ctx.first}'s (95% interval "
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
    first, second = ctx.pair.kernels
    parts = []
    for kind in MECHANISMS:
        found = [e for e in ctx.entries if e.kind == kind]
        if not found:
            continue
        if kind == "retries":
            parts.append(_retries_phrase(found, ctx.pair))
            continue
        a, b = [e for e in found if e.ahead == first], [e for e in found if e.ahead == second]
        level = [e for e in found if e.ahead == ""]
        open_ = [e for e in found if e.ahead == "?"]
        unclaimed = ""
        if open_:
            ratios = [e.ratio for e in open_ if e.ratio and math.isfinite(e.ratio)]
            shown = [e for e in open_ if e.shown]
            unclaimed = (f", no claim in {len(open_)}"
                         + (f" ({second} {span_text(ratios)})" if ratios else "")
                         + (f", of them {len(shown)} shown, not counted" if shown else ""))
        control = control_text(found[0])
        control = f" [{control}]" if control else ""
        if not a and not b:
            parts.append(f"{SHORT[kind]}: the same in {len(level)}{unclaimed} of "
                         f"{plural(len(found), 'comparison')}{control}")
            continue
        ratios = [e.ratio for e in a + b if e.ratio]
        parts.append(f"{SHORT[kind]}: {first} lower in {len(a)}, {second} lower in {len(b)} "
                     f"({second} {span_text(ratios)}), the same in {len(level)}{unclaimed} of "
                     f"{plural(len(found), 'comparison')}{control}")
    if not parts:
        return ""
    return "What differs: " + "; ".join(parts) + "."


def _retries_phrase(found: list[duel.Entry], pair: duel.Pair = duel.ISOLATED) -> str:
    """Which counters fired, per design, with their kind and in how many cases."""
    phrases = []
    for design in pair.kernels:
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
    first, second = ctx.pair.kernels
    parts = [f"how either design scales beyond {ctx.cores} CPUs (this host has "
             f"{ctx.cores} cores and runs guests under TCG)"]
    predicted = [e for e in ctx.entries if e.prediction]
    if predicted:
        t = duel.KindTally("prediction", predicted)
        parts[-1] += (f"; the queueing model's verdicts at {duel.PREDICTION_CPUS} CPUs are "
                      f"withheld in {len(t.unclaimed)} of {plural(len(predicted), 'case')} "
                      "(its held-out record falls short of what verdicts need), and its "
                      f"sweep's rule gives one in {len(t.ahead(first)) + len(t.ahead(second))}")
    for n in sorted({e.cpus for e in ctx.entries if e.kind == "timed"}):
        timed = sorted(e.detectable for e in ctx.entries if e.kind == "timed" and e.cpus == n
                       and math.isfinite(e.detectable))
        if timed:
            parts.append(f"timed differences at {n} vCPU{'s' if n > 1 else ''} below what the "
                         f"boots of one case can separate here: {apart_text(timed[0])} at best, "
                         f"{apart_text(timed[len(timed) // 2])} typically (median), "
                         f"{apart_text(timed[-1])} at worst")
    if ctx.noise and any(e.kind == "timed" for e in ctx.entries):
        parts[-1] += (f" (boots of one kernel vary by {pct_abs(ctx.noise[0])} to "
                      f"{pct_abs(ctx.noise[1])}, CoV)")
    for c in ctx.flagged:
        parts.append(f"whether {c.kernel}'s timed lead over {c.against} is its own: it is "
                     f"higher in {c.wins} of {c.cells} cells (sign test p = {c.p:.2g}, median "
                     f"{change_text(c.median_ratio)}) but in {c.pairs_won} of "
                     f"{len(c.pair_ratios)} boot pairs (p = {c.p_pairs:.2g}), while -icount "
                     f"puts their instructions {pct_abs(c.icount_median)} apart (median); "
                     f"its timed wins set aside {set_aside_text(c)}")
    for e in [e for e in ctx.entries if e.caveat and e.ahead in ctx.pair.kernels]:
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
    shown = [e for e in ctx.entries if e.kind in duel.CONTENTION_KINDS and e.shown]
    if shown:
        parts.append(f"contention, where {plural(len(shown), 'test')} would put a design ahead "
                     f"but count for nothing: a contention claim needs "
                     f"{duel.MIN_CONTENTION_BOOTS} debug boots a kernel and a negative control "
                     f"that rejects at about {stats.ALPHA}")
    absent = [k for k in duel.MEASURED if not any(e.kind == k for e in ctx.entries)]
    if absent:
        parts.append("what this run did not measure: "
                     + ", ".join(f"{SHORT[k]} ({duel.KINDS[k]})" for k in absent))
    return "What this machine cannot decide: " + "; ".join(parts) + "."


# -- the first screen -------------------------------------------------------------------

def first_screen(contexts: list[Context], kernels: list[str]) -> list[Block]:
    """What a reader sees first, under 150 words before its table: which pair each
    answer is about and what is equal in it, at which vCPU counts, with which reach, and
    the answer; the table gives it per pair and vCPU count."""
    if not contexts:
        return [Para("**No answer: this run has neither pair** (" + "; ".join(
            f"{p.first} and {p.second}" for p in duel.ALL_PAIRS) + ").")]
    verdicts = {ctx.pair.name: count_verdicts(ctx) for ctx in contexts}
    kinds = [k for k in COUNTED if any(k in c.reach for found in verdicts.values()
                                       for c in found)]
    sentences = []
    for i, ctx in enumerate(contexts):
        found = verdicts[ctx.pair.name]
        head = f"**{ctx.pair.text[0].upper()}{ctx.pair.text[1:]}**"
        if not found:
            sentences.append(f"{head}: no cost was measured.")
            continue
        reach = "; ".join(_reach_values(c.reach, kinds) + f" at {c.where}" for c in found)
        blind = [c for c in found if c.chance.least_p >= stats.ALPHA]
        said = (f"reach (the median smallest difference its tests could show: "
                f"{', '.join(REACH[k] for k in kinds)}) " if i == 0 else "reach ")
        sentences.append(
            f"{head}; {said}{reach}. **Answer: {verdict(ctx)}**" + (
                " (too few boots to beat chance" + ("" if len(blind) == len(found) else
                                                    " at " + " and ".join(c.where
                                                                          for c in blind))
                + f": least p {min(c.chance.least_p for c in blind):.2g})" if blind
                else "") + ".")
    absent = [p for p in duel.ALL_PAIRS if p.name not in verdicts]
    sentences += [f"The {p.name} pair ({p.first} against {p.second}) is not in this run."
                  for p in absent]
    rows = []
    for ctx in contexts:
        for c in verdicts[ctx.pair.name]:
            rows.append([f"{ctx.pair.name}: {ctx.first} against {ctx.second}", str(c.cpus),
                         c.chance.boots_text, reach_phrase(c.reach),
                         f"{len(c.first)} / {len(c.second)} of {c.chance.tests}",
                         f"{c.chance.p:.2g} (least {c.chance.least_p:.2g})", c.text])
    out: list[Block] = [Para(" ".join(sentences))]
    if rows:
        out.append(Table(["pair", "vCPUs", "boots per kernel", "reach (median)",
                          "claims: first / second ahead, of tests",
                          "chance p (permutation over boots)", "answer"], rows))
    return out


def _reach_values(reach: dict[str, float], kinds: list[str]) -> str:
    """'59%, 80%, 0.74%' in the order of kinds; n/a for a kind missing here, none at
    the end."""
    values = [apart_text(reach[k]) if k in reach else "n/a" for k in kinds]
    while values and values[-1] == "n/a":
        values.pop()
    return ", ".join(values)


def words_before_table(markdown: str) -> int:
    """The words a reader meets before the first table of a rendered report."""
    head = markdown.split("\n|", 1)[0]
    return len(re.findall(r"[^\s#*|`()\[\]]+", head))


# -- retries, their price, the grace-period wait --------------------------------------

RR_METRICS = {"failures": "trylock_failures_per_op.", "instructions": duel.PRICE_METRIC,
              "per_retry": "trylock_retry_instructions_per_retry."}


def _rr_figures(rows: list, case: evidence.Case, kernel: str) -> dict[str, list[float]]:
    """Per tcg-cs-rr boot of the kernel that ran the case: failed trylocks per op and
    their instructions per op (summed over sites; 0 in a boot where none failed), and
    instructions per retry (mean over sites, only where a trylock failed)."""
    per_boot: dict[int, dict[str, list[float]]] = {}
    for r in evidence._ok(rows):
        if r.kernel != kernel or r.mode != "tcg-cs-rr" or not evidence._in_case(r, case):
            continue
        found = per_boot.setdefault(r.repetition, {})
        for name, prefix in RR_METRICS.items():
            if r.metric.startswith(prefix):
                found.setdefault(name, []).append(r.value)
    out: dict[str, list[float]] = {}
    for found in per_boot.values():
        for name in ("failures", "instructions"):
            out.setdefault(name, []).append(sum(found.get(name, [])))
        if found.get("per_retry"):
            out.setdefault("per_retry", []).append(statistics.fmean(found["per_retry"]))
    return out


def _hold_wait(rows: list, case: evidence.Case, kernel: str, cpus: int,
               role: str) -> str:
    """lock_stat's hold and wait of a role over the debug boots: the mean per acquisition
    and per contention, and the largest single one (lockdep-inflated)."""
    f: dict[str, list[float]] = {}
    procs = evidence.main_procs(rows, case, cpus)
    for r in evidence._ok(rows):
        if (r.kernel == kernel and r.flavour == "debug" and r.cpus == cpus and r.lock == role
                and r.procs == procs and evidence._in_case(r, case)):
            f.setdefault(r.metric, []).append(r.value)
    acquisitions, contentions = sum(f.get("acquisitions", [])), sum(f.get("contentions", []))
    if not acquisitions:
        return ""
    hold = sum(f.get("holdtime_total", [])) / acquisitions
    text = f"hold {fmt(hold, 2)} µs mean, {fmt(max(f.get('holdtime_max', [0])), 2)} µs max"
    if contentions:
        wait = sum(f.get("waittime_total", [])) / contentions
        text += f"; wait {fmt(wait, 2)} µs mean, {fmt(max(f.get('waittime_max', [0])), 2)} µs max"
    return text


def retry_price_blocks(ctx: Context, rows: list) -> list[Block]:
    """Where the second design's trylocks fail: its retries per op (debug counters), the
    instructions its failed trylock loops spent (tcg-cs round robin) and lock_stat's hold
    and wait of the locks retried, beside the first design's."""
    first, second = ctx.pair.kernels
    retrying = [e for e in ctx.entries if e.kind == "retries" and any(
        v >= evidence.EXACT_FLOOR and retry_counters.describe(n, second).kind
        == "trylock-retry" for n, v in e.counters.get(second, []))]
    priced = {e.case for e in ctx.entries if e.kind == "price"}
    cases = list(dict.fromkeys([e.case for e in retrying] + sorted(
        priced, key=lambda c: c.label)))
    if not cases:
        return []
    table = []
    for case in cases:
        for e in [x for x in retrying if x.case == case] or [None]:
            cpus = e.cpus if e else 0
            for kernel in (second, first):
                counters = e.counters.get(kernel, []) if e else []
                rr = _rr_figures(rows, case, kernel)
                roles = sorted({r.lock for r in rows if r.metric.startswith(duel.PRICE_METRIC)
                                and r.kernel == second and evidence._in_case(r, case)}) \
                    or ["i_lock"]
                waits = "; ".join(f"{role}: {w}" for role in roles
                                  for w in [_hold_wait(rows, case, kernel, cpus, role)] if w)
                table.append([
                    case.label, f"{cpus} vCPUs" if cpus else "", kernel,
                    "; ".join(f"{n} {fmt(v, 2)}" for n, v in counters[:3]) or "none",
                    _spread(rr.get("failures")), _spread(rr.get("instructions")),
                    _spread(rr.get("per_retry")) if rr.get("per_retry") or not rr
                    else "none failed", waits or "no debug boot"])
    rr_boots = len({(r.kernel, r.repetition) for r in rows if r.mode == "tcg-cs-rr"})
    return [Heading(3, f"What {second}'s retries cost"), Para(
        f"The cases where {second}'s trylocks fail and retry (debug counters of at least "
        f"{fmt(evidence.EXACT_FLOOR, 1)} per op), or where the round-robin tcg-cs boots "
        f"priced its failed trylock loops: per op, the retries the debug kernels counted, the "
        f"failed trylocks and the guest instructions spent between a failed trylock and the "
        f"success it retried for (tcg-cs-rr, perf kernels, several vCPUs round robin"
        + (f"; {plural(rr_boots, 'boot')} in this run, 0 where a boot ran the case and no "
           "icache trylock failed: under round robin one fails only when the vCPU holding "
           "the lock was switched out inside its section" if rr_boots else
           "; **none in this run: not measured**")
        + "), and lock_stat's hold and wait times of the locks the loops retry. **lock_stat "
        "keeps, per lock class, the total, the largest and the count of its hold and wait "
        "times, no distribution: the figures are means and maxima over the debug boots, "
        "not percentiles** (and lockdep lengthens every section). The percentiles this run "
        "has are of whole operations (p50, p99: the workload table and Latency)."),
        Table(["workload", "debug vCPUs", "kernel", "retries per op (debug counters)",
               "failed trylocks per op (tcg-cs-rr)", "instructions in failed loops per op",
               "instructions per retry", "lock_stat hold and wait (means, maxima)"], table)]


def _spread(values: list[float] | None) -> str:
    """A figure over boots: its mean, and the range when boots differ."""
    if not values:
        return "not measured"
    mean = statistics.fmean(values)
    return fmt(mean, 3) + (f" ({fmt(min(values), 2)}-{fmt(max(values), 2)}, "
                           f"{plural(len(values), 'boot')})" if len(values) > 1 else "")


GP_WAIT = "sb_list_gp_wait"


def gp_wait_blocks(rows: list, kernels: list[str]) -> list[Block]:
    """The sb-list walks beside XFS recycling: piggin's grace-period waits (its 0011)
    per op and their time, on each kernel of its series and on chinner, with the case's
    throughput and p99 latency."""
    counter, waited = f"retries.{GP_WAIT}_per_op", f"retries.{GP_WAIT}_ns_per_op"
    cases = sorted({evidence.Case(r.workload, r.fs, r.phase) for r in rows
                    if (r.metric == counter and r.value > 0)
                    or (r.workload.startswith("sbwalk") and r.metric == "throughput")},
                   key=lambda c: c.label)
    if not cases:
        return [Heading(3, "Grace-period waits (piggin's 0011)"), Para(
            "No workload of this run walks the sb inode lists beside XFS recycling, and no "
            f"kernel's {GP_WAIT} counter fired: the wait piggin's 0011 adds is not measured "
            "here (make duel runs sbwalk-churn).")]
    order = [k for k in ("piggin", "piggin-2010", "chinner", "chinner-2.6.39") if k in kernels]
    mode = evidence.plain_mode(rows)
    table = []
    for case in cases:
        debug_cpus = sorted({r.cpus for r in rows if r.flavour == "debug"
                             and evidence._in_case(r, case)})
        timed_cpus = sorted({r.cpus for r in rows if r.flavour == "perf" and r.mode == mode
                             and evidence._in_case(r, case)})
        for kernel in order:
            for cpus in sorted(set(debug_cpus) | set(timed_cpus)):
                procs = evidence.main_procs(rows, case, cpus)
                mine = [r for r in evidence._ok(rows) if r.kernel == kernel and r.cpus == cpus
                        and r.procs == procs and evidence._in_case(r, case)]
                if not mine:
                    continue
                waits = [r.value for r in mine if r.flavour == "debug" and r.metric == counter]
                ns = [r.value for r in mine if r.flavour == "debug" and r.metric == waited]
                has = any(r.metric.startswith(f"retries.{GP_WAIT}") for r in rows
                          if r.kernel == kernel)
                missing = ("no such counter (no 0011)" if retry_counters.describe(
                    GP_WAIT, kernel).series == "piggin" else
                    "none: its walks hold the list lock")
                put, _ = evidence.throughput(rows, case, mode, cpus, procs)
                p99 = evidence.latency_values(rows, case, mode, cpus, procs, "p99").get(kernel)
                table.append([case.label, duel._cells(cpus, procs), kernel,
                              _spread(waits) if waits else
                              (missing if not has else "no debug boot"),
                              _spread([v / 1e3 for v in ns]) if ns else "not counted",
                              f"{fmt(put[kernel].mean)} ({put[kernel].n} boots)"
                              if kernel in put else "",
                              f"{fmt(statistics.median(p99) / 1e6, 2)} ms" if p99 else ""])
    return [Heading(3, "Grace-period waits (piggin's 0011)"), Para(
        f"Where sb inode list walks run beside XFS recycling inodes: how often a recycled "
        f"inode waited for an RCU grace period before joining an sb list again "
        f"({GP_WAIT}, per op, debug kernels, mean over boots with their range), the time "
        f"those waits took (µs per op), and the case's throughput and p99 latency on the perf "
        f"kernels. piggin waits only after a walk of the sb's lists (our 0011); "
        f"piggin-2010 stops before 0011 and keeps 0009's wait at every recycle within a "
        f"grace period of the eviction (ours too: Nick's series had no answer there); "
        f"chinner walks under the list lock and has none."),
        Table(["workload", "vCPUs", "kernel", f"{GP_WAIT} per op", "µs waited per op",
               "throughput (mean)", "p99 latency (median)"], table)]


# -- the largest timed difference, boot by boot -----------------------------------------

def largest_per_count(ctx: Context) -> list[duel.Entry]:
    """Per vCPU count, the timed cell where the pair's geometric means lie furthest apart
    (claimed or not)."""
    out = []
    for n in sorted({e.cpus for e in ctx.entries if e.kind == "timed"}):
        found = [e for e in ctx.entries if e.kind == "timed" and e.cpus == n and e.ratio
                 and all(e.values.get(k) for k in ctx.pair.kernels)]
        if found:
            out.append(max(found, key=lambda e: abs(math.log(_geo_ratio(e, ctx.pair)))))
    return out


def _geo_ratio(e: duel.Entry, pair: duel.Pair) -> float:
    return _geo(e.values[pair.second]) / _geo(e.values[pair.first])


def _geo(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values if v > 0))


def dots_series(ctx: Context, kernels: list[str], short: bool = False
                ) -> tuple[list[str], dict[str, dict[str, list[float]]]]:
    """The per-boot throughput of the largest timed difference per vCPU count, each boot
    over the first design's geometric mean of its cell: group names (the case and its
    vCPU count, or the count alone when `short`) and kernel -> group -> values."""
    groups, series = [], {}
    for e in largest_per_count(ctx):
        group = e.detail if short else f"{e.case.label}, {e.detail}"
        groups.append(group)
        base = _geo(e.values[ctx.first])
        for k in [k for k in list(ctx.pair.kernels) + kernels if e.values.get(k)]:
            series.setdefault(k, {})[group] = [v / base for v in e.values[k]]
    return groups, series


def dots_caption(ctx: Context) -> str:
    found = largest_per_count(ctx)
    return ("Every boot of the timed cell where " + f"{ctx.second} and {ctx.first} lie "
            "furthest apart at each vCPU count: " + "; ".join(
                f"{e.case.label} at {e.detail}, {ctx.second} {change_text(e.ratio, e.low, e.high)}"
                f" ({'apart: ' + e.rule if e.ahead in ctx.pair.kernels else 'not apart'})"
                for e in found)
            + f". Each boot's throughput over {ctx.first}'s geometric mean of its cell")


def blocks(ctx: Context, rows: list, kernels: list[str], chart_stem=None) -> list[Block]:
    first, second = ctx.pair.kernels
    out: list[Block] = [Heading(2, f"The answer, the {ctx.pair.name} pair: {first} against "
                                   f"{second}")]
    out += [Para(p) for p in answer(ctx)]
    if chart_stem is not None:
        groups, series = dots_series(ctx, kernels)
        if groups:
            chart = charts.boot_dots(chart_stem(f"largest-{ctx.pair.name}"),
                                     f"{second} against {first}: the largest timed "
                                     "difference per vCPU count, boot by boot", groups,
                                     f"throughput / {first}'s geometric mean", series,
                                     kernels, marks={1.0: ""})
            out.append(ChartBlock(chart, dots_caption(ctx)))
    out.append(Para(
        f"At a glance: per kind of evidence, in how many comparisons (workload cases, and "
        f"vCPU counts where timed; a cost is judged per vCPU count, never pooled) each "
        f"design is ahead, after what the comparisons could have shown. *Cost*: what a user "
        f"pays (time, instructions); *mechanism*: what explains a cost (lock traffic, "
        f"critical sections, retries, contention on the lockdep kernels). Rules: exact counts "
        f"differ beyond {pct_abs(evidence.EXACT_TOLERANCE)} and "
        f"{fmt(evidence.EXACT_FLOOR, 1)} acquisitions/op (EXACT_TOLERANCE, EXACT_FLOOR: "
        f"kernel threads add that much to a window), and only where every debug boot of a "
        f"kernel repeats its count (else it is decided by the boots); timed figures by the "
        f"{stats.INTERVAL_METHOD}, or by an {stats.RANK_METHOD} (p < {stats.ALPHA}) when every "
        f"boot of one design lies beyond every boot of the other; -icount also beyond its "
        f"measured rerun spread; contention by a test of the two counts with the boot as "
        f"the unit, counted only from {duel.MIN_CONTENTION_BOOTS} debug boots a kernel and "
        f"where its negative control, two kernels that take the same locks (i_lock: "
        f"{' against '.join(duel.CONTENTION_CONTROLS['inode_contention'])}; the shared "
        f"locks: {' against '.join(duel.CONTENTION_CONTROLS['contention'])}), rejects no "
        f"more often than {stats.ALPHA} allows. The tests of one "
        f"vCPU count share their boots (one boot runs every workload), so their claims are "
        f"not independent tries: *chance* is the permutation over boots (the pair's boots "
        f"of each mode relabelled between the two kernels in every way, every test decided "
        f"again, p the share of labellings with as many claims). Changes are {second}'s "
        f"against {first}'s, written as a percentage below a factor of two and as a factor "
        f"(x) from there on; so is the smallest difference a comparison could show."))
    table = difference_table(ctx)
    if table:
        out.append(Para(
            f"Per design difference: the comparisons of the workload cases that declare it "
            f"(their difference keys). A difference's verdict rests on its costs alone "
            f"(timed, latency, -icount, failed-trylock instructions), per vCPU count, and only "
            f"when its claims are beyond chance: the permutation over boots restricted to its "
            f"tests, held to Holm's step-down over the run's differences and counts. "
            f"Mechanisms (lock traffic, critical sections, contention on the lockdep kernels) "
            f"explain a cost and decide nothing; the columns count the comparisons of each "
            f"kind with {second}'s change against {first}'s where apart."))
        out.append(table)
    out.append(glance_measured(ctx))
    predicted = glance_predicted(ctx)
    if predicted:
        out.append(predicted)
    out += cross_case_block(ctx)
    if ctx.record:
        out.append(Para("The record of each design beyond the timed cases:"))
        out.append(Table(["record", first, second], ctx.record))
    out += retry_price_blocks(ctx, rows)
    out.append(Heading(3, f"{first} against {second}, workload by workload"))
    out.append(Para(
        f"Each figure is the mean over boots (CoV beside timed ones); the change is "
        f"{second}'s against {first}'s with its 95% interval; *ahead* names the design the "
        f"evidence puts ahead and the rule that decided, or says what difference it could "
        f"have shown. mainline (6.1, already chinner's lock order) is a reference, base "
        f"(one global inode_cache_lock) the ancestor of both."))
    out.append(workload_table(ctx, kernels))
    roles = cs_role_table(rows, kernels, ctx.pair)
    if roles:
        out.append(Heading(3, "Critical sections by lock (tcg-cs)"))
        out.append(Para(
            "Guest instructions from a spinlock's acquiring instruction to its release, per "
            "acquisition, perf kernels at 1 vCPU under -icount, mean over the tcg-cs boots "
            "(interrupts that land inside a section counted apart). Unlike lock_stat's hold "
            "times, lockdep's bookkeeping is not in them."))
        out.append(roles)
        out += cs_percentile_blocks(rows, kernels, ctx.pair)
    return out
