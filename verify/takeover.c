/* verify/takeover.c - GenMC: the repair of a dead writer's buffer (a
 * takeover: ringbuf__recover_cpu(live = true)) against a thread that judges
 * the buffer by its committing word, as ringbuf_reset_cpu's R4, the merged
 * readers' [R2] and ringbuf_quiesce's Q4 do.
 * SPDX-License-Identifier: MIT
 *
 * The real ringbuf.h (RINGBUF_PORTABLE, C11 atomics only), one CPU buffer of
 * two ring pages of 64 bytes. main writes one event, then reserves a second
 * and fills it but never commits it: its writer is dead (committing = 1, the
 * slot describes the event, the page commit stops before it). Then a taker
 * thread repairs the buffer (the half event becomes padding, everything is
 * committed, the page counts are recounted, before_stamp invalidated,
 * committing = 0), while an observer loads committing (acquire) and, when it
 * reads 0, reads what the repair published: the tail page's commit, its
 * write index, before_stamp and the page's bytes up to the commit.
 *
 * Checked in every execution (RC11 and IMM): an observer that reads 0 sees
 * the whole repair (commit == write index, before_stamp invalid, the second
 * record padding) and reads the page bytes without a data race; afterwards
 * the buffer holds exactly the committed event. The GENMC-FAIL runs compile
 * a patched copy of the header (verify/run.sh -patch=): mutants/
 * relaxed_repair.patch is the repair before issue 22 defect 5 (committing = 0
 * stored relaxed right after the commit walk); relaxed_repair_order.patch
 * stores it last but relaxed: in both an observer reads 0 and then a
 * before_stamp the repair had not shown it (RC11 and IMM). Each run explores
 * 3 executions in 3-7 s.
 *
 * Stubs as in swap_writer.c: the clock is a counter, __linux__ undefined,
 * memcpy by 4-byte words (-fno-builtin: clang would otherwise inline some
 * copies as byte accesses, which GenMC reports as mixed-size), memset skips
 * the static block, no signal fences. main checks the repaired page
 * directly, not through ringbuf_consume (GenMC's spin-loop detection blocks
 * the reader's page loop in every execution).
 */
/* GENMC-MIN-EXECUTIONS: 2 */
/* GENMC-PASS: -rc11 -unroll=6 -no-unroll=main -no-unroll=ringbuf_init_in -no-unroll=ringbuf__init_in -no-unroll=memcpy -no-unroll=memset -- -fno-builtin */
/* GENMC-PASS: -imm -unroll=6 -no-unroll=main -no-unroll=ringbuf_init_in -no-unroll=ringbuf__init_in -no-unroll=memcpy -no-unroll=memset -- -fno-builtin */
/* GENMC-FAIL: -imm -patch=verify/mutants/relaxed_repair.patch -unroll=6 -no-unroll=main -no-unroll=ringbuf_init_in -no-unroll=ringbuf__init_in -no-unroll=memcpy -no-unroll=memset -- -fno-builtin */
/* GENMC-FAIL: -rc11 -patch=verify/mutants/relaxed_repair.patch -unroll=6 -no-unroll=main -no-unroll=ringbuf_init_in -no-unroll=ringbuf__init_in -no-unroll=memcpy -no-unroll=memset -- -fno-builtin */
/* GENMC-FAIL: -rc11 -patch=verify/mutants/relaxed_repair_order.patch -unroll=6 -no-unroll=main -no-unroll=ringbuf_init_in -no-unroll=ringbuf__init_in -no-unroll=memcpy -no-unroll=memset -- -fno-builtin */
/* GENMC-FAIL: -imm -patch=verify/mutants/relaxed_repair_order.patch -unroll=6 -no-unroll=main -no-unroll=ringbuf_init_in -no-unroll=ringbuf__init_in -no-unroll=memcpy -no-unroll=memset -- -fno-builtin */
#undef __linux__
#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#undef SYS_membarrier
#undef atomic_signal_fence
#define atomic_signal_fence(o) ((void)0)

