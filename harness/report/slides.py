"""The slide deck of a run: RUN_DIR/slides.pdf, at most 12 slides for a 15-minute slot.

One message per slide, as its title, computed from the run like every
number on it; charts drawn again for the slide's size with large type.
The order: the question, the two designs, the evidence at a glance, the
exact lock cost, the single-thread cost, the scaling prediction (a slide
that says "not in this run" when the run has none), lockdep and sanitizers,
the cost in code, how the -icount verdicts fare on a rerun, the verdict and
the caveats.

The scaling prediction comes from the report: a level-2 section whose
heading starts with "Scaling prediction" lends its first chart and first
paragraph to the slide.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

from harness.analysis import evidence
from harness.analysis.scaling_inputs import HANDOFF_BAND, HANDOFF_NS
from harness.layout import Layout, slug
from harness.report import (charts, code_cost, code_cost_section, document, run_inputs,
                            scaling_section)
from harness.report.svg_pages import Bullets, Grid, Page, Picture, Text, SMALL_PX, write_pdf

MAX_SLIDES = 12
# The two designs of the duel; mainline and base are the references they are held against.
DESIGNS = ("chinner", "piggin")
# The -icount table's rows that stay readable on a projector; cases where no
# kernel is apart are folded into one line beyond it.
ICOUNT_ROWS = 14
SLIDE_STYLE = charts.Style(font="DejaVu Sans,22", size=(1480, 600), line_width=4)
SCALING_HEADING = "Scaling prediction"
# Column names short enough for large type.
# A workload whose -icount rate repeats this closely (CoV) is called tight on the slide.
TIGHT = 0.001
SHORT = {"exact": "locks/op", "icount": "-icount", "tcg": "TCG", "scaling": "scaling"}
RED, GREEN = "#b2182b", "#2e7d32"


class DeckError(Exception):
    pass


class Deck:
    def __init__(self, layout: Layout, run_dir: Path, baseline: str | None) -> None:
        self.report = document.ReportBuilder(layout, run_dir, baseline)
        self.blocks = self.report.build()  # the report's own sections, for the scaling slide
        self.run_dir = run_dir
        self.folder = run_dir / "slides"
        shutil.rmtree(self.folder, ignore_errors=True)
        self.folder.mkdir()
        r = self.report
        self.verdicts = evidence.verdicts(r.rows, r.baseline, r.kernels, r.spread)
        self.tallies = evidence.tallies(self.verdicts)
        self.footer = (f"inode-duel · run {run_dir.name} · {r.manifest['created'][:10]} · "
                       f"baseline {r.baseline}")

    # -- helpers --------------------------------------------------------------------------

    def picture(self, chart: charts.Chart) -> Path:
        """A chart's SVG copied beside the pages (librsvg loads only files beside them)."""
        target = self.folder / chart.svg.name
        if chart.svg.parent != self.folder:
            shutil.copy2(chart.svg, target)
        return target

    def tally(self, kernel: str, kind: str, cpus: int | None = None) -> evidence.Tally | None:
        for t in self.tallies:
            if t.kernel == kernel and t.evidence == kind and (cpus is None or t.cpus == cpus):
                return t
        return None

    def designs(self) -> list[str]:
        return [k for k in DESIGNS if k in self.report.kernels]

    def label(self, case: evidence.Case) -> str:
        """A case named short enough for a slide's axis: the phase only where the workload
        has several."""
        phases = {c.phase for c in evidence.cases(self.report.rows) if c.workload == case.workload}
        return f"{case.workload} {case.phase} {case.fs}" if len(phases) > 1 else \
            f"{case.workload} {case.fs}"

    @staticmethod
    def span(changes: list[float]) -> str:
        low, high = min(changes), max(changes)
        return document.pct(low) if low == high else \
            f"{document.pct(low)} to {document.pct(high)}"

    # -- slides ---------------------------------------------------------------------------

    def question(self) -> Page:
        r, m = self.report, self.report.manifest
        versions = ", ".join(sorted({k["package_version"] for k in m["kernels"].values()}))
        counts = {k: len([p for p in m["kernels"][k]["patches"] if p["series"] == k])
                  for k in r.kernels if k in m["kernels"] and k != "mainline"}
        built = "; ".join(f"{k}: {n} patches" for k, n in counts.items())
        return Page("Which way to break up the global inode_lock?", [
            Bullets([
                "Nick Piggin (2010): i_lock protects all of an inode's cache state; walkers "
                "that hold a list lock trylock i_lock and retry",
                "Dave Chinner (2010, merged in 2.6.39): i_lock innermost; code that needs an "
                "outer lock drops i_lock, takes it, re-takes i_lock and re-checks",
                "Both rebuilt as patch series on Debian's linux-source-6.1, with the same data "
                "structures, so only the locking model differs",
            ]),
            Text(f"This run: {', '.join(r.kernels)} ({built}); linux-source {versions}; "
                 f"{len(document.boots_of(m))} boots under {m['accel'].upper()} on a "
                 f"{m['host']['cpus']}-core host.", size=26, colour="#444444"),
        ], self.footer)

    def two_designs(self) -> Page:
        r = self.report
        designs = [k for k in self.designs() if r.conformance.get(k, {}).get("edges")]
        if not designs:
            return Page("The two designs: no lock-order graph in this run", [
                Text("This run has no debug boots of chinner or piggin, so lockdep recorded "
                     "no lock order to draw.")], self.footer)
        phrases, pictures = [], []
        for k in designs:
            info = r.conformance[k]
            source = run_inputs.lock_order(r.layout, r.run_dir, k, info.get("lock_order_file"))
            observed = {(e[2], e[3]) for e in info["edges"]}
            counts: dict[tuple[str, str], int] = {}
            for e in info["edges"]:
                counts[e[2], e[3]] = counts.get((e[2], e[3]), 0) + 1
            seen = {role for e in observed for role in e}
            # Edges of locks this kernel no longer has (bisection points only) stay off the
            # slide: they are not part of the design shown.
            allowed = {e for e in (source.order.allowed if source.order else ()) if set(e) <= seen}
            outer = sorted(a for a, b in allowed if b == "i_lock")
            inner = sorted(b for a, b in allowed if a == "i_lock")
            phrases.append(f"{k}: {', '.join(outer)}{' → ' if outer else ''}i_lock"
                           f"{' → ' if inner else ''}{', '.join(inner)}")
            chart = charts.lockorder_graph(self.folder / f"lockorder-{k}", k, observed, allowed,
                                           counts)
            pictures.append(self.picture(chart))
        return Page("; ".join(phrases), [
            Picture(pictures, designs),
            Text("Lock order, outer → inner. Solid: taken in this order under lockdep in this run (label: how many class "
                 "pairs) and allowed by the series' lock-order file; dashed: allowed, not seen; "
                 "red: seen but not allowed.", size=SMALL_PX + 2, colour="#555555"),
        ], self.footer)

    def glance(self) -> Page:
        r = self.report
        columns = sorted({(t.evidence, t.cpus) for t in self.tallies},
                         key=lambda e: (list(document.EVIDENCE_SHORT).index(e[0]), e[1]))
        header = ["kernel"] + [SHORT[kind] + ("" if kind in ("exact", "icount") else
                                              f", {cpus} vCPU") for kind, cpus in columns]
        rows, emphasis, worse_total = [], {}, {}
        for kernel in [k for k in r.kernels if k != r.baseline]:
            row = [kernel]
            for kind, cpus in columns:
                t = self.tally(kernel, kind, cpus)
                if t is None:
                    row.append("")
                    continue
                row.append(f"{len(t.better)} / {len(t.even) + t.unclaimed} / {len(t.worse)}")
                if t.worse:
                    emphasis[len(rows), len(row) - 1] = RED
                elif t.better:
                    emphasis[len(rows), len(row) - 1] = GREEN
                worse_total[kernel] = worse_total.get(kernel, 0) + len(t.worse)
            rows.append(row)
        order = [k for k in DESIGNS if k in worse_total] + \
            [k for k in worse_total if k not in DESIGNS]
        title = f"Against {r.baseline}: " + "; ".join(
            f"{k} never worse" if not worse_total[k] else
            f"{k} worse in {worse_total[k]} case{'s' if worse_total[k] != 1 else ''}"
            for k in order)
        return Page(title, [
            Text("Workload cases where each kernel is better / the same or inside the noise / "
                 "worse:", size=28),
            Grid(header, rows, size=34, emphasis=emphasis),
            Text("Exact lock counts: any difference is real. -icount and TCG: only outside the "
                 "run's 95% intervals and, for -icount, the measured rerun spread. Red: worse "
                 "somewhere; green: better somewhere.", size=SMALL_PX + 2, colour="#555555"),
        ], self.footer)

    def exact_cost(self) -> Page:
        r = self.report
        exact = [v for v in self.verdicts if v.evidence == "exact"]
        if not exact:
            return Page("Exact lock cost: no debug boots in this run", [
                Text("Lock acquisitions per operation come from the debug kernels' lock_stat; "
                     "this run has none.")], self.footer)
        values = {(self.label(v.case), k): s.mean for v in exact for k, s in v.summaries.items()}
        chart = charts.clustered_bars(self.folder / "exact", "", [self.label(v.case) for v in exact],
                                      r.kernels, [("icache locks / op", values)], r.kernels,
                                      style=SLIDE_STYLE)
        phrases, others = [], []
        for k in [k for k in r.kernels if k != r.baseline]:
            t = self.tally(k, "exact")
            if t is None:
                continue
            n = len(t.better) + len(t.even) + len(t.worse)
            if t.worse:
                phrase = f"{k} more in {len(t.worse)} of {n} ({self.span(t.worse)})"
            elif t.better:
                phrase = f"{k} fewer in {len(t.better)} of {n} ({self.span(t.better)})"
            else:
                phrase = f"{k} the same in all {n}"
            (phrases if k in DESIGNS else others).append(phrase)
        return Page("Icache locks per operation: " + "; ".join(phrases), [
            Picture([self.picture(chart)],
                    [f"exact lock_stat counts, debug kernels at {exact[0].cpus} vCPU; lower is "
                     f"better. Against {r.baseline}: " + "; ".join(others or phrases)])],
                    self.footer)

    def single_thread(self) -> Page:
        r = self.report
        icount = [v for v in self.verdicts if v.evidence == "icount"]
        if not icount:
            return Page("Single-thread cost: no -icount boots in this run", [
                Text("-icount boots (1 vCPU, emulated time) measure the instructions each "
                     "kernel spends per operation; this run has none.")], self.footer)
        others = [k for k in r.kernels if k != r.baseline]
        rows, emphasis = [], {}
        unclaimed = [v for v in icount
                     if all(v.outcome(k) not in ("better", "worse") for k in others)]
        folded = unclaimed[max(0, ICOUNT_ROWS - (len(icount) - len(unclaimed))):]
        for v in icount:
            if v in folded:
                continue
            row = [self.label(v.case)]
            floor = None
            for k in others:
                c = v.comparison(k)
                if c is None:
                    row.append("")
                    continue
                outcome = v.outcome(k)
                row.append(document.pct(c.change) + (" ✓" if outcome in ("better", "worse")
                                                     else " ≈"))
                if outcome == "worse":
                    emphasis[len(rows), len(row) - 1] = RED
                elif outcome == "better":
                    emphasis[len(rows), len(row) - 1] = GREEN
                floor = v.min_effect(c) if floor is None else floor
            row.append("not measured" if floor is None else f"{floor * 100:.2f}%")
            rows.append(row)
        phrases, rest = [], []
        for k in others:
            t = self.tally(k, "icount")
            if t is None:
                continue
            claims = ([f"slower in {len(t.worse)} ({self.span(t.worse)})"] if t.worse else []) \
                + ([f"faster in {len(t.better)} ({self.span(t.better)})"] if t.better else [])
            phrase = f"{k} " + (" and ".join(claims) if claims else "never apart")
            (phrases if k in DESIGNS else rest).append(phrase)
        return Page("Single-thread cost (-icount): " + "; ".join(phrases), [
            Grid(["workload", *others, "smallest claimable"], rows, size=24,
                 emphasis=emphasis),
            Text(f"Change of operations per emulated second at 1 vCPU against {r.baseline}. "
                 "✓: outside the run's intervals and the measured rerun spread; ≈: inside. "
                 + (f"{len(folded)} more cases where no kernel is apart are in the report "
                    f"({', '.join(self.label(v.case) for v in folded)}). " if folded else "")
                 + "; ".join(rest), size=SMALL_PX, colour="#555555"),
        ], self.footer)

    def scaling(self) -> Page:
        # The first "Scaling prediction" section of the report that has a chart:
        # a section that could predict nothing has none.
        sections: list[list] = []
        for b in self.blocks:
            if isinstance(b, document.Heading) and b.level <= 2:
                if b.level == 2 and b.text.startswith(SCALING_HEADING):
                    sections.append([None, None])
                elif sections and sections[-1] is not None:
                    sections.append(None)
                continue
            if not sections or sections[-1] is None:
                continue
            current = sections[-1]
            if current[0] is None and isinstance(b, (document.ChartBlock, document.ChartRow)):
                current[0] = b if isinstance(b, document.ChartBlock) else (b.items or [None])[0]
            if current[1] is None and isinstance(b, document.Para):
                current[1] = b.text
        chart, text = next((c for c in sections if c and c[0] is not None), (None, None))
        if chart is None:
            cores = self.report.manifest["host"]["cpus"]
            return Page("Scaling prediction: not in this run", [
                Text("This run carries no scaling prediction, so this slide shows none "
                     f"rather than a guess. The TCG throughput measured on this {cores}-core "
                     "host cannot show how the designs scale; see the noise table of the "
                     "report.", size=30)], self.footer)
        parts = []
        if text:
            # The report explains the model; the slide keeps what was fed to it.
            plain = text.replace("**", "").replace("`", "")
            listed = plain.partition(scaling_section.INPUTS_LEAD)[2].rstrip(".")
            inputs = listed.partition("; " + scaling_section.FALLBACK_LEAD)[0]
            parts.append(Text(
                "Every CPU runs the workload back to back and queues on each shared icache "
                "lock as often as the debug kernel counted, for its critical section plus a "
                f"hand-off of {HANDOFF_NS:g} ns (shaded: {HANDOFF_BAND[0]:g}-"
                f"{HANDOFF_BAND[1]:g} ns). Inputs: {inputs}.", size=26))
        if chart:
            parts.append(Picture([self.picture(chart.chart)],
                                 [chart.caption.split(". ")[0]]))
        return Page(SCALING_HEADING + " (a model's prediction, not a measurement)", parts,
                    self.footer)

    def lockdep(self) -> Page:
        r, m = self.report, self.report.manifest
        counts = evidence.lockdep_counts(r.rows)
        debug_boots = {}
        for b in document.boots_of(m):
            name = b["directory"].split("/")[-1]
            for k in r.kernels:
                if f"-{slug(k)}-debug-" in f"-{name}":
                    debug_boots[k] = debug_boots.get(k, 0) + 1
        rows, total_reports, total_violations = [], 0, 0
        for k in r.kernels:
            reports = sum(v for (kk, _, _), v in counts.items() if kk == k)
            info = r.conformance.get(k, {})
            violations = len(info.get("violations", []))
            total_reports += reports
            total_violations += violations
            rows.append([k, str(debug_boots.get(k, 0)), str(reports),
                         str(len(info.get("edges", []))), str(violations)])
        flavours = m["matrix"].get("flavours", [])
        sanitizers = [f for f in flavours if f not in ("perf", "debug")]
        kinds = sorted({rep["kind"] for b in document.boots_of(m) for rep in b["reports"]})
        title = (f"Lockdep: {total_reports} report{'s' if total_reports != 1 else ''} and "
                 f"{total_violations} lock-order violation{'s' if total_violations != 1 else ''}"
                 f" in {sum(debug_boots.values())} debug boots")
        return Page(title, [
            Grid(["kernel", "debug boots", "lockdep reports", "icache edges seen",
                  "not allowed"], rows, size=30,
                 emphasis={(i, c): RED for i, row in enumerate(rows) for c in (2, 4)
                           if row[c] != "0"}),
            Text("Sanitizers: " + (", ".join(sanitizers) + " boots in this run"
                                   if sanitizers else "no sanitizer flavour in this run")
                 + ". Kernel reports of any kind in any boot: "
                 + (", ".join(kinds) if kinds else "none") + ".", size=28),
        ], self.footer)

    def code(self) -> Page:
        r = self.report
        costs = code_cost.costs(r.layout, r.run_dir, r.manifest, r.conformance)
        if not costs:
            return Page("Cost in code: no series in this run", [
                Text("The run built no patch series.")], self.footer)
        table = code_cost_section.code_cost_table(costs, code_cost.mainline_lock_doc_lines(r.run_dir))
        keep = ("patches", "lines added", "files outside", "checkpatch", "trylock", "retry",
                "cpu_relax", "locks dropped", "allowed edges", "lines of lock-order",
                "files compiling")
        rows = [row[:-1] for row in table.rows if row[0].startswith(keep)]
        for row in rows:
            row[0] = row[0].replace(" (review)", "").replace(" (tree)", "").replace(
                "files outside fs/inode.c and include/linux/fs.h", "files outside inode.c, fs.h")
            row[0] = row[0].replace("lines of lock-order documentation in fs/inode.c",
                                    "lock-order comment lines, inode.c")
            row[1:] = [cell.split(" (")[0] for cell in row[1:]]
        by_name = {c.name: c for c in costs}
        phrases = []
        for k in [k for k in DESIGNS if k in by_name]:
            trylocks, relax = by_name[k].tree("trylocks"), by_name[k].tree("cpu_relax")
            phrases.append(f"{k} {trylocks:+d} trylocks, {relax:+d} cpu_relax()")
        return Page("Cost in code: " + "; ".join(phrases), [
            Grid(table.header[:-1], rows, size=26),
            Text("Patches to checkpatch: the series' own patches; the rest: the kernel against "
                 "6.1. Proxies pointing at code to read, not verdicts.", size=SMALL_PX,
                 colour="#555555"),
        ], self.footer)

    def rerun(self) -> Page:
        r = self.report
        s = r.spread
        icount = [v for v in self.verdicts if v.evidence == "icount"]
        if s is None or not icount:
            return Page("How sure: no rerun spread measured", [
                Text("The -icount verdicts of this run rest on its own intervals alone.")],
                self.footer)
        rows, claimed, kept = [], 0, 0
        for v in icount:
            for k in v.summaries:
                c = v.comparison(k)
                if c is None:
                    continue
                before, after = v.outcome_by_intervals(k), v.outcome(k)
                claimed += before in ("better", "worse")
                kept += after in ("better", "worse")
                if before != after:
                    floor = v.min_effect(c)
                    rows.append([v.case.label, k, document.pct(c.change),
                                 f"{floor * 100:.2f}%" if floor is not None else "n/a",
                                 f"{before} → within spread"])
        tight = [c for c in s.cases.values() if c.relative_sd <= TIGHT]
        loose = sorted((c for c in s.cases.values() if c.relative_sd > TIGHT),
                       key=lambda c: -c.relative_sd)
        summary = (f"{s.boots} boots of one {s.kernel} image, {s.fresh_disks} of them on fresh "
                   f"ext4 images: {len(tight)} of {len(s.cases)} workloads repeat within "
                   f"{TIGHT * 100:.1f}% (CoV)")
        if loose:
            summary += "; " + ", ".join(f"{c.case} {c.relative_sd * 100:.1f}%" for c in loose)
        return Page(f"-icount verdicts that survive a rerun: {kept} of {claimed}", [
            Text(summary + ".", size=26),
            Grid(["workload", "kernel", "change", "smallest claimable", "verdict"], rows,
                 size=30) if rows else Text("The rerun spread changes no verdict of this run.",
                                            size=28),
        ], self.footer)

    def verdict(self) -> Page:
        """The duel itself: the second design against the first, on every kind of evidence."""
        r = self.report
        designs = self.designs()
        if len(designs) < 2:
            return Page("Verdict: this run does not have both designs", [
                Text(f"Kernels of this run: {', '.join(r.kernels)}.")], self.footer)
        first, second = designs
        duel = evidence.tallies(evidence.verdicts(r.rows, first, designs, r.spread))
        items, favours = [], 0
        for kind in document.EVIDENCE_SHORT:
            ts = [t for t in duel if t.kernel == second and t.evidence == kind]
            if not ts:
                continue
            n = sum(len(t.better) + len(t.even) + len(t.worse) + t.unclaimed for t in ts)
            better, worse = [c for t in ts for c in t.better], [c for t in ts for c in t.worse]
            favours += len(better)
            parts = ([f"worse in {len(worse)} ({self.span(worse)})"] if worse else []) + \
                ([f"better in {len(better)} ({self.span(better)})"] if better else [])
            items.append(f"{document.EVIDENCE_SHORT[kind]}, {n} cases: {second} "
                         + (" and ".join(parts) if parts else "never apart"))
        exact = [t for t in duel if t.kernel == second and t.evidence == "exact"]
        n_exact = sum(len(t.better) + len(t.even) + len(t.worse) for t in exact)
        more = sum(len(t.worse) for t in exact)
        title = (f"Verdict: {first} takes fewer locks than {second} in {more} of "
                 f"{n_exact} workloads" if more else
                 f"Verdict: {first} and {second} take as many locks in all {n_exact} workloads")
        title += (f"; nothing measured favours {second}" if not favours else
                  f"; {second} is better in {favours} cases")
        counts = evidence.lockdep_counts(r.rows)
        reports = {k: sum(v for (kk, _, _), v in counts.items() if kk == k) for k in designs}
        violations = {k: len(r.conformance.get(k, {}).get("violations", [])) for k in designs}
        items.append("lockdep: " + "; ".join(f"{k} {reports[k]} reports, {violations[k]} "
                                             "lock-order violations" for k in designs))
        costs = {c.name: c for c in code_cost.costs(r.layout, r.run_dir, r.manifest,
                                                     r.conformance)}
        if all(k in costs for k in designs):
            items.append("code: " + "; ".join(
                f"{k} +{costs[k].review('added')}/-{costs[k].review('removed')} lines, "
                f"{costs[k].tree('trylocks'):+d} trylocks, {costs[k].tree('cpu_relax'):+d} "
                "cpu_relax()" for k in designs))
        return Page(title, [
            Text(f"{second} against {first}, case by case:", size=28),
            Bullets(items, size=28),
        ], self.footer)

    def caveats(self) -> Page:
        r = self.report
        noise = [cov for _, _, cov, _ in evidence.noise(r.rows)]
        items = [
            f"All boots under {r.manifest['accel'].upper()} (software emulation) on a "
            f"{r.manifest['host']['cpus']}-core host: wall-clock throughput varied "
            + (f"{min(noise) * 100:.0f}-{max(noise) * 100:.0f}% (CoV) between boots"
               if noise else "unmeasured between boots")
            + ", so it separates nothing small; contention at many CPUs is not measured here",
            "Lock hold times come from debug kernels, whose lockdep bookkeeping inflates every "
            "critical section: compare kernels, not production numbers",
            "The inode LRU and the dentry LRU share one lockdep class in 6.1; the lru role "
            "counts both",
            "The -icount rerun spread was measured on one kernel (mainline) and assumed alike "
            "for the others",
            "Counts of code (trylocks, relocks, lines) are proxies that point at code to read",
        ]
        missing = [k for k in r.kernels if r.conformance.get(k, {}).get("lock_order_file")
                   and not run_inputs.lock_order(r.layout, r.run_dir, k, None).from_run]
        if missing:
            items.append("This run kept no copy of its lock-order files: the allowed edges "
                         "drawn come from the checkout")
        return Page("Caveats", [Bullets(items, size=26)], self.footer)

    def pages(self) -> list[Page]:
        return [self.question(), self.two_designs(), self.glance(), self.exact_cost(),
                self.single_thread(), self.scaling(), self.lockdep(), self.code(),
                self.rerun(), self.verdict(), self.caveats()]


def write(layout: Layout, run_dir: Path, baseline: str | None = None) -> Path:
    """RUN_DIR/slides.pdf from a run folder (its pages and charts under RUN_DIR/slides/)."""
    deck = Deck(layout, run_dir, baseline)
    pages = deck.pages()
    if len(pages) > MAX_SLIDES:
        raise DeckError(f"{len(pages)} slides: a 15-minute slot takes at most {MAX_SLIDES}")
    target = run_dir / "slides.pdf"
    created = datetime.strptime(deck.report.manifest["created"], "%Y-%m-%dT%H:%M:%S%z")
    write_pdf(pages, deck.folder, target, int(created.timestamp()))
    (deck.folder / "titles.json").write_text(json.dumps([p.title for p in pages], indent=1)
                                             + "\n")
    return target

