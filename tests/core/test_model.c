/* Model-based random test (issue 23 goal 5): every public writer and reader
 * call, mixed at random on the same buffers, against a reference model with
 * exact accounting. Defects found by independent harnesses sat where two
 * features meet (two reader calls mixed on one CPU; thread churn with handler
 * writes and the fallback), so this drives their product rather than each
 * path alone:
 *   writers   ringbuf_reserve / commit / discard / ringbuf_write with an
 *             explicit index, RINGBUF_CPU_THREAD and RINGBUF_CPU_CURRENT;
 *             nested writers cutting in at the write path's labelled steps
 *             (test points, as a signal handler would: up to 3 deep), and
 *             writers cutting into the readers' steps (the swap's S1-S4, the
 *             page reads' P2-P3), as another CPU's writer would;
 *   readers   ringbuf_consume, ringbuf_peek, ringbuf_read_page (with and
 *             without RINGBUF_READ_FULL), ringbuf_read_page_ref, a
 *             non-consuming iterator pass, ringbuf_consume_merged, mixed on
 *             the same CPU in one run;
 *   control   record_off / on, record_disable / enable (global and per CPU),
 *             set_mode (overwrite <-> producer/consumer), reset_cpu, quiesce;
 *   fork      a child that writes and drains its copy and checks it;
 *   blocks    ordinary, or per-CPU (RINGBUF_F_CPU_CURRENT) by sequence or by
 *             CAS, with 0 or 1 shared buffers, chosen per seed.
 * The model: every event carries (buffer, nesting level, sequence per buffer
 * and level, length, checksum). Each reader checks the payload, that the
 * event came from the buffer it names, that per (buffer, level) sequences only
 * go up, and that no event is read twice. Per buffer and epoch (a reset_cpu
 * starts one), after a full drain: events read + overwritten == committed,
 * entries == 0, the losses reported (rec.lost, a page's missed count) are the
 * overwritten events plus at most the refused ones, and the library's own
 * counters agree (read_events, committed). Everything is one thread and one
 * seed: a failure is replayed by its seed (MODEL_SEED=n). Counts, never time.
 *
 *   MODEL_SEEDS (default 12) seeds of MODEL_STEPS (default 4000) operations;
 *   make stress runs more.
 */
#define _GNU_SOURCE 1
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
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "pagewalk.h"

#define NB 3        /* buffers */
#define NLEVEL 4    /* 0 top, 1..3 nested */
#define MAXLEN 200
#define PAGE 512
#define MAXSEQ (1u << 18)

struct ev {
	uint32_t buf;   /* the buffer the writer was on */
	uint32_t level;
	uint32_t seq;   /* per (buffer, level), from 1 */
	uint32_t len;   /* payload bytes */
	uint32_t csum;
};

static struct ringbuf *rb;
static uint64_t clk;
static uint64_t rnd;

static uint64_t counter_clock(void *ctx)
{
	(void)ctx;
	return ++clk;
}

static uint32_t rand32(void)
{
	/* xorshift64* */
	rnd ^= rnd >> 12;
	rnd ^= rnd << 25;
	rnd ^= rnd >> 27;
	return (uint32_t)((rnd * 2685821657736338717ull) >> 32);
}

static uint32_t below(uint32_t n)
{
	return n ? rand32() % n : 0;
}

/* ---- the model ----------------------------------------------------------- */

struct bufmodel {
	uint32_t next_seq[NLEVEL];  /* writer side: last sequence given, per level */
	uint32_t last_read[NLEVEL]; /* reader side: last sequence read, per level */
	uint32_t epoch_first[NLEVEL]; /* first sequence of this epoch (reset_cpu) */
	uint64_t committed, read, lost; /* this epoch */
	uint64_t lib_read_base;      /* the library's read_events at the epoch's start */
};
static struct bufmodel M[NB];
static uint8_t seen[NB][NLEVEL][MAXSEQ / 8];
static int depth; /* writers in progress on this thread (nesting) */
static int in_reader;
static uint64_t merged_last_ts;
static uint64_t ops_done[48];

