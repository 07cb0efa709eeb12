# Dave Chinner's fs_mark runs scaled to this machine: create a tree, drop
# caches, walk it cold (every inode read back through the hash), drop caches,
# unlink it.
name     = fstree
summary  = create / walk / unlink trees of empty files, one tree per worker, caches dropped between phases
run      = fstree -p {procs} -n 2000 -f 500 -D -L {prefix} {dir}
output   = result-lines
fs       = tmpfs ext4 xfs
windowed = yes
default  = yes
unit     = file
difference = list membership under i_lock (create, unlink)
difference.walk = cold lookups (hash miss, then insert)
