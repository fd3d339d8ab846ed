/* test_merged_order.c - the merged readers never go back in time
 * SPDX-License-Identifier: MIT
 *
 * ringbuf_consume_merged and the RINGBUF_ALL_CPUS iterator hand out the
 * oldest head of all CPUs; a CPU with no visible head may still commit an
 * older event (>>design, MERGED READERS). Every event carries (cpu, seq), and
 * the deterministic tests drive a clock the test controls, so the expected
 * stream is known exactly.
 *
 *  1. The interleaving of issue 11 item 1, cut in with the reader-side test
 *     point RINGBUF__TP_MERGED_PEEKED: the reader peeks CPU X empty; X's
 *     writer commits E (older than the pick), writes F (newer: inflight_ts
 *     above the pick) and enters again. The old guard, which read X's
 *     current inflight_ts only, handed the pick out and E after it.
 *     Consume and iterator.
 *  2. 65, 66, 256 and 300 CPU buffers: a writer in an event on the highest
 *     buffer (and on one above 256 with a visible head above it) is not
 *     overtaken (the old guard stopped at CPU 64). Consume and iterator.
 *     The same for ringbuf_trace_consume_foreach (ringbuf_trace.h) on a live
 *     buffer, which merged by peek-and-pick with no guard at all.
 *  3. Real threads, fixed event counts: 2 writers and ringbuf_consume_merged
 *     (producer/consumer, small pages), 2 writers in overwrite mode and an
 *     iterating thread (RINGBUF_ALL_CPUS passes): not one step back.
 *  4. (section 5 below) The outermost commit's last window
 *     (ringbuf__commit_fast after committing = 0): an event nested after
 *     the page commit, and two of them under a handler that enters as the
 *     outermost writer. Consume and iterator.
 */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf_trace.h" /* includes ringbuf.h */

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#define WATCHDOG_MSG "\n*** test_merged_order watchdog: a test hung; aborting\n"
#define READERS_START_NS 1
#include "readerutil.h" /* g_now, test_clock, g_rb, g_it, watchdog, setup, teardown, mk */

/* ---- events and fixtures ------------------------------------------------ */

struct ev {
	uint32_t cpu;
	uint32_t seq;
};

/* Reserve an event of cpu at time ts and leave it in flight. */
static struct ev *begin(struct ringbuf *rb, unsigned cpu, uint32_t seq, uint64_t ts)
{
	struct ev *p;
	atomic_store(&g_now, ts);
	p = ringbuf_reserve(rb, cpu, sizeof *p);
	assert_non_null(p);
	p->cpu = cpu;
	p->seq = seq;
	return p;
}

static void put(struct ringbuf *rb, unsigned cpu, uint32_t seq, uint64_t ts)
{
	ringbuf_commit(rb, cpu, begin(rb, cpu, seq, ts));
}

/* What a merged reader handed out. */
struct got {
	uint64_t ts[64];
	uint32_t cpu[64], seq[64];
	unsigned n;
};

static void got_add(struct got *g, const struct ringbuf_record *rec)
{
	struct ev e;
	assert_true(g->n < 64);
	assert_true(rec->len >= sizeof e); /* 8-byte payloads read back as 12 */
	memcpy(&e, rec->data, sizeof e);
	assert_int_equal(e.cpu, rec->cpu);
	g->ts[g->n] = rec->ts;
	g->cpu[g->n] = rec->cpu;
	g->seq[g->n] = e.seq;
	g->n++;
}

/* Hand out what the reader gives now; its last return value. */
static int drain_consume(struct ringbuf *rb, struct got *g)
{
	struct ringbuf_record rec;
	int r;
	while ((r = ringbuf_consume_merged(rb, &rec)) == 1)
		got_add(g, &rec);
	return r;
}

static int drain_iter(struct ringbuf_iter *it, struct got *g)
{
	struct ringbuf_record rec;
	int r;
	while ((r = ringbuf_iter_next(it, &rec)) == 1)
		got_add(g, &rec);
	return r;
}

