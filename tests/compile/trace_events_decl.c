/* Compile test (make lint, -Werror): a file that only uses events. Without
 * RINGBUF_TRACE_DEFINE_EVENTS and RINGBUF_IMPLEMENTATION it gets the record
 * structs, extern descriptors and inline emitters -- the multi-file setup. A
 * second inclusion with RINGBUF_TRACE_DEFINE_EVENTS switches the macro to
 * definitions (as in the one file that instantiates the descriptors). */
#include "ringbuf_trace.h"
#include "ringbuf_trace.h" /* twice: harmless */

RINGBUF_TRACE_EVENT(decl_only,
	RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, a), RINGBUF_ARRAY(int16_t, b, 2), RINGBUF_CHARS(c, 8),
		       RINGBUF_STRING(d)),
	RINGBUF_PRINT("a=%u b=%hd,%hd c=%s d=%s", REC->a, REC->b[0], REC->b[1], REC->c, __get_str(d)));

int use_decl_only(struct ringbuf *rb, unsigned cpu);
int use_decl_only(struct ringbuf *rb, unsigned cpu)
{
	const int16_t b[2] = {-1, 2};
	return trace_decl_only(rb, cpu, 1, b, "c", "d") + (int)sizeof(struct ringbuf_ev_decl_only);
}

#define RINGBUF_TRACE_DEFINE_EVENTS
#include "ringbuf_trace.h"
RINGBUF_TRACE_EVENT(defined_here, RINGBUF_FIELDS(RINGBUF_FIELD(int, x)), RINGBUF_PRINT("x=%d", REC->x));
#undef RINGBUF_TRACE_DEFINE_EVENTS

struct ringbuf_trace_event *defined_here_event(void);
struct ringbuf_trace_event *defined_here_event(void)
{
	return &ringbuf_event_defined_here;
}
