/* Deterministic interleavings: a single thread drives writers and the reader,
 * and at every labelled step of the write path (RINGBUF__TESTPOINT) a hook may
 * cut in with a nested writer (what a signal handler does) or with a reader
 * call (what a reader on another CPU can do at that instant). A fixed-seed
 * PRNG picks the interleaving, so every failure is reproducible by its seed.
 *
 * After every top-level step the buffer is checked against the test's own
 * model: every committed event is, exactly once, read, counted as overwritten,
 * or still in the buffer (counted by re-parsing the pages independently with
 * tests/pagewalk.h); events are read in order per writer context; time stamps
 * never go backwards; reported lost counts add up.
 */
#define _GNU_SOURCE 1 /* sigutil.h (UNDER_TSAN) */
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pagewalk.h"
#include "sigutil.h" /* UNDER_TSAN */

/* LDFLAGS: -Wl,--wrap=thrd_yield -Wl,--wrap=sched_yield */
#include "one_thread.h" /* one thread: the library's yields counted, not made */

#define MAXCTX (RINGBUF_MAX_NEST + 1)

struct model {
	struct ringbuf *rb;
	uint64_t rng;
	uint64_t clock;
	int depth;                /* writers active (the hook's nesting) */
	int in_reader;
	uint32_t next_seq[MAXCTX];/* per nesting depth: next sequence number to write */
	uint32_t exp_seq[MAXCTX]; /* per depth: lowest sequence the reader may still see */
	uint64_t committed, read, lost_reported, gaps;
	uint64_t last_ts;
	int inject_pct;           /* chance to cut in at a test point */
	int budget;               /* cut-ins left in this top-level step */
	int reader_pct;           /* of which: a reader call instead of a writer */
	bool align8;
	char fail[256];
};

static struct model M;
/* the write steps 1 .. RINGBUF__TP_COUNT - 1, then (at RINGBUF__TP_COUNT)
 * H2_HELPED: a step only a nested writer reaches (outside the range the
 * one-writer sweeps cover) */
#define NWSTEP (RINGBUF__TP_COUNT + 1)
static uint64_t tp_hits[NWSTEP], tp_cut[NWSTEP];
/* the reader's page swap steps outside the count (READER_S1 .. READER_S4):
 * a writer on another CPU may run at each as at READER_S2 */
#define NSWAP (RINGBUF__TP_READER_S4 - RINGBUF__TP_READER_S1 + 1)
static uint64_t swap_hits[NSWAP], swap_cut[NSWAP];
static const char *const swap_names[NSWAP] = {"READER_S1", "READER_S2_PREP", "READER_S3", "READER_S4"};
/* by value: a name for each write step (every_test_point_was_cut_into
 * checks that none is missing) */
