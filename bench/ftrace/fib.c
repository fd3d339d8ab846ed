/* fib.c - the function tracer's benchmark program (bench/ftrace/run.sh).
 * fib(n) by plain recursion: 2 fib(n+1) - 1 calls of a tiny function, the
 * worst case for a function tracer (the call itself costs ~1 ns). Built:
 *   plain                      untraced
 *   -finstrument-functions -DRB + ringbuf_ftrace.h (impl.c, not instrumented):
 *                              funcgraph_entry/exit into a 1 MiB per-CPU buffer
 *                              (CLOCK_MONOTONIC; -DTSC: the TSC clock)
 *   -pg                        for `uftrace record`
 * Prints the time of the fib(n) call (the thread's CPU time, so time given to
 * other processes on a shared machine does not count; in the program, so the
 * tracer's start-up and the recorder's file writing are not counted) per call. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifdef RB
#include "ringbuf_ftrace.h"
#endif

__attribute__((noinline)) int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 27, r;
	unsigned long long calls, a = 0, b = 1, i;
	struct timespec t0, t1;
	double ns;
#ifdef RB
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT; /* 1 CPU, 1 MiB, overwrite */
#ifdef TSC /* RINGBUF_CLOCK_TSC: rdtsc instead of clock_gettime */
	cfg.clock = RINGBUF_CLOCK_TSC;
#endif
	struct ringbuf *rb;
	struct ringbuf_ftrace_stats st;
	struct ringbuf_stats rs;
	if (ringbuf_create(&cfg, &rb) < 0 || ringbuf_ftrace_set_filter("fib") != 1 ||
	    ringbuf_ftrace_start(rb, 0, RINGBUF_FTRACE_GRAPH) < 0) {
		fprintf(stderr, "ringbuf set-up failed\n");
		return 1;
	}
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
	ringbuf_ftrace_stop();
	ringbuf_ftrace_get_stats(&st);
	ringbuf_stats_cpu(rb, 0, &rs);
	printf(" dropped=%llu overwritten=%llu", (unsigned long long)st.dropped,
	       (unsigned long long)rs.overrun);
	ringbuf_ftrace_free();
	ringbuf_destroy(rb);
#endif
	printf("\n");
	return 0;
}
