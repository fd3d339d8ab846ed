/* fib.c - the function tracer's benchmark program (bench/ftrace/run.sh).
 * fib(n) by plain recursion: 2 fib(n+1) - 1 calls of a tiny function, the
 * worst case for a function tracer (the call itself costs ~1 ns). Built:
 *   plain                      untraced
 *   -finstrument-functions -DRB + ringbuf_ftrace.h (impl.c, not instrumented):
 *                              funcgraph_entry/exit into a 1 MiB per-CPU buffer,
 *                              overwrite mode (a flight recorder), the clock
 *                              ringbuf_ftrace_start picks (the TSC when invariant);
 *                              -DKEEP: RINGBUF_FTRACE_KEEP_CLOCK (CLOCK_MONOTONIC);
 *                              -DFUNC: the `function` event, one record per call;
 *                              -DNOFILTER: no ringbuf_ftrace_set_filter("fib")
 *                              (every instrumented function traced, as the
 *                              peers run; fib is the only one called while
 *                              tracing, so the records are the same);
 *                              -DLIVE: producer/consumer mode with a live recorder,
 *                              a thread that reads whole pages while fib runs
 *                              (ringbuf_read_page, RINGBUF_READ_FULL; started
 *                              before fib; on CPU 1, fib on CPU 0, as trace-cmd
 *                              pins its readers), sleeping in ringbuf_wait until
 *                              half the ring is full (LIVE_WAIT_PCT), as
 *                              ringbuf-record and trace-cmd record wait, or
 *                              polling with sched_yield (-DLIVE_POLL); prints
 *                              records read and lost
 *   -pg -mfentry -mnop-mcount -mrecord-mcount -fno-pie (linked -no-pie):
 *                              a 5-byte NOP at fib's start; with -DRB -DFUNC
 *                              -DFENTRY ringbuf_ftrace_patch() makes it a call
 *                              that writes the `function` event (gcc, x86-64);
 *                              without -DRB: the NOPs' cost, never patched
 *   -finstrument-functions     for LTTng-UST's cyg-profile wrapper (LD_PRELOAD)
 *   -pg                        for `uftrace record`
 * Prints the time of the fib(n) call (the thread's CPU time, so time given to
 * other processes on a shared machine does not count, nor the live recorder's
 * thread; in the program, so the tracer's start-up and the recorder's file
 * writing are not counted) per call. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifdef RB
#include <pthread.h>
#include <sched.h>
#include "ringbuf_ftrace.h"
#endif

__attribute__((noinline)) int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

#ifdef LIVE
/* the live recorder: a thread that takes whole pages out of the buffer as
 * they fill (ringbuf_read_page, as trace-cmd record reads the kernel's) */
static struct ringbuf *live_rb;
static volatile int live_done, live_started;
/* Between drains the reader sleeps until this share of the ring holds
 * unread pages (ringbuf_wait's watermark; ringbuf-record's is 50): the writer
 * then pays one load per commit and a check per new page, where a reader
 * polling in a loop reads the writer's page and buffer state over and over
 * and takes those cache lines away from it (2 ns per call here on a quiet
 * machine, over 100 ns in some runs, depending on where the two vCPUs run). */
#ifndef LIVE_WAIT_PCT
#define LIVE_WAIT_PCT 50
#endif
static unsigned char live_page[1 << 16];

/* whole pages while the writer runs (RINGBUF_READ_FULL: a page the writer
 * has left, as trace-cmd's splice reads take full pages), everything at the
 * end (flags 0: the partly written last page too). Taking partial pages
 * while the writer runs would swap out the page it is on every few records:
 * ~10 records per read at ~0.2 us, barely the writer's rate here. */
__attribute__((no_instrument_function)) static unsigned long long live_drain(unsigned flags)
{
	unsigned long long n = 0;
	while (ringbuf_read_page(live_rb, 0, live_page, sizeof live_page, flags) > 0)
		n++;
	return n;
}

/* The recorder on a CPU of its own, the traced thread on another, as
 * trace-cmd record pins its per-CPU readers: left to the scheduler, the two
 * threads share a CPU at times and the writer fills the 1 MiB ring in well
 * under a millisecond meanwhile. Both CPUs must be allowed; else nothing is
 * pinned (and the run says so). */
