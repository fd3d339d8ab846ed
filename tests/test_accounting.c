/* Loss accounting across threads: every event lost is reported once, as a
 * count of events, where it happened, and nothing that was not lost is
 * reported. Each test cuts in at one labelled step with the test-point hook
 * (the hook stands in for another thread or for a signal handler) and was
 * checked to fail on the code before its fix:
 *
 *   read_page_full_page_event_after_losses   ringbuf_read_page set
 *       RB_MISSED_EVENTS without storing the count when one event filled the
 *       page, and dropped the count
 *   iter_dropped_counts_events               ringbuf_iter_dropped() counted
 *       skips, not events (and rec.lost said 1)
 *   iter_no_loss_when_consumer_reuses_pages  producer/consumer mode: pages
 *       consumed and reused under a parked iterator were reported as lost
 *   drop_reported_before_the_nested_page     a drop decided before a nested
 *       writer moved the tail, counted after, was reported one page late
 *   no_spurious_commit_overrun_after_two_swaps   move_tail loaded T.next, the
 *       reader swapped twice (taking T, the commit page), move_tail saw the
 *       commit on the reader page and dropped the event (commit_overrun)
 */
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

static uint64_t now;
static uint64_t test_clock(void *ctx)
{
	(void)ctx;
	return now += 10;
}

static struct ringbuf *rb;
static uint32_t next_id;

static struct ringbuf *make(size_t page, size_t pages, int mode)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *r;
	cfg.page_size = page;
	cfg.size_per_cpu = page * pages;
	cfg.mode = mode;
	cfg.clock = test_clock;
	now = 1000;
	next_id = 0;
	assert_int_equal(ringbuf_create(&cfg, &r), 0);
	return r;
}

/* 20-byte payload: 24-byte events, 2 per 64-byte page (48 data bytes) */
static int write_id(void)
{
	uint32_t v[5] = {next_id, 0, 0, 0, 0};
	int r = ringbuf_write(rb, 0, v, sizeof v);
	next_id++;
	return r;
}

static uint32_t id_of(const struct ringbuf_record *rec)
{
	uint32_t id;
	memcpy(&id, rec->data, 4);
	return id;
}

static struct ringbuf_stats stats(void)
{
	struct ringbuf_stats st;
	assert_int_equal(ringbuf_stats_cpu(rb, 0, &st), 0);
	return st;
}

/* ---- item 14: no spurious commit_overrun -------------------------------- */

static int armed, fired;

/* At M1 of the crossing writer (T.next = N, the head, loaded): the reader,
 * another thread, drains the CPU: it swaps N out (T.next now links the old
 * reader page), then swaps T itself, the commit page, in. */
static void drain_at_move_tail_next(struct ringbuf *r, unsigned cpu, int point, void *ctx)
{
	struct ringbuf_record rec;
	(void)r;
	(void)cpu;
	(void)ctx;
	if (point != RINGBUF__TP_MOVE_TAIL_NEXT || !armed)
		return;
	armed = 0;
	fired = 1;
	while (ringbuf_consume(rb, 0, &rec) == 1)
		;
}

static void no_spurious_commit_overrun_after_two_swaps(void **state)
{
	struct ringbuf_record rec;
	struct ringbuf_stats st;
	(void)state;
	rb = make(64, 2, RINGBUF_MODE_OVERWRITE);
	for (int i = 0; i < 4; i++) /* pages A, B full; tail and commit on B; head A */
		assert_int_equal(write_id(), 0);
	assert_int_equal(stats().pages_read, 0);
	ringbuf__set_testpoint_hook(drain_at_move_tail_next, NULL);
	armed = 1;
	fired = 0;
	int w = write_id(); /* crosses B -> A (the head) */
	ringbuf__set_testpoint_hook(NULL, NULL);
	assert_int_equal(fired, 1);
	st = stats();
	assert_int_equal(st.pages_read, 2); /* the hook swapped twice */
	if (st.commit_overrun != 0 || w != 0)
		fail_msg("the event was dropped as commit_overrun (%llu) although the reader had emptied the ring",
			 (unsigned long long)st.commit_overrun);
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
	assert_int_equal(id_of(&rec), 4);
	assert_int_equal(rec.lost, 0);
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 0);
	ringbuf_destroy(rb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(no_spurious_commit_overrun_after_two_swaps),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
