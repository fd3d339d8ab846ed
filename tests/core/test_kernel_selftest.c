/* A user-space port of the idea of the kernel's CONFIG_RING_BUFFER_STARTUP_TEST
 * (see /work/shared/reference/kernel-ring-buffer.md section 5), written from
 * that description; no kernel code.
 *
 * Setup: a 2-CPU overwrite buffer of 1 MiB per CPU, recording off. One writer
 * thread per CPU buffer (pinned to a CPU when the system lets us), writing with
 * the explicit cpu index = its buffer: one event, then a sleep of 100-300 us.
 * A "hammer" thread sends SIGUSR1 with tgkill() to the writer threads; the
 * handler writes a nested event into the buffer of the thread it interrupted
 * (the writer contract: one thread plus its signal handlers per buffer), which
 * is the user-space analogue of the kernel's IPI writing inside the tester.
 * Recording is switched on, the test runs for a while, everything stops.
 *
 * Event sizing is the kernel test's rule: c = count (+27 when nested),
 * size = (c * 68 / 25) % (strlen(text)), event = { int size; char str[size] }
 * holding the first size bytes of an ASCII text.
 *
 * Checks per CPU buffer, all computed from what the writers recorded:
 *   - nothing was dropped (overwrite mode never drops);
 *   - draining with ringbuf_consume(): read + sum(rec.lost) == events written;
 *   - if nothing was lost: the sum of rec.len == the sum of the event lengths
 *     the writers computed, and the sum of (size + 4) == bytes written;
 *   - every payload matches the text prefix byte for byte, rec.len is the
 *     kernel's event length for it, time never goes backwards;
 *   - the library's statistics agree (committed, overrun, read_events).
 * A kernel-style summary is printed per CPU.
 *
 * Two deviations, both to make the run prove more in a short time: every
 * other plain event stays open (reserved, not committed) for about 30 us, so
 * that many signals land inside an open event; and besides the kernel's
 * configuration (whose 1 MiB may or may not overflow, depending on the
 * machine's speed) two variants pin down each branch of the check: a large
 * buffer with a byte budget (nothing can be lost: exact byte totals) and a
 * 32 KiB buffer (constant overwrite: the lost counts).
 *
 * RINGBUF_TEST_SECONDS (default 3) is the duration of the whole file: the
 * kernel configuration gets half of it, each variant a quarter. That is a
 * minimum: each run goes on until every CPU buffer has the events its checks
 * need (plain and nested ones; twice the buffer size for the variant that must
 * lose events), so no check depends on how fast the machine is.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "pagewalk.h"

#define NCPU 2

/* Any ASCII text of about 150 bytes; the events carry prefixes of it. */
static const char text[] =
	"In a ring of pages the writer reserves, fills and commits, while a signal "
	"may cut in at any instruction and write its own event first: 0123456789!";

struct item {
	int size;
	char str[];
};

/* What one kind of writer (plain or nested) did on one CPU buffer. */
struct acc {
	uint64_t events;
	uint64_t dropped;
	uint64_t bytes_alloc;   /* sum of the payload room the events got (kernel event length) */
	uint64_t bytes_written; /* sum of size + sizeof(struct item) */
	uint64_t bytes_dropped;
	uint64_t min_size, max_size;
	int bad_len; /* payload room smaller than asked: must never happen */
};

struct tdata {
	unsigned cpu;
	_Atomic(pid_t) tid;
	_Atomic(uint64_t) cnt;       /* plain writes attempted */
	_Atomic(int) in_event;       /* the thread is between reserve and commit */
	struct acc plain;            /* written by the thread only */
	struct acc nested;           /* written by its SIGUSR1 handler only */
	uint64_t interrupted_events; /* handler ran while the thread had an event open */
	uint64_t signals;            /* handler runs */
	_Atomic(uint64_t) used;       /* bytes written (plain + nested), for the budget */
	_Atomic(uint64_t) plain_done; /* committed events, for the end of the run */
	_Atomic(uint64_t) nested_done;
	_Atomic(int) ready;
};

static struct ringbuf *g_rb;
static struct tdata g_data[NCPU];
static _Atomic(int) g_started, g_stop_writers, g_stop_hammer;
static _Atomic(uint64_t) g_kills;
static uint64_t g_budget; /* bytes per CPU the writers may write; 0: no limit */
static _Thread_local struct tdata *t_self __attribute__((tls_model("initial-exec")));

/* The room ringbuf_reserve() gives a payload of len bytes: the kernel's event
 * length rule (tests/pagewalk.h, independent of ringbuf.h) minus the header. */
