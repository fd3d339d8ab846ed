/* A thread's new name reaches the buffer's user area (the table a reader of a
 * file-backed buffer takes the names from) even when a signal handler's event
 * runs inside ringbuf_trace_thread_name(NULL). That call reads the kernel's
 * name with prctl(PR_GET_NAME), a system call, where a pending signal is
 * delivered: under qemu-user (s390x) a timer signal landed there in
 * test_read_tool and every event of the renamed thread showed its old name.
 * Here the signal is raised from inside prctl deterministically: this file
 * defines prctl (the library's calls bind to it in this executable), which
 * forwards to the system call and, when armed, raises SIGUSR1 first.
 */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#define RINGBUF_TRACE_DEFINE_EVENTS
#include "ringbuf_trace.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

RINGBUF_TRACE_EVENT(step, RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, n)), RINGBUF_PRINT("n=%u", REC->n));

static struct ringbuf_trace_registry reg = RINGBUF_TRACE_REGISTRY_INIT("names");
static struct ringbuf *rb;
static volatile sig_atomic_t armed, raised;

/* The library's prctl: the system call, with SIGUSR1 raised first (once) at
 * the armed PR_GET_NAME, i.e. inside ringbuf_trace_thread_name(NULL). */
int prctl(int option, ...)
{
	va_list ap;
	unsigned long a2, a3, a4, a5;
	va_start(ap, option);
	a2 = va_arg(ap, unsigned long);
	a3 = va_arg(ap, unsigned long);
	a4 = va_arg(ap, unsigned long);
	a5 = va_arg(ap, unsigned long);
	va_end(ap);
	if (option == PR_GET_NAME && armed) {
		armed = 0;
		raise(SIGUSR1);
		raised = 1;
	}
	return (int)syscall(SYS_prctl, (long)option, a2, a3, a4, a5);
}

static void on_usr1(int sig)
{
	(void)sig;
	ringbuf_trace_signal_enter();
	trace_step(rb, 0, 2);
	ringbuf_trace_signal_exit();
}

struct thr {
	int32_t tid;
	int ok;
};

static void *renamed_thread(void *arg)
{
	struct thr *t = (struct thr *)arg;
	int ok = 1;
	ringbuf_trace_thread_name("old-name");
	t->tid = ringbuf_trace_thread_id();
	ok &= trace_step(rb, 0, 1) == 1;             /* publishes "old-name" */
	ok &= prctl(PR_SET_NAME, (unsigned long)"new-name", 0ul, 0ul, 0ul) == 0;
	armed = 1;
	ringbuf_trace_thread_name(NULL);              /* the handler's event inside */
	ok &= raised == 1;
	ok &= trace_step(rb, 0, 3) == 1;
	t->ok = ok;
	return NULL;
}

static void a_handler_event_inside_the_rename_does_not_keep_the_old_name(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf_trace_registry loaded;
	struct ringbuf_record rec;
	struct sigaction sa;
	struct thr t = {0, 0};
	pthread_t th;
	char line[256], want[40], comm[16];
	unsigned n = 0;
	(void)state;
	assert_true(ringbuf_trace_register_event(&reg, &ringbuf_event_step) > 0);
	cfg.ncpu = 1;
	cfg.size_per_cpu = 16384;
	cfg.user_size = ringbuf_trace_user_size(&reg);
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	assert_int_equal(ringbuf_trace_store_registry(rb, &reg), 0);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	assert_int_equal(pthread_create(&th, NULL, renamed_thread, &t), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_true(t.ok);
	/* this process's own table has the new name either way */
	assert_true(ringbuf_trace_comm(t.tid, comm, sizeof comm));
	assert_string_equal(comm, "new-name");
	/* the user area's (what a reader of the file sees): the newest entry
	 * for the thread names it for all its events */
	assert_int_equal(ringbuf_trace_load_registry(rb, &loaded), 0);
	snprintf(want, sizeof want, "new-name-%d", (int)t.tid);
	while (ringbuf_consume(rb, 0, &rec) == 1) {
		assert_true(ringbuf_trace_format_record(&loaded, &rec, 0, line, sizeof line) > 0);
		print_message("  %s\n", line);
		if (!strstr(line, want))
			fail_msg("not shown as %s: %s", want, line);
		n++;
	}
	assert_int_equal(n, 3);
	ringbuf_trace_registry_free(&loaded);
	ringbuf_destroy(rb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_handler_event_inside_the_rename_does_not_keep_the_old_name),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
