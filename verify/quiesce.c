/* verify/quiesce.c - GenMC: ringbuf_quiesce (Q1-Q4) vs a writer entering and leaving
 * SPDX-License-Identifier: MIT
 *
 * Property: ringbuf_quiesce does not return while a writer that entered
 * before the call (or one nested in it) has an event not yet committed and
 * visible to the caller. A faithful model of the steps, not the real code
 * (the write path is inline and the barrier must be able to land between any
 * two of its accesses, as in verify/reset_writer.c). Each step names the function and label in ringbuf.h
 * it stands for.
 *
 * Threads: one CPU buffer's writer, running two outermost events E0 and E1
 * (ringbuf__reserve_inline's entry, committing = 1, the reservation,
 * ringbuf__commit_inline / ringbuf__commit_fast, ringbuf__end_commit, and at
 * the outermost exit [Q-X] commits += 1), and a thread calling
 * ringbuf_quiesce: Q1 the barrier, Q2 quiet? (committing == 0 (acquire), then
 * the page's write index == its commit (acquire): nothing reserved left
 * uncommitted, [Q-PEND]), Q3 x0 = exits, the low half of commits (acquire),
 * Q4 poll until quiet or exits != x0 (acquire; the time limit is not
 * modelled: GenMC turns the side-effect-free poll into an assume, so only
 * executions where it ends are complete). One page: the write index counts
 * the events reserved, in event order.
 *   -DNESTED=0  E0, E1
 *   -DNESTED=1  a signal handler's event nested in E0 (depth 2: commits +=
 *               RINGBUF__COMMITS_NESTED, committing 2 then 1) before E0's
 *               commit_fast, which commits it
 *   -DNESTED=2  a handler that cuts in at E0's entry, before its committing
 *               = 1 (it sees committing 0: enters as outermost and leaves)
 *   -DNESTED=3  the handler nested in E0 after commit_fast's page commit and
 *               before its committing = 0 (RINGBUF__TP_COMMIT_FAST_CHECKED):
 *               E0 stores 0 with the handler's event uncommitted, then walks
 *               again
 *   -DNESTED=4  as 3, and a second handler runs as outermost in that window
 *               (after E0's 0, before its re-check): its exit comes after its
 *               own walk, which commits the first handler's event. With the
 *               old protocol (-DOLD_ENTRY_COUNT: Q3/Q4 counted outermost
 *               ENTRIES, [Q-W], stored before committing = 1) Q4 ended on
 *               that handler's entry with the first handler's event still
 *               uncommitted: GENMC-FAIL below (the LIMIT ringbuf.h documented
 *               until the exit count)
 *   -DNESTED=5  a handler runs as outermost between E0's last re-check (the
 *               count n it read) and E0's exit count: both store n + 1, the
 *               count moves once for two exits
 *
 * membarrier (ringbuf__writers_barrier) is modelled as in reset_writer.c: the
 * caller publishes a request (release) then runs an seq_cst fence and waits
 * (acquire) for the writer's acknowledgement or its end; the writer polls
 * between every two of its shared accesses, and the poll that reads the
 * request (GenMC's choice: every point) runs an seq_cst fence and
 * acknowledges (release), telling how many outermost entries it had made
 * (stored committing != 0) by then: the writers "in flight at the call" are
 * those, and the writers nested in them.
 *
 * Checked in every execution (RC11 and IMM): after ringbuf_quiesce returns,
 * every event of an outermost writer that entered before the barrier, and of
 * the writers nested in it, is committed and its commit ([W-commit], release)
 * is visible to the caller (a relaxed load reads it or a later value).
 * GENMC-FAIL lines, the old protocols and the mutants it must catch:
 *   -DOLD_ENTRY_COUNT   entries counted at entry ([Q-W]), not exits:
 *                       -DNESTED=4 returns with the first handler's event
 *                       uncommitted
 *   -DOLD_Q4            the protocol before [Q-PEND]: Q2/Q4 end on
 *                       committing == 0 alone: -DNESTED=3 returns in E0's
 *                       window with the handler's event uncommitted
 *   -DNO_BARRIER        quiesce without Q1 (the caller's loads are not
 *                       ordered after the writer's entry: Q2 reads 0)
 *   -DRELAXED_EXIT      committing = 0 relaxed instead of release ([M3])
 *   -DRELAXED_EXITCOUNT the exit count stored relaxed instead of release
 *                       ([Q-X]): Q4 ends on it without seeing the commits
 *   -DEXIT_COUNT_FIRST  the exit counted before the walk
 *   -DQ3_RELAXED_COMMITS  Q4 watches the whole 64-bit commits word instead
 *                       of its low half: a nested entry changes it
 *   -DOLD_ENTRY_COUNT -DCOMMITTING_FIRST  the old entry count stored after
 *                       committing = 1: Q3 read the count before the entry
 *                       and Q4 ended at the increment
 */
