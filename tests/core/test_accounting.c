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
 *   iter_counts_a_push_its_owner_has_not_counted_yet   a head push claimed
 *       (H1 CAS) but not yet counted in overrun, a nested writer helping it
 *       and reusing the iterator's page: the iterator skipped the event it
 *       had not read with rec.lost 0 (the count came late, on a later loss)
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

/* ---- item 6: read_page stores every lost count --------------------------- */

static int write_len(size_t len)
{
	unsigned char v[256] = {0};
	memcpy(v, &next_id, 4);
	next_id++;
	return ringbuf_write(rb, 0, v, len);
}

/* One ringbuf_read_page(): returns its data bytes (0: nothing), adds the
 * stored lost count to *stored, counts pages flagged without a count. */
static int read_page_counting(uint64_t *stored, int *unstored)
{
	unsigned char page[64];
	unsigned long cm;
	int r = ringbuf_read_page(rb, 0, page, sizeof page, 0);
	assert_true(r >= 0);
	if (r == 0)
		return 0;
	memcpy(&cm, page + 8, sizeof cm);
	if (cm & RINGBUF__MISSED_EVENTS) {
		if (cm & RINGBUF__MISSED_STORED) {
			unsigned long n;
			memcpy(&n, page + 8 + sizeof(long) + (cm & RINGBUF__COMMIT_MASK), sizeof n);
			*stored += n;
		} else {
			(*unstored)++;
		}
	}
	return r;
}

static void read_page_full_page_event_after_losses(void **state)
{
	uint64_t stored = 0;
	int unstored = 0, pages = 0;
	size_t max;
	(void)state;
	rb = make(64, 2, RINGBUF_MODE_OVERWRITE);
	max = ringbuf_max_event_size(rb); /* one such event per page, no room for a count */
	for (int i = 0; i < 4; i++) /* the last two push the first two out */
		assert_int_equal(write_len(max), 0);
	assert_int_equal(stats().overrun, 2);
	while (read_page_counting(&stored, &unstored) > 0) /* two pages of one event */
		pages++;
	assert_int_equal(pages, 2);
	for (int i = 0; i < 2; i++) /* then small events: room for the count */
		assert_int_equal(write_len(8), 0);
	while (read_page_counting(&stored, &unstored) > 0)
		pages++;
	if (unstored || stored != stats().overrun)
		fail_msg("%d page(s) said events were missed without the count; stored counts sum to %llu, "
			 "overrun is %llu", unstored, (unsigned long long)stored,
			 (unsigned long long)stats().overrun);
	ringbuf_destroy(rb);
}

/* ---- item 9: a drop counted after a nested tail move --------------------- */

/* Between the producer/consumer drop decision and its count: the reader
 * (another thread) takes the head page, making room, and a signal handler
 * writes an event, moving the tail onto the page the reader gave back. */
static void room_and_nested_write_at_drop(struct ringbuf *r, unsigned cpu, int point, void *ctx)
{
	struct ringbuf_record rec;
	(void)r;
	(void)cpu;
	(void)ctx;
	if (point != RINGBUF__TP_DROP_DECIDED || !armed)
		return;
	armed = 0;
	fired = 1;
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 1); /* swaps the head page out */
	assert_int_equal(id_of(&rec), 0);
	assert_int_equal(write_id(), 0); /* nested: id 5, on the page the reader gave back */
}

static void drop_reported_before_the_nested_page(void **state)
{
	struct ringbuf_record rec;
	uint64_t lost = 0;
	(void)state;
	rb = make(64, 2, RINGBUF_MODE_PRODUCER_CONSUMER);
	for (int i = 0; i < 4; i++) /* ids 0-3 fill the ring */
		assert_int_equal(write_id(), 0);
	ringbuf__set_testpoint_hook(room_and_nested_write_at_drop, NULL);
	armed = 1;
	fired = 0;
	assert_int_not_equal(write_id(), 0); /* id 4: dropped (the ring was full when decided) */
	ringbuf__set_testpoint_hook(NULL, NULL);
	assert_int_equal(fired, 1);
	assert_int_equal(stats().dropped_events, 1);
	/* ids 1-3 before the drop; the handler's event also got id 4 (the
	 * outer write_id() had not counted its own yet) */
	for (uint32_t want = 1; want <= 4; want++) {
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
		assert_int_equal(id_of(&rec), want);
		lost += rec.lost;
		if (want == 4 && rec.lost != 1)
			fail_msg("the event written after the drop (by the handler that cut in) says %llu "
				 "lost; the drop happened before it", (unsigned long long)rec.lost);
		else if (want != 4)
			assert_int_equal(rec.lost, 0);
	}
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 0);
	/* the next page the tail enters must not report it again */
	for (int i = 0; i < 3; i++)
		assert_int_equal(write_id(), 0);
	while (ringbuf_consume(rb, 0, &rec) == 1)
		lost += rec.lost;
	assert_int_equal(lost, 1);
	ringbuf_destroy(rb);
}

