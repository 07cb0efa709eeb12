"""Kernels by name, the patches each is made of, and applying them with git am.

mainline            linux-source-6.1 + series-stable/ (fixes of 6.1's own bugs that
                    every kernel carries: mainline is not stock 6.1)
base                mainline + series-base/
chinner, piggin     base + series-NAME/
NAME@K              the series below NAME plus the first K patches of NAME
                    (stable@K: pristine 6.1 plus the first K fixes)
NAME@*              every point of NAME, 0 .. all (expanded by expand_names)
chinner-2.6.39      chinner@7, piggin-2010 piggin@10: the pair a 2010 summit
                    compared (HISTORICAL)
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from harness.kernels import source
from harness.layout import Layout

# Fixes of 6.1 itself, under every kernel alike; not a design, and not a kernel
# of its own: mainline is pristine 6.1 plus them.
STABLE = "stable"
SERIES_NAMES = ("base", "chinner", "piggin")
KERNEL_NAMES = ("mainline",) + SERIES_NAMES
BISECTABLE = (STABLE,) + SERIES_NAMES  # the series whose points NAME@K are kernels
# The pair a 2010 summit compared, named as a reader knows them. chinner-2.6.39:
# Dave's series as merged in 2.6.38/39 (part 1 of series-chinner: his lock order
# and global inode_hash_lock; the sb list, LRU and writeback locks stay 6.1's
# per-sb, per-node and per-bdi ones, where 2.6.39 had global locks), with 0007,
# our counters of its lock drops. piggin-2010: Nick's series as posted, with
# 0001, our retry counters, and 0009's grace-period wait before XFS recycles an
# inode (ours: his series had no answer there), without 0011 (ours: that wait
# only after a walk; see its message), 0012 (the i_count -> i_refs rename) and
# 0013 (lock-order comments), which change no code path. The isolated pair is
# chinner and piggin as built.
HISTORICAL = {"chinner-2.6.39": "chinner@7", "piggin-2010": "piggin@10"}


def spec_of(kernel: str) -> str:
    """The NAME@K a named kernel stands for (itself for any other name)."""
    return HISTORICAL.get(kernel, kernel)


class SeriesError(Exception):
    pass


@dataclass(frozen=True)
class Patch:
    series: str
    index: int  # 1-based position in its series
    path: Path

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()

    @property
    def subject(self) -> str:
        for line in self.path.read_text(errors="replace").splitlines():
            if line.startswith("Subject:"):
                return line[len("Subject:"):].strip()
        return self.path.name


@dataclass(frozen=True)
class Kernel:
    name: str
    patches: tuple[Patch, ...]

    @property
    def patch_digest(self) -> str:
        """Identity of the applied patch contents, in order."""
        h = hashlib.sha256()
        for patch in self.patches:
            h.update(f"{patch.series}/{patch.path.name}:{patch.sha256}\n".encode())
        return h.hexdigest()


def read_series(layout: Layout, name: str) -> list[Patch]:
    """The patches listed in series-NAME/series, in order (quilt format)."""
    directory = layout.series_dir(name)
    series_file = directory / "series"
    if not series_file.exists():
        return []
    patches = []
    for lineno, line in enumerate(series_file.read_text().splitlines(), 1):
        entry = line.split("#", 1)[0].strip()
        if not entry:
            continue
        path = directory / entry.split()[0]
        if not path.is_file():
            raise SeriesError(f"{series_file}:{lineno}: {entry} does not exist")
        patches.append(Patch(name, len(patches) + 1, path))
    return patches


def parent_of(name: str) -> str | None:
    """The kernel a series applies on: None for stable, which applies on pristine 6.1."""
    return {"base": "mainline", "chinner": "base", "piggin": "base"}.get(name)


def resolve(layout: Layout, spec: str) -> Kernel:
    """A kernel name (mainline, base, chinner, piggin, NAME@K, a HISTORICAL name) to
    its patch list; the kernel keeps the name it was asked by."""
    match = re.fullmatch(r"([a-z]+)(?:@(\d+))?", spec_of(spec))
    if not match or match.group(1) not in KERNEL_NAMES + (STABLE,):
        raise SeriesError(f"unknown kernel {spec!r}: expected one of "
                          f"{', '.join(KERNEL_NAMES + tuple(HISTORICAL))} or NAME@K")
    name, count = match.group(1), match.group(2)
    if name == "mainline":
        if count is not None:
            raise SeriesError(f"mainline has no patches of its own to bisect: its fixes are "
                              f"series-{STABLE}'s ({STABLE}@K)")
        return Kernel(spec, tuple(read_series(layout, STABLE)))
    if name == STABLE and count is None:
        raise SeriesError(f"{STABLE} is not a kernel: mainline is 6.1 plus series-{STABLE}, "
                          f"{STABLE}@K its points")
    parent = parent_of(name)
    below = resolve(layout, parent).patches if parent else ()
    own = read_series(layout, name)
    if count is not None:
        k = int(count)
        if k > len(own):
            raise SeriesError(f"{spec}: series-{name} has only {len(own)} patches")
        own = own[:k]
    return Kernel(spec, below + tuple(own))


def expand_names(layout: Layout, specs: list[str]) -> list[str]:
    """Expand NAME@* into NAME@0 .. NAME@N."""
    names = []
    for spec in specs:
        if spec.endswith("@*"):
            name = spec[:-2]
            if name not in BISECTABLE:
                raise SeriesError(f"{spec}: only a series ({', '.join(BISECTABLE)}) "
                                  "can be bisected")
            names += [f"{name}@{k}" for k in range(len(read_series(layout, name)) + 1)]
        else:
            names.append(spec)
    return names


def series_exists(layout: Layout, name: str) -> bool:
    return name == "mainline" or bool(read_series(layout, name))


def describe_am_failure(src: Path, patch: Patch, am_output: str) -> str:
    """Name the series, the patch and the hunk git could not apply."""
    check = source.git(src, "apply", "--check", "-v", str(patch.path), check=False)
    lines = [f"series-{patch.series}: patch {patch.index} ({patch.path.name}, "
             f"\"{patch.subject}\") does not apply"]
    detail = check.stderr.strip() or am_output.strip()
    hunks = re.findall(r"^error: patch failed: (\S+):(\d+)$", detail, re.M)
    for path, line in hunks:
        lines.append(f"  hunk at {path}:{line} failed")
    missing = re.findall(r"^error: (\S+): (does not exist in index|No such file or directory)$",
                         detail, re.M)
    for path, why in missing:
        lines.append(f"  {path}: {why}")
    searching = re.search(r"^error: while searching for:\n(.*?)(?=^error:)", detail, re.M | re.S)
    if searching:
        lines.append("  context git looked for:")
        lines += ["    " + text for text in searching.group(1).rstrip().splitlines()[:12]]
    if not hunks and not missing:
        lines += ["  " + text for text in detail.splitlines()[-10:]]
    return "\n".join(lines)


def checkout(layout: Layout, info: source.SourceInfo, kernel: Kernel) -> str:
    """Leave layout.src at a commit holding the kernel's tree; returns the commit.

    The result of git am is kept under refs/inode-duel/ keyed by the patch
    contents, so an unchanged kernel is checked out, not re-applied.
    """
    src = layout.src
    ref = f"refs/inode-duel/{info.package_version}/{kernel.patch_digest[:16]}"
    known = source.git(src, "rev-parse", "-q", "--verify", ref, check=False)
    if known.returncode == 0:
        commit = known.stdout.strip()
        source.git(src, "checkout", "-q", "-f", "--detach", commit)
        return commit
    source.git(src, "checkout", "-q", "-f", "--detach", info.tag)
    source.git(src, "am", "--abort", check=False)
    for patch in kernel.patches:
        applied = source.git(src, "am", "-q", "--no-3way", str(patch.path), check=False)
        if applied.returncode != 0:
            message = describe_am_failure(src, patch, applied.stdout + applied.stderr)
            source.git(src, "am", "--abort", check=False)
            raise SeriesError(message)
    commit = source.git(src, "rev-parse", "HEAD").stdout.strip()
    source.git(src, "update-ref", ref, commit)
    return commit
