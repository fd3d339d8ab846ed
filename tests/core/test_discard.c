/* test_discard.c - ringbuf_discard(): roll back, or turn into padding
 * SPDX-License-Identifier: MIT
 *
 * A discarded event that is the last reservation on the tail page is rolled
 * back (the bytes are reused, the next event gets an absolute TIME_STAMP); one
 * with something reserved after it becomes PADDING of the same length, keeping
 * its delta so what follows keeps its exact time. Pages are checked byte by
 * byte with the independent walker tests/pagewalk.h and every time stamp comes
 * from a clock the test controls.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pagewalk.h"
#include "fixture.h" /* now, test_clock, g_rb, teardown, stats */

/* ---- fixtures ----------------------------------------------------------- */

/* one CPU (the default) of npages pages of page bytes, with flags */
static struct ringbuf *mk_flags(size_t page, unsigned npages, unsigned flags)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	cfg.page_size = page;
	cfg.size_per_cpu = page * npages;
	cfg.flags = flags;
	return fixture_create(&cfg);
}

/* Reserve len bytes at clock t and fill them with byte v. */
static uint8_t *res(struct ringbuf *rb, size_t len, uint64_t t, uint8_t v)
{
	uint8_t *p;
	now = t;
	p = ringbuf_reserve(rb, 0, len);
	assert_non_null(p);
	memset(p, v, len);
	return p;
}

static void wr(struct ringbuf *rb, size_t len, uint64_t t, uint8_t v)
{
	uint8_t *p = res(rb, len, t, v);
	ringbuf_commit(rb, 0, p);
}

/* Consume the next event: payload of len bytes of v, time stamp ts. */
static void expect(struct ringbuf *rb, size_t len, uint8_t v, uint64_t ts)
{
	struct ringbuf_record rec;
	size_t i;
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
	assert_true(rec.len >= len);
	for (i = 0; i < len; i++)
		assert_int_equal(((const uint8_t *)rec.data)[i], v);
	assert_int_equal(rec.ts, ts);
	assert_int_equal(rec.lost, 0);
}

static void expect_empty(struct ringbuf *rb)
{
	struct ringbuf_record rec;
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 0);
}

/* ---- page collection (pagewalk) ----------------------------------------- */

#define MAXR 256
struct rec {
	int kind;
	unsigned page;    /* ordinal in walk order: 0 = reader page, 1.. ring from the head */
	uint32_t offset, len, payload_len, type_len;
	uint64_t ts;
	uint8_t first;    /* first payload byte (data) */
};
struct coll {
	bool align8;
	unsigned npages;
	struct pw_page info[16];
	struct rec r[MAXR];
	unsigned n;
	unsigned cur;
};

static int coll_rec(const struct pw_record *r, void *ctx)
{
	struct coll *c = ctx;
	struct rec *x;
	assert_true(c->n < MAXR);
	x = &c->r[c->n++];
	x->kind = r->kind;
	x->page = c->cur;
	x->offset = r->offset;
	x->len = r->len;
	x->payload_len = r->payload_len;
	x->type_len = r->type_len;
	x->ts = r->ts;
	x->first = r->payload ? r->payload[0] : 0;
	return 0;
}

static int coll_page(const void *page, size_t ps, int role, void *ctx)
{
	struct coll *c = ctx;
	const char *err = NULL;
	int rc;
	assert_true(c->npages < 16);
	assert_int_equal(role, c->npages == 0 ? RINGBUF__PAGE_READER : RINGBUF__PAGE_RING);
	c->cur = c->npages;
	rc = pw_walk_page(page, ps, c->align8, coll_rec, c, &c->info[c->npages], &err);
	if (rc != 0)
		fail_msg("page %u: walk failed (%d): %s", c->npages, rc, err ? err : "?");
	c->npages++;
	return 0;
}

static void collect(struct ringbuf *rb, struct coll *c, bool align8)
{
	memset(c, 0, sizeof *c);
	c->align8 = align8;
	assert_int_equal(ringbuf__walk_pages(rb, 0, coll_page, c), 0);
}

