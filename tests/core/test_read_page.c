/* Proves ringbuf_read_page() hands out pages that libtraceevent's kbuffer (the
 * parser trace-cmd and KernelShark use) reads back exactly: every record's time
 * stamp and payload, the missed-events count at the right place, and nothing
 * else. Each page is also re-checked by the independent walker (pagewalk.h).
 */
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <traceevent/kbuffer.h>

#include "pagewalk.h"
/* LDFLAGS: -ltraceevent */

static uint64_t now;
static uint64_t test_clock(void *ctx)
{
	(void)ctx;
	return now;
}

struct written {
	uint64_t ts;
	uint32_t seq;
	uint32_t len;
};

#define MAXW 20000
static struct written W[MAXW];
static int nw;

static struct ringbuf *make(size_t page, size_t pages, int mode, int ts_mode)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	cfg.page_size = page;
	cfg.size_per_cpu = page * pages;
	cfg.mode = mode;
	cfg.ts_mode = ts_mode;
	cfg.clock = test_clock;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	nw = 0;
	return rb;
}

/* payload: u32 seq, then bytes derived from seq */
static int put(struct ringbuf *rb, uint32_t len, uint64_t step)
{
	unsigned char *p;
	now += step;
	p = ringbuf_reserve(rb, 0, len);
	if (!p)
		return -1;
	memcpy(p, &nw, 4);
	for (uint32_t i = 4; i < len; i++)
		p[i] = (unsigned char)(nw * 13 + i);
	ringbuf_commit(rb, 0, p);
	W[nw].ts = now;
	W[nw].seq = (uint32_t)nw;
	W[nw].len = len;
	nw++;
	return 0;
}

struct reader {
	struct kbuffer *kb;
	int next;        /* next sequence number expected */
	uint64_t lost;   /* missed counts kbuffer reported */
	int pages, records;
};

/* Parse one page with kbuffer and check every record against W[]. */
static void check_page(struct reader *rd, void *page, size_t page_size, int expect_missed)
{
	struct pw_page info;
	const char *err = NULL;
	unsigned long long ts;
	void *data;
	int first = 1;

	assert_int_equal(pw_walk_page(page, page_size, false, NULL, NULL, &info, &err), 0);
	assert_int_equal(info.noncanonical, 0);
	assert_int_equal(kbuffer_load_subbuffer(rd->kb, page), 0);
	for (data = kbuffer_read_event(rd->kb, &ts); data; data = kbuffer_next_event(rd->kb, &ts)) {
		uint32_t seq;
		int missed = kbuffer_missed_events(rd->kb);
		memcpy(&seq, data, 4);
		if (first) {
			/* missed events are reported on the page's first record */
			if (expect_missed >= 0)
				assert_int_equal(missed, expect_missed);
			if (missed > 0)
				rd->lost += (uint64_t)missed;
			assert_true(missed >= 0 || expect_missed < 0);
			first = 0;
		} else {
			assert_int_equal(missed, 0);
		}
		assert_true(seq < (uint32_t)nw);
		if (expect_missed == 0 && missed == 0)
			assert_int_equal(seq, (uint32_t)rd->next);
		assert_true((int)seq >= rd->next);
		assert_int_equal(ts, W[seq].ts);
		assert_int_equal(kbuffer_event_size(rd->kb), (int)(((W[seq].len + 3) & ~3u) + (W[seq].len > 4 && W[seq].len <= 8 ? 4u : 0u)));
		for (uint32_t i = 4; i < W[seq].len; i++)
			assert_int_equal(((unsigned char *)data)[i], (unsigned char)(seq * 13 + i));
		rd->next = (int)seq + 1;
		rd->records++;
	}
	assert_false(first); /* a page handed out always has an event */
	rd->pages++;
}

static struct reader new_reader(void)
{
	struct reader rd = {0};
	/* the pages are in this machine's long size and byte order */
	rd.kb = kbuffer_alloc(sizeof(long) == 8 ? KBUFFER_LSIZE_8 : KBUFFER_LSIZE_4,
			      PW_BIG_ENDIAN ? KBUFFER_ENDIAN_BIG : KBUFFER_ENDIAN_LITTLE);
	assert_non_null(rd.kb);
	return rd;
}

