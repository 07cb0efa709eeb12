# Fault injection of a faults step (make faults; harness/guest/faults.py says
# what each setting means). Sourced by /init after inode-duel.sh: emit, MARK
# and HARNESS_DIR come from there. The plan calls faults_arm before a step's run_step
# and faults_save after it.

# Overridable so the host's tests can point them at a scratch folder.
FAULTS_DEBUGFS=${FAULTS_DEBUGFS:-/sys/kernel/debug}
FAULTS_SYSBLOCK=${FAULTS_SYSBLOCK:-/sys/block}
FAULTS_SLAB=${FAULTS_SLAB:-/sys/kernel/slab}
FAULTS_ATTRS="failslab fail_page_alloc fail_make_request"

# The slab caches failslab may fail (marked at boot with slub_debug=A,...).
faults_caches() {
	for f in "$FAULTS_SLAB"/*/failslab; do
		[ "$(cat "$f" 2>/dev/null)" = 1 ] && { f=${f%/failslab}; echo "${f##*/}"; }
	done
}

# faults_set ATTR PERCENT TIMES: one fault_attr, for make-it-fail tasks only,
# every injected fault printed with its stack (no rate limit).
faults_set() {
	d=$FAULTS_DEBUGFS/$1
	echo 0 > "$d/probability"
	echo 1 > "$d/interval"
	echo 0 > "$d/space"
	echo "$3" > "$d/times"
	echo Y > "$d/task-filter"
	echo 2 > "$d/verbose"
	echo 0 > "$d/verbose_ratelimit_interval_ms"
	echo "$2" > "$d/probability"
}

# faults_arm DEVICE SLAB% SLAB_TIMES PAGE% PAGE_TIMES BLOCK% BLOCK_TIMES SCOPE
# SCOPE task: the armed tasks' own block requests fail (the disk stays
# eligible for the whole step); disk: every request to the disk, while the
# program holds INODE_DUEL_FAULTS_DISK at 1 (its timed phases).
faults_arm() {
	FAULTS_DISK=none FAULTS_ERROR=
	for attr in $FAULTS_ATTRS; do
		if [ ! -d "$FAULTS_DEBUGFS/$attr" ]; then
			FAULTS_ERROR="no $FAULTS_DEBUGFS/$attr: not a faults kernel"
			echo "$MARK faults: $FAULTS_ERROR"
			return 0
		fi
	done
	faults_set failslab "$2" "$3"
	echo N > "$FAULTS_DEBUGFS/failslab/ignore-gfp-wait"
	echo Y > "$FAULTS_DEBUGFS/failslab/cache-filter"
	faults_set fail_page_alloc "$4" "$5"
	echo N > "$FAULTS_DEBUGFS/fail_page_alloc/ignore-gfp-wait"
	echo Y > "$FAULTS_DEBUGFS/fail_page_alloc/ignore-gfp-highmem"
	echo 1 > "$FAULTS_DEBUGFS/fail_page_alloc/min-order"
	faults_set fail_make_request "$6" "$7"
	if [ "$1" != none ]; then
		FAULTS_DISK=$FAULTS_SYSBLOCK/${1#/dev/}/make-it-fail
		if [ "$8" = disk ]; then
			echo N > "$FAULTS_DEBUGFS/fail_make_request/task-filter"
			echo 0 > "$FAULTS_DISK"
			export INODE_DUEL_FAULTS_DISK="$FAULTS_DISK"
		else
			echo 1 > "$FAULTS_DISK"
		fi
	fi
	FAULTS_TIMES="$3 $5 $7"
	export INODE_DUEL_FAULTS=1
}

# faults_save ID: the caches failslab may fail, and per attr what was asked
# and how many faults are left, as the record ID.faults; then nothing fails
# any more.
faults_save() {
	name=$1.faults out=$HARNESS_DIR/$1.faults
	# Not ": > FILE": a redirection that fails on a special builtin ends the
	# shell, and this shell is PID 1.
	rm -f "$out"
	if [ -n "$FAULTS_ERROR" ]; then
		echo "error $FAULTS_ERROR" >> "$out"
	else
		echo "caches" $(faults_caches) >> "$out"
		set -- "$1" $FAULTS_TIMES
		for attr in $FAULTS_ATTRS; do
			d=$FAULTS_DEBUGFS/$attr
			echo "$attr probability=$(cat "$d/probability") times=$2" \
				"left=$(cat "$d/times") task_filter=$(cat "$d/task-filter")" >> "$out"
			echo 0 > "$d/probability"
			echo 0 > "$d/times"
			shift
		done
		[ "$FAULTS_DISK" != none ] && echo 0 > "$FAULTS_DISK"
	fi
	unset INODE_DUEL_FAULTS INODE_DUEL_FAULTS_DISK
	emit "$name" "$out"
	rm -f "$out"
}
