/* RINGBUF_CPU_CURRENT's inline claim (INLINE in >>contexts of ringbuf.h),
 * cut in at each of its windows through the test points
 * (RINGBUF__TP_CURRENT_*, compiled in with RINGBUF_TESTING only):
 *
 *   TAKEN      G2 done (the owner word is ours), the reserve not yet
 *   ENTERED    the writer in (committing 1), J1 not yet ([TCUR] ARMED)
 *   HELD       J1 done ([TCUR] BUSY), the event not reserved yet
 *   RESERVED   the event reserved, the commit not yet
 *   RELEASED   the commit's J0 done (ARMED again), its commit not yet
 *   UNHELD     the outer event committed, G5 not yet
 *   UNDONE     the reserve failed (recording off for that event): J0 done,
 *              the writer out, G5 not yet (the hook turns recording on
 *              again first)
 *
 * At each point, with the writer parked there (deterministic: the hook runs
 * exactly once, at that point of the outer event, counted):
 *   (a) a nested writer on the same thread, as a signal handler would be (an
 *       "IRQ" event with an "NMI" event inside it): both nest in the held
 *       buffer, are committed, in reserve order around the outer event
 *       (inside it, committing 2 and 3, from ENTERED to RELEASED); the
 *       owner word is ours meanwhile and 0 afterwards, the thread's cur is
 *       0 and its [TCUR] slot ARMED;
 *   (b) another thread writes twice to the same ring buffer (same CPU, so its
 *       G1 picks the held buffer): never into the held buffer; with a second
 *       buffer it goes there, with one buffer it drops, counted in unmapped;
 *       it never waits;
 *   (c) ringbuf_reset from another thread at the points outside the event
 *       (TAKEN, UNHELD: a reset waits for an event in flight, and the
 *       writer is parked in it at the others): succeeds, leaves the hold,
 *       and wipes exactly what was committed before it; ringbuf_quiesce(rb,
 *       0) from another thread does not wait for a hold without an event,
 *       and the outer event is counted when it returns at UNHELD (not at
 *       UNDONE: nothing to wipe or wait for).
 * Each case runs on the three kinds of block (PER-CPU BLOCKS in >>contexts):
 * ordinary (G2 by CAS; the other thread takes any free buffer), per-CPU
 * (RINGBUF_F_CPU_CURRENT: G2 by restartable sequence where the process has
 * one; the other thread takes a shared buffer, cfg.shared = the buffers
 * after the writer's) and per-CPU with RINGBUF_F_NO_RSEQ (the same rules by
 * CAS): the same expectations hold for all three.
 * Then two shapes on the writer's own thread: a RINGBUF_CPU_CURRENT event
 * inside an event of the buffer's explicit index (the inline take finds the
 * writer in and goes out of line), and discards of the inline event and of
 * one nested in it (out of line, [TCUR] BUSY), a RINGBUF_CPU_THREAD event
 * of a thread without a claim inside the inline event (nested there), and a
 * RINGBUF_CPU_CURRENT event inside a RINGBUF_CPU_THREAD event on a shared
 * buffer (nested there, with the slot armed before or not: the shared event
 * marks it OUT) or on the thread's claimed buffer (not nested: another
 * buffer, its outermost writer).
 * The inline path needs rseq (glibc >= 2.35): skipped without it. There is
 * no *_outline variant: tests/variants/current_outline.patch removes the
 * inline claim these steps are in. */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"
#include "internal.h" /* the implementation's private names (IMPL: shared) */

#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

/* LDFLAGS: -lpthread */

#ifndef RINGBUF__TCUR_INLINE
/* no inline path here (no rseq CPU number): every case below skips */
static void ringbuf__tcur_get(uint64_t *word, uint64_t *me)
{
	*word = *me = 0;
}
#endif

struct ev {
	uint32_t who; /* 1 the writer, 2 its "IRQ", 3 its "NMI", 4 the other thread */
	uint32_t seq;
};

enum action { ACT_NEST, ACT_OTHER, ACT_RESET, ACT_QUIESCE };

#define NPOINTS 7
#define UNHELD 5 /* index of RINGBUF__TP_CURRENT_UNHELD */
#define UNDONE 6 /* index of RINGBUF__TP_CURRENT_UNDONE */
static const int points[NPOINTS] = { RINGBUF__TP_CURRENT_TAKEN,    RINGBUF__TP_CURRENT_ENTERED,
				     RINGBUF__TP_CURRENT_HELD,     RINGBUF__TP_CURRENT_RESERVED,
				     RINGBUF__TP_CURRENT_RELEASED, RINGBUF__TP_CURRENT_UNHELD,
				     RINGBUF__TP_CURRENT_UNDONE };
static const char *const point_names[NPOINTS] = { "TAKEN",    "ENTERED", "HELD",  "RESERVED",
						  "RELEASED", "UNHELD",  "UNDONE" };
/* the outer writer is in the buffer (committing 1) at the point */
static const int point_inside[NPOINTS] = { 0, 1, 1, 1, 1, 0, 0 };
/* the outer event is reserved at the point (nested events come after it) */
static const int point_reserved[NPOINTS] = { 0, 0, 0, 1, 1, 1, 0 };