static const char *const tp_names[NWSTEP] = {
	[RINGBUF__TP_A_TIME] = "A_TIME",
	[RINGBUF__TP_B_BEFORE] = "B_BEFORE",
	[RINGBUF__TP_C_RESERVED] = "C_RESERVED",
	[RINGBUF__TP_D_WRITE_STAMP] = "D_WRITE_STAMP",
	[RINGBUF__TP_CROSS_CLAIMED] = "CROSS_CLAIMED",
	[RINGBUF__TP_CROSS_PADDED] = "CROSS_PADDED",
	[RINGBUF__TP_MOVE_TAIL] = "MOVE_TAIL",
	[RINGBUF__TP_H1_COUNTED] = "H1_COUNTED",
	[RINGBUF__TP_H1_UPDATE] = "H1_UPDATE",
	[RINGBUF__TP_H2_NEW_HEAD] = "H2_NEW_HEAD",
	[RINGBUF__TP_H3_DONE] = "H3_DONE",
	[RINGBUF__TP_U1_INTCNT] = "U1_INTCNT",
	[RINGBUF__TP_U2_RESET] = "U2_RESET",
	[RINGBUF__TP_U3_MOVED] = "U3_MOVED",
	[RINGBUF__TP_COMMIT_PAGE] = "COMMIT_PAGE",
	[RINGBUF__TP_COMMIT_END] = "COMMIT_END",
	[RINGBUF__TP_DISCARD_INVAL] = "DISCARD_INVAL",
	[RINGBUF__TP_READER_S2] = "READER_S2",
	[RINGBUF__TP_MOVE_TAIL_NEXT] = "MOVE_TAIL_NEXT",
	[RINGBUF__TP_DROP_DECIDED] = "DROP_DECIDED",
	[RINGBUF__TP_H1_CLAIMED] = "H1_CLAIMED",
	[RINGBUF__TP_SLOT_CHECKED] = "SLOT_CHECKED",
	[RINGBUF__TP_COUNTED] = "COUNTED",
	[RINGBUF__TP_H1_OVERRUN] = "H1_OVERRUN",
	[RINGBUF__TP_FAST_ENTERED] = "FAST_ENTERED",
	[RINGBUF__TP_FAST_CLOCK] = "FAST_CLOCK",
	[RINGBUF__TP_C_CLAIMED] = "C_CLAIMED",
	[RINGBUF__TP_DISCARD_UNMARKED] = "DISCARD_UNMARKED",
	[RINGBUF__TP_DISCARD_ROLLED] = "DISCARD_ROLLED",
	[RINGBUF__TP_ENTERING] = "ENTERING",
	[RINGBUF__TP_P1_PAGE] = "P1_PAGE",
	[RINGBUF__TP_COUNT] = "H2_HELPED",
};

static uint64_t rnd(void)
{
	/* xorshift64* */
	M.rng ^= M.rng >> 12;
	M.rng ^= M.rng << 25;
	M.rng ^= M.rng >> 27;
	return M.rng * 2685821657736338717ull;
}

static uint64_t test_clock(void *ctx)
{
	(void)ctx;
	/* strictly increasing, sometimes by a lot (TIME_EXTEND) */
	M.clock += 1 + (rnd() % 100 == 0 ? (1ull << 27) + rnd() % 1000 : rnd() % 50);
	return M.clock;
}

static void failf(const char *fmt, ...)
{
	va_list ap;
	if (M.fail[0])
		return;
	va_start(ap, fmt);
	vsnprintf(M.fail, sizeof M.fail, fmt, ap);
	va_end(ap);
}

struct payload {
	uint32_t ctx, seq, len, sum;
};

static void do_write(int ctx)
{
	uint32_t seq = M.next_seq[ctx]++;
	uint32_t len = (uint32_t)sizeof(struct payload) + (uint32_t)(rnd() % 48);
	unsigned char *p;
	M.depth++;
	p = ringbuf_reserve(M.rb, 0, len);
	if (p) {
		struct payload h = {(uint32_t)ctx, seq, len, 0};
		for (uint32_t i = sizeof h; i < len; i++)
			p[i] = (unsigned char)(seq * 7 + i);
		h.sum = seq * 31 + len;
		memcpy(p, &h, sizeof h);
		if (rnd() % 16 == 0) {
			ringbuf_discard(M.rb, 0, p);
		} else {
			ringbuf_commit(M.rb, 0, p);
			M.committed++;
		}
	}
	M.depth--;
}

static void check_event(const struct ringbuf_record *rec)
{
	struct payload h;
	if (rec->len < sizeof h) {
		failf("short event");
		return;
	}
	memcpy(&h, rec->data, sizeof h);
	if (h.ctx >= MAXCTX || h.sum != h.seq * 31 + h.len ||
	    rec->len != (M.align8 ? ((h.len + 7) & ~7u) : ((h.len + 3) & ~3u))) {
		failf("corrupt event ctx=%u seq=%u len=%u", h.ctx, h.seq, h.len);
		return;
	}
	for (uint32_t i = sizeof h; i < h.len; i++)
		if (((const unsigned char *)rec->data)[i] != (unsigned char)(h.seq * 7 + i)) {
			failf("corrupt payload ctx=%u seq=%u byte %u", h.ctx, h.seq, i);
			return;
		}
	if (h.seq < M.exp_seq[h.ctx]) {
		failf("ctx %u: seq %u read after %u", h.ctx, h.seq, M.exp_seq[h.ctx]);
		return;
	}
	M.gaps += h.seq - M.exp_seq[h.ctx];
	M.exp_seq[h.ctx] = h.seq + 1;
	if (rec->ts < M.last_ts)
		failf("time went backwards: %llu < %llu", (unsigned long long)rec->ts,
		      (unsigned long long)M.last_ts);
	M.last_ts = rec->ts;
	M.lost_reported += rec->lost;
	M.read++;
}

