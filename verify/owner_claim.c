/* verify/owner_claim.c - GenMC model of the mapped modes' owner word
 * SPDX-License-Identifier: MIT
 *
 * One buffer's owner word (struct ringbuf__cpu.owner) and three threads:
 *
 *   T1  tid 1: takes the free word, enters an event (committing = 1, writes
 *       the buffer) and dies there: it stops after its claim, never commits
 *       nor gives the word back. Its exit is the kernel's: `alive[1] = 0`
 *       (release), then `exited1 = 1` (release).
 *   T2  tid 1 again (the kernel reused T1's tid: it exists only after T1's
 *       exit, so it waits for exited1) and a token of its own. It writes an
 *       event: it must take the buffer over from the dead T1 (repairing it),
 *       not take T1's word for its own and nest under the dead event (whose
 *       events are never committed).
 *   T3  tid 3, live: also writes an event; it may take the buffer when it is
 *       free, or over from the dead T1, never from a live owner.
 *
 * Checked: (1) one owner at a time: the buffer's bytes (`data`) are plain
 * memory, so two owners not ordered by the word's release/acquire pairs are a
 * data race (GenMC reports it), and an `inside` counter must be 0 on entry;
 * (2) T2 never nests under a dead owner (assert took); (3) every event a
 * thread starts it commits (committing back to 0 at its end).
 *
 * A model, not the real code (TLS, syscalls and the page ring are beyond
 * GenMC); each step names its place in ringbuf.h (>>contexts):
 *
 *   take()        ringbuf__take: first loop (load; CAS 0 -> own, acq_rel;
 *                 own word found: nested, *took = false), second loop
 *                 (acquire load; ringbuf__owner_dead; CAS acq_rel; recover)
 *   owner_dead()  ringbuf__owner_dead: same tid and another token -> dead;
 *                 else kill(tid, 0) == ESRCH, modelled as alive[tid] == 0
 *                 (acquire: pairs with the exit's release)
 *   event         ringbuf__map_reserve G3 .. ringbuf__map_end G4: committing
 *                 = 1, the event's bytes, committing = 0
 *   release()     G5: store 0, release
 *   recover       ringbuf__recover_cpu: rewrites the dead event's bytes
 *
 * KILL AND THE KERNEL. kill(tid, 0) reads the kernel's thread table. A thread
 * is in it before its first instruction and leaves it at its exit, after its
 * last. Modelled as alive[tid]: set before the thread runs (main for T1 and
 * T3; for T2, its first store, program-ordered before its CAS), cleared with
 * release at the exit. The taker's CAS is acq_rel and the judging load is
 * acquire so that a taker that reads a word sees the table as its writer
 * left it at the CAS (the word's owner in the table): without that a judge
 * could read T2's word and an old alive[1] == 0 (T1's exit) and take over a
 * live owner (-DWEAK_CAS shows it).
 *
 * -DOLD_PROTOCOL: the owner word of commit 4f7dbd6 (tid only, liveness by
 * kill only): T2 finds "its own" word and nests under the dead event.
 *
 * -DSHARED: RINGBUF_CPU_THREAD's fallback (>>contexts, THREAD FALLBACK) on
 * one buffer, three other threads instead:
 *   C   tid 5, a claimer: takes the free word with PERSIST (F2), writes an
 *       event, gives the claim back as ringbuf_thread_release does (CAS to
 *       RELEASING, relaxed; CAS RELEASING -> 0, release) and bumps
 *       release_gen (F6: fetch_add, release);
 *   S1  tid 6, S2 tid 7: threads beyond the count, each writing one shared
 *       event: F1 (release_gen, acquire), F2 when the word is free and the
 *       generation moved (claim: CAS 0 -> id | PERSIST), else F4b (CAS 0 ->
 *       id, acq_rel), the event, G5 (store 0, release); the event is dropped
 *       when the word is held.
 * Checked as above: one writer in the buffer at a time (`inside`), the
 * buffer's bytes never raced (a writer's events happen-before the next
 * holder's), the word 0 at the end when nobody kept a claim.
 * -DSHARED -DWEAK_GIVEBACK: the give-back CAS relaxed: the next holder's
 * bytes race with the claimer's (GenMC reports it).
 */
