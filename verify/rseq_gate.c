/* verify/rseq_gate.c - GenMC model of RINGBUF_CPU_CURRENT's claim by
 * restartable sequence and the gate of the other takers (RSEQ in >>contexts
 * of ringbuf.h: S1-S5 in ringbuf__rseq_take, GT1-GT4 in ringbuf__owner_take0)
 * SPDX-License-Identifier: MIT
 *
 * One owner word (word 0, the buffer of CPU 0) and three threads:
 *   S   runs on CPU 0 and writes an event: it takes the word by the
 *       sequence (S3 gate == 0, S4 owner == 0, S5 plain store), and when the
 *       sequence refuses, out of line through the gate, as the real code;
 *   T1, T2 run on CPU 1 (no buffer of their own): each writes one event,
 *       taking word 0 through the gate only.
 * An event: the word taken, `inside` must be 0, the buffer's bytes (`data`,
 * plain memory) written, the word given back (G5: store 0, release). An event
 * whose take fails is dropped (counted in `unmapped` in the real code).
 *
 * THE KERNEL'S PART, as a lock. GenMC models neither rseq nor membarrier.
 * What the code relies on (>>contexts RSEQ) is: (a) a sequence on CPU 0 runs
 * S2-S5 without another sequence of CPU 0 in between (preemption, migration
 * and signals restart it: a restarted sequence stored nothing, as if it had
 * not started); (b) membarrier(PRIVATE_EXPEDITED_RSEQ, CPU 0) returns only
 * when each sequence that was running on CPU 0 either completed before the
 * call's barrier there (its store is visible to what the caller does next) or
 * was restarted (and reads, when it runs again, what the caller stored before
 * the call). Both are the semantics of a lock `cpu0` held by the whole
 * sequence and taken and dropped by the fence: a sequence is entirely before
 * the fence (unlock -> lock: happens-before) or entirely after it (the
 * caller's stores before the fence happen-before the sequence's loads).
 *
 * Checked: one owner at a time (`inside`, and `data` races if two owners are
 * not ordered by the word's release/acquire); every take that the gate lets
 * through decides on the word alone; the gate back to 0 and the word 0 at the
 * end (nobody in flight).
 *
 * RINGBUF__GATE_USES is 1 here: the gate re-opens after every take (the
 * sequence runs again), so fences, FENCED shortcuts and re-openings all
 * interleave with the sequences.
 * -DPIN: T1 first pins the gate (ringbuf__gate_pin, for the buffers of
 * ringbuf_thread_shared: enter, fence, FENCED | PINNED, leave) and takers
 * that read PINNED take the word by CAS alone (GT0); -DPIN -DPIN_NO_FENCE
 * pins without the fence (GENMC-FAIL).
 * Mutants (GENMC-FAIL): -DNO_FENCE (GT2 without the membarrier: the plain
 * store and the CAS both win), -DEARLY_REOPEN (GT4 re-opens without looking
 * at the takers in flight: a sequence runs while one of them is between its
 * fence and its CAS), -DRELAXED_FENCED (FENCED set and read relaxed: a taker
 * that skips the fence does not see a sequence's store that the fencing
 * taker saw).
 */
/* GENMC-PASS: -rc11 -- -DMODEL */
/* GENMC-MIN-EXECUTIONS: 50000 */
/* GENMC-FAIL: -rc11 -- -DNO_FENCE */
/* GENMC-FAIL: -rc11 -- -DEARLY_REOPEN */
/* GENMC-FAIL: -rc11 -- -DRELAXED_FENCED */
/* GENMC-PASS: -rc11 -- -DPIN */
/* GENMC-FAIL: -rc11 -- -DPIN -DPIN_NO_FENCE */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define GATE_FENCED 0x80000000u
#define GATE_PINNED 0x40000000u
#define GATE_USE (1u << 16)
#define GATE_USES 1u

#ifdef RELAXED_FENCED
#define FENCED_SET memory_order_relaxed
#define GATE_ENTER memory_order_relaxed
#else
#define FENCED_SET memory_order_release
#define GATE_ENTER memory_order_acq_rel
#endif

static _Atomic(uint64_t) owner;  /* struct ringbuf__cpu.owner */
static _Atomic(uint32_t) gate;   /* struct ringbuf__cpu.rseq_gate */
static _Atomic(int) inside;      /* owners inside the buffer now */
static int data;                 /* the buffer's bytes: plain memory */
static pthread_mutex_t cpu0 = PTHREAD_MUTEX_INITIALIZER; /* the kernel's part */

/* ringbuf__rseq_take on CPU 0: S2-S5 (S3, S4 acquire loads and S5 a
 * release store: x86-64's plain loads and store) */
