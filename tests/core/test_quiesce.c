/* test_quiesce.c - ringbuf_quiesce() waits for the writers in flight at the
 * call, and only for them.
 *
 * A writer thread writes a fixed sequence of events on a small overwrite
 * buffer (page crossings, head pushes) and parks at a chosen labelled step
 * (RINGBUF__TP_*) of one of its events, through the test-point hook. While it
 * is parked: ringbuf_quiesce(rb, 0) and a bounded call give RINGBUF_EBUSY
 * (deterministic: the writer cannot move). A quiescer thread then calls
 * ringbuf_quiesce(rb, -1); once it is waiting (its own test point, Q4), the
 * writer is let go: optionally a nested writer (a signal handler) writes from
 * inside the parked event, then the event completes, and the writer stops.
 * The quiescer must return 0, and the events, the parked one and the nested
 * one included, must all be readable right after it (the call's promise of
 * visibility). Every write step is tried, with an explicit index and with
 * RINGBUF_CPU_CURRENT, with and without the nested writer.
 *
 * Writers that start after the call are not waited for: the parked writer
 * leaves and enters a new event that parks again; the quiescer must still
 * return (it would hang otherwise: no time limit, nothing timed). An idle CPU
 * (the second CPU of the explicit-index runs) is not waited for; with nobody
 * in flight the call returns 0 at once, also with timeout 0. Called from
 * inside a writer's event (as a signal handler would) it times out with
 * RINGBUF_EBUSY. Bad arguments give RINGBUF_EINVAL.
 */
#define _GNU_SOURCE 1
#define RINGBUF_TESTING 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define EVENTS 60 /* per run: crosses pages and pushes the head many times */
#define ARM_AT 8  /* park at the first hit of the step from this event on */

static struct {
	struct ringbuf *rb;
	unsigned wcpu;       /* what the writer passes: 0 or RINGBUF_CPU_CURRENT */
	int tp;              /* step to park at */
	bool nested;         /* a nested write from inside the parked event */
	bool park_again;     /* after leaving, park once more in a later event */
	pthread_t writer;
	atomic_int armed;    /* 1: park at the next hit of tp; 2: parked once */
	atomic_int event;    /* the event being written */
	atomic_int parks;
	int parked_event;    /* the event that parked (first park) */
	sem_t parked, resume, qwait, second, finish;
	atomic_int hit;      /* the step came up at all */
	int written;         /* events committed by the writer (nested ones included) */
} G;

static void write_one(unsigned v)
{
	uint32_t payload[6];
	unsigned i;
	for (i = 0; i < 6; i++)
		payload[i] = v;
	/* 4..24 bytes: varied sizes so that page ends fall at different steps */
	if (ringbuf_write(G.rb, G.wcpu, payload, 4 + 4 * (v % 6)) == 0)
		G.written++;
}

static void sem_wait_all(sem_t *s)
{
	while (sem_wait(s) != 0 && errno == EINTR)
		;
}

static _Thread_local bool t_quiescer;

static void hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	(void)rb;
	(void)cpu;
	(void)ctx;
	if (point == RINGBUF__TP_QUIESCE_WAIT) {
		if (t_quiescer) /* not the main thread's own bounded calls */
			sem_post(&G.qwait);
		return;
	}
	if (point != G.tp || !pthread_equal(pthread_self(), G.writer) || atomic_load(&G.armed) != 1)
		return;
	atomic_store(&G.armed, 2);
	atomic_store(&G.hit, 1);
	if (atomic_fetch_add(&G.parks, 1) == 0)
		G.parked_event = atomic_load(&G.event);
	sem_post(&G.parked);
	sem_wait_all(&G.resume);
	if (G.nested && atomic_load(&G.parks) == 1)
		write_one(1000); /* a signal handler writing inside the parked event */
}

