"""The tcg-cs boot modes: critical sections as a perf kernel has them.

lock_stat's hold times come from the debug flavour, whose lockdep
bookkeeping runs inside every critical section it times. This mode measures
the perf flavour instead: QEMU (TCG, 1 vCPU, -icount) runs the kernel with
the plugin of tcg-cs/plugin.c, which counts guest instructions from each
spinlock's acquiring atomic to its releasing store, the cache lines each
section touches, and every instruction of each timed phase. The kernel is
the perf image itself: the perf flavour carries the measurement patch
tcg-cs/0001-*.patch (kbuild.FLAVOUR_PATCHES), which only names lock classes
where lockdep would (at lock initialisation), so that an acquisition can be
given its icache role as lock_stat's would; the lock paths are untouched.

Rows (flavour perf, mode tcg-cs, cpus 1), per timed phase:
    lock ""    instructions_per_op       guest instructions per operation
    lock ROLE  cs_acquisitions           acquisitions of that role (count)
               cs_acquisitions_per_op
               cs_instructions_per_acq   mean acquire-to-release length (insn),
                                         interrupts that arrived meanwhile excluded
               cs_interrupt_instructions_per_acq
                                         those interrupts' instructions, per acquisition
               cs_instructions_per_op    own instructions with that role held, per op
               cs_instructions_p50, _p90, _p99
                                         percentiles of the sections' own lengths (insn;
                                         the smallest value of the plugin's histogram
                                         bucket holding it: the true one lies below 9/8
                                         of it, exact below 16)
    lock ""    unlocked_instructions_per_op
                                         instructions per operation with no lock of any
                                         role held (interrupts included either way)
               cs_interrupt_instructions_per_op
                                         of interrupts that arrived while any lock was held
Cache lines (64 bytes of physical memory; each count leaves out the lock
word's own line, the stack, and interrupts counted apart), per role:
    lock ROLE  cs_lines_read_per_acq     distinct lines only read in a section
               cs_lines_written_per_acq  distinct lines written (maybe also read)
               cs_lines_from_previous_per_acq
                                         W: lines whose last write was inside an earlier
                                         section of the same lock instance, what a
                                         contended hand-off pulls from the previous holder
               cs_lockword_line_written_share
                                         s: the share of sections that write the lock
                                         word's line other than through the lock word
                                         (a list head beside the lock)
               cs_cold_lines_per_acq     lines that missed a simulated cache of
                                         COLD_LINES lines (LRU, every guest access goes
                                         through it): not touched while that many other
                                         lines were, so an LLC that size evicted them
               cs_chain_entries_per_acq  hash only: chain entries a section visits
    lock ""    cs_cold_cache_lines       the simulated cache's size (lines)
               cs_cold_access_share      the share of all the phase's memory accesses
                                         that missed it
Interrupts are apart because -icount's emulated CPU (250 million
instructions per emulated second) takes its timer and disk interrupts tens
of times more often per instruction than hardware does.

Mode tcg-cs-rr (several vCPUs, `-accel tcg,thread=single`: one host thread
runs them round robin and QEMU hands it on at each PAUSE, so a vCPU
spinning on a held lock lets the holder run; no -icount), per trylock call
site SITE (function+offset) of an icache role, never summed over sites:
    lock ROLE  trylock_failures.SITE     failed trylocks (count), and _per_op
               trylock_acquired.SITE     successful ones (count)
               trylock_retries.SITE      episodes from a vCPU's first failed trylock of a
                                         lock at SITE to its success there, with no other
                                         lock's trylock succeeding at SITE meanwhile: a
                                         loop that tries the same lock again (count)
               trylock_retry_instructions_per_retry.SITE
                                         the failing vCPU's instructions in between
               trylock_retry_instructions_per_op.SITE
               trylock_skips.SITE        episodes in which the site moved on to other
                                         locks and met this one again later (a walk that
                                         skips, as 6.1's LRU isolate does), and
               trylock_skip_instructions_per_skip.SITE
               trylock_abandoned.SITE    episodes that met no success within
                                         RETRY_HORIZON of the vCPU's instructions
    lock ROLE  cs_waits                  spin_locks of the role that waited in the queued
                                         slow path with the holder seen (count)
               cs_wait_instructions_p50, _p90, _p99
                                         percentiles of their waits: the holder's own
                                         instructions from the failed cmpxchg to its
                                         release, the rest of its section (buckets as
                                         above); a vCPU waits here only when QEMU's round
                                         robin switched the holder out inside its section
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
from pathlib import Path

from harness.boot import cs_figures, measure, qemu
from harness.guest.plan import Step
from harness.kernels import kbuild, objdump, vmlinux
from harness.layout import REPO_ROOT, Layout
from harness.lockorder import LockOrder
from harness.parsers import tcg_cs

MODE = "tcg-cs"
MODE_RR = "tcg-cs-rr"  # several vCPUs round robin: failed trylocks and their retries
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
# The queued slow path a spin_lock goes to when its cmpxchg fails: its
# return completes the acquisition (several vCPUs only).
SLOWPATHS = ("native_queued_spin_lock_slowpath", "queued_spin_lock_slowpath")
# Cold lines are those a section touches that miss a simulated cache of this
# many 64-byte lines (fully associative, least recently used out, every
# access of the guest goes through it): 2 MiB, one core's share of a shared
# LLC on the servers of the published anchors (1.375-4 MiB per core).
COLD_LINES = (2 << 20) // 64
# A trylock retry episode is abandoned after this many of the failing
# vCPU's instructions without a success at its site (mainline's LRU walk
# skips the inode instead of retrying it).
RETRY_HORIZON = 1_000_000
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


def build_image(layout: Layout, name: str, build_missing: bool = True) -> kbuild.KernelImage:
    """The image a tcg-cs boot of kernel NAME runs: its perf image (build_missing=False:
    found or an error naming it, as --no-build)."""
    return kbuild.build(layout, name, FLAVOUR, build_missing=build_missing)


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
    for path in sorted(SOURCE.glob("*.[ch]")) + [SOURCE / "Makefile"]:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def static_lock_names(order: LockOrder) -> set[str]:
    """Role patterns that name one static lock (a C identifier): inode_hash_lock, ..."""
    return {p for pats in order.patterns.values() for p in pats if p.isidentifier()}


def lock_exits(insns: list[objdump.Insn], name: str) -> tuple[int, int]:
    """(acquired, not acquired): where a lock function goes after its cmpxchg.

    A successful cmpxchg sets ZF: after `jne` the next instruction is the
    success and the target the failure, after `je` the other way round. A
    trylock that finds the lock taken before its cmpxchg jumps to the same
    failure.
    """
    at = next((k for k, i in enumerate(insns) if i.mnemonic.startswith("cmpxchg")), None)
    if at is not None and at + 2 < len(insns):
        branch, after = insns[at + 1], insns[at + 2].address
        target = objdump.branch_target(branch)
        if target is not None and branch.mnemonic in ("jne", "jnz"):
            return after, target
        if target is not None and branch.mnemonic in ("je", "jz"):
            return target, after
    raise TcgCsError(f"{name}: no cmpxchg followed by jne or je (the plugin needs both exits)")


def lock_function_lines(elf: Path, symbols: list[vmlinux.Symbol], image_dir: Path) -> list[str]:
    """The spin, exit and slowpath lines of the plugin's configuration."""
    functions = vmlinux.function_ranges(symbols, tuple(LOCK_FUNCTIONS) + SLOWPATHS)
    missing = sorted(set(LOCK_FUNCTIONS) - set(functions) - {"_raw_spin_trylock_bh"})
    if missing:
        raise TcgCsError(f"{image_dir}/System.map: no {', '.join(missing)} "
                         "(lock functions inlined? this mode needs them out of line)")
    lines = []
    for name in sorted(set(functions) & set(LOCK_FUNCTIONS)):
        start, end = functions[name]
        acquired, failed = lock_exits(objdump.disassemble(elf, start, end), name)
        lines += [f"spin {start:x} {end:x} {int(LOCK_FUNCTIONS[name])} {name}",
                  f"exit {acquired:x} 1", f"exit {failed:x} 0"]
    slow = next((functions[name] for name in SLOWPATHS if name in functions), None)
    if slow is None:
        raise TcgCsError(f"{image_dir}/System.map: no {' or '.join(SLOWPATHS)}")
    lines.append(f"slowpath {slow[0]:x} {slow[1]:x}")
    return lines


