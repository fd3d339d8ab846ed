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
 *   In exactly one C file:      #define RINGBUF_IMPLEMENTATION
 *                               #include "ringbuf_trace.h"    (includes ringbuf.h)
 *   Everywhere else:            #include "ringbuf_trace.h"
 *   Events are defined in a header with RINGBUF_TRACE_EVENT(); the one C file
 *   that instantiates their descriptors defines RINGBUF_TRACE_DEFINE_EVENTS
 *   before including that header (the kernel's CREATE_TRACE_POINTS).
 *
 * TABLE OF CONTENTS (grep for the anchors)
 *   >>events     RINGBUF_TRACE_EVENT(), registry, enable/disable by glob, threads
 *   >>text       text output like the kernel's trace file, merged over CPUs
 *   >>tracedat   capture of pages while writers run; trace.dat v6/v7 export
 *   >>flight     event formats and thread names kept in a file-backed buffer's user area
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
 *
 * CONTEXTS
 *   Emitters, ringbuf_trace_thread_id(), ringbuf_trace_thread_name() and
 *   ringbuf_trace_signal_enter()/exit() are async-signal-safe: no malloc, no
 *   lock, no stdio. Registration, enable/disable, text output and export are
 *   for ordinary threads (they may allocate and use stdio); enable/disable may
 *   run while writers emit.
 *
 * LIMITS
 *   Event definitions use C11 atomics and are C only (the function API is
 *   usable from C++). The thread id is cached per thread; a pthread_atfork()
 *   child handler (installed when the implementation is loaded, or at the
 *   first registration) forgets it in the child of fork(), so children report
 *   their own pid. A child made with a raw clone()/vfork() syscall that runs
 *   no atfork handlers must call ringbuf_trace_thread_reset() before it emits.
 */
#ifndef RINGBUF_TRACE_H
#define RINGBUF_TRACE_H

#include "ringbuf.h"

/* Symbol prefix: with RINGBUF_NAMESPACE (see ringbuf.h's >>config) the
 * functions of this header are renamed too. The event descriptors that
 * RINGBUF_TRACE_EVENT() defines (ringbuf_event_<name>) and the emitters
 * (RINGBUF_TRACE_EMIT_PREFIX) belong to the program and keep their names. */
#ifdef RINGBUF_NAMESPACE
#define ringbuf_trace__reserve           RINGBUF__NS(ringbuf_trace__reserve)
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
 *       registered), RINGBUF_ENOSPC when the buffer dropped it (counted there).
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

