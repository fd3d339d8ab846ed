/* test_reader_lock.c - the per-CPU reader lock: bounded, dead holders taken over
 * SPDX-License-Identifier: MIT
 *
 * Counts, not time: RINGBUF_TESTING counts the yields and sleeps a reader
 * call makes waiting for the lock (ringbuf__rl_waits) and the locks taken
 * from a holder found gone (ringbuf__rl_takeovers).
 *
 *  1. A forked child sharing a file-backed block takes cpu 0's reader lock
 *     and is SIGKILLed: the parent's reader calls take the lock over after
 *     the yields (RINGBUF__RL_YIELDS), both while the child is a zombie and
 *     after it was reaped.
 *  2. A child killed in the middle of a page swap (test point READER_S2,
 *     reader page prepared, ring not yet changed): the parent takes the lock
 *     over, the swap is repaired, every event is read back in order.
 *  3. Lock words left in a file, reopened without RINGBUF_OPEN_RECOVER: a
 *     dead tid; this thread's own tid with another start time (a reused
 *     tid); garbage with tid 0: each is taken over.
 *  4. A live holder (another thread) keeps the lock: RINGBUF_EBUSY after
 *     exactly RINGBUF__RL_YIELDS + RINGBUF__RL_SLEEPS waits, never taken over;
 *     the same thread again (a handler interrupting a reader): RINGBUF_EBUSY
 *     with no wait; a holder of another pid namespace (tag differs) is never
 *     judged (RINGBUF_EBUSY after the bound).
 */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"
#include "internal.h" /* the implementation's private names (IMPL: shared) */

#include <errno.h>
#include <pthread.h>
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
/* LDFLAGS: -lrt */

static char g_path[64];
static struct ringbuf *g_rb;

static struct ringbuf *mkfile(void)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	int fd;
	strcpy(g_path, "/tmp/test_reader_lock_XXXXXX");
	fd = mkstemp(g_path);
	assert_true(fd >= 0);
	close(fd);
	cfg.ncpu = 2;
	cfg.page_size = 1024;
	cfg.size_per_cpu = 8 * 1024;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
	assert_int_equal(ringbuf_create_file(g_path, &cfg, &rb), 0);
	g_rb = rb;
	return rb;
}

static int teardown(void **state)
{
	(void)state;
	ringbuf__set_testpoint_hook(NULL, NULL);
	ringbuf_destroy(g_rb);
	g_rb = NULL;
	if (g_path[0])
		unlink(g_path);
	g_path[0] = 0;
	return 0;
}

static void put(struct ringbuf *rb, unsigned cpu, uint32_t seq)
{
	uint32_t buf[25];
	memset(buf, 0, sizeof buf);
	buf[0] = seq;
	assert_int_equal(ringbuf_write(rb, cpu, buf, sizeof buf), 0);
}

static void reset_counts(void)
{
	atomic_store(&ringbuf__rl_waits, 0);
	atomic_store(&ringbuf__rl_takeovers, 0);
}

/* Read cpu to the end: the sequence numbers from `from` on, in order. */
static uint32_t drain(struct ringbuf *rb, unsigned cpu, uint32_t from)
{
	struct ringbuf_record rec;
	int r;
	while ((r = ringbuf_consume(rb, cpu, &rec)) == 1) {
		uint32_t seq;
		memcpy(&seq, rec.data, sizeof seq);
		assert_int_equal(seq, from);
		from++;
	}
	assert_int_equal(r, 0);
	return from;
}

/* A child that opens the block, takes cpu 0's reader lock, reports and waits
 * to be killed. */
static pid_t child_holding_the_lock(void)
{
	int p[2];
	char c;
	pid_t pid;
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ringbuf *rb = NULL;
		close(p[0]);
		if (ringbuf_open_file(g_path, RINGBUF_OPEN_RDWR, &rb) != 0)
			_exit(2);
		if (ringbuf__reader_lock(rb, ringbuf__cpu(rb, 0)) != 0)
			_exit(3);
		(void)!write(p[1], "x", 1);
		for (;;)
			pause();
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	return pid;
}

/* ---- 1. ------------------------------------------------------------------ */

