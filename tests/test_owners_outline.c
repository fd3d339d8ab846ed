/* tests/test_owners.c again, with RINGBUF_CPU_CURRENT's claim kept out of line
 * (RINGBUF__CURRENT_OUTLINE; INLINE in >>contexts of ringbuf.h): the same
 * tests on the out-of-line G1-G5, which the inline claim falls back to. */
#define RINGBUF__CURRENT_OUTLINE 1

#include "test_owners.c"
