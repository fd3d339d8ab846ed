/* ringbuf_trace.h - v0.1.0 - typed trace events, text output and trace.dat export for ringbuf.h
 * SPDX-License-Identifier: MIT   (full licence text at the end of this file)
 *
 * The tracer layer on top of ringbuf.h: the user-space form of the kernel's
 * TRACE_EVENT() (and DPDK's RTE_TRACE_POINT), a text view in the style of the
 * kernel's `trace` file, and an exporter that writes trace.dat files which the
 * real `trace-cmd report` and KernelShark read. Written from the published file
 * formats; it contains no code from the kernel, trace-cmd or libtraceevent.
 * It is laid out so that it can be appended to ringbuf.h as extra sections.
 *
 * USAGE
 *   In exactly one C or C++ file:  #define RINGBUF_IMPLEMENTATION
 *                                  #include "ringbuf_trace.h"    (includes ringbuf.h)
 *   Everywhere else:               #include "ringbuf_trace.h"
 *   Events are defined in a header with RINGBUF_TRACE_EVENT(); the one C file
 *   that instantiates their descriptors defines RINGBUF_TRACE_DEFINE_EVENTS
 *   before including that header (the kernel's CREATE_TRACE_POINTS).
 *
 * TABLE OF CONTENTS (grep for the anchors)
 *   >>events     RINGBUF_TRACE_EVENT(), registry, enable/disable by glob, threads
 *   >>text       text output like the kernel's trace file, merged over CPUs
 *   >>tracedat   capture of pages while writers run; trace.dat v6/v7 export
 *   >>flight     event formats and thread names kept in a file-backed buffer's user area
 *   >>filter     per-event filters and triggers (the kernel's syntax) set at run time
 *   >>snapshot   snapshot buffers and stack traces (the snapshot and stacktrace triggers)
 *   >>trace_impl the implementation (RINGBUF_IMPLEMENTATION only)
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
 * CONFIGURATION
 *   RINGBUF_TRACE_EMIT_PREFIX   [global]    prefix of generated emitters (default trace_)
 *   RINGBUF_TRACE_STR_MAX       [global]    longest RINGBUF_STRING() copied (default 1024 bytes)
 *   RINGBUF_TRACE_MAX_THREADS   [impl-only] threads whose name (comm) is remembered (default 4096)
 *   RINGBUF_TRACE_USER_COMMS    [impl-only] thread names a file-backed buffer's user area keeps
 *                               (ringbuf_trace_user_size(), >>flight; default 256)
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
/* C++: ringbuf.h's C11-atomics shim (>>cxx in ringbuf.h) stays in force until
 * the end of this file, which includes ringbuf.h again to end it. */
#ifdef __cplusplus
#define RINGBUF__CXX_SHIM_KEEP 1
#endif
#include "ringbuf.h"

#ifndef RINGBUF_TRACE_H
#define RINGBUF_TRACE_H

/* Symbol prefix: with RINGBUF_NAMESPACE (see ringbuf.h's >>config) the
 * functions of this header are renamed too. The event descriptors that
 * RINGBUF_TRACE_EVENT() defines (ringbuf_event_<name>) and the emitters
 * (RINGBUF_TRACE_EMIT_PREFIX) belong to the program and keep their names. */
#ifdef RINGBUF_NAMESPACE
#define ringbuf_trace__reserve           RINGBUF__NS(ringbuf_trace__reserve)
#define ringbuf_trace__filter_keep       RINGBUF__NS(ringbuf_trace__filter_keep)
#define ringbuf_trace__snapshot_testing  RINGBUF__NS(ringbuf_trace__snapshot_testing)
#define ringbuf_trace_snapshot           RINGBUF__NS(ringbuf_trace_snapshot)
#define ringbuf_trace_snapshot_attach    RINGBUF__NS(ringbuf_trace_snapshot_attach)
#define ringbuf_trace_snapshot_buffer    RINGBUF__NS(ringbuf_trace_snapshot_buffer)
#define ringbuf_trace_snapshot_create    RINGBUF__NS(ringbuf_trace_snapshot_create)
#define ringbuf_trace_snapshot_destroy   RINGBUF__NS(ringbuf_trace_snapshot_destroy)
#define ringbuf_trace_snapshot_stats     RINGBUF__NS(ringbuf_trace_snapshot_stats)
#define ringbuf_trace_stack_format       RINGBUF__NS(ringbuf_trace_stack_format)
#define ringbuf_trace_stacktrace         RINGBUF__NS(ringbuf_trace_stacktrace)
#define ringbuf_trace__filter_testing    RINGBUF__NS(ringbuf_trace__filter_testing)
#define ringbuf_trace_filter_eval        RINGBUF__NS(ringbuf_trace_filter_eval)
#define ringbuf_trace_get_filter         RINGBUF__NS(ringbuf_trace_get_filter)
#define ringbuf_trace_set_filter         RINGBUF__NS(ringbuf_trace_set_filter)
#define ringbuf_trace_get_triggers       RINGBUF__NS(ringbuf_trace_get_triggers)
#define ringbuf_trace_set_trigger        RINGBUF__NS(ringbuf_trace_set_trigger)
#define ringbuf_trace_capture_create     RINGBUF__NS(ringbuf_trace_capture_create)
#define ringbuf_trace_capture_destroy    RINGBUF__NS(ringbuf_trace_capture_destroy)
#define ringbuf_trace_capture_foreach    RINGBUF__NS(ringbuf_trace_capture_foreach)
#define ringbuf_trace_capture_page       RINGBUF__NS(ringbuf_trace_capture_page)
#define ringbuf_trace_capture_pages      RINGBUF__NS(ringbuf_trace_capture_pages)
#define ringbuf_trace_capture_read       RINGBUF__NS(ringbuf_trace_capture_read)
#define ringbuf_trace_comm               RINGBUF__NS(ringbuf_trace_comm)
#define ringbuf_trace_consume_foreach    RINGBUF__NS(ringbuf_trace_consume_foreach)
#define ringbuf_trace_disable            RINGBUF__NS(ringbuf_trace_disable)
#define ringbuf_trace_enable             RINGBUF__NS(ringbuf_trace_enable)
#define ringbuf_trace_find               RINGBUF__NS(ringbuf_trace_find)
#define ringbuf_trace_find_id            RINGBUF__NS(ringbuf_trace_find_id)
#define ringbuf_trace_format_record      RINGBUF__NS(ringbuf_trace_format_record)
#define ringbuf_trace_format_text        RINGBUF__NS(ringbuf_trace_format_text)
#define ringbuf_trace_glob_match         RINGBUF__NS(ringbuf_trace_glob_match)
#define ringbuf_trace_is_enabled         RINGBUF__NS(ringbuf_trace_is_enabled)
#define ringbuf_trace_load_registry      RINGBUF__NS(ringbuf_trace_load_registry)
#define ringbuf_trace_parse_registry     RINGBUF__NS(ringbuf_trace_parse_registry)
#define ringbuf_trace_print              RINGBUF__NS(ringbuf_trace_print)
#define ringbuf_trace_print_capture      RINGBUF__NS(ringbuf_trace_print_capture)
#define ringbuf_trace_register_event     RINGBUF__NS(ringbuf_trace_register_event)
#define ringbuf_trace_register_event_id  RINGBUF__NS(ringbuf_trace_register_event_id)
#define ringbuf_trace_register_events    RINGBUF__NS(ringbuf_trace_register_events)
#define ringbuf_trace_registry_free      RINGBUF__NS(ringbuf_trace_registry_free)
#define ringbuf_trace_registry_init      RINGBUF__NS(ringbuf_trace_registry_init)
#define ringbuf_trace_save_tracedat      RINGBUF__NS(ringbuf_trace_save_tracedat)
#define ringbuf_trace_signal_enter       RINGBUF__NS(ringbuf_trace_signal_enter)
#define ringbuf_trace_signal_exit        RINGBUF__NS(ringbuf_trace_signal_exit)
#define ringbuf_trace_store_registry     RINGBUF__NS(ringbuf_trace_store_registry)
#define ringbuf_trace_thread_id          RINGBUF__NS(ringbuf_trace_thread_id)
#define ringbuf_trace_thread_name        RINGBUF__NS(ringbuf_trace_thread_name)
#define ringbuf_trace_thread_reset       RINGBUF__NS(ringbuf_trace_thread_reset)
#define ringbuf_trace_tracedat_filters   RINGBUF__NS(ringbuf_trace_tracedat_filters)
#define ringbuf_trace_user_size          RINGBUF__NS(ringbuf_trace_user_size)
#define ringbuf_trace_write_tracedat     RINGBUF__NS(ringbuf_trace_write_tracedat)
#define ringbuf_trace_writer_alive       RINGBUF__NS(ringbuf_trace_writer_alive)
#define ringbuf_trace_writer_pid         RINGBUF__NS(ringbuf_trace_writer_pid)
#endif

#include <stdio.h>
#include <string.h>