struct run {
	struct ringbuf *rb;
	int point;
	int undo;         /* UNDONE: the outer event is refused */
	int first;        /* the point is in the first (out-of-line) event */
	enum action act;
	/* writer */
	pthread_t writer;
	int cpu;          /* the CPU the writer is pinned to (= its buffer) */
	int rseq;         /* 0: no rseq cpu id, skip */
	int armed;
	int hits;         /* the point reached while armed */
	unsigned hit_cpu; /* the buffer the point named */
	int outer_ok[3];
	uint64_t cur_after;
	uint64_t tcur_after, tcur_me_after, tcur_key;
	uint32_t tid;
	/* at the point */
	uint64_t word_at, word_after_act;
	uint64_t tcur_after_act; /* the slot's word after the act */
	int nest_ok[2];
	uint32_t committing_in_nest[2];
	int other_ok[2];
	int reset_r, quiesce_r;
	uint64_t committed_at_quiesce;
};

/* the block kind of the cases: 0 ordinary, 1 per-CPU, 2 per-CPU by CAS */
static int g_kind;
static const char *const kind_names[3] = { "ordinary", "per-CPU", "per-CPU, CAS" };

static int write_one(struct ringbuf *rb, uint32_t who, uint32_t seq)
{
	struct ev *p = (struct ev *)ringbuf_reserve(rb, RINGBUF_CPU_CURRENT, sizeof *p);
	if (!p)
		return -1;
	p->who = who;
	p->seq = seq;
	ringbuf_commit(rb, RINGBUF_CPU_CURRENT, p);
	return 0;
}

static uint64_t owner_word(struct ringbuf *rb, unsigned cpu)
{
	return atomic_load(&ringbuf__cpu(rb, cpu)->owner);
}

static void *other_main(void *arg)
{
	struct run *r = (struct run *)arg;
	switch (r->act) {
	case ACT_OTHER:
		r->other_ok[0] = write_one(r->rb, 4, 0) == 0;
		r->other_ok[1] = write_one(r->rb, 4, 1) == 0;
		break;
	case ACT_RESET:
		r->reset_r = ringbuf_reset(r->rb);
		break;
	case ACT_QUIESCE: {
		struct ringbuf_stats st;
		r->quiesce_r = ringbuf_quiesce(r->rb, 0);
		if (ringbuf_stats_cpu(r->rb, (unsigned)r->cpu, &st) == 0)
			r->committed_at_quiesce = st.committed;
		break;
	}
	default:
		break;
	}
	return NULL;
}

static void hook(struct ringbuf *rb, unsigned cpu, int point, void *vctx)
{
	struct run *r = (struct run *)vctx;
	pthread_t th;
	if (!r->armed || rb != r->rb || point != r->point || !pthread_equal(pthread_self(), r->writer))
		return;
	r->armed = 0;
	r->hits++;
	r->hit_cpu = cpu;
	r->word_at = owner_word(rb, cpu);
	if (r->undo)
		ringbuf_record_on(rb); /* the outer event was refused; the rest are not */
	if (r->act == ACT_NEST) {
		/* an "IRQ" event and an "NMI" event inside it */
		struct ev *p = (struct ev *)ringbuf_reserve(rb, RINGBUF_CPU_CURRENT, sizeof *p);
		r->nest_ok[0] = p != NULL;
		if (p) {
			p->who = 2;
			p->seq = 0;
			r->committing_in_nest[0] = (uint32_t)RINGBUF__LOAD(&ringbuf__cpu(rb, cpu)->committing);
			{
				struct ev *q = (struct ev *)ringbuf_reserve(rb, RINGBUF_CPU_CURRENT, sizeof *q);
				r->nest_ok[1] = q != NULL;
				if (q) {
					q->who = 3;
					q->seq = 0;
					r->committing_in_nest[1] =
						(uint32_t)RINGBUF__LOAD(&ringbuf__cpu(rb, cpu)->committing);
					ringbuf_commit(rb, RINGBUF_CPU_CURRENT, q);
				}
			}
			ringbuf_commit(rb, RINGBUF_CPU_CURRENT, p);
		}
	} else if (pthread_create(&th, NULL, other_main, r) == 0) {
		/* the writer is parked here until the other thread is done (it
		 * inherits the pinning: same CPU, same G1 pick) */
		(void)pthread_join(th, NULL);
	}
	r->word_after_act = owner_word(rb, cpu);
	{
		uint64_t me;
		ringbuf__tcur_get(&r->tcur_after_act, &me);
	}
}

static void *writer_main(void *arg)
{
	struct run *r = (struct run *)arg;
	cpu_set_t set;
	struct ringbuf__tctx *e;
	CPU_ZERO(&set);
	CPU_SET(r->cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0)
		return NULL;
	r->tid = (uint32_t)syscall(SYS_gettid);
	r->rseq = ringbuf__rseq_cpu() == r->cpu;
	if (!r->rseq)
		return NULL;
	r->writer = pthread_self();
	/* the thread's first event is out of line (it draws the token); the
	 * next ones take the inline claim */
	r->armed = r->first;
	r->outer_ok[0] = write_one(r->rb, 1, 0) == 0;
	if (r->undo)
		ringbuf_record_off(r->rb);
	r->armed = 1;
	r->outer_ok[1] = write_one(r->rb, 1, 1) == 0;
	r->armed = 0;
	ringbuf_record_on(r->rb);
	r->outer_ok[2] = write_one(r->rb, 1, 2) == 0;
	e = ringbuf__tctx_at_last();
	r->cur_after = atomic_load_explicit(&e->cur, memory_order_relaxed);
	ringbuf__tcur_get(&r->tcur_after, &r->tcur_me_after);
	r->tcur_key = r->rb->tclaim_key;
	return NULL;
}

