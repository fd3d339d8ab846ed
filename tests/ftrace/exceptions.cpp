// C++ exceptions through traced functions (built and run by tests/trace/test_ftrace.c):
// an exception thrown in t_thrower unwinds t_mid into t_outer's catch. g++ runs
// the exit hooks while unwinding; clang++ does not, and the next hook repairs
// the two frames. Prints the graph events, one "E|X name depth" line each.
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include "ringbuf_ftrace.h"

static volatile int sink;
__attribute__((noinline)) void t_thrower() { throw std::runtime_error("x"); }
__attribute__((noinline)) void t_mid() { t_thrower(); sink = sink + 1; }
__attribute__((noinline)) void t_leaf() { sink = sink + 1; }
__attribute__((noinline)) void t_outer()
{
	try {
		t_mid();
	} catch (const std::exception &) {
	}
	t_leaf();
}

int main()
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	struct ringbuf_record rec;
	struct ringbuf_ftrace_stats st;
	if (ringbuf_create(&cfg, &rb) < 0 || ringbuf_ftrace_set_filter("_Z*t_*") <= 0 ||
	    ringbuf_ftrace_start(rb, 0, RINGBUF_FTRACE_GRAPH) < 0)
		return 1;
	t_outer();
	ringbuf_ftrace_stop();
	while (ringbuf_consume(rb, 0, &rec) == 1) {
		struct ringbuf_trace_entry e;
		struct ringbuf_ftrace_graph_ret r; // entry records are its prefix
		std::memset(&r, 0, sizeof r);
		std::memcpy(&e, rec.data, sizeof e);
		std::memcpy(&r, rec.data, rec.len < sizeof r ? rec.len : sizeof r);
		std::printf("%c %s %d\n", e.type == RINGBUF_FTRACE_ID_GRAPH_ENT ? 'E' : 'X',
			    ringbuf_ftrace_lookup((void *)r.func), r.depth);
	}
	ringbuf_ftrace_get_stats(&st);
	std::printf("repaired %llu\n", (unsigned long long)st.repaired);
	ringbuf_ftrace_free();
	ringbuf_destroy(rb);
	return 0;
}