/* GENMC-PASS: -rc11 -- -DNESTED=0 */
/* GENMC-PASS: -imm -- -DNESTED=0 */
/* GENMC-PASS: -rc11 -- -DNESTED=1 */
/* GENMC-PASS: -imm -- -DNESTED=1 */
/* GENMC-PASS: -rc11 -- -DNESTED=2 */
/* GENMC-PASS: -imm -- -DNESTED=2 */
/* GENMC-PASS: -rc11 -- -DNESTED=3 */
/* GENMC-PASS: -imm -- -DNESTED=3 */
/* GENMC-PASS: -rc11 -- -DNESTED=4 */
/* GENMC-PASS: -imm -- -DNESTED=4 */
/* GENMC-PASS: -rc11 -- -DNESTED=5 */
/* GENMC-PASS: -imm -- -DNESTED=5 */
/* GENMC-FAIL: -rc11 -- -DOLD_ENTRY_COUNT -DNESTED=4 */
/* GENMC-FAIL: -rc11 -- -DOLD_Q4 -DNESTED=3 */
/* GENMC-FAIL: -imm -- -DOLD_Q4 -DNESTED=3 */
/* GENMC-FAIL: -rc11 -- -DNO_BARRIER -DNESTED=0 */
/* GENMC-FAIL: -imm -- -DNO_BARRIER -DNESTED=0 */
/* GENMC-FAIL: -rc11 -- -DRELAXED_EXIT -DNESTED=0 */
/* GENMC-FAIL: -imm -- -DRELAXED_EXIT -DNESTED=0 */
/* GENMC-FAIL: -rc11 -- -DRELAXED_EXITCOUNT -DNESTED=0 */
/* GENMC-FAIL: -imm -- -DRELAXED_EXITCOUNT -DNESTED=0 */
/* GENMC-FAIL: -rc11 -- -DEXIT_COUNT_FIRST -DNESTED=0 */
/* GENMC-FAIL: -rc11 -- -DQ3_RELAXED_COMMITS -DNESTED=1 */
/* GENMC-FAIL: -rc11 -- -DOLD_ENTRY_COUNT -DCOMMITTING_FIRST -DNESTED=0 */
/* GENMC-FAIL: -imm -- -DOLD_ENTRY_COUNT -DCOMMITTING_FIRST -DNESTED=0 */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#ifndef NESTED
#define NESTED 0
#endif
#define RLX memory_order_relaxed
#define COMMITS_NESTED ((unsigned long)1 << 32) /* RINGBUF__COMMITS_NESTED */
#ifdef RELAXED_EXIT
#define EXIT_MO memory_order_relaxed
#else
#define EXIT_MO memory_order_release
#endif
#ifdef RELAXED_EXITCOUNT
#define EXITCOUNT_MO memory_order_relaxed
#else
#define EXITCOUNT_MO memory_order_release
#endif

/* events, by the outermost entry they belong to (in entry order) */
#if NESTED == 0
#define NEV 2
#define NOUTER 2
static const int outer_of[NEV] = {0, 1}; /* E0, E1 */
#elif NESTED == 1
#define NEV 3
#define NOUTER 2
static const int outer_of[NEV] = {0, 0, 1}; /* E0, the handler nested in E0, E1 */
#elif NESTED == 2
#define NEV 3
#define NOUTER 3
static const int outer_of[NEV] = {0, 1, 2}; /* the handler (outermost first), E0, E1 */
#elif NESTED == 3
#define NEV 3
#define NOUTER 2
static const int outer_of[NEV] = {0, 0, 1}; /* E0, the handler nested in E0's commit_fast, E1 */
#elif NESTED == 4
#define NEV 4
#define NOUTER 3
/* E0, the handler nested in E0's commit_fast, a handler running as
 * outermost in E0's window (committing 0, its nested event not committed), E1 */
static const int outer_of[NEV] = {0, 0, 1, 2};
#else
#define NEV 3
#define NOUTER 3
/* E0, a handler running as outermost between E0's last re-check and its
 * exit count (both store the same count), E1 */
static const int outer_of[NEV] = {0, 1, 2};
#endif
static int exit_cut = -1; /* NESTED=5: the handler that cuts in at E0's exit count */

