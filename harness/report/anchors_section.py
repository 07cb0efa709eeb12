"""The scaling section's record against the published figures (anchors.toml), in the
order a reader checks it: the anchors and their machines, the calibration, the held-out
results with the negative controls, and whether that record allows verdicts at many
CPUs (anchors.criteria). Every model value here is a prediction."""

from __future__ import annotations

import math

from harness.analysis import anchors
from harness.analysis.anchors import Outcome, Record
from harness.layout import Layout
from harness.report import blocks as doc

STATUS_TEXT = {"holds": "holds", "fails": "FAILS", "untestable": "untestable",
               "non-diagnostic": "non-diagnostic", "unevaluated": "not evaluated",
               "not modelled": "not modelled"}
# anchors.toml's held_out_set: which registration an anchor came with.
SET_TEXT = {1: "the first set (committed with the file, before any evaluation)",
            2: "the second set (registered after the first evaluation, before the model was "
               "evaluated on it)"}


def value_text(quantity: str, value: float) -> str:
    if not math.isfinite(value):
        return "never"
    if quantity == "spin_share":
        return f"{value:.2f}"
    if quantity == "ratio":
        return f"{value:.2f}x"
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


def error_text(o: Outcome) -> str:
    if o.error is None or not math.isfinite(o.error):
        return "-"
    if o.anchor.quantity == "spin_share":
        return f"{o.error:+.2f}"
    return f"{math.exp(o.error):.2f}x"


def models_text(o: Outcome) -> str:
    return ", ".join(f"{k} {value_text(o.anchor.quantity, v)}" for k, v in o.values.items()) \
        or "-"


def judged_on(o: Outcome, rec: Record) -> str:
    machine = rec.anchor_file.machines[o.anchor.machine]
    return machine.profile if machine.known else "unknown: every profile"


def why_off(o: Outcome, rec: Record) -> str:
    """What the model would need to land inside, read off its own numbers."""
    a, j = o.anchor, rec.anchor_file.judging
    if o.status != "fails" or not o.values:
        return o.detail
    key, value = max(o.values.items(), key=lambda kv: abs(j.error(a.quantity, kv[1], a.value)))
    if a.role == "negative-control" or (a.quantity == "ratio" and value > a.value):
        return (f"{o.detail + '; ' if o.detail else ''}the model's after state gains "
                f"{value_text('ratio', value)} on {key}: nothing but the icache locks "
                "limits it, where the publisher's run stopped elsewhere")
    if a.quantity == "ratio":
        return (f"the model's before state is less capped than the publisher's on {key} "
                f"({value_text('ratio', value)} against {value_text('ratio', a.value)})")
    if a.quantity == "rate" and value < a.value:
        fitted = anchors.fitted_machines(rec.calibration)
        target = next(m for m in fitted if m.key == key)
        found = anchors.profiles(a, rec.measured, target)[a.measured_state]
        lock = next((lock for lock in found.locks if lock.name == a.lock and lock.shared), None)
        if lock is not None:
            needed = found.instances(lock) / (lock.acquisitions_per_op * a.value) * 1e9
            charged = lock.service_ns(anchors.queueing.MCS_HANDOFF_TRANSFERS, a.threads,
                                      target.at(a.threads))
            return (f"at the published rate {a.lock} could hold at most {needed:.0f} ns per "
                    f"acquisition; the model charges {charged:.0f} ns once queued on {key} "
                    "(its hand-off fitted on the calibration machine)")
    if a.quantity == "rate":
        return f"the model runs faster than published on {key}: something else capped the run"
    return o.detail or f"off by {error_text(o)}"


