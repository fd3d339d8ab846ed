/* Tests of the event triggers (ringbuf_trace.h >>filter): traceoff freezes
 * the buffer with the triggering event last, traceon, counts (exactly N
 * firings), enable_event/disable_event of other events with their own
 * filters, triggers and filters kept across each other's changes, removal,
 * and malformed triggers (an error at a position, nothing changed).
 */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#define RINGBUF_TRACE_DEFINE_EVENTS
#include "ringbuf_trace.h"

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
RINGBUF_TRACE_EVENT(third, RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, y)), RINGBUF_PRINT("y=%u", REC->y));

static struct ringbuf_trace_registry reg = RINGBUF_TRACE_REGISTRY_INIT("trg");

static int setup(void **state)
{
	(void)state;
	if (ringbuf_event_small.id == 0 &&
	    (ringbuf_trace_register_event(&reg, &ringbuf_event_small) < 0 ||
	     ringbuf_trace_register_event(&reg, &ringbuf_event_other) < 0 ||
	     ringbuf_trace_register_event(&reg, &ringbuf_event_third) < 0))
		return -1;
	ringbuf_trace_enable(&reg, "*");
	return 0;
}

/* Everything off: no filter, no trigger (the state word back to the id). */
static int teardown(void **state)
{
	static const char *const all[] = {"!traceoff", "!traceon", "!enable_event:other",
					  "!disable_event:other", "!enable_event:third",
					  "!disable_event:third", "!enable_event:small",
					  "!disable_event:small", "!stacktrace", "!snapshot"};
	unsigned i;
	(void)state;
	for (i = 0; i < sizeof all / sizeof all[0]; i++)
		if (ringbuf_trace_set_trigger(&reg, "*", all[i], NULL) < 0)
			return -1;
	if (ringbuf_trace_set_filter(&reg, "*", NULL, NULL) != 3)
		return -1;
	return ringbuf_event_small.state == ringbuf_event_small.id ? 0 : -1;
}

static struct ringbuf *make_rb(void)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	cfg.ncpu = 1;
	cfg.size_per_cpu = 1 << 20;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	return rb;
}

static void traceoff_freezes_the_buffer_with_the_triggering_event_last(void **state)
{
	struct ringbuf *rb = make_rb();
	struct ringbuf_record r;
	struct ringbuf_stats st;
	char text[256];
	uint32_t i, n = 0, last = 0;
	(void)state;
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "traceoff if seq == 500", NULL), 1);
	assert_true(ringbuf_event_small.state & RINGBUF_TRACE__FILTERED);
	ringbuf_trace_get_triggers(&ringbuf_event_small, text, sizeof text);
	assert_string_equal(text, "traceoff:unlimited if seq == 500\n");
	ringbuf_trace_get_filter(&ringbuf_event_small, text, sizeof text);
	assert_string_equal(text, "none");
	for (i = 0; i < 1000; i++) {
		int r1 = trace_small(rb, 0, i, 1), r2 = trace_other(rb, 0, i);
		assert_int_equal(r1, i <= 500 ? 1 : RINGBUF_ENOSPC);
		assert_int_equal(r2, i < 500 ? 1 : RINGBUF_ENOSPC);
	}
	assert_false(ringbuf_record_is_on(rb));
	while (ringbuf_consume(rb, 0, &r) == 1) {
		const struct ringbuf_trace_entry *e = (const struct ringbuf_trace_entry *)r.data;
		n++;
		last = e->type == ringbuf_event_small.id ? ((const struct ringbuf_ev_small *)r.data)->seq
							  : UINT32_MAX;
	}
	assert_int_equal(n, 501 + 500);
	assert_int_equal(last, 500); /* the triggering event is the last one */
	assert_int_equal(ringbuf_stats(rb, &st), 0);
	assert_int_equal(st.disabled_events, 499 + 500);
	/* back on: recording goes on, the trigger fires again on its match */
	ringbuf_record_on(rb);
	assert_int_equal(trace_small(rb, 0, 499, 1), 1);
	assert_int_equal(trace_small(rb, 0, 500, 1), 1);
	assert_false(ringbuf_record_is_on(rb));
	ringbuf_destroy(rb);
}

/* The same with the triggering event written by a signal handler that may
 * interrupt the main path's emitter: the buffer ends with it, except for the
 * one main-path event whose writer the handler interrupted after that writer
 * had passed the buffer's on/off check (ringbuf_record_off() stops writers
 * that come later; one already inside ringbuf_reserve() completes), and every
 * event an emitter reported written is there. Counted in events: the main
 * path runs until recording is off. */
