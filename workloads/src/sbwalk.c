// SPDX-License-Identifier: GPL-2.0
/*
 * sbwalk - the walkers of sb->s_inodes, timed, with many cached inodes and
 * creates/unlinks running beside them.
 *
 * drop-caches: drop_pagecache_sb holds s_inode_list_lock across the whole
 * list and takes every inode's i_lock (level 1; level 3 adds the LRU
 * shrink).  sync: sync_inodes_sb/wait_sb_inodes and sync_bdevs.  umount:
 * evict_inodes (and fsnotify_unmount_inodes) walk the list and evict every
 * inode.  Meanwhile the churn workers' new_inode and evict take the same
 * list lock (inode_sb_list_add/del), so a design that holds it long, or
 * makes walkers retry, shows in both the walk time and the churn latency.
 */
#include "common.h"
#include "faults.h"

#include <getopt.h>
#include <sys/mount.h>
#include <sys/stat.h>

static const char usage_msg[] =
"Usage: sbwalk [options] DIR\n"
"Setup: each worker creates N files in DIR/p<i> (inodes stay cached).\n"
"Then the workers create+unlink one file in a loop (churn) while the parent\n"
"times single operations, one phase each (ops=1, key churn_pairs= says how\n"
"many pairs the churn did during it):\n"
"  drop-caches  write LEVEL to drop_caches (only with -D)\n"
"  sync         sync()\n"
"Then the churn stops (phase churn: ops = pairs done during the timed\n"
"operations, elapsed_ns = their total time, latencies of those pairs), the\n"
"workers re-stat their files and exit, and, with -d and -t:\n"
"  umount       umount DIR (evict_inodes of N*P cached inodes); DIR is\n"
"               mounted again afterwards with -d/-t/-o\n"
"  -n N       files per worker (default 10000)\n"
"  -s BYTES   bytes written to each file (default 0: the walks then skip\n"
"             the inodes under i_lock instead of dropping their pages)\n"
"  -l LEVEL   drop_caches level of the drop-caches phase (default 1: the\n"
"             sb->s_inodes walk only, inodes stay cached; 3 adds the\n"
"             shrinkers)\n"
"  -d DEV     device (or source, e.g. tmpfs) mounted on DIR; with -t\n"
"             enables the umount phase; DIR must be a mount point\n"
"  -t FSTYPE  filesystem type for the mount after the umount\n"
"  -o DATA    mount options for that mount (e.g. size=1g for tmpfs)\n"
"-d/-t need " GUEST_ENV "=1.\n"
"With " FAULTS_ENV "=1 (a faults step) the workers' creates, writes, churn\n"
"and re-stats may fail (the parent's timed operations are not armed): each\n"
"failure is counted (a last line: phase errors, errors.<op>.<ERRNO>=N) and\n"
"the work goes on; an umount or mount that fails is counted and ends the\n"
"umount phase.\n";

enum { K_CREATE, K_WRITE, K_CLOSE, K_CHURN_CREATE, K_CHURN_CLOSE,
	K_CHURN_UNLINK, K_FSTATAT, K_UMOUNT, K_MOUNT, K_TEARDOWN, NR_KEYS };
static const char *const keys[NR_KEYS] = {
	"create", "write", "close", "churn_create", "churn_close",
	"churn_unlink", "fstatat", "umount", "mount", "teardown",
};

static long nfiles = 10000, fsize, level = 1;
static unsigned char *made;	/* faults_made() */
static const char *dev, *fstype, *mdata;
static struct copts opt;

static void populate(int dfd)
{
	static char buf[65536];
	char name[32];
	long k;

	memset(buf, 'x', sizeof(buf));
	for (k = 0; k < nfiles; k++) {
		long left = fsize;
		int fd;

		snprintf(name, sizeof(name), "f%ld", k);
		fd = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0) {
			soft(K_CREATE, "create %s", name);
			continue;
		}
		if (made)
			made[k] = 1;
		while (left > 0) {
			long n = left < (long)sizeof(buf) ? left : (long)sizeof(buf);

			ssize_t r = write(fd, buf, n);

			if (r < 0) {
				soft(K_WRITE, "write %s", name);
				break;
			}
			if (r != n)
				failx("write %s: short write", name);
			left -= n;
		}
		if (close(fd) < 0)
			soft(K_CLOSE, "close %s", name);
	}
}

static void recache(int dfd)
{
	char name[32];
	struct stat st;
	long k;

	for (k = 0; k < nfiles; k++) {
		if (!faults_exists(made, k))
			continue;
		snprintf(name, sizeof(name), "f%ld", k);
		if (fstatat(dfd, name, &st, 0) < 0)
			soft(K_FSTATAT, "fstatat %s", name);
	}
}

static void churn(int dfd)
{
	while (!READ_ONCE(ctl->stop)) {
		int timed = !opt.nolat && READ_ONCE(ctl->measure);
		uint64_t t = timed ? now_ns() : 0;
		int fd;

		fd = openat(dfd, "churn", O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0) {
			int exists = errno == EEXIST;

			soft(K_CHURN_CREATE, "create churn");
			/* Left by an unlink that failed: it goes now. */
			if (!exists)
				goto done;
		} else if (close(fd) < 0) {
			soft(K_CHURN_CLOSE, "close churn");
		}
		if (unlinkat(dfd, "churn", 0) < 0)
			soft(K_CHURN_UNLINK, "unlink churn");
done:
		if (timed)
			hist_add(&me->hist, now_ns() - t);
		WRITE_ONCE(me->ops, me->ops + 1);
	}
}

