/* Tests of snapshots and stack traces (ringbuf_trace.h >>snapshot): the
 * `snapshot` trigger fires exactly as counted and the snapshot holds exactly
 * the events up to and including the triggering one; cut-in tests at each
 * step T1-T5 of ringbuf_trace_snapshot (a nested snapshot refused, writers
 * appending and overwriting under the copy: complete events, in order,
 * losses counted); a full buffer copied without a drop; writer threads and
 * signal handlers racing snapshots taken from signal handlers and threads,
 * each snapshot checked while it is still the current one (every copied
 * event intact and in order; producer/consumer: per writer a contiguous run
 * from its first event, nothing lost; overwrite: gaps <= lost; taken + busy
 * == attempts); a reader holding the lock: the CPU skipped, counted; the
 * `stacktrace` trigger and ringbuf_trace_stacktrace() (the
 * callers by name, counts) and `trace-cmd report` on an exported stack;
 * malformed snapshot/stacktrace triggers (positions, nothing changed); a
 * snapshot buffer exported to trace.dat.
 */
/* CFLAGS: -fno-omit-frame-pointer */
#define _GNU_SOURCE 1
#ifndef RINGBUF_TESTING
#define RINGBUF_TESTING
#endif
#define RINGBUF_IMPLEMENTATION
#define RINGBUF_TRACE_DEFINE_EVENTS
#include "ringbuf_ftrace.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

RINGBUF_TRACE_EVENT(small, RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, seq), RINGBUF_FIELD(int32_t, v)),
		    RINGBUF_PRINT("seq=%u v=%d", REC->seq, REC->v));
RINGBUF_TRACE_EVENT(other, RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, x)), RINGBUF_PRINT("x=%u", REC->x));
/* a writer's record: who, its sequence, and a check word pattern */
RINGBUF_TRACE_EVENT(work, RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, who), RINGBUF_FIELD(uint32_t, seq),
					 RINGBUF_ARRAY(uint32_t, chk, 6)),
		    RINGBUF_PRINT("who=%u seq=%u", REC->who, REC->seq));

/* A stack record's payload is 4-aligned (no RINGBUF_F_ALIGN8): read it from
 * an aligned copy, not through the 8-aligned struct in place (UBSan). */
static const struct ringbuf_trace_stack *stk_of(const void *data, size_t len)
{
	static _Alignas(8) unsigned char copy[sizeof(struct ringbuf_trace_stack) + 64 * sizeof(unsigned long)];
	memcpy(copy, data, len < sizeof copy ? len : sizeof copy);
	return (const struct ringbuf_trace_stack *)(const void *)copy;
}

static struct ringbuf_trace_registry reg = RINGBUF_TRACE_REGISTRY_INIT("snap");

static int setup(void **state)
{
	(void)state;
	if (ringbuf_event_small.id == 0 &&
	    (ringbuf_trace_register_event(&reg, &ringbuf_event_small) < 0 ||
	     ringbuf_trace_register_event(&reg, &ringbuf_event_other) < 0 ||
	     ringbuf_trace_register_event(&reg, &ringbuf_event_work) < 0))
		return -1;
	ringbuf_trace_enable(&reg, "*");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	ringbuf_trace__snapshot_testing(NULL, NULL);
	if (ringbuf_trace_set_trigger(&reg, "*", "!snapshot", NULL) < 0 ||
	    ringbuf_trace_set_trigger(&reg, "*", "!stacktrace", NULL) < 0)
		return -1;
	ringbuf_trace_snapshot_attach(&reg, NULL);
	return ringbuf_event_small.state == ringbuf_event_small.id ? 0 : -1;
}

static struct ringbuf *make_rb(unsigned ncpu, size_t size, int mode)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	cfg.ncpu = ncpu;
	cfg.size_per_cpu = size;
	cfg.mode = mode;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	return rb;
}

static uint16_t type_of(const struct ringbuf_record *r)
{
	return ((const struct ringbuf_trace_entry *)r->data)->type;
}

/* ---- the trigger: exactly once, exactly the events up to it --------------- */

static void snapshot_trigger_holds_the_events_up_to_the_trigger(void **state)
{
	struct ringbuf *rb = make_rb(2, 1 << 20, RINGBUF_MODE_OVERWRITE), *sb;
	struct ringbuf_trace_snapshot *snap;
	struct ringbuf_trace_snapshot_stats st;
	struct ringbuf_record r;
	char text[128];
	uint32_t i, n0 = 0, n1 = 0, last_small = 0, next_other = 0, next_small = 0;
	uint64_t last_ts = 0;
	(void)state;
	assert_int_equal(ringbuf_trace_snapshot_create(rb, &snap), 0);
	assert_int_equal(ringbuf_trace_snapshot_attach(&reg, snap), 0);
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "snapshot:1 if seq >= 100", NULL), 1);
	ringbuf_trace_get_triggers(&ringbuf_event_small, text, sizeof text);
	assert_string_equal(text, "snapshot:1 if seq >= 100\n");
	for (i = 0; i < 200; i++) {
		assert_int_equal(trace_small(rb, 0, i, 1), 1);
		assert_int_equal(trace_other(rb, 1, i), 1);
	}
	ringbuf_trace_get_triggers(&ringbuf_event_small, text, sizeof text);
	assert_string_equal(text, "snapshot:0 if seq >= 100\n");
	ringbuf_trace_snapshot_stats(snap, &st);
	assert_int_equal(st.taken, 1);
	assert_int_equal(st.busy, 0);
	/* small 0..100 on CPU 0 (the trigger's own event included), other 0..99
	 * on CPU 1 (other 100 comes after the trigger) */
	assert_int_equal(st.events, 101 + 100);
	assert_int_equal(st.lost, 0);
	assert_int_equal(st.dropped, 0);
	assert_int_equal(st.cpus_skipped, 0);
	sb = ringbuf_trace_snapshot_buffer(snap);
	while (ringbuf_consume(sb, 0, &r) == 1) {
		const struct ringbuf_ev_small *e = (const struct ringbuf_ev_small *)r.data;
		assert_int_equal(type_of(&r), ringbuf_event_small.id);
		assert_int_equal(e->seq, next_small++);
		assert_true(r.ts >= last_ts);
		last_ts = r.ts;
		last_small = e->seq;
		n0++;
	}
	while (ringbuf_consume(sb, 1, &r) == 1) {
		assert_int_equal(type_of(&r), ringbuf_event_other.id);
		assert_int_equal(((const struct ringbuf_ev_other *)r.data)->x, next_other++);
		n1++;
	}
	assert_int_equal(n0, 101);
	assert_int_equal(last_small, 100); /* the triggering event is the last one */
	assert_int_equal(n1, 100);
	/* the source is untouched: every event still there */
	for (i = 0; ringbuf_consume(rb, 0, &r) == 1; i++)
		;
	assert_int_equal(i, 200);
	/* the time stamps are the source's: a direct snapshot of the same
	 * events gives the same stamps */
	for (i = 0; i < 3; i++)
		assert_int_equal(trace_other(rb, 1, 1000 + i), 1);
	/* a direct snapshot: CPU 0 was consumed, CPU 1 holds 203 */
	assert_int_equal(ringbuf_trace_snapshot(snap), 203);
	for (i = 0; i < 203; i++) {
		struct ringbuf_record a, b;
		assert_int_equal(ringbuf_consume(rb, 1, &a), 1);
		assert_int_equal(ringbuf_consume(sb, 1, &b), 1);
		assert_int_equal(a.ts, b.ts);
		assert_memory_equal(a.data, b.data, a.len);
	}
	assert_int_equal(ringbuf_consume(sb, 0, &r), 0);
	ringbuf_trace_snapshot_stats(snap, &st);
	assert_int_equal(st.taken, 2);
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "!snapshot", NULL), 1);
	ringbuf_trace_snapshot_destroy(snap);
	ringbuf_destroy(rb);
}

