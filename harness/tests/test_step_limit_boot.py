"""A step's time limit, and its end, kill everything the step started: in a real guest.

escape.c does what fsstress does (every process in a process group of its
own, SIGTERM ignored), and with -s one worker starts a session of its own.
It is declared the way a user declares a program built elsewhere, from a
folder outside the checkout; after each escape step another step looks for
survivors in the guest's /proc. Boots the mainline debug kernel once at 1
vCPU (about a minute under TCG).
"""

import subprocess

import pytest

from harness import lockorder
from harness.boot import channel, qemu, runner
from harness.guest import initramfs, plan, workloads
from harness.kernels import kbuild
from harness.layout import REPO_ROOT, default_layout

pytestmark = pytest.mark.boot
MAINLINE = lockorder.parse(lockorder.MAINLINE_FILE)
ESCAPE_SOURCE = REPO_ROOT / "harness" / "test_data" / "programs" / "escape.c"
LIMIT_S = 5

DECLARATIONS = {
    "escape-limit": f"""\
summary  = workers in process groups and a session of their own, past the step's limit
binaries = bin/escape
run      = escape -s
output   = none
timeout  = {LIMIT_S}
""",
    "escape-leave": """\
summary  = workers in process groups and a session of their own, left behind at once
binaries = bin/escape
run      = escape -e -s
output   = none
""",
    "survivors": """\
summary  = fails, naming them, if any escape process is still alive
run      = for c in /proc/[0-9]*/comm; do read n < $c || continue; [ "$n" != escape ] || { echo "survivor ${c%/comm}"; exit 1; }; done; echo none
output   = none
""",
}


@pytest.fixture(scope="module")
def boot(tmp_path_factory):
    folder = tmp_path_factory.mktemp("user-workloads")
    (folder / "bin").mkdir()
    subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-static", "-o", str(folder / "bin" /
                    "escape"), str(ESCAPE_SOURCE)], check=True)
    for name, text in DECLARATIONS.items():
        (folder / f"{name}.wl").write_text(f"name     = {name}\n{text}fs       = tmpfs\n"
                                           f"procs    = 1\n")
    known = workloads.load_all(folder)
    layout = default_layout()
    image = kbuild.build(layout, "mainline", "debug")
    files = initramfs.prepare(layout, list(known.values()))
    order = ["escape-limit", "survivors", "escape-leave", "survivors"]
    steps = plan.make_steps([(known[name], "tmpfs", 1) for name in order])
    out = tmp_path_factory.mktemp("boot")
    record = runner.run_boot(image, files, qemu.Machine("tcg", 1), steps, out,
                             "step limit", MAINLINE)
    return record, channel.parse((out / "results.raw").read_bytes())


def test_the_limit_kills_workers_in_groups_and_sessions_of_their_own(boot):
    record, received = boot
    limited = record.steps[0]
    assert limited.numbers.timed_out and limited.numbers.error == f"killed at its {LIMIT_S}s limit"
    started = received.text("s01.out").splitlines()
    assert len(started) == 3 and len({line.split()[3] for line in started}) == 2  # sids
    assert record.steps[1].status == "ok", received.text("s02.out")
    assert received.text("s02.out") == "none\n"


def test_workers_left_behind_die_when_the_step_ends(boot):
    record, received = boot
    assert record.steps[2].status == "ok" and record.steps[2].numbers.exit_code == 0
    assert len(received.text("s03.out").splitlines()) == 3
    assert record.steps[3].status == "ok", received.text("s04.out")
    assert received.text("s04.out") == "none\n"
