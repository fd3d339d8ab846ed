/* verify/merged_order.c - GenMC model of the merged readers' protocol
 * SPDX-License-Identifier: MIT
 *
 * Two CPU buffers, X (writer thread wx, NX events) and Y (writer thread wy,
 * NY events), and a merged consumer making NR calls of
 * ringbuf_consume_merged. Checked: the stream never goes back in time (an
 * event handed out is never older than one handed out before it, and when
 * an event is handed out no older event of the other CPU is left unread).
 *
 * A model, not the real code (the page ring, parsing and the reader lock are
 * beyond what GenMC can explore in this time); each step names its place in
 * ringbuf.h:
 *
 *   writer entry  ringbuf__reserve_inline / ringbuf__reserve_slow (depth 1):
 *                 committing = 1, commits += 1 (relaxed), [M2] the signal
 *                 fence before the clock read
 *   reserve       ringbuf__reserve_fast step A: ts = clock; D: write_stamp = ts;
 *                 the event's bytes (ts[] here, relaxed); -DNESTED: a nested writer
 *                 (depth 2) inside X's first event
 *   commit        ringbuf__commit_fast / set_commit_to_write: the page commit
 *                 (release, [W-commit]); [M3] committing = 0 (release); the
 *                 check of commits; [M1] inflight_ts = write_stamp (release)
 *                 at the outermost exit (-DOLD_M1: at the entry, as before)
 *   peek          ringbuf__read_one: page commit (acquire, [R-commit]), then
 *                 the event
 *   guard         ringbuf_consume_merged steps 1-3 ([R1] ringbuf__merged_fence,
 *                 [R2] ringbuf__merged_inflight, [R3] the re-peek); with
 *                 -DOLD_PROTOCOL the guard of commit 4f7dbd6 (commits snapshot,
 *                 committing, current inflight_ts <= pick; relaxed inflight_ts)
 *
 * THE CLOCK is one global monotonic clock (CLOCK_MONOTONIC, an invariant
 * TSC): each read is a fetch_add on one counter, so reads are totally ordered
 * (the counter's modification order) and a later read returns more. Relaxed,
 * not seq_cst: a real clock read synchronizes no memory, while a seq_cst
 * (acquire-release) RMW would make each clock read acquire everything
 * stored before the previous one, which hides the bug (-DNO_MEMBARRIER passes
 * with a seq_cst clock).
 *
 * MEMBARRIER. GenMC has no membarrier(). Its guarantee: when it returns,
 * every thread of the process (of every registered process, for
 * GLOBAL_EXPEDITED) has executed a full barrier at some point after the call
 * began. Modelled as the asymmetric fence pair of C++ P1202: the reader's
 * heavy side is an seq_cst fence, the writer's light side (its signal fence
 * [M2]) counts as an seq_cst fence. Why the light side may sit exactly at [M2]:
 * the barrier interrupts the writer at an instruction boundary; if that is
 * before the clock read retires, the clock is read after the interrupt, so
 * after the reader's T0 and after the pick was seen, and the event is newer
 * than the pick (nothing to show); if after, the committing store (before
 * [M2] in program order) is before the barrier, which is all a fence at [M2]
 * gives. -DNO_MEMBARRIER drops the light side (a reader-side fence only):
 * the StoreLoad window of item 11 (a writer stamps an event while its entry
 * is invisible) must then be found.
 *
 * GENMC-PASS lines: the new protocol under RC11 and IMM. GENMC-FAIL lines:
 * the old guard (it fails under RC11 and IMM, and with three events on X
 * even under sequential consistency: item 1's interleaving), the new reader
 * without the writers' light fence (-DNO_MEMBARRIER), and [M3] relaxed
 * (-DRELAXED_M3: committing = 0 no longer publishes the commits before it).
 * -DSHARED_MARK: the [R1] mark of a file or memfd block, the largest
 * inflight_ts read before the barrier instead of T0 (issue 22.2: the
 * handle's clock may not be the writers'), passes; -DFOREIGN_T0, a mark
 * from another clock that is past every stamp (the reader's
 * CLOCK_MONOTONIC against the writers' counter), fails: after the first
 * barrier the reader never makes one again.
 * -DNESTED_WINDOW: the handler nests in X's first event after its page
 * commit and before its committing = 0 (ringbuf__commit_fast's window: the
 * outermost writer checks commits after the 0 and walks again, [Q-PEND]);
 * [R2] asks whether X is quiet (ringbuf__quiet: committing 0, then the write
 * index against the page commit) and passes; -DOLD_R2, committing alone,
 * fails: the reader hands out Y's newer event while the nested one waits.
 * -DWINDOW_ENTRY (with -DNESTED_WINDOW): two events nested in X's first one
 * in that window, then a handler entering X as the outermost writer after
 * the 0 (it commits them with its own): passes; -DOLD_M1, [M1] stored at the
 * entry, fails: the handler's entry raised inflight_ts to the newer nested
 * stamp over the older one still uncommitted, and the reader handed out Y's
 * event stamped between them first (test_merged_order,
 * *_under_an_entry_in_the_commit_window).
 * -DRELAXED_M1 ([M1] relaxed) is not found to fail within these bounds (the
 * other entries' light fences and committing's C11 release sequence, which
 * C++20 dropped, order the older commits in the executions explored); the
 * argument in >>design uses its release (the page commits before it, for a
 * reader that reads it with a committing value of a later entry), and on
 * x86 it is the same plain store, so it stays.
 */
