/* Compile test (-Werror): gcc's flow analysis at -Os and -O1 finds no "may be
 * used uninitialized" in the implementation (it reported the consumed length
 * of ringbuf__read_one). compile-checks builds without -O, where the analysis
 * does not run and this file only checks that it builds; `make test-cross`
 * (scripts/test-cross.sh) compiles the files of tests/compile again at -Os and -O1 with
 * every compiler it uses. */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf_trace.h"

int werror_os_uninit(struct ringbuf *rb);
int werror_os_uninit(struct ringbuf *rb)
{
	struct ringbuf_record rec;
	return ringbuf_consume(rb, 0, &rec);
}
