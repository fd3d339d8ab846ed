/* The function tracer with a live recorder: the benchmark program of
 * bench/ftrace (fib(27) by plain recursion, 635,621 traced calls) traced
 * into a 1 MiB per-CPU buffer in producer/consumer mode while a consumer
 * thread drains it record by record, counting funcgraph_entry and
 * funcgraph_exit. Whether the consumer keeps up depends on the scheduler (a
 * loaded machine, one core for two threads), and the tracer never blocks, so
 * "0 calls lost" cannot be asserted without timing; what is asserted is the
 * exact accounting: every entry and exit is either read by the recorder or
 * counted as lost, once (recorded + lost == 2 x calls; the ring buffer's lost
 * count, the records' `lost` fields and the tracer's dropped count agree),
 * and, when nothing was lost, entries == exits == calls. The loss counts of
 * the same set-up are reported by `make bench-ftrace`.
 */
/* CFLAGS: -finstrument-functions -fno-optimize-sibling-calls */
#define _GNU_SOURCE
#define RINGBUF_IMPLEMENTATION
#include "ringbuf_ftrace.h"

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#define NO_HOOK __attribute__((no_instrument_function))

__attribute__((noinline)) int f_fib(int n);
__attribute__((noinline)) int f_fib(int n)
{
	return n < 2 ? n : f_fib(n - 1) + f_fib(n - 2);
}

static struct ringbuf *rb;
static int done;
static unsigned long long n_ent, n_ret, n_other, n_lost;

NO_HOOK static unsigned long long drain(void)
{
	struct ringbuf_record rec;
	unsigned long long n = 0;
	while (ringbuf_consume(rb, 0, &rec) > 0) {
		uint16_t type;
		memcpy(&type, rec.data, sizeof type);
		if (type == RINGBUF_FTRACE_ID_GRAPH_ENT)
			n_ent++;
		else if (type == RINGBUF_FTRACE_ID_GRAPH_RET)
			n_ret++;
		else
			n_other++;
		n_lost += rec.lost;
		n++;
	}
	return n;
}

NO_HOOK static void *recorder(void *arg)
{
	(void)arg;
	for (;;) {
		int d = __atomic_load_n(&done, __ATOMIC_ACQUIRE);
		if (!drain()) {
			if (d)
				break;
			sched_yield();
		}
	}
	return NULL;
}

/* fib(n) traced into a fresh 1 MiB producer/consumer buffer, with the
 * recorder thread draining it while it runs (live) or only afterwards (the
 * buffer fills and the rest is dropped: loss for certain) */
NO_HOOK static void run(bool live)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT; /* 1 CPU, 1 MiB, 4 KiB pages */
	struct ringbuf_ftrace_stats fst0, fst;
	struct ringbuf_stats st;
	unsigned long long calls, a = 0, b = 1, i, lost;
	const int n = 27;
	pthread_t th;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
	n_ent = n_ret = n_other = n_lost = 0;
	ringbuf_ftrace_get_stats(&fst0); /* the tracer's counters add up over runs */
	done = 0;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	assert_int_equal(ringbuf_ftrace_set_filter("f_fib"), 1);
	assert_int_equal(ringbuf_ftrace_start(rb, 0, RINGBUF_FTRACE_GRAPH), 0);
	if (live)
		assert_int_equal(pthread_create(&th, NULL, recorder, NULL), 0);
	for (i = 0; i < (unsigned long long)n + 1; i++) { /* a = fib(n + 1) */
		unsigned long long c = a + b;
		a = b;
		b = c;
	}
	calls = 2 * a - 1;
	assert_int_equal(f_fib(n), 196418);
	ringbuf_ftrace_stop();
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	if (live)
		assert_int_equal(pthread_join(th, NULL), 0);
	drain();
	ringbuf_ftrace_get_stats(&fst);
	assert_int_equal(ringbuf_stats_cpu(rb, 0, &st), 0);
	lost = st.dropped_events + st.commit_overrun;
	printf("%s recorder: %llu calls, %llu entries + %llu exits read, %llu lost (%llu reported in the "
	       "stream), clock %s\n",
	       live ? "live" : "late", calls, n_ent, n_ret, lost, n_lost, ringbuf_clock_name(rb));
	assert_int_equal(n_other, 0);
	assert_int_equal(fst.overrun - fst0.overrun, 0);
	assert_int_equal(fst.repaired - fst0.repaired, 0);
	/* every record either read or lost, once; the tracer's count of the
	 * loss is the buffer's; the stream reports each loss that a record
	 * followed (a drop at the very end is in the statistics only) */
	assert_int_equal(n_ent + n_ret + lost, 2 * calls);
	assert_int_equal(fst.dropped - fst0.dropped, lost);
	assert_true(n_lost <= lost);
	assert_int_equal(st.overrun, 0); /* producer/consumer: nothing overwritten */
	assert_int_equal(st.read_events, n_ent + n_ret);
	if (lost == 0) {
		assert_int_equal(n_ent, calls);
		assert_int_equal(n_ret, calls);
	}
	if (!live) /* 1 MiB holds a small part of 1.27 million records */
		assert_true(lost > calls);
	assert_int_equal(ringbuf_ftrace_thread_depth(), 0);
	ringbuf_ftrace_free();
	ringbuf_destroy(rb);
}

NO_HOOK static void test_live_recorder_accounting(void **state)
{
	(void)state;
	run(true);
}

NO_HOOK static void test_late_recorder_accounting(void **state)
{
	(void)state;
	run(false);
}

NO_HOOK int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_live_recorder_accounting),
		cmocka_unit_test(test_late_recorder_accounting),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