@dataclasses.dataclass(frozen=True)
class Options:
    """What the plugin measures besides instructions (see tcg-cs/plugin.c)."""
    lines: bool = True  # cache lines of each section
    cold_lines: int = COLD_LINES
    retry_horizon: int = RETRY_HORIZON
    # call sites whose sections are written line by line: site -> every how many-th
    trace: tuple[tuple[int, int], ...] = ()
    trace_count: int = 0  # sections per site and window

    def config_lines(self) -> list[str]:
        lines = [f"lines {int(self.lines)}", f"cold {self.cold_lines}",
                 f"retry_horizon {self.retry_horizon}"]
        return lines + [f"trace {site:x} {self.trace_count} {stride}"
                        for site, stride in self.trace]


def plugin_config(layout: Layout, image: kbuild.KernelImage, out: Path, order: LockOrder,
                  options: Options = Options()) -> str:
    """The plugin's configuration for one boot of image (see tcg-cs/plugin.c)."""
    symbols = vmlinux.read_system_map(image.directory / "System.map")
    elf_path = vmlinux.cached_elf(image.bzimage, layout.build / "tcg-cs", image.key)
    elf = vmlinux.Elf(elf_path.read_bytes(), str(image.bzimage))
    names = vmlinux.class_marker_names(elf)
    if not names:
        raise TcgCsError(f"{image.bzimage}: no lock-class markers (not built with {PATCH.name}?)")
    for table in TABLES:
        for address in elf.find_strings(table):
            names[address] = table
    lines = [f"out {out}"] + lock_function_lines(elf_path, symbols, image.directory)
    lines += [f"irq {s.address:x} {int(irq_kind(s.name))} {s.name}" for s in symbols
              if s.kind in "tT" and irq_kind(s.name) is not None]
    roles = with_tables(order)
    role = lambda name: roles.role_of(name) or "-"  # noqa: E731
    lines += [f"name {address:x} {role(text)} {text}" for address, text in sorted(names.items())]
    statics = static_lock_names(order)
    lines += [f"static {s.address:x} {role(s.name)} {s.name}" for s in symbols
              if s.name in statics and s.kind in "bBdD"]
    return "\n".join(lines + options.config_lines()) + "\n"


