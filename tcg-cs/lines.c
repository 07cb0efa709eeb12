// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * tcg-cs: the cache lines each critical section touches.
 *
 * Every guest memory access (user and kernel) comes here with its virtual
 * address; QEMU gives its physical address, and a line is 64 bytes of
 * physical memory. Per line the plugin keeps when an instruction last
 * touched it and which section last wrote it; per held lock, the set of
 * lines its section touched so far. A section's counts leave out:
 *  - the lock word itself (its acquisition and release: the hand-off);
 *  - the rest of the lock word's line, which only sets LS_LOCKLINE (the
 *    section writes it: "s", a list head sharing the lock's line);
 *  - the stack: push, pop, call, ret, iretq, rsp-based operands, and any
 *    access in the THREAD_SIZE block of the vCPU's last such access (no
 *    other CPU ever wants a task's stack);
 *  - accesses of an interrupt counted apart (they belong to no section of
 *    the interrupted code).
 * Nested sections each count what happened while they were held.
 *
 * Cold: a line that is not in a simulated cache of cfg.cold_lines lines
 * (fully associative, least recently used out) that every access goes
 * through, all vCPUs, user and kernel: a line no instruction touched while
 * that many other distinct lines were, which an LLC of that size (the share
 * of one core of a shared LLC, as each core runs the same work) would have
 * evicted. Counted at the section's first access to the line.
 *
 * W ("from previous") is a line whose last write happened inside an earlier
 * section of the same lock instance: its writer's section, or a section
 * that writer was nested in. Sections are kept in a ring (RING_BITS) by id;
 * a writer that left the ring is counted as a note, not as W.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tcgcs.h"

#define LINE_SHIFT		6
#define CHUNK_SHIFT		21	/* 2 MiB of physical memory per chunk */
#define LINES_PER_CHUNK		(1ull << (CHUNK_SHIFT - LINE_SHIFT))
#define MAX_CHUNKS		(1ull << 19)	/* 1 TiB */
#define RING_BITS		21

struct line_meta {
	uint64_t touched;	/* insns at the last access, 0: never */
	uint64_t writer;	/* innermost section of the last write, 0: none */
	uint32_t slot;		/* in the simulated cache: its slot + 1, 0: not cached */
};

/* The simulated cache: slots in a list, most recently used first. */
struct slot {
	uint64_t line;
	uint32_t prev, next;	/* slot indices; NIL at the ends */
};
#define NIL			UINT32_MAX

struct section_record {
	uint64_t id, lock, outer;	/* lock: address, | 1 for a bit lock */
};

static struct line_meta **chunks;
static struct section_record *ring;
static struct slot *slots;
static uint32_t slots_used, mru = NIL, lru = NIL;
uint64_t accesses, cold_accesses;

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p) {
		fprintf(stderr, "tcg-cs: out of memory\n");
		exit(1);
	}
	return p;
}

int lines_init(void)
{
	chunks = xcalloc(MAX_CHUNKS, sizeof(*chunks));
	ring = xcalloc(1ull << RING_BITS, sizeof(*ring));
	slots = xcalloc(cfg.cold_lines, sizeof(*slots));
	return 0;
}

static struct line_meta *meta_of(uint64_t line)
{
	uint64_t c = line / LINES_PER_CHUNK;

	if (c >= MAX_CHUNKS)
		return NULL;
	if (!chunks[c])
		chunks[c] = xcalloc(LINES_PER_CHUNK, sizeof(struct line_meta));
	return &chunks[c][line % LINES_PER_CHUNK];
}

/* ---- the simulated cache ---- */

static void slot_unlink(uint32_t i)
{
	struct slot *x = &slots[i];

	if (x->prev == NIL)
		mru = x->next;
	else
		slots[x->prev].next = x->next;
	if (x->next == NIL)
		lru = x->prev;
	else
		slots[x->next].prev = x->prev;
}

static void slot_push(uint32_t i)
{
	slots[i].prev = NIL;
	slots[i].next = mru;
	if (mru != NIL)
		slots[mru].prev = i;
	mru = i;
	if (lru == NIL)
		lru = i;
}

/* Bring the line to the front; whether it was missing (cold). */
static int cache_touch(struct line_meta *m, uint64_t line)
{
	uint32_t i;

	if (m->slot) {
		i = m->slot - 1;
		if (i != mru) {
			slot_unlink(i);
			slot_push(i);
		}
		return 0;
	}
	if (slots_used < cfg.cold_lines) {
		i = slots_used++;
	} else {
		i = lru;
		slot_unlink(i);
		meta_of(slots[i].line)->slot = 0;
	}
	slots[i].line = line;
	slot_push(i);
	m->slot = i + 1;
	return 1;
}

