"""The report of a run: Markdown and HTML, the charts beside them in charts/.

Order: the verdict table first (which design, for which workload, by how
much, how sure, on what evidence), then why (lock figures per operation),
then the charts, lock-order conformance, lockdep reports, the environment
and the caveats. Everything comes from the run folder (tidy.tsv,
manifest.json, lockorder.json); nothing is re-measured.
"""

from __future__ import annotations

import copy
import html
import json
import math
import re
from pathlib import Path

from harness import lockorder
from harness.analysis import evidence, stats
from harness.report import charts, code_cost_section, run_inputs, scaling_section
from harness.report.blocks import (Block, Bullets, ChartBlock, ChartRow, Heading,  # noqa: F401
                                   Para, Table, fmt, outcome_cell, pct)
from harness.run import matrix, tidy
from harness.layout import Layout


def boots_of(manifest: dict) -> list[dict]:
    """Every boot the run's rows come from: measured by it, or reused from earlier runs."""
    return manifest["boots"] + manifest.get("reused_boots", [])


def boots_phrase(manifest: dict) -> str:
    """'54 boots', or '60 boots (5 measured by this run, 55 reused from earlier runs)'."""
    reused = len(manifest.get("reused_boots", []))
    text = f"{len(boots_of(manifest))} boots"
    return text + (f" ({len(manifest['boots'])} measured by this run, {reused} reused from "
                   "earlier runs)" if reused else "")

EVIDENCE_SHORT = {"exact": "lock acquisitions/op (exact)", "icount": "1 vCPU -icount rate",
                  "tcg": "TCG throughput", "scaling": "scaling in one boot"}


def verdict_cells(v: evidence.Verdict, kernels: list[str]) -> list[str]:
    """One cell per kernel: the baseline's value, the others' change against it."""
    cells = []
    for kernel in kernels:
        s = v.summaries.get(kernel)
        if s is None:
            cells.append("")
            continue
        if kernel == v.baseline or v.baseline not in v.summaries:
            spread = "" if v.evidence == "exact" or s.n < 2 else f" ±{fmt(s.half_width, 2)}"
            cells.append(f"{fmt(s.mean)}{spread}")
            continue
        outcome = v.outcome(kernel)
        if v.evidence == "exact":
            mark = " (same)" if outcome == "even" else ""
        else:
            mark = {"unclaimed": " (1 boot)", "even": " ≈"}.get(outcome, " ✓")
        cells.append(f"{pct(v.comparison(kernel).change)}{mark}")
    return cells


def winner_text(v: evidence.Verdict) -> str:
    if len(v.summaries) < 2:
        return "(one kernel)"
    leaders = " = ".join(v.leaders)
    if len(v.leaders) == len(v.summaries):
        return "all the same" if v.evidence == "exact" else f"{leaders} (within noise)"
    if v.decided:
        return f"**{leaders}**"
    return f"{v.winner} (within noise)"


def why_text(rows: list[tidy.Row], v: evidence.Verdict, kernels: list[str]) -> str:
    """The hottest icache lock of each kernel in this case: taken how often, held how long."""
    figures = evidence.lock_figures(rows, v.case, v.cpus)
    parts = []
    for kernel in kernels:
        role, f = evidence.hottest_lock(figures, kernel)
        if role:
            parts.append(f"{kernel}: {role} {fmt(f['acquisitions_per_op'], 2)}/op, "
                         f"held {fmt(f['holdtime_per_op'], 2)} µs/op")
    return "; ".join(parts)


def glance_table(verdicts: list[evidence.Verdict], kernels: list[str]) -> Table | None:
    """Each kernel against the baseline, one row per kind of evidence."""
    order = {k: i for i, k in enumerate(kernels)}
    evidence_order = list(EVIDENCE_SHORT)
    out = []
    for t in sorted(evidence.tallies(verdicts),
                    key=lambda t: (order.get(t.kernel, len(order)),
                                   evidence_order.index(t.evidence), t.cpus)):
        kind = EVIDENCE_SHORT[t.evidence] + (f", {t.cpus} vCPU" if t.evidence != "icount"
                                                 else "")
        even = outcome_cell(t.even) + (f"; {t.unclaimed} with one boot, no claim"
                                       if t.unclaimed else "")
        out.append([t.kernel, kind, outcome_cell(t.better), even, outcome_cell(t.worse)])
    if not out:
        return None
    same = "the same (exact) or inside the noise"
    return Table(["kernel", "evidence", "better: cases (change)", f"{same}: cases (change)",
                  "worse: cases (change)"], out)


