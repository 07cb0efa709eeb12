"""make soak: random mixes of every workload on the checking kernels until the time is up.

Each boot draws a kernel, a checking flavour (debug, sanitize, kcsan), a vCPU
count and a shuffled mix of workload steps from a seeded random stream, so
a soak can be replayed. Every boot is classified and kept under
results/soak/<stamp>/boots/; the summary (summary.md and summary.json)
counts boots and workload-hours per kernel and flavour, and lists the
kernel reports by kind with the title of the first of each, and names the
image each kernel and flavour booted (its key, commit and patch digest: a
compare run counts a soak of the images it used, run/records.py). It is
rewritten before and after every boot, so a soak that is killed leaves a
summary of what it measured that names the boot it was in.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness import lockorder, progress
from harness.boot import qemu, runner
from harness.guest import initramfs, plan
from harness.guest.workloads import Workload
from harness.kernels import kbuild
from harness.layout import Layout, slug

SOAK_FLAVOURS = ("debug", "sanitize", "kcsan")
SOAK_CPUS = (1, 2, 4)
STEPS_PER_BOOT = (3, 8)  # a mix is this many workload steps, drawn at random


@dataclass(frozen=True)
class Plan:
    """What a soak was asked for and boots: the same in every summary it writes."""
    seed: int
    duration_s: float
    started: str  # local time the boots began (after any builds), ISO 8601
    images: dict[str, kbuild.ImageIdentity]  # "kernel/flavour" -> the image it boots


@dataclass
class Tally:
    boots: int = 0
    step_seconds: float = 0.0
    statuses: Counter = field(default_factory=Counter)
    cpus: Counter = field(default_factory=Counter)  # vCPU count -> boots
    damaged: int = 0  # records that arrived damaged: each one a defect to chase
    reports: Counter = field(default_factory=Counter)  # kind -> count
    first: dict[str, str] = field(default_factory=dict)  # kind -> "title (boot folder)"


def parse_duration(text: str) -> float:
    """'90s', '45m', '2h' or plain seconds."""
    units = {"s": 1, "m": 60, "h": 3600}
    text = text.strip()
    try:
        if text and text[-1] in units:
            return float(text[:-1]) * units[text[-1]]
        return float(text)
    except ValueError:
        raise ValueError(f"duration {text!r}: expected e.g. 90s, 45m or 2h") from None


def draw_mix(rng: random.Random, known: list[Workload], cpus: int) -> list[plan.Step]:
    """A shuffled mix of workload steps for one boot. Steps that need kernel
    parameters of their own (cmdline) boot apart: a boot draws from the group of
    one step picked at random, so each group comes up as often as its steps."""
    choices = [(w, fs, procs) for w in known for fs in w.filesystems
               for procs in w.procs_for(cpus)]
    groups = plan.by_cmdline(choices)
    pool = groups[rng.choice(choices)[0].cmdline] if len(groups) > 1 else choices
    count = rng.randint(*STEPS_PER_BOOT)
    # A group smaller than a mix repeats steps rather than make a short boot.
    drawn = rng.sample(pool, count) if count <= len(pool) else rng.choices(pool, k=count)
    return plan.make_steps(drawn)


def soak(layout: Layout, kernels: list[str], known: list[Workload], duration_s: float,
         flavours: tuple[str, ...] = SOAK_FLAVOURS, cpus: tuple[int, ...] = SOAK_CPUS,
         seed: int = 1, accel: str = "tcg", out: Path | None = None) -> Path:
    out = out or layout.soaks / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    files = initramfs.prepare(layout)
    images = {}
    for i, (kernel, flavour) in enumerate([(k, f) for k in kernels for f in flavours], 1):
        progress.say(f"kernel {i}/{len(kernels) * len(flavours)}: {kernel}/{flavour}")
        images[kernel, flavour] = kbuild.build(layout, kernel, flavour)
    asked = Plan(seed, duration_s, time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                 {f"{k}/{f}": kbuild.identity(image) for (k, f), image in images.items()})
    orders = {k: lockorder.for_kernel(layout, k) for k in kernels}
    rng = random.Random(seed)
    tallies: dict[tuple[str, str], Tally] = {}
    started = time.monotonic()
    deadline = started + duration_s
    boots = []
    n = 0
    while time.monotonic() < deadline:
        n += 1
        kernel, flavour, vcpus = rng.choice(kernels), rng.choice(flavours), rng.choice(cpus)
        steps = draw_mix(rng, known, vcpus)
        boot_id = f"{n:04d}-{slug(kernel)}-{flavour}-c{vcpus}"
        left = max(0.0, deadline - time.monotonic())
        write_summary(out, asked, tallies, boots, time.monotonic() - started, running=boot_id)
        progress.say(f"soak boot {n}: {kernel}/{flavour} {vcpus} vCPUs, "
                     f"{', '.join(s.label for s in steps)} "
                     f"({progress.format_duration(left)} of {progress.format_duration(duration_s)}"
                     f" left)")
        record = runner.run_boot(images[kernel, flavour], files, qemu.Machine(accel, vcpus),
                                 steps, out / "boots" / boot_id,
                                 f"soak boot {n} (seed {seed})", orders[kernel])
        tally = tallies.setdefault((kernel, flavour), Tally())
        tally.boots += 1
        tally.statuses[record.status] += 1
        tally.cpus[vcpus] += 1
        tally.damaged += len(record.damaged)
        tally.step_seconds += sum(s.wall_s or 0.0 for s in record.steps)
        for report in record.reports:
            tally.reports[report["kind"]] += 1
            tally.first.setdefault(report["kind"], f"{report['title']} ({boot_id})")
        boots.append({"boot": boot_id, "kernel": kernel, "flavour": flavour, "cpus": vcpus,
                      "status": record.status, "steps": [s.label for s in steps],
                      "reports": list(record.reports), "damaged": list(record.damaged)})
        progress.say(f"  {record.status} in {record.wall_s:.0f}s"
                     + (f": {len(record.reports)} kernel reports" if record.reports else ""))
        write_summary(out, asked, tallies, boots, time.monotonic() - started)
    write_summary(out, asked, tallies, boots, time.monotonic() - started, finished=True)
    return out


def image_line(images: dict[str, kbuild.ImageIdentity]) -> str:
    return "Images: " + "; ".join(
        f"{name} {i.key} ({i.patches} patches of its own, digest {i.patches_digest})"
        for name, i in sorted(images.items())) + "."


def write_summary(out: Path, asked: Plan, tallies: dict[tuple[str, str], Tally],
                  boots: list[dict], wall_s: float, running: str | None = None,
                  finished: bool = False) -> None:
    """summary.md and summary.json. `running` names the boot in flight: if the
    soak is gone and the summary still names one, the soak died there."""
    if finished:
        state = "Finished: the time was up."
    elif running:
        state = (f"Boot {running} was running when this was written; if the soak is no "
                 "longer running, it stopped there (the boot's folder is kept, unclassified).")
    else:
        state = "Between boots: the next one had not started when this was written."
    lines = [f"# Soak, seed {asked.seed}: {len(boots)} boots in {wall_s / 3600:.2f} h "
             f"of the {asked.duration_s / 3600:.2f} h asked", "", state, "",
             f"Started {asked.started}. {image_line(asked.images)}", "",
             "| kernel | flavour | boots | boots by vCPUs | workload-hours | boot status "
             "| damaged records | reports by kind (first title) |",
             "|---|---|---|---|---|---|---|---|"]
    for (kernel, flavour), t in sorted(tallies.items()):
        status = ", ".join(f"{s} {c}" for s, c in sorted(t.statuses.items()))
        reports = "; ".join(f"{kind} {count} ({t.first[kind]})"
                            for kind, count in sorted(t.reports.items())) or "0"
        by_cpus = ", ".join(f"{c}: {n}" for c, n in sorted(t.cpus.items()))
        lines.append(f"| {kernel} | {flavour} | {t.boots} | {by_cpus} | "
                     f"{t.step_seconds / 3600:.2f} | {status} | {t.damaged} | {reports} |")
    write_whole(out / "summary.md", "\n".join(lines) + "\n")
    write_whole(out / "summary.json", json.dumps({
        "seed": asked.seed, "started": asked.started, "wall_s": round(wall_s, 1),
        "duration_s": asked.duration_s, "finished": finished, "running": running,
        "images": {name: asdict(i) for name, i in sorted(asked.images.items())},
        "tallies": {f"{k}/{f}": {"boots": t.boots, "step_seconds": round(t.step_seconds, 1),
                                 "statuses": dict(t.statuses), "cpus": dict(t.cpus),
                                 "damaged_records": t.damaged, "reports": dict(t.reports),
                                 "first": t.first} for (k, f), t in sorted(tallies.items())},
        "boots": boots}, indent=1) + "\n")


def write_whole(path: Path, text: str) -> None:
    """Write beside, then rename: a soak killed while writing leaves its last whole
    summary, never half of one (a compare run reads it: run/records.py)."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    partial.replace(path)
