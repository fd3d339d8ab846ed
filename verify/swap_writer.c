/* verify/swap_writer.c - GenMC: a writer crossing pages vs a consuming reader
 * SPDX-License-Identifier: MIT
 *
 * The real ringbuf.h (RINGBUF_PORTABLE, C11 atomics only), one CPU buffer of
 * two ring pages of 64 bytes (48 data bytes: one 44-byte event a page) and the
 * reader page. main writes PRE events first (2: the ring is full, tail and
 * commit on the second page, the head on the first). Then a writer thread
 * writes NW events with ringbuf_write, each crossing a page
 * (ringbuf__move_tail M1-M4; in overwrite mode the head push H1-H3 and the
 * tail page update U1-U3; in producer/consumer mode a drop while the ring is
 * full), while a reader thread makes NR ringbuf_consume calls, each of which
 * may swap the head page out (ringbuf__get_reader_page S1-S3). Then main
 * drains the buffer and checks the totals.
 *
 * Checked in every execution GenMC explores (RC11 and IMM):
 *   - no data race on the page bytes (the event bytes and the swap's page
 *     recycling are ordered by the page commit and the link CASes),
 *   - the stream is in order and every event is accounted for exactly once:
 *     read, or overwritten and reported (sum of rec.lost == overrun), or
 *     dropped and counted (producer/consumer),
 *   - overwrite mode: the writer never drops. Without nested writers the
 *     commit page is the tail page when the writer moves the tail, so
 *     commit_overrun would need the tail on the reader page with a flagged
 *     link, which the design excludes. verify/mutants/old_move_tail.patch
 *     (applied to a copy of the header by verify/run.sh) takes move_tail's
 *     M3 re-check out, and GenMC finds
 *     issue 11 item 14 (NR=2): the writer loads T.next (M1: the head), the
 *     reader swaps that head out and then T itself (the commit page), the
 *     writer sees the commit on the reader page (M2) and counts a
 *     commit_overrun though the ring has room.
 *
 * Runs (verify/run.sh on a shared 2-core machine): RC11 overwrite NR=2 1229
 * executions (20 blocked by -unroll: reader retry loops while a push is
 * half done) 35 s; IMM overwrite NR=1 (the head push against one swap) 353
 * executions 270 s; producer/consumer NW=2 NR=2 64 executions, RC11 5 s,
 * IMM 86 s. old_move_tail.patch: the violation under RC11 (66 s) and SC (56 s);
 * under IMM the NR=2 space takes more than 400 s.
 *
 * Stubs: the clock is a counter (only the writer reads it); __linux__ is
 * undefined (no file backend, no membarrier syscall: the reset and wait paths
 * that need them are not used); memcpy copies 32-bit words (the library moves
 * event words with 4-byte memcpy), so each page word is written and read with
 * one access size, as GenMC requires; memset skips the static block, which is
 * zero already (ringbuf_init_in's memsets are the only ones into it); the
 * signal fences (same-thread compiler barriers) are removed, as GenMC would
 * model them as full fences.
 */
/* each PASS run explores 64 or more executions; fewer means the writer or
 * the reader did not run (a loop of ringbuf__init_in past -unroll once
 * left 1 per run, and no error): */
/* GENMC-MIN-EXECUTIONS: 50 */
/* GENMC-PASS: -rc11 -unroll=5 -no-unroll=main -no-unroll=ringbuf_init_in -no-unroll=ringbuf__init_in -no-unroll=memcpy -no-unroll=memset -no-unroll=writer -no-unroll=reader -no-unroll=write_events -- -DMODE=0 -DNW=1 -DNR=2 */
/* GENMC-PASS: -imm -unroll=5 -no-unroll=main -no-unroll=ringbuf_init_in -no-unroll=ringbuf__init_in -no-unroll=memcpy -no-unroll=memset -no-unroll=writer -no-unroll=reader -no-unroll=write_events -- -DMODE=0 -DNW=1 -DNR=1 */
/* GENMC-PASS: -rc11 -unroll=5 -no-unroll=main -no-unroll=ringbuf_init_in -no-unroll=ringbuf__init_in -no-unroll=memcpy -no-unroll=memset -no-unroll=writer -no-unroll=reader -no-unroll=write_events -- -DMODE=1 -DNW=2 -DNR=2 */
/* GENMC-PASS: -imm -unroll=5 -no-unroll=main -no-unroll=ringbuf_init_in -no-unroll=ringbuf__init_in -no-unroll=memcpy -no-unroll=memset -no-unroll=writer -no-unroll=reader -no-unroll=write_events -- -DMODE=1 -DNW=2 -DNR=2 */
/* GENMC-FAIL: -rc11 -patch=verify/mutants/old_move_tail.patch -unroll=5 -no-unroll=main -no-unroll=ringbuf_init_in -no-unroll=ringbuf__init_in -no-unroll=memcpy -no-unroll=memset -no-unroll=writer -no-unroll=reader -no-unroll=write_events -- -DMODE=0 -DNW=1 -DNR=2 */
/* GENMC-FAIL: -sc -patch=verify/mutants/old_move_tail.patch -unroll=5 -no-unroll=main -no-unroll=ringbuf_init_in -no-unroll=ringbuf__init_in -no-unroll=memcpy -no-unroll=memset -no-unroll=writer -no-unroll=reader -no-unroll=write_events -- -DMODE=0 -DNW=1 -DNR=2 */
/* not Linux for GenMC: no file backend (open/mmap), no syscall */
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
/* the per-depth counter loops (overrun_d, pages_lost_d: ringbuf__overrun)
 * stay within -unroll=5 (4 is the smallest depth the header allows; the
 * writers here never nest) */
