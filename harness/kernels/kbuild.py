"""Configure and build a kernel image, cached by what went into it.

One O= folder per flavour is reused across kernels so that switching between
kernels recompiles only what changed; ccache (cache outside the repo) covers
the rest. A built image lives in build/images/<kernel>-<flavour>-<key>/ and is
never rebuilt while its key (source version, patch contents, config
fragments, compiler) is unchanged.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import resource
import shutil
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from harness import procgroup, progress
from harness.kernels import series, source
from harness.layout import REPO_ROOT, Layout

FLAVOURS = ("perf", "debug", "sanitize", "faults", "kcsan")
DEFAULT_FLAVOURS = ("perf", "debug")  # sanitize is slow to build and boot: asked for by name
LOCKDEP_FLAVOURS = ("debug", "sanitize", "faults", "kcsan")  # boots whose /proc/lockdep is dumped
# A flavour that extends another: its fragment is applied after the other's.
# faults is sanitize plus fault injection (configs/faults.config).
BASE_FLAVOUR = {"faults": "sanitize"}
# Patches a flavour applies after the kernel's own, as a series of their own.
# The perf flavour carries the tcg-cs lock-class markers (one `cs cmpq` at
# each lock initialisation, none inside a critical section; their cost is
# measured in NOTES.md, "Issue 30"), so the tcg-cs boots run the perf image
# itself and a run of four kernels builds 8 images, not 12. The image key
# covers them as it covers the kernel's patches.
MARKER_SERIES = "tcg-cs"
MARKER_PATCH = (REPO_ROOT / "tcg-cs" /
                "0001-tcg-cs-mark-lock-classes-and-hash-tables-for-the-cri.patch")
FLAVOUR_PATCHES = {"perf": (series.Patch(MARKER_SERIES, 1, MARKER_PATCH),)}
BUILD_ENV = {
    # Fixed so that ccache hits and rebuilt images are comparable.
    "KBUILD_BUILD_TIMESTAMP": "1970-01-01",
    "KBUILD_BUILD_USER": "inode-duel",
    "KBUILD_BUILD_HOST": "inode-duel",
}


class BuildError(Exception):
    pass


@dataclass(frozen=True)
class KernelImage:
    kernel: str  # name as asked for, e.g. piggin@3
    flavour: str
    key: str
    directory: Path

    @property
    def bzimage(self) -> Path:
        return self.directory / "bzImage"

    @property
    def config(self) -> Path:
        return self.directory / "config"

    @property
    def vmlinux(self) -> Path:
        """The ELF with debug information, kept only for flavours built with it (kcsan)."""
        return self.directory / "vmlinux"

    @property
    def meta(self) -> dict:
        return json.loads((self.directory / "meta.json").read_text())


# Steps (CC/AS/LD/AR lines) of a build from an empty object folder, counted
# here on linux-source-6.1 6.1.192-3: the progress of a machine's first build.
TYPICAL_FULL_BUILD_STEPS = {"perf": 1438, "debug": 1474}


def fragments(layout: Layout, flavour: str) -> list[Path]:
    if flavour not in FLAVOURS:
        raise BuildError(f"unknown flavour {flavour!r}: expected one of {', '.join(FLAVOURS)}")
    base = BASE_FLAVOUR.get(flavour)
    own = [layout.configs / f"{flavour}.config"]
    return (fragments(layout, base) + own) if base else [layout.configs / "guest.config"] + own


def flavoured(kernel: series.Kernel, flavour: str) -> series.Kernel:
    """The kernel as a flavour builds it: its own patches, then the flavour's."""
    return series.Kernel(kernel.name, kernel.patches + FLAVOUR_PATCHES.get(flavour, ()))


def own_patches(meta: dict) -> list[dict]:
    """The kernel's own patches of an image's meta.json (not its flavour's)."""
    return [p for p in meta["patches"] if p["series"] != MARKER_SERIES]


def patches_digest(patches: list[dict]) -> str:
    """series.Kernel.patch_digest, from a meta.json patch list: two images whose own
    patches have one digest were built from the same code."""
    h = hashlib.sha256()
    for patch in patches:
        h.update(f"{patch['series']}/{patch['file']}:{patch['sha256']}\n".encode())
    return h.hexdigest()


@dataclass(frozen=True)
class ImageIdentity:
    """What a record of boots (a soak summary) keeps of the image they booted: the
    key tells the very image; the digest of the kernel's own patches tells the same
    code built another way (another configuration or compiler). The commit is the
    source tree's: two trees that build one key commit the patches at other times."""
    key: str
    commit: str
    patches: int  # the kernel's own patches, not its flavour's
    patches_digest: str  # first 16 hex digits of patches_digest


