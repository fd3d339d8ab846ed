/* test_stats.c - statistics identities, reset, and reader-page swap cases
 * SPDX-License-Identifier: MIT
 *
 * Expected values are computed from what the test wrote (sequence numbers, a
 * controlled clock) and from an independent walk of the pages with
 * tests/pagewalk.h, never from the library's statistics alone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"
#include "internal.h" /* the implementation's private names (IMPL: shared) */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pagewalk.h"
#include "fixture.h" /* now, test_clock, g_rb, teardown, mk, drop_rb, stats */
#define HS (16u - PW_PAGE_HDR) /* 4 more data bytes per page with a 32-bit long */

/* ---- fixtures ----------------------------------------------------------- */

static uint64_t rng_state;
static uint32_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}

/* Events carry (cpu, seq) and bytes derived from them; the test remembers
 * every event's time stamp and length. */
#define MAXCPU 4
#define MAXSEQ 20000
static uint64_t ts_of[MAXCPU][MAXSEQ];
static uint32_t len_of[MAXCPU][MAXSEQ];

static uint8_t fill_byte(unsigned cpu, uint32_t seq, uint32_t i)
{
	return (uint8_t)(seq * 7u + i * 13u + cpu * 101u + 1u);
}

static void fill_payload(void *p, unsigned cpu, uint32_t seq, uint32_t len)
{
	uint8_t *b = p;
	uint32_t i;
	memcpy(b, &seq, 4);
	for (i = 4; i < len; i++)
		b[i] = fill_byte(cpu, seq, i);
}

/* Write event seq at now += step. 1 written, 0 dropped. */
static int put(struct ringbuf *rb, unsigned cpu, uint32_t seq, uint32_t len, uint64_t step)
{
	void *p;
	assert_true(cpu < MAXCPU && seq < MAXSEQ && len >= 4);
	now += step;
	p = ringbuf_reserve(rb, cpu, len);
	if (!p)
		return 0;
	fill_payload(p, cpu, seq, len);
	ts_of[cpu][seq] = now;
	len_of[cpu][seq] = len;
	ringbuf_commit(rb, cpu, p);
	return 1;
}

static uint32_t rec_len(uint32_t len)
{
	uint32_t l = (len + 3u) / 4u * 4u;
	return len >= 5 && len <= 8 ? 12u : l;
}

/* Check a record against what was written; returns its seq. */
static uint32_t check_rec(const struct ringbuf_record *rec, unsigned cpu)
{
	uint32_t seq, i;
	const uint8_t *b = rec->data;
	assert_true(rec->len >= 4);
	memcpy(&seq, b, 4);
	assert_true(seq < MAXSEQ);
	assert_int_equal(rec->cpu, cpu);
	assert_int_equal(rec->len, rec_len(len_of[cpu][seq]));
	for (i = 4; i < len_of[cpu][seq]; i++)
		assert_int_equal(b[i], fill_byte(cpu, seq, i));
	assert_int_equal(rec->ts, ts_of[cpu][seq]);
	return seq;
}

static uint32_t take(struct ringbuf *rb, unsigned cpu, uint64_t *lost)
{
	struct ringbuf_record rec;
	assert_int_equal(ringbuf_consume(rb, cpu, &rec), 1);
	if (lost)
		*lost = rec.lost;
	return check_rec(&rec, cpu);
}

static void assert_empty(struct ringbuf *rb, unsigned cpu)
{
	struct ringbuf_record rec;
	assert_int_equal(ringbuf_consume(rb, cpu, &rec), 0);
	assert_true(ringbuf_empty_cpu(rb, cpu));
}

/* ---- independent page scan ---------------------------------------------- */

struct scan {
	uint32_t read_off;     /* consumed bytes of the reader page */
	int role;
	uint64_t page_ts;
	uint32_t page_commit;
	uint64_t events;       /* unread data records */
	uint64_t bytes;        /* bytes of unread records */
	uint64_t commit_sum;   /* sum of the commit of every page walked */
	bool have_oldest;
	uint64_t oldest;       /* time_stamp of the first page with unread bytes */
	bool have_oldest_ev;
	uint64_t oldest_ev_page_ts; /* time_stamp of the page of the first unread event */
	uint64_t first_unread_ts;   /* ts of the first unread event */
};

static int scan_rec(const struct pw_record *r, void *ctx)
{
	struct scan *s = ctx;
	if (s->role == RINGBUF__PAGE_READER && r->offset < s->read_off)
		return 0;
	s->bytes += r->len;
	if (!s->have_oldest) {
		s->have_oldest = true;
		s->oldest = s->page_ts;
	}
	if (r->kind == PW_DATA) {
		if (!s->have_oldest_ev) {
			s->have_oldest_ev = true;
			s->oldest_ev_page_ts = s->page_ts;
			s->first_unread_ts = r->ts;
		}
		s->events++;
	}
	return 0;
}

