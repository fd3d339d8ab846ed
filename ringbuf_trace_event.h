/* ringbuf_trace_event.h - v0.1.0 - typed trace events for ringbuf.h: RINGBUF_TRACE_EVENT(), registry, threads
 * SPDX-License-Identifier: MIT   (licence text at the end of ringbuf.h)
 *
 * The base of the tracer layer (ringbuf_trace.h includes it with the other
 * parts): the user-space form of the kernel's TRACE_EVENT() (and DPDK's
 * RTE_TRACE_POINT), a registry of events enabled and disabled by glob, the
 * thread ids and names events carry, and each event's format text. Written
 * from the published formats; it contains no code from the kernel,
 * trace-cmd or libtraceevent.
 *
 * USAGE
 *   In exactly one C or C++ file:  #define RINGBUF_IMPLEMENTATION
 *                                  #include "ringbuf_trace_event.h"  (includes ringbuf.h)
 *   Everywhere else:               #include "ringbuf_trace_event.h"
 *   Events are defined in a header with RINGBUF_TRACE_EVENT(); the one C file
 *   that instantiates their descriptors defines RINGBUF_TRACE_DEFINE_EVENTS
 *   before including that header (the kernel's CREATE_TRACE_POINTS).
 *   The other parts include this one: ringbuf_trace_text.h (text output),
 *   ringbuf_tracedat.h (trace.dat), ringbuf_trace_flight.h (formats in a
 *   file-backed buffer), ringbuf_trace_filter.h (filters, triggers),
 *   ringbuf_trace_snapshot.h (snapshots, stack traces); ringbuf_trace.h all.
 *   The file that defines RINGBUF_IMPLEMENTATION includes every part that
 *   any file of the program uses.
 *
 * TABLE OF CONTENTS (grep for the anchors)
 *   >>events     RINGBUF_TRACE_EVENT(), registry, enable/disable by glob, threads,
 *                format text
 *   >>trace_impl the implementation (RINGBUF_IMPLEMENTATION only)
 *
 * QUICK START
 *   #define RINGBUF_IMPLEMENTATION
 *   #define RINGBUF_TRACE_DEFINE_EVENTS
 *   #include "ringbuf_trace_event.h"
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
 *
 * CONFIGURATION
 *   RINGBUF_TRACE_EMIT_PREFIX   [global]    prefix of generated emitters (default trace_)
 *   RINGBUF_TRACE_STR_MAX       [global]    longest RINGBUF_STRING() copied (default 1024 bytes)
 *   RINGBUF_TRACE_MAX_THREADS   [impl-only] threads whose name (comm) is remembered (default 4096)
 *   RINGBUF_TRACE_INLINE        [impl-only] the emitters of the file with the implementation
 *                               inline the write path instead of calling ringbuf_trace__reserve:
 *                               about 50 instructions less per event in examples/malloc_trace.c,
 *                               each emitter's code bigger (in other files: ignored)
 *   RINGBUF_API, RINGBUF_NAMESPACE, RINGBUF_STATIC as in ringbuf.h
 *
 * CONTEXTS
 *   Emitters, ringbuf_trace_thread_id(), ringbuf_trace_thread_name() and
 *   ringbuf_trace_signal_enter()/exit() are async-signal-safe: no malloc, no
 *   lock, no stdio. Registration and enable/disable are for ordinary threads;
 *   enable/disable may run while writers emit.
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
/* Symbol prefix: with RINGBUF_NAMESPACE (see ringbuf.h's >>config) the
 * functions of the ringbuf_trace*.h headers are renamed too. The event
 * descriptors that RINGBUF_TRACE_EVENT() defines (ringbuf_event_<name>) and the
 * emitters (RINGBUF_TRACE_EMIT_PREFIX) belong to the program and keep their names. */
#ifdef __cplusplus
#ifndef RINGBUF__CXX_SHIM_KEEP
/* C++: ringbuf.h's C11-atomics shim (>>cxx in ringbuf.h) stays in force until
 * the end of the outermost ringbuf_trace*.h being included, which ends it */
#define RINGBUF__CXX_SHIM_KEEP 1
#define RINGBUF__CXX_SHIM_BY_EVENT 1
#endif
#endif
#include "ringbuf.h"

#ifndef RINGBUF_TRACE_EVENT_H
#define RINGBUF_TRACE_EVENT_H

#ifdef RINGBUF_NAMESPACE
/* ringbuf_trace_snapshot() of ringbuf_trace_snapshot.h: its name is also the
 * tag of struct ringbuf_trace_snapshot, which the registry below refers to, so
 * the rename is here, before the first use of the tag */
