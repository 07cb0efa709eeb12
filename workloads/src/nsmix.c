// SPDX-License-Identifier: GPL-2.0
/*
 * nsmix - an fsstress-like random mix of namespace and xattr operations,
 * written for the fault-injection steps (make faults) but usable anywhere.
 *
 * Every name a worker makes is in its table, so every operation is one that
 * should succeed: an error is either fatal (a plain step) or, in a faults
 * step, counted by operation and errno (faults.h).  What it drives through
 * the inode cache: new_inode and the hash insert (create, mkdir, symlink),
 * ihold on a live inode (link), the final iput from unlink, rmdir, a rename
 * over an existing name and a RENAME_EXCHANGE, d_move of a directory with
 * children, xattr updates that move a value out of the inode into a block
 * of its own and back (ext4, XFS), and, with -D, worker 0 dropping the
 * caches every 50 operations so that the lookups that follow read the
 * inodes back from the disk (iget) while the others create and unlink.
 */
#include "common.h"
#include "faults.h"

#include <getopt.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/xattr.h>

static const char usage_msg[] =
"Usage: nsmix [options] DIR\n"
"For -t seconds each worker does a random mix in its own directory\n"
"DIR/p<i> holding at most -n names: files, directories (one level below\n"
"DIR/p<i>) and symbolic links.  Operations: create, mkdir, symlink, link,\n"
"unlink, rmdir, rename (of a file or link, within and across directories,\n"
"over an existing name one time in four), exchange (renameat2\n"
"RENAME_EXCHANGE of two names), rendir (rename a directory with its\n"
"children), setxattr, getxattr, listxattr and removexattr (trusted.nsmix.N,\n"
"values of 16 B to 2 KiB, at most 2.5 KiB an inode, on files and\n"
"directories; off, with a note, where the filesystem or the process cannot)\n"
"and stat; worker 0 also drops the caches (drop_caches 3: dentries, inodes\n"
"and the blocks that hold them) every 50 operations with -D.\n"
"Phase mix; ops = all operations; one key per operation type, and seed=.\n"
"With " FAULTS_ENV "=1 (a faults step) an operation that fails is counted\n"
"(a last line: phase errors, errors.<op>.<ERRNO>=N) instead of ending the\n"
"program.\n"
"  -t SECS    phase length (default 10)\n"
"  -S SEED    random seed, below 2^53 (default: from the clock; reported)\n"
"  -n M       names per worker at most (default 64, at most 4096)\n";

enum { OP_CREATE, OP_MKDIR, OP_SYMLINK, OP_LINK, OP_UNLINK, OP_RMDIR,
	OP_RENAME, OP_EXCHANGE, OP_RENDIR, OP_SETXATTR, OP_GETXATTR,
	OP_LISTXATTR, OP_RMXATTR, OP_STAT, OP_DROP, OP_TEARDOWN, NR_KEYS };

static const char *const keys[NR_KEYS] = {
	"create", "mkdir", "symlink", "link", "unlink", "rmdir", "rename",
	"exchange", "rendir", "setxattr", "getxattr", "listxattr", "rmxattr",
	"stat", "drop", "teardown",
};

/* Weights of the random choice, out of 100 (drop is periodic). */
static const int weight[OP_STAT + 1] = {
	[OP_CREATE] = 12, [OP_MKDIR] = 5, [OP_SYMLINK] = 4, [OP_LINK] = 6,
	[OP_UNLINK] = 10, [OP_RMDIR] = 3, [OP_RENAME] = 12, [OP_EXCHANGE] = 4,
	[OP_RENDIR] = 3, [OP_SETXATTR] = 10, [OP_GETXATTR] = 6,
	[OP_LISTXATTR] = 3, [OP_RMXATTR] = 5, [OP_STAT] = 17,
};

#define SEED_MAX	((1ull << 53) - 1)	/* exact as a double */
#define MAX_NAMES	4096
#define NR_XATTRS	4
/*
 * Bytes of xattr values one inode holds at most: ext4 keeps all of an
 * inode's xattrs in the inode and one block (4 KiB here); more would fail
 * with ENOSPC, an error of the workload, not of the kernel.
 */
#define XATTR_BUDGET	2560
#define TOP		(-1)	/* parent of a name right in DIR/p<i> */

enum kind { K_FILE, K_DIR, K_LINK };