static int scan_page(const void *page, size_t ps, int role, void *ctx)
{
	struct scan *s = ctx;
	struct pw_page info;
	const char *err = NULL;
	int rc;
	s->role = role;
	memcpy(&s->page_ts, page, 8);
	rc = pw_walk_page(page, ps, false, scan_rec, s, &info, &err);
	if (rc != 0)
		fail_msg("page walk failed (%d): %s", rc, err ? err : "?");
	s->commit_sum += info.commit;
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

/* ---- identities after a random mix -------------------------------------- */

struct model {
	uint64_t written, nread, discarded, nulls, sum_lost;
	uint64_t pad_discards; /* discards that became padding */
	uint64_t oldest_checked;
	int64_t last; /* last seq read */
	uint32_t seq;
	bool swapped; /* the reader has taken a page */
};

static void check_identities(struct ringbuf *rb, int mode, struct model *m)
{
	struct ringbuf_stats st = stats(rb, 0);
	struct scan s = scan_unread(rb, 0);
	assert_int_equal(st.committed, m->written);
	assert_int_equal(st.read_events, m->nread);
	assert_int_equal(st.discarded, m->discarded);
	assert_int_equal(st.entries, s.events);
	assert_true(m->written >= m->nread + s.events);
	assert_int_equal(st.overrun, m->written - m->nread - s.events);
	assert_int_equal(st.committed, st.entries + st.overrun + st.read_events);
	assert_int_equal(st.bytes, s.bytes);
	/* every failed reserve is counted once: full (dropped_events), or a
	 * nested writer that ran into the uncommitted outer event (commit_overrun) */
	assert_int_equal(st.dropped_events + st.commit_overrun, m->nulls);
	if (mode == RINGBUF_MODE_PRODUCER_CONSUMER) {
		assert_int_equal(st.overrun, 0);
		assert_int_equal(st.pages_lost, 0);
	} else {
		assert_int_equal(st.dropped_events, 0);
	}
	if (!m->swapped) {
		/* nothing was read: every committed byte is in the buffer */
		assert_int_equal(st.bytes, s.commit_sum);
	}
	if (s.events == 0 && s.bytes == 0)
		assert_int_equal(st.oldest_event_ts, 0);
	/* the time stamp of the oldest page still holding unread records (the
	 * reader page, also when partly read; else the first ring page) */
	if (s.have_oldest) {
		assert_int_equal(st.oldest_event_ts, s.oldest);
		if (ringbuf__cpu(rb, 0)->read != 0 && s.read_off < ringbuf__page_commit(rb, 0, ringbuf__cpu(rb, 0)->reader_page))
			m->oldest_checked++; /* the partly read case */
	}
	if (s.have_oldest_ev) {
		struct ringbuf_record rec;
		assert_int_equal(ringbuf_peek(rb, 0, &rec), 1);
		assert_int_equal(rec.ts, s.first_unread_ts);
		assert_true(st.oldest_event_ts <= rec.ts);
	}
}

struct nest1 {
	int armed;
	struct model *m;
};

/* Nested writer inside an event that will be discarded (padding case). */
static void mix_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	struct nest1 *x = ctx;
	struct model *m = x->m;
	if (point != RINGBUF__TP_D_WRITE_STAMP || !x->armed)
		return;
	x->armed = 0;
	if (put(rb, cpu, m->seq, 4 + 4 * (rnd() % 5), 1)) {
		m->seq++;
		m->written++;
		m->pad_discards++;
	} else {
		m->nulls++;
	}
}

