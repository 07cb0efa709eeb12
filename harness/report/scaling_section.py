"""The report's "Scaling prediction" section: the queueing model on this run.

Per workload case, each kernel's predicted throughput at 1-256 CPUs with the
hand-off band; per kernel, the lock that caps it; how well the model did at
2 vCPUs and against published many-core figures; the sharing lock_stat
measured against each kernel's declared lock scopes; the assumptions. Also
a row per kernel for the report's at-a-glance table, and scaling.json in
the run folder (the predictions and the bucket counts they used, so a
published reference without boot folders keeps them).

Everything here is labelled a prediction except the measured points.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from harness import lockscope
from harness.analysis import evidence, published, queueing, scaling_inputs
from harness.analysis import scaling_validation as validation
from harness.analysis.predict import CasePrediction
from harness.analysis.scaling_inputs import (HANDOFF_BAND, HANDOFF_NS, NS_PER_INSN,
                                             NS_PER_INSN_BAND, CaseInputs)
from harness.layout import Layout
from harness.report import charts
from harness.report import blocks as doc
from harness.run.tidy import Row

MAX_CPUS = 256
# How the introduction names the model's inputs; the slide keeps them without
# the clause that lists the roles which fell back.
INPUTS_LEAD = "Inputs of this run: "
FALLBACK_LEAD = "the other role"
AT_CPUS = 64
CHART_CPUS = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256]
# Two kernels whose predictions at 64 CPUs differ by less than this, at any
# hand-off of the band, are called the same: the model's inputs carry more
# uncertainty than that (see the validation tables).
SAME_WITHIN = 0.05
# A per-CPU or per-inode role whose acquisitions bounce more often than this
# at 2 vCPUs is shared after all (migrations and kernel threads bounce a few).
PRIVATE_BOUNCE_LIMIT = 0.05
# The smallest contention rate a measured window can show: one contention in
# the 2000-operation windows of the default workloads.
VISIBLE_CONTENTION = 0.0005
# A role needs this many acquisitions in a window before its bounce
# fraction says anything about its scope.
MIN_ACQUISITIONS = 100


@dataclass(frozen=True)
class Banded:
    """One kernel and case predicted at the default hand-off and the band's ends."""
    default: CasePrediction
    low: queueing.Prediction  # the band's cheapest hand-off: the highest throughput
    high: queueing.Prediction

    def ops(self, cpus: int) -> tuple[float, float, float]:
        """(lowest, default, highest) throughput over the band at `cpus`."""
        values = [p.at(cpus).ops_per_s for p in (self.low, self.default.prediction, self.high)]
        return min(values), values[1], max(values)


def _pct(value: float) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value * 100:+.0f}%"


def _num(value: float) -> str:
    return doc.fmt(value)


