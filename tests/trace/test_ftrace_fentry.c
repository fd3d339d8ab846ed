/* The function tracer's dynamic patching (ringbuf_ftrace.h >>fentry, x86-64
 * Linux, gcc): this file is compiled with -pg -mfentry -mnop-mcount
 * -mrecord-mcount -fno-pie -no-pie when the compiler has them (the Makefile
 * probes it and defines TEST_FENTRY), so each fe_* function starts with a
 * 5-byte NOP listed in __mcount_loc. Without them (clang, other
 * architectures) every case checks that patching refuses with an error and
 * is skipped.
 *   single: patch the filtered sites (the bytes become a call), call fe_f,
 *      fe_g, fe_h, fe_args known numbers of times, unpatch (the original NOP
 *      bytes again), call again: the `function` events are exactly the
 *      calls made while patched (names through the symbol table, parent_ip
 *      in the caller), fe_other (notrace) never recorded nor patched,
 *      arguments in registers (6 integers, 8 doubles) intact through the
 *      trampoline.
 *   threads: THE SHAPE WHERE IT BREAKS: 3 workers call the functions in
 *      tight loops, a SIGUSR1 handler calls fe_h on them, while the main
 *      thread patches and unpatches all sites hundreds of times. No crash
 *      (SIGILL, SIGSEGV, a stray SIGTRAP), every event is a function of the
 *      set called from a known caller, and in the phases where the sites
 *      are quiescent (all patched, or all NOPs), the counts are exact per
 *      thread and phase (workers write a marker record at each phase change
 *      into their own buffer; the main thread waits for every worker's
 *      acknowledgement before it patches again).
 *   tracedat: the events exported to a trace.dat; `trace-cmd report` prints
 *      the function names (skipped without trace-cmd, failed under CI=true).
 */
#define _GNU_SOURCE
#if defined(TEST_FENTRY) && !defined(__x86_64__)
#undef TEST_FENTRY /* i686 gcc makes the sites too; the patching is x86-64's */
#endif
#define RINGBUF_IMPLEMENTATION
#include "ringbuf_ftrace.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>

/* noipa: no clone (fe_args.constprop.0 would have its own site) */
#if defined(__clang__)
#define NI __attribute__((noinline))
#else
#define NI __attribute__((noipa))
#endif
#define NO_SITE __attribute__((no_instrument_function))
#define FP(f) ((void *)(uintptr_t)(f)) /* a function's first bytes */

static volatile int sink;

/* ---- the traced functions (filter "fe_*", notrace "fe_other") ---------- */

NI void fe_f(void);
NI void fe_g(void);
NI void fe_h(void);
NI void fe_other(void);
NI double fe_args(long a, long b, long c, long d, long e, long f, double x0, double x1, double x2, double x3,
		  double x4, double x5, double x6, double x7);
NI void fe_f(void) { sink++; }
NI void fe_g(void) { fe_f(); sink++; } /* not a tail call: parent_ip in fe_g */
NI void fe_h(void) { sink += 2; }
NI void fe_other(void) { sink += 3; }
NI double fe_args(long a, long b, long c, long d, long e, long f, double x0, double x1, double x2, double x3,
		  double x4, double x5, double x6, double x7)
{
	return (double)(a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f) + x0 + 2 * x1 + 3 * x2 + 4 * x3 + 5 * x4 +
	       6 * x5 + 7 * x6 + 8 * x7;
}
/* 1+4+9+16+25+36 + (0.5)(1+2+...+8)*... : computed, not typed */
NO_SITE static double args_expected(void)
{
	return (double)(1 + 2 * 2 + 3 * 3 + 4 * 4 + 5 * 5 + 6 * 6) + 0.5 + 2 * 1.5 + 3 * 2.5 + 4 * 3.5 + 5 * 4.5 +
	       6 * 5.5 + 7 * 6.5 + 8 * 7.5;
}
NI static double call_args(void)
{
	double r = fe_args(1, 2, 3, 4, 5, 6, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5);
	sink++; /* not a tail call: parent_ip in call_args */
	return r;
}

#ifdef TEST_FENTRY

static const unsigned char nop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};

enum { F_F, F_G, F_H, F_ARGS, F_OTHER, NFN };
static void *const fns[NFN] = {FP(fe_f), FP(fe_g), FP(fe_h), FP(fe_args), FP(fe_other)};