static void random_mix(int mode, uint64_t seed)
{
	struct ringbuf *rb = mk(1, 256, 4, mode);
	struct model m;
	struct nest1 nx;
	unsigned step;
	uint64_t lost;
	memset(&m, 0, sizeof m);
	m.last = -1;
	nx.m = &m;
	nx.armed = 0;
	rng_state = seed;

	for (step = 0; step < 8000; step++) {
		/* phases: write-heavy (the buffer fills: overrun or drops), then
		 * read-heavy (it drains) */
		uint32_t op = rnd() % 100;
		if ((step / 400) % 2 == 1 && op >= 63 && rnd() % 3 != 0)
			op = rnd() % 63;
		uint64_t dt = rnd() % 97 == 0 ? ((uint64_t)1 << 27) + rnd() : 1 + rnd() % 50;
		if (op < 50) {
			if (put(rb, 0, m.seq, 4 + rnd() % 57, dt)) {
				m.seq++;
				m.written++;
			} else {
				m.nulls++;
			}
		} else if (op < 58) {
			/* reserve, discard (rolled back) */
			void *p;
			now += dt;
			p = ringbuf_reserve(rb, 0, 4 + rnd() % 40);
			if (p) {
				memset(p, 0xEE, 4);
				ringbuf_discard(rb, 0, p);
				m.discarded++;
			} else {
				m.nulls++;
			}
		} else if (op < 63) {
			/* reserve, a nested event, discard (padding) */
			void *p;
			now += dt;
			nx.armed = 1;
			ringbuf__set_testpoint_hook(mix_hook, &nx);
			p = ringbuf_reserve(rb, 0, 4 + rnd() % 40);
			ringbuf__set_testpoint_hook(NULL, NULL);
			nx.armed = 0;
			if (p) {
				memset(p, 0xEE, 4);
				ringbuf_discard(rb, 0, p);
				m.discarded++;
			} else {
				m.nulls++;
			}
		} else {
			uint32_t k = 1 + rnd() % 6, i;
			for (i = 0; i < k; i++) {
				struct ringbuf_record rec;
				uint32_t seq;
				if (ringbuf_peek(rb, 0, &rec) == 0)
					break;
				seq = take(rb, 0, &lost);
				assert_true((int64_t)seq > m.last);
				if (mode == RINGBUF_MODE_OVERWRITE)
					assert_int_equal(lost, (uint64_t)(seq - (m.last + 1)));
				else
					assert_int_equal(seq, (uint32_t)(m.last + 1));
				m.sum_lost += lost;
				m.last = seq;
				m.nread++;
				m.swapped = true;
			}
		}
		check_identities(rb, mode, &m);
	}
	/* drain: then nothing is left, in any count */
	while (!ringbuf_empty_cpu(rb, 0)) {
		uint32_t seq = take(rb, 0, &lost);
		if (mode == RINGBUF_MODE_OVERWRITE)
			assert_int_equal(lost, (uint64_t)(seq - (m.last + 1)));
		m.sum_lost += lost;
		m.last = seq;
		m.nread++;
		m.swapped = true;
	}
	check_identities(rb, mode, &m);
	{
		struct ringbuf_stats st = stats(rb, 0);
		assert_int_equal(st.entries, 0);
		assert_int_equal(st.bytes, 0);
		assert_int_equal(st.oldest_event_ts, 0);
		assert_int_equal(m.last, (int64_t)m.seq - 1);
		if (mode == RINGBUF_MODE_OVERWRITE) {
			assert_int_equal(st.overrun, m.sum_lost);
			assert_int_equal(m.sum_lost + m.nread, m.written);
			assert_true(st.overrun > 0);
		} else {
			/* every drop is reported, on the first event after it: write
			 * one more so that the last drops are followed by an event */
			assert_true(m.nulls > 0);
			assert_int_equal(put(rb, 0, m.seq, 4, 1), 1);
			assert_int_equal(take(rb, 0, &lost), m.seq);
			m.sum_lost += lost;
			assert_int_equal(m.sum_lost, m.nulls);
		}
		assert_true(m.discarded > 100);
		assert_true(m.pad_discards > 50);
		assert_true(m.oldest_checked > 1000); /* the reader page was often partly read */
	}
	drop_rb(rb);
}

static void test_identities_after_random_mix_overwrite(void **state)
{
	(void)state;
	random_mix(RINGBUF_MODE_OVERWRITE, 0x1234567887654321ull);
}

static void test_identities_after_random_mix_producer_consumer(void **state)
{
	(void)state;
	random_mix(RINGBUF_MODE_PRODUCER_CONSUMER, 0xabcdef0123456789ull);
}

/* Nothing read: bytes is the sum of every page's commit, and that is the sum
 * of the record sizes the test wrote plus the page-end padding. As in the
 * kernel (rb_reset_tail), a page end with fewer than 8 bytes left gets a bare
 * 4-byte padding header that commit does not cover: not counted in bytes. */
static void test_bytes_equal_written_record_sizes_when_nothing_read(void **state)
{
	struct ringbuf *rb = mk(1, 128, 8, RINGBUF_MODE_OVERWRITE);
	/* payload sizes: page 1 ends at 108 (4 bytes left), page 2 at 104 (8
	 * left: a padding record), page 3 holds one 100-byte event (8 left,
	 * padding again), page 4 is partly used; with a 32-bit long the data
	 * area is HS = 4 bytes longer and some payloads grow by HS */
	static const uint32_t lens[] = { 16, 16, 16, 16 + HS, 16, 4, /* 5 * 20 + 8 = 108 */
					 60,                    /* new page: 64 */
					 36 + HS,               /* 64 + 40 = 104 */
					 100 + HS,              /* 104 + 104 > 112: new page */
					 12,                    /* 104 + 16 > 112: new page */
					 4, 20 };               /* 16 + 8 + 24 = 48 */
	static const uint32_t commits[] = { 108 + HS, 112 + HS, 112 + HS, 48 };
	uint64_t expect = 0;
	uint32_t seq, w = 0, npage = 0;
	const uint32_t bsize = 128 - PW_PAGE_HDR;
	struct scan s;
	(void)state;
	for (seq = 0; seq < sizeof lens / sizeof lens[0]; seq++) {
		uint32_t ev = pw_expected_len(lens[seq], false);
		if (w + ev > bsize) {
			if (bsize - w >= 8)
				expect += bsize - w; /* a padding record to the page end */
			assert_int_equal(commits[npage], bsize - w >= 8 ? bsize : w);
			npage++;
			w = 0;
		}
		w += ev;
		expect += ev;
		assert_int_equal(put(rb, 0, seq, lens[seq], 1), 1);
	}
	assert_int_equal(commits[npage], w);
	assert_int_equal(expect, 108 + 112 + 112 + 48 + 3 * HS);
	s = scan_unread(rb, 0);
	assert_int_equal(s.commit_sum, expect);
	assert_int_equal(s.events, sizeof lens / sizeof lens[0]);
	assert_int_equal(stats(rb, 0).overrun, 0);
	assert_int_equal(stats(rb, 0).bytes, expect);
	assert_int_equal(stats(rb, 0).entries, sizeof lens / sizeof lens[0]);
	assert_int_equal(stats(rb, 0).oldest_event_ts, ts_of[0][0]);
	for (seq = 0; seq < sizeof lens / sizeof lens[0]; seq++)
		assert_int_equal(take(rb, 0, NULL), seq);
	assert_int_equal(stats(rb, 0).bytes, 0);
	assert_int_equal(stats(rb, 0).oldest_event_ts, 0);
	drop_rb(rb);
}