class Section:
    def __init__(self, layout: Layout, run_dir: Path, rows: list[Row], kernels: list[str],
                 baseline: str, chart_stem) -> None:
        self.layout, self.run_dir, self.rows = layout, run_dir, rows
        self.kernels, self.baseline, self.chart_stem = kernels, baseline, chart_stem
        self.error = ""
        self.inputs: list[CaseInputs] = []
        self.banded: dict[tuple[str, evidence.Case], Banded] = {}
        try:
            self.inputs = scaling_inputs.run_inputs(layout, run_dir, rows, kernels)
            for inputs in self.inputs:
                if inputs.insn_per_op is None:
                    continue
                profile = inputs.machine_profile(NS_PER_INSN)
                solved = {h: queueing.solve(profile, MAX_CPUS, h)
                          for h in (HANDOFF_BAND[0], HANDOFF_NS, HANDOFF_BAND[1])}
                self.banded[inputs.kernel, inputs.case] = Banded(
                    CasePrediction(inputs, profile, solved[HANDOFF_NS]),
                    solved[HANDOFF_BAND[0]], solved[HANDOFF_BAND[1]])
        except (lockscope.LockScopeError, scaling_inputs.InputError) as err:
            self.error = str(err)

    # -- the at-a-glance rows -----------------------------------------------------------------

    def glance_rows(self) -> list[list[str]]:
        """Per kernel: in how many cases its predicted 64-CPU throughput beats the
        baseline's, over the whole hand-off band."""
        out = []
        for kernel in self.kernels:
            if kernel == self.baseline:
                continue
            outcome: dict[str, list[float]] = defaultdict(list)
            for (k, case), banded in self.banded.items():
                base = self.banded.get((self.baseline, case))
                if k != kernel or base is None:
                    continue
                changes = [mine.at(AT_CPUS).ops_per_s / theirs.at(AT_CPUS).ops_per_s - 1
                           for mine, theirs in ((banded.low, base.low),
                                                (banded.default.prediction,
                                                 base.default.prediction),
                                                (banded.high, base.high))]
                if all(c > SAME_WITHIN for c in changes):
                    kind = "better"
                elif all(c < -SAME_WITHIN for c in changes):
                    kind = "worse"
                else:
                    kind = "even"
                outcome[kind].append(changes[1])
            if outcome:
                out.append([kernel, f"PREDICTION (model, not measured): throughput at "
                                    f"{AT_CPUS} CPUs",
                            doc.outcome_cell(outcome["better"]), doc.outcome_cell(outcome["even"]),
                            doc.outcome_cell(outcome["worse"])])
        return out

    # -- the section ----------------------------------------------------------------------------

    def blocks(self) -> list:
        b = [doc.Heading(2, "Scaling prediction (a model, not a measurement)")]
        if self.error:
            return b + [doc.Para(f"No prediction: {self.error}")]
        if not self.banded:
            return b + [doc.Para("No prediction: the run has no debug 1-vCPU lock figures "
                                 "with an instruction count per operation.")]
        b.append(doc.Para(self._introduction()))
        b += self._charts()
        b += self._capping_tables()
        b += self._validation()
        b += self._published()
        b += self._sharing()
        b += self._assumptions()
        self._write_json()
        return b

    def _sources(self) -> str:
        """Where the model's inputs came from, counted over the run's kernel-cases and
        their lock roles; the roles that fell back are named per kernel."""
        used = [i for i in self.inputs if i.insn_per_op is not None]
        insn = Counter(i.insn_source for i in used)
        roles = [(i.kernel, r) for i in used for r in i.roles]
        counted = sum(1 for _, r in roles if r.cs_share is not None)
        fell_back: dict[str, set[str]] = {}
        for kernel, r in roles:
            if r.cs_share is None:
                fell_back.setdefault(kernel, set()).add(r.role)
        parts = [f"{source} for {n} of {len(used)} kernel-cases"
                 for source, n in sorted(insn.items())]
        parts.append(f"{scaling_inputs.CS_HOLD} for {counted} of {len(roles)} lock roles "
                     "of those cases")
        if fell_back:
            parts.append(f"{FALLBACK_LEAD}s ("
                         + "; ".join(f"{k}: {', '.join(sorted(v))}"
                                     for k, v in sorted(fell_back.items()))
                         + f") use {scaling_inputs.FALLBACK_HOLD}")
        return "; ".join(parts)

    def _introduction(self) -> str:
        return (
            "What this machine cannot run, a closed queueing model predicts from what it "
            "measures exactly (docs/scaling-model.md, harness/analysis/queueing.py): every "
            "CPU runs the workload back to back; each operation spends its unlocked time in "
            "parallel and queues for each shared icache lock as often as the debug kernel "
            "counted, holding it for its critical section plus a lock hand-off (cache-line "
            "transfer) when another CPU had it. Knobs: hand-off "
            f"**{HANDOFF_NS:g} ns** (band {HANDOFF_BAND[0]:g}-{HANDOFF_BAND[1]:g} ns, the "
            "dotted edges: published x86 core-to-core transfer latencies, within a socket to "
            f"across sockets); **{NS_PER_INSN:g} ns per instruction** on the target machine "
            f"(band {NS_PER_INSN_BAND[0]:g}-{NS_PER_INSN_BAND[1]:g}; it scales every "
            "operation's measured time but not the hand-off, so it sets how much the hand-off "
            "weighs). " + INPUTS_LEAD + self._sources() + ".")

    def _cases(self) -> list[evidence.Case]:
        return sorted({case for (_, case) in self.banded},
                      key=lambda c: (c.workload, c.fs, c.phase))

    def _measured_points(self, banded: Banded) -> list[tuple[float, float, float, float]]:
        """The 1- and 2-vCPU perf throughput, placed on the model's 1-CPU rate: the
        measured 2/1 ratio is what the chart can compare (TCG time is not real time)."""
        inputs = banded.default.inputs
        one, _ = evidence.throughput(self.rows, inputs.case, evidence.plain_mode(self.rows), 1)
        two, _ = evidence.throughput(self.rows, inputs.case, evidence.plain_mode(self.rows), 2)
        m1, m2 = one.get(inputs.kernel), two.get(inputs.kernel)
        if not m1:
            return []
        scale = banded.default.prediction.at(1).ops_per_s / m1.mean
        points = [(1, m1.mean * scale, m1.low * scale, m1.high * scale)]
        if m2:
            points.append((2, m2.mean * scale, m2.low * scale, m2.high * scale))
        return [tuple(v if math.isfinite(v) and v > 0 else math.nan for v in p)
                for p in points]

    def _charts(self) -> list:
        out = [doc.Heading(3, "Predicted throughput against CPUs")]
        for case in self._cases():
            bands, measured, unit = {}, {}, ""
            for kernel in self.kernels:
                banded = self.banded.get((kernel, case))
                if banded is None:
                    continue
                unit = banded.default.inputs.unit
                bands[kernel] = [(n, *banded.ops(n)) for n in CHART_CPUS]
                measured[kernel] = self._measured_points(banded)
            chart = charts.scaling_bands(
                self.chart_stem(f"scaling-{case.slug}"),
                f"{case.label}: PREDICTED throughput", unit, bands, measured, self.kernels)
            out.append(doc.ChartBlock(chart, (
                f"{case.label}: predicted throughput at 1-{MAX_CPUS} CPUs (log-log), line at "
                f"{HANDOFF_NS:g} ns hand-off, dotted edges at {HANDOFF_BAND[0]:g}-{HANDOFF_BAND[1]:g} ns. "
                "Points: the measured TCG throughput at 1 and 2 vCPUs (perf kernels, mean and "
                "95% interval), scaled so the 1-vCPU mean sits on the model's 1-CPU rate: "
                "their 2-over-1 ratio is the measurement")))
        return out

    def _capping_tables(self) -> list:
        out = [doc.Heading(3, "The lock that caps each kernel"),
               doc.Para(f"Per kernel and workload: the shared lock busiest at {MAX_CPUS} CPUs, "
                        f"its utilisation at {AT_CPUS} CPUs, the CPU count from which "
                        "throughput is below half of linear scaling, and the predicted "
                        f"throughput at {AT_CPUS} CPUs over the hand-off band against "
                        f"{self.baseline}. All predictions.")]
        for kernel in self.kernels:
            rows = []
            for case in self._cases():
                banded = self.banded.get((kernel, case))
                if banded is None:
                    continue
                prediction = banded.default.prediction
                name = prediction.bottleneck
                top = prediction.points[-1].utilization.get(name, 0.0) if name else 0.0
                scope = next((r.scope.describe(r.instances) for r in banded.default.inputs.roles
                              if r.role == name), "")
                lock = f"{name} ({scope})" if name and top >= 0.5 else \
                    (f"none (busiest: {name}, {top * 100:.0f}% at {MAX_CPUS})" if name
                     else "none (no shared lock)")
                half = prediction.half_linear_cpus()
                low, mid, high = banded.ops(AT_CPUS)
                base = self.banded.get((self.baseline, case))
                versus = "" if base is None or kernel == self.baseline else \
                    _pct(mid / base.default.prediction.at(AT_CPUS).ops_per_s - 1)
                rows.append([case.label, lock,
                             f"{prediction.at(AT_CPUS).utilization.get(name, 0.0) * 100:.0f}%"
                             if name else "-",
                             str(half) if half else f"never (to {MAX_CPUS})",
                             f"{_num(mid)} ({doc.interval(low, high, 3)})", versus])
            if rows:
                out.append(doc.Para(f"**{kernel}**"))
                out.append(doc.Table(["workload", "capping lock (scope)",
                                      f"its utilisation at {AT_CPUS}",
                                      "below half of linear from (CPUs)",
                                      f"{AT_CPUS}-CPU throughput (hand-off band)",
                                      f"vs {self.baseline}"], rows))
        return out

    def _validation(self) -> list:
        out = [doc.Heading(3, "How good is it: 2 vCPUs predicted from 1 vCPU")]
        locks = validation.lock_checks(self.rows, self.inputs)
        ratios = validation.ratio_checks(self.rows, self.inputs)
        self.summary = {
            "contention": validation.ErrorSummary.of(
                [c.contention_error for c in locks if c.in_aim]),
            "wait": validation.ErrorSummary.of([c.wait_error for c in locks if c.in_aim]),
            "ratio": validation.ErrorSummary.of([c.error for c in ratios]),
            "ratio_in_boot": validation.ErrorSummary.of(
                [c.in_boot_error for c in ratios if c.in_boot]),
        }
        if locks:
            s, w = self.summary["contention"], self.summary["wait"]
            out.append(doc.Para(
                "Debug kernels: contentions and wait time per operation of every icache lock "
                "at 2 vCPUs, predicted from the 1-vCPU debug boot alone (acquisitions, "
                "lock_stat hold times, the 1-vCPU rate; no hand-off: both sides are emulated "
                "time) and measured. Where the measured contention is at least "
                f"{validation.AIM_CONTENTION:g} per operation ({s.count} rows), the contention "
                f"error has a median of {_abs(s.median_abs)} (worst {_abs(s.worst_abs)}; "
                f"{s.within_aim} within {validation.AIM_ERROR * 100:.0f}%), the wait error "
                f"a median of {_abs(w.median_abs)} ({w.within_aim} within "
                f"{validation.AIM_ERROR * 100:.0f}%). The model over-predicts contention: "
                "lock_stat's hold time runs from lockdep's bookkeeping in lock_acquire, before "
                "the lock is taken, to lock_release, so the lock is really held for less than "
                "it says. Measured waits per contention of milliseconds are the host "
                "descheduling a vCPU that holds the lock, which no model of the guest sees."))
            table = [[c.case.label, c.kernel, c.role, c.modelled_as,
                      doc.fmt(c.predicted_contentions), doc.fmt(c.measured_contentions),
                      _pct(c.contention_error) + (" ★" if c.in_aim else ""),
                      doc.fmt(c.predicted_wait_us), doc.fmt(c.measured_wait_us),
                      _pct(c.wait_error)]
                     for c in locks if _shown(c)]
            quiet = sum(1 for c in locks if not _shown(c))
            out.append(doc.Table(["workload", "kernel", "lock", "modelled as",
                                  "contentions/op predicted", "measured", "error",
                                  "wait µs/op predicted", "measured", "error"], table))
            out.append(doc.Para(f"★: measured contention at least "
                                f"{validation.AIM_CONTENTION:g}/op, where the aim is "
                                f"{validation.AIM_ERROR * 100:.0f}%. {quiet} more rows "
                                "(kernel, workload, lock) measured no contention and had "
                                f"less than {VISIBLE_CONTENTION:g}/op predicted (per-inode "
                                "and per-CPU locks, nested locks, rarely taken ones)."))
        if ratios:
            r, rb = self.summary["ratio"], self.summary["ratio_in_boot"]
            out.append(doc.Para(
                "Perf kernels: throughput at 2 vCPUs over 1 vCPU, predicted from the 1-vCPU "
                "TCG rate and the lock shares, against the measured means (TCG, 95% range "
                f"from the two intervals). Median error {_abs(r.median_abs)} over {r.count} "
                f"cases ({r.within_aim} within {validation.AIM_ERROR * 100:.0f}%)"
                + (f"; against 2 workers over 1 worker in the same 2-vCPU boot, median "
                   f"{_abs(rb.median_abs)} over {rb.count}" if rb.count else "")
                + ". The icache locks leave both CPUs nearly free at 2 vCPUs, so the model "
                "predicts close to 2x; what the measurement loses beyond that is outside "
                "the model: a 2-vCPU TCG guest runs even one worker slower than a 1-vCPU "
                "one, and fio's filecreate does not scale at all here."))
            out.append(doc.Table(
                ["workload", "kernel", "predicted 2/1", "measured 2/1 (95% range)", "error",
                 "same boot: 2 workers / 1", "error"],
                [[c.case.label, c.kernel, f"{c.predicted:.3f}",
                  f"{c.measured:.3f} ({_range(c.measured_low, c.measured_high)})",
                  _pct(c.error),
                  f"{c.in_boot.mean:.3f}" if c.in_boot else "", _pct(c.in_boot_error)
                  if c.in_boot else ""] for c in ratios]))
        return out

    def _published(self) -> list:
        outcomes = published.evaluate(self.inputs, HANDOFF_NS, NS_PER_INSN, "mainline")
        self.outcomes = outcomes
        out = [doc.Heading(3, "Against published many-core figures"),
               doc.Para(
                   f"mainline's measured profile, the hand-off at {HANDOFF_NS:g} ns and "
                   f"{NS_PER_INSN:g} ns per instruction for every claim (nothing tuned per "
                   "case). Their machines, filesystems and benchmarks are not this run's: a "
                   "difference measures how far this profile and the model's mechanism "
                   "carry. Where the model is short, it under-states the critical sections "
                   "of a contended many-core machine: it charges one cache-line transfer per "
                   "hand-off, while a contended list_add or list_del also misses on the list "
                   "head and the neighbouring entries that other CPUs wrote last.")]
        rows = []
        for o in outcomes:
            model = "n/a" if o.model is None else (
                f"{o.model * 100:.0f}%" if o.claim.unit == "share" else
                f"{doc.fmt(o.model)} {o.claim.unit}")
            rows.append([o.claim.who, o.claim.text, o.claim.published_text, model,
                         _pct(o.difference) if o.difference is not None else "n/a", o.detail,
                         o.claim.source])
        out.append(doc.Table(["who", "published", "figure", "model (mainline profile)",
                              "model vs published", "how the model was asked", "source"],
                             rows))
        return out

    def _sharing(self) -> list:
        out = [doc.Heading(3, "Sharing: bounces at 2 vCPUs against the declared scopes")]
        figures: dict[tuple[str, str, evidence.Case], dict[str, float]] = defaultdict(dict)
        for r in self.rows:
            if (r.flavour == "debug" and r.cpus == 2 and r.procs == 2 and r.lock
                    and r.metric in ("acq_bounces", "acquisitions", "con_bounces", "contentions")
                    and r.status in ("ok", "warning")):
                figures[r.kernel, r.lock, evidence.Case(r.workload, r.fs, r.phase)][r.metric] = \
                    r.value
        bounced = {k: v for k, v in figures.items() if "acq_bounces" in v and v.get("acquisitions")}
        if not bounced:
            return out + [doc.Para(
                "This run's tidy table has no bounce figures (lock_stat's acq-bounces and "
                "con-bounces reach it since harness/boot/measure.py records them; cells "
                "measured before that lack them), so the declared scopes are not checked "
                "here. The scopes the model used: " + self._declared_scopes() + ".")]
        rows, flags = [], []
        for kernel in self.kernels:
            declared = lockscope.load_for(self.layout, kernel).roles
            by_role: dict[str, list[tuple[evidence.Case, float, float]]] = defaultdict(list)
            for (k, role, case), v in bounced.items():
                if k == kernel:
                    by_role[role].append((case, v["acq_bounces"] / v["acquisitions"],
                                          v["acquisitions"]))
            for role, items in sorted(by_role.items()):
                scope = declared.get(role)
                fractions = [f for _, f, _ in items]
                rows.append([kernel, role, scope.describe() if scope else "undeclared",
                             f"{min(fractions) * 100:.1f}%-{max(fractions) * 100:.1f}%"
                             if len(fractions) > 1 else f"{fractions[0] * 100:.1f}%",
                             str(len(items))])
                for case, fraction, count in items:
                    if count < MIN_ACQUISITIONS or scope is None:
                        continue
                    if scope.scope in lockscope.PRIVATE_SCOPES and fraction > PRIVATE_BOUNCE_LIMIT:
                        flags.append(f"{kernel} {role} is declared {scope.scope} but "
                                     f"{fraction * 100:.1f}% of its acquisitions bounced in "
                                     f"{case.label}, whose workers share no inode")
                    if scope.scope in lockscope.SHARED_SCOPES and not scope.under \
                            and fraction == 0:
                        flags.append(f"{kernel} {role} is declared {scope.scope} but none of "
                                     f"its {count:.0f} acquisitions bounced in {case.label}")
        out.append(doc.Para(
            "Bounce fraction: the share of acquisitions whose previous acquirer of the same "
            "lock instance ran on the other vCPU (lock_stat acq-bounces / acquisitions, debug "
            "kernels, 2 vCPUs, 2 workers), range over the workloads. A shared lock bounces "
            "often; a per-CPU or per-inode lock should not, in workloads whose workers each "
            "have their own directory. A flag below is a contradiction to explain, not "
            "necessarily a wrong scope: a worker that the scheduler moves to the other vCPU "
            "between creating its files and unlinking them bounces every inode's first "
            f"i_lock. Roles with fewer than {MIN_ACQUISITIONS} acquisitions in a window are "
            "not judged."))
        out.append(doc.Table(["kernel", "lock", "declared scope", "bounce fraction",
                              "workloads"], rows))
        out.append(doc.Para("Declared scopes contradicted by the bounces: " +
                            ("; ".join(flags) if flags else "none") + "."))
        return out

    def _declared_scopes(self) -> str:
        parts = []
        for kernel in self.kernels:
            seen = {}
            for i in self.inputs:
                if i.kernel == kernel:
                    for r in i.roles:
                        seen.setdefault(r.role, r.scope.describe(r.instances))
            if seen:
                parts.append(f"{kernel}: " + ", ".join(f"{k} {v}" for k, v in seen.items()))
        return "; ".join(parts)

    def _assumptions(self) -> list:
        notes = sorted({n for i in self.inputs for n in i.notes})
        items = [
            "Every CPU runs the workload without pause; the workers share only the locks the "
            "lock-scope files call shared (a global lock, the superblock's list, the bdi's "
            "writeback list, a NUMA node's LRU) and the hash buckets, which operations hit "
            "evenly. Per-CPU and per-inode locks never wait.",
            "An operation's locked and unlocked work is what one CPU measured here; nothing "
            "else (memory bandwidth, the page allocator, the filesystem's own locks, fio's "
            "bookkeeping) slows down as CPUs are added. Other locks the workload contends "
            "on are not in the model.",
            "A lock held inside another that serialises it (base's hash and sb list under the "
            "global lock) adds no queue of its own.",
            "The hand-off is one cache-line transfer for queued spinlocks and one more per "
            "waiting CPU for bit locks (Boyd-Wickizer et al., 2012); an uncontended "
            "acquisition misses on the lock's line when another CPU took it last. Cache "
            "lines of the data a critical section touches are not counted.",
            "Hash bucket counts are the guest's (its memory sizes the table); a big machine "
            "has more buckets, and fewer collisions.",
            "The LRU is modelled as one list (one NUMA node), as in the guest; a two-socket "
            "machine has two.",
            "Service times are taken as exponential (exact mean value analysis); constant "
            "critical sections wait about half as long per contention.",
        ] + notes
        return [doc.Heading(3, "Assumptions, in plain words")] + [doc.Para("- " + t)
                                                                 for t in items]

    def _write_json(self) -> None:
        tables = scaling_inputs.hash_table_sizes(self.run_dir)
        cpus = [1, 2, 4, 8, 16, 32, 64, 128, 256]
        out = {
            "note": "PREDICTIONS of the queueing model (docs/scaling-model.md)",
            "knobs": {"handoff_ns": HANDOFF_NS, "handoff_band_ns": list(HANDOFF_BAND),
                      "ns_per_insn": NS_PER_INSN, "ns_per_insn_band": list(NS_PER_INSN_BAND)},
            "hash_tables": {k: {t: {"entries": s.entries, "source": s.source}
                                for t, s in v.items()} for k, v in tables.items()},
            "cases": [dict(b.default.as_json(cpus),
                           ops_per_s_band=[[b.low.at(n).ops_per_s, b.high.at(n).ops_per_s]
                                           for n in cpus])
                      for b in self.banded.values()],
            "validation": {k: vars(v) for k, v in getattr(self, "summary", {}).items()},
            "published": [{"claim": o.claim.key, "published": o.claim.published,
                           "model": o.model, "difference": o.difference}
                          for o in getattr(self, "outcomes", [])],
        }
        (self.run_dir / scaling_inputs.SCALING_JSON).write_text(
            json.dumps(_finite(out), indent=1) + "\n")


def _finite(value):
    """JSON has no NaN: undefined numbers (an error against a zero) become null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _shown(check: validation.LockCheck) -> bool:
    return check.measured_contentions > 0 or check.predicted_contentions >= VISIBLE_CONTENTION


def _abs(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value * 100:.0f}%"


def _range(low: float, high: float) -> str:
    return "n/a" if not (math.isfinite(low) and math.isfinite(high)) else f"{low:.2f}-{high:.2f}"
