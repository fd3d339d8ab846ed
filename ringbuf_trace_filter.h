/* ringbuf_trace_filter.h - v0.1.0 - per-event filters and triggers (the kernel's syntax) for ringbuf.h's trace events
 * SPDX-License-Identifier: MIT   (licence text at the end of ringbuf.h)
 *
 * Filters (`seq > 10 && comm ~ "work*"`) and triggers (traceon, traceoff,
 * enable_event, disable_event, stacktrace, snapshot) set, replaced and
 * cleared at run time while writers emit, compiled to small programs that
 * the emitters run (async-signal-safe), with a grace period so that no
 * writer holds a freed program. The `snapshot` and `stacktrace` triggers
 * use ringbuf_trace_snapshot.h, which this header includes.
 *
 * USAGE
 *   In the one C file that defines RINGBUF_IMPLEMENTATION:
 *       #define RINGBUF_IMPLEMENTATION
 *       #include "ringbuf_trace_filter.h"  (includes ringbuf_trace_snapshot.h,
 *                                           ringbuf_trace_event.h, ringbuf.h)
 *   Everywhere else:  #include "ringbuf_trace_filter.h"  (or ringbuf_trace.h: every part)
 *   Without this header no event has a filter: the emitters never call it.
 *
 * TABLE OF CONTENTS (grep for the anchors)
 *   >>filter     the syntax, the API, >>design (filter programs and the
 *                writers: grace period), the implementation
 *
 * CONFIGURATION
 *   RINGBUF_TRACE_FILTER_SLOTS  [impl-only] writer slots of the filter grace period (default 256;
 *                               threads beyond share one slower counter)
 *   RINGBUF_API, RINGBUF_NAMESPACE, RINGBUF_STATIC as in ringbuf.h
 *
 * CONTEXTS
 *   Evaluation (in the emitters) is async-signal-safe; the setters and
 *   getters are for ordinary threads and may run while writers emit.
 */
#ifdef __cplusplus
#ifndef RINGBUF__CXX_SHIM_KEEP
/* C++: ringbuf.h's C11-atomics shim (>>cxx in ringbuf.h) stays in force until
 * the end of the outermost ringbuf_trace*.h being included, which ends it */
#define RINGBUF__CXX_SHIM_KEEP 1
#define RINGBUF__CXX_SHIM_BY_FILTER 1
#endif
#endif
#include "ringbuf_trace_event.h"
#include "ringbuf_trace_snapshot.h"

#ifndef RINGBUF_TRACE_FILTER_H
#define RINGBUF_TRACE_FILTER_H

#ifdef RINGBUF_NAMESPACE
#define ringbuf_trace__filter_testing    RINGBUF__NS(ringbuf_trace__filter_testing)
#define ringbuf_trace_filter_eval        RINGBUF__NS(ringbuf_trace_filter_eval)
#define ringbuf_trace_get_filter         RINGBUF__NS(ringbuf_trace_get_filter)
#define ringbuf_trace_set_filter         RINGBUF__NS(ringbuf_trace_set_filter)
#define ringbuf_trace_get_triggers       RINGBUF__NS(ringbuf_trace_get_triggers)
#define ringbuf_trace_set_trigger        RINGBUF__NS(ringbuf_trace_set_trigger)
#endif

#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ==== >>filter ========================================================== *
 *
 * Per-event filters and triggers in the kernel's syntax (tracefs
 * events/<sys>/<event>/filter and trigger), set, replaced and cleared at run
 * time while writers emit. The emitter fills
 * the reserved record, then (only when a filter is attached) evaluates the
 * compiled program on it and commits it or ringbuf_discard()s it: the kernel's
 * sequence, so a discarded event leaves no trace but the buffer's `discarded`
 * count.
 *
 *   ringbuf_trace_set_filter(&reg, "sched_*", "prev_pid > 100 && comm ~ \"w*\"", &err);
 *
 * SYNTAX
 *   expr  := expr '||' expr | expr '&&' expr | '!' expr | '(' expr ')' | pred
 *   pred  := field op value       && binds tighter than ||; ! tightest
 *   integer fields (RINGBUF_FIELD, common_type, common_flags,
 *     common_preempt_count, common_pid):  == != < <= > >= &
 *     (`f & v` is true when f & v is not 0); values in decimal, 0x hex or 0
 *     octal, a leading '-' for signed fields; compared in the field's own
 *     signedness over 64 bits.
 *   string fields (RINGBUF_CHARS, RINGBUF_STRING):  == != ~
 *     (`~` is a glob: * ? [...] as in ringbuf_trace_glob_match()); values
 *     "double" or 'single' quoted (no escapes), or a bare word.
 *   RINGBUF_ARRAY fields cannot be filtered on (as in the kernel).
 *   Limits: text up to 4096 bytes, 64 predicates, parentheses 32 deep.
 *
 * BAD TEXT. ringbuf_trace_set_filter() compiles the text for every event the
 * glob matches before it changes anything: one error and no event's filter
 * changes; err (optional) gets the event, the byte position in the text and a
 * message ("pos 7: unknown field 'pdi'").
 *
 * COST. No filter: the emitter tests one bit of the state word it already
 * loaded (one predictable branch). With a filter: one out-of-line call
 * (ringbuf_trace__filter_keep: a leaf for a one-predicate integer filter, the
 * interpreter otherwise), two stores to the thread's slot word around the
 * evaluation and a compiler barrier; no atomic read-modify-write, no lock, no
 * allocation. A false filter costs a ringbuf_discard() instead of the commit.
 * `make bench` (bench/bench_filter.c) measures all of these against the
 * emitter without a filter.
 *
 * >>design: filter programs and the writers (grace period)
 *   Each event has one pointer to its program (ev->filter, NULL: none; the
 *   compiled filter and the triggers with their own filters) and one
 *   state bit (RINGBUF_TRACE__FILTERED, in the word the emitter loads anyway).
 *   A writer's evaluation is a read-side section on a per-thread slot word
 *   (depth in the low 8 bits, a generation above, written only by the thread
 *   and the signal handlers that interrupt it; slots are claimed from a static
 *   table the first time a thread evaluates a filter):
 *     F1  w = load(slot, relaxed); store(slot, w + 1, relaxed)   enter
 *         (a handler between the two runs a whole section and puts back what
 *         it found, so the store is still right for this thread)
 *     F2  atomic_signal_fence(seq_cst): the light side of the asymmetric
 *         fence with S2 (orders F1 before F3 in this thread)
 *     F3  p = load(ev->filter, acquire)        pairs with S1's release
 *     F4  keep = !p || run(p's filter, record); fire p's triggers whose own
 *         filter holds (counts: CAS on the trigger's count in *p)
 *     F5  store(slot, depth(w) ? w : w - depth + one generation, release)
 *         leave; pairs with S3's acquire: the reads of *p happen before it
 *     F6  the emitter commits or ringbuf_discard()s the record (after the
 *         section: p is not used any more); F6' instead, when a post-commit
 *         trigger fired in F4 (stacktrace, snapshot): the section's slow path
 *         commits or discards after F5, then runs them with values copied
 *         out of p in F4 (the snapshot pointer, the stacktrace flag: p may be
 *         freed by then), and tells the emitter it is done
 *   A setter (serialized by a mutex and the registry lock; ordinary threads):
 *     S0  compile every new program first (nothing published on an error);
 *         a program carries the event's filter and its triggers, so setting
 *         one rebuilds the other from the current program (trigger counts
 *         copied as they are then)
 *     S1  old = exchange(ev->filter, new, seq_cst); then the state word's
 *         FILTERED bit follows (seq_cst CAS, only while enabled; see
 *         ringbuf_trace__set_state for the race with enable_event triggers),
 *         for every event matched
 *     S2  membarrier(PRIVATE_EXPEDITED): every thread of the process runs a
 *         full barrier (a seq_cst fence) between S2's start and its return
 *     S3  for every claimed slot: load(slot, acquire) until its depth is 0 or
 *         its generation moved on from the first value read (the section seen
 *         in flight ended; nested handler sections keep the generation)
 *     S4  free the old programs
 *   Why no writer can hold a freed program: take a section that loaded old
 *   at F3. F3 read-before S1 in old's modification order. S2's barrier runs
 *   in the writer's thread at some point: if after F1's store, S3 (after S2)
 *   reads F1's store or a later one, sees depth >= 1 and waits for F5 (or a
 *   later generation, only stored at the outermost F5 of that section or a
 *   later one); if before F1's store, that barrier is a seq_cst fence Y
 *   sequenced before F3, and S2 begins with a full barrier X in the setter,
 *   S1 sequenced before X, X before Y in the total order S: by C11 7.17.4
 *   (fences: A sequenced before X, Y sequenced before B, X precedes Y in S),
 *   F3 takes S1's value or a later one: not old. F5's release / S3's acquire
 *   then order the section's reads of *old before S4's free. (membarrier is
 *   outside C11; it is taken as the fence Y in every thread, as ringbuf.h's
 *   [BARRIER].)
 *   Fallbacks. A thread that finds the slot table full uses one shared word
 *   with seq_cst fetch_add/fetch_sub (RMWs: no barrier needed; S3 waits for
 *   it to be 0). Where membarrier() is missing or refused (not Linux, old
 *   kernels, seccomp) and where S3 waited more than about a second (a thread
 *   stopped inside a section), the old programs are kept, never freed (a
 *   bounded leak per replacement; ringbuf_trace_set_filter still succeeds).
 *   Slots are not given back at thread exit: a thread that finds none free
 *   takes over one whose thread is gone (tgkill(pid, tid, 0) == ESRCH); the
 *   fork child forgets its slot (atfork, with the thread id).
 */

/** Where a filter text went wrong (ringbuf_trace_set_filter, ringbuf_trace_filter_eval). */
struct ringbuf_trace_filter_error {
	int pos;        /* byte offset in the text, -1 when the error is not at a position */
	char event[64]; /* the event the text was compiled for ("" if none) */
	char msg[160];  /* "pos 7: unknown field 'pdi'" */
};

/** Set the filter of every event of reg matching glob (as ringbuf_trace_enable)
 * to filter; NULL, "" (or only blanks) or "0" clears it. All or nothing: the
 * text is compiled for every matched event first; on an error nothing changes,
 * err gets the first error and RINGBUF_EINVAL is returned (RINGBUF_ENOMEM when
 * memory runs out). Returns the number of events changed. Safe while writers
 * emit, in threads and signal handlers (an event being written while the
 * filter changes gets the old or the new filter). Not async-signal-safe. */
RINGBUF_API int ringbuf_trace_set_filter(struct ringbuf_trace_registry *reg, const char *glob,
					 const char *filter, struct ringbuf_trace_filter_error *err);
/** The filter text of ev as set (without surrounding blanks); "none" when ev
 * has none, like tracefs. snprintf-style: returns the full length. */
RINGBUF_API int ringbuf_trace_get_filter(const struct ringbuf_trace_event *ev, char *buf, size_t size);
/** Compile filter for ev and evaluate it once on the record rec (len bytes,
 * common fields included): 1 true, 0 false, RINGBUF_EINVAL (err filled) or
 * RINGBUF_ENOMEM. For tools and tests; changes nothing. */
RINGBUF_API int ringbuf_trace_filter_eval(const struct ringbuf_trace_event *ev, const char *filter,
					  const void *rec, size_t len,
					  struct ringbuf_trace_filter_error *err);
/** Add a trigger to every event of reg matching glob, in the kernel's syntax
 * (tracefs events/<sys>/<event>/trigger):
 *     traceoff[:count] [if filter]        ringbuf_record_off() on the buffer written
 *     traceon[:count] [if filter]         ringbuf_record_on()
 *     enable_event:[system:]event[:count] [if filter]    enable another event
 *     disable_event:[system:]event[:count] [if filter]   disable it
 *     snapshot[:count] [if filter]        ringbuf_trace_snapshot() of the snapshot
 *                                         attached to reg (>>snapshot; an error
 *                                         when none is), after the commit
 *     stacktrace[:count] [if filter]      a kernel_stack event with the writer's
 *                                         return addresses, after the commit
 * A trigger fires when an event it is on is written (after the fields are
 * filled, before the commit; whether or not the event's own filter keeps
 * it) and its filter (same syntax as the event filter) holds on the record;
 * with a count it fires that many times (exactly, whatever the nesting), then
 * stays. traceoff fires before the triggering event is committed, so that
 * event is the last one of its CPU buffer except for writers already past the
 * buffer's on/off check: the writers its signal handler interrupted (at most
 * one event per interrupted level, right after it) and writers on other CPUs
 * (as with the kernel's ring_buffer_record_off()). The same
 * action (and target) set again replaces the old trigger; "!action..." removes
 * it (count and filter ignored). snapshot and stacktrace run after the
 * triggering event is committed (as the kernel's post-call triggers), so
 * the stack event follows it and the snapshot holds it (>>snapshot). At most 8 triggers per event. Returns the
 * number of events changed; errors as ringbuf_trace_set_filter (positions in
 * the trigger text), nothing changed. Same contexts as ringbuf_trace_set_filter;
 * the triggers fire in the emitters (async-signal-safe). */
RINGBUF_API int ringbuf_trace_set_trigger(struct ringbuf_trace_registry *reg, const char *glob,
					  const char *trigger, struct ringbuf_trace_filter_error *err);
/** The triggers of ev, one a line ("traceoff:2 if v > 5", the count left or
 * "unlimited"; "" when none). snprintf-style: returns the full length. */
RINGBUF_API int ringbuf_trace_get_triggers(const struct ringbuf_trace_event *ev, char *buf, size_t size);
#ifdef RINGBUF_TESTING
/** Tests: behave as without membarrier (no_membarrier != 0); *kept (if not
 * NULL) gets the number of replaced programs kept unfreed so far. */
RINGBUF_API void ringbuf_trace__filter_testing(int no_membarrier, unsigned *kept);
#endif


#ifdef __cplusplus
}
#endif
#endif /* RINGBUF_TRACE_FILTER_H */

