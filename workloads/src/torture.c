// SPDX-License-Identifier: GPL-2.0
/*
 * torture - a random mix of namespace and icache operations, for lockdep
 * coverage rather than speed: every path that takes icache locks in a
 * different order or context should run at least once per boot, so the
 * debug kernel's lockdep sees the series' real lock-order graph.
 *
 * create/unlink: new_inode, hash insert, evict.  rename over an existing
 * name and unlink of the last link: iput_final from inside the rename.
 * link: ihold on a live inode.  open_by_handle_at: iget/ilookup and
 * disconnected dentries.  inotify add/rm watch: fsnotify marks pin inodes
 * (igrab/iput from fsnotify).  drop_caches 3 (worker 0, -D):
 * drop_pagecache_sb walk and the LRU shrink.  remount (worker 0, -m):
 * reconfigure_super, sync_filesystem, the sb walks a remount does.
 */
#include "common.h"
#include "faults.h"

#include <getopt.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

static const char usage_msg[] =
"Usage: torture [options] DIR\n"
"For -t seconds each worker does a random mix, in its own two directories\n"
"DIR/p<i>/a and DIR/p<i>/b, of: create, unlink, rename within a directory\n"
"and across the two (sometimes over an existing name), link, stat,\n"
"open_by_handle_at, inotify_add_watch/inotify_rm_watch with a read of the\n"
"pending events; worker 0 also drops caches (3) every 50 operations with\n"
"-D, and remounts DIR every 100 operations with -m.  Phase mix; ops = all\n"
"operations; one key per operation type, and seed=.\n"
"  -t SECS    phase length (default 10)\n"
"  -S SEED    random seed, below 2^53 (default: from the clock; reported)\n"
"  -n M       names per worker at most (default 64)\n"
"  -m         remount: mount(NULL, DIR, NULL, MS_REMOUNT|flags, NULL),\n"
"             toggling noatime/relatime, keeping DIR's other mount flags\n"
"             (rdonly, nosuid, nodev, noexec, sync, nodiratime); DIR must\n"
"             be a mount point; the atime mode is restored at the end.\n"
"             Needs " GUEST_ENV "=1.\n"
"With " FAULTS_ENV "=1 (a faults step) a failed operation is counted (a last\n"
"line: phase errors, errors.<op>.<ERRNO>=N) and the mix goes on; a name an\n"
"operation found gone (ENOENT) leaves the worker's table.\n";

enum { OP_CREATE, OP_UNLINK, OP_RENAME, OP_XRENAME, OP_LINK, OP_HANDLE,
	OP_INOTIFY, OP_STAT, OP_DROP, OP_REMOUNT, OP_EVENTS, NR_KEYS,
	TEARDOWN = NR_KEYS, NR_ERROR_KEYS };

static const char *const keys[NR_ERROR_KEYS] = {
	"create", "unlink", "rename", "xrename", "link", "handle",
	"inotify", "stat", "drop", "remount", "events", "teardown",
};

/* Weights of the random choice, out of 100 (drop/remount are periodic). */
static const int weight[OP_STAT + 1] = {
	[OP_CREATE] = 20, [OP_UNLINK] = 15, [OP_RENAME] = 10,
	[OP_XRENAME] = 10, [OP_LINK] = 10, [OP_HANDLE] = 10,
	[OP_INOTIFY] = 10, [OP_STAT] = 15,
};

#define SEED_MAX	((1ull << 53) - 1)	/* exact as a double */

static long seconds = 10, maxnames = 64;
static uint64_t seed;
static int seed_given, remount;
static unsigned long mnt_base, mnt_atime;
static struct copts opt;

struct name {
	int dir;		/* 0: a, 1: b */
	uint32_t id;		/* file name is f<id> */
	ino_t ino;		/* two names of one inode: see rename_op */
};

/* One worker's world. */
static struct {
	struct name *names;
	int nused;
	uint32_t next_id;
	int dfd[2];
	char dpath[2][4096];
	int mfd;		/* for open_by_handle_at */
	int ifd;		/* inotify */
	int wd[2];
	int handles;		/* handles supported here */
	int toggle;		/* remount: noatime on odd calls */
	uint64_t rnd;
} w;

static char *fname(const struct name *n, char *buf)
{
	sprintf(buf, "f%u", n->id);
	return buf;
}

static struct name *pick(void)
{
	return &w.names[rnd_below(&w.rnd, w.nused)];
}

static void forget(struct name *n)
{
	*n = w.names[--w.nused];
}

