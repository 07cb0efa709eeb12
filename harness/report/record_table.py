"""The record of every kernel of a run: lockdep, sanitizers, KCSAN, fault injection, soaks.

A column per kernel of the run, a row per checker:

- lockdep: the run's own debug cells and the lockdep reports in them;
- sanitize: the run's own sanitize cells and every kernel report in them;
- kcsan: make kcsan's cells of the kernel's very patches (results/kcsan, as
  records.json kept it), their KCSAN reports and distinct races by class;
- faults: make faults' cells of the kernel's very patches, their kernel
  reports, and how many only a series gave (findings);
- soak: the workload-hours of the soaks of the run's very images, with their
  boots and reports.

Then lockdep reports per kernel and workload, and every distinct race make
kcsan found on these kernels with its class and fate. Every figure comes from
the run folder: its rows, its manifest's boots and records.json; a checker
that never ran on a kernel's patches says so, and a run made before
records.json says that no record was kept.
"""

from __future__ import annotations

from collections import Counter

from harness.report.blocks import Block, Heading, Para, Table, plural
from harness.run.faults_summary import FINDING
from harness.run.kcsan_summary import SERIES as SERIES_CLASS
from harness.report.records_section import races_text
from harness.run.records import Collected, CheckTally
from harness.run.soak import SOAK_FLAVOURS
from harness.run.tidy import Row

NO_RECORD = "no record kept"
NOT_RUN = "not run"  # a slide's cell: the checker never ran on these patches or images


def _cells(rows: list[Row], kernel: str, flavour: str) -> list[Row]:
    """One lockdep_reports row per measured step (run/cells.py)."""
    return [r for r in rows if (r.kernel, r.flavour, r.metric) == (kernel, flavour,
                                                                    "lockdep_reports")]


def lockdep_cell(rows: list[Row], kernel: str, boots: int, short: bool) -> str:
    cells = _cells(rows, kernel, "debug")
    if not cells:
        return NOT_RUN if short else "no debug boot in this run"
    reports = sum(int(r.value) for r in cells)
    if short:
        return f"{reports} in {plural(boots, 'boot')}"
    return f"{plural(reports, 'report')} in {plural(len(cells), 'cell')} ({plural(boots, 'boot')})"


def sanitize_cell(rows: list[Row], kernel: str, boots: int, short: bool) -> str:
    cells = _cells(rows, kernel, "sanitize")
    if not cells:
        return NOT_RUN if short else "not in this run"
    reports = sum(int(r.value) for r in rows if r.kernel == kernel and r.flavour == "sanitize"
                  and r.metric.startswith("reports."))
    if short:
        return f"{reports} in {plural(len(cells), 'cell')}"
    return f"{plural(reports, 'report')} in {plural(len(cells), 'cell')} ({plural(boots, 'boot')})"


def _sum(tallies: list[CheckTally], attr: str) -> int:
    return sum(getattr(t, attr) for t in tallies)


def _classes(tallies: list[CheckTally]) -> Counter:
    out: Counter = Counter()
    for t in tallies:
        out.update(t.by_class)
    return out


def kcsan_cell(collected: Collected | None, kernel: str, short: bool) -> str:
    """Cells, reports and distinct races by class; short: the cells alone."""
    if collected is None:
        return NO_RECORD
    tallies = collected.checked("kcsan", kernel)
    if tallies and not _sum(tallies, "measured") and not short:
        # make kcsan keys a cell by image and guest: after a change of the guest, its
        # summary counts only the cells measured since.
        return (f"0 of {_sum(tallies, 'planned')} cells measured with the image and guest "
                "as they are now (make kcsan measures them)")
    if not tallies or not _sum(tallies, "measured"):
        return NOT_RUN if short else _none("kcsan", collected, kernel)
    if short:
        return f"{_sum(tallies, 'measured')} of {plural(_sum(tallies, 'planned'), 'cell')}"
    classes = _classes(tallies)
    races = sum(classes.values())
    by_class = ", ".join(f"{c} {n}" for c, n in sorted(classes.items()))
    return (f"{_sum(tallies, 'measured')} of {_sum(tallies, 'planned')} cells, "
            f"{plural(_sum(tallies, 'reports'), 'KCSAN report')}, "
            f"{plural(races, 'distinct race')}" + (f" ({by_class})" if races else ""))