static void *writer_main(void *arg)
{
	int i;
	(void)arg;
	for (i = 0; i < EVENTS; i++) {
		atomic_store(&G.event, i);
		if (i == ARM_AT)
			atomic_store(&G.armed, 1);
		write_one((unsigned)i);
		if (atomic_load(&G.parks) == 1 && atomic_load(&G.armed) == 2) {
			/* left the parked event: stop here (or park once more in
			 * the next event, which starts after the quiesce call) */
			if (G.park_again)
				atomic_store(&G.armed, 1);
			else
				break;
		}
		if (atomic_load(&G.parks) == 2)
			break;
	}
	if (!atomic_load(&G.hit))
		sem_post(&G.parked); /* the step never came up */
	sem_post(&G.finish);
	return NULL;
}

static void *quiescer_main(void *arg)
{
	(void)arg;
	t_quiescer = true;
	return (void *)(intptr_t)ringbuf_quiesce(G.rb, -1);
}

/* events readable now on every CPU */
static int drain(bool *blocked)
{
	struct ringbuf_record rec;
	unsigned cpu;
	int n = 0, r;
	for (cpu = 0; cpu < ringbuf_ncpu(G.rb); cpu++) {
		while ((r = ringbuf_consume(G.rb, cpu, &rec)) > 0)
			n++;
		if (r < 0) {
			/* RINGBUF_EAGAIN: a writer parked mid head push holds
			 * the page link the reader must swap */
			assert_int_equal(r, RINGBUF_EAGAIN);
			*blocked = true;
		}
	}
	return n;
}

/* events lost to overwriting so far */
static int overrun(void)
{
	struct ringbuf_stats st;
	assert_int_equal(ringbuf_stats(G.rb, &st), 0);
	return (int)st.overrun;
}

static bool run_case(int tp, unsigned wcpu, bool nested, bool park_again)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	pthread_t q;
	void *ret;
	int total;
	bool hit, blocked = false;
	memset(&G, 0, sizeof G);
	G.tp = tp;
	G.wcpu = wcpu;
	G.nested = nested;
	G.park_again = park_again;
	cfg.ncpu = wcpu == RINGBUF_CPU_CURRENT ? 1 : 2;
	cfg.page_size = 128;
	cfg.size_per_cpu = 4 * 128;
	assert_int_equal(ringbuf_create(&cfg, &G.rb), 0);
	sem_init(&G.parked, 0, 0);
	sem_init(&G.resume, 0, 0);
	sem_init(&G.qwait, 0, 0);
	sem_init(&G.finish, 0, 0);
	ringbuf__set_testpoint_hook(hook, NULL);
	assert_int_equal(pthread_create(&G.writer, NULL, writer_main, NULL), 0);
	sem_wait_all(&G.parked);
	hit = atomic_load(&G.hit) != 0;
	if (hit) {
		/* parked inside an event: a look, and a bounded wait, time out */
		assert_int_equal(ringbuf_quiesce(G.rb, 0), RINGBUF_EBUSY);
		assert_int_equal(ringbuf_quiesce(G.rb, 1), RINGBUF_EBUSY);
		assert_int_equal(pthread_create(&q, NULL, quiescer_main, NULL), 0);
		sem_wait_all(&G.qwait); /* the quiescer saw the writer in flight */
		sem_post(&G.resume);
		if (park_again) {
			/* the writer left and parks in a new event: not waited for */
			sem_wait_all(&G.parked);
			assert_int_equal(atomic_load(&G.parks), 2);
		}
		assert_int_equal(pthread_join(q, &ret), 0);
		assert_int_equal((int)(intptr_t)ret, 0);
		/* every event of the parked writer (and its nested one) is
		 * visible: read or counted as overwritten */
		total = drain(&blocked) + overrun();
		if (!park_again) {
			assert_false(blocked);
			sem_wait_all(&G.finish);
			assert_int_equal(total, G.written);
			assert_int_equal(G.parked_event + 1 + (nested ? 1 : 0), G.written);
		} else {
			/* the second parked event is not committed yet (and
			 * when it parked in a head push, the reader waits) */
			if (!blocked)
				assert_true(total >= G.parked_event + 1 + (nested ? 1 : 0));
			assert_int_equal(ringbuf_quiesce(G.rb, 0), RINGBUF_EBUSY);
			sem_post(&G.resume);
			sem_wait_all(&G.finish);
		}
	} else {
		sem_wait_all(&G.finish);
	}
	assert_int_equal(pthread_join(G.writer, NULL), 0);
	ringbuf__set_testpoint_hook(NULL, NULL);
	/* nobody in flight: at once */
	assert_int_equal(ringbuf_quiesce(G.rb, 0), 0);
	ringbuf_destroy(G.rb);
	sem_destroy(&G.parked);
	sem_destroy(&G.resume);
	sem_destroy(&G.qwait);
	sem_destroy(&G.finish);
	return hit;
}

