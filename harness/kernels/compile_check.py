"""compile-check: a kernel's changed code compiles beyond the minimal guest config.

The guest config builds a few filesystems; a series that changes a field of
struct inode must also compile in every filesystem and driver that uses it.
This compiles, under allmodconfig, every C file the kernel's patches touch
plus every C file of the tree matching a pattern (say, the old and new names
of the field), and reports each file that fails.

Files under arch/ of another architecture cannot be compiled by the x86_64
build. Those of an architecture listed in CROSS are compiled under that
architecture's allmodconfig with Debian's cross compiler (the Makefile's
PACKAGES installs it); the others, or all of them when the cross compiler
is missing, are listed as unchecked, never dropped silently.

The result of a series (base, chinner, piggin) is kept in
series-NAME/compile-check.json, one entry per pattern, keyed by the digest
of the patches compiled: it is committed with the series, so a report on a
machine without the tree still says how far the series was compiled.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness import progress
from harness.kernels import kbuild, series, source
from harness.layout import Layout, slug

CONFIG_TARGET = "allmodconfig"
RESULT_FILE = "compile-check.json"


@dataclass(frozen=True)
class CrossArch:
    arch: str  # ARCH= of the kernel build
    prefix: str  # CROSS_COMPILE=
    package: str  # the Debian package with the compiler


# arch/<dir> -> how to compile it. powerpc covers spufs
# (arch/powerpc/platforms/cell), which big-endian ppc64 allmodconfig builds.
CROSS = {
    "powerpc": CrossArch("powerpc", "powerpc64-linux-gnu-", "gcc-powerpc64-linux-gnu"),
}


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
    cross_checked: dict[str, list[str]] = field(default_factory=dict)  # arch -> files
    unchecked: tuple[str, ...] = ()  # other architectures' files nothing compiled

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
    included nearly everywhere, so the C files already chosen cover them.

    A name alone is not enough: fs/internal.h and mm/internal.h are both
    "internal.h". An #include "..." resolves against the including file's
    folder, an #include <...> against include/ (and arch/x86/include/)."""
    if header.startswith(("include/linux/", "include/uapi/")):
        return set()
    name = header.rsplit("/", 1)[-1].replace(".", r"\.")
    out = source.git(layout.src, "grep", "-E", f'#include [<"]([^>"]*/)?{name}[>"]',
                     "--", "*.c", check=False)
    found = set()
    for line in out.stdout.splitlines():
        path, _, text = line.partition(":")
        match = re.search(r'#include ([<"])([^>"]+)[>"]', text)
        if match and header in resolutions(path, match.group(1), match.group(2)):
            found.add(path)
    return found


def resolutions(c_file: str, bracket: str, included: str) -> set[str]:
    """The tree paths an #include of a C file can name."""
    if bracket == '"':
        return {posixpath.normpath(posixpath.join(posixpath.dirname(c_file), included))}
    return {posixpath.join(root, included) for root in ("include", "arch/x86/include")}


def all_c_files(layout: Layout, base_commit: str, commit: str,
                pattern: str | None) -> set[str]:
    chosen = touched_files(layout, base_commit, commit)
    if pattern:
        chosen |= matching_files(layout, pattern)
    c_files = {f for f in chosen if f.endswith(".c")}
    for header in (f for f in chosen if f.endswith(".h")):
        c_files |= includers(layout, header)
    return c_files


def files_to_compile(layout: Layout, base_commit: str, commit: str,
                     pattern: str | None) -> list[str]:
    """The C files the x86_64 allmodconfig build compiles."""
    return sorted(f for f in all_c_files(layout, base_commit, commit, pattern)
                  if x86_buildable(f))


def other_arch_files(layout: Layout, base_commit: str, commit: str,
                     pattern: str | None) -> dict[str, list[str]]:
    """arch/<dir> -> the C files of other architectures the x86_64 build skips."""
    out: dict[str, list[str]] = {}
    for f in sorted(all_c_files(layout, base_commit, commit, pattern)):
        if not x86_buildable(f):
            out.setdefault(arch_of(f), []).append(f)
    return out


def x86_buildable(path: str) -> bool:
    """Other architectures' code cannot be compiled by an x86_64 build."""
    return not (path.startswith("arch/") and not path.startswith("arch/x86/"))


def arch_of(path: str) -> str:
    return path.split("/")[1]


def cross_compiler(arch: str) -> CrossArch | None:
    """How to compile arch/<arch>, if that is known and its compiler installed."""
    cross = CROSS.get(arch)
    if cross and shutil.which(cross.prefix + "gcc"):
        return cross
    return None


def object_of(path: str) -> str:
    return path[:-2] + ".o"


def compile_objects(layout: Layout, obj: Path, files: list[str], log, env: dict[str, str],
                    on_line=None, cross: CrossArch | None = None) -> list[str]:
    """The files whose objects one make (-k: on after a failure) did not write."""
    for path in files:
        (obj / object_of(path)).unlink(missing_ok=True)
    try:
        kbuild.run_make(layout, obj, [f"-j{os.cpu_count() or 1}", "-k", *cross_args(cross),
                                      *map(object_of, files)], log, env, on_line=on_line)
    except kbuild.BuildError:
        pass  # the missing objects name what failed
    return [path for path in files if not (obj / object_of(path)).exists()]


