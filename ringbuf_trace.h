/* ringbuf_trace.h - v0.1.0 - typed trace events, text output and trace.dat export for ringbuf.h (all parts)
 * SPDX-License-Identifier: MIT   (full licence text at the end of this file)
 *
 * The tracer layer on top of ringbuf.h: the user-space form of the kernel's
 * TRACE_EVENT() (and DPDK's RTE_TRACE_POINT), a text view in the style of the
 * kernel's `trace` file, and an exporter that writes trace.dat files which the
 * real `trace-cmd report` and KernelShark read. Written from the published file
 * formats; it contains no code from the kernel, trace-cmd or libtraceevent.
 *
 * This header includes every part of the layer, one header per concern, each
 * usable alone (it includes ringbuf.h and the parts it needs):
 *
 *   ringbuf_trace_event.h     >>events    RINGBUF_TRACE_EVENT(), registry, enable/disable
 *                                         by glob, threads, format text (the base)
 *   ringbuf_trace_text.h      >>text      text output like the kernel's trace file, merged
 *                                         over CPUs; captures of pages while writers run
 *   ringbuf_tracedat.h        >>tracedat  trace.dat v6/v7: the in-memory export and the
 *                                         streaming writer (>>tdat_api), one layout writer
 *   ringbuf_trace_flight.h    >>flight    event formats and thread names kept in a
 *                                         file-backed buffer's user area; the printf interpreter
 *   ringbuf_trace_filter.h    >>filter    per-event filters and triggers (the kernel's
 *                                         syntax) set at run time
 *   ringbuf_trace_snapshot.h  >>snapshot  snapshot buffers and stack traces (the snapshot
 *                                         and stacktrace triggers)
 *
 * Every public name is where it was: a program that includes ringbuf_trace.h
 * builds as before. Including one part instead only shortens the compile.
 *
 * USAGE
 *   In exactly one C or C++ file:  #define RINGBUF_IMPLEMENTATION
 *                                  #include "ringbuf_trace.h"    (includes ringbuf.h)
 *   Everywhere else:               #include "ringbuf_trace.h"
 *   Events are defined in a header with RINGBUF_TRACE_EVENT(); the one C file
 *   that instantiates their descriptors defines RINGBUF_TRACE_DEFINE_EVENTS
 *   before including that header (the kernel's CREATE_TRACE_POINTS).
 *   With single parts: the file that defines RINGBUF_IMPLEMENTATION includes
 *   every part that any file of the program uses.
 *
 * QUICK START
 *   #define RINGBUF_IMPLEMENTATION
 *   #define RINGBUF_TRACE_DEFINE_EVENTS
 *   #include "ringbuf_trace.h"
 *
 *   RINGBUF_TRACE_EVENT(sample,
 *       RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, seq),
 *                      RINGBUF_FIELD(int64_t, delta),
 *                      RINGBUF_CHARS(msg, 16)),
 *       RINGBUF_PRINT("seq=%u delta=%lld msg=%s", REC->seq, (long long)REC->delta, REC->msg))
 *
 *   struct ringbuf_trace_registry reg = RINGBUF_TRACE_REGISTRY_INIT("ringbuf");
 *   ringbuf_trace_register_event(&reg, &ringbuf_event_sample);   // id 1, enabled
 *   trace_sample(rb, cpu, 1, -5, "hello");                       // async-signal-safe
 *   ringbuf_trace_print(rb, &reg, RINGBUF_ALL_CPUS, stdout, 0, 0);  // or:
 *   ringbuf_trace_save_tracedat(rb, &reg, "trace.dat", NULL);    // trace-cmd report trace.dat
 *
 * CONFIGURATION (each in the opening block of its part too)
 *   RINGBUF_TRACE_EMIT_PREFIX   [global]    prefix of generated emitters (default trace_)
 *   RINGBUF_TRACE_STR_MAX       [global]    longest RINGBUF_STRING() copied (default 1024 bytes)
 *   RINGBUF_TRACE_MAX_THREADS   [impl-only] threads whose name (comm) is remembered (default 4096)
 *   RINGBUF_TRACE_USER_COMMS    [global]    thread-name slots in a buffer's user area (default
 *                               256, ringbuf_trace_flight.h)
 *   RINGBUF_TRACE_FILTER_SLOTS  [impl-only] writer slots of the filter grace period (default 256;
 *                               threads beyond share one slower counter, >>filter)
 *   RINGBUF_TRACE_STACK_MAX     [impl-only] frames a stack event holds (default 16, >>snapshot)
 *   RINGBUF_TRACE_ID_STACK      [global]    event id of the stack event (kernel_stack of the
 *                               "ftrace" system; default 32004, clear of registry ids)
 *
 * CONTEXTS
 *   Emitters, ringbuf_trace_thread_id(), ringbuf_trace_thread_name() and
 *   ringbuf_trace_signal_enter()/exit() are async-signal-safe: no malloc, no
 *   lock, no stdio. Registration, enable/disable, text output and export are
 *   for ordinary threads (they may allocate and use stdio); enable/disable may
 *   run while writers emit.
 *
 * LIMITS
 *   C++ (11 and later, g++ and clang++) compiles the implementation and the
 *   event macros (ringbuf.h's >>cxx shim), except RINGBUF_TRACE_EVENT() with
 *   RINGBUF_STATIC (C++ has no tentative definitions). The thread id is cached per thread; a pthread_atfork()
 *   child handler (installed when the implementation is loaded, or at the
 *   first registration) forgets it in the child of fork(), so children report
 *   their own pid. A child made with a raw clone()/vfork() syscall that runs
 *   no atfork handlers must call ringbuf_trace_thread_reset() before it emits.
 */
#ifdef __cplusplus
#ifndef RINGBUF__CXX_SHIM_KEEP
/* C++: ringbuf.h's C11-atomics shim (>>cxx in ringbuf.h) stays in force until
 * the end of this file, which includes ringbuf.h again to end it. */
#define RINGBUF__CXX_SHIM_KEEP 1
#define RINGBUF__CXX_SHIM_BY_TRACE 1
#endif
#endif
#include "ringbuf_trace_event.h"
#include "ringbuf_trace_snapshot.h"
#include "ringbuf_trace_filter.h"
#include "ringbuf_trace_flight.h"
#include "ringbuf_trace_text.h"
#include "ringbuf_tracedat.h"

#ifndef RINGBUF_TRACE_H
#define RINGBUF_TRACE_H
#endif

/* C++: end ringbuf.h's shim where this header started it */
#if defined(__cplusplus) && defined(RINGBUF__CXX_SHIM_BY_TRACE)
#undef RINGBUF__CXX_SHIM_BY_TRACE
#undef RINGBUF__CXX_SHIM_KEEP
#include "ringbuf.h"
#endif

/*
 * ------------------------------------------------------------------------------
 * MIT License
 *
 * Copyright (c) 2026 The ringbuf.h authors
 *
 * Permission is hereby granted, free of charge, to any person obtaining a copy
 * of this software and associated documentation files (the "Software"), to deal
 * in the Software without restriction, including without limitation the rights
 * to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
 * copies of the Software, and to permit persons to whom the Software is
 * furnished to do so, subject to the following conditions:
 *
 * The above copyright notice and this permission notice shall be included in
 * all copies or substantial portions of the Software.
 *
 * THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 * IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 * FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 * AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 * LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
 * OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
 * SOFTWARE.
 * ------------------------------------------------------------------------------
 */