static void read_page_round_trips_every_record_through_kbuffer(void **state)
{
	(void)state;
	struct ringbuf *rb = make(4096, 160, RINGBUF_MODE_PRODUCER_CONSUMER, RINGBUF_TS_DELTA);
	struct reader rd = new_reader();
	unsigned char *page = malloc(4096);
	now = 1000000000ull;
	/* sizes across both encodings; gaps that need TIME_EXTEND */
	for (int i = 0; i < 3000; i++)
		assert_int_equal(put(rb, 4 + (uint32_t)(i * 37 % 300), i % 97 == 0 ? (1ull << 28) : 1u + (uint64_t)(i % 1000)), 0);
	int r;
	while ((r = ringbuf_read_page(rb, 0, page, 4096, 0)) > 0)
		check_page(&rd, page, 4096, 0);
	assert_int_equal(r, 0);
	assert_int_equal(rd.records, nw);
	assert_int_equal(rd.next, nw);
	struct ringbuf_stats st;
	ringbuf_stats_cpu(rb, 0, &st);
	assert_int_equal(st.read_events, (uint64_t)nw);
	print_message("  %d records in %d pages\n", rd.records, rd.pages);
	kbuffer_free(rd.kb);
	free(page);
	ringbuf_destroy(rb);
}

static void read_page_reports_overwritten_events_as_missed(void **state)
{
	(void)state;
	struct ringbuf *rb = make(1024, 4, RINGBUF_MODE_OVERWRITE, RINGBUF_TS_DELTA);
	struct reader rd = new_reader();
	unsigned char *page = malloc(1024);
	int r;
	now = 5000;
	for (int i = 0; i < 500; i++)
		assert_int_equal(put(rb, 24, 10), 0);
	/* the first page read reports exactly the overwritten events */
	struct ringbuf_stats st;
	ringbuf_stats_cpu(rb, 0, &st);
	assert_true(st.overrun > 0);
	r = ringbuf_read_page(rb, 0, page, 1024, 0);
	assert_true(r > 0);
	check_page(&rd, page, 1024, (int)st.overrun);
	assert_int_equal(rd.lost, st.overrun);
	while ((r = ringbuf_read_page(rb, 0, page, 1024, 0)) > 0)
		check_page(&rd, page, 1024, 0);
	assert_int_equal((uint64_t)rd.records + rd.lost, (uint64_t)nw);
	assert_int_equal(rd.next, nw);
	kbuffer_free(rd.kb);
	free(page);
	ringbuf_destroy(rb);
}

static void read_page_places_producer_consumer_drops_before_the_next_page(void **state)
{
	(void)state;
	struct ringbuf *rb = make(512, 3, RINGBUF_MODE_PRODUCER_CONSUMER, RINGBUF_TS_DELTA);
	struct reader rd = new_reader();
	unsigned char *page = malloc(512);
	int r, dropped = 0, i;
	now = 100;
	for (i = 0; i < 200; i++)
		if (put(rb, 40, 5) < 0) {
			/* keep the sequence numbering: a dropped event still uses one */
			W[nw].ts = 0;
			W[nw].len = 40;
			nw++;
			dropped++;
		}
	assert_true(dropped > 0);
	/* drain; the drops happened after the pages in the buffer were full */
	while ((r = ringbuf_read_page(rb, 0, page, 512, 0)) > 0)
		check_page(&rd, page, 512, -1);
	/* write again: the first page after the drops carries them */
	int before = rd.records;
	for (i = 0; i < 5; i++)
		assert_int_equal(put(rb, 40, 5), 0);
	r = ringbuf_read_page(rb, 0, page, 512, 0);
	assert_true(r > 0);
	check_page(&rd, page, 512, dropped);
	assert_int_equal(rd.records - before, 5);
	assert_int_equal(rd.lost, (uint64_t)dropped);
	kbuffer_free(rd.kb);
	free(page);
	ringbuf_destroy(rb);
}

