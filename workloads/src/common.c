// SPDX-License-Identifier: GPL-2.0
/*
 * The process team, barrier, timing, histogram, result lines and
 * the guest-only operations shared by the inode-duel workload programs.
 */
#include "common.h"
#include "csmark.h"

#include <ftw.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

const char *prog = "workload";
int worker_id = -1;
struct wslot *me;
struct shctl *ctl;

/* The team the parent would have to kill if it fails. */
static struct team *cur_team;
/* A worker's own ends of its two pipes. */
static int w_st = -1, w_go = -1;

int is_guest(void)
{
	const char *v = getenv(GUEST_ENV);

	return v && !strcmp(v, "1");
}

/* ---- messages and exits ---- */

static void vmsg(const char *fmt, va_list ap, int err)
{
	char buf[1024];
	int n;

	if (worker_id >= 0)
		n = snprintf(buf, sizeof(buf), "%s: worker %d: ", prog,
			     worker_id);
	else
		n = snprintf(buf, sizeof(buf), "%s: ", prog);
	n += vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	if (n < (int)sizeof(buf) && err)
		n += snprintf(buf + n, sizeof(buf) - n, ": %s",
			      strerror(err));
	if (n >= (int)sizeof(buf) - 1)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	/* One write, so lines of concurrent workers do not interleave. */
	if (write(2, buf, n) < 0)
		return;
}

static void team_kill(struct team *t)
{
	int i;

	for (i = 0; i < t->n; i++)
		if (t->pid[i] > 0)
			kill(t->pid[i], SIGKILL);
	for (i = 0; i < t->n; i++)
		if (t->pid[i] > 0)
			waitpid(t->pid[i], NULL, 0);
	for (i = 0; i < t->n; i++)
		t->pid[i] = 0;
}

static void __attribute__((noreturn)) die_now(void)
{
	if (worker_id >= 0)
		_exit(1);
	if (cur_team) {
		struct team *t = cur_team;

		cur_team = NULL;
		team_kill(t);
	}
	fflush(stdout);
	exit(1);
}

void fail(const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap, err);
	va_end(ap);
	die_now();
}

void failx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap, 0);
	va_end(ap);
	die_now();
}

void note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg(fmt, ap, 0);
	va_end(ap);
}

/* ---- options ---- */

const char *usage_text;

void usage(int status)
{
	FILE *f = status ? stderr : stdout;

	fputs(usage_text, f);
	fputs(COMMON_USAGE, f);
	exit(status);
}

void usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s -h'.\n", prog);
	exit(2);
}

long parse_long(const char *s, const char *what, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		usage_error("%s: '%s' is not a number from %ld to %ld",
			    what, s, min, max);
	return v;
}

void copts_init(struct copts *o)
{
	memset(o, 0, sizeof(*o));
	o->nprocs = 1;
}

int copts_parse(struct copts *o, int c, const char *arg)
{
	switch (c) {
	case 'h':
		usage(0);
	case 'p':
		o->nprocs = parse_long(arg, "-p", 1, MAX_PROCS);
		return 1;
	case 'L':
		o->lsprefix = arg;
		return 1;
	case 'D':
		o->drop = 1;
		return 1;
	case 'q':
		o->nolat = 1;
		return 1;
	case '?':
		/* getopt already said what is wrong. */
		fprintf(stderr, "Try '%s -h'.\n", prog);
		exit(2);
	}
	return 0;
}

void copts_finish(struct copts *o, int argc, char **argv)
{
	if (optind >= argc)
		usage_error("missing DIR");
	if (optind + 1 < argc)
		usage_error("unexpected argument '%s'", argv[optind + 1]);
	o->dir = argv[optind];
	if (!*o->dir)
		usage_error("DIR is empty");
	/* Room for the per-worker names under it in 4096-byte buffers. */
	if (strlen(o->dir) > 3000)
		usage_error("DIR is too long");
	if (o->drop && !is_guest())
		usage_error("-D drops the caches of the whole machine: refused "
			    "unless %s=1 (set only by the guest's init)",
			    GUEST_ENV);
	if (o->lsprefix && !is_guest() && !getenv("INODE_DUEL_PROC"))
		note("-L %s ignored: not in the guest (%s=1 unset), "
		     "/proc/lock_stat is left alone", o->lsprefix, GUEST_ENV);
	mkdir_p(o->dir);
	/* Workers that die must show up as EPIPE, not kill the parent. */
	signal(SIGPIPE, SIG_IGN);
}