static uint64_t lock_key(const struct held *h)
{
	return h->addr | (uint64_t)h->bit;
}

/* ---- a section's set of lines (open addressing, entries stamped by section id) ---- */

static size_t ls_hash(uint64_t key, size_t cap)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static size_t ls_find(const struct lineset *s, uint64_t key, uint64_t stamp)
{
	size_t i = ls_hash(key, s->cap);

	while (s->e[i].stamp == stamp && s->e[i].key != key)
		i = (i + 1) & (s->cap - 1);
	return i;
}

static void ls_grow(struct lineset *s, uint64_t stamp)
{
	struct ls_entry *old = s->e;
	uint32_t *order = s->order;
	size_t k, cap = s->cap ? 2 * s->cap : 16;

	s->e = xcalloc(cap, sizeof(*s->e));
	s->order = xcalloc(cap, sizeof(*s->order));
	s->cap = cap;
	for (k = 0; k < s->used; k++) {
		size_t i = ls_find(s, old[order[k]].key, stamp);

		s->e[i] = old[order[k]];
		s->order[k] = (uint32_t)i;
	}
	free(old);
	free(order);
}

static struct ls_entry *ls_get(struct lineset *s, uint64_t key, uint64_t stamp, int *fresh)
{
	size_t i;

	if ((s->used + 1) * 2 > s->cap)
		ls_grow(s, stamp);
	i = ls_find(s, key, stamp);
	*fresh = s->e[i].stamp != stamp;
	if (*fresh) {
		memset(&s->e[i], 0, sizeof(s->e[i]));
		s->e[i].key = key;
		s->e[i].stamp = stamp;
		s->order[s->used++] = (uint32_t)i;
	}
	return &s->e[i];
}

/* ---- sections ---- */

void lines_begin(struct held *h, const struct vcpu *v)
{
	struct section_record *r = &ring[h->id & ((1ull << RING_BITS) - 1)];

	r->id = h->id;
	r->lock = lock_key(h);
	r->outer = v->n_held > v->irq_base ? v->held[v->n_held - 1].id : 0;
	h->set.used = 0;
	h->chain_table_seen = 0;
	h->chain_done = 0;
	h->chain_insn = 0;
	h->chain_loads = 0;
}

/* Was a line whose last write was in section @writer written inside an earlier section of h? */
static int written_before(uint64_t writer, const struct held *h)
{
	uint64_t key = lock_key(h);
	int depth;

	for (depth = 0; writer && depth < MAX_HELD; depth++) {
		const struct section_record *r = &ring[writer & ((1ull << RING_BITS) - 1)];

		if (r->id != writer) {
			note(NOTE_WRITER_FORGOTTEN);
			return 0;
		}
		if (r->lock == key)
			return writer != h->id;
		writer = r->outer;
	}
	return 0;
}

struct access {
	uint64_t line, vaddr, insn, gap, writer;
	unsigned int size;
	int store, rmw, cold;
};

/*
 * Chain entries of a hash section: a walk (hlist_for_each_entry) loads the
 * bucket head from the table, then a field of each entry it visits, and
 * stores nothing until it is done. The first load of kernel data outside
 * the declared tables (and outside the image and the stack) after the
 * section's first table load is the walk's per-entry load; the times that
 * instruction loads while the hash lock is the innermost one held, until
 * the section's first plain store there, are the entries visited. Loads
 * before the table load, or after that store (the section's own inode
 * being inserted), are not a walk; a trylock of an entry's i_lock (a
 * read-modify-write) does not end it.
 */
static void chain_access(struct held *h, const struct access *a)
{
	if (h->chain_done || a->vaddr < KERNEL_START || a->vaddr >= IMAGE_START)
		return;
	if (a->store) {
		h->chain_done = !a->rmw;
		return;
	}
	if (a->rmw)
		return;
	if (range_of(a->vaddr, NULL))
		h->chain_table_seen = 1;
	else if (h->chain_table_seen && !h->chain_insn)
		h->chain_insn = a->insn;
	if (h->chain_insn == a->insn)
		h->chain_loads++;
}


