/* ringbuf.h's implementation as an object of its own: compiled once per
 * configuration (compiler, flags, sanitizer, RINGBUF_TESTING) by the Makefile
 * into $(BUILD)/impl/ringbuf_impl.o and linked into every test marked
 * `IMPL: shared` whose first ringbuf header is ringbuf.h (tests/README.md). */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"
/* the private names white-box tests use (tests/internal.h) */
#include "internal_impl.h"
