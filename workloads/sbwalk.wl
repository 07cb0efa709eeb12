# The walkers of sb->s_inodes (drop_pagecache_sb, sync, evict_inodes at
# umount) over many cached inodes, timed, while the workers create and unlink.
# It unmounts {dir}, so it runs from / (a step works in {tmp}, on {dir}).
# Not in the default matrix (issue 24): its figures are per walk, and each
# walk's lock counts mix the walker's with however many creates and unlinks
# the churn managed meanwhile, so they measure the two processes' speeds
# more than a design; what piggin's RCU walk changes is the time a walker
# blocks the churn, which TCG timing cannot resolve in one walk. Its one
# strong count (piggin's hash_insert retries at 4 vCPUs on ext4, the churn's
# inode number reuse) hotinode's recreate phase shows at 2 and 4 vCPUs.
name     = sbwalk
summary  = drop_caches, sync and umount of a filesystem holding 1000 cached inodes per worker, timed, beside create/unlink churn
run      = cd / && sbwalk -p {procs} -n 1000 -D -d {source} -t {fs} -L {prefix} {dir}
output   = result-lines
fs       = tmpfs ext4 xfs
windowed = yes
unit     = op
background = all
difference = sb inode list walks (RCU in piggin)
