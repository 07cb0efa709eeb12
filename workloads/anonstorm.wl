# The shared anon inode: eventfd, epoll and timerfd files all stand on the
# one inode of anon_inodefs. Create and close take its i_lock twice in 6.1
# and chinner (d_instantiate, dentry_kill) and four times in piggin, whose
# i_refs is under i_lock (ihold at create, iput at close): one system-wide
# per-inode lock that every CPU shares. The filesystem plays no part (tmpfs
# only holds the program's directory).
name     = anonstorm
summary  = eventfd, epoll and timerfd create+close storms, 1000 per worker each: every file stands on the one shared anon inode
run      = anonstorm -p {procs} -r 1000 -L {prefix} {dir}
output   = result-lines
fs       = tmpfs
windowed = yes
timeout  = 60
unit     = create+close
shared-inodes = 1
default  = yes
count-boots = yes
difference = the reference count under i_lock
