/* Compile test (-Werror): RINGBUF_STATIC, a single-file user of a few
 * functions. Every function is static without "defined but not used"
 * warnings, and so are the event descriptors: two static copies of the
 * library in one program may each define an event of the same name (the
 * descriptor was extern, and the two collided at link time). */
#define RINGBUF_STATIC
#define RINGBUF_IMPLEMENTATION
#define RINGBUF_TRACE_DEFINE_EVENTS
#include "ringbuf_trace.h"

RINGBUF_TRACE_EVENT(werror_static_ev,
	RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, seq)),
	RINGBUF_PRINT("seq=%u", REC->seq));

/* a static redeclaration is an error after an extern one: the descriptor has
 * internal linkage */
static struct ringbuf_trace_event ringbuf_event_werror_static_ev;

int werror_static(struct ringbuf *rb);
int werror_static(struct ringbuf *rb)
{
	struct ringbuf_trace_registry reg = RINGBUF_TRACE_REGISTRY_INIT("werror");
	int r = ringbuf_trace_register_event(&reg, &ringbuf_event_werror_static_ev);
	if (r < 0)
		return r;
	return trace_werror_static_ev(rb, 0, 7);
}
