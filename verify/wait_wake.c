/* verify/wait_wake.c - GenMC: ringbuf_wait vs a writer: no lost wake-up
 * SPDX-License-Identifier: MIT
 *
 * A faithful model (ringbuf_wait sleeps in the kernel and its fence is a
 * system call: neither runs under GenMC). Each step names the function and
 * label in ringbuf.h it stands for (WAITING in >>design).
 *
 * Threads: WAITERS waiters of different watermarks on one CPU buffer -- two
 * waiting for 1 and 2 dirty pages (RINGBUF__WAIT_FULL), or with -DWAITERS=3
 * also one waiting for data (RINGBUF__WAIT_DATA: any dirty page here) -- and the CPU's writer, which commits PAGES pages,
 * one at a time, each followed by the commit's [WAIT-W] check (and
 * ringbuf__wake_check [WAIT-W2] when due). The watermark of every waiter is
 * reached in the end, so every waiter must return 1: a waiter that sleeps
 * for good is a lost wake-up.
 *
 * The futex: FUTEX_WAIT(wait_seq, seq) [WAIT-R5] returns when the word no
 * longer holds seq (at once if it already does not: the kernel compares under
 * the bucket lock; a wake that follows a bump finds it queued). Modelled as
 * the spin `while (load(wait_seq) == seq);` (GenMC turns it into an
 * assumption); FUTEX_WAKE needs no model (every bump is followed by one).
 * With -check-liveness GenMC reports a spin that can never end, with the
 * writer done and nothing left to bump wait_seq: that is the lost wake-up.
 *
 * membarrier [WAIT-R3]: the kernel makes every thread running the process's
 * code pass a full barrier (an IPI, or the context switch of a thread not
 * running) while the call runs: each writer behaves as if it had a seq_cst
 * fence F at the point of its program where the IPI landed, with the
 * waiter's part before the call ordered before F and the writer's part
 * before F ordered before the waiter's part after the call. Modelled as a
 * seq_cst fence in the waiter and one in the writer BETWEEN its commit and
 * its load of ringbuf__sh(rb)->waiters ([WAIT-W]), at no other point. That is an
 * over-approximation (every real execution is one of the model's): F there
 * forbids only the store-buffering outcome "the load misses the arming AND
 * the waiter's check misses the commit"; F before the commit gives "the load
 * sees the arming", F after the load "the check sees the commit", each a
 * subset of what the model allows. (A message-passing model with a poll at
 * every point, as verify/reset_writer.c, ran over 10 minutes here.)
 * -DNO_MEMBARRIER drops the writer's fence (the waiter's own seq_cst fence
 * only, as without the system call): a wake-up is lost, which is why
 * ringbuf_wait then sleeps in bounded slices instead.
 *
 * -DWAITERS=3 (data, 1 and 2 pages) is not in the lines below: it runs
 * for many minutes (run it by hand).
 *
 * The armed CPU (issue 22, performance): waiters store the CPU they wait for
 * with their armed bit (cpu + 1, or ANY once armed waiters differ), a waker
 * clears it with the bits, and a writer of another CPU skips the check.
 * -DTWO_CPUS: two CPU buffers, a writer on each (one page each), a waiter
 * for one page of CPU 0 and one for data on CPU 1: both must return. Mutant
 * -DNARROW (arming replaces the armed CPU with its own even while another
 * CPU's waiter is armed) loses the first waiter's wake-up: CPU 1's waiter
 * arms over it, finds its data and leaves (a data waiter wakes nobody), and
 * CPU 0's writer then skips the check. Under IMM -DTWO_CPUS ran over 10
 * minutes here (a loaded machine) and was stopped: run it by hand.
 *
 * The waiter loop is bounded by the number of wait_seq bumps (each pass that
 * sleeps needs a new value); running out is asserted against.
 *
 * GENMC-FAIL lines: -DOLD_PROTOCOL (the old two-word registration: watermark
 * lowered in wait_pages before the count in waiters, the last one out zeroes
 * wait_pages, the futex word read after arming, a writer that gives the wake
 * up when its CAS fails), -DNO_LEAVE_WAKE (the new word, but a waiter leaving
 * with the lowest watermark clears it without waking the others),
 * -DNO_MEMBARRIER, and two mutants of the new code showing each of the other
 * fixes matters: -DSEQ_AFTER_ARM (wait_seq read after arming, as before) and
 * -DGIVE_UP (the writer does not retry its CAS).
 */
