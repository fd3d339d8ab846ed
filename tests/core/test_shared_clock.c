/* A user clock of a shared block (file or memfd) is per process. Before, a
 * ringbuf_open_file(RDWR) in another process (a recorder) stored that
 * process's own default clock in the block, where the creator's writers read
 * theirs: from then on the creator stamped with CLOCK_MONOTONIC instead of its
 * clock (and an opener of another program put an address of its own there for
 * the creator to call). Each process now keeps its own (CLOCKS OF SHARED
 * BLOCKS in ringbuf.h): the creator's clock survives any open, an opener that
 * sets none reads CLOCK_MONOTONIC, one that sets one reads its own, the block
 * holds no address, and a 65th block with a user clock is refused, changing
 * nothing. The clock's name and kind are per process too
 * (the_clock_description_is_per_process). A merged reader of such a block
 * that set no clock still fences for every pick past its mark
 * (a_reader_without_the_writers_clock_still_fences, issue 22.2: syscall() is
 * interposed here to count the membarrier calls).
 */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <sys/syscall.h>
/* LDFLAGS: -ldl */

static char path[256];

/* ---- syscall interposition: count membarrier(GLOBAL_EXPEDITED) ---- */
static long (*real_syscall)(long, ...);
static _Atomic(uint64_t) global_expedited; /* membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) calls */

long syscall(long n, ...)
{
	long a[6];
	va_list ap;
	int i;
	va_start(ap, n);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real_syscall)
		*(void **)&real_syscall = dlsym(RTLD_NEXT, "syscall");
#ifdef SYS_membarrier
	if (n == SYS_membarrier && a[0] == 2)
		atomic_fetch_add(&global_expedited, 1);