static struct ringbuf *sig_rb;
static _Atomic(uint64_t) sig_written, sig_calls;
static _Atomic(int) main_tid, stop_signals;

static void on_signal(int sig)
{
	uint64_t n = atomic_fetch_add(&sig_calls, 1) + 1;
	(void)sig;
	if (trace_other(sig_rb, 0, (uint32_t)n) == 1)
		atomic_fetch_add(&sig_written, 1);
}

static void *signaller(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_signals)) {
		syscall(SYS_tgkill, (long)getpid(), (long)atomic_load(&main_tid), SIGUSR1);
		sched_yield();
	}
	return NULL;
}

static void traceoff_from_a_signal_handler_leaves_its_event_last(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf_record r;
	struct ringbuf_stats st;
	struct sigaction sa;
	pthread_t t;
	uint64_t main_written = 0, n = 0;
	uint32_t i = 0, type[2] = {0, 0}, x[2] = {0, 0};
	sigset_t set;
	(void)state;
	cfg.ncpu = 1;
	cfg.size_per_cpu = 1 << 16;
	cfg.mode = RINGBUF_MODE_OVERWRITE;
	assert_int_equal(ringbuf_create(&cfg, &sig_rb), 0);
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "other", "traceoff if x == 50", NULL), 1);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	atomic_store(&main_tid, ringbuf_trace_thread_id());
	assert_int_equal(pthread_create(&t, NULL, signaller, NULL), 0);
	for (;; i++) {
		int w = trace_small(sig_rb, 0, i, 0);
		if (w != 1)
			break;
		main_written++;
	}
	assert_int_equal(trace_small(sig_rb, 0, i, 0), RINGBUF_ENOSPC);
	atomic_store(&stop_signals, 1);
	assert_int_equal(pthread_join(t, NULL), 0);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL); /* a pending one runs here... */
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	signal(SIGUSR1, SIG_IGN);
	assert_false(ringbuf_record_is_on(sig_rb));
	assert_int_equal(ringbuf_stats(sig_rb, &st), 0);
	assert_int_equal(st.committed, main_written + atomic_load(&sig_written));
	while (ringbuf_consume(sig_rb, 0, &r) == 1) {
		const struct ringbuf_trace_entry *e = (const struct ringbuf_trace_entry *)r.data;
		type[0] = type[1];
		x[0] = x[1];
		type[1] = e->type;
		x[1] = e->type == ringbuf_event_other.id ? ((const struct ringbuf_ev_other *)r.data)->x : 0;
		n++;
	}
	assert_true(n > 0);
	if (type[1] == ringbuf_event_other.id) {
		assert_int_equal(x[1], 50);
	} else { /* an interrupted main-path writer's event, then nothing */
		assert_int_equal(type[1], ringbuf_event_small.id);
		assert_int_equal(type[0], ringbuf_event_other.id);
		assert_int_equal(x[0], 50);
		print_message("the event of an interrupted main-path writer follows the trigger's\n");
	}
	assert_int_equal(atomic_load(&sig_written), 50);
	print_message("main path wrote %llu events before the handler's 50th event stopped it\n",
		      (unsigned long long)main_written);
	ringbuf_destroy(sig_rb);
}

static void counts_fire_exactly_n_times(void **state)
{
	struct ringbuf *rb = make_rb();
	char text[256];
	int i;
	(void)state;
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "traceoff:2", NULL), 1);
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "other", "traceon:1 if x == 7", NULL), 1);
	assert_int_equal(trace_small(rb, 0, 1, 0), 1);
	assert_false(ringbuf_record_is_on(rb));
	ringbuf_trace_get_triggers(&ringbuf_event_small, text, sizeof text);
	assert_string_equal(text, "traceoff:1\n");
	/* traceon fires on an event refused because recording is off? No: the
	 * event is not written, so its triggers do not run (as in the kernel,
	 * where a traced-off buffer has no event to trigger on). */
	assert_int_equal(trace_other(rb, 0, 7), RINGBUF_ENOSPC);
	assert_false(ringbuf_record_is_on(rb));
	ringbuf_record_on(rb);
	assert_int_equal(trace_small(rb, 0, 2, 0), 1);
	assert_false(ringbuf_record_is_on(rb));
	ringbuf_record_on(rb);
	for (i = 0; i < 5; i++)
		assert_int_equal(trace_small(rb, 0, 3, 0), 1); /* count used up */
	assert_true(ringbuf_record_is_on(rb));
	ringbuf_trace_get_triggers(&ringbuf_event_small, text, sizeof text);
	assert_string_equal(text, "traceoff:0\n");
	/* traceon:1 if x == 7 */
	ringbuf_record_off(rb);
	ringbuf_record_on(rb);
	assert_int_equal(trace_other(rb, 0, 6), 1);
	ringbuf_trace_get_triggers(&ringbuf_event_other, text, sizeof text);
	assert_string_equal(text, "traceon:1 if x == 7\n");
	assert_int_equal(trace_other(rb, 0, 7), 1);
	ringbuf_trace_get_triggers(&ringbuf_event_other, text, sizeof text);
	assert_string_equal(text, "traceon:0 if x == 7\n");
	/* setting the same action again replaces it (a fresh count) */
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "traceoff:1", NULL), 1);
	ringbuf_trace_get_triggers(&ringbuf_event_small, text, sizeof text);
	assert_string_equal(text, "traceoff:1\n");
	assert_int_equal(trace_small(rb, 0, 3, 0), 1);
	assert_false(ringbuf_record_is_on(rb));
	ringbuf_destroy(rb);
}

