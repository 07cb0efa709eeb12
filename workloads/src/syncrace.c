// SPDX-License-Identifier: GPL-2.0
/*
 * syncrace - is everything written before sync() started on the disk when
 * sync() returns, while final iputs of the dirty files race the sync?
 *
 * Each round the parent writes N new files (one 4 KiB block each, a pattern
 * naming the round and the file) and closes them: they are dirty, with their
 * blocks not yet allocated (delayed allocation).  Then, while
 *   - a toucher stat()s the round's files over and over (a dentry and a
 *     reference each time),
 *   - evictors write 2 to drop_caches in a loop (the dcache shrinker drops
 *     those dentries: a final iput of a live dirty inode each time),
 *   - contenders create and unlink files on another filesystem (-c, the
 *     guest's tmpfs), which keeps the inode cache's locks busy,
 * the parent calls sync() (even rounds) or syncfs() (odd rounds); the
 * helpers idle while the files are written and checked.  The moment
 * it returns, each file of the round is checked on the disk itself: FIEMAP
 * must map its block to an allocated, written extent (not delalloc, not
 * unwritten), and that block, read from the device with O_DIRECT, must hold
 * the file's pattern.  Periodic writeback is off meanwhile
 * (dirty_writeback_centisecs 0), so only the sync can have written a file.
 *
 * A final iput that left a live dirty inode looking "being freed" (I_FREEING
 * or I_WILL_FREE) while it waited for a lock made writeback skip it: this
 * catches that.  The race needs the final iput, a lock holder and the
 * flusher on three CPUs at once, so it cannot happen below 3 vCPUs.
 */
#include "common.h"

#include <getopt.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>

static const char usage_msg[] =
"Usage: syncrace [options] -d DEV DIR\n"
"Rounds of: write N files of 4 KiB in DIR/r<round>, sync() or syncfs()\n"
"(alternately) while their final iputs race it, then check every file's\n"
"block on DEV (FIEMAP, then O_DIRECT read).  Helpers: -p contenders\n"
"(create/unlink in -c), -e evictors (drop_caches 2), one toucher (stat).\n"
"Phase sync-check: ops = files checked; keys lost= (and by kind), rounds=.\n"
"Exit status 1 if any file was not on the disk when its sync returned.\n"
"  -d DEV     the block device DIR is mounted from (required)\n"
"  -n N       files per round (default 64)\n"
"  -t SECS    rounds for this long (default 20)\n"
"  -e N       evictor processes (default 2)\n"
"  -c DIR     where the contenders churn (default /tmp)\n"
"  -S SEED    random seed of the delay before each sync (default 1)\n"
"Needs -D: it drops caches, and turns periodic writeback off and the\n"
"console below warnings (vm.dirty_*, kernel.printk; restored at exit).\n";

#define FILE_BYTES	4096
#define MAX_EXTENTS	8
#define MAX_REPORTED	20
#define SPAN_BYTES	(8 << 20)	/* read back in one piece up to this */
#define MAX_FILES	10000

static long nfiles = 64, seconds = 20, nevict = 2;
static const char *dev, *churn_dir = "/tmp";
static uint64_t seed = 1;
static struct copts opt;

/* What the parent tells the helpers, shared across fork(). */
struct shared {
	long round;		/* the round whose files are touched */
	int active;		/* 1 around the sync: the helpers run */
};
static struct shared *sh;

/*
 * The helpers run only around the sync, so that the files are written and
 * checked quickly and all the racing happens while the sync runs.
 */
static int racing(void)
{
	static const struct timespec ms = { 0, 1000000 };

	if (__atomic_load_n(&sh->active, __ATOMIC_ACQUIRE))
		return 1;
	nanosleep(&ms, NULL);
	return 0;
}

enum lost_kind { LOST_DELALLOC, LOST_UNWRITTEN, LOST_HOLE, LOST_MISMATCH,
		 LOST_OTHER, NR_LOST };
static const char *const lost_names[NR_LOST] = {
	"lost_delalloc", "lost_unwritten", "lost_hole", "lost_mismatch",
	"lost_other"
};

