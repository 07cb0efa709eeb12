# will-it-scale unlink1 in processes mode, built static elsewhere. It prints a
# line per second, five of warm-up before "measurement", then one per
# second of the run and "average:". The match key sums the total of the
# lines inside the window (measurement to average), never the warm-up.
# will-it-scale writes /tmp/willitscale.XXXXXX whatever TMPDIR says: the
# guest's /tmp is a link to {tmp}, on the filesystem under test.
name       = wis-unlink1
summary    = will-it-scale unlink1, processes: procs tasks each in a loop on its own file for 3 s
binaries   = bin/unlink1_processes
run        = unlink1_processes -t {procs} -s 3 -n
output     = match
match.unlink1   = ^min:\d+ max:(?P<max_per_task>\d+) total:(?P<ops>\d+)$
unit.max_per_task = op/s
lock-start = measurement
lock-end   = average
fs         = tmpfs ext4 xfs
procs      = 1 cpus
timeout    = 120
