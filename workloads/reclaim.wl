# The LRU walk, where trylock loops and drop-and-reacquire differ most:
# lookups of cached inodes while another process keeps dropping the slab.
name     = reclaim
summary  = stat lookups of 2000 cached inodes per worker for 3 s while drop_caches 2 runs the inode LRU walk in a loop
run      = reclaim -p {procs} -n 2000 -t 3 -D -L {prefix} {dir}
output   = result-lines
fs       = tmpfs ext4 xfs
windowed = yes
unit     = stat
