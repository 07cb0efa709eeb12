"""The soaks of a run's own images: a row per flavour in the duel's record, and a section.

Read from the run folder's records.json (run/records.py wrote it when the run
finished), never from the soak folders: a soak of a flavour the run booted
counts only if it booted the very image the run booted, one of a flavour the
run did not boot (a duel boots no sanitize or kcsan image) if its image has
the kernel's very patches; a soak of another image is named with that
image, and when no soak booted the run's image the report says so. KCSAN's
reports in a soak are data races: each is classified as make kcsan
classified that race, or said to be one make kcsan has not seen.
"""

from __future__ import annotations

from collections import Counter

from harness.kernels.kbuild import ImageIdentity
from harness.report.blocks import Block, Bullets, Heading, Para, Table, plural
from harness.run.records import RECORDS, Collected, Soak, Unnamed
from harness.run.soak import SOAK_FLAVOURS as FLAVOURS

PREDATES = f"no soak record: this run was made before runs kept one ({RECORDS})"
# What a run knows: the soaks under its results folder when it finished.
WHERE = "results/soak, at the run's end or at report --records"


def races_text(collected: Collected, soaks: list[Soak]) -> str:
    """'KCSAN: 5 data-race reports, 3 distinct: 2 6.1's, 1 not seen by make kcsan'."""
    titles = _sum([s.tally.races for s in soaks])
    if not titles:
        return ""
    klass = {r.title: r.klass for r in collected.races}
    classes = Counter(klass.get(t, "not seen by make kcsan") for t in titles)
    return (f"KCSAN: {plural(sum(titles.values()), 'data-race report')}, "
            f"{len(titles)} distinct: "
            + ", ".join(f"{n} {c}" for c, n in sorted(classes.items())))


def image_text(image: ImageIdentity) -> str:
    return (f"image {image.key} ({plural(image.patches, 'patch', 'patches')} of its own, "
            f"digest {image.patches_digest})")


def soaks_named(soaks: list[Soak]) -> str:
    """'soak 20261206-090333 (2026-12-06, unfinished)'."""
    names = [f"{s.folder} ({s.started[:10]}{'' if s.finished else ', unfinished'})"
             for s in soaks]
    return f"{'soak' if len(names) == 1 else 'soaks'} {', '.join(names)}"


