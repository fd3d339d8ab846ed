/* test_pagewalk.c - cmocka tests of the page validator tests/pagewalk.h
 * SPDX-License-Identifier: MIT
 *
 * Pages are built by a small encoder written here from the format description
 * (not with ringbuf.h), then walked; rejection tests corrupt them, and a
 * fixed-seed fuzzer feeds random and mutated pages (run it under
 * -fsanitize=address,undefined to prove the walker never reads out of bounds).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "pagewalk.h"

#define PGSZ 4096u
#define H PW_PAGE_HDR /* 16 with a 64-bit long, 12 with a 32-bit one */
#define DSZ (PGSZ - H)
#define HS (16u - H)          /* a 32-bit page's extra data bytes (0 or 4) */
#define MAXEV (DSZ - 8u)      /* largest payload of a PGSZ page: 4072 on 64-bit */

/* ---- encoder ------------------------------------------------------------ */

struct pb {
	uint8_t *page;     /* malloc'ed, exactly size bytes (ASan sees overreads) */
	size_t size;
	uint32_t off;      /* write position in data[] */
	bool align8;
	uint64_t ts;       /* running time stamp the records encode */
};

static void pb_init(struct pb *b, size_t size, bool align8, uint64_t ts)
{
	b->page = calloc(1, size);
	assert_non_null(b->page);
	b->size = size;
	b->off = 0;
	b->align8 = align8;
	b->ts = ts;
	memcpy(b->page, &ts, 8);
}

static void pb_free(struct pb *b) { free(b->page); }

static uint8_t *pb_data(struct pb *b) { return b->page + H; }

static void pb_u32(struct pb *b, uint32_t off, uint32_t v)
{
	assert_true(H + (size_t)off + 4 <= b->size);
	memcpy(pb_data(b) + off, &v, 4);
}

static void pb_hdr(struct pb *b, uint32_t type_len, uint32_t delta, uint32_t a0, bool has_a0)
{
	pb_u32(b, b->off, PW_WORD(type_len, delta));
	if (has_a0)
		pb_u32(b, b->off + 4, a0);
}

/* Set the commit word: bytes used = current position, plus flag bits. */
static void pb_commit_raw(struct pb *b, uint64_t raw)
{
	unsigned long v = (unsigned long)raw; /* a long, as the kernel's local_t */
	memcpy(b->page + 8, &v, sizeof v);
}
static void pb_commit(struct pb *b) { pb_commit_raw(b, b->off); }

/* Data record of payload len bytes (filled with fill) with a 27-bit delta.
 * Sizing written independently of pw_expected_len(). Returns its offset. */
static uint32_t pb_event(struct pb *b, uint32_t delta, uint32_t len, uint8_t fill)
{
	uint32_t at = b->off, total, hdr;
	bool big = len > 112 || b->align8;

	assert_true(delta < (1u << 27));
	total = (len ? len : 1) + (big ? 8 : 4);
	total = b->align8 ? (total + 7) / 8 * 8 : (total + 3) / 4 * 4;
	if (total == 12)
		total = 16;
	assert_true(H + (size_t)at + total <= b->size);
	if (big) {
		pb_hdr(b, 0, delta, total - 4, true);
		hdr = 8;
	} else {
		pb_hdr(b, (total - 4) / 4, delta, 0, false);
		hdr = 4;
	}
	memset(pb_data(b) + at + hdr, fill, total - hdr);
	b->off += total;
	b->ts += delta;
	return at;
}

static void pb_extend(struct pb *b, uint64_t delta)
{
	pb_hdr(b, 30, (uint32_t)(delta & ((1u << 27) - 1)), (uint32_t)(delta >> 27), true);
	b->off += 8;
	b->ts += delta;
}

static void pb_stamp(struct pb *b, uint64_t abs59)
{
	uint64_t nts = (b->ts & ~((1ull << 59) - 1)) | abs59;
	pb_hdr(b, 31, (uint32_t)(abs59 & ((1u << 27) - 1)), (uint32_t)(abs59 >> 27), true);
	b->off += 8;
	b->ts = nts < b->ts ? nts + (1ull << 59) : nts;
}

/* Event at running-time distance delta: an extend first when it does not fit. */
static uint32_t pb_event_at(struct pb *b, uint64_t delta, uint32_t len)
{
	if (delta >= (1u << 27)) {
		pb_extend(b, delta);
		delta = 0;
	}
	return pb_event(b, (uint32_t)delta, len, 0xab);
}

