/* RINGBUF_CPU_THREAD under thread churn (issue 22 defect 7): more threads
 * than buffers come and go while a timer signal's handler writes nested
 * events, and each thread's first event is its handler's (the thread raises
 * the signal before it writes anything). Half the threads call
 * ringbuf_thread_init (their claim is given back at exit), half do not (their
 * claim is taken over by a later thread's due scan: a dead owner's buffer);
 * one buffer is shared (ringbuf_thread_shared) for the threads without a
 * claim. A reader drains every buffer meanwhile.
 *
 * Checked: every event written is read exactly once (per thread and context,
 * no sequence number twice), every refused write is counted
 * (dropped_events + unmapped), and, under ThreadSanitizer (make tsan-ubsan),
 * no data race: an independent harness of this shape found the slot fields
 * (page, off, event) written by a thread's handler, then by another thread
 * that took the buffer over after the first exited, with no happens-before
 * in the C11 model (the hand-over is ordered by the kernel, [TAKEOVER-HB] in
 * ringbuf.h: the fields are relaxed atomics now). Counts, never time: the
 * timer only varies where the handlers cut in; the assertions hold for any
 * interleaving.
 */
#define _GNU_SOURCE 1
#define RINGBUF_THREAD_RESCAN 64u
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"
#include "sigutil.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define NBUF 4
#define NTHREADS 48 /* in all */
#define LIVE 12     /* at once */
#define NEV 400     /* events each thread writes itself */
#define SEQS (1u << 20)

struct ev {
	uint32_t who; /* thread index << 1 | handler */
	uint32_t seq;
};

static struct ringbuf *g_rb;
static _Atomic(int) g_stop;
static _Atomic(uint64_t) g_ok, g_fail;
#define MAXSEQ (1u << 16)
/* reader: the sequence numbers seen per (thread, context): a thread's events
 * may sit in two buffers (the shared one before its claim, its own after), so
 * the reader checks "never twice", not their order across buffers */
static uint8_t g_seen[NTHREADS * 2][MAXSEQ / 8];
static uint64_t g_read, g_dup;

struct worker {
	uint32_t idx;
	int init;
	pthread_t th;
};

static __thread uint32_t t_idx;
static __thread _Atomic(uint32_t) t_hseq;
static __thread _Atomic(int) t_armed;

static int put(uint32_t who, uint32_t seq)
{
	struct ev *p = (struct ev *)ringbuf_reserve(g_rb, RINGBUF_CPU_THREAD, sizeof *p);
	if (!p) {
		atomic_fetch_add(&g_fail, 1);
		return -1;
	}
	p->who = who;
	p->seq = seq;
	ringbuf_commit(g_rb, RINGBUF_CPU_THREAD, p);
	atomic_fetch_add(&g_ok, 1);
	return 0;
}

static void on_irq(int sig)
{
	int e = errno;
	(void)sig;
	if (atomic_load_explicit(&t_armed, memory_order_relaxed)) {
		uint32_t s = atomic_load_explicit(&t_hseq, memory_order_relaxed);
		(void)put(t_idx << 1 | 1, s);
		atomic_store_explicit(&t_hseq, s + 1, memory_order_relaxed);
	}
	errno = e;
}

static void *worker_main(void *arg)
{
	struct worker *w = (struct worker *)arg;
	timer_t tm;
	sigset_t set;
	t_idx = w->idx;
	if (w->init)
		assert_int_equal(ringbuf_thread_init(g_rb), 0);
	atomic_store(&t_armed, 1);
	/* the thread's first event is its handler's */
	raise(SIGUSR1);
	assert_int_equal(thread_timer(my_tid(), SIGUSR1, 200000, 50000, &tm), 0); /* 5 kHz */
	for (uint32_t i = 0; i < NEV; i++) {
		(void)put(t_idx << 1, i);
		if (i % 64 == 63)
			sched_yield(); /* let the others run: churn within the live set */
	}
	/* no handler after this point: block, then delete the timer */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	timer_delete(tm);
	atomic_store(&t_armed, 0);
	return NULL;
}