/* GENMC-PASS: -rc11 -- -DNX=2 */
/* GENMC-PASS: -rc11 -- -DNX=3 -DNY=2 -DNR=3 */
/* GENMC-PASS: -imm -- -DNX=2 */
/* GENMC-PASS: -imm -- -DNX=3 -DNY=1 -DNR=2 */
/* GENMC-PASS: -rc11 -- -DNESTED -DNX=2 -DNY=2 -DNR=3 */
/* GENMC-PASS: -imm -- -DNESTED -DNX=2 -DNY=1 -DNR=2 */
/* GENMC-FAIL: -rc11 -- -DOLD_PROTOCOL -DNX=1 */
/* GENMC-FAIL: -imm -- -DOLD_PROTOCOL -DNX=1 */
/* GENMC-FAIL: -sc -- -DOLD_PROTOCOL -DNX=3 -DNY=1 -DNR=1 */
/* GENMC-FAIL: -rc11 -- -DNO_MEMBARRIER */
/* GENMC-FAIL: -imm -- -DNO_MEMBARRIER */
/* GENMC-FAIL: -rc11 -- -DRELAXED_M3 */
/* GENMC-FAIL: -imm -- -DRELAXED_M3 */
/* GENMC-FAIL: -rc11 -- -DOLD_PROTOCOL -DNESTED -DNX=1 */
/* GENMC-PASS: -rc11 -- -DSHARED_MARK -DNX=2 -DNY=2 -DNR=3 */
/* GENMC-PASS: -imm -- -DSHARED_MARK -DNX=3 -DNY=1 -DNR=2 */
/* GENMC-PASS: -rc11 -- -DSHARED_MARK -DNESTED -DNX=2 -DNY=2 -DNR=3 */
/* GENMC-PASS: -rc11 -- -DNESTED_WINDOW -DNX=2 -DNY=1 -DNR=3 */
/* GENMC-PASS: -imm -- -DNESTED_WINDOW -DNX=1 -DNY=1 -DNR=3 */
/* GENMC-FAIL: -rc11 -- -DNESTED_WINDOW -DOLD_R2 -DNX=1 -DNY=1 -DNR=2 */
/* GENMC-PASS: -rc11 -- -DNESTED_WINDOW -DWINDOW_ENTRY -DNX=1 -DNY=1 -DNR=2 */
/* GENMC-PASS: -imm -- -DNESTED_WINDOW -DWINDOW_ENTRY -DNX=1 -DNY=1 -DNR=2 */
/* GENMC-FAIL: -rc11 -- -DNESTED_WINDOW -DWINDOW_ENTRY -DOLD_M1 -DNX=1 -DNY=1 -DNR=2 */
/* GENMC-FAIL: -rc11 -- -DFOREIGN_T0 -DNX=2 -DNY=1 -DNR=3 */
/* GENMC-FAIL: -imm -- -DFOREIGN_T0 -DNX=2 -DNY=1 -DNR=3 */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#ifndef NX
#define NX 2 /* events written on X */
#endif
#ifndef NY
#define NY 1 /* events written on Y */
#endif
#ifndef NR
#define NR 2 /* merged consume calls */
#endif
#define MAXEV 5
#define NONE UINT64_MAX
#define EAGAIN_ (-11)

