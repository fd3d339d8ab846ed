/* test_wait.c - ringbuf_wait: no lost wake-up, bounded sleeps, futex calls
 * SPDX-License-Identifier: MIT
 *
 * Deterministic: the test points of ringbuf_wait (RINGBUF__TP_WAIT_REGISTER,
 * _ARMED, _SLEEP) stop a waiter at an exact step while another "thread"
 * acts, and semaphores order the threads. A waiter that should be woken but
 * sleeps on is found by a bounded wait for its return (HANG_S seconds, far
 * beyond any real wake-up: only a true hang reaches it; it fails the test and
 * wakes the waiter so that the test ends). No assertion on elapsed time.
 *
 *  1. The lowest watermark is not lost when the last other waiter leaves and
 *     comes back (with a higher one) while a waiter registers (issue 11.5).
 *  2. A waiter for one CPU whose arming is followed by another CPU's commit
 *     (which takes the wake) is still woken by its own CPU's commit.
 *  3. Three waiters with different watermarks, infinite timeouts: each
 *     returns 1 when the writer reaches its watermark, not before.
 *  4. 256 CPUs: RINGBUF_ALL_CPUS and a high CPU, data and watermark.
 *  5. A timed wait on an empty buffer makes a bounded number of futex calls
 *     (32-bit with 64-bit time_t: the futex_time64 call, issue 12.2).
 *  6. membarrier unavailable (ENOSYS) and every futex wake lost: a waiter
 *     with no timeout still returns 1 (it sleeps in bounded slices).
 *  7. A file-backed (shared) block: waiting uses MEMBARRIER_CMD_GLOBAL_EXPEDITED
 *     (the block's openers registered for it); a writer in a child process
 *     wakes the parent's waiter.
 *  8. Waiters for one CPU (data, and a watermark) are not woken by 1,000
 *     commits on another CPU: no FUTEX_WAKE (issue 22, performance: before,
 *     such commits cleared the armed bits and woke them nearly every time);
 *     their own CPU's commits still wake them, also a writer's
 *     RINGBUF_CPU_CURRENT commit (the CPU is told by the buffer, not the
 *     argument).
 *
 * syscall() is interposed in this executable to count the futex calls and to
 * make membarrier fail / drop futex wakes on demand.
 */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"
#include "internal.h" /* the implementation's private names (IMPL: shared) */

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
/* LDFLAGS: -ldl -lrt */

#define HANG_S 20
#ifndef RINGBUF__WAIT_SLICE_MS
#define RINGBUF__WAIT_SLICE_MS 10 /* the implementation part defines it (10 ms) */
#endif /* only a real hang waits this long */

/* ---- syscall interposition ------------------------------------------------ */

static long (*real_syscall)(long, ...);
static _Atomic(int) fail_membarrier;   /* membarrier: -1 ENOSYS */
static _Atomic(int) fail_register;     /* membarrier REGISTER_GLOBAL_EXPEDITED: -1 EPERM */
static _Atomic(int) drop_wakes;        /* FUTEX_WAKE: not made (a lost wake) */
static _Atomic(uint64_t) futex_waits;  /* FUTEX_WAIT calls */
static _Atomic(uint64_t) futex_wakes;  /* FUTEX_WAKE calls */
static _Atomic(uint64_t) futex_waits_unbounded; /* ... without a timeout */
static _Atomic(uint64_t) futex_wait_max_ns;     /* longest timeout asked for */
static _Atomic(uint64_t) membarrier_cmds[64];   /* calls by command (bit number) */

static uint64_t ts_ns(long n, const void *ts)
{
#ifdef SYS_futex_time64
	if (n == SYS_futex_time64) {
		const int64_t *t = ts;
		return (uint64_t)t[0] * 1000000000ull + (uint64_t)t[1];
	}
#endif
	(void)n;
	{
		const long *t = ts; /* SYS_futex: the kernel's (long, long) */
		return (uint64_t)t[0] * 1000000000ull + (uint64_t)t[1];
	}
}

