"""The report's "Scaling prediction" section: the queueing model on this run.

Per workload case, each kernel's predicted throughput at 1-256 CPUs as a band
over the target machines (machines.py); per kernel, the lock that caps it;
what separates chinner from piggin and why; the published anchors before and
after the cache-line model; how the model did at 2 vCPUs; the solver checks;
the sharing lock_stat measured against the declared lock scopes; what is not
claimed; the assumptions. Also a row per kernel for the report's at-a-glance
table, and scaling.json in the run folder (the predictions and the bucket
counts they used, so a published reference without boot folders keeps them).

Everything here is labelled a prediction except the measured points.
Predictions are written with two significant digits.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path

from harness import lockscope
from harness.analysis import evidence, machines, predict, published, queueing, scaling_inputs
from harness.analysis import scaling_validation as validation
from harness.analysis.predict import CasePrediction
from harness.analysis.scaling_inputs import CaseInputs
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
# Two kernels whose predictions differ by less than this, on every target
# machine, are called the same: the model is not claimed to tell them apart.
SAME_WITHIN = 0.05
# What the report does not claim (docs/scaling-model.md): absolute rates past
# 2 CPUs, saturation points to better than about this factor, differences
# under SAME_WITHIN.
SATURATION_FACTOR = 2
# The what-if that shows how per-inode locks separate the designs: every
# worker on one inode (the hot-inode workloads of issue 24).
HOT_INODES = 1
# A per-CPU or per-inode role whose acquisitions bounce more often than this
# at 2 vCPUs is shared after all (migrations and kernel threads bounce a few).
PRIVATE_BOUNCE_LIMIT = 0.05
# The smallest contention rate a measured window can show: one contention in
# the 2000-operation windows of the default workloads.
VISIBLE_CONTENTION = 0.0005
# A role needs this many acquisitions in a window before its bounce
# fraction says anything about its scope.
MIN_ACQUISITIONS = 100
SUFFIXES = ((1e9, "G"), (1e6, "M"), (1e3, "k"))


def sig2(value: float | None) -> str:
    """Two significant digits, large numbers with k/M/G."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if value == 0:
        return "0"
    rounded = float(f"{value:.2g}")
    scale, suffix = next(((s, x) for s, x in SUFFIXES if abs(rounded) >= s), (1.0, ""))
    shown = rounded / scale
    decimals = max(0, 1 - math.floor(math.log10(abs(shown))))
    return f"{shown:.{decimals}f}{suffix}"


def _band(low: float, mid: float, high: float) -> str:
    """The line and, in brackets, the lowest and highest over the machines; ends that
    read the same at two digits are written once."""
    a, b = sig2(low), sig2(high)
    return f"{sig2(mid)} (every machine)" if a == b else f"{sig2(mid)} ({a}-{b})"


def _pct(value: float | None) -> str:
    """Whole percents, with one decimal within a point of SAME_WITHIN, where a rounded
    "-5%" would hide which side of the verdict's threshold the change fell."""
    if value is None or math.isnan(value):
        return "n/a"
    if abs(abs(value) - SAME_WITHIN) < 0.01:
        return f"{value * 100:+.1f}%"
    shown = round(value * 100)
    return "0%" if shown == 0 else f"{shown:+d}%"


def _abs(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value * 100:.0f}%"