/* ---- filesystem helpers ---- */

void mkdir_p(const char *path)
{
	char buf[4096];
	struct stat st;
	size_t i, len = strlen(path);

	if (len >= sizeof(buf))
		failx("%s: path too long", path);
	memcpy(buf, path, len + 1);
	for (i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			fail("cannot create directory %s", buf);
		buf[i] = path[i];
	}
	if (stat(path, &st) < 0)
		fail("cannot create directory %s", path);
	if (!S_ISDIR(st.st_mode))
		failx("%s exists and is not a directory", path);
}

int is_mountpoint(const char *path)
{
	char up[4096];
	struct statx sx;
	struct stat a, b;

	if (statx(AT_FDCWD, path, 0, STATX_BASIC_STATS, &sx) == 0 &&
	    (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
		return !!(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
	/* Older kernels: a mount root sits on another device than "..". */
	snprintf(up, sizeof(up), "%s/..", path);
	if (stat(path, &a) < 0 || stat(up, &b) < 0)
		return 0;
	return a.st_dev != b.st_dev || a.st_ino == b.st_ino;
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		return rmdir(path) < 0 ? -1 : 0;
	return unlink(path) < 0 ? -1 : 0;
}

int rm_tree(const char *path)
{
	struct stat st;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -1;
	return nftw(path, rm_one, 32, FTW_DEPTH | FTW_PHYS);
}

int worker_dir(const char *dir, int id, char *path, size_t len)
{
	int fd;

	snprintf(path, len, "%s/p%d", dir, id);
	if (mkdir(path, 0755) < 0) {
		if (errno != EEXIST)
			fail("mkdir %s", path);
		/* Left over by an earlier run that died: start clean. */
		note("removing stale %s", path);
		if (rm_tree(path) < 0)
			fail("removing %s", path);
		if (mkdir(path, 0755) < 0)
			fail("mkdir %s", path);
	}
	fd = open(path, O_RDONLY | O_DIRECTORY);
	if (fd < 0)
		fail("open %s", path);
	return fd;
}

/* ---- guest-only operations ---- */

static void write_proc(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);

	if (fd < 0)
		fail("open %s", path);
	if (write(fd, s, strlen(s)) < 0)
		fail("write %s", path);
	if (close(fd) < 0)
		fail("close %s", path);
}

void drop_caches(int level, int sync_first)
{
	char s[4];

	/* Second line of defence: copts_finish() refuses -D already. */
	if (!is_guest())
		failx("refusing to drop caches outside the guest (%s=1 unset)",
		      GUEST_ENV);
	if (sync_first)
		sync();
	snprintf(s, sizeof(s), "%d\n", level);
	write_proc("/proc/sys/vm/drop_caches", s);
}

/* ---- histogram ---- */

void hist_merge(struct hist *to, const struct hist *from)
{
	int i;

	for (i = 0; i < HIST_BUCKETS; i++)
		to->b[i] += from->b[i];
	to->count += from->count;
	if (from->max > to->max)
		to->max = from->max;
}

/* Middle of bucket i: at most 0.8% away from any value in it. */
static uint64_t hist_value(unsigned int i)
{
	unsigned int e, sub;
	uint64_t low, width;

	if (i < HIST_SUB)
		return i;
	e = i / HIST_SUB + HIST_SUB_BITS - 1;
	sub = i % HIST_SUB;
	low = (uint64_t)(HIST_SUB + sub) << (e - HIST_SUB_BITS);
	width = 1ull << (e - HIST_SUB_BITS);
	return low + width / 2;
}

uint64_t hist_pct(const struct hist *h, double q)
{
	uint64_t rank, cum = 0, v;
	int i;

	if (!h->count)
		return 0;
	rank = (uint64_t)(q * h->count);
	if (rank < q * h->count)
		rank++;
	if (rank < 1)
		rank = 1;
	for (i = 0; i < HIST_BUCKETS; i++) {
		cum += h->b[i];
		if (cum >= rank)
			break;
	}
	v = hist_value(i < HIST_BUCKETS ? i : HIST_BUCKETS - 1);
	return v > h->max ? h->max : v;
}

/* ---- the team ---- */

static void worker_main(struct team *t, int id, worker_fn fn, void *arg)
{
	pid_t parent = getppid();
	int i;

	worker_id = id;
	cur_team = NULL;
	/* The parent's ends of every pipe are not ours to hold. */
	for (i = 0; i < t->n; i++) {
		close(t->st[i]);
		close(t->go[i]);
	}
	/* Never outlive a parent that was killed (e.g. by a timeout). */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	me = &t->slot[id];
	ctl = t->ctl;
	_exit(fn(id, arg) ? 1 : 0);
}

void team_start(struct team *t, int n, worker_fn fn, void *arg)
{
	int st[MAX_PROCS + 1][2], go[MAX_PROCS + 1][2];
	size_t size;
	void *shm;
	int i;

	if (n < 1 || n > MAX_PROCS + 1)
		failx("team of %d processes", n);
	memset(t, 0, sizeof(*t));
	size = sizeof(struct shctl) + n * sizeof(struct wslot);
	shm = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shm == MAP_FAILED)
		fail("mmap %zu bytes", size);
	t->ctl = shm;
	t->slot = (struct wslot *)((char *)shm + sizeof(struct shctl));
	for (i = 0; i < n; i++)
		if (pipe(st[i]) < 0 || pipe(go[i]) < 0)
			fail("pipe");
	/* Buffered output must not be written once more by each child. */
	fflush(stdout);
	fflush(stderr);
	cur_team = t;
	t->n = n;
	for (i = 0; i < n; i++) {
		t->st[i] = st[i][0];
		t->go[i] = go[i][1];
	}
	for (i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0)
			fail("fork");
		if (pid == 0) {
			w_st = st[i][1];
			w_go = go[i][0];
			/* Drop the other workers' write ends too. */
			for (int j = 0; j < n; j++) {
				if (j != i) {
					close(st[j][1]);
					close(go[j][0]);
				}
			}
			worker_main(t, i, fn, arg);
		}
		t->pid[i] = pid;
	}
	for (i = 0; i < n; i++) {
		close(st[i][1]);
		close(go[i][0]);
	}
}