static void section_touch(struct vcpu *v, int i, const struct access *a)
{
	struct held *h = &v->held[i];
	struct ls_entry *e;
	int fresh;

	if (i == v->n_held - 1 && (class_flags(h->cls) & CLASS_HASH))
		chain_access(h, a);
	if (a->vaddr < h->addr + (uint64_t)h->size && a->vaddr + a->size > h->addr)
		return;		/* the lock word itself */
	e = ls_get(&h->set, a->line, h->id, &fresh);
	if (fresh) {
		e->vaddr = a->vaddr;
		e->insn = a->insn;
		e->gap = a->gap;
		e->time = vcpu_insns(v);
		if (a->line == h->lock_line)
			e->flags = LS_LOCKLINE;
		else if (a->cold)
			e->flags = LS_COLD;
		if (a->line != h->lock_line && written_before(a->writer, h))
			e->flags |= LS_PREV;
	}
	e->flags |= a->store ? LS_WRITE : LS_READ;
}

static void touch(struct vcpu *v, struct access *a, int stack)
{
	struct line_meta *m = meta_of(a->line);
	int own;
	int i;

	if (!m) {
		note(NOTE_BEYOND_MEMORY);
		return;
	}
	a->gap = m->touched ? insns - m->touched : UINT64_MAX;
	a->writer = m->writer;
	a->cold = cache_touch(m, a->line);
	if (window_is_open()) {
		accesses++;
		cold_accesses += (uint64_t)a->cold;
	}
	m->touched = insns;
	own = !stack && v->n_held > v->irq_base;
	for (i = v->irq_base; own && i < v->n_held; i++)
		section_touch(v, i, a);
	if (a->store)
		m->writer = own ? v->held[v->n_held - 1].id : 0;
}

/* Account one access; returns its physical line (~0: none, e.g. MMIO). */
uint64_t lines_access(struct vcpu *v, qemu_plugin_meminfo_t info, uint64_t vaddr, int flags,
		      uint64_t insn)
{
	struct qemu_plugin_hwaddr *hw = qemu_plugin_get_hwaddr(info, vaddr);
	int stack = flags & ACCESS_STACK;
	struct access a;
	uint64_t phys;

	if (!hw) {
		note(NOTE_NO_HWADDR);
		return ~0ull;
	}
	if (qemu_plugin_hwaddr_is_io(hw))
		return ~0ull;
	phys = qemu_plugin_hwaddr_phys_addr(hw);
	if (vaddr >= KERNEL_START) {
		if (stack)
			v->stack_block = vaddr & ~(THREAD_SIZE - 1);
		else
			stack = (vaddr & ~(THREAD_SIZE - 1)) == v->stack_block;
	}
	a.line = phys >> LINE_SHIFT;
	a.vaddr = vaddr;
	a.insn = insn;
	a.size = 1u << qemu_plugin_mem_size_shift(info);
	a.store = qemu_plugin_mem_is_store(info);
	a.rmw = flags & ACCESS_RMW;
	touch(v, &a, stack);
	if ((phys & ((1u << LINE_SHIFT) - 1)) + a.size > (1u << LINE_SHIFT)) {
		a.line++;
		touch(v, &a, stack);
	}
	return phys >> LINE_SHIFT;
}

void lines_end(struct held *h, struct section_lines *out)
{
	size_t k;

	out->chain = h->chain_loads;
	for (k = 0; k < h->set.used; k++) {
		const struct ls_entry *e = &h->set.e[h->set.order[k]];

		if (e->flags & LS_LOCKLINE) {
			out->lockline_written |= !!(e->flags & LS_WRITE);
		} else {
			out->written += !!(e->flags & LS_WRITE);
			out->read += (e->flags & (LS_READ | LS_WRITE)) == LS_READ;
			out->prev += !!(e->flags & LS_PREV);
			out->cold += !!(e->flags & LS_COLD);
		}
	}
}

/* The section's lines, one "tline" (or "tchain") line each, for validation. */
void lines_trace(FILE *f, const struct held *h)
{
	size_t k;

	if (h->chain_insn)
		fprintf(f, "tchain\t%" PRIu64 "\t%" PRIx64 "\t%u\n", h->id, h->chain_insn,
			h->chain_loads);
	for (k = 0; k < h->set.used; k++) {
		const struct ls_entry *e = &h->set.e[h->set.order[k]];

		fprintf(f, "tline\t%" PRIu64 "\t%" PRIx64 "\t%" PRIx64 "\t%" PRIu64 "\t%s%s%s%s%s\t",
			h->id, e->vaddr, e->insn, e->time, e->flags & LS_READ ? "R" : "",
			e->flags & LS_WRITE ? "W" : "",
			e->flags & LS_COLD ? "c" : "", e->flags & LS_PREV ? "p" : "",
			e->flags & LS_LOCKLINE ? "L" : "");
		if (e->gap == UINT64_MAX)
			fprintf(f, "-\n");
		else
			fprintf(f, "%" PRIu64 "\n", e->gap);
	}
}
