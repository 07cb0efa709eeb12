// SPDX-License-Identifier: GPL-2.0
/*
 * anonstorm - create and close anonymous-inode files: eventfd, epoll and
 * timerfd all stand on the one inode of anon_inodefs.
 *
 * anon_inode_getfile() takes a reference to the shared anon inode (ihold)
 * and alloc_file_pseudo() instantiates a dentry on it (d_instantiate takes
 * its i_lock); close kills that dentry (dentry_kill trylocks the inode's
 * i_lock) and drops the reference (iput).  6.1 and chinner move the
 * atomic i_count without the lock, so they take that one system-wide
 * i_lock twice per create and close; piggin's i_refs is under i_lock, so
 * ihold and iput take it as well: four times, on a lock every CPU shares.
 * The filesystem under test plays no part (the files live on the anon
 * inode's own pseudo filesystem); DIR only holds the workers' directories.
 */
#include "common.h"

#include <getopt.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>

static const char usage_msg[] =
"Usage: anonstorm [options] DIR\n"
"Timed phases, each -t seconds (or -r operations per worker), every worker\n"
"creating and closing one file per operation:\n"
"  eventfd   eventfd(0, EFD_CLOEXEC) + close\n"
"  epoll     epoll_create1(EPOLL_CLOEXEC) + close\n"
"  timerfd   timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC) + close\n"
"ops = files created and closed.\n"
"  -t SECS    phase length in seconds (default 1)\n"
"  -r N       instead of -t: N operations per worker and phase\n";

enum phase_kind { PH_EVENTFD, PH_EPOLL, PH_TIMERFD, NR_PHASES };

static const char *const phase_name[NR_PHASES] = {
	"eventfd", "epoll", "timerfd"
};

static long seconds = 1, count;
static struct copts opt;

static int over(uint64_t done, uint64_t now)
{
	if (count)
		return done >= (uint64_t)count;
	if (!now) {
		/* -q: read the clock now and then, not per operation. */
		if (done % 64)
			return 0;
		now = now_ns();
	}
	return now >= READ_ONCE(ctl->deadline);
}

static int make_one(enum phase_kind kind)
{
	switch (kind) {
	case PH_EVENTFD:
		return eventfd(0, EFD_CLOEXEC);
	case PH_EPOLL:
		return epoll_create1(EPOLL_CLOEXEC);
	default:
		return timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	}
}

static void run_ops(enum phase_kind kind)
{
	uint64_t done = 0, now = 0;

	while (!over(done, now)) {
		uint64_t t = 0;
		int fd;

		if (!opt.nolat)
			t = now_ns();
		fd = make_one(kind);
		if (fd < 0)
			fail("%s", phase_name[kind]);
		if (close(fd) < 0)
			fail("close %s", phase_name[kind]);
		if (!opt.nolat) {
			now = now_ns();
			hist_add(&me->hist, now - t);
		}
		me->ops = ++done;
	}
}

static int worker(int id, void *arg)
{
	int kind;

	(void)id;
	(void)arg;
	wbarrier();
	for (kind = 0; kind < NR_PHASES; kind++) {
		run_ops(kind);
		wbarrier();
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct report r;
	struct team t;
	struct hist h;
	int c, kind;

	prog = "anonstorm";
	usage_text = usage_msg;
	copts_init(&opt);
	while ((c = getopt(argc, argv, COMMON_OPTSTR "t:r:")) != -1) {
		if (copts_parse(&opt, c, optarg))
			continue;
		if (c == 't')
			seconds = parse_long(optarg, "-t", 1, 86400);
		else if (c == 'r')
			count = parse_long(optarg, "-r", 1, 100000000);
	}
	copts_finish(&opt, argc, argv);

	team_start(&t, opt.nprocs, worker, NULL);
	team_wait(&t);
	for (kind = 0; kind < NR_PHASES; kind++) {
		struct phase ph = { 0 };

		if (!count)
			ph.dur_ns = seconds * 1000000000ull;
		phase_run(&t, &opt, &ph, phase_name[kind]);
		team_hist(&t, 0, t.n, &h);
		rep_start(&r, ph.name, team_ops(&t, 0, t.n), ph.t1 - ph.t0, t.n);
		rep_hist(&r, &h);
		rep_end(&r);
	}
	team_release(&t);
	team_finish(&t);
	return 0;
}