/* Same stamps, same payloads: the snapshot of an unread buffer is the
 * buffer, event for event. */
static void snapshot_copies_stamps_and_payloads(void **state)
{
	struct ringbuf *rb = make_rb(1, 1 << 16, RINGBUF_MODE_OVERWRITE), *sb;
	struct ringbuf_trace_snapshot *snap;
	struct ringbuf_record a, b;
	uint32_t i;
	(void)state;
	assert_int_equal(ringbuf_trace_snapshot_create(rb, &snap), 0);
	sb = ringbuf_trace_snapshot_buffer(snap);
	assert_int_equal(ringbuf_nr_pages(sb), ringbuf_nr_pages(rb) + 2);
	assert_string_equal(ringbuf_clock_name(sb), "mono");
	for (i = 0; i < 50; i++)
		assert_int_equal(trace_small(rb, 0, i, -(int32_t)i), 1);
	assert_int_equal(ringbuf_trace_snapshot(snap), 50);
	for (i = 0; i < 50; i++) {
		assert_int_equal(ringbuf_consume(rb, 0, &a), 1);
		assert_int_equal(ringbuf_consume(sb, 0, &b), 1);
		assert_int_equal(a.ts, b.ts);
		assert_int_equal(a.len, b.len);
		assert_memory_equal(a.data, b.data, a.len);
	}
	assert_int_equal(ringbuf_consume(sb, 0, &b), 0);
	/* a snapshot replaces the last one; an empty source gives an empty one */
	assert_int_equal(ringbuf_trace_snapshot(snap), 0);
	assert_int_equal(ringbuf_consume(sb, 0, &b), 0);
	assert_int_equal(ringbuf_trace_snapshot(NULL), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_trace_snapshot_create(NULL, &snap), RINGBUF_EINVAL);
	ringbuf_trace_snapshot_destroy(snap);
	ringbuf_destroy(rb);
}

/* A full overwrite buffer, lapped many times with events of every size: the
 * snapshot buffer takes all of it (nothing dropped), event for event. */
static void snapshot_of_a_full_buffer_drops_nothing(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL, *sb;
	struct ringbuf_trace_snapshot *snap;
	struct ringbuf_trace_snapshot_stats st;
	struct ringbuf_record a, b;
	unsigned char buf[512];
	uint32_t i, n = 0;
	(void)state;
	cfg.size_per_cpu = 8 * 1024;
	cfg.page_size = 1024;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	assert_int_equal(ringbuf_trace_snapshot_create(rb, &snap), 0);
	for (i = 0; i < 5000; i++) {
		size_t len = 4 + (i * 37) % 500;
		memset(buf, (int)(i & 0xff), len);
		memcpy(buf, &i, 4);
		assert_int_equal(ringbuf_write(rb, 0, buf, len), 0);
	}
	assert_true(ringbuf_trace_snapshot(snap) > 0);
	ringbuf_trace_snapshot_stats(snap, &st);
	assert_int_equal(st.dropped, 0);
	assert_int_equal(st.lost, 0);
	sb = ringbuf_trace_snapshot_buffer(snap);
	while (ringbuf_consume(rb, 0, &a) == 1) {
		assert_int_equal(ringbuf_consume(sb, 0, &b), 1);
		assert_int_equal(a.ts, b.ts);
		assert_int_equal(a.len, b.len);
		assert_memory_equal(a.data, b.data, a.len);
		n++;
	}
	assert_int_equal(ringbuf_consume(sb, 0, &b), 0);
	assert_int_equal(n, st.events);
	assert_true(n > 10);
	ringbuf_trace_snapshot_destroy(snap);
	ringbuf_destroy(rb);
}

/* ---- cut-in tests at T1-T5 -------------------------------------------------- */

struct cut {
	struct ringbuf *rb;
	struct ringbuf_trace_snapshot *snap;
	int at;           /* the step to cut in at */
	unsigned writes;  /* events to write there, in all */
	unsigned per;     /* per visit of the step */
	uint32_t seq;     /* next seq to write */
	int nested;       /* the nested snapshot's result */
	unsigned visits[6];
};

static void cut_hook(int step, void *ctx)
{
	struct cut *c = (struct cut *)ctx;
	unsigned k;
	c->visits[step]++;
	if (step != c->at)
		return;
	if (step == 1 || step == 5) {
		/* a signal handler's snapshot while one is in progress */
		c->nested = ringbuf_trace_snapshot(c->snap);
	}
	if (step >= 3) {
		/* T3 read the limit before this: make sure the clock moved on
		 * (a step of the clock, not a time to wait for) */
		uint64_t t = ringbuf_time_stamp(c->rb);
		while (ringbuf_time_stamp(c->rb) == t)
			;
	}
	for (k = 0; k < c->per && c->writes; k++, c->writes--)
		assert_int_equal(trace_small(c->rb, 0, c->seq++, 7), 1);
}

