"""Timed boots of kernel images under labels, in rounds: A/A and A/B experiments.

    python3 -m harness.run.abtest --out DIR --image A=IMAGE_DIR --image B=IMAGE_DIR
                                  [--rounds 8] [--cpus 1 2] [--order random|fixed]
                                  [--workloads default] [--seed N]
                                  [--setting A=no-thp,pin ...]
    python3 -m harness.run.abtest --out DIR --analyse
    python3 -m harness.run.abtest --runs DIR DIR [...] --pair A B

Each round boots every label once at each vCPU count (plain TCG, the perf
boots of `make compare`), in an order drawn from the seed (random) or as
given (fixed, what compare did before 2026-12-06). One image under two
labels is an A/A experiment: whatever separates the labels is the
method's. --setting gives a label host-side settings of its QEMU (no-thp:
no transparent huge pages; pin: its vCPU threads pinned to cores), so one
experiment compares a setting against today's. DIR/tidy.tsv holds the rows (kernel = label, repetition =
round), DIR/boots.json each boot's label, round, position and image;
--analyse prints, per label against the first, the per-case sign test
(cases counted as independent) beside the round-paired permutation test
of analysis/rounds.py, and the mean speed of each position in a round.
--runs compares several experiments' round pairs of A against B, per vCPU
count: each run's mean log ratio, their spread (the run-level effect), and
the permutation p that the runs share one distribution. Timings: run it with nothing else on the host (`pgrep -f 'cc1|qemu-system'`);
steps disturbed by other processes are counted, not rerun.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from harness import lockorder, progress
from harness.analysis import rounds
from harness.boot import qemu, runner
from harness.guest import initramfs, plan, workloads
from harness.kernels.kbuild import KernelImage
from harness.layout import default_layout
from harness.run import execute, tidy
from harness.run.matrix import BootConfig, Cell

BOOTS = "boots.json"
TABLE = "tidy.tsv"
EXPERIMENT = "experiment.json"  # the labels in the order given, the images, order, seed


@dataclass(frozen=True)
class Labelled:
    label: str
    image: KernelImage


def image_at(spec: str) -> Labelled:
    """LABEL=DIR: a built image folder (its meta.json names kernel, flavour, key)."""
    label, _, folder = spec.partition("=")
    meta_path = Path(folder) / "meta.json"
    if not label or not meta_path.exists():
        raise SystemExit(f"--image {spec}: expected LABEL=DIR of a built image "
                         f"(no {meta_path})")
    meta = json.loads(meta_path.read_text())
    return Labelled(label, KernelImage(meta["kernel"], meta["flavour"], meta["key"],
                                       Path(folder)))


def schedule(labels: list[str], rounds_n: int, cpus: list[int], order: str,
             seed: int) -> list[tuple[int, int, int, str]]:
    """(round, cpus, position, label) in boot order."""
    rng = random.Random(seed)
    out = []
    for r in range(1, rounds_n + 1):
        for c in cpus:
            names = list(labels)
            if order == "random":
                rng.shuffle(names)
            out += [(r, c, i, name) for i, name in enumerate(names, 1)]
    return out


def boot_rows(label: str, config: BootConfig, cells: list[Cell],
              record: runner.BootRecord) -> list[tidy.Row]:
    rows = []
    for cell, outcome in zip(cells, record.steps):
        for fig in outcome.numbers.figures if outcome.numbers else ():
            if fig.metric == "throughput" and not fig.lock:
                rows.append(tidy.Row(label, "perf", "tcg", cell.workload.name, cell.fs,
                                     config.cpus, cell.procs, config.repetition, fig.phase, "",
                                     "throughput", fig.value, fig.unit, outcome.status,
                                     record.directory.name, ""))
    return rows


SETTINGS = ("no-thp", "pin")


def settings_of(specs: list[str], labels: list[str]) -> dict[str, tuple[str, ...]]:
    """LABEL=no-thp,pin -> {label: settings}."""
    out: dict[str, tuple[str, ...]] = {}
    for spec in specs:
        label, _, words = spec.partition("=")
        chosen = tuple(w for w in words.split(",") if w)
        if label not in labels or not all(w in SETTINGS for w in chosen):
            raise SystemExit(f"--setting {spec}: expected LABEL=SETTING[,SETTING] with a "
                             f"label of --image and settings of {', '.join(SETTINGS)}")
        out[label] = chosen
    return out


def measure(out: Path, images: list[Labelled], plan_: list[tuple[int, int, int, str]],
            chosen: list[workloads.Workload],
            settings: dict[str, tuple[str, ...]] | None = None) -> None:
    layout = default_layout()
    files = initramfs.prepare(layout, chosen)
    by_label = {i.label: i for i in images}
    boots = json.loads((out / BOOTS).read_text()) if (out / BOOTS).exists() else []
    rows = tidy.read(out / TABLE) if (out / TABLE).exists() else []
    meter = progress.Steps(len(plan_), "abtest boot")
    for rnd, cpus, position, label in plan_:
        image = by_label[label].image
        config = BootConfig(label, "perf", "tcg", cpus, rnd)
        cells = [Cell(config, w, fs, p, "", "") for w in chosen for fs in w.filesystems
                 for p in w.procs_for(cpus)]
        steps = plan.make_steps([(c.workload, c.fs, c.procs) for c in cells])
        folder = out / "boots" / f"{time.strftime('%Y%m%d-%H%M%S')}-r{rnd}-c{cpus}-{label}"
        meter.start(f"round {rnd}, {cpus} vCPUs, position {position}: {label}")
        order = lockorder.for_kernel(layout, image.kernel.removesuffix("+tcg-cs"))
        mine = (settings or {}).get(label, ())
        machine = qemu.Machine("tcg", cpus, no_thp="no-thp" in mine, pin="pin" in mine)
        record = runner.run_boot(image, files, machine, steps, folder, f"abtest {label}", order)
        rows += boot_rows(label, config, cells, record)
        boots.append({"boot": folder.name, "label": label, "round": rnd, "cpus": cpus,
                      "position": position, "image": str(image.directory),
                      "settings": list(mine),
                      "status": record.status, "wall_s": round(record.wall_s, 1),
                      "to_init_s": record.to_init_s,
                      "disturbed_steps": sum(1 for s in record.steps if execute.disturbed(s))})
        (out / BOOTS).write_text(json.dumps(boots, indent=1) + "\n")
        tidy.write(rows, out / TABLE)
        meter.finish()


def analyse(out: Path) -> str:
    rows = tidy.read(out / TABLE)
    boots = json.loads((out / BOOTS).read_text())
    labels = json.loads((out / EXPERIMENT).read_text())["labels"]
    lines = []
    for label in labels[1:]:
        c = rounds.compare(rows, label, labels[0])
        lines.append(f"{label} against {labels[0]}: faster in {c.case_wins} of {c.cases} cases "
                     f"(sign test over cases p={c.p_cases:.2g}); {len(c.pairs)} round pairs, "
                     f"mean log ratio {c.log_ratio:+.3f} (sign-flip test over pairs "
                     f"p={c.p_pairs:.3f})")
    factors = rounds.boot_factors(rows)
    by_position: dict[int, list[float]] = {}
    for b in boots:
        key = (b["label"], b["cpus"], b["round"])
        if key in factors:
            by_position.setdefault(b["position"], []).append(factors[key])
    lines.append("boot speed (mean log deviation from each case's median) by position in "
                 "the round: " + ", ".join(
                     f"{p}: {statistics.fmean(v):+.3f} (n={len(v)})"
                     for p, v in sorted(by_position.items())))
    lines.append(f"boot speed between boots: sd {statistics.stdev(factors.values()):.3f}"
                 if len(factors) > 1 else "one boot")
    return "\n".join(lines)


def analyse_runs(folders: list[Path], kernel: str, baseline: str) -> str:
    runs = {folder.name: tidy.read(folder / TABLE) for folder in folders}
    lines = []
    for effect in rounds.run_effects(runs, kernel, baseline):
        means = ", ".join(f"{run} {m:+.3f} (n={len(effect.by_run[run])})"
                          for run, m in effect.means.items())
        lines.append(f"{kernel} against {baseline}, {effect.cpus} vCPUs: run means of the "
                     f"round pairs' log ratio {means}; spread {effect.spread:.3f} "
                     f"(permutation p={effect.p:.3f} that the runs share one distribution)")
    return "\n".join(lines) or "no round pairs of those labels"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.run.abtest", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out")
    parser.add_argument("--image", action="append", default=[], help="LABEL=IMAGE_DIR")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--cpus", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--order", choices=["random", "fixed"], default="random")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workloads", default="default")
    parser.add_argument("--setting", action="append", default=[],
                        help="LABEL=no-thp,pin: host-side settings of that label's boots")
    parser.add_argument("--analyse", action="store_true")
    parser.add_argument("--runs", nargs="+", help="experiment folders to compare run by run")
    parser.add_argument("--pair", nargs=2, metavar=("A", "B"), help="with --runs: A against B")
    args = parser.parse_args(argv)
    if args.runs:
        if not args.pair:
            raise SystemExit("--runs needs --pair A B")
        print(analyse_runs([Path(r) for r in args.runs], *args.pair))
        return 0
    if not args.out:
        raise SystemExit("--out DIR is required")
    out = Path(args.out)
    if not args.analyse:
        images = [image_at(spec) for spec in args.image]
        if len(images) < 2:
            raise SystemExit("--image LABEL=DIR at least twice (the same DIR twice: A/A)")
        out.mkdir(parents=True, exist_ok=True)
        (out / EXPERIMENT).write_text(json.dumps(
            {"labels": [i.label for i in images],
             "images": {i.label: str(i.image.directory) for i in images},
             "order": args.order, "seed": args.seed, "cpus": args.cpus,
             "workloads": args.workloads, "settings": args.setting}, indent=1) + "\n")
        # Timed perf boots: the workloads a perf boot runs (not the debug-only ones, whose
        # kernel parameters would also need boots of their own).
        chosen = [w for w in workloads.select(workloads.load_all(default_layout().workloads),
                                              args.workloads) if "perf" in w.flavours]
        measure(out, images, schedule([i.label for i in images], args.rounds, args.cpus,
                                      args.order, args.seed), chosen,
                settings_of(args.setting, [i.label for i in images]))
    print(analyse(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