def kcsan_races_cell(collected: Collected | None, kernel: str) -> str:
    """A slide's cell: distinct races, and how many are 6.1's and the series' own."""
    if collected is None:
        return NO_RECORD
    tallies = collected.checked("kcsan", kernel)
    if not tallies or not _sum(tallies, "measured"):
        return NOT_RUN
    classes = _classes(tallies)
    own = classes.get(SERIES_CLASS, 0)
    sixone = sum(classes.values()) - own
    return f"{sum(classes.values())}: own {own}, 6.1 {sixone}"


def faults_cell(collected: Collected | None, kernel: str, short: bool) -> str:
    if collected is None:
        return NO_RECORD
    tallies = collected.checked("faults", kernel)
    if not tallies or not _sum(tallies, "measured"):
        return NOT_RUN if short else _none("faults", collected, kernel)
    findings = _classes(tallies).get(FINDING, 0)
    reports = _sum(tallies, "reports")
    if short:
        return f"{reports} in {plural(_sum(tallies, 'measured'), 'cell')}"
    return (f"{_sum(tallies, 'measured')} of {_sum(tallies, 'planned')} cells "
            f"({', '.join(t.store for t in tallies)}), {plural(reports, 'kernel report')}, "
            f"{plural(findings, 'finding')} (reports only a series gave)")


def race_gate_cell(collected: Collected | None, kernel: str, short: bool) -> str:
    """make race-gate's boots of these patches: which spinlocks ran clean, and how long
    and on how many vCPUs syncrace ran. A boot summarised twice (by the gate and by
    --read) counts once."""
    if collected is None:
        return NO_RECORD
    seen: set[str] = set()
    tallies = []
    for t in collected.checked("race-gate", kernel):
        if t.measured and not set(t.boots) <= seen:
            tallies.append(t)
            seen |= set(t.boots)
    if not tallies:
        return NOT_RUN if short else _none("race-gate", collected, kernel)
    boots = _sum(tallies, "measured")
    clean = _classes(tallies)
    passed = sum(clean.values())
    if short:  # a slide's cell: narrow
        both = set(clean) >= {"qspinlock", "virt_spin_lock"}
        return f"{passed}/{boots} clean" + ("" if both else
                                            f" ({', '.join(sorted(clean)) or 'none'} only)")
    gates = ", ".join(sorted({f"{s} s at {c} vCPUs" for s, c in
                              (t.gate for t in tallies if t.gate)}))
    return (f"{passed} of {plural(boots, 'boot')} clean"
            + (f" ({', '.join(f'{lock} {n}' for lock, n in sorted(clean.items()))})"
               if clean else "")
            + f", syncrace {gates}, {plural(_sum(tallies, 'reports'), 'kernel report')} "
            f"({', '.join(t.store for t in tallies)})")


def _none(kind: str, collected: Collected, kernel: str) -> str:
    others = [t for t in collected.unchecked(kind, kernel) if t.measured]
    return (f"no make {kind} cell of these patches"
            + (f"; not counted: {', '.join(_other(t) for t in others)}" if others else ""))


def _other(tally: CheckTally) -> str:
    if tally.image is None:
        return f"{tally.store} ({tally.measured} cells, image not recorded)"
    return f"{tally.store} ({tally.measured} cells, patch digest {tally.image.patches_digest})"


def soak_cell(collected: Collected | None, kernel: str, short: bool) -> str:
    if collected is None:
        return NO_RECORD
    soaks = [s for f in SOAK_FLAVOURS for s in collected.ours(kernel, f)]
    if not soaks:
        return NOT_RUN if short else "no soak of these images"
    hours = sum(s.tally.workload_s for s in soaks) / 3600
    # KCSAN's reports are data races, classified apart from the kernel reports.
    races = sum(sum(s.tally.races.values()) for s in soaks)
    reports = sum(s.tally.report_count for s in soaks) - races
    if short:
        return (f"{hours:.2f} h, {plural(reports, 'report')}"
                + (f", {plural(races, 'race')}" if races else ""))
    flavours = ", ".join(f"{f} {sum(s.tally.workload_s for s in soaks if s.flavour == f) / 3600:.2f}"
                         for f in SOAK_FLAVOURS if any(s.flavour == f for s in soaks))
    classified = races_text(collected, soaks)
    return (f"{hours:.2f} workload-hours ({flavours}) in "
            f"{plural(sum(s.tally.boots for s in soaks), 'boot')}, "
            f"{plural(reports, 'kernel report')}" + (f"; {classified}" if classified else ""))