/* A mapped, written extent whose data is to be read back from the disk. */
struct pending {
	long k;			/* the file */
	uint64_t phys, logical, len;
};

/* The parent's buffers: aligned for O_DIRECT. */
struct buffers {
	uint64_t *want, *got;
	char *span;
	struct pending *pending;	/* MAX_EXTENTS per file */
};

struct tally {
	uint64_t files, rounds, syncs, syncfs, sync_ns, sync_max_ns;
	uint64_t write_ns, check_ns;
	uint64_t lost[NR_LOST];
	int reported;
};

static void fill(uint64_t *buf, long round, long k)
{
	size_t i;

	for (i = 0; i < FILE_BYTES / sizeof(*buf); i++)
		buf[i] = 0x5359524143450000ull ^ ((uint64_t)round << 32) ^
			 ((uint64_t)k << 12) ^ i;
}

static void file_name(char *name, size_t len, long round, long k)
{
	snprintf(name, len, "%s/r%ld/f%ld", opt.dir, round, k);
}

/* ---- helpers ---- */

static int contender(int id)
{
	char path[4096];
	int dfd = worker_dir(churn_dir, id, path, sizeof(path));

	wbarrier();
	while (!READ_ONCE(ctl->stop)) {
		int fd;

		if (!racing())
			continue;
		fd = openat(dfd, "c", O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0)
			fail("create %s/c", path);
		if (close(fd) < 0)
			fail("close %s/c", path);
		if (unlinkat(dfd, "c", 0) < 0)
			fail("unlink %s/c", path);
		WRITE_ONCE(me->ops, me->ops + 1);
	}
	wbarrier();
	close(dfd);
	if (rm_tree(path) < 0)
		fail("removing %s", path);
	return 0;
}

static int evictor(void)
{
	wbarrier();
	while (!READ_ONCE(ctl->stop)) {
		if (!racing())
			continue;
		drop_caches(2, 0);
		WRITE_ONCE(me->ops, me->ops + 1);
	}
	wbarrier();
	return 0;
}

static int toucher(void)
{
	char name[4096];
	struct stat st;
	long k = 0;

	wbarrier();
	while (!READ_ONCE(ctl->stop)) {
		if (!racing())
			continue;
		file_name(name, sizeof(name), READ_ONCE(sh->round), k);
		k = (k + 1) % nfiles;
		if (stat(name, &st) < 0 && errno != ENOENT)
			fail("stat %s", name);
		WRITE_ONCE(me->ops, me->ops + 1);
	}
	wbarrier();
	return 0;
}

/* Members: contenders 0..p-1, then the evictors, then the toucher. */
static int member(int id, void *arg)
{
	(void)arg;
	if (id < opt.nprocs)
		return contender(id);
	if (id < opt.nprocs + nevict)
		return evictor();
	return toucher();
}

/* ---- the parent: write, sync, check ---- */

static void write_round(long round, uint64_t *buf)
{
	char name[4096];
	long k;

	snprintf(name, sizeof(name), "%s/r%ld", opt.dir, round);
	if (mkdir(name, 0755) < 0)
		fail("mkdir %s", name);
	for (k = 0; k < nfiles; k++) {
		int fd;

		file_name(name, sizeof(name), round, k);
		fd = open(name, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0)
			fail("create %s", name);
		fill(buf, round, k);
		if (write(fd, buf, FILE_BYTES) != FILE_BYTES)
			fail("write %s", name);
		if (close(fd) < 0)
			fail("close %s", name);
	}
}

static void lost(struct tally *t, enum lost_kind kind, const char *name,
		 const char *how)
{
	static const char *const why[NR_LOST] = {
		"delayed allocation", "unwritten extent", "no block mapped",
		"other data in its block", "extent not readable raw"
	};

	struct stat st = { 0 };
	long generation = 0;
	int fd;

	t->lost[kind]++;
	if (t->reported++ >= MAX_REPORTED)
		return;
	/*
	 * The inode number and generation tie the file to a kernel's own
	 * record of it (numbers are reused round after round).
	 */
	fd = open(name, O_RDONLY);
	if (fd >= 0) {
		if (fstat(fd, &st) || ioctl(fd, FS_IOC_GETVERSION, &generation))
			generation = -1;
		close(fd);
	}
	note("%s: not on the disk when %s returned: %s (inode %llu generation %u)",
	     name, how, why[kind], (unsigned long long)st.st_ino,
	     (unsigned int)generation);
}

