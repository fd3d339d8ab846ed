/* RINGBUF_DEBUG contract checks (SPEC section 3: "A debug build checks the
 * contract and reports violations"), each proven through the warn hook:
 *   - correct usage (nesting, discards, signal handlers, mapped modes, a CPU
 *     buffer handed from one thread to another) reports nothing;
 *   - commit of an event that is not the current one (the outer while a
 *     nested one is open: out of stack order);
 *   - discard of an event that is not the current one;
 *   - a second thread writing to a CPU index while another thread's event is
 *     open on it (a barrier holds the first event open);
 *   - commit / discard without a reservation (explicit index, and the mapped
 *     modes).
 * After a reported violation the offending call does nothing: the events
 * committed in the right order afterwards are all readable.
 */
#define _GNU_SOURCE 1
#define RINGBUF_DEBUG 1
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

/* ---- warn hook: async-signal-safe recorder ------------------------------- */

#define MAX_REPORTS 16
static _Atomic(int) g_nrep;
static const char *g_rep_what[MAX_REPORTS];
static unsigned g_rep_cpu[MAX_REPORTS];

static void warn_hook(const char *what, unsigned cpu, void *ctx)
{
	(void)ctx;
	int i = atomic_fetch_add(&g_nrep, 1);
	if (i < MAX_REPORTS) {
		g_rep_what[i] = what;
		g_rep_cpu[i] = cpu;
	}
}

static void reports_reset(void)
{
	atomic_store(&g_nrep, 0);
	memset(g_rep_what, 0, sizeof g_rep_what);
}

static void print_reports(void)
{
	int n = atomic_load(&g_nrep);
	for (int i = 0; i < n && i < MAX_REPORTS; i++)
		print_message("  report %d: \"%s\" (cpu %u)\n", i, g_rep_what[i] ? g_rep_what[i] : "?",
			      g_rep_cpu[i]);
}

/* Exactly one new report, on cpu, whose text contains word. */
static void expect_one_report(const char *word, unsigned cpu)
{
	print_reports();
	assert_int_equal(atomic_load(&g_nrep), 1);
	assert_non_null(g_rep_what[0]);
	if (!strstr(g_rep_what[0], word))
		fail_msg("report \"%s\" does not mention \"%s\"", g_rep_what[0], word);
	assert_int_equal(g_rep_cpu[0], cpu);
	reports_reset();
}

static void expect_no_report(void)
{
	print_reports();
	assert_int_equal(atomic_load(&g_nrep), 0);
}

/* ---- fixture --------------------------------------------------------------- */

static struct ringbuf *g_rb;

static int setup(void **state)
{
	(void)state;
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	cfg.ncpu = 2;
	cfg.size_per_cpu = 64 << 10;
	cfg.page_size = 1024;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
	if (ringbuf_create(&cfg, &g_rb) != 0)
		return -1;
	reports_reset();
	ringbuf_set_warn_hook(warn_hook, NULL);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	ringbuf_set_warn_hook(NULL, NULL);
	ringbuf__set_testpoint_hook(NULL, NULL);
	signal(SIGUSR1, SIG_DFL);
	ringbuf_destroy(g_rb);
	g_rb = NULL;
	return 0;
}

static uint32_t *res(unsigned cpu, uint32_t v)
{
	uint32_t *p = ringbuf_reserve(g_rb, cpu, 16);
	assert_non_null(p);
	p[0] = v;
	p[1] = p[2] = p[3] = ~v;
	return p;
}

/* The values of cpu's events, in order; returns how many. */
static int read_values(unsigned cpu, uint32_t *out, int max)
{
	struct ringbuf_record rec;
	int n = 0, r;
	while ((r = ringbuf_consume(g_rb, cpu, &rec)) == 1) {
		uint32_t v;
		assert_int_equal(rec.len, 16);
		memcpy(&v, rec.data, 4);
		if (n < max)
			out[n] = v;
		n++;
	}
	assert_int_equal(r, 0);
	return n;
}

