/* Tests of ringbuf_trace.h's event filters (>>filter): every operator on every
 * field type against a reference evaluator written here (C comparisons on the
 * record's typed fields, libc fnmatch() for `~`) on seeded random records and
 * random expressions, through ringbuf_trace_filter_eval() and end to end
 * (ringbuf_trace_set_filter + the emitter + reading back what was committed);
 * a table of malformed filters that must give an error at a given position and
 * change nothing; clearing, replacing, enable/disable with a filter attached,
 * the buffer's discarded count, and the no-membarrier fallback.
 */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#define RINGBUF_TRACE_DEFINE_EVENTS
#include "ringbuf_trace.h"

#include <fnmatch.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

RINGBUF_TRACE_EVENT(fall,
	RINGBUF_FIELDS(RINGBUF_FIELD(uint8_t, u8),
		       RINGBUF_FIELD(int8_t, s8),
		       RINGBUF_FIELD(uint16_t, u16),
		       RINGBUF_FIELD(int16_t, s16),
		       RINGBUF_FIELD(uint32_t, u32),
		       RINGBUF_FIELD(int32_t, s32),
		       RINGBUF_FIELD(uint64_t, u64),
		       RINGBUF_FIELD(int64_t, s64),
		       RINGBUF_CHARS(name, 8),
		       RINGBUF_STRING(str),
		       RINGBUF_ARRAY(uint16_t, arr, 2)),
	RINGBUF_PRINT("u8=%u s8=%d name=%s str=%s", REC->u8, REC->s8, REC->name, __get_str(str)));
RINGBUF_TRACE_EVENT(small, RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, seq), RINGBUF_FIELD(int32_t, v)),
		    RINGBUF_PRINT("seq=%u v=%d", REC->seq, REC->v));
RINGBUF_TRACE_EVENT(other, RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, x)), RINGBUF_PRINT("x=%u", REC->x));

static struct ringbuf_trace_registry reg = RINGBUF_TRACE_REGISTRY_INIT("flt");

static int setup(void **state)
{
	(void)state;
	if (ringbuf_event_fall.id == 0 &&
	    (ringbuf_trace_register_event(&reg, &ringbuf_event_fall) < 0 ||
	     ringbuf_trace_register_event(&reg, &ringbuf_event_small) < 0 ||
	     ringbuf_trace_register_event(&reg, &ringbuf_event_other) < 0))
		return -1;
	ringbuf_trace_enable(&reg, "*");
	return ringbuf_trace_set_filter(&reg, "*", NULL, NULL) == 3 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return ringbuf_trace_set_filter(&reg, "*", NULL, NULL) == 3 ? 0 : -1;
}

static struct ringbuf *make_rb(size_t size)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	cfg.ncpu = 1;
	cfg.size_per_cpu = size;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	return rb;
}

/* ---- a seeded generator --------------------------------------------------- */

static uint64_t rng_state;
static uint64_t rnd(void)
{
	/* splitmix64 */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
static unsigned rn(unsigned n)
{
	return (unsigned)(rnd() % n);
}

/* ---- the reference: fields by name, typed values -------------------------- */

enum { F_U8, F_S8, F_U16, F_S16, F_U32, F_S32, F_U64, F_S64, F_TYPE, F_FLAGS, F_PREEMPT, F_PID,
       F_NAME, F_STR, NFIELDS };
static const char *const fname[NFIELDS] = {"u8",  "s8",  "u16", "s16", "u32", "s32", "u64",
					   "s64", "common_type", "common_flags",
					   "common_preempt_count", "common_pid", "name", "str"};
static const int fbits[NFIELDS] = {8, 8, 16, 16, 32, 32, 64, 64, 16, 8, 8, 32, 0, 0};
static const bool fsigned[NFIELDS] = {0, 1, 0, 1, 0, 1, 0, 1, 0, 0, 0, 1, 0, 0};

struct vals {
	struct ringbuf_trace_entry ent;
	uint8_t u8;
	int8_t s8;
	uint16_t u16;
	int16_t s16;
	uint32_t u32;
	int32_t s32;
	uint64_t u64;
	int64_t s64;
	char name[8];
	char str[24];
};

/* A field's value: signed as int64_t, unsigned as uint64_t (in *s / *u). */
static void field_value(const struct vals *v, int f, int64_t *s, uint64_t *u)
{
	*s = 0;
	*u = 0;
	switch (f) {
	case F_U8: *u = v->u8; break;
	case F_S8: *s = v->s8; break;
	case F_U16: *u = v->u16; break;
	case F_S16: *s = v->s16; break;
	case F_U32: *u = v->u32; break;
	case F_S32: *s = v->s32; break;
	case F_U64: *u = v->u64; break;
	case F_S64: *s = v->s64; break;
	case F_TYPE: *u = v->ent.type; break;
	case F_FLAGS: *u = v->ent.flags; break;
	case F_PREEMPT: *u = v->ent.preempt_count; break;
	case F_PID: *s = v->ent.pid; break;
	default: break;
	}
}

static int64_t smin(int bits)
{
	return bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1));
}
static int64_t smax(int bits)
{
	return bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1;
}
static uint64_t umax(int bits)
{
	return bits == 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
}

