/* A file that uses a namespaced copy without the implementation: the inline
 * fast path refers to the copy's thread-local state and slow paths, which
 * must all carry the prefix (checked with nm -u). */
#include "ringbuf_trace.h"

int user_write(struct ringbuf *rb, uint32_t v)
{
	uint32_t *p = ringbuf_reserve(rb, 0, sizeof *p);
	if (!p)
		return -1;
	*p = v;
	ringbuf_commit(rb, 0, p);
	return ringbuf_trace_thread_id() > 0 ? 0 : -1;
}

/* Makes a buffer, writes through user_write, reads back: 1 on success. */
int user_roundtrip(void)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf_record rec;
	struct ringbuf *rb;
	int ok;
	if (ringbuf_create(&cfg, &rb) < 0)
		return -1;
	ok = user_write(rb, 42) == 0 && ringbuf_consume(rb, 0, &rec) == 1 &&
	     *(const uint32_t *)rec.data == 42 && ringbuf_consume(rb, 0, &rec) == 0;
	ringbuf_destroy(rb);
	return ok;
}