NO_SITE static int fn_index(unsigned long ip)
{
	int i;
	for (i = 0; i < NFN; i++)
		if (ip == (unsigned long)(uintptr_t)fns[i])
			return i;
	return -1;
}

/* the program's own SIGTRAP handler, installed before the tracer's: an int3
 * that is not a site goes to it */
static _Atomic int user_traps;
NO_SITE static void user_trap(int sig)
{
	(void)sig;
	atomic_fetch_add(&user_traps, 1);
}

NO_SITE static int setup(void **state)
{
	(void)state;
	if (signal(SIGTRAP, user_trap) == SIG_ERR)
		return -1;
	if (ringbuf_ftrace_set_filter("fe_*") != NFN)
		return -1;
	if (ringbuf_ftrace_set_notrace("fe_other") != 1)
		return -1;
	return 0;
}

NO_SITE static int teardown(void **state)
{
	(void)state;
	ringbuf_ftrace_free();
	return 0;
}

/* ---- single thread ------------------------------------------------------- */

NO_SITE static void test_single(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	struct ringbuf_record rec;
	struct ringbuf_ftrace_stats st;
	unsigned n[NFN] = {0}, from_g = 0, other = 0, i;
	size_t total = 0, patched = 7;
	int r;
	(void)state;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	for (i = 0; i < NFN; i++)
		assert_memory_equal(fns[i], nop5, 5); /* what gcc emitted */
	assert_int_equal(ringbuf_ftrace_start(rb, 0, RINGBUF_FTRACE_FUNCTION), 0);
	r = ringbuf_ftrace_patch();
	if (r < 0)
		fail_msg("patch: %s (%s)", ringbuf_ftrace_patch_error(), strerror(errno));
	assert_int_equal(r, 4); /* fe_f, fe_g, fe_h, fe_args; fe_other is notrace */
	assert_string_equal(ringbuf_ftrace_patch_error(), "");
	ringbuf_ftrace_patch_sites(&total, &patched);
	assert_true(total >= NFN); /* every function of this file (main, cmocka's callbacks...) */
	assert_int_equal(patched, 4);
	for (i = 0; i < F_OTHER; i++)
		assert_int_equal(((const unsigned char *)fns[i])[0], 0xe8); /* call rel32 */
	assert_memory_equal(FP(fe_other), nop5, 5);
	assert_int_equal(ringbuf_ftrace_patch(), 4); /* again: nothing changes */

	for (i = 0; i < 10; i++)
		fe_f();
	for (i = 0; i < 7; i++)
		fe_g();
	for (i = 0; i < 3; i++)
		fe_h();
	for (i = 0; i < 5; i++)
		fe_other();
	for (i = 0; i < 2; i++)
		assert_true(call_args() == args_expected()); /* the argument registers survived */

	assert_int_equal(ringbuf_ftrace_unpatch(), 4);
	for (i = 0; i < NFN; i++)
		assert_memory_equal(fns[i], nop5, 5); /* the original bytes */
	ringbuf_ftrace_patch_sites(&total, &patched);
	assert_int_equal(patched, 0);
	assert_int_equal(ringbuf_ftrace_unpatch(), 0);
	fe_f(); /* not recorded: NOP again */
	fe_g();
	assert_true(call_args() == args_expected());
	ringbuf_ftrace_stop();

	while (ringbuf_consume(rb, 0, &rec) == 1) {
		struct ringbuf_ftrace_function e;
		int k;
		assert_true(rec.len >= sizeof e);
		memcpy(&e, rec.data, sizeof e);
		assert_int_equal(e.ent.type, RINGBUF_FTRACE_ID_FUNCTION);
		k = fn_index(e.ip);
		if (k < 0) {
			other++;
			continue;
		}
		n[k]++;
		assert_string_equal(ringbuf_ftrace_lookup((const void *)e.ip),
				    k == F_F ? "fe_f" : k == F_G ? "fe_g" : k == F_H ? "fe_h" : "fe_args");
		if (k == F_F && !strcmp(ringbuf_ftrace_lookup((const void *)e.parent_ip), "fe_g"))
			from_g++;
		if (k == F_ARGS)
			assert_string_equal(ringbuf_ftrace_lookup((const void *)e.parent_ip), "call_args");
	}
	assert_int_equal(other, 0);
	assert_int_equal(n[F_F], 17);
	assert_int_equal(n[F_G], 7);
	assert_int_equal(n[F_H], 3);
	assert_int_equal(n[F_ARGS], 2);
	assert_int_equal(n[F_OTHER], 0);
	assert_int_equal(from_g, 7);
	ringbuf_ftrace_get_stats(&st);
	assert_int_equal(st.dropped, 0);

	/* a filter that matches none of the set: nothing patched, nothing recorded */
	assert_int_equal(ringbuf_ftrace_set_filter("fe_nothing_is_called_this"), 0);
	assert_int_equal(ringbuf_ftrace_patch(), 0);
	assert_memory_equal(FP(fe_f), nop5, 5);
	assert_int_equal(ringbuf_ftrace_set_filter("fe_*"), NFN);
	ringbuf_destroy(rb);
}