/* GENMC-PASS: -rc11 -- -DNEW_PROTOCOL */
/* GENMC-PASS: -imm -- -DNEW_PROTOCOL */
/* GENMC-FAIL: -rc11 -- -DOLD_PROTOCOL */
/* GENMC-FAIL: -imm -- -DOLD_PROTOCOL */
/* GENMC-FAIL: -rc11 -- -DWEAK_CAS */
/* GENMC-PASS: -rc11 -- -DSHARED */
/* GENMC-PASS: -imm -- -DSHARED */
/* GENMC-FAIL: -rc11 -- -DSHARED -DWEAK_GIVEBACK */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define TID_MASK 0x3fffffffu
#define ID(tid, tok) ((uint64_t)(tok) << 32 | (tid))

#ifdef WEAK_CAS
#define CAS_ORDER memory_order_acquire
#define JUDGE_LOAD memory_order_relaxed
#else
#define CAS_ORDER memory_order_acq_rel
#define JUDGE_LOAD memory_order_acquire
#endif

static _Atomic(uint64_t) owner;     /* struct ringbuf__cpu.owner */
static _Atomic(uint32_t) committing;/* struct ringbuf__cpu.committing */
static _Atomic(int) alive[4];       /* the kernel's thread table, by tid */
static _Atomic(int) exited1;        /* T1 has exited (its tid may be reused) */
static _Atomic(int) inside;         /* owners inside the buffer now */
static int data;                    /* the buffer's bytes: plain memory */

static bool owner_dead(uint64_t cur, uint64_t own)
{
	uint32_t tid = (uint32_t)cur & TID_MASK;
#ifndef OLD_PROTOCOL
	if (tid == ((uint32_t)own & TID_MASK))
		return (cur >> 32) != (own >> 32);
#endif
	return atomic_load_explicit(&alive[tid], memory_order_acquire) == 0;
}

/* ringbuf__take for one buffer. Returns true when we may write (*took: the
 * word was set by us). */
static bool take(uint64_t own, bool *took)
{
	uint64_t cur = atomic_load_explicit(&owner, memory_order_relaxed);
	if (cur == 0 && atomic_compare_exchange_strong_explicit(&owner, &cur, own, CAS_ORDER,
								 memory_order_relaxed)) {
		*took = true;
		return true;
	}
	if (cur == own) {
		*took = false; /* ours already: we interrupted our own G2..G3 */
		return true;
	}
	cur = atomic_load_explicit(&owner, JUDGE_LOAD);
	if (cur && cur != own && owner_dead(cur, own) &&
	    atomic_compare_exchange_strong_explicit(&owner, &cur, own, CAS_ORDER, memory_order_relaxed)) {
		if (atomic_load_explicit(&committing, memory_order_relaxed)) {
			data = -1; /* recover: the dead event becomes padding */
			atomic_store_explicit(&committing, 0, memory_order_relaxed);
		}
		*took = true;
		return true;
	}
	return false;
}

static void enter(void)
{
	assert(atomic_fetch_add_explicit(&inside, 1, memory_order_relaxed) == 0);
}

static void leave(void)
{
	atomic_fetch_sub_explicit(&inside, 1, memory_order_relaxed);
}

/* one event of a live thread: take, write, commit, give back */
static void write_event(uint64_t own, int v, bool must_take)
{
	bool took = false;
	if (!take(own, &took)) {
		assert(!must_take || 0);
		return; /* dropped, counted in `unmapped` */
	}
	assert(took); /* never nested under somebody else's event */
	enter();
	assert(atomic_load_explicit(&committing, memory_order_relaxed) == 0);
	atomic_store_explicit(&committing, 1, memory_order_relaxed);
	data = v;
	atomic_store_explicit(&committing, 0, memory_order_relaxed);
	leave();
	atomic_store_explicit(&owner, 0, memory_order_release); /* G5 */
}

static void *t1(void *arg)
{
	bool took = false;
	(void)arg;
#ifdef OLD_PROTOCOL
	if (take(ID(1, 0), &took)) {
#else
	if (take(ID(1, 1), &took)) {
#endif
		enter();
		atomic_store_explicit(&committing, 1, memory_order_relaxed);
		data = 1;
		leave(); /* dies mid-event: the word stays, committing stays 1 */
	}
	atomic_store_explicit(&alive[1], 0, memory_order_release); /* exit */
	atomic_store_explicit(&exited1, 1, memory_order_release);
	return NULL;
}

static void *t2(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&exited1, memory_order_acquire))
		; /* the kernel reuses a tid only after its thread's exit */
	atomic_store_explicit(&alive[1], 1, memory_order_relaxed); /* tid 1 is ours now */