/* The same with random sizes: bytes == sum of the commits == what was
 * written, page-end padding of 8 bytes or more included. */
static void test_bytes_equal_written_record_sizes_random(void **state)
{
	struct ringbuf *rb = mk(1, 256, 32, RINGBUF_MODE_OVERWRITE);
	uint64_t expect = 0;
	uint32_t w = 0, seq;
	const uint32_t bsize = 256 - PW_PAGE_HDR;
	(void)state;
	rng_state = 77;
	for (seq = 0; seq < 60; seq++) {
		uint32_t len = 4 + rnd() % 90, ev = pw_expected_len(len, false);
		if (w + ev > bsize) {
			if (bsize - w >= 8)
				expect += bsize - w;
			w = 0;
		}
		w += ev;
		expect += ev;
		assert_int_equal(put(rb, 0, seq, len, 1), 1);
	}
	assert_int_equal(stats(rb, 0).overrun, 0); /* it all fits */
	assert_int_equal(stats(rb, 0).bytes, expect);
	assert_int_equal(scan_unread(rb, 0).commit_sum, expect);
	assert_int_equal(stats(rb, 0).entries, 60);
	for (seq = 0; seq < 60; seq++)
		assert_int_equal(take(rb, 0, NULL), seq);
	assert_int_equal(stats(rb, 0).bytes, 0);
	drop_rb(rb);
}

/* The documented meaning (and the kernel's): the time stamp of the oldest page
 * still in the buffer. With the reader page partly read, that page is still
 * the oldest one holding unread events. */
static void test_oldest_event_ts_is_the_oldest_pages_time_stamp_after_partial_read(void **state)
{
	struct ringbuf *rb = mk(1, 128, 4, RINGBUF_MODE_OVERWRITE);
	struct ringbuf_stats st;
	uint32_t seq;
	(void)state;
	for (seq = 0; seq < 5; seq++)
		assert_int_equal(put(rb, 0, seq, 4, 10), 1); /* ts 1010 .. 1050 */
	assert_int_equal(stats(rb, 0).oldest_event_ts, 1010);
	assert_int_equal(take(rb, 0, NULL), 0);
	assert_int_equal(take(rb, 0, NULL), 1);
	st = stats(rb, 0);
	assert_int_equal(st.entries, 3);
	assert_int_equal(st.bytes, 24);
	/* the page holding the unread events 2..4 starts at 1010 (its
	 * time_stamp); 1020 would be the ts of event 1, already consumed */
	assert_int_equal(st.oldest_event_ts, 1010);
	drop_rb(rb);
}