/*
 * FIEMAP one file: a lost kind from the extents' flags, or NR_LOST with
 * its written extents appended to p (which has room for MAX_EXTENTS).
 */
static enum lost_kind map_file(const char *name, long k, struct pending *p,
			       size_t *np)
{
	struct {
		struct fiemap fm;
		struct fiemap_extent ext[MAX_EXTENTS];
	} m;
	uint64_t covered = 0;
	unsigned int i;
	int fd = open(name, O_RDONLY);

	if (fd < 0)
		fail("open %s", name);
	memset(&m, 0, sizeof(m));
	m.fm.fm_length = FILE_BYTES;
	m.fm.fm_extent_count = MAX_EXTENTS;
	if (ioctl(fd, FS_IOC_FIEMAP, &m.fm) < 0)
		fail("FIEMAP %s", name);
	close(fd);
	for (i = 0; i < m.fm.fm_mapped_extents; i++) {
		const struct fiemap_extent *e = &m.fm.fm_extents[i];

		if (e->fe_flags & FIEMAP_EXTENT_DELALLOC)
			return LOST_DELALLOC;
		if (e->fe_flags & FIEMAP_EXTENT_UNWRITTEN)
			return LOST_UNWRITTEN;
		if (e->fe_flags & (FIEMAP_EXTENT_UNKNOWN | FIEMAP_EXTENT_ENCODED |
				   FIEMAP_EXTENT_DATA_INLINE))
			return LOST_OTHER;
		if (e->fe_logical >= FILE_BYTES)
			continue;
		p[*np].k = k;
		p[*np].phys = e->fe_physical;
		p[*np].logical = e->fe_logical;
		p[*np].len = e->fe_length < FILE_BYTES - e->fe_logical ?
			     e->fe_length : FILE_BYTES - e->fe_logical;
		covered += p[(*np)++].len;
	}
	return covered < FILE_BYTES ? LOST_HOLE : NR_LOST;
}

/*
 * Read the extents' blocks from the disk (one O_DIRECT read of the span
 * they lie in when it is small, the usual case: a round's files are
 * allocated together) and compare them with the files' patterns.
 */
static void read_back(struct tally *t, int devfd, long round, const char *how,
		      const struct pending *p, size_t np, struct buffers *b)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	char name[4096];
	size_t i;

	for (i = 0; i < np; i++) {
		if (p[i].phys < lo)
			lo = p[i].phys;
		if (p[i].phys + FILE_BYTES > hi)
			hi = p[i].phys + FILE_BYTES;
	}
	if (np && hi - lo <= SPAN_BYTES &&
	    pread(devfd, b->span, hi - lo, lo) != (ssize_t)(hi - lo))
		fail("read %s at %llu", dev, (unsigned long long)lo);
	for (i = 0; i < np; i++) {
		const char *disk = b->span + (p[i].phys - lo);

		if (hi - lo > SPAN_BYTES) {
			if (pread(devfd, b->got, FILE_BYTES, p[i].phys) != FILE_BYTES)
				fail("read %s at %llu", dev,
				     (unsigned long long)p[i].phys);
			disk = (const char *)b->got;
		}
		fill(b->want, round, p[i].k);
		if (!memcmp(disk, (const char *)b->want + p[i].logical, p[i].len))
			continue;
		file_name(name, sizeof(name), round, p[i].k);
		lost(t, LOST_MISMATCH, name, how);
	}
}

