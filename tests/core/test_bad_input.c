/* test_bad_input.c - every bad call gets its error code and changes nothing
 * SPDX-License-Identifier: MIT
 *
 * A table of bad calls, each with the code it must return and the counters it
 * may move. The live buffer is built with ringbuf_init_in() in our own block,
 * holding unread events on two CPUs with a partly consumed reader page; after
 * each row the whole block is compared byte for byte with a copy taken before
 * the call (with only the expected counters patched in), the statistics are
 * compared, and at the end every event is read back intact. Then the control
 * calls (record on/off, disable/enable, per CPU), ringbuf_strerror() and the
 * no-malloc ringbuf_init_in() into a static array.
 */
#define _GNU_SOURCE 1 /* ringbuf.h is not the first header here (allocator hooks) */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Count the library's allocations; a test can make the next one fail. */
static size_t n_malloc, n_free;
static int fail_next_malloc;
static void *count_malloc(size_t sz)
{
	if (fail_next_malloc) {
		fail_next_malloc = 0;
		return NULL;
	}
	n_malloc++;
	return malloc(sz);
}
static void count_free(void *p)
{
	if (p)
		n_free++;
	free(p);
}
#define RINGBUF_MALLOC(sz, ctx) ((void)(ctx), count_malloc(sz))
#define RINGBUF_FREE(p, ctx) ((void)(ctx), count_free(p))

#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"
#include "pagewalk.h" /* PW_MAX_EVENT: the largest event for the word size */

/* ---- the live buffer ------------------------------------------------------- */

#define NCPU 2u
#define PGSZ 256u
#define NEV0 10u /* events written on cpu 0 */
#define NEV1 5u  /* on cpu 1 */
#define READ0 3u /* consumed from cpu 0 before the rows run */

struct env {
	struct ringbuf *rb;
	unsigned char *block; /* ringbuf_init_in() memory */
	size_t size;
	unsigned char *snap;  /* copy of block before a row */
	unsigned char *scratch; /* memory handed to failing ringbuf_init_in() calls */
	size_t scratch_size;
	struct ringbuf *out;  /* where failing constructors must not write */
	struct ringbuf_config cfg;
	uint8_t data[8192];
};

static struct env E;
#define OUT_SENTINEL ((struct ringbuf *)(uintptr_t)0x5a5a5a50u)
#define SCRATCH_BYTE 0xa5

static uint64_t now = 1000;
static uint64_t test_clock(void *ctx)
{
	(void)ctx;
	return now;
}

static uint8_t pat(unsigned cpu, unsigned k, size_t i) { return (uint8_t)(cpu * 97u + k * 31u + i * 3u + 1u); }
static uint32_t ev_len(unsigned cpu, unsigned k) { return 1 + (cpu * 7u + k * 13u) % 60u; }

static void write_ev(struct ringbuf *rb, unsigned cpu, unsigned k)
{
	uint8_t buf[64];
	uint32_t len = ev_len(cpu, k);
	for (size_t i = 0; i < len; i++)
		buf[i] = pat(cpu, k, i);
	now += 10;
	assert_int_equal(ringbuf_write(rb, cpu, buf, len), 0);
}

static void read_ev(struct ringbuf *rb, unsigned cpu, unsigned k)
{
	struct ringbuf_record rec;
	uint32_t len = ev_len(cpu, k);
	assert_int_equal(ringbuf_consume(rb, cpu, &rec), 1);
	assert_int_equal(rec.cpu, cpu);
	assert_int_equal(rec.len, (len + 3) / 4 * 4 + (len >= 5 && len <= 8 ? 4 : 0));
	assert_int_equal(rec.lost, 0);
	for (size_t i = 0; i < len; i++)
		assert_int_equal(((const uint8_t *)rec.data)[i], pat(cpu, k, i));
}

static int env_setup(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	unsigned k;
	(void)state;
	memset(&E, 0, sizeof E);
	cfg.ncpu = NCPU;
	cfg.page_size = PGSZ;
	cfg.size_per_cpu = 4 * PGSZ;
	cfg.clock = test_clock;
	E.cfg = cfg;
	assert_int_equal(ringbuf_size_needed(&cfg, &E.size), 0);
	E.block = aligned_alloc(64, (E.size + 63) / 64 * 64);
	E.snap = malloc(E.size);
	E.scratch_size = E.size + 128;
	E.scratch = aligned_alloc(64, E.scratch_size);
	assert_true(E.block && E.snap && E.scratch);
	memset(E.scratch, SCRATCH_BYTE, E.scratch_size);
	assert_int_equal(ringbuf_init_in(E.block, E.size, &cfg, &E.rb), 0);
	assert_ptr_equal(E.rb, E.block);
	for (k = 0; k < NEV0; k++)
		write_ev(E.rb, 0, k);
	for (k = 0; k < NEV1; k++)
		write_ev(E.rb, 1, k);
	for (k = 0; k < READ0; k++)
		read_ev(E.rb, 0, k);
	for (k = 0; k < sizeof E.data; k++)
		E.data[k] = (uint8_t)k;
	return 0;
}

static int env_teardown(void **state)
{
	(void)state;
	ringbuf_destroy(E.rb);
	free(E.block);
	free(E.snap);
	free(E.scratch);
	return 0;
}

/* ---- the rows ----------------------------------------------------------------- */

enum {
	RC_NULL = 1000,  /* a pointer-returning call returned NULL */
	RC_PTR,          /* ... returned non-NULL (always wrong here) */
	RC_VOID,         /* a void call returned */
	RC_OUT_WRITTEN,  /* a failing constructor wrote *out */
};

typedef int (*call_fn)(void);

static int ptr_rc(const void *p) { return p ? RC_PTR : RC_NULL; }

static struct ringbuf_config bad_cfg(void)
{
	struct ringbuf_config c = E.cfg;
	return c;
}