def verdict_table(rows: list[tidy.Row], verdicts: list[evidence.Verdict],
                  kernels: list[str]) -> Table:
    header = ["workload", "evidence", *kernels, "winner", "why (hottest icache lock, debug)"]
    out = []
    for v in verdicts:
        kind = EVIDENCE_SHORT[v.evidence] + (f", {v.cpus} vCPU" if v.evidence != "icount"
                                             else "")
        why = why_text(rows, v, kernels) if v.evidence == "exact" else ""
        better = f"{'higher' if v.higher_is_better else 'lower'} is better"
        out.append([v.case.label, f"{kind} ({v.unit + ', ' if v.unit else ''}{better})",
                    *verdict_cells(v, kernels), winner_text(v), why])
    return Table(header, out)


class ReportBuilder:
    def __init__(self, layout: Layout, run_dir: Path, baseline: str | None) -> None:
        self.layout = layout
        self.run_dir = run_dir
        self.rows = tidy.read(run_dir / "tidy.tsv")
        self.manifest = json.loads((run_dir / "manifest.json").read_text())
        conformance = run_dir / "lockorder.json"
        self.conformance = json.loads(conformance.read_text()) if conformance.exists() else {}
        self.kernels = evidence.kernels_in(self.rows, self.manifest["matrix"]["kernels"])
        self.baseline = baseline if baseline in self.kernels else (
            "mainline" if "mainline" in self.kernels else (self.kernels or ["?"])[0])
        self.requested_baseline = baseline
        self.charts_dir = run_dir / "charts"
        self.charts_dir.mkdir(exist_ok=True)
        self.spread = run_inputs.rerun_spread(layout, run_dir)
        self.chart_prefix = ""  # one per machine when the run has several
        self.blocks: list[Block] = []
        self.scaling = scaling_section.Section(layout, run_dir, self.rows, self.kernels,
                                               self.baseline, self.chart_stem)

    def chart_stem(self, name: str) -> Path:
        return self.charts_dir / re.sub(r"[^A-Za-z0-9_.-]+", "_", self.chart_prefix + name)

    def machine_label(self, machine: str) -> str:
        info = self.manifest.get("machines", {}).get(machine)
        if not info:
            return f"machine {machine or '(not recorded)'}"
        return (f"machine {machine}: {info['cpu_model']}, {info['cores']} cores, "
                f"{info['accel'].upper()} ({', '.join(info['hosts'])})")

    def for_machine(self, machine: str) -> ReportBuilder:
        """The same report, on the rows of one machine only: rows of different
        machines are never averaged together."""
        part = copy.copy(self)
        part.rows = [r for r in self.rows if r.machine == machine]
        part.kernels = evidence.kernels_in(part.rows, self.manifest["matrix"]["kernels"])
        part.chart_prefix = f"{machine}-"
        return part

    # -- sections -----------------------------------------------------------------------

    def build(self) -> list[Block]:
        m = self.manifest
        b = self.blocks
        machines = list(dict.fromkeys(r.machine for r in self.rows))
        where = (f"on a {m['host']['cpus']}-core host under **{m['accel'].upper()}**"
                 if len(machines) <= 1 else
                 f"on {len(machines)} kinds of machine, each reported on its own below")
        b.append(Heading(1, f"inode-duel: {' vs '.join(self.kernels)}"))
        b.append(Para(
            f"Run {self.run_dir.name}, {m['created']}: {boots_phrase(m)}; the run took "
            f"{fmt(m['wall_seconds'] / 60, 2)} minutes {where}; baseline **{self.baseline}**"
            + (f" ({self.requested_baseline} was asked for but is not in this run)"
               if self.requested_baseline and self.requested_baseline != self.baseline else "")
            + ". Source: Debian linux-source-6.1 "
            + ", ".join(sorted({k['package_version'] for k in m['kernels'].values()})) + "."))
        if len(machines) <= 1:
            self.measurement_sections()
        else:
            for machine in machines:
                b.append(Heading(1, f"On {self.machine_label(machine)}"))
                self.for_machine(machine).measurement_sections()
        self.environment_section()
        self.caveats_section()
        return b

    def measurement_sections(self) -> None:
        """Everything read from the rows (of one machine)."""
        self.verdict_section()
        self.blocks += self.scaling.blocks()
        self.cases_section()
        self.icount_section()
        self.retries_section()
        self.lockdep_section()
        self.sanitizer_section()
        self.conformance_section()
        self.blocks += code_cost_section.section(self.layout, self.run_dir, self.manifest,
                                                 self.conformance, self.kernels, self.chart_stem)
        self.bisection_section()
        self.noise_section()

    def verdict_section(self) -> None:
        verdicts = evidence.verdicts(self.rows, self.baseline, self.kernels, self.spread)
        self.blocks.append(Heading(2, "Verdict"))
        self.blocks.append(Para(
            "Per workload and evidence: the baseline's value (mean ± half the 95% interval) "
            "and every other kernel's change against it. ✓: the 95% intervals do not overlap "
            "(significant); ≈: the difference is inside the noise; (1 boot): no interval, so "
            "no claim; lock counts are exact, so any difference there is real. The exact "
            "counts and the -icount single-thread "
            "rates carry the verdict on this machine; TCG wall-clock throughput is shown with "
            "its noise and decides only where the intervals separate."))
        if not verdicts:
            self.blocks.append(Para("No measurements in this run."))
            return
        glance = glance_table(verdicts, self.kernels)
        if glance:
            glance.rows += self.scaling.glance_rows()
            self.blocks.append(Para(
                f"At a glance: in how many workload cases each kernel beats "
                f"{self.baseline}, matches it, or loses to it, by kind of evidence, with the "
                f"range of the changes (for lock acquisitions, a negative change is better)."))
            self.blocks.append(glance)
        exact_chart = self.exact_chart(verdicts)
        if exact_chart:
            self.blocks.append(exact_chart)
        if glance or exact_chart:
            self.blocks.append(Para("Case by case:"))
        self.blocks.append(verdict_table(self.rows, verdicts, self.kernels))
        for kind, text in evidence.EVIDENCE.items():
            self.blocks.append(Para(f"*{EVIDENCE_SHORT[kind]}*: {text}."))

    def exact_chart(self, verdicts: list[evidence.Verdict]) -> ChartBlock | None:
        """The exact lock counts of every case in one picture: the sharpest evidence."""
        exact = [v for v in verdicts if v.evidence == "exact"]
        if not exact:
            return None
        values = {(v.case.label, k): s.mean for v in exact for k, s in v.summaries.items()}
        chart = charts.clustered_bars(self.chart_stem("exact-acquisitions"),
                                      "icache lock acquisitions per operation "
                                      "(exact; lower is better)",
                                      [v.case.label for v in exact], self.kernels,
                                      [("acquisitions / op", values)], self.kernels)
        return ChartBlock(chart, f"All icache lock acquisitions per operation, every workload, "
                             f"debug kernels at {exact[0].cpus} vCPU (exact counts)")

    def cases_section(self) -> None:
        self.blocks.append(Heading(2, "Workloads: throughput and lock figures per operation"))
        mode = evidence.plain_mode(self.rows)
        debug_cpus = sorted({r.cpus for r in self.rows if r.flavour == "debug"})
        timed_cpus = sorted({r.cpus for r in self.rows if r.flavour == "perf" and r.mode == mode})
        for case in evidence.cases(self.rows):
            self.blocks.append(Heading(3, case.label))
            figures = ChartRow()
            series: dict[str, list[tuple[float, float, float]]] = {}
            unit = ""
            for cpus in timed_cpus:
                summaries, unit = evidence.throughput(self.rows, case, mode, cpus)
                for kernel, s in summaries.items():
                    series.setdefault(kernel, []).append((cpus, s.mean, s.half_width))
            if series:
                chart = charts.lines_with_errors(
                    self.chart_stem(f"throughput-{case.slug}"), f"{case.label}: throughput",
                    "vCPUs", unit, series, self.kernels)
                figures.items.append(ChartBlock(chart, f"Throughput against vCPUs ({mode.upper()}, "
                                                   "perf kernels), mean and 95% interval"))
            if debug_cpus:
                cpus = debug_cpus[-1]
                lock_chart = self.lock_chart(case, cpus)
                if lock_chart:
                    figures.items.append(lock_chart)
            if figures.items:
                self.blocks.append(figures)
            table = self.lock_table(case, debug_cpus)
            if table:
                self.blocks.append(table)

    def lock_chart(self, case: evidence.Case, cpus: int) -> ChartBlock | None:
        figures = evidence.lock_figures(self.rows, case, cpus)
        if not figures:
            return None
        # A role no kernel took in this case (zeros in the table) gets no empty cluster.
        roles = [r for r in lockorder.ROLES
                 if any(role == r and m == "acquisitions_per_op" and v
                        for (_, role, m), v in figures.items())]
        if not roles:
            return None
        panels = []
        for metric, label in (("acquisitions_per_op", "acquisitions / op"),
                              ("holdtime_per_op", "hold µs / op"),
                              ("contentions_per_op", "contentions / op")):
            panels.append((label, {(role, k): v for (k, role, m), v in figures.items()
                                   if m == metric}))
        kernels = [k for k in self.kernels if any(k == key[0] for key in figures)]
        chart = charts.clustered_bars(self.chart_stem(f"locks-{case.slug}-c{cpus}"),
                                      f"{case.label}: icache locks per operation, {cpus} vCPU",
                                      roles, kernels, panels, self.kernels)
        return ChartBlock(chart, f"Lock acquisitions, hold time and contentions per operation by "
                             f"icache lock, debug kernels at {cpus} vCPU")

    def lock_table(self, case: evidence.Case, debug_cpus: list[int]) -> Table | None:
        out = []
        for cpus in debug_cpus:
            figures = evidence.lock_figures(self.rows, case, cpus)
            for kernel in self.kernels:
                for role in lockorder.ROLES:
                    f = {m: figures.get((kernel, role, m)) for m in evidence.LOCK_METRICS}
                    if f["acquisitions_per_op"] is None:
                        continue
                    out.append([str(cpus), kernel, role, fmt(f["acquisitions_per_op"]),
                                fmt(f["holdtime_per_op"]), fmt(f["contentions_per_op"]),
                                fmt(f["waittime_per_op"])])
        if not out:
            return None
        return Table(["vCPUs", "kernel", "icache lock", "acquisitions/op", "hold µs/op",
                      "contentions/op", "wait µs/op"], out)

    def icount_section(self) -> None:
        cases = evidence.cases(self.rows)
        values: dict[tuple[str, str], float] = {}
        table = []
        for case in cases:
            summaries, unit = evidence.throughput(self.rows, case, "tcg-icount", 1)
            for kernel, s in summaries.items():
                values[case.label, kernel] = s.mean
                table.append([case.label, kernel, f"{fmt(s.mean)} {unit}", str(s.n),
                              "n/a" if math.isnan(s.cov) else f"{s.cov * 100:.2f}%"])
        if not table:
            return
        self.blocks.append(Heading(2, "Single-thread cost: 1 vCPU under -icount"))
        self.blocks.append(Para(
            "QEMU's -icount counts guest instructions as time, so these rates measure the "
            "instructions each kernel spends per operation, not the host's mood."))
        groups = [c.label for c in cases if any((c.label, k) in values for k in self.kernels)]
        chart = charts.clustered_bars(self.chart_stem("icount"), "Single-thread rate (-icount)",
                                      groups, self.kernels, [("operations / emulated s", values)],
                                      self.kernels)
        self.blocks.append(ChartBlock(chart, "Operations per emulated second at 1 vCPU"))
        self.blocks.append(Table(["workload", "kernel", "rate", "boots", "CoV"], table))
        self.rerun_subsection()

    def rerun_subsection(self) -> None:
        """How the -icount verdicts would fare on a rerun, from the measured spread."""
        self.blocks.append(Heading(3, "Would these verdicts survive a rerun?"))
        s = self.spread
        if s is None:
            self.blocks.append(Para(
                "**No rerun spread of -icount rates was measured for this checkout** "
                f"({run_inputs.CHECKOUT_SPREAD}): the -icount verdicts rest on this run's "
                "own intervals, which with two boots have one degree of freedom. "
                "`python3 -m harness.run.icount_spread` measures it."))
            return
        self.blocks.append(Para(
            f"The same {s.kernel} perf image booted {s.boots} times under -icount at 1 vCPU, "
            f"{s.fresh_disks} of them each on an ext4 image made anew (as a fresh clone's "
            f"run makes its own), {s.measured}, while the host's 1-minute load average was "
            f"{s.host_load[0]:.1f}-{s.host_load[1]:.1f}: {s.source}. "
            "Rerun spread: the coefficient of variation of its rate over all those boots "
            "(beside it, over the boots that shared one ext4 image and over those that each "
            "had a fresh one). A "
            "difference between two kernels counts (✓) only where the run's 95% intervals "
            "separate **and** it exceeds the 95% quantile of what two means of as many boots "
            "differ by on a rerun (the smallest claimable difference below). The spread is "
            "of one kernel; the rule assumes the others' is alike."))
        verdicts = [v for v in evidence.verdicts(self.rows, self.baseline, self.kernels, s)
                    if v.evidence == "icount"]

        def share(sd: float | None) -> str:
            return "n/a" if sd is None else f"{sd * 100:.3f}%"

        rows, claimed, kept = [], 0, 0
        for v in verdicts:
            spread = v.spread
            changed = []
            floor = math.nan
            for kernel in v.summaries:
                c = v.comparison(kernel)
                if c is None:
                    continue
                floor = v.min_effect(c) if spread else math.nan
                before, after = v.outcome_by_intervals(kernel), v.outcome(kernel)
                claimed += before in ("better", "worse")
                kept += after in ("better", "worse")
                if before != after:
                    changed.append(f"{kernel} {pct(c.change)}: {before} → {after}")
            rows.append([v.case.label,
                         f"{spread.relative_sd * 100:.3f}%" if spread else "not measured",
                         share(spread.same_image_sd) if spread else "",
                         share(spread.fresh_image_sd) if spread else "",
                         f"{pct(spread.low)} to {pct(spread.high)}" if spread else "",
                         "n/a" if math.isnan(floor) else f"{floor * 100:.2f}%",
                         "; ".join(changed) or "none"])
        self.blocks.append(Table(["workload", "rerun spread (CoV)", "same ext4 image",
                                  "fresh ext4 images", "range seen",
                                  "smallest claimable difference", "verdicts the spread changes"],
                                 rows))
        self.blocks.append(Para(
            f"By the run's intervals alone {claimed} -icount comparisons with {self.baseline} "
            f"were claimed better or worse; {kept} exceed the rerun spread as well and are "
            "claimed above. The others are marked ≈: a rerun could turn them either way."))

    def retries_section(self) -> None:
        cpus_list = sorted({r.cpus for r in self.rows if r.flavour == "debug"})
        table, values, groups, counters = [], {}, [], set()
        for cpus in cpus_list:
            for (kernel, label, counter), value in sorted(evidence.retries(self.rows, cpus).items()):
                counters.add((kernel, counter))
                group = f"{label} ({cpus} vCPU)"
                values[group, kernel] = values.get((group, kernel), 0.0) + value
                if group not in groups:
                    groups.append(group)
                if value:
                    table.append([str(cpus), label, kernel, counter, fmt(value)])
        self.blocks.append(Heading(2, "The price of the lock order: retries per operation"))
        if not counters:
            self.blocks.append(Para(
                "No kernel in this run exports /proc/icache_retries (trylock retries of "
                "piggin, state re-checks after drop-and-reacquire of chinner)."))
            return
        chart = charts.clustered_bars(self.chart_stem("retries"),
                                      "Retries per operation, all counters of a kernel",
                                      groups, self.kernels, [("retries / op", values)],
                                      self.kernels)
        self.blocks.append(ChartBlock(chart, "Trylock retries (piggin) and re-checks that found "
                                         "the state changed (chinner), per operation, summed "
                                         "over each kernel's counters"))
        never = sorted(f"{k} {c}" for k, c in counters - {(row[2], row[3]) for row in table})
        self.blocks.append(Para(
            f"Counters that stayed at zero in every workload: {', '.join(never)}."
            if never else "Every counter moved in some workload."))
        if table:
            self.blocks.append(Table(["vCPUs", "workload", "kernel", "counter", "per op"],
                                     table))

    def lockdep_section(self) -> None:
        counts = evidence.lockdep_counts(self.rows)
        self.blocks.append(Heading(2, "Lockdep reports"))
        if not counts:
            self.blocks.append(Para("No debug boots in this run."))
            return
        columns = sorted({f"{w}/{fs}" for (_, w, fs) in counts})
        values = {(k, f"{w}/{fs}"): v for (k, w, fs), v in counts.items()}
        kernels = [k for k in self.kernels if any(k == key[0] for key in counts)]
        chart = charts.heatmap(self.chart_stem("lockdep"), "Lockdep reports per kernel and "
                               "workload (debug kernels)", columns, kernels, values)
        self.blocks.append(ChartBlock(chart, "Lockdep reports; after the first, lockdep is off for "
                                         "the rest of that boot, so a count of 1 means at least one"))
        found = [(b["directory"], r) for b in boots_of(self.manifest) for r in b["reports"]]
        if found:
            self.blocks.append(Table(["boot", "kind", "title"],
                                     [[d, r["kind"], r["title"]] for d, r in found]))
        else:
            self.blocks.append(Para("No kernel report (lockdep, RCU, atomic sleep, WARN, BUG, "
                                    "panic) in any boot of this run."))

    def sanitizer_section(self) -> None:
        """What KASAN, list, object and RCU debugging found, per kernel and workload."""
        found = evidence.kernel_reports(self.rows, "sanitize")
        if not found:
            return
        self.blocks.append(Heading(2, "Sanitizer results"))
        self.blocks.append(Para(
            "Kernel reports in the sanitize flavour's boots (lockdep plus KASAN, list "
            "debugging, object and RCU-head debugging, PROVE_RCU), by kernel and workload, "
            "over every vCPU count of this run; 0 means every step ran and nothing was "
            "reported."))
        cases = sorted({(w, fs) for (_, w, fs) in found})
        kernels = [k for k in self.kernels if any(k == key[0] for key in found)]
        table = []
        for workload, fs in cases:
            cells = []
            for kernel in kernels:
                kinds = found.get((kernel, workload, fs))
                cells.append("n/a" if kinds is None else ", ".join(
                    f"{kind} {n}" for kind, n in sorted(kinds.items())) or "0")
            table.append([f"{workload}/{fs}", *cells])
        self.blocks.append(Table(["workload", *kernels], table))

    def conformance_section(self) -> None:
        self.blocks.append(Heading(2, "Lock-order conformance"))
        if not self.conformance:
            self.blocks.append(Para("No debug boots, so no observed lock-order graph."))
            return
        self.blocks.append(Para(
            "Edges among icache lock classes that lockdep recorded (a lock taken while "
            "another was held), mapped to roles, against the series' `lock-order` file. "
            "Red: not allowed by the design; dashed: allowed but not seen in this run."))
        figures, table, from_checkout = ChartRow(), [], []
        for kernel in self.kernels:
            info = self.conformance.get(kernel)
            if not info:
                continue
            observed = {tuple(e) for e in info.get("role_edges", [])} or \
                {(e[2], e[3]) for e in info["edges"]}
            counts: dict[tuple[str, str], int] = {}
            for e in info["edges"]:
                counts[e[2], e[3]] = counts.get((e[2], e[3]), 0) + 1
            allowed: set[tuple[str, str]] = set()
            shown = "no lock-order file"
            if "lock_order_file" in info:
                source = run_inputs.lock_order(self.layout, self.run_dir, kernel,
                                               info["lock_order_file"])
                allowed = set(source.order.allowed) if source.order else set()
                shown = source.shown_as + ("" if source.order else ": missing")
                if not source.from_run:
                    from_checkout.append(kernel)
            chart = charts.lockorder_graph(self.chart_stem(f"lockorder-{kernel}"), kernel,
                                           observed, allowed, counts)
            figures.items.append(ChartBlock(chart, f"{kernel} ({shown})"))
            violations = info.get("violations", [])
            table.append([kernel, str(len(info["edges"])), str(len(violations)),
                          "; ".join(f"{h} -> {t}" for h, t, _, _ in violations[:5])
                          or ("none" if "lock_order_file" in info else info.get("error", ""))])
        self.blocks.append(figures)
        if from_checkout:
            self.blocks.append(Para(
                f"**This run kept no copy of the lock-order files of {', '.join(from_checkout)}**"
                f" (no {run_inputs.LOCK_ORDER_DIR}/ in the run folder): the allowed edges drawn "
                "above come from today's checkout and may differ from those the run was "
                "checked against; the counts of violations below are the run's own."))
        self.blocks.append(Table(["kernel", "icache class edges seen", "not allowed",
                                  "first violations"], table))

    def bisection_section(self) -> None:
        points = [k for k in self.kernels if "@" in k]
        if not points:
            return
        self.blocks.append(Heading(2, "Bisection: each metric against patch number"))
        by_series: dict[str, list[str]] = {}
        for k in points:
            by_series.setdefault(k.split("@")[0], []).append(k)
        for name, kernels in by_series.items():
            kernels.sort(key=lambda k: int(k.split("@")[1]))
            ticks = [k.split("@")[1] for k in kernels]
            for kind, pick in (("exact", "acquisitions/op"), ("icount", "ops/s"),
                               ("tcg", "ops/s")):
                series: dict[str, list[tuple[float, float, float]]] = {}
                for v in evidence.verdicts(self.rows, self.baseline, kernels, self.spread):
                    if v.evidence != kind:
                        continue
                    label = v.case.label + (f" ({v.cpus} vCPU)" if kind == "tcg" else "")
                    for i, k in enumerate(kernels):
                        s = v.summaries.get(k)
                        if s:
                            hw = s.half_width if math.isfinite(s.half_width) else 0.0
                            series.setdefault(label, []).append((i, s.mean, hw))
                if not series:
                    continue
                chart = charts.lines_with_errors(
                    self.chart_stem(f"bisect-{name}-{kind}"),
                    f"{name}: {EVIDENCE_SHORT[kind]} by patch", "patches applied", pick,
                    series, list(series), xtics=ticks)
                self.blocks.append(ChartBlock(chart, f"{name}@K: {evidence.EVIDENCE[kind]}"))

    def noise_section(self) -> None:
        noise = evidence.noise(self.rows)
        if not noise:
            return
        self.blocks.append(Heading(2, "Noise of the timed runs"))
        self.blocks.append(Para(
            "Worst coefficient of variation over kernels for each timed case, and the "
            "smallest difference a comparison with the baseline could detect (the sum of the "
            "two 95% half-widths, relative to the baseline mean). Steps run while other host "
            "processes used more than a quarter of a core were measured again (reruns)."))
        rows = []
        mode = evidence.plain_mode(self.rows)
        for case, cpus, cov, reruns in noise:
            summaries, _ = evidence.throughput(self.rows, case, mode, cpus)
            detectable = [stats.Comparison(s, summaries[self.baseline]).detectable
                          for k, s in summaries.items()
                          if k != self.baseline and self.baseline in summaries]
            rows.append([case.label, str(cpus), f"{cov * 100:.1f}%",
                         f"{max(detectable) * 100:.0f}%" if detectable else "n/a",
                         str(int(reruns))])
        self.blocks.append(Table(["workload", "vCPUs", "worst CoV", "detectable difference",
                                  "reruns"], rows))

    def environment_section(self) -> None:
        m = self.manifest
        self.blocks.append(Heading(2, "Environment"))
        host = m["host"]
        over = m.get("oversubscribed") or []
        self.blocks.append(Table(["item", "value"], [
            ["host", f"{host['cpus']} cores, Linux {host['kernel']}"],
            ["accelerator", m["accel"] + (" (KVM probe failed or skipped)" if m["accel"] == "tcg"
                                          else "")],
            ["QEMU", host["qemu"]],
            ["vCPUs", " ".join(map(str, m["matrix"]["cpus"]))
             + (f" (oversubscribed: {' '.join(map(str, over))})" if over else "")],
            ["repetitions", f"perf {m['matrix']['repeat']}, debug {m['matrix']['debug_repeat']}, "
                            f"icount {m['matrix']['icount_repeat']}"],
            ["workloads", " ".join(m["matrix"]["workloads"])],
            ["boots", f"{boots_phrase(m)}; {m.get('reruns', 0)} steps rerun for host load"],
            ["wall time", f"{fmt(m['wall_seconds'] / 60, 2)} min"],
        ]))
        machines = m.get("machines", {})
        if len(machines) > 1:
            self.blocks.append(Table(["machine", "CPU", "cores", "accelerator", "hosts"], [
                [machine, info["cpu_model"], str(info["cores"]), info["accel"],
                 ", ".join(info["hosts"])] for machine, info in machines.items()]))
        rows = []
        for kernel in self.kernels:
            info = m["kernels"].get(kernel)
            if not info:
                continue
            images = ", ".join(f"{f} {i['key']}" for f, i in sorted(info["images"].items()))
            rows.append([kernel, info["kernel_version"], images, "", ""])
            for p in info["patches"]:
                rows.append(["", "", "", f"{p['series']}/{p['file']}", p["sha256"][:16]])
        self.blocks.append(Table(["kernel", "version", "images (cache keys)", "patch",
                                  "sha256"], rows))

    def caveats_section(self) -> None:
        m = self.manifest
        notes = []
        if m["accel"] == "tcg":
            covs = [cov for _, _, cov, _ in evidence.noise(self.rows)]
            varied = (f"Wall-clock throughput varied between boots of one kernel by a "
                      f"coefficient of variation of {min(covs) * 100:.1f}-{max(covs) * 100:.1f}% "
                      f"in this run (worst kernel of each timed case, see the noise table)"
                      if covs else "Wall-clock throughput was measured once per case, so "
                      "this run cannot say how much it varies between boots")
            notes.append(f"All boots ran under TCG (software emulation). {varied}: read TCG "
                         "throughput differences only where marked ✓, and rely on exact lock "
                         "counts and -icount rates for small effects.")
        if m.get("oversubscribed"):
            notes.append("vCPU counts above the host's cores oversubscribe it: a descheduled "
                         "lock holder makes other vCPUs wait for the host's scheduler; those "
                         "timings measure the host.")
        over = sorted({(r.cpus, r.mode, r.cell) for r in self.rows
                       if r.mode.endswith(matrix.OVERSUBSCRIBED)})
        if over:
            counts = {}
            for cpus, mode, _ in over:
                counts[cpus, mode] = counts.get((cpus, mode), 0) + 1
            notes.append("Oversubscribed, not timed: " + "; ".join(
                f"{n} cells at {cpus} vCPUs ({mode})" for (cpus, mode), n in sorted(counts.items()))
                + ". Their throughput is left out of every timing, chart and verdict; their "
                "exact lock counts are kept.")
        notes += [
            "Throughput comes from perf kernels (no lock debugging), lock figures from debug "
            "kernels (lockdep, lock_stat); the two are never mixed in one chart.",
            "lock_stat stops counting after a lockdep report; figures of such steps are left "
            "out (status lockdep in the tidy table).",
            "In 6.1 the inode LRU and the dentry LRU share one lockdep class "
            "(&lru->node[i].lock): the lru role counts both.",
            "lock_stat prints class names truncated to 37 characters and name versions as one "
            "digit; figures are summed by role, never keyed by a single class name.",
            "Hold times come from debug kernels, whose lockdep bookkeeping inflates every "
            "critical section; compare them between kernels, not with production numbers.",
        ]
        self.blocks.append(Heading(2, "Caveats"))
        self.blocks.append(Bullets(notes))