def cross_args(cross: CrossArch | None) -> list[str]:
    if cross is None:
        return ["CC=ccache gcc"]
    return [f"ARCH={cross.arch}", f"CROSS_COMPILE={cross.prefix}",
            f"CC=ccache {cross.prefix}gcc"]


def check(layout: Layout, kernel_name: str, pattern: str | None) -> CompileResult:
    info = source.ensure_pristine(layout)
    kernel = series.resolve(layout, kernel_name)
    obj = layout.allmod_objects
    obj.mkdir(parents=True, exist_ok=True)
    log_path = obj / f"compile-check-{slug(kernel.name)}.log"
    env = kbuild.build_env(layout)
    compiled = 0
    total = 0

    def say_compiled(line: str) -> None:
        nonlocal compiled
        if line.lstrip().startswith("CC"):
            compiled += 1
            progress.say(f"  compiled {compiled}/{total}: {line.split()[-1]}")

    with kbuild.build_lock(layout), open(log_path, "w") as log:
        started = time.monotonic()  # the time compiling, not the wait for the lock
        commit = series.checkout(layout, info, kernel)
        files = files_to_compile(layout, info.tag, commit, pattern)
        others = other_arch_files(layout, info.tag, commit, pattern)
        cross_checked = {arch: paths for arch, paths in others.items() if cross_compiler(arch)}
        unchecked = [f for arch, paths in others.items() if arch not in cross_checked
                     for f in paths]
        total = len(files) + sum(len(paths) for paths in cross_checked.values())
        progress.say(f"compile-check {kernel.name}: {len(files)} C files under x86_64 "
                     f"{CONFIG_TARGET}, log: {log_path}")
        for arch, paths in cross_checked.items():
            progress.say(f"  and {len(paths)} of arch/{arch} under {arch} {CONFIG_TARGET} "
                         f"({CROSS[arch].prefix}gcc): {' '.join(paths)}")
        if unchecked:
            progress.say(f"  NOT CHECKED (other architectures, no cross compiler set up "
                         f"or installed): {' '.join(unchecked)}")
        kbuild.run_make(layout, obj, [CONFIG_TARGET], log, env)
        kbuild.run_make(layout, obj, [f"-j{os.cpu_count() or 1}", "CC=ccache gcc", "prepare"],
                        log, env)
        failed = compile_objects(layout, obj, files, log, env, on_line=say_compiled)
        cross_failed: dict[str, list[str]] = {}
        for arch, paths in cross_checked.items():
            cross = CROSS[arch]
            cross_obj = layout.build / f"obj-allmod-{arch}"
            cross_obj.mkdir(parents=True, exist_ok=True)
            log.write(f"# arch/{arch} files, ARCH={cross.arch} CROSS_COMPILE={cross.prefix}\n")
            kbuild.run_make(layout, cross_obj, [f"ARCH={cross.arch}",
                                                f"CROSS_COMPILE={cross.prefix}",
                                                CONFIG_TARGET], log, env)
            kbuild.run_make(layout, cross_obj, [f"-j{os.cpu_count() or 1}", *cross_args(cross),
                                                "prepare"], log, env)
            cross_failed[arch] = compile_objects(layout, cross_obj, paths, log, env,
                                                 on_line=say_compiled, cross=cross)
        # A file that does not compile on the pristine tree either is not
        # part of this config (a pattern can match such files), not a fault
        # of the series.
        broken_upstream = []
        if failed or any(cross_failed.values()):
            source.git(layout.src, "checkout", "-q", "-f", "--detach", info.tag)
            log.write("# the failures again, on the pristine tree\n")
            if failed:
                broken_upstream = compile_objects(layout, obj, failed, log, env)
                failed = [f for f in failed if f not in broken_upstream]
            for arch, paths in cross_failed.items():
                if not paths:
                    continue
                upstream = compile_objects(layout, layout.build / f"obj-allmod-{arch}", paths,
                                           log, env, cross=CROSS[arch])
                broken_upstream += upstream
                failed += [f for f in paths if f not in upstream]
    modules = (obj / ".config").read_text().count("=m\n")
    all_files = files + [f for paths in cross_checked.values() for f in paths]
    result = CompileResult(kernel.name, CONFIG_TARGET, tuple(all_files), tuple(failed),
                           tuple(broken_upstream), modules,
                           str(log_path), round(time.monotonic() - started, 1),
                           cross_checked=cross_checked, unchecked=tuple(unchecked))
    if kernel.name in series.SERIES_NAMES:
        keep(layout, kernel, info, pattern, result)
    return result


def keep(layout: Layout, kernel: series.Kernel, info: source.SourceInfo, pattern: str | None,
         result: CompileResult) -> Path:
    """Record the result beside the series, replacing an older one for the same pattern."""
    path = layout.series_dir(kernel.name) / RESULT_FILE
    entries = json.loads(path.read_text()) if path.exists() else []
    entries = [e for e in entries if e.get("grep") != (pattern or "")]
    entries.append({"kernel": kernel.name, "patch_digest": kernel.patch_digest,
                    "package_version": info.package_version, "grep": pattern or "",
                    "config": result.config, "modules_enabled": result.modules_enabled,
                    "files": list(result.files), "failed": list(result.failed),
                    "not_in_config": list(result.not_in_config),
                    "cross_checked": result.cross_checked, "unchecked": list(result.unchecked),
                    "seconds": result.seconds,
                    "measured": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    path.write_text(json.dumps(sorted(entries, key=lambda e: e["grep"]), indent=1) + "\n")
    return path
