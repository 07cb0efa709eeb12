name     = fio-filestat
summary  = fio filestat engine: each job stats 1000 laid-out files in its own directory (lookup, igrab/iput of cached inodes)
run      = fiostep {prefix} {procs} 1000 /workloads/fio/filestat.fio layout
output   = fio-json
fs       = tmpfs ext4 xfs
windowed = yes
unit     = stat
