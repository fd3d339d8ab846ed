/* crashutil.h - kill-and-recover helpers shared by the crash tests of ringbuf.h
 * (test_crash_accounting.c, test_swap_kill.c, test_file.c)
 * SPDX-License-Identifier: MIT   (licence text at the end of ringbuf.h)
 *
 * The pattern: a forked child writes into a small file-backed buffer, its
 * test-point hook raises SIGKILL at the K-th test point it passes, and the
 * parent reopens the file with RINGBUF_OPEN_RECOVER and checks what is there.
 * Counted in test points, never in time.
 *
 * Include after ringbuf.h (built with RINGBUF_IMPLEMENTATION, for the
 * test-point hook) and <cmocka.h>. Everything is static inline: a test that
 * does not use a helper gets no warning for it.
 */
#ifndef RINGBUF_TESTS_CRASHUTIL_H
#define RINGBUF_TESTS_CRASHUTIL_H

#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the child and its end ---- */

/* Unlinks path (the child creates the file again) and forks; returns the
 * child's pid in the parent, 0 in the child. */
static inline pid_t crash_fork(const char *path)
{
	pid_t pid;
	unlink(path);
	pid = fork();
	assert_true(pid >= 0);
	return pid;
}

/* Waits for a child that ends either by _exit(0) (it ran to its end: returns
 * 1) or by SIGKILL (killed at a test point: returns 0); any other end fails
 * the test. */
static inline int crash_wait(pid_t pid)
{
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status)) {
		assert_int_equal(WEXITSTATUS(status), 0);
		return 1;
	}
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	return 0;
}

/* A word shared with the forked children (MAP_SHARED): the test point the
 * child was killed at survives the kill there. */
static inline volatile int32_t *crash_shared_point(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	return (volatile int32_t *)p;
}

/* In a test-point hook, for a point it counts: the kill_at-th such call
 * (*hits counts them from 0) stores point in *where (when where is not NULL)
 * and raises SIGKILL. */
static inline void crash_kill_countdown(int *hits, int kill_at, volatile int32_t *where, int point)
{
	if ((*hits)++ == kill_at) {
		if (where)
			*where = point;
		raise(SIGKILL);
	}
}

/* The warn hook of the crash tests: what recovery repaired, shown. */
static inline void crash_warn_print(const char *what, unsigned cpu, void *ctx)
{
	(void)ctx;
	print_message("  (cpu %u: %s)\n", cpu, what);
}

/* ---- numbered events of varied lengths, read back checked ----
 * Event i is a struct crash_ev {i, crash_ev_len(i)} and then the bytes
 * (unsigned char)(i + k) up to its length. The child's reader keeps a struct
 * crash_prog in the block's user area, so the parent knows after the kill
 * what it read. */

/* in the block's user area: what the child's reader saw (survives the kill) */
struct crash_prog {
	uint32_t next;    /* next sequence number expected */
	uint32_t written; /* ringbuf_write calls that succeeded */
	uint64_t read;    /* events the child consumed */
	uint64_t lost;    /* sum of rec.lost the child was told */
};

struct crash_ev {
	uint32_t seq, len;
};

static inline uint32_t crash_ev_len(uint32_t i)
{
	return 8 + (i * 7 % 37); /* 8 .. 44 bytes: every room left at a page end */
}

/* writes event i on cpu 0; ringbuf_write's result */
static inline int crash_write_ev(struct ringbuf *rb, uint32_t i)
{
	unsigned char buf[64];
	struct crash_ev h = {i, crash_ev_len(i)};
	memcpy(buf, &h, sizeof h);
	for (uint32_t k = sizeof h; k < h.len; k++)
		buf[k] = (unsigned char)(i + k);
	return ringbuf_write(rb, 0, buf, h.len);
}

/* seq must be next + lost: every gap reported, nothing twice; -1 if not, or
 * if the event is not intact */
static inline int crash_check_ev(const struct ringbuf_record *rec, uint32_t *next)
{
	struct crash_ev h;
	if (rec->len < sizeof h)
		return -1;
	memcpy(&h, rec->data, sizeof h);
	if (rec->len < h.len || rec->len >= h.len + 8 || h.len != crash_ev_len(h.seq) ||
	    (uint64_t)h.seq != *next + rec->lost)
		return -1;
	for (uint32_t i = sizeof h; i < h.len; i++)
		if (((const unsigned char *)rec->data)[i] != (unsigned char)(h.seq + i))
			return -1;
	*next = h.seq + 1;
	return 0;
}

/* In the child: creates the file at path, one CPU of 4 ring pages of 512
 * bytes in the given mode, with a struct crash_prog in its user area
 * (returned in *pg); _exit(10) if it cannot. */
static inline struct ringbuf *crash_child_create(const char *path, int mode, struct crash_prog **pg)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	size_t usz;
	cfg.ncpu = 1;
	cfg.page_size = 512;
	cfg.size_per_cpu = 4 * 512;
	cfg.mode = mode;
	cfg.user_size = sizeof(struct crash_prog);
	if (ringbuf_create_file(path, &cfg, &rb) < 0)
		_exit(10);
	*pg = ringbuf_user_area(rb, &usz);
	return rb;
}

/* In the child: consumes up to want events of cpu 0 (fewer if it is empty),
 * each checked and noted in *pg; _exit(12) if a consume fails, _exit(13) if
 * an event is out of sequence. */
static inline void crash_child_consume(struct ringbuf *rb, struct crash_prog *pg, uint32_t want)
{
	for (uint32_t k = 0; k < want; k++) {
		struct ringbuf_record rec;
		uint32_t next = pg->next;
		int r = ringbuf_consume(rb, 0, &rec);
		if (r < 0)
			_exit(12);
		if (r == 0)
			break;
		if (crash_check_ev(&rec, &next) < 0)
			_exit(13);
		pg->lost += rec.lost;
		pg->next = next;
		pg->read++;
	}
}

/* In the parent, after the recovery: reads every event left on cpu 0, adding
 * to *read and *lost; an event out of sequence is reported (after who: which
 * kill), counted in *bad, and the sequence taken up again after it. Returns
 * the ringbuf_consume result that ended it. */
static inline int crash_drain(struct ringbuf *rb, const char *who, uint32_t *next, uint64_t *read,
			      uint64_t *lost, int *bad)
{
	struct ringbuf_record rec;
	int r;
	while ((r = ringbuf_consume(rb, 0, &rec)) == 1) {
		if (crash_check_ev(&rec, next) < 0) {
			const struct crash_ev *h = rec.len >= 8 ? (const struct crash_ev *)rec.data : NULL;
			print_message("%s: event out of sequence (expected %u + lost %llu): seq %u len %u/%u\n", who,
				      *next, (unsigned long long)rec.lost, h ? h->seq : 0, h ? h->len : 0,
				      (unsigned)rec.len);
			(*bad)++;
			if (h)
				*next = h->seq + 1;
		}
		*lost += rec.lost;
		(*read)++;
	}
	return r;
}

#endif /* RINGBUF_TESTS_CRASHUTIL_H */
