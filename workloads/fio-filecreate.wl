# fio's metadata engines, as a reviewer would run them: one job per vCPU.
name     = fio-filecreate
summary  = fio filecreate engine: each job creates 1000 files in its own directory (new_inode, sb list add, hash insert on ext4)
run      = fiostep {prefix} {procs} 1000 /workloads/fio/filecreate.fio
output   = fio-json
fs       = tmpfs ext4 xfs
windowed = yes
default  = yes
unit     = create
