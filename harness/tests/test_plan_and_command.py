"""What the host hands the guest: the plan script and the QEMU command line."""

import dataclasses
import shlex
import subprocess
from pathlib import Path

import pytest

from harness.boot import qemu
from harness.guest import plan, protocol, workloads
from harness.tests import shipped



def test_plan_runs_each_step_on_its_device_and_finishes():
    create = shipped.workload("create-unlink")
    steps = plan.make_steps([(create, "tmpfs", 2), (create, "xfs", 2), (create, "ext4", 1)])
    script = plan.render(steps, 2, "boot x\nkernel y")
    lines = script.splitlines()
    assert lines[:2] == ["# boot x", "# kernel y"]
    runs = [shlex.split(line)[:7] for line in lines if line.startswith("run_step ")]
    # Disks are attached in protocol order (ext4, then xfs) whatever the step order.
    limit = str(create.timeout_s)
    assert runs == [["run_step", "s01", "tmpfs", "none", limit, "program", "2"],
                    ["run_step", "s02", "xfs", "/dev/vdb", limit, "program", "2"],
                    ["run_step", "s03", "ext4", "/dev/vda", limit, "program", "1"]]
    assert f"-L {protocol.HARNESS_DIR}/s02 {protocol.WORK_DIR}" in script
    assert lines[-1] == "finish"


RUN_LINE_THAT_WOULD_BREAK_THE_PLAN = """\
name    = breaker
summary = a run line with everything that used to act on the harness's own step command
run     = echo 'a # not a comment' > {tmp}/x; cat {tmp}/x | tr a b; echo "{procs} workers in {dir}" >&2; awk '{print $1}' {tmp}/x
output  = none
fs      = tmpfs
procs   = 3
"""


def test_run_line_stays_one_argument_of_its_step(tmp_path):
    """';', '|', '>', '#' and braces of a run line reach the step's own shell
    intact, as one argument, after the plan's shell has read it."""
    path = tmp_path / "breaker.wl"
    path.write_text(RUN_LINE_THAT_WOULD_BREAK_THE_PLAN)
    breaker = workloads.parse(path)
    assert "'a # not a comment'" in breaker.run  # '#' inside a value is not a comment
    script = plan.render(plan.make_steps([(breaker, "tmpfs", 3)]), 2, "x")
    # The plan's shell, with run_step replaced by a probe that prints its arguments.
    probe = 'run_step() { for a; do printf "<%s>\\n" "$a"; done; }; finish() { :; }\n'
    out = [line for line in subprocess.run(["/bin/busybox", "sh", "-c", probe + script],
                                           capture_output=True, text=True,
                                           check=True).stdout.splitlines()
           if line.startswith("<")]
    assert out == ["<s01>", "<tmpfs>", "<none>", "<300>", "<harness>", "<3>",
                       f"<echo 'a # not a comment' > {protocol.SCRATCH_DIR}/x; cat "
                       f"{protocol.SCRATCH_DIR}/x | tr a b; echo \"3 workers in "
                       f"{protocol.WORK_DIR}\" >&2; awk '{{print $1}}' {protocol.SCRATCH_DIR}/x>"]
    assert len(out) == 7


def test_disk_devices_follow_protocol_order():
    assert protocol.disk_devices({"xfs"}) == {"xfs": "/dev/vda"}
    assert protocol.disk_devices({"tmpfs", "xfs", "ext4"}) == {"ext4": "/dev/vda",
                                                               "xfs": "/dev/vdb"}


