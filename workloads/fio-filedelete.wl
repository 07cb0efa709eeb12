name     = fio-filedelete
summary  = fio filedelete engine: each job unlinks 1000 laid-out files in its own directory (final iput, evict, sb list and hash removal)
run      = fiostep {prefix} {procs} 1000 /workloads/fio/filedelete.fio layout
output   = fio-json
fs       = tmpfs ext4 xfs
windowed = yes
unit     = delete
