"""What a workload brings into the guest: its programs and data, resolved on the host.

A declaration names host binaries (`binaries`), Debian packages
(`packages`) and data files (`files`); the run line names programs of
workloads/src and the harness's guest scripts. Each becomes guest files:
the program or file itself, every file of a package except its
documentation, and the shared libraries of every dynamically linked
program among them (found with ldd, loader included). Host paths are
taken the way the host resolves them (/bin is /usr/bin on a merged-/usr
system); the guest keeps those paths.

binaries and files follow one rule (guest/workloads.py): absolute, kept
at that path in the guest, except under the folders the guest does not
take from its image (RESERVED); or relative to the declaration's own
folder, put in /usr/local/bin (binaries) or /workloads (files).

Every error names the declaration's file and line. What the guest will
do with these files (PATH, interpreters) is guest/check.py's.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.guest import protocol
from harness.guest.workloads import Declared, Workload, WorkloadError

# Package files the guest never needs.
SKIPPED_PREFIXES = ("/usr/share/doc/", "/usr/share/doc-base/", "/usr/share/man/",
                    "/usr/share/info/", "/usr/share/lintian/", "/usr/share/bug/",
                    "/usr/share/bash-completion/", "/usr/share/locale/", "/usr/share/menu/")
LOCAL_BIN = "/usr/local/bin"  # where relative binaries go
DATA_DIR = "/workloads"  # where relative files go
# Guest folders that are not the image's: an absolute binary or file cannot
# be kept there (/tmp is a link to the scratch directory of the filesystem
# under test, the others are mounted over).
RESERVED = ("/tmp", protocol.WORK_DIR, protocol.HARNESS_DIR, "/proc", "/sys", "/dev")
RUN_LINE_WORD = re.compile(r"[A-Za-z0-9_.+/-]+")


@dataclass(frozen=True)
class GuestFile:
    path: str  # absolute guest path
    mode: int  # with the file type: S_IFREG, S_IFDIR or S_IFLNK
    data: bytes  # content; a symbolic link's target
    origin: str  # what brought it, for messages: "binaries (x.wl:7)"


def _where(workload: Workload, item: Declared) -> str:
    return f"{workload.path}:{item.lineno}"


def regular(path: str, host: Path, origin: str, mode: int | None = None) -> GuestFile:
    """A host file's content (symbolic links followed) at a guest path."""
    perm = stat.S_IMODE(host.stat().st_mode) if mode is None else mode
    return GuestFile(path, stat.S_IFREG | perm, host.read_bytes(), origin)


def is_elf(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


def shared_libraries(binary: Path) -> list[Path]:
    """The libraries the dynamic loader would map for binary, loader included;
    none for a static binary."""
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True)
    if "not a dynamic executable" in out.stdout + out.stderr or \
            "statically linked" in out.stdout:
        return []
    if out.returncode != 0:
        raise WorkloadError(f"ldd {binary} failed: {out.stderr.strip()}")
    libs = []
    for line in out.stdout.splitlines():
        if "not found" in line:
            raise WorkloadError(f"{binary}: {line.strip()}")
        found = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
        if found:
            libs.append(Path(found.group(1)))
    return libs


def libraries_of(host: Path, origin: str) -> list[GuestFile]:
    """The shared libraries of a host program, at the paths ldd names them."""
    if not is_elf(host):
        return []
    return [regular(str(lib), lib, f"a library of {host} ({origin})", 0o755)
            for lib in shared_libraries(host)]


def host_path(path: str) -> str:
    """A path as the host resolves its directories: /bin/x -> /usr/bin/x on merged /usr."""
    parent, name = os.path.split(path)
    return os.path.join(os.path.realpath(parent), name)


# -- binaries and files: one path rule


def declared_host_path(workload: Workload, key: str, item: Declared) -> Path:
    """A binaries or files path on the host: absolute, or relative to the
    declaration's folder (parse refuses one that leaves it)."""
    path = Path(item.value)
    return path if path.is_absolute() else workload.folder / path


def _missing(workload: Workload, key: str, item: Declared, host: Path) -> str:
    hint = "" if Path(item.value).is_absolute() else f" (relative to {workload.folder})"
    return f"{_where(workload, item)}: {key}: {item.value} does not exist{hint}"


def binary_guest_path(item: Declared, host: Path) -> str:
    """Absolute: the same path in the guest; relative: /usr/local/bin/NAME."""
    return host_path(str(host)) if Path(item.value).is_absolute() \
        else f"{LOCAL_BIN}/{host.name}"


def _reserved(workload: Workload, key: str, item: Declared, guest: str) -> str:
    """Why an absolute path cannot be kept in the guest ("" if it can)."""
    folder = next((r for r in RESERVED if guest == r or guest.startswith(r + "/")), "")
    if not folder:
        return ""
    return (f"{_where(workload, item)}: {key}: {item.value} would be {guest} in the guest, "
            f"but the guest's {folder} is not the image's (/tmp is the scratch directory of "
            f"the filesystem under test): copy it beside the .wl file and declare it "
            f"relative, or keep it in another folder")