/* Run a constructor three ways (size_needed, init_in, create) on cfg: all
 * must agree; returns the code, or RC_OUT_WRITTEN if *out was touched. */
static int construct_all(const struct ringbuf_config *cfg)
{
	size_t sz = 12345;
	int a = ringbuf_size_needed(cfg, &sz);
	int b, c;
	if (a < 0 && sz != 12345)
		return RC_OUT_WRITTEN;
	E.out = OUT_SENTINEL;
	b = ringbuf_init_in(E.scratch, E.scratch_size, cfg, &E.out);
	if (E.out != OUT_SENTINEL)
		return RC_OUT_WRITTEN;
	c = ringbuf_create(cfg, &E.out);
	if (E.out != OUT_SENTINEL)
		return RC_OUT_WRITTEN;
	if (a != b || b != c) {
		print_message("size_needed %d, init_in %d, create %d\n", a, b, c);
		return 9999;
	}
	return a;
}

#define CFG_ROW(name, field, value)                        \
	static int name(void)                              \
	{                                                  \
		struct ringbuf_config c = bad_cfg();       \
		c.field = value;                           \
		return construct_all(&c);                  \
	}
CFG_ROW(cfg_ncpu_0, ncpu, 0)
CFG_ROW(cfg_ncpu_huge, ncpu, 65537)
CFG_ROW(cfg_page_63, page_size, 63)
CFG_ROW(cfg_page_100, page_size, 100)
CFG_ROW(cfg_page_3000, page_size, 3000)
CFG_ROW(cfg_page_2m, page_size, (size_t)1 << 21)
CFG_ROW(cfg_page_32, page_size, 32)
CFG_ROW(cfg_page_4097, page_size, 4097)
CFG_ROW(cfg_page_sizemax, page_size, SIZE_MAX)
CFG_ROW(cfg_mode_2, mode, 2)
CFG_ROW(cfg_mode_neg, mode, -1)
CFG_ROW(cfg_mode_7, mode, 7)
CFG_ROW(cfg_ts_mode_2, ts_mode, 2)
CFG_ROW(cfg_ts_mode_neg, ts_mode, -1)
CFG_ROW(cfg_flags_16, flags, 16u) /* 1, 2, 4 and 8 are ALIGN8, ZEROED, NO_RSEQ, CPU_CURRENT */
CFG_ROW(cfg_shared_over, shared, E.cfg.ncpu + 1) /* more shared buffers than buffers */
CFG_ROW(cfg_flags_high, flags, 0x80000000u)
CFG_ROW(cfg_flags_all, flags, ~0u)
CFG_ROW(cfg_size_per_cpu_max, size_per_cpu, SIZE_MAX)

static int size_needed_null_cfg(void)
{
	size_t sz = 7;
	int r = ringbuf_size_needed(NULL, &sz);
	return sz == 7 ? r : RC_OUT_WRITTEN;
}
static int size_needed_null_out(void) { return ringbuf_size_needed(&E.cfg, NULL); }
static int create_null_cfg(void)
{
	E.out = OUT_SENTINEL;
	int r = ringbuf_create(NULL, &E.out);
	return E.out == OUT_SENTINEL ? r : RC_OUT_WRITTEN;
}
static int create_null_out(void) { return ringbuf_create(&E.cfg, NULL); }
static int create_malloc_fails(void)
{
	E.out = OUT_SENTINEL;
	fail_next_malloc = 1;
	int r = ringbuf_create(&E.cfg, &E.out);
	fail_next_malloc = 0;
	return E.out == OUT_SENTINEL ? r : RC_OUT_WRITTEN;
}
static int init_in_null_mem(void)
{
	E.out = OUT_SENTINEL;
	int r = ringbuf_init_in(NULL, E.scratch_size, &E.cfg, &E.out);
	return E.out == OUT_SENTINEL ? r : RC_OUT_WRITTEN;
}
static int init_in_null_cfg(void)
{
	E.out = OUT_SENTINEL;
	int r = ringbuf_init_in(E.scratch, E.scratch_size, NULL, &E.out);
	return E.out == OUT_SENTINEL ? r : RC_OUT_WRITTEN;
}
static int init_in_null_out(void) { return ringbuf_init_in(E.scratch, E.scratch_size, &E.cfg, NULL); }
static int init_in_one_byte_short(void)
{
	size_t need = 0;
	assert_int_equal(ringbuf_size_needed(&E.cfg, &need), 0);
	E.out = OUT_SENTINEL;
	int r = ringbuf_init_in(E.scratch, need - 1, &E.cfg, &E.out);
	return E.out == OUT_SENTINEL ? r : RC_OUT_WRITTEN;
}
static int init_in_size_0(void)
{
	E.out = OUT_SENTINEL;
	int r = ringbuf_init_in(E.scratch, 0, &E.cfg, &E.out);
	return E.out == OUT_SENTINEL ? r : RC_OUT_WRITTEN;
}
static int init_in_misaligned(size_t by)
{
	E.out = OUT_SENTINEL;
	int r = ringbuf_init_in(E.scratch + by, E.scratch_size - by, &E.cfg, &E.out);
	return E.out == OUT_SENTINEL ? r : RC_OUT_WRITTEN;
}
static int init_in_mis1(void) { return init_in_misaligned(1); }
static int init_in_mis8(void) { return init_in_misaligned(8); }
static int init_in_mis32(void) { return init_in_misaligned(32); }
static int init_in_mis63(void) { return init_in_misaligned(63); }