#define RINGBUF_PORTABLE 1
#define RINGBUF_NO_INLINE 1
#define RINGBUF_MAX_NEST 4
#define RINGBUF_IMPLEMENTATION 1
#include "ringbuf.h"

void *memcpy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	size_t i;
	if (n % 4 == 0) { /* GenMC places locals at any address: words by size alone */
		for (i = 0; i < n; i += 4)
			*(uint32_t *)(d + i) = *(const uint32_t *)(s + i);
		return dst;
	}
	for (i = 0; i < n; i++)
		d[i] = s[i];
	return dst;
}

static _Alignas(64) unsigned char block[8192];

void *memset(void *dst, int c, size_t n)
{
	unsigned char *d = dst;
	size_t i;
	if (d >= block && d < block + sizeof block) {
		assert(c == 0);
		return dst;
	}
	for (i = 0; i < n; i++)
		d[i] = (unsigned char)c;
	return dst;
}

static struct ringbuf *rb;
static uint64_t clk;

static uint64_t test_clock(void *ctx)
{
	(void)ctx;
	return clk += 10;
}

static void *taker(void *arg)
{
	(void)arg;
	ringbuf__recover_cpu(rb, 0, true);
	return NULL;
}

/* What the repair must have published: the tail page committed up to its
 * write index, the half event padding (exactly one data event left, the
 * committed one), before_stamp invalid. The page bytes are plain reads: a
 * data race if they are not ordered after the repair's writes. */
static void check_repaired(void)
{
	struct ringbuf__cpu *c = ringbuf__cpu(rb, 0);
	uint32_t t = RINGBUF__LOAD(&c->tail_page);
	uint32_t w = (uint32_t)(RINGBUF__LOAD(&ringbuf__bp(rb, 0, t)->write) & RINGBUF__WRITE_MASK);
	uint32_t commit = ringbuf__page_commit(rb, 0, t);
	const struct ringbuf__dpage *dp = ringbuf__dp(rb, 0, t);
	struct ringbuf__rec e;
	uint32_t off = 0, events = 0, first = 0;
	assert(commit == w);
	assert(RINGBUF__LOAD(&c->before_stamp) == RINGBUF__STAMP_INVALID);
	while (off < commit) {
		assert(ringbuf__parse(dp->data, commit, off, false, &e) == 0);
		if (e.type == 0 && events++ == 0)
			memcpy(&first, dp->data + off + e.hdr, 4);
		off += e.len;
	}
	assert(events == 1 && first == 1);
}

static void *observer(void *arg)
{
	(void)arg;
	/* as reset's R4, the merged readers' [R2], quiesce's Q4 */
	if (atomic_load_explicit(&ringbuf__cpu(rb, 0)->committing, memory_order_acquire) == 0)
		check_repaired();
	return NULL;
}

int main(void)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	uint32_t v[3] = {1, 2, 3};
	uint32_t *p;
	pthread_t a, b;

	cfg.page_size = 64;
	cfg.size_per_cpu = 128; /* two ring pages */
	cfg.mode = RINGBUF_MODE_OVERWRITE;
	cfg.clock = test_clock;
	if (ringbuf_init_in(block, sizeof block, &cfg, &rb) != 0)
		abort();
	if (ringbuf_write(rb, 0, v, sizeof v) != 0)
		abort();
	/* the dead writer: reserved and filled, never committed */
	p = (uint32_t *)ringbuf_reserve(rb, 0, sizeof v);
	if (!p)
		abort();
	p[0] = 4;
	p[1] = 5;
	p[2] = 6;
	if (pthread_create(&a, NULL, taker, NULL) || pthread_create(&b, NULL, observer, NULL))
		abort();
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	assert(RINGBUF__LOAD(&ringbuf__cpu(rb, 0)->committing) == 0);
	check_repaired();
	return 0;
}