/* Consume the snapshot's CPU 0: seqs strictly increasing, every payload
 * intact (v == 7 or the initial 1); returns the count, first and last seq. */
static unsigned check_run(struct ringbuf *sb, uint32_t *first, uint32_t *last, uint64_t *gaps)
{
	struct ringbuf_record r;
	unsigned n = 0;
	*gaps = 0;
	while (ringbuf_consume(sb, 0, &r) == 1) {
		const struct ringbuf_ev_small *e = (const struct ringbuf_ev_small *)r.data;
		assert_int_equal(type_of(&r), ringbuf_event_small.id);
		assert_true(e->v == 7 || e->v == 1);
		if (n == 0)
			*first = e->seq;
		else {
			assert_true(e->seq > *last);
			*gaps += e->seq - *last - 1;
		}
		*last = e->seq;
		n++;
	}
	return n;
}

static void cut_in_at_each_step(void **state)
{
	int step;
	(void)state;
	for (step = 1; step <= 5; step++) {
		struct ringbuf *rb = make_rb(1, 1 << 20, RINGBUF_MODE_OVERWRITE);
		struct ringbuf_trace_snapshot *snap;
		struct ringbuf_trace_snapshot_stats st;
		struct cut c;
		uint32_t i, first = 0, last = 0;
		uint64_t gaps;
		unsigned n;
		int r;
		memset(&c, 0, sizeof c);
		assert_int_equal(ringbuf_trace_snapshot_create(rb, &snap), 0);
		c.rb = rb;
		c.snap = snap;
		c.at = step;
		c.writes = 20;
		c.per = step == 4 ? 1 : 20;
		c.nested = 1;
		for (i = 0; i < 100; i++)
			assert_int_equal(trace_small(rb, 0, c.seq++, 1), 1);
		ringbuf_trace__snapshot_testing(cut_hook, &c);
		r = ringbuf_trace_snapshot(snap);
		ringbuf_trace__snapshot_testing(NULL, NULL);
		ringbuf_trace_snapshot_stats(snap, &st);
		n = check_run(ringbuf_trace_snapshot_buffer(snap), &first, &last, &gaps);
		assert_int_equal(first, 0);
		assert_int_equal(gaps, 0);
		assert_int_equal(st.lost, 0);
		assert_int_equal(c.visits[1], 1);
		assert_int_equal(c.visits[5], 1);
		switch (step) {
		case 1: /* before the reset: the nested one refused, the writes copied */
		case 2: /* after the reset, before the limit: copied */
			if (step == 1)
				assert_int_equal(c.nested, RINGBUF_EBUSY);
			assert_int_equal(r, 120);
			assert_int_equal(n, 120);
			assert_int_equal(last, 119);
			assert_int_equal(st.busy, step == 1 ? 1 : 0);
			break;
		case 3: /* after the limit: not copied */
		case 4: /* one per event copied: after the limit, not copied */
			assert_int_equal(r, 100);
			assert_int_equal(n, 100);
			assert_int_equal(last, 99);
			assert_int_equal(st.busy, 0);
			break;
		default: /* T5: the copy is done; the nested one refused */
			assert_int_equal(c.nested, RINGBUF_EBUSY);
			assert_int_equal(r, 100);
			assert_int_equal(n, 100);
			assert_int_equal(st.busy, 1);
			break;
		}
		assert_int_equal(st.taken, 1);
		assert_int_equal(st.events, n);
		/* the refused one changed nothing: a later one goes through */
		assert_int_equal(ringbuf_trace_snapshot(snap), 120);
		ringbuf_trace_snapshot_destroy(snap);
		ringbuf_destroy(rb);
	}
}

/* T4 with overwrites: the writer (a signal handler of the walk's CPU, here
 * the hook) laps the small buffer under the copy. Only events written before
 * the copy began are copied, in order and intact; every one of them from the
 * first copied to the last written before the copy is either in the
 * snapshot or counted lost (lost may also count overwritten later ones). */
static void cut_in_overwrites_are_counted_exactly(void **state)
{
	unsigned round;
	(void)state;
	for (round = 0; round < 4; round++) {
		struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
		struct ringbuf *rb = NULL;
		struct ringbuf_trace_snapshot *snap;
		struct ringbuf_trace_snapshot_stats st;
		struct cut c;
		uint32_t i, first = 0, last = 0;
		uint64_t gaps;
		unsigned n;
		cfg.size_per_cpu = 4 * 1024;
		cfg.page_size = 1024;
		assert_int_equal(ringbuf_create(&cfg, &rb), 0);
		memset(&c, 0, sizeof c);
		assert_int_equal(ringbuf_trace_snapshot_create(rb, &snap), 0);
		c.rb = rb;
		c.snap = snap;
		c.at = 4;
		c.per = 10 + 25 * round; /* up to about two laps per event copied */
		c.writes = 2000;
		for (i = 0; i < 300; i++)
			assert_int_equal(trace_small(rb, 0, c.seq++, 1), 1);
		ringbuf_trace__snapshot_testing(cut_hook, &c);
		assert_true(ringbuf_trace_snapshot(snap) > 0);
		ringbuf_trace__snapshot_testing(NULL, NULL);
		ringbuf_trace_snapshot_stats(snap, &st);
		n = check_run(ringbuf_trace_snapshot_buffer(snap), &first, &last, &gaps);
		assert_int_equal(n, st.events);
		assert_int_equal(st.dropped, 0);
		assert_true(st.lost > 0);
		assert_true(last < 300);              /* nothing written after the limit */
		assert_true(gaps <= st.lost);
		assert_true((uint64_t)(300 - first) <= n + st.lost);
		assert_true(c.writes < 2000);         /* the writer did cut in */
		ringbuf_trace_snapshot_destroy(snap);
		ringbuf_destroy(rb);
	}
}

/* ---- racing writers, signal handlers and snapshots ------------------------- */

