/* Tests of ringbuf_trace.h without external tools: the event macro layer
 * (record layout, emitters, common fields, writer context flags), the registry
 * (ids, glob enable/disable), the format text, and the text output (line
 * format, merge over CPUs, lost-event lines, captured pages). Expected values
 * are computed here from what was written, never read back from the library.
 */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#define RINGBUF_TRACE_DEFINE_EVENTS
#include "ringbuf_trace.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

RINGBUF_TRACE_EVENT(sample,
	RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, seq),
		       RINGBUF_FIELD(uint64_t, value),
		       RINGBUF_FIELD(int16_t, small),
		       RINGBUF_FIELD(uint8_t, flag),
		       RINGBUF_ARRAY(uint16_t, hist, 3),
		       RINGBUF_CHARS(msg, 16),
		       RINGBUF_STRING(label)),
	RINGBUF_PRINT("seq=%u value=0x%llx small=%hd flag=%u hist=%u,%u,%u msg=%s label=%s", REC->seq,
		      (unsigned long long)REC->value, REC->small, REC->flag, REC->hist[0], REC->hist[1],
		      REC->hist[2], REC->msg, __get_str(label)));
RINGBUF_TRACE_EVENT(tick, RINGBUF_FIELDS(RINGBUF_FIELD(int32_t, n)), RINGBUF_PRINT("n=%d", REC->n));
RINGBUF_TRACE_EVENT(tock, RINGBUF_FIELDS(RINGBUF_FIELD(int64_t, v)),
		    RINGBUF_PRINT("v=%lld", (long long)REC->v));
RINGBUF_TRACE_EVENT(timer_fire, RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, id), RINGBUF_STRING(what)),
		    RINGBUF_PRINT("id=%u what=%s", REC->id, __get_str(what)));

static uint64_t now;
static uint64_t test_clock(void *ctx)
{
	(void)ctx;
	return now;
}

static struct ringbuf *make_rb(unsigned ncpu, size_t size, int mode)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	cfg.ncpu = ncpu;
	cfg.size_per_cpu = size;
	cfg.mode = mode;
	cfg.clock = test_clock;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	return rb;
}

/* Events are registered once per process (an event belongs to one registry). */
static struct ringbuf_trace_registry reg = RINGBUF_TRACE_REGISTRY_INIT("ringbuf");

static int setup_registry(void **state)
{
	(void)state;
	if (ringbuf_event_sample.id == 0) {
		if (ringbuf_trace_register_event(&reg, &ringbuf_event_sample) != 1 ||
		    ringbuf_trace_register_event(&reg, &ringbuf_event_tick) != 2 ||
		    ringbuf_trace_register_event_id(&reg, &ringbuf_event_tock, 1000) != 1000 ||
		    ringbuf_trace_register_event(&reg, &ringbuf_event_timer_fire) != 3)
			return -1;
	}
	ringbuf_trace_enable(&reg, "*");
	return 0;
}

static int32_t my_tid(void)
{
	return (int32_t)syscall(SYS_gettid);
}

/* ---- registry ------------------------------------------------------------ */

static void registry_assigns_unique_ids_and_refuses_conflicts(void **state)
{
	struct ringbuf_trace_registry other = RINGBUF_TRACE_REGISTRY_INIT("other");
	(void)state;
	/* from setup: 1, 2, explicit 1000, then the lowest free after 2 */
	assert_int_equal(ringbuf_event_sample.id, 1);
	assert_int_equal(ringbuf_event_tick.id, 2);
	assert_int_equal(ringbuf_event_tock.id, 1000);
	assert_int_equal(ringbuf_event_timer_fire.id, 3);
	/* registering again gives the same id */
	assert_int_equal(ringbuf_trace_register_event(&reg, &ringbuf_event_tick), 2);
	assert_int_equal(ringbuf_trace_register_event_id(&reg, &ringbuf_event_tock, 1000), 1000);
	/* another id for a registered event, or an event of another registry */
	assert_int_equal(ringbuf_trace_register_event_id(&reg, &ringbuf_event_tock, 5), RINGBUF_EBUSY);
	assert_int_equal(ringbuf_trace_register_event(&other, &ringbuf_event_tick), RINGBUF_EBUSY);
	assert_int_equal(ringbuf_trace_register_event_id(&reg, &ringbuf_event_tick, 40000), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_trace_register_event(NULL, &ringbuf_event_tick), RINGBUF_EINVAL);
	assert_ptr_equal(ringbuf_trace_find(&reg, "tock"), &ringbuf_event_tock);
	assert_ptr_equal(ringbuf_trace_find_id(&reg, 1000), &ringbuf_event_tock);
	assert_ptr_equal(ringbuf_trace_find_id(&reg, 3), &ringbuf_event_timer_fire);
	assert_null(ringbuf_trace_find(&reg, "nope"));
	assert_null(ringbuf_trace_find_id(&reg, 4));
	assert_int_equal(reg.count, 4);
}

/* Descriptors of a separate table registry; fake events, never emitted. */
static const struct ringbuf_trace_field no_fields[1] = {{"int", "x", 8, 4, 1, 1, 0}};
static struct ringbuf_trace_event fake[40];