/** An event descriptor; generated by RINGBUF_TRACE_EVENT(). Read-only for users. */
struct ringbuf_trace_event {
	RINGBUF__ATOMIC(uint32_t) state; /* id while enabled, 0 otherwise: the emitter's one load */
	uint16_t id;                     /* 1..32767 once registered, 0 before */
	uint16_t nfields;
	const char *name;
	const struct ringbuf_trace_field *fields;
	size_t size;                     /* fixed record size: sizeof(struct ringbuf_ev_<name>) */
	const char *print_fmt;           /* RINGBUF_PRINT(...) as written (stringified) */
	int (*print)(char *buf, size_t size, const void *rec, size_t len); /* fields as text */
	struct ringbuf_trace_registry *reg;
	struct ringbuf_trace_event *next;
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
};
#define RINGBUF_TRACE_REGISTRY_INIT(system) { (system), NULL, 0, 0, 1, NULL }

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
#if defined(__GNUC__) || defined(__clang__)
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
#ifdef RINGBUF_STATIC
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
			atomic_load_explicit(&ringbuf_event_##name.state, memory_order_relaxed); \
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
		sizeof(struct S), printstr, ringbuf__print_##name, NULL, NULL};

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
 * format of every event registered in reg, the thread names (cmdlines), the
 * trace clock, and per CPU the pages, page-aligned. It CONSUMES the buffer:
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
 */

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
	s->name_gen++;
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

RINGBUF_API void *ringbuf_trace__reserve(struct ringbuf *rb, unsigned cpu, uint32_t id, size_t len)
{
	struct ringbuf_trace_entry *e = (struct ringbuf_trace_entry *)ringbuf_reserve(rb, cpu, len);
	uint32_t depth, sd;
	if (RINGBUF__UNLIKELY(!e))
		return NULL;
	/* ringbuf_reserve() succeeded: the CPU buffer's `committing` now holds
	 * this writer's nesting depth (1 = outermost). For a mapped writer
	 * context (RINGBUF_CPU_THREAD/CURRENT) the buffer is the thread's claimed
	 * one; where it cannot be known here only the signal depth counts. */
	if (cpu >= ringbuf_ncpu(rb)) {
#ifdef RINGBUF_CPU_THREAD
		int claimed = cpu == RINGBUF_CPU_THREAD ? ringbuf_thread_cpu(rb) : -1;
		cpu = claimed >= 0 ? (unsigned)claimed : ~0u;
#else
		cpu = ~0u;
#endif
	}
	depth = cpu < ringbuf_ncpu(rb) ? RINGBUF__LOAD(&ringbuf__cpu(rb, cpu)->committing) : 1;
	sd = ringbuf_trace__self.sigdepth + 1;
	if (sd > depth)
		depth = sd;
	e->type = (uint16_t)id;
	e->flags = depth <= 1 ? 0
		   : depth == 2 ? RINGBUF_TRACE_FLAG_HARDIRQ
				: RINGBUF_TRACE_FLAG_NMI | RINGBUF_TRACE_FLAG_HARDIRQ;
	e->preempt_count = (uint8_t)(depth - 1 > 255 ? 255 : depth - 1);
	e->pid = ringbuf_trace_thread_id();
	/* the thread's name into a file-backed buffer's user area, once per
	 * buffer and name (two TLS loads on the fast path) */
	if (RINGBUF__UNLIKELY(ringbuf_trace__self.comm_rb != (const void *)rb ||
			      ringbuf_trace__self.comm_gen != ringbuf_trace__self.name_gen))
		ringbuf_trace__publish_self(rb);
	return e;
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
		atomic_store_explicit(&e->state, on ? e->id : 0u, memory_order_release);
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

struct ringbuf_trace_capture {
	unsigned ncpu;
	size_t page_size;
	bool tsc;                    /* the pages hold TSC cycles: records get ns */
	struct ringbuf__tscconv conv;
	struct ringbuf_trace__cpages {
		unsigned char *pages;
		size_t n, cap;
	} *cpu;
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
 * Everything before the CPU data is built in memory (struct ringbuf_trace__out),
 * then written with the pages, sequentially. Numbers are in host byte order;
 * the endian byte says which. Layout, version 6:
 *
 *   "\x17\x08\x44tracing6\0" endian long page_size
 *   "header_page\0" u64 len text | "header_event\0" u64 len text
 *   u32 n {u64 len, format} (ftrace formats: opts->ftrace_formats, else 0)
 *   u32 1 system "name\0" u32 nevents {u64 len, format}
 *   u32 len kallsyms text (opts->kallsyms, else 0) | u32 0 printk | u64 len cmdlines | u32 ncpu
 *   "options  \0" {u16 id, u32 len, data}: TRACECLOCK "[clock]\0", CPUCOUNT; u16 0
 *   "flyrecord\0" {u64 offset, u64 size} per CPU, u64 len "[clock]"
 *   zeros to a page boundary, then each CPU's pages
 *
 * Version 7 wraps the same blocks in sections (u16 id, u16 flags, u32 string,
 * u64 size), puts the pages in a BUFFER section and ends with an OPTIONS
 * section that points at everything (see trace-cmd.dat.v7(5)).
 */

struct ringbuf_trace__out {
	unsigned char *p;
	size_t len, cap;
	int err;
	const struct ringbuf__tscconv *tsc; /* the pages hold TSC cycles */
};

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
		o->p = p;
		o->cap = nc;
	}
	if (n && d)
		memcpy(o->p + o->len, d, n);
	else if (n)
		memset(o->p + o->len, 0, n);
	o->len += n;
}
static void ringbuf_trace__u16(struct ringbuf_trace__out *o, uint16_t v) { ringbuf_trace__put(o, &v, 2); }
static void ringbuf_trace__u32(struct ringbuf_trace__out *o, uint32_t v) { ringbuf_trace__put(o, &v, 4); }
static void ringbuf_trace__u64(struct ringbuf_trace__out *o, uint64_t v) { ringbuf_trace__put(o, &v, 8); }
static void ringbuf_trace__str(struct ringbuf_trace__out *o, const char *s)
{
	ringbuf_trace__put(o, s, strlen(s) + 1);
}
static void ringbuf_trace__set_u64(struct ringbuf_trace__out *o, size_t at, uint64_t v)
{
	if (!o->err)
		memcpy(o->p + at, &v, 8);
}

static int ringbuf_trace__write_all(int fd, const void *buf, size_t n)
{
	const unsigned char *p = (const unsigned char *)buf;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return RINGBUF_EINVAL;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int ringbuf_trace__write_zeros(int fd, size_t n)
{
	static const unsigned char z[4096];
	while (n) {
		size_t k = n < sizeof z ? n : sizeof z;
		if (ringbuf_trace__write_all(fd, z, k) < 0)
			return RINGBUF_EINVAL;
		n -= k;
	}
	return 0;
}

/* The kernel's events/header_page text, for this host's long. */
static void ringbuf_trace__header_page(struct ringbuf_trace__out *o, size_t page_size)
{
	char t[512];
	int n = snprintf(t, sizeof t,
			 "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
			 "\tfield: local_t commit;\toffset:8;\tsize:%u;\tsigned:1;\n"
			 "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
			 "\tfield: char data;\toffset:%u;\tsize:%u;\tsigned:0;\n",
			 (unsigned)sizeof(long), (unsigned)RINGBUF_TRACE__HDR,
			 (unsigned)(page_size - RINGBUF_TRACE__HDR));
	ringbuf_trace__put(o, "header_page", 12);
	ringbuf_trace__u64(o, (uint64_t)n);
	ringbuf_trace__put(o, t, (size_t)n);
}

static void ringbuf_trace__header_event(struct ringbuf_trace__out *o)
{
	static const char t[] = "# compressed entry header\n"
				"\ttype_len    :    5 bits\n"
				"\ttime_delta  :   27 bits\n"
				"\tarray       :   32 bits\n"
				"\n"
				"\tpadding     : type == 29\n"
				"\ttime_extend : type == 30\n"
				"\ttime_stamp : type == 31\n"
				"\tdata max type_len  == 28\n";
	ringbuf_trace__put(o, "header_event", 13);
	ringbuf_trace__u64(o, sizeof t - 1);
	ringbuf_trace__put(o, t, sizeof t - 1);
}

/* Events of reg in id order (the list is newest first). */
static void ringbuf_trace__event_formats(struct ringbuf_trace__out *o, const struct ringbuf_trace_registry *reg)
{
	const struct ringbuf_trace_event *e;
	unsigned n = 0, last = 0;
	if (!reg) {
		ringbuf_trace__u32(o, 0);
		return;
	}
	for (e = ringbuf_trace__first(reg); e; e = e->next)
		n++;
	ringbuf_trace__u32(o, 1);
	ringbuf_trace__str(o, reg->system ? reg->system : "ringbuf");
	ringbuf_trace__u32(o, n);
	while (n--) {
		const struct ringbuf_trace_event *next = NULL;
		size_t at;
		int len;
		for (e = ringbuf_trace__first(reg); e; e = e->next)
			if (e->id > last && (!next || e->id < next->id))
				next = e;
		if (!next)
			break;
		last = next->id;
		len = ringbuf_trace_format_text(next, NULL, 0);
		if (len < 0) {
			o->err = len;
			return;
		}
		ringbuf_trace__u64(o, (uint64_t)len);
		at = o->len;
		ringbuf_trace__put(o, NULL, (size_t)len + 1); /* room, then fill */
		if (!o->err) {
			ringbuf_trace_format_text(next, (char *)o->p + at, (size_t)len + 1);
			o->len--; /* no NUL in the file */
		}
	}
}

/* "pid comm\n" per thread seen, newest name per pid. */
static void ringbuf_trace__loaded_cmdlines(struct ringbuf_trace__out *t,
					   const struct ringbuf_trace_registry *reg);
static void ringbuf_trace__cmdlines(struct ringbuf_trace__out *o, const struct ringbuf_trace_registry *reg)
{
	struct ringbuf_trace__out t = {NULL, 0, 0, 0, NULL};
	if (reg && reg->loaded) {
		ringbuf_trace__loaded_cmdlines(&t, reg);
		ringbuf_trace__u64(o, t.len);
		ringbuf_trace__put(o, t.p, t.len);
		if (t.err)
			o->err = t.err;
		free(t.p);
		return;
	}
	uint32_t n = atomic_load_explicit(&ringbuf_trace__ncomms, memory_order_acquire), i, j;
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
		ringbuf_trace__put(&t, line, (size_t)k);
	}
	ringbuf_trace__u64(o, t.len);
	ringbuf_trace__put(o, t.p, t.len);
	if (t.err)
		o->err = t.err;
	free(t.p);
}

/* Page counts per CPU from the captures. */
static size_t ringbuf_trace__cpu_pages(const struct ringbuf_trace_capture *const *caps, unsigned cpu)
{
	size_t n = 0;
	int k;
	for (k = 0; k < 2; k++)
		if (caps[k])
			n += caps[k]->cpu[cpu].n;
	return n;
}

static int ringbuf_trace__write_pages(int fd, const struct ringbuf_trace_capture *const *caps, unsigned cpu)
{
	int k;
	for (k = 0; k < 2; k++) {
		const struct ringbuf_trace_capture *c = caps[k];
		if (c && c->cpu[cpu].n &&
		    ringbuf_trace__write_all(fd, c->cpu[cpu].pages, c->cpu[cpu].n * c->page_size) < 0)
			return RINGBUF_EINVAL;
	}
	return 0;
}

static size_t ringbuf_trace__align(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

/* The ftrace formats block (u32 count, {u64 len, text}) and the kallsyms
 * block (u32 len, text) that opts supplies (empty when it supplies none). */
static void ringbuf_trace__ftrace_blocks(struct ringbuf_trace__out *o,
					 const struct ringbuf_trace_tracedat_opts *opts, int kallsyms)
{
	uint32_t n = 0;
	if (kallsyms) {
		size_t len = opts->kallsyms ? strlen(opts->kallsyms) : 0;
		if (len > UINT32_MAX)
			o->err = RINGBUF_EINVAL;
		ringbuf_trace__u32(o, (uint32_t)len);
		ringbuf_trace__put(o, opts->kallsyms, len);
		return;
	}
	while (opts->ftrace_formats && opts->ftrace_formats[n])
		n++;
	ringbuf_trace__u32(o, n);
	for (n = 0; opts->ftrace_formats && opts->ftrace_formats[n]; n++) {
		size_t len = strlen(opts->ftrace_formats[n]);
		ringbuf_trace__u64(o, (uint64_t)len);
		ringbuf_trace__put(o, opts->ftrace_formats[n], len);
	}
}

/* TSC2NSEC (ns = cycles * mult >> shift) and OFFSET (+ ns, a decimal string):
 * trace-cmd then shows a TSC clock's cycles as CLOCK_MONOTONIC seconds. */
static void ringbuf_trace__tsc_options(struct ringbuf_trace__out *o)
{
	uint32_t mult, shift;
	int64_t off;
	char buf[32];
	if (!o->tsc)
		return;
	ringbuf__tscconv_tracecmd(o->tsc, &mult, &shift, &off);
	ringbuf_trace__u16(o, 14); /* TSC2NSEC: u32 mult, u32 shift, u64 offset (unused) */
	ringbuf_trace__u32(o, 16);
	ringbuf_trace__u32(o, mult);
	ringbuf_trace__u32(o, shift);
	ringbuf_trace__u64(o, 0);
	snprintf(buf, sizeof buf, "%lld", (long long)off);
	ringbuf_trace__u16(o, 7); /* OFFSET */
	ringbuf_trace__u32(o, (uint32_t)strlen(buf) + 1);
	ringbuf_trace__str(o, buf);
}

static int ringbuf_trace__v6(int fd, const struct ringbuf_trace_registry *reg,
			     const struct ringbuf_trace_capture *const *caps, unsigned ncpu,
			     size_t psize, const char *clock, struct ringbuf_trace__out *o,
			     const struct ringbuf_trace_tracedat_opts *opts)
{
	char clk[80];
	size_t table, data;
	unsigned i;
	int r = 0;
	snprintf(clk, sizeof clk, "[%s]", clock);
	ringbuf_trace__header_page(o, psize);
	ringbuf_trace__header_event(o);
	ringbuf_trace__ftrace_blocks(o, opts, 0); /* ftrace event formats */
	ringbuf_trace__event_formats(o, reg);
	ringbuf_trace__ftrace_blocks(o, opts, 1); /* kallsyms */
	ringbuf_trace__u32(o, 0); /* printk formats */
	ringbuf_trace__cmdlines(o, reg);
	ringbuf_trace__u32(o, ncpu);
	ringbuf_trace__put(o, "options  ", 10);
	ringbuf_trace__u16(o, 4); /* TRACECLOCK */
	ringbuf_trace__u32(o, (uint32_t)strlen(clk) + 1);
	ringbuf_trace__str(o, clk);
	ringbuf_trace__tsc_options(o);
	ringbuf_trace__u16(o, 8); /* CPUCOUNT */
	ringbuf_trace__u32(o, 4);
	ringbuf_trace__u32(o, ncpu);
	ringbuf_trace__u16(o, 0); /* end of options */
	ringbuf_trace__put(o, "flyrecord", 10);
	table = o->len;
	for (i = 0; i < ncpu; i++) {
		ringbuf_trace__u64(o, 0);
		ringbuf_trace__u64(o, 0);
	}
	/* the clock again, read because TRACECLOCK is present */
	ringbuf_trace__u64(o, strlen(clk));
	ringbuf_trace__put(o, clk, strlen(clk));
	if (o->err)
		return o->err;
	data = ringbuf_trace__align(o->len, psize);
	for (i = 0; i < ncpu; i++) {
		size_t sz = ringbuf_trace__cpu_pages(caps, i) * psize;
		ringbuf_trace__set_u64(o, table + 16 * i, data);
		ringbuf_trace__set_u64(o, table + 16 * i + 8, sz);
		data += sz;
	}
	if ((r = ringbuf_trace__write_all(fd, o->p, o->len)) < 0 ||
	    (r = ringbuf_trace__write_zeros(fd, ringbuf_trace__align(o->len, psize) - o->len)) < 0)
		return r;
	for (i = 0; i < ncpu; i++)
		if ((r = ringbuf_trace__write_pages(fd, caps, i)) < 0)
			return r;
	return 0;
}

/* v7 section header; returns where its size goes. */
static size_t ringbuf_trace__section(struct ringbuf_trace__out *o, uint16_t id, uint32_t str)
{
	size_t at;
	ringbuf_trace__u16(o, id);
	ringbuf_trace__u16(o, 0);
	ringbuf_trace__u32(o, str);
	at = o->len;
	ringbuf_trace__u64(o, 0);
	return at;
}
static void ringbuf_trace__section_end(struct ringbuf_trace__out *o, size_t at)
{
	ringbuf_trace__set_u64(o, at, o->len - at - 8);
}

static int ringbuf_trace__v7(int fd, const struct ringbuf_trace_registry *reg,
			     const struct ringbuf_trace_capture *const *caps, unsigned ncpu,
			     size_t psize, const char *clock, struct ringbuf_trace__out *o,
			     const struct ringbuf_trace_tracedat_opts *opts)
{
	/* section descriptions: offsets into the strings section */
	static const char strings[] = "headers\0ftrace events\0events format\0kallsyms\0printk\0"
				      "command lines\0options\0buffer flyrecord \0strings";
	enum { S_HEADERS = 0, S_FTRACE = 8, S_EVENTS = 22, S_KALLSYMS = 36, S_PRINTK = 45,
	       S_CMDLINES = 52, S_OPTIONS = 66, S_BUFFER = 74, S_STRINGS = 92 };
	size_t opt_at, sec[6], at, buf_sec, data, total = 0, optsec;
	size_t *cpu_off;
	unsigned i;
	int r;
	ringbuf_trace__put(o, "none", 5);
	ringbuf_trace__put(o, "", 1);
	opt_at = o->len;
	ringbuf_trace__u64(o, 0);
	at = ringbuf_trace__section(o, 15, S_STRINGS);
	ringbuf_trace__put(o, strings, sizeof strings);
	ringbuf_trace__section_end(o, at);
	sec[0] = o->len;
	at = ringbuf_trace__section(o, 16, S_HEADERS);
	ringbuf_trace__header_page(o, psize);
	ringbuf_trace__header_event(o);
	ringbuf_trace__section_end(o, at);
	sec[1] = o->len;
	at = ringbuf_trace__section(o, 17, S_FTRACE);
	ringbuf_trace__ftrace_blocks(o, opts, 0);
	ringbuf_trace__section_end(o, at);
	sec[2] = o->len;
	at = ringbuf_trace__section(o, 18, S_EVENTS);
	ringbuf_trace__event_formats(o, reg);
	ringbuf_trace__section_end(o, at);
	sec[3] = o->len;
	at = ringbuf_trace__section(o, 19, S_KALLSYMS);
	ringbuf_trace__ftrace_blocks(o, opts, 1);
	ringbuf_trace__section_end(o, at);
	sec[4] = o->len;
	at = ringbuf_trace__section(o, 20, S_PRINTK);
	ringbuf_trace__u32(o, 0);
	ringbuf_trace__section_end(o, at);
	sec[5] = o->len;
	at = ringbuf_trace__section(o, 21, S_CMDLINES);
	ringbuf_trace__cmdlines(o, reg);
	ringbuf_trace__section_end(o, at);
	/* the BUFFER section: header, padding, page-aligned CPU data */
	buf_sec = o->len;
	at = ringbuf_trace__section(o, 3, S_BUFFER);
	if (o->err)
		return o->err;
	data = ringbuf_trace__align(o->len, psize);
	cpu_off = (size_t *)calloc(ncpu ? ncpu : 1, sizeof *cpu_off);
	if (!cpu_off)
		return RINGBUF_ENOMEM;
	for (i = 0; i < ncpu; i++) {
		cpu_off[i] = data + total;
		total += ringbuf_trace__cpu_pages(caps, i) * psize;
	}
	ringbuf_trace__set_u64(o, at, data - o->len + total);
	optsec = data + total;
	ringbuf_trace__set_u64(o, opt_at, optsec);
	r = ringbuf_trace__write_all(fd, o->p, o->len);
	if (!r)
		r = ringbuf_trace__write_zeros(fd, data - o->len);
	for (i = 0; i < ncpu && !r; i++)
		r = ringbuf_trace__write_pages(fd, caps, i);
	/* the OPTIONS section, after the data */
	o->len = 0;
	at = ringbuf_trace__section(o, 0, S_OPTIONS);
	for (i = 0; i < 6; i++) {
		ringbuf_trace__u16(o, (uint16_t)(16 + i));
		ringbuf_trace__u32(o, 8);
		ringbuf_trace__u64(o, sec[i]);
	}
	ringbuf_trace__u16(o, 8); /* CPUCOUNT */
	ringbuf_trace__u32(o, 4);
	ringbuf_trace__u32(o, ncpu);
	{
		char clk[80];
		snprintf(clk, sizeof clk, "[%s]", clock);
		ringbuf_trace__u16(o, 4); /* TRACECLOCK */
		ringbuf_trace__u32(o, (uint32_t)strlen(clk) + 1);
		ringbuf_trace__str(o, clk);
		ringbuf_trace__tsc_options(o);
	}
	{
		size_t n = ncpu;
		ringbuf_trace__u16(o, 3); /* BUFFER */
		ringbuf_trace__u32(o, (uint32_t)(8 + 1 + strlen(clock) + 1 + 4 + 4 + n * 20));
		ringbuf_trace__u64(o, buf_sec);
		ringbuf_trace__str(o, "");
		ringbuf_trace__str(o, clock);
		ringbuf_trace__u32(o, (uint32_t)psize);
		ringbuf_trace__u32(o, (uint32_t)n);
		for (i = 0; i < ncpu; i++) {
			size_t sz = ringbuf_trace__cpu_pages(caps, i) * psize;
			ringbuf_trace__u32(o, i);
			ringbuf_trace__u64(o, cpu_off[i]);
			ringbuf_trace__u64(o, sz);
		}
	}
	ringbuf_trace__u16(o, 0); /* DONE */
	ringbuf_trace__u32(o, 8);
	ringbuf_trace__u64(o, 0);
	ringbuf_trace__section_end(o, at);
	free(cpu_off);
	if (!r && o->err)
		r = o->err;
	if (!r)
		r = ringbuf_trace__write_all(fd, o->p, o->len);
	return r;
}

RINGBUF_API int ringbuf_trace_write_tracedat(struct ringbuf *rb, const struct ringbuf_trace_registry *reg,
					     int fd, const struct ringbuf_trace_tracedat_opts *opts)
{
	static const struct ringbuf_trace_tracedat_opts defaults = RINGBUF_TRACE_TRACEDAT_INIT;
	const struct ringbuf_trace_capture *caps[2] = {NULL, NULL};
	struct ringbuf_trace_capture *drained = NULL;
	struct ringbuf_trace__out o = {NULL, 0, 0, 0, NULL};
	struct ringbuf__tscconv conv;
	const char *clock;
	unsigned ncpu;
	size_t psize;
	union { uint16_t u; unsigned char b[2]; } endian;
	unsigned char hdr[2];
	uint32_t ps32;
	int r, version;

	if (!opts)
		opts = &defaults;
	version = opts->version ? opts->version : 6;
	if (fd < 0 || (version != 6 && version != 7) || (!rb && !opts->capture))
		return RINGBUF_EINVAL;
	if (opts->capture) {
		ncpu = opts->capture->ncpu;
		psize = opts->capture->page_size;
		if (rb && (ringbuf_ncpu(rb) != ncpu || ringbuf_page_size(rb) != psize))
			return RINGBUF_EINVAL;
	} else {
		ncpu = ringbuf_ncpu(rb);
		psize = ringbuf_page_size(rb);
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
		o.tsc = &conv; /* TSC2NSEC and OFFSET options: trace-cmd shows ns */
	}
	clock = opts->clock;
	if (!clock)
		clock = o.tsc ? "x86-tsc"
			: !rb || rb->clock_kind == RINGBUF__CLK_MONO ? "mono"
								    : "local";

	endian.u = 1;
	ringbuf_trace__put(&o, "\x17\x08\x44tracing", 10);
	ringbuf_trace__str(&o, version == 7 ? "7" : "6");
	hdr[0] = endian.b[0] == 1 ? 0 : 1;
	hdr[1] = (unsigned char)sizeof(long);
	ringbuf_trace__put(&o, hdr, 2);
	ps32 = (uint32_t)psize;
	ringbuf_trace__put(&o, &ps32, 4);
	if (version == 6)
		r = ringbuf_trace__v6(fd, reg, caps, ncpu, psize, clock, &o, opts);
	else
		r = ringbuf_trace__v7(fd, reg, caps, ncpu, psize, clock, &o, opts);
	free(o.p);
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

#endif /* RINGBUF_IMPLEMENTATION (ringbuf_trace) */

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