#endif
	return real_syscall(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

/* stamps far below any CLOCK_MONOTONIC reading of a running machine */
static uint64_t counter_a(void *ctx)
{
	return ++*(uint64_t *)ctx;
}

static uint64_t counter_b(void *ctx)
{
	return 500000 + ++*(uint64_t *)ctx;
}

/* the next event of CPU cpu: the stamps of one CPU never go back, so each
 * clock gets its own CPU (the creator 0, the openers 1 and 2) */
static uint64_t ts_of_next_on(struct ringbuf *rb, unsigned cpu, uint32_t *val)
{
	struct ringbuf_record rec;
	assert_int_equal(ringbuf_consume(rb, cpu, &rec), 1);
	assert_int_equal(rec.len, 4);
	memcpy(val, rec.data, 4);
	return rec.ts;
}

static uint64_t ts_of_next(struct ringbuf *rb, uint32_t *val)
{
	return ts_of_next_on(rb, 0, val);
}

static void writes(struct ringbuf *rb, uint32_t v)
{
	assert_int_equal(ringbuf_write(rb, 0, &v, sizeof v), 0);
}

/* the creator's clock survives another process's RDWR open, whether that
 * process sets a clock of its own or not; the file holds no address */
static void an_open_elsewhere_keeps_the_creators_clock(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb, *view;
	static uint64_t ticks;
	uint64_t ts[6];
	uint32_t v;
	int round, status;
	(void)state;
	snprintf(path, sizeof path, "/tmp/ringbuf-test-clock-%d.rb", (int)getpid());
	unlink(path);
	cfg.ncpu = 3;
	cfg.size_per_cpu = 1 << 16;
	cfg.clock = counter_a;
	cfg.clock_ctx = &ticks;
	cfg.clock_name = "counter";
	ticks = 0;
	assert_int_equal(ringbuf_create_file(path, &cfg, &rb), 0);
	{
		/* the block keeps no address of this process: the file's header
		 * (the handle's is this process's private copy, PRIVATE HEADER,
		 * whose clock is the shared-clock lookup) */
		struct ringbuf hdr;
		FILE *f = fopen(path, "rb");
		assert_non_null(f);
		assert_int_equal(fread(&hdr, sizeof hdr, 1, f), 1);
		fclose(f);
		assert_true(hdr.clock == NULL);
		assert_null(hdr.clock_ctx);
		assert_true(rb->clock != counter_a);
	}
	writes(rb, 1);
	for (round = 0; round < 2; round++) {
		pid_t p = fork();
		assert_true(p >= 0);
		if (p == 0) { /* another process's handle, as a recorder's */
			static uint64_t mine;
			struct ringbuf *o;
			if (ringbuf_open_file(path, RINGBUF_OPEN_RDWR, &o) != 0)
				_exit(10);
			if (round == 1 && ringbuf_set_clock(o, counter_b, &mine) != 0)
				_exit(11);
			v = 100 + (uint32_t)round;
			if (ringbuf_write(o, 1 + (unsigned)round, &v, sizeof v) != 0)
				_exit(12);
			ringbuf_destroy(o);
			_exit(0);
		}
		assert_int_equal(waitpid(p, &status, 0), p);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
		writes(rb, 2 + (uint32_t)round);
	}
	/* the creator's events: its counter, whatever the others did */
	ts[0] = ts_of_next(rb, &v);
	assert_int_equal(v, 1);
	ts[1] = ts_of_next_on(rb, 1, &v); /* the opener without a clock: CLOCK_MONOTONIC */
	assert_int_equal(v, 100);
	ts[2] = ts_of_next(rb, &v);
	assert_int_equal(v, 2);
	ts[3] = ts_of_next_on(rb, 2, &v); /* the opener with its own clock */
	assert_int_equal(v, 101);
	ts[4] = ts_of_next(rb, &v);
	assert_int_equal(v, 3);
	assert_int_equal(ts[0], 1);
	if (ts[2] != 2 || ts[4] != 3)
		fail_msg("the creator's stamps after another process opened its block: %llu and %llu, its "
			 "clock gives 2 and 3 (the opener's clock was used)",
			 (unsigned long long)ts[2], (unsigned long long)ts[4]);
	assert_true(ts[1] > 1000000000ull); /* the monotonic clock of a running machine, in ns */
	assert_int_equal(ts[3], 500001);
	/* this process opening its own block a second time: one more key */
	assert_int_equal(ringbuf_open_file(path, RINGBUF_OPEN_RDWR, &view), 0);
	assert_int_equal(ringbuf_write(view, 1, &v, sizeof v), 0);
	writes(rb, 4);
	ts[5] = ts_of_next_on(rb, 1, &v);
	assert_true(ts[5] > 1000000000ull); /* the second mapping set no clock */
	ts[5] = ts_of_next(rb, &v);
	assert_int_equal(v, 4);
	assert_int_equal(ts[5], 4);
	ringbuf_destroy(view);
	/* switching back to the default clock in this process */
	assert_int_equal(ringbuf_set_clock(rb, NULL, NULL), 0);
	writes(rb, 5);
	assert_true(ts_of_next(rb, &v) > 1000000000ull);
	ringbuf_destroy(rb);
}

/* 64 shared blocks with a user clock per process; the 65th is refused and
 * leaves no file; destroying one frees its slot */
static void the_65th_shared_user_clock_is_refused(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rbs[64], *rb, *plain;
	static uint64_t ticks;
	char p2[300];
	struct stat st;
	int i;
	(void)state;
	cfg.ncpu = 1;
	cfg.size_per_cpu = 8192;
	cfg.page_size = 4096;
	cfg.clock = counter_a;
	cfg.clock_ctx = &ticks;
	snprintf(path, sizeof path, "/tmp/ringbuf-test-clock-%d.rb", (int)getpid());
	for (i = 0; i < 64; i++) {
		snprintf(p2, sizeof p2, "%s.%d", path, i);
		unlink(p2);
		if (ringbuf_create_file(p2, &cfg, &rbs[i]) != 0)
			fail_msg("block %d: %s", i, ringbuf_strerror(ringbuf_create_file(p2, &cfg, &rbs[i])));
		unlink(p2); /* the mapping stays */
	}
	unlink(path);
	assert_int_equal(ringbuf_create_file(path, &cfg, &rb), RINGBUF_ENOMEM);
	assert_int_equal(stat(path, &st), -1); /* nothing left behind */
	assert_int_equal(ringbuf_create_shm("clk", &cfg, &rb), RINGBUF_ENOMEM);
	/* the default clock needs no slot; a user clock set later is refused */
	cfg.clock = NULL;
	assert_int_equal(ringbuf_create_file(path, &cfg, &plain), 0);
	assert_int_equal(ringbuf_set_clock(plain, counter_a, &ticks), RINGBUF_ENOMEM);
	assert_string_equal(ringbuf_clock_name(plain), "mono"); /* unchanged */
	ringbuf_destroy(rbs[7]);
	assert_int_equal(ringbuf_set_clock(plain, counter_a, &ticks), 0);
	assert_string_equal(ringbuf_clock_name(plain), "unknown");
	ticks = 41;
	writes(plain, 9);
	{
		uint32_t v;
		assert_int_equal(ts_of_next(plain, &v), 42);
	}
	ringbuf_destroy(plain);
	for (i = 0; i < 64; i++)
		if (i != 7)
			ringbuf_destroy(rbs[i]);
}

/* A writer of block A stamps with A's clock while another thread creates,
 * re-clocks and destroys blocks with other clocks (K1-K3 on other slots,
 * a slot A's lookup passes over claimed and filled in meanwhile): every one
 * of A's stamps is A's clock's. Run under TSan in CI too. */
static _Atomic(int) churn_stop;
static uint64_t clock_a_ticks;

static uint64_t clock_a(void *ctx)
{
	(void)ctx;
	return 7000000 + __atomic_add_fetch(&clock_a_ticks, 1, __ATOMIC_RELAXED);
}

static uint64_t clock_other(void *ctx)
{
	(void)ctx;
	return 1;
}

static void *churn(void *arg)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	const char *base = (const char *)arg;
	char p[300];
	unsigned i;
	cfg.ncpu = 1;
	cfg.size_per_cpu = 8192;
	cfg.page_size = 4096;
	cfg.clock = clock_other;
	for (i = 0; i < 300; i++) {
		struct ringbuf *b[3];
		unsigned k;
		for (k = 0; k < 3; k++) {
			snprintf(p, sizeof p, "%s.c%u", base, k);
			if (ringbuf_create_file(p, &cfg, &b[k]) != 0)
				return (void *)1;
			unlink(p);
		}
		if (ringbuf_set_clock(b[1], NULL, NULL) != 0 || ringbuf_set_clock(b[1], clock_other, NULL) != 0)
			return (void *)2;
		for (k = 0; k < 3; k++)
			ringbuf_destroy(b[(k + i) % 3]);
	}
	atomic_store(&churn_stop, 1);
	return NULL;
}

