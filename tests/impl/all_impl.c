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
/* the private names white-box tests use (tests/internal.h): ringbuf.h's, then
 * the companion headers' */
#include "internal_impl.h"
_Atomic unsigned *ringbuf_test__net_refused(void) { return &ringbuf_net__refused; }
int ringbuf_test__tdat_write_fd(int fd, const void *buf, size_t n, int sock)
{
	return ringbuf_tdat__write_fd(fd, buf, n, sock);
}
int ringbuf_test__trace_parse(const void *area, size_t size, struct ringbuf_trace_registry *reg, bool check_sum)
{
	return ringbuf_trace__parse(area, size, reg, check_sum);
}
struct ringbuf_trace_event *ringbuf_test__trace_first(const struct ringbuf_trace_registry *reg)
{
	return ringbuf_trace__first(reg);
}
