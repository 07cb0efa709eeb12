# sbwalk on XFS alone (issue 38): the walkers of sb->s_inodes (drop_caches,
# sync, umount) beside create/unlink churn, where XFS recycles inodes: the
# case piggin's 0011 exists for (a recycled inode waits for a grace period
# before it re-enters an sb list that RCU walkers may be on), so its
# sb_list_gp_wait counter fires here and nowhere in the default matrix.
# piggin-2010 (without 0011) against piggin and chinner shows what that wait
# costs. Not in the default matrix (sbwalk.wl says why): make duel runs it.
name     = sbwalk-churn
summary  = drop_caches, sync and umount of an XFS filesystem holding 1000 cached inodes per worker, timed, beside create/unlink churn
run      = cd / && sbwalk -p {procs} -n 1000 -D -d {source} -t {fs} -L {prefix} {dir}
output   = result-lines
fs       = xfs
windowed = yes
unit     = op
default  = no
background = all
difference = sb inode list walks beside XFS recycling (RCU in piggin; 0011's grace-period wait)