/* The records of one page, in order, must be exactly these. */
struct want {
	int kind;
	uint32_t offset, len;
	uint64_t ts;   /* for data and padding: the running ts after the record */
	uint8_t first; /* data: first payload byte */
};

static void expect_page(const struct coll *c, unsigned page, const struct want *w, unsigned nw)
{
	unsigned i, k = 0;
	for (i = 0; i < c->n; i++) {
		const struct rec *r = &c->r[i];
		if (r->page != page)
			continue;
		if (k >= nw)
			fail_msg("page %u: unexpected record kind %d at %u", page, r->kind, r->offset);
		if (r->kind != w[k].kind || r->offset != w[k].offset || r->len != w[k].len)
			fail_msg("page %u record %u: kind %d off %u len %u, want kind %d off %u len %u", page,
				 k, r->kind, r->offset, r->len, w[k].kind, w[k].offset, w[k].len);
		if (r->kind == PW_DATA || r->kind == PW_PADDING)
			assert_int_equal(r->ts, w[k].ts);
		if (r->kind == PW_DATA)
			assert_int_equal(r->first, w[k].first);
		k++;
	}
	assert_int_equal(k, nw);
}

static uint32_t ev(uint32_t len, bool align8) { return pw_expected_len(len, align8); }

/* ---- rollback ------------------------------------------------------------ */

static void rollback_last(unsigned flags)
{
	const bool a8 = flags & RINGBUF_F_ALIGN8;
	struct ringbuf *rb = mk_flags(256, 4, flags);
	struct coll c;
	struct ringbuf_stats st;
	uint8_t *b;
	/* payloads that fill their records (no stale slack bytes to confuse
	 * the byte search below): 4 bytes, or 8 with 8-byte alignment */
	const size_t pl = a8 ? 8 : 4;
	uint32_t la = ev((uint32_t)pl, a8), lc = ev((uint32_t)pl, a8);
	const uint8_t *data;
	uint32_t i, commit;

	assert_int_equal(la, a8 ? 16 : 8);
	wr(rb, pl, 1000, 0xA1);
	b = res(rb, 40, 1010, 0xBB);
	ringbuf_discard(rb, 0, b);
	st = stats(rb, 0);
	assert_int_equal(st.discarded, 1);
	assert_int_equal(st.committed, 1);
	assert_int_equal(st.bytes, la); /* b's bytes are gone */
	wr(rb, pl, 1020, 0xC3);

	collect(rb, &c, a8);
	assert_int_equal(c.npages, 2); /* empty reader page, the head = tail page */
	{
		/* c directly follows a (with the absolute stamp a discard forces) */
		const struct want w[] = {
			{ PW_DATA, 0, la, 1000, 0xA1 },
			{ PW_STAMP, la, 8, 0, 0 },
			{ PW_DATA, la + 8, lc, 1020, 0xC3 },
		};
		expect_page(&c, 1, w, 3);
	}
	assert_int_equal(c.info[1].commit, la + 8 + lc);
	assert_int_equal(c.info[1].npad, 0);
	assert_int_equal(c.info[1].nstamp, 1);

	/* no byte of b's payload is left inside the committed area */
	data = (const uint8_t *)ringbuf__dp(rb, 0, ringbuf__cpu(rb, 0)->tail_page)->data;
	commit = c.info[1].commit;
	for (i = 0; i + 4 <= commit; i++)
		assert_false(data[i] == 0xBB && data[i + 1] == 0xBB && data[i + 2] == 0xBB &&
			     data[i + 3] == 0xBB);

	st = stats(rb, 0);
	assert_int_equal(st.discarded, 1);
	assert_int_equal(st.committed, 2);
	assert_int_equal(st.entries, 2);
	assert_int_equal(st.bytes, la + 8 + lc);
	expect(rb, pl, 0xA1, 1000);
	expect(rb, pl, 0xC3, 1020);
	expect_empty(rb);
	st = stats(rb, 0);
	assert_int_equal(st.read_events, 2);
	assert_int_equal(st.entries, 0);
	assert_int_equal(st.bytes, 0);
}

