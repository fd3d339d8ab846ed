/* recordutil.h - what the tests of tools/ringbuf-record share
 * (test_record.c, test_record_net.c): the temporary directory, the traced
 * child that writes numbered `num` events into a file-backed buffer, and the
 * recorder run in a thread while that child writes
 * SPDX-License-Identifier: MIT   (licence text at the end of ringbuf.h)
 *
 * Include after tools/ringbuf-record.c (RINGBUF_RECORD_TOOL_NO_MAIN),
 * ringbuf_trace.h with RINGBUF_TRACE_DEFINE_EVENTS defined (this header
 * defines the num event) and <cmocka.h>. Functions are static inline: a test
 * that does not use a helper gets no warning for it.
 */
#ifndef RINGBUF_TESTS_RECORDUTIL_H
#define RINGBUF_TESTS_RECORDUTIL_H

#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

RINGBUF_TRACE_EVENT(num, RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, cpu), RINGBUF_FIELD(uint32_t, seq)),
		    RINGBUF_PRINT("cpu=%u seq=%u", REC->cpu, REC->seq));

/* ---- the temporary directory ---- */

static char tmpdir[64];

/* tmpdir/name, in one of 8 rotating buffers */
static inline char *path_of(const char *name)
{
	static char buf[8][200];
	static int k;
	char *b = buf[k++ & 7];
	snprintf(b, sizeof buf[0], "%s/%s", tmpdir, name);
	return b;
}

/* Group setup: tmpdir made from tmpl ("/tmp/NAME-XXXXXX"). */
static inline int rec_make_tmpdir(const char *tmpl)
{
	snprintf(tmpdir, sizeof tmpdir, "%s", tmpl);
	return mkdtemp(tmpdir) ? 0 : -1;
}

/* Group teardown: remove tmpdir and what is in it (KEEP=1 in the
 * environment keeps it, to look at the files). */
static inline int rec_remove_tmpdir(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof cmd, getenv("KEEP") ? "true %s" : "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* ---- the traced child ---- */

/* In the child: creates the file at path, 2 CPUs of size_per_cpu bytes in the
 * given mode, with the num event's registry stored in it; _exit(10) or
 * _exit(11) if it cannot. */
static inline struct ringbuf *rec_child_create(const char *path, int mode, size_t size_per_cpu)
{
	static struct ringbuf_trace_registry reg = RINGBUF_TRACE_REGISTRY_INIT("rec");
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	if (ringbuf_trace_register_event(&reg, &ringbuf_event_num) < 0)
		_exit(10);
	cfg.ncpu = 2;
	cfg.size_per_cpu = size_per_cpu;
	cfg.mode = mode;
	cfg.user_size = ringbuf_trace_user_size(&reg);
	if (ringbuf_create_file(path, &cfg, &rb) < 0 || ringbuf_trace_store_registry(rb, &reg) < 0)
		_exit(11);
	return rb;
}

enum { END_EXIT = 0, END_KILL = 1 };

/* The child of a live recording: creates path (64 KiB a CPU), writes 'r' to
 * fd, then writes num events alternately on CPU 0 and 1 (seq counting the
 * attempts of each CPU: a dropped event leaves a gap). Once it has written at
 * least n and the recorder has taken at least 4 pages (pages_read), it exits
 * (END_EXIT: what was committed stays in the file) or writes 'k' to fd and
 * goes on writing until killed (END_KILL). Never returns. */
static inline void rec_traced_child(const char *path, int fd, int end, int mode, uint32_t n)
{
	struct ringbuf *rb = rec_child_create(path, mode, 64 << 10);
	uint64_t i;
	uint32_t seq[2] = {0, 0};
	bool told = false;
	if (write(fd, "r", 1) != 1)
		_exit(12);
	/* no bound: however slow the recorder is scheduled, the child waits for
	 * it by counting (a broken recorder ends in the test's timeout) */
	for (i = 0;; i++) {
		unsigned cpu = i & 1;
		int r = trace_num(rb, cpu, cpu, seq[cpu]++);
		if (r != 1 && r != RINGBUF_ENOSPC)
			_exit(13);
		if (!told && i >= n && (i & 1023) == 0) {
			struct ringbuf_stats st;
			if (ringbuf_stats(rb, &st) == 0 && st.pages_read >= 4) {
				if (end == END_EXIT)
					exit(0); /* unmaps: what was committed stays in the file */
				if (write(fd, "k", 1) != 1)
					_exit(14);
				told = true; /* and go on writing until killed */
			}
		}
	}
}

/* ---- the recorder in a thread while the child writes ---- */

struct rec_run {
	char *argv[12];
	int argc, rc;
	atomic_int done;
};

/* pthread start: ringbuf_record_main(run->argc, run->argv) into run->rc */
static inline void *rec_recorder(void *arg)
{
	struct rec_run *r = arg;
	r->rc = ringbuf_record_main(r->argc, r->argv);
	atomic_store(&r->done, 1);
	return NULL;
}

/* A recorder that stops while the child runs would leave the child waiting
 * for it forever: fail at once instead of hanging until the test timeout. */
static inline void rec_stopped_early(struct rec_run *run, pid_t pid)
{
	int status;
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	fail_msg("the recorder stopped (rc %d) while the child ran", run->rc);
}

/* waitpid(pid, status) while the recorder runs */
static inline pid_t rec_child_end(pid_t pid, int *status, struct rec_run *run)
{
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r != 0)
			return r;
		if (atomic_load(&run->done))
			rec_stopped_early(run, pid);
		poll(NULL, 0, 10);
	}
}

#endif /* RINGBUF_TESTS_RECORDUTIL_H */
