/* sigutil.h - small helpers of the tests whose writers run in signal handlers
 * and threads (test_signal_writers.c, test_signal_safety.c, test_contexts.c,
 * test_fork.c, test_readers.c, test_file.c, test_filter_race.c, soak.c): payload mixing and checksums, the
 * thread id, the "IRQ"/"NMI" signal pair, per-thread timers, a semaphore wait
 * with a limit
 * SPDX-License-Identifier: MIT   (licence text at the end of ringbuf.h)
 *
 * Needs no cmocka (soak.c is not a cmocka test), and _GNU_SOURCE (syscall,
 * SIGEV_THREAD_ID). Everything is static inline, and async-signal-safe
 * except install_irq_nmi, thread_timer and sem_wait_ms: a test that does not
 * use a helper gets no warning for it.
 */
#ifndef RINGBUF_TESTS_SIGUTIL_H
#define RINGBUF_TESTS_SIGUTIL_H

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* A 32-bit integer hash (fill bytes that differ with every input bit). */
static inline uint32_t mix(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

/* FNV-1a over the len bytes at p but those at offsets [from, to) (where an
 * event keeps its own checksum). */
static inline uint32_t fnv1a_except(const unsigned char *p, uint32_t len, size_t from, size_t to)
{
	uint32_t h = 2166136261u;
	for (uint32_t i = 0; i < len; i++)
		if (i < from || i >= to)
			h = (h ^ p[i]) * 16777619u;
	return h;
}

/* FNV-1a over all the len bytes at p */
static inline uint32_t checksum(const unsigned char *p, uint32_t len)
{
	return fnv1a_except(p, len, 0, 0);
}

static inline pid_t my_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* irq handles irq_sig and nmi handles nmi_sig, both SA_RESTART: the "NMI"
 * stays deliverable inside the "IRQ" handler, the IRQ is blocked inside the
 * NMI's. */
static inline void install_irq_nmi(int irq_sig, void (*irq)(int), int nmi_sig, void (*nmi)(int))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = irq;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(irq_sig, &sa, NULL);
	sa.sa_handler = nmi;
	sigaddset(&sa.sa_mask, irq_sig);
	sigaction(nmi_sig, &sa, NULL);
}

/* A per-thread timer (CLOCK_MONOTONIC): signo to the thread tid every
 * period_ns ns, the first after first_ns. 0 with *tm set (timer_delete it),
 * or -1 if timer_create failed (errno says why). */
static inline int thread_timer(pid_t tid, int signo, int64_t period_ns, int64_t first_ns, timer_t *tm)
{
	struct sigevent sev;
	struct itimerspec its;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = signo;
	sev._sigev_un._tid = tid;
	if (timer_create(CLOCK_MONOTONIC, &sev, tm) != 0)
		return -1;
	its.it_interval.tv_sec = (time_t)(period_ns / 1000000000);
	its.it_interval.tv_nsec = (long)(period_ns % 1000000000);
	its.it_value.tv_sec = (time_t)(first_ns / 1000000000);
	its.it_value.tv_nsec = (long)(first_ns % 1000000000);
	timer_settime(*tm, 0, &its, NULL);
	return 0;
}

/* UNDER_TSAN: 1 when built with ThreadSanitizer (gcc or clang) */
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif
#ifndef UNDER_TSAN
#define UNDER_TSAN 0
#endif

/* Unblocks s1 and s2 in the calling thread if either is blocked: 1 if it
 * had to, 0 if not. Called from a writer's main flow (never from a handler),
 * where neither signal is ever blocked by the test or the library.
 *
 * Why: ThreadSanitizer's runtime (gcc 12's libtsan and clang 14's) defers an
 * asynchronous signal to its next safe point and runs the handler there with
 * every signal blocked, restoring the mask it saved. When our "NMI" arrives
 * while it runs the deferred "IRQ" handler, the nested delivery saves over
 * that mask, and the thread can return to its main flow with every signal
 * blocked for good: its timer signal then stays pending for ever and a test
 * waiting for "more than 100 IRQs" spins until it is killed (seen twice in
 * CI: test_signal_writers TIMEOUT after 300 s; /proc/PID/task/TID/status of
 * the writer said SigBlk fffffffe7ffbfeff with SIGUSR1 in SigPnd). A build
 * without TSan never needs this (the kernel restores the mask on sigreturn):
 * tests count the repairs and require 0 there. */
static inline int sig_unblock_pair(int s1, int s2)
{
	sigset_t cur, un;
	if (pthread_sigmask(SIG_BLOCK, NULL, &cur) != 0)
		return 0;
	if (!sigismember(&cur, s1) && !sigismember(&cur, s2))
		return 0;
	sigemptyset(&un);
	sigaddset(&un, s1);
	sigaddset(&un, s2);
	pthread_sigmask(SIG_UNBLOCK, &un, NULL);
	return 1;
}

/* sem_wait for at most ms milliseconds: 0, or -1 (timed out, or another
 * error); EINTR is waited through. ms < 0: no limit (a handshake that must
 * come: waiting for it is counted, not timed; a hang is caught by the test
 * timeout) */
static inline int sem_wait_ms(sem_t *s, int ms)
{
	struct timespec ts;
	if (ms < 0) {
		while (sem_wait(s) != 0)
			if (errno != EINTR)
				return -1;
		return 0;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	while (sem_timedwait(s, &ts) != 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

#endif /* RINGBUF_TESTS_SIGUTIL_H */