/* g must be exactly (ts, cpu) of want, in order; a step back is named. */
static void expect_stream(const struct got *g, const uint64_t *ts, const unsigned *cpu, unsigned n,
			  const char *what)
{
	unsigned i;
	for (i = 1; i < g->n; i++)
		if (g->ts[i] < g->ts[i - 1])
			fail_msg("%s went back in time: event %u is cpu %u ts %llu, after cpu %u ts %llu", what, i,
				 g->cpu[i], (unsigned long long)g->ts[i], g->cpu[i - 1],
				 (unsigned long long)g->ts[i - 1]);
	assert_int_equal(g->n, n);
	for (i = 0; i < n; i++) {
		assert_int_equal(g->ts[i], ts[i]);
		assert_int_equal(g->cpu[i], cpu[i]);
	}
}

/* ==== 1. the interleaving of item 1 ===================================== */

/* At the reader's RINGBUF__TP_MERGED_PEEKED (every CPU peeked, the pick made),
 * once: CPU X's writer commits E (ts 100, older than the pick at 200), writes
 * F (300: its exit stores inflight_ts 300, above the pick) and enters an
 * event G (400), which stays in flight. */
struct cut {
	unsigned x;
	int fired;
	struct ev *e, *g;
};

static void cut_after_peek(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	struct cut *k = ctx;
	(void)cpu;
	if (point != RINGBUF__TP_MERGED_PEEKED || k->fired++)
		return;
	ringbuf_commit(rb, k->x, k->e);
	put(rb, k->x, 1, 300);
	k->g = begin(rb, k->x, 2, 400);
}

static void merged_consume_is_not_fooled_by_a_writer_that_commits_older_and_reenters_newer(void **state)
{
	struct ringbuf *rb = mk(2, 256, 8, RINGBUF_MODE_PRODUCER_CONSUMER, true);
	struct cut k = {1, 0, NULL, NULL};
	struct got g = {{0}, {0}, {0}, 0};
	static const uint64_t ts[] = {100, 200, 300, 400};
	static const unsigned cpu[] = {1, 0, 1, 1};
	(void)state;
	k.e = begin(rb, 1, 0, 100); /* X's writer stamped E at 100, not committed */
	put(rb, 0, 0, 200);         /* CPU 0 commits at 200 */
	ringbuf__set_testpoint_hook(cut_after_peek, &k);
	assert_int_equal(drain_consume(rb, &g), 0); /* G is in flight */
	ringbuf__set_testpoint_hook(NULL, NULL);
	assert_true(k.fired >= 1); /* cut in once (at the first pick) */
	assert_non_null(k.g);
	ringbuf_commit(rb, 1, k.g);
	assert_int_equal(drain_consume(rb, &g), 0);
	expect_stream(&g, ts, cpu, 4, "ringbuf_consume_merged");
}

static void merged_iterator_is_not_fooled_by_a_writer_that_commits_older_and_reenters_newer(void **state)
{
	struct ringbuf *rb = mk(2, 256, 8, RINGBUF_MODE_OVERWRITE, true);
	struct cut k = {1, 0, NULL, NULL};
	struct got g = {{0}, {0}, {0}, 0};
	static const uint64_t ts[] = {100, 200, 300, 400};
	static const unsigned cpu[] = {1, 0, 1, 1};
	int r;
	(void)state;
	k.e = begin(rb, 1, 0, 100);
	put(rb, 0, 0, 200);
	assert_int_equal(ringbuf_iter_start(rb, RINGBUF_ALL_CPUS, &g_it), 0);
	ringbuf__set_testpoint_hook(cut_after_peek, &k);
	r = drain_iter(g_it, &g);
	ringbuf__set_testpoint_hook(NULL, NULL);
	assert_true(r == 0 || r == RINGBUF_EAGAIN);
	assert_non_null(k.g);
	ringbuf_commit(rb, 1, k.g);
	assert_int_equal(drain_iter(g_it, &g), 0);
	expect_stream(&g, ts, cpu, 4, "the RINGBUF_ALL_CPUS iterator");
	/* non-consuming: a second pass gives the same stream */
	ringbuf_iter_reset(g_it);
	memset(&g, 0, sizeof g);
	assert_int_equal(drain_iter(g_it, &g), 0);
	expect_stream(&g, ts, cpu, 4, "the RINGBUF_ALL_CPUS iterator (second pass)");
}

