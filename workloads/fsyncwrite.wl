# Writeback meets i_lock: every fsync moves the inode through the wb lists
# (wb->list_lock, then i_lock) and back.
name     = fsyncwrite
summary  = small-file buffered writes with fsync: open/truncate, write 4 KiB, fsync, close over a ring of 16 files per worker
run      = fsyncwrite -p {procs} -n 300 -k 16 -L {prefix} {dir}
output   = result-lines
fs       = ext4 xfs
windowed = yes
unit     = write+fsync
difference = writeback lists under i_lock