/* The first CPU the process may run on. */
static int first_cpu(void)
{
	cpu_set_t set;
	int i;
	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return -1;
	for (i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set))
			return i;
	return -1;
}

struct got {
	int n;
	struct ev ev[16];
	unsigned buf[16];
};

static void read_all(struct ringbuf *rb, unsigned ncpu, struct got *g)
{
	struct ringbuf_record rec;
	unsigned c;
	memset(g, 0, sizeof *g);
	for (c = 0; c < ncpu; c++)
		while (g->n < 16 && ringbuf_consume(rb, c, &rec) == 1) {
			memcpy(&g->ev[g->n], rec.data, sizeof g->ev[0]);
			g->buf[g->n] = c;
			g->n++;
		}
}

/* Runs one (point, action) case on a fresh ring buffer of ncpu buffers with
 * the writer pinned to cpu; returns 0 when skipped (no rseq). */
static int run_case(struct run *r, int cpu, unsigned ncpu, int pi, enum action act)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	pthread_t th;
	memset(r, 0, sizeof *r);
	cfg.ncpu = ncpu;
	cfg.size_per_cpu = 64 << 10;
	cfg.mode = RINGBUF_MODE_OVERWRITE;
	if (g_kind) {
		/* buffers 0 .. cpu are CPUs', the ones after the writer's shared */
		cfg.flags = RINGBUF_F_CPU_CURRENT | (g_kind == 2 ? RINGBUF_F_NO_RSEQ : 0u);
		cfg.shared = ncpu - (unsigned)cpu - 1;
	}
	assert_int_equal(ringbuf_create(&cfg, &r->rb), 0);
	if (pi == 0 && act == ACT_NEST)
		print_message("  %s block\n", kind_names[g_kind]);
	r->cpu = cpu;
	r->point = points[pi];
	r->act = act;
	r->undo = pi == UNDONE;
	r->reset_r = r->quiesce_r = 1;
	ringbuf__set_testpoint_hook(hook, r);
	assert_int_equal(pthread_create(&th, NULL, writer_main, r), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	ringbuf__set_testpoint_hook(NULL, NULL);
	if (!r->rseq) {
		ringbuf_destroy(r->rb);
		return 0;
	}
	return 1;
}

/* Common to every case, checked after the case's own checks: the point was
 * reached once, on the held buffer, with the owner word ours (and still ours
 * after the nested writer / other thread / reset); the writer's three events
 * were written; afterwards every word is 0, no writer inside, cur 0. */
static void check_common(const struct run *r, unsigned ncpu)
{
	unsigned c;
	assert_int_equal(r->hits, 1);
	assert_int_equal(r->hit_cpu, (unsigned)r->cpu);
	assert_int_not_equal(r->word_at, 0);
	assert_int_equal(r->word_at & RINGBUF__OWN_TID, r->tid);
	assert_int_equal(r->word_at & (RINGBUF__OWN_PERSIST | RINGBUF__OWN_RELEASING), 0);
	assert_int_equal(r->word_after_act, r->word_at);
	assert_true(r->outer_ok[0] && r->outer_ok[2]);
	assert_int_equal(r->outer_ok[1], !r->undo);
	assert_int_equal(r->cur_after, 0);
	/* [TCUR] ARMED for rb with our owner id */
	assert_int_not_equal(r->tcur_key, 0);
	assert_int_equal(r->tcur_after, r->tcur_key | 1);
	assert_int_equal(r->tcur_me_after, r->word_at);
	for (c = 0; c < ncpu; c++) {
		assert_int_equal(owner_word(r->rb, c), 0);
		assert_int_equal(RINGBUF__LOAD(&ringbuf__cpu(r->rb, c)->committing), 0);
	}
}

static int g_cpu;

static int setup(void **state)
{
	(void)state;
	g_cpu = first_cpu();
	return g_cpu < 0;
}

static void expect_order(const struct got *g, const uint32_t *who, const uint32_t *seq, int n, unsigned buf)
{
	int i;
	assert_int_equal(g->n, n);
	for (i = 0; i < n; i++) {
		assert_int_equal(g->ev[i].who, who[i]);
		assert_int_equal(g->ev[i].seq, seq[i]);
		assert_int_equal(g->buf[i], buf);
	}
}