def identity(image: KernelImage) -> ImageIdentity:
    meta = image.meta
    own = own_patches(meta)
    return ImageIdentity(image.key, meta["commit"], len(own), patches_digest(own)[:16])


def compiler_version() -> str:
    return subprocess.run(["gcc", "--version"], capture_output=True, text=True,
                          check=True).stdout.splitlines()[0]


def image_key(info: source.SourceInfo, kernel: series.Kernel, flavour: str,
              fragment_paths: list[Path]) -> str:
    h = hashlib.sha256()
    h.update(f"{info.package_version}\n{kernel.patch_digest}\n{flavour}\n".encode())
    for path in fragment_paths:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    h.update(compiler_version().encode())
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class ConfigProblem:
    fragment: Path
    lineno: int
    wanted: str
    got: str


def parse_fragment(path: Path) -> dict[str, tuple[int, str]]:
    """CONFIG_X -> (line, value); 'n' for '# CONFIG_X is not set'."""
    wanted = {}
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        unset = re.fullmatch(r"# (CONFIG_\w+) is not set", line)
        if unset:
            wanted[unset.group(1)] = (lineno, "n")
        elif line and not line.startswith("#"):
            match = re.fullmatch(r"(CONFIG_\w+)=(.*)", line)
            if not match:
                raise BuildError(f"{path}:{lineno}: not a config line: {line}")
            wanted[match.group(1)] = (lineno, match.group(2))
    return wanted


def config_problems(fragment_paths: list[Path], dotconfig: str) -> list[ConfigProblem]:
    """Fragment lines that did not survive into .config (unmet dependencies)."""
    have = dict(re.findall(r"^(CONFIG_\w+)=(.*)$", dotconfig, re.M))
    problems = []
    for path in fragment_paths:
        for option, (lineno, value) in parse_fragment(path).items():
            got = have.get(option, "n")
            if got != value:
                problems.append(ConfigProblem(path, lineno, f"{option}={value}", got))
    return problems


def has_debug_info(dotconfig: str) -> bool:
    return re.search(r"^CONFIG_DEBUG_INFO=y$", dotconfig, re.M) is not None


def is_built(image: KernelImage) -> bool:
    return (image.directory / "meta.json").exists() and image.bzimage.exists()


def run_make(layout: Layout, obj: Path, args: list[str], log, env: dict[str, str],
             on_line=None) -> float:
    """Run make in the tree; returns the CPU seconds it and its children used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = ["make", "-C", str(layout.src), f"O={obj}", *args]
    log.write(f"$ {' '.join(cmd)}\n")
    log.flush()
    # Its own process group, stopped with us: a make left running after an
    # interrupted compare would build beside the next one.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors="replace", env=env, start_new_session=True)
    tail: list[str] = []
    try:
        for line in proc.stdout:
            log.write(line)
            tail = (tail + [line.rstrip()])[-25:]
            if on_line:
                on_line(line)
    except BaseException:
        procgroup.stop(proc)
        raise
    if proc.wait() != 0:
        log.flush()
        raise BuildError(f"{' '.join(args[:1])} failed (exit {proc.returncode}); "
                         f"log: {log.name}\n" + "\n".join(tail))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


MIN_RECORDED_STEPS = 100  # an incremental build's steps kept as the next one's estimate


@dataclass
class BuildProgress:
    """Counts the compile steps of a make's output; every 30 s, how far it is."""
    label: str  # kernel/flavour
    kind: str  # full or incremental
    expected: int  # steps of the last build of this kind, 0 when unknown
    started: float
    seen: int = 0
    last_report: float = 0.0

    def line(self, text: str, now: float) -> str | None:
        if re.match(r"\s+(CC|AS|LD|AR)\s", text):
            self.seen += 1
        if now - self.last_report < 30:
            return None
        self.last_report = now
        elapsed = now - self.started
        if self.expected and self.seen > self.expected:
            return (f"  {self.label}: {self.seen} steps, more than the {self.expected} of the "
                    f"last {self.kind} build ({progress.format_duration(elapsed)})")
        if self.expected:
            done = min(self.seen / self.expected, 0.99)
            left = f", about {progress.format_duration(elapsed / done * (1 - done))} left" \
                if done else ""
            return f"  {self.label}: {self.seen}/{self.expected} steps ({self.kind} build){left}"
        return (f"  {self.label}: {self.seen} steps (first {self.kind} build, "
                f"{progress.format_duration(elapsed)})")