static void registry_static_table_and_id_collision(void **state)
{
	struct ringbuf_trace_registry r2 = RINGBUF_TRACE_REGISTRY_INIT("tbl");
	struct ringbuf_trace_event *tbl[3];
	static char names[40][8];
	int i;
	(void)state;
	for (i = 0; i < 40; i++) {
		snprintf(names[i], sizeof names[i], "f%d", i);
		memset(&fake[i], 0, sizeof fake[i]);
		fake[i].name = names[i];
		fake[i].fields = no_fields;
		fake[i].nfields = 1;
		fake[i].size = 12;
	}
	/* an explicit id is skipped by the automatic ones */
	assert_int_equal(ringbuf_trace_register_event_id(&r2, &fake[0], 2), 2);
	assert_int_equal(ringbuf_trace_register_event_id(&r2, &fake[1], 2), RINGBUF_EBUSY);
	assert_int_equal(fake[1].id, 0);
	assert_false(ringbuf_trace_is_enabled(&fake[1]));
	tbl[0] = &fake[1];
	tbl[1] = &fake[2];
	tbl[2] = &fake[3];
	assert_int_equal(ringbuf_trace_register_events(&r2, tbl, 3), 3);
	assert_int_equal(fake[1].id, 1);
	assert_int_equal(fake[2].id, 3);
	assert_int_equal(fake[3].id, 4);
	assert_int_equal(ringbuf_trace_register_event_id(&r2, &fake[4], 32767), 32767);
	/* after the top id, the search wraps to the lowest free one */
	assert_int_equal(ringbuf_trace_register_event(&r2, &fake[5]), 5);
	assert_true(ringbuf_trace_is_enabled(&fake[5]));
	assert_int_equal(r2.count, 6);
}

/* ---- glob ---------------------------------------------------------------- */

static void glob_matcher_follows_fnmatch_rules(void **state)
{
	static const struct {
		const char *g, *s;
		bool m;
	} t[] = {
		{"*", "", true},         {"*", "tick", true},        {"", "", true},
		{"", "a", false},        {"tick", "tick", true},     {"tick", "tic", false},
		{"tic", "tick", false},  {"t*", "tick", true},       {"t*k", "tick", true},
		{"t*k", "tickx", false}, {"*k", "k", true},          {"?ick", "tick", true},
		{"?ick", "ick", false},  {"t??k", "tick", true},     {"t?k", "tick", false},
		{"*_*", "timer_fire", true}, {"*_*", "tick", false}, {"a*b*c", "aXXbYYc", true},
		{"a*b*c", "aXXbYY", false}, {"a*b*c*", "abcabc", true}, {"*a*a*a", "aaa", true},
		{"*a*a*a", "aa", false}, {"[st]ick", "sick", true},  {"[st]ick", "kick", false},
		{"[a-d]x", "cx", true},  {"[a-d]x", "ex", false},    {"[!a-d]x", "ex", true},
		{"[!a-d]x", "bx", false}, {"\\*", "*", true},        {"\\*", "a", false},
		{"t\\?ck", "t?ck", true}, {"t\\?ck", "tick", false}, {"[", "[", true},
		{"**tick**", "tick", true}, {"ringbuf/t*", "ringbuf/tick", true},
		{"ringbuf/t*", "other/tick", false},
	};
	size_t i;
	(void)state;
	for (i = 0; i < sizeof t / sizeof t[0]; i++) {
		if (ringbuf_trace_glob_match(t[i].g, t[i].s) != t[i].m)
			fail_msg("glob \"%s\" on \"%s\": expected %d", t[i].g, t[i].s, t[i].m);
	}
	assert_false(ringbuf_trace_glob_match(NULL, "a"));
}

static void enable_disable_by_glob_gates_the_emitter(void **state)
{
	struct ringbuf *rb = make_rb(1, 8192, RINGBUF_MODE_OVERWRITE);
	struct ringbuf_stats st;
	struct ringbuf_record rec;
	(void)state;
	assert_int_equal(ringbuf_trace_disable(&reg, "t*"), 3); /* tick, tock, timer_fire */
	assert_false(ringbuf_trace_is_enabled(&ringbuf_event_tick));
	assert_true(ringbuf_trace_is_enabled(&ringbuf_event_sample));
	assert_int_equal(trace_tick(rb, 0, 1), 0);
	assert_int_equal(trace_tock(rb, 0, 1), 0);
	assert_int_equal(trace_timer_fire(rb, 0, 1, "x"), 0);
	assert_int_equal(ringbuf_stats_cpu(rb, 0, &st), 0);
	assert_int_equal(st.committed, 0);
	assert_int_equal(st.rejected_events + st.disabled_events, 0); /* never reached the buffer */
	assert_int_equal(ringbuf_trace_enable(&reg, "ringbuf/t?ck"), 2); /* system-qualified */
	assert_int_equal(ringbuf_trace_enable(&reg, "nothing*"), 0);
	assert_int_equal(trace_tick(rb, 0, 7), 1);
	assert_int_equal(trace_tock(rb, 0, 8), 1);
	assert_int_equal(trace_timer_fire(rb, 0, 9, "x"), 0);
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
	assert_int_equal(((const struct ringbuf_ev_tick *)rec.data)->n, 7);
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
	assert_int_equal(((const struct ringbuf_ev_tock *)rec.data)->v, 8);
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 0);
	assert_int_equal(ringbuf_trace_disable(&reg, "*"), 4);
	assert_int_equal(trace_sample(rb, 0, 1, 2, 3, 4, NULL, "m", "l"), 0);
	assert_int_equal(ringbuf_trace_enable(&reg, "*"), 4);
	ringbuf_destroy(rb);
}