static int reserve_len0_cpu0(void) { return ptr_rc(ringbuf_reserve(E.rb, 0, 0)); }
static int reserve_len0_cpu1(void) { return ptr_rc(ringbuf_reserve(E.rb, 1, 0)); }
static int reserve_max1_cpu0(void) { return ptr_rc(ringbuf_reserve(E.rb, 0, ringbuf_max_event_size(E.rb) + 1)); }
static int reserve_max1_cpu1(void) { return ptr_rc(ringbuf_reserve(E.rb, 1, PW_MAX_EVENT(PGSZ, false) + 1)); }
static int reserve_sizemax(void) { return ptr_rc(ringbuf_reserve(E.rb, 1, SIZE_MAX)); }
/* 2^32 + 4 (SIZE_MAX with a 32-bit size_t): must not be taken as 4 */
static int reserve_4g(void)
{
	return ptr_rc(ringbuf_reserve(E.rb, 0, (size_t)(sizeof(size_t) > 4 ? (uint64_t)UINT32_MAX + 5 : SIZE_MAX)));
}
static int reserve_cpu_2(void) { return ptr_rc(ringbuf_reserve(E.rb, NCPU, 4)); }
static int reserve_cpu_max(void) { return ptr_rc(ringbuf_reserve(E.rb, UINT_MAX, 4)); }
static int reserve_cpu_2_len0(void) { return ptr_rc(ringbuf_reserve(E.rb, NCPU, 0)); }
static int reserve_null_rb(void) { return ptr_rc(ringbuf_reserve(NULL, 0, 4)); }

static int write_len0(void) { return ringbuf_write(E.rb, 0, E.data, 0); }
static int write_null_data(void) { return ringbuf_write(E.rb, 0, NULL, 4); }
static int write_null_data_len0(void) { return ringbuf_write(E.rb, 1, NULL, 0); }
static int write_too_big(void) { return ringbuf_write(E.rb, 1, E.data, PW_MAX_EVENT(PGSZ, false) + 1); }
static int write_sizemax(void) { return ringbuf_write(E.rb, 0, E.data, SIZE_MAX); }
static int write_cpu_2(void) { return ringbuf_write(E.rb, NCPU, E.data, 4); }
static int write_cpu_2_len0(void) { return ringbuf_write(E.rb, NCPU, E.data, 0); }
static int write_null_rb(void) { return ringbuf_write(NULL, 0, E.data, 4); }

static struct ringbuf_record g_rec;
static struct ringbuf_stats g_st;
static int consume_cpu_2(void) { return ringbuf_consume(E.rb, NCPU, &g_rec); }
static int consume_cpu_max(void) { return ringbuf_consume(E.rb, UINT_MAX, &g_rec); }
static int consume_null_rec(void) { return ringbuf_consume(E.rb, 0, NULL); }
static int consume_null_rb(void) { return ringbuf_consume(NULL, 0, &g_rec); }
static int peek_cpu_2(void) { return ringbuf_peek(E.rb, NCPU, &g_rec); }
static int peek_null_rec(void) { return ringbuf_peek(E.rb, 1, NULL); }
static int peek_null_rb(void) { return ringbuf_peek(NULL, 0, &g_rec); }
static int empty_cpu_2(void) { return ringbuf_empty_cpu(E.rb, NCPU); }
static int stats_cpu_2(void) { return ringbuf_stats_cpu(E.rb, NCPU, &g_st); }
static int stats_cpu_null_st(void) { return ringbuf_stats_cpu(E.rb, 0, NULL); }
static int stats_cpu_null_rb(void) { return ringbuf_stats_cpu(NULL, 0, &g_st); }
static int stats_null_st(void) { return ringbuf_stats(E.rb, NULL); }
static int stats_null_rb(void) { return ringbuf_stats(NULL, &g_st); }
static int reset_cpu_2(void) { return ringbuf_reset_cpu(E.rb, NCPU); }
static int reset_cpu_null_rb(void) { return ringbuf_reset_cpu(NULL, 0); }
static int reset_null_rb(void) { return ringbuf_reset(NULL); }
static int disable_cpu_2(void) { return ringbuf_record_disable_cpu(E.rb, NCPU); }
static int disable_cpu_null_rb(void) { return ringbuf_record_disable_cpu(NULL, 0); }
static int enable_cpu_2(void) { return ringbuf_record_enable_cpu(E.rb, NCPU); }
static int enable_cpu_null_rb(void) { return ringbuf_record_enable_cpu(NULL, 0); }
static int set_mode_7(void) { return ringbuf_set_mode(E.rb, 7); }
static int set_mode_2(void) { return ringbuf_set_mode(E.rb, 2); }
static int set_mode_neg(void) { return ringbuf_set_mode(E.rb, -1); }
static int set_mode_null_rb(void) { return ringbuf_set_mode(NULL, RINGBUF_MODE_OVERWRITE); }
static int get_mode_null_rb(void) { return ringbuf_get_mode(NULL); }
static int page_fn(const void *page, size_t size, int role, void *ctx)
{
	(void)page, (void)size, (void)role, (void)ctx;
	return 0;
}
static int walk_cpu_2(void) { return ringbuf__walk_pages(E.rb, NCPU, page_fn, NULL); }
static int walk_null_fn(void) { return ringbuf__walk_pages(E.rb, 0, NULL, NULL); }

