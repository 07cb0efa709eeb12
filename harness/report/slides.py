"""The slide deck of a run: RUN_DIR/slides.pdf, at most 12 slides for a 15-minute slot.

Built around the answer to the question the project exists for, chinner
against piggin: the question and the three designs; the answer; then one
message per slide, each title computed from the run like every number on
it (the lock orders, where the lock traffic differs, the critical sections,
retries, single-thread cost, the one large timed difference, the timing
pattern that is not the code's, the model's prediction, the record); last,
what would change the answer. Every figure on a slide is one the report
shows (deck_text checks it, with the other text defects a reader would
catch); charts are drawn again for the slide with large type.

The scaling prediction comes from the report: the level-2 section whose
heading starts with "Scaling prediction" lends a chart to the slide.
"""

from __future__ import annotations

import json
import math
import shutil
from datetime import datetime
from pathlib import Path

from harness.analysis import duel, evidence, retry_counters
from harness.analysis.duel import FIRST, SECOND
from harness.layout import Layout
from harness.report import charts, deck_text, document, duel_section, records_section, run_inputs
from harness.report.blocks import pct_abs, plural
from harness.report.duel_section import change_text, span_text
from harness.report.svg_pages import (Bullets, Grid, Page, Picture, Text, SMALL_PX, page_text,
                                      write_pdf)

MAX_SLIDES = 12
CHART_PX = 26
KEY = "outside top center horizontal"
SLIDE_STYLE = charts.Style(font=f"DejaVu Sans,{CHART_PX}", size=(1480, 620), line_width=4,
                           key=KEY)
# For a slide with a line of text under its chart: the chart keeps its type size.
SHORT_STYLE = charts.Style(font=f"DejaVu Sans,{CHART_PX}", size=(1480, 470), line_width=4,
                           key=KEY)
SCALING_HEADING = "Scaling prediction"
DESIGN_COLOURS = [charts.PALETTE[2], charts.PALETTE[3]]  # chinner, piggin as in the report
# Kinds of evidence named short enough for large type.
KIND = {"shared": "shared locks / op", "per_inode": "i_lock / op",
        "cs": "shared critical sections", "contention": "contention (lockdep)",
        "inode_contention": "i_lock contention (lockdep)",
        "price": "failed-trylock instructions",
        "icount": "single thread (-icount)", "timed": "throughput (TCG)",
        "paired": "boot against boot (TCG)",
        "latency": "p99 latency (TCG)"}


class DeckError(Exception):
    pass