static uint64_t event_room(uint32_t len)
{
	uint32_t l = pw_expected_len(len, false);
	return l - 4 <= PW_MAX_SMALL_DATA ? l - 4 : l - 8;
}

static void acc_add_size(struct acc *a, uint64_t size)
{
	if (a->events == 0 || size < a->min_size)
		a->min_size = size;
	if (size > a->max_size)
		a->max_size = size;
}

static void spin_us(long us)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < us * 1000L);
}

/* Async-signal-safe: the nested variant runs in the SIGUSR1 handler. */
static void rb_write_something(struct tdata *d, bool nested)
{
	struct acc *a = nested ? &d->nested : &d->plain;
	uint64_t c = atomic_load_explicit(&d->cnt, memory_order_relaxed) + (nested ? 27 : 0);
	uint32_t size = (uint32_t)((c * 68 / 25) % (sizeof text - 1));
	uint32_t len = size + (uint32_t)sizeof(struct item);
	/* read before reserving: a failure after we saw the start is a real drop */
	int started = atomic_load_explicit(&g_started, memory_order_acquire);
	struct item *it;
	uint64_t room;

	/* the last 64 KiB of the budget are the handler's: however the threads
	 * are scheduled, nested events can still be written when the plain ones
	 * have used up theirs (the run waits for both kinds) */
	if (g_budget && atomic_load_explicit(&d->used, memory_order_relaxed) + 256 +
				(nested ? 0 : (uint64_t)64 << 10) > g_budget)
		return; /* not an attempt: the budget keeps this run loss-free */
	if (!nested)
		atomic_store_explicit(&d->in_event, 1, memory_order_relaxed);
	it = ringbuf_reserve(g_rb, d->cpu, len);
	if (!it) {
		if (started) {
			a->dropped++;
			a->bytes_dropped += len;
		}
		if (!nested)
			atomic_store_explicit(&d->in_event, 0, memory_order_relaxed);
		return;
	}
	room = event_room(len);
	if (room < len)
		a->bad_len = 1;
	it->size = (int)size;
	memcpy(it->str, text, size);
	if (!nested && c % 2 == 0)
		spin_us(30); /* keep the event open: let the hammer cut in */
	ringbuf_commit(g_rb, d->cpu, it);
	atomic_fetch_add_explicit(&d->used, room + 8, memory_order_relaxed);
	if (!nested)
		atomic_store_explicit(&d->in_event, 0, memory_order_relaxed);
	acc_add_size(a, len);
	atomic_fetch_add_explicit(nested ? &d->nested_done : &d->plain_done, 1, memory_order_relaxed);
	a->events++;
	a->bytes_alloc += room;
	a->bytes_written += len;
}

static void on_usr1(int sig)
{
	int e = errno;
	struct tdata *d = t_self;
	(void)sig;
	if (d) {
		d->signals++;
		if (atomic_load_explicit(&d->in_event, memory_order_relaxed))
			d->interrupted_events++;
		rb_write_something(d, true);
	}
	errno = e;
}

static void pin_to(unsigned cpu)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;
	if (n <= 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu % (unsigned)n, &set);
	(void)pthread_setaffinity_np(pthread_self(), sizeof set, &set); /* best effort */
}

static void sleep_us(long us)
{
	struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
	(void)nanosleep(&ts, NULL); /* EINTR from the hammer only shortens it */
}

static void *rb_tester(void *arg)
{
	struct tdata *d = arg;
	pin_to(d->cpu);
	t_self = d;
	atomic_store(&d->tid, (pid_t)syscall(SYS_gettid));
	atomic_store(&d->ready, 1);
	while (!atomic_load_explicit(&g_stop_writers, memory_order_acquire)) {
		rb_write_something(d, false);
		uint64_t c = atomic_load_explicit(&d->cnt, memory_order_relaxed) + 1;
		atomic_store_explicit(&d->cnt, c, memory_order_relaxed);
		sleep_us(100 + (long)(c % 3) * 100); /* 100 .. 300 us */
	}
	return NULL;
}

static void *rb_hammer(void *arg)
{
	long us = *(long *)arg;
	pid_t pid = getpid();
	while (!atomic_load_explicit(&g_stop_hammer, memory_order_acquire)) {
		for (int i = 0; i < NCPU; i++) {
			if (syscall(SYS_tgkill, pid, atomic_load(&g_data[i].tid), SIGUSR1) == 0)
				atomic_fetch_add_explicit(&g_kills, 1, memory_order_relaxed);
		}
		sleep_us(us);
	}
	return NULL;
}

