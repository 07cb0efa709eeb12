"""Debian's linux-source-6.1, extracted once into a git repository.

The pristine tree of each Debian package version is one commit, tagged
pristine/<package-version>; kernels are that tag plus patches applied with
git am (see series.py).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness import progress
from harness.layout import Layout

PACKAGE = "linux-source-6.1"
TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")
# No automatic gc: committing the 75,000 files of the pristine tree would start
# a background repack that takes a core from the first kernel build.
GIT_OPTIONS = ["-c", "user.name=inode-duel", "-c", "user.email=inode-duel@localhost",
               "-c", "gc.auto=0"]


class SourceError(Exception):
    pass


@dataclass(frozen=True)
class SourceInfo:
    package_version: str  # Debian's, e.g. 6.1.192-3
    kernel_version: str  # the tree's Makefile, e.g. 6.1.192
    tag: str  # git tag of the pristine commit


def installed_package_version() -> str | None:
    out = subprocess.run(
        ["dpkg-query", "-W", "-f=${Status} ${Version}", PACKAGE],
        capture_output=True, text=True)
    if out.returncode != 0 or not out.stdout.startswith("install ok installed"):
        return None
    return out.stdout.split()[-1]


def ensure_package() -> str:
    version = installed_package_version()
    if version and TARBALL.exists():
        return version
    progress.say(f"installing {PACKAGE} with apt-get")
    for cmd in (["apt-get", "update", "-qq"],
                ["apt-get", "install", "-y", "-qq", PACKAGE]):
        if subprocess.run(cmd).returncode != 0:
            raise SourceError(f"{' '.join(cmd)} failed; install {PACKAGE} by hand")
    version = installed_package_version()
    if not version or not TARBALL.exists():
        raise SourceError(f"{PACKAGE} installed but {TARBALL} is missing")
    return version


def kernel_version_of(makefile_text: str) -> str:
    fields = dict(re.findall(r"^(VERSION|PATCHLEVEL|SUBLEVEL|EXTRAVERSION) = ?(\S*)$",
                             makefile_text, re.M))
    try:
        return "{VERSION}.{PATCHLEVEL}.{SUBLEVEL}{EXTRAVERSION}".format(**fields)
    except KeyError as err:
        raise SourceError(f"kernel Makefile lacks {err}") from None


def git(src: Path, *args: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(src), *GIT_OPTIONS, *args],
                          check=check, text=True, capture_output=True, **kw)


def ensure_pristine(layout: Layout) -> SourceInfo:
    """Extract the installed tarball into layout.src unless already there."""
    package_version = ensure_package()
    tag = f"pristine/{package_version}"
    src = layout.src
    if (src / ".git").exists() and git(src, "rev-parse", "-q", "--verify",
                                       f"refs/tags/{tag}", check=False).returncode == 0:
        makefile = git(src, "show", f"{tag}:Makefile").stdout
        return SourceInfo(package_version, kernel_version_of(makefile), tag)

    if not (src / ".git").exists():
        src.mkdir(parents=True, exist_ok=True)
        git(src, "init", "-q")
    progress.say(f"extracting {TARBALL} ({package_version}) into {src}")
    # A new package version replaces the work tree; older tags stay reachable.
    for entry in src.iterdir():
        if entry.name != ".git":
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    subprocess.run(["tar", "-xJf", str(TARBALL), "-C", str(src), "--strip-components=1"],
                   check=True)
    progress.say("committing the pristine tree")
    # Debian's top-level .gitignore ignores every top-level entry: add with -f.
    git(src, "add", "-f", "-A", ".")
    git(src, "commit", "-q", "--no-verify", "-m", f"{PACKAGE} {package_version} (pristine)")
    git(src, "tag", "-f", tag)
    kernel_version = kernel_version_of((src / "Makefile").read_text())
    return SourceInfo(package_version, kernel_version, tag)
