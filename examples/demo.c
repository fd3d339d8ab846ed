/* Demonstrates the main job (`make demo`): a multi-threaded program traced
 * from ordinary code, from a timer signal handler and from a signal raised
 * inside that handler, with a live reader taking whole pages while the
 * workers run, and a trace.dat at the end for trace-cmd and KernelShark.
 *
 *   - 3 worker threads, worker i writing to CPU buffer i: a `work` event per
 *     work item (20-50 microseconds of computing each);
 *   - per worker a POSIX timer (timer_create, SIGEV_THREAD_ID) firing at
 *     4 kHz into that worker: its handler writes a `timer_tick`, and every
 *     8th tick raises SIGUSR1, whose handler (nested inside the first) writes
 *     a `nested_signal`;
 *   - a reader thread moving full pages into a capture every 5 ms;
 *   - after 2 s: build/demo.dat (trace.dat v6) and its first lines through
 *     `trace-cmd report` (or the library's own text output without trace-cmd),
 *     then a summary. Needs only a C compiler and make.
 *
 * Output path: argv[1] (default build/demo.dat).
 */
#define _GNU_SOURCE 1
#define RINGBUF_IMPLEMENTATION
#define RINGBUF_TRACE_DEFINE_EVENTS
#include "ringbuf_trace.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
/* LDFLAGS: -lrt */

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

/* ---- the events ------------------------------------------------------------ */

RINGBUF_TRACE_EVENT(work,
	RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, item),
		       RINGBUF_FIELD(uint32_t, rounds),
		       RINGBUF_FIELD(uint64_t, result)),
	RINGBUF_PRINT("item=%u rounds=%u result=0x%016llx", REC->item, REC->rounds,
		      (unsigned long long)REC->result));
RINGBUF_TRACE_EVENT(timer_tick,
	RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, tick),
		       RINGBUF_FIELD(int32_t, overrun),
		       RINGBUF_FIELD(uint32_t, item)),
	RINGBUF_PRINT("tick=%u overrun=%d interrupted_item=%u", REC->tick, REC->overrun, REC->item));
RINGBUF_TRACE_EVENT(nested_signal,
	RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, tick), RINGBUF_CHARS(from, 16)),
	RINGBUF_PRINT("tick=%u raised_from=%s", REC->tick, REC->from));
RINGBUF_TRACE_EVENT(worker_state,
	RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, worker), RINGBUF_STRING(state)),
	RINGBUF_PRINT("worker=%u state=%s", REC->worker, __get_str(state)));

static struct ringbuf_trace_event *const all_events[] = {
	&ringbuf_event_work, &ringbuf_event_timer_tick, &ringbuf_event_nested_signal,
	&ringbuf_event_worker_state,
};

#define NWORKERS 3
#define TIMER_HZ 4000
#define RUN_NS 2000000000ll

enum { CTX_THREAD, CTX_HANDLER, CTX_NESTED, NCTX };

static struct ringbuf *rb;
static struct ringbuf_trace_registry reg = RINGBUF_TRACE_REGISTRY_INIT("ringbuf");
static atomic_bool stop;

/* Per worker, touched by the worker and its signal handlers only. */
static _Thread_local unsigned my_cpu;
static _Thread_local uint32_t my_item, my_ticks;
static _Thread_local timer_t my_timer;
static _Thread_local uint64_t my_written[NCTX], my_dropped;

struct worker {
	pthread_t th;
	unsigned cpu;
	uint64_t written[NCTX], dropped;
};

static void count(int ctx, int r)
{
	if (r == 1)
		my_written[ctx]++;
	else
		my_dropped++;
}

/* SIGUSR1, raised inside the timer handler: a second level of nesting. */
static void on_nested(int sig)
{
	(void)sig;
	ringbuf_trace_signal_enter();
	count(CTX_NESTED, trace_nested_signal(rb, my_cpu, my_ticks, "timer_handler"));
	ringbuf_trace_signal_exit();
}

/* The timer signal: interrupts the worker anywhere, even inside an emitter. */
static void on_timer(int sig)
{
	int saved = errno;
	(void)sig;
	ringbuf_trace_signal_enter();
	my_ticks++;
	count(CTX_HANDLER, trace_timer_tick(rb, my_cpu, my_ticks, timer_getoverrun(my_timer), my_item));
	if (my_ticks % 8 == 0)
		raise(SIGUSR1); /* delivered at once, on this thread, inside this handler */
	ringbuf_trace_signal_exit();
	errno = saved;
}