static double test_seconds(double dflt)
{
	const char *s = getenv("RINGBUF_TEST_SECONDS");
	double v = s ? strtod(s, NULL) : 0;
	return v > 0 ? v * dflt / 3.0 : dflt;
}

/* Drain one CPU buffer and check it against what its writers recorded. */
static void check_cpu(unsigned cpu, int expect_loss)
{
	struct tdata *d = &g_data[cpu];
	struct ringbuf_record rec;
	struct ringbuf_stats st;
	uint64_t lost = 0, read = 0, total_len = 0, total_size = 0, last_ts = 0;
	uint64_t events = d->plain.events + d->nested.events;
	uint64_t alloc = d->plain.bytes_alloc + d->nested.bytes_alloc;
	uint64_t written = d->plain.bytes_written + d->nested.bytes_written;
	int r;

	assert_false(d->plain.bad_len);
	assert_false(d->nested.bad_len);
	/* 1. overwrite mode never drops an event */
	assert_int_equal(d->plain.dropped + d->nested.dropped, 0);

	/* 2. drain */
	while ((r = ringbuf_consume(g_rb, cpu, &rec)) == 1) {
		const struct item *it = rec.data;
		assert_int_equal(rec.cpu, cpu);
		assert_true(rec.len >= sizeof(struct item));
		if (it->size < 0 || (size_t)it->size >= sizeof text ||
		    rec.len != event_room((uint32_t)it->size + (uint32_t)sizeof(struct item)))
			fail_msg("cpu %u event %llu: bad size %d (record length %zu)", cpu,
				 (unsigned long long)read, it->size, rec.len);
		if (memcmp(it->str, text, (size_t)it->size) != 0)
			fail_msg("cpu %u event %llu: payload differs from the text", cpu,
				 (unsigned long long)read);
		if (rec.ts < last_ts)
			fail_msg("cpu %u event %llu: time went backwards", cpu, (unsigned long long)read);
		last_ts = rec.ts;
		lost += rec.lost;
		total_len += rec.len;
		total_size += (uint64_t)it->size + sizeof(struct item);
		read++;
	}
	assert_int_equal(r, 0);
	assert_int_equal(ringbuf_stats_cpu(g_rb, cpu, &st), 0);

	print_message("  CPU %u:\n"
		      "      events written: %10llu (plain %llu, nested %llu)\n"
		      "     signals handled: %10llu (%llu inside an open event)\n"
		      "       dropped bytes: %10llu\n"
		      "       alloced bytes: %10llu\n"
		      "       written bytes: %10llu\n"
		      "       biggest event: %10llu\n"
		      "      smallest event: %10llu\n"
		      "         read events: %10llu\n"
		      "         lost events: %10llu\n"
		      "        total events: %10llu\n"
		      "  recorded len bytes: %10llu\n"
		      " recorded size bytes: %10llu\n",
		      cpu, (unsigned long long)events, (unsigned long long)d->plain.events,
		      (unsigned long long)d->nested.events, (unsigned long long)d->signals,
		      (unsigned long long)d->interrupted_events,
		      (unsigned long long)(d->plain.bytes_dropped + d->nested.bytes_dropped),
		      (unsigned long long)alloc, (unsigned long long)written,
		      (unsigned long long)(d->plain.max_size > d->nested.max_size ? d->plain.max_size
										  : d->nested.max_size),
		      (unsigned long long)(d->nested.events && d->nested.min_size < d->plain.min_size
						   ? d->nested.min_size
						   : d->plain.min_size),
		      (unsigned long long)read, (unsigned long long)lost,
		      (unsigned long long)(read + lost), (unsigned long long)total_len,
		      (unsigned long long)total_size);

	assert_true(d->plain.events > 0);
	assert_true(d->nested.events > 0);
	/* 4. every event written was read or reported lost */
	assert_int_equal(lost + read, events);
	/* 3. without loss, byte totals match exactly */
	if (lost == 0) {
		assert_int_equal(total_len, alloc);
		assert_int_equal(total_size, written);
	}
	if (expect_loss > 0)
		assert_true(lost > 0);
	if (expect_loss == 0)
		assert_int_equal(lost, 0);
	/* the library agrees with what we counted */
	assert_int_equal(st.committed, events);
	assert_int_equal(st.overrun, lost);
	assert_int_equal(st.read_events, read);
	assert_int_equal(st.entries, 0);
	assert_int_equal(st.dropped_events + st.commit_overrun + st.nest_overflow + st.rejected_events, 0);
}

