/* test_clock_inline.c - the TSC clock, the inline write path, per-page entry counts
 * SPDX-License-Identifier: MIT
 *
 * TSC CLOCK (x86-64; skipped elsewhere). Each event is written between two
 * readings of CLOCK_MONOTONIC (and of the TSC): the time a reader reports must
 * fall inside that bracket, give or take TSC_TOL_NS for the calibration, and
 * the gap between two events inside the bracket of the gap, give or take 1%.
 * Brackets rather than one reading: a writer preempted between clock_gettime
 * and its reserve (a loaded machine) only widens its own bracket, it never
 * makes a correct time stamp fail.
 *   - consume, peek, the iterator (one CPU and merged), stats oldest_event_ts,
 *     ringbuf_time_stamp (ns, like the readers);
 *   - consume_merged and the merged iterator over 2 CPUs, in time order;
 *   - a raw page (ringbuf_read_page, ringbuf__walk_pages) holds TSC cycles,
 *     and ringbuf_ts_to_ns() of them is what the readers report;
 *   - a gap > 134 ms (a TIME_EXTEND in cycles) converts right;
 *   - a TSC block in a file converts the same stamps to the same ns after it is
 *     closed and opened again (read-only, RECOVER, RDWR with more writes);
 *   - ringbuf_set_clock(rb, RINGBUF_CLOCK_TSC, NULL) on a fresh default buffer;
 *   - ringbuf_ts_to_ns() is the identity for the default and user clocks.
 * INLINE FAST PATH. One scripted sequence (sizes from 4 bytes to the largest
 * event, page crossings, time extends, rolled-back and padded discards,
 * nested writers from signal handlers raised with raise() between reserve and
 * commit, a signal inside the handler's event, consumes and page reads), with
 * a counter clock, is written through the macros, through
 * (ringbuf_reserve)/(ringbuf_commit), through function pointers, and mixed
 * (macro reserve + function commit and the reverse): the pages, the events
 * read and the statistics must be byte-identical, for several geometries
 * (overwrite, producer/consumer, ALIGN8, absolute time stamps), and the
 * accounting below must hold for each.
 * ENTRY COUNTS (bpage.entries, what a head push adds to overrun). Overwrite
 * mode, 256-byte pages: random writes, discards, nested writers, consumes and
 * page reads, several seeds, also with nested writers injected at the write
 * path's test points: committed == read + overrun exactly, failed reserves ==
 * the drop counters, each lost count equals the committed events skipped at
 * that place, and the lost counts add up to overrun + drops (drops after the
 * last page move are carried by one more event). A hand-built sequence
 * checks every head push against the data events of the pushed page (counted
 * independently with tests/pagewalk.h) and against known values, including a
 * page refilled in a new lap and pages with rolled-back and padded discards;
 * and ringbuf_recover() recounts a page whose writer was "killed".
 */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <errno.h>
#include <signal.h>
#include <sys/time.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "pagewalk.h"

#if !defined(ringbuf_reserve) || !defined(ringbuf_commit)
#error "in C, ringbuf_reserve and ringbuf_commit are macros over the inline fast path"
#endif

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_TSC 1
#else
#define HAVE_TSC 0
#endif

typedef unsigned long long ull;

/* ---- fixtures ----------------------------------------------------------- */

static struct ringbuf *g_rb;
static void *g_mem; /* ringbuf_init_in() memory of g_rb, if any */
static char g_dir[64], g_path[128];

static void restore_signals(void)
{
	signal(SIGUSR1, SIG_DFL);
	signal(SIGUSR2, SIG_DFL);
}

static int teardown(void **state)
{
	(void)state;
	ringbuf__set_testpoint_hook(NULL, NULL);
	restore_signals();
	ringbuf_destroy(g_rb);
	g_rb = NULL;
	free(g_mem);
	g_mem = NULL;
	if (g_path[0]) {
		unlink(g_path);
		g_path[0] = 0;
	}
	if (g_dir[0]) {
		rmdir(g_dir);
		g_dir[0] = 0;
	}
	return 0;
}

static void keep(struct ringbuf *rb)
{
	if (g_rb != rb)
		ringbuf_destroy(g_rb);
	g_rb = rb;
}

static void drop(void)
{
	ringbuf_destroy(g_rb);
	g_rb = NULL;
}

static uint64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void sleep_ms(unsigned ms)
{
	struct timespec t = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
	while (nanosleep(&t, &t) != 0 && errno == EINTR)
		;
}

static struct ringbuf_stats stats(struct ringbuf *rb, unsigned cpu)
{
	struct ringbuf_stats st;
	assert_int_equal(ringbuf_stats_cpu(rb, cpu, &st), 0);
	return st;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* ---- raw pages, parsed independently ------------------------------------ */

#define MAXRAW 256
struct raw_coll {
	unsigned n, nextend, nstamp, npad, pages;
	uint32_t seq[MAXRAW];
	uint64_t ts[MAXRAW]; /* running (raw) time stamp of each data record */
};

static int raw_rec(const struct pw_record *r, void *ctx)
{
	struct raw_coll *c = ctx;
	if (r->kind == PW_EXTEND)
		c->nextend++;
	else if (r->kind == PW_STAMP)
		c->nstamp++;
	else if (r->kind == PW_PADDING)
		c->npad++;
	if (r->kind != PW_DATA)
		return 0;
	if (c->n >= MAXRAW || r->payload_len < 4)
		return 1;
	memcpy(&c->seq[c->n], r->payload, 4);
	c->ts[c->n++] = r->ts;
	return 0;
}

static void raw_page(const void *page, size_t ps, struct raw_coll *c)
{
	const char *err = NULL;
	int rc = pw_walk_page(page, ps, false, raw_rec, c, NULL, &err);
	if (rc != 0)
		fail_msg("page walk failed (%d): %s", rc, err ? err : "callback stopped");
	c->pages++;
}

static int raw_walk_cb(const void *page, size_t ps, int role, void *ctx)
{
	(void)role;
	raw_page(page, ps, ctx);
	return 0;
}

/* Every record of cpu's pages (reader page, then head .. tail), in place. */
static void raw_walk(struct ringbuf *rb, unsigned cpu, struct raw_coll *c)
{
	memset(c, 0, sizeof *c);
	assert_int_equal(ringbuf__walk_pages(rb, cpu, raw_walk_cb, c), 0);
}

/* ==== TSC clock ========================================================== */

#define TSC_TOL_NS 100000u /* calibration error allowed (seen: a few us) */
#define TSC_SLOP_CYC 4000u /* rdtsc is not serializing */

struct bracket {
	uint64_t lo, hi;   /* CLOCK_MONOTONIC ns before the reserve, after the commit */
	uint64_t clo, chi; /* the TSC, inside those */
};

#define MAXEV 64
static struct bracket br[MAXEV];

/* Write event seq (payload: seq, then bytes derived from it) and bracket it. */
static void tsc_write(struct ringbuf *rb, unsigned cpu, uint32_t seq, size_t len)
{
	uint8_t *p;
	assert_true(seq < MAXEV && len >= 4);
	br[seq].lo = mono_ns();
	br[seq].clo = ringbuf_clock_tsc(NULL);
	p = ringbuf_reserve(rb, cpu, len);
	assert_non_null(p);
	memcpy(p, &seq, 4);
	memset(p + 4, (int)(seq * 3u + 1u), len - 4);
	ringbuf_commit(rb, cpu, p);
	br[seq].chi = ringbuf_clock_tsc(NULL);
	br[seq].hi = mono_ns();
}

static uint32_t seq_of(const struct ringbuf_record *rec)
{
	uint32_t s;
	assert_true(rec->len >= 4);
	memcpy(&s, rec->data, 4);
	assert_true(s < MAXEV);
	return s;
}

/* A time stamp in ns, as a reader reports it, for event seq. */
static void check_ns(uint64_t ts, uint32_t seq, const char *what)
{
	const struct bracket *b = &br[seq];
	if (ts + TSC_TOL_NS < b->lo || ts > b->hi + TSC_TOL_NS)
		fail_msg("%s: event %u stamped %llu ns, written between %llu and %llu ns (%+lld ns outside)",
			 what, seq, (ull)ts, (ull)b->lo, (ull)b->hi,
			 ts < b->lo ? -(long long)(b->lo - ts) : (long long)(ts - b->hi));
}

/* A raw time stamp from a page, in TSC cycles, for event seq. */
static void check_cycles(uint64_t raw, uint32_t seq, const char *what)
{
	const struct bracket *b = &br[seq];
	if (raw + TSC_SLOP_CYC < b->clo || raw > b->chi + TSC_SLOP_CYC)
		fail_msg("%s: event %u has raw stamp %llu, the TSC read %llu .. %llu around it", what, seq,
			 (ull)raw, (ull)b->clo, (ull)b->chi);
}

/* Event b was written after event a: the difference of their time stamps lies
 * in the bracket of the gap (earliest end of a to latest start of b, and the
 * reverse), give or take 1% (and 1 us). */
static void check_gap(uint64_t ta, uint32_t a, uint64_t tb, uint32_t b, const char *what)
{
	uint64_t lo = br[b].lo > br[a].hi ? br[b].lo - br[a].hi : 0;
	uint64_t hi = br[b].hi - br[a].lo;
	uint64_t slack = hi / 100 + 1000, d;
	if (tb < ta)
		fail_msg("%s: event %u (%llu ns) is older than event %u (%llu ns)", what, b, (ull)tb, a,
			 (ull)ta);
	d = tb - ta;
	if (d + slack < lo || d > hi + slack)
		fail_msg("%s: events %u -> %u are %llu ns apart, clock_gettime says %llu .. %llu ns", what, a, b,
			 (ull)d, (ull)lo, (ull)hi);
}

static struct ringbuf *mk_clock(unsigned ncpu, size_t page, unsigned npages, ringbuf_clock_fn clock)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	cfg.ncpu = ncpu;
	cfg.page_size = page;
	cfg.size_per_cpu = page * npages;
	cfg.clock = clock;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	keep(rb);
	return rb;
}