#define RACE_SNAPS 100
#define RACE_CAP 10000 /* events per writer at most (producer/consumer: far below a CPU buffer) */
#define NWRITERS 2     /* writer threads, CPU 0 and 1; the main thread and its handler: CPU 2 */

static struct ringbuf *race_rb;
static struct ringbuf_trace_snapshot *race_snap;
static int race_overwrite; /* the source in overwrite mode, small: losses */
static _Atomic(int) race_stop, race_tid;
static _Atomic(uint64_t) race_attempts, race_ok, race_bad, race_checked, race_sig_seq, race_lossy,
	race_handled, race_why, race_skipped;
static _Alignas(64) unsigned char race_scratch[1 << 16];

/* a failed check: counted, and which one (bit n-1) for the message */
static void race_fail(unsigned n)
{
	atomic_fetch_add(&race_bad, 1);
	atomic_fetch_or(&race_why, (uint64_t)1 << (n - 1));
}

static int emit_work(unsigned cpu, uint32_t who, uint32_t seq)
{
	uint32_t chk[6];
	unsigned k;
	for (k = 0; k < 6; k++)
		chk[k] = seq * 2654435761u ^ who ^ k;
	return trace_work(race_rb, cpu, who, seq, chk);
}

/* Check the snapshot buffer without consuming it (an iterator in static
 * memory: async-signal-safe). Called at T5, so the snapshot being checked is
 * the one just taken and no other can start meanwhile (busy is held). Every
 * record intact; per writer the seqs go up; producer/consumer source: one
 * contiguous run from 0 per writer and nothing lost; overwrite source: the
 * gaps inside each writer's run add up to no more than the events counted
 * lost. */
static void check_snapshot(void)
{
	struct ringbuf *sb = ringbuf_trace_snapshot_buffer(race_snap);
	struct ringbuf_trace_snapshot_stats st;
	uint64_t gaps = 0, n = 0;
	unsigned cpu;
	ringbuf_trace_snapshot_stats(race_snap, &st);
	for (cpu = 0; cpu < ringbuf_ncpu(sb); cpu++) {
		struct ringbuf_iter *it;
		struct ringbuf_record r;
		uint32_t next[4] = {0, 0, 0, 0};
		bool seen[4] = {false, false, false, false};
		if (ringbuf_iter_init_in(race_scratch, sizeof race_scratch, sb, cpu, RINGBUF_ITER_NOWAIT,
					 &it) != 0) {
			race_fail(1);
			return;
		}
		while (ringbuf_iter_next(it, &r) == 1) {
			const struct ringbuf_ev_work *e = (const struct ringbuf_ev_work *)r.data;
			unsigned k;
			if (type_of(&r) != ringbuf_event_work.id || e->who >= 4 || r.lost) {
				race_fail(2);
				break;
			}
			if (!race_overwrite ? e->seq != next[e->who]
					    : (seen[e->who] && e->seq < next[e->who])) {
				race_fail(3);
				break;
			}
			if (seen[e->who])
				gaps += e->seq - next[e->who];
			for (k = 0; k < 6; k++)
				if (e->chk[k] != (e->seq * 2654435761u ^ e->who ^ k))
					race_fail(4);
			next[e->who] = e->seq + 1;
			seen[e->who] = true;
			n++;
		}
		ringbuf_iter_finish(it);
	}
	if (n != st.events)
		race_fail(5);
	if (gaps > st.lost)
		race_fail(10);
	if (!race_overwrite && (st.lost || st.dropped))
		race_fail(11);
	if (st.dropped)
		race_fail(12);
	/* overwrite source: a head push that stays claimed through the
	 * snapshot's tries (its writer preempted there, or interrupted by this
	 * handler) skips that CPU, counted; producer/consumer: no push, none */
	if (st.cpus_skipped && !race_overwrite)
		race_fail(13);
	atomic_fetch_add(&race_skipped, st.cpus_skipped);
	if (st.lost)
		atomic_fetch_add(&race_lossy, 1);
	atomic_fetch_add(&race_checked, n);
}

static void race_hook(int step, void *ctx)
{
	(void)ctx;
	if (step == 5)
		check_snapshot();
}

static void take_snapshot(void)
{
	int r;
	atomic_fetch_add(&race_attempts, 1);
	r = ringbuf_trace_snapshot(race_snap);
	if (r >= 0)
		atomic_fetch_add(&race_ok, 1);
	else if (r != RINGBUF_EBUSY)
		race_fail(6);
}

static void race_handler(int sig)
{
	(void)sig;
	/* a nested writer on the main thread's CPU, then a snapshot */
	if (emit_work(2, 3, (uint32_t)atomic_fetch_add(&race_sig_seq, 1)) != 1)
		race_fail(7);
	take_snapshot();
	atomic_fetch_add(&race_handled, 1);
}

static void *race_writer(void *arg)
{
	unsigned who = (unsigned)(uintptr_t)arg;
	uint32_t seq = 0;
	while (!atomic_load(&race_stop) && (race_overwrite || seq < RACE_CAP)) {
		if (emit_work(who, who, seq++) != 1)
			race_fail(8);
		if ((seq & 1023) == 0) /* threads take snapshots too: contention */
			take_snapshot();
	}
	return NULL;
}

static void *race_signaller(void *arg)
{
	(void)arg;
	while (!atomic_load(&race_stop)) {
		/* the next signal once the last one was handled: the main thread
		 * runs between two (a signal always pending would starve it) */
		uint64_t n = atomic_load(&race_handled);
		syscall(SYS_tgkill, (long)getpid(), (long)atomic_load(&race_tid), SIGUSR1);
		while (atomic_load(&race_handled) == n && !atomic_load(&race_stop))
			sched_yield();
		sched_yield();
	}
	return NULL;
}

