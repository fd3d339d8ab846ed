/* The tracer's implementation for bench/ftrace/fib.c (compiled without instrumentation). */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf_ftrace.h"