static int commit_null_data(void) { ringbuf_commit(E.rb, 0, NULL); return RC_VOID; }
static int discard_null_data(void) { ringbuf_discard(E.rb, 1, NULL); return RC_VOID; }
static int commit_nothing_reserved(void) { ringbuf_commit(E.rb, 0, E.data); return RC_VOID; }
static int discard_nothing_reserved(void) { ringbuf_discard(E.rb, 0, E.data); return RC_VOID; }
static int commit_cpu_2(void) { ringbuf_commit(E.rb, NCPU, E.data); return RC_VOID; }
static int discard_cpu_2(void) { ringbuf_discard(E.rb, NCPU, E.data); return RC_VOID; }
static int commit_null_rb(void) { ringbuf_commit(NULL, 0, E.data); return RC_VOID; }
static int discard_null_rb(void) { ringbuf_discard(NULL, 0, E.data); return RC_VOID; }
static int destroy_null(void) { ringbuf_destroy(NULL); return RC_VOID; }
/* the mapped modes written as constants (the inline commit's own branches) */
static int commit_thread_null_rb(void) { ringbuf_commit(NULL, RINGBUF_CPU_THREAD, E.data); return RC_VOID; }
static int commit_thread_null_data(void) { ringbuf_commit(E.rb, RINGBUF_CPU_THREAD, NULL); return RC_VOID; }
static int commit_thread_nothing_reserved(void) { ringbuf_commit(E.rb, RINGBUF_CPU_THREAD, E.data); return RC_VOID; }
static int commit_current_null_rb(void) { ringbuf_commit(NULL, RINGBUF_CPU_CURRENT, E.data); return RC_VOID; }
static int commit_current_null_data(void) { ringbuf_commit(E.rb, RINGBUF_CPU_CURRENT, NULL); return RC_VOID; }
static int commit_current_nothing_reserved(void) { ringbuf_commit(E.rb, RINGBUF_CPU_CURRENT, E.data); return RC_VOID; }
static int control_null_rb(void)
{
	ringbuf_record_on(NULL);
	ringbuf_record_off(NULL);
	ringbuf_record_disable(NULL);
	ringbuf_record_enable(NULL);
	return RC_VOID;
}
static int getters_null_rb(void)
{
	/* each is 0 / false on NULL: the sum is 0 only if all are */
	return (int)(ringbuf_ncpu(NULL) + ringbuf_page_size(NULL) + ringbuf_nr_pages(NULL) +
		     ringbuf_max_event_size(NULL) + ringbuf_time_stamp(NULL) +
		     (ringbuf_record_is_on(NULL) ? 1 : 0));
}
static int strerror_calls(void)
{
	/* reading the table changes nothing */
	return ringbuf_strerror(RINGBUF_EINVAL)[0] ? 0 : 1;
}

struct row {
	const char *what;
	call_fn call;
	int expect;
	uint64_t rejected[NCPU]; /* rejected_events each CPU must gain */
};

#define ROW(fn, rc) {#fn, fn, rc, {0, 0}}
#define ROWR(fn, rc, r0, r1) {#fn, fn, rc, {r0, r1}}

static const struct row rows[] = {
	/* lifecycle */
	ROW(size_needed_null_cfg, RINGBUF_EINVAL),
	ROW(size_needed_null_out, RINGBUF_EINVAL),
	ROW(create_null_cfg, RINGBUF_EINVAL),
	ROW(create_null_out, RINGBUF_EINVAL),
	ROW(create_malloc_fails, RINGBUF_ENOMEM),
	ROW(init_in_null_mem, RINGBUF_EINVAL),
	ROW(init_in_null_cfg, RINGBUF_EINVAL),
	ROW(init_in_null_out, RINGBUF_EINVAL),
	ROW(init_in_one_byte_short, RINGBUF_ENOMEM),
	ROW(init_in_size_0, RINGBUF_ENOMEM),
	ROW(init_in_mis1, RINGBUF_EALIGN),
	ROW(init_in_mis8, RINGBUF_EALIGN),
	ROW(init_in_mis32, RINGBUF_EALIGN),
	ROW(init_in_mis63, RINGBUF_EALIGN),
	ROW(cfg_ncpu_0, RINGBUF_EINVAL),
	ROW(cfg_ncpu_huge, RINGBUF_EINVAL),
	ROW(cfg_page_63, RINGBUF_EINVAL),
	ROW(cfg_page_100, RINGBUF_EINVAL),
	ROW(cfg_page_3000, RINGBUF_EINVAL),
	ROW(cfg_page_2m, RINGBUF_EINVAL),
	ROW(cfg_page_32, RINGBUF_EINVAL),
	ROW(cfg_page_4097, RINGBUF_EINVAL),
	ROW(cfg_page_sizemax, RINGBUF_EINVAL),
	ROW(cfg_mode_2, RINGBUF_EINVAL),
	ROW(cfg_mode_neg, RINGBUF_EINVAL),
	ROW(cfg_mode_7, RINGBUF_EINVAL),
	ROW(cfg_ts_mode_2, RINGBUF_EINVAL),
	ROW(cfg_ts_mode_neg, RINGBUF_EINVAL),
	ROW(cfg_flags_16, RINGBUF_EINVAL),
	ROW(cfg_shared_over, RINGBUF_EINVAL),
	ROW(cfg_flags_high, RINGBUF_EINVAL),
	ROW(cfg_flags_all, RINGBUF_EINVAL),
	/* 64-bit: more pages than a descriptor can index; 32-bit: fits the index,
	 * but the block would not fit the address space */
	ROW(cfg_size_per_cpu_max, sizeof(size_t) < 8 ? RINGBUF_ENOMEM : RINGBUF_EINVAL),
	/* writer: refused input is counted where there is a CPU buffer to count it */
	ROWR(reserve_len0_cpu0, RC_NULL, 1, 0),
	ROWR(reserve_len0_cpu1, RC_NULL, 0, 1),
	ROWR(reserve_max1_cpu0, RC_NULL, 1, 0),
	ROWR(reserve_max1_cpu1, RC_NULL, 0, 1),
	ROWR(reserve_sizemax, RC_NULL, 0, 1),
	ROWR(reserve_4g, RC_NULL, 1, 0),
	ROW(reserve_cpu_2, RC_NULL),
	ROW(reserve_cpu_max, RC_NULL),
	ROW(reserve_cpu_2_len0, RC_NULL),
	ROW(reserve_null_rb, RC_NULL),
	ROWR(write_len0, RINGBUF_EINVAL, 1, 0),
	ROWR(write_null_data, RINGBUF_EINVAL, 1, 0),
	ROWR(write_null_data_len0, RINGBUF_EINVAL, 0, 1),
	ROWR(write_too_big, RINGBUF_E2BIG, 0, 1),
	ROWR(write_sizemax, RINGBUF_E2BIG, 1, 0),
	ROW(write_cpu_2, RINGBUF_EINVAL),
	ROW(write_cpu_2_len0, RINGBUF_EINVAL),
	ROW(write_null_rb, RINGBUF_EINVAL),
	ROW(commit_null_data, RC_VOID),
	ROW(discard_null_data, RC_VOID),
	ROW(commit_nothing_reserved, RC_VOID),
	ROW(discard_nothing_reserved, RC_VOID),
	ROW(commit_cpu_2, RC_VOID),
	ROW(discard_cpu_2, RC_VOID),
	ROW(commit_null_rb, RC_VOID),
	ROW(discard_null_rb, RC_VOID),
	ROW(commit_thread_null_rb, RC_VOID),
	ROW(commit_thread_null_data, RC_VOID),
	ROW(commit_thread_nothing_reserved, RC_VOID),
	ROW(commit_current_null_rb, RC_VOID),
	ROW(commit_current_null_data, RC_VOID),
	ROW(commit_current_nothing_reserved, RC_VOID),
	/* reader */
	ROW(consume_cpu_2, RINGBUF_EINVAL),
	ROW(consume_cpu_max, RINGBUF_EINVAL),
	ROW(consume_null_rec, RINGBUF_EINVAL),
	ROW(consume_null_rb, RINGBUF_EINVAL),
	ROW(peek_cpu_2, RINGBUF_EINVAL),
	ROW(peek_null_rec, RINGBUF_EINVAL),
	ROW(peek_null_rb, RINGBUF_EINVAL),
	ROW(empty_cpu_2, 1),
	/* statistics and control */
	ROW(stats_cpu_2, RINGBUF_EINVAL),
	ROW(stats_cpu_null_st, RINGBUF_EINVAL),
	ROW(stats_cpu_null_rb, RINGBUF_EINVAL),
	ROW(stats_null_st, RINGBUF_EINVAL),
	ROW(stats_null_rb, RINGBUF_EINVAL),
	ROW(reset_cpu_2, RINGBUF_EINVAL),
	ROW(reset_cpu_null_rb, RINGBUF_EINVAL),
	ROW(reset_null_rb, RINGBUF_EINVAL),
	ROW(disable_cpu_2, RINGBUF_EINVAL),
	ROW(disable_cpu_null_rb, RINGBUF_EINVAL),
	ROW(enable_cpu_2, RINGBUF_EINVAL),
	ROW(enable_cpu_null_rb, RINGBUF_EINVAL),
	ROW(set_mode_7, RINGBUF_EINVAL),
	ROW(set_mode_2, RINGBUF_EINVAL),
	ROW(set_mode_neg, RINGBUF_EINVAL),
	ROW(set_mode_null_rb, RINGBUF_EINVAL),
	ROW(get_mode_null_rb, RINGBUF_EINVAL),
	ROW(walk_cpu_2, RINGBUF_EINVAL),
	ROW(walk_null_fn, RINGBUF_EINVAL),
	ROW(destroy_null, RC_VOID),
	ROW(control_null_rb, RC_VOID),
	ROW(getters_null_rb, 0),
	ROW(strerror_calls, 0),
};

