/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared pieces of the inode-duel workload programs.
 *
 * Every program runs -p worker PROCESSES (never threads: threads share an
 * fd table and would contend on file_lock, which is not what we measure),
 * each in its own directory DIR/p<i>.  Workers do their setup, meet the
 * parent at a barrier made of pipes, and are released into each timed
 * phase by the parent, which owns the clock.  Results go to stdout as
 *
 *	result phase=<name> ops=<N> elapsed_ns=<N> procs=<P> [key=value...]
 *
 * and nothing else ever goes to stdout.
 */
#ifndef INODE_DUEL_COMMON_H
#define INODE_DUEL_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS	256
#define MAX_COUNTERS	16

/* Set by each program before anything else. */
extern const char *prog;
/* -1 in the parent, the worker index in a worker. */
extern int worker_id;

/*
 * The environment variable that says "this is the throw-away QEMU guest".
 * Dropping caches, mounting and writing /proc/lock_stat are refused
 * without it, so a stray run on a developer's host cannot do them.
 */
#define GUEST_ENV	"INODE_DUEL_GUEST"
int is_guest(void);

/* Options shared by every program. */
struct copts {
	int nprocs;		/* -p: worker processes */
	int drop;		/* -D: dropping caches allowed */
	int nolat;		/* -q: no per-operation latency */
	const char *lsprefix;	/* -L: lock_stat window prefix */
	const char *dir;	/* DIR */
};

#define COMMON_OPTSTR	"hp:L:Dq"
#define COMMON_USAGE \
"  -p N       worker processes, each in DIR/p<i> (default 1)\n" \
"  -L PREFIX  save /proc/lock_stat and /proc/icache_retries of each timed\n" \
"             phase to PREFIX.<phase>.lock_stat / PREFIX.<phase>.retries\n" \
"             (reset to 0 just before the phase; guest only, see below)\n" \
"  -D         allow dropping caches (needs " GUEST_ENV "=1)\n" \
"  -q         do not time single operations (no p50_ns..max_ns keys)\n" \
"  -h         this help\n" \
"Output: one line per timed phase on stdout:\n" \
"  result phase=NAME ops=N elapsed_ns=N procs=P [key=value...]\n" \
"Dropping caches, (re)mounting and touching /proc/lock_stat happen only\n" \
"when the environment has " GUEST_ENV "=1 (set by the guest's init).\n" \
"INODE_DUEL_PROC=DIR takes lock_stat/icache_retries from DIR instead of\n" \
"/proc, guest or not (to test -L with plain files).\n"

void copts_init(struct copts *o);
/* Handle a common option; returns 0 if c is not one of them. */
int copts_parse(struct copts *o, int c, const char *arg);
/* Take DIR from argv[optind], check the guest-only options. */
void copts_finish(struct copts *o, int argc, char **argv);
/* Print the program's usage (set by the program) and exit. */
extern const char *usage_text;
void usage(int status) __attribute__((noreturn));
void usage_error(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));
long parse_long(const char *s, const char *what, long min, long max);

/*
 * Fatal errors.  In a worker they print "prog: worker N: msg" and exit
 * the worker; in the parent they kill the workers and exit 1.
 * fail() appends ": strerror(errno)".
 */