#define SKIP_WITHOUT_TSC()                  \
	do {                                \
		if (!HAVE_TSC) {            \
			skip();             \
			return;             \
		}                           \
	} while (0)

/* Every reader of one CPU, and raw pages. */
static void tsc_readers(void **state)
{
	enum { N = 24, M = 8 };
	struct ringbuf *rb;
	struct ringbuf_record rec;
	struct ringbuf_stats st, all;
	struct ringbuf_iter *it;
	struct raw_coll rc;
	uint64_t ts[N + M], raw0;
	unsigned char page[4096];
	uint32_t i;
	int r;
	(void)state;
	SKIP_WITHOUT_TSC();
	rb = mk_clock(1, 4096, 16, RINGBUF_CLOCK_TSC);
	assert_string_equal(ringbuf_clock_name(rb), "x86-tsc");
	for (i = 0; i < N; i++) {
		if (i % 3 == 2)
			sleep_ms(1 + i % 5);
		tsc_write(rb, 0, i, 4 + (i * 37) % 150);
	}

	/* ringbuf_time_stamp: "now" in the unit readers report (ns) */
	{
		uint64_t lo = mono_ns(), now = ringbuf_time_stamp(rb), hi = mono_ns();
		if (now + TSC_TOL_NS < lo || now > hi + TSC_TOL_NS)
			fail_msg("ringbuf_time_stamp %llu, clock_gettime %llu .. %llu", (ull)now, (ull)lo, (ull)hi);
	}

	/* statistics: the oldest page starts with event 0 */
	st = stats(rb, 0);
	assert_int_equal(st.entries, N);
	check_ns(st.oldest_event_ts, 0, "stats_cpu oldest_event_ts");
	assert_int_equal(ringbuf_stats(rb, &all), 0);
	assert_int_equal(all.oldest_event_ts, st.oldest_event_ts);

	/* peek: event 0, twice, the same */
	assert_int_equal(ringbuf_peek(rb, 0, &rec), 1);
	assert_int_equal(seq_of(&rec), 0);
	check_ns(rec.ts, 0, "peek");
	ts[0] = rec.ts;
	assert_int_equal(st.oldest_event_ts, ts[0]);
	assert_int_equal(ringbuf_peek(rb, 0, &rec), 1);
	assert_int_equal(rec.ts, ts[0]);

	/* the iterator of CPU 0 */
	assert_int_equal(ringbuf_iter_start(rb, 0, &it), 0);
	for (i = 0; i < N; i++) {
		assert_int_equal(ringbuf_iter_next(it, &rec), 1);
		assert_int_equal(seq_of(&rec), i);
		check_ns(rec.ts, i, "iter");
		ts[i] = rec.ts;
		if (i)
			check_gap(ts[i - 1], i - 1, ts[i], i, "iter");
	}
	assert_int_equal(ringbuf_iter_next(it, &rec), 0);
	ringbuf_iter_finish(it);

	/* the merged iterator (one CPU): the same */
	assert_int_equal(ringbuf_iter_start(rb, RINGBUF_ALL_CPUS, &it), 0);
	for (i = 0; i < N; i++) {
		assert_int_equal(ringbuf_iter_next(it, &rec), 1);
		assert_int_equal(seq_of(&rec), i);
		assert_int_equal(rec.ts, ts[i]);
	}
	assert_int_equal(ringbuf_iter_next(it, &rec), 0);
	ringbuf_iter_finish(it);

	/* consume: the same */
	for (i = 0; i < N; i++) {
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
		assert_int_equal(seq_of(&rec), i);
		assert_int_equal(rec.ts, ts[i]);
		assert_int_equal(rec.lost, 0);
	}
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 0);

	/* more events, then a raw page: TSC cycles, converted by ringbuf_ts_to_ns
	 * to exactly what the readers report */
	for (i = N; i < N + M; i++) {
		if (i % 2)
			sleep_ms(2);
		tsc_write(rb, 0, i, 8 + i);
	}
	assert_int_equal(ringbuf_iter_start(rb, 0, &it), 0);
	for (i = N; i < N + M; i++) {
		assert_int_equal(ringbuf_iter_next(it, &rec), 1);
		assert_int_equal(seq_of(&rec), i);
		check_ns(rec.ts, i, "iter (second batch)");
		ts[i] = rec.ts;
	}
	ringbuf_iter_finish(it);
	r = ringbuf_read_page(rb, 0, page, sizeof page, 0);
	assert_true(r > 0);
	memset(&rc, 0, sizeof rc);
	raw_page(page, sizeof page, &rc);
	assert_int_equal(rc.n, M);
	memcpy(&raw0, page, 8);
	check_cycles(raw0, N, "read_page time_stamp");
	assert_int_equal(ringbuf_ts_to_ns(rb, raw0), ts[N]);
	for (i = 0; i < M; i++) {
		assert_int_equal(rc.seq[i], N + i);
		check_cycles(rc.ts[i], N + i, "read_page record");
		assert_int_equal(ringbuf_ts_to_ns(rb, rc.ts[i]), ts[N + i]);
	}
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 0);
	drop();
}

/* Gaps of more than 2^27 ns (and far more than 2^27 cycles): TIME_EXTEND. */
static void tsc_long_gap(void **state)
{
	struct ringbuf *rb;
	struct ringbuf_record rec;
	struct raw_coll rc;
	uint64_t ts[4];
	uint32_t i;
	(void)state;
	SKIP_WITHOUT_TSC();
	rb = mk_clock(1, 4096, 4, RINGBUF_CLOCK_TSC);
	tsc_write(rb, 0, 0, 16);
	sleep_ms(150);
	tsc_write(rb, 0, 1, 16);
	tsc_write(rb, 0, 2, 100);
	sleep_ms(140);
	tsc_write(rb, 0, 3, 40);

	raw_walk(rb, 0, &rc);
	assert_int_equal(rc.n, 4);
	assert_true(rc.nextend >= 2); /* before events 1 and 3 */
	assert_true(rc.ts[1] - rc.ts[0] > RINGBUF__TS_MASK);
	for (i = 0; i < 4; i++) {
		assert_int_equal(rc.seq[i], i);
		check_cycles(rc.ts[i], i, "page record");
	}
	for (i = 0; i < 4; i++) {
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
		assert_int_equal(seq_of(&rec), i);
		check_ns(rec.ts, i, "consume");
		assert_int_equal(rec.ts, ringbuf_ts_to_ns(rb, rc.ts[i]));
		ts[i] = rec.ts;
		if (i)
			check_gap(ts[i - 1], i - 1, ts[i], i, "consume");
	}
	assert_true(ts[1] - ts[0] > 140000000u);
	drop();
}

