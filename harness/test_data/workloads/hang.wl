# A guest step that never finishes: the host must kill the boot at its timeout.
name    = hang
summary = sleeps far beyond any boot timeout
run     = sleep 3600
output  = result-lines
fs      = tmpfs
procs   = 1
timeout = 3600
