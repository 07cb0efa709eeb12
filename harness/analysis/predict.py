"""`python3 -m harness predict`: the scaling model on a run, or on a profile file.

    predict RUN_DIR [--cpus LIST] [--machine KEY ...] [--json]
    predict --profile FILE [--cpus LIST] [--machine KEY | --handoff-ns NS --memory-ns NS] --json

A run gives one prediction per kernel, workload case and target machine
(machines.py), from the inputs scaling_inputs.py takes out of its tidy
table; a profile file is one profile as queueing.profile_from_json reads it,
solved on one machine or with fixed line costs. Every output is a
prediction, and says so, with the constants it used.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from harness import lockscope
from harness.analysis import anchors, evidence, machines, queueing, scaling_inputs
from harness.analysis.machines import Machine
from harness.analysis.scaling_inputs import CaseInputs
from harness.layout import Layout, default_layout
from harness.run import tidy

DEFAULT_CPUS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
NOTE = "a prediction of the queueing model (docs/scaling-model.md), not a measurement"


@dataclass(frozen=True)
class CasePrediction:
    """One kernel and case solved on every target machine."""
    inputs: CaseInputs
    solved: dict[str, tuple[queueing.Profile, queueing.Prediction]]  # machine key ->

    @property
    def central(self) -> str:
        return machines.DEFAULT if machines.DEFAULT in self.solved else next(iter(self.solved))

    @property
    def profile(self) -> queueing.Profile:
        return self.solved[self.central][0]

    @property
    def prediction(self) -> queueing.Prediction:
        return self.solved[self.central][1]

    def ops(self, cpus: int) -> tuple[float, float, float]:
        """(lowest, central machine's, highest) throughput over the machines."""
        values = [p.at(cpus).ops_per_s for _, p in self.solved.values()]
        return min(values), self.prediction.at(cpus).ops_per_s, max(values)

    def violations(self) -> dict[str, list[str]]:
        return {k: found for k, (_, p) in self.solved.items()
                if (found := queueing.violations(p))}

    def as_json(self, cpus: list[int]) -> dict:
        c = self.inputs.case
        return {"kernel": self.inputs.kernel, "workload": c.workload, "fs": c.fs,
                "phase": c.phase, "unit": self.inputs.unit,
                **self.prediction.as_json(cpus),
                "machine": self.central,
                "ops_per_s_band": [[self.ops(n)[0], self.ops(n)[2]] for n in cpus],
                "machines": {k: dict(p.as_json(cpus), profile=queueing.profile_to_json(prof))
                             for k, (prof, p) in self.solved.items()},
                "half_linear_cpus": self.prediction.half_linear_cpus(),
                "profile": queueing.profile_to_json(self.profile),
                "checks": self.violations(),
                "inputs": {"instructions_per_op": self.inputs.insn_per_op,
                           "instructions_source": self.inputs.insn_source,
                           "hold_source": self.inputs.hold_source,
                           "lines_source": self.inputs.lines_source,
                           "blocked_ns_per_op": self.inputs.blocked_ns_per_op,
                           "shared_inodes": self.inputs.shared_inodes,
                           "fallbacks": self.inputs.fallbacks,
                           "scopes": {r.role: r.scope.describe(r.instances)
                                      for r in self.inputs.roles}},
                "notes": list(self.inputs.notes)}


def solve_case(inputs: CaseInputs, targets: tuple[Machine, ...], max_cpus: int) -> CasePrediction:
    solved = {}
    for machine in targets:
        profile = inputs.machine_profile(machine.ns_per_insn)
        solved[machine.key] = (profile, queueing.solve(profile, max_cpus, machine))
    return CasePrediction(inputs, solved)


def run_predictions(layout: Layout, run_dir: Path, max_cpus: int,
                    targets: tuple[Machine, ...] = machines.MACHINES,
                    kernels: list[str] | None = None,
                    rows: list[tidy.Row] | None = None) -> list[CasePrediction]:
    rows = rows if rows is not None else tidy.read(tidy.table_in(run_dir))
    kernels = kernels or evidence.kernels_in(rows)
    return [solve_case(inputs, targets, max_cpus)
            for inputs in scaling_inputs.run_inputs(layout, run_dir, rows, kernels)
            if inputs.insn_per_op is not None]


def _text_table(cpus: list[int], label: str, prediction: queueing.Prediction) -> list[str]:
    lines = [label, "  CPUs      " + "".join(f"{n:>11}" for n in cpus)]
    lines.append("  ops/s     " + "".join(f"{prediction.at(n).ops_per_s:>11.2g}" for n in cpus))
    for name in prediction.points[-1].utilization:
        lines.append(f"  U({name})".ljust(12) + "".join(
            f"{prediction.at(n).utilization[name]:>11.2f}" for n in cpus))
    half = prediction.half_linear_cpus()
    lines.append(f"  capped by {prediction.bottleneck or 'no shared lock'}; below half of "
                 f"linear from {half if half else 'never (up to ' + str(cpus[-1]) + ')'} CPUs")
    return lines


def _targets(args) -> tuple[Machine, ...]:
    return tuple(machines.by_key(k) for k in args.machine) if args.machine else machines.MACHINES


def _profile_command(args, cpus: list[int]) -> int:
    profile = queueing.load_profile(Path(args.profile))
    costs: queueing.CostModel
    if args.machine:
        machine = machines.by_key(args.machine[0])
        costs, label = machine, machine.describe()
    else:
        handoff = scaling_inputs.HANDOFF_NS if args.handoff_ns is None else args.handoff_ns
        memory = scaling_inputs.MEMORY_NS if args.memory_ns is None else args.memory_ns
        costs = queueing.FixedCosts(handoff, memory)
        label = f"t {handoff:g} ns, m {memory:g} ns"
    prediction = queueing.solve(profile, cpus[-1], costs)
    if args.json:
        json.dump(dict(prediction.as_json(cpus), costs=label, note=NOTE), sys.stdout, indent=1)
        print()
    else:
        print("\n".join(_text_table(cpus, f"PREDICTION for {args.profile} ({label})",
                                    prediction)))
    return 0


def _run_command(args, cpus: list[int]) -> int:
    run_dir = Path(args.run_dir)
    if not tidy.table_in(run_dir).exists():
        raise FileNotFoundError(f"{run_dir}: no tidy.tsv (not a run folder)")
    layout = default_layout()
    rows = tidy.read(tidy.table_in(run_dir))
    # The contended hand-off factor, fitted on the calibration anchors with this run's
    # sections (anchors.py), as the report's section uses it.
    calibration = anchors.record(
        scaling_inputs.run_inputs(layout, run_dir, rows, ["mainline"])).calibration
    targets = anchors.fitted_machines(calibration, _targets(args))
    results = run_predictions(layout, run_dir, cpus[-1], targets, rows=rows)
    if args.json:
        json.dump({"knobs": {"machines": {m.key: m.describe() for m in targets}, "note": NOTE},
                   "cases": [r.as_json(cpus) for r in results]}, sys.stdout, indent=1)
        print()
        return 0
    print(f"PREDICTION (queueing model); inputs: {run_dir}")
    for r in results:
        for key, (_, prediction) in r.solved.items():
            print()
            print("\n".join(_text_table(cpus, f"{r.inputs.kernel}: {r.inputs.case.label} "
                                              f"({r.inputs.unit}) on {key}", prediction)))
        for note in (r.inputs.insn_source, r.inputs.hold_source, r.inputs.lines_source,
                     *r.inputs.notes):
            print(f"  - {note}")
        for key, found in r.violations().items():
            print(f"  - CHECK FAILED on {key}: {found[0]}")
    return 0


def command(args) -> int:
    cpus = sorted({int(c) for item in args.cpus for c in item.replace(",", " ").split()}) \
        if args.cpus else list(DEFAULT_CPUS)
    if not cpus or cpus[0] < 1:
        print("error: --cpus takes CPU counts of at least 1", file=sys.stderr)
        return 2
    try:
        if args.profile:
            return _profile_command(args, cpus)
        if not args.run_dir:
            print("error: give a RUN_DIR or --profile FILE", file=sys.stderr)
            return 2
        return _run_command(args, cpus)
    except (queueing.ProfileError, lockscope.LockScopeError, scaling_inputs.InputError,
            machines.MachineError, FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