static void read_page_after_partial_consume_and_with_writer_on_page(void **state)
{
	(void)state;
	struct ringbuf *rb = make(4096, 8, RINGBUF_MODE_PRODUCER_CONSUMER, RINGBUF_TS_DELTA);
	struct reader rd = new_reader();
	unsigned char *page = malloc(4096);
	struct ringbuf_record rec;
	now = 77;
	for (int i = 0; i < 10; i++)
		put(rb, 16, (1ull << 27) + 3); /* every event needs a TIME_EXTEND */
	/* consume 3 events one by one, then read the rest as a page */
	for (int i = 0; i < 3; i++) {
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
		assert_int_equal(rec.ts, W[i].ts);
	}
	rd.next = 3;
	/* the writer is still on this page: RINGBUF_READ_FULL refuses it */
	assert_int_equal(ringbuf_read_page(rb, 0, page, 4096, RINGBUF_READ_FULL), 0);
	int r = ringbuf_read_page(rb, 0, page, 4096, 0);
	assert_true(r > 0);
	check_page(&rd, page, 4096, 0);
	assert_int_equal(rd.records, 7);
	/* the first record has delta 0: the page time stamp is its own (no extend first) */
	uint32_t hw;
	memcpy(&hw, page + PW_PAGE_HDR, 4);
	assert_int_equal(PW_DELTA(hw), 0);
	assert_true(PW_TYPE(hw) >= 1 && PW_TYPE(hw) <= 28);
	assert_int_equal(ringbuf_read_page(rb, 0, page, 4096, 0), 0);
	/* the same page keeps filling; the next read continues after it */
	put(rb, 16, 1);
	put(rb, 200, 1);
	assert_true(ringbuf_read_page(rb, 0, page, 4096, 0) > 0);
	check_page(&rd, page, 4096, 0);
	assert_int_equal(rd.next, nw);
	kbuffer_free(rd.kb);
	free(page);
	ringbuf_destroy(rb);
}

static void read_page_in_absolute_mode_and_bad_arguments(void **state)
{
	(void)state;
	struct ringbuf *rb = make(1024, 4, RINGBUF_MODE_PRODUCER_CONSUMER, RINGBUF_TS_ABSOLUTE);
	struct reader rd = new_reader();
	unsigned char *page = malloc(1024);
	now = (1ull << 59) - 50; /* cross the 59-bit boundary of TIME_STAMP records */
	for (int i = 0; i < 40; i++)
		put(rb, 8 + (uint32_t)i, 7);
	assert_int_equal(ringbuf_read_page(NULL, 0, page, 1024, 0), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_read_page(rb, 1, page, 1024, 0), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_read_page(rb, 0, NULL, 1024, 0), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_read_page(rb, 0, page, 1023, 0), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_read_page(rb, 0, page, 1024, 0x80), RINGBUF_EINVAL);
	int r;
	while ((r = ringbuf_read_page(rb, 0, page, 1024, 0)) > 0)
		check_page(&rd, page, 1024, 0);
	assert_int_equal(rd.records, nw);
	kbuffer_free(rd.kb);
	free(page);
	ringbuf_destroy(rb);
}

/* Zero-copy: complete pages are lent in place and read back exactly like
 * copies; a page a writer is on, or a partly read one, is refused (EAGAIN). */