/* ---- items 7 and 8: the iterator's losses are events, and real ----------- */

static void iter_dropped_counts_events(void **state)
{
	struct ringbuf_iter *it;
	struct ringbuf_record rec;
	(void)state;
	rb = make(64, 4, RINGBUF_MODE_OVERWRITE); /* 4 ring pages of 2 events */
	for (int i = 0; i < 8; i++) /* ids 0-7 fill the ring, nothing overwritten yet */
		assert_int_equal(write_id(), 0);
	assert_int_equal(ringbuf_iter_start(rb, 0, &it), 0);
	for (uint32_t want = 0; want < 3; want++) { /* parked after id 2, on the second page */
		assert_int_equal(ringbuf_iter_next(it, &rec), 1);
		assert_int_equal(id_of(&rec), want);
		assert_int_equal(rec.lost, 0);
	}
	for (int i = 0; i < 10; i++) /* ids 8-17: 5 pages pushed, ids 0-9 overwritten */
		assert_int_equal(write_id(), 0);
	assert_int_equal(stats().overrun, 10);
	/* the iterator had handed out 0-2: it missed 3-9, seven events */
	assert_int_equal(ringbuf_iter_next(it, &rec), 1);
	assert_int_equal(id_of(&rec), 10);
	if (rec.lost != 7 || ringbuf_iter_dropped(it) != 7)
		fail_msg("ids 3-9 (7 events) were overwritten under the iterator: rec.lost %llu, "
			 "ringbuf_iter_dropped %llu", (unsigned long long)rec.lost,
			 (unsigned long long)ringbuf_iter_dropped(it));
	for (uint32_t want = 11; want < 18; want++) {
		assert_int_equal(ringbuf_iter_next(it, &rec), 1);
		assert_int_equal(id_of(&rec), want);
		assert_int_equal(rec.lost, 0);
	}
	assert_int_equal(ringbuf_iter_next(it, &rec), 0);
	/* parked on the reader page's successor, the head: pushed while there */
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 1); /* id 10: swaps the head in */
	ringbuf_iter_reset(it);
	assert_int_equal(ringbuf_iter_next(it, &rec), 1); /* id 11, on the reader page */
	assert_int_equal(id_of(&rec), 11);
	for (int i = 0; i < 8; i++) /* ids 18-25: pushes ids 12-17, 6 events */
		assert_int_equal(write_id(), 0);
	assert_int_equal(stats().overrun, 16);
	assert_int_equal(ringbuf_iter_next(it, &rec), 1);
	assert_int_equal(id_of(&rec), 18);
	assert_int_equal(rec.lost, 6);
	assert_int_equal(ringbuf_iter_dropped(it), 13);
	ringbuf_iter_finish(it);
	ringbuf_destroy(rb);
}

static void iter_no_loss_when_consumer_reuses_pages(void **state)
{
	struct ringbuf_iter *it;
	struct ringbuf_record rec;
	uint64_t lost = 0;
	(void)state;
	rb = make(64, 4, RINGBUF_MODE_PRODUCER_CONSUMER);
	for (int i = 0; i < 6; i++) /* ids 0-5 on three pages */
		assert_int_equal(write_id(), 0);
	assert_int_equal(ringbuf_iter_start(rb, 0, &it), 0);
	for (uint32_t want = 0; want < 3; want++) { /* parked after id 2, on the second page */
		assert_int_equal(ringbuf_iter_next(it, &rec), 1);
		assert_int_equal(id_of(&rec), want);
	}
	/* the consumer takes everything: the pages, the iterator's too, go back
	 * to the ring (new update counts), and writers reuse them */
	for (uint32_t want = 0; want < 6; want++) {
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
		assert_int_equal(id_of(&rec), want);
	}
	for (int i = 0; i < 6; i++) /* ids 6-11 */
		assert_int_equal(write_id(), 0);
	assert_int_equal(stats().overrun, 0);
	assert_int_equal(stats().dropped_events, 0);
	for (uint32_t want = 6; want < 12; want++) {
		assert_int_equal(ringbuf_iter_next(it, &rec), 1);
		assert_int_equal(id_of(&rec), want);
		lost += rec.lost;
	}
	assert_int_equal(ringbuf_iter_next(it, &rec), 0);
	if (lost || ringbuf_iter_dropped(it))
		fail_msg("nothing was overwritten (pages consumed and reused), yet the iterator reported "
			 "%llu lost, ringbuf_iter_dropped %llu", (unsigned long long)lost,
			 (unsigned long long)ringbuf_iter_dropped(it));
	ringbuf_iter_finish(it);
	ringbuf_destroy(rb);
}

