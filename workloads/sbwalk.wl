# The walkers of sb->s_inodes (drop_pagecache_sb, sync, evict_inodes at
# umount) over many cached inodes, timed, while the workers create and unlink.
name     = sbwalk
summary  = drop_caches, sync and umount of a filesystem holding 4000 cached inodes per worker, timed, beside create/unlink churn
run      = sbwalk -p {procs} -n 4000 -D -d {source} -t {fs} -L {prefix} {dir}
output   = result-lines
fs       = tmpfs ext4 xfs
windowed = yes
unit     = op