static void test_discard_last_event_rolls_back_without_trace(void **state)
{
	(void)state;
	rollback_last(0);
}

static void test_discard_last_event_rolls_back_without_trace_align8(void **state)
{
	(void)state;
	rollback_last(RINGBUF_F_ALIGN8);
}

/* Several discards in a row all roll back to the same place. */
static void test_discard_repeated_rollbacks_reuse_the_same_bytes(void **state)
{
	struct ringbuf *rb = mk_flags(256, 4, 0);
	struct coll c;
	int i;
	(void)state;
	wr(rb, 4, 1000, 0xA1);
	for (i = 0; i < 50; i++) {
		uint8_t *b = res(rb, 4 + 4 * (size_t)(i % 10), 1001 + (uint64_t)i, 0xBB);
		ringbuf_discard(rb, 0, b);
	}
	wr(rb, 8, 2000, 0xC3);
	collect(rb, &c, false);
	{
		const struct want w[] = {
			{ PW_DATA, 0, 8, 1000, 0xA1 },
			{ PW_STAMP, 8, 8, 0, 0 },
			{ PW_DATA, 16, 16, 2000, 0xC3 },
		};
		expect_page(&c, 1, w, 3);
	}
	assert_int_equal(stats(rb, 0).discarded, 50);
	assert_int_equal(stats(rb, 0).committed, 2);
	expect(rb, 4, 0xA1, 1000);
	expect(rb, 8, 0xC3, 2000);
	expect_empty(rb);
}

/* ---- padding: something was reserved after the discarded event ---------- */

struct nest {
	int armed;
	int busy;
	uint64_t t;    /* clock of the nested event */
	size_t len;
	uint8_t v;
	int discard;   /* the nested event discards itself instead of committing */
	int fired;
};

static void nest_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	struct nest *x = ctx;
	uint8_t *p;
	if (point != RINGBUF__TP_D_WRITE_STAMP || !x->armed || x->busy)
		return;
	x->armed = 0;
	x->busy = 1;
	now = x->t;
	p = ringbuf_reserve(rb, cpu, x->len);
	assert_non_null(p);
	memset(p, x->v, x->len);
	if (x->discard)
		ringbuf_discard(rb, cpu, p);
	else
		ringbuf_commit(rb, cpu, p);
	x->fired++;
	x->busy = 0;
}

/* Reserve len bytes at t; the hook writes a nested event at tn from inside
 * the reservation (after its step D, as a signal handler would). */
static uint8_t *res_nested(struct ringbuf *rb, size_t len, uint64_t t, uint8_t v, struct nest *x)
{
	uint8_t *p;
	x->armed = 1;
	x->busy = 0;
	x->fired = 0;
	ringbuf__set_testpoint_hook(nest_hook, x);
	p = res(rb, len, t, v);
	ringbuf__set_testpoint_hook(NULL, NULL);
	assert_int_equal(x->fired, 1);
	return p;
}

