/* x86-64 code built without SSE (-mgeneral-regs-only, as kernels and some
 * runtimes are built): the header compiles, without [TCUR]'s K load (its
 * RINGBUF_CPU_CURRENT reserves go out of line). gcc's pragma stands in for
 * the flag here; other compilers compile the file as it is. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC target("general-regs-only")
#endif
#define _GNU_SOURCE 1
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

void *no_sse_write(struct ringbuf *rb);
void *no_sse_write(struct ringbuf *rb)
{
	void *p = ringbuf_reserve(rb, RINGBUF_CPU_CURRENT, 8);
	if (p)
		ringbuf_commit(rb, RINGBUF_CPU_CURRENT, p);
	return p;
}
