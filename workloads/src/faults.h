/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fault-injection steps (make faults, harness/run/faults.py).
 *
 * The harness's faults plan sets INODE_DUEL_FAULTS=1 and tells the kernel
 * (debugfs failslab, fail_page_alloc, fail_make_request, each with its
 * task-filter on) to fail a share of the allocations and block requests of
 * the tasks whose /proc/self/make-it-fail is 1.  A worker arms itself for
 * its operation loop only (faults_arm), so setup, the barriers with the
 * parent and the teardown never meet an injected fault.  An operation that
 * fails is counted by what it was and its errno (soft) instead of ending
 * the program; a last result line (phase errors, faults_report) says
 * how many failed, by operation and errno.
 *
 * Without INODE_DUEL_FAULTS nothing changes: every error is fatal and the
 * result lines carry no errors keys.  Outside the guest nothing is armed
 * (the host's kernel is never asked to fail anything); errors that happen
 * are still counted, which is how the programs are tested on the host.
 *
 * Header-only on purpose: the programs that do not run under faults link
 * exactly what they linked before.
 */
#ifndef INODE_DUEL_FAULTS_H
#define INODE_DUEL_FAULTS_H

#include "common.h"

#include <stdarg.h>
#include <sys/mman.h>

#define FAULTS_ENV	"INODE_DUEL_FAULTS"
/* errno values counted apart; larger ones share slot 0 ("E0" never occurs). */
#define FAULT_ERRNOS	160

/* Counts of failed operations: per member (parent first), op key, errno. */
struct fault_counts {
	uint32_t n[MAX_PROCS + 2][MAX_COUNTERS][FAULT_ERRNOS];
};

static struct fault_counts *fault_counts;
static int faults_mode = -1;

static inline int faults_on(void)
{
	if (faults_mode < 0) {
		const char *v = getenv(FAULTS_ENV);

		faults_mode = v && !strcmp(v, "1");
	}
	return faults_mode;
}

/* In the parent, before team_start: the table the workers count into. */
static inline void faults_init(void)
{
	if (!faults_on())
		return;
	fault_counts = mmap(NULL, sizeof(*fault_counts),
			    PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (fault_counts == MAP_FAILED)
		fail("mmap %zu bytes for the fault counts",
		     sizeof(*fault_counts));
}

/*
 * 1: this task's kernel work may fail as the step's faults say; 0: not.
 * The file stays open: opening it while armed needs a dentry, which may
 * fail (mainline, 2026-12-06: torture's worker could not disarm itself).
 * Opened by the process that writes it: /proc/self is the opener.
 */
static inline void faults_arm(int on)
{
	static pid_t opener;
	static int fd = -1;

	if (!faults_on() || !is_guest())
		return;
	if (opener != getpid()) {
		fd = open("/proc/self/make-it-fail", O_WRONLY);
		if (fd < 0)
			fail("open /proc/self/make-it-fail (a kernel without "
			     "CONFIG_FAULT_INJECTION?)");
		opener = getpid();
	}
	if (write(fd, on ? "1" : "0", 1) != 1)
		fail("write /proc/self/make-it-fail");
}

/*
 * A faults step whose block requests fail in the disk scope names the
 * disk's make-it-fail file in INODE_DUEL_FAULTS_DISK: the parent holds it at
 * 1 for its timed phases (faults_disk), so every request to the disk may
 * fail then, the journal's and writeback's too, but not the mount or the
 * teardown's.
 */
static inline void faults_disk(int on)
{
	const char *path = getenv("INODE_DUEL_FAULTS_DISK");
	int fd;

	/* The parent, which no fault is armed for, calls this. */
	if (!faults_on() || !is_guest() || !path || !*path)
		return;
	fd = open(path, O_WRONLY);
	if (fd < 0)
		fail("open %s", path);
	if (write(fd, on ? "1" : "0", 1) != 1)
		fail("write %s", path);
	if (close(fd) < 0)
		fail("close %s", path);
}

/*
 * An operation (counter key) failed with errno: in a faults step count it
 * and return, else end the program as fail() does.
 */
static inline void soft(int key, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static inline void soft(int key, const char *fmt, ...)
{
	int err = errno;
	char msg[512];
	va_list ap;

	if (faults_on()) {
		fault_counts->n[worker_id + 1][key]
			[err > 0 && err < FAULT_ERRNOS ? err : 0]++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	errno = err;
	fail("%s", msg);
}

/*
 * Which of a worker's n files exist, in a faults step only (NULL outside
 * one): a file whose create failed is not unlinked or stat'ed later, so an
 * injected fault is counted once, not again as an ENOENT.
 */
static inline unsigned char *faults_made(long n)
{
	unsigned char *made;

	if (!faults_on())
		return NULL;
	made = calloc(n, 1);
	if (!made)
		fail("calloc %ld", n);
	return made;
}

/* Does file k exist (always, outside a faults step)? */
static inline int faults_exists(const unsigned char *made, long k)
{
	return !made || made[k];
}

static inline uint64_t fault_count(int key, int err)
{
	uint64_t sum = 0;
	int i;

	for (i = 0; i < MAX_PROCS + 2; i++)
		sum += fault_counts->n[i][key][err];
	return sum;
}

/*
 * In a faults step, at the very end (after the teardown, whose failures
 * count too), one more result line:
 *
 *	result phase=errors ops=<failed operations> elapsed_ns=0 procs=P
 *		errors.<op>.<ERRNO>=N ...
 */
static inline void faults_report(const char *const *keys, int nkeys, int procs)
{
	uint64_t total = 0;
	struct report r;
	char name[96];
	int k, e;

	if (!faults_on())
		return;
	for (k = 0; k < nkeys; k++)
		for (e = 0; e < FAULT_ERRNOS; e++)
			total += fault_count(k, e);
	rep_start(&r, "errors", total, 0, procs);
	for (k = 0; k < nkeys; k++) {
		for (e = 0; e < FAULT_ERRNOS; e++) {
			uint64_t n = fault_count(k, e);
			const char *en = e ? strerrorname_np(e) : NULL;

			if (!n)
				continue;
			if (en)
				snprintf(name, sizeof(name), "errors.%s.%s",
					 keys[k], en);
			else
				snprintf(name, sizeof(name), "errors.%s.E%d",
					 keys[k], e);
			rep_kv(&r, name, n);
		}
	}
	rep_end(&r);
}

#endif
