/* test_encoding.c - the kernel page format and event encoding, byte for byte
 * SPDX-License-Identifier: MIT
 *
 * Every test writes events with a controlled clock, then checks the pages the
 * library produced three independent ways:
 *   1. against a layout model written here from the kernel's rules (sizing,
 *      12 -> 16, type_len 1..28 / 0, TIME_EXTEND / TIME_STAMP, tail padding
 *      with delta 1, 4-byte null padding, first event of a page at delta 0),
 *      decoding the raw bytes of each page at the offsets the model predicts;
 *   2. through the independent walker tests/pagewalk.h (record by record,
 *      compared with the model, plus its canonical / sequence checks);
 *   3. through ringbuf_consume(): payload bytes, pointer, rounded length and
 *      the exact clock value of every event.
 */
/* ringbuf.h first: it then defines _GNU_SOURCE for its own system calls */
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pagewalk.h"

/* The page header: 16 bytes with a 64-bit long, 12 with a 32-bit one; HS is
 * what a 32-bit page has more room for (0 or 4), MAX4K the largest payload of
 * a 4 KiB page (4072 or 4076). */
#define HDR PW_PAGE_HDR
#define HS (16u - HDR)
#define MAX4K PW_MAX_EVENT(4096, false)
#define MASK27 ((1ull << 27) - 1)
#define MASK59 ((1ull << 59) - 1)

/* ---- controlled clock ----------------------------------------------------- */

static uint64_t now;
static uint64_t test_clock(void *ctx)
{
	(void)ctx;
	return now;
}