static void race(int overwrite)
{
	struct sigaction sa;
	struct ringbuf_trace_snapshot_stats st;
	pthread_t w[NWRITERS], sg;
	uint32_t seq = 0;
	unsigned i;
	if (getenv("RINGBUF_TEST_QEMU")) { /* threads and signals only: see scripts/test-cross.sh */
		printf("under qemu-user: skipped\n");
		skip();
	}
	race_overwrite = overwrite;
	atomic_store(&race_stop, 0);
	atomic_store(&race_attempts, 0);
	atomic_store(&race_ok, 0);
	atomic_store(&race_bad, 0);
	atomic_store(&race_why, 0);
	atomic_store(&race_skipped, 0);
	atomic_store(&race_checked, 0);
	atomic_store(&race_lossy, 0);
	atomic_store(&race_sig_seq, 0);
	atomic_store(&race_handled, 0);
	if (overwrite) {
		struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
		cfg.ncpu = 3;
		cfg.size_per_cpu = 16 * 1024;
		cfg.page_size = 1024;
		assert_int_equal(ringbuf_create(&cfg, &race_rb), 0);
	} else {
		/* large: nothing is lost, so every snapshot holds each writer's
		 * events from its first */
		race_rb = make_rb(3, 2 << 20, RINGBUF_MODE_PRODUCER_CONSUMER);
	}
	assert_int_equal(ringbuf_trace_snapshot_create(race_rb, &race_snap), 0);
	assert_true(ringbuf_iter_size(ringbuf_trace_snapshot_buffer(race_snap), 0) <= sizeof race_scratch);
	ringbuf_trace__snapshot_testing(race_hook, NULL);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = race_handler;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	atomic_store(&race_tid, (int)syscall(SYS_gettid));
	for (i = 0; i < NWRITERS; i++)
		assert_int_equal(pthread_create(&w[i], NULL, race_writer, (void *)(uintptr_t)i), 0);
	assert_int_equal(pthread_create(&sg, NULL, race_signaller, NULL), 0);
	/* the main thread writes CPU 2, paced by the snapshot attempts (about
	 * 200 events per attempt), until enough snapshots were taken; the
	 * handlers interrupt it anywhere (its writes, the loop) */
	while (atomic_load(&race_ok) < RACE_SNAPS)
		if ((overwrite || seq < RACE_CAP) && seq < 200 * (atomic_load(&race_attempts) + 1))
			if (emit_work(2, 2, seq++) != 1)
				race_fail(9);
	atomic_store(&race_stop, 1);
	for (i = 0; i < NWRITERS; i++)
		pthread_join(w[i], NULL);
	pthread_join(sg, NULL);
	signal(SIGUSR1, SIG_IGN);
	ringbuf_trace_snapshot_stats(race_snap, &st);
	print_message("%s: %llu attempts, %llu taken, %llu busy, %llu events checked, %llu with losses, %llu CPUs skipped; failed checks %llu (mask %#llx)\n",
		      overwrite ? "overwrite" : "producer/consumer",
		      (unsigned long long)atomic_load(&race_attempts), (unsigned long long)st.taken,
		      (unsigned long long)st.busy, (unsigned long long)atomic_load(&race_checked),
		      (unsigned long long)atomic_load(&race_lossy), (unsigned long long)atomic_load(&race_skipped),
		      (unsigned long long)atomic_load(&race_bad),
		      (unsigned long long)atomic_load(&race_why));
	assert_int_equal(atomic_load(&race_bad), 0);
	assert_int_equal(st.taken + st.busy, atomic_load(&race_attempts));
	assert_int_equal(st.taken, atomic_load(&race_ok));
	assert_true(st.taken >= RACE_SNAPS);
	assert_true(atomic_load(&race_checked) > 0);
	if (!overwrite)
		assert_int_equal(atomic_load(&race_lossy), 0);
	/* once more, nothing running */
	assert_true(ringbuf_trace_snapshot(race_snap) >= 0);
	assert_int_equal(atomic_load(&race_bad), 0);
	ringbuf_trace__snapshot_testing(NULL, NULL);
	ringbuf_trace_snapshot_destroy(race_snap);
	ringbuf_destroy(race_rb);
}

static void snapshots_race_writers_and_signal_handlers(void **state)
{
	(void)state;
	race(0);
}

static void snapshots_race_overwriting_writers(void **state)
{
	(void)state;
	race(1);
}

/* A reader of the source holding a CPU's reader lock (here: this thread's
 * own reader call, as when a signal handler interrupted it): that CPU is
 * left out and counted, the snapshot does not wait; the iterator in caller
 * memory and its bad arguments. */
static void snapshot_skips_a_cpu_whose_reader_is_busy(void **state)
{
	struct ringbuf *rb = make_rb(2, 1 << 16, RINGBUF_MODE_OVERWRITE);
	struct ringbuf_trace_snapshot *snap;
	struct ringbuf_trace_snapshot_stats st;
	struct ringbuf_iter *it;
	struct ringbuf_record r;
	static _Alignas(64) unsigned char mem[1 << 14];
	(void)state;
	assert_int_equal(ringbuf_trace_snapshot_create(rb, &snap), 0);
	assert_int_equal(trace_other(rb, 0, 1), 1);
	assert_int_equal(trace_other(rb, 1, 2), 1);
	assert_int_equal(ringbuf_iter_init_in(mem, 8, rb, 1, 0, &it), RINGBUF_ENOMEM);
	assert_int_equal(ringbuf_iter_init_in(mem, sizeof mem, rb, 5, 0, &it), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_iter_init_in(mem + 1, sizeof mem - 1, rb, 1, 0, &it), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_iter_init_in(mem, sizeof mem, rb, 1, 0x100, &it), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_iter_size(rb, 9), 0);
	assert_true(ringbuf_iter_size(rb, RINGBUF_ALL_CPUS) > ringbuf_iter_size(rb, 0));
	/* held: one try, EBUSY */
	atomic_store(&ringbuf__cpu(rb, 1)->reader_lock, ringbuf__rl_self());
	assert_int_equal(ringbuf_iter_init_in(mem, sizeof mem, rb, 1, RINGBUF_ITER_NOWAIT, &it), 0);
	assert_int_equal(ringbuf_iter_next(it, &r), RINGBUF_EBUSY);
	ringbuf_iter_finish(it); /* in place: frees nothing */
	assert_int_equal(ringbuf_trace_snapshot(snap), 1);
	ringbuf_trace_snapshot_stats(snap, &st);
	assert_int_equal(st.cpus_skipped, 1);
	assert_int_equal(st.events, 1);
	assert_int_equal(ringbuf_consume(ringbuf_trace_snapshot_buffer(snap), 0, &r), 1);
	assert_int_equal(ringbuf_consume(ringbuf_trace_snapshot_buffer(snap), 1, &r), 0);
	/* released: both */
	atomic_store(&ringbuf__cpu(rb, 1)->reader_lock, 0);
	assert_int_equal(ringbuf_iter_init_in(mem, sizeof mem, rb, RINGBUF_ALL_CPUS, RINGBUF_ITER_NOWAIT, &it), 0);
	assert_int_equal(ringbuf_iter_next(it, &r), 1);
	assert_int_equal(ringbuf_iter_next(it, &r), 1);
	assert_int_equal(ringbuf_iter_next(it, &r), 0);
	ringbuf_iter_finish(it);
	assert_int_equal(ringbuf_trace_snapshot(snap), 2);
	ringbuf_trace_snapshot_stats(snap, &st);
	assert_int_equal(st.cpus_skipped, 0);
	assert_int_equal(st.taken, 2);
	ringbuf_trace_snapshot_destroy(snap);
	ringbuf_destroy(rb);
}

