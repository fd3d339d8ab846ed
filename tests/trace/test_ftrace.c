/* The function tracer (ringbuf_ftrace.h): this file is compiled with
 * -finstrument-functions, and the tracer's filter keeps only the t_*
 * functions, so every test knows the exact entry/exit sequence: call trees,
 * recursion, inlined functions, a signal handler interrupting a traced
 * function, longjmp (the missing exits are written late, at the next hook
 * above them), filters and notrace, the per-thread switch, the function
 * event, the symbol table, and the real `trace-cmd report` function-graph
 * view (names, nesting, durations; skipped without trace-cmd, failed under
 * CI=true).
 */
/* CFLAGS: -finstrument-functions */
#define _GNU_SOURCE
#define RINGBUF_IMPLEMENTATION
#include "ringbuf_ftrace.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#define NI __attribute__((noinline))

static volatile int sink;
static struct ringbuf *rb;

/* ---- traced functions ---------------------------------------------------- */

NI void t_leaf(void) { sink++; }
NI void t_a(void) { t_leaf(); t_leaf(); }
NI void t_b(void) { t_leaf(); }
NI void t_root(void) { t_a(); t_b(); }
NI int t_rec(int n) { return n ? 1 + t_rec(n - 1) : 0; }
static inline __attribute__((always_inline)) void t_inl(void) { t_leaf(); }
NI void t_has_inline(void) { t_inl(); t_leaf(); }

NI void t_handler_work(void) { sink++; }
void t_on_signal(int sig);
void t_on_signal(int sig) { (void)sig; t_handler_work(); }
NI void t_sig_outer(void) { raise(SIGUSR1); t_leaf(); }

static jmp_buf jb;
NI void t_lj_inner(void) { longjmp(jb, 1); }
NI void t_lj_mid(void) { t_lj_inner(); sink++; }
NI void t_lj_outer(void)
{
	if (!setjmp(jb))
		t_lj_mid();
	t_leaf();
}

/* ---- reading the records back (not traced: not t_*) ---------------------- */

struct ev {
	char kind; /* 'E' entry, 'X' exit, 'F' function */
	const char *name;
	int depth;
	unsigned long long calltime, rettime;
	const char *parent;
};
static struct ev evs[256];
static int nev;

static void drain(void)
{
	struct ringbuf_record rec;
	nev = 0;
	while (ringbuf_consume(rb, 0, &rec) == 1) {
		struct ringbuf_trace_entry e;
		struct ev *v = &evs[nev];
		assert_true(nev < 256);
		memcpy(&e, rec.data, sizeof e);
		if (e.type == RINGBUF_FTRACE_ID_GRAPH_ENT) {
			struct ringbuf_ftrace_graph_ent r;
			memcpy(&r, rec.data, sizeof r);
			v->kind = 'E';
			v->name = ringbuf_ftrace_lookup((void *)r.func);
			v->depth = r.depth;
		} else if (e.type == RINGBUF_FTRACE_ID_GRAPH_RET) {
			struct ringbuf_ftrace_graph_ret r;
			memcpy(&r, rec.data, sizeof r);
			v->kind = 'X';
			v->name = ringbuf_ftrace_lookup((void *)r.func);
			v->depth = r.depth;
			v->calltime = r.calltime;
			v->rettime = r.rettime;
			assert_true(r.calltime <= r.rettime);
		} else if (e.type == RINGBUF_FTRACE_ID_FUNCTION) {
			struct ringbuf_ftrace_function r;
			memcpy(&r, rec.data, sizeof r);
			v->kind = 'F';
			v->name = ringbuf_ftrace_lookup((void *)r.ip);
			v->parent = ringbuf_ftrace_lookup((void *)r.parent_ip);
			v->depth = 0;
		} else {
			fail_msg("unexpected event type %u", e.type);
		}
		nev++;
	}
}

