// Compile test: ringbuf.h from C++ (no implementation). C++ translation units
// get the same inline fast path as C: ringbuf_reserve and ringbuf_commit are
// the fast-path macros, and the functions still have addresses. Checked with
//   $(CXX) -std=c++NN -Wall -Wextra -pedantic -Werror -I. tests/compile/api_cxx.cpp
// for NN = 11, 14, 17, 20 and g++ and clang++ (make compile-checks).
#include "ringbuf.h"
#include "ringbuf.h" // twice: harmless

#include <cstring>

#if !defined(ringbuf_reserve) || !defined(ringbuf_commit)
#error "C++ must get the inline fast path (ringbuf_reserve / ringbuf_commit macros)"
#endif
#include <atomic> // after ringbuf.h: the header's C11 shim names are gone

static std::atomic<int> user_atomic(0);

namespace {
struct sample {
	uint32_t id, value;
};
} // namespace

extern "C" int cxx_use_ringbuf(struct ringbuf **out); // callable from C (link checks)
int cxx_use_ringbuf(struct ringbuf **out)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = nullptr;
	struct ringbuf_record rec;
	int n = 0;
	cfg.ncpu = 2;
	cfg.clock = RINGBUF_CLOCK_TSC;
	if (ringbuf_create(&cfg, &rb) < 0)
		return -1;
	sample *s = static_cast<sample *>(ringbuf_reserve(rb, 0, sizeof(sample)));
	if (s) {
		s->id = 1;
		s->value = 2;
		ringbuf_commit(rb, 0, s);
	}
	void *p = ringbuf_reserve(rb, 1, 8);
	if (p)
		ringbuf_discard(rb, 1, p);
	const sample last = {3, 4};
	(void)ringbuf_write(rb, 0, &last, sizeof last);
	while (ringbuf_consume(rb, 0, &rec) > 0) {
		sample got;
		std::memcpy(&got, rec.data, sizeof got);
		n += static_cast<int>(got.value + (ringbuf_ts_to_ns(rb, rec.ts) != 0 ? 1 : 0));
	}
	// the functions have addresses, as in C
	void *(*reserve_fn)(struct ringbuf *, unsigned, size_t) = (ringbuf_reserve);
	void (*commit_fn)(struct ringbuf *, unsigned, void *) = (ringbuf_commit);
	n += std::atomic_load_explicit(&user_atomic, std::memory_order_relaxed);
	n += reserve_fn != nullptr && commit_fn != nullptr;
	*out = rb;
	return n;
}