class Section:
    def __init__(self, layout: Layout, run_dir: Path, rows: list[Row], kernels: list[str],
                 baseline: str, chart_stem) -> None:
        self.layout, self.run_dir, self.rows = layout, run_dir, rows
        self.kernels, self.baseline, self.chart_stem = kernels, baseline, chart_stem
        self.error = ""
        self.inputs: list[CaseInputs] = []
        self.banded: dict[tuple[str, evidence.Case], CasePrediction] = {}
        self.outcomes: list[published.Outcome] = []
        self.summary: dict[str, validation.ErrorSummary] = {}
        try:
            self.inputs = scaling_inputs.run_inputs(layout, run_dir, rows, kernels)
            for inputs in self.inputs:
                if inputs.insn_per_op is not None:
                    self.banded[inputs.kernel, inputs.case] = predict.solve_case(
                        inputs, machines.MACHINES, MAX_CPUS)
        except (lockscope.LockScopeError, scaling_inputs.InputError,
                queueing.ProfileError) as err:
            self.error = str(err)

    # -- the at-a-glance rows -----------------------------------------------------------------

    def glance_rows(self) -> list[list[str]]:
        """Per kernel: in how many cases its predicted 64-CPU throughput beats the
        baseline's on every target machine."""
        out = []
        for kernel in self.kernels:
            if kernel == self.baseline:
                continue
            outcome: dict[str, list[float]] = defaultdict(list)
            for (k, case), banded in self.banded.items():
                base = self.banded.get((self.baseline, case))
                if k != kernel or base is None:
                    continue
                changes = _changes(banded, base, AT_CPUS)
                kind = "better" if all(c > SAME_WITHIN for c in changes.values()) else \
                    "worse" if all(c < -SAME_WITHIN for c in changes.values()) else "even"
                outcome[kind].append(changes[banded.central])
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
        b.append(doc.Table(["machine", "t (line another CPU wrote)", "m (cold line)",
                            "ns per instruction"], self._machine_rows()))
        b.append(doc.Bullets([f"{m.key}: " + " ".join(m.sources) + (f" ({m.note})" if m.note
                                                                    else "")
                              for m in machines.MACHINES]))
        b += self._charts()
        b += self._capping_tables()
        self.outcomes = published.evaluate(self.inputs, "mainline")
        b += self._duel()
        b += self._published()
        b += self._validation()
        b += self._checks()
        b += self._sharing()
        b += self._not_claimed()
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
        lines = Counter(r.counted.source for _, r in roles)
        fell_back: dict[str, set[str]] = {}
        for kernel, r in roles:
            if r.cs_share is None:
                fell_back.setdefault(kernel, set()).add(r.role)
        parts = [f"{source} for {n} of {len(used)} kernel-cases"
                 for source, n in sorted(insn.items())]
        parts.append(f"{scaling_inputs.CS_HOLD} for {counted} of {len(roles)} lock roles "
                     "of those cases")
        parts += [f"{source} for {n} roles" for source, n in sorted(lines.items())]
        blocked = sum(1 for i in used if i.blocked_ns_per_op is not None)
        parts.append(f"blocked time per operation (wall minus CPU, perf kernels) for {blocked} "
                     f"of {len(used)} kernel-cases (none: blocked time counts as 0)")
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
            "CPU runs the workload back to back; each operation spends its unlocked and its "
            "blocked time in parallel and queues for each shared icache lock as often as the "
            "debug kernel counted. An acquisition holds the lock for its instructions, its "
            "cold cache lines (m each) and the lines it takes from the previous holder: the "
            "lock word and the data an earlier critical section wrote (t each), with the "
            "hand-off each lock's algorithm needs (a queued spinlock's one waiter, a bit "
            "lock's every polling waiter). t and m are published latencies of the target "
            "machines below, never fitted to the anchors; predictions are bands over the "
            f"machines (the line: {machines.by_key(machines.DEFAULT).name}), with two "
            "significant digits. " + INPUTS_LEAD + self._sources() + ".")

    def _machine_rows(self) -> list[list[str]]:
        return [[f"{m.key}: {m.name}", f"{m.transfer_ns:.0f} ns", f"{m.memory_ns:.0f} ns",
                 f"{m.ns_per_insn:.2f}"] for m in machines.MACHINES]

    def _cases(self) -> list[evidence.Case]:
        return sorted({case for (_, case) in self.banded},
                      key=lambda c: (c.workload, c.fs, c.phase))

    def _measured_points(self, banded: CasePrediction) -> list[tuple[float, float, float, float]]:
        """The 1- and 2-vCPU perf throughput, placed on the model's 1-CPU rate: the
        measured 2/1 ratio is what the chart can compare (TCG time is not real time)."""
        inputs = banded.inputs
        mode = evidence.plain_mode(self.rows)
        one, _ = evidence.throughput(self.rows, inputs.case, mode, 1)
        two, _ = evidence.throughput(self.rows, inputs.case, mode, 2)
        m1, m2 = one.get(inputs.kernel), two.get(inputs.kernel)
        if not m1:
            return []
        scale = banded.prediction.at(1).ops_per_s / m1.mean
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
                unit = banded.inputs.unit
                bands[kernel] = [(n, *banded.ops(n)) for n in CHART_CPUS]
                measured[kernel] = self._measured_points(banded)
            chart = charts.scaling_bands(
                self.chart_stem(f"scaling-{case.slug}"),
                f"{case.label}: PREDICTED throughput", unit, bands, measured, self.kernels)
            out.append(doc.ChartBlock(chart, (
                f"{case.label}: predicted throughput at 1-{MAX_CPUS} CPUs (log-log), line on "
                f"the {machines.DEFAULT} machine, dotted edges: the band over the target machines "
                f"({', '.join(m.key for m in machines.MACHINES)}). Points: the measured TCG "
                "throughput at 1 and 2 vCPUs (perf kernels, mean and 95% interval), scaled so "
                "the 1-vCPU mean sits on the model's 1-CPU rate: their 2-over-1 ratio is the "
                "measurement")))
        return out

    def _capping_row(self, kernel: str, case: evidence.Case, banded: CasePrediction) -> list[str]:
        prediction = banded.prediction
        name = prediction.bottleneck
        top = prediction.points[-1].utilization.get(name, 0.0) if name else 0.0
        scope = next((r.scope.describe(r.instances) for r in banded.inputs.roles
                      if r.role == name), "per-inode (shared inodes)" if name else "")
        lock = f"{name} ({scope})" if name and top >= 0.5 else \
            (f"none (busiest: {name}, {top * 100:.0f}% at {MAX_CPUS})" if name
             else "none (no shared lock)")
        half = prediction.half_linear_cpus()
        base = self.banded.get((self.baseline, case))
        versus = "" if base is None or kernel == self.baseline else \
            _pct(_changes(banded, base, AT_CPUS)[banded.central])
        return [case.label, lock,
                f"{prediction.at(AT_CPUS).utilization.get(name, 0.0) * 100:.0f}%" if name else "-",
                str(half) if half else f"never (to {MAX_CPUS})",
                _band(*banded.ops(AT_CPUS)), versus,
                ", ".join(banded.inputs.fallbacks) or "none"]

    def _capping_tables(self) -> list:
        out = [doc.Heading(3, "The lock that caps each kernel"),
               doc.Para(f"Per kernel and workload, on the {machines.DEFAULT} machine: the "
                        f"shared lock busiest at {MAX_CPUS} CPUs, its utilisation at "
                        f"{AT_CPUS} CPUs, the CPU count from which throughput is below half "
                        f"of linear scaling, the predicted throughput at {AT_CPUS} CPUs (in "
                        f"brackets: the lowest and highest over the machines) against "
                        f"{self.baseline}, and the inputs that fell back (tcg-cs did not "
                        f"count them). All predictions.")]
        for kernel in self.kernels:
            rows = [self._capping_row(kernel, case, self.banded[kernel, case])
                    for case in self._cases() if (kernel, case) in self.banded]
            if rows:
                out.append(doc.Para(f"**{kernel}**"))
                out.append(doc.Table(["workload", "capping lock (scope)",
                                      f"its utilisation at {AT_CPUS}",
                                      "below half of linear from (CPUs)",
                                      f"{AT_CPUS}-CPU throughput (band)", f"vs {self.baseline}",
                                      "fallbacks"], rows))
        return out

    # -- chinner against piggin -------------------------------------------------------------------

    def _shared_inodes(self) -> dict[evidence.Case, int]:
        """The cases whose workload declares inodes every worker shares, and how many."""
        return {i.case: i.shared_inodes for i in self.inputs if i.shared_inodes}

    def _duel(self) -> list:
        out = [doc.Heading(3, "What separates chinner from piggin (a prediction)")]
        pairs = [(case, self.banded[("chinner", case)], self.banded[("piggin", case)])
                 for case in self._cases()
                 if ("chinner", case) in self.banded and ("piggin", case) in self.banded]
        if not pairs:
            return out + [doc.Para("This run does not predict both chinner and piggin.")]
        rows, apart = [], 0
        for case, chinner, piggin in pairs:
            changes = _changes(piggin, chinner, AT_CPUS)
            separated = all(abs(c) >= SAME_WITHIN for c in changes.values()) and \
                len({c > 0 for c in changes.values()}) == 1
            apart += separated
            hot = _hot_change(piggin, chinner, AT_CPUS)
            rows.append([case.label, " ".join(f"{k} {_pct(v)}" for k, v in changes.items()),
                         "predicted apart" if separated else
                         f"predicted same (under {SAME_WITHIN * 100:.0f}%)",
                         " ".join(f"{k} {_pct(v)}" for k, v in hot.items()),
                         _why(chinner.inputs, piggin.inputs),
                         _fallback_text(("chinner", chinner.inputs), ("piggin", piggin.inputs))])
        shared = self._shared_inodes()
        declared = sorted({(c.workload, n) for c, n in shared.items()
                           if any(c == case for case, _, _ in pairs)})
        as_run = ("the workers share no inode" if not declared else
                  "the workers share no inode, except in "
                  + ", ".join(f"{w} ({doc.plural(n, 'inode')} every worker uses)"
                              for w, n in declared))
        out.append(doc.Para(
            f"piggin against chinner at {AT_CPUS} CPUs on each target machine, as the run's "
            f"workloads are ({as_run}), and in a what-if where every "
            f"per-inode lock acquisition of the profile falls on {HOT_INODES} inode all "
            "workers share (the worst case for per-inode lock contention in these "
            "profiles, not a bound on the difference between the designs). "
            f"{apart} of "
            f"{len(pairs)} cases are apart by "
            f"{SAME_WITHIN * 100:.0f}% or more on every machine. " + relative_record(self.outcomes) +
            "Why: the role-by-role "
            "differences of the inputs (acquisitions per operation, critical-section "
            "instructions, lines from the previous holder); critical-section instructions "
            "are compared only where tcg-cs counted both. Fallbacks: the inputs tcg-cs did "
            "not count; a hold then falls back to its share of a debug-kernel operation "
            "(lockdep's bookkeeping inflates it), instructions/op to the 1-vCPU -icount "
            "rate. A row that lists one rests on it."))
        out.append(doc.Table(["workload", "piggin vs chinner, as run",
                              "verdict", f"with {HOT_INODES} shared inode", "why",
                              "fallbacks"], rows))
        return out

    # -- the published record ----------------------------------------------------------------------

    def _published(self) -> list:
        source, earlier = published.before()
        out = [doc.Heading(3, "Against the published record, before and after"),
               doc.Para(
                   "mainline's measured profile on every target machine, the same constants "
                   "for every anchor. \"before\": the model of issue 14 (one transfer of "
                   "100 ns per hand-off, nothing inside the critical sections), as recorded "
                   f"in {source}. \"after\": this model, the {machines.DEFAULT} machine "
                   "and in brackets the band over the machines. An anchor holds when the "
                   "machine of the publisher's class (Long's four-socket E7) lands in the "
                   "tolerance, or, the publisher's machine being unknown, when one target "
                   "machine does; the machines inside are named.")]
        rows = []
        for o in self.outcomes:
            was = earlier.get(o.anchor.key)
            values = o.values
            after = _band(min(values.values()), values.get(machines.DEFAULT, math.nan),
                          max(values.values())) if values else "n/a"
            rows.append([o.anchor.who, o.anchor.text, o.anchor.published_text,
                         f"{sig2(o.anchor.low)}-{sig2(o.anchor.high)}",
                         sig2(was.model) if was else "not evaluated", after,
                         ("yes" if o.holds else "no") + (
                             f" ({', '.join(o.within)})" if o.within else "")
                         if o.holds is not None else "n/a",
                         o.detail, o.anchor.why_profile, o.anchor.source])
        out.append(doc.Table(["who", "published", "figure", "tolerance", "model before",
                              "model after", "holds (machines inside)", "how the model was "
                              "asked", "profile, and why it fits", "source"], rows))
        return out

    # -- 2 vCPUs ------------------------------------------------------------------------------------

    def _validation(self) -> list:
        out = [doc.Heading(3, "How good is it at 2 vCPUs")]
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
            out += self._lock_validation(locks)
        if ratios:
            out += self._ratio_check(ratios)
        return out

    def _lock_validation(self, locks: list[validation.LockCheck]) -> list:
        s, w = self.summary["contention"], self.summary["wait"]
        text = (
            "Debug kernels: contentions and wait time per operation of every icache lock at "
            "2 vCPUs, predicted from the 1-vCPU debug boot alone (acquisitions, lock_stat hold "
            "times, the 1-vCPU rate; no line costs: both sides are emulated time) and "
            f"measured. Where the measured contention is at least "
            f"{validation.AIM_CONTENTION:g} per operation ({s.count} rows), the contention "
            f"error has a median of {_abs(s.median_abs)} (worst {_abs(s.worst_abs)}; "
            f"{s.within_aim} within {validation.AIM_ERROR * 100:.0f}%), the wait error a "
            f"median of {_abs(w.median_abs)} ({w.within_aim} within "
            f"{validation.AIM_ERROR * 100:.0f}%). lock_stat's hold time runs from lockdep's "
            "bookkeeping in lock_acquire to lock_release, so the lock is held for less than it "
            "says; measured waits of milliseconds are the host descheduling a vCPU that holds "
            "the lock. The padded-section sweep and perf lock contention on the perf kernels "
            "(docs/scaling-model.md, \"At 2 vCPUs\") are the checks without lockdep.")
        table = [[c.case.label, c.kernel, c.role, c.modelled_as,
                  doc.fmt(c.predicted_contentions), doc.fmt(c.measured_contentions),
                  _pct(c.contention_error) + (" ★" if c.in_aim else ""),
                  doc.fmt(c.predicted_wait_us), doc.fmt(c.measured_wait_us), _pct(c.wait_error)]
                 for c in locks if _shown(c)]
        quiet = sum(1 for c in locks if not _shown(c))
        return [doc.Para(text),
                doc.Table(["workload", "kernel", "lock", "modelled as",
                           "contentions/op predicted", "measured", "error",
                           "wait µs/op predicted", "measured", "error"], table),
                doc.Para(f"★: measured contention at least {validation.AIM_CONTENTION:g}/op, "
                         f"where the aim is {validation.AIM_ERROR * 100:.0f}%. {quiet} more "
                         "rows (kernel, workload, lock) measured no contention and had less "
                         f"than {VISIBLE_CONTENTION:g}/op predicted.")]

    def _ratio_check(self, ratios: list[validation.RatioCheck]) -> list:
        r, rb = self.summary["ratio"], self.summary["ratio_in_boot"]
        near_two = sum(1 for c in ratios if c.predicted > 1.99)
        return [doc.Para(
            "A harness check, not validation: perf-kernel throughput at 2 vCPUs over 1 vCPU "
            f"under TCG. The model predicts at least 1.99 in {near_two} of {len(ratios)} "
            "cases (the icache locks leave both CPUs nearly free), so the check cannot "
            "falsify it; what the measurement loses is TCG and the host (a 2-vCPU guest runs "
            f"even one worker slower). Median |predicted - measured| / measured "
            f"{_abs(r.median_abs)} over {r.count} cases"
            + (f"; against 2 workers over 1 worker in the same 2-vCPU boot "
               f"{_abs(rb.median_abs)} over {rb.count}" if rb.count else "") + "."),
            doc.Table(["workload", "kernel", "predicted 2/1", "measured 2/1 (95% range)",
                       "same boot: 2 workers / 1"],
                      [[c.case.label, c.kernel, f"{c.predicted:.2f}",
                        f"{c.measured:.2f} ({_range(c.measured_low, c.measured_high)})",
                        f"{c.in_boot.mean:.2f}" if c.in_boot else ""] for c in ratios])]

    # -- solver checks ----------------------------------------------------------------------------

    def _checks(self) -> list:
        failed = [(k, c.label, m, found[0]) for (k, c), b in self.banded.items()
                  for m, found in b.violations().items()]
        total = len(self.banded) * len(machines.MACHINES)
        self.check_failures = failed
        text = (f"Solver checks on every prediction of this section ({len(self.banded)} "
                f"kernel-cases on {len(machines.MACHINES)} machines, {total} in all, 1 to "
                f"{MAX_CPUS} CPUs): throughput never falls as CPUs are added (by more than "
                f"{queueing.MONOTONE_TOLERANCE:g} of its value), never exceeds the asymptotic "
                "bound, and never exceeds 1/(A S) of the busiest lock. "
                + (f"All {total} pass." if not failed else f"{len(failed)} fail:"))
        out = [doc.Heading(3, "Solver checks"), doc.Para(text)]
        if failed:
            out.append(doc.Table(["kernel", "workload", "machine", "first failure"],
                                 [list(f) for f in failed]))
        out.append(doc.Para(
            "The load-dependent stations against an exact product-form solution (a "
            "normalising-constant convolution written independently): "
            "harness/tests/test_queueing.py, within 0.1% for the queued spinlock and 3% for "
            "the bit lock."))
        return out

    # -- sharing ------------------------------------------------------------------------------------

    def _sharing(self) -> list:
        out = [doc.Heading(3, "Sharing: bounces at 2 vCPUs against the declared scopes")]
        bounced = self._bounce_figures()
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
                flags += _scope_flags(kernel, role, scope, items, self._shared_inodes())
        out.append(doc.Para(
            "Bounce fraction: the share of acquisitions whose previous acquirer of the same "
            "lock instance ran on the other vCPU (lock_stat acq-bounces / acquisitions, debug "
            "kernels, 2 vCPUs, 2 workers), range over the workloads. A flag below is a "
            "contradiction to explain, not necessarily a wrong scope. Roles with fewer than "
            f"{MIN_ACQUISITIONS} acquisitions in a window are not judged."))
        out.append(doc.Table(["kernel", "lock", "declared scope", "bounce fraction",
                              "workloads"], rows))
        out.append(doc.Para("Declared scopes contradicted by the bounces: " +
                            ("; ".join(flags) if flags else "none") + "."))
        return out

    def _bounce_figures(self) -> dict[tuple[str, str, evidence.Case], dict[str, float]]:
        figures: dict[tuple[str, str, evidence.Case], dict[str, float]] = defaultdict(dict)
        for r in self.rows:
            if (r.flavour == "debug" and r.cpus == 2 and r.procs == 2 and r.lock
                    and r.metric in ("acq_bounces", "acquisitions", "con_bounces", "contentions")
                    and r.status in ("ok", "warning")):
                figures[r.kernel, r.lock, evidence.Case(r.workload, r.fs, r.phase)][r.metric] = \
                    r.value
        return {k: v for k, v in figures.items() if "acq_bounces" in v and v.get("acquisitions")}

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

    # -- what is not claimed, assumptions, scaling.json -------------------------------------------

    def _anchor_factor(self) -> float | None:
        """The largest factor between the central machine's value and the published
        figure over the anchors the run could evaluate."""
        factors = [max(v / o.anchor.published, o.anchor.published / v)
                   for o in self.outcomes
                   if (v := o.values.get(machines.DEFAULT)) and o.anchor.published > 0]
        return max(factors) if factors else None

    def _not_claimed(self) -> list:
        factor = self._anchor_factor()
        return [doc.Heading(3, "What is not claimed"), doc.Bullets([
            "Absolute rates past 2 CPUs: every rate above is a prediction on machines this "
            "harness never ran on; only the shape (where a lock caps, which kernel is ahead) "
            "is meant, and the anchors say how far the shape carries.",
            f"Saturation points to better than about {SATURATION_FACTOR}x"
            + (f": on the {machines.DEFAULT} machine the anchors land within "
               f"{factor:.1f}x of the published figures." if factor else "."),
            f"Differences under {SAME_WITHIN * 100:.0f}% between "
            "kernels: the inputs (instruction counts, hand-counted or measured lines, the "
            "machines' latencies) carry more uncertainty than that.",
            "Anything about locks outside the icache roles, memory bandwidth, the filesystems' "
            "own locks, or the scheduler: they are not in the model."])]

    def _assumptions(self) -> list:
        notes = sorted({n for i in self.inputs for n in i.notes})
        items = [
            "Every CPU runs the workload without pause; the workers share only the locks the "
            "lock-scope files call shared, the hash buckets (hit evenly), and per-inode locks "
            "where the workload declares shared inodes.",
            "An operation's instructions are what one CPU counted here, at one instruction per "
            "cycle of the machine's clock; its blocked time (wall minus CPU in the perf boots) "
            "is a delay that does not change with the CPU count.",
            "A critical section costs its instructions, its cold lines (memory latency each) "
            "and the lines it takes from the previous holder (a transfer each): the lock word, "
            "the data an earlier section of the same instance wrote, and the lock word's line "
            "again when the section writes it while a waiter spins on it. Memory-level "
            "parallelism inside a section is not credited: the line costs add up.",
            "A lock taken inside another adds its wait to the outer hold; nesting comes from "
            "the tcg-cs rows (cs_inside_share), and a run without them nests nothing.",
            "Hash chains are as long as the guest's (its memory sizes the table, its "
            "workloads fill it); the Guzik anchor scales them to his 15 million inodes in 2^20 "
            "buckets.",
            "Service times are taken as exponential (exact mean value analysis); constant "
            "critical sections wait about half as long per contention.",
        ] + notes
        return [doc.Heading(3, "Assumptions, in plain words"), doc.Bullets(items)]

    def _write_json(self) -> None:
        tables = scaling_inputs.hash_table_sizes(self.run_dir)
        cpus = list(predict.DEFAULT_CPUS)
        out = {
            "note": "PREDICTIONS of the queueing model (docs/scaling-model.md)",
            "knobs": {"machines": {m.key: {"name": m.name, "transfer_ns": m.transfer_ns,
                                           "memory_ns": m.memory_ns,
                                           "ns_per_insn": m.ns_per_insn}
                                   for m in machines.MACHINES},
                      "central": machines.DEFAULT},
            "hash_tables": {k: {t: {"entries": s.entries, "source": s.source}
                                for t, s in v.items()} for k, v in tables.items()},
            "cases": [b.as_json(cpus) for b in self.banded.values()],
            "validation": {k: vars(v) for k, v in self.summary.items()},
            "published": [{"anchor": o.anchor.key, "published": o.anchor.published,
                           "tolerance": [o.anchor.low, o.anchor.high], "model": o.values,
                           "holds": o.holds} for o in self.outcomes],
            "checks": {"failed": [list(f) for f in getattr(self, "check_failures", [])]},
        }
        (self.run_dir / scaling_inputs.SCALING_JSON).write_text(
            json.dumps(_finite(out), indent=1) + "\n")


