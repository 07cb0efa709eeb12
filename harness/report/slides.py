"""The slide deck of a run: RUN_DIR/slides.pdf, at most 12 slides for a 15-minute slot.

Built around the answer to the question the project exists for, chinner
against piggin: the question, the designs and the pairs; the answer, per
pair and vCPU count with its reach; then one message per slide, each title
computed from the run like every number on it (the lock orders, where the
exact lock traffic differs, the critical sections, retries, single-thread
cost, the largest timed difference per vCPU count boot by boot, the boot
pairs per vCPU count and the sign flip, the model's prediction, the
record); last, what would change the answer. Every figure on a slide is one the report
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

from harness.analysis import duel, evidence, retry_counters, stats
from harness.analysis.duel import FIRST, SECOND
from harness.layout import Layout
from harness.report import (charts, deck_text, document, duel_section, record_table,
                            records_section, run_inputs)
from harness.report.blocks import plural
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


# The duel record's code rows, named short enough for a column per kernel.
DECK_CODE_LABELS = {"code: patches of its own": "patches",
                    "code: lines added / removed": "lines + / -",
                    "code: files beyond fs/inode.c and fs.h": "other files",
                    "retry machinery: trylock sites, retry jumps, cpu_relax()": "retry code"}


class DeckError(Exception):
    pass


class Deck:
    def __init__(self, layout: Layout, run_dir: Path, baseline: str | None) -> None:
        self.run_dir = run_dir
        self.folder = run_dir / "slides"
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir()
        self.report = document.ReportBuilder(layout, run_dir, baseline,
                                             charts_dir=self.folder / "report-charts")
        self.blocks = self.report.build()  # the report's own sections
        self.report_text = document.render_markdown(self.blocks, run_dir)
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

    def pairs_text(self) -> str:
        """Which pairs this run has, each with what is equal between its kernels."""
        found = self.report.duel_contexts()
        return " ".join(
            (f"{p.text[0].upper()}{p.text[1:]}." if p.name in found else
             f"The {p.name} pair ({p.first} against {p.second}) is not in this run.")
            for p in duel.ALL_PAIRS)

    def question(self) -> Page:
        r, m = self.report, self.report.manifest
        counts = {k: len([p for p in m["kernels"][k]["patches"] if p["series"] == k])
                  for k in r.kernels if k in m["kernels"] and k != "mainline"}
        fixes = run_inputs.stable_fixes(m)
        return Page(f"{FIRST} or {SECOND}: how to break up the global inode_lock?", [
            Bullets(([
                f"base ({plural(counts['base'], 'patch', 'patches')}): 2.6.36 "
                "re-created on 6.1, one global inode_cache_lock around the whole inode cache"]
                if "base" in counts else []) + [
                f"{FIRST} (Dave Chinner: 2.6.39's lock order, then per-CPU sb lists and a "
                f"per-bucket hash as piggin's; {plural(counts.get(FIRST, 0), 'patch', 'patches')}"
                "): i_lock innermost, "
                "atomic i_count; code that needs an outer lock drops i_lock, takes it, "
                "re-takes i_lock and re-checks",
                f"{SECOND} (Nick Piggin, 2010; {plural(counts.get(SECOND, 0), 'patch', 'patches')}"
                "): i_lock protects all of an inode's cache state; list locks nest inside it, "
                "walkers trylock and retry; i_refs a plain count under i_lock; sb lists walked "
                "under RCU",
                "mainline 6.1" + (f" plus {plural(len(fixes), 'stable fix', 'stable fixes')} "
                                  "every kernel carries" if fixes else "")
                + ": already the first design's lock order, the reference",
            ], size=26 if "base" in counts else 28),
            Text(f"This run: {plural(len(document.boots_of(m)), 'boot')} under "
                 f"{m['accel'].upper()} on a {m['host']['cpus']}-core host. "
                 + self.pairs_text(), size=SMALL_PX, colour="#444444"),
        ], self.footer)

    def answer(self) -> Page:
        """Which pair, which vCPU counts, which reach and the answer, per pair and count:
        the first screen of the report, on a slide; no tally of mechanisms (a contention
        count whose control fails must not be counted here)."""
        contexts = self.report.duel_contexts()
        if not contexts:
            return self.missing("The answer")
        verdicts = {name: duel_section.count_verdicts(ctx) for name, ctx in contexts.items()}
        kinds = [k for k in duel_section.COUNTED
                 if any(k in c.reach for found in verdicts.values() for c in found)]
        rows = []
        for name, found in verdicts.items():
            for c in found:
                rows.append([name, str(c.cpus), duel_section._reach_values(c.reach, kinds),
                             f"{len(c.first)} / {len(c.second)} of {c.chance.tests}",
                             f"{c.chance.p:.2g} ({c.chance.least_p:.2g})", c.text])
        cores = self.report.manifest["host"]["cpus"]
        notes = [self.pairs_text()]
        flip = self.ctx.flip
        if flip and flip.status not in ("one count", "no flip"):
            notes.append(f"Sign flip between vCPU counts ({SECOND} against {FIRST}, boot "
                         f"pairs): {flip.status}; " + ", ".join(
                             f"{change_text(x.ratio)} at {x.cpus} vCPU" + ("s" if x.cpus > 1
                                                                          else "")
                             for x in flip.leans))
        notes.append("Reach (" + ", ".join(duel_section.REACH[k] for k in kinds) + "): the "
                     "median smallest difference its tests could show. Claims: "
                     "Chinner's design ahead / Piggin's, of the cost tests. p: the boots "
                     "relabelled in every way (one boot's tests are not independent).")
        isolated = contexts.get(duel.ISOLATED.name)
        said = duel_section.verdict(isolated) if isolated else "no isolated pair"
        return Page(f"Answer (isolated pair): {said}; beyond {cores} CPUs it cannot say", [
            Grid(["pair", "vCPUs", "reach", "claims", "p (least)", "answer"], rows, size=26),
            Bullets(notes, size=SMALL_PX),
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
        """Exact acquisitions per operation only: counts every debug boot repeats, at the
        first debug vCPU count; a count that varies from boot to boot (failed trylocks at
        4 vCPUs, a background loop) is measured, not exact, and is left to the report."""
        every = self.entries("shared") + self.entries("per_inode")
        shared = [e for e in self.entries("shared") if e.exact]
        own = [e for e in self.entries("per_inode") if e.exact]
        varied = len({e.case for e in every if not e.exact} - {e.case for e in shared + own})
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
        left = [f"{plural(len(tiny), 'case')} below {evidence.EXACT_FLOOR:g}/op"] if tiny else []
        left += [f"{varied} that vary"] if varied else []
        return Page(title, [Picture([self.picture(chart)], [
            f"exact acquisitions/op at {shared[0].detail} (debug)"
            + (f"; not drawn: {', '.join(left)}" if left else "")], text_px=CHART_PX)],
            self.footer)

    def sections(self) -> Page:
        found = self.entries("cs")
        if not found:
            return self.missing("Critical sections")
        groups = [self.label(e.case) for e in found]
        values = {(self.label(e.case), k): e.figures[k].mean for e in found
                  for k in (FIRST, SECOND) if k in e.figures}
        # A log axis: one case holds its locks ten times longer than the rest, which a
        # linear axis would flatten to nothing.
        chart = charts.clustered_bars(self.folder / "sections", "", groups, [FIRST, SECOND],
                                      [("instructions (log)", values)],
                                      [FIRST, SECOND], style=SLIDE_STYLE,
                                      colours=DESIGN_COLOURS, log_y=True)
        shorter = [e for e in found if e.ahead == SECOND]
        longer = [e for e in found if e.ahead == FIRST]
        title = (f"{SECOND}'s shared critical sections are shorter in {len(shorter)} of "
                 f"{plural(len(found), 'case')}" + (f" ({span_text([e.ratio for e in shorter])})"
                                           if shorter else "")
                 + (f", longer in {len(longer)}" if longer else ""))
        return Page(title, [Picture([self.picture(chart)], [
            "instructions per shared-lock hold, taken to released (tcg-cs, perf kernels)"],
            text_px=CHART_PX)], self.footer)

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
        if len(rows) > 9:
            # Too many counters for a readable row each: one row per design and kind
            # (the report names every counter).
            grouped: dict[tuple[str, str], list[list[float]]] = {}
            for (design, name), values in sorted(fired.items()):
                kind = retry_counters.describe(name, design).kind
                grouped.setdefault((design, kind), []).append(values)
            rows = [[f"{design} ({plural(len(found), 'counter')})", kind,
                     plural(sum(len(v) for v in found), "case"),
                     f"{max(max(v) for v in found):.2g}"]
                    for (design, kind), found in grouped.items()]
        counters = {d: sum(1 for (k, _) in fired if k == d) for d in (FIRST, SECOND)}
        # The title counts the counters (naming each overflowed once both fired); the
        # table names them, or, when grouped, the report does.
        title = "Retries: counters fired: " + ", ".join(
            f"{d} {counters[d]}" for d in (FIRST, SECOND)) + " (kinds differ: not compared)"
        kinds = [f"{kind}: {retry_counters.KINDS[kind]}" for kind in sorted({r[1] for r in rows})]
        # Many counters leave no room for a bullet per kind: the kinds run on in one text.
        crowded = len(rows) + len(kinds) > 10
        return Page(title, [
            Grid(["counter", "kind", "fired in", "most per op"], rows,
                 size=24 if crowded else 30),
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
        """The largest timed difference per vCPU count, every boot a dot."""
        found = duel_section.largest_per_count(self.ctx)
        groups, series = duel_section.dots_series(self.ctx, self.report.kernels, short=True)
        if not groups:
            return Page("Timed throughput: not in this run", [
                Text(f"This run timed no case on both {FIRST} and {SECOND}.")], self.footer)
        chart = charts.boot_dots(self.folder / "timed", "", groups,
                                 f"ratio to {FIRST}", series,
                                 self.report.kernels, style=SHORT_STYLE, marks={1.0: ""})
        title = "Largest timed difference per vCPU count, boot by boot: " + "; ".join(
            f"{SECOND} {change_text(e.ratio, e.low, e.high).split(' (')[0]} at {e.detail} "
            f"({'apart' if e.ahead in (FIRST, SECOND) else 'not apart'})" for e in found)
        note = duel_section._largest(self.ctx).split(". ", 1)[-1]
        return Page(title, [
            Picture([self.picture(chart)], ["a dot per boot: throughput of the cell over "
                                            f"{FIRST}'s geometric mean (TCG, perf kernels)"],
                    text_px=CHART_PX),
            Text(", ".join(f"{e.detail}: {e.case.label}" for e in found)
                 + (". " + note if "fires" in note else ""), size=SMALL_PX, colour="#444444"),
        ], self.footer)

    def flip(self) -> Page:
        """Boot against boot per vCPU count: each round's pair of boots a dot, the
        geometric mean with its interval beside them, and whether the sign flips."""
        flip = self.ctx.flip
        if flip is None or not flip.leans:
            return Page("Boot against boot: no rounds with both designs in this run", [
                Text(f"No timed round booted both {FIRST} and {SECOND}.")], self.footer)
        groups = [f"{x.cpus} vCPU" + ("s" if x.cpus > 1 else "") for x in flip.leans]
        series = {"a round": {g: list(x.ratios) for g, x in zip(groups, flip.leans)}}
        summary = {"geometric mean, 95% interval": {g: (x.ratio, x.low, x.high)
                                                    for g, x in zip(groups, flip.leans)}}
        chart = charts.boot_dots(self.folder / "flip", "", groups, f"{SECOND} / {FIRST}",
                                 series, [], style=SHORT_STYLE, marks={1.0: ""},
                                 summary=summary, colours=[DESIGN_COLOURS[1],
                                                           charts.NEUTRAL[0]])
        status = {"confirmed": "the sign flip is confirmed",
                  "not confirmed": "the sign flip is not confirmed",
                  "no flip": "no sign flip", "one count": "one vCPU count"}[flip.status]
        title = (f"Boot against boot: {SECOND} " + ", ".join(
            f"{change_text(x.ratio)} at {g}" for g, x in zip(groups, flip.leans))
            + f"; {status}")
        rounds = min(x.pairs for x in flip.leans)
        flagged = [c for c in self.ctx.flagged if {c.kernel, c.against} <= {FIRST, SECOND}]
        text = (f"Each dot one round: {SECOND}'s boot over {FIRST}'s, the geometric mean of "
                f"the timed cases both ran; {plural(rounds, 'round')} per count, so the "
                f"sign-flip test cannot go below p = {flip.leans[0].least_p:.2g}.")
        if flagged:
            text += (f" The cross-case check flags {flagged[0].kernel}'s timings against "
                     f"{flagged[0].against}.")
        return Page(title, [
            Picture([self.picture(chart)], [f"{SECOND} / {FIRST} per round (TCG, perf "
                                            "kernels)"], text_px=CHART_PX),
            Text(text, size=SMALL_PX, colour="#444444"),
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
            title = (f"PREDICTION, not a measurement: at {duel.PREDICTION_CPUS} CPUs the "
                     f"model's verdicts are withheld in {len(t.unclaimed)} of "
                     f"{plural(len(predicted), 'case')} (its held-out record falls short)"
                     if t.unclaimed else
                     f"PREDICTION, not a measurement: the sweep's rule puts {FIRST} and "
                     f"{SECOND} apart at {duel.PREDICTION_CPUS} CPUs in "
                     f"{len(t.ahead(FIRST)) + len(t.ahead(SECOND))} of "
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
        # The case that illustrates the title: one the rule puts a design ahead in, else
        # where the pair's own predictions lie furthest apart (never where they coincide).
        shown = [e for e in predicted if e.ahead in (FIRST, SECOND)] or predicted
        spread = {}
        for e in shown:
            a, b = e.figures.get(FIRST), e.figures.get(SECOND)
            if a and b and a.mean > 0 and b.mean > 0:
                spread[e.case.label] = abs(math.log(b.mean / a.mean))
        best = max(spread, key=lambda label: spread[label]) if spread else None
        return next((c for c in found if best and c.caption.startswith(best + ":")), found[0])

    def record(self) -> Page:
        """Every kernel's record, a column each: the checkers, lock order and, for the
        two designs, their code (the report's record table and duel record, short)."""
        r = self.report
        design_rows = r.record_rows(deck=True)
        if not design_rows:
            return self.missing("The record")
        designs = (FIRST, SECOND)
        kernels = r.kernels
        checks = record_table.rows(r.records, r.rows, kernels, r.boots_by_kernel(), short=True)
        order = ["lock order", *[
            f"{len(r.conformance[k].get('violations', []))} of "
            f"{plural(len(r.conformance[k].get('edges', [])), 'edge')}"
            if k in r.conformance else "-"
            for k in kernels]]
        code = [[DECK_CODE_LABELS[row[0]],
                 *[row[1 + designs.index(k)] if k in designs else "-" for k in kernels]]
                for row in design_rows if row[0] in DECK_CODE_LABELS]
        reports = sum(v for (k, _, _), v in evidence.lockdep_counts(r.rows).items()
                      if k in designs)
        reports += sum(n for (k, _, _), kinds in evidence.kernel_reports(r.rows, "sanitize")
                       .items() if k in designs for n in kinds.values())
        reports += records_section.report_count(r.records, designs)
        reports += sum(t.reports for k in designs for t in
                       (r.records.checked("faults", k) if r.records else []))
        own = sum(1 for race in (r.records.races if r.records else [])
                  if race.klass == record_table.SERIES_CLASS and any(
                      race.kernels.get(k) and r.records.checked("kcsan", k) for k in designs))
        violations = sum(len(r.conformance.get(k, {}).get("violations", [])) for k in designs)
        return Page(f"Record: {plural(reports, 'kernel report')}, {plural(own, 'data race')} "
                    f"of their own, {plural(violations, 'lock-order violation')} in either "
                    "design", [Grid(["", *kernels], checks + [order] + code, size=24)],
                    self.footer)

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
        for name, ctx in self.report.duel_contexts().items():
            blind = [c for c in duel_section.count_verdicts(ctx)
                     if c.chance.least_p >= stats.ALPHA]
            if blind:
                items.append(f"More timed rounds of the {name} pair: with "
                             f"{blind[0].chance.boots_text} at "
                             + " and ".join(c.where for c in blind)
                             + ", no count of claims can beat chance")
        shown = [e for e in self.ctx.entries if e.shown]
        if shown:
            items.append(f"Contention claims that count: {duel.MIN_CONTENTION_BOOTS} debug "
                         "boots a kernel and a negative control that holds "
                         f"({plural(len(shown), 'test')} shown here, not counted)")
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
                self.flip(), self.scaling(), self.record(), self.change()]


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

