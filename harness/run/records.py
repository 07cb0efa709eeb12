"""The record of a run's kernels beyond its own boots, kept in the run folder (records.json).

The report reads only the run folder, and soaks, make faults and make kcsan
keep folders of their own (layout.soaks, layout.faults, layout.kcsan). So
when a compare run finishes, `write` reads every summary under the results
folder and keeps, in records.json, the run's images, what each soak did on
a kernel and flavour the run booted, and what make faults and make kcsan
measured on each kernel. A soak of a flavour the run booted counts for the
run only if it booted the very image the run booted (the same key: patches,
configuration, compiler); one of another image is kept to be named, with
that image, and so is one whose summary was written before soaks named
their images (its image is unknown, so it never counts). Faults and kcsan
images, and the checking flavours a run does not boot (a duel boots no
sanitize or kcsan image), are never the run's: their cells and soaks count
for a kernel when their image was built from the same patches (the same
digest of the kernel's own patches).
A summary that cannot be read is named in records.json and passed over:
the run's measurements are written before, and never depend on it.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness import progress
from harness.kernels.kbuild import ImageIdentity, KernelImage, identity
from harness.layout import Layout
from harness.parsers.kernel_reports import DATA_RACE

RECORDS = "records.json"


class SummaryError(ValueError):
    """A summary.json or records.json that cannot be read; the message names the file."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path = path
        self.why = why


@dataclass(frozen=True)
class Tally:
    """What a soak counted on one image (a tally of its summary.json)."""
    boots: int
    workload_s: float  # seconds of workload steps
    statuses: dict[str, int]  # boot status -> boots
    cpus: dict[str, int]  # vCPU count -> boots
    damaged_records: int
    reports: dict[str, int]  # kernel report kind -> count
    first: dict[str, str]  # kind -> "title (boot)" of the first of that kind
    # KCSAN's reports by title, to be classified with make kcsan's races (records
    # written before soaks booted kcsan images have none).
    races: dict[str, int] = field(default_factory=dict)

    @property
    def report_count(self) -> int:
        return sum(self.reports.values())


@dataclass(frozen=True)
class Soak:
    """One soak's boots of one kernel and flavour, on the image it names."""
    folder: str  # under results/soak
    started: str  # local time its boots began, ISO 8601
    finished: bool  # False: stopped early, or still running when the run finished
    kernel: str
    flavour: str
    image: ImageIdentity
    tally: Tally


@dataclass(frozen=True)
class Unnamed:
    """One soak's boots of one kernel and flavour, from a summary written before
    soaks named their images: which image they booted is not known."""
    folder: str
    kernel: str
    flavour: str
    boots: int


@dataclass(frozen=True)
class CheckTally:
    """One kernel's cells in the store of make faults or make kcsan."""
    kind: str  # faults, kcsan, race-gate
    store: str  # its folder under the results folder: faults/seed1, kcsan, race-gate/STAMP
    kernel: str
    image: ImageIdentity | None  # None: a summary written before they named images
    planned: int
    measured: int
    statuses: dict[str, int]  # step status -> cells
    reports: int  # kernel reports (faults, race-gate), KCSAN reports (kcsan)
    # faults: report verdict -> reports; kcsan: race class -> distinct races;
    # race-gate: spinlock -> boots that passed under it
    by_class: dict[str, int]
    step_hours: float
    finished: bool
    # race-gate: syncrace's seconds and the vCPUs of its boots; boot folders (a boot
    # summarised twice, by the gate and by --read, counts once)
    gate: tuple[int, int] | None = None
    boots: tuple[str, ...] = ()


@dataclass(frozen=True)
class RaceRecord:
    """One distinct race of make kcsan, as its summary classified it."""
    title: str
    klass: str  # whose code raced: 6.1's, a common patch's, the series'
    fate: str
    why: str  # the evidence for the class: mainline too, or the patches
    kernels: dict[str, int]  # kernel -> reports


