// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * tcg-cs: critical sections of a guest kernel, in guest instructions and
 * cache lines.
 *
 * A QEMU TCG plugin for an x86-64 guest running a kernel without lock
 * debugging (the perf flavour plus tcg-cs/0001-*.patch). It counts every
 * guest instruction, and for every spinlock acquisition the instructions
 * from the acquiring atomic to the releasing store, both included, and the
 * cache lines the section touched (lines.c), inside windows the guest opens
 * and closes around each timed phase. With several vCPUs (which needs
 * -accel tcg,thread=single: one host thread runs them round robin, and
 * QEMU's PAUSE hands the thread to the next vCPU, so a spinning vCPU lets
 * the holder run) it also counts failed trylocks and what their retries
 * cost the failing vCPU.
 *
 * What it sees, and how (the API gives instruction bytes and memory-access
 * addresses, never registers):
 *  - acquire: a call into an out-of-line _raw_spin_lock*() or
 *    _raw_spin_trylock*() (address ranges from System.map) is followed from
 *    the function's entry to one of its exits, which the harness finds in
 *    the disassembly: the first access through %rdi names the lock, the
 *    cmpxchg starts the section, the exit says acquired, trylock failed, or
 *    gone to the queued slow path, whose return then acquires (locks.c).
 *    Bit spinlocks (hlist_bl): `bts $0` on an address inside a table the
 *    kernel declared with a range marker, acquired unless a vCPU holds it.
 *    A kernel booted with one possible CPU patches its lock prefixes into DS
 *    prefixes ("SMP alternatives: switching to UP code"), so no lock prefix
 *    is required.
 *  - release: a store of the byte 0 (`movb $0`, how x86 queued_spin_unlock
 *    compiles) to a lock word the vCPU holds; for bit locks `btr $0` or an
 *    `and` that clears bit 0 of a held bit-lock word.
 *  - the lock's class: the kernel patch marks spin_lock_init(),
 *    raw_spin_lock_init() and lockdep_set_class*() with `cs cmpq $NAME, LOCK`,
 *    NAME being the address of the string lockdep would name the class by.
 *    The harness resolves those addresses to strings from the image and
 *    passes them in, with the static locks of System.map.
 *  - the call site: the address of the call (or tail jump) into a
 *    _raw_spin_lock*() function, for validation against the disassembly.
 *  - interrupts: an interrupt that arrives while a lock is held (entry
 *    points from System.map, up to the `iretq` that returns from it) is
 *    counted apart: a section's own instructions and lines exclude it, and
 *    how many instructions interrupts took inside sections is written
 *    beside them. Under -icount the emulated CPU runs 250 million
 *    instructions per emulated second, so its timer and disk interrupts
 *    land in a section tens of times more often than on hardware; a
 *    section's own length is what the kernel's code makes it.
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
 *   exit ADDR ACQUIRED             an exit of a lock function: 1 acquired, 0 not
 *   slowpath START END             the queued slow path: its returns acquire
 *   irq ADDR ASYNC NAME            an interrupt (ASYNC 1) or exception entry point
 *   name ADDR ROLE STRING          the string at ADDR (class names, table names)
 *   static ADDR ROLE STRING        a statically initialised lock and its name
 *   lines 0|1                      track the cache lines of sections (default 0)
 *   cold N                         lines of the simulated cache whose misses are
 *                                  cold lines (lines.c)
 *   retry_horizon N                a retry episode longer than N of the failing
 *                                  vCPU's instructions is abandoned
 *   trace SITE COUNT STRIDE        write COUNT sections of the call site SITE in
 *                                  each window line by line, every STRIDE-th from
 *                                  the first (up to 8 sites)
 * ROLE is the class's icache role, "-" for none: the plugin counts how many
 * instructions ran with at least one lock of a role held, and counts chain
 * entries in sections of the role "hash".
 * Output (tab-separated): "tcg-cs 3", "config KEY VALUE" lines, then per
 * window when its label is complete:
 *   window LABEL INSTRUCTIONS INTERRUPT_INSTRUCTIONS ROLE_HELD_INSTRUCTIONS ACCESSES COLD
 *   cs LABEL CLASS SITE ACQUISITIONS INSTRUCTIONS MIN MAX INTERRUPT_INSTRUCTIONS INTERRUPTED
 *      LINES_READ LINES_WRITTEN LINES_PREV LOCKLINE_WRITTEN COLD CHAIN
 *   hist LABEL hold|wait CLASS SITE LOW:COUNT,...
 *   trylock LABEL CLASS SITE FAILED RETRIES RETRY_FAILURES RETRY_INSTRUCTIONS SKIPS
 *           SKIP_INSTRUCTIONS ABANDONED
 *   note LABEL KEY VALUE
 *   tsec LABEL ID CLASS SITE LOCK START LENGTH READ WRITTEN PREV COLD LOCKLINE_WRITTEN CHAIN
 *   tline LABEL ID VADDR INSN TIME FLAGS GAP
 *   tchain LABEL ID INSN LOADS     (the walk's per-entry load instruction)
 * where a section's INSTRUCTIONS (and MIN, MAX) are its own and
 * INTERRUPT_INSTRUCTIONS those of interrupts that arrived while a lock was
 * held (in the window line: over the whole window); ROLE_HELD_INSTRUCTIONS
 * are the window's instructions (interrupts included) with at least one
 * lock of a role held; ACCESSES are the window's memory accesses (lines
 * touched: one, two for an access across lines) and COLD those that missed
 * the simulated cache. The line columns are sums over the
 * sections: LINES_READ lines only read, LINES_WRITTEN lines written (and
 * maybe read), LINES_PREV lines last written inside an earlier section of
 * the same lock, LOCKLINE_WRITTEN sections that wrote the lock word's line
 * other than through the lock word, COLD cold lines, CHAIN (hash sections)
 * the chain entries visited (lines.c: the loads of the walk's per-entry
 * load instruction). A trylock episode runs from a vCPU's first failed
 * trylock of a lock at a site to its success there: a RETRY when no
 * trylock of another lock succeeded at the site meanwhile (a loop that
 * tries the same lock again), else a SKIP (a walk that moved on and met
 * the lock again later); their INSTRUCTIONS are the failing vCPU's from
 * the first failure to the success, RETRY_FAILURES the failures in the
 * retries; ABANDONED episodes met no success within the retry horizon.
 * A hist line follows the cs line of its (class, site) and counts, per
 * bucket named by its smallest value (output.c: HIST_SUB buckets per power
 * of 2, "config hist_sub_buckets"), the sections' own lengths ("hold") or
 * the waits of spin_locks that went to the queued slow path ("wait": the
 * holder's own instructions from the waiter's failed cmpxchg to its release,
 * the rest of its section; one vCPU never waits, and round robin makes a
 * vCPU wait only when QEMU switched the holder out inside its section;
 * note wait_unseen counts waits whose holder or release was not seen). Bit locks' waits are not seen: a
 * failed bts is the caller's loop, not a lock function.
 * tsec, tline and tchain (traced sections) give a section's START (the
 * vCPU's instructions at its acquisition) and lines: the first access's
 * data and instruction address and TIME (the vCPU's instructions then),
 * FLAGS R read, W written, c cold, p previous, L on the lock word's line,
 * and GAP the instructions since the line's previous access ("-": never).
 * and at exit "boot KEY VALUE" lines.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tcgcs.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;

#define MAX_SPIN_FNS		32
#define MAX_EXITS		64
#define MAX_IRQ_ENTRIES		128

/* What a memory callback does, besides tracking lines (its udata's top byte). */
enum mem_kind {
	MEM_PLAIN,		/* lines only */
	MEM_LOCK_ARG,		/* an access through a lock function's %rdi */
	MEM_ZERO_STORE,		/* movb $0: a spinlock release */
	MEM_BTS,		/* bts $0: a bit lock acquisition */
	MEM_BIT_RELEASE,	/* btr $0, and: a bit lock release */
	MEM_BYTE_MARKER,	/* cs cmpb $KIND */
	MEM_CLASS_MARKER,	/* cs cmpq $NAME */
};
#define MF_STACK		ACCESS_STACK	/* the access is to the stack */
#define MF_CMPXCHG		2
#define MF_RMW			ACCESS_RMW	/* the instruction writes its memory operand too */

/* ---- state ---- */

uint64_t insns;
struct vcpu vcpus[MAX_VCPUS];
int n_vcpus;
struct config cfg;

struct spin_fn {
	uint64_t start, end;
	int trylock;
};
static struct spin_fn spin_fns[MAX_SPIN_FNS];
static int n_spin_fns;

struct lock_exit {
	uint64_t addr;
	int acquired;
};
static struct lock_exit exits[MAX_EXITS];
static int n_exits;
static uint64_t slow_start, slow_end;

struct irq_entry_point {
	uint64_t addr;
	int async;
};
static struct irq_entry_point irq_entries[MAX_IRQ_ENTRIES];
static int n_irq_entries;

/* ---- several vCPUs: whose turn it is ---- */

static unsigned int turn;		/* the vCPU running */
static uint64_t turn_start;		/* insns when its turn began */
static pthread_t turn_thread;
static int turn_thread_known;

uint64_t vcpu_insns(const struct vcpu *v)
{
	if (n_vcpus == 1)
		return insns;
	return v->done + (v == &vcpus[turn] ? insns - turn_start : 0);
}

/* At the start of every block of several vCPUs: a new turn when the vCPU changed. */
static void on_tb(unsigned int index, void *udata)
{
	(void)udata;
	if (index == turn)
		return;
	if (!turn_thread_known) {
		turn_thread = pthread_self();
		turn_thread_known = 1;
	} else if (!pthread_equal(turn_thread, pthread_self())) {
		fprintf(stderr, "tcg-cs: vCPUs on several host threads: needs "
			"-accel tcg,thread=single\n");
		exit(1);
	}
	vcpus[turn].done += insns - turn_start;
	turn_start = insns;
	turn = index;
}

/* ---- callbacks ---- */

static void *mem_udata(enum mem_kind kind, int flags, uint64_t payload)
{
	return (void *)(uintptr_t)((uint64_t)kind << 56 | (uint64_t)flags << 48 |
				   (payload & 0xffffffffffffull));
}

/* The payload, sign-extended from bit 47 (kernel addresses come back whole). */
static uint64_t payload_of(uint64_t udata)
{
	return (uint64_t)((int64_t)(udata << 16) >> 16);
}

static void on_mem(unsigned int index, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata)
{
	uint64_t u = (uintptr_t)udata, payload = payload_of(u), line = ~0ull;
	enum mem_kind kind = (enum mem_kind)(u >> 56);
	int flags = (int)(u >> 48) & 0xff;
	struct vcpu *v = &vcpus[index];

	if (kind == MEM_BYTE_MARKER) {
		byte_marker((int)payload, vaddr);
		return;
	}
	if (kind == MEM_CLASS_MARKER) {
		note(NOTE_CLASS_MARKERS);
		reg_set(vaddr, class_of_name(payload));
		return;
	}
	if (cfg.lines)
		line = lines_access(v, info, vaddr, flags & (MF_STACK | MF_RMW), payload);
	if (kind == MEM_LOCK_ARG)
		lock_fn_arg(v, vaddr, line, flags & MF_CMPXCHG);
	if (!qemu_plugin_mem_is_store(info))
		return;
	if (kind == MEM_ZERO_STORE)
		byte_zero_store(v, vaddr);
	else if (kind == MEM_BTS)
		bit_acquire(v, vaddr, line, payload);
	else if (kind == MEM_BIT_RELEASE)
		bit_release(v, vaddr);
}

static void on_lock_call(unsigned int index, void *udata)
{
	vcpus[index].pending_site = (uint64_t)(uintptr_t)udata;
}

static void on_lock_entry(unsigned int index, void *udata)
{
	lock_fn_entry(&vcpus[index], (int)(uintptr_t)udata);
}

static void on_lock_exit(unsigned int index, void *udata)
{
	lock_fn_exit(&vcpus[index], (int)(uintptr_t)udata);
}

static void on_slow_return(unsigned int index, void *udata)
{
	(void)udata;
	slowpath_return(&vcpus[index]);
}

static void on_irq_entry(unsigned int index, void *udata)
{
	irq_entry(&vcpus[index], (int)(uintptr_t)udata);
}

static void on_iret(unsigned int index, void *udata)
{
	(void)udata;
	irq_return(&vcpus[index]);
}

/* ---- decoding what we need of x86-64 instructions ---- */

struct insn {
	int cs;			/* a CS segment override prefix */
	int rex;
	int op;			/* one-byte opcode, 0x100 | second byte after 0f, 0x200: longer */
	int modrm;		/* has a ModRM byte */
	int mod, reg, rm;	/* of the ModRM byte */
	int stack;		/* its memory access is to the stack */
	int rmw;		/* reads and writes its memory operand */
	int rdi;		/* its memory operand is based on %rdi */
	uint8_t imm8;		/* the last byte: the imm8 of the forms we match */
	int64_t imm32;		/* the last four bytes, sign-extended */
};

static int has_modrm(int op)
{
	int b = op & 0xff;

	if (op >= 0x200)
		return 0;	/* 0f 38 / 0f 3a: not looked into */
	if (op >= 0x100)
		return !(b == 0x05 || b == 0x06 || b == 0x07 || b == 0x08 || b == 0x09 ||
			 b == 0x0b || (b >= 0x30 && b <= 0x37) || b == 0x77 ||
			 (b >= 0x80 && b <= 0x8f) || b == 0xa0 || b == 0xa1 || b == 0xa2 ||
			 b == 0xa8 || b == 0xa9 || b == 0xaa || (b >= 0xc8 && b <= 0xcf));
	if (b < 0x40)
		return (b & 7) < 4;
	return b == 0x62 || b == 0x63 || b == 0x69 || b == 0x6b || (b >= 0x80 && b <= 0x8f) ||
	       b == 0xc0 || b == 0xc1 || (b >= 0xc4 && b <= 0xc7) || (b >= 0xd0 && b <= 0xd3) ||
	       (b >= 0xd8 && b <= 0xdf) || b == 0xf6 || b == 0xf7 || b == 0xfe || b == 0xff;
}

/* push, pop, call, ret, enter, leave, iret: opcodes whose only access is the stack. */
static int stack_op(int op)
{
	return (op >= 0x50 && op <= 0x5f) || op == 0x68 || op == 0x6a || op == 0x9c ||
	       op == 0x9d || op == 0xc2 || op == 0xc3 || op == 0xc8 || op == 0xc9 ||
	       op == 0xca || op == 0xcb || op == 0xcf || op == 0xe8;
}

/*
 * Read-modify-write forms (memory destination): ALU ops, group 1 but cmp,
 * inc, dec, neg, not, shifts, xchg, xadd, cmpxchg, bts/btr/btc. Without a
 * lock prefix QEMU splits them into a load and a store, and the load must
 * not pass for a plain read (lines.c: a hash walk's loads).
 */
static int rmw_op(int op, int reg)
{
	int b = op & 0xff;

	if (op >= 0x200)
		return 0;
	if (op >= 0x100)
		return b == 0xb0 || b == 0xb1 || b == 0xc0 || b == 0xc1 || b == 0xab || b == 0xb3 ||
		       b == 0xbb || (b == 0xba && reg >= 5);
	if (b < 0x40)
		return (b & 7) < 2 && (b >> 3) != 7;	/* op r/m, r: not cmp */
	return ((b >= 0x80 && b <= 0x83) && reg != 7) || b == 0x86 || b == 0x87 ||
	       ((b == 0xfe || b == 0xff) && reg < 2) || ((b == 0xf6 || b == 0xf7) &&
	       (reg == 2 || reg == 3)) || b == 0xc0 || b == 0xc1 || (b >= 0xd0 && b <= 0xd3);
}

static int is_prefix(uint8_t b)
{
	return b == 0xf0 || b == 0x66 || b == 0x67 || b == 0xf2 || b == 0xf3 || b == 0x26 ||
	       b == 0x2e || b == 0x36 || b == 0x3e || b == 0x64 || b == 0x65;
}

static void decode_modrm(const uint8_t *p, size_t n, size_t i, struct insn *d)
{
	if (i >= n)
		return;
	d->mod = p[i] >> 6;
	d->reg = (p[i] >> 3) & 7;
	d->rm = p[i] & 7;
	if (d->mod == 3 || (d->rex & 1))
		return;		/* no memory operand, or r8-r15 based */
	if (d->rm == 7)
		d->rdi = 1;
	if (d->rm == 4 && i + 1 < n && (p[i + 1] & 7) == 4)
		d->stack = 1;	/* SIB with base %rsp */
}

static int decode(const uint8_t *p, size_t n, struct insn *d)
{
	size_t i;

	memset(d, 0, sizeof(*d));
	for (i = 0; i < n && is_prefix(p[i]); i++)
		if (p[i] == 0x2e)
			d->cs = 1;
	if (i < n && (p[i] & 0xf0) == 0x40)
		d->rex = p[i++];
	if (i >= n)
		return 0;
	if (p[i] == 0x0f) {
		if (i + 1 >= n)
			return 0;
		d->op = (p[i + 1] == 0x38 || p[i + 1] == 0x3a ? 0x200 : 0x100) | p[i + 1];
		i += 2;
	} else {
		d->op = p[i++];
	}
	d->modrm = has_modrm(d->op);
	if (d->modrm) {
		decode_modrm(p, n, i, d);
		d->rmw = d->mod != 3 && rmw_op(d->op, d->reg);
	}
	else if (stack_op(d->op))
		d->stack = 1;
	d->imm8 = p[n - 1];
	if (n >= 4)
		d->imm32 = (int32_t)((uint32_t)p[n - 4] | (uint32_t)p[n - 3] << 8 |
				     (uint32_t)p[n - 2] << 16 | (uint32_t)p[n - 1] << 24);
	return 1;
}

/* ---- what is where ---- */

static const struct spin_fn *spin_fn_at(uint64_t addr)
{
	int i;

	for (i = 0; i < n_spin_fns; i++)
		if (addr >= spin_fns[i].start && addr < spin_fns[i].end)
			return &spin_fns[i];
	return NULL;
}

static const struct lock_exit *exit_at(uint64_t addr)
{
	int i;

	for (i = 0; i < n_exits; i++)
		if (exits[i].addr == addr)
			return &exits[i];
	return NULL;
}

static const struct irq_entry_point *irq_entry_at(uint64_t addr)
{
	int i;

	for (i = 0; i < n_irq_entries; i++)
		if (irq_entries[i].addr == addr)
			return &irq_entries[i];
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

/* ---- translation ---- */

static void exec_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_udata_cb_t cb, uint64_t u)
{
	qemu_plugin_register_vcpu_insn_exec_cb(insn, cb, QEMU_PLUGIN_CB_NO_REGS,
					       (void *)(uintptr_t)u);
}

static void mem_cb(struct qemu_plugin_insn *insn, enum mem_kind kind, int flags, uint64_t payload)
{
	qemu_plugin_register_vcpu_mem_cb(insn, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW,
					 mem_udata(kind, flags, payload));
}

/* Callbacks on a kernel instruction's execution: interrupts, lock functions. */
static void instrument_control(struct qemu_plugin_insn *insn, const uint8_t *p, size_t size,
			       uint64_t vaddr)
{
	const struct irq_entry_point *entry = irq_entry_at(vaddr);
	const struct spin_fn *fn = spin_fn_at(vaddr);
	const struct lock_exit *ex = exit_at(vaddr);
	uint64_t target = branch_target(p, size, vaddr);

	if (entry)
		exec_cb(insn, on_irq_entry, (uint64_t)entry->async);
	if (size == 2 && p[0] == 0x48 && p[1] == 0xcf)
		exec_cb(insn, on_iret, 0);
	if (fn && vaddr == fn->start)
		exec_cb(insn, on_lock_entry, (uint64_t)fn->trylock);
	if (ex)
		exec_cb(insn, on_lock_exit, (uint64_t)ex->acquired);
	if (vaddr >= slow_start && vaddr < slow_end && size == 1 && p[0] == 0xc3)
		exec_cb(insn, on_slow_return, 0);
	if (target && spin_fn_at(target) && !fn)
		exec_cb(insn, on_lock_call, vaddr);
}

static int access_flags(const struct insn *d)
{
	return (d->stack ? MF_STACK : 0) | (d->rmw ? MF_RMW : 0);
}

/* The memory callback of a kernel instruction that is not a marker. */
static void instrument_kernel_mem(struct qemu_plugin_insn *insn, const struct insn *d,
				  uint64_t vaddr)
{
	int flags = access_flags(d);

	if (d->rdi && spin_fn_at(vaddr))
		mem_cb(insn, MEM_LOCK_ARG, flags | (d->op == 0x1b1 ? MF_CMPXCHG : 0), vaddr);
	else if (d->op == 0xc6 && d->reg == 0 && d->mod != 3 && d->imm8 == 0)
		mem_cb(insn, MEM_ZERO_STORE, flags, vaddr);
	else if (d->op == 0x1ba && d->reg == 5 && d->mod != 3 && d->imm8 == 0)
		mem_cb(insn, MEM_BTS, flags, vaddr);
	else if (d->mod != 3 &&
		 ((d->op == 0x1ba && d->reg == 6 && d->imm8 == 0) ||
		  ((d->op == 0x80 || d->op == 0x83) && d->reg == 4 && !(d->imm8 & 1)) ||
		  (d->op == 0x81 && d->reg == 4 && !(d->imm32 & 1))))
		mem_cb(insn, MEM_BIT_RELEASE, flags, vaddr);
	else if (cfg.lines)
		mem_cb(insn, MEM_PLAIN, flags, vaddr);
}

static void instrument(struct qemu_plugin_insn *insn)
{
	const uint8_t *p = qemu_plugin_insn_data(insn);
	size_t size = qemu_plugin_insn_size(insn);
	uint64_t vaddr = qemu_plugin_insn_vaddr(insn);
	int kernel = vaddr >= KERNEL_START;
	struct insn d;
	int decoded;

	if (kernel)
		instrument_control(insn, p, size, vaddr);
	decoded = decode(p, size, &d);
	if (decoded && d.cs && d.modrm && d.reg == 7 && d.mod != 3) {
		/* Markers: `cs cmpb $KIND, m8` anywhere, `cs cmpq $NAME, m` in the kernel. */
		if (d.op == 0x80) {
			mem_cb(insn, MEM_BYTE_MARKER, 0, d.imm8);
			return;
		}
		if (kernel && d.op == 0x81) {
			mem_cb(insn, MEM_CLASS_MARKER, 0, (uint64_t)d.imm32);
			return;
		}
	}
	qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &insns, 1);
	if (kernel && decoded)
		instrument_kernel_mem(insn, &d, vaddr);
	else if (cfg.lines)
		mem_cb(insn, MEM_PLAIN, decoded ? access_flags(&d) : 0, vaddr);
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);

	(void)id;
	if (n_vcpus > 1)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, on_tb, QEMU_PLUGIN_CB_NO_REGS, NULL);
	for (i = 0; i < n; i++)
		instrument(qemu_plugin_tb_get_insn(tb, i));
}