static void padding_nested(unsigned flags)
{
	const bool a8 = flags & RINGBUF_F_ALIGN8;
	struct ringbuf *rb = mk_flags(256, 4, flags);
	struct nest x = { .t = 1020, .len = 4, .v = 0x4E };
	struct coll c;
	struct ringbuf_stats st;
	uint8_t *b;
	uint32_t la = ev(4, a8), lb = ev(20, a8), ln = ev(4, a8), ld = ev(4, a8);

	wr(rb, 4, 1000, 0xA1);
	b = res_nested(rb, 20, 1010, 0xBB, &x);
	/* the nested event is not committed while the outer one is open */
	assert_int_equal(ringbuf__dp(rb, 0, ringbuf__cpu(rb, 0)->tail_page)->commit, la);
	ringbuf_discard(rb, 0, b);
	assert_int_equal(ringbuf__dp(rb, 0, ringbuf__cpu(rb, 0)->tail_page)->commit, la + lb + ln);
	wr(rb, 4, 1030, 0xD4);

	collect(rb, &c, a8);
	{
		const struct want w[] = {
			{ PW_DATA, 0, la, 1000, 0xA1 },
			/* the discarded event: padding of its length, keeping its delta */
			{ PW_PADDING, la, lb, 1010, 0 },
			{ PW_DATA, la + lb, ln, 1020, 0x4E },
			{ PW_STAMP, la + lb + ln, 8, 0, 0 },
			{ PW_DATA, la + lb + ln + 8, ld, 1030, 0xD4 },
		};
		expect_page(&c, 1, w, 5);
	}
	st = stats(rb, 0);
	assert_int_equal(st.discarded, 1);
	assert_int_equal(st.committed, 3);
	assert_int_equal(st.entries, 3);
	assert_int_equal(st.bytes, la + lb + ln + 8 + ld);
	expect(rb, 4, 0xA1, 1000);
	expect(rb, 4, 0x4E, 1020);
	expect(rb, 4, 0xD4, 1030);
	expect_empty(rb);
	assert_int_equal(stats(rb, 0).bytes, 0);
}

static void test_discard_with_nested_event_after_becomes_padding(void **state)
{
	(void)state;
	padding_nested(0);
}

static void test_discard_with_nested_event_after_becomes_padding_align8(void **state)
{
	(void)state;
	padding_nested(RINGBUF_F_ALIGN8);
}

/* The same, the nested writer coming after reserve returned (the outer event
 * already filled): reserve b, reserve+commit n (depth 2), discard b. */
static void test_discard_after_nested_commit_post_reserve_becomes_padding(void **state)
{
	struct ringbuf *rb = mk_flags(256, 4, 0);
	struct coll c;
	uint8_t *b, *n;
	(void)state;

	wr(rb, 4, 1000, 0xA1);
	b = res(rb, 36, 1007, 0xBB);
	n = res(rb, 8, 1011, 0x4E);
	assert_int_equal(ringbuf__cpu(rb, 0)->committing, 2);
	ringbuf_commit(rb, 0, n);
	ringbuf_discard(rb, 0, b);
	assert_int_equal(ringbuf__cpu(rb, 0)->committing, 0);
	wr(rb, 4, 1013, 0xD4);

	collect(rb, &c, false);
	{
		const struct want w[] = {
			{ PW_DATA, 0, 8, 1000, 0xA1 },
			{ PW_PADDING, 8, 40, 1007, 0 },
			{ PW_DATA, 48, 16, 1011, 0x4E },
			{ PW_STAMP, 64, 8, 0, 0 },
			{ PW_DATA, 72, 8, 1013, 0xD4 },
		};
		expect_page(&c, 1, w, 5);
	}
	expect(rb, 4, 0xA1, 1000);
	expect(rb, 8, 0x4E, 1011);
	expect(rb, 4, 0xD4, 1013);
	expect_empty(rb);
	assert_int_equal(stats(rb, 0).discarded, 1);
	assert_int_equal(stats(rb, 0).committed, 3);
}

/* A nested event that is itself discarded is rolled back (it is last); the
 * outer event committed after it is intact and the next event is absolute. */
static void test_discard_nested_rollback_inside_outer_event(void **state)
{
	struct ringbuf *rb = mk_flags(256, 4, 0);
	struct nest x = { .t = 1020, .len = 16, .v = 0x4E, .discard = 1 };
	struct coll c;
	uint8_t *b;
	(void)state;

	wr(rb, 4, 1000, 0xA1);
	b = res_nested(rb, 4, 1010, 0xBB, &x);
	ringbuf_commit(rb, 0, b);
	wr(rb, 4, 1030, 0xD4);
	collect(rb, &c, false);
	{
		const struct want w[] = {
			{ PW_DATA, 0, 8, 1000, 0xA1 },
			{ PW_DATA, 8, 8, 1010, 0xBB },
			{ PW_STAMP, 16, 8, 0, 0 },
			{ PW_DATA, 24, 8, 1030, 0xD4 },
		};
		expect_page(&c, 1, w, 4);
	}
	expect(rb, 4, 0xA1, 1000);
	expect(rb, 4, 0xBB, 1010);
	expect(rb, 4, 0xD4, 1030);
	expect_empty(rb);
	assert_int_equal(stats(rb, 0).discarded, 1);
	assert_int_equal(stats(rb, 0).committed, 3);
}