static void pb_pad(struct pb *b, uint32_t delta, uint32_t total)
{
	pb_hdr(b, 29, delta, total - 4, true);
	b->off += total;
	b->ts += delta;
}

static void pb_pad_tail(struct pb *b) { pb_pad(b, 1, (uint32_t)(b->size - H) - b->off); }

/* ---- helpers -------------------------------------------------------------- */

static int walk(struct pb *b, struct pw_page *in)
{
	const char *err = NULL;
	int rc = pw_walk_page(b->page, b->size, b->align8, NULL, NULL, in, &err);
	if (rc)
		print_message("  (expected?) %s\n", err);
	else
		assert_null(err);
	return rc;
}

static void expect_ok(struct pb *b, struct pw_page *in) { assert_int_equal(walk(b, in), 0); }

static void expect_err(struct pb *b, int code)
{
	struct pw_page in;
	const char *err = NULL;
	int rc = pw_walk_page(b->page, b->size, b->align8, NULL, NULL, &in, &err);
	assert_int_equal(rc, code);
	assert_non_null(err);
	assert_non_null(strstr(err, "offset"));
}

#define MAXREC 1100
struct col {
	int n;
	struct pw_record r[MAXREC];
	int stop_at;
};

static int collect(const struct pw_record *r, void *ctx)
{
	struct col *c = ctx;
	assert_true(c->n < MAXREC);
	c->r[c->n++] = *r;
	return c->stop_at && c->n == c->stop_at ? 77 : 0;
}

static void walk_collect(struct pb *b, struct col *c, struct pw_page *in)
{
	const char *err = NULL;
	memset(c, 0, sizeof *c);
	assert_int_equal(pw_walk_page(b->page, b->size, b->align8, collect, c, in, &err), 0);
}

/* ---- tests: well-formed pages -------------------------------------------- */

static void test_expected_len(void **state)
{
	(void)state;
	static const uint32_t t4[][2] = {
		{0, 8}, {1, 8}, {4, 8}, {5, 12 + 4}, {8, 16}, {12, 16}, {13, 20}, {16, 20},
		{108, 112}, {109, 116}, {112, 116}, {113, 124}, {116, 124}, {117, 128},
		{4072, 4080},
	};
	static const uint32_t t8[][2] = {
		{0, 16}, {4, 16}, {8, 16}, {9, 24}, {16, 24}, {112, 120}, {113, 128},
		{4072, 4080},
	};
	for (size_t i = 0; i < sizeof t4 / sizeof t4[0]; i++)
		assert_int_equal(pw_expected_len(t4[i][0], false), t4[i][1]);
	for (size_t i = 0; i < sizeof t8 / sizeof t8[0]; i++)
		assert_int_equal(pw_expected_len(t8[i][0], true), t8[i][1]);
}

/* One event per page for each size class boundary. */
static void test_size_classes(void **state)
{
	static const uint32_t sizes[] = {0, 4, 8, 108, 112, 113, 116, MAXEV};
	static const uint32_t tl[] = {1, 1, 3, 27, 28, 0, 0, 0};
	static const uint32_t plen[] = {4, 4, 12, 108, 112, 116, 116, MAXEV};
	(void)state;
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		struct pb b;
		struct col c;
		struct pw_page in;
		pb_init(&b, PGSZ, false, 1000);
		pb_event(&b, 0, sizes[i], (uint8_t)(i + 1));
		pb_commit(&b);
		walk_collect(&b, &c, &in);
		assert_int_equal(c.n, 1);
		assert_int_equal(in.ndata, 1);
		assert_int_equal(c.r[0].kind, PW_DATA);
		assert_int_equal(c.r[0].type_len, tl[i]);
		assert_int_equal(c.r[0].len, pw_expected_len(sizes[i], false));
		assert_int_equal(c.r[0].len, in.commit);
		assert_int_equal(c.r[0].payload_len, plen[i]);
		assert_ptr_equal(c.r[0].payload, b.page + H + (tl[i] ? 4 : 8));
		assert_int_equal(c.r[0].payload[plen[i] - 1], i + 1);
		assert_int_equal(c.r[0].ts, 1000);
		assert_int_equal(in.noncanonical, 0);
		assert_false(in.first_delta_nonzero);
		pb_free(&b);
	}
	/* 4072 fills the page exactly; 4076 would not fit */
	struct pb b;
	pb_init(&b, PGSZ, false, 0);
	pb_hdr(&b, 0, 0, DSZ, true); /* type-0 record of DSZ + 4 bytes */
	pb_commit_raw(&b, DSZ);
	expect_err(&b, PW_E_CROSS);
	pb_free(&b);
}