static void reader_lock_of_a_killed_process_is_taken_over(void **state)
{
	struct ringbuf *rb = mkfile();
	pid_t pid;
	int st, round;
	(void)state;
	for (round = 0; round < 2; round++) {
		put(rb, 0, 0);
		pid = child_holding_the_lock();
		assert_true(atomic_load(&ringbuf__cpu(rb, 0)->reader_lock) != 0);
		assert_int_equal(kill(pid, SIGKILL), 0);
		if (round == 1) {
			assert_int_equal(waitpid(pid, &st, 0), pid);
		} else {
			/* a zombie: wait until it is one, without reaping it */
			siginfo_t si;
			memset(&si, 0, sizeof si);
			assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
		}
		reset_counts();
		assert_int_equal(drain(rb, 0, 0), 1);
		print_message("  round %d (%s): %llu waits, %llu takeovers\n", round,
			      round ? "reaped" : "zombie", (unsigned long long)atomic_load(&ringbuf__rl_waits),
			      (unsigned long long)atomic_load(&ringbuf__rl_takeovers));
		assert_int_equal(atomic_load(&ringbuf__rl_takeovers), 1);
		assert_true(atomic_load(&ringbuf__rl_waits) <= RINGBUF__RL_YIELDS);
		assert_int_equal(atomic_load(&ringbuf__cpu(rb, 0)->reader_lock), 0);
		if (round == 0)
			assert_int_equal(waitpid(pid, &st, 0), pid);
	}
}

/* ---- 2. ------------------------------------------------------------------ */

static int s2_fd = -1;

static void s2_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	(void)rb;
	(void)cpu;
	(void)ctx;
	if (point == RINGBUF__TP_READER_S2 && s2_fd >= 0) {
		(void)!write(s2_fd, "x", 1);
		for (;;)
			pause();
	}
}

static void reader_killed_in_a_page_swap_is_taken_over_and_repaired(void **state)
{
	struct ringbuf *rb = mkfile();
	uint32_t seq, n = 0;
	int p[2], st;
	pid_t pid;
	char c;
	(void)state;
	for (seq = 0; seq < 25; seq++) /* about 3 pages */
		put(rb, 0, seq);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ringbuf *crb = NULL;
		struct ringbuf_record rec;
		close(p[0]);
		if (ringbuf_open_file(g_path, RINGBUF_OPEN_RDWR, &crb) != 0)
			_exit(2);
		s2_fd = p[1];
		ringbuf__set_testpoint_hook(s2_hook, NULL);
		(void)ringbuf_consume(crb, 0, &rec); /* stops in the swap */
		_exit(4);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	reset_counts();
	n = drain(rb, 0, 0);
	assert_int_equal(atomic_load(&ringbuf__rl_takeovers), 1);
	assert_int_equal(n, 25);
	/* the ring works on: more pages, read back */
	for (seq = 25; seq < 60; seq++)
		put(rb, 0, seq);
	assert_int_equal(drain(rb, 0, 25), 60);
	assert_int_equal(ringbuf__validate(rb, rb->total_size), 0);
}

/* ---- 3. ------------------------------------------------------------------ */

static uint64_t id_of(uint32_t tid, uint32_t ns, uint32_t stamp)
{
	return (uint64_t)stamp << 32 | (uint64_t)ns << 22 | tid;
}

static void stale_lock_words_in_a_reopened_file_are_taken_over(void **state)
{
	struct ringbuf *rb = mkfile();
	uint64_t me = ringbuf__rl_self(), words[3];
	uint32_t ns = RINGBUF__RL_NS(me), tid = (uint32_t)me & RINGBUF__RL_TID;
	pid_t dead;
	int st, i;
	(void)state;
	dead = fork();
	assert_true(dead >= 0);
	if (dead == 0)
		_exit(0);
	assert_int_equal(waitpid(dead, &st, 0), dead);
	words[0] = id_of((uint32_t)dead, ns, 12345);                     /* a dead tid */
	words[1] = id_of(tid, ns, (uint32_t)(me >> 32) + 1);             /* our tid, reused */
	words[2] = id_of(0, 0x155, 0xdeadbeef);                          /* garbage */
	for (i = 0; i < 3; i++) {
		put(rb, 0, 0);
		atomic_store(&ringbuf__cpu(rb, 0)->reader_lock, words[i]);
		ringbuf_destroy(rb);
		g_rb = NULL;
		assert_int_equal(ringbuf_open_file(g_path, RINGBUF_OPEN_RDWR, &rb), 0);
		g_rb = rb;
		assert_true(atomic_load(&ringbuf__cpu(rb, 0)->reader_lock) == words[i]);
		reset_counts();
		assert_int_equal(drain(rb, 0, 0), 1);
		assert_int_equal(atomic_load(&ringbuf__rl_takeovers), 1);
		assert_true(atomic_load(&ringbuf__rl_waits) <= RINGBUF__RL_YIELDS);
	}
	/* a private copy (read-only open): a holder not of this process */
	put(rb, 0, 0);
	atomic_store(&ringbuf__cpu(rb, 0)->reader_lock, words[0]);
	ringbuf_destroy(rb);
	g_rb = NULL;
	assert_int_equal(ringbuf_open_file(g_path, 0, &rb), 0);
	g_rb = rb;
	reset_counts();
	assert_int_equal(drain(rb, 0, 0), 1);
	assert_int_equal(atomic_load(&ringbuf__rl_takeovers), 1);
}

