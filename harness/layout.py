"""Where things live: the repository, the git-ignored build folder, the ccache.

Every path the harness uses comes from one Layout value passed down
explicitly; nothing reads the environment behind the caller's back.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Layout:
    repo: Path
    build: Path
    ccache: Path
    results: Path

    @property
    def src(self) -> Path:
        """The kernel git repository holding the pristine tree (tag per version)."""
        return self.build / "src"

    @property
    def objects(self) -> Path:
        """Kbuild O= folders, one per flavour, reused across kernels."""
        return self.build / "obj"

    @property
    def images(self) -> Path:
        """Built kernels, one folder per cache key."""
        return self.build / "images"

    @property
    def guest(self) -> Path:
        """Initramfs, disk images and static workload binaries."""
        return self.build / "guest"

    @property
    def configs(self) -> Path:
        return self.repo / "configs"

    @property
    def workloads(self) -> Path:
        return self.repo / "workloads"

    def series_dir(self, name: str) -> Path:
        return self.repo / f"series-{name}"


def default_layout(environ: dict[str, str] | None = None) -> Layout:
    """The layout for this checkout; BUILD_DIR, RESULTS_DIR and CCACHE_DIR override."""
    env = os.environ if environ is None else environ
    build = Path(env.get("BUILD_DIR", REPO_ROOT / "build")).resolve()
    results = Path(env.get("RESULTS_DIR", REPO_ROOT / "results")).resolve()
    cache_home = Path(env.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    ccache = Path(env.get("CCACHE_DIR", cache_home / "inode-duel" / "ccache"))
    return Layout(repo=REPO_ROOT, build=build, ccache=ccache.resolve(), results=results)