def _binary(workload: Workload, item: Declared) -> list[GuestFile]:
    host = declared_host_path(workload, "binaries", item)
    where = _where(workload, item)
    if not host.exists():
        raise WorkloadError(_missing(workload, "binaries", item, host))
    if not host.is_file() or not os.access(host, os.X_OK):
        raise WorkloadError(f"{where}: binaries: {item.value} is not an executable file")
    guest = binary_guest_path(item, host)
    if _reserved(workload, "binaries", item, guest):
        raise WorkloadError(_reserved(workload, "binaries", item, guest))
    origin = f"binaries ({where})"
    return [regular(guest, host.resolve(), origin)] + libraries_of(host, origin)


def _data_file(workload: Workload, item: Declared) -> list[GuestFile]:
    """Absolute: the same path in the guest; relative: /workloads/PATH."""
    host = declared_host_path(workload, "files", item)
    if not host.is_file():
        raise WorkloadError(_missing(workload, "files", item, host))
    guest = host_path(str(host)) if Path(item.value).is_absolute() \
        else f"{DATA_DIR}/{item.value}"
    if _reserved(workload, "files", item, guest):
        raise WorkloadError(_reserved(workload, "files", item, guest))
    return [regular(guest, host, f"files ({_where(workload, item)})", 0o644)]


def _each(items, resolve) -> list[GuestFile]:
    """Every item's files; the problems of every item raised together."""
    out: list[GuestFile] = []
    problems: list[str] = []
    for item in items:
        try:
            out += resolve(item)
        except WorkloadError as err:
            problems += err.problems
    if problems:
        raise WorkloadError(problems)
    return out


def binary_files(workload: Workload) -> list[GuestFile]:
    return _each(workload.binaries, lambda item: _binary(workload, item))


# -- packages


def package_installed(name: str) -> bool:
    out = subprocess.run(["dpkg-query", "-W", "-f=${Status}", name], capture_output=True,
                         text=True)
    return out.returncode == 0 and out.stdout.strip() == "install ok installed"


def package_installable(name: str) -> bool:
    """apt knows a candidate version of it (after apt-get update)."""
    out = subprocess.run(["apt-cache", "policy", name], capture_output=True, text=True)
    found = re.search(r"Candidate:\s*(\S+)", out.stdout)
    return bool(found) and found.group(1) != "(none)"


def package_paths(name: str) -> list[str]:
    out = subprocess.run(["dpkg-query", "-L", name], capture_output=True, text=True)
    if out.returncode != 0:
        raise WorkloadError(f"dpkg-query -L {name}: {out.stderr.strip()}")
    return [line for line in out.stdout.splitlines()
            if line.startswith("/") and line != "/." and not line.startswith(SKIPPED_PREFIXES)]


def package_files(workload: Workload) -> list[GuestFile]:
    out: list[GuestFile] = []
    for item in workload.packages:
        where = _where(workload, item)
        if not package_installed(item.value):
            raise WorkloadError(f"{where}: packages: {item.value} is not installed: `make deps` "
                                f"installs the packages workloads declare")
        origin = f"package {item.value} ({where})"
        for path in package_paths(item.value):
            host = Path(path)
            guest = host_path(path)
            if host.is_dir():
                # A directory, or a link to one (/lib on merged /usr): its
                # files come at their resolved paths.
                if not host.is_symlink():
                    out.append(GuestFile(guest, stat.S_IFDIR | 0o755, b"", origin))
            elif host.is_symlink():
                out.append(GuestFile(guest, stat.S_IFLNK | 0o777,
                                     os.readlink(host).encode(), origin))
            elif host.is_file():
                out.append(regular(guest, host, origin))
                if os.access(host, os.X_OK) or ".so" in host.name:
                    out += libraries_of(host, origin)
    return out


# -- data files and programs named in the run line


def data_files(workload: Workload) -> list[GuestFile]:
    return _each(workload.files, lambda item: _data_file(workload, item))


def programs_named(workload: Workload, programs: dict[str, GuestFile]) -> list[GuestFile]:
    """The programs of /bin (ours and the harness's scripts) the run line names."""
    words = set(RUN_LINE_WORD.findall(workload.run))
    return [programs[w] for w in sorted(words) if w in programs]


def workload_files(workload: Workload, programs: dict[str, GuestFile]) -> list[GuestFile]:
    """Everything one workload needs in the guest besides the harness itself."""
    return (programs_named(workload, programs) + binary_files(workload)
            + package_files(workload) + data_files(workload))


def declared_packages(workloads: list[Workload]) -> list[str]:
    return list(dict.fromkeys(p.value for w in workloads for p in w.packages))


def check_packages(workloads: list[Workload]) -> tuple[list[str], list[str], set[str]]:
    """Packages installed, or installable (notes, and the set of them); anything
    else is a problem."""
    notes, problems, waiting = [], [], set()
    for workload in workloads:
        for item in workload.packages:
            if package_installed(item.value):
                continue
            if package_installable(item.value):
                waiting.add(item.value)
                notes.append(f"{_where(workload, item)}: package {item.value} is not installed "
                             f"yet: `make deps` (and every make target that boots) installs it")
            else:
                problems.append(f"{_where(workload, item)}: packages: {item.value} is not "
                                f"installed and apt knows no such package (a typo? "
                                f"apt-get update?)")
    return notes, problems, waiting
