/* verify/percpu_claim.c - GenMC model of a per-CPU block's owner words
 * (PER-CPU BLOCKS in >>contexts of ringbuf.h): CPU 0's word is taken from 0
 * only by the restartable sequence S1-S5 of a writer on CPU 0
 * (ringbuf__rseq_take); every other change of it starts from a value that is
 * not 0.
 * SPDX-License-Identifier: MIT
 *
 * One owner word (word 0, the buffer of CPU 0) and three threads:
 *   S1, S2  run on CPU 0, each writes one event: it takes the word by the
 *           sequence (S3 owner == 0, an acquire load; S4 a plain store, a
 *           release store on x86-64) and, when the sequence refuses, the
 *           event goes elsewhere (a shared buffer: not modelled, nothing of
 *           word 0 happens);
 *   T       runs on CPU 1 and finds the word held by a dead owner (main
 *           wrote its event and left the word with its id, as a thread that
 *           exited with the word): it judges it (acquire load) and takes it
 *           over by CAS from the dead word (acq_rel), repairs (writes the
 *           buffer) and gives it back (G5);
 * An event: the word taken, `inside` must be 0, the buffer's bytes (`data`,
 * plain memory) written, the word given back (G5: store 0, release).
 *
 * THE KERNEL'S PART, as a lock. GenMC models neither rseq nor its restart.
 * What the code relies on is that a sequence on CPU 0 runs S2-S4 without
 * another sequence of CPU 0 in between (preemption, migration and signals
 * restart it at the abort handler: a restarted sequence stored nothing, as
 * if it had not started): a lock `cpu0` held by the whole sequence. Nothing
 * else excludes a thread of another CPU: T runs unlocked.
 *
 * Checked: one owner at a time (`inside`), no data race on `data` (the
 * owners are ordered by the word's release/acquire, the dead owner's bytes
 * by the judge's acquire), the word 0 at the end.
 * Mutant (GENMC-FAIL): -DCAS_ON_CPU_WORD: T, finding the word free, takes it
 * by CAS from 0 (a taker of another CPU on a CPU's word: what the rseq gate
 * of stop 28 and before allowed, and paid for with a membarrier fence per
 * 1,024 takes): a sequence that read 0 at S3 stores over T's CAS at S4, and
 * both own the word. tests/mutants/cas_on_cpu_words.patch is the same
 * mutant in the real header, against tests/contexts/test_percpu_claim.c.
 */
/* GENMC-PASS: -rc11 -- -DMODEL */
/* GENMC-PASS: -imm -- -DMODEL */
/* GENMC-MIN-EXECUTIONS: 10 */
/* GENMC-FAIL: -rc11 -- -DCAS_ON_CPU_WORD */
/* GENMC-FAIL: -imm -- -DCAS_ON_CPU_WORD */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define DEAD ((uint64_t)9 << 32 | 9u) /* a dead thread's id */

static _Atomic(uint64_t) owner; /* struct ringbuf__cpu.owner of CPU 0's buffer */
static _Atomic(int) inside;     /* owners inside the buffer now */
static int data;                /* the buffer's bytes: plain memory */
static pthread_mutex_t cpu0 = PTHREAD_MUTEX_INITIALIZER; /* the kernel's part */

/* ringbuf__rseq_take on CPU 0: S2-S4 */
static bool seq_take(uint64_t me)
{
	bool took = false;
	pthread_mutex_lock(&cpu0);
	if (atomic_load_explicit(&owner, memory_order_acquire) == 0) { /* S3 */
		atomic_store_explicit(&owner, me, memory_order_release); /* S4 */
		took = true;
	}
	pthread_mutex_unlock(&cpu0);
	return took;
}

static void event(int v)
{
	assert(atomic_fetch_add_explicit(&inside, 1, memory_order_relaxed) == 0);
	data = v;
	atomic_fetch_sub_explicit(&inside, 1, memory_order_relaxed);
	atomic_store_explicit(&owner, 0, memory_order_release); /* G5 */
}

static void *s_cpu0(void *arg)
{
	uint64_t me = (uint64_t)(uintptr_t)arg;
	if (seq_take(me))
		event((int)me);
	return NULL;
}

/* ringbuf__take's judge: a dead owner's word taken over (CAS from it) */
static void *t_cpu1(void *arg)
{
	uint64_t cur = atomic_load_explicit(&owner, memory_order_acquire);
	(void)arg;
	if (cur == DEAD &&
	    atomic_compare_exchange_strong_explicit(&owner, &cur, 3, memory_order_acq_rel, memory_order_relaxed))
		event(3); /* the repair writes the buffer */
#ifdef CAS_ON_CPU_WORD
	/* and a second event of T, by CAS from 0 on CPU 0's word */
	cur = 0;
	if (atomic_compare_exchange_strong_explicit(&owner, &cur, 4, memory_order_acq_rel, memory_order_relaxed))
		event(4);
#endif
	return NULL;
}

int main(void)
{
	pthread_t s1, s2, t;
	/* the dead owner: its event written, the word left with its id */
	data = 9;
	atomic_store_explicit(&owner, DEAD, memory_order_release);
	pthread_create(&s1, NULL, s_cpu0, (void *)(uintptr_t)1);
	pthread_create(&s2, NULL, s_cpu0, (void *)(uintptr_t)2);
	pthread_create(&t, NULL, t_cpu1, NULL);
	pthread_join(s1, NULL);
	pthread_join(s2, NULL);
	pthread_join(t, NULL);
	assert(atomic_load_explicit(&owner, memory_order_relaxed) == 0);
	return 0;
}