/* Member i closed its pipe without reporting: say why, kill the rest. */
static void __attribute__((noreturn)) team_dead(struct team *t, int i)
{
	int status;

	if (waitpid(t->pid[i], &status, 0) < 0)
		fail("waitpid worker %d", i);
	t->pid[i] = 0;
	if (WIFSIGNALED(status))
		failx("worker %d killed by signal %d (%s)", i,
		      WTERMSIG(status), strsignal(WTERMSIG(status)));
	if (WEXITSTATUS(status))
		failx("worker %d failed (exit status %d)", i,
		      WEXITSTATUS(status));
	failx("worker %d exited early", i);
}

void team_wait_range(struct team *t, int lo, int hi)
{
	struct pollfd pfd[MAX_PROCS + 1];
	int idx[MAX_PROCS + 1];
	char got[MAX_PROCS + 1] = { 0 };
	int left = hi - lo;

	while (left > 0) {
		int i, k = 0;

		for (i = lo; i < hi; i++) {
			if (got[i])
				continue;
			pfd[k].fd = t->st[i];
			pfd[k].events = POLLIN;
			idx[k++] = i;
		}
		if (poll(pfd, k, -1) < 0) {
			if (errno == EINTR)
				continue;
			fail("poll");
		}
		for (i = 0; i < k; i++) {
			char c;
			ssize_t r;

			if (!pfd[i].revents)
				continue;
			r = read(pfd[i].fd, &c, 1);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				fail("read from worker %d", idx[i]);
			if (r == 0)
				team_dead(t, idx[i]);
			got[idx[i]] = 1;
			left--;
		}
	}
}

void team_wait(struct team *t)
{
	team_wait_range(t, 0, t->n);
}

void team_release(struct team *t)
{
	int i;

	for (i = 0; i < t->n; i++) {
		if (write(t->go[i], "g", 1) == 1)
			continue;
		if (errno == EPIPE)
			team_dead(t, i);
		fail("releasing worker %d", i);
	}
}