/* ringbuf_stats() is the sum of ringbuf_stats_cpu() over the CPUs. */
static void test_stats_all_cpus_equal_sum_of_per_cpu(void **state)
{
	struct ringbuf *rb = mk(3, 128, 4, RINGBUF_MODE_OVERWRITE);
	struct ringbuf_stats sum, one[3], all;
	uint32_t seq[3] = { 0, 0, 0 };
	unsigned i, cpu;
	(void)state;
	rng_state = 4242;
	for (i = 0; i < 3000; i++) {
		cpu = rnd() % 3;
		if (cpu == 2 && i >= 1500)
			continue; /* cpu 2 goes quiet early: it holds the oldest pages */
		if (rnd() % 4 == 0) {
			struct ringbuf_record rec;
			if (ringbuf_consume(rb, cpu, &rec) == 1)
				check_rec(&rec, cpu);
		} else if (rnd() % 10 == 0) {
			void *p = ringbuf_reserve(rb, cpu, 8);
			assert_non_null(p);
			ringbuf_discard(rb, cpu, p);
		} else {
			assert_int_equal(put(rb, cpu, seq[cpu], 4 + rnd() % 30, 1), 1);
			seq[cpu]++;
		}
	}
	(void)ringbuf_write(rb, 0, NULL, 0);   /* rejected */
	ringbuf_record_disable_cpu(rb, 1);
	assert_int_equal(ringbuf_write(rb, 1, "abcd", 4), RINGBUF_ENOSPC); /* disabled */
	ringbuf_record_enable_cpu(rb, 1);

	memset(&sum, 0, sizeof sum);
	for (cpu = 0; cpu < 3; cpu++) {
		one[cpu] = stats(rb, cpu);
		assert_int_equal(one[cpu].committed, seq[cpu]);
		sum.entries += one[cpu].entries;
		sum.committed += one[cpu].committed;
		sum.overrun += one[cpu].overrun;
		sum.commit_overrun += one[cpu].commit_overrun;
		sum.dropped_events += one[cpu].dropped_events;
		sum.read_events += one[cpu].read_events;
		sum.bytes += one[cpu].bytes;
		sum.pages_touched += one[cpu].pages_touched;
		sum.pages_lost += one[cpu].pages_lost;
		sum.pages_read += one[cpu].pages_read;
		sum.disabled_events += one[cpu].disabled_events;
		sum.rejected_events += one[cpu].rejected_events;
		sum.nest_overflow += one[cpu].nest_overflow;
		sum.discarded += one[cpu].discarded;
		assert_int_not_equal(one[cpu].oldest_event_ts, 0);
		if (!sum.oldest_event_ts || one[cpu].oldest_event_ts < sum.oldest_event_ts)
			sum.oldest_event_ts = one[cpu].oldest_event_ts;
	}
	assert_int_equal(ringbuf_stats(rb, &all), 0);
	assert_int_equal(all.entries, sum.entries);
	assert_int_equal(all.committed, sum.committed);
	assert_int_equal(all.committed, seq[0] + seq[1] + seq[2]);
	assert_int_equal(all.overrun, sum.overrun);
	assert_true(all.overrun > 0);
	assert_int_equal(all.commit_overrun, sum.commit_overrun);
	assert_int_equal(all.dropped_events, sum.dropped_events);
	assert_int_equal(all.read_events, sum.read_events);
	assert_true(all.read_events > 0);
	assert_int_equal(all.bytes, sum.bytes);
	assert_int_equal(all.oldest_event_ts, sum.oldest_event_ts);
	assert_int_equal(all.oldest_event_ts, one[2].oldest_event_ts); /* cpu 2 is the oldest */
	assert_int_equal(all.pages_touched, sum.pages_touched);
	assert_int_equal(all.pages_lost, sum.pages_lost);
	assert_int_equal(all.pages_read, sum.pages_read);
	assert_int_equal(all.disabled_events, sum.disabled_events);
	assert_int_equal(all.disabled_events, 1);
	assert_int_equal(all.rejected_events, sum.rejected_events);
	assert_int_equal(all.rejected_events, 1);
	assert_int_equal(all.nest_overflow, sum.nest_overflow);
	assert_int_equal(all.discarded, sum.discarded);
	assert_true(all.discarded > 0);
	assert_int_equal(all.committed, all.entries + all.overrun + all.read_events);
	drop_rb(rb);
}

/* ---- reset -------------------------------------------------------------- */

static void assert_stats_zero(struct ringbuf *rb, unsigned cpu)
{
	struct ringbuf_stats st = stats(rb, cpu), zero;
	memset(&zero, 0, sizeof zero);
	assert_memory_equal(&st, &zero, sizeof st);
}

static void test_reset_cpu_empties_one_cpu_and_keeps_the_other(void **state)
{
	struct ringbuf *rb = mk(2, 128, 4, RINGBUF_MODE_OVERWRITE);
	struct ringbuf_stats before1;
	uint32_t s0 = 0, s1 = 0, i;
	uint64_t lost;
	(void)state;

	for (i = 0; i < 100; i++) /* cpu 0 wraps: overrun */
		assert_int_equal(put(rb, 0, s0++, 4, 1), 1);
	for (i = 0; i < 20; i++) /* 20 events of 8..16 bytes: fit in 4 pages */
		assert_int_equal(put(rb, 1, s1++, 4 + i % 9, 1), 1);
	/* 100 events, 14 per page: pages 4..7 (events 56..99) are kept */
	assert_int_equal(take(rb, 0, NULL), 56); /* cpu 0 partly read */
	assert_int_equal(take(rb, 1, NULL), 0);
	before1 = stats(rb, 1);
	assert_true(stats(rb, 0).overrun > 0);

	assert_int_equal(ringbuf_reset_cpu(rb, 0), 0);
	assert_empty(rb, 0);
	assert_stats_zero(rb, 0);
	{
		struct ringbuf_stats after1 = stats(rb, 1);
		assert_memory_equal(&after1, &before1, sizeof after1);
	}
	/* cpu 1 intact */
	for (i = 1; i < 20; i++) {
		assert_int_equal(take(rb, 1, &lost), i);
		assert_int_equal(lost, 0);
	}
	assert_empty(rb, 1);

	/* writing after the reset works, from a clean state: no loss reported */
	s0 = 0;
	for (i = 0; i < 3 * 14 + 5; i++)
		assert_int_equal(put(rb, 0, s0++, 4, 1), 1);
	for (i = 0; i < s0; i++) {
		assert_int_equal(take(rb, 0, &lost), i);
		assert_int_equal(lost, 0);
	}
	assert_empty(rb, 0);
	{
		struct ringbuf_stats st = stats(rb, 0);
		assert_int_equal(st.committed, s0);
		assert_int_equal(st.read_events, s0);
		assert_int_equal(st.overrun, 0);
		assert_int_equal(st.pages_lost, 0);
	}
	drop_rb(rb);
}

