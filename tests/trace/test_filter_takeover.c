/* The filter grace period across a slot takeover (>>filter, >>design S3, the
 * full table's takeover of a gone thread's slot), in the one shape where it
 * can break: a one-slot table, a thread A that evaluates a filter program in
 * the slot and exits, a thread B that takes A's slot over, and a replacer R
 * that frees A's program. No thread joins another before the free, and the
 * flags that order them are relaxed, so the only happens-before from A's read
 * of the program to R's free is the chain through the slot word: A's [F5]
 * release, B's takeover load (acquire), B's release store, R's [S3] acquire.
 * With the takeover load relaxed ThreadSanitizer reported A's read racing the
 * free (once in a CI run of test_filter_race); this test makes that shape
 * every time, so `make tsan` fails on the relaxed load and passes with the
 * acquire. Outside TSan it checks the accounting of the three events. No
 * timing: each step waits for the previous one by a flag or by the kernel
 * (tgkill ESRCH once A is gone).
 */
#define _GNU_SOURCE 1
#define RINGBUF_IMPLEMENTATION
#define RINGBUF_TRACE_DEFINE_EVENTS
#define RINGBUF_TRACE_FILTER_SLOTS 1
#include "ringbuf_trace.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

RINGBUF_TRACE_EVENT(tk, RINGBUF_FIELDS(RINGBUF_FIELD(int32_t, v)), RINGBUF_PRINT("v=%d", REC->v));

static struct ringbuf_trace_registry reg = RINGBUF_TRACE_REGISTRY_INIT("takeover");
static struct ringbuf *rb;
static _Atomic(int) a_done, b_done, r_done;
static _Atomic(int32_t) a_tid;
static _Atomic(int) a_ret, b_ret, r_ret;

static void *thread_a(void *arg)
{
	(void)arg;
	atomic_store_explicit(&a_tid, (int32_t)syscall(SYS_gettid), memory_order_relaxed);
	/* claims the only slot, reads the `v > 0` program in it: kept */
	atomic_store_explicit(&a_ret, trace_tk(rb, 0, 5), memory_order_relaxed);
	atomic_store_explicit(&a_done, 1, memory_order_relaxed);
	return NULL;
}

static void *thread_b(void *arg)
{
	int32_t tid;
	(void)arg;
	while (!atomic_load_explicit(&a_done, memory_order_relaxed))
		sched_yield();
	tid = atomic_load_explicit(&a_tid, memory_order_relaxed);
	/* A gone from the kernel's table: its slot can be taken over */
	while (syscall(SYS_tgkill, (long)getpid(), (long)tid, 0L) == 0)
		sched_yield();
	/* the table is full (A's): takes A's slot over, then evaluates */
	atomic_store_explicit(&b_ret, trace_tk(rb, 1, -5), memory_order_relaxed);
	atomic_store_explicit(&b_done, 1, memory_order_relaxed);
	return NULL;
}

static void *thread_r(void *arg)
{
	struct ringbuf_trace_filter_error err;
	(void)arg;
	while (!atomic_load_explicit(&b_done, memory_order_relaxed))
		sched_yield();
	/* replaces `v > 0`: frees A's program after S2-S3 */
	atomic_store_explicit(&r_ret, ringbuf_trace_set_filter(&reg, "tk", "v > 1", &err), memory_order_relaxed);
	atomic_store_explicit(&r_done, 1, memory_order_relaxed);
	return NULL;
}

static void freed_program_of_a_gone_thread_is_ordered_through_the_takeover(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf_trace_filter_error err;
	struct ringbuf_stats st;
	pthread_t a, b, r;
	(void)state;
	cfg.ncpu = 2; /* A writes CPU 0, B CPU 1: nothing else orders them */
	cfg.size_per_cpu = 64 << 10;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	assert_true(ringbuf_trace_register_event(&reg, &ringbuf_event_tk) >= 0);
	assert_true(ringbuf_trace_enable(&reg, "tk") >= 0);
	assert_int_equal(ringbuf_trace_set_filter(&reg, "tk", "v > 0", &err), 1);
	/* R and B first: nothing A does happens before their start */
	assert_int_equal(pthread_create(&r, NULL, thread_r, NULL), 0);
	assert_int_equal(pthread_create(&b, NULL, thread_b, NULL), 0);
	assert_int_equal(pthread_create(&a, NULL, thread_a, NULL), 0);
	assert_int_equal(pthread_join(r, NULL), 0);
	assert_int_equal(pthread_join(b, NULL), 0);
	assert_int_equal(pthread_join(a, NULL), 0);
	assert_int_equal(atomic_load(&a_ret), 1);  /* 5 > 0: committed */
	assert_int_equal(atomic_load(&b_ret), 0);  /* -5: discarded */
	assert_int_equal(atomic_load(&r_ret), 1);  /* one event's filter replaced */
	assert_int_equal(trace_tk(rb, 0, 1), 0);   /* v > 1 now: discarded */
	assert_int_equal(trace_tk(rb, 0, 2), 1);
	assert_int_equal(ringbuf_stats(rb, &st), 0);
	assert_int_equal(st.committed, 2);
	ringbuf_destroy(rb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(freed_program_of_a_gone_thread_is_ordered_through_the_takeover),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