#ifdef OLD_PROTOCOL
	write_event(ID(1, 0), 2, false);
#else
	write_event(ID(1, 2), 2, false);
#endif
	return NULL;
}

static void *t3(void *arg)
{
	(void)arg;
#ifdef OLD_PROTOCOL
	write_event(ID(3, 0), 3, false);
#else
	write_event(ID(3, 3), 3, false);
#endif
	return NULL;
}

#ifdef SHARED
#define PERSIST 0x80000000u
#define RELEASING 0x40000000u
#ifdef WEAK_GIVEBACK
#define GIVEBACK memory_order_relaxed
#else
#define GIVEBACK memory_order_release
#endif
static _Atomic(uint32_t) release_gen; /* struct ringbuf.release_gen */
static _Atomic(int) claims_kept;      /* claims still held at the end */

static void event(int v)
{
	enter();
	atomic_store_explicit(&committing, 1, memory_order_relaxed);
	data = v;
	atomic_store_explicit(&committing, 0, memory_order_relaxed);
	leave();
}

/* ringbuf_thread_release: 1. mark, 3. give back (release), F6 */
static void give_back(uint64_t own)
{
	uint64_t mine = own | PERSIST, marked = own | PERSIST | RELEASING;
	if (!atomic_compare_exchange_strong_explicit(&owner, &mine, marked, memory_order_relaxed,
						     memory_order_relaxed))
		return;
	if (atomic_compare_exchange_strong_explicit(&owner, &marked, 0, GIVEBACK, memory_order_relaxed))
		atomic_fetch_add_explicit(&release_gen, 1, memory_order_release);
}

static void *claimer(void *arg)
{
	uint64_t own = ID(5, 5), cur = 0;
	(void)arg;
	if (!atomic_compare_exchange_strong_explicit(&owner, &cur, own | PERSIST, memory_order_acq_rel,
						     memory_order_relaxed))
		return NULL; /* a shared writer holds it: dropped */
	event(5);
	give_back(own);
	return NULL;
}

/* one event of a thread beyond the count, without a claim */
static void *shared_writer(void *arg)
{
	uint32_t tid = (uint32_t)(uintptr_t)arg;
	uint64_t own = ID(tid, tid), cur = 0;
	uint32_t gen = atomic_load_explicit(&release_gen, memory_order_acquire); /* F1 */
	if (gen) {
		/* F2: the generation moved, a full scan: claim a free word */
		if (atomic_compare_exchange_strong_explicit(&owner, &cur, own | PERSIST, memory_order_acq_rel,
							    memory_order_relaxed)) {
			event((int)tid);
			atomic_fetch_add_explicit(&claims_kept, 1, memory_order_relaxed); /* kept */
			return NULL;
		}
		return NULL; /* held (and no shared buffer here): dropped */
	}
	/* F4b: the word for this event only */
	if (!atomic_compare_exchange_strong_explicit(&owner, &cur, own, memory_order_acq_rel,
						     memory_order_relaxed))
		return NULL; /* dropped, counted */
	event((int)tid);
	atomic_store_explicit(&owner, 0, memory_order_release); /* G5 */
	return NULL;
}

int main(void)
{
	pthread_t a, b, c;
	atomic_init(&owner, 0);
	atomic_init(&committing, 0);
	atomic_init(&inside, 0);
	atomic_init(&release_gen, 0);
	atomic_init(&claims_kept, 0);
	pthread_create(&a, NULL, claimer, NULL);
	pthread_create(&b, NULL, shared_writer, (void *)(uintptr_t)6);
	pthread_create(&c, NULL, shared_writer, (void *)(uintptr_t)7);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	pthread_join(c, NULL);
	/* every holder gave the word back, or keeps a claim */
	assert(atomic_load_explicit(&owner, memory_order_relaxed) == 0 ||
	       atomic_load_explicit(&claims_kept, memory_order_relaxed) == 1);
	assert(atomic_load_explicit(&committing, memory_order_relaxed) == 0);
	return 0;
}
#else
int main(void)
{
	pthread_t a, b, c;
	atomic_init(&owner, 0);
	atomic_init(&committing, 0);
	atomic_init(&alive[1], 1);
	atomic_init(&alive[3], 1);
	atomic_init(&exited1, 0);
	atomic_init(&inside, 0);
	pthread_create(&a, NULL, t1, NULL);
	pthread_create(&b, NULL, t2, NULL);
	pthread_create(&c, NULL, t3, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	pthread_join(c, NULL);
	return 0;
}
#endif