/* ==== 2. any CPU count ==================================================== */

/* A writer in an event on CPU hi (stamped 100), a committed event on CPU 0
 * (200) and, when vis < ncpu, one on CPU vis (150): nothing may come out
 * before the writer on hi commits. */
static void inflight_on_high_cpu(unsigned ncpu, unsigned hi, unsigned vis, bool iter)
{
	struct ringbuf *rb = mk(ncpu, 128, 4, RINGBUF_MODE_PRODUCER_CONSUMER, true);
	struct got g = {{0}, {0}, {0}, 0};
	struct ringbuf_record rec;
	uint64_t ts[3] = {100, 200, 0};
	unsigned cpu[3] = {hi, 0, 0}, n = 2;
	struct ev *e;
	int r;
	e = begin(rb, hi, 0, 100);
	put(rb, 0, 0, 200);
	if (vis < ncpu) {
		put(rb, vis, 0, 150);
		ts[1] = 150, cpu[1] = vis, ts[2] = 200, cpu[2] = 0, n = 3;
	}
	if (iter)
		assert_int_equal(ringbuf_iter_start(rb, RINGBUF_ALL_CPUS, &g_it), 0);
	r = iter ? ringbuf_iter_next(g_it, &rec) : ringbuf_consume_merged(rb, &rec);
	if (r == 1)
		fail_msg("%u CPUs: %s handed out cpu %u ts %llu while the writer on CPU %u is in an "
			 "event stamped 100",
			 ncpu, iter ? "the RINGBUF_ALL_CPUS iterator" : "ringbuf_consume_merged", rec.cpu,
			 (unsigned long long)rec.ts, hi);
	assert_int_equal(r, RINGBUF_EAGAIN);
	ringbuf_commit(rb, hi, e);
	assert_int_equal(iter ? drain_iter(g_it, &g) : drain_consume(rb, &g), 0);
	expect_stream(&g, ts, cpu, n, iter ? "the iterator" : "ringbuf_consume_merged");
	ringbuf_iter_finish(g_it);
	g_it = NULL;
}

static void merged_readers_wait_for_a_writer_on_buffer_65_66_256_300(void **state)
{
	static const unsigned ncpus[] = {65, 66, 256, 300};
	unsigned i, iter;
	(void)state;
	for (iter = 0; iter < 2; iter++) {
		for (i = 0; i < 4; i++)
			inflight_on_high_cpu(ncpus[i], ncpus[i] - 1, ~0u, iter);
		/* above 256 (the seen-head bitmap's end): a visible head on 299 */
		inflight_on_high_cpu(300, 280, 299, iter);
		inflight_on_high_cpu(300, 299, 257, iter);
		inflight_on_high_cpu(66, 64, 65, iter);
	}
}

static int collect(const struct ringbuf_record *rec, void *ctx)
{
	got_add(ctx, rec);
	return 0;
}

/* ringbuf_trace_consume_foreach(RINGBUF_ALL_CPUS) with 3 and with 256 CPUs:
 * the event in flight is on the top CPU, the visible ones on 1 and 0 */
