/* The function tracer's implementation (ringbuf_ftrace.h, with ringbuf.h and
 * ringbuf_trace.h under it), compiled by tests/packaging/namespace.sh with
 * -DRINGBUF_NAMESPACE=rbns_ for the nm checks only (not linked): its public
 * names must come out prefixed like the rest of the library. The hooks
 * __cyg_profile_func_enter/exit keep their names (the compiler calls them). */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf_ftrace.h"
