/* ringbuf.h - v0.1.0 - lock-free per-CPU trace ring buffer, kernel ftrace format
 * SPDX-License-Identifier: MIT   (full licence text at the end of this file)
 *
 * A user-space port of the design of the Linux kernel's ftrace ring buffer:
 * per-CPU rings of pages with head/commit/tail pages, an off-ring reader page
 * swapped in lock-free, HEADER/UPDATE flags in the low bits of the links,
 * nested writers committed by the outermost one, 27-bit time deltas with
 * TIME_EXTEND / TIME_STAMP events, overwrite and producer/consumer modes and
 * exact loss accounting. Pages are byte-compatible with the kernel's
 * `buffer_data_page`, so libtraceevent's kbuffer (trace-cmd, KernelShark)
 * parses them. The code is written from the published algorithm; it contains
 * no kernel code.
 *
 * USAGE
 *   In exactly one C or C++ file:  #define RINGBUF_IMPLEMENTATION
 *                                  #include "ringbuf.h"
 *   Everywhere else:               #include "ringbuf.h"
 *
 * TABLE OF CONTENTS (grep for the anchors): every "==== >>" section header,
 * in order. Each section calls only the sections above it (>>inline's fast
 * path may call its out-of-line slow path); tests/check-docs.sh checks this
 * list against the headers.
 *   >>cxx        C++: the C11-atomics shim (C++11 and later, GCC and Clang)
 *   >>config     compile-time options
 *   >>api        public types and functions
 *   >>internal   page walk and warning hooks for tests and tools
 *   >>inline     the block layout and the write path's common case, compiled
 *                into the caller (internal: use >>api)
 *   >>impl       the implementation (RINGBUF_IMPLEMENTATION only):
 *   >>design       design notes: page ring, flags, write path steps, orders
 *   >>parse        page parsing, shared by every reader
 *   >>platform     thread ids, clocks, membarrier
 *   >>writer       the kernel's write path on one CPU buffer (an index)
 *   >>reader       page swap, consume, whole pages, merged readers, the
 *                  iterator, waiting; a dead reader's swap repaired
 *   >>repair       a dead writer's buffer made consistent
 *   >>control      on/off, disable/enable, reset, quiesce, mode
 *   >>stats        statistics
 *   >>contexts     RINGBUF_CPU_THREAD / RINGBUF_CPU_CURRENT: the buffer chosen
 *                  (owner words, the rseq claim), then the core called
 *   >>setup        layout, ringbuf_init_in, the clock of a buffer
 *   >>file         file and memfd blocks, validation, recovery
 *   >>lifecycle    ringbuf_create, ringbuf_destroy, errors
 *
 * QUICK START
 *   struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;   // 1 CPU, 1 MiB, 4 KiB pages
 *   struct ringbuf *rb;
 *   if (ringbuf_create(&cfg, &rb) < 0) ...;
 *   uint32_t *p = ringbuf_reserve(rb, 0, sizeof *p);   // NULL: dropped and counted
 *   if (p) { *p = 42; ringbuf_commit(rb, 0, p); }
 *   struct ringbuf_record rec;
 *   while (ringbuf_consume(rb, 0, &rec) > 0) use(rec.data, rec.len, rec.ts, rec.lost);
 *   ringbuf_destroy(rb);
 *
 * CONFIGURATION (>>config)
 *   RINGBUF_API        [global]    declaration specifier of public functions (default extern)
 *   RINGBUF_NAMESPACE  [global]    prefix for every exported symbol (e.g. myapp_), so that two
 *                                  copies or another ringbuf_* library link into one program
 *   RINGBUF_STATIC     [global]    make every function static (single-TU users)
 *   RINGBUF_ASSERT(c)  [impl-only] internal assertions (default assert(c))
 *   RINGBUF_MALLOC(sz, ctx) / RINGBUF_FREE(p, ctx)
 *                      [impl-only] allocator used by ringbuf_create() (both or neither;
 *                                  default malloc/free; any alignment: ringbuf_create()
 *                                  over-allocates and aligns the block itself)
 *   RINGBUF_MAX_NEST   [global]    maximum writer nesting depth per CPU buffer (default 8, 4..64)
 *   RINGBUF_DEBUG      [global]    contract checks (commit/discard of an event that is not
 *                                  the current one) reported through ringbuf_set_warn_hook()
 *   RINGBUF_TESTING    [global]    compile RINGBUF__TESTPOINT() hooks into the write path
 *   RINGBUF_PORTABLE   [global]    use only C11 atomics (default on x86-64: single-instruction
 *                                  non-LOCK read-modify-writes for owner-only counters)
 *   RINGBUF_NO_INLINE  [per file]  ringbuf_reserve / ringbuf_commit as plain calls instead of
 *                                  the inline fast path (C and C++ files alike)
 *   RINGBUF_TLS_MODEL  [global]    TLS model of the per-thread writer state, a string:
 *                                  "initial-exec" (default; in a shared object built
 *                                  against a libc other than glibc: "global-dynamic").
 *                                  A plugin or LD_PRELOAD object that is dlopen'ed on musl
 *                                  needs "global-dynamic" (or "local-dynamic"); its first
 *                                  access in a thread may then allocate (glibc's
 *                                  __tls_get_addr), so call ringbuf_thread_init() in each
 *                                  thread before its signal handlers write
 *   RINGBUF_THREAD_RESCAN
 *                      [impl-only] RINGBUF_CPU_THREAD, a thread without a buffer: the
 *                                  most events between two liveness scans of the
 *                                  owners (kill(tid, 0) each; default 65536, >= 16)
 *
 * CONCURRENCY CONTRACT (README's contract table; docs/contexts.md for the rest)
 *   Writers of one per-CPU buffer must nest like a stack: one thread at a time,
 *   plus the signal handlers that interrupt it (an interrupted writer resumes only
 *   after the interrupting one has committed or discarded). Writers of different
 *   CPU buffers are independent. Readers may run on any thread, concurrently with
 *   writers; readers of one CPU are serialized by the library. The write path is
 *   lock-free and async-signal-safe: no malloc, no lock, and no syscall on the
 *   common path (the default clock is clock_gettime, which is async-signal-safe
 *   and a vDSO call on Linux); the rarer paths' async-signal-safe calls (the
 *   mapped modes' gettid once per thread, kill(tid, 0) on throttled scans,
 *   FUTEX_WAKE for a waiting reader) are listed in docs/contexts.md (async-signal-safety).
 *
 * ERRORS
 *   Setup and reader calls return 0 (or a count) on success and a negative
 *   RINGBUF_E* code on failure; ringbuf_strerror() names it. The hot path
 *   (ringbuf_reserve) returns NULL on failure and counts the failure in the
 *   per-CPU statistics under the kernel's names.
 */
/* ---- C++ (>>cxx) ---------------------------------------------------------
 * The layouts and the implementation are C11 with _Atomic fields. A C++
 * translation unit compiles the same code through this shim: _Atomic(T) is
 * plain T aligned to its size (what GCC and Clang give _Atomic(T) in C, so
 * the block layout is byte-identical; see the static assertions after the
 * layouts) and the C11 operations are the GCC/Clang __atomic builtins with
 * the same memory orders (C11's memory_order values are the __ATOMIC_*
 * constants). Every atomic field is only ever accessed through these
 * operations (a plain access would be an implicit seq_cst access in C and a
 * plain one in C++: clang -Watomic-implicit-seq-cst finds none in C).
 * The names are macros only while ringbuf.h (and ringbuf_trace.h) are read:
 * push_macro here, pop_macro at the end of the header, so that a user's
 * std::atomic_load_explicit or <stdatomic.h> after it are untouched. */
#if defined(__cplusplus) && !defined(RINGBUF__CXX_SHIM)
#if !defined(__GNUC__) && !defined(__clang__)
#error "ringbuf.h from C++ needs GCC or Clang (__atomic builtins)"
#endif
#define RINGBUF__CXX_SHIM 1
#pragma push_macro("_Atomic")
#pragma push_macro("_Alignas")
#pragma push_macro("_Static_assert")
#pragma push_macro("_Thread_local")
#pragma push_macro("atomic_load_explicit")
#pragma push_macro("atomic_store_explicit")
#pragma push_macro("atomic_load")
#pragma push_macro("atomic_store")
#pragma push_macro("atomic_init")
#pragma push_macro("atomic_compare_exchange_strong_explicit")
#pragma push_macro("atomic_compare_exchange_weak_explicit")
#pragma push_macro("atomic_compare_exchange_strong")
#pragma push_macro("atomic_exchange_explicit")
#pragma push_macro("atomic_fetch_add_explicit")
#pragma push_macro("atomic_fetch_sub_explicit")
#pragma push_macro("atomic_fetch_or_explicit")
#pragma push_macro("atomic_fetch_and_explicit")
#pragma push_macro("atomic_fetch_add")
#pragma push_macro("atomic_fetch_and")
#pragma push_macro("atomic_thread_fence")
#pragma push_macro("atomic_signal_fence")
#pragma push_macro("memory_order_relaxed")
#pragma push_macro("memory_order_acquire")
#pragma push_macro("memory_order_release")
#pragma push_macro("memory_order_acq_rel")
#pragma push_macro("memory_order_seq_cst")
#undef _Atomic
#undef _Alignas
#undef _Static_assert
#undef _Thread_local
#undef atomic_load_explicit
#undef atomic_store_explicit
#undef atomic_load
#undef atomic_store
#undef atomic_init
#undef atomic_compare_exchange_strong_explicit
#undef atomic_compare_exchange_weak_explicit
#undef atomic_compare_exchange_strong
#undef atomic_exchange_explicit
#undef atomic_fetch_add_explicit
#undef atomic_fetch_sub_explicit
#undef atomic_fetch_or_explicit
#undef atomic_fetch_and_explicit
#undef atomic_fetch_add
#undef atomic_fetch_and
#undef atomic_thread_fence
#undef atomic_signal_fence
#undef memory_order_relaxed
#undef memory_order_acquire
#undef memory_order_release
#undef memory_order_acq_rel
#undef memory_order_seq_cst
#define _Atomic(T) ringbuf__cxx_atomic<T>::type
#define _Alignas(n) alignas(n)
#define _Static_assert static_assert
#define _Thread_local __thread
#define memory_order_relaxed __ATOMIC_RELAXED
#define memory_order_acquire __ATOMIC_ACQUIRE
#define memory_order_release __ATOMIC_RELEASE
#define memory_order_acq_rel __ATOMIC_ACQ_REL
#define memory_order_seq_cst __ATOMIC_SEQ_CST
#define atomic_load_explicit(p, mo) __atomic_load_n((p), (mo))
#define atomic_store_explicit(p, v, mo) __atomic_store_n((p), (v), (mo))
#define atomic_load(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define atomic_store(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define atomic_init(p, v) ((void)(*(p) = (v)))
#define atomic_compare_exchange_strong_explicit(p, e, v, s, f) \
	__atomic_compare_exchange_n((p), (e), (v), false, (s), (f))
#define atomic_compare_exchange_weak_explicit(p, e, v, s, f) \
	__atomic_compare_exchange_n((p), (e), (v), true, (s), (f))
#define atomic_compare_exchange_strong(p, e, v) \
	__atomic_compare_exchange_n((p), (e), (v), false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)
#define atomic_exchange_explicit(p, v, mo) __atomic_exchange_n((p), (v), (mo))
#define atomic_fetch_add_explicit(p, v, mo) __atomic_fetch_add((p), (v), (mo))
#define atomic_fetch_sub_explicit(p, v, mo) __atomic_fetch_sub((p), (v), (mo))
#define atomic_fetch_or_explicit(p, v, mo) __atomic_fetch_or((p), (v), (mo))
#define atomic_fetch_and_explicit(p, v, mo) __atomic_fetch_and((p), (v), (mo))
#define atomic_fetch_add(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define atomic_fetch_and(p, v) __atomic_fetch_and((p), (v), __ATOMIC_SEQ_CST)
#define atomic_thread_fence(mo) __atomic_thread_fence(mo)
#define atomic_signal_fence(mo) __atomic_signal_fence(mo)
#endif

#ifndef RINGBUF_H
#define RINGBUF_H

/* No feature-test macro is defined here: one defined by ringbuf.h would stay
 * in force for the rest of the user's file (glibc's <features.h> is read once;
 * strerror_r, basename... change meaning). The implementation declares what
 * strict -std=c11 hides (syscall, clock_gettime, close-on-exec) in >>impl. */

#define RINGBUF_VERSION_MAJOR 0
#define RINGBUF_VERSION_MINOR 1
#define RINGBUF_VERSION_PATCH 0

/* ==== >>config ========================================================== */

#ifdef RINGBUF_STATIC
/* a single-file user calls a few of the functions: the others are not
 * "defined but not used" (-Wunused-function) */
#if defined(__GNUC__) || defined(__clang__)
#define RINGBUF_API static __attribute__((unused))
#else
#define RINGBUF_API static
#endif
#elif !defined(RINGBUF_API)
#define RINGBUF_API extern
#endif

/* Symbol prefix (RINGBUF_NAMESPACE). Two copies of ringbuf.h in one program
 * (two vendored libraries), or ringbuf.h next to another library that uses
 * ringbuf_* names (rmind/ringbuf defines ringbuf_consume), collide at link
 * time. Define RINGBUF_NAMESPACE to a prefix, e.g. -DRINGBUF_NAMESPACE=myapp_,
 * for every file that includes this copy: each symbol it exports or refers to
 * is then prefixed (ringbuf_create links as myapp_ringbuf_create) while the
 * source still writes ringbuf_create. The list below has every non-static
 * function and variable of ringbuf.h (ringbuf_trace.h has its own);
 * tests/packaging/namespace.sh checks with nm that no unprefixed ringbuf_
 * symbol is left and that every name listed is a real symbol, so a new
 * function cannot be forgotten. The macros rename an identifier everywhere,
 * also struct tags of the same name (ringbuf_stats, ringbuf__tctx), which is
 * harmless; struct ringbuf
 * itself keeps its name, so this header and another one declaring struct
 * ringbuf cannot be included in the same file. ringbuf_reserve and
 * ringbuf_commit are also function-like macros (>>inline), so they get their
 * prefix from an asm label on their declaration instead (GCC, Clang). */
#ifdef RINGBUF_NAMESPACE
#if !defined(__GNUC__) && !defined(__clang__)
#error "RINGBUF_NAMESPACE needs asm labels (GCC, Clang) for ringbuf_reserve/ringbuf_commit"
#endif
#define RINGBUF__NS_CAT(a, b) a##b
#define RINGBUF__NS_XCAT(a, b) RINGBUF__NS_CAT(a, b)
#define RINGBUF__NS(name) RINGBUF__NS_XCAT(RINGBUF_NAMESPACE, name)
#define RINGBUF__NS_STR(x) #x
#define RINGBUF__NS_XSTR(x) RINGBUF__NS_STR(x)
#define RINGBUF__NS_LABEL(name) \
	__asm__(RINGBUF__NS_XSTR(__USER_LABEL_PREFIX__) RINGBUF__NS_XSTR(RINGBUF__NS(name)))
#define ringbuf__clock_mono          RINGBUF__NS(ringbuf__clock_mono)
#define ringbuf__clock_shared        RINGBUF__NS(ringbuf__clock_shared)
#define ringbuf__commit_slow         RINGBUF__NS(ringbuf__commit_slow)
#define ringbuf__end_commit          RINGBUF__NS(ringbuf__end_commit)
#define ringbuf__reserve_next        RINGBUF__NS(ringbuf__reserve_next)
#define ringbuf__reserve_refused     RINGBUF__NS(ringbuf__reserve_refused)
#define ringbuf__reserve_slow        RINGBUF__NS(ringbuf__reserve_slow)
#define ringbuf__set_testpoint_hook  RINGBUF__NS(ringbuf__set_testpoint_hook)
#define ringbuf__set_reset_hook      RINGBUF__NS(ringbuf__set_reset_hook)
#define ringbuf__set_membarrier_fail RINGBUF__NS(ringbuf__set_membarrier_fail)
#define ringbuf__test_rseq_counts RINGBUF__NS(ringbuf__test_rseq_counts)
#define ringbuf__tctx                RINGBUF__NS(ringbuf__tctx)
#define ringbuf__tctx_last           RINGBUF__NS(ringbuf__tctx_last)
#define ringbuf__tclaim              RINGBUF__NS(ringbuf__tclaim)
#define ringbuf__tcur                RINGBUF__NS(ringbuf__tcur)
#define ringbuf__testpoint           RINGBUF__NS(ringbuf__testpoint)
#define ringbuf__walk_pages          RINGBUF__NS(ringbuf__walk_pages)
#define ringbuf_clock_name           RINGBUF__NS(ringbuf_clock_name)
#define ringbuf_clock_tsc            RINGBUF__NS(ringbuf_clock_tsc)
#define ringbuf_consume              RINGBUF__NS(ringbuf_consume)
#define ringbuf_consume_merged       RINGBUF__NS(ringbuf_consume_merged)
#define ringbuf_create               RINGBUF__NS(ringbuf_create)
#define ringbuf_create_file          RINGBUF__NS(ringbuf_create_file)
#define ringbuf_create_shm           RINGBUF__NS(ringbuf_create_shm)
#define ringbuf_destroy              RINGBUF__NS(ringbuf_destroy)
#define ringbuf_discard              RINGBUF__NS(ringbuf_discard)
#define ringbuf_empty_cpu            RINGBUF__NS(ringbuf_empty_cpu)
#define ringbuf_fd                   RINGBUF__NS(ringbuf_fd)
#define ringbuf_get_mode             RINGBUF__NS(ringbuf_get_mode)
#define ringbuf_init_in              RINGBUF__NS(ringbuf_init_in)
#define ringbuf_iter_dropped         RINGBUF__NS(ringbuf_iter_dropped)
#define ringbuf_iter_finish          RINGBUF__NS(ringbuf_iter_finish)
#define ringbuf_iter_init_in         RINGBUF__NS(ringbuf_iter_init_in)
#define ringbuf_iter_next            RINGBUF__NS(ringbuf_iter_next)
#define ringbuf_iter_reset           RINGBUF__NS(ringbuf_iter_reset)
#define ringbuf_iter_size            RINGBUF__NS(ringbuf_iter_size)
#define ringbuf_iter_start           RINGBUF__NS(ringbuf_iter_start)
#define ringbuf_max_event_size       RINGBUF__NS(ringbuf_max_event_size)
#define ringbuf_ncpu                 RINGBUF__NS(ringbuf_ncpu)
#define ringbuf_nr_pages             RINGBUF__NS(ringbuf_nr_pages)
#define ringbuf_open_file            RINGBUF__NS(ringbuf_open_file)
#define ringbuf_page_size            RINGBUF__NS(ringbuf_page_size)
#define ringbuf_peek                 RINGBUF__NS(ringbuf_peek)
#define ringbuf_quiesce              RINGBUF__NS(ringbuf_quiesce)
#define ringbuf_read_page            RINGBUF__NS(ringbuf_read_page)
#define ringbuf_read_page_ref        RINGBUF__NS(ringbuf_read_page_ref)
#define ringbuf_record_disable       RINGBUF__NS(ringbuf_record_disable)
#define ringbuf_record_disable_cpu   RINGBUF__NS(ringbuf_record_disable_cpu)
#define ringbuf_record_enable        RINGBUF__NS(ringbuf_record_enable)
#define ringbuf_record_enable_cpu    RINGBUF__NS(ringbuf_record_enable_cpu)
#define ringbuf_record_is_on         RINGBUF__NS(ringbuf_record_is_on)
#define ringbuf_record_off           RINGBUF__NS(ringbuf_record_off)
#define ringbuf_record_on            RINGBUF__NS(ringbuf_record_on)
#define ringbuf_recover              RINGBUF__NS(ringbuf_recover)
#define ringbuf_reset                RINGBUF__NS(ringbuf_reset)
#define ringbuf_reset_cpu            RINGBUF__NS(ringbuf_reset_cpu)
#define ringbuf_set_clock            RINGBUF__NS(ringbuf_set_clock)
#define ringbuf_set_mode             RINGBUF__NS(ringbuf_set_mode)
#define ringbuf_set_warn_hook        RINGBUF__NS(ringbuf_set_warn_hook)
#define ringbuf_size_needed          RINGBUF__NS(ringbuf_size_needed)
#define ringbuf_stats                RINGBUF__NS(ringbuf_stats)
#define ringbuf_stats_cpu            RINGBUF__NS(ringbuf_stats_cpu)
#define ringbuf_strerror             RINGBUF__NS(ringbuf_strerror)
#define ringbuf_thread_cpu           RINGBUF__NS(ringbuf_thread_cpu)
#define ringbuf_thread_init          RINGBUF__NS(ringbuf_thread_init)
#define ringbuf_thread_release       RINGBUF__NS(ringbuf_thread_release)
#define ringbuf_thread_shared        RINGBUF__NS(ringbuf_thread_shared)
#define ringbuf_time_stamp           RINGBUF__NS(ringbuf_time_stamp)
#define ringbuf_ts_to_ns             RINGBUF__NS(ringbuf_ts_to_ns)
#define ringbuf_user_area            RINGBUF__NS(ringbuf_user_area)
#define ringbuf_wait                 RINGBUF__NS(ringbuf_wait)
#define ringbuf_wake_waiters         RINGBUF__NS(ringbuf_wake_waiters)
#define ringbuf_write                RINGBUF__NS(ringbuf_write)
#else
#define RINGBUF__NS_LABEL(name)
#endif

#ifndef RINGBUF_MAX_NEST
#define RINGBUF_MAX_NEST 8
#endif
#if RINGBUF_MAX_NEST < 4 || RINGBUF_MAX_NEST > 64
#error "RINGBUF_MAX_NEST must be between 4 and 64"
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
/* >>cxx: _Atomic(T) in C++ is T with the alignment C gives _Atomic(T) (its
 * size: 8 for 64-bit types also where uint64_t alone is 4-aligned, i386) */
extern "C++" {
template <typename T> struct ringbuf__cxx_atomic {
	typedef T type;
};
typedef uint64_t ringbuf__cxx_u64 __attribute__((aligned(8)));
typedef int64_t ringbuf__cxx_i64 __attribute__((aligned(8)));
template <> struct ringbuf__cxx_atomic<uint64_t> {
	typedef ringbuf__cxx_u64 type;
};
template <> struct ringbuf__cxx_atomic<int64_t> {
	typedef ringbuf__cxx_i64 type;
};
}
#if __GCC_ATOMIC_LLONG_LOCK_FREE != 2 || __GCC_ATOMIC_LONG_LOCK_FREE != 2 || __GCC_ATOMIC_INT_LOCK_FREE != 2
#error "ringbuf.h needs lock-free atomic int, long and long long (async-signal safety)"
#endif
/* the public structs' atomic fields (32-bit and pointers): plain in C++ */
#define RINGBUF__ATOMIC(t) t
#define RINGBUF__LOAD_RELAXED(p) __atomic_load_n((p), __ATOMIC_RELAXED)
extern "C" {
#else
#include <stdatomic.h>
#define RINGBUF__ATOMIC(t) _Atomic(t)
/* for macros that expand in the user's code (after the C++ shim is gone) */
#define RINGBUF__LOAD_RELAXED(p) atomic_load_explicit((p), memory_order_relaxed)
#endif

/* ==== >>api ============================================================= */

/** Error codes: every setup call returns 0 or one of these (negative). */
enum ringbuf_error {
	RINGBUF_OK = 0,
	RINGBUF_EINVAL = -1,   /* an argument is out of range or NULL */
	RINGBUF_ENOMEM = -2,   /* allocation failed, the caller's block is too small, or the block
				  would exceed the address space (size_per_cpu near SIZE_MAX on 32-bit) */
	RINGBUF_EBUSY = -3,    /* reader re-entered from a signal handler, or writers did not drain */
	RINGBUF_EAGAIN = -4,   /* a concurrent writer kept a page link in transition; retry */
	RINGBUF_ECORRUPT = -5, /* page memory failed validation; recording was disabled */
	RINGBUF_EALIGN = -6,   /* the caller's memory block is not 64-byte aligned */
	RINGBUF_E2BIG = -7,    /* event larger than ringbuf_max_event_size() */
	RINGBUF_ENOSPC = -8,   /* the write was dropped (full, disabled, or nested too deep) */
	RINGBUF_EFORMAT = -9,  /* not a ringbuf block (bad magic, byte order or word size) */
	RINGBUF_EVERSION = -10,/* a ringbuf block of another layout version */
	RINGBUF_ETRUNC = -11,  /* the file is shorter than its header says */
	RINGBUF_ESYS = -12,    /* a system call failed; errno tells which */
};

/** Buffer modes (switchable at run time with ringbuf_set_mode()). */
enum ringbuf_mode {
	RINGBUF_MODE_OVERWRITE = 0,         /* flight recorder: oldest page is overwritten (overrun) */
	RINGBUF_MODE_PRODUCER_CONSUMER = 1, /* full buffer drops the new event (dropped_events) */
};

/** Time-stamp encodings. */
enum ringbuf_ts_mode {
	RINGBUF_TS_DELTA = 0,    /* 27-bit deltas, TIME_EXTEND when a delta does not fit */
	RINGBUF_TS_ABSOLUTE = 1, /* every event after a page's first carries a TIME_STAMP */
};

/** Flags for ringbuf_config.flags. */
enum ringbuf_flags {
	/* 8-byte records (kernel RB_FORCE_8BYTE_ALIGNMENT): payloads 8-aligned
	 * with a 64-bit long; with a 32-bit long the page header is 12 bytes
	 * and payloads are 4 mod 8 (the kernel's 32-bit page layout) */
	RINGBUF_F_ALIGN8 = 1u << 0,
	/* ringbuf_init_in() only: the caller's block is all zero bytes (a
	 * fresh anonymous or file mapping), so the data pages are left as they
	 * are, neither written nor touched (see ringbuf_init_in) */
	RINGBUF_F_ZEROED = 1u << 1,
	/* with RINGBUF_F_CPU_CURRENT: each CPU's buffer is taken with a locked
	 * compare-and-swap even where a restartable sequence could (x86-64,
	 * glibc >= 2.35); the same rules otherwise. Without it: no effect
	 * (every other block claims by compare-and-swap) */
	RINGBUF_F_NO_RSEQ = 1u << 2,
	/* ringbuf_create() only: a per-CPU block, for RINGBUF_CPU_CURRENT
	 * writers. Buffers 0 .. ncpu-shared-1 belong to CPUs 0 .. ncpu-shared-1:
	 * only a writer running on that CPU takes one (by restartable sequence
	 * where the process has one, see PER-CPU BLOCKS in >>contexts). The
	 * last `shared` (ringbuf_config.shared) are taken for one event at a
	 * time by the other writers: one whose CPU's buffer is held (its owner
	 * was preempted mid-event) or has no buffer, and every
	 * RINGBUF_CPU_THREAD writer (no claims in such a block); none free: the
	 * event is dropped (counted in `unmapped`) */
	RINGBUF_F_CPU_CURRENT = 1u << 3,
};

/** Clock: returns nanoseconds (or any monotonic unit); must be async-signal-safe. */
typedef uint64_t (*ringbuf_clock_fn)(void *ctx);

/** Creation parameters; start from RINGBUF_CONFIG_INIT. */
struct ringbuf_config {
	unsigned ncpu;         /* number of per-CPU buffers, >= 1 */
	size_t size_per_cpu;   /* bytes of ring pages per CPU (rounded up to pages; >= 2 pages) */
	size_t page_size;      /* power of two, 64 .. 1 MiB; a reader page is added per CPU */
	int mode;              /* enum ringbuf_mode */
	int ts_mode;           /* enum ringbuf_ts_mode */
	unsigned flags;        /* enum ringbuf_flags */
	ringbuf_clock_fn clock;/* NULL: CLOCK_MONOTONIC in ns; of a file/memfd block: this
				* process's only (see ringbuf_set_clock) */
	void *clock_ctx;       /* passed to clock */
	const char *clock_name;/* stored in the block, e.g. for trace.dat (NULL: "mono"
				* for the default clock, "unknown" otherwise); < 16 chars */
	size_t user_size;      /* bytes of a user area kept in the block (event formats,
				* names...), see ringbuf_user_area() */
	unsigned file_mode;    /* ringbuf_create_file(): permission bits of the new file,
				* applied exactly (umask ignored); 0: 0600, owner only */
	unsigned shared;       /* the last `shared` buffers are taken per event, never
				* claimed: ringbuf_thread_shared(rb, shared) from the start;
				* with RINGBUF_F_CPU_CURRENT the only way to set it */
};
#define RINGBUF_CONFIG_INIT                                                   \
	{ 1, (size_t)1 << 20, 4096, RINGBUF_MODE_OVERWRITE, RINGBUF_TS_DELTA, 0, \
	  NULL, NULL, NULL, 0, 0, 0 }

/** One event handed to a reader. data points into the reader page and stays
 * valid until the next reader call on the same CPU. */
struct ringbuf_record {
	const void *data; /* payload */
	size_t len;       /* payload length, rounded up to the event alignment (4 or 8) */
	uint64_t ts;      /* time stamp from the buffer's clock */
	uint64_t lost;    /* events lost (overwritten or dropped) just before this one */
	unsigned cpu;     /* per-CPU buffer it came from */
};

/** Per-CPU statistics (kernel names). See ringbuf_stats_cpu(). */
struct ringbuf_stats {
	uint64_t entries;        /* committed events still in the buffer (not read, not overwritten) */
	uint64_t committed;      /* events committed since creation/reset */
	uint64_t overrun;        /* committed events overwritten before being read */
	uint64_t commit_overrun; /* reserves dropped because the tail reached the commit page */
	uint64_t dropped_events; /* reserves dropped because the buffer was full (producer/consumer),
				  * or its file system had no room for a new page */
	uint64_t read_events;    /* events consumed */
	uint64_t bytes;          /* bytes of records in the buffer (headers, extends, padding) */
	uint64_t oldest_event_ts;/* time stamp of the oldest page in the buffer (0 if empty) */
	uint64_t pages_touched;  /* pages the tail moved onto */
	uint64_t pages_lost;     /* pages overwritten */
	uint64_t pages_read;     /* pages swapped out to the reader */
	uint64_t disabled_events;/* reserves refused because recording was off or disabled */
	uint64_t rejected_events;/* reserves refused for bad input (length 0 or too large) */
	uint64_t nest_overflow;  /* reserves refused because nesting exceeded RINGBUF_MAX_NEST */
	uint64_t discarded;      /* events discarded by ringbuf_discard() */
	uint64_t unmapped;       /* (ringbuf_stats only) mapped-mode writes dropped: no free
				  * buffer for RINGBUF_CPU_THREAD/CURRENT */
};

struct ringbuf;

/* -- lifecycle (any thread; not concurrently with other calls on the same buffer) -- */

/** Bytes of memory ringbuf_init_in() needs for cfg. Returns 0 or RINGBUF_EINVAL. */
RINGBUF_API int ringbuf_size_needed(const struct ringbuf_config *cfg, size_t *size);
/** Build a buffer inside caller memory (64-byte aligned, at least the size needed).
 * No allocation. The buffer is one relocatable block. It writes the metadata
 * (header, per-CPU state, page descriptors: about 40 bytes per page) and the
 * 16-byte header of every data page; with RINGBUF_F_ZEROED in cfg->flags the
 * caller promises the block reads as zero bytes (a fresh mmap) and no data
 * page is written, so set-up costs O(metadata) and the pages become resident
 * only as the writers reach them (ringbuf_create and ringbuf_create_file do
 * this). Garbage memory with RINGBUF_F_ZEROED is a contract violation: stale
 * page headers read as events. */
RINGBUF_API int ringbuf_init_in(void *mem, size_t size, const struct ringbuf_config *cfg,
				struct ringbuf **out);
/** Allocate and initialise a buffer. On Linux with the default allocator
 * the block is a fresh anonymous mapping (mmap): nothing but the metadata is
 * written, the data pages cost no memory until writers reach them. With
 * RINGBUF_MALLOC defined (or elsewhere), RINGBUF_MALLOC and each data page's
 * header is written. */
RINGBUF_API int ringbuf_create(const struct ringbuf_config *cfg, struct ringbuf **out);
/** Free a buffer made by ringbuf_create(); for ringbuf_init_in() it only
 * invalidates the block. No writer or reader may be running. NULL is a no-op.
 * So is a handle destroyed before, of any constructor, or an address none
 * returned: the address is looked up among this process's live buffers
 * before the block is read (a buffer made since at the same address is that
 * buffer, and is destroyed). Threads exiting meanwhile, whose claims
 * ringbuf_thread_init() has them release, need no care: a release under
 * way is waited for (it is short, runs no user code), one not begun finds
 * the buffer gone; once it returns, no thread of the library touches rb. */
RINGBUF_API void ringbuf_destroy(struct ringbuf *rb);
/** Human-readable text for an error code (never NULL). */
RINGBUF_API const char *ringbuf_strerror(int err);

/** The user area: cfg.user_size bytes inside the block (zeroed at creation),
 * e.g. for what a reader of a file-backed buffer needs to decode events. */
RINGBUF_API void *ringbuf_user_area(struct ringbuf *rb, size_t *size);
/** Name of the buffer's clock as stored in the block ("mono" by default). */
RINGBUF_API const char *ringbuf_clock_name(const struct ringbuf *rb);

/* -- file-backed buffers (flight recorder; any thread, like lifecycle calls) -- */

/** Build the buffer in a new file at path, mapped MAP_SHARED: what writers
 * commit survives the death of the process. The file is created under a
 * temporary name next to path (O_CREAT | O_EXCL: a symlink is never
 * followed), with cfg->file_mode (default 0600: other users cannot read the
 * trace), filled in, then renamed over path: an existing file at path is
 * replaced, never truncated or written through, a symlink planted there is
 * replaced rather than followed, and in a sticky directory (/tmp, /var/tmp) a
 * file another user owns is not replaced (RINGBUF_ESYS, errno EPERM). Needs
 * write permission on the directory. A user clock (cfg->clock) is this
 * process's: RINGBUF_ENOMEM once 64 live file or memfd blocks of the process
 * have one (see ringbuf_set_clock). The file is sparse: the metadata, the
 * user area and two data pages per CPU are allocated at creation
 * (RINGBUF_ESYS, errno ENOSPC, nothing left behind, where the file system
 * cannot hold them), each other data page when a writer first reaches it.
 * Where the file system has run out of room by then, the event is dropped
 * and counted (RINGBUF_ENOSPC, dropped_events, a reader's lost) and the
 * writer goes on once there is room. Both need Linux 5.14 or later
 * (MADV_POPULATE_WRITE); before it, a full file system raises SIGBUS in the
 * writer. To lose nothing, keep room for the whole block (ringbuf_size_needed). */
RINGBUF_API int ringbuf_create_file(const char *path, const struct ringbuf_config *cfg,
				    struct ringbuf **out);
/** The same in shared memory that is no file on disk: a memfd (memfd_create,
 * Linux 3.17), so no write-back ever, and nothing to clean up: the memory
 * lives while a process holds the descriptor or a mapping. name (NULL:
 * "ringbuf") only labels it in /proc. Another process (a recorder) maps it
 * with ringbuf_open_file("/proc/<pid>/fd/<ringbuf_fd(rb)>", ...) (same user,
 * or ptrace rights over the creator) or gets the descriptor passed (fork,
 * SCM_RIGHTS) and opens "/proc/self/fd/<n>". Created with cfg->file_mode (default 0600), close-on-exec,
 * sealed against shrinking and growing (F_SEAL_SHRINK | F_SEAL_GROW: a mapper
 * cannot make the other's accesses fault). ringbuf_destroy() unmaps and
 * closes it. A tmpfs file (ringbuf_create_file on /dev/shm) is the
 * alternative with a name: see docs/files-and-recorder.md, "Where to put a buffer". */
RINGBUF_API int ringbuf_create_shm(const char *name, const struct ringbuf_config *cfg,
				   struct ringbuf **out);
/** The memfd of a buffer made by ringbuf_create_shm() (owned by rb: closed by
 * ringbuf_destroy), or -1. */
RINGBUF_API int ringbuf_fd(const struct ringbuf *rb);
/** Flags for ringbuf_open_file(). */
enum ringbuf_open_flags {
	RINGBUF_OPEN_RDWR = 1u << 0,    /* map shared and writable: keep tracing, or read live */
	RINGBUF_OPEN_RECOVER = 1u << 1, /* the writers are gone: see ringbuf_recover(); without
					 * RDWR this works on a private copy, the file is untouched */
};
/** Open a block made by ringbuf_create_file(). The header (magic, layout
 * version, byte order, word size, geometry, size) and every index and link are
 * validated; a foreign, truncated or corrupted file gives an error, never a
 * crash. The clock is the default one when the stored name is "mono", else
 * set it with ringbuf_set_clock(). Read-only opens give a buffer that must
 * only be read (and read without RECOVER, it must be read live, writers
 * running, as it is not changed). */
RINGBUF_API int ringbuf_open_file(const char *path, unsigned flags, struct ringbuf **out);
/** Make a block whose writers died (SIGKILL in the middle of an event)
 * readable: events in flight are turned into padding, complete events that
 * nested writers left for their killed outermost writer are committed, a head
 * push or tail move left half done is finished, reader locks are released.
 * Only when no writer or reader of the block runs. */
RINGBUF_API int ringbuf_recover(struct ringbuf *rb);
/** Replace the clock. For a file or memfd block the function is this
 * process's (CLOCKS OF SHARED BLOCKS in >>setup): another process that
 * maps the block keeps its own, and one that set none reads CLOCK_MONOTONIC,
 * so set it in each process that writes; a process has at most 64 such blocks
 * with a user clock (RINGBUF_ENOMEM, nothing changed). Switching between the default, the TSC and a user clock also sets the
 * block's clock name ("mono", "x86-tsc", "unknown") and, for the TSC, its
 * calibration; for a shared block (file, memfd, RDWR open) in this process's
 * handle only (every process has its own copy of the header): other
 * processes keep the clock name they saw when they opened it, and a switch
 * to or from the TSC, whose stamps they would misread, is RINGBUF_EINVAL. Call it before writing: stamps already in the buffer keep their
 * unit (the kernel resets its buffer when the clock changes). */
RINGBUF_API int ringbuf_set_clock(struct ringbuf *rb, ringbuf_clock_fn clock, void *ctx);
/** The TSC clock: pass it as ringbuf_config.clock. Writers then execute rdtsc
 * inline (x86-64; elsewhere it is the default clock) and pages hold raw cycle
 * counts (clock name "x86-tsc"; ringbuf_trace.h's trace.dat export adds
 * trace-cmd's TSC2NSEC and OFFSET options, so trace-cmd shows seconds); the readers
 * (ringbuf_consume, _peek, _consume_merged, the iterator, stats) convert them
 * to CLOCK_MONOTONIC nanoseconds with a ratio calibrated over 10 ms when the
 * buffer is created. Assumes an invariant TSC, synchronized across CPUs, as
 * Linux does when it uses clocksource "tsc". */
RINGBUF_API uint64_t ringbuf_clock_tsc(void *ctx);
#define RINGBUF_CLOCK_TSC ringbuf_clock_tsc
/** A time stamp of rb's clock as the readers report it: nanoseconds for the
 * TSC clock, unchanged for the others. */
RINGBUF_API uint64_t ringbuf_ts_to_ns(const struct ringbuf *rb, uint64_t ts);

/* -- writer contexts: which per-CPU buffer a writer uses --
 * Pass one of these as `cpu` to ringbuf_reserve/commit/discard/write:
 *   an index 0..ncpu-1  explicit: the caller guarantees one thread (plus its
 *                       signal handlers) per index at a time;
 *   RINGBUF_CPU_THREAD  per thread: the thread's first event claims a free
 *                       buffer (lock-free, no allocation, fine inside a signal
 *                       handler) and keeps it until the thread exits (see
 *                       ringbuf_thread_init) or ringbuf_thread_release(). A
 *                       thread that finds none claims one as soon as one is
 *                       free; meanwhile it shares the buffers kept out of
 *                       claims (ringbuf_thread_shared), one event at a time,
 *                       or drops the event (counted). No system call per
 *                       event: owners that died are looked for at most once
 *                       per RINGBUF_THREAD_RESCAN events of such a thread;
 *   RINGBUF_CPU_CURRENT per CPU, guarded: the buffer of the CPU the thread runs
 *                       on (rseq cpu id, else sched_getcpu), owned for the
 *                       event by an owner word; a thread that finds it owned
 *                       by another (preempted or migrated mid-event) takes a
 *                       free one (in a RINGBUF_F_CPU_CURRENT block: one of its
 *                       shared buffers) or drops the event (counted). Never
 *                       spins. Fastest in a RINGBUF_F_CPU_CURRENT block.
 * commit/discard take the same value the reserve was given. A thread can use
 * the mapped modes with up to 4 buffers at a time. */
#define RINGBUF_CPU_THREAD (~0u - 1)
#define RINGBUF_CPU_CURRENT (~0u - 2)

/** Optional, from normal (not signal) context: prepare the calling thread so
 * that its RINGBUF_CPU_THREAD claim on rb is released when it exits (threads
 * that never call it release theirs when a claimer finds them dead). */
RINGBUF_API int ringbuf_thread_init(struct ringbuf *rb);
/** Release the calling thread's RINGBUF_CPU_THREAD claim on rb now (its
 * unread events stay for the reader). Inside an event on that buffer (a
 * thread exiting mid-event) it does nothing: the claim stays (release it
 * after the event). Call it from normal (not signal) context: a signal
 * handler that interrupts the thread's commit after its committing = 0 and
 * before its exit count (ringbuf__commit_fast, ringbuf__end_commit), or its
 * reserve before committing = 1, finds no event in flight and gives the
 * buffer back, while the interrupted writer still stores to it. */
RINGBUF_API void ringbuf_thread_release(struct ringbuf *rb);
/** Which buffer the calling thread's mapped writes go to: its claimed index
 * (RINGBUF_CPU_THREAD), else the buffer of its event in flight (shared or
 * RINGBUF_CPU_CURRENT), else -1. */
RINGBUF_API int ringbuf_thread_cpu(struct ringbuf *rb);
/** Keep the last n buffers (indices ncpu-n .. ncpu-1) out of RINGBUF_CPU_THREAD
 * claims, for threads beyond the buffer count: such a thread, finding every
 * other buffer claimed, writes each event to one of these, taken for that
 * event only (a lock-free compare-and-swap and a release store per event, as
 * RINGBUF_CPU_CURRENT; its signal handlers nest in it), and drops an event
 * (counted in `unmapped`) only when all n are in use at that instant. 0 (the
 * default): every buffer can be claimed, and threads beyond the count drop
 * until one is released. n == ncpu: no claims, every event shared. Claims
 * already held in that range stay until released. Stored in the block (a
 * shared file's writers all see it). Returns 0 or RINGBUF_EINVAL (n > ncpu;
 * in a RINGBUF_F_CPU_CURRENT block any n but its cfg.shared: fixed there). */
RINGBUF_API int ringbuf_thread_shared(struct ringbuf *rb, unsigned n);

/* -- writer (owning thread of the CPU buffer or its signal handlers;
 *    lock-free, async-signal-safe, no allocation) -- */

/** Reserve len payload bytes on CPU buffer cpu. Returns a pointer to the payload
 * (4-byte aligned; with RINGBUF_F_ALIGN8, 8-byte aligned when long is 64 bits
 * and 4 mod 8 when it is 32 bits) or NULL when the event is dropped;
 * every NULL is counted in the statistics. Must be paired with ringbuf_commit()
 * or ringbuf_discard() by the same writer, before its interrupted writer resumes. */
RINGBUF_API void *ringbuf_reserve(struct ringbuf *rb, unsigned cpu, size_t len)
	RINGBUF__NS_LABEL(ringbuf_reserve);
/** Commit the event reserved last on cpu (data = what ringbuf_reserve returned).
 * The outermost writer makes all nested events visible to readers. */
RINGBUF_API void ringbuf_commit(struct ringbuf *rb, unsigned cpu, void *data)
	RINGBUF__NS_LABEL(ringbuf_commit);
/** Drop the event reserved last on cpu: rolled back if nothing was reserved after
 * it, otherwise turned into padding. Not counted as committed. */
RINGBUF_API void ringbuf_discard(struct ringbuf *rb, unsigned cpu, void *data);
/** Reserve, copy, commit. Returns 0, RINGBUF_EINVAL (no buffer, cpu out of
 * range, NULL data or len 0) or RINGBUF_E2BIG for bad input, or RINGBUF_ENOSPC
 * when dropped. Every failure on a valid cpu is counted (rejected_events, or
 * the drop's own counter). */
RINGBUF_API int ringbuf_write(struct ringbuf *rb, unsigned cpu, const void *data, size_t len);
/** Largest payload one event can carry: page size - 24 with a 64-bit long (4072
 * with 4 KiB pages); with a 32-bit long page size - 20, or - 24 with
 * RINGBUF_F_ALIGN8 (the page header is 12 bytes there). */
RINGBUF_API size_t ringbuf_max_event_size(const struct ringbuf *rb);
/** Time stamp the buffer would give an event now (reads the clock), in the
 * unit readers report (ns for the TSC clock). */
RINGBUF_API uint64_t ringbuf_time_stamp(const struct ringbuf *rb);

/* -- consuming reader (any thread; serialized per CPU; lock-free against writers) -- */

/** Look at the next event of cpu without consuming it. Returns 1 and fills rec,
 * 0 when no committed event is available, or a negative error. */
RINGBUF_API int ringbuf_peek(struct ringbuf *rb, unsigned cpu, struct ringbuf_record *rec);
/** Return the next event of cpu and consume it. Returns 1, 0 (empty) or < 0.
 * rec->lost is the number of events lost just before this event (non-zero
 * only on the first event after a loss). */
RINGBUF_API int ringbuf_consume(struct ringbuf *rb, unsigned cpu, struct ringbuf_record *rec);
/** Flags for ringbuf_read_page(). */
enum ringbuf_read_flags {
	RINGBUF_READ_FULL = 1u << 0, /* only hand out a page the writers have left */
};
/** Read the unconsumed events of cpu's reader page as one kernel-format page
 * (struct buffer_data_page: u64 time_stamp; long commit; data[]) into page
 * (size >= ringbuf_page_size(rb)): the first record is a data event with delta 0
 * at the page's time stamp, trailing padding is left out of commit, commit
 * carries RB_MISSED_EVENTS (bit 31) and RB_MISSED_STORED (bit 30) with the
 * count stored after the data when events were lost before the page (events
 * are held back for the next page to make room; a page whose first event
 * fills it goes out without the flags and the count goes with the next page
 * that has room), the rest is zeroed -- what libtraceevent's kbuffer expects. The events are
 * consumed. Returns the data bytes (> 0), 0 when there is nothing (or, with
 * RINGBUF_READ_FULL, no complete page) to read, or a negative error. */
RINGBUF_API int ringbuf_read_page(struct ringbuf *rb, unsigned cpu, void *page, size_t size,
				  unsigned flags);
/** Zero-copy whole-page read: when cpu's reader page is complete (the writers
 * have left it), unread, and starts with an event, *page points at it inside
 * the buffer, set up as ringbuf_read_page() would set up a copy (missed-events
 * flag and count, trailing padding out of commit), and its events are
 * consumed. The page stays valid until the next reader call on cpu. Returns
 * the data bytes, 0 when nothing is there, or RINGBUF_EAGAIN when the page
 * cannot be lent (partly read, a writer still on it, no room for the count):
 * use ringbuf_read_page() then. */
RINGBUF_API int ringbuf_read_page_ref(struct ringbuf *rb, unsigned cpu, const void **page);
/** True if cpu has no committed, unconsumed event. */
RINGBUF_API bool ringbuf_empty_cpu(struct ringbuf *rb, unsigned cpu);

/** Pass as cpu to the merged calls below: all CPUs, in time-stamp order. */
#define RINGBUF_ALL_CPUS (~0u)

/** Consume the oldest event of all CPUs (the merged stream of the kernel's
 * trace_pipe). Returns 1, 0 (every CPU empty) or < 0. rec->cpu says where it
 * came from; rec->lost counts events lost on that CPU just before it. Stable
 * while writers write: a later event never has an older time stamp. When a
 * writer on another CPU is in the middle of an event that may turn out older
 * than the next pick, it returns RINGBUF_EAGAIN instead: retry (a writer that
 * stays in its event, preempted or dead, delays the merged stream until it
 * commits or its buffer is recovered). Needs one global monotonic clock (the
 * default and the TSC clock are; a user clock must be) and membarrier() (a
 * system call, once each time the reader catches up with the writers). One
 * merged consumer at a time. */
RINGBUF_API int ringbuf_consume_merged(struct ringbuf *rb, struct ringbuf_record *rec);

/* -- non-consuming iterator (any thread; like the kernel's `trace` file) -- */

struct ringbuf_iter;
/** Start walking cpu's committed events (or all CPUs merged, with
 * RINGBUF_ALL_CPUS) without consuming them. Allocates (RINGBUF_MALLOC) one page
 * per CPU to copy events into, so that an event handed out is never one being
 * overwritten. Recording may go on meanwhile. */
RINGBUF_API int ringbuf_iter_start(struct ringbuf *rb, unsigned cpu, struct ringbuf_iter **out);
/** Next event: 1 and rec filled (rec->data valid until the next iterator call),
 * 0 at the end of what was committed, < 0 on error. RINGBUF_ALL_CPUS: in
 * time-stamp order, never an event older than one handed out before; like
 * ringbuf_consume_merged it returns RINGBUF_EAGAIN while a writer on another
 * CPU is in an event that may be older than the next pick. When writers overwrote
 * events under the iterator it skips to the oldest event still there and sets
 * rec->lost to the number of events skipped and adds it to
 * ringbuf_iter_dropped(). Events a consumer took are not losses. (Exact, except
 * with a consumer swapping pages concurrently in overwrite mode: then a lower
 * bound.) RINGBUF_EAGAIN (one CPU; merged: that CPU has nothing now) while a
 * writer interrupted mid head push has not counted its loss yet: call again. */
RINGBUF_API int ringbuf_iter_next(struct ringbuf_iter *it, struct ringbuf_record *rec);
/** Back to the oldest unread event. */
RINGBUF_API void ringbuf_iter_reset(struct ringbuf_iter *it);
/** Events the iterator had to skip because writers overwrote them (the sum of
 * the rec->lost it reported). */
RINGBUF_API uint64_t ringbuf_iter_dropped(const struct ringbuf_iter *it);
RINGBUF_API void ringbuf_iter_finish(struct ringbuf_iter *it);
/** Flags for ringbuf_iter_init_in(). */
enum ringbuf_iter_flags {
	/* take cpu's reader lock with one try: RINGBUF_EBUSY from
	 * ringbuf_iter_next at once while a consumer (or another iterator
	 * call) holds it, instead of waiting for it (up to about 0.5 s) */
	RINGBUF_ITER_NOWAIT = 1u << 0,
};
/** Bytes ringbuf_iter_init_in() needs for rb and cpu (or RINGBUF_ALL_CPUS);
 * 0 for bad arguments. */
RINGBUF_API size_t ringbuf_iter_size(const struct ringbuf *rb, unsigned cpu);
/** ringbuf_iter_start() in caller memory (size >= ringbuf_iter_size(),
 * 8-byte aligned): no allocation, so an iterator prepared this way may be
 * started and walked inside a signal handler (async-signal-safe with
 * RINGBUF_ITER_NOWAIT: the reader lock is never waited for). flags: enum
 * ringbuf_iter_flags. ringbuf_iter_finish() on it frees nothing. Returns 0,
 * RINGBUF_EINVAL or RINGBUF_ENOMEM (mem too small). */
RINGBUF_API int ringbuf_iter_init_in(void *mem, size_t size, struct ringbuf *rb, unsigned cpu,
				     unsigned flags, struct ringbuf_iter **out);

/* -- waiting (blocks: never from a signal handler) -- */

/** Block until cpu (or any CPU with RINGBUF_ALL_CPUS) has an event to read,
 * or, when full_pct > 0, until that many percent of its ring pages hold unread
 * data; at most timeout_ms milliseconds (< 0: no limit). Writers wake the
 * reader from any context, signal handlers included (a futex wake); when
 * nobody waits a writer pays one load, and while waiters wait for one CPU
 * only, the other CPUs' writers do not wake them. Where membarrier() is not
 * available (or past 16383 waiters of one buffer at once) the reader looks
 * again every 10 ms (a wake may be missed then). Returns 1
 * (ready), 0 (timed out, or ringbuf_wake_waiters) or < 0. */
RINGBUF_API int ringbuf_wait(struct ringbuf *rb, unsigned cpu, int full_pct, int timeout_ms);
/** Wake every waiter now (for example to make a reader thread quit). */
RINGBUF_API void ringbuf_wake_waiters(struct ringbuf *rb);

/* -- control (any thread) -- */

RINGBUF_API void ringbuf_record_on(struct ringbuf *rb);  /* clear the sticky off bit */
RINGBUF_API void ringbuf_record_off(struct ringbuf *rb); /* set the sticky off bit */
RINGBUF_API bool ringbuf_record_is_on(const struct ringbuf *rb);
RINGBUF_API void ringbuf_record_disable(struct ringbuf *rb);   /* nesting counter, +1 */
RINGBUF_API void ringbuf_record_enable(struct ringbuf *rb);    /* nesting counter, -1 */
RINGBUF_API int ringbuf_record_disable_cpu(struct ringbuf *rb, unsigned cpu);
RINGBUF_API int ringbuf_record_enable_cpu(struct ringbuf *rb, unsigned cpu);
/** Empty cpu's buffer and zero its statistics, while writers (and readers)
 * may run: events in flight when it starts are thrown away with the rest,
 * writers that come meanwhile are refused (counted in disabled_events), a
 * thread's claim (RINGBUF_CPU_THREAD) or a writer's hold (RINGBUF_CPU_CURRENT)
 * on the buffer stays. Waits (up to about one second) for writers in flight on
 * that CPU to leave; RINGBUF_EBUSY if they do not (for example when called
 * from a signal handler that interrupted a writer, or a reader, of that CPU).
 * Needs membarrier(2) (Linux 4.3; MEMBARRIER_CMD_GLOBAL for a shared file
 * block, whose writers may be in other processes): RINGBUF_ESYS without it.
 * On an error nothing changed. Not async-signal-safe in general (it may wait). */
RINGBUF_API int ringbuf_reset_cpu(struct ringbuf *rb, unsigned cpu);
/** ringbuf_reset_cpu for each CPU in turn; on an error the CPUs before the
 * one that failed are reset, the others unchanged. */
RINGBUF_API int ringbuf_reset(struct ringbuf *rb);
/** Wait until every writer that was inside an event when the call began (on
 * any CPU buffer of rb, in any process for a shared file) has left its
 * outermost commit or discard: its events, and those of the writers nested
 * in it, are then committed and visible to this thread's reads. Nothing is
 * reset or disabled; writers that start later are not waited for (one that
 * enters while the call takes its first look may be). timeout_ms bounds the
 * wait (0: look once; < 0: no limit). Returns 0, RINGBUF_EBUSY when writers
 * were still inside when the time ran out (a writer stopped or killed mid
 * event; or the call was made from a signal handler that interrupted a
 * writer of rb), RINGBUF_EINVAL. For an export at exit: ringbuf_record_off()
 * (or disable), ringbuf_quiesce(), then read. It does not make the buffer
 * safe to destroy: a writer that saw its event committed may still be
 * returning from the call, and refused writers still touch the buffer. Uses
 * membarrier(2) like ringbuf_reset_cpu (a process-local fence where it is
 * missing: then a writer that entered just before the call may be missed).
 * Blocks: not async-signal-safe in general. */
RINGBUF_API int ringbuf_quiesce(struct ringbuf *rb, int timeout_ms);
/** Switch between RINGBUF_MODE_OVERWRITE and RINGBUF_MODE_PRODUCER_CONSUMER. */
RINGBUF_API int ringbuf_set_mode(struct ringbuf *rb, int mode);
RINGBUF_API int ringbuf_get_mode(const struct ringbuf *rb);
/** Geometry. */
RINGBUF_API unsigned ringbuf_ncpu(const struct ringbuf *rb);
RINGBUF_API size_t ringbuf_page_size(const struct ringbuf *rb);
RINGBUF_API unsigned ringbuf_nr_pages(const struct ringbuf *rb); /* ring pages per CPU */

/* -- statistics (any thread; a consistent-enough snapshot while writers run,
 *    exact when they are quiescent) -- */

RINGBUF_API int ringbuf_stats_cpu(struct ringbuf *rb, unsigned cpu, struct ringbuf_stats *st);
/** Sum over all CPUs (oldest_event_ts is the minimum). */
RINGBUF_API int ringbuf_stats(struct ringbuf *rb, struct ringbuf_stats *st);

/* ==== >>internal ======================================================== */
/* For tests and tools only; layout and names may change. */

/** Page roles for ringbuf__walk_pages(). */
enum ringbuf__page_role { RINGBUF__PAGE_READER = 1, RINGBUF__PAGE_RING = 2 };
/** Visit cpu's pages: first the reader page, then the ring pages from the head
 * page to the tail page. page points at a kernel-format buffer_data_page of
 * ringbuf_page_size() bytes (u64 time_stamp; long commit; data[]). Only call when
 * no writer or reader runs on cpu. A non-zero return from fn stops the walk
 * and is returned. */
typedef int (*ringbuf__page_fn)(const void *page, size_t page_size, int role, void *ctx);
RINGBUF_API int ringbuf__walk_pages(struct ringbuf *rb, unsigned cpu, ringbuf__page_fn fn,
				    void *ctx);

/** Called on an internal inconsistency (recording is then disabled) and, with
 * RINGBUF_DEBUG, on a contract violation. Must be async-signal-safe.
 * NULL restores the default (silent). Process-wide. */
typedef void (*ringbuf_warn_fn)(const char *what, unsigned cpu, void *ctx);
RINGBUF_API void ringbuf_set_warn_hook(ringbuf_warn_fn fn, void *ctx);

/* ==== >>inline ========================================================== *
 * The block layout and the common case of reserve and commit, compiled into
 * the caller: an event of the outermost writer on the current page costs no
 * call into the library. Everything else (nesting, a page crossing, a delta
 * that needs an extend, mapped writer contexts, bad arguments) calls the
 * out-of-line path in >>writer, which runs this same code for depth 1, so the
 * tests exercise it either way. Internal: names with a double underscore may
 * change; use >>api. C++ compiles the same code through the >>cxx shim.
 * RINGBUF_NO_INLINE makes ringbuf_reserve / ringbuf_commit plain calls. */
#if !defined(RINGBUF__INLINE_INCLUDED)
#define RINGBUF__INLINE_INCLUDED 1
#include <string.h>

/* The write path's helpers must be inlined whatever the compiler's size
 * heuristics say (they are big because they are complete, not because they
 * are slow); RINGBUF__NOINLINE keeps a cold path's register saves out of
 * its caller. */
#if defined(__GNUC__) || defined(__clang__)
#define RINGBUF__INLINE static inline __attribute__((always_inline))
#define RINGBUF__NOINLINE static __attribute__((noinline))
#else
#define RINGBUF__INLINE static inline
#define RINGBUF__NOINLINE static
#endif

/* ---- constants ---------------------------------------------------------- */

#define RINGBUF__MAGIC 0x52425546u /* "RBUF" */
#define RINGBUF__BYTE_ORDER 0x01020304u
#define RINGBUF__LAYOUT_VERSION 6u /* 6: the push mark names its page (HEAD PUSH ACCOUNTING in >>design),
				    * the CPU struct is 1024 bytes */
/* the bytes at the start of a file or memfd block that each process maps
 * privately (the header and a pad): a whole number of pages on 4, 16 and
 * 64 KiB page kernels; the shared part of the header follows */
#define RINGBUF__HDR_PRIV 65536u

#define RINGBUF__TYPE_PADDING 29u
#define RINGBUF__TYPE_TIME_EXTEND 30u
#define RINGBUF__TYPE_TIME_STAMP 31u
#define RINGBUF__TYPE_DATA_MAX 28u
#define RINGBUF__TS_SHIFT 27
#define RINGBUF__TS_MASK ((1ull << RINGBUF__TS_SHIFT) - 1)
#define RINGBUF__TS_BITS 59
#define RINGBUF__TS_VALUE_MASK ((1ull << RINGBUF__TS_BITS) - 1)
#define RINGBUF__MAX_SMALL_DATA 112u /* 28 * 4 */

/* The event header word, the kernel's `u32 type_len:5, time_delta:27` stored
 * in the CPU's byte order. Compilers allocate bitfields from the least
 * significant bit on little-endian targets and from the most significant one
 * on big-endian targets, so type_len is the low 5 bits of the word on x86 or
 * arm64 and the top 5 bits on s390x (libtraceevent reads `w >> 27` there). */
#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define RINGBUF__BIG_ENDIAN 1
#define RINGBUF__HDR_WORD(type, delta) (((uint32_t)(type) << 27) | ((uint32_t)(delta) & 0x7ffffffu))
#define RINGBUF__HDR_TYPE(w) ((uint32_t)(w) >> 27)
#define RINGBUF__HDR_DELTA(w) ((uint32_t)(w) & 0x7ffffffu)
#elif defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define RINGBUF__HDR_WORD(type, delta) ((uint32_t)(type) | ((uint32_t)(delta) << 5))
#define RINGBUF__HDR_TYPE(w) ((uint32_t)(w) & 31u)
#define RINGBUF__HDR_DELTA(w) ((uint32_t)(w) >> 5)
#else
#error "ringbuf.h: unknown byte order (__BYTE_ORDER__ is not defined or is mixed)"
#endif
#define RINGBUF__STAMP_LEN 8u

#define RINGBUF__COMMIT_MASK ((1ul << 27) - 1)
#define RINGBUF__MISSED_EVENTS (1ul << 31)
#define RINGBUF__MISSED_STORED (1ul << 30)

/* The page descriptor words (link, write, entries) are 64 bits on every
 * platform, so that their counters cannot wrap while a reader or an iterator
 * is preempted between two loads (with 32-bit words a 32-bit build had 10 tag
 * bits and 11 count bits: 1024 link changes or 2048 laps could pass unseen).
 * C11 64-bit atomics are lock-free on i686 (cmpxchg8b) and armv7
 * (ldrexd/strexd); the block's counters needed that already. */
#if defined(ATOMIC_LLONG_LOCK_FREE) && ATOMIC_LLONG_LOCK_FREE != 2
#error "ringbuf.h needs lock-free 64-bit atomics (ATOMIC_LLONG_LOCK_FREE == 2)"
#endif

/* bpage.write: low bits index, above them the update count (kernel
 * RB_WRITE_MASK): 43 count bits. */
#define RINGBUF__WRITE_BITS 21
#define RINGBUF__WRITE_MASK (((uint64_t)1 << RINGBUF__WRITE_BITS) - 1)
#define RINGBUF__WRITE_INTCNT ((uint64_t)1 << RINGBUF__WRITE_BITS)

/* Links: tag (32 bits) | index (30 bits) << 2 | flags. */
#define RINGBUF__F_HEADER ((uint64_t)1)
#define RINGBUF__F_UPDATE ((uint64_t)2)
#define RINGBUF__F_MASK ((uint64_t)3)
#define RINGBUF__IDX_BITS 30
#define RINGBUF__IDX_MASK (((uint64_t)1 << RINGBUF__IDX_BITS) - 1)
#define RINGBUF__TAG_SHIFT (2 + RINGBUF__IDX_BITS)
#define RINGBUF__TAG_ONE ((uint64_t)1 << RINGBUF__TAG_SHIFT)

#define RINGBUF__OFF_BIT (1u << 20) /* record_off sticky bit (kernel RB_BUFFER_OFF) */
#define RINGBUF__STAMP_INVALID UINT64_MAX
#define RINGBUF__MAX_LOOPS 1000
#define RINGBUF__CACHELINE 64
#define RINGBUF__MIN_PAGE 64u
#define RINGBUF__MAX_PAGE (1u << 20)

/* ---- layouts ------------------------------------------------------------ */

/* The kernel's struct buffer_data_page. */
/* C++ has no flexible array members: GCC and Clang accept them as an
 * extension, with the pedantic warning silenced here */
#ifdef __cplusplus
#define RINGBUF__FLEX_BEGIN _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wpedantic\"")
#define RINGBUF__FLEX_END _Pragma("GCC diagnostic pop")
#else
#define RINGBUF__FLEX_BEGIN
#define RINGBUF__FLEX_END
#endif

RINGBUF__FLEX_BEGIN
struct ringbuf__dpage {
	_Atomic(uint64_t) time_stamp;
	_Atomic(long) commit;
	unsigned char data[];
};
RINGBUF__FLEX_END
#define RINGBUF__HDR_SIZE (offsetof(struct ringbuf__dpage, data))

/* Bytes of data[] that records may use (bsize). The header is 16 bytes with a
 * 64-bit long and 12 with a 32-bit one (the kernel's layout, which kbuffer
 * assumes), so on 32-bit data[] starts at 4 mod 8. RINGBUF_F_ALIGN8 keeps
 * every record a multiple of 8 bytes from data[0]: the area is rounded down
 * to a multiple of 8 (the last 4 bytes of a page stay unused on 32-bit), or
 * the padding at a page end would be 4 mod 8 and the largest event would not
 * fit. Payloads are then 8-aligned relative to data[]: 8-aligned in memory
 * with a 64-bit long, 4 mod 8 with a 32-bit one (see RINGBUF_F_ALIGN8). */
static inline uint32_t ringbuf__data_size(uint32_t page_size, uint32_t flags)
{
	uint32_t n = page_size - (uint32_t)RINGBUF__HDR_SIZE;
	return (flags & 1u /* RINGBUF_F_ALIGN8 */) ? n & ~7u : n;
}

/* The kernel's struct buffer_page, reduced to what this design needs. */
struct ringbuf__bpage {
	_Atomic(uint64_t) next;  /* link: tag | index << 2 | flags */
	_Atomic(uint64_t) write; /* reserve index (low bits) | update count */
	/* data events reserved on the page in this lap, minus those discarded
	 * (low bits) | update count, as in write (kernel bpage->entries): what a
	 * head push adds to overrun without parsing the page */
	_Atomic(uint64_t) entries;
	_Atomic(uint64_t) drops;      /* CPU drop total when the tail entered the page */
	uint32_t prev;                /* index of the previous page; reader-owned */
	/* 1 once a writer made the data page present ([BACKED] in >>writer;
	 * a block of an earlier version has 0 here: checked again, no harm) */
	_Atomic(uint32_t) backed;
};

/* A reservation in flight, per nesting depth (owner only). */
struct ringbuf__slot {
	/* page, off, event: relaxed atomics, as every slot field: a thread that
	 * takes over a dead owner's buffer (or claims a buffer an exited thread
	 * left) writes them after the dead thread did, ordered by the kernel,
	 * not by C11 (THREAD FALLBACK in >>contexts, [TAKEOVER-HB]) */
	_Atomic(uint32_t) page; /* page index */
	_Atomic(uint32_t) off;  /* offset of the reservation in data[] (extend/stamp included) */
	/* total bytes reserved; 0: none in flight; RINGBUF__SLOT_GONE set: a
	 * nested writer reserved where the slot points (ringbuf__slots_mark),
	 * with RINGBUF__SLOT_PRE when it found len 0 (before the owner's P3) */
	_Atomic(uint32_t) len;
	_Atomic(uint32_t) event; /* offset of the data event's header */
	/* entries_d[depth - 1] (its low 32 bits) as the reservation was
	 * described (P1): one more once the event is counted committed, which
	 * comes before len drops to 0 ([SLOT-DONE]) */
	_Atomic(uint32_t) counted;
	/* [PUSH-MARK] this depth's last head push: its page T (whose link it
	 * claims), T.next as its claim leaves it (H1: HEADER -> UPDATE, tag
	 * and all), and the depth's overrun_d and pages_lost_d once that push
	 * is counted */
	_Atomic(uint32_t) push_page;
	_Atomic(uint64_t) push_link;
	_Atomic(uint64_t) push_overrun;
	_Atomic(uint64_t) push_pages;
};
#define RINGBUF__SLOT_GONE 0x80000000u
/* with GONE: the mark was set where len was 0, so any length beside it is
 * a P3 that failed on the mark (ringbuf__slot_claim), never bytes in flight:
 * a rollback of the nested reservation clears the slot to 0, not to that
 * length (ringbuf_discard) */
#define RINGBUF__SLOT_PRE 0x40000000u

struct ringbuf__cpu {
	/* -- writer state: owner only (plus readers of statistics) -- */
	_Alignas(RINGBUF__CACHELINE) _Atomic(uint32_t) tail_page;
	_Atomic(uint32_t) commit_page;
	uint64_t bp_off;              /* this CPU's page descriptors, from the block start */
	uint64_t dp_off;              /* this CPU's data pages, from the block start */
	_Atomic(uint32_t) committing; /* nesting depth of writers in flight */
	_Atomic(uint32_t) disabled;   /* per-CPU disable counter (control writes, owner reads) */
	uint32_t dbg_owner;           /* RINGBUF_DEBUG: thread of the outermost writer */
	/* mapped modes: 0 free, else token << 32 | flags | tid (>>contexts);
	 * CAS acquire by the taker, store release by the owner */
	_Atomic(uint64_t) owner;
	/* writers started and left, for ringbuf__end_commit (any change) and
	 * ringbuf_quiesce: + RINGBUF__COMMITS_NESTED per nested entry, + 1
	 * per outermost exit (the low 32 bits count them) [Q-X] */
	_Atomic(uint64_t) commits;
	_Atomic(uint64_t) inflight_ts;/* [M1] set by the outermost writer as it leaves with
				       * everything reserved committed: no event reserved
				       * later is older */
	_Atomic(uint64_t) before_stamp;
	_Atomic(uint64_t) write_stamp;
	_Atomic(uint64_t) entries_d[RINGBUF_MAX_NEST]; /* committed events by depth */
	struct ringbuf__slot slots[RINGBUF_MAX_NEST];

	/* -- slow-path counters: any writer of this CPU, read by anyone -- */
	/* events and pages overwritten by the head pushes whose owner ran at
	 * depth i + 1: each written by one writer at a time, as entries_d, so
	 * that recovery can tell whether a push was counted ([PUSH-MARK]);
	 * overrun and pages_lost are the sums (ringbuf__overrun) */
	_Alignas(RINGBUF__CACHELINE) _Atomic(uint64_t) overrun_d[RINGBUF_MAX_NEST];
	_Atomic(uint64_t) pages_lost_d[RINGBUF_MAX_NEST];
	_Atomic(uint64_t) commit_overrun;
	_Atomic(uint64_t) dropped_events;
	_Atomic(uint64_t) disabled_events;
	_Atomic(uint64_t) rejected_events;
	_Atomic(uint64_t) nest_overflow;
	_Atomic(uint64_t) discarded;
	_Atomic(uint64_t) pages_touched;
	_Atomic(uint64_t) wake_seen;  /* pages_touched at the last watermark check (writers) */

	/* -- reader state: reader (under reader_lock) -- */
	_Alignas(RINGBUF__CACHELINE) _Atomic(uint32_t) reader_page;
	_Atomic(uint64_t) reader_lock;  /* 0 or the holder's id (ringbuf__reader_lock) */
	uint32_t head_hint;             /* where to start looking for the head */
	uint32_t read;                  /* consumed bytes of the reader page's data[] */
	uint64_t read_stamp;            /* running time stamp at `read` */
	uint64_t last_overrun;          /* overrun seen at the last swap */
	uint64_t last_drops;            /* drop total reported so far */
	uint64_t lost_pending;          /* lost count for the next event returned */
	_Atomic(uint64_t) read_events;
	_Atomic(uint64_t) pages_read;
	_Atomic(uint32_t) corrupt;      /* set once by RINGBUF__WARN */
	uint32_t index;                 /* this CPU's index (checked by ringbuf_open_file) */
	/* [RESET-GEN] resets of this CPU: + 1 last in R5 (release), loaded by
	 * the iterator (relaxed, under the reader lock) where it takes an
	 * overrun base and where it counts a loss (ringbuf__iter_lost). Another
	 * process's garbage here costs a base counted from 0 (HOSTILE MEMORY:
	 * compared for equality only) */
	_Atomic(uint64_t) reset_gen;
#if RINGBUF_MAX_NEST == 8
	/* with the default RINGBUF_MAX_NEST, up to 1024 bytes: a power of two,
	 * so that a CPU struct's address from an index in a variable is a
	 * shift, not a multiply by 896 (ringbuf__cpu: 12 instructions less per
	 * traced call in ringbuf_ftrace.h's hooks); layout version 6. Another
	 * RINGBUF_MAX_NEST (a layout of its own) keeps its natural size. */
	_Alignas(RINGBUF__CACHELINE) unsigned char spare_[2 * RINGBUF__CACHELINE];
#endif
};

/* The shared part of the header: the words every process that maps the
 * block reads and writes (HOSTILE MEMORY: another process's included), at
 * right before the CPU structs (ringbuf__sh) */
struct ringbuf__shdr {
	_Alignas(RINGBUF__CACHELINE) _Atomic(uint32_t) record_disabled; /* counter | OFF bit */
	_Atomic(int) mode;
	/* waiting: read by every writer (one load at the outermost commit),
	 * written only when a reader starts, re-arms or stops waiting, and by
	 * the writer that wakes (see WAITING in >>design) */
	_Atomic(uint64_t) waiters;  /* lowest watermark << 32 | armed CPU << 16 | count << 2 | WAIT_FULL | WAIT_DATA */
	_Atomic(uint32_t) wait_seq; /* the futex word: bumped by each wake */
	_Atomic(uint32_t) wait_kick;  /* bumped by ringbuf_wake_waiters() */
	_Atomic(uint32_t) wait_unreg; /* shared block: an opener could not register for
				       * MEMBARRIER_CMD_GLOBAL_EXPEDITED */
	_Atomic(uint64_t) unmapped;   /* mapped-mode writes dropped: no buffer */
	_Atomic(uint32_t) owner_seq;  /* mapped modes: the last owner token drawn */
	_Atomic(uint32_t) owner_flags;/* RINGBUF__OWNF_*: sticky */
	uint64_t pidns;               /* PID namespace of the creator (0: unknown) */
	/* RINGBUF_CPU_THREAD (>>contexts, THREAD FALLBACK): bumped (release)
	 * after a claim is given back; a hint for threads without a buffer */
	_Atomic(uint32_t) release_gen;
	_Atomic(uint32_t) thread_shared; /* ringbuf_thread_shared(): buffers kept out of claims */
};

struct ringbuf {
	/* PRIVATE HEADER (>>design): the geometry and the process-local fields.
	 * In a block that other processes map (a file or memfd) each process's
	 * private copy: written by the creator before it remaps it, validated
	 * by an opener after its copy is made; the shared part (struct
	 * ringbuf__shdr) at RINGBUF__HDR_PRIV, the pad before it never touched */
	uint32_t magic;
	uint32_t version;
	uint32_t byte_order; /* RINGBUF__BYTE_ORDER as the writer's CPU stores it */
	uint32_t long_size;  /* sizeof(long): the data page commit field */
	char clock_name[16];
	uint64_t user_off, user_size;
	uint32_t ncpu;
	uint32_t nr_pages;  /* ring pages per CPU (the reader page is one more) */
	uint32_t page_size;
	uint32_t bsize;     /* data bytes per page: page_size - header */
	uint32_t flags;     /* enum ringbuf_flags */
	uint32_t ts_mode;
	uint32_t max_event; /* largest payload */
	uint32_t page_shift;/* log2(page_size) */
	uint32_t owned;     /* 1: allocated by ringbuf_create (RINGBUF_MALLOC), 2: a file
			     * or memfd mapping, 3: ringbuf_create's anonymous mapping,
			     * 4: a private (copy-on-write) view of a file, open without RDWR */
	uint32_t clock_kind;/* RINGBUF__CLK_*: how writers read the clock */
	uint32_t tsc_shift; /* TSC clock, read time: ns = tsc_ns0 + ((ts - tsc0) * tsc_mult >> tsc_shift) */
	uint64_t tsc_mult;
	uint64_t tsc0, tsc_ns0;
	uint64_t total_size;
	uint64_t cpu_off;   /* offsets from the start of the block */
	uint64_t bpage_off;
	uint64_t data_off;
	ringbuf_clock_fn clock; /* process-local: re-set when a block is re-opened */
	void *clock_ctx;
	void *mem;              /* what RINGBUF_MALLOC returned, or the mapping */
	uint64_t map_len;       /* owned 2, 3: length of the mapping to unmap */
	uint64_t gen;           /* this creation, for per-thread state: unique across processes,
				 * kept by an RDWR open (the creator's; each process has its own copy) */
	uint32_t shared;        /* process-local: mapped MAP_SHARED (other processes write) */
	uint32_t rseq;          /* process-local: nonzero: buffers 0 .. cpu_bufs-1 are taken
				 * by restartable sequence (PER-CPU BLOCKS in >>contexts);
				 * its value is __rseq_offset (ringbuf__rseq_cpu_at) */
	uint32_t percpu;        /* process-local: RINGBUF_F_CPU_CURRENT (ringbuf_create) */
	uint32_t cpu_bufs;      /* process-local: RINGBUF_CPU_CURRENT on CPU x < cpu_bufs
				 * takes buffer x first (ncpu; ncpu - shared when percpu) */
	uint32_t inline_max;    /* process-local: the largest payload the inline path
				 * takes (ringbuf__inline_max: max_event for packed,
				 * delta-stamped events; 0, all out of line, otherwise) */
	uint32_t pad_;
	uint64_t tclaim_key;    /* process-local: this handle's key << 32 ([TCLAIM]; 0: none) */
};
/* the private header's bytes: all of them in the first 4 KiB (the smallest
 * page), so that one store copies them all (PRIVATE HEADER) */
#define RINGBUF__HDR_USED sizeof(struct ringbuf)
_Static_assert(sizeof(struct ringbuf) <= 4096 && RINGBUF__HDR_PRIV % RINGBUF__CACHELINE == 0,
	       "private header: its fields in its first page");

/* The shared part: right before the CPU structs (cpu_off, which a writer
 * loads anyway to find its CPU's: no further load on the write path). At
 * RINGBUF__HDR_PRIV in a file or memfd block, right behind struct ringbuf
 * elsewhere (ringbuf__layout). */
static inline struct ringbuf__shdr *ringbuf__sh(const struct ringbuf *rb)
{
	return (struct ringbuf__shdr *)(void *)((char *)rb + rb->cpu_off) - 1;
}
/* cpu_off of a block laid out to be shared (PRIVATE HEADER) */
#define RINGBUF__CPU_OFF_SHARED (RINGBUF__HDR_PRIV + sizeof(struct ringbuf__shdr))

/* ---- small helpers ------------------------------------------------------ */

#define RINGBUF__BARRIER() atomic_signal_fence(memory_order_seq_cst)
#if defined(__GNUC__) || defined(__clang__)
#define RINGBUF__LIKELY(x) __builtin_expect(!!(x), 1)
#define RINGBUF__UNLIKELY(x) __builtin_expect(!!(x), 0)
/* 1 when the compiler knows x's value here (a constant argument of an
 * inlined call), else 0; never evaluates x. Linux only: the model checker
 * (verify/, built without __linux__) cannot interpret llvm.is.constant. */
#if defined(__linux__)
#define RINGBUF__IS_CONST(x) __builtin_constant_p(x)
/* x computed here, into a register: the compiler cannot sink its
 * computation past what follows (the clock's call; no memory involved).
 * Not for the model checker either (an asm it does not interpret). */
#define RINGBUF__MATERIALIZE(x) __asm__("" : "+r"(x))
#else
#define RINGBUF__IS_CONST(x) 0
#define RINGBUF__MATERIALIZE(x) ((void)0)
#endif
#else
#define RINGBUF__LIKELY(x) (x)
#define RINGBUF__UNLIKELY(x) (x)
#define RINGBUF__IS_CONST(x) 0
#define RINGBUF__MATERIALIZE(x) ((void)0)
#endif
#define RINGBUF__LOAD(p) atomic_load_explicit((p), memory_order_relaxed)
#define RINGBUF__STORE(p, v) atomic_store_explicit((p), (v), memory_order_relaxed)
#define RINGBUF__ADD(p, v) ((void)atomic_fetch_add_explicit((p), (v), memory_order_relaxed))

#ifdef RINGBUF_TESTING
/* Test points: a test installs a hook that may run a nested writer (as a signal
 * handler would) at any labelled step. Compiled out unless RINGBUF_TESTING. */
enum ringbuf__tp {
	RINGBUF__TP_A_TIME = 1,     /* A: tail, write index and stamps read, clock read */
	RINGBUF__TP_B_BEFORE,       /* B: before_stamp written */
	RINGBUF__TP_C_RESERVED,     /* C: reservation CAS succeeded */
	RINGBUF__TP_D_WRITE_STAMP,  /* D: write_stamp written, event not filled yet */
	RINGBUF__TP_CROSS_CLAIMED,  /* crossing: page end claimed, not yet padded */
	RINGBUF__TP_CROSS_PADDED,   /* crossing: padding written, write not restored */
	RINGBUF__TP_MOVE_TAIL,      /* move_tail entered */
	RINGBUF__TP_H1_COUNTED,     /* push head: events of the head page counted */
	RINGBUF__TP_H1_UPDATE,      /* push head: HEADER -> UPDATE done */
	RINGBUF__TP_H2_NEW_HEAD,    /* push head: new HEADER set */
	RINGBUF__TP_H3_DONE,        /* push head: UPDATE cleared */
	RINGBUF__TP_U1_INTCNT,      /* tail update: count added to the next page */
	RINGBUF__TP_U2_RESET,       /* tail update: next page write reset */
	RINGBUF__TP_U3_MOVED,       /* tail update: tail page moved */
	RINGBUF__TP_COMMIT_PAGE,    /* commit walk: one page committed */
	RINGBUF__TP_COMMIT_END,     /* end_commit: before committing drops */
	RINGBUF__TP_DISCARD_INVAL,  /* discard: before_stamp invalidated */
	RINGBUF__TP_READER_S2,      /* reader swap: prepared, before the CAS */
	RINGBUF__TP_MOVE_TAIL_NEXT, /* move_tail: T.next loaded, commit/reader page not yet */
	RINGBUF__TP_DROP_DECIDED,   /* move_tail: drop decided, not yet counted */
	RINGBUF__TP_H1_CLAIMED,     /* push head: HEADER -> UPDATE done, overrun not yet added */
	RINGBUF__TP_SLOT_CHECKED,   /* slot described and checked against the page, len not set */
	RINGBUF__TP_COUNTED,        /* commit: counted committed (entries_d), slot len not cleared yet */
	RINGBUF__TP_H1_OVERRUN,     /* push head: overrun counted, pages_lost not yet */
	RINGBUF__TP_FAST_ENTERED,   /* the outermost writer entered (its slot's len 0), A not begun */
	RINGBUF__TP_FAST_CLOCK,     /* the fast path's clock read ([CLOCK-FIRST]), A not begun */
	RINGBUF__TP_C_CLAIMED,      /* C: reservation CAS succeeded, interrupted writers' slots not marked yet */
	RINGBUF__TP_DISCARD_UNMARKED, /* discard: marks taken off the slots at our place, write not rolled back */
	RINGBUF__TP_DISCARD_ROLLED, /* discard: write index rolled back, our slot's len not cleared yet */
	RINGBUF__TP_ENTERING,       /* entry: the slot's len 0 stored, committing not yet (a writer here is at the same depth) */
	RINGBUF__TP_P1_PAGE,        /* P1: the slot's page stored, its offset not yet */
	RINGBUF__TP_COUNT,
	/* outside the range the sweeps over write steps cover (a hook that
	 * indexes an array by point checks point < RINGBUF__TP_COUNT). No
	 * point has a value of its own: the compiler numbers them all, so no
	 * two are equal (a hook armed for one never fires at another) */
	RINGBUF__TP_MERGED_PEEKED, /* merged readers: every CPU peeked, the
					  * oldest head picked (cpu = the pick) */
	/* a write step only a nested writer reaches (the sweeps over the
	 * steps one writer passes skip it; test_interleave cuts in there) */
	RINGBUF__TP_H2_HELPED, /* push head, a helper: the owner's count stored ([PUSH-HELP]), its H2 not yet */
	RINGBUF__TP_SLOT_REFUSED, /* [SLOT] P3 failed: len was not 0 (a nested writer marked the slot GONE) */
	/* RINGBUF_CPU_THREAD fallback (>>contexts), cpu = the shared buffer */
	RINGBUF__TP_SHARED_TAKEN, /* owner word taken (F4b), before G3 */
	RINGBUF__TP_FALLBACK_UNCLAIMED, /* F2/F3 found no claim, F4a not yet */
	RINGBUF__TP_PERCPU_SCAN,    /* [PC-SCAN] PC1 done: SCANNING, the shared buffer held */
	RINGBUF__TP_PERCPU_SCANNED, /* PC3's give-back done, SCANNING still set */
	RINGBUF__TP_SHARED_HELD,        /* G3 done and the event reserved */
	RINGBUF__TP_TAKEOVER,           /* a dead owner's word taken over, buffer not yet repaired */
	/* RINGBUF_CPU_CURRENT's inline claim (INLINE in >>contexts), cpu = the buffer */
	RINGBUF__TP_CURRENT_TAKEN, /* inline G2 done (the word is ours), the reserve not yet */
	RINGBUF__TP_CURRENT_ENTERED,     /* the writer in (committing 1), J1 not yet */
	RINGBUF__TP_CURRENT_HELD,        /* J1 done ([TCUR] BUSY), the event not reserved yet */
	RINGBUF__TP_CURRENT_RESERVED,    /* the event reserved, the commit not yet */
	RINGBUF__TP_CURRENT_RELEASED,    /* the inline commit's J0 done, its commit not yet */
	RINGBUF__TP_CURRENT_UNHELD,      /* the inline commit done, G5 not yet */
	RINGBUF__TP_CURRENT_UNDONE,      /* inline reserve failed (J0 done, the writer out), G5 not yet */
	/* [TCUR] in the out-of-line G3 .. G4 (ringbuf__held_reserve, _end) */
	RINGBUF__TP_TCUR_OUT,            /* the slot's OUT done, its me and G3 not yet */
	RINGBUF__TP_TCUR_G4,             /* G4 done, the slot's ARM not yet */
	/* a thread's new per-buffer entry (ringbuf__tctx_get, T0-T3), cpu 0 */
	RINGBUF__TP_TCTX_MISSED,   /* T0: the lookup found none, `making` not yet set */
	RINGBUF__TP_TCTX_CHOSEN,         /* T1: a free entry chosen, not yet taken */
	RINGBUF__TP_TCTX_CLEARED,        /* T2: taken and cleared, our gen not yet in it */
	/* the thread's claim word ([TCLAIM]), cpu 0 */
	RINGBUF__TP_TCLAIM_FOUND, /* the slow path found or made the claim, K1 not yet */
	RINGBUF__TP_TCLAIM_SET,          /* K1 done, the reserve not yet */
	RINGBUF__TP_TCLAIM_RELEASED,     /* release: the entry's claim 0, K0 not yet */
	/* ringbuf_wait's steps (outside the count as well) */
	RINGBUF__TP_WAIT_REGISTER, /* before the waiter registers */
	RINGBUF__TP_WAIT_ARMED,     /* wake armed, before it looks for data */
	RINGBUF__TP_WAIT_SLEEP,     /* nothing found, before it sleeps */
	/* ringbuf_quiesce (outside the count as well) */
	/* the reader's page swap (READER SWAP in >>design; outside the count
	 * as well: sweeps over write steps skip them) */
	RINGBUF__TP_READER_S1,     /* S1 done (head found), nothing changed yet */
	RINGBUF__TP_READER_S2_PREPARED,  /* S2: old reader page prepared, reader_page not yet H */
	RINGBUF__TP_READER_S3,           /* S3 CAS done, S4 not begun */
	RINGBUF__TP_READER_S4,           /* S4 done but its completion mark (hn.prev) */
	/* whole-page reads (ringbuf_read_page, ringbuf_read_page_ref: P1-P4) */
	RINGBUF__TP_READ_PAGE_P2,        /* P2: commit page loaded, the reader page's commit not yet */
	RINGBUF__TP_READ_PAGE_P3,        /* P3: records checked (and copied), P4 not begun */
	RINGBUF__TP_QUIESCE_WAIT, /* Q3 done for a CPU with a writer in flight, before Q4 */
	/* ringbuf__commit_fast's last window (outside the count as well) */
	RINGBUF__TP_COMMIT_FAST_CHECKED, /* commit_fast: page commit stored, committing still 1 */
	RINGBUF__TP_COMMIT_FAST_ZERO,         /* committing = 0 stored, commits not re-checked yet */
	/* ringbuf_open_file's validation of a block (V0-V3, >>file) */
	RINGBUF__TP_VALIDATE_TAIL, /* V1: commit and tail pages loaded, before the ring walk */
	RINGBUF__TP_VALIDATE_WALKED,    /* V2: first pass over the links done, before the second */
	RINGBUF__TP_VALIDATE_SLOT,      /* V4: a slot's len, page and off loaded, its event not yet */
	RINGBUF__TP_RECOVER_COMMIT,     /* recovery: slots padded, before the commit walk (step 3) */
	RINGBUF__TP_RECOVER_DONE,       /* recovery: steps 1-4 done, committing = 0 not yet (step 5) */
	/* ringbuf_open_file's private header (PH1-PH3 in >>design), cpu 0 */
	RINGBUF__TP_OPEN_MAPPED,   /* PH1 done: the header still reads the file */
	RINGBUF__TP_OPEN_COPIED,        /* PH2 done (the copy is ours), PH3 not yet */
	/* a thread's exit and ringbuf_destroy (X1-X4, D1-D3 at the registry in
	 * >>contexts), rb = the registered handle, cpu 0 */
	RINGBUF__TP_EXIT_FOUND,   /* X1: an entry names the thread's buffer, not pinned yet */
	RINGBUF__TP_EXIT_PINNED,  /* X3: pinned and checked again, the release not begun */
	RINGBUF__TP_DESTROY_WAIT, /* D2: unregistered, a thread exit still pins the entry */
	RINGBUF__TP_END /* one past the last: a test's own pseudo points start here */
};
RINGBUF_API void ringbuf__testpoint(struct ringbuf *rb, unsigned cpu, int point);
/* The hook (defined in >>impl): declared here, so that a test linked with an
 * implementation compiled in another file (the Makefile's shared object) sees it. */
typedef void (*ringbuf__tp_fn)(struct ringbuf *rb, unsigned cpu, int point, void *ctx);
RINGBUF_API void ringbuf__set_testpoint_hook(ringbuf__tp_fn fn, void *ctx);
#define RINGBUF__TESTPOINT(rb, cpu, pt) ringbuf__testpoint((rb), (cpu), (pt))
#else
#define RINGBUF__TESTPOINT(rb, cpu, pt) ((void)0)
#endif

/* -- owner-local read-modify-write ("local_t") --
 * Writers of one CPU buffer are one thread and its signal handlers, so an RMW
 * only has to be atomic with respect to an interrupt on the same thread. On
 * x86-64 a single instruction without LOCK is (1.6 ns vs 6 ns for xadd, per
 * the reference measurements). Elsewhere, and under ThreadSanitizer, the C11
 * RMW is used. */
#if defined(__x86_64__) && !defined(RINGBUF_PORTABLE) && !defined(__SANITIZE_THREAD__)
#define RINGBUF__LOCAL_X86 1
#endif
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) && defined(RINGBUF__LOCAL_X86)
#undef RINGBUF__LOCAL_X86 /* TSan cannot see inline assembly */
#endif
#endif

/* The result by comparing rax after cmpxchg, not by its ZF (asm flag
 * outputs): two instructions fewer per event, but 0.9 ns slower on an Intel
 * Xeon VM (make bench rb_clock_16 33.85 vs 32.5 ns, rb_tsc_16 21.66 vs 20.77;
 * the compare and the branch fuse, the branch on cmpxchg's flags waits for
 * it). */
RINGBUF__INLINE bool ringbuf__local_cas(_Atomic(uint64_t) *p, uint64_t old, uint64_t nv)
{
#ifdef RINGBUF__LOCAL_X86
	uint64_t prev = old;
	__asm__ __volatile__("cmpxchgq %2, %1"
			     : "+a"(prev), "+m"(*(volatile uint64_t *)p)
			     : "r"(nv)
			     : "memory", "cc");
	return prev == old;
#else
	return atomic_compare_exchange_strong_explicit(p, &old, nv, memory_order_relaxed,
						       memory_order_relaxed);
#endif
}

/* *p += v in one instruction, returning the value before (the slot's len at
 * P3, ringbuf__slot_claim). xadd without LOCK, not cmpxchg 0 -> v: cmpxchg
 * without LOCK is the costlier instruction (make bench rb_counter_16 and
 * rb_tsc_16 about 1.2 ns per event on an Intel Xeon VM). Safe only with
 * RINGBUF__SLOT_PRE: a failed add leaves GONE | PRE | total, which a
 * rollback clears to 0 ([SLOT]; without PRE it turned it into total:
 * test_file, a_nested_rollback_at_a_refused_slot_leaves_it_claiming_nothing). */
RINGBUF__INLINE uint32_t ringbuf__local_xadd32(_Atomic(uint32_t) *p, uint32_t v)
{
#ifdef RINGBUF__LOCAL_X86
	__asm__ __volatile__("xaddl %0, %1" : "+r"(v), "+m"(*(volatile uint32_t *)p) : : "memory", "cc");
	return v;
#else
	return atomic_fetch_add_explicit(p, v, memory_order_relaxed);
#endif
}

static inline uint64_t ringbuf__local_add_return(_Atomic(uint64_t) *p, uint64_t v)
{
#ifdef RINGBUF__LOCAL_X86
	uint64_t r = v;
	__asm__ __volatile__("xaddq %0, %1"
			     : "+r"(r), "+m"(*(volatile uint64_t *)p)
			     :
			     : "memory", "cc");
	return r + v;
#else
	return atomic_fetch_add_explicit(p, v, memory_order_relaxed) + v;
#endif
}

static inline void ringbuf__local_sub(_Atomic(uint64_t) *p, uint64_t v)
{
	(void)ringbuf__local_add_return(p, (uint64_t)0 - v);
}

/* += 1 or -= 1 with one instruction, the result unused */
RINGBUF__INLINE void ringbuf__local_inc(_Atomic(uint64_t) *p)
{
#ifdef RINGBUF__LOCAL_X86
	__asm__ __volatile__("incq %0" : "+m"(*(volatile uint64_t *)p) : : "memory", "cc");
#else
	(void)atomic_fetch_add_explicit(p, 1, memory_order_relaxed);
#endif
}

static inline void ringbuf__local_dec(_Atomic(uint64_t) *p)
{
#ifdef RINGBUF__LOCAL_X86
	__asm__ __volatile__("decq %0" : "+m"(*(volatile uint64_t *)p) : : "memory", "cc");
#else
	(void)atomic_fetch_sub_explicit(p, 1, memory_order_relaxed);
#endif
}

/* Owner-only counters and stamps: a nested writer's updates are balanced or
 * land in its own depth slot, so a plain load + store cannot lose one (see
 * >>design); relaxed atomics keep the accesses single and untorn. */
#define RINGBUF__OWNER_INC(p) RINGBUF__STORE((p), RINGBUF__LOAD(p) + 1)
/* the same in one instruction where there is one without LOCK (a kill or a
 * handler comes before or after it, as before the load or after the store) */
RINGBUF__INLINE void ringbuf__owner_inc(_Atomic(uint64_t) *p)
{
#ifdef RINGBUF__LOCAL_X86
	ringbuf__local_inc(p);
#else
	RINGBUF__OWNER_INC(p);
#endif
}

/* commits: a nested entry adds this, an outermost exit 1, so the low 32 bits
 * count the outermost exits alone (a carry only goes up) [Q-X] */
#define RINGBUF__COMMITS_NESTED ((uint64_t)1 << 32)

/* ---- geometry ----------------------------------------------------------- */

RINGBUF__INLINE struct ringbuf__cpu *ringbuf__cpu(const struct ringbuf *rb, unsigned cpu)
{
	return (struct ringbuf__cpu *)(void *)((char *)rb + rb->cpu_off) + cpu;
}

/* The index of CPU struct c (a division: off the fast path only). */
RINGBUF__INLINE unsigned ringbuf__cpu_index(const struct ringbuf *rb, const struct ringbuf__cpu *c)
{
	return (unsigned)(c - ringbuf__cpu(rb, 0));
}

/* The inline write paths for RINGBUF_CPU_THREAD and RINGBUF_CPU_CURRENT know
 * the CPU struct, not its index, and pass RINGBUF_CPU_THREAD as `cpu`: the
 * index is worked out where it is needed, which is off the fast path (a slow
 * call, a test point), and stays out of a register across the clock's call
 * (RINGBUF_CPU_CURRENT's index kept live for its slow paths was spilled). */
#define RINGBUF__CPU_OF(rb, c, cpu) ((cpu) == RINGBUF_CPU_THREAD ? ringbuf__cpu_index((rb), (c)) : (cpu))

/* The same, for the writer's fast path: two loads from its own cache line. */
RINGBUF__INLINE struct ringbuf__bpage *ringbuf__cbp(const struct ringbuf *rb, const struct ringbuf__cpu *c,
						 uint32_t idx)
{
	return (struct ringbuf__bpage *)(void *)((char *)rb + c->bp_off) + idx;
}
RINGBUF__INLINE struct ringbuf__dpage *ringbuf__cdp(const struct ringbuf *rb, const struct ringbuf__cpu *c,
						 uint32_t idx)
{
	return (struct ringbuf__dpage *)(void *)((char *)rb + c->dp_off + ((size_t)idx << rb->page_shift));
}

/* Page descriptors per CPU: nr_pages + 1, rounded up to a multiple of 8 (8
 * descriptors are 5 cache lines), so that no cache line holds descriptors of
 * two CPUs (writers of different CPUs share no line). */
#define RINGBUF__BP_STRIDE(nr_pages) ((((uint64_t)(nr_pages)) + 1 + 7) & ~(uint64_t)7)
_Static_assert(8 * sizeof(struct ringbuf__bpage) % RINGBUF__CACHELINE == 0,
	       "8 page descriptors must fill whole cache lines");
/* The block is the same bytes whichever language built it (>>cxx): the
 * kernel's page header, 40-byte descriptors, and the
 * 64-bit atomics 8-aligned in the per-CPU struct (i386 aligns a plain
 * uint64_t to 4, _Atomic(uint64_t) to 8 since GCC 11: C++ gets the latter).
 * tests/core/test_cxx.cpp compares every field's offset between C and C++. */
_Static_assert(offsetof(struct ringbuf__dpage, data) == 8 + sizeof(long) &&
		       sizeof(struct ringbuf__bpage) == 40,
	       "block layout");
#if RINGBUF_MAX_NEST == 8
_Static_assert(sizeof(struct ringbuf__cpu) == 1024, "block layout: the CPU struct is 1024 bytes");
#endif
#ifdef __cplusplus
static_assert(alignof(_Atomic(uint64_t)) == 8 && offsetof(struct ringbuf__cpu, owner) % 8 == 0 &&
		      offsetof(struct ringbuf__cpu, reader_lock) % 8 == 0 &&
		      offsetof(struct ringbuf__shdr, waiters) % 8 == 0,
	      "C++: 64-bit atomics must be 8-aligned, as C's _Atomic(uint64_t)");
#endif

static inline struct ringbuf__bpage *ringbuf__bp(const struct ringbuf *rb, unsigned cpu, uint32_t idx)
{
	return (struct ringbuf__bpage *)(void *)((char *)rb + rb->bpage_off) +
	       (size_t)cpu * (size_t)RINGBUF__BP_STRIDE(rb->nr_pages) + idx;
}

static inline struct ringbuf__dpage *ringbuf__dp(const struct ringbuf *rb, unsigned cpu, uint32_t idx)
{
	return (struct ringbuf__dpage *)(void *)((char *)rb + rb->data_off +
					 ((size_t)cpu * (rb->nr_pages + 1) + idx) * rb->page_size);
}

static inline uint32_t ringbuf__link_idx(uint64_t link)
{
	return (uint32_t)((link >> 2) & RINGBUF__IDX_MASK);
}

static inline uint64_t ringbuf__link_make(uint64_t tag_of, uint32_t idx, uint64_t flags)
{
	/* keep the tag of tag_of, bumped by one */
	uint64_t tag = (tag_of >> RINGBUF__TAG_SHIFT) + 1;
	return (tag << RINGBUF__TAG_SHIFT) | ((uint64_t)idx << 2) | flags;
}

static inline uint64_t ringbuf__load_link(const struct ringbuf__bpage *bp)
{
	return atomic_load_explicit(&((struct ringbuf__bpage *)bp)->next, memory_order_acquire);
}

/* [L] every link CAS is seq_cst: it orders the counters and reader_page stores
 * made before it against the loads made after the matching link load. */
static inline bool ringbuf__cas_link(struct ringbuf__bpage *bp, uint64_t old, uint64_t nv)
{
	return atomic_compare_exchange_strong_explicit(&bp->next, &old, nv, memory_order_seq_cst,
						       memory_order_seq_cst);
}

static inline uint32_t ringbuf__next_idx(const struct ringbuf *rb, unsigned cpu, uint32_t idx)
{
	return ringbuf__link_idx(ringbuf__load_link(ringbuf__bp(rb, cpu, idx)));
}

/* Event length for a payload of len bytes (kernel rb_calculate_event_length);
 * align8: RINGBUF_F_ALIGN8 (the inline path passes the constant). */
RINGBUF__INLINE uint32_t ringbuf__event_length_a(bool align8, size_t len)
{
	size_t l = len ? len : 1;
	if (align8) {
		l = (l + 8 + 7) & ~(size_t)7; /* header + array[0] + payload, 8-aligned */
		return (uint32_t)l;
	}
	if (l > RINGBUF__MAX_SMALL_DATA)
		l += 4;
	l = (l + 4 + 3) & ~(size_t)3;
	if (l == 12) /* room for a TIME_EXTEND plus padding if discarded */
		l = 16;
	return (uint32_t)l;
}

RINGBUF__INLINE uint32_t ringbuf__event_length(const struct ringbuf *rb, size_t len)
{
	return ringbuf__event_length_a((rb->flags & RINGBUF_F_ALIGN8) != 0, len);
}

/* Write a data event header for an event of total length evlen. Returns the
 * payload. align8: RINGBUF_F_ALIGN8. */
RINGBUF__INLINE unsigned char *ringbuf__put_event_a(bool align8, unsigned char *p, uint32_t evlen,
						  uint32_t delta)
{
	uint32_t body = evlen - 4;
	if (!align8 && body <= RINGBUF__MAX_SMALL_DATA) {
		uint32_t w = RINGBUF__HDR_WORD(body / 4, delta);
		memcpy(p, &w, 4);
		return p + 4;
	}
	uint32_t w = RINGBUF__HDR_WORD(0, delta); /* type_len 0 */
	memcpy(p, &w, 4);
	memcpy(p + 4, &body, 4); /* array[0] = length after the header, itself included */
	return p + 8;
}

RINGBUF__INLINE unsigned char *ringbuf__put_event(const struct ringbuf *rb, unsigned char *p,
						uint32_t evlen, uint32_t delta)
{
	return ringbuf__put_event_a((rb->flags & RINGBUF_F_ALIGN8) != 0, p, evlen, delta);
}

/* rb->inline_max: the inline path's case is packed events (no
 * RINGBUF_F_ALIGN8, the only flag a handle keeps) stamped by deltas
 * (RINGBUF_TS_DELTA is 0). Its one test of the length against inline_max
 * then also sends every other mode out of line (0: no length passes), so the
 * mode costs the write path no test of its own. Set where a handle's
 * geometry is made or validated (ringbuf_init_in, the opens). */
_Static_assert(RINGBUF_TS_DELTA == 0, "ringbuf__inline_max: one test");
RINGBUF__INLINE uint32_t ringbuf__inline_max(const struct ringbuf *rb)
{
	return (rb->flags | rb->ts_mode) == 0 ? rb->max_event : 0;
}

static inline void ringbuf__put_stamp(unsigned char *p, uint32_t type, uint64_t v)
{
	uint32_t w0 = RINGBUF__HDR_WORD(type, (uint32_t)(v & RINGBUF__TS_MASK));
	uint32_t w1 = (uint32_t)(v >> RINGBUF__TS_SHIFT);
	memcpy(p, &w0, 4);
	memcpy(p + 4, &w1, 4);
}

static inline void ringbuf__put_padding(unsigned char *p, uint32_t len, uint32_t delta)
{
	uint32_t w = RINGBUF__HDR_WORD(RINGBUF__TYPE_PADDING, delta);
	memcpy(p, &w, 4);
	if (len >= 8) {
		uint32_t body = len - 4;
		memcpy(p + 4, &body, 4);
	}
}

/* ---- clocks --------------------------------------------------------------
 * The writer reads the clock inline: the default clock is one direct call
 * (clock_gettime(CLOCK_MONOTONIC), a vDSO call on Linux), the TSC clock is the
 * rdtsc instruction (raw cycles in the pages, converted to ns by the readers
 * with the ratio calibrated at creation), a user clock is called through its
 * pointer. */
enum { RINGBUF__CLK_MONO = 0, RINGBUF__CLK_TSC = 1, RINGBUF__CLK_USER = 2 };
RINGBUF_API uint64_t ringbuf__clock_mono(void);
/* a user clock of a file or memfd block: this process's (>>setup, CLOCKS OF SHARED BLOCKS) */
RINGBUF_API uint64_t ringbuf__clock_shared(const struct ringbuf *rb);

RINGBUF__INLINE uint64_t ringbuf__rdtsc(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#else
	return ringbuf__clock_mono();
#endif
}

RINGBUF__INLINE uint64_t ringbuf__clock(const struct ringbuf *rb)
{
	if (rb->clock_kind == RINGBUF__CLK_TSC)
		return ringbuf__rdtsc();
	if (RINGBUF__LIKELY(rb->clock_kind == RINGBUF__CLK_MONO))
		return ringbuf__clock_mono();
	/* a file or memfd block's (owned 2): ringbuf__clock_shared_fn, rb */
	return rb->clock(rb->clock_ctx);
}

/* ringbuf__sh(rb)->waiters: armed bits, waiter count (14 bits), the armed
 * waiters' CPU (16 bits: cpu + 1, or RINGBUF__WAIT_ANY: several, or
 * RINGBUF_ALL_CPUS; 0 with armed bits, as ANY), lowest watermark (0: none) */
#define RINGBUF__WAIT_DATA 1u
#define RINGBUF__WAIT_FULL 2u
#define RINGBUF__WAIT_ONE 4u
#define RINGBUF__WAIT_COUNT 0xfffcu
#define RINGBUF__WAIT_CPU_SHIFT 16
#define RINGBUF__WAIT_ANY 0xffffu
#define RINGBUF__WAIT_CPU(w) ((uint32_t)((w) >> RINGBUF__WAIT_CPU_SHIFT) & RINGBUF__WAIT_ANY)
#define RINGBUF__WAIT_MIN(w) ((uint32_t)((w) >> 32))
#define RINGBUF__NO_TS UINT64_MAX

/* [SLOT] Describe the reservation about to be tried in the slot of its depth,
 * so that recovery after a kill pads exactly the bytes in flight and never a
 * complete event (ringbuf_recover; CRASH SAFETY in >>design):
 *   P1  len = 0 (ignored by recovery), then page, off, event, and counted =
 *       entries_d[depth - 1] (the commit counts the event, then clears len:
 *       [SLOT-DONE] in ringbuf__commit_inline). The fast path's first try
 *       (ringbuf__reserve_fast) comes right after the entry's own len = 0
 *       and does not store it again: in between, a nested writer can
 *       have set RINGBUF__SLOT_GONE in it (below), and P3 then fails; a
 *       handler before committing = 1 writes at this depth and leaves 0,
 *       its event complete or failed ([SLOT-DONE], [SLOT-FAIL])
 *   P2  check the page: a writer that nested since our loads of A reserved
 *       there (our CAS at C will fail): retry
 *   P3  len += total, one RMW (ringbuf__local_xadd32); ours where len was 0
 * A writer nesting at any point from P1 to our CAS at C that reserves at
 * (page, off) sets RINGBUF__SLOT_GONE in len (ringbuf__slot_reserved), and
 * RINGBUF__SLOT_PRE with it where len was 0 (our P3 not yet done, or the
 * slot idle); the bits stay until our next P1 (or until that writer rolls
 * its reservation back, ringbuf_discard: the slot goes back to 0 where PRE
 * is set, to its length where it is not, just before the place is free
 * again; the bits go back on where that rollback fails).
 * Such a writer before P2 makes P2 fail (the write index moved); between P2
 * and P3 it makes P3 fail; after P3 it leaves total | GONE, which recovery
 * skips, and our CAS at C fails. A failed P3 has added total to what it
 * found: GONE | PRE | total (PRE: so that length is never ours), which
 * recovery skips as it skips GONE and a rollback makes 0. The retry's P1
 * stores 0. A kill between
 * a nested writer's CAS at C and its marking of our slot
 * (RINGBUF__TP_C_CLAIMED) leaves both slots naming the place: recovery pads
 * it once, as the deeper writer's (a slot below a deeper one in flight
 * that names its place claims nothing); the same holds in a rollback
 * between its unmarking and its CAS. A rollback takes the marks off before
 * it gives the place back (ringbuf__discard_at), so a writer that then
 * reserves the freed place marks the slot again. A reservation that fails
 * in ringbuf__reserve_next after its P3 stores len = 0 ([SLOT-FAIL]): left
 * there by a handler in the entry's window, its length, unmarked by writers
 * nested inside P1's field stores (stale fields), was padded by recovery
 * over their events (a review's probe, stop 40).
 * Once P3 was a plain store: a handler between P2 and the store reserved here and
 * committed, the store then set len over its event, and a kill before the
 * retry's P1 had recovery pad a committed event with another event's length
 * (its tail read as garbage records; seen on i686, whose slower signal
 * handlers run back to back and leave the interrupted writer in that state
 * for long). C11: every access to a slot is by this thread or by a signal
 * handler that interrupted it (or, after this thread is gone, by the thread
 * that took its buffer over: [TAKEOVER-HB]), so relaxed atomics and signal
 * fences order them as the program does; P3 is one RMW, so a handler runs wholly before
 * it (P3 reads what the handler stored) or wholly after it (the handler reads
 * what P3 stored). Returns false: retry from A. The inline fast path
 * (ringbuf__reserve_fast) reads the clock before A ([CLOCK-FIRST]), then takes
 * P1 (ringbuf__slot_describe) and P2-P3 (ringbuf__slot_claim). */
RINGBUF__INLINE void ringbuf__slot_describe(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c,
					    uint32_t depth, uint32_t t, uint64_t wfull, uint32_t event,
					    bool entered)
{
	struct ringbuf__slot *s = &c->slots[depth - 1];
	(void)rb;
	(void)cpu;
	/* P1. entered: the entry stored len = 0 and no attempt since (the
	 * first of ringbuf__reserve_fast); a nested writer may have set
	 * SLOT_GONE in it since (P3 fails and the full loop's P1 starts
	 * over); a handler that ran between that store and committing = 1
	 * wrote at this depth and left 0 ([SLOT-FAIL]) */
	if (!entered)
		RINGBUF__STORE(&s->len, 0);
	RINGBUF__BARRIER();
	RINGBUF__STORE(&s->page, t);
	/* a writer nested here finds the page and the last offset: no mark
	 * where it reserves elsewhere on the page, and none is needed, as len
	 * is 0 (the entry's, a failed reservation's: ringbuf__reserve_next) */
	RINGBUF__TESTPOINT(rb, RINGBUF__CPU_OF(rb, c, cpu), RINGBUF__TP_P1_PAGE);
	RINGBUF__STORE(&s->off, (uint32_t)(wfull & RINGBUF__WRITE_MASK));
	RINGBUF__STORE(&s->event, event);
	RINGBUF__STORE(&s->counted, (uint32_t)RINGBUF__LOAD(&c->entries_d[depth - 1]));
	RINGBUF__BARRIER();
}

/* P2, P3 after ringbuf__slot_describe's P1 */
RINGBUF__INLINE bool ringbuf__slot_claim(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c,
					 uint32_t depth, struct ringbuf__bpage *tb, uint64_t wfull,
					 uint32_t total)
{
	struct ringbuf__slot *s = &c->slots[depth - 1];
	(void)rb;
	(void)cpu;
	if (RINGBUF__UNLIKELY(RINGBUF__LOAD(&tb->write) != wfull)) /* P2 */
		return false;
	RINGBUF__TESTPOINT(rb, RINGBUF__CPU_OF(rb, c, cpu), RINGBUF__TP_SLOT_CHECKED);
	if (RINGBUF__UNLIKELY(ringbuf__local_xadd32(&s->len, total) != 0)) { /* P3 */
		RINGBUF__TESTPOINT(rb, RINGBUF__CPU_OF(rb, c, cpu), RINGBUF__TP_SLOT_REFUSED);
		return false;
	}
	RINGBUF__BARRIER();
	return true;
}

RINGBUF__INLINE bool ringbuf__slot_publish(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c,
					 uint32_t depth, uint32_t t, struct ringbuf__bpage *tb,
					 uint64_t wfull, uint32_t total, uint32_t event)
{
	ringbuf__slot_describe(rb, cpu, c, depth, t, wfull, event, false);
	return ringbuf__slot_claim(rb, cpu, c, depth, tb, wfull, total);
}

/* The entry check's load of c->disabled is relaxed: ringbuf_reset_cpu's second
 * barrier (R6, >>control) orders what a writer that finds its bit cleared sees
 * next. ThreadSanitizer does not know membarrier: it gets an acquire (pairs
 * with R7's release), which shows it the same order. */
#if defined(__SANITIZE_THREAD__)
#define RINGBUF__DISABLED_MO memory_order_acquire
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RINGBUF__DISABLED_MO memory_order_acquire
#endif
#endif
#ifndef RINGBUF__DISABLED_MO
#define RINGBUF__DISABLED_MO memory_order_relaxed
#endif

RINGBUF__INLINE bool ringbuf__disabled(const struct ringbuf *rb, struct ringbuf__cpu *c)
{
	return (atomic_load_explicit(&ringbuf__sh(rb)->record_disabled, memory_order_relaxed) |
		atomic_load_explicit(&c->disabled, RINGBUF__DISABLED_MO)) != 0;
}


/* ---- per-thread writer state (>>contexts) -------------------------------
 * One entry per ring buffer the thread writes to; see >>contexts. The
 * RINGBUF_CPU_THREAD lookup is inline, through the thread's claim word
 * ([TCLAIM] below), not the entries. */
#define RINGBUF__TCTX 4
struct ringbuf__tctx {
	_Atomic(uint64_t) gen;
	_Atomic(uint64_t) cur;
	_Atomic(uint32_t) claimed; /* RINGBUF_CPU_THREAD: the buffer's claim word
				    * (ringbuf__claim_word), 0 = none */
	_Atomic(uint32_t) token;   /* this thread's owner token in the buffer, 0 = none yet */
	/* RINGBUF_CPU_THREAD without a claim (>>contexts, THREAD FALLBACK): the
	 * release_gen read before the last scan that found nothing, events left
	 * before the next full scan, and the current wait (0: no scan missed) */
	_Atomic(uint32_t) miss_gen;
	_Atomic(uint32_t) miss_left;
	_Atomic(uint32_t) miss_wait;
};
/* RINGBUF_TLS_MODEL (>>config): initial-exec is one load from the thread
 * pointer and never allocates, so it is async-signal-safe from a thread's very
 * first event. A shared object using it can be dlopen'ed only where the C
 * library reserves static TLS for late modules (glibc does, a little; musl
 * refuses: "initial-exec TLS resolves to dynamic definition"). So the default
 * is initial-exec except in position-independent non-PIE code (a shared
 * object) built against a C library other than glibc. */
#ifndef RINGBUF_TLS_MODEL
#if defined(__PIC__) && !defined(__PIE__) && !defined(__GLIBC__)
#define RINGBUF_TLS_MODEL "global-dynamic"
#else
#define RINGBUF_TLS_MODEL "initial-exec"
#endif
#endif
#if defined(__GNUC__) || defined(__clang__)
#define RINGBUF__TLS _Thread_local __attribute__((tls_model(RINGBUF_TLS_MODEL)))
#else
#define RINGBUF__TLS _Thread_local
#endif
#if defined(RINGBUF_STATIC) && defined(__cplusplus)
/* C++ has no tentative definitions: the declaration is the definition */
#define RINGBUF__TLS_DECL static RINGBUF__TLS __attribute__((unused))
#define RINGBUF__TLS_DEFINED_HERE 1
#elif defined(RINGBUF_STATIC)
#define RINGBUF__TLS_DEF static RINGBUF__TLS
#define RINGBUF__TLS_DECL static RINGBUF__TLS
#else
#define RINGBUF__TLS_DEF RINGBUF__TLS
#define RINGBUF__TLS_DECL extern RINGBUF__TLS
#endif
RINGBUF__TLS_DECL struct ringbuf__tctx ringbuf__tctx[RINGBUF__TCTX];
RINGBUF__TLS_DECL unsigned ringbuf__tctx_last;
/* [TCLAIM] The thread's RINGBUF_CPU_THREAD claim, for the inline path: one
 * word, rb->tclaim_key | claim word (ringbuf__claim_word) of the handle the
 * thread last claimed or found its claim through out of line (0: none). The
 * inline reserve and commit load it at a fixed offset from the thread
 * pointer and subtract their handle's key: no entry to find first (through
 * the last-entry hint, one more dependent load in the reserve and again in
 * the commit: rb_thread_16 +3.1 ns over an explicit index on an Intel Xeon
 * VM; +0.7 through this word). One word, so a handler sees a whole pair,
 * whatever it interrupts. Keys are this process's, one per handle, never
 * reused (ringbuf__fork_register_as: the 2^32nd handle on gets key 0 and
 * is never cached), so a word left from a destroyed handle names no live
 * one. Written by this thread and its signal handlers only (relaxed,
 * signal fences):
 *   K1 word = key | w: where the slow path found or made the claim
 *      (ringbuf__tclaim_set; K2 there: the entry read again);
 *   K0 word = 0 (ringbuf__tclaim_forget) where a live handle's claim is
 *      taken from the thread: the release (after the entry's claim is 0,
 *      before the owner word is given back: until then a handler of ours
 *      writes to the buffer through the word as through the entry), and a
 *      fork child (its claims in shared blocks dropped). An entry reused
 *      for another buffer needs none: its buffer's handles are gone, and
 *      their keys name no handle again.
 * So the word holds a claim the entry still has, or one the release has not
 * given back yet (a release is made from normal context, docs/contexts.md).
 * tests/contexts/test_owners.c cuts in at each step
 * (handler_events_at_each_step_of_the_thread_claim_copy). */
RINGBUF__TLS_DECL _Atomic(uint64_t) ringbuf__tclaim;

/* The entry of the thread's last lookup (a hint: its gen says for which
 * buffer; the out-of-line lookup, ringbuf__tctx_get). ringbuf__tctx_last is the
 * entry's byte offset in the array, only ever stored as one
 * (RINGBUF__TCTX_AT, ringbuf__tctx_get): no mask and no multiply between
 * its load and the entry's. (It paid on the RINGBUF_CPU_THREAD path before
 * [TCLAIM]; CURRENT measures the same either way, and going back to an
 * index cost rb_thread_16 0.5 ns in two alternating runs, code placement.) */
#define RINGBUF__TCTX_AT(i) ((unsigned)(i) * (unsigned)sizeof(struct ringbuf__tctx))
RINGBUF__INLINE struct ringbuf__tctx *ringbuf__tctx_at_last(void)
{
	return (struct ringbuf__tctx *)(void *)((char *)ringbuf__tctx + ringbuf__tctx_last);
}

/* The claim word (ringbuf__tctx.claimed) of CPU buffer `index`: its CPU
 * struct's offset in the block, never 0 (none), so that the inline lookup
 * below finds the struct with one add; below 2^32 for any block
 * (ringbuf__layout: ncpu <= 65536). */
RINGBUF__INLINE uint32_t ringbuf__claim_word(const struct ringbuf *rb, unsigned index)
{
	return (uint32_t)(rb->cpu_off + (uint64_t)index * sizeof(struct ringbuf__cpu));
}
/* the buffer index of a claim word that is not 0 */
RINGBUF__INLINE unsigned ringbuf__claim_index(const struct ringbuf *rb, uint32_t w)
{
	return (unsigned)((w - rb->cpu_off) / sizeof(struct ringbuf__cpu));
}
_Static_assert(RINGBUF__CPU_OFF_SHARED + 65536 * (uint64_t)sizeof(struct ringbuf__cpu) <= UINT32_MAX,
	       "a claim word holds any CPU struct's offset");

/* The CPU struct of the buffer this thread claimed in rb
 * (RINGBUF_CPU_THREAD), when the thread's claim word ([TCLAIM]) is rb's; else
 * NULL (the out-of-line lookup claims or searches, and sets the word). */
RINGBUF__INLINE struct ringbuf__cpu *ringbuf__thread_claim(const struct ringbuf *rb)
{
	/* [TCLAIM]: 1 .. 2^32 - 1 when the key is rb's and a claim word follows
	 * (a word of another key, or 0, wraps far above) */
	uint64_t w = atomic_load_explicit(&ringbuf__tclaim, memory_order_relaxed) - rb->tclaim_key;
	if (RINGBUF__UNLIKELY(w - 1 >= UINT32_MAX))
		return NULL;
	return (struct ringbuf__cpu *)(void *)((char *)rb + w);
}

#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__)) && defined(__GNUC__) && \
	(__GNUC__ >= 11 || defined(__clang__))
/* glibc >= 2.35 registers rseq for every thread and exports where: the
 * kernel keeps the thread's CPU number in it (one load, no syscall). */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));
#define RINGBUF__HAVE_RSEQ 1
#endif

/* The CPU number in the thread's rseq area, or -1 (rseq not registered:
 * no glibc >= 2.35, GLIBC_TUNABLES=glibc.pthread.rseq=0, qemu-user, musl,
 * another architecture). */
RINGBUF__INLINE int32_t ringbuf__rseq_cpu(void)
{
#ifdef RINGBUF__HAVE_RSEQ
	if (&__rseq_size && __rseq_size >= 8)
		return *(volatile int32_t *)(void *)((char *)__builtin_thread_pointer() + __rseq_offset + 4);
#endif
	return -1;
}

/* [TCUR] RINGBUF_CPU_CURRENT's inline state: one 16-byte thread-local slot,
 * {word, me}, so that the inline reserve and commit never walk the thread's
 * entries (through the last-entry hint, a chain of dependent loads in each:
 * rb_current_16 +5.0 ns over an explicit index on an Intel Xeon VM, +3.1
 * through this slot, make bench; on an AMD EPYC VM +7.2 while J1 and J0
 * stored the halves apart, +1.4 to +1.7 with one store each:
 * ringbuf__tcur_set). `word`, against the handle's key
 * (rb->tclaim_key, [TCLAIM]: process-unique, never reused):
 *   key | 1  ARMED: the thread has no event of this handle in flight; the
 *            inline reserve may take a buffer with owner id `me` (token <<
 *            32 | tid, THE OWNER WORD in >>contexts)
 *   key | 2  OUT: an out-of-line event of this handle at depth 1 is in
 *            flight (G3 to G4 in >>contexts): the inline reserve goes out
 *            of line, where nested events follow that event through the
 *            entry's cur, not the CPU
 *   key | w  BUSY: the thread's outermost inline event holds the buffer of
 *            claim word w (ringbuf__claim_word: its CPU struct's offset,
 *            at least RINGBUF__TCUR_BUSY_MIN)
 *   other    not armed for this handle (0 in a new thread, a fork child's)
 * Only this thread and its signal handlers touch it, so the argument is the
 * signal-level one of [TCLAIM] (a handler runs to its end between two
 * instructions of the code it interrupts; handlers nest). For one key, `me`
 * is always the same value (the thread's token in the block and its tid),
 * so what must never happen is `me` of one handle under another's ARMED
 * word: the inline reserve reads both halves with one instruction (K:
 * x86-64 movdqa, aarch64 ldp), and every store leaves the word not ARMED
 * while `me` is not its own. The steps:
 *   K  (the inline reserve) word and me, one load: ARMED for rb, else out
 *      of line;
 *   J1 (the inline reserve, once the writer is in the buffer: committing
 *      1) word := key|w (BUSY) and me := the me K read, one store
 *      (ringbuf__tcur_set; only a unit with K runs J1): a handler
 *      that re-armed the slot for another handle since K left that
 *      handle's me, and nothing reads me under a BUSY word;
 *   J0 (the inline commit or the discard of that event, before the commit
 *      itself; a refused or failed reservation, before committing goes back
 *      to 0) word := key|1 (me is J1's: where the unit has K, both
 *      halves are stored again in one store, me as loaded: the word is
 *      BUSY until then, so no handler wrote it);
 *   OUT (an out-of-line event's G3, before cur's store; ringbuf__tcur_out)
 *      key|2 over 0 or ARMED (any handle's); left alone over BUSY or OUT
 *      (any handle's: an event nested in ours, or a handler's inside our
 *      window before G3, which runs whole before it, leaves the word as it
 *      was); when it stored OUT, then me := ours (the event's owner id,
 *      under OUT), and the event marks cur (RINGBUF__CUR_TCUR);
 *   ARM (that event's G4, after cur's store, when it stored OUT) from
 *      key|2: word := key|1 (me is OUT's: a handler's events leave it; a
 *      fork from a handler between the owner id's lookup and OUT would arm
 *      the child with the parent's id: fork() from inside an event is not
 *      supported, docs/contexts.md).
 *   J1, OUT and ARM are a load (K's, or the word's), then stores: a handler
 *   between the two leaves the word as it found it (its J1 and J0, its OUT
 *   and ARM pair up; an event that arms found 0 or ARMED, and arms this
 *   handle, which is then what the interrupted code's store replaces), so
 *   an event of an interrupted writer is never overwritten, and ARMED never
 *   stands while an out-of-line event of the handle is past its G3. Another
 *   handle's event that arms only costs this one its inline path until its
 *   next out-of-line event;
 *   a fork child clears the word (its tid changed).
 * While the word is BUSY for rb, every RINGBUF_CPU_CURRENT event of the
 * thread on rb is that event's or nested in it (a handler's), and so is a
 * RINGBUF_CPU_THREAD event of a thread without a claim (as in an
 * out-of-line event, THREAD FALLBACK): the out-of-line reserve, commit and
 * discard use buffer w with its index (the kernel's nesting, committing >
 * 1), and only a commit or discard that finds committing == 1 is the held
 * event's own (J0, the commit, G5). The protocol, its windows and its tests
 * are INLINE in >>contexts. Where the inline path cannot run (no rseq CPU
 * number: other architectures, no glibc >= 2.35) there is no slot: every
 * event is out of line; an x86-64 unit built without SSE2 (-mno-sse,
 * -mgeneral-regs-only) has no K load: its reserves go out of line, where
 * the slot is kept as in any other unit. */
#ifdef RINGBUF__HAVE_RSEQ
#define RINGBUF__TCUR 1
#if defined(__aarch64__) || defined(__SSE2__)
#define RINGBUF__TCUR_INLINE 1 /* K: one 16-byte load */
#endif
struct ringbuf__tcur {
	uint64_t word __attribute__((aligned(16)));
	uint64_t me;
};
RINGBUF__TLS_DECL struct ringbuf__tcur ringbuf__tcur;
#if defined(RINGBUF__TCUR_INLINE) && defined(__x86_64__)
typedef long long ringbuf__v2di __attribute__((vector_size(16))); /* K's and J1's register */
#endif

#ifdef RINGBUF__TCUR_INLINE
/* K: both halves, one load ({AT&T|Intel} operand order: -masm=intel) */
RINGBUF__INLINE void ringbuf__tcur_get(uint64_t *word, uint64_t *me)
{
#if defined(__x86_64__)
	ringbuf__v2di v;
	__asm__ volatile("movdqa {%1, %0|%0, %1}" : "=x"(v) : "m"(ringbuf__tcur));
	*word = (uint64_t)v[0];
	*me = (uint64_t)v[1];
#else
	uint64_t lo, hi;
	__asm__ volatile("ldp %0, %1, %2" : "=r"(lo), "=r"(hi) : "Q"(ringbuf__tcur));
	*word = lo;
	*me = hi;
#endif
}
#endif

/* the word alone */
RINGBUF__INLINE uint64_t ringbuf__tcur_word(void)
{
	return *(volatile uint64_t *)&ringbuf__tcur.word;
}

/* a store of the word (OUT, ARM; J0 in a unit without K) or of me, between
 * signal fences */
RINGBUF__INLINE void ringbuf__tcur_store(uint64_t *at, uint64_t v)
{
	RINGBUF__BARRIER();
	*(volatile uint64_t *)at = v;
	RINGBUF__BARRIER();
}

/* J1, and J0 where the unit has K: the word and me in one store, so that
 * the next event's K (one 16-byte load) is served from the store buffer. A
 * 16-byte load over two 8-byte stores still in the store buffer cannot take
 * its value from them: it waits until they (and every store before them:
 * the event's own) have reached the cache. On an AMD EPYC VM that was
 * about 4 ns of RINGBUF_CPU_CURRENT's +7.2 ns over an explicit index. One
 * instruction: no handler runs between the halves. */
RINGBUF__INLINE void ringbuf__tcur_set(uint64_t word, uint64_t me)
{
	RINGBUF__BARRIER();
#if defined(RINGBUF__TCUR_INLINE) && defined(__x86_64__)
	ringbuf__v2di v = {(long long)word, (long long)me};
	__asm__ volatile("movdqa {%1, %0|%0, %1}" : "=m"(ringbuf__tcur) : "x"(v));
#elif defined(RINGBUF__TCUR_INLINE)
	__asm__ volatile("stp %1, %2, %0" : "=Q"(ringbuf__tcur) : "r"(word), "r"(me));
#else
	/* not reached: without K the reserve never runs inline (tcur is
	 * false), and J0 stores the word alone */
	*(volatile uint64_t *)&ringbuf__tcur.word = word;
	*(volatile uint64_t *)&ringbuf__tcur.me = me;
#endif
	RINGBUF__BARRIER();
}

/* J0: me is J1's (the word is BUSY until this store: no handler wrote) */
RINGBUF__INLINE void ringbuf__tcur_idle(const struct ringbuf *rb)
{
#ifdef RINGBUF__TCUR_INLINE
	ringbuf__tcur_set(rb->tclaim_key | 1, *(volatile uint64_t *)&ringbuf__tcur.me);
#else
	ringbuf__tcur_store(&ringbuf__tcur.word, rb->tclaim_key | 1);
#endif
}

/* BUSY for rb: the claim word of the thread's inline event, else 0 */
#define RINGBUF__TCUR_BUSY_MIN 3u /* above ARMED and OUT, below any claim word */
RINGBUF__INLINE uint32_t ringbuf__tcur_busy(const struct ringbuf *rb)
{
	uint64_t w = ringbuf__tcur_word() - rb->tclaim_key;
	return w - RINGBUF__TCUR_BUSY_MIN <= UINT32_MAX - RINGBUF__TCUR_BUSY_MIN ? (uint32_t)w : 0;
}
#endif

/* PER-CPU BLOCKS (>>contexts): the owner word of CPU buffer `cpu` taken by
 * a restartable sequence, x86-64 only (elsewhere the CAS). Outside the C11
 * model, argued in >>contexts PER-CPU BLOCKS and modelled in
 * verify/percpu_claim.c:
 *   S1 rs->rseq_cs = this sequence's descriptor (the kernel looks at it
 *      when it preempts, migrates or signals the thread);
 *   S2 [start] rseq's cpu_id == cpu (else: not taken);
 *   S3 c->owner == 0 (else not taken);
 *   S4 [commit] c->owner = me, a plain store (on x86-64: a release store;
 *      S3 is an acquire load);
 *   S5 rs->rseq_cs = 0, on every way out: the descriptor lives in the code
 *      that ran the sequence, and the kernel reads it at the thread's next
 *      preemption or signal, also after a dlclose() unmapped that code
 *      (it then kills the thread: SIGSEGV).
 * Preemption, migration or a signal between S2 and S4 restarts at the
 * abort handler, which reports "not taken": nothing was stored. So the
 * sequences of CPU `cpu` never interleave, and nothing else changes this
 * word from 0 (ringbuf__owner_take0): from S3 to S4 the word stays 0. The abort handler sits in its
 * own section behind glibc's signature (RSEQ_SIG 0x53053053: the 4 bytes
 * before the abort address); the descriptor is 32-byte aligned in
 * __rseq_cs. Both sections join the section group of the function they are
 * in ("?": an inline function of a C++ program, emitted in a COMDAT group
 * by several translation units, keeps one copy of code and descriptor;
 * without it the linker dropped the code and kept the descriptor, which
 * then named a discarded section). ThreadSanitizer cannot see the store:
 * not under it. */
#if defined(RINGBUF__HAVE_RSEQ) && defined(__x86_64__) && !defined(RINGBUF_PORTABLE) && \
	!defined(__SANITIZE_THREAD__)
#define RINGBUF__RSEQ_CLAIM 1
#endif
#if defined(RINGBUF__RSEQ_CLAIM) && defined(__has_feature)
#if __has_feature(thread_sanitizer)
#undef RINGBUF__RSEQ_CLAIM
#endif
#endif

#ifdef RINGBUF__RSEQ_CLAIM
/* ringbuf__rseq_cpu in a block that claims by sequence: its rb->rseq is
 * __rseq_offset, copied at creation. Loaded from ld.so's __rseq_offset on
 * every event, the CPU number cost 2.3 ns more per RINGBUF_CPU_CURRENT
 * event than from a copy in the program's own memory (Intel Xeon VM,
 * rb_current_16, alternating runs; the same number of loads: why ld.so's
 * copy costs more there was not found). */
RINGBUF__INLINE char *ringbuf__rseq_area(uint32_t off)
{
	return (char *)__builtin_thread_pointer() + off;
}
/* the CPU number from the area (one thread-pointer read for it and the
 * sequence: ringbuf__rseq_take takes the same area) */
RINGBUF__INLINE int32_t ringbuf__rseq_cpu_at(const char *rs)
{
	return *(const volatile int32_t *)(const void *)(rs + 4);
}
#endif

#ifdef RINGBUF__RSEQ_CLAIM
RINGBUF__INLINE bool ringbuf__rseq_take(char *rs, struct ringbuf__cpu *c, uint32_t cpu, uint64_t me)
{
	/* rs: ringbuf__rseq_area(rb->rseq), rb->rseq being __rseq_offset */
	__asm__ goto(".pushsection __rseq_cs, \"aw?\"\n\t"
		     ".balign 32\n\t"
		     "3: .long 0, 0\n\t"
		     ".quad 1f, 2f - 1f, 4f\n\t"
		     ".popsection\n\t"
		     ".pushsection __rseq_failure, \"ax?\"\n\t"
		     ".byte 0x0f, 0xb9, 0x3d\n\t"
		     ".long 0x53053053\n\t"
		     "4: jmp %l[no]\n\t"
		     ".popsection\n\t"
		     "leaq 3b(%%rip), %%rax\n\t"
		     "movq %%rax, 8(%[rs])\n\t" /* S1 */
		     "1: cmpl %[cpu], 4(%[rs])\n\t" /* S2 */
		     "jnz %l[no]\n\t"
		     "cmpq $0, %[own]\n\t" /* S3 */
		     "jnz %l[no]\n\t"
		     "movq %[me], %[own]\n\t" /* S4 */
		     "2:\n\t"
		     :
		     : [rs] "r"(rs), [cpu] "r"(cpu), [own] "m"(*(volatile uint64_t *)&c->owner), [me] "r"(me)
		     : "memory", "cc", "rax"
		     : no);
	*(volatile uint64_t *)(void *)(rs + 8) = 0; /* S5 */
	return true;
no:
	*(volatile uint64_t *)(void *)(rs + 8) = 0; /* S5 */
	return false;
}
#endif

/* ---- the write path's common case -------------------------------------- */

/* Out of line (>>writer): everything the inline code below leaves. */
RINGBUF_API void *ringbuf__reserve_slow(struct ringbuf *rb, unsigned cpu, size_t len);
RINGBUF_API void *ringbuf__reserve_refused(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c);
RINGBUF_API void *ringbuf__reserve_next(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c,
					uint32_t evlen, uint32_t depth, uint64_t first_ts);
RINGBUF_API void ringbuf__commit_slow(struct ringbuf *rb, unsigned cpu, void *data);
RINGBUF_API void ringbuf__end_commit(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c);

/* The common case of A-D for the outermost writer: same page, delta fits,
 * stamps consistent. Anything else, or a nested writer that moved things
 * between our loads and the CAS, goes to the full loop, which starts over.
 * The caller checked rb->ts_mode == RINGBUF_TS_DELTA; align8: the flag. */
RINGBUF__INLINE void *ringbuf__reserve_fast(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c,
					  uint32_t evlen, bool align8)
{
	uint32_t t, w;
	struct ringbuf__bpage *tb;
	uint64_t wfull, before, after, ts, delta;
	unsigned char *dst;
	/* a nested writer here may set RINGBUF__SLOT_GONE in our slot ([SLOT]) */
	RINGBUF__TESTPOINT(rb, RINGBUF__CPU_OF(rb, c, cpu), RINGBUF__TP_FAST_ENTERED);
	/* [CLOCK-FIRST] The clock before A's loads (the full loop reads it
	 * after them, as the kernel does): only rb and c live across its call,
	 * not the page, the write word, the stamps and the event's address. A
	 * writer nested between this read and A's loads (test point
	 * FAST_CLOCK) is complete when they run, and stamped at or after ts:
	 * A finds write_stamp >= ts (equal: an event at the same time, before
	 * ours, delta 0), or write_stamp above ts (delta wraps), or the
	 * stamps unequal (it discarded an event it could not roll back: the
	 * padding keeps its time). The last two go to the full loop, which
	 * reads the clock again (ringbuf__reserve_next's first_ts;
	 * test_clock_inline, clock_read_early_then_a_nested_discard_*). Still
	 * after the entry ([M2]: committing before the clock). */
	ts = ringbuf__clock(rb);
	RINGBUF__BARRIER();
	RINGBUF__TESTPOINT(rb, RINGBUF__CPU_OF(rb, c, cpu), RINGBUF__TP_FAST_CLOCK);
	t = RINGBUF__LOAD(&c->tail_page);
	tb = ringbuf__cbp(rb, c, t);
	wfull = RINGBUF__LOAD(&tb->write);
	w = (uint32_t)(wfull & RINGBUF__WRITE_MASK);
	RINGBUF__BARRIER();
	before = RINGBUF__LOAD(&c->before_stamp);
	after = RINGBUF__LOAD(&c->write_stamp);
	RINGBUF__BARRIER();
	/* delta above 27 bits: rare (an idle gap of 134 ms, a clock going
	 * back, a writer nested since the clock read). The full loop starts
	 * with ts where it still stands (a page's first event, a time extend:
	 * one clock read per event, as before) and reads the clock again where
	 * it does not */
	if (RINGBUF__UNLIKELY(w == 0 || before != after || w + evlen > rb->bsize))
		return ringbuf__reserve_next(rb, RINGBUF__CPU_OF(rb, c, cpu), c, evlen, 1, ts);
	delta = ts - after; /* wraps above RINGBUF__TS_MASK when ts < after */
	if (RINGBUF__UNLIKELY(delta > RINGBUF__TS_MASK))
		return ringbuf__reserve_next(rb, RINGBUF__CPU_OF(rb, c, cpu), c, evlen, 1, ts);
	/* P1 (SLOT: P1 to C) */
	ringbuf__slot_describe(rb, cpu, c, 1, t, wfull, w, true);
	dst = ringbuf__cdp(rb, c, t)->data + w;
	RINGBUF__TESTPOINT(rb, RINGBUF__CPU_OF(rb, c, cpu), RINGBUF__TP_A_TIME);
	if (RINGBUF__UNLIKELY(!ringbuf__slot_claim(rb, cpu, c, 1, tb, wfull, evlen)))
		return ringbuf__reserve_next(rb, RINGBUF__CPU_OF(rb, c, cpu), c, evlen, 1, RINGBUF__NO_TS);
	RINGBUF__STORE(&c->before_stamp, ts); /* B */
	RINGBUF__BARRIER();
	RINGBUF__TESTPOINT(rb, RINGBUF__CPU_OF(rb, c, cpu), RINGBUF__TP_B_BEFORE);
	if (RINGBUF__UNLIKELY(!ringbuf__local_cas(&tb->write, wfull, wfull + evlen))) /* C */
		return ringbuf__reserve_next(rb, RINGBUF__CPU_OF(rb, c, cpu), c, evlen, 1, RINGBUF__NO_TS);
	ringbuf__local_inc(&tb->entries);
	/* ours now, whatever a nested writer that took this place and rolled
	 * back left in it */
	RINGBUF__STORE(&c->slots[0].len, evlen);
	RINGBUF__BARRIER();
	RINGBUF__TESTPOINT(rb, RINGBUF__CPU_OF(rb, c, cpu), RINGBUF__TP_C_RESERVED);
	RINGBUF__STORE(&c->write_stamp, ts); /* D */
	RINGBUF__BARRIER();
	RINGBUF__TESTPOINT(rb, RINGBUF__CPU_OF(rb, c, cpu), RINGBUF__TP_D_WRITE_STAMP);
	return ringbuf__put_event_a(align8, dst, evlen, (uint32_t)delta);
}


RINGBUF__INLINE void *ringbuf__reserve_index(struct ringbuf *rb, unsigned cpu, size_t len);
RINGBUF__INLINE void *ringbuf__reserve_on(struct ringbuf *rb, struct ringbuf__cpu *c, unsigned cpu, size_t len);
RINGBUF__INLINE void *ringbuf__reserve_outer(struct ringbuf *rb, struct ringbuf__cpu *c, unsigned cpu, size_t len,
					   bool tcur, uint64_t k1, uint64_t me);
RINGBUF__INLINE void ringbuf__commit_outer(struct ringbuf *rb, struct ringbuf__cpu *c, unsigned cpu, void *data);
RINGBUF__INLINE void ringbuf__commit_on(struct ringbuf *rb, struct ringbuf__cpu *c, unsigned cpu, void *data);
RINGBUF__INLINE void *ringbuf__current_reserve(struct ringbuf *rb, size_t len);
RINGBUF__INLINE void ringbuf__commit_index(struct ringbuf *rb, unsigned cpu, void *data);

/* The index written as the constant 0: valid in every handle (ringbuf__layout
 * refuses ncpu 0, at creation and at each open's validation), so the inline
 * paths skip its test against ncpu (a variable index keeps it). */
#define RINGBUF__INDEX_0(cpu) (RINGBUF__IS_CONST(cpu) && (cpu) == 0)

/* ringbuf_reserve for the outermost writer of an explicit CPU index: enter
 * (committing = 1), then A-D on the tail page. Nested writers, mapped writer
 * contexts, bad arguments and RINGBUF_DEBUG builds take ringbuf__reserve_slow,
 * which runs the same entry and ringbuf__reserve_fast for depth 1. */
RINGBUF__INLINE void *ringbuf__reserve_inline(struct ringbuf *rb, unsigned cpu, size_t len)
{
#ifdef RINGBUF_DEBUG
	return ringbuf__reserve_slow(rb, cpu, len);
#else
	unsigned x = cpu;
	/* len - 1 wraps for 0: one compare for 1 <= len <= max_event, in a
	 * packed, delta-stamped buffer (inline_max is 0 in any other) */
	if (RINGBUF__UNLIKELY(!rb || len - 1 >= (size_t)rb->inline_max))
		return ringbuf__reserve_slow(rb, cpu, len);
	/* The mode written as the constant (as callers do): its path straight
	 * through, not the cold branch below that an index in a variable
	 * keeps for it (one taken jump out and one back per event: the
	 * per-thread mapping +1.0 ns over an explicit index with the mode in a
	 * variable, +0.7 with the constant, make bench rb_thread_16). */
	if (RINGBUF__IS_CONST(cpu) && cpu == RINGBUF_CPU_THREAD) {
		struct ringbuf__cpu *c = ringbuf__thread_claim(rb);
		if (RINGBUF__LIKELY(c != NULL))
			return ringbuf__reserve_on(rb, c, RINGBUF_CPU_THREAD, len);
		return ringbuf__reserve_slow(rb, cpu, len);
	}
	if (RINGBUF__IS_CONST(cpu) && cpu == RINGBUF_CPU_CURRENT)
		return ringbuf__current_reserve(rb, len);
	if (RINGBUF__UNLIKELY(!RINGBUF__INDEX_0(cpu) && x >= rb->ncpu)) {
		struct ringbuf__cpu *c;
		if (x == RINGBUF_CPU_CURRENT)
			return ringbuf__current_reserve(rb, len);
		if (x != RINGBUF_CPU_THREAD || !(c = ringbuf__thread_claim(rb)))
			return ringbuf__reserve_slow(rb, cpu, len);
		return ringbuf__reserve_on(rb, c, RINGBUF_CPU_THREAD, len);
	}
	return ringbuf__reserve_index(rb, x, len);
#endif
}

/* ringbuf__reserve_inline for a valid index 0..ncpu-1, len checked against
 * inline_max (so the buffer's events are packed and delta-stamped). */
RINGBUF__INLINE void *ringbuf__reserve_index(struct ringbuf *rb, unsigned cpu, size_t len)
{
	return ringbuf__reserve_on(rb, ringbuf__cpu(rb, cpu), cpu, len);
}

/* The same on CPU struct c: cpu is its index, or RINGBUF_CPU_THREAD for a
 * mapped writer's buffer (RINGBUF__CPU_OF). */
RINGBUF__INLINE void *ringbuf__reserve_on(struct ringbuf *rb, struct ringbuf__cpu *c, unsigned cpu, size_t len)
{
	if (RINGBUF__UNLIKELY(RINGBUF__LOAD(&c->committing) != 0))
		return ringbuf__reserve_slow(rb, RINGBUF__CPU_OF(rb, c, cpu), len); /* nested */
	return ringbuf__reserve_outer(rb, c, cpu, len, false, 0, 0);
}

/* The same for the outermost writer: committing was 0. tcur (a constant):
 * RINGBUF_CPU_CURRENT's inline reserve, which stores [TCUR]'s J1 {k1, me}
 * once the writer is in (committing 1) and undoes it (J0) before a refused
 * or failed reservation lets committing go back to 0 (while the slot is
 * BUSY, committing == 1 names its event: INLINE in >>contexts). */
RINGBUF__INLINE void *ringbuf__reserve_outer(struct ringbuf *rb, struct ringbuf__cpu *c, unsigned cpu, size_t len,
					   bool tcur, uint64_t k1, uint64_t me)
{
	void *ev;
	/* No reservation at depth 1 yet: the slot may still describe the last
	 * event; recovery after a kill must not take it for one in flight. */
	RINGBUF__STORE(&c->slots[0].len, 0);
	RINGBUF__BARRIER();
	/* a handler here writes at depth 1 too, and leaves the slot's len 0
	 * whether it succeeds or fails (ringbuf__reserve_next's fail) */
	RINGBUF__TESTPOINT(rb, RINGBUF__CPU_OF(rb, c, cpu), RINGBUF__TP_ENTERING);
	/* Enter before checking the disable flags: reset_cpu disables, then
	 * (membarrier) waits for committing to drop to 0. */
	RINGBUF__STORE(&c->committing, 1);
	/* [M2] the light side of the merged readers' membarrier(): committing
	 * is stored before the clock is read (>>design, MERGED READERS) */
	RINGBUF__BARRIER();
#ifdef RINGBUF__TCUR
	if (tcur) {
		RINGBUF__TESTPOINT(rb, RINGBUF__CPU_OF(rb, c, cpu), RINGBUF__TP_CURRENT_ENTERED);
		ringbuf__tcur_set(k1, me); /* J1: BUSY and me */
		RINGBUF__TESTPOINT(rb, RINGBUF__CPU_OF(rb, c, cpu), RINGBUF__TP_CURRENT_HELD);
	}
#else
	(void)tcur;
	(void)k1;
	(void)me;
#endif
	if (RINGBUF__UNLIKELY(ringbuf__disabled(rb, c))) {
#ifdef RINGBUF__TCUR
		if (tcur)
			ringbuf__tcur_idle(rb); /* J0 */
#endif
		return ringbuf__reserve_refused(rb, RINGBUF__CPU_OF(rb, c, cpu), c);
	}
	/* packed events, deltas (the caller's test of len against inline_max):
	 * the event length and header folded for a constant len */
	ev = ringbuf__reserve_fast(rb, cpu, c, ringbuf__event_length_a(false, len), false);
	if (RINGBUF__UNLIKELY(!ev)) {
#ifdef RINGBUF__TCUR
		if (tcur)
			ringbuf__tcur_idle(rb); /* J0 */
#endif
		ringbuf__end_commit(rb, RINGBUF__CPU_OF(rb, c, cpu), c);
	}
	return ev;
}

/* RINGBUF_CPU_CURRENT, the outermost event's common case in the caller
 * (INLINE in >>contexts): [TCUR] ARMED for rb, G1, G2, the reserve on the
 * buffer as its outermost writer, J1. Anything else goes out of line, which
 * starts again at G1. */
RINGBUF__INLINE void *ringbuf__current_reserve(struct ringbuf *rb, size_t len)
{
#ifndef RINGBUF__TCUR_INLINE
	return ringbuf__reserve_slow(rb, RINGBUF_CPU_CURRENT, len);
#else
	struct ringbuf__cpu *c;
	int32_t b;
	uint64_t word, me, zero = 0;
	void *p;
	ringbuf__tcur_get(&word, &me); /* K */
	if (RINGBUF__UNLIKELY(word - 1 != rb->tclaim_key)) /* not ARMED for rb */
		return ringbuf__reserve_slow(rb, RINGBUF_CPU_CURRENT, len);
#ifdef RINGBUF__RSEQ_CLAIM
	/* G1; a block that claims by sequence was made where glibc registered
	 * rseq (ringbuf__rseq_usable: __rseq_size, fixed at start-up, kept by
	 * fork): the CPU number straight from the thread's rseq area */
	char *rs = NULL;
	if (RINGBUF__LIKELY(rb->rseq)) {
		rs = ringbuf__rseq_area(rb->rseq);
		b = ringbuf__rseq_cpu_at(rs);
	} else
		b = ringbuf__rseq_cpu();
#else
	b = ringbuf__rseq_cpu(); /* G1 */
#endif
	/* negative (not registered: -1, -2) is above any cpu_bufs, unsigned */
	if (RINGBUF__UNLIKELY((uint32_t)b >= rb->cpu_bufs))
		return ringbuf__reserve_slow(rb, RINGBUF_CPU_CURRENT, len);
	c = ringbuf__cpu(rb, (unsigned)b);
#ifdef RINGBUF__RSEQ_CLAIM
	/* G2 by restartable sequence (PER-CPU BLOCKS in >>contexts): S1-S5 */
	if (RINGBUF__LIKELY(rs != NULL)) {
		(void)zero;
		if (RINGBUF__UNLIKELY(!ringbuf__rseq_take(rs, c, (uint32_t)b, me)))
			return ringbuf__reserve_slow(rb, RINGBUF_CPU_CURRENT, len);
	} else
#else
	/* a translation unit built without the sequence (another compiler,
	 * RINGBUF_PORTABLE, TSan) on a block whose implementation has it: a CAS
	 * on a word that sequences take would give it two owners (PER-CPU
	 * BLOCKS), so out of line (the implementation's sequence) */
	if (RINGBUF__UNLIKELY(rb->rseq))
		return ringbuf__reserve_slow(rb, RINGBUF_CPU_CURRENT, len);
#endif
	/* G2: acq_rel, as ringbuf__take's (THE OWNER WORD) */
	if (RINGBUF__UNLIKELY(!atomic_compare_exchange_strong_explicit(&c->owner, &zero, me, memory_order_acq_rel,
								       memory_order_relaxed)))
		return ringbuf__reserve_slow(rb, RINGBUF_CPU_CURRENT, len);
	RINGBUF__TESTPOINT(rb, (unsigned)b, RINGBUF__TP_CURRENT_TAKEN);
	/* the outermost writer of the buffer only: a handler of a thread inside
	 * ringbuf_reserve(rb, b, ...) gives the word back and goes out of line
	 * (its event nests there), so that committing == 1 names this event
	 * while the slot is BUSY */
	if (RINGBUF__UNLIKELY(RINGBUF__LOAD(&c->committing) != 0)) {
		atomic_store_explicit(&c->owner, 0, memory_order_release); /* G5 */
		return ringbuf__reserve_slow(rb, RINGBUF_CPU_CURRENT, len);
	}
	/* J1 in the reserve (BUSY, with the owner id read with the key:
	 * word - 1 is the key; the claim word is c's offset, from c: no load
	 * of cpu_off again after the entry's compiler barriers) */
	p = ringbuf__reserve_outer(rb, c, RINGBUF_CPU_THREAD, len, true, word - 1 + (uint64_t)((char *)c - (char *)rb),
				   me);
	if (RINGBUF__UNLIKELY(!p)) {
		/* refused or failed: J0 done, the writer out */
		RINGBUF__TESTPOINT(rb, (unsigned)b, RINGBUF__TP_CURRENT_UNDONE);
		atomic_store_explicit(&c->owner, 0, memory_order_release); /* G5 */
		return NULL;
	}
	RINGBUF__TESTPOINT(rb, (unsigned)b, RINGBUF__TP_CURRENT_RESERVED);
	return p;
#endif
}

/* Do the armed waiters of `waiters` wait for c's CPU (or any)? The armed
 * CPU is stored with the armed bits (WAITING in >>design, 6.). The index
 * comes from c: a commit's cpu argument may be RINGBUF_CPU_CURRENT or
 * RINGBUF_CPU_THREAD. */
RINGBUF__INLINE bool ringbuf__wait_for_cpu(const struct ringbuf *rb, const struct ringbuf__cpu *c,
					   uint64_t waiters)
{
	uint32_t f = RINGBUF__WAIT_CPU(waiters);
	return f == 0 || f == RINGBUF__WAIT_ANY || f == (uint32_t)(c - ringbuf__cpu(rb, 0)) + 1;
}

/* [WAIT-W] Must this commit look at the waiters (ringbuf__wake_check)? Not
 * when the armed waiters all wait for another CPU. A reader waiting for
 * data: yes. One waiting for a watermark of dirty pages: only when this
 * CPU's pages_touched moved since the last check (dirty pages grow only
 * then), so commits within a page pay two loads, not a walk. */
RINGBUF__INLINE bool ringbuf__wake_due(const struct ringbuf *rb, struct ringbuf__cpu *c, uint64_t waiters)
{
	if (RINGBUF__LIKELY(!(waiters & (RINGBUF__WAIT_DATA | RINGBUF__WAIT_FULL))))
		return false;
	if (!ringbuf__wait_for_cpu(rb, c, waiters))
		return false;
	return (waiters & RINGBUF__WAIT_DATA) ||
	       RINGBUF__LOAD(&c->pages_touched) != RINGBUF__LOAD(&c->wake_seen);
}

/* The common case of ringbuf__set_commit_to_write for the outermost writer,
 * its event counted: commit and tail on one page, nobody nested meanwhile, no
 * reader waiting. Returns false when the general walk (ringbuf__end_commit)
 * must finish the commit, with committing still 1. */
RINGBUF__INLINE bool ringbuf__commit_fast(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c)
{
	uint64_t n = RINGBUF__LOAD(&c->commits);
	uint32_t tp = RINGBUF__LOAD(&c->tail_page);
	struct ringbuf__bpage *tb;
	uint64_t wfull, w;
	(void)cpu;
	if (RINGBUF__UNLIKELY(RINGBUF__LOAD(&c->commit_page) != tp))
		return false;
	tb = ringbuf__cbp(rb, c, tp);
	wfull = RINGBUF__LOAD(&tb->write);
	w = wfull & RINGBUF__WRITE_MASK;
	/* [W-commit] release: the event bytes before the commit */
	atomic_store_explicit(&ringbuf__cdp(rb, c, tp)->commit, (long)w, memory_order_release);
	RINGBUF__BARRIER();
	RINGBUF__TESTPOINT(rb, RINGBUF__CPU_OF(rb, c, cpu), RINGBUF__TP_COMMIT_END);
	/* A writer nested after our load of n (from here to the store of 0
	 * below, or before: in the loads above) added RINGBUF__COMMITS_NESTED
	 * when it entered, and reserved on this page or moved the tail: the
	 * check of commits after the 0 walks again. Until then committing is 0
	 * with its event reserved and not committed: the merged readers' [R2]
	 * and ringbuf_quiesce's Q2/Q4 look at the pages for that reason
	 * (ringbuf__quiet, [Q-PEND]). No re-check of tail and write index here:
	 * it caught only what the check of commits catches (6 instructions). */
	RINGBUF__TESTPOINT(rb, RINGBUF__CPU_OF(rb, c, cpu), RINGBUF__TP_COMMIT_FAST_CHECKED);
	/* [M3] release: pairs with ringbuf_reset_cpu's and the merged readers'
	 * acquire */
	atomic_store_explicit(&c->committing, 0, memory_order_release);
	RINGBUF__BARRIER();
	RINGBUF__TESTPOINT(rb, RINGBUF__CPU_OF(rb, c, cpu), RINGBUF__TP_COMMIT_FAST_ZERO);
	if (RINGBUF__LIKELY(RINGBUF__LOAD(&c->commits) == n &&
			    !ringbuf__wake_due(rb, c, atomic_load_explicit(&ringbuf__sh(rb)->waiters, memory_order_relaxed)))) {
		/* [M1] everything reserved is committed (nobody entered since
		 * our load of n): the merged readers' lower bound for what this
		 * CPU reserves next (release: after the page commits) */
		atomic_store_explicit(&c->inflight_ts, RINGBUF__LOAD(&c->write_stamp), memory_order_release);
		/* [Q-X] one more outermost exit, after the walk and the 0
		 * (release: pairs with ringbuf_quiesce's acquire; a handler
		 * running as outermost between the check and this store stores
		 * the same count: it moves once for two exits) */
		atomic_store_explicit(&c->commits, n + 1, memory_order_release);
		return true;
	}
	/* a writer started after our check, or a reader waits: the general path
	 * (committing back to 1) */
	RINGBUF__STORE(&c->committing, 1);
	RINGBUF__BARRIER();
	return false;
}

/* ringbuf_commit for the outermost writer of an explicit CPU index. */
RINGBUF__INLINE void ringbuf__commit_inline(struct ringbuf *rb, unsigned cpu, void *data)
{
#ifdef RINGBUF_DEBUG
	ringbuf__commit_slow(rb, cpu, data);
#else
	unsigned x = cpu;
	if (RINGBUF__UNLIKELY(x == RINGBUF_CPU_CURRENT) && rb && data) {
#ifdef RINGBUF__TCUR
		/* the thread's inline event ([TCUR] BUSY for rb) as the
		 * buffer's outermost writer: J0, the commit, G5 here; a nested
		 * event (committing > 1) and any other state: out of line
		 * (INLINE in >>contexts) */
		uint32_t w = ringbuf__tcur_busy(rb);
		struct ringbuf__cpu *c = (struct ringbuf__cpu *)(void *)((char *)rb + w);
		if (RINGBUF__LIKELY(w != 0) && RINGBUF__LIKELY(RINGBUF__LOAD(&c->committing) == 1)) {
			ringbuf__tcur_idle(rb); /* J0 (between compiler barriers) */
			RINGBUF__TESTPOINT(rb, ringbuf__claim_index(rb, w), RINGBUF__TP_CURRENT_RELEASED);
			ringbuf__commit_outer(rb, c, RINGBUF_CPU_THREAD, data);
			RINGBUF__TESTPOINT(rb, ringbuf__claim_index(rb, w), RINGBUF__TP_CURRENT_UNHELD);
			atomic_store_explicit(&c->owner, 0, memory_order_release); /* G5 */
			return;
		}
#endif
		ringbuf__commit_slow(rb, cpu, data);
		return;
	}
	/* The mode written as the constant: straight through, as in
	 * ringbuf__reserve_inline (the test below would take it to a cold
	 * branch and back: two taken jumps and 3 more instructions per event,
	 * bench_instr rb_thread_16) */
	if (RINGBUF__IS_CONST(cpu) && cpu == RINGBUF_CPU_THREAD) {
		struct ringbuf__cpu *c;
		if (RINGBUF__LIKELY(rb && data && (c = ringbuf__thread_claim(rb)) != NULL))
			ringbuf__commit_on(rb, c, RINGBUF_CPU_THREAD, data);
		else
			ringbuf__commit_slow(rb, cpu, data);
		return;
	}
	if (RINGBUF__UNLIKELY(!rb || !data || (!RINGBUF__INDEX_0(cpu) && x >= rb->ncpu))) {
		struct ringbuf__cpu *c;
		if (rb && data && x == RINGBUF_CPU_THREAD && (c = ringbuf__thread_claim(rb)) != NULL)
			ringbuf__commit_on(rb, c, RINGBUF_CPU_THREAD, data);
		else
			ringbuf__commit_slow(rb, cpu, data);
		return;
	}
	ringbuf__commit_index(rb, x, data);
#endif
}

/* ringbuf__commit_inline for a valid index 0..ncpu-1, data not NULL. */
RINGBUF__INLINE void ringbuf__commit_index(struct ringbuf *rb, unsigned cpu, void *data)
{
	ringbuf__commit_on(rb, ringbuf__cpu(rb, cpu), cpu, data);
}

/* The same on CPU struct c: cpu is its index, or RINGBUF_CPU_THREAD for a
 * mapped writer's buffer (RINGBUF__CPU_OF). */
RINGBUF__INLINE void ringbuf__commit_on(struct ringbuf *rb, struct ringbuf__cpu *c, unsigned cpu, void *data)
{
	if (RINGBUF__UNLIKELY(RINGBUF__LOAD(&c->committing) != 1)) {
		ringbuf__commit_slow(rb, RINGBUF__CPU_OF(rb, c, cpu), data); /* nested */
		return;
	}
	ringbuf__commit_outer(rb, c, cpu, data);
}

/* The same for the outermost writer: committing is 1. */
RINGBUF__INLINE void ringbuf__commit_outer(struct ringbuf *rb, struct ringbuf__cpu *c, unsigned cpu, void *data)
{
	(void)data; /* the event is the buffer's one in flight */
	/* [SLOT-DONE] the event is complete: counted committed, then its slot
	 * cleared. A kill between the two leaves len set and entries_d one
	 * above the slot's `counted`: recovery keeps the event (committed);
	 * before the count, it pads it (not committed). Either way it is
	 * counted exactly when it is kept (ringbuf_recover). */
	ringbuf__owner_inc(&c->entries_d[0]);
	RINGBUF__BARRIER();
	RINGBUF__TESTPOINT(rb, RINGBUF__CPU_OF(rb, c, cpu), RINGBUF__TP_COUNTED);
	RINGBUF__STORE(&c->slots[0].len, 0);
	RINGBUF__BARRIER();
	if (RINGBUF__LIKELY(ringbuf__commit_fast(rb, cpu, c)))
		return;
	ringbuf__end_commit(rb, RINGBUF__CPU_OF(rb, c, cpu), c);
}

/* Callers get the inline versions; (ringbuf_reserve)(...) and the address of
 * the function still name the out-of-line ones. */
#ifndef RINGBUF_NO_INLINE
#define ringbuf_reserve(rb, cpu, len) ringbuf__reserve_inline((rb), (cpu), (len))
#define ringbuf_commit(rb, cpu, data) ringbuf__commit_inline((rb), (cpu), (data))
#endif
#endif /* RINGBUF__INLINE_INCLUDED */

#ifdef __cplusplus
}
#endif
#endif /* RINGBUF_H */

/* ======================================================================== */
/* ==== >>impl ============================================================ */
/* ======================================================================== */
#if defined(RINGBUF_IMPLEMENTATION) && !defined(RINGBUF_IMPLEMENTATION_INCLUDED)
#define RINGBUF_IMPLEMENTATION_INCLUDED 1

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__linux__)
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdio.h> /* rename */
/* declared by <unistd.h> only with _GNU_SOURCE/_DEFAULT_SOURCE; the same
 * prototype as glibc's and musl's, so a repeat is harmless */
extern long syscall(long number, ...);
extern int fchmod(int fd, mode_t mode); /* likewise hidden by strict -std=c11 */
extern int ftruncate(int fd, off_t length); /* likewise */
extern int madvise(void *addr, size_t length, int advice); /* likewise */
#if defined(MADV_RANDOM)
#define RINGBUF__MADV_RANDOM MADV_RANDOM
#define RINGBUF__MADV_NORMAL MADV_NORMAL
#else
#define RINGBUF__MADV_RANDOM 1 /* the same value on every Linux architecture */
#define RINGBUF__MADV_NORMAL 0
#endif
#define RINGBUF__ENOROOM EFAULT /* [POPULATE]: a store would raise SIGBUS */
#if defined(MADV_POPULATE_WRITE)
#define RINGBUF__MADV_POPULATE_WRITE MADV_POPULATE_WRITE
#else
#define RINGBUF__MADV_POPULATE_WRITE 23 /* Linux 5.14; the same value on every architecture */
#endif
/* an anonymous mapping for ringbuf_create. Strict -std=c11 hides
 * MAP_ANONYMOUS, and glibc 2.36's <sys/mman.h> then defines no other name for
 * it either (not __MAP_ANONYMOUS, not MAP_ANON): the kernel's value, which is
 * per architecture (without it ringbuf_create fell back to the allocator and
 * wrote every page: tests/core/test_strict_c11.c) */
#if defined(MAP_ANONYMOUS)
#define RINGBUF__MAP_ANON MAP_ANONYMOUS
#elif defined(__MAP_ANONYMOUS)
#define RINGBUF__MAP_ANON __MAP_ANONYMOUS
#elif defined(MAP_ANON)
#define RINGBUF__MAP_ANON MAP_ANON
#elif defined(__mips__) || defined(__xtensa__)
#define RINGBUF__MAP_ANON 0x800
#elif defined(__alpha__) || defined(__hppa__)
#define RINGBUF__MAP_ANON 0x10
#else
#define RINGBUF__MAP_ANON 0x20 /* asm-generic: x86, arm, arm64, riscv, powerpc, s390, sparc, loongarch */
#endif
/* O_CLOEXEC is POSIX 2008: strict -std=c11 hides it in glibc, which still
 * defines its internal name; never open without it */
#if defined(O_CLOEXEC)
#define RINGBUF__O_CLOEXEC O_CLOEXEC
#elif defined(__O_CLOEXEC)
#define RINGBUF__O_CLOEXEC __O_CLOEXEC
#else
#error "ringbuf.h: O_CLOEXEC not declared: define _POSIX_C_SOURCE 200809L (or _GNU_SOURCE) before the first #include"
#endif
#endif
#if !defined(__STDC_NO_THREADS__) && defined(__has_include)
#if __has_include(<threads.h>)
#include <threads.h>
#define RINGBUF__HAVE_THRD_YIELD 1
#endif
#endif
#ifndef RINGBUF__HAVE_THRD_YIELD
#include <sched.h>
#endif
#ifndef RINGBUF__ENOROOM
#define RINGBUF__ENOROOM (-1) /* never returned: ringbuf__populate is a no-op off Linux */
#endif

#if !defined(CLOCK_MONOTONIC) && defined(__linux__)
/* -std=c11 without _GNU_SOURCE/_POSIX_C_SOURCE before the first include */
struct timespec;
extern int clock_gettime(int, struct timespec *);
#define RINGBUF__CLOCK_ID 1 /* CLOCK_MONOTONIC on Linux */
#else
#define RINGBUF__CLOCK_ID CLOCK_MONOTONIC
#endif

#ifndef RINGBUF_ASSERT
#include <assert.h>
#define RINGBUF_ASSERT(c) assert(c)
#endif
#if defined(RINGBUF_MALLOC) != defined(RINGBUF_FREE)
#error "define both RINGBUF_MALLOC and RINGBUF_FREE, or neither"
#endif
#ifndef RINGBUF_MALLOC
#define RINGBUF__DEFAULT_ALLOC 1 /* ringbuf_create may map instead */
#define RINGBUF_MALLOC(sz, ctx) ((void)(ctx), malloc(sz))
#define RINGBUF_FREE(p, ctx) ((void)(ctx), free(p))
#endif

#if defined(ATOMIC_LONG_LOCK_FREE) && \
	(ATOMIC_LONG_LOCK_FREE != 2 || ATOMIC_LLONG_LOCK_FREE != 2 || ATOMIC_INT_LOCK_FREE != 2)
#error "ringbuf.h needs lock-free atomic int, long and long long (async-signal safety)"
#endif

/* ==== >>design ========================================================== *
 *
 * LAYERS. The implementation reads top-down; each section calls only those
 * above it (../shared/tools/layers.py ringbuf.h: 0 calls into a later
 * section, 0 pairs of sections that call each other):
 *   >>parse, >>platform   pages, records, clocks, thread ids, membarrier
 *   >>writer              the kernel's algorithm on one CPU buffer, named by
 *                         its index: reserve (A-D, move tail, head push),
 *                         commit walk, discard, drops
 *   >>reader, >>repair    the reader page swap and every reader built on it;
 *                         a dead reader's swap and a dead writer's buffer
 *                         made consistent (the kernel has no such step)
 *   >>control, >>stats    on/off, reset, quiesce, mode; counters
 *   >>contexts            RINGBUF_CPU_THREAD and RINGBUF_CPU_CURRENT: a thread
 *                         finds or takes a buffer (owner words, by CAS or a
 *                         per-CPU block's sequence), then calls >>writer with its index; the
 *                         out-of-line ringbuf_reserve / commit / discard
 *                         choose the buffer here, so >>writer never sees a
 *                         mapped mode; fork handling
 *   >>setup, >>file, >>lifecycle   layout and init_in, the clock of a block;
 *                         file and memfd blocks, validation, recovery;
 *                         create and destroy
 * >>inline (the header part) holds the common case of >>writer and
 * >>contexts, compiled into the caller; it calls the out-of-line code for
 * anything else.
 *
 * MEMORY. One block, relocatable: every link is an index, never an address.
 *
 *   struct ringbuf | (pad) | struct ringbuf__shdr | struct ringbuf__cpu[ncpu]
 *   | struct ringbuf__bpage[ncpu][npages + 1, to 8] | (pad to page size)
 *   | data pages [ncpu][npages] of page_size bytes
 *
 * PRIVATE HEADER. struct ringbuf holds the geometry (ncpu, nr_pages,
 * page_size, bsize, page_shift, max_event, flags, ts_mode, the offsets,
 * total_size, the user area), the clock's description (kind, name, TSC
 * ratio) and the process-local fields (owned, mem, map_len, shared, clock,
 * clock_ctx, gen): under 4 KiB (a static assert). struct ringbuf__shdr,
 * right before the CPU structs (ringbuf__sh: cpu_off minus its size, so the
 * private, validated cpu_off places it too), holds what the processes that
 * map a block share at run time (record_disabled, mode, the waiters, the
 * owner words, thread_shared, ...). A block of one process (ringbuf_create,
 * ringbuf_init_in) has it right behind the header; a block made to be
 * mapped by others (ringbuf_create_file, _shm) at RINGBUF__HDR_PRIV (65536,
 * a whole number of pages on 4, 16 and 64 KiB page kernels), the pad between
 * never written (a hole of the file, never resident), so that the header's
 * pages can be mapped apart from the rest:
 *   PH1  every MAP_SHARED mapping of a block (ringbuf_create_file,
 *        ringbuf_create_shm, ringbuf_open_file RDWR) maps its first 64 KiB
 *        (the header and the pad) again from the same descriptor and
 *        offset, MAP_PRIVATE | MAP_FIXED at the same address (ringbuf__hdr_private): the creator once the
 *        header is complete in the file (init_in done; the clock fields,
 *        addresses of the creator's, cleared in the file first), an opener
 *        right after its mmap;
 *   PH2  then the process stores to the header: an opener its
 *        process-local fields (owned first), the creator the header it wrote
 *        before PH1, put back whole (ringbuf__hdr_private_own: whatever
 *        another process made of the file's header in between, under the
 *        file's temporary name, stays the file's). A private page reads the
 *        file until the process first writes it; that store makes the kernel
 *        copy it (all fields share one page), and from the copy on no other
 *        process's store reaches it. The opener's compiler barrier keeps its
 *        loads of the geometry after the store; the copy-on-write fault is
 *        synchronous (the faulting store retires only once the page is the
 *        copy, and later loads read the copy).
 *   PH3  only then does an opener validate the geometry (ringbuf__validate_in,
 *        and total_size against the length it mapped, read before the copy
 *        by read(): a header changed in between is RINGBUF_ECORRUPT).
 * So a reader never uses a geometry value that changed after it was
 * validated: every geometry value a handle's calls use (offsets, sizes,
 * counts: ringbuf__cpu, _bp, _dp, the loop bounds) is loaded from the
 * handle's private copy, which only this process writes, and this process
 * writes geometry only in init_in, before PH1 (the creator) -- never after
 * PH3 (an opener). Another process's rewrite of the file's header reaches
 * only the opens that come after it, which validate it. The process-local
 * fields can no longer clobber each other either: each process's mem,
 * map_len, owned, clock and shared are its own (destroy unmaps with them).
 * A fork child inherits the private copy (copy-on-write again): the same
 * handle, the same geometry. A private view (no RDWR: owned 4, or
 * RINGBUF_OPEN_RECOVER) maps the whole file MAP_PRIVATE; it takes PH2 and
 * PH3 in the same order. An RDWR open of a block laid out for one process
 * (ringbuf_init_in's memory written to a file: cpu_off is not
 * RINGBUF__CPU_OFF_SHARED) is RINGBUF_EFORMAT, checked on the header read()
 * before PH1 (whose 64 KiB would cover its shared part) and again on the
 * copy. Blocks of one
 * process cost nothing more (ringbuf_size_needed is what it was, SPEC's 2%
 * of metadata holds); a file or memfd block is 64 KiB longer, a hole. Where
 * the system page does not divide 65536 (pages over 64 KiB) or the second
 * mmap fails, creating or opening a shared block fails with RINGBUF_ESYS
 * (errno EOPNOTSUPP, or mmap's): no fallback to a header other processes
 * can change. Fields other processes must see at run time are in the
 * shared part; the clock's description is fixed at creation for the
 * others: ringbuf_set_clock changes it in its own process's copy only,
 * and refuses (RINGBUF_EINVAL) a switch to or from TSC cycles on a shared
 * block, whose stamps the others would convert wrongly.
 *
 * Each CPU has nr_pages ring pages (index 0..nr_pages-1 at creation) and one
 * reader page (index nr_pages at creation); the indices move around as the
 * reader swaps pages. A data page is a kernel buffer_data_page:
 *
 *   u64 time_stamp | long commit | data[page_size - 16]    (LP64)
 *   u64 time_stamp | long commit | data[page_size - 12]    (ILP32: i686, armhf)
 *
 * in the CPU's byte order, with the records' u32 header word laid out as the
 * kernel's bitfield `type_len:5, time_delta:27` is by the compiler: type_len
 * in the low 5 bits on little-endian CPUs, in the top 5 on big-endian ones
 * (RINGBUF__HDR_WORD). With RINGBUF_F_ALIGN8 records stay multiples of 8 from
 * data[0] and the data area is rounded down to a multiple of 8
 * (ringbuf__data_size: ILP32 leaves the last 4 bytes of each page unused).
 *
 * SET-UP (ringbuf_init_in, ringbuf_create, ringbuf_create_file, _shm) costs
 * O(metadata): the block header, the per-CPU state and the page descriptors
 * (the write index and event count of a page live there, not in the page).
 * A data page is written only by the writers that reach it, when the block
 * is known to read as zero bytes:
 *   Z1  ringbuf_create maps fresh private anonymous memory; ringbuf_create_file
 *       a new file (O_EXCL) sized with ftruncate (a hole), ringbuf_create_shm
 *       a new memfd sized the same way. Each byte reads 0
 *       until something stores to it (the kernel fills a page with zeros, or
 *       maps its shared zero page for a read, at the first access), and only
 *       a store makes a page resident and dirty (a file block allocated).
 *       ringbuf_create_file turns read-around off (MADV_RANDOM) while the
 *       metadata pages fault in: on a disk file it would cache, clean, the
 *       holes of the data pages next to them. [PREFAULT] makes the metadata
 *       pages (and a file's user area, page 0 and the reader page of each
 *       CPU) present in one call first: no fault per page, and ENOSPC
 *       instead of SIGBUS where a file system cannot hold them. Every other
 *       data page is made present by the writer whose tail first enters it
 *       ([BACKED], M1b): a file system that fills up while tracing costs
 *       counted drops, not a SIGBUS.
 *   Z2  All-zero bytes are the value 0 of the header's time_stamp (uint64_t)
 *       and commit (long): C11 6.2.6.2 (no padding bits in these types on any
 *       target of this header; a lock-free _Atomic integer has the integer's
 *       representation with GCC and Clang).
 *   Z3  time_stamp 0, commit 0 is the empty page, the very state that
 *       atomic_init wrote before: readers, the iterator, ringbuf_read_page and
 *       ringbuf_recover parse data[] only below commit, so the data bytes of
 *       an empty page are never read, whatever they hold.
 *   Z4  Ordering: there is no store to order. The creator's descriptor
 *       stores and the fence before the magic (release) publish the block as
 *       before; every load of an untouched header, by any thread or process,
 *       reads the zero the kernel put there before mmap returned, which is
 *       the initial value of the object (as if atomic_init(.., 0) had run
 *       before the publication). The first store to a header is a writer's
 *       or a reader's, ordered by the protocol as for any later store.
 *   Z5  Caller memory (ringbuf_init_in without RINGBUF_F_ZEROED, or
 *       RINGBUF_MALLOC) may hold anything: each page header is stored
 *       (atomic_init: 16 bytes per page, so every data page is touched).
 * ringbuf_reset_cpu (R5) still stores every page header: the pages hold old
 * events there. ringbuf_recover reads a zero header as an empty page.
 *   Z6  Opening (ringbuf_open_file) reads no page that is a hole of the file:
 *       its commit field is 0 by Z1-Z2, which passes the range check
 *       without a load (ringbuf__is_hole: SEEK_DATA/SEEK_HOLE on the open
 *       descriptor). A read through a shared mapping would allocate a
 *       tmpfs/memfd hole. A hole filled after the question is no different
 *       from a page a live writer fills after validation.
 *   Z7  ringbuf_recover has no descriptor: it reads no data page whose
 *       write index (in the page descriptor) is 0, neither to validate its
 *       commit nor to count its events (ringbuf__unwritten_page). Such a page
 *       holds nothing of this lap: the tail never reached it (usually a hole)
 *       or just entered it (recovery's commit step stores its commit, 0). A
 *       recorder's final recovery of a 16 x 2 MiB memfd/tmpfs buffer holding
 *       1,000 events allocated 33,172 KiB before, 404 KiB now (test_setup).
 *
 * RING. Links are `next` words in the page descriptors:
 *
 *     next = tag << RINGBUF__TAG_SHIFT | index << 2 | flags      flags: HEADER 1, UPDATE 2
 *
 * The HEADER flag sits in the link of the page *before* the head page. Picture
 * (H: head page, C: commit page, T: tail page, R: reader page, ==H==> a link
 * carrying HEADER):
 *
 *        R (off ring, owned by the reader)
 *        |  R.next points at its old successor only while swapping
 *        v
 *   [P] ==H==> [H] ---> [ ] ---> [C] ---> [T] ---> [ ] ---> [P]   (ring, circular)
 *
 * Ring order from the head: H <= C <= T. The tag is bumped by every CAS on a
 * link, so a CAS never succeeds on a link that changed and changed back (ABA)
 * unless 2^32 CASes passed between its load and its CAS. Links, `write` and
 * `entries` are 64-bit on every platform: a 32-bit build with `unsigned long`
 * words had 10 tag bits and 11 update-count bits, few enough for a preempted
 * reader or a parked iterator to see them wrap (test_owners).
 * Only the reader changes the ring's shape (swap); writers only move flags.
 *
 * WRITERS nest like a stack: a writer can be interrupted at any instruction by a
 * signal handler that writes to the same CPU buffer, and so on, to
 * RINGBUF_MAX_NEST levels. The interrupting writer completes before the
 * interrupted one resumes; it never waits for it. `committing` is the nesting
 * depth; only the outermost writer (depth 1) moves the commit pointer, and it
 * commits everything nested writers reserved meanwhile.
 *
 * RESERVE (ringbuf__reserve_next), the labelled steps are where a nested writer
 * may cut in; RINGBUF__TESTPOINT() marks each one for the injection tests:
 *
 *   A  read tail page T, its write index w, before_stamp, write_stamp, clock ts
 *   B  before_stamp = ts
 *   C  CAS T.write: w -> w + len        (fails if anyone reserved since A: retry)
 *   D  write_stamp = ts
 *
 * Time stamps (a simpler design than the kernel's, made possible by C's CAS):
 * an event's delta is relative to the physically previous event. At A the
 * writer trusts write_stamp as that event's time only when before_stamp ==
 * write_stamp: a writer between B and D leaves them unequal, so a writer nested
 * in that window writes an absolute TIME_STAMP instead. A nested writer between
 * A and C makes the CAS at C fail, so the outer writer re-reads everything. An
 * event at offset 0 of a page uses the page's time_stamp (delta 0), never a
 * stamp. ringbuf_discard() sets before_stamp to an impossible value before
 * rolling back, so the event after a rolled-back one is absolute too. Hence
 * every delta is exact and time stamps never go backwards on a CPU buffer
 * (with a monotonic clock; a clock seen going backwards is clamped).
 *
 * CROSSING A PAGE. A reservation that does not fit claims the page end with the
 * CAS at C (w + len > page data size), pads [w, end) (PADDING with a length, or
 * a 4-byte null padding), sets T.write back to the page data size, then moves
 * the tail (ringbuf__move_tail) and retries on the next page. A nested writer
 * that finds T.write beyond the end (the claimant was interrupted before it
 * padded) helps move the tail without touching T.
 *
 * MOVING THE TAIL from T to N = T.next (ringbuf__move_tail; M1 loads T.next,
 * M1b makes N present the first time a tail enters it ([BACKED]: no room
 * in the file system -> dropped_events), M2 loads the commit page and, N
 * being the head, the reader page, M3 re-checks, M4 counts a drop or moves on):
 *   - N is the commit page: the ring is full of uncommitted data -> commit_overrun.
 *   - T.next carries HEADER/UPDATE (N is the head page, the ring is full):
 *       commit still on the reader page -> commit_overrun, but only if T.next
 *       is unchanged when re-loaded after the reader page (M3): between M1
 *       and M2 the reader may swap N out (the ring has room again) and then
 *       swap T, the commit page, in; the commit is then on the reader page
 *       but the ring is not full. C11: the reader's two swaps are, in its
 *       program order, S3 of the first (CAS on T.next, seq_cst) then S2 of
 *       the second (reader_page = T, seq_cst store). M2's acquire load of
 *       reader_page reading T synchronizes with that store, so the CAS
 *       happens before the re-load, which by coherence reads it or a later
 *       value: never the M1 value (every CAS bumps the tag). The commit page
 *       itself cannot move meanwhile (only the outermost writer moves it,
 *       and it is us or a writer we interrupted). Without M3: issue 11 item
 *       14, shown by verify/swap_writer.c -DOLD_PROTOCOL;
 *       producer/consumer mode -> dropped_events;
 *       overwrite mode -> push the head (ringbuf__push_head):
 *         H1  read N's event count (N.entries, below) and N.next, store the
 *             push mark of our depth ([PUSH-MARK], HEAD PUSH ACCOUNTING
 *             below), then CAS T.next HEADER -> UPDATE (we own the push; both
 *             reads are valid because neither N nor N.next can change while
 *             T.next still holds HEADER), then count it ([PUSH-COUNT])
 *         H2  owner: CAS N.next from the value read at H1 to HEADER (fails if a
 *             helper did it or went further); a nested writer that finds UPDATE
 *             on T.next helps: counts the push for its owner ([PUSH-HELP]),
 *             then sets HEADER on N.next only if the tail is still T
 *             and no link further on holds HEADER (the reader may have swapped
 *             the new head out meanwhile, moving the flag on)
 *         H3  the owner clears UPDATE on T.next
 *   - tail page update (ringbuf__tail_page_update), the kernel's interrupt-count
 *     trick: add RINGBUF__WRITE_INTCNT to N.write and N.entries (U1), if the
 *     tail is still T CAS each from that value to its count bits only (U2:
 *     fails if a nested writer already moved in and reserved), then CAS
 *     tail_page T -> N (U3).
 *
 * LOSS ACCOUNTING. Every event lost is counted once and reported once, in
 * the stream, where it happened:
 *   - overwritten: a head push adds the head page's event count to overrun
 *     (H1, [PUSH-COUNT]; overrun is the sum of per-depth counters, see HEAD
 *     PUSH ACCOUNTING). The reader reads overrun after its link load and before its S3
 *     CAS (both seq_cst, [L]): a push that took a page before H happened
 *     before the CAS that found H the head, so its count is in that load:
 *     whoever makes that CAS (H2) counted the push before it, the owner
 *     ([PUSH-COUNT]) or a writer nested in the owner between its claim and
 *     its count that helps ([PUSH-HELP], HEAD PUSH ACCOUNTING). Before
 *     [PUSH-HELP] the helper's H2 and tail move came before the owner's
 *     count: the loss came out one page late, with the next page a reader
 *     took (test_head_push_race, consumer_reports_a_helped_push_*); the
 *     difference to the last swap goes to lost_pending (at S2, before
 *     the CAS: a cut swap never counts it twice), reported with the first
 *     event of H, or of a later head if the CAS fails (rec.lost, or
 *     read_page's stored count).
 *   - dropped (dropped_events, commit_overrun): when the tail enters N it
 *     stores the drop total in N.drops (monotonic max, U1..U2): drops before
 *     N's first event. The reader adds N.drops minus the last total it
 *     reported when it swaps N in. A drop is decided (M2) before it is
 *     counted (M4); a nested writer cutting in between that moves the tail
 *     (the reader made room meanwhile) took its snapshot without it, so after
 *     counting, a writer that finds the tail moved raises the snapshot of the
 *     page after T (ringbuf__drop). All these stores are the writer's own
 *     thread (relaxed); the reader reads N.drops after its S3 CAS: a raise it
 *     does not see is reported with a later page, whose snapshot is higher
 *     (late by a page, never lost, never counted twice: last_drops only grows).
 *   - ringbuf_read_page stores the count after the page's data (RB_MISSED_
 *     EVENTS | RB_MISSED_STORED), holding events back for the next page to
 *     make room; a page whose first event leaves no room goes out unflagged
 *     and the count stays pending for the next page with room (never a flag
 *     without its count). ringbuf_read_page_ref lends no such page (EAGAIN).
 *   - the iterator counts in events what writers pushed out beyond its
 *     walk, loading overrun only while no push is between its claim and its
 *     count (see the iterator's notes in >>reader).
 *
 * PAGE EVENT COUNT (bpage.entries, the kernel's bpage->entries): +1 with one
 * non-LOCK instruction after each successful reservation CAS (C), -1 by a
 * discard (rolled back or padded: the page cannot have been recycled, the
 * commit has not passed it), reset at U1/U2 as above and by the reader at S2
 * (the page is off the ring), recounted from the pages by ringbuf_recover.
 * A head push adds it to overrun: the head page is behind the commit page, so
 * every increment on it has happened.
 *
 * INLINE FAST PATH (>>inline, in the caller): the outermost writer with an
 * explicit index (or a RINGBUF_CPU_THREAD buffer found through the thread's
 * claim word [TCLAIM], or a RINGBUF_CPU_CURRENT buffer claimed inline: INLINE in
 * >>contexts) enters (slot len 0, committing = 1),
 * checks the disable flags, reads the clock before A's loads ([CLOCK-FIRST]
 * at ringbuf__reserve_fast: a writer nested between the two shows as a
 * write_stamp above the time read), then runs A-D only when the write index is not 0,
 * before_stamp == write_stamp, the event fits the page, the delta fits 27 bits
 * and the mode is delta: one clock read, one slot description, one CAS, one
 * count. Its commit stores the page commit when commit page == tail page and,
 * after committing = 0, checks that no writer entered since its first load
 * (commits: a nested entry adds RINGBUF__COMMITS_NESTED) and no reader needs
 * waking. Anything
 * else calls the out-of-line code, which starts over from A (nothing of the
 * fast path's attempt survives a failed CAS).
 *
 * INSTRUCTION COUNT (bench/bench_instr.c, callgrind, a counter clock: one
 * 16-byte event, reserve + copy + commit, the constant index 0): 125.0 at
 * the commit that wrote this (168.8 before issue 24's work; the floor, a
 * bare thread-local append of the same 24 bytes, 15.0). An index in a
 * variable, or another constant, adds its two tests against ncpu (about 4:
 * RINGBUF__INDEX_0). Where they go, from
 * callgrind_annotate --auto=yes (--dump-instr=yes), rounded:
 *   caller   7  the loop, the 16-byte copy, the NULL test
 *   clock   14  kind tests (TSC, MONO) 3, the call through rb->clock 7
 *               (a file block's too: ringbuf__clock_shared_fn, no test of
 *               `owned`), the counter itself 4; no spills: read before A's
 *               loads ([CLOCK-FIRST]), only rb and the CPU struct live
 *               across the call (with P1 and the event's address before
 *               the call and A's loads before them, 8 instructions of
 *               spills and reloads)
 *   entry   14  len/rb against inline_max 4 (the mode folded in:
 *               ringbuf__inline_max), CPU address 2, committing == 0 3,
 *               slot len 0 1, committing = 1 1, disable flags 3
 *   A-D     48  loads of tail, write, stamps 4, the page's address 3, the
 *               fast condition (w != 0, stamps equal, fits, delta in 27
 *               bits) 10, P1 5 (its len = 0 is the entry's), the event's
 *               address 4, P2 3, P3 4 (one xadd, 1.2 ns faster than
 *               a cmpxchg: ringbuf__local_xadd32),
 *               B 1, CAS C 5 (a compare after each cmpxchg: a branch on its
 *               flags saves it and costs time, ringbuf__local_cas), page
 *               count 1, slot len 1, D 1, header word 4, register
 *               moves 2
 *   commit   9  data NULL 2, CPU address 2, committing == 1 3, entries_d
 *               (one incq) 1, slot len 0 1
 *   fast    25  commits, tail, commit page == tail 5, the write index and
 *               page addresses 7, the page commit 3, committing = 0 [M3] 1,
 *               commits unchanged and no waiter 7 (with the waiters'
 *               address), inflight_ts [M1] 2, commits + 1 [Q-X] 2 (no re-check of tail and
 *               write: the check of commits covers a writer nested after the
 *               page commit, which adds RINGBUF__COMMITS_NESTED)
 *   other    8  the slow path's share (a new page every 204 events),
 *               register moves
 * RINGBUF_CPU_THREAD adds 15 (140.0): the thread's claim word ([TCLAIM])
 * loaded twice (reserve and commit: one load at a fixed offset from the
 * thread pointer, the handle's key subtracted, one range test, one add).
 * What costs time is the chain of dependent loads before the CPU struct's
 * first field, more than the count: through the thread's last entry (its
 * index, then the entry's gen and claim) the same path was +4.2 ns over an
 * explicit index, +3.1 with the entry kept as a byte offset (no multiply
 * on the chain), +0.7 through the one word (Intel Xeon VM, alternating
 * runs). The claim word is the CPU struct's offset in the block
 * (ringbuf__claim_word), so the struct is one add away, with no index
 * check and no shift by its 1024 bytes; the index is worked out only off
 * the fast path (RINGBUF__CPU_OF). Issue 24's goals (110 and 125) are not met.
 * They are this count less the slot ([SLOT]), which costs 15 per event:
 * P1's page, off, event and counted 5, P2 3, P3's xadd and test 4, and
 * len = 0 at the entry, len = evlen after C and len = 0 at the commit 3
 * (callgrind, per line). The slot is what lets recovery pad exactly the
 * bytes in flight and never a complete event. Recovery uses it after a
 * kill, in a fork() child whose parent was mid-write (test_fork parks a
 * writer at each step), and in a takeover of a dead thread's buffer.
 * ringbuf_discard's rollback and the head push's loss counts
 * ([PUSH-COUNT]) read it too. So the goals sit at the write path without
 * crash recovery. Beyond the slot,
 * what is left is each step's own loads, stores and checks (every one is
 * argued above for nesting, crash recovery or exact accounting), address
 * arithmetic that the signal fences make the compiler redo in the commit
 * (the CPU struct, the page addresses from the page index), and spills
 * around the clock's call. Not done, each a change of protocol or layout:
 * skipping the entry's slot len 0 (only every way
 * out of a reservation, takeover and recovery included, shown to leave len
 * 0 would let the entry skip it; the fast path's P1 relies on it), one word
 * for the disable flags (ringbuf_reset_cpu's protocol, and the global
 * counter's enable/disable from any thread), page
 * addresses carried from reserve to commit (the API gives the commit only
 * the payload pointer; the slot's off + len is not the page's write index
 * when a writer nested before the commit's first load).
 *
 * COMMIT (ringbuf__set_commit_to_write, outermost writer only): walk commit_page
 * to tail_page, storing each page's write index into its data page's commit
 * (release), then publish commit = write on the tail page; repeat while a
 * nested writer moved the tail meanwhile; after dropping `committing` to 0,
 * repeat if `commits` shows a writer started meanwhile.
 *
 * HOSTILE MEMORY. A shared block's other process (ringbuf-record's traced
 * process) may change any byte of it at any moment, validated at the open or
 * not. The reader path (reader lock, S1-S4, read_page, read_page_ref,
 * consume, the iterator, stats) therefore loads each page index and commit it uses once
 * into a local and checks it (index <= nr_pages, commit <= bsize) before it
 * names a page with it; a value that fails is RINGBUF_ECORRUPT, never an
 * access outside the block; loops over pages are bounded by the page count
 * (find_head 3 laps, a read_page of padding-only pages one lap and a half,
 * the swap 64 tries), and find_head never goes round one page: a reader
 * page that links to itself is left for the tail page, a ring page that
 * does is RINGBUF_ECORRUPT. Records are parsed against that one commit, and a
 * page handed out by reference is copied once and checked from the copy by
 * its user (ringbuf_tracedat's A1-A2). The geometry that bounds all of this
 * (nr_pages, bsize, the offsets, ncpu) is the handle's private copy, changed
 * by no other process after it was validated (PRIVATE HEADER above;
 * test_record_hostile.c: header_changed_after_the_open). Not covered:
 * ringbuf_recover, which assumes the writers are gone (docs/files-and-recorder.md, Limits;
 * tests/tools/test_record_hostile.c); and the write path: a handle that
 * writes into a shared block trusts its other writers (the inline path
 * takes each CPU struct's page offsets and tail page index from the block
 * unchecked, so a process that rewrites them can make another's writes land
 * outside the block).
 *
 * READER SWAP (ringbuf__get_reader_page, serialized by the per-CPU reader lock):
 *   S1  find the head page H: the page whose prev's link carries HEADER
 *       (a ring page whose prev is R or does not link to it cannot happen
 *       under the lock: RINGBUF_ECORRUPT; ringbuf_recover sets the prevs
 *       from the links, ringbuf__repair_prev)
 *   S2  prepare R: R.next = H.next | HEADER, reader_page = H (published early
 *       so a writer never pushes the head over a commit that is being swapped out),
 *       then the overrun (read after S1's link load) goes into lost_pending
 *   S3  CAS P.next: H|HEADER -> R. Fails while a writer holds UPDATE or moved
 *       the head: reader_page = R again, retry (bounded; a writer interrupted
 *       mid-push is never waited for indefinitely: the reader returns
 *       RINGBUF_EAGAIN)
 *   S4  the reader's state for H: head hint, read = 0, read stamp, H's drops
 *       (a monotonic max); last, the completion mark hn.prev = R (hn = H.next)
 * A reader killed mid-swap (its lock left held; ringbuf_recover, the reader
 * lock's takeover of a dead holder and a fork child run ringbuf__repair_reader)
 * leaves one of three shapes, all that S1-S4 can leave:
 *   before reader_page = H: reader_page = R, off the ring. R's fields may be
 *       reset, R.next/prev set: R is read to its end and off the ring, so none
 *       of it matters (the next swap prepares R again). Nothing to repair.
 *   after reader_page = H, before S3: H is in the ring (P links to it) and R
 *       is off it, prepared (R.prev == P, R.next == H.next's index | HEADER).
 *       ringbuf_open_file's validation (V0, >>file) accepts exactly this shape
 *       with the lock held and checks the ring against R; the repair undoes
 *       the swap: reader_page = R, the state a failed S3 leaves. lost_pending
 *       already holds the pages lost before H, and they precede any later head
 *       too: no loss is told twice or missed.
 *   after S3, before the mark: H is off the ring and hn.prev still names H
 *       (a ring page's prev changes only at a mark, to the page entering the
 *       ring before it, so once the mark is stored it names H again only
 *       after H re-entered the ring). The repair redoes S4: every
 *       store but pages_read is idempotent (pages_read, a statistic, counts a
 *       swap cut between the mark and its add once less).
 * Every committed event stays readable exactly once: R held only read events,
 * H's events are read from offset 0 after the repair, and the counts are the
 * writers' (untouched by the swap). The overrun a cut swap put in lost_pending
 * is told with the next event read, which comes from H or a later head, even
 * when the repair undid the swap (tests/files/test_swap_kill.c).
 * The reader never reads past a page's commit, so it never sees a half-written
 * event or half-written padding (kernel bug a0fcaaed0c46 cannot happen).
 *
 * READER LOCK (ringbuf__reader_lock): one word per CPU, 0 or the holder's id
 * (tid, pid namespace tag, thread start time); bounded (64 yields, then 500
 * sleeps of 1 ms: RINGBUF_EBUSY); a holder found gone (no such thread in
 * /proc, a zombie, another start time) is replaced by a CAS from its very id
 * and the swap it may have been cut in is repaired. Details and limits where
 * it lives.
 *
 * WAITING (ringbuf_wait; the writer's side costs one relaxed load of
 * ringbuf__sh(rb)->waiters per outermost commit while nobody waits). ringbuf__sh(rb)->waiters is one
 * 64-bit word: lowest watermark (pages, 0: none) << 32 | armed CPU << 16 |
 * waiter count (14 bits) << 2 | FULL | DATA (the armed bits: a data waiter,
 * a watermark waiter). The armed CPU is cpu + 1 when every armed waiter
 * waits for that CPU, RINGBUF__WAIT_ANY otherwise (RINGBUF_ALL_CPUS, or
 * waiters for different CPUs). The futex
 * word is ringbuf__sh(rb)->wait_seq, bumped (release) before each FUTEX_WAKE.
 *
 *   waiter, each pass                      writer, each outermost commit
 *   R1 seq = wait_seq (acquire)            (page touched, event committed:
 *   R2 CAS waiters: set bit, armed CPU,     [W-commit] release)
 *      lower the watermark to ours,        [WAIT-W] w = waiters (relaxed), no fence;
 *      count +1 the first time (seq_cst)    armed for this CPU (or any) and (DATA,
 *   R3 membarrier (ringbuf__wait_fence)     or FULL and a new page touched): W2
 *   R4 ready? -> leave (R6), return 1      W2 ringbuf__wake_check: dirty pages of
 *   R5 FUTEX_WAIT(wait_seq, seq)              its CPU >= watermark (or DATA): CAS
 *   R6 leave: CAS count -1; the last one      waiters clearing the armed bits and CPU
 *      clears the word; one holding the       (acquire; retried while the word
 *      lowest watermark clears it and FULL    changes), wait_seq++ (release),
 *      (acq_rel) and, others left, bumps      FUTEX_WAKE
 *      wait_seq and wakes them
 *
 * Why no wake-up is lost (C11; membarrier is the heavy side of an asymmetric
 * fence: every thread that runs our process's code passes a full barrier
 * while it runs -- an IPI, or the context switch of one not running -- so
 * each writer behaves as if it had a seq_cst fence F somewhere, ordered
 * between R3's entry and exit; the writers' code with F in any place, GenMC
 * verify/wait_wake.c):
 *   1. F between the writer's commit and its load of waiters: a plain
 *      store-buffering pair of seq_cst fences. Either R4 reads the commit
 *      (and the dirty-page count stored before it), or [WAIT-W] reads R2's
 *      value or a later one. F elsewhere only gives more (R4 reads the commit,
 *      or [WAIT-W] reads R2).
 *   2. [WAIT-W] read R2 or later, armed: W2's CAS succeeds on a value that
 *      follows R2 in waiters' modification order (every write to it is an
 *      RMW, so it reads R2's release sequence: R2 synchronizes with it), so
 *      R1 happens before W2's bump: R1 did not read it, and R5 returns (the
 *      kernel compares wait_seq under the futex bucket lock; a wake that
 *      follows the bump finds a queued waiter). The CAS fails only when the
 *      word changed: it retries on the new value.
 *   3. Not armed any more in what [WAIT-W] read (later than R2): someone
 *      cleared the bits after R2 -- a writer (2. applies to it) or a leaving
 *      waiter R6 (the same argument: its CAS is acquire, its bump follows).
 *   4. The watermark read is never above ours while we are counted: R2
 *      lowers it in the same CAS that arms; only R6 of a waiter holding the
 *      lowest raises it (to none, clearing FULL), and that waiter then bumps
 *      wait_seq, so we re-arm with ours (3.). Early wake-ups are allowed: the
 *      waiter only returns after R4, else it goes round again.
 *   5. wake_seen: a writer skips W2 while only FULL is armed and its CPU
 *      touched no new page since its last W2; dirty pages only grow with a
 *      touched page, and a waiter arming later sees the count itself (1.).
 *   6. The armed CPU: a writer of CPU X skips W2 when the word it read names
 *      another CPU (X from the buffer it committed to, whatever its call's
 *      cpu argument: RINGBUF_CPU_CURRENT and _THREAD resolve to one). Our R2 stores ours (or ANY) in the same CAS as our bit,
 *      and the field is narrowed only by an R2 that finds no bit armed, i.e.
 *      after a W2 or the last R6 cleared the bits (3.: we were woken, or not
 *      counted); R6 keeps it with DATA. So any value mo-after R2 with bits
 *      armed and no clear in between covers X, and [WAIT-W] reads R2 or
 *      later (1.). A waiter for X has nothing to gain from another CPU's
 *      commit (R4 looks at X only): before, such commits woke a waiter for
 *      one CPU at nearly every commit (999 FUTEX_WAKE calls per 1,000
 *      commits of another CPU, paced; test_wait 8. counts 0 now). A
 *      waiter that finds 16383 counted (the count's limit) does not arm: it
 *      sleeps in slices, uncounted (as without membarrier).
 * Without a usable membarrier (ENOSYS, EPERM under seccomp, nohz_full for
 * MEMBARRIER_CMD_GLOBAL) or on a shared block with an opener that could not
 * register for MEMBARRIER_CMD_GLOBAL_EXPEDITED, 1. does not hold: the waiter
 * sleeps at most RINGBUF__WAIT_SLICE_MS (10 ms) at a time and looks again,
 * so a missed wake costs latency, never a hang. Shared blocks (file-backed,
 * MAP_SHARED: writers in other processes) use MEMBARRIER_CMD_GLOBAL_EXPEDITED
 * (every opener, and a fork child, registers); private ones
 * MEMBARRIER_CMD_PRIVATE_EXPEDITED; MEMBARRIER_CMD_GLOBAL (slow) if those
 * fail. A waiter killed while counted leaves its count (and watermark) in the
 * word: later waiters get early wake-ups, never late ones. Futex: the
 * waiting call takes a kernel timespec; where SYS_futex_time64 exists (32-bit
 * ABIs, whatever time_t the program uses) it is used with a 64-bit pair, then
 * SYS_futex with the old (long, long) pair on kernels before 5.1; without any
 * futex call the waiter sleeps 1 ms at a time.
 *
 * MEMORY ORDERS (the kernel's local_t becomes relaxed atomics, its barrier()
 * atomic_signal_fence; `owner` = the writing thread and its signal handlers;
 * `sh->` = the words processes share, ringbuf__sh(rb), PRIVATE HEADER):
 *
 *   field               written by        read by           order, pairs with
 *   data page commit    owner [W-commit]  reader [R-commit] release / acquire: event bytes before commit
 *   commit_page         owner [W-cpage]   reader [R-cpage]  release / acquire: page commit before the page pointer
 *   bpage.next links    owner, reader     owner, reader     CAS seq_cst both sides [L]: overrun before new HEADER
 *   reader_page         reader [S2]       owner (move tail) seq_cst store before S3 / acquire after a link load
 *   committing          owner             reset_cpu         release store at 0 / acquire load: writer done before reset
 *   disabled counters   control           owner             relaxed at entry (acquire under TSan); a reset's bit:
 *                                                           R2 / R7 release RMW, [RESET-W] acquire load, and
 *                                                           membarrier for store->load order (>>control, RESET)
 *   T.write, stamps,    owner             owner             relaxed + signal fences (same thread)
 *   entries_d, slots,
 *   wake_seen
 *   bpage.entries       owner (C, U1/U2)  owner (push)      relaxed; non-LOCK inc/dec/CAS on x86-64
 *                       reader (S2, off ring)
 *   page update count   owner (U1), reader (S2) iterator     release fence after U1 / acquire fence
 *     (write >> bits)                                       after the iterator's copy (seqlock)
 *   bpage.drops         owner (U1-U2,     reader (after S3) relaxed, monotonic max; a raise the reader
 *                       ringbuf__drop)                      misses shows with a later page
 *   overrun_d[d],       owner at depth    reader (S2-S3),   relaxed; ordered by the link CASes [L];
 *   pages_lost_d[d]     d + 1 (H1)        iterator, stats   plain stores (one writer per depth)
 *   committing (entry)  owner [M2]        merged readers    relaxed, then [M2] (signal fence: the light
 *                                         [R1]/[R2]         side of the readers' membarrier) before the
 *                                                           clock read; see MERGED READERS
 *   committing = 0      owner [M3]        merged readers    release / acquire: the commits before it
 *                       recovery          [R2], reset R4,   [REC-M3] release, last: the repair (links,
 *                       [REC-M3]          quiesce Q4        padding, commits, page counts) before it
 *   inflight_ts         owner [M1]        merged readers    release / acquire: the page commits before it
 *     (outermost exit)                                      (everything reserved is committed then)
 *   commits             owner             owner             relaxed (nesting detection: any change)
 *     (outermost +1)    owner [Q-X]       ringbuf_quiesce   release store at each outermost exit, after
 *                                         (Q3, Q4)          its walk and committing = 0 / acquire: the
 *                                                           page commits before it
 *   owner word          any writer thread other writers     CAS acq_rel to take / store release
 *     (mapped modes)                                        to give back (G2 / G5); acquire load
 *                                                           to judge a dead owner (>>contexts)
 *   sh->release_gen     thread_release,   threads without   fetch_add release / load acquire (F6 / F1);
 *                       thread_shared     a claim (F1)      a hint: ownership is the owner word's CAS
 *   sh->thread_shared   thread_shared     F1-F4             relaxed (which buffers F2 / F4b scan)
 *   statistics          owner/reader      anyone            relaxed (a snapshot)
 *   sh->waiters         waiters (R2, R6)  writers [WAIT-W]  CAS seq_cst / acq_rel; writer load relaxed +
 *                       writers (W2)                        membarrier, CAS acquire (see WAITING)
 *   sh->wait_seq        W2, R6,           waiters (R1)      fetch_add release / load acquire; futex word
 *                       wake_waiters
 *   reader_lock         readers           readers           CAS acquire to take / store release to drop
 *   reset_gen           reset_cpu (R5,    iterator (its     relaxed load, ordered by the reader lock (R8
 *                       last)             overrun base)     release / the lock's CAS acquire); the store
 *                                                           is release, after R5's zeros: for a lock taken
 *                                                           over from a reset killed in R5 ([RESET-GEN])
 *
 * MERGED READERS (ringbuf_consume_merged, the RINGBUF_ALL_CPUS iterator). Each
 * peeks every CPU and picks the oldest head, time stamp B. A CPU whose head was
 * seen cannot show an older event later (stamps never go back within a CPU).
 * For every other CPU X, an event E of X older than B may still be on its way:
 * committed but not yet visible, or being written. The pick is handed out only
 * when no such E can exist:
 *   [R1] membarrier(): every writer whose clock read returned less than B has
 *        its entry (committing != 0) visible to the loads that follow
 *   [R2] is X quiet (ringbuf__quiet: committing 0, acquire, and the tail
 *        page committed up to its write index)? Then every entry before is
 *        committed and visible. Else load inflight_ts (acquire): below B, the
 *        writer in flight may still commit an older event: RINGBUF_EAGAIN
 *   [R3] peek X again: an older head there is the new pick (the CPUs checked
 *        against the newer pick are covered for the older one, as is [R1])
 *   [R4] consume the pick only if it is still the head it was (same time
 *        stamp, under the reader lock): a reset of that CPU in between threw
 *        it away, and the newer head in its place could be newer than other
 *        CPUs' heads: RINGBUF_EAGAIN, nothing consumed
 * The C11 argument, per pair (the clock is a counter read with a relaxed RMW:
 * its reads are totally ordered, later reads return more, and they
 * synchronize no memory):
 *   [M2]/[R1] The writer stores committing, then [M2], then reads the clock.
 *        membarrier() runs a full barrier on every thread of the process at
 *        some instruction while the call runs, which is an seq_cst fence F_w
 *        at [M2] (if it lands before the clock read retires, the stamp is
 *        read after the barrier began, so it is newer than B and than T0;
 *        if after, the committing store precedes it, all a fence at [M2]
 *        gives); the reader's side is an seq_cst fence F_r. An event E
 *        stamped below B: its clock read is mo-before the one that stamped
 *        B, which happens-before F_r (the reader saw B's page commit with
 *        acquire) so F_w psc F_r, and no load after F_r reads a committing
 *        value older than E's entry store. The same holds for any stamp V of
 *        the writers' clock whose read happens before F_r, so one barrier
 *        covers every pick up to max(B, V): the per-thread (consume_merged)
 *        or per-iterator `fenced` mark; a barrier per catch-up, not per
 *        event. V must be in the writers' time base: a mark in another one
 *        can be a value no later pick reaches, and [R1] would never be made
 *        again (issue 22.2: a process that opened a file block only to read
 *        reads CLOCK_MONOTONIC while the writers stamp with a counter). So V
 *        is T0, a clock read through the handle just before the barrier,
 *        only where the handle reads the writers' clock: a block of this
 *        process (its writers use this handle's clock), or the TSC (no
 *        process of a shared block can switch to or from it). For a file or
 *        memfd block (default or user clock: each process's own, CLOCKS OF
 *        SHARED BLOCKS) V is the largest inflight_ts of the CPUs, loaded with
 *        acquire before the barrier: it pairs with [M1], whose release
 *        follows the writer's copy of write_stamp, a clock read of the
 *        writers' (or one it was clamped to), so that read happens before
 *        F_r as B's does. It lags "now" by at most one event per CPU.
 *   [M3]/[R2] committing = 0 is a release after the page commits of the
 *        entry ([W-commit]); it is stored only by the outermost writer, after
 *        its page commit. A writer nested after that page commit (its
 *        reservation sequenced before the 0) leaves its event reserved and
 *        not committed until the outermost one, checking commits after the
 *        0, walks again ([Q-PEND]): so [R2] also loads the tail page's write
 *        index after the acquire of 0, which shows that reservation, and
 *        takes X as quiet only where the page commit (acquire) has reached
 *        it. Reading both, being mo-after every entry store of [R1], the
 *        reader sees every event stamped below B committed. (Reading 0
 *        alone, it handed out a newer event of another CPU before the nested
 *        one: test_merged_order, *_nested_in_the_commit_window.)
 *   [M1]/[R2] inflight_ts = write_stamp, stored (release) by an outermost
 *        writer as it leaves, after its check of commits found that nobody
 *        entered since its walk: every event reserved until then is
 *        committed, its page commit before the release, and every event
 *        reserved later is stamped at least write_stamp (stamps never go
 *        back within a CPU). Read (acquire) at v >= B: the events of X
 *        older than B are committed and visible, whichever entry's
 *        committing the reader saw. Stored at the entry instead (the old
 *        [M1]), it was wrong in ringbuf__commit_fast's window: with two
 *        events nested in the outermost writer V after its page commit (not
 *        yet committed, [Q-PEND]) and a handler entering as outermost after
 *        V's committing = 0, the entry raised inflight_ts to the newer
 *        nested stamp over the older one, and a reader in that handler's
 *        event handed out another CPU's event stamped between them first
 *        (test_merged_order, *_under_an_entry_in_the_commit_window). The
 *        bound a reader sees while X is in flight is the last exit's
 *        write_stamp: what the entry stored, except in that window.
 *   [R3] The re-peek reads the page commit with acquire ([R-commit]): every
 *        event older than B is in X's buffer now, or consumed before.
 * The clock must be one global monotonic clock, read in the same order by all
 * CPUs: CLOCK_MONOTONIC, a synchronized invariant TSC, or a user clock with
 * that property. `commits` is no longer read by readers (the old guard
 * compared it and read the current inflight_ts only: a writer that committed
 * an older event and entered again above B let B out; and it stopped at CPU
 * 64). A block shared with other processes uses GLOBAL_EXPEDITED: each
 * process that creates or opens a block for writing registers for it. Where
 * no membarrier() is available (seccomp, old kernels) the reader's own fence
 * is all there is: a rare inversion remains possible (docs/reading.md, Limits).
 *
 * CONTROL CALLS vs WRITERS (>>control). Each control call may come at any
 * labelled step of a writer's event, from another thread or from a signal
 * handler of the writer's own thread, and takes effect for later events only:
 *   - record_off/on, record_disable/enable(_cpu): an RMW of a counter the
 *     writer loads once, at entry, after entering (committing = depth). An
 *     event that passed the check completes and commits; one refused leaves
 *     its count (disabled_events) and nothing else. Nested writers check for
 *     themselves.
 *   - set_mode: one relaxed store; a writer loads the mode once per decision
 *     (ringbuf__move_tail, ring full): the head is pushed (overrun) or the
 *     event dropped (dropped_events), counted either way.
 *   - thread_release: inside one of the thread's own events on its claimed
 *     buffer (committing != 0) it does nothing: the event's commit still finds
 *     the claim, and no other thread can take the buffer under it.
 *   - reset_cpu / reset: never writes what a writer uses on entering or
 *     leaving (committing, commits, inflight_ts, slots, the owner word), keeps
 *     writers out of the pages with a bit in `disabled`, an asymmetric barrier
 *     on each side of the re-initialisation, and a check of the bit before the
 *     commit walk ([RESET-W], the one step a refused or re-entering writer
 *     takes in the pages); readers out with the reader lock. The argument in
 *     the C11 model is at ringbuf_reset_cpu (>>control, RESET);
 *     verify/reset_writer.c checks it with GenMC (RC11, IMM).
 *   - quiesce: only loads (committing, commits) after a barrier; waits for
 *     the writers in flight at the call (>>control, QUIESCE).
 *
 * CRASH SAFETY (file-backed blocks). Each writer describes its reservation in
 * the slot of its depth before the CAS that makes it ([SLOT],
 * ringbuf__slot_publish: len 0, fields, re-check of the page, add of the
 * length to a len of 0), clears len when the event is complete, and a
 * writer that reserves where an interrupted writer's slot points sets
 * RINGBUF__SLOT_GONE in it (ringbuf__slot_reserved, with RINGBUF__SLOT_PRE
 * where len was 0; a discard that rolls back takes the bits off first,
 * then gives the place back). ringbuf_recover pads the slots still set (and
 * not GONE, nor below a deeper slot in flight that names the same place),
 * commits the rest, finishes cut head pushes and page moves. A block killed while a slot
 * held the GONE bit, opened by a build from before the bit (same layout
 * version), fails that build's validation (RINGBUF_ECORRUPT: len above 2
 * pages).
 *
 * EXACT ACCOUNTING AFTER A KILL: committed (the sum of entries_d) = events
 * read + events readable after ringbuf_recover + overrun, whatever
 * instruction the kill came at (tests/files/test_crash_accounting.c kills a writer
 * at every test point). Crash model: SIGKILL stops the process between two
 * instructions; every store before that point is in the shared mapping (the
 * kernel drains the store buffer; the recovering process reads after
 * waitpid), none after it; the compiler keeps the program order of the
 * relaxed stores below because a signal fence (RINGBUF__BARRIER) separates
 * each pair. Two counters were not crash-exact:
 *   [SLOT-DONE] committing an event is two stores, entries_d[d] += 1 and the
 *     slot's len = 0. They were in the other order: a kill between them left
 *     a complete event kept by recovery but not counted committed. Now the
 *     count comes first, and P1 of [SLOT] stored counted = entries_d[d] (low
 *     32 bits) with the slot: recovery keeps a reserved slot's event when
 *     entries_d[d] == counted + 1 (counted, so complete), pads it otherwise
 *     (not counted). entries_d[d] is written by the writer at depth d + 1
 *     only, and only by its commit between P1 and the slot's clear, so the
 *     compare is exact.
 *   HEAD PUSH ACCOUNTING. The push owner's claim (H1 CAS) and its add of the
 *     page's count to overrun were two steps on two words: a kill between
 *     them left the pushed page's events gone from the ring (recovery
 *     finishes the push) and not counted anywhere: committed - overrun above
 *     the events in the trace by the page's count (test_record's overwrite
 *     case; test_crash_accounting at H1_CLAIMED before the fix). Recovery
 *     cannot tell "claimed, not counted" from "counted" by the link and a
 *     shared counter (a writer nested in the owner after its claim may push
 *     further and add its own count meanwhile). So:
 *       - the counters are per depth, overrun_d[d] and pages_lost_d[d],
 *         written (plain store) only by the writer at depth d + 1, as
 *         entries_d: while the owner is between its claim and its count,
 *         nobody else writes its depth's counters;
 *       - [PUSH-MARK] before the claim, the owner at depth d + 1 stores in
 *         slots[d] the values its counters will have once this push is
 *         counted (push_overrun = overrun_d[d] + N's count, push_pages =
 *         pages_lost_d[d] + 1), then push_link = the value its claim CAS
 *         will store in T.next (UPDATE, tag bumped);
 *       - [PUSH-COUNT] after the claim, it stores those values into
 *         overrun_d[d] and pages_lost_d[d];
 *       - [PUSH-HELP] a writer nested in the owner that finds UPDATE on
 *         T.next stores them too, before its H2 (and its tail move): the
 *         owner may be between its claim and its count, and a reader that
 *         finds the new head through the helper's H2 must see the push
 *         counted ([L] in LOSS ACCOUNTING). Its owner: the deepest writer
 *         below the helper (in flight, interrupted by it) whose mark is
 *         (T, this link value) (ringbuf__push_count_owner). The stores are
 *         idempotent: the owner's [PUSH-COUNT] and every helper store the
 *         same two values, and nobody else writes depth d's counters while
 *         T.next holds the owner's UPDATE (the writers that run meanwhile
 *         are nested in the owner, deeper). So whoever comes first counts
 *         the push, exactly once, whatever order they run in.
 *     Recovery, for a link holding UPDATE (a push cut between its claim and
 *     H3): its owner is the deepest writer in flight (d < committing) whose
 *     mark is this page and link value, tag and all; its counters get the
 *     marked values (a no-op where [PUSH-COUNT] or a helper ran), then the push is
 *     finished: UPDATE cleared, and H2 (HEADER on N.next) only where the
 *     tail is still T (else a writer nested in the owner helped, H2
 *     done, and may have pushed on: nested pushes leave an UPDATE each,
 *     the newest one alone possibly before its H2) and no link from N on
 *     to T holds HEADER, as ringbuf__help_new_head asks: a
 *     writer nested in the owner may have helped (its own H2), moved the
 *     tail and pushed the head on, or a reader swapped N out, and the flag
 *     sits further on (a second HEADER made two heads: test_crash_accounting,
 *     one_head_after_a_push_finished_by_others). A kill before the claim leaves no UPDATE link equal to
 *     the mark (recovery ignores it, then clears it); one after H3 leaves
 *     no UPDATE.
 *     Why the match names the owner: only the owner's CAS stores that value
 *     in T.next (a helper never changes T.next); the tags of one link only
 *     grow, so a stale mark of an earlier push from T never matches a later
 *     value of T.next: the marking writer's CAS from HEADER (tag k) either
 *     claimed (its H3 moves the tag on) or failed (T.next had moved on).
 *     The page is part of the mark: tags are per link, and another page's
 *     link, re-pointed by the reader's swaps, can hold the same value (the
 *     link-only match took a stale mark of depth d' > d, made on another
 *     page, for the owner's, and [PUSH-HELP] counted a push twice:
 *     test_interleave, overwrite overrun 2 too high). A writer killed after
 *     its mark and before its claim leaves T.next at tag k, which the next
 *     push from T claims: recovery clears every mark after step 1 (a dead
 *     mark in a slot deeper than that push's owner would match;
 *     test_crash_accounting, a_mark_left_by_a_kill_before_its_claim_*).
 *     Two writers in flight may
 *     hold marks for the same link (the outer one marked, was interrupted
 *     before its CAS, and a nested one claimed the link: the outer CAS then
 *     fails); the claim is the nested one's, the deepest.
 *     C11 (live readers): the counters are still relaxed, each store
 *     sequenced before the H2 (the owner's or the helper's) and H3 CASes
 *     (seq_cst), so [L] and the
 *     iterator's [I-LAG] argument are unchanged; readers sum the depths
 *     (ringbuf__overrun: a snapshot, as the one counter was).
 */

/* The constants, layouts and small helpers are in >>inline (header part). */
#ifdef RINGBUF_TESTING
static ringbuf__tp_fn ringbuf__tp_hook;
static void *ringbuf__tp_ctx;
RINGBUF_API void ringbuf__set_testpoint_hook(ringbuf__tp_fn fn, void *ctx)
{
	ringbuf__tp_ctx = ctx;
	ringbuf__tp_hook = fn;
}
RINGBUF_API void ringbuf__testpoint(struct ringbuf *rb, unsigned cpu, int point)
{
	if (ringbuf__tp_hook)
		ringbuf__tp_hook(rb, cpu, point, ringbuf__tp_ctx);
}
#endif

/* -- warnings -- */
static _Atomic(ringbuf_warn_fn) ringbuf__warn_fn;
static _Atomic(void *) ringbuf__warn_ctx;

RINGBUF_API void ringbuf_set_warn_hook(ringbuf_warn_fn fn, void *ctx)
{
	atomic_store_explicit(&ringbuf__warn_ctx, ctx, memory_order_relaxed);
	atomic_store_explicit(&ringbuf__warn_fn, fn, memory_order_release);
}

static void ringbuf__report(const char *what, unsigned cpu)
{
	ringbuf_warn_fn fn = atomic_load_explicit(&ringbuf__warn_fn, memory_order_acquire);
	if (fn)
		fn(what, cpu, atomic_load_explicit(&ringbuf__warn_ctx, memory_order_relaxed));
}

static inline void ringbuf__yield(void)
{
#ifdef RINGBUF__HAVE_THRD_YIELD
	thrd_yield();
#else
	sched_yield();
#endif
}

static uint64_t ringbuf__default_clock(void *ctx);


/* ==== >>parse: page parsing (every reader; validates everything) ========= */

struct ringbuf__rec {
	uint32_t type;  /* 0 = data, else PADDING / TIME_EXTEND / TIME_STAMP */
	uint32_t len;   /* total record length */
	uint32_t hdr;   /* 4 or 8: bytes before the payload */
	uint64_t delta; /* delta, extend value, or absolute stamp value */
	bool null_pad;  /* padding that runs to the end of the page */
};

/* Decode a record from its first two words (w0, and a0 when avail >= 8),
 * where avail is the number of bytes from the record to the commit. Returns 0,
 * or RINGBUF_ECORRUPT when a length or type does not fit. */
static int ringbuf__parse_words(uint32_t w0, uint32_t a0, uint32_t avail, bool align8,
				struct ringbuf__rec *r)
{
	uint32_t t = RINGBUF__HDR_TYPE(w0);
	if (avail < 4)
		return RINGBUF_ECORRUPT;
	r->delta = RINGBUF__HDR_DELTA(w0);
	r->null_pad = false;
	r->type = t;
	switch (t) {
	case RINGBUF__TYPE_PADDING:
		if (avail < 8 || (a0 == 0 && r->delta == 0)) {
			/* a 4-byte null header, or the kernel's null event: the rest */
			r->len = avail;
			r->hdr = 4;
			r->null_pad = true;
			return 0;
		}
		if (a0 < 4 || (a0 & 3) || a0 > avail - 4 || (align8 && ((a0 + 4) & 7)))
			return RINGBUF_ECORRUPT;
		r->len = a0 + 4;
		r->hdr = 4;
		return 0;
	case RINGBUF__TYPE_TIME_EXTEND:
	case RINGBUF__TYPE_TIME_STAMP:
		if (avail < 8)
			return RINGBUF_ECORRUPT;
		r->delta = ((uint64_t)a0 << RINGBUF__TS_SHIFT) | r->delta;
		r->len = 8;
		r->hdr = 8;
		return 0;
	case 0:
		if (avail < 8 || a0 < 4 || (a0 & 3) || a0 > avail - 4 || (align8 && ((a0 + 4) & 7)))
			return RINGBUF_ECORRUPT;
		r->len = a0 + 4;
		r->hdr = 8;
		return 0;
	default:
		if (align8)
			return RINGBUF_ECORRUPT;
		r->type = 0;
		r->len = 4 + t * 4;
		r->hdr = 4;
		return r->len > avail ? RINGBUF_ECORRUPT : 0;
	}
}

/* Decode the record at off in data[0..commit). Returns 0, or RINGBUF_ECORRUPT.
 * Inline, with the common record first: a data event of 4 + 4 * type_len
 * bytes (type_len 1..28, not under RINGBUF_F_ALIGN8) is decided here, as
 * parse_words' default case decides it; the readers' loops then keep the
 * record in registers. ringbuf-record spent 43 instructions a record in
 * read_page_ref's loop with both calls out of line (callgrind, CPython under
 * malloc_trace.so: 69 M of the recorder's 177 M). */
static inline int ringbuf__parse(const unsigned char *data, uint32_t commit, uint32_t off, bool align8,
				 struct ringbuf__rec *r)
{
	uint32_t w0, a0 = 0, t;
	if (off & 3 || off > commit || commit - off < 4)
		return RINGBUF_ECORRUPT;
	memcpy(&w0, data + off, 4);
	t = RINGBUF__HDR_TYPE(w0);
	if (t - 1u < RINGBUF__TYPE_DATA_MAX && !align8) {
		r->type = 0;
		r->len = 4 + t * 4;
		r->hdr = 4;
		r->delta = RINGBUF__HDR_DELTA(w0);
		r->null_pad = false;
		return r->len > commit - off ? RINGBUF_ECORRUPT : 0;
	}
	if (commit - off >= 8)
		memcpy(&a0, data + off + 4, 4);
	{
		/* a copy: the caller's record does not escape into the call,
		 * and its fields can stay in registers */
		struct ringbuf__rec x = {0, 0, 0, 0, false}; /* an error leaves fields unset */
		int e = ringbuf__parse_words(w0, a0, commit - off, align8, &x);
		/* field by field: a struct copy reads the padding (GenMC:
		 * uninitialized memory, verify/takeover.c) */
		r->type = x.type;
		r->len = x.len;
		r->hdr = x.hdr;
		r->delta = x.delta;
		r->null_pad = x.null_pad;
		return e;
	}
}

/* From off (4-aligned, <= commit), a run of the common record (data events
 * of 4 + 4 * type_len bytes, decided as ringbuf__parse decides them; not
 * under RINGBUF_F_ALIGN8): their deltas added to *ts, their count to
 * *events. Returns the offset after the run: off itself when the record
 * there is not one (ringbuf__parse then decides it, errors included), past
 * commit when the run's last record overruns it (ringbuf__parse refuses
 * that offset: corrupt). It reads only below commit (fuzz_page poisons what
 * lies past it). No bounds check a record but the loop's own, one load and
 * no store: ringbuf-record's walk of each lent page (read_page_ref) took 30
 * instructions a record through ringbuf__parse alone, 14 with this
 * (callgrind, sqlite under malloc_trace.so). */
static inline uint32_t ringbuf__event_run(const unsigned char *data, uint32_t commit, uint32_t off,
					  uint64_t *ts, uint32_t *events)
{
	const uint32_t lim = commit & ~3u; /* off < lim: 4 bytes to read */
	uint64_t t_s = *ts;
	uint32_t n = *events;
	while (off < lim) {
		uint32_t w0, t;
		memcpy(&w0, data + off, 4);
		t = RINGBUF__HDR_TYPE(w0);
		if (t - 1u >= RINGBUF__TYPE_DATA_MAX)
			break;
		t_s += RINGBUF__HDR_DELTA(w0);
		n++;
		off += 4 + t * 4;
	}
	*ts = t_s;
	*events = n;
	return off;
}

/* The time stamp after an absolute TIME_STAMP record of value v, given the
 * running stamp prev: restore the 5 bits the record cannot hold; a value that
 * wrapped past 2^59 moves up a whole period, one that merely went backwards
 * (a non-monotonic clock) is clamped so time never goes backwards. */
static inline uint64_t ringbuf__abs_ts(uint64_t prev, uint64_t v)
{
	uint64_t ts = (prev & ~RINGBUF__TS_VALUE_MASK) | (v & RINGBUF__TS_VALUE_MASK);
	if (ts < prev) {
		if (prev - ts > (1ull << (RINGBUF__TS_BITS - 1)))
			ts += 1ull << RINGBUF__TS_BITS;
		else
			ts = prev;
	}
	return ts;
}

/* Count the data events of a committed page (used when its events are lost). */
static uint64_t ringbuf__count_events(const struct ringbuf *rb, const struct ringbuf__dpage *dp)
{
	uint32_t commit = (uint32_t)((unsigned long)atomic_load_explicit(
					     &((struct ringbuf__dpage *)dp)->commit, memory_order_acquire) &
				     RINGBUF__COMMIT_MASK);
	uint32_t off = 0;
	uint64_t n = 0;
	struct ringbuf__rec r;
	if (commit > rb->bsize)
		return 0;
	while (off < commit) {
		if (ringbuf__parse(dp->data, commit, off, rb->flags & RINGBUF_F_ALIGN8, &r) < 0)
			break; /* only reached for a page that is being recycled: the CAS after us fails */
		if (r.type == 0)
			n++;
		if (r.null_pad)
			break;
		off += r.len;
	}
	return n;
}

/* ==== >>platform: thread ids, clocks, membarrier ========================== *
 * What the layers below take from the system: the thread id (cached per
 * thread), the clocks (CLOCK_MONOTONIC, the TSC and its calibration, the
 * conversion of TSC stamps to ns), and the heavy side of the asymmetric
 * fences ([BARRIER]). Calls nothing below it. */

/* the thread id, 30 bits (the owner word's tid field, RINGBUF__OWN_TID) */
#define RINGBUF__TID_MASK 0x3fffffffu

static RINGBUF__TLS uint32_t ringbuf__tid;

static uint32_t ringbuf__gettid(void)
{
	uint32_t t = ringbuf__tid;
	if (RINGBUF__UNLIKELY(t == 0)) {
#if defined(__linux__) && defined(SYS_gettid)
		t = (uint32_t)syscall(SYS_gettid) & RINGBUF__TID_MASK;
#else
		t = (uint32_t)(uintptr_t)&ringbuf__tid & RINGBUF__TID_MASK;
#endif
		ringbuf__tid = t; /* a handler racing here computes the same value */
	}
	return t;
}

/* -- clocks -- */

RINGBUF_API uint64_t ringbuf__clock_mono(void)
{
	struct timespec ts;
	clock_gettime(RINGBUF__CLOCK_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t ringbuf__default_clock(void *ctx)
{
	(void)ctx;
	return ringbuf__clock_mono();
}

RINGBUF_API uint64_t ringbuf_clock_tsc(void *ctx)
{
	(void)ctx;
	return ringbuf__rdtsc();
}

/* Which clock the writers read, from what the caller passed. */
static uint32_t ringbuf__clock_kind_of(ringbuf_clock_fn clock)
{
	if (!clock || clock == ringbuf__default_clock)
		return RINGBUF__CLK_MONO;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	if (clock == ringbuf_clock_tsc)
		return RINGBUF__CLK_TSC;
#else
	if (clock == ringbuf_clock_tsc) /* no TSC here: the monotonic clock, in ns */
		return RINGBUF__CLK_MONO;
#endif
	return RINGBUF__CLK_USER;
}

/* TSC to ns: the ratio of the two clocks over about 10 ms, each end taken as
 * the TSC read closest around a clock_gettime (the narrowest of 5 brackets),
 * so the ratio is good to a few parts per million. Stored as a 32.32 fixed
 * point multiplier. */
static void ringbuf__tsc_pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	int i;
	for (i = 0; i < 5; i++) {
		uint64_t a = ringbuf__rdtsc(), n = ringbuf__clock_mono(), b = ringbuf__rdtsc();
		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = n;
		}
	}
}

static void ringbuf__tsc_calibrate(struct ringbuf *rb)
{
	uint64_t t0 = 0, n0 = 0, t1 = 0, n1 = 0, dn, dt;
	int tries = 0;
	do {
		/* again if the process was stopped (SIGSTOP, a debugger, a VM
		 * pause) in the middle: the ratio stays right, but the bracket
		 * widths were measured for a 10 ms run */
		unsigned long spins = 0;
		ringbuf__tsc_pair(&t0, &n0);
		do
			ringbuf__tsc_pair(&t1, &n1);
		while (n1 - n0 < 10000000u && ++spins < 100000000ul);
	} while (n1 - n0 > 1000000000u && ++tries < 3);
	rb->tsc0 = t0;
	rb->tsc_ns0 = n0;
	rb->tsc_shift = 32;
	dn = n1 - n0;
	dt = t1 - t0;
	while (dn >> 31) { /* (dn << 32) must not overflow, however long it took */
		dn >>= 1;
		dt >>= 1;
	}
	rb->tsc_mult = dt ? (dn << 32) / dt : 1ull << 32;
}

/* d * m >> 32 without a 128-bit type (d up to centuries of cycles) */
static uint64_t ringbuf__mulshift32(uint64_t d, uint64_t m)
{
	uint64_t dh = d >> 32, dl = d & 0xffffffffu, mh = m >> 32, ml = m & 0xffffffffu;
	return ((dh * mh) << 32) + dh * ml + dl * mh + ((dl * ml) >> 32);
}

/* The TSC conversion of a block, also kept by captures (ringbuf_trace.h) */
struct ringbuf__tscconv {
	uint64_t tsc0, ns0, mult;
};

static uint64_t ringbuf__tscconv_apply(const struct ringbuf__tscconv *v, uint64_t ts)
{
	uint64_t back;
	if (ts >= v->tsc0)
		return v->ns0 + ringbuf__mulshift32(ts - v->tsc0, v->mult);
	back = ringbuf__mulshift32(v->tsc0 - ts, v->mult);
	return back < v->ns0 ? v->ns0 - back : 0;
}

/* The same conversion as trace-cmd's TSC2NSEC option computes it (a 32-bit
 * multiplier, below 2^31, and a shift) plus its OFFSET option:
 * ns = (cycles * mult >> shift) + offset. */
static inline void ringbuf__tscconv_tracecmd(const struct ringbuf__tscconv *v, uint32_t *mult, uint32_t *shift,
				      int64_t *offset)
{
	uint64_t m = v->mult;
	uint32_t s = 32;
	while (m >= (1ull << 31) && s > 0) {
		m >>= 1;
		s--;
	}
	*mult = (uint32_t)m;
	*shift = s;
	*offset = (int64_t)(v->ns0 - ringbuf__mulshift32(v->tsc0, m << (32 - s)));
}

/* rb's conversion; false when its stamps are not TSC cycles */
static bool ringbuf__tscconv_of(const struct ringbuf *rb, struct ringbuf__tscconv *v)
{
	if (!rb || rb->clock_kind != RINGBUF__CLK_TSC)
		return false;
	v->tsc0 = rb->tsc0;
	v->ns0 = rb->tsc_ns0;
	v->mult = rb->tsc_mult;
	return true;
}

RINGBUF_API uint64_t ringbuf_ts_to_ns(const struct ringbuf *rb, uint64_t ts)
{
	struct ringbuf__tscconv v;
	return ringbuf__tscconv_of(rb, &v) ? ringbuf__tscconv_apply(&v, ts) : ts;
}

/* -- membarrier -- */

static void ringbuf__membarrier_register(void)
{
#if defined(__linux__) && defined(SYS_membarrier)
	(void)syscall(SYS_membarrier, 16 /* REGISTER_PRIVATE_EXPEDITED */, 0, 0);
#endif
}

#ifdef RINGBUF_TESTING
static _Atomic(int) ringbuf__test_no_membarrier;
/* Tests: make the reset's barrier fail as on a system without membarrier. */
RINGBUF_API void ringbuf__set_membarrier_fail(int fail)
{
	atomic_store(&ringbuf__test_no_membarrier, fail);
}
#endif

/* [BARRIER] The heavy side of every asymmetric fence in this file (the
 * merged readers' [R1], the waiters' [WAIT-R3], reset's R3/R6; the writers'
 * side is a compiler barrier): true when every thread that may write to rb
 * executed a full barrier between the call's start and its return (running
 * threads by IPI, the others by the context switch since they last ran), false
 * when that cannot be had (no membarrier, refused by seccomp, nohz_full CPUs
 * for GLOBAL, a shared block that an opener could not register for), errno
 * from the last call.
 *   private block: MEMBARRIER_CMD_PRIVATE_EXPEDITED, this process's threads
 *     (registered at init; here for a block opened, not created)
 *   shared file block: MEMBARRIER_CMD_GLOBAL_EXPEDITED, every process
 *     registered for it: each one that creates or opens a shared block
 *     registers (a fork child again), one that cannot sets ringbuf__sh(rb)->wait_unreg
 *   else MEMBARRIER_CMD_GLOBAL: every thread of the system (an RCU grace
 *     period: slow) */
static bool ringbuf__writers_barrier(struct ringbuf *rb)
{
#ifdef RINGBUF_TESTING
	if (atomic_load(&ringbuf__test_no_membarrier)) {
		errno = ENOSYS;
		return false;
	}
#endif
#if defined(__linux__) && defined(SYS_membarrier)
	if (rb->shared) {
		if (!atomic_load_explicit(&ringbuf__sh(rb)->wait_unreg, memory_order_relaxed) &&
		    syscall(SYS_membarrier, 2 /* GLOBAL_EXPEDITED */, 0, 0) == 0)
			return true;
	} else {
		if (syscall(SYS_membarrier, 8 /* PRIVATE_EXPEDITED */, 0, 0) == 0)
			return true;
		if (errno == EPERM && /* not registered yet (a block opened, not created) */
		    syscall(SYS_membarrier, 16 /* REGISTER_PRIVATE_EXPEDITED */, 0, 0) == 0 &&
		    syscall(SYS_membarrier, 8, 0, 0) == 0)
			return true;
	}
	return syscall(SYS_membarrier, 1 /* GLOBAL */, 0, 0) == 0;
#else
	(void)rb;
	return false;
#endif
}

/* [RESET-MB] ringbuf_reset_cpu's barrier: no fallback, a fence on this side
 * alone orders nothing for the writers, so without [BARRIER] the reset
 * refuses (RINGBUF_ESYS, errno from the call). */
static int ringbuf__reset_barrier(struct ringbuf *rb)
{
	return ringbuf__writers_barrier(rb) ? 0 : RINGBUF_ESYS;
}

/* Each process that opens a shared block registers for
 * MEMBARRIER_CMD_GLOBAL_EXPEDITED, so that a waiter's [WAIT-R3] reaches its
 * writers; one that cannot says so in the block (waiters then use slower
 * commands or sleep in slices). */
#if defined(__linux__) /* shared blocks are Linux-only */
static void ringbuf__membarrier_register_shared(struct ringbuf *rb)
{
#if defined(SYS_membarrier)
	if (syscall(SYS_membarrier, 4 /* REGISTER_GLOBAL_EXPEDITED */, 0, 0) == 0)
		return;
#endif
	atomic_store_explicit(&ringbuf__sh(rb)->wait_unreg, 1, memory_order_relaxed);
}
#endif

/* [POPULATE] Make [p, p + len) present and writable, as a store to each
 * page would (MADV_POPULATE_WRITE, Linux 5.14), but with an error instead
 * of a signal: EFAULT where a store would raise SIGBUS (a file or memfd
 * page its file system has no room for). Returns 0 or that errno value;
 * errno itself is left as it was (a writer in a signal handler calls
 * this). Other values (EINVAL, ENOSYS: an older kernel; anything off
 * Linux: 0) mean "not known": the caller goes on as if it had succeeded,
 * and a store faults the page in as before. Async-signal-safe. */
static int ringbuf__populate(void *p, size_t len)
{
#if defined(__linux__)
	long ps = sysconf(_SC_PAGESIZE);
	uintptr_t from, to;
	int e = errno, r = 0;
	if (len == 0 || ps <= 0)
		return 0;
	from = (uintptr_t)p & ~(uintptr_t)(ps - 1);
	to = (uintptr_t)p + (uintptr_t)len;
	if (madvise((void *)from, to - from, RINGBUF__MADV_POPULATE_WRITE) != 0)
		r = errno;
	errno = e;
	return r;
#else
	(void)p;
	(void)len;
	return 0;
#endif
}


/* ==== >>writer ========================================================== */

/* c->disabled: set while ringbuf_reset_cpu re-initialises the CPU's pages (the
 * low bits count the disables; see >>control, RESET) */
#define RINGBUF__RESET_BIT 0x80000000u

/* [RESET-W] Is a reset re-initialising c's pages? Asked by an outermost
 * writer before its commit walk (the only step a writer takes after it left,
 * or when refused, that touches the pages). acquire: a writer that finds the
 * bit cleared sees the re-initialised pages (pairs with the release [R7]). */
static inline bool ringbuf__resetting(struct ringbuf__cpu *c)
{
	return (atomic_load_explicit(&c->disabled, memory_order_acquire) & RINGBUF__RESET_BIT) != 0;
}

/* Events and pages overwritten on c (the per-depth counters, [PUSH-MARK]).
 * Each load is relaxed (or acquire): a snapshot, as a single counter was. */
static inline uint64_t ringbuf__overrun(struct ringbuf__cpu *c)
{
	uint64_t n = 0;
	unsigned i;
	for (i = 0; i < RINGBUF_MAX_NEST; i++)
		n += RINGBUF__LOAD(&c->overrun_d[i]);
	return n;
}

static inline uint64_t ringbuf__pages_lost(struct ringbuf__cpu *c, bool acquire)
{
	uint64_t n = 0;
	unsigned i;
	for (i = 0; i < RINGBUF_MAX_NEST; i++)
		n += acquire ? atomic_load_explicit(&c->pages_lost_d[i], memory_order_acquire)
			     : RINGBUF__LOAD(&c->pages_lost_d[i]);
	return n;
}

static inline uint64_t ringbuf__drop_total(struct ringbuf__cpu *c)
{
	return RINGBUF__LOAD(&c->dropped_events) + RINGBUF__LOAD(&c->commit_overrun);
}

static void ringbuf__warn(struct ringbuf *rb, unsigned cpu, const char *what)
{
	struct ringbuf__cpu *c = ringbuf__cpu(rb, cpu);
	uint32_t zero = 0;
	/* First report disables recording on this CPU for good (until reset). */
	if (atomic_compare_exchange_strong_explicit(&c->corrupt, &zero, 1, memory_order_relaxed,
						    memory_order_relaxed))
		RINGBUF__ADD(&c->disabled, 1);
	ringbuf__report(what, cpu);
}

/* A page's drop snapshot (bpage.drops): the CPU's drop total when the tail
 * entered it, so the reader reports the drops counted before the page's first
 * event with that event. Monotonic max, so a stale value written by an
 * interrupted writer never overwrites a newer one. */
static void ringbuf__raise_drops(struct ringbuf__bpage *bp, uint64_t drops)
{
	uint64_t seen = RINGBUF__LOAD(&bp->drops);
	while (seen < drops &&
	       !atomic_compare_exchange_weak_explicit(&bp->drops, &seen, drops, memory_order_relaxed,
						      memory_order_relaxed))
		;
}

/* U1-U3: move the tail from T to N (kernel rb_tail_page_update). */
static void ringbuf__tail_page_update(struct ringbuf *rb, unsigned cpu, uint32_t t, uint32_t n)
{
	struct ringbuf__cpu *c = ringbuf__cpu(rb, cpu);
	struct ringbuf__bpage *nb = ringbuf__bp(rb, cpu, n);
	uint32_t tp = t;
	uint64_t old, olde;

	/* U1: make N.write and N.entries unique, so the resets below cannot undo
	 * a nested writer's reservation on N. (A writer nesting between the two
	 * adds moves the tail itself: we stop at the tail check.) */
	/* release: an iterator that reads N's new count (acquire) sees the head
	 * pushes before it in pages_lost ([I-LAG]) */
	atomic_thread_fence(memory_order_release);
	old = ringbuf__local_add_return(&nb->write, RINGBUF__WRITE_INTCNT);
	olde = ringbuf__local_add_return(&nb->entries, RINGBUF__WRITE_INTCNT);
	/* release: the new count is visible before any byte we write on N;
	 * pairs with the acquire fence of the iterator's copy (seqlock) */
	atomic_thread_fence(memory_order_release);
	RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_U1_INTCNT);
	if (RINGBUF__LOAD(&c->tail_page) != t)
		return; /* a nested writer moved the tail already */

	/* Loss position: drops counted so far happened before N's first event. */
	ringbuf__raise_drops(nb, ringbuf__drop_total(c));
	/* Nothing is committed on N before the tail is on it; the reader does not
	 * look at N before the commit page reaches it. */
	atomic_store_explicit(&ringbuf__dp(rb, cpu, n)->commit, 0, memory_order_relaxed);

	/* U2: reset the index, keeping the count bits; fails if a nested writer
	 * moved in and reserved meanwhile. */
	(void)ringbuf__local_cas(&nb->write, old, old & ~RINGBUF__WRITE_MASK);
	(void)ringbuf__local_cas(&nb->entries, olde, olde & ~RINGBUF__WRITE_MASK);
	RINGBUF__BARRIER();
	RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_U2_RESET);

	/* U3 */
	if (atomic_compare_exchange_strong_explicit(&c->tail_page, &tp, n, memory_order_seq_cst,
						    memory_order_relaxed))
		RINGBUF__ADD(&c->pages_touched, 1);
	RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_U3_MOVED);
}

/* Does a link on cpu's ring, from page `from` on and before page `until`,
 * hold HEADER (acquire loads)? The ring walk, not the page array: a reader
 * page prepared at S2 and not linked in is not on it. (UPDATE there is a
 * push of an older head by a writer interrupted, not a head.) Bounded by the
 * page count. Used by the helper's H2 and by recovery's (>>repair). */
static bool ringbuf__head_between(struct ringbuf *rb, unsigned cpu, uint32_t from, uint32_t until)
{
	uint32_t x = from, i;
	for (i = 0; x != until && x <= rb->nr_pages && i <= rb->nr_pages; i++) {
		uint64_t l = ringbuf__load_link(ringbuf__bp(rb, cpu, x));
		if ((l & RINGBUF__F_MASK) == RINGBUF__F_HEADER)
			return true;
		x = ringbuf__link_idx(l);
	}
	return false;
}

/* H2 for a helper: a writer that interrupted the push's owner (T.next holds
 * UPDATE) and needs the tail past N. It puts HEADER on N.next only if no link
 * of the ring holds HEADER yet: the owner may have set it already and
 * the reader may since have swapped that head out (N.next then links the
 * reader's old page, and the flag sits further on); and only while the tail
 * is still T (else a nested writer finished this push and more). The tag
 * makes the CAS fail if N.next changed after we read it. Rare: O(pages). */
static int ringbuf__help_new_head(struct ringbuf *rb, unsigned cpu, uint32_t t, uint32_t n)
{
	struct ringbuf__cpu *c = ringbuf__cpu(rb, cpu);
	struct ringbuf__bpage *nb = ringbuf__bp(rb, cpu, n);
	uint64_t v = ringbuf__load_link(nb);
	if ((v & RINGBUF__F_MASK) == RINGBUF__F_HEADER)
		return 0;
	if (atomic_load_explicit(&c->tail_page, memory_order_acquire) != t)
		return 0;
	if ((v & RINGBUF__F_MASK) != 0) {
		ringbuf__warn(rb, cpu, "head push: UPDATE found on the next link");
		return RINGBUF_ECORRUPT;
	}
	if (ringbuf__head_between(rb, cpu, ringbuf__link_idx(v), t))
		return 0; /* HEADER further on: the head exists */
	(void)ringbuf__cas_link(nb, v, ringbuf__link_make(v, ringbuf__link_idx(v), RINGBUF__F_HEADER));
	return 0;
}

/* [PUSH-HELP] (HEAD PUSH ACCOUNTING in >>design): the counters of the owner
 * of the push whose claim left `link` (UPDATE) in T.next get its marked
 * values. Its owner is the deepest writer in flight below depth `below`
 * whose [PUSH-MARK] is this very page and link value; none: nothing stored.
 * Used by a helper (below = its own depth: the owner is a writer it
 * interrupted) and by recovery (below = committing). Plain stores: only the
 * owner (depth d + 1) and the writers nested in it write overrun_d[d] and
 * pages_lost_d[d] while T.next holds `link`, all on this thread, all storing
 * these same values (the owner's [PUSH-COUNT] as well): whoever comes first
 * counts the push, the others change nothing. Returns the owner's depth
 * index, or -1. */
static int ringbuf__push_count_owner(struct ringbuf__cpu *c, uint32_t t, uint64_t link, uint32_t below)
{
	uint32_t d;
	for (d = below; d-- > 0;) {
		struct ringbuf__slot *ps = &c->slots[d];
		if (RINGBUF__LOAD(&ps->push_link) != link || RINGBUF__LOAD(&ps->push_page) != t)
			continue;
		RINGBUF__STORE(&c->overrun_d[d], RINGBUF__LOAD(&ps->push_overrun));
		RINGBUF__BARRIER();
		RINGBUF__STORE(&c->pages_lost_d[d], RINGBUF__LOAD(&ps->push_pages));
		RINGBUF__BARRIER();
		return (int)d;
	}
	return -1;
}

/* Overwrite mode, T.next = N is the head page: push the head one page.
 * Returns 0 (pushed, move the tail), 1 (state changed, retry) or < 0. */
static int ringbuf__push_head(struct ringbuf *rb, unsigned cpu, uint32_t t, uint64_t link)
{
	struct ringbuf__cpu *c = ringbuf__cpu(rb, cpu);
	struct ringbuf__bpage *tb = ringbuf__bp(rb, cpu, t);
	uint32_t n = ringbuf__link_idx(link);
	bool owner = false;
	uint64_t upd;

	if ((link & RINGBUF__F_MASK) == RINGBUF__F_HEADER) {
		/* H1: N cannot change while T.next still holds this exact value
		 * (the tail must pass that link first), so count first, then claim.
		 * N.next is read before the claim too: until then the reader cannot
		 * change it (it swaps only the head, N), so it is the value H2
		 * must find, tag and all. */
		uint64_t lost = RINGBUF__LOAD(&ringbuf__bp(rb, cpu, n)->entries) & RINGBUF__WRITE_MASK;
		uint64_t v0 = ringbuf__load_link(ringbuf__bp(rb, cpu, n));
		/* the writer running this is the innermost one: its depth */
		uint32_t d = RINGBUF__LOAD(&c->committing) - 1;
		struct ringbuf__slot *s;
		if (d >= RINGBUF_MAX_NEST) {
			ringbuf__warn(rb, cpu, "head push: no writer in flight");
			return RINGBUF_ECORRUPT;
		}
		s = &c->slots[d];
		upd = ringbuf__link_make(link, n, RINGBUF__F_UPDATE);
		/* [PUSH-MARK] (HEAD PUSH ACCOUNTING in >>design): the counts this
		 * depth will have once the push is counted, then the claim's
		 * value, stored last */
		RINGBUF__STORE(&s->push_overrun, RINGBUF__LOAD(&c->overrun_d[d]) + lost);
		RINGBUF__STORE(&s->push_pages, RINGBUF__LOAD(&c->pages_lost_d[d]) + 1);
		RINGBUF__STORE(&s->push_page, t);
		RINGBUF__BARRIER();
		RINGBUF__STORE(&s->push_link, upd);
		RINGBUF__BARRIER();
		RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_H1_COUNTED);
		if (!ringbuf__cas_link(tb, link, upd))
			return 1; /* the reader swapped N out, or a nested writer pushed */
		owner = true;
		RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_H1_CLAIMED);
		/* [PUSH-COUNT] this depth's counters to the marked values: plain
		 * stores (no writer but this one writes them until it returns) */
		RINGBUF__STORE(&c->overrun_d[d], RINGBUF__LOAD(&s->push_overrun));
		RINGBUF__BARRIER();
		RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_H1_OVERRUN);
		RINGBUF__STORE(&c->pages_lost_d[d], RINGBUF__LOAD(&s->push_pages));
		RINGBUF__BARRIER();
		RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_H1_UPDATE);
		/* H2 (owner): fails if a helper nested in us did it, or went on */
		if ((v0 & RINGBUF__F_MASK) == 0)
			(void)ringbuf__cas_link(ringbuf__bp(rb, cpu, n), v0,
						ringbuf__link_make(v0, ringbuf__link_idx(v0), RINGBUF__F_HEADER));
	} else {
		/* UPDATE: we interrupted the writer pushing this page; help.
		 * [PUSH-HELP] first its count (the owner may be between its
		 * claim and [PUSH-COUNT]), then our H2: a reader that finds the
		 * new head through our H2 (seq_cst CAS, after the count in
		 * program order) loads overrun with N's events in it, [L] */
		uint32_t d = RINGBUF__LOAD(&c->committing) - 1;
		upd = link;
		if (d >= RINGBUF_MAX_NEST) {
			ringbuf__warn(rb, cpu, "head push: no writer in flight");
			return RINGBUF_ECORRUPT;
		}
		(void)ringbuf__push_count_owner(c, t, link, d);
		RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_H2_HELPED);
		if (ringbuf__help_new_head(rb, cpu, t, n) < 0)
			return RINGBUF_ECORRUPT;
	}
	RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_H2_NEW_HEAD);
	if (owner) {
		/* H3: only the owner clears UPDATE; nobody else may change T.next now */
		if (!ringbuf__cas_link(tb, upd, ringbuf__link_make(upd, n, 0))) {
			ringbuf__warn(rb, cpu, "head push: UPDATE link changed under its owner");
			return RINGBUF_ECORRUPT;
		}
		RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_H3_DONE);
	}
	return 0;
}

/* [BACKED] Data page n of CPU cpu, before the tail first enters it (M1b in
 * ringbuf__move_tail). The data pages of a file or memfd block are holes
 * until written (Z1 in SET-UP); on a file system that fills up while
 * tracing, the first store to such a page raised SIGBUS and killed the
 * traced process. Here one MADV_POPULATE_WRITE ([POPULATE]) allocates the
 * page instead, and says EFAULT where the store would have raised SIGBUS:
 * -1, and the caller drops the event (dropped_events), as a full ring in
 * producer/consumer mode does. The tail stays on its full page, so the
 * next event that needs room tries again: once the file system has room,
 * tracing goes on, every event lost in between counted. Any other outcome
 * (done, or not known: an older kernel, not Linux) marks the page, and a
 * store faults it in as before.
 * C11: backed only goes from 0 to 1, relaxed both ways, and pairs with
 * nothing. It stands for a fact the kernel keeps (the file has the page
 * and never drops it while the block is mapped), not for data: a writer
 * that reads 1 stores to a page that is there whichever process made it
 * so; one that reads 0 late, or a nested writer that cuts in between the
 * load and the store below, calls populate once more on a page already
 * present, which costs a system call and changes nothing. The tail enters
 * every page through here except each CPU's page 0 (where init_in and a
 * reset put it); ringbuf_create_file and ringbuf_create_shm back that page
 * at creation, with the reader page, which readers load from before any
 * tail entered it ([PREFAULT] in >>file). Cost: one call per page in the
 * first lap, which replaces the page fault of the first store (a fresh
 * 8 MiB buffer filled once: 20% less CPU, docs/performance.md); none
 * after. */
static int ringbuf__back(struct ringbuf *rb, unsigned cpu, uint32_t n)
{
	if (ringbuf__populate(ringbuf__dp(rb, cpu, n), rb->page_size) == RINGBUF__ENOROOM)
		return -1;
	RINGBUF__STORE(&ringbuf__bp(rb, cpu, n)->backed, 1);
	return 0;
}

/* Count an event dropped at the full page T (counter: dropped_events or
 * commit_overrun). The drop is decided (M2) before it is counted (M4): a
 * nested writer cutting in between (a reader made room meanwhile) may move the
 * tail off T and take the page's drop snapshot without this drop, which would
 * then be reported one page late (with the page after the next tail move).
 * After counting, if the tail left T, raise the snapshot of the page after T
 * to the new total: the loss is reported before that page's first event, as
 * it happened. Only nested writers (this thread) move the tail, so the relaxed
 * loads see their stores; a reader that already took the page reports it with
 * the next page whose snapshot is higher (late, never lost nor doubled). */
static int ringbuf__drop(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c, uint32_t t,
			 _Atomic(uint64_t) *counter)
{
	RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_DROP_DECIDED);
	RINGBUF__ADD(counter, 1); /* M4 */
	RINGBUF__BARRIER();
	if (RINGBUF__LOAD(&c->tail_page) != t)
		ringbuf__raise_drops(ringbuf__bp(rb, cpu, ringbuf__next_idx(rb, cpu, t)),
				     ringbuf__drop_total(c));
	return RINGBUF_ENOSPC;
}

/* Move the tail off the full page T. Returns 0 (moved or somebody else did:
 * retry the reservation) or < 0 (the event is dropped; already counted).
 *   M1  load T.next (the link to N, with its flags)
 *   M1b N not yet backed: make it present ([BACKED]); no room: drop
 *   M2  load the commit page (and, N being the head, the reader page), decide
 *   M3  the commit on the reader page: re-load T.next, retry if it changed
 *   M4  count the drop (ringbuf__drop), or push the head / move the tail */
static int ringbuf__move_tail(struct ringbuf *rb, unsigned cpu, uint32_t t)
{
	struct ringbuf__cpu *c = ringbuf__cpu(rb, cpu);
	struct ringbuf__bpage *tb = ringbuf__bp(rb, cpu, t);
	uint64_t link;
	uint32_t n, cp;
	int r;

	RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_MOVE_TAIL);
	if (atomic_load_explicit(&c->tail_page, memory_order_acquire) != t)
		return 0;
	link = ringbuf__load_link(tb); /* M1 */
	n = ringbuf__link_idx(link);
	RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_MOVE_TAIL_NEXT);
	/* M1b: a page no writer has entered yet is made present first; where
	 * its file system has no room, the event is dropped and counted
	 * instead of the store to N raising SIGBUS ([BACKED]) */
	if (RINGBUF__UNLIKELY(!RINGBUF__LOAD(&ringbuf__bp(rb, cpu, n)->backed)) && ringbuf__back(rb, cpu, n) < 0)
		return ringbuf__drop(rb, cpu, c, t, &c->dropped_events);
	/* M2. The commit page moves only with the outermost writer, which is
	 * this writer or one it interrupted: it stands still while we run. */
	cp = atomic_load_explicit(&c->commit_page, memory_order_relaxed);
	if (n == cp)
		/* nested writers filled the whole ring before the outermost committed */
		return ringbuf__drop(rb, cpu, c, t, &c->commit_overrun);
	if (link & RINGBUF__F_MASK) {
		/* N is the head page: the ring is full. */
		uint32_t rp = atomic_load_explicit(&c->reader_page, memory_order_acquire);
		if (cp == rp) {
			/* The commit is still on the reader page (or on the head
			 * page the reader is swapping out, published early at S2):
			 * the ring ahead of it is uncommitted and cannot be
			 * overwritten. (The kernel also lets a tail that sits on
			 * the reader page enter the head page here; in this design
			 * the reader page's own link never carries a flag, so that
			 * case cannot arise, and with the early publication it
			 * would be wrong.)
			 * M3: but T.next (M1) and the reader page (M2) are two
			 * loads: between them the reader may have swapped N out
			 * (changing T.next, the ring no longer full) and then
			 * taken T, the commit page, itself. Then the ring has room
			 * and the drop would be spurious. The acquire load of
			 * reader_page read the store of that second swap (S2,
			 * seq_cst), so the first swap's CAS on T.next happens
			 * before the re-load below, which sees it (or later): a
			 * T.next unchanged since M1 (the tag is bumped by every
			 * CAS) means no swap took N in between, and the commit
			 * was on the reader page while the ring was full. */
			if (ringbuf__load_link(tb) != link)
				return 0;
			return ringbuf__drop(rb, cpu, c, t, &c->commit_overrun);
		} else if (atomic_load_explicit(&ringbuf__sh(rb)->mode, memory_order_relaxed) !=
			   RINGBUF_MODE_OVERWRITE) {
			return ringbuf__drop(rb, cpu, c, t, &c->dropped_events);
		} else {
			r = ringbuf__push_head(rb, cpu, t, link);
			if (r < 0)
				return r;
			if (r > 0)
				return 0;
		}
	}
	ringbuf__tail_page_update(rb, cpu, t, n);
	return 0;
}

/* The reservation at offset w of page t claimed the page end (w + len > bsize):
 * pad [w, bsize) and set the write index back, to the page end when the
 * padding has a length, else (4 bytes left or none: a bare "null" header) to
 * w, so that, as in the kernel, commit never covers a record without its
 * length. Set back to w, the word moves on by one update count: a writer
 * that loaded it before this claim (a discard between its check of the
 * tail page and its CAS, ringbuf__discard_at; a reservation before C) must
 * find it changed. As it was, the CAS of a discard whose event ended the
 * page took the event back on a page the tail had left: its bytes stayed
 * under the commit and were read as an event, with a later time than the
 * next page's first (test_interleave, once it cut in there; test_discard:
 * test_discard_cut_in_by_a_page_crossing_becomes_padding). The kernel's
 * rb_reset_tail sets the index back the same way. */
static void ringbuf__pad_tail(struct ringbuf *rb, unsigned cpu, uint32_t t, uint32_t w, uint32_t len)
{
	struct ringbuf__bpage *tb = ringbuf__bp(rb, cpu, t);
	uint32_t room = w < rb->bsize ? rb->bsize - w : 0;
	uint32_t end = room >= 8 ? rb->bsize : w;
	if (room)
		/* delta 1 as the kernel does: a padding of delta 0 and no length
		 * is its "null" event; nothing follows on this page anyway */
		ringbuf__put_padding(ringbuf__dp(rb, cpu, t)->data + w, room, room >= 8 ? 1 : 0);
	RINGBUF__BARRIER();
	RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_CROSS_PADDED);
	ringbuf__local_sub(&tb->write, (uint64_t)(w + len - end) - (end == w ? RINGBUF__WRITE_INTCNT : 0));
}

/* After a successful reservation CAS at (t, w): an interrupted writer whose
 * slot claims the same place had written it before its own CAS, which will now
 * fail: its slot no longer describes bytes in flight, so crash recovery must
 * not pad them (they are ours). Mark it RINGBUF__SLOT_GONE rather than clear
 * it: the interrupted writer may be between its P2 and P3 ([SLOT]), and the
 * bit makes its P3 fail where a 0 would let it store len over our event. A
 * plain load and store: the writers of that slot are interrupted until we
 * return. Depth 1 (the common case) loops zero times. */
static inline void ringbuf__slots_mark(struct ringbuf__cpu *c, uint32_t depth, uint32_t t, uint32_t w)
{
	uint32_t d;
	for (d = 0; d + 1 < depth; d++)
		if (RINGBUF__LOAD(&c->slots[d].page) == t && RINGBUF__LOAD(&c->slots[d].off) == w) {
			uint32_t l = RINGBUF__LOAD(&c->slots[d].len);
			RINGBUF__STORE(&c->slots[d].len, l | RINGBUF__SLOT_GONE | (l == 0 ? RINGBUF__SLOT_PRE : 0));
		}
}

/* Our own slot re-asserted (a deeper writer that reserved here and rolled
 * back may have left a mark on it), then the interrupted writers' marked. */
static inline void ringbuf__slot_reserved(struct ringbuf__cpu *c, uint32_t depth, uint32_t t,
					  uint32_t w, uint32_t total)
{
	RINGBUF__STORE(&c->slots[depth - 1].len, total);
	ringbuf__slots_mark(c, depth, t, w);
	RINGBUF__BARRIER();
}

/* The marks of ringbuf__slots_mark off again, for a rollback of the
 * reservation at (t, w) (ringbuf__discard_at): PRE (marked before its P3)
 * goes back to 0, as no length beside it is the slot's own (a failed P3
 * added one); otherwise the slot's length stays, without GONE. */
static void ringbuf__slots_unmark(struct ringbuf__cpu *c, uint32_t depth, uint32_t t, uint32_t w)
{
	uint32_t d;
	for (d = 0; d + 1 < depth; d++)
		if (RINGBUF__LOAD(&c->slots[d].page) == t && RINGBUF__LOAD(&c->slots[d].off) == w) {
			uint32_t l = RINGBUF__LOAD(&c->slots[d].len);
			RINGBUF__STORE(&c->slots[d].len, (l & RINGBUF__SLOT_PRE) ? 0 : l & ~RINGBUF__SLOT_GONE);
		}
}

/* Reserve an event of evlen bytes (A-D). Returns the payload or NULL (counted). */
RINGBUF_API void *ringbuf__reserve_next(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c,
					uint32_t evlen, uint32_t depth, uint64_t first_ts)
{
	const uint32_t bsize = rb->bsize;
	const bool abs_mode = rb->ts_mode == RINGBUF_TS_ABSOLUTE;
	int loops;

	for (loops = 0; loops < RINGBUF__MAX_LOOPS; loops++) {
		/* A: order matters: w before the stamps (see >>design) */
		uint32_t t = RINGBUF__LOAD(&c->tail_page);
		struct ringbuf__bpage *tb = ringbuf__bp(rb, cpu, t);
		uint64_t wfull = RINGBUF__LOAD(&tb->write);
		uint32_t w = (uint32_t)(wfull & RINGBUF__WRITE_MASK);
		uint64_t before, after, ts, delta = 0;
		uint32_t stamp = 0, total;
		RINGBUF__BARRIER();
		before = RINGBUF__LOAD(&c->before_stamp);
		after = RINGBUF__LOAD(&c->write_stamp);
		RINGBUF__BARRIER();
		/* first_ts: the inline fast path's clock read, taken before these
		 * loads ([CLOCK-FIRST]). It stands only where it is at or after
		 * write_stamp with the stamps equal: then no event in the buffer
		 * is later (every one written since that read was nested, is
		 * complete, and stored its time as write_stamp; a discarded one
		 * left padding with its time only with before_stamp invalidated).
		 * Otherwise, and on every retry, the clock is read here. */
		ts = first_ts;
		first_ts = RINGBUF__NO_TS;
		if (ts == RINGBUF__NO_TS || before != after || ts < after)
			ts = ringbuf__clock(rb);
		RINGBUF__BARRIER();
		RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_A_TIME);

		if (RINGBUF__UNLIKELY(w > bsize)) {
			/* an interrupted writer claimed the page end: help move on */
			if (ringbuf__move_tail(rb, cpu, t) < 0)
				goto fail;
			continue;
		}
		/* write_stamp is the previous event's time when it equals before_stamp:
		 * a clock seen going backwards is clamped to it (at a page start too) */
		if (RINGBUF__UNLIKELY(ts < after) && before == after)
			ts = after;
		if (w != 0) {
			if (abs_mode || before != after) {
				stamp = RINGBUF__TYPE_TIME_STAMP;
			} else {
				delta = ts - after;
				if (RINGBUF__UNLIKELY(delta > RINGBUF__TS_MASK))
					stamp = delta >> RINGBUF__TS_BITS ? RINGBUF__TYPE_TIME_STAMP
									  : RINGBUF__TYPE_TIME_EXTEND;
			}
		}
		total = evlen + (stamp ? RINGBUF__STAMP_LEN : 0);
		/* A TIME_STAMP holds 59 bits; readers (kbuffer too) take the top 5
		 * from the running time. Across a 2^59 boundary the event starts a
		 * new page instead: the page time stamp holds all 64 bits. */
		if (RINGBUF__UNLIKELY(stamp == RINGBUF__TYPE_TIME_STAMP) &&
		    ((atomic_load_explicit(&ringbuf__dp(rb, cpu, t)->time_stamp, memory_order_relaxed) ^
		      ts) >> RINGBUF__TS_BITS) != 0)
			total = bsize - w + 4;

		/* The slot describes the reservation before it exists, so that a
		 * reader recovering the block of a killed writer knows which bytes
		 * were in flight (ringbuf_recover). */
		if (!ringbuf__slot_publish(rb, cpu, c, depth, t, tb, wfull, total,
					   w + (stamp ? RINGBUF__STAMP_LEN : 0)))
			continue;
		/* B */
		RINGBUF__STORE(&c->before_stamp, ts);
		RINGBUF__BARRIER();
		RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_B_BEFORE);

		/* C */
		if (RINGBUF__UNLIKELY(w + total > bsize)) {
			if (!ringbuf__local_cas(&tb->write, wfull, wfull + total))
				continue;
			RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_C_CLAIMED);
			ringbuf__slot_reserved(c, depth, t, w, total);
			RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_CROSS_CLAIMED);
			ringbuf__pad_tail(rb, cpu, t, w, total);
			if (ringbuf__move_tail(rb, cpu, t) < 0)
				goto fail;
			continue;
		}
		if (!ringbuf__local_cas(&tb->write, wfull, wfull + total))
			continue;
		ringbuf__local_inc(&tb->entries);
		RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_C_CLAIMED);
		ringbuf__slot_reserved(c, depth, t, w, total);
		RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_C_RESERVED);

		/* D */
		RINGBUF__STORE(&c->write_stamp, ts);
		RINGBUF__BARRIER();
		RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_D_WRITE_STAMP);

		{
			struct ringbuf__dpage *dp = ringbuf__dp(rb, cpu, t);
			unsigned char *p = dp->data + w;
			if (w == 0)
				atomic_store_explicit(&dp->time_stamp, ts, memory_order_relaxed);
			if (stamp) {
				ringbuf__put_stamp(p, stamp, stamp == RINGBUF__TYPE_TIME_EXTEND ? delta : ts);
				p += RINGBUF__STAMP_LEN;
				delta = 0;
			}
			return ringbuf__put_event(rb, p, evlen, (uint32_t)delta);
		}
	}
	ringbuf__warn(rb, cpu, "reserve: too many retries");
fail:
	/* [SLOT-FAIL] No length stays in the slot of a reservation that failed
	 * (its P3 may have run: a crossing dropped in move_tail, the last
	 * retry): a writer that entered at this depth while this one ran (a
	 * signal's writer in its entry window, RINGBUF__TP_ENTERING) takes the
	 * len its entry stored, 0, for its first P1, and a length left there,
	 * unmarked, would be recovery's after a kill before its P3 -- padded
	 * over the events of writers nested in that P1 (the marks missed them:
	 * the slot's fields were stale; RINGBUF__TP_P1_PAGE; test_file:
	 * kill_after_a_failed_reservation_in_the_entry_window_*) */
	RINGBUF__STORE(&c->slots[depth - 1].len, 0);
	RINGBUF__BARRIER();
	return NULL;
}

/* Commit everything reserved on cpu (outermost writer only).
 *
 * Also recovery's step 3, in a recorder whose block another process can
 * still write (HOSTILE MEMORY): every page index it uses -- the commit and
 * tail pages, each link it follows -- is checked against the ring where it
 * is loaded, and an index out of range ends the walk with a warning (the
 * recovery's final validation then refuses the block). A writer of its own
 * block never meets one; the checks are compares on indexes already loaded. */
static void ringbuf__set_commit_to_write(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c)
{
	uint32_t guard = 0, limit = 4 * (rb->nr_pages + 1) + 16;
	for (;;) {
		uint32_t cp = RINGBUF__LOAD(&c->commit_page);
		uint32_t tp = RINGBUF__LOAD(&c->tail_page);
		struct ringbuf__dpage *dp;
		uint64_t w;
		if (RINGBUF__UNLIKELY(cp > rb->nr_pages || tp > rb->nr_pages)) {
			ringbuf__warn(rb, cpu, "commit: commit or tail page out of range");
			return;
		}
		while (cp != tp) {
			/* the page is complete: its write index is final */
			dp = ringbuf__dp(rb, cpu, cp);
			w = RINGBUF__LOAD(&ringbuf__bp(rb, cpu, cp)->write) & RINGBUF__WRITE_MASK;
			/* [W-commit] release: the page's events before its commit */
			atomic_store_explicit(&dp->commit, (long)w, memory_order_release);
			cp = ringbuf__next_idx(rb, cpu, cp);
			if (RINGBUF__UNLIKELY(cp > rb->nr_pages)) {
				ringbuf__warn(rb, cpu, "commit: link index out of range");
				return;
			}
			/* [W-cpage] release: the page commit before the commit page */
			atomic_store_explicit(&c->commit_page, cp, memory_order_release);
			RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_COMMIT_PAGE);
			{
				uint32_t ntp = RINGBUF__LOAD(&c->tail_page);
				/* Nested writers may keep moving the tail while we
				 * walk (signal handlers filling small pages): that is
				 * progress, bounded because the tail cannot pass the
				 * commit page. Only a walk that does not meet a tail
				 * standing still within a few laps is corruption. */
				if (ntp != tp)
					guard = 0;
				if (RINGBUF__UNLIKELY(ntp > rb->nr_pages)) {
					ringbuf__warn(rb, cpu, "commit: commit or tail page out of range");
					return;
				}
				tp = ntp;
			}
			if (++guard > limit) {
				ringbuf__warn(rb, cpu, "commit: walked past the tail");
				return;
			}
		}
		dp = ringbuf__dp(rb, cpu, cp);
		for (;;) {
			w = RINGBUF__LOAD(&ringbuf__bp(rb, cpu, cp)->write) & RINGBUF__WRITE_MASK;
			if ((unsigned long)atomic_load_explicit(&dp->commit, memory_order_relaxed) == w)
				break;
			if (w > rb->bsize)
				break; /* cannot happen for the outermost writer; be safe */
			atomic_store_explicit(&dp->commit, (long)w, memory_order_release); /* [W-commit] */
		}
		RINGBUF__BARRIER();
		if (RINGBUF__LOAD(&c->tail_page) == cp)
			return;
		/* a nested writer moved the tail while we walked: go on */
	}
}


/* Ring pages holding committed, unread data (kernel nr_dirty_pages). */
static uint32_t ringbuf__dirty_pages(struct ringbuf__cpu *c)
{
	uint64_t t = RINGBUF__LOAD(&c->pages_touched), l = ringbuf__pages_lost(c, false),
		 r = RINGBUF__LOAD(&c->pages_read);
	return t > l + r ? (uint32_t)(t - l - r) : 0;
}

/* FUTEX_WAKE, private (no page lookup in the kernel) unless the block is
 * shared with other processes; waiters use the same kind. No time argument:
 * SYS_futex where it exists, else SYS_futex_time64 (riscv32). */
static void ringbuf__futex_wake(const struct ringbuf *rb, _Atomic(uint32_t) *word)
{
#if defined(__linux__) && defined(SYS_futex)
	(void)syscall(SYS_futex, (void *)word, rb->shared ? 1 : 1 | 128, INT_MAX, NULL, NULL, 0);
#elif defined(__linux__) && defined(SYS_futex_time64)
	(void)syscall(SYS_futex_time64, (void *)word, rb->shared ? 1 : 1 | 128, INT_MAX, NULL, NULL, 0);
#else
	(void)rb;
	(void)word;
#endif
}

/* [WAIT-W2] A reader waits: wake every waiter if what the lowest watermark
 * (or a data waiter) waits for is there, and the armed waiters wait for this
 * CPU (or any). One wake per arming: the waker
 * clears the armed bits and the armed CPU (CAS acquire: it read the arming [WAIT-R2] of every
 * waiter it wakes, so each one's [WAIT-R1] read of wait_seq happens before
 * our bump, and its sleep returns), so the commits that follow pay a load and
 * a test until a waiter that still finds nothing arms them again. The CAS is
 * retried while the word changes under it (a waiter registering, re-arming or
 * leaving): giving up there could leave an armed waiter unwoken. Lock-free;
 * async-signal-safe. */
static void ringbuf__wake_check(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c)
{
	uint64_t w = atomic_load_explicit(&ringbuf__sh(rb)->waiters, memory_order_relaxed);
	uint32_t dirty = 0;
	(void)cpu;
	if (!(w & (RINGBUF__WAIT_DATA | RINGBUF__WAIT_FULL)))
		return; /* nobody armed: a wake is already on its way */
	if (!(w & RINGBUF__WAIT_DATA)) {
		/* checked for this many touched pages (ringbuf__wake_due): read
		 * before the count, so a page touched meanwhile is checked again */
		RINGBUF__STORE(&c->wake_seen, RINGBUF__LOAD(&c->pages_touched));
		RINGBUF__BARRIER();
	}
	dirty = ringbuf__dirty_pages(c);
	for (;;) {
		if (!(w & (RINGBUF__WAIT_DATA | RINGBUF__WAIT_FULL)))
			return; /* another writer (or a leaving waiter) woke them */
		if (!ringbuf__wait_for_cpu(rb, c, w))
			return; /* re-armed since, for another CPU only */
		/* FULL armed implies a watermark (set in the same CAS) */
		if (!(w & RINGBUF__WAIT_DATA) && dirty < RINGBUF__WAIT_MIN(w))
			return;
		if (atomic_compare_exchange_strong_explicit(&ringbuf__sh(rb)->waiters, &w,
							    w & ~((uint64_t)(RINGBUF__WAIT_DATA | RINGBUF__WAIT_FULL) |
								  (uint64_t)RINGBUF__WAIT_ANY << RINGBUF__WAIT_CPU_SHIFT),
							    memory_order_acquire, memory_order_relaxed))
			break;
	}
	atomic_fetch_add_explicit(&ringbuf__sh(rb)->wait_seq, 1, memory_order_release);
	ringbuf__futex_wake(rb, &ringbuf__sh(rb)->wait_seq);
}

RINGBUF_API void ringbuf__end_commit(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c)
{
	for (;;) {
		uint64_t n = RINGBUF__LOAD(&c->commits);
		uint32_t depth = RINGBUF__LOAD(&c->committing);
		RINGBUF__BARRIER();
		/* [RESET-W] not while a reset re-initialises the pages: this
		 * writer was refused, or (re-)entered after the reset's barrier;
		 * what it would commit is being thrown away with the rest */
		if (depth == 1 && !ringbuf__resetting(c))
			ringbuf__set_commit_to_write(rb, cpu, c);
		RINGBUF__BARRIER();
		RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_COMMIT_END);
		/* [M3] release when reaching 0: pairs with ringbuf_reset_cpu's and
		 * the merged readers' acquire */
		atomic_store_explicit(&c->committing, depth - 1,
				      depth == 1 ? memory_order_release : memory_order_relaxed);
		RINGBUF__BARRIER();
		/* A writer that interrupted us after the walk found depth 2 and left
		 * its event for us: commit again. */
		if (depth != 1)
			return;
		if (RINGBUF__LIKELY(RINGBUF__LOAD(&c->commits) == n)) {
			/* [M1], [Q-X]: the outermost exit, as in ringbuf__commit_fast */
			atomic_store_explicit(&c->inflight_ts, RINGBUF__LOAD(&c->write_stamp),
					      memory_order_release);
			atomic_store_explicit(&c->commits, n + 1, memory_order_release);
			/* [WAIT-W] one load when nobody waits; the reader's
			 * membarrier() orders it after our commit (see ringbuf_wait) */
			if (RINGBUF__UNLIKELY(ringbuf__wake_due(
				    rb, c, atomic_load_explicit(&ringbuf__sh(rb)->waiters, memory_order_relaxed))))
				ringbuf__wake_check(rb, cpu, c);
			return;
		}
		RINGBUF__STORE(&c->committing, 1);
		RINGBUF__BARRIER();
	}
}

#ifdef RINGBUF_DEBUG
/* A writer on a buffer whose outermost writer is another thread breaks the
 * contract (two threads on one CPU buffer). */
static void ringbuf__debug_owner(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c, uint32_t depth)
{
	uint32_t me = ringbuf__gettid();
	(void)rb;
	if (depth == 1)
		c->dbg_owner = me;
	else if (c->dbg_owner != me)
		ringbuf__report("writer on a CPU buffer another thread is writing", cpu);
}
#define RINGBUF__DEBUG_OWNER(rb, cpu, c, depth) ringbuf__debug_owner(rb, cpu, c, depth)
static bool ringbuf__check_current(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c,
				   const void *data, const char *op)
{
	uint32_t depth = RINGBUF__LOAD(&c->committing);
	const struct ringbuf__slot *s;
	const unsigned char *ev;
	if (depth == 0 || depth > RINGBUF_MAX_NEST) {
		ringbuf__report(op, cpu);
		return false;
	}
	s = &c->slots[depth - 1];
	ev = ringbuf__dp(rb, cpu, RINGBUF__LOAD(&s->page))->data + RINGBUF__LOAD(&s->event);
	{
		uint32_t w0;
		memcpy(&w0, ev, 4);
		if ((const unsigned char *)data == ev + (RINGBUF__HDR_TYPE(w0) == 0 ? 8 : 4))
			return true;
	}
	ringbuf__report(op, cpu);
	return false;
}
#else
#define RINGBUF__DEBUG_OWNER(rb, cpu, c, depth) ((void)0)
#endif

RINGBUF_API void *ringbuf__reserve_refused(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c)
{
	RINGBUF__ADD(&c->disabled_events, 1);
	ringbuf__end_commit(rb, cpu, c);
	return NULL;
}

RINGBUF_API void *(ringbuf_reserve)(struct ringbuf *rb, unsigned cpu, size_t len)
{
	return ringbuf__reserve_inline(rb, cpu, len);
}

RINGBUF_API void (ringbuf_commit)(struct ringbuf *rb, unsigned cpu, void *data)
{
	ringbuf__commit_inline(rb, cpu, data);
}

/* The outermost writer's A-D once entered, for any flags and stamp mode
 * (the inline path's length test against inline_max sends the others here). */
static void *ringbuf__reserve_depth1(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c, size_t len)
{
	const bool align8 = (rb->flags & RINGBUF_F_ALIGN8) != 0;
	uint32_t evlen = ringbuf__event_length_a(align8, len);
	if (rb->ts_mode != RINGBUF_TS_DELTA)
		return ringbuf__reserve_next(rb, cpu, c, evlen, 1, RINGBUF__NO_TS);
	return ringbuf__reserve_fast(rb, cpu, c, evlen, align8);
}

/* The general reserve on CPU buffer `cpu`: any depth, bad arguments
 * (counted). The mapped modes come here with the index of the buffer they
 * chose (ringbuf__reserve_slow in >>contexts). */
static void *ringbuf__reserve_at(struct ringbuf *rb, unsigned cpu, size_t len)
{
	struct ringbuf__cpu *c;
	uint32_t depth;
	void *ev;

	if (RINGBUF__UNLIKELY(!rb || cpu >= rb->ncpu))
		return NULL; /* no CPU buffer to count it in */
	c = ringbuf__cpu(rb, cpu);
	if (RINGBUF__UNLIKELY(len == 0 || len > rb->max_event)) {
		RINGBUF__ADD(&c->rejected_events, 1);
		return NULL;
	}
	depth = RINGBUF__LOAD(&c->committing) + 1;
	if (RINGBUF__UNLIKELY(depth > RINGBUF_MAX_NEST)) {
		RINGBUF__ADD(&c->nest_overflow, 1);
		return NULL;
	}
	/* No reservation at this depth yet (the slot may hold the last one,
	 * complete): recovery after a kill must not mistake it for one in flight */
	RINGBUF__STORE(&c->slots[depth - 1].len, 0);
	RINGBUF__BARRIER();
	RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_ENTERING);
	/* Enter before checking the disable flags: reset_cpu disables, then
	 * (membarrier) waits for committing to drop to 0. */
	RINGBUF__STORE(&c->committing, depth);
	if (depth > 1)
		RINGBUF__STORE(&c->commits, RINGBUF__LOAD(&c->commits) + RINGBUF__COMMITS_NESTED);
	RINGBUF__BARRIER(); /* [M2] committing before the clock read */
	RINGBUF__DEBUG_OWNER(rb, cpu, c, depth);
	if (RINGBUF__UNLIKELY(ringbuf__disabled(rb, c))) {
		RINGBUF__ADD(&c->disabled_events, 1);
		ringbuf__end_commit(rb, cpu, c);
		return NULL;
	}
	ev = depth == 1 ? ringbuf__reserve_depth1(rb, cpu, c, len)
			: ringbuf__reserve_next(rb, cpu, c, ringbuf__event_length(rb, len), depth,
						RINGBUF__NO_TS);
	if (RINGBUF__UNLIKELY(!ev))
		ringbuf__end_commit(rb, cpu, c);
	return ev;
}

/* What commit and discard share: an index (the mapped modes chose theirs in
 * >>contexts) gives the CPU buffer and the depth of the current event, or 0
 * when there is none (or, with RINGBUF_DEBUG, data is not it). */
static inline uint32_t ringbuf__end_begin(struct ringbuf *rb, unsigned cpu, void *data, bool commit,
					  struct ringbuf__cpu **cp)
{
	struct ringbuf__cpu *c;
	uint32_t depth;
	(void)commit; /* RINGBUF_DEBUG's message only */
	if (RINGBUF__UNLIKELY(!rb || cpu >= rb->ncpu || !data))
		return 0;
	c = ringbuf__cpu(rb, cpu);
#ifdef RINGBUF_DEBUG
	if (!ringbuf__check_current(rb, cpu, c, data,
				    commit ? "commit: not the current event of this CPU"
					   : "discard: not the current event of this CPU"))
		return 0;
#endif
	depth = RINGBUF__LOAD(&c->committing);
	if (RINGBUF__UNLIKELY(depth == 0 || depth > RINGBUF_MAX_NEST))
		return 0;
	*cp = c;
	return depth;
}

/* The general commit on CPU buffer `cpu` (ringbuf__commit_slow in
 * >>contexts for the mapped modes). */
static void ringbuf__commit_at(struct ringbuf *rb, unsigned cpu, void *data)
{
	struct ringbuf__cpu *c = NULL;
	uint32_t depth = ringbuf__end_begin(rb, cpu, data, true, &c);
	if (RINGBUF__UNLIKELY(depth == 0))
		return;
	/* [SLOT-DONE] counted committed (per-depth counter: a nested writer
	 * counts in its own slot), then complete: recovery keeps it */
	RINGBUF__OWNER_INC(&c->entries_d[depth - 1]);
	RINGBUF__BARRIER();
	RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_COUNTED);
	RINGBUF__STORE(&c->slots[depth - 1].len, 0);
	RINGBUF__BARRIER();
	if (depth == 1 && ringbuf__commit_fast(rb, cpu, c))
		return;
	ringbuf__end_commit(rb, cpu, c);
}

/* ringbuf_discard on CPU buffer `cpu` (ringbuf_discard in >>contexts for the
 * mapped modes). */
static void ringbuf__discard_at(struct ringbuf *rb, unsigned cpu, void *data)
{
	struct ringbuf__cpu *c = NULL;
	struct {
		uint32_t page, off, len, event;
	} s;
	struct ringbuf__bpage *tb;
	unsigned char *base;
	uint32_t depth, w0, delta;
	uint64_t wfull;

	depth = ringbuf__end_begin(rb, cpu, data, false, &c);
	if (RINGBUF__UNLIKELY(depth == 0))
		return;
	s.page = RINGBUF__LOAD(&c->slots[depth - 1].page);
	s.off = RINGBUF__LOAD(&c->slots[depth - 1].off);
	s.len = RINGBUF__LOAD(&c->slots[depth - 1].len) & ~(RINGBUF__SLOT_GONE | RINGBUF__SLOT_PRE);
	s.event = RINGBUF__LOAD(&c->slots[depth - 1].event);
	tb = ringbuf__bp(rb, cpu, s.page);
	base = ringbuf__dp(rb, cpu, s.page)->data;

	/* The event after this one must not take its delta from our stamp. */
	RINGBUF__STORE(&c->before_stamp, RINGBUF__STAMP_INVALID);
	RINGBUF__BARRIER();
	RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_DISCARD_INVAL);

	/* Last reservation on the tail page: roll the write index back, as if
	 * we never reserved. The place is then free again, and an interrupted
	 * writer whose slot we marked (ringbuf__slot_reserved) may still
	 * reserve it: its slot must then name its bytes (a kill between its
	 * CAS and its re-assert would leave them unpadded), so the marks come
	 * off. They come off first, while the place is still ours: no writer
	 * can take it and mark those slots in between. Taken off after the
	 * rollback, a deeper writer that cut in between a load and the store of
	 * a mark reserved the freed place and committed, its own mark changed
	 * nothing (the bit was set), the store cleared it, and the interrupted
	 * writer's P3 then claimed bytes under that event (a helper review;
	 * test_file: a_writer_cutting_into_a_rollback_keeps_the_slot_marked).
	 * A kill between the two leaves our slot, its length still ours,
	 * naming the place: recovery skips the slots below it that name it
	 * (ringbuf__recover_cpu). Where the rollback fails (a deeper writer
	 * reserved after our event meanwhile, or crossed the page end and moved
	 * the tail on: the word changed, ringbuf__pad_tail), the marks go back
	 * on. */
	wfull = RINGBUF__LOAD(&tb->write);
	if (RINGBUF__LOAD(&c->tail_page) == s.page && (wfull & RINGBUF__WRITE_MASK) == (uint64_t)s.off + s.len) {
		ringbuf__slots_unmark(c, depth, s.page, s.off);
		RINGBUF__BARRIER();
		RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_DISCARD_UNMARKED);
		if (ringbuf__local_cas(&tb->write, wfull, wfull - s.len)) {
			RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_DISCARD_ROLLED);
			ringbuf__local_dec(&tb->entries);
			RINGBUF__STORE(&c->slots[depth - 1].len, 0);
			RINGBUF__ADD(&c->discarded, 1);
			ringbuf__end_commit(rb, cpu, c);
			return;
		}
		ringbuf__slots_mark(c, depth, s.page, s.off);
		RINGBUF__BARRIER();
	}
	/* Something follows: the data event becomes padding of the same length,
	 * keeping its delta so the time of what follows is unchanged (a delta of 0
	 * is kept too: the padding carries its length, which is what readers use;
	 * the kernel would bump it to 1 and shift later events by 1 ns). A stamp or
	 * extend in front of it stays, carrying the time. */
	memcpy(&w0, base + s.event, 4);
	delta = RINGBUF__HDR_DELTA(w0);
	ringbuf__put_padding(base + s.event, s.off + s.len - s.event, delta);
	/* the page cannot have been recycled: the commit has not passed it */
	ringbuf__local_dec(&tb->entries);
	RINGBUF__BARRIER();
	RINGBUF__STORE(&c->slots[depth - 1].len, 0);
	RINGBUF__ADD(&c->discarded, 1);
	ringbuf__end_commit(rb, cpu, c);
}

RINGBUF_API int ringbuf_write(struct ringbuf *rb, unsigned cpu, const void *data, size_t len)
{
	void *p;
	if (!rb || (cpu >= rb->ncpu && cpu != RINGBUF_CPU_THREAD && cpu != RINGBUF_CPU_CURRENT))
		return RINGBUF_EINVAL;
	if (cpu >= rb->ncpu) {
		if (len == 0 || !data)
			return RINGBUF_EINVAL;
		if (len > rb->max_event)
			return RINGBUF_E2BIG;
		p = ringbuf_reserve(rb, cpu, len);
		if (!p)
			return RINGBUF_ENOSPC;
		memcpy(p, data, len);
		ringbuf_commit(rb, cpu, p);
		return 0;
	}
	if (len == 0 || !data) {
		RINGBUF__ADD(&ringbuf__cpu(rb, cpu)->rejected_events, 1);
		return RINGBUF_EINVAL;
	}
	if (len > rb->max_event) {
		RINGBUF__ADD(&ringbuf__cpu(rb, cpu)->rejected_events, 1);
		return RINGBUF_E2BIG;
	}
	p = ringbuf_reserve(rb, cpu, len);
	if (!p)
		return RINGBUF_ENOSPC;
	memcpy(p, data, len);
	ringbuf_commit(rb, cpu, p);
	return 0;
}

/* ==== >>reader ========================================================== */




/* ---- the reader lock -------------------------------------------------------
 * One word per CPU: 0, or the holder's id. A holder that died (a killed
 * process sharing the block, a thread gone mid-call, a file whose lock word
 * was left set, opened without RINGBUF_OPEN_RECOVER) is found out and its
 * lock taken over; a live holder is waited for a bounded time.
 *
 * The id (Linux): tid (22 bits: Linux's PID_MAX_LIMIT) | pid namespace tag
 * << 22 (10 bits of the namespace's inode, 0: unknown) | start time << 32
 * (the thread's start time in clock ticks from /proc, low 32 bits, 0:
 * unknown). (tid, start time) names one thread for good: a tid is reused
 * only by a thread that started later. Read once per thread (initial-exec
 * TLS, async-signal-safe calls: open/read/close).
 *
 * Taking it: CAS 0 -> id (acquire; the unlock's store is release). The same
 * id already there: this thread holds it (a reader call in a signal handler
 * that interrupted one): RINGBUF_EBUSY at once. Else RINGBUF__RL_YIELDS
 * sched_yield()s, then RINGBUF__RL_SLEEPS sleeps of 1 ms, then RINGBUF_EBUSY
 * (about half a second; an iterator made with RINGBUF_ITER_NOWAIT makes
 * the one CAS and returns RINGBUF_EBUSY, so that a signal handler never
 * waits). After the yields, and every RINGBUF__RL_CHECK
 * sleeps, the holder is judged: gone when its tid is not there (/proc, same
 * pid namespace: /proc/<tid>/stat for a shared block, /proc/self/task/<tid>
 * for a private one, whose holder can only be a thread of this process), is
 * a zombie, or started at another time than the id says. A gone holder's id
 * is replaced by ours with a CAS from that very id (so two judges cannot
 * both take it), then ringbuf__repair_reader puts back a page swap it was
 * cut in. Limits: a holder in another pid namespace (tag differs, or
 * unknown on a shared block) is never judged (RINGBUF_EBUSY after the
 * bound); without /proc a private block's holder is judged by tgkill(pid,
 * tid, 0) alone (a reused tid looks alive) and a shared block's not at all;
 * without Linux the id is a TLS address and nobody is judged. */
#define RINGBUF__RL_YIELDS 64
#define RINGBUF__RL_SLEEPS 500
#define RINGBUF__RL_CHECK 16
#define RINGBUF__RL_TID 0x3fffffu
#define RINGBUF__RL_NS(w) ((uint32_t)((w) >> 22) & 0x3ffu)
#ifdef RINGBUF_TESTING
static _Atomic(uint64_t) ringbuf__rl_waits;     /* yields and sleeps waiting for the lock */
static _Atomic(uint64_t) ringbuf__rl_takeovers; /* locks taken from a holder found gone */
#endif

#if defined(__linux__) && defined(SYS_gettid)
static RINGBUF__TLS uint64_t ringbuf__rl_me;
static RINGBUF__TLS uint32_t ringbuf__rl_ns;

/* "/proc/<a>/<b>/<c>/stat" with numbers, without snprintf (signal-safe). */
static char *ringbuf__put_num(char *p, uint32_t v)
{
	char t[12];
	int n = 0;
	do
		t[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (n)
		*p++ = t[--n];
	return p;
}

/* Read a thread's state letter and start time from a /proc stat file.
 * 0, or -1 with errno. */
static int ringbuf__proc_stat(const char *path, char *state, uint64_t *start)
{
	char buf[1024];
	ssize_t n;
	int fd = open(path, O_RDONLY | RINGBUF__O_CLOEXEC), f;
	const char *p, *end;
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0) {
		errno = ESRCH; /* a thread exiting as we read */
		return -1;
	}
	buf[n] = 0;
	end = buf + n;
	/* "tid (comm) S ppid ..." : comm may hold spaces and ')' */
	for (p = end; p > buf && p[-1] != ')'; p--)
		;
	if (p == buf || p + 2 >= end)
		return errno = EINVAL, -1;
	*state = p[1];
	/* field 3 is the state; the start time is field 22 */
	for (p += 2, f = 3; f < 22 && p < end; p++)
		if (*p == ' ')
			f++;
	if (f != 22 || *p < '0' || *p > '9')
		return errno = EINVAL, -1;
	for (*start = 0; *p >= '0' && *p <= '9'; p++)
		*start = *start * 10 + (uint64_t)(*p - '0');
	return 0;
}

/* The stat path of thread tid: of this process (private) or any (shared). */
static void ringbuf__tid_path(char *buf, uint32_t tid, bool shared)
{
	static const char self[] = "/proc/self/task/";
	char *p = buf;
	memcpy(p, "/proc/", 6);
	p += 6;
	if (!shared) {
		memcpy(buf, self, sizeof self - 1);
		p = buf + sizeof self - 1;
	}
	p = ringbuf__put_num(p, tid);
	memcpy(p, "/stat", 6);
}

static uint64_t ringbuf__rl_self(void)
{
	uint32_t tid = ringbuf__gettid();
	if (RINGBUF__UNLIKELY((uint32_t)(ringbuf__rl_me & RINGBUF__RL_TID) != tid || !ringbuf__rl_me)) {
		char path[48], st;
		uint64_t start = 0;
		struct stat ns;
		uint32_t tag = 0, stamp = 0;
		int e = errno;
		if (stat("/proc/self/ns/pid", &ns) == 0) {
			uint64_t ino = (uint64_t)ns.st_ino;
			tag = (uint32_t)(ino ^ (ino >> 10) ^ (ino >> 20) ^ (ino >> 30)) & 0x3ffu;
			if (!tag)
				tag = 1;
		}
		ringbuf__tid_path(path, tid, false);
		if (ringbuf__proc_stat(path, &st, &start) == 0)
			stamp = (uint32_t)start ? (uint32_t)start : 1;
		ringbuf__rl_ns = tag;
		ringbuf__rl_me = (uint64_t)stamp << 32 | (uint64_t)tag << 22 | (tid & RINGBUF__RL_TID);
		errno = e;
	}
	return ringbuf__rl_me;
}

/* Is the holder named by id w gone for sure? (false: alive, or unknown) */
static bool ringbuf__rl_gone(uint64_t w, bool shared)
{
	uint32_t tid = (uint32_t)w & RINGBUF__RL_TID, stamp = (uint32_t)(w >> 32);
	char path[48], st;
	uint64_t start;
	int e = errno;
	bool gone = false;
	if (tid == 0)
		return true; /* no thread has tid 0: not an id */
	if (shared && (RINGBUF__RL_NS(w) != ringbuf__rl_ns || ringbuf__rl_ns == 0))
		return false; /* another pid namespace: its tids are not ours */
	ringbuf__tid_path(path, tid, shared);
	if (ringbuf__proc_stat(path, &st, &start) == 0) {
		gone = st == 'Z' || st == 'X' || (stamp && ((uint32_t)start ? (uint32_t)start : 1) != stamp);
	} else if (errno == ENOENT || errno == ESRCH) {
		struct stat self;
		if (stat("/proc/self/stat", &self) == 0)
			gone = true; /* /proc works: no such thread */
		else if (!shared)
			gone = syscall(SYS_tgkill, (long)syscall(SYS_getpid), (long)tid, 0) == -1 && errno == ESRCH;
	}
	errno = e;
	return gone;
}
#else
static RINGBUF__TLS char ringbuf__thread_token; /* its address: the id */
static uint64_t ringbuf__rl_self(void)
{
	return (uint64_t)(uintptr_t)&ringbuf__thread_token;
}
static bool ringbuf__rl_gone(uint64_t w, bool shared)
{
	(void)w;
	(void)shared;
	return false;
}
#endif

static void ringbuf__sleep_ms(unsigned ms);
static void ringbuf__repair_reader(struct ringbuf *rb, unsigned cpu);

/* Take cpu's reader lock: 0, or RINGBUF_EBUSY if this thread already holds it
 * (a signal handler interrupted a reader) or a live holder keeps it past the
 * bound (see above). */
static int ringbuf__reader_lock(struct ringbuf *rb, struct ringbuf__cpu *c)
{
	uint64_t me = ringbuf__rl_self(), cur = 0;
	unsigned n = 0;
	while (!atomic_compare_exchange_strong_explicit(&c->reader_lock, &cur, me, memory_order_acquire,
							memory_order_relaxed)) {
		if (cur == me)
			return RINGBUF_EBUSY;
		if (n >= RINGBUF__RL_YIELDS && (n - RINGBUF__RL_YIELDS) % RINGBUF__RL_CHECK == 0 &&
		    ringbuf__rl_gone(cur, rb->shared)) {
			/* from that very id: a judge that came first, or the
			 * holder's unlock, makes it fail */
			if (atomic_compare_exchange_strong_explicit(&c->reader_lock, &cur, me,
								    memory_order_acquire, memory_order_relaxed)) {
#ifdef RINGBUF_TESTING
				atomic_fetch_add_explicit(&ringbuf__rl_takeovers, 1, memory_order_relaxed);
#endif
				/* the CPU from c's place, not c->index: a shared
				 * block's other process may have changed that */
				ringbuf__repair_reader(rb, (unsigned)(c - ringbuf__cpu(rb, 0)));
				return 0;
			}
		}
		if (++n > RINGBUF__RL_YIELDS + RINGBUF__RL_SLEEPS)
			return RINGBUF_EBUSY;
#ifdef RINGBUF_TESTING
		atomic_fetch_add_explicit(&ringbuf__rl_waits, 1, memory_order_relaxed);
#endif
		if (n <= RINGBUF__RL_YIELDS)
			ringbuf__yield();
		else
			ringbuf__sleep_ms(1);
		cur = 0;
	}
	return 0;
}

static void ringbuf__reader_unlock(struct ringbuf__cpu *c)
{
	atomic_store_explicit(&c->reader_lock, 0, memory_order_release);
}

/* S1: find the head page: the page whose prev's link carries HEADER and points
 * at it. Returns its index and the link (in *plink), or RINGBUF_EAGAIN while a
 * writer keeps the flag in transition. */
static int ringbuf__find_head(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c, uint32_t *head,
			      uint64_t *plink)
{
	uint32_t n = rb->nr_pages + 1, x = c->head_hint, i, nx;
	uint32_t rp = RINGBUF__LOAD(&c->reader_page);
	/* HOSTILE MEMORY: every index below is loaded once and range-checked
	 * before it names a page (a shared block's other process may change
	 * any of them between two loads) */
	if (x >= n)
		x = 0; /* only a hint */
	for (i = 0; i < 3 * n; i++) {
		if (x != rp) {
			uint32_t p = ringbuf__bp(rb, cpu, x)->prev;
			uint64_t link;
			if (p >= n) {
				ringbuf__warn(rb, cpu, "reader: prev index out of range");
				return RINGBUF_ECORRUPT;
			}
			link = ringbuf__load_link(ringbuf__bp(rb, cpu, p));
			/* a ring page's prev is its ring predecessor, which
			 * links to it: writers change a link's flags, never its
			 * index, and only a reader's swap (S2-S4, under the
			 * reader lock held here, a cut one repaired when the
			 * lock was taken over) changes prevs and indices. A
			 * prev that names the reader page or a page linking
			 * elsewhere hides the head for good: every call would
			 * end in RINGBUF_EAGAIN after 3 rounds (found by
			 * fuzz/fuzz_intake.c: ringbuf-record spun seconds on it) */
			if (p == rp || ringbuf__link_idx(link) != x) {
				ringbuf__warn(rb, cpu, "reader: a page's prev does not link to it");
				return RINGBUF_ECORRUPT;
			}
			if ((link & RINGBUF__F_MASK) == RINGBUF__F_HEADER) {
				c->head_hint = x;
				*head = x;
				*plink = link;
				return 0;
			}
		}
		nx = ringbuf__next_idx(rb, cpu, x);
		if (nx > rb->nr_pages) {
			ringbuf__warn(rb, cpu, "reader: link index out of range");
			return RINGBUF_ECORRUPT;
		}
		if (RINGBUF__UNLIKELY(nx == x)) {
			/* a page that links to itself (never so in a ring of two
			 * pages or more). The reader page's link is only the way
			 * in (the hint names it after every swap): enter at the
			 * tail page instead. Before, every call went round the
			 * reader page 3n times and returned RINGBUF_EAGAIN, which
			 * ringbuf-record retried for about a minute per CPU
			 * (test_record_hostile.c: a_reader_page_linking_to_itself) */
			uint32_t t = RINGBUF__LOAD(&c->tail_page);
			if (x != rp || t > rb->nr_pages || t == rp) {
				ringbuf__warn(rb, cpu, "reader: a page links to itself");
				return RINGBUF_ECORRUPT;
			}
			nx = t;
		}
		x = nx;
		if (i % n == n - 1)
			ringbuf__yield(); /* a writer is between H1 and H2; let it run */
	}
	return RINGBUF_EAGAIN;
}

static inline uint32_t ringbuf__page_commit(const struct ringbuf *rb, unsigned cpu, uint32_t idx)
{
	/* [R-commit] acquire: pairs with [W-commit] */
	return (uint32_t)((unsigned long)atomic_load_explicit(&ringbuf__dp(rb, cpu, idx)->commit,
							     memory_order_acquire) &
			  RINGBUF__COMMIT_MASK);
}

/* Events dropped on page h before the reader takes it (a monotonic max:
 * taking it twice adds nothing the second time) */
static void ringbuf__reader_drops(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c, uint32_t h)
{
	uint64_t drops = RINGBUF__LOAD(&ringbuf__bp(rb, cpu, h)->drops);
	if (drops > c->last_drops) {
		c->lost_pending += drops - c->last_drops;
		c->last_drops = drops;
	}
}

/* -- a dead reader's swap repaired (the reader lock taken over, recovery) -- */

/* A reader cut between S2 and S3 (killed, or not copied into a fork child)
 * left reader_page naming the head page it meant to take, still in the ring:
 * the reader page is the one page the ring does not reach. */
static void ringbuf__repair_reader(struct ringbuf *rb, unsigned cpu)
{
	struct ringbuf__cpu *c = ringbuf__cpu(rb, cpu);
	uint32_t n = rb->nr_pages, rp = RINGBUF__LOAD(&c->reader_page), i, off = n + 1;
	/* Ring pages are linked from their predecessor (prev is kept by the
	 * reader, and S2 does not change a ring page's); the reader page is the
	 * one page its predecessor does not link to. */
	for (i = 0; i <= n; i++) {
		uint32_t p = ringbuf__bp(rb, cpu, i)->prev;
		if (p > n || ringbuf__next_idx(rb, cpu, p) != i) {
			off = i;
			break;
		}
	}
	/* Only the shape a swap cut after S2 leaves: rp (H) in the ring, linked
	 * from its prev p, and off prepared by S2 (prev p, next = H's next with
	 * HEADER). Anything else is a bad prev, for repair_prev and the
	 * validation after the repair: taken for a cut swap, it made a ring page
	 * the reader page, and the validation then refused the file after the
	 * repair had changed it (a refused RDWR | RECOVER open left a file that
	 * no open took again; helper review, 2026-11-30, test_validate_live). */
	uint32_t hp = rp <= n ? ringbuf__bp(rb, cpu, rp)->prev : n + 1;
	if (off <= n && off != rp && hp <= n && hp != rp && ringbuf__next_idx(rb, cpu, hp) == rp &&
	    ringbuf__bp(rb, cpu, off)->prev == hp && ringbuf__next_idx(rb, cpu, off) == ringbuf__next_idx(rb, cpu, rp) &&
	    (ringbuf__load_link(ringbuf__bp(rb, cpu, off)) & RINGBUF__F_MASK) == RINGBUF__F_HEADER) {
		/* cut after S2 published H, before S3: undo (the state a failed
		 * S3 CAS leaves); lost_pending already holds the pages before H */
		atomic_store_explicit(&c->reader_page, off, memory_order_relaxed);
		if (c->read > ringbuf__page_commit(rb, cpu, off))
			c->read = ringbuf__page_commit(rb, cpu, off);
		rp = off;
	}
	{
		/* cut after S3, before S4's completion mark: rp (H) is off the
		 * ring, its old predecessor links to the page that took its place,
		 * and H's successor still names H as its prev: finish S4 */
		uint32_t p, hn, r2;
		if (rp > n)
			return; /* validated, but this is another load */
		p = ringbuf__bp(rb, cpu, rp)->prev;
		hn = ringbuf__next_idx(rb, cpu, rp);
		if (p > n || hn > n || (r2 = ringbuf__next_idx(rb, cpu, p)) == rp || r2 > n ||
		    ringbuf__bp(rb, cpu, hn)->prev != rp || ringbuf__next_idx(rb, cpu, r2) != hn)
			return;
		c->head_hint = hn;
		c->read = 0;
		c->read_stamp = atomic_load_explicit(&ringbuf__dp(rb, cpu, rp)->time_stamp, memory_order_relaxed);
		ringbuf__reader_drops(rb, cpu, c, rp);
		ringbuf__bp(rb, cpu, hn)->prev = r2;
		RINGBUF__ADD(&c->pages_read, 1);
	}
}

/* Once no reader's swap is cut (ringbuf__repair_reader), every ring page's
 * prev names its predecessor in the ring: the reader finds the head page as
 * the page whose prev links to it with HEADER (find_head), and a prev that
 * names another page hides the head for good. The block's validation checks
 * only that each prev is in range (a prev changes in a reader's swap, which
 * a cut reader leaves half done: repair_reader reads the prevs to tell), so
 * a block whose prev was changed (a hostile or corrupted writer; found by
 * fuzz/fuzz_intake.c: the head page's prev naming the reader page, which
 * links to the head without HEADER) passed recovery, and every read of it
 * answered RINGBUF_EAGAIN, a CPU the reader could never take, retried for
 * seconds by ringbuf-record at the end of a recording. The ring's links are
 * the truth (the validation walked them): the prevs are set from them. A
 * walk that does not close without meeting the reader page changes nothing
 * (the validation that follows the repair reports it). */
static void ringbuf__repair_prev(struct ringbuf *rb, unsigned cpu)
{
	struct ringbuf__cpu *c = ringbuf__cpu(rb, cpu);
	uint32_t n = rb->nr_pages, rp = RINGBUF__LOAD(&c->reader_page), t = RINGBUF__LOAD(&c->tail_page), x, i;
	if (rp > n || t > n)
		return;
	if (t == rp)
		t = ringbuf__next_idx(rb, cpu, rp);
	for (x = t, i = 0; i < n; i++) {
		x = ringbuf__next_idx(rb, cpu, x);
		if (x > n || x == rp)
			return;
	}
	if (x != t)
		return;
	for (i = 0; i < n; i++) {
		uint32_t nx = ringbuf__next_idx(rb, cpu, x);
		ringbuf__bp(rb, cpu, nx)->prev = x;
		x = nx;
	}
}

/* Make sure the reader page has unread committed data, swapping it with the
 * head page if needed. Returns 1 (data), 0 (none) or < 0. */
static int ringbuf__get_reader_page(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c)
{
	int tries;
	{
		/* Unread data on the reader page: no need to look at the commit
		 * page, which lives in the writer's hottest cache line (reading it
		 * for every event made a live reader slow its writer down). */
		uint32_t rp = RINGBUF__LOAD(&c->reader_page), commit;
		if (rp > rb->nr_pages) {
			ringbuf__warn(rb, cpu, "reader: reader page index out of range");
			return RINGBUF_ECORRUPT;
		}
		commit = ringbuf__page_commit(rb, cpu, rp);
		if (c->read < commit && commit <= rb->bsize)
			return 1;
	}
	for (tries = 0; tries < 64; tries++) {
		uint32_t rp = RINGBUF__LOAD(&c->reader_page);
		uint32_t cp, commit, h, hn, hp;
		uint64_t link, hlink;
		struct ringbuf__bpage *rbp;
		uint64_t ov;
		int r;

		if (rp > rb->nr_pages) {
			ringbuf__warn(rb, cpu, "reader: reader page index out of range");
			return RINGBUF_ECORRUPT;
		}
		/* [R-cpage] acquire, pairs with [W-cpage]. The commit page is read
		 * BEFORE the reader page's commit: once the commit page has left the
		 * reader page, the commit read next is that page's final one. (The
		 * other order can see an old commit, then a moved commit page, and
		 * swap away unread events.) */
		cp = atomic_load_explicit(&c->commit_page, memory_order_acquire);
		commit = ringbuf__page_commit(rb, cpu, rp);
		if (commit > rb->bsize) {
			ringbuf__warn(rb, cpu, "reader: commit beyond the page");
			return RINGBUF_ECORRUPT;
		}
		if (c->read < commit)
			return 1;
		if (cp == rp)
			return 0; /* writers are still on the reader page */
		r = ringbuf__find_head(rb, cpu, c, &h, &link);
		if (r == RINGBUF_EAGAIN) {
			ringbuf__yield();
			continue;
		}
		if (r < 0)
			return r;
		if (h == cp && ringbuf__page_commit(rb, cpu, h) == 0)
			return 0; /* the head page is the commit page and holds nothing yet */
		RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_READER_S1);
		/* S2: prepare the old reader page to take H's place in the ring */
		rbp = ringbuf__bp(rb, cpu, rp);
		/* empty, with a new update count: iterators see the page reused */
		RINGBUF__STORE(&rbp->write, (RINGBUF__LOAD(&rbp->write) & ~RINGBUF__WRITE_MASK) +
						    RINGBUF__WRITE_INTCNT);
		RINGBUF__STORE(&rbp->entries, RINGBUF__LOAD(&rbp->entries) & ~RINGBUF__WRITE_MASK);
		atomic_store_explicit(&ringbuf__dp(rb, cpu, rp)->commit, 0, memory_order_relaxed);
		hlink = ringbuf__load_link(ringbuf__bp(rb, cpu, h));
		hn = ringbuf__link_idx(hlink);
		hp = ringbuf__bp(rb, cpu, h)->prev; /* find_head checked a load of it: load once more, check */
		if (hn > rb->nr_pages || hp > rb->nr_pages) {
			ringbuf__warn(rb, cpu, "reader: link index out of range");
			return RINGBUF_ECORRUPT;
		}
		atomic_store_explicit(&rbp->next,
				      ringbuf__link_make(RINGBUF__LOAD(&rbp->next), hn, RINGBUF__F_HEADER),
				      memory_order_relaxed);
		rbp->prev = hp;
		RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_READER_S2_PREPARED);
		/* published before S3 (seq_cst): a writer that sees the new ring sees
		 * that H, which may hold the commit, is the reader page */
		atomic_store_explicit(&c->reader_page, h, memory_order_seq_cst);
		/* The overrun read after the link load and before the CAS covers
		 * every page lost before H ([L]); taken into lost_pending here,
		 * before S3, so that a swap cut anywhere never counts it twice (a
		 * failed CAS leaves it pending too: the reader page is read to its
		 * end, so the next event read comes after a later head, which those
		 * pages also precede). */
		ov = ringbuf__overrun(c);
		c->lost_pending += ov - c->last_overrun;
		c->last_overrun = ov;
		RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_READER_S2);

		/* S3 */
		if (!ringbuf__cas_link(ringbuf__bp(rb, cpu, hp), link,
				       ringbuf__link_make(link, rp, 0))) {
			atomic_store_explicit(&c->reader_page, rp, memory_order_seq_cst);
			continue; /* a writer moved the head meanwhile */
		}
		RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_READER_S3);
		/* S4: the reader's own state for H (each store idempotent: recovery
		 * redoes them all while S4's last store is missing) */
		c->head_hint = hn;
		c->read = 0;
		c->read_stamp = atomic_load_explicit(&ringbuf__dp(rb, cpu, h)->time_stamp,
						     memory_order_relaxed);
		ringbuf__reader_drops(rb, cpu, c, h);
		RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_READER_S4);
		/* S4's last store, the swap's completion mark: while hn.prev still
		 * names H (off the ring now), ringbuf__repair_reader finishes S4 */
		ringbuf__bp(rb, cpu, hn)->prev = rp;
		RINGBUF__ADD(&c->pages_read, 1);
	}
	return RINGBUF_EAGAIN;
}

/* The reader page and its commit, each loaded once and checked: what the
 * reader parses and copies after ringbuf__get_reader_page (whose own checks
 * were earlier loads: another process may have changed both since). */
static int ringbuf__reader_at(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c, uint32_t *rp,
			      uint32_t *commit)
{
	*rp = RINGBUF__LOAD(&c->reader_page);
	if (*rp > rb->nr_pages) {
		ringbuf__warn(rb, cpu, "reader: reader page index out of range");
		return RINGBUF_ECORRUPT;
	}
	*commit = ringbuf__page_commit(rb, cpu, *rp);
	if (*commit > rb->bsize) {
		ringbuf__warn(rb, cpu, "reader: commit beyond the page");
		return RINGBUF_ECORRUPT;
	}
	return 0;
}

/* Find the next data event on cpu, skipping (consuming) padding and time
 * records. On success fills rec and *evlen (record length) and returns 1. */
static int ringbuf__next_event(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c,
			       struct ringbuf_record *rec, uint32_t *evlen)
{
	const bool align8 = (rb->flags & RINGBUF_F_ALIGN8) != 0;
	for (;;) {
		int r = ringbuf__get_reader_page(rb, cpu, c);
		uint32_t rp, commit;
		const struct ringbuf__dpage *dp;
		struct ringbuf__rec e;
		if (r <= 0)
			return r;
		if ((r = ringbuf__reader_at(rb, cpu, c, &rp, &commit)) < 0)
			return r;
		dp = ringbuf__dp(rb, cpu, rp);
		if (c->read == 0)
			c->read_stamp = atomic_load_explicit(&((struct ringbuf__dpage *)dp)->time_stamp,
							     memory_order_relaxed);
		while (c->read < commit) {
			if (ringbuf__parse(dp->data, commit, c->read, align8, &e) < 0) {
				ringbuf__warn(rb, cpu, "reader: corrupt record");
				return RINGBUF_ECORRUPT;
			}
			if (e.type == 0) {
				rec->data = dp->data + c->read + e.hdr;
				rec->len = e.len - e.hdr;
				rec->ts = c->read_stamp + e.delta;
				rec->lost = c->lost_pending;
				rec->cpu = cpu;
				*evlen = e.len;
				return 1;
			}
			if (e.type == RINGBUF__TYPE_TIME_STAMP)
				c->read_stamp = ringbuf__abs_ts(c->read_stamp, e.delta);
			else if (!e.null_pad)
				c->read_stamp += e.delta; /* extend, or padding (as kbuffer does) */
			c->read += e.len;
		}
	}
}

/* peek and consume: the next event of cpu, consumed or not. */
/* Peek or consume cpu's next event. With expect_ts other than RINGBUF__NO_TS,
 * consume it only if its time stamp is expect_ts, else RINGBUF_EAGAIN and
 * nothing consumed (the merged reader's pick was reset away meanwhile). */
static int ringbuf__read_one_ts(struct ringbuf *rb, unsigned cpu, struct ringbuf_record *rec, bool consume,
				uint64_t expect_ts)
{
	struct ringbuf__cpu *c;
	uint32_t len = 0; /* set when r == 1 (gcc -Os cannot tell) */
	int r;
	if (!rb || cpu >= rb->ncpu || !rec)
		return RINGBUF_EINVAL;
	c = ringbuf__cpu(rb, cpu);
	if ((r = ringbuf__reader_lock(rb, c)) < 0)
		return r;
	r = ringbuf__next_event(rb, cpu, c, rec, &len);
	if (r != 1 && expect_ts != RINGBUF__NO_TS)
		r = RINGBUF_EAGAIN;
	if (r == 1 && expect_ts != RINGBUF__NO_TS && rec->ts != expect_ts)
		r = RINGBUF_EAGAIN;
	if (r == 1 && consume) {
		c->read += len;
		c->read_stamp = rec->ts;
		c->lost_pending = 0;
		atomic_store_explicit(&c->read_events, RINGBUF__LOAD(&c->read_events) + 1,
				      memory_order_relaxed);
	}
	ringbuf__reader_unlock(c);
	return r;
}

static int ringbuf__read_one(struct ringbuf *rb, unsigned cpu, struct ringbuf_record *rec, bool consume)
{
	return ringbuf__read_one_ts(rb, cpu, rec, consume, RINGBUF__NO_TS);
}

/* Readers work in the clock's own unit; what they hand out is converted
 * (TSC cycles to ns) at the API boundary. */
static inline int ringbuf__out_ts(const struct ringbuf *rb, struct ringbuf_record *rec, int r)
{
	if (r == 1 && RINGBUF__UNLIKELY(rb->clock_kind == RINGBUF__CLK_TSC))
		rec->ts = ringbuf_ts_to_ns(rb, rec->ts);
	return r;
}

RINGBUF_API int ringbuf_peek(struct ringbuf *rb, unsigned cpu, struct ringbuf_record *rec)
{
	return ringbuf__out_ts(rb, rec, ringbuf__read_one(rb, cpu, rec, false));
}

RINGBUF_API int ringbuf_consume(struct ringbuf *rb, unsigned cpu, struct ringbuf_record *rec)
{
	return ringbuf__out_ts(rb, rec, ringbuf__read_one(rb, cpu, rec, true));
}

/* ---- whole-page reads (ringbuf_read_page, ringbuf_read_page_ref) --------
 * Under the reader lock, in four steps (test points after P2 and P3):
 *   P1  ringbuf__get_reader_page: the reader page made current (S1-S4 when
 *       it was read to its end; a page lent by read_page_ref goes back into
 *       the ring here, at the next reader call).
 *   P2  [R-full] whole pages only (RINGBUF_READ_FULL, read_page_ref): load
 *       the commit page (acquire, pairs with [W-cpage]) BEFORE the reader
 *       page's commit. A commit page other than the reader page has left it
 *       for good (writers never come back to a page off the ring), and the
 *       writer stored the page's last commit before it moved the commit page
 *       (release), so P3's load returns the final commit. The other order
 *       (P3, then P2) can read a commit, lose the CPU while the writers
 *       commit more on the page and leave it, see the commit page gone and
 *       take the page as whole at the old commit: read_page_ref then wrote
 *       that old commit into the page and the events after it were lost,
 *       uncounted (still in `entries`; issue 22's mixed-reader harness).
 *   P3  load the reader page and its commit (ringbuf__reader_at), check
 *       every record up to it, copy them (read_page).
 *   P4  place the count of losses, adjust the commit field of a lent page,
 *       consume: read, read_stamp, lost_pending, read_events. A writer still
 *       on the page (read_page without RINGBUF_READ_FULL) adds events after
 *       P3's commit: they stay for the next call (read = the last copied). */

/* A data-record boundary in the page being built by ringbuf_read_page(). */
struct ringbuf__cut {
	uint32_t out;    /* bytes of data[] in the output page up to here */
	uint32_t src;    /* the matching offset in the reader page */
	uint32_t events; /* data events up to here */
	uint64_t ts;     /* running time stamp after the record */
};

RINGBUF_API int ringbuf_read_page(struct ringbuf *rb, unsigned cpu, void *page, size_t size,
				  unsigned flags)
{
	const uint64_t msb = ~RINGBUF__TS_VALUE_MASK;
	/* the caller's page: any alignment, reached through bytes only */
	unsigned char *out = (unsigned char *)page, *odata;
	struct ringbuf__cpu *c;
	const struct ringbuf__dpage *dp;
	struct ringbuf__cut last = {0, 0, 0, 0}, fit = {0, 0, 0, 0};
	uint32_t rp, cp, commit, off, w = 0, first_src = 0;
	uint64_t ts, lost;
	bool align8, first = true;
	struct ringbuf__rec e;
	int r, swaps = 0;

	if (!rb || cpu >= rb->ncpu || !page || size < rb->page_size ||
	    (flags & ~(unsigned)RINGBUF_READ_FULL))
		return RINGBUF_EINVAL;
	odata = out + RINGBUF__HDR_SIZE; /* not before the NULL check (UBSan) */
	align8 = (rb->flags & RINGBUF_F_ALIGN8) != 0;
	c = ringbuf__cpu(rb, cpu);
	if ((r = ringbuf__reader_lock(rb, c)) < 0)
		return r;
again:
	/* P1: the reader page made current (S1-S4 when it was read to its end) */
	r = ringbuf__get_reader_page(rb, cpu, c);
	if (r <= 0)
		goto out;
	/* P2 [R-full] (RINGBUF_READ_FULL): the commit page, then P3 */
	cp = (flags & RINGBUF_READ_FULL) ? atomic_load_explicit(&c->commit_page, memory_order_acquire)
					 : ~(uint32_t)0; /* no page's index */
	RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_READ_PAGE_P2);
	/* P3: the reader page and its commit */
	if ((r = ringbuf__reader_at(rb, cpu, c, &rp, &commit)) < 0)
		goto out;
	if (cp == rp) {
		r = 0; /* a writer is still on the page */
		goto out;
	}
	dp = ringbuf__dp(rb, cpu, rp);
	ts = c->read == 0 ? atomic_load_explicit(&((struct ringbuf__dpage *)dp)->time_stamp,
						 memory_order_relaxed)
			  : c->read_stamp;
	/* Copy record by record. Time records and padding before the first event
	 * fold into the page time stamp (the first record must be a data event
	 * for kbuffer to report missed events); padding at the end stays out of
	 * commit; a TIME_STAMP that kbuffer would decode wrongly (kbuffer keeps
	 * the top 5 bits of the running time, it does not carry past 2^59)
	 * becomes the equivalent TIME_EXTEND. */
	for (off = c->read; off < commit; off += e.len) {
		uint64_t prev = ts;
		if (ringbuf__parse(dp->data, commit, off, align8, &e) < 0) {
			ringbuf__warn(rb, cpu, "read_page: corrupt record");
			r = RINGBUF_ECORRUPT;
			goto out;
		}
		if (e.null_pad) {
			off = commit;
			break;
		}
		if (e.type == RINGBUF__TYPE_TIME_STAMP)
			ts = ringbuf__abs_ts(ts, e.delta);
		else
			ts += e.delta;
		if (first) {
			uint32_t hw;
			if (e.type != 0)
				continue;
			memcpy(out, &ts, sizeof ts); /* the caller's page: any alignment */
			memcpy(odata, dp->data + off, e.len);
			memcpy(&hw, odata, 4);
			/* delta 0: the page time stamp is this event's */
			hw = RINGBUF__HDR_WORD(RINGBUF__HDR_TYPE(hw), 0);
			memcpy(odata, &hw, 4);
			first = false;
			first_src = off;
		} else {
			memcpy(odata + w, dp->data + off, e.len);
			if (e.type == RINGBUF__TYPE_TIME_STAMP &&
			    ((prev & msb) | (e.delta & RINGBUF__TS_VALUE_MASK)) != ts &&
			    ts - prev <= RINGBUF__TS_VALUE_MASK)
				ringbuf__put_stamp(odata + w, RINGBUF__TYPE_TIME_EXTEND, ts - prev);
		}
		w = off + e.len - first_src;
		if (e.type == 0) {
			last.out = w;
			last.src = off + e.len;
			last.events++;
			last.ts = ts;
			if (w + sizeof(unsigned long) <= rb->bsize)
				fit = last;
		}
	}
	if (first) {
		/* only time records or padding were left: consume them, go on;
		 * a bounded number of pages (a ring another process keeps
		 * refilling, or corrupted to never reach its commit page, would
		 * keep this call here): then RINGBUF_EAGAIN, nothing lost */
		c->read = off;
		c->read_stamp = ts;
		if (++swaps <= 2 * (int)(rb->nr_pages + 1))
			goto again;
		r = RINGBUF_EAGAIN;
		goto out;
	}
	RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_READ_PAGE_P3);
	/* P4: the count of losses placed, the events consumed */
	lost = c->lost_pending;
	/* Room for the lost count: hold events back for the next read rather than
	 * hand out a page that only says "some were lost". */
	if (lost && last.out + sizeof(unsigned long) > rb->bsize && fit.events) {
		last = fit;
		off = last.src; /* the rest stays for the next read */
		ts = last.ts;
	}
	w = last.out;
	{
		unsigned long cm = w;
		if (lost && rb->bsize - w >= sizeof(unsigned long)) {
			unsigned long n = (unsigned long)lost;
			memcpy(odata + w, &n, sizeof n);
			cm |= RINGBUF__MISSED_EVENTS | RINGBUF__MISSED_STORED;
			w += (uint32_t)sizeof n;
			lost = 0;
		}
		/* Else the page's first event fills it (no event can be held
		 * back): the page goes out without RB_MISSED_EVENTS and the
		 * count stays pending, stored with the next page that has room
		 * (or given as rec.lost by the next consume). A flag without
		 * its count would lose the count (kbuffer reports -1), and a
		 * flag now plus the count later would report one loss twice. */
		memcpy((char *)out + sizeof(uint64_t), &cm, sizeof cm);
	}
	memset(odata + w, 0, rb->page_size - RINGBUF__HDR_SIZE - w);
	r = (int)last.out;
	c->read = off; /* trailing padding is consumed with the events */
	c->read_stamp = ts;
	c->lost_pending = lost;
	atomic_store_explicit(&c->read_events, RINGBUF__LOAD(&c->read_events) + last.events,
			      memory_order_relaxed);
out:
	ringbuf__reader_unlock(c);
	return r;
}

RINGBUF_API int ringbuf_read_page_ref(struct ringbuf *rb, unsigned cpu, const void **page)
{
	const bool align8 = rb && (rb->flags & RINGBUF_F_ALIGN8);
	struct ringbuf__cpu *c;
	struct ringbuf__dpage *dp;
	uint32_t rp, cp, commit, off, end = 0, events = 0;
	uint64_t ts, lost;
	struct ringbuf__rec e;
	unsigned long cm;
	int r;
	if (!rb || cpu >= rb->ncpu || !page)
		return RINGBUF_EINVAL;
	c = ringbuf__cpu(rb, cpu);
	if ((r = ringbuf__reader_lock(rb, c)) < 0)
		return r;
	r = ringbuf__get_reader_page(rb, cpu, c); /* P1 */
	if (r <= 0)
		goto out;
	cp = atomic_load_explicit(&c->commit_page, memory_order_acquire); /* P2 [R-full] */
	RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_READ_PAGE_P2);
	if ((r = ringbuf__reader_at(rb, cpu, c, &rp, &commit)) < 0) /* P3 */
		goto out;
	r = RINGBUF_EAGAIN;
	if (c->read != 0 || cp == rp)
		goto out; /* partly read, or a writer is still on it */
	dp = ringbuf__dp(rb, cpu, rp);
	ts = atomic_load_explicit(&dp->time_stamp, memory_order_relaxed);
	/* check every record, find where the data ends (trailing padding out);
	 * after the first record, runs of the common one in ringbuf__event_run */
	for (off = 0; off < commit; off += e.len) {
		if (off != 0 && !align8) {
			uint32_t o = ringbuf__event_run(dp->data, commit, off, &ts, &events);
			if (o != off) {
				end = off = o;
				if (off == commit)
					break;
			}
		}
		if (ringbuf__parse(dp->data, commit, off, align8, &e) < 0) {
			ringbuf__warn(rb, cpu, "read_page_ref: corrupt record");
			r = RINGBUF_ECORRUPT;
			goto out;
		}
		if (off == 0 && (e.type != 0 || e.delta != 0))
			goto out; /* the page must open with an event at delta 0 */
		if (e.null_pad)
			break;
		if (e.type == RINGBUF__TYPE_TIME_STAMP) {
			uint64_t nts = ringbuf__abs_ts(ts, e.delta);
			if (((ts ^ nts) >> RINGBUF__TS_BITS) != 0)
				goto out; /* kbuffer would decode it wrongly: copy instead */
			ts = nts;
		} else {
			ts += e.delta;
		}
		if (e.type == 0) {
			end = off + e.len;
			events++;
		}
	}
	RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_READ_PAGE_P3);
	/* P4: the count of losses placed, the commit field adjusted, consumed */
	lost = c->lost_pending;
	cm = end;
	if (lost) {
		unsigned long n = (unsigned long)lost;
		if (rb->bsize - end < sizeof n)
			goto out; /* no room for the count */
		memcpy(dp->data + end, &n, sizeof n);
		cm |= RINGBUF__MISSED_EVENTS | RINGBUF__MISSED_STORED;
	}
	/* the page is the reader's now: lend it as it is, commit field adjusted */
	atomic_store_explicit(&dp->commit, (long)cm, memory_order_relaxed);
	*page = dp;
	c->read = commit; /* consumed (page_commit masks the flags: read >= it) */
	c->read_stamp = ts;
	c->lost_pending = 0;
	atomic_store_explicit(&c->read_events, RINGBUF__LOAD(&c->read_events) + events,
			      memory_order_relaxed);
	r = (int)end;
out:
	ringbuf__reader_unlock(c);
	return r;
}

RINGBUF_API bool ringbuf_empty_cpu(struct ringbuf *rb, unsigned cpu)
{
	struct ringbuf_record rec;
	return ringbuf_peek(rb, cpu, &rec) <= 0;
}

/* ---- merged readers (consume_merged, the RINGBUF_ALL_CPUS iterator) -------
 * The pick B (the oldest head of all CPUs) may be handed out only when no CPU
 * can still commit an event older than B. A CPU whose head was seen is fine
 * (its later events are newer than its head). For the others (>>design,
 * MERGED READERS): [R1] make every writer that read the clock before B show
 * its entry (membarrier, amortised: once per `fenced` mark), [R2] load
 * committing (acquire): 0 means every entry before it is committed and
 * visible; else inflight_ts (acquire): below B, a writer may still commit an
 * older event (RINGBUF_EAGAIN); else the entries before it are visible;
 * [R3] look at the CPU again: an older head now is the new pick. */

/* [R1] The heavy side of the fence with [M2] ([BARRIER]); false when none
 * is available: then only this thread's fence. */
static bool ringbuf__merged_membarrier(struct ringbuf *rb)
{
	if (ringbuf__writers_barrier(rb))
		return true;
	atomic_thread_fence(memory_order_seq_cst);
	return false;
}

/* [R1] After this, every writer whose clock read returned less than b shows
 * its entry (committing, inflight_ts) to this thread's loads. *fenced is the
 * mark of the last barrier: every time stamp below it is covered already.
 * Any stamp of the writers' clock whose read happens before the barrier is
 * such a bound (>>design, MERGED READERS, [M2]/[R1]): b (the event stamped b
 * was seen committed, acquire), T0 (the clock read before it) only where this
 * handle's clock is the writers' -- a block of this process, or the TSC,
 * which no process of a shared block can switch to or from; a file or memfd
 * block's default or user clock is each process's own (CLOCKS OF SHARED
 * BLOCKS: a process that opened it only to read reads CLOCK_MONOTONIC), so
 * there the bound is the newest inflight_ts (acquire, pairs with [M1]: the
 * write_stamp it copied was read from the writers' clock before). */
static void ringbuf__merged_fence(struct ringbuf *rb, uint64_t *fenced, uint64_t b)
{
	uint64_t t0 = 0;
	if (b <= *fenced)
		return;
	if ((rb->owned != 2 && rb->owned != 4) || rb->clock_kind == RINGBUF__CLK_TSC) {
		t0 = ringbuf__clock(rb);
	} else {
		unsigned cpu;
		for (cpu = 0; cpu < rb->ncpu; cpu++) {
			uint64_t v = atomic_load_explicit(&ringbuf__cpu(rb, cpu)->inflight_ts,
							  memory_order_acquire);
			if (v > t0)
				t0 = v;
		}
	}
	if (ringbuf__merged_membarrier(rb))
		*fenced = t0 > b ? t0 : b;
}

/* No writer in flight on c and nothing reserved left uncommitted: the merged
 * readers' [R2] and ringbuf_quiesce's Q2/Q4 (>>control). committing == 0
 * alone does not say it: ringbuf__commit_fast stores 0 before it checks
 * whether a writer nested after its page commit, and walks again if one did
 * ([Q-PEND]); acquire: pairs with [M3], then with [W-commit]. A CPU buffer
 * found corrupt is not waited for (its pages may never agree again). */
static bool ringbuf__quiet(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c)
{
	uint32_t cp, tp;
	if (atomic_load_explicit(&c->committing, memory_order_acquire) != 0)
		return false;
	if (RINGBUF__LOAD(&c->corrupt))
		return true;
	cp = atomic_load_explicit(&c->commit_page, memory_order_acquire);
	tp = atomic_load_explicit(&c->tail_page, memory_order_acquire);
	return cp == tp && tp <= rb->nr_pages &&
	       (RINGBUF__LOAD(&ringbuf__bp(rb, cpu, tp)->write) & RINGBUF__WRITE_MASK) ==
		       ringbuf__page_commit(rb, cpu, tp);
}

/* [R2] Can a writer in an event on cpu still commit one older than b? */
static bool ringbuf__merged_inflight(struct ringbuf *rb, unsigned cpu, uint64_t b)
{
	struct ringbuf__cpu *c = ringbuf__cpu(rb, cpu);
	/* A private view of another process's file (ringbuf_open_file without
	 * RDWR): its CPU structs are a copy taken when the view first wrote their
	 * page (at open), so a writer in an event then stays "in flight" in the
	 * copy forever; waiting would return RINGBUF_EAGAIN for good. Such a view
	 * reads what the pages hold, in the order peeked (no guarantee against a
	 * writer that commits an older event later: open RDWR for that). */
	if (rb->owned == 4)
		return false;
	/* committing 0 and the pages committed up to the write index (acquire:
	 * pairs with [M3], then [W-commit]): the entries before are committed */
	if (ringbuf__quiet(rb, cpu, c))
		return false;
	/* acquire: pairs with [M1] (what was reserved before that exit is
	 * committed; what is reserved after it is not older) */
	return atomic_load_explicit(&c->inflight_ts, memory_order_acquire) < b;
}

/* consume_merged's [R1] mark, per thread (the barrier orders this thread's
 * loads), for the block it was set for */
static RINGBUF__TLS struct {
	uint64_t gen;
	uint64_t fenced;
} ringbuf__merged_tls;

RINGBUF_API int ringbuf_consume_merged(struct ringbuf *rb, struct ringbuf_record *rec)
{
	struct ringbuf_record r;
	uint64_t seen[4] = {0, 0, 0, 0}; /* CPUs < 256 whose head was seen in 1. */
	unsigned cpu, best = RINGBUF_ALL_CPUS;
	uint64_t best_ts = 0;
	int ret;
	if (!rb || !rec)
		return RINGBUF_EINVAL;
	if (ringbuf__merged_tls.gen != rb->gen) {
		ringbuf__merged_tls.gen = rb->gen;
		ringbuf__merged_tls.fenced = 0;
	}
	/* 1. the oldest committed head (a CPU whose reader cannot tell now, a
	 * writer holding its head link in transition, might hold it: then we
	 * cannot either) */
	for (cpu = 0; cpu < rb->ncpu; cpu++) {
		ret = ringbuf__read_one(rb, cpu, &r, false); /* raw time stamps */
		if (ret < 0)
			return ret;
		if (ret != 1)
			continue;
		if (cpu < 256)
			seen[cpu / 64] |= 1ull << (cpu % 64);
		if (best == RINGBUF_ALL_CPUS || r.ts < best_ts) {
			best = cpu;
			best_ts = r.ts;
		}
	}
	if (best == RINGBUF_ALL_CPUS)
		return 0;
	RINGBUF__TESTPOINT(rb, best, RINGBUF__TP_MERGED_PEEKED);
	/* 2. [R1] */
	ringbuf__merged_fence(rb, &ringbuf__merged_tls.fenced, best_ts);
	/* 3. [R2], [R3] for every CPU whose head was not seen. A CPU found
	 * older becomes the pick; the CPUs checked before it were checked
	 * against a newer pick, which covers the older one. */
	for (cpu = 0; cpu < rb->ncpu; cpu++) {
		if (cpu == best || (cpu < 256 && ((seen[cpu / 64] >> (cpu % 64)) & 1)))
			continue;
		if (ringbuf__merged_inflight(rb, cpu, best_ts))
			return RINGBUF_EAGAIN;
		ret = ringbuf__read_one(rb, cpu, &r, false);
		if (ret < 0)
			return ret;
		if (ret == 1 && r.ts < best_ts) {
			best = cpu;
			best_ts = r.ts;
		}
	}
	/* 4. consume the pick itself: new events carry newer time stamps, so it
	 * stays the oldest, but a reset of that CPU meanwhile (which throws it
	 * away) would hand out a newer head in its place: then try again */
	return ringbuf__out_ts(rb, rec, ringbuf__read_one_ts(rb, best, rec, true, best_ts));
}

/* ---- non-consuming iterator ------------------------------------------------
 * Walks the reader page from the consumer's position, then the ring from the
 * head to the commit. Each record is copied out and validated seqlock-style:
 * a page's update count (the bits of `write` above the index, bumped at U1
 * before the tail enters it and at S2 when the reader recycles it) is read
 * before and after the copy; if it moved, the page was reused meanwhile and
 * the copy is thrown away. The writer side of that pairing is the release
 * fence after U1.
 *
 * Losses, in events. Pages leave the ring at the head, in ring order, pushed
 * by writers (their events counted in overrun) or swapped out by a consumer
 * (consumed: not a loss). The walk keeps a base: the overrun read when it
 * entered the ring at the head (the head re-checked after the load, so the
 * count covers no page of the walk), or when it (re)started on the reader
 * page; and `passed`, the data events it walked on ring pages since. When its
 * page was reused under it, or when it leaves the reader page for the head,
 * the events it missed are those pushed out since the base beyond the ones it
 * walked past: (overrun - base) - passed, counted in rec.lost and
 * ringbuf_iter_dropped(). Exact without a consumer (every page that left the
 * ring was pushed), 0 in producer/consumer mode (nothing is overwritten: a
 * page consumed and reused is not a loss). With a consumer and overwrites
 * together it is a lower bound: pages the consumer took after the iterator
 * walked them are counted as passed but not in overrun. The iterator runs
 * under the reader lock, so no swap happens during one call, nor a reset: a
 * reset between calls zeroes overrun and moves the CPU's reset generation,
 * which the base carries ([RESET-GEN]): a base of an older generation counts
 * from 0, whatever overrun grew back to.
 * A head push claims the page (H1 CAS) before it adds the page's count to
 * overrun; a nested writer interrupting its owner there helps the push, moves
 * the tail into the page (new update count) and may set HEADER further on, all
 * before the count exists. Both loss points (a page reused, the head found)
 * therefore load overrun only after finding no link with UPDATE (no push
 * between claim and H3), else they retry, and return RINGBUF_EAGAIN at the
 * loop limit while the owner stays interrupted (a count taken then missed the
 * claimed page: the skipped events came out late, on a later loss, or never;
 * test_accounting iter_counts_a_push_its_owner_has_not_counted_yet). */

struct ringbuf__iter_cpu {
	uint32_t page;      /* page being walked */
	uint32_t off;       /* offset in its data[] */
	uint64_t ts;        /* running time stamp at off */
	uint64_t gen;       /* update count of page when we entered it */
	uint64_t overrun;   /* base: overrun when the walk entered the ring (or the reader page) */
	uint64_t reset_gen; /* the CPU's reset generation at that base ([RESET-GEN]) */
	uint64_t plost;     /* pages_lost at the base (the head the walk entered the ring at) */
	uint64_t pages;     /* pages left behind since that head */
	int state;          /* 0: (re)start at the consumer's position, 1: walking */
	uint64_t lost;      /* to report with the next event */
	uint64_t passed;    /* data events walked on ring pages since the base */
	uint64_t last_ts;   /* time stamp of the last event handed out */
	uint64_t same_ts;   /* events handed out with that time stamp */
	uint64_t skip_same; /* after a restart: events at last_ts still to skip */
	bool restarted;     /* restarted: skip what was already handed out */
	bool on_reader;     /* `page` was the reader page when we entered it */
	bool any;           /* an event was handed out since start/reset */
	bool have;          /* merged mode: rec holds this CPU's next event */
	struct ringbuf_record rec;
	unsigned char *buf; /* page-sized copy of the current record */
};

RINGBUF__FLEX_BEGIN
struct ringbuf_iter {
	struct ringbuf *rb;
	unsigned cpu; /* or RINGBUF_ALL_CPUS */
	unsigned n;
	uint64_t dropped;
	uint64_t fenced; /* merged: the [R1] mark (ringbuf__merged_fence) */
	unsigned flags;  /* enum ringbuf_iter_flags */
	bool in_place;   /* ringbuf_iter_init_in: nothing to free */
	struct ringbuf__iter_cpu ic[];
};
RINGBUF__FLEX_END

static inline uint64_t ringbuf__page_gen(const struct ringbuf *rb, unsigned cpu, uint32_t idx)
{
	return atomic_load_explicit(&ringbuf__bp(rb, cpu, idx)->write, memory_order_acquire) >>
	       RINGBUF__WRITE_BITS;
}

/* Copy len bytes of a page that a writer may be reusing; the caller validates
 * the copy with the page's update count, so the race is benign by design
 * (seqlock read). */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
__attribute__((no_sanitize("thread")))
#endif
#elif defined(__SANITIZE_THREAD__)
__attribute__((no_sanitize_thread))
#endif
static void ringbuf__copy_racy(unsigned char *dst, const unsigned char *src, size_t len)
{
	size_t i;
	for (i = 0; i < len; i++)
		dst[i] = ((const volatile unsigned char *)src)[i];
}

/* The overrun base: ov, loaded under the reader lock, and the reset
 * generation with it ([RESET-GEN]; relaxed: the lock orders it). No reset
 * runs while the lock is held, so the two belong to one state: ov counts
 * pushes since the last reset this generation names. */
static void ringbuf__iter_base(struct ringbuf__cpu *c, struct ringbuf__iter_cpu *ic, uint64_t ov)
{
	ic->overrun = ov;
	ic->reset_gen = RINGBUF__LOAD(&c->reset_gen);
}

/* Events pushed out since the base, beyond those the walk passed: missed;
 * then ov is the new base. A reset since the base (the generation moved, R5
 * [RESET-GEN]; or overrun below the base: a reset zeroed it, nothing else
 * lowers it, and a reset by a library without the generation does not move
 * it): what the reset threw away is not a loss (it restarts the statistics),
 * the pushes counted since are, all of ov, and the walk starts over (it
 * passed none of them). Before, ov - base wrapped below the base (about 2^64
 * events reported lost) and, with overrun grown back past the base, counted
 * from the old base (lost uncounted: test_reset
 * iterator_across_a_reset_overrun_grown_past_its_base). */
static void ringbuf__iter_lost(struct ringbuf_iter *it, struct ringbuf__cpu *c, struct ringbuf__iter_cpu *ic,
			       uint64_t ov)
{
	uint64_t base = ic->overrun, base_gen = ic->reset_gen;
	uint64_t pushed = ov - base, passed = ic->passed;
	ringbuf__iter_base(c, ic, ov);
	if (ic->reset_gen != base_gen || ov < base) {
		pushed = ov;
		passed = 0;
	}
	if (pushed > passed) {
		it->dropped += pushed - passed;
		ic->lost += pushed - passed;
	}
}

/* A head push between its claim (H1 CAS, HEADER -> UPDATE) and H3 (UPDATE
 * cleared): its owner may not have added the page's count to overrun yet, while
 * a nested writer that helped it already moved the tail into the page (new
 * update count) and set HEADER further on. Call after the observation the count
 * must cover (an update count that moved, a head found) and load overrun after:
 * a link read without UPDATE was read from H3 or later (release, by the acquire
 * link load), so the owner's add happened before the overrun load. */
static bool ringbuf__iter_push_in_flight(const struct ringbuf *rb, unsigned cpu)
{
	uint32_t i;
	for (i = 0; i <= rb->nr_pages; i++)
		if (ringbuf__load_link(ringbuf__bp(rb, cpu, i)) & RINGBUF__F_UPDATE)
			return true;
	return false;
}

static int ringbuf__iter_cpu_next(struct ringbuf_iter *it, unsigned cpu, struct ringbuf__iter_cpu *ic,
				  struct ringbuf_record *rec)
{
	struct ringbuf *rb = it->rb;
	struct ringbuf__cpu *c = ringbuf__cpu(rb, cpu);
	const bool align8 = (rb->flags & RINGBUF_F_ALIGN8) != 0;
	uint32_t loops, limit = 4 * (rb->nr_pages + 2) + rb->bsize;
	int r;

	if (it->flags & RINGBUF_ITER_NOWAIT) {
		/* one try (acquire, as ringbuf__reader_lock) */
		uint64_t zero = 0;
		if (!atomic_compare_exchange_strong_explicit(&c->reader_lock, &zero, ringbuf__rl_self(),
							     memory_order_acquire, memory_order_relaxed))
			return RINGBUF_EBUSY;
	} else if ((r = ringbuf__reader_lock(rb, c)) < 0) {
		return r;
	}
	for (loops = 0; loops < limit; loops++) {
		uint32_t rp = RINGBUF__LOAD(&c->reader_page), cp, commit, page;
		const unsigned char *data;
		struct ringbuf__rec e;

		/* HOSTILE MEMORY: each page index checked before it names a page
		 * (rp here, next and its prev below) */
		if (rp > rb->nr_pages) {
			ringbuf__warn(rb, cpu, "iterator: reader page index out of range");
			r = RINGBUF_ECORRUPT;
			break;
		}
		if (ic->state <= 0) {
			/* (re)start at the consumer's position; after a restart,
			 * events already handed out are skipped by time stamp (per
			 * CPU they never go backwards), so the walk never goes back */
			ic->page = rp;
			ic->off = c->read;
			ic->ts = c->read_stamp;
			ic->gen = ringbuf__page_gen(rb, cpu, rp);
			if (ic->state == 0) /* else the base was set where the loss was counted */
				ringbuf__iter_base(c, ic, ringbuf__overrun(c));
			ic->passed = 0;
			ic->on_reader = true;
			ic->restarted = ic->any;
			ic->skip_same = ic->same_ts;
			ic->state = 1;
		}
		page = ic->page;
		if (ringbuf__page_gen(rb, cpu, page) != ic->gen) {
			/* reused under us: pushed out by writers and rewritten, or
			 * consumed and put back by a consumer. Count what was pushed
			 * beyond our position (above), restart from the consumer's
			 * position with that overrun as the new base: pages pushed
			 * after this load are ahead of the reader page. The push
			 * that took the page must be counted first (retry; EAGAIN
			 * at the loop limit while its owner is interrupted). */
			uint64_t ov;
			if (ringbuf__iter_push_in_flight(rb, cpu))
				continue;
			ov = ringbuf__overrun(c);
			ringbuf__iter_lost(it, c, ic, ov);
			ic->state = -1; /* restart, keeping the base */
			continue;
		}
		if (page == rp && ic->off < c->read) { /* a consumer went past us */
			ic->off = c->read;
			ic->ts = c->read_stamp;
		}
		cp = atomic_load_explicit(&c->commit_page, memory_order_acquire);
		commit = ringbuf__page_commit(rb, cpu, page);
		if (commit > rb->bsize) {
			r = RINGBUF_ECORRUPT;
			break;
		}
		data = ringbuf__dp(rb, cpu, page)->data;
		if (ic->off == 0 && commit > 0)
			/* the page's first event: its time is the page's, written
			 * before the commit we just loaded (acquire) */
			ic->ts = atomic_load_explicit(&ringbuf__dp(rb, cpu, page)->time_stamp,
						      memory_order_relaxed);
		if (ic->off < commit) {
			unsigned char hdr[8] = {0};
			uint32_t avail = commit - ic->off, w0, a0;
			ringbuf__copy_racy(hdr, data + ic->off, avail < 8 ? avail : 8);
			atomic_thread_fence(memory_order_acquire);
			if (ringbuf__page_gen(rb, cpu, page) != ic->gen)
				continue;
			memcpy(&w0, hdr, 4);
			memcpy(&a0, hdr + 4, 4);
			if (ringbuf__parse_words(w0, a0, avail, align8, &e) < 0) {
				ringbuf__warn(rb, cpu, "iterator: corrupt record");
				r = RINGBUF_ECORRUPT;
				break;
			}
			if (e.null_pad) {
				ic->off = commit;
				continue;
			}
			if (e.type == 0) {
				ringbuf__copy_racy(ic->buf, data + ic->off, e.len);
				atomic_thread_fence(memory_order_acquire);
				if (ringbuf__page_gen(rb, cpu, page) != ic->gen)
					continue;
			}
			if (e.type == RINGBUF__TYPE_TIME_STAMP)
				ic->ts = ringbuf__abs_ts(ic->ts, e.delta);
			else
				ic->ts += e.delta;
			ic->off += e.len;
			if (e.type != 0)
				continue;
			if (!ic->on_reader)
				ic->passed++;
			if (ic->restarted) {
				if (ic->ts < ic->last_ts)
					continue; /* handed out before the restart */
				if (ic->ts == ic->last_ts && ic->skip_same) {
					ic->skip_same--;
					continue;
				}
				ic->restarted = false;
			}
			if (ic->any && ic->ts == ic->last_ts) {
				ic->same_ts++;
			} else {
				ic->last_ts = ic->ts;
				ic->same_ts = 1;
			}
			ic->any = true;
			rec->data = ic->buf + e.hdr;
			rec->len = e.len - e.hdr;
			rec->ts = ic->ts;
			rec->lost = ic->lost;
			rec->cpu = cpu;
			ic->lost = 0;
			r = 1;
			break;
		}
		/* this page is done */
		if (page == cp) {
			r = 0; /* the end of what is committed (for now) */
			break;
		}
		{
			uint32_t next;
			uint64_t ngen;
			uint64_t ov, pl;
			uint64_t link = 0;
			if (page == rp) {
				r = ringbuf__find_head(rb, cpu, c, &next, &link);
				if (r < 0)
					break;
			} else {
				next = ringbuf__next_idx(rb, cpu, page);
				if (next > rb->nr_pages) {
					ringbuf__warn(rb, cpu, "iterator: link index out of range");
					r = RINGBUF_ECORRUPT;
					break;
				}
			}
			ngen = ringbuf__page_gen(rb, cpu, next);
			/* every push before this head counted (the HEADER we found
			 * may be a nested helper's, set before its owner counted) */
			if (page == rp && ringbuf__iter_push_in_flight(rb, cpu))
				continue;
			ov = ringbuf__overrun(c);
			pl = ringbuf__pages_lost(c, true);
			/* the head we found must still be the head after we read its
			 * update count: else it may be pushed out and rewritten under
			 * that very count (loop: the loss shows in overrun) */
			if (page == rp) {
				uint32_t np = ringbuf__bp(rb, cpu, next)->prev;
				if (np > rb->nr_pages) {
					ringbuf__warn(rb, cpu, "iterator: prev index out of range");
					r = RINGBUF_ECORRUPT;
					break;
				}
				if (ringbuf__load_link(ringbuf__bp(rb, cpu, np)) != link)
					continue;
			}
			/* the page we leave must still be the one we read: if writers
			 * reused it meanwhile, `next` may hold data newer than what
			 * was lost in between; the check at the top reports it */
			if (ringbuf__page_gen(rb, cpu, page) != ic->gen)
				continue;
			if (page != rp && pl - ic->plost > ic->pages) {
				/* [I-LAG] the page we leave was pushed out of the ring
				 * (more pages pushed since the base head than we left
				 * behind): `next` may be a page the tail is entering
				 * again, whose update count is new but whose commit and
				 * bytes are not yet (U1 comes before they are reset), so
				 * its new events could be skipped unseen. Count what was
				 * pushed beyond our walk and start over from the
				 * consumer's position. (ngen was loaded before pl: a
				 * count bumped by a U1 on `next` comes after the push of
				 * `page`, which pl shows.) */
				ringbuf__iter_lost(it, c, ic, ov);
				ic->state = -1;
				continue;
			}
			if (page == rp) {
				/* pages pushed out of the ring while we read the reader
				 * page (or walked a page a consumer then took): events we
				 * will never see. The head is the new base. */
				ringbuf__iter_lost(it, c, ic, ov);
				ic->passed = 0;
				ic->plost = pl;
				ic->pages = 0;
			} else {
				ic->pages++;
			}
			ic->page = next;
			ic->off = 0;
			ic->gen = ngen;
			ic->on_reader = false;
			r = 0;
		}
	}
	if (loops == limit)
		r = RINGBUF_EAGAIN;
	ringbuf__reader_unlock(c);
	return r;
}

RINGBUF_API int ringbuf_iter_start(struct ringbuf *rb, unsigned cpu, struct ringbuf_iter **out)
{
	struct ringbuf_iter *it;
	unsigned n, i;
	if (!rb || !out || (cpu != RINGBUF_ALL_CPUS && cpu >= rb->ncpu))
		return RINGBUF_EINVAL;
	n = cpu == RINGBUF_ALL_CPUS ? rb->ncpu : 1;
	it = (struct ringbuf_iter *)RINGBUF_MALLOC(sizeof *it + n * sizeof it->ic[0], NULL);
	if (!it)
		return RINGBUF_ENOMEM;
	memset(it, 0, sizeof *it + n * sizeof it->ic[0]);
	it->rb = rb;
	it->cpu = cpu;
	it->n = n;
	for (i = 0; i < n; i++) {
		it->ic[i].buf = (unsigned char *)RINGBUF_MALLOC(rb->page_size, NULL);
		if (!it->ic[i].buf) {
			ringbuf_iter_finish(it);
			return RINGBUF_ENOMEM;
		}
	}
	*out = it;
	return 0;
}

RINGBUF_API size_t ringbuf_iter_size(const struct ringbuf *rb, unsigned cpu)
{
	size_t n, head;
	if (!rb || (cpu != RINGBUF_ALL_CPUS && cpu >= rb->ncpu))
		return 0;
	n = cpu == RINGBUF_ALL_CPUS ? rb->ncpu : 1;
	head = (sizeof(struct ringbuf_iter) + n * sizeof(struct ringbuf__iter_cpu) + 7) & ~(size_t)7;
	return head + n * rb->page_size;
}

RINGBUF_API int ringbuf_iter_init_in(void *mem, size_t size, struct ringbuf *rb, unsigned cpu,
				     unsigned flags, struct ringbuf_iter **out)
{
	struct ringbuf_iter *it = (struct ringbuf_iter *)mem;
	size_t need = ringbuf_iter_size(rb, cpu), n, head, i;
	if (!mem || !out || need == 0 || ((uintptr_t)mem & 7u) || (flags & ~(unsigned)RINGBUF_ITER_NOWAIT))
		return RINGBUF_EINVAL;
	if (size < need)
		return RINGBUF_ENOMEM;
	n = cpu == RINGBUF_ALL_CPUS ? rb->ncpu : 1;
	head = (sizeof *it + n * sizeof it->ic[0] + 7) & ~(size_t)7;
	memset(it, 0, head);
	it->rb = rb;
	it->cpu = cpu;
	it->n = (unsigned)n;
	it->flags = flags;
	it->in_place = true;
	for (i = 0; i < n; i++)
		it->ic[i].buf = (unsigned char *)mem + head + i * rb->page_size;
	*out = it;
	return 0;
}

RINGBUF_API int ringbuf_iter_next(struct ringbuf_iter *it, struct ringbuf_record *rec)
{
	unsigned i, best = ~0u;
	bool again = false;
	int r;
	if (!it || !rec)
		return RINGBUF_EINVAL;
	if (it->cpu != RINGBUF_ALL_CPUS)
		return ringbuf__out_ts(it->rb, rec, ringbuf__iter_cpu_next(it, it->cpu, &it->ic[0], rec));
	/* merged: keep one pending event per CPU, hand out the oldest, once no
	 * CPU without a pending event can still show an older one (as
	 * ringbuf_consume_merged: [R1]-[R3]) */
	for (i = 0; i < it->n; i++) {
		struct ringbuf__iter_cpu *ic = &it->ic[i];
		if (!ic->have) {
			r = ringbuf__iter_cpu_next(it, i, ic, &ic->rec);
			if (r < 0 && r != RINGBUF_EAGAIN)
				return r;
			ic->have = r == 1;
			if (r == RINGBUF_EAGAIN)
				again = true; /* this CPU cannot tell now */
		}
		if (ic->have && (best == ~0u || ic->rec.ts < it->ic[best].rec.ts))
			best = i;
	}
	if (best == ~0u)
		return again ? RINGBUF_EAGAIN : 0;
	if (again)
		return RINGBUF_EAGAIN;
	RINGBUF__TESTPOINT(it->rb, best, RINGBUF__TP_MERGED_PEEKED);
	ringbuf__merged_fence(it->rb, &it->fenced, it->ic[best].rec.ts);
	for (i = 0; i < it->n; i++) {
		struct ringbuf__iter_cpu *ic = &it->ic[i];
		if (ic->have)
			continue; /* its later events are newer than its pending one */
		if (ringbuf__merged_inflight(it->rb, i, it->ic[best].rec.ts))
			return RINGBUF_EAGAIN;
		r = ringbuf__iter_cpu_next(it, i, ic, &ic->rec);
		if (r < 0)
			return r;
		ic->have = r == 1;
		if (ic->have && ic->rec.ts < it->ic[best].rec.ts)
			best = i;
	}
	*rec = it->ic[best].rec;
	it->ic[best].have = false; /* its buffer stays valid until that CPU moves on */
	return ringbuf__out_ts(it->rb, rec, 1);
}

RINGBUF_API void ringbuf_iter_reset(struct ringbuf_iter *it)
{
	unsigned i;
	if (!it)
		return;
	for (i = 0; i < it->n; i++) {
		it->ic[i].state = 0;
		it->ic[i].have = false;
		it->ic[i].lost = 0;
		it->ic[i].any = false; /* from the oldest unread event again */
		it->ic[i].same_ts = 0;
	}
}

RINGBUF_API uint64_t ringbuf_iter_dropped(const struct ringbuf_iter *it)
{
	return it ? it->dropped : 0;
}

RINGBUF_API void ringbuf_iter_finish(struct ringbuf_iter *it)
{
	unsigned i;
	if (!it || it->in_place)
		return;
	for (i = 0; i < it->n; i++)
		if (it->ic[i].buf)
			RINGBUF_FREE(it->ic[i].buf, NULL);
	RINGBUF_FREE(it, NULL);
}

/* ---- waiting ---------------------------------------------------------------
 * The steps [WAIT-R1..R6] and the writer's [WAIT-W] / [WAIT-W2], and why no
 * wake-up is lost: WAITING in >>design. */

/* Sleep slice when a wake may be missed (no membarrier, or a shared block
 * whose writers are not all ordered by it): the waiter looks again this often. */
#define RINGBUF__WAIT_SLICE_MS 10
/* No futex at all: sleep this long between looks (there is no wake). */
#define RINGBUF__WAIT_POLL_MS 1

/* [WAIT-R2] Arm: set bit, the armed CPU (ours, cpu + 1, when nobody is armed
 * or every armed waiter waits for it; else RINGBUF__WAIT_ANY), lower the
 * watermark to pages (if lower, or none), and count a new waiter (reg) --
 * one seq_cst CAS, so the count, the CPU and the watermark can never be
 * seen apart. False (nothing changed) when reg and 16383 waiters are
 * counted: the caller then sleeps in slices, uncounted and unarmed. */
static bool ringbuf__wait_arm(struct ringbuf *rb, unsigned cpu, uint32_t bit, uint32_t pages, bool reg)
{
	uint64_t cur = atomic_load_explicit(&ringbuf__sh(rb)->waiters, memory_order_relaxed), nv;
	uint32_t mine = cpu < RINGBUF__WAIT_ANY - 1 ? cpu + 1 : RINGBUF__WAIT_ANY, f;
	do {
		uint32_t min = RINGBUF__WAIT_MIN(cur);
		if (reg && (cur & RINGBUF__WAIT_COUNT) == RINGBUF__WAIT_COUNT)
			return false;
		f = !(cur & (RINGBUF__WAIT_DATA | RINGBUF__WAIT_FULL)) || RINGBUF__WAIT_CPU(cur) == mine
			    ? mine
			    : RINGBUF__WAIT_ANY;
		nv = (cur & ~((uint64_t)RINGBUF__WAIT_ANY << RINGBUF__WAIT_CPU_SHIFT)) | bit |
		     (uint64_t)f << RINGBUF__WAIT_CPU_SHIFT;
		if (reg)
			nv += RINGBUF__WAIT_ONE;
		if (pages && (min == 0 || min > pages))
			nv = (nv & 0xffffffffu) | (uint64_t)pages << 32;
	} while (!atomic_compare_exchange_weak_explicit(&ringbuf__sh(rb)->waiters, &cur, nv, memory_order_seq_cst,
							memory_order_relaxed));
	return true;
}

/* [WAIT-R6] Leave. The last waiter clears the word. One whose watermark is
 * the lowest clears it (and FULL) and wakes the others, which re-arm with
 * theirs [WAIT-R2]: the lowest watermark of those left is never lost, and
 * never stays lower than theirs (which would wake them at every page). The
 * CAS is acquire for the same reason as [WAIT-W2]'s. */
static void ringbuf__wait_leave(struct ringbuf *rb, uint32_t pages)
{
	uint64_t cur = atomic_load_explicit(&ringbuf__sh(rb)->waiters, memory_order_relaxed), nv;
	bool wake;
	do {
		wake = false;
		if ((cur & RINGBUF__WAIT_COUNT) <= RINGBUF__WAIT_ONE) {
			nv = 0;
		} else {
			nv = cur - RINGBUF__WAIT_ONE;
			if (pages && RINGBUF__WAIT_MIN(cur) == pages) {
				/* the armed CPU stays with DATA (a superset) */
				nv &= RINGBUF__WAIT_COUNT | RINGBUF__WAIT_DATA |
				      (uint64_t)RINGBUF__WAIT_ANY << RINGBUF__WAIT_CPU_SHIFT;
				wake = true;
			}
		}
	} while (!atomic_compare_exchange_weak_explicit(&ringbuf__sh(rb)->waiters, &cur, nv, memory_order_acq_rel,
							memory_order_relaxed));
	if (wake) {
		atomic_fetch_add_explicit(&ringbuf__sh(rb)->wait_seq, 1, memory_order_release);
		ringbuf__futex_wake(rb, &ringbuf__sh(rb)->wait_seq);
	}
}

/* [WAIT-R3] The heavy side of the asymmetric fence with [WAIT-W]
 * ([BARRIER]): false when it cannot be had; the caller then sleeps in slices. */
static bool ringbuf__wait_fence(struct ringbuf *rb)
{
	atomic_thread_fence(memory_order_seq_cst);
	return ringbuf__writers_barrier(rb);
}


/* [WAIT-R5] FUTEX_WAIT on word while it holds val, at most *rel (NULL: no
 * limit). The time argument's layout must be the kernel's: SYS_futex_time64
 * (32-bit ABIs, Linux >= 5.1) takes 64-bit seconds and nanoseconds,
 * SYS_futex there takes the old 32-bit (long) pair whatever time_t the
 * program was built with; on 64-bit ABIs SYS_futex takes struct timespec.
 * False when there is no futex call (the caller sleeps instead). */
static bool ringbuf__futex_wait(const struct ringbuf *rb, _Atomic(uint32_t) *word, uint32_t val,
				const struct timespec *rel)
{
#if defined(__linux__) && (defined(SYS_futex) || defined(SYS_futex_time64))
	int op = rb->shared ? 0 : 0 | 128; /* FUTEX_WAIT(_PRIVATE) */
#if defined(SYS_futex_time64)
	{
		struct {
			int64_t tv_sec, tv_nsec;
		} t64;
		if (rel) {
			t64.tv_sec = (int64_t)rel->tv_sec;
			t64.tv_nsec = (int64_t)rel->tv_nsec;
		}
		if (syscall(SYS_futex_time64, (void *)word, op, val, rel ? &t64 : NULL, NULL, 0) == 0 ||
		    errno != ENOSYS)
			return true;
		/* a kernel older than 5.1: the old call */
	}
#endif
#if defined(SYS_futex)
	{
#if defined(SYS_futex_time64) || !(defined(__x86_64__) && defined(__ILP32__))
		struct {
			long tv_sec, tv_nsec;
		} t;
		if (rel) {
			t.tv_sec = (long)rel->tv_sec;
			if (sizeof(rel->tv_sec) > sizeof(long) && rel->tv_sec > (time_t)LONG_MAX)
				t.tv_sec = LONG_MAX;
			t.tv_nsec = (long)rel->tv_nsec;
		}
#else
		struct timespec t; /* x32: the kernel's 64-bit layout */
		if (rel)
			t = *rel;
#endif
		(void)syscall(SYS_futex, (void *)word, op, val, rel ? &t : NULL, NULL, 0);
	}
#endif
	return true;
#else
	(void)rb;
	(void)word;
	(void)val;
	(void)rel;
	return false;
#endif
}

static void ringbuf__sleep_ms(unsigned ms)
{
	struct timespec ts;
	ts.tv_sec = 0;
	ts.tv_nsec = (long)ms * 1000000L;
#ifdef RINGBUF__HAVE_THRD_YIELD
	(void)thrd_sleep(&ts, NULL);
#elif defined(__linux__)
	(void)nanosleep(&ts, NULL);
#else
	ringbuf__yield();
#endif
}

static bool ringbuf__ready(struct ringbuf *rb, unsigned cpu, uint32_t pages)
{
	unsigned i, lo = cpu == RINGBUF_ALL_CPUS ? 0 : cpu, hi = cpu == RINGBUF_ALL_CPUS ? rb->ncpu : cpu + 1;
	for (i = lo; i < hi; i++) {
		if (pages) {
			if (ringbuf__dirty_pages(ringbuf__cpu(rb, i)) >= pages)
				return true;
		} else if (!ringbuf_empty_cpu(rb, i)) {
			return true;
		}
	}
	return false;
}

RINGBUF_API int ringbuf_wait(struct ringbuf *rb, unsigned cpu, int full_pct, int timeout_ms)
{
	uint32_t pages = 0, seq, bit, kick;
	struct timespec deadline, now, rel = {0, 0};
	bool reg = true, exact, counted = true;
	int ret = 0;
	if (!rb || (cpu != RINGBUF_ALL_CPUS && cpu >= rb->ncpu) || full_pct < 0 || full_pct > 100)
		return RINGBUF_EINVAL;
	if (full_pct > 0) {
		pages = (uint32_t)(((uint64_t)rb->nr_pages * (unsigned)full_pct + 99) / 100);
		if (pages == 0)
			pages = 1;
	}
	bit = pages ? RINGBUF__WAIT_FULL : RINGBUF__WAIT_DATA;
	clock_gettime(RINGBUF__CLOCK_ID, &deadline);
	if (timeout_ms >= 0) {
		deadline.tv_sec += timeout_ms / 1000;
		deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
	}
	RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_WAIT_REGISTER);
	kick = atomic_load_explicit(&ringbuf__sh(rb)->wait_kick, memory_order_acquire);
	for (;;) {
		/* [WAIT-R1] the futex word, before arming: a wake that follows
		 * the arming bumps it after this read, so the sleep returns */
		seq = atomic_load_explicit(&ringbuf__sh(rb)->wait_seq, memory_order_acquire);
		/* [WAIT-R2] register (first time) and arm (again: a waker
		 * clears the bits, a leaving waiter the watermark); no room
		 * to count us: unarmed, in slices */
		if (counted && !ringbuf__wait_arm(rb, cpu, bit, pages, reg))
			counted = false;
		reg = false;
		RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_WAIT_ARMED);
		exact = ringbuf__wait_fence(rb) && counted; /* [WAIT-R3] pairs with [WAIT-W] */
		if (ringbuf__ready(rb, cpu, pages)) { /* [WAIT-R4] */
			ret = 1;
			break;
		}
		if (atomic_load_explicit(&ringbuf__sh(rb)->wait_kick, memory_order_acquire) != kick)
			break; /* ringbuf_wake_waiters() */
		if (timeout_ms >= 0) {
			clock_gettime(RINGBUF__CLOCK_ID, &now);
			rel.tv_sec = deadline.tv_sec - now.tv_sec;
			rel.tv_nsec = deadline.tv_nsec - now.tv_nsec;
			if (rel.tv_nsec < 0) {
				rel.tv_sec--;
				rel.tv_nsec += 1000000000L;
			}
			if (rel.tv_sec < 0)
				break; /* timed out */
		}
		/* a wake may be missed without the fence: sleep in slices */
		if (!exact && (timeout_ms < 0 || rel.tv_sec > 0 ||
			       rel.tv_nsec > RINGBUF__WAIT_SLICE_MS * 1000000L)) {
			rel.tv_sec = 0;
			rel.tv_nsec = RINGBUF__WAIT_SLICE_MS * 1000000L;
		}
		RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_WAIT_SLEEP);
		/* [WAIT-R5] */
		if (!ringbuf__futex_wait(rb, &ringbuf__sh(rb)->wait_seq, seq, timeout_ms >= 0 || !exact ? &rel : NULL))
			ringbuf__sleep_ms(RINGBUF__WAIT_POLL_MS);
	}
	if (counted)
		ringbuf__wait_leave(rb, pages); /* [WAIT-R6] */
	return ret;
}

RINGBUF_API void ringbuf_wake_waiters(struct ringbuf *rb)
{
	if (!rb)
		return;
	atomic_fetch_add_explicit(&ringbuf__sh(rb)->wait_kick, 1, memory_order_release);
	atomic_fetch_add_explicit(&ringbuf__sh(rb)->wait_seq, 1, memory_order_release);
	ringbuf__futex_wake(rb, &ringbuf__sh(rb)->wait_seq);
}

/* -- the page walk of >>internal (tests and tools: every page of a CPU, in order) -- */

RINGBUF_API int ringbuf__walk_pages(struct ringbuf *rb, unsigned cpu, ringbuf__page_fn fn, void *ctx)
{
	struct ringbuf__cpu *c;
	uint32_t x, t, i;
	uint64_t link;
	int r;
	if (!rb || cpu >= rb->ncpu || !fn)
		return RINGBUF_EINVAL;
	c = ringbuf__cpu(rb, cpu);
	x = RINGBUF__LOAD(&c->reader_page);
	if ((r = fn(ringbuf__dp(rb, cpu, x), rb->page_size, RINGBUF__PAGE_READER, ctx)) != 0)
		return r;
	if ((r = ringbuf__find_head(rb, cpu, c, &x, &link)) < 0)
		return r;
	t = RINGBUF__LOAD(&c->tail_page);
	for (i = 0; i < rb->nr_pages; i++) {
		if ((r = fn(ringbuf__dp(rb, cpu, x), rb->page_size, RINGBUF__PAGE_RING, ctx)) != 0)
			return r;
		if (x == t)
			break;
		x = ringbuf__next_idx(rb, cpu, x);
	}
	return 0;
}


/* ==== >>repair: a dead writer's buffer made consistent =================== *
 * ringbuf__recover_cpu: a buffer whose writers are gone (a killed process
 * sharing a file block, a thread that died inside an event, a fork child's
 * copy) is made what the writers would have left had they finished: the
 * reader's swap finished or undone (>>reader), a cut head push finished and
 * counted, half-written events padded, everything committed and counted,
 * published by committing = 0 (release, [REC-M3]). Used by ringbuf_recover
 * and ringbuf_open_file (>>file), a dead owner's takeover and the fork child
 * (>>contexts). */

/* Repair one CPU buffer whose writers are gone. live: a reader may be running
 * (its lock and state are left alone). */
static void ringbuf__recover_cpu(struct ringbuf *rb, unsigned cpu, bool live)
{
	if (!live) {
		ringbuf__repair_reader(rb, cpu); /* 0. a reader's swap cut at any step */
		ringbuf__repair_prev(rb, cpu);   /* then the prevs, from the ring */
	}
	{
		struct ringbuf__cpu *c = ringbuf__cpu(rb, cpu);
		uint32_t depth = RINGBUF__LOAD(&c->committing), n = rb->nr_pages, i, j;
		if (depth > RINGBUF_MAX_NEST) /* validated, but this is another load */
			depth = RINGBUF_MAX_NEST;

		/* 1. a head push cut between H1 and H3: count it if its owner had
		 * not, then finish it. Its owner is the deepest writer in flight
		 * whose [PUSH-MARK] is this very link value (HEAD PUSH ACCOUNTING
		 * in >>design); its counters get the marked values, which they
		 * already hold if the kill came after [PUSH-COUNT]. */
		uint32_t tail = RINGBUF__LOAD(&c->tail_page);
		for (i = 0; i <= n; i++) {
			struct ringbuf__bpage *bp = ringbuf__bp(rb, cpu, i);
			uint64_t link = RINGBUF__LOAD(&bp->next);
			if ((link & RINGBUF__F_MASK) == RINGBUF__F_UPDATE && ringbuf__link_idx(link) <= n) {
				uint32_t nx = ringbuf__link_idx(link);
				struct ringbuf__bpage *nb = ringbuf__bp(rb, cpu, nx);
				uint64_t nl = RINGBUF__LOAD(&nb->next);
				(void)ringbuf__push_count_owner(c, i, link, depth);
				/* H2 only while the tail is still T, as
				 * ringbuf__help_new_head asks: the tail leaves T
				 * only after an H2 for this push (the owner's, or
				 * a helper's, which found the head further on),
				 * and from there only a newer push or a reader's
				 * swap moves the flag. A push cut with the tail
				 * past T is an older one, nested pushes (by its
				 * helper) after it; with the newest of those cut
				 * before its H2 no HEADER is on the ring, and an H2
				 * here put it behind the tail: the pages from the
				 * newest push on unreadable, counted neither read
				 * nor overrun (test_crash_accounting:
				 * nested_head_pushes_killed_at_each_step_*). And only
				 * unless the head exists: a writer nested in
				 * the owner (a helper's H2, then pushes of its own)
				 * or a reader's swap may have moved the flag on since
				 * (ringbuf__help_new_head's test); a second HEADER
				 * made a reader take the wrong page for the head
				 * (events out of order, lost uncounted) and writers
				 * fail with commit_overrun after (test_crash_accounting,
				 * one_head_after_a_push_finished_by_others) */
				if (i == tail && (nl & RINGBUF__F_MASK) == 0 &&
				    !ringbuf__head_between(rb, cpu, ringbuf__link_idx(nl), i))
					RINGBUF__STORE(&nb->next, ringbuf__link_make(nl, ringbuf__link_idx(nl),
										  RINGBUF__F_HEADER));
				RINGBUF__STORE(&bp->next, ringbuf__link_make(link, nx, 0));
			}
		}
		/* and no mark outlives its writer: one killed after [PUSH-MARK]
		 * and before its claim left T.next as it was, so the next push
		 * from T claims the marked value, and a helper nested two deep
		 * in its owner would take the dead mark (the deeper one) for the
		 * owner's (test_crash_accounting, a_mark_left_by_a_kill_*) */
		for (i = 0; i < RINGBUF_MAX_NEST; i++)
			RINGBUF__STORE(&c->slots[i].push_link, 0);
		/* 2. reservations in flight (depth 1..committing, innermost last):
		 * bytes that may be half written become padding of their length;
		 * a page end claimed but not padded is padded */
		for (i = depth; i-- > 0;) {
			struct {
				uint32_t page, off, len;
			} sl;
			struct ringbuf__bpage *bp;
			unsigned char *base;
			uint64_t wf;
			uint32_t w;
			sl.len = RINGBUF__LOAD(&c->slots[i].len);
			/* 0: complete, or being described; GONE: a nested writer
			 * reserved where it points (its own CAS failed or will) */
			if (sl.len == 0 || (sl.len & RINGBUF__SLOT_GONE))
				continue;
			sl.page = RINGBUF__LOAD(&c->slots[i].page);
			sl.off = RINGBUF__LOAD(&c->slots[i].off);
			/* a deeper writer in flight names the same place: it ran
			 * while this writer was interrupted, and what it names
			 * (its P1 at the write index, or a mark) came after
			 * anything this writer
			 * reserved, so this writer does not hold the place
			 * (a crossing with 4 bytes left aside, whose null
			 * header is already written): it claims nothing. The mark that says so (ringbuf__slot_reserved)
			 * is missing when the kill came between the deeper
			 * writer's CAS at C and its marking (RINGBUF__TP_C_CLAIMED;
			 * test_file: kill_between_a_nested_claim_and_its_mark_*) */
			for (j = i + 1; j < depth; j++)
				if (RINGBUF__LOAD(&c->slots[j].len) != 0 &&
				    RINGBUF__LOAD(&c->slots[j].page) == sl.page &&
				    RINGBUF__LOAD(&c->slots[j].off) == sl.off)
					break;
			if (j < depth)
				continue;
			/* loaded once, checked (validated before, but loaded again) */
			if (sl.page > n || sl.len > 2 * rb->bsize)
				continue;
			bp = ringbuf__bp(rb, cpu, sl.page);
			wf = RINGBUF__LOAD(&bp->write);
			w = (uint32_t)(wf & RINGBUF__WRITE_MASK);
			base = ringbuf__dp(rb, cpu, sl.page)->data;
			if (w < (uint64_t)sl.off + sl.len || sl.off >= rb->bsize)
				continue; /* never reserved (no CAS yet) */
			if (sl.off + sl.len <= rb->bsize &&
			    (uint32_t)RINGBUF__LOAD(&c->entries_d[i]) ==
				    RINGBUF__LOAD(&c->slots[i].counted) + 1u)
				continue; /* complete and counted committed: kept ([SLOT-DONE]) */
			if (sl.off + sl.len > rb->bsize) {
				/* a crossing claim: pad and give the page its end back */
				uint32_t room = rb->bsize - sl.off;
				ringbuf__put_padding(base + sl.off, room, room >= 8 ? 1 : 0);
				if (w > rb->bsize)
					RINGBUF__STORE(&bp->write, (wf & ~RINGBUF__WRITE_MASK) |
								   (room >= 8 ? rb->bsize : sl.off));
				continue;
			}
			/* the event (and its time record: its value may be half
			 * written too) becomes one padding; later events keep
			 * their deltas, so their time can be off by this delta */
			ringbuf__put_padding(base + sl.off, sl.len, 0);
		}
		/* a helper writer may also have left a page claimed past its end */
		for (i = 0; i <= n; i++) {
			struct ringbuf__bpage *bp = ringbuf__bp(rb, cpu, i);
			uint64_t wf = RINGBUF__LOAD(&bp->write);
			if ((wf & RINGBUF__WRITE_MASK) > rb->bsize)
				RINGBUF__STORE(&bp->write, (wf & ~RINGBUF__WRITE_MASK) | rb->bsize);
		}
		RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_RECOVER_COMMIT);
		/* 3. commit everything: complete nested events included (the
		 * walk checks each index it loads: another process may still
		 * write a shared block). committing stays 1 until 5. */
		RINGBUF__STORE(&c->committing, 1);
		ringbuf__set_commit_to_write(rb, cpu, c);
		/* per-page event counts from what the pages now hold (the events
		 * padded above were counted when reserved). A page whose write
		 * index is 0 holds none: never reached by the tail (its data page
		 * may be a hole of the file: reading it would allocate it, on
		 * tmpfs and memfd a whole buffer's memory for a few events), or
		 * the tail page just entered (3. set its commit to 0) */
		for (i = 0; i <= n; i++) {
			struct ringbuf__bpage *bp = ringbuf__bp(rb, cpu, i);
			uint64_t cnt = (RINGBUF__LOAD(&bp->write) & RINGBUF__WRITE_MASK) == 0
					       ? 0
					       : ringbuf__count_events(rb, ringbuf__dp(rb, cpu, i));
			RINGBUF__STORE(&bp->entries, (RINGBUF__LOAD(&bp->entries) & ~RINGBUF__WRITE_MASK) | cnt);
		}
		/* 4. locks and stamps of the dead */
		if (!live) {
			atomic_store_explicit(&c->reader_lock, 0, memory_order_relaxed);
		}
		RINGBUF__STORE(&c->before_stamp, RINGBUF__STAMP_INVALID);
		RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_RECOVER_DONE);
		/* 5. [REC-M3] committing = 0, release, last: the writer's [M3]
		 * for the repair. It pairs with every acquire load that reads 0
		 * and then reads the buffer as the writer left it: the merged
		 * readers' [R2], ringbuf_reset_cpu's R4, ringbuf_quiesce's Q4.
		 * Steps 1-4 (links, padding, write indices, page commits, page
		 * counts, before_stamp) are sequenced before it, so a thread that
		 * reads 0 sees the repaired pages, and a reset that waited for
		 * 0 re-initialises after the recount (a recount landing after
		 * R4 would leave a count of discarded events on a page, which a
		 * head push would add to overrun). (A relaxed 0 right after
		 * step 3 let an ARM64/POWER reader see 0 before the repair.)
		 * live: a reader may run meanwhile, and its swap S2 resets the
		 * old reader page's count while the recount above may store it:
		 * harmless, since that page re-enters the ring just behind the
		 * head, and the tail resets a page's count (U1/U2) when it moves
		 * onto it, before any head push can count it; the reader page's
		 * own count is read by nobody. */
		atomic_store_explicit(&c->committing, 0, memory_order_release);
	}
}


/* ==== >>control ========================================================= */

RINGBUF_API void ringbuf_record_on(struct ringbuf *rb)
{
	if (rb)
		atomic_fetch_and_explicit(&ringbuf__sh(rb)->record_disabled, ~RINGBUF__OFF_BIT, memory_order_relaxed);
}
RINGBUF_API void ringbuf_record_off(struct ringbuf *rb)
{
	if (rb)
		atomic_fetch_or_explicit(&ringbuf__sh(rb)->record_disabled, RINGBUF__OFF_BIT, memory_order_relaxed);
}
RINGBUF_API bool ringbuf_record_is_on(const struct ringbuf *rb)
{
	return rb && atomic_load_explicit(&ringbuf__sh(rb)->record_disabled,
					  memory_order_relaxed) == 0;
}
RINGBUF_API void ringbuf_record_disable(struct ringbuf *rb)
{
	if (rb)
		RINGBUF__ADD(&ringbuf__sh(rb)->record_disabled, 1);
}
RINGBUF_API void ringbuf_record_enable(struct ringbuf *rb)
{
	uint32_t cur;
	if (!rb)
		return;
	cur = atomic_load_explicit(&ringbuf__sh(rb)->record_disabled, memory_order_relaxed);
	while ((cur & ~RINGBUF__OFF_BIT) != 0 &&
	       !atomic_compare_exchange_weak_explicit(&ringbuf__sh(rb)->record_disabled, &cur, cur - 1,
						      memory_order_relaxed, memory_order_relaxed))
		;
}
RINGBUF_API int ringbuf_record_disable_cpu(struct ringbuf *rb, unsigned cpu)
{
	if (!rb || cpu >= rb->ncpu)
		return RINGBUF_EINVAL;
	RINGBUF__ADD(&ringbuf__cpu(rb, cpu)->disabled, 1);
	return 0;
}
RINGBUF_API int ringbuf_record_enable_cpu(struct ringbuf *rb, unsigned cpu)
{
	struct ringbuf__cpu *c;
	uint32_t cur, floor;
	if (!rb || cpu >= rb->ncpu)
		return RINGBUF_EINVAL;
	c = ringbuf__cpu(rb, cpu);
	floor = RINGBUF__LOAD(&c->corrupt); /* a corruption disable stays until reset */
	cur = RINGBUF__LOAD(&c->disabled);
	do {
		if ((cur & ~RINGBUF__RESET_BIT) <= floor) /* a reset's bit is not ours to drop */
			return 0;
	} while (!atomic_compare_exchange_weak_explicit(&c->disabled, &cur, cur - 1, memory_order_relaxed,
							memory_order_relaxed));
	return 0;
}

RINGBUF_API int ringbuf_set_mode(struct ringbuf *rb, int mode)
{
	if (!rb || (mode != RINGBUF_MODE_OVERWRITE && mode != RINGBUF_MODE_PRODUCER_CONSUMER))
		return RINGBUF_EINVAL;
	atomic_store_explicit(&ringbuf__sh(rb)->mode, mode, memory_order_relaxed);
	return 0;
}
RINGBUF_API int ringbuf_get_mode(const struct ringbuf *rb)
{
	return rb ? atomic_load_explicit(&ringbuf__sh(rb)->mode, memory_order_relaxed)
		  : RINGBUF_EINVAL;
}
RINGBUF_API unsigned ringbuf_ncpu(const struct ringbuf *rb) { return rb ? rb->ncpu : 0; }
RINGBUF_API size_t ringbuf_page_size(const struct ringbuf *rb) { return rb ? rb->page_size : 0; }
RINGBUF_API unsigned ringbuf_nr_pages(const struct ringbuf *rb) { return rb ? rb->nr_pages : 0; }

/* zeroed: the block reads as zero bytes (RINGBUF_F_ZEROED), so the data
 * page headers already hold the empty page (time_stamp 0, commit 0) and are
 * not written: see SET-UP in >>design */
static void ringbuf__init_cpu(struct ringbuf *rb, unsigned cpu, bool zeroed)
{
	struct ringbuf__cpu *c = ringbuf__cpu(rb, cpu);
	uint32_t n = rb->nr_pages, i;
	memset(c, 0, sizeof *c);
	for (i = 0; i <= n; i++) {
		struct ringbuf__bpage *bp = ringbuf__bp(rb, cpu, i);
		struct ringbuf__dpage *dp = ringbuf__dp(rb, cpu, i);
		uint32_t next = i == n ? 0 : (i + 1) % n;
		memset(bp, 0, sizeof *bp);
		/* the ring is 0..n-1; page n-1 links to the head (page 0) with HEADER */
		atomic_init(&bp->next, ((uint64_t)next << 2) | (i == n - 1 ? RINGBUF__F_HEADER : 0));
		bp->prev = i == 0 ? n - 1 : (i == n ? n - 1 : i - 1);
		atomic_init(&bp->write, 0);
		atomic_init(&bp->entries, 0);
		atomic_init(&bp->drops, 0);
		if (!zeroed) {
			atomic_init(&dp->time_stamp, 0);
			atomic_init(&dp->commit, 0);
		}
	}
	atomic_init(&c->reader_page, n);
	atomic_init(&c->tail_page, 0);
	atomic_init(&c->commit_page, 0);
	c->head_hint = 0;
	c->index = cpu;
	c->bp_off = (uint64_t)((char *)ringbuf__bp(rb, cpu, 0) - (char *)rb);
	c->dp_off = (uint64_t)((char *)ringbuf__dp(rb, cpu, 0) - (char *)rb);
}

#ifdef RINGBUF_TESTING
typedef void (*ringbuf__reset_tp_fn)(struct ringbuf *rb, unsigned cpu, int step, void *ctx);
static ringbuf__reset_tp_fn ringbuf__reset_tp_hook;
static void *ringbuf__reset_tp_ctx;
/* Tests: called by ringbuf_reset_cpu after R4 (step 1) and after R5 (step 2). */
RINGBUF_API void ringbuf__set_reset_hook(ringbuf__reset_tp_fn fn, void *ctx)
{
	ringbuf__reset_tp_ctx = ctx;
	ringbuf__reset_tp_hook = fn;
}
#define RINGBUF__RESET_TESTPOINT(rb, cpu, step) \
	(ringbuf__reset_tp_hook ? ringbuf__reset_tp_hook((rb), (cpu), (step), ringbuf__reset_tp_ctx) : (void)0)
#else
#define RINGBUF__RESET_TESTPOINT(rb, cpu, step) ((void)0)
#endif

/* R5 of ringbuf_reset_cpu: the state of a new buffer, with atomic stores, and
 * none of the fields listed there (writers may be entering and leaving). */
static void ringbuf__reinit_cpu(struct ringbuf *rb, unsigned cpu)
{
	struct ringbuf__cpu *c = ringbuf__cpu(rb, cpu);
	uint32_t n = rb->nr_pages, i;
	for (i = 0; i <= n; i++) {
		struct ringbuf__bpage *bp = ringbuf__bp(rb, cpu, i);
		struct ringbuf__dpage *dp = ringbuf__dp(rb, cpu, i);
		uint32_t next = i == n ? 0 : (i + 1) % n;
		uint64_t w = RINGBUF__LOAD(&bp->write), e = RINGBUF__LOAD(&bp->entries);
		/* the ring 0..n-1 as created, page n-1 links to the head (page 0) */
		RINGBUF__STORE(&bp->next, ringbuf__link_make(RINGBUF__LOAD(&bp->next), next,
							    i == n - 1 ? RINGBUF__F_HEADER : 0));
		bp->prev = i == 0 ? n - 1 : (i == n ? n - 1 : i - 1);
		/* empty, with a new update count (the iterator's seqlock) */
		RINGBUF__STORE(&bp->write, (w & ~RINGBUF__WRITE_MASK) + RINGBUF__WRITE_INTCNT);
		RINGBUF__STORE(&bp->entries, (e & ~RINGBUF__WRITE_MASK) + RINGBUF__WRITE_INTCNT);
		RINGBUF__STORE(&bp->drops, 0);
		RINGBUF__STORE(&dp->time_stamp, 0);
		RINGBUF__STORE(&dp->commit, 0);
	}
	RINGBUF__STORE(&c->reader_page, n);
	RINGBUF__STORE(&c->tail_page, 0);
	RINGBUF__STORE(&c->commit_page, 0);
	RINGBUF__STORE(&c->before_stamp, 0);
	RINGBUF__STORE(&c->write_stamp, 0);
	for (i = 0; i < RINGBUF_MAX_NEST; i++)
		RINGBUF__STORE(&c->entries_d[i], 0);
	for (i = 0; i < RINGBUF_MAX_NEST; i++) {
		RINGBUF__STORE(&c->overrun_d[i], 0);
		RINGBUF__STORE(&c->pages_lost_d[i], 0);
	}
	RINGBUF__STORE(&c->commit_overrun, 0);
	RINGBUF__STORE(&c->dropped_events, 0);
	RINGBUF__STORE(&c->disabled_events, 0);
	RINGBUF__STORE(&c->rejected_events, 0);
	RINGBUF__STORE(&c->nest_overflow, 0);
	RINGBUF__STORE(&c->discarded, 0);
	RINGBUF__STORE(&c->pages_touched, 0);
	RINGBUF__STORE(&c->wake_seen, 0);
	/* reader state: ours, under the reader lock */
	c->head_hint = 0;
	c->read = 0;
	c->read_stamp = 0;
	c->last_overrun = 0;
	c->last_drops = 0;
	c->lost_pending = 0;
	RINGBUF__STORE(&c->read_events, 0);
	RINGBUF__STORE(&c->pages_read, 0);
	/* a corruption disable ends with the reset (the caller's own stay) */
	if (RINGBUF__LOAD(&c->corrupt)) {
		atomic_fetch_sub_explicit(&c->disabled, 1, memory_order_relaxed);
		RINGBUF__STORE(&c->corrupt, 0);
	}
	/* [RESET-GEN] last, after the counters' zeros. An iterator that runs
	 * after R8 takes the lock (CAS acquire, reads R8's release): it sees
	 * this bump and the zeros, and its overrun loads read those zeros or
	 * the pushes counted after them, so a base of the old generation is
	 * void and ov counts only pushes since the reset. A reset killed in R5
	 * has no R8: an iterator that takes the lock over sees what the dead
	 * thread stored before it died (the kernel's order, [TAKEOVER-HB]);
	 * the release keeps the zeros before the bump in that order (compiler
	 * and CPU), so a bump seen comes with zeroed counters, never with the
	 * old counts (a phantom loss of all of them). A kill before the bump
	 * leaves the CPU disabled (no pushes): at most the ov < base case of
	 * ringbuf__iter_lost. Only resets write it, under the reader lock: a
	 * load and a store, no RMW needed. */
	atomic_store_explicit(&c->reset_gen, RINGBUF__LOAD(&c->reset_gen) + 1, memory_order_release);
}

/* RESET. A reset empties a CPU buffer that writers (threads of this process,
 * their signal handlers, writers of a shared file in other processes) may be
 * using at that moment, and readers too. It writes none of the fields a writer
 * uses on entering or leaving, whatever it finds there: committing, commits,
 * inflight_ts, slots, owner, dbg_owner (a claim survives), disabled (except
 * its own bit and a corruption disable); it re-initialises the rest only while
 * no writer can be in the pages and no reader holds the lock:
 *
 *   R1  take the reader lock (readers, iterators, statistics, other resets out)
 *   R2  disabled |= RESET_BIT                               (relaxed RMW)
 *   R3  asymmetric barrier [RESET-MB]: a full fence in every writer thread
 *   R4  wait (bounded) until committing == 0                (acquire)
 *   R5  re-initialise: links, page write indices and event counts (their
 *       update counts bumped: an iterator that was on a page sees it reused),
 *       page commits and stamps, tail/commit/reader pages, stamps, counters,
 *       reader state, a corruption disable (atomic stores); last, the reset
 *       generation + 1 (release, [RESET-GEN]: an iterator's overrun base
 *       from before is void)
 *   R6  asymmetric barrier again
 *   R7  disabled &= ~RESET_BIT                              (release RMW)
 *   R8  release the reader lock                             (release)
 *
 * A writer enters with committing = depth, then (signal fence) loads disabled
 * [E]. Model the barrier as a seq_cst fence F in the writer's program order at
 * some point during R3 (the kernel's IPI or context switch: a context
 * synchronising event, all earlier accesses performed before it, none later).
 *   - [E] after F: the load reads R2 or later, so the writer is refused; it
 *     touches disabled_events (atomic), then in ringbuf__end_commit finds the
 *     bit [RESET-W] and skips the commit walk, and leaves (committing back).
 *     Nothing it does is re-initialised by R5.
 *   - [E] before F: its committing store precedes F, so R4 reads it or a later
 *     store: R4 waits for the writer's own store of 0, whose release pairs
 *     with R4's acquire (everything the writer did happens before R5).
 *   - After that store of 0 an outermost writer may set committing back to 1
 *     (ringbuf__commit_fast / ringbuf__end_commit: a nested writer started
 *     meanwhile) and walk again. R4 read the store of 0, so no later store of
 *     the writer precedes F (else R4 would read it or later); the store of 1
 *     comes after F, and so does its check [RESET-W]: it finds the bit, skips
 *     the walk (the nested event is thrown away with the rest).
 * So between R4 and R7 no writer touches the pages, tail, commit or reader
 * page, stamps, entries_d or the counters (other than disabled_events, which
 * a refused writer may still bump: atomic, counted before or after the zero).
 * R4 is bounded (1 s by the monotonic clock): a writer stopped inside an event, or refused
 * writers entering and leaving faster than R4 looks, give RINGBUF_EBUSY with
 * R2 undone and nothing changed (but for one case: an outermost writer that
 * skipped its walk while the bit was set leaves what writers nested in it
 * reserved uncommitted until the CPU's next commit; nothing is lost). After R7 a writer's relaxed load of disabled
 * may read R7 only if it comes after R6's fence in its thread, so its loads of
 * the pages see R5; [RESET-W]'s acquire pairs with R7's release. Readers see
 * R5 through the lock (R8 release, their acquire). */
/* R4's bound: 1 s of the monotonic clock (a safety cap on the looks too,
 * should the clock stand still) */
#define RINGBUF__RESET_WAIT_NS 1000000000u
#define RINGBUF__RESET_WAIT_SPINS 100000000L
RINGBUF_API int ringbuf_reset_cpu(struct ringbuf *rb, unsigned cpu)
{
	struct ringbuf__cpu *c;
	uint64_t deadline = 0;
	long spins = 0;
	int r;
	if (!rb || cpu >= rb->ncpu)
		return RINGBUF_EINVAL;
	c = ringbuf__cpu(rb, cpu);
	if ((r = ringbuf__reader_lock(rb, c)) < 0) /* R1 */
		return r;
	atomic_fetch_or_explicit(&c->disabled, RINGBUF__RESET_BIT, memory_order_relaxed); /* R2 */
	if ((r = ringbuf__reset_barrier(rb)) < 0) /* R3 */
		goto undo;
	/* R4 acquire: pairs with the writer's release store of committing = 0.
	 * Bounded by time, not by a count of yields: on a loaded machine each
	 * sched_yield() can hand the CPU away for a whole time slice, and a
	 * million of them took 46 s (a reset from a signal handler inside the
	 * CPU's own writer, which can never drain). */
	while (atomic_load_explicit(&c->committing, memory_order_acquire) != 0) {
		if (++spins > 64) { /* a few quick looks first: refused writers come and go */
			uint64_t now = ringbuf__clock_mono();
			if (!deadline)
				deadline = now + RINGBUF__RESET_WAIT_NS;
			else if (now >= deadline || spins > RINGBUF__RESET_WAIT_SPINS) {
				r = RINGBUF_EBUSY;
				goto undo;
			}
			ringbuf__yield();
		}
	}
	RINGBUF__RESET_TESTPOINT(rb, cpu, 1);
	ringbuf__reinit_cpu(rb, cpu); /* R5 */
	RINGBUF__RESET_TESTPOINT(rb, cpu, 2);
	if (ringbuf__reset_barrier(rb) < 0) /* R6: it worked at R3; cannot fail now */
		atomic_thread_fence(memory_order_seq_cst);
	atomic_fetch_and_explicit(&c->disabled, ~RINGBUF__RESET_BIT, memory_order_release); /* R7 */
	ringbuf__reader_unlock(c); /* R8 */
	return 0;
undo:
	atomic_fetch_and_explicit(&c->disabled, ~RINGBUF__RESET_BIT, memory_order_relaxed);
	ringbuf__reader_unlock(c);
	return r;
}

RINGBUF_API int ringbuf_reset(struct ringbuf *rb)
{
	unsigned cpu;
	int r;
	if (!rb)
		return RINGBUF_EINVAL;
	for (cpu = 0; cpu < rb->ncpu; cpu++)
		if ((r = ringbuf_reset_cpu(rb, cpu)) < 0)
			return r;
	return 0;
}

/* QUIESCE. Wait for the writers in flight at the call, and for no other,
 * without touching anything a writer uses. A writer V is in flight when its
 * outermost entry (committing = 1) came before the call. Each outermost
 * writer, as it leaves, adds 1 to commits [Q-X] (a release store of n + 1,
 * n the count its last re-check read, after its last walk and its
 * committing = 0); nested entries add RINGBUF__COMMITS_NESTED instead, so
 * exits = the low 32 bits of commits changes only at outermost exits (a
 * nested writer runs while committing != 0, so its load + store cannot undo
 * an outermost one, and its own carries go up, not into the low bits). A
 * signal handler that runs as outermost between V's re-check and V's store
 * (committing is 0 there) leaves with the same store: the count moves once
 * for two exits, and either store is an exit after V's last walk.
 *
 *   Q1  asymmetric barrier ([BARRIER], as for a reset): model it as an
 *       seq_cst fence F in every writer thread at some point during the call
 *   Q2  per CPU: quiet? (ringbuf__quiet: committing == 0 (acquire), then
 *       commit page == tail page and that page's commit (acquire) == its
 *       write index: nothing reserved left uncommitted, [Q-PEND])
 *   Q3  quiet: nothing in flight on that CPU; else x0 = exits (acquire)
 *   Q4  poll until quiet, or exits != x0 (acquire), or the time runs out
 *       (RINGBUF_EBUSY)
 *
 * [Q-PEND] committing == 0 alone does not say V left: ringbuf__commit_fast
 * stores its page commit, then committing = 0, then re-checks commits and
 * walks again if a writer started. A writer nested in V after the page
 * commit and before the store (RINGBUF__TP_COMMIT_FAST_CHECKED)
 * leaves its event to V (depth 2), so V's 0 is stored with that event
 * reserved, complete, and not committed; Q4 once ended on that 0 and the
 * caller missed the nested event (verify/quiesce.c -DNESTED=3 -DOLD_Q4,
 * test_quiesce commit_fast_window). Q2/Q4 therefore also ask the pages: the
 * nested reservation is sequenced before V's release store of 0, which the
 * acquire load read, so the loads after it see the write index moved (or
 * later values); a page commit (acquire) equal to it is a walk after it
 * ([W-commit], release): the event is then visible. A writer that keeps the
 * CPU busy never leaves it quiet for long: for it the exit count serves.
 * [Q-X] replaces an ENTRY count ([Q-W], commits += 1 before committing = 1)
 * that Q4 used to end on: a second handler W running as outermost in V's
 * window (after its 0, before its re-check) entered, and so ended Q4, before
 * its walk committed the first handler's event (verify/quiesce.c -DNESTED=4
 * -DOLD_ENTRY_COUNT; test_quiesce two_handlers_in_the_commit_window). W's
 * exit comes after that walk. The store moved, none was added: the write
 * path costs the same.
 *
 * Why it waits for V: V's committing = 1 precedes F, so Q2 reads it or a
 * mo-later value, and committing != 0 (a later 0 is V's exit, or its
 * commit_fast window: [Q-PEND]); Q3 reads exits after F. Every store of
 * committing between V's entry and V's exit is a depth >= 1 (nesting is a
 * stack), and no outermost exit can happen while committing != 0: the
 * first exit after Q3 is V's own or that of a handler that ran as outermost
 * in V's commit_fast window (committing 0) -- after its own walk, which
 * commits everything reserved before it, V's events and those nested in V
 * included. So Q4 cannot end before V's events and those nested in it are
 * committed ([M3] for quiet, [Q-X] for the count, [Q-PEND] for the window).
 * Why it ends when V left: V's exit store moves the count (or a handler's,
 * in the same window), and Q4 reads it or a later count (coherence), or
 * finds the CPU quiet, unless the time runs out.
 * What it sees: Q4's acquire loads read V's release exit stores ([M3], or
 * [Q-X]: sequenced after V's last walk), or a store sequenced after them
 * (same thread, or after the owner handover): V's page commits happen
 * before whatever the caller reads next. (exits is 32 bits: Q4 would miss a
 * change only if exactly a multiple of 2^32 exits passed between looks.)
 * Why not later writers: Q4 ends at the first quiet look or the first
 * outermost exit after Q3, and V's exit is one: a writer that enters after
 * V left and stalls inside its event is not waited for. One that entered
 * between F and Q3 while the CPU was not quiet may be (x0 may be read after
 * V's exit). A writer killed mid event leaves its CPU never quiet and the
 * count still: RINGBUF_EBUSY at the time limit (a corrupt CPU buffer is
 * skipped). The call promises visibility, not that the writer has returned:
 * after a waiting reader's wake-up check (commit_fast also walks again for
 * that) Q4 may end with V still returning. Without membarrier F is this
 * thread's own fence only: a writer that entered just before the call may
 * then read as not in flight yet (documented). verify/quiesce.c checks Q1-Q4
 * with GenMC under RC11 and IMM: two outermost events with handlers nested,
 * at the entry, in the commit_fast window (one and two handlers) and at the
 * exit count. */
RINGBUF_API int ringbuf_quiesce(struct ringbuf *rb, int timeout_ms)
{
	unsigned cpu;
	uint64_t deadline = 0;
	long spins = 0;
	if (!rb || rb->magic != RINGBUF__MAGIC)
		return RINGBUF_EINVAL;
	if (!ringbuf__writers_barrier(rb)) /* Q1 */
		atomic_thread_fence(memory_order_seq_cst);
	if (timeout_ms > 0)
		deadline = ringbuf__clock_mono() + (uint64_t)timeout_ms * 1000000u;
	for (cpu = 0; cpu < rb->ncpu; cpu++) {
		struct ringbuf__cpu *c = ringbuf__cpu(rb, cpu);
		uint32_t x0;
		if (ringbuf__quiet(rb, cpu, c)) /* Q2 */
			continue;
		x0 = (uint32_t)atomic_load_explicit(&c->commits, memory_order_acquire); /* Q3 */
		RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_QUIESCE_WAIT);
		for (;;) { /* Q4 */
			if (ringbuf__quiet(rb, cpu, c) ||
			    (uint32_t)atomic_load_explicit(&c->commits, memory_order_acquire) != x0)
				break;
			if (timeout_ms == 0 || (timeout_ms > 0 && ringbuf__clock_mono() >= deadline))
				return RINGBUF_EBUSY;
			if (++spins > 64) /* a few quick looks first: events are short */
				ringbuf__yield();
		}
	}
	return 0;
}

/* ==== >>stats =========================================================== */

RINGBUF_API int ringbuf_stats_cpu(struct ringbuf *rb, unsigned cpu, struct ringbuf_stats *st)
{
	struct ringbuf__cpu *c;
	uint64_t committed = 0, bytes = 0, oldest = 0;
	uint32_t i, rp, cp, x, commit;
	if (!rb || cpu >= rb->ncpu || !st)
		return RINGBUF_EINVAL;
	c = ringbuf__cpu(rb, cpu);
	memset(st, 0, sizeof *st);
	for (i = 0; i < RINGBUF_MAX_NEST; i++)
		committed += RINGBUF__LOAD(&c->entries_d[i]);
	st->committed = committed;
	st->overrun = ringbuf__overrun(c);
	st->commit_overrun = RINGBUF__LOAD(&c->commit_overrun);
	st->dropped_events = RINGBUF__LOAD(&c->dropped_events);
	st->read_events = RINGBUF__LOAD(&c->read_events);
	st->pages_touched = RINGBUF__LOAD(&c->pages_touched);
	st->pages_lost = ringbuf__pages_lost(c, false);
	st->pages_read = RINGBUF__LOAD(&c->pages_read);
	st->disabled_events = RINGBUF__LOAD(&c->disabled_events);
	st->rejected_events = RINGBUF__LOAD(&c->rejected_events);
	st->nest_overflow = RINGBUF__LOAD(&c->nest_overflow);
	st->discarded = RINGBUF__LOAD(&c->discarded);
	st->entries = committed - st->overrun - st->read_events;
	if (st->overrun + st->read_events > committed)
		st->entries = 0; /* a snapshot taken while writers ran */

	/* bytes and oldest time stamp: walk reader page, then head .. commit page.
	 * Without the reader lock this is a snapshot; the walk is bounded. */
	if (ringbuf__reader_lock(rb, c) == 0) {
		uint64_t link;
		uint32_t h;
		rp = RINGBUF__LOAD(&c->reader_page);
		cp = atomic_load_explicit(&c->commit_page, memory_order_acquire);
		/* a shared block's indices are checked where loaded (HOSTILE
		 * MEMORY, find_head) */
		commit = rp <= rb->nr_pages ? ringbuf__page_commit(rb, cpu, rp) : 0;
		if (commit > c->read && commit <= rb->bsize) {
			bytes += commit - c->read;
			/* as the kernel: the time stamp of the oldest page */
			oldest = atomic_load_explicit(&ringbuf__dp(rb, cpu, rp)->time_stamp,
						      memory_order_relaxed);
		}
		if (cp != rp && ringbuf__find_head(rb, cpu, c, &h, &link) == 0) {
			x = h;
			for (i = 0; i <= rb->nr_pages; i++) {
				commit = ringbuf__page_commit(rb, cpu, x);
				if (commit && commit <= rb->bsize) {
					if (!oldest)
						oldest = atomic_load_explicit(
							&ringbuf__dp(rb, cpu, x)->time_stamp,
							memory_order_relaxed);
					bytes += commit;
				}
				if (x == cp)
					break;
				x = ringbuf__next_idx(rb, cpu, x);
				if (x > rb->nr_pages)
					break;
			}
		}
		ringbuf__reader_unlock(c);
	}
	st->bytes = bytes;
	st->oldest_event_ts = oldest ? ringbuf_ts_to_ns(rb, oldest) : 0;
	return 0;
}

RINGBUF_API int ringbuf_stats(struct ringbuf *rb, struct ringbuf_stats *st)
{
	struct ringbuf_stats one;
	unsigned cpu;
	if (!rb || !st)
		return RINGBUF_EINVAL;
	memset(st, 0, sizeof *st);
	for (cpu = 0; cpu < rb->ncpu; cpu++) {
		ringbuf_stats_cpu(rb, cpu, &one);
		st->entries += one.entries;
		st->committed += one.committed;
		st->overrun += one.overrun;
		st->commit_overrun += one.commit_overrun;
		st->dropped_events += one.dropped_events;
		st->read_events += one.read_events;
		st->bytes += one.bytes;
		if (one.oldest_event_ts && (!st->oldest_event_ts || one.oldest_event_ts < st->oldest_event_ts))
			st->oldest_event_ts = one.oldest_event_ts;
		st->pages_touched += one.pages_touched;
		st->pages_lost += one.pages_lost;
		st->pages_read += one.pages_read;
		st->disabled_events += one.disabled_events;
		st->rejected_events += one.rejected_events;
		st->nest_overflow += one.nest_overflow;
		st->discarded += one.discarded;
	}
	st->unmapped = atomic_load_explicit(&ringbuf__sh(rb)->unmapped, memory_order_relaxed);
	return 0;
}

/* ==== >>contexts: per-thread and guarded per-CPU buffers =============== *
 *
 * Per-thread state lives in initial-exec TLS (no allocation, no lazy TLS
 * setup: safe in a signal handler, even for a thread's first event), one entry
 * per ring buffer the thread writes to (4 at most). An entry's fields are 0
 * when unused, so a handler that interrupts the thread while it claims an
 * entry finds a consistent one.
 *
 * Guarded per-CPU (RINGBUF_CPU_CURRENT), for one event of the outermost writer:
 *   G1  pick the CPU's buffer x (rseq cpu id, else sched_getcpu)
 *   G2  CAS owner[x] 0 -> id (acq_rel: acquire pairs with G5 of the previous
 *       owner; release: see THE OWNER WORD below); owner == id already means
 *       we interrupted our own G2..G3: nest. In a per-CPU block with the
 *       sequence: the restartable sequence S1-S5 on CPU x (PER-CPU BLOCKS)
 *   G3  TLS: owned = x, depth = 1, "acquired at depth 1"
 *   ... reserve / commit on x (a handler on this thread nests on x: depth 2..)
 *   G4  TLS: depth 0, owned none (first: a handler after G4 takes a new one)
 *   G5  store owner[x] = 0 (release: our events before the next owner's)
 * A thread that finds owner[x] held by another thread tries the other
 * buffers (in a per-CPU block: the shared ones), then drops the event
 * (counted in `unmapped`); an owner that no
 * longer exists (it died mid-event) is taken over after recovering the buffer
 * (judged only when a full scan is due: F1, F3 below; a drop does not pay a
 * system call).
 * (G4 stores back the PENDING bit of the state it interrupted, see F4a.)
 * INLINE (>>inline, ringbuf__current_reserve and ringbuf__commit_inline): the
 * outermost event's G1, G2 and G5 run in the caller, with the thread's state
 * in the [TCUR] slot of >>inline (one 16-byte thread-local word pair, at a
 * fixed offset from the thread pointer), not in the entry's cur: the reserve
 * and the commit touch no entry (rb_current_16 +5.0 ns over an explicit
 * index through the entry, +3.1 through the slot: Intel Xeon VM, alternating
 * runs). The reserve:
 *   K  the slot ARMED for rb (key | 1; set out of line, below), read with
 *      our owner id in one load; else out of line
 *   G1 rseq's CPU id b < cpu_bufs; G2 the same CAS (or sequence) on that
 *      word only; then the buffer's outermost writer only: committing == 0
 *      (else G5 and out of line: inside an event of the buffer's explicit
 *      index, the event nests out of line)
 *   entry  committing = 1 (the reserve's own)
 *   J1 the slot's word := key | w (BUSY: w the buffer's claim word) and
 *      its me := the one K read, in one store
 *   the reservation; refused or failed: J0, then committing back to 0,
 *      then G5
 * The commit: the slot BUSY for rb and committing == 1 (the held event,
 * not one nested in it): J0 (the slot ARMED), the commit, G5; anything else
 * out of line. While the slot is BUSY, the out-of-line reserve, commit and
 * discard of RINGBUF_CPU_CURRENT in rb go to buffer w by its index (nested:
 * committing > 1; a discard that finds committing == 1 is the held event's:
 * J0, the discard, G5), and ringbuf_thread_cpu names w; a
 * RINGBUF_CPU_THREAD event of a thread without a claim nests there too, as
 * in an out-of-line event (THREAD FALLBACK's nesting through cur). Under
 * RINGBUF_DEBUG the end checks the event's pointer before J0, as
 * ringbuf__held_end does. Why committing
 * decides: J1 comes after the entry and J0 before committing goes back to
 * 0, so from J1 to J0 the held event is the buffer's outermost writer and
 * every other event on it is a handler's, nested (committing > 1); without
 * that, a handler's event taking the buffer before the entry would be its
 * outermost, and its commit would give the held word back (test point
 * CURRENT_ENTERED cuts in there). Windows, as out of line: a handler
 * between G2 and J1 finds the slot ARMED and the word ours: its inline
 * take fails, and out of line it nests (took = false); from J1 to J0 it
 * nests on w through the slot; from J0 to G5 it finds the slot ARMED and
 * the word ours again: out of line, nested (took = false).
 * The out-of-line path keeps the slot out of the way of its events: an
 * event at depth 1 (held_reserve's G3) first marks the slot OUT (key | 2,
 * then our owner id in me),
 * so that the inline path does not run while it is in flight (a handler's
 * event must nest in it, through cur, and not take the buffer of the CPU
 * the thread runs on now: test_contexts,
 * current_mode_signal_handler_nests_in_the_interrupted_events_buffer), and
 * its G4 arms the slot after cur's store (key | 1):
 * the thread's next event is inline. An event that found the slot OUT or
 * BUSY leaves it alone (TCUR_OUT cuts in after OUT's word, before its me;
 * TCUR_G4 after G4, before ARM:
 * test_current_steps, nested_writer_in_the_out_of_line_event_at_out_and_g4).
 * (The tests' *_outline variants build on a copy of this header without
 * the slot, whose inline CURRENT paths call the out-of-line ones:
 * tests/variants/current_outline.patch.) Test points (RINGBUF_TESTING only)
 * mark the inline windows: CURRENT_TAKEN (G2 done, the entry not),
 * CURRENT_ENTERED (the entry done, J1 not), CURRENT_HELD (J1 done, the
 * event not reserved), CURRENT_RESERVED (reserved), CURRENT_RELEASED (the
 * commit's J0 done, its commit not), CURRENT_UNHELD (the commit done, G5
 * not), CURRENT_UNDONE (a failed reserve's J0 and exit done, G5 not);
 * tests/contexts/test_current_steps.c runs a nested writer and another
 * thread at each, a reset and a quiesce at the ones outside the event.
 * RINGBUF_CPU_THREAD claims (PERSIST) take the word the same way and keep it
 * until ringbuf_thread_release / thread exit (RELEASING marks a give-back in
 * progress, so that a handler of ours can take it back). A claim whose buffer
 * is inside an event is never given back (a thread exiting mid-event leaves a
 * dead owner's word: taken over and repaired, not handed out as free).
 *
 * THREAD FALLBACK: RINGBUF_CPU_THREAD for a thread that holds no claim (more
 * threads than buffers). The buffers are split: claims take 0 .. lim-1, the
 * last `thread_shared` (ringbuf_thread_shared) are never claimed and are
 * taken for one event at a time. Per event, out of line:
 *   F1  full scan due? load release_gen (acquire, pairs with F6) and compare
 *       with the value saved at the last miss; else count the thread's
 *       backoff down (TLS, relaxed: a handler racing it only moves the next
 *       scan by an event). Due: first event, the generation moved, or the
 *       backoff ran out.
 *   F2  claim: ringbuf__take over 0 .. lim-1 with our id | PERSIST: a free
 *       word by CAS 0 -> id (acq_rel, as G2); only when due, the owners are
 *       judged (ringbuf__owner_dead: kill(tid, 0) per owner) and a dead one
 *       taken over, and a dead owner in the shared buffers is taken over,
 *       repaired and given back (store 0, release). Found: the thread's claim
 *       from then on (the inline fast path), backoff cleared. The judging
 *       pass (after a pass without it found nothing) runs with cur's
 *       SCANNING bit set (TLS store + signal fence before, cleared after):
 *       a handler's mapped event meanwhile is dropped (counted), since it
 *       would find a word we just took over ours and write into the buffer
 *       being repaired. RINGBUF_CPU_CURRENT judges only on the same due
 *       scans, with the same bit (after a pass without judging failed; in
 *       a per-CPU block also when its CPU's buffer was held and it took a
 *       shared one: [PC-SCAN]).
 *   F3  a due scan that found nothing: save the generation read at F1 (read
 *       before the scan: a release during it moves the generation again)
 *       and double the backoff (16 .. RINGBUF_THREAD_RESCAN events). So
 *       kill() runs at most once per owner per scan, and scans are at most
 *       log2(events) + events / RINGBUF_THREAD_RESCAN + releases: never per
 *       event.
 *   F4a no shared buffer: the event is dropped (counted in `unmapped`).
 *       Else cur := PENDING (TLS, one store + signal fence): from here to G4
 *       no claim is made on this thread; a handler that interrupts F4-F5
 *       goes straight to F4b (its G4 restores PENDING), because a claim made
 *       by a handler would send our commit (which looks at the claim first)
 *       to its buffer. A handler that cut in before F4a may have claimed
 *       (a claim given back after our pass): after F4a the claim is looked
 *       at again, and a claim found takes the event (F4a undone; test point
 *       FALLBACK_UNCLAIMED, tests/contexts/test_claim_before_shared.c).
 *   F4b = G2 on the shared buffers, from one picked by our tid: CAS 0 -> id
 *       (no PERSIST; acq_rel: its acquire reads the previous holder's G5
 *       release, so that holder's events happen-before ours). A word that
 *       is already our id: a handler that interrupted our own F4b..F5
 *       nests (took = false). Every shared word held at that instant: undo
 *       F4a, drop the event (counted in `unmapped`). No system call.
 *   F5  = G3 .. G5 of RINGBUF_CPU_CURRENT: cur := (buffer, depth 1, took);
 *       the event; handlers nest on the buffer through cur's depth; at the
 *       outermost commit/discard G4 restores cur's PENDING bit (0 for the
 *       thread itself) and G5 stores the word 0 (release).
 *   F6  ringbuf_thread_release (also at thread exit), ringbuf_thread_shared
 *       and the fork child bump release_gen (fetch_add, release) after the
 *       word is 0: a thread whose F1 reads the new value (acquire) sees that
 *       0 (or a later value) at F2. release_gen is a hint only: a missed or
 *       early bump costs a scan or delays a claim, never ownership, which
 *       is decided by the CAS on the owner word alone. Dead owners that
 *       never released (no ringbuf_thread_init) are found at the next due
 *       scan (at most RINGBUF_THREAD_RESCAN events of each such thread).
 * The owner word protocol is unchanged: a shared take is exactly a
 * RINGBUF_CPU_CURRENT hold (verify/owner_claim.c: -DSHARED adds a claimer
 * that gives its claim back, F6, and a shared writer that takes the word).
 *
 * THE OWNER WORD (64 bits): token << 32 | PERSIST | RELEASING | tid. The tid
 * alone is not an identity: the kernel reuses tids, and a thread given a dead
 * owner's tid took that owner's word for its own (its events nested under the
 * dead event, never committed). The token is drawn per thread from the
 * block's counter (owner_seq) at the thread's first take there, kept in its
 * TLS entry: tid + token names one thread of one lifetime (up to 2^32 draws).
 *   "ours"  the whole word (tid and token) equals our id: only we store it.
 *   "dead"  ringbuf__owner_dead: the tid is ours with another token (a tid
 *           belongs to one live thread at a time: its writer has ended), or
 *           kill(tid, 0) fails with ESRCH. A live owner is never judged
 *           dead; a dead one whose tid another thread now has looks alive
 *           until that thread ends or writes here itself (its buffer is
 *           unused meanwhile; writes find other buffers or are counted in
 *           `unmapped`, nothing is lost uncounted).
 *   PID namespaces: a tid means different threads in two namespaces. The
 *           block keeps its creator's namespace (pidns); a process of
 *           another one that opens it for writing sets OWNF_MIXED_NS, and no
 *           owner is judged dead from then on (never a takeover of a live
 *           owner; a dead one's buffer stays taken).
 * C11 argument (verify/owner_claim.c checks it under RC11 and IMM):
 *   - one owner at a time: the word changes only by CAS from a value read
 *     (0, our own RELEASING, or a dead owner's word) or by its owner's G5 /
 *     release CAS; the taker's CAS (acq_rel, its acquire half) reads the
 *     previous owner's G5 (release): its events happen-before ours.
 *   - taking over a dead owner: kill(tid, 0) reads the kernel's thread table;
 *     a thread is in it before its first instruction and leaves it after its
 *     last (exit: a release, in the model). The judge loads the word with
 *     acquire and every CAS that writes a word is acq_rel, so a judge that
 *     reads a word sees the thread table at least as its writer saw it: a
 *     word written by a thread that has since taken a reused tid is never
 *     paired with the table of the tid's previous holder (with acquire-only
 *     CASes the model finds a live owner taken over). ESRCH, or the reuse of
 *     the tid by us, comes after the dead writer's last store: its bytes
 *     happen-before our recovery. The CAS fails if the word changed since it
 *     was judged, and a dead owner's word never comes back (its token).
 *   - [TAKEOVER-HB] that last order is the kernel's (the exit path's
 *     release, the judge's system call), which C11 and ThreadSanitizer do
 *     not see: to them the dead thread's stores and ours are unordered. So
 *     every word of a CPU buffer that the owner writes and a taker or its
 *     repair writes or reads again is an atomic (relaxed where the owner
 *     alone orders it): the slot's page, off and event were plain, and an
 *     independent TSan harness (a thread's first event from its handler,
 *     the thread gone without ringbuf_thread_init, its claim taken over by
 *     a later thread's scan) reported them as a race (issue 22 defect 7;
 *     tests/contexts/test_thread_churn.c under make tsan-ubsan). The page bytes stay
 *     plain: a new owner writes after the dead one's write index, and only a
 *     repair of a thread that died mid-event rewrites the dead one's bytes.
 *     But a third thread reads them: a reader that acquires the new owner's
 *     page commit (release) reads the dead owner's unread events on that
 *     page, and it happens-after them only if the taker does. So the judge
 *     loads committing with acquire after its CAS: a dead owner that was
 *     not inside an event stored committing = 0 last, with release ([M3]),
 *     after its page bytes and commits, and the chain is dead owner ->
 *     taker -> reader in C11 too (a TSan report in about 1 run of 20 of
 *     test_thread_churn's producer/consumer case before: the reader's
 *     ringbuf__parse against the dead thread's put_event;
 *     tests/contexts/test_takeover_hb.c reports it every time). An owner
 *     that died inside an event left committing = 1 (relaxed): its repair
 *     still orders by the kernel alone.
 *
 * PER-CPU BLOCKS: one way to take each word. A word goes from 0 to owned in
 * one of two ways, fixed per word when the block is made: the CAS (G2,
 * F2, F4b) or a restartable sequence. RINGBUF_F_CPU_CURRENT, for
 * ringbuf_create only (private memory: no other process writes it), makes
 * a per-CPU block: buffers 0 .. P-1 (P = rb->cpu_bufs = ncpu - shared)
 * belong to CPUs 0 .. P-1, the last `shared` (ringbuf_config.shared) are
 * shared buffers, and neither changes (ringbuf_thread_shared refuses to).
 *   - RINGBUF_CPU_CURRENT on CPU x < P takes buffer x, and nothing but a
 *     writer of CPU x takes buffer x from 0 (by the sequence: running on x,
 *     which S2 checks; by the CAS: one that read x as its CPU, and may have
 *     migrated since, which the CAS makes harmless). Where the process has
 *     the sequence (x86-64 with glibc's rseq registration, glibc >= 2.35:
 *     rb->rseq; RINGBUF_F_NO_RSEQ keeps the CAS), that writer takes it by
 *     ringbuf__rseq_take, and only so:
 *       S1 rseq_cs := the sequence's descriptor   S2 [start] cpu_id == x
 *       S3 owner[x] == 0   S4 [commit] owner[x] := id   S5 rseq_cs := 0
 *   - a writer whose CPU's buffer is held (its owner was preempted or
 *     migrated mid-event, or died), one whose CPU is >= P, and every
 *     RINGBUF_CPU_THREAD writer (no claims in a per-CPU block: F2 takes
 *     nothing) take a shared buffer for one event by CAS, from one picked
 *     by the tid (ringbuf__percpu_take, F4b), or drop the event (counted
 *     in `unmapped`: with cfg.shared 0, every RINGBUF_CPU_THREAD event, and
 *     every event of a CPU whose buffer is held).
 * Why one owner: the kernel restarts a sequence at its abort handler (which
 * reports "not taken": nothing stored) when its thread is preempted,
 * migrated or signalled between S2 and S4, so the sequences of CPU x never
 * interleave; and no other taker changes owner[x] from 0:
 * ringbuf__owner_take0 runs the sequence for such a word or takes nothing,
 * and its callers ask only for the caller's CPU's buffer or a shared one.
 * Every other change of the word starts from a value that is not 0 (the
 * holder's G5, a dead owner's takeover, which is a CAS from the dead word),
 * so the 0 that S3 reads is still there at S4. S3 is an acquire load and S4
 * a release store on x86-64 (TSO), so for everything above the sequence is
 * G2's acq_rel CAS: S3 reads the previous holder's G5 (release), whose
 * events happen-before ours. Outside C11 (the restart) this is argued, not
 * checked by the compiler's model; verify/percpu_claim.c models the
 * kernel's part as a lock held by each sequence of CPU 0, with a takeover
 * of a dead owner and that taker's G5 from another CPU, under RC11 and IMM,
 * and shows that one CAS taker on a CPU's word (what the gate of stop 28
 * and before allowed, and paid for with a membarrier) gives two owners.
 * Before stop 29 sequences and CASes shared the words of every block of
 * ringbuf_create: a gate per word (in-flight count, a membarrier fence,
 * FENCED/PINNED bits, re-opened after 1024 takes) kept sequences out while
 * a CAS taker was in its window; six ways to take a word in all. Fixing
 * the way per word at creation removed the gate, its fence and its pin.
 * Ordinary blocks (no RINGBUF_F_CPU_CURRENT, files, memfds, caller memory)
 * take every word by CAS, as do per-CPU blocks on other architectures,
 * under ThreadSanitizer (it cannot see the sequence's store) and on
 * qemu-user (no rseq: ENOSYS; glibc leaves __rseq_size 0, sched_getcpu).
 * tests/contexts/test_percpu_claim.c: which blocks claim by sequence; a
 * CPU's writers by sequence against shared takes and takeovers from other
 * CPUs; signal storms and migrations inside the sequence; another thread
 * and a nested writer at each step of G1-G5 of a per-CPU block (the test
 * points CURRENT_*); every sequence restarted: the x86 trap flag raises
 * SIGTRAP after each instruction and the handler nests an event after a
 * different instruction of each outer write (with a wrong signature before
 * the abort handler the kernel kills the test). S5 and the section groups:
 * tests/dlopen (unload, then signals: SIGSEGV without S5) and
 * compile-checks' two-unit C++ link (tests/compile/comdat_*.cpp: the link
 * failed without "?").
 * What it buys (make bench): rb_current_16 (a per-CPU block) against
 * rb_current_cas_16 (RINGBUF_F_NO_RSEQ), claim_rseq against claim_cas.
 */

/* The owner word: token << 32 | PERSIST | RELEASING | tid. */
#define RINGBUF__OWN_PERSIST 0x80000000u   /* a thread's claim (RINGBUF_CPU_THREAD) */
#define RINGBUF__OWN_RELEASING 0x40000000u /* that claim is being given back */
#define RINGBUF__OWN_TID RINGBUF__TID_MASK
#define RINGBUF__OWN_ID(w) ((w) & ~(uint64_t)(RINGBUF__OWN_PERSIST | RINGBUF__OWN_RELEASING))
/* ringbuf__sh(rb)->owner_flags */
#define RINGBUF__OWNF_MIXED_NS 1u /* writers in several PID namespaces: no takeover */

/* struct ringbuf__tctx (>>inline): one entry per buffer the thread writes
 * to. `token` is the thread's owner token in that buffer (0: not drawn yet).
 * `gen` names the buffer's creation (an entry whose generation is no
 * longer registered belongs to a destroyed buffer and is free); `cur` packs
 * the RINGBUF_CPU_CURRENT state so that it changes with one store, atomically
 * with respect to a handler:
 *   bits 0..23 owned buffer + 1 (0: none), 24..31 nesting depth, 32 acquired */
#define RINGBUF__CUR(owned, depth, acq) \
	((uint64_t)(owned) | ((uint64_t)(depth) << 24) | ((uint64_t)(acq) << 32))
/* bit 33: a shared take (THREAD FALLBACK, F4) is between F4a and F5: no claim
 * now; kept by a handler's event through its end (G4 restores it) */
#define RINGBUF__CUR_PENDING ((uint64_t)1 << 33)
/* bit 34: a full scan that may take a dead owner's word over and repair its
 * buffer is running (F2): a handler's mapped event is dropped (counted), as
 * it would otherwise find the word ours and write into the buffer under
 * repair */
#define RINGBUF__CUR_SCANNING ((uint64_t)1 << 34)
/* bit 35: this depth-1 event marked [TCUR]'s slot OUT at G3
 * (ringbuf__tcur_out): its G4 arms it */
#define RINGBUF__CUR_TCUR ((uint64_t)1 << 35)
#define RINGBUF__CUR_OWNED(v) ((uint32_t)((v) & 0xffffffu))
#define RINGBUF__CUR_DEPTH(v) ((uint32_t)(((v) >> 24) & 0xffu))
#define RINGBUF__CUR_ACQ(v) ((uint32_t)(((v) >> 32) & 1u))

#ifndef RINGBUF__TLS_DEFINED_HERE
RINGBUF__TLS_DEF struct ringbuf__tctx ringbuf__tctx[RINGBUF__TCTX];
RINGBUF__TLS_DEF _Atomic(uint64_t) ringbuf__tclaim;
#ifdef RINGBUF__TCUR
RINGBUF__TLS_DEF struct ringbuf__tcur ringbuf__tcur;
#endif
#endif

/* [TCLAIM] K0 */
static void ringbuf__tclaim_forget(void)
{
	RINGBUF__BARRIER();
	atomic_store_explicit(&ringbuf__tclaim, 0, memory_order_relaxed);
	RINGBUF__BARRIER();
}

/* [TCLAIM] K1: the thread's claim word w (not 0) in rb, read from its
 * entry e. K2: a release by a handler of ours between that read and K1
 * (not supported, docs/contexts.md) would leave the word naming a buffer
 * given back, for every later event: the entry is read again, and the word
 * cleared if its claim moved (a release after K2 clears it itself). */
static void ringbuf__tclaim_set(struct ringbuf *rb, struct ringbuf__tctx *e, uint32_t w)
{
	RINGBUF__TESTPOINT(rb, 0, RINGBUF__TP_TCLAIM_FOUND);
	if (rb->tclaim_key) /* key 0: never cached */
		atomic_store_explicit(&ringbuf__tclaim, rb->tclaim_key | w, memory_order_relaxed);
	RINGBUF__BARRIER();
	RINGBUF__TESTPOINT(rb, 0, RINGBUF__TP_TCLAIM_SET);
	if (RINGBUF__UNLIKELY(atomic_load_explicit(&e->claimed, memory_order_relaxed) != w))
		ringbuf__tclaim_forget(); /* K2 */
}

#ifdef RINGBUF__TCUR
/* cpu_off is at least the private header and the shared one (ringbuf__layout) */
_Static_assert(sizeof(struct ringbuf) + sizeof(struct ringbuf__shdr) >= RINGBUF__TCUR_BUSY_MIN,
	       "[TCUR]: a claim word is above every OUT value");
/* [TCUR] OUT, at an out-of-line event's G3: true when stored (the event
 * then stores its owner id in me under it, and its G4 arms,
 * ringbuf__tcur_armed) */
static bool ringbuf__tcur_out(const struct ringbuf *rb)
{
	if (!rb->tclaim_key || (uint32_t)ringbuf__tcur_word() > 1) /* key 0: never cached */
		return false; /* BUSY or OUT */
	ringbuf__tcur_store(&ringbuf__tcur.word, rb->tclaim_key | 2); /* over 0 or ARMED */
	return true;
}

/* [TCUR] ARM, at the G4 of an event that stored OUT: the word is still our
 * OUT (a handler's events leave it so, and me as OUT left it; anything else
 * is left alone) */
static void ringbuf__tcur_armed(const struct ringbuf *rb)
{
	if (ringbuf__tcur_word() != (rb->tclaim_key | 2))
		return;
	ringbuf__tcur_store(&ringbuf__tcur.word, rb->tclaim_key | 1);
}
#endif

/* Live buffers, by creation generation (a thread may hold an entry for a
 * buffer another thread destroyed: the generation alone is never enough to
 * dereference). Also the fork registry, and what ringbuf_destroy looks an
 * address up in before it reads the block (a second destroy finds nothing).
 * No limit: chunks of 64 slots, a new one appended (allocated at creation or
 * open, never in a handler) when all are taken, never freed; readers (signal
 * handlers included) follow `next` with acquire loads, pairing with the
 * release CAS that appends.
 *
 * THREAD EXIT vs DESTROY: a thread that called ringbuf_thread_init releases
 * its claims in its key destructor (ringbuf__thread_exit), which no caller
 * can order with a ringbuf_destroy in another thread, so `pin` does:
 *   X1  exit: gen[i] == its entry's gen, rb = rb[i] (not dereferenced)
 *   X2  pin[i] += 1 (seq_cst RMW)
 *   X3  rb[i] == rb and gen[i] == gen again (seq_cst loads), else skip
 *       ringbuf_thread_release(rb)
 *   X4  pin[i] -= 1 (release RMW)
 *   D1  destroy: rb[i] = NULL, gen[i] = 0 (seq_cst stores)
 *   D2  wait until pin[i] == 0 (seq_cst loads, hence acquire)
 *   D3  unmap or free the block
 * C11: X2 -> X3 and D1 -> D2 are store-then-load on two locations, all
 * seq_cst: in the single total order S either D1's rb store precedes X3's
 * load (X3 reads NULL, or a later registration, never rb as the destroyed
 * handle's: the exit skips) or X3 precedes D1, so X2 precedes D2 in S and
 * D2 reads X2's increment or a later value of pin[i] in its modification
 * order (store buffering is forbidden under seq_cst). D2 then reads 0 only
 * from X4 or an RMW after it, all in X4's release sequence: X4 synchronizes
 * with D2, and every access of the release happens before D3. A handle X3
 * reads at rb[i] is registered, so mapped; the one destroyed in the window
 * waits for X4 (a new buffer that took the slot meanwhile may wait for a
 * pin that was not for it: one release's time). The wait is bounded: the
 * pinned section runs no user code and takes no lock. Test points
 * EXIT_FOUND (X1), EXIT_PINNED (X3), DESTROY_WAIT (D2). A fork child has no
 * thread inside X2-X4 (the forking thread is in fork): it clears the pins. */
#define RINGBUF__NREG 64
struct ringbuf__reg {
	_Atomic(uint64_t) gen[RINGBUF__NREG];
	_Atomic(struct ringbuf *) rb[RINGBUF__NREG];
	_Atomic(uint32_t) pin[RINGBUF__NREG]; /* thread exits inside X2-X4 */
	_Atomic(struct ringbuf__reg *) next;
};
static _Atomic(uint64_t) ringbuf__gen_counter;
/* The high half of this process's generations (0: not chosen yet; a fork
 * child chooses its own): generations are unique across processes, so a
 * block opened RDWR keeps the generation its creator gave it (see
 * ringbuf__fork_register). */
static _Atomic(uint64_t) ringbuf__gen_hi;
static struct ringbuf__reg ringbuf__reg0;
#define RINGBUF__REG_EACH(r) \
	for ((r) = &ringbuf__reg0; (r); (r) = atomic_load_explicit(&(r)->next, memory_order_acquire))

static bool ringbuf__gen_live(uint64_t gen)
{
	struct ringbuf__reg *r;
	unsigned i;
	if (!gen)
		return false;
	RINGBUF__REG_EACH(r)
		for (i = 0; i < RINGBUF__NREG; i++)
			if (atomic_load_explicit(&r->gen[i], memory_order_relaxed) == gen)
				return true;
	return false;
}


#if defined(__linux__) && defined(_GNU_SOURCE)
#include <sched.h> /* sched_getcpu (g++ and clang++ always define _GNU_SOURCE) */
#elif defined(__linux__)
extern int sched_getcpu(void);
#endif

static inline unsigned ringbuf__current_cpu(void);
/* The buffer for the CPU the thread runs on: no division when there are at
 * least as many buffers as CPUs (the common configuration). */
static inline unsigned ringbuf__cpu_buffer(const struct ringbuf *rb)
{
	unsigned id = ringbuf__current_cpu(), n = rb->ncpu;
	return id < n ? id : id % (n ? n : 1); /* n >= 1; the test is for checkers */
}

static inline unsigned ringbuf__current_cpu(void)
{
	int32_t rid = ringbuf__rseq_cpu();
	if (rid >= 0)
		return (unsigned)rid;
#if defined(__linux__)
	{
		int id = sched_getcpu();
		return id >= 0 ? (unsigned)id : 0;
	}
#else
	return 0;
#endif
}

/* ringbuf__tctx_search: the calling thread's entry for rb, looked for in
 * every slot; with `make`, one is taken (a CAS on the thread's own word: a
 * handler on this thread may take one meanwhile). ringbuf__tctx_get below
 * looks at the hint first. */
#ifndef RINGBUF__TLS_DEFINED_HERE
RINGBUF__TLS_DEF unsigned ringbuf__tctx_last; /* the last lookup's entry, its byte offset: a hint */
#endif
/* nonzero while this thread makes a new entry (T1-T3 below; the
 * implementation's own: one per thread of the translation unit) */
static RINGBUF__TLS unsigned ringbuf__tctx_making;

static struct ringbuf__tctx *ringbuf__tctx_search(struct ringbuf *rb, bool make)
{
	uint64_t gen = rb->gen;
	int i;
	for (i = 0; i < RINGBUF__TCTX; i++)
		if (atomic_load_explicit(&ringbuf__tctx[i].gen, memory_order_relaxed) == gen) {
			ringbuf__tctx_last = RINGBUF__TCTX_AT(i);
			return &ringbuf__tctx[i];
		}
	if (!make)
		return NULL;
	/* MAKING AN ENTRY (T0 set `making`, then look again; T1 choose a free
	 * one, T2 take and clear it, T3 put our gen in it). A signal handler of
	 * this thread that cuts in before T0 makes its entry whole before we go
	 * on (a handler runs to its end): T0's second look finds it, and we use
	 * it (without that look we made a second entry for the same buffer: our
	 * event reserved through ours, its commit through the handler's, which
	 * the lookup finds first once the hint points elsewhere -- the event
	 * lost, committing left at 1; test_owners.c,
	 * handler_event_while_the_first_event_makes_the_entry at TCTX_MISSED).
	 * A signal handler of this thread that cuts in anywhere
	 * in T1-T3 and needs a new entry of its own gets none: its event is
	 * dropped, counted in `unmapped` by the caller (under a signal storm,
	 * every signal delivered there: a burst of drops, at a thread's first
	 * event on the buffer only). Were it to make one, it
	 * could take the entry we chose (our T2 CAS then fails and we would
	 * make a second one for the same buffer) or, finding ours half cleared,
	 * take another: two entries of one buffer, the handler's holding a claim,
	 * and our event reserved through ours but committed through the one the
	 * lookup finds first -- another buffer (seen under qemu-s390x: a
	 * thread's first event lost, test_read_tool "missing stream 2 seq 0").
	 * A handler that finds an entry (made before, or by T3 done) uses it. */
	RINGBUF__TESTPOINT(rb, 0, RINGBUF__TP_TCTX_MISSED);
	if (ringbuf__tctx_making)
		return NULL;
	ringbuf__tctx_making = 1; /* T0 */
	RINGBUF__BARRIER();
	for (i = 0; i < RINGBUF__TCTX; i++)
		if (atomic_load_explicit(&ringbuf__tctx[i].gen, memory_order_relaxed) == gen) {
			ringbuf__tctx_last = RINGBUF__TCTX_AT(i);
			RINGBUF__BARRIER();
			ringbuf__tctx_making = 0;
			return &ringbuf__tctx[i];
		}
	for (i = 0; i < RINGBUF__TCTX; i++) {
		struct ringbuf__tctx *e = &ringbuf__tctx[i];
		uint64_t old = atomic_load_explicit(&e->gen, memory_order_relaxed);
		if (old && ringbuf__gen_live(old))
			continue;
		/* free (never used, or its buffer is gone): clear, then take */
		if (atomic_load_explicit(&e->cur, memory_order_relaxed) ||
		    atomic_load_explicit(&e->claimed, memory_order_relaxed) ||
		    atomic_load_explicit(&e->token, memory_order_relaxed) ||
		    atomic_load_explicit(&e->miss_wait, memory_order_relaxed)) {
			if (old == 0)
				continue; /* a handler is setting it up right now */
		}
		RINGBUF__TESTPOINT(rb, 0, RINGBUF__TP_TCTX_CHOSEN);
		if (atomic_compare_exchange_strong_explicit(&e->gen, &old, 0, memory_order_relaxed,
							    memory_order_relaxed)) {
			atomic_store_explicit(&e->cur, 0, memory_order_relaxed);
			atomic_store_explicit(&e->claimed, 0, memory_order_relaxed);
			atomic_store_explicit(&e->token, 0, memory_order_relaxed);
			atomic_store_explicit(&e->miss_gen, 0, memory_order_relaxed);
			atomic_store_explicit(&e->miss_left, 0, memory_order_relaxed);
			atomic_store_explicit(&e->miss_wait, 0, memory_order_relaxed);
			RINGBUF__TESTPOINT(rb, 0, RINGBUF__TP_TCTX_CLEARED);
			old = 0;
			if (atomic_compare_exchange_strong_explicit(&e->gen, &old, gen, memory_order_relaxed,
								    memory_order_relaxed)) {
				ringbuf__tctx_last = RINGBUF__TCTX_AT(i);
				RINGBUF__BARRIER();
				ringbuf__tctx_making = 0;
				return e;
			}
		}
	}
	RINGBUF__BARRIER();
	ringbuf__tctx_making = 0;
	return NULL;
}

/* The calling thread's entry for rb: the last lookup's (its hint), else a
 * search (and, with `make`, a new entry). */
RINGBUF__INLINE struct ringbuf__tctx *ringbuf__tctx_get(struct ringbuf *rb, bool make)
{
	struct ringbuf__tctx *last = ringbuf__tctx_at_last();
	if (RINGBUF__LIKELY(atomic_load_explicit(&last->gen, memory_order_relaxed) == rb->gen))
		return last;
	return ringbuf__tctx_search(rb, make);
}

/* This thread's owner id in rb: its tid and a token drawn from the block's
 * counter the first time it takes a buffer there, so unique among all the
 * threads, of all processes, that ever wrote to this block (2^32 draws before
 * a token repeats): a thread given a dead thread's tid has another token. A
 * handler that draws one first wins; a number lost that way is never used. */
RINGBUF__INLINE uint64_t ringbuf__owner_id(struct ringbuf *rb, struct ringbuf__tctx *e)
{
	uint32_t tok = atomic_load_explicit(&e->token, memory_order_relaxed), zero = 0;
	if (RINGBUF__UNLIKELY(tok == 0)) {
		do
			tok = atomic_fetch_add_explicit(&ringbuf__sh(rb)->owner_seq, 1, memory_order_relaxed) + 1;
		while (tok == 0);
		if (!atomic_compare_exchange_strong_explicit(&e->token, &zero, tok, memory_order_relaxed,
							     memory_order_relaxed))
			tok = zero;
	}
	return (uint64_t)tok << 32 | ringbuf__gettid();
}

/* Is the thread with this id alive (anywhere: a buffer in a shared file is
 * claimed by threads of several processes)? */
#ifdef RINGBUF_TESTING
static _Atomic(uint64_t) ringbuf__kill_calls; /* liveness system calls made */
#endif
static bool ringbuf__thread_alive(uint32_t tid)
{
#if defined(__linux__) && defined(SYS_kill)
	int e = errno;
#ifdef RINGBUF_TESTING
	atomic_fetch_add_explicit(&ringbuf__kill_calls, 1, memory_order_relaxed);
#endif
	long r = syscall(SYS_kill, (long)tid, 0L);
	bool alive = r == 0 || errno != ESRCH;
	errno = e;
	return alive;
#else
	(void)tid;
	return true;
#endif
}

/* Has the owner `cur` (not our id) ended? Its tid names no thread (ESRCH), or
 * names us: a tid belongs to one live thread at a time and our token is not
 * the one in the word, so the thread that wrote it has ended and the kernel
 * gave us its tid. Any other live tid: alive (an owner whose tid was reused by
 * another thread than us looks alive until that thread ends or comes here).
 * Undecidable when the block has writers in several PID namespaces (a tid
 * names different threads there): never dead. */
static bool ringbuf__owner_dead(const struct ringbuf *rb, uint64_t cur, uint64_t own)
{
	uint32_t tid = (uint32_t)cur & RINGBUF__OWN_TID;
	if (atomic_load_explicit(&ringbuf__sh(rb)->owner_flags, memory_order_relaxed) &
	    RINGBUF__OWNF_MIXED_NS)
		return false;
	if (tid == ((uint32_t)own & RINGBUF__OWN_TID))
		return (cur >> 32) != (own >> 32);
	return !ringbuf__thread_alive(tid);
}

/* The PID namespace this process lives in (0: unknown). A block records its
 * creator's; a process of another namespace that opens it for writing marks
 * it RINGBUF__OWNF_MIXED_NS. */
static uint64_t ringbuf__pidns(void)
{
#if defined(__linux__)
	struct stat st;
	if (stat("/proc/self/ns/pid", &st) == 0)
		return (uint64_t)st.st_ino ^ ((uint64_t)st.st_dev << 32);
#endif
	return 0;
}

#ifdef RINGBUF_TESTING
static _Atomic(uint64_t) ringbuf__test_rseq_takes; /* out-of-line takes by sequence */
/* out[0]: words taken by sequence out of line, out[1]: nonzero when rb claims by sequence (rb->rseq) */
RINGBUF_API void ringbuf__test_rseq_counts(const struct ringbuf *rb, uint64_t out[2])
{
	out[0] = atomic_load(&ringbuf__test_rseq_takes);
	out[1] = rb ? rb->rseq : 0;
}
#endif

#ifdef RINGBUF__RSEQ_CLAIM
/* May this process claim by sequence? glibc registered rseq for its threads
 * (__rseq_size: 0 when absent, e.g. qemu-user or the glibc.pthread.rseq=0
 * tunable), at an offset from the thread pointer that rb->rseq can hold
 * (on x86-64 inside the thread's struct pthread, above the pointer). */
static bool ringbuf__rseq_usable(void)
{
	return &__rseq_size && __rseq_size >= 8 && __rseq_offset > 0 && __rseq_offset <= (ptrdiff_t)INT32_MAX &&
	       ringbuf__rseq_cpu() >= 0;
}
#endif

/* Change owner word `w` from 0 to `own`, the only way any taker does (G2 out
 * of line, claims, shared takes: ringbuf__take). One way per word, fixed
 * when the block was made (PER-CPU BLOCKS): a CPU's buffer of a per-CPU
 * block with the sequence (w < cpu_bufs) only by the restartable sequence
 * S1-S5 of a thread running on CPU w (any other thread: not taken); every
 * other word by the CAS (acq_rel: its acquire reads the previous owner's G5,
 * release; THE OWNER WORD). */
RINGBUF__INLINE bool ringbuf__owner_take0(struct ringbuf *rb, unsigned w, uint64_t own)
{
	struct ringbuf__cpu *c = ringbuf__cpu(rb, w);
	uint64_t zero = 0;
#ifdef RINGBUF__RSEQ_CLAIM
	if (rb->rseq && w < rb->cpu_bufs) {
		char *rs = ringbuf__rseq_area(rb->rseq);
		if ((uint32_t)ringbuf__rseq_cpu_at(rs) != w || !ringbuf__rseq_take(rs, c, w, own))
			return false;
#ifdef RINGBUF_TESTING
		atomic_fetch_add_explicit(&ringbuf__test_rseq_takes, 1, memory_order_relaxed);
#endif
		return true;
	}
#endif
	return atomic_compare_exchange_strong_explicit(&c->owner, &zero, own, memory_order_acq_rel,
						       memory_order_relaxed);
}

/* ringbuf__take's second pass (below), out of line: every word was taken
 * and the caller allows the owners to be judged. */
static uint32_t ringbuf__take_dead(struct ringbuf *rb, unsigned base, unsigned cnt, unsigned from, uint64_t own,
				   bool *took)
{
	unsigned i, x;
	/* Everything is taken: an owner that no longer exists (exited with a
	 * claim, or died mid-event) gives its buffer up, repaired. The CAS fails
	 * if the word changed since we judged it (the same word cannot come
	 * back: the token is the dead thread's). */
	for (i = 0, x = from; i < cnt; i++, x = x + 1 < cnt ? x + 1 : 0) {
		struct ringbuf__cpu *c = ringbuf__cpu(rb, base + x);
		/* acquire: pairs with the owner's CAS (acq_rel), see >>contexts */
		uint64_t cur = atomic_load_explicit(&c->owner, memory_order_acquire);
		if (cur && RINGBUF__OWN_ID(cur) != RINGBUF__OWN_ID(own) && ringbuf__owner_dead(rb, cur, own) &&
		    atomic_compare_exchange_strong_explicit(&c->owner, &cur, own, memory_order_acq_rel,
							    memory_order_relaxed)) {
			RINGBUF__TESTPOINT(rb, base + x, RINGBUF__TP_TAKEOVER);
			/* acquire: pairs with the dead owner's last committing = 0
			 * ([M3], release), after its page bytes ([TAKEOVER-HB]) */
			if (atomic_load_explicit(&c->committing, memory_order_acquire))
				ringbuf__recover_cpu(rb, base + x, true);
			*took = true;
			return base + x + 1;
		}
	}
	return 0;
}

/* A start in 0 .. n-1 (n >= 1) picked by v (a tid): the threads that share
 * buffers start their scans spread over them. Two multiplies, not a
 * division: `tid % n` was a 32-bit div on the path of every shared event
 * (its CAS's address waits for it). */
RINGBUF__INLINE unsigned ringbuf__spread(uint32_t v, unsigned n)
{
	return (unsigned)(((uint64_t)(uint32_t)(v * 2654435761u) * n) >> 32);
}

/* Take a buffer for `own` (our owner id, | PERSIST for a thread claim) among
 * buffers base .. base+cnt-1, starting at base + from. Returns index + 1
 * (*took: we set the owner word; false: it was ours already, we interrupted
 * our own taking of it), or 0. `judge`: when every word is taken, look for an
 * owner that died (a system call per owner: only where the caller allows). */
RINGBUF__INLINE uint32_t ringbuf__take(struct ringbuf *rb, unsigned base, unsigned cnt, unsigned from, uint64_t own,
				       bool *took, bool judge)
{
	unsigned i, x;
	for (i = 0, x = from; i < cnt; i++, x = x + 1 < cnt ? x + 1 : 0) {
		struct ringbuf__cpu *c = ringbuf__cpu(rb, base + x);
		uint64_t cur = atomic_load_explicit(&c->owner, memory_order_relaxed);
		if (cur == 0) {
			if (ringbuf__owner_take0(rb, base + x, own)) {
				*took = true;
				return base + x + 1;
			}
			cur = atomic_load_explicit(&c->owner, memory_order_relaxed);
		}
		if (cur == own) {
			*took = false;
			return base + x + 1;
		}
		if (cur == (own | RINGBUF__OWN_RELEASING) &&
		    atomic_compare_exchange_strong_explicit(&c->owner, &cur, own, memory_order_acq_rel,
							    memory_order_relaxed)) {
			/* our own claim, being given back by the code we interrupted:
			 * take it again (its last step is a CAS that then fails) */
			*took = true;
			return base + x + 1;
		}
	}
	return judge ? ringbuf__take_dead(rb, base, cnt, from, own, took) : 0;
}

/* G3 .. reserve, for buffer x - 1 taken at G2 (or F4b): `keep` is the
 * PENDING bit of the state we interrupted, restored at G4. */
RINGBUF__INLINE void *ringbuf__held_reserve(struct ringbuf *rb, struct ringbuf__tctx *e, uint64_t me, uint32_t x,
					    bool took, uint64_t keep, size_t len)
{
	void *p;
	uint64_t t = 0;
#ifdef RINGBUF__TCUR
	/* [TCUR] OUT first: no inline event of ours takes a buffer from here
	 * to G4 (nested events follow this one, through cur) */
	t = ringbuf__tcur_out(rb) ? RINGBUF__CUR_TCUR : 0;
	RINGBUF__TESTPOINT(rb, x - 1, RINGBUF__TP_TCUR_OUT);
	if (t) /* me under OUT (nothing reads it there): G4's ARM is one store */
		ringbuf__tcur_store(&ringbuf__tcur.me, me);
#else
	(void)me;
#endif
	/* G3: one store; a handler before it finds the owner word ours and
	 * nests without taking it (took == false), and leaves cur as it was */
	atomic_store_explicit(&e->cur, RINGBUF__CUR(x, 1, took) | keep | t, memory_order_relaxed);
	RINGBUF__BARRIER();
	p = ringbuf_reserve(rb, x - 1, len);
	if (!p) {
		atomic_store_explicit(&e->cur, keep, memory_order_relaxed); /* G4 */
		RINGBUF__BARRIER();
#ifdef RINGBUF__TCUR
		if (t)
			ringbuf__tcur_armed(rb);
#endif
		if (took) /* G5 */
			atomic_store_explicit(&ringbuf__cpu(rb, x - 1)->owner, 0, memory_order_release);
	}
	return p;
}

/* Nested in our own event in flight (cur's depth > 0): the same buffer. */
static void *ringbuf__nested_reserve(struct ringbuf *rb, struct ringbuf__tctx *e, uint64_t cur, size_t len)
{
	void *p;
	if (RINGBUF__CUR_DEPTH(cur) >= 255)
		return NULL;
	p = ringbuf_reserve(rb, RINGBUF__CUR_OWNED(cur) - 1, len);
	if (p)
		atomic_store_explicit(&e->cur, cur + ((uint64_t)1 << 24), memory_order_relaxed);
	return p;
}

#ifndef RINGBUF_THREAD_RESCAN
#define RINGBUF_THREAD_RESCAN 65536u
#endif
#define RINGBUF__RESCAN_FIRST 16u

/* F1: is a full scan (dead owners judged) due for this thread without a
 * claim? *gen: the release generation, read first (acquire: pairs with the
 * release bump of F6; a scan after it sees the word that was freed, or a
 * later value). */
RINGBUF__INLINE bool ringbuf__rescan_due(struct ringbuf *rb, struct ringbuf__tctx *e, uint32_t *gen)
{
	uint32_t left, wait = atomic_load_explicit(&e->miss_wait, memory_order_relaxed);
	*gen = atomic_load_explicit(&ringbuf__sh(rb)->release_gen, memory_order_acquire);
	if (!wait || *gen != atomic_load_explicit(&e->miss_gen, memory_order_relaxed))
		return true;
	left = atomic_load_explicit(&e->miss_left, memory_order_relaxed);
	if (!left)
		return true;
	/* a handler may race this store: a hint, either value will do */
	atomic_store_explicit(&e->miss_left, left - 1, memory_order_relaxed);
	return false;
}

/* F3: a full scan found nothing: wait twice as long for the next one. */
static void ringbuf__rescan_missed(struct ringbuf__tctx *e, uint32_t gen)
{
	uint32_t wait = atomic_load_explicit(&e->miss_wait, memory_order_relaxed);
	wait = !wait ? RINGBUF__RESCAN_FIRST
	       : wait >= RINGBUF_THREAD_RESCAN / 2 ? RINGBUF_THREAD_RESCAN
						   : 2 * wait;
	atomic_store_explicit(&e->miss_gen, gen, memory_order_relaxed);
	atomic_store_explicit(&e->miss_left, wait, memory_order_relaxed);
	atomic_store_explicit(&e->miss_wait, wait, memory_order_relaxed);
}

/* F2 for the shared buffers (and [PC-SCAN], a per-CPU block's CPU buffers
 * too): a dead owner's word there (a thread that died inside an event, or a
 * claim made before they were kept out) is taken over (a CAS from the dead
 * word: never from 0, so never against a sequence), the buffer repaired,
 * and given back (release). */
static void ringbuf__free_dead(struct ringbuf *rb, unsigned base, unsigned n, uint64_t me)
{
	unsigned x;
	for (x = base; x < n; x++) {
		struct ringbuf__cpu *c = ringbuf__cpu(rb, x);
		/* acquire: as in ringbuf__take's judge */
		uint64_t cur = atomic_load_explicit(&c->owner, memory_order_acquire);
		if (cur && RINGBUF__OWN_ID(cur) != RINGBUF__OWN_ID(me) && ringbuf__owner_dead(rb, cur, me) &&
		    atomic_compare_exchange_strong_explicit(&c->owner, &cur, me, memory_order_acq_rel,
							    memory_order_relaxed)) {
			/* acquire: as in ringbuf__take's judge ([TAKEOVER-HB]) */
			if (atomic_load_explicit(&c->committing, memory_order_acquire))
				ringbuf__recover_cpu(rb, x, true);
			atomic_store_explicit(&c->owner, 0, memory_order_release);
		}
	}
}

/* RINGBUF_CPU_THREAD for a thread without a claim (THREAD FALLBACK). */
RINGBUF__INLINE void *ringbuf__thread_fallback(struct ringbuf *rb, struct ringbuf__tctx *e, uint64_t me, size_t len)
{
	uint64_t cur = atomic_load_explicit(&e->cur, memory_order_relaxed);
	unsigned n = rb->ncpu, sh = atomic_load_explicit(&ringbuf__sh(rb)->thread_shared, memory_order_relaxed), lim,
		 base;
	uint32_t x, gen;
	bool took = false;
	void *p;
#ifdef RINGBUF__TCUR
	/* a handler in our inline RINGBUF_CPU_CURRENT event ([TCUR] BUSY):
	 * nested there, as in an out-of-line one (cur's depth, below) */
	if ((x = ringbuf__tcur_busy(rb)) != 0)
		return ringbuf_reserve(rb, ringbuf__claim_index(rb, x), len);
#endif
	if (RINGBUF__UNLIKELY(cur & RINGBUF__CUR_SCANNING)) {
		/* a handler inside our full scan (F2) */
		atomic_fetch_add_explicit(&ringbuf__sh(rb)->unmapped, 1, memory_order_relaxed);
		return NULL;
	}
	if (RINGBUF__CUR_DEPTH(cur))
		return ringbuf__nested_reserve(rb, e, cur, len); /* a handler in our shared event */
	sh = sh < n ? sh : n;
	base = n - sh;                  /* the shared buffers: base .. n-1 */
	lim = rb->percpu ? 0 : base; /* claims: 0 .. lim-1, none in a per-CPU block */
	if (!(cur & RINGBUF__CUR_PENDING)) {
		/* F1-F3: claim a free buffer (loads and one CAS); judge the
		 * owners (kill) only when a full scan is due */
		bool due = ringbuf__rescan_due(rb, e, &gen);
		uint32_t zero = 0, from = lim ? ringbuf__cpu_buffer(rb) % lim : 0;
		x = lim ? ringbuf__take(rb, 0, lim, from, me | RINGBUF__OWN_PERSIST, &took, false) : 0;
		if (!x && due) {
			/* takeovers possible: handlers' events dropped meanwhile */
			atomic_store_explicit(&e->cur, cur | RINGBUF__CUR_SCANNING, memory_order_relaxed);
			RINGBUF__BARRIER();
			x = lim ? ringbuf__take(rb, 0, lim, from, me | RINGBUF__OWN_PERSIST, &took, true) : 0;
			/* a per-CPU block: its CPUs' words too (a CPU that no
			 * RINGBUF_CPU_CURRENT writer runs on any more) */
			if (sh || rb->percpu)
				ringbuf__free_dead(rb, rb->percpu ? 0 : base, n, me);
			RINGBUF__BARRIER();
			atomic_store_explicit(&e->cur, cur, memory_order_relaxed);
		}
		if (x) {
			uint32_t w = ringbuf__claim_word(rb, x - 1);
			atomic_store_explicit(&e->miss_wait, 0, memory_order_relaxed);
			/* a handler may have claimed one meanwhile: keep the first */
			if (!atomic_compare_exchange_strong_explicit(&e->claimed, &zero, w, memory_order_relaxed,
								     memory_order_relaxed)) {
				if (took && zero != w)
					atomic_store_explicit(&ringbuf__cpu(rb, x - 1)->owner, 0,
							      memory_order_release);
				ringbuf__tclaim_set(rb, e, zero);
				return ringbuf_reserve(rb, ringbuf__claim_index(rb, zero), len);
			}
			ringbuf__tclaim_set(rb, e, w);
			return ringbuf_reserve(rb, x - 1, len);
		}
		if (due)
			ringbuf__rescan_missed(e, gen);
		RINGBUF__TESTPOINT(rb, 0, RINGBUF__TP_FALLBACK_UNCLAIMED);
	}
	if (!sh) {
		atomic_fetch_add_explicit(&ringbuf__sh(rb)->unmapped, 1, memory_order_relaxed);
		return NULL;
	}
	/* F4a: no claim from here to G4 (a handler's event would claim, and
	 * our commit would go to its buffer) */
	if (!(cur & RINGBUF__CUR_PENDING)) {
		uint32_t c;
		atomic_store_explicit(&e->cur, RINGBUF__CUR_PENDING, memory_order_relaxed);
		RINGBUF__BARRIER();
		/* a handler that cut in before F4a may have claimed a buffer
		 * (our claim pass found none, then one was given back): our
		 * commit will look at that claim first, so the event goes there
		 * (a shared event committed through the claim was left in
		 * flight: test_thread_churn, about 1 run in 20) */
		if ((c = atomic_load_explicit(&e->claimed, memory_order_relaxed)) != 0) {
			atomic_store_explicit(&e->cur, cur, memory_order_relaxed); /* F4a undone */
			RINGBUF__BARRIER();
			ringbuf__tclaim_set(rb, e, c);
			return ringbuf_reserve(rb, ringbuf__claim_index(rb, c), len);
		}
	}
	/* F4b = G2 on the shared buffers, from one picked by our tid */
	x = ringbuf__take(rb, base, sh, ringbuf__spread(ringbuf__gettid(), sh), me, &took, false);
	if (!x) {
		atomic_store_explicit(&e->cur, cur, memory_order_relaxed); /* F4a undone */
		atomic_fetch_add_explicit(&ringbuf__sh(rb)->unmapped, 1, memory_order_relaxed);
		return NULL;
	}
	RINGBUF__TESTPOINT(rb, x - 1, RINGBUF__TP_SHARED_TAKEN);
	p = ringbuf__held_reserve(rb, e, me, x, took, cur & RINGBUF__CUR_PENDING, len); /* F5 = G3 .. */
	if (p)
		RINGBUF__TESTPOINT(rb, x - 1, RINGBUF__TP_SHARED_HELD);
	return p;
}

/* G1, G2 out of line: the buffer of the CPU we run on, else (held, or no
 * such buffer) in an ordinary block any free one, in a per-CPU block one of
 * the shared buffers (PER-CPU BLOCKS: never another CPU's, which sequences
 * take), from one picked by our tid. As ringbuf__take. */
static uint32_t ringbuf__percpu_take(struct ringbuf *rb, uint64_t me, bool *took, bool judge)
{
	unsigned n = rb->ncpu, own, sh;
	uint32_t x;
	own = ringbuf__current_cpu();
	if (own < rb->cpu_bufs && (x = ringbuf__take(rb, own, 1, 0, me, took, judge)))
		return x;
	sh = n - rb->cpu_bufs;
	return sh ? ringbuf__take(rb, rb->cpu_bufs, sh, ringbuf__spread(ringbuf__gettid(), sh), me, took, judge) : 0;
}

RINGBUF__INLINE uint32_t ringbuf__current_take(struct ringbuf *rb, uint64_t me, bool *took, bool judge)
{
	if (RINGBUF__UNLIKELY(rb->percpu))
		return ringbuf__percpu_take(rb, me, took, judge);
	return ringbuf__take(rb, 0, rb->ncpu, ringbuf__cpu_buffer(rb), me, took, judge);
}

RINGBUF__INLINE void *ringbuf__map_reserve(struct ringbuf *rb, unsigned mode, size_t len)
{
	struct ringbuf__tctx *e;
	uint32_t x;
	uint64_t cur, me;
	bool took = false;
#ifdef RINGBUF__TCUR
	/* [TCUR] BUSY: nested in the thread's inline event, on its buffer */
	if (mode == RINGBUF_CPU_CURRENT && (x = ringbuf__tcur_busy(rb)) != 0)
		return ringbuf_reserve(rb, ringbuf__claim_index(rb, x), len);
#endif
	e = ringbuf__tctx_get(rb, true);
	if (!e) {
		atomic_fetch_add_explicit(&ringbuf__sh(rb)->unmapped, 1, memory_order_relaxed);
		return NULL;
	}
	me = ringbuf__owner_id(rb, e);
	if (mode == RINGBUF_CPU_THREAD) {
		x = atomic_load_explicit(&e->claimed, memory_order_relaxed);
		if (!x)
			return ringbuf__thread_fallback(rb, e, me, len);
		ringbuf__tclaim_set(rb, e, x);
		return ringbuf_reserve(rb, ringbuf__claim_index(rb, x), len);
	}
	/* RINGBUF_CPU_CURRENT */
	cur = atomic_load_explicit(&e->cur, memory_order_relaxed);
	if (RINGBUF__UNLIKELY(cur & RINGBUF__CUR_SCANNING)) {
		/* a handler inside our full scan (F2) */
		atomic_fetch_add_explicit(&ringbuf__sh(rb)->unmapped, 1, memory_order_relaxed);
		return NULL;
	}
	if (RINGBUF__CUR_DEPTH(cur))
		return ringbuf__nested_reserve(rb, e, cur, len); /* nested in our own event */
	x = ringbuf__current_take(rb, me, &took, false); /* G1, G2 */
	if (RINGBUF__UNLIKELY(rb->percpu && x && x - 1 >= rb->cpu_bufs)) {
		/* [PC-SCAN] a per-CPU block's shared buffer x: our CPU's was
		 * held. On a due scan (F1, F3) its owner and the other CPUs'
		 * are judged, or a CPU's writers would share forever after a
		 * thread died in an event on its buffer (and a buffer of a CPU
		 * nobody writes on would stay unrepaired):
		 *   PC1 SCANNING set (a handler's mapped event meanwhile is
		 *       dropped, counted: F2), x still held;
		 *   PC2 our CPU's word taken if free (the sequence) or taken
		 *       over from a dead owner (a CAS from its word) and
		 *       repaired; the words of the other dead owners taken
		 *       over, repaired and given back (ringbuf__free_dead);
		 *   PC3 our CPU's word taken: x given back (G5, when we took
		 *       it); SCANNING cleared.
		 * A scan counts as a miss either way (F3: kill() at most once
		 * per owner per scan, scans at most log2(events) + events /
		 * RINGBUF_THREAD_RESCAN). Test points PERCPU_SCAN (PC1 done),
		 * PERCPU_SCANNED (PC3's give-back done, SCANNING not cleared). */
		uint32_t gen, o = ringbuf__current_cpu();
		if (o < rb->cpu_bufs && ringbuf__rescan_due(rb, e, &gen)) {
			uint32_t y;
			bool took2 = false;
			atomic_store_explicit(&e->cur, cur | RINGBUF__CUR_SCANNING, memory_order_relaxed); /* PC1 */
			RINGBUF__BARRIER();
			RINGBUF__TESTPOINT(rb, x - 1, RINGBUF__TP_PERCPU_SCAN);
			y = ringbuf__take(rb, o, 1, 0, me, &took2, true); /* PC2 */
			ringbuf__free_dead(rb, 0, rb->ncpu, me);
			if (y) { /* PC3 */
				if (took)
					atomic_store_explicit(&ringbuf__cpu(rb, x - 1)->owner, 0, memory_order_release);
				x = y;
				took = took2;
			}
			RINGBUF__TESTPOINT(rb, x - 1, RINGBUF__TP_PERCPU_SCANNED);
			RINGBUF__BARRIER();
			atomic_store_explicit(&e->cur, cur, memory_order_relaxed);
			ringbuf__rescan_missed(e, gen);
		}
	}
	if (RINGBUF__UNLIKELY(!x)) {
		/* every word held: the owners are judged (kill) only on a due
		 * full scan, as for RINGBUF_CPU_THREAD (F1, F3), never per drop */
		uint32_t gen;
		if (ringbuf__rescan_due(rb, e, &gen)) {
			atomic_store_explicit(&e->cur, cur | RINGBUF__CUR_SCANNING, memory_order_relaxed);
			RINGBUF__BARRIER();
			x = ringbuf__current_take(rb, me, &took, true);
			RINGBUF__BARRIER();
			atomic_store_explicit(&e->cur, cur, memory_order_relaxed);
			if (x)
				atomic_store_explicit(&e->miss_wait, 0, memory_order_relaxed);
			else
				ringbuf__rescan_missed(e, gen);
		}
		if (!x) {
			atomic_fetch_add_explicit(&ringbuf__sh(rb)->unmapped, 1, memory_order_relaxed);
			return NULL;
		}
	}
	return ringbuf__held_reserve(rb, e, me, x, took, cur & RINGBUF__CUR_PENDING, len);
}

/* commit/discard of an event of ours in flight (cur's depth > 0): G4, G5 at
 * the outermost. */
RINGBUF__INLINE void ringbuf__held_end(struct ringbuf *rb, struct ringbuf__tctx *e, uint64_t cur, void *data,
					bool commit)
{
	uint32_t x = RINGBUF__CUR_OWNED(cur);
#ifdef RINGBUF_DEBUG
	if (!ringbuf__check_current(rb, x - 1, ringbuf__cpu(rb, x - 1), data,
				    commit ? "commit: not the current event of this CPU"
					   : "discard: not the current event of this CPU"))
		return; /* reported; the nesting state stays as it is */
	if (commit)
		ringbuf_commit(rb, x - 1, data);
	else
		ringbuf_discard(rb, x - 1, data);
#else
	/* x - 1 is the buffer we took and data was tested by the caller: the
	 * inline commit on that index, without the API's argument tests */
	if (commit)
		ringbuf__commit_index(rb, x - 1, data);
	else
		ringbuf_discard(rb, x - 1, data);
#endif
	if (RINGBUF__CUR_DEPTH(cur) > 1) {
		atomic_store_explicit(&e->cur, cur - ((uint64_t)1 << 24), memory_order_relaxed);
		return;
	}
	/* G4: back to the state we interrupted (its PENDING bit kept) */
	atomic_store_explicit(&e->cur, cur & RINGBUF__CUR_PENDING, memory_order_relaxed);
	RINGBUF__BARRIER();
#ifdef RINGBUF__TCUR
	RINGBUF__TESTPOINT(rb, x - 1, RINGBUF__TP_TCUR_G4);
	if (cur & RINGBUF__CUR_TCUR)
		ringbuf__tcur_armed(rb); /* after cur's 0 */
#endif
	if (RINGBUF__CUR_ACQ(cur)) /* G5 */
		atomic_store_explicit(&ringbuf__cpu(rb, x - 1)->owner, 0, memory_order_release);
}

RINGBUF__INLINE void ringbuf__map_end(struct ringbuf *rb, unsigned mode, void *data, bool commit)
{
	struct ringbuf__tctx *e = ringbuf__tctx_get(rb, false);
	uint32_t x;
	uint64_t cur;
	if (mode == RINGBUF_CPU_THREAD) {
		x = e ? atomic_load_explicit(&e->claimed, memory_order_relaxed) : 0;
		if (x) {
			if (commit)
				ringbuf_commit(rb, ringbuf__claim_index(rb, x), data);
			else
				ringbuf_discard(rb, ringbuf__claim_index(rb, x), data);
			return;
		}
		/* no claim: a shared event (THREAD FALLBACK), or one nested in
		 * the thread's event, as RINGBUF_CPU_CURRENT's are */
	}
#ifdef RINGBUF__TCUR
	if ((x = ringbuf__tcur_busy(rb)) != 0) {
		/* [TCUR] BUSY: the thread's inline event (committing == 1: J0,
		 * the end, G5) or one nested in it, on its buffer */
		unsigned b = ringbuf__claim_index(rb, x);
		struct ringbuf__cpu *c = ringbuf__cpu(rb, b);
		bool held = RINGBUF__LOAD(&c->committing) == 1;
#ifdef RINGBUF_DEBUG
		/* a wrong pointer is reported before anything changes, as
		 * ringbuf__held_end's */
		if (held && !ringbuf__check_current(rb, b, c, data,
						    commit ? "commit: not the current event of this CPU"
							   : "discard: not the current event of this CPU"))
			return;
#endif
		if (held)
			ringbuf__tcur_idle(rb); /* J0 */
		if (commit)
			ringbuf_commit(rb, b, data);
		else
			ringbuf_discard(rb, b, data);
		if (held)
			atomic_store_explicit(&c->owner, 0, memory_order_release); /* G5 */
		return;
	}
#endif
	cur = e ? atomic_load_explicit(&e->cur, memory_order_relaxed) : 0;
	if (!RINGBUF__CUR_DEPTH(cur)) {
		ringbuf__report(mode == RINGBUF_CPU_THREAD ? "commit/discard without a RINGBUF_CPU_THREAD reservation"
							   : "commit/discard without a RINGBUF_CPU_CURRENT reservation",
				0);
		return;
	}
	ringbuf__held_end(rb, e, cur, data, commit);
}

RINGBUF_API int ringbuf_thread_cpu(struct ringbuf *rb)
{
	struct ringbuf__tctx *e = rb ? ringbuf__tctx_get(rb, false) : NULL;
	uint32_t x = e ? atomic_load_explicit(&e->claimed, memory_order_relaxed) : 0;
	uint64_t cur;
	if (x)
		return (int)ringbuf__claim_index(rb, x);
#ifdef RINGBUF__TCUR
	if (rb && (x = ringbuf__tcur_busy(rb)) != 0)
		return (int)ringbuf__claim_index(rb, x); /* the thread's inline event */
#endif
	cur = e ? atomic_load_explicit(&e->cur, memory_order_relaxed) : 0;
	return RINGBUF__CUR_DEPTH(cur) ? (int)RINGBUF__CUR_OWNED(cur) - 1 : -1;
}

RINGBUF_API int ringbuf_thread_shared(struct ringbuf *rb, unsigned n)
{
	if (!rb || n > rb->ncpu)
		return RINGBUF_EINVAL;
	/* a per-CPU block's shared buffers are fixed at creation: a buffer
	 * that a sequence may take is never taken by a CAS (PER-CPU BLOCKS) */
	if (rb->percpu)
		return n == atomic_load_explicit(&ringbuf__sh(rb)->thread_shared, memory_order_relaxed)
			       ? 0
			       : RINGBUF_EINVAL;
	atomic_store_explicit(&ringbuf__sh(rb)->thread_shared, n, memory_order_relaxed);
	/* F6: threads without a claim look again (buffers may be claimable now) */
	atomic_fetch_add_explicit(&ringbuf__sh(rb)->release_gen, 1, memory_order_release);
	return 0;
}

RINGBUF_API void ringbuf_thread_release(struct ringbuf *rb)
{
	struct ringbuf__tctx *e = rb ? ringbuf__tctx_get(rb, false) : NULL;
	uint32_t x;
	uint64_t mine, marked;
	struct ringbuf__cpu *c;
	if (!e || !(x = atomic_load_explicit(&e->claimed, memory_order_relaxed)))
		return;
	c = ringbuf__cpu(rb, ringbuf__claim_index(rb, x));
	/* inside an event on it (a handler of ours, or the thread exiting in
	 * the middle of one): keep it. Given back, the next claimer would take
	 * a free word and nest under an event nobody will commit; kept, the
	 * buffer is ours, or a dead owner's, taken over and repaired. */
	if (RINGBUF__LOAD(&c->committing))
		return;
	mine = ringbuf__owner_id(rb, e) | RINGBUF__OWN_PERSIST;
	marked = mine | RINGBUF__OWN_RELEASING;
	/* 1. mark: no taker (a handler of ours included) treats it as ours now;
	 * 2. forget it; 3. give it back (release: our events before the next
	 * claimer's). A handler between 1 and 2 still writes to it (ours). */
	if (!atomic_compare_exchange_strong_explicit(&c->owner, &mine, marked, memory_order_relaxed,
						     memory_order_relaxed))
		return;
	atomic_compare_exchange_strong_explicit(&e->claimed, &x, 0, memory_order_relaxed,
						memory_order_relaxed);
	RINGBUF__BARRIER();
	RINGBUF__TESTPOINT(rb, 0, RINGBUF__TP_TCLAIM_RELEASED);
	/* K0 before the word goes back: a handler of ours until here may
	 * still write to it through the copy, as through the entry between 1
	 * and 2 */
	ringbuf__tclaim_forget();
	/* fails if a handler of ours took it back between 2 and 3: it stays ours */
	if (atomic_compare_exchange_strong_explicit(&c->owner, &marked, 0, memory_order_release,
						    memory_order_relaxed))
		/* F6: threads without a claim scan again at their next event
		 * (release: the word's 0 before the new generation) */
		atomic_fetch_add_explicit(&ringbuf__sh(rb)->release_gen, 1, memory_order_release);
}

#if defined(__linux__)
#include <pthread.h>
static pthread_key_t ringbuf__exit_key;
static _Atomic(int) ringbuf__exit_key_state; /* 0 none, 1 creating, 2 ready */

static void ringbuf__thread_exit(void *arg)
{
	unsigned i, k;
	struct ringbuf__reg *r;
	(void)arg;
	for (k = 0; k < RINGBUF__TCTX; k++) {
		uint64_t gen = atomic_load_explicit(&ringbuf__tctx[k].gen, memory_order_relaxed);
		if (gen)
			RINGBUF__REG_EACH(r)
				for (i = 0; i < RINGBUF__NREG; i++)
					if (atomic_load(&r->gen[i]) == gen) {
						struct ringbuf *rb = atomic_load(&r->rb[i]);
						if (!rb)
							continue;
						RINGBUF__TESTPOINT(rb, 0, RINGBUF__TP_EXIT_FOUND);
						/* X2, X3 (THREAD EXIT vs DESTROY above) */
						atomic_fetch_add(&r->pin[i], 1);
						if (atomic_load(&r->rb[i]) == rb && atomic_load(&r->gen[i]) == gen) {
							RINGBUF__TESTPOINT(rb, 0, RINGBUF__TP_EXIT_PINNED);
							ringbuf_thread_release(rb);
						}
						/* X4: pairs with D2 */
						atomic_fetch_sub_explicit(&r->pin[i], 1, memory_order_release);
					}
	}
}

RINGBUF_API int ringbuf_thread_init(struct ringbuf *rb)
{
	int st = 0;
	if (!rb)
		return RINGBUF_EINVAL;
	if (atomic_compare_exchange_strong(&ringbuf__exit_key_state, &st, 1)) {
		if (pthread_key_create(&ringbuf__exit_key, ringbuf__thread_exit) != 0) {
			atomic_store(&ringbuf__exit_key_state, 0);
			return RINGBUF_ESYS;
		}
		atomic_store(&ringbuf__exit_key_state, 2);
	}
	while (atomic_load(&ringbuf__exit_key_state) == 1)
		ringbuf__yield();
	if (atomic_load(&ringbuf__exit_key_state) != 2)
		return RINGBUF_ESYS;
	(void)ringbuf__gettid();
	if (!ringbuf__tctx_get(rb, true))
		return RINGBUF_ENOSPC;
	pthread_setspecific(ringbuf__exit_key, (void *)1); /* any non-NULL value runs the destructor */
	return 0;
}

/* fork: the child has one thread. In a private buffer, claims of threads it
 * does not have are released, buffers they left mid-event are repaired, a
 * reader cut in the middle of a page swap is rolled back, and the forking
 * thread's own claims move to its new thread id. A buffer in a shared file
 * belongs to the parent too: left alone, and the child forgets its thread's
 * state there (it claims anew under its own id). */
static _Atomic(int) ringbuf__atfork_state;

static void ringbuf__atfork_child(void)
{
	unsigned i, cpu;
	int k;
	uint32_t parent_tid = ringbuf__tid;
	struct ringbuf__reg *r;
	ringbuf__tid = 0;
	ringbuf__tclaim_forget(); /* K0: claims in shared blocks are dropped below */
#ifdef RINGBUF__TCUR
	ringbuf__tcur_store(&ringbuf__tcur.word, 0); /* [TCUR]: our tid changed */
#endif
	atomic_store(&ringbuf__gen_hi, 0); /* the child's generations are its own */
	RINGBUF__REG_EACH(r)
	for (i = 0; i < RINGBUF__NREG; i++) {
		struct ringbuf *rb = atomic_load(&r->rb[i]);
		atomic_store(&r->pin[i], 0); /* of threads the child does not have */
		if (!rb || atomic_load(&r->gen[i]) != rb->gen)
			continue;
		if (rb->shared) {
			/* a writer of the shared block now: ordered by waiters'
			 * membarrier (the registration is the process's) */
			ringbuf__membarrier_register_shared(rb);
			for (k = 0; k < RINGBUF__TCTX; k++)
				if (atomic_load(&ringbuf__tctx[k].gen) == rb->gen) {
					atomic_store(&ringbuf__tctx[k].cur, 0);
					atomic_store(&ringbuf__tctx[k].claimed, 0);
					atomic_store(&ringbuf__tctx[k].token, 0);
					atomic_store(&ringbuf__tctx[k].miss_wait, 0);
				}
			continue;
		}
		for (cpu = 0; cpu < rb->ncpu; cpu++) {
			struct ringbuf__cpu *c = ringbuf__cpu(rb, cpu);
			uint64_t own = atomic_load(&c->owner), keep = 0;
			/* the claim moves to our new tid, token kept (our entry has it) */
			if ((own & RINGBUF__OWN_PERSIST) && ((uint32_t)own & RINGBUF__OWN_TID) == parent_tid &&
			    parent_tid)
				keep = (own & ~(uint64_t)(RINGBUF__OWN_RELEASING | RINGBUF__OWN_TID)) |
				       ringbuf__gettid();
			atomic_store(&c->owner, keep);
			if (RINGBUF__LOAD(&c->committing))
				ringbuf__recover_cpu(rb, cpu, false); /* its writer is not here */
			if (atomic_load(&c->reader_lock))
				ringbuf__repair_reader(rb, cpu);
			if (atomic_load(&c->disabled) & RINGBUF__RESET_BIT) {
				/* a reset was under way in a thread we do not
				 * have: finish it (it may have re-initialised half) */
				ringbuf__reinit_cpu(rb, cpu);
				atomic_fetch_and(&c->disabled, ~RINGBUF__RESET_BIT);
			}
			atomic_store(&c->reader_lock, 0); /* nor its reader */
		}
		atomic_fetch_add(&ringbuf__sh(rb)->release_gen, 1); /* F6: claims of gone threads released */
	}
	for (k = 0; k < RINGBUF__TCTX; k++)
		atomic_store(&ringbuf__tctx[k].cur, 0);
}

static void ringbuf__atfork_setup(void)
{
	int st = 0;
	if (atomic_compare_exchange_strong(&ringbuf__atfork_state, &st, 1))
		pthread_atfork(NULL, NULL, ringbuf__atfork_child);
}
#else
RINGBUF_API int ringbuf_thread_init(struct ringbuf *rb)
{
	return rb ? 0 : RINGBUF_EINVAL;
}
static void ringbuf__atfork_setup(void) {}
#endif

/* [TCLAIM] a handle's key << 32: 1, 2, ... up to 2^32 - 1, then 0 (never
 * cached) for every later handle: a key is never reused in the process */
static _Atomic(uint64_t) ringbuf__tclaim_keys;
static uint64_t ringbuf__tclaim_key_new(void)
{
	uint64_t k = atomic_fetch_add_explicit(&ringbuf__tclaim_keys, 1, memory_order_relaxed) + 1;
	return k <= UINT32_MAX ? k << 32 : 0;
}

/* A new generation: this process's high half (the pid mixed with the time
 * of the first call, so a reused pid gets another one) and a counter. */
static uint64_t ringbuf__gen_new(void)
{
	uint64_t hi = atomic_load_explicit(&ringbuf__gen_hi, memory_order_relaxed);
	if (!hi) {
		uint64_t x = 0, expect = 0;
#if defined(__linux__)
		/* on Linux only, as getpid: the model checker (verify/, no
		 * __linux__) has no clock_gettime and crashed on the call */
		x = ringbuf__default_clock(NULL) ^ ((uint64_t)(uint32_t)getpid() << 32);
#endif
		x *= 0x9e3779b97f4a7c15ull; /* spread: the high half depends on every bit */
		hi = (x & ~(uint64_t)0xffffffffu) | ((uint64_t)1 << 63);
		if (!atomic_compare_exchange_strong(&ringbuf__gen_hi, &expect, hi))
			hi = expect; /* another thread chose first */
	}
	return hi | (uint32_t)(atomic_fetch_add(&ringbuf__gen_counter, 1) + 1);
}

/* Every buffer gets a generation at creation: per-thread entries name it, the
 * fork handler finds it here. keep (a block opened RDWR or for recovery):
 * a generation already in the block stays, so the writers of other
 * processes, whose thread entries name it, keep their claims (a new one
 * stored in the shared header took them away: their next event claimed
 * another buffer and an event in flight was committed to the wrong one).
 * Fails only when a new chunk cannot be allocated (RINGBUF_ENOMEM). */
static int ringbuf__fork_register_as(struct ringbuf *rb, int keep)
{
	struct ringbuf__reg *r, *last = NULL, *nr;
	unsigned i;
	ringbuf__atfork_setup();
	if (!keep || rb->gen == 0)
		rb->gen = ringbuf__gen_new();
	rb->tclaim_key = ringbuf__tclaim_key_new();
	for (;;) {
		RINGBUF__REG_EACH(r) {
			last = r;
			for (i = 0; i < RINGBUF__NREG; i++) {
				uint64_t g = atomic_load(&r->gen[i]);
				if (g == 0 && atomic_compare_exchange_strong(&r->gen[i], &g, rb->gen)) {
					atomic_store(&r->rb[i], rb);
					return 0;
				}
			}
		}
		/* every slot taken: append a chunk (another thread may have) */
		nr = (struct ringbuf__reg *)RINGBUF_MALLOC(sizeof *nr, NULL);
		if (!nr)
			return RINGBUF_ENOMEM;
		memset(nr, 0, sizeof *nr);
		r = NULL;
		if (!atomic_compare_exchange_strong_explicit(&last->next, &r, nr, memory_order_release,
							     memory_order_relaxed))
			RINGBUF_FREE(nr, NULL);
	}
}

static int ringbuf__fork_register(struct ringbuf *rb)
{
	return ringbuf__fork_register_as(rb, 0);
}

/* Returns whether rb was registered (a live handle); once it returns, no
 * thread exit touches rb (D1, D2 in THREAD EXIT vs DESTROY). */
static int ringbuf__fork_unregister(struct ringbuf *rb)
{
	struct ringbuf__reg *r;
	unsigned i;
	int found = 0;
	/* by address, not by rb->gen: another handle of this process on the
	 * same shared block has the same generation */
	RINGBUF__REG_EACH(r)
		for (i = 0; i < RINGBUF__NREG; i++)
			if (atomic_load(&r->rb[i]) == rb) {
				atomic_store(&r->rb[i], NULL); /* D1 */
				atomic_store(&r->gen[i], 0);
				found = 1;
				if (atomic_load(&r->pin[i])) { /* D2: pairs with X4 */
					RINGBUF__TESTPOINT(rb, 0, RINGBUF__TP_DESTROY_WAIT);
					while (atomic_load(&r->pin[i]))
						ringbuf__yield();
				}
			}
	return found;
}

RINGBUF_API size_t ringbuf_max_event_size(const struct ringbuf *rb)
{
	return rb ? rb->max_event : 0;
}

RINGBUF_API uint64_t ringbuf_time_stamp(const struct ringbuf *rb)
{
	return rb ? ringbuf_ts_to_ns(rb, ringbuf__clock(rb)) : 0;
}

/* ---- the out-of-line write calls: the buffer chosen first ------------------
 * ringbuf_reserve / ringbuf_commit out of line (nested writers, bad arguments,
 * RINGBUF_DEBUG, the mapped modes' uncommon cases) and ringbuf_discard: a
 * mapped mode (RINGBUF_CPU_THREAD, RINGBUF_CPU_CURRENT) finds its buffer here
 * (ringbuf__map_reserve, ringbuf__map_end), which calls the core (>>writer)
 * with that buffer's index; an index goes to the core at once. The core never
 * sees a mapped mode. */
RINGBUF_API void *ringbuf__reserve_slow(struct ringbuf *rb, unsigned cpu, size_t len)
{
	if (rb && (cpu == RINGBUF_CPU_THREAD || cpu == RINGBUF_CPU_CURRENT))
		return ringbuf__map_reserve(rb, cpu, len);
	return ringbuf__reserve_at(rb, cpu, len);
}

/* The mapped commit out of line of ringbuf__commit_slow, so that the nested
 * commits of an explicit index, which pass through it, do not pay the
 * register saves of the shared event's code inlined here (with it inline,
 * rb_signal_nested_16 was 1.2 ns slower; out of line, rb_thread_shared_16
 * 0.3-0.9 ns slower: Intel Xeon VM, alternating runs). */
RINGBUF__NOINLINE void ringbuf__map_commit(struct ringbuf *rb, unsigned cpu, void *data)
{
	ringbuf__map_end(rb, cpu, data, true);
}

RINGBUF_API void ringbuf__commit_slow(struct ringbuf *rb, unsigned cpu, void *data)
{
	if (rb && data && (cpu == RINGBUF_CPU_THREAD || cpu == RINGBUF_CPU_CURRENT))
		ringbuf__map_commit(rb, cpu, data);
	else
		ringbuf__commit_at(rb, cpu, data);
}

RINGBUF_API void ringbuf_discard(struct ringbuf *rb, unsigned cpu, void *data)
{
	if (rb && data && (cpu == RINGBUF_CPU_THREAD || cpu == RINGBUF_CPU_CURRENT))
		ringbuf__map_end(rb, cpu, data, false);
	else
		ringbuf__discard_at(rb, cpu, data);
}

/* ==== >>setup: layout, ringbuf_init_in, the clock of a buffer ============ */



struct ringbuf__geom {
	uint32_t nr_pages, page_size;
	uint64_t shdr_off, cpu_off, bpage_off, data_off, user_off, user_size, total;
};

/* Where everything sits in a block of this geometry. */
/* shared: a block other processes map (a file, a memfd): the shared part of
 * the header at RINGBUF__HDR_PRIV (PRIVATE HEADER) */
static int ringbuf__layout(uint64_t ncpu, uint64_t pages, uint64_t ps, uint64_t user, bool shared,
			   struct ringbuf__geom *g)
{
	uint64_t npg;
	if (ncpu == 0 || ncpu > 65536 || ps < RINGBUF__MIN_PAGE || ps > RINGBUF__MAX_PAGE ||
	    (ps & (ps - 1)) || pages < 2 || pages + 1 > RINGBUF__IDX_MASK || pages > UINT32_MAX / 2 ||
	    user > ((uint64_t)1 << 40))
		return RINGBUF_EINVAL;
	npg = ncpu * (pages + 1);
	if (npg > ((uint64_t)1 << 62) / ps)
		return RINGBUF_EINVAL;
	g->nr_pages = (uint32_t)pages;
	g->page_size = (uint32_t)ps;
	g->shdr_off = shared ? RINGBUF__HDR_PRIV
			     : (sizeof(struct ringbuf) + RINGBUF__CACHELINE - 1) & ~(uint64_t)(RINGBUF__CACHELINE - 1);
	/* sizeof(struct ringbuf__shdr) is a cache-line multiple (its first
	 * member's alignment) */
	g->cpu_off = g->shdr_off + sizeof(struct ringbuf__shdr);
	g->bpage_off = g->cpu_off + ncpu * sizeof(struct ringbuf__cpu);
	/* cpu_off and sizeof(struct ringbuf__cpu) are cache-line multiples */
	g->data_off = g->bpage_off + ncpu * RINGBUF__BP_STRIDE(pages) * sizeof(struct ringbuf__bpage);
	g->data_off = (g->data_off + ps - 1) & ~(ps - 1);
	g->user_off = g->data_off + npg * ps;
	g->user_size = user;
	g->total = g->user_off + ((user + RINGBUF__CACHELINE - 1) & ~(uint64_t)(RINGBUF__CACHELINE - 1));
	if (g->total > SIZE_MAX)
		return RINGBUF_ENOMEM;
	return 0;
}

static int ringbuf__geometry(const struct ringbuf_config *cfg, bool shared, struct ringbuf__geom *g)
{
	size_t ps, per, pages;
	if (!cfg || cfg->ncpu == 0 || cfg->ncpu > 65536)
		return RINGBUF_EINVAL;
	ps = cfg->page_size ? cfg->page_size : 4096;
	if (ps < RINGBUF__MIN_PAGE || ps > RINGBUF__MAX_PAGE || (ps & (ps - 1)))
		return RINGBUF_EINVAL;
	if (cfg->mode != RINGBUF_MODE_OVERWRITE && cfg->mode != RINGBUF_MODE_PRODUCER_CONSUMER)
		return RINGBUF_EINVAL;
	if (cfg->ts_mode != RINGBUF_TS_DELTA && cfg->ts_mode != RINGBUF_TS_ABSOLUTE)
		return RINGBUF_EINVAL;
	if (cfg->flags & ~(unsigned)(RINGBUF_F_ALIGN8 | RINGBUF_F_ZEROED | RINGBUF_F_NO_RSEQ |
				     RINGBUF_F_CPU_CURRENT))
		return RINGBUF_EINVAL;
	if (cfg->shared > cfg->ncpu)
		return RINGBUF_EINVAL;
	if (cfg->clock_name && strlen(cfg->clock_name) >= 16)
		return RINGBUF_EINVAL;
	per = cfg->size_per_cpu ? cfg->size_per_cpu : (size_t)1 << 20;
	pages = per / ps + (per % ps != 0);
	if (pages < 2)
		pages = 2;
	return ringbuf__layout(cfg->ncpu, pages, ps, cfg->user_size, shared, g);
}

RINGBUF_API int ringbuf_size_needed(const struct ringbuf_config *cfg, size_t *size)
{
	struct ringbuf__geom g;
	int r;
	if (!size)
		return RINGBUF_EINVAL;
	if ((r = ringbuf__geometry(cfg, false, &g)) < 0)
		return r;
	*size = (size_t)g.total;
	return 0;
}

static int ringbuf__init_in(void *mem, size_t size, const struct ringbuf_config *cfg, bool shared,
			    struct ringbuf **out);
RINGBUF_API int ringbuf_init_in(void *mem, size_t size, const struct ringbuf_config *cfg,
				struct ringbuf **out)
{
	return ringbuf__init_in(mem, size, cfg, false, out);
}

/* shared: laid out for other processes' mappings (ringbuf_create_file, _shm) */
static int ringbuf__init_in(void *mem, size_t size, const struct ringbuf_config *cfg, bool shared,
			    struct ringbuf **out)
{
	struct ringbuf__geom g;
	struct ringbuf *rb;
	unsigned cpu;
	bool zeroed;
	int r;
	if (!mem || !out)
		return RINGBUF_EINVAL;
	if ((r = ringbuf__geometry(cfg, shared, &g)) < 0)
		return r;
	if (cfg->flags & RINGBUF_F_CPU_CURRENT)
		return RINGBUF_EINVAL; /* ringbuf_create's blocks only: private memory */
	if ((uintptr_t)mem % RINGBUF__CACHELINE)
		return RINGBUF_EALIGN;
	if (size < g.total)
		return RINGBUF_ENOMEM;
	rb = (struct ringbuf *)mem;
	/* the fields, not the private part's pad: never written, it stays a
	 * hole of a file and unallocated memory */
	memset(rb, 0, sizeof *rb);
	memset((char *)rb + g.shdr_off, 0, sizeof(struct ringbuf__shdr));
	rb->cpu_off = g.cpu_off; /* ringbuf__sh */
	rb->version = RINGBUF__LAYOUT_VERSION;
	rb->byte_order = RINGBUF__BYTE_ORDER;
	rb->long_size = (uint32_t)sizeof(long);
	rb->clock_kind = ringbuf__clock_kind_of(cfg->clock);
	strcpy(rb->clock_name, cfg->clock_name                        ? cfg->clock_name
			       : rb->clock_kind == RINGBUF__CLK_TSC  ? "x86-tsc"
			       : rb->clock_kind == RINGBUF__CLK_MONO ? "mono"
								     : "unknown");
	if (rb->clock_kind == RINGBUF__CLK_TSC)
		ringbuf__tsc_calibrate(rb);
	rb->user_off = g.user_off;
	rb->user_size = g.user_size;
	zeroed = (cfg->flags & RINGBUF_F_ZEROED) != 0;
	if (!zeroed)
		memset((char *)rb + g.user_off, 0, (size_t)(g.total - g.user_off));
	rb->ncpu = cfg->ncpu;
	rb->cpu_bufs = cfg->ncpu;
	rb->nr_pages = g.nr_pages;
	rb->page_size = g.page_size;
	for (rb->page_shift = 0; (1u << rb->page_shift) < g.page_size; rb->page_shift++)
		;
	rb->bsize = ringbuf__data_size(g.page_size, cfg->flags);
	rb->flags = cfg->flags & RINGBUF_F_ALIGN8; /* ZEROED is about this call only */
	rb->ts_mode = (uint32_t)cfg->ts_mode;
	/* the largest event must fit an empty page with its header and array[0] */
	rb->max_event = rb->bsize - 8;
	rb->inline_max = ringbuf__inline_max(rb);
	rb->total_size = g.total;
	rb->cpu_off = g.cpu_off;
	rb->bpage_off = g.bpage_off;
	rb->data_off = g.data_off;
	rb->clock = cfg->clock ? cfg->clock : ringbuf__default_clock;
	rb->clock_ctx = cfg->clock_ctx;
	atomic_init(&ringbuf__sh(rb)->record_disabled, 0);
	atomic_init(&ringbuf__sh(rb)->mode, cfg->mode);
	atomic_init(&ringbuf__sh(rb)->thread_shared, cfg->shared);
	ringbuf__sh(rb)->pidns = ringbuf__pidns();
	for (cpu = 0; cpu < cfg->ncpu; cpu++)
		ringbuf__init_cpu(rb, cpu, zeroed);
	ringbuf__membarrier_register();
	/* the magic last: a block is valid only once it is complete (a file
	 * whose creator died half way reads as foreign, not as corrupt) */
	atomic_thread_fence(memory_order_release);
	rb->magic = RINGBUF__MAGIC;
	if ((r = ringbuf__fork_register(rb)) < 0) {
		rb->magic = 0;
		return r;
	}
	*out = rb;
	return 0;
}

RINGBUF_API void *ringbuf_user_area(struct ringbuf *rb, size_t *size)
{
	if (!rb) {
		if (size)
			*size = 0;
		return NULL;
	}
	if (size)
		*size = (size_t)rb->user_size;
	return rb->user_size ? (char *)rb + rb->user_off : NULL;
}

RINGBUF_API const char *ringbuf_clock_name(const struct ringbuf *rb)
{
	return rb ? rb->clock_name : "";
}

/* ---- clocks of shared blocks -------------------------------------------
 * CLOCKS OF SHARED BLOCKS. A file or memfd block (owned 2) is the same
 * memory in every process that maps it, but a user clock's function and
 * context are addresses in one process: they cannot live in the block (an
 * RDWR open used to store its own process's default clock there, so the
 * creator's writers switched clocks mid-trace, or called an address of
 * another program). They live here, per process, keyed by the mapping's
 * address (a process that maps a block twice has two keys). A process that
 * set no clock for the block (one that opened another process's block and did
 * not call ringbuf_set_clock) reads CLOCK_MONOTONIC: set the clock in each
 * process that writes. Private buffers keep theirs in the handle.
 *   K1 set: the slot keyed rb, else a free one claimed by CAS NULL ->
 *      CLAIMED (relaxed: the claim orders nothing; no lookup matches it, so
 *      no K2 reads the slot's old fn and ctx), then fn and ctx, then the key
 *      rb stored with release (pairs with K2's acquire).
 *   K2 writer: the key that equals rb loaded with acquire, then fn and ctx.
 *   K3 destroy: key NULL (release).
 * A slot's fn and ctx change only at K1/K3 for its key, which the API allows
 * only while no writer of that mapping runs in this process (set the clock
 * before writing; destroy after the last writer): K2 never reads them torn.
 * Another thread's K1 for another block writes another slot. */
#define RINGBUF__NCLOCKS 64
#define RINGBUF__CLOCK_CLAIMED ((const struct ringbuf *)(uintptr_t)1) /* K1, filling in */
static struct {
	_Atomic(const struct ringbuf *) rb;
	_Atomic(ringbuf_clock_fn) fn; /* relaxed atomics: the order comes from rb */
	_Atomic(void *) ctx;
} ringbuf__clocks[RINGBUF__NCLOCKS];

static int ringbuf__clock_slot(const struct ringbuf *rb)
{
	int i;
	for (i = 0; i < RINGBUF__NCLOCKS; i++)
		if (atomic_load_explicit(&ringbuf__clocks[i].rb, memory_order_acquire) == rb) /* K2 */
			return i;
	return -1;
}

/* [K1] RINGBUF_ENOMEM when 64 shared blocks of this process have a user clock */
static int ringbuf__clock_set_shared(const struct ringbuf *rb, ringbuf_clock_fn fn, void *ctx)
{
	int i = ringbuf__clock_slot(rb);
	if (i < 0) {
		for (i = 0; i < RINGBUF__NCLOCKS; i++) {
			const struct ringbuf *none = NULL;
			if (atomic_compare_exchange_strong_explicit(&ringbuf__clocks[i].rb, &none,
								    RINGBUF__CLOCK_CLAIMED, memory_order_relaxed,
								    memory_order_relaxed))
				break;
		}
		if (i == RINGBUF__NCLOCKS)
			return RINGBUF_ENOMEM;
	}
	atomic_store_explicit(&ringbuf__clocks[i].fn, fn, memory_order_relaxed);
	atomic_store_explicit(&ringbuf__clocks[i].ctx, ctx, memory_order_relaxed);
	atomic_store_explicit(&ringbuf__clocks[i].rb, rb, memory_order_release);
	return 0;
}

static uint64_t ringbuf__clock_shared_fn(void *ctx);
/* A new shared block: its user clock (cfg) becomes this process's, and the
 * block keeps no address of ours (rb->clock is in our private copy of the
 * header: the lookup below, ringbuf__clock_shared). */
static int ringbuf__clock_adopt_shared(struct ringbuf *rb, const struct ringbuf_config *cfg)
{
	rb->clock = ringbuf__clock_shared_fn;
	rb->clock_ctx = rb;
	if (rb->clock_kind != RINGBUF__CLK_USER)
		return 0;
	return ringbuf__clock_set_shared(rb, cfg->clock, cfg->clock_ctx);
}

/* [K3] */
static void ringbuf__clock_unset_shared(const struct ringbuf *rb)
{
	int i = ringbuf__clock_slot(rb);
	if (i >= 0)
		atomic_store_explicit(&ringbuf__clocks[i].rb, NULL, memory_order_release);
}

RINGBUF_API uint64_t ringbuf__clock_shared(const struct ringbuf *rb)
{
	int i = ringbuf__clock_slot(rb); /* [K2] */
	if (i < 0)
		return ringbuf__clock_mono();
	return atomic_load_explicit(&ringbuf__clocks[i].fn, memory_order_relaxed)(
		atomic_load_explicit(&ringbuf__clocks[i].ctx, memory_order_relaxed));
}

/* A shared block's rb->clock, with rb->clock_ctx = rb (this process's copy
 * of the header: PRIVATE HEADER): the writers' ringbuf__clock calls it as it
 * calls a private buffer's user clock, no test of `owned` on the way. */
static uint64_t ringbuf__clock_shared_fn(void *ctx)
{
	return ringbuf__clock_shared((const struct ringbuf *)ctx);
}

RINGBUF_API int ringbuf_set_clock(struct ringbuf *rb, ringbuf_clock_fn clock, void *ctx)
{
	uint32_t kind;
	if (!rb)
		return RINGBUF_EINVAL;
	kind = ringbuf__clock_kind_of(clock);
	/* a shared block's clock fields are each process's copy (PRIVATE
	 * HEADER): the others keep the unit they saw at their open, so a
	 * change to or from TSC cycles, which the others would convert
	 * wrongly, is refused (changes nothing) */
	if (rb->shared && kind != rb->clock_kind && (kind == RINGBUF__CLK_TSC || rb->clock_kind == RINGBUF__CLK_TSC))
		return RINGBUF_EINVAL;
	if (rb->owned == 2) { /* this process's, not the block's */
		int r;
		if (kind != RINGBUF__CLK_USER)
			ringbuf__clock_unset_shared(rb);
		else if ((r = ringbuf__clock_set_shared(rb, clock, ctx)) < 0)
			return r;
	} else {
		rb->clock_ctx = ctx;
		rb->clock = clock ? clock : ringbuf__default_clock;
	}
	if (kind != rb->clock_kind) {
		/* the block says what its stamps are: name and (TSC) ratio */
		if (kind == RINGBUF__CLK_TSC)
			ringbuf__tsc_calibrate(rb);
		strcpy(rb->clock_name, kind == RINGBUF__CLK_TSC    ? "x86-tsc"
				       : kind == RINGBUF__CLK_MONO ? "mono"
								   : "unknown");
		rb->clock_kind = kind;
	}
	return 0;
}

/* ==== >>file: file-backed blocks, validation, crash recovery ============ */

static void ringbuf__file_unmap(struct ringbuf *rb);

/* Everything a reader trusts in a block that came from outside: the header
 * against the geometry it claims, and each per-CPU index and link. */
#define RINGBUF__VALIDATE_TRIES 64 /* V3: walks of the ring before its flags go unchecked */
/* Pages of a block's file that are holes (never written, so they read as
 * zeros: an empty page) need not be read to be validated, and must not be:
 * reading a hole of a tmpfs file or memfd through a shared mapping allocates
 * it, so opening a 64 MiB buffer that a writer has barely used made all
 * 64 MiB resident (ringbuf-record opens every buffer of a traced tree).
 * The extent last asked about (SEEK_DATA / SEEK_HOLE) is cached: pages are
 * checked in file order, so a fresh file costs a few lseek calls. A page
 * filled after the question is read as usual (the writer made it resident);
 * one that is data is always read. fd < 0: no file, read every page. */
struct ringbuf__holes {
	int fd;
	int64_t lo, hi; /* cached extent [lo, hi) */
	int hole;       /* ... is a hole (1), data (0); -1 nothing cached */
};

/* Linux's values (<unistd.h> names them only with _GNU_SOURCE) */
#if defined(__linux__)
#define RINGBUF__SEEK_DATA 3
#define RINGBUF__SEEK_HOLE 4
#endif

static int ringbuf__is_hole(struct ringbuf__holes *h, int64_t off, int64_t len)
{
#if defined(__linux__)
	int64_t d, e;
	if (!h || h->fd < 0)
		return 0;
	if (h->hole >= 0 && off >= h->lo && off + len <= h->hi)
		return h->hole;
	if (h->hole == 0 && off >= h->lo && off < h->hi)
		return 0; /* starts in data */
	d = (int64_t)lseek(h->fd, (off_t)off, RINGBUF__SEEK_DATA);
	if (d < 0) { /* ENXIO: a hole to the end of the file; else (EINVAL: no
		      * support): unknown, read every page */
		if (errno != ENXIO) {
			h->fd = -1;
			return 0;
		}
		h->lo = off;
		h->hi = INT64_MAX;
		h->hole = 1;
		return 1;
	}
	if (d >= off + len) {
		h->lo = off;
		h->hi = d;
		h->hole = 1;
		return 1;
	}
	e = (int64_t)lseek(h->fd, (off_t)d, RINGBUF__SEEK_HOLE);
	h->lo = d;
	h->hi = e > d ? e : d + len;
	h->hole = 0;
	return 0;
#else
	(void)h;
	(void)off;
	(void)len;
	return 0;
#endif
}

static int ringbuf__validate_in(struct ringbuf *rb, uint64_t size, struct ringbuf__holes *holes, bool live);

/* The check that made this thread's last validation (ringbuf_open_file,
 * ringbuf_recover) return RINGBUF_ECORRUPT: a static string, for
 * diagnostics only (ringbuf-record prints it; tests name the check that
 * misfired). Never reset: meaningful right after an ECORRUPT. */
static RINGBUF__TLS const char *ringbuf__invalid_why;
#define RINGBUF__INVALID(why) (ringbuf__invalid_why = (why), RINGBUF_ECORRUPT)

static int ringbuf__validate(struct ringbuf *rb, uint64_t size)
{
	return ringbuf__validate_in(rb, size, NULL, false);
}

/* live: the block may have writers running (ringbuf_open_file: another
 * process may be writing it); false: its writers are gone (ringbuf_recover,
 * whose contract says so). */
/* Z7: without a descriptor (ringbuf_recover), a page whose write index is
 * 0 is not read: nothing was written to it in this lap (a page the tail never
 * reached, often a hole of the file), or the tail just entered it (recovery's
 * commit sets its commit to 0). No reader loads its commit before that, and
 * each reader load of a commit is range-checked anyway (HOSTILE MEMORY). */
static bool ringbuf__unwritten_page(const struct ringbuf__holes *holes, struct ringbuf__bpage *bp)
{
	return !holes && (RINGBUF__LOAD(&bp->write) & RINGBUF__WRITE_MASK) == 0;
}

static int ringbuf__validate_in(struct ringbuf *rb, uint64_t size, struct ringbuf__holes *holes, bool live)
{
	struct ringbuf__geom g;
	unsigned cpu;
	if (size < sizeof(struct ringbuf) || rb->magic != RINGBUF__MAGIC)
		return RINGBUF_EFORMAT;
	if (rb->byte_order != RINGBUF__BYTE_ORDER || rb->long_size != sizeof(long))
		return RINGBUF_EFORMAT;
	if (rb->version != RINGBUF__LAYOUT_VERSION)
		return RINGBUF_EVERSION;
	if (ringbuf__layout(rb->ncpu, rb->nr_pages, rb->page_size, rb->user_size,
			    rb->cpu_off == RINGBUF__CPU_OFF_SHARED, &g) < 0 ||
	    g.cpu_off != rb->cpu_off || g.bpage_off != rb->bpage_off || g.data_off != rb->data_off ||
	    g.user_off != rb->user_off || g.total != rb->total_size ||
	    rb->bsize != ringbuf__data_size(rb->page_size, rb->flags) || rb->max_event != rb->bsize - 8 ||
	    rb->page_shift >= 32 || (1u << rb->page_shift) != rb->page_size ||
	    (rb->flags & ~(uint32_t)RINGBUF_F_ALIGN8) || rb->ts_mode > RINGBUF_TS_ABSOLUTE ||
	    memchr(rb->clock_name, 0, sizeof rb->clock_name) == NULL ||
	    rb->clock_kind > RINGBUF__CLK_USER ||
	    (rb->clock_kind == RINGBUF__CLK_TSC && (rb->tsc_shift != 32 || rb->tsc_mult == 0)))
		return RINGBUF__INVALID("header: geometry, flags or clock fields");
	if (size < rb->total_size)
		return RINGBUF_ETRUNC;
	{
		int mode = atomic_load_explicit(&ringbuf__sh(rb)->mode, memory_order_relaxed);
		if (mode != RINGBUF_MODE_OVERWRITE && mode != RINGBUF_MODE_PRODUCER_CONSUMER)
			return RINGBUF__INVALID("header: mode");
	}
	for (cpu = 0; cpu < rb->ncpu; cpu++) {
		struct ringbuf__cpu *c = ringbuf__cpu(rb, cpu);
		uint32_t n = rb->nr_pages, i, x, heads = 0, upds = 0, rp;
		unsigned char seen[1];
		(void)seen;
		rp = RINGBUF__LOAD(&c->reader_page);
		if (c->index != cpu || c->bp_off != (uint64_t)((char *)ringbuf__bp(rb, cpu, 0) - (char *)rb) ||
		    c->dp_off != (uint64_t)((char *)ringbuf__dp(rb, cpu, 0) - (char *)rb))
			return RINGBUF__INVALID("cpu: index or page offsets");
		if (rp > n || RINGBUF__LOAD(&c->tail_page) > n || RINGBUF__LOAD(&c->commit_page) > n ||
		    c->head_hint > n || c->read > rb->bsize || RINGBUF__LOAD(&c->committing) > RINGBUF_MAX_NEST)
			return RINGBUF__INVALID("cpu: reader, tail, commit page, head hint, read or committing out of range");
		for (i = 0; i <= n; i++) {
			struct ringbuf__bpage *bp = ringbuf__bp(rb, cpu, i);
			uint64_t link = RINGBUF__LOAD(&bp->next);
			if (ringbuf__link_idx(link) > n || bp->prev > n ||
			    (link & RINGBUF__F_MASK) == RINGBUF__F_MASK ||
			    (!ringbuf__is_hole(holes, (int64_t)((char *)ringbuf__dp(rb, cpu, i) - (char *)rb),
					       (int64_t)rb->page_size) &&
			     !ringbuf__unwritten_page(holes, bp) && ringbuf__page_commit(rb, cpu, i) > rb->bsize))
				return RINGBUF__INVALID("page: link, prev or commit out of range (or both flags)");
		}
		/* V0: a reader swap cut after S2 published H and before S3 (the
		 * reader killed with its lock held) leaves reader_page naming H,
		 * still in the ring (its predecessor P links to it), and the old
		 * reader page R off the ring, prepared: R.prev == P and R.next ==
		 * H.next's index with HEADER. The ring is checked against R, the
		 * page recovery gives back to the reader (ringbuf__repair_reader);
		 * without that shape a reader page in the ring stays corrupt. */
		if (atomic_load_explicit(&c->reader_lock, memory_order_relaxed) != 0) {
			uint32_t p = ringbuf__bp(rb, cpu, rp)->prev;
			if (p != rp && ringbuf__next_idx(rb, cpu, p) == rp) {
				uint32_t hn = ringbuf__next_idx(rb, cpu, rp), r2 = n + 1;
				for (i = 0; i <= n && r2 > n; i++) {
					uint64_t l = ringbuf__load_link(ringbuf__bp(rb, cpu, i));
					if (i != rp && ringbuf__bp(rb, cpu, i)->prev == p && ringbuf__link_idx(l) == hn &&
					    (l & RINGBUF__F_MASK) == RINGBUF__F_HEADER)
						r2 = i;
				}
				if (r2 > n)
					return RINGBUF__INVALID("V0: reader page in the ring without a prepared old reader page");
				rp = r2;
			}
		}
		/* V1-V3: the ring, checked against a writer that may be running in
		 * another process (ringbuf-record opens a live block): every check
		 * below compares values that one consistent state of the block holds
		 * together, never a value with a re-load a writer may have moved
		 * meanwhile (the old check compared the end of its walk with a
		 * second load of tail_page, and counted head flags that a writer in
		 * overwrite mode moved under the walk: RINGBUF_ECORRUPT for a sound
		 * block, about one open in 500 while a writer ran).
		 *   V1  commit page, then tail page, each loaded once (acquire). A
		 *       tail on the reader page with the commit elsewhere is corrupt:
		 *       the tail leaves the reader page (U3, seq_cst) before the
		 *       commit walk stores the next commit page ([W-cpage], release),
		 *       so a tail load after an acquire load that read a commit page
		 *       off the reader page reads that move or a later tail, never
		 *       the reader page (which is off the ring: the tail never
		 *       returns to it). The other order misfired.
		 *   V2  walk n links from that tail (its successor when it is on the
		 *       reader page) and come back to it without meeting the reader
		 *       page. Writers never change a link's index, only its flags
		 *       (>>design, RING), so the shape is the same whatever the
		 *       writer does meanwhile; only a reader's swap changes it, and
		 *       every change of a link, flags or index, bumps its tag.
		 *   V3  the head flags: at most one HEADER, and an UPDATE for each
		 *       push in flight (one per nested writer: a writer nested in a
		 *       push's owner helps it, moves the tail and may claim a push of
		 *       its own before the owner's H3), at least one flag in all (no
		 *       HEADER while the newest push is between its claim and its
		 *       H2), counted on a snapshot: a second
		 *       pass re-loads the same links (acquire) and the sum of their
		 *       tags must be the same. Tags only grow (one per change; a
		 *       wrap needs 2^32 changes of one link between two loads, the
		 *       bound ABA already assumes), so every link held the value of
		 *       its first load until its second one. C11: all link changes
		 *       are seq_cst CASes (or the reader's stores to its own off-ring
		 *       page, published by its S3 CAS) by writers ordered among
		 *       themselves (one owner, nested handlers, the reader lock), so
		 *       if a first-pass load read a change w2 (acquire from a seq_cst
		 *       RMW: synchronizes with it), every link change w1 that
		 *       happens before w2 happens before every later load: a link
		 *       read unchanged in both passes shows w1 or later. The values
		 *       are a cut closed under happens-before: a state the ring was
		 *       in, where the count holds. A walk whose links changed is
		 *       retried (RINGBUF__VALIDATE_TRIES); a writer that keeps
		 *       moving the head faster than two walks leaves the count
		 *       unchecked (nothing is refused for it: a ring without a head
		 *       gives the reader RINGBUF_EAGAIN, bounded, in find_head). */
		{
			uint32_t cp = atomic_load_explicit(&c->commit_page, memory_order_acquire);
			uint32_t t0 = atomic_load_explicit(&c->tail_page, memory_order_acquire);
			uint32_t start, tries;
			if (t0 == rp && cp != rp)
				return RINGBUF__INVALID("V1: tail on the reader page, commit elsewhere");
			RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_VALIDATE_TAIL);
			/* tail on the reader page: enter the ring (its index is the
			 * reader's: stable against writers) */
			start = t0 == rp ? ringbuf__next_idx(rb, cpu, rp) : t0;
			if (start > n)
				return RINGBUF__INVALID("V1: the ring's entry out of range");
			for (tries = 0; tries < RINGBUF__VALIDATE_TRIES; tries++) {
				uint64_t tags = 0, tags2 = 0;
				heads = upds = 0;
				for (x = start, i = 0; i < n; i++) {
					uint64_t link = ringbuf__load_link(ringbuf__bp(rb, cpu, x));
					if (x == rp)
						return RINGBUF__INVALID("V2: the walk met the reader page");
					if ((link & RINGBUF__F_MASK) == RINGBUF__F_HEADER)
						heads++;
					else if (link & RINGBUF__F_MASK)
						upds++;
					tags += link >> RINGBUF__TAG_SHIFT;
					x = ringbuf__link_idx(link);
					if (x > n) /* the range check above was another load */
						return RINGBUF__INVALID("V2: link index out of range");
				}
				if (x != start)
					return RINGBUF__INVALID("V2: the walk did not come back to the tail");
				RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_VALIDATE_WALKED);
				for (x = start, i = 0; i < n; i++) {
					uint64_t link = ringbuf__load_link(ringbuf__bp(rb, cpu, x));
					tags2 += link >> RINGBUF__TAG_SHIFT;
					x = ringbuf__link_idx(link);
					if (x > n)
						return RINGBUF__INVALID("V3: link index out of range");
				}
				if (tags2 == tags && x == start)
					break; /* a snapshot: check its flags */
				heads = 1, upds = 0; /* changed under the walk: again */
				ringbuf__yield();
			}
			if (heads + upds < 1 || heads > 1 || upds > RINGBUF_MAX_NEST)
				return RINGBUF__INVALID("V3: head flags: none, two HEADERs, or more UPDATEs than writers");
		}
		/* V4: the slots (what recovery pads), only where their writers are
		 * gone (ringbuf_recover). A slot's page, off and event are plain
		 * fields that its writer rewrites at every reservation ([SLOT] P1:
		 * len = 0, then page, off, event, then P3 len = total; relaxed, with
		 * compiler barriers only: the owner and its signal handlers are the
		 * only ones that need them in order). A validation running beside
		 * a live writer of another process (ringbuf-record opens a live
		 * block) has no happens-before edge to those stores: between its
		 * load of off and its load of event the writer may commit and
		 * describe its next event, and the pair it reads (an old off, a new
		 * event 20 bytes on, or a new off past an old event) is no state
		 * the slot was ever in, and the check called a sound block corrupt
		 * (ringbuf-record stops: "corrupted buffer memory"). In C11 the
		 * plain loads even race with the writer's plain stores: no fence
		 * on the reader's side alone gives them a consistent snapshot, and
		 * the write path is not to pay for one. Readers never use the
		 * slots, and recovery validates again (live false) before it reads
		 * them, so an open leaves them unchecked (test_validate_live.c:
		 * slot_rewritten_under_the_check). A slot with len 0 is being
		 * written (or done): its other fields may be half updated and
		 * recovery ignores it. */
		for (i = 0; !live && i < RINGBUF_MAX_NEST; i++) {
			const struct ringbuf__slot *sl = &c->slots[i];
			uint32_t len = RINGBUF__LOAD(&sl->len), page, off, event;
			if (i >= RINGBUF__LOAD(&c->committing) || len == 0 || (len & RINGBUF__SLOT_GONE))
				continue;
			page = RINGBUF__LOAD(&sl->page);
			off = RINGBUF__LOAD(&sl->off);
			RINGBUF__TESTPOINT(rb, cpu, RINGBUF__TP_VALIDATE_SLOT);
			event = RINGBUF__LOAD(&sl->event);
			if (page > n || off > rb->bsize || len > 2 * rb->bsize || event < off || event > off + 8)
				return RINGBUF__INVALID("V4: slot: page, offset, length or event out of range");
		}
	}
	return 0;
}

#if defined(__linux__)
#if defined(MAP_FIXED)
#define RINGBUF__MAP_FIXED MAP_FIXED
#else
#define RINGBUF__MAP_FIXED 0x10 /* the same value on every Linux architecture */
#endif
#if defined(EOPNOTSUPP)
#define RINGBUF__EPAGE EOPNOTSUPP
#else
#define RINGBUF__EPAGE EINVAL
#endif

/* [PREFAULT] (SET-UP in >>design) The pages of [off, off + len) of a new
 * block's mapping, made present and writable by one system call
 * (MADV_POPULATE_WRITE, Linux 5.14) before the creator writes them: the
 * metadata (the block up to the first data page) and a file block's user
 * area. Two reasons:
 *   - speed: one call instead of a page fault per page (16 x 8 MiB: about
 *     320 pages of descriptors; see docs/performance.md, set-up);
 *   - a clean error: in a file or memfd these pages are holes, and where the
 *     file system cannot hold them (a full tmpfs, a quota) the creator's
 *     first store to one raised SIGBUS. The call reports EFAULT instead:
 *     RINGBUF_ESYS with errno ENOSPC, and the caller removes what it made.
 * Out of memory: RINGBUF_ENOMEM. A kernel without the call (EINVAL, ENOSYS)
 * or one that declines it: 0, and the stores fault the pages in as before.
 * The other data pages stay holes (Z1) until the tail first enters them,
 * which backs each the same way ([BACKED] in >>writer): on a file system
 * that fills up while tracing, the event is dropped and counted instead of
 * the writer's process dying of SIGBUS. */
static int ringbuf__prefault(void *map, uint64_t off, uint64_t len)
{
	int r = ringbuf__populate((char *)map + off, (size_t)len);
	if (r == RINGBUF__ENOROOM) {
		errno = ENOSPC;
		return RINGBUF_ESYS;
	}
	return r == ENOMEM ? RINGBUF_ENOMEM : 0;
}

/* [PREFAULT] of a new file or memfd block: its metadata, the user area and
 * two data pages of each CPU that no tail enters through [BACKED]: page 0,
 * where the tail starts, and the reader page (page nr_pages), whose commit
 * every reader loads (ringbuf_consume, ringbuf_stats_cpu): on tmpfs a load
 * from a hole allocates the page too, and raised SIGBUS on a full one
 * (test_shm: a_tmpfs_full_while_tracing_drops_and_counts). A CPU's reader
 * page and the next CPU's page 0 are adjacent: ncpu + 1 calls. */
static int ringbuf__prefault_block(void *map, const struct ringbuf__geom *g, unsigned ncpu)
{
	uint64_t stride = ((uint64_t)g->nr_pages + 1) * g->page_size;
	unsigned cpu;
	int r;
	if ((r = ringbuf__prefault(map, 0, g->data_off + g->page_size)) < 0)
		return r;
	for (cpu = 0; cpu < ncpu; cpu++)
		if ((r = ringbuf__prefault(map, g->data_off + cpu * stride + (uint64_t)g->nr_pages * g->page_size,
					   (uint64_t)g->page_size * (cpu + 1 < ncpu ? 2 : 1))) < 0)
			return r;
	return ringbuf__prefault(map, g->user_off, g->total - g->user_off);
}

/* [PH1] (PRIVATE HEADER in >>design): the first RINGBUF__HDR_PRIV bytes of
 * the MAP_SHARED block at map mapped again, from the same descriptor and
 * offset, privately and at the same address. Nothing is copied yet: a
 * private page reads the file until this process first writes it, so the
 * caller's next step is [PH2], a store to the header (every field lies in
 * its first page). RINGBUF_ESYS with errno EOPNOTSUPP where the system page
 * does not divide RINGBUF__HDR_PRIV (pages over 64 KiB): no shared block
 * there rather than one whose geometry another process can change; with
 * the failed mmap's errno otherwise. Either way the caller unmaps the block. */
static int ringbuf__hdr_private(void *map, int fd)
{
	long ps = sysconf(_SC_PAGESIZE);
	if (ps <= 0 || RINGBUF__HDR_PRIV % (unsigned long)ps != 0) {
		errno = RINGBUF__EPAGE;
		return RINGBUF_ESYS;
	}
	if (mmap(map, RINGBUF__HDR_PRIV, PROT_READ | PROT_WRITE, MAP_PRIVATE | RINGBUF__MAP_FIXED, fd, 0) != map)
		return RINGBUF_ESYS;
	return 0;
}

/* The creator's [PH1] and [PH2]: its header, as init_in wrote it, put back
 * into the private copy. The store that copies the page is this memcpy, and
 * the copy is what this process wrote whatever the file holds by then (a
 * process that opened the file under its temporary name and changed it
 * between init_in and here changes only the file's). */
static int ringbuf__hdr_private_own(struct ringbuf *rb, int fd)
{
	unsigned char keep[RINGBUF__HDR_USED];
	int r;
	memcpy(keep, rb, sizeof keep);
	if ((r = ringbuf__hdr_private(rb, fd)) < 0)
		return r;
	memcpy(rb, keep, sizeof keep);
	return 0;
}

RINGBUF_API int ringbuf_create_file(const char *path, const struct ringbuf_config *cfg,
				    struct ringbuf **out)
{
	struct ringbuf__geom g;
	struct ringbuf_config zc;
	struct ringbuf *rb;
	void *map = MAP_FAILED;
	char *tmp;
	size_t n;
	unsigned mode, tries;
	uint64_t seed;
	int fd = -1, r, e;
	if (!path || !out || !*path || !cfg || (cfg->file_mode & ~07777u))
		return RINGBUF_EINVAL;
	if ((r = ringbuf__geometry(cfg, true, &g)) < 0)
		return r;
	mode = cfg->file_mode ? cfg->file_mode : 0600;
	n = strlen(path);
	if (!(tmp = (char *)RINGBUF_MALLOC(n + 16, NULL)))
		return RINGBUF_ENOMEM;
	memcpy(tmp, path, n);
	/* a fresh name next to path: O_CREAT | O_EXCL never follows a symlink
	 * and never opens a file someone else made */
	seed = ringbuf__clock_mono() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)tmp;
	for (tries = 0; tries < 64; tries++) {
		uint64_t x = (seed += 0x9e3779b97f4a7c15ull);
		unsigned i;
		x = (x ^ (x >> 31)) * 0xbf58476d1ce4e5b9ull;
		memcpy(tmp + n, ".rbtmp", 6);
		for (i = 0; i < 8; i++)
			tmp[n + 6 + i] = "0123456789abcdef"[(x >> (4 * i)) & 15];
		tmp[n + 14] = '\0';
		fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | RINGBUF__O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0) {
		e = errno;
		RINGBUF_FREE(tmp, NULL);
		errno = e;
		return RINGBUF_ESYS;
	}
	/* the exact mode, whatever the umask; the size with ftruncate: a hole,
	 * no block allocated, no page written (a write of the last byte would
	 * allocate one) */
	if (fchmod(fd, (mode_t)mode) < 0 || ftruncate(fd, (off_t)g.total) < 0)
		goto fail_sys;
	map = mmap(NULL, (size_t)g.total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		goto fail_sys;
	/* a new file (O_EXCL) reads as zeros: the data pages stay holes until
	 * the writers reach them (SET-UP in >>design) */
	zc = *cfg;
	zc.flags |= RINGBUF_F_ZEROED;
	/* no read-around while the metadata pages fault in: on a disk file
	 * it would fill the page cache with the holes of the data pages */
	(void)madvise(map, (size_t)g.total, RINGBUF__MADV_RANDOM);
	if ((r = ringbuf__prefault_block(map, &g, cfg->ncpu)) < 0) /* [PREFAULT] */
		goto fail;
	r = ringbuf__init_in(map, (size_t)g.total, &zc, true, &rb);
	(void)madvise(map, (size_t)g.total, RINGBUF__MADV_NORMAL);
	if (r < 0)
		goto fail;
	/* the header is complete in the file: from here on it is this
	 * process's copy (PRIVATE HEADER), which names our addresses; the
	 * file's names none (its clock fields, init_in's, cleared first) */
	rb->clock = NULL;
	rb->clock_ctx = NULL;
	if ((r = ringbuf__hdr_private_own(rb, fd)) < 0) { /* [PH1], [PH2] */
		e = errno;
		ringbuf__fork_unregister(rb);
		errno = e;
		goto fail; /* unmaps the block */
	}
	rb->owned = 2;
	rb->mem = map;
	rb->map_len = g.total;
	rb->shared = 1;
	if ((r = ringbuf__clock_adopt_shared(rb, cfg)) < 0) {
		ringbuf__fork_unregister(rb);
		ringbuf__file_unmap(rb);
		map = MAP_FAILED;
		goto fail;
	}
	/* publish it complete: rename replaces path itself (a file or a symlink),
	 * never what a symlink points at */
	if (rename(tmp, path) < 0) {
		e = errno;
		ringbuf__fork_unregister(rb);
		ringbuf__file_unmap(rb);
		map = MAP_FAILED;
		errno = e;
		goto fail_sys;
	}
	ringbuf__membarrier_register_shared(rb); /* merged readers' [R1], waiters' [WAIT-R3] */
	close(fd);
	RINGBUF_FREE(tmp, NULL);
	*out = rb;
	return 0;
fail_sys:
	r = RINGBUF_ESYS;
fail:
	e = errno;
	if (map != MAP_FAILED)
		munmap(map, (size_t)g.total);
	close(fd);
	unlink(tmp);
	RINGBUF_FREE(tmp, NULL);
	errno = e;
	return r;
}

/* memfd_create, sealing: hidden under strict -std=c11, so by number */
#define RINGBUF__MFD_CLOEXEC 1u
#define RINGBUF__MFD_ALLOW_SEALING 2u
#define RINGBUF__F_ADD_SEALS 1033 /* F_LINUX_SPECIFIC_BASE + 9 */
#define RINGBUF__F_SEAL_SHRINK 2
#define RINGBUF__F_SEAL_GROW 4

/* ringbuf_create_shm's descriptors, by the block's address in this process:
 * kept out of the block, whose header another process that opens it RDWR
 * rewrites (see ringbuf_destroy). */
#define RINGBUF__NSHM 64
static struct {
	_Atomic(struct ringbuf *) rb;
	_Atomic(int) fd;
} ringbuf__shm[RINGBUF__NSHM];

static int ringbuf__shm_find(const struct ringbuf *rb)
{
	int i;
	for (i = 0; rb && i < RINGBUF__NSHM; i++)
		if (atomic_load(&ringbuf__shm[i].rb) == rb)
			return i;
	return -1;
}

/* A file or memfd block given back (ringbuf_destroy, and the file calls'
 * own failures after the mapping): this process's clock slot, the mapping,
 * the memfd. The block starts its mapping, of total_size bytes (validated on
 * this process's copy of the header, PRIVATE HEADER: no other process changes
 * it, nor mem and map_len). */
static void ringbuf__file_unmap(struct ringbuf *rb)
{
#if defined(__linux__)
	int i = ringbuf__shm_find(rb);
	if (rb->owned == 2)
		ringbuf__clock_unset_shared(rb); /* [K3] */
	munmap((void *)rb, (size_t)rb->total_size); /* the file keeps its block */
	if (i >= 0) { /* the memfd lives on while another process maps it */
		close(atomic_load(&ringbuf__shm[i].fd));
		atomic_store(&ringbuf__shm[i].rb, NULL);
	}
#else
	(void)rb;
#endif
}

RINGBUF_API int ringbuf_create_shm(const char *name, const struct ringbuf_config *cfg,
				   struct ringbuf **out)
{
	struct ringbuf__geom g;
	struct ringbuf_config zc;
	struct ringbuf *rb;
	void *map;
	int fd, r, e;
	if (!out || !cfg || (cfg->file_mode & ~07777u) || (name && strlen(name) > 200))
		return RINGBUF_EINVAL;
	if ((r = ringbuf__geometry(cfg, true, &g)) < 0)
		return r;
#if defined(SYS_memfd_create)
	fd = (int)syscall(SYS_memfd_create, name ? name : "ringbuf",
			  RINGBUF__MFD_CLOEXEC | RINGBUF__MFD_ALLOW_SEALING);
#else
	errno = ENOSYS;
	fd = -1;
#endif
	if (fd < 0)
		return RINGBUF_ESYS;
	/* size first (a hole: tmpfs allocates a page when it is first written),
	 * then the seals, then the block, exactly as a file (SET-UP in >>design:
	 * a new memfd reads as zeros) */
	if (fchmod(fd, (mode_t)(cfg->file_mode ? cfg->file_mode : 0600)) < 0 ||
	    ftruncate(fd, (off_t)g.total) < 0 ||
	    fcntl(fd, RINGBUF__F_ADD_SEALS, RINGBUF__F_SEAL_SHRINK | RINGBUF__F_SEAL_GROW) < 0)
		goto fail_sys;
	map = mmap(NULL, (size_t)g.total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		goto fail_sys;
	zc = *cfg;
	zc.flags |= RINGBUF_F_ZEROED;
	if ((r = ringbuf__prefault_block(map, &g, cfg->ncpu)) < 0 || /* [PREFAULT] */
	    (r = ringbuf__init_in(map, (size_t)g.total, &zc, true, &rb)) < 0) {
		e = errno;
		munmap(map, (size_t)g.total);
		close(fd);
		errno = e;
		return r;
	}
	/* this process's copy of the header from here on, as a file's */
	rb->clock = NULL;
	rb->clock_ctx = NULL;
	if ((r = ringbuf__hdr_private_own(rb, fd)) < 0) { /* [PH1], [PH2] */
		e = errno;
		ringbuf__fork_unregister(rb);
		munmap(map, (size_t)g.total);
		close(fd);
		errno = e;
		return r;
	}
	rb->owned = 2;
	{
		int i;
		struct ringbuf *none = NULL;
		for (i = 0; i < RINGBUF__NSHM; i++)
			if (atomic_compare_exchange_strong(&ringbuf__shm[i].rb, &none, rb))
				break;
			else
				none = NULL;
		if (i == RINGBUF__NSHM) { /* 64 memfd buffers live in this process */
			ringbuf__fork_unregister(rb);
			munmap(map, (size_t)g.total);
			close(fd);
			return RINGBUF_ENOMEM;
		}
		atomic_store(&ringbuf__shm[i].fd, fd);
	}
	rb->owned = 2;
	rb->mem = map;
	rb->map_len = g.total;
	rb->shared = 1;
	if ((r = ringbuf__clock_adopt_shared(rb, cfg)) < 0) {
		ringbuf__fork_unregister(rb);
		ringbuf__file_unmap(rb); /* unmaps, closes the memfd */
		return r;
	}
	ringbuf__membarrier_register_shared(rb); /* merged readers' [R1], waiters' [WAIT-R3] */
	*out = rb;
	return 0;
fail_sys:
	e = errno;
	close(fd);
	errno = e;
	return RINGBUF_ESYS;
}

RINGBUF_API int ringbuf_fd(const struct ringbuf *rb)
{
	int i = ringbuf__shm_find(rb);
	return i >= 0 ? atomic_load(&ringbuf__shm[i].fd) : -1;
}

/* a field of a header read into raw (bytes, not a struct ringbuf: the
 * private part's pad makes that 64 KiB) */
#define RINGBUF__HDR_GET(raw, f, out) memcpy(&(out), (const char *)(raw) + offsetof(struct ringbuf, f), sizeof(out))

RINGBUF_API int ringbuf_open_file(const char *path, unsigned flags, struct ringbuf **out)
{
	off_t fsize;
	uint64_t raw[(RINGBUF__HDR_USED + 7) / 8], total, cpu_off;
	uint32_t magic, byte_order, long_size, version;
	struct ringbuf *rb;
	void *map;
	int fd, r, e, mflags;
	ssize_t got;
	if (!path || !out || (flags & ~(unsigned)(RINGBUF_OPEN_RDWR | RINGBUF_OPEN_RECOVER)))
		return RINGBUF_EINVAL;
	fd = open(path, ((flags & RINGBUF_OPEN_RDWR) ? O_RDWR : O_RDONLY) | RINGBUF__O_CLOEXEC);
	if (fd < 0)
		return RINGBUF_ESYS;
	/* the size by lseek, not fstat: a 32-bit build without
	 * _FILE_OFFSET_BITS=64 gets EOVERFLOW from fstat for an inode number
	 * above 2^32 (XFS, btrfs, qemu-user on a 64-bit host) */
	if ((fsize = lseek(fd, 0, SEEK_END)) < 0 || lseek(fd, 0, SEEK_SET) != 0) {
		e = errno;
		close(fd);
		errno = e;
		return RINGBUF_ESYS;
	}
	/* the header first, read (not mapped) so a short file cannot fault:
	 * what to map. Everything else is checked on this process's copy of
	 * the header, once it is ours (PRIVATE HEADER) */
	got = read(fd, raw, RINGBUF__HDR_USED);
	RINGBUF__HDR_GET(raw, magic, magic);
	if (got < (ssize_t)RINGBUF__HDR_USED || magic != RINGBUF__MAGIC) {
		close(fd);
		return got < 0 ? RINGBUF_ESYS : RINGBUF_EFORMAT;
	}
	RINGBUF__HDR_GET(raw, byte_order, byte_order);
	RINGBUF__HDR_GET(raw, long_size, long_size);
	RINGBUF__HDR_GET(raw, version, version);
	RINGBUF__HDR_GET(raw, total_size, total);
	RINGBUF__HDR_GET(raw, cpu_off, cpu_off);
	if (byte_order != RINGBUF__BYTE_ORDER || long_size != sizeof(long)) {
		close(fd);
		return RINGBUF_EFORMAT;
	}
	if (version != RINGBUF__LAYOUT_VERSION) {
		close(fd);
		return RINGBUF_EVERSION;
	}
	if (total > (uint64_t)fsize) {
		close(fd);
		return RINGBUF_ETRUNC;
	}
	if (total < sizeof(struct ringbuf) || total > SIZE_MAX) {
		close(fd);
		return RINGBUF_ECORRUPT;
	}
	/* RDWR: only a block laid out to be shared (ringbuf_create_file,
	 * _shm) has a header part of its own pages, which PH1 maps privately;
	 * another one (ringbuf_init_in's memory written to a file) cannot be
	 * opened so (its header shares a page with the atomics) */
	if ((flags & RINGBUF_OPEN_RDWR) && (cpu_off != RINGBUF__CPU_OFF_SHARED || total <= cpu_off)) {
		close(fd);
		return RINGBUF_EFORMAT;
	}
	/* RDWR: share the writers' pages, the header excepted; otherwise a
	 * private (copy-on-write) view: RECOVER to fix it, or a reader's */
	mflags = (flags & RINGBUF_OPEN_RDWR) ? MAP_SHARED : MAP_PRIVATE;
	map = mmap(NULL, (size_t)total, PROT_READ | PROT_WRITE, mflags, fd, 0);
	if (map == MAP_FAILED || ((flags & RINGBUF_OPEN_RDWR) && ringbuf__hdr_private(map, fd) < 0)) { /* [PH1] */
		e = errno;
		if (map != MAP_FAILED)
			munmap(map, (size_t)total);
		close(fd);
		errno = e;
		return RINGBUF_ESYS;
	}
	rb = (struct ringbuf *)map;
	RINGBUF__TESTPOINT(rb, 0, RINGBUF__TP_OPEN_MAPPED);
	/* [PH2] the process-local fields, before the first look at the
	 * geometry: the store copies the header's page (every field is in it),
	 * and from the copy on no other process changes what is checked below
	 * and used by every call on this handle. A private view of the whole
	 * file (no RDWR) needs the same step: its pages read the file until
	 * written. The compiler barrier keeps the loads below after it. */
	rb->owned = (flags & (RINGBUF_OPEN_RDWR | RINGBUF_OPEN_RECOVER)) ? 2 : 4;
	rb->mem = map;
	rb->map_len = total;
	rb->shared = (flags & RINGBUF_OPEN_RDWR) != 0;
	/* process-local, never the file's bytes: the CAS (PER-CPU BLOCKS in >>contexts) */
	rb->rseq = rb->percpu = 0;
	rb->cpu_bufs = rb->ncpu; /* this copy's: the geometry checks below refuse a bad one */
	rb->inline_max = 0;      /* all out of line until the geometry is validated */
	RINGBUF__BARRIER();
	RINGBUF__TESTPOINT(rb, 0, RINGBUF__TP_OPEN_COPIED);
	{
		struct ringbuf__holes holes = {fd, 0, 0, -1};
		/* the copy against what was mapped: a header changed between the
		 * read and the copy is refused, not unmapped short at destroy */
		r = rb->total_size != total || rb->cpu_off != cpu_off
			    ? RINGBUF__INVALID("header: total size or layout changed during the open")
			    : ringbuf__validate_in(rb, total, &holes, true);
	}
	close(fd);
	if (r < 0) {
		munmap(map, (size_t)total);
		return r;
	}
	rb->inline_max = ringbuf__inline_max(rb); /* from the validated copy */
	if (flags & (RINGBUF_OPEN_RDWR | RINGBUF_OPEN_RECOVER)) {
		/* the clock of a shared block is this process's: CLOCKS OF SHARED
		 * BLOCKS, the creator's writers read theirs */
		rb->clock = ringbuf__clock_shared_fn;
		rb->clock_ctx = rb;
		/* a writer's tid means nothing in another PID namespace: the
		 * owner words can no longer tell a dead owner (>>contexts) */
		if (rb->shared && (ringbuf__sh(rb)->pidns == 0 || ringbuf__sh(rb)->pidns != ringbuf__pidns()))
			atomic_fetch_or_explicit(&ringbuf__sh(rb)->owner_flags, RINGBUF__OWNF_MIXED_NS, memory_order_relaxed);
		if (rb->shared)
			ringbuf__membarrier_register_shared(rb); /* merged readers' [R1], waiters' [WAIT-R3] */
		if ((flags & RINGBUF_OPEN_RECOVER) && (r = ringbuf_recover(rb)) < 0) {
			munmap(map, (size_t)total);
			return r;
		}
		/* shared: keep the creator's generation (its writers' claims) */
		if ((r = ringbuf__fork_register_as(rb, rb->shared)) < 0) {
			munmap(map, (size_t)total);
			return r;
		}
	} else {
		/* 4: the header and each page this process writes (a CPU's
		 * reader state) are its copies from here on, so the view cannot
		 * see writers leave an event: merged readers must not wait for them */
		rb->clock = rb->clock_kind == RINGBUF__CLK_TSC ? ringbuf_clock_tsc : ringbuf__default_clock;
		rb->clock_ctx = NULL;
		if ((r = ringbuf__fork_register(rb)) < 0) {
			munmap(map, (size_t)total);
			return r;
		}
	}
	*out = rb;
	return 0;
}
#else
RINGBUF_API int ringbuf_fd(const struct ringbuf *rb)
{
	(void)rb;
	return -1;
}
#endif

RINGBUF_API int ringbuf_recover(struct ringbuf *rb)
{
	unsigned cpu;
	int r;
	if (!rb)
		return RINGBUF_EINVAL;
	if ((r = ringbuf__validate(rb, rb->total_size)) < 0)
		return r;
	for (cpu = 0; cpu < rb->ncpu; cpu++)
		ringbuf__recover_cpu(rb, cpu, false);
	return ringbuf__validate(rb, rb->total_size);
}


/* ==== >>lifecycle: ringbuf_create, ringbuf_destroy, errors =============== *
 * The top: a buffer made (ringbuf_create: >>setup's layout in fresh memory,
 * the rseq claim decided), given back (ringbuf_destroy, for every kind of
 * handle), and the error strings. */

/* PER-CPU BLOCKS (>>contexts): RINGBUF_F_CPU_CURRENT, a block of
 * ringbuf_create, this process's alone (a private mapping or RINGBUF_MALLOC:
 * a fork child writes its own copy): only this process's threads run
 * sequences on it. Decided before the block is handed out: no writer runs
 * yet, and it never changes (nor does the count of shared buffers, which
 * ringbuf_thread_shared refuses to change on such a block). */
static void ringbuf__percpu_enable(struct ringbuf *rb, const struct ringbuf_config *cfg)
{
	if (!(cfg->flags & RINGBUF_F_CPU_CURRENT))
		return;
	rb->percpu = 1;
	rb->cpu_bufs = cfg->ncpu - cfg->shared;
#ifdef RINGBUF__RSEQ_CLAIM
	/* nonzero: by sequence, the value for ringbuf__rseq_cpu_at */
	rb->rseq = !(cfg->flags & RINGBUF_F_NO_RSEQ) && ringbuf__rseq_usable() ? (uint32_t)__rseq_offset : 0;
#endif
}

RINGBUF_API int ringbuf_create(const struct ringbuf_config *cfg, struct ringbuf **out)
{
	struct ringbuf__geom g;
	void *mem;
	char *aligned;
	int r;
	if (!out)
		return RINGBUF_EINVAL;
	if ((r = ringbuf__geometry(cfg, false, &g)) < 0)
		return r;
	if (g.total > SIZE_MAX - g.page_size)
		return RINGBUF_ENOMEM;
#if defined(RINGBUF__DEFAULT_ALLOC) && defined(__linux__) && defined(RINGBUF__MAP_ANON)
	{
		/* a fresh private anonymous mapping reads as zeros and costs no
		 * memory until touched: only the metadata is written (SET-UP in
		 * >>design); over-mapped so the data pages can be page-size
		 * aligned when a ring page is larger than a system page */
		struct ringbuf_config zc = *cfg;
		size_t len = (size_t)g.total + g.page_size;
		zc.flags &= ~(unsigned)RINGBUF_F_CPU_CURRENT; /* ringbuf__percpu_enable's */
		void *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | RINGBUF__MAP_ANON, -1, 0);
		if (map == MAP_FAILED)
			return RINGBUF_ENOMEM;
		aligned = (char *)(((uintptr_t)map + g.page_size - 1) & ~(uintptr_t)(g.page_size - 1));
		zc.flags |= RINGBUF_F_ZEROED;
		if ((r = ringbuf__prefault(aligned, 0, g.data_off)) < 0 || /* [PREFAULT] */
		    (r = ringbuf_init_in(aligned, (size_t)g.total, &zc, out)) < 0) {
			munmap(map, len);
			return r;
		}
		(*out)->owned = 3;
		(*out)->mem = map;
		(*out)->map_len = len;
		ringbuf__percpu_enable(*out, cfg);
		return 0;
	}
#endif
	/* over-allocate so the data pages can be page-size aligned in memory */
	mem = RINGBUF_MALLOC((size_t)g.total + g.page_size, NULL);
	if (!mem)
		return RINGBUF_ENOMEM;
	aligned = (char *)(((uintptr_t)mem + g.page_size - 1) & ~(uintptr_t)(g.page_size - 1));
	{
		struct ringbuf_config pc = *cfg;
		pc.flags &= ~(unsigned)RINGBUF_F_CPU_CURRENT; /* ringbuf__percpu_enable's */
		r = ringbuf_init_in(aligned, (size_t)g.total, &pc, out);
	}
	if (r < 0) {
		RINGBUF_FREE(mem, NULL);
		return r;
	}
	(*out)->owned = 1;
	(*out)->mem = mem;
	ringbuf__percpu_enable(*out, cfg);
	return 0;
}

RINGBUF_API void ringbuf_destroy(struct ringbuf *rb)
{
	/* the address first, the block after: a handle destroyed before (its
	 * block unmapped or freed) is no longer registered, and is not read */
	if (!rb || !ringbuf__fork_unregister(rb) || rb->magic != RINGBUF__MAGIC)
		return;
	if (rb->owned == 2 || rb->owned == 4) {
		ringbuf__file_unmap(rb);
		return;
	}
	rb->magic = 0;
#if defined(__linux__)
	if (rb->owned == 3) { /* ringbuf_create's anonymous mapping */
		munmap(rb->mem, (size_t)rb->map_len);
		return;
	}
#endif
	if (rb->owned)
		RINGBUF_FREE(rb->mem, NULL);
}

RINGBUF_API const char *ringbuf_strerror(int err)
{
	switch (err) {
	case RINGBUF_OK: return "success";
	case RINGBUF_EINVAL: return "invalid argument";
	case RINGBUF_ENOMEM: return "out of memory, or the memory block is too small";
	case RINGBUF_EBUSY: return "busy: reader re-entered, or writers did not finish";
	case RINGBUF_EAGAIN: return "a writer kept a page link in transition; try again";
	case RINGBUF_ECORRUPT: return "corrupted buffer memory; recording disabled";
	case RINGBUF_EALIGN: return "memory block is not 64-byte aligned";
	case RINGBUF_E2BIG: return "event larger than the maximum event size";
	case RINGBUF_ENOSPC: return "event dropped (buffer full, recording disabled, or nested too deep)";
	case RINGBUF_EFORMAT: return "not a ringbuf block (bad magic, byte order or word size)";
	case RINGBUF_EVERSION: return "ringbuf block of another layout version";
	case RINGBUF_ETRUNC: return "file shorter than its header says (truncated)";
	case RINGBUF_ESYS: return "system call failed (see errno)";
	default: return "unknown error";
	}
}

#endif /* RINGBUF_IMPLEMENTATION */

/* >>cxx: the shim's names are the user's again (unless ringbuf_trace.h,
 * which includes ringbuf.h again at its end, still needs them) */
#if defined(__cplusplus) && defined(RINGBUF__CXX_SHIM) && !defined(RINGBUF__CXX_SHIM_KEEP)
#undef RINGBUF__CXX_SHIM
#undef _Atomic
#undef _Alignas
#undef _Static_assert
#undef _Thread_local
#undef atomic_load_explicit
#undef atomic_store_explicit
#undef atomic_load
#undef atomic_store
#undef atomic_init
#undef atomic_compare_exchange_strong_explicit
#undef atomic_compare_exchange_weak_explicit
#undef atomic_compare_exchange_strong
#undef atomic_fetch_add_explicit
#undef atomic_fetch_sub_explicit
#undef atomic_fetch_or_explicit
#undef atomic_fetch_and_explicit
#undef atomic_fetch_add
#undef atomic_fetch_and
#undef atomic_thread_fence
#undef atomic_signal_fence
#undef memory_order_relaxed
#undef memory_order_acquire
#undef memory_order_release
#undef memory_order_acq_rel
#undef memory_order_seq_cst
#pragma pop_macro("_Atomic")
#pragma pop_macro("_Alignas")
#pragma pop_macro("_Static_assert")
#pragma pop_macro("_Thread_local")
#pragma pop_macro("atomic_load_explicit")
#pragma pop_macro("atomic_store_explicit")
#pragma pop_macro("atomic_load")
#pragma pop_macro("atomic_store")
#pragma pop_macro("atomic_init")
#pragma pop_macro("atomic_compare_exchange_strong_explicit")
#pragma pop_macro("atomic_compare_exchange_weak_explicit")
#pragma pop_macro("atomic_compare_exchange_strong")
#pragma pop_macro("atomic_exchange_explicit")
#pragma pop_macro("atomic_fetch_add_explicit")
#pragma pop_macro("atomic_fetch_sub_explicit")
#pragma pop_macro("atomic_fetch_or_explicit")
#pragma pop_macro("atomic_fetch_and_explicit")
#pragma pop_macro("atomic_fetch_add")
#pragma pop_macro("atomic_fetch_and")
#pragma pop_macro("atomic_thread_fence")
#pragma pop_macro("atomic_signal_fence")
#pragma pop_macro("memory_order_relaxed")
#pragma pop_macro("memory_order_acquire")
#pragma pop_macro("memory_order_release")
#pragma pop_macro("memory_order_acq_rel")
#pragma pop_macro("memory_order_seq_cst")
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
