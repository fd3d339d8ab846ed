/* test_trace_events.c again with RINGBUF_TRACE_INLINE: each emitter inlines
 * the write path (ringbuf_trace__reserve_inline, ringbuf_trace_event.h)
 * instead of calling ringbuf_trace__reserve, as examples/malloc_trace.c
 * builds it. Every test and assertion of that file, unchanged: the record
 * layout, the common fields, the writer-context flags from signal handlers,
 * the registry, the format text and the text output. The implementation is
 * compiled here (the option is the emitters', in the file that has it). */
#define RINGBUF_TRACE_INLINE
#include "test_trace_events.c"