/* ---- small helpers -------------------------------------------------------- */

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static uint64_t rdlong(const uint8_t *p)
{
	unsigned long v;
	memcpy(&v, p, sizeof v);
	return v;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

/* Payload byte i of event k. */
static uint8_t pat(size_t k, size_t i) { return (uint8_t)(k * 131u + i * 7u + 1u); }

static uint64_t rng_state;
static uint64_t rng(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

/* Event length, written here from the kernel rules (rb_calculate_event_length),
 * independently of ringbuf.h and of pw_expected_len(). */
static uint32_t ref_evlen(uint32_t len, bool align8)
{
	uint32_t l = len ? len : 1;
	if (align8)
		return (l + 8 + 7) / 8 * 8;
	if (l > 112)
		l += 4;
	l = (l + 4 + 3) / 4 * 4;
	return l == 12 ? 16 : l;
}

/* ---- the layout model and the observed layout ------------------------------ */

struct xrec {
	size_t page;
	int kind;            /* PW_DATA / PW_PADDING / PW_EXTEND / PW_STAMP */
	uint32_t off, len, type_len, delta, payload_len;
	uint64_t value;      /* extend delta / stamp 59-bit value / data delta */
	uint64_t ts;         /* data: exact clock value; stamp/extend: running ts */
	bool null_pad;
	long ev;             /* data: event index, else -1 */
	const uint8_t *payload;
};

struct layout {
	struct xrec *r;
	size_t nr, rcap;
	uint64_t *page_ts;
	uint32_t *page_commit;
	const uint8_t **page_ptr;
	struct pw_page *info;
	size_t np, pcap;
	uint32_t stamp_wraps;
	bool align8;
};

static void lay_free(struct layout *L)
{
	free(L->r);
	free(L->page_ts);
	free(L->page_commit);
	free(L->page_ptr);
	free(L->info);
	memset(L, 0, sizeof *L);
}

static struct xrec *lay_add(struct layout *L)
{
	if (L->nr == L->rcap) {
		L->rcap = L->rcap ? 2 * L->rcap : 256;
		L->r = realloc(L->r, L->rcap * sizeof *L->r);
		assert_non_null(L->r);
	}
	memset(&L->r[L->nr], 0, sizeof L->r[0]);
	L->r[L->nr].page = L->np - 1;
	L->r[L->nr].ev = -1;
	return &L->r[L->nr++];
}

static void lay_page(struct layout *L)
{
	if (L->np == L->pcap) {
		L->pcap = L->pcap ? 2 * L->pcap : 64;
		L->page_ts = realloc(L->page_ts, L->pcap * sizeof *L->page_ts);
		L->page_commit = realloc(L->page_commit, L->pcap * sizeof *L->page_commit);
		L->page_ptr = realloc(L->page_ptr, L->pcap * sizeof *L->page_ptr);
		L->info = realloc(L->info, L->pcap * sizeof *L->info);
		assert_true(L->page_ts && L->page_commit && L->page_ptr && L->info);
	}
	L->page_ts[L->np] = 0;
	L->page_commit[L->np] = 0;
	L->page_ptr[L->np] = NULL;
	memset(&L->info[L->np], 0, sizeof L->info[0]);
	L->np++;
}

struct ev {
	uint32_t len;
	uint64_t ts;
};

struct opts {
	size_t page_size;
	int ts_mode;
	unsigned flags;
	bool use_write; /* odd events through ringbuf_write() instead of reserve/commit */
};

/* Where the kernel rules put each event (one CPU, nothing overwritten). */
static void model_build(const struct opts *o, const struct ev *e, size_t n, struct layout *L)
{
	const uint32_t bsize = PW_DATA_SIZE(o->page_size, o->flags & RINGBUF_F_ALIGN8);
	const bool a8 = (o->flags & RINGBUF_F_ALIGN8) != 0;
	const bool abs_mode = o->ts_mode == RINGBUF_TS_ABSOLUTE;
	uint32_t w = 0;
	uint64_t prev = 0, run = 0;
	size_t k;

	memset(L, 0, sizeof *L);
	L->align8 = a8;
	lay_page(L);
	for (k = 0; k < n; k++) {
		uint32_t evlen = ref_evlen(e[k].len, a8);
		int stamp = 0;
		uint64_t d = 0;
		struct xrec *x;

		if (w) {
			d = e[k].ts - prev;
			if (abs_mode)
				stamp = PW_STAMP;
			else if (d > MASK27)
				stamp = (d >> 59) ? PW_STAMP : PW_EXTEND;
		}
		/* a TIME_STAMP never crosses a 2^59 boundary within a page: the
		 * event starts a new page, whose 64-bit time stamp holds it */
		if (w + evlen + (stamp ? 8u : 0u) > bsize ||
		    (stamp == PW_STAMP && ((L->page_ts[L->np - 1] ^ e[k].ts) >> 59) != 0)) {
			uint32_t room = bsize - w;
			if (room >= 8) {
				x = lay_add(L);
				x->kind = PW_PADDING;
				x->off = w;
				x->len = room;
				x->type_len = 29;
				x->delta = 1; /* kernel rb_reset_tail */
				x->value = 1;
				L->page_commit[L->np - 1] = bsize;
			} else {
				/* 4 bytes left: a bare null header, left out of commit
				 * (kernel rb_reset_tail); 0 left: the page is exactly full */
				assert_true(room == 4 || room == 0);
				L->page_commit[L->np - 1] = w;
			}
			lay_page(L);
			w = 0;
			stamp = 0;
			d = 0;
		}
		if (w == 0) {
			L->page_ts[L->np - 1] = e[k].ts;
			run = e[k].ts;
		}
		if (stamp) {
			x = lay_add(L);
			x->kind = stamp;
			x->off = w;
			x->len = 8;
			x->type_len = stamp == PW_EXTEND ? 30 : 31;
			x->value = stamp == PW_EXTEND ? d : (e[k].ts & MASK59);
			x->delta = (uint32_t)(x->value & MASK27);
			x->ts = e[k].ts;
			if (stamp == PW_STAMP && (e[k].ts >> 59) != (run >> 59))
				L->stamp_wraps++;
			w += 8;
			d = 0;
		}
		x = lay_add(L);
		x->kind = PW_DATA;
		x->off = w;
		x->len = evlen;
		if (!a8 && evlen - 4 <= 112) {
			x->type_len = (evlen - 4) / 4;
			x->payload_len = evlen - 4;
		} else {
			x->type_len = 0;
			x->payload_len = evlen - 8;
		}
		x->delta = (uint32_t)d;
		x->value = d;
		x->ts = e[k].ts;
		x->ev = (long)k;
		w += evlen;
		prev = run = e[k].ts;
		L->page_commit[L->np - 1] = w;
	}
}

/* ---- collecting what the library wrote ---------------------------------------- */

struct collect_ctx {
	struct layout *L;
	bool align8;
	bool seen_reader;
	uint64_t chain_ts;
};

static int collect_rec(const struct pw_record *r, void *ctx)
{
	struct collect_ctx *c = ctx;
	struct xrec *x = lay_add(c->L);
	x->kind = r->kind;
	x->off = r->offset;
	x->len = r->len;
	x->type_len = r->type_len;
	x->delta = r->delta;
	x->payload_len = r->payload_len;
	x->value = r->value;
	x->ts = r->ts;
	x->null_pad = r->null_padding;
	x->payload = r->payload;
	return 0;
}

static int collect_page(const void *page, size_t page_size, int role, void *ctx)
{
	struct collect_ctx *c = ctx;
	struct pw_page in;
	const char *err = NULL;
	int rc;

	if (role == RINGBUF__PAGE_READER) {
		/* nothing consumed yet: the reader page is the unused spare */
		assert_false(c->seen_reader);
		c->seen_reader = true;
		rc = pw_walk_page(page, page_size, c->align8, NULL, NULL, &in, &err);
		if (rc)
			print_message("reader page: %s\n", err);
		assert_int_equal(rc, 0);
		assert_int_equal(in.commit, 0);
		return 0;
	}
	assert_int_equal(role, RINGBUF__PAGE_RING);
	assert_true(c->seen_reader);
	lay_page(c->L);
	c->L->page_ptr[c->L->np - 1] = page;
	c->L->page_ts[c->L->np - 1] = rd64(page);
	c->L->page_commit[c->L->np - 1] = (uint32_t)rdlong((const uint8_t *)page + 8);
	rc = pw_walk_page(page, page_size, c->align8, collect_rec, c, &in, &err);
	if (rc)
		print_message("ring page %zu: %s\n", c->L->np - 1, err);
	assert_int_equal(rc, 0);
	c->L->info[c->L->np - 1] = in;
	c->L->stamp_wraps += in.stamp_wraps;
	rc = pw_check_sequence(c->chain_ts, page, page_size, c->align8, &c->chain_ts, &err);
	if (rc)
		print_message("ring page %zu: %s\n", c->L->np - 1, err);
	assert_int_equal(rc, 0);
	return 0;
}

static void observe(struct ringbuf *rb, bool align8, struct layout *A)
{
	struct collect_ctx c;
	memset(A, 0, sizeof *A);
	A->align8 = align8;
	memset(&c, 0, sizeof c);
	c.L = A;
	c.align8 = align8;
	assert_int_equal(ringbuf__walk_pages(rb, 0, collect_page, &c), 0);
	assert_true(c.seen_reader);
}

/* ---- comparing ------------------------------------------------------------- */

#define CHECK_EQ(what, i, a, b)                                                         \
	do {                                                                           \
		unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b); \
		if (a_ != b_) {                                                        \
			print_message("%s mismatch at %s %zu: model %llu (0x%llx), got %llu (0x%llx)\n", \
				      what, #i, (size_t)(i), a_, a_, b_, b_);          \
			fail();                                                        \
		}                                                                      \
	} while (0)

/* Decode the raw bytes at the model's offsets (no walker involved). */
static void check_raw(const struct layout *M, const struct layout *A, const struct ev *e)
{
	size_t i, j;
	for (i = 0; i < M->np; i++) {
		const uint8_t *pg = A->page_ptr[i];
		CHECK_EQ("page time_stamp (raw u64 at +0)", i, M->page_ts[i], rd64(pg));
		CHECK_EQ("page commit (raw long at +8, no flags)", i, M->page_commit[i], rdlong(pg + 8));
	}
	for (j = 0; j < M->nr; j++) {
		const struct xrec *x = &M->r[j];
		const uint8_t *p = A->page_ptr[x->page] + HDR + x->off;
		uint32_t w = rd32(p);
		switch (x->kind) {
		case PW_DATA:
			if (x->type_len) {
				CHECK_EQ("small data header word", j, PW_WORD(x->type_len, x->delta), w);
				CHECK_EQ("small data type_len range", j, 1, x->type_len >= 1 && x->type_len <= 28);
				p += 4;
			} else {
				CHECK_EQ("type-0 data header word", j, PW_WORD(0, x->delta), w);
				CHECK_EQ("type-0 array[0]", j, x->len - 4, rd32(p + 4));
				p += 8;
			}
			for (size_t b = 0; b < e[x->ev].len; b++)
				if (p[b] != pat((size_t)x->ev, b)) {
					print_message("event %ld payload byte %zu: 0x%02x, want 0x%02x\n",
						      x->ev, b, p[b], pat((size_t)x->ev, b));
					fail();
				}
			break;
		case PW_PADDING:
			if (x->null_pad) {
				CHECK_EQ("null padding word", j, 29u, w);
			} else {
				CHECK_EQ("tail padding word (type 29, delta 1)", j, PW_WORD(29, 1), w);
				CHECK_EQ("tail padding array[0]", j, x->len - 4, rd32(p + 4));
			}
			break;
		case PW_EXTEND:
		case PW_STAMP:
			CHECK_EQ("time record word", j, PW_WORD(x->type_len, (uint32_t)(x->value & MASK27)), w);
			CHECK_EQ("time record array[0]", j, (uint32_t)(x->value >> 27), rd32(p + 4));
			break;
		default:
			fail();
		}
	}
}

/* Model vs walker, record by record. */
static void check_walk(const struct layout *M, const struct layout *A, void *const *ptrs,
		       const struct ev *e)
{
	size_t i;
	CHECK_EQ("number of ring pages", 0, M->np, A->np);
	CHECK_EQ("number of records", 0, M->nr, A->nr);
	CHECK_EQ("TIME_STAMP 2^59 wrap fix-ups", 0, M->stamp_wraps, A->stamp_wraps);
	for (i = 0; i < M->np; i++) {
		const struct pw_page *in = &A->info[i];
		CHECK_EQ("walker time_stamp", i, M->page_ts[i], in->time_stamp);
		CHECK_EQ("walker commit", i, M->page_commit[i], in->commit_raw);
		CHECK_EQ("noncanonical records", i, 0, in->noncanonical);
		CHECK_EQ("first data delta nonzero", i, 0, in->first_delta_nonzero);
		CHECK_EQ("delta after a time record", i, 0, in->delta_after_time);
		CHECK_EQ("extends that would fit 27 bits", i, 0, in->small_extends);
		CHECK_EQ("missed flags", i, 0, in->missed || in->missed_stored);
	}
	for (i = 0; i < M->nr; i++) {
		const struct xrec *m = &M->r[i], *a = &A->r[i];
		CHECK_EQ("record page", i, m->page, a->page);
		CHECK_EQ("record kind", i, m->kind, a->kind);
		CHECK_EQ("record offset", i, m->off, a->off);
		CHECK_EQ("record length", i, m->len, a->len);
		CHECK_EQ("record type_len", i, m->type_len, a->type_len);
		CHECK_EQ("record raw delta", i, m->delta, a->delta);
		CHECK_EQ("record null padding", i, m->null_pad, a->null_pad);
		if (m->kind == PW_EXTEND || m->kind == PW_STAMP)
			CHECK_EQ("time record value", i, m->value, a->value);
		if (m->kind != PW_PADDING)
			CHECK_EQ("running ts", i, m->ts, a->ts);
		if (m->kind == PW_DATA) {
			uint32_t len = e[m->ev].len;
			CHECK_EQ("payload_len", i, m->payload_len, a->payload_len);
			CHECK_EQ("record length == pw_expected_len", i,
				 pw_expected_len(len, M->align8), a->len);
			if (ptrs && ptrs[m->ev])
				CHECK_EQ("payload pointer == reserve()", i, (uintptr_t)ptrs[m->ev],
					 (uintptr_t)a->payload);
			if (M->align8)
				CHECK_EQ("8-aligned payload (from data[])", i, HDR % 8,
					 (uintptr_t)a->payload % 8);
			for (size_t b = 0; b < len; b++)
				if (a->payload[b] != pat((size_t)m->ev, b)) {
					print_message("walker: event %ld byte %zu differs\n", m->ev, b);
					fail();
				}
		}
	}
}

/* ---- the runner ------------------------------------------------------------- */

struct run_result {
	size_t pages, records;
	struct layout M; /* kept for tests that assert on it; freed by run_free */
};

static void run_free(struct run_result *r) { lay_free(&r->M); }

static struct ringbuf *make_rb(size_t page_size, size_t pages, int ts_mode, unsigned flags)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	cfg.page_size = page_size;
	cfg.size_per_cpu = pages * page_size;
	cfg.ts_mode = ts_mode;
	cfg.flags = flags;
	cfg.clock = test_clock;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	assert_non_null(rb);
	assert_int_equal(ringbuf_page_size(rb), page_size);
	assert_int_equal(ringbuf_max_event_size(rb), PW_MAX_EVENT(page_size, flags & RINGBUF_F_ALIGN8));
	return rb;
}

/* Write e[0..n) with the clock at e[k].ts, then check pages, walker and reader. */
static void run_case(const struct opts *o, const struct ev *e, size_t n, struct run_result *res)
{
	const bool a8 = (o->flags & RINGBUF_F_ALIGN8) != 0;
	struct layout A;
	struct ringbuf *rb;
	struct ringbuf_record rec;
	struct ringbuf_stats st;
	void **ptrs = calloc(n ? n : 1, sizeof *ptrs);
	uint8_t *buf = malloc(o->page_size);
	size_t k;

	assert_non_null(ptrs);
	assert_non_null(buf);
	memset(res, 0, sizeof *res);
	model_build(o, e, n, &res->M);
	rb = make_rb(o->page_size, res->M.np + 2, o->ts_mode, o->flags);

	for (k = 0; k < n; k++) {
		now = e[k].ts;
		for (size_t b = 0; b < e[k].len; b++)
			buf[b] = pat(k, b);
		if (o->use_write && (k & 1)) {
			assert_int_equal(ringbuf_write(rb, 0, buf, e[k].len), 0);
		} else {
			uint8_t *p = ringbuf_reserve(rb, 0, e[k].len);
			if (!p)
				print_message("reserve(%u) of event %zu failed\n", e[k].len, k);
			assert_non_null(p);
			assert_int_equal((uintptr_t)p % (a8 ? 8 : 4), a8 ? HDR % 8 : 0);
			memcpy(p, buf, e[k].len);
			ringbuf_commit(rb, 0, p);
			ptrs[k] = p;
		}
	}

	observe(rb, a8, &A);
	check_walk(&res->M, &A, ptrs, e);
	check_raw(&res->M, &A, e);

	assert_int_equal(ringbuf_stats_cpu(rb, 0, &st), 0);
	assert_int_equal(st.committed, n);
	assert_int_equal(st.entries, n);
	assert_int_equal(st.overrun + st.commit_overrun + st.dropped_events + st.rejected_events, 0);

	/* the reader sees the same bytes at the same addresses, exact times */
	for (k = 0; k < n; k++) {
		uint32_t evlen = ref_evlen(e[k].len, a8);
		size_t want_len = (!a8 && evlen - 4 <= 112) ? evlen - 4 : evlen - 8;
		memset(&rec, 0, sizeof rec);
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
		if (rec.ts != e[k].ts)
			print_message("event %zu: ts %llu, clock was %llu\n", k,
				      (unsigned long long)rec.ts, (unsigned long long)e[k].ts);
		assert_true(rec.ts == e[k].ts);
		assert_int_equal(rec.len, want_len);
		assert_int_equal(rec.len, (e[k].len + (a8 ? 7 : 3)) / (a8 ? 8 : 4) * (a8 ? 8 : 4) +
						  ((!a8 && e[k].len >= 5 && e[k].len <= 8) ? 4 : 0));
		assert_int_equal(rec.lost, 0);
		assert_int_equal(rec.cpu, 0);
		if (ptrs[k])
			assert_ptr_equal(rec.data, ptrs[k]);
		for (size_t b = 0; b < e[k].len; b++)
			buf[b] = pat(k, b);
		assert_memory_equal(rec.data, buf, e[k].len);
	}
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 0);
	assert_int_equal(ringbuf_stats_cpu(rb, 0, &st), 0);
	assert_int_equal(st.read_events, n);
	assert_int_equal(st.entries, 0);

	res->pages = res->M.np;
	res->records = res->M.nr;
	lay_free(&A);
	ringbuf_destroy(rb);
	free(ptrs);
	free(buf);
}

