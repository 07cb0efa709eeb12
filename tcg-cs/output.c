// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * tcg-cs: windows the guest opens and closes, the statistics of each
 * window by (class, call site), and what the plugin writes (plugin.c
 * describes the format).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tcgcs.h"

/* Markers: the guest side is workloads/src/csmark.h and the kernel patch. */
#define MARK_BEGIN		0xb1
#define MARK_END		0xb2
#define MARK_LABEL		0xb3
#define MARK_LABEL_END		0xb4

#define MAX_LABEL		128

struct cs_stat {
	uint64_t site, n, sum, min, max, irq, interrupted;
	uint64_t read, written, prev, lockline, cold, chain;
	uint64_t tl_failed, tl_abandoned;
	uint64_t tl_retries, tl_retry_failures, tl_retry_insns;	/* episodes that did not move on */
	uint64_t tl_skips, tl_skip_insns;			/* and those that did */
	uint64_t *hold_hist, *wait_hist;	/* HIST_BUCKETS counts each, allocated when used */
	uint32_t cls;
	int used;
};

static FILE *out;
static struct cs_stat *stats;
static size_t stats_cap, stats_used;

static const char *const note_names[N_NOTES] = {
	"acquire_on_held", "trylock_failed", "bit_on_held", "held_overflow",
	"held_at_end", "class_markers", "unnamed_markers", "not_opened", "reopened",
	"pending_overflow", "exit_without_entry", "slow_mismatch", "no_hwaddr",
	"beyond_memory", "writer_forgotten", "episode_overflow", "slow_acquired",
	"wait_unseen",
};
static uint64_t notes[N_NOTES];		/* this window */
static uint64_t boot_notes[N_NOTES];	/* the whole boot */

static int window_open;
static int labelling;
static uint64_t window_begin, window_insns, window_irq_begin, window_irq;
static uint64_t window_role_begin, window_role, window_accesses, window_cold;
static char label[MAX_LABEL + 1];
static size_t label_len;
static uint64_t windows_written;
static uint64_t byte_markers;	/* executed, the whole boot */

static FILE *trace;		/* this window's traced sections, written with it */
static char *trace_text;
static size_t trace_size;
static uint64_t traced[MAX_TRACE_SITES];	/* sections traced in this window, per site */
static uint64_t seen[MAX_TRACE_SITES];		/* and seen */

void note(enum note n)
{
	notes[n]++;
	boot_notes[n]++;
}

int window_is_open(void)
{
	return window_open;
}

/* ---- per-window statistics by (class, site) ---- */

static void stats_reset(void)
{
	size_t i;

	for (i = 0; i < stats_cap; i++) {
		free(stats[i].hold_hist);
		free(stats[i].wait_hist);
	}
	memset(stats, 0, stats_cap * sizeof(*stats));
	stats_used = 0;
}

static size_t stat_index(uint32_t cls, uint64_t site)
{
	size_t i = ((site ^ ((uint64_t)cls << 40)) * 0x9e3779b97f4a7c15ull) >> 32;

	for (i &= stats_cap - 1; stats[i].used && (stats[i].cls != cls || stats[i].site != site);
	     i = (i + 1) & (stats_cap - 1))
		;
	return i;
}

static void stats_grow(void)
{
	struct cs_stat *old = stats;
	size_t cap = stats_cap, j;

	stats_cap = cap ? 2 * cap : 4096;
	stats = calloc(stats_cap, sizeof(*stats));
	if (!stats) {
		fprintf(stderr, "tcg-cs: out of memory\n");
		exit(1);
	}
	for (j = 0; j < cap; j++)
		if (old[j].used)
			stats[stat_index(old[j].cls, old[j].site)] = old[j];
	free(old);
}

static struct cs_stat *stat_of(uint32_t cls, uint64_t site)
{
	struct cs_stat *s;

	if ((stats_used + 1) * 10 > stats_cap * 7)
		stats_grow();
	s = &stats[stat_index(cls, site)];
	if (!s->used) {
		s->used = 1;
		s->cls = cls;
		s->site = site;
		stats_used++;
	}
	return s;
}

/* ---- histograms ---- */

unsigned int hist_bucket(uint64_t value)
{
	unsigned int e;

	if (value < HIST_SUB)
		return (unsigned int)value;
	e = 63 - (unsigned int)__builtin_clzll(value);	/* value's power of 2, >= HIST_SUB_BITS */
	return HIST_SUB * (e - HIST_SUB_BITS + 1) + (unsigned int)(value >> (e - HIST_SUB_BITS)) -
	       HIST_SUB;
}