struct ent {
	enum kind kind;
	int parent;		/* TOP, or the index of a directory entry */
	uint32_t id;		/* name: f<id>, d<id> or s<id> */
	uint32_t inode;		/* names of one inode (hard links) share it */
	unsigned int xattrs;	/* bit x: trusted.nsmix.<x> is set */
	uint16_t xsize[NR_XATTRS];	/* its value's size */
	int children;		/* directories: names inside */
};

static long seconds = 10, maxnames = 64;
static uint64_t seed;
static int seed_given;
static struct copts opt;

/* One worker's world. */
static struct {
	struct ent *e;
	int nused;
	uint32_t next_id;
	int top;		/* fd of DIR/p<i> */
	char path[4096];	/* DIR/p<i> */
	int xattrs_ok;
	uint64_t rnd;
} w;

static const char prefix[] = { [K_FILE] = 'f', [K_DIR] = 'd', [K_LINK] = 's' };

/* The name of entry i relative to DIR/p<i>. */
static char *rel(int i, char *buf, size_t len)
{
	const struct ent *e = &w.e[i];

	if (e->parent == TOP)
		snprintf(buf, len, "%c%u", prefix[e->kind], e->id);
	else
		snprintf(buf, len, "d%u/%c%u", w.e[e->parent].id,
			 prefix[e->kind], e->id);
	return buf;
}

/* The same, absolute (the xattr calls take no directory fd). */
static char *abs_path(int i, char *buf, size_t len)
{
	char r[64];

	snprintf(buf, len, "%s/%s", w.path, rel(i, r, sizeof(r)));
	return buf;
}

static int random_entry(void)
{
	return rnd_below(&w.rnd, w.nused);
}

/* A random entry of one of the kinds in mask (1 << kind), or -1. */
static int pick(unsigned int mask, int need_xattrs)
{
	int tries;

	for (tries = 0; tries < 16 && w.nused; tries++) {
		int i = random_entry();

		if ((mask & (1u << w.e[i].kind)) &&
		    (!need_xattrs || w.e[i].xattrs))
			return i;
	}
	return -1;
}

/* Where a new file or link goes: DIR/p<i> or one of its directories. */
static int random_parent(void)
{
	int d = rnd_below(&w.rnd, 2) ? pick(1u << K_DIR, 0) : -1;

	return d >= 0 ? d : TOP;
}

static int add(enum kind kind, int parent, uint32_t inode)
{
	struct ent *e = &w.e[w.nused];

	e->kind = kind;
	e->parent = parent;
	e->id = w.next_id++;
	e->inode = inode;
	e->xattrs = 0;
	e->children = 0;
	if (parent != TOP)
		w.e[parent].children++;
	return w.nused++;
}

/* Drop entry i (not a directory with children): the last moves into its slot. */
static void forget(int i)
{
	int last = --w.nused, j;

	if (w.e[i].parent != TOP)
		w.e[w.e[i].parent].children--;
	if (i == last)
		return;
	w.e[i] = w.e[last];
	for (j = 0; j < w.nused; j++)
		if (w.e[j].parent == last)
			w.e[j].parent = i;
}

/* A failed operation on entry i: ENOENT says the name is gone already. */
static void failed(int key, int i, const char *what, const char *name)
{
	int gone = errno == ENOENT && i >= 0 && !w.e[i].children;

	soft(key, "%s %s", what, name);
	if (gone)
		forget(i);
}

/*
 * The operations: each returns 0 when the table holds nothing it can work
 * on (do_op then creates a file instead), else 1, failed or not.
 */
static int create_op(void)
{
	char b[64];
	int i = add(K_FILE, random_parent(), w.next_id), fd;

	fd = openat(w.top, rel(i, b, sizeof(b)), O_CREAT | O_EXCL | O_WRONLY,
		    0644);
	if (fd < 0) {
		soft(OP_CREATE, "create %s", b);
		forget(i);
		return 1;
	}
	close(fd);
	return 1;
}

static int mkdir_op(void)
{
	char b[64];
	int i = add(K_DIR, TOP, w.next_id);

	if (mkdirat(w.top, rel(i, b, sizeof(b)), 0755) < 0) {
		soft(OP_MKDIR, "mkdir %s", b);
		forget(i);
	}
	return 1;
}

static int symlink_op(void)
{
	char b[64];
	int i = add(K_LINK, random_parent(), w.next_id);

	if (symlinkat("nsmix-target", w.top, rel(i, b, sizeof(b))) < 0) {
		soft(OP_SYMLINK, "symlink %s", b);
		forget(i);
	}
	return 1;
}

