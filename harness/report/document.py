"""The report of a run: Markdown and HTML, the charts beside them in charts/.

Order: the first screen (which pair each answer is about, at which vCPU
counts, with which reach, and the answer, in under 150 words and a table),
then the duel (duel_section: each pair of designs the run has, chinner
against piggin and chinner-2.6.39 against piggin-2010, the answer in words,
the evidence per kind and per workload), then every kernel against
the baseline, the scaling prediction, the figures per workload, latency,
-icount, retries, lockdep and sanitizers, lock-order conformance, the cost
in code, noise, the soaks of the run's images, the environment and the
caveats. Everything comes from the run folder (tidy.tsv, manifest.json,
lockorder.json, scaling.json, records.json and what run_inputs keeps
there); nothing is re-measured.
"""

from __future__ import annotations

import copy
import html
import json
import math
import re
import shutil
import statistics
from collections import Counter
from pathlib import Path

from harness import lockorder
from harness.analysis import boot_perm, duel, evidence, retry_counters, stats
from harness.boot import measure
from harness.report import (charts, code_cost, code_cost_section, duel_section,
                           record_table, records_section, run_inputs, scaling_section)
from harness.report.blocks import (Block, Bullets, ChartBlock, ChartRow, Heading,  # noqa: F401
                                   Para, Table, apart_text, fmt, interval, outcome_cell,
                                   pct, pct_abs, pct_range, plural, reach_text)
from harness.analysis import scaling_inputs
from harness.run import matrix, records, tidy
from harness.layout import Layout, slug


def boots_of(manifest: dict) -> list[dict]:
    """Every boot the run's rows come from: measured by it, or reused from earlier runs."""
    return manifest["boots"] + manifest.get("reused_boots", [])


def boots_phrase(manifest: dict) -> str:
    """'54 boots', or '60 boots (5 measured by this run, 55 reused from earlier runs)'."""
    reused = len(manifest.get("reused_boots", []))
    text = f"{len(boots_of(manifest))} boots"
    return text + (f" ({len(manifest['boots'])} measured by this run, {reused} reused from "
                   "earlier runs)" if reused else "")


def resumes_phrase(m: dict) -> str:
    """', resumed in place twice (64 s, 1 boot measured)', or '' for a run of one pass."""
    resumes = m.get("resumes", [])
    if not resumes:
        return ""
    times = {1: "once", 2: "twice"}.get(len(resumes), f"{len(resumes)} times")
    return (f", resumed in place {times} ({fmt(sum(r['wall_seconds'] for r in resumes), 2)} s, "
            f"{plural(sum(r['boots_measured'] for r in resumes), 'boot')} measured)")


def _started(directory: str) -> str:
    """'boots/20261204-135533-mainline-...' -> '2026-12-04 13:55' (the run that booted it)."""
    stamp = duel_section.batch_stamp(directory)
    if not stamp:
        return "an unrecorded time"
    return f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]} {stamp[9:11]}:{stamp[11:13]}"


def provenance(manifest: dict) -> str:
    """Where and when the boots were measured: per machine, the runs that started them
    (a run that reuses cells measured few or none itself)."""
    machines = manifest.get("machines", {})
    by_machine: dict[str, dict[str, int]] = {}
    for b in boots_of(manifest):
        runs = by_machine.setdefault(b.get("machine", ""), {})
        when = _started(b["directory"])
        runs[when] = runs.get(when, 0) + 1
    parts = []
    for machine, runs in by_machine.items():
        info = machines.get(machine)
        where = (f"{info['cpu_model']}, {info['cores']} cores, {info['accel'].upper()}, host "
                 f"{', '.join(info['hosts'])}" if info else f"machine {machine or 'unrecorded'}")
        days: dict[str, list[str]] = {}
        for when, n in sorted(runs.items()):
            day, _, clock = when.partition(" ")
            days.setdefault(day, []).append(f"{clock} ({n})" if clock else f"({n})")
        parts.append(f"on {where}, by the runs of " + "; ".join(
            f"{day} at {', '.join(clocks)}" for day, clocks in days.items()))
    return "; ".join(parts)


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
            spread = "" if v.evidence == "exact" or s.n < 2 else \
                f" ({interval(s.low, s.high, 3)})"
            cells.append(f"{fmt(s.mean)}{spread}")
            continue
        outcome = v.outcome(kernel)
        if v.evidence == "exact":
            mark = " (same)" if outcome == "even" else ""
        else:
            mark = {"unclaimed": " (no claim)", "even": " ≈"}.get(outcome, " ✓")
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
    """The lock each kernel takes most often per operation in this case, and how many
    instructions it holds it for (tcg-cs; lockdep-free), not lockdep's hold times."""
    figures = evidence.lock_figures(rows, v.case, v.cpus)
    lengths = evidence.cs_lengths(rows, v.case)
    parts = []
    for kernel in kernels:
        role, f = evidence.hottest_lock(figures, kernel)
        if role:
            held = lengths.get((kernel, role))
            parts.append(f"{kernel}: {role} {fmt(f['acquisitions_per_op'], 2)}/op"
                         + (f", {fmt(held.mean)} instructions each" if held else ""))
    return "; ".join(parts)