long syscall(long n, ...)
{
	long a[6];
	va_list ap;
	int i;
	va_start(ap, n);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real_syscall)
		*(void **)&real_syscall = dlsym(RTLD_NEXT, "syscall");
	if (n == SYS_membarrier) {
		int cmd = (int)a[0], b = 0;
		while (b < 63 && (1 << b) < cmd)
			b++;
		if (cmd > 0)
			atomic_fetch_add(&membarrier_cmds[b], 1);
		if (atomic_load(&fail_membarrier) && cmd != 0) {
			errno = ENOSYS;
			return -1;
		}
		if (atomic_load(&fail_register) && cmd == 4) {
			errno = EPERM;
			return -1;
		}
	}
	if (n == SYS_futex
#ifdef SYS_futex_time64
	    || n == SYS_futex_time64
#endif
	) {
		int op = (int)a[1] & 0x7f;
		if (op == 0) { /* FUTEX_WAIT */
			atomic_fetch_add(&futex_waits, 1);
			if (!a[3]) {
				atomic_fetch_add(&futex_waits_unbounded, 1);
			} else {
				uint64_t ns = ts_ns(n, (const void *)a[3]), m = atomic_load(&futex_wait_max_ns);
				while (ns > m && !atomic_compare_exchange_weak(&futex_wait_max_ns, &m, ns))
					;
			}
		} else if (op == 1) {
			atomic_fetch_add(&futex_wakes, 1);
			if (atomic_load(&drop_wakes))
				return 0;
		}
	}
	return real_syscall(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}

static void reset_counts(void)
{
	int i;
	atomic_store(&futex_waits, 0);
	atomic_store(&futex_waits_unbounded, 0);
	atomic_store(&futex_wait_max_ns, 0);
	for (i = 0; i < 64; i++)
		atomic_store(&membarrier_cmds[i], 0);
}

/* ---- helpers ---------------------------------------------------------------- */

static struct ringbuf *g_rb;

static struct ringbuf *mk(unsigned ncpu, size_t page, unsigned npages)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	cfg.ncpu = ncpu;
	cfg.page_size = page;
	cfg.size_per_cpu = page * npages;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	assert_int_equal(ringbuf_nr_pages(rb), npages);
	g_rb = rb;
	return rb;
}

static int teardown(void **state)
{
	(void)state;
	ringbuf__set_testpoint_hook(NULL, NULL);
	atomic_store(&fail_membarrier, 0);
	atomic_store(&fail_register, 0);
	atomic_store(&drop_wakes, 0);
	ringbuf_destroy(g_rb);
	g_rb = NULL;
	return 0;
}

static void put(struct ringbuf *rb, unsigned cpu)
{
	char buf[100];
	memset(buf, 0x5a, sizeof buf);
	assert_int_equal(ringbuf_write(rb, cpu, buf, sizeof buf), 0);
}

/* Write on cpu until it holds `pages` dirty pages (what a watermark counts). */
static void fill_to(struct ringbuf *rb, unsigned cpu, uint32_t pages)
{
	int n = 0;
	while (ringbuf__dirty_pages(ringbuf__cpu(rb, cpu)) < pages) {
		put(rb, cpu);
		assert_true(++n < 100000);
	}
}

/* sem_wait bounded by HANG_S: false on a hang */
static bool sem_wait_hang(sem_t *s)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += HANG_S;
	while (sem_timedwait(s, &ts) != 0)
		if (errno != EINTR)
			return false;
	return true;
}

static void watchdog(int sig)
{
	(void)sig;
	static const char m[] = "test_wait: watchdog: a test hung\n";
	(void)!write(2, m, sizeof m - 1);
	_exit(3);
}

/* ---- waiter threads with roles -------------------------------------------- */

#define NW 4
struct waiter {
	unsigned cpu;
	int pct;
	int ret, ret0;
	int twice;        /* wait, and after the first return wait again */
	_Atomic(int) done;
	sem_t sleeping;   /* posted at each RINGBUF__TP_WAIT_SLEEP */
	sem_t returned;   /* posted when the (first) wait returned */
	sem_t finished;   /* posted when the thread is done */
};
static struct waiter W[NW];
static _Thread_local int my_role = -1;

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	my_role = (int)(w - W);
	w->ret0 = ringbuf_wait(g_rb, w->cpu, w->pct, -1);
	sem_post(&w->returned);
	w->ret = w->twice ? ringbuf_wait(g_rb, w->cpu, w->pct, -1) : w->ret0;
	atomic_store(&w->done, 1);
	sem_post(&w->finished);
	return NULL;
}