#ifdef OLD_PROTOCOL
#define OLD_M1 1 /* the guard of 4f7dbd6 ran with [M1] at the entry */
#endif
#if defined(OLD_PROTOCOL) || defined(RELAXED_M1)
#define M1_ORDER memory_order_relaxed /* -DRELAXED_M1: [M1] without release */
#else
#define M1_ORDER memory_order_release
#endif
#ifdef RELAXED_M3
#define M3_ORDER memory_order_relaxed /* -DRELAXED_M3: [M3] without release */
#else
#define M3_ORDER memory_order_release
#endif

struct cpu {
	atomic_uint committing;
	_Atomic(uint64_t) commits;
	_Atomic(uint64_t) inflight_ts;
	_Atomic(uint64_t) write_stamp; /* owner only */
	_Atomic(uint64_t) ts[MAXEV];   /* the events' bytes: their time stamps */
	atomic_uint commit;            /* the page commit: events committed */
	atomic_uint reserved;          /* the write index: events reserved */
};

static struct cpu cpus[2];
static _Atomic(uint64_t) clk; /* the global monotonic clock */

static uint64_t clock_read(void)
{
	return atomic_fetch_add_explicit(&clk, 1, memory_order_relaxed) + 1;
}

/* ---- writer: one thread per CPU buffer ------------------------------------
 * -DNESTED: a signal handler interrupts X's first event after its clock read
 * and writes an event of its own (depth 2: its entry stores committing = 2,
 * its exit 1, relaxed; the outermost writer commits both). */

static unsigned nev[2]; /* owner-only: events reserved per CPU */

static void reserve_event(struct cpu *c, unsigned cpu)
{
	/* reserve: A (clock), the event, D */
	uint64_t ts = clock_read();
#ifdef NESTED_WINDOW
	atomic_store_explicit(&c->reserved, nev[cpu] + 1, memory_order_relaxed); /* C */
#endif
	atomic_store_explicit(&c->ts[nev[cpu]++], ts, memory_order_relaxed);
	atomic_store_explicit(&c->write_stamp, ts, memory_order_relaxed);
}

/* [M1] inflight_ts = write_stamp */
static void m1(struct cpu *c)
{
	atomic_store_explicit(&c->inflight_ts, atomic_load_explicit(&c->write_stamp, memory_order_relaxed),
			      M1_ORDER);
}

/* The outermost exit, its check of commits passed: [M1] */
static void leave(struct cpu *c)
{
#ifdef OLD_M1
	(void)c;
#else
	m1(c);
#endif
}

static void enter(struct cpu *c, unsigned depth)
{
#ifdef OLD_M1
	if (depth == 1) /* [M1] at the entry: the old place */
		m1(c);
#endif
	atomic_store_explicit(&c->committing, depth, memory_order_relaxed);
	atomic_store_explicit(&c->commits, atomic_load_explicit(&c->commits, memory_order_relaxed) + 1,
			      memory_order_relaxed);
#if !defined(OLD_PROTOCOL) && !defined(NO_MEMBARRIER)
	atomic_thread_fence(memory_order_seq_cst); /* [M2]: the light side of membarrier */
#endif
}

