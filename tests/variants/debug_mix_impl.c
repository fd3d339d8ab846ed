/* debug_mix.c's implementation unit, built with RINGBUF_DEBUG. */
#define _GNU_SOURCE 1
#define RINGBUF_DEBUG
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"