/* Fail if a member died while the parent does not wait on it. */
void team_check(struct team *t)
{
	struct pollfd pfd[MAX_PROCS + 1];
	int i;

	for (i = 0; i < t->n; i++) {
		pfd[i].fd = t->st[i];
		pfd[i].events = POLLIN;
	}
	if (poll(pfd, t->n, 0) <= 0)
		return;
	for (i = 0; i < t->n; i++) {
		char c;

		if (!pfd[i].revents)
			continue;
		if (read(t->st[i], &c, 1) <= 0)
			team_dead(t, i);
		failx("worker %d reported before it was asked to", i);
	}
}

void team_finish(struct team *t)
{
	int i, bad = 0;

	/* A member still waiting at a barrier gets EOF and exits. */
	for (i = 0; i < t->n; i++)
		close(t->go[i]);
	for (i = 0; i < t->n; i++) {
		int status;

		if (waitpid(t->pid[i], &status, 0) < 0)
			fail("waitpid worker %d", i);
		t->pid[i] = 0;
		if (WIFEXITED(status) && !WEXITSTATUS(status))
			continue;
		bad = 1;
		if (WIFSIGNALED(status))
			note("worker %d killed by signal %d", i,
			     WTERMSIG(status));
		else
			note("worker %d failed (exit status %d)", i,
			     WEXITSTATUS(status));
	}
	for (i = 0; i < t->n; i++)
		close(t->st[i]);
	cur_team = NULL;
	if (bad)
		exit(1);
	munmap(t->ctl, sizeof(struct shctl) + t->n * sizeof(struct wslot));
}

void team_reset_stats(struct team *t)
{
	memset(t->slot, 0, t->n * sizeof(struct wslot));
	t->ctl->stop = 0;
	t->ctl->measure = 0;
	t->ctl->ndone = 0;
	t->ctl->deadline = 0;
}

uint64_t team_ops(struct team *t, int lo, int hi)
{
	uint64_t sum = 0;
	int i;

	for (i = lo; i < hi; i++)
		sum += READ_ONCE(t->slot[i].ops);
	return sum;
}

uint64_t team_cnt(struct team *t, int lo, int hi, int k)
{
	uint64_t sum = 0;
	int i;

	for (i = lo; i < hi; i++)
		sum += READ_ONCE(t->slot[i].cnt[k]);
	return sum;
}

void team_hist(struct team *t, int lo, int hi, struct hist *h)
{
	int i;

	memset(h, 0, sizeof(*h));
	for (i = lo; i < hi; i++)
		hist_merge(h, &t->slot[i].hist);
}

void wbarrier(void)
{
	char c;

	/* A parent that went away (or aborts) ends the worker quietly. */
	if (write(w_st, "r", 1) != 1)
		_exit(1);
	if (read(w_go, &c, 1) != 1)
		_exit(1);
}

/* ---- lock_stat windows ---- */

static const char *const lsw_name[] = { "lock_stat", "icache_retries" };
static const char *const lsw_ext[] = { "lock_stat", "retries" };

/*
 * Where the lock-stat files are: /proc in the guest; INODE_DUEL_PROC
 * points elsewhere (a directory of plain files) to test the windows on a
 * host without touching its kernel.  NULL: no windows.
 */
static const char *lsw_dir(const struct copts *o)
{
	const char *d = getenv("INODE_DUEL_PROC");

	if (!o->lsprefix)
		return NULL;
	if (d && *d)
		return d;
	return is_guest() ? "/proc" : NULL;
}

/*
 * The first line of /proc/stat (CPU time by kind, all CPUs) when the window
 * opened: with the line at its end it tells how long the CPUs were idle, the
 * time the workers spent blocked (wall minus CPU), per window.
 */
static char lsw_cpu_begin[512];

static void read_cpu_line(const char *dir, char *line, size_t size)
{
	char src[4096];
	FILE *f;

	line[0] = '\0';
	snprintf(src, sizeof(src), "%s/stat", dir);
	f = fopen(src, "r");
	if (!f)
		return;
	if (!fgets(line, size, f))
		line[0] = '\0';
	fclose(f);
}

