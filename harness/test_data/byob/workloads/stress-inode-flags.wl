# stress-ng from Debian, untouched: its inode-flags stressor sets and reads
# inode flags with FS_IOC_SETFLAGS/GETFLAGS (inode_lock, i_flags, marking
# the inode dirty under i_lock). tmpfs has no such flags: ext4 and XFS.
# stress-ng 0.15 (Debian 12) counts no bogo operation for this stressor
# (0 in every run here, on the host too), so it is declared output = none:
# the step reports its wall time, exit status and the lock counts of the
# window between the dispatch line and the metrics header, no throughput.
name       = stress-inode-flags
summary    = stress-ng --inode-flags: procs instances flipping inode flags with FS_IOC_SETFLAGS for 10 s (no throughput: stress-ng counts none)
packages   = stress-ng
run        = stress-ng --inode-flags {procs} --timeout 10s --metrics-brief --temp-path {tmp}
output     = none
lock-start = dispatching hogs
lock-end   = bogo ops real time
fs         = ext4 xfs
procs      = 1 cpus
timeout    = 120
unit       = bogo-op