static void trace_consume_foreach_all_cpus_waits_for_an_older_event_in_flight(void **state)
{
	static const unsigned ncpus[] = {3, 256};
	static const uint64_t ts[] = {100, 150, 200};
	(void)state;
	for (unsigned k = 0; k < 2; k++) {
		unsigned top = ncpus[k] - 1, cpu[3] = {top, 1, 0};
		struct ringbuf *rb = mk(ncpus[k], 256, 8, RINGBUF_MODE_PRODUCER_CONSUMER, true);
		struct got g = {{0}, {0}, {0}, 0};
		struct ev *e;
		e = begin(rb, top, 0, 100); /* stamped 100, in flight */
		put(rb, 0, 0, 200);
		put(rb, 1, 0, 150);
		assert_int_equal(ringbuf_trace_consume_foreach(rb, RINGBUF_ALL_CPUS, 0, collect, &g), 0);
		if (g.n)
			fail_msg("%u CPUs: ringbuf_trace_consume_foreach handed out cpu %u ts %llu while "
				 "the writer on CPU %u is in an event stamped 100",
				 ncpus[k], g.cpu[0], (unsigned long long)g.ts[0], top);
		ringbuf_commit(rb, top, e);
		assert_int_equal(ringbuf_trace_consume_foreach(rb, RINGBUF_ALL_CPUS, 0, collect, &g), 0);
		expect_stream(&g, ts, cpu, 3, "ringbuf_trace_consume_foreach(RINGBUF_ALL_CPUS)");
	}
}

/* A file-backed block of 256 CPUs opened by a second handle, as ringbuf-record
 * opens a traced process's buffer (RINGBUF_OPEN_RDWR: the same memory): its
 * merged readers wait for the creator's writer in flight on CPU 255, and a
 * snapshot of the block copies every CPU's events, CPU 255's included. */
static void shared_file_block_of_256_cpus_merged_readers_and_snapshot(void **state)
{
	char path[] = "/tmp/ringbuf-test-merged-256-XXXXXX";
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	static const uint64_t ts[] = {100, 150, 200};
	static const unsigned cpu[] = {255, 130, 0};
	struct ringbuf *view = NULL, *w;
	struct ringbuf_trace_snapshot *snap = NULL;
	struct got g = {{0}, {0}, {0}, 0};
	struct ringbuf_record rec;
	struct ev *e;
	int fd;
	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	unlink(path);
	cfg.ncpu = 256;
	cfg.page_size = 256;
	cfg.size_per_cpu = 4 * 256;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
	cfg.clock = test_clock;
	assert_int_equal(ringbuf_create_file(path, &cfg, &w), 0);
	ringbuf_destroy(g_rb);
	g_rb = w;
	atomic_store(&g_now, READERS_START_NS);
	assert_int_equal(ringbuf_open_file(path, RINGBUF_OPEN_RDWR, &view), 0);
	e = begin(w, 255, 0, 100);
	put(w, 0, 0, 200);
	put(w, 130, 0, 150);
	assert_int_equal(ringbuf_consume_merged(view, &rec), RINGBUF_EAGAIN);
	assert_int_equal(ringbuf_iter_start(view, RINGBUF_ALL_CPUS, &g_it), 0);
	assert_int_equal(ringbuf_iter_next(g_it, &rec), RINGBUF_EAGAIN);
	ringbuf_iter_finish(g_it);
	g_it = NULL;
	ringbuf_commit(w, 255, e);
	/* the snapshot first (it copies without consuming) */
	assert_int_equal(ringbuf_trace_snapshot_create(view, &snap), 0);
	assert_int_equal(ringbuf_trace_snapshot(snap), 3);
	assert_int_equal(drain_consume(ringbuf_trace_snapshot_buffer(snap), &g), 0);
	expect_stream(&g, ts, cpu, 3, "the snapshot of a 256-CPU block");
	ringbuf_trace_snapshot_destroy(snap);
	memset(&g, 0, sizeof g);
	assert_int_equal(drain_consume(view, &g), 0);
	expect_stream(&g, ts, cpu, 3, "ringbuf_consume_merged of a 256-CPU file block");
	ringbuf_destroy(view);
	unlink(path);
}

/* ==== 3. real threads, fixed counts ====================================== */

