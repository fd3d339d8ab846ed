/* Opening a file-backed block while its writer runs (ringbuf-record opens a
 * live block, RINGBUF_OPEN_RDWR): the validation must not call a sound block
 * corrupt because the writer moved the tail or the head under its walk of the
 * ring. Deterministic: test points stop the validation at V1 (tail loaded,
 * before the walk) and V2 (first pass over the links done) while the writer,
 * through the creator's own mapping of the same file, fills pages, in
 * producer/consumer mode (the tail moves) and in overwrite mode (the tail
 * moves and the head is pushed: flags move under the walk). Before the fix,
 * the tail moved at V1 made every open fail with RINGBUF_ECORRUPT.
 */
#define _GNU_SOURCE 1
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

static char path[256];

struct live {
	struct ringbuf *w; /* the writer's handle (the creator's mapping) */
	int point;         /* where to write */
	unsigned pages;    /* pages to fill there */
	unsigned hits;     /* times the point was reached on CPU 0 */
	uint32_t seq;
};

static void write_pages(struct live *l, unsigned pages)
{
	struct ringbuf_stats a, b;
	assert_int_equal(ringbuf_stats_cpu(l->w, 0, &a), 0);
	do { /* count pages, not time: until the tail entered `pages` new ones */
		uint32_t *ev = (uint32_t *)ringbuf_reserve(l->w, 0, 64);
		if (ev) {
			memset(ev, 0, 64);
			ev[0] = l->seq++;
			ringbuf_commit(l->w, 0, ev);
		}
		assert_int_equal(ringbuf_stats_cpu(l->w, 0, &b), 0);
	} while (b.pages_touched < a.pages_touched + pages);
}

static void hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	struct live *l = (struct live *)ctx;
	(void)rb;
	if (cpu != 0 || point != l->point)
		return;
	if (l->hits++ == 0) /* the first walk only: later tries see a still writer */
		write_pages(l, l->pages);
}

static void open_while_writing(int mode, int point, unsigned pages, unsigned prefill)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct live l;
	struct ringbuf *r = NULL;
	struct ringbuf_record rec;
	uint64_t n = 0;
	int rc;
	memset(&l, 0, sizeof l);
	snprintf(path, sizeof path, "/tmp/ringbuf-validate-live-%d.rb", (int)getpid());
	unlink(path);
	cfg.ncpu = 1;
	cfg.size_per_cpu = 8 * 4096;
	cfg.page_size = 4096;
	cfg.mode = mode;
	assert_int_equal(ringbuf_create_file(path, &cfg, &l.w), 0);
	write_pages(&l, prefill); /* overwrite mode: a full ring, every page move pushes the head */
	l.point = point;
	l.pages = pages;
	ringbuf__set_testpoint_hook(hook, &l);
	rc = ringbuf_open_file(path, RINGBUF_OPEN_RDWR, &r);
	ringbuf__set_testpoint_hook(NULL, NULL);
	assert_int_equal(l.hits >= 1, 1);
	assert_int_equal(rc, 0);
	/* and the block reads as the writer left it */
	while ((rc = ringbuf_consume(r, 0, &rec)) == 1)
		n++;
	assert_int_equal(rc, 0);
	assert_true(n > 0);
	ringbuf_destroy(r);
	ringbuf_destroy(l.w);
	unlink(path);
}

/* V1: the tail moves by a page after it was loaded (the old check compared
 * the end of its walk with a second load of the tail: ECORRUPT) */
static void tail_moved_before_the_walk_pc(void **state)
{
	(void)state;
	open_while_writing(RINGBUF_MODE_PRODUCER_CONSUMER, RINGBUF__TP_VALIDATE_TAIL, 1, 1);
}

static void tail_moved_before_the_walk_overwrite(void **state)
{
	(void)state;
	open_while_writing(RINGBUF_MODE_OVERWRITE, RINGBUF__TP_VALIDATE_TAIL, 3, 20);
}

/* V2-V3: the head is pushed between the two passes: the flags the first
 * pass counted are not a snapshot; the walk is taken again */
static void head_pushed_under_the_walk(void **state)
{
	(void)state;
	open_while_writing(RINGBUF_MODE_OVERWRITE, RINGBUF__TP_VALIDATE_WALKED, 1, 20);
	open_while_writing(RINGBUF_MODE_OVERWRITE, RINGBUF__TP_VALIDATE_WALKED, 5, 20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tail_moved_before_the_walk_pc),
		cmocka_unit_test(tail_moved_before_the_walk_overwrite),
		cmocka_unit_test(head_pushed_under_the_walk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