static void read_page_ref_lends_complete_pages_that_kbuffer_reads(void **state)
{
	(void)state;
	struct ringbuf *rb = make(1024, 8, RINGBUF_MODE_OVERWRITE, RINGBUF_TS_DELTA);
	struct reader rd = new_reader();
	unsigned char *copy = malloc(1024);
	const void *pg;
	int r, lent = 0, copied = 0;
	struct ringbuf_record rec;
	now = 1000;
	for (int i = 0; i < 400; i++)
		assert_int_equal(put(rb, 4 + (uint32_t)(i * 7 % 60), i % 50 == 0 ? (1ull << 28) : 3), 0);
	struct ringbuf_stats st;
	ringbuf_stats_cpu(rb, 0, &st);
	assert_true(st.overrun > 0);
	for (;;) {
		r = ringbuf_read_page_ref(rb, 0, &pg);
		if (r > 0) {
			/* the lent page parses like a copy; check it through a copy of
			 * the bytes so kbuffer reads plain memory */
			memcpy(copy, pg, 1024);
			check_page(&rd, copy, 1024, lent == 0 && copied == 0 ? (int)st.overrun : 0);
			lent++;
			continue;
		}
		if (r == RINGBUF_EAGAIN) {
			r = ringbuf_read_page(rb, 0, copy, 1024, 0);
			if (r <= 0)
				break;
			check_page(&rd, copy, 1024, lent == 0 && copied == 0 ? (int)st.overrun : 0);
			copied++;
			continue;
		}
		assert_int_equal(r, 0);
		break;
	}
	assert_true(lent > 0);
	assert_int_equal(rd.next, nw);
	assert_int_equal((uint64_t)rd.records + rd.lost, (uint64_t)nw);
	print_message("  %d pages lent, %d copied\n", lent, copied);
	/* partly read: refused */
	put(rb, 16, 1);
	put(rb, 16, 1);
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
	assert_int_equal(ringbuf_read_page_ref(rb, 0, &pg), RINGBUF_EAGAIN);
	assert_int_equal(ringbuf_read_page_ref(NULL, 0, &pg), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_read_page_ref(rb, 0, NULL), RINGBUF_EINVAL);
	kbuffer_free(rd.kb);
	free(copy);
	ringbuf_destroy(rb);
}

/* read_page_ref's walk (runs of the common record in ringbuf__event_run, the
 * rest through ringbuf__parse) on page 0 edited in place before the reader
 * takes it: 15 events of 16 bytes (type_len 3) fill its 240 bytes. */
static struct ringbuf *full_page0(struct ringbuf__dpage **dp)
{
	struct ringbuf *rb = make(256, 4, RINGBUF_MODE_PRODUCER_CONSUMER, RINGBUF_TS_DELTA);
	struct ringbuf__cpu *c = ringbuf__cpu(rb, 0);
	now = 1000;
	while (atomic_load(&c->tail_page) == 0)
		assert_int_equal(put(rb, 12, 3), 0);
	*dp = ringbuf__dp(rb, 0, 0);
	assert_int_equal((long)atomic_load(&(*dp)->commit), 240);
	return rb;
}

static void quiet(const char *what, unsigned cpu, void *ctx)
{
	(void)what;
	(void)cpu;
	(void)ctx;
}

static void read_page_ref_walks_runs_of_events_and_refuses_what_overruns(void **state)
{
	struct ringbuf__dpage *dp;
	struct ringbuf_stats st;
	struct ringbuf *rb;
	const void *pg;
	uint32_t w;
	(void)state;
	ringbuf_set_warn_hook(quiet, NULL);
	/* a padding record (16 bytes) between two runs: the data ends at 240,
	 * 14 events read */
	rb = full_page0(&dp);
	w = RINGBUF__HDR_WORD(RINGBUF__TYPE_PADDING, 3);
	memcpy(dp->data + 80, &w, 4);
	w = 12;
	memcpy(dp->data + 84, &w, 4);
	assert_int_equal(ringbuf_read_page_ref(rb, 0, &pg), 240);
	assert_ptr_equal(pg, dp);
	assert_int_equal(ringbuf_stats_cpu(rb, 0, &st), 0);
	assert_int_equal(st.read_events, 14);
	ringbuf_destroy(rb);
	/* the run's last event (at 224) made 20 bytes: past the commit */
	rb = full_page0(&dp);
	memcpy(&w, dp->data + 224, 4);
	w = RINGBUF__HDR_WORD(4, RINGBUF__HDR_DELTA(w));
	memcpy(dp->data + 224, &w, 4);
	assert_int_equal(ringbuf_read_page_ref(rb, 0, &pg), RINGBUF_ECORRUPT);
	assert_int_equal(ringbuf_stats_cpu(rb, 0, &st), 0);
	assert_int_equal(st.read_events, 0);
	ringbuf_destroy(rb);
	/* a commit 2 bytes past the run's end: no room for a header there */
	rb = full_page0(&dp);
	atomic_store(&dp->commit, 226);
	assert_int_equal(ringbuf_read_page_ref(rb, 0, &pg), RINGBUF_ECORRUPT);
	ringbuf_destroy(rb);
	/* the same page untouched: 15 events, lent whole */
	rb = full_page0(&dp);
	assert_int_equal(ringbuf_read_page_ref(rb, 0, &pg), 240);
	assert_int_equal(ringbuf_stats_cpu(rb, 0, &st), 0);
	assert_int_equal(st.read_events, 15);
	ringbuf_destroy(rb);
	ringbuf_set_warn_hook(NULL, NULL);
}