/* ---- format text and layout ---------------------------------------------- */

static void format_text_is_tracefs_syntax(void **state)
{
	static const char expect[] =
		"name: sample\n"
		"ID: 1\n"
		"format:\n"
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
		"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n"
		"\n"
		"\tfield:uint32_t seq;\toffset:8;\tsize:4;\tsigned:0;\n"
		"\tfield:uint64_t value;\toffset:12;\tsize:8;\tsigned:0;\n"
		"\tfield:int16_t small;\toffset:20;\tsize:2;\tsigned:1;\n"
		"\tfield:uint8_t flag;\toffset:22;\tsize:1;\tsigned:0;\n"
		"\tfield:uint16_t hist[3];\toffset:24;\tsize:6;\tsigned:0;\n"
		"\tfield:char msg[16];\toffset:30;\tsize:16;\tsigned:0;\n"
		"\tfield:__data_loc char[] label;\toffset:48;\tsize:4;\tsigned:0;\n"
		"\n"
		"print fmt: \"seq=%u value=0x%llx small=%hd flag=%u hist=%u,%u,%u msg=%s label=%s\", "
		"REC->seq, (unsigned long long)REC->value, REC->small, REC->flag, REC->hist[0], "
		"REC->hist[1], REC->hist[2], REC->msg, __get_str(label)\n";
	static const char expect_tick[] =
		"name: tick\nID: 2\nformat:\n"
		"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
		"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
		"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
		"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
		"\tfield:int32_t n;\toffset:8;\tsize:4;\tsigned:1;\n\n"
		"print fmt: \"n=%d\", REC->n\n";
	char buf[2048], small[10];
	(void)state;
	assert_int_equal(ringbuf_trace_format_text(&ringbuf_event_sample, buf, sizeof buf),
			 (int)strlen(expect));
	assert_string_equal(buf, expect);
	assert_int_equal(ringbuf_trace_format_text(&ringbuf_event_tick, buf, sizeof buf),
			 (int)strlen(expect_tick));
	assert_string_equal(buf, expect_tick);
	/* snprintf contract: the full length, a truncated NUL-terminated prefix */
	assert_int_equal(ringbuf_trace_format_text(&ringbuf_event_tick, small, sizeof small),
			 (int)strlen(expect_tick));
	assert_string_equal(small, "name: tic");
	assert_int_equal(ringbuf_trace_format_text(&ringbuf_event_tick, NULL, 0), (int)strlen(expect_tick));
}

static void record_layout_matches_field_descriptors(void **state)
{
	const struct ringbuf_trace_event *e = &ringbuf_event_sample;
	(void)state;
	assert_int_equal(e->nfields, 7);
	assert_int_equal(offsetof(struct ringbuf_ev_sample, ent), 0);
	assert_int_equal(sizeof(struct ringbuf_trace_entry), 8);
	assert_int_equal(e->fields[0].offset, offsetof(struct ringbuf_ev_sample, seq));
	assert_int_equal(e->fields[1].offset, offsetof(struct ringbuf_ev_sample, value));
	assert_int_equal(e->fields[2].offset, offsetof(struct ringbuf_ev_sample, small));
	assert_int_equal(e->fields[3].offset, offsetof(struct ringbuf_ev_sample, flag));
	assert_int_equal(e->fields[4].offset, offsetof(struct ringbuf_ev_sample, hist));
	assert_int_equal(e->fields[5].offset, offsetof(struct ringbuf_ev_sample, msg));
	assert_int_equal(e->fields[6].offset, offsetof(struct ringbuf_ev_sample, label));
	assert_int_equal(e->fields[1].offset, 12); /* 4-byte aligned u64 */
	assert_int_equal(_Alignof(struct ringbuf_ev_sample), 4);
	assert_int_equal(e->size, sizeof(struct ringbuf_ev_sample));
	assert_int_equal(e->size, 52);
	assert_int_equal(e->fields[4].kind, RINGBUF_TRACE_FIELD_ARRAY);
	assert_int_equal(e->fields[4].count, 3);
	assert_int_equal(e->fields[5].kind, RINGBUF_TRACE_FIELD_CHARS);
	assert_int_equal(e->fields[6].kind, RINGBUF_TRACE_FIELD_STRING);
	assert_int_equal(e->fields[2].is_signed, 1);
	assert_int_equal(e->fields[1].is_signed, 0);
	assert_int_equal(ringbuf_event_tock.fields[0].is_signed, 1);
	assert_int_equal(ringbuf_event_tock.fields[0].size, 8);
}

/* ---- emitters --------------------------------------------------------------- */