static void waiters_init(void)
{
	int i;
	memset(W, 0, sizeof W);
	for (i = 0; i < NW; i++) {
		sem_init(&W[i].sleeping, 0, 0);
		sem_init(&W[i].returned, 0, 0);
		sem_init(&W[i].finished, 0, 0);
	}
}

static pthread_t start_waiter(int i, unsigned cpu, int pct, int twice)
{
	pthread_t t;
	W[i].cpu = cpu;
	W[i].pct = pct;
	W[i].twice = twice;
	assert_int_equal(pthread_create(&t, NULL, waiter_main, &W[i]), 0);
	return t;
}

/* A waiter that does not return: fail after waking everyone (so the test
 * ends) and joining. */
static void expect_return(int i, pthread_t *ts, int nt, const char *why)
{
	int k;
	if (sem_wait_hang(&W[i].finished))
		return;
	ringbuf_wake_waiters(g_rb);
	for (k = 0; k < nt; k++)
		pthread_join(ts[k], NULL);
	fail_msg("waiter %d (cpu %u, %d%%) did not return: %s", i, W[i].cpu, W[i].pct, why);
}

/* ---- 1. lowest watermark lost at re-registration ------------------------------ */

static _Atomic(int) t1_fired, t1_bad;

static void t1_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	(void)cpu;
	(void)ctx;
	if (my_role < 0)
		return;
	if (point == RINGBUF__TP_WAIT_SLEEP)
		sem_post(&W[my_role].sleeping);
	if (point == RINGBUF__TP_WAIT_REGISTER && my_role == 0 && !atomic_exchange(&t1_fired, 1)) {
		/* waiter 0 (2 pages) is about to register: waiter 1 (8 pages),
		 * the only other one, leaves now and comes back */
		ringbuf_wake_waiters(rb);
		if (!sem_wait_hang(&W[1].returned) || !sem_wait_hang(&W[1].sleeping))
			atomic_store(&t1_bad, 1);
	}
}

static void lowest_watermark_survives_the_last_other_waiter_leaving_and_returning(void **state)
{
	struct ringbuf *rb = mk(1, 1024, 10);
	pthread_t t[2];
	(void)state;
	waiters_init();
	atomic_store(&t1_fired, 0);
	ringbuf__set_testpoint_hook(t1_hook, NULL);
	t[1] = start_waiter(1, 0, 80, 1); /* 8 pages; woken once by the hook, waits again */
	assert_true(sem_wait_hang(&W[1].sleeping));
	t[0] = start_waiter(0, 0, 20, 0); /* 2 pages */
	assert_true(sem_wait_hang(&W[0].sleeping));
	assert_false(atomic_load(&t1_bad));
	assert_int_equal(W[1].ret0, 0); /* ringbuf_wake_waiters */
	fill_to(rb, 0, 2);
	expect_return(0, t, 2, "2 dirty pages reached its watermark (lost wake-up)");
	assert_int_equal(W[0].ret, 1);
	assert_false(atomic_load(&W[1].done));
	fill_to(rb, 0, 8);
	expect_return(1, t, 2, "8 dirty pages reached its watermark (lost wake-up)");
	assert_int_equal(W[1].ret, 1);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	assert_true(atomic_load(&ringbuf__sh(rb)->waiters) == 0);
}

/* ---- 2. another CPU's commit takes the wake while the waiter arms ------------ */

static _Atomic(int) t2_fired;

static void t2_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	(void)cpu;
	(void)ctx;
	if (my_role < 0)
		return;
	if (point == RINGBUF__TP_WAIT_SLEEP)
		sem_post(&W[my_role].sleeping);
	if (point == RINGBUF__TP_WAIT_ARMED && !atomic_exchange(&t2_fired, 1))
		put(rb, 1); /* as a writer on CPU 1 would, right after the arming */
}

static void cpu_waiter_is_woken_after_another_cpus_commit_took_a_wake(void **state)
{
	struct ringbuf *rb = mk(2, 1024, 4);
	pthread_t t;
	(void)state;
	waiters_init();
	atomic_store(&t2_fired, 0);
	ringbuf__set_testpoint_hook(t2_hook, NULL);
	t = start_waiter(0, 0, 0, 0); /* data on CPU 0 */
	assert_true(sem_wait_hang(&W[0].sleeping));
	assert_true(atomic_load(&t2_fired));
	put(rb, 0);
	expect_return(0, &t, 1, "CPU 0 has an event (lost wake-up)");
	assert_int_equal(W[0].ret, 1);
	pthread_join(t, NULL);
	assert_true(atomic_load(&ringbuf__sh(rb)->waiters) == 0);
}