#ifndef RINGBUF_ALL_CPUS
#define RINGBUF_ALL_CPUS (~0u)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ==== >>events ========================================================== *
 *
 * DEFINING AN EVENT
 *
 *   RINGBUF_TRACE_EVENT(name,
 *       RINGBUF_FIELDS(field, ...),            one to 32 fields, in record order
 *       RINGBUF_PRINT("format", args...))      the kernel's TP_printk
 *
 * Fields:
 *   RINGBUF_FIELD(type, name)        an integer of any width and signedness
 *                                    (uint8_t .. int64_t, int, pid_t, bool, enums)
 *   RINGBUF_ARRAY(type, name, n)     a fixed array of n integers (copied from a pointer)
 *   RINGBUF_CHARS(name, n)           char name[n]: a string copied and cut to n-1 bytes,
 *                                    NUL-terminated, zero-filled
 *   RINGBUF_STRING(name)             a dynamic string (`__data_loc char[]`): stored after
 *                                    the fixed fields, up to RINGBUF_TRACE_STR_MAX bytes
 * Print arguments refer to the record as REC (REC->seq, REC->msg); a dynamic string
 * is __get_str(name), as in the kernel. The format is used twice: compiled into
 * the text output (snprintf, so the compiler checks it) and written verbatim as
 * the event's `print fmt:` for trace-cmd. Pass 64-bit values as
 * (unsigned long long)REC->x / (long long)REC->x with %llu/%lld/%llx.
 *
 * It generates:
 *   struct ringbuf_ev_<name>           the record: struct ringbuf_trace_entry ent
 *                                      (common_type, common_flags,
 *                                      common_preempt_count, common_pid), then the fields
 *   struct ringbuf_trace_event ringbuf_event_<name>   the descriptor to register
 *   int trace_<name>(struct ringbuf *rb, unsigned cpu, <one argument per field>)
 *       the emitter: returns 1 when written, 0 when the event is disabled (or not
 *       registered) or its filter discarded it (>>filter), RINGBUF_ENOSPC when the
 *       buffer dropped it (counted there).
 *       Integers by value; RINGBUF_ARRAY a const pointer to n elements (NULL:
 *       zeros); RINGBUF_CHARS/RINGBUF_STRING a const char * (NULL: "(null)").
 *       A disabled event costs one load and one branch. Async-signal-safe.
 *
 * Field names must not start with ringbuf__ nor be REC or common_*. 64-bit fields
 * are 4-byte aligned (as payloads are; see ringbuf.h), so a u64 after a u32 sits
 * at offset 12: the format text always gives the real offsets.
 *
 * COMMON FIELDS. common_type = the event id (1..32767), common_pid = the thread id
 * (gettid, cached per thread), and the writer context, so that trace tools show
 * which events came from signal handlers. The context depth d is the larger of
 * the CPU buffer's writer nesting depth while reserving (1 = plain thread, 2 = a
 * writer that interrupted another writer, ...) and 1 + the calling thread's
 * ringbuf_trace_signal_enter() depth:
 *
 *     d   common_preempt_count   common_flags                       latency column
 *     1   0                      0                                  ....
 *     2   1                      TRACE_FLAG_HARDIRQ 0x08            ..h1
 *     >=3 d-1                    TRACE_FLAG_NMI|HARDIRQ 0x48        ..Z2
 *
 * (the kernel also sets HARDIRQ inside an NMI; trace-cmd report -l shows them).
 *
 * MULTIPLE FILES. Put the RINGBUF_TRACE_EVENT()s in a header that includes
 * ringbuf_trace.h. Every file that includes it gets the structs and the inline
 * emitters; the one file that defines RINGBUF_TRACE_DEFINE_EVENTS before
 * including it also gets the descriptors and print functions (then #undef it).
 */

#ifndef RINGBUF_TRACE_EMIT_PREFIX
#define RINGBUF_TRACE_EMIT_PREFIX trace_
#endif
#ifndef RINGBUF_TRACE_STR_MAX
#define RINGBUF_TRACE_STR_MAX 1024
#endif
#if RINGBUF_TRACE_STR_MAX < 1 || RINGBUF_TRACE_STR_MAX > 32768
#error "RINGBUF_TRACE_STR_MAX must be between 1 and 32768"
#endif

/** Kernel trace flags (include/linux/trace_events.h values) used in common_flags. */
#define RINGBUF_TRACE_FLAG_HARDIRQ 0x08u
#define RINGBUF_TRACE_FLAG_NMI 0x40u

/** The kernel's struct trace_entry: the first 8 bytes of every record. */
struct ringbuf_trace_entry {
	uint16_t type;         /* common_type: event id 1..32767 */
	uint8_t flags;         /* common_flags: RINGBUF_TRACE_FLAG_* */
	uint8_t preempt_count; /* common_preempt_count: context depth - 1 */
	int32_t pid;           /* common_pid: thread id */
};

/** Field kinds. */
enum ringbuf_trace_field_kind {
	RINGBUF_TRACE_FIELD_INT = 0,    /* integer */
	RINGBUF_TRACE_FIELD_ARRAY = 1,  /* fixed array of integers */
	RINGBUF_TRACE_FIELD_CHARS = 2,  /* fixed char array holding a string */
	RINGBUF_TRACE_FIELD_STRING = 3, /* __data_loc char[] (u32: length << 16 | offset) */
};

/** One field of an event, as written in the format text. */
struct ringbuf_trace_field {
	const char *type;  /* C type as written ("uint32_t"; "__data_loc char[]") */
	const char *name;
	uint32_t offset;   /* from the start of the record (common fields included) */
	uint32_t size;     /* bytes (arrays: all elements; strings: 4) */
	uint32_t count;    /* array elements (1 for scalars, 0 for strings) */
	uint8_t is_signed;
	uint8_t kind;      /* enum ringbuf_trace_field_kind */
};

struct ringbuf_trace_registry;
struct ringbuf_trace__prog; /* a compiled filter (>>filter) */

/** An event descriptor; generated by RINGBUF_TRACE_EVENT(). Read-only for users. */
struct ringbuf_trace_event {
	RINGBUF__ATOMIC(uint32_t) state; /* id (| RINGBUF_TRACE__FILTERED) while enabled, 0 otherwise:
					    the emitter's one load */
	uint16_t id;                     /* 1..32767 once registered, 0 before */
	uint16_t nfields;
	const char *name;
	const struct ringbuf_trace_field *fields;
	size_t size;                     /* fixed record size: sizeof(struct ringbuf_ev_<name>) */
	const char *print_fmt;           /* RINGBUF_PRINT(...) as written (stringified) */
	int (*print)(char *buf, size_t size, const void *rec, size_t len); /* fields as text */
	struct ringbuf_trace_registry *reg;
	struct ringbuf_trace_event *next;
	RINGBUF__ATOMIC(struct ringbuf_trace__prog *) filter; /* >>filter; NULL: none */
};

/** A set of events sharing one id space and one system name in trace.dat.
 * Initialise with RINGBUF_TRACE_REGISTRY_INIT(system) or ringbuf_trace_registry_init().
 * Registration never allocates. */
struct ringbuf_trace_registry {
	const char *system;                              /* "ringbuf" if NULL */
	RINGBUF__ATOMIC(struct ringbuf_trace_event *) first; /* newest first */
	RINGBUF__ATOMIC(int) lock;                       /* serializes registration */
	uint32_t count;
	uint32_t next_id;
	void *loaded;                                    /* ringbuf_trace_load_registry()'s storage */
	struct ringbuf_trace_snapshot *snapshot;         /* the snapshot trigger's (>>snapshot) */
};
#define RINGBUF_TRACE_REGISTRY_INIT(system) { (system), NULL, 0, 0, 1, NULL, NULL }

RINGBUF_API void ringbuf_trace_registry_init(struct ringbuf_trace_registry *reg, const char *system);
/** Register ev with the lowest free id (>= the last one given). Returns the id
 * (1..32767), RINGBUF_EBUSY if ev belongs to another registry, RINGBUF_ENOSPC if
 * all ids are taken, RINGBUF_EINVAL. Registering again in the same registry
 * returns the same id. The event starts enabled. Not async-signal-safe. */
RINGBUF_API int ringbuf_trace_register_event(struct ringbuf_trace_registry *reg,
					     struct ringbuf_trace_event *ev);
/** Register ev with a chosen id (1..32767); RINGBUF_EBUSY if another event of
 * reg has it (or ev is registered with another id). */
RINGBUF_API int ringbuf_trace_register_event_id(struct ringbuf_trace_registry *reg,
						struct ringbuf_trace_event *ev, unsigned id);
/** Register a static table of events (the constructor-free form). Returns the
 * number registered, or the first error. Prefer RINGBUF_TRACE_REGISTER_ARRAY(),
 * which counts the array itself. */
RINGBUF_API int ringbuf_trace_register_events(struct ringbuf_trace_registry *reg,
					      struct ringbuf_trace_event *const *evs, size_t n);
/** ringbuf_trace_register_events() over a whole array of event pointers, its
 * length taken from the array's type: the count cannot be wrong. With gcc and
 * clang, passing a pointer instead of an array is a compile-time error. */
#if defined(__cplusplus)
} /* extern "C" */
extern "C++" template <typename T, size_t N> char (&ringbuf_trace__array_of(T (&)[N]))[1];
extern "C" {
#define RINGBUF_TRACE__IS_ARRAY(a) (sizeof(ringbuf_trace__array_of(a)) * 0)
#elif defined(__GNUC__) || defined(__clang__)
#define RINGBUF_TRACE__IS_ARRAY(a) \
	(sizeof(struct { int not_an_array : 1 - 2 * __builtin_types_compatible_p(__typeof__(a), __typeof__(&(a)[0])); }) * 0)
#else
#define RINGBUF_TRACE__IS_ARRAY(a) 0
#endif
#define RINGBUF_TRACE_REGISTER_ARRAY(reg, array)                                          \
	ringbuf_trace_register_events((reg), (array),                                      \
				      sizeof(array) / sizeof((array)[0]) + RINGBUF_TRACE__IS_ARRAY(array))
/** Enable / disable the events whose name matches glob (`*`, `?`, `[...]`, `\`);
 * a glob containing '/' is matched against "system/name". Returns the number of
 * events matched. Safe while writers emit (takes effect at their next event). */
RINGBUF_API int ringbuf_trace_enable(struct ringbuf_trace_registry *reg, const char *glob);
RINGBUF_API int ringbuf_trace_disable(struct ringbuf_trace_registry *reg, const char *glob);
RINGBUF_API bool ringbuf_trace_is_enabled(const struct ringbuf_trace_event *ev);
/** Look up an event by name or id (NULL if none). */
RINGBUF_API struct ringbuf_trace_event *ringbuf_trace_find(const struct ringbuf_trace_registry *reg,
							    const char *name);
RINGBUF_API struct ringbuf_trace_event *ringbuf_trace_find_id(const struct ringbuf_trace_registry *reg,
							       unsigned id);
/** The fnmatch-style matcher used above: `*` any run, `?` one character,
 * `[abc]`, `[a-z]`, `[!a]` sets, `\x` a literal x. True on a full match. */
RINGBUF_API bool ringbuf_trace_glob_match(const char *glob, const char *s);
/** The event's description in tracefs `format` syntax (name, ID, the four common
 * fields, a blank line, the fields, a blank line, print fmt). snprintf-style:
 * returns the full length, writes at most size bytes (NUL-terminated). */
RINGBUF_API int ringbuf_trace_format_text(const struct ringbuf_trace_event *ev, char *buf, size_t size);

/* -- threads (all async-signal-safe) -- */

/** The calling thread's id (gettid), cached in initial-exec TLS. The first
 * call in a thread also records its name (comm) for the text output and the
 * trace.dat cmdlines. */
RINGBUF_API int32_t ringbuf_trace_thread_id(void);
/** Record comm (NULL: the thread's current name, from PR_GET_NAME) as the
 * calling thread's name. Call it after renaming a thread that already emitted. */
RINGBUF_API void ringbuf_trace_thread_name(const char *comm);
/** Forget the cached thread id (in the child after fork()). */
RINGBUF_API void ringbuf_trace_thread_reset(void);
/** Copy the last name recorded for pid into buf (up to 16 bytes with the NUL).
 * Returns true if one was recorded; otherwise buf is "<...>". */
RINGBUF_API bool ringbuf_trace_comm(int32_t pid, char *buf, size_t size);
/** Mark the calling thread as inside a signal handler (call at handler entry and
 * exit, like the kernel's irq_enter/irq_exit): events emitted in between carry
 * the HARDIRQ (depth 2) or NMI (deeper) context even when they interrupted no writer. */
RINGBUF_API void ringbuf_trace_signal_enter(void);
RINGBUF_API void ringbuf_trace_signal_exit(void);

/* -- what the generated emitters call -- */

/** The bit of ringbuf_trace_event.state saying that a filter is attached
 * (the id is the low 16 bits). */
#define RINGBUF_TRACE__FILTERED 0x10000u
/** Evaluate ev's filter on the filled record rec (len bytes, reserved on
 * rb's cpu) and fire its triggers: 1 to commit it, 0 to ringbuf_discard()
 * it; RINGBUF_TRACE__F_DONE | keep when a trigger that runs after the commit
 * (stacktrace, snapshot) fired: the record was committed (or discarded) and
 * those triggers ran. Async-signal-safe (>>filter). */
#define RINGBUF_TRACE__F_DONE 2
RINGBUF_API int ringbuf_trace__filter_keep(struct ringbuf *rb, unsigned cpu, struct ringbuf_trace_event *ev,
					   void *rec, size_t len);
/** Reserve len bytes on cpu and fill the common fields with type id. Returns
 * the record or NULL (dropped, counted by the buffer). Async-signal-safe. */
RINGBUF_API void *ringbuf_trace__reserve(struct ringbuf *rb, unsigned cpu, uint32_t id, size_t len);

static inline uint32_t ringbuf_trace__slen(const char *s)
{
	uint32_t n = 0;
	if (!s)
		return 6; /* "(null)" */
	while (n < RINGBUF_TRACE_STR_MAX - 1 && s[n])
		n++;
	return n;
}
static inline void ringbuf_trace__copy_chars(char *dst, const char *src, size_t size)
{
	size_t i = 0;
	if (!src)
		src = "(null)";
	for (; i + 1 < size && src[i]; i++)
		dst[i] = src[i];
	for (; i < size; i++)
		dst[i] = 0;
}
static inline void ringbuf_trace__copy_array(void *dst, const void *src, size_t size)
{
	if (src)
		memcpy(dst, src, size);
	else
		memset(dst, 0, size);
}
/* Store a dynamic string of n bytes (+ NUL) at off; returns the __data_loc word. */
static inline uint32_t ringbuf_trace__put_str(void *rec, uint32_t off, const char *s, uint32_t n)
{
	char *d = (char *)rec + off;
	if (!s)
		s = "(null)";
	memcpy(d, s, n);
	d[n] = 0;
	return (uint32_t)(n + 1) << 16 | off;
}
/* The string of a __data_loc word in a record of len bytes ("" if it does not fit). */
static inline const char *ringbuf_trace__get_str(const void *rec, size_t len, uint32_t loc)
{
	uint32_t off = loc & 0xffffu, n = loc >> 16;
	const char *s = (const char *)rec + off;
	if (n == 0 || off < sizeof(struct ringbuf_trace_entry) || (size_t)off + n > len || s[n - 1])
		return "";
	return s;
}

/* ---- the macro layer ---- */

#define RINGBUF_FIELDS(...) (__VA_ARGS__)
#define RINGBUF_PRINT(...) (__VA_ARGS__)
#define RINGBUF_FIELD(type, name) (RINGBUF__KINT, type, name, #type, 1)
#define RINGBUF_ARRAY(type, name, n) (RINGBUF__KARR, type, name, #type, n)
#define RINGBUF_CHARS(name, n) (RINGBUF__KCHR, char, name, "char", n)
#define RINGBUF_STRING(name) (RINGBUF__KSTR, char, name, "__data_loc char[]", 0)

/* In print arguments: the dynamic string `name` of REC (the kernel's spelling,
 * which libtraceevent understands in the print fmt). */
#ifndef __get_str
#define __get_str(name) ringbuf_trace__get_str(REC, ringbuf__len, REC->name)
#endif

#define RINGBUF_TRACE_EVENT(name, fields, print)                                   \
	RINGBUF__TEV_DECL(name, ringbuf_ev_##name, fields)                          \
	RINGBUF__TEV_DEF(name, ringbuf_ev_##name, fields, #name, #print, print)     \
	struct ringbuf__tev_end_##name /* swallows the caller's semicolon, if any */

/* preprocessor helpers */
#define RINGBUF__CAT(a, b) RINGBUF__CAT_(a, b)
#define RINGBUF__CAT_(a, b) a##b
#define RINGBUF__HEAD(k, ...) k
#define RINGBUF__REST(k, ...) __VA_ARGS__
#define RINGBUF__UNPAREN(...) __VA_ARGS__
#define RINGBUF__CALL(m, args) m args
#define RINGBUF__NARG(...) RINGBUF__NARG_(__VA_ARGS__, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, \
					 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9,  \
					 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define RINGBUF__NARG_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, \
		       a17, a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30,   \
		       a31, a32, n, ...) n
#define RINGBUF__FOREACH(m, S, fields) RINGBUF__FE_X(m, S, RINGBUF__UNPAREN fields)
#define RINGBUF__FE_X(m, S, ...) RINGBUF__FE(m, S, __VA_ARGS__)
#define RINGBUF__FE(m, S, ...) RINGBUF__CAT(RINGBUF__FE_, RINGBUF__NARG(__VA_ARGS__))(m, S, __VA_ARGS__)
#define RINGBUF__NFIELDS(fields) RINGBUF__NF_X(RINGBUF__UNPAREN fields)
#define RINGBUF__NF_X(...) RINGBUF__NARG(__VA_ARGS__)
#define RINGBUF__FE_1(m, S, a) m(S, a)
#define RINGBUF__FE_2(m, S, a, ...) m(S, a) RINGBUF__FE_1(m, S, __VA_ARGS__)
#define RINGBUF__FE_3(m, S, a, ...) m(S, a) RINGBUF__FE_2(m, S, __VA_ARGS__)
#define RINGBUF__FE_4(m, S, a, ...) m(S, a) RINGBUF__FE_3(m, S, __VA_ARGS__)
#define RINGBUF__FE_5(m, S, a, ...) m(S, a) RINGBUF__FE_4(m, S, __VA_ARGS__)
#define RINGBUF__FE_6(m, S, a, ...) m(S, a) RINGBUF__FE_5(m, S, __VA_ARGS__)
#define RINGBUF__FE_7(m, S, a, ...) m(S, a) RINGBUF__FE_6(m, S, __VA_ARGS__)
#define RINGBUF__FE_8(m, S, a, ...) m(S, a) RINGBUF__FE_7(m, S, __VA_ARGS__)
#define RINGBUF__FE_9(m, S, a, ...) m(S, a) RINGBUF__FE_8(m, S, __VA_ARGS__)
#define RINGBUF__FE_10(m, S, a, ...) m(S, a) RINGBUF__FE_9(m, S, __VA_ARGS__)
#define RINGBUF__FE_11(m, S, a, ...) m(S, a) RINGBUF__FE_10(m, S, __VA_ARGS__)
#define RINGBUF__FE_12(m, S, a, ...) m(S, a) RINGBUF__FE_11(m, S, __VA_ARGS__)
#define RINGBUF__FE_13(m, S, a, ...) m(S, a) RINGBUF__FE_12(m, S, __VA_ARGS__)
#define RINGBUF__FE_14(m, S, a, ...) m(S, a) RINGBUF__FE_13(m, S, __VA_ARGS__)
#define RINGBUF__FE_15(m, S, a, ...) m(S, a) RINGBUF__FE_14(m, S, __VA_ARGS__)
#define RINGBUF__FE_16(m, S, a, ...) m(S, a) RINGBUF__FE_15(m, S, __VA_ARGS__)
#define RINGBUF__FE_17(m, S, a, ...) m(S, a) RINGBUF__FE_16(m, S, __VA_ARGS__)
#define RINGBUF__FE_18(m, S, a, ...) m(S, a) RINGBUF__FE_17(m, S, __VA_ARGS__)
#define RINGBUF__FE_19(m, S, a, ...) m(S, a) RINGBUF__FE_18(m, S, __VA_ARGS__)
#define RINGBUF__FE_20(m, S, a, ...) m(S, a) RINGBUF__FE_19(m, S, __VA_ARGS__)
#define RINGBUF__FE_21(m, S, a, ...) m(S, a) RINGBUF__FE_20(m, S, __VA_ARGS__)
#define RINGBUF__FE_22(m, S, a, ...) m(S, a) RINGBUF__FE_21(m, S, __VA_ARGS__)
#define RINGBUF__FE_23(m, S, a, ...) m(S, a) RINGBUF__FE_22(m, S, __VA_ARGS__)
#define RINGBUF__FE_24(m, S, a, ...) m(S, a) RINGBUF__FE_23(m, S, __VA_ARGS__)
#define RINGBUF__FE_25(m, S, a, ...) m(S, a) RINGBUF__FE_24(m, S, __VA_ARGS__)
#define RINGBUF__FE_26(m, S, a, ...) m(S, a) RINGBUF__FE_25(m, S, __VA_ARGS__)
#define RINGBUF__FE_27(m, S, a, ...) m(S, a) RINGBUF__FE_26(m, S, __VA_ARGS__)
#define RINGBUF__FE_28(m, S, a, ...) m(S, a) RINGBUF__FE_27(m, S, __VA_ARGS__)
#define RINGBUF__FE_29(m, S, a, ...) m(S, a) RINGBUF__FE_28(m, S, __VA_ARGS__)
#define RINGBUF__FE_30(m, S, a, ...) m(S, a) RINGBUF__FE_29(m, S, __VA_ARGS__)
#define RINGBUF__FE_31(m, S, a, ...) m(S, a) RINGBUF__FE_30(m, S, __VA_ARGS__)
#define RINGBUF__FE_32(m, S, a, ...) m(S, a) RINGBUF__FE_31(m, S, __VA_ARGS__)

/* Per-field expansion: a field is (kind, type, name, "type", n); the kind picks
 * RINGBUF__<phase>_<kind>(S, type, name, typestr, n). */
#define RINGBUF__DISPATCH(phase, S, t) \
	RINGBUF__CALL(RINGBUF__CAT(phase, RINGBUF__HEAD t), (S, RINGBUF__REST t))
#define RINGBUF__P_TYPE(S, t) RINGBUF__DISPATCH(RINGBUF__TYPE_, S, t)
#define RINGBUF__P_MEMBER(S, t) RINGBUF__DISPATCH(RINGBUF__MEMBER_, S, t)
#define RINGBUF__P_PARAM(S, t) RINGBUF__DISPATCH(RINGBUF__PARAM_, S, t)
#define RINGBUF__P_PREP(S, t) RINGBUF__DISPATCH(RINGBUF__PREP_, S, t)
#define RINGBUF__P_FILL(S, t) RINGBUF__DISPATCH(RINGBUF__FILL_, S, t)
#define RINGBUF__P_DESC(S, t) RINGBUF__DISPATCH(RINGBUF__DESC_, S, t)

/* Integers wider than 4 bytes are 4-byte aligned, like the payloads: each
 * field gets a typedef with at most 4-byte alignment (GCC and clang allow a
 * typedef to lower alignment; accesses through it are unaligned-safe). */
#define RINGBUF__ATYPE(type) __attribute__((aligned(sizeof(type) < 4 ? sizeof(type) : 4)))
/* Signedness without a tautological comparison warning. */
#define RINGBUF__SIGNED(type) ((type)-1 < (type)1)

#define RINGBUF__TYPE_RINGBUF__KINT(S, type, name, ts, n) typedef type S##__##name RINGBUF__ATYPE(type);
#define RINGBUF__TYPE_RINGBUF__KARR(S, type, name, ts, n) typedef type S##__##name RINGBUF__ATYPE(type);
#define RINGBUF__TYPE_RINGBUF__KCHR(S, type, name, ts, n)
#define RINGBUF__TYPE_RINGBUF__KSTR(S, type, name, ts, n)

#define RINGBUF__MEMBER_RINGBUF__KINT(S, type, name, ts, n) S##__##name name;
#define RINGBUF__MEMBER_RINGBUF__KARR(S, type, name, ts, n) S##__##name name[n];
#define RINGBUF__MEMBER_RINGBUF__KCHR(S, type, name, ts, n) char name[n];
#define RINGBUF__MEMBER_RINGBUF__KSTR(S, type, name, ts, n) uint32_t name;

#define RINGBUF__PARAM_RINGBUF__KINT(S, type, name, ts, n) , type name
#define RINGBUF__PARAM_RINGBUF__KARR(S, type, name, ts, n) , const type *name
#define RINGBUF__PARAM_RINGBUF__KCHR(S, type, name, ts, n) , const char *name
#define RINGBUF__PARAM_RINGBUF__KSTR(S, type, name, ts, n) , const char *name

#define RINGBUF__PREP_RINGBUF__KINT(S, type, name, ts, n)
#define RINGBUF__PREP_RINGBUF__KARR(S, type, name, ts, n)
#define RINGBUF__PREP_RINGBUF__KCHR(S, type, name, ts, n)
#define RINGBUF__PREP_RINGBUF__KSTR(S, type, name, ts, n)               \
	const uint32_t ringbuf__l_##name = ringbuf_trace__slen(name); \
	ringbuf__dyn += ringbuf__l_##name + 1;

#define RINGBUF__FILL_RINGBUF__KINT(S, type, name, ts, n) REC->name = name;
#define RINGBUF__FILL_RINGBUF__KARR(S, type, name, ts, n) \
	ringbuf_trace__copy_array((void *)REC->name, name, sizeof REC->name);
#define RINGBUF__FILL_RINGBUF__KCHR(S, type, name, ts, n) \
	ringbuf_trace__copy_chars(REC->name, name, sizeof REC->name);
#define RINGBUF__FILL_RINGBUF__KSTR(S, type, name, ts, n)                                \
	REC->name = ringbuf_trace__put_str(REC, ringbuf__off, name, ringbuf__l_##name); \
	ringbuf__off += ringbuf__l_##name + 1;

#define RINGBUF__DESC_RINGBUF__KINT(S, type, name, ts, n)                                   \
	{ ts, #name, (uint32_t)offsetof(struct S, name), (uint32_t)sizeof(((struct S *)0)->name), \
	  1, RINGBUF__SIGNED(type), RINGBUF_TRACE_FIELD_INT },
#define RINGBUF__DESC_RINGBUF__KARR(S, type, name, ts, n)                                   \
	{ ts, #name, (uint32_t)offsetof(struct S, name), (uint32_t)sizeof(((struct S *)0)->name), \
	  (uint32_t)(n), RINGBUF__SIGNED(type), RINGBUF_TRACE_FIELD_ARRAY },
#define RINGBUF__DESC_RINGBUF__KCHR(S, type, name, ts, n)                                   \
	{ ts, #name, (uint32_t)offsetof(struct S, name), (uint32_t)sizeof(((struct S *)0)->name), \
	  (uint32_t)(n), 0, RINGBUF_TRACE_FIELD_CHARS },
#define RINGBUF__DESC_RINGBUF__KSTR(S, type, name, ts, n) \
	{ ts, #name, (uint32_t)offsetof(struct S, name), 4, 0, 0, RINGBUF_TRACE_FIELD_STRING },

/* Declarations: every file. With RINGBUF_STATIC the descriptor has internal
 * linkage like the functions (two static copies of the library in one program
 * may define the same event name); its declaration is then a tentative
 * definition, completed by RINGBUF_TRACE_DEFINE_EVENTS in the same file. */
#if defined(RINGBUF_STATIC) && defined(__cplusplus)
/* C++ has no tentative definitions (the declaration would be the definition) */
#define RINGBUF__TEV_LINKAGE                                                                   \
	static_assert(sizeof(int) == 0, "RINGBUF_TRACE_EVENT with RINGBUF_STATIC is C only: " \
		      "in C++ define the events without RINGBUF_STATIC");                    \
	static
#elif defined(RINGBUF_STATIC)
#define RINGBUF__TEV_LINKAGE static
#else
#define RINGBUF__TEV_LINKAGE extern
#endif
#ifdef RINGBUF_STATIC
#define RINGBUF__TEV_DEF_LINKAGE static
#else
#define RINGBUF__TEV_DEF_LINKAGE
#endif
#define RINGBUF__TEV_DECL(name, S, fields)                                                       \
	RINGBUF__FOREACH(RINGBUF__P_TYPE, S, fields)                                             \
	struct S {                                                                               \
		struct ringbuf_trace_entry ent;                                                  \
		RINGBUF__FOREACH(RINGBUF__P_MEMBER, S, fields)                                   \
	};                                                                                       \
	RINGBUF__TEV_LINKAGE struct ringbuf_trace_event ringbuf_event_##name;                    \
	static inline __attribute__((unused)) int RINGBUF__CAT(RINGBUF_TRACE_EMIT_PREFIX, name)( \
		struct ringbuf *ringbuf__b, unsigned ringbuf__c RINGBUF__FOREACH(RINGBUF__P_PARAM, S, fields)) \
	{                                                                                        \
		const uint32_t ringbuf__id =                                                     \
			RINGBUF__LOAD_RELAXED(&ringbuf_event_##name.state);                      \
		size_t ringbuf__dyn = 0;                                                         \
		uint32_t ringbuf__off = (uint32_t)sizeof(struct S);                              \
		struct S *REC;                                                                   \
		if (__builtin_expect(ringbuf__id == 0, 1))                                      \
			return 0;                                                                \
		RINGBUF__FOREACH(RINGBUF__P_PREP, S, fields)                                     \
		REC = (struct S *)ringbuf_trace__reserve(ringbuf__b, ringbuf__c, ringbuf__id,    \
							 sizeof(struct S) + ringbuf__dyn);       \
		if (!REC)                                                                        \
			return RINGBUF_ENOSPC;                                                   \
		RINGBUF__FOREACH(RINGBUF__P_FILL, S, fields)                                     \
		(void)ringbuf__off;                                                              \
		if (__builtin_expect(ringbuf__id >= RINGBUF_TRACE__FILTERED, 0)) {              \
			int ringbuf__k = ringbuf_trace__filter_keep(ringbuf__b, ringbuf__c,      \
								    &ringbuf_event_##name, REC,  \
								    sizeof(struct S) + ringbuf__dyn); \
			if (ringbuf__k != 1) {                                                   \
				if (ringbuf__k == 0)                                             \
					ringbuf_discard(ringbuf__b, ringbuf__c, REC);            \
				return ringbuf__k & 1; /* F_DONE: done by the triggers */        \
			}                                                                        \
		}                                                                                \
		ringbuf_commit(ringbuf__b, ringbuf__c, REC);                                     \
		return 1;                                                                        \
	}

/* Definitions: the file with RINGBUF_TRACE_DEFINE_EVENTS (switched below, outside
 * the include guard, at every inclusion). */
#define RINGBUF__TEV_DEF_ON(name, S, fields, namestr, printstr, print)                          \
	static const struct ringbuf_trace_field ringbuf__fields_##name[] = {                    \
		RINGBUF__FOREACH(RINGBUF__P_DESC, S, fields)};                                  \
	static int ringbuf__print_##name(char *ringbuf__buf, size_t ringbuf__size,              \
					 const void *ringbuf__rec, size_t ringbuf__len)         \
	{                                                                                       \
		const struct S *REC = (const struct S *)ringbuf__rec;                           \
		(void)REC;                                                                      \
		(void)ringbuf__len;                                                             \
		return snprintf(ringbuf__buf, ringbuf__size, RINGBUF__UNPAREN print);           \
	}                                                                                       \
	RINGBUF__TEV_DEF_LINKAGE struct ringbuf_trace_event ringbuf_event_##name = {            \
		0, 0, (uint16_t)RINGBUF__NFIELDS(fields), namestr, ringbuf__fields_##name,      \
		sizeof(struct S), printstr, ringbuf__print_##name, NULL, NULL, NULL};

/* ==== >>filter ========================================================== *
 *
 * Per-event filters and triggers in the kernel's syntax (tracefs
 * events/<sys>/<event>/filter and trigger), set, replaced and cleared at run
 * time while writers emit. The emitter fills
 * the reserved record, then (only when a filter is attached) evaluates the
 * compiled program on it and commits it or ringbuf_discard()s it: the kernel's
 * sequence, so a discarded event leaves no trace but the buffer's `discarded`
 * count.
 *
 *   ringbuf_trace_set_filter(&reg, "sched_*", "prev_pid > 100 && comm ~ \"w*\"", &err);
 *
 * SYNTAX
 *   expr  := expr '||' expr | expr '&&' expr | '!' expr | '(' expr ')' | pred
 *   pred  := field op value       && binds tighter than ||; ! tightest
 *   integer fields (RINGBUF_FIELD, common_type, common_flags,
 *     common_preempt_count, common_pid):  == != < <= > >= &
 *     (`f & v` is true when f & v is not 0); values in decimal, 0x hex or 0
 *     octal, a leading '-' for signed fields; compared in the field's own
 *     signedness over 64 bits.
 *   string fields (RINGBUF_CHARS, RINGBUF_STRING):  == != ~
 *     (`~` is a glob: * ? [...] as in ringbuf_trace_glob_match()); values
 *     "double" or 'single' quoted (no escapes), or a bare word.
 *   RINGBUF_ARRAY fields cannot be filtered on (as in the kernel).
 *   Limits: text up to 4096 bytes, 64 predicates, parentheses 32 deep.
 *
 * BAD TEXT. ringbuf_trace_set_filter() compiles the text for every event the
 * glob matches before it changes anything: one error and no event's filter
 * changes; err (optional) gets the event, the byte position in the text and a
 * message ("pos 7: unknown field 'pdi'").
 *
 * COST. No filter: the emitter tests one bit of the state word it already
 * loaded (one predictable branch). With a filter: one out-of-line call
 * (ringbuf_trace__filter_keep: a leaf for a one-predicate integer filter, the
 * interpreter otherwise), two stores to the thread's slot word around the
 * evaluation and a compiler barrier; no atomic read-modify-write, no lock, no
 * allocation. A false filter costs a ringbuf_discard() instead of the commit.
 * `make bench` (bench/bench_filter.c) measures all of these against the
 * emitter without a filter.
 *
 * >>design: filter programs and the writers (grace period)
 *   Each event has one pointer to its program (ev->filter, NULL: none; the
 *   compiled filter and the triggers with their own filters) and one
 *   state bit (RINGBUF_TRACE__FILTERED, in the word the emitter loads anyway).
 *   A writer's evaluation is a read-side section on a per-thread slot word
 *   (depth in the low 8 bits, a generation above, written only by the thread
 *   and the signal handlers that interrupt it; slots are claimed from a static
 *   table the first time a thread evaluates a filter):
 *     F1  w = load(slot, relaxed); store(slot, w + 1, relaxed)   enter
 *         (a handler between the two runs a whole section and puts back what
 *         it found, so the store is still right for this thread)
 *     F2  atomic_signal_fence(seq_cst): the light side of the asymmetric
 *         fence with S2 (orders F1 before F3 in this thread)
 *     F3  p = load(ev->filter, acquire)        pairs with S1's release
 *     F4  keep = !p || run(p's filter, record); fire p's triggers whose own
 *         filter holds (counts: CAS on the trigger's count in *p)
 *     F5  store(slot, depth(w) ? w : w - depth + one generation, release)
 *         leave; pairs with S3's acquire: the reads of *p happen before it
 *     F6  the emitter commits or ringbuf_discard()s the record (after the
 *         section: p is not used any more); F6' instead, when a post-commit
 *         trigger fired in F4 (stacktrace, snapshot): the section's slow path
 *         commits or discards after F5, then runs them with values copied
 *         out of p in F4 (the snapshot pointer, the stacktrace flag: p may be
 *         freed by then), and tells the emitter it is done
 *   A setter (serialized by a mutex and the registry lock; ordinary threads):
 *     S0  compile every new program first (nothing published on an error);
 *         a program carries the event's filter and its triggers, so setting
 *         one rebuilds the other from the current program (trigger counts
 *         copied as they are then)
 *     S1  old = exchange(ev->filter, new, seq_cst); then the state word's
 *         FILTERED bit follows (seq_cst CAS, only while enabled; see
 *         ringbuf_trace__set_state for the race with enable_event triggers),
 *         for every event matched
 *     S2  membarrier(PRIVATE_EXPEDITED): every thread of the process runs a
 *         full barrier (a seq_cst fence) between S2's start and its return
 *     S3  for every claimed slot: load(slot, acquire) until its depth is 0 or
 *         its generation moved on from the first value read (the section seen
 *         in flight ended; nested handler sections keep the generation)
 *     S4  free the old programs
 *   Why no writer can hold a freed program: take a section that loaded old
 *   at F3. F3 read-before S1 in old's modification order. S2's barrier runs
 *   in the writer's thread at some point: if after F1's store, S3 (after S2)
 *   reads F1's store or a later one, sees depth >= 1 and waits for F5 (or a
 *   later generation, only stored at the outermost F5 of that section or a
 *   later one); if before F1's store, that barrier is a seq_cst fence Y
 *   sequenced before F3, and S2 begins with a full barrier X in the setter,
 *   S1 sequenced before X, X before Y in the total order S: by C11 7.17.4
 *   (fences: A sequenced before X, Y sequenced before B, X precedes Y in S),
 *   F3 takes S1's value or a later one: not old. F5's release / S3's acquire
 *   then order the section's reads of *old before S4's free. (membarrier is
 *   outside C11; it is taken as the fence Y in every thread, as ringbuf.h's
 *   [BARRIER].)
 *   Fallbacks. A thread that finds the slot table full uses one shared word
 *   with seq_cst fetch_add/fetch_sub (RMWs: no barrier needed; S3 waits for
 *   it to be 0). Where membarrier() is missing or refused (not Linux, old
 *   kernels, seccomp) and where S3 waited more than about a second (a thread
 *   stopped inside a section), the old programs are kept, never freed (a
 *   bounded leak per replacement; ringbuf_trace_set_filter still succeeds).
 *   Slots are not given back at thread exit: a thread that finds none free
 *   takes over one whose thread is gone (tgkill(pid, tid, 0) == ESRCH); the
 *   fork child forgets its slot (atfork, with the thread id).
 */

/** Where a filter text went wrong (ringbuf_trace_set_filter, ringbuf_trace_filter_eval). */
struct ringbuf_trace_filter_error {
	int pos;        /* byte offset in the text, -1 when the error is not at a position */
	char event[64]; /* the event the text was compiled for ("" if none) */
	char msg[160];  /* "pos 7: unknown field 'pdi'" */
};

/** Set the filter of every event of reg matching glob (as ringbuf_trace_enable)
 * to filter; NULL, "" (or only blanks) or "0" clears it. All or nothing: the
 * text is compiled for every matched event first; on an error nothing changes,
 * err gets the first error and RINGBUF_EINVAL is returned (RINGBUF_ENOMEM when
 * memory runs out). Returns the number of events changed. Safe while writers
 * emit, in threads and signal handlers (an event being written while the
 * filter changes gets the old or the new filter). Not async-signal-safe. */
RINGBUF_API int ringbuf_trace_set_filter(struct ringbuf_trace_registry *reg, const char *glob,
					 const char *filter, struct ringbuf_trace_filter_error *err);
/** The filter text of ev as set (without surrounding blanks); "none" when ev
 * has none, like tracefs. snprintf-style: returns the full length. */
RINGBUF_API int ringbuf_trace_get_filter(const struct ringbuf_trace_event *ev, char *buf, size_t size);
/** Compile filter for ev and evaluate it once on the record rec (len bytes,
 * common fields included): 1 true, 0 false, RINGBUF_EINVAL (err filled) or
 * RINGBUF_ENOMEM. For tools and tests; changes nothing. */
RINGBUF_API int ringbuf_trace_filter_eval(const struct ringbuf_trace_event *ev, const char *filter,
					  const void *rec, size_t len,
					  struct ringbuf_trace_filter_error *err);
/** Add a trigger to every event of reg matching glob, in the kernel's syntax
 * (tracefs events/<sys>/<event>/trigger):
 *     traceoff[:count] [if filter]        ringbuf_record_off() on the buffer written
 *     traceon[:count] [if filter]         ringbuf_record_on()
 *     enable_event:[system:]event[:count] [if filter]    enable another event
 *     disable_event:[system:]event[:count] [if filter]   disable it
 *     snapshot[:count] [if filter]        ringbuf_trace_snapshot() of the snapshot
 *                                         attached to reg (>>snapshot; an error
 *                                         when none is), after the commit
 *     stacktrace[:count] [if filter]      a kernel_stack event with the writer's
 *                                         return addresses, after the commit
 * A trigger fires when an event it is on is written (after the fields are
 * filled, before the commit; whether or not the event's own filter keeps
 * it) and its filter (same syntax as the event filter) holds on the record;
 * with a count it fires that many times (exactly, whatever the nesting), then
 * stays. traceoff fires before the triggering event is committed, so that
 * event is the last one of its CPU buffer except for writers already past the
 * buffer's on/off check: the writers its signal handler interrupted (at most
 * one event per interrupted level, right after it) and writers on other CPUs
 * (as with the kernel's ring_buffer_record_off()). The same
 * action (and target) set again replaces the old trigger; "!action..." removes
 * it (count and filter ignored). snapshot and stacktrace run after the
 * triggering event is committed (as the kernel's post-call triggers), so
 * the stack event follows it and the snapshot holds it (>>snapshot). At most 8 triggers per event. Returns the
 * number of events changed; errors as ringbuf_trace_set_filter (positions in
 * the trigger text), nothing changed. Same contexts as ringbuf_trace_set_filter;
 * the triggers fire in the emitters (async-signal-safe). */
RINGBUF_API int ringbuf_trace_set_trigger(struct ringbuf_trace_registry *reg, const char *glob,
					  const char *trigger, struct ringbuf_trace_filter_error *err);
/** The triggers of ev, one a line ("traceoff:2 if v > 5", the count left or
 * "unlimited"; "" when none). snprintf-style: returns the full length. */
RINGBUF_API int ringbuf_trace_get_triggers(const struct ringbuf_trace_event *ev, char *buf, size_t size);
#ifdef RINGBUF_TESTING
/** Tests: behave as without membarrier (no_membarrier != 0); *kept (if not
 * NULL) gets the number of replaced programs kept unfreed so far. */
RINGBUF_API void ringbuf_trace__filter_testing(int no_membarrier, unsigned *kept);
#endif

/* ==== >>snapshot ======================================================== *
 *
 * A snapshot is a copy of a buffer's committed events, taken while its
 * writers go on (the kernel's `snapshot` file and trigger; the kernel swaps
 * the per-CPU buffer with a spare one, this library copies into one):
 *
 *   ringbuf_trace_snapshot_create(rb, &snap);          set-up: allocates the copy
 *   ringbuf_trace_snapshot_attach(&reg, snap);         for the `snapshot` trigger
 *   ringbuf_trace_set_trigger(&reg, "error_ev", "snapshot:1", &err);
 *   ... writers emit; the first error_ev takes the snapshot ...
 *   ringbuf_trace_save_tracedat(ringbuf_trace_snapshot_buffer(snap), &reg, "snap.dat", NULL);
 *
 * The snapshot buffer is an ordinary buffer of the source's geometry (ncpu,
 * page size, two pages more per CPU, producer/consumer mode, the source's
 * clock name; a TSC source's stamps are copied as nanoseconds, name "mono"):
 * read it, print it or export it like any other. Each event keeps its CPU,
 * payload and time stamp. Each snapshot replaces the previous one.
 *
 * WHAT IT HOLDS. Per CPU, a run of complete events in the order written:
 * everything committed, not consumed and stamped no later than the moment
 * the copy of that CPU began, from the oldest event still there (a clock that
 * stands still lets later events in; a clock's stamps that go back on a CPU
 * end the copy early). Events that writers overwrote (overwrite
 * mode) while the copy walked that CPU are not in it and are counted (`lost`:
 * what ringbuf.h's iterator reports skipped, so it may include overwritten
 * events stamped after the limit);
 * events the snapshot buffer could not take are counted (`dropped`). A CPU
 * whose reader lock a consumer held is left out and counted (`cpus_skipped`):
 * the snapshot never waits. So is, from where its walk got to, a CPU of an
 * overwrite-mode source whose head push stays claimed and not yet counted
 * through 8 tries with a sched_yield() between them: a writer the snapshot
 * interrupted mid push (a trigger in a signal handler), or a writer thread
 * preempted there on a loaded machine (RINGBUF_TRACE__SNAP_RETRIES). The trigger runs after the commit of its event, so
 * the snapshot holds it, unless that writer is nested (a signal handler) in
 * a writer of the same CPU buffer that it interrupted mid-event: then the
 * events of both are committed only when the interrupted writer commits, after
 * the snapshot (the events before them are in it).
 *
 * CONTEXTS. ringbuf_trace_snapshot() is async-signal-safe and never blocks
 * the writers: it is a reader (ringbuf.h's non-consuming iterator, set up at
 * create in the snapshot's own memory, NOWAIT) of the source and the only
 * writer of the snapshot buffer. One snapshot at a time: a call that finds
 * one in progress (another thread, or a signal handler that interrupted it)
 * returns RINGBUF_EBUSY at once and is counted (`busy`; a `snapshot:N`
 * trigger that fired into a refused snapshot has still used one of its N). Its ringbuf_reset()
 * of the snapshot buffer uses membarrier(2) (a system call, async-signal-safe)
 * and may wait for another thread's reader call on the snapshot buffer (T2).
 * Create, destroy and attach are for ordinary threads; destroy a snapshot only
 * once no trigger names it (remove the triggers) and no call runs.
 *
 * >>design: a snapshot (ringbuf_trace_snapshot)
 *   T1  busy: CAS 0 -> 1 (acquire; pairs with T5's release: the previous
 *       snapshot's writes to the snapshot buffer and stats happen before this
 *       one's). Failed: busy++ (relaxed), RINGBUF_EBUSY.
 *   T2  ringbuf_reset(snapshot buffer): no writer of it is in flight (only the
 *       holder of busy writes it), so this only waits for its readers' calls.
 *   T3  per CPU c: limit = ringbuf_time_stamp(source) (the clock now: the
 *       copy ends at the first event stamped later, so writers that keep
 *       writing cannot keep it going; per CPU the stamps do not go back);
 *       ringbuf_iter_init_in(scratch, c, NOWAIT): the reader-side
 *       page protocol of ringbuf.h's iterator (copy the record out of the page,
 *       then check the page's update count with an acquire fence: a seqlock
 *       read; a page reused under the copy restarts the walk at the oldest
 *       event and counts what was overwritten). The writers of the source take
 *       no lock and see no change: the iterator only loads their words.
 *   T4  for each event handed out: stamp = its time stamp (the snapshot
 *       buffer's clock reads it: a plain field, single writer), ringbuf_write()
 *       to the snapshot buffer's CPU c; rec.lost adds to `lost`, a refused
 *       write to `dropped`; the end of what is committed ends CPU c.
 *   T5  stats (relaxed stores), then busy = 0 (release).
 *   Why every event in the snapshot is complete: T3 hands out only records
 *   below the page's commit (acquire load; pairs with the writer's release
 *   commit: the record's bytes happen before) whose copy the page's update
 *   count validated: the writer bumps it at U1 and issues a release fence
 *   before it writes the page again; the iterator loads the count (acquire)
 *   before the copy, and after the copy issues an acquire fence and loads it
 *   again. If the copy read any byte of the reuse, that byte's store comes
 *   after the release fence, so (C11 7.17.4, fence-fence synchronization)
 *   U1 happens before the second load, which then sees the bump (or a later
 *   value) and the copy is thrown away (ringbuf.h, >>reader, non-consuming
 *   iterator). The writers of the source are never waited for and never
 *   see the snapshot: it stores to nothing of theirs but the reader lock
 *   word, which they do not read.
 *   Why it never blocks: T1 is one CAS; T3 is one CAS on the reader lock
 *   (NOWAIT); the iterator's loops are bounded (EAGAIN after its limit,
 *   RINGBUF_TRACE__SNAP_RETRIES tries, then the CPU is skipped and counted);
 *   T2's ringbuf_reset has no writer to wait for (busy excludes them) and
 *   waits at most for a reader call on the snapshot buffer made by another
 *   thread (ringbuf.h's reader lock: a few microseconds, or its bound of about
 *   half a second if that reader is preempted holding it; then RINGBUF_EBUSY
 *   and nothing copied). That is the one wait: read the snapshot buffer once
 *   no snapshot can fire (the trigger's count spent or removed) to avoid it.
 *   RINGBUF_TESTING: ringbuf_trace__snapshot_testing() installs a hook called
 *   at each step, with the step's number, so tests cut in there.
 */

struct ringbuf_trace_snapshot;

/** Counters of a snapshot (ringbuf_trace_snapshot_stats). The last four
 * describe the last snapshot taken. */
struct ringbuf_trace_snapshot_stats {
	uint64_t taken;        /* snapshots taken */
	uint64_t busy;         /* requests refused: one was in progress */
	uint64_t events;       /* events copied */
	uint64_t lost;         /* events of the source overwritten while the copy walked */
	uint64_t dropped;      /* events the snapshot buffer refused */
	uint64_t cpus_skipped; /* CPUs left out (reader lock held, or a walk that could not finish) */
};

/** A snapshot of src: allocates the snapshot buffer and the scratch memory
 * of the copy. Returns 0, RINGBUF_EINVAL or RINGBUF_ENOMEM. */
RINGBUF_API int ringbuf_trace_snapshot_create(struct ringbuf *src, struct ringbuf_trace_snapshot **out);
/** Free it (NULL: nothing). Not while a trigger names it or a call runs. */
RINGBUF_API void ringbuf_trace_snapshot_destroy(struct ringbuf_trace_snapshot *snap);
/** The snapshot buffer: read, print or export it like any buffer. */
RINGBUF_API struct ringbuf *ringbuf_trace_snapshot_buffer(struct ringbuf_trace_snapshot *snap);
/** Take a snapshot now (T1-T5 above). Returns the number of events copied,
 * RINGBUF_EBUSY (one in progress, counted; or a reader of the snapshot buffer
 * kept it from being emptied), RINGBUF_ESYS (no membarrier: the snapshot
 * buffer cannot be emptied while readers may run) or RINGBUF_EINVAL; on an
 * error nothing was copied. Async-signal-safe. */
RINGBUF_API int ringbuf_trace_snapshot(struct ringbuf_trace_snapshot *snap);
/** Its counters (relaxed loads; exact once no snapshot runs). */
RINGBUF_API void ringbuf_trace_snapshot_stats(const struct ringbuf_trace_snapshot *snap,
					      struct ringbuf_trace_snapshot_stats *st);
/** The snapshot the `snapshot` triggers of reg take (set before setting them:
 * a trigger keeps the snapshot it was set with; NULL detaches). */
RINGBUF_API int ringbuf_trace_snapshot_attach(struct ringbuf_trace_registry *reg,
					      struct ringbuf_trace_snapshot *snap);

/* STACK TRACES. ringbuf_trace_stacktrace() (and the `stacktrace` trigger)
 * writes the kernel's kernel_stack event of the "ftrace" system (id
 * RINGBUF_TRACE_ID_STACK): `int size` (frames) and `unsigned long caller[]`,
 * the return addresses of the calling function's callers, innermost first
 * (for the trigger: from the function that called the emitter; the emitter
 * itself first where the compiler did not inline it).
 * The export adds its format to every trace.dat; `trace-cmd report` prints it
 * as "<stack trace >" and one "=> name (address)" line per frame, with names
 * when the file carries the program's symbols (ringbuf_ftrace.h's
 * ringbuf_ftrace_save_tracedat writes them as its kallsyms).
 * How the frames are found: a frame-pointer walk (x86-64, i386, AArch64:
 * the frame record {previous frame, return address}), bounded by
 * RINGBUF_TRACE_STACK_MAX frames; each record beyond the first is read with
 * process_vm_readv(2) on the process itself (a system call: an unmapped
 * address ends the walk with EFAULT instead of a fault), and the chain must
 * go up the stack (each frame above the last, less than 1 MiB away). No
 * allocation, no lock, no glibc backtrace() (which may load libgcc_s and
 * malloc on first use): async-signal-safe. It needs the code on the stack
 * compiled with frame pointers (-fno-omit-frame-pointer; the default of
 * -O0, not of -O2 on x86-64): a frame without one is skipped or ends the walk
 * (the chain is checked, never trusted). Elsewhere, or when
 * process_vm_readv is refused (seccomp), only the first frame is recorded. */
#ifndef RINGBUF_TRACE_ID_STACK
#define RINGBUF_TRACE_ID_STACK 32004
#endif
/** The record of a kernel_stack event (caller[size] are used). */
RINGBUF__FLEX_BEGIN
struct ringbuf_trace_stack {
	struct ringbuf_trace_entry ent;
	int size;               /* frames in caller[] */
	unsigned long caller[]; /* return addresses, innermost first */
};
RINGBUF__FLEX_END
/** Write a stack event of the caller's stack to rb's cpu, skipping the skip
 * innermost frames (0: the first is the call site of ringbuf_trace_stacktrace
 * in its caller). Returns the frames recorded, or RINGBUF_ENOSPC (dropped,
 * counted by the buffer), RINGBUF_EINVAL. Async-signal-safe. */
RINGBUF_API int ringbuf_trace_stacktrace(struct ringbuf *rb, unsigned cpu, unsigned skip);
/** The kernel_stack format text for the "ftrace" system of a trace.dat. */
RINGBUF_API const char *ringbuf_trace_stack_format(void);
/* Its text, with the id, the offset of size, the offset and size of caller
 * (ringbuf_tracedat.h writes it for other word sizes). */
#define RINGBUF_TRACE__STACK_FMT                                                                       \
	"name: kernel_stack\nID: %u\nformat:\n"                                                       \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"                         \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"                         \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"                 \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"                                   \
	"\tfield:int size;\toffset:%u;\tsize:4;\tsigned:1;\n"                                          \
	"\tfield:unsigned long caller[8];\toffset:%u;\tsize:%u;\tsigned:0;\n\n"                        \
	"print fmt: \"\\t=> %%ps\\n\\t=> %%ps\\n\\t=> %%ps\\n\\t=> %%ps\\n\\t=> %%ps\\n"                     \
	"\\t=> %%ps\\n\\t=> %%ps\\n\\t=> %%ps\\n\", (void *)REC->caller[0], "                                \
	"(void *)REC->caller[1], (void *)REC->caller[2], (void *)REC->caller[3], "                     \
	"(void *)REC->caller[4], (void *)REC->caller[5], (void *)REC->caller[6], "                     \
	"(void *)REC->caller[7]\n"
#ifdef RINGBUF_TESTING
/** Tests: fn(step, ctx) at each step T1..T5 of ringbuf_trace_snapshot (T4:
 * after each event copied); NULL removes it. */
RINGBUF_API void ringbuf_trace__snapshot_testing(void (*fn)(int step, void *ctx), void *ctx);
#endif

/* ==== >>text ============================================================ *
 *
 * Lines in the kernel's `trace` file format:
 *
 *          worker-0-4242    [000] ..h1.     1.000002: tick: n=5
 *   CPU:0 [LOST 17 EVENTS]
 *
 * comm-pid, [cpu], the latency flags (irqs-off, need-resched, hardirq/NMI, the
 * context depth - 1, migrate-disable), the time stamp in seconds.microseconds
 * (clock nanoseconds / 1e9), the event name and its fields through its print
 * format. Events of ids that are not registered print as "[UNKNOWN EVENT id N]".
 */

/** Flags for the text functions. */
enum ringbuf_trace_print_flags {
	RINGBUF_TRACE_PRINT_HEADER = 1u << 0, /* start with the kernel's "# tracer: nop" header */
	RINGBUF_TRACE_PRINT_NSEC = 1u << 1,   /* 9 decimals (nanoseconds), like trace-cmd report -t */
	RINGBUF_TRACE_PRINT_RAW_TS = 1u << 2, /* the raw clock value instead of seconds */
};

/** A record's lost count when a page said "events lost" without a count. */
#define RINGBUF_TRACE_LOST_UNKNOWN UINT64_MAX

/** Format one record (from ringbuf_consume/peek, or a captured page) as one
 * line, without newline and without its lost-events line. snprintf-style. */
RINGBUF_API int ringbuf_trace_format_record(const struct ringbuf_trace_registry *reg,
					    const struct ringbuf_record *rec, unsigned flags,
					    char *buf, size_t size);
/** Consume the events of cpu (RINGBUF_ALL_CPUS: all, merged by time stamp) and
 * print them to out, lost-event lines included; at most max events (0: all).
 * Returns the number of events printed or a negative error. */
RINGBUF_API int ringbuf_trace_print(struct ringbuf *rb, const struct ringbuf_trace_registry *reg,
				    unsigned cpu, FILE *out, unsigned flags, size_t max);
/** Called once per record by the *_foreach functions; a non-zero return stops
 * the walk and is returned. rec->lost counts the events lost just before it. */
typedef int (*ringbuf_trace_record_fn)(const struct ringbuf_record *rec, void *ctx);
/** Consume the events of cpu (or all, merged by time stamp, ties by CPU
 * number) and pass each to fn; at most max events (0: all). Returns 0, fn's
 * non-zero value, or a negative error. */
RINGBUF_API int ringbuf_trace_consume_foreach(struct ringbuf *rb, unsigned cpu, size_t max,
					      ringbuf_trace_record_fn fn, void *ctx);

/* ==== >>tracedat ======================================================== *
 *
 * CAPTURE. A reader thread can take whole pages out of the buffer while the
 * writers run (ringbuf_trace_capture_read with RINGBUF_READ_FULL), as trace-cmd
 * record does; the export then writes the captured pages first, followed by
 * what is still in the buffer. Pages are kept in memory (malloc).
 *
 * EXPORT. ringbuf_trace_write_tracedat() writes a trace.dat file (version 6, or
 * 7 uncompressed) that `trace-cmd report` and KernelShark read: the kernel's
 * header_page and header_event texts, one event system (reg->system) with the
 * format of every event registered in reg, the thread names (cmdlines: this
 * process's threads, with or without reg; a loaded registry's names for a
 * buffer of another process), the trace clock, and per CPU the pages,
 * page-aligned. It CONSUMES the buffer:
 * every unread event is read out through ringbuf_read_page() (as trace-cmd
 * extract does), so stop or pause the writers first for a complete snapshot;
 * with writers running it takes what was committed (bounded) and leaves the rest.
 *
 * CLOCK. trace-cmd shows time stamps as seconds when the clock name is one it
 * knows to count nanoseconds ("mono", "local", "global", "uptime", "perf", ...)
 * and as raw numbers otherwise ("counter", "x86-tsc", custom names). Default:
 * "mono" for the buffer's default clock (CLOCK_MONOTONIC), "x86-tsc" for
 * RINGBUF_CLOCK_TSC (the pages hold cycles; the file also carries the TSC2NSEC
 * and OFFSET options with the buffer's calibration, so trace-cmd shows
 * CLOCK_MONOTONIC seconds, and raw cycles with --raw-ts), "local" for a custom
 * clock (assumed to count nanoseconds; name it "counter" otherwise).
 *
 * FILTERS. The kernel shows an event's filter in its `filter` file, not in
 * its format, and trace.dat has no block for it. The export writes the
 * filter text of every event of reg that has one (ringbuf_trace_set_filter,
 * as it is when the file is written) in an option of its own, id
 * RINGBUF_TRACE_TRACEDAT_OPT_FILTERS, in the options list (v6) or the OPTIONS
 * section (v7): pairs "event\0filter\0" in event id order; no filter, no
 * option (the file is then what it was before filters existed). trace-cmd
 * skips an option it does not know (3.1.6: the report is unchanged; `dump
 * --options` lists it as unknown); ringbuf_trace_tracedat_filters() reads the
 * filters back. ringbuf_tracedat.h's writer writes the same option (its
 * registry's filters at finish()).
 */

/* Far above trace-cmd's own option ids (0..25 as of trace-cmd 3.3). */
#define RINGBUF_TRACE_TRACEDAT_OPT_FILTERS 0x5246u

struct ringbuf_trace_capture;

/** A capture for pages of rb's geometry (ncpu, page size). Allocates. */
RINGBUF_API int ringbuf_trace_capture_create(const struct ringbuf *rb, struct ringbuf_trace_capture **out);
RINGBUF_API void ringbuf_trace_capture_destroy(struct ringbuf_trace_capture *cap);
/** Move pages from rb into cap (ringbuf_read_page, with flags, e.g.
 * RINGBUF_READ_FULL while writers run) for cpu, or every CPU with
 * RINGBUF_ALL_CPUS. Returns the number of pages taken, or a negative error.
 * One thread at a time per capture. */
RINGBUF_API int ringbuf_trace_capture_read(struct ringbuf_trace_capture *cap, struct ringbuf *rb,
					   unsigned cpu, unsigned flags);
/** Pages held for cpu, and page i of them (kernel buffer_data_page format). */
RINGBUF_API size_t ringbuf_trace_capture_pages(const struct ringbuf_trace_capture *cap, unsigned cpu);
RINGBUF_API const void *ringbuf_trace_capture_page(const struct ringbuf_trace_capture *cap,
						   unsigned cpu, size_t i);
/** Walk the captured records of cpu (or all, merged by time stamp) without
 * consuming them. Same contract as ringbuf_trace_consume_foreach(). A page
 * that says events were lost without a count gives RINGBUF_TRACE_LOST_UNKNOWN. */
RINGBUF_API int ringbuf_trace_capture_foreach(const struct ringbuf_trace_capture *cap, unsigned cpu,
					      size_t max, ringbuf_trace_record_fn fn, void *ctx);
/** ringbuf_trace_print() for captured pages (not consumed). */
RINGBUF_API int ringbuf_trace_print_capture(const struct ringbuf_trace_capture *cap,
					    const struct ringbuf_trace_registry *reg, unsigned cpu,
					    FILE *out, unsigned flags, size_t max);

/** Options for the export; zero-initialise or use RINGBUF_TRACE_TRACEDAT_INIT. */
struct ringbuf_trace_tracedat_opts {
	int version;                                /* 6 (or 0) or 7 */
	const char *clock;                          /* trace clock name, without brackets */
	const struct ringbuf_trace_capture *capture;/* pages read earlier, written first */
	unsigned flags;                             /* enum ringbuf_trace_tracedat_flags */
	/* For other layers (ringbuf_ftrace.h): the kallsyms block, "address type
	 * name\n" lines (NULL: empty), and the format texts of the "ftrace"
	 * system's events (funcgraph_entry...), a NULL-terminated array (NULL: none). */
	const char *kallsyms;
	const char *const *ftrace_formats;
};
#define RINGBUF_TRACE_TRACEDAT_INIT { 6, NULL, NULL, 0, NULL, NULL }
enum ringbuf_trace_tracedat_flags {
	RINGBUF_TRACE_TRACEDAT_NO_DRAIN = 1u << 0, /* leave the buffer alone: capture only */
};
/** Write a trace.dat file to fd (written sequentially: a pipe is fine; offsets
 * are file offsets, so fd must be at the start of the file). rb may be NULL when
 * opts->capture is given. reg gives the event formats (NULL: none; trace-cmd
 * then prints [UNKNOWN EVENT]). Consumes rb (see above). Allocates a copy of
 * the pages read from rb. Returns 0, or a negative RINGBUF_E* error
 * (RINGBUF_EINVAL for a write error; errno tells why). */
RINGBUF_API int ringbuf_trace_write_tracedat(struct ringbuf *rb, const struct ringbuf_trace_registry *reg,
					     int fd, const struct ringbuf_trace_tracedat_opts *opts);
/** The same into a file created (or truncated) at path, mode 0644. */
RINGBUF_API int ringbuf_trace_save_tracedat(struct ringbuf *rb, const struct ringbuf_trace_registry *reg,
					    const char *path, const struct ringbuf_trace_tracedat_opts *opts);
/** The event filters that a trace.dat of v6 or v7 (uncompressed options)
 * carries (FILTERS above): fn(ctx, event, filter) once per event with a
 * filter, in the file's order, until fn returns nonzero. Returns the number
 * of calls made, 0 for a file without the option (trace-cmd's own files),
 * RINGBUF_EINVAL (bad arguments), RINGBUF_ESYS (path cannot be opened or
 * read; errno) or RINGBUF_ECORRUPT (not a trace.dat this can walk: bad
 * magic, truncated, compressed v7 options, a malformed filters option). */
RINGBUF_API int ringbuf_trace_tracedat_filters(const char *path,
					       int (*fn)(void *ctx, const char *event, const char *filter),
					       void *ctx);


/* ==== >>flight ========================================================== *
 *
 * A FILE-BACKED BUFFER THAT A TOOL CAN DECODE. A buffer made with
 * ringbuf_create_file() survives its process; to print it or export it, a
 * reader (tools/ringbuf-read) needs the event formats and the thread names.
 * They are kept in the buffer's user area (cfg.user_size):
 *
 *   cfg.user_size = ringbuf_trace_user_size(&reg);    (after registering; or
 *                                                      RINGBUF_TRACE_USER_SIZE)
 *   ringbuf_create_file("app.rb", &cfg, &rb);
 *   ringbuf_trace_store_registry(rb, &reg);           (again after registering more)
 *   ... emit; a thread's name goes into the area at its first event on rb, and
 *   again after ringbuf_trace_thread_name() ...
 *
 *   reader: ringbuf_open_file("app.rb", RINGBUF_OPEN_RECOVER, &rb);
 *           ringbuf_trace_load_registry(rb, &reg);    (validated; never trusts the area)
 *           ringbuf_trace_print(rb, &reg, ...) / ringbuf_trace_write_tracedat(rb, &reg, ...)
 *           ringbuf_trace_registry_free(&reg);
 *
 * Layout of the area: a header (magic, version, writer pid and start time), a
 * table of RINGBUF_TRACE_USER_COMMS thread names (pid, comm; appended with one
 * atomic add, async-signal-safe), then the registry (system name, every event's
 * name, id, size, fields and print format) with a 64-bit FNV-1a checksum.
 *
 * A loaded registry has no compiled print functions: its text output
 * interprets the stored print format (a literal, then REC->field,
 * REC->field[i], __get_str(field) arguments, casts allowed; conversions
 * d i u x X o c s p with flags, width, precision and hh/h/l/ll/z/j/t). Other
 * argument expressions print as "?".
 */

/** Thread-name slots reserved in the user area (when the area is large enough). */
#ifndef RINGBUF_TRACE_USER_COMMS
#define RINGBUF_TRACE_USER_COMMS 256
#endif
/** A generous user area for buffers made before their events are registered. */
#define RINGBUF_TRACE_USER_SIZE ((size_t)64 << 10)

/** Bytes of user area that ringbuf_trace_store_registry() needs for reg's events
 * (registered so far) and RINGBUF_TRACE_USER_COMMS thread names. */
RINGBUF_API size_t ringbuf_trace_user_size(const struct ringbuf_trace_registry *reg);
/** Write reg's formats, the thread names known so far and the calling process's
 * pid into rb's user area. Call after registering the events, before (or while)
 * emitting; again after registering more (thread names are kept). Not
 * concurrently with itself. Returns 0, RINGBUF_EINVAL, RINGBUF_ENOMEM (the user
 * area is missing or too small: see ringbuf_trace_user_size()). */
RINGBUF_API int ringbuf_trace_store_registry(struct ringbuf *rb, const struct ringbuf_trace_registry *reg);
/** Rebuild a registry from rb's user area (rb opened from a file). Every length,
 * offset, name and field layout is validated: RINGBUF_EFORMAT if the area holds
 * no registry, RINGBUF_EVERSION for another layout version, RINGBUF_ECORRUPT for
 * a damaged one, RINGBUF_ENOMEM. reg is initialised here (any previous content
 * is overwritten, not freed); free it with ringbuf_trace_registry_free(). The
 * events are enabled and carry no print function (see above). */
RINGBUF_API int ringbuf_trace_load_registry(struct ringbuf *rb, struct ringbuf_trace_registry *reg);
/** The same from a copy of a user area (size bytes at area). */
RINGBUF_API int ringbuf_trace_parse_registry(const void *area, size_t size, struct ringbuf_trace_registry *reg);
/** Free what ringbuf_trace_load_registry() allocated; reg becomes empty. A
 * registry that was not loaded is left alone. */
RINGBUF_API void ringbuf_trace_registry_free(struct ringbuf_trace_registry *reg);
/** Whether the process that stored the registry in rb still runs: 1 yes, 0 no
 * (its pid is gone or belongs to a process started at another time),
 * RINGBUF_EFORMAT/ECORRUPT if the area holds no valid header. */
RINGBUF_API int ringbuf_trace_writer_alive(struct ringbuf *rb);
/** The stored writer's pid (0 if none). */
RINGBUF_API int32_t ringbuf_trace_writer_pid(struct ringbuf *rb);

#ifdef __cplusplus
}
#endif
#endif /* RINGBUF_TRACE_H */

/* Switched at every inclusion: descriptors are defined where
 * RINGBUF_TRACE_DEFINE_EVENTS is defined. */
#undef RINGBUF__TEV_DEF
#ifdef RINGBUF_TRACE_DEFINE_EVENTS
#define RINGBUF__TEV_DEF(name, S, fields, namestr, printstr, print) \
	RINGBUF__TEV_DEF_ON(name, S, fields, namestr, printstr, print)
#else
#define RINGBUF__TEV_DEF(name, S, fields, namestr, printstr, print)
#endif

/* ======================================================================== */
/* ==== >>trace_impl ====================================================== */
/* ======================================================================== */
#if defined(RINGBUF_IMPLEMENTATION) && !defined(RINGBUF_TRACE_IMPLEMENTATION_INCLUDED)
#define RINGBUF_TRACE_IMPLEMENTATION_INCLUDED 1

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>
/* POSIX, hidden by strict -std=c11 (ringbuf.h defines no feature-test macro);
 * the same prototype as glibc's and musl's, so a repeat is harmless */
extern int kill(pid_t pid, int sig);

#ifndef RINGBUF_TRACE_MAX_THREADS
#define RINGBUF_TRACE_MAX_THREADS 4096
#endif

/* ---- >>events: threads --------------------------------------------------
 *
 * The thread id is cached in initial-exec TLS (one %fs-relative load; no
 * lazy allocation, so it is safe in a signal handler). Thread names live in a
 * fixed table: a thread claims a slot with one atomic add the first time it
 * emits, fills it, then publishes its pid with a release store; readers scan
 * from the newest slot, so a recycled thread id gets its newest name. */

struct ringbuf_trace__self {
	int32_t tid;      /* 0: not known yet */
	int32_t slot;     /* comm table slot + 1, 0: none */
	uint32_t sigdepth;/* ringbuf_trace_signal_enter() nesting */
	uint32_t name_gen;/* bumped whenever the name is (re)recorded */
	uint32_t comm_gen;/* name_gen last published into comm_rb's user area */
	const void *comm_rb; /* the buffer the name was last published to (>>flight) */
	void *fslot;      /* >>filter: the thread's writer slot, NULL: none yet,
			     (void *)1: none free (the shared word; retried now and then) */
	uint32_t fretry;  /* >>filter: slow-path events since the last claim */
};
static _Thread_local struct ringbuf_trace__self ringbuf_trace__self
	__attribute__((tls_model("initial-exec")));

struct ringbuf_trace__comm {
	_Atomic(int32_t) pid;   /* 0 until published */
	_Atomic(uint32_t) seq;  /* odd while the name is being rewritten */
	_Atomic(uint64_t) w[2]; /* the name, 16 bytes */
};
static struct ringbuf_trace__comm ringbuf_trace__comms[RINGBUF_TRACE_MAX_THREADS];
static _Atomic(uint32_t) ringbuf_trace__ncomms;

static void ringbuf_trace__set_comm(struct ringbuf_trace__comm *e, const char *comm)
{
	char name[16] = {0};
	uint64_t w[2];
	size_t i;
	if (comm) {
		for (i = 0; i < 15 && comm[i]; i++)
			name[i] = comm[i];
	} else if (prctl(PR_GET_NAME, (unsigned long)name, 0ul, 0ul, 0ul) != 0) {
		memcpy(name, "<...>", 6);
	}
	name[15] = 0;
	/* a seqcount, so that a reader never takes half of two names */
	memcpy(w, name, 16);
	atomic_fetch_add_explicit(&e->seq, 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&e->w[0], w[0], memory_order_relaxed);
	atomic_store_explicit(&e->w[1], w[1], memory_order_relaxed);
	atomic_fetch_add_explicit(&e->seq, 1, memory_order_release);
}

static int32_t ringbuf_trace__init_self(const char *comm)
{
	struct ringbuf_trace__self *s = &ringbuf_trace__self;
	int32_t tid = s->tid;
	uint32_t slot;
	if (!tid)
		tid = (int32_t)syscall(SYS_gettid);
	if (s->slot) {
		ringbuf_trace__set_comm(&ringbuf_trace__comms[s->slot - 1], comm);
	} else {
		slot = atomic_fetch_add_explicit(&ringbuf_trace__ncomms, 1, memory_order_relaxed);
		if (slot < RINGBUF_TRACE_MAX_THREADS) {
			struct ringbuf_trace__comm *e = &ringbuf_trace__comms[slot];
			ringbuf_trace__set_comm(e, comm);
			atomic_store_explicit(&e->pid, tid, memory_order_release);
			s->slot = (int32_t)slot + 1;
		}
	}
	/* The generation moves after the name is in the slot: an event's
	 * publish (ringbuf_trace__publish_self) copies the slot and marks this
	 * generation done, so a signal handler's event that ran before this
	 * point (set_comm's prctl is a system call, where signals arrive)
	 * published the old name under the old generation and the next event
	 * publishes the new one. Bumped first, the handler published the old
	 * name under the new generation and the new name was never published. */
	atomic_signal_fence(memory_order_seq_cst);
	s->name_gen++;
	/* Published last: a signal handler that interrupted us before this point
	 * registers the thread again (a duplicate slot with the same name). */
	atomic_signal_fence(memory_order_seq_cst);
	s->tid = tid;
	return tid;
}

RINGBUF_API int32_t ringbuf_trace_thread_id(void)
{
	int32_t tid = ringbuf_trace__self.tid;
	if (RINGBUF__LIKELY(tid != 0))
		return tid;
	return ringbuf_trace__init_self(NULL);
}

RINGBUF_API void ringbuf_trace_thread_name(const char *comm)
{
	ringbuf_trace__init_self(comm);
}

RINGBUF_API void ringbuf_trace_thread_reset(void)
{
	ringbuf_trace__self.tid = 0;
	ringbuf_trace__self.slot = 0;
	ringbuf_trace__self.comm_rb = NULL;
	ringbuf_trace__self.fslot = NULL;
}

/* Fork: the child's only thread (the one that called fork) has a new tid; its
 * cached one is the parent's. A pthread_atfork child handler forgets it. It is
 * installed when the implementation is loaded (a constructor, gcc/clang; a
 * shared object's handler is removed by glibc when it is unloaded), else at the
 * first event registration (never from a signal handler: pthread_atfork is
 * not async-signal-safe). */
static _Atomic(int) ringbuf_trace__atfork_done;
static void ringbuf_trace__atfork_install(void)
{
	int zero = 0;
	if (atomic_load_explicit(&ringbuf_trace__atfork_done, memory_order_acquire) ||
	    !atomic_compare_exchange_strong(&ringbuf_trace__atfork_done, &zero, 1))
		return;
	if (pthread_atfork(NULL, NULL, ringbuf_trace_thread_reset) != 0)
		atomic_store(&ringbuf_trace__atfork_done, 0); /* try again at the next registration */
}
#if defined(__GNUC__) || defined(__clang__)
__attribute__((constructor)) static void ringbuf_trace__atfork_ctor(void)
{
	ringbuf_trace__atfork_install();
}
#endif

RINGBUF_API bool ringbuf_trace_comm(int32_t pid, char *buf, size_t size)
{
	uint32_t n = atomic_load_explicit(&ringbuf_trace__ncomms, memory_order_acquire);
	char name[16];
	uint64_t w[2];
	if (n > RINGBUF_TRACE_MAX_THREADS)
		n = RINGBUF_TRACE_MAX_THREADS;
	while (n-- > 0) {
		struct ringbuf_trace__comm *e = &ringbuf_trace__comms[n];
		uint32_t s1, s2;
		int tries = 0;
		if (atomic_load_explicit(&e->pid, memory_order_acquire) != pid || pid == 0)
			continue;
		do {
			s1 = atomic_load_explicit(&e->seq, memory_order_acquire);
			w[0] = atomic_load_explicit(&e->w[0], memory_order_relaxed);
			w[1] = atomic_load_explicit(&e->w[1], memory_order_relaxed);
			atomic_thread_fence(memory_order_acquire);
			s2 = atomic_load_explicit(&e->seq, memory_order_relaxed);
		} while ((s1 != s2 || (s1 & 1)) && ++tries < 1000);
		memcpy(name, w, 16);
		name[15] = 0;
		if (buf && size)
			snprintf(buf, size, "%s", name);
		return true;
	}
	if (buf && size)
		snprintf(buf, size, "%s", "<...>");
	return false;
}

RINGBUF_API void ringbuf_trace_signal_enter(void)
{
	ringbuf_trace__self.sigdepth++;
	atomic_signal_fence(memory_order_seq_cst);
}

RINGBUF_API void ringbuf_trace_signal_exit(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	if (ringbuf_trace__self.sigdepth)
		ringbuf_trace__self.sigdepth--;
}

/* ---- >>events: the emitters' out-of-line part ---------------------------- */

static void ringbuf_trace__publish_self(struct ringbuf *rb); /* >>flight */

/* The body of ringbuf_trace__reserve, inlined by writers that run per event
 * and must not pay a call (ringbuf_ftrace.h's hooks); *at: the CPU buffer the
 * event went to, ~0u when not known (RINGBUF_CPU_CURRENT). */
RINGBUF__INLINE void *ringbuf_trace__reserve_in(struct ringbuf *rb, unsigned cpu, uint32_t id, size_t len,
					      unsigned *at)
{
	struct ringbuf_trace_entry *e = (struct ringbuf_trace_entry *)ringbuf_reserve(rb, cpu, len);
	uint32_t depth, sd;
	if (RINGBUF__UNLIKELY(!e))
		return NULL;
	/* ringbuf_reserve() succeeded: the CPU buffer's `committing` now holds
	 * this writer's nesting depth (1 = outermost). For a mapped writer
	 * context (RINGBUF_CPU_THREAD/CURRENT) the buffer is the thread's claimed
	 * one; where it cannot be known here only the signal depth counts. */
	if (cpu >= rb->ncpu) {
#ifdef RINGBUF_CPU_THREAD
		/* the inline lookup of the thread's claim first (no call) */
		unsigned x = cpu == RINGBUF_CPU_THREAD ? ringbuf__thread_buffer(rb) : ~0u;
		int claimed = x < rb->ncpu ? (int)x : cpu == RINGBUF_CPU_THREAD ? ringbuf_thread_cpu(rb) : -1;
		cpu = claimed >= 0 ? (unsigned)claimed : ~0u;
#else
		cpu = ~0u;
#endif
	}
	*at = cpu;
	depth = cpu < rb->ncpu ? RINGBUF__LOAD(&ringbuf__cpu(rb, cpu)->committing) : 1;
	/* the common case, one 8-byte store (the header as the general code
	 * below writes it): the outermost writer (depth 1), not in a marked
	 * signal handler, its thread id known and its name published to rb */
	if (RINGBUF__LIKELY(depth <= 1 && ringbuf_trace__self.sigdepth == 0 && ringbuf_trace__self.tid != 0 &&
			    ringbuf_trace__self.comm_rb == (const void *)rb &&
			    ringbuf_trace__self.comm_gen == ringbuf_trace__self.name_gen)) {
		struct ringbuf_trace_entry h;
		h.type = (uint16_t)id;
		h.flags = 0;
		h.preempt_count = 0;
		h.pid = ringbuf_trace__self.tid;
		memcpy(e, &h, sizeof h);
		return e;
	}
	sd = ringbuf_trace__self.sigdepth + 1;
	if (sd > depth)
		depth = sd;
	e->type = (uint16_t)id;
	e->flags = depth <= 1 ? 0
		   : depth == 2 ? RINGBUF_TRACE_FLAG_HARDIRQ
				: RINGBUF_TRACE_FLAG_NMI | RINGBUF_TRACE_FLAG_HARDIRQ;
	e->preempt_count = (uint8_t)(depth - 1 > 255 ? 255 : depth - 1);
	e->pid = RINGBUF__LIKELY(ringbuf_trace__self.tid != 0) ? ringbuf_trace__self.tid
							       : ringbuf_trace__init_self(NULL);
	/* the thread's name into a file-backed buffer's user area, once per
	 * buffer and name (two TLS loads on the fast path) */
	if (RINGBUF__UNLIKELY(ringbuf_trace__self.comm_rb != (const void *)rb ||
			      ringbuf_trace__self.comm_gen != ringbuf_trace__self.name_gen))
		ringbuf_trace__publish_self(rb);
	return e;
}

RINGBUF_API void *ringbuf_trace__reserve(struct ringbuf *rb, unsigned cpu, uint32_t id, size_t len)
{
	unsigned at;
	return ringbuf_trace__reserve_in(rb, cpu, id, len, &at);
}

/* ---- >>events: registry -------------------------------------------------- */

static void ringbuf_trace__lock(struct ringbuf_trace_registry *reg)
{
	int zero = 0;
	while (!atomic_compare_exchange_weak_explicit(&reg->lock, &zero, 1, memory_order_acquire,
						      memory_order_relaxed)) {
		zero = 0;
#ifdef RINGBUF__HAVE_THRD_YIELD
		thrd_yield();
#else
		sched_yield();
#endif
	}
}

static void ringbuf_trace__unlock(struct ringbuf_trace_registry *reg)
{
	atomic_store_explicit(&reg->lock, 0, memory_order_release);
}

static struct ringbuf_trace_event *ringbuf_trace__first(const struct ringbuf_trace_registry *reg)
{
	return atomic_load_explicit(&((struct ringbuf_trace_registry *)reg)->first, memory_order_acquire);
}

RINGBUF_API void ringbuf_trace_registry_init(struct ringbuf_trace_registry *reg, const char *system)
{
	if (!reg)
		return;
	reg->system = system;
	atomic_store_explicit(&reg->first, NULL, memory_order_relaxed);
	atomic_store_explicit(&reg->lock, 0, memory_order_relaxed);
	reg->count = 0;
	reg->next_id = 1;
	reg->loaded = NULL;
	reg->snapshot = NULL;
}

static bool ringbuf_trace__id_taken(const struct ringbuf_trace_registry *reg, unsigned id)
{
	const struct ringbuf_trace_event *e;
	for (e = ringbuf_trace__first(reg); e; e = e->next)
		if (e->id == id)
			return true;
	return false;
}

/* With the lock held. id 0: choose one. */
static int ringbuf_trace__register(struct ringbuf_trace_registry *reg, struct ringbuf_trace_event *ev,
				   unsigned id)
{
	unsigned i;
	if (ev->reg == reg) {
		if (id && id != ev->id)
			return RINGBUF_EBUSY;
		return ev->id;
	}
	if (ev->reg)
		return RINGBUF_EBUSY;
	if (id) {
		if (ringbuf_trace__id_taken(reg, id))
			return RINGBUF_EBUSY;
	} else {
		if (reg->next_id < 1 || reg->next_id > 32767)
			reg->next_id = 1;
		for (i = 0; i < 32767; i++) {
			unsigned cand = (reg->next_id - 1 + i) % 32767 + 1;
			if (!ringbuf_trace__id_taken(reg, cand)) {
				id = cand;
				break;
			}
		}
		if (!id)
			return RINGBUF_ENOSPC;
		reg->next_id = id % 32767 + 1;
	}
	ev->id = (uint16_t)id;
	ev->reg = reg;
	ev->next = ringbuf_trace__first(reg);
	atomic_store_explicit(&reg->first, ev, memory_order_release);
	reg->count++;
	atomic_store_explicit(&ev->state, id, memory_order_release); /* enabled */
	return (int)id;
}

RINGBUF_API int ringbuf_trace_register_event_id(struct ringbuf_trace_registry *reg,
						struct ringbuf_trace_event *ev, unsigned id)
{
	int r;
	if (!reg || !ev || !ev->name || id > 32767)
		return RINGBUF_EINVAL;
	ringbuf_trace__atfork_install();
	ringbuf_trace__lock(reg);
	r = ringbuf_trace__register(reg, ev, id);
	ringbuf_trace__unlock(reg);
	return r;
}

RINGBUF_API int ringbuf_trace_register_event(struct ringbuf_trace_registry *reg,
					     struct ringbuf_trace_event *ev)
{
	return ringbuf_trace_register_event_id(reg, ev, 0);
}

RINGBUF_API int ringbuf_trace_register_events(struct ringbuf_trace_registry *reg,
					      struct ringbuf_trace_event *const *evs, size_t n)
{
	size_t i;
	if (!evs && n)
		return RINGBUF_EINVAL;
	for (i = 0; i < n; i++) {
		int r = ringbuf_trace_register_event(reg, evs[i]);
		if (r < 0)
			return r;
	}
	return (int)n;
}

RINGBUF_API bool ringbuf_trace_glob_match(const char *g, const char *s)
{
	const char *star_g = NULL, *star_s = NULL;
	if (!g || !s)
		return false;
	for (;;) {
		if (*g == '*') {
			while (*g == '*')
				g++;
			if (!*g)
				return true;
			star_g = g;
			star_s = s;
			continue;
		}
		if (*s) {
			bool ok = false;
			const char *next = g + 1;
			if (*g == '?') {
				ok = true;
			} else if (*g == '[') {
				const char *p = g + 1;
				bool neg = false, hit = false;
				if (*p == '!' || *p == '^') {
					neg = true;
					p++;
				}
				if (*p == ']') { /* a leading ] is literal */
					hit = *s == ']';
					p++;
				}
				while (*p && *p != ']') {
					if (p[1] == '-' && p[2] && p[2] != ']') {
						hit |= (unsigned char)*s >= (unsigned char)p[0] &&
						       (unsigned char)*s <= (unsigned char)p[2];
						p += 3;
					} else {
						hit |= *s == *p;
						p++;
					}
				}
				if (*p == ']') {
					ok = hit != neg;
					next = p + 1;
				} else {
					ok = *s == '['; /* no closing ]: a literal [ */
				}
			} else if (*g == '\\' && g[1]) {
				ok = g[1] == *s;
				next = g + 2;
			} else if (*g) {
				ok = *g == *s;
			}
			if (ok) {
				g = next;
				s++;
				continue;
			}
		} else if (!*g) {
			return true;
		}
		/* mismatch: let the last * take one more character */
		if (!star_g || !*star_s)
			return false;
		g = star_g;
		s = ++star_s;
	}
}

static bool ringbuf_trace__matches(const struct ringbuf_trace_registry *reg,
				   const struct ringbuf_trace_event *ev, const char *glob)
{
	char full[256];
	if (!strchr(glob, '/'))
		return ringbuf_trace_glob_match(glob, ev->name);
	snprintf(full, sizeof full, "%s/%s", reg->system ? reg->system : "ringbuf", ev->name);
	return ringbuf_trace_glob_match(glob, full);
}

/* >>filter: the state word is id | FILTERED (a program is attached) while
 * enabled, 0 while disabled. Written by enable/disable (under the registry
 * lock), by the filter setters and by enable_event/disable_event triggers
 * (writers, no lock); all seq_cst. Enabling computes the bit from ev->filter,
 * stores it with a CAS, and reads ev->filter again: a setter that exchanged
 * ev->filter and then found the state 0 (so left it) is seen by that second
 * read (seq_cst total order: the exchange precedes the setter's state load,
 * which precedes our CAS), and the bit is put right. */
static void ringbuf_trace__set_state(struct ringbuf_trace_event *e, bool on)
{
	if (!on) {
		atomic_store(&e->state, 0u);
		return;
	}
	for (;;) {
		uint32_t bit = atomic_load(&e->filter) ? RINGBUF_TRACE__FILTERED : 0u;
		uint32_t st = atomic_load(&e->state), want = e->id | bit;
		if (st == want)
			return;
		if (atomic_compare_exchange_strong(&e->state, &st, want) &&
		    (atomic_load(&e->filter) ? RINGBUF_TRACE__FILTERED : 0u) == bit)
			return;
	}
}

/* After ev->filter changed: the bit follows, if the event is enabled. */
static void ringbuf_trace__refresh_state(struct ringbuf_trace_event *e)
{
	for (;;) {
		uint32_t st = atomic_load(&e->state), want;
		if (st == 0)
			return;
		want = e->id | (atomic_load(&e->filter) ? RINGBUF_TRACE__FILTERED : 0u);
		if (st == want || atomic_compare_exchange_strong(&e->state, &st, want))
			return;
	}
}

static int ringbuf_trace__set_enabled(struct ringbuf_trace_registry *reg, const char *glob, bool on)
{
	struct ringbuf_trace_event *e;
	int n = 0;
	if (!reg || !glob)
		return RINGBUF_EINVAL;
	ringbuf_trace__lock(reg);
	for (e = ringbuf_trace__first(reg); e; e = e->next) {
		if (!ringbuf_trace__matches(reg, e, glob))
			continue;
		ringbuf_trace__set_state(e, on); /* the filter bit goes with the id (>>filter) */
		n++;
	}
	ringbuf_trace__unlock(reg);
	return n;
}

RINGBUF_API int ringbuf_trace_enable(struct ringbuf_trace_registry *reg, const char *glob)
{
	return ringbuf_trace__set_enabled(reg, glob, true);
}

RINGBUF_API int ringbuf_trace_disable(struct ringbuf_trace_registry *reg, const char *glob)
{
	return ringbuf_trace__set_enabled(reg, glob, false);
}

RINGBUF_API bool ringbuf_trace_is_enabled(const struct ringbuf_trace_event *ev)
{
	return ev && atomic_load_explicit(&((struct ringbuf_trace_event *)ev)->state,
					  memory_order_relaxed) != 0;
}

RINGBUF_API struct ringbuf_trace_event *ringbuf_trace_find(const struct ringbuf_trace_registry *reg,
							    const char *name)
{
	struct ringbuf_trace_event *e;
	if (!reg || !name)
		return NULL;
	for (e = ringbuf_trace__first(reg); e; e = e->next)
		if (strcmp(e->name, name) == 0)
			return e;
	return NULL;
}

RINGBUF_API struct ringbuf_trace_event *ringbuf_trace_find_id(const struct ringbuf_trace_registry *reg,
							       unsigned id)
{
	struct ringbuf_trace_event *e;
	if (!reg || !id)
		return NULL;
	for (e = ringbuf_trace__first(reg); e; e = e->next)
		if (e->id == id)
			return e;
	return NULL;
}

/* ---- >>events: format text ----------------------------------------------- */

/* snprintf into buf at *len, keeping the full length like snprintf does. */
static void ringbuf_trace__app(char *buf, size_t size, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void ringbuf_trace__app(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
	va_list ap;
	int n;
	va_start(ap, fmt);
	n = vsnprintf(*len < size ? buf + *len : NULL, *len < size ? size - *len : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		*len += (size_t)n;
}

/* The print fmt: RINGBUF_PRINT("fmt", args) as stringified, without the macro
 * name and the outer parentheses. */
static void ringbuf_trace__print_fmt(const char *p, const char **start, size_t *n)
{
	const char *e;
	while (*p && *p != '(' && *p != '"')
		p++;
	if (*p == '(')
		p++;
	while (*p == ' ')
		p++;
	e = p + strlen(p);
	while (e > p && e[-1] == ' ')
		e--;
	if (e > p && e[-1] == ')')
		e--;
	while (e > p && e[-1] == ' ')
		e--;
	*start = p;
	*n = (size_t)(e - p);
}

RINGBUF_API int ringbuf_trace_format_text(const struct ringbuf_trace_event *ev, char *buf, size_t size)
{
	size_t len = 0, n;
	const char *pf;
	unsigned i;
	if (!ev || (!buf && size))
		return RINGBUF_EINVAL;
	if (size)
		buf[0] = 0;
	ringbuf_trace__app(buf, size, &len,
			   "name: %s\nID: %u\nformat:\n"
			   "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
			   "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
			   "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
			   "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n",
			   ev->name, (unsigned)ev->id);
	for (i = 0; i < ev->nfields; i++) {
		const struct ringbuf_trace_field *f = &ev->fields[i];
		if (f->kind == RINGBUF_TRACE_FIELD_ARRAY || f->kind == RINGBUF_TRACE_FIELD_CHARS)
			ringbuf_trace__app(buf, size, &len,
					   "\tfield:%s %s[%u];\toffset:%u;\tsize:%u;\tsigned:%u;\n",
					   f->type, f->name, (unsigned)f->count, (unsigned)f->offset,
					   (unsigned)f->size, (unsigned)f->is_signed);
		else
			ringbuf_trace__app(buf, size, &len,
					   "\tfield:%s %s;\toffset:%u;\tsize:%u;\tsigned:%u;\n", f->type,
					   f->name, (unsigned)f->offset, (unsigned)f->size,
					   (unsigned)f->is_signed);
	}
	ringbuf_trace__print_fmt(ev->print_fmt ? ev->print_fmt : "(\"\")", &pf, &n);
	ringbuf_trace__app(buf, size, &len, "\nprint fmt: %.*s\n", (int)n, pf);
	return len > INT32_MAX ? RINGBUF_E2BIG : (int)len;
}

/* ---- >>text -------------------------------------------------------------- */

/* >>flight: names from a loaded registry, print formats interpreted */
static void ringbuf_trace__reg_comm(const struct ringbuf_trace_registry *reg, int32_t pid, char *buf,
				    size_t size);
static void ringbuf_trace__interp(const struct ringbuf_trace_event *ev, const void *rec, size_t rlen,
				  char *buf, size_t size, size_t *len);

RINGBUF_API int ringbuf_trace_format_record(const struct ringbuf_trace_registry *reg,
					    const struct ringbuf_record *rec, unsigned flags,
					    char *buf, size_t size)
{
	struct ringbuf_trace_entry ent;
	const struct ringbuf_trace_event *ev = NULL;
	char comm[16], ctx[6];
	size_t len = 0;
	unsigned depth;
	if (!rec || (!buf && size))
		return RINGBUF_EINVAL;
	if (size)
		buf[0] = 0;
	memset(&ent, 0, sizeof ent);
	if (rec->data && rec->len >= sizeof ent)
		memcpy(&ent, rec->data, sizeof ent);
	if (reg)
		ev = ringbuf_trace_find_id(reg, ent.type);
	ringbuf_trace__reg_comm(reg, ent.pid, comm, sizeof comm);
	depth = ent.preempt_count & 0xf;
	ctx[0] = '.'; /* irqs-off: not tracked */
	ctx[1] = '.'; /* need-resched: not tracked */
	ctx[2] = (ent.flags & RINGBUF_TRACE_FLAG_NMI) ? ((ent.flags & RINGBUF_TRACE_FLAG_HARDIRQ) ? 'Z' : 'z')
		 : (ent.flags & RINGBUF_TRACE_FLAG_HARDIRQ) ? 'h'
							     : '.';
	ctx[3] = depth ? "0123456789abcdef"[depth] : '.';
	ctx[4] = '.'; /* migrate-disable */
	ctx[5] = 0;
	ringbuf_trace__app(buf, size, &len, "%16s-%-7d [%03u] %s ", comm, (int)ent.pid, rec->cpu, ctx);
	if (flags & RINGBUF_TRACE_PRINT_RAW_TS)
		ringbuf_trace__app(buf, size, &len, "%12llu: ", (unsigned long long)rec->ts);
	else if (flags & RINGBUF_TRACE_PRINT_NSEC)
		ringbuf_trace__app(buf, size, &len, "%5llu.%09llu: ",
				   (unsigned long long)(rec->ts / 1000000000u),
				   (unsigned long long)(rec->ts % 1000000000u));
	else
		ringbuf_trace__app(buf, size, &len, "%5llu.%06llu: ",
				   (unsigned long long)(rec->ts / 1000000000u),
				   (unsigned long long)(rec->ts % 1000000000u / 1000u));
	if (!ev || rec->len < ev->size) {
		ringbuf_trace__app(buf, size, &len, "[UNKNOWN EVENT id %u len %zu]", (unsigned)ent.type,
				   rec->len);
	} else {
		ringbuf_trace__app(buf, size, &len, "%s: ", ev->name);
		if (ev->print) {
			int n = ev->print(len < size ? buf + len : NULL, len < size ? size - len : 0,
					  rec->data, rec->len);
			if (n > 0)
				len += (size_t)n;
		} else {
			ringbuf_trace__interp(ev, rec->data, rec->len, buf, size, &len);
		}
	}
	return len > INT32_MAX ? RINGBUF_E2BIG : (int)len;
}

/* A per-CPU stream of records: from the buffer (peek, then consume), or from
 * captured pages (parsed here, as kbuffer parses them). */
struct ringbuf_trace__cur {
	struct ringbuf_record rec;
	int have;          /* 1: rec is the next record */
	/* pages */
	size_t page;       /* index of the page being parsed */
	uint32_t off;      /* offset in its data */
	uint32_t end;      /* its commit (bytes of data) */
	uint64_t ts;       /* running time stamp */
	uint64_t lost;     /* lost count for the next record */
	bool started;
};

struct ringbuf_trace__src {
	struct ringbuf *rb;                           /* or */
	const struct ringbuf_trace_capture *cap;
	unsigned ncpu;
	struct ringbuf_trace__cur *cur;
};

struct ringbuf_trace__cpages { /* declared outside: C++ would nest its name */
	unsigned char *pages;
	size_t n, cap;
};
struct ringbuf_trace_capture {
	unsigned ncpu;
	size_t page_size;
	bool tsc;                    /* the pages hold TSC cycles: records get ns */
	struct ringbuf__tscconv conv;
	struct ringbuf_trace__cpages *cpu;
};

#define RINGBUF_TRACE__TS_BITS 59
#define RINGBUF_TRACE__COMMIT_MASK ((1ul << 27) - 1)
#define RINGBUF_TRACE__MISSED (1ul << 31)
#define RINGBUF_TRACE__STORED (1ul << 30)
#define RINGBUF_TRACE__HDR (sizeof(uint64_t) + sizeof(long))

/* Next data record of a captured page stream: 1, 0 at the end, or ECORRUPT. */
static int ringbuf_trace__page_next(const struct ringbuf_trace_capture *cap, unsigned cpu,
				    struct ringbuf_trace__cur *c)
{
	const struct ringbuf_trace__cpages *cp = &cap->cpu[cpu];
	const size_t bsize = cap->page_size - RINGBUF_TRACE__HDR;
	for (;;) {
		const unsigned char *pg, *d;
		uint32_t w, a0 = 0, t, delta, len;
		if (!c->started || c->off >= c->end) {
			unsigned long commit;
			uint64_t ts;
			if (c->started)
				c->page++;
			if (c->page >= cp->n)
				return 0;
			c->started = true;
			pg = cp->pages + c->page * cap->page_size;
			memcpy(&ts, pg, 8);
			memcpy(&commit, pg + 8, sizeof commit);
			c->ts = ts;
			c->off = 0;
			c->end = (uint32_t)(commit & RINGBUF_TRACE__COMMIT_MASK);
			if (c->end > bsize)
				return RINGBUF_ECORRUPT;
			if (commit & RINGBUF_TRACE__MISSED) {
				unsigned long n = 0;
				if ((commit & RINGBUF_TRACE__STORED) && c->end + sizeof n <= bsize)
					memcpy(&n, pg + RINGBUF_TRACE__HDR + c->end, sizeof n);
				c->lost = n ? (uint64_t)n : RINGBUF_TRACE_LOST_UNKNOWN;
			}
			continue;
		}
		pg = cp->pages + c->page * cap->page_size;
		d = pg + RINGBUF_TRACE__HDR + c->off;
		if (c->end - c->off < 4 || (c->off & 3))
			return RINGBUF_ECORRUPT;
		memcpy(&w, d, 4);
		if (c->end - c->off >= 8)
			memcpy(&a0, d + 4, 4);
		t = RINGBUF__HDR_TYPE(w);
		delta = RINGBUF__HDR_DELTA(w);
		switch (t) {
		case 29: /* padding */
			if (a0 == 0 && delta == 0) {
				c->off = c->end;
				continue;
			}
			len = a0 + 4;
			c->ts += delta;
			break;
		case 30: /* time extend */
			len = 8;
			c->ts += (uint64_t)a0 << 27 | delta;
			break;
		case 31: /* absolute time stamp: the top bits stay */
			len = 8;
			c->ts = (c->ts & ~((1ull << RINGBUF_TRACE__TS_BITS) - 1)) | ((uint64_t)a0 << 27 | delta);
			break;
		default:
			if (t == 0) {
				len = a0 + 4;
				c->rec.data = d + 8;
				c->rec.len = a0 >= 4 ? a0 - 4 : 0;
			} else {
				len = 4 + t * 4;
				c->rec.data = d + 4;
				c->rec.len = t * 4;
			}
			if (len < 8 || len > c->end - c->off)
				return RINGBUF_ECORRUPT;
			c->ts += delta;
			c->off += len;
			c->rec.ts = cap->tsc ? ringbuf__tscconv_apply(&cap->conv, c->ts) : c->ts;
			c->rec.cpu = cpu;
			c->rec.lost = c->lost;
			c->lost = 0;
			return 1;
		}
		if (len < 4 || len > c->end - c->off || (len & 3))
			return RINGBUF_ECORRUPT;
		c->off += len;
	}
}

static int ringbuf_trace__fetch(struct ringbuf_trace__src *s, unsigned cpu)
{
	struct ringbuf_trace__cur *c = &s->cur[cpu];
	int r;
	if (c->have)
		return 1;
	if (s->rb)
		r = ringbuf_peek(s->rb, cpu, &c->rec);
	else
		r = ringbuf_trace__page_next(s->cap, cpu, c);
	if (r == 1)
		c->have = 1;
	return r;
}

static int ringbuf_trace__foreach(struct ringbuf_trace__src *s, unsigned cpu, size_t max,
				  ringbuf_trace_record_fn fn, void *ctx)
{
	unsigned lo = cpu == RINGBUF_ALL_CPUS ? 0 : cpu, hi = cpu == RINGBUF_ALL_CPUS ? s->ncpu : cpu + 1;
	size_t done = 0;
	int r = 0;
	if (cpu != RINGBUF_ALL_CPUS && cpu >= s->ncpu)
		return RINGBUF_EINVAL;
	if (s->rb && cpu == RINGBUF_ALL_CPUS) {
		/* a live buffer: the library's merged consumer, which never steps
		 * back in time (a peek-and-pick here would: an older event may
		 * still be committed on a CPU that looked empty). A writer in an
		 * event that may be older (RINGBUF_EAGAIN) ends the walk after a
		 * few tries; what it holds back comes with the next call. */
		int again = 0;
		while (!max || done < max) {
			struct ringbuf_record rec;
			r = ringbuf_consume_merged(s->rb, &rec);
			if (r == RINGBUF_EAGAIN && ++again < 100)
				continue;
			if (r == RINGBUF_EAGAIN)
				r = 0;
			if (r <= 0)
				break;
			again = 0;
			done++;
			if ((r = fn(&rec, ctx)) != 0)
				break;
		}
		return r;
	}
	s->cur = (struct ringbuf_trace__cur *)calloc(s->ncpu, sizeof *s->cur);
	if (!s->cur)
		return RINGBUF_ENOMEM;
	while (!max || done < max) {
		struct ringbuf_record rec;
		unsigned i, best = RINGBUF_ALL_CPUS;
		for (i = lo; i < hi; i++) {
			int f = ringbuf_trace__fetch(s, i);
			if (f < 0) {
				r = f;
				goto out;
			}
			if (f == 1 && (best == RINGBUF_ALL_CPUS || s->cur[i].rec.ts < s->cur[best].rec.ts))
				best = i;
		}
		if (best == RINGBUF_ALL_CPUS)
			break;
		rec = s->cur[best].rec;
		if (s->rb) {
			/* consume what was peeked; rec.data stays valid until the next
			 * reader call on this CPU, which is after fn */
			struct ringbuf_record tmp;
			r = fn(&rec, ctx);
			if (ringbuf_consume(s->rb, best, &tmp) < 0 && !r)
				r = RINGBUF_EAGAIN;
		} else {
			r = fn(&rec, ctx);
		}
		s->cur[best].have = 0;
		done++;
		if (r)
			break;
	}
out:
	free(s->cur);
	s->cur = NULL;
	return r;
}

RINGBUF_API int ringbuf_trace_consume_foreach(struct ringbuf *rb, unsigned cpu, size_t max,
					      ringbuf_trace_record_fn fn, void *ctx)
{
	struct ringbuf_trace__src s;
	if (!rb || !fn)
		return RINGBUF_EINVAL;
	memset(&s, 0, sizeof s);
	s.rb = rb;
	s.ncpu = ringbuf_ncpu(rb);
	return ringbuf_trace__foreach(&s, cpu, max, fn, ctx);
}

RINGBUF_API int ringbuf_trace_capture_foreach(const struct ringbuf_trace_capture *cap, unsigned cpu,
					      size_t max, ringbuf_trace_record_fn fn, void *ctx)
{
	struct ringbuf_trace__src s;
	if (!cap || !fn)
		return RINGBUF_EINVAL;
	memset(&s, 0, sizeof s);
	s.cap = cap;
	s.ncpu = cap->ncpu;
	return ringbuf_trace__foreach(&s, cpu, max, fn, ctx);
}

struct ringbuf_trace__pctx {
	const struct ringbuf_trace_registry *reg;
	FILE *out;
	unsigned flags;
	int printed;
	char *line;
	size_t size;
};

static int ringbuf_trace__print_one(const struct ringbuf_record *rec, void *ctx)
{
	struct ringbuf_trace__pctx *p = (struct ringbuf_trace__pctx *)ctx;
	int n;
	if (rec->lost == RINGBUF_TRACE_LOST_UNKNOWN)
		fprintf(p->out, "CPU:%u [LOST EVENTS]\n", rec->cpu);
	else if (rec->lost)
		fprintf(p->out, "CPU:%u [LOST %llu EVENTS]\n", rec->cpu, (unsigned long long)rec->lost);
	n = ringbuf_trace_format_record(p->reg, rec, p->flags, p->line, p->size);
	if (n < 0)
		return n;
	if ((size_t)n >= p->size) {
		char *l = (char *)realloc(p->line, (size_t)n + 1);
		if (!l)
			return RINGBUF_ENOMEM;
		p->line = l;
		p->size = (size_t)n + 1;
		ringbuf_trace_format_record(p->reg, rec, p->flags, p->line, p->size);
	}
	fputs(p->line, p->out);
	fputc('\n', p->out);
	if (p->printed < INT32_MAX)
		p->printed++;
	return 0;
}

static void ringbuf_trace__print_header(FILE *out, unsigned ncpu)
{
	fprintf(out, "# tracer: nop\n#\n# ringbuf.h trace   #P:%u\n#\n"
		     "#                                _-----=> irqs-off/BH-disabled\n"
		     "#                               / _----=> need-resched\n"
		     "#                              | / _---=> hardirq/softirq\n"
		     "#                              || / _--=> preempt-depth\n"
		     "#                              ||| / _-=> migrate-disable\n"
		     "#                              |||| /     delay\n"
		     "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n"
		     "#              | |         |   |||||     |         |\n",
		ncpu);
}

static int ringbuf_trace__print(struct ringbuf_trace__src *s, const struct ringbuf_trace_registry *reg,
				unsigned cpu, FILE *out, unsigned flags, size_t max)
{
	struct ringbuf_trace__pctx p;
	int r;
	if (!out)
		return RINGBUF_EINVAL;
	memset(&p, 0, sizeof p);
	p.reg = reg;
	p.out = out;
	p.flags = flags;
	p.size = 512;
	p.line = (char *)malloc(p.size);
	if (!p.line)
		return RINGBUF_ENOMEM;
	if (flags & RINGBUF_TRACE_PRINT_HEADER)
		ringbuf_trace__print_header(out, s->ncpu);
	r = ringbuf_trace__foreach(s, cpu, max, ringbuf_trace__print_one, &p);
	free(p.line);
	return r < 0 ? r : p.printed;
}

RINGBUF_API int ringbuf_trace_print(struct ringbuf *rb, const struct ringbuf_trace_registry *reg,
				    unsigned cpu, FILE *out, unsigned flags, size_t max)
{
	struct ringbuf_trace__src s;
	if (!rb)
		return RINGBUF_EINVAL;
	memset(&s, 0, sizeof s);
	s.rb = rb;
	s.ncpu = ringbuf_ncpu(rb);
	return ringbuf_trace__print(&s, reg, cpu, out, flags, max);
}

RINGBUF_API int ringbuf_trace_print_capture(const struct ringbuf_trace_capture *cap,
					    const struct ringbuf_trace_registry *reg, unsigned cpu,
					    FILE *out, unsigned flags, size_t max)
{
	struct ringbuf_trace__src s;
	if (!cap)
		return RINGBUF_EINVAL;
	memset(&s, 0, sizeof s);
	s.cap = cap;
	s.ncpu = cap->ncpu;
	return ringbuf_trace__print(&s, reg, cpu, out, flags, max);
}

/* ---- >>tracedat: capture -------------------------------------------------- */

RINGBUF_API int ringbuf_trace_capture_create(const struct ringbuf *rb, struct ringbuf_trace_capture **out)
{
	struct ringbuf_trace_capture *cap;
	if (!rb || !out)
		return RINGBUF_EINVAL;
	cap = (struct ringbuf_trace_capture *)calloc(1, sizeof *cap);
	if (!cap)
		return RINGBUF_ENOMEM;
	cap->ncpu = ringbuf_ncpu(rb);
	cap->page_size = ringbuf_page_size(rb);
	cap->tsc = ringbuf__tscconv_of(rb, &cap->conv);
	cap->cpu = (struct ringbuf_trace__cpages *)calloc(cap->ncpu, sizeof *cap->cpu);
	if (!cap->cpu) {
		free(cap);
		return RINGBUF_ENOMEM;
	}
	*out = cap;
	return 0;
}

RINGBUF_API void ringbuf_trace_capture_destroy(struct ringbuf_trace_capture *cap)
{
	unsigned i;
	if (!cap)
		return;
	for (i = 0; i < cap->ncpu; i++)
		free(cap->cpu[i].pages);
	free(cap->cpu);
	free(cap);
}

/* Read at most limit pages of cpu into cap. */
static int ringbuf_trace__capture_cpu(struct ringbuf_trace_capture *cap, struct ringbuf *rb, unsigned cpu,
				      unsigned flags, size_t limit)
{
	struct ringbuf_trace__cpages *cp = &cap->cpu[cpu];
	int n = 0, again = 0;
	while ((size_t)n < limit) {
		int r;
		if (cp->n == cp->cap) {
			size_t nc = cp->cap ? cp->cap * 2 : 16;
			unsigned char *p = (unsigned char *)realloc(cp->pages, nc * cap->page_size);
			if (!p)
				return n ? n : RINGBUF_ENOMEM;
			cp->pages = p;
			cp->cap = nc;
		}
		r = ringbuf_read_page(rb, cpu, cp->pages + cp->n * cap->page_size, cap->page_size, flags);
		if (r == RINGBUF_EAGAIN && ++again < 100)
			continue;
		if (r < 0)
			return n ? n : r;
		if (r == 0)
			break;
		cp->n++;
		n++;
	}
	return n;
}

RINGBUF_API int ringbuf_trace_capture_read(struct ringbuf_trace_capture *cap, struct ringbuf *rb,
					   unsigned cpu, unsigned flags)
{
	unsigned i, lo, hi;
	int total = 0;
	if (!cap || !rb || ringbuf_ncpu(rb) != cap->ncpu || ringbuf_page_size(rb) != cap->page_size)
		return RINGBUF_EINVAL;
	if (cpu != RINGBUF_ALL_CPUS && cpu >= cap->ncpu)
		return RINGBUF_EINVAL;
	lo = cpu == RINGBUF_ALL_CPUS ? 0 : cpu;
	hi = cpu == RINGBUF_ALL_CPUS ? cap->ncpu : cpu + 1;
	cap->tsc = ringbuf__tscconv_of(rb, &cap->conv);
	for (i = lo; i < hi; i++) {
		/* bounded, so that busy writers cannot keep a reader here forever */
		int r = ringbuf_trace__capture_cpu(cap, rb, i, flags, 2 * (size_t)ringbuf_nr_pages(rb) + 4);
		if (r < 0)
			return r;
		total += r;
	}
	return total;
}

RINGBUF_API size_t ringbuf_trace_capture_pages(const struct ringbuf_trace_capture *cap, unsigned cpu)
{
	return cap && cpu < cap->ncpu ? cap->cpu[cpu].n : 0;
}

RINGBUF_API const void *ringbuf_trace_capture_page(const struct ringbuf_trace_capture *cap,
						   unsigned cpu, size_t i)
{
	if (!cap || cpu >= cap->ncpu || i >= cap->cpu[cpu].n)
		return NULL;
	return cap->cpu[cpu].pages + i * cap->page_size;
}

/* ---- >>tracedat: the file -------------------------------------------------
 *
 * ONE LAYOUT WRITER for both exports: ringbuf_trace_write_tracedat() (pages in
 * memory, this host's byte order and long) and ringbuf_tracedat.h's streaming
 * writer (pages in per-CPU files, any byte order and long) describe the file
 * in a struct ringbuf_trace__layout and call ringbuf_trace__layout_write().
 * Everything before the CPU data is built in memory (struct ringbuf_trace__out),
 * then written with the pages, sequentially. Every number is in the byte
 * order l->be (ringbuf_trace__num); the endian byte says which. Layout,
 * version 6:
 *
 *   "\x17\x08\x44tracing6\0" endian long page_size
 *   "header_page\0" u64 len text | "header_event\0" u64 len text
 *   u32 n {u64 len, format} (ftrace formats: l->ftrace_formats, then kernel_stack, >>snapshot)
 *   u32 1 system "name\0" u32 nevents {u64 len, format}
 *   u32 len kallsyms text (l->kallsyms, else 0) | u32 0 printk | u64 len cmdlines | u32 ncpu
 *   "options  \0" {u16 id, u32 len, data}: TRACECLOCK "[clock]\0", [TSC2NSEC,
 *   OFFSET], CPUCOUNT, [FILTERS (>>tracedat FILTERS)]; u16 0
 *   "flyrecord\0" {u64 offset, u64 size} per CPU, u64 len "[clock]"
 *   zeros to a page boundary, then each CPU's pages
 *
 * Version 7 wraps the same blocks in sections (u16 id, u16 flags, u32 string,
 * u64 size), puts the pages in a BUFFER section and ends with an OPTIONS
 * section that points at everything (see trace-cmd.dat.v7(5)).
 */

struct ringbuf_trace__layout {
	int version;                        /* 6 or 7 */
	int be;                             /* byte order of every number */
	unsigned long_size;                 /* 4 or 8: the long byte, header_page's commit size */
	unsigned ncpu;
	size_t page_size;
	const char *clock;                  /* without brackets, < 64 chars */
	const struct ringbuf_trace_registry *reg; /* formats, thread names (NULL: none) */
	const char *cmdlines;               /* "pid comm\n" lines instead of reg's (NULL: reg's) */
	int own_threads;                    /* in-process export: with no reg either, this
					     * process's thread names (the table every
					     * thread's first event fills, registry or not) */
	const char *kallsyms;               /* NULL: empty */
	const char *const *ftrace_formats;  /* NULL-terminated, NULL: none */
	int tsc;                            /* write TSC2NSEC and OFFSET */
	uint32_t tsc_mult, tsc_shift;
	int64_t tsc_offset;
	int ioerr;                          /* what a failed write returns */
	uint64_t (*cpu_pages)(void *ctx, unsigned cpu);   /* pages of cpu */
	int (*write_cpu)(void *ctx, unsigned cpu, int fd); /* append them to fd: 0 or an error */
	void *ctx;
	unsigned first_cpu;                 /* its pages come first, then the others in
					     * order (0: CPU order) */
	uint64_t data_at;                   /* where the CPU data starts (0: at the first
					     * page boundary after the metadata); a multiple
					     * of page_size, not before that boundary. The
					     * bytes in between are not written: write_cpu
					     * of first_cpu finds fd there (at the boundary)
					     * and leaves it at the end of first_cpu's data */
	uint64_t *meta_end;                 /* not NULL: store that page boundary and
					     * write nothing (the size of the metadata) */
	uint64_t *heap, *peak, *allocs;     /* heap counters to keep (NULL: none) */
};

struct ringbuf_trace__out {
	unsigned char *p;
	size_t len, cap;
	int err;
	const struct ringbuf_trace__layout *l; /* byte order and heap counters; NULL:
						* host order (u16..u64), not counted */
};

static void ringbuf_trace__heap(const struct ringbuf_trace__layout *l, size_t add, size_t sub)
{
	if (!l || !l->heap)
		return;
	*l->heap += add;
	*l->heap -= sub;
	if (add)
		++*l->allocs;
	if (*l->heap > *l->peak)
		*l->peak = *l->heap;
}

static void ringbuf_trace__put(struct ringbuf_trace__out *o, const void *d, size_t n)
{
	if (o->err)
		return;
	if (o->len + n > o->cap) {
		size_t nc = o->cap ? o->cap : 4096;
		unsigned char *p;
		while (nc < o->len + n)
			nc *= 2;
		p = (unsigned char *)realloc(o->p, nc);
		if (!p) {
			o->err = RINGBUF_ENOMEM;
			return;
		}
		ringbuf_trace__heap(o->l, nc, o->cap);
		o->p = p;
		o->cap = nc;
	}
	if (n && d)
		memcpy(o->p + o->len, d, n);
	else if (n)
		memset(o->p + o->len, 0, n);
	o->len += n;
}
static void ringbuf_trace__release_out(struct ringbuf_trace__out *o)
{
	ringbuf_trace__heap(o->l, 0, o->cap);
	free(o->p);
	o->p = NULL;
	o->len = o->cap = 0;
}
static void ringbuf_trace__u16(struct ringbuf_trace__out *o, uint16_t v) { ringbuf_trace__put(o, &v, 2); }
static void ringbuf_trace__u32(struct ringbuf_trace__out *o, uint32_t v) { ringbuf_trace__put(o, &v, 4); }
static void ringbuf_trace__str(struct ringbuf_trace__out *o, const char *s)
{
	ringbuf_trace__put(o, s, strlen(s) + 1);
}

/* n bytes of v in the layout's byte order, at p */
static void ringbuf_trace__num_at(unsigned char *p, unsigned n, int be, uint64_t v)
{
	unsigned i;
	for (i = 0; i < n; i++)
		p[be ? n - 1 - i : i] = (unsigned char)(v >> (8 * i));
}
static void ringbuf_trace__num(struct ringbuf_trace__out *o, unsigned n, uint64_t v)
{
	unsigned char b[8];
	ringbuf_trace__num_at(b, n, o->l->be, v);
	ringbuf_trace__put(o, b, n);
}
static void ringbuf_trace__set_num(struct ringbuf_trace__out *o, size_t at, unsigned n, uint64_t v)
{
	if (!o->err)
		ringbuf_trace__num_at(o->p + at, n, o->l->be, v);
}

/* 0, or -1 with errno (ENOSPC for a write that wrote nothing) */
static int ringbuf_trace__write_all(int fd, const void *buf, size_t n)
{
	const unsigned char *p = (const unsigned char *)buf;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = ENOSPC;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int ringbuf_trace__write_zeros(int fd, size_t n)
{
	static const unsigned char z[4096] = {0};
	while (n) {
		size_t k = n < sizeof z ? n : sizeof z;
		if (ringbuf_trace__write_all(fd, z, k) < 0)
			return -1;
		n -= k;
	}
	return 0;
}

/* Write what o holds (after zeros to pad) and empty it: 0 or an error. */
static int ringbuf_trace__flush(struct ringbuf_trace__out *o, int fd, size_t pad)
{
	int r = o->err;
	if (!r && (ringbuf_trace__write_all(fd, o->p, o->len) < 0 || ringbuf_trace__write_zeros(fd, pad) < 0))
		r = o->l->ioerr;
	o->len = 0;
	return r;
}

/* The kernel's events/header_page text for the layout's long, and header_event. */
static void ringbuf_trace__headers(struct ringbuf_trace__out *o)
{
	static const char ev[] = "# compressed entry header\n"
				 "\ttype_len    :    5 bits\n"
				 "\ttime_delta  :   27 bits\n"
				 "\tarray       :   32 bits\n"
				 "\n"
				 "\tpadding     : type == 29\n"
				 "\ttime_extend : type == 30\n"
				 "\ttime_stamp : type == 31\n"
				 "\tdata max type_len  == 28\n";
	const struct ringbuf_trace__layout *l = o->l;
	char t[512];
	int n = snprintf(t, sizeof t,
			 "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
			 "\tfield: local_t commit;\toffset:8;\tsize:%u;\tsigned:1;\n"
			 "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
			 "\tfield: char data;\toffset:%u;\tsize:%u;\tsigned:0;\n",
			 l->long_size, 8 + l->long_size, (unsigned)(l->page_size - 8 - l->long_size));
	ringbuf_trace__put(o, "header_page", 12);
	ringbuf_trace__num(o, 8, (uint64_t)n);
	ringbuf_trace__put(o, t, (size_t)n);
	ringbuf_trace__put(o, "header_event", 13);
	ringbuf_trace__num(o, 8, sizeof ev - 1);
	ringbuf_trace__put(o, ev, sizeof ev - 1);
}

/* One system, the events of reg in id order (the list is newest first). */
static void ringbuf_trace__event_formats(struct ringbuf_trace__out *o)
{
	const struct ringbuf_trace_registry *reg = o->l->reg;
	const struct ringbuf_trace_event *e;
	unsigned n = 0, last = 0;
	if (!reg) {
		ringbuf_trace__num(o, 4, 0);
		return;
	}
	for (e = ringbuf_trace__first(reg); e; e = e->next)
		n++;
	ringbuf_trace__num(o, 4, 1);
	ringbuf_trace__str(o, reg->system ? reg->system : "ringbuf");
	ringbuf_trace__num(o, 4, n);
	while (n--) {
		const struct ringbuf_trace_event *next = NULL;
		size_t at;
		int len;
		for (e = ringbuf_trace__first(reg); e; e = e->next)
			if (e->id > last && (!next || e->id < next->id))
				next = e;
		if (!next) { /* cannot happen: n counted the same list */
			o->err = RINGBUF_EINVAL;
			return;
		}
		last = next->id;
		len = ringbuf_trace_format_text(next, NULL, 0);
		if (len < 0) {
			o->err = len;
			return;
		}
		ringbuf_trace__num(o, 8, (uint64_t)len);
		at = o->len;
		ringbuf_trace__put(o, NULL, (size_t)len + 1); /* room, then fill */
		if (!o->err) {
			ringbuf_trace_format_text(next, (char *)o->p + at, (size_t)len + 1);
			o->len--; /* no NUL in the file */
		}
	}
}

/* "pid comm\n" per thread seen, newest name per pid, into t. */
static void ringbuf_trace__loaded_cmdlines(struct ringbuf_trace__out *t,
					   const struct ringbuf_trace_registry *reg);
static void ringbuf_trace__cmdlines_text(struct ringbuf_trace__out *t, const struct ringbuf_trace_registry *reg)
{
	uint32_t n, i, j;
	if (reg && reg->loaded) {
		ringbuf_trace__loaded_cmdlines(t, reg);
		return;
	}
	n = atomic_load_explicit(&ringbuf_trace__ncomms, memory_order_acquire);
	if (n > RINGBUF_TRACE_MAX_THREADS)
		n = RINGBUF_TRACE_MAX_THREADS;
	for (i = 0; i < n; i++) {
		int32_t pid = atomic_load_explicit(&ringbuf_trace__comms[i].pid, memory_order_acquire);
		char line[48], comm[16];
		int k;
		bool dup = false;
		if (!pid)
			continue;
		for (j = i + 1; j < n && !dup; j++)
			dup = atomic_load_explicit(&ringbuf_trace__comms[j].pid, memory_order_acquire) == pid;
		if (dup)
			continue; /* a newer slot for this pid comes later */
		ringbuf_trace_comm(pid, comm, sizeof comm);
		k = snprintf(line, sizeof line, "%d %s\n", (int)pid, comm);
		ringbuf_trace__put(t, line, (size_t)k);
	}
}

/* u64 length + "pid comm\n" lines: the layout's text, or reg's thread names. */
static void ringbuf_trace__cmdlines(struct ringbuf_trace__out *o)
{
	const struct ringbuf_trace__layout *l = o->l;
	struct ringbuf_trace__out t = {NULL, 0, 0, 0, NULL};
	const char *text = l->cmdlines;
	size_t n = text ? strlen(text) : 0;
	t.l = l; /* counted while it lives */
	if (!text && (l->reg || l->own_threads)) {
		ringbuf_trace__cmdlines_text(&t, l->reg);
		if (t.err)
			o->err = t.err;
		text = (const char *)t.p;
		n = t.len;
	}
	ringbuf_trace__num(o, 8, n);
	ringbuf_trace__put(o, text, n);
	ringbuf_trace__release_out(&t);
}

/* The ftrace formats block (u32 count, {u64 len, text}) or the kallsyms
 * block (u32 len, text) of the layout (empty when it has none). */
static void ringbuf_trace__ftrace_blocks(struct ringbuf_trace__out *o, int kallsyms)
{
	const struct ringbuf_trace__layout *l = o->l;
	uint32_t n = 0, k;
	char stack[1024];
	int slen;
	if (kallsyms) {
		size_t len = l->kallsyms ? strlen(l->kallsyms) : 0;
		if (len > UINT32_MAX)
			o->err = RINGBUF_EINVAL;
		ringbuf_trace__num(o, 4, len);
		ringbuf_trace__put(o, l->kallsyms, len);
		return;
	}
	/* the stack event's format (>>snapshot) for the file's word size:
	 * int size at 8, unsigned long caller[8] after it, long-aligned */
	slen = snprintf(stack, sizeof stack, RINGBUF_TRACE__STACK_FMT, (unsigned)RINGBUF_TRACE_ID_STACK, 8u,
			l->long_size == 8 ? 16u : 12u, 8 * l->long_size);
	while (l->ftrace_formats && l->ftrace_formats[n])
		n++;
	for (k = 0; k < n && slen > 0; k++) /* unless the caller gives one */
		if (!strncmp(l->ftrace_formats[k], "name: kernel_stack\n", 19))
			slen = 0;
	if (slen < 0 || (size_t)slen >= sizeof stack) {
		o->err = RINGBUF_EINVAL;
		return;
	}
	ringbuf_trace__num(o, 4, n + (slen ? 1u : 0u));
	for (k = 0; k < n; k++) {
		size_t len = strlen(l->ftrace_formats[k]);
		ringbuf_trace__num(o, 8, len);
		ringbuf_trace__put(o, l->ftrace_formats[k], len);
	}
	if (slen) {
		ringbuf_trace__num(o, 8, (uint64_t)slen);
		ringbuf_trace__put(o, stack, (size_t)slen);
	}
}

/* The metadata block that v7 puts in section id (16..21: trace-cmd's
 * option ids) and v6 writes in the same order, bare. */
static void ringbuf_trace__block(struct ringbuf_trace__out *o, unsigned id)
{
	switch (id) {
	case 16: ringbuf_trace__headers(o); break;          /* header_page, header_event */
	case 17: ringbuf_trace__ftrace_blocks(o, 0); break; /* ftrace event formats */
	case 18: ringbuf_trace__event_formats(o); break;
	case 19: ringbuf_trace__ftrace_blocks(o, 1); break; /* kallsyms */
	case 20: ringbuf_trace__num(o, 4, 0); break;        /* printk formats: none */
	default: ringbuf_trace__cmdlines(o); break;         /* 21 */
	}
}

/* v6: TRACECLOCK, [TSC2NSEC, OFFSET], CPUCOUNT; v7: CPUCOUNT first. TSC2NSEC
 * (ns = cycles * mult >> shift) and OFFSET (+ ns, a decimal string): trace-cmd
 * then shows a TSC clock's cycles as CLOCK_MONOTONIC seconds. */
static void ringbuf_trace__clock_options(struct ringbuf_trace__out *o, const char *clk)
{
	const struct ringbuf_trace__layout *l = o->l;
	if (l->version == 7) {
		ringbuf_trace__num(o, 2, 8); /* CPUCOUNT */
		ringbuf_trace__num(o, 4, 4);
		ringbuf_trace__num(o, 4, l->ncpu);
	}
	ringbuf_trace__num(o, 2, 4); /* TRACECLOCK */
	ringbuf_trace__num(o, 4, strlen(clk) + 1);
	ringbuf_trace__str(o, clk);
	if (l->tsc) {
		char buf[32];
		ringbuf_trace__num(o, 2, 14); /* TSC2NSEC: u32 mult, u32 shift, u64 offset (unused) */
		ringbuf_trace__num(o, 4, 16);
		ringbuf_trace__num(o, 4, l->tsc_mult);
		ringbuf_trace__num(o, 4, l->tsc_shift);
		ringbuf_trace__num(o, 8, 0);
		snprintf(buf, sizeof buf, "%lld", (long long)l->tsc_offset);
		ringbuf_trace__num(o, 2, 7); /* OFFSET */
		ringbuf_trace__num(o, 4, strlen(buf) + 1);
		ringbuf_trace__str(o, buf);
	}
	if (l->version != 7) {
		ringbuf_trace__num(o, 2, 8); /* CPUCOUNT */
		ringbuf_trace__num(o, 4, 4);
		ringbuf_trace__num(o, 4, l->ncpu);
	}
}

/* RINGBUF_TRACE_TRACEDAT_OPT_FILTERS: "event\0filter\0" per event of the
 * registry with a filter, in id order; nothing when none has one. */
static void ringbuf_trace__filter_option(struct ringbuf_trace__out *o)
{
	const struct ringbuf_trace_registry *reg = o->l->reg;
	const struct ringbuf_trace_event *e, *next;
	size_t start = o->len, at;
	unsigned last = 0;
	int any = 0;
	if (!reg || o->err)
		return;
	ringbuf_trace__num(o, 2, RINGBUF_TRACE_TRACEDAT_OPT_FILTERS);
	at = o->len;
	ringbuf_trace__num(o, 4, 0);
	for (;;) {
		size_t name, text;
		int len;
		next = NULL;
		for (e = ringbuf_trace__first(reg); e; e = e->next)
			if (e->id > last && (!next || e->id < next->id))
				next = e;
		if (!next)
			break;
		last = next->id;
		len = ringbuf_trace_get_filter(next, NULL, 0);
		if (len <= 0)
			continue;
		name = o->len;
		ringbuf_trace__str(o, next->name);
		text = o->len;
		ringbuf_trace__put(o, NULL, (size_t)len + 1); /* room, then fill */
		if (o->err)
			return;
		ringbuf_trace_get_filter(next, (char *)o->p + text, (size_t)len + 1);
		if (strcmp((const char *)o->p + text, "none") == 0) { /* none (or cleared since) */
			o->len = name;
			continue;
		}
		/* a filter set since the length was taken is cut to it */
		o->len = text + strlen((const char *)o->p + text) + 1;
		any = 1;
	}
	if (!any)
		o->len = start;
	else
		ringbuf_trace__set_num(o, at, 4, o->len - at - 4);
}

static size_t ringbuf_trace__align(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

/* Version 6 after the 16-byte file header, up to the flyrecord section:
 * what `trace-cmd record -N` sends to `trace-cmd listen` (which appends the
 * flyrecord section itself; ringbuf_tracedat_header()). */
static void ringbuf_trace__v6_meta(struct ringbuf_trace__out *o, const char *clk)
{
	unsigned i;
	for (i = 16; i <= 21; i++)
		ringbuf_trace__block(o, i);
	ringbuf_trace__num(o, 4, o->l->ncpu);
	ringbuf_trace__put(o, "options  ", 10);
	ringbuf_trace__clock_options(o, clk);
	ringbuf_trace__filter_option(o);
	ringbuf_trace__num(o, 2, 0); /* end of options */
}

/* The k-th CPU in the file: l->first_cpu, then the others in order. */
static unsigned ringbuf_trace__cpu_in_order(const struct ringbuf_trace__layout *l, unsigned k)
{
	if (l->first_cpu >= l->ncpu || l->first_cpu == 0)
		return k;
	return k == 0 ? l->first_cpu : k <= l->first_cpu ? k - 1 : k;
}

/* Where the CPU data starts (o holds everything before it): 1 and *data; 0
 * when l->meta_end asked for the size only (stored); RINGBUF_EINVAL for a
 * data_at before the metadata's end or not page-aligned. */
static int ringbuf_trace__data_at(struct ringbuf_trace__out *o, uint64_t *data)
{
	const struct ringbuf_trace__layout *l = o->l;
	if (o->err)
		return o->err;
	*data = ringbuf_trace__align(o->len, l->page_size);
	if (l->meta_end) {
		*l->meta_end = *data;
		return 0;
	}
	if (l->data_at) {
		if (l->data_at < *data || l->data_at % l->page_size)
			return RINGBUF_EINVAL;
		*data = l->data_at;
	}
	return 1;
}

/* Everything after the 16-byte file header, version 6. */
static int ringbuf_trace__v6(struct ringbuf_trace__out *o, int fd, const char *clk)
{
	const struct ringbuf_trace__layout *l = o->l;
	const size_t ps = l->page_size;
	size_t table;
	uint64_t data;
	unsigned i, k;
	int r;
	ringbuf_trace__v6_meta(o, clk);
	ringbuf_trace__put(o, "flyrecord", 10);
	table = o->len;
	ringbuf_trace__put(o, NULL, 16 * (size_t)l->ncpu);
	/* the clock again, read because TRACECLOCK is present */
	ringbuf_trace__num(o, 8, strlen(clk));
	ringbuf_trace__put(o, clk, strlen(clk));
	if ((r = ringbuf_trace__data_at(o, &data)) <= 0)
		return r;
	for (k = 0; k < l->ncpu; k++) {
		uint64_t sz;
		i = ringbuf_trace__cpu_in_order(l, k);
		sz = l->cpu_pages(l->ctx, i) * ps;
		ringbuf_trace__set_num(o, table + 16 * i, 8, data);
		ringbuf_trace__set_num(o, table + 16 * i + 8, 8, sz);
		data += sz;
	}
	if ((r = ringbuf_trace__flush(o, fd, ringbuf_trace__align(o->len, ps) - o->len)) < 0)
		return r;
	for (k = 0; k < l->ncpu; k++)
		if ((r = l->write_cpu(l->ctx, ringbuf_trace__cpu_in_order(l, k), fd)) < 0)
			return r;
	return 0;
}

/* v7 section header; returns where its size goes. */
static size_t ringbuf_trace__section(struct ringbuf_trace__out *o, uint16_t id, uint32_t str)
{
	size_t at;
	ringbuf_trace__num(o, 2, id);
	ringbuf_trace__num(o, 2, 0);
	ringbuf_trace__num(o, 4, str);
	at = o->len;
	ringbuf_trace__num(o, 8, 0);
	return at;
}
static void ringbuf_trace__section_end(struct ringbuf_trace__out *o, size_t at)
{
	ringbuf_trace__set_num(o, at, 8, o->len - at - 8);
}

/* Everything after the 16-byte file header, version 7 (o->len counts from
 * the file's start: the header is already in o). */
static int ringbuf_trace__v7(struct ringbuf_trace__out *o, int fd, const char *clk)
{
	/* section descriptions: offsets into the strings section */
	static const char strings[] = "headers\0ftrace events\0events format\0kallsyms\0printk\0"
				      "command lines\0options\0buffer flyrecord \0strings";
	enum { S_HEADERS = 0, S_FTRACE = 8, S_EVENTS = 22, S_KALLSYMS = 36, S_PRINTK = 45,
	       S_CMDLINES = 52, S_OPTIONS = 66, S_BUFFER = 74, S_STRINGS = 92 };
	static const uint32_t str[6] = {S_HEADERS, S_FTRACE, S_EVENTS, S_KALLSYMS, S_PRINTK, S_CMDLINES};
	const struct ringbuf_trace__layout *l = o->l;
	const size_t ps = l->page_size;
	const unsigned ncpu = l->ncpu;
	size_t opt_at, sec[6], at, buf_sec;
	uint64_t total = 0, off, data;
	unsigned i, k, first;
	int r;
	ringbuf_trace__put(o, "none", 5);
	ringbuf_trace__put(o, "", 1);
	opt_at = o->len;
	ringbuf_trace__num(o, 8, 0);
	at = ringbuf_trace__section(o, 15, S_STRINGS);
	ringbuf_trace__put(o, strings, sizeof strings);
	ringbuf_trace__section_end(o, at);
	for (i = 0; i < 6; i++) { /* sections 16..21 */
		sec[i] = o->len;
		at = ringbuf_trace__section(o, (uint16_t)(16 + i), str[i]);
		ringbuf_trace__block(o, 16 + i);
		ringbuf_trace__section_end(o, at);
	}
	/* the BUFFER section: header, padding, page-aligned CPU data */
	buf_sec = o->len;
	at = ringbuf_trace__section(o, 3, S_BUFFER);
	if ((r = ringbuf_trace__data_at(o, &data)) <= 0)
		return r;
	for (i = 0; i < ncpu; i++)
		total += l->cpu_pages(l->ctx, i) * ps;
	ringbuf_trace__set_num(o, at, 8, data - o->len + total);
	ringbuf_trace__set_num(o, opt_at, 8, data + total);
	if ((r = ringbuf_trace__flush(o, fd, ringbuf_trace__align(o->len, ps) - o->len)) < 0)
		return r;
	for (k = 0; k < ncpu; k++)
		if ((r = l->write_cpu(l->ctx, ringbuf_trace__cpu_in_order(l, k), fd)) < 0)
			return r;
	/* the OPTIONS section, after the data (o starts again at 0: the
	 * section's size is relative to its own position in o) */
	at = ringbuf_trace__section(o, 0, S_OPTIONS);
	for (i = 0; i < 6; i++) {
		ringbuf_trace__num(o, 2, 16 + i);
		ringbuf_trace__num(o, 4, 8);
		ringbuf_trace__num(o, 8, sec[i]);
	}
	ringbuf_trace__clock_options(o, clk);
	ringbuf_trace__filter_option(o);
	ringbuf_trace__num(o, 2, 3); /* BUFFER */
	ringbuf_trace__num(o, 4, 8 + 1 + strlen(l->clock) + 1 + 4 + 4 + (size_t)ncpu * 20);
	ringbuf_trace__num(o, 8, buf_sec);
	ringbuf_trace__str(o, "");
	ringbuf_trace__str(o, l->clock);
	ringbuf_trace__num(o, 4, ps);
	ringbuf_trace__num(o, 4, ncpu);
	/* the CPUs in id order, each at its place in the file (first_cpu's
	 * pages first, then the others in id order) */
	first = l->first_cpu < ncpu ? l->first_cpu : 0;
	off = data + l->cpu_pages(l->ctx, first) * ps;
	for (i = 0; i < ncpu; i++) {
		uint64_t sz = l->cpu_pages(l->ctx, i) * ps;
		ringbuf_trace__num(o, 4, i);
		ringbuf_trace__num(o, 8, i == first ? data : off);
		ringbuf_trace__num(o, 8, sz);
		if (i != first)
			off += sz;
	}
	ringbuf_trace__num(o, 2, 0); /* DONE */
	ringbuf_trace__num(o, 4, 8);
	ringbuf_trace__num(o, 8, 0);
	ringbuf_trace__section_end(o, at);
	return ringbuf_trace__flush(o, fd, 0);
}

/* The 16-byte file header into o; clk (80 bytes) gets "[clock]". */
static void ringbuf_trace__file_header(struct ringbuf_trace__out *o, char *clk)
{
	const struct ringbuf_trace__layout *l = o->l;
	unsigned char hdr[2];
	snprintf(clk, 80, "[%s]", l->clock);
	ringbuf_trace__put(o, "\x17\x08\x44tracing", 10);
	ringbuf_trace__str(o, l->version == 7 ? "7" : "6");
	hdr[0] = (unsigned char)(l->be != 0);
	hdr[1] = (unsigned char)l->long_size;
	ringbuf_trace__put(o, hdr, 2);
	ringbuf_trace__num(o, 4, l->page_size);
}

/* The whole file to fd, sequentially. Returns 0, o's error (ENOMEM...),
 * l->ioerr for a failed write, or write_cpu's error. */
static int ringbuf_trace__layout_write(const struct ringbuf_trace__layout *l, int fd)
{
	struct ringbuf_trace__out o = {NULL, 0, 0, 0, NULL};
	char clk[80];
	int r;
	o.l = l;
	ringbuf_trace__file_header(&o, clk);
	r = l->version == 7 ? ringbuf_trace__v7(&o, fd, clk) : ringbuf_trace__v6(&o, fd, clk);
	ringbuf_trace__release_out(&o);
	return r;
}

/* A version 6 file (l->version is ignored) up to the flyrecord section, in
 * memory: *buf (malloc'ed, the caller frees it), *len. l's page callbacks
 * are not called. Returns 0 or RINGBUF_ENOMEM. */
static inline int ringbuf_trace__layout_v6_header(const struct ringbuf_trace__layout *l, void **buf, size_t *len)
{
	struct ringbuf_trace__layout l6 = *l;
	struct ringbuf_trace__out o = {NULL, 0, 0, 0, NULL};
	char clk[80];
	l6.version = 6;
	l6.heap = l6.peak = l6.allocs = NULL; /* the buffer leaves with the caller */
	o.l = &l6;
	ringbuf_trace__file_header(&o, clk);
	ringbuf_trace__v6_meta(&o, clk);
	if (o.err) {
		ringbuf_trace__release_out(&o);
		return o.err;
	}
	*buf = o.p;
	*len = o.len;
	return 0;
}

/* -- the in-memory export: the pages of up to two captures per CPU -- */

static uint64_t ringbuf_trace__caps_pages(void *ctx, unsigned cpu)
{
	const struct ringbuf_trace_capture *const *caps = (const struct ringbuf_trace_capture *const *)ctx;
	uint64_t n = 0;
	int k;
	for (k = 0; k < 2; k++)
		if (caps[k])
			n += caps[k]->cpu[cpu].n;
	return n;
}

static int ringbuf_trace__caps_write(void *ctx, unsigned cpu, int fd)
{
	const struct ringbuf_trace_capture *const *caps = (const struct ringbuf_trace_capture *const *)ctx;
	int k;
	for (k = 0; k < 2; k++) {
		const struct ringbuf_trace_capture *c = caps[k];
		if (c && c->cpu[cpu].n &&
		    ringbuf_trace__write_all(fd, c->cpu[cpu].pages, c->cpu[cpu].n * c->page_size) < 0)
			return RINGBUF_EINVAL;
	}
	return 0;
}

RINGBUF_API int ringbuf_trace_write_tracedat(struct ringbuf *rb, const struct ringbuf_trace_registry *reg,
					     int fd, const struct ringbuf_trace_tracedat_opts *opts)
{
	static const struct ringbuf_trace_tracedat_opts defaults = RINGBUF_TRACE_TRACEDAT_INIT;
	const struct ringbuf_trace_capture *caps[2] = {NULL, NULL};
	struct ringbuf_trace_capture *drained = NULL;
	struct ringbuf_trace__layout l;
	struct ringbuf__tscconv conv;
	const struct ringbuf__tscconv *tsc = NULL;
	union { uint16_t u; unsigned char b[2]; } endian;
	int r, version;

	if (!opts)
		opts = &defaults;
	version = opts->version ? opts->version : 6;
	if (fd < 0 || (version != 6 && version != 7) || (!rb && !opts->capture))
		return RINGBUF_EINVAL;
	memset(&l, 0, sizeof l);
	if (opts->capture) {
		l.ncpu = opts->capture->ncpu;
		l.page_size = opts->capture->page_size;
		if (rb && (ringbuf_ncpu(rb) != l.ncpu || ringbuf_page_size(rb) != l.page_size))
			return RINGBUF_EINVAL;
	} else {
		l.ncpu = ringbuf_ncpu(rb);
		l.page_size = ringbuf_page_size(rb);
	}
	caps[0] = opts->capture;
	if (rb && !(opts->flags & RINGBUF_TRACE_TRACEDAT_NO_DRAIN)) {
		if ((r = ringbuf_trace_capture_create(rb, &drained)) < 0)
			return r;
		r = ringbuf_trace_capture_read(drained, rb, RINGBUF_ALL_CPUS, 0);
		if (r < 0) {
			ringbuf_trace_capture_destroy(drained);
			return r;
		}
		caps[1] = drained;
	}
	if (rb ? ringbuf__tscconv_of(rb, &conv) : caps[0]->tsc) {
		if (!rb)
			conv = caps[0]->conv;
		tsc = &conv; /* TSC2NSEC and OFFSET options: trace-cmd shows ns */
		l.tsc = 1;
		ringbuf__tscconv_tracecmd(tsc, &l.tsc_mult, &l.tsc_shift, &l.tsc_offset);
	}
	l.clock = opts->clock;
	if (!l.clock)
		l.clock = tsc ? "x86-tsc"
			: !rb || rb->clock_kind == RINGBUF__CLK_MONO ? "mono"
								    : "local";
	endian.u = 1;
	l.version = version;
	l.be = endian.b[0] != 1;
	l.long_size = (unsigned)sizeof(long);
	l.reg = reg;
	l.own_threads = 1; /* rb is this process's: so are its writers' names */
	l.kallsyms = opts->kallsyms;
	l.ftrace_formats = opts->ftrace_formats;
	l.ioerr = RINGBUF_EINVAL;
	l.cpu_pages = ringbuf_trace__caps_pages;
	l.write_cpu = ringbuf_trace__caps_write;
	l.ctx = (void *)caps;
	r = ringbuf_trace__layout_write(&l, fd);
	ringbuf_trace_capture_destroy(drained);
	return r;
}

RINGBUF_API int ringbuf_trace_save_tracedat(struct ringbuf *rb, const struct ringbuf_trace_registry *reg,
					    const char *path, const struct ringbuf_trace_tracedat_opts *opts)
{
	int fd, r;
	if (!path)
		return RINGBUF_EINVAL;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | RINGBUF__O_CLOEXEC, 0644);
	if (fd < 0)
		return RINGBUF_EINVAL;
	r = ringbuf_trace_write_tracedat(rb, reg, fd, opts);
	if (close(fd) != 0 && !r)
		r = RINGBUF_EINVAL;
	return r;
}

/* -- reading the filters back (ringbuf_trace_tracedat_filters) --
 * A bounded walk over the metadata: every length is checked against the
 * file's size before it is skipped or read, so a truncated or hostile file
 * gives RINGBUF_ECORRUPT, never a read past what was checked. */

struct ringbuf_trace__frd {
	int fd, be;
	uint64_t off, size;
};

static int ringbuf_trace__frd_bytes(struct ringbuf_trace__frd *r, void *buf, size_t n)
{
	unsigned char *p = (unsigned char *)buf;
	if (n > r->size || r->off > r->size - n)
		return RINGBUF_ECORRUPT;
	if (lseek(r->fd, (off_t)r->off, SEEK_SET) == (off_t)-1)
		return RINGBUF_ESYS;
	r->off += n;
	while (n) {
		ssize_t k = read(r->fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? RINGBUF_ESYS : RINGBUF_ECORRUPT;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int ringbuf_trace__frd_num(struct ringbuf_trace__frd *r, unsigned n, uint64_t *v)
{
	unsigned char b[8];
	unsigned i;
	int e = ringbuf_trace__frd_bytes(r, b, n);
	*v = 0;
	for (i = 0; i < n && !e; i++)
		*v |= (uint64_t)b[r->be ? i : n - 1 - i] << (8 * (n - 1 - i));
	return e;
}

static int ringbuf_trace__frd_skip(struct ringbuf_trace__frd *r, uint64_t n)
{
	if (n > r->size || r->off > r->size - n)
		return RINGBUF_ECORRUPT;
	r->off += n;
	return 0;
}

/* skip a NUL-terminated string of at most max bytes (NUL included) */
static int ringbuf_trace__frd_skipstr(struct ringbuf_trace__frd *r, size_t max)
{
	char c = 1;
	size_t i;
	for (i = 0; i < max && c; i++)
		if (ringbuf_trace__frd_bytes(r, &c, 1) < 0)
			return RINGBUF_ECORRUPT;
	return c ? RINGBUF_ECORRUPT : 0;
}

/* skip count blocks of a u<lw> length each and its bytes */
static int ringbuf_trace__frd_blocks(struct ringbuf_trace__frd *r, uint64_t count, unsigned lw)
{
	uint64_t len;
	int e = 0;
	while (count-- && !e)
		if (!(e = ringbuf_trace__frd_num(r, lw, &len)))
			e = ringbuf_trace__frd_skip(r, len);
	return e;
}

/* One options list ({u16 id, u32 size, data} up to id 0): the filters
 * option's pairs to fn. *next gets v7's DONE offset (0: none). */
static int ringbuf_trace__frd_options(struct ringbuf_trace__frd *r, int v7, uint64_t *next,
				     int (*fn)(void *, const char *, const char *), void *ctx, int *calls,
				     int *stop)
{
	uint64_t id, size;
	int e;
	*next = 0;
	for (;;) {
		if ((e = ringbuf_trace__frd_num(r, 2, &id)) < 0)
			return e;
		if (id == 0 && !v7)
			return 0;
		if ((e = ringbuf_trace__frd_num(r, 4, &size)) < 0)
			return e;
		if (id == 0)
			return size == 8 ? ringbuf_trace__frd_num(r, 8, next) : RINGBUF_ECORRUPT;
		if (id != RINGBUF_TRACE_TRACEDAT_OPT_FILTERS || *stop) {
			if ((e = ringbuf_trace__frd_skip(r, size)) < 0)
				return e;
			continue;
		}
		{
			char *d;
			size_t i = 0;
			if (size > r->size - r->off || size > ((size_t)1 << 30))
				return RINGBUF_ECORRUPT;
			d = (char *)malloc((size_t)size + 1);
			if (!d)
				return RINGBUF_ENOMEM;
			if ((e = ringbuf_trace__frd_bytes(r, d, (size_t)size)) < 0) {
				free(d);
				return e;
			}
			while (i < size && !e) {
				/* both strings end inside the option */
				const char *z1 = (const char *)memchr(d + i, 0, (size_t)size - i);
				const char *z2 = z1 ? (const char *)memchr(z1 + 1, 0, (size_t)(d + size - z1 - 1)) : NULL;
				size_t ln, lf;
				if (!z2) {
					e = RINGBUF_ECORRUPT;
					break;
				}
				ln = (size_t)(z1 - (d + i));
				lf = (size_t)(z2 - z1 - 1);
				if (!*stop) {
					++*calls;
					*stop = fn(ctx, d + i, d + i + ln + 1) != 0;
				}
				i += ln + 1 + lf + 1;
			}
			free(d);
			if (e < 0)
				return e;
		}
	}
}

RINGBUF_API int ringbuf_trace_tracedat_filters(const char *path,
					       int (*fn)(void *ctx, const char *event, const char *filter),
					       void *ctx)
{
	struct ringbuf_trace__frd r = {-1, 0, 0, 0};
	unsigned char head[18];
	struct stat st;
	uint64_t n, k, next = 0;
	int e, calls = 0, stop = 0, v7, hops;
	if (!path || !fn)
		return RINGBUF_EINVAL;
	r.fd = open(path, O_RDONLY | RINGBUF__O_CLOEXEC);
	if (r.fd < 0)
		return RINGBUF_ESYS;
	if (fstat(r.fd, &st) != 0) {
		e = RINGBUF_ESYS;
		goto out;
	}
	r.size = (uint64_t)st.st_size;
	/* magic, "6\0" or "7\0", endian, long size, u32 page size */
	if ((e = ringbuf_trace__frd_bytes(&r, head, 18)) < 0)
		goto out;
	e = RINGBUF_ECORRUPT;
	if (memcmp(head, "\x17\x08\x44tracing", 10) != 0 || (head[10] != '6' && head[10] != '7') ||
	    head[11] != 0 || head[12] > 1)
		goto out;
	v7 = head[10] == '7';
	r.be = head[12];
	if (v7) {
		/* compression name and version, then the first options offset */
		if ((e = ringbuf_trace__frd_skipstr(&r, 64)) < 0 || (e = ringbuf_trace__frd_skipstr(&r, 64)) < 0 ||
		    (e = ringbuf_trace__frd_num(&r, 8, &next)) < 0)
			goto out;
		for (hops = 0; next && hops < 64 && !stop; hops++) {
			uint64_t id, flags;
			r.off = next;
			if ((e = ringbuf_trace__frd_num(&r, 2, &id)) < 0 || (e = ringbuf_trace__frd_num(&r, 2, &flags)) < 0 ||
			    (e = ringbuf_trace__frd_skip(&r, 4 + 8)) < 0)
				goto out;
			if (id != 0 || (flags & 1)) { /* not OPTIONS, or compressed */
				e = RINGBUF_ECORRUPT;
				goto out;
			}
			if ((e = ringbuf_trace__frd_options(&r, 1, &next, fn, ctx, &calls, &stop)) < 0)
				goto out;
		}
		e = 0;
		goto out;
	}
	/* v6: header_page, header_event, ftrace formats, systems, kallsyms,
	 * printk, cmdlines, ncpu, then "options  \0" (absent: no options) */
	{
		char tag[13];
		if ((e = ringbuf_trace__frd_bytes(&r, tag, 12)) < 0)
			goto out;
		if (memcmp(tag, "header_page", 12) != 0 || (e = ringbuf_trace__frd_blocks(&r, 1, 8)) < 0 ||
		    (e = ringbuf_trace__frd_bytes(&r, tag, 13)) < 0 || memcmp(tag, "header_event", 13) != 0 ||
		    (e = ringbuf_trace__frd_blocks(&r, 1, 8)) < 0) {
			e = e < 0 ? e : RINGBUF_ECORRUPT;
			goto out;
		}
	}
	if ((e = ringbuf_trace__frd_num(&r, 4, &n)) < 0 || (e = ringbuf_trace__frd_blocks(&r, n, 8)) < 0 ||
	    (e = ringbuf_trace__frd_num(&r, 4, &n)) < 0)
		goto out;
	for (k = 0; k < n; k++) {
		uint64_t nev;
		if ((e = ringbuf_trace__frd_skipstr(&r, 4096)) < 0 || (e = ringbuf_trace__frd_num(&r, 4, &nev)) < 0 ||
		    (e = ringbuf_trace__frd_blocks(&r, nev, 8)) < 0)
			goto out;
	}
	if ((e = ringbuf_trace__frd_blocks(&r, 2, 4)) < 0 || (e = ringbuf_trace__frd_blocks(&r, 1, 8)) < 0 ||
	    (e = ringbuf_trace__frd_skip(&r, 4)) < 0)
		goto out;
	{
		char tag[10];
		if ((e = ringbuf_trace__frd_bytes(&r, tag, 10)) < 0)
			goto out;
		if (memcmp(tag, "options  ", 10) == 0)
			e = ringbuf_trace__frd_options(&r, 0, &next, fn, ctx, &calls, &stop);
	}
out:
	close(r.fd);
	return e < 0 ? e : calls;
}

/* ---- >>flight: formats and thread names in the user area -----------------
 *
 * The user area (all native byte order; the block's header already checked
 * that the reader has the writer's byte order and word size):
 *
 *   header (struct ringbuf_trace__uhdr, 64 bytes)
 *   comm table: comm_cap entries of struct ringbuf_trace__ucomm (24 bytes),
 *               claimed with one atomic add on comm_next, pid stored last
 *   registry blob at reg_off, reg_len bytes, FNV-1a 64 checksum reg_sum:
 *     u32 nevents, str system, then per event:
 *       u16 id, u16 nfields, u32 size, str name, str print_fmt, then per field:
 *         u32 offset, u32 size, u32 count, u8 is_signed, u8 kind, str type, str name
 *     str = u16 length n, n bytes, a NUL
 *
 * The header is published last (magic, seq_cst), so a thread either sees it and
 * appends its name, or wrote its name into the process table before the store
 * copied that table. */

#define RINGBUF_TRACE__UMAGIC 0x3174726674627272ull /* "rrbtftr1" */
#define RINGBUF_TRACE__UVERSION 1u
#define RINGBUF_TRACE__MAX_FIELDS 32u
#define RINGBUF_TRACE__MAX_EVENTS 32767u

struct ringbuf_trace__uhdr {
	_Atomic(uint64_t) magic;
	uint32_t version;
	uint32_t hdr_size;
	uint32_t comm_off;
	uint32_t comm_cap;
	_Atomic(uint32_t) comm_next; /* slots claimed (may exceed comm_cap) */
	uint32_t reg_off;
	uint32_t reg_len;
	_Atomic(uint32_t) reg_seq;   /* odd while the blob is being rewritten */
	uint64_t reg_sum;
	int32_t writer_pid;
	uint32_t reserved;
	uint64_t writer_start;       /* start time of writer_pid (clock ticks after boot) */
};

struct ringbuf_trace__ucomm {
	_Atomic(int32_t) pid; /* 0 until the name is written */
	uint32_t reserved;
	char comm[16];
};

struct ringbuf_trace__lcomm {
	int32_t pid;
	char comm[16];
};

/* What ringbuf_trace_load_registry() allocated. */
struct ringbuf_trace__loaded {
	unsigned char *blob;                    /* copy of the registry blob; strings point into it */
	struct ringbuf_trace_event *events;
	struct ringbuf_trace_field *fields;
	struct ringbuf_trace__lcomm *comms;     /* oldest first */
	uint32_t nevents, nfields, ncomms;
	int32_t writer_pid;
};

static uint64_t ringbuf_trace__fnv(const unsigned char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	while (n--)
		h = (h ^ *p++) * 0x100000001b3ull;
	return h;
}

/* Start time of pid from /proc/<pid>/stat (field 22), 0 if unknown. */
static uint64_t ringbuf_trace__proc_start(int32_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;
	ssize_t n;
	int fd, i;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | RINGBUF__O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
	if (!p)
		return 0;
	p++;
	for (i = 0; i < 19 && *p; i++) { /* skip fields 3..21 */
		while (*p == ' ')
			p++;
		while (*p && *p != ' ')
			p++;
	}
	while (*p == ' ')
		p++;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (unsigned long long)(*p++ - '0');
	return v;
}

/* -- serialising -- */

static void ringbuf_trace__ustr(struct ringbuf_trace__out *o, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	uint16_t n16;
	if (n > 65535) {
		o->err = RINGBUF_E2BIG;
		return;
	}
	n16 = (uint16_t)n;
	ringbuf_trace__put(o, &n16, 2);
	ringbuf_trace__put(o, s ? s : "", n);
	ringbuf_trace__put(o, "", 1);
}

static int ringbuf_trace__blob(const struct ringbuf_trace_registry *reg, struct ringbuf_trace__out *o)
{
	const struct ringbuf_trace_event *e;
	uint32_t n = 0;
	for (e = ringbuf_trace__first(reg); e; e = e->next)
		n++;
	ringbuf_trace__u32(o, n);
	ringbuf_trace__ustr(o, reg->system ? reg->system : "ringbuf");
	for (e = ringbuf_trace__first(reg); e; e = e->next) {
		unsigned i;
		ringbuf_trace__u16(o, e->id);
		ringbuf_trace__u16(o, e->nfields);
		ringbuf_trace__u32(o, (uint32_t)e->size);
		ringbuf_trace__ustr(o, e->name);
		ringbuf_trace__ustr(o, e->print_fmt);
		for (i = 0; i < e->nfields; i++) {
			const struct ringbuf_trace_field *f = &e->fields[i];
			ringbuf_trace__u32(o, f->offset);
			ringbuf_trace__u32(o, f->size);
			ringbuf_trace__u32(o, f->count);
			ringbuf_trace__put(o, &f->is_signed, 1);
			ringbuf_trace__put(o, &f->kind, 1);
			ringbuf_trace__ustr(o, f->type);
			ringbuf_trace__ustr(o, f->name);
		}
	}
	return o->err;
}

static size_t ringbuf_trace__comm_off(void)
{
	return sizeof(struct ringbuf_trace__uhdr);
}

RINGBUF_API size_t ringbuf_trace_user_size(const struct ringbuf_trace_registry *reg)
{
	struct ringbuf_trace__out o = {NULL, 0, 0, 0, NULL};
	size_t n = ringbuf_trace__comm_off() + RINGBUF_TRACE_USER_COMMS * sizeof(struct ringbuf_trace__ucomm);
	if (reg && ringbuf_trace__blob(reg, &o) == 0)
		n += o.len;
	else if (reg)
		n = 0;
	free(o.p);
	return n;
}

/* Append (pid, comm) to the area's table. Async-signal-safe. */
static void ringbuf_trace__uappend(struct ringbuf *rb, int32_t pid, const char *comm)
{
	size_t size;
	struct ringbuf_trace__uhdr *h = (struct ringbuf_trace__uhdr *)ringbuf_user_area(rb, &size);
	struct ringbuf_trace__ucomm *t;
	uint32_t i;
	size_t k;
	if (!h || size < sizeof *h || !pid ||
	    atomic_load_explicit(&h->magic, memory_order_seq_cst) != RINGBUF_TRACE__UMAGIC)
		return;
	if (h->comm_off != ringbuf_trace__comm_off() ||
	    (uint64_t)h->comm_off + (uint64_t)h->comm_cap * sizeof *t > size)
		return;
	i = atomic_fetch_add_explicit(&h->comm_next, 1, memory_order_relaxed);
	if (i >= h->comm_cap)
		return;
	t = (struct ringbuf_trace__ucomm *)(void *)((char *)h + h->comm_off) + i;
	for (k = 0; k < 15 && comm[k]; k++)
		t->comm[k] = comm[k];
	for (; k < 16; k++)
		t->comm[k] = 0;
	atomic_store_explicit(&t->pid, pid, memory_order_release);
}

/* The calling thread's recorded name (from its slot, else the kernel's). */
static void ringbuf_trace__self_name(char name[16])
{
	struct ringbuf_trace__self *s = &ringbuf_trace__self;
	memset(name, 0, 16);
	if (s->slot) {
		struct ringbuf_trace__comm *e = &ringbuf_trace__comms[s->slot - 1];
		uint64_t w[2];
		w[0] = atomic_load_explicit(&e->w[0], memory_order_relaxed);
		w[1] = atomic_load_explicit(&e->w[1], memory_order_relaxed);
		memcpy(name, w, 16);
	} else if (prctl(PR_GET_NAME, (unsigned long)name, 0ul, 0ul, 0ul) != 0) {
		memcpy(name, "<...>", 6);
	}
	name[15] = 0;
}

static void ringbuf_trace__publish_self(struct ringbuf *rb)
{
	struct ringbuf_trace__self *s = &ringbuf_trace__self;
	char name[16];
	/* marked first: a handler interrupting us does not publish again */
	s->comm_rb = rb;
	s->comm_gen = s->name_gen;
	atomic_signal_fence(memory_order_seq_cst);
	ringbuf_trace__self_name(name);
	ringbuf_trace__uappend(rb, s->tid, name);
}

RINGBUF_API int ringbuf_trace_store_registry(struct ringbuf *rb, const struct ringbuf_trace_registry *reg)
{
	struct ringbuf_trace__out o = {NULL, 0, 0, 0, NULL};
	struct ringbuf_trace__uhdr *h;
	size_t size, coff = ringbuf_trace__comm_off(), csz = sizeof(struct ringbuf_trace__ucomm);
	uint32_t cap, seq, n, i;
	bool keep;
	int r;
	if (!rb || !reg)
		return RINGBUF_EINVAL;
	h = (struct ringbuf_trace__uhdr *)ringbuf_user_area(rb, &size);
	if (!h || size < coff)
		return RINGBUF_ENOMEM;
	if ((r = ringbuf_trace__blob(reg, &o)) < 0) {
		free(o.p);
		return r;
	}
	keep = atomic_load_explicit(&h->magic, memory_order_acquire) == RINGBUF_TRACE__UMAGIC &&
	       h->version == RINGBUF_TRACE__UVERSION && h->comm_off == coff &&
	       (uint64_t)coff + (uint64_t)h->comm_cap * csz <= size;
	if (keep) {
		cap = h->comm_cap;
	} else {
		size_t room = size - coff < o.len ? 0 : (size - coff - o.len) / csz;
		cap = room < RINGBUF_TRACE_USER_COMMS ? (uint32_t)room : RINGBUF_TRACE_USER_COMMS;
	}
	if (coff + (size_t)cap * csz + o.len > size || o.len > UINT32_MAX) {
		free(o.p);
		return RINGBUF_ENOMEM;
	}
	if (!keep) {
		atomic_store_explicit(&h->magic, 0, memory_order_seq_cst);
		memset((char *)h + sizeof h->magic, 0, coff + (size_t)cap * csz - sizeof h->magic);
		h->version = RINGBUF_TRACE__UVERSION;
		h->hdr_size = (uint32_t)coff;
		h->comm_off = (uint32_t)coff;
		h->comm_cap = cap;
		atomic_store_explicit(&h->comm_next, 0, memory_order_relaxed);
	}
	seq = atomic_load_explicit(&h->reg_seq, memory_order_relaxed);
	atomic_store_explicit(&h->reg_seq, seq | 1u, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	h->reg_off = (uint32_t)(coff + (size_t)cap * csz);
	h->reg_len = (uint32_t)o.len;
	memcpy((char *)h + h->reg_off, o.p, o.len);
	h->reg_sum = ringbuf_trace__fnv(o.p, o.len);
	h->writer_pid = (int32_t)getpid();
	h->writer_start = ringbuf_trace__proc_start(h->writer_pid);
	atomic_store_explicit(&h->reg_seq, (seq | 1u) + 1u, memory_order_release);
	free(o.p);
	if (!keep) {
		atomic_store_explicit(&h->magic, RINGBUF_TRACE__UMAGIC, memory_order_seq_cst);
		/* the names the process knew before the header was visible */
		n = atomic_load_explicit(&ringbuf_trace__ncomms, memory_order_seq_cst);
		if (n > RINGBUF_TRACE_MAX_THREADS)
			n = RINGBUF_TRACE_MAX_THREADS;
		for (i = 0; i < n; i++) {
			int32_t pid = atomic_load_explicit(&ringbuf_trace__comms[i].pid, memory_order_acquire);
			char comm[16];
			if (pid && ringbuf_trace_comm(pid, comm, sizeof comm))
				ringbuf_trace__uappend(rb, pid, comm);
		}
	}
	return 0;
}

/* -- loading: everything is checked against the copy's bounds -- */

struct ringbuf_trace__rd {
	const unsigned char *p;
	size_t len, off;
	int err;
};

static uint32_t ringbuf_trace__rdn(struct ringbuf_trace__rd *r, size_t n)
{
	uint32_t v = 0;
	uint16_t v16;
	uint8_t v8;
	if (r->err || n > r->len - r->off) {
		r->err = RINGBUF_ECORRUPT;
		return 0;
	}
	if (n == 1) {
		v8 = r->p[r->off];
		v = v8;
	} else if (n == 2) {
		memcpy(&v16, r->p + r->off, 2);
		v = v16;
	} else {
		memcpy(&v, r->p + r->off, 4);
	}
	r->off += n;
	return v;
}

enum { RINGBUF_TRACE__S_IDENT = 1, RINGBUF_TRACE__S_TEXT = 2 };

/* A string of the blob (validated: NUL-terminated, no NUL inside, the class). */
static const char *ringbuf_trace__rds(struct ringbuf_trace__rd *r, int cls)
{
	uint32_t n = ringbuf_trace__rdn(r, 2), i;
	const char *s;
	if (r->err)
		return NULL;
	if (n >= r->len - r->off || r->p[r->off + n] != 0) {
		r->err = RINGBUF_ECORRUPT;
		return NULL;
	}
	s = (const char *)r->p + r->off;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		bool ok = cls == RINGBUF_TRACE__S_IDENT
				  ? (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
				     (i > 0 && c >= '0' && c <= '9'))
				  : (c >= 0x20 && c < 0x7f);
		if (!ok) {
			r->err = RINGBUF_ECORRUPT;
			return NULL;
		}
	}
	if (cls == RINGBUF_TRACE__S_IDENT && n == 0) {
		r->err = RINGBUF_ECORRUPT;
		return NULL;
	}
	r->off += n + 1;
	return s;
}

static bool ringbuf_trace__field_ok(const struct ringbuf_trace_field *f, uint32_t evsize)
{
	if (f->offset < sizeof(struct ringbuf_trace_entry) || f->size == 0 || f->offset > evsize ||
	    f->size > evsize - f->offset || f->is_signed > 1 || strchr(f->type, ';'))
		return false;
	switch (f->kind) {
	case RINGBUF_TRACE_FIELD_INT:
		return f->count == 1 && (f->size == 1 || f->size == 2 || f->size == 4 || f->size == 8);
	case RINGBUF_TRACE_FIELD_ARRAY:
		return f->count >= 1 && f->size % f->count == 0 &&
		       (f->size / f->count == 1 || f->size / f->count == 2 || f->size / f->count == 4 ||
			f->size / f->count == 8);
	case RINGBUF_TRACE_FIELD_CHARS:
		return f->count == f->size && !f->is_signed;
	case RINGBUF_TRACE_FIELD_STRING:
		return f->count == 0 && f->size == 4 && !f->is_signed;
	default:
		return false;
	}
}

static void ringbuf_trace__free_loaded(struct ringbuf_trace__loaded *l)
{
	if (!l)
		return;
	free(l->blob);
	free(l->events);
	free(l->fields);
	free(l->comms);
	free(l);
}

/* Parse a copy of an area. check_sum false: skip the checksum (tests). */
static int ringbuf_trace__parse(const void *area, size_t size, struct ringbuf_trace_registry *reg,
				bool check_sum)
{
	struct ringbuf_trace__uhdr h;
	struct ringbuf_trace__loaded *l;
	struct ringbuf_trace__rd r;
	const char *system;
	uint32_t i, j, ncomm, nf = 0;
	size_t fpos;
	if (!area || !reg)
		return RINGBUF_EINVAL;
	ringbuf_trace_registry_init(reg, NULL);
	if (size < sizeof h)
		return RINGBUF_EFORMAT;
	memcpy(&h, area, sizeof h);
	if (atomic_load_explicit(&h.magic, memory_order_relaxed) != RINGBUF_TRACE__UMAGIC)
		return RINGBUF_EFORMAT;
	if (h.version != RINGBUF_TRACE__UVERSION)
		return RINGBUF_EVERSION;
	if (h.hdr_size != sizeof h || h.comm_off != sizeof h ||
	    h.comm_cap > (size - sizeof h) / sizeof(struct ringbuf_trace__ucomm) ||
	    h.reg_off < h.comm_off + (size_t)h.comm_cap * sizeof(struct ringbuf_trace__ucomm) ||
	    h.reg_off > size || h.reg_len > size - h.reg_off || h.reg_len < 4 ||
	    (atomic_load_explicit(&h.reg_seq, memory_order_relaxed) & 1u))
		return RINGBUF_ECORRUPT;
	if (check_sum && ringbuf_trace__fnv((const unsigned char *)area + h.reg_off, h.reg_len) != h.reg_sum)
		return RINGBUF_ECORRUPT;
	l = (struct ringbuf_trace__loaded *)calloc(1, sizeof *l);
	if (!l)
		return RINGBUF_ENOMEM;
	l->writer_pid = h.writer_pid;
	l->blob = (unsigned char *)malloc(h.reg_len);
	if (!l->blob)
		goto nomem;
	memcpy(l->blob, (const unsigned char *)area + h.reg_off, h.reg_len);
	r.p = l->blob;
	r.len = h.reg_len;
	r.off = 0;
	r.err = 0;
	l->nevents = ringbuf_trace__rdn(&r, 4);
	system = ringbuf_trace__rds(&r, RINGBUF_TRACE__S_IDENT);
	/* every event takes at least 16 bytes: bounds the allocation */
	if (r.err || l->nevents > RINGBUF_TRACE__MAX_EVENTS || l->nevents > (r.len - r.off) / 16)
		goto corrupt;
	/* pass 1: count the fields (validating the walk) */
	fpos = r.off;
	for (i = 0; i < l->nevents; i++) {
		uint32_t n;
		ringbuf_trace__rdn(&r, 2);
		n = ringbuf_trace__rdn(&r, 2);
		ringbuf_trace__rdn(&r, 4);
		ringbuf_trace__rds(&r, RINGBUF_TRACE__S_IDENT);
		ringbuf_trace__rds(&r, RINGBUF_TRACE__S_TEXT);
		if (r.err || n > RINGBUF_TRACE__MAX_FIELDS)
			goto corrupt;
		for (j = 0; j < n; j++) {
			ringbuf_trace__rdn(&r, 14);
			ringbuf_trace__rds(&r, RINGBUF_TRACE__S_TEXT);
			ringbuf_trace__rds(&r, RINGBUF_TRACE__S_IDENT);
		}
		if (r.err)
			goto corrupt;
		nf += n;
	}
	if (r.off != r.len)
		goto corrupt; /* trailing bytes */
	l->events = (struct ringbuf_trace_event *)calloc(l->nevents ? l->nevents : 1, sizeof *l->events);
	l->fields = (struct ringbuf_trace_field *)calloc(nf ? nf : 1, sizeof *l->fields);
	if (!l->events || !l->fields)
		goto nomem;
	/* pass 2: build */
	r.off = fpos;
	nf = 0;
	for (i = 0; i < l->nevents; i++) {
		struct ringbuf_trace_event *e = &l->events[i];
		uint32_t id = ringbuf_trace__rdn(&r, 2), n = ringbuf_trace__rdn(&r, 2);
		uint32_t evsize = ringbuf_trace__rdn(&r, 4), k;
		e->name = ringbuf_trace__rds(&r, RINGBUF_TRACE__S_IDENT);
		e->print_fmt = ringbuf_trace__rds(&r, RINGBUF_TRACE__S_TEXT);
		if (r.err || id < 1 || id > 32767 || evsize < sizeof(struct ringbuf_trace_entry) ||
		    evsize > 65536)
			goto corrupt;
		for (k = 0; k < i; k++)
			if (l->events[k].id == id || strcmp(l->events[k].name, e->name) == 0)
				goto corrupt;
		e->id = (uint16_t)id;
		e->nfields = (uint16_t)n;
		e->size = evsize;
		e->fields = &l->fields[nf];
		for (j = 0; j < n; j++) {
			struct ringbuf_trace_field *f = &l->fields[nf + j];
			uint8_t b[2];
			f->offset = ringbuf_trace__rdn(&r, 4);
			f->size = ringbuf_trace__rdn(&r, 4);
			f->count = ringbuf_trace__rdn(&r, 4);
			b[0] = (uint8_t)ringbuf_trace__rdn(&r, 1);
			b[1] = (uint8_t)ringbuf_trace__rdn(&r, 1);
			f->is_signed = b[0];
			f->kind = b[1];
			f->type = ringbuf_trace__rds(&r, RINGBUF_TRACE__S_TEXT);
			f->name = ringbuf_trace__rds(&r, RINGBUF_TRACE__S_IDENT);
			if (r.err || !ringbuf_trace__field_ok(f, evsize))
				goto corrupt;
			for (k = 0; k < j; k++)
				if (strcmp(e->fields[k].name, f->name) == 0)
					goto corrupt;
		}
		nf += n;
		e->print = NULL;
		e->reg = reg;
		atomic_store_explicit(&e->state, id, memory_order_relaxed);
	}
	/* thread names: slots with a pid; a name is cut at 15 bytes, odd bytes shown as '?' */
	ncomm = atomic_load_explicit(&((const struct ringbuf_trace__uhdr *)area)->comm_next,
				     memory_order_relaxed);
	if (ncomm > h.comm_cap)
		ncomm = h.comm_cap;
	l->comms = (struct ringbuf_trace__lcomm *)calloc(ncomm ? ncomm : 1, sizeof *l->comms);
	if (!l->comms)
		goto nomem;
	for (i = 0; i < ncomm; i++) {
		struct ringbuf_trace__ucomm c;
		struct ringbuf_trace__lcomm *d = &l->comms[l->ncomms];
		memcpy(&c, (const char *)area + h.comm_off + (size_t)i * sizeof c, sizeof c);
		d->pid = atomic_load_explicit(&c.pid, memory_order_relaxed);
		if (d->pid <= 0)
			continue;
		for (j = 0; j < 15 && c.comm[j]; j++)
			d->comm[j] = (c.comm[j] > 0x20 && c.comm[j] < 0x7f) ? c.comm[j] : '?';
		if (j == 0)
			memcpy(d->comm, "<...>", 6);
		l->ncomms++;
	}
	reg->system = system;
	for (i = l->nevents; i-- > 0;) {
		l->events[i].next = atomic_load_explicit(&reg->first, memory_order_relaxed);
		atomic_store_explicit(&reg->first, &l->events[i], memory_order_relaxed);
	}
	reg->count = l->nevents;
	reg->loaded = l;
	return 0;
corrupt:
	ringbuf_trace__free_loaded(l);
	ringbuf_trace_registry_init(reg, NULL);
	return RINGBUF_ECORRUPT;
nomem:
	ringbuf_trace__free_loaded(l);
	ringbuf_trace_registry_init(reg, NULL);
	return RINGBUF_ENOMEM;
}

RINGBUF_API int ringbuf_trace_parse_registry(const void *area, size_t size, struct ringbuf_trace_registry *reg)
{
	return ringbuf_trace__parse(area, size, reg, true);
}

RINGBUF_API int ringbuf_trace_load_registry(struct ringbuf *rb, struct ringbuf_trace_registry *reg)
{
	size_t size;
	void *area, *copy;
	int r;
	if (!rb || !reg)
		return RINGBUF_EINVAL;
	area = ringbuf_user_area(rb, &size);
	if (!area || size < sizeof(struct ringbuf_trace__uhdr)) {
		ringbuf_trace_registry_init(reg, NULL);
		return RINGBUF_EFORMAT;
	}
	/* one copy: a live writer may still append names */
	copy = malloc(size);
	if (!copy)
		return RINGBUF_ENOMEM;
	memcpy(copy, area, size);
	r = ringbuf_trace__parse(copy, size, reg, true);
	free(copy);
	return r;
}

RINGBUF_API void ringbuf_trace_registry_free(struct ringbuf_trace_registry *reg)
{
	if (!reg || !reg->loaded)
		return;
	ringbuf_trace__free_loaded((struct ringbuf_trace__loaded *)reg->loaded);
	ringbuf_trace_registry_init(reg, NULL);
}

static int ringbuf_trace__uheader(struct ringbuf *rb, struct ringbuf_trace__uhdr *h)
{
	size_t size;
	const void *area = ringbuf_user_area(rb, &size);
	if (!area || size < sizeof *h)
		return RINGBUF_EFORMAT;
	memcpy(h, area, sizeof *h);
	if (atomic_load_explicit(&h->magic, memory_order_relaxed) != RINGBUF_TRACE__UMAGIC)
		return RINGBUF_EFORMAT;
	if (h->version != RINGBUF_TRACE__UVERSION)
		return RINGBUF_EVERSION;
	return 0;
}

RINGBUF_API int32_t ringbuf_trace_writer_pid(struct ringbuf *rb)
{
	struct ringbuf_trace__uhdr h;
	return ringbuf_trace__uheader(rb, &h) < 0 || h.writer_pid < 0 ? 0 : h.writer_pid;
}

RINGBUF_API int ringbuf_trace_writer_alive(struct ringbuf *rb)
{
	struct ringbuf_trace__uhdr h;
	uint64_t start;
	int r = ringbuf_trace__uheader(rb, &h);
	if (r < 0)
		return r;
	if (h.writer_pid <= 0)
		return RINGBUF_ECORRUPT;
	if (kill(h.writer_pid, 0) != 0 && errno != EPERM)
		return 0;
	start = ringbuf_trace__proc_start(h.writer_pid);
	/* another process with the recycled pid; a zombie counts as alive (its
	 * parent has not reaped it: it may be dying right now) */
	return start && h.writer_start && start != h.writer_start ? 0 : 1;
}

static void ringbuf_trace__reg_comm(const struct ringbuf_trace_registry *reg, int32_t pid, char *buf,
				    size_t size)
{
	const struct ringbuf_trace__loaded *l = reg ? (const struct ringbuf_trace__loaded *)reg->loaded : NULL;
	uint32_t i;
	if (!l) {
		ringbuf_trace_comm(pid, buf, size);
		return;
	}
	for (i = l->ncomms; i-- > 0;)
		if (l->comms[i].pid == pid) {
			snprintf(buf, size, "%s", l->comms[i].comm);
			return;
		}
	snprintf(buf, size, "%s", "<...>");
}

static void ringbuf_trace__loaded_cmdlines(struct ringbuf_trace__out *t,
					   const struct ringbuf_trace_registry *reg)
{
	const struct ringbuf_trace__loaded *l = (const struct ringbuf_trace__loaded *)reg->loaded;
	uint32_t i, j;
	for (i = 0; i < l->ncomms; i++) {
		char line[48];
		int k;
		bool dup = false;
		for (j = i + 1; j < l->ncomms && !dup; j++)
			dup = l->comms[j].pid == l->comms[i].pid;
		if (dup)
			continue; /* the newest name of a pid comes later */
		k = snprintf(line, sizeof line, "%d %s\n", (int)l->comms[i].pid, l->comms[i].comm);
		ringbuf_trace__put(t, line, (size_t)k);
	}
}

/* -- the print-format interpreter (events without a compiled print) -- */

/* One conversion rebuilt by the interpreter below (spec is built there from
 * checked parts, never copied from the stored text). */
static void ringbuf_trace__app_s(char *buf, size_t size, size_t *len, const char *spec, const char *v)
{
	int n = snprintf(*len < size ? buf + *len : NULL, *len < size ? size - *len : 0, spec, v);
	if (n > 0)
		*len += (size_t)n;
}
static void ringbuf_trace__app_i(char *buf, size_t size, size_t *len, const char *spec, long long v)
{
	int n = snprintf(*len < size ? buf + *len : NULL, *len < size ? size - *len : 0, spec, v);
	if (n > 0)
		*len += (size_t)n;
}
/* %c takes an int: a long long passed for it is undefined (armhf read the
 * other register of the pair and printed NUL, which ended the line) */
static void ringbuf_trace__app_c(char *buf, size_t size, size_t *len, const char *spec, int v)
{
	int n = snprintf(*len < size ? buf + *len : NULL, *len < size ? size - *len : 0, spec, v);
	if (n > 0)
		*len += (size_t)n;
}
static void ringbuf_trace__app_u(char *buf, size_t size, size_t *len, const char *spec,
				 unsigned long long v)
{
	int n = snprintf(*len < size ? buf + *len : NULL, *len < size ? size - *len : 0, spec, v);
	if (n > 0)
		*len += (size_t)n;
}

struct ringbuf_trace__arg {
	const struct ringbuf_trace_field *f; /* NULL: not understood */
	uint32_t index;                      /* array element */
	bool str;                            /* __get_str(f) */
};

static bool ringbuf_trace__isid(char c)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static const char *ringbuf_trace__skipsp(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/* Understand one argument expression [p, e). */
static struct ringbuf_trace__arg ringbuf_trace__parse_arg(const struct ringbuf_trace_event *ev,
							  const char *p, const char *e)
{
	struct ringbuf_trace__arg a = {NULL, 0, false};
	const char *n;
	size_t nl;
	unsigned i;
	for (;;) {
		p = ringbuf_trace__skipsp(p, e);
		while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (p < e && *p == '(') {
			/* a cast "(type)x" or parentheses "(x)" */
			const char *q = p + 1;
			int depth = 1;
			while (q < e && depth) {
				if (*q == '(')
					depth++;
				else if (*q == ')')
					depth--;
				q++;
			}
			if (depth)
				return a;
			if (q == e) { /* "(x)" */
				p++;
				e--;
			} else {
				p = q; /* skip the cast */
			}
			continue;
		}
		break;
	}
	if ((size_t)(e - p) > 10 && memcmp(p, "__get_str(", 10) == 0 && e[-1] == ')') {
		a.str = true;
		p = ringbuf_trace__skipsp(p + 10, e - 1);
		e--;
		while (e > p && e[-1] == ' ')
			e--;
	} else if ((size_t)(e - p) > 5 && memcmp(p, "REC->", 5) == 0) {
		p += 5;
	} else {
		return a;
	}
	n = p;
	while (p < e && ringbuf_trace__isid(*p))
		p++;
	nl = (size_t)(p - n);
	p = ringbuf_trace__skipsp(p, e);
	if (p < e && !a.str && *p == '[') {
		unsigned long v = 0;
		p = ringbuf_trace__skipsp(p + 1, e);
		if (p >= e || *p < '0' || *p > '9')
			return a;
		while (p < e && *p >= '0' && *p <= '9' && v < 1000000)
			v = v * 10 + (unsigned long)(*p++ - '0');
		p = ringbuf_trace__skipsp(p, e);
		if (p >= e || *p != ']')
			return a;
		p = ringbuf_trace__skipsp(p + 1, e);
		a.index = (uint32_t)v;
	}
	if (p != e || nl == 0)
		return a;
	for (i = 0; i < ev->nfields; i++) {
		const struct ringbuf_trace_field *f = &ev->fields[i];
		if (strlen(f->name) == nl && memcmp(f->name, n, nl) == 0) {
			bool ok = a.str ? f->kind == RINGBUF_TRACE_FIELD_STRING
				  : f->kind == RINGBUF_TRACE_FIELD_ARRAY ? a.index < f->count
				  : a.index == 0;
			if (ok)
				a.f = f;
			break;
		}
	}
	return a;
}

/* An integer field (element) of a record, sign-extended. */
static bool ringbuf_trace__field_int(const struct ringbuf_trace__arg *a, const void *rec, size_t rlen,
				     uint64_t *v)
{
	const struct ringbuf_trace_field *f = a->f;
	uint32_t esz, off;
	unsigned char b[8];
	if (!f || (f->kind != RINGBUF_TRACE_FIELD_INT && f->kind != RINGBUF_TRACE_FIELD_ARRAY))
		return false;
	esz = f->kind == RINGBUF_TRACE_FIELD_ARRAY ? f->size / f->count : f->size;
	off = f->offset + a->index * esz;
	if ((size_t)off + esz > rlen || esz > 8)
		return false;
	memcpy(b, (const unsigned char *)rec + off, esz);
	switch (esz) {
	case 1: *v = f->is_signed ? (uint64_t)(int64_t)(int8_t)b[0] : b[0]; break;
	case 2: { uint16_t x; memcpy(&x, b, 2); *v = f->is_signed ? (uint64_t)(int64_t)(int16_t)x : x; break; }
	case 4: { uint32_t x; memcpy(&x, b, 4); *v = f->is_signed ? (uint64_t)(int64_t)(int32_t)x : x; break; }
	default: memcpy(v, b, 8); break;
	}
	return true;
}

static void ringbuf_trace__interp(const struct ringbuf_trace_event *ev, const void *rec, size_t rlen,
				  char *buf, size_t size, size_t *len)
{
	const char *p, *e, *q;
	size_t n, fl = 0;
	char *fmt;
	struct ringbuf_trace__arg args[64];
	unsigned nargs = 0, ai = 0;
	if (!ev->print_fmt)
		return;
	ringbuf_trace__print_fmt(ev->print_fmt, &p, &n);
	e = p + n;
	fmt = (char *)malloc(n + 1);
	if (!fmt)
		return;
	/* the literal: "..." pieces, C escapes */
	while ((p = ringbuf_trace__skipsp(p, e)) < e && *p == '"') {
		for (p++; p < e && *p != '"'; p++) {
			char c = *p;
			if (c == '\\' && p + 1 < e) {
				c = *++p;
				c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
			}
			fmt[fl++] = c;
		}
		if (p >= e)
			break;
		p++; /* closing quote */
	}
	fmt[fl] = 0;
	/* the arguments, split at top-level commas */
	p = ringbuf_trace__skipsp(p, e);
	if (p < e && *p == ',') {
		p++;
		while (p < e && nargs < 64) {
			int depth = 0;
			for (q = p; q < e && (depth || *q != ','); q++) {
				if (*q == '(' || *q == '[')
					depth++;
				else if ((*q == ')' || *q == ']') && depth)
					depth--;
			}
			args[nargs++] = ringbuf_trace__parse_arg(ev, p, q);
			p = q < e ? q + 1 : q;
		}
	}
	/* the conversions: rebuilt from checked parts, never the stored text */
	for (q = fmt; *q;) {
		char spec[32], flags[8];
		size_t nfl = 0, sl;
		int width = -1, prec = -1, lmod = 0; /* 0 int, 1 hh, 2 h, 3 64-bit */
		char conv;
		const struct ringbuf_trace__arg *a;
		uint64_t v = 0;
		if (*q != '%') {
			const char *s = q;
			while (*q && *q != '%')
				q++;
			ringbuf_trace__app(buf, size, len, "%.*s", (int)(q - s), s);
			continue;
		}
		q++;
		if (*q == '%') {
			ringbuf_trace__app(buf, size, len, "%%");
			q++;
			continue;
		}
		while (*q && strchr("-+ #0", *q) && nfl < sizeof flags - 1)
			flags[nfl++] = *q++;
		flags[nfl] = 0;
		if (*q >= '0' && *q <= '9')
			for (width = 0; *q >= '0' && *q <= '9'; q++)
				width = width < 1000 ? width * 10 + (*q - '0') : width;
		if (*q == '.')
			for (q++, prec = 0; *q >= '0' && *q <= '9'; q++)
				prec = prec < 1000 ? prec * 10 + (*q - '0') : prec;
		if (q[0] == 'h' && q[1] == 'h') { lmod = 1; q += 2; }
		else if (*q == 'h') { lmod = 2; q++; }
		else if (q[0] == 'l' && q[1] == 'l') { lmod = 3; q += 2; }
		else if (*q == 'l' || *q == 'z' || *q == 'j' || *q == 't') { lmod = 3; q++; }
		conv = *q;
		if (!conv)
			break;
		q++;
		a = ai < nargs ? &args[ai] : NULL;
		ai++;
		if (width > 999)
			width = 999;
		if (prec > 999)
			prec = 999;
		sl = (size_t)snprintf(spec, sizeof spec, "%%%s", flags);
		if (width >= 0)
			sl += (size_t)snprintf(spec + sl, sizeof spec - sl, "%d", width);
		if (prec >= 0)
			sl += (size_t)snprintf(spec + sl, sizeof spec - sl, ".%d", prec);
		if (conv == 's') {
			char tmp[RINGBUF_TRACE_STR_MAX + 1];
			const char *s = NULL;
			if (a && a->f && a->str) {
				uint64_t loc;
				struct ringbuf_trace__arg ia = *a;
				struct ringbuf_trace_field lf = *a->f;
				lf.kind = RINGBUF_TRACE_FIELD_INT;
				lf.count = 1;
				lf.is_signed = 0;
				ia.f = &lf;
				if (ringbuf_trace__field_int(&ia, rec, rlen, &loc))
					s = ringbuf_trace__get_str(rec, rlen, (uint32_t)loc);
			} else if (a && a->f && a->f->kind == RINGBUF_TRACE_FIELD_CHARS &&
				   (size_t)a->f->offset + a->f->size <= rlen) {
				size_t k, m = a->f->size < sizeof tmp - 1 ? a->f->size : sizeof tmp - 1;
				const char *src = (const char *)rec + a->f->offset;
				for (k = 0; k < m && src[k]; k++)
					tmp[k] = src[k];
				tmp[k] = 0;
				s = tmp;
			}
			snprintf(spec + sl, sizeof spec - sl, "s");
			ringbuf_trace__app_s(buf, size, len, spec, s ? s : "?");
		} else if (strchr("diuxXoc", conv) && a && ringbuf_trace__field_int(a, rec, rlen, &v)) {
			bool sgn = conv == 'd' || conv == 'i';
			if (conv == 'c') {
				snprintf(spec + sl, sizeof spec - sl, "c");
				ringbuf_trace__app_c(buf, size, len, spec, (int)(unsigned char)v);
				continue;
			}
			if (lmod == 1)
				v = sgn ? (uint64_t)(int64_t)(signed char)v : (unsigned char)v;
			else if (lmod == 2)
				v = sgn ? (uint64_t)(int64_t)(short)v : (unsigned short)v;
			else if (lmod == 0)
				v = sgn ? (uint64_t)(int64_t)(int)v : (unsigned)v;
			snprintf(spec + sl, sizeof spec - sl, "ll%c", conv);
			if (sgn)
				ringbuf_trace__app_i(buf, size, len, spec, (long long)v);
			else
				ringbuf_trace__app_u(buf, size, len, spec, (unsigned long long)v);
		} else if (conv == 'p' && a && ringbuf_trace__field_int(a, rec, rlen, &v)) {
			ringbuf_trace__app(buf, size, len, "0x%llx", (unsigned long long)v);
		} else {
			ringbuf_trace__app(buf, size, len, "?");
		}
	}
	free(fmt);
}

/* ---- >>filter: compiler ---------------------------------------------------
 *
 * The text is parsed by recursive descent into straight-line code for an
 * accumulator machine: a predicate sets acc, JT/JF jump to the end of an ||
 * / && chain when acc already decides it (short circuit), NOT inverts acc.
 * Integer predicates are normalised at compile time: the field is loaded,
 * sign-extended for signed fields, and both sides are offset by 2^63 for
 * signed fields so that one unsigned comparison serves both signednesses. */

#define RINGBUF_TRACE__FTEXT_MAX 4096
#define RINGBUF_TRACE__FPRED_MAX 64
#define RINGBUF_TRACE__FDEPTH_MAX 32
#define RINGBUF_TRACE__FINSN_MAX 256

enum {
	RINGBUF_TRACE__FI_INT = 0, /* acc = cmp(load(rec + off), val) */
	RINGBUF_TRACE__FI_CHARS,   /* fixed char array vs string */
	RINGBUF_TRACE__FI_STR,     /* __data_loc string vs string */
	RINGBUF_TRACE__FI_JT,      /* if (acc) goto jmp */
	RINGBUF_TRACE__FI_JF,      /* if (!acc) goto jmp */
	RINGBUF_TRACE__FI_NOT,     /* acc = !acc */
};
enum {
	RINGBUF_TRACE__FC_EQ = 0, RINGBUF_TRACE__FC_NE, RINGBUF_TRACE__FC_LT, RINGBUF_TRACE__FC_LE,
	RINGBUF_TRACE__FC_GT, RINGBUF_TRACE__FC_GE, RINGBUF_TRACE__FC_AND, RINGBUF_TRACE__FC_GLOB,
};

struct ringbuf_trace__finsn {
	uint8_t op;    /* RINGBUF_TRACE__FI_* */
	uint8_t cmp;   /* RINGBUF_TRACE__FC_* */
	uint8_t width; /* integer bytes 1, 2, 4, 8 */
	uint8_t sgn;   /* signed field */
	uint32_t off;  /* field offset in the record */
	uint32_t truth;/* integer comparisons: bit (v > val) * 2 + (v == val) says true */
	uint32_t arg;  /* jumps: target; strings: offset in pool; chars: also */
	uint32_t size; /* chars: the array's size */
	uint64_t val;  /* integers: the value (biased for signed fields) */
	uint64_t bias; /* 2^63 for signed fields' comparisons, else 0 */
	uint64_t sext; /* signed fields: the sign bit of the width (sign extension), else 0 */
};

RINGBUF__FLEX_BEGIN
struct ringbuf_trace__prog {
	struct ringbuf_trace__prog *next; /* kept programs (no grace period possible) */
	char *text;                       /* the text as set, trimmed */
	char *pool;                       /* string constants, NUL-terminated */
	uint32_t n;
	uint32_t one_int;                 /* one integer predicate and no trigger: the leaf path */
	uint32_t has_filter;              /* 0: triggers only, every record kept */
	uint32_t ntrig;
	struct ringbuf_trace__trig *trig; /* owned; with their conditions */
	struct ringbuf_trace__finsn insn[];
};
RINGBUF__FLEX_END

/* >>filter: triggers */
enum {
	RINGBUF_TRACE__T_TRACEOFF = 0,
	RINGBUF_TRACE__T_TRACEON,
	RINGBUF_TRACE__T_ENABLE,
	RINGBUF_TRACE__T_DISABLE,
	RINGBUF_TRACE__T_SNAPSHOT,   /* after the commit (>>snapshot) */
	RINGBUF_TRACE__T_STACKTRACE, /* after the commit */
	RINGBUF_TRACE__T_COUNT
};
#define RINGBUF_TRACE__TRIG_MAX 8
struct ringbuf_trace__trig {
	uint32_t action;                    /* RINGBUF_TRACE__T_* */
	_Atomic(int64_t) count;             /* firings left, -1: unlimited */
	struct ringbuf_trace_event *target; /* enable_event / disable_event */
	struct ringbuf_trace_snapshot *snap; /* snapshot */
	struct ringbuf_trace__prog *cond;   /* its `if` filter, NULL: always */
};
/* What the section asks the emitter to do after the commit (snapshot,
 * stacktrace): the program may be freed once the section ends, so it is
 * handed out as values. */
struct ringbuf_trace__post {
	struct ringbuf_trace_snapshot *snap;
	uint32_t stack;
};

struct ringbuf_trace__fparse {
	const struct ringbuf_trace_event *ev;
	const char *text;
	size_t pos;
	struct ringbuf_trace__finsn insn[RINGBUF_TRACE__FINSN_MAX];
	uint32_t n, npred, depth;
	char pool[RINGBUF_TRACE__FTEXT_MAX + RINGBUF_TRACE__FPRED_MAX];
	uint32_t pool_len;
	struct ringbuf_trace_filter_error *err;
	bool failed;
};

static bool ringbuf_trace__ferr(struct ringbuf_trace__fparse *p, size_t pos, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static bool ringbuf_trace__ferr(struct ringbuf_trace__fparse *p, size_t pos, const char *fmt, ...)
{
	va_list ap;
	int k;
	if (p->failed)
		return false;
	p->failed = true;
	if (!p->err)
		return false;
	p->err->pos = (int)pos;
	k = snprintf(p->err->msg, sizeof p->err->msg, "pos %d: ", (int)pos);
	if (k < 0)
		k = 0;
	va_start(ap, fmt);
	vsnprintf(p->err->msg + k, sizeof p->err->msg - (size_t)k, fmt, ap);
	va_end(ap);
	return false;
}

static bool ringbuf_trace__fident_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static bool ringbuf_trace__fident_char(char c)
{
	return ringbuf_trace__fident_start(c) || (c >= '0' && c <= '9');
}
static void ringbuf_trace__fskip(struct ringbuf_trace__fparse *p)
{
	while (p->text[p->pos] == ' ' || p->text[p->pos] == '\t' || p->text[p->pos] == '\n' ||
	       p->text[p->pos] == '\r')
		p->pos++;
}
/* Consume the token tok if it comes next (after blanks). */
static bool ringbuf_trace__faccept(struct ringbuf_trace__fparse *p, const char *tok)
{
	size_t n = strlen(tok);
	ringbuf_trace__fskip(p);
	if (strncmp(p->text + p->pos, tok, n) != 0)
		return false;
	p->pos += n;
	return true;
}

static const struct ringbuf_trace_field ringbuf_trace__common_fields[4] = {
	{"unsigned short", "common_type", 0, 2, 1, 0, RINGBUF_TRACE_FIELD_INT},
	{"unsigned char", "common_flags", 2, 1, 1, 0, RINGBUF_TRACE_FIELD_INT},
	{"unsigned char", "common_preempt_count", 3, 1, 1, 0, RINGBUF_TRACE_FIELD_INT},
	{"int", "common_pid", 4, 4, 1, 1, RINGBUF_TRACE_FIELD_INT},
};

static const struct ringbuf_trace_field *ringbuf_trace__ffield(const struct ringbuf_trace_event *ev,
								const char *name, size_t n)
{
	unsigned i;
	for (i = 0; i < 4; i++)
		if (strlen(ringbuf_trace__common_fields[i].name) == n &&
		    memcmp(ringbuf_trace__common_fields[i].name, name, n) == 0)
			return &ringbuf_trace__common_fields[i];
	for (i = 0; i < ev->nfields; i++)
		if (strlen(ev->fields[i].name) == n && memcmp(ev->fields[i].name, name, n) == 0)
			return &ev->fields[i];
	return NULL;
}

static bool ringbuf_trace__femit(struct ringbuf_trace__fparse *p, const struct ringbuf_trace__finsn *in,
				 size_t pos)
{
	if (p->n >= RINGBUF_TRACE__FINSN_MAX)
		return ringbuf_trace__ferr(p, pos, "filter too complex (more than %d operations)",
					   RINGBUF_TRACE__FINSN_MAX);
	p->insn[p->n++] = *in;
	return true;
}

/* An integer constant (base 0 as strtoull: 0x hex, 0 octal, decimal) with an
 * optional leading '-'. */
static bool ringbuf_trace__fnumber(struct ringbuf_trace__fparse *p, const struct ringbuf_trace_field *f,
				   uint64_t *out)
{
	size_t start = p->pos;
	const char *s = p->text + p->pos;
	bool neg = false;
	unsigned base = 10;
	uint64_t v = 0;
	size_t i = 0, digits = 0;
	if (s[0] == '-') {
		neg = true;
		i = 1;
	}
	if (s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
		base = 16;
		i += 2;
	} else if (s[i] == '0') {
		base = 8;
	}
	for (;; i++, digits++) {
		char c = s[i];
		unsigned d;
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else if (ringbuf_trace__fident_char(c))
			return ringbuf_trace__ferr(p, start + i, "bad digit '%c' in a number", c);
		else
			break;
		if (d >= base)
			return ringbuf_trace__ferr(p, start + i, "bad digit '%c' in a number", c);
		if (v > (UINT64_MAX - d) / base)
			return ringbuf_trace__ferr(p, start, "number out of range");
		v = v * base + d;
	}
	if (digits == 0)
		return ringbuf_trace__ferr(p, start, "expected a number for integer field '%s'", f->name);
	if (neg) {
		if (!f->is_signed)
			return ringbuf_trace__ferr(p, start, "negative number for unsigned field '%s'",
						   f->name);
		if (v > (uint64_t)INT64_MAX + 1)
			return ringbuf_trace__ferr(p, start, "number out of range");
		v = (uint64_t)0 - v;
	} else if (f->is_signed && v > (uint64_t)INT64_MAX) {
		return ringbuf_trace__ferr(p, start, "number out of range for signed field '%s'", f->name);
	}
	p->pos = start + i;
	*out = v;
	return true;
}

/* A string constant: quoted ("..." or '...', no escapes) or a bare word. */
static bool ringbuf_trace__fstring(struct ringbuf_trace__fparse *p, const struct ringbuf_trace_field *f,
				   uint32_t *pool_off)
{
	size_t start = p->pos, n = 0;
	const char *s = p->text + p->pos, *b;
	if (s[0] == '"' || s[0] == '\'') {
		const char *e = strchr(s + 1, s[0]);
		if (!e)
			return ringbuf_trace__ferr(p, start, "unterminated string");
		b = s + 1;
		n = (size_t)(e - b);
		p->pos += n + 2;
	} else {
		while (s[n] && !strchr(" \t\r\n()&|!=<>~\"'", s[n]))
			n++;
		if (n == 0)
			return ringbuf_trace__ferr(p, start, "expected a string for field '%s'", f->name);
		b = s;
		p->pos += n;
	}
	if (memchr(b, 0, n))
		return ringbuf_trace__ferr(p, start, "unterminated string");
	*pool_off = p->pool_len;
	memcpy(p->pool + p->pool_len, b, n);
	p->pool[p->pool_len + n] = 0;
	p->pool_len += (uint32_t)n + 1;
	return true;
}

static bool ringbuf_trace__fpred(struct ringbuf_trace__fparse *p)
{
	static const struct { const char *tok; uint8_t cmp; } ops[] = {
		{"==", RINGBUF_TRACE__FC_EQ}, {"!=", RINGBUF_TRACE__FC_NE}, {"<=", RINGBUF_TRACE__FC_LE},
		{">=", RINGBUF_TRACE__FC_GE}, {"<", RINGBUF_TRACE__FC_LT},  {">", RINGBUF_TRACE__FC_GT},
		{"~", RINGBUF_TRACE__FC_GLOB}, {"&", RINGBUF_TRACE__FC_AND},
	};
	struct ringbuf_trace__finsn in;
	const struct ringbuf_trace_field *f;
	size_t fpos, opos, n = 0;
	unsigned i;
	int op = -1;
	ringbuf_trace__fskip(p);
	fpos = p->pos;
	if (!p->text[fpos])
		return ringbuf_trace__ferr(p, fpos, "expected a field name, found the end");
	if (!ringbuf_trace__fident_start(p->text[fpos]))
		return ringbuf_trace__ferr(p, fpos, "expected a field name, found '%c'", p->text[fpos]);
	while (ringbuf_trace__fident_char(p->text[fpos + n]))
		n++;
	f = ringbuf_trace__ffield(p->ev, p->text + fpos, n);
	if (!f)
		return ringbuf_trace__ferr(p, fpos, "unknown field '%.*s'", (int)(n > 64 ? 64 : n),
					   p->text + fpos);
	if (f->kind == RINGBUF_TRACE_FIELD_ARRAY)
		return ringbuf_trace__ferr(p, fpos, "field '%s' is an array (not filterable)", f->name);
	p->pos = fpos + n;
	if (++p->npred > RINGBUF_TRACE__FPRED_MAX)
		return ringbuf_trace__ferr(p, fpos, "more than %d predicates", RINGBUF_TRACE__FPRED_MAX);
	ringbuf_trace__fskip(p);
	opos = p->pos;
	/* "&&" is not "&": a field followed by && has no operator */
	if (strncmp(p->text + opos, "&&", 2) != 0)
		for (i = 0; i < sizeof ops / sizeof ops[0]; i++)
			if (ringbuf_trace__faccept(p, ops[i].tok)) {
				op = ops[i].cmp;
				break;
			}
	if (op < 0) {
		if (!p->text[opos])
			return ringbuf_trace__ferr(p, opos, "expected an operator after '%s', found the end",
						   f->name);
		return ringbuf_trace__ferr(p, opos, "expected an operator after '%s'", f->name);
	}
	memset(&in, 0, sizeof in);
	in.cmp = (uint8_t)op;
	in.off = f->offset;
	ringbuf_trace__fskip(p);
	if (!p->text[p->pos])
		return ringbuf_trace__ferr(p, p->pos, "expected a value after the operator, found the end");
	if (f->kind == RINGBUF_TRACE_FIELD_INT) {
		uint64_t v = 0;
		if (op == RINGBUF_TRACE__FC_GLOB)
			return ringbuf_trace__ferr(p, opos, "'~' needs a string field; '%s' is an integer",
						   f->name);
		if (!ringbuf_trace__fnumber(p, f, &v))
			return false;
		in.op = RINGBUF_TRACE__FI_INT;
		in.width = (uint8_t)f->size;
		in.sgn = f->is_signed;
		if (in.width != 1 && in.width != 2 && in.width != 4 && in.width != 8)
			return ringbuf_trace__ferr(p, fpos, "field '%s' has an unsupported size %u", f->name,
						   (unsigned)f->size);
		/* signed: bias both sides by 2^63 (unsigned order = signed order);
		 * the & test takes the value cut to the field's width (as the
		 * kernel, which tests in the field's type) */
		in.bias = in.sgn && op != RINGBUF_TRACE__FC_AND ? (uint64_t)1 << 63 : 0;
		in.sext = in.sgn && in.width < 8 ? (uint64_t)1 << (8 * in.width - 1) : 0;
		in.val = v ^ in.bias;
		{
			static const uint8_t truth[] = {2, 5, 1, 3, 4, 6}; /* EQ NE LT LE GT GE */
			in.truth = op < RINGBUF_TRACE__FC_AND ? truth[op] : 0;
		}
		if (op == RINGBUF_TRACE__FC_AND && in.width < 8)
			in.val &= ((uint64_t)1 << (8 * in.width)) - 1;
	} else {
		if (op != RINGBUF_TRACE__FC_EQ && op != RINGBUF_TRACE__FC_NE && op != RINGBUF_TRACE__FC_GLOB)
			return ringbuf_trace__ferr(p, opos,
						   "string field '%s' takes only ==, != and ~", f->name);
		if (!ringbuf_trace__fstring(p, f, &in.arg))
			return false;
		in.op = f->kind == RINGBUF_TRACE_FIELD_CHARS ? RINGBUF_TRACE__FI_CHARS : RINGBUF_TRACE__FI_STR;
		in.size = f->size;
	}
	return ringbuf_trace__femit(p, &in, fpos);
}

static bool ringbuf_trace__for(struct ringbuf_trace__fparse *p);

static bool ringbuf_trace__fnot(struct ringbuf_trace__fparse *p)
{
	size_t pos;
	ringbuf_trace__fskip(p);
	pos = p->pos;
	if (p->text[pos] == '!' && p->text[pos + 1] != '=') {
		struct ringbuf_trace__finsn in;
		p->pos++;
		if (++p->depth > RINGBUF_TRACE__FDEPTH_MAX)
			return ringbuf_trace__ferr(p, pos, "nested more than %d deep", RINGBUF_TRACE__FDEPTH_MAX);
		if (!ringbuf_trace__fnot(p))
			return false;
		p->depth--;
		memset(&in, 0, sizeof in);
		in.op = RINGBUF_TRACE__FI_NOT;
		return ringbuf_trace__femit(p, &in, pos);
	}
	if (p->text[pos] == '(') {
		p->pos++;
		if (++p->depth > RINGBUF_TRACE__FDEPTH_MAX)
			return ringbuf_trace__ferr(p, pos, "nested more than %d deep", RINGBUF_TRACE__FDEPTH_MAX);
		if (!ringbuf_trace__for(p))
			return false;
		p->depth--;
		if (!ringbuf_trace__faccept(p, ")"))
			return ringbuf_trace__ferr(p, p->pos, "expected ')' to close the '(' at pos %d",
						   (int)pos);
		return true;
	}
	return ringbuf_trace__fpred(p);
}

/* chain := sub (tok sub)*, each tok a conditional jump to the chain's end */
static bool ringbuf_trace__fchain(struct ringbuf_trace__fparse *p, const char *tok, uint8_t jop,
				  bool (*sub)(struct ringbuf_trace__fparse *))
{
	uint32_t jumps[RINGBUF_TRACE__FINSN_MAX], nj = 0, i;
	if (!sub(p))
		return false;
	for (;;) {
		struct ringbuf_trace__finsn in;
		size_t pos;
		ringbuf_trace__fskip(p);
		pos = p->pos;
		if (!ringbuf_trace__faccept(p, tok))
			break;
		memset(&in, 0, sizeof in);
		in.op = jop;
		jumps[nj++] = p->n;
		if (!ringbuf_trace__femit(p, &in, pos) || !sub(p))
			return false;
	}
	for (i = 0; i < nj; i++)
		p->insn[jumps[i]].arg = p->n;
	return true;
}

static bool ringbuf_trace__fand(struct ringbuf_trace__fparse *p)
{
	return ringbuf_trace__fchain(p, "&&", RINGBUF_TRACE__FI_JF, ringbuf_trace__fnot);
}

static bool ringbuf_trace__for(struct ringbuf_trace__fparse *p)
{
	return ringbuf_trace__fchain(p, "||", RINGBUF_TRACE__FI_JT, ringbuf_trace__fand);
}

/* Text trimmed of blanks: [*b, *e). True when it clears ("", "0"). */
static bool ringbuf_trace__ftrim(const char *text, size_t *b, size_t *e)
{
	size_t n = text ? strlen(text) : 0, s = 0;
	while (s < n && strchr(" \t\r\n", text[s]))
		s++;
	while (n > s && strchr(" \t\r\n", text[n - 1]))
		n--;
	*b = s;
	*e = n;
	return n == s || (n - s == 1 && text[s] == '0');
}

/* Compile text for ev: a program (malloc) or NULL with err filled (*rc set). */
static struct ringbuf_trace__prog *ringbuf_trace__fcompile(const struct ringbuf_trace_event *ev,
							    const char *text,
							    struct ringbuf_trace_filter_error *err, int *rc)
{
	struct ringbuf_trace__fparse *p;
	struct ringbuf_trace__prog *prog;
	size_t b, e, sz;
	*rc = RINGBUF_EINVAL;
	if (err) {
		err->pos = -1;
		snprintf(err->event, sizeof err->event, "%s", ev->name);
		err->msg[0] = 0;
	}
	ringbuf_trace__ftrim(text, &b, &e);
	if (e - b > RINGBUF_TRACE__FTEXT_MAX) {
		if (err) {
			err->pos = RINGBUF_TRACE__FTEXT_MAX;
			snprintf(err->msg, sizeof err->msg, "pos %d: filter longer than %d bytes",
				 RINGBUF_TRACE__FTEXT_MAX, RINGBUF_TRACE__FTEXT_MAX);
		}
		return NULL;
	}
	p = (struct ringbuf_trace__fparse *)calloc(1, sizeof *p);
	if (!p) {
		*rc = RINGBUF_ENOMEM;
		return NULL;
	}
	p->ev = ev;
	p->text = text;
	p->pos = b;
	p->err = err;
	if (b == e) {
		ringbuf_trace__ferr(p, b, "empty filter");
	} else if (ringbuf_trace__for(p)) {
		ringbuf_trace__fskip(p);
		if (p->pos < e) {
			if (p->text[p->pos] == ')')
				ringbuf_trace__ferr(p, p->pos, "unbalanced ')'");
			else
				ringbuf_trace__ferr(p, p->pos, "expected && or || or the end, found '%c'",
						    p->text[p->pos]);
		}
	}
	if (p->failed) {
		free(p);
		return NULL;
	}
	sz = sizeof *prog + p->n * sizeof(struct ringbuf_trace__finsn);
	prog = (struct ringbuf_trace__prog *)malloc(sz + (e - b + 1) + p->pool_len);
	if (!prog) {
		free(p);
		*rc = RINGBUF_ENOMEM;
		return NULL;
	}
	prog->next = NULL;
	prog->n = p->n;
	prog->one_int = p->n == 1 && p->insn[0].op == RINGBUF_TRACE__FI_INT;
	prog->has_filter = 1;
	prog->ntrig = 0;
	prog->trig = NULL;
	memcpy(prog->insn, p->insn, p->n * sizeof(struct ringbuf_trace__finsn));
	prog->text = (char *)prog + sz;
	memcpy(prog->text, text + b, e - b);
	prog->text[e - b] = 0;
	prog->pool = prog->text + (e - b + 1);
	memcpy(prog->pool, p->pool, p->pool_len);
	free(p);
	*rc = 0;
	return prog;
}

/* ---- >>filter: evaluation (async-signal-safe) ------------------------------ */

/* The field zero-extended; sign extension is (v ^ sext) - sext. */
static inline uint64_t ringbuf_trace__fload(const unsigned char *q, unsigned width)
{
	uint16_t u16;
	uint32_t u32;
	uint64_t v;
	switch (width) {
	case 1:
		return *q;
	case 2:
		memcpy(&u16, q, 2);
		return u16;
	case 4:
		memcpy(&u32, q, 4);
		return u32;
	default:
		memcpy(&v, q, 8);
		return v;
	}
}

static inline bool ringbuf_trace__fint(const struct ringbuf_trace__finsn *in, const unsigned char *r)
{
	uint64_t v = ((ringbuf_trace__fload(r + in->off, in->width) ^ in->sext) - in->sext) ^ in->bias;
	if (RINGBUF__UNLIKELY(in->cmp == RINGBUF_TRACE__FC_AND))
		return (v & in->val) != 0;
	/* no jump on the operator: the outcome (<, ==, >) picks a bit of truth */
	return (in->truth >> ((unsigned)(v > in->val) * 2u + (unsigned)(v == in->val))) & 1u;
}

static bool ringbuf_trace__fstr_match(uint8_t cmp, const char *s, const char *k)
{
	if (cmp == RINGBUF_TRACE__FC_GLOB)
		return ringbuf_trace_glob_match(k, s);
	return (strcmp(s, k) == 0) == (cmp == RINGBUF_TRACE__FC_EQ);
}

/* A char array field against a string (out of line: its copy buffer stays
 * off the interpreter's frame). */
static __attribute__((noinline)) bool ringbuf_trace__fchars(const struct ringbuf_trace__finsn *in,
							    const unsigned char *r, const char *pool)
{
	/* the emitter zero-fills: the array holds a NUL unless it is 0 bytes
	 * long; copied to be safe with any record */
	char tmp[RINGBUF_TRACE_STR_MAX + 1];
	size_t n = in->size < RINGBUF_TRACE_STR_MAX ? in->size : RINGBUF_TRACE_STR_MAX, k;
	const char *src = (const char *)r + in->off;
	for (k = 0; k < n && src[k]; k++)
		tmp[k] = src[k];
	tmp[k] = 0;
	return ringbuf_trace__fstr_match(in->cmp, tmp, pool + in->arg);
}

static __attribute__((noinline)) bool ringbuf_trace__frun(const struct ringbuf_trace__prog *prog,
							  const void *rec, size_t len)
{
	const unsigned char *r = (const unsigned char *)rec;
	const struct ringbuf_trace__finsn *in = prog->insn, *end = prog->insn + prog->n;
	bool acc = false;
	while (in < end) {
		switch (in->op) {
		case RINGBUF_TRACE__FI_INT:
			acc = ringbuf_trace__fint(in, r);
			in++;
			break;
		case RINGBUF_TRACE__FI_CHARS:
			acc = ringbuf_trace__fchars(in, r, prog->pool);
			in++;
			break;
		case RINGBUF_TRACE__FI_STR: {
			uint32_t loc;
			memcpy(&loc, r + in->off, 4);
			acc = ringbuf_trace__fstr_match(in->cmp, ringbuf_trace__get_str(rec, len, loc),
							prog->pool + in->arg);
			in++;
			break;
		}
		case RINGBUF_TRACE__FI_JT:
			in = acc ? prog->insn + in->arg : in + 1;
			break;
		case RINGBUF_TRACE__FI_JF:
			in = acc ? in + 1 : prog->insn + in->arg;
			break;
		default:
			acc = !acc;
			in++;
			break;
		}
	}
	return acc;
}

/* ---- >>filter: the writers' slots and the grace period (>>design) --------- */

#ifndef RINGBUF_TRACE_FILTER_SLOTS
#define RINGBUF_TRACE_FILTER_SLOTS 256
#endif
#define RINGBUF_TRACE__FDEPTH 0xffu
#define RINGBUF_TRACE__FGEN 0x100u

struct ringbuf_trace__fslot {
	_Atomic(uint32_t) word;  /* depth | generation << 8 (>>design F1/F5) */
	_Atomic(int32_t) owner;  /* thread id, 0: free */
	char pad[56];
};
static struct ringbuf_trace__fslot ringbuf_trace__fslots[RINGBUF_TRACE_FILTER_SLOTS];
static _Atomic(uint32_t) ringbuf_trace__fslots_used; /* high-water mark: S3 scans below it */
static _Atomic(uint32_t) ringbuf_trace__fshared;     /* the full table's fallback: depth */
static struct ringbuf_trace__prog *ringbuf_trace__fkept; /* never freed (>>design fallbacks) */
static pthread_mutex_t ringbuf_trace__fmutex = PTHREAD_MUTEX_INITIALIZER;
static int ringbuf_trace__fmb; /* membarrier: 0 not tried, 1 registered, -1 unusable */
#ifdef RINGBUF_TESTING
static _Atomic(int) ringbuf_trace__fno_mb; /* tests: behave as without membarrier */
static _Atomic(uint32_t) ringbuf_trace__fkept_count;
#endif

static bool ringbuf_trace__fslot_take(uint32_t i, int32_t tid)
{
	int32_t zero = 0;
	uint32_t used;
	if (!atomic_compare_exchange_strong_explicit(&ringbuf_trace__fslots[i].owner, &zero, tid,
						     memory_order_acq_rel, memory_order_relaxed))
		return false;
	used = atomic_load_explicit(&ringbuf_trace__fslots_used, memory_order_relaxed);
	while (used < i + 1 &&
	       !atomic_compare_exchange_weak_explicit(&ringbuf_trace__fslots_used, &used, i + 1,
						      memory_order_release, memory_order_relaxed))
		;
	return true;
}

/* The calling thread's slot (claimed on first use), NULL: table full. */
static __attribute__((noinline)) struct ringbuf_trace__fslot *ringbuf_trace__fslot_claim(void)
{
	struct ringbuf_trace__self *s = &ringbuf_trace__self;
	int32_t tid = ringbuf_trace_thread_id();
	int saved = errno;
	uint32_t i, got = RINGBUF_TRACE_FILTER_SLOTS;
	for (i = 0; i < RINGBUF_TRACE_FILTER_SLOTS && got == RINGBUF_TRACE_FILTER_SLOTS; i++)
		if (atomic_load_explicit(&ringbuf_trace__fslots[i].owner, memory_order_relaxed) == 0 &&
		    ringbuf_trace__fslot_take(i, tid))
			got = i;
	/* full: take over the slot of a thread that is gone */
	for (i = 0; i < RINGBUF_TRACE_FILTER_SLOTS && got == RINGBUF_TRACE_FILTER_SLOTS; i++) {
		int32_t o = atomic_load_explicit(&ringbuf_trace__fslots[i].owner, memory_order_relaxed);
		if (o == tid || o == 0)
			continue;
		if (syscall(SYS_tgkill, (long)getpid(), (long)o, 0L) == -1 && errno == ESRCH &&
		    atomic_compare_exchange_strong(&ringbuf_trace__fslots[i].owner, &o, tid)) {
			/* a section its thread left unfinished ends here. Acquire:
			 * pairs with the dead thread's last [F5] release, so that its
			 * reads of programs happen before our release store below
			 * and, through S3's acquire of it, before their free (a
			 * relaxed load broke that chain: ThreadSanitizer reported the
			 * dead thread's read of a trigger's program racing the free) */
			uint32_t w = atomic_load_explicit(&ringbuf_trace__fslots[i].word, memory_order_acquire);
			atomic_store_explicit(&ringbuf_trace__fslots[i].word,
					      (w & ~RINGBUF_TRACE__FDEPTH) + RINGBUF_TRACE__FGEN,
					      memory_order_release);
			got = i;
		}
	}
	errno = saved;
	if (got == RINGBUF_TRACE_FILTER_SLOTS) {
		if (s->fslot == NULL)
			s->fslot = (void *)1; /* do not scan again at every event */
		return NULL;
	}
	/* a signal handler may have claimed one for this thread meanwhile */
	atomic_signal_fence(memory_order_seq_cst);
	if ((uintptr_t)s->fslot < 2) {
		s->fslot = &ringbuf_trace__fslots[got];
	} else {
		atomic_store_explicit(&ringbuf_trace__fslots[got].owner, 0, memory_order_release);
		return (struct ringbuf_trace__fslot *)s->fslot;
	}
	return &ringbuf_trace__fslots[got];
}

/* [F5] leave: the outermost section moves the generation on; release pairs
 * with S3's acquire. */
static inline __attribute__((always_inline)) void ringbuf_trace__fleave(struct ringbuf_trace__fslot *s,
									 uint32_t w)
{
	atomic_store_explicit(&s->word,
			      (w & RINGBUF_TRACE__FDEPTH) ? w
							  : (w & ~RINGBUF_TRACE__FDEPTH) + RINGBUF_TRACE__FGEN,
			      memory_order_release);
}

/* [F4]-[F5] for a program that needs the interpreter (kept out of the fast
 * path's frame: a tail call). */
static void ringbuf_trace__set_state(struct ringbuf_trace_event *e, bool on);

/* The triggers of p whose condition holds on the record (all of them, kept or
 * not, as in the kernel); a count is taken with a CAS, so a trigger with count
 * N fires exactly N times whatever the nesting. */
static void ringbuf_trace__ffire(struct ringbuf *rb, const struct ringbuf_trace__prog *p, const void *rec,
				 size_t len, struct ringbuf_trace__post *post)
{
	uint32_t i;
	for (i = 0; i < p->ntrig; i++) {
		struct ringbuf_trace__trig *t = &p->trig[i];
		int64_t c = atomic_load_explicit(&t->count, memory_order_relaxed);
		if (c == 0 || (t->cond && !ringbuf_trace__frun(t->cond, rec, len)))
			continue;
		while (c > 0 && !atomic_compare_exchange_weak_explicit(&t->count, &c, c - 1,
								       memory_order_relaxed,
								       memory_order_relaxed))
			;
		if (c == 0)
			continue;
		switch (t->action) {
		case RINGBUF_TRACE__T_TRACEOFF: ringbuf_record_off(rb); break;
		case RINGBUF_TRACE__T_TRACEON: ringbuf_record_on(rb); break;
		case RINGBUF_TRACE__T_ENABLE: ringbuf_trace__set_state(t->target, true); break;
		case RINGBUF_TRACE__T_DISABLE: ringbuf_trace__set_state(t->target, false); break;
		case RINGBUF_TRACE__T_SNAPSHOT: post->snap = t->snap; break;
		default: post->stack = 1; break;
		}
	}
}

static int ringbuf_trace__stack_write(struct ringbuf *rb, unsigned cpu, uintptr_t first,
				      void *frame, unsigned skip);

/* [F6'] post-commit triggers fired in the section (values copied out of the
 * program, which may be freed once the section ended): the record is
 * committed (or discarded) here, then the stack event and the snapshot.
 * first/frame: where the stack starts (the emitter's caller). Returns
 * RINGBUF_TRACE__F_DONE | keep. */
static __attribute__((noinline)) int ringbuf_trace__fpost(struct ringbuf *rb, unsigned cpu, void *rec,
							  bool keep, const struct ringbuf_trace__post *post,
							  uintptr_t first, void *frame)
{
	if (keep)
		ringbuf_commit(rb, cpu, rec);
	else
		ringbuf_discard(rb, cpu, rec);
	if (post->stack)
		(void)ringbuf_trace__stack_write(rb, cpu, first, frame, 0);
	if (post->snap)
		(void)ringbuf_trace_snapshot(post->snap);
	return RINGBUF_TRACE__F_DONE | (keep ? 1 : 0);
}

/* [F4]-[F5] for a program that needs the interpreter or has triggers (kept
 * out of the fast path's frame: a tail call, so that its return address and
 * frame are the emitter's caller's where the compiler makes it one). */
static __attribute__((noinline)) int ringbuf_trace__fsection_run(struct ringbuf_trace__fslot *s,
								 uint64_t cpu_w, struct ringbuf *rb,
								 const struct ringbuf_trace__prog *p,
								 void *rec, size_t len)
{
	/* cpu << 32 | w: six arguments, so that x86-64 can make the call a
	 * tail call (the stack then starts at the emitter's caller) */
	const unsigned cpu = (unsigned)(cpu_w >> 32);
	const uint32_t w = (uint32_t)cpu_w;
	struct ringbuf_trace__post post = {NULL, 0};
	bool keep = !p || !p->has_filter || ringbuf_trace__frun(p, rec, len);
	if (p && p->ntrig)
		ringbuf_trace__ffire(rb, p, rec, len, &post);
	ringbuf_trace__fleave(s, w); /* [F5] */
	if (RINGBUF__LIKELY(!post.stack && !post.snap))
		return keep ? 1 : 0;
	return ringbuf_trace__fpost(rb, cpu, rec, keep, &post, (uintptr_t)__builtin_return_address(0),
				    __builtin_frame_address(0));
}

/* [F1]-[F5] on slot s (the per-thread one, or claimed just now). */
static inline __attribute__((always_inline)) int
ringbuf_trace__fsection(struct ringbuf_trace__fslot *s, struct ringbuf *rb, unsigned cpu,
			struct ringbuf_trace_event *ev, void *rec, size_t len)
{
	struct ringbuf_trace__prog *p;
	bool keep;
	/* [F1] enter */
	uint32_t w = atomic_load_explicit(&s->word, memory_order_relaxed);
	atomic_store_explicit(&s->word, w + 1, memory_order_relaxed);
	/* [F2] the light side of S2's membarrier */
	atomic_signal_fence(memory_order_seq_cst);
	/* [F3] pairs with S1's exchange (release) */
	p = atomic_load_explicit(&ev->filter, memory_order_acquire);
	/* [F4] */
	if (RINGBUF__UNLIKELY(!p || !p->one_int))
		return ringbuf_trace__fsection_run(s, (uint64_t)cpu << 32 | w, rb, p, rec, len);
	keep = ringbuf_trace__fint(&p->insn[0], (const unsigned char *)rec); /* `field > N` */
	ringbuf_trace__fleave(s, w); /* [F5] */
	return keep ? 1 : 0;
}

/* The thread has no slot yet: claim one, or use the shared word. */
static __attribute__((noinline)) int ringbuf_trace__fkeep_slow(struct ringbuf *rb, unsigned cpu,
							       struct ringbuf_trace_event *ev,
							       void *rec, size_t len)
{
	struct ringbuf_trace__fslot *s = NULL;
	struct ringbuf_trace__prog *p;
	struct ringbuf_trace__post post = {NULL, 0};
	bool keep;
	/* no slot yet, or none was free: claim (again every 4096 events) */
	if (ringbuf_trace__self.fslot == NULL || (++ringbuf_trace__self.fretry & 4095u) == 0)
		s = ringbuf_trace__fslot_claim();
	if (s)
		return ringbuf_trace__fsection(s, rb, cpu, ev, rec, len);
	/* table full: a shared counter, RMWs (full barriers themselves) */
	atomic_fetch_add_explicit(&ringbuf_trace__fshared, 1, memory_order_seq_cst);
	p = atomic_load_explicit(&ev->filter, memory_order_seq_cst);
	keep = !p || !p->has_filter || ringbuf_trace__frun(p, rec, len);
	if (p && p->ntrig)
		ringbuf_trace__ffire(rb, p, rec, len, &post);
	atomic_fetch_sub_explicit(&ringbuf_trace__fshared, 1, memory_order_release);
	if (RINGBUF__LIKELY(!post.stack && !post.snap))
		return keep ? 1 : 0;
	return ringbuf_trace__fpost(rb, cpu, rec, keep, &post, (uintptr_t)__builtin_return_address(0),
				    __builtin_frame_address(0));
}

RINGBUF_API int ringbuf_trace__filter_keep(struct ringbuf *rb, unsigned cpu, struct ringbuf_trace_event *ev,
					   void *rec, size_t len)
{
	struct ringbuf_trace__fslot *s = (struct ringbuf_trace__fslot *)ringbuf_trace__self.fslot;
	if (RINGBUF__UNLIKELY((uintptr_t)s < 2)) /* NULL or (void *)1 */
		return ringbuf_trace__fkeep_slow(rb, cpu, ev, rec, len);
	return ringbuf_trace__fsection(s, rb, cpu, ev, rec, len);
	/* [F6] the emitter commits or discards (unless F6' did) */
}

/* [S2] false when membarrier cannot be had. */
static bool ringbuf_trace__fbarrier(void)
{
#ifdef RINGBUF_TESTING
	if (atomic_load(&ringbuf_trace__fno_mb))
		return false;
#endif
#if defined(__linux__) && defined(SYS_membarrier)
	if (ringbuf_trace__fmb == 0)
		ringbuf_trace__fmb =
			syscall(SYS_membarrier, 16 /* REGISTER_PRIVATE_EXPEDITED */, 0, 0) == 0 ? 1 : -1;
	return ringbuf_trace__fmb > 0 && syscall(SYS_membarrier, 8 /* PRIVATE_EXPEDITED */, 0, 0) == 0;
#else
	return false;
#endif
}

/* [S3] wait until no writer can hold a program unpublished before [S2]; false
 * after about a second of waiting on some slot. */
static bool ringbuf_trace__fdrain(void)
{
	uint32_t i, used = atomic_load_explicit(&ringbuf_trace__fslots_used, memory_order_acquire);
	long tries;
	for (i = 0; i < used; i++) {
		uint32_t w0 = atomic_load_explicit(&ringbuf_trace__fslots[i].word, memory_order_acquire);
		for (tries = 0; w0 & RINGBUF_TRACE__FDEPTH; tries++) {
			uint32_t w = atomic_load_explicit(&ringbuf_trace__fslots[i].word, memory_order_acquire);
			if (!(w & RINGBUF_TRACE__FDEPTH) ||
			    (w & ~RINGBUF_TRACE__FDEPTH) != (w0 & ~RINGBUF_TRACE__FDEPTH))
				break;
			if (tries > 1000 + 1000)
				return false;
			if (tries < 1000) {
				sched_yield();
			} else {
				ringbuf__sleep_ms(1); /* ringbuf.h's (nanosleep is hidden under strict C11) */
			}
		}
	}
	for (tries = 0; atomic_load_explicit(&ringbuf_trace__fshared, memory_order_acquire) != 0; tries++) {
		if (tries > 1000)
			return false;
		ringbuf__sleep_ms(1);
	}
	return true;
}

static void ringbuf_trace__fprog_free(struct ringbuf_trace__prog *p)
{
	uint32_t i;
	if (!p)
		return;
	for (i = 0; i < p->ntrig; i++)
		free(p->trig[i].cond);
	free(p->trig);
	free(p);
}

/* [S2]-[S4] for a list of replaced programs (linked through next). */
static void ringbuf_trace__fretire(struct ringbuf_trace__prog *old)
{
	struct ringbuf_trace__prog *p;
	if (!old)
		return;
	if (ringbuf_trace__fbarrier() && ringbuf_trace__fdrain()) {
		while (old) { /* [S4] */
			p = old->next;
			ringbuf_trace__fprog_free(old);
			old = p;
		}
		return;
	}
	while (old) {
		p = old->next;
		old->next = ringbuf_trace__fkept;
		ringbuf_trace__fkept = old;
#ifdef RINGBUF_TESTING
		atomic_fetch_add(&ringbuf_trace__fkept_count, 1);
#endif
		old = p;
	}
}

#ifdef RINGBUF_TESTING
RINGBUF_API void ringbuf_trace__filter_testing(int no_membarrier, unsigned *kept)
{
	atomic_store(&ringbuf_trace__fno_mb, no_membarrier);
	if (kept)
		*kept = atomic_load(&ringbuf_trace__fkept_count);
}
#endif

/* ---- >>filter: setting ------------------------------------------------------ */

/* A trigger as set: what a program's trigger is built from. */
struct ringbuf_trace__tspec {
	uint32_t action;
	int64_t count;
	struct ringbuf_trace_event *target;
	struct ringbuf_trace_snapshot *snap;
	const char *cond;  /* its `if` text (NULL: none) */
	size_t cond_off;   /* where cond starts in the text given (error positions) */
};

static void ringbuf_trace__ferr_shift(struct ringbuf_trace_filter_error *err, size_t off)
{
	const char *rest;
	char tmp[sizeof err->msg];
	if (!err || err->pos < 0 || !off)
		return;
	rest = strstr(err->msg, ": ");
	err->pos += (int)off;
	snprintf(tmp, sizeof tmp, "pos %d: %.140s", err->pos, rest ? rest + 2 : err->msg);
	memcpy(err->msg, tmp, sizeof tmp);
}

/* [S0] A program for ev: filter (NULL: none) and triggers; NULL with *rc 0
 * when there is nothing to attach. */
static struct ringbuf_trace__prog *ringbuf_trace__fassemble(const struct ringbuf_trace_event *ev,
							     const char *filter,
							     const struct ringbuf_trace__tspec *ts,
							     uint32_t nts,
							     struct ringbuf_trace_filter_error *err,
							     int *rc)
{
	struct ringbuf_trace__prog *p;
	uint32_t i;
	*rc = 0;
	if (filter) {
		p = ringbuf_trace__fcompile(ev, filter, err, rc);
		if (!p)
			return NULL;
	} else {
		if (!nts)
			return NULL;
		p = (struct ringbuf_trace__prog *)calloc(1, sizeof *p);
		if (!p) {
			*rc = RINGBUF_ENOMEM;
			return NULL;
		}
	}
	if (!nts)
		return p;
	p->one_int = 0;
	p->trig = (struct ringbuf_trace__trig *)calloc(nts, sizeof *p->trig);
	if (!p->trig) {
		ringbuf_trace__fprog_free(p);
		*rc = RINGBUF_ENOMEM;
		return NULL;
	}
	for (i = 0; i < nts; i++) {
		struct ringbuf_trace__trig *t = &p->trig[i];
		t->action = ts[i].action;
		atomic_init(&t->count, ts[i].count);
		t->target = ts[i].target;
		t->snap = ts[i].snap;
		p->ntrig = i + 1;
		if (ts[i].cond && !(t->cond = ringbuf_trace__fcompile(ev, ts[i].cond, err, rc))) {
			ringbuf_trace__ferr_shift(err, ts[i].cond_off);
			ringbuf_trace__fprog_free(p);
			return NULL;
		}
	}
	return p;
}

/* The triggers of cur as specs (their conditions' texts stay cur's). */
static uint32_t ringbuf_trace__fspecs(const struct ringbuf_trace__prog *cur,
				      struct ringbuf_trace__tspec *ts)
{
	uint32_t i, n = cur ? cur->ntrig : 0;
	for (i = 0; i < n; i++) {
		ts[i].action = cur->trig[i].action;
		ts[i].count = atomic_load(&cur->trig[i].count);
		ts[i].target = cur->trig[i].target;
		ts[i].snap = cur->trig[i].snap;
		ts[i].cond = cur->trig[i].cond ? cur->trig[i].cond->text : NULL;
		ts[i].cond_off = 0;
	}
	return n;
}

/* Builds the new program of e from its current one; *skip: leave e alone. */
typedef struct ringbuf_trace__prog *(*ringbuf_trace__fbuild_fn)(
	struct ringbuf_trace_event *e, const struct ringbuf_trace__prog *cur, const void *ctx,
	struct ringbuf_trace_filter_error *err, int *rc, bool *skip);

/* The setters' common part: S0 for every matched event, then S1-S4. */
static int ringbuf_trace__freplace(struct ringbuf_trace_registry *reg, const char *glob,
				   ringbuf_trace__fbuild_fn build, const void *ctx,
				   struct ringbuf_trace_filter_error *err)
{
	struct ringbuf_trace_event *e;
	struct ringbuf_trace__prog **progs = NULL, *old = NULL;
	bool *skips = NULL;
	size_t n = 0, i, changed = 0;
	int rc = 0;
	pthread_mutex_lock(&ringbuf_trace__fmutex); /* one setter: S3's waits, the kept list */
	ringbuf_trace__lock(reg);
	for (e = ringbuf_trace__first(reg); e; e = e->next)
		if (ringbuf_trace__matches(reg, e, glob))
			n++;
	if (n) {
		progs = (struct ringbuf_trace__prog **)calloc(n, sizeof *progs);
		skips = (bool *)calloc(n, sizeof *skips);
		if (!progs || !skips)
			rc = RINGBUF_ENOMEM;
		/* [S0] compile everything before publishing anything */
		for (e = ringbuf_trace__first(reg), i = 0; e && rc == 0; e = e->next)
			if (ringbuf_trace__matches(reg, e, glob)) {
				progs[i] = build(e, atomic_load(&e->filter), ctx, err, &rc, &skips[i]);
				i++;
			}
		if (rc != 0) {
			for (i = 0; progs && i < n; i++)
				ringbuf_trace__fprog_free(progs[i]);
			free(progs);
			free(skips);
			ringbuf_trace__unlock(reg);
			pthread_mutex_unlock(&ringbuf_trace__fmutex);
			return rc;
		}
		/* membarrier is registered before a program is published (S2 then
		 * covers every thread) */
		(void)ringbuf_trace__fbarrier();
	}
	/* [S1] */
	for (e = ringbuf_trace__first(reg), i = 0; e && n; e = e->next) {
		struct ringbuf_trace__prog *op;
		if (!ringbuf_trace__matches(reg, e, glob))
			continue;
		if (skips[i]) {
			i++;
			continue;
		}
		op = atomic_exchange_explicit(&e->filter, progs[i++], memory_order_seq_cst);
		ringbuf_trace__refresh_state(e);
		changed++;
		if (op) {
			op->next = old;
			old = op;
		}
	}
	free(progs);
	free(skips);
	ringbuf_trace__unlock(reg);
	ringbuf_trace__fretire(old); /* [S2]-[S4] */
	pthread_mutex_unlock(&ringbuf_trace__fmutex);
	return (int)changed;
}

static void ringbuf_trace__ferr_clear(struct ringbuf_trace_filter_error *err)
{
	if (err) {
		err->pos = -1;
		err->event[0] = 0;
		err->msg[0] = 0;
	}
}

static struct ringbuf_trace__prog *ringbuf_trace__fbuild_filter(struct ringbuf_trace_event *e,
								 const struct ringbuf_trace__prog *cur,
								 const void *ctx,
								 struct ringbuf_trace_filter_error *err,
								 int *rc, bool *skip)
{
	struct ringbuf_trace__tspec ts[RINGBUF_TRACE__TRIG_MAX];
	uint32_t nts = ringbuf_trace__fspecs(cur, ts);
	*skip = false;
	return ringbuf_trace__fassemble(e, (const char *)ctx, ts, nts, err, rc);
}

RINGBUF_API int ringbuf_trace_set_filter(struct ringbuf_trace_registry *reg, const char *glob,
					 const char *filter, struct ringbuf_trace_filter_error *err)
{
	size_t b, end;
	ringbuf_trace__ferr_clear(err);
	if (!reg || !glob) {
		if (err)
			snprintf(err->msg, sizeof err->msg, "no registry or no event glob");
		return RINGBUF_EINVAL;
	}
	if (ringbuf_trace__ftrim(filter, &b, &end))
		filter = NULL; /* clears */
	return ringbuf_trace__freplace(reg, glob, ringbuf_trace__fbuild_filter, filter, err);
}

RINGBUF_API int ringbuf_trace_get_filter(const struct ringbuf_trace_event *ev, char *buf, size_t size)
{
	struct ringbuf_trace__prog *p;
	int r;
	if (!ev) {
		if (buf && size)
			buf[0] = 0;
		return RINGBUF_EINVAL;
	}
	/* setters free programs under this mutex: the text stays while we copy */
	pthread_mutex_lock(&ringbuf_trace__fmutex);
	p = atomic_load_explicit(&((struct ringbuf_trace_event *)ev)->filter, memory_order_acquire);
	r = snprintf(buf, buf ? size : 0, "%s", p && p->has_filter ? p->text : "none");
	pthread_mutex_unlock(&ringbuf_trace__fmutex);
	return r;
}

/* ---- >>filter: triggers -------------------------------------------------- */

static const char *const ringbuf_trace__tnames[] = {"traceoff", "traceon", "enable_event",
						    "disable_event", "snapshot", "stacktrace"};

struct ringbuf_trace__tparse {
	struct ringbuf_trace__tspec spec;
	bool remove;
};

static int ringbuf_trace__terr(struct ringbuf_trace_filter_error *err, size_t pos, const char *msg,
			       const char *arg)
{
	if (err) {
		err->pos = (int)pos;
		snprintf(err->msg, sizeof err->msg, "pos %d: %.60s%s%.64s%s", (int)pos, msg, arg ? " '" : "",
			 arg ? arg : "", arg ? "'" : "");
	}
	return RINGBUF_EINVAL;
}

/* [!]action[:count] [if filter]; action: traceoff, traceon,
 * enable_event:[system:]event, disable_event:[system:]event. */
static int ringbuf_trace__tparse_text(struct ringbuf_trace_registry *reg, const char *text,
				      struct ringbuf_trace__tparse *tp,
				      struct ringbuf_trace_filter_error *err)
{
	size_t pos = 0, n, k;
	const char *sys = reg->system ? reg->system : "ringbuf";
	memset(tp, 0, sizeof *tp);
	tp->spec.count = -1;
	while (text[pos] == ' ' || text[pos] == '\t')
		pos++;
	if (text[pos] == '!') {
		tp->remove = true;
		pos++;
	}
	for (n = 0; (text[pos + n] >= 'a' && text[pos + n] <= 'z') || text[pos + n] == '_'; n++)
		;
	for (k = 0; k < RINGBUF_TRACE__T_COUNT; k++)
		if (strlen(ringbuf_trace__tnames[k]) == n && !strncmp(text + pos, ringbuf_trace__tnames[k], n))
			break;
	if (k == RINGBUF_TRACE__T_COUNT)
		return ringbuf_trace__terr(err, pos, n ? "unknown trigger" : "expected a trigger", NULL);
	tp->spec.action = (uint32_t)k;
	if (k == RINGBUF_TRACE__T_SNAPSHOT && !tp->remove) {
		tp->spec.snap = reg->snapshot;
		if (!tp->spec.snap)
			return ringbuf_trace__terr(err, pos,
						   "no snapshot attached (ringbuf_trace_snapshot_attach)", NULL);
	}
	pos += n;
	if (k == RINGBUF_TRACE__T_ENABLE || k == RINGBUF_TRACE__T_DISABLE) {
		char name[2][128];
		int nn = 0;
		size_t at = pos;
		while (nn < 2 && text[pos] == ':' && ringbuf_trace__fident_char(text[pos + 1]) &&
		       !(text[pos + 1] >= '0' && text[pos + 1] <= '9' && nn > 0)) {
			size_t m = 0;
			pos++;
			while (ringbuf_trace__fident_char(text[pos + m]))
				m++;
			if (m >= sizeof name[0])
				return ringbuf_trace__terr(err, pos, "name too long", NULL);
			memcpy(name[nn], text + pos, m);
			name[nn][m] = 0;
			nn++;
			pos += m;
		}
		if (nn == 0)
			return ringbuf_trace__terr(err, pos, "expected :system:event after", ringbuf_trace__tnames[k]);
		if (nn == 2 && strcmp(name[0], sys) != 0)
			return ringbuf_trace__terr(err, at + 1, "unknown system", name[0]);
		tp->spec.target = ringbuf_trace_find(reg, name[nn - 1]);
		if (!tp->spec.target)
			return ringbuf_trace__terr(err, pos - strlen(name[nn - 1]), "unknown event",
						   name[nn - 1]);
	}
	if (text[pos] == ':') {
		uint64_t c = 0;
		size_t d = 0;
		pos++;
		while (text[pos + d] >= '0' && text[pos + d] <= '9') {
			if (c > (uint64_t)INT64_MAX / 10)
				return ringbuf_trace__terr(err, pos, "count out of range", NULL);
			c = c * 10 + (uint64_t)(text[pos + d] - '0');
			d++;
		}
		if (d == 0 || c == 0 || c > (uint64_t)INT64_MAX)
			return ringbuf_trace__terr(err, pos, "expected a count (1 or more)", NULL);
		tp->spec.count = (int64_t)c;
		pos += d;
	}
	if (text[pos] && text[pos] != ' ' && text[pos] != '\t')
		return ringbuf_trace__terr(err, pos, "expected ' if ' or the end", NULL);
	while (text[pos] == ' ' || text[pos] == '\t')
		pos++;
	if (!text[pos])
		return 0;
	if (strncmp(text + pos, "if", 2) != 0 || (text[pos + 2] != ' ' && text[pos + 2] != '\t'))
		return ringbuf_trace__terr(err, pos, "expected 'if' or the end", NULL);
	tp->spec.cond = text + pos + 3;
	tp->spec.cond_off = pos + 3;
	return 0;
}

static struct ringbuf_trace__prog *ringbuf_trace__fbuild_trigger(struct ringbuf_trace_event *e,
								  const struct ringbuf_trace__prog *cur,
								  const void *ctx,
								  struct ringbuf_trace_filter_error *err,
								  int *rc, bool *skip)
{
	const struct ringbuf_trace__tparse *tp = (const struct ringbuf_trace__tparse *)ctx;
	struct ringbuf_trace__tspec ts[RINGBUF_TRACE__TRIG_MAX + 1];
	uint32_t nts = ringbuf_trace__fspecs(cur, ts), i, m = 0;
	bool found = false;
	/* the same action (and target) is replaced, or removed */
	for (i = 0; i < nts; i++) {
		if (ts[i].action == tp->spec.action && ts[i].target == tp->spec.target) {
			found = true;
			continue;
		}
		ts[m++] = ts[i];
	}
	*skip = false;
	if (tp->remove && !found) {
		*skip = true;
		*rc = 0;
		return NULL;
	}
	if (!tp->remove) {
		if (m >= RINGBUF_TRACE__TRIG_MAX) {
			*rc = ringbuf_trace__terr(err, 0, "too many triggers on the event", NULL);
			if (err)
				snprintf(err->event, sizeof err->event, "%s", e->name);
			return NULL;
		}
		ts[m++] = tp->spec;
	}
	return ringbuf_trace__fassemble(e, cur && cur->has_filter ? cur->text : NULL, ts, m, err, rc);
}

RINGBUF_API int ringbuf_trace_set_trigger(struct ringbuf_trace_registry *reg, const char *glob,
					  const char *trigger, struct ringbuf_trace_filter_error *err)
{
	struct ringbuf_trace__tparse tp;
	int rc;
	ringbuf_trace__ferr_clear(err);
	if (!reg || !glob || !trigger) {
		if (err)
			snprintf(err->msg, sizeof err->msg, "no registry, event glob or trigger");
		return RINGBUF_EINVAL;
	}
	if (strlen(trigger) > RINGBUF_TRACE__FTEXT_MAX)
		return ringbuf_trace__terr(err, RINGBUF_TRACE__FTEXT_MAX, "trigger too long", NULL);
	rc = ringbuf_trace__tparse_text(reg, trigger, &tp, err);
	if (rc < 0)
		return rc;
	return ringbuf_trace__freplace(reg, glob, ringbuf_trace__fbuild_trigger, &tp, err);
}

RINGBUF_API int ringbuf_trace_get_triggers(const struct ringbuf_trace_event *ev, char *buf, size_t size)
{
	struct ringbuf_trace__prog *p;
	size_t len = 0;
	uint32_t i;
	if (!ev) {
		if (buf && size)
			buf[0] = 0;
		return RINGBUF_EINVAL;
	}
	if (buf && size)
		buf[0] = 0;
	pthread_mutex_lock(&ringbuf_trace__fmutex);
	p = atomic_load_explicit(&((struct ringbuf_trace_event *)ev)->filter, memory_order_acquire);
	for (i = 0; p && i < p->ntrig; i++) {
		const struct ringbuf_trace__trig *t = &p->trig[i];
		const struct ringbuf_trace_registry *r = t->target ? t->target->reg : NULL;
		char cnt[32];
		int64_t c = atomic_load(&((struct ringbuf_trace__trig *)t)->count);
		int k;
		if (c < 0)
			snprintf(cnt, sizeof cnt, "unlimited");
		else
			snprintf(cnt, sizeof cnt, "%lld", (long long)c);
		k = snprintf(buf ? buf + (len < size ? len : size) : NULL, buf && len < size ? size - len : 0,
			     "%s%s%s%s%s:%s%s%s\n", ringbuf_trace__tnames[t->action], t->target ? ":" : "",
			     t->target ? (r && r->system ? r->system : "ringbuf") : "", t->target ? ":" : "",
			     t->target ? t->target->name : "", cnt, t->cond ? " if " : "",
			     t->cond ? t->cond->text : "");
		if (k > 0)
			len += (size_t)k;
	}
	pthread_mutex_unlock(&ringbuf_trace__fmutex);
	return (int)len;
}

RINGBUF_API int ringbuf_trace_filter_eval(const struct ringbuf_trace_event *ev, const char *filter,
					  const void *rec, size_t len,
					  struct ringbuf_trace_filter_error *err)
{
	struct ringbuf_trace__prog *p;
	int rc;
	if (!ev || !filter || !rec || len < ev->size) {
		if (err) {
			err->pos = -1;
			err->event[0] = 0;
			snprintf(err->msg, sizeof err->msg, "no event, filter or record (or a short record)");
		}
		return RINGBUF_EINVAL;
	}
	p = ringbuf_trace__fcompile(ev, filter, err, &rc);
	if (!p)
		return rc;
	rc = ringbuf_trace__frun(p, rec, len) ? 1 : 0;
	free(p);
	return rc;
}

/* ---- >>snapshot ------------------------------------------------------------ */

struct ringbuf_trace_snapshot {
	struct ringbuf *src, *dst;
	_Atomic(uint64_t) stamp; /* [T4] what the snapshot buffer's clock returns */
	_Atomic(uint32_t) busy;  /* [T1]/[T5] */
	_Atomic(uint64_t) taken, nbusy, events, lost, dropped, skipped;
	size_t scratch_size;
	void *scratch;           /* an iterator of one CPU of src (ringbuf_iter_init_in) */
};

#ifdef RINGBUF_TESTING
static void (*ringbuf_trace__snap_hook)(int step, void *ctx);
static void *ringbuf_trace__snap_hook_ctx;
RINGBUF_API void ringbuf_trace__snapshot_testing(void (*fn)(int step, void *ctx), void *ctx)
{
	ringbuf_trace__snap_hook_ctx = ctx;
	ringbuf_trace__snap_hook = fn;
}
#define RINGBUF_TRACE__SNAP_STEP(n)                                                   \
	do {                                                                          \
		if (ringbuf_trace__snap_hook)                                         \
			ringbuf_trace__snap_hook((n), ringbuf_trace__snap_hook_ctx);  \
	} while (0)
#else
#define RINGBUF_TRACE__SNAP_STEP(n) ((void)0)
#endif

static uint64_t ringbuf_trace__snap_clock(void *ctx)
{
	return atomic_load_explicit(&((struct ringbuf_trace_snapshot *)ctx)->stamp, memory_order_relaxed);
}

RINGBUF_API int ringbuf_trace_snapshot_create(struct ringbuf *src, struct ringbuf_trace_snapshot **out)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf_trace_snapshot *s;
	const char *name;
	int r;
	if (!src || !out)
		return RINGBUF_EINVAL;
	s = (struct ringbuf_trace_snapshot *)calloc(1, sizeof *s);
	if (!s)
		return RINGBUF_ENOMEM;
	s->src = src;
	s->scratch_size = ringbuf_iter_size(src, 0);
	s->scratch = malloc(s->scratch_size);
	name = ringbuf_clock_name(src);
	cfg.ncpu = ringbuf_ncpu(src);
	cfg.page_size = ringbuf_page_size(src);
	/* the reader page and the ring, and a page for the other page breaks */
	cfg.size_per_cpu = ((size_t)ringbuf_nr_pages(src) + 2) * cfg.page_size;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER; /* nothing overwritten: refusals are counted */
	cfg.clock = ringbuf_trace__snap_clock;
	cfg.clock_ctx = s;
	cfg.clock_name = !name || !strcmp(name, "x86-tsc") ? "mono" : name; /* readers give ns */
	if (!s->scratch) {
		free(s);
		return RINGBUF_ENOMEM;
	}
	r = ringbuf_create(&cfg, &s->dst);
	if (r < 0) {
		free(s->scratch);
		free(s);
		return r;
	}
	*out = s;
	return 0;
}

RINGBUF_API void ringbuf_trace_snapshot_destroy(struct ringbuf_trace_snapshot *snap)
{
	if (!snap)
		return;
	ringbuf_destroy(snap->dst);
	free(snap->scratch);
	free(snap);
}

RINGBUF_API struct ringbuf *ringbuf_trace_snapshot_buffer(struct ringbuf_trace_snapshot *snap)
{
	return snap ? snap->dst : NULL;
}

RINGBUF_API int ringbuf_trace_snapshot_attach(struct ringbuf_trace_registry *reg,
					      struct ringbuf_trace_snapshot *snap)
{
	if (!reg)
		return RINGBUF_EINVAL;
	pthread_mutex_lock(&ringbuf_trace__fmutex);
	reg->snapshot = snap;
	pthread_mutex_unlock(&ringbuf_trace__fmutex);
	return 0;
}

RINGBUF_API void ringbuf_trace_snapshot_stats(const struct ringbuf_trace_snapshot *snap,
					      struct ringbuf_trace_snapshot_stats *st)
{
	struct ringbuf_trace_snapshot *s = (struct ringbuf_trace_snapshot *)snap;
	if (!st)
		return;
	memset(st, 0, sizeof *st);
	if (!s)
		return;
	st->taken = atomic_load_explicit(&s->taken, memory_order_relaxed);
	st->busy = atomic_load_explicit(&s->nbusy, memory_order_relaxed);
	st->events = atomic_load_explicit(&s->events, memory_order_relaxed);
	st->lost = atomic_load_explicit(&s->lost, memory_order_relaxed);
	st->dropped = atomic_load_explicit(&s->dropped, memory_order_relaxed);
	st->cpus_skipped = atomic_load_explicit(&s->skipped, memory_order_relaxed);
}

/* The iterator's EAGAIN: a head push claimed and not yet counted (H1-H3 of
 * ringbuf.h), or a head in transition. Its owner is either a writer this call
 * interrupted (a trigger in a signal handler: it cannot go on before we
 * return, so no number of tries helps) or another thread, which a loaded
 * machine may have preempted there for a whole time slice: each retry yields
 * the CPU first so that one can finish. Tries before the CPU is given up and
 * counted in cpus_skipped (what was copied of it stays). */
#define RINGBUF_TRACE__SNAP_RETRIES 8

RINGBUF_API int ringbuf_trace_snapshot(struct ringbuf_trace_snapshot *snap)
{
	uint64_t events = 0, lost = 0, dropped = 0, skipped = 0;
	uint32_t zero = 0;
	unsigned cpu, ncpu;
	int saved = errno, r;
	if (!snap)
		return RINGBUF_EINVAL;
	/* [T1] one snapshot at a time; never wait */
	if (!atomic_compare_exchange_strong_explicit(&snap->busy, &zero, 1, memory_order_acquire,
						     memory_order_relaxed)) {
		atomic_fetch_add_explicit(&snap->nbusy, 1, memory_order_relaxed);
		return RINGBUF_EBUSY;
	}
	RINGBUF_TRACE__SNAP_STEP(1);
	/* [T2] the previous snapshot goes (else nothing is copied: the old
	 * one and a new one together would not be one run per CPU) */
	if ((r = ringbuf_reset(snap->dst)) < 0) {
		atomic_store_explicit(&snap->busy, 0, memory_order_release);
		errno = saved;
		return r;
	}
	RINGBUF_TRACE__SNAP_STEP(2);
	ncpu = ringbuf_ncpu(snap->src);
	for (cpu = 0; cpu < ncpu; cpu++) {
		struct ringbuf_iter *it = NULL;
		struct ringbuf_record rec;
		unsigned tries = 0;
		uint64_t limit;
		/* [T3] a non-consuming walk in our own memory, never waiting, up
		 * to the events stamped before now */
		if (ringbuf_iter_init_in(snap->scratch, snap->scratch_size, snap->src, cpu, RINGBUF_ITER_NOWAIT,
					 &it) < 0) {
			skipped++;
			continue;
		}
		limit = ringbuf_time_stamp(snap->src);
		RINGBUF_TRACE__SNAP_STEP(3);
		for (;;) {
			r = ringbuf_iter_next(it, &rec);
			if (r == RINGBUF_EAGAIN && ++tries < RINGBUF_TRACE__SNAP_RETRIES) {
				sched_yield(); /* a system call: async-signal-safe on Linux */
				continue;
			}
			if (r <= 0)
				break;
			lost += rec.lost;
			if (rec.ts > limit) {
				r = 0; /* written after the copy began: the end */
				break;
			}
			/* [T4] the event, with its time stamp, to the same CPU */
			atomic_store_explicit(&snap->stamp, rec.ts, memory_order_relaxed);
			if (ringbuf_write(snap->dst, cpu, rec.data, rec.len) == 0)
				events++;
			else
				dropped++;
			RINGBUF_TRACE__SNAP_STEP(4);
		}
		if (r < 0)
			skipped++; /* EBUSY (a consumer), EAGAIN to the end, ECORRUPT */
		ringbuf_iter_finish(it);
	}
	/* [T5] */
	atomic_store_explicit(&snap->events, events, memory_order_relaxed);
	atomic_store_explicit(&snap->lost, lost, memory_order_relaxed);
	atomic_store_explicit(&snap->dropped, dropped, memory_order_relaxed);
	atomic_store_explicit(&snap->skipped, skipped, memory_order_relaxed);
	atomic_fetch_add_explicit(&snap->taken, 1, memory_order_relaxed);
	RINGBUF_TRACE__SNAP_STEP(5);
	atomic_store_explicit(&snap->busy, 0, memory_order_release);
	errno = saved;
	return events > (uint64_t)INT32_MAX ? INT32_MAX : (int)events;
}

/* ---- >>snapshot: stack traces ---------------------------------------------- */

#ifndef RINGBUF_TRACE_STACK_MAX
#define RINGBUF_TRACE_STACK_MAX 16
#endif

RINGBUF_API const char *ringbuf_trace_stack_format(void)
{
	static char text[1024];
	if (!text[0]) /* same text every time: a race writes the same bytes */
		snprintf(text, sizeof text, RINGBUF_TRACE__STACK_FMT, (unsigned)RINGBUF_TRACE_ID_STACK,
			 (unsigned)offsetof(struct ringbuf_trace_stack, size),
			 (unsigned)offsetof(struct ringbuf_trace_stack, caller),
			 (unsigned)(8 * sizeof(unsigned long)));
	return text;
}

#if (defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)) && defined(__linux__) && \
	defined(SYS_process_vm_readv)
#define RINGBUF_TRACE__FP_WALK 1
#include <sys/uio.h>
/* Two words at addr, or false (unmapped: EFAULT, never a fault). */
static bool ringbuf_trace__read_words(uintptr_t addr, uintptr_t w[2])
{
	struct iovec local, remote;
	local.iov_base = w;
	local.iov_len = 2 * sizeof(uintptr_t);
	remote.iov_base = (void *)addr;
	remote.iov_len = 2 * sizeof(uintptr_t);
	return syscall(SYS_process_vm_readv, (long)getpid(), &local, 1UL, &remote, 1UL, 0UL) ==
	       (long)(2 * sizeof(uintptr_t));
}
#endif

/* The stack event: first (a return address known good), then the frame
 * records above frame (this function's caller's frame record), skip frames
 * left out. */
static int ringbuf_trace__stack_write(struct ringbuf *rb, unsigned cpu, uintptr_t first,
				      void *frame, unsigned skip)
{
	unsigned long pcs[RINGBUF_TRACE_STACK_MAX];
	struct ringbuf_trace_stack *e;
	unsigned n = 0;
	size_t len;
	int saved = errno;
	if (skip)
		skip--;
	else
		pcs[n++] = (unsigned long)first;
#ifdef RINGBUF_TRACE__FP_WALK
	{
		/* frame: our caller's record {previous frame, return address};
		 * its first word is the next record, read from our own frame */
		uintptr_t cur = (uintptr_t)frame, next = ((const uintptr_t *)frame)[0], w[2];
		while (n < RINGBUF_TRACE_STACK_MAX) {
			if (next <= cur || next - cur > ((uintptr_t)1 << 20) || (next & (sizeof(uintptr_t) - 1)))
				break; /* not a frame further up the stack: no frame pointer */
			if (!ringbuf_trace__read_words(next, w) || w[1] == 0)
				break;
			if (skip)
				skip--;
			else
				pcs[n++] = (unsigned long)w[1];
			cur = next;
			next = w[0];
		}
	}
#else
	(void)frame;
#endif
	len = offsetof(struct ringbuf_trace_stack, caller) + (size_t)n * sizeof(unsigned long);
	e = (struct ringbuf_trace_stack *)ringbuf_trace__reserve(rb, cpu, RINGBUF_TRACE_ID_STACK, len);
	errno = saved;
	if (!e)
		return RINGBUF_ENOSPC;
	/* the payload is 4-aligned only (8 with RINGBUF_F_ALIGN8): fields by
	 * offset and memcpy, never through the struct's 8-aligned type (UBSan:
	 * misaligned member access) */
	{
		int size = (int)n;
		unsigned char *b = (unsigned char *)e;
		memset(b + offsetof(struct ringbuf_trace_stack, size), 0,
		       len - offsetof(struct ringbuf_trace_stack, size));
		memcpy(b + offsetof(struct ringbuf_trace_stack, size), &size, sizeof size);
		memcpy(b + offsetof(struct ringbuf_trace_stack, caller), pcs, (size_t)n * sizeof(unsigned long));
	}
	ringbuf_commit(rb, cpu, e);
	return (int)n;
}

RINGBUF_API __attribute__((noinline)) int ringbuf_trace_stacktrace(struct ringbuf *rb, unsigned cpu,
								    unsigned skip)
{
	if (!rb || (cpu >= ringbuf_ncpu(rb) && cpu != RINGBUF_CPU_THREAD && cpu != RINGBUF_CPU_CURRENT))
		return RINGBUF_EINVAL;
	return ringbuf_trace__stack_write(rb, cpu, (uintptr_t)__builtin_return_address(0),
					  __builtin_frame_address(0), skip);
}

#endif /* RINGBUF_IMPLEMENTATION (ringbuf_trace) */

/* C++: end ringbuf.h's shim (its names are the user's again) */
#ifdef __cplusplus
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
