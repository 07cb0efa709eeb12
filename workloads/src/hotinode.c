// SPDX-License-Identifier: GPL-2.0
/*
 * hotinode - every worker takes and drops references to the same few
 * inodes, with and without a writeback walker beside them.
 *
 * The inode's reference count is where the designs disagree most plainly:
 * piggin's i_refs is a plain integer under i_lock, so every reference
 * taken (__iget, ihold) and every one dropped (iput) takes the inode's
 * i_lock; 6.1 and chinner keep the atomic i_count, take i_lock to get a
 * reference from the hash (find_inode*, igrab) and drop one without it
 * unless it is the last (atomic_dec_and_lock).  On a hot inode that lock
 * is one instance all workers share.
 *
 * path: open + fstat + close by name.  The file pins the dentry, not the
 * inode: no reference count moves in any design, so this phase bounds
 * the difference at zero (dentry lockref, path walk only).
 *
 * handle: open_by_handle_at + fstat + close.  exportfs decodes the handle
 * through the filesystem's inode cache (ext4: iget_locked ->
 * find_inode_fast, which piggin trylocks under the hash bucket lock and
 * retries; tmpfs: ilookup5 -> find_inode; XFS: its own cache, igrab),
 * then d_obtain_alias finds the dentry and the extra reference is dropped
 * with iput: one more i_lock round trip per open in piggin.
 *
 * write-vs-sync (-s): open_by_handle_at(O_WRONLY) + a 1-byte pwrite +
 * close, while one extra process calls syncfs in a loop.  The writes keep
 * the hot inodes dirty: each redirty takes i_lock and the writeback list
 * lock (piggin nests the list lock inside i_lock; chinner drops i_lock and
 * re-takes the list lock first), and the flusher's walks of the dirty
 * lists (queue_io, writeback_sb_inodes: piggin trylocks i_lock under the
 * list lock and retries) meet the inodes the writers keep locking.
 */
#include "common.h"

#include <getopt.h>
#include <sys/stat.h>

static const char usage_msg[] =
"Usage: hotinode [options] DIR\n"
"Setup: the parent creates K files in DIR/hot and takes their handles\n"
"(name_to_handle_at); every worker picks among the same K files at random\n"
"(a fixed seed per worker and phase).  Timed phases,\n"
"each -t seconds (or -r rounds of K operations per worker):\n"
"  path            open(O_RDONLY) + fstat + close by name\n"
"  handle          open_by_handle_at(O_RDONLY) + fstat + close\n"
"  write-vs-sync   (-s) open_by_handle_at(O_WRONLY) + pwrite of 1 byte +\n"
"                  close, while one extra process calls syncfs(DIR) in a\n"
"                  loop (key syncs= counts its calls)\n"
"  recreate        create + unlink of a file of the worker's own in DIR/hot\n"
"ops = operations of the workers (the syncer's are not counted).  Needs\n"
"CAP_DAC_READ_SEARCH (root) for open_by_handle_at.\n"
"  -k K       hot files (default 4)\n"
"  -t SECS    phase length in seconds (default 1)\n"
"  -r R       instead of -t: R rounds of the K files per worker\n"
"  -s         add the handle-vs-sync phase\n";

#define MAX_HOT	64
#define FH_SIZE	(sizeof(struct file_handle) + MAX_HANDLE_SZ)

enum phase_kind { PH_PATH, PH_HANDLE, PH_WRITE_SYNC, PH_RECREATE, NR_PHASES };

static const char *const phase_name[NR_PHASES] = {
	"path", "handle", "write-vs-sync", "recreate"
};

static long nhot = 4, seconds = 1, rounds;
static int with_sync;
static struct copts opt;
static char hotdir[4096];
static char *handles;	/* nhot handles of FH_SIZE, shared by fork */

static struct file_handle *fh_at(long k)
{
	return (struct file_handle *)(handles + k * FH_SIZE);
}

static void make_hot_files(void)
{
	char name[32];
	int dfd, mnt;
	long k;

	snprintf(hotdir, sizeof(hotdir), "%s/hot", opt.dir);
	if (rm_tree(hotdir) < 0)
		fail("removing %s", hotdir);
	mkdir_p(hotdir);
	dfd = open(hotdir, O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		fail("open %s", hotdir);
	handles = calloc(nhot, FH_SIZE);
	if (!handles)
		fail("calloc handles");
	for (k = 0; k < nhot; k++) {
		int fd;

		snprintf(name, sizeof(name), "h%ld", k);
		fd = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0)
			fail("create %s", name);
		if (write(fd, "x", 1) != 1)
			fail("write %s", name);
		if (close(fd) < 0)
			fail("close %s", name);
		fh_at(k)->handle_bytes = MAX_HANDLE_SZ;
		if (name_to_handle_at(dfd, name, fh_at(k), &mnt, 0) < 0)
			fail("name_to_handle_at %s", name);
	}
	close(dfd);
}

/* Is the phase over?  Rounds, else the parent's deadline. */
static int over(uint64_t done, uint64_t now)
{
	if (rounds)
		return done >= (uint64_t)rounds * nhot;
	if (!now) {
		/* -q: read the clock now and then, not per operation. */
		if (done % 64)
			return 0;
		now = now_ns();
	}
	return now >= READ_ONCE(ctl->deadline);
}

