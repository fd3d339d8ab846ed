/* ringbuf_trace_text.h - v0.1.0 - text output of ringbuf.h's trace events, like the kernel's trace file
 * SPDX-License-Identifier: MIT   (licence text at the end of ringbuf.h)
 *
 * One line per event in the kernel's `trace` file format (comm-pid, CPU,
 * latency flags, time, event name and fields through its print format),
 * merged over CPUs by time stamp, from the buffer (consumed) or from
 * captured pages (not consumed); the captures themselves (pages taken out of
 * the buffer while writers run). Events of a loaded registry print through
 * ringbuf_trace_flight.h's interpreter, which this header includes.
 *
 * USAGE
 *   In the one C file that defines RINGBUF_IMPLEMENTATION:
 *       #define RINGBUF_IMPLEMENTATION
 *       #include "ringbuf_trace_text.h"  (includes ringbuf_trace_flight.h,
 *                                         ringbuf_trace_event.h, ringbuf.h)
 *   Everywhere else:  #include "ringbuf_trace_text.h"  (or ringbuf_trace.h: every part)
 *
 *   ringbuf_trace_print(rb, &reg, RINGBUF_ALL_CPUS, stdout, 0, 0);
 *
 * TABLE OF CONTENTS (grep for the anchors)
 *   >>text       the format, the functions, captures; their implementation
 *
 * CONFIGURATION
 *   none of its own; RINGBUF_API, RINGBUF_NAMESPACE, RINGBUF_STATIC as in ringbuf.h
 *
 * CONTEXTS
 *   Ordinary threads (they allocate and use stdio). One thread at a time per capture.
 */
#ifdef __cplusplus
#ifndef RINGBUF__CXX_SHIM_KEEP
/* C++: ringbuf.h's C11-atomics shim (>>cxx in ringbuf.h) stays in force until
 * the end of the outermost ringbuf_trace*.h being included, which ends it */
#define RINGBUF__CXX_SHIM_KEEP 1
#define RINGBUF__CXX_SHIM_BY_TEXT 1
#endif
#endif
#include "ringbuf_trace_event.h"
#include "ringbuf_trace_flight.h"

#ifndef RINGBUF_TRACE_TEXT_H
#define RINGBUF_TRACE_TEXT_H

#ifdef RINGBUF_NAMESPACE
#define ringbuf_trace_capture_create     RINGBUF__NS(ringbuf_trace_capture_create)
#define ringbuf_trace_capture_destroy    RINGBUF__NS(ringbuf_trace_capture_destroy)
#define ringbuf_trace_capture_foreach    RINGBUF__NS(ringbuf_trace_capture_foreach)
#define ringbuf_trace_capture_page       RINGBUF__NS(ringbuf_trace_capture_page)
#define ringbuf_trace_capture_pages      RINGBUF__NS(ringbuf_trace_capture_pages)
#define ringbuf_trace_capture_read       RINGBUF__NS(ringbuf_trace_capture_read)
#define ringbuf_trace_consume_foreach    RINGBUF__NS(ringbuf_trace_consume_foreach)
#define ringbuf_trace_format_record      RINGBUF__NS(ringbuf_trace_format_record)
#define ringbuf_trace_print              RINGBUF__NS(ringbuf_trace_print)
#define ringbuf_trace_print_capture      RINGBUF__NS(ringbuf_trace_print_capture)
#endif

#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
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


/* CAPTURE. A reader thread can take whole pages out of the buffer while the
 * writers run (ringbuf_trace_capture_read with RINGBUF_READ_FULL), as trace-cmd
 * record does; the pages are kept in memory (malloc) until the capture is
 * destroyed. ringbuf_trace_print_capture() prints them, and ringbuf_tracedat.h's
 * export writes them first (ringbuf_trace_tracedat_opts.capture). */

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


#ifdef __cplusplus
}
#endif
#endif /* RINGBUF_TRACE_TEXT_H */

#if defined(RINGBUF_IMPLEMENTATION) && !defined(RINGBUF_TRACE_TEXT_IMPLEMENTATION_INCLUDED)
#define RINGBUF_TRACE_TEXT_IMPLEMENTATION_INCLUDED 1

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


#endif /* RINGBUF_IMPLEMENTATION (ringbuf_trace_text.h) */

/* C++: end ringbuf.h's shim where this header started it */
#if defined(__cplusplus) && defined(RINGBUF__CXX_SHIM_BY_TEXT)
#undef RINGBUF__CXX_SHIM_BY_TEXT
#undef RINGBUF__CXX_SHIM_KEEP
#include "ringbuf.h"
#endif