/* A full page of mixed events; running ts and record offsets. */
static void test_mixed_page(void **state)
{
	struct pb b;
	struct col c;
	struct pw_page in;
	uint64_t ts = 5000;
	uint32_t n = 0, offs[600];
	(void)state;
	pb_init(&b, PGSZ, false, ts);
	for (uint32_t i = 0; b.off + 200 < DSZ; i++) {
		uint32_t len = (i * 37) % 180, d = i ? i * 3 : 0;
		offs[n++] = pb_event(&b, d, len, (uint8_t)i);
	}
	pb_pad_tail(&b);
	pb_commit(&b);
	walk_collect(&b, &c, &in);
	assert_int_equal(in.ndata, n);
	assert_int_equal(in.npad, 1);
	assert_int_equal(c.n, (int)n + 1);
	for (uint32_t i = 0; i < n; i++) {
		ts += i * 3;
		assert_int_equal(c.r[i].offset, offs[i]);
		assert_int_equal(c.r[i].ts, ts);
		assert_int_equal(c.r[i].len, pw_expected_len((i * 37) % 180, false));
	}
	assert_int_equal(in.first_ts, 5000);
	assert_int_equal(in.last_ts, ts);
	assert_int_equal(in.end_ts, ts + 1); /* the tail padding's delta counts */
	assert_int_equal(c.r[n].offset + c.r[n].len, DSZ);
	assert_int_equal(in.noncanonical, 0);
	pb_free(&b);
}

static void test_time_extend(void **state)
{
	struct pb b;
	struct col c;
	struct pw_page in;
	const uint64_t big = (1ull << 50) + 12345;
	(void)state;
	pb_init(&b, PGSZ, false, 100);
	pb_event_at(&b, 0, 4);
	pb_event_at(&b, (1u << 27) - 1, 4);   /* fits: no extend */
	pb_event_at(&b, 1u << 27, 4);         /* needs an extend: a0 = 1, delta 0 */
	pb_event_at(&b, big, 200);
	pb_commit(&b);
	walk_collect(&b, &c, &in);
	assert_int_equal(in.ndata, 4);
	assert_int_equal(in.nextend, 2);
	assert_int_equal(c.n, 6);
	assert_int_equal(c.r[1].kind, PW_DATA);
	assert_int_equal(c.r[1].delta, (1u << 27) - 1);
	assert_int_equal(c.r[1].ts, 100 + (1u << 27) - 1);
	assert_int_equal(c.r[2].kind, PW_EXTEND);
	assert_int_equal(c.r[2].delta, 0);
	assert_int_equal(c.r[2].value, 1u << 27);
	assert_int_equal(pw__rd32(b.page + 16 + c.r[2].offset + 4), 1);
	assert_int_equal(c.r[3].ts, 100 + (1u << 27) - 1 + (1u << 27));
	assert_int_equal(c.r[4].kind, PW_EXTEND);
	assert_int_equal(c.r[4].value, big);
	assert_int_equal(c.r[5].ts, 100 + (1u << 27) - 1 + (1u << 27) + big);
	assert_int_equal(in.last_ts, c.r[5].ts);
	assert_int_equal(in.small_extends, 0);
	assert_int_equal(in.delta_after_time, 0);
	pb_free(&b);

	/* an extend may be followed by a discarded event (padding) */
	pb_init(&b, PGSZ, false, 0);
	pb_extend(&b, 5);
	pb_pad(&b, 0, 16);
	pb_event(&b, 3, 8, 1);
	pb_commit(&b);
	expect_ok(&b, &in);
	assert_int_equal(in.small_extends, 1);
	assert_int_equal(in.last_ts, 8);
	pb_free(&b);

	/* non-zero delta on the event after an extend: flagged, summed */
	pb_init(&b, PGSZ, false, 0);
	pb_extend(&b, 1u << 30);
	pb_event(&b, 7, 4, 1);
	pb_commit(&b);
	expect_ok(&b, &in);
	assert_int_equal(in.delta_after_time, 1);
	assert_int_equal(in.last_ts, (1u << 30) + 7);
	pb_free(&b);
}