/* ---- discards after a TIME_EXTEND ---------------------------------------- */

#define JUMP ((uint64_t)1 << 28) /* does not fit a 27-bit delta */

static void test_discard_rollback_removes_time_extend_and_next_is_absolute(void **state)
{
	struct ringbuf *rb = mk_flags(256, 4, 0);
	struct coll c;
	uint8_t *b;
	(void)state;

	wr(rb, 4, 1000, 0xA1);
	b = res(rb, 4, 1000 + JUMP + 5, 0xBB);
	/* control: the reservation holds a TIME_EXTEND in front of b */
	assert_int_equal(ringbuf__cpu(rb, 0)->slots[0].off, 8);
	assert_int_equal(ringbuf__cpu(rb, 0)->slots[0].len, 16);
	assert_int_equal(ringbuf__cpu(rb, 0)->slots[0].event, 16);
	ringbuf_discard(rb, 0, b);
	wr(rb, 4, 1000 + JUMP + 50, 0xC3);

	collect(rb, &c, false);
	{
		const struct want w[] = {
			{ PW_DATA, 0, 8, 1000, 0xA1 },
			{ PW_STAMP, 8, 8, 0, 0 },
			{ PW_DATA, 16, 8, 1000 + JUMP + 50, 0xC3 },
		};
		expect_page(&c, 1, w, 3);
	}
	assert_int_equal(c.info[1].nextend, 0);
	assert_int_equal(c.info[1].nstamp, 1);
	expect(rb, 4, 0xA1, 1000);
	expect(rb, 4, 0xC3, 1000 + JUMP + 50);
	expect_empty(rb);
}

static void test_discard_padding_after_time_extend_keeps_the_extend(void **state)
{
	struct ringbuf *rb = mk_flags(256, 4, 0);
	struct nest x = { .t = 1000 + JUMP + 7, .len = 4, .v = 0x4E };
	struct coll c;
	uint8_t *b;
	(void)state;

	wr(rb, 4, 1000, 0xA1);
	b = res_nested(rb, 4, 1000 + JUMP, 0xBB, &x);
	ringbuf_discard(rb, 0, b);
	wr(rb, 4, 1000 + JUMP + 20, 0xD4);

	collect(rb, &c, false);
	{
		const struct want w[] = {
			{ PW_DATA, 0, 8, 1000, 0xA1 },
			{ PW_EXTEND, 8, 8, 0, 0 },
			{ PW_PADDING, 16, 8, 1000 + JUMP, 0 },
			{ PW_DATA, 24, 8, 1000 + JUMP + 7, 0x4E },
			{ PW_STAMP, 32, 8, 0, 0 },
			{ PW_DATA, 40, 8, 1000 + JUMP + 20, 0xD4 },
		};
		expect_page(&c, 1, w, 6);
	}
	expect(rb, 4, 0xA1, 1000);
	expect(rb, 4, 0x4E, 1000 + JUMP + 7);
	expect(rb, 4, 0xD4, 1000 + JUMP + 20);
	expect_empty(rb);
}

/* ---- discards at offset 0 of a page ------------------------------------- */