static void enable_and_disable_other_events(void **state)
{
	struct ringbuf *rb = make_rb();
	char text[256];
	(void)state;
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "disable_event:trg:other:2 if v < 0",
						   NULL), 1);
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "enable_event:other if v > 0", NULL), 1);
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "enable_event:trg:third:1", NULL), 1);
	ringbuf_trace_get_triggers(&ringbuf_event_small, text, sizeof text);
	assert_string_equal(text, "disable_event:trg:other:2 if v < 0\n"
				  "enable_event:trg:other:unlimited if v > 0\n"
				  "enable_event:trg:third:1\n");
	/* a filter on the target survives its being disabled and enabled */
	assert_int_equal(ringbuf_trace_set_filter(&reg, "other", "x != 13", NULL), 1);
	assert_int_equal(ringbuf_trace_disable(&reg, "third"), 1);
	assert_int_equal(trace_third(rb, 0, 1), 0);
	assert_int_equal(trace_other(rb, 0, 1), 1);
	assert_int_equal(trace_small(rb, 0, 0, -1), 1); /* other off (1 left), third on */
	assert_int_equal(trace_other(rb, 0, 1), 0);
	assert_false(ringbuf_trace_is_enabled(&ringbuf_event_other));
	assert_int_equal(trace_third(rb, 0, 1), 1);
	assert_int_equal(trace_small(rb, 0, 0, 5), 1); /* other on */
	assert_true(ringbuf_trace_is_enabled(&ringbuf_event_other));
	assert_int_equal(ringbuf_event_other.state, ringbuf_event_other.id | RINGBUF_TRACE__FILTERED);
	assert_int_equal(trace_other(rb, 0, 1), 1);
	assert_int_equal(trace_other(rb, 0, 13), 0); /* its filter still there */
	assert_int_equal(ringbuf_trace_disable(&reg, "third"), 1);
	assert_int_equal(trace_small(rb, 0, 0, -1), 1); /* other off (0 left); third: count used */
	assert_false(ringbuf_trace_is_enabled(&ringbuf_event_other));
	assert_false(ringbuf_trace_is_enabled(&ringbuf_event_third));
	assert_int_equal(trace_small(rb, 0, 0, 2), 1); /* on */
	assert_int_equal(trace_small(rb, 0, 0, -2), 1); /* count used up: stays on */
	assert_true(ringbuf_trace_is_enabled(&ringbuf_event_other));
	/* the event's own filter does not stop its triggers (the kernel's order) */
	assert_int_equal(ringbuf_trace_set_filter(&reg, "small", "seq == 99", NULL), 1);
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "disable_event:other", NULL), 1);
	assert_int_equal(trace_small(rb, 0, 1, 0), 0); /* discarded by its filter */
	assert_false(ringbuf_trace_is_enabled(&ringbuf_event_other));
	/* the filter and the triggers survive each other's changes */
	ringbuf_trace_get_filter(&ringbuf_event_small, text, sizeof text);
	assert_string_equal(text, "seq == 99");
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "!enable_event:trg:other", NULL), 1);
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "!enable_event:trg:other", NULL), 0);
	ringbuf_trace_get_filter(&ringbuf_event_small, text, sizeof text);
	assert_string_equal(text, "seq == 99");
	assert_int_equal(ringbuf_trace_set_filter(&reg, "small", NULL, NULL), 1);
	ringbuf_trace_get_triggers(&ringbuf_event_small, text, sizeof text);
	/* "disable_event:other" above replaced "disable_event:trg:other:2 if v < 0" */
	assert_string_equal(text, "enable_event:trg:third:0\n"
				  "disable_event:trg:other:unlimited\n");
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "!disable_event:other", NULL), 1);
	ringbuf_trace_get_triggers(&ringbuf_event_small, text, sizeof text);
	assert_string_equal(text, "enable_event:trg:third:0\n");
	assert_true(ringbuf_event_small.state & RINGBUF_TRACE__FILTERED);
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "!enable_event:third", NULL), 1);
	/* nothing attached: the state word is the bare id again (no call) */
	assert_int_equal(ringbuf_event_small.state, ringbuf_event_small.id);
	ringbuf_trace_get_triggers(&ringbuf_event_small, text, sizeof text);
	assert_string_equal(text, "");
	ringbuf_destroy(rb);
}

