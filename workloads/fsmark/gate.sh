# The fs_mark gate: usage: sh gate.sh PROCS FILES SIZE DIR
#
# PROCS fs_mark processes each create FILES files of SIZE bytes in a
# directory of their own under DIR (16 subdirectories each, no fsync), as
# Dave Chinner ran it with one -d per process; caches are dropped; PROCS
# finds walk the trees in parallel (busybox find lstat()s every entry, so
# every inode is read back through the inode cache); caches are dropped;
# PROCS rm -rf remove them in parallel. Each phase runs under the harness's
# `phase NAME OPS COMMAND`: timed, lock_stat reset before and saved after,
# one result line. fs_mark prints its own rate as well.
set -e
procs=$1 files=$2 size=$3 dir=$4
ops=$((procs * files))
mkdir -p "$dir"
trees=$(i=1; while [ "$i" -le "$procs" ]; do echo "$dir/p$i"; i=$((i + 1)); done)

drop_caches() {
	sync
	echo 3 > /proc/sys/vm/drop_caches
}

# each CMD TREE...: CMD TREE for every tree at once (output discarded:
# phase prints its result line on the same stdout); fails if any fails.
each='cmd=$1; shift; pids=""
for tree; do $cmd "$tree" > /dev/null & pids="$pids $!"; done
for pid in $pids; do wait "$pid"; done'

phase create "$ops" fs_mark -k -S 0 -L 1 -D 16 -s "$size" -n "$files" \
	-l "$TMPDIR/fs_mark.log" $(for tree in $trees; do echo "-d $tree"; done)
drop_caches
phase traverse "$ops" sh -c "$each" each "find" $trees
drop_caches
phase unlink "$ops" sh -c "$each" each "rm -rf" $trees