class Deck:
    def __init__(self, layout: Layout, run_dir: Path, baseline: str | None) -> None:
        self.report = document.ReportBuilder(layout, run_dir, baseline)
        self.blocks = self.report.build()  # the report's own sections
        self.report_text = document.render_markdown(self.blocks, run_dir)
        self.run_dir = run_dir
        self.folder = run_dir / "slides"
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir()
        self.ctx = self.report.duel_context()
        self.footer = (f"inode-duel · run {run_dir.name} · {self.report.manifest['created'][:10]}"
                       f" · {FIRST} against {SECOND}")

    # -- helpers --------------------------------------------------------------------------

    def picture(self, chart: charts.Chart) -> Path:
        """A chart's SVG copied beside the pages (librsvg loads only files beside them)."""
        target = self.folder / chart.svg.name
        if chart.svg.parent != self.folder:
            shutil.copy2(chart.svg, target)
        return target

    def both(self) -> bool:
        return all(k in self.report.kernels for k in (FIRST, SECOND))

    def entries(self, kind: str) -> list[duel.Entry]:
        return [e for e in self.ctx.entries if e.kind == kind]

    def label(self, case: evidence.Case) -> str:
        """A case named short enough for a slide's axis."""
        phases = {c.phase for c in evidence.cases(self.report.rows) if c.workload == case.workload}
        return (f"{case.workload} {case.phase} {case.fs}" if len(phases) > 1
                else f"{case.workload} {case.fs}")

    def missing(self, what: str) -> Page:
        return Page(f"{what}: not in this run", [
            Text(f"This run has both of {FIRST} and {SECOND} only where it measured them; "
                 f"here it has none of this evidence.")], self.footer)

    # -- slides ---------------------------------------------------------------------------

    def question(self) -> Page:
        r, m = self.report, self.report.manifest
        counts = {k: len([p for p in m["kernels"][k]["patches"] if p["series"] == k])
                  for k in r.kernels if k in m["kernels"] and k != "mainline"}
        fixes = run_inputs.stable_fixes(m)
        return Page(f"{FIRST} or {SECOND}: how to break up the global inode_lock?", [
            Bullets([
                f"base ({plural(counts.get('base', 0), 'patch', 'patches')}): 2.6.36 "
                "re-created on 6.1, one global inode_cache_lock around the whole inode cache",
                f"{FIRST} (Dave Chinner, merged in 2.6.39; "
                f"{plural(counts.get(FIRST, 0), 'patch', 'patches')}): i_lock innermost, "
                "atomic i_count; code that needs an outer lock drops i_lock, takes it, "
                "re-takes i_lock and re-checks",
                f"{SECOND} (Nick Piggin, 2010; {plural(counts.get(SECOND, 0), 'patch', 'patches')}"
                "): i_lock protects all of an inode's cache state; list locks nest inside it, "
                "walkers trylock and retry; i_refs a plain count under i_lock; sb lists walked "
                "under RCU",
                "mainline 6.1" + (f" plus {plural(len(fixes), 'stable fix', 'stable fixes')} "
                                  "every kernel carries" if fixes else "")
                + ": already the first design's lock order, the reference",
            ], size=32),
            Text(f"This run: {plural(len(document.boots_of(m)), 'boot')} under "
                 f"{m['accel'].upper()} on a {m['host']['cpus']}-core host; both designs "
                 "share per-CPU sb lists and per-bucket hash locks, so only the locking model "
                 "differs.", size=SMALL_PX, colour="#444444"),
        ], self.footer)

    def answer(self) -> Page:
        if not self.both():
            return self.missing("The answer")
        rows = []
        for t in duel.by_kind([e for e in self.ctx.entries if not e.prediction
                               and e.kind != "retries"]):
            apart = [e.ratio for e in t.ahead(FIRST) + t.ahead(SECOND) if e.ratio]
            first = [e for e in t.ahead(FIRST) if not self.ctx.confounded(e)]
            aside = len(t.ahead(FIRST)) - len(first)
            rows.append([KIND[t.kind], str(len(first)) + (f" (+{aside} set aside)"
                                                           if aside else ""),
                         str(len([e for e in t.ahead(SECOND) if not self.ctx.confounded(e)])),
                         f"{len(t.level)} of {len(t.entries)}", str(len(t.unclaimed)),
                         span_text(apart) if apart else ""])
        cores = self.report.manifest["host"]["cpus"]
        notes = [duel_section._largest(self.ctx).split(". ")[0]]
        flagged = [e for e in self.ctx.entries if self.ctx.confounded(e) and not e.caveat]
        aside = [f"{plural(len(flagged), 'timed win')} of {flagged[0].ahead} (the cross-case "
                 "check flags its timings)"] if flagged else []
        aside += [f"{e.behind} {change_text(e.ratio)} boot against boot (one boot order in "
                  "every round)" for e in self.ctx.entries
                  if e.caveat and e.ahead in (FIRST, SECOND)]
        if aside:
            notes.append("Set aside: " + "; ".join(aside))
        grid = Grid(["measured", f"{FIRST} ahead", f"{SECOND} ahead", "neither", "no claim",
                     f"{SECOND}/{FIRST} apart"], rows, size=28)
        verdicts = duel_section.difference_verdicts(self.ctx)
        if verdicts:  # the summit's question is per design difference, not per kind
            rows = []
            for d in verdicts:
                word, counts = d.short
                rows.append([d.name.split(" (")[0],
                             str(len(d.sub.claims(FIRST, duel_section.MECHANISMS))),
                             str(len(d.sub.claims(SECOND, duel_section.MECHANISMS))),
                             counts, word])
            rows += [[text.split(" (")[0], "-", "-", "-", "not run: " + ", ".join(found)]
                     for text, found in self.ctx.not_measured.items()]
            grid = Grid(["design difference", f"{FIRST} lower", f"{SECOND} lower",
                         "claims/tests", "verdict"], rows, size=22)
            notes.insert(0, f"Per design difference the workloads declare: mechanisms "
                            f"(lock traffic, critical sections, lockdep contention) where "
                            f"{FIRST} or {SECOND} is lower; cost claims among the cost tests, "
                            "with the chance of so many or more when nothing differs; the "
                            "verdict on costs, beyond chance after Holm's correction.")
        return Page(f"Answer: on what this run measured, {duel_section.verdict(self.ctx)}; "
                    f"beyond {cores} CPUs it cannot say", [
            grid,
            Bullets([n for n in notes if n], size=SMALL_PX),
        ], self.footer)

    def orders(self) -> Page:
        r = self.report
        designs = [k for k in (FIRST, SECOND) if r.conformance.get(k, {}).get("edges")]
        if not designs:
            return self.missing("The lock orders")
        graphs, phrases = {}, []
        for k in designs:
            info = r.conformance[k]
            source = run_inputs.lock_order(r.layout, r.run_dir, k, info.get("lock_order_file"))
            observed = {(e[2], e[3]) for e in info["edges"]}
            counts: dict[tuple[str, str], int] = {}
            for e in info["edges"]:
                counts[e[2], e[3]] = counts.get((e[2], e[3]), 0) + 1
            seen = {role for e in observed for role in e}
            allowed = {e for e in (source.order.allowed if source.order else ()) if set(e) <= seen}
            graphs[k] = (observed, allowed, counts)
            outer = sorted(a for a, b in allowed if b == "i_lock")
            inner = sorted(b for a, b in allowed if a == "i_lock")
            phrases.append(f"{k}: {', '.join(outer)}{' → ' if outer else ''}i_lock"
                           f"{' → ' if inner else ''}{', '.join(inner)}")
        chart = charts.lockorder_graphs(self.folder / "lockorder", graphs, fontsize=20)
        return Page("; ".join(phrases), [
            Picture([self.picture(chart)], [], text_px=20 * 4 / 3),
            Text("Outer → inner, as lockdep saw the locks taken in this run (label: how many "
                 "lock classes) and as each series' lock-order file allows; dashed: allowed, "
                 "not seen; red: seen, not allowed.", size=SMALL_PX, colour="#555555"),
        ], self.footer)

    def traffic(self) -> Page:
        shared, own = self.entries("shared"), self.entries("per_inode")
        if not shared or not own:
            return self.missing("Lock traffic")
        more = [e for e in own if e.ahead == FIRST]
        fewer = [e for e in own if e.ahead == SECOND]
        same = [e for e in shared if e.ahead == ""]
        # The range over every case apart, as the report's glance table gives it.
        apart = [e.ratio for e in more + fewer if e.ratio]
        title = (f"Shared locks: the same in {len(same)} of {plural(len(shared), 'case')}; i_lock: "
                 f"{SECOND} more in {len(more)}" + (f", fewer in {len(fewer)}" if fewer else "")
                 + (f" ({span_text(apart)})" if apart else ""))
        # A case whose counts are all background (below the floor) says nothing here.
        tiny = {e.case for e in shared if max(s.mean for s in e.figures.values())
                < evidence.EXACT_FLOOR}
        groups = [self.label(e.case) for e in own if e.case not in tiny]
        series = {name: {self.label(e.case): (e.ratio, e.ratio, e.ratio) for e in found
                         if e.ratio and math.isfinite(e.ratio) and e.case not in tiny}
                  for name, found in (("shared locks", shared), ("i_lock", own))}
        chart = charts.points_with_errors(self.folder / "traffic", "", groups,
                                          f"{SECOND} / {FIRST}", series, [],
                                          style=SLIDE_STYLE, marks={1.0: ""},
                                          colours=[charts.NEUTRAL[0], DESIGN_COLOURS[1]])
        return Page(title, [Picture([self.picture(chart)], [
            "exact acquisitions per operation, debug kernels"
            + (f"; not drawn: {plural(len(tiny), 'case')} below {evidence.EXACT_FLOOR:g}/op"
               if tiny else "")], text_px=CHART_PX)], self.footer)

    def sections(self) -> Page:
        found = self.entries("cs")
        if not found:
            return self.missing("Critical sections")
        groups = [self.label(e.case) for e in found]
        values = {(self.label(e.case), k): e.figures[k].mean for e in found
                  for k in (FIRST, SECOND) if k in e.figures}
        chart = charts.clustered_bars(self.folder / "sections", "", groups, [FIRST, SECOND],
                                      [("instructions per shared-lock hold", values)],
                                      [FIRST, SECOND], style=SLIDE_STYLE,
                                      colours=DESIGN_COLOURS)
        shorter = [e for e in found if e.ahead == SECOND]
        longer = [e for e in found if e.ahead == FIRST]
        title = (f"{SECOND}'s shared critical sections are shorter in {len(shorter)} of "
                 f"{plural(len(found), 'case')}" + (f" ({span_text([e.ratio for e in shorter])})"
                                           if shorter else "")
                 + (f", longer in {len(longer)}" if longer else ""))
        return Page(title, [Picture([self.picture(chart)], [
            "guest instructions from taking a shared lock to releasing it (tcg-cs plugin, "
            "perf kernels)"], text_px=CHART_PX)], self.footer)

    def retries(self) -> Page:
        found = self.entries("retries")
        fired: dict[tuple[str, str], list[float]] = {}
        for e in found:
            for design in (FIRST, SECOND):
                for name, value in e.counters.get(design, []):
                    fired.setdefault((design, name), []).append(value)
        if not fired:
            return Page("Retries: no counter fired in this run", [
                Text("/proc/icache_retries of the debug kernels counted nothing in the "
                     "measured windows.")], self.footer)
        rows = [[f"{design} {name}", retry_counters.describe(name, design).kind,
                 plural(len(values), "case"), f"{max(values):.2g}"]
                for (design, name), values in sorted(fired.items())]
        counters = {d: sum(1 for (k, _) in fired if k == d) for d in (FIRST, SECOND)}
        # The names are in the table: a title naming each overflowed once both fired.
        title = "Retries: counters fired: " + ", ".join(
            f"{d} {counters[d]}" for d in (FIRST, SECOND)) + " (kinds differ: not compared)"
        kinds = [f"{kind}: {retry_counters.KINDS[kind]}" for kind in sorted({r[1] for r in rows})]
        # Many counters leave no room for a bullet per kind: the kinds run on in one text.
        crowded = len(rows) + len(kinds) > 10
        return Page(title, [
            Grid(["counter", "kind", "fired in", "most per op"], rows, size=24 if crowded else 30),
            Text("; ".join(kinds) + ".", size=24) if crowded else Bullets(kinds, size=26),
        ], self.footer)

    def single_thread(self) -> Page:
        every = [e for e in self.entries("icount") if e.ratio]
        found = [e for e in every if e.ahead != "?"]
        if not found:
            return self.missing("Single-thread cost")
        series = {SECOND: {self.label(e.case): ((e.ratio - 1) * 100,
                                                 ((e.low or e.ratio) - 1) * 100,
                                                 ((e.high or e.ratio) - 1) * 100)
                           for e in found}}
        chart = charts.points_with_errors(self.folder / "icount", "",
                                          [self.label(e.case) for e in found],
                                          f"% against {FIRST}", series, [FIRST, SECOND],
                                          style=SLIDE_STYLE, marks={0.0: ""}, clip=True,
                                          colours=DESIGN_COLOURS[1:])
        apart = [e for e in found if e.ahead in (FIRST, SECOND)]
        unmeasured = len(every) - len(found)
        title = (f"Single-thread cost (-icount): {SECOND} apart from {FIRST} in "
                 f"{len(apart)} of {plural(len(found), 'case')}"
                 + (f", by {span_text([e.ratio for e in apart if e.ratio])}" if apart else ""))
        return Page(title, [Picture([self.picture(chart)], [
            f"{SECOND} against {FIRST}, 95% interval" + (
                f"; not drawn: {plural(unmeasured, 'case')} with no claim (see the report)"
                if unmeasured else "")], text_px=CHART_PX)], self.footer)

    def timed(self) -> Page:
        found = [e for e in self.entries("timed") if e.ahead in (FIRST, SECOND)
                 and not self.ctx.confounded(e) and e.ratio]
        if not found:
            return Page("Timed throughput: no difference between the designs stands out", [
                Text("No timed cell separates them beyond its noise, or only where the "
                     "cross-case check flags the timings.")], self.footer)
        top = max(found, key=lambda e: abs(math.log(e.ratio)))  # type: ignore[arg-type]
        cells = [e for e in self.entries("timed") if e.case == top.case]
        groups = [e.detail for e in cells]
        series = {k: {e.detail: (math.exp(sum(map(math.log, e.values[k])) / len(e.values[k])),
                                 min(e.values[k]), max(e.values[k]))
                      for e in cells if e.values.get(k)} for k in self.report.kernels}
        chart = charts.points_with_errors(self.folder / "timed", "", groups,
                                          top.unit, series, self.report.kernels,
                                          style=SHORT_STYLE, log_y=True)
        p99 = [e.ratio for e in self.entries("latency") if e.case == top.case and e.ratio
               and e.ahead == top.ahead]
        apart = [e.ratio for e in cells if e.ahead == top.ahead and e.ratio]
        title = (f"{top.case.label}: {SECOND}'s throughput {span_text(apart)} of {FIRST}'s"
                 + (f", its p99 latency {span_text(p99)}" if p99 else ""))
        note = duel_section._largest(self.ctx).split(". ", 1)[-1]
        return Page(title, [
            Picture([self.picture(chart)], ["point: geometric mean; bar: lowest to highest "
                                            "boot (TCG, perf kernels)"], text_px=CHART_PX),
            Text(note if "fires" in note else "", size=SMALL_PX, colour="#444444"),
        ], self.footer)

    def artefact(self) -> Page:
        flagged = self.ctx.flagged
        if not flagged:
            return Page("Timings and instruction counts agree: no kernel wins beyond chance", [
                Text("Cross-case check: no kernel's timed lead over another is both beyond "
                     "chance and out of proportion to its -icount instruction counts.",
                     size=30)], self.footer)
        top = min(flagged, key=lambda c: c.p)
        rows = [[c.kernel, c.against, f"{c.wins} of {c.cells}", f"{c.p:.2g}",
                 change_text(c.median_ratio), pct_abs(c.icount_median),
                 ", ".join(["1"] + [f"{n} ({compared - apart}/{compared})"
                                    for n, compared, apart in c.locks])] for c in flagged]
        return Page(f"Under TCG {top.kernel} outruns {top.against} in {top.wins} of {top.cells}"
                    f" timed cells while -icount counts the same instructions: its timed wins "
                    "are set aside", [
                        Grid(["kernel", "against", "higher mean", "sign test p",
                              "median change", "-icount apart",
                              "set aside (vCPUs)"], rows, size=28),
                        Text(f"{top.kernel}'s timed wins therefore count for nothing unless the "
                             "other design's boots lie apart from every other kernel's; above "
                             "1 vCPU only in the cases (n/m) where the two take the same "
                             "locks. -icount apart: the median. The "
                             "cause (how TCG runs its code, image layout, host caches) is not "
                             "found yet.", size=SMALL_PX, colour="#444444"),
                    ], self.footer)

    def scaling(self) -> Page:
        predicted = self.entries("prediction")
        chart = self.scaling_chart(predicted)
        if chart is None:
            cores = self.report.manifest["host"]["cpus"]
            return Page("Scaling prediction: not in this run", [
                Text("This run carries no scaling prediction, so this slide shows none "
                     f"rather than a guess. The TCG throughput measured on this {cores}-core "
                     "host cannot show how the designs scale.", size=30)], self.footer)
        title = SCALING_HEADING + " (a model's prediction, not a measurement)"
        if predicted:
            t = duel.KindTally("prediction", predicted)
            title = (f"PREDICTION, not a measurement: the model puts {FIRST} and {SECOND} "
                     f"{pct_abs(duel.PREDICTION_SAME_WITHIN)} apart on every target machine at "
                     f"{duel.PREDICTION_CPUS} CPUs in {len(predicted) - len(t.level)} of "
                     f"{plural(len(predicted), 'case')}")
        drawn = charts.redraw(chart.chart, self.folder / "scaling", SLIDE_STYLE, title="")
        return Page(title, [Picture([self.picture(drawn)],
                                    [chart.caption.split(":")[0] + ": predicted; dotted: "
                                     "the target machines' band"],
                                    text_px=CHART_PX)], self.footer)

    def scaling_chart(self, predicted: list[duel.Entry]) -> document.ChartBlock | None:
        """The report's scaling chart of the case where the kernels' predictions spread
        the most (the one that says most about the model)."""
        found: list[document.ChartBlock] = []
        inside = False
        for b in self.blocks:
            if isinstance(b, document.Heading) and b.level <= 2:
                inside = b.level == 2 and b.text.startswith(SCALING_HEADING)
            elif inside and isinstance(b, (document.ChartBlock, document.ChartRow)):
                found += b.items if isinstance(b, document.ChartRow) else [b]
        if not found:
            return None
        spread = {}
        for e in predicted:
            values = [s.mean for s in e.figures.values()]
            spread[e.case.label] = max(values) / min(values) if min(values) > 0 else 0
        best = max(spread, key=lambda label: spread[label]) if spread else None
        return next((c for c in found if best and c.caption.startswith(best + ":")), found[0])

    def record(self) -> Page:
        r = self.report
        rows = r.record_rows(deck=True)
        if not rows:
            return self.missing("The record")
        designs = (FIRST, SECOND)
        reports = sum(v for (k, _, _), v in evidence.lockdep_counts(r.rows).items()
                      if k in designs)
        reports += sum(n for (k, _, _), kinds in evidence.kernel_reports(r.rows, "sanitize")
                       .items() if k in designs for n in kinds.values())
        reports += records_section.report_count(r.records, designs)
        violations = sum(len(r.conformance.get(k, {}).get("violations", [])) for k in designs)
        short = [[row[0].split(":")[-1].strip() if row[0].startswith("code")
                  else row[0].split(":")[0], *row[1:]] for row in rows]
        return Page(f"Record: {plural(reports, 'kernel report')} and "
                    f"{plural(violations, 'lock-order violation')} in either design; they "
                    "differ in code", [Grid(["", FIRST, SECOND], short, size=26)], self.footer)

    def change(self) -> Page:
        return Page("What would change the answer", [Bullets(self.changers(), size=30)],
                    self.footer)

    def changers(self) -> list[str]:
        """What this run could not settle, from its own gaps."""
        predicted = self.entries("prediction")
        apart = [e for e in predicted if e.ahead in (FIRST, SECOND)]
        items = [f"A host with many cores and KVM: contention beyond "
                 f"{self.report.manifest['host']['cpus']} CPUs is only predicted here"
                 + (f" (the model puts the designs apart in {len(apart)} of "
                    f"{plural(len(predicted), 'case')}, a prediction)" if predicted else "")]
        counted = {c for cpus in {r.cpus for r in self.report.rows if r.flavour == "debug"}
                   for (k, _, c) in evidence.retries(self.report.rows, cpus) if k == SECOND}
        fired = {name for e in self.entries("retries") for name, _ in e.counters.get(SECOND, [])}
        loops = {c for c in counted if retry_counters.describe(c, SECOND).kind == "trylock-retry"}
        silent = sorted(loops - fired)
        if silent:
            items.append(f"Workloads that make {SECOND}'s trylock loops fail: "
                         f"{len(silent)} of its {plural(len(loops), 'trylock-retry counter')} "
                         f"never fired here ({', '.join(silent)})")
        largest = duel_section._largest(self.ctx)
        if "counter" in largest:
            name = largest.split("counter ")[1].split()[0]
            items.append(f"{SECOND} without its synchronous wait ({name}): its one large "
                         "measured loss")
        for c in self.ctx.flagged[:1]:
            items.append(f"The cause of {c.kernel}'s TCG timing lead over {c.against}, found "
                         "and removed")
        unmeasured = [e for e in self.entries("icount") if e.ahead == "?"
                      and "never measured" in e.note]
        stalled = [e for e in self.entries("icount") if "stalled" in e.note]
        if stalled:
            items.append(f"Reruns of the stalled -icount boots "
                         f"({plural(len(stalled), 'case')} where a boot of its own stalled)")
        if unmeasured:
            items.append(f"An -icount rerun spread for the {plural(len(unmeasured), 'case')} "
                         "where none was measured")
        return items

    def pages(self) -> list[Page]:
        return [self.question(), self.answer(), self.orders(), self.traffic(),
                self.sections(), self.retries(), self.single_thread(), self.timed(),
                self.artefact(), self.scaling(), self.record(), self.change()]


def write(layout: Layout, run_dir: Path, baseline: str | None = None) -> Path:
    """RUN_DIR/slides.pdf from a run folder (its pages and charts under RUN_DIR/slides/)."""
    deck = Deck(layout, run_dir, baseline)
    pages = deck.pages()
    if len(pages) > MAX_SLIDES:
        raise DeckError(f"{len(pages)} slides: a 15-minute slot takes at most {MAX_SLIDES}")
    problems = [f"slide {n} ({p.title!r}): {d}" for n, p in enumerate(pages, 1)
                for d in deck_text.defects(page_text(p), deck.report_text)]
    if problems:
        raise DeckError("the deck says what a reader would catch:\n" + "\n".join(problems))
    target = run_dir / "slides.pdf"
    created = datetime.strptime(deck.report.manifest["created"], "%Y-%m-%dT%H:%M:%S%z")
    write_pdf(pages, deck.folder, target, int(created.timestamp()))
    (deck.folder / "titles.json").write_text(json.dumps([p.title for p in pages], indent=1)
                                             + "\n")
    return target

