/* test_modes.c - overwrite and producer/consumer modes with exact accounting
 * SPDX-License-Identifier: MIT
 *
 * Every expected value is computed here from what the test wrote (sequence
 * numbers, a controlled clock, the kernel event-size rule and the page
 * geometry), never taken from the library's statistics alone. Unread events
 * are counted independently by walking the pages with tests/pagewalk.h.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

/* LDFLAGS: -Wl,--wrap=thrd_yield -Wl,--wrap=sched_yield */
#include "one_thread.h" /* one thread: the library's yields counted, not made */

/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pagewalk.h"
#include "fixture.h" /* now, test_clock, g_rb, teardown, mk, drop_rb, stats */

/* ---- fixtures ----------------------------------------------------------- */

/* Payloads: a 4-byte sequence number followed by bytes derived from it. */
#define MAXSEQ 40000
static uint64_t ts_of[MAXSEQ];
static uint32_t len_of[MAXSEQ];

static uint8_t fill_byte(uint32_t seq, uint32_t i) { return (uint8_t)(seq * 7u + i * 13u + 1u); }

static void fill_payload(void *p, uint32_t seq, uint32_t len)
{
	uint8_t *b = p;
	uint32_t i;
	memcpy(b, &seq, 4);
	for (i = 4; i < len; i++)
		b[i] = fill_byte(seq, i);
}

/* Write event seq of len bytes at clock now += step. Returns 1, or 0 when dropped. */
static int put(struct ringbuf *rb, unsigned cpu, uint32_t seq, uint32_t len, uint64_t step)
{
	void *p;
	assert_true(seq < MAXSEQ);
	now += step;
	p = ringbuf_reserve(rb, cpu, len);
	if (!p)
		return 0;
	fill_payload(p, seq, len);
	ts_of[seq] = now; /* before the commit: a reader may run inside it */
	len_of[seq] = len;
	ringbuf_commit(rb, cpu, p);
	return 1;
}

/* Consume one event and check its payload, length and time stamp against what
 * was written. Returns its sequence number. */
static uint32_t take(struct ringbuf *rb, unsigned cpu, uint64_t *lost)
{
	struct ringbuf_record rec;
	uint32_t seq, i;
	const uint8_t *b;
	assert_int_equal(ringbuf_consume(rb, cpu, &rec), 1);
	assert_true(rec.len >= 4);
	memcpy(&seq, rec.data, 4);
	assert_true(seq < MAXSEQ);
	assert_int_equal(rec.len, (len_of[seq] + 3u) / 4u * 4u + (len_of[seq] >= 5 && len_of[seq] <= 8 ? 4u : 0u));
	b = rec.data;
	for (i = 4; i < len_of[seq]; i++)
		assert_int_equal(b[i], fill_byte(seq, i));
	assert_int_equal(rec.ts, ts_of[seq]);
	assert_int_equal(rec.cpu, cpu);
	*lost = rec.lost;
	return seq;
}

static void assert_empty(struct ringbuf *rb, unsigned cpu)
{
	struct ringbuf_record rec;
	assert_int_equal(ringbuf_consume(rb, cpu, &rec), 0);
	assert_true(ringbuf_empty_cpu(rb, cpu));
}

/* ---- independent count of unread events (pagewalk) ---------------------- */

struct scan {
	uint32_t read_off; /* consumed bytes of the reader page */
	int role;
	uint64_t events;   /* unread data records */
	uint64_t bytes;    /* bytes of unread records */
};

static int scan_rec(const struct pw_record *r, void *ctx)
{
	struct scan *s = ctx;
	if (s->role == RINGBUF__PAGE_READER && r->offset < s->read_off)
		return 0;
	s->bytes += r->len;
	if (r->kind == PW_DATA)
		s->events++;
	return 0;
}

static int scan_page(const void *page, size_t ps, int role, void *ctx)
{
	struct scan *s = ctx;
	struct pw_page info;
	const char *err = NULL;
	int rc;
	s->role = role;
	rc = pw_walk_page(page, ps, false, scan_rec, s, &info, &err);
	if (rc != 0)
		fail_msg("page walk failed (%d): %s", rc, err ? err : "?");
	return 0;
}

static struct scan scan_unread(struct ringbuf *rb, unsigned cpu)
{
	struct scan s;
	memset(&s, 0, sizeof s);
	s.read_off = ringbuf__cpu(rb, cpu)->read;
	assert_int_equal(ringbuf__walk_pages(rb, cpu, scan_page, &s), 0);
	return s;
}