/* Two CPUs: the merged consumer and the merged iterator go by time. */
static void tsc_merged(void **state)
{
	enum { N = 30 };
	struct ringbuf *rb;
	struct ringbuf_record rec;
	struct ringbuf_stats st;
	struct ringbuf_iter *it;
	unsigned cpu_of[N], first1 = N;
	uint64_t ts[N];
	uint32_t i;
	(void)state;
	SKIP_WITHOUT_TSC();
	rb = mk_clock(2, 4096, 8, RINGBUF_CLOCK_TSC);
	for (i = 0; i < N; i++) {
		cpu_of[i] = (i % 5 == 1 || i % 5 == 2 || i % 7 == 0) ? 1u : 0u;
		if (cpu_of[i] == 1 && first1 == N)
			first1 = i;
		if (i % 4 == 3)
			sleep_ms(1 + i % 3);
		tsc_write(rb, cpu_of[i], i, 8 + i % 40);
	}
	assert_true(cpu_of[0] == 1 && first1 == 0); /* the pattern puts event 0 on CPU 1 */
	st = stats(rb, 0);
	check_ns(st.oldest_event_ts, 3, "stats_cpu(0) oldest_event_ts"); /* CPU 0's first: event 3 */
	assert_int_equal(cpu_of[3], 0);
	assert_true(cpu_of[1] == 1 && cpu_of[2] == 1);
	st = stats(rb, 1);
	check_ns(st.oldest_event_ts, 0, "stats_cpu(1) oldest_event_ts");
	assert_int_equal(ringbuf_stats(rb, &st), 0);
	check_ns(st.oldest_event_ts, 0, "stats oldest_event_ts");
	assert_int_equal(st.entries, N);

	assert_int_equal(ringbuf_iter_start(rb, RINGBUF_ALL_CPUS, &it), 0);
	for (i = 0; i < N; i++) {
		assert_int_equal(ringbuf_iter_next(it, &rec), 1);
		if (seq_of(&rec) != i)
			fail_msg("merged iterator: event %u where %u was expected", seq_of(&rec), i);
		assert_int_equal(rec.cpu, cpu_of[i]);
		check_ns(rec.ts, i, "merged iter");
		ts[i] = rec.ts;
		if (i)
			check_gap(ts[i - 1], i - 1, ts[i], i, "merged iter");
	}
	assert_int_equal(ringbuf_iter_next(it, &rec), 0);
	ringbuf_iter_finish(it);

	for (i = 0; i < N; i++) {
		assert_int_equal(ringbuf_consume_merged(rb, &rec), 1);
		if (seq_of(&rec) != i)
			fail_msg("consume_merged: event %u where %u was expected", seq_of(&rec), i);
		assert_int_equal(rec.cpu, cpu_of[i]);
		assert_int_equal(rec.ts, ts[i]);
		assert_int_equal(rec.lost, 0);
	}
	assert_int_equal(ringbuf_consume_merged(rb, &rec), 0);
	drop();
}

/* A TSC block in a file: kind and calibration are in the block. */
static void tsc_file(void **state)
{
	enum { N = 10, NS = 5 };
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	struct ringbuf_record rec;
	uint64_t raw[NS], want[NS], ts[N + 2], lo, hi;
	static const unsigned opens[2] = {0, RINGBUF_OPEN_RECOVER};
	unsigned k, o;
	uint32_t i;
	(void)state;
	SKIP_WITHOUT_TSC();
	snprintf(g_dir, sizeof g_dir, "/tmp/rb-tsc-XXXXXX");
	assert_non_null(mkdtemp(g_dir));
	snprintf(g_path, sizeof g_path, "%s/tsc.rb", g_dir);
	cfg.page_size = 4096;
	cfg.size_per_cpu = 8 * 4096;
	cfg.clock = RINGBUF_CLOCK_TSC;
	assert_int_equal(ringbuf_create_file(g_path, &cfg, &rb), 0);
	keep(rb);
	assert_string_equal(ringbuf_clock_name(rb), "x86-tsc");
	for (i = 0; i < N; i++) {
		if (i % 3 == 1)
			sleep_ms(2);
		tsc_write(rb, 0, i, 12 + i * 5);
	}
	lo = mono_ns();
	raw[0] = ringbuf_clock_tsc(NULL);
	hi = mono_ns();
	raw[1] = raw[0] - 1000000u;
	raw[2] = raw[0] + 3000000000ull;
	raw[3] = br[0].clo;
	raw[4] = 0;
	for (k = 0; k < NS; k++)
		want[k] = ringbuf_ts_to_ns(rb, raw[k]);
	assert_true(want[0] + TSC_TOL_NS >= lo && want[0] <= hi + TSC_TOL_NS);
	assert_true(want[2] > want[0] && want[1] < want[0]);
	drop();

	/* read-only, then a recovered private copy: same conversion, same events */
	for (o = 0; o < 2; o++) {
		assert_int_equal(ringbuf_open_file(g_path, opens[o], &rb), 0);
		keep(rb);
		assert_string_equal(ringbuf_clock_name(rb), "x86-tsc");
		for (k = 0; k < NS; k++)
			assert_int_equal(ringbuf_ts_to_ns(rb, raw[k]), want[k]);
		for (i = 0; i < N; i++) {
			assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
			assert_int_equal(seq_of(&rec), i);
			check_ns(rec.ts, i, o ? "open RECOVER: consume" : "open read-only: consume");
			if (o == 0)
				ts[i] = rec.ts;
			else
				assert_int_equal(rec.ts, ts[i]);
			if (i)
				check_gap(ts[i - 1], i - 1, rec.ts, i, "open: consume");
		}
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 0);
		drop();
	}

	/* RDWR: the writers keep the TSC (the kind is in the block, whatever the
	 * process-local clock pointer says), and setting the TSC clock again, as
	 * ringbuf_open_file's documentation asks for clocks other than "mono",
	 * keeps the stored calibration */
	assert_int_equal(ringbuf_open_file(g_path, RINGBUF_OPEN_RDWR, &rb), 0);
	keep(rb);
	for (k = 0; k < NS; k++)
		assert_int_equal(ringbuf_ts_to_ns(rb, raw[k]), want[k]);
	sleep_ms(2);
	tsc_write(rb, 0, N, 20);
	assert_int_equal(ringbuf_set_clock(rb, RINGBUF_CLOCK_TSC, NULL), 0);
	for (k = 0; k < NS; k++)
		assert_int_equal(ringbuf_ts_to_ns(rb, raw[k]), want[k]);
	sleep_ms(3);
	tsc_write(rb, 0, N + 1, 24);
	for (i = 0; i < N + 2; i++) {
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
		assert_int_equal(seq_of(&rec), i);
		check_ns(rec.ts, i, "open RDWR: consume");
		if (i < N)
			assert_int_equal(rec.ts, ts[i]);
		ts[i] = rec.ts;
		if (i)
			check_gap(ts[i - 1], i - 1, ts[i], i, "open RDWR: consume");
	}
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 0);
	drop();
}

/* ringbuf_set_clock(rb, RINGBUF_CLOCK_TSC, NULL) on a fresh default buffer. */
static void tsc_set_clock(void **state)
{
	enum { N = 10 };
	struct ringbuf *rb;
	struct ringbuf_record rec;
	struct raw_coll rc;
	uint64_t ts[N], lo, hi, c, n;
	uint32_t i;
	(void)state;
	SKIP_WITHOUT_TSC();
	rb = mk_clock(1, 4096, 8, NULL);
	assert_string_equal(ringbuf_clock_name(rb), "mono");
	assert_int_equal(ringbuf_ts_to_ns(rb, 123456789u), 123456789u);
	assert_int_equal(ringbuf_set_clock(rb, RINGBUF_CLOCK_TSC, NULL), 0);
	lo = mono_ns();
	c = ringbuf_clock_tsc(NULL);
	hi = mono_ns();
	n = ringbuf_ts_to_ns(rb, c);
	if (n + TSC_TOL_NS < lo || n > hi + TSC_TOL_NS)
		fail_msg("ts_to_ns(now in cycles) = %llu, clock_gettime %llu .. %llu", (ull)n, (ull)lo, (ull)hi);
	for (i = 0; i < N; i++) {
		if (i % 2)
			sleep_ms(1 + i % 4);
		tsc_write(rb, 0, i, 4 + i * 9);
	}
	raw_walk(rb, 0, &rc);
	assert_int_equal(rc.n, N);
	for (i = 0; i < N; i++)
		check_cycles(rc.ts[i], i, "page record after set_clock");
	for (i = 0; i < N; i++) {
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
		assert_int_equal(seq_of(&rec), i);
		check_ns(rec.ts, i, "consume after set_clock");
		assert_int_equal(rec.ts, ringbuf_ts_to_ns(rb, rc.ts[i]));
		ts[i] = rec.ts;
		if (i)
			check_gap(ts[i - 1], i - 1, ts[i], i, "consume after set_clock");
	}
	drop();
}

static uint64_t fixed_now;
static uint64_t fixed_clock(void *ctx)
{
	(void)ctx;
	return fixed_now;
}

