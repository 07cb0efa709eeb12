# fio's metadata engines, as a reviewer would run them: one job per vCPU.
# Not in the default matrix since issue 24: per file it takes the shared locks
# as fstree's create phase does (hash, sb_list, lru, wb within 0.07 per op on
# every filesystem in the reference of 2026-12-04) and shows the same design
# difference (piggin's i_lock +1.0 to +1.07 per file against mainline, fstree
# +1.0), yet it cost 36% of the default run's time; those minutes went to the
# workloads that separate the designs.
name     = fio-filecreate
summary  = fio filecreate engine: each job creates 1000 files in its own directory (new_inode, sb list add, hash insert on ext4)
run      = fiostep {prefix} {procs} 1000 /workloads/fio/filecreate.fio
packages = fio
files    = fio/filecreate.fio
output   = fio-json
fs       = tmpfs ext4 xfs
windowed = yes
default  = no
unit     = create