/* ---- mixed whole-page reads, cut into at every step (issue 22, defect 1) ----
 * One reader mixing ringbuf_read_page_ref, ringbuf_read_page (with and
 * without RINGBUF_READ_FULL) and ringbuf_consume on one CPU, while a writer
 * cuts in at each labelled step of the page reads (P2, P3: see "whole-page
 * reads" in ringbuf.h; S1-S4 of the swap under P1) and writes enough to fill
 * the page it is on and move on (or, with many events, to overwrite / be
 * refused). Every event must reach the reader or be counted as lost, in
 * order, and nothing may stay behind (entries 0 after the drain). Before the
 * fix, read_page_ref loaded the page's commit before the commit page: a cut-in
 * between the two made it lend the page at the old commit and write that
 * commit into it, and the events after it were lost uncounted. */
struct mixed {
	struct ringbuf *rb;
	int point;     /* the step to cut in at */
	int burst;     /* events the cut-in writes */
	int fired;
	uint32_t next; /* next sequence number expected */
	uint64_t read, lost;
};

static void mixed_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	struct mixed *m = ctx;
	(void)cpu;
	if (point != m->point || m->fired || rb != m->rb)
		return;
	m->fired = 1;
	for (int i = 0; i < m->burst; i++)
		(void)put(rb, 16, 5); /* a refused write (producer/consumer) is counted by the buffer */
}

static void mixed_seen(struct mixed *m, const unsigned char *payload, uint64_t lost)
{
	uint32_t seq;
	memcpy(&seq, payload, 4);
	assert_true(seq >= m->next); /* in order, never twice */
	assert_true(seq < (uint32_t)nw);
	m->next = seq + 1;
	m->read++;
	m->lost += lost;
}

struct mixed_page {
	struct mixed *m;
	uint64_t lost;
};

static int mixed_cb(const struct pw_record *r, void *vctx)
{
	struct mixed_page *mp = vctx;
	if (r->kind != PW_DATA)
		return 0;
	mixed_seen(mp->m, r->payload, mp->lost);
	mp->lost = 0;
	return 0;
}

static void mixed_page(struct mixed *m, const void *page)
{
	struct pw_page info;
	const char *err = NULL;
	struct mixed_page mp = {m, 0};
	assert_int_equal(pw_walk_page(page, 1024, false, NULL, NULL, &info, &err), 0);
	if (info.missed) {
		assert_true(info.missed_stored); /* a flag without its count loses the count */
		mp.lost = info.missed_count;
	}
	assert_int_equal(pw_walk_page(page, 1024, false, mixed_cb, &mp, &info, &err), 0);
}

/* One read of kind k (0 ref, 1 read_page FULL, 2 read_page, 3 consume):
 * > 0 when something was read, 0 when the call had nothing for it. */
static int mixed_read(struct mixed *m, int k, unsigned char *copy)
{
	struct ringbuf_record rec;
	const void *pg;
	int r;
	switch (k) {
	case 0:
		r = ringbuf_read_page_ref(m->rb, 0, &pg);
		if (r == RINGBUF_EAGAIN)
			return 0;
		assert_true(r >= 0);
		if (r > 0)
			mixed_page(m, pg);
		return r;
	case 1:
	case 2:
		r = ringbuf_read_page(m->rb, 0, copy, 1024, k == 1 ? RINGBUF_READ_FULL : 0);
		assert_true(r >= 0);
		if (r > 0)
			mixed_page(m, copy);
		return r;
	default:
		r = ringbuf_consume(m->rb, 0, &rec);
		assert_true(r >= 0);
		if (r > 0)
			mixed_seen(m, rec.data, rec.lost);
		return r;
	}
}