/* Count model records of one kind (optionally only null paddings). */
static size_t count_kind(const struct layout *M, int kind, int null_pad)
{
	size_t i, n = 0;
	for (i = 0; i < M->nr; i++)
		if (M->r[i].kind == kind && (null_pad < 0 || M->r[i].null_pad == (null_pad != 0)))
			n++;
	return n;
}

/* ---- tests ----------------------------------------------------------------- */

/* The sizing rules, as literal numbers (so the model itself can fail). */
static void test_event_length_rules_literal(void **state)
{
	static const uint32_t t4[][3] = {
		/* payload, record length, type_len */
		{1, 8, 1},     {4, 8, 1},     {5, 16, 3},    {6, 16, 3},    {7, 16, 3},
		{8, 16, 3},    {9, 16, 3},    {12, 16, 3},   {13, 20, 4},   {16, 20, 4},
		{17, 24, 5},   {108, 112, 27}, {109, 116, 28}, {112, 116, 28}, {113, 124, 0},
		{114, 124, 0}, {115, 124, 0}, {116, 124, 0}, {117, 128, 0}, {4068, 4076, 0},
		{4072, 4080, 0},
	};
	static const uint32_t t8[][2] = {
		{1, 16}, {8, 16}, {9, 24}, {16, 24}, {17, 32}, {112, 120}, {113, 128}, {4072, 4080},
	};
	size_t i;
	uint32_t len;
	(void)state;
	for (i = 0; i < sizeof t4 / sizeof t4[0]; i++) {
		assert_int_equal(ref_evlen(t4[i][0], false), t4[i][1]);
		assert_int_equal(pw_expected_len(t4[i][0], false), t4[i][1]);
	}
	for (i = 0; i < sizeof t8 / sizeof t8[0]; i++) {
		assert_int_equal(ref_evlen(t8[i][0], true), t8[i][1]);
		assert_int_equal(pw_expected_len(t8[i][0], true), t8[i][1]);
	}
	for (len = 1; len <= 65536 - 24; len++) {
		assert_int_equal(ref_evlen(len, false), pw_expected_len(len, false));
		assert_int_equal(ref_evlen(len, true), pw_expected_len(len, true));
	}
}

