// SPDX-License-Identifier: GPL-2.0
/*
 * reclaim - lookups of cached inodes while the icache is being reclaimed.
 *
 * Workers stat() random files of their own set; with -D one extra process
 * loops "echo 2 > drop_caches", so the dcache shrinker drops the dentries,
 * the final iputs put the inodes on the LRU, and the inode shrinker's
 * inode_lru_isolate walks the LRU (LRU lock held, i_lock by trylock) while
 * the lookups re-read the same inodes: iget_locked, hash insert,
 * inode_sb_list_add, LRU removal on the next reference.  This is where
 * trylock-and-retry (piggin) and drop-and-reacquire (chinner) differ most.
 * Without -D nothing is reclaimed and the phase measures cached stats.
 */
#include "common.h"

#include <getopt.h>
#include <sys/stat.h>

static const char usage_msg[] =
"Usage: reclaim [options] DIR\n"
"Setup: each worker creates N files in DIR/p<i> and stats them (cached).\n"
"Phase lookup-under-reclaim: workers fstatat random files of their set for\n"
"-t seconds (or -r rounds of N stats) while, with -D, one extra process\n"
"loops drop_caches 2 (key drops=).  ops = stats.\n"
"  -n N       files per worker (default 5000)\n"
"  -t SECS    phase length in seconds (default 3)\n"
"  -r R       instead of -t: R*N stats per worker\n"
"  -S SEED    random seed (default 1)\n";

static long nfiles = 5000, seconds = 3, rounds;
static uint64_t seed = 1;
static struct copts opt;

static void stat_one(int dfd, long k)
{
	char name[32];
	struct stat st;

	snprintf(name, sizeof(name), "f%ld", k);
	if (fstatat(dfd, name, &st, 0) < 0)
		fail("fstatat %s", name);
}

static void populate(int dfd)
{
	char name[32];
	long k;

	for (k = 0; k < nfiles; k++) {
		int fd;

		snprintf(name, sizeof(name), "f%ld", k);
		fd = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0)
			fail("create %s", name);
		if (close(fd) < 0)
			fail("close %s", name);
		stat_one(dfd, k);
	}
}

/* Is the phase over?  now is 0 when the caller did not read the clock. */
static int over(uint64_t done, uint64_t now)
{
	if (rounds)
		return done >= (uint64_t)rounds * nfiles;
	if (!now) {
		/* -q: read the clock now and then, not per stat. */
		if (done % 64)
			return 0;
		now = now_ns();
	}
	return now >= READ_ONCE(ctl->deadline);
}

static void lookups(int dfd, int id)
{
	uint64_t s = rnd_seed(seed, id), now = 0, done = 0;

	while (!over(done, now)) {
		uint64_t t = 0;

		if (!opt.nolat)
			t = now_ns();
		stat_one(dfd, rnd_below(&s, nfiles));
		if (!opt.nolat) {
			now = now_ns();
			hist_add(&me->hist, now - t);
		}
		me->ops = ++done;
	}
}

static int worker(int id, void *arg)
{
	char path[4096];
	int dfd = worker_dir(opt.dir, id, path, sizeof(path));

	(void)arg;
	populate(dfd);
	wbarrier();
	lookups(dfd, id);
	__atomic_add_fetch(&ctl->ndone, 1, __ATOMIC_RELEASE);
	wbarrier();
	close(dfd);
	if (rm_tree(path) < 0)
		fail("removing %s", path);
	return 0;
}

/* The extra process: reclaim dentries and inodes until workers finish. */
static int dropper(int id, void *arg)
{
	(void)id;
	(void)arg;
	wbarrier();
	while (__atomic_load_n(&ctl->ndone, __ATOMIC_ACQUIRE) < opt.nprocs) {
		drop_caches(2, 0);
		me->cnt[0]++;
	}
	wbarrier();
	return 0;
}

static int member(int id, void *arg)
{
	return id < opt.nprocs ? worker(id, arg) : dropper(id, arg);
}

int main(int argc, char **argv)
{
	struct phase ph = { 0 };
	struct report r;
	struct team t;
	struct hist h;
	int c, n;

	prog = "reclaim";
	usage_text = usage_msg;
	copts_init(&opt);
	while ((c = getopt(argc, argv, COMMON_OPTSTR "n:t:r:S:")) != -1) {
		if (copts_parse(&opt, c, optarg))
			continue;
		if (c == 'n')
			nfiles = parse_long(optarg, "-n", 1, 100000000);
		else if (c == 't')
			seconds = parse_long(optarg, "-t", 1, 86400);
		else if (c == 'r')
			rounds = parse_long(optarg, "-r", 1, 1000000);
		else if (c == 'S')
			seed = parse_long(optarg, "-S", 0, 0x7fffffffffffffffL);
	}
	copts_finish(&opt, argc, argv);

	n = opt.nprocs;
	team_start(&t, n + opt.drop, member, NULL);
	team_wait(&t);
	if (!rounds)
		ph.dur_ns = seconds * 1000000000ull;
	/*
	 * The clock (and the lock_stat window) stop when the lookups end;
	 * the dropper may still be finishing its last drop then.
	 */
	phase_run_range(&t, &opt, &ph, "lookup-under-reclaim", 0, n);
	team_wait_range(&t, n, t.n);
	team_hist(&t, 0, n, &h);
	rep_start(&r, ph.name, team_ops(&t, 0, n), ph.t1 - ph.t0, n);
	rep_hist(&r, &h);
	rep_kv(&r, "drops", team_cnt(&t, n, t.n, 0));
	rep_kv(&r, "files", (uint64_t)nfiles * n);
	rep_kv(&r, "seed", seed);
	rep_end(&r);
	team_release(&t);
	team_finish(&t);
	return 0;
}
