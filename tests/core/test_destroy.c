/* test_destroy.c - ringbuf_destroy for every constructor: a second destroy of
 * the same handle is a no-op that reads nothing of the freed block, and a
 * destroy that lands while a thread that called ringbuf_thread_init exits
 * (its claim released by the key destructor) is safe at each step of that
 * release (issue 22, defects 3 and 6).
 * SPDX-License-Identifier: MIT   (licence text at the end of ringbuf.h)
 *
 * Each case runs in a forked child, so that the crash these tests are about
 * (a read of an unmapped block: SIGSEGV) is reported as that case's failure.
 * The thread exits are cut in with the test-point hook at the labelled steps
 * (RINGBUF__TP_EXIT_FOUND, RINGBUF__TP_EXIT_PINNED): deterministic, no timing.
 */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

enum kind { K_INIT_IN, K_CREATE, K_CREATE_FILE, K_CREATE_SHM, K_OPEN_RDWR, K_OPEN_RDONLY, NKIND };
static const char *const kind_names[NKIND] = {
	"ringbuf_init_in (caller's mmap)", "ringbuf_create", "ringbuf_create_file", "ringbuf_create_shm",
	"ringbuf_open_file RDWR", "ringbuf_open_file read-only"};

static char path[256];

/* In the child: a failed check ends it with status 2 (the parent reports it). */
static void check(int ok, const char *what, int line)
{
	if (!ok) {
		fprintf(stderr, "    child: line %d: %s\n", line, what);
		_exit(2);
	}
}
#define CHECK(c) check(!!(c), #c, __LINE__)

struct made {
	struct ringbuf *rb;      /* the handle under test */
	struct ringbuf *creator; /* K_OPEN_*: the file's creator, kept live */
	void *mem;               /* K_INIT_IN: the caller's memory */
	size_t len;
};

static void make(enum kind k, struct made *m)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	memset(m, 0, sizeof *m);
	cfg.ncpu = 2;
	cfg.page_size = 4096;
	cfg.size_per_cpu = 4 * 4096;
	switch (k) {
	case K_INIT_IN:
		CHECK(ringbuf_size_needed(&cfg, &m->len) == 0);
		m->mem = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(m->mem != MAP_FAILED);
		CHECK(ringbuf_init_in(m->mem, m->len, &cfg, &m->rb) == 0);
		break;
	case K_CREATE:
		CHECK(ringbuf_create(&cfg, &m->rb) == 0);
		break;
	case K_CREATE_FILE:
		CHECK(ringbuf_create_file(path, &cfg, &m->rb) == 0);
		break;
	case K_CREATE_SHM:
		CHECK(ringbuf_create_shm("test_destroy", &cfg, &m->rb) == 0);
		break;
	case K_OPEN_RDWR:
	case K_OPEN_RDONLY:
		CHECK(ringbuf_create_file(path, &cfg, &m->creator) == 0);
		CHECK(ringbuf_open_file(path, k == K_OPEN_RDWR ? RINGBUF_OPEN_RDWR : 0, &m->rb) == 0);
		CHECK(m->rb != m->creator);
		break;
	default:
		CHECK(0);
	}
	CHECK(m->rb != NULL);
}

/* Runs fn(k, arg) in a child: 1 when it exits 0, else 0 and says why (the
 * cases go on after a failed one, so that a failure names each). */
static int in_child(enum kind k, int arg, const char *what, void (*fn)(enum kind, int))
{
	int st = 0;
	pid_t pid;
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* cmocka catches these to go on with the next test: here the
		 * crash ends the child and the parent tells which case it was */
		signal(SIGSEGV, SIG_DFL);
		signal(SIGBUS, SIG_DFL);
		signal(SIGILL, SIG_DFL);
		signal(SIGFPE, SIG_DFL);
		signal(SIGABRT, SIG_DFL);
		fn(k, arg);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (WIFSIGNALED(st)) {
		print_error("  %-32s %s: killed by signal %d (%s)\n", kind_names[k], what, WTERMSIG(st),
			    strsignal(WTERMSIG(st)));
		return 0;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		print_error("  %-32s %s: failed (exit status %d)\n", kind_names[k], what, WEXITSTATUS(st));
		return 0;
	}
	print_message("  %-32s %s: ok\n", kind_names[k], what);
	return 1;
}

/* ---- a second destroy ------------------------------------------------------ */

static void second_destroy(enum kind k, int arg)
{
	struct made m;
	struct ringbuf_record rec;
	uint32_t v = 0x5eed;
	unsigned char *snap = NULL;
	(void)arg;
	make(k, &m);
	if (k != K_OPEN_RDONLY)
		CHECK(ringbuf_write(m.rb, 0, &v, sizeof v) == 0);
	ringbuf_destroy(m.rb);
	if (k == K_INIT_IN) { /* the caller's memory: the second call writes none of it */
		snap = malloc(m.len);
		CHECK(snap != NULL);
		memcpy(snap, m.mem, m.len);
	}
	ringbuf_destroy(m.rb); /* before the fix: SIGSEGV (the block was unmapped) */
	ringbuf_destroy(m.rb);
	if (k == K_INIT_IN) {
		CHECK(memcmp(snap, m.mem, m.len) == 0);
		free(snap);
		CHECK(munmap(m.mem, m.len) == 0);
	}
	if (m.creator) { /* the other handle on the block is untouched */
		if (k == K_OPEN_RDWR) {
			CHECK(ringbuf_consume(m.creator, 0, &rec) == 1);
			CHECK(rec.len >= sizeof v && memcmp(rec.data, &v, sizeof v) == 0);
		}
		CHECK(ringbuf_write(m.creator, 1, &v, sizeof v) == 0);
		CHECK(ringbuf_consume(m.creator, 1, &rec) == 1);
		ringbuf_destroy(m.creator);
		ringbuf_destroy(m.creator);
	}
}

