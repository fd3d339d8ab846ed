/* The C side of tests/core/test_cxx_cimpl.cpp: tests/core/cxx_cside.c with the
 * implementation (ringbuf.h and ringbuf_trace.h) compiled as C. */
#define CXX_C_IMPL 1
#include "cxx_cside.c"
