/* The implementation of every header (ringbuf.h, ringbuf_trace.h,
 * ringbuf_tracedat.h, ringbuf_net.h, ringbuf_ftrace.h) in one object: the
 * companions' implementations use ringbuf.h's internals, so they are compiled
 * in one file. Built once per configuration into $(BUILD)/impl/all_impl.o and
 * linked into every test marked `IMPL: shared` that includes a companion
 * header (tests/README.md). _GNU_SOURCE: ringbuf_net.h needs POSIX (getaddrinfo).
 * A new header with an implementation is included here (unless one below
 * includes it): the Makefile predefines its guard in the shared tests. */
#define _GNU_SOURCE 1
#define RINGBUF_IMPLEMENTATION
#include "ringbuf_ftrace.h"
#include "ringbuf_net.h"