/* ---- configuration ---- */

static int fail(const char *path, int lineno, const char *what)
{
	fprintf(stderr, "tcg-cs: %s:%d: %s\n", path, lineno, what);
	return -1;
}

static const char *parse_lock_fn(const char *kind, const char *rest)
{
	uint64_t a, b;
	int n;

	if (!strcmp(kind, "spin")) {
		if (sscanf(rest, "%" SCNx64 " %" SCNx64 " %d", &a, &b, &n) != 3 || a >= b)
			return "expected: spin START END TRYLOCK NAME";
		if (n_spin_fns == MAX_SPIN_FNS)
			return "too many lock functions";
		spin_fns[n_spin_fns++] = (struct spin_fn){ a, b, n };
	} else if (!strcmp(kind, "exit")) {
		if (sscanf(rest, "%" SCNx64 " %d", &a, &n) != 2)
			return "expected: exit ADDR ACQUIRED";
		if (n_exits == MAX_EXITS)
			return "too many lock function exits";
		exits[n_exits++] = (struct lock_exit){ a, n };
	} else if (!strcmp(kind, "slowpath")) {
		if (sscanf(rest, "%" SCNx64 " %" SCNx64, &a, &b) != 2 || a >= b)
			return "expected: slowpath START END";
		slow_start = a;
		slow_end = b;
	} else {
		if (sscanf(rest, "%" SCNx64 " %d", &a, &n) != 2)
			return "expected: irq ADDR ASYNC NAME";
		if (n_irq_entries == MAX_IRQ_ENTRIES)
			return "too many interrupt entry points";
		irq_entries[n_irq_entries++] = (struct irq_entry_point){ a, n };
	}
	return NULL;
}

