/* test_readers.c - the readers: non-consuming iterator, merged consume, waiting
 * SPDX-License-Identifier: MIT
 *
 * Every event carries (sequence, context, cpu, length, checksum) computed by
 * the writer, and deterministic tests drive a clock the test controls, so the
 * expected records (payload, time stamp, cpu, order) are known independently
 * of the library.
 *
 *  1. Iterator: two passes give the same events, consuming afterwards still
 *     returns them all; it walks many small pages starting mid reader page;
 *     it returns events committed after it reached the end; iter_reset goes
 *     back to the oldest unread event; the merged iterator over 3 CPUs is in
 *     time-stamp order with exact per-CPU sequences.
 *     The time stamp of an event is right also when the iterator reached the
 *     end on an empty page before that event was written.
 *  2. Overwrite under the iterator (deterministic): a loss is reported
 *     (rec.lost, ringbuf_iter_dropped), the iterator goes forward only (also
 *     when it had walked past a partly consumed reader page), returns nothing
 *     that was not written, and reports events overwritten ahead of it.
 *  3. Threaded: writer (+ timer-signal nested writer) in overwrite mode on
 *     small pages, an iterating thread looping start/next/finish, with and
 *     without a concurrent consumer: valid events, per-context sequences
 *     increasing within a pass, never an event not written; without a
 *     consumer, every event skipped comes with rec.lost.
 *  4. ringbuf_consume_merged: exact order with a controlled clock; an event
 *     reserved earlier but committed later is not overtaken; time never goes
 *     backwards with concurrent writer threads (not once in 900k events;
 *     the exact interleavings are in test_merged_order.c).
 *  5. ringbuf_wait: wake-up from a signal handler's write (latency printed),
 *     lost-wake-up stress, timeout, watermark, ringbuf_wake_waiters,
 *     RINGBUF_ALL_CPUS, bad arguments.
 *  6. Reader throughput (printed, never asserted).
 *
 * Worker threads never call cmocka: they record failures, the test thread
 * asserts after joining. A SIGALRM watchdog ends a hung test.
 */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"
#include "internal.h" /* the implementation's private names (IMPL: shared) */

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#define WATCHDOG_MSG "\n*** test_readers watchdog: a test hung (lost wake-up or livelock); aborting\n"
#define READERS_START_NS 1000
#include "readerutil.h" /* g_now, test_clock, g_rb, g_it, watchdog, setup, teardown, mk */
#include "sigutil.h"
/* LDFLAGS: -lrt */

/* ---- events ------------------------------------------------------------- */

struct ev_hdr {
	uint32_t seq;
	uint16_t ctx;
	uint16_t cpu;
	uint32_t len; /* whole payload, header included */
	uint32_t csum;
};
#define HDR ((uint32_t)sizeof(struct ev_hdr))
#define MAXP 256u

/* FNV-1a over seq/ctx/cpu/len and the fill bytes (not over csum itself). */
static uint32_t ev_csum(const unsigned char *p, uint32_t len)
{
	return fnv1a_except(p, len, 12, 16);
}

static void ev_fill(unsigned char *p, unsigned cpu, unsigned ctx, uint32_t seq, uint32_t len)
{
	struct ev_hdr h;
	uint32_t i;
	h.seq = seq;
	h.ctx = (uint16_t)ctx;
	h.cpu = (uint16_t)cpu;
	h.len = len;
	h.csum = 0;
	memcpy(p, &h, HDR);
	for (i = HDR; i < len; i++)
		p[i] = (unsigned char)mix(seq * 2654435761u ^ (i << 8) ^ (ctx << 24) ^ (cpu << 28));
	h.csum = ev_csum(p, len);
	memcpy(p + 12, &h.csum, 4);
}

/* A record is valid when its payload is exactly an event the writer built. */
static bool ev_check(const struct ringbuf_record *rec, struct ev_hdr *out)
{
	if (!rec->data || rec->len < HDR)
		return false;
	memcpy(out, rec->data, HDR);
	if (out->len < HDR || out->len > MAXP || rec->len != ((out->len + 3u) & ~3u))
		return false;
	return ev_csum((const unsigned char *)rec->data, out->len) == out->csum;
}

/* Reserve, fill, commit (async-signal-safe). 0, or -1 when dropped. */
static int ev_write(struct ringbuf *rb, unsigned cpu, unsigned ctx, uint32_t seq, uint32_t len)
{
	unsigned char *p = ringbuf_reserve(rb, cpu, len);
	if (!p)
		return -1;
	ev_fill(p, cpu, ctx, seq, len);
	ringbuf_commit(rb, cpu, p);
	return 0;
}

/* ---- fixtures ----------------------------------------------------------- */

static uint64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec t = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
	while (nanosleep(&t, &t) != 0 && errno == EINTR)
		;
}

/* What the deterministic tests wrote, per CPU, by sequence number. */
#define MAXEV 4096
struct wlog {
	uint64_t ts[4][MAXEV];
	uint32_t len[4][MAXEV];
	uint32_t n[4];
};
static struct wlog W;

static void wlog_reset(void)
{
	memset(&W, 0, sizeof W);
}

/* Write the next event of cpu at time ts (controlled clock); must succeed. */
static uint32_t det_write(struct ringbuf *rb, unsigned cpu, uint64_t ts, uint32_t len)
{
	uint32_t seq = W.n[cpu];
	assert_true(seq < MAXEV);
	atomic_store(&g_now, ts);
	assert_int_equal(ev_write(rb, cpu, 0, seq, len), 0);
	W.ts[cpu][seq] = ts;
	W.len[cpu][seq] = len;
	W.n[cpu]++;
	return seq;
}

/* rec must be event seq of cpu exactly as written (payload, ts, cpu). */
static void expect_rec(const struct ringbuf_record *rec, unsigned cpu, uint32_t seq)
{
	struct ev_hdr h;
	if (!ev_check(rec, &h))
		fail_msg("invalid record (len %zu) where cpu %u seq %u was expected", rec->len, cpu, seq);
	if (h.cpu != cpu || h.seq != seq || rec->cpu != cpu)
		fail_msg("got cpu %u (rec.cpu %u) seq %u, expected cpu %u seq %u", h.cpu, rec->cpu, h.seq,
			 cpu, seq);
	if (h.len != W.len[cpu][seq])
		fail_msg("seq %u: length %u, written %u", seq, h.len, W.len[cpu][seq]);
	if (rec->ts != W.ts[cpu][seq])
		fail_msg("cpu %u seq %u: ts %llu, written at %llu", cpu, seq, (unsigned long long)rec->ts,
			 (unsigned long long)W.ts[cpu][seq]);
}

/* The deterministic tests keep their iterator in g_it, so that teardown frees
 * it when an assertion ends the test early. */

static struct ringbuf_iter *it_start(struct ringbuf *rb, unsigned cpu)
{
	assert_null(g_it);
	assert_int_equal(ringbuf_iter_start(rb, cpu, &g_it), 0);
	assert_non_null(g_it);
	return g_it;
}

static void it_finish(void)
{
	ringbuf_iter_finish(g_it);
	g_it = NULL;
}

static int iter_next_checked(struct ringbuf_iter *it, struct ringbuf_record *rec)
{
	int r = ringbuf_iter_next(it, rec);
	if (r < 0)
		fail_msg("ringbuf_iter_next: %s", ringbuf_strerror(r));
	return r;
}

/* ==== 1. non-consuming iterator ========================================== */

static void iterator_two_passes_same_events_then_consume_returns_all(void **state)
{
	struct ringbuf *rb = mk(1, 256, 32, RINGBUF_MODE_PRODUCER_CONSUMER, true);
	struct ringbuf_record rec;
	struct ringbuf_iter *it;
	struct ringbuf_stats st;
	uint64_t t = 1000;
	uint32_t i, n = 120;
	int pass;
	(void)state;
	wlog_reset();
	for (i = 0; i < n; i++) {
		t += 1 + mix(i) % 100;
		if (i % 17 == 16)
			t += 1ull << 28; /* a delta that needs a TIME_EXTEND */
		det_write(rb, 0, t, 16 + mix(i + 7) % 41);
	}
	assert_int_equal(ringbuf_stats_cpu(rb, 0, &st), 0);
	assert_int_equal(st.dropped_events, 0);
	assert_true(st.pages_touched >= 10); /* the walk crosses many pages */

	/* two iterators, and a reset of the second: each pass is the whole log */
	for (pass = 0; pass < 3; pass++) {
		if (pass < 2)
			it = it_start(rb, 0);
		else
			ringbuf_iter_reset(it);
		for (i = 0; i < n; i++) {
			assert_int_equal(iter_next_checked(it, &rec), 1);
			expect_rec(&rec, 0, i);
			assert_int_equal(rec.lost, 0);
		}
		assert_int_equal(iter_next_checked(it, &rec), 0);
		assert_int_equal(ringbuf_iter_dropped(it), 0);
		if (pass != 1)
			it_finish();
	}
	/* the iterator consumed nothing */
	for (i = 0; i < n; i++) {
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
		expect_rec(&rec, 0, i);
		assert_int_equal(rec.lost, 0);
	}
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 0);
}