/* struct ringbuf__cpu, the fields that matter */
static atomic_uint committing; /* nesting depth of writers in flight */
static atomic_ulong commits;   /* low half: outermost exits ([Q-X]); + COMMITS_NESTED per nested entry */
/* one page: its write index (events reserved, in id order: event j ends at
 * j + 1) and its commit ([W-commit], release) */
static atomic_int pg_write, pg_commit;
static int started; /* outermost entries made (committing != 0 stored) */

/* ---- membarrier model ---------------------------------------------------- */
static atomic_int mb_req, mb_ack, writer_done;
static int mb_seen; /* the writer's: last request acknowledged */

static void poll(void)
{
	int r = atomic_load_explicit(&mb_req, memory_order_acquire);
	if (r > mb_seen) {
		atomic_thread_fence(memory_order_seq_cst);
		mb_seen = r;
		/* request number and the entries made before this point */
		atomic_store_explicit(&mb_ack, r * 8 + started, memory_order_release);
	}
}

static void mb_request(int k)
{
	atomic_store_explicit(&mb_req, k, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
}

/* Wait for the acknowledgement of request k (or the writer's end); returns
 * the number of outermost entries made before the barrier point. */
static int mb_wait(int k)
{
	int a;
	while (atomic_load_explicit(&mb_ack, memory_order_acquire) < k * 8 &&
	       !atomic_load_explicit(&writer_done, memory_order_acquire))
		;
	a = atomic_load_explicit(&mb_ack, memory_order_acquire);
	return a >= k * 8 ? a % 8 : NOUTER;
}

/* ---- the writer ---------------------------------------------------------- */

/* A-D: reserve the next event (the writer's relaxed CAS on the write index) */
static void reserve(void)
{
	atomic_store_explicit(&pg_write, atomic_load_explicit(&pg_write, RLX) + 1, RLX);
	poll();
}

/* ringbuf__set_commit_to_write: commit everything reserved ([W-commit]) */
static void walk(void)
{
	int w = atomic_load_explicit(&pg_write, RLX);
	if (atomic_load_explicit(&pg_commit, RLX) != w) {
		atomic_store_explicit(&pg_commit, w, memory_order_release);
		poll();
	}
}

static void exit_count(unsigned long n);

/* ringbuf__end_commit for the outermost writer (2 rounds are enough here) */
static void end_commit(void)
{
	for (int round = 0; round < 2; round++) {
		unsigned long n = atomic_load_explicit(&commits, RLX);
		poll();
		walk();
		atomic_store_explicit(&committing, 0, EXIT_MO); /* [M3] */
		poll();
		if (atomic_load_explicit(&commits, RLX) == n) {
			exit_count(n);
			return;
		}
		atomic_store_explicit(&committing, 1, RLX);
		poll();
	}
}

/* a signal handler's event nested in an outermost one (depth 2) */
static void nested_event(int id)
{
	/* ringbuf__reserve_slow, depth 2 */
	atomic_store_explicit(&committing, 2, RLX);
	atomic_store_explicit(&commits, atomic_load_explicit(&commits, RLX) + COMMITS_NESTED, RLX);
	poll();
	(void)id;
	reserve();
	/* ringbuf__commit_slow, depth 2: left for the outermost writer */
	atomic_store_explicit(&committing, 1, RLX);
	poll();
}

static void outer_event(int id, int handler_at_entry, int nested_id, int late_id, int win_id);

/* enter as outermost: committing = 1 (-DOLD_ENTRY_COUNT: [Q-W] commits += 1
 * first, the protocol before the exit count) */
static void enter(int handler_at_entry)
{
	unsigned long n0 = atomic_load_explicit(&commits, RLX);
	poll();
	if (handler_at_entry)
		outer_event(0, 0, -1, -1, -1); /* sees committing 0: enters as outermost */
#ifdef OLD_ENTRY_COUNT
#ifdef COMMITTING_FIRST
	atomic_store_explicit(&committing, 1, RLX);
	started++;
	poll();
	atomic_store_explicit(&commits, n0 + 1, memory_order_release);
#else
	atomic_store_explicit(&commits, n0 + 1, memory_order_release); /* [Q-W] */
	poll();
	atomic_store_explicit(&committing, 1, RLX);
	started++;
#endif
#else
	(void)n0;
	atomic_store_explicit(&committing, 1, RLX);
	started++;
#endif
	poll();
}

/* [Q-X] the outermost exit: commits = n + 1 (release), n the count the
 * writer's last re-check read, after its walk and committing = 0. A handler
 * that runs between that load and this store (as outermost: committing is
 * 0) exits with the same store: the count stands still for once. */
static void exit_count(unsigned long n)
{
#ifndef OLD_ENTRY_COUNT
	atomic_store_explicit(&commits, n + 1, EXITCOUNT_MO);
	poll();
#else
	(void)n;
#endif
}

/* ringbuf_reserve + ringbuf_commit of an outermost writer */
static void outer_event(int id, int handler_at_entry, int nested_id, int late_id, int win_id)
{
	unsigned long n;
	(void)id;
	enter(handler_at_entry);
	reserve();
	if (nested_id >= 0)
		nested_event(nested_id);
	/* ringbuf__commit_fast */
	n = atomic_load_explicit(&commits, RLX);
	poll();
#ifdef EXIT_COUNT_FIRST
	exit_count(n); /* mutant: counted before the walk */
	n++;
#endif
	walk();
	if (late_id >= 0)
		nested_event(late_id); /* after the page commit: the walk missed it */
	atomic_store_explicit(&committing, 0, EXIT_MO); /* [M3] */
	poll();
	if (win_id >= 0)
		outer_event(win_id, 0, -1, -1, -1); /* sees committing 0: outermost */
	if (atomic_load_explicit(&commits, RLX) == n) {
		if (exit_cut >= 0) {
			int h = exit_cut;
			exit_cut = -1;
			outer_event(h, 0, -1, -1, -1); /* sees committing 0: outermost */
		}
		exit_count(n);
		return;
	}
	atomic_store_explicit(&committing, 1, RLX); /* a writer started: the general path */
	poll();
	end_commit();
}

static void *writer(void *arg)
{
	(void)arg;
	poll();
#if NESTED == 0
	outer_event(0, 0, -1, -1, -1);
	outer_event(1, 0, -1, -1, -1);
#elif NESTED == 1
	outer_event(0, 0, 1, -1, -1);
	outer_event(2, 0, -1, -1, -1);
#elif NESTED == 2
	outer_event(1, 1, -1, -1, -1); /* the handler's event is 0 */
	outer_event(2, 0, -1, -1, -1);
#elif NESTED == 3
	outer_event(0, 0, -1, 1, -1);
	outer_event(2, 0, -1, -1, -1);
#elif NESTED == 4
	outer_event(0, 0, -1, 1, 2);
	outer_event(3, 0, -1, -1, -1);
#else
	exit_cut = 1;
	outer_event(0, 0, -1, -1, -1);
	outer_event(2, 0, -1, -1, -1);
#endif
	atomic_store_explicit(&writer_done, 1, memory_order_release);
	return NULL;
}

/* ---- ringbuf_quiesce ----------------------------------------------------- */

/* ringbuf__quiet: committing 0, and nothing reserved left uncommitted
 * ([Q-PEND]; the commit page == tail page part is one page here) */
static int quiet(void)
{
	if (atomic_load_explicit(&committing, memory_order_acquire) != 0)
		return 0;
#ifdef OLD_Q4
	return 1;
#else
	return atomic_load_explicit(&pg_write, RLX) ==
	       atomic_load_explicit(&pg_commit, memory_order_acquire);
#endif
}


static void *quiescer(void *arg)
{
	int before, seen;
	(void)arg;
	mb_request(1); /* Q1 */
#ifndef NO_BARRIER
	before = mb_wait(1);
#endif
	if (!quiet()) { /* Q2 */
#ifdef Q3_RELAXED_COMMITS
		unsigned long e0 = atomic_load_explicit(&commits, memory_order_acquire);
		while (!quiet() && atomic_load_explicit(&commits, memory_order_acquire) == e0)
			;
#else
		uint32_t x0 = (uint32_t)atomic_load_explicit(&commits, memory_order_acquire); /* Q3 */
		while (!quiet() && /* Q4 */
		       (uint32_t)atomic_load_explicit(&commits, memory_order_acquire) == x0)
			;
#endif
	}
	/* returned: what the caller reads next */
	seen = atomic_load_explicit(&pg_commit, RLX);
#ifdef NO_BARRIER
	before = mb_wait(1); /* where the writer was when the call began, for the check */
#endif
	for (int j = 0; j < NEV; j++)
		if (outer_of[j] < before)
			assert(seen >= j + 1);
	return NULL;
}

int main(void)
{
	pthread_t w, q;
	if (pthread_create(&w, NULL, writer, NULL) || pthread_create(&q, NULL, quiescer, NULL))
		abort();
	pthread_join(w, NULL);
	pthread_join(q, NULL);
	assert(atomic_load_explicit(&committing, RLX) == 0);
	return 0;
}