static void a_writer_keeps_its_clock_while_other_blocks_come_and_go(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *a;
	struct ringbuf_record rec;
	pthread_t t;
	void *tr;
	uint64_t n = 0, bad = 0, read = 0;
	(void)state;
	snprintf(path, sizeof path, "/tmp/ringbuf-test-clock-%d.rb", (int)getpid());
	unlink(path);
	cfg.ncpu = 1;
	cfg.size_per_cpu = 1 << 16;
	cfg.clock = clock_a;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
	assert_int_equal(ringbuf_create_file(path, &cfg, &a), 0);
	atomic_store(&churn_stop, 0);
	assert_int_equal(pthread_create(&t, NULL, churn, path), 0);
	while (!atomic_load(&churn_stop) || n < 1000) {
		uint32_t v = (uint32_t)n++;
		if (ringbuf_write(a, 0, &v, sizeof v) != 0)
			bad++;
		while (ringbuf_consume(a, 0, &rec) == 1) {
			read++;
			if (rec.ts < 7000000 || rec.ts > 7000000 + clock_a_ticks)
				bad++;
		}
		if (n > 50000000)
			break;
	}
	assert_int_equal(pthread_join(t, &tr), 0);
	assert_null(tr);
	while (ringbuf_consume(a, 0, &rec) == 1)
		read++;
	print_message("%llu events written while 900 blocks came and went, %llu read\n", (unsigned long long)n,
		      (unsigned long long)read);
	assert_int_equal(read, n);
	assert_int_equal(bad, 0);
	ringbuf_destroy(a);
}

/* The clock's description (kind, name, TSC ratio) is in each process's
 * private header (PRIVATE HEADER in ringbuf.h): an opener that sets its own
 * clock changes its handle's name, not the creator's (before, the header was
 * shared and the creator's block said "unknown", the opener's clock kind,
 * from then on); a switch to or from the TSC on a shared block, which the
 * other processes would not see (their stamps converted wrongly), is
 * refused and changes nothing; a block of one process still switches. Two
 * mappings in one process stand for two processes: each has its own header. */
static void the_clock_description_is_per_process(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb, *view, *plain;
	static uint64_t ticks;
	(void)state;
	snprintf(path, sizeof path, "/tmp/ringbuf-shared-clock-desc-%d.rb", (int)getpid());
	unlink(path);
	cfg.ncpu = 1;
	cfg.size_per_cpu = 8192;
	assert_int_equal(ringbuf_create_file(path, &cfg, &rb), 0);
	assert_int_equal(ringbuf_open_file(path, RINGBUF_OPEN_RDWR, &view), 0);
	assert_string_equal(ringbuf_clock_name(view), "mono");
	assert_int_equal(ringbuf_set_clock(view, counter_a, &ticks), 0);
	assert_string_equal(ringbuf_clock_name(view), "unknown");
	assert_string_equal(ringbuf_clock_name(rb), "mono");
#if defined(__x86_64__)
	assert_int_equal(ringbuf_set_clock(rb, RINGBUF_CLOCK_TSC, NULL), RINGBUF_EINVAL);
	assert_string_equal(ringbuf_clock_name(rb), "mono");
#endif
	ringbuf_destroy(view);
	ringbuf_destroy(rb);
	unlink(path);
	assert_int_equal(ringbuf_create(&cfg, &plain), 0);
	assert_int_equal(ringbuf_set_clock(plain, RINGBUF_CLOCK_TSC, NULL), 0);
#if defined(__x86_64__)
	assert_string_equal(ringbuf_clock_name(plain), "x86-tsc");
#endif
	ringbuf_destroy(plain);
}

