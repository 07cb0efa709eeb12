/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * tcg-cs: what the plugin's parts share (plugin.c has the overview).
 *
 *   plugin.c   configuration, translation (which callback on which instruction)
 *   locks.c    lock classes, held locks, acquisitions, releases, trylock retries
 *   lines.c    the cache lines each critical section touches
 *   output.c   windows, per-window statistics and what is written
 *
 * One host thread runs every vCPU (1 vCPU, or -accel tcg,thread=single with
 * several, round robin): no callback runs concurrently with another, so
 * nothing here locks. plugin.c refuses multi-threaded TCG.
 */
#ifndef TCG_CS_H
#define TCG_CS_H

#include <stdint.h>
#include <stdio.h>

#include "qemu-plugin-api.h"

#define KERNEL_START		0xffff800000000000ull
#define IMAGE_START		0xffffffff80000000ull	/* the kernel image: static data */
#define THREAD_SIZE		16384ull	/* x86-64 kernel stacks: 16 KiB, aligned */

#define MAX_VCPUS		8
#define MAX_HELD		64
#define MAX_PENDING		16
#define MAX_EPISODES		16
#define MAX_TRACE_SITES		8
#define UNREGISTERED		0	/* class of a dynamic lock no marker named */

/* Class flags, from the config's ROLE column. */
#define CLASS_ROLE		1	/* an icache role: counted in ROLE_HELD_INSTRUCTIONS */
#define CLASS_HASH		2	/* the hash role: chain entries are counted */

/* ---- configuration (config file keywords, plugin.c) ---- */

struct config {
	int lines;			/* "lines 1": track memory accesses */
	uint32_t cold_lines;		/* "cold N": lines of the simulated cache (cold: a miss) */
	uint64_t retry_horizon;		/* "retry_horizon N": a retry episode longer is abandoned */
	uint64_t trace_sites[MAX_TRACE_SITES];	/* "trace SITE COUNT STRIDE": sections written */
	uint64_t trace_count[MAX_TRACE_SITES];	/* line by line, COUNT per window, */
	uint64_t trace_stride[MAX_TRACE_SITES];	/* every STRIDE-th */
	int n_trace_sites;
};
extern struct config cfg;

/* ---- a section's lines (lines.c) ---- */

/* Flags of a line in a section's set. */
#define LS_READ			0x01
#define LS_WRITE		0x02
#define LS_COLD			0x04	/* missed the simulated cache of cfg.cold_lines lines */
#define LS_PREV			0x08	/* last written inside an earlier section of this lock */
#define LS_LOCKLINE		0x10	/* the lock word's line (not the lock word itself) */

struct ls_entry {
	uint64_t key;		/* physical line number */
	uint64_t stamp;		/* the section's id: entries of other sections are free */
	uint64_t vaddr;		/* first access: data address and instruction */
	uint64_t insn;
	uint64_t gap;		/* instructions since the line was last touched (first access) */
	uint64_t time;		/* the vCPU's instructions at the first access */
	uint32_t flags;
};

struct lineset {
	struct ls_entry *e;
	uint32_t *order;	/* slots in use, in insertion order */
	size_t cap, used;
};

struct section_lines {
	uint32_t read, written, prev, cold, chain;
	int lockline_written;
};

/* ---- held locks, pending acquisitions, retries (locks.c) ---- */

struct held {
	uint64_t addr, start, site, id;
	uint64_t irq_start;	/* the vCPU's interrupt instructions when acquired */
	uint64_t lock_line;	/* physical line of the lock word, ~0 unknown */
	uint32_t cls;
	int bit, size;		/* a bit lock; bytes of the lock word */
	struct lineset set;	/* owned by the slot, reused */
	int chain_table_seen, chain_done;	/* hash sections: the walk (lines.c) */
	uint64_t chain_insn;
	uint32_t chain_loads;
};

/* A call into a lock function between its entry and its outcome. */
struct pending {
	uint64_t lock, site, start;	/* start: instructions at the acquiring atomic */
	uint64_t lock_line;
	int holder;			/* slow: the vCPU holding the lock then, -1 unknown */
	uint64_t holder_from;		/* and its clock then (section_clock) */
	int holder_in_irq;		/* the holder took it inside an interrupt counted apart */
	uint64_t wait;			/* the holder's own instructions from then to its release */
	int released;
	int trylock, slow, nest;	/* slow: in the queued slow path */
};

/* Failed trylocks of one (site, lock) until a trylock there succeeds. */
struct episode {
	uint64_t site, lock, start;	/* start: the vCPU's instructions at the first failure */
	uint64_t failures;
	uint32_t cls;
	int moved_on;		/* a trylock of another lock succeeded at the site meanwhile */
};

struct vcpu {
	uint64_t done;		/* own instructions before the current turn (several vCPUs) */
	struct held held[MAX_HELD];
	int n_held;
	int n_role_held;
	uint64_t role_since, role_closed;
	uint64_t pending_site;	/* the last call into a lock function */
	struct pending pend[MAX_PENDING];
	int n_pend;
	int irq_depth;		/* of an interrupt counted apart, 0: none */
	int irq_base;		/* held locks below this index belong to the interrupted code */
	uint64_t irq_begin, irq_insns;
	int nest;		/* entry points minus iretq: tags pending slow paths */
	uint64_t stack_block;	/* THREAD_SIZE block of the last stack access */
	struct episode ep[MAX_EPISODES];
	int n_ep;
};

