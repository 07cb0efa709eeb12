# stress-ng from Debian, untouched: its dentry stressor creates, looks up
# and unlinks files in a directory per instance (d_alloc, the final iput,
# evict). stress-ng logs on stderr; its own bogo-op count and rate become
# the rows, and the harness brackets lock_stat between the line where it
# dispatches its stressors and its metrics header (printed once they ended).
name       = stress-dentry
summary    = stress-ng --dentry: procs instances creating, looking up and unlinking files for 10 s
packages   = stress-ng
run        = stress-ng --dentry {procs} --timeout 10s --metrics-brief --temp-path {tmp}
output     = match
match.dentry = metrc: \[\d+\] dentry\s+(?P<ops>\d+)\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\s+(?P<rate>[0-9.]+)
lock-start = dispatching hogs
lock-end   = bogo ops real time
fs         = tmpfs ext4 xfs
procs      = 1 cpus
timeout    = 120
unit       = bogo-op