/* Issue 22.2: the merged readers' [R1] mark ("every stamp below it is
 * fenced") must be in the writers' time base. A process that opens a file
 * block RDWR only to read sets no clock: its handle reads CLOCK_MONOTONIC
 * while the writers stamp with a counter. Before, the mark became that
 * handle's clock (T0, ~1e9 and more), which no later pick reaches: 8 picks,
 * each past every earlier one, made 1 membarrier instead of 8 (consume_merged
 * and the RINGBUF_ALL_CPUS iterator alike), and [R1] was never made again.
 * A second mapping in this process stands for the reader's process (its
 * own header and clock). Each round writes one event (the next counter
 * stamp) and picks it: it is past every earlier mark, so it needs a barrier. */
static void a_reader_without_the_writers_clock_still_fences(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb, *view;
	struct ringbuf_iter *it;
	struct ringbuf_record rec;
	static uint64_t ticks;
	uint64_t before, n_consume, n_iter;
	uint32_t v;
	int i;
	(void)state;
	snprintf(path, sizeof path, "/tmp/ringbuf-test-clock-fence-%d.rb", (int)getpid());
	unlink(path);
	cfg.ncpu = 2;
	cfg.size_per_cpu = 1 << 16;
	cfg.clock = counter_a;
	cfg.clock_ctx = &ticks;
	ticks = 0;
	assert_int_equal(ringbuf_create_file(path, &cfg, &rb), 0);
	assert_int_equal(ringbuf_open_file(path, RINGBUF_OPEN_RDWR, &view), 0);
	v = 0;
	before = atomic_load(&global_expedited);
	if (ringbuf_write(rb, 0, &v, sizeof v) == 0 && ringbuf_consume_merged(view, &rec) == 1 &&
	    atomic_load(&global_expedited) == before) {
		ringbuf_destroy(view);
		ringbuf_destroy(rb);
		skip(); /* no MEMBARRIER_CMD_GLOBAL_EXPEDITED here: [R1] is a fence of this thread only */
	}
	before = atomic_load(&global_expedited);
	for (i = 0; i < 8; i++) {
		v = (uint32_t)i;
		writes(rb, v);
		assert_int_equal(ringbuf_consume_merged(view, &rec), 1);
		assert_int_equal(rec.ts, ticks);
	}
	n_consume = atomic_load(&global_expedited) - before;
	assert_int_equal(ringbuf_iter_start(view, RINGBUF_ALL_CPUS, &it), 0);
	before = atomic_load(&global_expedited);
	for (i = 0; i < 8; i++) {
		v = (uint32_t)i;
		writes(rb, v);
		assert_int_equal(ringbuf_iter_next(it, &rec), 1);
		assert_int_equal(rec.ts, ticks);
	}
	n_iter = atomic_load(&global_expedited) - before;
	ringbuf_iter_finish(it);
	print_message("membarrier(GLOBAL_EXPEDITED) for 8 picks: consume_merged %llu, iterator %llu\n",
		      (unsigned long long)n_consume, (unsigned long long)n_iter);
	if (n_consume != 8 || n_iter != 8)
		fail_msg("8 picks past every earlier mark made %llu (consume_merged) and %llu (iterator) "
			 "membarrier calls, not 8: the mark is not in the writers' time base",
			 (unsigned long long)n_consume, (unsigned long long)n_iter);
	ringbuf_destroy(view);
	ringbuf_destroy(rb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(an_open_elsewhere_keeps_the_creators_clock, teardown),
		cmocka_unit_test_teardown(the_65th_shared_user_clock_is_refused, teardown),
		cmocka_unit_test_teardown(a_writer_keeps_its_clock_while_other_blocks_come_and_go, teardown),
		cmocka_unit_test_teardown(the_clock_description_is_per_process, teardown),
		cmocka_unit_test_teardown(a_reader_without_the_writers_clock_still_fences, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