static void test_reset_all_cpus(void **state)
{
	struct ringbuf *rb = mk(3, 128, 4, RINGBUF_MODE_PRODUCER_CONSUMER);
	unsigned cpu;
	uint32_t i;
	(void)state;
	for (cpu = 0; cpu < 3; cpu++) {
		for (i = 0; i < 70; i++) /* 56 fit, 14 dropped */
			(void)put(rb, cpu, i, 4, 1);
		assert_int_equal(stats(rb, cpu).dropped_events, 14);
	}
	assert_int_equal(take(rb, 2, NULL), 0);
	assert_int_equal(ringbuf_reset(rb), 0);
	for (cpu = 0; cpu < 3; cpu++) {
		assert_empty(rb, cpu);
		assert_stats_zero(rb, cpu);
	}
	{
		struct ringbuf_stats all, zero;
		memset(&zero, 0, sizeof zero);
		assert_int_equal(ringbuf_stats(rb, &all), 0);
		assert_memory_equal(&all, &zero, sizeof all);
	}
	/* the whole capacity is available again, on every CPU */
	for (cpu = 0; cpu < 3; cpu++) {
		for (i = 0; i < 56; i++)
			assert_int_equal(put(rb, cpu, i, 4, 1), 1);
		assert_int_equal(put(rb, cpu, 56, 4, 1), 0);
		for (i = 0; i < 56; i++)
			assert_int_equal(take(rb, cpu, NULL), i);
		assert_empty(rb, cpu);
	}
	drop_rb(rb);
}

static void test_reset_keeps_users_record_disable_cpu_count(void **state)
{
	struct ringbuf *rb = mk(2, 128, 4, RINGBUF_MODE_OVERWRITE);
	(void)state;
	assert_int_equal(put(rb, 0, 0, 4, 1), 1);
	assert_int_equal(ringbuf_record_disable_cpu(rb, 0), 0);
	assert_int_equal(ringbuf_record_disable_cpu(rb, 0), 0);
	ringbuf_record_disable(rb); /* global counter: reset_cpu must not touch it either */

	assert_int_equal(ringbuf_reset_cpu(rb, 0), 0);
	assert_empty(rb, 0);
	assert_int_equal(stats(rb, 0).committed, 0);

	assert_int_equal(put(rb, 0, 0, 4, 1), 0);
	assert_int_equal(put(rb, 1, 0, 4, 1), 0);
	ringbuf_record_enable(rb);
	assert_true(ringbuf_record_is_on(rb));
	assert_int_equal(put(rb, 1, 0, 4, 1), 1); /* cpu 1 is not disabled */
	/* still disabled twice */
	assert_int_equal(put(rb, 0, 0, 4, 1), 0);
	assert_int_equal(ringbuf_record_enable_cpu(rb, 0), 0);
	assert_int_equal(put(rb, 0, 0, 4, 1), 0);
	assert_int_equal(stats(rb, 0).disabled_events, 3);
	assert_int_equal(ringbuf_record_enable_cpu(rb, 0), 0);
	assert_int_equal(put(rb, 0, 0, 4, 1), 1);
	assert_int_equal(take(rb, 0, NULL), 0);
	assert_int_equal(stats(rb, 0).committed, 1);
	/* enable below zero is a no-op */
	assert_int_equal(ringbuf_record_enable_cpu(rb, 0), 0);
	assert_int_equal(ringbuf_record_disable_cpu(rb, 0), 0);
	assert_int_equal(put(rb, 0, 1, 4, 1), 0);
	assert_int_equal(ringbuf_record_enable_cpu(rb, 0), 0);
	assert_int_equal(put(rb, 0, 1, 4, 1), 1);

	/* a reset with no user disable leaves recording enabled */
	assert_int_equal(ringbuf_reset_cpu(rb, 0), 0);
	assert_int_equal(put(rb, 0, 0, 4, 1), 1);
	assert_int_equal(take(rb, 0, NULL), 0);
	drop_rb(rb);
}

/* ---- reader-page swaps --------------------------------------------------- */

/* (a) Reads and writes interleaved one event at a time across many page
 * boundaries: commit and tail on the head page, tail on the reader page. */