/* Each type_len class, one event per page, decoded by hand from the raw page. */
static void test_size_class_headers_raw(void **state)
{
	static const uint32_t cls[][3] = {
		/* payload, raw header word (delta 0), array[0] or 0 */
		{1, 1, 0}, {4, 1, 0}, {5, 3, 0}, {8, 3, 0}, {12, 3, 0}, {13, 4, 0},
		{111, 28, 0}, {112, 28, 0}, {113, 0, 120}, {116, 0, 120}, {117, 0, 124},
		{4072, 0, 4076},
	};
	size_t i;
	(void)state;
	for (i = 0; i < sizeof cls / sizeof cls[0]; i++) {
		struct ringbuf *rb = make_rb(4096, 2, RINGBUF_TS_DELTA, 0);
		uint8_t *p, *pg;
		struct ringbuf_record rec;
		now = 777 + i;
		p = ringbuf_reserve(rb, 0, cls[i][0]);
		assert_non_null(p);
		memset(p, 0x5a, cls[i][0]);
		ringbuf_commit(rb, 0, p);
		/* tail page 0 of the fresh buffer; the header sits before the payload */
		pg = (uint8_t *)ringbuf__dp(rb, 0, 0);
		assert_int_equal(rd64(pg), 777 + i);
		if (cls[i][2]) {
			assert_ptr_equal(p, pg + HDR + 8);
			assert_int_equal(rd32(pg + HDR), 0);
			assert_int_equal(rd32(pg + HDR + 4), cls[i][2]);
			assert_int_equal(rdlong(pg + 8), cls[i][2] + 4);
		} else {
			assert_ptr_equal(p, pg + HDR + 4);
			assert_int_equal(rd32(pg + HDR), PW_WORD(cls[i][1], 0));
			assert_int_equal(rdlong(pg + 8), 4 + 4 * cls[i][1]);
		}
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
		assert_int_equal(rec.ts, 777 + i);
		assert_ptr_equal(rec.data, p);
		ringbuf_destroy(rb);
	}
}

static size_t all_sizes(struct ev **out, uint32_t max, uint64_t t0, uint64_t step)
{
	struct ev *e = calloc(max, sizeof *e);
	uint32_t len;
	assert_non_null(e);
	for (len = 1; len <= max; len++) {
		e[len - 1].len = len;
		e[len - 1].ts = t0 + (uint64_t)len * step;
	}
	*out = e;
	return max;
}

/* Every payload size 1..4072 (a superset of 1..200, the ≡ 0..3 mod 4 runs
 * around 112/113/116, and the max) in 4096-byte pages. */
static void test_every_size_class_4k_pages(void **state)
{
	struct opts o = {4096, RINGBUF_TS_DELTA, 0, false};
	struct run_result r;
	struct ev *e;
	size_t n = all_sizes(&e, 4072, 1000, 3);
	(void)state;
	run_case(&o, e, n, &r);
	print_message("  %zu events, %zu pages, %zu records\n", n, r.pages, r.records);
	/* sanity of the model: small types up to 112, type 0 above */
	for (size_t i = 0; i < r.M.nr; i++) {
		const struct xrec *x = &r.M.r[i];
		if (x->kind != PW_DATA)
			continue;
		if (e[x->ev].len <= 112)
			assert_true(x->type_len >= 1 && x->type_len <= 28);
		else
			assert_int_equal(x->type_len, 0);
	}
	run_free(&r);
	/* the same through ringbuf_write for every other event */
	o.use_write = true;
	run_case(&o, e, n, &r);
	run_free(&r);
	/* sizes in descending order pack pages differently */
	for (size_t i = 0; i < n / 2; i++) {
		uint32_t t = e[i].len;
		e[i].len = e[n - 1 - i].len;
		e[n - 1 - i].len = t;
	}
	o.use_write = false;
	run_case(&o, e, n, &r);
	run_free(&r);
	free(e);
}

/* 12 -> 16: payloads 5..8 take 16 bytes, type_len 3, read back as 12 bytes. */
static void test_payload_5_to_8_uses_16_bytes(void **state)
{
	struct opts o = {4096, RINGBUF_TS_DELTA, 0, false};
	struct ev e[8];
	struct run_result r;
	size_t i;
	(void)state;
	for (i = 0; i < 8; i++) {
		e[i].len = 1 + (uint32_t)i; /* 1..8 */
		e[i].ts = 100 + i;
	}
	run_case(&o, e, 8, &r);
	/* offsets: 4 events of 8 bytes, then 4 of 16 */
	for (i = 0; i < 8; i++) {
		assert_int_equal(r.M.r[i].kind, PW_DATA);
		assert_int_equal(r.M.r[i].off, i < 4 ? 8 * i : 32 + 16 * (i - 4));
		assert_int_equal(r.M.r[i].len, i < 4 ? 8 : 16);
		assert_int_equal(r.M.r[i].type_len, i < 4 ? 1 : 3);
	}
	run_free(&r);
}

static void test_max_event_size_exact(void **state)
{
	struct ringbuf *rb = make_rb(4096, 4, RINGBUF_TS_DELTA, 0);
	struct ringbuf_stats st;
	struct ringbuf_record rec;
	uint8_t *big = malloc(MAX4K + 1), *p;
	size_t i;
	(void)state;
	assert_non_null(big);
	for (i = 0; i < MAX4K + 1; i++)
		big[i] = (uint8_t)(i * 13 + 5);
	assert_int_equal(ringbuf_max_event_size(rb), MAX4K);
	now = 50;
	assert_null(ringbuf_reserve(rb, 0, MAX4K + 1));
	assert_int_equal(ringbuf_write(rb, 0, big, MAX4K + 1), RINGBUF_E2BIG);
	assert_int_equal(ringbuf_stats_cpu(rb, 0, &st), 0);
	assert_int_equal(st.rejected_events, 2);
	assert_int_equal(st.committed, 0);
	assert_true(ringbuf_empty_cpu(rb, 0));

	/* two max events: each fills a page exactly (commit MAX4K + 8, no padding) */
	p = ringbuf_reserve(rb, 0, MAX4K);
	assert_non_null(p);
	memcpy(p, big, MAX4K);
	ringbuf_commit(rb, 0, p);
	now = 60;
	assert_int_equal(ringbuf_write(rb, 0, big + 1, MAX4K), 0);
	for (i = 0; i < 2; i++) {
		const uint8_t *pg = (const uint8_t *)ringbuf__dp(rb, 0, (uint32_t)i);
		assert_int_equal(rd64(pg), i ? 60 : 50);
		assert_int_equal(rdlong(pg + 8), MAX4K + 8);
		assert_int_equal(rd32(pg + HDR), 0);
		assert_int_equal(rd32(pg + HDR + 4), MAX4K + 4);
		assert_memory_equal(pg + HDR + 8, big + i, MAX4K);
	}
	for (i = 0; i < 2; i++) {
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
		assert_int_equal(rec.len, MAX4K);
		assert_int_equal(rec.ts, i ? 60 : 50);
		assert_memory_equal(rec.data, big + i, MAX4K);
	}
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 0);
	assert_int_equal(ringbuf_stats_cpu(rb, 0, &st), 0);
	assert_int_equal(st.rejected_events, 2);
	assert_int_equal(st.committed, 2);
	ringbuf_destroy(rb);
	free(big);
}

