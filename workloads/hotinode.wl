# A hot inode: its reference count, where the designs disagree most plainly.
# piggin's i_refs is a plain count under i_lock, so every reference taken and
# dropped takes the inode's i_lock; 6.1 and chinner keep the atomic i_count
# and drop a reference without the lock unless it is the last. All workers
# pick among the same 4 files, so that per-inode lock is one they share.
# Phases, 1000 operations per worker each:
# - path: open, fstat, close by name. No reference count moves in any design
#   (the file pins the dentry): the control, bounding the difference at zero.
# - handle: open_by_handle_at, fstat, close: a lookup in the inode cache and a
#   reference taken and dropped per open. On ext4 piggin's find_inode_fast
#   trylocks the hot inode's i_lock under the hash bucket lock and, when a
#   worker holds it, drops the bucket lock and starts again (counter
#   hash_find_fast): the retries land on the shared bucket lock. On XFS (its
#   own inode cache, igrab) only the i_refs difference remains.
# - write-vs-sync: open_by_handle_at for writing, a 1-byte pwrite, close,
#   while another process calls syncfs in a loop. Each redirty takes i_lock
#   and the writeback list lock (nested in piggin; chinner drops i_lock and
#   re-takes the list lock first: counter wb_list_relock); the flusher's
#   walks of the dirty lists trylock the writers' inodes in piggin and retry
#   (wb_queue_io, wb_sb_inodes).
# - recreate: create and unlink a file of the worker's own in the one hot
#   directory. ext4 hands a freed inode number straight back, often to
#   another worker, whose new inode meets the old one in the hash while it
#   is still being evicted; piggin's insert_inode_locked trylocks it under
#   the bucket lock and retries (hash_insert).
# ext4 only in the default: it has the VFS hash (iget_locked, find_inode_fast)
# and writeback. tmpfs (ilookup5: find_inode, counter hash_find, and no
# writeback) repeats what igetstorm-crowded shows on tmpfs, and XFS (its own
# inode cache) the reference count alone, which anonstorm shows: each cost
# about a minute of the default run (NOTES, issue 24). To see them:
# python3 -m harness boot KERNEL --flavour debug --workloads hotinode --fs tmpfs.
name     = hotinode
summary  = every worker opens the same 4 files 1000 times by name, by handle (a reference taken and dropped per open), by handle for a 1-byte write beside a syncfs loop, then creates and unlinks 1000 files in their directory
run      = hotinode -p {procs} -k 4 -r 250 -s -L {prefix} {dir}
output   = result-lines
fs       = ext4
windowed = yes
timeout  = 120
unit     = op
# For the scaling model: the path, handle and write phases share 4 inodes
# (recreate shares their directory, whose i_lock it takes too).
shared-inodes = 4
default  = yes
count-boots = yes
background = write-vs-sync
difference.path = none: no reference count moves (the control)
difference.handle = the reference count under i_lock
difference.write-vs-sync = writeback lists under i_lock
difference.recreate = hash insert against an inode being freed