/* A snapshot taken while a writer of an overwrite-mode source is between
 * the claim of a head push and its count (H1 claimed: the head link has
 * UPDATE, the pushed page's events are not in overrun yet), as a trigger in
 * a signal handler that interrupted that writer would: the iterator cannot
 * count what the push loses, so that CPU's walk gives up after its tries and
 * the CPU is counted skipped; the other CPU is copied whole, and the
 * snapshot returns. Once the push finishes, the next snapshot has both. */
static struct ringbuf_trace_snapshot *hp_snap;
static int hp_fired, hp_ret;
static struct ringbuf_trace_snapshot_stats hp_st;

static void snap_at_h1_claimed(struct ringbuf *r, unsigned cpu, int point, void *ctx)
{
	(void)r;
	(void)ctx;
	if (point != RINGBUF__TP_H1_CLAIMED || cpu != 0 || hp_fired)
		return;
	hp_fired = 1;
	hp_ret = ringbuf_trace_snapshot(hp_snap);
	ringbuf_trace_snapshot_stats(hp_snap, &hp_st);
}

static void snapshot_skips_a_cpu_whose_head_push_is_in_flight(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	struct ringbuf_trace_snapshot_stats st;
	struct ringbuf_record r;
	uint32_t seq = 0;
	unsigned n1 = 0;
	(void)state;
	cfg.ncpu = 2;
	cfg.size_per_cpu = 4 * 1024;
	cfg.page_size = 1024;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	assert_int_equal(ringbuf_trace_snapshot_create(rb, &hp_snap), 0);
	for (unsigned i = 0; i < 5; i++)
		assert_int_equal(trace_other(rb, 1, 1000 + i), 1);
	hp_fired = 0;
	ringbuf__set_testpoint_hook(snap_at_h1_claimed, NULL);
	while (!hp_fired && seq < 10000) /* CPU 0 fills its ring until it pushes the head */
		assert_int_equal(trace_small(rb, 0, seq++, 1), 1);
	ringbuf__set_testpoint_hook(NULL, NULL);
	assert_int_equal(hp_fired, 1);
	assert_int_equal(hp_ret, 5); /* CPU 1's five; CPU 0 given up */
	assert_int_equal(hp_st.cpus_skipped, 1);
	assert_int_equal(hp_st.events, 5);
	assert_int_equal(hp_st.dropped, 0);
	while (ringbuf_consume(ringbuf_trace_snapshot_buffer(hp_snap), 1, &r) == 1)
		n1++;
	assert_int_equal(n1, 5);
	/* the push done: nothing skipped */
	assert_true(ringbuf_trace_snapshot(hp_snap) > 5);
	ringbuf_trace_snapshot_stats(hp_snap, &st);
	assert_int_equal(st.cpus_skipped, 0);
	assert_int_equal(st.dropped, 0);
	assert_int_equal(st.lost, 0);
	/* CPU 0: one run from the oldest event still there (the push took the
	 * first page) to the last one written */
	{
		struct ringbuf *sb = ringbuf_trace_snapshot_buffer(hp_snap);
		uint32_t first = 0, next = 0;
		unsigned n0 = 0;
		while (ringbuf_consume(sb, 0, &r) == 1) {
			const struct ringbuf_ev_small *e = (const struct ringbuf_ev_small *)r.data;
			assert_int_equal(type_of(&r), ringbuf_event_small.id);
			if (n0++ == 0)
				first = e->seq;
			else
				assert_int_equal(e->seq, next);
			next = e->seq + 1;
		}
		assert_true(n0 > 0);
		assert_true(first > 0);
		assert_int_equal(next, seq);
	}
	ringbuf_trace_snapshot_destroy(hp_snap);
	ringbuf_destroy(rb);
}

/* ---- stack traces ------------------------------------------------------------ */

static struct ringbuf *stk_rb;

static __attribute__((noinline)) void stk_leaf(uint32_t seq)
{
	assert_int_equal(trace_small(stk_rb, 0, seq, 5), 1);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}
static __attribute__((noinline)) void stk_mid(uint32_t seq)
{
	stk_leaf(seq);
	__asm__ volatile("" ::: "memory");
}
static __attribute__((noinline)) void stk_top(uint32_t seq)
{
	stk_mid(seq);
	__asm__ volatile("" ::: "memory");
}
static __attribute__((noinline)) int stk_direct(unsigned skip)
{
	int r = ringbuf_trace_stacktrace(stk_rb, 0, skip);
	__asm__ volatile("" ::: "memory");
	return r;
}
static __attribute__((noinline)) int stk_direct_caller(unsigned skip)
{
	int r = stk_direct(skip);
	__asm__ volatile("" ::: "memory");
	return r;
}

/* Whether the frame-pointer walk runs here (x86-64, i386, AArch64 with
 * process_vm_readv; under qemu-user or seccomp it may be refused): else a
 * stack holds its first frame only. */
static bool deep_stacks(void)
{
#ifdef RINGBUF_TRACE__FP_WALK
	uintptr_t x[2] = {1, 2}, w[2] = {0, 0};
	return ringbuf_trace__read_words((uintptr_t)x, w) && w[0] == 1 && w[1] == 2;
#else
	return false;
#endif
}

static const char *name_of(unsigned long a)
{
	return ringbuf_ftrace_lookup((const void *)(uintptr_t)a);
}