/* Other clocks: no conversion. (Runs everywhere.) */
static void ts_to_ns_identity(void **state)
{
	static const uint64_t v[] = {0, 1, 1000, 123456789, 1ull << 40, (1ull << 59) + 7, UINT64_MAX};
	struct ringbuf *rb;
	struct ringbuf_record rec;
	uint64_t lo, hi;
	uint32_t x = 7;
	unsigned k;
	(void)state;
	rb = mk_clock(1, 4096, 4, NULL);
	assert_string_equal(ringbuf_clock_name(rb), "mono");
	for (k = 0; k < sizeof v / sizeof v[0]; k++)
		assert_int_equal(ringbuf_ts_to_ns(rb, v[k]), v[k]);
	lo = mono_ns();
	assert_int_equal(ringbuf_write(rb, 0, &x, sizeof x), 0);
	hi = mono_ns();
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
	assert_true(rec.ts >= lo && rec.ts <= hi); /* CLOCK_MONOTONIC itself */
	lo = mono_ns();
	rec.ts = ringbuf_time_stamp(rb);
	hi = mono_ns();
	assert_true(rec.ts >= lo && rec.ts <= hi);

	rb = mk_clock(1, 4096, 4, fixed_clock);
	assert_string_equal(ringbuf_clock_name(rb), "unknown");
	for (k = 0; k < sizeof v / sizeof v[0]; k++)
		assert_int_equal(ringbuf_ts_to_ns(rb, v[k]), v[k]);
	fixed_now = 5000000000ull;
	assert_int_equal(ringbuf_write(rb, 0, &x, sizeof x), 0);
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
	assert_int_equal(rec.ts, fixed_now);
	assert_int_equal(ringbuf_time_stamp(rb), fixed_now);

	/* the block's clock name follows the kind set by ringbuf_set_clock (a
	 * reader of the file must not be told "mono" for cycles) */
	assert_int_equal(ringbuf_set_clock(rb, NULL, NULL), 0);
	assert_string_equal(ringbuf_clock_name(rb), "mono");
#if defined(__x86_64__)
	assert_int_equal(ringbuf_set_clock(rb, RINGBUF_CLOCK_TSC, NULL), 0);
	assert_string_equal(ringbuf_clock_name(rb), "x86-tsc");
#endif
	assert_int_equal(ringbuf_set_clock(rb, fixed_clock, NULL), 0);
	assert_string_equal(ringbuf_clock_name(rb), "unknown");
	assert_int_equal(ringbuf_set_clock(NULL, NULL, NULL), RINGBUF_EINVAL);
	drop();
}

/* A stop of more than 2^32 ns (SIGSTOP, a debugger, a VM pause) in the middle
 * of the 10 ms calibration overflowed its fixed-point ratio for the buffer's
 * whole life. Simulated with a timer handler that sleeps 4.5 s inside it. */
static void calib_stop(int sig)
{
	struct timespec t = {4, 500000000L};
	(void)sig;
	nanosleep(&t, NULL);
}

static void tsc_calibration_survives_a_stop(void **state)
{
#if defined(__x86_64__)
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct itimerval it = {{0, 0}, {0, 3000}}; /* 3 ms: inside the 10 ms loop */
	struct sigaction sa, old;
	struct ringbuf *rb;
	struct timespec gap = {0, 100000000L};
	uint64_t lo, hi, c0, c1, m0, m1, ns0, d;
	(void)state;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = calib_stop;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
	cfg.size_per_cpu = 2 * 4096;
	cfg.clock = RINGBUF_CLOCK_TSC;
	assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	sigaction(SIGALRM, &old, NULL);
	lo = mono_ns();
	c0 = ringbuf_clock_tsc(NULL);
	hi = mono_ns();
	ns0 = ringbuf_ts_to_ns(rb, c0);
	if (ns0 + 1000000 < lo || ns0 > hi + 1000000)
		fail_msg("after a 4.5 s stop in the calibration: now converts to %llu, CLOCK_MONOTONIC %llu",
			 (unsigned long long)ns0, (unsigned long long)lo);
	m0 = mono_ns();
	nanosleep(&gap, NULL);
	c1 = ringbuf_clock_tsc(NULL);
	m1 = mono_ns();
	d = ringbuf_ts_to_ns(rb, c1) - ringbuf_ts_to_ns(rb, c0);
	/* within 1% of the clock_gettime bounds: c0 was read in [lo, hi], c1
	 * after m0 + 100 ms and before m1 */
	if (d < (m0 + 100000000u - hi) / 100 * 99 || d > (m1 - lo) / 100 * 101)
		fail_msg("100 ms (%llu..%llu ns by clock_gettime) converts to %llu ns",
			 (unsigned long long)(m0 + 100000000u - hi), (unsigned long long)(m1 - lo),
			 (unsigned long long)d);
	ringbuf_destroy(rb);
#else
	(void)state;
	skip();
#endif
}

/* ==== the write-path engine (inline vs out of line, entry counts) ======== */

/* How the script calls reserve and commit. */
enum { W_MACRO, W_FUNC, W_FPTR, W_RMACRO_CFUNC, W_RFUNC_CMACRO, W_NMODES };
static const char *const wmode_name[W_NMODES] = {
	"macros", "(ringbuf_reserve)/(ringbuf_commit)", "function pointers",
	"reserve macro + commit function", "reserve function + commit macro"};
static int g_wmode;
/* Not followed by '(': these name the out-of-line functions. */
static void *(*volatile fp_reserve)(struct ringbuf *, unsigned, size_t) = ringbuf_reserve;
static void (*volatile fp_commit)(struct ringbuf *, unsigned, void *) = ringbuf_commit;

static void *w_reserve(struct ringbuf *rb, size_t len)
{
	switch (g_wmode) {
	case W_MACRO:
	case W_RMACRO_CFUNC:
		return ringbuf_reserve(rb, 0, len);
	case W_FUNC:
	case W_RFUNC_CMACRO:
		return (ringbuf_reserve)(rb, 0, len);
	default:
		return fp_reserve(rb, 0, len);
	}
}

static void w_commit(struct ringbuf *rb, void *p)
{
	switch (g_wmode) {
	case W_MACRO:
	case W_RFUNC_CMACRO:
		ringbuf_commit(rb, 0, p);
		break;
	case W_FUNC:
	case W_RMACRO_CFUNC:
		(ringbuf_commit)(rb, 0, p);
		break;
	default:
		fp_commit(rb, 0, p);
		break;
	}
}

/* A counter clock: deterministic, mostly small steps, now and then a step
 * that needs a TIME_EXTEND. */
static uint64_t ctr_now, ctr_calls;
static uint64_t ctr_clock(void *ctx)
{
	(void)ctx;
	ctr_calls++;
	ctr_now += ctr_calls % 41 == 0 ? (1ull << 28) + ctr_calls : 1 + ctr_calls % 7;
	return ctr_now;
}
static uint64_t step1_clock(void *ctx)
{
	(void)ctx;
	return ++ctr_now;
}

/* What the engine did, and what it saw. Signal handlers update it too (they
 * run synchronously inside raise()), so no cmocka assertion runs in them:
 * they record a problem in g_err. */
#define MAXSEQ 65536
static uint8_t st_of[MAXSEQ];   /* 0 never, 1 committed, 2 discarded */
static uint16_t len_of[MAXSEQ];
struct tally {
	uint64_t committed, discarded, failed, rollbacks, padded, nested;
	uint64_t read, lost, pages;
	bool lost_unknown; /* a page said "events missed" without a count */
	bool exact_lost;   /* check each lost count against the skipped events */
	bool unordered;    /* writers cut in inside reserve: buffer order is not seq order */
	uint32_t next_seq;
	int64_t last_read; /* seq of the last event read, -1 */
	uint64_t skipped_checked;
	uint64_t owed;     /* skipped events whose count a full page had no room for */
};
static struct tally T;
static char g_err[256];
static struct ringbuf *g_wrb;
static uint64_t g_rng;
static size_t g_max;
static bool g_align8; /* the buffer has RINGBUF_F_ALIGN8 (for pagewalk) */

static void set_err(const char *what, uint32_t a)
{
	if (!g_err[0])
		snprintf(g_err, sizeof g_err, "%s (%u)", what, a);
}

static uint8_t fill_byte(uint32_t seq, size_t i) { return (uint8_t)(seq * 7u + i * 13u + 1u); }

static void *ev_reserve(struct ringbuf *rb, size_t len, uint32_t *seq)
{
	uint8_t *p = w_reserve(rb, len);
	size_t i;
	if (!p) {
		T.failed++;
		return NULL;
	}
	if (T.next_seq >= MAXSEQ) {
		set_err("sequence numbers exhausted", T.next_seq);
		*seq = MAXSEQ - 1;
	} else {
		*seq = T.next_seq++;
	}
	len_of[*seq] = (uint16_t)len;
	for (i = 0; i < len; i++)
		p[i] = fill_byte(*seq, i);
	if (len >= 4)
		memcpy(p, seq, 4);
	return p;
}

static void ev_commit(struct ringbuf *rb, void *p, uint32_t seq)
{
	w_commit(rb, p);
	st_of[seq] = 1;
	T.committed++;
}

static void ev_discard(struct ringbuf *rb, void *p, uint32_t seq)
{
	ringbuf_discard(rb, 0, p);
	st_of[seq] = 2;
	T.discarded++;
}

static size_t pick_len(void)
{
	static const uint16_t sizes[] = {4, 4, 5, 8, 9, 12, 16, 20, 24, 40, 60, 100, 112, 113, 116, 150, 200};
	uint64_t r = xorshift(&g_rng);
	size_t len;
	if (r % 23 == 0)
		len = g_max; /* the largest event: a page of its own */
	else
		len = sizes[(r >> 8) % (sizeof sizes / sizeof sizes[0])];
	return len > g_max ? g_max : len;
}