static void write_event(struct cpu *c, unsigned cpu, bool nested)
{
	enter(c, 1);
	reserve_event(c, cpu);
#ifdef NESTED_WINDOW
	if (nested) {
		/* ringbuf__commit_fast: commits, the page commit, the handler
		 * (depth 2) in the window, committing = 0, commits again: a
		 * writer started, so committing 1, the walk, 0 */
		uint64_t n = atomic_load_explicit(&c->commits, memory_order_relaxed);
		atomic_store_explicit(&c->commit, nev[cpu], memory_order_release); /* [W-commit] */
		enter(c, 2);
		reserve_event(c, cpu);
		atomic_store_explicit(&c->committing, 1, memory_order_relaxed); /* nested exit */
#ifdef WINDOW_ENTRY
		enter(c, 2); /* a second handler nested in the window */
		reserve_event(c, cpu);
		atomic_store_explicit(&c->committing, 1, memory_order_relaxed);
#endif
		atomic_store_explicit(&c->committing, 0, M3_ORDER);             /* [M3] */
#ifdef WINDOW_ENTRY
		{
			/* a handler enters as the outermost writer (committing is
			 * 0), commits everything reserved and leaves */
			uint64_t nh;
			enter(c, 1);
			reserve_event(c, cpu);
			nh = atomic_load_explicit(&c->commits, memory_order_relaxed);
			atomic_store_explicit(&c->commit, nev[cpu], memory_order_release);
			atomic_store_explicit(&c->committing, 0, M3_ORDER);
			if (atomic_load_explicit(&c->commits, memory_order_relaxed) == nh)
				leave(c);
		}
#endif
		if (atomic_load_explicit(&c->commits, memory_order_relaxed) == n) {
			leave(c);
			return;
		}
		atomic_store_explicit(&c->committing, 1, memory_order_relaxed);
		atomic_store_explicit(&c->commit, nev[cpu], memory_order_release); /* the walk */
		atomic_store_explicit(&c->committing, 0, M3_ORDER);
		leave(c);
		return;
	}
#endif
	if (nested) {
		enter(c, 2);
		reserve_event(c, cpu);
		atomic_store_explicit(&c->committing, 1, memory_order_relaxed); /* nested exit */
	}
	/* commit (the outermost writer: everything reserved) */
	atomic_store_explicit(&c->commit, nev[cpu], memory_order_release); /* [W-commit] */
	atomic_store_explicit(&c->committing, 0, M3_ORDER);                 /* [M3] */
	leave(c); /* no writer can enter X between: the check of commits left out */
}

#if defined(NESTED_WINDOW) && defined(WINDOW_ENTRY)
#define XEV (NX + 3) /* events on X */
#elif defined(NESTED) || defined(NESTED_WINDOW)
#define XEV (NX + 1) /* events on X */
#else
#define XEV NX
#endif

static void *wx(void *arg)
{
	unsigned k;
	(void)arg;
	for (k = 0; k < NX; k++)
#if defined(NESTED) || defined(NESTED_WINDOW)
		write_event(&cpus[0], 0, k == 0);
#else
		write_event(&cpus[0], 0, false);
#endif
	return NULL;
}

static void *wy(void *arg)
{
	unsigned k;
	(void)arg;
	for (k = 0; k < NY; k++)
		write_event(&cpus[1], 1, false);
	return NULL;
}

/* ---- merged consumer ----------------------------------------------------- */

static unsigned consumed[2];           /* reader-owned: events consumed per CPU */
static uint64_t out_ts[NR];            /* what it handed out */
static unsigned out_cpu[NR], nout;
static uint64_t fenced;                /* [R1] mark (per reader thread) */

/* ringbuf__read_one without consuming: the head's time stamp, or NONE */
static uint64_t peek(unsigned cpu)
{
	unsigned n = atomic_load_explicit(&cpus[cpu].commit, memory_order_acquire);
	if (consumed[cpu] >= n)
		return NONE;
	return atomic_load_explicit(&cpus[cpu].ts[consumed[cpu]], memory_order_relaxed);
}

#ifdef OLD_PROTOCOL
static int consume_merged(void)
{
	uint64_t snap[2], best_ts = 0, h;
	unsigned cpu, best = 2, busy = 0;
	for (cpu = 0; cpu < 2; cpu++)
		snap[cpu] = atomic_load_explicit(&cpus[cpu].commits, memory_order_acquire);
	for (cpu = 0; cpu < 2; cpu++)
		if (atomic_load_explicit(&cpus[cpu].committing, memory_order_acquire))
			busy |= 1u << cpu;
	for (cpu = 0; cpu < 2; cpu++) {
		h = peek(cpu);
		if (h != NONE && (best == 2 || h < best_ts)) {
			best = cpu;
			best_ts = h;
		}
	}
	if (best == 2)
		return 0;
	for (cpu = 0; cpu < 2; cpu++) {
		if (cpu == best)
			continue;
		if (atomic_load_explicit(&cpus[cpu].committing, memory_order_acquire) ||
		    atomic_load_explicit(&cpus[cpu].commits, memory_order_acquire) != snap[cpu])
			busy |= 1u << cpu;
		if (((busy >> cpu) & 1) &&
		    atomic_load_explicit(&cpus[cpu].inflight_ts, memory_order_relaxed) <= best_ts)
			return EAGAIN_;
	}
	out_ts[nout] = best_ts;
	out_cpu[nout++] = best;
	consumed[best]++;
	return 1;
}
#else
/* [R2] ringbuf__quiet: committing 0 (acquire, pairs with [M3]), then the
 * write index (relaxed) against the page commit (acquire, [W-commit]);
 * -DOLD_R2: committing alone. Without -DNESTED_WINDOW no writer stores 0
 * with an event reserved and not committed, so the write index and its load
 * are left out (they quadruple the executions to explore: 98,452 to 391,390
 * for -DNX=3 -DNY=2 -DNR=3). */