static int link_op(void)
{
	int from = pick(1u << K_FILE, 0), i, err;
	char b1[64], b2[64];

	if (from < 0)
		return 0;
	i = add(K_FILE, random_parent(), w.e[from].inode);
	w.e[i].xattrs = w.e[from].xattrs;
	memcpy(w.e[i].xsize, w.e[from].xsize, sizeof(w.e[i].xsize));
	if (linkat(w.top, rel(from, b1, sizeof(b1)), w.top,
		   rel(i, b2, sizeof(b2)), 0) < 0) {
		err = errno;
		forget(i);
		errno = err;
		failed(OP_LINK, from, "link", b1);
	}
	return 1;
}

static int unlink_op(void)
{
	int i = pick(1u << K_FILE | 1u << K_LINK, 0);
	char b[64];

	if (i < 0)
		return 0;
	if (unlinkat(w.top, rel(i, b, sizeof(b)), 0) < 0)
		failed(OP_UNLINK, i, "unlink", b);
	else
		forget(i);
	return 1;
}

/* An empty directory goes; when none is found, a file or link does. */
static int rmdir_op(void)
{
	int i = -1, tries;
	char b[64];

	for (tries = 0; tries < 16 && i < 0; tries++) {
		i = pick(1u << K_DIR, 0);
		if (i >= 0 && w.e[i].children)
			i = -1;
	}
	if (i < 0)
		return unlink_op();
	if (unlinkat(w.top, rel(i, b, sizeof(b)), AT_REMOVEDIR) < 0)
		failed(OP_RMDIR, i, "rmdir", b);
	else
		forget(i);
	return 1;
}

/* Entry i now has the name id under parent. */
static void moved(int i, int parent, uint32_t id)
{
	if (w.e[i].parent != TOP)
		w.e[w.e[i].parent].children--;
	if (parent != TOP)
		w.e[parent].children++;
	w.e[i].parent = parent;
	w.e[i].id = id;
}

static void name_of(enum kind kind, int parent, uint32_t id, char *buf,
		    size_t len)
{
	if (parent == TOP)
		snprintf(buf, len, "%c%u", prefix[kind], id);
	else
		snprintf(buf, len, "d%u/%c%u", w.e[parent].id, prefix[kind],
			 id);
}

/*
 * A file or link to a new name, or one time in four over another name of
 * the same kind and another inode (renaming onto a link of the same inode
 * does nothing).
 */
static int rename_op(void)
{
	int i = pick(1u << K_FILE | 1u << K_LINK, 0), v = -1, parent;
	char b1[64], b2[64];
	uint32_t id;

	if (i < 0)
		return 0;
	if (!rnd_below(&w.rnd, 4)) {
		v = pick(1u << w.e[i].kind, 0);
		if (v == i || (v >= 0 && w.e[v].inode == w.e[i].inode))
			v = -1;
	}
	parent = v >= 0 ? w.e[v].parent : random_parent();
	id = v >= 0 ? w.e[v].id : w.next_id++;
	name_of(w.e[i].kind, parent, id, b2, sizeof(b2));
	if (renameat(w.top, rel(i, b1, sizeof(b1)), w.top, b2) < 0) {
		failed(OP_RENAME, i, "rename", b1);
		return 1;
	}
	moved(i, parent, id);
	/* v's name now holds i's inode: v's entry goes, i's has the name. */
	if (v >= 0)
		forget(v);
	return 1;
}

/* Two names of the same kind swap their inodes (renameat2 RENAME_EXCHANGE). */
static int exchange_op(void)
{
	int a = pick(1u << K_FILE | 1u << K_LINK, 0), b = -1, tries;
	char b1[64], b2[64];
	uint16_t sizes[NR_XATTRS];
	unsigned int x;
	uint32_t inode;

	for (tries = 0; a >= 0 && tries < 16 && b < 0; tries++) {
		b = pick(1u << w.e[a].kind, 0);
		if (b == a || (b >= 0 && w.e[b].inode == w.e[a].inode))
			b = -1;
	}
	if (b < 0)
		return 0;
	if (renameat2(w.top, rel(a, b1, sizeof(b1)), w.top,
		      rel(b, b2, sizeof(b2)), RENAME_EXCHANGE) < 0) {
		failed(OP_EXCHANGE, a, "exchange", b1);
		return 1;
	}
	inode = w.e[a].inode;
	w.e[a].inode = w.e[b].inode;
	w.e[b].inode = inode;
	x = w.e[a].xattrs;
	w.e[a].xattrs = w.e[b].xattrs;
	w.e[b].xattrs = x;
	memcpy(sizes, w.e[a].xsize, sizeof(sizes));
	memcpy(w.e[a].xsize, w.e[b].xsize, sizeof(sizes));
	memcpy(w.e[b].xsize, sizes, sizeof(sizes));
	return 1;
}

