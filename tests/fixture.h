/* fixture.h - the one-buffer, controlled-clock fixture of the page-level
 * tests (test_modes.c, test_stats.c, test_discard.c)
 * SPDX-License-Identifier: MIT   (licence text at the end of ringbuf.h)
 *
 * The test's clock reads `now`; the buffer under test is g_rb, which the
 * teardown destroys, also after a failed assert. Include after ringbuf.h
 * (RINGBUF_IMPLEMENTATION: the test-point hook) and <cmocka.h>. Functions are
 * static inline: a test that does not use one gets no warning for it.
 */
#ifndef RINGBUF_TESTS_FIXTURE_H
#define RINGBUF_TESTS_FIXTURE_H

#include <stdint.h>

static uint64_t now;
static inline uint64_t test_clock(void *ctx)
{
	(void)ctx;
	return now;
}

static struct ringbuf *g_rb; /* destroyed by the teardown, also after a failed assert */

/* Per-test teardown: no test-point hook left, g_rb destroyed. */
static inline int teardown(void **state)
{
	(void)state;
	ringbuf__set_testpoint_hook(NULL, NULL);
	ringbuf_destroy(g_rb);
	g_rb = NULL;
	return 0;
}

/* Creates the buffer cfg describes, on the test's clock; it replaces g_rb
 * (the one before is destroyed) and the clock starts at now = 1000. */
static inline struct ringbuf *fixture_create(struct ringbuf_config *cfg)
{
	struct ringbuf *rb = NULL;
	cfg->clock = test_clock;
	assert_int_equal(ringbuf_create(cfg, &rb), 0);
	assert_non_null(rb);
	ringbuf_destroy(g_rb);
	g_rb = rb;
	now = 1000;
	return rb;
}

/* ncpu CPUs of npages pages of page bytes, in mode (fixture_create) */
static inline struct ringbuf *mk(unsigned ncpu, size_t page, unsigned npages, int mode)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	cfg.ncpu = ncpu;
	cfg.page_size = page;
	cfg.size_per_cpu = page * npages;
	cfg.mode = mode;
	rb = fixture_create(&cfg);
	assert_int_equal(ringbuf_nr_pages(rb), npages);
	assert_int_equal(ringbuf_page_size(rb), page);
	return rb;
}

/* Destroys rb, the g_rb of the test, before its end. */
static inline void drop_rb(struct ringbuf *rb)
{
	assert_ptr_equal(rb, g_rb);
	ringbuf_destroy(rb);
	g_rb = NULL;
}

static inline struct ringbuf_stats stats(struct ringbuf *rb, unsigned cpu)
{
	struct ringbuf_stats st;
	assert_int_equal(ringbuf_stats_cpu(rb, cpu, &st), 0);
	return st;
}

#endif /* RINGBUF_TESTS_FIXTURE_H */