@dataclass(frozen=True)
class Collected:
    """records.json: the run's images, the soaks of its kernels and flavours, and the
    cells make faults and make kcsan measured on its kernels."""
    images: dict[str, ImageIdentity]  # "kernel/flavour" -> the image the run booted
    soaks: list[Soak]
    unnamed: list[Unnamed]
    read: int  # summaries read (soaks, faults, kcsan, race gate)
    unreadable: list[str]  # "soak/STAMP/summary.json: why", one per summary passed over
    checks: list[CheckTally] = field(default_factory=list)
    races: list[RaceRecord] = field(default_factory=list)  # make kcsan's, every kernel's

    def image(self, kernel: str, flavour: str) -> ImageIdentity | None:
        return self.images.get(f"{kernel}/{flavour}")

    def patches_digest(self, kernel: str) -> str | None:
        """The digest of the kernel's own patches in the run (every flavour has it)."""
        return next((i.patches_digest for name, i in sorted(self.images.items())
                     if name.rsplit("/", 1)[0] == kernel), None)

    def checked(self, kind: str, kernel: str) -> list[CheckTally]:
        """The faults, kcsan or race-gate cells of this kernel's very patches."""
        digest = self.patches_digest(kernel)
        return [c for c in self.checks if (c.kind, c.kernel) == (kind, kernel)
                and c.image is not None and c.image.patches_digest == digest]

    def unchecked(self, kind: str, kernel: str) -> list[CheckTally]:
        """This kernel's faults or kcsan cells of other patches, or of unrecorded ones."""
        mine = self.checked(kind, kernel)
        return [c for c in self.checks if (c.kind, c.kernel) == (kind, kernel) and c not in mine]

    def ours(self, kernel: str, flavour: str) -> list[Soak]:
        """The soaks of the very image the run booted as this kernel and flavour, or,
        of a flavour the run did not boot, of an image of the kernel's very patches."""
        image = self.image(kernel, flavour)
        digest = self.patches_digest(kernel)
        return [s for s in self.soaks if (s.kernel, s.flavour) == (kernel, flavour)
                and (s.image.key == image.key if image is not None
                     else digest is not None and s.image.patches_digest == digest)]

    def others(self, kernel: str, flavour: str) -> list[Soak | Unnamed]:
        """The soaks of this kernel and flavour on another image, or an unknown one."""
        ours = self.ours(kernel, flavour)
        return [*(s for s in self.soaks if (s.kernel, s.flavour) == (kernel, flavour)
                  and s not in ours),
                *(u for u in self.unnamed if (u.kernel, u.flavour) == (kernel, flavour))]


def _name(name: str) -> tuple[str, str]:
    kernel, flavour = name.rsplit("/", 1)
    return kernel, flavour


def _tally(t: dict, races: Counter) -> Tally:
    return Tally(int(t["boots"]), float(t["step_seconds"]), dict(t["statuses"]),
                 {str(c): n for c, n in t["cpus"].items()}, int(t["damaged_records"]),
                 dict(t["reports"]), dict(t["first"]), dict(races))


def _races(boots: list[dict], name: str) -> Counter:
    """KCSAN's reports by title in the boots of one kernel and flavour."""
    return Counter(r["title"] for b in boots if f"{b['kernel']}/{b['flavour']}" == name
                   for r in b["reports"] if r["kind"] == DATA_RACE)


def parse_summary(folder: str, data: dict) -> tuple[list[Soak], list[Unnamed]]:
    """A soak's summary.json: a Soak per kernel and flavour it booted, or, for a summary
    without "images" (written before soaks named them), an Unnamed each."""
    if "images" not in data:
        return [], [Unnamed(folder, *_name(name), int(t["boots"]))
                    for name, t in data["tallies"].items()]
    images = {name: ImageIdentity(**i) for name, i in data["images"].items()}
    return [Soak(folder, str(data["started"]), bool(data["finished"]), *_name(name),
                 images[name], _tally(t, _races(data["boots"], name)))
            for name, t in data["tallies"].items()], []


