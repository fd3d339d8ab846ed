/* verify/reset_writer.c - GenMC: ringbuf_reset_cpu vs a writer entering and leaving
 * SPDX-License-Identifier: MIT
 *
 * A faithful model (not the real code: the write path's fast path is inline
 * and the barrier must be able to land between ANY two of its accesses, which
 * needs a poll there; see below). Each step names the function and label in
 * ringbuf.h it stands for.
 *
 * Threads: a writer thread (the CPU buffer's one writer: an outermost event
 * E1, with -DNESTED=1 a signal handler's nested event inside E1 before its
 * commit, with -DNESTED=2 inside E1's commit_fast between its load of commits
 * and its store of committing = 0, the window that makes it walk again; then a
 * second event E2 that arrives during or after the reset) and a reset thread
 * (ringbuf_reset_cpu R2-R7; R1, the reader lock, keeps readers out and is not
 * modelled: no reader runs here).
 *
 * The ring state a reset re-initialises (tail page, commit page, the tail
 * page's write index, its page commit) is modelled by PLAIN variables, so
 * that GenMC reports any access by the writer that is not ordered (hb) with
 * the reset's re-initialisation as a data race: that is the property "reset
 * never writes a field a writer may be using, and no writer is in the pages
 * while they are re-initialised". The slot a writer clears on entry
 * (slots[depth-1].len) is plain too: the new reset never writes it.
 *
 * membarrier (ringbuf__reset_barrier) is modelled as message passing both
 * ways, which is what the kernel implements (the caller's smp_mb, an IPI or
 * the context switch of each thread running the process's code, smp_mb there,
 * completion seen by the caller): the reset thread publishes a request k
 * (release) and waits (acquire) until the writer has acknowledged k, or has
 * finished (an exited thread's accesses all precede the barrier). The writer
 * polls for a request between every two of its shared accesses (poll()): a
 * poll that reads the request runs a seq_cst fence and acknowledges (release).
 * Which poll, if any, reads the request is GenMC's choice, so the barrier
 * lands at every possible point of the writer's program, including between
 * its store of committing and its load of disabled. This is no stronger than
 * the kernel (a barrier at one point, ordered with the caller both ways) and
 * no weaker (every point is explored).
 *
 * R4 (wait for committing == 0, bounded) is one look: a wait that returns 0
 * read one store of 0 last, whatever it read before; one that gives up is
 * EBUSY (R2 undone). Checked in every execution, RC11 and IMM:
 *   - no data race on the re-initialised state or the writer's slot,
 *   - committing ends at 0 (never underflows), disabled at 0,
 *   - after a successful reset the commit covers what was reserved.
 * GENMC-FAIL lines: -DOLD_PROTOCOL (disabled++, the memset re-init of the
 * whole CPU struct, the commit walk without the reset check), -DNO_RESET_CHECK
 * (the new reset, writers walk without [RESET-W]) and -DNO_R6 (no barrier
 * between the re-init and clearing the bit: E2's relaxed load of disabled sees
 * the bit cleared, not the re-initialised pages).
 */
/* GENMC-PASS: -rc11 -- -DNESTED=0 */
/* GENMC-PASS: -imm -- -DNESTED=0 */
/* GENMC-PASS: -rc11 -- -DNESTED=1 */
/* GENMC-PASS: -imm -- -DNESTED=1 */
/* GENMC-PASS: -rc11 -- -DNESTED=2 */
/* GENMC-PASS: -imm -- -DNESTED=2 */
/* GENMC-FAIL: -rc11 -- -DOLD_PROTOCOL -DNESTED=0 */
/* GENMC-FAIL: -imm -- -DOLD_PROTOCOL -DNESTED=0 */
/* GENMC-FAIL: -rc11 -- -DNO_RESET_CHECK -DNESTED=2 */
/* GENMC-FAIL: -imm -- -DNO_RESET_CHECK -DNESTED=2 */
/* GENMC-FAIL: -rc11 -- -DNO_R6 -DNESTED=0 */
/* GENMC-FAIL: -imm -- -DNO_R6 -DNESTED=0 */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#ifndef NESTED
#define NESTED 0
#endif
#define RESET_BIT 0x80000000u
#define RLX memory_order_relaxed

