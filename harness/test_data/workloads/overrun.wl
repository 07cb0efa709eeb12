# A step that outlives its own limit: the guest kills its process group.
name    = overrun
summary = a worker and its child sleep past the step's 3 s limit
run     = sh -c 'sleep 600 & sleep 600'
output  = result-lines
fs      = tmpfs
procs   = 1
timeout = 3