static void test_time_stamp(void **state)
{
	struct pb b;
	struct col c;
	struct pw_page in;
	const uint64_t M = 1ull << 59;
	(void)state;
	/* wrap: running ts just below 2^59, stamp with a small value */
	pb_init(&b, PGSZ, false, M - 100);
	pb_event(&b, 0, 4, 1);
	pb_event(&b, 40, 4, 2);
	pb_stamp(&b, 50);
	pb_event(&b, 0, 4, 3);
	pb_stamp(&b, 60);
	pb_event(&b, 0, 4, 4);
	pb_commit(&b);
	walk_collect(&b, &c, &in);
	assert_int_equal(in.nstamp, 2);
	assert_int_equal(in.stamp_wraps, 1);
	assert_int_equal(c.r[1].ts, M - 60);
	assert_int_equal(c.r[2].kind, PW_STAMP);
	assert_int_equal(c.r[2].value, 50);
	assert_int_equal(c.r[3].ts, M + 50);
	assert_int_equal(c.r[5].ts, M + 60);
	pb_free(&b);

	/* top bits of the running ts are kept; large values use array[0] */
	pb_init(&b, PGSZ, false, 3 * M + 10);
	pb_event(&b, 0, 4, 1);
	pb_stamp(&b, (1ull << 40) + 7);
	pb_event(&b, 0, 4, 1);
	pb_commit(&b);
	expect_ok(&b, &in);
	assert_int_equal(in.last_ts, 3 * M + (1ull << 40) + 7);
	assert_int_equal(in.stamp_wraps, 0);
	pb_free(&b);

	/* going backwards (not a plausible wrap) is an error */
	pb_init(&b, PGSZ, false, 1000000);
	pb_event(&b, 0, 4, 1);
	pb_stamp(&b, 999999);
	pb_event(&b, 0, 4, 1);
	pb_commit(&b);
	expect_err(&b, PW_E_STAMP);
	pb_free(&b);

	/* stamp at the very end, or followed by an extend */
	pb_init(&b, PGSZ, false, 0);
	pb_event(&b, 0, 4, 1);
	pb_stamp(&b, 10);
	pb_commit(&b);
	expect_err(&b, PW_E_EXTEND);
	pb_extend(&b, 1);
	pb_event(&b, 0, 4, 1);
	pb_commit(&b);
	expect_err(&b, PW_E_EXTEND);
	pb_free(&b);

	/* running ts overflow */
	pb_init(&b, PGSZ, false, UINT64_MAX - 5);
	pb_event(&b, 0, 4, 1);
	pb_event(&b, 6, 4, 1);
	pb_commit(&b);
	expect_err(&b, PW_E_TIME);
	pb_free(&b);
}

static void test_padding(void **state)
{
	struct pb b;
	struct col c;
	struct pw_page in;
	(void)state;
	/* mid-page padding (a discarded event), delta added; tail padding */
	pb_init(&b, PGSZ, false, 10);
	pb_event(&b, 0, 20, 1);
	pb_pad(&b, 5, 24);
	pb_pad(&b, 0, 8);      /* delta 0 with a valid length is not null padding */
	pb_event(&b, 2, 20, 2);
	pb_pad_tail(&b);
	pb_commit(&b);
	walk_collect(&b, &c, &in);
	assert_int_equal(in.npad, 3);
	assert_int_equal(in.ndata, 2);
	assert_int_equal(c.r[1].kind, PW_PADDING);
	assert_int_equal(c.r[1].len, 24);
	assert_null(c.r[1].payload);
	assert_int_equal(c.r[2].len, 8);
	assert_false(c.r[2].null_padding);
	assert_int_equal(c.r[3].ts, 17);
	assert_int_equal(c.r[4].offset + c.r[4].len, DSZ);
	assert_false(in.null_padding);
	pb_free(&b);

	/* null padding: fewer than 8 bytes left in the commit area */
	pb_init(&b, PGSZ, false, 10);
	while (b.off + 124 <= DSZ - 4)
		pb_event(&b, 1, 116, 3);
	assert_int_equal(DSZ - 4 - b.off, 108 + HS);
	pb_event(&b, 1, 104 + HS, 4);
	assert_int_equal(b.off, DSZ - 4);
	pb_hdr(&b, 29, 0, 0, false);
	b.off += 4;
	pb_commit(&b);
	walk_collect(&b, &c, &in);
	assert_true(in.null_padding);
	assert_true(c.r[c.n - 1].null_padding);
	assert_int_equal(c.r[c.n - 1].len, 4);
	assert_int_equal(c.r[c.n - 1].offset, DSZ - 4);
	pb_free(&b);

	/* padding length out of range (the padding sits at offset 8) */
	pb_init(&b, PGSZ, false, 0);
	pb_event(&b, 0, 4, 1);
	pb_commit_raw(&b, 16);
	pb_hdr(&b, 29, 0, 0, true); /* array[0] = 0 with 8 bytes left: not null */
	expect_err(&b, PW_E_PADDING);
	pb_hdr(&b, 29, 1, 2, true);
	expect_err(&b, PW_E_PADDING);
	pb_hdr(&b, 29, 1, 8, true); /* 12 bytes but only 8 committed */
	expect_err(&b, PW_E_PADDING);
	pb_commit_raw(&b, 20);
	expect_ok(&b, &in);
	pb_hdr(&b, 29, 1, 6, true); /* 10 bytes: breaks the alignment */
	expect_err(&b, PW_E_ALIGN);
	pb_free(&b);
}

