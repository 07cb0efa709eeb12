"""Boots as Slurm jobs: the executor of `make compare EXECUTOR=slurm`.

What it assumes: SLURM_SHARED is one directory with the same path on this
host and on every node of the partition (an NFS export, a cluster file
system), writable by the jobs. Each node needs Debian's python3 and
qemu-system-x86 (and /dev/kvm for KVM runs); nothing else of the checkout.

The shared directory holds (run/shared.py places the first three):

    code/<digest>/        the harness package the jobs run (python3 -m harness node-boot)
    images/<image>/       the bzImage of every kernel image booted
    guest/                the initramfs and the pristine disk images
    batches/<id>/         one batch: job-<i>.json specs, run.sh, task-<i>.out
    boots/<boot id>/      boot folders the nodes are writing; moved into results/boots/
    probe/<node>/         KVM probe boots
    machines.json         every machine a job of each partition ran on

Each batch of boots that execute.measure hands over is one job array, one
task per boot, each task a whole node (--exclusive: two guests on one host
would time each other). The executor polls the queue and the shared
directory: a task's boot folder with node.json is finished; it is moved
into results/boots/, read again with runner.read_boot, and its cells
re-keyed for the node's machine when that differs from the one the run was
planned for. A task that leaves the queue without node.json (failed,
cancelled, preempted and not requeued, node lost) becomes a boot with
status "lost" and a slurm.json saying why, and its cells go back into the
queue (execute.measure retries them, then names what never succeeded).
An interrupted run cancels its array.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness import host, progress
from harness.boot import runner
from harness.guest import initramfs
from harness.kernels.kbuild import KernelImage
from harness.layout import Layout
from harness.run import execute, matrix, nodejob, shared

# Squeue states of a task that may still produce its boot folder.
ALIVE = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "REQUEUED", "REQUEUE_HOLD",
         "REQUEUE_FED", "RESIZING", "SUSPENDED", "SIGNALING", "STAGE_OUT", "STOPPED"}
TIME_MARGIN_S = 300  # on top of the longest boot's own timeout, for the job's time limit
SLURM_FILE = "slurm.json"


class SlurmError(Exception):
    pass


@dataclass(frozen=True)
class SlurmConfig:
    partition: str
    shared: Path
    options: tuple[str, ...] = ()  # more sbatch/srun options (SLURM_OPTIONS): --account, ...
    python: str = "/usr/bin/python3"
    poll_s: float = 2.0
    # A task gone from the queue without its node.json is lost after this long:
    # a shared file system may show a file written on a node only after a while.
    lost_after_s: float = 60.0

    def described(self) -> dict:
        return {"kind": "slurm", "partition": self.partition, "shared": str(self.shared),
                "options": list(self.options)}


def _slurm(args: list[str], check: bool = True) -> subprocess.CompletedProcess:
    try:
        out = subprocess.run(args, capture_output=True, text=True)
    except FileNotFoundError:
        raise SlurmError(f"{args[0]} not found: apt-get install slurm-client") from None
    if check and out.returncode != 0:
        raise SlurmError(f"{shlex.join(args)} failed (exit {out.returncode}): "
                         f"{out.stderr.strip()}")
    return out


# -- what the partition is ------------------------------------------------------------------

def partition_nodes(config: SlurmConfig) -> int:
    """Nodes in the partition: how many boots can run at once."""
    out = _slurm(["sinfo", "-h", "-p", config.partition, "-o", "%D"])
    nodes = sum(int(n) for n in out.stdout.split() if n.isdigit())
    if not nodes:
        raise SlurmError(f"partition {config.partition!r} has no nodes (sinfo -p)")
    return nodes


def probe_partition(config: SlurmConfig, staging: shared.Staging, image: KernelImage,
                    accel: str | None) -> host.Node:
    """The machine of a node of the partition, asked of the node itself with a short job."""
    spec_path = config.shared / "probe" / f"spec-{os.getpid()}-{time.time_ns()}.json"
    spec_path.parent.mkdir(parents=True, exist_ok=True)
    nodejob.ProbeSpec(accel, str(staging.image(image) / "bzImage"), str(staging.files.initramfs),
                      str(config.shared / "probe")).save(spec_path)
    progress.say(f"slurm: asking a node of partition {config.partition} for its machine"
                 + ("" if accel else " (and probing KVM there)"))
    try:
        out = _slurm(["srun", "--partition", config.partition, "--nodes", "1", "--ntasks", "1",
                      "--exclusive", "--job-name", "inode-duel-probe", "--time", "10",
                      "--chdir", str(staging.code), *config.options,
                      config.python, "-m", "harness", "node-probe", str(spec_path)])
    finally:
        spec_path.unlink(missing_ok=True)
    try:
        data = json.loads(out.stdout.strip().splitlines()[-1])
        machine = {k: v for k, v in data.pop("machine").items() if k != "id"}
        node = host.Node(host.Machine(**machine), **data)
    except (IndexError, ValueError, TypeError, KeyError) as err:
        raise SlurmError(f"the probe job printed no machine ({err}): {out.stdout[-500:]}"
                         f"{out.stderr[-500:]}") from None
    progress.say(f"slurm: node {node.hostname}: {node.machine.cpu_model}, "
                 f"{node.machine.cores} cores, {node.machine.accel}")
    return node


def _machines_file(config: SlurmConfig) -> Path:
    return config.shared / "machines.json"


def known_machines(config: SlurmConfig) -> list[host.Machine]:
    """Machines jobs of this partition ran on before."""
    path = _machines_file(config)
    known = json.loads(path.read_text()) if path.exists() else {}
    return [host.Machine(m["cpu_model"], m["cores"], m["accel"])
            for m in known.get(config.partition, [])]


def remember_machine(config: SlurmConfig, machine: host.Machine) -> None:
    path = _machines_file(config)
    known = json.loads(path.read_text()) if path.exists() else {}
    seen = known.setdefault(config.partition, [])
    entry = {"cpu_model": machine.cpu_model, "cores": machine.cores, "accel": machine.accel}
    if entry in seen:
        return
    seen.append(entry)
    partial = path.with_name(path.name + f".{os.getpid()}.partial")
    partial.write_text(json.dumps(known, indent=1) + "\n")
    partial.rename(path)


# -- the executor ---------------------------------------------------------------------------

@dataclass
class _Task:
    index: int
    job: execute.BootJob
    shared_boot: Path
    started: bool = False
    console_at: int = 0
    console_rest: bytes = b""
    gone_since: float | None = None


def _time_limit(jobs: list[execute.BootJob]) -> str:
    longest = max(runner.boot_timeout(job.steps, job.config.machine(
        "kvm" if job.config.mode.startswith("kvm") else "tcg")) for job in jobs)
    return str(math.ceil((longest + TIME_MARGIN_S) / 60))


@dataclass
class SlurmExecutor:
    config: SlurmConfig
    staging: shared.Staging
    guest_digests: dict[str, str]  # per workload, for cell keys (initramfs.prepare)
    parallel: int
    batches: int = field(default=0)

    def accel_of(self, job: execute.BootJob) -> str:
        return "kvm" if job.config.mode.startswith("kvm") else "tcg"

    def spec(self, job: execute.BootJob, batch: Path) -> nodejob.JobSpec:
        order = batch / "lock-order" / f"{job.config.kernel}.lock-order"
        _place_copy(job.order.path, order)
        steps = [nodejob.StepSpec(s.workload.name, s.workload.text, s.fs, s.procs)
                 for s in job.steps]
        return nodejob.JobSpec(
            job.boot_id, job.config.kernel, job.config.flavour, job.image.key,
            str(self.staging.image(job.image)), str(self.staging.files.initramfs),
            {fs: str(p) for fs, p in self.staging.files.disks.items()}, self.accel_of(job),
            job.config.cpus, job.config.mode == "tcg-icount", steps, job.header, str(order),
            str(self.config.shared / "boots" / job.boot_id))

    def submit(self, jobs: list[execute.BootJob]) -> tuple[str, Path]:
        self.batches += 1
        batch = self.config.shared / "batches" / f"{time.strftime('%Y%m%d-%H%M%S')}-" \
                                                 f"{os.getpid()}-{self.batches}"
        batch.mkdir(parents=True)
        for i, job in enumerate(jobs):
            self.spec(job, batch).save(batch / f"job-{i}.json")
        script = batch / "run.sh"
        script.write_text(
            "#!/bin/sh\n"
            "# One boot of the batch: its spec is job-<array task id>.json.\n"
            f"cd {shlex.quote(str(self.staging.code))} || exit 1\n"
            f"PYTHONPATH={shlex.quote(str(self.staging.code))} exec "
            f"{shlex.quote(self.config.python)} -m harness node-boot "
            f"{shlex.quote(str(batch))}/job-$SLURM_ARRAY_TASK_ID.json\n")
        script.chmod(0o755)
        timed = any(o == "-t" or o.startswith("--time") for o in self.config.options)
        out = _slurm(["sbatch", "--parsable", "--partition", self.config.partition,
                      "--array", f"0-{len(jobs) - 1}", "--nodes", "1", "--ntasks", "1",
                      "--exclusive", "--job-name", "inode-duel",
                      "--output", str(batch / "task-%a.out"), "--chdir", str(self.staging.code),
                      *([] if timed else ["--time", _time_limit(jobs)]),
                      *self.config.options, str(script)])
        array = out.stdout.strip().split(";")[0]
        progress.say(f"slurm: job array {array}: {len(jobs)} boots on partition "
                     f"{self.config.partition}")
        return array, batch

    def run(self, jobs: list[execute.BootJob], watch: execute.Watch):
        array, batch = self.submit(jobs)
        tasks = {i: _Task(i, job, self.config.shared / "boots" / job.boot_id)
                 for i, job in enumerate(jobs)}
        try:
            while tasks:
                states = queue_states(array)
                for i, task in list(tasks.items()):
                    finished = (task.shared_boot / host.NODE_FILE).exists()
                    state = None if states is None else states.get(i)
                    if (finished or state == "RUNNING") and not task.started:
                        task.started = True
                        watch.boot_started(task.job)
                    if task.started:
                        self.follow_console(task, watch)
                    if finished:
                        del tasks[i]
                        yield self.collect(task, batch)
                    elif states is not None and state not in ALIVE:
                        task.gone_since = task.gone_since or time.monotonic()
                        if time.monotonic() - task.gone_since >= self.config.lost_after_s:
                            del tasks[i]
                            yield self.lost(task, array, batch)
                    else:
                        task.gone_since = None
                if tasks:
                    time.sleep(self.config.poll_s)
        finally:
            if tasks:  # interrupted: the nodes must not keep booting for nobody
                _slurm(["scancel", array], check=False)
        shutil.rmtree(batch, ignore_errors=True)

    def follow_console(self, task: _Task, watch: execute.Watch) -> None:
        """The console lines the node has written since the last look, to the watch."""
        console = task.shared_boot / "console.log"
        try:
            with open(console, "rb") as f:
                f.seek(task.console_at)
                chunk = f.read()
        except FileNotFoundError:
            return
        task.console_at += len(chunk)
        *lines, task.console_rest = (task.console_rest + chunk).split(b"\n")
        for raw in lines:
            watch.console_line(task.job, raw.decode(errors="replace").rstrip("\r"))

    def collect(self, task: _Task, batch: Path) -> tuple[execute.BootJob, runner.BootRecord]:
        """A finished boot: into results/boots/, read again here, keyed by its node's machine."""
        job = task.job
        shutil.move(str(task.shared_boot), str(job.directory))
        _place_copy(batch / f"task-{task.index}.out", job.directory / "slurm.out")
        summary_path = job.directory / "boot.json"
        if summary_path.exists():  # it names the folder the node wrote
            summary = json.loads(summary_path.read_text())
            summary["directory"] = str(job.directory)
            summary_path.write_text(json.dumps(summary, indent=1) + "\n")
        record = runner.read_boot(job.directory, job.steps, job.order)
        node = host.Node.load(job.directory)
        remember_machine(self.config, node.machine)
        if any(cell.machine != node.machine.id for cell in job.cells):
            job = replace(job, cells=[matrix.on_machine(cell, job.image, self.guest_digests,
                                                        node.machine) for cell in job.cells])
        return job, record

    def lost(self, task: _Task, array: str, batch: Path) -> tuple[execute.BootJob,
                                                                runner.BootRecord]:
        """A task that ended without its boot folder: a boot of status lost, and why."""
        job = task.job
        if task.shared_boot.exists():  # what the node got to write is kept
            shutil.move(str(task.shared_boot), str(job.directory))
        job.directory.mkdir(parents=True, exist_ok=True)
        output = batch / f"task-{task.index}.out"
        _place_copy(output, job.directory / "slurm.out")
        tail = output.read_text(errors="replace").splitlines()[-20:] if output.exists() else []
        info = job_info(f"{array}_{task.index}")
        (job.directory / SLURM_FILE).write_text(json.dumps(
            {"job": f"{array}_{task.index}", "partition": self.config.partition,
             "state": info.get("JobState", "unknown (no longer known to slurmctld)"),
             "reason": info.get("Reason", ""), "exit_code": info.get("ExitCode", ""),
             "node": info.get("NodeList", ""), "output_tail": tail}, indent=1) + "\n")
        progress.say(f"  {job.config.label}: slurm task {array}_{task.index} ended "
                     f"{info.get('JobState', 'unknown')} without its boot folder (why: "
                     f"{job.directory / SLURM_FILE}); its cells go back in the queue")
        steps = tuple(runner.StepOutcome(s.id, s.label, "not-run", None, (), None, None)
                      for s in job.steps)
        return job, runner.BootRecord(job.directory, "lost", 0.0, None, 0.0, (), (), steps)