/* The accounting identity, every term computed independently:
 * committed == entries + overrun + read_events. */
static void check_accounting(struct ringbuf *rb, unsigned cpu, uint64_t written, uint64_t nread)
{
	struct ringbuf_stats st = stats(rb, cpu);
	struct scan s = scan_unread(rb, cpu);
	assert_int_equal(st.committed, written);
	assert_int_equal(st.read_events, nread);
	assert_int_equal(st.entries, s.events);
	assert_true(written >= nread + s.events);
	assert_int_equal(st.overrun, written - nread - s.events);
	assert_int_equal(st.committed, st.entries + st.overrun + st.read_events);
	assert_int_equal(st.bytes, s.bytes);
}

#define PG 128u                   /* small pages: data area 112 bytes */
#define NPG 4u                    /* ring pages */
#define BSIZE (PG - 16u)
#define EV4 8u                    /* a 4-byte payload takes 8 bytes */
#define EPP (BSIZE / EV4)         /* 14 four-byte events per page */

/* ---- overwrite, no reader until the end --------------------------------- */

static void overwrite_no_reader(uint32_t n)
{
	struct ringbuf *rb = mk(1, PG, NPG, RINGBUF_MODE_OVERWRITE);
	struct ringbuf_stats st;
	uint32_t i, last_page, first_kept, k, lostn;
	uint64_t lost;

	assert_int_equal(pw_expected_len(4, false), EV4);
	for (i = 0; i < n; i++)
		assert_int_equal(put(rb, 0, i, 4, 1), 1);

	/* page j (in write order) holds events j*EPP .. j*EPP+EPP-1; the last
	 * NPG pages written are still there */
	last_page = (n - 1) / EPP;
	first_kept = last_page >= NPG - 1 ? last_page - (NPG - 1) : 0;
	lostn = first_kept * EPP;
	k = n - lostn;

	check_accounting(rb, 0, n, 0);
	st = stats(rb, 0);
	assert_int_equal(st.entries, k);
	assert_int_equal(st.overrun, lostn);
	assert_int_equal(st.pages_lost, first_kept);
	assert_int_equal(st.pages_touched, last_page);
	assert_int_equal(st.dropped_events, 0);
	assert_int_equal(st.commit_overrun, 0);
	assert_int_equal(st.oldest_event_ts, ts_of[lostn]);

	for (i = 0; i < k; i++) {
		assert_int_equal(take(rb, 0, &lost), lostn + i);
		assert_int_equal(lost, i == 0 ? lostn : 0);
	}
	assert_empty(rb, 0);

	st = stats(rb, 0);
	assert_int_equal(st.overrun, n - k);
	assert_int_equal(st.read_events, k);
	assert_int_equal(st.committed, n);
	assert_int_equal(st.entries, 0);
	assert_int_equal(st.pages_lost, first_kept);
	assert_int_equal(st.pages_read, last_page - first_kept + 1);
	assert_int_equal(st.bytes, 0);
	assert_int_equal(st.oldest_event_ts, 0);
	check_accounting(rb, 0, n, k);
	drop_rb(rb);
}

static void test_overwrite_without_reader_keeps_exactly_the_last_pages(void **state)
{
	static const uint32_t ns[] = { 1, EPP, NPG * EPP, NPG * EPP + 1, NPG * EPP + EPP,
				       NPG * EPP + EPP + 1, 1000, 1001, 3 * 1000 + 7 };
	size_t i;
	(void)state;
	for (i = 0; i < sizeof ns / sizeof ns[0]; i++)
		overwrite_no_reader(ns[i]);
}

/* ---- overwrite with an interleaved reader ------------------------------- */

static uint64_t rng_state;
static uint32_t rnd(void)
{
	/* xorshift64*, fixed seed per test */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}

