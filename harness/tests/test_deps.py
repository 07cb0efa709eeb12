"""What a workload brings into the guest, and the cell keys that follow from it.

These read the host (files, ldd, dpkg-query, apt-cache policy) and install
nothing; busybox-static and coreutils are on every machine the harness runs on.
"""

import shutil
import stat
from pathlib import Path

import pytest

from harness import host
from harness.guest import check, deps, initramfs, workloads
from harness.kernels import kbuild
from harness.layout import REPO_ROOT, Layout
from harness.run import matrix
from harness.tests import shipped

BASE = """\
name     = {name}
summary  = a workload of the test
run      = {run}
output   = none
fs       = ext4
procs    = 1
"""


def declare(directory: Path, name: str, run: str = "true", extra: str = "") -> workloads.Workload:
    path = directory / f"{name}.wl"
    path.write_text(BASE.format(name=name, run=run) + extra)
    return workloads.parse(path)


def test_binary_comes_with_its_libraries_at_its_host_path(tmp_path):
    w = declare(tmp_path, "env", extra="binaries = /usr/bin/env\n")
    files = {f.path: f for f in deps.binary_files(w)}
    assert files["/usr/bin/env"].data == Path("/usr/bin/env").read_bytes()
    assert stat.S_ISREG(files["/usr/bin/env"].mode)
    libc = [p for p in files if "/libc.so" in p]
    assert libc, "ldd found no libc for a dynamic binary"
    assert any("ld-linux" in p for p in files), "the loader is missing"
    assert all(f.origin.endswith("env.wl:7)") or f.origin.endswith("env.wl:7))")
               for f in files.values())


def test_relative_binary_goes_to_usr_local_bin(tmp_path):
    (tmp_path / "bin").mkdir()
    shutil.copy("/bin/busybox", tmp_path / "bin" / "mytool")  # static: no libraries
    w = declare(tmp_path, "mine", extra="binaries = bin/mytool\n")
    assert [f.path for f in deps.binary_files(w)] == ["/usr/local/bin/mytool"]


@pytest.mark.parametrize("extra, message", [
    ("binaries = /usr/bin/no-such-benchmark\n",
     "nope.wl:7: binaries: /usr/bin/no-such-benchmark does not exist"),
    ("binaries = bin/missing\n", "nope.wl:7: binaries: bin/missing does not exist \\(relative"),
    ("binaries = /etc/passwd\n", "nope.wl:7: binaries: /etc/passwd is not an executable"),
    ("files = data/none.txt\n", "nope.wl:7: files: .*data/none.txt does not exist"),
])
def test_missing_programs_and_files_name_file_and_line(tmp_path, extra, message, guest):
    w = declare(tmp_path, "nope", extra=extra)
    base, programs, _ = guest
    with pytest.raises(workloads.WorkloadError, match=message):
        check.check([w], base, programs)


def test_package_that_cannot_be_installed_names_file_and_line(tmp_path, guest):
    w = declare(tmp_path, "nope", extra="packages = busybox-static inode-duel-no-such-pkg\n")
    base, programs, _ = guest
    with pytest.raises(workloads.WorkloadError,
                       match="nope.wl:7: packages: inode-duel-no-such-pkg is not installed and "
                             "apt knows no such package"):
        check.check([w], base, programs)
    with pytest.raises(workloads.WorkloadError,
                       match="nope.wl:7: packages: inode-duel-no-such-pkg is not installed: "
                             "`make deps`"):
        deps.package_files(w)


def test_package_files_without_documentation(tmp_path):
    w = declare(tmp_path, "bb", extra="packages = busybox-static\n")
    paths = {f.path for f in deps.package_files(w)}
    # dpkg lists /bin/busybox; on a merged-/usr host that is /usr/bin/busybox.
    assert deps.host_path("/bin/busybox") in paths
    assert not any(p.startswith("/usr/share/doc/") for p in paths)
    assert deps.declared_packages([w, w]) == ["busybox-static"]


# -- cell keys: a workload's own programs and data, not the whole initramfs


@pytest.fixture(scope="module")
def helper(tmp_path_factory) -> Path:
    return initramfs.compile_helper(tmp_path_factory.mktemp("helper"))


@pytest.fixture
def guest(tmp_path, helper):
    """The harness's part of the guest and a stand-in for a compiled program."""
    program = tmp_path / "createunlink"
    program.write_bytes(b"\x7fELF pretend static program")
    program.chmod(0o755)
    return initramfs.harness_files(helper), initramfs.program_files([program]), program


def digests(tmp_path, guest, declared: list[workloads.Workload]) -> dict[str, str]:
    base, programs, _ = guest
    return initramfs.workload_digests(base, {w.name: deps.workload_files(w, programs)
                                             for w in declared})