class AnchorsBlocks:
    def __init__(self, layout: Layout, rec: Record) -> None:
        self.layout, self.rec = layout, rec

    def blocks(self) -> list:
        return (self._anchors() + self._calibration() + self._held_out()
                + self._criteria())

    def _anchors(self) -> list:
        f = self.rec.anchor_file
        counts = {role: len(f.of_role(role)) for role in anchors.ROLES}
        path = f.path.relative_to(self.layout.repo) if f.path.is_relative_to(
            self.layout.repo) else f.path
        j = f.judging
        rows = [[m.key, m.description, m.profile or "unknown: judged on every profile",
                 m.spinlock] for m in f.machines.values()]
        return [
            doc.Heading(3, "The published record: anchors and their machines"),
            doc.Para(
                f"{len(f.anchors)} published figures in {len(f.families)} families, read in "
                f"their sources (docs/anchor-sources.md), in {path} (sha256 "
                f"{f.sha256[:16]}), whose roles, operation mixes and tolerances were "
                f"committed before this model was evaluated on them (the figures themselves "
                f"were known: issue 37 quoted many of them against the earlier model): "
                f"{counts['calibration']} "
                f"calibration, {counts['held-out']} held out, {counts['negative-control']} "
                f"negative controls, {counts['not-modelled']} read but not modelled (their "
                f"reason is in the file). One tolerance family: rates and ratios within a "
                f"factor of {j.rate_factor:g}, spin shares within {j.spin_share_abs:g}, no "
                f"held-out figure off by more than {j.error_limit_factor:g}x, a negative "
                f"control's predicted gain under {j.negative_control_gain:.0%}. An anchor is "
                "judged on its own machine's profile; where the source does not say what it "
                "ran on, it holds only if it holds on every profile (untestable if on some). "
                "An anchor whose lock the model can drop and still land inside is "
                "non-diagnostic: it tested nothing. Each acquisition's critical section is "
                "mainline's, measured by this run (" + "; ".join(
                    f"{kind}: {s.source}" for kind, s in self.rec.measured.sections.items())
                + f"; {self.rec.measured.chain_source})."),
            doc.Table(["machine", "what the source says", "judged on", "spinlock"], rows)]

    def _calibration(self) -> list:
        c = self.rec.calibration
        out = [doc.Heading(3, "Calibration: the contended hand-off, on one family")]
        if c is None:
            return out + [doc.Para("Not calibrated: this run lacks the sections the "
                                   "calibration family needs; kappa is 0.")]
        fitted = {m.key: m for m in anchors.fitted_machines(c)}
        per = "; ".join(
            f"{k}: kappa {fit.kappa:.2f} (leave-one-out {fit.low:.2f}-{fit.high:.2f}), an MCS "
            f"hand-off {anchors.queueing.MCS_HANDOFF_TRANSFERS * (1 + fit.kappa) * fitted[k].transfer_ns:.0f}"
            f" ns, rms error {fit.rms_error:.2f}" for k, fit in c.fits.items())
        text = (f"One constant, kappa, is fitted: a lock-word transfer of a contended hand-off "
                f"costs (1 + kappa) t, by least squares on the log errors of the "
                f"{c.family} family alone ({len(c.anchors)} anchors)"
                + (", on each profile, its machine being unknown" if c.per_machine else "")
                + f". {per}. The calibration anchors, with kappa (calibration counts, but is "
                "shown):")
        rows = [[o.anchor.key, f"{o.anchor.quantity} at {o.anchor.threads}",
                 value_text(o.anchor.quantity, o.anchor.value), models_text(o), error_text(o),
                 STATUS_TEXT[o.status]] for o in self.rec.by_role("calibration")]
        return out + [doc.Para(text), doc.Table(
            ["anchor", "figure", "published", "PREDICTED", "model / published", "status"],
            rows)]

    def _held_out(self) -> list:
        out = [doc.Heading(3, "Held out: judged with that kappa, each on its own machine")]
        rows = [[o.anchor.family, o.anchor.key, f"{o.anchor.quantity} at {o.anchor.threads}",
                 judged_on(o, self.rec), value_text(o.anchor.quantity, o.anchor.value),
                 models_text(o), error_text(o), STATUS_TEXT[o.status], why_off(o, self.rec)]
                for o in self.rec.by_role("held-out", "negative-control")]
        families = []
        for family in self.rec.held_out_families:
            holds = self.rec.family_holds(family)
            families.append(f"{family}: " + ("holds" if holds else "no diagnostic anchor"
                                             if holds is None else "FAILS"))
        err = self.rec.held_out_error
        out.append(doc.Para(
            "A family holds when every diagnostic, testable anchor of it holds. "
            + "; ".join(families) + ". " + self._sets_text()
            + "The median |model / published - 1| over the judged "
            "held-out rates and ratios, the error a prediction must exceed: "
            + (f"{err:.0%}." if err is not None else "none (nothing was judged).")))
        out.append(doc.Table(["family", "anchor", "figure", "judged on", "published",
                              "PREDICTED", "model / published", "status", "why"], rows))
        return out

    def _sets_text(self) -> str:
        """The registration sets counted apart, when the file has more than the first."""
        sets = self.rec.held_out_sets()
        if len(sets) < 2:
            return ""
        parts = []
        for n, families in sets.items():
            judged = [f for f in families if self.rec.family_holds(f) is not None]
            holding = [f for f in judged if self.rec.family_holds(f)]
            what = SET_TEXT.get(n, f"set {n}")
            parts.append(f"{what}: {len(holding)} of {len(judged)} judged families hold")
        return "By registration: " + "; ".join(parts) + ". "

    def _criteria(self) -> list:
        found = anchors.criteria(self.rec)
        allowed = anchors.verdicts_allowed(self.rec)
        rows = [[c.text, "yes" if c.met else "NO", c.detail] for c in found]
        return [doc.Para("What verdicts at many CPUs need (issue 37), and this record:"),
                doc.Table(["criterion", "met", "this run"], rows),
                doc.Para(
                    "The record allows verdicts at many CPUs: the pair predictions below "
                    "carry them where the sweep allows." if allowed else
                    "**The record does not allow verdicts at many CPUs.** The pair "
                    "predictions and curves below are a sketch of what the model says, not "
                    "verdicts: every one reads \"withheld\".")]