/* ---- 3. several watermarks ---------------------------------------------------- */

static void sleep_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	(void)rb;
	(void)cpu;
	(void)ctx;
	if (my_role >= 0 && point == RINGBUF__TP_WAIT_SLEEP)
		sem_post(&W[my_role].sleeping);
}

static void waiters_with_different_watermarks_each_return_at_theirs(void **state)
{
	struct ringbuf *rb = mk(1, 1024, 10);
	static const int pct[3] = {40, 20, 60}; /* 4, 2 and 6 pages */
	static const int order[3] = {1, 0, 2};
	pthread_t t[3];
	int i, k;
	(void)state;
	waiters_init();
	ringbuf__set_testpoint_hook(sleep_hook, NULL);
	for (i = 0; i < 3; i++) {
		t[i] = start_waiter(i, 0, pct[i], 0);
		assert_true(sem_wait_hang(&W[i].sleeping));
	}
	for (k = 0; k < 3; k++) {
		i = order[k];
		fill_to(rb, 0, (uint32_t)pct[i] / 10);
		expect_return(i, t, 3, "its watermark was reached (lost wake-up)");
		assert_int_equal(W[i].ret, 1);
		assert_true(ringbuf__dirty_pages(ringbuf__cpu(rb, 0)) >= (uint32_t)pct[i] / 10);
		/* the ones with higher watermarks cannot have returned */
		for (int j = k + 1; j < 3; j++)
			assert_false(atomic_load(&W[order[j]].done));
	}
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	assert_true(atomic_load(&ringbuf__sh(rb)->waiters) == 0);
}

/* ---- 4. 256 CPUs ----------------------------------------------------------- */

static void wait_on_256_cpus(void **state)
{
	struct ringbuf *rb = mk(256, 256, 4);
	struct ringbuf_record rec;
	pthread_t t;
	(void)state;
	waiters_init();
	ringbuf__set_testpoint_hook(sleep_hook, NULL);
	/* any CPU, woken by the last one */
	t = start_waiter(0, RINGBUF_ALL_CPUS, 0, 0);
	assert_true(sem_wait_hang(&W[0].sleeping));
	put(rb, 255);
	expect_return(0, &t, 1, "CPU 255 has an event");
	assert_int_equal(W[0].ret, 1);
	pthread_join(t, NULL);
	assert_int_equal(ringbuf_consume(rb, 255, &rec), 1);
	assert_int_equal(ringbuf_consume(rb, 255, &rec), 0);
	/* CPU 255 only: CPU 254's event does not make it return */
	t = start_waiter(1, 255, 0, 0);
	assert_true(sem_wait_hang(&W[1].sleeping));
	atomic_store(&futex_wakes, 0);
	put(rb, 254);
	/* not even woken early (before issue 22's filter it was, and slept again) */
	assert_int_equal(atomic_load(&futex_wakes), 0);
	assert_false(atomic_load(&W[1].done));
	put(rb, 255);
	expect_return(1, &t, 1, "CPU 255 has an event");
	assert_int_equal(W[1].ret, 1);
	pthread_join(t, NULL);
	/* a watermark on any CPU, reached on CPU 200 */
	t = start_waiter(2, RINGBUF_ALL_CPUS, 50, 0);
	assert_true(sem_wait_hang(&W[2].sleeping));
	fill_to(rb, 200, 2);
	expect_return(2, &t, 1, "CPU 200 reached the watermark");
	assert_int_equal(W[2].ret, 1);
	pthread_join(t, NULL);
	assert_int_equal(ringbuf_wait(rb, 255, 0, 0), 1);
	assert_int_equal(ringbuf_wait(rb, 199, 0, 0), 0);
	assert_int_equal(ringbuf_wait(rb, 256, 0, 0), RINGBUF_EINVAL);
	assert_true(atomic_load(&ringbuf__sh(rb)->waiters) == 0);
}

/* ---- 5. futex calls of a timed wait --------------------------------------------- */