static void expect_values(unsigned cpu, const uint32_t *want, int n)
{
	uint32_t got[64];
	int m = read_values(cpu, got, 64);
	assert_int_equal(m, n);
	for (int i = 0; i < n; i++)
		assert_int_equal(got[i], want[i]);
}

static void expect_nothing_in_flight(void)
{
	for (unsigned c = 0; c < 2; c++) {
		assert_int_equal(atomic_load(&ringbuf__cpu(g_rb, c)->committing), 0);
		assert_int_equal(atomic_load(&ringbuf__cpu(g_rb, c)->owner), 0);
	}
}

/* ---- correct usage ----------------------------------------------------------- */

static void sig_nested(int sig)
{
	(void)sig;
	int e = errno;
	uint32_t v = 100;
	uint32_t *p = ringbuf_reserve(g_rb, 0, 16);
	if (p) {
		memcpy(p, &v, 4);
		ringbuf_commit(g_rb, 0, p);
	}
	errno = e;
}

static void *other_cpu_writer(void *arg)
{
	uint32_t v = 200;
	(void)arg;
	uint32_t buf[4] = {v, ~v, ~v, ~v};
	ringbuf_write(g_rb, 1, buf, sizeof buf); /* another CPU index: no conflict */
	return NULL;
}

static void *later_writer(void *arg)
{
	(void)arg;
	uint32_t buf[4] = {6, 0, 0, 0};
	ringbuf_write(g_rb, 0, buf, sizeof buf); /* cpu 0, after the first thread finished */
	return NULL;
}

static void correct_usage_reports_nothing(void **state)
{
	(void)state;
	/* single event, nested in stack order, discards of the current event */
	uint32_t *a = res(0, 1);
	ringbuf_commit(g_rb, 0, a);
	a = res(0, 2);
	uint32_t *b = res(0, 3);
	uint32_t *c = res(0, 4);
	ringbuf_commit(g_rb, 0, c);
	ringbuf_discard(g_rb, 0, b);
	ringbuf_commit(g_rb, 0, a);
	a = res(0, 99);
	ringbuf_discard(g_rb, 0, a);
	uint32_t w[4] = {5, 0, 0, 0};
	assert_int_equal(ringbuf_write(g_rb, 0, w, sizeof w), 0);
	/* a signal handler nesting inside an open event */
	signal(SIGUSR1, sig_nested);
	a = res(0, 7);
	pthread_kill(pthread_self(), SIGUSR1);
	ringbuf_commit(g_rb, 0, a);
	/* another thread on another CPU index while an event is open on cpu 0 */
	pthread_t th;
	a = res(0, 8);
	assert_int_equal(pthread_create(&th, NULL, other_cpu_writer, NULL), 0);
	pthread_join(th, NULL);
	ringbuf_commit(g_rb, 0, a);
	/* cpu 0 handed over to another thread (synchronised by the join) */
	assert_int_equal(pthread_create(&th, NULL, later_writer, NULL), 0);
	pthread_join(th, NULL);
	expect_no_report();
	const uint32_t want0[] = {1, 2, 4, 5, 7, 100, 8, 6};
	expect_values(0, want0, 8);
	const uint32_t want1[] = {200};
	expect_values(1, want1, 1);
	expect_no_report();
}

static void *mapped_user(void *arg)
{
	(void)arg;
	unsigned modes[2] = {RINGBUF_CPU_THREAD, RINGBUF_CPU_CURRENT};
	for (int m = 0; m < 2; m++) {
		uint32_t *o = ringbuf_reserve(g_rb, modes[m], 16);
		uint32_t *i = ringbuf_reserve(g_rb, modes[m], 16);
		if (!o || !i)
			return (void *)1;
		o[0] = 10 + (uint32_t)m * 10;
		i[0] = 11 + (uint32_t)m * 10;
		ringbuf_commit(g_rb, modes[m], i);
		ringbuf_commit(g_rb, modes[m], o);
		uint32_t *d = ringbuf_reserve(g_rb, modes[m], 16);
		if (!d)
			return (void *)1;
		ringbuf_discard(g_rb, modes[m], d);
	}
	ringbuf_thread_release(g_rb);
	return NULL;
}