static const char *parse_name(const char *kind, const char *rest)
{
	char role[32];
	uint64_t a;
	int at, flags;

	if (sscanf(rest, "%" SCNx64 " %31s %n", &a, role, &at) != 2 || !rest[at])
		return "expected: name|static ADDR ROLE STRING";
	flags = strcmp(role, "-") ? CLASS_ROLE : 0;
	if (!strcmp(role, "hash"))
		flags |= CLASS_HASH;
	if (!strcmp(kind, "static"))
		reg_set(a, new_class(rest + at, flags));
	else
		add_name(a, new_class(rest + at, flags));
	return NULL;
}

static const char *parse_knob(const char *kind, const char *rest)
{
	uint64_t a, b;

	if (!strcmp(kind, "trace")) {
		uint64_t stride;

		if (sscanf(rest, "%" SCNx64 " %" SCNu64 " %" SCNu64, &a, &b, &stride) != 3 ||
		    !stride)
			return "expected: trace SITE COUNT STRIDE";
		if (cfg.n_trace_sites == MAX_TRACE_SITES)
			return "too many trace lines";
		cfg.trace_sites[cfg.n_trace_sites] = a;
		cfg.trace_count[cfg.n_trace_sites] = b;
		cfg.trace_stride[cfg.n_trace_sites++] = stride;
		return NULL;
	}
	if (sscanf(rest, "%" SCNu64, &a) != 1)
		return "expected a number";
	if (!strcmp(kind, "lines"))
		cfg.lines = a != 0;
	else if (!strcmp(kind, "cold"))
		cfg.cold_lines = a > UINT32_MAX - 1 ? UINT32_MAX - 1 : (uint32_t)a;
	else
		cfg.retry_horizon = a;
	return NULL;
}

