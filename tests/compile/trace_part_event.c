/* Compile test (make lint, -Werror): ringbuf_trace_event.h (typed events, registry, threads) alone, with its
 * implementation, RINGBUF_STATIC and one event: every function is static, so
 * one that the part calls from a part it does not include would be "used but
 * never defined" (issue 25: each part of ringbuf_trace.h usable alone). */
#define RINGBUF_STATIC
#define RINGBUF_IMPLEMENTATION
#define RINGBUF_TRACE_DEFINE_EVENTS
#include "ringbuf_trace_event.h"

RINGBUF_TRACE_EVENT(part_ev, RINGBUF_FIELDS(RINGBUF_FIELD(int, x)), RINGBUF_PRINT("x=%d", REC->x));

int use_part(struct ringbuf *rb);
int use_part(struct ringbuf *rb)
{
	struct ringbuf_trace_registry reg = RINGBUF_TRACE_REGISTRY_INIT("part");
	int r = ringbuf_trace_register_event(&reg, &ringbuf_event_part_ev);
	return r + trace_part_ev(rb, 0, 1) + (int)ringbuf_trace_enable(&reg, "part_*");
}