/* A random value for a field: boundaries, small numbers, or anything. */
static void random_int(int f, int64_t *s, uint64_t *u)
{
	int bits = fbits[f];
	unsigned k = rn(8);
	if (fsigned[f]) {
		int64_t x;
		if (k == 0)
			x = smin(bits);
		else if (k == 1)
			x = smax(bits);
		else if (k < 5)
			x = (int64_t)rn(7) - 3;
		else
			x = (int64_t)(((rnd() & umax(bits)) ^ ((uint64_t)1 << (bits - 1))) -
				      ((uint64_t)1 << (bits - 1)));
		*s = x;
	} else {
		uint64_t x;
		if (k == 0)
			x = 0;
		else if (k == 1)
			x = umax(bits);
		else if (k < 5)
			x = rn(5);
		else
			x = rnd() & umax(bits);
		*u = x;
	}
}

static const char *const words[] = {"", "a", "ab", "abc", "b", "ba", "bab", "cab", "abcdef", "zz"};

static void random_vals(struct vals *v)
{
	int64_t s;
	uint64_t u;
	memset(v, 0, sizeof *v);
#define RV(F, m, cast) (random_int(F, &s, &u), v->m = (cast)(fsigned[F] ? (uint64_t)s : u))
	RV(F_U8, u8, uint8_t);
	RV(F_S8, s8, int8_t);
	RV(F_U16, u16, uint16_t);
	RV(F_S16, s16, int16_t);
	RV(F_U32, u32, uint32_t);
	RV(F_S32, s32, int32_t);
	RV(F_U64, u64, uint64_t);
	RV(F_S64, s64, int64_t);
	RV(F_TYPE, ent.type, uint16_t);
	RV(F_FLAGS, ent.flags, uint8_t);
	RV(F_PREEMPT, ent.preempt_count, uint8_t);
	RV(F_PID, ent.pid, int32_t);
#undef RV
	snprintf(v->name, sizeof v->name, "%s", words[rn(10)]);
	snprintf(v->str, sizeof v->str, "%s", words[rn(10)]);
}

/* ---- expressions ---------------------------------------------------------- */

enum { OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_AND, OP_GLOB };
static const char *const opname[] = {"==", "!=", "<", "<=", ">", ">=", "&", "~"};
enum { N_PRED, N_AND, N_OR, N_NOT };

struct node {
	int kind;
	int field, op;
	int64_t sval;
	uint64_t uval;
	char str[32];
	struct node *a, *b;
};

static struct node pool[256];
static int npool;
static uint64_t pred_count[NFIELDS][8];

static struct node *random_pred(const struct vals *v)
{
	struct node *n = &pool[npool++];
	int64_t s;
	uint64_t u;
	memset(n, 0, sizeof *n);
	n->kind = N_PRED;
	n->field = (int)rn(NFIELDS);
	if (n->field == F_NAME || n->field == F_STR) {
		static const char *const pats[] = {"a*", "*b", "*a*", "?b", "[ab]*", "a?c", "*",
						   "abc", "", "[!a]*", "b[a-c]?"};
		const char *cur = n->field == F_NAME ? v->name : v->str;
		n->op = rn(3) == 0 ? OP_EQ : rn(2) ? OP_NE : OP_GLOB;
		if (n->op == OP_GLOB)
			snprintf(n->str, sizeof n->str, "%s", pats[rn(11)]);
		else
			snprintf(n->str, sizeof n->str, "%s", rn(2) ? cur : words[rn(10)]);
	} else {
		n->op = (int)rn(7);
		field_value(v, n->field, &s, &u);
		/* near the record's value half of the time */
		if (rn(2)) {
			int d = (int)rn(3) - 1;
			if (fsigned[n->field])
				n->sval = (d < 0 && s == INT64_MIN) || (d > 0 && s == INT64_MAX) ? s : s + d;
			else
				n->uval = (d < 0 && u == 0) || (d > 0 && u == UINT64_MAX) ? u : u + (uint64_t)d;
		} else {
			random_int(n->field, &n->sval, &n->uval);
		}
		/* & with a signed field: the mask as written, non-negative */
		if (n->op == OP_AND && fsigned[n->field] && n->sval < 0)
			n->sval = -(n->sval + 1);
	}
	pred_count[n->field][n->op]++;
	return n;
}

