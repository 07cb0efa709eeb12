# dbench from Debian, untouched: procs client processes replay the NetBench
# file-server load (/usr/share/dbench/client.txt: create, write, read,
# rename, unlink, stat, find in a tree per client), the mixed metadata load
# of the 2010 review. With -t 4 dbench's warmup (a fifth of the run) is 0 s,
# so its operation table counts every operation between 'releasing clients'
# and its first 'cleanup' line: the harness brackets lock_stat there, and
# the throughput is dbench operations per second of that window.
name       = dbench
summary    = dbench: procs clients replaying the NetBench file-server load for 4 s (operations/s, MB/s, max latency)
packages   = dbench
run        = dbench -t 4 -D {dir} {procs}
output     = match
match.dbench = ^\s*[A-Z][A-Za-z]+\s+(?P<ops>\d+)\s+[0-9.]+\s+[0-9.]+\s*$
match.dbench = ^Throughput (?P<throughput_mb_s>[0-9.]+) MB/sec.*max_latency=(?P<max_latency_ms>[0-9.]+) ms
lock-start = releasing clients
lock-end   = cleanup
fs         = ext4 xfs
procs      = 1 2 4 8<=cpus
timeout    = 300
unit       = dbench-op