/* (a) a nested writer on the same thread at each window nests exactly. */
static void nested_writer_at_each_inline_step_nests_in_the_held_buffer(void **state)
{
	int pi;
	(void)state;
	for (pi = 0; pi < NPOINTS; pi++) {
		struct run r;
		struct got g;
		struct ringbuf_stats st;
		/* refused outer event: the nested ones between the others */
		static const uint32_t who_undo[4] = { 1, 2, 3, 1 }, seq_undo[4] = { 0, 0, 0, 2 };
		/* before the reserve the nested events go first, after the commit
		 * last; the NMI always inside the IRQ */
		static const uint32_t who_before[5] = { 1, 2, 3, 1, 1 }, seq_before[5] = { 0, 0, 0, 1, 2 };
		static const uint32_t who_after[5] = { 1, 1, 2, 3, 1 }, seq_after[5] = { 0, 1, 0, 0, 2 };
		if (!run_case(&r, g_cpu, (unsigned)g_cpu + 2, pi, ACT_NEST))
			skip();
		print_message("  %s: owner %#llx, IRQ %d (depth %u), NMI %d (depth %u)\n", point_names[pi],
			      (unsigned long long)r.word_at, r.nest_ok[0], r.committing_in_nest[0], r.nest_ok[1],
			      r.committing_in_nest[1]);
		assert_true(r.nest_ok[0] && r.nest_ok[1]);
		/* committing counts the writers in: before the entry and after
		 * the commit the outer one is not in, so the IRQ is outermost */
		assert_int_equal(r.committing_in_nest[0], 1 + point_inside[pi]);
		assert_int_equal(r.committing_in_nest[1], 2 + point_inside[pi]);
		assert_int_equal(ringbuf_stats(r.rb, &st), 0);
		assert_int_equal(st.committed, pi == UNDONE ? 4 : 5);
		assert_int_equal(st.disabled_events, pi == UNDONE ? 1 : 0);
		assert_int_equal(st.unmapped, 0);
		assert_int_equal(st.dropped_events, 0);
		read_all(r.rb, (unsigned)g_cpu + 2, &g);
		if (pi == UNDONE)
			expect_order(&g, who_undo, seq_undo, 4, (unsigned)g_cpu);
		else if (!point_reserved[pi])
			expect_order(&g, who_before, seq_before, 5, (unsigned)g_cpu);
		else
			expect_order(&g, who_after, seq_after, 5, (unsigned)g_cpu);
		check_common(&r, (unsigned)g_cpu + 2);
		ringbuf_destroy(r.rb);
	}
}

/* (b) another thread while the writer is parked at each window: never into
 * the held buffer; elsewhere with a free buffer, dropped and counted without. */
static void other_thread_at_each_inline_step_never_writes_the_held_buffer(void **state)
{
	int pi, bufs;
	(void)state;
	for (bufs = 2; bufs >= 1; bufs--) {
		/* one buffer only: the writer's CPU must be 0 (ncpu 1) */
		if (bufs == 1 && g_cpu != 0)
			break;
		for (pi = 0; pi < NPOINTS; pi++) {
			struct run r;
			struct got g;
			struct ringbuf_stats st;
			unsigned ncpu = (unsigned)g_cpu + (unsigned)bufs;
			int i, mine = 0, other = 0, nmine = pi == UNDONE ? 2 : 3;
			if (!run_case(&r, g_cpu, ncpu, pi, ACT_OTHER))
				skip();
			assert_int_equal(ringbuf_stats(r.rb, &st), 0);
			read_all(r.rb, ncpu, &g);
			print_message("  %s, %u buffer(s): other thread %d %d, unmapped %llu\n", point_names[pi], ncpu,
				      r.other_ok[0], r.other_ok[1], (unsigned long long)st.unmapped);
			for (i = 0; i < g.n; i++) {
				if (g.ev[i].who == 4) {
					assert_int_not_equal(g.buf[i], (unsigned)g_cpu);
					assert_int_equal(g.ev[i].seq, (uint32_t)other);
					other++;
				} else {
					assert_int_equal(g.ev[i].who, 1);
					assert_int_equal(g.buf[i], (unsigned)g_cpu);
					/* 0, 1, 2; 0, 2 when the outer one was refused */
					assert_int_equal(g.ev[i].seq, (uint32_t)(pi == UNDONE ? 2 * mine : mine));
					mine++;
				}
			}
			assert_int_equal(mine, nmine);
			if (ncpu > 1) {
				assert_true(r.other_ok[0] && r.other_ok[1]);
				assert_int_equal(other, 2);
				assert_int_equal(st.unmapped, 0);
			} else {
				assert_false(r.other_ok[0] || r.other_ok[1]);
				assert_int_equal(other, 0);
				assert_int_equal(st.unmapped, 2);
			}
			assert_int_equal(st.committed, (uint64_t)(nmine + other));
			check_common(&r, ncpu);
			ringbuf_destroy(r.rb);
		}
	}
}

