// bench/bench_cxx.cpp - the reserve/fill/commit loop of bench/bench.c
// (DEFINE_RB_LOOP, bench_common.h) compiled as C++: ringbuf_reserve and
// ringbuf_commit are the same inline fast path there (ringbuf.h's >>cxx
// shim). `make bench` links it into bench.c, which times it next to the C
// loop on the same kind of buffer (variants rb_cxx_*: ratio to the C one).
// No implementation here: bench.c has it (C).
#include "ringbuf.h"
#include "bench_common.h"

DEFINE_RB_LOOP(16)

extern "C" uint64_t bench_cxx_rb_loop_16(struct ringbuf *rb, unsigned cpu, size_t n);
uint64_t bench_cxx_rb_loop_16(struct ringbuf *rb, unsigned cpu, size_t n)
{
	return rb_loop_16(rb, cpu, n);
}