void fail(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));
void failx(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Small, fast, per-worker PRNG (xorshift64*): no shared state. */
static inline uint64_t rnd_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static inline uint32_t rnd_below(uint64_t *s, uint32_t n)
{
	return (uint32_t)(((rnd_next(s) >> 32) * n) >> 32);
}

uint64_t rnd_seed(uint64_t seed, int id);

/* Filesystem helpers. */
void mkdir_p(const char *path);
int is_mountpoint(const char *path);
/* Remove a tree (missing is fine); returns -1 with errno on failure. */
int rm_tree(const char *path);
/* Create DIR/p<id> (removing a stale one) and return an fd on it. */
int worker_dir(const char *dir, int id, char *path, size_t len);

/*
 * Guest-only: sync (if asked) and write level to drop_caches; 3 drops
 * page cache (drop_pagecache_sb walks every sb->s_inodes) and slab (the
 * shrinkers walk the inode LRU), 2 only slab, 1 only page cache.
 */
void drop_caches(int level, int sync_first);

/*
 * Log-linear latency histogram: values below 2^SUB_BITS are exact, above
 * that each power of two is split into 2^SUB_BITS linear buckets, so any
 * value is known to within 1/64 (1.6%).
 */
#define HIST_SUB_BITS	6
#define HIST_SUB	(1 << HIST_SUB_BITS)
#define HIST_BUCKETS	((64 - HIST_SUB_BITS + 1) * HIST_SUB)

struct hist {
	uint64_t count;
	uint64_t max;
	uint64_t b[HIST_BUCKETS];
};

static inline unsigned int hist_index(uint64_t v)
{
	unsigned int e;

	if (v < HIST_SUB)
		return v;
	e = 63 - __builtin_clzll(v);
	return (e - HIST_SUB_BITS + 1) * HIST_SUB +
		((v >> (e - HIST_SUB_BITS)) & (HIST_SUB - 1));
}

static inline void hist_add(struct hist *h, uint64_t v)
{
	h->b[hist_index(v)]++;
	h->count++;
	if (v > h->max)
		h->max = v;
}

void hist_merge(struct hist *to, const struct hist *from);
uint64_t hist_pct(const struct hist *h, double q);

/*
 * What a worker shares with the parent: its counters and its own
 * histogram (one per worker, so timing never bounces a cache line
 * between workers; the parent merges them after the phase).
 */
struct wslot {
	uint64_t ops;
	uint64_t cnt[MAX_COUNTERS];
	struct hist hist;
} __attribute__((aligned(64)));

/* Control words the parent writes and workers poll. */
struct shctl {
	int stop;		/* workers stop their loop */
	int measure;		/* record latencies now (sbwalk) */
	int ndone;		/* workers that finished the phase */
	uint64_t deadline;	/* now_ns() value at which timed loops end */
} __attribute__((aligned(64)));

#define READ_ONCE(x)	__atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

typedef int (*worker_fn)(int id, void *arg);

struct team {
	int n;			/* members, extra helpers included */
	pid_t pid[MAX_PROCS + 1];
	int st[MAX_PROCS + 1];	/* parent reads: one byte per barrier */
	int go[MAX_PROCS + 1];	/* parent writes: one byte releases */
	struct shctl *ctl;
	struct wslot *slot;	/* n slots */
};

/* In a worker: its own slot and the control block. */
extern struct wslot *me;
extern struct shctl *ctl;

/* Parent side. */
void team_start(struct team *t, int n, worker_fn fn, void *arg);
void team_wait(struct team *t);
void team_wait_range(struct team *t, int lo, int hi);
void team_release(struct team *t);
void team_finish(struct team *t);
void team_check(struct team *t);
void team_reset_stats(struct team *t);
uint64_t team_ops(struct team *t, int lo, int hi);
uint64_t team_cnt(struct team *t, int lo, int hi, int k);
void team_hist(struct team *t, int lo, int hi, struct hist *h);

/* Worker side: report "done with this step", wait to be released. */
void wbarrier(void);

/* Lock-stat window around a timed phase (see -L). */
void lsw_begin(const struct copts *o);
void lsw_end(const struct copts *o, const char *phase);

/* A timed phase run by the whole team: reset, clock, release, wait. */
struct phase {
	const char *name;
	uint64_t dur_ns;	/* set by the caller: ctl->deadline = t0 + dur */
	uint64_t t0, t1;
};
void phase_run(struct team *t, const struct copts *o, struct phase *ph,
	       const char *name);
/* Same, waiting only for members lo..hi-1 (the rest are helpers). */
void phase_run_range(struct team *t, const struct copts *o,
		     struct phase *ph, const char *name, int lo, int hi);

/* One result line. */
struct report {
	char buf[2048];
	size_t len;
};
void rep_start(struct report *r, const char *phase, uint64_t ops,
	       uint64_t ns, int procs);
void rep_kv(struct report *r, const char *key, uint64_t v);
void rep_hist(struct report *r, const struct hist *h);
void rep_end(struct report *r);

#endif