#define RINGBUF_MAX_NEST 4
#define RINGBUF_IMPLEMENTATION 1
#include "ringbuf.h"


#ifndef MODE
#define MODE 0 /* 0 overwrite, 1 producer/consumer */
#endif
#ifndef PRE
#define PRE 2 /* events main writes before the threads start (2: the ring is full) */
#endif
#ifndef NW
#define NW 1 /* events the writer thread writes */
#endif
#define NALL (PRE + NW)
#ifndef NR
#define NR 2 /* consume calls by the reader thread */
#endif
#define EVW 10 /* payload words: 44-byte events, one a page */

/* Whole 32-bit words where it can: the library moves event words (headers,
 * payloads of uint32_t here) with 4-byte memcpy; each is then written and
 * read with one access size, as GenMC requires. */
void *memcpy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	size_t i;
	if (n % 4 == 0 && (uintptr_t)d % 4 == 0 && (uintptr_t)s % 4 == 0) {
		for (i = 0; i < n; i += 4)
			*(uint32_t *)(d + i) = *(const uint32_t *)(s + i);
		return dst;
	}
	for (i = 0; i < n; i++)
		d[i] = s[i];
	return dst;
}

static _Alignas(64) unsigned char block[8192];

/* The block is static, hence zero: ringbuf_init_in's memsets of it (the only
 * ones into it) change nothing and are skipped, so that GenMC sees each field
 * written with the size of its later accesses (mixed sizes are an error). */
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
static uint64_t clk; /* writer only */
static int written, failed;
static uint32_t seen[NALL + 1];
static uint64_t lost_seen;
static int nseen;

static uint64_t test_clock(void *ctx)
{
	(void)ctx;
	return clk += 10;
}

static void write_events(uint32_t from, uint32_t to)
{
	uint32_t v[EVW] = {0}; /* 40 bytes: 44-byte events, one a page */
	uint32_t i;
	for (i = from; i < to; i++) {
		v[0] = i + 1;
		if (ringbuf_write(rb, 0, v, sizeof v) == 0) {
			written++;
		} else {
			failed++;
			/* overwrite mode: only nested writers could fill the ring
			 * with uncommitted data; there are none (item 14) */
			assert(MODE != 0);
		}
	}
}

static void *writer(void *arg)
{
	(void)arg;
	write_events(PRE, NALL);
	return NULL;
}

/* reader thread and main record what they read (never at the same time) */
static void take(const struct ringbuf_record *rec)
{
	uint32_t id;
	memcpy(&id, rec->data, 4);
	assert(nseen < NALL);
	assert(nseen == 0 || id > seen[nseen - 1]); /* in order, no repeat */
	seen[nseen++] = id;
	lost_seen += rec->lost;
}

static void *reader(void *arg)
{
	struct ringbuf_record rec;
	int i;
	(void)arg;
	for (i = 0; i < NR; i++) {
		int r = ringbuf_consume(rb, 0, &rec);
		assert(r >= 0 || r == RINGBUF_EAGAIN);
		if (r == 1)
			take(&rec);
	}
	return NULL;
}

int main(void)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf_stats st;
	struct ringbuf_record rec;
	struct ringbuf__cpu *c;
	pthread_t w, r;
	int i;

	cfg.page_size = 64;
	cfg.size_per_cpu = 128; /* two ring pages */
	cfg.mode = MODE ? RINGBUF_MODE_PRODUCER_CONSUMER : RINGBUF_MODE_OVERWRITE;
	cfg.clock = test_clock;
	if (ringbuf_init_in(block, sizeof block, &cfg, &rb) != 0)
		abort();
	write_events(0, PRE);
	if (pthread_create(&w, NULL, writer, NULL) || pthread_create(&r, NULL, reader, NULL))
		abort();
	pthread_join(w, NULL);
	pthread_join(r, NULL);
	for (i = 0; i < NALL + 2; i++)
		if (ringbuf_consume(rb, 0, &rec) == 1)
			take(&rec);
	/* the counters (ringbuf_stats_cpu also walks the pages: not needed) */
	c = ringbuf__cpu(rb, 0);
	st.overrun = ringbuf__overrun(c); /* the per-depth counters */
	st.commit_overrun = atomic_load(&c->commit_overrun);
	st.dropped_events = atomic_load(&c->dropped_events);
	assert(written + failed == NALL);
	if (MODE == 0) {
		/* item 14: no drop while the reader only made room */
		assert(st.commit_overrun == 0);
		assert(failed == 0);
		assert((uint64_t)nseen + st.overrun == NALL);
		assert(lost_seen == st.overrun);
	} else {
		assert(st.overrun == 0);
		assert(st.dropped_events + st.commit_overrun == (uint64_t)failed);
		assert(nseen == written);
		/* drops are reported with the next page the tail enters: at most
		 * those counted, never more */
		assert(lost_seen <= (uint64_t)failed);
	}
	return 0;
}