static struct node *random_expr(const struct vals *v, int depth)
{
	struct node *n;
	unsigned k = depth > 0 ? rn(6) : 0;
	if (k < 2 || npool > 240)
		return random_pred(v);
	n = &pool[npool++];
	memset(n, 0, sizeof *n);
	n->kind = k < 4 ? (k == 2 ? N_AND : N_OR) : k == 4 ? N_NOT : N_AND;
	n->a = random_expr(v, depth - 1);
	if (n->kind != N_NOT)
		n->b = random_expr(v, depth - 1);
	return n;
}

static bool ref_eval(const struct node *n, const struct vals *v)
{
	switch (n->kind) {
	case N_AND: return ref_eval(n->a, v) && ref_eval(n->b, v);
	case N_OR: return ref_eval(n->a, v) || ref_eval(n->b, v);
	case N_NOT: return !ref_eval(n->a, v);
	default: break;
	}
	if (n->field == F_NAME || n->field == F_STR) {
		const char *cur = n->field == F_NAME ? v->name : v->str;
		if (n->op == OP_GLOB)
			return fnmatch(n->str, cur, 0) == 0;
		return (strcmp(cur, n->str) == 0) == (n->op == OP_EQ);
	}
	if (fsigned[n->field]) {
		int64_t s, k = n->sval;
		uint64_t u;
		field_value(v, n->field, &s, &u);
		switch (n->op) {
		case OP_EQ: return s == k;
		case OP_NE: return s != k;
		case OP_LT: return s < k;
		case OP_LE: return s <= k;
		case OP_GT: return s > k;
		case OP_GE: return s >= k;
		default: return ((uint64_t)s & (uint64_t)k & umax(fbits[n->field])) != 0;
		}
	} else {
		int64_t s;
		uint64_t u, k = n->uval;
		field_value(v, n->field, &s, &u);
		switch (n->op) {
		case OP_EQ: return u == k;
		case OP_NE: return u != k;
		case OP_LT: return u < k;
		case OP_LE: return u <= k;
		case OP_GT: return u > k;
		case OP_GE: return u >= k;
		default: return (u & k & umax(fbits[n->field])) != 0;
		}
	}
}

struct sbuf {
	char s[8192];
	size_t n;
};
static void put(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	b->n += (size_t)vsnprintf(b->s + b->n, sizeof b->s - b->n, fmt, ap);
	va_end(ap);
	assert_true(b->n < sizeof b->s);
}
static const char *sp(void)
{
	static const char *const s[] = {"", " ", "  ", "\t"};
	return s[rn(4)];
}

static void render(struct sbuf *b, const struct node *n, int parent);

static void render_child(struct sbuf *b, const struct node *c, int parent)
{
	/* || inside && needs parentheses; anything may get them anyway */
	bool paren = (parent == N_AND && c->kind == N_OR) || (parent == N_NOT && c->kind != N_NOT &&
							      c->kind != N_PRED) || rn(5) == 0;
	if (paren)
		put(b, "(%s", sp());
	render(b, c, paren ? -1 : parent);
	if (paren)
		put(b, "%s)", sp());
}

static void render(struct sbuf *b, const struct node *n, int parent)
{
	(void)parent;
	switch (n->kind) {
	case N_AND:
	case N_OR:
		render_child(b, n->a, n->kind);
		put(b, "%s%s%s", sp(), n->kind == N_AND ? "&&" : "||", sp());
		render_child(b, n->b, n->kind);
		return;
	case N_NOT:
		put(b, "!%s", sp());
		render_child(b, n->a, N_NOT);
		return;
	default:
		break;
	}
	put(b, "%s%s%s%s", fname[n->field], sp(), opname[n->op], sp());
	if (n->field == F_NAME || n->field == F_STR) {
		bool bare = n->str[0] && strspn(n->str, "abcdefghijklmnopqrstuvwxyz") == strlen(n->str);
		unsigned q = bare ? rn(3) : rn(2);
		put(b, q == 0 ? "\"%s\"" : q == 1 ? "'%s'" : "%s", n->str);
	} else if (fsigned[n->field]) {
		int64_t k = n->sval;
		unsigned f = rn(3);
		if (k < 0)
			put(b, "-%" PRIu64, (uint64_t)0 - (uint64_t)k);
		else if (f == 0)
			put(b, "0x%" PRIx64, (uint64_t)k);
		else if (f == 1 && k != 0)
			put(b, "0%" PRIo64, (uint64_t)k);
		else
			put(b, "%" PRId64, k);
	} else {
		unsigned f = rn(3);
		if (f == 0)
			put(b, "0x%" PRIX64, n->uval);
		else if (f == 1 && n->uval != 0)
			put(b, "0%" PRIo64, n->uval);
		else
			put(b, "%" PRIu64, n->uval);
	}
}

