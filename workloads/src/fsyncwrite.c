// SPDX-License-Identifier: GPL-2.0
/*
 * fsyncwrite - small buffered writes with fsync over a ring of files.
 *
 * Every cycle truncates and dirties an inode (__mark_inode_dirty: i_lock,
 * then wb->list_lock to queue it on the writeback lists) and fsync writes
 * it back (writeback_single_inode, inode_sync_complete, requeue under
 * wb->list_lock -> i_lock).  This is where the writeback lists meet i_lock,
 * the lock order both designs had to keep (wb->list_lock -> i_lock).  On
 * tmpfs fsync does no I/O, so only the dirtying side remains.
 */
#include "common.h"

#include <getopt.h>
#include <sys/stat.h>

static const char usage_msg[] =
"Usage: fsyncwrite [options] DIR\n"
"Each worker loops N times over a ring of K files in DIR/p<i>:\n"
"open(O_CREAT|O_TRUNC|O_WRONLY), write BYTES, fsync, close.\n"
"Phase write-fsync; ops = cycles.\n"
"  -n N       cycles per worker (default 1000)\n"
"  -k K       files in the ring (default 16)\n"
"  -s BYTES   bytes per write (default 4096)\n";

static long ncycles = 1000, nring = 16, wsize = 4096;
static struct copts opt;

static void cycle(int dfd, long k, const char *buf)
{
	char name[32];
	ssize_t r;
	int fd;

	snprintf(name, sizeof(name), "f%ld", k);
	fd = openat(dfd, name, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd < 0)
		fail("open %s", name);
	r = write(fd, buf, wsize);
	if (r < 0)
		fail("write %s", name);
	if (r != wsize)
		failx("write %s: short write, %zd of %ld bytes", name, r,
		      wsize);
	if (fsync(fd) < 0)
		fail("fsync %s", name);
	if (close(fd) < 0)
		fail("close %s", name);
}

static int worker(int id, void *arg)
{
	char path[4096];
	int dfd = worker_dir(opt.dir, id, path, sizeof(path));
	char *buf = malloc(wsize);
	long i;

	(void)arg;
	if (!buf)
		fail("malloc %ld", wsize);
	/* Not zeros: no filesystem may shortcut the write. */
	memset(buf, 'a' + id % 26, wsize);
	wbarrier();
	for (i = 0; i < ncycles; i++) {
		uint64_t t = 0;

		if (!opt.nolat)
			t = now_ns();
		cycle(dfd, i % nring, buf);
		if (!opt.nolat)
			hist_add(&me->hist, now_ns() - t);
		me->ops++;
	}
	wbarrier();
	close(dfd);
	if (rm_tree(path) < 0)
		fail("removing %s", path);
	return 0;
}

int main(int argc, char **argv)
{
	struct phase ph = { 0 };
	struct report r;
	struct team t;
	struct hist h;
	int c;

	prog = "fsyncwrite";
	usage_text = usage_msg;
	copts_init(&opt);
	while ((c = getopt(argc, argv, COMMON_OPTSTR "n:k:s:")) != -1) {
		if (copts_parse(&opt, c, optarg))
			continue;
		if (c == 'n')
			ncycles = parse_long(optarg, "-n", 1, 100000000);
		else if (c == 'k')
			nring = parse_long(optarg, "-k", 1, 10000000);
		else if (c == 's')
			wsize = parse_long(optarg, "-s", 1, 1L << 26);
	}
	copts_finish(&opt, argc, argv);

	team_start(&t, opt.nprocs, worker, NULL);
	team_wait(&t);
	phase_run(&t, &opt, &ph, "write-fsync");
	team_hist(&t, 0, t.n, &h);
	rep_start(&r, ph.name, team_ops(&t, 0, t.n), ph.t1 - ph.t0, t.n);
	rep_hist(&r, &h);
	rep_kv(&r, "bytes", team_ops(&t, 0, t.n) * wsize);
	rep_kv(&r, "ring", nring);
	rep_end(&r);
	team_release(&t);
	team_finish(&t);
	return 0;
}