def glance_table(verdicts: list[evidence.Verdict], kernels: list[str]) -> Table | None:
    """Each kernel against the baseline, one row per kind of evidence (measurements only)."""
    order = {k: i for i, k in enumerate(kernels)}
    evidence_order = list(EVIDENCE_SHORT)
    out = []
    for t in sorted(evidence.tallies(verdicts),
                    key=lambda t: (order.get(t.kernel, len(order)),
                                   evidence_order.index(t.evidence), t.cpus)):
        kind = EVIDENCE_SHORT[t.evidence] + (f", {t.cpus} vCPU" if t.evidence != "icount"
                                                 else "")
        out.append([t.kernel, kind, outcome_cell(t.better), outcome_cell(t.even),
                    outcome_cell(t.worse), str(t.unclaimed), reach_text(t.detectable)])
    if not out:
        return None
    return Table(["kernel", "evidence (measured)", "better: cases (change)",
                  "the same or inside the noise: cases (change)", "worse: cases (change)",
                  "no claim", "smallest difference it could show (median)"], out)


def prediction_table(rows: list[list[str]]) -> Table | None:
    """The model's rows, apart from the measurements: a prediction is never "better"."""
    if not rows:
        return None
    return Table(["kernel", "PREDICTION (model, not measured)", "predicted higher: cases",
                  "predicted within the model's margin: cases", "predicted lower: cases"],
                 [[r[0], r[1].replace("PREDICTION (model, not measured): ", "") + " (predicted)",
                   *r[2:]] for r in rows])


def verdict_table(rows: list[tidy.Row], verdicts: list[evidence.Verdict],
                  kernels: list[str]) -> Table:
    header = ["workload", "evidence", *kernels, "winner", "why (most-taken icache lock)"]
    out = []
    for v in verdicts:
        kind = EVIDENCE_SHORT[v.evidence] + (f", {v.cpus} vCPU" if v.evidence != "icount"
                                             else "")
        why = why_text(rows, v, kernels) if v.evidence == "exact" else ""
        better = f"{'higher' if v.higher_is_better else 'lower'} is better"
        out.append([v.case.label, f"{kind} ({v.unit + ', ' if v.unit else ''}{better})",
                    *verdict_cells(v, kernels), winner_text(v), why])
    return Table(header, out)


def crng_phrase(manifest: dict) -> str:
    """How many boots had the guest's CRNG seeded: unseeded, every inode create took
    two global locks a seeded machine does not (runner.SEED_CRNG)."""
    said = Counter(b.get("crng") or "init did not report" for b in boots_of(manifest))
    text = ", ".join(f"{state} {n}" for state, n in sorted(said.items()))
    if said.get("unseeded") or said.get("init did not report"):
        text += (" (an unready CRNG makes 6.1 take the global base_crng.lock on every "
                 "get_random_u32(), and input_pool.lock while it is empty: per inode create; "
                 "boots made before the check did not report, and none of them was seeded)")
    return text