static void interleave(int mode)
{
	struct ringbuf *rb = mk(1, 128, 4, mode);
	static const char *const pats[] = { "WWRWRR", "WRWR", "WWWRRR", "WRRW", "WWRRWR", "WWWRWRRR" };
	uint32_t seq = 0, next = 0, round;
	uint64_t lost;
	rng_state = 99;
	for (round = 0; round < 400; round++) {
		const char *p = pats[round % 6];
		for (; *p; p++) {
			if (*p == 'W') {
				assert_int_equal(put(rb, 0, seq, 4 + rnd() % 24, 1 + rnd() % 3), 1);
				seq++;
			} else if (next < seq) {
				assert_int_equal(take(rb, 0, &lost), next);
				assert_int_equal(lost, 0);
				next++;
				assert_int_equal(stats(rb, 0).entries, seq - next);
			} else {
				assert_empty(rb, 0);
			}
		}
	}
	while (next < seq) {
		assert_int_equal(take(rb, 0, &lost), next++);
		assert_int_equal(lost, 0);
	}
	assert_empty(rb, 0);
	{
		struct ringbuf_stats st = stats(rb, 0);
		assert_int_equal(st.committed, seq);
		assert_int_equal(st.read_events, seq);
		assert_int_equal(st.overrun, 0);
		assert_int_equal(st.dropped_events, 0);
		assert_true(st.pages_read > 50); /* many page boundaries crossed */
		assert_int_equal(st.bytes, 0);
	}
	drop_rb(rb);
}

static void test_interleaved_single_events_across_pages_overwrite(void **state)
{
	(void)state;
	interleave(RINGBUF_MODE_OVERWRITE);
}

static void test_interleaved_single_events_across_pages_producer_consumer(void **state)
{
	(void)state;
	interleave(RINGBUF_MODE_PRODUCER_CONSUMER);
}

/* Write 2, read 1, write 1, read 2, ... exactly as in the brief. */
static void test_write2_read1_write1_read2_pattern(void **state)
{
	int mode;
	(void)state;
	for (mode = 0; mode < 2; mode++) {
		struct ringbuf *rb = mk(1, 128, 4, mode);
		uint32_t seq = 0, next = 0, i;
		for (i = 0; i < 300; i++) {
			assert_int_equal(put(rb, 0, seq++, 4, 1), 1);
			assert_int_equal(put(rb, 0, seq++, 4, 1), 1);
			assert_int_equal(take(rb, 0, NULL), next++);
			assert_int_equal(put(rb, 0, seq++, 4, 1), 1);
			assert_int_equal(take(rb, 0, NULL), next++);
			assert_int_equal(take(rb, 0, NULL), next++);
		}
		assert_int_equal(next, seq - 0);
		assert_empty(rb, 0);
		assert_true(stats(rb, 0).pages_read >= 900 / 14);
		drop_rb(rb);
	}
}

/* (b) The reader runs while the writer is mid-event (from the hook). */
struct rd {
	int armed;
	int busy;
	int point;          /* testpoint to fire at */
	uint32_t got[64];
	unsigned ngot;
	int last_rc;
};

static void reader_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	struct rd *x = ctx;
	struct ringbuf_record rec;
	int r;
	if (point != x->point || !x->armed || x->busy)
		return;
	x->armed = 0;
	x->busy = 1;
	while ((r = ringbuf_consume(rb, cpu, &rec)) == 1) {
		assert_true(x->ngot < 64);
		x->got[x->ngot++] = check_rec(&rec, cpu);
	}
	x->last_rc = r;
	x->busy = 0;
}

/* Reserve event seq (len bytes) with the reader running at testpoint point
 * inside the reservation; then check the reader got exactly committed events
 * first..seq-1; commit; the event is readable after. */
static void outer_with_reader(struct ringbuf *rb, int point, uint32_t seq, uint32_t len,
			      uint32_t first)
{
	struct rd x;
	void *p;
	uint32_t i;
	memset(&x, 0, sizeof x);
	x.armed = 1;
	x.point = point;
	ringbuf__set_testpoint_hook(reader_hook, &x);
	now += 3;
	p = ringbuf_reserve(rb, 0, len);
	ringbuf__set_testpoint_hook(NULL, NULL);
	assert_non_null(p);
	assert_int_equal(x.armed, 0); /* the reader did run */
	assert_int_equal(x.last_rc, 0);
	assert_int_equal(x.ngot, seq - first);
	for (i = 0; i < x.ngot; i++)
		assert_int_equal(x.got[i], first + i);
	/* still not visible */
	assert_empty(rb, 0);
	fill_payload(p, 0, seq, len);
	ts_of[0][seq] = now;
	len_of[0][seq] = len;
	ringbuf_commit(rb, 0, p);
	assert_int_equal(take(rb, 0, NULL), seq);
	assert_empty(rb, 0);
}