def _changes(mine: CasePrediction, theirs: CasePrediction, cpus: int) -> dict[str, float]:
    """Machine -> mine over theirs minus one, at `cpus`."""
    return {k: p.at(cpus).ops_per_s / theirs.solved[k][1].at(cpus).ops_per_s - 1
            for k, (_, p) in mine.solved.items() if k in theirs.solved}


def _hot_change(mine: CasePrediction, theirs: CasePrediction, cpus: int) -> dict[str, float]:
    """As _changes, with every worker on HOT_INODES shared inodes."""
    out = {}
    for k, (profile, _) in mine.solved.items():
        if k not in theirs.solved:
            continue
        machine = machines.by_key(k)
        hot = [queueing.solve(replace(p, shared_inodes=HOT_INODES), cpus, machine)
               for p in (profile, theirs.solved[k][0])]
        out[k] = hot[0].at(cpus).ops_per_s / hot[1].at(cpus).ops_per_s - 1
    return out


def relative_record(outcomes: list[published.Outcome]) -> str:
    """How the model did on the published changes of design, the kind of figure
    this table predicts."""
    found = [o for o in outcomes if o.relative and o.holds is not None]
    if not found:
        return ("No published change of design (after over before) was evaluated, so "
                "this kind of prediction has no measured error. ")
    held = [o for o in found if o.holds]
    return (f"Its record on this kind of figure, published changes of design (after "
            f"over before, \"Against the published record\"): {len(held)} of "
            f"{len(found)} held ("
            + "; ".join(f"{o.anchor.who}, {o.anchor.published_text}: the model "
                        f"{sig2(o.values.get(machines.DEFAULT, math.nan))} on "
                        f"{machines.DEFAULT}" for o in found)
            + "), so a verdict here is a prediction with that record, not a finding. ")


