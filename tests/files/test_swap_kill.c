/* SIGKILL a reader at every step of its page swap (READER SWAP in ringbuf.h
 * >>design: S1 head found, S2 old reader page prepared, S2 reader_page
 * published, S3 CAS done, S4 done but its completion mark), in overwrite and
 * producer/consumer modes, with writes before the kill and after the
 * recovery: ringbuf_open_file(RINGBUF_OPEN_RECOVER) must accept the block,
 * and then every committed event is read exactly once, in order, every gap is
 * the loss the reader was told (rec.lost), and
 *
 *     committed == events read (before and after the kill) + overrun
 *
 * A child process writes numbered events of varied lengths into a small
 * file-backed buffer (4 ring pages of 512 bytes) and consumes some every 7
 * writes (in overwrite mode 1 or 2, every fifth time 12: the writer overruns
 * the reader between swaps; all of them in producer/consumer mode); its test-point hook raises SIGKILL at the
 * K-th reader-swap test point it passes. The parent runs K = 0, 1, 2, ...
 * until the child gets to its end; after each kill it recovers, reads what is
 * left, writes 30 more events, reads them and checks. Counted in test points,
 * never in time.
 *
 * Before the fix, a kill after S2 published H and before S3 left reader_page
 * naming a page still in the ring, and the validation refused the block
 * (RINGBUF_ECORRUPT) before ringbuf_recover could repair it; a kill after S3
 * and before the reader's position was reset left the old reader page's
 * offset on the new one (its first events skipped). */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "crashutil.h"

#define NEV 300u  /* events the child writes */
#define NAFTER 30u /* events the parent writes after the recovery */

static char path[64];

static int g_kill_at, g_hits, g_bad;
static volatile int32_t *g_point; /* shared with the child: where it was killed */
static unsigned g_per_point[8];   /* kills at each swap step */

#define BAD(...) (print_message(__VA_ARGS__), print_message("\n"), g_bad++)

static int swap_step(int point)
{
	switch (point) {
	case RINGBUF__TP_READER_S1:
		return 0;
	case RINGBUF__TP_READER_S2_PREPARED:
		return 1;
	case RINGBUF__TP_READER_S2:
		return 2;
	case RINGBUF__TP_READER_S3:
		return 3;
	case RINGBUF__TP_READER_S4:
		return 4;
	default:
		return -1;
	}
}

static const char *const step_names[] = {"S1", "S2_PREPARED", "S2", "S3", "S4"};

static void kill_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	(void)rb;
	(void)cpu;
	(void)ctx;
	if (swap_step(point) < 0)
		return; /* the reader's swap steps only */
	crash_kill_countdown(&g_hits, g_kill_at, g_point, point);
}

static void child(int mode)
{
	struct crash_prog *pg;
	struct ringbuf *rb = crash_child_create(path, mode, &pg);
	ringbuf__set_testpoint_hook(kill_hook, NULL);
	for (uint32_t i = 0; i < NEV; i++) {
		if (crash_write_ev(rb, i) != 0)
			_exit(11); /* one writer, read often enough: never dropped */
		pg->written = i + 1;
		if (i % 7 == 6)
			crash_child_consume(rb, pg,
					    mode != RINGBUF_MODE_OVERWRITE ? UINT32_MAX
					    : (i / 7) % 5 == 4		   ? 12
									   : 1 + (i / 7) % 2);
	}
	ringbuf__set_testpoint_hook(NULL, NULL);
	_exit(0);
}

static const char *point_name(void)
{
	int s = swap_step(*g_point);
	return s < 0 ? "none" : step_names[s];
}