/* ---- the iterator vs a head push whose owner has not counted yet --------- */

static int write_val(uint32_t id)
{
	uint32_t v[5] = {id, 0, 0, 0, 0};
	return ringbuf_write(rb, 0, v, sizeof v);
}

static struct ringbuf_iter *g_it;
static int in_hook_r;
static uint32_t in_hook_id;
static uint64_t in_hook_lost;

/* Between the claim of a head push (H1 CAS) and its count (overrun += the
 * page's events): a signal handler writes three events, helping the push and
 * moving the tail into the claimed page A, then pushing B (the iterator's
 * page) itself; then the iterator, another thread, runs. */
static void nested_push_then_iterate_at_h1_claimed(struct ringbuf *r, unsigned cpu, int point, void *ctx)
{
	struct ringbuf_record rec;
	(void)r;
	(void)cpu;
	(void)ctx;
	if (point != RINGBUF__TP_H1_CLAIMED || !armed)
		return;
	armed = 0;
	fired = 1;
	for (uint32_t id = 100; id < 103; id++)
		if (write_val(id) != 0)
			fired = -1;
	in_hook_r = ringbuf_iter_next(g_it, &rec);
	if (in_hook_r == 1) {
		in_hook_id = id_of(&rec);
		in_hook_lost = rec.lost;
	}
}

static void iter_counts_a_push_its_owner_has_not_counted_yet(void **state)
{
	struct ringbuf_record rec;
	static const uint32_t rest[] = {5, 6, 7, 100, 101, 102, 8};
	(void)state;
	rb = make(64, 4, RINGBUF_MODE_OVERWRITE); /* ring pages A B C D, 2 events each */
	for (uint32_t id = 0; id < 8; id++)
		assert_int_equal(write_val(id), 0);
	assert_int_equal(ringbuf_iter_start(rb, 0, &g_it), 0);
	for (uint32_t want = 0; want < 3; want++) { /* parked after id 2, on B */
		assert_int_equal(ringbuf_iter_next(g_it, &rec), 1);
		assert_int_equal(id_of(&rec), want);
	}
	ringbuf__set_testpoint_hook(nested_push_then_iterate_at_h1_claimed, NULL);
	armed = 1;
	fired = 0;
	assert_int_equal(write_val(8), 0); /* pushes A (0, 1): the hook cuts in */
	ringbuf__set_testpoint_hook(NULL, NULL);
	assert_int_equal(fired, 1);
	assert_int_equal(stats().overrun, 4); /* A (0, 1) and B (2, 3) */
	/* B was reused under the iterator while A's push was not counted yet:
	 * it must not hand out id 4 without counting id 3 */
	if (in_hook_r == 1 && (in_hook_id != 4 || in_hook_lost != 1))
		fail_msg("while the push of A was claimed but not counted, the iterator handed out id %u "
			 "with rec.lost %llu (id 3 was overwritten: 1 lost)",
			 in_hook_id, (unsigned long long)in_hook_lost);
	assert_int_equal(in_hook_r, RINGBUF_EAGAIN);
	assert_int_equal(ringbuf_iter_next(g_it, &rec), 1);
	assert_int_equal(id_of(&rec), 4);
	assert_int_equal(rec.lost, 1);
	for (size_t i = 0; i < sizeof rest / sizeof rest[0]; i++) {
		assert_int_equal(ringbuf_iter_next(g_it, &rec), 1);
		assert_int_equal(id_of(&rec), rest[i]);
		assert_int_equal(rec.lost, 0);
	}
	assert_int_equal(ringbuf_iter_next(g_it, &rec), 0);
	assert_int_equal(ringbuf_iter_dropped(g_it), 1);
	ringbuf_iter_finish(g_it);
	ringbuf_destroy(rb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(no_spurious_commit_overrun_after_two_swaps),
		cmocka_unit_test(read_page_full_page_event_after_losses),
		cmocka_unit_test(drop_reported_before_the_nested_page),
		cmocka_unit_test(iter_dropped_counts_events),
		cmocka_unit_test(iter_no_loss_when_consumer_reuses_pages),
		cmocka_unit_test(iter_counts_a_push_its_owner_has_not_counted_yet),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