static void emitter_writes_common_fields_and_every_value(void **state)
{
	struct ringbuf *rb = make_rb(2, 16384, RINGBUF_MODE_OVERWRITE);
	struct ringbuf_record rec;
	const struct ringbuf_ev_sample *s;
	const uint16_t hist[3] = {7, 65535, 300};
	char longstr[RINGBUF_TRACE_STR_MAX + 50];
	const char *str;
	uint32_t loc;
	(void)state;
	now = 5000;
	assert_int_equal(trace_sample(rb, 1, 42, 0x1122334455667788ull, -300, 200, hist,
				      "0123456789abcdefXYZ", "a label"), 1);
	assert_int_equal(ringbuf_consume(rb, 1, &rec), 1);
	assert_int_equal(rec.ts, 5000);
	assert_int_equal(rec.cpu, 1);
	assert_int_equal(rec.len, (52 + 8 + 3) & ~3u); /* fixed part + "a label\0", rounded to 4 */
	s = rec.data;
	assert_int_equal(s->ent.type, 1);
	assert_int_equal(s->ent.flags, 0);
	assert_int_equal(s->ent.preempt_count, 0);
	assert_int_equal(s->ent.pid, my_tid());
	assert_int_equal(s->seq, 42);
	assert_true(s->value == 0x1122334455667788ull);
	assert_int_equal(s->small, -300);
	assert_int_equal(s->flag, 200);
	assert_int_equal(s->hist[0], 7);
	assert_int_equal(s->hist[1], 65535);
	assert_int_equal(s->hist[2], 300);
	assert_memory_equal(s->msg, "0123456789abcde", 16); /* cut to 15 + NUL */
	loc = s->label;
	assert_int_equal(loc & 0xffff, 52);
	assert_int_equal(loc >> 16, 8);
	assert_string_equal((const char *)rec.data + 52, "a label");

	/* NULL pointers: zeroed array, "(null)" strings; short msg zero-filled */
	assert_int_equal(trace_sample(rb, 0, 1, 0, 0, 0, NULL, NULL, NULL), 1);
	assert_int_equal(trace_sample(rb, 0, 2, 0, 0, 0, hist, "ab", ""), 1);
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
	s = rec.data;
	assert_int_equal(s->hist[0] | s->hist[1] | s->hist[2], 0);
	assert_memory_equal(s->msg, "(null)\0\0\0\0\0\0\0\0\0\0", 16);
	assert_string_equal(ringbuf_trace__get_str(rec.data, rec.len, s->label), "(null)");
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
	s = rec.data;
	assert_memory_equal(s->msg, "ab\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16);
	assert_int_equal(s->label, (1u << 16) | 52);
	assert_string_equal(ringbuf_trace__get_str(rec.data, rec.len, s->label), "");

	/* a dynamic string is cut at RINGBUF_TRACE_STR_MAX - 1 bytes */
	memset(longstr, 'x', sizeof longstr - 1);
	longstr[sizeof longstr - 1] = 0;
	assert_int_equal(trace_timer_fire(rb, 0, 9, longstr), 1);
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
	loc = ((const struct ringbuf_ev_timer_fire *)rec.data)->what;
	assert_int_equal(loc >> 16, RINGBUF_TRACE_STR_MAX);
	str = ringbuf_trace__get_str(rec.data, rec.len, loc);
	assert_int_equal(strlen(str), RINGBUF_TRACE_STR_MAX - 1);
	/* a __data_loc word pointing outside the record gives "" */
	assert_string_equal(ringbuf_trace__get_str(rec.data, rec.len, (10u << 16) | (uint32_t)rec.len), "");
	assert_string_equal(ringbuf_trace__get_str(rec.data, rec.len, (2u << 16) | 2u), "");

	/* a dropped event: too large for a page */
	memset(longstr, 'y', sizeof longstr - 1);
	{
		struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
		struct ringbuf *small;
		cfg.page_size = 512;
		cfg.size_per_cpu = 4096;
		assert_int_equal(ringbuf_create(&cfg, &small), 0);
		assert_int_equal(trace_timer_fire(small, 0, 1, longstr), RINGBUF_ENOSPC);
		assert_int_equal(trace_timer_fire(small, 5, 1, "x"), RINGBUF_ENOSPC); /* no such CPU */
		ringbuf_destroy(small);
	}
	ringbuf_destroy(rb);
}

/* Nested writers: a hook at reservation step C emits events as an
 * interrupting writer would (depth 2), and from there once more (depth 3). */
static struct ringbuf *hook_rb;
static int hook_depth, hook_calls;
static void nest_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	(void)ctx;
	if (point != RINGBUF__TP_C_RESERVED || hook_depth >= 2 || rb != hook_rb)
		return;
	if (hook_calls++ >= 2)
		return;
	hook_depth++;
	trace_tick(rb, cpu, 100 + hook_depth);
	hook_depth--;
}

static void nested_writers_get_hardirq_and_nmi_flags(void **state)
{
	struct ringbuf *rb = make_rb(1, 16384, RINGBUF_MODE_OVERWRITE);
	struct ringbuf_record rec;
	const struct ringbuf_ev_tick *t;
	int n[3], i;
	uint8_t fl[3], pc[3];
	(void)state;
	hook_rb = rb;
	hook_depth = hook_calls = 0;
	ringbuf__set_testpoint_hook(nest_hook, NULL);
	assert_int_equal(trace_tick(rb, 0, 1), 1);
	ringbuf__set_testpoint_hook(NULL, NULL);
	/* physical order = reservation order: the outer event, then the one that
	 * interrupted it after its reservation, then the one inside that */
	for (i = 0; i < 3; i++) {
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
		t = rec.data;
		n[i] = t->n;
		fl[i] = t->ent.flags;
		pc[i] = t->ent.preempt_count;
		assert_int_equal(t->ent.pid, my_tid());
	}
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 0);
	assert_int_equal(n[0], 1);
	assert_int_equal(fl[0], 0);
	assert_int_equal(pc[0], 0);
	assert_int_equal(n[1], 101);
	assert_int_equal(fl[1], RINGBUF_TRACE_FLAG_HARDIRQ);
	assert_int_equal(pc[1], 1);
	assert_int_equal(n[2], 102);
	assert_int_equal(fl[2], RINGBUF_TRACE_FLAG_NMI | RINGBUF_TRACE_FLAG_HARDIRQ);
	assert_int_equal(pc[2], 2);
	ringbuf_destroy(rb);
}

