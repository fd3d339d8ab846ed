// A C++-only consumer: the project has no C compiler at all, and this one
// C++ file compiles the implementation of ringbuf.h and ringbuf_trace.h and
// an event (C++ is a first-class language: the same code through the
// header's C11-atomics shim), then writes, reads and prints.
#define RINGBUF_IMPLEMENTATION
#define RINGBUF_TRACE_DEFINE_EVENTS
#include <ringbuf_trace.h>

#include <cstdio>

RINGBUF_TRACE_EVENT(cxx_consumer_tick, RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, n)),
		    RINGBUF_PRINT("n=%u", REC->n));

int main()
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = nullptr;
	if (ringbuf_create(&cfg, &rb) < 0)
		return 1;
	struct ringbuf_trace_registry reg = RINGBUF_TRACE_REGISTRY_INIT("cxx");
	if (ringbuf_trace_register_event(&reg, &ringbuf_event_cxx_consumer_tick) < 0)
		return 1;
	const unsigned v = 1;
	int r = ringbuf_write(rb, 0, &v, sizeof v);
	unsigned *p = static_cast<unsigned *>(ringbuf_reserve(rb, 0, sizeof *p)); // inline path
	if (p) {
		*p = 2;
		ringbuf_commit(rb, 0, p);
	}
	r |= trace_cxx_consumer_tick(rb, 0, 3) == 1 ? 0 : 1;
	struct ringbuf_record rec;
	int n = 0;
	for (int i = 0; i < 2; i++)
		n += ringbuf_consume(rb, 0, &rec) > 0 && *static_cast<const unsigned *>(rec.data) == unsigned(i + 1);
	n += ringbuf_trace_print(rb, &reg, RINGBUF_ALL_CPUS, stdout, 0, 0);
	ringbuf_destroy(rb);
	return r == 0 && n == 3 ? 0 : 1;
}