static void overwrite_interleaved(size_t page, unsigned npages, uint64_t seed)
{
	struct ringbuf *rb = mk(1, page, npages, RINGBUF_MODE_OVERWRITE);
	uint64_t written = 0, nread = 0, sum_lost = 0, lost;
	int64_t last = -1;
	unsigned round, gaps = 0;
	const uint32_t maxlen = (uint32_t)ringbuf_max_event_size(rb) < 24 ? 4 : 24;
	rng_state = seed;

	for (round = 0; round < 300; round++) {
		uint32_t nw = rnd() % 90, nr = rnd() % 12, i;
		for (i = 0; i < nw; i++) {
			uint32_t len = 4 + 4 * (rnd() % (maxlen / 4)); /* page-end padding */
			assert_int_equal(put(rb, 0, (uint32_t)written, len, 1 + rnd() % 5), 1);
			written++;
		}
		check_accounting(rb, 0, written, nread);
		for (i = 0; i < nr; i++) {
			struct ringbuf_record rec;
			uint32_t seq;
			if (ringbuf_peek(rb, 0, &rec) == 0)
				break;
			seq = take(rb, 0, &lost);
			assert_true((int64_t)seq > last);
			/* every gap is reported, exactly, on the first event after it */
			assert_int_equal(lost, (uint64_t)(seq - (last + 1)));
			if (lost)
				gaps++;
			sum_lost += lost;
			last = seq;
			nread++;
			check_accounting(rb, 0, written, nread);
		}
	}
	for (;;) {
		struct ringbuf_record rec;
		uint32_t seq;
		if (ringbuf_peek(rb, 0, &rec) == 0)
			break;
		seq = take(rb, 0, &lost);
		assert_int_equal(lost, (uint64_t)(seq - (last + 1)));
		sum_lost += lost;
		last = seq;
		nread++;
	}
	assert_int_equal(last, (int64_t)written - 1); /* the newest event is always kept */
	assert_int_equal(sum_lost + nread, written);
	assert_true(gaps > 10); /* the scenario did overwrite, many times */
	check_accounting(rb, 0, written, nread);
	assert_int_equal(stats(rb, 0).overrun, sum_lost);
	assert_int_equal(stats(rb, 0).entries, 0);
	drop_rb(rb);
}

static void test_overwrite_interleaved_reader_gaps_equal_reported_loss(void **state)
{
	(void)state;
	overwrite_interleaved(PG, NPG, 0x9e3779b97f4a7c15ull);
}

/* The same on the smallest rings and pages the library accepts. */
static void test_overwrite_interleaved_reader_small_rings(void **state)
{
	(void)state;
	overwrite_interleaved(PG, 2, 1);
	overwrite_interleaved(PG, 3, 2);
	overwrite_interleaved(64, 2, 3);
	overwrite_interleaved(64, 5, 4);
	overwrite_interleaved(256, 2, 5);
}

/* ---- producer/consumer -------------------------------------------------- */

static void test_producer_consumer_drops_new_events_and_reports_them_in_place(void **state)
{
	struct ringbuf *rb = mk(1, PG, NPG, RINGBUF_MODE_PRODUCER_CONSUMER);
	struct ringbuf_stats st;
	uint32_t seq = 0, i, drops1 = 0, drops2 = 0, first_after;
	uint64_t lost;
	(void)state;

	/* fill: the NPG ring pages hold exactly NPG * EPP events */
	while (put(rb, 0, seq, 4, 1))
		seq++;
	assert_int_equal(seq, NPG * EPP);
	drops1 = 1;
	for (i = 0; i < 25; i++) {
		assert_null(ringbuf_reserve(rb, 0, 4 + 4 * (i % 3)));
		drops1++;
	}
	assert_int_equal(ringbuf_write(rb, 0, "abcd", 4), RINGBUF_ENOSPC);
	drops1++;
	st = stats(rb, 0);
	assert_int_equal(st.dropped_events, drops1);
	assert_int_equal(st.overrun, 0);
	assert_int_equal(st.commit_overrun, 0);
	assert_int_equal(st.pages_lost, 0);
	check_accounting(rb, 0, seq, 0);

	/* the data read back is the first events, in order */
	for (i = 0; i < EPP + 6; i++) {
		assert_int_equal(take(rb, 0, &lost), i);
		assert_int_equal(lost, 0);
	}
	check_accounting(rb, 0, seq, EPP + 6);

	/* two pages were handed to the reader: two pages of room again */
	first_after = seq;
	for (i = 0; i < 2 * EPP; i++) {
		assert_int_equal(put(rb, 0, seq, 4, 1), 1);
		seq++;
	}
	for (i = 0; i < 7; i++) {
		assert_int_equal(put(rb, 0, seq, 4, 1), 0);
		drops2++;
	}
	st = stats(rb, 0);
	assert_int_equal(st.dropped_events, drops1 + drops2);
	check_accounting(rb, 0, seq, EPP + 6);

	/* read everything: the first drops are reported right before the first
	 * event written after them, and nowhere else */
	for (i = EPP + 6; i < seq; i++) {
		assert_int_equal(take(rb, 0, &lost), i);
		assert_int_equal(lost, i == first_after ? drops1 : 0);
	}
	assert_empty(rb, 0);
	check_accounting(rb, 0, seq, seq);

	/* the second drops are reported on the next event */
	assert_int_equal(put(rb, 0, seq, 4, 1), 1);
	assert_int_equal(take(rb, 0, &lost), seq);
	assert_int_equal(lost, drops2);
	seq++;
	assert_empty(rb, 0);

	st = stats(rb, 0);
	assert_int_equal(st.dropped_events, drops1 + drops2);
	assert_int_equal(st.overrun, 0);
	assert_int_equal(st.pages_lost, 0);
	assert_int_equal(st.commit_overrun, 0);
	assert_int_equal(st.committed, seq);
	assert_int_equal(st.read_events, seq);
	assert_int_equal(st.entries, 0);
	drop_rb(rb);
}