static void check_round(struct tally *t, int devfd, long round,
			const char *how, struct buffers *b)
{
	char name[4096];
	size_t np = 0;
	long k;

	for (k = 0; k < nfiles; k++) {
		enum lost_kind kind;

		file_name(name, sizeof(name), round, k);
		kind = map_file(name, k, b->pending, &np);
		t->files++;
		if (kind != NR_LOST)
			lost(t, kind, name, how);
	}
	read_back(t, devfd, round, how, b->pending, np, b);
}

static void remove_round(long round)
{
	char name[4096];
	long k;

	for (k = 0; k < nfiles; k++) {
		file_name(name, sizeof(name), round, k);
		if (unlink(name) < 0)
			fail("unlink %s", name);
	}
	snprintf(name, sizeof(name), "%s/r%ld", opt.dir, round);
	if (rmdir(name) < 0)
		fail("rmdir %s", name);
}

static uint64_t sync_round(long round, uint64_t *rnd)
{
	struct timespec delay = { 0, (long)rnd_below(rnd, 5000) * 1000 };
	char name[4096];
	uint64_t t0, t1;
	int dfd;

	snprintf(name, sizeof(name), "%s/r%ld", opt.dir, round);
	dfd = open(name, O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		fail("open %s", name);
	/* Let the toucher and the evictors get going on this round's files. */
	nanosleep(&delay, NULL);
	t0 = now_ns();
	if (round % 2 == 0)
		sync();
	else if (syncfs(dfd) < 0)
		fail("syncfs %s", name);
	t1 = now_ns();
	close(dfd);
	return t1 - t0;
}

static void run_round(struct tally *t, int devfd, long round, uint64_t *rnd,
		      struct buffers *b)
{
	const char *how = round % 2 == 0 ? "sync()" : "syncfs()";
	uint64_t ns, t0 = now_ns();

	write_round(round, b->want);
	t->write_ns += now_ns() - t0;
	WRITE_ONCE(sh->round, round);
	__atomic_store_n(&sh->active, 1, __ATOMIC_RELEASE);
	ns = sync_round(round, rnd);
	__atomic_store_n(&sh->active, 0, __ATOMIC_RELEASE);
	t0 = now_ns();
	check_round(t, devfd, round, how, b);
	t->check_ns += now_ns() - t0;
	remove_round(round);
	t->rounds++;
	*(round % 2 == 0 ? &t->syncs : &t->syncfs) += 1;
	t->sync_ns += ns;
	if (ns > t->sync_max_ns)
		t->sync_max_ns = ns;
}

/*
 * ---- sysctls, restored at exit: periodic writeback off, so that only the
 * sync writes the files; the console quiet below warnings, or every
 * drop_caches prints a line on the (slow, emulated) serial console ----
 */

struct sysctl {
	const char *path, *value;
	char saved[64];
};

static struct sysctl sysctls[] = {
	{ "/proc/sys/vm/dirty_writeback_centisecs", "0\n", "" },
	{ "/proc/sys/vm/dirty_expire_centisecs", "360000\n", "" },
	{ "/proc/sys/kernel/printk", "5\n", "" },
};

static void sysctl_io(const char *path, char *buf, size_t len, int write_it)
{
	int fd = open(path, write_it ? O_WRONLY : O_RDONLY);
	ssize_t n;

	if (fd < 0)
		fail("open %s", path);
	n = write_it ? write(fd, buf, strlen(buf)) : read(fd, buf, len - 1);
	if (n < 0)
		fail("%s %s", write_it ? "write" : "read", path);
	if (!write_it)
		buf[n] = '\0';
	close(fd);
}

static void sysctls_set(int restore)
{
	size_t i;

	for (i = 0; i < sizeof(sysctls) / sizeof(sysctls[0]); i++) {
		struct sysctl *s = &sysctls[i];
		char value[64];

		if (restore) {
			sysctl_io(s->path, s->saved, sizeof(s->saved), 1);
			continue;
		}
		sysctl_io(s->path, s->saved, sizeof(s->saved), 0);
		snprintf(value, sizeof(value), "%s", s->value);
		sysctl_io(s->path, value, sizeof(value), 1);
	}
}

static void sysctls_restore(void)
{
	sysctls_set(1);
}

/* ---- main ---- */

static void report(struct team *team, const struct tally *t, uint64_t ns)
{
	uint64_t total = 0;
	struct report r;
	int i, n = opt.nprocs;

	for (i = 0; i < NR_LOST; i++)
		total += t->lost[i];
	rep_start(&r, "sync-check", t->files, ns, n);
	rep_kv(&r, "lost", total);
	for (i = 0; i < NR_LOST; i++)
		rep_kv(&r, lost_names[i], t->lost[i]);
	rep_kv(&r, "rounds", t->rounds);
	rep_kv(&r, "syncs", t->syncs);
	rep_kv(&r, "syncfs", t->syncfs);
	rep_kv(&r, "sync_mean_ns", t->rounds ? t->sync_ns / t->rounds : 0);
	rep_kv(&r, "sync_max_ns", t->sync_max_ns);
	rep_kv(&r, "write_ns", t->write_ns);
	rep_kv(&r, "check_ns", t->check_ns);
	rep_kv(&r, "churn", team_ops(team, 0, n));
	rep_kv(&r, "drops", team_ops(team, n, n + nevict));
	rep_kv(&r, "stats", team_ops(team, n + nevict, team->n));
	rep_end(&r);
}

static void parse_args(int argc, char **argv)
{
	int c;

	copts_init(&opt);
	while ((c = getopt(argc, argv, COMMON_OPTSTR "d:n:t:e:c:S:")) != -1) {
		if (copts_parse(&opt, c, optarg))
			continue;
		if (c == 'd')
			dev = optarg;
		else if (c == 'n')
			nfiles = parse_long(optarg, "-n", 1, MAX_FILES);
		else if (c == 't')
			seconds = parse_long(optarg, "-t", 1, 86400);
		else if (c == 'e')
			nevict = parse_long(optarg, "-e", 1, 16);
		else if (c == 'c')
			churn_dir = optarg;
		else if (c == 'S')
			seed = parse_long(optarg, "-S", 0, 0x7fffffffffffffffL);
	}
	copts_finish(&opt, argc, argv);
	if (!dev)
		usage_error("-d DEV is required: the files are checked on it");
	if (!opt.drop)
		usage_error("-D is required: the evictors drop caches");
	if (opt.nprocs + nevict + 1 > MAX_PROCS)
		usage_error("too many processes");
}

int main(int argc, char **argv)
{
	uint64_t rnd, t0, deadline;
	struct buffers b;
	struct tally t = { 0 };
	struct team team;
	long round = 0;
	int devfd;

	prog = "syncrace";
	usage_text = usage_msg;
	parse_args(argc, argv);
	rnd = rnd_seed(seed, 0);
	devfd = open(dev, O_RDONLY | O_DIRECT);
	if (devfd < 0)
		fail("open %s", dev);
	if (posix_memalign((void **)&b.want, 4096, FILE_BYTES) ||
	    posix_memalign((void **)&b.got, 4096, FILE_BYTES) ||
	    posix_memalign((void **)&b.span, 4096, SPAN_BYTES))
		failx("out of memory");
	b.pending = calloc(nfiles * MAX_EXTENTS, sizeof(*b.pending));
	if (!b.pending)
		failx("out of memory");
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		fail("mmap");
	sysctls_set(0);
	/* Restored on every exit of this process, fail() included. */
	atexit(sysctls_restore);
	team_start(&team, opt.nprocs + nevict + 1, member, NULL);
	team_wait(&team);
	team_release(&team);
	t0 = now_ns();
	deadline = t0 + seconds * 1000000000ull;
	lsw_begin(&opt);
	while (now_ns() < deadline)
		run_round(&t, devfd, round++, &rnd, &b);
	lsw_end(&opt, "sync-check");
	WRITE_ONCE(team.ctl->stop, 1);
	/* Every member at its last barrier: the counts are final. */
	team_wait(&team);
	report(&team, &t, now_ns() - t0);
	team_release(&team);
	team_finish(&team);
	return t.reported ? 1 : 0;
}