static size_t field_off(const void *field) { return (size_t)((const unsigned char *)field - E.block); }

static void stats_equal(const struct ringbuf_stats *a, const struct ringbuf_stats *b)
{
	assert_int_equal(a->entries, b->entries);
	assert_int_equal(a->committed, b->committed);
	assert_int_equal(a->overrun, b->overrun);
	assert_int_equal(a->commit_overrun, b->commit_overrun);
	assert_int_equal(a->dropped_events, b->dropped_events);
	assert_int_equal(a->read_events, b->read_events);
	assert_int_equal(a->bytes, b->bytes);
	assert_int_equal(a->oldest_event_ts, b->oldest_event_ts);
	assert_int_equal(a->pages_touched, b->pages_touched);
	assert_int_equal(a->pages_lost, b->pages_lost);
	assert_int_equal(a->pages_read, b->pages_read);
	assert_int_equal(a->disabled_events, b->disabled_events);
	assert_int_equal(a->rejected_events, b->rejected_events);
	assert_int_equal(a->nest_overflow, b->nest_overflow);
	assert_int_equal(a->discarded, b->discarded);
}

static void test_bad_call_table(void **state)
{
	size_t i;
	unsigned cpu;
	uint64_t rejected_total[NCPU] = {0, 0};
	(void)state;
	for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const struct row *r = &rows[i];
		struct ringbuf_stats before[NCPU], after[NCPU];
		size_t m0 = n_malloc, f0 = n_free, j;
		int rc;

		for (cpu = 0; cpu < NCPU; cpu++)
			assert_int_equal(ringbuf_stats_cpu(E.rb, cpu, &before[cpu]), 0);
		memcpy(E.snap, E.block, E.size);

		rc = r->call();
		if (rc != r->expect)
			print_message("row %zu %s: returned %d, expected %d\n", i, r->what, rc, r->expect);
		assert_int_equal(rc, r->expect);

		/* the block is unchanged but for the expected counters */
		for (cpu = 0; cpu < NCPU; cpu++) {
			size_t off = field_off(&ringbuf__cpu(E.rb, cpu)->rejected_events);
			uint64_t v;
			memcpy(&v, E.snap + off, sizeof v);
			v += r->rejected[cpu];
			memcpy(E.snap + off, &v, sizeof v);
			rejected_total[cpu] += r->rejected[cpu];
		}
		for (j = 0; j < E.size; j++)
			if (E.snap[j] != E.block[j]) {
				print_message("row %zu %s: buffer byte %zu changed (0x%02x -> 0x%02x)\n", i,
					      r->what, j, E.snap[j], E.block[j]);
				fail();
			}
		for (cpu = 0; cpu < NCPU; cpu++) {
			assert_int_equal(ringbuf_stats_cpu(E.rb, cpu, &after[cpu]), 0);
			before[cpu].rejected_events += r->rejected[cpu];
			stats_equal(&before[cpu], &after[cpu]);
		}
		/* failing constructors allocate nothing, or free what they took */
		assert_int_equal(n_malloc - m0, n_free - f0);
		/* and never touch the memory they were offered */
		for (j = 0; j < E.scratch_size; j++)
			if (E.scratch[j] != SCRATCH_BYTE) {
				print_message("row %zu %s: scratch byte %zu written\n", i, r->what, j);
				fail();
			}
	}
	print_message("  %zu bad calls\n", sizeof rows / sizeof rows[0]);

	/* the counters are exactly what the rows added, and the events are intact */
	{
		struct ringbuf_stats st;
		unsigned k;
		assert_int_equal(ringbuf_stats_cpu(E.rb, 0, &st), 0);
		assert_int_equal(st.rejected_events, rejected_total[0]);
		assert_int_equal(st.committed, NEV0);
		assert_int_equal(st.entries, NEV0 - READ0);
		assert_int_equal(st.disabled_events + st.dropped_events + st.commit_overrun, 0);
		assert_int_equal(ringbuf_stats_cpu(E.rb, 1, &st), 0);
		assert_int_equal(st.rejected_events, rejected_total[1]);
		assert_int_equal(st.committed, NEV1);
		assert_int_equal(ringbuf_get_mode(E.rb), RINGBUF_MODE_OVERWRITE);
		assert_true(ringbuf_record_is_on(E.rb));
		for (k = READ0; k < NEV0; k++)
			read_ev(E.rb, 0, k);
		for (k = 0; k < NEV1; k++)
			read_ev(E.rb, 1, k);
		assert_int_equal(ringbuf_consume(E.rb, 0, &g_rec), 0);
		assert_int_equal(ringbuf_consume(E.rb, 1, &g_rec), 0);
		/* and the buffer still works */
		write_ev(E.rb, 1, 99);
		read_ev(E.rb, 1, 99);
	}
}