def keys(digest_by_workload, declared) -> dict[tuple, str]:
    m = matrix.Matrix(kernels=["mainline"], cpus=[1, 2], workloads=declared, repeat=1, cs_repeat=0,
                      icount_repeat=0, flavours=("perf",))
    image = kbuild.KernelImage("mainline", "perf", "k1", Path("/nowhere"))
    boots = matrix.plan_boots(m, {("mainline", "perf"): image}, digest_by_workload,
                              host.Machine("cpu", 2, "tcg"))
    return {(c.workload.name, c.config.cpus, c.fs, c.procs): c.key
            for b in boots for c in b.cells}


def test_adding_a_workload_keeps_the_cells_of_the_others(tmp_path, guest):
    create = declare(tmp_path, "create", run="createunlink -p {procs} {dir}")
    before = keys(digests(tmp_path, guest, [create]), [create])
    outside = declare(tmp_path, "outside", run="env true",
                      extra="binaries = /usr/bin/env\npackages = busybox-static\n")
    after = keys(digests(tmp_path, guest, [create, outside]), [create, outside])
    assert {k: v for k, v in after.items() if k[0] == "create"} == before
    assert any(k[0] == "outside" for k in after)


def test_a_workloads_own_program_changes_only_its_cells(tmp_path, guest):
    create = declare(tmp_path, "create", run="createunlink -p {procs} {dir}")
    other = declare(tmp_path, "other", run="true")
    before = digests(tmp_path, guest, [create, other])
    base, programs, program = guest
    program.write_bytes(b"\x7fELF a new version of the program")
    changed = (base, initramfs.program_files([program]), program)
    after = digests(tmp_path, changed, [create, other])
    assert after["create"] != before["create"]
    assert after["other"] == before["other"]
    # The harness's part shapes every step: a change there changes every key.
    harness_changed = ([*base[:-1], deps.GuestFile("/init", base[-1].mode, b"new", "x")],
                       programs, program)
    again = digests(tmp_path, harness_changed, [create, other])
    assert again["create"] != before["create"] and again["other"] != before["other"]


def test_data_file_and_declaration_are_the_workloads_own(tmp_path, guest):
    (tmp_path / "fio").mkdir()
    job = tmp_path / "fio" / "job.fio"
    job.write_text("[job]\n")
    fio = declare(tmp_path, "fio", run="fiostep {prefix} 1 10 /workloads/fio/job.fio",
                  extra="files = fio/job.fio\n")
    base, programs, _ = guest
    files = {f.path for f in deps.workload_files(fio, programs)}
    assert files == {"/workloads/fio/job.fio", "/bin/fiostep"}  # the script its run line names
    before = digests(tmp_path, guest, [fio])
    job.write_text("[job]\nnrfiles=2\n")
    assert digests(tmp_path, guest, [fio]) != before


def test_the_same_file_twice_is_fine_two_contents_are_not(tmp_path):
    entries: initramfs.Entries = {}
    lib = deps.GuestFile("/lib/x/libc.so.6", stat.S_IFREG | 0o755, b"libc", "a")
    initramfs.add(entries, [lib, lib])
    assert entries["lib/x/libc.so.6"] == (lib.mode, b"libc")
    assert stat.S_ISDIR(entries["lib/x"][0])
    with pytest.raises(initramfs.GuestError, match="b: /lib/x/libc.so.6 is already in the guest"):
        initramfs.add(entries, [deps.GuestFile(lib.path, lib.mode, b"other", "b")])


def test_every_shipped_workload_resolves_on_this_host(tmp_path, helper):
    """The repository's own declarations pass check-workloads (packages may be
    installable rather than installed on a fresh machine)."""
    programs = initramfs.program_files(initramfs.compile_workloads(
        Layout(repo=REPO_ROOT, build=tmp_path, ccache=tmp_path, results=tmp_path),
        tmp_path / "bin"))
    check.check(list(shipped.tracked().values()), initramfs.harness_files(helper), programs)


def test_package_not_yet_installed_is_a_note_for_check_workloads(tmp_path, guest):
    """make installs declared packages before it boots: check-workloads only notes
    one that apt can install (GNU hello, if this host's apt knows it and has not
    installed it)."""
    if deps.package_installed("hello") or not deps.package_installable("hello"):
        pytest.skip("GNU hello is installed here, or apt does not know it")
    w = declare(tmp_path, "later", extra="packages = hello\n")
    base, programs, _ = guest
    notes = check.check([w], base, programs)
    assert notes == [f"{w.path}:7: package hello is not installed yet: `make deps` (and every "
                     f"make target that boots) installs it",
                     f"{w.path}: the run line is checked once hello is installed"]