static void iterator_starts_mid_reader_page_walks_many_small_pages_and_reset_goes_to_oldest_unread(
	void **state)
{
	struct ringbuf *rb = mk(1, 128, 160, RINGBUF_MODE_PRODUCER_CONSUMER, true);
	struct ringbuf_record rec;
	struct ringbuf_iter *it;
	uint32_t i, n = 300, k = 3, m;
	uint64_t t = 5000;
	(void)state;
	wlog_reset();
	for (i = 0; i < n; i++) {
		t += 3 + mix(i) % 7;
		det_write(rb, 0, t, 16 + mix(i) % 21);
	}
	for (i = 0; i < k; i++) {
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
		expect_rec(&rec, 0, i);
	}
	/* the consumer stopped in the middle of the reader page */
	assert_true(ringbuf__cpu(rb, 0)->read > 0);
	assert_true(ringbuf__cpu(rb, 0)->read < ringbuf__page_commit(rb, 0, ringbuf__cpu(rb, 0)->reader_page));

	it = it_start(rb, 0);
	for (i = k; i < n; i++) {
		assert_int_equal(iter_next_checked(it, &rec), 1);
		expect_rec(&rec, 0, i);
	}
	assert_int_equal(iter_next_checked(it, &rec), 0);

	/* reset: back to the oldest unread event (the consumer's position) */
	ringbuf_iter_reset(it);
	for (i = k; i < k + 10; i++) {
		assert_int_equal(iter_next_checked(it, &rec), 1);
		expect_rec(&rec, 0, i);
	}
	ringbuf_iter_reset(it);
	assert_int_equal(iter_next_checked(it, &rec), 1);
	expect_rec(&rec, 0, k);

	/* the consumer moves on by several pages; reset follows it */
	m = k + 40;
	for (i = k; i < m; i++) {
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
		expect_rec(&rec, 0, i);
	}
	ringbuf_iter_reset(it);
	for (i = m; i < n; i++) {
		assert_int_equal(iter_next_checked(it, &rec), 1);
		expect_rec(&rec, 0, i);
	}
	assert_int_equal(iter_next_checked(it, &rec), 0);
	assert_int_equal(ringbuf_iter_dropped(it), 0);
	it_finish();
}

static void iterator_returns_events_committed_after_it_reached_the_end(void **state)
{
	struct ringbuf *rb = mk(1, 128, 256, RINGBUF_MODE_PRODUCER_CONSUMER, true);
	struct ringbuf_record rec;
	struct ringbuf_iter *it;
	uint32_t i, next = 0;
	uint64_t t = 100;
	const uint32_t batches[] = {10, 1, 5, 37, 120};
	size_t b;
	(void)state;
	wlog_reset();
	it = it_start(rb, 0);
	det_write(rb, 0, t, 20); /* the buffer is not empty when the walk starts */
	for (b = 0; b < sizeof batches / sizeof batches[0]; b++) {
		for (i = 0; i < batches[b]; i++) {
			t += 1 + mix(i + (uint32_t)b) % 1000;
			det_write(rb, 0, t, 16 + mix(i * 3) % 30);
		}
		for (; next < W.n[0]; next++) {
			assert_int_equal(iter_next_checked(it, &rec), 1);
			expect_rec(&rec, 0, next);
		}
		assert_int_equal(iter_next_checked(it, &rec), 0);
		assert_int_equal(iter_next_checked(it, &rec), 0); /* stays at the end */
	}
	it_finish();
}

/* The iterator reaches the end while the buffer is empty, then events come. */
static void iterator_started_on_empty_buffer_returns_later_events_with_their_time_stamps(void **state)
{
	struct ringbuf *rb = mk(1, 128, 16, RINGBUF_MODE_PRODUCER_CONSUMER, true);
	struct ringbuf_record rec;
	struct ringbuf_iter *it;
	uint32_t i;
	(void)state;
	wlog_reset();
	it = it_start(rb, 0);
	assert_int_equal(iter_next_checked(it, &rec), 0);
	det_write(rb, 0, 5000, 16);
	det_write(rb, 0, 5010, 16);
	det_write(rb, 0, 5020, 24);
	for (i = 0; i < 3; i++) {
		assert_int_equal(iter_next_checked(it, &rec), 1);
		expect_rec(&rec, 0, i); /* checks rec.ts == 5000, 5010, 5020 */
	}
	assert_int_equal(iter_next_checked(it, &rec), 0);
	it_finish();
	for (i = 0; i < 3; i++) { /* what the consumer says */
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
		expect_rec(&rec, 0, i);
	}
}

/* A reservation that opened a new page is discarded (rolled back), so the
 * commit page moves onto an empty page whose time_stamp belongs to the
 * discarded event; the next event there must still get its own time. */
static void iterator_after_discarded_first_event_of_a_page_reports_the_next_events_time(void **state)
{
	struct ringbuf *rb = mk(1, 128, 16, RINGBUF_MODE_PRODUCER_CONSUMER, true);
	struct ringbuf_record rec;
	struct ringbuf_iter *it;
	uint32_t i, tail0, n;
	uint64_t t = 1000;
	unsigned char *p;
	(void)state;
	wlog_reset();
	for (;;) {
		tail0 = ringbuf__cpu(rb, 0)->tail_page;
		t += 10;
		atomic_store(&g_now, t);
		p = ringbuf_reserve(rb, 0, 16);
		assert_non_null(p);
		if (ringbuf__cpu(rb, 0)->tail_page != tail0) {
			ringbuf_discard(rb, 0, p); /* the first event of a new page */
			break;
		}
		ev_fill(p, 0, 0, W.n[0], 16);
		ringbuf_commit(rb, 0, p);
		W.ts[0][W.n[0]] = t;
		W.len[0][W.n[0]++] = 16;
	}
	n = W.n[0];
	it = it_start(rb, 0);
	for (i = 0; i < n; i++) {
		assert_int_equal(iter_next_checked(it, &rec), 1);
		expect_rec(&rec, 0, i);
	}
	assert_int_equal(iter_next_checked(it, &rec), 0);
	det_write(rb, 0, t + 777, 16);
	assert_int_equal(iter_next_checked(it, &rec), 1);
	expect_rec(&rec, 0, n);
	it_finish();
	for (i = 0; i <= n; i++) {
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
		expect_rec(&rec, 0, i);
	}
}

static void merged_iterator_three_cpus_time_order_and_exact_per_cpu_sequences(void **state)
{
	struct ringbuf *rb = mk(3, 256, 128, RINGBUF_MODE_PRODUCER_CONSUMER, true);
	struct ringbuf_record rec;
	struct ringbuf_iter *it;
	static uint32_t order_cpu[1000], order_seq[1000];
	uint32_t i, n = 900, next[3], got;
	uint64_t t = 1000, last;
	int pass;
	(void)state;
	wlog_reset();
	for (i = 0; i < n; i++) {
		unsigned cpu = mix(i * 13 + 1) % 3;
		if (mix(i * 7) % 4) /* a quarter of the events share the previous time */
			t += 1 + mix(i) % 50;
		if (i % 97 == 96)
			t += 1ull << 27; /* TIME_EXTEND on some CPU */
		det_write(rb, cpu, t, 16 + mix(i) % 33);
	}
	it = it_start(rb, RINGBUF_ALL_CPUS);
	for (pass = 0; pass < 2; pass++) {
		if (pass)
			ringbuf_iter_reset(it);
		memset(next, 0, sizeof next);
		last = 0;
		for (got = 0;; got++) {
			struct ev_hdr h;
			int r = iter_next_checked(it, &rec);
			if (r == 0)
				break;
			assert_true(got < n);
			assert_true(ev_check(&rec, &h));
			assert_true(rec.cpu < 3);
			expect_rec(&rec, rec.cpu, next[rec.cpu]);
			next[rec.cpu]++;
			if (rec.ts < last)
				fail_msg("merged iterator: ts %llu after %llu", (unsigned long long)rec.ts,
					 (unsigned long long)last);
			last = rec.ts;
			if (pass == 0) {
				order_cpu[got] = rec.cpu;
				order_seq[got] = h.seq;
			} else {
				assert_int_equal(order_cpu[got], rec.cpu);
				assert_int_equal(order_seq[got], h.seq);
			}
		}
		assert_int_equal(got, n);
		for (i = 0; i < 3; i++)
			assert_int_equal(next[i], W.n[i]);
		assert_true(W.n[0] > 200 && W.n[1] > 200 && W.n[2] > 200);
	}
	assert_int_equal(ringbuf_iter_dropped(it), 0);
	it_finish();
}

/* ==== 2. overwrite under the iterator (deterministic) ===================== */

/* Geometry: 128-byte pages (112 data bytes), 16-byte payloads (20-byte events,
 * deltas of 10: no time records): 5 events per page, 8 ring pages. */
#define OW_LEN 16

static void ow_write(struct ringbuf *rb, uint32_t count)
{
	uint32_t i;
	for (i = 0; i < count; i++)
		det_write(rb, 0, 1000 + 10 * (uint64_t)W.n[0], OW_LEN);
}

/* Walk the iterator to its end, checking each record; returns the count and
 * stores the sequence numbers and lost counts. */
static uint32_t ow_drain_iter(struct ringbuf_iter *it, uint32_t *seqs, uint64_t *lost, uint32_t max)
{
	struct ringbuf_record rec;
	uint32_t k = 0;
	while (iter_next_checked(it, &rec) == 1) {
		struct ev_hdr h;
		assert_true(k < max);
		if (!ev_check(&rec, &h))
			fail_msg("iterator returned an invalid record (len %zu) after %u events", rec.len, k);
		if (h.seq >= W.n[0])
			fail_msg("iterator returned seq %u that was never written (%u written)", h.seq,
				 W.n[0]);
		expect_rec(&rec, 0, h.seq);
		seqs[k] = h.seq;
		lost[k] = rec.lost;
		k++;
	}
	return k;
}