/* 2^27-1 fits the header; 2^27 needs a TIME_EXTEND; huge deltas too. */
static void test_time_extend_boundary(void **state)
{
	static const uint64_t deltas[] = {
		0, (1ull << 27) - 1, 1ull << 27, 1, (1ull << 27) + 1, 1ull << 40,
		(1ull << 40) + 12345, 0, 2, (1ull << 59) - 1, 7,
	};
	const size_t n = sizeof deltas / sizeof deltas[0] + 1;
	struct ev e[sizeof deltas / sizeof deltas[0] + 1];
	struct opts o = {4096, RINGBUF_TS_DELTA, 0, false};
	struct run_result r;
	const struct xrec *x;
	size_t i;
	(void)state;
	e[0].len = 4;
	e[0].ts = 1000;
	for (i = 1; i < n; i++) {
		e[i].len = 4 + 4 * (uint32_t)(i % 3);
		e[i].ts = e[i - 1].ts + deltas[i - 1];
	}
	run_case(&o, e, n, &r);
	assert_int_equal(r.pages, 1);
	x = r.M.r;
	/* the model's own layout, spelled out: */
	assert_int_equal(x[0].kind, PW_DATA); /* t0, first on page */
	assert_int_equal(x[0].delta, 0);
	assert_int_equal(x[1].kind, PW_DATA); /* delta 0 */
	assert_int_equal(x[1].delta, 0);
	assert_int_equal(x[2].kind, PW_DATA); /* 2^27-1 in the header */
	assert_int_equal(x[2].delta, (1u << 27) - 1);
	assert_int_equal(x[3].kind, PW_EXTEND); /* 2^27 */
	assert_int_equal(x[3].value, 1ull << 27);
	assert_int_equal(x[4].kind, PW_DATA);
	assert_int_equal(x[4].delta, 0);
	assert_int_equal(x[5].kind, PW_DATA); /* 1 */
	assert_int_equal(x[5].delta, 1);
	assert_int_equal(x[6].kind, PW_EXTEND); /* 2^27+1 */
	assert_int_equal(x[6].value, (1ull << 27) + 1);
	assert_int_equal(x[8].kind, PW_EXTEND); /* 2^40 */
	assert_int_equal(x[8].value, 1ull << 40);
	assert_int_equal(x[10].kind, PW_EXTEND); /* 2^40 + 12345 */
	assert_int_equal(x[10].value, (1ull << 40) + 12345);
	assert_int_equal(x[12].kind, PW_DATA); /* 0 */
	assert_int_equal(x[13].kind, PW_DATA); /* 2 */
	assert_int_equal(x[13].delta, 2);
	assert_int_equal(x[14].kind, PW_EXTEND); /* 2^59-1: the largest extend */
	assert_int_equal(x[14].value, (1ull << 59) - 1);
	assert_int_equal(x[16].kind, PW_DATA); /* 7 */
	assert_int_equal(x[16].delta, 7);
	assert_int_equal(count_kind(&r.M, PW_EXTEND, -1), 5);
	assert_int_equal(count_kind(&r.M, PW_STAMP, -1), 0);
	run_free(&r);
}

/* The TIME_EXTEND bytes, decoded by hand for delta 2^27 and 2^27 - 1. */
static void test_time_extend_raw_bytes(void **state)
{
	struct ringbuf *rb = make_rb(4096, 2, RINGBUF_TS_DELTA, 0);
	const uint8_t *pg = (const uint8_t *)ringbuf__dp(rb, 0, 0);
	uint32_t v = 0xdeadbeef;
	struct ringbuf_record rec;
	(void)state;
	now = 5;
	assert_int_equal(ringbuf_write(rb, 0, &v, 4), 0);
	now = 5 + (1ull << 27) - 1;
	assert_int_equal(ringbuf_write(rb, 0, &v, 4), 0);
	now += 1ull << 27;
	assert_int_equal(ringbuf_write(rb, 0, &v, 4), 0);
	now += (1ull << 40) + 3;
	assert_int_equal(ringbuf_write(rb, 0, &v, 4), 0);
	assert_int_equal(rd64(pg), 5);
	assert_int_equal(rdlong(pg + 8), 8 + 8 + 16 + 16);
	assert_int_equal(rd32(pg + HDR + 0), PW_WORD(1, 0));              /* len 4, delta 0 */
	assert_int_equal(rd32(pg + HDR + 8), PW_WORD(1, (1u << 27) - 1)); /* delta 2^27-1 */
	assert_int_equal(rd32(pg + HDR + 16), PW_WORD(30, 0));           /* extend, low bits 0 */
	assert_int_equal(rd32(pg + HDR + 20), 1);                        /* 2^27 >> 27 */
	assert_int_equal(rd32(pg + HDR + 24), PW_WORD(1, 0));            /* data, delta 0 */
	assert_int_equal(rd32(pg + HDR + 32), PW_WORD(30, 3));           /* extend 2^40 + 3 */
	assert_int_equal(rd32(pg + HDR + 36), 1u << 13);
	assert_int_equal(rd32(pg + HDR + 40), PW_WORD(1, 0));
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
	assert_int_equal(rec.ts, 5);
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
	assert_int_equal(rec.ts, 5 + (1ull << 27) - 1);
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
	assert_int_equal(rec.ts, 5 + (1ull << 28) - 1);
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
	assert_int_equal(rec.ts, 5 + (1ull << 28) - 1 + (1ull << 40) + 3);
	assert_int_equal(*(const uint32_t *)rec.data, 0xdeadbeef);
	ringbuf_destroy(rb);
}

/* Exactly 4 bytes left at the page end: a 4-byte null padding (type 29,
 * delta 0), then the event starts the next page at delta 0. */
static void test_null_padding_exactly_4_bytes(void **state)
{
	struct opts o = {4096, RINGBUF_TS_DELTA, 0, false};
	struct ev e[3] = {{MAX4K - 4, 10}, {4, 20}, {4, 30}};
	struct opts o128 = {128, RINGBUF_TS_DELTA, 0, false};
	struct ev e128[3] = {{104 + HS, 10}, {1, 11}, {40, 12}}; /* 108 of 112 bytes, then 4 left */
	struct opts o64 = {64, RINGBUF_TS_DELTA, 0, false};
	struct ev e64[4] = {{40 + HS, 1}, {40 + HS, 2}, {40 + HS, 3}, {1, 4}}; /* 44 of 48 bytes each */
	struct run_result r;
	(void)state;

	run_case(&o, e, 3, &r);
	assert_int_equal(r.pages, 2);
	assert_int_equal(r.M.r[0].len, MAX4K + 4);
	/* the null header stays out of commit, so kbuffer never reads its
	 * missing length word (kernel rb_reset_tail does the same) */
	assert_int_equal(r.M.page_commit[0], MAX4K + 4);
	assert_int_equal(r.M.r[1].kind, PW_DATA);
	assert_int_equal(r.M.page_ts[1], 20);
	run_free(&r);

	run_case(&o128, e128, 3, &r);
	assert_int_equal(r.pages, 2);
	assert_int_equal(r.M.page_commit[0], 108 + HS);
	assert_int_equal(count_kind(&r.M, PW_PADDING, 1), 0);
	run_free(&r);

	run_case(&o64, e64, 4, &r);
	assert_int_equal(r.pages, 4);
	assert_int_equal(r.M.page_commit[0], 44 + HS);
	assert_int_equal(count_kind(&r.M, PW_PADDING, 1), 0);
	run_free(&r);
}