def machine(layout: Layout, image: kbuild.KernelImage, boot_dir: Path, order: LockOrder,
            cpus: int = 1, options: Options | None = None,
            repetition: int = 1) -> qemu.Machine:
    """The machine with the plugin, configured for this boot: 1 vCPU under -icount
    (mode tcg-cs), or several round robin (mode tcg-cs-rr: trylock retries).

    By default cache lines are tracked in the first repetition of 1-vCPU
    boots only: tracking them makes a boot 3-5 times slower, and a section's
    lines repeat from boot to boot within 1% (NOTES.md "Issue 25 (lines)")."""
    if options is None:
        options = Options(lines=cpus == 1 and repetition == 1)
    boot_dir.mkdir(parents=True, exist_ok=True)
    config = boot_dir / "tcg-cs.conf"
    config.write_text(plugin_config(layout, image, boot_dir / OUTPUT, order, options))
    return qemu.Machine("tcg", cpus, icount=cpus == 1,
                        plugin=f"{plugin_library(layout)},config={config}", cmdline=CMDLINE)


def mode_of(cpus: int) -> str:
    return MODE if cpus == 1 else MODE_RR


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
    """The plugin's output of a boot folder, None when the boot ran without it.

    Trylock call sites are named function+offset from the image's System.map
    when the image is still there (else they stay addresses).
    """
    path = directory / OUTPUT
    if not path.exists():
        return None
    output = tcg_cs.parse(path.read_text(errors="replace"), str(path))
    sites = {t.site for w in output.windows.values() for t in w.trylocks}
    system_map = image_of_boot(directory) / "System.map" if sites else None
    if system_map is None or not system_map.exists():
        return output
    return dataclasses.replace(output, site_names=cs_figures.site_names(
        vmlinux.read_system_map(system_map), sites))


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
        figures += cs_figures.window_figures(phase, count, window, roles, output)
    # Some phases have no lock_stat window (sbwalk's churn runs beside its
    # timed walks): like lock_stat's, they have no plugin figures. A step
    # with no window at all lost them.
    error = numbers.error
    if missing and len(missing) == len(windows) and not error and numbers.exit_code == 0:
        error = f"tcg-cs: no plugin window for phase {', '.join(missing)}"
    return dataclasses.replace(numbers, figures=tuple(figures), error=error)
