# The 2010 review gate (Dave Chinner's fs_mark runs on LKML, and his 2023
# series): create, traverse and unlink many 64 KiB files, caches dropped between
# phases, on ext4 and XFS at 1, 2, 4 and, on a host whose boots have 8
# vCPUs, 8 processes. fs_mark comes from Debian's fsmark package; the
# phases are in workloads/fsmark/gate.sh, each timed and lock-bracketed
# by the harness's phase helper. fs_mark's own rate is the phase fs_mark.
name     = fsmark-64k
summary  = fs_mark gate, 64 KiB files (65536 bytes): create 1000 per process (fs_mark), find, rm -rf, caches dropped between
packages = fsmark
files    = fsmark/gate.sh
run      = sh /workloads/fsmark/gate.sh {procs} 1000 65536 {dir}/fsmark
output   = result-lines
match.fs_mark = ^\s*\d+\s+(?P<ops>\d+)\s+\d+\s+(?P<rate>[0-9.]+)\s+(?P<app_overhead_us>\d+)\s*$
windowed = yes
fs       = ext4 xfs
procs    = 1 2 4 8<=cpus
timeout  = 900
unit     = file