/* A directory, children and all, to a new name. */
static int rendir_op(void)
{
	int i = pick(1u << K_DIR, 0);
	char b1[64], b2[64];
	uint32_t id;

	if (i < 0)
		return 0;
	id = w.next_id++;
	snprintf(b2, sizeof(b2), "d%u", id);
	if (renameat(w.top, rel(i, b1, sizeof(b1)), w.top, b2) < 0)
		failed(OP_RENDIR, i, "rename", b1);
	else
		w.e[i].id = id;
	return 1;
}

/* Every name of entry i's inode now has xattr x of size bytes, or none (0). */
static void set_xattr(int i, unsigned int x, size_t size)
{
	int j;

	for (j = 0; j < w.nused; j++) {
		if (j != i && (w.e[j].kind != K_FILE ||
			       w.e[j].inode != w.e[i].inode))
			continue;
		if (size)
			w.e[j].xattrs |= 1u << x;
		else
			w.e[j].xattrs &= ~(1u << x);
		w.e[j].xsize[x] = size;
	}
}

static void xattr_name(unsigned int x, char *buf, size_t len)
{
	snprintf(buf, len, "trusted.nsmix.%u", x);
}

/* A set xattr of entry i, picked at random among its bits. */
static unsigned int some_bit(int i)
{
	unsigned int x = rnd_below(&w.rnd, NR_XATTRS);

	while (!(w.e[i].xattrs & (1u << x)))
		x = (x + 1) % NR_XATTRS;
	return x;
}

static int setxattr_op(void)
{
	static char value[4096];
	int i = pick(1u << K_FILE | 1u << K_DIR, 0);
	unsigned int x = rnd_below(&w.rnd, NR_XATTRS), y;
	size_t size = (size_t)16 << rnd_below(&w.rnd, 8), others = 0;
	char p[4200], name[32];

	if (i < 0)
		return 0;
	for (y = 0; y < NR_XATTRS; y++)
		others += y == x ? 0 : w.e[i].xsize[y];
	if (others + size > XATTR_BUDGET)
		size = XATTR_BUDGET - others;
	memset(value, 'a' + x, size);
	xattr_name(x, name, sizeof(name));
	if (setxattr(abs_path(i, p, sizeof(p)), name, value, size, 0) < 0)
		failed(OP_SETXATTR, i, "setxattr", p);
	else
		set_xattr(i, x, size);
	return 1;
}

static int getxattr_op(void)
{
	static char value[4096];
	int i = pick(1u << K_FILE | 1u << K_DIR, 1);
	char p[4200], name[32];

	if (i < 0)
		return 0;
	xattr_name(some_bit(i), name, sizeof(name));
	if (getxattr(abs_path(i, p, sizeof(p)), name, value, sizeof(value)) < 0)
		failed(OP_GETXATTR, i, "getxattr", p);
	return 1;
}

static int listxattr_op(void)
{
	static char list[4096];
	int i = pick(1u << K_FILE | 1u << K_DIR, 0);
	char p[4200];

	if (i < 0)
		return 0;
	if (listxattr(abs_path(i, p, sizeof(p)), list, sizeof(list)) < 0)
		failed(OP_LISTXATTR, i, "listxattr", p);
	return 1;
}

static int rmxattr_op(void)
{
	int i = pick(1u << K_FILE | 1u << K_DIR, 1);
	char p[4200], name[32];
	unsigned int x;

	if (i < 0)
		return 0;
	x = some_bit(i);
	xattr_name(x, name, sizeof(name));
	if (removexattr(abs_path(i, p, sizeof(p)), name) < 0)
		failed(OP_RMXATTR, i, "removexattr", p);
	else
		set_xattr(i, x, 0);
	return 1;
}

static int stat_op(void)
{
	struct stat st;
	char b[64];
	int i;

	if (!w.nused)
		return 0;
	i = random_entry();
	if (fstatat(w.top, rel(i, b, sizeof(b)), &st, AT_SYMLINK_NOFOLLOW) < 0)
		failed(OP_STAT, i, "fstatat", b);
	return 1;
}