static int worker(int id, void *arg)
{
	char path[4096];
	int dfd = worker_dir(opt.dir, id, path, sizeof(path));

	(void)arg;
	made = faults_made(nfiles);
	faults_arm(1);
	populate(dfd);
	faults_arm(0);
	wbarrier();
	faults_arm(1);
	churn(dfd);
	faults_arm(0);
	wbarrier();
	if (dev) {
		/* Re-cache what -l 3 dropped, then let go of DIR. */
		faults_arm(1);
		recache(dfd);
		faults_arm(0);
		close(dfd);
		wbarrier();
		return 0;
	}
	close(dfd);
	if (rm_tree(path) < 0)
		soft(K_TEARDOWN, "removing %s", path);
	return 0;
}

static int cleaner(int id, void *arg)
{
	char path[4096];

	(void)arg;
	snprintf(path, sizeof(path), "%s/p%d", opt.dir, id);
	if (rm_tree(path) < 0)
		soft(K_TEARDOWN, "removing %s", path);
	return 0;
}

/* Wait until every worker has done a pair: the churn is really running. */
static void churn_warm(struct team *t)
{
	struct timespec ms = { 0, 1000000 };
	int i;

	for (i = 0; i < t->n; i++) {
		while (!READ_ONCE(t->slot[i].ops)) {
			team_check(t);
			nanosleep(&ms, NULL);
		}
	}
}

struct window {
	uint64_t pairs, ns;
};

static void op_drop(void)
{
	drop_caches(level, 0);
}

static void op_sync(void)
{
	sync();
}

/* One timed single operation with the churn running. */
static void timed_op(struct team *t, const char *name, void (*op)(void),
		     struct window *w)
{
	uint64_t c0, c1, t0, t1;
	struct report r;

	lsw_begin(&opt);
	c0 = team_ops(t, 0, t->n);
	WRITE_ONCE(t->ctl->measure, 1);
	t0 = now_ns();
	op();
	t1 = now_ns();
	WRITE_ONCE(t->ctl->measure, 0);
	c1 = team_ops(t, 0, t->n);
	lsw_end(&opt, name);
	w->pairs += c1 - c0;
	w->ns += t1 - t0;
	rep_start(&r, name, 1, t1 - t0, t->n);
	rep_kv(&r, "churn_pairs", c1 - c0);
	rep_kv(&r, "inodes", (uint64_t)nfiles * t->n);
	rep_end(&r);
}

static void run_churn(struct team *t)
{
	struct window w = { 0, 0 };
	uint64_t start;
	struct report r;
	struct hist h;

	team_reset_stats(t);
	start = now_ns();
	team_release(t);
	churn_warm(t);
	if (opt.drop)
		timed_op(t, "drop-caches", op_drop, &w);
	timed_op(t, "sync", op_sync, &w);
	WRITE_ONCE(t->ctl->stop, 1);
	team_wait(t);
	team_hist(t, 0, t->n, &h);
	rep_start(&r, "churn", w.pairs, w.ns, t->n);
	rep_hist(&r, &h);
	rep_kv(&r, "all_pairs", team_ops(t, 0, t->n));
	rep_kv(&r, "all_ns", now_ns() - start);
	rep_end(&r);
}

static void run_umount(int n)
{
	uint64_t t0, t1;
	struct report r;

	/* Second line of defence: parse_args() refused -d already. */
	if (!is_guest())
		failx("refusing to umount outside the guest");
	lsw_begin(&opt);
	t0 = now_ns();
	if (umount(opt.dir) < 0) {
		soft(K_UMOUNT, "umount %s (does a process still use it?)",
		     opt.dir);
		faults_disk(0);
		return;
	}
	t1 = now_ns();
	lsw_end(&opt, "umount");
	faults_disk(0);
	if (mount(dev, opt.dir, fstype, 0, mdata) < 0) {
		soft(K_MOUNT, "mount -t %s %s %s", fstype, dev, opt.dir);
		return;
	}
	rep_start(&r, "umount", 1, t1 - t0, n);
	rep_kv(&r, "inodes", (uint64_t)nfiles * n);
	rep_end(&r);
}

static void parse_args(int argc, char **argv)
{
	int c;

	copts_init(&opt);
	while ((c = getopt(argc, argv, COMMON_OPTSTR "n:s:l:d:t:o:")) != -1) {
		if (copts_parse(&opt, c, optarg))
			continue;
		if (c == 'n')
			nfiles = parse_long(optarg, "-n", 1, 100000000);
		else if (c == 's')
			fsize = parse_long(optarg, "-s", 0, 1L << 30);
		else if (c == 'l')
			level = parse_long(optarg, "-l", 1, 3);
		else if (c == 'd')
			dev = optarg;
		else if (c == 't')
			fstype = optarg;
		else if (c == 'o')
			mdata = optarg;
	}
	if (!dev != !fstype)
		usage_error("-d and -t go together");
	if (dev && !is_guest())
		usage_error("-d/-t umount and mount DIR: refused unless %s=1 "
			    "(set only by the guest's init)", GUEST_ENV);
	copts_finish(&opt, argc, argv);
	if (dev && !is_mountpoint(opt.dir))
		usage_error("-d: %s is not a mount point", opt.dir);
}

int main(int argc, char **argv)
{
	struct team t;
	int n;

	prog = "sbwalk";
	usage_text = usage_msg;
	parse_args(argc, argv);
	faults_init();
	n = opt.nprocs;

	team_start(&t, n, worker, NULL);
	team_wait(&t);
	faults_disk(1);
	run_churn(&t);
	if (!dev)
		faults_disk(0);
	team_release(&t);
	if (dev) {
		team_wait(&t);
		team_release(&t);
	}
	team_finish(&t);
	if (dev) {
		run_umount(n);
		team_start(&t, n, cleaner, NULL);
		team_finish(&t);
	}
	faults_report(keys, NR_KEYS, n);
	return 0;
}
