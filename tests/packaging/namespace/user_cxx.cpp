// The same from C++: plain calls of ringbuf_reserve/ringbuf_commit, whose
// prefix comes from the asm label on their declarations (checked with nm -u).
#include "ringbuf_trace.h"

extern "C" int user_cxx_roundtrip(void);
int user_cxx_roundtrip(void)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf_record rec;
	struct ringbuf *rb = nullptr;
	if (ringbuf_create(&cfg, &rb) < 0)
		return -1;
	uint32_t *p = static_cast<uint32_t *>(ringbuf_reserve(rb, 0, sizeof *p));
	if (!p)
		return -1;
	*p = 43;
	ringbuf_commit(rb, 0, p);
	void (*commit_fn)(struct ringbuf *, unsigned, void *) = ringbuf_commit;
	int ok = ringbuf_consume(rb, 0, &rec) == 1 && *static_cast<const uint32_t *>(rec.data) == 43 &&
		 commit_fn != nullptr && ringbuf_trace_thread_id() > 0;
	ringbuf_destroy(rb);
	return ok;
}