/* ---- the int3 window, deterministically ---------------------------------- */

/* RINGBUF_TESTING's test point runs fe_f on the patching thread after P1 and
 * after P2: the site holds int3 then, the SIGTRAP handler emulates the call
 * (patching: recorded) or the NOP (unpatching: not recorded). An int3 that is
 * no site goes to the handler installed before the tracer's. */
static int tp_calls;
NO_SITE static void tp_run_site(int step)
{
	assert_true(step == 1 || step == 2);
	assert_int_equal(((const unsigned char *)FP(fe_f))[0], 0xcc);
	fe_f();
	tp_calls++;
}

NO_SITE static void test_trap(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	struct ringbuf_record rec;
	struct ringbuf_ftrace_stats a, b;
	unsigned nf = 0, other = 0;
	(void)state;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	assert_int_equal(ringbuf_ftrace_start(rb, 0, RINGBUF_FTRACE_FUNCTION), 0);
	ringbuf_ftrace_get_stats(&a);
	ringbuf_ftrace__patch_tp = tp_run_site;
	assert_int_equal(ringbuf_ftrace_patch(), 4);
	fe_f(); /* patched: recorded */
	assert_int_equal(ringbuf_ftrace_unpatch(), 4);
	ringbuf_ftrace__patch_tp = NULL;
	assert_int_equal(tp_calls, 4);
	ringbuf_ftrace_get_stats(&b);
	assert_int_equal(b.trapped - a.trapped, 4);
	assert_memory_equal(FP(fe_f), nop5, 5);
	ringbuf_ftrace_stop();
	while (ringbuf_consume(rb, 0, &rec) == 1) {
		struct ringbuf_ftrace_function e;
		memcpy(&e, rec.data, sizeof e);
		if (e.ip == (unsigned long)(uintptr_t)FP(fe_f))
			nf++;
		else
			other++;
	}
	assert_int_equal(other, 0);
	assert_int_equal(nf, 3); /* 2 emulated calls while patching, 1 patched call, 0 while unpatching */
	ringbuf_destroy(rb);
	/* not a site: the program's handler */
	assert_int_equal(atomic_load(&user_traps), 0);
	__asm__ __volatile__("int3");
	assert_int_equal(atomic_load(&user_traps), 1);
	ringbuf_ftrace_get_stats(&a);
	assert_int_equal(a.trapped, b.trapped);
}

/* ---- threads ------------------------------------------------------------- */

#define WORKERS 3
#define ROUNDS 60      /* each: a churn phase, then a quiescent phase */
#define TOGGLES 5      /* patch/unpatch pairs per churn phase: 600 operations in all */
#define NPHASE (2 * ROUNDS + 2)
#define CAP_CHURN 4000 /* iterations per worker and phase (bounds the buffer space) */
#define CAP_QUIET 300
#define MARK_TYPE 777

static _Atomic unsigned phase;
static _Atomic unsigned ack[WORKERS];
static _Atomic unsigned long calls[WORKERS][NPHASE], sigcalls[WORKERS][NPHASE], sigskip[WORKERS][NPHASE];
static _Atomic unsigned bad_args, sig_handled;
static _Thread_local int tl_w = -1;
static _Thread_local unsigned tl_phase;
static struct ringbuf *trb;

struct mark {
	struct ringbuf_trace_entry ent;
	uint32_t worker, phase;
};

