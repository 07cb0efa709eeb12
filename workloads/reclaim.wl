# The LRU walk against lookups, where trylock-and-retry (piggin) and
# drop-and-reacquire (chinner) meet the hot path: the workers stat their own
# small set of files while another process loops drop_caches 2, so the
# dentries go, the inodes fall onto the LRU and the shrinker's
# inode_lru_isolate walks it (LRU lock held, i_lock by trylock) while the
# lookups take the same inodes back (iget_locked on ext4, xfs_iget on XFS).
# A failed trylock retries the walk in piggin (lru_isolate) and skips the
# inode in chinner and 6.1 (lru_isolate_skip). tmpfs never reclaims an
# inode that has a name, so it has nothing to walk. Debug boots only: how
# many walks meet how many lookups depends on the two processes' speeds, so
# the figures are counts per lookup of one run, and the lookup rate beside a
# dropper is no timing worth the boots; the retries need 2 and 4 vCPUs.
name     = reclaim
summary  = 2000 stat lookups per worker over its 200 cached files while drop_caches 2 runs the inode LRU walk in a loop
run      = reclaim -p {procs} -n 200 -r 10 -D -L {prefix} {dir}
output   = result-lines
fs       = ext4 xfs
windowed = yes
unit     = stat
flavours = debug
default  = yes
count-boots = yes
background = all
difference = the LRU walk against lookups