struct wr {
	struct ringbuf *rb;
	unsigned cpu;
	uint32_t n, written;
	_Atomic(int) *go;
	_Atomic(int) done;
};

static void *writer(void *arg)
{
	struct wr *w = arg;
	uint32_t i;
	while (!atomic_load(w->go))
		;
	for (i = 0; i < w->n; i++) {
		struct ev *p = ringbuf_reserve(w->rb, w->cpu, sizeof *p + (i % 5) * 4);
		if (!p) {
			sched_yield(); /* full (producer/consumer): let the reader catch up */
			continue;
		}
		p->cpu = w->cpu;
		p->seq = w->written++;
		ringbuf_commit(w->rb, w->cpu, p);
	}
	atomic_store(&w->done, 1);
	return NULL;
}

static void start_writers(struct wr *w, pthread_t *th, unsigned n, struct ringbuf *rb, uint32_t per,
			  _Atomic(int) *go)
{
	unsigned i;
	for (i = 0; i < n; i++) {
		w[i].rb = rb;
		w[i].cpu = i;
		w[i].n = per;
		w[i].written = 0;
		w[i].go = go;
		atomic_init(&w[i].done, 0);
		assert_int_equal(pthread_create(&th[i], NULL, writer, &w[i]), 0);
	}
	atomic_store(go, 1);
}

static void merged_consume_with_two_writer_threads_never_steps_back(void **state)
{
	struct ringbuf *rb = mk(2, 256, 16, RINGBUF_MODE_PRODUCER_CONSUMER, false);
	struct wr w[2];
	pthread_t th[2];
	_Atomic(int) go = 0;
	int64_t prev[2] = {-1, -1};
	uint64_t last = 0, got = 0, back = 0, eagain = 0;
	struct ringbuf_record rec;
	char why[200] = "";
	int done = 0;
	(void)state;
	start_writers(w, th, 2, rb, 200000, &go);
	for (;;) {
		struct ev e;
		int r = ringbuf_consume_merged(rb, &rec);
		if (r == 0 || r == RINGBUF_EAGAIN) {
			eagain += r != 0;
			if (done)
				break;
			done = atomic_load(&w[0].done) && atomic_load(&w[1].done);
			continue;
		}
		if (r != 1 || rec.cpu >= 2 || rec.len < sizeof e) {
			snprintf(why, sizeof why, "consume_merged returned %d (cpu %u)", r, rec.cpu);
			break;
		}
		memcpy(&e, rec.data, sizeof e);
		if (e.cpu != rec.cpu || (int64_t)e.seq != prev[rec.cpu] + 1) {
			snprintf(why, sizeof why, "cpu %u: seq %u after %lld", rec.cpu, e.seq,
				 (long long)prev[rec.cpu]);
			break;
		}
		prev[rec.cpu] = e.seq;
		if (rec.ts < last && !back++)
			snprintf(why, sizeof why, "event %llu: cpu %u ts %llu after ts %llu",
				 (unsigned long long)got, rec.cpu, (unsigned long long)rec.ts,
				 (unsigned long long)last);
		if (rec.ts > last)
			last = rec.ts;
		got++;
	}
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	print_message("  2 writers, merged consume: %llu events, %llu steps back, %llu EAGAIN\n",
		      (unsigned long long)got, (unsigned long long)back, (unsigned long long)eagain);
	if (why[0])
		fail_msg("%s", why);
	assert_int_equal(prev[0] + 1, (int64_t)w[0].written);
	assert_int_equal(prev[1] + 1, (int64_t)w[1].written);
}