static void timed_wait_makes_a_bounded_number_of_futex_calls(void **state)
{
	struct ringbuf *rb = mk(1, 1024, 4);
	(void)state;
	reset_counts();
	assert_int_equal(ringbuf_wait(rb, 0, 0, 200), 0);
	print_message("  ringbuf_wait(200 ms): %llu futex wait calls, longest timeout %llu us\n",
		      (unsigned long long)atomic_load(&futex_waits),
		      (unsigned long long)atomic_load(&futex_wait_max_ns) / 1000);
	/* one sleep to the deadline, maybe one more of what was left (a 32-bit
	 * struct timespec read with the wrong layout made thousands) */
	assert_true(atomic_load(&futex_waits) >= 1);
	assert_true(atomic_load(&futex_waits) <= 4);
	assert_int_equal(atomic_load(&futex_waits_unbounded), 0);
	assert_true(atomic_load(&futex_wait_max_ns) <= 200000000ull);
}

/* ---- 6. no membarrier, every wake lost ----------------------------------------- */

static void wait_without_membarrier_sleeps_in_bounded_slices(void **state)
{
	struct ringbuf *rb = mk(1, 1024, 4);
	pthread_t t;
	(void)state;
	waiters_init();
	ringbuf__set_testpoint_hook(sleep_hook, NULL);
	reset_counts();
	atomic_store(&fail_membarrier, 1);
	atomic_store(&drop_wakes, 1);
	t = start_waiter(0, 0, 0, 0);
	assert_true(sem_wait_hang(&W[0].sleeping));
	put(rb, 0); /* its wake is lost */
	if (!sem_wait_hang(&W[0].finished)) {
		atomic_store(&drop_wakes, 0);
		ringbuf_wake_waiters(rb);
		pthread_join(t, NULL);
		fail_msg("without membarrier and with the wake lost, the waiter slept on");
	}
	pthread_join(t, NULL);
	assert_int_equal(W[0].ret, 1);
	print_message("  %llu futex waits, longest %llu us\n", (unsigned long long)atomic_load(&futex_waits),
		      (unsigned long long)atomic_load(&futex_wait_max_ns) / 1000);
	assert_int_equal(atomic_load(&futex_waits_unbounded), 0);
	assert_true(atomic_load(&futex_wait_max_ns) <= RINGBUF__WAIT_SLICE_MS * 1000000ull);
	/* a timed wait too: slices, not one long sleep */
	reset_counts();
	assert_int_equal(ringbuf_wait(rb, 0, 100, 30), 0);
	assert_int_equal(atomic_load(&futex_waits_unbounded), 0);
	assert_true(atomic_load(&futex_wait_max_ns) <= RINGBUF__WAIT_SLICE_MS * 1000000ull);
}

/* ---- 7. a shared block ------------------------------------------------------------- */