NO_SITE static void on_usr1(int sig)
{
	(void)sig;
	if (tl_w < 0)
		return;
	/* a handler that interrupted the tracer's hook records nothing (its
	 * hook is skipped: >>design H1): counted apart (the tracer's own flag) */
	if (ringbuf_ftrace__t.busy)
		atomic_fetch_add_explicit(&sigskip[tl_w][tl_phase], 1, memory_order_relaxed);
	fe_h();
	atomic_fetch_add_explicit(&sigcalls[tl_w][tl_phase], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&sig_handled, 1, memory_order_relaxed);
}

NI static void *worker(void *arg)
{
	int w = (int)(intptr_t)arg;
	unsigned cur = ~0u;
	sigset_t usr, old;
	sigemptyset(&usr);
	sigaddset(&usr, SIGUSR1);
	tl_w = w;
	for (;;) {
		unsigned p = atomic_load_explicit(&phase, memory_order_acquire);
		if (p != cur) {
			struct mark m;
			/* the handler counts in tl_phase: the marker and tl_phase
			 * change together, with SIGUSR1 blocked */
			pthread_sigmask(SIG_BLOCK, &usr, &old);
			cur = p;
			tl_phase = p;
			memset(&m, 0, sizeof m);
			m.ent.type = MARK_TYPE;
			m.worker = (uint32_t)w;
			m.phase = p;
			if (ringbuf_write(trb, RINGBUF_CPU_THREAD, &m, sizeof m) != 0)
				atomic_fetch_add_explicit(&bad_args, 1000000, memory_order_relaxed);
			/* release: the calls counted in the old phase are done */
			atomic_store_explicit(&ack[w], p, memory_order_release);
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			if (p == NPHASE - 1)
				break;
		}
		if (atomic_load_explicit(&calls[w][p], memory_order_relaxed) >= ((p & 1) ? CAP_CHURN : CAP_QUIET)) {
			sched_yield();
			continue;
		}
		fe_f();
		fe_g();
		fe_h();
		if (call_args() != args_expected())
			atomic_fetch_add_explicit(&bad_args, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&calls[w][p], 1, memory_order_relaxed);
	}
	return NULL;
}

/* per worker and phase: events of each function, read back so far */
static unsigned long got[WORKERS][NPHASE][NFN];
static int buf_worker[16];
static unsigned buf_phase[16];
static unsigned long strays;

NO_SITE static void drain_threads(void)
{
	unsigned cpu;
	for (cpu = 0; cpu < ringbuf_ncpu(trb); cpu++) {
		struct ringbuf_record rec;
		while (ringbuf_consume(trb, cpu, &rec) == 1) {
			struct ringbuf_trace_entry ent;
			assert_int_equal(rec.lost, 0);
			memcpy(&ent, rec.data, sizeof ent);
			if (ent.type == MARK_TYPE) {
				struct mark m;
				memcpy(&m, rec.data, sizeof m);
				assert_true(m.worker < WORKERS && m.phase < NPHASE);
				assert_true(buf_worker[cpu] < 0 || buf_worker[cpu] == (int)m.worker);
				buf_worker[cpu] = (int)m.worker;
				buf_phase[cpu] = m.phase;
			} else {
				struct ringbuf_ftrace_function e;
				const char *parent;
				int k;
				assert_int_equal(ent.type, RINGBUF_FTRACE_ID_FUNCTION);
				memcpy(&e, rec.data, sizeof e);
				k = fn_index(e.ip);
				if (k < 0 || k == F_OTHER)
					fail_msg("an event of %#lx (%s): not a patched function", e.ip,
						 ringbuf_ftrace_lookup((const void *)e.ip));
				parent = ringbuf_ftrace_lookup((const void *)e.parent_ip);
				if (strcmp(parent, "worker") && strcmp(parent, "fe_g") && strcmp(parent, "call_args") &&
				    strcmp(parent, "on_usr1"))
					fail_msg("%s called from %#lx (%s)", ringbuf_ftrace_lookup((const void *)e.ip),
						 e.parent_ip, parent);
				if (buf_worker[cpu] < 0) { /* only a worker traces: its marker comes first */
					strays++;
					continue;
				}
				got[buf_worker[cpu]][buf_phase[cpu]][k]++;
			}
		}
	}
}

NO_SITE static void wait_acks(unsigned p)
{
	int w;
	for (w = 0; w < WORKERS; w++)
		while (atomic_load_explicit(&ack[w], memory_order_acquire) != p)
			sched_yield();
}