class ReportBuilder:
    def __init__(self, layout: Layout, run_dir: Path, baseline: str | None,
                 charts_dir: Path | None = None) -> None:
        self.layout = layout
        self.run_dir = run_dir
        self.rows = tidy.read(tidy.table_in(run_dir))
        self.manifest = json.loads((run_dir / "manifest.json").read_text())
        conformance = run_dir / "lockorder.json"
        self.conformance = json.loads(conformance.read_text()) if conformance.exists() else {}
        self.records = records.load(run_dir)  # soaks of the run's images (None: not kept)
        self.kernels = evidence.kernels_in(self.rows, self.manifest["matrix"]["kernels"])
        self.baseline = baseline if baseline in self.kernels else (
            "mainline" if "mainline" in self.kernels else (self.kernels or ["?"])[0])
        self.requested_baseline = baseline
        # The deck passes a folder of its own, so a report and a deck of one run can be
        # written at once without drawing into each other's charts.
        self.charts_dir = charts_dir or run_dir / "charts"
        # Everything in charts/ is this report's: a chart an earlier report drew and this
        # one does not (a renamed or dropped chart) must not stay beside it.
        shutil.rmtree(self.charts_dir, ignore_errors=True)
        self.charts_dir.mkdir()
        self.spread = run_inputs.rerun_spread(layout, run_dir)
        self.chart_prefix = ""  # one per machine when the run has several
        self.blocks: list[Block] = []
        self.first_screen: list[Block] = []
        self._contexts: dict[str, duel_section.Context] | None = None
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
        part._contexts = None
        return part

    def boots_of_kernel(self, kernel: str, flavour: str) -> int:
        return sum(1 for b in boots_of(self.manifest)
                   if f"-{slug(kernel)}-{flavour}-" in "-" + b["directory"].split("/")[-1])

    def boots_by_kernel(self) -> dict[tuple[str, str], int]:
        """(kernel, flavour) -> this run's boots of the checking flavours."""
        return {(k, f): self.boots_of_kernel(k, f) for k in self.kernels
                for f in ("debug", "sanitize")}

    def record_rows(self, deck: bool = False) -> list[list[str]]:
        """The designs' record beyond timing: kernel reports, lock order, soaks, code;
        `deck`: the soaks in one row, short enough for a slide."""
        designs = [k for k in (duel.FIRST, duel.SECOND) if k in self.kernels]
        if len(designs) < 2:
            return []
        lockdep = evidence.lockdep_counts(self.rows)
        sanitize = evidence.kernel_reports(self.rows, "sanitize")
        out = [["lockdep, debug kernels", *[
            f"{plural(sum(v for (k, _, _), v in lockdep.items() if k == d), 'report')} in "
            f"{plural(self.boots_of_kernel(d, 'debug'), 'boot')}" for d in designs]],
               ["lock order: edges its lock-order file does not allow", *[
                   f"{len(self.conformance.get(d, {}).get('violations', []))} of "
                   f"{len(self.conformance.get(d, {}).get('edges', []))} edges seen"
                   if d in self.conformance else "no debug boot" for d in designs]]]
        if sanitize:
            out.append(["sanitizers: KASAN, list, object and RCU debugging", *[
                f"{plural(sum(n for (k, _, _), kinds in sanitize.items() if k == d for n in kinds.values()), 'report')}"
                f" in {plural(self.boots_of_kernel(d, 'sanitize'), 'boot')}" for d in designs]])
        out += [["kcsan: data races (make kcsan)",
                 *[record_table.kcsan_cell(self.records, d, deck) for d in designs]],
                ["faults: injected failures (make faults)",
                 *[record_table.faults_cell(self.records, d, deck) for d in designs]]]
        out += ([records_section.deck_row(self.records, designs)] if deck else
                records_section.record_rows(self.records, designs))
        costs = {c.name: c for c in code_cost.costs(self.layout, self.run_dir, self.manifest,
                                                    self.conformance)}
        if all(d in costs for d in designs):
            c = [costs[d] for d in designs]
            out += [["code: patches of its own", *[str(len(x.patches)) for x in c]],
                    ["code: lines added / removed", *[f"+{x.review('added')} / "
                                                      f"-{x.review('removed')}" for x in c]],
                    ["code: files beyond fs/inode.c and fs.h", *[
                        str(len([f for f in x.files if f not in code_cost.CORE_FILES]))
                        for x in c]],
                    ["retry machinery: trylock sites, retry jumps, cpu_relax()", *[
                        f"{x.tree('trylocks'):+d}, {x.tree('retry_jumps'):+d}, "
                        f"{x.tree('cpu_relax'):+d}" for x in c]]]
        return out

    def duel_contexts(self) -> dict[str, duel_section.Context]:
        """Each pair of designs the run has (duel.pairs_in), by its name, isolated first:
        its entries, its permutation over boots and its sign flip. Computed once (after
        the scaling section wrote scaling.json, which the predictions read)."""
        if self._contexts is not None:
            return self._contexts
        matrix_info = self.manifest.get("matrix", {})
        order = None if matrix_info.get("order_seed") else list(matrix_info.get("kernels", []))
        cross = [c for a in self.kernels for b in self.kernels if a != b
                 for c in [evidence.cross_case(self.rows, a, b, self.spread)] if c]
        covs = [cov for _, _, cov, _ in evidence.noise(self.rows)]
        self._contexts = {}
        for pair in duel.pairs_in(self.kernels):
            entries = duel.entries(self.rows, self.kernels, self.spread,
                                   self.run_dir / scaling_inputs.SCALING_JSON, order, pair)
            self._contexts[pair.name] = duel_section.Context(
                entries, [c for c in cross if {c.kernel, c.against} & set(pair.kernels)],
                self.manifest["host"]["cpus"], (min(covs), max(covs)) if covs else None,
                self.record_rows() if pair == duel.ISOLATED else [],
                self.manifest.get("differences", {}),
                self.manifest.get("differences_not_measured", {}), pair,
                boot_perm.analyse(self.rows, pair, self.spread),
                duel.sign_flip(self.rows, pair),
                duel_section.timed_sessions([b["directory"] for b in boots_of(self.manifest)],
                                            pair.kernels))
        return self._contexts

    def duel_context(self) -> duel_section.Context:
        """The isolated pair's context (the deck's), or an empty one without that pair."""
        found = self.duel_contexts()
        if duel.ISOLATED.name in found:
            return found[duel.ISOLATED.name]
        cross = [c for a in self.kernels for b in self.kernels if a != b
                 for c in [evidence.cross_case(self.rows, a, b, self.spread)] if c]
        return duel_section.Context([], cross, self.manifest["host"]["cpus"], None, [],
                                    self.manifest.get("differences", {}),
                                    self.manifest.get("differences_not_measured", {}))

    # -- sections -----------------------------------------------------------------------

    def build(self) -> list[Block]:
        m = self.manifest
        b = self.blocks
        machines = list(dict.fromkeys(r.machine for r in self.rows))
        where = (f"on a {m['host']['cpus']}-core host under **{m['accel'].upper()}**"
                 if len(machines) <= 1 else
                 f"on {len(machines)} kinds of machine, each reported on its own below")
        pairs = duel.pairs_in(self.kernels)
        designs = [k for p in pairs for k in p.kernels] or \
            [k for k in (duel.FIRST, duel.SECOND) if k in self.kernels]
        others = [k for k in self.kernels if k not in designs]
        b.append(Heading(1, "inode-duel: " + ("; ".join(f"{p.first} against {p.second}"
                                                      for p in pairs)
                                            or " against ".join(designs))))
        b.append(Para(
            f"Run {self.run_dir.name}, written {m['created']}: {boots_phrase(m)}, measured "
            f"{provenance(m)} (boots per run in brackets); this run itself took "
            f"{fmt(m['wall_seconds'], 2)} s {where}{resumes_phrase(m)}. Source: Debian "
            "linux-source-6.1 "
            + ", ".join(sorted({k['package_version'] for k in m['kernels'].values()}))
            + f"; every kernel, mainline included, is {run_inputs.source_phrase(m)}"
            + (f". For reference: {', '.join(others)}" if others else "")
            + f". Secondary comparisons use **{self.baseline}** as the baseline"
            + (f" ({self.requested_baseline} was asked for but is not in this run)"
               if self.requested_baseline and self.requested_baseline != self.baseline else "")
            + "."))
        if len(machines) <= 1:
            self.measurement_sections()
            # The first screen goes first: the answer before where it was measured.
            at = b.index(self.first_screen[0]) if self.first_screen else 0
            if at:
                del b[at:at + len(self.first_screen)]
                b[1:1] = self.first_screen
        else:
            for machine in machines:
                b.append(Heading(1, f"On {self.machine_label(machine)}"))
                self.for_machine(machine).measurement_sections()
        b += record_table.section(self.records, self.rows, self.kernels, self.boots_by_kernel())
        b += records_section.section(self.records, self.kernels)
        self.environment_section()
        self.caveats_section()
        return b

    def measurement_sections(self) -> None:
        """Everything read from the rows (of one machine)."""
        scaling = self.scaling.blocks()  # writes scaling.json, which the duel reads
        contexts = list(self.duel_contexts().values())
        self.first_screen = duel_section.first_screen(contexts, self.kernels)
        self.blocks += self.first_screen
        for ctx in contexts:
            self.blocks += duel_section.blocks(ctx, self.rows, self.kernels, self.chart_stem)
        if not contexts:
            self.blocks += duel_section.blocks(self.duel_context(), self.rows, self.kernels)
        self.blocks += duel_section.gp_wait_blocks(self.rows, self.kernels)
        self.verdict_section()
        self.blocks += scaling
        self.cases_section()
        self.latency_section()
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
        self.blocks.append(Heading(2, f"Every kernel against {self.baseline} (secondary)"))
        self.blocks.append(Para(
            f"Per workload and evidence: {self.baseline}'s value (mean and 95% interval, on "
            "log values for rates) and every other kernel's change against it. Exact counts "
            f"are the same (same) when they differ by at most "
            f"{pct_abs(evidence.EXACT_TOLERANCE)} or {fmt(evidence.EXACT_FLOOR, 1)} "
            "acquisitions/op, what kernel threads add to a "
            "counting window; any larger difference counts. ✓: separated (timed figures: the "
            f"{stats.INTERVAL_METHOD} excludes 1, or every boot of one kernel lies beyond "
            f"every boot of the other and the {stats.RANK_METHOD} has p < {stats.ALPHA}; "
            "-icount: outside the intervals and beyond the measured rerun spread of its "
            "workload); ≈: inside the noise; (no claim): one boot on a side, or -icount "
            f"without a measured rerun spread. {self.baseline} already has {duel.FIRST}'s "
            "lock order, so this view frames the ancestor and the two designs against "
            "today's kernel; the duel itself is above."))
        if not verdicts:
            self.blocks.append(Para("No measurements in this run."))
            return
        glance = glance_table(verdicts, self.kernels)
        if glance:
            self.blocks.append(Para(
                f"At a glance, measurements only: in how many workload cases each kernel "
                f"beats {self.baseline}, matches it, or loses to it, by kind of evidence, with "
                f"the range of the changes (for lock acquisitions, a negative change is "
                f"better) and the smallest difference each comparison could have shown."))
            self.blocks.append(glance)
        flagged = [c for a in self.kernels if a != self.baseline
                   for c in [evidence.cross_case(self.rows, a, self.baseline, self.spread)]
                   if c and c.flagged]
        for c in flagged:
            self.blocks.append(Para(
                f"**{c.kernel}'s timed figures are flagged** by the cross-case check: higher "
                f"than {c.against}'s in {c.wins} of {c.cells} timed cells (sign test p = "
                f"{c.p:.2g}) while -icount puts their instructions {pct_abs(c.icount_median)} "
                f"apart (median): its timed 'better' cases above may be how this host runs "
                f"it, not its code ({duel_section.set_aside_text(c)})."))
        predicted = prediction_table(self.scaling.glance_rows())
        if predicted:
            self.blocks.append(Para(
                f"The queueing model's predictions against {self.baseline}, kept apart from "
                "the measurements (section \"Scaling prediction\"):"))
            self.blocks.append(predicted)
        exact_chart = self.exact_chart(verdicts)
        if exact_chart:
            self.blocks.append(exact_chart)
        self.blocks.append(Para("Case by case:"))
        self.blocks.append(verdict_table(self.rows, verdicts, self.kernels))
        for kind, text in evidence.EVIDENCE.items():
            self.blocks.append(Para(f"*{EVIDENCE_SHORT[kind]}*: {text}."))

    def exact_chart(self, verdicts: list[evidence.Verdict]) -> ChartBlock | None:
        """The exact lock counts of every case, shared locks and i_lock apart."""
        exact = [v for v in verdicts if v.evidence == "exact"]
        if not exact:
            return None
        cpus = exact[0].cpus
        shared = duel.shared_roles(self.rows)
        panels, shown, hidden = [], [], []
        for v in exact:
            totals = [sum(v.values.get(k, [0.0])) / max(1, len(v.values.get(k, [])))
                      for k in v.values]
            (shown if max(totals, default=0) >= evidence.EXACT_FLOOR else hidden).append(v)
        for label, roles in (("shared locks / op", shared),
                             ("i_lock (per inode) / op", duel.PER_INODE_ROLES)):
            values = {}
            for v in shown:
                for kernel, found in evidence.acquisition_values(self.rows, v.case, cpus,
                                                                 roles).items():
                    values[v.case.label, kernel] = sum(found) / len(found)
            panels.append((label, values))
        if not shown:
            return None
        chart = charts.clustered_bars(self.chart_stem("exact-acquisitions"),
                                      "icache lock acquisitions per operation "
                                      "(exact; lower is better)",
                                      [v.case.label for v in shown], self.kernels, panels,
                                      self.kernels)
        caption = (f"Icache lock acquisitions per operation, debug kernels at {cpus} vCPU "
                   "(exact counts): the locks inodes share, and each inode's own i_lock")
        if hidden:
            caption += (f"; not drawn, below {fmt(evidence.EXACT_FLOOR, 1)}/op in every kernel: "
                        + ", ".join(v.case.label for v in hidden))
        return ChartBlock(chart, caption)

    def cases_section(self) -> None:
        self.blocks.append(Heading(2, "Workloads: throughput and lock figures per operation"))
        mode = evidence.plain_mode(self.rows)
        debug_cpus = sorted({r.cpus for r in self.rows if r.flavour == "debug"})
        timed_cpus = sorted({r.cpus for r in self.rows if r.flavour == "perf" and r.mode == mode})
        declared = {evidence.Case(r.workload, r.fs, r.phase) for r in self.rows
                    if r.metric == measure.DECLARED_OPS}
        for case in evidence.cases(self.rows):
            self.blocks.append(Heading(3, case.label))
            if case in declared:
                self.blocks.append(Para(
                    "**Throughput of declared operations, not measured.** The workload "
                    "names its operations (`ops`) and reads back none of them from its "
                    "output (`ops-count`): the throughput and every per-operation figure "
                    "of this case divide by the count it declares, however many ran."))
            figures = ChartRow()
            series: dict[str, list[tuple[float, float, float, float]]] = {}
            unit = ""
            for cpus in timed_cpus:
                summaries, unit = evidence.throughput(self.rows, case, mode, cpus)
                for kernel, s in summaries.items():
                    series.setdefault(kernel, []).append((cpus, s.mean, s.low, s.high))
            if series:
                chart = charts.lines_with_errors(
                    self.chart_stem(f"throughput-{case.slug}"), f"{case.label}: throughput",
                    "vCPUs", unit, series, self.kernels)
                figures.items.append(ChartBlock(chart, f"Throughput against vCPUs ({mode.upper()}, "
                                                   "perf kernels), mean and 95% interval (on "
                                                   "log values)"))
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
        figures = evidence.lock_figures(self.rows, case, cpus,
                                        evidence.main_procs(self.rows, case, cpus))
        if not figures:
            return None
        # A role no kernel took in this case (zeros in the table) gets no empty cluster.
        roles = [r for r in lockorder.ROLES
                 if any(role == r and m == "acquisitions_per_op" and v
                        for (_, role, m), v in figures.items())]
        if not roles:
            return None
        panels = []
        boots = len({r.cell for r in self.rows if r.flavour == "debug" and r.cpus == cpus
                     and evidence._in_case(r, case) and r.kernel == self.kernels[0]})
        for metric, label in (("acquisitions_per_op", "acquisitions / op"),
                              ("holdtime_per_op", "hold µs / op, lockdep-inflated"),
                              ("contentions_per_op", "contentions / op")):
            panels.append((label, {(role, k): v for (k, role, m), v in figures.items()
                                   if m == metric}))
        kernels = [k for k in self.kernels if any(k == key[0] for key in figures)]
        chart = charts.clustered_bars(self.chart_stem(f"locks-{case.slug}-c{cpus}"),
                                      f"{case.label}: icache locks per operation, {cpus} vCPU",
                                      roles, kernels, panels, self.kernels)
        return ChartBlock(chart, f"Lock acquisitions, hold time and contentions per operation by "
                             f"icache lock, debug kernels at {cpus} vCPU, "
                             f"{plural(boots, 'boot')} each. Hold times include lockdep's "
                             "bookkeeping (hundreds of instructions per acquisition): compare "
                             "kernels, never read them as costs")

    def lock_table(self, case: evidence.Case, debug_cpus: list[int]) -> Table | None:
        out = []
        for cpus in debug_cpus:
            procs = evidence.main_procs(self.rows, case, cpus)
            figures = evidence.lock_figures(self.rows, case, cpus, procs)
            for kernel in self.kernels:
                for role in lockorder.ROLES:
                    f = {m: figures.get((kernel, role, m)) for m in evidence.LOCK_METRICS}
                    if f["acquisitions_per_op"] is None:
                        continue
                    out.append([duel._cells(cpus, procs), kernel, role,
                                fmt(f["acquisitions_per_op"]),
                                fmt(f["holdtime_per_op"]), fmt(f["contentions_per_op"]),
                                fmt(f["waittime_per_op"])])
        if not out:
            return None
        return Table(["vCPUs", "kernel", "icache lock", "acquisitions/op",
                      "hold µs/op (lockdep-inflated)", "contentions/op",
                      "wait µs/op (lockdep-inflated)"], out)

    def latency_section(self) -> None:
        """p50 and p99 per operation, as the programs measured them in the perf boots."""
        mode = evidence.plain_mode(self.rows)
        table = []
        for case, cpus, procs in evidence.timed_cells(self.rows, mode):
            p50 = evidence.latency_values(self.rows, case, mode, cpus, procs, "p50")
            p99 = evidence.latency_values(self.rows, case, mode, cpus, procs, "p99")
            if not p99:
                continue
            cells = []
            for kernel in self.kernels:
                if kernel not in p99:
                    cells.append("")
                    continue
                low, high = min(p99[kernel]), max(p99[kernel])
                median = statistics.median(p50.get(kernel, [math.nan]))
                cells.append(f"{fmt(median / 1e6, 2)} / {fmt(statistics.median(p99[kernel]) / 1e6, 2)}"
                             f" ({interval(low / 1e6, high / 1e6)})")
            table.append([case.label, duel._cells(cpus, procs), *cells])
        if not table:
            return
        self.blocks.append(Heading(2, "Latency per operation"))
        self.blocks.append(Para(
            f"The median (p50) and 99th-percentile (p99) time of one operation in ms, as the "
            f"workload programs measured them in the perf boots ({mode.upper()}, wall clock): "
            "the median over boots of each, and in brackets the lowest and highest p99 of "
            "the boots. A p99 far above the others with the same p50 is an operation that "
            "waits now and then (a lock, a grace period, I/O), not one that works more."))
        self.blocks.append(Table(["workload", "vCPUs", *[f"{k} p50 / p99 (p99 range)"
                                                         for k in self.kernels]], table))

    def icount_section(self) -> None:
        cases = evidence.cases(self.rows)
        changes: dict[str, dict[str, tuple[float, float, float]]] = {}
        table, stalls = [], []
        for case in cases:
            summaries, unit = evidence.throughput(self.rows, case, "tcg-icount", 1)
            stalled = evidence.stalled_boots(self.rows, case)
            stalls += [(case, s) for s in stalled]
            base = summaries.get(self.baseline)
            for kernel, s in summaries.items():
                ratio = stats.ratio(s, base) if base and kernel != self.baseline else None
                if ratio:
                    changes.setdefault(kernel, {})[case.label] = (
                        (s.mean / base.mean - 1) * 100, (ratio.low - 1) * 100,
                        (ratio.high - 1) * 100)
                table.append([case.label, kernel, f"{fmt(s.mean, 4)} {unit}",
                              (f"{pct(s.mean / base.mean - 1)}"
                               + (f" ({pct_range(ratio.low - 1, ratio.high - 1)})"
                                  if ratio and pct(ratio.low - 1) != pct(ratio.high - 1)
                                  else "")) if base and kernel != self.baseline
                              else "", str(s.n) + "".join(
                                  f" (repetition {x.repetition} stalled)" for x in stalled
                                  if x.kernel == kernel),
                              "n/a" if math.isnan(s.cov) else f"{fmt(s.cov * 100, 2)}%"])
        if not table:
            return
        self.blocks.append(Heading(2, "Single-thread cost: 1 vCPU under -icount"))
        self.blocks.append(Para(
            "QEMU's -icount counts guest instructions as time, so these rates measure the "
            "instructions each kernel spends per operation, not the host's mood. With one "
            "vCPU the guest kernel patches its lock prefixes out (uniprocessor alternatives), "
            "so an atomic instruction costs no more than a plain one here."))
        groups = [c.label for c in cases if any(c.label in v for v in changes.values())]
        if groups:
            chart = charts.points_with_errors(
                self.chart_stem("icount"), f"Single-thread rate (-icount) against "
                f"{self.baseline}", groups, f"% change against {self.baseline}", changes,
                self.kernels, marks={0.0: ""}, clip=True)
            self.blocks.append(ChartBlock(chart, f"Change of operations per emulated second "
                                                 f"at 1 vCPU against {self.baseline}, in %, "
                                                 "with its 95% interval: each workload's rate "
                                                 "has its own unit, so only changes share an "
                                                 "axis. A bar that runs off the frame is a "
                                                 "kernel whose boots disagree (a stall in one "
                                                 "of them)"))
        self.blocks.append(Table(["workload", "kernel", "rate", f"change against "
                                  f"{self.baseline} (95% interval)", "boots", "CoV"], table))
        if stalls:
            self.blocks.append(Para(
                f"Stalled boots: a boot whose rate is more than "
                f"{pct_abs(evidence.STALL_DROP)} below the median of every boot of its case "
                "while its median operation is no slower: one operation waited (I/O under "
                "-icount lets the virtual clock run on), the code did not change. A "
                "comparison with such a boot is not claimed; the boot wants a rerun. "
                + "; ".join(f"{case.label}: {x.kernel} repetition {x.repetition} "
                            f"{pct(x.drop)}, slowest operation {fmt(x.slowest_ns / 1e6, 2)} ms"
                            for case, x in stalls) + "."))
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
        cores = self.manifest["host"]["cpus"]
        busy = (f" **That is more than the host's {cores} cores: the spread was measured on a "
                "busy host and may be wider than a quiet one gives.**"
                if s.host_load[1] > cores else "")
        missing = [c.label for c in evidence.cases(self.rows) if c.label not in s.cases]
        self.blocks.append(Para(
            f"The same {s.kernel} perf image booted {s.boots} times under -icount at 1 vCPU, "
            f"{s.fresh_disks} of them each on an ext4 image made anew (as a fresh clone's "
            f"run makes its own), {s.measured}, while the host's 1-minute load average was "
            f"{fmt(s.host_load[0], 2)}-{fmt(s.host_load[1], 2)}.{busy} Source: {s.source}. "
            "Rerun spread: the coefficient of variation of its rate over all those boots "
            "(beside it, over the boots that shared one ext4 image and over those that each "
            "had a fresh one). A "
            "difference between two kernels counts (✓) only where the run's 95% intervals "
            "separate **and** it exceeds the 95% quantile of what two means of as many boots "
            "differ by on a rerun (the smallest claimable difference below). The spread is "
            "of one kernel; the rule assumes the others' is alike."
            + (f" **Not measured for {plural(len(missing), 'case')}** ({', '.join(missing)}): "
               "no -icount difference is claimed there, however far apart the run's boots."
               if missing else "")))
        verdicts = [v for v in evidence.verdicts(self.rows, self.baseline, self.kernels, s)
                    if v.evidence == "icount"]

        def share(sd: float | None) -> str:
            return "n/a" if sd is None else pct(sd).lstrip("+")

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
                if before != after and spread is not None:
                    changed.append(f"{kernel} {pct(c.change)}: {before} → {after}")
            rows.append([v.case.label,
                         pct(spread.relative_sd).lstrip("+") if spread else "not measured",
                         share(spread.same_image_sd) if spread else "",
                         share(spread.fresh_image_sd) if spread else "",
                         pct_range(spread.low, spread.high) if spread else "",
                         "n/a" if math.isnan(floor) else pct(floor).lstrip("+"),
                         "; ".join(changed) or ("none" if spread else "no claim: "
                                                "spread not measured")])
        self.blocks.append(Table(["workload", "rerun spread (CoV)", "same ext4 image",
                                  "fresh ext4 images", "range seen",
                                  "smallest claimable difference", "verdicts the spread changes"],
                                 rows))
        self.blocks.append(Para(
            f"By the run's intervals alone {plural(claimed, 'comparison')} of -icount rates "
            f"with {self.baseline} would be claimed better or worse; {kept} of them exceed a "
            "measured rerun spread as well and are claimed above. The others could turn "
            "either way on a rerun, or their workload's spread was never measured."))

    def retries_section(self) -> None:
        self.blocks.append(Heading(2, "The price of the lock order: retries per operation"))
        cpus_list = sorted({r.cpus for r in self.rows if r.flavour == "debug"})
        found = {cpus: evidence.retries(self.rows, cpus, fixed=True) for cpus in cpus_list}
        counters = sorted({(k, c) for per in found.values() for (k, _, c) in per})
        if not counters:
            self.blocks.append(Para(
                "No kernel in this run exports /proc/icache_retries (the retry counters the "
                "two series add to their debug kernels)."))
            return
        self.blocks.append(Para(
            "Each series counts its own sites in /proc/icache_retries (debug kernels only), "
            "and the two count different things: one increment of each kind means what the "
            "table says, so counters of different kinds are never added up or compared as "
            "one number. Per operation, mean over the debug boots; 4 vCPUs and more on this "
            "host are oversubscribed (counts, not timings)."))
        catalogue = [[f"{k} {c}", retry_counters.describe(c, k).kind,
                      retry_counters.describe(c, k).what] for k, c in counters]
        self.blocks.append(Table(["counter", "kind", "what one increment is"], catalogue))
        self.blocks.append(Para("Kinds: " + "; ".join(
            f"*{kind}*: {text}" for kind, text in retry_counters.KINDS.items()
            if any(row[1] == kind for row in catalogue)) + "."))
        table, moved = [], set()
        for kernel, counter in counters:
            values = {(label, f"{cpus} vCPU" + ("s" if cpus > 1 else "")): v
                      for cpus, per in found.items()
                      for (k, label, c), v in per.items() if (k, c) == (kernel, counter) and v}
            if not values:
                continue
            moved.add((kernel, counter))
            for (label, cells), value in sorted(values.items()):
                table.append([f"{kernel} {counter}", label, cells, fmt(value)])
            self.blocks.append(self.retry_chart(kernel, counter, values))
        never = [f"{k} {c}" for k, c in counters if (k, c) not in moved]
        self.blocks.append(Para(
            f"Counters that stayed at zero in every workload: {', '.join(never)}."
            if never else "Every counter moved in some workload."))
        if table:
            self.blocks.append(Table(["counter", "workload", "vCPUs", "per op"], table))

    def retry_chart(self, kernel: str, counter: str,
                    values: dict[tuple[str, str], float]) -> ChartBlock:
        """One counter: per operation, the cases where it fired, one bar per vCPU count."""
        described = retry_counters.describe(counter, kernel)
        groups = list(dict.fromkeys(label for label, _ in sorted(values)))
        cells = sorted({c for _, c in values}, key=lambda c: int(c.split()[0]))
        chart = charts.clustered_bars(
            self.chart_stem(f"retries-{kernel}-{counter}"),
            f"{kernel} {counter} ({described.kind}) per operation", groups, cells,
            [("per op", values)], cells, colours=charts.NEUTRAL[:len(cells)])
        return ChartBlock(chart, f"{kernel} {counter}: {described.what}. Kind: "
                                 f"{described.kind}, {retry_counters.KINDS[described.kind]}")

    def lockdep_section(self) -> None:
        counts = evidence.lockdep_counts(self.rows)
        self.blocks.append(Heading(2, "Lockdep reports"))
        if not counts:
            self.blocks.append(Para("No debug boots in this run."))
            return
        kernels = [k for k in self.kernels if any(k == key[0] for key in counts)]
        if any(counts.values()):
            columns = sorted({f"{w}/{fs}" for (_, w, fs) in counts})
            values = {(k, f"{w}/{fs}"): v for (k, w, fs), v in counts.items()}
            chart = charts.heatmap(self.chart_stem("lockdep"), "Lockdep reports per kernel and "
                                   "workload (debug kernels)", columns, kernels, values)
            self.blocks.append(ChartBlock(chart, "Lockdep reports; after the first, lockdep is "
                                                 "off for the rest of that boot, so a count of "
                                                 "1 means at least one"))
        else:
            cases = sorted({(w, fs) for (_, w, fs) in counts})
            self.blocks.append(Para(
                f"0 lockdep reports in the debug boots of {', '.join(kernels)} ("
                + ", ".join(f"{k} {plural(self.boots_of_kernel(k, 'debug'), 'boot')}"
                            for k in kernels)
                + f") over {plural(len(cases), 'workload case')}."))
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
                series: dict[str, list[tuple[float, float, float, float]]] = {}
                for v in evidence.verdicts(self.rows, self.baseline, kernels, self.spread):
                    if v.evidence != kind:
                        continue
                    label = v.case.label + (f" ({v.cpus} vCPU)" if kind == "tcg" else "")
                    for i, k in enumerate(kernels):
                        s = v.summaries.get(k)
                        if s:
                            series.setdefault(label, []).append((i, s.mean, s.low, s.high))
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
            "smallest difference a comparison with the baseline could detect (the half-width "
            "of the 95% interval of the ratio of the two, on log values, at its widest over "
            "the kernels). Steps run while other host processes used more than a quarter of "
            "a core were measured again (reruns)."))
        rows = []
        mode = evidence.plain_mode(self.rows)
        for case, cpus, cov, reruns in noise:
            summaries, _ = evidence.throughput(self.rows, case, mode, cpus)
            detectable = [stats.Comparison(s, summaries[self.baseline]).detectable
                          for k, s in summaries.items()
                          if k != self.baseline and self.baseline in summaries]
            rows.append([case.label, str(cpus), f"{fmt(cov * 100, 2)}%",
                         apart_text(max(detectable)) if detectable else "n/a",
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
            ["guest CRNG at the first step", crng_phrase(m)],
            ["wall time", f"{fmt(m['wall_seconds'] / 60, 2)} min{resumes_phrase(m)}"],
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
                      f"coefficient of variation of {fmt(min(covs) * 100, 2)}-"
                      f"{fmt(max(covs) * 100, 2)}% "
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
                f"{plural(n, 'cell')} at {cpus} vCPUs ({mode})"
                for (cpus, mode), n in sorted(counts.items()))
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
            "Hold and wait times come from debug kernels, whose lockdep bookkeeping inflates "
            "every critical section; they are shown per workload, never as a cost. Critical "
            "sections as the perf kernels run them are the tcg-cs instruction counts.",
            "Under -icount at 1 vCPU the guest kernel runs its uniprocessor alternatives: lock "
            "prefixes are patched out, so atomic instructions cost what plain ones do there.",
            f"Every timed comparison is a test at {stats.ALPHA}: over many comparisons about "
            f"one in {round(1 / stats.ALPHA)} is claimed by chance alone, which is why the "
            "cross-case check looks for patterns over all of them. The comparisons of one "
            "vCPU count share their boots and are not independent: the duel holds its count "
            "of claims against a permutation of the boots, never against a binomial.",
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