/* ---- valid edge values of the same parameters ------------------------------------ */

static void test_page_size_zero_means_default(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT, c4 = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	size_t a = 0, b = 0;
	(void)state;
	cfg.page_size = 0;
	c4.page_size = 4096;
	assert_int_equal(ringbuf_size_needed(&cfg, &a), 0);
	assert_int_equal(ringbuf_size_needed(&c4, &b), 0);
	assert_int_equal(a, b);
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	assert_int_equal(ringbuf_page_size(rb), 4096);
	assert_int_equal(ringbuf_max_event_size(rb), PW_MAX_EVENT(4096, false)); /* 4072 on 64-bit */
	assert_int_equal(ringbuf_nr_pages(rb), 256); /* 1 MiB default */
	assert_int_equal(ringbuf_ncpu(rb), 1);
	assert_int_equal(ringbuf_write(rb, 0, "abcd", 4), 0);
	ringbuf_destroy(rb);
}

static void test_page_size_limits_accepted(void **state)
{
	static const size_t ok[] = {64, 128, 1u << 20};
	(void)state;
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
		struct ringbuf *rb = NULL;
		cfg.page_size = ok[i];
		cfg.size_per_cpu = 1; /* rounds up to the 2-page minimum */
		assert_int_equal(ringbuf_create(&cfg, &rb), 0);
		assert_int_equal(ringbuf_nr_pages(rb), 2);
		assert_int_equal(ringbuf_max_event_size(rb), PW_MAX_EVENT(ok[i], false));
		void *p = ringbuf_reserve(rb, 0, PW_MAX_EVENT(ok[i], false));
		assert_non_null(p);
		memset(p, 0x11, PW_MAX_EVENT(ok[i], false));
		ringbuf_commit(rb, 0, p);
		assert_null(ringbuf_reserve(rb, 0, PW_MAX_EVENT(ok[i], false) + 1));
		ringbuf_destroy(rb);
	}
}

static void test_init_in_exact_size_works(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	size_t need = 0;
	unsigned char *mem;
	(void)state;
	cfg.page_size = 128;
	cfg.size_per_cpu = 1024;
	cfg.ncpu = 3;
	assert_int_equal(ringbuf_size_needed(&cfg, &need), 0);
	mem = aligned_alloc(64, (need + 63) / 64 * 64);
	assert_non_null(mem);
	assert_int_equal(ringbuf_init_in(mem, need - 1, &cfg, &rb), RINGBUF_ENOMEM);
	assert_null(rb);
	assert_int_equal(ringbuf_init_in(mem, need, &cfg, &rb), 0);
	assert_ptr_equal(rb, mem);
	assert_int_equal(ringbuf_write(rb, 2, "xyzw", 4), 0);
	ringbuf_destroy(rb);
	free(mem);
}

/* ---- commit / discard with NULL while an event is reserved --------------------- */

