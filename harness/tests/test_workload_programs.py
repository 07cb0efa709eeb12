"""workloads/src/Makefile: the project's programs are built whatever rule is added."""

import shutil
import subprocess

from harness.layout import REPO_ROOT

SRC = REPO_ROOT / "workloads" / "src"


def test_a_rule_added_above_all_does_not_become_the_default(tmp_path):
    copy = tmp_path / "src"
    shutil.copytree(SRC, copy)
    makefile = copy / "Makefile"
    text = makefile.read_text()
    first_rule = text.index("all:")
    makefile.write_text(text[:first_rule] + "mytool: mytool.c\n\t$(CC) -o $(OUT)/mytool $<\n\n"
                        + text[first_rule:])
    dry_run = subprocess.run(["make", "-n", "-C", str(copy), f"OUT={tmp_path / 'out'}"],
                             capture_output=True, text=True, check=True).stdout
    for program in ("createunlink", "fstree", "igetstorm", "torture"):
        assert f"-o {tmp_path / 'out' / program} {program}.c" in dry_run
    assert "mytool" not in dry_run