def build(layout: Layout, kernel_name: str, flavour: str, jobs: int | None = None,
          build_missing: bool = True) -> KernelImage:
    """Build (or find already built) the image of one kernel in one flavour;
    build_missing=False: find it or fail, naming it (--no-build)."""
    return build_kernel(layout, series.resolve(layout, kernel_name), flavour, jobs=jobs,
                        build_missing=build_missing)


@contextmanager
def build_lock(layout: Layout):
    """One kernel build at a time on this machine, whoever asks."""
    layout.images.mkdir(parents=True, exist_ok=True)
    with open(layout.build_lock, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def build_env(layout: Layout, environ: dict[str, str] | None = None) -> dict[str, str]:
    """Reproducible builds through the compiler cache outside the repo.

    With DISTCC_HOSTS set, what misses the cache is compiled over distcc:
    ccache runs `distcc gcc` for it (CCACHE_PREFIX), so a hit never leaves
    this host and ccache's hashes, and the image keys, stay as they were.
    The distcc hosts need the same Debian gcc as this one.
    """
    layout.ccache.mkdir(parents=True, exist_ok=True)
    base = os.environ if environ is None else environ
    env = dict(base, **BUILD_ENV, CCACHE_DIR=str(layout.ccache),
               CCACHE_BASEDIR=str(layout.src), CCACHE_NOHASHDIR="1",
               CCACHE_MAXSIZE=base.get("CCACHE_MAXSIZE", "20G"))
    if env.get("DISTCC_HOSTS"):
        env["CCACHE_PREFIX"] = "distcc"
    return env


def distcc_slots(env: dict[str, str]) -> int:
    """Compile slots DISTCC_HOSTS offers (`distcc -j`: the sum of each host's limit)."""
    if not env.get("DISTCC_HOSTS"):
        return 0
    if not shutil.which("distcc"):
        raise BuildError("DISTCC_HOSTS is set but distcc is not installed: apt-get install distcc")
    out = subprocess.run(["distcc", "-j"], env=env, capture_output=True, text=True)
    if out.returncode != 0 or not out.stdout.strip().isdigit():
        raise BuildError(f"DISTCC_HOSTS={env['DISTCC_HOSTS']!r}: distcc -j says "
                         f"{(out.stdout + out.stderr).strip()!r}")
    return int(out.stdout)


def make_jobs(env: dict[str, str]) -> int:
    """make -j: this host's cores, plus distcc's slots when it compiles elsewhere too
    (preprocessing, linking and cache hits stay local)."""
    return (os.cpu_count() or 1) + distcc_slots(env)


def source_for_key(build_missing: bool) -> source.SourceInfo:
    """The source an image key names: the package's version is enough, so no tree
    is extracted until something is built (it is installed first when building)."""
    version = source.ensure_package() if build_missing else source.installed_package_version()
    if version is None:
        raise BuildError(f"{source.PACKAGE} is not installed: the image keys cannot be "
                         f"computed (install it, or build)")
    return source.SourceInfo(version, "", f"pristine/{version}")


def planned_image(layout: Layout, kernel: series.Kernel, flavour: str,
                  extra_fragments: tuple[Path, ...] = (),
                  build_missing: bool = True) -> KernelImage:
    """The image of a kernel in a flavour, built or not: its key and folder (an
    already built twin's, if the same patches were built under another name)."""
    info = source_for_key(build_missing)
    frags = fragments(layout, flavour) + list(extra_fragments)
    key = image_key(info, flavoured(kernel, flavour), flavour, frags)
    image = KernelImage(kernel.name, flavour, key, layout.image_dir(kernel.name, flavour, key))
    if is_built(image):
        return image
    # The same patches under another name (piggin@0 is base): the same image.
    for directory in sorted(layout.images.glob(f"*-{flavour}-{key}")):
        twin = KernelImage(kernel.name, flavour, key, directory)
        if is_built(twin):
            return twin
    return image


def build_kernel(layout: Layout, kernel: series.Kernel, flavour: str,
                 extra_fragments: tuple[Path, ...] = (), jobs: int | None = None,
                 build_missing: bool = True) -> KernelImage:
    """Build any kernel: a named one, or a test kernel with patches and config of its own."""
    image = planned_image(layout, kernel, flavour, extra_fragments, build_missing)
    if is_built(image):
        return image
    if not build_missing:
        raise BuildError(f"no image of {kernel.name}/{flavour} (key {image.key}) in "
                         f"{layout.images}: expected {image.directory}; nothing is built "
                         f"(--no-build)")
    with build_lock(layout):
        if is_built(image):
            return image
        info = source.ensure_pristine(layout)
        return _build_locked(layout, info, kernel, flavour,
                             fragments(layout, flavour) + list(extra_fragments), image, jobs)


def image_meta(name: str, flavour: str, key: str, info: source.SourceInfo, commit: str,
               built: series.Kernel) -> dict:
    """What an image is made of (its meta.json, without the build's own figures)."""
    return {"kernel": name, "flavour": flavour, "key": key,
            "package_version": info.package_version, "kernel_version": info.kernel_version,
            "commit": commit,
            "patches": [{"series": p.series, "file": p.path.name, "sha256": p.sha256,
                         "subject": p.subject} for p in built.patches],
            "compiler": compiler_version()}


def _build_locked(layout: Layout, info: source.SourceInfo, kernel: series.Kernel,
                  flavour: str, frags: list[Path], image: KernelImage,
                  jobs: int | None) -> KernelImage:
    started = time.monotonic()
    built = flavoured(kernel, flavour)
    commit = series.checkout(layout, info, built)
    obj = layout.objects / flavour
    obj.mkdir(parents=True, exist_ok=True)
    staging = image.directory.with_name(image.directory.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    env = build_env(layout)
    jobs = jobs or make_jobs(env)
    merged = staging / "fragments.config"
    merged.write_text("".join(p.read_text() for p in frags))

    # Estimate progress from the step count of the last build of the same kind:
    # one from an empty O= folder compiles everything; an incremental one (the
    # folder holds another kernel's objects) recompiles what the patches touch,
    # about half the tree for every series here, as each changes fs.h.
    incremental = (obj / "vmlinux").exists()
    kind = "incremental" if incremental else "full"
    counter_file = layout.objects / f".{flavour}-{kind}-build-steps"
    expected = int(counter_file.read_text()) if counter_file.exists() else (
        0 if incremental else TYPICAL_FULL_BUILD_STEPS.get(flavour, 0))
    meter = BuildProgress(f"{kernel.name}/{flavour}", kind, expected, started)

    def count(line: str) -> None:
        message = meter.line(line, time.monotonic())
        if message:
            progress.say(message)

    extra = len(built.patches) - len(kernel.patches)
    progress.say(f"building {kernel.name}/{flavour} ({len(kernel.patches)} patches"
                 + (f" + {extra} of the flavour" if extra else "") + ", "
                 f"commit {commit[:12]}, -j{jobs}"
                 + (f" over distcc: {env['DISTCC_HOSTS']}" if "CCACHE_PREFIX" in env else "")
                 + f"), log: {staging / 'build.log'}")
    with open(staging / "build.log", "w") as log:
        run_make(layout, obj, ["allnoconfig", f"KCONFIG_ALLCONFIG={merged}"], log, env)
        problems = config_problems(frags, (obj / ".config").read_text())
        if problems:
            raise BuildError("config fragments not honoured (unmet dependencies?):\n" + "\n".join(
                f"  {p.fragment}:{p.lineno}: {p.wanted} but .config has {p.got}"
                for p in problems))
        cpu_s = run_make(layout, obj, [f"-j{jobs}", "CC=ccache gcc", "bzImage"], log, env,
                         on_line=count)
    # A relink that compiled next to nothing says nothing of the next build's size.
    if not incremental or meter.seen >= MIN_RECORDED_STEPS:
        counter_file.write_text(str(meter.seen))
    shutil.copy2(obj / "arch/x86/boot/bzImage", staging / "bzImage")
    shutil.copy2(obj / ".config", staging / "config")
    shutil.copy2(obj / "System.map", staging / "System.map")
    if has_debug_info((obj / ".config").read_text()):
        # Its line tables turn a report's frames into file:line (kcsan_origin.py);
        # the object folder's copy is overwritten by the next kernel's build.
        shutil.copy2(obj / "vmlinux", staging / "vmlinux")
    duration = time.monotonic() - started
    meta = dict(image_meta(kernel.name, flavour, image.key, info, commit, built),
                build_seconds=round(duration, 1),
                build_kind=kind,  # full (empty object folder) or incremental: buildtime.py
                jobs=jobs,
                # CPU of make and the compilers: over build_seconds, the cores the
                # build kept busy (what is left for boots beside it)
                cpu_seconds=round(cpu_s, 1),
                built_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    (staging / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    shutil.rmtree(image.directory, ignore_errors=True)
    staging.rename(image.directory)
    progress.say(f"built {kernel.name}/{flavour} in {progress.format_duration(duration)}")
    return image
