"""A one-node Slurm cluster on this machine, for the tests (and to try EXECUTOR=slurm).

No systemd is needed: munged runs with its own key and socket, slurmctld and
slurmd in the foreground from a slurm.conf generated in a private folder,
with proctrack/linuxproc and task/none (no cgroups), no accounting, and
ports that were free when it started. Clients find it through SLURM_CONF.
Everything it starts is stopped by stop(), whatever happened in between.

    /usr/bin/python3 -m harness.tests.minicluster DIR   # up until Ctrl-C

prints the SLURM_CONF to export and the partition's name.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness import procgroup

PARTITION = "duel"
DAEMONS = ("munged", "slurmctld", "slurmd")
START_WAIT_S = 60


class ClusterError(Exception):
    pass


def free_ports(count: int) -> list[int]:
    """Ports nothing listens on now (the kernel's pick of unused ephemeral ports)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def missing_programs() -> list[str]:
    return [p for p in (*DAEMONS, "srun", "sbatch", "squeue", "sinfo")
            if not shutil.which(p) and not Path("/usr/sbin", p).exists()]


def memory_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return 1024


@dataclass
class MiniCluster:
    root: Path
    name: str = field(default_factory=lambda: f"duel{os.getpid()}")
    node: str = field(default_factory=lambda: socket.gethostname().split(".")[0])
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def conf(self) -> Path:
        return self.root / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        return dict(os.environ, SLURM_CONF=str(self.conf))

    def write_config(self) -> None:
        for d in ("state", "spool", "log"):
            (self.root / d).mkdir(parents=True, exist_ok=True)
        ctld_port, slurmd_port = free_ports(2)
        node = self.node
        cpus = os.cpu_count() or 1
        self.conf.write_text(f"""\
# A one-node cluster for inode-duel's tests (harness/tests/minicluster.py).
ClusterName={self.name}
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.root}/munge/munge.socket
StateSaveLocation={self.root}/state
SlurmdSpoolDir={self.root}/spool
SlurmctldPidFile={self.root}/slurmctld.pid
SlurmdPidFile={self.root}/slurmd.pid
SlurmctldLogFile={self.root}/log/slurmctld.log
SlurmdLogFile={self.root}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb() * 3 // 4} State=UNKNOWN
PartitionName={PARTITION} Nodes={node} Default=YES MaxTime=INFINITE State=UP
""")

    def start_munge(self) -> None:
        munge = self.root / "munge"
        munge.mkdir(mode=0o711, exist_ok=True)
        munge.chmod(0o711)  # clients reach the socket; munged refuses looser folders
        key = munge / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        self._start("munged", ["munged", "--foreground", "--force", f"--key-file={key}",
                               f"--socket={munge}/munge.socket",
                               f"--pid-file={munge}/munged.pid",
                               f"--log-file={munge}/munged.log",
                               f"--seed-file={munge}/munged.seed"])
        self._wait(lambda: (munge / "munge.socket").exists(), "munged made no socket",
                   munge / "munged.log")

    def start(self) -> None:
        if os.geteuid() != 0:
            raise ClusterError("slurmd and munged of a private cluster need root here")
        missing = missing_programs()
        if missing:
            raise ClusterError(f"not installed: {' '.join(missing)} (apt-get install "
                               "slurm-wlm munge)")
        self.write_config()
        try:
            self.start_munge()
            self._start("slurmctld", ["slurmctld", "-D", "-f", str(self.conf)])
            self._start("slurmd", ["slurmd", "-D", "-f", str(self.conf), "-N", self.node])
            self._wait(self.node_idle, "the node never became idle",
                       self.root / "log" / "slurmctld.log")
        except BaseException:
            self.stop()
            raise

    def node_idle(self) -> bool:
        out = subprocess.run(["sinfo", "-h", "-p", PARTITION, "-o", "%t"], env=self.env,
                             capture_output=True, text=True)
        return out.returncode == 0 and out.stdout.split() == ["idle"]

    def _start(self, name: str, cmd: list[str]) -> None:
        log = open(self.root / "log" / f"{name}.out", "wb")
        self.processes[name] = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                                stderr=subprocess.STDOUT, env=self.env,
                                                start_new_session=True)
        log.close()

    def _wait(self, ready, what: str, log: Path) -> None:
        deadline = time.monotonic() + START_WAIT_S
        while not ready():
            dead = [n for n, p in self.processes.items() if p.poll() is not None]
            if dead or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
                outs = {n: (self.root / "log" / f"{n}.out").read_text(errors="replace")[-800:]
                        for n in dead}
                raise ClusterError(f"{what} (exited: {' '.join(dead) or 'none'}): {tail} {outs}")
            time.sleep(0.3)

    def stop(self) -> None:
        """Jobs left over are cancelled (their guests with them), then every daemon it
        started, in reverse order."""
        if "slurmctld" in self.processes and self.processes["slurmctld"].poll() is None:
            subprocess.run(["scancel", "--partition", PARTITION], env=self.env,
                           capture_output=True)
            deadline = time.monotonic() + 30
            while self.jobs_left() and time.monotonic() < deadline:
                time.sleep(0.5)
        for name in reversed(list(self.processes)):
            procgroup.stop(self.processes.pop(name))

    def jobs_left(self) -> bool:
        out = subprocess.run(["squeue", "-h", "-o", "%i"], env=self.env, capture_output=True,
                             text=True)
        return out.returncode == 0 and bool(out.stdout.strip())


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    cluster = MiniCluster(Path(argv[0]).resolve())
    cluster.root.mkdir(parents=True, exist_ok=True)
    cluster.start()
    print(f"export SLURM_CONF={cluster.conf}   # partition {PARTITION}; Ctrl-C stops it",
          flush=True)
    try:
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    sys.exit(main(sys.argv[1:]))