static void sweep(unsigned wcpu, bool park_again)
{
	int tp, hits = 0, cases = 0;
	bool nested;
	for (tp = 1; tp < RINGBUF__TP_COUNT; tp++)
		for (nested = false; tp != RINGBUF__TP_ENTERING; nested = true) {
			/* (ENTERING: the writer is not in yet, committing 0, and
			 * not waited for: idle_and_bad_arguments' case) */
			cases++;
			hits += run_case(tp, wcpu, nested, park_again);
			if (nested)
				break;
		}
	print_message("%s%s: %d of %d (step, nested) cases parked a writer\n",
		      wcpu == RINGBUF_CPU_CURRENT ? "RINGBUF_CPU_CURRENT" : "cpu 0",
		      park_again ? ", parked again after" : "", hits, cases);
	/* A-D, crossings, tail moves, head pushes and commit steps come up */
	assert_true(hits >= 2 * 12);
}

static void waits_for_writer_in_flight(void **state)
{
	(void)state;
	sweep(0, false);
}

static void waits_for_writer_in_flight_current(void **state)
{
	(void)state;
	sweep(RINGBUF_CPU_CURRENT, false);
}

static void does_not_wait_for_later_writers(void **state)
{
	(void)state;
	sweep(0, true);
}

static void idle_and_bad_arguments(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	(void)state;
	cfg.ncpu = 4;
	assert_int_equal(ringbuf_quiesce(NULL, 0), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	assert_int_equal(ringbuf_quiesce(rb, 0), 0);
	assert_int_equal(ringbuf_quiesce(rb, -1), 0);
	assert_int_equal(ringbuf_write(rb, 2, "abcd", 4), 0);
	assert_int_equal(ringbuf_quiesce(rb, 0), 0);
	ringbuf_destroy(rb);
}

/* From inside a writer's event (as a signal handler that interrupted it
 * would): the writer cannot leave, so the call times out, nothing changed. */
static struct ringbuf *g_inside_rb;
static int g_inside_ret = 1;
static void inside_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	(void)cpu;
	(void)ctx;
	if (point == RINGBUF__TP_C_RESERVED && g_inside_ret == 1)
		g_inside_ret = ringbuf_quiesce(rb, 2);
}

static void from_inside_a_writer_times_out(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf_record rec;
	(void)state;
	assert_int_equal(ringbuf_create(&cfg, &g_inside_rb), 0);
	ringbuf__set_testpoint_hook(inside_hook, NULL);
	assert_int_equal(ringbuf_write(g_inside_rb, 0, "abcd", 4), 0);
	assert_int_equal(ringbuf_write(g_inside_rb, 0, "efgh", 4), 0);
	ringbuf__set_testpoint_hook(NULL, NULL);
	assert_int_equal(g_inside_ret, RINGBUF_EBUSY);
	assert_int_equal(ringbuf_consume(g_inside_rb, 0, &rec), 1);
	assert_int_equal(ringbuf_consume(g_inside_rb, 0, &rec), 1);
	assert_int_equal(ringbuf_quiesce(g_inside_rb, 0), 0);
	ringbuf_destroy(g_inside_rb);
}

/* [Q-PEND] ringbuf__commit_fast's last window: the writer stored its page
 * commit (RINGBUF__TP_COMMIT_FAST_CHECKED), a signal handler writes
 * there (depth 2: its event is left for the writer), then the writer stores
 * committing = 0 with that event reserved and not committed, and parks
 * (RINGBUF__TP_COMMIT_FAST_ZERO) before it re-checks commits and walks
 * again. The writer is in flight and its handler's event is not visible: a
 * look (timeout 0) must say RINGBUF_EBUSY. It returned 0 before [Q-PEND]
 * (committing == 0 was all it asked), with one of the two events readable.
 * Once the writer goes on, quiesce returns 0 and both are there. */