def test_qemu_command_has_the_result_port_disks_and_accelerator(tmp_path):
    spec = qemu.BootSpec(Path("/k/bzImage"), Path("/g/initramfs.cpio"), Path("/b/plan.sh"),
                         qemu.Machine("tcg", 1, icount=True), 60,
                         disks=(Path("/b/ext4.img"), Path("/b/xfs.img")))
    cmd = qemu.command(spec, tmp_path / "results.raw")
    joined = " ".join(cmd)
    assert f"name={protocol.PLAN_FW_CFG},file=/b/plan.sh" in joined
    assert f"file,id=results,path={tmp_path / 'results.raw'}" in joined
    assert f"name={protocol.RESULTS_PORT}" in joined
    assert "-serial stdio" in joined and cmd.count("-serial") == 1  # the console only
    drives = [cmd[i + 1] for i, a in enumerate(cmd) if a == "-drive"]
    assert [d.split(",")[0] for d in drives] == ["file=/b/ext4.img", "file=/b/xfs.img"]
    assert cmd[cmd.index("-icount") + 1] == qemu.ICOUNT
    # One vCPU, and still the SMP code (LOCK prefixes) the multi-vCPU boots run.
    assert "noreplace-smp" in cmd[cmd.index("-append") + 1].split()
    assert "idle=poll" not in cmd[cmd.index("-append") + 1].split()  # a tcg-cs boot's
    rate = qemu.command(dataclasses.replace(spec, machine=qemu.Machine(
        "tcg", 1, icount=True, poll_idle=True)), tmp_path / "results.raw")
    assert {"noreplace-smp", "idle=poll"} <= set(rate[rate.index("-append") + 1].split())
    with pytest.raises(qemu.QemuError, match="polls when idle"):
        qemu.Machine("tcg", 2, poll_idle=True)
    assert cmd[cmd.index("-accel") + 1] == "tcg"
    kvm = qemu.command(qemu.BootSpec(Path("k"), Path("i"), Path("p"), qemu.Machine("kvm", 4),
                                     60), tmp_path / "r")
    assert kvm[kvm.index("-accel") + 1] == "kvm" and "-icount" not in kvm
    assert "noreplace-smp" not in kvm[kvm.index("-append") + 1]
    assert kvm[kvm.index("-smp") + 1] == "4"
    # Both hide the hypervisor bit: a guest that sees it runs virt_spin_lock.
    assert cmd[cmd.index("-cpu") + 1] == "max,-hypervisor"
    assert kvm[kvm.index("-cpu") + 1] == "host,-hypervisor"


def test_guest_crng_is_read_from_the_init_line():
    line = ("inode-duel: init started, 2 cpus, kernel 6.1.192+, spinlock qspinlock, "
            "crng unseeded\n")
    assert protocol.guest_spinlock(line) == "qspinlock"
    assert protocol.guest_crng("boot noise\n" + line) == "unseeded"
    assert protocol.guest_crng(line.replace("unseeded", "ready")) == "ready"
    # The init line of the boots before the check.
    assert protocol.guest_crng(line.replace(", crng unseeded", "")) is None


def test_guest_spinlock_is_read_from_the_init_line():
    line = "inode-duel: init started, 2 cpus, kernel 6.1.192, spinlock qspinlock\n"
    assert protocol.guest_spinlock("boot noise\n" + line) == "qspinlock"
    assert protocol.guest_spinlock(line.replace("qspinlock", "virt_spin_lock")) == \
        "virt_spin_lock"
    # A boot made before the init said it: unknown, never guessed.
    assert protocol.guest_spinlock("inode-duel: init started, 2 cpus, kernel 6.1.192\n") is None


def test_one_boot_gives_its_steps_one_kernel_command_line(tmp_path):
    text = (shipped.FOLDER / "create-unlink.wl").read_text()
    plain = workloads.parse(tmp_path / "create-unlink.wl", text)
    crowded = workloads.parse(tmp_path / "create-unlink.wl", text + "cmdline = ihash_entries=16\n")
    assert plan.kernel_cmdline(plan.make_steps([(crowded, "tmpfs", 1), (crowded, "ext4", 2)])) \
        == "ihash_entries=16"
    assert plan.kernel_cmdline(plan.make_steps([(plain, "tmpfs", 1)])) == ""
    with pytest.raises(plan.MixedCmdline, match=r"\(none\): create-unlink/tmpfs/p1; "
                                                r"ihash_entries=16: create-unlink/ext4/p1"):
        plan.kernel_cmdline(plan.make_steps([(plain, "tmpfs", 1), (crowded, "ext4", 1)]))
    groups = plan.by_cmdline([(plain, "tmpfs", 1), (crowded, "ext4", 1), (plain, "xfs", 1)])
    assert [(k, [fs for _, fs, _ in v]) for k, v in groups.items()] == \
        [("", ["tmpfs", "xfs"]), ("ihash_entries=16", ["ext4"])]
    assert plan.cmdline_slug("ihash_entries=16 a.b=x,y") == "ihash_entries-16-a.b-x-y"
