// A C++-only consumer: C++ translation units see declarations only (the
// implementation is C11 and compiles in a .c file), so this checks that a
// C++ project configures with the package and compiles a file that includes
// both headers. Built as an object (nothing to link the library's code from).
#include <ringbuf.h>
#include <ringbuf_trace.h>

#include <cstdio>

int cxx_consumer(void);
int cxx_consumer(void)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = nullptr;
	if (ringbuf_create(&cfg, &rb) < 0)
		return -1;
	struct ringbuf_trace_registry reg = RINGBUF_TRACE_REGISTRY_INIT("cxx");
	(void)ringbuf_trace_print(rb, &reg, RINGBUF_ALL_CPUS, stdout, 0, 0);
	const unsigned v = 1;
	int r = ringbuf_write(rb, 0, &v, sizeof v);
	ringbuf_destroy(rb);
	return r;
}