/* Tail padding with a length carries delta 1 (kernel rb_reset_tail). */
static void test_tail_padding_delta_1(void **state)
{
	struct opts o = {4096, RINGBUF_TS_DELTA, 0, false};
	struct ev e[3] = {{4000, 100}, {100, 200}, {8, 300}};
	struct run_result r;
	(void)state;
	run_case(&o, e, 3, &r);
	assert_int_equal(r.pages, 2);
	assert_int_equal(r.M.r[1].kind, PW_PADDING);
	assert_int_equal(r.M.r[1].off, 4008);
	assert_int_equal(r.M.r[1].len, 72 + HS);
	assert_int_equal(r.M.r[1].delta, 1);
	assert_int_equal(r.M.page_ts[1], 200);
	run_free(&r);
}

/* An 8-byte remainder: the smallest padding with a length. */
static void test_tail_padding_8_bytes(void **state)
{
	struct opts o = {4096, RINGBUF_TS_DELTA, 0, false};
	struct ev e[2] = {{MAX4K - 8, 1}, {8, 2}}; /* 4072 used, 8 left, 16 needed */
	struct run_result r;
	(void)state;
	run_case(&o, e, 2, &r);
	assert_int_equal(r.M.r[1].kind, PW_PADDING);
	assert_int_equal(r.M.r[1].len, 8);
	assert_false(r.M.r[1].null_pad);
	run_free(&r);
}

/* Small pages, varying sizes and clock steps (some needing an extend): every
 * page ends in padding or fills exactly, first events at delta 0. */
static void random_case(size_t page_size, int ts_mode, unsigned flags, uint64_t seed, size_t n,
			uint64_t t0, bool with_big_steps)
{
	struct opts o = {page_size, ts_mode, flags, (seed & 1) != 0};
	struct ev *e = calloc(n, sizeof *e);
	struct run_result r;
	uint32_t max = PW_MAX_EVENT(page_size, flags & RINGBUF_F_ALIGN8);
	uint32_t dsize = PW_DATA_SIZE(page_size, flags & RINGBUF_F_ALIGN8);
	uint64_t t = t0;
	size_t i, npad = 0, nnull = 0, full = 0;
	assert_non_null(e);
	rng_state = seed;
	for (i = 0; i < n; i++) {
		uint64_t x = rng();
		switch (x % 8) {
		case 0: e[i].len = 1 + (uint32_t)(rng() % 8); break;
		case 1: e[i].len = max; break;
		case 2: e[i].len = max - (uint32_t)(rng() % 8); break;
		default: e[i].len = 1 + (uint32_t)(rng() % max); break;
		}
		switch ((x >> 8) % 16) {
		case 0: t += with_big_steps ? (1ull << 27) : 1; break;
		case 1: t += with_big_steps ? (1ull << 27) - 1 : 0; break;
		case 2: t += with_big_steps ? (rng() % (1ull << 45)) : 2; break;
		case 3: break;
		default: t += rng() % 5000; break;
		}
		e[i].ts = t;
	}
	run_case(&o, e, n, &r);
	for (i = 0; i < r.M.nr; i++)
		if (r.M.r[i].kind == PW_PADDING) {
			npad++;
			nnull += r.M.r[i].null_pad;
		}
	/* every page but the last ends in padding or is exactly full */
	for (i = 0; i + 1 < r.M.np; i++) {
		/* full, padded to the end, or 4 bytes short (a null header
		 * outside commit) */
		assert_true(r.M.page_commit[i] == dsize || r.M.page_commit[i] == dsize - 4);
		if (r.M.page_commit[i] == dsize) {
			size_t j;
			const struct xrec *last = NULL;
			for (j = 0; j < r.M.nr; j++)
				if (r.M.r[j].page == i)
					last = &r.M.r[j];
			assert_non_null(last);
			assert_int_equal(last->off + last->len, dsize);
			if (last->kind == PW_DATA)
				full++;
		}
	}
	print_message("  page %zu mode %d flags %u seed %llu: %zu events, %zu pages, %zu paddings "
		      "(%zu null), %zu exactly full, %zu extends, %zu stamps\n",
		      page_size, ts_mode, flags, (unsigned long long)seed, n, r.pages, npad, nnull, full,
		      count_kind(&r.M, PW_EXTEND, -1), count_kind(&r.M, PW_STAMP, -1));
	assert_true(r.pages > 10);
	assert_true(npad > 0);
	run_free(&r);
	free(e);
}

static void test_page_crossing_small_pages_delta(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= 6; seed++) {
		random_case(128, RINGBUF_TS_DELTA, 0, seed * 0x9e3779b97f4a7c15ull, 400, 1000, false);
		random_case(256, RINGBUF_TS_DELTA, 0, seed * 0x9e3779b97f4a7c15ull + 1, 400, 1000, true);
		random_case(64, RINGBUF_TS_DELTA, 0, seed * 0x9e3779b97f4a7c15ull + 2, 300, 7, true);
	}
}

/* Every possible page remainder (0, 4, 8, ... bytes) before a crossing. */
static void test_every_page_remainder(void **state)
{
	(void)state;
	for (uint32_t fill = 1; fill <= 104; fill++) {
		/* first event leaves bsize - evlen bytes; second needs more */
		struct opts o = {128, RINGBUF_TS_DELTA, 0, false};
		struct ev e[3] = {{fill, 10}, {104 + HS, 20}, {1, 21}};
		struct run_result r;
		uint32_t room = 112 + HS - ref_evlen(fill, false);
		run_case(&o, e, 3, &r);
		assert_int_equal(r.pages, 3);
		if (room == 0 || room == 4) {
			/* exactly full, or a null header left out of commit */
			/* page 2 (a 108-byte event) ends 4 bytes short too: no
			 * padding record anywhere */
			assert_int_equal(count_kind(&r.M, PW_PADDING, -1), 0);
			assert_int_equal(r.M.page_commit[0], 112 + HS - room);
			assert_int_equal(r.M.page_commit[1], 108 + HS);
		} else {
			assert_int_equal(r.M.r[1].kind, PW_PADDING);
			assert_int_equal(r.M.r[1].len, room);
			assert_false(r.M.r[1].null_pad);
		}
		run_free(&r);
	}
	{
		/* 56 + 56 bytes fill the 112-byte data area exactly: no padding */
		struct opts o = {128, RINGBUF_TS_DELTA, 0, false};
		struct ev e[3] = {{52, 1}, {52 + HS, 2}, {1, 3}};
		struct run_result r;
		run_case(&o, e, 3, &r);
		assert_int_equal(r.pages, 2);
		assert_int_equal(count_kind(&r.M, PW_PADDING, -1), 0);
		assert_int_equal(r.M.page_commit[0], 112 + HS);
		run_free(&r);
	}
}

