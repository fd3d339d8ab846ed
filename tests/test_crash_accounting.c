/* SIGKILL at every test point of the write path, overwrite mode, with a reader
 * taking events between writes: after ringbuf_recover() the accounting is
 * exact, whatever step the writer died at:
 *
 *     committed == events read (before and after the kill) + overrun
 *
 * and every gap in the sequence numbers read is the loss the reader was told
 * (rec.lost). A child process writes numbered events of varied lengths into a
 * small file-backed buffer (4 ring pages of 512 bytes: a head push every few
 * events) and consumes a few every 7 writes; its test-point hook raises SIGKILL
 * at the K-th test point it passes. The parent runs K = 0, 1, 2, ... until the
 * child gets to its end, recovering and checking after each kill. Everything
 * is counted in test points, nothing in time: the same kills every run.
 *
 * Before the fix (ringbuf.h, HEAD PUSH ACCOUNTING in >>design), a kill after
 * a head push's claim (H1, T.next HEADER -> UPDATE) and before the add to
 * overrun left the pushed page's events counted committed, gone from the ring
 * and not counted as overrun; a kill after the event was complete (its slot
 * cleared) and before the committed count left an event readable but not
 * counted committed. */
#define _GNU_SOURCE 1
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

#define NEV 400u /* events the child writes */

static char path[64];

/* in the block's user area: what the child's reader saw (survives the kill) */
struct prog {
	uint32_t next;    /* next sequence number expected */
	uint32_t written; /* ringbuf_write calls that returned 1 */
	uint64_t read;    /* events the child consumed */
	uint64_t lost;    /* sum of rec.lost the child was told */
};

struct ev {
	uint32_t seq, len;
};

static int g_kill_at, g_hits, g_bad;

/* report and go on: one run shows every step that fails */
#define BAD(...) (print_message(__VA_ARGS__), print_message("\n"), g_bad++)
static volatile int32_t *g_point; /* shared with the child: where it was killed */

static void kill_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	(void)rb;
	(void)cpu;
	(void)ctx;
	/* the writer's steps only: the child's reader is not killed here
	 * (tests/test_swap_kill.c kills it at every step of its swap) */
	if (point >= RINGBUF__TP_COUNT || point == RINGBUF__TP_READER_S2)
		return;
	if (g_hits++ == g_kill_at) {
		*g_point = point;
		raise(SIGKILL);
	}
}

static uint32_t ev_len(uint32_t i)
{
	return 8 + (i * 7 % 37); /* 8 .. 44 bytes: every room left at a page end */
}

/* seq must be next + lost: every gap reported, nothing twice */
static int check_ev(const struct ringbuf_record *rec, uint32_t *next)
{
	struct ev h;
	if (rec->len < sizeof h)
		return -1;
	memcpy(&h, rec->data, sizeof h);
	if (rec->len < h.len || rec->len >= h.len + 8 || h.len != ev_len(h.seq) || (uint64_t)h.seq != *next + rec->lost)
		return -1;
	for (uint32_t i = sizeof h; i < h.len; i++)
		if (((const unsigned char *)rec->data)[i] != (unsigned char)(h.seq + i))
			return -1;
	*next = h.seq + 1;
	return 0;
}

static void child(int mode)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	struct prog *pg;
	unsigned char buf[64];
	size_t usz;
	cfg.ncpu = 1;
	cfg.page_size = 512;
	cfg.size_per_cpu = 4 * 512;
	cfg.mode = mode;
	cfg.user_size = sizeof(struct prog);
	if (ringbuf_create_file(path, &cfg, &rb) < 0)
		_exit(10);
	pg = ringbuf_user_area(rb, &usz);
	ringbuf__set_testpoint_hook(kill_hook, NULL);
	for (uint32_t i = 0; i < NEV; i++) {
		struct ev h = {i, ev_len(i)};
		int r;
		memcpy(buf, &h, sizeof h);
		for (uint32_t k = sizeof h; k < h.len; k++)
			buf[k] = (unsigned char)(i + k);
		r = ringbuf_write(rb, 0, buf, h.len);
		if (r == 0)
			pg->written = i + 1;
		else
			_exit(11); /* one writer, overwrite mode: never dropped */
		if (i % 7 == 6) {
			for (uint32_t k = 0; k < 1 + (i / 7) % 2; k++) {
				struct ringbuf_record rec;
				uint32_t next = pg->next;
				r = ringbuf_consume(rb, 0, &rec);
				if (r < 0)
					_exit(12);
				if (r == 0)
					break;
				if (check_ev(&rec, &next) < 0)
					_exit(13);
				pg->lost += rec.lost;
				pg->next = next;
				pg->read++;
			}
		}
	}
	ringbuf__set_testpoint_hook(NULL, NULL);
	_exit(0);
}