NO_SITE static void wait_progress(unsigned p, pthread_t *th)
{
	int w;
	for (w = 0; w < WORKERS; w++) {
		pthread_kill(th[w], SIGUSR1);
		while (atomic_load_explicit(&calls[w][p], memory_order_relaxed) < CAP_QUIET)
			sched_yield();
	}
}

NO_SITE static void test_threads(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct sigaction sa;
	struct ringbuf_ftrace_stats st;
	pthread_t th[WORKERS];
	unsigned r, p, i, ops = 0, quiet_on = 0, quiet_off = 1; /* phase 0: NOPs */
	bool was_on = false;
	unsigned long sig_total = 0, ev_total = 0;
	int w;
	(void)state;
	cfg.ncpu = WORKERS + 1;
	cfg.size_per_cpu = (size_t)4 << 20;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
	assert_int_equal(ringbuf_create(&cfg, &trb), 0);
	memset(buf_worker, -1, sizeof buf_worker);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask); /* never SIGTRAP: a blocked SIGTRAP from an int3 kills */
	sa.sa_flags = SA_RESTART;
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	assert_int_equal(ringbuf_ftrace_start(trb, RINGBUF_CPU_THREAD, RINGBUF_FTRACE_FUNCTION), 0);

	atomic_store(&phase, 0); /* phase 0: quiescent, all NOPs */
	for (w = 0; w < WORKERS; w++) {
		atomic_store(&ack[w], ~0u);
		assert_int_equal(pthread_create(&th[w], NULL, worker, (void *)(intptr_t)w), 0);
	}
	wait_acks(0);
	wait_progress(0, th);
	for (r = 0; r < ROUNDS; r++) {
		bool on = r & 1; /* the quiescent phase after this round: all patched or all NOPs */
		p = 2 * r + 1; /* churn */
		atomic_store_explicit(&phase, p, memory_order_release);
		wait_acks(p); /* nobody is still in the quiescent phase before */
		drain_threads();
		if (was_on) { /* after the acks: the quiescent phase's calls are done */
			assert_int_equal(ringbuf_ftrace_unpatch(), 4);
			ops++;
		}
		for (i = 0; i < TOGGLES; i++) {
			int a = ringbuf_ftrace_patch(), b;
			if (a != 4)
				fail_msg("patch: %d %s", a, ringbuf_ftrace_patch_error());
			pthread_kill(th[i % WORKERS], SIGUSR1);
			b = ringbuf_ftrace_unpatch();
			if (b != 4)
				fail_msg("unpatch: %d %s", b, ringbuf_ftrace_patch_error());
			ops += 2;
		}
		if (on) {
			assert_int_equal(ringbuf_ftrace_patch(), 4);
			ops++;
		}
		p = 2 * r + 2; /* quiescent */
		atomic_store_explicit(&phase, p, memory_order_release);
		wait_acks(p);
		wait_progress(p, th);
		if (on)
			quiet_on++;
		else
			quiet_off++;
		was_on = on;
	}
	atomic_store_explicit(&phase, NPHASE - 1, memory_order_release);
	for (w = 0; w < WORKERS; w++)
		pthread_join(th[w], NULL);
	if (was_on) {
		assert_int_equal(ringbuf_ftrace_unpatch(), 4);
		ops++;
	}
	ringbuf_ftrace_stop();
	drain_threads();
	signal(SIGUSR1, SIG_DFL);
	assert_int_equal(atomic_load(&bad_args), 0);
	assert_int_equal(strays, 0);

	/* the quiescent phases: exact, per thread and phase */
	for (w = 0; w < WORKERS; w++)
		for (p = 0; p < NPHASE - 1; p += 2) {
			unsigned long c = atomic_load(&calls[w][p]), s = atomic_load(&sigcalls[w][p]);
			unsigned long k = atomic_load(&sigskip[w][p]);
			bool on = p && ((p / 2 - 1) & 1);
			assert_true(c >= CAP_QUIET);
			if (got[w][p][F_F] != (on ? 2 * c : 0) || got[w][p][F_G] != (on ? c : 0) ||
			    got[w][p][F_H] != (on ? c + s - k : 0) || got[w][p][F_ARGS] != (on ? c : 0))
				fail_msg("worker %d phase %u (%s): %lu iterations, %lu handler calls (%lu in a hook); "
					 "events f %lu g %lu h %lu args %lu",
					 w, p, on ? "patched" : "NOPs", c, s, k, got[w][p][F_F], got[w][p][F_G],
					 got[w][p][F_H], got[w][p][F_ARGS]);
		}
	/* the churn phases: never more events than calls */
	for (w = 0; w < WORKERS; w++)
		for (p = 1; p < NPHASE; p += 2) {
			unsigned long c = atomic_load(&calls[w][p]), s = atomic_load(&sigcalls[w][p]);
			assert_true(got[w][p][F_F] <= 2 * c && got[w][p][F_G] <= c && got[w][p][F_H] <= c + s &&
				    got[w][p][F_ARGS] <= c);
			ev_total += got[w][p][F_F] + got[w][p][F_G] + got[w][p][F_H] + got[w][p][F_ARGS];
		}
	for (w = 0; w < WORKERS; w++)
		for (p = 0; p < NPHASE; p++)
			sig_total += atomic_load(&sigcalls[w][p]);
	ringbuf_ftrace_get_stats(&st);
	assert_int_equal(st.dropped, 0);
	printf("threads: %u patch/unpatch operations, %u quiescent phases patched and %u unpatched exact, "
	       "%lu handler calls of fe_h, %lu events in churn phases, %llu calls hit an int3 (emulated)\n",
	       ops, quiet_on, quiet_off, sig_total, ev_total, (unsigned long long)st.trapped);
	assert_true(ops >= 600);
	ringbuf_destroy(trb);
}