static void take(const struct ringbuf_record *rec)
{
	struct ev e;
	assert_int_equal(rec->len >= sizeof e, 1);
	memcpy(&e, rec->data, sizeof e);
	assert_true(e.who < NTHREADS * 2);
	assert_true(e.seq < MAXSEQ);
	if (g_seen[e.who][e.seq / 8] & (1u << (e.seq % 8)))
		g_dup++;
	g_seen[e.who][e.seq / 8] |= (uint8_t)(1u << (e.seq % 8));
	g_read++;
}

static void *reader_main(void *arg)
{
	struct ringbuf_record rec;
	(void)arg;
	for (;;) {
		int any = 0, stop = atomic_load(&g_stop);
		for (unsigned cpu = 0; cpu < NBUF; cpu++)
			while (ringbuf_consume(g_rb, cpu, &rec) == 1) {
				take(&rec);
				any = 1;
			}
		if (stop && !any)
			break;
		if (!any)
			sched_yield();
	}
	return NULL;
}

static void churn(int mode)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct worker w[NTHREADS];
	struct ringbuf_stats st;
	pthread_t rd;
	struct sigaction sa;
	unsigned started = 0, joined = 0;
	cfg.ncpu = NBUF;
	cfg.size_per_cpu = 64 << 10;
	cfg.page_size = 4096;
	cfg.mode = mode;
	assert_int_equal(ringbuf_create(&cfg, &g_rb), 0);
	assert_int_equal(ringbuf_thread_shared(g_rb, 1), 0);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_irq;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	memset(g_seen, 0, sizeof g_seen);
	g_read = g_dup = 0;
	atomic_store(&g_ok, 0);
	atomic_store(&g_fail, 0);
	atomic_store(&g_stop, 0);
	assert_int_equal(pthread_create(&rd, NULL, reader_main, NULL), 0);
	while (joined < NTHREADS) {
		if (started < NTHREADS && started - joined < LIVE) {
			w[started].idx = started;
			w[started].init = started % 2;
			assert_int_equal(pthread_create(&w[started].th, NULL, worker_main, &w[started]), 0);
			started++;
			continue;
		}
		assert_int_equal(pthread_join(w[joined].th, NULL), 0);
		joined++;
	}
	atomic_store(&g_stop, 1);
	assert_int_equal(pthread_join(rd, NULL), 0);
	{ /* what the reader left (nothing: it drained after the last write) */
		struct ringbuf_record rec;
		for (unsigned cpu = 0; cpu < NBUF; cpu++)
			while (ringbuf_consume(g_rb, cpu, &rec) == 1)
				take(&rec);
	}
	assert_int_equal(ringbuf_stats(g_rb, &st), 0);
	print_message("  %s: %u threads (%u at once, half without ringbuf_thread_init): %llu written, %llu "
		      "read, %llu refused (dropped %llu, unmapped %llu), %llu read twice\n",
		      mode ? "producer/consumer" : "overwrite", NTHREADS, LIVE,
		      (unsigned long long)atomic_load(&g_ok), (unsigned long long)g_read,
		      (unsigned long long)atomic_load(&g_fail), (unsigned long long)st.dropped_events,
		      (unsigned long long)st.unmapped, (unsigned long long)g_dup);
	assert_int_equal(g_dup, 0);
	if (mode == RINGBUF_MODE_PRODUCER_CONSUMER) {
		assert_int_equal(g_read, atomic_load(&g_ok));
		assert_int_equal(atomic_load(&g_fail), st.dropped_events + st.unmapped + st.commit_overrun);
	} else {
		assert_int_equal(g_read + st.overrun, atomic_load(&g_ok));
		assert_int_equal(atomic_load(&g_fail), st.unmapped + st.commit_overrun);
	}
	assert_int_equal(st.entries, 0);
	ringbuf_destroy(g_rb);
}

static void thread_churn_with_handler_first_events_producer_consumer(void **state)
{
	(void)state;
	churn(RINGBUF_MODE_PRODUCER_CONSUMER);
}

static void thread_churn_with_handler_first_events_overwrite(void **state)
{
	(void)state;
	churn(RINGBUF_MODE_OVERWRITE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(thread_churn_with_handler_first_events_producer_consumer),
		cmocka_unit_test(thread_churn_with_handler_first_events_overwrite),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
