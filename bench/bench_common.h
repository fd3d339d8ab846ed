/* bench/bench_common.h - what every benchmark of ringbuf.h measures the same
 * way: the clock, the floors (SPEC §6) and the reserve/fill/commit loop.
 * Included after ringbuf.h by bench/bench.c and bench/peers/peers.c, and by
 * bench/bench_cxx.cpp (the same loop compiled as C++). */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stdint.h>
#include <string.h>
#include <time.h>

#if defined(__clang__)
#define BENCH_NOINLINE __attribute__((noinline))
#else
#define BENCH_NOINLINE __attribute__((noinline, noclone))
#endif
/* The compiler must assume the bytes at p are read and changed here. */
#define BENCH_OPAQUE(p) __asm__ __volatile__("" : : "r"(p) : "memory")
#define BENCH_UNLIKELY(x) __builtin_expect(!!(x), 0)

#if defined(__x86_64__)
#define BENCH_HAVE_TSC 1
static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}
static inline void cpu_relax(void) { __asm__ __volatile__("pause" ::: "memory"); }
#else
#define BENCH_HAVE_TSC 0
static inline uint64_t rdtsc(void) { return 0; }
static inline void cpu_relax(void) { __asm__ __volatile__("" ::: "memory"); }
#endif

static inline uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* ---- floors (C only: bench/bench_cxx.cpp takes the ringbuf loop) ---------- */
#ifndef __cplusplus

#define FLOOR_BYTES ((size_t)1 << 20)
#define FLOOR_REC(len) ((size_t)12 + (len))
static _Thread_local unsigned char floor_buf[FLOOR_BYTES] __attribute__((aligned(64)));
static _Thread_local size_t floor_pos;

#define TS_NONE(i) (i)
#define TS_GETTIME(i) now_ns()
#define TS_RDTSC(i) rdtsc()

/* The floor: what a tracer must do minus the library. NAME_event appends one
 * record (u32 header + u64 time stamp + LEN bytes of payload) to a 1 MiB
 * thread-local array with a pointer bump and wrap, in one out-of-line call
 * (a call site calls into its tracer); NAME_loop traces n events, storing the
 * event number into the payload first and hiding the payload from the
 * optimiser, exactly as the ringbuf loop below does. */
#define DEFINE_FLOOR(NAME, LEN, TS)                                                    \
	static BENCH_NOINLINE void NAME##_event(const unsigned char *src, uint64_t i)  \
	{                                                                              \
		uint64_t ts = TS(i);                                                   \
		uint32_t hdr = (uint32_t)(LEN) << 5;                                   \
		size_t pos = floor_pos;                                                \
		(void)i;                                                               \
		if (BENCH_UNLIKELY(pos + FLOOR_REC(LEN) > FLOOR_BYTES))                \
			pos = 0;                                                       \
		memcpy(floor_buf + pos, &hdr, 4);                                      \
		memcpy(floor_buf + pos + 4, &ts, 8);                                   \
		memcpy(floor_buf + pos + 12, src, (LEN));                              \
		floor_pos = pos + FLOOR_REC(LEN);                                      \
	}                                                                              \
	static BENCH_NOINLINE void NAME##_loop(size_t n)                               \
	{                                                                              \
		unsigned char src[LEN] __attribute__((aligned(8)));                    \
		memset(src, 0x5a, sizeof src);                                         \
		for (size_t i = 0; i < n; i++) {                                       \
			memcpy(src, &i, 8);                                            \
			BENCH_OPAQUE(src);                                             \
			NAME##_event(src, i);                                          \
		}                                                                      \
	}

#endif /* floors */

/* ---- ringbuf loops -------------------------------------------------------- */

/* reserve + fill + commit; returns the events that could not be reserved.
 * rb_loop_LEN(rb, cpu, n) passes its cpu argument, a variable, to the calls;
 * DEFINE_RB_LOOP_AT(NAME, LEN, CPU) defines NAME(rb, ignored, n) with CPU
 * written in the calls, as code that uses a mapped writer context writes
 * RINGBUF_CPU_THREAD or RINGBUF_CPU_CURRENT. */
#define DEFINE_RB_LOOP(LEN) DEFINE_RB_LOOP_BODY(rb_loop_##LEN, LEN, cpu_arg)
#define DEFINE_RB_LOOP_AT(NAME, LEN, CPU) DEFINE_RB_LOOP_BODY(NAME, LEN, (CPU))
#define DEFINE_RB_LOOP_BODY(NAME, LEN, cpu)                                            \
	static BENCH_NOINLINE uint64_t NAME(struct ringbuf *rb, unsigned cpu_arg,     \
					    size_t n)                                  \
	{                                                                              \
		unsigned char src[LEN] __attribute__((aligned(8)));                    \
		uint64_t nulls = 0;                                                    \
		(void)cpu_arg;                                                         \
		memset(src, 0x5a, sizeof src);                                         \
		for (size_t i = 0; i < n; i++) {                                       \
			void *p;                                                       \
			memcpy(src, &i, 8);                                            \
			BENCH_OPAQUE(src);                                             \
			p = ringbuf_reserve(rb, cpu, (LEN));                           \
			if (BENCH_UNLIKELY(!p)) {                                      \
				nulls++;                                               \
				continue;                                              \
			}                                                              \
			memcpy(p, src, (LEN));                                         \
			ringbuf_commit(rb, cpu, p);                                    \
		}                                                                      \
		return nulls;                                                          \
	}

#endif /* BENCH_COMMON_H */