static void test_commit_discard_null_data_noop(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	struct ringbuf_record rec;
	struct ringbuf_stats st;
	uint32_t *p;
	(void)state;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	p = ringbuf_reserve(rb, 0, 4);
	assert_non_null(p);
	*p = 0xfeedf00d;
	ringbuf_commit(rb, 0, NULL);
	ringbuf_discard(rb, 0, NULL);
	assert_int_equal(ringbuf__cpu(rb, 0)->committing, 1); /* still in flight */
	assert_int_equal(ringbuf_peek(rb, 0, &rec), 0);      /* not visible */
	assert_int_equal(ringbuf_stats_cpu(rb, 0, &st), 0);
	assert_int_equal(st.committed, 0);
	assert_int_equal(st.discarded, 0);
	ringbuf_commit(rb, 0, p);
	assert_int_equal(ringbuf__cpu(rb, 0)->committing, 0);
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
	assert_int_equal(*(const uint32_t *)rec.data, 0xfeedf00d);
	assert_int_equal(ringbuf_stats_cpu(rb, 0, &st), 0);
	assert_int_equal(st.committed, 1);
	assert_int_equal(st.discarded, 0);
	/* and a real discard after NULL ones */
	p = ringbuf_reserve(rb, 0, 4);
	assert_non_null(p);
	ringbuf_discard(rb, 0, NULL);
	ringbuf_discard(rb, 0, p);
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 0);
	assert_int_equal(ringbuf_stats_cpu(rb, 0, &st), 0);
	assert_int_equal(st.discarded, 1);
	assert_int_equal(st.committed, 1);
	ringbuf_destroy(rb);
}

/* ---- control -------------------------------------------------------------------- */

static struct ringbuf *make2(void)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	cfg.ncpu = 2;
	cfg.size_per_cpu = 8192;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	return rb;
}

static uint64_t disabled_of(struct ringbuf *rb, unsigned cpu)
{
	struct ringbuf_stats st;
	assert_int_equal(ringbuf_stats_cpu(rb, cpu, &st), 0);
	return st.disabled_events;
}

static uint64_t committed_of(struct ringbuf *rb, unsigned cpu)
{
	struct ringbuf_stats st;
	assert_int_equal(ringbuf_stats_cpu(rb, cpu, &st), 0);
	return st.committed;
}

/* Try one reserve+commit on cpu; returns 1 if it went in. */
static int try_write(struct ringbuf *rb, unsigned cpu)
{
	uint32_t *p = ringbuf_reserve(rb, cpu, 4);
	if (!p)
		return 0;
	*p = 1;
	ringbuf_commit(rb, cpu, p);
	return 1;
}

static void test_record_off_on(void **state)
{
	struct ringbuf *rb = make2();
	(void)state;
	assert_true(ringbuf_record_is_on(rb));
	ringbuf_record_off(rb);
	assert_false(ringbuf_record_is_on(rb));
	assert_int_equal(try_write(rb, 0), 0);
	assert_int_equal(try_write(rb, 1), 0);
	assert_int_equal(ringbuf_write(rb, 1, "abcd", 4), RINGBUF_ENOSPC);
	assert_int_equal(disabled_of(rb, 0), 1);
	assert_int_equal(disabled_of(rb, 1), 2);
	assert_int_equal(ringbuf__cpu(rb, 0)->committing, 0); /* the refusal left nothing in flight */
	ringbuf_record_off(rb); /* sticky bit, not a counter */
	ringbuf_record_on(rb);
	assert_true(ringbuf_record_is_on(rb));
	assert_int_equal(try_write(rb, 0), 1);
	assert_int_equal(try_write(rb, 1), 1);
	assert_int_equal(disabled_of(rb, 0), 1);
	assert_int_equal(disabled_of(rb, 1), 2);
	assert_int_equal(committed_of(rb, 0), 1);
	assert_int_equal(committed_of(rb, 1), 1);
	ringbuf_record_on(rb); /* on when on: no change */
	assert_true(ringbuf_record_is_on(rb));
	assert_int_equal(try_write(rb, 0), 1);
	ringbuf_destroy(rb);
}

static void test_record_disable_nests(void **state)
{
	struct ringbuf *rb = make2();
	(void)state;
	ringbuf_record_disable(rb);
	ringbuf_record_disable(rb);
	assert_false(ringbuf_record_is_on(rb));
	assert_int_equal(try_write(rb, 0), 0);
	ringbuf_record_enable(rb);
	assert_false(ringbuf_record_is_on(rb));
	assert_int_equal(try_write(rb, 1), 0);
	ringbuf_record_enable(rb);
	assert_true(ringbuf_record_is_on(rb));
	assert_int_equal(try_write(rb, 0), 1);
	assert_int_equal(disabled_of(rb, 0), 1);
	assert_int_equal(disabled_of(rb, 1), 1);
	/* an extra enable does not go below zero */
	ringbuf_record_enable(rb);
	ringbuf_record_disable(rb);
	assert_int_equal(try_write(rb, 0), 0);
	ringbuf_record_enable(rb);
	assert_int_equal(try_write(rb, 0), 1);
	/* off and disable are independent */
	ringbuf_record_off(rb);
	ringbuf_record_disable(rb);
	ringbuf_record_on(rb);
	assert_int_equal(try_write(rb, 0), 0);
	ringbuf_record_enable(rb);
	assert_int_equal(try_write(rb, 0), 1);
	ringbuf_record_disable(rb);
	ringbuf_record_off(rb);
	ringbuf_record_enable(rb);
	assert_int_equal(try_write(rb, 0), 0);
	ringbuf_record_on(rb);
	assert_int_equal(try_write(rb, 0), 1);
	assert_int_equal(disabled_of(rb, 0), 4);
	assert_int_equal(committed_of(rb, 0), 4);
	ringbuf_destroy(rb);
}