static struct ringbuf *sig_rb;
static void on_usr1(int sig)
{
	(void)sig;
	ringbuf_trace_signal_enter();
	trace_tick(sig_rb, 0, 11);
	ringbuf_trace_signal_exit();
}

static void signal_context_marks_events_from_handlers(void **state)
{
	struct ringbuf *rb = make_rb(1, 16384, RINGBUF_MODE_OVERWRITE);
	struct ringbuf_record rec;
	struct sigaction sa, old;
	const struct ringbuf_ev_tick *t;
	int i;
	static const uint8_t fl[5] = {0, RINGBUF_TRACE_FLAG_HARDIRQ, 0,
				      RINGBUF_TRACE_FLAG_NMI | RINGBUF_TRACE_FLAG_HARDIRQ, 0};
	static const uint8_t pc[5] = {0, 1, 0, 3, 0};
	static const int32_t val[5] = {10, 11, 12, 13, 14};
	(void)state;
	sig_rb = rb;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	trace_tick(rb, 0, 10);
	raise(SIGUSR1); /* a real handler: context 2 without writer nesting */
	trace_tick(rb, 0, 12);
	ringbuf_trace_signal_enter();
	ringbuf_trace_signal_enter();
	ringbuf_trace_signal_enter();
	trace_tick(rb, 0, 13); /* depth 4 */
	ringbuf_trace_signal_exit();
	ringbuf_trace_signal_exit();
	ringbuf_trace_signal_exit();
	ringbuf_trace_signal_exit(); /* one too many: stays at 0 */
	trace_tick(rb, 0, 14);
	sigaction(SIGUSR1, &old, NULL);
	for (i = 0; i < 5; i++) {
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
		t = rec.data;
		assert_int_equal(t->n, val[i]);
		assert_int_equal(t->ent.flags, fl[i]);
		assert_int_equal(t->ent.preempt_count, pc[i]);
	}
	ringbuf_destroy(rb);
}

/* ---- threads and names ---------------------------------------------------- */

struct thr {
	struct ringbuf *rb;
	const char *name;
	int32_t tid;
};

static void *thread_main(void *arg)
{
	struct thr *t = arg;
	pthread_setname_np(pthread_self(), t->name);
	t->tid = my_tid();
	assert_int_equal(ringbuf_trace_thread_id(), t->tid);
	trace_tick(t->rb, 0, 1);
	return NULL;
}

static void thread_names_are_recorded_per_thread(void **state)
{
	struct ringbuf *rb = make_rb(1, 16384, RINGBUF_MODE_OVERWRITE);
	struct thr a = {rb, "alpha", 0}, b = {rb, "beta-fifteen-ch", 0};
	pthread_t th;
	char name[16];
	(void)state;
	assert_int_equal(pthread_create(&th, NULL, thread_main, &a), 0);
	pthread_join(th, NULL);
	assert_int_equal(pthread_create(&th, NULL, thread_main, &b), 0);
	pthread_join(th, NULL);
	assert_true(ringbuf_trace_comm(a.tid, name, sizeof name));
	assert_string_equal(name, "alpha");
	assert_true(ringbuf_trace_comm(b.tid, name, sizeof name));
	assert_string_equal(name, "beta-fifteen-ch");
	assert_false(ringbuf_trace_comm(-5, name, sizeof name));
	assert_string_equal(name, "<...>");
	/* renaming: the newest name wins */
	assert_int_equal(ringbuf_trace_thread_id(), my_tid());
	ringbuf_trace_thread_name("renamed");
	assert_true(ringbuf_trace_comm(my_tid(), name, sizeof name));
	assert_string_equal(name, "renamed");
	ringbuf_trace_thread_name("a-name-longer-than-fifteen");
	assert_true(ringbuf_trace_comm(my_tid(), name, sizeof name));
	assert_string_equal(name, "a-name-longer-t"); /* the kernel's 15 characters */
	/* NULL: the name the kernel has for the thread */
	pthread_setname_np(pthread_self(), "kname");
	ringbuf_trace_thread_name(NULL);
	assert_true(ringbuf_trace_comm(my_tid(), name, sizeof name));
	assert_string_equal(name, "kname");
	ringbuf_destroy(rb);
}

/* ---- text output ------------------------------------------------------------- */

static char *expected_line(char *buf, size_t size, const char *comm, int32_t pid, unsigned cpu,
			   const char *ctx, uint64_t ts, const char *ev, const char *fields)
{
	snprintf(buf, size, "%16s-%-7d [%03u] %s %5llu.%06llu: %s: %s", comm, (int)pid, cpu, ctx,
		 (unsigned long long)(ts / 1000000000), (unsigned long long)(ts % 1000000000 / 1000), ev,
		 fields);
	return buf;
}

