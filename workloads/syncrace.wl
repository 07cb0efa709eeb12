# base's sync hole (issue 28): sync() and syncfs() against final iputs of
# live dirty files, with the inode cache's locks kept busy; every file written
# before the sync started must be on the disk when it returns. The race needs
# 3 vCPUs or more (final iput, lock holder and flusher at once): below that
# the workload only shows that nothing else loses data. A correctness check, not
# a measure of a design difference: it declares none. `make synchole-check`
# shows it catching base's old hole in a mutant that widens the window.
name     = syncrace
summary  = rounds of 64 new 4 KiB files, then sync or syncfs while stat and drop_caches 2 churn their final iputs beside create/unlink churn on tmpfs; each file's block checked on the disk (FIEMAP, O_DIRECT) the moment the sync returns, for 20 s
run      = syncrace -p {procs} -n 64 -t 20 -D -d {dev} -c /tmp -L {prefix} {dir}
output   = result-lines
fs       = ext4 xfs
windowed = yes
unit     = file
background = all