/* struct ringbuf__cpu, the fields that matter */
static atomic_uint committing;      /* nesting depth of writers in flight */
static atomic_uint disabled;        /* disable counter | RESET_BIT */
static atomic_ulong commits;        /* writers started */
static atomic_ulong disabled_events;
/* re-initialised at R5: plain, so that an unordered access is a race */
static unsigned pg_tail, pg_cpage;  /* tail_page, commit_page */
static unsigned pg_write;           /* the tail page's write index (events reserved) */
static unsigned pg_commit;          /* its page commit (events committed) */
/* writer-owned, never written by the (new) reset */
static unsigned slot_len[2];        /* slots[depth - 1].len */

/* ---- membarrier model ---------------------------------------------------- */
static atomic_int mb_req, mb_ack, writer_done;
static int mb_seen; /* the writer's: last request acknowledged */

static void poll(void)
{
	int r = atomic_load_explicit(&mb_req, memory_order_acquire);
	if (r > mb_seen) {
		atomic_thread_fence(memory_order_seq_cst);
		mb_seen = r;
		atomic_store_explicit(&mb_ack, r, memory_order_release);
	}
}

static void membarrier(int k)
{
	atomic_store_explicit(&mb_req, k, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	while (atomic_load_explicit(&mb_ack, memory_order_acquire) < k &&
	       !atomic_load_explicit(&writer_done, memory_order_acquire))
		;
}

/* ---- the writer ---------------------------------------------------------- */

/* [RESET-W] ringbuf__resetting: acquire, pairs with R7 */
static int resetting(void)
{
#if defined(OLD_PROTOCOL) || defined(NO_RESET_CHECK)
	return 0;
#else
	return (atomic_load_explicit(&disabled, memory_order_acquire) & RESET_BIT) != 0;
#endif
}

/* ringbuf__set_commit_to_write: commit everything reserved */
static void walk(void)
{
	pg_commit = pg_write; /* [W-commit] */
	pg_cpage = pg_tail;   /* [W-cpage] */
}

/* ringbuf__end_commit (2 rounds: one nested writer at most) */
static void end_commit(void)
{
	for (int round = 0; round < 2; round++) {
		unsigned long n = atomic_load_explicit(&commits, RLX);
		unsigned depth = atomic_load_explicit(&committing, RLX);
		poll();
		if (depth == 1 && !resetting())
			walk();
		poll();
		/* TP_COMMIT_END; release at 0: pairs with R4 */
		atomic_store_explicit(&committing, depth - 1,
				      depth == 1 ? memory_order_release : RLX);
		poll();
		if (depth != 1)
			return;
		if (atomic_load_explicit(&commits, RLX) == n)
			return;
		atomic_store_explicit(&committing, 1, RLX);
		poll();
	}
}

/* entry of ringbuf__reserve_inline / ringbuf__reserve_slow; returns 0 if refused */
static int enter(unsigned depth)
{
	slot_len[depth - 1] = 0; /* no reservation at this depth yet */
	poll();
	atomic_store_explicit(&committing, depth, RLX); /* [E] enter ... */
	atomic_store_explicit(&commits, atomic_load_explicit(&commits, RLX) + 1, RLX);
	poll(); /* (the signal fence: the barrier may land here) */
	if (atomic_load_explicit(&disabled, RLX) != 0) { /* ... then check */
		atomic_fetch_add_explicit(&disabled_events, 1, RLX); /* reserve_refused */
		poll();
		if (depth == 1) {
			end_commit();
		} else {
			atomic_store_explicit(&committing, depth - 1, RLX);
			poll();
		}
		return 0;
	}
	/* A-D on the tail page */
	(void)pg_tail;
	pg_write = pg_write + 1;
	slot_len[depth - 1] = 1;
	poll();
	return 1;
}

/* a signal handler's event on the same buffer, nested in E1 */
static void nested_event(void)
{
	unsigned depth = atomic_load_explicit(&committing, RLX) + 1;
	if (!enter(depth))
		return;
	slot_len[depth - 1] = 0; /* commit_slow: complete */
	poll();
	atomic_store_explicit(&committing, depth - 1, RLX); /* end_commit, depth 2: left for E1 */
	poll();
}

/* ringbuf_write: ringbuf__reserve_inline, then ringbuf__commit_inline */
static void event(int with_nested)
{
	unsigned long n;
	if (!enter(1))
		return;
	if (with_nested == 1)
		nested_event();
	slot_len[0] = 0; /* commit_inline: complete */
	poll();
	/* ringbuf__commit_fast */
	n = atomic_load_explicit(&commits, RLX);
	if (pg_cpage != pg_tail) {
		end_commit();
		return;
	}
	pg_commit = pg_write; /* [W-commit] */
	poll();
	if (with_nested == 2)
		nested_event(); /* after the load of commits: E1 must walk again */
	atomic_store_explicit(&committing, 0, memory_order_release);
	poll();
	if (atomic_load_explicit(&commits, RLX) == n)
		return;
	atomic_store_explicit(&committing, 1, RLX); /* a writer started: the general path */
	poll();
	end_commit();
}

static void *writer(void *arg)
{
	(void)arg;
	poll();
	event(NESTED);
	event(0);
	atomic_store_explicit(&writer_done, 1, memory_order_release);
	return NULL;
}

/* ---- the reset ----------------------------------------------------------- */
static int reset_ok;

static void *resetter(void *arg)
{
	(void)arg;
#ifdef OLD_PROTOCOL
	unsigned d;
	atomic_fetch_add_explicit(&disabled, 1, RLX);
	membarrier(1);
	if (atomic_load_explicit(&committing, memory_order_acquire) != 0) {
		atomic_fetch_sub_explicit(&disabled, 1, RLX);
		return NULL;
	}
	d = atomic_load_explicit(&disabled, RLX);
	/* ringbuf__init_cpu: memset of the whole struct ringbuf__cpu */
	atomic_store_explicit(&committing, 0, RLX);
	atomic_store_explicit(&commits, 0, RLX);
	atomic_store_explicit(&disabled, 0, RLX);
	atomic_store_explicit(&disabled_events, 0, RLX);
	slot_len[0] = 0;
	slot_len[1] = 0;
	pg_tail = pg_cpage = pg_write = pg_commit = 0;
	atomic_store_explicit(&disabled, d - 1, memory_order_release);
	reset_ok = 1;
#else
	atomic_fetch_or_explicit(&disabled, RESET_BIT, RLX); /* R2 */
	membarrier(1);                                        /* R3 */
	if (atomic_load_explicit(&committing, memory_order_acquire) != 0) { /* R4 */
		atomic_fetch_and_explicit(&disabled, ~RESET_BIT, RLX); /* EBUSY */
		return NULL;
	}
	/* R5: ringbuf__reinit_cpu (not committing, commits, slots, ...) */
	pg_tail = pg_cpage = pg_write = pg_commit = 0;
	atomic_store_explicit(&disabled_events, 0, RLX);
#ifndef NO_R6
	membarrier(2); /* R6 */
#endif
	atomic_fetch_and_explicit(&disabled, ~RESET_BIT, memory_order_release); /* R7 */
	reset_ok = 1;
#endif
	return NULL;
}

int main(void)
{
	pthread_t w, r;
	if (pthread_create(&w, NULL, writer, NULL) || pthread_create(&r, NULL, resetter, NULL))
		abort();
	pthread_join(w, NULL);
	pthread_join(r, NULL);
	assert(atomic_load_explicit(&committing, RLX) == 0); /* never underflows */
	assert(atomic_load_explicit(&disabled, RLX) == 0);
	if (reset_ok)
		assert(pg_commit == pg_write && pg_cpage == pg_tail);
	return 0;
}
