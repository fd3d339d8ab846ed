/* A shared object holding the ringbuf.h implementation, loaded by
 * tests/dlopen/host.c with dlopen() (tools/test-cross.sh builds both, with
 * glibc and with musl-gcc). Its per-thread writer state is TLS in the object:
 * with the initial-exec model musl refuses to load it ("initial-exec TLS
 * resolves to dynamic definition"); RINGBUF_TLS_MODEL chooses the model and
 * defaults to global-dynamic for such a build. */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

int plugin_run(void);
int plugin_run(void)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf_record rec;
	struct ringbuf *rb;
	int i, n = 0;
	cfg.size_per_cpu = 64 * 1024;
	if (ringbuf_create(&cfg, &rb) < 0)
		return -1;
	/* touches the TLS: the thread's id and its writer-state entry */
	if (ringbuf_thread_init(rb) < 0)
		n = -2;
	for (i = 0; n >= 0 && i < 100; i++)
		if (ringbuf_write(rb, 0, &i, sizeof i) < 0)
			n = -3;
	while (n >= 0 && ringbuf_consume(rb, 0, &rec) == 1)
		n++;
	ringbuf_destroy(rb);
	return n;
}