/* (c) ringbuf_reset and ringbuf_quiesce from another thread at each window. */
static void reset_and_quiesce_at_each_inline_step(void **state)
{
	int pi;
	(void)state;
	for (pi = 0; pi < UNDONE; pi++) {
		struct run r;
		struct got g;
		struct ringbuf_stats st;
		unsigned ncpu = (unsigned)g_cpu + 1;
		if (point_inside[pi])
			continue; /* a reset would wait for the parked writer */
		if (!run_case(&r, g_cpu, ncpu, pi, ACT_RESET))
			skip();
		if (r.reset_r == RINGBUF_ESYS) {
			ringbuf_destroy(r.rb);
			skip(); /* no membarrier(2) */
		}
		/* no event in flight: the reset does not wait; the hold stays
		 * (word_after_act == word_at, checked in run_case) */
		assert_int_equal(r.reset_r, 0);
		assert_int_equal(ringbuf_stats(r.rb, &st), 0);
		assert_int_equal(st.disabled_events, 0);
		read_all(r.rb, ncpu, &g);
		print_message("  %s: reset %d, %d event(s) left\n", point_names[pi], r.reset_r, g.n);
		if (pi != UNHELD) {
			/* before the reserve: the outer event comes after the reset */
			static const uint32_t who[2] = { 1, 1 }, seq[2] = { 1, 2 };
			expect_order(&g, who, seq, 2, (unsigned)g_cpu);
		} else {
			/* after the commit: wiped with the one before it */
			static const uint32_t who[1] = { 1 }, seq[1] = { 2 };
			expect_order(&g, who, seq, 1, (unsigned)g_cpu);
		}
		check_common(&r, ncpu);
		ringbuf_destroy(r.rb);

		if (!run_case(&r, g_cpu, ncpu, pi, ACT_QUIESCE))
			skip();
		print_message("  %s: quiesce %d, committed %llu\n", point_names[pi], r.quiesce_r,
			      (unsigned long long)r.committed_at_quiesce);
		/* a hold without an event is not waited for (timeout 0: one look) */
		assert_int_equal(r.quiesce_r, 0);
		assert_int_equal(r.committed_at_quiesce, pi != UNHELD ? 1u : 2u);
		check_common(&r, ncpu);
		ringbuf_destroy(r.rb);
	}
}

/* [TCUR] in the out-of-line event (the thread's first: it arms the slot):
 * a nested writer (IRQ, NMI) right after the slot's OUT (the word taken,
 * its me and G3 not yet: the events nest there, the IRQ outermost, before the outer
 * event) and right after G4 (the outer event committed, the slot not armed
 * yet: after it); afterwards the slot ARMED, every word 0. */
static void nested_writer_in_the_out_of_line_event_at_out_and_g4(void **state)
{
	static const int opoints[2] = { RINGBUF__TP_TCUR_OUT, RINGBUF__TP_TCUR_G4 };
	static const uint32_t who[2][5] = { { 2, 3, 1, 1, 1 }, { 1, 2, 3, 1, 1 } };
	static const uint32_t seq[2][5] = { { 0, 0, 0, 1, 2 }, { 0, 0, 0, 1, 2 } };
	int k;
	(void)state;
	for (k = 0; k < 2; k++) {
		struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
		struct run r;
		struct got g;
		pthread_t th;
		memset(&r, 0, sizeof r);
		cfg.ncpu = (unsigned)g_cpu + 2;
		cfg.size_per_cpu = 64 << 10;
		assert_int_equal(ringbuf_create(&cfg, &r.rb), 0);
		r.cpu = g_cpu;
		r.point = opoints[k];
		r.act = ACT_NEST;
		r.first = 1;
		ringbuf__set_testpoint_hook(hook, &r);
		assert_int_equal(pthread_create(&th, NULL, writer_main, &r), 0);
		assert_int_equal(pthread_join(th, NULL), 0);
		ringbuf__set_testpoint_hook(NULL, NULL);
		if (!r.rseq) {
			ringbuf_destroy(r.rb);
			skip();
		}
		print_message("  %s: owner %#llx, IRQ %d (depth %u), NMI %d (depth %u)\n", k ? "G4" : "OUT",
			      (unsigned long long)r.word_at, r.nest_ok[0], r.committing_in_nest[0], r.nest_ok[1],
			      r.committing_in_nest[1]);
		assert_true(r.nest_ok[0] && r.nest_ok[1]);
		assert_int_equal(r.committing_in_nest[0], 1);
		assert_int_equal(r.committing_in_nest[1], 2);
		/* the nested events' OUT and ARM paired up: still the outer
		 * event's OUT, not ARMED under it */
		assert_int_equal(r.tcur_after_act, r.rb->tclaim_key | 2);
		read_all(r.rb, cfg.ncpu, &g);
		expect_order(&g, who[k], seq[k], 5, (unsigned)g_cpu);
		check_common(&r, cfg.ncpu);
		ringbuf_destroy(r.rb);
	}
}

/* Two shapes the inline path meets out of line, on the writer's own thread
 * (as a handler would, in the same order): */
struct mixed {
	struct ringbuf *rb;
	int cpu, rseq;
	int shape;            /* 0: CURRENT inside an explicit index's event; 1: discards;
			       * 2: a THREAD event (no claim) inside the inline event;
			       * 3, 4: CURRENT inside a THREAD event on a shared buffer,
			       * the slot armed before (3) or not (4);
			       * 5: CURRENT inside a THREAD event on its claimed buffer */
	int ok[4];
	int thread_cpu[2];    /* ringbuf_thread_cpu inside the inline event, nested */
	uint64_t word_in, tcur_in, tcur_after, me_after, key;
	uint32_t committing_in;
	uint32_t committing_claimed; /* shape 5: the claimed buffer's, inside the CURRENT event */
};