static const struct {
	const char *text;
	int pos;
} bad[] = {
	{"", 0},
	{"   ", 3},
	{"traceof", 0},
	{"stacktrac", 0},
	{"snapshot", 0}, /* no snapshot attached to the registry */
	{"stacktrace:", 11},
	{"stacktrace:0", 11},
	{"stacktrace:1x", 12},
	{"stacktrace if v >", 17},
	{"stacktrace:2 if", 13},
	{"TRACEOFF", 0},
	{"traceoff:", 9},
	{"traceoff:0", 9},
	{"traceoff:x", 9},
	{"traceoff:-1", 9},
	{"traceoff:99999999999999999999", 9},
	{"traceoff:3x", 10},
	{"traceoff if", 9},
	{"traceoff when v > 1", 9},
	{"traceoff if v >", 15},
	{"traceoff if nope == 1", 12},
	{"traceoff:2 if (v == 1", 21},
	{"enable_event", 12},
	{"enable_event:", 12},
	{"enable_event:nope", 13},
	{"enable_event:sys:other", 13},
	{"enable_event:trg:nope", 17},
	{"disable_event:trg:other:0", 24},
	{"disable_event:trg:other:2 if x == 1", 29}, /* x is other's field, not small's */
	{"!", 1},
	{"!bogus", 1},
};

static void malformed_triggers_give_positions_and_change_nothing(void **state)
{
	char before[256], after[256];
	unsigned i;
	(void)state;
	assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "traceoff:3 if v == 1", NULL), 1);
	assert_int_equal(ringbuf_trace_set_filter(&reg, "small", "seq > 1", NULL), 1);
	ringbuf_trace_get_triggers(&ringbuf_event_small, before, sizeof before);
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
		ringbuf_trace_get_filter(&ringbuf_event_small, after, sizeof after);
		assert_string_equal(after, "seq > 1");
	}
	/* all eight kinds on one event (the most there can be) */
	{
		struct ringbuf_trace_filter_error err;
		assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "traceon", NULL), 1);
		assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "enable_event:other", NULL), 1);
		assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "disable_event:other", NULL), 1);
		assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "enable_event:third", NULL), 1);
		assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "disable_event:third", NULL), 1);
		assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "enable_event:small", NULL), 1);
		assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "disable_event:small", NULL), 1);
		assert_int_equal(ringbuf_trace_set_trigger(&reg, "*", "traceon:5", &err), 3); /* replaced */
		ringbuf_trace_get_triggers(&ringbuf_event_small, before, sizeof before);
		assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "!traceon", NULL), 1);
		assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", "traceon", NULL), 1);
		assert_int_equal(ringbuf_trace_set_trigger(&reg, NULL, "traceon", &err), RINGBUF_EINVAL);
		assert_int_equal(ringbuf_trace_set_trigger(&reg, "small", NULL, &err), RINGBUF_EINVAL);
		assert_int_equal(ringbuf_trace_get_triggers(NULL, before, sizeof before), RINGBUF_EINVAL);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(traceoff_freezes_the_buffer_with_the_triggering_event_last,
						setup, teardown),
		cmocka_unit_test_setup_teardown(traceoff_from_a_signal_handler_leaves_its_event_last,
						setup, teardown),
		cmocka_unit_test_setup_teardown(counts_fire_exactly_n_times, setup, teardown),
		cmocka_unit_test_setup_teardown(enable_and_disable_other_events, setup, teardown),
		cmocka_unit_test_setup_teardown(malformed_triggers_give_positions_and_change_nothing,
						setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