static void text_line_has_the_kernel_trace_layout(void **state)
{
	struct ringbuf *rb = make_rb(1, 16384, RINGBUF_MODE_OVERWRITE);
	struct ringbuf_record rec;
	const uint16_t hist[3] = {1, 2, 3};
	char got[512], want[512], comm[16];
	(void)state;
	ringbuf_trace_thread_name("texter");
	now = 1234567891234ull;
	trace_sample(rb, 0, 9, 0xabcdef, -2, 5, hist, "hi", "lbl");
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
	ringbuf_trace_comm(my_tid(), comm, sizeof comm);
	assert_string_equal(comm, "texter");
	expected_line(want, sizeof want, "texter", my_tid(), 0, ".....", now, "sample",
		      "seq=9 value=0xabcdef small=-2 flag=5 hist=1,2,3 msg=hi label=lbl");
	assert_int_equal(ringbuf_trace_format_record(&reg, &rec, 0, got, sizeof got), (int)strlen(want));
	assert_string_equal(got, want);
	assert_true(strncmp(want, "          texter-", 17) == 0); /* the helper itself, once */
	/* nanoseconds, raw */
	ringbuf_trace_format_record(&reg, &rec, RINGBUF_TRACE_PRINT_NSEC, got, sizeof got);
	assert_non_null(strstr(got, " 1234.567891234: sample: seq=9 "));
	ringbuf_trace_format_record(&reg, &rec, RINGBUF_TRACE_PRINT_RAW_TS, got, sizeof got);
	assert_non_null(strstr(got, " 1234567891234: sample: "));
	/* an unregistered id */
	{
		struct ringbuf_trace_entry e = {77, 0, 0, 5};
		struct ringbuf_record r = {&e, sizeof e, 1000, 0, 0};
		ringbuf_trace_format_record(&reg, &r, 0, got, sizeof got);
		assert_non_null(strstr(got, "[UNKNOWN EVENT id 77 len 8]"));
	}
	/* context column for a nested record */
	{
		struct ringbuf_ev_tick t = {{2, RINGBUF_TRACE_FLAG_HARDIRQ, 1, 77}, 3};
		struct ringbuf_record r = {&t, sizeof t, 2000000, 0, 3};
		ringbuf_trace_format_record(&reg, &r, 0, got, sizeof got);
		expected_line(want, sizeof want, "<...>", 77, 3, "..h1.", 2000000, "tick", "n=3");
		assert_string_equal(got, want);
		t.ent.flags = RINGBUF_TRACE_FLAG_NMI | RINGBUF_TRACE_FLAG_HARDIRQ;
		t.ent.preempt_count = 12;
		ringbuf_trace_format_record(&reg, &r, 0, got, sizeof got);
		expected_line(want, sizeof want, "<...>", 77, 3, "..Zc.", 2000000, "tick", "n=3");
		assert_string_equal(got, want);
	}
	ringbuf_destroy(rb);
}

static char *read_all(FILE *f)
{
	long n;
	char *s;
	fflush(f);
	n = ftell(f);
	rewind(f);
	s = calloc(1, (size_t)n + 1);
	assert_non_null(s);
	assert_int_equal(fread(s, 1, (size_t)n, f), (size_t)n);
	return s;
}

static void text_print_merges_cpus_and_reports_losses(void **state)
{
	/* 3 CPUs with interleaved time stamps; CPU 2 overflows first (overwrite) */
	struct ringbuf *rb = make_rb(3, 4096 * 2, RINGBUF_MODE_OVERWRITE);
	FILE *f = tmpfile();
	char *out, want[256], *line, *save = NULL;
	int32_t me = my_tid();
	int i, lines = 0, seen_tick = 0;
	uint64_t lost = 0, first2 = 0;
	struct ringbuf_stats st;
	(void)state;
	assert_non_null(f);
	ringbuf_trace_thread_name("merger");
	/* CPU 2: many events, more than fit: oldest overwritten */
	for (i = 0; i < 1000; i++) {
		now = 1000000 + (uint64_t)i * 10;
		trace_tock(rb, 2, i);
	}
	now = 1000000 + 5; /* earlier than most of CPU 2 */
	trace_tick(rb, 0, 1);
	now = 3000000;
	trace_tick(rb, 1, 2);
	now = 3000001;
	trace_tick(rb, 0, 3);
	assert_int_equal(ringbuf_stats_cpu(rb, 2, &st), 0);
	assert_true(st.overrun > 0);
	assert_int_equal(ringbuf_trace_print(rb, &reg, RINGBUF_ALL_CPUS, f, 0, 0), 3 + 1000 - (int)st.overrun);
	out = read_all(f);
	/* walk the lines: times never go back; CPU 2's loss line comes right
	 * before its first event, with the exact count */
	{
		uint64_t last = 0;
		for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			unsigned long long sec, usec;
			const char *p = strchr(line, ']');
			lines++;
			if (strncmp(line, "CPU:", 4) == 0) {
				unsigned cpu;
				unsigned long long k;
				assert_int_equal(sscanf(line, "CPU:%u [LOST %llu EVENTS]", &cpu, &k), 2);
				assert_int_equal(cpu, 2);
				lost += k;
				continue;
			}
			assert_non_null(p);
			assert_int_equal(sscanf(p + 8, "%llu.%llu", &sec, &usec), 2);
			assert_true(sec * 1000000 + usec >= last);
			last = sec * 1000000 + usec;
			if (strstr(line, ": tock: v=")) {
				unsigned long long v = strtoull(strstr(line, "v=") + 2, NULL, 10);
				if (!first2) {
					first2 = v;
					assert_int_equal(lost, v); /* all before it were lost */
				}
			} else {
				seen_tick++;
			}
		}
	}
	assert_int_equal(seen_tick, 3);
	assert_int_equal(lost, st.overrun);
	assert_int_equal(lines, 3 + 1000 - (int)st.overrun + 1);
	/* the first printed line is CPU 0's tick at 1.000005 only if CPU 2's
	 * oldest remaining event is later; check the tick's own line exactly */
	expected_line(want, sizeof want, "merger", me, 1, ".....", 3000000, "tick", "n=2");
	free(out);
	out = read_all(f);
	assert_non_null(strstr(out, want));
	free(out);
	/* consumed: nothing left */
	rewind(f);
	assert_int_equal(ringbuf_trace_print(rb, &reg, RINGBUF_ALL_CPUS, f, 0, 0), 0);
	fclose(f);
	ringbuf_destroy(rb);
}