static void iterator_on_recycled_ring_page_reports_loss_and_goes_forward(void **state)
{
	struct ringbuf *rb = mk(1, 128, 8, RINGBUF_MODE_OVERWRITE, true);
	struct ringbuf_record rec;
	struct ringbuf_iter *it;
	uint32_t seqs[256], cseq[256], i, k, kc;
	uint64_t lost[256];
	struct ringbuf_stats st;
	(void)state;
	wlog_reset();
	ow_write(rb, 20); /* ring pages 0..3 */
	it = it_start(rb, 0);
	for (i = 0; i < 7; i++) { /* the iterator is on the second page */
		assert_int_equal(iter_next_checked(it, &rec), 1);
		expect_rec(&rec, 0, i);
	}
	ow_write(rb, 100); /* 20 pages: the ring is overwritten 2.5 times */
	assert_int_equal(ringbuf_stats_cpu(rb, 0, &st), 0);
	assert_true(st.overrun > 0);

	k = ow_drain_iter(it, seqs, lost, 256);
	assert_true(k > 0);
	if (seqs[0] <= 6)
		fail_msg("after the overwrite the iterator went back to seq %u (had returned 0..6)",
			 seqs[0]);
	assert_true(lost[0] >= 1);
	assert_true(ringbuf_iter_dropped(it) > 0);
	for (i = 1; i < k; i++) {
		if (seqs[i] <= seqs[i - 1])
			fail_msg("iterator: seq %u after %u", seqs[i], seqs[i - 1]);
		if (seqs[i] != seqs[i - 1] + 1 && lost[i] == 0)
			fail_msg("iterator: seq %u after %u with rec.lost 0", seqs[i], seqs[i - 1]);
	}
	assert_int_equal(seqs[k - 1], W.n[0] - 1); /* it got to the newest */
	it_finish();

	/* it resumed at the oldest event still there: what the consumer returns */
	for (kc = 0; ringbuf_consume(rb, 0, &rec) == 1; kc++) {
		struct ev_hdr h;
		assert_true(ev_check(&rec, &h));
		assert_true(kc < 256);
		cseq[kc] = h.seq;
	}
	assert_int_equal(kc, k);
	for (i = 0; i < k; i++)
		assert_int_equal(cseq[i], seqs[i]);
}

/* As above, but the consumer read part of the reader page first: the iterator
 * starts mid reader page, walks onto the ring, and the ring page it is on is
 * overwritten. Events it already returned must not come back. */
static void iterator_past_partly_consumed_reader_page_never_goes_back_after_overwrite(void **state)
{
	struct ringbuf *rb = mk(1, 128, 8, RINGBUF_MODE_OVERWRITE, true);
	struct ringbuf_record rec;
	struct ringbuf_iter *it;
	uint32_t seqs[256], i, k, last = 0;
	uint64_t lost[256];
	(void)state;
	wlog_reset();
	ow_write(rb, 20);
	for (i = 0; i < 3; i++) {
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
		expect_rec(&rec, 0, i);
	}
	it = it_start(rb, 0);
	for (i = 3; i < 12; i++) { /* seq 3, 4 on the reader page, 5..11 on the ring */
		assert_int_equal(iter_next_checked(it, &rec), 1);
		expect_rec(&rec, 0, i);
		last = i;
	}
	ow_write(rb, 100);

	k = ow_drain_iter(it, seqs, lost, 256);
	assert_true(k > 0);
	for (i = 0; i < k; i++) {
		uint32_t prev = i ? seqs[i - 1] : last;
		if (seqs[i] <= prev)
			fail_msg("iterator went back: seq %u returned after seq %u (event %u after the "
				 "overwrite, rec.lost %llu)",
				 seqs[i], prev, i, (unsigned long long)lost[i]);
	}
	assert_true(lost[0] >= 1);
	assert_true(ringbuf_iter_dropped(it) > 0);
	it_finish();
}

/* The iterator is on the reader page (which writers never touch) while the
 * ring ahead of it is overwritten: when it goes on to the ring, the events it
 * skips must be reported as lost, as the consumer reports them. */
static void iterator_on_reader_page_reports_events_overwritten_ahead_of_it(void **state)
{
	struct ringbuf *rb = mk(1, 128, 8, RINGBUF_MODE_OVERWRITE, true);
	struct ringbuf_record rec;
	struct ringbuf_iter *it;
	uint32_t seqs[256], cseq[256], i, k, kc;
	uint64_t lost[256], clost[256];
	(void)state;
	wlog_reset();
	ow_write(rb, 20);
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
	expect_rec(&rec, 0, 0);
	it = it_start(rb, 0);
	assert_int_equal(iter_next_checked(it, &rec), 1);
	expect_rec(&rec, 0, 1);
	ow_write(rb, 100); /* seq 5.. (ring pages) are overwritten */

	k = ow_drain_iter(it, seqs, lost, 256);
	for (kc = 0; ringbuf_consume(rb, 0, &rec) == 1; kc++) {
		struct ev_hdr h;
		assert_true(kc < 256);
		assert_true(ev_check(&rec, &h));
		cseq[kc] = h.seq;
		clost[kc] = rec.lost;
	}
	/* the consumer: 1..4 (its reader page), then the oldest survivor with
	 * rec.lost > 0; the iterator (which returned 1 already) the same from 2 */
	assert_true(kc > 5);
	assert_int_equal(cseq[0], 1);
	assert_int_equal(cseq[3], 4);
	assert_true(cseq[4] > 5);
	assert_true(clost[4] > 0);
	assert_int_equal(k, kc - 1);
	for (i = 0; i < k; i++) {
		assert_int_equal(seqs[i], cseq[i + 1]);
		if ((lost[i] > 0) != (clost[i + 1] > 0))
			fail_msg("event %u (seq %u, after seq %u): iterator rec.lost %llu, consumer "
				 "rec.lost %llu",
				 i, seqs[i], cseq[i], (unsigned long long)lost[i],
				 (unsigned long long)clost[i + 1]);
	}
	assert_true(ringbuf_iter_dropped(it) > 0);
	it_finish();
}

/* ==== 3. threaded: iterator against writers (and a consumer) ============== */

#define NCTX 2
struct stress {
	struct ringbuf *rb;
	_Atomic(int) stop;
	_Atomic(uint32_t) reserved[NCTX]; /* sequence numbers handed out, per context */
	_Atomic(uint64_t) irqs;
	pid_t writer_tid;
	/* iterator thread results (read by the test thread after joining; the
	 * atomic ones also while it runs, to know when the run has enough) */
	_Atomic(uint64_t) passes, it_events, it_lost_events;
	uint64_t it_silent_gaps, it_eagain, it_ends, it_caps;
	uint64_t first_gap_prev, first_gap_seq;
	_Atomic(int) it_fail;
	char it_why[256];
	/* consumer thread results */
	_Atomic(uint64_t) c_events;
	uint64_t c_lost, c_calls;
	_Atomic(int) c_fail;
	char c_why[256];
};
static struct stress S;

static void stress_write(unsigned ctx)
{
	uint32_t seq = atomic_load_explicit(&S.reserved[ctx], memory_order_relaxed);
	uint32_t len = HDR + mix(seq * 5 + ctx) % 72;
	unsigned char *p = ringbuf_reserve(S.rb, 0, len);
	if (!p)
		return; /* a drop takes no sequence number */
	/* published before the commit: a reader that sees the event sees this */
	atomic_store_explicit(&S.reserved[ctx], seq + 1, memory_order_release);
	ev_fill(p, 0, ctx, seq, len);
	ringbuf_commit(S.rb, 0, p);
}

static void stress_irq(int sig)
{
	int e = errno;
	uint64_t n = atomic_fetch_add(&S.irqs, 1);
	(void)sig;
	stress_write(1);
	if (n & 1)
		stress_write(1);
	errno = e;
}

static void *stress_writer(void *arg)
{
	timer_t tm;
	(void)arg;
	S.writer_tid = (pid_t)syscall(SYS_gettid);
	if (thread_timer(S.writer_tid, SIGUSR1, 40000, 40000, &tm) != 0)
		return (void *)1;
	while (!atomic_load_explicit(&S.stop, memory_order_relaxed))
		stress_write(0);
	timer_delete(tm);
	return NULL;
}

static void it_failf(const char *fmt, ...)
{
	va_list ap;
	if (atomic_fetch_add(&S.it_fail, 1))
		return; /* keep the first */
	va_start(ap, fmt);
	vsnprintf(S.it_why, sizeof S.it_why, fmt, ap);
	va_end(ap);
}