#define ringbuf_trace_snapshot           RINGBUF__NS(ringbuf_trace_snapshot)
#define ringbuf_trace__reserve           RINGBUF__NS(ringbuf_trace__reserve)
#define ringbuf_trace__filter_keep       RINGBUF__NS(ringbuf_trace__filter_keep)
#define ringbuf_trace_comm               RINGBUF__NS(ringbuf_trace_comm)
#define ringbuf_trace_disable            RINGBUF__NS(ringbuf_trace_disable)
#define ringbuf_trace_enable             RINGBUF__NS(ringbuf_trace_enable)
#define ringbuf_trace_find               RINGBUF__NS(ringbuf_trace_find)
#define ringbuf_trace_find_id            RINGBUF__NS(ringbuf_trace_find_id)
#define ringbuf_trace_format_text        RINGBUF__NS(ringbuf_trace_format_text)
#define ringbuf_trace_glob_match         RINGBUF__NS(ringbuf_trace_glob_match)
#define ringbuf_trace_is_enabled         RINGBUF__NS(ringbuf_trace_is_enabled)
#define ringbuf_trace_register_event     RINGBUF__NS(ringbuf_trace_register_event)
#define ringbuf_trace_register_event_id  RINGBUF__NS(ringbuf_trace_register_event_id)
#define ringbuf_trace_register_events    RINGBUF__NS(ringbuf_trace_register_events)
#define ringbuf_trace_registry_init      RINGBUF__NS(ringbuf_trace_registry_init)
#define ringbuf_trace_signal_enter       RINGBUF__NS(ringbuf_trace_signal_enter)
#define ringbuf_trace_signal_exit        RINGBUF__NS(ringbuf_trace_signal_exit)
#define ringbuf_trace_thread_id          RINGBUF__NS(ringbuf_trace_thread_id)
#define ringbuf_trace_thread_name        RINGBUF__NS(ringbuf_trace_thread_name)
#define ringbuf_trace_thread_reset       RINGBUF__NS(ringbuf_trace_thread_reset)
#endif

#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef RINGBUF_ALL_CPUS
#define RINGBUF_ALL_CPUS (~0u)
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
/* What the emitters reserve with: the call above, or with RINGBUF_TRACE_INLINE
 * in the file that has the implementation, its body inlined into each
 * emitter (ringbuf_trace__reserve_inline, defined in >>trace_impl): no call,
 * and the write path folds the emitter's constant length. The same steps
 * either way. */
#if defined(RINGBUF_TRACE_INLINE) && defined(RINGBUF_IMPLEMENTATION)
RINGBUF__INLINE void *ringbuf_trace__reserve_inline(struct ringbuf *rb, unsigned cpu, uint32_t id, size_t len);
#define RINGBUF_TRACE__RESERVE ringbuf_trace__reserve_inline
#else
#define RINGBUF_TRACE__RESERVE ringbuf_trace__reserve
#endif

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
		REC = (struct S *)RINGBUF_TRACE__RESERVE(ringbuf__b, ringbuf__c, ringbuf__id,    \
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


/* >>flight: the layout of a file-backed buffer's user area (the thread-name
 * table, written in >>events below, read by ringbuf_trace_flight.h): the
 * header's first fields and one comm slot. Internal; here rather than in the
 * implementation, so that tools and tests can size the area. */
#define RINGBUF_TRACE__UMAGIC 0x3174726674627272ull /* "rrbtftr1" */
#define RINGBUF_TRACE__UVERSION 1u
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

#ifdef __cplusplus
}
#endif
#endif /* RINGBUF_TRACE_EVENT_H */

/* Switched at every inclusion: descriptors are defined where
 * RINGBUF_TRACE_DEFINE_EVENTS is defined. */
#undef RINGBUF__TEV_DEF
#ifdef RINGBUF_TRACE_DEFINE_EVENTS
#define RINGBUF__TEV_DEF(name, S, fields, namestr, printstr, print) \
	RINGBUF__TEV_DEF_ON(name, S, fields, namestr, printstr, print)
#else
#define RINGBUF__TEV_DEF(name, S, fields, namestr, printstr, print)
#endif

#if defined(RINGBUF_IMPLEMENTATION) && !defined(RINGBUF_TRACE_EVENT_IMPLEMENTATION_INCLUDED)
#define RINGBUF_TRACE_EVENT_IMPLEMENTATION_INCLUDED 1

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

/* >>flight: the writer's side of a file-backed buffer's user area (the
 * thread-name table that ringbuf_trace_flight.h lays out and reads; its
 * layout, struct ringbuf_trace__uhdr and ringbuf_trace__ucomm, is in the
 * header part above): the append that every thread's first event on a buffer
 * makes. Nothing is written until ringbuf_trace_store_registry() has
 * published the header (magic). */