static void do_read(int n)
{
	struct ringbuf_record rec;
	M.in_reader++;
	for (int i = 0; i < n; i++) {
		int r = ringbuf_consume(M.rb, 0, &rec);
		if (r == 1)
			check_event(&rec);
		else {
			if (r < 0 && r != RINGBUF_EAGAIN)
				failf("consume: %s", ringbuf_strerror(r));
			break;
		}
	}
	M.in_reader--;
}

static void hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	(void)rb;
	(void)cpu;
	(void)ctx;
	if (point >= RINGBUF__TP_READER_S1 && point <= RINGBUF__TP_READER_S4) {
		/* the writer thread runs while the reader is inside its swap */
		swap_hits[point - RINGBUF__TP_READER_S1]++;
		if (M.budget <= 0 || (int)(rnd() % 100) >= M.inject_pct || M.depth >= RINGBUF_MAX_NEST - 1)
			return;
		M.budget--;
		swap_cut[point - RINGBUF__TP_READER_S1]++;
		for (int i = 0, k = 1 + (int)(rnd() % 4); i < k; i++)
			do_write(M.depth);
		return;
	}
	if (point == RINGBUF__TP_H2_HELPED)
		point = RINGBUF__TP_COUNT;
	else if (point >= RINGBUF__TP_COUNT)
		return;
	tp_hits[point]++;
	if (M.budget <= 0 || (int)(rnd() % 100) >= M.inject_pct)
		return;
	M.budget--;
	tp_cut[point]++;
	if (point == RINGBUF__TP_READER_S2) {
		/* the writer thread runs while the reader is between S2 and S3 */
		if (M.depth < RINGBUF_MAX_NEST - 1) {
			int k = 1 + (int)(rnd() % 4);
			for (int i = 0; i < k; i++)
				do_write(M.depth);
		}
		return;
	}
	if ((int)(rnd() % 100) < M.reader_pct) {
		if (!M.in_reader)
			do_read(1 + (int)(rnd() % 3));
		return;
	}
	if (M.depth < RINGBUF_MAX_NEST - 1) {
		int k = 1 + (int)(rnd() % 3);
		for (int i = 0; i < k; i++)
			do_write(M.depth);
	}
}

struct walk_ctx {
	bool align8;
	uint64_t last_ts;
	uint32_t read_off;
	uint64_t events;
	int err;
	const char *why;
};

static int count_page(const void *page, size_t size, int role, void *vctx)
{
	struct walk_ctx *w = vctx;
	struct pw_page info;
	const char *err = NULL;
	struct pw_count_cb {
		uint32_t from;
		uint64_t n;
	} cc = {role == RINGBUF__PAGE_READER ? w->read_off : 0, 0};
	int r = pw_walk_page(page, size, w->align8, NULL, NULL, &info, &err);
	if (r < 0) {
		w->err = r;
		w->why = err;
		return 1;
	}
	/* time never goes backwards from page to page (reader page, then head .. tail) */
	r = pw_check_sequence(w->last_ts, page, size, w->align8, &w->last_ts, &err);
	if (r < 0) {
		w->err = r;
		w->why = err;
		return 1;
	}
	/* count data records at or after `from` */
	{
		const unsigned char *d = (const unsigned char *)page + PW_PAGE_HDR;
		uint32_t off = 0;
		while (off < info.commit) {
			uint32_t hw, t, len;
			memcpy(&hw, d + off, 4);
			t = PW_TYPE(hw);
			if (t == 29) {
				uint32_t a0;
				if (info.commit - off < 8)
					break;
				memcpy(&a0, d + off + 4, 4);
				len = a0 + 4;
			} else if (t == 30 || t == 31) {
				len = 8;
			} else if (t == 0 || w->align8) {
				uint32_t a0;
				memcpy(&a0, d + off + 4, 4);
				len = a0 + 4;
				if (off >= cc.from)
					cc.n++;
			} else {
				len = 4 + t * 4;
				if (off >= cc.from)
					cc.n++;
			}
			off += len;
		}
	}
	w->events += cc.n;
	return 0;
}

