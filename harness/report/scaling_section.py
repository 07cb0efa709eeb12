"""The report's "Scaling prediction" section: the queueing model on this run.

In the order a reader checks it: the published anchors and their machines,
the calibration of the contended hand-off on one family, the held-out record
and whether it allows verdicts at many CPUs (anchors_section.py); the sweep
and the rule a pair's prediction must pass (analysis/verdicts.py); the
predictions of the historical and the isolated pair; then each kernel's
predicted throughput at 1-256 CPUs as a band over the target machines
(machines.py), the lock that caps it, how the model did at 2 vCPUs, the
solver checks, the sharing lock_stat measured against the declared lock
scopes, what is not claimed and the assumptions. Also a row per kernel for
the report's at-a-glance table, and scaling.json in the run folder (the
predictions and the bucket counts they used, so a published reference
without boot folders keeps them).

Everything here is labelled a prediction except the measured points.
Predictions are written with two significant digits.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from pathlib import Path

from harness import lockscope
from harness.guest import workloads as workload_files
from harness.analysis import anchors, evidence, machines, predict, queueing, scaling_inputs
from harness.analysis import verdicts
from harness.analysis import scaling_validation as validation
from harness.analysis.predict import CasePrediction
from harness.analysis.scaling_inputs import CaseInputs
from harness.layout import Layout
from harness.report import charts
from harness.report import blocks as doc
from harness.report.anchors_section import AnchorsBlocks
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
        self.record: anchors.Record | None = None
        self.pairs: list[verdicts.PairVerdict] = []
        self.summary: dict[str, validation.ErrorSummary] = {}
        try:
            self.inputs = scaling_inputs.run_inputs(layout, run_dir, rows, kernels)
            self.record = anchors.record(
                scaling_inputs.run_inputs(layout, run_dir, rows, ["mainline"])
                if "mainline" not in kernels else self.inputs)
            self.machines = anchors.fitted_machines(self.record.calibration)
            for inputs in self.inputs:
                if inputs.insn_per_op is not None:
                    self.banded[inputs.kernel, inputs.case] = predict.solve_case(
                        inputs, self.machines, MAX_CPUS)
        except (lockscope.LockScopeError, scaling_inputs.InputError,
                queueing.ProfileError, anchors.AnchorError) as err:
            self.error = str(err)

    @property
    def allowed(self) -> bool:
        """Whether the held-out record allows verdicts at many CPUs."""
        return self.record is not None and anchors.verdicts_allowed(self.record)

    # -- the at-a-glance rows -----------------------------------------------------------------

    def glance_rows(self) -> list[list[str]]:
        """Per kernel: in how many cases its predicted 64-CPU throughput beats the
        baseline's on every target machine; withheld when the held-out record does not
        allow verdicts at many CPUs."""
        out = []
        if self.banded and not self.allowed:
            return [["all", f"PREDICTION at {AT_CPUS} CPUs: withheld (the model's held-out "
                            "record falls short: Scaling prediction)", "-", "-", "-"]]
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
                            "ns per instruction", "kappa (fitted)"], self._machine_rows()))
        b.append(doc.Bullets([f"{m.key}: " + " ".join(m.sources) + (f" ({m.note})" if m.note
                                                                    else "")
                              for m in machines.MACHINES]))
        b += AnchorsBlocks(self.layout, self.record).blocks()
        self.pairs = verdicts.pair_verdicts(self.inputs, self.record.calibration,
                                            self.record.held_out_error)
        b += self._pair_predictions()
        b += self._charts()
        b += self._capping_tables()
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
        retrying = [(i.kernel, r.role) for i in used for r in i.roles if r.retries_at_two]
        parts.append(f"failed trylocks per op and their retry loops' instructions (tcg-cs-rr, "
                     f"2 vCPUs round robin) for {len(retrying)} roles"
                     + (f" ({', '.join(sorted({k for k, _ in retrying}))})" if retrying else
                        " (none: no icache trylock failed in this run's tcg-cs-rr boots, so "
                        "retries cost nothing in the model)"
                        if any(r.mode == "tcg-cs-rr" for r in self.rows) else
                        " (none: no tcg-cs-rr boots, so retries cost nothing in the model)"))
        blocked = sum(1 for i in used if i.blocked_ns_per_op is not None)
        parts.append(f"blocked time per operation (wall minus CPU, perf kernels) for {blocked} "
                     f"of {len(used)} kernel-cases"
                     + (" (the others: blocked time counts as 0)" if blocked < len(used) else ""))
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
            "hand-off each lock's algorithm needs (a queued spinlock's pending waiter, or its "
            "MCS queue's three lock-word transfers; a bit lock's every polling waiter), a "
            "contended transfer costing (1 + kappa) t. t and m are published latencies of the "
            "target machines below; kappa is the one constant fitted, on one family of "
            "published figures, and the others are held out to judge it. Predictions are "
            f"bands over the machines (the line: {machines.by_key(machines.DEFAULT).name}), "
            "with two significant digits. " + INPUTS_LEAD + self._sources() + ".")

    def _machine_rows(self) -> list[list[str]]:
        return [[f"{m.key}: {m.name}", f"{m.transfer_ns:.0f} ns", f"{m.memory_ns:.0f} ns",
                 f"{m.ns_per_insn:.2f}", f"{m.contended_factor:.2f}"] for m in self.machines]

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

    # -- the pairs ---------------------------------------------------------------------------------

    def _shared_inodes(self) -> dict[evidence.Case, int]:
        """The cases whose workload declares inodes every worker shares, and how many."""
        return {i.case: i.shared_inodes for i in self.inputs if i.shared_inodes}

    def _pair_predictions(self) -> list:
        out = [doc.Heading(3, "The pairs at many CPUs: the sweep, the rule, the predictions"),
               doc.Para(
                   f"For each pair, case and target machine: N, the first kernel's predicted "
                   f"throughput at {verdicts.AT_CPUS} CPUs over the second's, less one, and "
                   "its range over the sweep: every corner of the transfer cost t x"
                   + " and x".join(f"{s:g}" for s in verdicts.TRANSFER_SCALES)
                   + ", kappa at both ends of its leave-one-out band, ns per instruction x"
                   + " and x".join(f"{s:g}" for s in verdicts.NS_PER_INSN_SCALES)
                   + " (an IPC of 2 and of 1), and blocked time 0 and as measured, "
                   + verdicts.BLOCKED + ". A verdict stands only where N keeps its sign at "
                   f"every corner, is at least {verdicts.SIGN_MARGIN:g} half-widths of that "
                   "range, and exceeds the held-out error"
                   + (f" ({self.record.held_out_error:.0%})"
                      if self.record.held_out_error is not None else "")
                   + "; otherwise \"no prediction\". "
                   + ("" if self.allowed else
                      "The held-out record does not allow verdicts at many CPUs, so every "
                      "row reads \"withheld\" and its numbers are a sketch.")
                   + " Everything here is a PREDICTION of the model.")]
        shared = self._shared_inodes()
        for pair, text in verdicts.PAIR_TEXT.items():
            found = [v for v in self.pairs if v.pair == pair]
            if not found:
                first, second = verdicts.PAIRS[pair]
                out.append(doc.Para(f"**{text}**: this run has no {first} and {second} "
                                    "inputs for the same case (debug 1-vCPU lock counts and "
                                    "an instruction count of both)."))
                continue
            by_case: dict[evidence.Case, list[verdicts.PairVerdict]] = defaultdict(list)
            for v in found:
                by_case[v.case].append(v)
            rows = []
            for case, per_machine in by_case.items():
                passing = [v for v in per_machine if v.verdict]
                if self.allowed:
                    shown = "; ".join(v.text for v in passing) or \
                        f"no prediction ({per_machine[0].why})"
                else:
                    shown = ("withheld (the rule passes on "
                             + ", ".join(v.machine for v in passing) + ")") if passing else \
                        f"withheld (and no prediction: {per_machine[0].why})"
                rows.append([case.label + (f" ({doc.plural(shared[case], 'shared inode')})"
                                           if shared.get(case) else ""),
                             ", ".join(f"{v.machine} {v.change:+.1%}" for v in per_machine),
                             f"{min(v.low for v in per_machine):+.1%} to "
                             f"{max(v.high for v in per_machine):+.1%}", shown])
            passing = sum(1 for v in found if v.verdict)
            out.append(doc.Para(
                f"**{text}**: {passing} of {len(found)} case-machine predictions pass the rule"
                + ("." if self.allowed else ", and all are withheld.")))
            out.append(doc.Table(["case", f"{found[0].first} / {found[0].second} - 1 at "
                                  f"{verdicts.AT_CPUS} CPUs per machine (PREDICTED)",
                                  "sweep, every machine", "verdict"], rows))
        return out

    # -- 2 vCPUs ------------------------------------------------------------------------------------

    def _validation(self) -> list:
        out = [doc.Heading(3, "How good is it at 2 vCPUs")]
        locks = validation.lock_checks(self.rows, self.inputs, self._background())
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

    def _background(self) -> set[evidence.Case]:
        """The cases whose workload declares a process looping beside its workers."""
        try:
            declared = workload_files.read_all(self.layout.workloads)[0]
        except OSError:
            return set()
        return {i.case for i in self.inputs if (w := declared.get(i.case.workload))
                and w.has_background(i.case.phase)}

    def _spinlocks(self) -> str:
        """Which spinlock the 2-vCPU debug steps ran, as their guests said."""
        found = [r.value for r in self.rows if r.metric == "guest_qspinlock"
                 and r.flavour == "debug" and r.cpus == 2]
        if not found:
            return ("The run's boots did not say which spinlock their guests ran (boots made "
                    "before 2026-12-07 ran the test-and-set virt_spin_lock: QEMU's CPU set the "
                    "hypervisor bit).")
        native = sum(1 for v in found if v == 1)
        return (f"{native} of {len(found)} 2-vCPU debug steps ran the queued spinlock of bare "
                "metal (the guest's init read no hypervisor bit), the rest the test-and-set "
                "virt_spin_lock.")

    @staticmethod
    def _validation_aim(s) -> str:
        """Issue 37's aim for the contention error, fixed before any run was read."""
        if not s.count:
            return "The aim (issue 37) cannot be judged: no row in it. "
        met = (s.median_abs <= validation.AIM_ERROR
               and abs(s.median) <= validation.AIM_SIGNED)
        return (f"Its aim, fixed beforehand (issue 37): a median contention error of at most "
                f"{validation.AIM_ERROR:.0%}, signed within ±{validation.AIM_SIGNED:.0%}: "
                + ("**met**. " if met else "**not met**. "))

    def _lock_validation(self, locks: list[validation.LockCheck]) -> list:
        s, w = self.summary["contention"], self.summary["wait"]
        apart = sorted({f"{c.case.label}" for c in locks if not c.symmetric})
        sampled = [c.together for c in locks if c.in_aim and c.together]
        text = (
            "Debug kernels: contentions and wait time per operation of every icache lock at "
            "2 vCPUs, predicted from the 1-vCPU debug boot alone (acquisitions, lock_stat hold "
            "times, the 1-vCPU rate; no line costs: both sides are emulated time) and "
            f"measured. {self._spinlocks()} Where the measured contention is at least "
            f"{validation.AIM_CONTENTION:g} per operation and the workers are alike ({s.count} "
            f"rows), the contention error has a median of {_abs(s.median_abs)} (signed "
            f"{_pct(s.median)}; worst {_abs(s.worst_abs)}; "
            f"{s.within_aim} within {validation.AIM_ERROR * 100:.0f}%), the wait error a "
            f"median of {_abs(w.median_abs)} (signed {_pct(w.median)}; {w.within_aim} within "
            f"{validation.AIM_ERROR * 100:.0f}%). " + self._validation_aim(s)
            + (f"Left out by a stated rule, a class of their own: the phases whose workload "
               f"declares a process looping beside its workers (`background`), which the "
               f"symmetric model cannot represent: {', '.join(apart)}. " if apart else "")
            + (f"Both vCPUs ran at once for {min(min(b) for b in sampled):.0%}-"
               f"{max(max(b) for b in sampled):.0%} of those rows' steps (the host's "
               "schedstat of the vCPU threads sampled every 5 ms, the two bounds of the "
               "share, column 'together'; in boots before the sampler clamped each "
               "sample to its interval the lower could pass the upper); a lock can only be "
               "contended while both run. " if sampled else
               "The run's boots did not sample whether both vCPUs ran at once. ")
            + "lock_stat's hold time runs from lockdep's "
            "bookkeeping in lock_acquire to lock_release, so the lock is held for less than it "
            "says; measured waits of milliseconds are the host descheduling a vCPU that holds "
            "the lock. The padded-section sweep and perf lock contention on the perf kernels "
            "(docs/scaling-model.md, \"At 2 vCPUs\") are the checks without lockdep.")
        table = [[c.case.label + ("" if c.symmetric else " (background)"), c.kernel, c.role,
                  c.modelled_as, doc.fmt(c.predicted_contentions),
                  doc.fmt(c.measured_contentions),
                  _pct(c.contention_error) + (" ★" if c.in_aim else ""),
                  doc.fmt(c.predicted_wait_us), doc.fmt(c.measured_wait_us), _pct(c.wait_error),
                  f"{min(c.together):.0%}-{max(c.together):.0%}" if c.together else "-"]
                 for c in locks if _shown(c)]
        quiet = sum(1 for c in locks if not _shown(c))
        return [doc.Para(text),
                doc.Table(["workload", "kernel", "lock", "modelled as",
                           "contentions/op predicted", "measured", "error",
                           "wait µs/op predicted", "measured", "error", "together"], table),
                doc.Para(f"★: measured contention at least {validation.AIM_CONTENTION:g}/op "
                         "and workers alike, where the aim is "
                         f"{validation.AIM_ERROR * 100:.0f}%. {quiet} more "
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
        tolerance = queueing.MONOTONE_TOLERANCE
        falling = sum(1 for b in self.banded.values() for _, pred in b.solved.values()
                      if pred.points[-1].ops_per_s
                      < max(p.ops_per_s for p in pred.points) * (1 - tolerance))
        text = (f"Solver checks on every prediction of this section ({len(self.banded)} "
                f"kernel-cases on {len(machines.MACHINES)} machines, {total} in all, 1 to "
                f"{MAX_CPUS} CPUs): throughput never exceeds the asymptotic bound, never "
                "exceeds 1/(A S) of the busiest lock, and falls as CPUs are added (by more "
                f"than {tolerance:g} of its value) only where a lock's service grows with "
                "them: the contended hand-off's dearer transfers or failed trylocks' growing "
                "odds (the control: solved again with a pending waiter's hand-off and no "
                f"retries, it must not fall). **{falling} of {total} curves end below their "
                f"peak**: past the peak the model predicts collapse, its size set by the "
                "fitted kappa. "
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

    def _not_claimed(self) -> list:
        worst = self.record.worst_held_out_factor if self.record else None
        return [doc.Heading(3, "What is not claimed"), doc.Bullets([
            "Absolute rates past 2 CPUs: every rate above is a prediction on machines this "
            "harness never ran on; the held-out anchors say how far it carries"
            + (f" (the worst held-out figure is off by {worst:.2g}x)." if worst else "."),
            "A difference between two kernels that does not pass the sweep's rule, or any "
            "verdict at all while the held-out record falls short of what verdicts need.",
            "Anything about locks outside the icache roles, memory bandwidth, the filesystems' "
            "own locks, or the scheduler: they are not in the model, which is why a change "
            "that frees an icache lock is predicted to gain where a publisher's run stopped "
            "at another bottleneck (the failing ratios above)."])]

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
            "workloads fill it); an anchor on a machine with longer chains says so in its "
            "operation mix (chain entries walked, cold, at the lines per entry this run "
            "measured).",
            "A contended hand-off of a queued spinlock moves the lock word three times once an "
            "MCS queue forms (once with a single waiter), each transfer (1 + kappa) t, kappa "
            "fitted on the calibration family; a bit lock's moves it once per waiter.",
            verdicts.BLOCKED[0].upper() + verdicts.BLOCKED[1:] + ", in the pair predictions.",
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
                                           "ns_per_insn": m.ns_per_insn,
                                           "contended_factor": m.contended_factor}
                                   for m in self.machines},
                      "central": machines.DEFAULT},
            "hash_tables": {k: {t: {"entries": s.entries, "source": s.source}
                                for t, s in v.items()} for k, v in tables.items()},
            "cases": [b.as_json(cpus) for b in self.banded.values()],
            "validation": {k: vars(v) for k, v in self.summary.items()},
            "anchors": self._anchors_json(),
            "pairs": [{"pair": v.pair, "first": v.first, "second": v.second,
                       "workload": v.case.workload, "fs": v.case.fs, "phase": v.case.phase,
                       "machine": v.machine, "change": v.change, "sweep": [v.low, v.high],
                       "rule": v.verdict or "no prediction", "why": v.why,
                       "verdict": (v.text if self.allowed else "withheld")}
                      for v in self.pairs],
            "checks": {"failed": [list(f) for f in getattr(self, "check_failures", [])]},
        }
        (self.run_dir / scaling_inputs.SCALING_JSON).write_text(
            json.dumps(_finite(out), indent=1) + "\n")

    def _anchors_json(self) -> dict:
        rec = self.record
        c = rec.calibration
        return {
            "file": str(rec.anchor_file.path.name), "sha256": rec.anchor_file.sha256,
            "calibration": {"family": c.family, "anchors": list(c.anchors),
                            "per_machine": c.per_machine,
                            "fits": {k: vars(f) for k, f in c.fits.items()}} if c else None,
            "outcomes": [{"anchor": o.anchor.key, "family": o.anchor.family,
                          "role": o.anchor.role, "published": o.anchor.value,
                          "model": o.values, "without_lock": o.without,
                          "judged_on": list(o.judged_on), "status": o.status,
                          "error": o.error, "detail": o.detail,
                          "held_out_set": o.anchor.held_out_set} for o in rec.outcomes],
            "held_out_sets": {str(n): {f: rec.family_holds(f) for f in families}
                              for n, families in rec.held_out_sets().items()},
            "held_out_error": rec.held_out_error,
            "worst_held_out_factor": rec.worst_held_out_factor,
            "criteria": [vars(c) for c in anchors.criteria(rec)],
            "verdicts_allowed": anchors.verdicts_allowed(rec)}


def _changes(mine: CasePrediction, theirs: CasePrediction, cpus: int) -> dict[str, float]:
    """Machine -> mine over theirs minus one, at `cpus`."""
    return {k: p.at(cpus).ops_per_s / theirs.solved[k][1].at(cpus).ops_per_s - 1
            for k, (_, p) in mine.solved.items() if k in theirs.solved}


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
