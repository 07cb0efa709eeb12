"""python3 -m harness: the command line.

    parse lockstat|reports|kcsan|lockdep|fio|records FILE   JSON on stdout
    build [--flavours F...] KERNEL...                 build (or find) kernel images
    boot KERNEL [--flavours F...] [--cpus N...] ...   boots of one kernel, workloads of your choice
    compare [--kernels ...] [--cpus ...] ...          the measurement matrix, then its report
            [--executor slurm --slurm-partition P]    ... with every boot a Slurm job
    soak --duration 2h [--kernels ...] ...            random mixes on debug/sanitize/kcsan kernels
    faults [--duration 2h] [--kernels ...] ...        fault injection, mainline the control
    kcsan [--budget 18m] [--kernels ...] ...          data races on the kcsan kernels, mainline the control
    report [RUN_DIR] [--baseline K]                   report.md and report.html of a run
    slides [RUN_DIR] [--baseline K]                   slides.pdf of a run
    reference [RUN_DIR] | --check                     publish a run as results/reference
    bisect-check SERIES                               every patch builds, boots, checkpatch
    compile-check KERNEL [--grep RE]                  touched files compile under allmodconfig
    check-workloads                                   validate workloads/*.wl
    workload-packages                                 Debian packages the workloads declare
    predict RUN_DIR | --profile FILE [--cpus ...]     scaling model: throughput at N CPUs
    node-boot SPEC | node-probe SPEC                  what a cluster job runs (run/nodejob.py)
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import signal
import sys
import time
from pathlib import Path

from harness import lockorder, progress
from harness.analysis import machines, predict, scaling_inputs
from harness.boot import channel, measure, qemu, runner, tcg_cs
from harness.guest import check, deps, initramfs, plan, protocol, workloads
from harness.kernels import bisect_check, compile_check, kbuild, series, source
from harness.parsers import fio, kernel_reports, lockdep_graph, lockstat
from harness.parsers import kcsan as kcsan_parser
from harness.report import charts, document, reference, slides, svg_pages
from harness.run import (compare, faults, finish, kcsan, matrix, nodejob, records, slurm,
                         soak, tidy)
from harness.layout import default_layout, folder_list, slug

DEFAULT_CPUS = min(2, os.cpu_count() or 1)  # of `boot` without --cs
BOOT_FLAVOUR = "debug"  # of `boot`: exact lock counts, lockdep


def _read(path: str) -> str:
    return Path(path).read_text(errors="replace")


def cmd_parse(args) -> int:
    if args.kind == "lockstat":
        out = lockstat.parse(_read(args.file)).as_json()
    elif args.kind == "reports":
        out = {"reports": [r.as_json() for r in kernel_reports.parse(_read(args.file))]}
    elif args.kind == "kcsan":
        out = {"races": [dataclasses.asdict(r) for r in kcsan_parser.parse(_read(args.file))]}
    elif args.kind == "lockdep":
        out = {"edges": [list(e) for e in lockdep_graph.parse(_read(args.file))]}
    elif args.kind == "fio":
        out = fio.parse(_read(args.file)).as_json()
    else:
        received = channel.parse(Path(args.file).read_bytes())
        out = {"records": [{"name": r.name, "bytes": len(r.data)} for r in received.records],
               "damaged": [{"name": d.name, "reason": d.reason} for d in received.damaged]}
    json.dump(out, sys.stdout, indent=1)
    print()
    return 0


def cmd_build(args) -> int:
    layout = default_layout()
    names = (series.expand_names(layout, _split(args.kernels)) if args.kernels
             else existing_kernels(layout))
    todo = [(k, f) for k in names for f in args.flavours or kbuild.DEFAULT_FLAVOURS]
    for i, (kernel, flavour) in enumerate(todo, 1):
        progress.say(f"kernel {i}/{len(todo)}: {kernel}/{flavour}")
        image = kbuild.build(layout, kernel, flavour)
        print(json.dumps({"kernel": kernel, "flavour": flavour, "key": image.key,
                          "bzImage": str(image.bzimage)}))
    return 0


def existing_kernels(layout) -> list[str]:
    """mainline and every kernel whose series has patches."""
    return [k for k in series.KERNEL_NAMES if series.series_exists(layout, k)]


# base is the ancestor both series start from, not a contender: the default
# compare leaves it out so that a warm run stays within 20 minutes (issue 24);
# --full and --kernels bring it back.
LEFT_OUT_OF_DEFAULT_COMPARE = ("base",)


def compare_kernels(layout, full: bool, duel: bool = False) -> list[str]:
    """The kernels of a compare not given --kernels: mainline and the two designs,
    with --full every kernel whose series exists, and with --duel the historical pair
    too (series.HISTORICAL: the designs as a 2010 summit compared them)."""
    found = [k for k in existing_kernels(layout) if full or k not in LEFT_OUT_OF_DEFAULT_COMPARE]
    return found + (list(series.HISTORICAL) if duel else [])


def _split(values: list[str]) -> list[str]:
    return [v for item in values for v in item.replace(",", " ").split()]


def _layout(args):
    """The layout, with kernel images from --images DIR and workload declarations
    from --workloads-dir DIR when given."""
    layout = default_layout()
    if getattr(args, "images", None):
        layout = dataclasses.replace(layout, image_store=Path(args.images).resolve())
    if getattr(args, "workloads_dir", None):
        folders = tuple(f for value in args.workloads_dir for f in folder_list(value))
        layout = dataclasses.replace(layout, workload_dirs=folders)
    return layout


def cmd_boot(args) -> int:
    """Boots of one kernel with chosen workloads, one per flavour and vCPU count;
    prints each boot's record. Workloads that declare kernel parameters boot
    apart (a folder each)."""
    layout = _layout(args)
    known = workloads.load_all(layout.workloads)
    chosen = workloads.select(known, " ".join(args.workloads))
    order = lockorder.for_kernel(layout, args.kernel)
    # --cs: the perf kernel with the critical-section plugin: 1 vCPU under -icount,
    # or --cpus N round robin (mode tcg-cs-rr: failed trylocks and their retries).
    flavours = ["perf"] if args.cs else list(dict.fromkeys(args.flavours or [BOOT_FLAVOUR]))
    cpu_counts = [int(c) for c in _split(args.cpus)] or [1 if args.cs else DEFAULT_CPUS]
    files = initramfs.prepare(layout, chosen)
    stamp = time.strftime('%Y%m%d-%H%M%S')
    status = 0
    for flavour in flavours:
        image = (tcg_cs.build_image(layout, args.kernel, build_missing=not args.no_build)
                 if args.cs
                 else kbuild.build(layout, args.kernel, flavour,
                                   build_missing=not args.no_build))
        for cpus in cpu_counts:
            boot = BootChoice(flavour, cpus, cpus == 1 if args.cs else args.icount)
            items = [(w, fs, p) for w in chosen for fs in (args.fs or w.filesystems)
                     for p in ([args.procs] if args.procs else w.procs_for(cpus))]
            for warning in workloads.oversubscribed(
                    ((w, p, cpus) for w, _, p in items),
                    f"--procs {args.procs}" if args.procs else ""):
                progress.say(f"warning: {warning}")
            out = _boot_folder(args, layout, stamp, boot, len(flavours) * len(cpu_counts) > 1)
            for cmdline, group in plan.by_cmdline(items).items():
                folder = out.with_name(f"{out.name}-{plan.cmdline_slug(cmdline)}") \
                    if cmdline else out
                status |= _boot_once(args, boot, layout, image, files, order,
                                     plan.make_steps(group), folder)
    return status


@dataclasses.dataclass(frozen=True)
class BootChoice:
    """What one boot of `harness boot` runs: a flavour, a vCPU count, -icount or not."""
    flavour: str
    cpus: int
    icount: bool


def _boot_folder(args, layout, stamp: str, boot: BootChoice, several: bool) -> Path:
    """--out, or a folder under results/boots/; with several boots, one each."""
    if args.out:
        out = Path(args.out)
        return out.with_name(f"{out.name}-{boot.flavour}-c{boot.cpus}") if several else out
    mode = tcg_cs.mode_of(boot.cpus) if args.cs else "manual"
    return layout.boot_dir(f"{stamp}-{slug(args.kernel)}-{boot.flavour}-{mode}"
                           + (f"-c{boot.cpus}" if several else ""))


def _boot_once(args, boot: BootChoice, layout, image: kbuild.KernelImage,
               files: initramfs.GuestFiles, order: lockorder.LockOrder,
               steps: list[plan.Step], out: Path) -> int:
    machine = (tcg_cs.machine(layout, image, out, order, boot.cpus) if args.cs
               else qemu.Machine(args.accel, boot.cpus, icount=boot.icount,
                                 poll_idle=boot.icount))
    cmdline = plan.kernel_cmdline(steps)
    progress.say(f"booting {args.kernel}/{boot.flavour} on {boot.cpus} vCPUs "
                 f"({args.accel}{', icount' if boot.icount else ''}"
                 f"{', ' + cmdline if cmdline else ''}): {len(steps)} steps, folder {out}")
    record = runner.run_boot(image, files, machine, steps, out, "manual boot", order,
                             timeout_s=args.timeout,
                             on_line=(lambda line: print(line, file=sys.stderr))
                             if args.verbose else _marker_printer)
    summary = boot_summary(record)
    summary["image"] = str(image.directory)
    violations = []
    if boot.flavour in kbuild.LOCKDEP_FLAVOURS:
        edges = lockorder.edges_of_boot(out, order)
        violations = order.violations(edges)
        summary["lock_order"] = {"file": str(order.path.relative_to(layout.repo)),
                                 "icache_edges": edges, "violations": violations}
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    json.dump(summary, sys.stdout, indent=1)
    print()
    return 0 if record.status == "ok" and not violations else 1


def boot_summary(record: runner.BootRecord) -> dict:
    """The headline of a boot; boot.json in its folder has everything."""
    steps = []
    for outcome in record.steps:
        item = {"step": outcome.label, "status": outcome.status}
        figures = outcome.numbers.figures if outcome.numbers else ()
        declared = {f.phase for f in figures if f.metric == measure.DECLARED_OPS}
        for fig in figures:
            if fig.metric == "throughput":
                mark = " (ops declared, not measured)" if fig.phase in declared else ""
                item[f"{fig.phase} {fig.unit}{mark}"] = round(fig.value, 1)
            elif fig.metric == "acquisitions_per_op":
                item[f"{fig.phase} {fig.lock} acquisitions/op"] = round(fig.value, 3)
            elif fig.metric in ("cs_instructions_per_acq", "instructions_per_op"):
                item[f"{fig.phase} {fig.lock or 'all'} {fig.metric}"] = round(fig.value, 1)
            elif fig.metric in ("shared.acquisitions_per_op", "per-inode.acquisitions_per_op"):
                item[f"{fig.phase} {fig.metric.split('.')[0]} acquisitions/op"] = \
                    round(fig.value, 3)
            elif fig.metric.startswith("retries.") and fig.metric.endswith("_per_op") \
                    and fig.value:
                item[f"{fig.phase} {fig.metric[8:-7]} {fig.unit}"] = round(fig.value, 5)
        if outcome.numbers and outcome.numbers.error:
            item["error"] = outcome.numbers.error
        if outcome.numbers and outcome.numbers.note:
            item["note"] = outcome.numbers.note
        steps.append(item)
    return {"status": record.status, "folder": str(record.directory),
            "wall_s": round(record.wall_s, 1), "reports": list(record.reports),
            "damaged": list(record.damaged), "steps": steps}


def _marker_printer(line: str) -> None:
    if protocol.MARK in line:
        progress.say("  guest: " + line.split(protocol.MARK, 1)[1].strip())


def cmd_compare(args) -> int:
    layout = _layout(args)
    known = workloads.load_all(layout.workloads)  # validated before anything is built
    # Only the knobs given on the command line; the rest are Matrix's defaults.
    knobs = dict(matrix.FULL) if args.full else {}
    if args.duel:
        spec = matrix.DUEL["workloads"] if not args.full else knobs.get("workloads")
        knobs.update(matrix.DUEL, workloads=spec)
    knobs.update({name: getattr(args, name) for name in ("repeat", "debug_repeat",
                                                         "icount_repeat", "cs_repeat",
                                                         "duel_repeat", "rr_repeat",
                                                         "order_seed")
                  if getattr(args, name) is not None})
    spec = " ".join(args.workloads) if args.workloads else \
        knobs.pop("workloads", matrix.DEFAULT_WORKLOADS)
    knobs.pop("workloads", None)
    if args.flavours:
        knobs["flavours"] = tuple(_split(args.flavours))
    if args.count_cpus:
        knobs["count_cpus"] = tuple(int(c) for c in _split(args.count_cpus) if c != "none")
    chosen = workloads.select(known, spec)
    kernels = (series.expand_names(layout, _split(args.kernels)) if args.kernels
               else compare_kernels(layout, args.full, args.duel))
    for kernel in kernels:
        series.resolve(layout, kernel)  # unknown names and missing patches fail here
        lockorder.for_kernel(layout, kernel)  # and a missing lock-order file
    cpus = [int(c) for c in _split(args.cpus)] if args.cpus else matrix.default_cpus()
    run_dir = Path(args.run_dir) if args.run_dir else \
        layout.runs / time.strftime("%Y%m%d-%H%M%S")
    wanted = matrix.Matrix(kernels=kernels, cpus=cpus, workloads=chosen,
                           differences_elsewhere=workloads.differences_elsewhere(known, chosen),
                           **knobs)
    for warning in wanted.oversubscribed(args.accel or "tcg", os.cpu_count() or 1):
        progress.say(f"warning: {warning}")
    progress.say(f"compare: kernels {' '.join(kernels)}; vCPUs {' '.join(map(str, cpus))}; "
                 f"workloads {' '.join(w.name for w in chosen)}; repeat {wanted.repeat}; "
                 f"run folder {run_dir}")
    result = compare.run(layout, wanted, run_dir, accel=args.accel,
                         on_line=None if not args.verbose
                         else (lambda line: print(line, file=sys.stderr)),
                         build_missing=not args.no_build, site=site_of(args, layout))
    latest = layout.latest
    if latest.is_symlink() or not latest.exists():
        latest.unlink(missing_ok=True)
        latest.symlink_to(run_dir.resolve().relative_to(layout.results.resolve())
                          if run_dir.resolve().is_relative_to(layout.results.resolve())
                          else run_dir.resolve())
    progress.say(f"compare done: {len(result.rows)} rows in {run_dir / 'tidy.tsv'}")
    report_started = time.monotonic()
    md, page = document.write(layout, run_dir, args.baseline)
    finish.add_stage(run_dir, "report", time.monotonic() - report_started)
    progress.say(f"report: {md} and {page}")
    return 0


def cmd_soak(args) -> int:
    layout = _layout(args)
    known = workloads.select(workloads.load_all(layout.workloads),
                             " ".join(args.workloads) or "all")
    kernels = (series.expand_names(layout, _split(args.kernels)) if args.kernels
               else existing_kernels(layout))
    for kernel in kernels:
        series.resolve(layout, kernel)
        lockorder.for_kernel(layout, kernel)
    duration = soak.parse_duration(args.duration)
    flavours = tuple(_split(args.flavours)) or soak.SOAK_FLAVOURS
    cpus = tuple(int(c) for c in _split(args.cpus)) or soak.SOAK_CPUS
    out = soak.soak(layout, kernels, known, duration, flavours, cpus, args.seed, args.accel)
    print((out / "summary.md").read_text(), end="")
    progress.say(f"soak done: {out}")
    return 0


def cmd_faults(args) -> int:
    layout = _layout(args)
    known = list(workloads.load_all(layout.workloads).values())
    kernels = (series.expand_names(layout, _split(args.kernels)) if args.kernels
               else existing_kernels(layout))
    for kernel in kernels:
        series.resolve(layout, kernel)
        lockorder.for_kernel(layout, kernel)
    duration = soak.parse_duration(args.duration) if args.duration else None
    cpus = tuple(int(c) for c in _split(args.cpus)) or faults.FAULT_CPUS
    out = faults.faults(layout, kernels, known, duration, cpus, args.seed, args.accel)
    print((out / "summary.md").read_text(), end="")
    progress.say(f"faults done: {out}")
    return 0


def cmd_kcsan(args) -> int:
    layout = _layout(args)
    known = list(workloads.load_all(layout.workloads).values())
    kernels = (series.expand_names(layout, _split(args.kernels)) if args.kernels
               else existing_kernels(layout))
    for kernel in kernels:
        series.resolve(layout, kernel)
        lockorder.for_kernel(layout, kernel)
    budget = soak.parse_duration(args.budget) if args.budget else None
    cpus = tuple(int(c) for c in _split(args.cpus)) or kcsan.KCSAN_CPUS
    out = kcsan.kcsan(layout, kernels, known, cpus, args.accel, budget,
                      every_kernel=existing_kernels(layout))
    print((out / "summary.md").read_text(), end="")
    progress.say(f"kcsan done: {out}")
    return 0


def site_of(args, layout) -> compare.Site:
    """Where the boots run: this machine, or the nodes of a Slurm partition."""
    if args.executor == "local":
        return compare.local_site
    if not args.slurm_partition:
        raise slurm.SlurmError("--executor slurm needs --slurm-partition (SLURM_PARTITION=)")
    shared = Path(args.slurm_shared) if args.slurm_shared else layout.results / "slurm"
    return slurm.site(slurm.SlurmConfig(args.slurm_partition, shared.resolve(),
                                        tuple(shlex.split(args.slurm_options or ""))))


def cmd_report(args) -> int:
    layout = default_layout()
    run_dir = Path(args.run_dir) if args.run_dir else layout.latest
    if not tidy.table_in(run_dir).exists():
        raise FileNotFoundError(f"{run_dir}: no tidy.tsv (not a run folder)")
    if args.records:
        records.refresh(layout, run_dir)
    md, page = document.write(layout, run_dir.resolve(), args.baseline)
    progress.say(f"report: {md} and {page}")
    return 0


def cmd_slides(args) -> int:
    layout = default_layout()
    run_dir = Path(args.run_dir) if args.run_dir else layout.results / "latest"
    if not tidy.table_in(run_dir).exists():
        raise FileNotFoundError(f"{run_dir}: no tidy.tsv (not a run folder)")
    progress.say(f"slides: {slides.write(layout, run_dir.resolve(), args.baseline)}")
    return 0


def cmd_reference(args) -> int:
    layout = default_layout()
    if args.check:
        problems = reference.check(layout)
        for p in problems:
            print(f"stale: {p.kernel}: {p.reason}")
        if not problems:
            print("results/reference matches the series of this checkout")
        return 1 if problems else 0
    run_dir = Path(args.run_dir) if args.run_dir else layout.latest
    target = reference.publish(layout, run_dir.resolve())
    progress.say(f"published {run_dir} as {target}")
    return 0


def cmd_bisect_check(args) -> int:
    results = bisect_check.check_series(default_layout(), args.series, cpus=args.cpus)
    json.dump([dict(r.__dict__, ok=r.ok) for r in results], sys.stdout, indent=1)
    print()
    failed = [r.kernel for r in results if not r.ok]
    progress.say(f"bisect-check: {len(results) - len(failed)} of {len(results)} points pass"
                 + (f"; failing: {' '.join(failed)}" if failed else ""))
    return 1 if failed else 0


def cmd_compile_check(args) -> int:
    result = compile_check.check(default_layout(), args.kernel, args.grep)
    json.dump(dict(result.__dict__, ok=result.ok), sys.stdout, indent=1)
    print()
    compiled = len(result.files) - len(result.failed) - len(result.not_in_config)
    progress.say(f"compile-check {result.kernel} ({result.config}, {result.modules_enabled} "
                 f"modules enabled): {compiled} of {len(result.files)} files compile "
                 f"in {result.seconds:.0f}s"
                 + (f"; not in this config (fail on pristine 6.1 too): "
                    f"{' '.join(result.not_in_config)}" if result.not_in_config else "")
                 + (f"; failing: {' '.join(result.failed)}" if result.failed else ""))
    return 0 if result.ok else 1


def cmd_check_workloads(args) -> int:
    layout = _layout(args)
    progress.say(f"workload declarations from {' '.join(map(str, layout.workloads))}")
    known, problems = workloads.read_all(layout.workloads)
    guest = layout.guest
    programs = initramfs.program_files(initramfs.compile_workloads(layout, guest / "bin"))
    base = initramfs.harness_files(initramfs.compile_helper(guest / "helper"))
    try:
        notes = check.check(list(known.values()), base, programs)
    except workloads.WorkloadError as err:
        problems += err.problems
    if problems:  # every file's, parsed or not
        raise workloads.WorkloadError(workloads.in_file_order(problems))
    for w in known.values():
        print(f"{w.name:24} {'default' if w.default else '       '} {' '.join(w.filesystems):11}"
              f" {w.summary}")
    for note in notes:
        progress.say(note)
    return 0


def cmd_workload_packages(args) -> int:
    """For make: the Debian packages the workloads declare, one line."""
    known = workloads.load_all(_layout(args).workloads)
    print(" ".join(deps.declared_packages(list(known.values()))))
    return 0


def _add_workloads_dir(p) -> None:
    p.add_argument("--workloads-dir", action="append", metavar="DIR",
                   help="read the workload declarations (*.wl) of DIR instead of the "
                        "checkout's workloads/ (several: repeat it, or DIR1:DIR2); also "
                        "WORKLOADS_DIR=DIR")


def _add_flavours(p, default: str) -> None:
    """--flavours F..., the one spelling of build, boot and compare; --flavour F
    (repeatable) its older spelling."""
    p.add_argument("--flavours", nargs="+", action="extend", choices=kbuild.FLAVOURS,
                   metavar="FLAVOUR", help=f"kernel flavours: {', '.join(kbuild.FLAVOURS)} "
                                           f"({default})")
    p.add_argument("--flavour", dest="flavours", action="append", choices=kbuild.FLAVOURS,
                   help="the older spelling: one flavour, repeatable")


def _add_image_options(p) -> None:
    p.add_argument("--images", metavar="DIR",
                   help="kernel images from DIR (another build folder's images/, a shared "
                        "cache) instead of build/images; also IMAGES_DIR=DIR")
    p.add_argument("--no-build", action="store_true",
                   help="never build a kernel: a missing image is an error naming it")


def cmd_predict(args) -> int:
    return predict.command(args)


def _add_parse(sub) -> None:
    p = sub.add_parser("parse", help="parse a captured file, print JSON")
    p.add_argument("kind", choices=["lockstat", "reports", "kcsan", "lockdep", "fio", "records"])
    p.add_argument("file")
    p.set_defaults(func=cmd_parse)


def _add_build(sub) -> None:
    p = sub.add_parser("build", help="build kernel images (cached)")
    p.add_argument("kernels", nargs="*",
                   help="mainline, base, chinner, piggin, NAME@K, NAME@* (default: all that exist)")
    _add_flavours(p, f"default: {' '.join(kbuild.DEFAULT_FLAVOURS)}")
    p.set_defaults(func=cmd_build)


def _add_boot(sub) -> None:
    p = sub.add_parser("boot", help="boot one kernel and run workloads")
    p.add_argument("kernel")
    _add_flavours(p, f"a boot each (default: {BOOT_FLAVOUR})")
    p.add_argument("--cpus", nargs="*", default=[],
                   help=f"vCPUs, a boot each (default {DEFAULT_CPUS}; with --cs 1, or N round "
                        f"robin)")
    p.add_argument("--procs", type=int,
                   help="worker processes of every step: overrides every chosen workload's "
                        "own procs (default: each workload's)")
    p.add_argument("--fs", action="append", choices=protocol.FILESYSTEMS,
                   help="filesystem (repeatable): overrides every chosen workload's own fs "
                        "(default: each workload's)")
    p.add_argument("--workloads", nargs="*", default=["default"],
                   help="default, all or names (default: default)")
    p.add_argument("--accel", default="tcg", choices=["tcg", "kvm"],
                   help="accelerator (default tcg; compare probes KVM unless given)")
    p.add_argument("--icount", action="store_true")
    p.add_argument("--cs", action="store_true",
                   help="critical sections: the perf kernel with the tcg-cs plugin "
                        "(1 vCPU, -icount; with --cpus N: N vCPUs round robin, trylock "
                        "retries)")
    p.add_argument("--timeout", type=float, help="seconds before the guest is killed")
    p.add_argument("--out", help="boot folder (default under results/boots/)")
    p.add_argument("-v", "--verbose", action="store_true", help="echo the console")
    _add_image_options(p)
    _add_workloads_dir(p)
    p.set_defaults(func=cmd_boot)


def _add_compare(sub) -> None:
    p = sub.add_parser("compare", help="run the measurement matrix")
    p.add_argument("--kernels", nargs="*", default=[],
                   help="default: mainline and every series but "
                   f"{', '.join(LEFT_OUT_OF_DEFAULT_COMPARE)} (with --full: every series)")
    p.add_argument("--cpus", nargs="*", default=[])
    p.add_argument("--workloads", nargs="*", default=[],
                   help=f"default, all or names (default: {matrix.DEFAULT_WORKLOADS})")
    p.add_argument("--repeat", type=int, help="perf boots per kernel and vCPU count")
    p.add_argument("--debug-repeat", type=int, help="debug boots per kernel and vCPU count")
    p.add_argument("--icount-repeat", type=int, help="1-vCPU -icount perf boots per kernel")
    p.add_argument("--cs-repeat", type=int,
                   help="1-vCPU tcg-cs boots per kernel: critical-section lengths")
    p.add_argument("--duel-repeat", type=int,
                   help=f"timed rounds of {' and '.join(matrix.DUEL_PAIR)} per vCPU count "
                        "(the rounds past --repeat boot the pair alone)")
    p.add_argument("--rr-repeat", type=int,
                   help=f"{matrix.RR_CPUS}-vCPU tcg-cs-rr boots per kernel of the count-boots "
                        "workloads: the instructions of failed trylock loops")
    p.add_argument("--order-seed", type=int,
                   help="seed of the kernels' order in each round of timed boots "
                        "(default: a new one, kept in the manifest)")
    _add_flavours(p, f"default: {' '.join(kbuild.DEFAULT_FLAVOURS)}")
    p.add_argument("--count-cpus", nargs="*", default=[],
                   help="vCPUs of the debug-only count boots of the workloads with "
                        f"count-boots = yes (default: {' '.join(map(str, matrix.COUNT_CPUS))}; "
                        "none: no count boots)")
    p.add_argument("--full", action="store_true",
                   help="every kernel and workload, more boots: " + ", ".join(
                       f"{k}={v}" for k, v in matrix.FULL.items()))
    p.add_argument("--duel", action="store_true",
                   help="the reference's matrix: the historical pair ("
                        + ", ".join(series.HISTORICAL) + ") beside the default kernels, "
                        + ", ".join(f"{k}={v}" for k, v in matrix.DUEL.items()))
    p.add_argument("--accel", choices=["tcg", "kvm"], help="skip the KVM probe")
    p.add_argument("--run-dir")
    p.add_argument("--baseline", help="kernel the others are compared to (default: mainline)")
    p.add_argument("-v", "--verbose", action="store_true", help="echo the console")
    _add_image_options(p)
    p.add_argument("--executor", choices=["local", "slurm"], default="local",
                   help="boot here, or as Slurm jobs (run/slurm.py)")
    p.add_argument("--slurm-partition", help="the partition the boots run on")
    p.add_argument("--slurm-shared",
                   help="a directory at the same path on every node (default: RESULTS_DIR/slurm)")
    p.add_argument("--slurm-options", help="more sbatch/srun options, e.g. '--account=x'")
    _add_workloads_dir(p)
    p.set_defaults(func=cmd_compare)


def _add_soak(sub) -> None:
    p = sub.add_parser("soak", help="random workload mixes on debug, sanitize and kcsan kernels")
    p.add_argument("--kernels", nargs="*", default=[])
    p.add_argument("--duration", required=True, help="e.g. 45m, 2h")
    p.add_argument("--flavours", nargs="*", default=[],
                   help=f"default: {' '.join(soak.SOAK_FLAVOURS)}")
    p.add_argument("--cpus", nargs="*", default=[],
                   help=f"default: {' '.join(map(str, soak.SOAK_CPUS))}")
    p.add_argument("--workloads", nargs="*", default=[], help="default: all")
    p.add_argument("--seed", type=int, default=1, help="the same seed draws the same mixes")
    p.add_argument("--accel", default="tcg", choices=["tcg", "kvm"])
    _add_workloads_dir(p)
    p.set_defaults(func=cmd_soak)


def _add_faults(sub) -> None:
    p = sub.add_parser("faults", help="fault injection in the inode cache, mainline the control")
    p.add_argument("--kernels", nargs="*", default=[])
    p.add_argument("--duration", help="rounds until this is up (e.g. 2h); default: one round")
    p.add_argument("--cpus", nargs="*", default=[],
                   help=f"default: {' '.join(map(str, faults.FAULT_CPUS))}")
    p.add_argument("--seed", type=int, default=1,
                   help="the same seed asks every kernel to fail the same way")
    p.add_argument("--accel", default="tcg", choices=["tcg", "kvm"])
    _add_workloads_dir(p)
    p.set_defaults(func=cmd_faults)


def _add_kcsan(sub) -> None:
    p = sub.add_parser("kcsan", help="data races on the kcsan kernels, mainline the control")
    p.add_argument("--kernels", nargs="*", default=[])
    p.add_argument("--cpus", nargs="*", default=[],
                   help=f"default: {' '.join(map(str, kcsan.KCSAN_CPUS))}")
    p.add_argument("--budget",
                   help="start no boot expected to end past this (e.g. 18m); run again to "
                        "go on (default: measure everything missing)")
    p.add_argument("--accel", default="tcg", choices=["tcg", "kvm"])
    _add_workloads_dir(p)
    p.set_defaults(func=cmd_kcsan)


def _add_report(sub) -> None:
    p = sub.add_parser("report", help="write report.md/report.html of a run folder")
    p.add_argument("run_dir", nargs="?", help="default: results/latest")
    p.add_argument("--baseline", help="default: mainline")
    p.add_argument("--records", action="store_true",
                   help="first collect the run's record (soak, faults, kcsan of its very "
                        "images) again from the results folder")
    p.set_defaults(func=cmd_report)


def _add_slides(sub) -> None:
    p = sub.add_parser("slides", help="write slides.pdf of a run folder")
    p.add_argument("run_dir", nargs="?", help="default: results/latest")
    p.add_argument("--baseline", default="mainline")
    p.set_defaults(func=cmd_slides)


def _add_reference(sub) -> None:
    p = sub.add_parser("reference", help="publish a run as results/reference, or --check it")
    p.add_argument("run_dir", nargs="?", help="default: results/latest")
    p.add_argument("--check", action="store_true",
                   help="does the committed reference match the series of this checkout?")
    p.set_defaults(func=cmd_reference)


def _add_bisect_check(sub) -> None:
    p = sub.add_parser("bisect-check", help="every point of a series builds, boots, checkpatch")
    p.add_argument("series", choices=series.BISECTABLE)
    p.add_argument("--cpus", type=int, default=min(2, os.cpu_count() or 1))
    p.set_defaults(func=cmd_bisect_check)


def _add_compile_check(sub) -> None:
    p = sub.add_parser("compile-check",
                       help="the files a kernel's patches touch compile under allmodconfig")
    p.add_argument("kernel")
    p.add_argument("--grep", help="also compile every C file matching this regex")
    p.set_defaults(func=cmd_compile_check)


def _add_check_workloads(sub) -> None:
    p = sub.add_parser("check-workloads", help="validate workloads/*.wl")
    _add_workloads_dir(p)
    p.set_defaults(func=cmd_check_workloads)


def _add_workload_packages(sub) -> None:
    p = sub.add_parser("workload-packages", help="Debian packages the workloads declare")
    _add_workloads_dir(p)
    p.set_defaults(func=cmd_workload_packages)


def _add_predict(sub) -> None:
    p = sub.add_parser("predict", help="queueing model: predicted throughput at N CPUs")
    p.add_argument("run_dir", nargs="?", help="a run folder (its tidy.tsv)")
    p.add_argument("--profile", help="a JSON lock profile instead of a run")
    p.add_argument("--cpus", nargs="*", default=[], help="CPU counts (default 1 2 4 ... 256)")
    p.add_argument("--machine", action="append", default=[],
                   choices=[m.key for m in machines.MACHINES],
                   help="target machine (repeatable; default: all of them, as a band)")
    p.add_argument("--handoff-ns", type=float, default=None,
                   help=f"--profile without --machine: a cache-line transfer "
                        f"(default {scaling_inputs.HANDOFF_NS:g})")
    p.add_argument("--memory-ns", type=float, default=None,
                   help=f"--profile without --machine: a cold line "
                        f"(default {scaling_inputs.MEMORY_NS:g})")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_predict)


# One function per subcommand, in the order `--help` lists them.
SUBCOMMANDS = (
    _add_parse,
    _add_build,
    _add_boot,
    _add_compare,
    _add_soak,
    _add_faults,
    _add_kcsan,
    _add_report,
    _add_slides,
    _add_reference,
    _add_bisect_check,
    _add_compile_check,
    _add_check_workloads,
    _add_workload_packages,
    _add_predict,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m harness", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for add in SUBCOMMANDS:
        add(sub)
    nodejob.add_commands(sub)
    return parser


ERRORS = (tcg_cs.TcgCsError, series.SeriesError, kbuild.BuildError, workloads.WorkloadError,
          source.SourceError,
          initramfs.GuestError, qemu.QemuError, charts.ChartError, reference.ReferenceError,
          slides.DeckError, svg_pages.PageError, slurm.SlurmError, nodejob.NodeJobError,
          finish.ManifestError, FileNotFoundError)


def _terminated(signum, frame) -> None:
    raise KeyboardInterrupt  # a kill is an interruption: children stop, cells stay


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _terminated)
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ERRORS as err:
        for line in str(err).splitlines() or [""]:
            print(f"error: {line}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted: finished cells are kept; run the same command to resume",
              file=sys.stderr)
        return 130
