/* fuzz_page.c - libFuzzer target: arbitrary bytes as a ring-buffer data page.
 *
 * SPEC section 4 (defensive parsing): every length, offset and index read
 * from page memory is validated; a corrupted page yields an error, never an
 * out-of-bounds access, an endless loop or garbage handed out as an event.
 *
 * Input: byte 0 chooses the page size (64 .. 4096), 8-byte alignment, where
 * the bytes go and the order of the reader calls; the rest is the page
 * (u64 time_stamp, long commit, data[]), zero-filled when short.
 *
 * Part 1: the implementation's own record parser (ringbuf__parse, static, so
 * this file defines RINGBUF_IMPLEMENTATION) walks the page the way the reader
 * does, over a heap copy of exactly `commit` bytes: AddressSanitizer catches
 * any read past the commit. Every record must make progress and stay inside.
 *
 * Part 2: the same bytes are injected into a real buffer (through the
 * internals) -- as the head page the reader will swap in, or over the unread
 * part of the reader page after a partial read -- and every reader runs on it:
 * consume, peek, read_page, read_page_ref (its lent page walked again: the
 * same end, as many events as it counted), the iterator, the statistics, and
 * a writer that pushes the head over the page in overwrite mode (which counts
 * its events).
 * The bytes past the page's commit are poisoned for AddressSanitizer while the
 * readers run. Checks: each call returns an event, 0 or a negative error; an
 * event lies inside [data, data + commit); read_page returns at most the data
 * size; nothing loops forever (every loop is bounded here and libFuzzer's
 * -timeout catches a hang).
 */
#define RINGBUF_TESTING 1
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#endif
#endif
#ifndef POISON
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define CHECK(c)                                                                  \
	do {                                                                      \
		if (!(c)) {                                                       \
			fprintf(stderr, "fuzz_page: check failed: %s (line %d)\n", #c, \
				__LINE__);                                        \
			abort();                                                  \
		}                                                                 \
	} while (0)

static uint64_t g_now;
static uint64_t fuzz_clock(void *ctx)
{
	(void)ctx;
	return g_now += 7;
}

/* Part 1: parse like the reader, over exactly commit bytes. */
static void parse_loop(const uint8_t *page, size_t page_size, bool align8)
{
	const size_t hdr = 8 + sizeof(long);
	uint32_t bsize = (uint32_t)(page_size - hdr), commit, off = 0, n = 0;
	unsigned long raw;
	unsigned char *data;
	struct ringbuf__rec r;

	memcpy(&raw, page + 8, sizeof raw);
	commit = (uint32_t)(raw & RINGBUF__COMMIT_MASK);
	if (commit > bsize)
		return; /* the reader refuses it before parsing (checked in part 2) */
	data = malloc(commit ? commit : 1);
	CHECK(data);
	memcpy(data, page + hdr, commit);
	while (off < commit) {
		if (ringbuf__parse(data, commit, off, align8, &r) < 0)
			break;
		CHECK(r.len >= 4 || r.null_pad);
		CHECK(r.len <= commit - off);
		CHECK(r.hdr <= r.len || r.null_pad);
#ifndef FUZZ_SKIP_KNOWN
		/* 8-byte mode: every record keeps the 8-byte grid, or the
		 * payloads after it are handed out misaligned */
		CHECK(!align8 || r.null_pad || (r.len & 7) == 0);
#endif
		if (r.null_pad)
			break;
		off += r.len;
		CHECK(++n <= commit / 4);
	}
	free(data);
}

/* ---- part 2 ---------------------------------------------------------------- */

static struct ringbuf *g_rb;
static unsigned char *g_poison_at;
static size_t g_poison_len;

static void poison_tail(uint32_t idx)
{
	struct ringbuf__dpage *dp = ringbuf__dp(g_rb, 0, idx);
	unsigned long raw = (unsigned long)atomic_load(&dp->commit);
	uint32_t commit = (uint32_t)(raw & RINGBUF__COMMIT_MASK);
	if (commit > g_rb->bsize)
		commit = g_rb->bsize; /* refused by the reader anyway; poison nothing extra */
	g_poison_at = dp->data + commit;
	g_poison_len = g_rb->bsize - commit;
	POISON(g_poison_at, g_poison_len);
}