/* Returns 1 when the child ran to its end (kill_at past its last swap step). */
static int run_one(int mode, int kill_at, uint64_t *events)
{
	struct ringbuf *rb;
	struct ringbuf_stats st;
	struct crash_prog pg;
	size_t usz;
	int r, done;
	uint64_t read = 0, lost = 0;
	uint32_t next;
	pid_t pid;
	char who[64];
	g_kill_at = kill_at;
	*g_point = -1;
	g_hits = 0;
	if ((pid = crash_fork(path)) == 0)
		child(mode);
	done = crash_wait(pid);
	if (!done) {
		if (swap_step(*g_point) >= 0)
			g_per_point[swap_step(*g_point)]++;
	}
	if ((r = ringbuf_open_file(path, RINGBUF_OPEN_RDWR | RINGBUF_OPEN_RECOVER, &rb)) != 0) {
		BAD("kill %d (%s): open and recover: %s", kill_at, point_name(), ringbuf_strerror(r));
		return done;
	}
	memcpy(&pg, ringbuf_user_area(rb, &usz), sizeof pg);
	next = pg.next;
	snprintf(who, sizeof who, "kill %d (%s)", kill_at, point_name());
	assert_int_equal(crash_drain(rb, who, &next, &read, &lost, &g_bad), 0);
	if (next != pg.written)
		BAD("kill %d (%s): read up to %u, %u written", kill_at, point_name(), next, pg.written);
	/* writers after the recovery: the repaired ring takes and gives back
	 * events as before */
	for (uint32_t i = 0; i < NAFTER; i++)
		assert_int_equal(crash_write_ev(rb, pg.written + i), 0);
	assert_int_equal(crash_drain(rb, who, &next, &read, &lost, &g_bad), 0);
	if (next != pg.written + NAFTER)
		BAD("kill %d (%s): after the recovery, read up to %u, %u written", kill_at, point_name(), next,
		    pg.written + NAFTER);
	assert_int_equal(ringbuf_stats_cpu(rb, 0, &st), 0);
	if (st.committed != pg.read + read + st.overrun || st.read_events != pg.read + read ||
	    pg.lost + lost != st.overrun || st.dropped_events + st.commit_overrun != 0 || st.entries != 0 ||
	    st.committed != (uint64_t)pg.written + NAFTER)
		BAD("kill %d (%s): committed %llu (written %u + %u), read %llu + %llu (read_events %llu), "
		    "overrun %llu (reported lost %llu + %llu), dropped %llu + %llu, entries %llu",
		    kill_at, point_name(), (unsigned long long)st.committed, pg.written, NAFTER,
		    (unsigned long long)pg.read, (unsigned long long)read, (unsigned long long)st.read_events,
		    (unsigned long long)st.overrun, (unsigned long long)pg.lost, (unsigned long long)lost,
		    (unsigned long long)st.dropped_events, (unsigned long long)st.commit_overrun,
		    (unsigned long long)st.entries);
	if (mode == RINGBUF_MODE_PRODUCER_CONSUMER && st.overrun != 0)
		BAD("kill %d (%s): overrun %llu in producer/consumer mode", kill_at, point_name(),
		    (unsigned long long)st.overrun);
	*events += st.committed;
	ringbuf_destroy(rb);
	return done;
}

static void sweep(int mode, const char *name)
{
	uint64_t events = 0;
	int k, s;
	g_bad = 0;
	memset(g_per_point, 0, sizeof g_per_point);
	g_point = crash_shared_point();
	snprintf(path, sizeof path, "/tmp/ringbuf-swapkill-%d.rb", (int)getpid());
	for (k = 0; k < 100000 && !run_one(mode, k, &events); k++)
		;
	assert_true(k < 100000);
	unlink(path);
	munmap((void *)g_point, 4096);
	print_message("  %s: %d kills (", name, k);
	for (s = 0; s < 5; s++) {
		print_message("%s%s %u", s ? ", " : "", step_names[s], g_per_point[s]);
		assert_true(g_per_point[s] > 0); /* every step was cut */
	}
	print_message("), %d failed, %llu committed events checked\n", g_bad, (unsigned long long)events);
	assert_int_equal(g_bad, 0);
}

static void overwrite_reader_killed_at_each_swap_step(void **state)
{
	(void)state;
	ringbuf_set_warn_hook(crash_warn_print, NULL);
	sweep(RINGBUF_MODE_OVERWRITE, "overwrite");
}

static void producer_consumer_reader_killed_at_each_swap_step(void **state)
{
	(void)state;
	ringbuf_set_warn_hook(crash_warn_print, NULL);
	sweep(RINGBUF_MODE_PRODUCER_CONSUMER, "producer/consumer");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(overwrite_reader_killed_at_each_swap_step),
		cmocka_unit_test(producer_consumer_reader_killed_at_each_swap_step),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