static void *stress_iterator(void *arg)
{
	struct ringbuf_record rec;
	(void)arg;
	while (!atomic_load(&S.stop)) {
		struct ringbuf_iter *it;
		int64_t prev[NCTX];
		bool lost_since[NCTX];
		uint64_t last_ts = 0, n = 0;
		int c, r;
		if ((r = ringbuf_iter_start(S.rb, 0, &it)) != 0) {
			it_failf("iter_start: %s", ringbuf_strerror(r));
			return NULL;
		}
		for (c = 0; c < NCTX; c++) {
			prev[c] = -1;
			lost_since[c] = false;
		}
		for (;;) {
			struct ev_hdr h;
			r = ringbuf_iter_next(it, &rec);
			if (r == 0) {
				S.it_ends++;
				break;
			}
			if (r == RINGBUF_EAGAIN) {
				S.it_eagain++;
				break;
			}
			if (r < 0) {
				it_failf("iter_next: %s", ringbuf_strerror(r));
				break;
			}
			if (!ev_check(&rec, &h) || h.cpu != 0 || h.ctx >= NCTX || rec.cpu != 0) {
				it_failf("invalid event (len %zu) in pass %llu", rec.len,
					 (unsigned long long)S.passes);
				break;
			}
			if (h.seq >= atomic_load_explicit(&S.reserved[h.ctx], memory_order_acquire)) {
				it_failf("ctx %u seq %u was never written", h.ctx, h.seq);
				break;
			}
			if (rec.lost) {
				S.it_lost_events++;
				for (c = 0; c < NCTX; c++)
					lost_since[c] = true;
			}
			if (prev[h.ctx] >= 0) {
				if ((int64_t)h.seq <= prev[h.ctx]) {
					it_failf("ctx %u: seq %u after %lld within one pass (rec.lost %llu)",
						 h.ctx, h.seq, (long long)prev[h.ctx],
						 (unsigned long long)rec.lost);
					break;
				}
				if ((int64_t)h.seq != prev[h.ctx] + 1 && !lost_since[h.ctx] &&
				    !S.it_silent_gaps++) {
					S.first_gap_prev = (uint64_t)prev[h.ctx];
					S.first_gap_seq = h.seq;
				}
			}
			if (rec.ts < last_ts) {
				it_failf("ts %llu after %llu within one pass", (unsigned long long)rec.ts,
					 (unsigned long long)last_ts);
				break;
			}
			last_ts = rec.ts;
			prev[h.ctx] = h.seq;
			lost_since[h.ctx] = false;
			S.it_events++;
			if (++n >= 3000) { /* chasing the writer: start over */
				S.it_caps++;
				break;
			}
		}
		ringbuf_iter_finish(it);
		S.passes++;
		if (atomic_load(&S.it_fail))
			return NULL;
	}
	return NULL;
}

static void *stress_consumer(void *arg)
{
	struct ringbuf_record rec;
	int64_t prev[NCTX] = {-1, -1};
	uint64_t last_ts = 0;
	(void)arg;
	while (!atomic_load(&S.stop)) {
		struct ev_hdr h;
		int r = ringbuf_consume(S.rb, 0, &rec);
		S.c_calls++;
		if (r == 0 || r == RINGBUF_EAGAIN) {
			sched_yield();
			continue;
		}
		if (r < 0) {
			snprintf(S.c_why, sizeof S.c_why, "consume: %s", ringbuf_strerror(r));
			atomic_store(&S.c_fail, 1);
			return NULL;
		}
		if (!ev_check(&rec, &h) || h.ctx >= NCTX) {
			snprintf(S.c_why, sizeof S.c_why, "consumer: invalid event (len %zu)", rec.len);
			atomic_store(&S.c_fail, 1);
			return NULL;
		}
		if ((int64_t)h.seq <= prev[h.ctx] || rec.ts < last_ts) {
			snprintf(S.c_why, sizeof S.c_why, "consumer: ctx %u seq %u after %lld, ts %llu after %llu",
				 h.ctx, h.seq, (long long)prev[h.ctx], (unsigned long long)rec.ts,
				 (unsigned long long)last_ts);
			atomic_store(&S.c_fail, 1);
			return NULL;
		}
		prev[h.ctx] = h.seq;
		last_ts = rec.ts;
		S.c_events++;
		S.c_lost += rec.lost;
	}
	return NULL;
}

static _Atomic(unsigned long) g_warns;
static const char *_Atomic g_first_warn;
static void count_warn(const char *what, unsigned cpu, void *ctx)
{
	const char *none = NULL;
	(void)cpu;
	(void)ctx;
	atomic_compare_exchange_strong(&g_first_warn, &none, what);
	atomic_fetch_add(&g_warns, 1);
}

enum { STRESS_ALONE = 0, STRESS_CONSUMER = 1, STRESS_SKIPS = 2 };

/* STRESS_ALONE, STRESS_CONSUMER: what the iterator returns is valid, in
 * order, and was written. STRESS_SKIPS (no consumer): also, every event it
 * skips is reported (a sequence gap always follows a rec.lost). */
static void run_iter_stress(int kind, size_t page, double seconds)
{
	const int with_consumer = kind == STRESS_CONSUMER;
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct sigaction sa;
	sigset_t block;
	pthread_t wt, itt, ct;
	void *wret;
	uint64_t t0;

	memset(&S, 0, sizeof S);
	atomic_store(&g_warns, 0);
	atomic_store(&g_first_warn, NULL);
	ringbuf_set_warn_hook(count_warn, NULL);
	cfg.page_size = page;
	cfg.size_per_cpu = 8 * page;
	cfg.mode = RINGBUF_MODE_OVERWRITE;
	assert_int_equal(ringbuf_create(&cfg, &g_rb), 0);
	S.rb = g_rb;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = stress_irq;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &block, NULL); /* readers (and we) never take it */
	assert_int_equal(pthread_create(&itt, NULL, stress_iterator, NULL), 0);
	if (with_consumer)
		assert_int_equal(pthread_create(&ct, NULL, stress_consumer, NULL), 0);
	pthread_sigmask(SIG_UNBLOCK, &block, NULL);
	assert_int_equal(pthread_create(&wt, NULL, stress_writer, NULL), 0);
	pthread_sigmask(SIG_BLOCK, &block, NULL);

	/* at least `seconds`, and until the threads have done what the checks
	 * below ask for: counted, so a loaded machine only makes it longer */
	t0 = mono_ns();
	while ((mono_ns() - t0 < (uint64_t)(seconds * 1e9) || atomic_load(&S.passes) <= 10 ||
		atomic_load(&S.it_events) <= 1000 || atomic_load(&S.irqs) <= 50 ||
		atomic_load(&S.reserved[1]) <= 50 ||
		(with_consumer ? atomic_load(&S.c_events) == 0 : atomic_load(&S.it_lost_events) == 0)) &&
	       !atomic_load(&S.it_fail) && !atomic_load(&S.c_fail))
		sleep_ns(10000000);
	atomic_store(&S.stop, 1);
	pthread_join(wt, &wret);
	pthread_join(itt, NULL);
	if (with_consumer)
		pthread_join(ct, NULL);
	pthread_sigmask(SIG_UNBLOCK, &block, NULL);
	signal(SIGUSR1, SIG_DFL);

	print_message("  iterator %s, %zu-byte pages: %llu passes (%llu to the end, %llu capped, %llu "
		      "EAGAIN), %llu events checked, %llu with rec.lost, dropped-gaps without rec.lost "
		      "%llu; writer %u+%u events, %llu timer signals%s",
		      with_consumer ? "+ consumer" : "alone", page, (unsigned long long)S.passes,
		      (unsigned long long)S.it_ends, (unsigned long long)S.it_caps,
		      (unsigned long long)S.it_eagain, (unsigned long long)S.it_events,
		      (unsigned long long)S.it_lost_events, (unsigned long long)S.it_silent_gaps,
		      atomic_load(&S.reserved[0]), atomic_load(&S.reserved[1]),
		      (unsigned long long)atomic_load(&S.irqs), with_consumer ? "" : "\n");
	if (with_consumer)
		print_message("; consumer %llu events (%llu lost) in %llu calls\n",
			      (unsigned long long)S.c_events, (unsigned long long)S.c_lost,
			      (unsigned long long)S.c_calls);
	ringbuf_set_warn_hook(NULL, NULL);
	assert_null(wret);
	if (atomic_load(&S.it_fail))
		fail_msg("iterator thread: %d failure(s), first: %s", atomic_load(&S.it_fail), S.it_why);
	if (atomic_load(&S.c_fail))
		fail_msg("consumer thread: %s", S.c_why);
	if (atomic_load(&g_warns)) /* an internal inconsistency was reported */
		fail_msg("%lu warning(s), first: %s", atomic_load(&g_warns), atomic_load(&g_first_warn));
	assert_true(S.passes > 10);
	assert_true(S.it_events > 1000);
	assert_true(atomic_load(&S.irqs) > 50);
	assert_true(atomic_load(&S.reserved[1]) > 50);
	if (with_consumer)
		assert_true(S.c_events > 0);
	else
		assert_true(S.it_lost_events > 0); /* overwrites under the iterator were reported */
	if (kind == STRESS_SKIPS && S.it_silent_gaps)
		/* without a consumer every skipped event was overwritten, so a gap
		 * must come with rec.lost on or before the event after it */
		fail_msg("%llu sequence gaps without rec.lost (events skipped silently; first: seq "
			 "%llu followed by %llu in the same writer context)",
			 (unsigned long long)S.it_silent_gaps, (unsigned long long)S.first_gap_prev,
			 (unsigned long long)S.first_gap_seq);
	ringbuf_destroy(g_rb);
	g_rb = NULL;
}

static void threaded_iterator_vs_overwriting_writer_with_signal_nesting(void **state)
{
	(void)state;
	run_iter_stress(STRESS_ALONE, 256, 2.0);
}

static void threaded_iterator_and_consumer_vs_overwriting_writer_with_signal_nesting(void **state)
{
	(void)state;
	run_iter_stress(STRESS_CONSUMER, 256, 2.0);
}

static void threaded_iterator_reports_every_event_it_skips_as_lost_256_byte_pages(void **state)
{
	(void)state;
	run_iter_stress(STRESS_SKIPS, 256, 1.5);
}