static void merged_iterator_in_overwrite_mode_with_two_writer_threads_never_steps_back(void **state)
{
	struct ringbuf *rb = mk(2, 256, 16, RINGBUF_MODE_OVERWRITE, false);
	struct wr w[2];
	pthread_t th[2];
	_Atomic(int) go = 0;
	uint64_t got = 0, back = 0, passes = 0, eagain = 0, lost = 0;
	char why[200] = "";
	int last_pass = 0;
	(void)state;
	start_writers(w, th, 2, rb, 200000, &go);
	while (!last_pass) {
		struct ringbuf_iter *it;
		struct ringbuf_record rec;
		uint64_t last = 0;
		int64_t prev[2] = {-1, -1};
		unsigned k = 0;
		int r;
		/* the last pass starts after both writers finished */
		last_pass = atomic_load(&w[0].done) && atomic_load(&w[1].done);
		assert_int_equal(ringbuf_iter_start(rb, RINGBUF_ALL_CPUS, &it), 0);
		g_it = it;
		for (;;) {
			struct ev e;
			r = ringbuf_iter_next(it, &rec);
			if (r == RINGBUF_EAGAIN) {
				eagain++;
				if (++k > 1000 && !last_pass)
					break; /* a new pass rather than wait long */
				continue;
			}
			if (r != 1)
				break;
			memcpy(&e, rec.data, sizeof e);
			if (rec.cpu >= 2 || e.cpu != rec.cpu || (int64_t)e.seq <= prev[rec.cpu]) {
				snprintf(why, sizeof why, "cpu %u: seq %u after %lld", rec.cpu, e.seq,
					 (long long)prev[rec.cpu]);
				break;
			}
			prev[rec.cpu] = e.seq;
			lost += rec.lost;
			if (rec.ts < last && !back++)
				snprintf(why, sizeof why, "pass %llu: cpu %u ts %llu after ts %llu (%llu ns back)",
					 (unsigned long long)passes, rec.cpu, (unsigned long long)rec.ts,
					 (unsigned long long)last, (unsigned long long)(last - rec.ts));
			if (rec.ts > last)
				last = rec.ts;
			got++;
		}
		g_it = NULL;
		ringbuf_iter_finish(it);
		if (r < 0 && r != RINGBUF_EAGAIN && !why[0])
			snprintf(why, sizeof why, "iter_next: %s", ringbuf_strerror(r));
		passes++;
		if (why[0])
			break;
	}
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	print_message("  2 writers (overwrite), merged iterator: %llu passes, %llu events, %llu steps back, "
		      "%llu lost, %llu EAGAIN\n",
		      (unsigned long long)passes, (unsigned long long)got, (unsigned long long)back,
		      (unsigned long long)lost, (unsigned long long)eagain);
	if (why[0])
		fail_msg("%s", why);
}

/* ==== 4. a reset of the picked CPU between the pick and the consume ===== */

/* At RINGBUF__TP_MERGED_PEEKED the pick is CPU 0's head (ts 100); another
 * thread resets CPU 0 (throwing that head away) and writes a new event there
 * at 300, while CPU 1's head is 200. Consuming "CPU 0's head" without checking
 * which head it is handed out 300, then 200: a step back. */
static void reset_then_write(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	int *fired = ctx;
	(void)cpu;
	if (point != RINGBUF__TP_MERGED_PEEKED || (*fired)++)
		return;
	assert_int_equal(ringbuf_reset_cpu(rb, 0), 0);
	put(rb, 0, 3, 300);
}

static void reset_of_the_pick_before_consume(void **state)
{
	struct ringbuf *rb = mk(2, 256, 4, RINGBUF_MODE_PRODUCER_CONSUMER, true);
	static const uint64_t ts[] = {200, 300};
	static const unsigned cpu[] = {1, 0};
	struct got g = {0};
	int fired = 0, r;
	(void)state;
	put(rb, 0, 1, 100);
	put(rb, 1, 2, 200);
	ringbuf__set_testpoint_hook(reset_then_write, &fired);
	r = drain_consume(rb, &g);
	if (r == RINGBUF_EAGAIN) /* the pick was reset away: the next call sees it */
		r = drain_consume(rb, &g);
	ringbuf__set_testpoint_hook(NULL, NULL);
	assert_int_equal(r, 0);
	assert_int_equal(fired > 0, 1);
	expect_stream(&g, ts, cpu, 2, "ringbuf_consume_merged across a reset");
}

