/* tests/test_signal_writers.c again, with RINGBUF_CPU_CURRENT's claim kept out of line
 * (RINGBUF__CURRENT_OUTLINE; INLINE in >>contexts of ringbuf.h): the same
 * tests on the out-of-line G1-G5, which the inline claim falls back to. */
#define RINGBUF__CURRENT_OUTLINE 1
/* LDFLAGS: -lrt */
#include "test_signal_writers.c"
