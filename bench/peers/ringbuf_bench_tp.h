/* bench/peers/ringbuf_bench_tp.h - LTTng-UST tracepoint provider for the
 * side-by-side benchmark: the same 16-byte payload as the ringbuf variants
 * (two u64), one event per channel kind, and one that is never enabled. */
#undef TRACEPOINT_PROVIDER
#define TRACEPOINT_PROVIDER ringbuf_bench

#undef TRACEPOINT_INCLUDE
#define TRACEPOINT_INCLUDE "ringbuf_bench_tp.h"

#if !defined(RINGBUF_BENCH_TP_H) || defined(TRACEPOINT_HEADER_MULTI_READ)
#define RINGBUF_BENCH_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

TRACEPOINT_EVENT_CLASS(ringbuf_bench, ev16_class,
	TP_ARGS(uint64_t, a, uint64_t, b),
	TP_FIELDS(ctf_integer(uint64_t, a, a) ctf_integer(uint64_t, b, b)))

/* enabled in a discard-mode channel */
TRACEPOINT_EVENT_INSTANCE(ringbuf_bench, ev16_class, discard16,
	TP_ARGS(uint64_t, a, uint64_t, b))
/* enabled in an overwrite-mode channel */
TRACEPOINT_EVENT_INSTANCE(ringbuf_bench, ev16_class, overwrite16,
	TP_ARGS(uint64_t, a, uint64_t, b))
/* never enabled: the cost of a disabled tracepoint */
TRACEPOINT_EVENT_INSTANCE(ringbuf_bench, ev16_class, off16,
	TP_ARGS(uint64_t, a, uint64_t, b))

#endif /* RINGBUF_BENCH_TP_H */

#include <lttng/tracepoint-event.h>