static void test_discard_at_offset_zero_of_first_page_rolls_back(void **state)
{
	struct ringbuf *rb = mk_flags(256, 4, 0);
	struct coll c;
	uint8_t *b;
	(void)state;

	b = res(rb, 24, 1000, 0xBB);
	ringbuf_discard(rb, 0, b);
	expect_empty(rb);
	assert_int_equal(stats(rb, 0).bytes, 0);
	assert_int_equal(stats(rb, 0).oldest_event_ts, 0);
	wr(rb, 4, 1010, 0xC3);
	wr(rb, 4, 1015, 0xC4);
	collect(rb, &c, false);
	{
		/* offset 0 takes the page time stamp: no absolute stamp needed */
		const struct want w[] = {
			{ PW_DATA, 0, 8, 1010, 0xC3 },
			{ PW_DATA, 8, 8, 1015, 0xC4 },
		};
		expect_page(&c, 1, w, 2);
	}
	assert_int_equal(c.info[1].time_stamp, 1010);
	assert_false(c.info[1].first_delta_nonzero);
	expect(rb, 4, 0xC3, 1010);
	expect(rb, 4, 0xC4, 1015);
	expect_empty(rb);
}

static void test_discard_at_offset_zero_of_first_page_becomes_padding(void **state)
{
	struct ringbuf *rb = mk_flags(256, 4, 0);
	struct nest x = { .t = 1005, .len = 4, .v = 0x4E };
	struct coll c;
	uint8_t *b;
	(void)state;

	b = res_nested(rb, 24, 1000, 0xBB, &x);
	ringbuf_discard(rb, 0, b);
	wr(rb, 4, 1009, 0xD4);
	collect(rb, &c, false);
	{
		const struct want w[] = {
			{ PW_PADDING, 0, 28, 1000, 0 },
			{ PW_DATA, 28, 8, 1005, 0x4E },
			{ PW_STAMP, 36, 8, 0, 0 },
			{ PW_DATA, 44, 8, 1009, 0xD4 },
		};
		expect_page(&c, 1, w, 4);
	}
	assert_int_equal(c.info[1].time_stamp, 1000);
	expect(rb, 4, 0x4E, 1005);
	expect(rb, 4, 0xD4, 1009);
	expect_empty(rb);
}

/* 13 events of 8 bytes fill page 0 up to 104 of its 112 bytes; b (24 bytes)
 * crosses: page 0 is padded, b lands at offset 0 of the next page. */
static void fill_first_page(struct ringbuf *rb)
{
	int i;
	for (i = 0; i < 13; i++)
		wr(rb, 4, 1000 + (uint64_t)i, (uint8_t)(0x10 + i));
}

static void expect_first_page(struct ringbuf *rb)
{
	int i;
	for (i = 0; i < 13; i++)
		expect(rb, 4, (uint8_t)(0x10 + i), 1000 + (uint64_t)i);
}

static void test_discard_at_offset_zero_of_new_page_rolls_back(void **state)
{
	struct ringbuf *rb = mk_flags(128, 4, 0);
	struct coll c;
	uint8_t *b;
	(void)state;

	fill_first_page(rb);
	b = res(rb, 20, 2000, 0xBB);
	assert_int_equal(ringbuf__cpu(rb, 0)->slots[0].off, 0); /* offset 0 of page 1 */
	assert_int_not_equal(ringbuf__cpu(rb, 0)->tail_page, 0);
	ringbuf_discard(rb, 0, b);
	wr(rb, 4, 2010, 0xC3);

	collect(rb, &c, false);
	assert_int_equal(c.npages, 3);
	assert_int_equal(c.info[1].ndata, 13);
	assert_int_equal(c.info[1].npad, 1); /* the page end */
	assert_int_equal(c.info[1].commit, 128 - PW_PAGE_HDR); /* 112 on 64-bit */
	{
		const struct want w[] = { { PW_DATA, 0, 8, 2010, 0xC3 } };
		expect_page(&c, 2, w, 1);
	}
	assert_int_equal(c.info[2].time_stamp, 2010);
	assert_int_equal(c.info[2].nstamp, 0);
	expect_first_page(rb);
	expect(rb, 4, 0xC3, 2010);
	expect_empty(rb);
	assert_int_equal(stats(rb, 0).committed, 14);
	assert_int_equal(stats(rb, 0).discarded, 1);
}