/* Drops while the reader holds nothing and the writer is on the reader page. */
static void test_producer_consumer_long_run_every_drop_counted(void **state)
{
	struct ringbuf *rb = mk(1, PG, NPG, RINGBUF_MODE_PRODUCER_CONSUMER);
	uint32_t seq = 0, round;
	uint64_t nulls = 0, reported = 0, nread = 0, lost;
	(void)state;
	rng_state = 12345;
	for (round = 0; round < 400; round++) {
		uint32_t nw = rnd() % 70, nr = rnd() % 60, i;
		for (i = 0; i < nw; i++) {
			uint32_t len = 4 + 4 * (rnd() % 8);
			if (put(rb, 0, seq, len, 1 + rnd() % 3)) {
				seq++;
			} else {
				nulls++;
			}
		}
		for (i = 0; i < nr; i++) {
			struct ringbuf_record rec;
			uint32_t s;
			if (ringbuf_peek(rb, 0, &rec) == 0)
				break;
			s = take(rb, 0, &lost);
			/* nothing is ever lost from what was accepted */
			assert_int_equal(s, nread);
			reported += lost;
			nread++;
		}
		assert_int_equal(stats(rb, 0).dropped_events, nulls);
		check_accounting(rb, 0, seq, nread);
		assert_int_equal(stats(rb, 0).overrun, 0);
	}
	while (ringbuf_empty_cpu(rb, 0) == false) {
		assert_int_equal(take(rb, 0, &lost), nread);
		reported += lost;
		nread++;
	}
	/* drops not followed by an accepted event are not reported yet */
	assert_int_equal(put(rb, 0, seq, 4, 1), 1);
	assert_int_equal(take(rb, 0, &lost), seq);
	reported += lost;
	seq++;
	nread++;
	assert_int_equal(reported, nulls);
	assert_true(nulls > 100);
	assert_int_equal(stats(rb, 0).commit_overrun, 0);
	check_accounting(rb, 0, seq, nread);
	drop_rb(rb);
}

/* ---- a reader running at every labelled step of the write path ----------
 * The hook drains the buffer (as a reader on another CPU could at that
 * instant) at one testpoint, every time the writer passes it. Whatever it
 * gets must be committed events in order, with every gap reported exactly;
 * a writer interrupted mid-push may make it return RINGBUF_EAGAIN, a reader
 * interrupted by itself RINGBUF_EBUSY, never anything else. */

struct rstep {
	int point;
	int busy;
	int mode;
	int64_t last;
	uint64_t nread, sum_lost, fired, got, eagain, ebusy;
};

static void rstep_drain(struct ringbuf *rb, struct rstep *x, int in_hook)
{
	for (;;) {
		struct ringbuf_record rec;
		uint32_t seq;
		uint64_t lost;
		int r = ringbuf_peek(rb, 0, &rec);
		if (r == RINGBUF_EAGAIN && in_hook) {
			x->eagain++;
			return;
		}
		if (r == RINGBUF_EBUSY && in_hook) {
			x->ebusy++;
			return;
		}
		assert_true(r >= 0);
		if (r == 0)
			return;
		seq = take(rb, 0, &lost);
		assert_true((int64_t)seq > x->last);
		if (x->mode == RINGBUF_MODE_OVERWRITE)
			assert_int_equal(lost, (uint64_t)(seq - (x->last + 1)));
		else
			assert_int_equal(seq, (uint32_t)(x->last + 1));
		x->sum_lost += lost;
		x->last = seq;
		x->nread++;
		if (in_hook)
			x->got++;
	}
}

static void rstep_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	struct rstep *x = ctx;
	(void)cpu;
	if (point != x->point || x->busy)
		return;
	x->busy = 1;
	x->fired++;
	rstep_drain(rb, x, 1);
	x->busy = 0;
}