static void test_missed(void **state)
{
	struct pb b;
	struct pw_page in;
	unsigned long cnt = 123456789; /* a long, as the kernel stores it */
	(void)state;
	pb_init(&b, PGSZ, false, 0);
	pb_event(&b, 0, 8, 1);
	pb_commit_raw(&b, b.off | PW_MISSED_EVENTS);
	expect_ok(&b, &in);
	assert_true(in.missed);
	assert_false(in.missed_stored);
	assert_int_equal(in.missed_count, 0);
	assert_int_equal(in.commit, 16);

	memcpy(pb_data(&b) + b.off, &cnt, sizeof cnt);
	pb_commit_raw(&b, b.off | PW_MISSED_EVENTS | PW_MISSED_STORED);
	expect_ok(&b, &in);
	assert_true(in.missed_stored);
	assert_int_equal(in.missed_count, cnt);
	assert_int_equal(in.commit, 16);
	assert_int_equal(in.ndata, 1);

	pb_commit_raw(&b, b.off | PW_MISSED_STORED);
	expect_err(&b, PW_E_MISSED);
	pb_commit_raw(&b, b.off | (1ull << 29));
	expect_err(&b, PW_E_FLAGS);
	if (sizeof(long) > 4) {
		pb_commit_raw(&b, b.off | (1ull << 40));
		expect_err(&b, PW_E_FLAGS);
	}
	pb_free(&b);

	/* stored count has no room after a full page; stored at an odd 4 offset */
	pb_init(&b, PGSZ, false, 0);
	pb_event(&b, 0, MAXEV, 1);
	pb_commit_raw(&b, b.off | PW_MISSED_EVENTS | PW_MISSED_STORED);
	expect_err(&b, PW_E_MISSED);
	pb_free(&b);
	pb_init(&b, 64, false, 0);
	pb_event(&b, 0, 36 + HS, 1);  /* 40 bytes, 8 left */
	memcpy(pb_data(&b) + b.off, &cnt, sizeof cnt);
	pb_commit_raw(&b, b.off | PW_MISSED_EVENTS | PW_MISSED_STORED);
	expect_ok(&b, &in);
	assert_int_equal(in.missed_count, cnt);
	pb_commit_raw(&b, (b.off + 4 + HS) | PW_MISSED_EVENTS | PW_MISSED_STORED);
	expect_err(&b, PW_E_MISSED);
	pb_free(&b);
}

static void test_align8(void **state)
{
	static const uint32_t sizes[] = {0, 5, 8, 12, 100, 112, 113, 200};
	struct pb b;
	struct col c;
	struct pw_page in;
	(void)state;
	pb_init(&b, PGSZ, true, 0);
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		pb_event(&b, (uint32_t)i, sizes[i], (uint8_t)i);
	pb_extend(&b, 1ull << 33);
	pb_event(&b, 0, 16, 9);
	pb_pad_tail(&b);
	pb_commit(&b);
	walk_collect(&b, &c, &in);
	assert_int_equal(in.ndata, 9);
	assert_int_equal(in.noncanonical, 0);
	for (int i = 0; i < c.n; i++) {
		if (c.r[i].kind != PW_DATA)
			continue;
		assert_int_equal(c.r[i].type_len, 0);
		assert_int_equal(c.r[i].offset % 8, 0);
		assert_int_equal(c.r[i].len % 8, 0);
		assert_int_equal((uintptr_t)(c.r[i].payload - b.page) % 8, H % 8); /* 8-aligned from data[] */
	}
	assert_int_equal(c.r[0].len, 16);
	assert_int_equal(c.r[1].len, 16);
	assert_int_equal(c.r[3].len, 24);
	pb_free(&b);

	/* the same page walked in 4-byte mode: valid but not canonical */
	pb_init(&b, PGSZ, true, 0);
	pb_event(&b, 0, 8, 1);
	pb_commit(&b);
	b.align8 = false;
	expect_ok(&b, &in);
	assert_int_equal(in.noncanonical, 1);
	pb_free(&b);

	/* rejections: a type_len record, a 12-byte type-0 record, a misaligned event */
	pb_init(&b, PGSZ, false, 0);
	pb_event(&b, 0, 4, 1);
	pb_commit(&b);
	b.align8 = true;
	expect_err(&b, PW_E_ALIGN);
	pb_free(&b);
	pb_init(&b, PGSZ, true, 0);
	pb_hdr(&b, 0, 0, 8, true);
	b.off += 12;
	pb_event(&b, 0, 4, 1);
	pb_commit(&b);
	expect_err(&b, PW_E_ALIGN);
	pb_free(&b);
	pb_init(&b, PGSZ, true, 0);
	pb_pad(&b, 1, 12);
	pb_event(&b, 0, 4, 1);
	pb_commit(&b);
	expect_err(&b, PW_E_ALIGN);
	pb_free(&b);
}