/* -- nested writers, from signal handlers -- */
struct plan {
	int n;            /* events in the SIGUSR1 handler */
	size_t len[3];
	bool discard[3];
	bool nmi;         /* the first of them raises SIGUSR2 inside its event */
	size_t nmi_len;
};
static struct plan g_plan;
static int g_kept;    /* nested events committed by the last handler run */
static int g_ran;

static void raise_sync(int sig);

static void on_usr2(int sig)
{
	uint32_t seq = 0;
	void *p;
	(void)sig;
	p = ev_reserve(g_wrb, g_plan.nmi_len, &seq);
	T.nested++;
	if (p) {
		ev_commit(g_wrb, p, seq);
		g_kept++;
	}
}

static void on_usr1(int sig)
{
	int k;
	(void)sig;
	g_ran++;
	for (k = 0; k < g_plan.n; k++) {
		uint32_t seq = 0;
		void *p = ev_reserve(g_wrb, g_plan.len[k], &seq);
		T.nested++;
		if (!p)
			continue;
		if (k == 0 && g_plan.nmi)
			raise_sync(SIGUSR2);
		if (g_plan.discard[k]) {
			ev_discard(g_wrb, p, seq);
		} else {
			ev_commit(g_wrb, p, seq);
			g_kept++;
		}
	}
}

static void install_handlers(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_usr1;
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	sa.sa_handler = on_usr2;
	assert_int_equal(sigaction(SIGUSR2, &sa, NULL), 0);
}

static void plan_nested(bool keep_one)
{
	int k;
	g_plan.n = 1 + (int)(xorshift(&g_rng) % 2);
	for (k = 0; k < g_plan.n; k++) {
		g_plan.len[k] = pick_len();
		g_plan.discard[k] = xorshift(&g_rng) % 4 == 0;
	}
	if (keep_one)
		g_plan.discard[g_plan.n - 1] = false;
	g_plan.nmi = xorshift(&g_rng) % 4 == 0;
	g_plan.nmi_len = pick_len();
}

/* raise() runs the handler before it returns; the compiler must not keep
 * what the handler changes (the tally, the sequence counter) in registers
 * across the call. glibc declares raise() a leaf function (__THROW: it
 * never calls back into this file, so it cannot change our statics), so
 * only a compiler barrier on each side keeps them: an asm with a memory
 * clobber, not atomic_signal_fence(), which gcc's -fsanitize=thread turns
 * into a call to __tsan_atomic_signal_fence, a leaf call as well (make tsan
 * with gcc folded `g_ran != before + 1` to true: "did not run inside
 * raise()"). */
static void raise_sync(int sig)
{
	__asm__ __volatile__("" ::: "memory");
	raise(sig);
	__asm__ __volatile__("" ::: "memory");
}

/* Raise SIGUSR1 inside the current event; the handler must have run by the
 * time raise() returns. */
static void nest(void)
{
	int before = g_ran;
	g_kept = 0;
	raise_sync(SIGUSR1);
	if (g_ran != before + 1)
		set_err("SIGUSR1 handler did not run inside raise()", (uint32_t)g_ran);
}

/* -- reading, checked against what was written -- */
static unsigned char *g_log;  /* inline test: what was read, in order */
static size_t g_log_len, g_log_cap;

static void log_put(const void *p, size_t n)
{
	if (!g_log)
		return;
	if (g_log_len + n > g_log_cap) {
		g_log_cap = (g_log_len + n) * 2;
		g_log = realloc(g_log, g_log_cap);
		assert_non_null(g_log);
	}
	memcpy(g_log + g_log_len, p, n);
	g_log_len += n;
}

/* One event read: its payload, its place, and the lost count before it.
 * lost_known false: the reader said events were missed without a count.
 * may_defer: the first event of a read_page page that leaves no room for a
 * count (the count then goes with a later page or event). */
static void saw(const uint8_t *data, size_t len, uint64_t ts, uint64_t lost, bool lost_known,
		bool may_defer)
{
	uint32_t seq, skipped = 0, s;
	size_t i;
	if (T.failed)
		T.exact_lost = false; /* a drop is reported where the tail next enters a page */
	assert_true(len >= 4);
	memcpy(&seq, data, 4);
	assert_true(seq < T.next_seq);
	if (!T.unordered && (int64_t)seq <= T.last_read)
		fail_msg("read event %u after event %lld", seq, (long long)T.last_read);
	if (st_of[seq] != 1)
		fail_msg("read event %u, which was %s", seq,
			 st_of[seq] == 2 ? "discarded" : st_of[seq] == 3 ? "read already" : "never written");
	assert_true(len >= len_of[seq] && len < (size_t)len_of[seq] + 8);
	for (i = 4; i < len_of[seq]; i++)
		if (data[i] != fill_byte(seq, i))
			fail_msg("event %u: payload byte %zu is %u, want %u", seq, i, data[i], fill_byte(seq, i));
	for (s = (uint32_t)(T.last_read + 1); s < seq; s++)
		skipped += st_of[s] == 1;
	if (T.exact_lost && !T.unordered && lost_known) {
		T.owed += skipped;
		if (!(lost == 0 && may_defer)) {
			if (lost != T.owed)
				fail_msg("event %u: lost %llu reported before it, but %llu committed events were "
					 "skipped", seq, (ull)lost, (ull)T.owed);
			T.owed = 0;
		}
		T.skipped_checked += skipped;
	}
	if (!lost_known)
		T.lost_unknown = true;
	T.lost += lost;
	T.last_read = seq;
	T.read++;
	st_of[seq] = 3;
	log_put(&seq, 4);
	log_put(&ts, 8);
	log_put(&lost, 8);
}

/* Consume up to n events; returns how many. */
static unsigned consume_n(struct ringbuf *rb, unsigned n)
{
	struct ringbuf_record rec;
	unsigned k;
	memset(&rec, 0, sizeof rec);
	for (k = 0; k < n; k++) {
		int r = ringbuf_consume(rb, 0, &rec);
		assert_true(r >= 0);
		if (r == 0)
			break;
		saw(rec.data, rec.len, rec.ts, rec.lost, true, false);
	}
	return k;
}

struct page_reader {
	bool first;
	uint64_t lost;
	bool lost_known;
	bool no_room; /* no room for a lost count after the page's data */
};
static int page_rec(const struct pw_record *r, void *ctx)
{
	struct page_reader *pr = ctx;
	if (r->kind != PW_DATA)
		return 0;
	saw(r->payload, r->payload_len, r->ts, pr->first ? pr->lost : 0, pr->first ? pr->lost_known : true,
	    pr->first && pr->no_room);
	pr->first = false;
	return 0;
}

/* Read one page; returns its data bytes (0: nothing). */
static int read_page(struct ringbuf *rb)
{
	size_t ps = ringbuf_page_size(rb);
	unsigned char *page = malloc(ps);
	struct pw_page in;
	struct page_reader pr;
	const char *err = NULL;
	int r, rc;
	assert_non_null(page);
	r = ringbuf_read_page(rb, 0, page, ps, 0);
	assert_true(r >= 0);
	if (r > 0) {
		rc = pw_walk_page(page, ps, g_align8, NULL, NULL, &in, &err);
		if (rc != 0)
			fail_msg("read_page: %s", err);
		pr.first = true;
		pr.lost = in.missed_stored ? in.missed_count : 0;
		pr.lost_known = !in.missed || in.missed_stored;
		pr.no_room = (size_t)r + sizeof(long) > ps - 16;
		rc = pw_walk_page(page, ps, g_align8, page_rec, &pr, NULL, &err);
		assert_int_equal(rc, 0);
		T.pages++;
		log_put(page, ps); /* the whole page: read_page zeroes the rest */
	}
	free(page);
	return r;
}

static void drain(struct ringbuf *rb)
{
	while (consume_n(rb, 64) == 64)
		;
}

/* One top-level step of the script. */
static void do_op(struct ringbuf *rb)
{
	uint64_t r = xorshift(&g_rng);
	unsigned op = (unsigned)(r % 20);
	size_t len = pick_len();
	uint32_t seq = 0;
	void *p;

	switch (op) {
	case 0: case 1: case 2: case 3: case 4: case 5: case 6: case 7:
		if ((p = ev_reserve(rb, len, &seq)) != NULL)
			ev_commit(rb, p, seq);
		break;
	case 8: case 9: /* the last reservation: rolled back */
		if ((p = ev_reserve(rb, len, &seq)) != NULL) {
			ev_discard(rb, p, seq);
			T.rollbacks++;
		}
		break;
	case 10: case 11: /* nested writers inside the event, then commit */
		plan_nested(false);
		if ((p = ev_reserve(rb, len, &seq)) != NULL) {
			nest();
			ev_commit(rb, p, seq);
		}
		break;
	case 12: case 13: /* nested writers commit on top of it, then discard: padding */
		plan_nested(true);
		if ((p = ev_reserve(rb, len, &seq)) != NULL) {
			nest();
			ev_discard(rb, p, seq);
			if (g_kept)
				T.padded++;
		}
		break;
	case 14: { /* the copying call */
		uint8_t buf[4096];
		size_t i;
		seq = T.next_seq++; /* before: a writer may cut in inside the call */
		len_of[seq] = (uint16_t)len;
		for (i = 0; i < len; i++)
			buf[i] = fill_byte(seq, i);
		memcpy(buf, &seq, 4);
		if (ringbuf_write(rb, 0, buf, len) == 0) {
			st_of[seq] = 1;
			T.committed++;
		} else {
			T.failed++;
		}
		break;
	}
	case 15: case 16:
		consume_n(rb, 1 + (unsigned)(r >> 32) % 3);
		break;
	case 17:
		if ((r >> 32) % 3 == 0)
			read_page(rb);
		break;
	default: { /* a burst */
		unsigned k;
		for (k = 0; k < 6; k++)
			if ((p = ev_reserve(rb, len, &seq)) != NULL)
				ev_commit(rb, p, seq);
		break;
	}
	}
	if (g_err[0])
		fail_msg("%s", g_err);
}

