"""`python3 -m harness predict`: the scaling model on a run, or on a profile file.

    predict RUN_DIR [--cpus LIST] [--handoff-ns NS] [--ns-per-insn NS] [--json]
    predict --profile FILE [--cpus LIST] [--handoff-ns NS] --json

A run gives one prediction per kernel and workload case, from the inputs
scaling_inputs.py takes out of its tidy table; a profile file is one
profile as queueing.profile_from_json reads it. Every output is a
prediction, and says so, with the knobs it used.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from harness import lockscope
from harness.analysis import evidence, queueing, scaling_inputs
from harness.analysis.scaling_inputs import CaseInputs
from harness.layout import Layout, default_layout
from harness.run import tidy

DEFAULT_CPUS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


@dataclass(frozen=True)
class CasePrediction:
    inputs: CaseInputs
    profile: queueing.Profile
    prediction: queueing.Prediction

    def as_json(self, cpus: list[int]) -> dict:
        c = self.inputs.case
        return {"kernel": self.inputs.kernel, "workload": c.workload, "fs": c.fs,
                "phase": c.phase, "unit": self.inputs.unit,
                **self.prediction.as_json(cpus),
                "half_linear_cpus": self.prediction.half_linear_cpus(),
                "profile": queueing.profile_to_json(self.profile),
                "inputs": {"instructions_per_op": self.inputs.insn_per_op,
                           "instructions_source": self.inputs.insn_source,
                           "hold_source": self.inputs.hold_source,
                           "scopes": {r.role: r.scope.describe(r.instances)
                                      for r in self.inputs.roles}},
                "notes": list(self.inputs.notes)}


def run_predictions(layout: Layout, run_dir: Path, max_cpus: int, handoff_ns: float,
                    ns_per_insn: float, kernels: list[str] | None = None,
                    rows: list[tidy.Row] | None = None) -> list[CasePrediction]:
    rows = rows if rows is not None else tidy.read(run_dir / "tidy.tsv")
    kernels = kernels or evidence.kernels_in(rows)
    out = []
    for inputs in scaling_inputs.run_inputs(layout, run_dir, rows, kernels):
        if inputs.insn_per_op is None:
            continue
        profile = inputs.machine_profile(ns_per_insn)
        out.append(CasePrediction(inputs, profile,
                                  queueing.solve(profile, max_cpus, handoff_ns)))
    return out


def _knobs(args) -> dict:
    return {"handoff_ns": args.handoff_ns, "ns_per_insn": args.ns_per_insn,
            "note": "a prediction of the queueing model (docs/scaling-model.md), not a "
                    "measurement"}


def _text_table(cpus: list[int], label: str, prediction: queueing.Prediction) -> list[str]:
    lines = [label, "  CPUs      " + "".join(f"{n:>11}" for n in cpus)]
    lines.append("  ops/s     " + "".join(f"{prediction.at(n).ops_per_s:>11.4g}" for n in cpus))
    for name in prediction.points[-1].utilization:
        lines.append(f"  U({name})".ljust(12) + "".join(
            f"{prediction.at(n).utilization[name]:>11.3f}" for n in cpus))
    half = prediction.half_linear_cpus()
    lines.append(f"  capped by {prediction.bottleneck or 'no shared lock'}; below half of "
                 f"linear from {half if half else 'never (up to ' + str(cpus[-1]) + ')'} CPUs")
    return lines


def command(args) -> int:
    cpus = sorted({int(c) for item in args.cpus for c in item.replace(",", " ").split()}) \
        if args.cpus else list(DEFAULT_CPUS)
    if not cpus or cpus[0] < 1:
        print("error: --cpus takes CPU counts of at least 1", file=sys.stderr)
        return 2
    try:
        if args.profile:
            profile = queueing.load_profile(Path(args.profile))
            prediction = queueing.solve(profile, cpus[-1], args.handoff_ns)
            if args.json:
                json.dump(prediction.as_json(cpus), sys.stdout, indent=1)
                print()
            else:
                print("\n".join(_text_table(cpus, f"prediction for {args.profile} "
                                                  f"(hand-off {args.handoff_ns:g} ns)",
                                            prediction)))
            return 0
        if not args.run_dir:
            print("error: give a RUN_DIR or --profile FILE", file=sys.stderr)
            return 2
        run_dir = Path(args.run_dir)
        if not (run_dir / "tidy.tsv").exists():
            raise FileNotFoundError(f"{run_dir}: no tidy.tsv (not a run folder)")
        results = run_predictions(default_layout(), run_dir, cpus[-1], args.handoff_ns,
                                  args.ns_per_insn)
    except (queueing.ProfileError, lockscope.LockScopeError, scaling_inputs.InputError,
            FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if args.json:
        json.dump({"knobs": _knobs(args), "cases": [r.as_json(cpus) for r in results]},
                  sys.stdout, indent=1)
        print()
        return 0
    print(f"PREDICTION (queueing model, hand-off {args.handoff_ns:g} ns, "
          f"{args.ns_per_insn:g} ns per instruction); inputs: {run_dir}")
    for r in results:
        print()
        print("\n".join(_text_table(cpus, f"{r.inputs.kernel}: {r.inputs.case.label} "
                                          f"({r.inputs.unit})", r.prediction)))
        for note in (r.inputs.insn_source, r.inputs.hold_source, *r.inputs.notes):
            print(f"  - {note}")
    return 0