/* GENMC-PASS: -rc11 -check-liveness */
/* GENMC-PASS: -imm -check-liveness */
/* GENMC-FAIL: -rc11 -check-liveness -- -DOLD_PROTOCOL */
/* GENMC-FAIL: -imm -check-liveness -- -DOLD_PROTOCOL */
/* GENMC-FAIL: -rc11 -check-liveness -- -DNO_LEAVE_WAKE */
/* GENMC-FAIL: -imm -check-liveness -- -DNO_LEAVE_WAKE */
/* GENMC-FAIL: -rc11 -check-liveness -- -DNO_MEMBARRIER */
/* GENMC-FAIL: -rc11 -check-liveness -- -DSEQ_AFTER_ARM */
/* GENMC-FAIL: -rc11 -check-liveness -- -DGIVE_UP */
/* GENMC-PASS: -rc11 -check-liveness -- -DTWO_CPUS */
/* GENMC-FAIL: -rc11 -check-liveness -- -DTWO_CPUS -DNARROW */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef TWO_CPUS
#define WAITERS 2 /* one page on CPU 0, data on CPU 1 */
#define NCPU 2
#define PAGES 1
#else
#ifndef WAITERS
#define WAITERS 2
#endif
#define NCPU 1
#define PAGES 2
#endif
#define RLX memory_order_relaxed
#define ACQ memory_order_acquire
#define REL memory_order_release
#define SC memory_order_seq_cst

/* ringbuf__sh(rb)->waiters (RINGBUF__WAIT_*), ringbuf__sh(rb)->wait_seq, and the CPU's dirty pages
 * (ringbuf__dirty_pages: pages_touched, owner-written, read relaxed by
 * waiters and by the writer's own check) */
#define WAIT_DATA 1u
#define WAIT_FULL 2u
#define WAIT_ONE 4u
#define WAIT_COUNT 0xfffcu
#define WAIT_CPU_SHIFT 16
#define WAIT_ANY 0xffffu
#define WAIT_CPU(w) ((uint32_t)((w) >> WAIT_CPU_SHIFT) & WAIT_ANY)
#define WAIT_MIN(w) ((uint32_t)((w) >> 32))
static _Atomic(uint64_t) waiters;
static _Atomic(uint32_t) wait_seq;
static _Atomic(uint32_t) dirty[NCPU];
#ifdef OLD_PROTOCOL
static _Atomic(uint32_t) wait_pages;
#endif
static uint32_t wake_seen[NCPU]; /* c->wake_seen: the writer's own */

/* ---- membarrier model (see above) ------------------------------------------ */

/* [WAIT-R3] ringbuf__wait_fence: the waiter's side */
static void membarrier(void)
{
	atomic_thread_fence(SC);
}

/* where the barrier lands in the writer: between its commit and [WAIT-W] */
static void writer_barrier(void)
{
#ifndef NO_MEMBARRIER
	atomic_thread_fence(SC);
#endif
}

/* ---- the writer (ringbuf__end_commit / commit_fast and wake_check) ---------- */

/* ringbuf__wait_for_cpu */
static bool wait_for_cpu(uint64_t w, unsigned cpu)
{
#ifdef OLD_PROTOCOL
	(void)w;
	(void)cpu;
	return true;
#else
	uint32_t f = WAIT_CPU(w);
	return f == 0 || f == WAIT_ANY || f == cpu + 1;
#endif
}

/* ringbuf__wake_due */
static bool wake_due(unsigned cpu, uint64_t w)
{
	if (!(w & (WAIT_DATA | WAIT_FULL)))
		return false;
	if (!wait_for_cpu(w, cpu))
		return false;
	return (w & WAIT_DATA) || atomic_load_explicit(&dirty[cpu], RLX) != wake_seen[cpu];
}

