# Test workload (harness/tests/test_boot.py): kernel parameters of its own,
# kept apart from test_data/workloads, whose mixes test_soak draws,
# and the count boots. A tiny igetstorm on tmpfs with a 16-bucket inode hash.
name     = crowded
summary  = open_by_handle_at over 50 files, 2 rounds, with ihash_entries=16
run      = igetstorm -p {procs} -n 50 -r 2 -L {prefix} {dir}
output   = result-lines
cmdline  = ihash_entries=16
fs       = tmpfs
windowed = yes
count-boots = yes
unit     = open