def rows(collected: Collected | None, tidy_rows: list[Row], kernels: list[str],
         boots: dict[tuple[str, str], int], short: bool = False) -> list[list[str]]:
    """The record table: a row per checker, a cell per kernel. boots: (kernel, flavour)
    -> the run's boots; short: labels and cells that fit a slide (kcsan's races a row
    of their own)."""
    def b(kernel: str, flavour: str) -> int:
        return boots.get((kernel, flavour), 0)
    kcsan = ([["kcsan", *[kcsan_cell(collected, k, True) for k in kernels]],
              ["kcsan races", *[kcsan_races_cell(collected, k) for k in kernels]]] if short
             else [["kcsan: data races (make kcsan)",
                    *[kcsan_cell(collected, k, False) for k in kernels]]])
    return [
        ["lockdep" if short else "lockdep (this run's debug boots)",
         *[lockdep_cell(tidy_rows, k, b(k, "debug"), short) for k in kernels]],
        ["sanitize" if short else "sanitize: KASAN, list, object, RCU (this run)",
         *[sanitize_cell(tidy_rows, k, b(k, "sanitize"), short) for k in kernels]],
        *kcsan,
        ["faults" if short else "faults: injected failures (make faults)",
         *[faults_cell(collected, k, short) for k in kernels]],
        ["race gate" if short else "6.1's dcache race: syncrace (make race-gate)",
         *[race_gate_cell(collected, k, short) for k in kernels]],
        ["soak" if short else "soak: workload-hours (make soak)",
         *[soak_cell(collected, k, short) for k in kernels]]]


def lockdep_by_workload(tidy_rows: list[Row], kernels: list[str]) -> list[list[str]]:
    """workload/fs -> lockdep reports in the run's debug cells, per kernel."""
    cells: dict[tuple[str, str], Counter] = {}
    reports: dict[tuple[str, str], Counter] = {}
    for r in tidy_rows:
        if r.flavour == "debug" and r.metric == "lockdep_reports":
            case = (r.workload, r.fs)
            cells.setdefault(case, Counter())[r.kernel] += 1
            reports.setdefault(case, Counter())[r.kernel] += int(r.value)
    return [[f"{w}/{fs}", *[f"{reports[w, fs][k]} in {plural(cells[w, fs][k], 'cell')}"
                            if cells[w, fs][k] else "-" for k in kernels]]
            for w, fs in sorted(cells)]


def race_rows(collected: Collected, kernels: list[str]) -> list[list[str]]:
    """make kcsan's races on the kernels whose kcsan cells count, series' own first."""
    counted = [k for k in kernels if collected.checked("kcsan", k)]
    out = []
    for race in sorted(collected.races, key=lambda r: (r.klass != SERIES_CLASS, r.title)):
        seen = [k for k in counted if race.kernels.get(k)]
        if seen:
            out.append([race.title, race.klass, race.why, race.fate,
                        ", ".join(f"{k} {race.kernels[k]}" for k in seen)])
    return out


def section(collected: Collected | None, tidy_rows: list[Row], kernels: list[str],
            boots: dict[tuple[str, str], int]) -> list[Block]:
    out: list[Block] = [Heading(2, "The record, kernel by kernel"), Para(
        "What every checker found on each kernel of this run: this run's own debug and "
        "sanitize cells (a cell is one workload step), the cells `make kcsan` and "
        "`make faults` and the boots of `make race-gate` measured on images of the kernel's "
        "very patches, and the soaks of this run's images, as results/ held them when the "
        "run finished or at `report --records` (records.json). "
        "kcsan races are distinct pairs of racing functions, by whose code raced: "
        "mainline is the control.")]
    out.append(Table(["record", *kernels], rows(collected, tidy_rows, kernels, boots)))
    by_workload = lockdep_by_workload(tidy_rows, kernels)
    if by_workload:
        out += [Para("Lockdep reports per kernel and workload (this run's debug cells; after "
                     "a report lockdep is off for the rest of its boot):"),
                Table(["workload", *kernels], by_workload)]
    if collected is not None and any(collected.checked("kcsan", k) for k in kernels):
        races = race_rows(collected, kernels)
        out.append(Table(["KCSAN race", "class", "why", "fate", "kernels (reports)"], races)
                   if races else Para("No KCSAN race in the counted cells of these kernels."))
    return out
