/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Windows of the tcg-cs plugin (tcg-cs/plugin.c): the guest says where a
 * timed phase begins and ends, so the plugin counts instructions and
 * critical sections over the same window as lock_stat.
 *
 * The plugin sees instruction bytes and memory addresses, not registers.
 * A marker is `cs cmpb $KIND, ADDR`: a compare no compiler emits with a
 * CS override, which the plugin recognises by its bytes (KIND is the
 * immediate) and which is a plain one-byte load anywhere else. The label
 * travels one byte per marker, as the offset of ADDR in a 256-byte page.
 */
#ifndef INODE_DUEL_CSMARK_H
#define INODE_DUEL_CSMARK_H

#define CSMARK_BEGIN		0xb1
#define CSMARK_END		0xb2
#define CSMARK_LABEL		0xb3
#define CSMARK_LABEL_END	0xb4

#define CSMARK(kind, addr)						\
	__asm__ __volatile__(".byte 0x2e\n\tcmpb %0, %1"		\
			     : : "i" (kind), "m" (*(const volatile char *)(addr)))

static const char csmark_page[256] __attribute__((aligned(256)));

static inline void csmark_begin(void)
{
	CSMARK(CSMARK_BEGIN, csmark_page);
}

static inline void csmark_end(void)
{
	CSMARK(CSMARK_END, csmark_page);
}

/* After csmark_end(): the window's name, e.g. "s01.create" (step.phase). */
static inline void csmark_label(const char *label)
{
	for (; *label; label++)
		CSMARK(CSMARK_LABEL, &csmark_page[(unsigned char)*label]);
	CSMARK(CSMARK_LABEL_END, csmark_page);
}

#endif