extern uint64_t insns;		/* all vCPUs, markers excluded (inline counter) */
extern struct vcpu vcpus[MAX_VCPUS];
extern int n_vcpus;

uint64_t vcpu_insns(const struct vcpu *v);

/* ---- notes: the plugin's own checks ---- */

enum note {
	NOTE_ACQUIRE_ON_HELD,	/* a spin_lock of a lock we think held: a missed release */
	NOTE_TRYLOCK_FAILED,
	NOTE_BIT_ON_HELD,
	NOTE_HELD_OVERFLOW,
	NOTE_HELD_AT_END,
	NOTE_CLASS_MARKERS,
	NOTE_UNNAMED_MARKERS,
	NOTE_NOT_OPENED,
	NOTE_REOPENED,
	NOTE_PENDING_OVERFLOW,	/* lock functions nested deeper than MAX_PENDING */
	NOTE_EXIT_WITHOUT_ENTRY,	/* a lock function's outcome with nothing pending */
	NOTE_SLOW_MISMATCH,	/* a slow-path return with no slow acquisition pending */
	NOTE_NO_HWADDR,		/* an access whose physical address QEMU did not give */
	NOTE_BEYOND_MEMORY,	/* a physical address beyond what the line table covers */
	NOTE_WRITER_FORGOTTEN,	/* a line's last writer section left the ring */
	NOTE_EPISODE_OVERFLOW,
	NOTE_SLOW_ACQUIRED,	/* spin_locks that went to the queued slow path: contended */
	NOTE_WAIT_UNSEEN,	/* of those, the holder or its release not seen */
	N_NOTES
};
void note(enum note n);

/* ---- locks.c ---- */

uint32_t new_class(const char *name, int flags);
int class_flags(uint32_t cls);
const char *class_name(uint32_t cls);
uint32_t n_classes_made(void);
void add_name(uint64_t addr, uint32_t cls);
void sort_names(void);
uint32_t class_of_name(uint64_t addr);
void reg_set(uint64_t key, uint32_t cls);
size_t reg_count(void);
void locks_init(void);

void lock_fn_entry(struct vcpu *v, int trylock);
void lock_fn_arg(struct vcpu *v, uint64_t addr, uint64_t line, int atomic);
void lock_fn_exit(struct vcpu *v, int acquired);
void slowpath_return(struct vcpu *v);
void bit_acquire(struct vcpu *v, uint64_t addr, uint64_t line, uint64_t site);
void byte_zero_store(struct vcpu *v, uint64_t addr);
void bit_release(struct vcpu *v, uint64_t addr);
void irq_entry(struct vcpu *v, int async);
void irq_return(struct vcpu *v);
uint64_t role_held_insns(void);
uint64_t irq_insns_all(void);
int held_at_end(void);

/* ranges: tables the kernel declared (alloc_large_system_hash) */
void range_marker(int kind, uint64_t addr);
int range_of(uint64_t addr, uint32_t *cls);
int n_ranges_made(void);

/* ---- lines.c ---- */

int lines_init(void);
#define ACCESS_STACK		1	/* lines_access flags: to the stack */
#define ACCESS_RMW		4	/* a read-modify-write instruction's */
uint64_t lines_access(struct vcpu *v, qemu_plugin_meminfo_t info, uint64_t vaddr,
		      int flags, uint64_t insn);
void lines_begin(struct held *h, const struct vcpu *v);
void lines_end(struct held *h, struct section_lines *out);
void lines_trace(FILE *f, const struct held *h);
extern uint64_t accesses, cold_accesses;	/* in windows: all, and missing the cache */

/* ---- output.c ---- */

/*
 * Histograms of instruction counts (a section's own length, a spin_lock's
 * wait): values below HIST_SUB have a bucket each, above that every power
 * of 2 is cut into HIST_SUB equal buckets, so a bucket is at most 1/HIST_SUB
 * of its lower bound wide (12.5%): enough to place a p99 that far.
 */
#define HIST_SUB_BITS		3
#define HIST_SUB		(1 << HIST_SUB_BITS)
#define HIST_BUCKETS		(HIST_SUB * (64 - HIST_SUB_BITS + 1))
unsigned int hist_bucket(uint64_t value);
uint64_t hist_low(unsigned int bucket);

void record_section(const struct held *h, uint64_t len, uint64_t irq,
		    const struct section_lines *l);
void record_wait(uint32_t cls, uint64_t site, uint64_t len);
void record_trylock_failure(uint32_t cls, uint64_t site);
void record_episode(const struct episode *e, uint64_t insns_spent, int abandoned);
int window_is_open(void);
void byte_marker(int kind, uint64_t addr);
void output_open(FILE *f);
void output_exit(void);

#endif