/* The hook of the test below: a nested writer between the discard's check
 * of the tail page and its CAS (DISCARD_UNMARKED) writes an event that does
 * not fit: it claims the page end (no room left: the write index goes back
 * to where it was) and moves the tail to the next page. */
static void cross_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	struct nest *x = ctx;
	uint8_t *p;
	if (point != RINGBUF__TP_DISCARD_UNMARKED || !x->armed)
		return;
	x->armed = 0;
	now = x->t;
	p = ringbuf_reserve(rb, cpu, x->len);
	assert_non_null(p);
	memset(p, x->v, x->len);
	ringbuf_commit(rb, cpu, p);
	x->fired++;
}

/* The discarded event ends its page exactly (offset 104 + 8 = 112 bytes),
 * so a writer nested in the discard that claims the page end finds no room,
 * and sets the page's write index back to 112 as it moves the tail on. The
 * discard's CAS from that index (loaded before) must then fail and the
 * event become padding under the page's commit. It succeeded (the word
 * was as loaded): the event was "rolled back" on a page the tail had left,
 * its bytes stayed under the commit the nested writer published, and the
 * reader returned it, with a time after the next page's first event
 * (test_interleave found it once it cut in at this step). */
static void test_discard_cut_in_by_a_page_crossing_becomes_padding(void **state)
{
	struct ringbuf *rb = mk_flags(128, 4, 0);
	struct nest x = { .t = 1500, .len = 4, .v = 0x4E };
	struct coll c;
	uint8_t *d;
	(void)state;

	fill_first_page(rb);
	d = res(rb, 4, 1400, 0xDD); /* 104 .. 112: the page's last bytes */
	x.armed = 1;
	ringbuf__set_testpoint_hook(cross_hook, &x);
	ringbuf_discard(rb, 0, d);
	ringbuf__set_testpoint_hook(NULL, NULL);
	assert_int_equal(x.fired, 1);

	collect(rb, &c, false);
	assert_int_equal(c.info[1].ndata, 13);
	assert_int_equal(c.info[1].npad, 1); /* the discarded event */
	/* up to its end: the page's on 64-bit, 4 bytes before it (a bare null
	 * header, not under the commit) where the page header is 12 bytes */
	assert_int_equal(c.info[1].commit, 13 * 8 + 8);
	{
		const struct want w[] = { { PW_DATA, 0, 8, 1500, 0x4E } };
		expect_page(&c, 2, w, 1);
	}
	expect_first_page(rb);
	expect(rb, 4, 0x4E, 1500);
	expect_empty(rb);
	assert_int_equal(stats(rb, 0).committed, 14);
	assert_int_equal(stats(rb, 0).discarded, 1);
}

static void test_discard_at_offset_zero_of_new_page_becomes_padding(void **state)
{
	struct ringbuf *rb = mk_flags(128, 4, 0);
	struct nest x = { .t = 2003, .len = 4, .v = 0x4E };
	struct coll c;
	uint8_t *b;
	(void)state;

	fill_first_page(rb);
	b = res_nested(rb, 20, 2000, 0xBB, &x);
	ringbuf_discard(rb, 0, b);
	wr(rb, 4, 2010, 0xD4);

	collect(rb, &c, false);
	{
		const struct want w[] = {
			{ PW_PADDING, 0, 24, 2000, 0 },
			{ PW_DATA, 24, 8, 2003, 0x4E },
			{ PW_STAMP, 32, 8, 0, 0 },
			{ PW_DATA, 40, 8, 2010, 0xD4 },
		};
		expect_page(&c, 2, w, 4);
	}
	assert_int_equal(c.info[2].time_stamp, 2000);
	expect_first_page(rb);
	expect(rb, 4, 0x4E, 2003);
	expect(rb, 4, 0xD4, 2010);
	expect_empty(rb);
}

/* ---- large (type_len 0) events -------------------------------------------- */

