"""Where things live: the repository, the git-ignored build folder, the results, the ccache.

Every path the harness uses comes from one Layout value passed down
explicitly; nothing reads the environment behind the caller's back, and no
module builds a path of its own under these folders.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def slug(kernel: str) -> str:
    """A kernel name as a file name: piggin@3 -> piggin_at_3."""
    return kernel.replace("@", "_at_")


@dataclass(frozen=True)
class Layout:
    repo: Path
    build: Path
    ccache: Path
    results: Path
    image_store: Path | None = None  # built kernels kept elsewhere (--images, IMAGES_DIR)
    # Folders of .wl declarations (--workloads-dir, WORKLOADS_DIR); none: the
    # checkout's own workloads/.
    workload_dirs: tuple[Path, ...] = ()

    # -- the repository

    @property
    def configs(self) -> Path:
        return self.repo / "configs"

    @property
    def own_workloads(self) -> Path:
        """The checkout's workloads/: its declarations, and the harness's own
        programs (src/) that any run line may call."""
        return self.repo / "workloads"

    @property
    def workloads(self) -> tuple[Path, ...]:
        """The folders whose *.wl files are the workloads a run can choose from."""
        return self.workload_dirs or (self.own_workloads,)

    @property
    def workload_sources(self) -> Path:
        """The C programs of workloads/src, compiled into every guest's /bin."""
        return self.own_workloads / "src"

    def series_dir(self, name: str) -> Path:
        return self.repo / f"series-{name}"

    def design_file(self, kernel: str, kind: str) -> Path:
        """A file describing the design a kernel implements (kind: lock-order,
        lock-scope): its series' (NAME@K: the series' KIND@K where the point's
        structures differ from the final ones, else the final one), or mainline's
        in harness/ (stable@K too: 6.1 with fixes, 6.1's design). `kernel` is a spec
        (series.spec_of turns a named point into it)."""
        name, _, point = kernel.partition("@")
        if name in ("mainline", "stable"):
            return self.repo / "harness" / f"mainline.{kind}"
        own = self.series_dir(name) / f"{kind}@{point}"
        return own if point and own.exists() else self.series_dir(name) / kind

    @property
    def committed_reference(self) -> Path:
        """The reference run committed in the checkout (results/reference of the repo)."""
        return self.repo / "results" / "reference"

    # -- the build folder

    @property
    def src(self) -> Path:
        """The kernel git repository holding the pristine tree (tag per version)."""
        return self.build / "src"

    @property
    def objects(self) -> Path:
        """Kbuild O= folders, one per flavour, reused across kernels."""
        return self.build / "obj"

    @property
    def allmod_objects(self) -> Path:
        """The allmodconfig O= folder of compile-check."""
        return self.build / "obj-allmod"

    @property
    def images(self) -> Path:
        """Built kernels, one folder per cache key: build/images, or another
        build folder's or a shared cache (image_store)."""
        return self.image_store or self.build / "images"

    def image_dir(self, kernel: str, flavour: str, key: str) -> Path:
        return self.images / f"{slug(kernel)}-{flavour}-{key}"

    @property
    def build_lock(self) -> Path:
        """flock(2) on it: one kernel build at a time on this machine. It lives
        with the images, so checkouts with build folders of their own that
        share one image store (IMAGES_DIR) still build one at a time."""
        return self.images / ".build.lock"

    @property
    def guest(self) -> Path:
        """Initramfs, disk images and static workload binaries."""
        return self.build / "guest"

    @property
    def accel_probe(self) -> Path:
        """The KVM probe boot's folder; its answer is kept beside it."""
        return self.guest / "kvm-probe"

    @property
    def splat(self) -> Path:
        """Boot folders of the splat generator's captures."""
        return self.build / "splat"

    # -- the results folder

    @property
    def cells(self) -> Path:
        return self.results / "cells"

    @property
    def boots(self) -> Path:
        return self.results / "boots"

    def boot_dir(self, boot_id: str) -> Path:
        return self.boots / boot_id

    @property
    def runs(self) -> Path:
        return self.results / "runs"

    @property
    def latest(self) -> Path:
        """Symbolic link to the newest run folder."""
        return self.results / "latest"

    @property
    def reference(self) -> Path:
        return self.results / "reference"

    @property
    def soaks(self) -> Path:
        """One folder per make soak: its boots and summary."""
        return self.results / "soak"

    @property
    def faults(self) -> Path:
        """One folder per make faults seed: its boots and summary."""
        return self.results / "faults"

    @property
    def kcsan(self) -> Path:
        """make kcsan: its boots and summary (one folder: cells keep what is measured)."""
        return self.results / "kcsan"

    @property
    def race_gate(self) -> Path:
        """One folder per make race-gate: its boots and summary."""
        return self.results / "race-gate"

    def bisect_dir(self, kernel: str, key: str) -> Path:
        """The smoke boot of one bisection point."""
        return self.results / "bisect" / f"{slug(kernel)}-{key}"


def folder_list(value: str) -> tuple[Path, ...]:
    """WORKLOADS_DIR's value: folders separated by ':', as in PATH."""
    return tuple(Path(item).resolve() for item in value.split(os.pathsep) if item)


def default_layout(environ: dict[str, str] | None = None) -> Layout:
    """The layout for this checkout; BUILD_DIR, RESULTS_DIR, CCACHE_DIR,
    IMAGES_DIR (kernel images from elsewhere) and WORKLOADS_DIR (folders of
    workload declarations, ':'-separated, instead of the checkout's) override."""
    env = os.environ if environ is None else environ
    build = Path(env.get("BUILD_DIR", REPO_ROOT / "build")).resolve()
    results = Path(env.get("RESULTS_DIR", REPO_ROOT / "results")).resolve()
    cache_home = Path(env.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    ccache = Path(env.get("CCACHE_DIR", cache_home / "inode-duel" / "ccache"))
    images = Path(env["IMAGES_DIR"]).resolve() if env.get("IMAGES_DIR") else None
    return Layout(repo=REPO_ROOT, build=build, ccache=ccache.resolve(), results=results,
                  image_store=images, workload_dirs=folder_list(env.get("WORKLOADS_DIR", "")))
