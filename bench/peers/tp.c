/* bench/peers/tp.c - the LTTng-UST probes of ringbuf_bench_tp.h, linked
 * into the peers benchmark (the tracepoints are defined here too). */
#define TRACEPOINT_CREATE_PROBES
#define TRACEPOINT_DEFINE
#include "ringbuf_bench_tp.h"
