/* One copy of ringbuf.h + ringbuf_trace.h with its implementation, compiled
 * twice by tests/packaging/namespace.sh: once plain (COPY_FN=copy_plain, the
 * repository's headers) and once with -DRINGBUF_NAMESPACE=rbns_
 * (COPY_FN=copy_ns, a vendored copy under build/). Both copies go into one
 * program; each round trip must see only its own events. */
#define _POSIX_C_SOURCE 200809L /* ringbuf_net.h: sockets, getaddrinfo */
#define RINGBUF_IMPLEMENTATION
#define RINGBUF_TRACE_DEFINE_EVENTS
#include "ringbuf_tracedat.h"
#include "ringbuf_net.h"

#ifndef COPY_FN
#error "define COPY_FN"
#endif

/* The event descriptor ringbuf_event_<name> and the emitter trace_<name>
 * are this program's symbols, not the library's (RINGBUF_NAMESPACE leaves
 * them alone): each copy names its event after COPY_FN. */
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#define XSTR_(x) #x
#define XSTR(x) XSTR_(x)
#define EVENT CAT(ev_, COPY_FN)
#define DEFINE_EVENT(name)                            \
	RINGBUF_TRACE_EVENT(name,                     \
		RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, seq)), \
		RINGBUF_PRINT("seq=%u", REC->seq))
DEFINE_EVENT(EVENT);

/* Events written: n through the inline fast path, one through the
 * out-of-line function, one through a function pointer, one traced event,
 * on this thread's claimed buffer (thread-local state of this copy).
 * Returns the number of events read back, or -1. */
int COPY_FN(unsigned n)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	static struct ringbuf_trace_registry reg = RINGBUF_TRACE_REGISTRY_INIT("nstest");
	void *(*reserve_fn)(struct ringbuf *, unsigned, size_t) = ringbuf_reserve;
	struct ringbuf_record rec;
	struct ringbuf *rb;
	unsigned i;
	uint32_t *p;
	int got = 0, r;

	cfg.ncpu = 2;
	cfg.size_per_cpu = 16384;
	if (ringbuf_create(&cfg, &rb) < 0)
		return -1;
	if (!ringbuf_trace_find(&reg, XSTR(EVENT)) &&
	    ringbuf_trace_register_event(&reg, &CAT(ringbuf_event_, EVENT)) < 0)
		return -1;
	for (i = 0; i < n; i++) {
		p = ringbuf_reserve(rb, RINGBUF_CPU_THREAD, sizeof *p);
		if (!p)
			return -1;
		*p = i;
		ringbuf_commit(rb, RINGBUF_CPU_THREAD, p);
	}
	p = (ringbuf_reserve)(rb, RINGBUF_CPU_THREAD, sizeof *p);
	if (!p)
		return -1;
	(ringbuf_commit)(rb, RINGBUF_CPU_THREAD, p);
	p = reserve_fn(rb, RINGBUF_CPU_THREAD, sizeof *p);
	if (!p)
		return -1;
	ringbuf_commit(rb, RINGBUF_CPU_THREAD, p);
	if (CAT(trace_, EVENT)(rb, RINGBUF_CPU_THREAD, 7) != 1)
		return -1;
	while ((r = ringbuf_consume_merged(rb, &rec)) > 0)
		got++;
	ringbuf_thread_release(rb);
	ringbuf_destroy(rb);
	return r < 0 ? -1 : got;
}