static void threaded_iterator_reports_every_event_it_skips_as_lost_128_byte_pages(void **state)
{
	(void)state;
	run_iter_stress(STRESS_SKIPS, 128, 1.5);
}

/* ==== 4. ringbuf_consume_merged ========================================== */

static void consume_merged_three_cpus_exact_time_order(void **state)
{
	struct ringbuf *rb = mk(3, 256, 128, RINGBUF_MODE_PRODUCER_CONSUMER, true);
	struct ringbuf_record rec;
	static uint32_t wcpu[1000];
	uint32_t i, n = 900, next[3] = {0, 0, 0};
	uint64_t t = 1;
	(void)state;
	wlog_reset();
	for (i = 0; i < n; i++) {
		unsigned cpu = mix(i * 31 + 5) % 3;
		t += 1 + mix(i) % 40; /* strictly increasing: the order is fully defined */
		if (i % 101 == 100)
			t += 1ull << 30;
		det_write(rb, cpu, t, 16 + mix(i + 1) % 33);
		wcpu[i] = cpu;
	}
	for (i = 0; i < n; i++) {
		unsigned cpu = wcpu[i];
		assert_int_equal(ringbuf_consume_merged(rb, &rec), 1);
		/* exactly the i-th event written, with its cpu and time stamp */
		assert_int_equal(rec.cpu, cpu);
		expect_rec(&rec, cpu, next[cpu]);
		assert_int_equal(rec.lost, 0);
		next[cpu]++;
	}
	assert_int_equal(ringbuf_consume_merged(rb, &rec), 0);
	for (i = 0; i < 3; i++)
		assert_true(ringbuf_empty_cpu(rb, i));
}

/* An event time-stamped on CPU 0 but not yet committed, a newer one committed
 * on CPU 1: the merged stream must not hand out the newer one first (the API
 * promises that a later event never has an older time stamp). */
static void consume_merged_does_not_return_a_newer_event_while_an_older_one_is_in_flight(void **state)
{
	struct ringbuf *rb = mk(2, 256, 8, RINGBUF_MODE_PRODUCER_CONSUMER, true);
	struct ringbuf_record rec;
	uint64_t ts[4];
	unsigned cpus[4];
	int n = 0, r;
	unsigned char *a;
	(void)state;
	wlog_reset();
	atomic_store(&g_now, 100);
	a = ringbuf_reserve(rb, 0, 16); /* CPU 0's writer took its time stamp (100)... */
	assert_non_null(a);
	ev_fill(a, 0, 0, 0, 16);
	W.ts[0][0] = 100;
	W.len[0][0] = 16;
	W.n[0] = 1;
	det_write(rb, 1, 200, 16); /* ...meanwhile CPU 1 commits an event at 200 */
	r = ringbuf_consume_merged(rb, &rec);
	assert_true(r >= 0 || r == RINGBUF_EAGAIN);
	if (r == 1) {
		ts[n] = rec.ts;
		cpus[n++] = rec.cpu;
	}
	ringbuf_commit(rb, 0, a); /* ...and CPU 0's writer commits */
	while ((r = ringbuf_consume_merged(rb, &rec)) == 1) {
		assert_true(n < 4);
		expect_rec(&rec, rec.cpu, 0);
		ts[n] = rec.ts;
		cpus[n++] = rec.cpu;
	}
	assert_int_equal(r, 0);
	assert_int_equal(n, 2);
	if (ts[1] < ts[0])
		fail_msg("merged stream went back in time: cpu %u ts %llu, then cpu %u ts %llu (CPU 0's "
			 "event was reserved at 100, before CPU 1's at 200, and committed after the first "
			 "ringbuf_consume_merged)",
			 cpus[0], (unsigned long long)ts[0], cpus[1], (unsigned long long)ts[1]);
}

