"""The tcg-cs boot mode: critical-section lengths as a perf kernel has them.

lock_stat's hold times come from the debug flavour, whose lockdep
bookkeeping runs inside every critical section it times. This mode measures
the perf flavour instead: QEMU (TCG, 1 vCPU, -icount) runs the kernel with
the plugin of tcg-cs/plugin.c, which counts guest instructions from each
spinlock's acquiring atomic to its releasing store, and every instruction
of each timed phase. The kernel is the perf image itself: the perf flavour
carries the measurement patch tcg-cs/0001-*.patch (kbuild.FLAVOUR_PATCHES),
which only names lock classes where lockdep would (at lock initialisation),
so that an acquisition can be given its icache role as lock_stat's would;
the lock paths are untouched.

Rows (flavour perf, mode tcg-cs, cpus 1), per timed phase:
    lock ""    instructions_per_op       guest instructions per operation
    lock ROLE  cs_acquisitions           acquisitions of that role (count)
               cs_acquisitions_per_op
               cs_instructions_per_acq   mean acquire-to-release length (insn),
                                         interrupts that arrived meanwhile excluded
               cs_interrupt_instructions_per_acq
                                         those interrupts' instructions, per acquisition
               cs_instructions_per_op    own instructions with that role held, per op
    lock ""    unlocked_instructions_per_op
                                         instructions per operation with no lock of any
                                         role held (interrupts included either way)
               cs_interrupt_instructions_per_op
                                         of interrupts that arrived while any lock was held
Interrupts are apart because -icount's emulated CPU (250 million
instructions per emulated second) takes its timer and disk interrupts tens
of times more often per instruction than hardware does.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
from pathlib import Path

from harness.boot import measure, qemu
from harness.guest.plan import Step
from harness.kernels import kbuild, vmlinux
from harness.layout import REPO_ROOT, Layout
from harness.lockorder import ROLES, LockOrder
from harness.parsers import tcg_cs

MODE = "tcg-cs"
FLAVOUR = "perf"  # the image this mode boots (it carries the markers)
SOURCE = REPO_ROOT / "tcg-cs"
PATCH = kbuild.MARKER_PATCH
OUTPUT = "tcg-cs.out"  # the plugin's output, in the boot folder
CMDLINE = "inode_duel_cs=1"  # tells the guest's shell to mark its lock_stat windows

# Out-of-line lock functions of x86-64 !PREEMPT kernels whose `lock cmpxchg`
# takes the lock (value: is it a trylock).
LOCK_FUNCTIONS = {"_raw_spin_lock": False, "_raw_spin_lock_bh": False,
                  "_raw_spin_lock_irq": False, "_raw_spin_lock_irqsave": False,
                  "_raw_spin_trylock": True, "_raw_spin_trylock_bh": True}
# IDT entry points (System.map prefixes) and whether they are asynchronous
# interrupts, which the plugin counts apart when they arrive inside a section.
IRQ_ENTRIES = {"asm_common_interrupt": True, "asm_sysvec_": True,
               "asm_spurious_interrupt": True, "asm_exc_nmi": True,
               "asm_exc_machine_check": True, "asm_exc_": False}
# Tables alloc_large_system_hash() declares (as the console lists them), with
# the role of their bit spinlocks: the inode hash of the series with
# per-bucket locks (hlist_bl) is the hash role; the others are named only.
TABLES = {"Inode-cache": "hash", "Dentry cache": None, "Mount-cache": None,
          "Mountpoint-cache": None, "futex": None}


class TcgCsError(Exception):
    pass


def build_image(layout: Layout, name: str) -> kbuild.KernelImage:
    """The image a tcg-cs boot of kernel NAME runs: its perf image."""
    return kbuild.build(layout, name, FLAVOUR)


def plugin_library(layout: Layout) -> Path:
    """Build (make keeps it current) and return the plugin's shared object."""
    out = layout.build / "tcg-cs"
    result = subprocess.run(["make", "-s", "-C", str(SOURCE), f"OUT={out}"],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise TcgCsError("building the tcg-cs plugin failed:\n" + result.stdout + result.stderr)
    return out / "libtcgcs.so"


def irq_kind(name: str) -> bool | None:
    """True for an interrupt entry point, False for an exception's, None for neither."""
    for prefix, asynchronous in IRQ_ENTRIES.items():
        if name.startswith(prefix):
            return asynchronous
    return None


def plugin_digest() -> str:
    """Identity of the plugin's source, for the keys of the cells it measured."""
    h = hashlib.sha256()
    for name in ("plugin.c", "qemu-plugin-api.h"):
        h.update((SOURCE / name).read_bytes())
    return h.hexdigest()[:16]


def static_lock_names(order: LockOrder) -> set[str]:
    """Role patterns that name one static lock (a C identifier): inode_hash_lock, ..."""
    return {p for pats in order.patterns.values() for p in pats if p.isidentifier()}


def plugin_config(layout: Layout, image: kbuild.KernelImage, out: Path,
                  order: LockOrder) -> str:
    """The plugin's configuration for one boot of image (see tcg-cs/plugin.c)."""
    symbols = vmlinux.read_system_map(image.directory / "System.map")
    functions = vmlinux.function_ranges(symbols, tuple(LOCK_FUNCTIONS))
    missing = sorted(set(LOCK_FUNCTIONS) - set(functions) - {"_raw_spin_trylock_bh"})
    if missing:
        raise TcgCsError(f"{image.directory}/System.map: no {', '.join(missing)} "
                         "(lock functions inlined? this mode needs them out of line)")
    elf = vmlinux.Elf(vmlinux.cached_elf(image.bzimage, layout.build / "tcg-cs", image.key).
                      read_bytes(), str(image.bzimage))
    names = vmlinux.class_marker_names(elf)
    if not names:
        raise TcgCsError(f"{image.bzimage}: no lock-class markers (not built with {PATCH.name}?)")
    for table in TABLES:
        for address in elf.find_strings(table):
            names[address] = table
    lines = [f"out {out}"]
    lines += [f"spin {start:x} {end:x} {int(LOCK_FUNCTIONS[name])} {name}"
              for name, (start, end) in sorted(functions.items())]
    lines += [f"irq {s.address:x} {int(irq_kind(s.name))} {s.name}" for s in symbols
              if s.kind in "tT" and irq_kind(s.name) is not None]
    roles = with_tables(order)
    role = lambda name: roles.role_of(name) or "-"  # noqa: E731
    lines += [f"name {address:x} {role(text)} {text}" for address, text in sorted(names.items())]
    statics = static_lock_names(order)
    lines += [f"static {s.address:x} {role(s.name)} {s.name}" for s in symbols
              if s.name in statics and s.kind in "bBdD"]
    return "\n".join(lines) + "\n"


def machine(layout: Layout, image: kbuild.KernelImage, boot_dir: Path,
            order: LockOrder) -> qemu.Machine:
    """The 1-vCPU -icount machine with the plugin, configured for this boot."""
    boot_dir.mkdir(parents=True, exist_ok=True)
    config = boot_dir / "tcg-cs.conf"
    config.write_text(plugin_config(layout, image, boot_dir / OUTPUT, order))
    return qemu.Machine("tcg", 1, icount=True,
                        plugin=f"{plugin_library(layout)},config={config}", cmdline=CMDLINE)


def with_tables(order: LockOrder) -> LockOrder:
    """The kernel's lock order, its roles also naming the hash tables whose bit locks are one."""
    patterns = dict(order.patterns)
    for table, role in TABLES.items():
        if role:
            patterns[role] = patterns.get(role, ()) + (table,)
    return dataclasses.replace(order, patterns=patterns)


def image_of_boot(directory: Path) -> Path:
    """The image folder a boot ran: its bzImage's, from the QEMU command kept with it."""
    record = directory / "qemu.json"
    command = json.loads(record.read_text())["command"]
    if "-kernel" not in command:
        raise TcgCsError(f"{record}: no -kernel in the command")
    return Path(command[command.index("-kernel") + 1]).parent


def read_output(directory: Path) -> tcg_cs.Output | None:
    """The plugin's output of a boot folder, None when the boot ran without it."""
    path = directory / OUTPUT
    if not path.exists():
        return None
    return tcg_cs.parse(path.read_text(errors="replace"), str(path))


def with_figures(numbers: measure.StepNumbers, step: Step, output: tcg_cs.Output,
                 order: LockOrder) -> measure.StepNumbers:
    """A step's numbers plus the plugin's, over the step's lock_stat windows."""
    ops = {f.phase: f.value for f in numbers.figures if f.metric == "ops" and not f.lock}
    windows = ops if step.workload.windowed else {"all": sum(ops.values())}
    roles = with_tables(order)
    figures = list(numbers.figures)
    missing = []
    for phase, count in windows.items():
        window = output.windows.get(f"{step.id}.{phase}")
        if window is None:
            missing.append(phase)
            continue
        figures += window_figures(phase, count, window, roles)
    # Some phases have no lock_stat window (sbwalk's churn runs beside its
    # timed walks): like lock_stat's, they have no plugin figures. A step
    # with no window at all lost them.
    error = numbers.error
    if missing and len(missing) == len(windows) and not error and numbers.exit_code == 0:
        error = f"tcg-cs: no plugin window for phase {', '.join(missing)}"
    return dataclasses.replace(numbers, figures=tuple(figures), error=error)


def window_figures(phase: str, ops: float, window: tcg_cs.Window,
                   roles: LockOrder) -> list[measure.Figure]:
    out = [measure.Figure(phase, "", "instructions", window.instructions, "insn")]
    if ops:
        out += [measure.Figure(phase, "", "instructions_per_op", window.instructions / ops,
                               "insn"),
                measure.Figure(phase, "", "unlocked_instructions_per_op",
                               (window.instructions - window.role_held_instructions) / ops,
                               "insn"),
                measure.Figure(phase, "", "cs_interrupt_instructions_per_op",
                               window.interrupt_instructions / ops, "insn")]
    held: dict[str, list[int]] = {}
    unnamed = 0
    for lock_class, (n, total, irq) in window.by_class().items():
        role = roles.role_of(lock_class)
        if role:
            acc = held.setdefault(role, [0, 0, 0])
            acc[0] += n
            acc[1] += total
            acc[2] += irq
        elif lock_class.startswith("?"):
            unnamed += n
    for role in ROLES:
        if role not in held:
            continue
        n, total, irq = held[role]
        out += [measure.Figure(phase, role, "cs_acquisitions", n, "count"),
                measure.Figure(phase, role, "cs_instructions_per_acq", total / n, "insn"),
                measure.Figure(phase, role, "cs_interrupt_instructions_per_acq", irq / n,
                               "insn")]
        if ops:
            out += [measure.Figure(phase, role, "cs_acquisitions_per_op", n / ops, "per op"),
                    measure.Figure(phase, role, "cs_instructions_per_op", total / ops, "insn")]
    # Locks no marker named (initialised without spin_lock_init) and the
    # plugin's own checks: evidence that the attribution above is complete.
    out.append(measure.Figure(phase, "", "cs_unnamed_acquisitions", unnamed, "count"))
    for key, value in sorted(window.notes.items()):
        out.append(measure.Figure(phase, "", f"cs_note.{key}", value, "count"))
    return out