void lsw_begin(const struct copts *o)
{
	const char *d = lsw_dir(o);
	char src[4096];
	int i;

	if (d)
		read_cpu_line(d, lsw_cpu_begin, sizeof(lsw_cpu_begin));
	for (i = 0; d && i < 2; i++) {
		snprintf(src, sizeof(src), "%s/%s", d, lsw_name[i]);
		/* Only debug kernels (or some series) have them. */
		if (access(src, F_OK) == 0)
			write_proc(src, "0\n");
	}
	/* The tcg-cs plugin's window opens where lock_stat's does. */
	if (o->lsprefix)
		csmark_begin();
}

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in, out;
	ssize_t r;

	in = open(from, O_RDONLY);
	if (in < 0)
		fail("open %s", from);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out < 0)
		fail("create %s", to);
	while ((r = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, r) != r)
			fail("write %s", to);
	if (r < 0)
		fail("read %s", from);
	if (close(out) < 0)
		fail("close %s", to);
	close(in);
}

void lsw_end(const struct copts *o, const char *phase)
{
	const char *d = lsw_dir(o);
	char src[4096], to[4096];
	const char *base;
	int i;

	if (o->lsprefix) {
		/* Named like the lock_stat file: "<step>.<phase>". */
		csmark_end();
		base = strrchr(o->lsprefix, '/');
		snprintf(to, sizeof(to), "%s.%s", base ? base + 1 : o->lsprefix, phase);
		csmark_label(to);
	}
	for (i = 0; d && i < 2; i++) {
		snprintf(src, sizeof(src), "%s/%s", d, lsw_name[i]);
		if (access(src, F_OK) < 0)
			continue;
		snprintf(to, sizeof(to), "%s.%s.%s", o->lsprefix, phase,
			 lsw_ext[i]);
		copy_file(src, to);
	}
	if (d && lsw_cpu_begin[0]) {
		char end[512];
		FILE *f;

		read_cpu_line(d, end, sizeof(end));
		snprintf(to, sizeof(to), "%s.%s.cpustat", o->lsprefix, phase);
		f = fopen(to, "w");
		if (!f)
			fail("create %s", to);
		fprintf(f, "%s%s", lsw_cpu_begin, end);
		if (fclose(f))
			fail("close %s", to);
	}
}

void phase_run_range(struct team *t, const struct copts *o,
		     struct phase *ph, const char *name, int lo, int hi)
{
	ph->name = name;
	team_reset_stats(t);
	lsw_begin(o);
	ph->t0 = now_ns();
	if (ph->dur_ns)
		WRITE_ONCE(t->ctl->deadline, ph->t0 + ph->dur_ns);
	team_release(t);
	team_wait_range(t, lo, hi);
	ph->t1 = now_ns();
	lsw_end(o, name);
}

void phase_run(struct team *t, const struct copts *o, struct phase *ph,
	       const char *name)
{
	phase_run_range(t, o, ph, name, 0, t->n);
}

/* ---- result lines ---- */

static void rep_add(struct report *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void rep_add(struct report *r, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(r->buf + r->len, sizeof(r->buf) - r->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(r->buf) - r->len)
		failx("result line too long");
	r->len += n;
}

void rep_start(struct report *r, const char *phase, uint64_t ops,
	       uint64_t ns, int procs)
{
	r->len = 0;
	rep_add(r, "result phase=%s ops=%llu elapsed_ns=%llu procs=%d",
		phase, (unsigned long long)ops, (unsigned long long)ns, procs);
}

void rep_kv(struct report *r, const char *key, uint64_t v)
{
	rep_add(r, " %s=%llu", key, (unsigned long long)v);
}

void rep_hist(struct report *r, const struct hist *h)
{
	if (!h->count)
		return;
	rep_kv(r, "p50_ns", hist_pct(h, 0.50));
	rep_kv(r, "p90_ns", hist_pct(h, 0.90));
	rep_kv(r, "p99_ns", hist_pct(h, 0.99));
	rep_kv(r, "max_ns", h->max);
}

void rep_end(struct report *r)
{
	rep_add(r, "\n");
	/* Flushed per line: a guest that crashes later keeps this phase. */
	if (fputs(r->buf, stdout) == EOF || fflush(stdout) == EOF)
		fail("writing the result line");
}

/* Distinct, non-zero PRNG state per worker from one seed (splitmix64). */
uint64_t rnd_seed(uint64_t seed, int id)
{
	uint64_t z = seed + (uint64_t)(id + 1) * 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return z ? z : 1;
}
