/* readerutil.h - the fixture of the reader tests (test_readers.c,
 * test_merged_order.c): a clock the test controls (also from other threads),
 * the buffer and iterator under test, destroyed by the teardown also after a
 * failed assert, and a SIGALRM watchdog that ends a hung test
 * SPDX-License-Identifier: MIT   (licence text at the end of ringbuf.h)
 *
 * Include after ringbuf.h (RINGBUF_IMPLEMENTATION: the test-point hook) and
 * <cmocka.h>, with two macros defined before:
 *   WATCHDOG_MSG       what the watchdog writes before it ends the executable
 *   READERS_START_NS   the clock's value when mk() has made a buffer
 * Functions are static inline: a test that does not use one gets no warning
 * for it.
 */
#ifndef RINGBUF_TESTS_READERUTIL_H
#define RINGBUF_TESTS_READERUTIL_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static _Atomic(uint64_t) g_now;
static inline uint64_t test_clock(void *ctx)
{
	(void)ctx;
	return atomic_load_explicit(&g_now, memory_order_relaxed);
}

static struct ringbuf *g_rb;
static struct ringbuf_iter *g_it;

static inline void on_alarm(int sig)
{
	static const char m[] = WATCHDOG_MSG;
	(void)sig;
	if (write(2, m, sizeof m - 1) < 0) {
		/* nothing to do */
	}
	_exit(99);
}

/* Hard watchdog: a hung test ends the executable with a message. */
static inline void watchdog(unsigned seconds)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	alarm(seconds);
}

/* Per-test setup: 120 s of watchdog. */
static inline int setup(void **state)
{
	(void)state;
	watchdog(120);
	return 0;
}

/* Per-test teardown: watchdog off, no test-point hook, g_it and g_rb gone. */
static inline int teardown(void **state)
{
	(void)state;
	alarm(0);
	ringbuf__set_testpoint_hook(NULL, NULL);
	ringbuf_iter_finish(g_it);
	g_it = NULL;
	ringbuf_destroy(g_rb);
	g_rb = NULL;
	return 0;
}

/* ncpu CPUs of npages pages of page bytes in mode, on the test's clock when
 * fake_clock (at READERS_START_NS); it replaces g_rb. */
static inline struct ringbuf *mk(unsigned ncpu, size_t page, unsigned npages, int mode, bool fake_clock)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	cfg.ncpu = ncpu;
	cfg.page_size = page;
	cfg.size_per_cpu = page * npages;
	cfg.mode = mode;
	if (fake_clock)
		cfg.clock = test_clock;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	assert_int_equal(ringbuf_nr_pages(rb), npages);
	ringbuf_destroy(g_rb);
	g_rb = rb;
	atomic_store(&g_now, READERS_START_NS);
	return rb;
}

#endif /* RINGBUF_TESTS_READERUTIL_H */