static void correct_usage_of_mapped_modes_reports_nothing(void **state)
{
	(void)state;
	pthread_t th;
	void *ret;
	assert_int_equal(pthread_create(&th, NULL, mapped_user, NULL), 0);
	pthread_join(th, &ret);
	assert_null(ret);
	expect_no_report();
	uint32_t got[8];
	int n = read_values(0, got, 8) + read_values(1, got, 8);
	assert_int_equal(n, 4);
	expect_nothing_in_flight();
}

/* ---- violations -------------------------------------------------------------- */

static void commit_of_outer_event_while_nested_one_is_open_is_reported(void **state)
{
	(void)state;
	uint32_t *outer = res(0, 1);
	uint32_t *inner = res(0, 2);
	ringbuf_commit(g_rb, 0, outer); /* out of stack order */
	expect_one_report("commit", 0);
	/* the bad commit did nothing: the right order still works */
	ringbuf_commit(g_rb, 0, inner);
	ringbuf_commit(g_rb, 0, outer);
	expect_no_report();
	const uint32_t want[] = {1, 2};
	expect_values(0, want, 2);
	expect_nothing_in_flight();
}

static void discard_of_event_that_is_not_current_is_reported(void **state)
{
	(void)state;
	uint32_t *outer = res(1, 1);
	uint32_t *inner = res(1, 2);
	ringbuf_discard(g_rb, 1, outer);
	expect_one_report("discard", 1);
	ringbuf_discard(g_rb, 1, inner);
	ringbuf_commit(g_rb, 1, outer);
	expect_no_report();
	const uint32_t want[] = {1};
	expect_values(1, want, 1);
	expect_nothing_in_flight();
}

/* A pointer into the current event's payload is not the event: the check
 * must compare with the payload address the event's header implies (4 bytes
 * after it for a small event, 8 for one that stores its length in array[0]),
 * not accept either. */
static void pointer_into_the_current_events_payload_is_reported(void **state)
{
	(void)state;
	for (unsigned off = 4; off <= 12; off += 8) {
		uint32_t *e = res(1, off);
		ringbuf_discard(g_rb, 1, (char *)e + off);
		int nd = atomic_load(&g_nrep);
		const char *wd = g_rep_what[0];
		reports_reset();
		ringbuf_commit(g_rb, 1, (char *)e + off);
		int nc = atomic_load(&g_nrep);
		const char *wc = g_rep_what[0];
		reports_reset();
		print_message("  payload + %u: discard reported %d time(s) (%s), commit %d time(s) (%s)\n", off,
			      nd, wd ? wd : "-", nc, wc ? wc : "-");
		if (nd == 0 || nc == 0) {
			/* the event was taken by the bad call: nothing left to commit */
			reports_reset();
		} else {
			ringbuf_commit(g_rb, 1, e);
			expect_no_report();
		}
		assert_int_equal(nd, 1);
		assert_int_equal(nc, 1);
	}
	const uint32_t want[] = {4, 12};
	expect_values(1, want, 2);
	expect_nothing_in_flight();
}

struct holder {
	pthread_barrier_t bar;
	unsigned cpu;
};

static void *open_event_holder(void *arg)
{
	struct holder *h = arg;
	uint32_t *p = ringbuf_reserve(g_rb, h->cpu, 16);
	pthread_barrier_wait(&h->bar); /* event open */
	pthread_barrier_wait(&h->bar); /* the other thread wrote */
	if (p) {
		p[0] = 1;
		ringbuf_commit(g_rb, h->cpu, p);
	}
	return NULL;
}

