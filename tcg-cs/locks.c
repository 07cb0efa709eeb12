// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * tcg-cs: lock classes, held locks, acquisitions and releases, trylock retries.
 *
 * A call into an out-of-line lock function is followed from its entry to its
 * outcome: the entry pushes a pending acquisition, the first access through
 * the function's lock argument (%rdi) names the lock, its cmpxchg starts the
 * section, and one of the function's exits (from the disassembly, given by
 * the harness) says how it ended: acquired, a trylock that failed, or a
 * spin_lock gone to the queued slow path, whose return then acquires. The
 * pending acquisitions form a stack per vCPU, so an interrupt that takes
 * locks between an entry and its exit leaves ours alone.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tcgcs.h"

#define MAX_RANGES		64

static void *xrealloc(void *p, size_t size)
{
	p = realloc(p, size);
	if (!p) {
		fprintf(stderr, "tcg-cs: out of memory\n");
		exit(1);
	}
	return p;
}

/* ---- classes and names ---- */

/*
 * Class 0 is "?", a dynamic lock whose initialisation no marker named; a
 * static lock no marker named is "@ADDR" (see System.map), a marker whose
 * name the harness did not resolve "?ADDR" (the string is at ADDR).
 */
static char **class_names;
static uint8_t *class_flag;
static uint32_t n_classes, cap_classes;

struct name_entry {
	uint64_t addr;
	uint32_t cls;
};
static struct name_entry *names;	/* sorted by address once configured */
static size_t n_names, cap_names;

uint32_t new_class(const char *name, int flags)
{
	if (n_classes == cap_classes) {
		cap_classes = cap_classes ? 2 * cap_classes : 256;
		class_names = xrealloc(class_names, cap_classes * sizeof(*class_names));
		class_flag = xrealloc(class_flag, cap_classes * sizeof(*class_flag));
	}
	class_names[n_classes] = strdup(name);
	class_flag[n_classes] = (uint8_t)flags;
	return n_classes++;
}

int class_flags(uint32_t cls)
{
	return class_flag[cls];
}

const char *class_name(uint32_t cls)
{
	return class_names[cls];
}

uint32_t n_classes_made(void)
{
	return n_classes;
}

void add_name(uint64_t addr, uint32_t cls)
{
	if (n_names == cap_names) {
		cap_names = cap_names ? 2 * cap_names : 1024;
		names = xrealloc(names, cap_names * sizeof(*names));
	}
	names[n_names].addr = addr;
	names[n_names].cls = cls;
	n_names++;
}

