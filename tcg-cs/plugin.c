// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * tcg-cs: critical-section lengths of a guest kernel, in guest instructions.
 *
 * A QEMU TCG plugin for a 1-vCPU x86-64 guest running a kernel without lock
 * debugging (the perf flavour plus tcg-cs/0001-*.patch). It counts every
 * guest instruction, and for every spinlock acquisition the instructions
 * from the acquiring atomic to the releasing store, both included, inside
 * windows the guest opens and closes around each timed phase.
 *
 * What it sees, and how (the API gives instruction bytes and memory-access
 * addresses, never registers):
 *  - acquire: the store of the cmpxchg inside the out-of-line
 *    _raw_spin_lock*() and _raw_spin_trylock*() functions (address ranges
 *    from the harness, read from System.map); with one vCPU a cmpxchg on a
 *    free lock always succeeds, and a trylock of a held lock never gets to
 *    its cmpxchg. Bit spinlocks (hlist_bl): `bts $0` on an address inside a
 *    table the kernel declared with a range marker. A kernel booted with one
 *    possible CPU patches its lock prefixes into DS prefixes ("SMP
 *    alternatives: switching to UP code"), so no lock prefix is required.
 *  - release: a store of the byte 0 (`movb $0`, how x86 queued_spin_unlock
 *    compiles) to a held lock word; for bit locks `btr $0` or an `and` that
 *    clears bit 0 of a held bit-lock word.
 *  - the lock's class: the kernel patch marks spin_lock_init(),
 *    raw_spin_lock_init() and lockdep_set_class*() with `cs cmpq $NAME, LOCK`,
 *    NAME being the address of the string lockdep would name the class by.
 *    The harness resolves those addresses to strings from the image and
 *    passes them in, with the static locks of System.map.
 *  - the call site: the address of the call (or tail jump) into a
 *    _raw_spin_lock*() function, for validation against the disassembly.
 *  - interrupts: an interrupt that arrives while a lock is held (entry
 *    points from System.map, up to the `iretq` that returns from it) is
 *    counted apart: a section's own instructions exclude it, and how many
 *    instructions interrupts took inside sections is written beside them.
 *    Under -icount the emulated CPU runs 250 million instructions per
 *    emulated second, so its timer and disk interrupts land in a section
 *    tens of times more often than on hardware; a section's own length is
 *    what the kernel's code makes it.
 *  - windows: the guest's userspace executes `cs cmpb $KIND, ADDR`
 *    (workloads/src/csmark.h): begin, end, then the window's label one
 *    byte per marker (the byte is the address's offset in a 256-byte page).
 * Marker instructions are not counted as instructions.
 *
 * Every memory callback is registered for reads and writes and filters by
 * itself: QEMU 7.2 here never called a callback registered for reads only
 * (QEMU_PLUGIN_MEM_R), while the same one registered for both was called.
 *
 * Usage: -plugin libtcgcs.so,config=FILE with FILE lines:
 *   out PATH                       where the results go
 *   spin START END TRYLOCK NAME    a lock function (hex addresses, END excluded)
 *   irq ADDR ASYNC NAME            an interrupt (ASYNC 1) or exception entry point
 *   name ADDR ROLE STRING          the string at ADDR (class names, table names)
 *   static ADDR ROLE STRING        a statically initialised lock and its name
 * ROLE is the class's icache role, "-" for none: the plugin counts how many
 * instructions ran with at least one lock of a role held.
 * Output (tab-separated), per window when its label is complete:
 *   window LABEL INSTRUCTIONS INTERRUPT_INSTRUCTIONS ROLE_HELD_INSTRUCTIONS
 *   cs LABEL CLASS SITE ACQUISITIONS INSTRUCTIONS MIN MAX INTERRUPT_INSTRUCTIONS INTERRUPTED
 *   note LABEL KEY VALUE
 * where a section's INSTRUCTIONS (and MIN, MAX) are its own and
 * INTERRUPT_INSTRUCTIONS those of interrupts that arrived while a lock was
 * held (in the window line: over the whole window); ROLE_HELD_INSTRUCTIONS
 * are the window's instructions (interrupts included) with at least one
 * lock of a role held.
 * and at exit "boot KEY VALUE" lines.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu-plugin-api.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;

#define KERNEL_START		0xffff800000000000ull
#define IMAGE_START		0xffffffff80000000ull	/* the kernel image: static data */

/* Markers: the guest side is workloads/src/csmark.h and the kernel patch. */
#define MARK_BEGIN		0xb1
#define MARK_END		0xb2
#define MARK_LABEL		0xb3
#define MARK_LABEL_END		0xb4
#define MARK_RANGE_NAME		0xc1
#define MARK_RANGE_START	0xc2
#define MARK_RANGE_END		0xc3

#define MAX_HELD		64
#define MAX_SPIN_FNS		32
#define MAX_IRQ_ENTRIES		128
#define MAX_RANGES		64
#define MAX_LABEL		128
#define UNREGISTERED		0	/* class of a dynamic lock no marker named */

/* ---- state (one vCPU: no locking anywhere) ---- */

static uint64_t insns;		/* guest instructions executed, markers excluded */
static FILE *out;

struct spin_fn {
	uint64_t start, end;
	int trylock;
};
static struct spin_fn spin_fns[MAX_SPIN_FNS];
static int n_spin_fns;

/*
 * Class names. Class 0 is "?", a dynamic lock whose initialisation no marker
 * named; a static lock no marker named is "@ADDR" (see System.map), a marker
 * whose name the harness did not resolve "?ADDR" (the string is at ADDR).
 */
static char **class_names;
static uint8_t *class_has_role;
static uint32_t n_classes, cap_classes;

/* Known strings: address -> class, sorted by address for bsearch. */
struct name_entry {
	uint64_t addr;
	uint32_t cls;
};
static struct name_entry *names;
static size_t n_names, cap_names;

/* Lock address -> class, open addressing; entries are overwritten, never removed. */
static uint64_t *reg_keys;
static uint32_t *reg_vals;
static size_t reg_cap, reg_used;

struct range {
	uint64_t start, end;	/* inclusive */
	uint32_t cls;
};
static struct range ranges[MAX_RANGES];
static int n_ranges;
static uint64_t range_name, range_start;	/* a range being declared */

/* IDT entry points, and the interrupts that arrived while a lock was held. */
struct irq_entry {
	uint64_t addr;
	int async;
};
static struct irq_entry irq_entries[MAX_IRQ_ENTRIES];
static int n_irq_entries;
static int irq_depth;		/* nesting of the interrupt being counted apart, 0: none */
static uint64_t irq_begin;	/* insns when it arrived */
static uint64_t irq_insns;	/* instructions of such interrupts, whole boot */

struct held {
	uint64_t addr, start, site;
	uint64_t irq_start;	/* irq_insns when acquired */
	uint32_t cls;
	int bit;
};
static struct held held[MAX_HELD];
static int n_held;
static int n_role_held;		/* held locks whose class has a role */
static uint64_t role_since;	/* insns when n_role_held became 1 */
static uint64_t role_closed;	/* instructions with a role held, closed intervals */
static uint64_t pending_site;	/* the last call into a lock function */

/* Per-window statistics by (class, site). */
struct stat {
	uint64_t site, n, sum, min, max, irq, interrupted;
	uint32_t cls;
	int used;
};
static struct stat *stats;
static size_t stats_cap, stats_used;

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
	N_NOTES
};
static const char *const note_names[N_NOTES] = {
	"acquire_on_held", "trylock_failed", "bit_on_held", "held_overflow",
	"held_at_end", "class_markers", "unnamed_markers", "not_opened", "reopened",
};
static uint64_t notes[N_NOTES];		/* this window */
static uint64_t boot_notes[N_NOTES];	/* the whole boot */

static int window_open;
static int labelling;
static uint64_t window_begin, window_insns, window_irq_begin, window_irq;
static uint64_t window_role_begin, window_role;
static char label[MAX_LABEL + 1];
static size_t label_len;
static uint64_t windows_written;
static uint64_t byte_markers;	/* executed, the whole boot */

static void note(enum note n)
{
	notes[n]++;
	boot_notes[n]++;
}

static void *grow(void *p, size_t *cap, size_t size, size_t min)
{
	size_t ncap = *cap ? *cap * 2 : min;

	p = realloc(p, ncap * size);
	if (!p) {
		fprintf(stderr, "tcg-cs: out of memory\n");
		exit(1);
	}
	memset((char *)p + *cap * size, 0, (ncap - *cap) * size);
	*cap = ncap;
	return p;
}

/* ---- classes and names ---- */

static uint32_t new_class(const char *name, int has_role)
{
	if (n_classes == cap_classes) {
		size_t cap = cap_classes;

		class_names = grow(class_names, &cap, sizeof(*class_names), 256);
		cap = cap_classes;
		class_has_role = grow(class_has_role, &cap, sizeof(*class_has_role), 256);
		cap_classes = cap;
	}
	class_names[n_classes] = strdup(name);
	class_has_role[n_classes] = has_role;
	return n_classes++;
}

static int name_cmp(const void *a, const void *b)
{
	const struct name_entry *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The class named by the string at @addr (a new "?ADDR" class if unknown). */
static uint32_t class_of_name(uint64_t addr)
{
	struct name_entry key = { addr, 0 }, *hit;
	char buf[32];

	hit = bsearch(&key, names, n_names, sizeof(*names), name_cmp);
	if (hit)
		return hit->cls;
	note(NOTE_UNNAMED_MARKERS);
	/* Remember it, so each unknown address is one class. */
	snprintf(buf, sizeof(buf), "?%" PRIx64, addr);
	if (n_names == cap_names)
		names = grow(names, &cap_names, sizeof(*names), 1024);
	names[n_names].addr = addr;
	names[n_names].cls = new_class(buf, 0);
	n_names++;
	qsort(names, n_names, sizeof(*names), name_cmp);
	return class_of_name(addr);
}

/* ---- the registry: lock address -> class ---- */

static size_t reg_slot(uint64_t key)
{
	size_t i = (key * 0x9e3779b97f4a7c15ull) >> 20;

	for (i &= reg_cap - 1; reg_keys[i] && reg_keys[i] != key; i = (i + 1) & (reg_cap - 1))
		;
	return i;
}

static void reg_set(uint64_t key, uint32_t cls)
{
	size_t i;

	if ((reg_used + 1) * 10 > reg_cap * 7) {
		uint64_t *keys = reg_keys;
		uint32_t *vals = reg_vals;
		size_t cap = reg_cap, j;

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
	i = reg_slot(key);
	if (!reg_keys[i]) {
		reg_keys[i] = key;
		reg_used++;
	}
	reg_vals[i] = cls;
}

static uint32_t reg_get(uint64_t key)
{
	size_t i = reg_slot(key);

	return reg_keys[i] ? reg_vals[i] : UNREGISTERED;
}

static uint32_t class_of_lock(uint64_t addr)
{
	uint32_t cls = reg_get(addr);
	char buf[32];

	if (cls != UNREGISTERED || addr < IMAGE_START)
		return cls;
	/* A statically initialised lock (DEFINE_SPINLOCK): one class per address. */
	snprintf(buf, sizeof(buf), "@%" PRIx64, addr);
	cls = new_class(buf, 0);
	reg_set(addr, cls);
	return cls;
}

/* ---- per-window statistics ---- */

static void stats_reset(void)
{
	memset(stats, 0, stats_cap * sizeof(*stats));
	stats_used = 0;
}

static struct stat *stat_slot(uint32_t cls, uint64_t site)
{
	size_t i;

	if ((stats_used + 1) * 10 > stats_cap * 7) {
		struct stat *old = stats;
		size_t cap = stats_cap, j;

		stats = NULL;
		stats_cap = 0;
		stats = grow(stats, &stats_cap, sizeof(*stats), cap ? cap * 2 : 4096);
		stats_used = 0;
		for (j = 0; j < cap; j++) {
			if (old[j].used) {
				struct stat *s = stat_slot(old[j].cls, old[j].site);

				*s = old[j];
				stats_used++;
			}
		}
		free(old);
	}
	i = ((site ^ ((uint64_t)cls << 40)) * 0x9e3779b97f4a7c15ull) >> 32;
	for (i &= stats_cap - 1; stats[i].used && (stats[i].cls != cls || stats[i].site != site);
	     i = (i + 1) & (stats_cap - 1))
		;
	return &stats[i];
}

static void record(const struct held *h)
{
	uint64_t irq = irq_insns - h->irq_start;
	uint64_t len = insns - h->start + 1 - irq;
	struct stat *s;

	if (!window_open)
		return;
	s = stat_slot(h->cls, h->site);
	if (!s->used) {
		s->used = 1;
		s->cls = h->cls;
		s->site = h->site;
		s->min = len;
		stats_used++;
	}
	s->n++;
	s->sum += len;
	s->irq += irq;
	s->interrupted += irq > 0;
	if (len < s->min)
		s->min = len;
	if (len > s->max)
		s->max = len;
}

/* ---- held locks ---- */

static int find_held(uint64_t addr, int bit)
{
	int i;

	for (i = n_held - 1; i >= 0; i--)
		if (held[i].addr == addr && held[i].bit == bit)
			return i;
	return -1;
}

/* Instructions run so far with at least one lock of a role held. */
static uint64_t role_held_insns(void)
{
	return role_closed + (n_role_held ? insns - role_since + 1 : 0);
}

static void forget_held(int i)
{
	if (class_has_role[held[i].cls] && !--n_role_held)
		role_closed += insns - role_since + 1;
	memmove(held + i, held + i + 1, (n_held - i - 1) * sizeof(*held));
	n_held--;
}

static void push_held(uint64_t addr, uint32_t cls, uint64_t site, int bit)
{
	if (n_held == MAX_HELD) {
		/* Cannot happen with correct release detection: drop the oldest. */
		note(NOTE_HELD_OVERFLOW);
		forget_held(0);
	}
	if (class_has_role[cls] && !n_role_held++)
		role_since = insns;
	held[n_held].addr = addr;
	held[n_held].start = insns;
	held[n_held].site = site;
	held[n_held].cls = cls;
	held[n_held].bit = bit;
	held[n_held].irq_start = irq_insns;
	n_held++;
}

static void release(int i)
{
	record(&held[i]);
	forget_held(i);
}

/* ---- callbacks ---- */

static void on_spin_acquire(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t addr,
			    void *udata)
{
	int trylock = (int)(uintptr_t)udata;
	uint64_t site = pending_site;
	int i;

	(void)vcpu;
	if (!qemu_plugin_mem_is_store(info))
		return;		/* a non-atomic cmpxchg is a load and a store */
	pending_site = 0;
	i = find_held(addr, 0);
	if (i >= 0) {
		if (trylock) {
			note(NOTE_TRYLOCK_FAILED);
			return;
		}
		note(NOTE_ACQUIRE_ON_HELD);
		forget_held(i);
	}
	push_held(addr, class_of_lock(addr), site, 0);
}

static void on_byte_zero_store(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t addr,
			       void *udata)
{
	int i;

	(void)vcpu;
	(void)udata;
	if (!n_held || !qemu_plugin_mem_is_store(info))
		return;
	i = find_held(addr, 0);
	if (i >= 0)
		release(i);
}

static const struct range *range_of(uint64_t addr)
{
	int i;

	for (i = 0; i < n_ranges; i++)
		if (addr >= ranges[i].start && addr <= ranges[i].end)
			return &ranges[i];
	return NULL;
}

static void on_bit_acquire(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t addr,
			   void *udata)
{
	const struct range *r;

	(void)vcpu;
	if (!qemu_plugin_mem_is_store(info))
		return;
	r = range_of(addr);
	if (!r)
		return;		/* a bit op on something that is no declared table */
	if (find_held(addr, 1) >= 0) {
		note(NOTE_BIT_ON_HELD);
		return;
	}
	push_held(addr, r->cls, (uint64_t)(uintptr_t)udata, 1);
}

static void on_bit_release(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t addr,
			   void *udata)
{
	int i;

	(void)vcpu;
	(void)udata;
	if (!n_held || !qemu_plugin_mem_is_store(info))
		return;
	i = find_held(addr, 1);
	if (i >= 0)
		release(i);
}

/*
 * An interrupt is counted apart from the moment it arrives while a lock is
 * held (so it came from kernel code and returns there without scheduling)
 * to its iretq; exceptions and interrupts nested in it only deepen it.
 */
static void on_irq_entry(unsigned int vcpu, void *udata)
{
	(void)vcpu;
	if (irq_depth) {
		irq_depth++;
	} else if (udata && n_held) {
		irq_depth = 1;
		irq_begin = insns;
	}
}

static void on_iret(unsigned int vcpu, void *udata)
{
	(void)vcpu;
	(void)udata;
	if (irq_depth && !--irq_depth)
		irq_insns += insns - irq_begin;
}

static void on_lock_call(unsigned int vcpu, void *udata)
{
	(void)vcpu;
	pending_site = (uint64_t)(uintptr_t)udata;
}

static void on_class_marker(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t addr,
			    void *udata)
{
	(void)vcpu;
	(void)info;
	note(NOTE_CLASS_MARKERS);
	reg_set(addr, class_of_name((uint64_t)(uintptr_t)udata));
}

static void write_window(void)
{
	size_t i;
	int n;

	label[label_len] = '\0';
	fprintf(out, "window\t%s\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n", label, window_insns,
		window_irq, window_role);
	for (i = 0; i < stats_cap; i++) {
		const struct stat *s = &stats[i];

		if (s->used)
			fprintf(out, "cs\t%s\t%s\t%" PRIx64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
				"\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n", label,
				class_names[s->cls], s->site, s->n, s->sum, s->min, s->max, s->irq,
				s->interrupted);
	}
	for (n = 0; n < N_NOTES; n++)
		if (notes[n])
			fprintf(out, "note\t%s\t%s\t%" PRIu64 "\n", label, note_names[n], notes[n]);
	fflush(out);
	windows_written++;
}

static void on_byte_marker(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t addr,
			   void *udata)
{
	int kind = (int)(uintptr_t)udata;

	(void)vcpu;
	(void)info;
	byte_markers++;
	switch (kind) {
	case MARK_BEGIN:
		if (window_open)
			note(NOTE_REOPENED);
		stats_reset();
		memset(notes, 0, sizeof(notes));
		window_open = 1;
		labelling = 0;
		window_begin = insns;
		window_irq_begin = irq_insns;
		window_role_begin = role_held_insns();
		break;
	case MARK_END:
		if (!window_open) {
			stats_reset();
			memset(notes, 0, sizeof(notes));
			note(NOTE_NOT_OPENED);
			window_begin = insns;
			window_irq_begin = irq_insns;
			window_role_begin = role_held_insns();
		}
		window_insns = insns - window_begin;
		window_irq = irq_insns - window_irq_begin;
		window_role = role_held_insns() - window_role_begin;
		notes[NOTE_HELD_AT_END] = n_held;
		window_open = 0;
		labelling = 1;
		label_len = 0;
		break;
	case MARK_LABEL:
		if (labelling && label_len < MAX_LABEL)
			label[label_len++] = (char)(addr & 0xff);
		break;
	case MARK_LABEL_END:
		if (labelling)
			write_window();
		labelling = 0;
		break;
	case MARK_RANGE_NAME:
		range_name = addr;
		break;
	case MARK_RANGE_START:
		range_start = addr;
		break;
	case MARK_RANGE_END:
		if (n_ranges < MAX_RANGES && range_name && addr >= range_start) {
			ranges[n_ranges].start = range_start;
			ranges[n_ranges].end = addr;
			ranges[n_ranges].cls = class_of_name(range_name);
			n_ranges++;
		}
		range_name = range_start = 0;
		break;
	}
}

/* ---- decoding what we need of x86-64 instructions ---- */

struct insn {
	int cs;			/* a CS segment override prefix */
	int op;			/* one-byte opcode, or 0x100 | second byte after 0f */
	int mod, reg;		/* of the ModRM byte, when there is one */
	uint8_t imm8;		/* the last byte: the imm8 of the forms we match */
	int64_t imm32;		/* the last four bytes, sign-extended */
};

static int decode(const uint8_t *p, size_t n, struct insn *d)
{
	size_t i = 0;

	memset(d, 0, sizeof(*d));
	for (; i < n; i++) {
		if (p[i] == 0x2e)
			d->cs = 1;
		else if (p[i] != 0xf0 && p[i] != 0x66 && p[i] != 0x67 && p[i] != 0xf2 && p[i] != 0xf3 &&
			 p[i] != 0x26 && p[i] != 0x36 && p[i] != 0x3e && p[i] != 0x64 &&
			 p[i] != 0x65)
			break;
	}
	if (i < n && (p[i] & 0xf0) == 0x40)
		i++;		/* REX */
	if (i >= n)
		return 0;
	if (p[i] == 0x0f) {
		if (i + 1 >= n)
			return 0;
		d->op = 0x100 | p[i + 1];
		i += 2;
	} else {
		d->op = p[i++];
	}
	if (i >= n)
		return 0;
	d->mod = p[i] >> 6;
	d->reg = (p[i] >> 3) & 7;
	d->imm8 = p[n - 1];
	if (n >= 4)
		d->imm32 = (int32_t)((uint32_t)p[n - 4] | (uint32_t)p[n - 3] << 8 |
				     (uint32_t)p[n - 2] << 16 | (uint32_t)p[n - 1] << 24);
	return 1;
}

static const struct spin_fn *spin_fn_at(uint64_t addr)
{
	int i;

	for (i = 0; i < n_spin_fns; i++)
		if (addr >= spin_fns[i].start && addr < spin_fns[i].end)
			return &spin_fns[i];
	return NULL;
}

/* Target of a direct call or jump, 0 if the instruction is none. */
static uint64_t branch_target(const uint8_t *p, size_t n, uint64_t vaddr)
{
	if (n == 5 && (p[0] == 0xe8 || p[0] == 0xe9))
		return vaddr + 5 + (int64_t)(int32_t)((uint32_t)p[1] | (uint32_t)p[2] << 8 |
						      (uint32_t)p[3] << 16 | (uint32_t)p[4] << 24);
	if (n == 2 && p[0] == 0xeb)
		return vaddr + 2 + (int8_t)p[1];
	return 0;
}

static const struct irq_entry *irq_entry_at(uint64_t addr)
{
	int i;

	for (i = 0; i < n_irq_entries; i++)
		if (irq_entries[i].addr == addr)
			return &irq_entries[i];
	return NULL;
}

static int is_iretq(const uint8_t *p, size_t n)
{
	return n == 2 && p[0] == 0x48 && p[1] == 0xcf;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);

	(void)id;
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		const uint8_t *p = qemu_plugin_insn_data(insn);
		size_t size = qemu_plugin_insn_size(insn);
		uint64_t vaddr = qemu_plugin_insn_vaddr(insn);
		int kernel = vaddr >= KERNEL_START;
		const struct spin_fn *fn;
		const struct irq_entry *entry;
		struct insn d;
		uint64_t target;

		if (kernel && (entry = irq_entry_at(vaddr)))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_irq_entry,
							       QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)entry->async);
		if (kernel && is_iretq(p, size))
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_iret, QEMU_PLUGIN_CB_NO_REGS,
							       NULL);

		if (!decode(p, size, &d)) {
			qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64,
								   &insns, 1);
			continue;
		}
		/* Markers: `cs cmpb $KIND, m8` anywhere, `cs cmpq $NAME, m` in the kernel. */
		if (d.cs && d.reg == 7 && d.mod != 3 && d.op == 0x80) {
			qemu_plugin_register_vcpu_mem_cb(insn, on_byte_marker, QEMU_PLUGIN_CB_NO_REGS,
							 QEMU_PLUGIN_MEM_RW,
							 (void *)(uintptr_t)d.imm8);
			continue;
		}
		if (kernel && d.cs && d.reg == 7 && d.mod != 3 && d.op == 0x81) {
			qemu_plugin_register_vcpu_mem_cb(insn, on_class_marker, QEMU_PLUGIN_CB_NO_REGS,
							 QEMU_PLUGIN_MEM_RW,
							 (void *)(uintptr_t)(uint64_t)d.imm32);
			continue;
		}
		qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64,
							   &insns, 1);
		if (!kernel)
			continue;
		if (d.op == 0x1b1 && d.mod != 3 && (fn = spin_fn_at(vaddr))) {
			qemu_plugin_register_vcpu_mem_cb(insn, on_spin_acquire, QEMU_PLUGIN_CB_NO_REGS,
							 QEMU_PLUGIN_MEM_RW,
							 (void *)(uintptr_t)fn->trylock);
		} else if (d.op == 0xc6 && d.reg == 0 && d.mod != 3 && d.imm8 == 0) {
			qemu_plugin_register_vcpu_mem_cb(insn, on_byte_zero_store,
							 QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW,
							 NULL);
		} else if (d.op == 0x1ba && d.reg == 5 && d.mod != 3 && d.imm8 == 0) {
			qemu_plugin_register_vcpu_mem_cb(insn, on_bit_acquire, QEMU_PLUGIN_CB_NO_REGS,
							 QEMU_PLUGIN_MEM_RW,
							 (void *)(uintptr_t)vaddr);
		} else if (d.mod != 3 &&
			   ((d.op == 0x1ba && d.reg == 6 && d.imm8 == 0) ||
			    ((d.op == 0x80 || d.op == 0x83) && d.reg == 4 && !(d.imm8 & 1)) ||
			    (d.op == 0x81 && d.reg == 4 && !(d.imm32 & 1)))) {
			qemu_plugin_register_vcpu_mem_cb(insn, on_bit_release, QEMU_PLUGIN_CB_NO_REGS,
							 QEMU_PLUGIN_MEM_RW, NULL);
		} else if ((target = branch_target(p, size, vaddr)) && spin_fn_at(target) &&
			   !spin_fn_at(vaddr)) {
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_lock_call,
							       QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)vaddr);
		}
	}
}