static uint32_t csum_of(const struct ev *e, const unsigned char *p, uint32_t len)
{
	uint32_t h = 2166136261u ^ e->buf ^ (e->level << 8) ^ (e->seq << 12) ^ e->len;
	for (uint32_t i = sizeof *e; i < len; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static void check_event(unsigned cpu, const void *data, size_t len, uint64_t lost)
{
	struct ev e;
	const unsigned char *p = data;
	assert_true(len >= sizeof e);
	memcpy(&e, data, sizeof e);
	assert_int_equal(e.buf, cpu); /* from the buffer it names */
	assert_true(e.level < NLEVEL);
	assert_true(e.len <= len && e.len >= sizeof e);
	assert_int_equal(e.csum, csum_of(&e, p, e.len));
	assert_true(e.seq < MAXSEQ);
	assert_true(e.seq >= M[cpu].epoch_first[e.level]); /* nothing from before a reset */
	assert_true(e.seq > M[cpu].last_read[e.level]);   /* per level, in order */
	assert_false(seen[cpu][e.level][e.seq / 8] & (1u << (e.seq % 8))); /* never twice */
	seen[cpu][e.level][e.seq / 8] |= (uint8_t)(1u << (e.seq % 8));
	M[cpu].last_read[e.level] = e.seq;
	M[cpu].read++;
	M[cpu].lost += lost;
}

/* ---- writers ------------------------------------------------------------- */

static unsigned pick_mode(void)
{
	uint32_t r = below(10);
	return r < 6 ? below(NB) : r < 8 ? RINGBUF_CPU_THREAD : RINGBUF_CPU_CURRENT;
}

/* The buffer whose data pages hold p (a mapped mode's event: THREAD's claim
 * or CURRENT's held buffer; ringbuf_thread_cpu names the claim first). */
static int buf_of(const void *p)
{
	for (unsigned b = 0; b < NB; b++) {
		const char *base = (const char *)ringbuf__cdp(rb, ringbuf__cpu(rb, b), 0);
		size_t size = ((size_t)ringbuf_nr_pages(rb) + 1) << rb->page_shift;
		if ((const char *)p >= base && (const char *)p < base + size)
			return (int)b;
	}
	return -1;
}

/* One event on `mode`; returns 1 committed, 0 refused or discarded. */
static int write_one(unsigned mode)
{
	unsigned char *p;
	struct ev e;
	uint32_t len = sizeof e + below(MAXLEN - (uint32_t)sizeof e);
	int how = (int)below(8);
	int b;
	if (how == 0 && mode < NB) {
		/* ringbuf_write: the payload made first (the buffer is the mode) */
		unsigned char tmp[MAXLEN];
		e.buf = mode;
		e.level = (uint32_t)depth;
		e.seq = ++M[mode].next_seq[depth];
		e.len = len;
		memcpy(tmp, &e, sizeof e);
		for (uint32_t i = sizeof e; i < len; i++)
			tmp[i] = (unsigned char)rand32();
		e.csum = csum_of(&e, tmp, len);
		memcpy(tmp, &e, sizeof e);
		depth++;
		b = ringbuf_write(rb, mode, tmp, len);
		depth--;
		if (b == 0) {
			M[mode].committed++;
			return 1;
		}
		return 0;
	}
	depth++;
	p = ringbuf_reserve(rb, mode, len);
	if (!p) {
		depth--;
		return 0;
	}
	/* the buffer it landed on (mapped modes: the claim or the held buffer) */
	b = mode < NB ? (int)mode : buf_of(p);
	assert_true(b >= 0 && b < NB);
	e.buf = (uint32_t)b;
	e.level = (uint32_t)depth - 1;
	e.seq = ++M[b].next_seq[depth - 1];
	e.len = len;
	memcpy(p, &e, sizeof e);
	for (uint32_t i = sizeof e; i < len; i++)
		p[i] = (unsigned char)rand32();
	e.csum = csum_of(&e, p, len);
	memcpy(p, &e, sizeof e);
	if (how == 1) {
		ringbuf_discard(rb, mode, p);
		depth--;
		return 0;
	}
	ringbuf_commit(rb, mode, p);
	depth--;
	M[b].committed++;
	return 1;
}

/* the test-point hook: nested writers at the write path's steps, another
 * CPU's writer at the readers' steps */
static unsigned hook_mode_of_outer;
static uint32_t hook_rate; /* in 256, per test point passed */

static void hook(struct ringbuf *r, unsigned cpu, int point, void *ctx)
{
	(void)ctx;
	if (r != rb || below(256) >= hook_rate)
		return;
	switch (point) {
	case RINGBUF__TP_READER_S1:
	case RINGBUF__TP_READER_S2_PREPARED:
	case RINGBUF__TP_READER_S2:
	case RINGBUF__TP_READER_S3:
	case RINGBUF__TP_READER_S4:
	case RINGBUF__TP_READ_PAGE_P2:
	case RINGBUF__TP_READ_PAGE_P3:
		/* a writer of the CPU being read, one or a burst */
		if (depth == 0 && cpu < NB) {
			int n = below(4) == 0 ? (int)below(40) : 1;
			for (int i = 0; i < n; i++)
				write_one(cpu);
			ops_done[20]++;
		}
		return;
	case RINGBUF__TP_A_TIME:
	case RINGBUF__TP_B_BEFORE:
	case RINGBUF__TP_C_RESERVED:
	case RINGBUF__TP_D_WRITE_STAMP:
	case RINGBUF__TP_CROSS_CLAIMED:
	case RINGBUF__TP_CROSS_PADDED:
	case RINGBUF__TP_MOVE_TAIL:
	case RINGBUF__TP_H1_UPDATE:
	case RINGBUF__TP_H2_NEW_HEAD:
	case RINGBUF__TP_U1_INTCNT:
	case RINGBUF__TP_U3_MOVED:
	case RINGBUF__TP_COMMIT_PAGE:
	case RINGBUF__TP_COMMIT_END:
	case RINGBUF__TP_SLOT_CHECKED:
	case RINGBUF__TP_COUNTED:
	case RINGBUF__TP_COMMIT_FAST_CHECKED:
	case RINGBUF__TP_COMMIT_FAST_ZERO:
		/* a handler: nested on the interrupted writer's mode */
		if (depth > 0 && depth < NLEVEL && !in_reader) {
			write_one(below(2) ? hook_mode_of_outer : (cpu < NB ? cpu : hook_mode_of_outer));
			ops_done[21]++;
		}
		return;
	default:
		return;
	}
}

/* ---- readers ------------------------------------------------------------- */

struct page_ctx {
	unsigned cpu;
	uint64_t lost;
};

static int page_cb(const struct pw_record *r, void *vctx)
{
	struct page_ctx *pc = vctx;
	if (r->kind != PW_DATA)
		return 0;
	check_event(pc->cpu, r->payload, r->payload_len, pc->lost);
	pc->lost = 0;
	return 0;
}

static void check_page(unsigned cpu, const void *page)
{
	struct pw_page info;
	const char *err = NULL;
	struct page_ctx pc = {cpu, 0};
	assert_int_equal(pw_walk_page(page, PAGE, false, NULL, NULL, &info, &err), 0);
	if (info.missed) {
		assert_true(info.missed_stored);
		pc.lost = info.missed_count;
	}
	assert_int_equal(pw_walk_page(page, PAGE, false, page_cb, &pc, &info, &err), 0);
}

/* One reader call of a random kind on buffer cpu; returns events read (or 1
 * for a call that did something). */
static int read_some(unsigned cpu, int kind)
{
	static unsigned char page[PAGE];
	struct ringbuf_record rec, peeked;
	const void *lent = NULL;
	int r, n = 0;
	in_reader++;
	switch (kind) {
	case 0: /* consume a few */
		for (int i = below(8) + 1; i > 0; i--) {
			r = ringbuf_consume(rb, cpu, &rec);
			assert_true(r >= 0);
			if (r == 0)
				break;
			check_event(cpu, rec.data, rec.len, rec.lost);
			n++;
		}
		break;
	case 1: /* peek, then consume the same event */
		r = ringbuf_peek(rb, cpu, &peeked);
		assert_true(r >= 0);
		if (r == 1) {
			struct ev a, b;
			memcpy(&a, peeked.data, sizeof a);
			assert_int_equal(ringbuf_consume(rb, cpu, &rec), 1);
			memcpy(&b, rec.data, sizeof b);
			assert_int_equal(a.seq, b.seq);
			assert_int_equal(a.level, b.level);
			assert_int_equal(peeked.ts, rec.ts);
			check_event(cpu, rec.data, rec.len, rec.lost);
			n++;
		}
		break;
	case 2:
	case 3: /* a page copy, whole or not */
		r = ringbuf_read_page(rb, cpu, page, PAGE, kind == 3 ? RINGBUF_READ_FULL : 0);
		assert_true(r >= 0 || r == RINGBUF_EAGAIN);
		if (r > 0) {
			check_page(cpu, page);
			n++;
		}
		break;
	case 4: /* a page lent in place */
		r = ringbuf_read_page_ref(rb, cpu, &lent);
		assert_true(r >= 0 || r == RINGBUF_EAGAIN);
		if (r > 0) {
			memcpy(page, lent, PAGE);
			check_page(cpu, page);
			n++;
		}
		break;
	case 5: { /* a non-consuming pass: per level in order, consumes nothing */
		struct ringbuf_iter *it = NULL;
		uint32_t last[NLEVEL] = {0};
		assert_int_equal(ringbuf_iter_start(rb, cpu, &it), 0);
		while ((r = ringbuf_iter_next(it, &rec)) == 1) {
			struct ev e;
			memcpy(&e, rec.data, sizeof e);
			assert_int_equal(e.buf, cpu);
			assert_true(e.level < NLEVEL && e.seq > last[e.level]);
			assert_true(e.seq > M[cpu].last_read[e.level]); /* nothing consumed comes back */
			last[e.level] = e.seq;
		}
		assert_true(r == 0 || r == RINGBUF_EAGAIN);
		ringbuf_iter_finish(it);
		n = 1;
		break;
	}
	default: /* the merged stream: never back in time across the buffers */
		for (int i = below(8) + 1; i > 0; i--) {
			r = ringbuf_consume_merged(rb, &rec);
			assert_true(r >= 0 || r == RINGBUF_EAGAIN);
			if (r != 1)
				break;
			assert_true(rec.cpu < NB);
			assert_true(rec.ts >= merged_last_ts);
			merged_last_ts = rec.ts;
			check_event(rec.cpu, rec.data, rec.len, rec.lost);
			n++;
		}
		break;
	}
	in_reader--;
	ops_done[kind]++;
	return n;
}

/* ---- accounting ---------------------------------------------------------- */

static void drain_and_check(void)
{
	for (unsigned cpu = 0; cpu < NB; cpu++) {
		struct ringbuf_stats st = {0};
		struct ringbuf_record rec;
		int r;
		while ((r = ringbuf_consume(rb, cpu, &rec)) == 1)
			check_event(cpu, rec.data, rec.len, rec.lost);
		assert_int_equal(r, 0);
		assert_int_equal(ringbuf_stats_cpu(rb, cpu, &st), 0);
		assert_int_equal(st.entries, 0);
		/* every committed event read or overwritten, exactly; the losses
		 * reported are the overwritten events plus refused writes
		 * (producer/consumer drops are reported with the next page that
		 * has room: at most those counted) */
		if (M[cpu].read + st.overrun != M[cpu].committed || M[cpu].lost < st.overrun ||
		    M[cpu].lost > st.overrun + st.dropped_events + st.commit_overrun)
			print_message("  buffer %u: committed %llu read %llu lost %llu (overrun %llu dropped %llu)\n", cpu,
				      (unsigned long long)M[cpu].committed, (unsigned long long)M[cpu].read,
				      (unsigned long long)M[cpu].lost, (unsigned long long)st.overrun,
				      (unsigned long long)st.dropped_events);
		assert_int_equal(M[cpu].read + st.overrun, M[cpu].committed);
		assert_true(M[cpu].lost >= st.overrun);
		assert_true(M[cpu].lost <= st.overrun + st.dropped_events + st.commit_overrun);
		assert_int_equal(st.committed, M[cpu].committed);
		assert_int_equal(st.read_events, M[cpu].read);
	}
}

static void new_epoch(unsigned cpu)
{
	for (int l = 0; l < NLEVEL; l++) {
		M[cpu].epoch_first[l] = M[cpu].next_seq[l] + 1;
		M[cpu].last_read[l] = M[cpu].next_seq[l];
	}
	M[cpu].committed = M[cpu].read = M[cpu].lost = 0;
}

/* ---- the driver ---------------------------------------------------------- */

static void run_seed(uint64_t seed, int steps)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	int off = 0, disabled = 0, cpu_off[NB] = {0};
	uint32_t kind;
	rnd = seed * 0x9e3779b97f4a7c15ull + 1;
	memset(M, 0, sizeof M);
	memset(seen, 0, sizeof seen);
	clk = 0;
	merged_last_ts = 0;
	cfg.ncpu = NB;
	cfg.page_size = PAGE;
	cfg.size_per_cpu = PAGE * (4 + below(6));
	cfg.mode = below(2) ? RINGBUF_MODE_OVERWRITE : RINGBUF_MODE_PRODUCER_CONSUMER;
	cfg.clock = counter_clock;
	/* the block's kind: ordinary, or per-CPU (RINGBUF_F_CPU_CURRENT, by
	 * sequence or by CAS) with 0 or 1 shared buffers: THREAD writers make
	 * no claims there, and CURRENT ones whose buffer is held share */
	kind = below(3);
	if (kind) {
		cfg.flags = RINGBUF_F_CPU_CURRENT | (kind == 2 ? RINGBUF_F_NO_RSEQ : 0u);
		cfg.shared = below(2);
	}
	ops_done[40 + kind]++;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	hook_rate = below(40);
	ringbuf__set_testpoint_hook(hook, NULL);
	for (int s = 0; s < steps; s++) {
		uint32_t op = below(100);
		if (op < 45) {
			unsigned mode = pick_mode();
			hook_mode_of_outer = mode;
			write_one(mode);
			ops_done[10]++;
		} else if (op < 85) {
			read_some(below(NB), (int)below(7));
		} else if (op < 88) {
			if (off)
				ringbuf_record_on(rb);
			else
				ringbuf_record_off(rb);
			off = !off;
			ops_done[11]++;
		} else if (op < 90) {
			if (disabled)
				ringbuf_record_enable(rb);
			else
				ringbuf_record_disable(rb);
			disabled = !disabled;
			ops_done[12]++;
		} else if (op < 93) {
			unsigned c = below(NB);
			assert_int_equal(cpu_off[c] ? ringbuf_record_enable_cpu(rb, c) : ringbuf_record_disable_cpu(rb, c),
					 0);
			cpu_off[c] = !cpu_off[c];
			ops_done[13]++;
		} else if (op < 95) {
			/* a mode switch: the accounting holds across it */
			assert_int_equal(ringbuf_set_mode(rb, below(2) ? RINGBUF_MODE_OVERWRITE
								       : RINGBUF_MODE_PRODUCER_CONSUMER),
					 0);
			ops_done[14]++;
		} else if (op < 96) {
			unsigned c = below(NB);
			int r = ringbuf_reset_cpu(rb, c);
			if (r == 0) {
				new_epoch(c);
				ops_done[30]++;
			} else {
				assert_int_equal(r, RINGBUF_ESYS); /* no membarrier here */
			}
		} else if (op < 98) {
			assert_int_equal(ringbuf_quiesce(rb, 0), 0); /* no writer in flight */
			ops_done[15]++;
		} else if (op < 99 && !getenv("MODEL_NO_FORK")) {
			/* a fork child writes and drains its copy, checks it, exits */
			pid_t pid = fork();
			int st = 0;
			assert_true(pid >= 0);
			if (pid == 0) {
				ringbuf__set_testpoint_hook(NULL, NULL);
				if (off)
					ringbuf_record_on(rb);
				if (disabled)
					ringbuf_record_enable(rb);
				for (unsigned c = 0; c < NB; c++)
					if (cpu_off[c])
						ringbuf_record_enable_cpu(rb, c);
				for (int i = 0; i < 50; i++)
					write_one(pick_mode());
				drain_and_check();
				_exit(0);
			}
			assert_int_equal(waitpid(pid, &st, 0), pid);
			assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
			ops_done[16]++;
		} else {
			ringbuf_thread_release(rb);
			ops_done[17]++;
		}
	}
	ringbuf__set_testpoint_hook(NULL, NULL);
	drain_and_check();
	ringbuf_thread_release(rb);
	ringbuf_destroy(rb);
	rb = NULL;
}

static void random_mixes_of_every_call_keep_exact_accounting(void **state)
{
	const char *e;
	int seeds = (e = getenv("MODEL_SEEDS")) ? atoi(e) : 12;
	int steps = (e = getenv("MODEL_STEPS")) ? atoi(e) : 4000;
	uint64_t first = (e = getenv("MODEL_SEED")) ? strtoull(e, NULL, 10) : 1;
	uint64_t committed = 0, read = 0, lost = 0;
	(void)state;
	if (getenv("MODEL_SEED"))
		seeds = 1;
	for (int i = 0; i < seeds; i++) {
		run_seed(first + (uint64_t)i, steps);
		for (unsigned c = 0; c < NB; c++) {
			committed += M[c].committed;
			read += M[c].read;
			lost += M[c].lost;
		}
	}
	print_message("  %d seeds x %d steps: last epochs %llu committed = %llu read + %llu lost; writes %llu "
		      "(+%llu nested at write steps, %llu cut into reader steps), consume %llu, peek %llu, read_page "
		      "%llu / FULL %llu, read_page_ref %llu, iterator %llu, merged %llu, off/on %llu, "
		      "disable %llu, cpu disable %llu, set_mode %llu, resets %llu, quiesce %llu, forks %llu; blocks: "
		      "%llu ordinary, %llu per-CPU, %llu per-CPU by CAS\n",
		      seeds, steps, (unsigned long long)committed, (unsigned long long)read,
		      (unsigned long long)lost, (unsigned long long)ops_done[10], (unsigned long long)ops_done[21],
		      (unsigned long long)ops_done[20], (unsigned long long)ops_done[0],
		      (unsigned long long)ops_done[1], (unsigned long long)ops_done[2],
		      (unsigned long long)ops_done[3], (unsigned long long)ops_done[4],
		      (unsigned long long)ops_done[5], (unsigned long long)ops_done[6],
		      (unsigned long long)ops_done[11], (unsigned long long)ops_done[12],
		      (unsigned long long)ops_done[13], (unsigned long long)ops_done[14],
		      (unsigned long long)ops_done[30], (unsigned long long)ops_done[15],
		      (unsigned long long)ops_done[16], (unsigned long long)ops_done[40],
		      (unsigned long long)ops_done[41], (unsigned long long)ops_done[42]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(random_mixes_of_every_call_keep_exact_accounting),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