/* [WAIT-W2] ringbuf__wake_check */
static void wake_check(unsigned cpu)
{
	uint64_t w = atomic_load_explicit(&waiters, RLX);
	uint32_t d;
	if (!(w & (WAIT_DATA | WAIT_FULL)))
		return;
	if (!(w & WAIT_DATA))
		wake_seen[cpu] = atomic_load_explicit(&dirty[cpu], RLX);
	d = atomic_load_explicit(&dirty[cpu], RLX);
#ifdef OLD_PROTOCOL
	if (!(w & WAIT_DATA) && d < atomic_load_explicit(&wait_pages, RLX))
		return;
	if (!atomic_compare_exchange_strong_explicit(&waiters, &w, w & ~(uint64_t)(WAIT_DATA | WAIT_FULL), RLX,
						     RLX))
		return; /* the old code gave up here */
#else
	for (;;) {
		if (!(w & (WAIT_DATA | WAIT_FULL)))
			return;
		if (!wait_for_cpu(w, cpu))
			return;
		if (!(w & WAIT_DATA) && d < WAIT_MIN(w))
			return;
		if (atomic_compare_exchange_strong_explicit(
			    &waiters, &w, w & ~((uint64_t)(WAIT_DATA | WAIT_FULL) | (uint64_t)WAIT_ANY << WAIT_CPU_SHIFT),
			    ACQ, RLX))
			break;
#ifdef GIVE_UP
		return; /* mutant: the old writer gave the wake up here */
#endif
	}
#endif
	atomic_fetch_add_explicit(&wait_seq, 1, REL); /* + FUTEX_WAKE */
}

static void *writer(void *arg)
{
	unsigned cpu = (unsigned)(uintptr_t)arg;
	for (uint32_t p = 1; p <= PAGES; p++) {
		/* the tail moved onto a new page (pages_touched), the event is
		 * committed ([W-commit], release) */
		atomic_store_explicit(&dirty[cpu], p, REL);
		writer_barrier();
		/* [WAIT-W]: one relaxed load, no fence of its own */
		if (wake_due(cpu, atomic_load_explicit(&waiters, RLX)))
			wake_check(cpu);
	}
	return NULL;
}

/* ---- the waiters (ringbuf_wait) ------------------------------------------- */

#ifdef OLD_PROTOCOL
static void old_register(uint32_t pages)
{
	if (pages) {
		uint32_t cur = atomic_load_explicit(&wait_pages, RLX);
		while ((cur == 0 || cur > pages) &&
		       !atomic_compare_exchange_weak_explicit(&wait_pages, &cur, pages, RLX, RLX))
			;
	}
	atomic_fetch_add_explicit(&waiters, WAIT_ONE, SC);
}

static void old_leave(void)
{
	uint64_t cur = atomic_load_explicit(&waiters, RLX), nv;
	do
		nv = cur >= 8 ? cur - 4 : 0;
	while (!atomic_compare_exchange_weak_explicit(&waiters, &cur, nv, RLX, RLX));
	if (nv == 0)
		atomic_store_explicit(&wait_pages, 0, RLX);
}
#else
/* [WAIT-R2] ringbuf__wait_arm (the count never reaches its limit here) */
static void wait_arm(unsigned cpu, uint32_t bit, uint32_t pages, bool reg)
{
	uint64_t cur = atomic_load_explicit(&waiters, RLX), nv;
	uint32_t mine = cpu + 1, f;
	do {
		uint32_t min = WAIT_MIN(cur);
#ifdef NARROW
		f = mine; /* mutant: another CPU's armed waiter loses its CPU */
#else
		f = !(cur & (WAIT_DATA | WAIT_FULL)) || WAIT_CPU(cur) == mine ? mine : WAIT_ANY;
#endif
		nv = (cur & ~((uint64_t)WAIT_ANY << WAIT_CPU_SHIFT)) | bit | (uint64_t)f << WAIT_CPU_SHIFT;
		if (reg)
			nv += WAIT_ONE;
		if (pages && (min == 0 || min > pages))
			nv = (nv & 0xffffffffu) | (uint64_t)pages << 32;
	} while (!atomic_compare_exchange_weak_explicit(&waiters, &cur, nv, SC, RLX));
}

