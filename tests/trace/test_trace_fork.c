/* test_trace_fork.c - ringbuf_trace.h follows fork() by itself, and event
 * tables are registered with a count that cannot be wrong.
 *
 * The thread id is cached per thread. In the child of fork() the cache is the
 * parent's: without the atfork handler, every event of the child carried the
 * parent's pid (six processes' threads showed up as two pids in a real
 * recording). Here the parent emits (so its id is cached), forks from the main
 * thread and from a second thread, and each child emits and reports the pid
 * in its own event, checked against the child's real pid -- with no
 * ringbuf_trace_thread_reset() call anywhere.
 */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#define RINGBUF_TRACE_DEFINE_EVENTS
#include "ringbuf_trace.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

RINGBUF_TRACE_EVENT(forked, RINGBUF_FIELDS(RINGBUF_FIELD(int32_t, real_pid)), RINGBUF_PRINT("real=%d", REC->real_pid));
RINGBUF_TRACE_EVENT(other_a, RINGBUF_FIELDS(RINGBUF_FIELD(int32_t, x)), RINGBUF_PRINT("x=%d", REC->x));
RINGBUF_TRACE_EVENT(other_b, RINGBUF_FIELDS(RINGBUF_FIELD(int32_t, x)), RINGBUF_PRINT("x=%d", REC->x));

static struct ringbuf_trace_registry reg = RINGBUF_TRACE_REGISTRY_INIT("forktest");
static struct ringbuf_trace_event *const table[] = {
	&ringbuf_event_forked,
	&ringbuf_event_other_a,
	&ringbuf_event_other_b,
};
static struct ringbuf *shared_rb; /* MAP_SHARED anonymous block: parent and children write it */

static int setup(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	size_t size;
	void *mem;
	(void)state;
	/* the count comes from the array: all three, whatever its length */
	if (RINGBUF_TRACE_REGISTER_ARRAY(&reg, table) != 3)
		return -1;
	cfg.ncpu = 1;
	cfg.size_per_cpu = 64 * 1024;
	if (ringbuf_size_needed(&cfg, &size) < 0)
		return -1;
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED || ringbuf_init_in(mem, size, &cfg, &shared_rb) < 0)
		return -1;
	return 0;
}

static void registered_array_has_every_event(void **state)
{
	(void)state;
	assert_non_null(ringbuf_trace_find(&reg, "forked"));
	assert_non_null(ringbuf_trace_find(&reg, "other_a"));
	assert_non_null(ringbuf_trace_find(&reg, "other_b"));
	/* registering the same table again gives the same ids */
	assert_int_equal(RINGBUF_TRACE_REGISTER_ARRAY(&reg, table), 3);
}

/* In a child: emit one event carrying the real pid, exit 0 if the cached id
 * is the child's own. */
static void child_body(void)
{
	int32_t real = (int32_t)getpid();
	int ok = ringbuf_trace_thread_id() == real; /* the child's only thread: tid == pid */
	trace_forked(shared_rb, 0, real);
	_exit(ok ? 0 : 1);
}

static pid_t fork_and_wait(void)
{
	int status;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		child_body();
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	return pid;
}

static void *thread_fork(void *arg)
{
	pid_t *out = arg;
	trace_other_a(shared_rb, 0, 1); /* cache this thread's id first */
	*out = fork_and_wait();
	trace_other_a(shared_rb, 0, 2); /* and the parent's thread keeps its own */
	return NULL;
}

struct seen {
	int n;
	int32_t common_pid[8], real[8];
};

static void collect(struct seen *s)
{
	struct ringbuf_record rec;
	while (ringbuf_consume(shared_rb, 0, &rec) == 1) {
		const unsigned char *p = rec.data;
		uint16_t type;
		int32_t pid, real;
		memcpy(&type, p, 2);
		memcpy(&pid, p + 4, 4); /* common_pid, after common_type/flags/preempt_count */
		if (type != ringbuf_event_forked.id)
			continue;
		memcpy(&real, p + 8, 4);
		if (s->n < 8) {
			s->common_pid[s->n] = pid;
			s->real[s->n] = real;
		}
		s->n++;
	}
}

static void children_report_their_own_pid(void **state)
{
	pthread_t th;
	pid_t c1, c2 = 0;
	struct seen s = {0};
	int32_t parent = ringbuf_trace_thread_id();
	(void)state;
	trace_other_b(shared_rb, 0, 0); /* the parent's id is cached */
	c1 = fork_and_wait();
	assert_int_equal(pthread_create(&th, NULL, thread_fork, &c2), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(ringbuf_trace_thread_id(), parent); /* the parent is unchanged */
	collect(&s);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.real[0], c1);
	assert_int_equal(s.common_pid[0], c1);
	assert_int_equal(s.real[1], c2);
	assert_int_equal(s.common_pid[1], c2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(registered_array_has_every_event),
		cmocka_unit_test(children_report_their_own_pid),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