# -- rendering ------------------------------------------------------------------------------

def _html_inline(text: str) -> str:
    out = html.escape(text)
    out = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", out)
    out = re.sub(r"`(.+?)`", r"<code>\1</code>", out)
    out = re.sub(r"(?<![\w*])\*(?!\s)(.+?)\*(?!\w)", r"<i>\1</i>", out)
    return out


def render_markdown(blocks: list[Block], run_dir: Path) -> str:
    out = []
    for b in blocks:
        if isinstance(b, Heading):
            out.append("#" * b.level + " " + b.text)
        elif isinstance(b, Para):
            out.append(b.text)
        elif isinstance(b, Bullets):
            out.append("\n\n".join("- " + item for item in b.items))
        elif isinstance(b, Table):
            out.append("| " + " | ".join(b.header) + " |")
            out.append("|" + "---|" * len(b.header))
            out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"
                    for row in b.rows]
        elif isinstance(b, (ChartBlock, ChartRow)):
            for f in (b.items if isinstance(b, ChartRow) else [b]):
                rel = f.chart.png.relative_to(run_dir)
                svg = f.chart.svg.relative_to(run_dir)
                out.append(f"![{f.chart.title}]({rel})\n\n*{f.caption}* ([SVG]({svg}))")
        out.append("")
    return "\n".join(out)


