/* Compile test (-Werror): the header part and the implementation are clean
 * under -Wcast-align (clang warns on any cast to a more aligned type; gcc on
 * strict-alignment targets such as armhf). Address arithmetic on the block goes
 * through void *: the layout puts each structure at a suitably aligned offset. */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic error "-Wcast-align"
#endif
#define RINGBUF_IMPLEMENTATION
#include "ringbuf_trace.h"

int werror_cast_align(struct ringbuf *rb);
int werror_cast_align(struct ringbuf *rb)
{
	return ringbuf_write(rb, 0, "x", 1);
}
