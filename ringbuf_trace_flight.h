/* ringbuf_trace_flight.h - v0.1.0 - event formats and thread names kept in a file-backed ringbuf's user area
 * SPDX-License-Identifier: MIT   (licence text at the end of ringbuf.h)
 *
 * A buffer made with ringbuf_create_file() survives its process; this header
 * stores the registry's event formats, the thread names and the writer's pid
 * in the buffer's user area, so that a reader (tools/ringbuf-read) can load
 * them back (validated: the area is never trusted) and print or export the
 * events. A loaded registry has no compiled print functions: its own printf
 * interpreter formats the records from the stored print formats (used by
 * ringbuf_trace_text.h's output).
 *
 * USAGE
 *   In the one C file that defines RINGBUF_IMPLEMENTATION:
 *       #define RINGBUF_IMPLEMENTATION
 *       #include "ringbuf_trace_flight.h"  (includes ringbuf_trace_event.h, ringbuf.h)
 *   Everywhere else:  #include "ringbuf_trace_flight.h"  (or ringbuf_trace.h: every part)
 *
 * TABLE OF CONTENTS (grep for the anchors)
 *   >>flight     the API and the area's layout; its implementation (the store,
 *                the loader, the print-format interpreter)
 *
 * CONFIGURATION
 *   RINGBUF_TRACE_USER_COMMS    [global]    thread-name slots reserved in the user area (default 256)
 *   RINGBUF_API, RINGBUF_NAMESPACE, RINGBUF_STATIC as in ringbuf.h
 *
 * CONTEXTS
 *   A thread's name goes into the area at its first event (async-signal-safe,
 *   one atomic add); store/load/free are for ordinary threads.
 */
#ifdef __cplusplus
#ifndef RINGBUF__CXX_SHIM_KEEP
/* C++: ringbuf.h's C11-atomics shim (>>cxx in ringbuf.h) stays in force until
 * the end of the outermost ringbuf_trace*.h being included, which ends it */
#define RINGBUF__CXX_SHIM_KEEP 1
#define RINGBUF__CXX_SHIM_BY_FLIGHT 1
#endif
#endif
#include "ringbuf_trace_event.h"

#ifndef RINGBUF_TRACE_FLIGHT_H
#define RINGBUF_TRACE_FLIGHT_H

#ifdef RINGBUF_NAMESPACE
#define ringbuf_trace_load_registry      RINGBUF__NS(ringbuf_trace_load_registry)
#define ringbuf_trace_parse_registry     RINGBUF__NS(ringbuf_trace_parse_registry)
#define ringbuf_trace_registry_free      RINGBUF__NS(ringbuf_trace_registry_free)
#define ringbuf_trace_store_registry     RINGBUF__NS(ringbuf_trace_store_registry)
#define ringbuf_trace_user_size          RINGBUF__NS(ringbuf_trace_user_size)
#define ringbuf_trace_writer_alive       RINGBUF__NS(ringbuf_trace_writer_alive)
#define ringbuf_trace_writer_pid         RINGBUF__NS(ringbuf_trace_writer_pid)
#endif

#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

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
#endif /* RINGBUF_TRACE_FLIGHT_H */

#if defined(RINGBUF_IMPLEMENTATION) && !defined(RINGBUF_TRACE_FLIGHT_IMPLEMENTATION_INCLUDED)
#define RINGBUF_TRACE_FLIGHT_IMPLEMENTATION_INCLUDED 1

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
/* kill(): declared by ringbuf_trace_event.h's implementation (once: clang++
 * refuses a second declaration without glibc's throw()) */

/* ---- >>flight: a growing byte buffer -------------------------------------
 * Where the user area's registry is built (here, host order: o.l = NULL) and
 * ringbuf_tracedat.h's metadata (>>tracedat: the file there describes struct
 * ringbuf_trace__layout, whose byte order and heap counters o.l gives). */

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
	const char *cpustat;                /* ncpu texts, cpustat_max bytes apart, each a
					     * CPUSTAT option ("": none; NULL: no option) */
	size_t cpustat_max;                 /* with cpustat NULL and this not 0: count
					     * ncpu options of this size (the room kept) */
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
static __attribute__((unused)) void ringbuf_trace__release_out(struct ringbuf_trace__out *o)
{
	ringbuf_trace__heap(o->l, 0, o->cap);
	free(o->p);
	o->p = NULL;
	o->len = o->cap = 0;
}
static void ringbuf_trace__u16(struct ringbuf_trace__out *o, uint16_t v) { ringbuf_trace__put(o, &v, 2); }
static void ringbuf_trace__u32(struct ringbuf_trace__out *o, uint32_t v) { ringbuf_trace__put(o, &v, 4); }
static __attribute__((unused)) void ringbuf_trace__str(struct ringbuf_trace__out *o, const char *s)
{
	ringbuf_trace__put(o, s, strlen(s) + 1);
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

/* RINGBUF_TRACE__UMAGIC, UVERSION, struct ringbuf_trace__uhdr and
 * ringbuf_trace__ucomm: ringbuf_trace_event.h's header part; the append of a
 * thread's name: its >>events (the emitters' out-of-line part) */
#define RINGBUF_TRACE__MAX_FIELDS 32u
#define RINGBUF_TRACE__MAX_EVENTS 32767u

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

static __attribute__((unused)) void ringbuf_trace__reg_comm(const struct ringbuf_trace_registry *reg, int32_t pid, char *buf,
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

static __attribute__((unused)) void ringbuf_trace__loaded_cmdlines(struct ringbuf_trace__out *t,
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

static __attribute__((unused)) void ringbuf_trace__interp(const struct ringbuf_trace_event *ev, const void *rec, size_t rlen,
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


#endif /* RINGBUF_IMPLEMENTATION (ringbuf_trace_flight.h) */

/* C++: end ringbuf.h's shim where this header started it */
#if defined(__cplusplus) && defined(RINGBUF__CXX_SHIM_BY_FLIGHT)
#undef RINGBUF__CXX_SHIM_BY_FLIGHT
#undef RINGBUF__CXX_SHIM_KEEP
#include "ringbuf.h"
#endif