static void recreate(int dfd, int id)
{
	char name[32];
	int fd;

	snprintf(name, sizeof(name), "r%d", id);
	fd = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY, 0644);
	if (fd < 0)
		fail("create %s", name);
	if (close(fd) < 0)
		fail("close %s", name);
	if (unlinkat(dfd, name, 0) < 0)
		fail("unlink %s", name);
}

static void one_op(enum phase_kind kind, int dfd, int mfd, long k)
{
	char name[32];
	struct stat st;
	int fd;

	if (kind == PH_PATH) {
		snprintf(name, sizeof(name), "h%ld", k);
		fd = openat(dfd, name, O_RDONLY);
	} else {
		fd = open_by_handle_at(mfd, fh_at(k),
				       kind == PH_WRITE_SYNC ? O_WRONLY : O_RDONLY);
	}
	if (fd < 0)
		fail("%s h%ld", kind == PH_PATH ? "open" : "open_by_handle_at", k);
	if (kind == PH_WRITE_SYNC) {
		if (pwrite(fd, "y", 1, 0) != 1)
			fail("pwrite h%ld", k);
	} else if (fstat(fd, &st) < 0) {
		fail("fstat h%ld", k);
	}
	if (close(fd) < 0)
		fail("close h%ld", k);
}

static void run_ops(enum phase_kind kind, int dfd, int mfd, int id)
{
	/* Random files, so workers meet on one about every K-th operation. */
	uint64_t s = rnd_seed(1 + kind, id), done = 0, now = 0;

	while (!over(done, now)) {
		uint64_t t = 0;

		if (!opt.nolat)
			t = now_ns();
		if (kind == PH_RECREATE)
			recreate(dfd, id);
		else
			one_op(kind, dfd, mfd, rnd_below(&s, nhot));
		if (!opt.nolat) {
			now = now_ns();
			hist_add(&me->hist, now - t);
		}
		me->ops = ++done;
	}
}

static int worker(int id, void *arg)
{
	int dfd = open(hotdir, O_RDONLY | O_DIRECTORY);
	int mfd = open(opt.dir, O_RDONLY | O_DIRECTORY);
	int kind;

	(void)arg;
	if (dfd < 0 || mfd < 0)
		fail("open %s", dfd < 0 ? hotdir : opt.dir);
	wbarrier();
	for (kind = 0; kind < NR_PHASES; kind++) {
		if (kind == PH_WRITE_SYNC && !with_sync)
			continue;
		run_ops(kind, dfd, mfd, id);
		__atomic_add_fetch(&ctl->ndone, 1, __ATOMIC_RELEASE);
		wbarrier();
	}
	close(mfd);
	close(dfd);
	return 0;
}

/* The extra process of -s: idle in the other phases. */
static int syncer(int id, void *arg)
{
	int mfd = open(opt.dir, O_RDONLY | O_DIRECTORY);
	int kind;

	(void)id;
	(void)arg;
	if (mfd < 0)
		fail("open %s", opt.dir);
	wbarrier();
	for (kind = 0; kind < NR_PHASES; kind++) {
		while (kind == PH_WRITE_SYNC &&
		       __atomic_load_n(&ctl->ndone, __ATOMIC_ACQUIRE) < opt.nprocs) {
			if (syncfs(mfd) < 0)
				fail("syncfs %s", opt.dir);
			me->cnt[0]++;
		}
		wbarrier();
	}
	close(mfd);
	return 0;
}

static int member(int id, void *arg)
{
	return id < opt.nprocs ? worker(id, arg) : syncer(id, arg);
}

static void report(struct team *t, struct phase *ph, int n, int syncing)
{
	struct report r;
	struct hist h;

	team_hist(t, 0, n, &h);
	rep_start(&r, ph->name, team_ops(t, 0, n), ph->t1 - ph->t0, n);
	rep_hist(&r, &h);
	rep_kv(&r, "hot_files", nhot);
	if (syncing)
		rep_kv(&r, "syncs", team_cnt(t, n, t->n, 0));
	rep_end(&r);
}

int main(int argc, char **argv)
{
	struct team t;
	int c, n, kind;

	prog = "hotinode";
	usage_text = usage_msg;
	copts_init(&opt);
	while ((c = getopt(argc, argv, COMMON_OPTSTR "k:t:r:s")) != -1) {
		if (copts_parse(&opt, c, optarg))
			continue;
		if (c == 'k')
			nhot = parse_long(optarg, "-k", 1, MAX_HOT);
		else if (c == 't')
			seconds = parse_long(optarg, "-t", 1, 86400);
		else if (c == 'r')
			rounds = parse_long(optarg, "-r", 1, 100000000);
		else if (c == 's')
			with_sync = 1;
	}
	copts_finish(&opt, argc, argv);
	make_hot_files();
	sync();

	n = opt.nprocs;
	team_start(&t, n + with_sync, member, NULL);
	team_wait(&t);
	for (kind = 0; kind < NR_PHASES; kind++) {
		struct phase ph = { 0 };

		if (kind == PH_WRITE_SYNC && !with_sync)
			continue;
		if (!rounds)
			ph.dur_ns = seconds * 1000000000ull;
		/* The syncer's last loop may outlast the workers' window. */
		phase_run_range(&t, &opt, &ph, phase_name[kind], 0, n);
		team_wait_range(&t, n, t.n);
		report(&t, &ph, n, kind == PH_WRITE_SYNC);
	}
	team_release(&t);
	team_finish(&t);
	if (rm_tree(hotdir) < 0)
		fail("removing %s", hotdir);
	return 0;
}
