# A step whose program fails: the step is a workload-error with its stderr.
name    = fails
summary = prints a complaint on stderr and exits 3
run     = sh -c 'echo no such thing >&2; exit 3'
output  = result-lines
fs      = tmpfs
procs   = 1
timeout = 30