static void stacktrace_trigger_records_the_callers(void **state)
{
	struct ringbuf_record r;
	unsigned events = 0, stacks = 0;
	bool deep = deep_stacks();
	int n;
	(void)state;
	print_message("frame-pointer walk: %s\n", deep ? "yes" : "no (first frames only)");
	stk_rb = make_rb(1, 1 << 20, RINGBUF_MODE_OVERWRITE);
	assert_true(ringbuf_ftrace_load_symbols() >= 0);
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "stacktrace:2 if v == 5", NULL), 1);
	stk_top(1);
	stk_top(2);
	stk_top(3); /* the count is spent */
	assert_int_equal(trace_small(stk_rb, 0, 4, 6), 1);
	while (ringbuf_consume(stk_rb, 0, &r) == 1) {
		if (type_of(&r) == RINGBUF_TRACE_ID_STACK) {
			const struct ringbuf_trace_stack *s = stk_of(r.data, r.len);
			/* right after its event */
			assert_int_equal(events, stacks + 1);
			assert_true(r.len >= offsetof(struct ringbuf_trace_stack, caller) +
						    (size_t)s->size * sizeof(unsigned long));
			/* the emitter is inline, the library tail-calls the
			 * trigger's path; where the compiler did neither (gcc
			 * -O2 on i686 keeps trace_small out of line; gcc -O1,
			 * the ASan build, makes no tail call, and since the
			 * split the filter entry is a call of its own:
			 * ringbuf_trace__filter_keep, then the filter part's
			 * evaluator), those frames come first */
			unsigned f = 0;
			while (f < 4 && ((int)f < s->size) &&
			       (!strncmp(name_of(s->caller[f]), "trace_small", 11) ||
				!strncmp(name_of(s->caller[f]), "ringbuf_trace__", 15)))
				f++;
			if (deep) {
				assert_true(s->size >= (int)f + 4);
				assert_string_equal(name_of(s->caller[f]), "stk_leaf");
				assert_string_equal(name_of(s->caller[f + 1]), "stk_mid");
				assert_string_equal(name_of(s->caller[f + 2]), "stk_top");
				assert_string_equal(name_of(s->caller[f + 3]),
						    "stacktrace_trigger_records_the_callers");
			} else {
				assert_int_equal(s->size, 1);
				if (!f)
					assert_string_equal(name_of(s->caller[0]), "stk_leaf");
			}
			if (f)
				print_message("leading frames: %u (%s)\n", f, name_of(s->caller[0]));
			stacks++;
		} else {
			events++;
		}
	}
	assert_int_equal(events, 4);
	assert_int_equal(stacks, 2);
	/* the direct call, with and without skipped frames */
	n = stk_direct_caller(0);
	assert_true(deep ? n >= 3 : n == 1);
	assert_int_equal(ringbuf_consume(stk_rb, 0, &r), 1);
	{
		const struct ringbuf_trace_stack *s = stk_of(r.data, r.len);
		assert_int_equal(s->size, n);
		assert_string_equal(name_of(s->caller[0]), "stk_direct");
		if (deep) {
			assert_string_equal(name_of(s->caller[1]), "stk_direct_caller");
			assert_string_equal(name_of(s->caller[2]), "stacktrace_trigger_records_the_callers");
		}
	}
	assert_int_equal(stk_direct_caller(1), n - 1);
	assert_int_equal(ringbuf_consume(stk_rb, 0, &r), 1);
	if (deep)
		assert_string_equal(name_of((stk_of(r.data, r.len))->caller[0]),
				    "stk_direct_caller");
	assert_int_equal(ringbuf_trace_stacktrace(NULL, 0, 0), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_trace_stacktrace(stk_rb, 7, 0), RINGBUF_EINVAL);
	ringbuf_destroy(stk_rb);
}

/* from a signal handler: the handler's callers, then the interrupted code's */
static _Atomic(int) stk_sig_frames;
static __attribute__((noinline)) void stk_sig_handler(int sig)
{
	(void)sig;
	atomic_store(&stk_sig_frames, ringbuf_trace_stacktrace(stk_rb, 0, 0));
}

static void stacktrace_from_a_signal_handler(void **state)
{
	struct ringbuf_record r;
	struct sigaction sa;
	(void)state;
	stk_rb = make_rb(1, 1 << 16, RINGBUF_MODE_OVERWRITE);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = stk_sig_handler;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR2, &sa, NULL), 0);
	raise(SIGUSR2);
	signal(SIGUSR2, SIG_DFL);
	assert_true(atomic_load(&stk_sig_frames) >= 1);
	assert_int_equal(ringbuf_consume(stk_rb, 0, &r), 1);
	assert_string_equal(name_of((stk_of(r.data, r.len))->caller[0]),
			    "stk_sig_handler");
	ringbuf_destroy(stk_rb);
}

/* ---- exports ----------------------------------------------------------------- */

static bool have_trace_cmd(void)
{
	return system("command -v trace-cmd >/dev/null 2>&1") == 0;
}

