# Every open_by_handle_at decodes the handle through ext4's iget: an inode
# hash lookup (find_inode_fast under the hash lock) per open. ext4 only:
# tmpfs hashes nothing.
name     = igetstorm
summary  = open_by_handle_at over 1000 files per worker, 5 rounds, after a cache drop: one inode-hash lookup per open
run      = igetstorm -p {procs} -n 1000 -r 5 -D -L {prefix} {dir}
output   = result-lines
fs       = ext4 xfs
windowed = yes
default  = yes
unit     = open