static void second_thread_writing_on_cpu_with_another_threads_event_open_is_reported(void **state)
{
	(void)state;
	struct holder h;
	pthread_t th;
	h.cpu = 0;
	pthread_barrier_init(&h.bar, NULL, 2);
	assert_int_equal(pthread_create(&th, NULL, open_event_holder, &h), 0);
	pthread_barrier_wait(&h.bar);
	/* this (main) thread writes to cpu 0 while the holder's event is open */
	uint32_t *p = ringbuf_reserve(g_rb, 0, 16);
	assert_non_null(p);
	p[0] = 2;
	ringbuf_commit(g_rb, 0, p);
	print_reports();
	int n = atomic_load(&g_nrep);
	pthread_barrier_wait(&h.bar);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&h.bar);
	assert_int_equal(n, 1);
	assert_non_null(g_rep_what[0]);
	assert_non_null(strstr(g_rep_what[0], "thread"));
	assert_int_equal(g_rep_cpu[0], 0);
	reports_reset();
	/* the same with ringbuf_write, and nothing for a write to the other CPU */
	pthread_barrier_init(&h.bar, NULL, 2);
	assert_int_equal(pthread_create(&th, NULL, open_event_holder, &h), 0);
	pthread_barrier_wait(&h.bar);
	uint32_t w[4] = {3, 0, 0, 0};
	assert_int_equal(ringbuf_write(g_rb, 1, w, sizeof w), 0);
	n = atomic_load(&g_nrep);
	w[0] = 4;
	assert_int_equal(ringbuf_write(g_rb, 0, w, sizeof w), 0);
	int n2 = atomic_load(&g_nrep);
	pthread_barrier_wait(&h.bar);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&h.bar);
	assert_int_equal(n, 0);
	assert_int_equal(n2, 1);
	expect_one_report("thread", 0);
	/* once the holder committed, cpu 0 is free for this thread: no report */
	w[0] = 5;
	assert_int_equal(ringbuf_write(g_rb, 0, w, sizeof w), 0);
	expect_no_report();
	uint32_t got[8];
	assert_int_equal(read_values(0, got, 8), 5);
	expect_nothing_in_flight();
}

static void commit_or_discard_without_reservation_is_reported(void **state)
{
	(void)state;
	uint32_t fake[8] = {0};
	ringbuf_commit(g_rb, 0, &fake[1]);
	expect_one_report("commit", 0);
	ringbuf_discard(g_rb, 1, &fake[1]);
	expect_one_report("discard", 1);
	/* a pointer to an event already committed */
	uint32_t *p = res(0, 1);
	ringbuf_commit(g_rb, 0, p);
	expect_no_report();
	ringbuf_commit(g_rb, 0, p);
	expect_one_report("commit", 0);
	/* nothing happened: one event, nothing in flight, writes still work */
	uint32_t w[4] = {2, 0, 0, 0};
	assert_int_equal(ringbuf_write(g_rb, 0, w, sizeof w), 0);
	expect_no_report();
	const uint32_t want[] = {1, 2};
	expect_values(0, want, 2);
	expect_nothing_in_flight();
}

static void *mapped_commit_without_reservation(void *arg)
{
	int *what = arg;
	uint32_t fake[8] = {0};
	if (*what == 0)
		ringbuf_commit(g_rb, RINGBUF_CPU_CURRENT, &fake[1]);
	else if (*what == 1)
		ringbuf_commit(g_rb, RINGBUF_CPU_THREAD, &fake[1]); /* the thread never wrote */
	else {
		uint32_t w[4] = {9, 0, 0, 0};
		ringbuf_write(g_rb, RINGBUF_CPU_THREAD, w, sizeof w); /* claims a buffer */
		ringbuf_discard(g_rb, RINGBUF_CPU_THREAD, &fake[1]);
		ringbuf_thread_release(g_rb);
	}
	return NULL;
}