/* The record as the emitter would write it: fixed part, then str. */
static size_t make_record(const struct vals *v, unsigned char *rec)
{
	struct ringbuf_ev_fall r;
	size_t n = strlen(v->str);
	memset(&r, 0, sizeof r);
	r.ent = v->ent;
	r.u8 = v->u8;
	r.s8 = v->s8;
	r.u16 = v->u16;
	r.s16 = v->s16;
	r.u32 = v->u32;
	r.s32 = v->s32;
	r.u64 = v->u64;
	r.s64 = v->s64;
	memcpy(r.name, v->name, sizeof r.name);
	r.str = (uint32_t)(n + 1) << 16 | (uint32_t)sizeof r;
	memcpy(rec, &r, sizeof r);
	memcpy(rec + sizeof r, v->str, n + 1);
	return sizeof r + n + 1;
}

/* ---- operators against the reference ------------------------------------- */

static void every_operator_and_type_matches_the_reference(void **state)
{
	unsigned char rec[256];
	uint64_t trues = 0, total = 0;
	int i, f, o;
	(void)state;
	rng_state = 20261125;
	memset(pred_count, 0, sizeof pred_count);
	for (i = 0; i < 30000; i++) {
		struct vals v;
		struct sbuf b;
		struct node *n;
		struct ringbuf_trace_filter_error err;
		size_t len;
		int got;
		bool want;
		random_vals(&v);
		npool = 0;
		n = random_expr(&v, i % 5);
		b.n = 0;
		b.s[0] = 0;
		put(&b, "%s", sp());
		render(&b, n, -1);
		len = make_record(&v, rec);
		want = ref_eval(n, &v);
		got = ringbuf_trace_filter_eval(&ringbuf_event_fall, b.s, rec, len, &err);
		if (got != (int)want)
			fail_msg("#%d: '%s' gave %d (%s), the reference %d", i, b.s, got, err.msg, want);
		trues += want;
		total++;
	}
	/* every operator on every type was tried, both outcomes often */
	for (f = 0; f < NFIELDS; f++)
		for (o = 0; o < 8; o++) {
			bool str = f == F_NAME || f == F_STR;
			bool valid = str ? (o == OP_EQ || o == OP_NE || o == OP_GLOB) : o != OP_GLOB;
			if (valid && pred_count[f][o] < 50)
				fail_msg("%s %s tried %" PRIu64 " times", fname[f], opname[o], pred_count[f][o]);
		}
	assert_true(trues > total / 5 && trues < total * 4 / 5);
	print_message("%" PRIu64 " expressions, %" PRIu64 " true\n", total, trues);
}

/* The same, end to end: set the filter, emit, read back what was committed. */
static void emitted_records_follow_the_reference(void **state)
{
	struct ringbuf *rb = make_rb(1 << 20);
	struct ringbuf_stats st;
	uint64_t committed = 0, discarded = 0;
	int i;
	(void)state;
	rng_state = 77;
	for (i = 0; i < 3000; i++) {
		struct vals v;
		struct sbuf b;
		struct node *n;
		struct ringbuf_trace_filter_error err;
		struct ringbuf_record r;
		uint16_t arr[2] = {1, 2};
		int got;
		bool want;
		random_vals(&v);
		/* what the emitter puts into the common fields */
		v.ent.type = ringbuf_event_fall.id;
		v.ent.flags = 0;
		v.ent.preempt_count = 0;
		v.ent.pid = (int32_t)syscall(SYS_gettid);
		npool = 0;
		n = random_expr(&v, i % 4);
		b.n = 0;
		render(&b, n, -1);
		want = ref_eval(n, &v);
		if (ringbuf_trace_set_filter(&reg, "fall", b.s, &err) != 1)
			fail_msg("'%s': %s", b.s, err.msg);
		got = trace_fall(rb, 0, v.u8, v.s8, v.u16, v.s16, v.u32, v.s32, v.u64, v.s64, v.name,
				 v.str, arr);
		assert_int_equal(got, want ? 1 : 0);
		if (want) {
			const struct ringbuf_ev_fall *e;
			assert_int_equal(ringbuf_consume(rb, 0, &r), 1);
			e = (const struct ringbuf_ev_fall *)r.data;
			assert_int_equal(e->u64, v.u64);
			assert_int_equal(e->s32, v.s32);
			committed++;
		} else {
			discarded++;
		}
		assert_true(ringbuf_empty_cpu(rb, 0));
	}
	assert_int_equal(ringbuf_stats(rb, &st), 0);
	assert_int_equal(st.discarded, discarded);
	assert_int_equal(st.committed, committed);
	assert_true(committed > 300 && discarded > 300);
	ringbuf_destroy(rb);
}