def _sum(counts: list[dict[str, int]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for count in counts:
        for key, n in count.items():
            out[key] = out.get(key, 0) + n
    return out


def reports_text(soaks: list[Soak]) -> str:
    """'0 kernel reports', or each kind's count and the first title of that kind."""
    kinds = _sum([s.tally.reports for s in soaks])
    if not sum(kinds.values()):
        return "0 kernel reports"
    first = {kind: next(s.tally.first[kind] for s in soaks if kind in s.tally.first)
             for kind in kinds}
    return f"{plural(sum(kinds.values()), 'kernel report')}: " + "; ".join(
        f"{kind} {n} (first: {first[kind]})" for kind, n in sorted(kinds.items()))


def tally_text(soaks: list[Soak]) -> str:
    """Boots by vCPU count, workload-hours, boot status, reports and damaged records."""
    cpus = _sum([s.tally.cpus for s in soaks])
    statuses = _sum([s.tally.statuses for s in soaks])
    return (f"{plural(sum(s.tally.boots for s in soaks), 'boot')} ("
            + ", ".join(f"{n} at {plural(int(c), 'vCPU')}"
                        for c, n in sorted(cpus.items(), key=lambda i: int(i[0])))
            + f"), {sum(s.tally.workload_s for s in soaks) / 3600:.2f} workload-hours; "
            + "status " + ", ".join(f"{s} {n}" for s, n in sorted(statuses.items()))
            + f"; {reports_text(soaks)}; "
            + plural(sum(s.tally.damaged_records for s in soaks), "damaged record"))


def other_text(other: Soak | Unnamed, ours: ImageIdentity) -> str:
    """A soak of this kernel and flavour that does not count, and why."""
    if isinstance(other, Unnamed):
        return (f"soak {other.folder} ({plural(other.boots, 'boot')}) did not record its "
                "image: its summary predates soaks naming them")
    code = ("the same patches of its own, so another source, configuration or compiler"
            if other.image.patches_digest == ours.patches_digest else "other patches")
    return (f"soak {other.folder} ({plural(other.tally.boots, 'boot')}) booted "
            f"{image_text(other.image)}: {code}")


def other_short(other: Soak | Unnamed) -> str:
    if isinstance(other, Unnamed):
        return f"soak {other.folder} (image not recorded)"
    return f"soak {other.folder} (image {other.image.key})"


def found_short(soaks: list[Soak]) -> str:
    """'2 boots, 0.05 workload-hours, 1 kernel report (circular 1)'."""
    kinds = _sum([s.tally.reports for s in soaks])
    return (f"{plural(sum(s.tally.boots for s in soaks), 'boot')}, "
            f"{sum(s.tally.workload_s for s in soaks) / 3600:.2f} workload-hours, "
            f"{plural(sum(kinds.values()), 'kernel report')}"
            + (f" ({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))})" if kinds else ""))


def cell(collected: Collected | None, kernel: str, flavour: str) -> str:
    """The record row's cell of one design: what the soaks of its very image found, or
    that none was run on it, naming the soaks of other images that do not count."""
    if collected is None:
        return PREDATES
    image = collected.image(kernel, flavour)
    ours = collected.ours(kernel, flavour)
    if image is None:
        named = f"a {flavour} image of its very patches (digest {collected.patches_digest(kernel)})"
        races = races_text(collected, ours)
        return (f"{found_short(ours)} ({soaks_named(ours)}; {named})"
                + (f"; {races}" if races else "") if ours else f"no soak of {named}")
    named = f"image {image.key}, patch digest {image.patches_digest}"
    if ours:
        return f"{found_short(ours)} ({soaks_named(ours)}; {named})"
    others = collected.others(kernel, flavour)
    return (f"no soak run on this run's {named} ({WHERE})"
            + (f"; not counted: {', '.join(other_short(o) for o in others)}" if others else ""))


def report_count(collected: Collected | None, kernels: tuple[str, ...]) -> int:
    """The kernel reports the soaks of these kernels' very images found (the deck)."""
    if collected is None:
        return 0
    return sum(s.tally.report_count - sum(s.tally.races.values()) for k in kernels
               for f in FLAVOURS for s in collected.ours(k, f))


def deck_cell(collected: Collected | None, kernel: str) -> str:
    """The cell on a slide, every soak flavour in one: what the soaks of the run's
    images found, or that none was run on them."""
    if collected is None:
        return "no record kept"
    ours = [s for f in FLAVOURS for s in collected.ours(kernel, f)]
    if not ours:
        return "none of these images"
    races = sum(sum(s.tally.races.values()) for s in ours)
    # A slide's table does not wrap its cells: boots, hours and reports only.
    return (f"{plural(sum(s.tally.boots for s in ours), 'boot')}, "
            f"{sum(s.tally.workload_s for s in ours) / 3600:.2f} h, "
            f"{plural(sum(s.tally.report_count for s in ours) - races, 'report')}"
            + (f", {plural(races, 'race')}" if races else ""))


def label(flavour: str) -> str:
    return f"soak of the {flavour} images: random mixes"


def record_rows(collected: Collected | None, designs: list[str]) -> list[list[str]]:
    """The duel's record rows: one per soak flavour."""
    return [[label(f), *[cell(collected, d, f) for d in designs]] for f in FLAVOURS]


def deck_row(collected: Collected | None, designs: list[str]) -> list[str]:
    """The record rows of a slide: one for the soaks of every flavour."""
    return ["soak: random mixes", *[deck_cell(collected, d) for d in designs]]


def counted_rows(collected: Collected, kernels: list[str]) -> list[list[str]]:
    return [[s.kernel, s.flavour, image_text(s.image), soaks_named([s]),
             "; ".join(t for t in (tally_text([s]), races_text(collected, [s])) if t)]
            for k in kernels for f in FLAVOURS for s in collected.ours(k, f)]


def section(collected: Collected | None, kernels: list[str]) -> list[Block]:
    """Every kernel's soaks of this run's images, each soak on its own row; then the
    soaks of other images, named; then the summaries that could not be read."""
    out: list[Block] = [Heading(2, "Soaks of this run's images")]
    if collected is None:
        return out + [Para(f"{PREDATES[0].upper()}{PREDATES[1:]}.")]
    out.append(Para(
        "`make soak` boots random mixes of every workload until its time is up. A soak of "
        "a flavour this run booted counts here only if it booted the very image this run "
        "booted (the same image key: source, patches, configuration, compiler); one of a "
        "flavour it did not boot (a duel boots no sanitize or kcsan image) if its image was "
        "built from the kernel's very patches (the same digest). KCSAN's reports are data "
        "races, each classified as make kcsan classified it. The run read "
        f"{plural(collected.read, 'summary', 'summaries')} (soak, faults, kcsan, race gate) "
        "under results/ when it finished or at `report --records`."))
    rows = counted_rows(collected, kernels)
    out.append(Table(["kernel", "flavour", "image", "soak", "what it found"], rows) if rows
               else Para(f"No soak run on this run's kernels ({WHERE})."))
    others = [f"{k}/{f}: {other_text(o, image)}"
              for k in kernels for f in FLAVOURS
              if (image := collected.image(k, f)) is not None
              for o in collected.others(k, f)]
    if others:
        out += [Para("Soaks of these kernels on other images, not counted:"), Bullets(others)]
    if collected.unreadable:
        out += [Para("Soak summaries that could not be read, passed over:"),
                Bullets(collected.unreadable)]
    return out