/* A failed operation on name n: ENOENT says the name is gone already. */
static void failed(int key, struct name *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void failed(int key, struct name *n, const char *fmt, ...)
{
	int gone = errno == ENOENT;
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	soft(key, "%s", msg);
	if (gone && n)
		forget(n);
}

static void create_op(void)
{
	struct name *n = &w.names[w.nused];
	struct stat st;
	char b[16];
	int fd;

	n->dir = rnd_below(&w.rnd, 2);
	n->id = w.next_id++;
	fd = openat(w.dfd[n->dir], fname(n, b), O_CREAT | O_EXCL | O_WRONLY,
		    0644);
	if (fd < 0) {
		soft(OP_CREATE, "create %s", b);
		return;
	}
	if (fstat(fd, &st) < 0) {
		/* The name exists: into the table, its inode unknown (0). */
		soft(OP_CREATE, "fstat %s", b);
		st.st_ino = 0;
	}
	if (close(fd) < 0)
		soft(OP_CREATE, "close %s", b);
	n->ino = st.st_ino;
	w.nused++;
}

static void unlink_op(void)
{
	struct name *n = pick();
	char b[16];

	if (unlinkat(w.dfd[n->dir], fname(n, b), 0) < 0) {
		failed(OP_UNLINK, n, "unlink %s", b);
		return;
	}
	forget(n);
}

/*
 * Rename within (across = 0) or across the two directories, onto a new
 * name or, one time in four, over an existing name of another inode
 * (renaming a name onto another link of the same inode is a no-op that
 * would leave both names).
 */
static void rename_op(int across)
{
	int key = across ? OP_XRENAME : OP_RENAME;
	struct name *n = pick(), *v = pick();
	struct name to = *n;
	char b1[16], b2[16];

	to.dir = across ? !n->dir : n->dir;
	if (rnd_below(&w.rnd, 4) || v == n || v->dir != to.dir ||
	    v->ino == n->ino) {
		v = NULL;
		to.id = w.next_id++;
	} else {
		to.id = v->id;
	}
	if (renameat(w.dfd[n->dir], fname(n, b1), w.dfd[to.dir],
		     fname(&to, b2)) < 0) {
		failed(key, n, "rename %s -> %s", b1, b2);
		return;
	}
	if (!v) {
		*n = to;
		return;
	}
	/* v's name now holds n's inode; n's name is gone. */
	v->ino = n->ino;
	forget(n);
}

static void link_op(void)
{
	struct name *n = pick(), *l = &w.names[w.nused];
	char b1[16], b2[16];

	l->dir = rnd_below(&w.rnd, 2);
	l->id = w.next_id++;
	l->ino = n->ino;
	if (linkat(w.dfd[n->dir], fname(n, b1), w.dfd[l->dir], fname(l, b2),
		   0) < 0) {
		failed(OP_LINK, n, "link %s -> %s", b1, b2);
		return;
	}
	w.nused++;
}

static void handle_op(void)
{
	char fhbuf[sizeof(struct file_handle) + MAX_HANDLE_SZ];
	struct file_handle *fh = (struct file_handle *)fhbuf;
	int fd, mnt, dirfd, flags = 0, oflags = O_RDONLY;
	struct name *n = NULL;
	const char *name = "";
	char b[16];

	/* One time in eight a directory: the reconnect path. */
	if (!rnd_below(&w.rnd, 8)) {
		dirfd = w.dfd[rnd_below(&w.rnd, 2)];
		flags = AT_EMPTY_PATH;
		oflags |= O_DIRECTORY;
	} else {
		n = pick();
		dirfd = w.dfd[n->dir];
		name = fname(n, b);
	}
	fh->handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(dirfd, name, fh, &mnt, flags) < 0) {
		failed(OP_HANDLE, n, "name_to_handle_at %s",
		       *name ? name : "dir");
		return;
	}
	fd = open_by_handle_at(w.mfd, fh, oflags);
	if (fd < 0) {
		soft(OP_HANDLE, "open_by_handle_at %s",
		     *name ? name : "dir");
		return;
	}
	close(fd);
}

static void drain_events(void)
{
	char buf[16384] __attribute__((aligned(8)));
	ssize_t r;
	int i;

	/* Bounded: a busy queue must not keep this worker here forever. */
	for (i = 0; i < 16; i++) {
		char *p;

		r = read(w.ifd, buf, sizeof(buf));
		if (r < 0 && errno == EAGAIN)
			return;
		if (r <= 0) {
			soft(OP_EVENTS, "read inotify events");
			return;
		}
		for (p = buf; p < buf + r;
		     p += sizeof(struct inotify_event) +
			  ((struct inotify_event *)p)->len)
			me->cnt[OP_EVENTS]++;
	}
}