static void shared_block_wait_uses_global_membarrier_and_a_child_wakes_it(void **state)
{
	char path[] = "/tmp/test_wait_XXXXXX";
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	pthread_t t;
	pid_t pid;
	int fd, st;
	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	cfg.ncpu = 2;
	cfg.page_size = 1024;
	cfg.size_per_cpu = 4096;
	reset_counts();
	assert_int_equal(ringbuf_create_file(path, &cfg, &rb), 0);
	g_rb = rb;
	/* the creator registered for MEMBARRIER_CMD_GLOBAL_EXPEDITED (4) */
	assert_true(atomic_load(&membarrier_cmds[2]) >= 1);
	waiters_init();
	ringbuf__set_testpoint_hook(sleep_hook, NULL);
	reset_counts();
	t = start_waiter(0, 1, 0, 0);
	assert_true(sem_wait_hang(&W[0].sleeping));
	/* GLOBAL_EXPEDITED (2) orders writers of other processes; the private
	 * command (8) would not */
	assert_true(atomic_load(&membarrier_cmds[1]) >= 1 || atomic_load(&membarrier_cmds[0]) >= 1);
	assert_int_equal(atomic_load(&membarrier_cmds[3]), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ringbuf *c = NULL;
		char buf[16] = "from the child";
		if (ringbuf_open_file(path, RINGBUF_OPEN_RDWR, &c) != 0)
			_exit(2);
		if (ringbuf_write(c, 1, buf, sizeof buf) != 0)
			_exit(3);
		ringbuf_destroy(c);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	expect_return(0, &t, 1, "the child's event is there");
	assert_int_equal(W[0].ret, 1);
	pthread_join(t, NULL);
	ringbuf__set_testpoint_hook(NULL, NULL);
	unlink(path);
}

/* ---- 8. commits on another CPU do not wake a waiter for one CPU ---------------- */

static void commits_on_another_cpu_do_not_wake_a_waiter_for_one_cpu(void **state)
{
	struct ringbuf *rb = mk(2, 4096, 64);
	pthread_t t[2];
	uint64_t wakes;
	int i;
	(void)state;
	waiters_init();
	ringbuf__set_testpoint_hook(sleep_hook, NULL);
	t[0] = start_waiter(0, 0, 0, 0); /* data on CPU 0 */
	assert_true(sem_wait_hang(&W[0].sleeping));
	t[1] = start_waiter(1, 0, 1, 0); /* 1 dirty page on CPU 0 (1% of 64) */
	assert_true(sem_wait_hang(&W[1].sleeping));
	atomic_store(&futex_wakes, 0);
	for (i = 0; i < 1000; i++) /* 27 pages */
		put(rb, 1);
	wakes = atomic_load(&futex_wakes);
	print_message("FUTEX_WAKE calls for 1,000 commits on CPU 1, both waiters on CPU 0: %llu\n",
		      (unsigned long long)wakes);
	if (wakes != 0)
		fail_msg("1,000 commits on CPU 1 made %llu FUTEX_WAKE calls for waiters on CPU 0",
			 (unsigned long long)wakes);
	assert_false(atomic_load(&W[0].done));
	assert_false(atomic_load(&W[1].done));
	put(rb, 0);
	expect_return(0, t, 2, "CPU 0 has an event (lost wake-up)");
	assert_int_equal(W[0].ret, 1);
	fill_to(rb, 0, 1);
	expect_return(1, t, 2, "CPU 0 has a dirty page (lost wake-up)");
	assert_int_equal(W[1].ret, 1);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	assert_true(atomic_load(&ringbuf__sh(rb)->waiters) == 0);
}

static void a_current_cpu_commit_wakes_a_waiter_for_that_cpu(void **state)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	struct ringbuf *rb;
	cpu_set_t old, one;
	pthread_t t;
	int cpu, k;
	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof old, &old), 0);
	for (k = 0; k < CPU_SETSIZE && !CPU_ISSET(k, &old); k++)
		;
	CPU_ZERO(&one);
	CPU_SET(k, &one);
	if (n < 1 || n > 4096 || k == CPU_SETSIZE || sched_setaffinity(0, sizeof one, &one) != 0)
		skip();
	cpu = sched_getcpu();
	assert_int_equal(cpu, k);
	rb = mk((unsigned)(n > cpu ? n : cpu + 1), 4096, 4);
	waiters_init();
	ringbuf__set_testpoint_hook(sleep_hook, NULL);
	t = start_waiter(0, (unsigned)cpu, 0, 0);
	assert_true(sem_wait_hang(&W[0].sleeping));
	{
		char buf[16] = {0};
		assert_int_equal(ringbuf_write(rb, RINGBUF_CPU_CURRENT, buf, sizeof buf), 0);
	}
	expect_return(0, &t, 1, "a RINGBUF_CPU_CURRENT event on its CPU (lost wake-up)");
	assert_int_equal(W[0].ret, 1);
	pthread_join(t, NULL);
	assert_int_equal(sched_setaffinity(0, sizeof old, &old), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(lowest_watermark_survives_the_last_other_waiter_leaving_and_returning,
					  teardown),
		cmocka_unit_test_teardown(cpu_waiter_is_woken_after_another_cpus_commit_took_a_wake, teardown),
		cmocka_unit_test_teardown(waiters_with_different_watermarks_each_return_at_theirs, teardown),
		cmocka_unit_test_teardown(wait_on_256_cpus, teardown),
		cmocka_unit_test_teardown(timed_wait_makes_a_bounded_number_of_futex_calls, teardown),
		cmocka_unit_test_teardown(wait_without_membarrier_sleeps_in_bounded_slices, teardown),
		cmocka_unit_test_teardown(shared_block_wait_uses_global_membarrier_and_a_child_wakes_it,
					  teardown),
		cmocka_unit_test_teardown(commits_on_another_cpu_do_not_wake_a_waiter_for_one_cpu, teardown),
		cmocka_unit_test_teardown(a_current_cpu_commit_wakes_a_waiter_for_that_cpu, teardown),
	};
	signal(SIGALRM, watchdog);
	alarm(300);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