static void reader_at_step(int point, int mode)
{
	struct ringbuf *rb = mk(1, PG, NPG, mode);
	struct rstep x;
	uint32_t seq = 0, i;
	uint64_t nulls = 0, discards = 0, lost;

	memset(&x, 0, sizeof x);
	x.point = point;
	x.mode = mode;
	x.last = -1;
	rng_state = 1000 + (uint64_t)point;
	ringbuf__set_testpoint_hook(rstep_hook, &x);
	for (i = 0; i < 1500; i++) {
		uint32_t len = 4 + 4 * (rnd() % 6);
		if (rnd() % 8 == 0) {
			void *p;
			now += 1;
			p = ringbuf_reserve(rb, 0, len);
			if (p) {
				ringbuf_discard(rb, 0, p);
				discards++;
			} else {
				nulls++;
			}
		} else if (put(rb, 0, seq, len, 1 + rnd() % 4)) {
			seq++;
		} else {
			nulls++;
		}
		/* the hook reads at most when the writer passes its point: let the
		 * buffer fill now and then even when it fires on every event */
		if (rnd() % 3 == 0)
			x.busy = rnd() % 2;
		if (i % 97 == 0) {
			/* a plain reader (the hook at READER_S2 runs inside it) */
			x.busy = 0;
			rstep_drain(rb, &x, 0);
		}
		check_accounting(rb, 0, seq, x.nread);
		assert_int_equal(stats(rb, 0).discarded, discards);
		assert_int_equal(stats(rb, 0).dropped_events + stats(rb, 0).commit_overrun, nulls);
	}
	x.busy = 0;
	rstep_drain(rb, &x, 0);
	/* one more event, so that drops at the very end are reported too */
	ringbuf__set_testpoint_hook(NULL, NULL);
	assert_int_equal(put(rb, 0, seq, 4, 1), 1);
	seq++;
	assert_int_equal(take(rb, 0, &lost), seq - 1);
	assert_true((int64_t)seq - 1 > x.last);
	x.sum_lost += lost;
	x.nread++;
	assert_empty(rb, 0);
	check_accounting(rb, 0, seq, x.nread);
	/* everything is accounted for: read, overwritten, or dropped-and-reported */
	assert_int_equal(x.nread + stats(rb, 0).overrun, seq);
	assert_int_equal(x.sum_lost, stats(rb, 0).overrun + nulls);
	if (point == RINGBUF__TP_READER_S2) {
		assert_true(x.fired > 0);
		assert_int_equal(x.ebusy, x.fired);
	} else if (mode == RINGBUF_MODE_PRODUCER_CONSUMER &&
		   ((point >= RINGBUF__TP_H1_COUNTED && point <= RINGBUF__TP_H3_DONE) ||
		    point == RINGBUF__TP_H1_CLAIMED || point == RINGBUF__TP_H1_OVERRUN)) {
		assert_int_equal(x.fired, 0); /* no head push without overwriting */
	} else if (mode == RINGBUF_MODE_OVERWRITE && point == RINGBUF__TP_DROP_DECIDED) {
		/* drops are rare with a reader in overwrite mode (commit_overrun) */
	} else if (x.fired == 0) {
		fail_msg("testpoint %d never reached (mode %d)", point, mode);
	}
	drop_rb(rb);
}

static void test_reader_at_every_write_step_keeps_exact_accounting(void **state)
{
	int point, mode;
	(void)state;
	for (mode = 0; mode < 2; mode++)
		for (point = RINGBUF__TP_A_TIME; point < RINGBUF__TP_COUNT; point++)
			reader_at_step(point, mode);
}

/* ---- run-time mode switch ------------------------------------------------ */