static struct {
	sem_t at_zero, go;
	int state, bad;
	pthread_t writer;
} W;

static void window_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	uint32_t v = 2;
	(void)ctx;
	if (!pthread_equal(pthread_self(), W.writer))
		return;
	if (point == RINGBUF__TP_COMMIT_FAST_CHECKED && W.state == 1) {
		W.state = 2;
		if (ringbuf_write(rb, cpu, &v, sizeof v) != 0) /* the handler */
			W.bad = 1;
	} else if (point == RINGBUF__TP_COMMIT_FAST_ZERO && W.state == 2) {
		W.state = 3;
		sem_post(&W.at_zero);
		sem_wait_all(&W.go);
	}
}

static void *window_writer(void *arg)
{
	struct ringbuf *rb = arg;
	uint32_t v = 1;
	W.state = 1;
	if (ringbuf_write(rb, 0, &v, sizeof v) != 0)
		W.bad = 1;
	return NULL;
}

static unsigned count_readable(struct ringbuf *rb)
{
	struct ringbuf_iter *it;
	struct ringbuf_record rec;
	unsigned n = 0;
	assert_int_equal(ringbuf_iter_start(rb, 0, &it), 0);
	while (ringbuf_iter_next(it, &rec) == 1)
		n++;
	ringbuf_iter_finish(it);
	return n;
}

static void commit_fast_window_is_waited_for(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	struct ringbuf_record rec;
	uint32_t v = 0;
	int r;
	(void)state;
	cfg.ncpu = 1;
	cfg.page_size = 4096;
	cfg.size_per_cpu = 4 * 4096;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	assert_int_equal(ringbuf_write(rb, 0, &v, sizeof v), 0); /* the page has a start */
	memset(&W, 0, sizeof W);
	sem_init(&W.at_zero, 0, 0);
	sem_init(&W.go, 0, 0);
	ringbuf__set_testpoint_hook(window_hook, NULL);
	assert_int_equal(pthread_create(&W.writer, NULL, window_writer, rb), 0);
	sem_wait_all(&W.at_zero);
	r = ringbuf_quiesce(rb, 0);
	if (r != RINGBUF_EBUSY)
		fail_msg("quiesce in the commit_fast window: %d, %u of 3 events readable", r, count_readable(rb));
	sem_post(&W.go);
	assert_int_equal(pthread_join(W.writer, NULL), 0);
	ringbuf__set_testpoint_hook(NULL, NULL);
	assert_int_equal(W.bad, 0);
	assert_int_equal(W.state, 3);
	assert_int_equal(ringbuf_quiesce(rb, 0), 0);
	for (v = 0; v < 3; v++) {
		uint32_t got;
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
		memcpy(&got, rec.data, sizeof got);
		assert_int_equal(got, v); /* the writer's, then its handler's */
	}
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 0);
	sem_destroy(&W.at_zero);
	sem_destroy(&W.go);
	ringbuf_destroy(rb);
}

/* [Q-X] Two handlers in ringbuf__commit_fast's last window: the first nests
 * in the writer V after its page commit (depth 2, left for V, as above); after
 * V's committing = 0 a second one runs as outermost (it sees committing 0),
 * enters and parks after its reservation, before its commit walk (which
 * would commit the first handler's event too). A one-look quiesce whose Q3
 * read the count before that entry and whose Q4 looks after it must say
 * RINGBUF_EBUSY: the first handler's event is not committed. It returned 0
 * while Q4 ended on the first outermost ENTRY after Q3 (verify/quiesce.c
 * -DNESTED=4 -DOLD_ENTRY_COUNT), with the first handler's event not
 * readable. The call's own test point between Q3 and Q4
 * (RINGBUF__TP_QUIESCE_WAIT) lets the second handler in, so nothing here
 * depends on timing. */
