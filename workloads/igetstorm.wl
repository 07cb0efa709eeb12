# Every open_by_handle_at decodes the handle through ext4's iget: an inode
# hash lookup (find_inode_fast under the hash lock) per open. ext4 only:
# tmpfs hashes nothing, and XFS decodes handles through its own inode cache
# (xfs_iget), never the VFS hash: in the reference of 2026-12-04 its shared
# locks were the same for every kernel and piggin differed by 0.2 i_lock
# acquisitions per open, which hotinode and anonstorm show on contended
# inodes; its 74 s of the default run went to them (issue 24). To see it on
# XFS anyway: python3 -m harness boot KERNEL --workloads igetstorm --fs xfs.
name     = igetstorm
summary  = open_by_handle_at over 1000 files per worker, 5 rounds, after a cache drop: one inode-hash lookup per open
run      = igetstorm -p {procs} -n 1000 -r 5 -D -L {prefix} {dir}
output   = result-lines
fs       = ext4
windowed = yes
default  = yes
unit     = open
difference = hash lookups in uncrowded chains (control of the crowded)