static void check_model(const char *where)
{
	struct ringbuf_stats st;
	struct walk_ctx w = {M.align8, 0, 0, 0, 0, NULL};
	struct ringbuf__cpu *c = ringbuf__cpu(M.rb, 0);
	ringbuf_stats_cpu(M.rb, 0, &st);
	w.read_off = c->read;
	int r = ringbuf__walk_pages(M.rb, 0, count_page, &w);
	if (r < 0 || w.err) {
		failf("%s: page walk failed: %d %s", where, w.err, w.why ? w.why : "");
		return;
	}
	if (st.committed != M.committed)
		failf("%s: committed stat %llu != model %llu", where, (unsigned long long)st.committed,
		      (unsigned long long)M.committed);
	if (M.committed != M.read + st.overrun + w.events)
		failf("%s: committed %llu != read %llu + overrun %llu + in buffer %llu", where,
		      (unsigned long long)M.committed, (unsigned long long)M.read,
		      (unsigned long long)st.overrun, (unsigned long long)w.events);
}

static void run_seed(uint64_t seed, int mode, size_t page_size, int steps)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	memset(&M, 0, sizeof M);
	/* every third seed in absolute time-stamp mode, every fifth 8-byte aligned */
	cfg.ts_mode = seed % 3 == 0 ? RINGBUF_TS_ABSOLUTE : RINGBUF_TS_DELTA;
	M.align8 = seed % 5 == 0;
	cfg.flags = M.align8 ? RINGBUF_F_ALIGN8 : 0;
	M.rng = seed * 0x9E3779B97F4A7C15ull + 1;
	M.clock = 1000;
	M.inject_pct = 10 + (int)(seed % 40);
	M.reader_pct = 30;
	cfg.page_size = page_size;
	cfg.size_per_cpu = 4 * page_size;
	cfg.mode = mode;
	cfg.clock = test_clock;
	assert_int_equal(ringbuf_create(&cfg, &M.rb), 0);
	ringbuf__set_testpoint_hook(hook, NULL);
	for (int i = 0; i < steps && !M.fail[0]; i++) {
		M.budget = 1 + (int)(rnd() % 24);
		if (rnd() % 3)
			do_write(0);
		else
			do_read(1 + (int)(rnd() % 4));
		check_model("step");
		if (M.fail[0])
			fail_msg("seed %llu mode %d page %zu step %d: %s", (unsigned long long)seed, mode,
				 page_size, i, M.fail);
	}
	ringbuf__set_testpoint_hook(NULL, NULL);
	do_read(1 << 30);
	check_model("drained");
	if (M.fail[0])
		fail_msg("seed %llu: %s", (unsigned long long)seed, M.fail);
	{
		struct ringbuf_stats st;
		ringbuf_stats_cpu(M.rb, 0, &st);
		assert_int_equal(M.read + st.overrun, M.committed);
		assert_int_equal(M.lost_reported, st.overrun + (M.lost_reported - st.overrun));
		assert_true(M.lost_reported >= st.overrun);
	}
	ringbuf_destroy(M.rb);
}

/* Seeds per mode: 2,000; 600 under qemu-user (RINGBUF_TEST_QEMU, 10-15 times
 * slower) and ThreadSanitizer (one thread here: nothing for it to find that
 * the native run misses), which keeps .ci/run in its budget and still cuts
 * into every test point (the rarest, COMMIT_PAGE, some 1,700 times). */