static void a_second_destroy_is_a_no_op_for_every_constructor(void **state)
{
	int ok = 0;
	(void)state;
	for (int k = 0; k < NKIND; k++)
		ok += in_child((enum kind)k, 0, "destroy twice", second_destroy);
	unlink(path);
	assert_int_equal(ok, NKIND);
}

/* An address no constructor returned: nothing read, nothing written. */
static void destroy_of_a_foreign_block_is_a_no_op(void **state)
{
	static _Alignas(64) unsigned char junk[8192];
	static unsigned char copy[sizeof junk];
	(void)state;
	memset(junk, 0xa5, sizeof junk);
	memcpy(junk, "RINGBUF!", 8);
	memcpy(copy, junk, sizeof junk);
	ringbuf_destroy((struct ringbuf *)junk);
	assert_memory_equal(junk, copy, sizeof junk);
}

/* ---- a destroy while a thread exits ---------------------------------------- */

static struct {
	struct ringbuf *target; /* the handle the destroyer destroys */
	enum kind kind;
	void *mem;
	size_t len;
	int step; /* RINGBUF__TP_EXIT_FOUND or RINGBUF__TP_EXIT_PINNED */
	_Atomic(int) triggered, destroyed, destroy_waited, writer_gone;
} X;

static void exit_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	int zero = 0;
	(void)cpu;
	(void)ctx;
	if (point == RINGBUF__TP_DESTROY_WAIT) {
		atomic_store(&X.destroy_waited, 1);
		return;
	}
	if (point != X.step || rb != X.target || !atomic_compare_exchange_strong(&X.triggered, &zero, 1))
		return;
	/* the exiting thread, at the step: the destroyer runs now; we go on
	 * once it returned or waits for us */
	while (!atomic_load(&X.destroyed) && !atomic_load(&X.destroy_waited))
		sched_yield();
}

static void *writer(void *arg)
{
	uint32_t v = 0xe817;
	(void)arg;
	CHECK(ringbuf_thread_init(X.target) == 0);
	CHECK(ringbuf_write(X.target, RINGBUF_CPU_THREAD, &v, sizeof v) == 0);
	CHECK(ringbuf_thread_cpu(X.target) >= 0); /* claimed: its exit releases it */
	return NULL;
}

static void *destroyer(void *arg)
{
	(void)arg;
	while (!atomic_load(&X.triggered) && !atomic_load(&X.writer_gone))
		sched_yield();
	if (!atomic_load(&X.triggered))
		return NULL; /* the step was never reached: the child reports it */
	ringbuf_destroy(X.target);
	if (X.kind == K_INIT_IN)
		munmap(X.mem, X.len); /* the caller's memory is the caller's again */
	atomic_store(&X.destroyed, 1);
	return NULL;
}

static void destroy_at_exit_step(enum kind k, int step)
{
	struct made m;
	struct ringbuf_record rec;
	pthread_t tw, td;
	make(k, &m);
	X.target = m.rb;
	X.kind = k;
	X.mem = m.mem;
	X.len = m.len;
	X.step = step;
	ringbuf__set_testpoint_hook(exit_hook, NULL);
	CHECK(pthread_create(&td, NULL, destroyer, NULL) == 0);
	CHECK(pthread_create(&tw, NULL, writer, NULL) == 0);
	CHECK(pthread_join(tw, NULL) == 0); /* before the fix: SIGSEGV in its exit */
	atomic_store(&X.writer_gone, 1);
	CHECK(pthread_join(td, NULL) == 0);
	ringbuf__set_testpoint_hook(NULL, NULL);
	CHECK(atomic_load(&X.triggered));
	CHECK(atomic_load(&X.destroyed));
	/* at EXIT_FOUND the entry is not pinned yet: the destroy goes through
	 * and the exit finds the entry gone; at EXIT_PINNED it waits */
	CHECK(atomic_load(&X.destroy_waited) == (step == RINGBUF__TP_EXIT_PINNED));
	if (m.creator) { /* the block lives on in the creator's handle, with the event */
		int n = 0;
		for (unsigned cpu = 0; cpu < ringbuf_ncpu(m.creator); cpu++)
			while (ringbuf_consume(m.creator, cpu, &rec) == 1)
				n++;
		CHECK(n == 1);
		ringbuf_destroy(m.creator);
	}
}

static void a_destroy_at_each_step_of_a_thread_exit_is_safe(void **state)
{
	int ok = 0, n = 0;
	(void)state;
	for (int k = 0; k < NKIND; k++) {
		if (k == K_OPEN_RDONLY)
			continue; /* a read-only view has no writers */
		ok += in_child((enum kind)k, RINGBUF__TP_EXIT_FOUND, "destroy at EXIT_FOUND", destroy_at_exit_step);
		ok += in_child((enum kind)k, RINGBUF__TP_EXIT_PINNED, "destroy at EXIT_PINNED", destroy_at_exit_step);
		n += 2;
	}
	unlink(path);
	assert_int_equal(ok, n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_second_destroy_is_a_no_op_for_every_constructor),
		cmocka_unit_test(destroy_of_a_foreign_block_is_a_no_op),
		cmocka_unit_test(a_destroy_at_each_step_of_a_thread_exit_is_safe),
	};
	snprintf(path, sizeof path, "/tmp/ringbuf-test-destroy-%d.rb", (int)getpid());
	return cmocka_run_group_tests(tests, NULL, NULL);
}
