// test_cxx_cimpl.cpp - tests/core/test_cxx.cpp the other way round: the
// implementation compiled as C (tests/core/cxx_cside_impl.c), this C++ file with
// the declarations and the inline fast path only.
// C_SOURCES: tests/core/cxx_cside_impl.c
#define CXX_C_IMPL 1
#include "test_cxx.cpp"
