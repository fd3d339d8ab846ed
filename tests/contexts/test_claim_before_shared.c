/* RINGBUF_CPU_THREAD's fallback (THREAD FALLBACK in ringbuf.h's >>contexts):
 * a signal handler that claims a buffer between the thread's claim pass
 * (F2/F3: none free) and F4a (PENDING: no claim from here on).
 *
 * Two buffers: buffer 0 claimable, buffer 1 shared (ringbuf_thread_shared).
 * A holder thread claims buffer 0. The main thread writes: its claim pass
 * finds nothing; parked at the test point FALLBACK_UNCLAIMED, the holder
 * gives its claim back and a nested writer of the main thread (as its
 * signal handler would) claims buffer 0 and writes there. The main thread's
 * own event must then go where its commit will look first, the claim:
 * before the fix it took the shared buffer, its commit went to the claimed
 * buffer (no event in flight there), and the shared event stayed in flight
 * (committing 1, the word held, the event never readable: test_thread_churn
 * lost one written event in about 1 run of 20).
 * Checked: every event read back once, committing 0 and every word free
 * but the claim, nothing counted as refused. */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

/* LDFLAGS: -lpthread */

static struct ringbuf *g_rb;
static sem_t g_claimed, g_release, g_released;
static pthread_t g_main;
static int g_hits, g_nested_ok;

static int put(uint32_t v)
{
	uint32_t *p = (uint32_t *)ringbuf_reserve(g_rb, RINGBUF_CPU_THREAD, sizeof *p);
	if (!p)
		return -1;
	*p = v;
	ringbuf_commit(g_rb, RINGBUF_CPU_THREAD, p);
	return 0;
}

static void *holder(void *arg)
{
	(void)arg;
	assert_int_equal(put(1), 0); /* claims buffer 0 */
	assert_int_equal(ringbuf_thread_cpu(g_rb), 0);
	sem_post(&g_claimed);
	sem_wait(&g_release);
	ringbuf_thread_release(g_rb);
	sem_post(&g_released);
	return NULL;
}

static void hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	(void)cpu;
	(void)ctx;
	if (rb != g_rb || point != RINGBUF__TP_FALLBACK_UNCLAIMED || !pthread_equal(pthread_self(), g_main) ||
	    g_hits++)
		return;
	sem_post(&g_release);
	sem_wait(&g_released);
	g_nested_ok = put(2) == 0; /* a handler's event: claims buffer 0 */
}

static void a_claim_made_by_a_handler_before_f4a_takes_the_event(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf_stats st;
	struct ringbuf_record rec;
	pthread_t th;
	uint32_t seen = 0;
	unsigned c;
	int n = 0;
	(void)state;
	cfg.ncpu = 2;
	cfg.size_per_cpu = 64 << 10;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
	assert_int_equal(ringbuf_create(&cfg, &g_rb), 0);
	assert_int_equal(ringbuf_thread_shared(g_rb, 1), 0);
	sem_init(&g_claimed, 0, 0);
	sem_init(&g_release, 0, 0);
	sem_init(&g_released, 0, 0);
	g_main = pthread_self();
	assert_int_equal(pthread_create(&th, NULL, holder, NULL), 0);
	sem_wait(&g_claimed);
	ringbuf__set_testpoint_hook(hook, NULL);
	assert_int_equal(put(3), 0); /* the main thread's event */
	ringbuf__set_testpoint_hook(NULL, NULL);
	pthread_join(th, NULL);
	assert_int_equal(g_hits, 1);
	assert_true(g_nested_ok);
	/* the main thread's claim is buffer 0; nothing in flight anywhere */
	assert_int_equal(ringbuf_thread_cpu(g_rb), 0);
	for (c = 0; c < 2; c++)
		assert_int_equal(RINGBUF__LOAD(&ringbuf__cpu(g_rb, c)->committing), 0);
	assert_int_equal(atomic_load(&ringbuf__cpu(g_rb, 1)->owner), 0);
	assert_int_equal(ringbuf_stats(g_rb, &st), 0);
	assert_int_equal(st.unmapped, 0);
	assert_int_equal(st.committed, 3);
	for (c = 0; c < 2; c++)
		while (ringbuf_consume(g_rb, c, &rec) == 1) {
			uint32_t v;
			memcpy(&v, rec.data, sizeof v);
			assert_true(v >= 1 && v <= 3);
			assert_false(seen & (1u << v));
			seen |= 1u << v;
			n++;
		}
	assert_int_equal(n, 3);
	ringbuf_thread_release(g_rb);
	ringbuf_destroy(g_rb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_claim_made_by_a_handler_before_f4a_takes_the_event),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
