// SPDX-License-Identifier: GPL-2.0
/*
 * igetstorm - open_by_handle_at on many files: every open is an inode
 * hash lookup.
 *
 * On ext4, open_by_handle_at -> exportfs_decode_fh -> ext4_fh_to_dentry
 * -> ext4_iget -> iget_locked -> find_inode_fast walks a hash chain under
 * the hash lock (global inode_hash_lock, or a bucket lock in the split
 * designs) and takes i_lock of the inode it finds, on every call, cached
 * or not.  With -D the first round starts from dropped caches, so it also
 * inserts (inode_sb_list_add, hash insert) what it reads back.  tmpfs
 * hashes an inode on its first name_to_handle_at and looks it up with
 * ilookup5, so it stresses the same hash.
 */
#include "common.h"

#include <getopt.h>
#include <sys/stat.h>

static const char usage_msg[] =
"Usage: igetstorm [options] DIR\n"
"Setup: each worker creates N files in DIR/p<i> and keeps their handles\n"
"(name_to_handle_at); sync; with -D drop_caches 3.  Phase open-by-handle:\n"
"R rounds of open_by_handle_at(O_RDONLY) + close over the worker's handles.\n"
"ops = opens.  Needs CAP_DAC_READ_SEARCH (root).\n"
"  -n N       files per worker (default 2000)\n"
"  -r R       rounds (default 5)\n";

static long nfiles = 2000, rounds = 5;
static struct copts opt;

#define FH_SIZE	(sizeof(struct file_handle) + MAX_HANDLE_SZ)

static struct file_handle *fh_at(char *fhs, long k)
{
	return (struct file_handle *)(fhs + k * FH_SIZE);
}

static char *collect_handles(int dfd)
{
	char *fhs = calloc(nfiles, FH_SIZE);
	char name[32];
	long k;

	if (!fhs)
		fail("calloc handles");
	for (k = 0; k < nfiles; k++) {
		struct file_handle *fh = fh_at(fhs, k);
		int fd, mnt;

		snprintf(name, sizeof(name), "f%ld", k);
		fd = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0)
			fail("create %s", name);
		if (close(fd) < 0)
			fail("close %s", name);
		fh->handle_bytes = MAX_HANDLE_SZ;
		if (name_to_handle_at(dfd, name, fh, &mnt, 0) < 0)
			fail("name_to_handle_at %s", name);
	}
	return fhs;
}

static int worker(int id, void *arg)
{
	char path[4096];
	int dfd = worker_dir(opt.dir, id, path, sizeof(path));
	char *fhs = collect_handles(dfd);
	int mfd = open(opt.dir, O_RDONLY | O_DIRECTORY);
	long r, k;

	(void)arg;
	if (mfd < 0)
		fail("open %s", opt.dir);
	wbarrier();
	for (r = 0; r < rounds; r++) {
		for (k = 0; k < nfiles; k++) {
			uint64_t t = 0;
			int fd;

			if (!opt.nolat)
				t = now_ns();
			fd = open_by_handle_at(mfd, fh_at(fhs, k), O_RDONLY);
			if (fd < 0)
				fail("open_by_handle_at f%ld", k);
			if (close(fd) < 0)
				fail("close f%ld", k);
			if (!opt.nolat)
				hist_add(&me->hist, now_ns() - t);
			me->ops++;
		}
	}
	wbarrier();
	close(mfd);
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

	prog = "igetstorm";
	usage_text = usage_msg;
	copts_init(&opt);
	while ((c = getopt(argc, argv, COMMON_OPTSTR "n:r:")) != -1) {
		if (copts_parse(&opt, c, optarg))
			continue;
		if (c == 'n')
			nfiles = parse_long(optarg, "-n", 1, 10000000);
		else if (c == 'r')
			rounds = parse_long(optarg, "-r", 1, 1000000);
	}
	copts_finish(&opt, argc, argv);

	team_start(&t, opt.nprocs, worker, NULL);
	team_wait(&t);
	/*
	 * Clean inodes only: the drop can then empty the icache, and no
	 * writeback of the setup's inodes runs inside the timed phase.
	 */
	sync();
	if (opt.drop)
		drop_caches(3, 0);
	phase_run(&t, &opt, &ph, "open-by-handle");
	team_hist(&t, 0, t.n, &h);
	rep_start(&r, ph.name, team_ops(&t, 0, t.n), ph.t1 - ph.t0, t.n);
	rep_hist(&r, &h);
	rep_kv(&r, "files", (uint64_t)nfiles * t.n);
	rep_kv(&r, "rounds", rounds);
	rep_kv(&r, "cold", opt.drop);
	rep_end(&r);
	team_release(&t);
	team_finish(&t);
	return 0;
}