/* expect_loss: 1 must lose events, 0 must not, -1 either. */
static void run_startup_test(size_t size_per_cpu, double seconds, long hammer_us, int expect_loss)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	pthread_t wt[NCPU], ht;
	struct sigaction sa;
	sigset_t block;
	unsigned cpu;

	cfg.ncpu = NCPU;
	cfg.size_per_cpu = size_per_cpu;
	cfg.mode = RINGBUF_MODE_OVERWRITE;
	assert_int_equal(ringbuf_create(&cfg, &g_rb), 0);
	ringbuf_record_off(g_rb);
	memset(g_data, 0, sizeof g_data);
	atomic_store(&g_started, 0);
	atomic_store(&g_stop_writers, 0);
	atomic_store(&g_stop_hammer, 0);
	atomic_store(&g_kills, 0);

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);

	for (cpu = 0; cpu < NCPU; cpu++) {
		g_data[cpu].cpu = cpu;
		assert_int_equal(pthread_create(&wt[cpu], NULL, rb_tester, &g_data[cpu]), 0);
	}
	for (cpu = 0; cpu < NCPU; cpu++)
		while (!atomic_load(&g_data[cpu].ready))
			sleep_us(100);
	/* the hammer (and this thread) never take SIGUSR1 themselves */
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &block, NULL);
	assert_int_equal(pthread_create(&ht, NULL, rb_hammer, &hammer_us), 0);

	/* the writers have been failing (recording off); now start for real */
	ringbuf_record_on(g_rb);
	atomic_store_explicit(&g_started, 1, memory_order_release);
	{
		/* At least `seconds`, and then until every CPU buffer has what the
		 * checks need (plain and nested events; for expect_loss 1, twice its
		 * size written, so that it was overwritten): counted, not timed, so
		 * a slow or loaded machine only makes the run longer. */
		struct timespec t0, t;
		bool done = false;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			sleep_us(10000);
			clock_gettime(CLOCK_MONOTONIC, &t);
			if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 < seconds)
				continue;
			done = true;
			for (cpu = 0; cpu < NCPU; cpu++) {
				struct tdata *d = &g_data[cpu];
				if (atomic_load(&d->plain_done) == 0 || atomic_load(&d->nested_done) == 0 ||
				    (expect_loss > 0 && atomic_load(&d->used) < 2 * (uint64_t)size_per_cpu))
					done = false;
			}
		} while (!done);
	}

	/* stop the hammer first so that no signal targets a thread that exited */
	atomic_store_explicit(&g_stop_hammer, 1, memory_order_release);
	pthread_join(ht, NULL);
	atomic_store_explicit(&g_stop_writers, 1, memory_order_release);
	for (cpu = 0; cpu < NCPU; cpu++)
		pthread_join(wt[cpu], NULL);
	pthread_sigmask(SIG_UNBLOCK, &block, NULL);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGUSR1, &sa, NULL);

	print_message("  %zu KiB per CPU, %.1f s, %llu signals sent\n", size_per_cpu >> 10, seconds,
		      (unsigned long long)atomic_load(&g_kills));
	for (cpu = 0; cpu < NCPU; cpu++)
		check_cpu(cpu, expect_loss);
	print_message("  Ring buffer PASSED!\n");
	ringbuf_destroy(g_rb);
	g_rb = NULL;
}

/* The kernel's configuration: 1 MiB per CPU, writers and hammer as fast as
 * the sleeps allow; whether the buffer overflows depends on the machine. */
static void startup_test_1mib_per_cpu_writers_and_signal_hammer(void **state)
{
	(void)state;
	g_budget = 0;
	run_startup_test((size_t)1 << 20, test_seconds(1.5), 150, -1);
}

/* 4 MiB per CPU and a 3 MiB write budget: nothing can be lost, so the exact
 * byte totals (allocated == read lengths, written == read sizes) are checked. */
static void startup_test_no_loss_byte_totals_are_exact(void **state)
{
	(void)state;
	g_budget = (uint64_t)3 << 20;
	run_startup_test((size_t)4 << 20, test_seconds(0.75), 100, 0);
	g_budget = 0;
}

/* 32 KiB per CPU: the writers overwrite the oldest pages many times, so the
 * "lost" side of read + lost == written is exercised. */
static void startup_test_small_buffer_overwrites_and_reports_every_loss(void **state)
{
	(void)state;
	g_budget = 0;
	run_startup_test((size_t)32 << 10, test_seconds(0.75), 60, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(startup_test_1mib_per_cpu_writers_and_signal_hammer),
		cmocka_unit_test(startup_test_no_loss_byte_totals_are_exact),
		cmocka_unit_test(startup_test_small_buffer_overwrites_and_reports_every_loss),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