static const char *parse_line(char *line, FILE **out)
{
	char kind[16];
	int used;

	if (sscanf(line, "%15s %n", kind, &used) != 1)
		return "no keyword";
	if (!strcmp(kind, "out")) {
		*out = fopen(line + used, "w");
		return *out ? NULL : "cannot write the output file";
	}
	if (!strcmp(kind, "spin") || !strcmp(kind, "exit") || !strcmp(kind, "slowpath") ||
	    !strcmp(kind, "irq"))
		return parse_lock_fn(kind, line + used);
	if (!strcmp(kind, "name") || !strcmp(kind, "static"))
		return parse_name(kind, line + used);
	if (!strcmp(kind, "lines") || !strcmp(kind, "cold") || !strcmp(kind, "retry_horizon") ||
	    !strcmp(kind, "trace"))
		return parse_knob(kind, line + used);
	return "unknown keyword";
}

static int read_config(const char *path, FILE **out)
{
	char line[4096];
	FILE *f = fopen(path, "r");
	const char *error;
	int lineno = 0;

	if (!f) {
		perror(path);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		line[strcspn(line, "\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		error = parse_line(line, out);
		if (error) {
			fclose(f);
			return fail(path, lineno, error);
		}
	}
	fclose(f);
	if (!*out)
		return fail(path, lineno, "no 'out' line");
	if (!n_spin_fns || !n_exits)
		return fail(path, lineno, "no 'spin' or no 'exit' line");
	if (cfg.lines && !cfg.cold_lines)
		return fail(path, lineno, "'lines 1' needs 'cold N'");
	sort_names();
	return 0;
}

/* ---- setup ---- */

static void at_exit(qemu_plugin_id_t id, void *udata)
{
	(void)id;
	(void)udata;
	output_exit();
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
					   int argc, char **argv)
{
	const char *config = NULL;
	FILE *out = NULL;
	int i;

	if (!info->system_emulation || info->system.max_vcpus > MAX_VCPUS) {
		fprintf(stderr, "tcg-cs: needs system emulation with at most %d vCPUs\n", MAX_VCPUS);
		return -1;
	}
	n_vcpus = info->system.max_vcpus;
	for (i = 0; i < argc; i++) {
		if (strncmp(argv[i], "config=", 7)) {
			fprintf(stderr, "tcg-cs: unknown argument %s\n", argv[i]);
			return -1;
		}
		config = argv[i] + 7;
	}
	if (!config) {
		fprintf(stderr, "tcg-cs: usage: -plugin libtcgcs.so,config=FILE\n");
		return -1;
	}
	cfg.retry_horizon = UINT64_MAX;
	locks_init();
	if (read_config(config, &out))
		return -1;
	if (cfg.lines)
		lines_init();
	output_open(out);
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