static void test_set_mode_switches_between_dropping_and_overwriting(void **state)
{
	struct ringbuf *rb = mk(1, PG, NPG, RINGBUF_MODE_PRODUCER_CONSUMER);
	struct ringbuf_stats st;
	uint32_t seq = 0, i;
	uint64_t lost;
	(void)state;

	assert_int_equal(ringbuf_get_mode(rb), RINGBUF_MODE_PRODUCER_CONSUMER);
	while (put(rb, 0, seq, 4, 1))
		seq++;
	assert_int_equal(seq, NPG * EPP);
	assert_int_equal(stats(rb, 0).dropped_events, 1);

	/* overwrite: the same full buffer now accepts, losing the oldest page */
	assert_int_equal(ringbuf_set_mode(rb, RINGBUF_MODE_OVERWRITE), 0);
	assert_int_equal(ringbuf_get_mode(rb), RINGBUF_MODE_OVERWRITE);
	for (i = 0; i < EPP; i++, seq++)
		assert_int_equal(put(rb, 0, seq, 4, 1), 1);
	st = stats(rb, 0);
	assert_int_equal(st.overrun, EPP);
	assert_int_equal(st.pages_lost, 1);
	assert_int_equal(st.dropped_events, 1);

	/* back to producer/consumer: full again, the next event is dropped */
	assert_int_equal(ringbuf_set_mode(rb, RINGBUF_MODE_PRODUCER_CONSUMER), 0);
	assert_int_equal(put(rb, 0, seq, 4, 1), 0);
	st = stats(rb, 0);
	assert_int_equal(st.dropped_events, 2);
	assert_int_equal(st.overrun, EPP);
	check_accounting(rb, 0, seq, 0);

	/* events EPP .. seq-1 remain: the overwritten page is reported first, the
	 * drop between NPG*EPP-1 and NPG*EPP where it happened */
	for (i = EPP; i < seq; i++) {
		assert_int_equal(take(rb, 0, &lost), i);
		assert_int_equal(lost, i == EPP ? EPP : i == NPG * EPP ? 1 : 0);
	}
	assert_empty(rb, 0);
	check_accounting(rb, 0, seq, seq - EPP);

	/* bad modes are refused and change nothing */
	assert_int_equal(ringbuf_set_mode(rb, 2), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_set_mode(rb, -1), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_get_mode(rb), RINGBUF_MODE_PRODUCER_CONSUMER);
	drop_rb(rb);
}

/* ---- commit_overrun: nested writers fill the ring before the outer commits */

struct co {
	int armed;          /* fire at the next outermost D */
	int busy;
	uint32_t next_seq;  /* next sequence number for a nested event */
	uint32_t nested_ok;
	uint32_t nulls;
	uint32_t extra;     /* reserves tried after the first NULL */
	int expect_empty;   /* nothing committed is unread before the outer event */
};

static void co_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	struct co *x = ctx;
	uint32_t i;
	if (point != RINGBUF__TP_D_WRITE_STAMP || !x->armed || x->busy)
		return;
	x->armed = 0;
	x->busy = 1;
	assert_int_equal(ringbuf__cpu(rb, cpu)->committing, 1); /* we interrupt the outermost */
	for (;;) {
		void *p;
		now += 2;
		p = ringbuf_reserve(rb, cpu, 4);
		if (!p) {
			x->nulls++;
			break;
		}
		fill_payload(p, x->next_seq, 4);
		ts_of[x->next_seq] = now;
		len_of[x->next_seq] = 4;
		x->next_seq++;
		ringbuf_commit(rb, cpu, p);
		x->nested_ok++;
		assert_true(x->nested_ok < 10000);
	}
	for (i = 0; i < x->extra; i++) {
		now += 1;
		assert_null(ringbuf_reserve(rb, cpu, 4 + 4 * (i % 4)));
		x->nulls++;
	}
	x->busy = 0;
}

/* Reserve the outer event seq while the hook fills the ring from inside it. */
static void outer_with_nested_fill(struct ringbuf *rb, struct co *x, uint32_t seq)
{
	void *p;
	uint64_t t_outer;
	x->armed = 1;
	x->busy = 0;
	x->next_seq = seq + 1;
	x->nested_ok = 0;
	x->nulls = 0;
	ringbuf__set_testpoint_hook(co_hook, x);
	now += 5;
	t_outer = now;
	p = ringbuf_reserve(rb, 0, 4);
	ringbuf__set_testpoint_hook(NULL, NULL);
	assert_non_null(p);
	assert_int_equal(x->armed, 0);
	/* the outer event was reserved before the nested ones: its ts is older */
	ts_of[seq] = t_outer;
	len_of[seq] = 4;
	/* the nested events must not be visible before the outer commits */
	if (x->expect_empty) {
		assert_true(ringbuf_empty_cpu(rb, 0));
	} else {
		struct ringbuf_record rec;
		uint32_t s;
		assert_int_equal(ringbuf_peek(rb, 0, &rec), 1);
		memcpy(&s, rec.data, 4);
		assert_true(s < seq);
	}
	fill_payload(p, seq, 4);
	ringbuf_commit(rb, 0, p);
}