static void inotify_op(void)
{
	int d = rnd_below(&w.rnd, 2);

	drain_events();
	if (w.wd[d] < 0) {
		w.wd[d] = inotify_add_watch(w.ifd, w.dpath[d], IN_ALL_EVENTS);
		if (w.wd[d] < 0)
			soft(OP_INOTIFY, "inotify_add_watch %s", w.dpath[d]);
		return;
	}
	if (inotify_rm_watch(w.ifd, w.wd[d]) < 0)
		soft(OP_INOTIFY, "inotify_rm_watch %s", w.dpath[d]);
	w.wd[d] = -1;
}

static void stat_op(void)
{
	struct name *n = pick();
	struct stat st;
	char b[16];

	if (fstatat(w.dfd[n->dir], fname(n, b), &st, 0) < 0)
		failed(OP_STAT, n, "fstatat %s", b);
}

static void remount_op(unsigned long atime)
{
	unsigned long flags = MS_REMOUNT | mnt_base | atime;

	if (!is_guest())
		failx("refusing to remount outside the guest");
	if (mount(NULL, opt.dir, NULL, flags, NULL) < 0)
		soft(OP_REMOUNT, "remount %s (flags %#lx)", opt.dir, flags);
}

/* Pick an operation the table allows: no names -> create, full -> unlink. */
static int choose(void)
{
	int r = rnd_below(&w.rnd, 100), op;

	for (op = 0; op < OP_STAT; op++) {
		r -= weight[op];
		if (r < 0)
			break;
	}
	if (op == OP_HANDLE && !w.handles)
		op = OP_STAT;
	if (!w.nused && op != OP_INOTIFY)
		return OP_CREATE;
	if (w.nused == maxnames && (op == OP_CREATE || op == OP_LINK))
		return OP_UNLINK;
	return op;
}

static void do_op(int op)
{
	switch (op) {
	case OP_CREATE:
		create_op();
		break;
	case OP_UNLINK:
		unlink_op();
		break;
	case OP_RENAME:
	case OP_XRENAME:
		rename_op(op == OP_XRENAME);
		break;
	case OP_LINK:
		link_op();
		break;
	case OP_HANDLE:
		handle_op();
		break;
	case OP_INOTIFY:
		inotify_op();
		break;
	default:
		stat_op();
		break;
	}
	me->cnt[op]++;
	me->ops++;
}

/* Worker 0's periodic whole-filesystem operations. */
static void periodic(uint64_t n)
{
	if (worker_id)
		return;
	if (opt.drop && n % 50 == 49) {
		/* drop_caches() ends the program if it fails: not armed. */
		faults_arm(0);
		drop_caches(3, 1);
		faults_arm(1);
		me->cnt[OP_DROP]++;
		me->ops++;
	}
	if (remount && n % 100 == 99) {
		w.toggle = !w.toggle;
		remount_op(w.toggle ? MS_NOATIME : MS_RELATIME);
		me->cnt[OP_REMOUNT]++;
		me->ops++;
	}
}

/* Can this filesystem (and this process) do open_by_handle_at? */
static int probe_handles(void)
{
	char fhbuf[sizeof(struct file_handle) + MAX_HANDLE_SZ];
	struct file_handle *fh = (struct file_handle *)fhbuf;
	int mnt, fd;

	fh->handle_bytes = MAX_HANDLE_SZ;
	if (name_to_handle_at(w.dfd[0], "", fh, &mnt, AT_EMPTY_PATH) < 0) {
		if (errno != EOPNOTSUPP && errno != ENOSYS)
			fail("name_to_handle_at");
		note("no file handles on this filesystem: handle op off");
		return 0;
	}
	fd = open_by_handle_at(w.mfd, fh, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		if (errno != EPERM)
			fail("open_by_handle_at");
		note("open_by_handle_at not permitted: handle op off");
		return 0;
	}
	close(fd);
	return 1;
}

