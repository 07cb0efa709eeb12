// SPDX-License-Identifier: GPL-2.0
/*
 * createunlink - each worker creates an empty file and unlinks it, N times.
 *
 * Stresses the inode allocation and teardown path of every icache lock
 * design: new_inode/inode_sb_list_add (s_inode_list_lock), the hash insert
 * on ext4 (insert_inode_locked: inode_hash_lock), i_state updates under
 * i_lock, and on unlink the final iput -> evict -> inode_sb_list_del and
 * remove_inode_hash.  The cheapest per-operation signal of who takes which
 * lock how often (design.md section 6: i_lock 8 per op on tmpfs).
 */
#include "common.h"
#include "faults.h"

#include <getopt.h>
#include <sys/stat.h>

static const char usage_msg[] =
"Usage: createunlink [options] DIR\n"
"Each worker loops: open(O_CREAT|O_EXCL|O_WRONLY) a new empty file in\n"
"DIR/p<i>, close, unlink.  Phase create-unlink; ops = create+unlink pairs.\n"
"  -n N       pairs per worker (default 5000)\n"
"  -u         a new name for every pair (default: one name per worker,\n"
"             so the dcache does not grow with negative dentries)\n"
"With " FAULTS_ENV "=1 (a faults step) a failed open, close or unlink is\n"
"counted (a last line: phase errors, errors.<op>.<ERRNO>=N) and the loop\n"
"goes on: a file whose unlink failed makes the next create fail with\n"
"EEXIST, then goes.\n";

enum { K_CREATE, K_CLOSE, K_UNLINK, K_TEARDOWN, NR_KEYS };
static const char *const keys[NR_KEYS] = {
	"create", "close", "unlink", "teardown",
};

static long npairs = 5000;
static int unique;
static struct copts opt;

static void one_pair(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY, 0644);

	if (fd < 0) {
		int exists = errno == EEXIST;

		soft(K_CREATE, "open %s", name);
		/* Left by an unlink that failed: it goes now. */
		if (!exists)
			return;
	} else if (close(fd) < 0) {
		soft(K_CLOSE, "close %s", name);
	}
	if (unlinkat(dfd, name, 0) < 0)
		soft(K_UNLINK, "unlink %s", name);
}

static int worker(int id, void *arg)
{
	char path[4096], name[32] = "f";
	int dfd = worker_dir(opt.dir, id, path, sizeof(path));
	long i;

	(void)arg;
	wbarrier();
	faults_arm(1);
	for (i = 0; i < npairs; i++) {
		uint64_t t = 0;

		if (unique)
			snprintf(name, sizeof(name), "f%ld", i);
		if (!opt.nolat)
			t = now_ns();
		one_pair(dfd, name);
		if (!opt.nolat)
			hist_add(&me->hist, now_ns() - t);
		me->ops++;
	}
	faults_arm(0);
	wbarrier();
	close(dfd);
	if (faults_on() ? rm_tree(path) < 0 : rmdir(path) < 0)
		soft(K_TEARDOWN, "rmdir %s", path);
	return 0;
}

int main(int argc, char **argv)
{
	struct team t;
	struct phase ph = { 0 };
	struct report r;
	struct hist h;
	int c;

	prog = "createunlink";
	usage_text = usage_msg;
	copts_init(&opt);
	while ((c = getopt(argc, argv, COMMON_OPTSTR "n:u")) != -1) {
		if (copts_parse(&opt, c, optarg))
			continue;
		if (c == 'n')
			npairs = parse_long(optarg, "-n", 1, 1000000000);
		else if (c == 'u')
			unique = 1;
	}
	copts_finish(&opt, argc, argv);
	faults_init();

	team_start(&t, opt.nprocs, worker, NULL);
	team_wait(&t);
	faults_disk(1);
	phase_run(&t, &opt, &ph, "create-unlink");
	faults_disk(0);
	team_hist(&t, 0, t.n, &h);
	rep_start(&r, ph.name, team_ops(&t, 0, t.n), ph.t1 - ph.t0, t.n);
	rep_hist(&r, &h);
	rep_end(&r);
	team_release(&t);
	team_finish(&t);
	faults_report(keys, NR_KEYS, t.n);
	return 0;
}
