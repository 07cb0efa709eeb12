# stress-ng from Debian, untouched: its dentry stressor creates, looks up
# and unlinks files in a directory per instance (d_alloc, the final iput,
# evict). stress-ng logs on stderr; its own bogo-op count and rate become
# the rows, and the harness brackets lock_stat between the line where it
# dispatches its stressors and its metrics header (printed once they ended).
# A bogo op is one file created and unlinked; stress-ng counts them 2048 at
# a time, so the run is a number of them (--dentry-ops), not a duration: a
# timeout would cut a batch and leave its files uncounted.
name       = stress-dentry
summary    = stress-ng --dentry: procs instances creating, looking up and unlinking 2048 files each
packages   = stress-ng
run        = stress-ng --dentry {procs} --dentry-ops $((2048 * {procs})) --timeout 200s --metrics-brief --temp-path {tmp}
output     = match
match.dentry = metrc: \[\d+\] dentry\s+(?P<ops>\d+)\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\s+(?P<rate>[0-9.]+)
lock-start = dispatching hogs
lock-end   = bogo ops real time
fs         = tmpfs ext4 xfs
procs      = 1 cpus
timeout    = 240
unit       = bogo-op
