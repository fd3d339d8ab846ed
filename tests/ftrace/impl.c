/* The tracer's implementation for tests/ftrace/exceptions.cpp (not instrumented). */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf_ftrace.h"