/* The smallest value of a bucket. */
uint64_t hist_low(unsigned int bucket)
{
	unsigned int e = bucket / HIST_SUB + HIST_SUB_BITS - 1;

	if (bucket < HIST_SUB)
		return bucket;
	return (uint64_t)(HIST_SUB + bucket % HIST_SUB) << (e - HIST_SUB_BITS);
}

static void hist_add(uint64_t **hist, uint64_t value)
{
	if (!*hist) {
		*hist = calloc(HIST_BUCKETS, sizeof(**hist));
		if (!*hist) {
			fprintf(stderr, "tcg-cs: out of memory\n");
			exit(1);
		}
	}
	(*hist)[hist_bucket(value)]++;
}

static void trace_section(const struct held *h, uint64_t len, const struct section_lines *l)
{
	fprintf(trace, "tsec\t%" PRIu64 "\t%s\t%" PRIx64 "\t%" PRIx64 "\t%" PRIu64 "\t%" PRIu64
		"\t%u\t%u\t%u\t%u\t%d\t%u\n", h->id, class_name(h->cls), h->site, h->addr,
		h->start, len, l->read, l->written, l->prev, l->cold, l->lockline_written, l->chain);
	lines_trace(trace, h);
}

/* Whether to trace this section: its site is traced and has sections left in this window. */
static int trace_wanted(uint64_t site)
{
	int k;

	for (k = 0; trace && k < cfg.n_trace_sites; k++)
		if (cfg.trace_sites[k] == site && traced[k] < cfg.trace_count[k] &&
		    seen[k]++ % cfg.trace_stride[k] == 0)
			return (int)++traced[k];
	return 0;
}

void record_section(const struct held *h, uint64_t len, uint64_t irq,
		    const struct section_lines *l)
{
	struct cs_stat *s = stat_of(h->cls, h->site);

	if (!s->n || len < s->min)
		s->min = len;
	if (len > s->max)
		s->max = len;
	s->n++;
	s->sum += len;
	s->irq += irq;
	s->interrupted += irq > 0;
	s->read += l->read;
	s->written += l->written;
	s->prev += l->prev;
	s->lockline += (uint64_t)l->lockline_written;
	s->cold += l->cold;
	s->chain += l->chain;
	hist_add(&s->hold_hist, len);
	if (trace_wanted(h->site))
		trace_section(h, len, l);
}

void record_wait(uint32_t cls, uint64_t site, uint64_t len)
{
	if (window_open)
		hist_add(&stat_of(cls, site)->wait_hist, len);
}

void record_trylock_failure(uint32_t cls, uint64_t site)
{
	if (window_open)
		stat_of(cls, site)->tl_failed++;
}

void record_episode(const struct episode *e, uint64_t insns_spent, int abandoned)
{
	struct cs_stat *s;

	if (!window_open)
		return;
	s = stat_of(e->cls, e->site);
	if (abandoned) {
		s->tl_abandoned++;
		return;
	}
	if (e->moved_on) {
		s->tl_skips++;
		s->tl_skip_insns += insns_spent;
		return;
	}
	s->tl_retries++;
	s->tl_retry_failures += e->failures;
	s->tl_retry_insns += insns_spent;
}

/* ---- writing ---- */

/* "hist LABEL WHAT CLASS SITE LOW:COUNT,...": the buckets in use, by their smallest value. */
static void write_hist(const struct cs_stat *s, const char *what, const uint64_t *hist)
{
	const char *sep = "";
	unsigned int b;

	fprintf(out, "hist\t%s\t%s\t%s\t%" PRIx64 "\t", label, what, class_name(s->cls), s->site);
	for (b = 0; b < HIST_BUCKETS; b++) {
		if (hist[b]) {
			fprintf(out, "%s%" PRIu64 ":%" PRIu64, sep, hist_low(b), hist[b]);
			sep = ",";
		}
	}
	fputc('\n', out);
}

static void write_stat(const struct cs_stat *s)
{
	if (s->n)
		fprintf(out, "cs\t%s\t%s\t%" PRIx64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
			"\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
			"\t%" PRIu64 "\t%" PRIu64 "\n", label, class_name(s->cls), s->site, s->n, s->sum,
			s->min, s->max, s->irq, s->interrupted, s->read, s->written, s->prev,
			s->lockline, s->cold, s->chain);
	if (s->hold_hist)
		write_hist(s, "hold", s->hold_hist);
	if (s->wait_hist)
		write_hist(s, "wait", s->wait_hist);
	if (s->tl_failed || s->tl_retries || s->tl_skips || s->tl_abandoned)
		fprintf(out, "trylock\t%s\t%s\t%" PRIx64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
			"\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n", label,
			class_name(s->cls), s->site, s->tl_failed, s->tl_retries,
			s->tl_retry_failures, s->tl_retry_insns, s->tl_skips, s->tl_skip_insns,
			s->tl_abandoned);
}