static void text_print_single_cpu_max_and_header(void **state)
{
	struct ringbuf *rb = make_rb(2, 16384, RINGBUF_MODE_OVERWRITE);
	FILE *f = tmpfile();
	char *out, want[256];
	int i;
	(void)state;
	ringbuf_trace_thread_name("one");
	for (i = 0; i < 5; i++) {
		now = 2000000000ull + (uint64_t)i * 1000;
		trace_tick(rb, 0, i);
		trace_tick(rb, 1, 100 + i);
	}
	assert_int_equal(ringbuf_trace_print(rb, &reg, 1, f, RINGBUF_TRACE_PRINT_HEADER, 2), 2);
	out = read_all(f);
	assert_true(strncmp(out, "# tracer: nop\n", 14) == 0);
	expected_line(want, sizeof want, "one", my_tid(), 1, ".....", 2000000000ull, "tick", "n=100");
	assert_non_null(strstr(out, want));
	expected_line(want, sizeof want, "one", my_tid(), 1, ".....", 2000001000ull, "tick", "n=101");
	assert_non_null(strstr(out, want));
	assert_null(strstr(out, "n=102"));
	assert_null(strstr(out, "n=0"));
	free(out);
	fclose(f);
	assert_int_equal(ringbuf_trace_print(rb, &reg, 2, stdout, 0, 0), RINGBUF_EINVAL);
	ringbuf_destroy(rb);
}

/* ---- capture --------------------------------------------------------------- */

struct collect {
	int n;
	uint64_t ts[4000];
	unsigned cpu[4000];
	int32_t val[4000];
	uint64_t lost[4000];
};

static int collect_fn(const struct ringbuf_record *rec, void *ctx)
{
	struct collect *c = ctx;
	const struct ringbuf_ev_tick *t = rec->data;
	if (c->n >= 4000)
		return -100;
	c->ts[c->n] = rec->ts;
	c->cpu[c->n] = rec->cpu;
	c->val[c->n] = t->n;
	c->lost[c->n] = rec->lost;
	c->n++;
	return 0;
}

static void capture_holds_pages_and_walks_them_merged(void **state)
{
	struct ringbuf *rb = make_rb(2, 4096 * 4, RINGBUF_MODE_OVERWRITE);
	struct ringbuf_trace_capture *cap;
	static struct collect c;
	int i, r;
	(void)state;
	assert_int_equal(ringbuf_trace_capture_create(rb, &cap), 0);
	/* 600 events per CPU (12-byte payload -> 16-byte records, 255 per page) */
	for (i = 0; i < 600; i++) {
		now = 10000 + (uint64_t)i * 2;
		trace_tick(rb, 0, i);
		now = 10001 + (uint64_t)i * 2 + (i >= 300 ? 200000000ull : 0); /* a TIME_EXTEND gap */
		trace_tick(rb, 1, 1000 + i);
	}
	/* full pages only first: the writers' current pages stay */
	r = ringbuf_trace_capture_read(cap, rb, RINGBUF_ALL_CPUS, RINGBUF_READ_FULL);
	assert_int_equal(r, 4);
	assert_int_equal(ringbuf_trace_capture_pages(cap, 0), 2);
	r = ringbuf_trace_capture_read(cap, rb, RINGBUF_ALL_CPUS, 0);
	assert_int_equal(r, 2);
	assert_int_equal(ringbuf_trace_capture_pages(cap, 1), 3);
	assert_non_null(ringbuf_trace_capture_page(cap, 1, 2));
	assert_null(ringbuf_trace_capture_page(cap, 1, 3));
	assert_int_equal(ringbuf_trace_capture_read(cap, rb, 0, 0), 0); /* empty now */

	c.n = 0;
	assert_int_equal(ringbuf_trace_capture_foreach(cap, RINGBUF_ALL_CPUS, 0, collect_fn, &c), 0);
	assert_int_equal(c.n, 1200);
	/* merged: CPU 0's event i then CPU 1's event i until the gap, then the
	 * rest of CPU 0, then the rest of CPU 1 */
	for (i = 0; i < 300; i++) {
		assert_int_equal(c.cpu[2 * i], 0);
		assert_int_equal(c.val[2 * i], i);
		assert_int_equal(c.ts[2 * i], 10000 + (uint64_t)i * 2);
		assert_int_equal(c.cpu[2 * i + 1], 1);
		assert_int_equal(c.val[2 * i + 1], 1000 + i);
		assert_int_equal(c.ts[2 * i + 1], 10001 + (uint64_t)i * 2);
	}
	for (i = 300; i < 600; i++) {
		assert_int_equal(c.cpu[300 + i], 0);
		assert_int_equal(c.val[300 + i], i);
		assert_int_equal(c.cpu[600 + i], 1);
		assert_int_equal(c.val[600 + i], 1000 + i);
		assert_int_equal(c.ts[600 + i], 10001 + (uint64_t)i * 2 + 200000000ull);
	}
	for (i = 0; i < 1200; i++)
		assert_int_equal(c.lost[i], 0);
	/* one CPU, and max */
	c.n = 0;
	assert_int_equal(ringbuf_trace_capture_foreach(cap, 1, 10, collect_fn, &c), 0);
	assert_int_equal(c.n, 10);
	assert_int_equal(c.val[9], 1009);
	/* the walk stops at a non-zero return and passes it on */
	c.n = 3990;
	assert_int_equal(ringbuf_trace_capture_foreach(cap, 0, 0, collect_fn, &c), -100);
	ringbuf_trace_capture_destroy(cap);
	ringbuf_destroy(rb);
}

