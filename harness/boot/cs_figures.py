"""The tcg-cs plugin's window, turned into a phase's figures (boot/tcg_cs.py lists them)."""

from __future__ import annotations

import bisect

from harness.boot import measure
from harness.kernels import vmlinux
from harness.lockorder import ROLES, LockOrder
from harness.parsers import tcg_cs

Figure = measure.Figure
PERCENTILES = (50, 90, 99)


def site_names(symbols: list[vmlinux.Symbol], sites: set[int]) -> dict[int, str]:
    """function+0xOFFSET of each text address, from System.map."""
    text = [s for s in symbols if s.kind in "tT"]
    starts = [s.address for s in text]
    out = {}
    for site in sites:
        at = bisect.bisect_right(starts, site) - 1
        if at >= 0:
            out[site] = f"{text[at].name}+{site - text[at].address:#x}"
    return out


def window_figures(phase: str, ops: float, window: tcg_cs.Window, roles: LockOrder,
                   output: tcg_cs.Output) -> list[Figure]:
    out = _window_totals(phase, ops, window)
    held = _by_role(window, roles)
    for role in ROLES:
        if role in held:
            out += _role_figures(phase, ops, role, *held[role], output.lines_tracked)
    if output.lines_tracked:
        out.append(Figure(phase, "", "cs_cold_cache_lines", output.config.get("cold_lines", 0),
                          "lines"))
        if window.accesses:
            out.append(Figure(phase, "", "cs_cold_access_share",
                              window.cold_accesses / window.accesses, "share"))
    out += _percentile_figures(phase, window, roles)
    out += _trylock_figures(phase, ops, window, roles, output.site_names)
    # Locks no marker named (initialised without spin_lock_init) and the
    # plugin's own checks: evidence that the attribution above is complete.
    unnamed = sum(n for cls, (n, _, _) in window.by_class().items() if cls.startswith("?"))
    out.append(Figure(phase, "", "cs_unnamed_acquisitions", unnamed, "count"))
    for key, value in sorted(window.notes.items()):
        out.append(Figure(phase, "", f"cs_note.{key}", value, "count"))
    return out


def _window_totals(phase: str, ops: float, window: tcg_cs.Window) -> list[Figure]:
    out = [Figure(phase, "", "instructions", window.instructions, "insn")]
    if ops:
        out += [Figure(phase, "", "instructions_per_op", window.instructions / ops, "insn"),
                Figure(phase, "", "unlocked_instructions_per_op",
                       (window.instructions - window.role_held_instructions) / ops, "insn"),
                Figure(phase, "", "cs_interrupt_instructions_per_op",
                       window.interrupt_instructions / ops, "insn")]
    return out


def _by_role(window: tcg_cs.Window,
             roles: LockOrder) -> dict[str, tuple[int, int, int, tcg_cs.Lines]]:
    """role -> (acquisitions, own instructions, interrupt instructions, lines)."""
    lines = window.lines_by_class()
    held: dict[str, tuple[int, int, int, tcg_cs.Lines]] = {}
    for lock_class, (n, total, irq) in window.by_class().items():
        role = roles.role_of(lock_class)
        if role:
            n0, total0, irq0, lines0 = held.get(role, (0, 0, 0, tcg_cs.Lines()))
            held[role] = (n0 + n, total0 + total, irq0 + irq, lines0 + lines[lock_class])
    return held


def _role_figures(phase: str, ops: float, role: str, n: int, total: int, irq: int,
                  lines: tcg_cs.Lines, tracked: bool) -> list[Figure]:
    out = [Figure(phase, role, "cs_acquisitions", n, "count"),
           Figure(phase, role, "cs_instructions_per_acq", total / n, "insn"),
           Figure(phase, role, "cs_interrupt_instructions_per_acq", irq / n, "insn")]
    if ops:
        out += [Figure(phase, role, "cs_acquisitions_per_op", n / ops, "per op"),
                Figure(phase, role, "cs_instructions_per_op", total / ops, "insn")]
    if tracked:
        out += [Figure(phase, role, "cs_lines_read_per_acq", lines.read / n, "lines"),
                Figure(phase, role, "cs_lines_written_per_acq", lines.written / n, "lines"),
                Figure(phase, role, "cs_lines_from_previous_per_acq", lines.prev / n, "lines"),
                Figure(phase, role, "cs_lockword_line_written_share",
                       lines.lockline_written / n, "share"),
                Figure(phase, role, "cs_cold_lines_per_acq", lines.cold / n, "lines")]
        if role == "hash":
            out.append(Figure(phase, role, "cs_chain_entries_per_acq", lines.chain / n,
                              "entries"))
    return out


def _role_histograms(histograms: dict[str, tcg_cs.Histogram],
                     roles: LockOrder) -> dict[str, tcg_cs.Histogram]:
    out: dict[str, tcg_cs.Histogram] = {}
    for lock_class, h in histograms.items():
        role = roles.role_of(lock_class)
        if role:
            out[role] = out[role] + h if role in out else h
    return out


def _percentile_figures(phase: str, window: tcg_cs.Window, roles: LockOrder) -> list[Figure]:
    """Per role, p50/p90/p99 of its sections' own lengths and of the waits of its
    spin_locks (output version 3). A percentile is the smallest value of the bucket
    that holds it: the true one lies below 9/8 of it (exact below 16)."""
    out = []
    for what, metric in (("hold", "cs_instructions"), ("wait", "cs_wait_instructions")):
        for role, h in sorted(_role_histograms(window.histograms_by_class(what), roles).items()):
            if what == "wait":
                out.append(Figure(phase, role, "cs_waits", h.count, "count"))
            out += [Figure(phase, role, f"{metric}_p{q}", h.percentile(q / 100)[0], "insn")
                    for q in PERCENTILES]
    return out


def _trylock_figures(phase: str, ops: float, window: tcg_cs.Window, roles: LockOrder,
                     names: dict[int, str]) -> list[Figure]:
    """Per trylock call site of an icache role: failures and what their retries cost."""
    acquired = {(s.lock_class, s.site): s.acquisitions for s in window.sections}
    out = []
    for t in window.trylocks:
        role = roles.role_of(t.lock_class)
        if not role:
            continue
        site = names.get(t.site, f"{t.site:#x}")
        out += [Figure(phase, role, f"trylock_failures.{site}", t.failed, "count"),
                Figure(phase, role, f"trylock_acquired.{site}",
                       acquired.get((t.lock_class, t.site), 0), "count"),
                Figure(phase, role, f"trylock_retries.{site}", t.retries, "count"),
                Figure(phase, role, f"trylock_skips.{site}", t.skips, "count"),
                Figure(phase, role, f"trylock_abandoned.{site}", t.abandoned, "count")]
        if t.retries:
            out.append(Figure(phase, role, f"trylock_retry_instructions_per_retry.{site}",
                              t.retry_instructions / t.retries, "insn"))
        if t.skips:
            out.append(Figure(phase, role, f"trylock_skip_instructions_per_skip.{site}",
                              t.skip_instructions / t.skips, "insn"))
        if ops:
            out += [Figure(phase, role, f"trylock_failures_per_op.{site}", t.failed / ops,
                           "per op"),
                    Figure(phase, role, f"trylock_retry_instructions_per_op.{site}",
                           t.retry_instructions / ops, "insn")]
    return out