static void test_disable_cpu_only_that_cpu(void **state)
{
	struct ringbuf *rb = make2();
	(void)state;
	assert_int_equal(ringbuf_record_disable_cpu(rb, 1), 0);
	assert_true(ringbuf_record_is_on(rb)); /* the global state is untouched */
	assert_int_equal(try_write(rb, 0), 1);
	assert_int_equal(try_write(rb, 1), 0);
	assert_int_equal(disabled_of(rb, 0), 0);
	assert_int_equal(disabled_of(rb, 1), 1);
	assert_int_equal(ringbuf_record_disable_cpu(rb, 1), 0);
	assert_int_equal(ringbuf_record_enable_cpu(rb, 1), 0);
	assert_int_equal(try_write(rb, 1), 0); /* disabled twice: enabled once is not enough */
	assert_int_equal(ringbuf_record_enable_cpu(rb, 1), 0);
	assert_int_equal(try_write(rb, 1), 1);
	assert_int_equal(ringbuf_record_enable_cpu(rb, 0), 0); /* extra enable: no underflow */
	assert_int_equal(ringbuf_record_disable_cpu(rb, 0), 0);
	assert_int_equal(try_write(rb, 0), 0);
	assert_int_equal(try_write(rb, 1), 1);
	assert_int_equal(ringbuf_record_enable_cpu(rb, 0), 0);
	assert_int_equal(try_write(rb, 0), 1);
	assert_int_equal(disabled_of(rb, 0), 1);
	assert_int_equal(disabled_of(rb, 1), 2);
	assert_int_equal(committed_of(rb, 0), 2);
	assert_int_equal(committed_of(rb, 1), 2);
	ringbuf_destroy(rb);
}

/* ---- strerror --------------------------------------------------------------------- */

static void test_strerror_every_code(void **state)
{
	static const int codes[] = {RINGBUF_OK,      RINGBUF_EINVAL, RINGBUF_ENOMEM,
				    RINGBUF_EBUSY,   RINGBUF_EAGAIN, RINGBUF_ECORRUPT,
				    RINGBUF_EALIGN,  RINGBUF_E2BIG,  RINGBUF_ENOSPC,
				    RINGBUF_EFORMAT, RINGBUF_EVERSION, RINGBUF_ETRUNC,
				    RINGBUF_ESYS};
	static const int unknown[] = {1, 42, -13, -100, INT_MIN, INT_MAX};
	const size_t n = sizeof codes / sizeof codes[0];
	size_t i, j;
	(void)state;
	for (i = 0; i < n; i++) {
		const char *s = ringbuf_strerror(codes[i]);
		assert_non_null(s);
		assert_true(s[0] != '\0');
		assert_null(strstr(s, "unknown"));
		for (j = 0; j < i; j++)
			assert_string_not_equal(s, ringbuf_strerror(codes[j]));
	}
	for (i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
		const char *s = ringbuf_strerror(unknown[i]);
		assert_non_null(s);
		assert_non_null(strstr(s, "unknown"));
		for (j = 0; j < n; j++)
			assert_string_not_equal(s, ringbuf_strerror(codes[j]));
	}
}

/* ---- lifecycle without malloc ------------------------------------------------------- */

static _Alignas(64) unsigned char arena[64 * 1024];

static void test_init_in_static_array_without_malloc(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	struct ringbuf_record rec;
	size_t need = 0, m0 = n_malloc, f0 = n_free;
	unsigned cpu, k;
	(void)state;
	cfg.ncpu = 2;
	cfg.page_size = 256;
	cfg.size_per_cpu = 16 * 256;
	cfg.clock = test_clock;
	assert_int_equal(ringbuf_size_needed(&cfg, &need), 0);
	assert_true(need <= sizeof arena);
	assert_int_equal(ringbuf_init_in(arena, sizeof arena, &cfg, &rb), 0);
	assert_ptr_equal(rb, arena);
	assert_int_equal(ringbuf_ncpu(rb), 2);
	assert_int_equal(ringbuf_nr_pages(rb), 16);
	/* fill past several pages on both CPUs and read everything back */
	for (k = 0; k < 60; k++) /* about 2.4 KiB a CPU: 10+ pages, nothing overwritten */
		for (cpu = 0; cpu < 2; cpu++)
			write_ev(rb, cpu, k);
	for (cpu = 0; cpu < 2; cpu++) {
		struct ringbuf_stats st;
		assert_int_equal(ringbuf_stats_cpu(rb, cpu, &st), 0);
		assert_true(st.pages_touched >= 8);
		assert_int_equal(st.overrun, 0);
		for (k = 0; k < 60; k++)
			read_ev(rb, cpu, k);
	}
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 0);
	assert_int_equal(ringbuf_reset(rb), 0);
	assert_true(ringbuf_empty_cpu(rb, 1));
	ringbuf_destroy(rb);
	ringbuf_destroy(rb); /* invalidated: a second destroy does nothing */
	assert_int_equal(n_malloc, m0);
	assert_int_equal(n_free, f0);

	/* for contrast, ringbuf_create allocates exactly once and destroy frees it */
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	assert_int_equal(n_malloc, m0 + 1);
	ringbuf_destroy(rb);
	assert_int_equal(n_free, f0 + 1);
	/* a second destroy reads nothing of the freed block and frees nothing
	 * (before: it read the magic there and freed the block again) */
	ringbuf_destroy(rb);
	assert_int_equal(n_free, f0 + 1);
}

static void test_destroy_null_is_noop(void **state)
{
	size_t m0 = n_malloc, f0 = n_free;
	(void)state;
	ringbuf_destroy(NULL);
	assert_int_equal(n_malloc, m0);
	assert_int_equal(n_free, f0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_bad_call_table, env_setup, env_teardown),
		cmocka_unit_test(test_page_size_zero_means_default),
		cmocka_unit_test(test_page_size_limits_accepted),
		cmocka_unit_test(test_init_in_exact_size_works),
		cmocka_unit_test(test_commit_discard_null_data_noop),
		cmocka_unit_test(test_record_off_on),
		cmocka_unit_test(test_record_disable_nests),
		cmocka_unit_test(test_disable_cpu_only_that_cpu),
		cmocka_unit_test(test_strerror_every_code),
		cmocka_unit_test(test_init_in_static_array_without_malloc),
		cmocka_unit_test(test_destroy_null_is_noop),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
