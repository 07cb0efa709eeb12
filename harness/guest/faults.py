"""The faults of one step: what the kernel is asked to fail, and the plan lines that ask.

A faults step (make faults, run/faults.py) runs on a kernel of the faults
flavour (configs/faults.config). Three of the kernel's fault_attrs are set
through debugfs before the step's command and read back after it
(guest/rootfs/faults.sh):

    failslab           allocations from the caches the boot marked for it
                       (KERNEL_CMDLINE: the inode caches and the dentry
                       cache), GFP_KERNEL and GFP_NOFS ones included
    fail_page_alloc    page allocations of order 1 and above (highmem and
                       user pages never: a failed page fault would be the
                       OOM killer's, not the inode cache's)
    fail_make_request  block requests to the disk of the step's filesystem

each at a probability in percent and at most a number of times. failslab
and fail_page_alloc have their task filter on: only the tasks whose
/proc/self/make-it-fail is 1 meet a fault, and the workload programs arm
themselves for their operation loops only (workloads/src/faults.h), so the
harness's own shell, the result records and a step's setup never fail.
Block requests fail in one of two scopes: "task", the requests those armed
tasks submit themselves (reads of inodes and directories after a cache
drop, fsync), so an iget fails halfway; or "disk", every request to the
disk while the program holds it armed (its timed phases), the journal's,
the log's and writeback's too, so the filesystem shuts down under the
inode cache. XFS allocates its inodes
(xfs_inode, xfs_ili) with __GFP_NOFAIL, which failslab never fails: on XFS
the faults land in the dentry cache and the block requests.
"""

from __future__ import annotations

from dataclasses import dataclass

# The slab caches failslab may fail (slub_debug=A marks them at boot: 6.1's
# /sys/kernel/slab/*/failslab is read-only). Marked caches are never merged.
FAILSLAB_CACHES = ("ext4_inode_cache", "xfs_inode", "xfs_ili", "shmem_inode_cache",
                   "inode_cache", "dentry")
KERNEL_CMDLINE = "slub_debug=A," + ",".join(FAILSLAB_CACHES)
# debugfs fault_attrs, in the order of the plan's arguments and the record's lines.
ATTRS = ("failslab", "fail_page_alloc", "fail_make_request")


@dataclass(frozen=True)
class Faults:
    """What one step's kernel is asked to fail: percent and bound of each attr."""
    slab_percent: int
    slab_times: int
    page_percent: int
    page_times: int
    block_percent: int  # 0 on tmpfs: no disk
    block_times: int
    block_scope: str = "task"  # task or disk (see above)

    def asked(self) -> dict[str, tuple[int, int]]:
        """attr -> (percent, times)."""
        return {"failslab": (self.slab_percent, self.slab_times),
                "fail_page_alloc": (self.page_percent, self.page_times),
                "fail_make_request": (self.block_percent, self.block_times)}

    @property
    def label(self) -> str:
        """'slab 2%x50, page off, block 1%x10 task': short, and part of the cell key."""
        names = {"failslab": "slab", "fail_page_alloc": "page", "fail_make_request": "block"}
        label = ", ".join(f"{names[a]} {p}%x{t}" if p and t else f"{names[a]} off"
                          for a, (p, t) in self.asked().items())
        return label + (f" {self.block_scope}" if self.block_percent and self.block_times
                         else "")

    def arm_line(self, dev: str) -> list[str]:
        """The plan's faults_arm call for a step on dev ("" for tmpfs)."""
        args = ["faults_arm", dev or "none"]
        for percent, times in self.asked().values():
            args += [str(percent if times else 0), str(times if percent else 0)]
        return args + [self.block_scope]


def save_line(step_id: str) -> list[str]:
    """The plan's faults_save call after the step: counters read, everything off."""
    return ["faults_save", step_id]
