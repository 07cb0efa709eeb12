# xfstests' fsstress, built static elsewhere (not a Debian package): procs
# processes doing 500 random namespace and data operations each. It prints
# nothing to read, so the operations are named (ops) and the harness's
# timing of the command gives the rate. It calls setpgid(0, 0) and stops
# early on SIGTERM: the step's limit kills its whole session instead.
# Built in /tmp, it is copied beside this file: the guest's /tmp is not kept.
name     = fsstress
summary  = xfstests fsstress: procs processes, 500 random namespace operations each, no fsync
binaries = bin/fsstress
run      = fsstress -d {dir}/fsstress -n 500 -p {procs} -s 1 -f fsync=0 -f fdatasync=0 -f sync=0
output   = none
ops      = 500 * {procs}
fs       = ext4 xfs
procs    = 1 cpus
timeout  = 300
unit     = fsstress-op