/* ---- malformed filters ----------------------------------------------------- */

static const struct {
	const char *text;
	int pos;
} bad[] = {
	{"u8 == 1 && ()", 12},
	{"u8 == 1 || !", 12},
	{"u8", 2},
	{"u8 ", 3},
	{"u8 >", 4},
	{"u8 > ", 5},
	{"u8 = 1", 3},
	{"u8 =< 1", 3},
	{"u8 => 1", 3},
	{"u8 >> 1", 4},
	{"u8 ! 1", 3},
	{"u8 1", 3},
	{"nope == 1", 0},
	{"U8 == 1", 0},
	{"common_cpu == 1", 0},
	{"arr == 1", 0},
	{"1 == u8", 0},
	{"== 1", 0},
	{"\"u8\" == 1", 0},
	{"u8 == x", 6},
	{"u8 == 1x", 7},
	{"u8 == 0x", 6},
	{"u8 == 0xg", 8},
	{"u8 == 09", 7},
	{"u8 == -1", 6},
	{"u64 == 18446744073709551616", 7},
	{"u64 == 0x10000000000000000", 7},
	{"s64 == 9223372036854775808", 7},
	{"s64 == -9223372036854775809", 7},
	{"s32 == --1", 7},
	{"u8 ~ 1", 3},
	{"s64 ~ \"a*\"", 4},
	{"name < \"a\"", 5},
	{"name > a", 5},
	{"str & 1", 4},
	{"name <= a", 5},
	{"name == \"abc", 8},
	{"str == 'abc", 7},
	{"name ==", 7},
	{"name == )", 8},
	{"u8 == 1 &&", 10},
	{"u8 == 1 ||", 10},
	{"&& u8 == 1", 0},
	{"|| u8 == 1", 0},
	{"u8 == 1 && && s8 == 1", 11},
	{"u8 == 1 & s8 == 1", 8},
	{"u8 == 1 | s8 == 1", 8},
	{"u8 == 1 s8 == 1", 8},
	{"(u8 == 1", 8},
	{"((u8 == 1)", 10},
	{"u8 == 1)", 7},
	{"()", 1},
	{"(", 1},
	{")", 0},
	{"!", 1},
	{"!()", 2},
	{"u8 == 1 !", 8},
	{"u8 == $", 6},
	{"u8 $ 1", 3},
	{"u8 == 1;", 7},
	{"u8 == 1 && (s8 == 2 || )", 23},
	{"u8 == 1 && nope > 2", 11},
	{"str ~", 5},
	{"common_pid > 1 && common_pid", 28},
	{"u8==1||", 7},
	{"u8 == 1 || (s8 == 2 && (u16 == 3)", 33},
	{"0", -2}, /* clears: not an error (marker) */
};