/* ---- 4. ------------------------------------------------------------------ */

struct holder {
	struct ringbuf *rb;
	sem_t locked, release;
};

static void *holder_main(void *arg)
{
	struct holder *h = arg;
	if (ringbuf__reader_lock(h->rb, ringbuf__cpu(h->rb, 0)) == 0) {
		sem_post(&h->locked);
		sem_wait(&h->release);
		ringbuf__reader_unlock(ringbuf__cpu(h->rb, 0));
	} else {
		sem_post(&h->locked);
	}
	return NULL;
}

static void live_holder_gives_ebusy_after_the_bound_and_is_never_taken_over(void **state)
{
	struct ringbuf *rb = mkfile();
	struct ringbuf_record rec;
	struct holder h;
	pthread_t t;
	uint64_t me, other;
	(void)state;
	put(rb, 0, 0);
	h.rb = rb;
	sem_init(&h.locked, 0, 0);
	sem_init(&h.release, 0, 0);
	assert_int_equal(pthread_create(&t, NULL, holder_main, &h), 0);
	sem_wait(&h.locked);
	reset_counts();
	assert_int_equal(ringbuf_consume(rb, 0, &rec), RINGBUF_EBUSY);
	assert_int_equal(atomic_load(&ringbuf__rl_waits), RINGBUF__RL_YIELDS + RINGBUF__RL_SLEEPS);
	assert_int_equal(atomic_load(&ringbuf__rl_takeovers), 0);
	sem_post(&h.release);
	pthread_join(t, NULL);
	/* the same thread holds it: at once */
	assert_int_equal(ringbuf__reader_lock(rb, ringbuf__cpu(rb, 0)), 0);
	reset_counts();
	assert_int_equal(ringbuf_consume(rb, 0, &rec), RINGBUF_EBUSY);
	assert_int_equal(atomic_load(&ringbuf__rl_waits), 0);
	ringbuf__reader_unlock(ringbuf__cpu(rb, 0));
	/* another pid namespace's holder (tag differs): never judged */
	me = ringbuf__rl_self();
	other = id_of(1u << 21, RINGBUF__RL_NS(me) ^ 1u, 777);
	atomic_store(&ringbuf__cpu(rb, 0)->reader_lock, other);
	reset_counts();
	assert_int_equal(ringbuf_consume(rb, 0, &rec), RINGBUF_EBUSY);
	assert_int_equal(atomic_load(&ringbuf__rl_takeovers), 0);
	assert_int_equal(atomic_load(&ringbuf__rl_waits), RINGBUF__RL_YIELDS + RINGBUF__RL_SLEEPS);
	atomic_store(&ringbuf__cpu(rb, 0)->reader_lock, 0);
	assert_int_equal(drain(rb, 0, 0), 1);
	sem_destroy(&h.locked);
	sem_destroy(&h.release);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(reader_lock_of_a_killed_process_is_taken_over, teardown),
		cmocka_unit_test_teardown(reader_killed_in_a_page_swap_is_taken_over_and_repaired, teardown),
		cmocka_unit_test_teardown(stale_lock_words_in_a_reopened_file_are_taken_over, teardown),
		cmocka_unit_test_teardown(live_holder_gives_ebusy_after_the_bound_and_is_never_taken_over,
					  teardown),
	};
	alarm(300);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