static uint64_t busy(uint32_t rounds, uint64_t x)
{
	while (rounds--) { /* xorshift: about 1 ns per round */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct sigevent sev;
	struct itimerspec its;
	char name[16];
	uint64_t x = 0x9e3779b97f4a7c15ull + w->cpu;

	my_cpu = w->cpu;
	snprintf(name, sizeof name, "worker-%u", w->cpu);
	pthread_setname_np(pthread_self(), name);
	ringbuf_trace_thread_name(name); /* the name trace-cmd shows for this thread */

	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGRTMIN;
	sev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
	if (timer_create(CLOCK_MONOTONIC, &sev, &my_timer) != 0) {
		perror("timer_create");
		exit(1);
	}
	memset(&its, 0, sizeof its);
	its.it_interval.tv_nsec = 1000000000l / TIMER_HZ;
	its.it_value.tv_nsec = 50000; /* the first tick soon after the start */
	count(CTX_THREAD, trace_worker_state(rb, my_cpu, my_cpu, "started"));
	timer_settime(my_timer, 0, &its, NULL);

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint32_t rounds = 20000 + (uint32_t)(x % 40000);
		x = busy(rounds, x);
		my_item++;
		count(CTX_THREAD, trace_work(rb, my_cpu, my_item, rounds, x));
	}

	timer_delete(my_timer);
	count(CTX_THREAD, trace_worker_state(rb, my_cpu, my_cpu, "stopped"));
	memcpy(w->written, my_written, sizeof w->written);
	w->dropped = my_dropped;
	return NULL;
}

static struct ringbuf_trace_capture *cap;
static unsigned long live_pages;

static void *reader_main(void *arg)
{
	const struct timespec pause = {0, 5000000};
	(void)arg;
	pthread_setname_np(pthread_self(), "reader");
	while (!atomic_load_explicit(&stop, memory_order_acquire)) {
		int n = ringbuf_trace_capture_read(cap, rb, RINGBUF_ALL_CPUS, RINGBUF_READ_FULL);
		if (n > 0)
			live_pages += (unsigned long)n;
		nanosleep(&pause, NULL);
	}
	return NULL;
}

/* Count the captured records by the context in their common fields. */
struct tally {
	uint64_t ctx[NCTX], lost, events;
	bool lost_unknown;
};
static int tally_fn(const struct ringbuf_record *rec, void *p)
{
	struct tally *t = p;
	const struct ringbuf_trace_entry *e = rec->data;
	t->events++;
	if (rec->lost == RINGBUF_TRACE_LOST_UNKNOWN)
		t->lost_unknown = true;
	else
		t->lost += rec->lost;
	if (e->flags & RINGBUF_TRACE_FLAG_NMI)
		t->ctx[CTX_NESTED]++;
	else if (e->flags & RINGBUF_TRACE_FLAG_HARDIRQ)
		t->ctx[CTX_HANDLER]++;
	else
		t->ctx[CTX_THREAD]++;
	return 0;
}

static void show(const char *cmd, int max_lines)
{
	char line[1024];
	int n = 0;
	FILE *p = popen(cmd, "r");
	if (!p)
		return;
	printf("$ %s\n", cmd);
	while (fgets(line, sizeof line, p)) {
		if (n++ < max_lines)
			fputs(line, stdout);
	}
	pclose(p);
}

