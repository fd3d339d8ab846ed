/* ftrace_demo.c - the function tracer (ringbuf_ftrace.h) on a small program.
 *
 *   make demo-ftrace      (builds this with -finstrument-functions, runs it,
 *                          shows `trace-cmd report build/ftrace.dat`)
 *
 * A known call tree (main -> run -> parse -> {lex, lex}, eval -> fib
 * recursion), and a signal handler (on_alarm -> handler_work) that interrupts
 * a traced function: in the report its calls nest under the interrupted one.
 * The ringbuf implementation is in this file too; notrace "ringbuf*" keeps
 * it out of the trace where the compiler instruments it (clang has no
 * -finstrument-functions-exclude-file-list).
 */
/* CFLAGS: -finstrument-functions */
#define _GNU_SOURCE
#define RINGBUF_IMPLEMENTATION
#include "ringbuf_ftrace.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static volatile int sink;

__attribute__((noinline)) static int lex(int i)
{
	sink += i;
	return i * 2;
}

__attribute__((noinline)) static int parse(int n)
{
	return lex(n) + lex(n + 1);
}

__attribute__((noinline)) static int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) static void handler_work(void)
{
	sink++;
}

static void on_alarm(int sig)
{
	(void)sig;
	handler_work();
}

__attribute__((noinline)) static int eval(int n)
{
	raise(SIGUSR1); /* the handler runs inside eval: nests one deeper */
	return fib(n);
}

__attribute__((noinline)) static int run(void)
{
	return parse(3) + eval(4);
}

int main(int argc, char **argv)
{
	const char *out = argc > 1 ? argv[1] : "ftrace.dat";
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT; /* 1 CPU, 1 MiB, 4 KiB pages */
	struct ringbuf *rb;
	struct ringbuf_ftrace_stats st;
	int r;

	signal(SIGUSR1, on_alarm);
	if ((r = ringbuf_create(&cfg, &rb)) < 0) {
		fprintf(stderr, "ringbuf_create: %s\n", ringbuf_strerror(r));
		return 1;
	}
	ringbuf_ftrace_set_notrace("ringbuf* __cyg_profile*");
	if ((r = ringbuf_ftrace_start(rb, 0, RINGBUF_FTRACE_GRAPH)) < 0) {
		fprintf(stderr, "ringbuf_ftrace_start: %d\n", r);
		return 1;
	}
	r = run();
	ringbuf_ftrace_stop();
	ringbuf_ftrace_get_stats(&st);
	printf("run() = %d; dropped %llu, repaired %llu, nested hooks skipped %llu\n", r,
	       (unsigned long long)st.dropped, (unsigned long long)st.repaired,
	       (unsigned long long)st.nested_skipped);
	if ((r = ringbuf_ftrace_save_tracedat(rb, NULL, out, NULL)) < 0) {
		fprintf(stderr, "save %s: %d\n", out, r);
		return 1;
	}
	printf("wrote %s\n", out);
	ringbuf_ftrace_free();
	ringbuf_destroy(rb);
	return 0;
}