/* ---- trace-cmd report ---------------------------------------------------- */

NO_SITE static void test_tracedat(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	char path[] = "/tmp/ringbuf_fentry_XXXXXX", cmd[256], out[65536];
	size_t len = 0;
	FILE *p;
	int fd, i;
	(void)state;
	if (system("command -v trace-cmd >/dev/null 2>&1") != 0) {
		if (getenv("CI") && !strcmp(getenv("CI"), "true"))
			fail_msg("trace-cmd is not installed (required under CI=true)");
		printf("trace-cmd not installed: report check skipped\n");
		skip();
	}
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	assert_int_equal(ringbuf_ftrace_start(rb, 0, RINGBUF_FTRACE_FUNCTION), 0);
	assert_int_equal(ringbuf_ftrace_patch(), 4);
	fe_g();
	fe_h();
	assert_int_equal(ringbuf_ftrace_unpatch(), 4);
	ringbuf_ftrace_stop();
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(ringbuf_ftrace_save_tracedat(rb, NULL, path, NULL), 0);
	snprintf(cmd, sizeof cmd, "trace-cmd report %s 2>&1", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (len < sizeof out - 1 && fgets(out + len, (int)(sizeof out - len), p))
		len += strlen(out + len);
	pclose(p);
	unlink(path);
	ringbuf_destroy(rb);
	{
		/* trace-cmd's function plugin prints the ip's name (the parent
		 * with -O parent), in call order */
		static const char *const want[] = {" fe_g\n", " fe_f\n", " fe_h\n"};
		const char *at = strstr(out, "function:");
		for (i = 0; i < 3 && at; i++)
			if ((at = strstr(at, want[i])))
				at += strlen(want[i]);
		if (!at)
			fail_msg("trace-cmd report has no function events of fe_g, fe_f, fe_h in order:\n%s", out);
	}
}

#else /* !TEST_FENTRY */

NO_SITE static int setup(void **state)
{
	(void)state;
	return 0;
}
NO_SITE static int teardown(void **state)
{
	(void)state;
	return 0;
}
/* without the NOP sites: a clear error, nothing else */
NO_SITE static void refuses(void)
{
	size_t total = 1, patched = 1;
	assert_int_equal(ringbuf_ftrace_patch(), RINGBUF_ESYS);
	assert_true(ringbuf_ftrace_patch_error()[0] != 0);
	printf("patching refused as expected: %s\n", ringbuf_ftrace_patch_error());
	ringbuf_ftrace_patch_sites(&total, &patched);
	assert_int_equal(patched, 0);
	assert_true(call_args() == args_expected());
	ringbuf_ftrace_free();
	skip();
}
NO_SITE static void test_single(void **state) { (void)state; refuses(); }
NO_SITE static void test_threads(void **state) { (void)state; refuses(); }
NO_SITE static void test_trap(void **state) { (void)state; refuses(); }
NO_SITE static void test_tracedat(void **state) { (void)state; refuses(); }

#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single),
		cmocka_unit_test(test_trap),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_tracedat),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