static bool quiet(unsigned cpu)
{
	unsigned w;
	if (atomic_load_explicit(&cpus[cpu].committing, memory_order_acquire) != 0)
		return false;
#if defined(OLD_R2) || !defined(NESTED_WINDOW)
	(void)w;
	return true;
#else
	w = atomic_load_explicit(&cpus[cpu].reserved, memory_order_relaxed);
	return atomic_load_explicit(&cpus[cpu].commit, memory_order_acquire) == w;
#endif
}

static int consume_merged(void)
{
	uint64_t best_ts = 0, h, t0;
	unsigned cpu, best = 2, seen = 0;
	/* 1. the oldest head */
	for (cpu = 0; cpu < 2; cpu++) {
		h = peek(cpu);
		if (h == NONE)
			continue;
		seen |= 1u << cpu;
		if (best == 2 || h < best_ts) {
			best = cpu;
			best_ts = h;
		}
	}
	if (best == 2)
		return 0;
	/* 2. [R1] ringbuf__merged_fence */
	if (best_ts > fenced) {
#if defined(SHARED_MARK)
		/* a file block: the largest inflight_ts (acquire, pairs with [M1]) */
		uint64_t v;
		t0 = 0;
		for (cpu = 0; cpu < 2; cpu++)
			if ((v = atomic_load_explicit(&cpus[cpu].inflight_ts, memory_order_acquire)) > t0)
				t0 = v;
#elif defined(FOREIGN_T0)
		t0 = 1000; /* issue 22.2: T0 of another clock (the reader's CLOCK_MONOTONIC), past every stamp */
#else
		t0 = clock_read();
#endif
		atomic_thread_fence(memory_order_seq_cst); /* membarrier: the heavy side */
		fenced = t0 > best_ts ? t0 : best_ts;
	}
	/* 3. [R2], [R3] */
	for (cpu = 0; cpu < 2; cpu++) {
		if (cpu == best || ((seen >> cpu) & 1))
			continue;
		if (!quiet(cpu) &&
		    atomic_load_explicit(&cpus[cpu].inflight_ts, memory_order_acquire) < best_ts)
			return EAGAIN_;
		h = peek(cpu);
		if (h != NONE && h < best_ts) {
			best = cpu;
			best_ts = h;
		}
	}
	out_ts[nout] = best_ts;
	out_cpu[nout++] = best;
	consumed[best]++;
	return 1;
}
#endif

static void *reader(void *arg)
{
	unsigned i;
	(void)arg;
	for (i = 0; i < NR; i++)
		(void)consume_merged();
	return NULL;
}

int main(void)
{
	pthread_t a, b, r;
	unsigned i, k;
	if (pthread_create(&a, NULL, wx, NULL) || pthread_create(&b, NULL, wy, NULL) ||
	    pthread_create(&r, NULL, reader, NULL))
		abort();
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	pthread_join(r, NULL);
	/* Every event handed out: no older event of the other CPU was still
	 * unread then (it is read later, or never in this bounded run: either
	 * way the stream went, or would go, back in time). The events of the
	 * other CPU handed out before it are its first ones, in order. */
	for (i = 0; i < nout; i++) {
		unsigned o = 1 - out_cpu[i], before = 0, n = o == 0 ? XEV : NY;
		for (k = 0; k < i; k++)
			before += out_cpu[k] == o;
		for (k = before; k < n; k++)
			assert(atomic_load_explicit(&cpus[o].ts[k], memory_order_relaxed) >= out_ts[i]);
	}
	return 0;
}
