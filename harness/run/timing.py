"""How long a run took, stage by stage, from its manifest: the README's numbers.

    python3 -m harness.run.timing RUN_DIR

Prints the stages compare recorded (run/stages.py) as Markdown lines:
the tree, each image (built or found, its kind and cache state), the
initramfs, the boots per flavour and mode, the report, the whole run, and
the estimate printed before the first build against it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.progress import format_duration


class TimingError(Exception):
    pass


def stage_line(s: dict) -> str:
    took = format_duration(s["seconds"])
    if s["stage"] == "image":
        what = f"{s['kernel']}/{s['flavour']}"
        if not s.get("built"):
            return f"image {what}: found ({took})"
        cores = f", {s['cpu_s'] / s['seconds']:.2f} cores busy" \
            if s.get("cpu_s") and s["seconds"] else ""
        return (f"image {what}: {took} ({s['kind']} build, {s['cache']} compiler cache, "
                f"estimated {format_duration(s['estimate_s'])}{cores})")
    if s["stage"] == "boots":
        return f"boots {s['flavour']} {s['mode']}: {s['boots']} in {took}"
    return f"{s['stage']}: {took}"


def summary(manifest: dict, source: str) -> list[str]:
    timing = manifest.get("timing")
    if not timing:
        raise TimingError(f"{source}: no timing (a run made before 2026-12-06)")
    stages = timing["stages"]
    built = [s for s in stages if s["stage"] == "image" and s.get("built")]
    lines = [f"- {stage_line(s)}" for s in stages]
    total = manifest["wall_seconds"] + sum(s["seconds"] for s in stages
                                           if s["stage"] == "report")
    first = timing.get("first_estimate", {})
    lines.append(f"- in all {format_duration(total)} ({manifest['created'][:16]}; "
                 f"{len(built)} images built, {len(manifest['boots'])} boots measured, "
                 f"{len(manifest.get('reused_boots', []))} reused)")
    if first:
        lines.append(f"- first estimate, printed after {format_duration(first['printed_at_s'])}: "
                     f"{format_duration(first['total_s'])}, "
                     f"{first['total_s'] / total * 100 - 100:+.0f}% of the real total")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m harness.run.timing", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir")
    args = parser.parse_args(argv)
    path = Path(args.run_dir) / "manifest.json"
    try:
        print("\n".join(summary(json.loads(path.read_text()), str(path))))
    except (OSError, TimingError) as err:
        raise SystemExit(str(err))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