/* A time jump at a page crossing: no extend on the new page, delta 0 there. */
static void test_no_extend_at_page_start(void **state)
{
	struct opts o = {128, RINGBUF_TS_DELTA, 0, false};
	/* 104 bytes + 8 left; then 84 bytes on page 2, where an extend fits */
	struct ev e[3] = {{100, 10}, {80, 10 + (1ull << 33)}, {4, 10 + (1ull << 34)}};
	struct run_result r;
	(void)state;
	run_case(&o, e, 3, &r);
	assert_int_equal(r.pages, 2);
	assert_int_equal(count_kind(&r.M, PW_EXTEND, -1), 1); /* only event 2 */
	assert_int_equal(r.M.page_ts[1], 10 + (1ull << 33));
	run_free(&r);
}

static void test_absolute_mode_stamps(void **state)
{
	struct opts o = {256, RINGBUF_TS_ABSOLUTE, 0, false};
	struct ev e[60];
	struct run_result r;
	size_t i, pages_first = 0;
	(void)state;
	for (i = 0; i < 60; i++) {
		e[i].len = 1 + (uint32_t)(i * 37 % 120);
		e[i].ts = 1000 + i * i * 1000003ull + (i == 30 ? (1ull << 35) : 0) + (i > 30 ? (1ull << 35) : 0);
	}
	run_case(&o, e, 60, &r);
	/* each data record: a TIME_STAMP right before it unless it starts a page */
	for (i = 0; i < r.M.nr; i++) {
		const struct xrec *x = &r.M.r[i];
		if (x->kind != PW_DATA)
			continue;
		assert_int_equal(x->delta, 0);
		if (x->off == 0) {
			pages_first++;
			assert_int_equal(r.M.page_ts[x->page], e[x->ev].ts);
		} else {
			assert_int_equal(r.M.r[i - 1].kind, PW_STAMP);
			assert_int_equal(r.M.r[i - 1].value, e[x->ev].ts & MASK59);
		}
	}
	assert_int_equal(pages_first, r.pages);
	assert_int_equal(count_kind(&r.M, PW_STAMP, -1), 60 - r.pages);
	assert_int_equal(count_kind(&r.M, PW_EXTEND, -1), 0);
	run_free(&r);
	/* and in bigger and smaller pages, with random sizes */
	for (uint64_t seed = 11; seed <= 14; seed++) {
		random_case(128, RINGBUF_TS_ABSOLUTE, 0, seed, 300, 5, true);
		random_case(4096, RINGBUF_TS_ABSOLUTE, 0, seed, 300, 5, true);
	}
}

/* Clock crossing 2^59: TIME_STAMPs keep 59 bits, readers restore the rest. */
static void test_absolute_mode_59bit_wrap(void **state)
{
	struct ev e[400];
	struct run_result r;
	size_t i, n = sizeof e / sizeof e[0];
	struct opts o = {4096, RINGBUF_TS_ABSOLUTE, 0, false};
	(void)state;
	for (i = 0; i < n; i++) {
		e[i].len = 4 + (uint32_t)(i % 5) * 4;
		e[i].ts = (1ull << 59) - 1000 + 7 * i;
	}
	/* 150 events fit one 4 KiB page, but 2^59 is crossed at event 143: that
	 * event starts a new page (whose 64-bit time stamp holds it) instead of
	 * a TIME_STAMP whose top bits readers like kbuffer would get wrong */
	run_case(&o, e, 150, &r);
	assert_int_equal(r.pages, 2);
	assert_int_equal(count_kind(&r.M, PW_STAMP, -1), 148);
	assert_int_equal(r.M.stamp_wraps, 0);
	assert_int_equal(r.M.page_ts[1], (1ull << 59) + 1);
	run_free(&r);
	/* many small pages: page time stamps on both sides of 2^59 */
	o.page_size = 128;
	run_case(&o, e, n, &r);
	print_message("  %zu stamps across 2^59 in %zu pages, %u wrap fix-ups\n",
		      count_kind(&r.M, PW_STAMP, -1), r.pages, r.M.stamp_wraps);
	run_free(&r);
	/* bigger steps and a forward jump of 2^57 just below 2^59 */
	for (i = 0; i < n; i++)
		e[i].ts = (1ull << 59) - 300000 + i * 997 + (i > n / 2 ? (1ull << 57) : 0);
	run_case(&o, e, n, &r);
	run_free(&r);
	o.page_size = 4096;
	run_case(&o, e, n, &r);
	assert_int_equal(r.M.stamp_wraps, 0);
	run_free(&r);
	/* delta mode across 2^59: plain deltas and extends, nothing special */
	o.ts_mode = RINGBUF_TS_DELTA;
	run_case(&o, e, n, &r);
	assert_int_equal(count_kind(&r.M, PW_STAMP, -1), 0);
	run_free(&r);
	o.page_size = 128;
	run_case(&o, e, n, &r);
	run_free(&r);
}

static void test_align8_mode(void **state)
{
	struct opts o = {4096, RINGBUF_TS_DELTA, RINGBUF_F_ALIGN8, false};
	struct run_result r;
	struct ev *e;
	size_t n = all_sizes(&e, 4072, 3, 11), i;
	(void)state;
	run_case(&o, e, n, &r);
	for (i = 0; i < r.M.nr; i++) {
		const struct xrec *x = &r.M.r[i];
		assert_int_equal(x->off % 8, 0);
		assert_int_equal(x->len % 8, 0);
		if (x->kind == PW_DATA)
			assert_int_equal(x->type_len, 0);
		assert_false(x->null_pad);
	}
	run_free(&r);
	o.ts_mode = RINGBUF_TS_ABSOLUTE;
	run_case(&o, e, n, &r);
	run_free(&r);
	free(e);
	for (uint64_t seed = 21; seed <= 24; seed++) {
		random_case(128, RINGBUF_TS_DELTA, RINGBUF_F_ALIGN8, seed, 300, 1, true);
		random_case(64, RINGBUF_TS_ABSOLUTE, RINGBUF_F_ALIGN8, seed, 300, 1, true);
		random_case(256, RINGBUF_TS_DELTA, RINGBUF_F_ALIGN8, seed, 300, 1, false);
	}
}

/* Every small payload in align8 mode is type 0 with an 8-multiple length. */
static void test_align8_raw_headers(void **state)
{
	struct ringbuf *rb = make_rb(4096, 2, RINGBUF_TS_DELTA, RINGBUF_F_ALIGN8);
	const uint8_t *pg = (const uint8_t *)ringbuf__dp(rb, 0, 0);
	uint32_t off = 0, len;
	(void)state;
	now = 9;
	for (len = 1; len <= 24; len++) {
		uint8_t *p = ringbuf_reserve(rb, 0, len);
		assert_non_null(p);
		/* 8-aligned from data[], which is 8-aligned only with a 64-bit long */
		assert_int_equal((uintptr_t)p % 8, HDR % 8);
		assert_ptr_equal(p, pg + HDR + off + 8);
		memset(p, (int)len, len);
		ringbuf_commit(rb, 0, p);
		assert_int_equal(rd32(pg + HDR + off), 0);
		assert_int_equal(rd32(pg + HDR + off + 4), (len + 7) / 8 * 8 + 4);
		off += (len + 7) / 8 * 8 + 8;
	}
	assert_int_equal(rdlong(pg + 8), off);
	ringbuf_destroy(rb);
}

