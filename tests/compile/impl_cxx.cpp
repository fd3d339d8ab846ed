// Compile test: a C++-only program with the implementation of ringbuf.h and
// ringbuf_trace.h and the event macros, compiled as C++ (make compile-checks:
// -std=c++11, 14, 17 and 20, g++ and clang++, -Wall -Wextra -pedantic -Werror).
// tests/core/test_cxx.cpp runs the same as a test.
#define RINGBUF_IMPLEMENTATION
#define RINGBUF_TRACE_DEFINE_EVENTS
#include "ringbuf_trace.h"
#include "ringbuf_trace.h" // twice: harmless

#include <atomic> // after the headers: std:: atomics are the user's
#include <cstdio>

RINGBUF_TRACE_EVENT(cxx_sample,
	RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, seq),
		       RINGBUF_FIELD(int64_t, delta),
		       RINGBUF_FIELD(bool, flag),
		       RINGBUF_ARRAY(uint16_t, hist, 3),
		       RINGBUF_CHARS(msg, 16),
		       RINGBUF_STRING(label)),
	RINGBUF_PRINT("seq=%u delta=%lld flag=%d hist=%u msg=%s label=%s", REC->seq,
		      (long long)REC->delta, (int)REC->flag, REC->hist[0], REC->msg, __get_str(label)));

namespace {
enum class color : uint8_t { red, green };
std::atomic<int> events(0);
} // namespace

RINGBUF_TRACE_EVENT(cxx_enum, RINGBUF_FIELDS(RINGBUF_FIELD(color, c)), RINGBUF_PRINT("c=%d", (int)REC->c));

int main()
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = nullptr;
	struct ringbuf_trace_registry reg = RINGBUF_TRACE_REGISTRY_INIT("cxx");
	struct ringbuf_trace_event *evs[] = {&ringbuf_event_cxx_sample, &ringbuf_event_cxx_enum};
	const uint16_t hist[3] = {1, 2, 3};
	cfg.ncpu = 2;
	if (ringbuf_create(&cfg, &rb) < 0)
		return 1;
	if (RINGBUF_TRACE_REGISTER_ARRAY(&reg, evs) != 2)
		return 1;
	events += trace_cxx_sample(rb, 0, 1, -2, true, hist, "msg", "label");
	events += trace_cxx_enum(rb, 1, color::green);
	uint32_t *p = static_cast<uint32_t *>(ringbuf_reserve(rb, RINGBUF_CPU_THREAD, sizeof *p));
	if (p) {
		*p = 7;
		ringbuf_commit(rb, RINGBUF_CPU_THREAD, p);
	}
	int n = ringbuf_trace_print(rb, &reg, RINGBUF_ALL_CPUS, stdout, 0, 0);
	ringbuf_destroy(rb);
	return n == 3 && events.load() == 2 ? 0 : 1;
}