/* Returns 1 when the child ran to its end (kill_at past its last step). */
static const char *const point_names[] = {
	"?", "A_TIME", "B_BEFORE", "C_RESERVED", "D_WRITE_STAMP", "CROSS_CLAIMED", "CROSS_PADDED",
	"MOVE_TAIL", "H1_COUNTED", "H1_UPDATE", "H2_NEW_HEAD", "H3_DONE", "U1_INTCNT", "U2_RESET",
	"U3_MOVED", "COMMIT_PAGE", "COMMIT_END", "DISCARD_INVAL", "READER_S2", "MOVE_TAIL_NEXT",
	"DROP_DECIDED", "H1_CLAIMED", "SLOT_CHECKED", "COUNTED", "H1_OVERRUN"};


static const char *point_name(void)
{
	static char buf[32];
	int32_t p = *g_point;
	if (p >= 0 && (size_t)p < sizeof point_names / sizeof point_names[0])
		return point_names[p];
	snprintf(buf, sizeof buf, "%d", (int)p);
	return buf;
}

static void warn_print(const char *what, unsigned cpu, void *ctx)
{
	(void)ctx;
	print_message("  (cpu %u: %s)\n", cpu, what);
}

static int run_one(int mode, int kill_at, uint64_t *events)
{
	struct ringbuf *rb;
	struct ringbuf_record rec;
	struct ringbuf_stats st;
	struct prog pg;
	size_t usz;
	int status, r, done;
	uint64_t read = 0, lost = 0;
	uint32_t next;
	pid_t pid;
	g_kill_at = kill_at;
	*g_point = -1;
	g_hits = 0;
	unlink(path);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		child(mode);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status)) {
		assert_int_equal(WEXITSTATUS(status), 0);
		done = 1;
	} else {
		assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		done = 0;
	}
	/* ringbuf_recover() inside, as ringbuf-record runs it */
	if ((r = ringbuf_open_file(path, RINGBUF_OPEN_RDWR | RINGBUF_OPEN_RECOVER, &rb)) != 0) {
		BAD("kill at test point %d (%s): open and recover: %s", kill_at, point_name(),
			 ringbuf_strerror(r));
		return done;
	}
	memcpy(&pg, ringbuf_user_area(rb, &usz), sizeof pg);
	next = pg.next;
	while ((r = ringbuf_consume(rb, 0, &rec)) == 1) {
		if (check_ev(&rec, &next) < 0) {
			BAD("kill at test point %d (%s): event out of sequence (expected %u + lost %llu): seq %u len %u/%u",
				 kill_at, point_name(), next, (unsigned long long)rec.lost, rec.len >= 8 ? ((const struct ev *)rec.data)->seq : 0,
				 rec.len >= 8 ? ((const struct ev *)rec.data)->len : 0, (unsigned)rec.len);
			if (rec.len >= 8)
				next = ((const struct ev *)rec.data)->seq + 1;
		}
		lost += rec.lost;
		read++;
	}
	assert_int_equal(r, 0);
	assert_int_equal(ringbuf_stats_cpu(rb, 0, &st), 0);
	if (st.committed != pg.read + read + st.overrun || st.read_events != pg.read + read ||
	    pg.lost + lost != st.overrun || st.dropped_events + st.commit_overrun != 0 ||
	    st.entries != 0)
		BAD("kill at test point %d (%s): committed %llu, read %llu + %llu (read_events %llu), overrun %llu "
			 "(reported lost %llu + %llu), pages_lost %llu, dropped %llu + %llu",
			 kill_at, point_name(), (unsigned long long)st.committed, (unsigned long long)pg.read,
			 (unsigned long long)read, (unsigned long long)st.read_events,
			 (unsigned long long)st.overrun, (unsigned long long)pg.lost, (unsigned long long)lost,
			 (unsigned long long)st.pages_lost, (unsigned long long)st.dropped_events,
			 (unsigned long long)st.commit_overrun);
	/* the last event read is the last one written, or the one in flight
	 * if it was complete (the kill after its commit began) */
	if (next != pg.written && !(next == pg.written + 1 && !done))
		BAD("kill at test point %d (%s): read up to %u, %u written", kill_at, point_name(), next, pg.written);
	else if (st.committed != next)
		BAD("kill at test point %d (%s): committed %llu, read up to %u", kill_at, point_name(),
		    (unsigned long long)st.committed, next);
	*events += st.committed;
	ringbuf_destroy(rb);
	return done;
}

static void sweep(int mode, const char *name)
{
	uint64_t events = 0;
	int k;
	g_point = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(g_point != MAP_FAILED);
	snprintf(path, sizeof path, "/tmp/ringbuf-crashacct-%d.rb", (int)getpid());
	for (k = 0; k < 100000 && !run_one(mode, k, &events); k++)
		;
	assert_true(k < 100000);
	unlink(path);
	print_message("  %d kills, %d failed\n", k, g_bad);
	assert_int_equal(g_bad, 0);
	print_message("  %s: %d kills (every test point of %u events), each recovered exactly (%llu committed events "
		      "checked)\n",
		      name, k, NEV, (unsigned long long)events);
}

static void overwrite_kill_at_each_step_accounts_every_event(void **state)
{
	(void)state;
	ringbuf_set_warn_hook(warn_print, NULL);
	sweep(RINGBUF_MODE_OVERWRITE, "overwrite");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(overwrite_kill_at_each_step_accounts_every_event),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