static void setup(int id, char *path, size_t len)
{
	int top = worker_dir(opt.dir, id, path, len), d;

	w.names = calloc(maxnames, sizeof(*w.names));
	if (!w.names)
		fail("calloc");
	for (d = 0; d < 2; d++) {
		if (snprintf(w.dpath[d], sizeof(w.dpath[d]), "%s/%c", path,
			     "ab"[d]) >= (int)sizeof(w.dpath[d]))
			failx("%s: path too long", path);
		if (mkdir(w.dpath[d], 0755) < 0)
			fail("mkdir %s", w.dpath[d]);
		w.dfd[d] = open(w.dpath[d], O_RDONLY | O_DIRECTORY);
		if (w.dfd[d] < 0)
			fail("open %s", w.dpath[d]);
		w.wd[d] = -1;
	}
	close(top);
	w.mfd = open(opt.dir, O_RDONLY | O_DIRECTORY);
	if (w.mfd < 0)
		fail("open %s", opt.dir);
	w.ifd = inotify_init1(IN_NONBLOCK);
	if (w.ifd < 0)
		fail("inotify_init1");
	w.handles = probe_handles();
	w.rnd = rnd_seed(seed, id);
}

static int worker(int id, void *arg)
{
	char path[4096];
	uint64_t n = 0;

	(void)arg;
	setup(id, path, sizeof(path));
	wbarrier();
	faults_arm(1);
	while (now_ns() < READ_ONCE(ctl->deadline)) {
		do_op(choose());
		periodic(n++);
	}
	faults_arm(0);
	wbarrier();
	if (id == 0 && remount)
		remount_op(mnt_atime);
	close(w.ifd);
	close(w.mfd);
	close(w.dfd[0]);
	close(w.dfd[1]);
	if (rm_tree(path) < 0)
		soft(TEARDOWN, "removing %s", path);
	return 0;
}

/* DIR's mount flags to keep across remounts, and its atime mode. */
static void remount_flags(void)
{
	struct statvfs sv;

	if (!is_mountpoint(opt.dir))
		usage_error("-m: %s is not a mount point", opt.dir);
	if (statvfs(opt.dir, &sv) < 0)
		fail("statvfs %s", opt.dir);
	mnt_base = (sv.f_flag & ST_RDONLY ? MS_RDONLY : 0) |
		(sv.f_flag & ST_NOSUID ? MS_NOSUID : 0) |
		(sv.f_flag & ST_NODEV ? MS_NODEV : 0) |
		(sv.f_flag & ST_NOEXEC ? MS_NOEXEC : 0) |
		(sv.f_flag & ST_SYNCHRONOUS ? MS_SYNCHRONOUS : 0) |
		(sv.f_flag & ST_NODIRATIME ? MS_NODIRATIME : 0);
	if (sv.f_flag & ST_NOATIME)
		mnt_atime = MS_NOATIME;
	else if (sv.f_flag & ST_RELATIME)
		mnt_atime = MS_RELATIME;
	else
		mnt_atime = MS_STRICTATIME;
}

static void parse_args(int argc, char **argv)
{
	int c;

	copts_init(&opt);
	while ((c = getopt(argc, argv, COMMON_OPTSTR "t:S:n:m")) != -1) {
		if (copts_parse(&opt, c, optarg))
			continue;
		if (c == 't') {
			seconds = parse_long(optarg, "-t", 1, 86400);
		} else if (c == 'S') {
			seed = parse_long(optarg, "-S", 0, SEED_MAX);
			seed_given = 1;
		} else if (c == 'n') {
			maxnames = parse_long(optarg, "-n", 2, 1000000);
		} else if (c == 'm') {
			remount = 1;
		}
	}
	if (remount && !is_guest())
		usage_error("-m remounts DIR: refused unless %s=1 (set only "
			    "by the guest's init)", GUEST_ENV);
	copts_finish(&opt, argc, argv);
	if (remount)
		remount_flags();
	if (!seed_given)
		seed = (now_ns() ^ ((uint64_t)getpid() << 32)) & SEED_MAX;
}

int main(int argc, char **argv)
{
	struct phase ph = { 0 };
	struct report r;
	struct team t;
	int k;

	prog = "torture";
	usage_text = usage_msg;
	parse_args(argc, argv);
	faults_init();

	team_start(&t, opt.nprocs, worker, NULL);
	team_wait(&t);
	ph.dur_ns = seconds * 1000000000ull;
	faults_disk(1);
	phase_run(&t, &opt, &ph, "mix");
	faults_disk(0);
	rep_start(&r, ph.name, team_ops(&t, 0, t.n), ph.t1 - ph.t0, t.n);
	for (k = 0; k < NR_KEYS; k++)
		rep_kv(&r, keys[k], team_cnt(&t, 0, t.n, k));
	rep_kv(&r, "seed", seed);
	rep_end(&r);
	team_release(&t);
	team_finish(&t);
	faults_report(keys, NR_ERROR_KEYS, t.n);
	return 0;
}