/* Equal time stamps on several CPUs: all events, per-CPU order kept. */
static void consume_merged_with_equal_time_stamps_keeps_per_cpu_order(void **state)
{
	struct ringbuf *rb = mk(3, 128, 32, RINGBUF_MODE_PRODUCER_CONSUMER, true);
	struct ringbuf_record rec;
	uint32_t i, n = 300, next[3] = {0, 0, 0};
	uint64_t t = 50, last = 0;
	(void)state;
	wlog_reset();
	for (i = 0; i < n; i++) {
		if (i % 5 == 0)
			t += 7;
		det_write(rb, mix(i) % 3, t, 16);
	}
	for (i = 0; i < n; i++) {
		assert_int_equal(ringbuf_consume_merged(rb, &rec), 1);
		assert_true(rec.cpu < 3);
		expect_rec(&rec, rec.cpu, next[rec.cpu]);
		next[rec.cpu]++;
		assert_true(rec.ts >= last);
		last = rec.ts;
	}
	assert_int_equal(ringbuf_consume_merged(rb, &rec), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(next[i], W.n[i]);
}

struct mw {
	struct ringbuf *rb;
	unsigned cpu;
	uint32_t n;
	_Atomic(int) *go;
	uint32_t written;
	_Atomic(int) finished;
};

static void *merged_writer(void *arg)
{
	struct mw *w = arg;
	uint32_t i;
	while (!atomic_load(w->go))
		;
	for (i = 0; i < w->n; i++)
		if (ev_write(w->rb, w->cpu, 0, w->written, HDR + mix(i + w->cpu) % 48) == 0)
			w->written++;
		else
			sched_yield(); /* full: let the reader catch up */
	atomic_store(&w->finished, 1);
	return NULL;
}

static void consume_merged_time_never_goes_backwards_with_concurrent_writers(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf_record rec;
	struct mw w[3];
	pthread_t th[3];
	_Atomic(int) go = 0;
	int64_t prev[3] = {-1, -1, -1};
	uint64_t last = 0, got = 0, back = 0, worst = 0, first_back_at = 0;
	uint64_t first_prev = 0, first_ts = 0;
	unsigned first_cpu = 0, first_prev_cpu = 0, last_cpu = 0;
	uint32_t per = 300000;
	unsigned i;
	int done = 0;
	char why[160] = "";
	(void)state;
	cfg.ncpu = 3;
	cfg.page_size = 4096;
	cfg.size_per_cpu = 256 * 1024;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
	assert_int_equal(ringbuf_create(&cfg, &g_rb), 0);
	for (i = 0; i < 3; i++) {
		w[i].rb = g_rb;
		w[i].cpu = i;
		w[i].n = per;
		w[i].go = &go;
		w[i].written = 0;
		atomic_init(&w[i].finished, 0);
		assert_int_equal(pthread_create(&th[i], NULL, merged_writer, &w[i]), 0);
	}
	atomic_store(&go, 1);
	for (;;) {
		struct ev_hdr h;
		int r = ringbuf_consume_merged(g_rb, &rec);
		if (r == 0 || r == RINGBUF_EAGAIN) {
			if (done)
				break; /* drained after every writer finished */
			done = atomic_load(&w[0].finished) && atomic_load(&w[1].finished) &&
			       atomic_load(&w[2].finished);
			continue;
		}
		if (r != 1) {
			snprintf(why, sizeof why, "ringbuf_consume_merged: %s", ringbuf_strerror(r));
			break;
		}
		if (!ev_check(&rec, &h) || h.cpu != rec.cpu || rec.cpu >= 3) {
			snprintf(why, sizeof why, "invalid event or wrong cpu (rec.cpu %u)", rec.cpu);
			break;
		}
		if ((int64_t)h.seq <= prev[rec.cpu]) {
			snprintf(why, sizeof why, "cpu %u seq %u after %lld", rec.cpu, h.seq,
				 (long long)prev[rec.cpu]);
			break;
		}
		prev[rec.cpu] = h.seq;
		if (rec.ts < last) {
			if (!back++) {
				first_back_at = got;
				first_prev = last;
				first_ts = rec.ts;
				first_cpu = rec.cpu;
				first_prev_cpu = last_cpu;
			}
			if (last - rec.ts > worst)
				worst = last - rec.ts;
		} else {
			last = rec.ts;
			last_cpu = rec.cpu;
		}
		got++;
	}
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	if (why[0])
		fail_msg("merged: %s", why);
	for (i = 0; i < 3; i++)
		assert_int_equal(prev[i] + 1, (int64_t)w[i].written); /* every event read */
	print_message("  merged consume of 3 concurrent writers: %llu events, %llu steps back in time "
		      "(worst %llu ns)\n",
		      (unsigned long long)got, (unsigned long long)back, (unsigned long long)worst);
	/* Every event of every CPU, in a fixed count: not one may be older than
	 * one handed out before it (the merged readers' protocol, >>design
	 * MERGED READERS; before it, 40k-225k steps back per run here without
	 * a guard and a few with the old inflight_ts guard). */
	if (back)
		fail_msg("ringbuf_consume_merged went back in time %llu times; first at event %llu: cpu %u "
			 "ts %llu after cpu %u ts %llu (%llu ns earlier)",
			 (unsigned long long)back, (unsigned long long)first_back_at, first_cpu,
			 (unsigned long long)first_ts, first_prev_cpu, (unsigned long long)first_prev,
			 (unsigned long long)(first_prev - first_ts));
}

/* ==== 5. waiting ========================================================= */

static uint32_t waiters_word(struct ringbuf *rb)
{
	return atomic_load(&ringbuf__sh(rb)->waiters);
}

/* Wait until a waiter registered, then a little more so it sleeps in the futex. */
static void wait_for_waiter(struct ringbuf *rb, unsigned count)
{
	uint64_t t0 = mono_ns();
	while ((waiters_word(rb) >> 2) < count) {
		if (mono_ns() - t0 > 10000000000ull)
			break;
		sleep_ns(20000);
	}
	sleep_ns(300000);
}

/* (a) the only write comes from a signal handler */
struct sigwake {
	struct ringbuf *rb;
	_Atomic(int) stop;
	_Atomic(uint32_t) seq;
	sem_t round_done;
	int rounds;
	uint64_t lat[256];
	_Atomic(int) fail;
	char why[128];
};
static struct sigwake SW;

static void sigwake_handler(int sig)
{
	int e = errno;
	uint32_t seq = atomic_load(&SW.seq);
	(void)sig;
	if (ev_write(SW.rb, 0, 1, seq, HDR) == 0)
		atomic_store(&SW.seq, seq + 1);
	errno = e;
}

static void *sigwake_sleeper(void *arg)
{
	(void)arg;
	while (!atomic_load(&SW.stop))
		sleep_ns(1000000); /* the handler runs here, interrupting the sleep */
	return NULL;
}

static void *sigwake_reader(void *arg)
{
	struct ringbuf_record rec;
	int i;
	(void)arg;
	for (i = 0; i < SW.rounds; i++) {
		struct ev_hdr h;
		int r = ringbuf_wait(SW.rb, 0, 0, -1);
		uint64_t t = mono_ns();
		if (r != 1) {
			snprintf(SW.why, sizeof SW.why, "round %d: ringbuf_wait returned %d", i, r);
			atomic_store(&SW.fail, 1);
			break;
		}
		r = ringbuf_consume(SW.rb, 0, &rec);
		if (r != 1 || !ev_check(&rec, &h) || h.seq != (uint32_t)i) {
			snprintf(SW.why, sizeof SW.why, "round %d: consume %d, seq %u", i, r, r == 1 ? h.seq : 0);
			atomic_store(&SW.fail, 1);
			break;
		}
		SW.lat[i] = t > rec.ts ? t - rec.ts : 0;
		if (ringbuf_consume(SW.rb, 0, &rec) != 0) {
			snprintf(SW.why, sizeof SW.why, "round %d: more than one event", i);
			atomic_store(&SW.fail, 1);
			break;
		}
		sem_post(&SW.round_done);
	}
	sem_post(&SW.round_done);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void wait_is_woken_by_a_write_from_a_signal_handler(void **state)
{
	struct ringbuf *rb = mk(1, 4096, 16, RINGBUF_MODE_OVERWRITE, false);
	struct sigaction sa;
	sigset_t block;
	pthread_t sleeper, reader;
	int i, lost_round = -1;
	(void)state;
	memset(&SW, 0, sizeof SW);
	SW.rb = rb;
	SW.rounds = 200;
	sem_init(&SW.round_done, 0, 0);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = sigwake_handler;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &block, NULL);
	assert_int_equal(pthread_create(&reader, NULL, sigwake_reader, NULL), 0);
	pthread_sigmask(SIG_UNBLOCK, &block, NULL);
	assert_int_equal(pthread_create(&sleeper, NULL, sigwake_sleeper, NULL), 0);
	pthread_sigmask(SIG_BLOCK, &block, NULL);

	for (i = 0; i < SW.rounds && !atomic_load(&SW.fail); i++) {
		struct timespec dl;
		int rc;
		wait_for_waiter(rb, 1);
		if (!ringbuf_empty_cpu(rb, 0))
			break; /* reported below: the sequence check fails */
		if (pthread_kill(sleeper, SIGUSR1) != 0)
			break;
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += 10;
		while ((rc = sem_timedwait(&SW.round_done, &dl)) != 0 && errno == EINTR)
			;
		if (rc != 0) {
			lost_round = i;
			break;
		}
	}
	atomic_store(&SW.stop, 1);
	pthread_join(sleeper, NULL);
	if (lost_round >= 0 || atomic_load(&SW.seq) < (uint32_t)SW.rounds) {
		/* let the reader go: events for its remaining rounds, then a kick */
		while (atomic_load(&SW.seq) < (uint32_t)SW.rounds)
			if (ev_write(rb, 0, 1, atomic_load(&SW.seq), HDR) == 0)
				atomic_store(&SW.seq, atomic_load(&SW.seq) + 1);
		ringbuf_wake_waiters(rb);
	}
	pthread_join(reader, NULL);
	pthread_sigmask(SIG_UNBLOCK, &block, NULL);
	signal(SIGUSR1, SIG_DFL);
	sem_destroy(&SW.round_done);
	if (lost_round >= 0)
		fail_msg("round %d: the reader was not woken within 10 s by the signal handler's write "
			 "(lost wake-up)",
			 lost_round);
	if (atomic_load(&SW.fail))
		fail_msg("%s", SW.why);
	assert_int_equal(atomic_load(&SW.seq), SW.rounds);
	qsort(SW.lat, (size_t)SW.rounds, sizeof SW.lat[0], cmp_u64);
	print_message("  wake-up latency (signal-handler write -> ringbuf_wait returns), %d rounds: "
		      "median %.1f us, p90 %.1f us, min %.1f us, max %.1f us\n",
		      SW.rounds, SW.lat[SW.rounds / 2] / 1e3, SW.lat[SW.rounds * 9 / 10] / 1e3,
		      SW.lat[0] / 1e3, SW.lat[SW.rounds - 1] / 1e3);
}

/* (b) lost-wake-up stress */
#define LW_EVENTS 20000
struct lw {
	struct ringbuf *rb;
	_Atomic(uint32_t) consumed;
	uint32_t stalls, first_stall; /* writer thread */
	uint64_t waits;               /* reader thread */
	_Atomic(int) wfail, rfail;
	char wwhy[128], rwhy[128];
};
static struct lw LW;

static void *lw_writer(void *arg)
{
	uint32_t i, r = 12345;
	(void)arg;
	for (i = 0; i < LW_EVENTS; i++) {
		if (ev_write(LW.rb, 0, 0, i, HDR) != 0) {
			snprintf(LW.wwhy, sizeof LW.wwhy, "write %u dropped", i);
			atomic_store(&LW.wfail, 1);
			return NULL;
		}
		r = mix(r + i);
		sleep_ns(r % 50001); /* 0-50 us */
		if (i % 64 == 63) {
			/* every 64th event: the reader must wake for it with nothing
			 * written after it (a lost wake-up would leave it asleep) */
			uint64_t t0 = mono_ns();
			while (atomic_load(&LW.consumed) < i + 1 && !atomic_load(&LW.rfail)) {
				if (mono_ns() - t0 > 5000000000ull) {
					if (!LW.stalls++)
						LW.first_stall = i;
					break;
				}
				sleep_ns(10000);
			}
		}
	}
	return NULL;
}

static void *lw_reader(void *arg)
{
	struct ringbuf_record rec;
	uint32_t next = 0;
	(void)arg;
	while (next < LW_EVENTS) {
		int r = ringbuf_wait(LW.rb, 0, 0, -1);
		LW.waits++;
		if (r != 1) {
			snprintf(LW.rwhy, sizeof LW.rwhy, "ringbuf_wait returned %d at event %u", r, next);
			atomic_store(&LW.rfail, 1);
			return NULL;
		}
		while ((r = ringbuf_consume(LW.rb, 0, &rec)) == 1) {
			struct ev_hdr h;
			if (!ev_check(&rec, &h) || h.seq != next) {
				snprintf(LW.rwhy, sizeof LW.rwhy, "expected seq %u", next);
				atomic_store(&LW.rfail, 1);
				return NULL;
			}
			next++;
			atomic_store(&LW.consumed, next);
		}
	}
	return NULL;
}

static void wait_never_loses_a_wake_up_under_random_write_timing(void **state)
{
	struct ringbuf *rb = mk(1, 4096, 256, RINGBUF_MODE_PRODUCER_CONSUMER, false);
	pthread_t wt, rt;
	struct timespec dl;
	uint64_t t0 = mono_ns();
	(void)state;
	memset(&LW, 0, sizeof LW);
	LW.rb = rb;
	assert_int_equal(pthread_create(&rt, NULL, lw_reader, NULL), 0);
	assert_int_equal(pthread_create(&wt, NULL, lw_writer, NULL), 0);
	pthread_join(wt, NULL);
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 60;
	if (pthread_timedjoin_np(rt, NULL, &dl) != 0) {
		uint32_t c = atomic_load(&LW.consumed);
		ringbuf_wake_waiters(rb); /* its wait returns 0: it stops */
		pthread_join(rt, NULL);
		fail_msg("the reader is still blocked 60 s after the last write (read %u of %u): lost "
			 "wake-up",
			 c, LW_EVENTS);
	}
	print_message("  lost-wake-up stress: %u events in %.2f s, %llu waits, %u stalls\n", LW_EVENTS,
		      (mono_ns() - t0) / 1e9, (unsigned long long)LW.waits, LW.stalls);
	if (atomic_load(&LW.wfail))
		fail_msg("writer: %s", LW.wwhy);
	if (atomic_load(&LW.rfail))
		fail_msg("reader: %s", LW.rwhy);
	if (LW.stalls)
		fail_msg("%u times the reader did not wake within 5 s for the last event written (first "
			 "at event %u): lost wake-up",
			 LW.stalls, LW.first_stall);
	assert_int_equal(atomic_load(&LW.consumed), LW_EVENTS);
}

/* A waiter with a watermark is woken whenever writers bring the dirty pages
 * up to it: writers check the watermark only when their CPU touched a new
 * page (ringbuf__wake_due), so a check skipped at the wrong moment would leave
 * the reader asleep with the watermark reached. The writer writes one event
 * at a time until the watermark is reached (sometimes a few more), then stops
 * and gives the reader 2 s to drain: a reader still asleep is a stall. */
#define WMS_ROUNDS 400
static struct {
	struct ringbuf *rb;
	_Atomic(int) done;
	_Atomic(uint64_t) written, consumed;
	uint64_t waits, wake_ups, stalls;
} WMS;

static uint64_t wms_dirty(void)
{
	struct ringbuf_stats st;
	assert_int_equal(ringbuf_stats_cpu(WMS.rb, 0, &st), 0);
	/* as the library counts them (the first reader page is read without
	 * having been touched: read can be one ahead) */
	return st.pages_touched > st.pages_lost + st.pages_read
		       ? st.pages_touched - st.pages_lost - st.pages_read
		       : 0;
}

static void *wms_writer(void *arg)
{
	uint64_t x = 0x9e3779b97f4a7c15ull, seq = 0;
	unsigned r;
	(void)arg;
	for (r = 0; r < WMS_ROUNDS; r++) {
		unsigned extra;
		uint64_t t0;
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		extra = x % 4 == 0 ? (unsigned)(x >> 8) % 20 : 0;
		while (wms_dirty() < 4 || extra-- > 0) {
			if (ev_write(WMS.rb, 0, 0, (uint32_t)seq++, HDR + 8) != 0)
				break; /* full: cannot happen while the reader drains */
			atomic_fetch_add(&WMS.written, 1);
		}
		t0 = mono_ns();
		while (atomic_load(&WMS.consumed) < atomic_load(&WMS.written)) {
			if (mono_ns() - t0 > 2000000000ull) {
				WMS.stalls++;
				break;
			}
			sched_yield();
		}
	}
	atomic_store(&WMS.done, 1);
	ringbuf_wake_waiters(WMS.rb);
	return NULL;
}

static void *wms_reader(void *arg)
{
	struct ringbuf_record rec;
	(void)arg;
	while (!atomic_load(&WMS.done)) {
		int r = ringbuf_wait(WMS.rb, 0, 50, 5000);
		WMS.waits++;
		if (r == 1)
			WMS.wake_ups++;
		while (ringbuf_consume(WMS.rb, 0, &rec) == 1)
			atomic_fetch_add(&WMS.consumed, 1);
	}
	return NULL;
}

static void wait_with_watermark_wakes_the_reader_each_time_it_is_reached(void **state)
{
	struct ringbuf *rb = mk(1, 256, 8, RINGBUF_MODE_PRODUCER_CONSUMER, false);
	pthread_t wt, rt;
	(void)state;
	memset(&WMS, 0, sizeof WMS);
	WMS.rb = rb;
	assert_int_equal(pthread_create(&rt, NULL, wms_reader, NULL), 0);
	assert_int_equal(pthread_create(&wt, NULL, wms_writer, NULL), 0);
	pthread_join(wt, NULL);
	pthread_join(rt, NULL);
	print_message("  watermark: %d rounds, %llu events, %llu waits, %llu wake-ups, %llu stalls\n",
		      WMS_ROUNDS, (unsigned long long)atomic_load(&WMS.written),
		      (unsigned long long)WMS.waits, (unsigned long long)WMS.wake_ups,
		      (unsigned long long)WMS.stalls);
	assert_int_equal(WMS.stalls, 0);
	assert_true(WMS.wake_ups >= WMS_ROUNDS / 2);
	assert_int_equal(atomic_load(&WMS.consumed), atomic_load(&WMS.written));
}

/* (c) */
static void wait_times_out_on_an_empty_buffer(void **state)
{
	struct ringbuf *rb = mk(2, 4096, 4, RINGBUF_MODE_OVERWRITE, false);
	uint64_t t0, dt;
	int ms;
	(void)state;
	for (ms = 0; ms <= 50; ms += 50) {
		t0 = mono_ns();
		assert_int_equal(ringbuf_wait(rb, 0, 0, ms), 0);
		dt = mono_ns() - t0;
		assert_true(dt >= (uint64_t)ms * 1000000ull);
		assert_true(dt < 5000000000ull);
		if (ms)
			print_message("  ringbuf_wait(50 ms) on an empty buffer returned after %.2f ms\n",
				      dt / 1e6);
	}
	t0 = mono_ns();
	assert_int_equal(ringbuf_wait(rb, RINGBUF_ALL_CPUS, 50, 50), 0);
	assert_true(mono_ns() - t0 >= 50000000ull);
	/* data already there: at once */
	assert_int_equal(ev_write(rb, 1, 0, 0, HDR), 0);
	t0 = mono_ns();
	assert_int_equal(ringbuf_wait(rb, 1, 0, 10000), 1);
	assert_int_equal(ringbuf_wait(rb, RINGBUF_ALL_CPUS, 0, -1), 1);
	assert_true(mono_ns() - t0 < 1000000000ull);
	/* cpu 0 is still empty */
	assert_int_equal(ringbuf_wait(rb, 0, 0, 20), 0);
	assert_int_equal(atomic_load(&ringbuf__sh(rb)->waiters), 0); /* every waiter unregistered */
}

/* (d) watermark */
struct wm {
	struct ringbuf *rb;
	_Atomic(uint32_t) written;
	_Atomic(int) returned;
	_Atomic(uint32_t) written_at_return;
	int ret;
};
static struct wm WM;

static void *wm_waiter(void *arg)
{
	(void)arg;
	WM.ret = ringbuf_wait(WM.rb, 0, 50, 20000);
	atomic_store(&WM.written_at_return, atomic_load(&WM.written));
	atomic_store(&WM.returned, 1);
	return NULL;
}

/* 1024-byte pages hold 1008 data bytes: exactly 9 events of 100-byte payloads
 * (104 bytes each, deltas small), so n events occupy ceil(n / 9) pages. */
#define WM_PER_PAGE 9u
static void wait_with_watermark_returns_only_when_half_the_pages_hold_data(void **state)
{
	struct ringbuf *rb = mk(1, 1024, 8, RINGBUF_MODE_PRODUCER_CONSUMER, false);
	pthread_t th;
	uint32_t i, at;
	(void)state;
	memset(&WM, 0, sizeof WM);
	WM.rb = rb;
	assert_int_equal(pthread_create(&th, NULL, wm_waiter, NULL), 0);
	wait_for_waiter(rb, 1);
	for (i = 0; i < 8 * WM_PER_PAGE && !atomic_load(&WM.returned); i++) {
		assert_int_equal(ev_write(rb, 0, 0, i, 100), 0);
		atomic_store(&WM.written, i + 1);
		sleep_ns(3000000); /* slowly: 3 ms per event */
	}
	{
		uint64_t t0 = mono_ns();
		while (!atomic_load(&WM.returned) && mono_ns() - t0 < 5000000000ull)
			sleep_ns(1000000);
	}
	if (!atomic_load(&WM.returned)) {
		ringbuf_wake_waiters(rb);
		pthread_join(th, NULL);
		fail_msg("full_pct=50: still waiting with %u events (%u of 8 pages) written",
			 atomic_load(&WM.written), (atomic_load(&WM.written) + WM_PER_PAGE - 1) / WM_PER_PAGE);
	}
	pthread_join(th, NULL);
	at = atomic_load(&WM.written_at_return);
	print_message("  full_pct=50 of 8 pages: returned %d when %u events (%u pages) had been written "
		      "(one more may have been in flight)\n",
		      WM.ret, at, (at + WM_PER_PAGE - 1) / WM_PER_PAGE);
	assert_int_equal(WM.ret, 1);
	/* at most one write may be in flight when it returns: at+1 events at most */
	if ((at + 1 + WM_PER_PAGE - 1) / WM_PER_PAGE < 4)
		fail_msg("returned with only %u events written (< 4 of 8 pages hold data)", at + 1);
	/* and it returned soon enough: before the ring was full */
	assert_true(at < 8 * WM_PER_PAGE);
	/* the page geometry the test relies on (n events: the tail moved
	 * ceil(n / 9) - 1 times) */
	{
		struct ringbuf_stats st;
		uint32_t total = atomic_load(&WM.written);
		assert_int_equal(ringbuf_stats_cpu(rb, 0, &st), 0);
		assert_int_equal(st.committed, total);
		assert_int_equal(st.pages_touched, (total + WM_PER_PAGE - 1) / WM_PER_PAGE - 1);
	}
}

/* (e) */
struct blocked {
	struct ringbuf *rb;
	unsigned cpu;
	int timeout_ms;
	int ret;
	_Atomic(uint64_t) returned_at;
};

static void *blocked_waiter(void *arg)
{
	struct blocked *b = arg;
	b->ret = ringbuf_wait(b->rb, b->cpu, 0, b->timeout_ms);
	atomic_store(&b->returned_at, mono_ns());
	return NULL;
}

static void join_within(pthread_t th, int seconds, struct ringbuf *rb, const char *what)
{
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += seconds;
	if (pthread_timedjoin_np(th, NULL, &dl) != 0) {
		ringbuf_wake_waiters(rb);
		pthread_join(th, NULL);
		fail_msg("%s: the waiter did not return within %d s", what, seconds);
	}
}

static void wake_waiters_makes_a_blocked_waiter_return_0(void **state)
{
	struct ringbuf *rb = mk(2, 4096, 4, RINGBUF_MODE_OVERWRITE, false);
	struct blocked b = {rb, 0, -1, 99, 0}, ball = {rb, RINGBUF_ALL_CPUS, -1, 99, 0};
	pthread_t th, th2;
	uint64_t t_wake;
	(void)state;
	assert_int_equal(pthread_create(&th, NULL, blocked_waiter, &b), 0);
	assert_int_equal(pthread_create(&th2, NULL, blocked_waiter, &ball), 0);
	wait_for_waiter(rb, 2);
	sleep_ns(20000000);
	assert_int_equal(atomic_load(&b.returned_at), 0); /* really blocked */
	assert_int_equal(atomic_load(&ball.returned_at), 0);
	t_wake = mono_ns();
	ringbuf_wake_waiters(rb);
	join_within(th, 5, rb, "ringbuf_wake_waiters (cpu 0)");
	join_within(th2, 5, rb, "ringbuf_wake_waiters (all cpus)");
	assert_int_equal(b.ret, 0);
	assert_int_equal(ball.ret, 0);
	assert_true(atomic_load(&b.returned_at) >= t_wake);
	assert_int_equal(atomic_load(&ringbuf__sh(rb)->waiters), 0);
	/* a wake before a wait does not make the next wait return */
	ringbuf_wake_waiters(rb);
	assert_int_equal(ringbuf_wait(rb, 0, 0, 30), 0);
}

/* (f) */
static void wait_on_all_cpus_returns_for_a_write_on_any_cpu(void **state)
{
	struct ringbuf *rb = mk(3, 4096, 4, RINGBUF_MODE_OVERWRITE, false);
	struct blocked ball = {rb, RINGBUF_ALL_CPUS, -1, 99, 0}, b0 = {rb, 0, 400, 99, 0};
	pthread_t th, th0;
	uint64_t t_write, t0;
	(void)state;
	t0 = mono_ns();
	assert_int_equal(pthread_create(&th, NULL, blocked_waiter, &ball), 0);
	assert_int_equal(pthread_create(&th0, NULL, blocked_waiter, &b0), 0);
	wait_for_waiter(rb, 2);
	sleep_ns(20000000);
	assert_int_equal(atomic_load(&ball.returned_at), 0);
	t_write = mono_ns();
	assert_int_equal(ev_write(rb, 2, 0, 0, HDR), 0); /* only CPU 2 */
	join_within(th, 5, rb, "RINGBUF_ALL_CPUS");
	assert_int_equal(ball.ret, 1);
	assert_true(atomic_load(&ball.returned_at) >= t_write);
	/* the CPU 0 waiter was not satisfied by CPU 2's event: it times out */
	join_within(th0, 5, rb, "cpu 0 waiter");
	assert_int_equal(b0.ret, 0);
	assert_true(atomic_load(&b0.returned_at) - t0 >= 400000000ull);
	print_message("  RINGBUF_ALL_CPUS waiter woke %.1f us after the write on CPU 2\n",
		      (atomic_load(&ball.returned_at) - t_write) / 1e3);
}

/* (g) */
static void wait_rejects_bad_arguments(void **state)
{
	struct ringbuf *rb = mk(2, 4096, 4, RINGBUF_MODE_OVERWRITE, false);
	(void)state;
	assert_int_equal(ringbuf_wait(NULL, 0, 0, 0), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_wait(NULL, RINGBUF_ALL_CPUS, 0, -1), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_wait(rb, 2, 0, 0), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_wait(rb, 1000, 0, -1), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_wait(rb, RINGBUF_ALL_CPUS - 1, 0, -1), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_wait(rb, 0, -1, 0), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_wait(rb, 0, 101, -1), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_wait(rb, RINGBUF_ALL_CPUS, -5, 0), RINGBUF_EINVAL);
	assert_int_equal(atomic_load(&ringbuf__sh(rb)->waiters), 0); /* refused before registering */
	ringbuf_wake_waiters(NULL);                     /* no-op */
	/* boundaries that are valid */
	assert_int_equal(ringbuf_wait(rb, 1, 100, 0), 0);
	assert_int_equal(ringbuf_wait(rb, 1, 0, 0), 0);
	/* the other reader calls */
	{
		struct ringbuf_record rec;
		struct ringbuf_iter *it = NULL;
		assert_int_equal(ringbuf_consume_merged(NULL, &rec), RINGBUF_EINVAL);
		assert_int_equal(ringbuf_consume_merged(rb, NULL), RINGBUF_EINVAL);
		assert_int_equal(ringbuf_iter_start(NULL, 0, &it), RINGBUF_EINVAL);
		assert_int_equal(ringbuf_iter_start(rb, 2, &it), RINGBUF_EINVAL);
		assert_int_equal(ringbuf_iter_start(rb, 0, NULL), RINGBUF_EINVAL);
		assert_null(it);
		assert_int_equal(ringbuf_iter_next(NULL, &rec), RINGBUF_EINVAL);
		it = it_start(rb, 0);
		assert_int_equal(ringbuf_iter_next(it, NULL), RINGBUF_EINVAL);
		it_finish();
		ringbuf_iter_reset(NULL);
		ringbuf_iter_finish(NULL);
		assert_int_equal(ringbuf_iter_dropped(NULL), 0);
	}
}

/* ==== 6. reader throughput (printed, never asserted) ====================== */

static uint32_t fill_until_full(struct ringbuf *rb, uint32_t len)
{
	static unsigned char buf[64];
	uint32_t n = 0;
	memset(buf, 0x5a, sizeof buf);
	while (ringbuf_write(rb, 0, buf, len) == 0)
		n++;
	return n;
}

static void reader_throughput_consume_and_read_page_64mib(void **state)
{
	struct ringbuf *rb = mk(1, 4096, 16384, RINGBUF_MODE_PRODUCER_CONSUMER, false); /* 64 MiB */
	struct ringbuf_record rec;
	unsigned char *page = malloc(4096);
	uint64_t t0, dt, bytes = 0, got = 0, pages = 0;
	uint32_t n;
	int r;
	(void)state;
	assert_non_null(page);

	n = fill_until_full(rb, 32);
	t0 = mono_ns();
	while (ringbuf_consume(rb, 0, &rec) == 1)
		got++;
	dt = mono_ns() - t0;
	assert_int_equal(got, n);
	print_message("  ringbuf_consume: %llu events of 32 B from a full 64 MiB buffer in %.1f ms: "
		      "%.1f M events/s (%.0f MB/s of payload)\n",
		      (unsigned long long)got, dt / 1e6, got / (dt / 1e9) / 1e6,
		      got * 32.0 / (dt / 1e9) / 1e6);

	n = fill_until_full(rb, 32);
	t0 = mono_ns();
	while ((r = ringbuf_read_page(rb, 0, page, 4096, 0)) > 0) {
		bytes += (uint64_t)r;
		pages++;
	}
	dt = mono_ns() - t0;
	assert_int_equal(r, 0);
	assert_true(pages >= 16383);
	print_message("  ringbuf_read_page: %llu pages (%llu data bytes, %u events) in %.1f ms: "
		      "%.0f MB/s\n",
		      (unsigned long long)pages, (unsigned long long)bytes, n, dt / 1e6,
		      bytes / (dt / 1e9) / 1e6);
	free(page);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(iterator_two_passes_same_events_then_consume_returns_all),
		T(iterator_starts_mid_reader_page_walks_many_small_pages_and_reset_goes_to_oldest_unread),
		T(iterator_returns_events_committed_after_it_reached_the_end),
		T(iterator_started_on_empty_buffer_returns_later_events_with_their_time_stamps),
		T(iterator_after_discarded_first_event_of_a_page_reports_the_next_events_time),
		T(merged_iterator_three_cpus_time_order_and_exact_per_cpu_sequences),
		T(iterator_on_recycled_ring_page_reports_loss_and_goes_forward),
		T(iterator_past_partly_consumed_reader_page_never_goes_back_after_overwrite),
		T(iterator_on_reader_page_reports_events_overwritten_ahead_of_it),
		T(threaded_iterator_vs_overwriting_writer_with_signal_nesting),
		T(threaded_iterator_and_consumer_vs_overwriting_writer_with_signal_nesting),
		T(threaded_iterator_reports_every_event_it_skips_as_lost_256_byte_pages),
		T(threaded_iterator_reports_every_event_it_skips_as_lost_128_byte_pages),
		T(consume_merged_three_cpus_exact_time_order),
		T(consume_merged_with_equal_time_stamps_keeps_per_cpu_order),
		T(consume_merged_does_not_return_a_newer_event_while_an_older_one_is_in_flight),
		T(consume_merged_time_never_goes_backwards_with_concurrent_writers),
		T(wait_is_woken_by_a_write_from_a_signal_handler),
		T(wait_never_loses_a_wake_up_under_random_write_timing),
		T(wait_times_out_on_an_empty_buffer),
		T(wait_with_watermark_returns_only_when_half_the_pages_hold_data),
		T(wait_with_watermark_wakes_the_reader_each_time_it_is_reached),
		T(wake_waiters_makes_a_blocked_waiter_return_0),
		T(wait_on_all_cpus_returns_for_a_write_on_any_cpu),
		T(wait_rejects_bad_arguments),
		T(reader_throughput_consume_and_read_page_64mib),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
