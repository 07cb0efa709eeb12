# Coverage for lockdep, not speed: every icache path the other workloads
# touch plus rename, link, inotify, drop_caches and remount, mixed at random.
name     = torture
summary  = lockdep torture mix for 10 s: create, unlink, rename, link, open_by_handle, inotify, drop_caches, remount
run      = torture -p {procs} -t 10 -D -m -L {prefix} {dir}
output   = result-lines
fs       = tmpfs ext4 xfs
windowed = yes
unit     = op