static void reader_mid_event(int mode)
{
	struct ringbuf *rb = mk(1, 128, 4, mode);
	uint32_t seq = 0, first, i;

	/* 1: tail and commit on the head page; the reader swaps out the very
	 * page the writer is writing on */
	for (; seq < 5; seq++)
		assert_int_equal(put(rb, 0, seq, 4, 1), 1);
	outer_with_reader(rb, RINGBUF__TP_D_WRITE_STAMP, seq, 4, 0);
	assert_int_equal(ringbuf__cpu(rb, 0)->tail_page, ringbuf__cpu(rb, 0)->reader_page);
	seq++;

	/* 2: tail on the reader page */
	first = seq;
	for (i = 0; i < 3; i++, seq++)
		assert_int_equal(put(rb, 0, seq, 4, 1), 1);
	outer_with_reader(rb, RINGBUF__TP_D_WRITE_STAMP, seq, 4, first);
	seq++;

	/* 3: the outer event opens a new page (offset 0), its page end at
	 * 80 + 24 > 112: the previous page got padding that is not committed */
	first = seq;
	for (i = 0; i < 1; i++, seq++)
		assert_int_equal(put(rb, 0, seq, 20, 1), 1); /* 80 + 24 = 104 */
	outer_with_reader(rb, RINGBUF__TP_D_WRITE_STAMP, seq, 20, first);
	assert_int_equal(ringbuf__cpu(rb, 0)->slots[0].off, 0);
	seq++;

	/* 4: the same at the crossing steps themselves: page end claimed but not
	 * padded, then padded but the write index not restored */
	first = seq;
	while (ringbuf__bp(rb, 0, ringbuf__cpu(rb, 0)->tail_page)->write % (1u << 21) + 8 <= 112) {
		assert_int_equal(put(rb, 0, seq, 4, 1), 1);
		seq++;
	}
	outer_with_reader(rb, RINGBUF__TP_CROSS_CLAIMED, seq, 4, first);
	seq++;
	first = seq;
	while (ringbuf__bp(rb, 0, ringbuf__cpu(rb, 0)->tail_page)->write % (1u << 21) + 16 <= 112) {
		assert_int_equal(put(rb, 0, seq, 8, 1), 1);
		seq++;
	}
	outer_with_reader(rb, RINGBUF__TP_CROSS_PADDED, seq, 8, first);
	seq++;

	/* 5: several full pages committed, writer mid-event on a later page */
	first = seq;
	for (i = 0; i < 30; i++, seq++)
		assert_int_equal(put(rb, 0, seq, 4, 1), 1);
	outer_with_reader(rb, RINGBUF__TP_D_WRITE_STAMP, seq, 4, first);
	seq++;

	/* 6: the reader at the other steps of the reservation */
	{
		static const int pts[] = { RINGBUF__TP_A_TIME, RINGBUF__TP_B_BEFORE, RINGBUF__TP_C_RESERVED };
		unsigned k;
		for (k = 0; k < 3; k++) {
			first = seq;
			for (i = 0; i < 3; i++, seq++)
				assert_int_equal(put(rb, 0, seq, 4, 1), 1);
			outer_with_reader(rb, pts[k], seq, 4, first);
			seq++;
		}
	}

	{
		struct ringbuf_stats st = stats(rb, 0);
		assert_int_equal(st.committed, seq);
		assert_int_equal(st.read_events, seq);
		assert_int_equal(st.overrun, 0);
		assert_int_equal(st.dropped_events, 0);
		assert_int_equal(st.entries, 0);
		assert_int_equal(st.bytes, 0);
	}
	drop_rb(rb);
}

static void test_reader_during_uncommitted_write_sees_only_committed_overwrite(void **state)
{
	(void)state;
	reader_mid_event(RINGBUF_MODE_OVERWRITE);
}

static void test_reader_during_uncommitted_write_sees_only_committed_producer_consumer(void **state)
{
	(void)state;
	reader_mid_event(RINGBUF_MODE_PRODUCER_CONSUMER);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_identities_after_random_mix_overwrite, teardown),
		cmocka_unit_test_teardown(test_identities_after_random_mix_producer_consumer, teardown),
		cmocka_unit_test_teardown(test_bytes_equal_written_record_sizes_when_nothing_read, teardown),
		cmocka_unit_test_teardown(test_bytes_equal_written_record_sizes_random, teardown),
		cmocka_unit_test_teardown(test_oldest_event_ts_is_the_oldest_pages_time_stamp_after_partial_read,
					  teardown),
		cmocka_unit_test_teardown(test_stats_all_cpus_equal_sum_of_per_cpu, teardown),
		cmocka_unit_test_teardown(test_reset_cpu_empties_one_cpu_and_keeps_the_other, teardown),
		cmocka_unit_test_teardown(test_reset_all_cpus, teardown),
		cmocka_unit_test_teardown(test_reset_keeps_users_record_disable_cpu_count, teardown),
		cmocka_unit_test_teardown(test_interleaved_single_events_across_pages_overwrite, teardown),
		cmocka_unit_test_teardown(test_interleaved_single_events_across_pages_producer_consumer,
					  teardown),
		cmocka_unit_test_teardown(test_write2_read1_write1_read2_pattern, teardown),
		cmocka_unit_test_teardown(test_reader_during_uncommitted_write_sees_only_committed_overwrite,
					  teardown),
		cmocka_unit_test_teardown(
			test_reader_during_uncommitted_write_sees_only_committed_producer_consumer, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