static void *mixed_main(void *arg)
{
	struct mixed *m = (struct mixed *)arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(m->cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0)
		return NULL;
	m->rseq = ringbuf__rseq_cpu() == m->cpu;
	if (!m->rseq)
		return NULL;
	/* out of line: arms the slot (shape 4: not armed, the first event is
	 * the shared one) */
	m->ok[0] = m->shape == 4 || write_one(m->rb, 1, 0) == 0;
	if (m->shape == 0) {
		/* an event of the buffer's explicit index is open when a
		 * RINGBUF_CPU_CURRENT event starts on it: the inline take
		 * finds the writer in (committing 1), gives the word back, and
		 * the event nests out of line (before the committing check,
		 * J1 left the slot BUSY with committing 2 at the commit: the
		 * word was never given back) */
		struct ev *p = (struct ev *)ringbuf_reserve(m->rb, (unsigned)m->cpu, sizeof *p);
		m->ok[1] = p != NULL;
		if (p) {
			p->who = 5;
			p->seq = 0;
			m->ok[2] = write_one(m->rb, 2, 0) == 0;
			m->word_in = owner_word(m->rb, (unsigned)m->cpu);
			ringbuf_commit(m->rb, (unsigned)m->cpu, p);
		}
	} else if (m->shape == 2) {
		/* a RINGBUF_CPU_THREAD event of a thread without a claim (a
		 * per-CPU block has none, and here no shared buffer) inside the
		 * inline event nests in it, as in an out-of-line one (before:
		 * dropped, counted in unmapped) */
		struct ev *p = (struct ev *)ringbuf_reserve(m->rb, RINGBUF_CPU_CURRENT, sizeof *p);
		m->ok[1] = p != NULL;
		if (p) {
			struct ev *q = (struct ev *)ringbuf_reserve(m->rb, RINGBUF_CPU_THREAD, sizeof *q);
			p->who = 1;
			p->seq = 1;
			m->word_in = owner_word(m->rb, (unsigned)m->cpu);
			m->ok[2] = q != NULL;
			if (q) {
				q->who = 6;
				q->seq = 0;
				m->committing_in = (uint32_t)RINGBUF__LOAD(&ringbuf__cpu(m->rb, (unsigned)m->cpu)->committing);
				ringbuf_commit(m->rb, RINGBUF_CPU_THREAD, q);
			}
			ringbuf_commit(m->rb, RINGBUF_CPU_CURRENT, p);
		}
	} else if (m->shape == 5) {
		/* a RINGBUF_CPU_CURRENT event inside a RINGBUF_CPU_THREAD event
		 * on the thread's claimed buffer (an ordinary block: the claim
		 * is its CPU's buffer, the first free one from there): not
		 * nested, it takes the next free buffer as its outermost writer
		 * (the claimed one's word names the claim) */
		struct ev *q = (struct ev *)ringbuf_reserve(m->rb, RINGBUF_CPU_THREAD, sizeof *q);
		m->ok[1] = q != NULL;
		if (q) {
			struct ev *p;
			q->who = 6;
			q->seq = 0;
			m->thread_cpu[0] = ringbuf_thread_cpu(m->rb);
			p = (struct ev *)ringbuf_reserve(m->rb, RINGBUF_CPU_CURRENT, sizeof *p);
			m->ok[2] = p != NULL;
			if (p) {
				p->who = 7;
				p->seq = 0;
				m->word_in = owner_word(m->rb, (unsigned)m->cpu + 1);
				m->committing_in =
					(uint32_t)RINGBUF__LOAD(&ringbuf__cpu(m->rb, (unsigned)m->cpu + 1)->committing);
				m->committing_claimed =
					(uint32_t)RINGBUF__LOAD(&ringbuf__cpu(m->rb, (unsigned)m->cpu)->committing);
				ringbuf_commit(m->rb, RINGBUF_CPU_CURRENT, p);
			}
			ringbuf_commit(m->rb, RINGBUF_CPU_THREAD, q);
			ringbuf_thread_release(m->rb);
		}
	} else if (m->shape >= 3) {
		/* a RINGBUF_CPU_CURRENT event inside a RINGBUF_CPU_THREAD event
		 * on a shared buffer (a per-CPU block: no claim), with the slot
		 * armed before (3) or not (4): the shared event marks the slot
		 * OUT, so the CURRENT event goes out of line and nests in the
		 * shared buffer either way, though its CPU's buffer is free
		 * (with the slot left ARMED by the shared event, it took that
		 * buffer inline when armed and nested when not) */
		struct ev *q = (struct ev *)ringbuf_reserve(m->rb, RINGBUF_CPU_THREAD, sizeof *q);
		m->ok[1] = q != NULL;
		if (q) {
			struct ev *p;
			uint64_t me;
			q->who = 6;
			q->seq = 0;
			m->thread_cpu[0] = ringbuf_thread_cpu(m->rb);
			ringbuf__tcur_get(&m->tcur_in, &me);
			p = (struct ev *)ringbuf_reserve(m->rb, RINGBUF_CPU_CURRENT, sizeof *p);
			m->ok[2] = p != NULL;
			if (p) {
				p->who = 7;
				p->seq = 0;
				m->thread_cpu[1] = ringbuf_thread_cpu(m->rb);
				m->word_in = owner_word(m->rb, (unsigned)m->cpu);
				m->committing_in = (uint32_t)RINGBUF__LOAD(&ringbuf__cpu(m->rb, (unsigned)m->cpu)->committing);
				ringbuf_commit(m->rb, RINGBUF_CPU_CURRENT, p);
			}
			ringbuf_commit(m->rb, RINGBUF_CPU_THREAD, q);
		}
	} else {
		/* the inline event discarded out of line (J0, the discard, G5),
		 * with an event nested in it discarded first ([TCUR] BUSY) */
		struct ev *p = (struct ev *)ringbuf_reserve(m->rb, RINGBUF_CPU_CURRENT, sizeof *p);
		m->ok[1] = p != NULL;
		if (p) {
			struct ev *q;
			m->thread_cpu[0] = ringbuf_thread_cpu(m->rb);
			m->word_in = owner_word(m->rb, (unsigned)m->cpu);
			q = (struct ev *)ringbuf_reserve(m->rb, RINGBUF_CPU_CURRENT, sizeof *q);
			m->ok[2] = q != NULL;
			if (q) {
				m->thread_cpu[1] = ringbuf_thread_cpu(m->rb);
				m->committing_in = (uint32_t)RINGBUF__LOAD(&ringbuf__cpu(m->rb, (unsigned)m->cpu)->committing);
				ringbuf_discard(m->rb, RINGBUF_CPU_CURRENT, q);
			}
			ringbuf_discard(m->rb, RINGBUF_CPU_CURRENT, p);
		}
	}
	m->ok[3] = write_one(m->rb, 1, 2) == 0; /* inline again */
	ringbuf__tcur_get(&m->tcur_after, &m->me_after);
	m->key = m->rb->tclaim_key;
	return NULL;
}