/* [WAIT-R6] ringbuf__wait_leave */
static void wait_leave(uint32_t pages)
{
	uint64_t cur = atomic_load_explicit(&waiters, RLX), nv;
	bool wake;
	do {
		wake = false;
		if ((cur & WAIT_COUNT) <= WAIT_ONE) {
			nv = 0;
		} else {
			nv = cur - WAIT_ONE;
			if (pages && WAIT_MIN(cur) == pages) {
				nv &= WAIT_COUNT | WAIT_DATA | (uint64_t)WAIT_ANY << WAIT_CPU_SHIFT;
				wake = true;
			}
		}
	} while (!atomic_compare_exchange_weak_explicit(&waiters, &cur, nv, memory_order_acq_rel, RLX));
#ifndef NO_LEAVE_WAKE
	if (wake)
		atomic_fetch_add_explicit(&wait_seq, 1, REL); /* + FUTEX_WAKE */
#endif
}
#endif

/* ringbuf__ready: this CPU has the data / the pages */
static bool ready(unsigned cpu, uint32_t pages)
{
	return atomic_load_explicit(&dirty[cpu], ACQ) >= (pages ? pages : 1);
}

/* each pass but the last sleeps until wait_seq moves: at most one pass more
 * than the bumps, PAGES by each writer (one wake check per page) and
 * WAITERS - 1 by leaving waiters (the last one out wakes nobody) */
#define MAX_PASSES (NCPU * PAGES + WAITERS)

/* arg: cpu << 8 | pages */
static void *waiter(void *arg)
{
	unsigned cpu = (unsigned)((uintptr_t)arg >> 8);
	uint32_t pages = (uint32_t)((uintptr_t)arg & 0xff), bit = pages ? WAIT_FULL : WAIT_DATA, seq;
	bool reg = true;
	int ret = 0, pass;
#ifdef OLD_PROTOCOL
	old_register(pages);
	reg = false;
#endif
	for (pass = 0; pass < MAX_PASSES; pass++) {
#ifdef OLD_PROTOCOL
		atomic_fetch_or_explicit(&waiters, bit, SC);
		seq = atomic_load_explicit(&wait_seq, ACQ); /* after arming */
#else
#ifndef SEQ_AFTER_ARM
		seq = atomic_load_explicit(&wait_seq, ACQ); /* [WAIT-R1] */
#endif
		wait_arm(cpu, bit, pages, reg);              /* [WAIT-R2] */
		reg = false;
#ifdef SEQ_AFTER_ARM
		seq = atomic_load_explicit(&wait_seq, ACQ); /* mutant: the old order */
#endif
#endif
		membarrier();                                /* [WAIT-R3] */
		if (ready(cpu, pages)) {                     /* [WAIT-R4] */
			ret = 1;
			break;
		}
		while (atomic_load_explicit(&wait_seq, RLX) == seq) /* [WAIT-R5] */
			;
	}
	assert(ret == 1); /* the passes cannot run out */
#ifdef OLD_PROTOCOL
	old_leave();
#else
	wait_leave(pages); /* [WAIT-R6] */
#endif
	return NULL;
}

int main(void)
{
	pthread_t w[WAITERS], wr[NCPU];
	for (uintptr_t i = 0; i < WAITERS; i++)
#ifdef TWO_CPUS
		/* one page on CPU 0, data on CPU 1 */
		pthread_create(&w[i], NULL, waiter, (void *)(i << 8 | (i == 0)));
#else
		/* 2 waiters: 1 and 2 pages; 3: data, 1 and 2 pages */
		pthread_create(&w[i], NULL, waiter, (void *)(WAITERS == 3 ? i : i + 1));
#endif
	for (uintptr_t i = 0; i < NCPU; i++)
		pthread_create(&wr[i], NULL, writer, (void *)i);
	for (int i = 0; i < WAITERS; i++)
		pthread_join(w[i], NULL);
	for (int i = 0; i < NCPU; i++)
		pthread_join(wr[i], NULL);
	assert(atomic_load_explicit(&waiters, RLX) == 0); /* every waiter unregistered */
	return 0;
}