static void unpoison(void)
{
	if (g_poison_at)
		UNPOISON(g_poison_at, g_poison_len);
	g_poison_at = NULL;
}

/* A writer is about to reuse the page it just counted: lift the poison. */
static void tp_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	(void)rb;
	(void)cpu;
	(void)ctx;
	if (point == RINGBUF__TP_H1_COUNTED)
		unpoison();
}

static void check_record(const struct ringbuf_record *rec)
{
	/* the event must lie inside the reader page, below its commit */
	struct ringbuf__cpu *c = ringbuf__cpu(g_rb, 0);
	uint32_t rp = atomic_load(&c->reader_page);
	const unsigned char *d = ringbuf__dp(g_rb, 0, rp)->data;
	uint32_t commit = (uint32_t)((unsigned long)atomic_load(&ringbuf__dp(g_rb, 0, rp)->commit) &
				     RINGBUF__COMMIT_MASK);
	const unsigned char *p = rec->data;
	CHECK(rec->cpu == 0);
	CHECK(commit <= g_rb->bsize);
	CHECK(p >= d && p + rec->len <= d + commit);
#ifndef FUZZ_SKIP_KNOWN
	CHECK((uintptr_t)p % ((g_rb->flags & RINGBUF_F_ALIGN8) ? 8 : 4) == 0);
#endif
}

/* ringbuf_read_page_ref: the lent page's records, walked again here by
 * ringbuf__parse, end where it says and hold as many events as it counted
 * (its walk takes runs of the common record in ringbuf__event_run). */
static void lend(void)
{
	struct ringbuf__cpu *c = ringbuf__cpu(g_rb, 0);
	uint64_t before = atomic_load(&c->read_events), events = 0;
	const unsigned char *lent = NULL;
	uint32_t off = 0, end = 0;
	struct ringbuf__rec e;
	int r;
	/* the count of losses may go right after the data, past the commit */
	if (g_poison_at)
		UNPOISON(g_poison_at, g_poison_len < sizeof(long) ? g_poison_len : sizeof(long));
	r = ringbuf_read_page_ref(g_rb, 0, (const void **)&lent);
	CHECK(r <= (int)g_rb->bsize);
	if (r <= 0)
		return;
	CHECK(lent);
	lent += RINGBUF__HDR_SIZE;
	while (off < (uint32_t)r) {
		CHECK(ringbuf__parse(lent, (uint32_t)r, off, (g_rb->flags & RINGBUF_F_ALIGN8) != 0, &e) == 0);
		CHECK(!e.null_pad);
		off += e.len;
		if (e.type == 0) {
			events++;
			end = off;
		}
	}
	CHECK(end == (uint32_t)r);
	CHECK(atomic_load(&c->read_events) - before == events);
}

static void readers(unsigned order, unsigned char *out)
{
	struct ringbuf_record rec;
	struct ringbuf_stats st;
	int r, i, limit = (int)g_rb->bsize / 4 + 8;

	if ((order & 3) == 3)
		lend(); /* a lent page first (then read_page takes the next) */
	if (order & 1) {
		/* a whole page first */
		r = ringbuf_read_page(g_rb, 0, out, g_rb->page_size, (order & 2) ? RINGBUF_READ_FULL : 0);
		CHECK(r <= (int)g_rb->bsize);
	}
	r = ringbuf_peek(g_rb, 0, &rec);
	CHECK(r <= 1);
	if (r == 1)
		check_record(&rec);
	{
		struct ringbuf_iter *it;
		if (ringbuf_iter_start(g_rb, 0, &it) == 0) {
			for (i = 0; i < 4 * limit && (r = ringbuf_iter_next(it, &rec)) == 1; i++)
				CHECK(rec.len <= g_rb->bsize);
			CHECK(r <= 1);
			ringbuf_iter_finish(it);
		}
	}
	(void)ringbuf_stats_cpu(g_rb, 0, &st);
	for (i = 0; i < limit; i++) {
		r = ringbuf_consume(g_rb, 0, &rec);
		CHECK(r <= 1);
		if (r != 1)
			break;
		check_record(&rec);
	}
	r = ringbuf_read_page(g_rb, 0, out, g_rb->page_size, 0);
	CHECK(r <= (int)g_rb->bsize);
	(void)ringbuf_stats_cpu(g_rb, 0, &st);
}