static void commit_overrun_fresh(int mode)
{
	struct ringbuf *rb = mk(1, PG, NPG, mode);
	struct co x = { 0 };
	struct ringbuf_stats st;
	uint32_t i, total;
	uint64_t lost;

	/* outer at offset 0 of page 0 (the head and commit page): the nested
	 * events fill the rest of the ring, then the tail meets the commit page */
	x.extra = 3;
	x.expect_empty = 1;
	outer_with_nested_fill(rb, &x, 0);
	assert_int_equal(x.nested_ok, NPG * EPP - 1);
	assert_int_equal(x.nulls, 1 + x.extra);
	total = 1 + x.nested_ok;
	st = stats(rb, 0);
	assert_int_equal(st.commit_overrun, x.nulls);
	assert_int_equal(st.dropped_events, 0);
	assert_int_equal(st.overrun, 0);
	assert_int_equal(st.pages_lost, 0);
	check_accounting(rb, 0, total, 0);
	for (i = 0; i < total; i++) {
		assert_int_equal(take(rb, 0, &lost), i);
		/* the commit_overrun drops happened after the last event: not before any */
		assert_int_equal(lost, 0);
	}
	assert_empty(rb, 0);
	check_accounting(rb, 0, total, total);

	/* the buffer works normally afterwards; the drops are reported next */
	assert_int_equal(put(rb, 0, total, 4, 1), 1);
	assert_int_equal(take(rb, 0, &lost), total);
	assert_int_equal(lost, x.nulls);
	check_accounting(rb, 0, total + 1, total + 1);
	drop_rb(rb);
}

static void test_commit_overrun_nested_fill_overwrite_fresh(void **state)
{
	(void)state;
	commit_overrun_fresh(RINGBUF_MODE_OVERWRITE);
}

static void test_commit_overrun_nested_fill_producer_consumer_fresh(void **state)
{
	(void)state;
	commit_overrun_fresh(RINGBUF_MODE_PRODUCER_CONSUMER);
}

/* The commit page is the reader page (the reader took the tail page): the
 * nested writers leave it, fill every ring page, and must stop before the
 * head, which is the page after the commit. */
static void commit_overrun_on_reader_page(int mode)
{
	struct ringbuf *rb = mk(1, PG, NPG, mode);
	struct co x = { 0 };
	struct ringbuf_stats st;
	uint32_t i, seq = 0, before = EPP + 6, total;
	uint64_t lost;

	for (; seq < before; seq++)
		assert_int_equal(put(rb, 0, seq, 4, 1), 1);
	for (i = 0; i < before; i++)
		assert_int_equal(take(rb, 0, &lost), i);
	assert_empty(rb, 0);
	/* the tail page was swapped out: tail and commit are on the reader page */
	assert_int_equal(ringbuf__cpu(rb, 0)->tail_page, ringbuf__cpu(rb, 0)->reader_page);
	assert_int_equal(ringbuf__cpu(rb, 0)->commit_page, ringbuf__cpu(rb, 0)->reader_page);

	x.extra = 2;
	x.expect_empty = 1;
	outer_with_nested_fill(rb, &x, seq);
	/* the rest of the reader page (6 events + the outer used) and all ring pages */
	assert_int_equal(x.nested_ok, (EPP - 6 - 1) + NPG * EPP);
	assert_int_equal(x.nulls, 1 + x.extra);
	total = before + 1 + x.nested_ok;
	st = stats(rb, 0);
	assert_int_equal(st.commit_overrun, x.nulls);
	assert_int_equal(st.dropped_events, 0);
	assert_int_equal(st.overrun, 0);
	check_accounting(rb, 0, total, before);
	for (i = before; i < total; i++) {
		assert_int_equal(take(rb, 0, &lost), i);
		assert_int_equal(lost, 0);
	}
	assert_empty(rb, 0);
	check_accounting(rb, 0, total, total);
	drop_rb(rb);
}

static void test_commit_overrun_commit_on_reader_page_overwrite(void **state)
{
	(void)state;
	commit_overrun_on_reader_page(RINGBUF_MODE_OVERWRITE);
}

static void test_commit_overrun_commit_on_reader_page_producer_consumer(void **state)
{
	(void)state;
	commit_overrun_on_reader_page(RINGBUF_MODE_PRODUCER_CONSUMER);
}

/* Overwrite mode with a wrapped ring: the nested writers overwrite the older
 * committed pages (overrun) but stop at the page holding the uncommitted
 * outer event. */