static void malformed_filters_give_positions_and_change_nothing(void **state)
{
	struct ringbuf *rb = make_rb(1 << 16);
	const char *keep = "u8 == 7 && str ~ \"k*\"";
	char text[256];
	unsigned i, nbad = 0;
	uint16_t arr[2] = {0, 0};
	(void)state;
	assert_int_equal(ringbuf_trace_set_filter(&reg, "fall", keep, NULL), 1);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct ringbuf_trace_filter_error err;
		char want[32];
		int r;
		if (bad[i].pos == -2)
			continue;
		memset(&err, 0x55, sizeof err);
		r = ringbuf_trace_set_filter(&reg, "fall", bad[i].text, &err);
		if (r != RINGBUF_EINVAL)
			fail_msg("'%s' gave %d", bad[i].text, r);
		if (err.pos != bad[i].pos && getenv("FILTER_TABLE")) {
			printf("{\"%s\", %d}, /* %s */\n", bad[i].text, err.pos, err.msg);
			continue;
		} else if (err.pos != bad[i].pos)
			fail_msg("'%s': pos %d (%s), expected %d", bad[i].text, err.pos, err.msg, bad[i].pos);
		snprintf(want, sizeof want, "pos %d: ", bad[i].pos);
		assert_memory_equal(err.msg, want, strlen(want));
		assert_true(strlen(err.msg) > strlen(want) + 5);
		assert_string_equal(err.event, "fall");
		/* nothing changed: the text and the behaviour */
		assert_int_equal(ringbuf_trace_get_filter(&ringbuf_event_fall, text, sizeof text),
				 (int)strlen(keep));
		assert_string_equal(text, keep);
		assert_int_equal(trace_fall(rb, 0, 7, 0, 0, 0, 0, 0, 0, 0, "", "kx", arr), 1);
		assert_int_equal(trace_fall(rb, 0, 7, 0, 0, 0, 0, 0, 0, 0, "", "x", arr), 0);
		assert_int_equal(trace_fall(rb, 0, 6, 0, 0, 0, 0, 0, 0, 0, "", "kx", arr), 0);
		nbad++;
	}
	assert_true(nbad >= 50);
	/* too long, too many predicates, too deep */
	{
		static char big[8192];
		struct ringbuf_trace_filter_error err;
		size_t n = 0;
		int k;
		memset(big, '(', 5000);
		memcpy(big + 4990, "u8 == 1", 8);
		assert_int_equal(ringbuf_trace_set_filter(&reg, "fall", big, &err), RINGBUF_EINVAL);
		assert_int_equal(err.pos, 4096);
		memset(big, ' ', 5000); /* blanks around do not count */
		assert_int_equal(ringbuf_trace_set_filter(&reg, "fall", big, &err), 1);
		for (k = 0; k < 65; k++)
			n += (size_t)snprintf(big + n, sizeof big - n, "%su8 == %d", k ? " || " : "", k);
		assert_int_equal(ringbuf_trace_set_filter(&reg, "fall", big, &err), RINGBUF_EINVAL);
		assert_int_equal(err.pos, (int)(strstr(big, "u8 == 64") - big));
		memset(big, '(', 33);
		strcpy(big + 33, "u8 == 1");
		assert_int_equal(ringbuf_trace_set_filter(&reg, "fall", big, &err), RINGBUF_EINVAL);
		assert_int_equal(err.pos, 32);
		memset(big, '!', 40);
		strcpy(big + 40, "u8 == 1");
		assert_int_equal(ringbuf_trace_set_filter(&reg, "fall", big, &err), RINGBUF_EINVAL);
		assert_int_equal(err.pos, 32);
		/* 32 deep is fine */
		memset(big, '(', 32);
		strcpy(big + 32, "u8 == 1");
		memset(big + 39, ')', 32);
		big[71] = 0;
		assert_int_equal(ringbuf_trace_set_filter(&reg, "other", big, &err), RINGBUF_EINVAL);
		assert_string_equal(err.event, "other"); /* other has no u8 */
		assert_int_equal(err.pos, 32);
		assert_int_equal(ringbuf_trace_set_filter(&reg, "fall", big, &err), 1);
		assert_int_equal(ringbuf_trace_set_filter(&reg, "fall", keep, &err), 1);
	}
	/* a glob over events where one of them cannot take the text: none changes */
	{
		struct ringbuf_trace_filter_error err;
		assert_int_equal(ringbuf_trace_set_filter(&reg, "small", "v < 0", &err), 1);
		assert_int_equal(ringbuf_trace_set_filter(&reg, "*", "seq > 3", &err), RINGBUF_EINVAL);
		assert_int_equal(ringbuf_trace_get_filter(&ringbuf_event_small, text, sizeof text), 5);
		assert_string_equal(text, "v < 0");
		assert_int_equal(ringbuf_trace_get_filter(&ringbuf_event_fall, text, sizeof text),
				 (int)strlen(keep));
		ringbuf_trace_get_filter(&ringbuf_event_other, text, sizeof text);
		assert_string_equal(text, "none");
		/* bad arguments */
		assert_int_equal(ringbuf_trace_set_filter(NULL, "*", "u8 == 1", &err), RINGBUF_EINVAL);
		assert_int_equal(ringbuf_trace_set_filter(&reg, NULL, "u8 == 1", &err), RINGBUF_EINVAL);
		assert_int_equal(ringbuf_trace_set_filter(&reg, "nothing*", "u8 == 1", &err), 0);
		assert_int_equal(ringbuf_trace_get_filter(NULL, text, sizeof text), RINGBUF_EINVAL);
	}
	ringbuf_destroy(rb);
}

