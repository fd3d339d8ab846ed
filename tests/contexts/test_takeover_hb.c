/* test_takeover_hb.c - a dead thread's events, read after another thread
 * took its buffer over: ordered in C11, not only by the kernel
 * SPDX-License-Identifier: MIT   (licence text at the end of ringbuf.h)
 *
 * Thread A (no ringbuf_thread_init, so nothing releases its claim when it
 * exits) claims the one buffer with its first RINGBUF_CPU_THREAD event,
 * writes 3 events, and exits. Once the kernel says A is gone (kill(tid, 0):
 * ESRCH), thread B writes one event: its scan finds the buffer's owner dead
 * and takes the buffer over (RINGBUF__TP_TAKEOVER) without a repair (A was
 * not inside an event) and commits on A's page. The main thread then reads
 * the 4 events. Nothing orders A before B or the reader except the
 * library: main learns A's tid and its death through a relaxed load and a
 * system call, B is created after that, and A is joined only at the end.
 * The reader acquires B's page commit; it happens-after A's bytes only if
 * B's takeover acquires A's last release (committing = 0, [M3]): before the
 * acquire in the judge ([TAKEOVER-HB] in ringbuf.h), ThreadSanitizer
 * reported ringbuf__parse against A's put_event every time (make
 * tsan-ubsan; test_thread_churn showed it in about 1 run of 20). The
 * hook counts only the takeover, with a relaxed add by B, so that it adds
 * no order of its own. Counts events, not time.
 */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

#define NA 3 /* events A writes */

static struct ringbuf *g_rb;
static _Atomic(unsigned) g_takeovers;
static _Atomic(long) g_tid_a;

static void hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	(void)rb;
	(void)cpu;
	(void)ctx;
	if (point == RINGBUF__TP_TAKEOVER)
		atomic_fetch_add_explicit(&g_takeovers, 1, memory_order_relaxed);
}

static int put(uint32_t v)
{
	uint32_t *p = (uint32_t *)ringbuf_reserve(g_rb, RINGBUF_CPU_THREAD, sizeof *p);
	if (!p)
		return -1;
	*p = v;
	ringbuf_commit(g_rb, RINGBUF_CPU_THREAD, p);
	return 0;
}

static void *thread_a(void *arg)
{
	uint32_t i;
	(void)arg;
	for (i = 0; i < NA; i++)
		if (put(i) != 0)
			return (void *)1;
	atomic_store_explicit(&g_tid_a, (long)syscall(SYS_gettid), memory_order_relaxed);
	return NULL;
}

static void *thread_b(void *arg)
{
	(void)arg;
	return put(NA) == 0 ? NULL : (void *)1;
}

static void dead_owner_events_happen_before_the_reader(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf_record rec;
	pthread_t a, b;
	void *ra, *rb_;
	long tid;
	uint32_t i;
	(void)state;
	cfg.ncpu = 1;
	cfg.size_per_cpu = 16 << 10;
	cfg.page_size = 4096;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
	assert_int_equal(ringbuf_create(&cfg, &g_rb), 0);
	ringbuf__set_testpoint_hook(hook, NULL);

	assert_int_equal(pthread_create(&a, NULL, thread_a, NULL), 0);
	while ((tid = atomic_load_explicit(&g_tid_a, memory_order_relaxed)) == 0)
		sched_yield();
	while (kill((pid_t)tid, 0) == 0)
		sched_yield();
	assert_int_equal(errno, ESRCH);

	assert_int_equal(pthread_create(&b, NULL, thread_b, NULL), 0);
	assert_int_equal(pthread_join(b, &rb_), 0);
	assert_null(rb_);
	assert_int_equal(atomic_load(&g_takeovers), 1);

	for (i = 0; i <= NA; i++) {
		assert_int_equal(ringbuf_consume(g_rb, 0, &rec), 1);
		assert_int_equal(rec.len, sizeof(uint32_t));
		assert_int_equal(*(const uint32_t *)rec.data, i);
	}
	assert_int_equal(ringbuf_consume(g_rb, 0, &rec), 0);

	assert_int_equal(pthread_join(a, &ra), 0);
	assert_null(ra);
	ringbuf__set_testpoint_hook(NULL, NULL);
	ringbuf_destroy(g_rb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(dead_owner_events_happen_before_the_reader),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