static char *run_report(const char *path)
{
	char cmd[256];
	size_t len = 0, cap = 1 << 16, n;
	char *out = malloc(cap);
	FILE *p;
	assert_non_null(out);
	snprintf(cmd, sizeof cmd, "trace-cmd report %s 2>&1", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while ((n = fread(out + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (cap - len < 4096) {
			cap *= 2;
			out = realloc(out, cap);
			assert_non_null(out);
		}
	}
	out[len] = 0;
	pclose(p);
	return out;
}

static void skip_without_trace_cmd(void)
{
	if (!have_trace_cmd()) {
		const char *ci = getenv("CI");
		if (ci && strcmp(ci, "true") == 0)
			fail_msg("trace-cmd is not installed (required under CI=true)");
		printf("trace-cmd not installed: report check skipped\n");
		skip();
	}
}

static void trace_cmd_report_shows_the_stack_and_the_snapshot(void **state)
{
	char dir[] = "/tmp/snapXXXXXX", path[64];
	struct ringbuf_trace_snapshot *snap;
	char *out, *p;
	(void)state;
	skip_without_trace_cmd();
	if (!deep_stacks()) {
		printf("no frame-pointer walk here: report check skipped\n");
		skip();
	}
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/s.dat", dir);
	stk_rb = make_rb(1, 1 << 16, RINGBUF_MODE_OVERWRITE);
	assert_int_equal(ringbuf_trace_snapshot_create(stk_rb, &snap), 0);
	assert_int_equal(ringbuf_trace_snapshot_attach(&reg, snap), 0);
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "stacktrace if seq == 41", NULL), 1);
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "snapshot:1 if seq == 41", NULL), 1);
	stk_top(40);
	stk_top(41);
	stk_top(42);
	/* the main buffer: the stack with names (ringbuf_ftrace's kallsyms) */
	assert_int_equal(ringbuf_ftrace_save_tracedat(stk_rb, &reg, path, NULL), 0);
	out = run_report(path);
	p = strstr(out, "seq=41");
	if (!p || !(p = strstr(p, "kernel_stack:")) || !strstr(p, "<stack trace")) 
		fail_msg("no stack after seq=41:\n%s", out);
	if (!strstr(p, "=> stk_leaf (") || !strstr(p, "=> stk_mid (") || !strstr(p, "=> stk_top ("))
		fail_msg("stack frames without names:\n%s", out);
	assert_true(strstr(out, "seq=42") > p);
	free(out);
	/* the snapshot: seq 40, 41 and the stack (taken after both), not 42 */
	assert_int_equal(ringbuf_ftrace_save_tracedat(ringbuf_trace_snapshot_buffer(snap), &reg, path, NULL), 0);
	out = run_report(path);
	if (!strstr(out, "seq=40") || !strstr(out, "seq=41") || strstr(out, "seq=42") ||
	    !strstr(out, "=> stk_mid ("))
		fail_msg("snapshot export:\n%s", out);
	free(out);
	/* without symbols (plain export): addresses, still a stack */
	stk_top(41);
	assert_int_equal(ringbuf_trace_save_tracedat(stk_rb, &reg, path, NULL), 0);
	out = run_report(path);
	if (!strstr(out, "<stack trace"))
		fail_msg("plain export:\n%s", out);
	free(out);
	unlink(path);
	rmdir(dir);
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "!snapshot", NULL), 1);
	ringbuf_trace_snapshot_destroy(snap);
	ringbuf_destroy(stk_rb);
}

/* ---- malformed triggers --------------------------------------------------------- */

static void malformed_snapshot_triggers_change_nothing(void **state)
{
	static const struct {
		const char *text;
		int pos;
	} bad[] = {
		{"snapshot:", 9},       {"snapshot:0", 9},      {"snapshot:-2", 9},
		{"snapshot:1:2", 10},   {"snapshot x", 9},      {"snapshot if", 9},
		{"snapshot if seq >", 17}, {"snapshot if nope == 1", 12}, {"snapshots", 0},
		{"snap", 0},            {"stacktrace:x", 11},   {"stacktrace if (seq", 18},
		{"stacktrace:1 if v ~ 3", 18},
	};
	struct ringbuf *rb = make_rb(1, 1 << 16, RINGBUF_MODE_OVERWRITE);
	struct ringbuf_trace_snapshot *snap;
	char before[256], after[256];
	unsigned i;
	(void)state;
	assert_int_equal(ringbuf_trace_snapshot_create(rb, &snap), 0);
	assert_int_equal(ringbuf_trace_snapshot_attach(&reg, snap), 0);
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "snapshot:3 if v == 1", NULL), 1);
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "stacktrace", NULL), 1);
	ringbuf_trace_get_triggers(&ringbuf_event_small, before, sizeof before);
	assert_string_equal(before, "snapshot:3 if v == 1\nstacktrace:unlimited\n");
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct ringbuf_trace_filter_error err;
		char want[32];
		int r = ringbuf_trace_set_trigger(&reg, "small", bad[i].text, &err);
		if (r != RINGBUF_EINVAL || err.pos != bad[i].pos)
			fail_msg("'%s': %d, pos %d (%s), expected pos %d", bad[i].text, r, err.pos, err.msg,
				 bad[i].pos);
		snprintf(want, sizeof want, "pos %d: ", bad[i].pos);
		assert_memory_equal(err.msg, want, strlen(want));
		ringbuf_trace_get_triggers(&ringbuf_event_small, after, sizeof after);
		assert_string_equal(after, before);
	}
	/* detached: a new snapshot trigger is refused at the action, the old one stays */
	assert_int_equal(ringbuf_trace_snapshot_attach(&reg, NULL), 0);
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "snapshot:1", NULL), RINGBUF_EINVAL);
	ringbuf_trace_get_triggers(&ringbuf_event_small, after, sizeof after);
	assert_string_equal(after, before);
	/* removal needs none */
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "!snapshot", NULL), 1);
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "!stacktrace", NULL), 1);
	assert_int_equal(ringbuf_event_small.state, ringbuf_event_small.id);
	assert_int_equal(ringbuf_trace_snapshot_attach(NULL, snap), RINGBUF_EINVAL);
	ringbuf_trace_snapshot_destroy(snap);
	ringbuf_destroy(rb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(snapshot_trigger_holds_the_events_up_to_the_trigger, setup,
						teardown),
		cmocka_unit_test_setup_teardown(snapshot_copies_stamps_and_payloads, setup, teardown),
		cmocka_unit_test_setup_teardown(snapshot_of_a_full_buffer_drops_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(cut_in_at_each_step, setup, teardown),
		cmocka_unit_test_setup_teardown(cut_in_overwrites_are_counted_exactly, setup, teardown),
		cmocka_unit_test_setup_teardown(snapshots_race_writers_and_signal_handlers, setup, teardown),
		cmocka_unit_test_setup_teardown(snapshots_race_overwriting_writers, setup, teardown),
		cmocka_unit_test_setup_teardown(snapshot_skips_a_cpu_whose_reader_is_busy, setup, teardown),
		cmocka_unit_test_setup_teardown(snapshot_skips_a_cpu_whose_head_push_is_in_flight, setup, teardown),
		cmocka_unit_test_setup_teardown(stacktrace_trigger_records_the_callers, setup, teardown),
		cmocka_unit_test_setup_teardown(stacktrace_from_a_signal_handler, setup, teardown),
		cmocka_unit_test_setup_teardown(trace_cmd_report_shows_the_stack_and_the_snapshot, setup,
						teardown),
		cmocka_unit_test_setup_teardown(malformed_snapshot_triggers_change_nothing, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