/* Mutated expressions: valid ones with bytes deleted, tokens or stray bytes
 * inserted, or cut short, either compile or give an error at a position
 * inside the text; never a crash (run under ASan/UBSan by make asan-ubsan). */
static void mutated_expressions_never_crash(void **state)
{
	static const char *const tok[] = {
		"u8", "s64", "name", "str", "common_pid", "arr", "nope", "==", "!=", "<", "<=", ">",
		">=", "&", "~", "&&", "||", "!", "(", ")", "1", "-1", "0x1f", "017", "99999999999999999999",
		"\"a*\"", "'b'", "abc", "\"", "'", " ", "  ", "=", "|", "$", "\t", "0x", "-", "[a-",
	};
	unsigned char rec[256];
	struct vals v;
	size_t len;
	int i, ok = 0, bad_n = 0;
	(void)state;
	rng_state = 99;
	random_vals(&v);
	len = make_record(&v, rec);
	for (i = 0; i < 20000; i++) {
		char text[600];
		struct ringbuf_trace_filter_error err;
		struct sbuf b;
		size_t n;
		int k, m = (int)rn(4), r;
		/* a valid expression, then 0-3 mutations: delete a byte, insert a
		 * token or a random byte, cut the text */
		npool = 0;
		b.n = 0;
		b.s[0] = 0;
		render(&b, random_expr(&v, 1 + (int)rn(3)), -1);
		snprintf(text, sizeof text, "%.*s", 500, b.s);
		for (k = 0; k < m; k++) {
			size_t at;
			n = strlen(text);
			at = n ? rn((unsigned)n + 1) : 0;
			switch (rn(4)) {
			case 0:
				if (at < n)
					memmove(text + at, text + at + 1, n - at);
				break;
			case 1: {
				const char *t = tok[rn(sizeof tok / sizeof tok[0])];
				size_t tl = strlen(t);
				if (n + tl < sizeof text) {
					memmove(text + at + tl, text + at, n - at + 1);
					memcpy(text + at, t, tl);
				}
				break;
			}
			case 2:
				if (n + 1 < sizeof text) {
					memmove(text + at + 1, text + at, n - at + 1);
					text[at] = (char)(1 + rn(255));
				}
				break;
			default:
				text[at] = 0;
				break;
			}
		}
		r = ringbuf_trace_filter_eval(&ringbuf_event_fall, text, rec, len, &err);
		if (r == 0 || r == 1) {
			ok++;
			continue;
		}
		assert_int_equal(r, RINGBUF_EINVAL);
		assert_true(err.pos >= 0 && (size_t)err.pos <= strlen(text));
		assert_memory_equal(err.msg, "pos ", 4);
		bad_n++;
	}
	print_message("%d compiled, %d rejected\n", ok, bad_n);
	assert_true(ok > 20 && bad_n > 1000);
}

/* ---- clear, replace, enable/disable, "0", the accessor ---------------------- */