static int (*const ops[OP_STAT + 1])(void) = {
	[OP_CREATE] = create_op, [OP_MKDIR] = mkdir_op,
	[OP_SYMLINK] = symlink_op, [OP_LINK] = link_op,
	[OP_UNLINK] = unlink_op, [OP_RMDIR] = rmdir_op,
	[OP_RENAME] = rename_op, [OP_EXCHANGE] = exchange_op,
	[OP_RENDIR] = rendir_op, [OP_SETXATTR] = setxattr_op,
	[OP_GETXATTR] = getxattr_op, [OP_LISTXATTR] = listxattr_op,
	[OP_RMXATTR] = rmxattr_op, [OP_STAT] = stat_op,
};

static int is_xattr_op(int op)
{
	return op >= OP_SETXATTR && op <= OP_RMXATTR;
}

/* Pick an operation the table allows: full -> unlink, no xattrs -> stat. */
static int choose(void)
{
	int r = rnd_below(&w.rnd, 100), op;

	for (op = 0; op < OP_STAT; op++) {
		r -= weight[op];
		if (r < 0)
			break;
	}
	if (is_xattr_op(op) && !w.xattrs_ok)
		op = OP_STAT;
	if (w.nused >= maxnames && op <= OP_LINK)
		op = OP_UNLINK;
	return op;
}

/* One operation; one with nothing to work on becomes a create. */
static void do_op(int op)
{
	if (!ops[op]()) {
		op = w.nused < maxnames ? OP_CREATE : OP_RMDIR;
		ops[op]();
	}
	me->cnt[op]++;
	me->ops++;
}

/* Can this filesystem (and this process) set trusted.* xattrs? */
static int probe_xattrs(void)
{
	if (setxattr(w.path, "trusted.nsmix.probe", "1", 1, 0) < 0) {
		if (errno != EOPNOTSUPP && errno != EPERM)
			fail("setxattr %s", w.path);
		note("no trusted.* xattrs here (%s): xattr ops off",
		     strerror(errno));
		return 0;
	}
	if (removexattr(w.path, "trusted.nsmix.probe") < 0)
		fail("removexattr %s", w.path);
	return 1;
}

static int worker(int id, void *arg)
{
	uint64_t n = 0;

	(void)arg;
	w.top = worker_dir(opt.dir, id, w.path, sizeof(w.path));
	w.e = calloc(maxnames, sizeof(*w.e));
	if (!w.e)
		fail("calloc");
	w.xattrs_ok = probe_xattrs();
	w.rnd = rnd_seed(seed, id);
	wbarrier();
	faults_arm(1);
	while (now_ns() < READ_ONCE(ctl->deadline)) {
		do_op(choose());
		if (!id && opt.drop && n++ % 50 == 49) {
			faults_arm(0);
			drop_caches(3, 0);
			faults_arm(1);
			me->cnt[OP_DROP]++;
			me->ops++;
		}
	}
	faults_arm(0);
	wbarrier();
	close(w.top);
	if (rm_tree(w.path) < 0)
		soft(OP_TEARDOWN, "removing %s", w.path);
	return 0;
}

static void parse_args(int argc, char **argv)
{
	int c;

	copts_init(&opt);
	while ((c = getopt(argc, argv, COMMON_OPTSTR "t:S:n:")) != -1) {
		if (copts_parse(&opt, c, optarg))
			continue;
		if (c == 't') {
			seconds = parse_long(optarg, "-t", 1, 86400);
		} else if (c == 'S') {
			seed = parse_long(optarg, "-S", 0, SEED_MAX);
			seed_given = 1;
		} else if (c == 'n') {
			maxnames = parse_long(optarg, "-n", 4, MAX_NAMES);
		}
	}
	copts_finish(&opt, argc, argv);
	if (!seed_given)
		seed = (now_ns() ^ ((uint64_t)getpid() << 32)) & SEED_MAX;
}

int main(int argc, char **argv)
{
	struct phase ph = { 0 };
	struct report r;
	struct team t;
	int k;

	prog = "nsmix";
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
	for (k = 0; k < OP_TEARDOWN; k++)
		rep_kv(&r, keys[k], team_cnt(&t, 0, t.n, k));
	rep_kv(&r, "seed", seed);
	rep_end(&r);
	team_release(&t);
	team_finish(&t);
	faults_report(keys, NR_KEYS, t.n);
	return 0;
}