static void run_mixed(struct mixed *m, int shape)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	pthread_t th;
	memset(m, 0, sizeof *m);
	cfg.ncpu = (unsigned)g_cpu + 1;
	cfg.size_per_cpu = 64 << 10;
	cfg.mode = RINGBUF_MODE_OVERWRITE;
	if (shape == 2)
		cfg.flags = RINGBUF_F_CPU_CURRENT; /* cfg.shared 0: no shared buffer */
	if (shape == 5)
		cfg.ncpu++; /* an ordinary block, no shared buffer */
	else if (shape >= 3) {
		cfg.ncpu++;
		cfg.flags = RINGBUF_F_CPU_CURRENT;
		cfg.shared = 1; /* buffer cpu + 1 */
	}
	assert_int_equal(ringbuf_create(&cfg, &m->rb), 0);
	m->cpu = g_cpu;
	m->shape = shape;
	assert_int_equal(pthread_create(&th, NULL, mixed_main, m), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
}

/* The checks common to the three shapes, before and after each one's own:
 * skipped without rseq; afterwards every word 0, no writer in, the slot
 * ARMED; then the buffer's events (the writer's own buffer) and counts. */
static void mixed_start(struct mixed *m, int shape)
{
	unsigned c;
	run_mixed(m, shape);
	if (!m->rseq) {
		ringbuf_destroy(m->rb);
		skip();
	}
	assert_true(m->ok[0] && m->ok[1] && m->ok[2] && m->ok[3]);
	assert_int_equal(m->tcur_after, m->key | 1); /* ARMED */
	assert_int_not_equal(m->key, 0);
	for (c = 0; c <= (unsigned)m->cpu; c++) {
		assert_int_equal(owner_word(m->rb, c), 0);
		assert_int_equal(RINGBUF__LOAD(&ringbuf__cpu(m->rb, c)->committing), 0);
	}
}

static void mixed_end(struct mixed *m, const uint32_t *who, const uint32_t *seq, int n)
{
	struct got g;
	struct ringbuf_stats st;
	assert_int_equal(ringbuf_stats(m->rb, &st), 0);
	assert_int_equal(st.committed, (uint64_t)n);
	assert_int_equal(st.unmapped, 0);
	read_all(m->rb, (unsigned)g_cpu + 1, &g);
	expect_order(&g, who, seq, n, (unsigned)g_cpu);
	ringbuf_destroy(m->rb);
}

static void current_event_inside_an_explicit_index_event_nests_and_gives_the_word_back(void **state)
{
	struct mixed m;
	static const uint32_t who[4] = { 1, 5, 2, 1 }, seq[4] = { 0, 0, 0, 2 };
	(void)state;
	mixed_start(&m, 0);
	/* the nested event's word given back, the explicit event still open */
	assert_int_equal(m.word_in, 0);
	mixed_end(&m, who, seq, 4);
}

static void discards_of_the_inline_event_and_of_one_nested_in_it(void **state)
{
	struct mixed m;
	static const uint32_t who[2] = { 1, 1 }, seq[2] = { 0, 2 };
	(void)state;
	mixed_start(&m, 1);
	assert_int_equal(m.word_in, m.me_after);
	assert_int_equal(m.thread_cpu[0], g_cpu);
	assert_int_equal(m.thread_cpu[1], g_cpu);
	assert_int_equal(m.committing_in, 2);
	mixed_end(&m, who, seq, 2);
}

static void thread_event_without_a_claim_inside_the_inline_event_nests_there(void **state)
{
	struct mixed m;
	static const uint32_t who[4] = { 1, 1, 6, 1 }, seq[4] = { 0, 1, 0, 2 };
	(void)state;
	mixed_start(&m, 2);
	assert_int_equal(m.word_in, m.me_after);
	assert_int_equal(m.committing_in, 2);
	mixed_end(&m, who, seq, 4);
}