static void clear_replace_and_enable_keep_the_filter_state(void **state)
{
	struct ringbuf *rb = make_rb(1 << 16);
	struct ringbuf_stats st;
	char text[160];
	(void)state;
	assert_int_equal(ringbuf_trace_set_filter(&reg, "sm*", "  seq >= 10 && v != -1\n", NULL), 1);
	assert_int_equal(ringbuf_trace_get_filter(&ringbuf_event_small, text, sizeof text), 20);
	assert_string_equal(text, "seq >= 10 && v != -1");
	/* truncated copy, full length returned */
	assert_int_equal(ringbuf_trace_get_filter(&ringbuf_event_small, text, 4), 20);
	assert_string_equal(text, "seq");
	assert_int_equal(trace_small(rb, 0, 9, 0), 0);
	assert_int_equal(trace_small(rb, 0, 10, 0), 1);
	assert_int_equal(trace_small(rb, 0, 10, -1), 0);
	/* disable / enable keep the filter */
	assert_int_equal(ringbuf_trace_disable(&reg, "small"), 1);
	assert_int_equal(trace_small(rb, 0, 10, 0), 0);
	assert_int_equal(ringbuf_trace_enable(&reg, "small"), 1);
	assert_int_equal(trace_small(rb, 0, 9, 0), 0);
	assert_int_equal(trace_small(rb, 0, 11, 0), 1);
	/* a filter set while disabled applies once enabled */
	assert_int_equal(ringbuf_trace_disable(&reg, "small"), 1);
	assert_int_equal(ringbuf_trace_set_filter(&reg, "small", "v & 4", NULL), 1);
	assert_false(ringbuf_trace_is_enabled(&ringbuf_event_small));
	assert_int_equal(ringbuf_trace_enable(&reg, "small"), 1);
	assert_int_equal(trace_small(rb, 0, 0, 3), 0);
	assert_int_equal(trace_small(rb, 0, 0, 5), 1);
	assert_int_equal(trace_small(rb, 0, 0, -4), 1);
	/* replace */
	assert_int_equal(ringbuf_trace_set_filter(&reg, "small", "!(v & 4)", NULL), 1);
	assert_int_equal(trace_small(rb, 0, 0, 3), 1);
	assert_int_equal(trace_small(rb, 0, 0, 5), 0);
	/* "0" and blanks clear, as in tracefs */
	assert_int_equal(ringbuf_trace_set_filter(&reg, "small", " 0 ", NULL), 1);
	ringbuf_trace_get_filter(&ringbuf_event_small, text, sizeof text);
	assert_string_equal(text, "none");
	assert_int_equal(trace_small(rb, 0, 0, 5), 1);
	assert_int_equal(ringbuf_trace_set_filter(&reg, "small", "v == 1", NULL), 1);
	assert_int_equal(ringbuf_trace_set_filter(&reg, "small", " \t", NULL), 1);
	assert_int_equal(trace_small(rb, 0, 0, 5), 1);
	assert_int_equal(ringbuf_trace_set_filter(&reg, "small", "v == 1", NULL), 1);
	assert_int_equal(ringbuf_trace_set_filter(&reg, "small", NULL, NULL), 1);
	assert_int_equal(trace_small(rb, 0, 0, 5), 1);
	/* system/name globs; common fields */
	assert_int_equal(ringbuf_trace_set_filter(&reg, "flt/small", "common_pid == 1", NULL), 1);
	assert_int_equal(trace_small(rb, 0, 0, 5), 0);
	snprintf(text, sizeof text, "common_pid == %d && common_type == %u && common_flags == 0 && "
		 "common_preempt_count == 0", (int)syscall(SYS_gettid), ringbuf_event_small.id);
	assert_int_equal(ringbuf_trace_set_filter(&reg, "flt/small", text, NULL), 1);
	assert_int_equal(trace_small(rb, 0, 0, 5), 1);
	assert_int_equal(ringbuf_stats(rb, &st), 0);
	assert_int_equal(st.discarded, 6);
	assert_int_equal(st.committed, 9);
	ringbuf_destroy(rb);
}

/* Without membarrier the replaced programs are kept (never freed), and the
 * filters still work. */
static void without_membarrier_old_programs_are_kept(void **state)
{
	struct ringbuf *rb = make_rb(1 << 16);
	unsigned kept0, kept1;
	(void)state;
	ringbuf_trace__filter_testing(0, &kept0);
	ringbuf_trace__filter_testing(1, NULL);
	assert_int_equal(ringbuf_trace_set_filter(&reg, "small", "v == 1", NULL), 1);
	assert_int_equal(trace_small(rb, 0, 0, 1), 1);
	assert_int_equal(ringbuf_trace_set_filter(&reg, "small", "v == 2", NULL), 1);
	assert_int_equal(trace_small(rb, 0, 0, 1), 0);
	assert_int_equal(trace_small(rb, 0, 0, 2), 1);
	assert_int_equal(ringbuf_trace_set_filter(&reg, "small", NULL, NULL), 1);
	ringbuf_trace__filter_testing(0, &kept1);
	assert_int_equal(kept1 - kept0, 2);
	assert_int_equal(ringbuf_trace_set_filter(&reg, "small", "v == 2", NULL), 1);
	assert_int_equal(ringbuf_trace_set_filter(&reg, "small", NULL, NULL), 1);
	ringbuf_trace__filter_testing(0, &kept0);
#if defined(__linux__) && defined(SYS_membarrier)
	if (syscall(SYS_membarrier, 0, 0, 0) > 0) /* QUERY: some command available */
		assert_int_equal(kept0, kept1);
#endif
	ringbuf_destroy(rb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(every_operator_and_type_matches_the_reference, setup,
						teardown),
		cmocka_unit_test_setup_teardown(emitted_records_follow_the_reference, setup, teardown),
		cmocka_unit_test_setup_teardown(malformed_filters_give_positions_and_change_nothing,
						setup, teardown),
		cmocka_unit_test_setup_teardown(mutated_expressions_never_crash, setup, teardown),
		cmocka_unit_test_setup_teardown(clear_replace_and_enable_keep_the_filter_state, setup,
						teardown),
		cmocka_unit_test_setup_teardown(without_membarrier_old_programs_are_kept, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