static void test_flags_and_canonical(void **state)
{
	struct pb b;
	struct pw_page in;
	(void)state;
	pb_init(&b, PGSZ, false, 0);
	pb_event(&b, 9, 4, 1);
	pb_commit(&b);
	expect_ok(&b, &in);
	assert_true(in.first_delta_nonzero);
	assert_int_equal(in.first_ts, 9);
	pb_free(&b);

	pb_init(&b, PGSZ, false, 0);
	pb_hdr(&b, 2, 0, 0, false);  /* 12-byte record: legal, never produced */
	b.off += 12;
	pb_hdr(&b, 0, 0, 12, true);  /* type-0 with an 8-byte payload in 4-byte mode */
	b.off += 16;
	pb_hdr(&b, 0, 0, 4, true);   /* type-0 with an empty payload */
	b.off += 8;
	pb_event(&b, 0, 4, 1);
	pb_commit(&b);
	expect_ok(&b, &in);
	assert_int_equal(in.ndata, 4);
	assert_int_equal(in.noncanonical, 3);
	assert_int_equal(in.first_noncanonical, 0);
	pb_free(&b);
}

/* ---- tests: rejections ---------------------------------------------------- */

static void test_reject_commit(void **state)
{
	struct pb b;
	struct pw_page in;
	const char *err = NULL;
	(void)state;
	pb_init(&b, PGSZ, false, 0);
	pb_commit_raw(&b, DSZ + 4);
	expect_err(&b, PW_E_COMMIT);
	pb_commit_raw(&b, PW_COMMIT_MASK);
	expect_err(&b, PW_E_COMMIT);
	pb_commit_raw(&b, 6);
	expect_err(&b, PW_E_COMMIT);
	pb_commit_raw(&b, 0); /* empty page */
	expect_ok(&b, &in);
	assert_int_equal(in.ndata + in.npad + in.nextend + in.nstamp, 0);
	assert_int_equal(pw_walk_page(NULL, PGSZ, false, NULL, NULL, &in, &err), PW_E_ARG);
	assert_non_null(err);
	assert_int_equal(pw_walk_page(b.page, H - 1, false, NULL, NULL, NULL, &err), PW_E_ARG);
	/* a 16-byte page (12 with a 32-bit long) holds only the header */
	assert_int_equal(pw_walk_page(b.page, H, false, NULL, NULL, &in, &err), 0);
	pb_free(&b);
}

static void test_reject_records(void **state)
{
	struct pb b;
	(void)state;
	/* record crossing commit */
	pb_init(&b, PGSZ, false, 0);
	pb_event(&b, 0, 40, 1);
	pb_commit_raw(&b, 24);
	expect_err(&b, PW_E_CROSS);
	pb_commit_raw(&b, 4); /* only a header's worth */
	expect_err(&b, PW_E_CROSS);
	pb_free(&b);

	/* type-0 array[0] < 4, misaligned, huge */
	static const uint32_t small[] = {0, 1, 3};
	for (size_t i = 0; i < 3; i++) {
		pb_init(&b, PGSZ, false, 0);
		pb_hdr(&b, 0, 0, small[i], true);
		pb_commit_raw(&b, 64);
		expect_err(&b, PW_E_TYPE0);
		pb_free(&b);
	}
	pb_init(&b, PGSZ, false, 0);
	pb_hdr(&b, 0, 0, 6, true);
	pb_commit_raw(&b, 64);
	expect_err(&b, PW_E_ALIGN);
	pb_hdr(&b, 0, 0, 0xfffffffcu, true);
	expect_err(&b, PW_E_CROSS);
	pb_hdr(&b, 0, 0, DSZ - 4 + 4, true);
	pb_commit_raw(&b, DSZ);
	expect_err(&b, PW_E_CROSS);
	pb_free(&b);

	/* extend as the last record, extend followed by null padding */
	pb_init(&b, PGSZ, false, 0);
	pb_event(&b, 0, 4, 1);
	pb_extend(&b, 1u << 28);
	pb_commit(&b);
	expect_err(&b, PW_E_EXTEND);
	pb_hdr(&b, 29, 0, 0, false);
	b.off += 4;
	pb_commit(&b);
	expect_err(&b, PW_E_EXTEND);
	pb_free(&b);
}