def _place_copy(source: Path, target: Path) -> None:
    if source.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


def queue_states(array: str) -> dict[int, str] | None:
    """Array task -> state of the tasks the queue still lists; None when slurmctld did
    not answer this time (no task is taken for gone on that)."""
    out = _slurm(["squeue", "-h", "-r", "-j", array, "-o", "%K %T"], check=False)
    if out.returncode != 0:
        return {} if "Invalid job id" in out.stderr else None
    states = {}
    for line in out.stdout.splitlines():
        task, _, state = line.strip().partition(" ")
        if task.isdigit():
            states[int(task)] = state.strip()
    return states


def job_info(job: str) -> dict[str, str]:
    """scontrol's fields of a job it still remembers (MinJobAge), else {}."""
    out = _slurm(["scontrol", "-o", "show", "job", job], check=False)
    if out.returncode != 0:
        return {}
    return dict(item.split("=", 1) for item in out.stdout.split() if "=" in item)


def site(config: SlurmConfig):
    """A compare.Site that runs the boots on the partition's nodes."""
    def place(layout: Layout, files: initramfs.GuestFiles, probe_image: KernelImage,
              accel: str | None) -> execute.Placement:
        progress.say(f"slurm: staging code, guest and images in {config.shared}")
        staging = shared.stage(config.shared, files)
        node = probe_partition(config, staging, probe_image, accel)
        remember_machine(config, node.machine)
        executor = SlurmExecutor(config, staging, files.digests, partition_nodes(config))
        others = [m for m in known_machines(config) if m.id != node.machine.id]
        return execute.Placement(node, executor, config.described(), others)
    return place