static void engine_reset(struct ringbuf *rb, uint64_t seed, int wmode)
{
	memset(&T, 0, sizeof T);
	memset(st_of, 0, sizeof st_of);
	memset(len_of, 0, sizeof len_of);
	T.last_read = -1;
	T.exact_lost = true;
	g_err[0] = 0;
	g_wrb = rb;
	g_rng = seed * 0x9e3779b97f4a7c15ull + 1;
	g_max = ringbuf_max_event_size(rb);
	if (g_max > 1000)
		g_max = 1000;
	g_wmode = wmode;
	ctr_now = 1000;
	ctr_calls = 0;
	install_handlers();
}

/* After draining: every committed event was read or counted as overwritten. */
static void check_accounting(struct ringbuf *rb, const char *what)
{
	struct ringbuf_stats st = stats(rb, 0);
	uint64_t drops = st.commit_overrun + st.dropped_events + st.disabled_events + st.rejected_events +
			 st.nest_overflow;
	if (T.committed != T.read + st.overrun || st.committed != T.committed ||
	    st.discarded != T.discarded || st.read_events != T.read || st.entries != 0 ||
	    drops != T.failed)
		fail_msg("%s: committed %llu (stats %llu), read %llu (stats %llu), overrun %llu, "
			 "entries %llu, discarded %llu (stats %llu), failed %llu (stats %llu)",
			 what, (ull)T.committed, (ull)st.committed, (ull)T.read, (ull)st.read_events,
			 (ull)st.overrun, (ull)st.entries, (ull)T.discarded, (ull)st.discarded, (ull)T.failed,
			 (ull)drops);
	if (T.lost_unknown)
		return;
	/* Drops are reported with the first event of the next page the tail
	 * enters: those after the last page move are not reported yet. One more
	 * event (the tail page was full when they happened: it enters a new
	 * page) carries them. */
	if (T.lost < st.overrun + st.commit_overrun + st.dropped_events && T.failed) {
		uint32_t seq = 0;
		void *p = ev_reserve(rb, 4, &seq);
		assert_non_null(p);
		ev_commit(rb, p, seq);
		assert_int_equal(consume_n(rb, 2), 1);
	}
	if (T.lost != st.overrun + st.commit_overrun + st.dropped_events)
		fail_msg("%s: lost counts add up to %llu, overrun %llu + drops %llu", what, (ull)T.lost,
			 (ull)st.overrun, (ull)(st.commit_overrun + st.dropped_events));
}

/* ==== inline vs out of line ============================================== */

struct snapshot {
	unsigned char *buf;
	size_t len;
	struct ringbuf_stats st;
	struct tally t;
};

static int snap_page(const void *page, size_t ps, int role, void *ctx)
{
	long commit;
	size_t used;
	(void)ps;
	memcpy(&commit, (const char *)page + 8, sizeof commit);
	used = PW_PAGE_HDR + ((unsigned long)commit & ((1ul << 27) - 1));
	log_put(&role, sizeof role);
	log_put(page, used); /* time stamp, commit, the bytes in use */
	(void)ctx;
	return 0;
}

struct geom {
	size_t page;
	unsigned npages;
	int mode, ts_mode;
	unsigned flags;
	unsigned ops;
};

static void run_script(const struct geom *g, int wmode, uint64_t seed, struct snapshot *out)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	unsigned i;
	size_t size = 0;
	void *mem;
	cfg.page_size = g->page;
	cfg.size_per_cpu = g->page * g->npages;
	cfg.mode = g->mode;
	cfg.ts_mode = g->ts_mode;
	cfg.flags = g->flags;
	cfg.clock = ctr_clock;
	/* zeroed memory: the bytes that round a payload up to 4 (8) are not
	 * written by anyone, and must not differ from run to run */
	assert_int_equal(ringbuf_size_needed(&cfg, &size), 0);
	mem = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
	assert_non_null(mem);
	memset(mem, 0, size);
	g_mem = mem;
	assert_int_equal(ringbuf_init_in(mem, size, &cfg, &rb), 0);
	keep(rb);
	engine_reset(rb, seed, wmode);
	g_log_cap = 1 << 16;
	g_log_len = 0;
	g_log = malloc(g_log_cap);
	assert_non_null(g_log);
	g_align8 = (g->flags & RINGBUF_F_ALIGN8) != 0;
	for (i = 0; i < g->ops; i++)
		do_op(rb);
	/* the pages as the writers left them */
	assert_int_equal(ringbuf__walk_pages(rb, 0, snap_page, NULL), 0);
	out->st = stats(rb, 0);
	/* then everything read out as kernel pages */
	while (read_page(rb) > 0)
		;
	assert_int_equal(consume_n(rb, 1), 0);
	check_accounting(rb, "script");
	out->t = T;
	out->buf = g_log;
	out->len = g_log_len;
	g_log = NULL;
	g_align8 = false;
	drop();
	free(g_mem);
	g_mem = NULL;
}

static void compare(const struct snapshot *a, const struct snapshot *b, const char *what)
{
	size_t i;
	if (memcmp(&a->st, &b->st, sizeof a->st) != 0)
		fail_msg("%s: statistics differ (committed %llu/%llu overrun %llu/%llu bytes %llu/%llu)", what,
			 (ull)a->st.committed, (ull)b->st.committed, (ull)a->st.overrun, (ull)b->st.overrun,
			 (ull)a->st.bytes, (ull)b->st.bytes);
	if (a->t.committed != b->t.committed || a->t.discarded != b->t.discarded ||
	    a->t.failed != b->t.failed || a->t.read != b->t.read)
		fail_msg("%s: the scripts did different things", what);
	if (a->len != b->len)
		fail_msg("%s: %zu bytes of pages and reads vs %zu", what, b->len, a->len);
	for (i = 0; i < a->len; i++)
		if (a->buf[i] != b->buf[i])
			fail_msg("%s: pages differ at byte %zu of %zu", what, i, a->len);
}

static void inline_vs_outofline(void **state)
{
	static const struct geom geoms[] = {
		{256, 6, RINGBUF_MODE_OVERWRITE, RINGBUF_TS_DELTA, 0, 900},
		{1024, 48, RINGBUF_MODE_OVERWRITE, RINGBUF_TS_DELTA, 0, 700},
		{512, 8, RINGBUF_MODE_PRODUCER_CONSUMER, RINGBUF_TS_DELTA, 0, 900},
		{256, 8, RINGBUF_MODE_OVERWRITE, RINGBUF_TS_DELTA, RINGBUF_F_ALIGN8, 900},
		{512, 8, RINGBUF_MODE_OVERWRITE, RINGBUF_TS_ABSOLUTE, 0, 900},
	};
	unsigned gi;
	int m;
	(void)state;
	assert_true(fp_reserve != NULL && fp_commit != NULL);
	for (gi = 0; gi < sizeof geoms / sizeof geoms[0]; gi++) {
		struct snapshot ref, s;
		char what[160];
		run_script(&geoms[gi], W_MACRO, 1000 + gi, &ref);
		/* the script did what it is meant to exercise */
		assert_true(ref.t.committed > 100 && ref.t.rollbacks > 5 && ref.t.padded > 5 &&
			    ref.t.nested > 50 && ref.t.read > 50);
		assert_true(ref.st.pages_touched > 3);
		if (geoms[gi].mode == RINGBUF_MODE_OVERWRITE && geoms[gi].npages < 10)
			assert_true(ref.st.overrun > 0);
		for (m = 1; m < W_NMODES; m++) {
			run_script(&geoms[gi], m, 1000 + gi, &s);
			snprintf(what, sizeof what, "geometry %u (page %zu): %s vs %s", gi, geoms[gi].page,
				 wmode_name[m], wmode_name[W_MACRO]);
			compare(&ref, &s, what);
			free(s.buf);
		}
		free(ref.buf);
	}
}