static size_t ringbuf_trace__comm_off(void)
{
	return sizeof(struct ringbuf_trace__uhdr);
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


/* The body of ringbuf_trace__reserve, inlined by writers that run per event
 * and must not pay a call (ringbuf_ftrace.h's hooks); *at: the CPU buffer the
 * event went to, NULL when not known (RINGBUF_CPU_CURRENT). */
RINGBUF__INLINE void *ringbuf_trace__reserve_in(struct ringbuf *rb, unsigned cpu, uint32_t id, size_t len,
					      struct ringbuf__cpu **at)
{
	struct ringbuf__cpu *c;
	struct ringbuf_trace_entry *e = (struct ringbuf_trace_entry *)ringbuf_reserve(rb, cpu, len);
	uint32_t depth, sd;
	if (RINGBUF__UNLIKELY(!e))
		return NULL;
	/* ringbuf_reserve() succeeded: the CPU buffer's `committing` now holds
	 * this writer's nesting depth (1 = outermost). For a mapped writer
	 * context (RINGBUF_CPU_THREAD/CURRENT) the buffer is the thread's claimed
	 * one; where it cannot be known here only the signal depth counts. */
	if (cpu < rb->ncpu) {
		c = ringbuf__cpu(rb, cpu);
	} else {
		c = NULL;
#ifdef RINGBUF_CPU_THREAD
		if (cpu == RINGBUF_CPU_THREAD) {
			/* the inline lookup of the thread's claim first (no call) */
			int claimed;
			if (!(c = ringbuf__thread_claim(rb)) && (claimed = ringbuf_thread_cpu(rb)) >= 0)
				c = ringbuf__cpu(rb, (unsigned)claimed);
		}
#endif
	}
	*at = c;
	depth = c ? RINGBUF__LOAD(&c->committing) : 1;
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

/* the emitters' reserve: inlined with RINGBUF_TRACE_INLINE, else called */
RINGBUF__INLINE void *ringbuf_trace__reserve_inline(struct ringbuf *rb, unsigned cpu, uint32_t id, size_t len)
{
	struct ringbuf__cpu *at;
	return ringbuf_trace__reserve_in(rb, cpu, id, len, &at);
}

RINGBUF_API void *ringbuf_trace__reserve(struct ringbuf *rb, unsigned cpu, uint32_t id, size_t len)
{
	return ringbuf_trace__reserve_inline(rb, cpu, id, len);
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
static __attribute__((unused)) void ringbuf_trace__refresh_state(struct ringbuf_trace_event *e)
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


/* ---- >>events: the setters' mutex ---------------------------------------
 * One setter at a time of filters, triggers (ringbuf_trace_filter.h) and the
 * snapshot of a registry (ringbuf_trace_snapshot.h). */
static pthread_mutex_t ringbuf_trace__fmutex __attribute__((unused)) = PTHREAD_MUTEX_INITIALIZER;

/* ---- >>events: the filter layer's entry ------------------------------------
 * The emitters call ringbuf_trace__filter_keep() only for an event whose state
 * word has RINGBUF_TRACE__FILTERED, a bit that follows ev->filter
 * (ringbuf_trace__set_state), which only ringbuf_trace_filter.h attaches. That
 * header stores its evaluator here (seq_cst) in every setter, before its [S1]
 * exchange of ev->filter (seq_cst), so this header works without it: no
 * program, no bit, no call. The load below is seq_cst too: when it reads NULL
 * it precedes, in the single total order of seq_cst operations, the store and
 * so the first program's exchange: the record is kept, as F3 (>>filter) keeps
 * one whose load of ev->filter finds no program yet; it takes no writer slot,
 * so the setters' grace period has nothing to wait for. Once stored the
 * entry never changes. */
typedef int (*ringbuf_trace__keep_fn)(struct ringbuf *rb, unsigned cpu, struct ringbuf_trace_event *ev,
				      void *rec, size_t len);
static _Atomic(ringbuf_trace__keep_fn) ringbuf_trace__keep_entry;

RINGBUF_API int ringbuf_trace__filter_keep(struct ringbuf *rb, unsigned cpu, struct ringbuf_trace_event *ev,
					   void *rec, size_t len)
{
	ringbuf_trace__keep_fn f = atomic_load(&ringbuf_trace__keep_entry);
	return f ? f(rb, cpu, ev, rec, len) : 1;
}

#endif /* RINGBUF_IMPLEMENTATION (ringbuf_trace_event.h) */

/* C++: end ringbuf.h's shim where this header started it */
#if defined(__cplusplus) && defined(RINGBUF__CXX_SHIM_BY_EVENT)
#undef RINGBUF__CXX_SHIM_BY_EVENT
#undef RINGBUF__CXX_SHIM_KEEP
#include "ringbuf.h"
#endif