/* Traced lines are "KIND\tREST": written as "KIND\tLABEL\tREST". */
static void write_trace(void)
{
	char *line, *next;

	if (!trace)
		return;
	fflush(trace);
	for (line = trace_text; line && *line; line = next) {
		char *tab = strchr(line, '\t');

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (tab)
			fprintf(out, "%.*s\t%s%s\n", (int)(tab - line), line, label, tab);
	}
}

static void write_window(void)
{
	size_t i;
	int n;

	label[label_len] = '\0';
	fprintf(out, "window\t%s\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64
		"\n", label, window_insns, window_irq, window_role, window_accesses, window_cold);
	for (i = 0; i < stats_cap; i++)
		if (stats[i].used)
			write_stat(&stats[i]);
	for (n = 0; n < N_NOTES; n++)
		if (notes[n])
			fprintf(out, "note\t%s\t%s\t%" PRIu64 "\n", label, note_names[n], notes[n]);
	write_trace();
	fflush(out);
	windows_written++;
}

/* ---- windows ---- */

static void trace_restart(void)
{
	if (trace)
		fclose(trace);
	free(trace_text);
	trace = NULL;
	trace_text = NULL;
	memset(traced, 0, sizeof(traced));
	memset(seen, 0, sizeof(seen));
	if (cfg.n_trace_sites)
		trace = open_memstream(&trace_text, &trace_size);
}

static void window_start(void)
{
	stats_reset();
	memset(notes, 0, sizeof(notes));
	trace_restart();
	window_begin = insns;
	window_irq_begin = irq_insns_all();
	window_role_begin = role_held_insns();
	accesses = cold_accesses = 0;
}

void byte_marker(int kind, uint64_t addr)
{
	byte_markers++;
	if (kind == MARK_BEGIN) {
		if (window_open)
			note(NOTE_REOPENED);
		window_start();
		window_open = 1;
		labelling = 0;
	} else if (kind == MARK_END) {
		if (!window_open) {
			window_start();
			note(NOTE_NOT_OPENED);
		}
		window_insns = insns - window_begin;
		window_irq = irq_insns_all() - window_irq_begin;
		window_role = role_held_insns() - window_role_begin;
		window_accesses = accesses;
		window_cold = cold_accesses;
		notes[NOTE_HELD_AT_END] = (uint64_t)held_at_end();
		window_open = 0;
		labelling = 1;
		label_len = 0;
	} else if (kind == MARK_LABEL) {
		if (labelling && label_len < MAX_LABEL)
			label[label_len++] = (char)(addr & 0xff);
	} else if (kind == MARK_LABEL_END) {
		if (labelling)
			write_window();
		labelling = 0;
	} else {
		range_marker(kind, addr);
	}
}

void output_open(FILE *f)
{
	out = f;
	stats_grow();
	fprintf(out, "tcg-cs\t3\n");
	fprintf(out, "config\tvcpus\t%d\n", n_vcpus);
	fprintf(out, "config\tlines\t%d\n", cfg.lines);
	fprintf(out, "config\tcold_lines\t%" PRIu32 "\n", cfg.cold_lines);
	fprintf(out, "config\tretry_horizon\t%" PRIu64 "\n", cfg.retry_horizon);
	fprintf(out, "config\thist_sub_buckets\t%d\n", HIST_SUB);
}

void output_exit(void)
{
	int n;

	fprintf(out, "boot\tinstructions\t%" PRIu64 "\n", insns);
	fprintf(out, "boot\tinterrupt_instructions\t%" PRIu64 "\n", irq_insns_all());
	fprintf(out, "boot\twindows\t%" PRIu64 "\n", windows_written);
	fprintf(out, "boot\tbyte_markers\t%" PRIu64 "\n", byte_markers);
	fprintf(out, "boot\tregistered_locks\t%zu\n", reg_count());
	fprintf(out, "boot\tclasses\t%" PRIu32 "\n", n_classes_made());
	fprintf(out, "boot\tranges\t%d\n", n_ranges_made());
	for (n = 0; n < N_NOTES; n++)
		fprintf(out, "boot\t%s\t%" PRIu64 "\n", note_names[n], boot_notes[n]);
	fclose(out);
}