static bool seq_take(uint64_t me)
{
	bool took = false;
	pthread_mutex_lock(&cpu0);
	if (atomic_load_explicit(&gate, memory_order_acquire) == 0 &&
	    atomic_load_explicit(&owner, memory_order_acquire) == 0) {
		atomic_store_explicit(&owner, me, memory_order_release);
		took = true;
	}
	pthread_mutex_unlock(&cpu0);
	return took;
}

/* [GATE-F] membarrier(PRIVATE_EXPEDITED_RSEQ, CPU 0) */
static void fence_cpu0(void)
{
#ifndef NO_FENCE
	pthread_mutex_lock(&cpu0);
	pthread_mutex_unlock(&cpu0);
#endif
}

/* ringbuf__owner_take0's gate, GT1-GT4 */
static bool gated_take(uint64_t me)
{
	uint32_t v, nv;
	uint64_t zero = 0;
	bool ok;
	/* GT0: a pinned gate (ringbuf__gate_pin): the CAS alone */
	if (atomic_load_explicit(&gate, memory_order_acquire) & GATE_PINNED)
		return atomic_compare_exchange_strong_explicit(&owner, &zero, me, memory_order_acq_rel,
							       memory_order_relaxed);
	if (atomic_load_explicit(&owner, memory_order_relaxed) != 0)
		return false;
	/* GT1: the code's CAS loop stops counting uses at RINGBUF__GATE_USES
	 * (15 bits); here a fetch_add (the same RMW; 3 takers cannot overflow) */
	nv = atomic_fetch_add_explicit(&gate, 1 + GATE_USE, GATE_ENTER) + 1 + GATE_USE;
	if (!(nv & GATE_FENCED)) { /* GT2 */
		fence_cpu0();
		atomic_fetch_or_explicit(&gate, GATE_FENCED, FENCED_SET);
	}
	/* GT3 */
	ok = atomic_compare_exchange_strong_explicit(&owner, &zero, me, memory_order_acq_rel, memory_order_relaxed);
	/* GT4 */
	v = atomic_fetch_sub_explicit(&gate, 1, memory_order_release) - 1;
#ifdef EARLY_REOPEN
	if (((v >> 16) & 0x7fffu) >= GATE_USES) {
		v = atomic_load_explicit(&gate, memory_order_relaxed);
		if (((v >> 16) & 0x7fffu) >= GATE_USES)
			atomic_compare_exchange_strong_explicit(&gate, &v, 0, memory_order_release,
								memory_order_relaxed);
	}
#else
	if ((v & 0xffffu) == 0 && ((v >> 16) & 0x3fffu) >= GATE_USES && !(v & GATE_PINNED))
		atomic_compare_exchange_strong_explicit(&gate, &v, 0, memory_order_release, memory_order_relaxed);
#endif
	return ok;
}

/* ringbuf__gate_pin (ringbuf_thread_shared): enter, fence, FENCED | PINNED
 * (release), leave; the gate is never 0 again */
static void gate_pin(void)
{
	uint32_t nv = atomic_fetch_add_explicit(&gate, 1, memory_order_acq_rel) + 1;
#ifndef PIN_NO_FENCE
	if (!(nv & GATE_FENCED))
		fence_cpu0();
#else
	(void)nv;
#endif
	atomic_fetch_or_explicit(&gate, GATE_FENCED | GATE_PINNED, memory_order_release);
	atomic_fetch_sub_explicit(&gate, 1, memory_order_release);
}

static void event(uint64_t me, int v)
{
	assert(atomic_fetch_add_explicit(&inside, 1, memory_order_relaxed) == 0);
	data = v;
	atomic_fetch_sub_explicit(&inside, 1, memory_order_relaxed);
	atomic_store_explicit(&owner, 0, memory_order_release); /* G5 */
	(void)me;
}

static void *s_cpu0(void *arg)
{
	(void)arg;
	if (seq_take(1) || gated_take(1)) /* the sequence, else out of line */
		event(1, 10);
	return NULL;
}

static void *t_cpu1(void *arg)
{
	uint64_t me = (uint64_t)(uintptr_t)arg;
#ifdef PIN
	if (me == 2)
		gate_pin(); /* T1 shares the word first (ringbuf_thread_shared) */
#endif
	if (gated_take(me))
		event(me, (int)me);
	return NULL;
}

int main(void)
{
	pthread_t s, t1, t2;
	pthread_create(&s, NULL, s_cpu0, NULL);
	pthread_create(&t1, NULL, t_cpu1, (void *)(uintptr_t)2);
	pthread_create(&t2, NULL, t_cpu1, (void *)(uintptr_t)3);
	pthread_join(s, NULL);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	assert(atomic_load_explicit(&owner, memory_order_relaxed) == 0);
	assert((atomic_load_explicit(&gate, memory_order_relaxed) & 0xffffu) == 0);
	return 0;
}