static void inject(const uint8_t *page, size_t page_size, bool align8, int mode, unsigned where,
		   unsigned order)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf__cpu *c;
	struct ringbuf__dpage *dp;
	unsigned char *out;
	uint32_t payload[8] = {1, 2, 3, 4, 5, 6, 7, 8}, target;
	int i;

	cfg.page_size = page_size;
	cfg.size_per_cpu = 3 * page_size;
	cfg.mode = mode;
	cfg.flags = align8 ? RINGBUF_F_ALIGN8 : 0;
	cfg.clock = fuzz_clock;
	g_now = 1000;
	CHECK(ringbuf_create(&cfg, &g_rb) == 0);
	c = ringbuf__cpu(g_rb, 0);
	out = malloc(page_size);
	CHECK(out);

	/* fill page 0 so that the tail moves on: page 0 becomes a complete,
	 * committed head page */
	for (i = 0; i < 1000 && atomic_load(&c->tail_page) == 0; i++)
		CHECK(ringbuf_write(g_rb, 0, payload, 12) == 0);
	CHECK(atomic_load(&c->tail_page) != 0);

	if (where == 0) {
		/* the bytes become the head page */
		target = 0;
	} else {
		/* a partial read swaps page 0 in; the bytes replace its unread part */
		struct ringbuf_record rec;
		CHECK(ringbuf_consume(g_rb, 0, &rec) == 1);
		target = atomic_load(&c->reader_page);
		CHECK(target == 0);
	}
	dp = ringbuf__dp(g_rb, 0, target);
	if (where == 0) {
		uint64_t ts;
		long commit;
		memcpy(&ts, page, sizeof ts);
		memcpy(&commit, page + 8, sizeof commit);
		atomic_store(&dp->time_stamp, ts);
		atomic_store(&dp->commit, commit);
		memcpy(dp->data, page + 16, g_rb->bsize);
	} else {
		/* keep what was read (and the page header's time stamp); the fuzz
		 * bytes give the commit and the data after the read position */
		uint32_t rd = c->read;
		long commit;
		memcpy(&commit, page + 8, sizeof commit);
		atomic_store(&dp->commit, commit);
		memcpy(dp->data + rd, page + 16, g_rb->bsize - rd);
	}

	if (order & 4) {
		/* overwrite mode: writers wrap around and push the head over the
		 * page (counting its events) before any reader looks at it */
		poison_tail(target);
		ringbuf__set_testpoint_hook(tp_hook, NULL);
		for (i = 0; i < 64; i++)
			(void)ringbuf_write(g_rb, 0, payload, (size_t)(4 + (i % 7) * 4));
		ringbuf__set_testpoint_hook(NULL, NULL);
		unpoison();
	}
	if (atomic_load(&c->reader_page) == target || target == 0) {
		/* only poison a page nobody writes to any more */
		uint32_t tp = atomic_load(&c->tail_page);
		if (tp != target)
			poison_tail(target);
	}
	readers(order, out);
	unpoison();
	/* writers go on after the reader met the page (recording may be off
	 * after a corruption report: the writes then fail, counted) */
	for (i = 0; i < 32; i++)
		(void)ringbuf_write(g_rb, 0, payload, 16);
	readers(order >> 1, out);
	free(out);
	ringbuf_destroy(g_rb);
	g_rb = NULL;
}

static void quiet_warn(const char *what, unsigned cpu, void *ctx)
{
	(void)what;
	(void)cpu;
	(void)ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static _Alignas(16) unsigned char page[4096];
	unsigned ctl;
	size_t page_size;
	bool align8;

	if (size < 1)
		return 0;
	ctl = data[0];
	page_size = (size_t)64 << (ctl & 7); /* 64 .. 8192 */
	if (page_size > sizeof page)
		page_size = sizeof page;
	align8 = (ctl >> 3) & 1;
	memset(page, 0, sizeof page);
	memcpy(page, data + 1, size - 1 < page_size ? size - 1 : page_size);
	ringbuf_set_warn_hook(quiet_warn, NULL);

	parse_loop(page, page_size, align8);
	inject(page, page_size, align8, (ctl >> 4) & 1 ? RINGBUF_MODE_PRODUCER_CONSUMER : RINGBUF_MODE_OVERWRITE,
	       (ctl >> 5) & 1, ctl >> 6 | ((ctl & 0x10) ? 0 : 4));
	return 0;
}
