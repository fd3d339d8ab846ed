/* Compile test (make lint, -Werror): with RINGBUF_NO_INLINE, ringbuf_reserve
 * and ringbuf_commit are plain calls to the out-of-line functions, not the
 * macros over the inline fast path; the header part compiles cleanly either way
 * (its static inline helpers unused). Linked against a translation unit with
 * RINGBUF_IMPLEMENTATION (built without RINGBUF_NO_INLINE), this file's calls
 * resolve to the library's (ringbuf_reserve) and (ringbuf_commit). */
#define RINGBUF_NO_INLINE
#include "ringbuf.h"

#include <string.h>

#if defined(ringbuf_reserve) || defined(ringbuf_commit)
#error "RINGBUF_NO_INLINE: ringbuf_reserve and ringbuf_commit must not be macros"
#endif

int no_inline_write(struct ringbuf *rb, unsigned cpu, const void *src, size_t len);
int no_inline_write(struct ringbuf *rb, unsigned cpu, const void *src, size_t len)
{
	void *p = ringbuf_reserve(rb, cpu, len);
	if (!p)
		return RINGBUF_ENOSPC;
	memcpy(p, src, len);
	ringbuf_commit(rb, cpu, p);
	return 0;
}

/* The function designators are the out-of-line functions in any case. */
void *(*no_inline_reserve_fn(void))(struct ringbuf *, unsigned, size_t);
void *(*no_inline_reserve_fn(void))(struct ringbuf *, unsigned, size_t)
{
	return ringbuf_reserve;
}