static uint64_t nseeds(void)
{
	return UNDER_TSAN || getenv("RINGBUF_TEST_QEMU") ? 600 : 2000;
}

static void random_interleavings_overwrite(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= nseeds(); seed++)
		run_seed(seed, RINGBUF_MODE_OVERWRITE, seed % 2 ? 128 : 256, 400);
}

static void random_interleavings_producer_consumer(void **state)
{
	(void)state;
	for (uint64_t seed = 1; seed <= nseeds(); seed++)
		run_seed(seed, RINGBUF_MODE_PRODUCER_CONSUMER, seed % 2 ? 128 : 256, 400);
}

static void every_test_point_was_cut_into(void **state)
{
	(void)state;
	for (int i = 1; i < NWSTEP; i++) {
		print_message("  %-14s hit %8llu  cut in %7llu\n", tp_names[i] ? tp_names[i] : "(no name)",
			      (unsigned long long)tp_hits[i], (unsigned long long)tp_cut[i]);
		assert_non_null(tp_names[i]); /* a new write step gets its name above */
		assert_true(tp_cut[i] > 0);
	}
	for (int i = 0; i < NSWAP; i++) {
		print_message("  %-14s hit %8llu  cut in %7llu\n", swap_names[i], (unsigned long long)swap_hits[i],
			      (unsigned long long)swap_cut[i]);
		assert_true(swap_cut[i] > 0);
	}
	print_message("  %llu yields of the library counted, not made (one thread)\n", (unsigned long long)one_thread_yields);
}

/* Test points are one enum numbered by the compiler: a hook armed for one
 * step never fires at another. Before, the rseq gate's two points (the gate
 * is gone since) had the values of READER_S1/READER_S2_PREPARED (110/111): a
 * hook armed for a gate window fired inside every plain consume's page
 * swap. */
static unsigned seen_points[256];
static void count_points(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	(void)rb;
	(void)cpu;
	(void)ctx;
	if (point >= 0 && point < 256)
		seen_points[point]++;
}

static void a_page_swap_fires_only_the_swap_points(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	struct ringbuf_record rec;
	uint32_t v[8] = {7}; /* 36 bytes with its header: 3 a page */
	int i, n = 0;
	(void)state;
	assert_true(RINGBUF__TP_END < 256);
	cfg.ncpu = 1;
	cfg.page_size = 128;
	cfg.size_per_cpu = 8 * 128;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	for (i = 0; i < 12; i++) /* four pages */
		assert_int_equal(ringbuf_write(rb, 0, v, sizeof v), 0);
	memset(seen_points, 0, sizeof seen_points);
	ringbuf__set_testpoint_hook(count_points, NULL);
	while (ringbuf_consume(rb, 0, &rec) == 1)
		n++;
	ringbuf__set_testpoint_hook(NULL, NULL);
	ringbuf_destroy(rb);
	assert_int_equal(n, 12);
	/* the swap's steps ran (one swap per page read) ... */
	assert_true(seen_points[RINGBUF__TP_READER_S1] >= 3);
	assert_true(seen_points[RINGBUF__TP_READER_S2_PREPARED] >= 3);
	assert_true(seen_points[RINGBUF__TP_READER_S3] >= 3);
	assert_true(seen_points[RINGBUF__TP_READER_S4] >= 3);
	/* ... and no hook armed for another step saw them */
	assert_int_equal(seen_points[RINGBUF__TP_SHARED_TAKEN], 0);
	assert_int_equal(seen_points[RINGBUF__TP_CURRENT_HELD], 0);
	assert_int_equal(seen_points[RINGBUF__TP_CURRENT_TAKEN], 0);
	assert_int_equal(seen_points[RINGBUF__TP_TCTX_CHOSEN], 0);
	assert_int_equal(seen_points[RINGBUF__TP_MERGED_PEEKED], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(random_interleavings_overwrite),
		cmocka_unit_test(random_interleavings_producer_consumer),
		cmocka_unit_test(every_test_point_was_cut_into),
		cmocka_unit_test(a_page_swap_fires_only_the_swap_points),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
