# The smallest signal of who takes which lock how often: new_inode and
# inode_sb_list_add, the ext4 hash insert, i_state under i_lock, and on unlink
# the final iput, evict and the sb-list removal.
name     = create-unlink
summary  = parallel create+unlink of one empty file per worker, each in its own directory
run      = createunlink -p {procs} -n 2000 -L {prefix} {dir}
output   = result-lines
fs       = tmpfs ext4 xfs
procs    = 1 cpus
windowed = yes
timeout  = 300
default  = yes
unit     = create+unlink
difference = list membership under i_lock (create, unlink)
