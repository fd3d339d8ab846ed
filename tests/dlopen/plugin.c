/* A shared object holding the ringbuf.h implementation, loaded by
 * tests/dlopen/host.c with dlopen() (scripts/test-cross.sh builds both, with
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
	/* RINGBUF_CPU_CURRENT in a per-CPU block: where it can, a restartable
	 * sequence in this object's code (PER-CPU BLOCKS in ringbuf.h's
	 * >>contexts); the host unloads us afterwards and must survive its next
	 * signals (S5) */
	cfg.ncpu = 1024;
	cfg.flags = RINGBUF_F_CPU_CURRENT;
	cfg.size_per_cpu = 8192;
	if (n >= 0 && ringbuf_create(&cfg, &rb) == 0) {
		unsigned c, got = 0;
		for (i = 0; i < 4; i++) {
			int *p = (int *)ringbuf_reserve(rb, RINGBUF_CPU_CURRENT, sizeof *p);
			if (p) {
				*p = i;
				ringbuf_commit(rb, RINGBUF_CPU_CURRENT, p);
			}
		}
		for (c = 0; c < ringbuf_ncpu(rb); c++)
			while (ringbuf_consume(rb, c, &rec) == 1)
				got++;
		ringbuf_destroy(rb);
		if (got != 4)
			n = -4;
	} else if (n >= 0) {
		n = -5;
	}
	return n;
}