/* A private view of a file another writer is in (ringbuf_open_file without
 * RDWR): the view's CPU structs are its own copy from the open on, so an event
 * in flight then never ends there. The merged reader must still hand out what
 * the view holds (it returned RINGBUF_EAGAIN for good: ringbuf-read printed
 * nothing when it opened a live buffer while a writer was in an event). */
static void merged_consume_of_a_private_view_does_not_wait_for_a_frozen_writer(void **state)
{
	char path[] = "/tmp/ringbuf-test-merged-view-XXXXXX";
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *view = NULL;
	struct ringbuf_record rec;
	uint32_t v = 7;
	void *held;
	int fd, r, tries;
	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	unlink(path);
	cfg.ncpu = 2;
	cfg.size_per_cpu = 4 * 4096;
	assert_int_equal(ringbuf_create_file(path, &cfg, &g_rb), 0);
	/* cpu 1: an event reserved first (older) and not committed */
	held = ringbuf_reserve(g_rb, 1, 8);
	assert_non_null(held);
	/* cpu 0: a newer committed one */
	assert_int_equal(ringbuf_write(g_rb, 0, &v, sizeof v), 0);
	assert_int_equal(ringbuf_open_file(path, 0, &view), 0);
	/* the view sees cpu 1 in flight, older than cpu 0's head, for good */
	for (tries = 0; tries < 1000; tries++)
		if ((r = ringbuf_consume_merged(view, &rec)) != RINGBUF_EAGAIN)
			break;
	assert_int_equal(r, 1);
	assert_int_equal(rec.cpu, 0);
	assert_int_equal(rec.len >= sizeof v, 1);
	assert_memory_equal(rec.data, &v, sizeof v);
	assert_int_equal(ringbuf_consume_merged(view, &rec), 0);
	ringbuf_destroy(view);
	/* the writer's own handle still waits for its own event in flight */
	ringbuf_commit(g_rb, 1, held);
	unlink(path);
}

/* ==== 5. the outermost commit's last window ============================ */

/* ringbuf__commit_fast on CPU 0: V (ts 100) stored its page commit, a signal
 * handler nested in V reserved E there (ts 200, depth 2: left for V to
 * commit), CPU 1 committed B (300), and V stored committing = 0
 * (RINGBUF__TP_COMMIT_FAST_ZERO) with E reserved, complete and not committed;
 * V walks again after its check of commits. A merged reader in that window
 * that took committing == 0 for "everything on CPU 0 is committed" handed out
 * B, and E after it: a step back. [R2] asks the pages too (as quiesce's
 * [Q-PEND] does): CPU 0 is in flight there, and its inflight_ts (the last
 * outermost exit's: 0) is older than B, so RINGBUF_EAGAIN. */
struct win {
	int state, r;
	bool entry; /* the second case below */
	struct got g;
	struct ringbuf_iter *it; /* NULL: ringbuf_consume_merged */
};

static void commit_window(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	struct win *w = ctx;
	struct ev *h;
	if (cpu != 0)
		return;
	if (point == RINGBUF__TP_COMMIT_FAST_CHECKED && w->state == 0) {
		w->state = 1;
		put(rb, 0, 1, 200); /* E: the handler, nested in V */
		put(rb, 1, 2, 300); /* B, on CPU 1 */
		if (w->entry)
			put(rb, 0, 3, 400); /* E2: another handler, nested in V */
	} else if (point == RINGBUF__TP_COMMIT_FAST_ZERO && w->state == 1) {
		w->state = 2;
		if (!w->entry) {
			w->r = w->it ? drain_iter(w->it, &w->g) : drain_consume(rb, &w->g);
			return;
		}
		h = begin(rb, 0, 4, 500); /* H: outermost (committing is 0), in flight */
		w->r = w->it ? drain_iter(w->it, &w->g) : drain_consume(rb, &w->g);
		ringbuf_commit(rb, 0, h); /* commits E, E2 and H */
	}
}