static void test_discard_large_event_rolls_back(void **state)
{
	struct ringbuf *rb = mk_flags(512, 4, 0);
	struct coll c;
	uint8_t *b;
	(void)state;

	assert_int_equal(ev(200, false), 208);
	wr(rb, 4, 1000, 0xA1);
	b = res(rb, 200, 1010, 0xBB);
	ringbuf_discard(rb, 0, b);
	wr(rb, 200, 1020, 0xC3);
	collect(rb, &c, false);
	{
		const struct want w[] = {
			{ PW_DATA, 0, 8, 1000, 0xA1 },
			{ PW_STAMP, 8, 8, 0, 0 },
			{ PW_DATA, 16, 208, 1020, 0xC3 },
		};
		expect_page(&c, 1, w, 3);
	}
	assert_int_equal(c.r[2].type_len, 0);
	assert_int_equal(c.r[2].payload_len, 200);
	assert_int_equal(stats(rb, 0).bytes, 8 + 8 + 208);
	expect(rb, 4, 0xA1, 1000);
	expect(rb, 200, 0xC3, 1020);
	expect_empty(rb);
}

static void test_discard_large_event_becomes_padding_of_same_length(void **state)
{
	struct ringbuf *rb = mk_flags(512, 4, 0);
	struct nest x = { .t = 1015, .len = 120, .v = 0x4E };
	struct coll c;
	uint8_t *b;
	(void)state;

	wr(rb, 4, 1000, 0xA1);
	b = res_nested(rb, 200, 1010, 0xBB, &x);
	ringbuf_discard(rb, 0, b);
	wr(rb, 4, 1020, 0xD4);
	collect(rb, &c, false);
	{
		const struct want w[] = {
			{ PW_DATA, 0, 8, 1000, 0xA1 },
			{ PW_PADDING, 8, 208, 1010, 0 },
			{ PW_DATA, 216, 128, 1015, 0x4E },
			{ PW_STAMP, 344, 8, 0, 0 },
			{ PW_DATA, 352, 8, 1020, 0xD4 },
		};
		expect_page(&c, 1, w, 5);
	}
	assert_int_equal(c.r[2].type_len, 0);
	assert_int_equal(c.r[2].payload_len, 120);
	expect(rb, 4, 0xA1, 1000);
	expect(rb, 120, 0x4E, 1015);
	expect(rb, 4, 0xD4, 1020);
	expect_empty(rb);
	assert_int_equal(stats(rb, 0).discarded, 1);
	assert_int_equal(stats(rb, 0).committed, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_discard_last_event_rolls_back_without_trace, teardown),
		cmocka_unit_test_teardown(test_discard_last_event_rolls_back_without_trace_align8, teardown),
		cmocka_unit_test_teardown(test_discard_repeated_rollbacks_reuse_the_same_bytes, teardown),
		cmocka_unit_test_teardown(test_discard_with_nested_event_after_becomes_padding, teardown),
		cmocka_unit_test_teardown(test_discard_with_nested_event_after_becomes_padding_align8, teardown),
		cmocka_unit_test_teardown(test_discard_after_nested_commit_post_reserve_becomes_padding, teardown),
		cmocka_unit_test_teardown(test_discard_nested_rollback_inside_outer_event, teardown),
		cmocka_unit_test_teardown(test_discard_rollback_removes_time_extend_and_next_is_absolute, teardown),
		cmocka_unit_test_teardown(test_discard_padding_after_time_extend_keeps_the_extend, teardown),
		cmocka_unit_test_teardown(test_discard_at_offset_zero_of_first_page_rolls_back, teardown),
		cmocka_unit_test_teardown(test_discard_at_offset_zero_of_first_page_becomes_padding, teardown),
		cmocka_unit_test_teardown(test_discard_at_offset_zero_of_new_page_rolls_back, teardown),
		cmocka_unit_test_teardown(test_discard_at_offset_zero_of_new_page_becomes_padding, teardown),
		cmocka_unit_test_teardown(test_discard_cut_in_by_a_page_crossing_becomes_padding, teardown),
		cmocka_unit_test_teardown(test_discard_large_event_rolls_back, teardown),
		cmocka_unit_test_teardown(test_discard_large_event_becomes_padding_of_same_length, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