/* ---- callbacks, summaries, sequences -------------------------------------- */

static int cb_never(const struct pw_record *r, void *ctx)
{
	(void)r;
	(void)ctx;
	fail_msg("callback called on an invalid page");
	return 1;
}

static void test_callback(void **state)
{
	struct pb b;
	struct col c;
	struct pw_page in;
	const char *err;
	(void)state;
	pb_init(&b, PGSZ, false, 0);
	for (int i = 0; i < 10; i++)
		pb_event(&b, 1, 8, (uint8_t)i);
	pb_commit(&b);
	memset(&c, 0, sizeof c);
	c.stop_at = 4;
	assert_int_equal(pw_walk_page(b.page, PGSZ, false, collect, &c, &in, &err), 77);
	assert_int_equal(c.n, 4);
	/* an error at the end: the callback is never called */
	pb_extend(&b, 1u << 27);
	pb_commit(&b);
	assert_int_equal(pw_walk_page(b.page, PGSZ, false, cb_never, NULL, &in, &err),
			 PW_E_EXTEND);
	assert_int_equal(in.err_offset, 160);
	pb_free(&b);
}

static void test_count_and_sequence(void **state)
{
	struct pb p1, p2, p3;
	uint32_t nd, np, ne, ns;
	uint64_t f, l, last;
	const char *err;
	(void)state;
	pb_init(&p1, PGSZ, false, 100);
	pb_event(&p1, 0, 4, 1);
	pb_event_at(&p1, 1ull << 28, 4);
	pb_stamp(&p1, 1ull << 29);
	pb_event(&p1, 0, 4, 1);
	pb_pad_tail(&p1);
	pb_commit(&p1);
	assert_int_equal(pw_count(p1.page, PGSZ, false, &nd, &np, &ne, &ns, &f, &l), 0);
	assert_int_equal(nd, 3);
	assert_int_equal(np, 1);
	assert_int_equal(ne, 1);
	assert_int_equal(ns, 1);
	assert_int_equal(f, 100);
	assert_int_equal(l, 1ull << 29);
	assert_int_equal(pw_count(p1.page, PGSZ, false, NULL, NULL, NULL, NULL, NULL, NULL), 0);

	pb_init(&p2, PGSZ, false, 1ull << 29);   /* starts at the same time */
	pb_event(&p2, 0, 4, 1);
	pb_commit(&p2);
	pb_init(&p3, PGSZ, false, (1ull << 29) - 1); /* one before: out of order */
	pb_event(&p3, 0, 4, 1);
	pb_commit(&p3);

	assert_int_equal(pw_check_sequence(0, p1.page, PGSZ, false, &last, &err), 0);
	assert_int_equal(last, 1ull << 29);
	assert_int_equal(pw_check_sequence(last, p2.page, PGSZ, false, &last, &err), 0);
	assert_int_equal(pw_check_sequence(last, p3.page, PGSZ, false, &last, &err), PW_E_SEQUENCE);
	assert_non_null(strstr(err, "previous"));
	assert_int_equal(last, 1ull << 29);
	/* an empty page passes the previous ts through */
	pb_commit_raw(&p3, 0);
	assert_int_equal(pw_check_sequence(77, p3.page, PGSZ, false, &last, &err), 0);
	assert_int_equal(last, 77);
	pb_free(&p1);
	pb_free(&p2);
	pb_free(&p3);
}

/* ---- fuzz ------------------------------------------------------------------ */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	uint64_t x = rng_state; /* xorshift64* */
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545f4914f6cdd1dull;
}

struct fz {
	const uint8_t *page;
	size_t size;
	uint32_t commit, last_end;
	uint64_t last_ts;
	int n;
};

