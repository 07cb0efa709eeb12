"""compile-check: a kernel's changed code compiles beyond the minimal guest config.

The guest config builds a few filesystems; a series that changes a field of
struct inode must also compile in every filesystem and driver that uses it.
This compiles, under allmodconfig, every C file the kernel's patches touch
plus every C file of the tree matching a pattern (say, the old and new names
of the field), and reports each file that fails.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from harness import progress
from harness.kernels import kbuild, series, source
from harness.layout import Layout, slug

CONFIG_TARGET = "allmodconfig"


@dataclass(frozen=True)
class CompileResult:
    kernel: str
    config: str
    files: tuple[str, ...]
    failed: tuple[str, ...]
    not_in_config: tuple[str, ...]  # fail on the pristine tree as well
    modules_enabled: int
    log: str
    seconds: float

    @property
    def ok(self) -> bool:
        return bool(self.files) and not self.failed


def touched_files(layout: Layout, base_commit: str, commit: str) -> set[str]:
    out = source.git(layout.src, "diff", "--name-only", f"{base_commit}..{commit}")
    return set(out.stdout.split())


def matching_files(layout: Layout, pattern: str) -> set[str]:
    out = source.git(layout.src, "grep", "-l", "-E", pattern, "--", "*.c", "*.h", check=False)
    return set(out.stdout.split())


def includers(layout: Layout, header: str) -> set[str]:
    """C files including a header; the code of a trace or private header is
    compiled only there. Headers of include/linux and include/uapi are
    included nearly everywhere, so the C files already chosen cover them."""
    if header.startswith(("include/linux/", "include/uapi/")):
        return set()
    name = header.rsplit("/", 1)[-1].replace(".", r"\.")
    out = source.git(layout.src, "grep", "-l", "-E", f'#include [<"]([^>"]*/)?{name}[>"]',
                     "--", "*.c", check=False)
    return set(out.stdout.split())


def files_to_compile(layout: Layout, base_commit: str, commit: str,
                     pattern: str | None) -> list[str]:
    chosen = touched_files(layout, base_commit, commit)
    if pattern:
        chosen |= matching_files(layout, pattern)
    c_files = {f for f in chosen if f.endswith(".c")}
    for header in (f for f in chosen if f.endswith(".h")):
        c_files |= includers(layout, header)
    return sorted(f for f in c_files if x86_buildable(f))


def x86_buildable(path: str) -> bool:
    """Other architectures' code cannot be compiled by an x86_64 build."""
    return not (path.startswith("arch/") and not path.startswith("arch/x86/"))


def object_of(path: str) -> str:
    return path[:-2] + ".o"


def compile_objects(layout: Layout, obj: Path, files: list[str], log, env: dict[str, str],
                    on_line=None) -> list[str]:
    """The files whose objects one make (-k: on after a failure) did not write."""
    for path in files:
        (obj / object_of(path)).unlink(missing_ok=True)
    try:
        kbuild.run_make(layout, obj, [f"-j{os.cpu_count() or 1}", "-k", "CC=ccache gcc",
                                      *map(object_of, files)], log, env, on_line=on_line)
    except kbuild.BuildError:
        pass  # the missing objects name what failed
    return [path for path in files if not (obj / object_of(path)).exists()]


def check(layout: Layout, kernel_name: str, pattern: str | None) -> CompileResult:
    info = source.ensure_pristine(layout)
    kernel = series.resolve(layout, kernel_name)
    obj = layout.allmod_objects
    obj.mkdir(parents=True, exist_ok=True)
    log_path = obj / f"compile-check-{slug(kernel.name)}.log"
    started = time.monotonic()
    env = kbuild.build_env(layout)
    compiled = 0

    def say_compiled(line: str) -> None:
        nonlocal compiled
        if line.lstrip().startswith("CC"):
            compiled += 1
            progress.say(f"  compiled {compiled}/{len(files)}: {line.split()[-1]}")

    with kbuild.build_lock(layout), open(log_path, "w") as log:
        commit = series.checkout(layout, info, kernel)
        files = files_to_compile(layout, info.tag, commit, pattern)
        progress.say(f"compile-check {kernel.name}: {len(files)} C files under "
                     f"{CONFIG_TARGET}, log: {log_path}")
        kbuild.run_make(layout, obj, [CONFIG_TARGET], log, env)
        kbuild.run_make(layout, obj, [f"-j{os.cpu_count() or 1}", "CC=ccache gcc", "prepare"],
                        log, env)
        failed = compile_objects(layout, obj, files, log, env, on_line=say_compiled)
        # A file that does not compile on the pristine tree either is not
        # part of this config (a pattern can match such files), not a fault
        # of the series.
        broken_upstream = []
        if failed:
            source.git(layout.src, "checkout", "-q", "-f", "--detach", info.tag)
            log.write("# the failures again, on the pristine tree\n")
            broken_upstream = compile_objects(layout, obj, failed, log, env)
            failed = [f for f in failed if f not in broken_upstream]
    modules = (obj / ".config").read_text().count("=m\n")
    return CompileResult(kernel.name, CONFIG_TARGET, tuple(files), tuple(failed),
                         tuple(broken_upstream), modules,
                         str(log_path), round(time.monotonic() - started, 1))