static void current_events_inside_a_shared_thread_event(int shape)
{
	struct mixed m;
	struct got g;
	struct ringbuf_stats st;
	static const uint32_t who[2][4] = { { 1, 1, 6, 7 }, { 1, 6, 7, 0 } },
			      seq[2][4] = { { 0, 2, 0, 0 }, { 2, 0, 0, 0 } };
	unsigned s = (unsigned)g_cpu + 1, c = (unsigned)g_cpu;
	unsigned bufs[2][4] = { { c, c, s, s }, { c, s, s, 0 } };
	int i, n = shape == 3 ? 4 : 3, k = shape - 3;
	mixed_start(&m, shape);
	assert_int_equal(m.tcur_in, m.key | 2); /* OUT in the shared event */
	assert_int_equal(m.thread_cpu[0], (int)s);
	assert_int_equal(m.thread_cpu[1], (int)s); /* nested there */
	assert_int_equal(m.committing_in, 0);      /* its CPU's buffer untouched */
	assert_int_equal(m.word_in, 0);
	assert_int_equal(owner_word(m.rb, s), 0);
	assert_int_equal(RINGBUF__LOAD(&ringbuf__cpu(m.rb, s)->committing), 0);
	assert_int_equal(ringbuf_stats(m.rb, &st), 0);
	assert_int_equal(st.committed, (uint64_t)n);
	assert_int_equal(st.unmapped, 0);
	read_all(m.rb, s + 1, &g);
	assert_int_equal(g.n, n);
	for (i = 0; i < n; i++) {
		assert_int_equal(g.ev[i].who, who[k][i]);
		assert_int_equal(g.ev[i].seq, seq[k][i]);
		assert_int_equal(g.buf[i], bufs[k][i]);
	}
	ringbuf_destroy(m.rb);
}

static void current_event_inside_a_claimed_thread_event_takes_another_buffer(void **state)
{
	struct mixed m;
	struct got g;
	static const uint32_t who[4] = { 1, 6, 1, 7 }, seq[4] = { 0, 0, 2, 0 };
	unsigned c = (unsigned)g_cpu, bufs[4] = { c, c, c, c + 1 };
	int i;
	(void)state;
	mixed_start(&m, 5);
	assert_int_equal(m.thread_cpu[0], g_cpu); /* the claim */
	assert_int_equal(m.committing_claimed, 1); /* the THREAD event still in flight there */
	assert_int_equal(m.word_in, m.me_after);  /* the next buffer, ours */
	assert_int_equal(m.committing_in, 1);     /* outermost there */
	assert_int_equal(owner_word(m.rb, c + 1), 0);
	read_all(m.rb, c + 2, &g);
	assert_int_equal(g.n, 4);
	for (i = 0; i < 4; i++) {
		assert_int_equal(g.ev[i].who, who[i]);
		assert_int_equal(g.ev[i].seq, seq[i]);
		assert_int_equal(g.buf[i], bufs[i]);
	}
	ringbuf_destroy(m.rb);
}

static void current_event_inside_a_shared_thread_event_nests_there(void **state)
{
	(void)state;
	current_events_inside_a_shared_thread_event(3);
}

static void current_event_inside_a_shared_thread_event_nests_there_slot_not_armed(void **state)
{
	(void)state;
	current_events_inside_a_shared_thread_event(4);
}

/* each case on each kind of block */
#define KINDS(fn)                                      \
	static void fn##_per_cpu(void **state)         \
	{                                              \
		g_kind = 1;                            \
		fn(state);                             \
		g_kind = 0;                            \
	}                                              \
	static void fn##_per_cpu_cas(void **state)     \
	{                                              \
		g_kind = 2;                            \
		fn(state);                             \
		g_kind = 0;                            \
	}
KINDS(nested_writer_at_each_inline_step_nests_in_the_held_buffer)
KINDS(other_thread_at_each_inline_step_never_writes_the_held_buffer)
KINDS(reset_and_quiesce_at_each_inline_step)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(nested_writer_at_each_inline_step_nests_in_the_held_buffer),
		cmocka_unit_test(other_thread_at_each_inline_step_never_writes_the_held_buffer),
		cmocka_unit_test(reset_and_quiesce_at_each_inline_step),
		cmocka_unit_test(nested_writer_at_each_inline_step_nests_in_the_held_buffer_per_cpu),
		cmocka_unit_test(other_thread_at_each_inline_step_never_writes_the_held_buffer_per_cpu),
		cmocka_unit_test(reset_and_quiesce_at_each_inline_step_per_cpu),
		cmocka_unit_test(nested_writer_at_each_inline_step_nests_in_the_held_buffer_per_cpu_cas),
		cmocka_unit_test(other_thread_at_each_inline_step_never_writes_the_held_buffer_per_cpu_cas),
		cmocka_unit_test(reset_and_quiesce_at_each_inline_step_per_cpu_cas),
		cmocka_unit_test(current_event_inside_an_explicit_index_event_nests_and_gives_the_word_back),
		cmocka_unit_test(discards_of_the_inline_event_and_of_one_nested_in_it),
		cmocka_unit_test(thread_event_without_a_claim_inside_the_inline_event_nests_there),
		cmocka_unit_test(current_event_inside_a_claimed_thread_event_takes_another_buffer),
		cmocka_unit_test(current_event_inside_a_shared_thread_event_nests_there),
		cmocka_unit_test(current_event_inside_a_shared_thread_event_nests_there_slot_not_armed),
		cmocka_unit_test(nested_writer_in_the_out_of_line_event_at_out_and_g4),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