/* expect("E t_root 0", "X t_root 0", ..., NULL) against evs */
static void expect(const char *first, ...)
{
	va_list ap;
	const char *s = first;
	int i = 0;
	va_start(ap, first);
	for (; s; s = va_arg(ap, const char *), i++) {
		char got[96];
		assert_true(i < nev);
		snprintf(got, sizeof got, "%c %s %d", evs[i].kind, evs[i].name, evs[i].depth);
		if (strcmp(got, s) != 0)
			fail_msg("event %d: got '%s', expected '%s'", i, got, s);
	}
	va_end(ap);
	if (i != nev)
		fail_msg("%d events, expected %d (next: %c %s %d)", nev, i, evs[i].kind, evs[i].name,
			 evs[i].depth);
}

static int setup(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	(void)state;
	if (ringbuf_create(&cfg, &rb) < 0)
		return -1;
	if (ringbuf_ftrace_set_filter("t_*") <= 0)
		return -1;
	ringbuf_ftrace_set_notrace(NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	ringbuf_ftrace_free();
	ringbuf_destroy(rb);
	return 0;
}

static void start(unsigned mode)
{
	assert_int_equal(ringbuf_ftrace_start(rb, 0, mode), 0);
}

/* ---- tests --------------------------------------------------------------- */

static void test_call_tree(void **state)
{
	(void)state;
	start(RINGBUF_FTRACE_GRAPH);
	t_root();
	ringbuf_ftrace_stop();
	drain();
	expect("E t_root 0", "E t_a 1", "E t_leaf 2", "X t_leaf 2", "E t_leaf 2", "X t_leaf 2", "X t_a 1",
	       "E t_b 1", "E t_leaf 2", "X t_leaf 2", "X t_b 1", "X t_root 0", NULL);
	/* the outer frame's interval holds the inner ones */
	assert_true(evs[11].calltime <= evs[6].calltime && evs[6].rettime <= evs[11].rettime);
	assert_int_equal(ringbuf_ftrace_thread_depth(), 0);
}

static void test_recursion(void **state)
{
	(void)state;
	start(RINGBUF_FTRACE_GRAPH);
	assert_int_equal(t_rec(4), 4);
	ringbuf_ftrace_stop();
	drain();
	expect("E t_rec 0", "E t_rec 1", "E t_rec 2", "E t_rec 3", "E t_rec 4", "X t_rec 4", "X t_rec 3",
	       "X t_rec 2", "X t_rec 1", "X t_rec 0", NULL);
}

/* an always_inline function keeps its hooks, called from its parent's frame */
static void test_inlined(void **state)
{
	(void)state;
	start(RINGBUF_FTRACE_GRAPH);
	t_has_inline();
	ringbuf_ftrace_stop();
	drain();
	expect("E t_has_inline 0", "E t_inl 1", "E t_leaf 2", "X t_leaf 2", "X t_inl 1", "E t_leaf 1",
	       "X t_leaf 1", "X t_has_inline 0", NULL);
}

static void test_signal_handler(void **state)
{
	struct sigaction sa, old;
	(void)state;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = t_on_signal;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	start(RINGBUF_FTRACE_GRAPH);
	t_sig_outer();
	ringbuf_ftrace_stop();
	sigaction(SIGUSR1, &old, NULL);
	drain();
	/* the handler nests under the function it interrupted and unwinds */
	expect("E t_sig_outer 0", "E t_on_signal 1", "E t_handler_work 2", "X t_handler_work 2",
	       "X t_on_signal 1", "E t_leaf 1", "X t_leaf 1", "X t_sig_outer 0", NULL);
}

/* longjmp skips the exits of t_lj_inner and t_lj_mid: with frame keys they
 * are written (with their depths) at the next hook of the thread above them,
 * t_leaf's entry, called from another site of the same frame; without keys
 * at t_lj_outer's exit */
static void test_longjmp(void **state)
{
	struct ringbuf_ftrace_stats a, b;
	(void)state;
	ringbuf_ftrace_get_stats(&a);
	start(RINGBUF_FTRACE_GRAPH);
	t_lj_outer();
	ringbuf_ftrace_stop();
	ringbuf_ftrace_get_stats(&b);
	drain();
#if RINGBUF_FTRACE_FRAME_KEYS
	expect("E t_lj_outer 0", "E t_lj_mid 1", "E t_lj_inner 2", "X t_lj_inner 2", "X t_lj_mid 1",
	       "E t_leaf 1", "X t_leaf 1", "X t_lj_outer 0", NULL);
	/* the repaired exits share one return time */
	assert_true(evs[3].rettime == evs[4].rettime);
#else
	/* without frame keys: repaired at the exit of the frame longjmp returned
	 * to; t_leaf nests under the dead frames until then */
	expect("E t_lj_outer 0", "E t_lj_mid 1", "E t_lj_inner 2", "E t_leaf 3", "X t_leaf 3",
	       "X t_lj_inner 2", "X t_lj_mid 1", "X t_lj_outer 0", NULL);
	assert_true(evs[5].rettime == evs[6].rettime);
#endif
	assert_int_equal(b.repaired - a.repaired, 2);
	assert_int_equal(ringbuf_ftrace_thread_depth(), 0);
}

/* threads: each its own shadow stack (and, RINGBUF_CPU_THREAD, a buffer
 * claimed while it runs); every thread's sequence is whole, from depth 0 */
static void *thread_main(void *arg)
{
	(void)arg;
	t_rec(3);
	ringbuf_thread_release((struct ringbuf *)arg);
	return NULL;
}

static void test_threads(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *r2;
	pthread_t th[3];
	unsigned i, cpu, total = 0, n[3] = {0, 0, 0};
	int32_t pids[3] = {0, 0, 0};
	static const int depth[8] = {0, 1, 2, 3, 3, 2, 1, 0};
	(void)state;
	cfg.ncpu = 3;
	assert_int_equal(ringbuf_create(&cfg, &r2), 0);
	assert_int_equal(ringbuf_ftrace_start(r2, RINGBUF_CPU_THREAD, RINGBUF_FTRACE_GRAPH), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&th[i], NULL, thread_main, r2), 0);
	for (i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	ringbuf_ftrace_stop();
	for (cpu = 0; cpu < 3; cpu++) {
		struct ringbuf_record rec;
		while (ringbuf_consume(r2, cpu, &rec) == 1) {
			struct ringbuf_ftrace_graph_ret r;
			unsigned k;
			memset(&r, 0, sizeof r);
			memcpy(&r, rec.data, rec.len < sizeof r ? rec.len : sizeof r);
			for (k = 0; k < 3 && pids[k] && pids[k] != r.ent.pid; k++)
				;
			assert_true(k < 3);
			pids[k] = r.ent.pid;
			assert_true(n[k] < 8);
			assert_int_equal(r.ent.type, n[k] < 4 ? RINGBUF_FTRACE_ID_GRAPH_ENT : RINGBUF_FTRACE_ID_GRAPH_RET);
			assert_int_equal(r.depth, depth[n[k]]);
			assert_string_equal(ringbuf_ftrace_lookup((void *)r.func), "t_rec");
			n[k]++;
			total++;
		}
	}
	for (i = 0; i < 3; i++)
		assert_int_equal(n[i], 8);
	assert_int_equal(total, 24);
	ringbuf_destroy(r2);
}

/* calltime and rettime are the entry and exit records' own time stamps
 * (a counter clock: every reading distinct) */
static uint64_t counter;
static uint64_t counter_clock(void *ctx)
{
	(void)ctx;
	return counter += 7;
}

static void test_times_are_record_stamps(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *r2;
	struct ringbuf_record rec;
	uint64_t entry_ts[8];
	unsigned n = 0, depth = 0;
	(void)state;
	cfg.clock = counter_clock;
	assert_int_equal(ringbuf_create(&cfg, &r2), 0);
	assert_int_equal(ringbuf_ftrace_start(r2, 0, RINGBUF_FTRACE_GRAPH), 0);
	t_root();
	ringbuf_ftrace_stop();
	while (ringbuf_consume(r2, 0, &rec) == 1) {
		struct ringbuf_ftrace_graph_ret r;
		memset(&r, 0, sizeof r);
		memcpy(&r, rec.data, rec.len < sizeof r ? rec.len : sizeof r);
		if (r.ent.type == RINGBUF_FTRACE_ID_GRAPH_ENT) {
			assert_true(depth < 8);
			entry_ts[depth++] = rec.ts;
		} else {
			assert_true(depth > 0);
			depth--;
			assert_int_equal(r.calltime, entry_ts[depth]);
			assert_int_equal(r.rettime, rec.ts);
			assert_true(r.rettime > r.calltime);
		}
		n++;
	}
	assert_int_equal(n, 12);
	ringbuf_destroy(r2);
}

static void test_filters(void **state)
{
	(void)state;
	assert_int_equal(ringbuf_ftrace_set_filter("t_a, t_leaf"), 2);
	assert_int_equal(ringbuf_ftrace_set_notrace("t_leaf"), 1);
	start(RINGBUF_FTRACE_GRAPH);
	t_root();
	ringbuf_ftrace_stop();
	drain();
	expect("E t_a 0", "X t_a 0", NULL);
	/* a filter that matches nothing traces nothing (as the kernel's) */
	assert_int_equal(ringbuf_ftrace_set_filter("no_such_function_*"), 0);
	start(RINGBUF_FTRACE_GRAPH);
	t_root();
	ringbuf_ftrace_stop();
	drain();
	assert_int_equal(nev, 0);
	/* glob classes */
	assert_int_equal(ringbuf_ftrace_set_filter("t_[ab]"), 2);
	assert_int_equal(ringbuf_ftrace_set_notrace(""), 0);
	start(RINGBUF_FTRACE_GRAPH);
	t_root();
	ringbuf_ftrace_stop();
	drain();
	expect("E t_a 0", "X t_a 0", "E t_b 0", "X t_b 0", NULL);
	assert_int_equal(ringbuf_ftrace_set_filter("t_*"), ringbuf_ftrace_set_filter("t_*"));
}

/* The hooks' membership test (H4) against every set size up to 40, with
 * each address and each gap between them, as ringbuf_ftrace__build lays a
 * set out (sorted; an empty one holds a 0). */
static void test_filter_sets(void **state)
{
	struct ringbuf_ftrace__set *s = malloc(sizeof *s + 41 * sizeof(uintptr_t));
	size_t n, i;
	uintptr_t a;
	(void)state;
	assert_non_null(s);
	for (n = 0; n <= 40; n++) {
		s->n = n;
		for (i = 0; i < n; i++)
			s->addr[i] = 16 * (i + 1);
		if (!n)
			s->addr[0] = 0;
		for (a = 1; a <= 16 * (n + 2); a++)
			assert_int_equal(ringbuf_ftrace__in(s, a), a % 16 == 0 && a / 16 >= 1 && a / 16 <= n);
		/* the ends of the address space */
		assert_false(ringbuf_ftrace__in(s, UINTPTR_MAX));
	}
	free(s);
}

static void test_thread_switch(void **state)
{
	(void)state;
	start(RINGBUF_FTRACE_GRAPH);
	ringbuf_ftrace_thread_enable(false);
	t_root();
	ringbuf_ftrace_thread_enable(true);
	t_b();
	ringbuf_ftrace_stop();
	drain();
	expect("E t_b 0", "E t_leaf 1", "X t_leaf 1", "X t_b 0", NULL);
}

static void test_function_event(void **state)
{
	(void)state;
	start(RINGBUF_FTRACE_FUNCTION);
	t_b();
	ringbuf_ftrace_stop();
	drain();
	expect("F t_b 0", "F t_leaf 0", NULL);
	assert_string_equal(evs[1].parent, "t_b");
}

static void test_bad_input(void **state)
{
	struct ringbuf_ftrace_stats st;
	(void)state;
	assert_int_equal(ringbuf_ftrace_start(NULL, 0, RINGBUF_FTRACE_GRAPH), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_ftrace_start(rb, 0, 0), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_ftrace_start(rb, 0, 8), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_ftrace_start(rb, 5, RINGBUF_FTRACE_GRAPH), RINGBUF_EINVAL);
	t_root(); /* not started: nothing */
	drain();
	assert_int_equal(nev, 0);
	ringbuf_ftrace_get_stats(&st);
	assert_int_equal(st.dropped, 0);
}

static void test_symbols(void **state)
{
	char *ks;
	(void)state;
	assert_string_equal(ringbuf_ftrace_lookup((void *)(uintptr_t)t_leaf), "t_leaf");
	assert_string_equal(ringbuf_ftrace_lookup((void *)((uintptr_t)t_root + 1)), "t_root");
	ks = ringbuf_ftrace_kallsyms();
	assert_non_null(ks);
	assert_non_null(strstr(ks, " t t_leaf\n"));
	assert_non_null(strstr(ks, " t malloc\n")); /* from libc's .dynsym */
	free(ks);
}

/* ---- trace-cmd report ---------------------------------------------------- */

static bool have_trace_cmd(void)
{
	return system("command -v trace-cmd >/dev/null 2>&1") == 0;
}

static char *slurp(FILE *p)
{
	size_t len = 0, cap = 1 << 16;
	char *out = malloc(cap);
	size_t n;
	assert_non_null(out);
	while ((n = fread(out + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (cap - len < 4096) {
			cap *= 2;
			out = realloc(out, cap);
			assert_non_null(out);
		}
	}
	out[len] = 0;
	return out;
}

/* the line of out that contains what (after from), or fail */
static const char *line_with(const char *out, const char *what)
{
	const char *p = strstr(out, what);
	if (!p)
		fail_msg("trace-cmd report has no '%s':\n%s", what, out);
	while (p > out && p[-1] != '\n')
		p--;
	return p;
}

/* the duration after `event` on line l: trace-cmd marks long ones with
 * +, !, #, *, @ or $ before the number */
static double duration_us(const char *l, const char *event)
{
	const char *d = strstr(l, event);
	double us;
	assert_non_null(d);
	d += strlen(event);
	while (*d == ' ' || *d == '+' || *d == '!' || *d == '#' || *d == '*' || *d == '@' || *d == '$')
		d++;
	if (sscanf(d, "%lf us", &us) != 1)
		fail_msg("no duration in: %.120s", l);
	return us;
}

/* fail if a funcgraph line shows an address ("0x...") for a function */
static void assert_no_unnamed(const char *out)
{
	const char *l = out;
	while (*l) {
		const char *end = strchr(l, '\n'), *bar;
		size_t len = end ? (size_t)(end - l) : strlen(l);
		bar = memchr(l, '|', len);
		if (bar) {
			const char *q;
			for (q = bar; q + 1 < l + len; q++)
				if (q[0] == '0' && q[1] == 'x')
					fail_msg("an unnamed function: %.*s", (int)len, l);
		}
		l += len + (end ? 1 : 0);
	}
}

static void test_trace_cmd_report(void **state)
{
	char dir[] = "/tmp/ftraceXXXXXX", path[64], cmd[128];
	const char *l;
	char *out;
	FILE *p;
	double us;
	(void)state;
	if (!have_trace_cmd()) {
		const char *ci = getenv("CI");
		if (ci && strcmp(ci, "true") == 0)
			fail_msg("trace-cmd is not installed (required under CI=true)");
		printf("trace-cmd not installed: report check skipped\n");
		skip();
	}
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/f.dat", dir);
	start(RINGBUF_FTRACE_GRAPH);
	t_root();
	ringbuf_ftrace_stop();
	assert_int_equal(ringbuf_ftrace_save_tracedat(rb, NULL, path, NULL), 0);
	snprintf(cmd, sizeof cmd, "trace-cmd report %s 2>&1", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	out = slurp(p);
	pclose(p);
	/* names, nesting (two spaces per level after the '|'), leaves with durations */
	line_with(out, "|  t_root() {");
	line_with(out, "|    t_a() {");
	l = line_with(out, "|      t_leaf();");
	assert_non_null(strstr(l, "funcgraph_entry"));
	us = duration_us(l, "funcgraph_entry:");
	assert_true(us >= 0);
	l = line_with(out, "|    t_b() {");
	l = line_with(l, "|    }");          /* t_b's closing brace */
	assert_non_null(strstr(l, "funcgraph_exit"));
	us = duration_us(l, "funcgraph_exit:");
	assert_true(us >= 0);
	line_with(out, "|  }");
	/* nothing unnamed: no address where a function name goes (the graph
	 * part after each line's '|'; the task's name before it may hold "0x":
	 * under qemu-user it is the emulator's, "qemu-s390x") */
	assert_no_unnamed(out);
	/* every line names its task: the export carries this process's thread
	 * names though no registry was given (before: "Saved command lines, 0
	 * bytes", and trace-cmd printed "<...>-PID" on every line) */
	if (strstr(out, "<...>-"))
		fail_msg("a task without its name in trace-cmd report:\n%s", out);
	free(out);
	/* file version 7 (sections): the same graph */
	{
		struct ringbuf_trace_tracedat_opts o = RINGBUF_TRACE_TRACEDAT_INIT;
		o.version = 7;
		start(RINGBUF_FTRACE_GRAPH);
		t_b();
		ringbuf_ftrace_stop();
		assert_int_equal(ringbuf_ftrace_save_tracedat(rb, NULL, path, &o), 0);
		p = popen(cmd, "r");
		assert_non_null(p);
		out = slurp(p);
		pclose(p);
		line_with(out, "|  t_b() {");
		line_with(out, "|    t_leaf();");
		if (strstr(out, "<...>-"))
			fail_msg("a task without its name in trace-cmd report (v7):\n%s", out);
		free(out);
	}
	unlink(path);
	rmdir(dir);
}

/* tests/ftrace/exceptions.cpp with each C++ compiler found (CC builds the
 * implementation): the same graph whether the compiler calls the exit hooks
 * while unwinding (g++) or not (clang++: repaired at t_leaf's entry) */
static void test_cxx_exceptions(void **state)
{
	static const char *const cxx[][2] = {{"g++", "gcc"}, {"clang++", "clang"}};
	static const char expected[] = "E _Z7t_outerv 0\nE _Z5t_midv 1\nE _Z9t_throwerv 2\n"
				       "X _Z9t_throwerv 2\nX _Z5t_midv 1\nE _Z6t_leafv 1\n"
				       "X _Z6t_leafv 1\nX _Z7t_outerv 0\nrepaired ";
	char dir[] = "/tmp/ftracexxXXXXXX", cmd[1024];
	unsigned i, ran = 0;
	(void)state;
	if (access("tests/ftrace/exceptions.cpp", R_OK) != 0) {
		printf("tests/ftrace/exceptions.cpp not found (run from the source tree): skipped\n");
		skip();
	}
	assert_non_null(mkdtemp(dir));
	for (i = 0; i < 2; i++) {
		FILE *p;
		char *out;
		snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1 && command -v %s >/dev/null 2>&1",
			 cxx[i][0], cxx[i][1]);
		if (system(cmd) != 0)
			continue;
		snprintf(cmd, sizeof cmd,
			 "%s -std=c11 -O2 -I. -c -o %s/impl.o tests/ftrace/impl.c && "
			 "%s -O2 -finstrument-functions -I. -o %s/exc tests/ftrace/exceptions.cpp %s/impl.o -pthread && "
			 "%s/exc 2>&1",
			 cxx[i][1], dir, cxx[i][0], dir, dir, dir);
		p = popen(cmd, "r");
		assert_non_null(p);
		out = slurp(p);
		assert_int_equal(pclose(p), 0);
		if (strncmp(out, expected, sizeof expected - 1) != 0)
			fail_msg("%s: got\n%s\nexpected\n%s", cxx[i][0], out, expected);
		printf("%s: exception unwinding gives the expected graph (%s)", cxx[i][0],
		       strstr(out, "repaired"));
		free(out);
		ran++;
	}
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	if (!ran) {
		printf("no C++ compiler: skipped\n");
		skip();
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_call_tree),      cmocka_unit_test(test_recursion),
		cmocka_unit_test(test_inlined),        cmocka_unit_test(test_signal_handler),
		cmocka_unit_test(test_longjmp),        cmocka_unit_test(test_thread_switch),
		cmocka_unit_test(test_function_event), cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_symbols),        cmocka_unit_test(test_trace_cmd_report),
		cmocka_unit_test(test_filters),        cmocka_unit_test(test_filter_sets),
		cmocka_unit_test(test_cxx_exceptions),
		cmocka_unit_test(test_threads),        cmocka_unit_test(test_times_are_record_stamps),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