#if defined(RINGBUF_IMPLEMENTATION) && !defined(RINGBUF_TRACE_FILTER_IMPLEMENTATION_INCLUDED)
#define RINGBUF_TRACE_FILTER_IMPLEMENTATION_INCLUDED 1

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>
/* kill(): declared by ringbuf_trace_event.h's implementation (once: clang++
 * refuses a second declaration without glibc's throw()) */

/* ---- >>filter: compiler ---------------------------------------------------
 *
 * The text is parsed by recursive descent into straight-line code for an
 * accumulator machine: a predicate sets acc, JT/JF jump to the end of an ||
 * / && chain when acc already decides it (short circuit), NOT inverts acc.
 * Integer predicates are normalised at compile time: the field is loaded,
 * sign-extended for signed fields, and both sides are offset by 2^63 for
 * signed fields so that one unsigned comparison serves both signednesses. */

#define RINGBUF_TRACE__FTEXT_MAX 4096
#define RINGBUF_TRACE__FPRED_MAX 64
#define RINGBUF_TRACE__FDEPTH_MAX 32
#define RINGBUF_TRACE__FINSN_MAX 256

enum {
	RINGBUF_TRACE__FI_INT = 0, /* acc = cmp(load(rec + off), val) */
	RINGBUF_TRACE__FI_CHARS,   /* fixed char array vs string */
	RINGBUF_TRACE__FI_STR,     /* __data_loc string vs string */
	RINGBUF_TRACE__FI_JT,      /* if (acc) goto jmp */
	RINGBUF_TRACE__FI_JF,      /* if (!acc) goto jmp */
	RINGBUF_TRACE__FI_NOT,     /* acc = !acc */
};
enum {
	RINGBUF_TRACE__FC_EQ = 0, RINGBUF_TRACE__FC_NE, RINGBUF_TRACE__FC_LT, RINGBUF_TRACE__FC_LE,
	RINGBUF_TRACE__FC_GT, RINGBUF_TRACE__FC_GE, RINGBUF_TRACE__FC_AND, RINGBUF_TRACE__FC_GLOB,
};

struct ringbuf_trace__finsn {
	uint8_t op;    /* RINGBUF_TRACE__FI_* */
	uint8_t cmp;   /* RINGBUF_TRACE__FC_* */
	uint8_t width; /* integer bytes 1, 2, 4, 8 */
	uint8_t sgn;   /* signed field */
	uint32_t off;  /* field offset in the record */
	uint32_t truth;/* integer comparisons: bit (v > val) * 2 + (v == val) says true */
	uint32_t arg;  /* jumps: target; strings: offset in pool; chars: also */
	uint32_t size; /* chars: the array's size */
	uint64_t val;  /* integers: the value (biased for signed fields) */
	uint64_t bias; /* 2^63 for signed fields' comparisons, else 0 */
	uint64_t sext; /* signed fields: the sign bit of the width (sign extension), else 0 */
};

RINGBUF__FLEX_BEGIN
struct ringbuf_trace__prog {
	struct ringbuf_trace__prog *next; /* kept programs (no grace period possible) */
	char *text;                       /* the text as set, trimmed */
	char *pool;                       /* string constants, NUL-terminated */
	uint32_t n;
	uint32_t one_int;                 /* one integer predicate and no trigger: the leaf path */
	uint32_t has_filter;              /* 0: triggers only, every record kept */
	uint32_t ntrig;
	struct ringbuf_trace__trig *trig; /* owned; with their conditions */
	struct ringbuf_trace__finsn insn[];
};
RINGBUF__FLEX_END

/* >>filter: triggers */
enum {
	RINGBUF_TRACE__T_TRACEOFF = 0,
	RINGBUF_TRACE__T_TRACEON,
	RINGBUF_TRACE__T_ENABLE,
	RINGBUF_TRACE__T_DISABLE,
	RINGBUF_TRACE__T_SNAPSHOT,   /* after the commit (>>snapshot) */
	RINGBUF_TRACE__T_STACKTRACE, /* after the commit */
	RINGBUF_TRACE__T_COUNT
};
#define RINGBUF_TRACE__TRIG_MAX 8
struct ringbuf_trace__trig {
	uint32_t action;                    /* RINGBUF_TRACE__T_* */
	_Atomic(int64_t) count;             /* firings left, -1: unlimited */
	struct ringbuf_trace_event *target; /* enable_event / disable_event */
	struct ringbuf_trace_snapshot *snap; /* snapshot */
	struct ringbuf_trace__prog *cond;   /* its `if` filter, NULL: always */
};
/* What the section asks the emitter to do after the commit (snapshot,
 * stacktrace): the program may be freed once the section ends, so it is
 * handed out as values. */
struct ringbuf_trace__post {
	struct ringbuf_trace_snapshot *snap;
	uint32_t stack;
};