def read_summary(path: Path) -> tuple[list[Soak], list[Unnamed]]:
    try:
        return parse_summary(path.parent.name, json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise SummaryError(path, f"not a soak summary ({type(e).__name__}: {e})") from None


def _identity(images: dict, kernel: str) -> ImageIdentity | None:
    return ImageIdentity(**images[kernel]) if kernel in images else None


def parse_faults(store: str, data: dict) -> list[CheckTally]:
    """make faults' summary.json: a tally per kernel it planned."""
    images = data.get("images", {})
    verdicts: dict[str, Counter] = {}
    for report in data["reports"]:
        verdicts.setdefault(report["kernel"], Counter())[report["verdict"]] += 1
    out = []
    for kernel, planned in data["planned"].items():
        cells = [c for c in data["cells"] if c["kernel"] == kernel]
        out.append(CheckTally(
            "faults", store, kernel, _identity(images, kernel), int(planned), len(cells),
            dict(Counter(c["status"] for c in cells)), sum(len(c["reports"]) for c in cells),
            dict(verdicts.get(kernel, {})),
            round(sum(c["wall_s"] or 0.0 for c in cells) / 3600, 3), bool(data["finished"])))
    return out


def parse_kcsan(store: str, data: dict) -> tuple[list[CheckTally], list[RaceRecord]]:
    """make kcsan's summary.json: a tally per kernel, and its distinct races."""
    images = data.get("images", {})
    tallies = [CheckTally("kcsan", store, kernel, _identity(images, kernel), int(k["planned"]),
                          int(k["measured"]), dict(k["statuses"]), int(k["reports"]),
                          dict(k["by_class"]), float(k["step_hours"]), bool(data["finished"]))
               for kernel, k in data["per_kernel"].items()]
    races = [RaceRecord(r["title"], r["class"], r["fate"], r["why"], dict(r["kernels"]))
             for r in data["races"]]
    return tallies, races


def parse_race_gate(store: str, data: dict) -> list[CheckTally]:
    """make race-gate's summary.json: a tally per kernel it booted (a boot is a cell)."""
    images = data["images"]
    # The first summaries gave the boots planned in all, every kernel as many.
    planned = data["planned"] if isinstance(data["planned"], dict) else {
        kernel: int(data["planned"]) // len(images) for kernel in images}
    out = []
    for kernel in images:
        rows = [r for r in data["rows"] if r["kernel"] == kernel]
        passed = Counter(r["lock"] for r in rows if r["passed"])
        out.append(CheckTally(
            "race-gate", store, kernel, _identity(images, kernel),
            int(planned[kernel]), len(rows),
            dict(Counter("passed" if r["passed"] else "failed" for r in rows)),
            sum(len(r["reports"]) for r in rows), dict(passed),
            round(sum(r["seconds"] or 0.0 for r in rows) / 3600, 3), bool(data["finished"]),
            (int(data["seconds"]), int(data["cpus"])), tuple(r["boot"] for r in rows)))
    return out


def _read_json(path: Path, what: str) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise SummaryError(path, f"not a {what} summary ({type(e).__name__}: {e})") from None


def read_checks(path: Path, store: str) -> tuple[list[CheckTally], list[RaceRecord]]:
    """A faults, kcsan or race-gate summary.json (store: its folder under the results
    folder)."""
    kind = store.split("/")[0] if store.startswith(("kcsan", "race-gate")) else "faults"
    data = _read_json(path, kind)
    try:
        if kind == "kcsan":
            return parse_kcsan(store, data)
        return (parse_race_gate(store, data) if kind == "race-gate"
                else parse_faults(store, data)), []
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise SummaryError(path, f"not a {kind} summary ({type(e).__name__}: {e})") from None


def collect(layout: Layout, images: dict[str, ImageIdentity]) -> Collected:
    """Every soak under layout.soaks of a kernel and flavour in `images`, and the
    faults and kcsan cells of its kernels."""
    paths = sorted(layout.soaks.glob("*/summary.json"))
    kernels = {name.rsplit("/", 1)[0] for name in images}
    checks_paths = (sorted(layout.faults.glob("*/summary.json"))
                    + sorted(layout.kcsan.glob("summary.json"))
                    + sorted(layout.race_gate.glob("*/summary.json")))
    soaks: list[Soak] = []
    unnamed: list[Unnamed] = []
    unreadable = []
    for path in paths:
        try:
            named, unknown = read_summary(path)
        except SummaryError as e:
            # Named under the results folder: records.json is published with the run.
            unreadable.append(f"{path.relative_to(layout.results)}: {e.why}")
            continue
        # A flavour the run booted counts by image key, one it did not by patch digest
        # (Collected.ours): every soak of the run's kernels is kept to be judged.
        soaks += [s for s in named if s.kernel in kernels]
        unnamed += [u for u in unknown if f"{u.kernel}/{u.flavour}" in images]
    checks: list[CheckTally] = []
    races: list[RaceRecord] = []
    for path in checks_paths:
        store = str(path.parent.relative_to(layout.results))
        try:
            tallies, found = read_checks(path, store)
        except SummaryError as e:
            unreadable.append(f"{path.relative_to(layout.results)}: {e.why}")
            continue
        checks += [t for t in tallies if t.kernel in kernels]
        races += found
    return Collected(images, soaks, unnamed, len(paths) + len(checks_paths), unreadable,
                     checks, races)


def write(layout: Layout, run_dir: Path, images: dict[tuple[str, str], KernelImage]) -> None:
    """records.json in the run folder. Call it after the run's own files: a summary
    that cannot be read is named (here and in the file), never fatal."""
    _write(layout, run_dir, {f"{k}/{f}": identity(image)
                             for (k, f), image in sorted(images.items())})


def refresh(layout: Layout, run_dir: Path) -> None:
    """records.json collected again for the run's own images: soaks, faults and kcsan
    cells measured since the run ended count for it as they would have then."""
    found = load(run_dir)
    if found is None:
        raise SummaryError(run_dir / RECORDS, "the run keeps no record of its images")
    _write(layout, run_dir, found.images)


def _write(layout: Layout, run_dir: Path, images: dict[str, ImageIdentity]) -> None:
    collected = collect(layout, images)
    for problem in collected.unreadable:
        progress.say(f"records: passed over {layout.results}/{problem}")
    counted = sum(1 for s in collected.soaks if s in collected.ours(s.kernel, s.flavour))
    progress.say(f"records: summaries read under {layout.results} (soak, faults, kcsan, race gate): "
                 f"{collected.read}; soak tallies of this run's very images among them: "
                 f"{counted}")
    (run_dir / RECORDS).write_text(json.dumps(asdict(collected), indent=1) + "\n")


def load(run_dir: Path) -> Collected | None:
    """The run's records.json; None for a run made before runs kept one."""
    path = run_dir / RECORDS
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
        return Collected(
            {name: ImageIdentity(**i) for name, i in data["images"].items()},
            [Soak(s["folder"], s["started"], s["finished"], s["kernel"], s["flavour"],
                  ImageIdentity(**s["image"]), Tally(**s["tally"])) for s in data["soaks"]],
            [Unnamed(**u) for u in data["unnamed"]], data["read"], data["unreadable"],
            # Runs made before the record kept faults and kcsan cells have neither.
            [CheckTally(**{**c, "image": ImageIdentity(**c["image"]) if c["image"] else None,
                           "gate": tuple(c["gate"]) if c.get("gate") else None,
                           "boots": tuple(c.get("boots", ()))})
             for c in data.get("checks", [])],
            [RaceRecord(**r) for r in data.get("races", [])])
    except (ValueError, KeyError, TypeError) as e:
        raise SummaryError(path, f"not a records file ({type(e).__name__}: {e})") from None
