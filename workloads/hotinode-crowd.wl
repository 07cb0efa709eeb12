# hotinode with more workers than vCPUs (issue 38): four workers on the same
# 4 files whether the boot has 1 or 2 vCPUs. A worker preempted while it holds
# the hot inode's i_lock leaves the others spinning (chinner) or failing their
# trylocks and retrying (piggin's find_inode_fast under the bucket lock, its
# writeback walkers), which is where piggin's own failure mode costs time: the
# perf kernels time it, the debug kernels count it. Not in the default matrix:
# make duel (DUEL=1) runs it. The phases are hotinode's (workloads/hotinode.wl).
name     = hotinode-crowd
summary  = hotinode with four workers at every vCPU count: the hot inode's holder preempted by its own co-workers
run      = hotinode -p {procs} -k 4 -r 250 -s -L {prefix} {dir}
output   = result-lines
procs    = 4
fs       = ext4
windowed = yes
timeout  = 180
unit     = op
shared-inodes = 4
default  = no
background = write-vs-sync
difference.path = none: no reference count moves (the control)
difference.handle = the reference count under i_lock
difference.write-vs-sync = writeback lists under i_lock
difference.recreate = hash insert against an inode being freed