static void test_page_sizes(void **state)
{
	static const size_t sizes[] = {64, 128, 4096, 65536};
	size_t s;
	(void)state;
	for (s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		size_t ps = sizes[s], n = 0, i;
		uint32_t max = PW_MAX_EVENT(ps, false);
		struct ev e[64];
		struct run_result r;
		struct ringbuf *rb = make_rb(ps, 2, RINGBUF_TS_DELTA, 0);
		assert_int_equal(ringbuf_max_event_size(rb), max);
		assert_int_equal(ringbuf_nr_pages(rb), 2);
		now = 1;
		assert_null(ringbuf_reserve(rb, 0, max + 1));
		ringbuf_destroy(rb);
		max = PW_MAX_EVENT(ps, true); /* the events below also go to ALIGN8 buffers */
		for (i = 0; i < 64; i++) {
			static const uint32_t small[] = {1, 4, 5, 8, 9, 12, 13, 16, 40, 104, 112, 113};
			uint32_t len = i % 3 == 0 ? max : small[i % 12];
			if (len > max)
				len = max - (uint32_t)(i % 4);
			e[n].len = len;
			e[n].ts = 100 + 10 * i;
			n++;
		}
		for (unsigned f = 0; f < 2; f++)
			for (int m = 0; m < 2; m++) {
				struct opts o = {ps, m, f ? RINGBUF_F_ALIGN8 : 0u, ((unsigned)m + f) & 1};
				run_case(&o, e, n, &r);
				assert_int_equal(count_kind(&r.M, PW_DATA, -1), n);
				run_free(&r);
			}
	}
}

/* ---- clocks that jump: what the encoding cannot carry ------------------------ */

static int seq_page(const void *page, size_t page_size, int role, void *ctx)
{
	uint64_t *chain = ctx;
	const char *err = NULL;
	int rc;
	if (role == RINGBUF__PAGE_READER)
		return 0;
	rc = pw_check_sequence(*chain, page, page_size, false, chain, &err);
	if (rc)
		print_message("  pagewalk: %s\n", err);
	return rc ? 1 : 0;
}

/* Write 4-byte events at the clock values t[] (len[] bytes each), check every
 * page with the walker, then read back: ts must be want[] exactly. */
static void jump_case(int ts_mode, size_t page_size, size_t n, const uint64_t *t,
		      const uint32_t *len, const uint64_t *want)
{
	struct ringbuf *rb = make_rb(page_size, 8, ts_mode, 0);
	struct ringbuf_record rec;
	uint64_t chain = 0;
	uint8_t buf[4096];
	size_t i;
	int bad = 0;
	memset(buf, 0x3c, sizeof buf);
	for (i = 0; i < n; i++) {
		now = t[i];
		assert_int_equal(ringbuf_write(rb, 0, buf, len[i]), 0);
	}
	if (ringbuf__walk_pages(rb, 0, seq_page, &chain) != 0)
		bad = 1;
	for (i = 0; i < n; i++) {
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
		if (rec.ts != want[i]) {
			print_message("  event %zu: read ts %llu, want %llu (clock %llu)\n", i,
				      (unsigned long long)rec.ts, (unsigned long long)want[i],
				      (unsigned long long)t[i]);
			bad = 1;
		}
	}
	ringbuf_destroy(rb);
	assert_int_equal(bad, 0);
}

/* A clock that steps back is clamped (>>design: "a clock seen going backwards
 * is clamped"): mid-page in delta mode this works (delta 0). */
static void test_clock_backwards_mid_page_is_clamped(void **state)
{
	static const uint64_t t[] = {1000, 2000, 1500, 2500};
	static const uint32_t len[] = {4, 4, 4, 4};
	static const uint64_t want[] = {1000, 2000, 2000, 2500};
	(void)state;
	jump_case(RINGBUF_TS_DELTA, 4096, 4, t, len, want);
}

/* FAILS with ringbuf.h as of this commit (reported): an event that starts a
 * new page takes the raw clock as the page time_stamp, so time read back goes
 * backwards across the page boundary (2000 then 1500). */
static void test_clock_backwards_at_page_start_is_clamped(void **state)
{
	static const uint64_t t[] = {1000, 2000, 1500, 2500};
	static const uint32_t len[] = {100, 4, 100, 4}; /* 128-byte pages: event 3 starts page 2 */
	static const uint64_t want[] = {1000, 2000, 2000, 2500};
	(void)state;
	jump_case(RINGBUF_TS_DELTA, 128, 4, t, len, want);
}

/* FAILS with ringbuf.h as of this commit (reported): in absolute mode the
 * TIME_STAMP takes the raw clock, so the page holds a stamp that goes
 * backwards (pagewalk PW_E_STAMP; kbuffer would show 1500). */
static void test_clock_backwards_absolute_mode_is_clamped(void **state)
{
	static const uint64_t t[] = {1000, 2000, 1500, 2500};
	static const uint32_t len[] = {4, 4, 4, 4};
	static const uint64_t want[] = {1000, 2000, 2000, 2500};
	(void)state;
	jump_case(RINGBUF_TS_ABSOLUTE, 4096, 4, t, len, want);
}

/* FAILS with ringbuf.h as of this commit (reported): a delta of 2^59 or more
 * does not fit a TIME_EXTEND (59 bits); the library writes a TIME_STAMP,
 * which keeps only the low 59 bits, and the event reads back 2^59 too early.
 * Absolute mode: a forward jump in [2^58, 2^59) across a 2^59 boundary is
 * read as a clock going backwards and clamped. A page's own u64 time_stamp
 * can carry any value: such an event could start a new page. */
static void test_clock_jump_beyond_59_bits_reads_back_exactly(void **state)
{
	static const uint32_t len[] = {4, 4, 4};
	const uint64_t t1[] = {1000, 1000 + (1ull << 59) + 5, 1000 + (1ull << 59) + 6};
	const uint64_t t2[] = {(1ull << 59) - 10, (1ull << 59) - 10 + (1ull << 58) + 5,
			       (1ull << 59) - 10 + (1ull << 58) + 6};
	(void)state;
	jump_case(RINGBUF_TS_DELTA, 4096, 3, t1, len, t1);
	jump_case(RINGBUF_TS_ABSOLUTE, 4096, 3, t2, len, t2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_event_length_rules_literal),
		cmocka_unit_test(test_size_class_headers_raw),
		cmocka_unit_test(test_every_size_class_4k_pages),
		cmocka_unit_test(test_payload_5_to_8_uses_16_bytes),
		cmocka_unit_test(test_max_event_size_exact),
		cmocka_unit_test(test_time_extend_boundary),
		cmocka_unit_test(test_time_extend_raw_bytes),
		cmocka_unit_test(test_null_padding_exactly_4_bytes),
		cmocka_unit_test(test_tail_padding_delta_1),
		cmocka_unit_test(test_tail_padding_8_bytes),
		cmocka_unit_test(test_page_crossing_small_pages_delta),
		cmocka_unit_test(test_every_page_remainder),
		cmocka_unit_test(test_no_extend_at_page_start),
		cmocka_unit_test(test_absolute_mode_stamps),
		cmocka_unit_test(test_absolute_mode_59bit_wrap),
		cmocka_unit_test(test_align8_mode),
		cmocka_unit_test(test_align8_raw_headers),
		cmocka_unit_test(test_page_sizes),
		cmocka_unit_test(test_clock_backwards_mid_page_is_clamped),
		cmocka_unit_test(test_clock_backwards_at_page_start_is_clamped),
		cmocka_unit_test(test_clock_backwards_absolute_mode_is_clamped),
		cmocka_unit_test(test_clock_jump_beyond_59_bits_reads_back_exactly),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