struct ringbuf_trace__fparse {
	const struct ringbuf_trace_event *ev;
	const char *text;
	size_t pos;
	struct ringbuf_trace__finsn insn[RINGBUF_TRACE__FINSN_MAX];
	uint32_t n, npred, depth;
	char pool[RINGBUF_TRACE__FTEXT_MAX + RINGBUF_TRACE__FPRED_MAX];
	uint32_t pool_len;
	struct ringbuf_trace_filter_error *err;
	bool failed;
};

static bool ringbuf_trace__ferr(struct ringbuf_trace__fparse *p, size_t pos, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static bool ringbuf_trace__ferr(struct ringbuf_trace__fparse *p, size_t pos, const char *fmt, ...)
{
	va_list ap;
	int k;
	if (p->failed)
		return false;
	p->failed = true;
	if (!p->err)
		return false;
	p->err->pos = (int)pos;
	k = snprintf(p->err->msg, sizeof p->err->msg, "pos %d: ", (int)pos);
	if (k < 0)
		k = 0;
	va_start(ap, fmt);
	vsnprintf(p->err->msg + k, sizeof p->err->msg - (size_t)k, fmt, ap);
	va_end(ap);
	return false;
}

static bool ringbuf_trace__fident_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool ringbuf_trace__fident_char(char c)
{
	return ringbuf_trace__fident_start(c) || (c >= '0' && c <= '9');
}
static void ringbuf_trace__fskip(struct ringbuf_trace__fparse *p)
{
	while (p->text[p->pos] == ' ' || p->text[p->pos] == '\t' || p->text[p->pos] == '\n' ||
	       p->text[p->pos] == '\r')
		p->pos++;
}
/* Consume the token tok if it comes next (after blanks). */
static bool ringbuf_trace__faccept(struct ringbuf_trace__fparse *p, const char *tok)
{
	size_t n = strlen(tok);
	ringbuf_trace__fskip(p);
	if (strncmp(p->text + p->pos, tok, n) != 0)
		return false;
	p->pos += n;
	return true;
}

static const struct ringbuf_trace_field ringbuf_trace__common_fields[4] = {
	{"unsigned short", "common_type", 0, 2, 1, 0, RINGBUF_TRACE_FIELD_INT},
	{"unsigned char", "common_flags", 2, 1, 1, 0, RINGBUF_TRACE_FIELD_INT},
	{"unsigned char", "common_preempt_count", 3, 1, 1, 0, RINGBUF_TRACE_FIELD_INT},
	{"int", "common_pid", 4, 4, 1, 1, RINGBUF_TRACE_FIELD_INT},
};

static const struct ringbuf_trace_field *ringbuf_trace__ffield(const struct ringbuf_trace_event *ev,
								const char *name, size_t n)
{
	unsigned i;
	for (i = 0; i < 4; i++)
		if (strlen(ringbuf_trace__common_fields[i].name) == n &&
		    memcmp(ringbuf_trace__common_fields[i].name, name, n) == 0)
			return &ringbuf_trace__common_fields[i];
	for (i = 0; i < ev->nfields; i++)
		if (strlen(ev->fields[i].name) == n && memcmp(ev->fields[i].name, name, n) == 0)
			return &ev->fields[i];
	return NULL;
}

static bool ringbuf_trace__femit(struct ringbuf_trace__fparse *p, const struct ringbuf_trace__finsn *in,
				 size_t pos)
{
	if (p->n >= RINGBUF_TRACE__FINSN_MAX)
		return ringbuf_trace__ferr(p, pos, "filter too complex (more than %d operations)",
					   RINGBUF_TRACE__FINSN_MAX);
	p->insn[p->n++] = *in;
	return true;
}

/* An integer constant (base 0 as strtoull: 0x hex, 0 octal, decimal) with an
 * optional leading '-'. */
static bool ringbuf_trace__fnumber(struct ringbuf_trace__fparse *p, const struct ringbuf_trace_field *f,
				   uint64_t *out)
{
	size_t start = p->pos;
	const char *s = p->text + p->pos;
	bool neg = false;
	unsigned base = 10;
	uint64_t v = 0;
	size_t i = 0, digits = 0;
	if (s[0] == '-') {
		neg = true;
		i = 1;
	}
	if (s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
		base = 16;
		i += 2;
	} else if (s[i] == '0') {
		base = 8;
	}
	for (;; i++, digits++) {
		char c = s[i];
		unsigned d;
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else if (ringbuf_trace__fident_char(c))
			return ringbuf_trace__ferr(p, start + i, "bad digit '%c' in a number", c);
		else
			break;
		if (d >= base)
			return ringbuf_trace__ferr(p, start + i, "bad digit '%c' in a number", c);
		if (v > (UINT64_MAX - d) / base)
			return ringbuf_trace__ferr(p, start, "number out of range");
		v = v * base + d;
	}
	if (digits == 0)
		return ringbuf_trace__ferr(p, start, "expected a number for integer field '%s'", f->name);
	if (neg) {
		if (!f->is_signed)
			return ringbuf_trace__ferr(p, start, "negative number for unsigned field '%s'",
						   f->name);
		if (v > (uint64_t)INT64_MAX + 1)
			return ringbuf_trace__ferr(p, start, "number out of range");
		v = (uint64_t)0 - v;
	} else if (f->is_signed && v > (uint64_t)INT64_MAX) {
		return ringbuf_trace__ferr(p, start, "number out of range for signed field '%s'", f->name);
	}
	p->pos = start + i;
	*out = v;
	return true;
}

/* A string constant: quoted ("..." or '...', no escapes) or a bare word. */
static bool ringbuf_trace__fstring(struct ringbuf_trace__fparse *p, const struct ringbuf_trace_field *f,
				   uint32_t *pool_off)
{
	size_t start = p->pos, n = 0;
	const char *s = p->text + p->pos, *b;
	if (s[0] == '"' || s[0] == '\'') {
		const char *e = strchr(s + 1, s[0]);
		if (!e)
			return ringbuf_trace__ferr(p, start, "unterminated string");
		b = s + 1;
		n = (size_t)(e - b);
		p->pos += n + 2;
	} else {
		while (s[n] && !strchr(" \t\r\n()&|!=<>~\"'", s[n]))
			n++;
		if (n == 0)
			return ringbuf_trace__ferr(p, start, "expected a string for field '%s'", f->name);
		b = s;
		p->pos += n;
	}
	if (memchr(b, 0, n))
		return ringbuf_trace__ferr(p, start, "unterminated string");
	*pool_off = p->pool_len;
	memcpy(p->pool + p->pool_len, b, n);
	p->pool[p->pool_len + n] = 0;
	p->pool_len += (uint32_t)n + 1;
	return true;
}

static bool ringbuf_trace__fpred(struct ringbuf_trace__fparse *p)
{
	static const struct { const char *tok; uint8_t cmp; } ops[] = {
		{"==", RINGBUF_TRACE__FC_EQ}, {"!=", RINGBUF_TRACE__FC_NE}, {"<=", RINGBUF_TRACE__FC_LE},
		{">=", RINGBUF_TRACE__FC_GE}, {"<", RINGBUF_TRACE__FC_LT},  {">", RINGBUF_TRACE__FC_GT},
		{"~", RINGBUF_TRACE__FC_GLOB}, {"&", RINGBUF_TRACE__FC_AND},
	};
	struct ringbuf_trace__finsn in;
	const struct ringbuf_trace_field *f;
	size_t fpos, opos, n = 0;
	unsigned i;
	int op = -1;
	ringbuf_trace__fskip(p);
	fpos = p->pos;
	if (!p->text[fpos])
		return ringbuf_trace__ferr(p, fpos, "expected a field name, found the end");
	if (!ringbuf_trace__fident_start(p->text[fpos]))
		return ringbuf_trace__ferr(p, fpos, "expected a field name, found '%c'", p->text[fpos]);
	while (ringbuf_trace__fident_char(p->text[fpos + n]))
		n++;
	f = ringbuf_trace__ffield(p->ev, p->text + fpos, n);
	if (!f)
		return ringbuf_trace__ferr(p, fpos, "unknown field '%.*s'", (int)(n > 64 ? 64 : n),
					   p->text + fpos);
	if (f->kind == RINGBUF_TRACE_FIELD_ARRAY)
		return ringbuf_trace__ferr(p, fpos, "field '%s' is an array (not filterable)", f->name);
	p->pos = fpos + n;
	if (++p->npred > RINGBUF_TRACE__FPRED_MAX)
		return ringbuf_trace__ferr(p, fpos, "more than %d predicates", RINGBUF_TRACE__FPRED_MAX);
	ringbuf_trace__fskip(p);
	opos = p->pos;
	/* "&&" is not "&": a field followed by && has no operator */
	if (strncmp(p->text + opos, "&&", 2) != 0)
		for (i = 0; i < sizeof ops / sizeof ops[0]; i++)
			if (ringbuf_trace__faccept(p, ops[i].tok)) {
				op = ops[i].cmp;
				break;
			}
	if (op < 0) {
		if (!p->text[opos])
			return ringbuf_trace__ferr(p, opos, "expected an operator after '%s', found the end",
						   f->name);
		return ringbuf_trace__ferr(p, opos, "expected an operator after '%s'", f->name);
	}
	memset(&in, 0, sizeof in);
	in.cmp = (uint8_t)op;
	in.off = f->offset;
	ringbuf_trace__fskip(p);
	if (!p->text[p->pos])
		return ringbuf_trace__ferr(p, p->pos, "expected a value after the operator, found the end");
	if (f->kind == RINGBUF_TRACE_FIELD_INT) {
		uint64_t v = 0;
		if (op == RINGBUF_TRACE__FC_GLOB)
			return ringbuf_trace__ferr(p, opos, "'~' needs a string field; '%s' is an integer",
						   f->name);
		if (!ringbuf_trace__fnumber(p, f, &v))
			return false;
		in.op = RINGBUF_TRACE__FI_INT;
		in.width = (uint8_t)f->size;
		in.sgn = f->is_signed;
		if (in.width != 1 && in.width != 2 && in.width != 4 && in.width != 8)
			return ringbuf_trace__ferr(p, fpos, "field '%s' has an unsupported size %u", f->name,
						   (unsigned)f->size);
		/* signed: bias both sides by 2^63 (unsigned order = signed order);
		 * the & test takes the value cut to the field's width (as the
		 * kernel, which tests in the field's type) */
		in.bias = in.sgn && op != RINGBUF_TRACE__FC_AND ? (uint64_t)1 << 63 : 0;
		in.sext = in.sgn && in.width < 8 ? (uint64_t)1 << (8 * in.width - 1) : 0;
		in.val = v ^ in.bias;
		{
			static const uint8_t truth[] = {2, 5, 1, 3, 4, 6}; /* EQ NE LT LE GT GE */
			in.truth = op < RINGBUF_TRACE__FC_AND ? truth[op] : 0;
		}
		if (op == RINGBUF_TRACE__FC_AND && in.width < 8)
			in.val &= ((uint64_t)1 << (8 * in.width)) - 1;
	} else {
		if (op != RINGBUF_TRACE__FC_EQ && op != RINGBUF_TRACE__FC_NE && op != RINGBUF_TRACE__FC_GLOB)
			return ringbuf_trace__ferr(p, opos,
						   "string field '%s' takes only ==, != and ~", f->name);
		if (!ringbuf_trace__fstring(p, f, &in.arg))
			return false;
		in.op = f->kind == RINGBUF_TRACE_FIELD_CHARS ? RINGBUF_TRACE__FI_CHARS : RINGBUF_TRACE__FI_STR;
		in.size = f->size;
	}
	return ringbuf_trace__femit(p, &in, fpos);
}

static bool ringbuf_trace__for(struct ringbuf_trace__fparse *p);

static bool ringbuf_trace__fnot(struct ringbuf_trace__fparse *p)
{
	size_t pos;
	ringbuf_trace__fskip(p);
	pos = p->pos;
	if (p->text[pos] == '!' && p->text[pos + 1] != '=') {
		struct ringbuf_trace__finsn in;
		p->pos++;
		if (++p->depth > RINGBUF_TRACE__FDEPTH_MAX)
			return ringbuf_trace__ferr(p, pos, "nested more than %d deep", RINGBUF_TRACE__FDEPTH_MAX);
		if (!ringbuf_trace__fnot(p))
			return false;
		p->depth--;
		memset(&in, 0, sizeof in);
		in.op = RINGBUF_TRACE__FI_NOT;
		return ringbuf_trace__femit(p, &in, pos);
	}
	if (p->text[pos] == '(') {
		p->pos++;
		if (++p->depth > RINGBUF_TRACE__FDEPTH_MAX)
			return ringbuf_trace__ferr(p, pos, "nested more than %d deep", RINGBUF_TRACE__FDEPTH_MAX);
		if (!ringbuf_trace__for(p))
			return false;
		p->depth--;
		if (!ringbuf_trace__faccept(p, ")"))
			return ringbuf_trace__ferr(p, p->pos, "expected ')' to close the '(' at pos %d",
						   (int)pos);
		return true;
	}
	return ringbuf_trace__fpred(p);
}

/* chain := sub (tok sub)*, each tok a conditional jump to the chain's end */
static bool ringbuf_trace__fchain(struct ringbuf_trace__fparse *p, const char *tok, uint8_t jop,
				  bool (*sub)(struct ringbuf_trace__fparse *))
{
	uint32_t jumps[RINGBUF_TRACE__FINSN_MAX], nj = 0, i;
	if (!sub(p))
		return false;
	for (;;) {
		struct ringbuf_trace__finsn in;
		size_t pos;
		ringbuf_trace__fskip(p);
		pos = p->pos;
		if (!ringbuf_trace__faccept(p, tok))
			break;
		memset(&in, 0, sizeof in);
		in.op = jop;
		jumps[nj++] = p->n;
		if (!ringbuf_trace__femit(p, &in, pos) || !sub(p))
			return false;
	}
	for (i = 0; i < nj; i++)
		p->insn[jumps[i]].arg = p->n;
	return true;
}

static bool ringbuf_trace__fand(struct ringbuf_trace__fparse *p)
{
	return ringbuf_trace__fchain(p, "&&", RINGBUF_TRACE__FI_JF, ringbuf_trace__fnot);
}

static bool ringbuf_trace__for(struct ringbuf_trace__fparse *p)
{
	return ringbuf_trace__fchain(p, "||", RINGBUF_TRACE__FI_JT, ringbuf_trace__fand);
}

/* Text trimmed of blanks: [*b, *e). True when it clears ("", "0"). */
static bool ringbuf_trace__ftrim(const char *text, size_t *b, size_t *e)
{
	size_t n = text ? strlen(text) : 0, s = 0;
	while (s < n && strchr(" \t\r\n", text[s]))
		s++;
	while (n > s && strchr(" \t\r\n", text[n - 1]))
		n--;
	*b = s;
	*e = n;
	return n == s || (n - s == 1 && text[s] == '0');
}

/* Compile text for ev: a program (malloc) or NULL with err filled (*rc set). */
static struct ringbuf_trace__prog *ringbuf_trace__fcompile(const struct ringbuf_trace_event *ev,
							    const char *text,
							    struct ringbuf_trace_filter_error *err, int *rc)
{
	struct ringbuf_trace__fparse *p;
	struct ringbuf_trace__prog *prog;
	size_t b, e, sz;
	*rc = RINGBUF_EINVAL;
	if (err) {
		err->pos = -1;
		snprintf(err->event, sizeof err->event, "%s", ev->name);
		err->msg[0] = 0;
	}
	ringbuf_trace__ftrim(text, &b, &e);
	if (e - b > RINGBUF_TRACE__FTEXT_MAX) {
		if (err) {
			err->pos = RINGBUF_TRACE__FTEXT_MAX;
			snprintf(err->msg, sizeof err->msg, "pos %d: filter longer than %d bytes",
				 RINGBUF_TRACE__FTEXT_MAX, RINGBUF_TRACE__FTEXT_MAX);
		}
		return NULL;
	}
	p = (struct ringbuf_trace__fparse *)calloc(1, sizeof *p);
	if (!p) {
		*rc = RINGBUF_ENOMEM;
		return NULL;
	}
	p->ev = ev;
	p->text = text;
	p->pos = b;
	p->err = err;
	if (b == e) {
		ringbuf_trace__ferr(p, b, "empty filter");
	} else if (ringbuf_trace__for(p)) {
		ringbuf_trace__fskip(p);
		if (p->pos < e) {
			if (p->text[p->pos] == ')')
				ringbuf_trace__ferr(p, p->pos, "unbalanced ')'");
			else
				ringbuf_trace__ferr(p, p->pos, "expected && or || or the end, found '%c'",
						    p->text[p->pos]);
		}
	}
	if (p->failed) {
		free(p);
		return NULL;
	}
	sz = sizeof *prog + p->n * sizeof(struct ringbuf_trace__finsn);
	prog = (struct ringbuf_trace__prog *)malloc(sz + (e - b + 1) + p->pool_len);
	if (!prog) {
		free(p);
		*rc = RINGBUF_ENOMEM;
		return NULL;
	}
	prog->next = NULL;
	prog->n = p->n;
	prog->one_int = p->n == 1 && p->insn[0].op == RINGBUF_TRACE__FI_INT;
	prog->has_filter = 1;
	prog->ntrig = 0;
	prog->trig = NULL;
	memcpy(prog->insn, p->insn, p->n * sizeof(struct ringbuf_trace__finsn));
	prog->text = (char *)prog + sz;
	memcpy(prog->text, text + b, e - b);
	prog->text[e - b] = 0;
	prog->pool = prog->text + (e - b + 1);
	memcpy(prog->pool, p->pool, p->pool_len);
	free(p);
	*rc = 0;
	return prog;
}

/* ---- >>filter: evaluation (async-signal-safe) ------------------------------ */

/* The field zero-extended; sign extension is (v ^ sext) - sext. */
static inline uint64_t ringbuf_trace__fload(const unsigned char *q, unsigned width)
{
	uint16_t u16;
	uint32_t u32;
	uint64_t v;
	switch (width) {
	case 1:
		return *q;
	case 2:
		memcpy(&u16, q, 2);
		return u16;
	case 4:
		memcpy(&u32, q, 4);
		return u32;
	default:
		memcpy(&v, q, 8);
		return v;
	}
}

static inline bool ringbuf_trace__fint(const struct ringbuf_trace__finsn *in, const unsigned char *r)
{
	uint64_t v = ((ringbuf_trace__fload(r + in->off, in->width) ^ in->sext) - in->sext) ^ in->bias;
	if (RINGBUF__UNLIKELY(in->cmp == RINGBUF_TRACE__FC_AND))
		return (v & in->val) != 0;
	/* no jump on the operator: the outcome (<, ==, >) picks a bit of truth */
	return (in->truth >> ((unsigned)(v > in->val) * 2u + (unsigned)(v == in->val))) & 1u;
}

static bool ringbuf_trace__fstr_match(uint8_t cmp, const char *s, const char *k)
{
	if (cmp == RINGBUF_TRACE__FC_GLOB)
		return ringbuf_trace_glob_match(k, s);
	return (strcmp(s, k) == 0) == (cmp == RINGBUF_TRACE__FC_EQ);
}

/* A char array field against a string (out of line: its copy buffer stays
 * off the interpreter's frame). */
static __attribute__((noinline)) bool ringbuf_trace__fchars(const struct ringbuf_trace__finsn *in,
							    const unsigned char *r, const char *pool)
{
	/* the emitter zero-fills: the array holds a NUL unless it is 0 bytes
	 * long; copied to be safe with any record */
	char tmp[RINGBUF_TRACE_STR_MAX + 1];
	size_t n = in->size < RINGBUF_TRACE_STR_MAX ? in->size : RINGBUF_TRACE_STR_MAX, k;
	const char *src = (const char *)r + in->off;
	for (k = 0; k < n && src[k]; k++)
		tmp[k] = src[k];
	tmp[k] = 0;
	return ringbuf_trace__fstr_match(in->cmp, tmp, pool + in->arg);
}

static __attribute__((noinline)) bool ringbuf_trace__frun(const struct ringbuf_trace__prog *prog,
							  const void *rec, size_t len)
{
	const unsigned char *r = (const unsigned char *)rec;
	const struct ringbuf_trace__finsn *in = prog->insn, *end = prog->insn + prog->n;
	bool acc = false;
	while (in < end) {
		switch (in->op) {
		case RINGBUF_TRACE__FI_INT:
			acc = ringbuf_trace__fint(in, r);
			in++;
			break;
		case RINGBUF_TRACE__FI_CHARS:
			acc = ringbuf_trace__fchars(in, r, prog->pool);
			in++;
			break;
		case RINGBUF_TRACE__FI_STR: {
			uint32_t loc;
			memcpy(&loc, r + in->off, 4);
			acc = ringbuf_trace__fstr_match(in->cmp, ringbuf_trace__get_str(rec, len, loc),
							prog->pool + in->arg);
			in++;
			break;
		}
		case RINGBUF_TRACE__FI_JT:
			in = acc ? prog->insn + in->arg : in + 1;
			break;
		case RINGBUF_TRACE__FI_JF:
			in = acc ? in + 1 : prog->insn + in->arg;
			break;
		default:
			acc = !acc;
			in++;
			break;
		}
	}
	return acc;
}

/* ---- >>filter: the writers' slots and the grace period (>>design) --------- */

#ifndef RINGBUF_TRACE_FILTER_SLOTS
#define RINGBUF_TRACE_FILTER_SLOTS 256
#endif
#define RINGBUF_TRACE__FDEPTH 0xffu
#define RINGBUF_TRACE__FGEN 0x100u

struct ringbuf_trace__fslot {
	_Atomic(uint32_t) word;  /* depth | generation << 8 (>>design F1/F5) */
	_Atomic(int32_t) owner;  /* thread id, 0: free */
	char pad[56];
};
static struct ringbuf_trace__fslot ringbuf_trace__fslots[RINGBUF_TRACE_FILTER_SLOTS];
static _Atomic(uint32_t) ringbuf_trace__fslots_used; /* high-water mark: S3 scans below it */
static _Atomic(uint32_t) ringbuf_trace__fshared;     /* the full table's fallback: depth */
static struct ringbuf_trace__prog *ringbuf_trace__fkept; /* never freed (>>design fallbacks) */
static int ringbuf_trace__fmb; /* membarrier: 0 not tried, 1 registered, -1 unusable */
#ifdef RINGBUF_TESTING
static _Atomic(int) ringbuf_trace__fno_mb; /* tests: behave as without membarrier */
static _Atomic(uint32_t) ringbuf_trace__fkept_count;
#endif

static bool ringbuf_trace__fslot_take(uint32_t i, int32_t tid)
{
	int32_t zero = 0;
	uint32_t used;
	if (!atomic_compare_exchange_strong_explicit(&ringbuf_trace__fslots[i].owner, &zero, tid,
						     memory_order_acq_rel, memory_order_relaxed))
		return false;
	used = atomic_load_explicit(&ringbuf_trace__fslots_used, memory_order_relaxed);
	while (used < i + 1 &&
	       !atomic_compare_exchange_weak_explicit(&ringbuf_trace__fslots_used, &used, i + 1,
						      memory_order_release, memory_order_relaxed))
		;
	return true;
}

/* The calling thread's slot (claimed on first use), NULL: table full. */
static __attribute__((noinline)) struct ringbuf_trace__fslot *ringbuf_trace__fslot_claim(void)
{
	struct ringbuf_trace__self *s = &ringbuf_trace__self;
	int32_t tid = ringbuf_trace_thread_id();
	int saved = errno;
	uint32_t i, got = RINGBUF_TRACE_FILTER_SLOTS;
	for (i = 0; i < RINGBUF_TRACE_FILTER_SLOTS && got == RINGBUF_TRACE_FILTER_SLOTS; i++)
		if (atomic_load_explicit(&ringbuf_trace__fslots[i].owner, memory_order_relaxed) == 0 &&
		    ringbuf_trace__fslot_take(i, tid))
			got = i;
	/* full: take over the slot of a thread that is gone */
	for (i = 0; i < RINGBUF_TRACE_FILTER_SLOTS && got == RINGBUF_TRACE_FILTER_SLOTS; i++) {
		int32_t o = atomic_load_explicit(&ringbuf_trace__fslots[i].owner, memory_order_relaxed);
		if (o == tid || o == 0)
			continue;
		if (syscall(SYS_tgkill, (long)getpid(), (long)o, 0L) == -1 && errno == ESRCH &&
		    atomic_compare_exchange_strong(&ringbuf_trace__fslots[i].owner, &o, tid)) {
			/* a section its thread left unfinished ends here. Acquire:
			 * pairs with the dead thread's last [F5] release, so that its
			 * reads of programs happen before our release store below
			 * and, through S3's acquire of it, before their free (a
			 * relaxed load broke that chain: ThreadSanitizer reported the
			 * dead thread's read of a trigger's program racing the free) */
			uint32_t w = atomic_load_explicit(&ringbuf_trace__fslots[i].word, memory_order_acquire);
			atomic_store_explicit(&ringbuf_trace__fslots[i].word,
					      (w & ~RINGBUF_TRACE__FDEPTH) + RINGBUF_TRACE__FGEN,
					      memory_order_release);
			got = i;
		}
	}
	errno = saved;
	if (got == RINGBUF_TRACE_FILTER_SLOTS) {
		if (s->fslot == NULL)
			s->fslot = (void *)1; /* do not scan again at every event */
		return NULL;
	}
	/* a signal handler may have claimed one for this thread meanwhile */
	atomic_signal_fence(memory_order_seq_cst);
	if ((uintptr_t)s->fslot < 2) {
		s->fslot = &ringbuf_trace__fslots[got];
	} else {
		atomic_store_explicit(&ringbuf_trace__fslots[got].owner, 0, memory_order_release);
		return (struct ringbuf_trace__fslot *)s->fslot;
	}
	return &ringbuf_trace__fslots[got];
}

/* [F5] leave: the outermost section moves the generation on; release pairs
 * with S3's acquire. */
static inline __attribute__((always_inline)) void ringbuf_trace__fleave(struct ringbuf_trace__fslot *s,
									 uint32_t w)
{
	atomic_store_explicit(&s->word,
			      (w & RINGBUF_TRACE__FDEPTH) ? w
							  : (w & ~RINGBUF_TRACE__FDEPTH) + RINGBUF_TRACE__FGEN,
			      memory_order_release);
}

/* [F4]-[F5] for a program that needs the interpreter (kept out of the fast
 * path's frame: a tail call). */
static void ringbuf_trace__set_state(struct ringbuf_trace_event *e, bool on);

/* The triggers of p whose condition holds on the record (all of them, kept or
 * not, as in the kernel); a count is taken with a CAS, so a trigger with count
 * N fires exactly N times whatever the nesting. */
static void ringbuf_trace__ffire(struct ringbuf *rb, const struct ringbuf_trace__prog *p, const void *rec,
				 size_t len, struct ringbuf_trace__post *post)
{
	uint32_t i;
	for (i = 0; i < p->ntrig; i++) {
		struct ringbuf_trace__trig *t = &p->trig[i];
		int64_t c = atomic_load_explicit(&t->count, memory_order_relaxed);
		if (c == 0 || (t->cond && !ringbuf_trace__frun(t->cond, rec, len)))
			continue;
		while (c > 0 && !atomic_compare_exchange_weak_explicit(&t->count, &c, c - 1,
								       memory_order_relaxed,
								       memory_order_relaxed))
			;
		if (c == 0)
			continue;
		switch (t->action) {
		case RINGBUF_TRACE__T_TRACEOFF: ringbuf_record_off(rb); break;
		case RINGBUF_TRACE__T_TRACEON: ringbuf_record_on(rb); break;
		case RINGBUF_TRACE__T_ENABLE: ringbuf_trace__set_state(t->target, true); break;
		case RINGBUF_TRACE__T_DISABLE: ringbuf_trace__set_state(t->target, false); break;
		case RINGBUF_TRACE__T_SNAPSHOT: post->snap = t->snap; break;
		default: post->stack = 1; break;
		}
	}
}

static int ringbuf_trace__stack_write(struct ringbuf *rb, unsigned cpu, uintptr_t first,
				      void *frame, unsigned skip);

/* [F6'] post-commit triggers fired in the section (values copied out of the
 * program, which may be freed once the section ended): the record is
 * committed (or discarded) here, then the stack event and the snapshot.
 * first/frame: where the stack starts (the emitter's caller). Returns
 * RINGBUF_TRACE__F_DONE | keep. */
static __attribute__((noinline)) int ringbuf_trace__fpost(struct ringbuf *rb, unsigned cpu, void *rec,
							  bool keep, const struct ringbuf_trace__post *post,
							  uintptr_t first, void *frame)
{
	if (keep)
		ringbuf_commit(rb, cpu, rec);
	else
		ringbuf_discard(rb, cpu, rec);
	if (post->stack)
		(void)ringbuf_trace__stack_write(rb, cpu, first, frame, 0);
	if (post->snap)
		(void)ringbuf_trace_snapshot(post->snap);
	return RINGBUF_TRACE__F_DONE | (keep ? 1 : 0);
}

/* [F4]-[F5] for a program that needs the interpreter or has triggers (kept
 * out of the fast path's frame: a tail call, so that its return address and
 * frame are the emitter's caller's where the compiler makes it one). */
static __attribute__((noinline)) int ringbuf_trace__fsection_run(struct ringbuf_trace__fslot *s,
								 uint64_t cpu_w, struct ringbuf *rb,
								 const struct ringbuf_trace__prog *p,
								 void *rec, size_t len)
{
	/* cpu << 32 | w: six arguments, so that x86-64 can make the call a
	 * tail call (the stack then starts at the emitter's caller) */
	const unsigned cpu = (unsigned)(cpu_w >> 32);
	const uint32_t w = (uint32_t)cpu_w;
	struct ringbuf_trace__post post = {NULL, 0};
	bool keep = !p || !p->has_filter || ringbuf_trace__frun(p, rec, len);
	if (p && p->ntrig)
		ringbuf_trace__ffire(rb, p, rec, len, &post);
	ringbuf_trace__fleave(s, w); /* [F5] */
	if (RINGBUF__LIKELY(!post.stack && !post.snap))
		return keep ? 1 : 0;
	return ringbuf_trace__fpost(rb, cpu, rec, keep, &post, (uintptr_t)__builtin_return_address(0),
				    __builtin_frame_address(0));
}

/* [F1]-[F5] on slot s (the per-thread one, or claimed just now). */
static inline __attribute__((always_inline)) int
ringbuf_trace__fsection(struct ringbuf_trace__fslot *s, struct ringbuf *rb, unsigned cpu,
			struct ringbuf_trace_event *ev, void *rec, size_t len)
{
	struct ringbuf_trace__prog *p;
	bool keep;
	/* [F1] enter */
	uint32_t w = atomic_load_explicit(&s->word, memory_order_relaxed);
	atomic_store_explicit(&s->word, w + 1, memory_order_relaxed);
	/* [F2] the light side of S2's membarrier */
	atomic_signal_fence(memory_order_seq_cst);
	/* [F3] pairs with S1's exchange (release) */
	p = atomic_load_explicit(&ev->filter, memory_order_acquire);
	/* [F4] */
	if (RINGBUF__UNLIKELY(!p || !p->one_int))
		return ringbuf_trace__fsection_run(s, (uint64_t)cpu << 32 | w, rb, p, rec, len);
	keep = ringbuf_trace__fint(&p->insn[0], (const unsigned char *)rec); /* `field > N` */
	ringbuf_trace__fleave(s, w); /* [F5] */
	return keep ? 1 : 0;
}

/* The thread has no slot yet: claim one, or use the shared word. */
static __attribute__((noinline)) int ringbuf_trace__fkeep_slow(struct ringbuf *rb, unsigned cpu,
							       struct ringbuf_trace_event *ev,
							       void *rec, size_t len)
{
	struct ringbuf_trace__fslot *s = NULL;
	struct ringbuf_trace__prog *p;
	struct ringbuf_trace__post post = {NULL, 0};
	bool keep;
	/* no slot yet, or none was free: claim (again every 4096 events) */
	if (ringbuf_trace__self.fslot == NULL || (++ringbuf_trace__self.fretry & 4095u) == 0)
		s = ringbuf_trace__fslot_claim();
	if (s)
		return ringbuf_trace__fsection(s, rb, cpu, ev, rec, len);
	/* table full: a shared counter, RMWs (full barriers themselves) */
	atomic_fetch_add_explicit(&ringbuf_trace__fshared, 1, memory_order_seq_cst);
	p = atomic_load_explicit(&ev->filter, memory_order_seq_cst);
	keep = !p || !p->has_filter || ringbuf_trace__frun(p, rec, len);
	if (p && p->ntrig)
		ringbuf_trace__ffire(rb, p, rec, len, &post);
	atomic_fetch_sub_explicit(&ringbuf_trace__fshared, 1, memory_order_release);
	if (RINGBUF__LIKELY(!post.stack && !post.snap))
		return keep ? 1 : 0;
	return ringbuf_trace__fpost(rb, cpu, rec, keep, &post, (uintptr_t)__builtin_return_address(0),
				    __builtin_frame_address(0));
}

/* The evaluator that ringbuf_trace_event.h's ringbuf_trace__filter_keep()
 * calls (>>events: the filter layer's entry, installed by the setters). */
static int ringbuf_trace__filter_keep_prog(struct ringbuf *rb, unsigned cpu, struct ringbuf_trace_event *ev,
					   void *rec, size_t len)
{
	struct ringbuf_trace__fslot *s = (struct ringbuf_trace__fslot *)ringbuf_trace__self.fslot;
	if (RINGBUF__UNLIKELY((uintptr_t)s < 2)) /* NULL or (void *)1 */
		return ringbuf_trace__fkeep_slow(rb, cpu, ev, rec, len);
	return ringbuf_trace__fsection(s, rb, cpu, ev, rec, len);
	/* [F6] the emitter commits or discards (unless F6' did) */
}

/* [S2] false when membarrier cannot be had. */
static bool ringbuf_trace__fbarrier(void)
{
#ifdef RINGBUF_TESTING
	if (atomic_load(&ringbuf_trace__fno_mb))
		return false;
#endif
#if defined(__linux__) && defined(SYS_membarrier)
	if (ringbuf_trace__fmb == 0)
		ringbuf_trace__fmb =
			syscall(SYS_membarrier, 16 /* REGISTER_PRIVATE_EXPEDITED */, 0, 0) == 0 ? 1 : -1;
	return ringbuf_trace__fmb > 0 && syscall(SYS_membarrier, 8 /* PRIVATE_EXPEDITED */, 0, 0) == 0;
#else
	return false;
#endif
}

/* [S3] wait until no writer can hold a program unpublished before [S2]; false
 * after about a second of waiting on some slot. */
static bool ringbuf_trace__fdrain(void)
{
	uint32_t i, used = atomic_load_explicit(&ringbuf_trace__fslots_used, memory_order_acquire);
	long tries;
	for (i = 0; i < used; i++) {
		uint32_t w0 = atomic_load_explicit(&ringbuf_trace__fslots[i].word, memory_order_acquire);
		for (tries = 0; w0 & RINGBUF_TRACE__FDEPTH; tries++) {
			uint32_t w = atomic_load_explicit(&ringbuf_trace__fslots[i].word, memory_order_acquire);
			if (!(w & RINGBUF_TRACE__FDEPTH) ||
			    (w & ~RINGBUF_TRACE__FDEPTH) != (w0 & ~RINGBUF_TRACE__FDEPTH))
				break;
			if (tries > 1000 + 1000)
				return false;
			if (tries < 1000) {
				sched_yield();
			} else {
				ringbuf__sleep_ms(1); /* ringbuf.h's (nanosleep is hidden under strict C11) */
			}
		}
	}
	for (tries = 0; atomic_load_explicit(&ringbuf_trace__fshared, memory_order_acquire) != 0; tries++) {
		if (tries > 1000)
			return false;
		ringbuf__sleep_ms(1);
	}
	return true;
}

static void ringbuf_trace__fprog_free(struct ringbuf_trace__prog *p)
{
	uint32_t i;
	if (!p)
		return;
	for (i = 0; i < p->ntrig; i++)
		free(p->trig[i].cond);
	free(p->trig);
	free(p);
}

/* [S2]-[S4] for a list of replaced programs (linked through next). */
static void ringbuf_trace__fretire(struct ringbuf_trace__prog *old)
{
	struct ringbuf_trace__prog *p;
	if (!old)
		return;
	if (ringbuf_trace__fbarrier() && ringbuf_trace__fdrain()) {
		while (old) { /* [S4] */
			p = old->next;
			ringbuf_trace__fprog_free(old);
			old = p;
		}
		return;
	}
	while (old) {
		p = old->next;
		old->next = ringbuf_trace__fkept;
		ringbuf_trace__fkept = old;
#ifdef RINGBUF_TESTING
		atomic_fetch_add(&ringbuf_trace__fkept_count, 1);
#endif
		old = p;
	}
}

#ifdef RINGBUF_TESTING
RINGBUF_API void ringbuf_trace__filter_testing(int no_membarrier, unsigned *kept)
{
	atomic_store(&ringbuf_trace__fno_mb, no_membarrier);
	if (kept)
		*kept = atomic_load(&ringbuf_trace__fkept_count);
}
#endif

/* ---- >>filter: setting ------------------------------------------------------ */

/* A trigger as set: what a program's trigger is built from. */
struct ringbuf_trace__tspec {
	uint32_t action;
	int64_t count;
	struct ringbuf_trace_event *target;
	struct ringbuf_trace_snapshot *snap;
	const char *cond;  /* its `if` text (NULL: none) */
	size_t cond_off;   /* where cond starts in the text given (error positions) */
};

static void ringbuf_trace__ferr_shift(struct ringbuf_trace_filter_error *err, size_t off)
{
	const char *rest;
	char tmp[sizeof err->msg];
	if (!err || err->pos < 0 || !off)
		return;
	rest = strstr(err->msg, ": ");
	err->pos += (int)off;
	snprintf(tmp, sizeof tmp, "pos %d: %.140s", err->pos, rest ? rest + 2 : err->msg);
	memcpy(err->msg, tmp, sizeof tmp);
}

/* [S0] A program for ev: filter (NULL: none) and triggers; NULL with *rc 0
 * when there is nothing to attach. */
static struct ringbuf_trace__prog *ringbuf_trace__fassemble(const struct ringbuf_trace_event *ev,
							     const char *filter,
							     const struct ringbuf_trace__tspec *ts,
							     uint32_t nts,
							     struct ringbuf_trace_filter_error *err,
							     int *rc)
{
	struct ringbuf_trace__prog *p;
	uint32_t i;
	*rc = 0;
	if (filter) {
		p = ringbuf_trace__fcompile(ev, filter, err, rc);
		if (!p)
			return NULL;
	} else {
		if (!nts)
			return NULL;
		p = (struct ringbuf_trace__prog *)calloc(1, sizeof *p);
		if (!p) {
			*rc = RINGBUF_ENOMEM;
			return NULL;
		}
	}
	if (!nts)
		return p;
	p->one_int = 0;
	p->trig = (struct ringbuf_trace__trig *)calloc(nts, sizeof *p->trig);
	if (!p->trig) {
		ringbuf_trace__fprog_free(p);
		*rc = RINGBUF_ENOMEM;
		return NULL;
	}
	for (i = 0; i < nts; i++) {
		struct ringbuf_trace__trig *t = &p->trig[i];
		t->action = ts[i].action;
		atomic_init(&t->count, ts[i].count);
		t->target = ts[i].target;
		t->snap = ts[i].snap;
		p->ntrig = i + 1;
		if (ts[i].cond && !(t->cond = ringbuf_trace__fcompile(ev, ts[i].cond, err, rc))) {
			ringbuf_trace__ferr_shift(err, ts[i].cond_off);
			ringbuf_trace__fprog_free(p);
			return NULL;
		}
	}
	return p;
}

/* The triggers of cur as specs (their conditions' texts stay cur's). */
static uint32_t ringbuf_trace__fspecs(const struct ringbuf_trace__prog *cur,
				      struct ringbuf_trace__tspec *ts)
{
	uint32_t i, n = cur ? cur->ntrig : 0;
	for (i = 0; i < n; i++) {
		ts[i].action = cur->trig[i].action;
		ts[i].count = atomic_load(&cur->trig[i].count);
		ts[i].target = cur->trig[i].target;
		ts[i].snap = cur->trig[i].snap;
		ts[i].cond = cur->trig[i].cond ? cur->trig[i].cond->text : NULL;
		ts[i].cond_off = 0;
	}
	return n;
}

/* Builds the new program of e from its current one; *skip: leave e alone. */
typedef struct ringbuf_trace__prog *(*ringbuf_trace__fbuild_fn)(
	struct ringbuf_trace_event *e, const struct ringbuf_trace__prog *cur, const void *ctx,
	struct ringbuf_trace_filter_error *err, int *rc, bool *skip);

/* The setters' common part: S0 for every matched event, then S1-S4. */
static int ringbuf_trace__freplace(struct ringbuf_trace_registry *reg, const char *glob,
				   ringbuf_trace__fbuild_fn build, const void *ctx,
				   struct ringbuf_trace_filter_error *err)
{
	struct ringbuf_trace_event *e;
	struct ringbuf_trace__prog **progs = NULL, *old = NULL;
	bool *skips = NULL;
	size_t n = 0, i, changed = 0;
	int rc = 0;
	pthread_mutex_lock(&ringbuf_trace__fmutex); /* one setter: S3's waits, the kept list */
	ringbuf_trace__lock(reg);
	for (e = ringbuf_trace__first(reg); e; e = e->next)
		if (ringbuf_trace__matches(reg, e, glob))
			n++;
	if (n) {
		progs = (struct ringbuf_trace__prog **)calloc(n, sizeof *progs);
		skips = (bool *)calloc(n, sizeof *skips);
		if (!progs || !skips)
			rc = RINGBUF_ENOMEM;
		/* [S0] compile everything before publishing anything */
		for (e = ringbuf_trace__first(reg), i = 0; e && rc == 0; e = e->next)
			if (ringbuf_trace__matches(reg, e, glob)) {
				progs[i] = build(e, atomic_load(&e->filter), ctx, err, &rc, &skips[i]);
				i++;
			}
		if (rc != 0) {
			for (i = 0; progs && i < n; i++)
				ringbuf_trace__fprog_free(progs[i]);
			free(progs);
			free(skips);
			ringbuf_trace__unlock(reg);
			pthread_mutex_unlock(&ringbuf_trace__fmutex);
			return rc;
		}
		/* membarrier is registered before a program is published (S2 then
		 * covers every thread) */
		(void)ringbuf_trace__fbarrier();
	}
	/* [S1] (first the evaluator's entry, seq_cst, before any exchange:
	 * ringbuf_trace_event.h >>events: the filter layer's entry) */
	{
		ringbuf_trace__keep_fn keep_fn = &ringbuf_trace__filter_keep_prog;
		atomic_store(&ringbuf_trace__keep_entry, keep_fn);
	}
	for (e = ringbuf_trace__first(reg), i = 0; e && n; e = e->next) {
		struct ringbuf_trace__prog *op;
		if (!ringbuf_trace__matches(reg, e, glob))
			continue;
		if (skips[i]) {
			i++;
			continue;
		}
		op = atomic_exchange_explicit(&e->filter, progs[i++], memory_order_seq_cst);
		ringbuf_trace__refresh_state(e);
		changed++;
		if (op) {
			op->next = old;
			old = op;
		}
	}
	free(progs);
	free(skips);
	ringbuf_trace__unlock(reg);
	ringbuf_trace__fretire(old); /* [S2]-[S4] */
	pthread_mutex_unlock(&ringbuf_trace__fmutex);
	return (int)changed;
}

static void ringbuf_trace__ferr_clear(struct ringbuf_trace_filter_error *err)
{
	if (err) {
		err->pos = -1;
		err->event[0] = 0;
		err->msg[0] = 0;
	}
}

static struct ringbuf_trace__prog *ringbuf_trace__fbuild_filter(struct ringbuf_trace_event *e,
								 const struct ringbuf_trace__prog *cur,
								 const void *ctx,
								 struct ringbuf_trace_filter_error *err,
								 int *rc, bool *skip)
{
	struct ringbuf_trace__tspec ts[RINGBUF_TRACE__TRIG_MAX];
	uint32_t nts = ringbuf_trace__fspecs(cur, ts);
	*skip = false;
	return ringbuf_trace__fassemble(e, (const char *)ctx, ts, nts, err, rc);
}

RINGBUF_API int ringbuf_trace_set_filter(struct ringbuf_trace_registry *reg, const char *glob,
					 const char *filter, struct ringbuf_trace_filter_error *err)
{
	size_t b, end;
	ringbuf_trace__ferr_clear(err);
	if (!reg || !glob) {
		if (err)
			snprintf(err->msg, sizeof err->msg, "no registry or no event glob");
		return RINGBUF_EINVAL;
	}
	if (ringbuf_trace__ftrim(filter, &b, &end))
		filter = NULL; /* clears */
	return ringbuf_trace__freplace(reg, glob, ringbuf_trace__fbuild_filter, filter, err);
}

RINGBUF_API int ringbuf_trace_get_filter(const struct ringbuf_trace_event *ev, char *buf, size_t size)
{
	struct ringbuf_trace__prog *p;
	int r;
	if (!ev) {
		if (buf && size)
			buf[0] = 0;
		return RINGBUF_EINVAL;
	}
	/* setters free programs under this mutex: the text stays while we copy */
	pthread_mutex_lock(&ringbuf_trace__fmutex);
	p = atomic_load_explicit(&((struct ringbuf_trace_event *)ev)->filter, memory_order_acquire);
	r = snprintf(buf, buf ? size : 0, "%s", p && p->has_filter ? p->text : "none");
	pthread_mutex_unlock(&ringbuf_trace__fmutex);
	return r;
}

/* ---- >>filter: triggers -------------------------------------------------- */

static const char *const ringbuf_trace__tnames[] = {"traceoff", "traceon", "enable_event",
						    "disable_event", "snapshot", "stacktrace"};

struct ringbuf_trace__tparse {
	struct ringbuf_trace__tspec spec;
	bool remove;
};

static int ringbuf_trace__terr(struct ringbuf_trace_filter_error *err, size_t pos, const char *msg,
			       const char *arg)
{
	if (err) {
		err->pos = (int)pos;
		snprintf(err->msg, sizeof err->msg, "pos %d: %.60s%s%.64s%s", (int)pos, msg, arg ? " '" : "",
			 arg ? arg : "", arg ? "'" : "");
	}
	return RINGBUF_EINVAL;
}

/* [!]action[:count] [if filter]; action: traceoff, traceon,
 * enable_event:[system:]event, disable_event:[system:]event. */
static int ringbuf_trace__tparse_text(struct ringbuf_trace_registry *reg, const char *text,
				      struct ringbuf_trace__tparse *tp,
				      struct ringbuf_trace_filter_error *err)
{
	size_t pos = 0, n, k;
	const char *sys = reg->system ? reg->system : "ringbuf";
	memset(tp, 0, sizeof *tp);
	tp->spec.count = -1;
	while (text[pos] == ' ' || text[pos] == '\t')
		pos++;
	if (text[pos] == '!') {
		tp->remove = true;
		pos++;
	}
	for (n = 0; (text[pos + n] >= 'a' && text[pos + n] <= 'z') || text[pos + n] == '_'; n++)
		;
	for (k = 0; k < RINGBUF_TRACE__T_COUNT; k++)
		if (strlen(ringbuf_trace__tnames[k]) == n && !strncmp(text + pos, ringbuf_trace__tnames[k], n))
			break;
	if (k == RINGBUF_TRACE__T_COUNT)
		return ringbuf_trace__terr(err, pos, n ? "unknown trigger" : "expected a trigger", NULL);
	tp->spec.action = (uint32_t)k;
	if (k == RINGBUF_TRACE__T_SNAPSHOT && !tp->remove) {
		tp->spec.snap = reg->snapshot;
		if (!tp->spec.snap)
			return ringbuf_trace__terr(err, pos,
						   "no snapshot attached (ringbuf_trace_snapshot_attach)", NULL);
	}
	pos += n;
	if (k == RINGBUF_TRACE__T_ENABLE || k == RINGBUF_TRACE__T_DISABLE) {
		char name[2][128];
		int nn = 0;
		size_t at = pos;
		while (nn < 2 && text[pos] == ':' && ringbuf_trace__fident_char(text[pos + 1]) &&
		       !(text[pos + 1] >= '0' && text[pos + 1] <= '9' && nn > 0)) {
			size_t m = 0;
			pos++;
			while (ringbuf_trace__fident_char(text[pos + m]))
				m++;
			if (m >= sizeof name[0])
				return ringbuf_trace__terr(err, pos, "name too long", NULL);
			memcpy(name[nn], text + pos, m);
			name[nn][m] = 0;
			nn++;
			pos += m;
		}
		if (nn == 0)
			return ringbuf_trace__terr(err, pos, "expected :system:event after", ringbuf_trace__tnames[k]);
		if (nn == 2 && strcmp(name[0], sys) != 0)
			return ringbuf_trace__terr(err, at + 1, "unknown system", name[0]);
		tp->spec.target = ringbuf_trace_find(reg, name[nn - 1]);
		if (!tp->spec.target)
			return ringbuf_trace__terr(err, pos - strlen(name[nn - 1]), "unknown event",
						   name[nn - 1]);
	}
	if (text[pos] == ':') {
		uint64_t c = 0;
		size_t d = 0;
		pos++;
		while (text[pos + d] >= '0' && text[pos + d] <= '9') {
			if (c > (uint64_t)INT64_MAX / 10)
				return ringbuf_trace__terr(err, pos, "count out of range", NULL);
			c = c * 10 + (uint64_t)(text[pos + d] - '0');
			d++;
		}
		if (d == 0 || c == 0 || c > (uint64_t)INT64_MAX)
			return ringbuf_trace__terr(err, pos, "expected a count (1 or more)", NULL);
		tp->spec.count = (int64_t)c;
		pos += d;
	}
	if (text[pos] && text[pos] != ' ' && text[pos] != '\t')
		return ringbuf_trace__terr(err, pos, "expected ' if ' or the end", NULL);
	while (text[pos] == ' ' || text[pos] == '\t')
		pos++;
	if (!text[pos])
		return 0;
	if (strncmp(text + pos, "if", 2) != 0 || (text[pos + 2] != ' ' && text[pos + 2] != '\t'))
		return ringbuf_trace__terr(err, pos, "expected 'if' or the end", NULL);
	tp->spec.cond = text + pos + 3;
	tp->spec.cond_off = pos + 3;
	return 0;
}

static struct ringbuf_trace__prog *ringbuf_trace__fbuild_trigger(struct ringbuf_trace_event *e,
								  const struct ringbuf_trace__prog *cur,
								  const void *ctx,
								  struct ringbuf_trace_filter_error *err,
								  int *rc, bool *skip)
{
	const struct ringbuf_trace__tparse *tp = (const struct ringbuf_trace__tparse *)ctx;
	struct ringbuf_trace__tspec ts[RINGBUF_TRACE__TRIG_MAX + 1];
	uint32_t nts = ringbuf_trace__fspecs(cur, ts), i, m = 0;
	bool found = false;
	/* the same action (and target) is replaced, or removed */
	for (i = 0; i < nts; i++) {
		if (ts[i].action == tp->spec.action && ts[i].target == tp->spec.target) {
			found = true;
			continue;
		}
		ts[m++] = ts[i];
	}
	*skip = false;
	if (tp->remove && !found) {
		*skip = true;
		*rc = 0;
		return NULL;
	}
	if (!tp->remove) {
		if (m >= RINGBUF_TRACE__TRIG_MAX) {
			*rc = ringbuf_trace__terr(err, 0, "too many triggers on the event", NULL);
			if (err)
				snprintf(err->event, sizeof err->event, "%s", e->name);
			return NULL;
		}
		ts[m++] = tp->spec;
	}
	return ringbuf_trace__fassemble(e, cur && cur->has_filter ? cur->text : NULL, ts, m, err, rc);
}

RINGBUF_API int ringbuf_trace_set_trigger(struct ringbuf_trace_registry *reg, const char *glob,
					  const char *trigger, struct ringbuf_trace_filter_error *err)
{
	struct ringbuf_trace__tparse tp;
	int rc;
	ringbuf_trace__ferr_clear(err);
	if (!reg || !glob || !trigger) {
		if (err)
			snprintf(err->msg, sizeof err->msg, "no registry, event glob or trigger");
		return RINGBUF_EINVAL;
	}
	if (strlen(trigger) > RINGBUF_TRACE__FTEXT_MAX)
		return ringbuf_trace__terr(err, RINGBUF_TRACE__FTEXT_MAX, "trigger too long", NULL);
	rc = ringbuf_trace__tparse_text(reg, trigger, &tp, err);
	if (rc < 0)
		return rc;
	return ringbuf_trace__freplace(reg, glob, ringbuf_trace__fbuild_trigger, &tp, err);
}

RINGBUF_API int ringbuf_trace_get_triggers(const struct ringbuf_trace_event *ev, char *buf, size_t size)
{
	struct ringbuf_trace__prog *p;
	size_t len = 0;
	uint32_t i;
	if (!ev) {
		if (buf && size)
			buf[0] = 0;
		return RINGBUF_EINVAL;
	}
	if (buf && size)
		buf[0] = 0;
	pthread_mutex_lock(&ringbuf_trace__fmutex);
	p = atomic_load_explicit(&((struct ringbuf_trace_event *)ev)->filter, memory_order_acquire);
	for (i = 0; p && i < p->ntrig; i++) {
		const struct ringbuf_trace__trig *t = &p->trig[i];
		const struct ringbuf_trace_registry *r = t->target ? t->target->reg : NULL;
		char cnt[32];
		int64_t c = atomic_load(&((struct ringbuf_trace__trig *)t)->count);
		int k;
		if (c < 0)
			snprintf(cnt, sizeof cnt, "unlimited");
		else
			snprintf(cnt, sizeof cnt, "%lld", (long long)c);
		k = snprintf(buf ? buf + (len < size ? len : size) : NULL, buf && len < size ? size - len : 0,
			     "%s%s%s%s%s:%s%s%s\n", ringbuf_trace__tnames[t->action], t->target ? ":" : "",
			     t->target ? (r && r->system ? r->system : "ringbuf") : "", t->target ? ":" : "",
			     t->target ? t->target->name : "", cnt, t->cond ? " if " : "",
			     t->cond ? t->cond->text : "");
		if (k > 0)
			len += (size_t)k;
	}
	pthread_mutex_unlock(&ringbuf_trace__fmutex);
	return (int)len;
}

RINGBUF_API int ringbuf_trace_filter_eval(const struct ringbuf_trace_event *ev, const char *filter,
					  const void *rec, size_t len,
					  struct ringbuf_trace_filter_error *err)
{
	struct ringbuf_trace__prog *p;
	int rc;
	if (!ev || !filter || !rec || len < ev->size) {
		if (err) {
			err->pos = -1;
			err->event[0] = 0;
			snprintf(err->msg, sizeof err->msg, "no event, filter or record (or a short record)");
		}
		return RINGBUF_EINVAL;
	}
	p = ringbuf_trace__fcompile(ev, filter, err, &rc);
	if (!p)
		return rc;
	rc = ringbuf_trace__frun(p, rec, len) ? 1 : 0;
	free(p);
	return rc;
}


#endif /* RINGBUF_IMPLEMENTATION (ringbuf_trace_filter.h) */

/* C++: end ringbuf.h's shim where this header started it */
#if defined(__cplusplus) && defined(RINGBUF__CXX_SHIM_BY_FILTER)
#undef RINGBUF__CXX_SHIM_BY_FILTER
#undef RINGBUF__CXX_SHIM_KEEP
#include "ringbuf.h"
#endif