int main(int argc, char **argv)
{
	const char *out = argc > 1 ? argv[1] : "build/demo.dat";
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct worker w[NWORKERS];
	struct sigaction sa;
	struct ringbuf_stats st;
	struct tally t;
	pthread_t reader;
	struct timespec run = {RUN_NS / 1000000000ll, RUN_NS % 1000000000ll};
	struct stat sb;
	unsigned i;
	int r;

	/* 3 CPU buffers of 1 MiB (256 pages of 4 KiB), flight-recorder mode */
	cfg.ncpu = NWORKERS;
	cfg.size_per_cpu = 1 << 20;
	if ((r = ringbuf_create(&cfg, &rb)) < 0 ||
	    (r = ringbuf_trace_register_events(&reg, all_events, 4)) < 0 ||
	    (r = ringbuf_trace_capture_create(rb, &cap)) < 0) {
		fprintf(stderr, "demo: %s\n", ringbuf_strerror(r));
		return 1;
	}

	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask); /* SIGUSR1 stays deliverable inside the timer handler */
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = on_timer;
	sigaction(SIGRTMIN, &sa, NULL);
	sa.sa_handler = on_nested;
	sigaction(SIGUSR1, &sa, NULL);

	printf("demo: %d worker threads (CPU buffers 0..%d) for %.1f s, timer %d Hz each, "
	       "live reader every 5 ms\n",
	       NWORKERS, NWORKERS - 1, RUN_NS / 1e9, TIMER_HZ);
	pthread_create(&reader, NULL, reader_main, NULL);
	for (i = 0; i < NWORKERS; i++) {
		memset(&w[i], 0, sizeof w[i]);
		w[i].cpu = i;
		pthread_create(&w[i].th, NULL, worker_main, &w[i]);
	}
	nanosleep(&run, NULL);
	atomic_store_explicit(&stop, true, memory_order_release);
	for (i = 0; i < NWORKERS; i++)
		pthread_join(w[i].th, NULL);
	pthread_join(reader, NULL);

	/* what the live reader left: the partly filled last pages */
	r = ringbuf_trace_capture_read(cap, rb, RINGBUF_ALL_CPUS, 0);
	ringbuf_stats(rb, &st);

	mkdir("build", 0755);
	{
		struct ringbuf_trace_tracedat_opts opts = RINGBUF_TRACE_TRACEDAT_INIT;
		opts.version = 6;
		opts.capture = cap;
		r = ringbuf_trace_save_tracedat(rb, &reg, out, &opts);
	}
	if (r < 0) {
		fprintf(stderr, "demo: writing %s: %s (%s)\n", out, ringbuf_strerror(r), strerror(errno));
		return 1;
	}

	printf("\n");
	if (system("command -v trace-cmd >/dev/null 2>&1") == 0) {
		char cmd[512];
		snprintf(cmd, sizeof cmd, "trace-cmd report %s", out);
		show(cmd, 20);
		printf("...\n\n");
		/* -l adds the context column: h = in a signal handler, digit = depth - 1 */
		snprintf(cmd, sizeof cmd, "trace-cmd report -l --cpu 0 -F 'timer_tick,nested_signal' %s", out);
		show(cmd, 10);
		printf("...  (-l: 'h' = signal handler, then the nesting depth; trace-cmd prints the NMI flag\n"
		       "      of the nested handler as 'h' too, the kernel's trace file would say 'Z')\n");
	} else {
		printf("(trace-cmd is not installed: the same events through ringbuf_trace_print_capture)\n");
		ringbuf_trace_print_capture(cap, &reg, RINGBUF_ALL_CPUS, stdout, RINGBUF_TRACE_PRINT_HEADER,
					    20);
		printf("...\n");
	}

	memset(&t, 0, sizeof t);
	ringbuf_trace_capture_foreach(cap, RINGBUF_ALL_CPUS, 0, tally_fn, &t);
	{
		uint64_t wr[NCTX] = {0, 0, 0}, dropped = 0;
		size_t pages = 0;
		for (i = 0; i < NWORKERS; i++) {
			wr[CTX_THREAD] += w[i].written[CTX_THREAD];
			wr[CTX_HANDLER] += w[i].written[CTX_HANDLER];
			wr[CTX_NESTED] += w[i].written[CTX_NESTED];
			dropped += w[i].dropped;
			pages += ringbuf_trace_capture_pages(cap, i);
		}
		printf("\nsummary\n");
		printf("  events written:  %8llu from threads, %6llu from timer handlers, %5llu from nested signals"
		       " (%llu refused by the buffer)\n",
		       (unsigned long long)wr[CTX_THREAD], (unsigned long long)wr[CTX_HANDLER],
		       (unsigned long long)wr[CTX_NESTED], (unsigned long long)dropped);
		printf("  events in trace: %8llu from threads, %6llu from timer handlers, %5llu from nested signals\n",
		       (unsigned long long)t.ctx[CTX_THREAD], (unsigned long long)t.ctx[CTX_HANDLER],
		       (unsigned long long)t.ctx[CTX_NESTED]);
		printf("  lost (overwritten before the reader got them): %llu%s (buffer statistics: %llu)\n",
		       (unsigned long long)t.lost, t.lost_unknown ? "+" : "", (unsigned long long)st.overrun);
		printf("  pages: %zu in the trace, %lu taken by the live reader while the workers ran\n", pages,
		       live_pages);
		if (stat(out, &sb) == 0)
			printf("  wrote %s (%lld bytes, trace.dat v6): trace-cmd report %s; kernelshark %s\n", out,
			       (long long)sb.st_size, out, out);
		if (t.events + t.lost != wr[CTX_THREAD] + wr[CTX_HANDLER] + wr[CTX_NESTED] && !t.lost_unknown) {
			printf("  MISMATCH: written != in trace + lost\n");
			return 1;
		}
	}
	ringbuf_trace_capture_destroy(cap);
	ringbuf_destroy(rb);
	return 0;
}