static void capture_reports_lost_events_between_pages(void **state)
{
	struct ringbuf *rb = make_rb(1, 4096 * 2, RINGBUF_MODE_OVERWRITE);
	struct ringbuf_trace_capture *cap;
	static struct collect c;
	int i, nloss = 0;
	uint64_t lost = 0;
	struct ringbuf_stats st;
	(void)state;
	assert_int_equal(ringbuf_trace_capture_create(rb, &cap), 0);
	for (i = 0; i < 100; i++) {
		now = 1000 + (uint64_t)i;
		trace_tick(rb, 0, i);
	}
	assert_int_equal(ringbuf_trace_capture_read(cap, rb, 0, 0), 1);
	for (i = 100; i < 3000; i++) {
		now = 1000 + (uint64_t)i;
		trace_tick(rb, 0, i);
	}
	assert_int_equal(ringbuf_stats_cpu(rb, 0, &st), 0);
	assert_true(st.overrun > 0);
	assert_true(ringbuf_trace_capture_read(cap, rb, 0, 0) > 0);
	c.n = 0;
	assert_int_equal(ringbuf_trace_capture_foreach(cap, 0, 0, collect_fn, &c), 0);
	/* every event is there except a run of exactly the overwritten ones, and
	 * the record after the run says how many (the writer had gone on writing
	 * into the page the first read took events from, so the run starts later) */
	for (i = 0; i < c.n; i++) {
		if (c.lost[i]) {
			assert_int_equal(nloss++, 0);
			assert_true(i >= 100);
			assert_int_equal(c.lost[i], st.overrun);
			lost = c.lost[i];
		}
		assert_int_equal(c.val[i], i + (int)lost);
	}
	assert_int_equal(nloss, 1);
	assert_int_equal(c.n + (int)lost, 3000);
	assert_int_equal(c.val[c.n - 1], 2999);
	ringbuf_trace_capture_destroy(cap);
	ringbuf_destroy(rb);
}

static void capture_parses_align8_pages(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	struct ringbuf_trace_capture *cap;
	static struct collect c;
	int i;
	(void)state;
	cfg.flags = RINGBUF_F_ALIGN8;
	cfg.clock = test_clock;
	cfg.size_per_cpu = 4096 * 4;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	assert_int_equal(ringbuf_trace_capture_create(rb, &cap), 0);
	for (i = 0; i < 500; i++) { /* every record type_len 0, 8-byte aligned */
		now = 77 + (uint64_t)i * 1000;
		assert_int_equal(trace_tick(rb, 0, i), 1);
	}
	assert_true(ringbuf_trace_capture_read(cap, rb, 0, 0) >= 2);
	c.n = 0;
	assert_int_equal(ringbuf_trace_capture_foreach(cap, RINGBUF_ALL_CPUS, 0, collect_fn, &c), 0);
	assert_int_equal(c.n, 500);
	for (i = 0; i < 500; i++) {
		assert_int_equal(c.val[i], i);
		assert_int_equal(c.ts[i], 77 + (uint64_t)i * 1000);
	}
	ringbuf_trace_capture_destroy(cap);
	ringbuf_destroy(rb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(registry_assigns_unique_ids_and_refuses_conflicts, setup_registry),
		cmocka_unit_test_setup(registry_static_table_and_id_collision, setup_registry),
		cmocka_unit_test(glob_matcher_follows_fnmatch_rules),
		cmocka_unit_test_setup(enable_disable_by_glob_gates_the_emitter, setup_registry),
		cmocka_unit_test_setup(format_text_is_tracefs_syntax, setup_registry),
		cmocka_unit_test_setup(record_layout_matches_field_descriptors, setup_registry),
		cmocka_unit_test_setup(emitter_writes_common_fields_and_every_value, setup_registry),
		cmocka_unit_test_setup(nested_writers_get_hardirq_and_nmi_flags, setup_registry),
		cmocka_unit_test_setup(signal_context_marks_events_from_handlers, setup_registry),
		cmocka_unit_test_setup(thread_names_are_recorded_per_thread, setup_registry),
		cmocka_unit_test_setup(text_line_has_the_kernel_trace_layout, setup_registry),
		cmocka_unit_test_setup(text_print_merges_cpus_and_reports_losses, setup_registry),
		cmocka_unit_test_setup(text_print_single_cpu_max_and_header, setup_registry),
		cmocka_unit_test_setup(capture_holds_pages_and_walks_them_merged, setup_registry),
		cmocka_unit_test_setup(capture_reports_lost_events_between_pages, setup_registry),
		cmocka_unit_test_setup(capture_parses_align8_pages, setup_registry),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
