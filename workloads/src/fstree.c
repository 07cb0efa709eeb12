// SPDX-License-Identifier: GPL-2.0
/*
 * fstree - Dave Chinner's fs_mark runs, scaled down: create a tree of
 * empty files, walk it cold, unlink it cold, one tree per worker.
 *
 * create: new_inode + sb list add + hash insert per file, as createunlink,
 * but the inodes stay cached, so the sb list and the LRU grow.
 * walk (after drop_caches): every fstatat is a lookup that misses the
 * dcache and reads the inode: iget_locked -> find_inode_fast under the
 * hash lock, then inode_sb_list_add for the new inode.
 * unlink (after another drop): lookup + iget again, then the final iput:
 * evict, inode_sb_list_del, remove_inode_hash.
 * Without -D the walk and unlink run warm (all cached) and say so
 * (cold=0).
 */
#include "common.h"
#include "faults.h"

#include <dirent.h>
#include <getopt.h>
#include <sys/stat.h>

static const char usage_msg[] =
"Usage: fstree [options] DIR\n"
"Each worker builds DIR/p<i>/d<j>/f<k>: N empty files, F per directory.\n"
"Phases: create (mkdir + create), walk (readdir + fstatat of every file),\n"
"unlink (unlink every file, rmdir the directories); ops = files.  With -D\n"
"caches are dropped (sync; drop_caches 3) before walk and before unlink.\n"
"  -n N       files per worker (default 5000)\n"
"  -f F       files per directory (default 1000)\n"
"With " FAULTS_ENV "=1 (a faults step) a failed operation is counted (a last\n"
"line: phase errors, errors.<phase>.<op>.<ERRNO>=N) and the phase goes on: the\n"
"files of a directory that could not be made or opened are skipped, the\n"
"walk sees the files it can, and the teardown removes what is left.\n";

/* Failed operations, named by phase and operation. */
enum { C_MKDIR, C_OPEN, C_CREATE, C_CLOSE, W_OPEN, W_FSTATAT, W_READDIR,
	U_OPEN, U_UNLINK, U_RMDIR, TEARDOWN, NR_KEYS };
static const char *const keys[NR_KEYS] = {
	"create.mkdir", "create.open", "create.create", "create.close",
	"walk.open", "walk.fstatat", "walk.readdir", "unlink.open",
	"unlink.unlink", "unlink.rmdir", "teardown",
};

static long nfiles = 5000, perdir = 1000;
static struct copts opt;
static unsigned char *made;	/* faults_made() */

static int ndirs(void)
{
	return (nfiles + perdir - 1) / perdir;
}

/* The first file past directory j. */
static long dir_end(int j)
{
	return nfiles < (j + 1) * perdir ? nfiles : (j + 1) * perdir;
}

static void timed_start(uint64_t *t)
{
	if (!opt.nolat)
		*t = now_ns();
}

static void timed_end(uint64_t t)
{
	if (!opt.nolat)
		hist_add(&me->hist, now_ns() - t);
	me->ops++;
}

static void create_tree(int top)
{
	char name[32];
	long k = 0;
	int j;

	for (j = 0; j < ndirs(); j++) {
		int dfd;

		snprintf(name, sizeof(name), "d%d", j);
		if (mkdirat(top, name, 0755) < 0) {
			soft(C_MKDIR, "mkdir %s", name);
			k = dir_end(j);
			continue;
		}
		dfd = openat(top, name, O_RDONLY | O_DIRECTORY);
		if (dfd < 0) {
			soft(C_OPEN, "open %s", name);
			k = dir_end(j);
			continue;
		}
		for (; k < dir_end(j); k++) {
			uint64_t t = 0;
			int fd;

			snprintf(name, sizeof(name), "f%ld", k);
			timed_start(&t);
			fd = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY,
				    0644);
			if (fd < 0) {
				soft(C_CREATE, "create d%d/%s", j, name);
			} else {
				if (made)
					made[k] = 1;
				if (close(fd) < 0)
					soft(C_CLOSE, "close d%d/%s", j, name);
			}
			timed_end(t);
		}
		close(dfd);
	}
}

/* readdir one leaf directory, fstatat each entry; returns files seen. */
static long walk_dir(int top, const char *dname)
{
	struct dirent *de;
	long seen = 0;
	DIR *d;
	int dfd;

	dfd = openat(top, dname, O_RDONLY | O_DIRECTORY);
	if (dfd < 0) {
		soft(W_OPEN, "open %s", dname);
		return 0;
	}
	d = fdopendir(dfd);
	if (!d)
		fail("fdopendir %s", dname);
	for (errno = 0; (de = readdir(d)); errno = 0) {
		struct stat st;
		uint64_t t = 0;

		if (de->d_name[0] == '.')
			continue;
		timed_start(&t);
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			soft(W_FSTATAT, "fstatat %s/%s", dname, de->d_name);
		timed_end(t);
		seen++;
	}
	if (errno)
		soft(W_READDIR, "readdir %s", dname);
	closedir(d);
	return seen;
}

