/* Compile test (-Werror): RINGBUF_TLS_MODEL chooses the TLS model of the
 * per-thread state (a plugin or LD_PRELOAD object for musl needs a dynamic
 * model; tests/dlopen/ runs one under musl in `make test-cross`). */
#define RINGBUF_TLS_MODEL "global-dynamic"
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

int tls_model_write(struct ringbuf *rb);
int tls_model_write(struct ringbuf *rb)
{
	return ringbuf_write(rb, RINGBUF_CPU_THREAD, "x", 1);
}