static void page_reads_mixed_with_a_writer_cutting_in_at_every_step(void **state)
{
	static const int points[] = {RINGBUF__TP_READ_PAGE_P2, RINGBUF__TP_READ_PAGE_P3,
				     RINGBUF__TP_READER_S1,    RINGBUF__TP_READER_S2_PREPARED,
				     RINGBUF__TP_READER_S2,    RINGBUF__TP_READER_S3,
				     RINGBUF__TP_READER_S4};
	static const int bursts[] = {70, 400};
	unsigned char *copy = malloc(1024);
	int cases = 0, fired = 0;
	(void)state;
	for (int mode = 0; mode < 2; mode++)
		for (size_t pi = 0; pi < sizeof points / sizeof points[0]; pi++)
			for (int bi = 0; bi < 2; bi++)
				for (int first = 0; first < 4; first++)
					for (int pre = 1; pre <= 60; pre += 59) {
						struct ringbuf *rb = make(1024, 8, mode ? RINGBUF_MODE_PRODUCER_CONSUMER
											: RINGBUF_MODE_OVERWRITE,
									  RINGBUF_TS_DELTA);
						struct mixed m = {rb, points[pi], bursts[bi], 0, 0, 0, 0};
						struct ringbuf_stats st;
						int idle = 0;
						now = 1000;
						/* a writer on the page the reader takes (1 event),
						 * or about to leave it (60 of ~50 per page) */
						for (int i = 0; i < pre; i++)
							assert_int_equal(put(rb, 16, 3), 0);
						ringbuf__set_testpoint_hook(mixed_hook, &m);
						/* the first call is the one cut into; then every
						 * kind in turn until four calls in a row find nothing */
						for (int k = first; idle < 4; k++)
							idle = mixed_read(&m, k % 4, copy) > 0 ? 0 : idle + 1;
						ringbuf__set_testpoint_hook(NULL, NULL);
						fired += m.fired;
						ringbuf_stats_cpu(rb, 0, &st);
						if (st.entries || m.read + (mode ? 0 : m.lost) != (uint64_t)nw)
							print_message("  mode %d point %d burst %d first %d pre %d: written %d read %llu lost %llu dropped %llu overrun %llu entries %llu\n",
								      mode, m.point, m.burst, first, pre, nw, (unsigned long long)m.read,
								      (unsigned long long)m.lost, (unsigned long long)st.dropped_events,
								      (unsigned long long)st.overrun, (unsigned long long)st.entries);
						assert_int_equal(st.entries, 0); /* nothing stuck */
						if (mode) { /* refused writes are not in nw */
							assert_int_equal(m.read, (uint64_t)nw);
							assert_true(m.lost <= st.dropped_events);
						} else {
							assert_int_equal(m.read + m.lost, (uint64_t)nw);
							assert_int_equal(m.lost, st.overrun);
						}
						assert_int_equal(st.read_events, m.read);
						ringbuf_destroy(rb);
						cases++;
					}
	print_message("  %d cases, the writer cut in at %d\n", cases, fired);
	assert_true(fired > cases / 2);
	free(copy);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(read_page_round_trips_every_record_through_kbuffer),
		cmocka_unit_test(read_page_reports_overwritten_events_as_missed),
		cmocka_unit_test(read_page_places_producer_consumer_drops_before_the_next_page),
		cmocka_unit_test(read_page_after_partial_consume_and_with_writer_on_page),
		cmocka_unit_test(read_page_in_absolute_mode_and_bad_arguments),
		cmocka_unit_test(read_page_ref_lends_complete_pages_that_kbuffer_reads),
		cmocka_unit_test(read_page_ref_walks_runs_of_events_and_refuses_what_overruns),
		cmocka_unit_test(page_reads_mixed_with_a_writer_cutting_in_at_every_step),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