/* Everything handed to a callback must lie inside the committed area. */
static int fz_check(const struct pw_record *r, void *ctx)
{
	struct fz *z = ctx;
	assert_true(r->offset == z->last_end);
	assert_true((uint64_t)r->offset + r->len <= z->commit);
	assert_true(r->len >= 4);
	if (r->payload) {
		assert_true(r->payload >= z->page + H + r->offset + 4);
		assert_true(r->payload + r->payload_len <= z->page + H + z->commit);
	}
	assert_true(r->ts >= z->last_ts);
	z->last_ts = r->ts;
	z->last_end = r->offset + r->len;
	z->n++;
	return 0;
}

static void fuzz_one(const uint8_t *src, size_t size, bool align8, int *nok)
{
	uint8_t *page = malloc(size); /* exact size: ASan catches any overread */
	struct pw_page in;
	struct fz z = {page, size, 0, 0, 0, 0};
	const char *err = NULL;
	int rc;

	assert_non_null(page);
	memcpy(page, src, size);
	rc = pw_walk_page(page, size, align8, NULL, NULL, &in, &err);
	if (rc == 0) {
		z.commit = in.commit;
		z.last_ts = in.time_stamp;
		assert_int_equal(pw_walk_page(page, size, align8, fz_check, &z, &in, &err), 0);
		assert_int_equal((uint32_t)z.n, in.ndata + in.npad + in.nextend + in.nstamp);
		assert_true(z.last_end == in.commit);
		++*nok;
	} else {
		assert_true(rc < 0 && rc >= PW_E_TIME);
		assert_non_null(err);
	}
	free(page);
}

static void test_fuzz(void **state)
{
	static uint8_t buf[PGSZ];
	int nok = 0, nvalid_src = 0;
	(void)state;
	for (int it = 0; it < 10000; it++) {
		size_t size = H + (size_t)(rng() % (PGSZ - H + 1));
		bool align8 = rng() & 1;
		int mode = (int)(rng() % 4);

		if (it % 10 == 0)
			size = PGSZ;
		if (size < H)
			size = H;
		if (mode == 0) { /* raw garbage */
			for (size_t i = 0; i < size; i++)
				buf[i] = (uint8_t)rng();
		} else { /* a valid page, then mutated */
			struct pb b;
			pb_init(&b, size, align8, rng() % (1ull << 62));
			while (b.off + 200 < size - H) {
				uint32_t k = (uint32_t)(rng() % 10);
				if (k == 0)
					pb_extend(&b, rng() % (1ull << 40));
				else if (k == 1)
					pb_stamp(&b, (b.ts + rng() % 1000) & ((1ull << 59) - 1));
				else if (k == 2)
					pb_pad(&b, (uint32_t)(rng() % 8), 8 * (1 + (uint32_t)(rng() % 4)));
				pb_event(&b, (uint32_t)(rng() % 1000), (uint32_t)(rng() % 130), 0x5a);
			}
			if (rng() & 1 && size - H - b.off >= 8)
				pb_pad(&b, 1, (uint32_t)(size - H - b.off) & ~3u);
			pb_commit_raw(&b, b.off | (rng() % 4 == 0 ? PW_MISSED_EVENTS : 0));
			memcpy(buf, b.page, size);
			if (pw_walk_page(buf, size, align8, NULL, NULL, NULL, NULL) == 0)
				nvalid_src++;
			pb_free(&b);
			for (int m = (int)(rng() % (unsigned)(mode * 3)); m > 0; m--) {
				size_t at = (size_t)(rng() % size);
				if (rng() & 1)
					buf[at] ^= (uint8_t)(1u << (rng() % 8));
				else
					buf[at] = (uint8_t)rng();
			}
			if (rng() % 8 == 0) { /* random commit word */
				uint64_t cw = rng() % 2 ? rng() : rng() % (size + 64);
				memcpy(buf + 8, &cw, 8);
			}
		}
		fuzz_one(buf, size, align8, &nok);
	}
	print_message("  fuzz: %d of 10000 pages valid (%d before mutation)\n", nok, nvalid_src);
	assert_true(nok > 500);
	assert_true(nvalid_src > 5000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_expected_len),
		cmocka_unit_test(test_size_classes),
		cmocka_unit_test(test_mixed_page),
		cmocka_unit_test(test_time_extend),
		cmocka_unit_test(test_time_stamp),
		cmocka_unit_test(test_padding),
		cmocka_unit_test(test_missed),
		cmocka_unit_test(test_align8),
		cmocka_unit_test(test_flags_and_canonical),
		cmocka_unit_test(test_reject_commit),
		cmocka_unit_test(test_reject_records),
		cmocka_unit_test(test_callback),
		cmocka_unit_test(test_count_and_sequence),
		cmocka_unit_test(test_fuzz),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