static struct {
	sem_t at_zero, go, at_h2, go2;
	int state, bad;
	pthread_t writer;
} W2;

static void two_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	uint32_t v;
	(void)ctx;
	if (!pthread_equal(pthread_self(), W2.writer)) {
		/* the quiescer, between Q3 and Q4: let the second handler enter */
		if (point == RINGBUF__TP_QUIESCE_WAIT && W2.state == 3) {
			sem_post(&W2.go);
			sem_wait_all(&W2.at_h2);
		}
		return;
	}
	if (point == RINGBUF__TP_COMMIT_FAST_CHECKED && W2.state == 1) {
		W2.state = 2;
		v = 2;
		if (ringbuf_write(rb, cpu, &v, sizeof v) != 0) /* the first handler, nested */
			W2.bad = 1;
	} else if (point == RINGBUF__TP_COMMIT_FAST_ZERO && W2.state == 2) {
		W2.state = 3;
		sem_post(&W2.at_zero);
		sem_wait_all(&W2.go);
		W2.state = 4;
		v = 3;
		if (ringbuf_write(rb, cpu, &v, sizeof v) != 0) /* the second, outermost */
			W2.bad = 1;
	} else if (point == RINGBUF__TP_C_RESERVED && W2.state == 4) {
		W2.state = 5; /* the second handler, reserved, before its walk */
		sem_post(&W2.at_h2);
		sem_wait_all(&W2.go2);
	}
}

static void *two_writer(void *arg)
{
	struct ringbuf *rb = arg;
	uint32_t v = 1;
	W2.state = 1;
	if (ringbuf_write(rb, 0, &v, sizeof v) != 0)
		W2.bad = 1;
	return NULL;
}

static void two_handlers_in_the_commit_window(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	struct ringbuf_record rec;
	uint32_t v = 0;
	unsigned seen;
	int r;
	(void)state;
	cfg.ncpu = 1;
	cfg.page_size = 4096;
	cfg.size_per_cpu = 4 * 4096;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	assert_int_equal(ringbuf_write(rb, 0, &v, sizeof v), 0); /* the page has a start */
	memset(&W2, 0, sizeof W2);
	sem_init(&W2.at_zero, 0, 0);
	sem_init(&W2.go, 0, 0);
	sem_init(&W2.at_h2, 0, 0);
	sem_init(&W2.go2, 0, 0);
	ringbuf__set_testpoint_hook(two_hook, NULL);
	assert_int_equal(pthread_create(&W2.writer, NULL, two_writer, rb), 0);
	sem_wait_all(&W2.at_zero);
	r = ringbuf_quiesce(rb, 0); /* Q3, the second handler enters, Q4 */
	seen = count_readable(rb);
	sem_post(&W2.go2);
	assert_int_equal(pthread_join(W2.writer, NULL), 0);
	ringbuf__set_testpoint_hook(NULL, NULL);
	if (r != RINGBUF_EBUSY)
		fail_msg("quiesce with two handlers in the commit_fast window: %d, %u of 4 events readable", r,
			 seen);
	assert_int_equal(W2.bad, 0);
	assert_int_equal(W2.state, 5);
	assert_int_equal(ringbuf_quiesce(rb, 0), 0);
	for (v = 0; v < 4; v++) {
		uint32_t got;
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
		memcpy(&got, rec.data, sizeof got);
		assert_int_equal(got, v); /* V's, then its first handler's, then the second's */
	}
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 0);
	sem_destroy(&W2.at_zero);
	sem_destroy(&W2.go);
	sem_destroy(&W2.at_h2);
	sem_destroy(&W2.go2);
	ringbuf_destroy(rb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(idle_and_bad_arguments),
		cmocka_unit_test(waits_for_writer_in_flight),
		cmocka_unit_test(waits_for_writer_in_flight_current),
		cmocka_unit_test(does_not_wait_for_later_writers),
		cmocka_unit_test(from_inside_a_writer_times_out),
		cmocka_unit_test(commit_fast_window_is_waited_for),
		cmocka_unit_test(two_handlers_in_the_commit_window),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
