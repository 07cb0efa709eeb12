"""The soaks of a run's own images, kept in the run folder (records.json).

The report reads only the run folder, and a soak is a folder of its own
(layout.soaks). So when a compare run finishes, `write` reads every soak
summary under the results folder and keeps, in records.json, the run's
images and what each soak did on a kernel and flavour the run booted. A
soak counts for the run only if it booted the very image the run booted
(the same key: patches, configuration, compiler); one of another image is
kept to be named, with that image, and so is one whose summary was written
before soaks named their images (its image is unknown, so it never counts).
A summary that cannot be read is named in records.json and passed over:
the run's measurements are written before, and never depend on it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from harness import progress
from harness.kernels.kbuild import ImageIdentity, KernelImage, identity
from harness.layout import Layout

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
class Collected:
    """records.json: the run's images and the soaks of its kernels and flavours."""
    images: dict[str, ImageIdentity]  # "kernel/flavour" -> the image the run booted
    soaks: list[Soak]
    unnamed: list[Unnamed]
    read: int  # soak summaries read
    unreadable: list[str]  # "soak/STAMP/summary.json: why", one per summary passed over

    def image(self, kernel: str, flavour: str) -> ImageIdentity | None:
        return self.images.get(f"{kernel}/{flavour}")

    def ours(self, kernel: str, flavour: str) -> list[Soak]:
        """The soaks of the very image the run booted as this kernel and flavour."""
        image = self.image(kernel, flavour)
        return [s for s in self.soaks if (s.kernel, s.flavour) == (kernel, flavour)
                and image is not None and s.image.key == image.key]

    def others(self, kernel: str, flavour: str) -> list[Soak | Unnamed]:
        """The soaks of this kernel and flavour on another image, or an unknown one."""
        ours = self.ours(kernel, flavour)
        return [*(s for s in self.soaks if (s.kernel, s.flavour) == (kernel, flavour)
                  and s not in ours),
                *(u for u in self.unnamed if (u.kernel, u.flavour) == (kernel, flavour))]


def _name(name: str) -> tuple[str, str]:
    kernel, flavour = name.rsplit("/", 1)
    return kernel, flavour


def _tally(t: dict) -> Tally:
    return Tally(int(t["boots"]), float(t["step_seconds"]), dict(t["statuses"]),
                 {str(c): n for c, n in t["cpus"].items()}, int(t["damaged_records"]),
                 dict(t["reports"]), dict(t["first"]))


def parse_summary(folder: str, data: dict) -> tuple[list[Soak], list[Unnamed]]:
    """A soak's summary.json: a Soak per kernel and flavour it booted, or, for a summary
    without "images" (written before soaks named them), an Unnamed each."""
    if "images" not in data:
        return [], [Unnamed(folder, *_name(name), int(t["boots"]))
                    for name, t in data["tallies"].items()]
    images = {name: ImageIdentity(**i) for name, i in data["images"].items()}
    return [Soak(folder, str(data["started"]), bool(data["finished"]), *_name(name),
                 images[name], _tally(t)) for name, t in data["tallies"].items()], []


def read_summary(path: Path) -> tuple[list[Soak], list[Unnamed]]:
    try:
        return parse_summary(path.parent.name, json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise SummaryError(path, f"not a soak summary ({type(e).__name__}: {e})") from None


def collect(layout: Layout, images: dict[str, ImageIdentity]) -> Collected:
    """Every soak under layout.soaks of a kernel and flavour in `images`."""
    paths = sorted(layout.soaks.glob("*/summary.json"))
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
        soaks += [s for s in named if f"{s.kernel}/{s.flavour}" in images]
        unnamed += [u for u in unknown if f"{u.kernel}/{u.flavour}" in images]
    return Collected(images, soaks, unnamed, len(paths), unreadable)


def write(layout: Layout, run_dir: Path, images: dict[tuple[str, str], KernelImage]) -> None:
    """records.json in the run folder. Call it after the run's own files: a summary
    that cannot be read is named (here and in the file), never fatal."""
    collected = collect(layout, {f"{k}/{f}": identity(image)
                                 for (k, f), image in sorted(images.items())})
    for problem in collected.unreadable:
        progress.say(f"records: passed over {layout.results}/{problem}")
    counted = sum(1 for s in collected.soaks if s in collected.ours(s.kernel, s.flavour))
    progress.say(f"records: soak summaries read under {layout.soaks}: {collected.read}; "
                 f"tallies of this run's very images among them: {counted}")
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
            [Unnamed(**u) for u in data["unnamed"]], data["read"], data["unreadable"])
    except (ValueError, KeyError, TypeError) as e:
        raise SummaryError(path, f"not a records file ({type(e).__name__}: {e})") from None