static void test_commit_overrun_wrapped_overwrite_spares_uncommitted_page(void **state)
{
	struct ringbuf *rb = mk(1, PG, NPG, RINGBUF_MODE_OVERWRITE);
	struct co x = { 0 };
	struct ringbuf_stats st;
	const uint32_t pre = 7 * EPP + 2; /* 8 pages written, 2 events on the tail page */
	uint32_t seq, i, total, kept_from;
	uint64_t lost;
	(void)state;

	for (seq = 0; seq < pre; seq++)
		assert_int_equal(put(rb, 0, seq, 4, 1), 1);
	assert_int_equal(stats(rb, 0).overrun, 4 * EPP);

	x.extra = 4;
	outer_with_nested_fill(rb, &x, seq);
	/* rest of the tail page, then the other NPG-1 pages, pushed one by one */
	assert_int_equal(x.nested_ok, (EPP - 2 - 1) + (NPG - 1) * EPP);
	assert_int_equal(x.nulls, 1 + x.extra);
	total = pre + 1 + x.nested_ok;
	kept_from = 7 * EPP; /* the page that held the outer event, and what follows */
	st = stats(rb, 0);
	assert_int_equal(st.commit_overrun, x.nulls);
	assert_int_equal(st.overrun, kept_from);
	assert_int_equal(st.pages_lost, 7);
	assert_int_equal(st.dropped_events, 0);
	check_accounting(rb, 0, total, 0);
	for (i = kept_from; i < total; i++) {
		assert_int_equal(take(rb, 0, &lost), i);
		assert_int_equal(lost, i == kept_from ? kept_from : 0);
	}
	assert_empty(rb, 0);
	check_accounting(rb, 0, total, total - kept_from);
	drop_rb(rb);
}

/* Producer/consumer with committed data ahead of the commit page: the nested
 * writers hit the head first, which is a drop (dropped_events), not a
 * commit_overrun; nothing committed is lost. */
static void test_nested_fill_producer_consumer_full_is_dropped_events(void **state)
{
	struct ringbuf *rb = mk(1, PG, NPG, RINGBUF_MODE_PRODUCER_CONSUMER);
	struct co x = { 0 };
	struct ringbuf_stats st;
	const uint32_t pre = 2 * EPP + 2;
	uint32_t seq, i, total;
	uint64_t lost;
	(void)state;

	for (seq = 0; seq < pre; seq++)
		assert_int_equal(put(rb, 0, seq, 4, 1), 1);
	x.extra = 2;
	outer_with_nested_fill(rb, &x, seq);
	assert_int_equal(x.nested_ok, (EPP - 2 - 1) + EPP);
	total = pre + 1 + x.nested_ok;
	st = stats(rb, 0);
	assert_int_equal(st.dropped_events, x.nulls);
	assert_int_equal(st.commit_overrun, 0);
	assert_int_equal(st.overrun, 0);
	check_accounting(rb, 0, total, 0);
	for (i = 0; i < total; i++) {
		assert_int_equal(take(rb, 0, &lost), i);
		assert_int_equal(lost, 0);
	}
	assert_empty(rb, 0);
	drop_rb(rb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_overwrite_without_reader_keeps_exactly_the_last_pages, teardown),
		cmocka_unit_test_teardown(test_overwrite_interleaved_reader_gaps_equal_reported_loss, teardown),
		cmocka_unit_test_teardown(test_overwrite_interleaved_reader_small_rings, teardown),
		cmocka_unit_test_teardown(test_producer_consumer_drops_new_events_and_reports_them_in_place,
					  teardown),
		cmocka_unit_test_teardown(test_producer_consumer_long_run_every_drop_counted, teardown),
		cmocka_unit_test_teardown(test_set_mode_switches_between_dropping_and_overwriting, teardown),
		cmocka_unit_test_teardown(test_reader_at_every_write_step_keeps_exact_accounting, teardown),
		cmocka_unit_test_teardown(test_commit_overrun_nested_fill_overwrite_fresh, teardown),
		cmocka_unit_test_teardown(test_commit_overrun_nested_fill_producer_consumer_fresh, teardown),
		cmocka_unit_test_teardown(test_commit_overrun_commit_on_reader_page_overwrite, teardown),
		cmocka_unit_test_teardown(test_commit_overrun_commit_on_reader_page_producer_consumer,
					  teardown),
		cmocka_unit_test_teardown(test_commit_overrun_wrapped_overwrite_spares_uncommitted_page,
					  teardown),
		cmocka_unit_test_teardown(test_nested_fill_producer_consumer_full_is_dropped_events, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
