# fsstress-like coverage of the namespace paths the other workloads leave
# out, written for make faults (every failed operation is counted by its
# errno there, the others end at the first): rename over an existing name,
# across directories and with RENAME_EXCHANGE, a directory renamed with its
# children, hard and symbolic links, xattrs that move between the inode and
# a block of their own, and worker 0 dropping the caches so that the
# lookups that follow read inodes back from the disk (iget) beside the creates.
# tmpfs has trusted.* xattrs only in the faults flavour (TMPFS_XATTR); the
# program turns its xattr operations off, with a note, where they fail.
name     = nsmix
summary  = random namespace and xattr mix for 10 s: create, mkdir, symlink, link, unlink, rmdir, rename (over names, across directories, exchange, of directories), trusted.* xattrs, cache drops
run      = nsmix -p {procs} -t 10 -D -L {prefix} {dir}
output   = result-lines
fs       = tmpfs ext4 xfs
windowed = yes
unit     = op