/* ---- setup ---- */

static void at_exit(qemu_plugin_id_t id, void *udata)
{
	int n;

	(void)id;
	(void)udata;
	fprintf(out, "boot\tinstructions\t%" PRIu64 "\n", insns);
	fprintf(out, "boot\tinterrupt_instructions\t%" PRIu64 "\n", irq_insns);
	fprintf(out, "boot\twindows\t%" PRIu64 "\n", windows_written);
	fprintf(out, "boot\tbyte_markers\t%" PRIu64 "\n", byte_markers);
	fprintf(out, "boot\tregistered_locks\t%zu\n", reg_used);
	fprintf(out, "boot\tclasses\t%" PRIu32 "\n", n_classes);
	fprintf(out, "boot\tranges\t%d\n", n_ranges);
	for (n = 0; n < N_NOTES; n++)
		fprintf(out, "boot\t%s\t%" PRIu64 "\n", note_names[n], boot_notes[n]);
	fclose(out);
}

static int fail(const char *path, int lineno, const char *what)
{
	fprintf(stderr, "tcg-cs: %s:%d: %s\n", path, lineno, what);
	return -1;
}

static int read_config(const char *path)
{
	char line[4096], kind[16], text[4000];
	FILE *f = fopen(path, "r");
	int lineno = 0;

	if (!f) {
		perror(path);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		uint64_t a, b;
		int trylock, used;

		lineno++;
		line[strcspn(line, "\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		if (sscanf(line, "%15s %n", kind, &used) != 1)
			return fail(path, lineno, "no keyword");
		if (!strcmp(kind, "out")) {
			out = fopen(line + used, "w");
			if (!out) {
				perror(line + used);
				return -1;
			}
		} else if (!strcmp(kind, "spin")) {
			if (sscanf(line + used, "%" SCNx64 " %" SCNx64 " %d", &a, &b, &trylock) != 3 ||
			    a >= b)
				return fail(path, lineno, "expected: spin START END TRYLOCK NAME");
			if (n_spin_fns == MAX_SPIN_FNS)
				return fail(path, lineno, "too many lock functions");
			spin_fns[n_spin_fns].start = a;
			spin_fns[n_spin_fns].end = b;
			spin_fns[n_spin_fns].trylock = trylock;
			n_spin_fns++;
		} else if (!strcmp(kind, "irq")) {
			int async;

			if (sscanf(line + used, "%" SCNx64 " %d", &a, &async) != 2)
				return fail(path, lineno, "expected: irq ADDR ASYNC NAME");
			if (n_irq_entries == MAX_IRQ_ENTRIES)
				return fail(path, lineno, "too many interrupt entry points");
			irq_entries[n_irq_entries].addr = a;
			irq_entries[n_irq_entries].async = async;
			n_irq_entries++;
		} else if (!strcmp(kind, "name") || !strcmp(kind, "static")) {
			char role[32];
			int at, has_role;

			if (sscanf(line + used, "%" SCNx64 " %31s %n", &a, role, &at) != 2 ||
			    !line[used + at])
				return fail(path, lineno, "expected: name|static ADDR ROLE STRING");
			snprintf(text, sizeof(text), "%s", line + used + at);
			has_role = strcmp(role, "-") != 0;
			if (!strcmp(kind, "static")) {
				reg_set(a, new_class(text, has_role));
				continue;
			}
			if (n_names == cap_names)
				names = grow(names, &cap_names, sizeof(*names), 1024);
			names[n_names].addr = a;
			names[n_names].cls = new_class(text, has_role);
			n_names++;
		} else {
			return fail(path, lineno, "unknown keyword");
		}
	}
	fclose(f);
	if (!out)
		return fail(path, lineno, "no 'out' line");
	if (!n_spin_fns)
		return fail(path, lineno, "no 'spin' line");
	qsort(names, n_names, sizeof(*names), name_cmp);
	return 0;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
					   int argc, char **argv)
{
	const char *config = NULL;
	int i;

	if (!info->system_emulation || info->system.smp_vcpus != 1 ||
	    info->system.max_vcpus != 1) {
		fprintf(stderr, "tcg-cs: needs system emulation with exactly one vCPU\n");
		return -1;
	}
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "config=", 7)) {
			config = argv[i] + 7;
		} else {
			fprintf(stderr, "tcg-cs: unknown argument %s\n", argv[i]);
			return -1;
		}
	}
	if (!config) {
		fprintf(stderr, "tcg-cs: usage: -plugin libtcgcs.so,config=FILE\n");
		return -1;
	}
	new_class("?", 0);	/* UNREGISTERED */
	reg_set(KERNEL_START, UNREGISTERED);	/* allocates the registry */
	if (read_config(config))
		return -1;
	stats = grow(NULL, &stats_cap, sizeof(*stats), 4096);
	fprintf(out, "tcg-cs\t1\n");
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