/* ==== entry counts ======================================================= */

/* Random sequences: exact accounting, lost counts where they belong. */
static void entries_random(void **state)
{
	static const uint64_t seeds[] = {1, 2, 3, 42, 7777, 0xdeadbeef, 123456789, 99};
	unsigned si, exact = 0;
	uint64_t padded = 0, rollbacks = 0, overrun = 0, checked = 0;
	(void)state;
	for (si = 0; si < sizeof seeds / sizeof seeds[0]; si++) {
		struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
		struct ringbuf *rb = NULL;
		char what[64];
		unsigned i;
		cfg.page_size = 256;
		cfg.size_per_cpu = 256 * (4 + si % 5);
		cfg.clock = ctr_clock;
		assert_int_equal(ringbuf_create(&cfg, &rb), 0);
		keep(rb);
		engine_reset(rb, seeds[si], (int)(si % W_NMODES));
		for (i = 0; i < 4000; i++)
			do_op(rb);
		drain(rb);
		snprintf(what, sizeof what, "seed %llu", (ull)seeds[si]);
		check_accounting(rb, what);
		padded += T.padded;
		rollbacks += T.rollbacks;
		overrun += stats(rb, 0).overrun;
		checked += T.skipped_checked;
		exact += T.exact_lost;
		drop();
	}
	/* it exercised both kinds of discard, overwriting, and lost counts */
	assert_true(padded > 100 && rollbacks > 100 && overrun > 1000);
	assert_true(exact > 0 && checked > 100);
}

/* The same with nested writers cutting in at the write path's test points
 * (inside a head push, a tail move, a discard, ...), as a signal would. */
static uint64_t tp_rng;
static int tp_active;
static uint64_t tp_cut[RINGBUF__TP_COUNT];

static void tp_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	uint32_t seq = 0;
	void *p;
	(void)cpu;
	(void)ctx;
	if (point >= RINGBUF__TP_COUNT || tp_active || xorshift(&tp_rng) % 6 != 0)
		return;
	tp_active = 1;
	tp_cut[point]++;
	p = ev_reserve(rb, 4 + (size_t)(xorshift(&tp_rng) % 120), &seq);
	T.nested++;
	if (p) {
		if (xorshift(&tp_rng) % 4 == 0)
			ev_discard(rb, p, seq);
		else
			ev_commit(rb, p, seq);
	}
	tp_active = 0;
}

static void entries_testpoints(void **state)
{
	static const uint64_t seeds[] = {5, 6, 77, 31337};
	static const int must[] = {RINGBUF__TP_H1_COUNTED, RINGBUF__TP_H1_UPDATE, RINGBUF__TP_U1_INTCNT,
				   RINGBUF__TP_U2_RESET, RINGBUF__TP_CROSS_CLAIMED, RINGBUF__TP_DISCARD_INVAL,
				   RINGBUF__TP_C_RESERVED};
	unsigned si, k;
	(void)state;
	memset(tp_cut, 0, sizeof tp_cut);
	for (si = 0; si < sizeof seeds / sizeof seeds[0]; si++) {
		struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
		struct ringbuf *rb = NULL;
		char what[64];
		unsigned i;
		cfg.page_size = 256;
		cfg.size_per_cpu = 256 * (4 + si);
		cfg.clock = ctr_clock;
		assert_int_equal(ringbuf_create(&cfg, &rb), 0);
		keep(rb);
		engine_reset(rb, seeds[si], W_MACRO);
		/* a writer cutting in between reserve's clock read or CAS and its
		 * return takes the next sequence number first: read order is
		 * not sequence order, so only the totals are checked */
		T.unordered = true;
		tp_rng = seeds[si] + 17;
		ringbuf__set_testpoint_hook(tp_hook, NULL);
		for (i = 0; i < 3000; i++)
			do_op(rb);
		ringbuf__set_testpoint_hook(NULL, NULL);
		drain(rb);
		snprintf(what, sizeof what, "testpoints, seed %llu", (ull)seeds[si]);
		check_accounting(rb, what);
		drop();
	}
	for (k = 0; k < sizeof must / sizeof must[0]; k++)
		if (tp_cut[must[k]] == 0)
			fail_msg("no nested writer cut in at test point %d", must[k]);
}

/* -- hand-built: every head push adds the data events of the pushed page -- */

struct pcounts {
	unsigned n;
	uint32_t ndata[24], npad[24];
};

static int pc_page(const void *page, size_t ps, int role, void *ctx)
{
	struct pcounts *pc = ctx;
	struct pw_page in;
	const char *err = NULL;
	(void)role;
	assert_true(pc->n < 24);
	if (pw_walk_page(page, ps, false, NULL, NULL, &in, &err) != 0)
		fail_msg("page %u: %s", pc->n, err);
	pc->ndata[pc->n] = in.ndata;
	pc->npad[pc->n] = in.npad;
	pc->n++;
	return 0;
}

/* [0] the reader page, [1] the head page, ... [n-1] the tail page */
static struct pcounts page_counts(struct ringbuf *rb)
{
	struct pcounts pc;
	memset(&pc, 0, sizeof pc);
	assert_int_equal(ringbuf__walk_pages(rb, 0, pc_page, &pc), 0);
	return pc;
}

#define MAXPUSH 64
static unsigned npush;
static uint64_t pushed[MAXPUSH]; /* overrun added by each head push, in order */

/* Write one event (len bytes, committed) and check what it did to overrun:
 * nothing, or, when it pushed the head, exactly the data events the head page
 * held (as counted from the page bytes). */
static void put(struct ringbuf *rb, size_t len)
{
	struct pcounts pc = page_counts(rb);
	struct ringbuf_stats a = stats(rb, 0), b;
	uint32_t seq = 0;
	void *p = ev_reserve(rb, len, &seq);
	assert_non_null(p);
	ev_commit(rb, p, seq);
	b = stats(rb, 0);
	if (b.pages_lost == a.pages_lost) {
		assert_int_equal(b.overrun, a.overrun);
		return;
	}
	assert_int_equal(b.pages_lost, a.pages_lost + 1);
	assert_true(pc.n >= 2);
	if (b.overrun - a.overrun != pc.ndata[1])
		fail_msg("head push %u: overrun grew by %llu, the pushed page held %u events", npush,
			 (ull)(b.overrun - a.overrun), pc.ndata[1]);
	assert_true(npush < MAXPUSH);
	pushed[npush++] = b.overrun - a.overrun;
}

static void expect_pushes(const uint64_t *want, unsigned n)
{
	unsigned i;
	if (npush != n)
		fail_msg("%u head pushes, expected %u", npush, n);
	for (i = 0; i < n; i++)
		if (pushed[i] != want[i])
			fail_msg("head push %u added %llu to overrun, expected %llu", i, (ull)pushed[i],
				 (ull)want[i]);
}

static void entries_per_page(void **state)
{
	struct ringbuf *rb;
	struct pcounts pc;
	uint32_t seq = 0;
	void *p;
	unsigned i, before;
	(void)state;
	/* 4 ring pages of 240 data bytes; a 20-byte payload is a 24-byte event
	 * (10 per page), 100 bytes 104 (2 per page), 200 bytes 204 (1 per page);
	 * a clock that advances by 1: no time extends */
	rb = mk_clock(1, 256, 4, step1_clock);
	engine_reset(rb, 1, W_MACRO);
	npush = 0;

	/* fill the ring: 4 pages of 10 */
	for (i = 0; i < 40; i++)
		put(rb, 20);
	pc = page_counts(rb);
	assert_int_equal(pc.n, 5);
	for (i = 1; i < 5; i++)
		assert_int_equal(pc.ndata[i], 10);
	assert_int_equal(stats(rb, 0).overrun, 0);

	/* overwrite P0 (+10), refill it with 2 events (a new lap) */
	put(rb, 100);
	put(rb, 100);
	{
		static const uint64_t w[] = {10};
		expect_pushes(w, 1);
	}
	pc = page_counts(rb);
	assert_int_equal(pc.ndata[pc.n - 1], 2);

	/* overwrite P1 (+10); on P1: one event, then a rolled-back discard, then
	 * an event discarded after a nested one was committed on top of it
	 * (padding), then fill it */
	put(rb, 100);
	p = ev_reserve(rb, 100, &seq);
	assert_non_null(p);
	ev_discard(rb, p, seq); /* rolled back */
	g_plan.n = 1;
	g_plan.len[0] = 20;
	g_plan.discard[0] = false;
	g_plan.nmi = false;
	p = ev_reserve(rb, 20, &seq);
	assert_non_null(p);
	nest(); /* a 20-byte event committed inside ours */
	assert_int_equal(g_kept, 1);
	ev_discard(rb, p, seq); /* padding */
	assert_int_equal(stats(rb, 0).discarded, 2);
	pc = page_counts(rb);
	assert_int_equal(pc.ndata[pc.n - 1], 2);
	assert_true(pc.npad[pc.n - 1] >= 1);
	before = npush;
	while (npush == before) /* fill P1 up; the event after it pushes P2 */
		put(rb, 20);
	pc = page_counts(rb);
	{
		/* what P1 holds now, as the bytes say; its push comes last */
		uint32_t p1 = pc.ndata[pc.n - 2];
		uint64_t w[6] = {10, 10, 10, 10, 2, 0};
		assert_true(p1 >= 3 && p1 < 10);
		w[5] = p1;
		/* P2 was pushed (+10) by the put that ended the loop; P3 (+10),
		 * P0 (+2: only this lap's events) and P1 (+p1: without the
		 * discarded ones) follow */
		for (i = 0; i < 8; i++)
			put(rb, 100);
		expect_pushes(w, 6);
	}

	/* read everything: the first event says how many were lost (saw()
	 * checks it against the committed events it skips) */
	assert_int_equal(consume_n(rb, 1), 1);
	assert_true(T.exact_lost);
	assert_int_equal(T.lost, 47);
	drain(rb);
	{
		struct ringbuf_stats st = stats(rb, 0);
		assert_int_equal(st.overrun, 47);
		assert_int_equal(T.committed, T.read + st.overrun);
		assert_int_equal(st.entries, 0);
	}

	/* one event per page from here: each push adds exactly 1, also for pages
	 * the reader had and gave back */
	before = npush;
	for (i = 0; i < 12; i++)
		put(rb, 200);
	assert_true(npush - before >= 8);
	for (i = before; i < npush; i++)
		assert_int_equal(pushed[i], 1);
	drop();
}

