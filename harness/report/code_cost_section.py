"""The report's "Cost in code" section: the counts of code_cost, each with the one
line that says what it counts, the patches one by one, and where the bisection
charts that say which patch moved which measured number come from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from harness.layout import Layout
from harness.report import charts, code_cost
from harness.report.blocks import Block, ChartBlock, Heading, Para, Table


def code_cost_table(costs: list[code_cost.SeriesCost], mainline_doc: int | None) -> Table:
    """One row per count, one column per series, and what the count is."""
    def each(value_of) -> list[str]:
        return [value_of(c) for c in costs]

    def known(value, render=str) -> str:
        return "n/a" if value is None else render(value)

    tree_note = ("measured from the kernel tree when a report of the run is first written "
                 f"where build/src exists, then kept in the run's {code_cost.COST_FILE}")
    rows = [
        ["patches (review)", *each(lambda c: str(len(c.patches))),
         "git format-patch files of the series itself"],
        ["files touched (review)", *each(lambda c: str(len(c.files))),
         "distinct files its patches change"],
        ["lines added / removed (review)", *each(lambda c: f"+{c.review('added')} / "
                                                 f"-{c.review('removed')}"),
         "git apply --numstat summed over its patches: what a reviewer reads (a line two "
         "patches change counts twice)"],
        ["files outside fs/inode.c and include/linux/fs.h (review)",
         *each(lambda c: str(len([f for f in c.files if f not in code_cost.CORE_FILES]))),
         "how far the change reaches into filesystems, drivers and other subsystems"],
        ["lines of /proc/icache_retries instrumentation (review)",
         *each(lambda c: str(c.review("instrumentation"))),
         "added lines naming the retry counters this project added to measure the designs: "
         "not part of either design"],
        ["checkpatch.pl errors / warnings (review)",
         *each(lambda c: known(c.checkpatch, lambda v: f"{v[0]} / {v[1]}")),
         f"scripts/checkpatch.pl --no-tree on each patch; style, not correctness ({tree_note})"],
        ["trylock call sites (tree)", *each(lambda c: f"{c.tree('trylocks'):+d}"),
         "calls of *trylock*() added minus removed: places that may not get a lock and must "
         "back off"],
        ["retry jumps (tree)", *each(lambda c: f"{c.tree('retry_jumps'):+d}"),
         "goto again/retry/repeat/restart added minus removed: restart loops"],
        ["cpu_relax() calls (tree)", *each(lambda c: f"{c.tree('cpu_relax'):+d}"),
         "busy-wait points added minus removed: spinning until another CPU lets go"],
        ["locks dropped and re-taken (tree)", *each(lambda c: f"{c.tree('relocks'):+d}"),
         "an unlock of a lock followed further down the same hunk by a lock of the same "
         "expression, after minus before; bounded by hunks, so a proxy"],
        ["icache lock classes lockdep saw (tree)",
         *each(lambda c: known(c.lock_classes, lambda v: str(len(v)))),
         "distinct icache lock classes on the lock-order edges lockdep recorded in this run "
         "(one class per lock, whatever the filesystem)"],
        ["allowed edges in its lock-order (tree)",
         *each(lambda c: known(c.allowed_edges, lambda v: f"{v - c.allowed_unseen_roles}"
                               + (f" (+{c.allowed_unseen_roles} for locks it no longer has)"
                                  if c.allowed_unseen_roles else ""))),
         "ROLE -> ROLE lines of the lock-order file the run used: the orders a developer "
         "must keep in mind; edges naming a lock lockdep never saw in this kernel (bisection "
         "points only) counted apart"],
        ["lines of lock-order documentation in fs/inode.c (tree)",
         *each(lambda c: known(c.lock_doc_lines)),
         "comment blocks of fs/inode.c that state lock rules or order"
         + (f"; 6.1 has {mainline_doc}" if mainline_doc is not None else "")
         + f" ({tree_note})"],
        ["files compiling under allmodconfig (tree)",
         *each(lambda c: known(c.compile_check, compile_check_cell)),
         "C files the kernel's patches touch (and includers of private headers they touch), "
         "compiled under allmodconfig by make compile-check; from series-NAME/"
         f"{code_cost.COMPILE_CHECK_FILE} for exactly these patches"],
    ]
    return Table(["count", *[c.name for c in costs], "what it counts"], rows)


def compile_check_cell(result: dict) -> str:
    files, failed, skipped = (len(result["files"]), len(result["failed"]),
                              len(result["not_in_config"]))
    text = f"{files - failed - skipped} of {files}"
    if skipped:
        text += f" ({skipped} fail on pristine 6.1 too)"
    if result.get("grep"):
        text += f", with files matching {result['grep']}"
    return text


def checkpatch_of(run_dir: Path, name: str, patch_file: str) -> str:
    path = run_dir / code_cost.COST_FILE
    facts = json.loads(path.read_text()) if path.exists() else {}
    for entry in facts.get("series", {}).get(name, {}).get("checkpatch", []):
        if entry["file"] == patch_file:
            return f"{entry['errors']}/{entry['warnings']}"
    return "n/a"


def section(layout: Layout, run_dir: Path, manifest: dict, conformance: dict,
            kernels: list[str], chart_stem: Callable[[str], Path]) -> list[Block]:
    costs = code_cost.costs(layout, run_dir, manifest, conformance)
    if not costs:
        return []
    out: list[Block] = [Heading(2, "Cost in code"), Para(
        "What each series costs to review and to keep, counted at report time from the "
        "patches this run built (kept in the run folder under `series/`). *Review*: the "
        "series' own patches (chinner and piggin apply on top of base). *Tree*: the kernel "
        "against 6.1 (base's patches and the series'; not the stable fixes of 6.1 that "
        "every kernel carries, mainline included). The counts are proxies "
        "that point at code to read; none of them is a verdict on its own."),
        code_cost_table(costs, code_cost.mainline_lock_doc_lines(run_dir))]
    for c in costs:
        outside = [f for f in c.files if f not in code_cost.CORE_FILES]
        if outside:
            out.append(Para(f"{c.name} touches outside fs/inode.c and include/linux/fs.h: "
                            + ", ".join(f"`{f}`" for f in outside) + "."))
        if c.missing:
            out.append(Para(f"**{c.name}: the run folder lacks {', '.join(c.missing)} and the "
                            "checkout's copy differs, so its counts leave them out.**"))
    per_patch = [(c, p, n) for c in costs
                 for p, n in zip([p for p in c.patches if p.path], c.own)]
    out.append(Table(
        ["series", "patch", "files", "lines +", "lines -", "trylock", "retry jumps",
         "cpu_relax", "relocks", "checkpatch errors/warnings"],
        [[c.name, f"{p.index}: {p.subject or p.file}", str(len(n.files)), str(n.added),
          str(n.removed), str(n.trylocks), str(n.retry_jumps), str(n.cpu_relax),
          str(n.relocks), checkpatch_of(run_dir, c.name, p.file)] for c, p, n in per_patch]))
    legend = ["lines added", "lines removed"]
    values = {}
    for c, p, n in per_patch:
        values[f"{c.name} {p.index}", legend[0]] = n.added
        values[f"{c.name} {p.index}", legend[1]] = n.removed
    chart = charts.clustered_bars(chart_stem("code-cost-patches"),
                                  "Lines added and removed by each patch",
                                  [f"{c.name} {p.index}" for c, p, _ in per_patch], legend,
                                  [("lines", values)], legend,
                                  colours=charts.NEUTRAL[:len(legend)])
    out.append(ChartBlock(chart, "Lines each patch adds and removes (git apply --numstat), "
                                 "in series order"))
    if not any("@" in k for k in kernels):
        out.append(Para(
            "Which patch moved which measured number: this run has no bisection points "
            "(NAME@K kernels). `make compare KERNELS=\"base chinner@* piggin@*\" "
            "FLAVOURS=debug BASELINE=base` measures every point and charts each metric "
            "against the patch number here."))
    return out