static void walk_tree(int top)
{
	struct dirent *de;
	long seen = 0;
	DIR *d;
	int fd;

	/* A fresh fd: the one kept open would carry a stale position. */
	fd = openat(top, ".", O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		soft(W_OPEN, "open .");
		return;
	}
	d = fdopendir(fd);
	if (!d)
		fail("fdopendir");
	for (errno = 0; (de = readdir(d)); errno = 0) {
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		if (fstatat(top, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			soft(W_FSTATAT, "fstatat %s", de->d_name);
			continue;
		}
		if (!S_ISDIR(st.st_mode))
			failx("%s: unexpected non-directory", de->d_name);
		seen += walk_dir(top, de->d_name);
	}
	if (errno)
		soft(W_READDIR, "readdir");
	closedir(d);
	/* Under faults some files were never made, or could not be read. */
	if (seen != nfiles && !faults_on())
		failx("walk saw %ld files, created %ld", seen, nfiles);
}

static void unlink_tree(int top)
{
	char name[32];
	long k = 0;
	int j;

	for (j = 0; j < ndirs(); j++) {
		int dfd;

		snprintf(name, sizeof(name), "d%d", j);
		dfd = openat(top, name, O_RDONLY | O_DIRECTORY);
		if (dfd < 0) {
			soft(U_OPEN, "open %s", name);
			k = dir_end(j);
			continue;
		}
		for (; k < dir_end(j); k++) {
			uint64_t t = 0;

			if (!faults_exists(made, k))
				continue;
			snprintf(name, sizeof(name), "f%ld", k);
			timed_start(&t);
			if (unlinkat(dfd, name, 0) < 0)
				soft(U_UNLINK, "unlink d%d/%s", j, name);
			timed_end(t);
		}
		close(dfd);
		snprintf(name, sizeof(name), "d%d", j);
		if (unlinkat(top, name, AT_REMOVEDIR) < 0)
			soft(U_RMDIR, "rmdir %s", name);
	}
}

static int worker(int id, void *arg)
{
	char path[4096];
	int top = worker_dir(opt.dir, id, path, sizeof(path));

	(void)arg;
	made = faults_made(nfiles);
	wbarrier();
	faults_arm(1);
	create_tree(top);
	faults_arm(0);
	wbarrier();
	faults_arm(1);
	walk_tree(top);
	faults_arm(0);
	wbarrier();
	faults_arm(1);
	unlink_tree(top);
	faults_arm(0);
	wbarrier();
	close(top);
	if (faults_on() ? rm_tree(path) < 0 : rmdir(path) < 0)
		soft(TEARDOWN, "rmdir %s", path);
	return 0;
}

static void report(struct team *t, struct phase *ph)
{
	struct report r;
	struct hist h;

	team_hist(t, 0, t->n, &h);
	rep_start(&r, ph->name, team_ops(t, 0, t->n), ph->t1 - ph->t0, t->n);
	rep_hist(&r, &h);
	rep_kv(&r, "dirs", (uint64_t)ndirs() * t->n);
	rep_kv(&r, "cold", strcmp(ph->name, "create") ? opt.drop : 0);
	rep_end(&r);
}

int main(int argc, char **argv)
{
	static const char *const names[] = { "create", "walk", "unlink" };
	struct team t;
	int c, i;

	prog = "fstree";
	usage_text = usage_msg;
	copts_init(&opt);
	while ((c = getopt(argc, argv, COMMON_OPTSTR "n:f:")) != -1) {
		if (copts_parse(&opt, c, optarg))
			continue;
		if (c == 'n')
			nfiles = parse_long(optarg, "-n", 1, 100000000);
		else if (c == 'f')
			perdir = parse_long(optarg, "-f", 1, 10000000);
	}
	copts_finish(&opt, argc, argv);
	faults_init();

	team_start(&t, opt.nprocs, worker, NULL);
	team_wait(&t);
	faults_disk(1);
	for (i = 0; i < 3; i++) {
		struct phase ph = { 0 };

		/* Cold walk and unlink, as fs_mark runs had them. */
		if (i > 0 && opt.drop)
			drop_caches(3, 1);
		phase_run(&t, &opt, &ph, names[i]);
		report(&t, &ph);
	}
	faults_disk(0);
	team_release(&t);
	team_finish(&t);
	faults_report(keys, NR_KEYS, t.n);
	return 0;
}