/* ringbuf_recover() recounts the pages: an event in flight when its writer
 * died becomes padding and is not counted when its page is overwritten. */
static void entries_recover_recount(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	struct ringbuf_stats st;
	struct pcounts pc;
	uint64_t committed_before;
	uint32_t seq = 0, p0;
	void *p;
	unsigned i, before;
	(void)state;
	snprintf(g_dir, sizeof g_dir, "/tmp/rb-recount-XXXXXX");
	assert_non_null(mkdtemp(g_dir));
	snprintf(g_path, sizeof g_path, "%s/recount.rb", g_dir);
	cfg.page_size = 256;
	cfg.size_per_cpu = 4 * 256;
	cfg.clock = step1_clock;
	assert_int_equal(ringbuf_create_file(g_path, &cfg, &rb), 0);
	keep(rb);
	engine_reset(rb, 2, W_MACRO);
	npush = 0;
	for (i = 0; i < 44; i++) /* 4 pages of 10, then P0 pushed and 4 on it */
		put(rb, 20);
	assert_int_equal(npush, 1);
	assert_int_equal(pushed[0], 10);
	/* an event in flight, a nested one committed on top, and the writer "dies" */
	g_plan.n = 1;
	g_plan.len[0] = 20;
	g_plan.discard[0] = false;
	g_plan.nmi = false;
	p = ev_reserve(rb, 20, &seq);
	assert_non_null(p);
	nest();
	assert_int_equal(g_kept, 1);
	st_of[seq] = 2; /* never committed: recovery pads it */
	committed_before = T.committed;
	drop(); /* unmaps; the block stays as the dead writer left it */

	assert_int_equal(ringbuf_open_file(g_path, RINGBUF_OPEN_RDWR | RINGBUF_OPEN_RECOVER, &rb), 0);
	keep(rb);
	g_wrb = rb;
	assert_int_equal(ringbuf_set_clock(rb, step1_clock, NULL), 0);
	st = stats(rb, 0);
	assert_int_equal(st.committed, committed_before); /* the nested event, not ours */
	pc = page_counts(rb);
	assert_int_equal(pc.ndata[pc.n - 1], 5); /* P0: 4 + the nested one */
	assert_true(pc.npad[pc.n - 1] >= 1);
	/* write on: P1, P2, P3 (+10 each), then P0 with what it holds */
	before = npush;
	while (npush < before + 3)
		put(rb, 20);
	pc = page_counts(rb);
	p0 = pc.ndata[1]; /* the head page is P0 now */
	assert_true(p0 >= 5 && p0 < 10);
	while (npush < before + 4)
		put(rb, 20);
	assert_int_equal(pushed[before], 10);
	assert_int_equal(pushed[before + 1], 10);
	assert_int_equal(pushed[before + 2], 10);
	assert_int_equal(pushed[before + 3], p0);
	drain(rb);
	st = stats(rb, 0);
	assert_int_equal(st.committed, T.committed);
	assert_int_equal(T.committed, T.read + st.overrun);
	assert_int_equal(st.entries, 0);
	drop();
}

/* [CLOCK-FIRST] The inline fast path reads the clock before A's loads. A
 * writer nested right after that read (test point FAST_CLOCK) reserves an
 * event, a third writer commits one on top of it, and the second discards
 * its own: not the last, so it stays as padding and before_stamp is
 * invalidated. The outer event, stamped before both, must still come out at
 * or after the committed nested one: the full loop reads the clock again
 * (a first version clamped the early time to write_stamp only when the
 * stamps were equal; here they are not, and the outer event got an absolute
 * stamp of 2 after the nested event's 4: "TIME_STAMP goes backwards" in
 * test_interleave's page walk, "time went backwards" in test_contexts). With a tick clock: 1 the first event,
 * 2 the outer read, 3 and 4 the nested ones. */
static uint64_t cf_ticks;
static uint64_t cf_clock(void *ctx)
{
	(void)ctx;
	return ++cf_ticks;
}
static int cf_fired;
static void cf_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	uint32_t *a, *b;
	(void)cpu;
	(void)ctx;
	if (point != RINGBUF__TP_FAST_CLOCK || cf_fired)
		return;
	cf_fired = 1;
	a = (uint32_t *)ringbuf_reserve(rb, 0, 8);
	if (!a)
		return;
	a[0] = 2;
	a[1] = 0;
	b = (uint32_t *)ringbuf_reserve(rb, 0, 8);
	if (b) {
		b[0] = 3;
		b[1] = 0;
		ringbuf_commit(rb, 0, b);
	}
	ringbuf_discard(rb, 0, a);
	cf_fired = 2;
}

static void clock_read_early_then_a_nested_discard_keeps_time_order(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	struct ringbuf_record rec;
	uint32_t v[2] = {1, 0}, got[4];
	uint64_t ts[4];
	unsigned n = 0;
	static struct raw_coll coll;
	(void)state;
	cf_ticks = 0;
	cf_fired = 0;
	cfg.ncpu = 1;
	cfg.page_size = 4096;
	cfg.size_per_cpu = 4 * 4096;
	cfg.clock = cf_clock;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	assert_int_equal(ringbuf_write(rb, 0, v, 8), 0); /* the page's first event: w != 0 after it */
	ringbuf__set_testpoint_hook(cf_hook, NULL);
	v[0] = 4;
	assert_int_equal(ringbuf_write(rb, 0, v, 8), 0);
	ringbuf__set_testpoint_hook(NULL, NULL);
	assert_int_equal(cf_fired, 2);
	/* the raw page: the walk fails on a TIME_STAMP that goes back */
	raw_walk(rb, 0, &coll);
	for (unsigned i = 0; i < coll.n && n < 4; i++) {
		got[n] = coll.seq[i];
		ts[n++] = coll.ts[i];
	}
	print_message("  read %u events:", n);
	for (unsigned i = 0; i < n; i++)
		print_message(" %u at %llu", got[i], (unsigned long long)ts[i]);
	print_message("\n");
	assert_int_equal(n, 3);
	assert_int_equal(got[0], 1);
	assert_int_equal(got[1], 3);
	assert_int_equal(got[2], 4);
	assert_true(ts[0] <= ts[1]);
	if (ts[2] < ts[1])
		fail_msg("the outer event at %llu, before the nested one at %llu", (unsigned long long)ts[2],
			 (unsigned long long)ts[1]);
	while (ringbuf_consume(rb, 0, &rec) == 1)
		assert_true(rec.ts >= ts[0]);
	ringbuf_destroy(rb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(tsc_readers, teardown),
		cmocka_unit_test_teardown(tsc_long_gap, teardown),
		cmocka_unit_test_teardown(tsc_merged, teardown),
		cmocka_unit_test_teardown(tsc_file, teardown),
		cmocka_unit_test_teardown(tsc_set_clock, teardown),
		cmocka_unit_test_teardown(ts_to_ns_identity, teardown),
		cmocka_unit_test_teardown(tsc_calibration_survives_a_stop, teardown),
		cmocka_unit_test_teardown(inline_vs_outofline, teardown),
		cmocka_unit_test_teardown(entries_random, teardown),
		cmocka_unit_test_teardown(entries_testpoints, teardown),
		cmocka_unit_test_teardown(entries_per_page, teardown),
		cmocka_unit_test_teardown(entries_recover_recount, teardown),
		cmocka_unit_test(clock_read_early_then_a_nested_discard_keeps_time_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