/* entry false: the case above (one event nested in V); true: the case below
 * (two, and a handler entering as the outermost writer in the window). */
static void merged_readers_in_the_commit_window(bool iter, bool entry)
{
	struct ringbuf *rb = mk(2, 256, 8, iter ? RINGBUF_MODE_OVERWRITE : RINGBUF_MODE_PRODUCER_CONSUMER, true);
	static const uint64_t ts[] = {100, 200, 300, 400, 500};
	static const unsigned cpu[] = {0, 0, 1, 0, 0};
	struct win w;
	int r, in_window;
	memset(&w, 0, sizeof w);
	w.entry = entry;
	if (iter)
		assert_int_equal(ringbuf_iter_start(rb, RINGBUF_ALL_CPUS, &g_it), 0);
	w.it = iter ? g_it : NULL;
	ringbuf__set_testpoint_hook(commit_window, &w);
	put(rb, 0, 0, 100); /* V */
	ringbuf__set_testpoint_hook(NULL, NULL);
	assert_int_equal(w.state, 2);
	in_window = w.r;
	r = iter ? drain_iter(g_it, &w.g) : drain_consume(rb, &w.g);
	assert_int_equal(r, 0);
	expect_stream(&w.g, ts, cpu, entry ? 5 : 3, iter ? "the RINGBUF_ALL_CPUS iterator" : "ringbuf_consume_merged");
	assert_int_equal(in_window, RINGBUF_EAGAIN); /* E was older than B and on its way */
}

/* The same window, with two events nested in V (E at 200, E2 at 400, B at
 * 300 on CPU 1 between them) and a handler H entering CPU 0 as the outermost
 * writer after V's committing = 0 (H commits E and E2 with its own event).
 * [M1] stored inflight_ts at the outermost writer's entry: H raised it to
 * write_stamp (E2's 400) over E (200), still uncommitted, and the reader in
 * H's event handed out B before E (helper review, 2026-11-30). [M1] is now
 * stored at the outermost exit, once everything reserved is committed. */
static void merged_consume_waits_for_an_event_under_an_entry_in_the_commit_window(void **state)
{
	(void)state;
	merged_readers_in_the_commit_window(false, true);
}

static void merged_iterator_waits_for_an_event_under_an_entry_in_the_commit_window(void **state)
{
	(void)state;
	merged_readers_in_the_commit_window(true, true);
}

static void merged_consume_waits_for_an_event_nested_in_the_commit_window(void **state)
{
	(void)state;
	merged_readers_in_the_commit_window(false, false);
}

static void merged_iterator_waits_for_an_event_nested_in_the_commit_window(void **state)
{
	(void)state;
	merged_readers_in_the_commit_window(true, false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(merged_consume_is_not_fooled_by_a_writer_that_commits_older_and_reenters_newer),
		T(merged_iterator_is_not_fooled_by_a_writer_that_commits_older_and_reenters_newer),
		T(merged_readers_wait_for_a_writer_on_buffer_65_66_256_300),
		T(trace_consume_foreach_all_cpus_waits_for_an_older_event_in_flight),
		T(shared_file_block_of_256_cpus_merged_readers_and_snapshot),
		T(merged_consume_with_two_writer_threads_never_steps_back),
		T(merged_iterator_in_overwrite_mode_with_two_writer_threads_never_steps_back),
		T(reset_of_the_pick_before_consume),
		T(merged_consume_of_a_private_view_does_not_wait_for_a_frozen_writer),
		T(merged_consume_waits_for_an_event_nested_in_the_commit_window),
		T(merged_iterator_waits_for_an_event_nested_in_the_commit_window),
		T(merged_consume_waits_for_an_event_under_an_entry_in_the_commit_window),
		T(merged_iterator_waits_for_an_event_under_an_entry_in_the_commit_window),
#undef T
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
