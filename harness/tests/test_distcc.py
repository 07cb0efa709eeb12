"""Kernel builds over distcc: a distccd on loopback compiles a kernel object for the
harness's build environment (ccache in front, CCACHE_PREFIX=distcc)."""

import dataclasses
import os
import shutil
import socket
import subprocess
import time

import pytest

from harness import procgroup
from harness.kernels import kbuild, source
from harness.layout import default_layout
from harness.tests.minicluster import free_ports

pytestmark = pytest.mark.tree
SLOTS = 2


@pytest.fixture
def distccd(tmp_path):
    if not shutil.which("distccd"):
        pytest.skip("distccd is not installed (apt-get install distcc)")
    (port,) = free_ports(1)
    log = tmp_path / "distccd.log"
    # Its log on stderr, into a file opened here: run as root, distccd becomes
    # the distccd user, who may not write into the test's folder.
    with open(log, "wb") as sink:
        proc = subprocess.Popen(["distccd", "--daemon", "--no-detach", "--listen", "127.0.0.1",
                                 "--port", str(port), "--allow", "127.0.0.1",
                                 "--jobs", str(SLOTS), "--log-stderr", "--log-level", "info"],
                                stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.skip(f"distccd did not start: "
                                f"{log.read_text() if log.exists() else 'no log'}")
                time.sleep(0.2)
        yield port, log
    finally:
        procgroup.stop(proc)


def test_a_kernel_object_compiles_on_the_distcc_host(distccd, tmp_path):
    port, log = distccd
    # A private compiler cache: every compile misses it, so each one goes over distcc.
    layout = dataclasses.replace(default_layout(), ccache=tmp_path / "ccache")
    env = kbuild.build_env(layout, dict(os.environ, DISTCC_HOSTS=f"127.0.0.1:{port}/{SLOTS}",
                                        DISTCC_DIR=str(tmp_path / "distcc"),
                                        DISTCC_FALLBACK="0"))  # no silent local compile
    assert env["CCACHE_PREFIX"] == "distcc"
    assert kbuild.make_jobs(env) == (os.cpu_count() or 1) + SLOTS
    obj = tmp_path / "obj"
    obj.mkdir()
    (tmp_path / "distcc").mkdir()  # distcc's lock and state folder; it does not make it
    source.ensure_pristine(layout)
    with kbuild.build_lock(layout), open(tmp_path / "build.log", "w") as build_log:
        kbuild.run_make(layout, obj, ["allnoconfig"], build_log, env)
        kbuild.run_make(layout, obj, [f"-j{kbuild.make_jobs(env)}", "CC=ccache gcc",
                                      "lib/ctype.o"], build_log, env)
    assert (obj / "lib" / "ctype.o").stat().st_size > 0
    served = log.read_text()
    assert "COMPILE_OK" in served and "ctype.c" in served, served[-2000:]
