/* one_thread.h - for tests where one thread plays every party (writers cut
 * in at test points, readers called from hooks): the library's yields are
 * counted, not made.
 *
 * A yield lets another thread run; here there is none the test observes. A
 * reader that cuts in while the writer it interrupted is between H1 and H2
 * waits for that writer (ringbuf__find_head yields), and the writer is this
 * very thread: each yield only gave the CPU to whatever other process could
 * run. Under make test-cross, with every core busy, that made i686
 * test_interleave take 327 s (24 s in make test).
 *
 * Use: include this file once, and link with the wrappers by a line in the
 * test's source (the Makefile reads it):
 *   LDFLAGS: -Wl,--wrap=thrd_yield -Wl,--wrap=sched_yield
 * (between comment marks, as the other LDFLAGS lines). */
#ifndef RINGBUF_TESTS_ONE_THREAD_H
#define RINGBUF_TESTS_ONE_THREAD_H
#include <stdint.h>

static uint64_t one_thread_yields; /* yields asked for */

void __wrap_thrd_yield(void);
int __wrap_sched_yield(void);
void __wrap_thrd_yield(void)
{
	one_thread_yields++;
}
int __wrap_sched_yield(void)
{
	one_thread_yields++;
	return 0;
}
#endif