static int name_cmp(const void *a, const void *b)
{
	const struct name_entry *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

void sort_names(void)
{
	qsort(names, n_names, sizeof(*names), name_cmp);
}

/* The class named by the string at @addr (a new "?ADDR" class if unknown). */
uint32_t class_of_name(uint64_t addr)
{
	struct name_entry key = { addr, 0 }, *hit;
	char buf[32];

	hit = bsearch(&key, names, n_names, sizeof(*names), name_cmp);
	if (hit)
		return hit->cls;
	note(NOTE_UNNAMED_MARKERS);
	/* Remember it, so each unknown address is one class. */
	snprintf(buf, sizeof(buf), "?%" PRIx64, addr);
	add_name(addr, new_class(buf, 0));
	sort_names();
	return class_of_name(addr);
}

/* ---- the registry: lock address -> class ---- */

/* Open addressing; entries are overwritten, never removed. */
static uint64_t *reg_keys;
static uint32_t *reg_vals;
static size_t reg_cap, reg_used;

static size_t reg_slot(uint64_t key)
{
	size_t i = (key * 0x9e3779b97f4a7c15ull) >> 20;

	for (i &= reg_cap - 1; reg_keys[i] && reg_keys[i] != key; i = (i + 1) & (reg_cap - 1))
		;
	return i;
}

static void reg_grow(void)
{
	uint64_t *keys = reg_keys;
	uint32_t *vals = reg_vals;
	size_t cap = reg_cap, i, j;

	reg_cap = cap ? cap * 2 : 1 << 20;
	reg_keys = calloc(reg_cap, sizeof(*reg_keys));
	reg_vals = calloc(reg_cap, sizeof(*reg_vals));
	if (!reg_keys || !reg_vals) {
		fprintf(stderr, "tcg-cs: out of memory\n");
		exit(1);
	}
	for (j = 0; j < cap; j++) {
		if (keys[j]) {
			i = reg_slot(keys[j]);
			reg_keys[i] = keys[j];
			reg_vals[i] = vals[j];
		}
	}
	free(keys);
	free(vals);
}

void reg_set(uint64_t key, uint32_t cls)
{
	size_t i;

	if ((reg_used + 1) * 10 > reg_cap * 7)
		reg_grow();
	i = reg_slot(key);
	if (!reg_keys[i]) {
		reg_keys[i] = key;
		reg_used++;
	}
	reg_vals[i] = cls;
}

size_t reg_count(void)
{
	return reg_used;
}

static uint32_t class_of_lock(uint64_t addr)
{
	size_t i = reg_slot(addr);
	uint32_t cls = reg_keys[i] ? reg_vals[i] : UNREGISTERED;
	char buf[32];

	if (cls != UNREGISTERED || addr < IMAGE_START)
		return cls;
	/* A statically initialised lock (DEFINE_SPINLOCK): one class per address. */
	snprintf(buf, sizeof(buf), "@%" PRIx64, addr);
	cls = new_class(buf, 0);
	reg_set(addr, cls);
	return cls;
}

void locks_init(void)
{
	new_class("?", 0);	/* UNREGISTERED */
	reg_set(KERNEL_START, UNREGISTERED);	/* allocates the registry */
}

/* ---- tables the kernel declared: their bit locks ---- */

struct range {
	uint64_t start, end;	/* inclusive */
	uint32_t cls;
};
static struct range ranges[MAX_RANGES];
static int n_ranges;
static uint64_t range_name, range_start;	/* a range being declared */

/* Markers 0xc1-0xc3 (the kernel patch's alloc_large_system_hash). */
void range_marker(int kind, uint64_t addr)
{
	if (kind == 0xc1) {
		range_name = addr;
	} else if (kind == 0xc2) {
		range_start = addr;
	} else {
		if (n_ranges < MAX_RANGES && range_name && addr >= range_start) {
			ranges[n_ranges].start = range_start;
			ranges[n_ranges].end = addr;
			ranges[n_ranges].cls = class_of_name(range_name);
			n_ranges++;
		}
		range_name = range_start = 0;
	}
}

int range_of(uint64_t addr, uint32_t *cls)
{
	int i;

	for (i = 0; i < n_ranges; i++) {
		if (addr >= ranges[i].start && addr <= ranges[i].end) {
			if (cls)
				*cls = ranges[i].cls;
			return 1;
		}
	}
	return 0;
}

int n_ranges_made(void)
{
	return n_ranges;
}

/* ---- held locks ---- */

static uint64_t section_ids;	/* the last section's id: ids start at 1 */

static int find_held(const struct vcpu *v, uint64_t addr, int bit)
{
	int i;

	for (i = v->n_held - 1; i >= 0; i--)
		if (v->held[i].addr == addr && v->held[i].bit == bit)
			return i;
	return -1;
}

/* Instructions run so far, all vCPUs, with at least one lock of a role held. */
uint64_t role_held_insns(void)
{
	uint64_t sum = 0;
	int i;

	for (i = 0; i < n_vcpus; i++) {
		const struct vcpu *v = &vcpus[i];

		sum += v->role_closed + (v->n_role_held ? vcpu_insns(v) - v->role_since + 1 : 0);
	}
	return sum;
}

uint64_t irq_insns_all(void)
{
	uint64_t sum = 0;
	int i;

	for (i = 0; i < n_vcpus; i++)
		sum += vcpus[i].irq_insns;
	return sum;
}

int held_at_end(void)
{
	int i, n = 0;

	for (i = 0; i < n_vcpus; i++)
		n += vcpus[i].n_held;
	return n;
}

/* Remove held[i], keeping each slot's line set with a slot. */
static void forget_held(struct vcpu *v, int i)
{
	struct lineset set = v->held[i].set;

	if ((class_flags(v->held[i].cls) & CLASS_ROLE) && !--v->n_role_held)
		v->role_closed += vcpu_insns(v) - v->role_since + 1;
	memmove(v->held + i, v->held + i + 1, (v->n_held - i - 1) * sizeof(*v->held));
	v->n_held--;
	v->held[v->n_held].set = set;
	if (i < v->irq_base)
		v->irq_base--;
}

static void push_held(struct vcpu *v, uint64_t addr, uint32_t cls, uint64_t site, int bit,
		      uint64_t start, uint64_t lock_line)
{
	struct held *h;

	if (v->n_held == MAX_HELD) {
		/* Cannot happen with correct release detection: drop the oldest. */
		note(NOTE_HELD_OVERFLOW);
		forget_held(v, 0);
	}
	if ((class_flags(cls) & CLASS_ROLE) && !v->n_role_held++)
		v->role_since = start;
	h = &v->held[v->n_held];
	h->addr = addr;
	h->start = start;
	h->site = site;
	h->cls = cls;
	h->bit = bit;
	h->size = bit ? 8 : 4;
	h->irq_start = v->irq_insns;
	h->lock_line = lock_line;
	h->id = ++section_ids;
	if (cfg.lines)
		lines_begin(h, v);
	v->n_held++;
}

/*
 * The clock a held lock's section runs on: for a lock the interrupted code
 * holds, the vCPU's instructions less those of interrupts counted apart,
 * an interrupt in progress included (its instructions join irq_insns only
 * at its return, so reading vcpu_insns then would count them and later
 * subtract them); for a lock taken inside that interrupt, its instructions.
 */
static uint64_t section_clock(const struct vcpu *v, int in_irq)
{
	if (in_irq)
		return vcpu_insns(v);
	return (v->irq_depth ? v->irq_begin : vcpu_insns(v)) - v->irq_insns;
}

/*
 * A spinlock's release by the vCPU holding it: the wait of each spin_lock
 * in the slow path that found this vCPU holding it ends here.
 */
static void release_to_waiters(const struct vcpu *holder, uint64_t addr)
{
	int i, k, index = (int)(holder - vcpus);

	for (i = 0; i < n_vcpus; i++) {
		for (k = 0; k < vcpus[i].n_pend; k++) {
			struct pending *p = &vcpus[i].pend[k];

			if (p->slow && p->lock == addr && p->holder == index && !p->released) {
				uint64_t now = section_clock(holder, p->holder_in_irq);

				/* Never a wait that runs backwards: left unseen instead. */
				if (now >= p->holder_from) {
					p->wait = now - p->holder_from;
					p->released = 1;
				}
			}
		}
	}
}

static void release(struct vcpu *v, int i)
{
	struct held *h = &v->held[i];
	uint64_t irq = v->irq_insns - h->irq_start;
	uint64_t len = vcpu_insns(v) - h->start + 1 - irq;
	struct section_lines lines = { 0 };

	if (n_vcpus > 1 && !h->bit)
		release_to_waiters(v, h->addr);

	if (cfg.lines)
		lines_end(h, &lines);
	if (window_is_open())
		record_section(h, len, irq, &lines);
	forget_held(v, i);
}

/* ---- trylock retries ---- */

static void close_episode(struct vcpu *v, int k, int abandoned)
{
	struct episode *e = &v->ep[k];

	record_episode(e, vcpu_insns(v) - e->start, abandoned);
	v->ep[k] = v->ep[--v->n_ep];
}

/* Episodes older than the horizon never met their success: abandoned. */
static void expire_episodes(struct vcpu *v)
{
	int k;

	for (k = v->n_ep - 1; k >= 0; k--)
		if (vcpu_insns(v) - v->ep[k].start > cfg.retry_horizon)
			close_episode(v, k, 1);
}

static int find_episode(const struct vcpu *v, uint64_t site, uint64_t lock)
{
	int k;

	for (k = 0; k < v->n_ep; k++)
		if (v->ep[k].site == site && v->ep[k].lock == lock)
			return k;
	return -1;
}

static void trylock_failed(struct vcpu *v, const struct pending *p)
{
	uint32_t cls = class_of_lock(p->lock);
	int k;

	note(NOTE_TRYLOCK_FAILED);
	record_trylock_failure(cls, p->site);
	expire_episodes(v);
	k = find_episode(v, p->site, p->lock);
	if (k >= 0) {
		v->ep[k].failures++;
		return;
	}
	if (v->n_ep == MAX_EPISODES) {
		note(NOTE_EPISODE_OVERFLOW);
		close_episode(v, 0, 1);
	}
	v->ep[v->n_ep].site = p->site;
	v->ep[v->n_ep].lock = p->lock;
	v->ep[v->n_ep].start = vcpu_insns(v);
	v->ep[v->n_ep].failures = 1;
	v->ep[v->n_ep].cls = cls;
	v->ep[v->n_ep].moved_on = 0;
	v->n_ep++;
}

/*
 * The success that closes an episode; other episodes of the site see the
 * walk move on to another lock (a walker that skips, as the LRU's does,
 * meets the lock again later, if ever).
 */
static void trylock_succeeded(struct vcpu *v, const struct pending *p)
{
	int k;

	expire_episodes(v);
	for (k = 0; k < v->n_ep; k++)
		if (v->ep[k].site == p->site && v->ep[k].lock != p->lock)
			v->ep[k].moved_on = 1;
	k = find_episode(v, p->site, p->lock);
	if (k >= 0)
		close_episode(v, k, 0);
}

/* ---- lock functions: entry, lock argument, exits, slow path ---- */

void lock_fn_entry(struct vcpu *v, int trylock)
{
	struct pending *p;

	if (v->n_pend == MAX_PENDING) {
		note(NOTE_PENDING_OVERFLOW);
		memmove(v->pend, v->pend + 1, (MAX_PENDING - 1) * sizeof(*v->pend));
		v->n_pend--;
	}
	p = &v->pend[v->n_pend++];
	memset(p, 0, sizeof(*p));
	p->site = v->pending_site;
	p->trylock = trylock;
	p->nest = v->nest;
	p->lock_line = ~0ull;
	v->pending_site = 0;
}

/* An access through the lock function's %rdi: the lock; its cmpxchg starts the section. */
void lock_fn_arg(struct vcpu *v, uint64_t addr, uint64_t line, int cmpxchg)
{
	struct pending *p;

	if (!v->n_pend)
		return;
	p = &v->pend[v->n_pend - 1];
	if (!p->lock) {
		p->lock = addr;
		p->lock_line = line;
	}
	if (cmpxchg && addr == p->lock)
		p->start = vcpu_insns(v);
}

static void acquire(struct vcpu *v, const struct pending *p, uint64_t start)
{
	int i = find_held(v, p->lock, 0);

	if (i >= 0) {
		note(NOTE_ACQUIRE_ON_HELD);
		forget_held(v, i);
	}
	push_held(v, p->lock, class_of_lock(p->lock), p->site, 0, start, p->lock_line);
}

/* A spin_lock gone to the slow path: it stays pending until the slow path returns. */
static void go_slow(struct pending *p)
{
	int i;

	p->slow = 1;
	p->holder = -1;
	for (i = 0; i < n_vcpus; i++) {
		int j = find_held(&vcpus[i], p->lock, 0);

		if (j >= 0) {
			p->holder = i;
			p->holder_in_irq = vcpus[i].irq_depth && j >= vcpus[i].irq_base;
			p->holder_from = section_clock(&vcpus[i], p->holder_in_irq);
		}
	}
}

void lock_fn_exit(struct vcpu *v, int acquired)
{
	struct pending p;

	if (!v->n_pend || !v->pend[v->n_pend - 1].lock) {
		note(NOTE_EXIT_WITHOUT_ENTRY);
		if (v->n_pend)
			v->n_pend--;
		return;
	}
	if (!acquired && !v->pend[v->n_pend - 1].trylock) {
		go_slow(&v->pend[v->n_pend - 1]);
		return;
	}
	p = v->pend[--v->n_pend];
	if (!acquired) {
		trylock_failed(v, &p);
		return;
	}
	acquire(v, &p, p.start ? p.start : vcpu_insns(v));
	if (p.trylock)
		trylock_succeeded(v, &p);
}

/* A return of the queued slow path: the spin_lock that went there now holds its lock. */
void slowpath_return(struct vcpu *v)
{
	struct pending p;

	if (!v->n_pend || !v->pend[v->n_pend - 1].slow || v->pend[v->n_pend - 1].nest != v->nest) {
		note(NOTE_SLOW_MISMATCH);	/* e.g. a rwlock's wait_lock: not ours */
		return;
	}
	p = v->pend[--v->n_pend];
	note(NOTE_SLOW_ACQUIRED);
	/*
	 * The wait: the rest of the holder's section, in the holder's own
	 * instructions from the waiter's failed cmpxchg to its release. Not the
	 * instructions until this return: round robin runs the waiter's spinning
	 * and the holder's code after its release for as long as QEMU's turns
	 * last, which says how QEMU schedules, not how long the lock was held.
	 */
	if (p.released)
		record_wait(class_of_lock(p.lock), p.site, p.wait);
	else
		note(NOTE_WAIT_UNSEEN);
	acquire(v, &p, vcpu_insns(v));
}

/* ---- bit locks, releases ---- */

/* `bts $0` on a word of a declared table: acquired unless a vCPU holds it. */
void bit_acquire(struct vcpu *v, uint64_t addr, uint64_t line, uint64_t site)
{
	uint32_t cls;
	int i;

	if (!range_of(addr, &cls))
		return;		/* a bit op on something that is no declared table */
	if (find_held(v, addr, 1) >= 0) {
		note(NOTE_BIT_ON_HELD);
		return;
	}
	for (i = 0; i < n_vcpus; i++)
		if (find_held(&vcpus[i], addr, 1) >= 0)
			return;	/* another vCPU holds it: this bts failed, the caller spins */
	push_held(v, addr, cls, site, 1, vcpu_insns(v), line);
}

void byte_zero_store(struct vcpu *v, uint64_t addr)
{
	int i;

	if (!v->n_held)
		return;
	i = find_held(v, addr, 0);
	if (i >= 0)
		release(v, i);
}

void bit_release(struct vcpu *v, uint64_t addr)
{
	int i;

	if (!v->n_held)
		return;
	i = find_held(v, addr, 1);
	if (i >= 0)
		release(v, i);
}

/* ---- interrupts ---- */

/*
 * An interrupt is counted apart from the moment it arrives while a lock is
 * held (so it came from kernel code and returns there without scheduling)
 * to its iretq; exceptions and interrupts nested in it only deepen it.
 */
void irq_entry(struct vcpu *v, int async)
{
	v->nest++;
	if (v->irq_depth) {
		v->irq_depth++;
	} else if (async && v->n_held) {
		v->irq_depth = 1;
		v->irq_begin = vcpu_insns(v);
		v->irq_base = v->n_held;
	}
}

void irq_return(struct vcpu *v)
{
	if (v->nest)
		v->nest--;
	if (v->irq_depth && !--v->irq_depth) {
		v->irq_insns += vcpu_insns(v) - v->irq_begin;
		v->irq_base = 0;
	}
}