static void mapped_mode_commit_without_reservation_is_reported(void **state)
{
	(void)state;
	pthread_t th;
	int what;
	what = 0;
	assert_int_equal(pthread_create(&th, NULL, mapped_commit_without_reservation, &what), 0);
	pthread_join(th, NULL);
	print_reports();
	assert_int_equal(atomic_load(&g_nrep), 1);
	reports_reset();
	what = 2; /* claimed, nothing reserved */
	assert_int_equal(pthread_create(&th, NULL, mapped_commit_without_reservation, &what), 0);
	pthread_join(th, NULL);
	print_reports();
	assert_int_equal(atomic_load(&g_nrep), 1);
	assert_non_null(strstr(g_rep_what[0], "discard"));
	reports_reset();
	what = 1; /* RINGBUF_CPU_THREAD, no claim and no reservation */
	assert_int_equal(pthread_create(&th, NULL, mapped_commit_without_reservation, &what), 0);
	pthread_join(th, NULL);
	print_reports();
	assert_int_equal(atomic_load(&g_nrep), 1);
	reports_reset();
	expect_nothing_in_flight();
}

/* RINGBUF_CPU_CURRENT: the same out-of-order commit; after the report the
 * right order must still commit both events and free the buffer. */
static void *current_out_of_order(void *arg)
{
	int *n_after = arg;
	uint32_t *outer = ringbuf_reserve(g_rb, RINGBUF_CPU_CURRENT, 16);
	uint32_t *inner = ringbuf_reserve(g_rb, RINGBUF_CPU_CURRENT, 16);
	if (!outer || !inner)
		return (void *)1;
	outer[0] = 1;
	inner[0] = 2;
	ringbuf_commit(g_rb, RINGBUF_CPU_CURRENT, outer); /* violation */
	*n_after = atomic_load(&g_nrep);
	ringbuf_commit(g_rb, RINGBUF_CPU_CURRENT, inner);
	ringbuf_commit(g_rb, RINGBUF_CPU_CURRENT, outer);
	return NULL;
}

static void current_mode_out_of_order_commit_is_reported_and_harmless(void **state)
{
	(void)state;
	pthread_t th;
	void *ret;
	int n_after = -1;
	assert_int_equal(pthread_create(&th, NULL, current_out_of_order, &n_after), 0);
	pthread_join(th, &ret);
	assert_null(ret);
	print_reports();
	assert_int_equal(n_after, 1);
	assert_non_null(strstr(g_rep_what[0], "commit"));
	uint32_t c0 = atomic_load(&ringbuf__cpu(g_rb, 0)->committing),
		 c1 = atomic_load(&ringbuf__cpu(g_rb, 1)->committing);
	uint32_t o0 = atomic_load(&ringbuf__cpu(g_rb, 0)->owner), o1 = atomic_load(&ringbuf__cpu(g_rb, 1)->owner);
	uint32_t got[8];
	int n = read_values(0, got, 8) + read_values(1, got, 8);
	print_message("  after the report, committed in order: %d reports in all, committing %u %u, "
		      "owner %#x %#x, %d events readable\n",
		      atomic_load(&g_nrep), c0, c1, o0, o1, n);
	assert_int_equal(atomic_load(&g_nrep), 1);
	assert_int_equal(c0 + c1, 0);
	assert_int_equal(o0 + o1, 0);
	assert_int_equal(n, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(correct_usage_reports_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(correct_usage_of_mapped_modes_reports_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(commit_of_outer_event_while_nested_one_is_open_is_reported, setup,
						teardown),
		cmocka_unit_test_setup_teardown(discard_of_event_that_is_not_current_is_reported, setup, teardown),
		cmocka_unit_test_setup_teardown(pointer_into_the_current_events_payload_is_reported, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			second_thread_writing_on_cpu_with_another_threads_event_open_is_reported, setup, teardown),
		cmocka_unit_test_setup_teardown(commit_or_discard_without_reservation_is_reported, setup, teardown),
		cmocka_unit_test_setup_teardown(mapped_mode_commit_without_reservation_is_reported, setup, teardown),
		cmocka_unit_test_setup_teardown(current_mode_out_of_order_commit_is_reported_and_harmless, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
