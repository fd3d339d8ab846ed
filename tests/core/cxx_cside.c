/* cxx_cside.c - the C translation unit of tests/core/test_cxx.cpp (C++ has the
 * implementation) and, through tests/core/cxx_cside_impl.c, of
 * tests/core/test_cxx_cimpl.cpp (C has it). Not a test by itself. */
#ifdef CXX_C_IMPL
#define RINGBUF_IMPLEMENTATION
#endif
#define CXX_DEFINE_B /* C defines sample_b's descriptor, C++ sample_a's */
#include "cxx_shared.h"

#include <stdio.h>
#include <string.h>

#if !defined(ringbuf_reserve) || !defined(ringbuf_commit)
#error "the C side must use the inline fast path"
#endif

size_t cside_layout(size_t *v, size_t n)
{
	size_t i = 0;
	if (n < CXX_LAYOUT_SIZE)
		return 0;
	CXX_LAYOUT(CXX_LAYOUT_FILL)
	return i;
}

int cside_inline(void)
{
	return 1;
}

uint64_t cside_clock(void *ctx)
{
	return *(uint64_t *)ctx += 3;
}

int cside_step(struct ringbuf *rb, unsigned i)
{
	CXX_STEP_BODY(rb, i);
	return 0;
}

void *cside_reserve(struct ringbuf *rb, unsigned cpu, size_t len)
{
	return ringbuf_reserve(rb, cpu, len);
}

void cside_commit(struct ringbuf *rb, unsigned cpu, void *p)
{
	ringbuf_commit(rb, cpu, p);
}

int cside_emit(struct ringbuf *rb, unsigned cpu, unsigned seq, const char *label)
{
	uint16_t h[3] = {1, 2, 3};
	return trace_sample_b(rb, cpu, seq, -1, 1, true, h, "c", label);
}