def _fallback_text(*named: tuple[str, CaseInputs]) -> str:
    parts = [f"{kernel}: {', '.join(inputs.fallbacks)}" for kernel, inputs in named
             if inputs.fallbacks]
    return "; ".join(parts) or "none"


def _why(chinner: CaseInputs, piggin: CaseInputs) -> str:
    """The roles whose inputs differ between the two designs, and how."""
    mine = {r.role: r for r in chinner.roles}
    parts = []
    for r in piggin.roles:
        c = mine.get(r.role)
        if c is None:
            parts.append(f"{r.role}: piggin only")
            continue
        diffs = []
        if abs(r.acquisitions_per_op - c.acquisitions_per_op) > 0.01 * c.acquisitions_per_op:
            diffs.append(f"{sig2(c.acquisitions_per_op)} -> {sig2(r.acquisitions_per_op)}/op")
        insn_c = (c.cs_share or 0) * (chinner.insn_per_op or 0)
        insn_p = (r.cs_share or 0) * (piggin.insn_per_op or 0)
        if insn_c and insn_p and abs(insn_p - insn_c) > 0.05 * insn_c:
            diffs.append(f"{sig2(insn_c)} -> {sig2(insn_p)} insn")
        if abs(r.counted.from_previous - c.counted.from_previous) > 0.05:
            diffs.append(f"W {sig2(c.counted.from_previous)} -> {sig2(r.counted.from_previous)}")
        if diffs:
            parts.append(f"{r.role} ({r.scope.scope}): " + ", ".join(diffs))
    return "; ".join(parts) or "no input differs"


def _scope_flags(kernel: str, role: str, scope: lockscope.RoleScope | None,
                 items: list[tuple[evidence.Case, float, float]],
                 shared: dict[evidence.Case, int]) -> list[str]:
    """shared: the cases whose workload declares inodes its workers share, where a
    private lock bounces by design."""
    flags = []
    for case, fraction, count in items:
        if count < MIN_ACQUISITIONS or scope is None:
            continue
        if scope.scope in lockscope.PRIVATE_SCOPES and fraction > PRIVATE_BOUNCE_LIMIT \
                and not shared.get(case):
            flags.append(f"{kernel} {role} is declared {scope.scope} but "
                         f"{fraction * 100:.1f}% of its acquisitions bounced in "
                         f"{case.label}, whose workers share no inode")
        if scope.scope in lockscope.SHARED_SCOPES and not scope.under and fraction == 0:
            flags.append(f"{kernel} {role} is declared {scope.scope} but none of "
                         f"its {count:.0f} acquisitions bounced in {case.label}")
    return flags


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


def _range(low: float, high: float) -> str:
    return "n/a" if not (math.isfinite(low) and math.isfinite(high)) else f"{low:.2f}-{high:.2f}"