static int live_pinned; /* each thread adds 1 before fib starts (live_started orders them) */
__attribute__((no_instrument_function)) static void live_pin(int cpu)
{
	cpu_set_t allowed, one;
	if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || !CPU_ISSET(0, &allowed) ||
	    !CPU_ISSET(1, &allowed))
		return;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0)
		live_pinned++;
}

__attribute__((no_instrument_function)) static void *live_reader(void *arg)
{
	(void)arg;
	live_pin(1);
	__atomic_store_n(&live_started, 1, __ATOMIC_RELEASE);
	for (;;) {
		int done = __atomic_load_n(&live_done, __ATOMIC_ACQUIRE);
		if (!live_drain(RINGBUF_READ_FULL)) {
			if (done)
				break;
#ifdef LIVE_POLL
			sched_yield();
#else
			ringbuf_wait(live_rb, 0, LIVE_WAIT_PCT, 100);
#endif
		}
	}
	return NULL;
}
#endif

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 27, r;
	unsigned long long calls, a = 0, b = 1, i;
	struct timespec t0, t1;
	double ns;
#ifdef RB
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT; /* 1 CPU, 1 MiB, overwrite */
	unsigned mode = RINGBUF_FTRACE_GRAPH;
	struct ringbuf *rb;
	struct ringbuf_ftrace_stats st;
	struct ringbuf_stats rs;
#ifdef KEEP
	mode |= RINGBUF_FTRACE_KEEP_CLOCK;
#endif
#ifdef FUNC
	mode = RINGBUF_FTRACE_FUNCTION;
#endif
#ifdef LIVE
	pthread_t reader;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
#endif
	if (ringbuf_create(&cfg, &rb) < 0 ||
#ifndef NOFILTER
	    ringbuf_ftrace_set_filter("fib") != 1 ||
#endif
	    ringbuf_ftrace_start(rb, 0, mode) < 0) {
		fprintf(stderr, "ringbuf set-up failed\n");
		return 1;
	}
#ifdef FENTRY
	if (ringbuf_ftrace_patch() != 1) {
		fprintf(stderr, "ringbuf_ftrace_patch: %s\n", ringbuf_ftrace_patch_error());
		return 1;
	}
#endif
#ifdef LIVE
	live_rb = rb;
	if (pthread_create(&reader, NULL, live_reader, NULL) != 0)
		return 1;
	/* the recorder runs before the traced code starts, as ringbuf-record
	 * attaches first: fib fills 1 MiB in well under a millisecond, less
	 * than a new thread may take to be scheduled at all */
	while (!__atomic_load_n(&live_started, __ATOMIC_ACQUIRE))
		sched_yield();
	live_pin(0); /* after the reader took CPU 1: a new thread inherits the mask */
#endif
#endif
	for (i = 0; i < (unsigned long long)n + 1; i++) { /* b = fib(n + 1) */
		unsigned long long c = a + b;
		a = b;
		b = c;
	}
	calls = 2 * a - 1; /* a = fib(n + 1) */
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	r = fib(n);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
	ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
	printf("fib(%d)=%d calls=%llu ns_per_call=%.3f", n, r, calls, ns / (double)calls);
#ifdef RB
#ifdef FENTRY
	ringbuf_ftrace_unpatch();
#endif
	ringbuf_ftrace_stop();
#ifdef LIVE
	__atomic_store_n(&live_done, 1, __ATOMIC_RELEASE);
#ifndef LIVE_POLL
	ringbuf_wake_waiters(rb);
#endif
	pthread_join(reader, NULL);
	live_drain(0);
#endif
	ringbuf_ftrace_get_stats(&st);
	ringbuf_stats_cpu(rb, 0, &rs);
#ifdef LIVE
	printf(" recorded=%llu lost=%llu pinned=%s", (unsigned long long)rs.read_events,
	       (unsigned long long)(rs.dropped_events + rs.commit_overrun), live_pinned == 2 ? "yes" : "no");
#endif
	printf(" clock=%s dropped=%llu overwritten=%llu", ringbuf_clock_name(rb), (unsigned long long)st.dropped,
	       (unsigned long long)rs.overrun);
	ringbuf_ftrace_free();
	ringbuf_destroy(rb);
#endif
	printf("\n");
	return 0;
}