CSS = """
body { font-family: 'DejaVu Sans', sans-serif; max-width: 1200px; margin: 2em auto;
       color: #222; line-height: 1.4; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
.figs { display: flex; flex-wrap: wrap; gap: 1em; }
figure { margin: 0.5em 0; } figcaption { font-size: 0.85em; color: #555; }
img { max-width: 100%; }
"""


def render_html(blocks: list[Block], run_dir: Path, title: str) -> str:
    out = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
           f"</title><style>{CSS}</style></head><body>"]

    def figure(f: ChartBlock) -> str:
        # Linked, not embedded: the PNG files are in the run folder anyway, and
        # a second copy of each in base64 made a committed run carry every chart twice.
        png = f.chart.png.relative_to(run_dir)
        svg = f.chart.svg.relative_to(run_dir)
        return (f"<figure><img alt='{html.escape(f.chart.title)}' src='{png}'>"
                f"<figcaption>{_html_inline(f.caption)} (<a href='{svg}'>SVG</a>)"
                "</figcaption></figure>")

    for b in blocks:
        if isinstance(b, Heading):
            out.append(f"<h{b.level}>{html.escape(b.text)}</h{b.level}>")
        elif isinstance(b, Para):
            out.append(f"<p>{_html_inline(b.text)}</p>")
        elif isinstance(b, Bullets):
            out.append("<ul>" + "".join(f"<li>{_html_inline(i)}</li>" for i in b.items)
                       + "</ul>")
        elif isinstance(b, Table):
            out.append("<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in b.header)
                       + "</tr>")
            out += ["<tr>" + "".join(f"<td>{_html_inline(c)}</td>" for c in row) + "</tr>"
                    for row in b.rows]
            out.append("</table>")
        elif isinstance(b, ChartBlock):
            out.append(figure(b))
        elif isinstance(b, ChartRow):
            out.append("<div class='figs'>" + "".join(figure(f) for f in b.items) + "</div>")
    out.append("</body></html>")
    return "\n".join(out)


def write(layout: Layout, run_dir: Path, baseline: str | None = None) -> tuple[Path, Path]:
    builder = ReportBuilder(layout, run_dir, baseline)
    blocks = builder.build()
    md = run_dir / "report.md"
    md.write_text(render_markdown(blocks, run_dir))
    page = run_dir / "report.html"
    page.write_text(render_html(blocks, run_dir, blocks[0].text))
    return md, page
