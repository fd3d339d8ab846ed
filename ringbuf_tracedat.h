/* ringbuf_tracedat.h - v0.1.0 - streaming trace.dat writer for ringbuf.h: pages in, file out
 * SPDX-License-Identifier: MIT   (licence text at the end of ringbuf.h)
 *
 * Writes a trace.dat file (version 6, or 7 uncompressed) that `trace-cmd
 * report` and KernelShark read, one kernel-format page at a time, with
 * memory that does not grow with the trace: each page is checked, copied into
 * one page of the writer's own and appended to a temporary file of its CPU
 * (as `trace-cmd record` keeps one file per CPU); finish() writes the
 * headers, the event formats and the thread names and appends each CPU's
 * pages, page-aligned, then renames the result over the path. Until then
 * nothing is at the path: abort(), a failed finish() or a crash leave no
 * partial trace.dat (the temporary per-CPU files are unlinked as soon as
 * they are made). Written from the published file format (trace-cmd.dat.v6(5),
 * .v7(5)); it contains no code from trace-cmd or libtraceevent.
 *
 * Pages come from anywhere: ringbuf_read_page() / ringbuf_read_page_ref() in
 * the same process (a consumer thread; see ringbuf_tracedat_drain()), pages
 * saved earlier, or another machine's pages (the byte order and the size of
 * `long` are parameters, so an x86 program can write the trace of an s390x
 * buffer). Every page is treated as hostile: copied once, then parsed from
 * the copy; a page that a reader could not parse safely is refused with
 * RINGBUF_ECORRUPT and leaves the file as it was.
 *
 * USAGE
 *   In the one C file that defines RINGBUF_IMPLEMENTATION (it must also get
 *   ringbuf_trace.h's implementation, which this header includes):
 *       #define RINGBUF_IMPLEMENTATION
 *       #include "ringbuf_tracedat.h"       (includes ringbuf_trace.h, ringbuf.h)
 *   Everywhere else:  #include "ringbuf_tracedat.h"
 *
 *   struct ringbuf_tracedat_info info;
 *   ringbuf_tracedat_info_of(rb, &reg, &info);          // geometry, clock, formats
 *   struct ringbuf_tracedat *w;
 *   ringbuf_tracedat_open("trace.dat", &info, &w);
 *   while (running) {                                   // a consumer thread
 *       ringbuf_wait(rb, RINGBUF_ALL_CPUS, 50, 100);
 *       ringbuf_tracedat_drain(w, rb, RINGBUF_ALL_CPUS, RINGBUF_READ_FULL);
 *   }
 *   ringbuf_tracedat_drain(w, rb, RINGBUF_ALL_CPUS, 0); // what is left
 *   ringbuf_tracedat_finish(w, NULL);                   // or ringbuf_tracedat_abort(w)
 *
 * TABLE OF CONTENTS (grep for the anchors)
 *   >>tdat_api    the writer's types and functions
 *   >>tdat_design file layout, temporary files, what a page must satisfy
 *   >>tdat_impl   the implementation (RINGBUF_IMPLEMENTATION only)
 *
 * CONFIGURATION
 *   none of its own; RINGBUF_API, RINGBUF_NAMESPACE, RINGBUF_STATIC as in ringbuf.h
 *
 * CONTEXTS
 *   Ordinary threads only (it allocates and writes files). One thread at a
 *   time per writer; different writers are independent.
 *
 * LIMITS
 *   The output must be a file in a directory the caller can write to (the
 *   temporary files are made next to it); no pipe, no compression (run
 *   `trace-cmd convert --compression zstd` afterwards). One event system (the
 *   registry's), one buffer (no instances). At finish() the disk holds the
 *   trace twice for a moment (per-CPU files + the result). One open file
 *   descriptor per CPU while writing. trace-cmd 3.1.6 shows only the first
 *   few pages of a file with 1 KiB pages (ringbuf_trace.h's export too);
 *   2 KiB and more are read whole.
 */
#ifndef RINGBUF_TRACEDAT_H
#define RINGBUF_TRACEDAT_H

#include "ringbuf_trace.h"

#ifdef RINGBUF_NAMESPACE
#define ringbuf_tracedat_abort           RINGBUF__NS(ringbuf_tracedat_abort)
#define ringbuf_tracedat_add_page        RINGBUF__NS(ringbuf_tracedat_add_page)
#define ringbuf_tracedat_check_page      RINGBUF__NS(ringbuf_tracedat_check_page)
#define ringbuf_tracedat_drain           RINGBUF__NS(ringbuf_tracedat_drain)
#define ringbuf_tracedat_finish          RINGBUF__NS(ringbuf_tracedat_finish)
#define ringbuf_tracedat_info_of         RINGBUF__NS(ringbuf_tracedat_info_of)
#define ringbuf_tracedat_open            RINGBUF__NS(ringbuf_tracedat_open)
#define ringbuf_tracedat_stats           RINGBUF__NS(ringbuf_tracedat_stats)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ==== >>tdat_api ========================================================= */

/** What the file describes. Fill with ringbuf_tracedat_info_of() for a
 * buffer of this process, or by hand for saved or foreign pages. */
struct ringbuf_tracedat_info {
	unsigned ncpu;          /* per-CPU sections, 1..4096 */
	size_t page_size;       /* bytes of one page (the buffer's page size), a power
				 * of two, 64 .. 1 MiB: the file's page size */
	int big_endian;         /* byte order of the pages, and so of the whole file */
	unsigned long_size;     /* 4 or 8: size of the pages' commit word (the writer's long) */
	int version;            /* 6 (or 0) or 7 */
	const char *clock;      /* trace clock name (NULL: "mono"), < 64 chars; see
				 * ringbuf_trace.h >>tracedat CLOCK */
	const struct ringbuf_trace_registry *reg; /* event formats (NULL: none) and, at
				 * finish(), thread names; must stay valid until finish() */
	const char *cmdlines;   /* "pid comm\n" lines to write instead of reg's thread
				 * names (NULL: reg's); must stay valid until finish() */
	int tsc;                /* the pages hold TSC cycles: write trace-cmd's TSC2NSEC
				 * (tsc_mult, tsc_shift) and OFFSET (tsc_offset) options */
	uint32_t tsc_mult, tsc_shift;
	int64_t tsc_offset;
	unsigned file_mode;     /* permission bits of the result (0: 0600) */
};

/** Counters of a writer (ringbuf_tracedat_stats()). */
struct ringbuf_tracedat_stats {
	uint64_t pages;          /* pages written (all CPUs) */
	uint64_t events;         /* data records in them */
	uint64_t bytes;          /* bytes of records (commit sums) */
	uint64_t lost;           /* events lost, from the pages' stored counts */
	uint64_t lost_unknown;   /* pages saying "events lost" without a count */
	uint64_t pages_empty;    /* pages without records (skipped) */
	uint64_t pages_rejected; /* pages refused (RINGBUF_ECORRUPT / EINVAL) */
	uint64_t heap_bytes;     /* bytes the writer holds on the heap now */
	uint64_t heap_peak;      /* most it ever held */
	uint64_t allocs;         /* allocations made */
};

struct ringbuf_tracedat;
struct ringbuf;

/** info for rb's pages as ringbuf_read_page() gives them (this host's byte
 * order and long, rb's clock and TSC calibration), version 6, formats and
 * thread names from reg (may be NULL). Returns 0 or RINGBUF_EINVAL. */
RINGBUF_API int ringbuf_tracedat_info_of(const struct ringbuf *rb, const struct ringbuf_trace_registry *reg,
					 struct ringbuf_tracedat_info *info);
/** Start a trace.dat for path (created by finish(); an existing file there is
 * replaced then, never written through). Returns 0, RINGBUF_EINVAL (bad info),
 * RINGBUF_ENOMEM, RINGBUF_ESYS (a temporary file could not be made; errno). */
RINGBUF_API int ringbuf_tracedat_open(const char *path, const struct ringbuf_tracedat_info *info,
				      struct ringbuf_tracedat **out);
/** Check one page (size must be info.page_size) and append it to cpu's data.
 * The page is read once, into the writer's copy; bytes after the records are
 * written as zeros. Returns 1 (written), 0 (a page without records: skipped),
 * RINGBUF_ECORRUPT (the page is malformed: nothing written, the writer is
 * still usable), RINGBUF_EINVAL, or RINGBUF_ESYS (a write failed: the writer
 * is broken, finish() fails and removes everything). */
RINGBUF_API int ringbuf_tracedat_add_page(struct ringbuf_tracedat *w, unsigned cpu, const void *page,
					  size_t size);
/** Read whole pages of rb's cpu (or all CPUs, RINGBUF_ALL_CPUS) and append
 * them: ringbuf_read_page_ref() (zero copy from the buffer; the writer copies
 * once) and ringbuf_read_page() when a page cannot be lent; flags as
 * ringbuf_read_page's (RINGBUF_READ_FULL while writers run). At most 2 ring
 * sizes of pages per CPU per call, so busy writers cannot keep it here.
 * rb's geometry must match info's. Returns the pages written or an error;
 * a malformed page (a buffer corrupted by its writers) stops the call with
 * RINGBUF_ECORRUPT: the events of that page are lost, the writer is usable.
 * A CPU whose reader keeps answering RINGBUF_EAGAIN (a writer preempted in
 * the middle of moving a page) is left for the next call; RINGBUF_EAGAIN is
 * returned when that left nothing written: call again later. */
RINGBUF_API int ringbuf_tracedat_drain(struct ringbuf_tracedat *w, struct ringbuf *rb, unsigned cpu,
				       unsigned flags);
/** Write the file and free the writer (also on error). st (may be NULL)
 * gets the final counters, heap_peak including finish()'s own metadata.
 * Returns 0 or an error (then nothing is left at the path's temporary name
 * and path is unchanged). */
RINGBUF_API int ringbuf_tracedat_finish(struct ringbuf_tracedat *w, struct ringbuf_tracedat_stats *st);
/** Drop everything written so far and free the writer. NULL is a no-op. */
RINGBUF_API void ringbuf_tracedat_abort(struct ringbuf_tracedat *w);
/** Counters so far. */
RINGBUF_API int ringbuf_tracedat_stats(const struct ringbuf_tracedat *w, struct ringbuf_tracedat_stats *st);
/** The writer's page check alone: 0 (fine; *events, *lost filled when not
 * NULL; *lost = RINGBUF_TRACE_LOST_UNKNOWN for a flag without count) or
 * RINGBUF_ECORRUPT. big_endian and long_size describe the page. Reads page
 * as it is (copy hostile memory first). */
RINGBUF_API int ringbuf_tracedat_check_page(const void *page, size_t page_size, int big_endian,
					    unsigned long_size, uint64_t *events, uint64_t *lost);

#ifdef __cplusplus
}
#endif
#endif /* RINGBUF_TRACEDAT_H */

/* ==== >>tdat_design ======================================================
 *
 * FILE. The same layout as ringbuf_trace.h's exporter (see >>tracedat there),
 * with every number in the byte order chosen by info.big_endian, and the
 * header_page text's commit size = info.long_size:
 *
 *   v6: magic "6" endian long page_size | header_page | header_event | 0
 *       ftrace formats (kernel_stack) | 1 system {formats} | 0 kallsyms | 0 printk |
 *       cmdlines | ncpu | options (TRACECLOCK, [TSC2NSEC, OFFSET], CPUCOUNT)
 *       | flyrecord {offset, size} per CPU, "[clock]" | zeros to a page
 *       boundary | CPU 0's pages | CPU 1's pages | ...
 *   v7: magic "7" ... "none" "" options-offset | strings | sections 16..21 |
 *       BUFFER section (zeros to a page boundary, the CPUs' pages) | OPTIONS
 *
 * Both need each CPU's pages contiguous, and v6 needs the thread names
 * before the data, so pages wait in one temporary file per CPU (made with
 * O_EXCL next to the output, unlinked at once, so only the descriptor keeps
 * it) and finish() copies them through one page of memory.
 *
 * MEMORY. The writer holds: itself, 4 words per CPU, one page (the copy of
 * the page being added, then the copy buffer of finish()) and, during
 * finish(), the metadata (proportional to the registry and the thread
 * names, not to the pages). heap_bytes/heap_peak count all of it; nothing is
 * allocated per page.
 *
 * STEPS OF add_page:
 *   A1 copy the caller's page into the writer's page (one read of each byte:
 *      the source may be a buffer mapped from another process);
 *   A2 check the copy (ringbuf_tracedat_check_page): commit bits 0..26 <= data
 *      size, bits 27..29 and above 31 clear, bit 30 only with bit 31, the
 *      stored count inside the page, every record's header 4-aligned and
 *      inside commit, type_len 0 with array[0] >= 4, padding with array[0] >= 4,
 *      extends and stamps complete;
 *   A3 zero the bytes after commit (after the stored count);
 *   A4 write the page to the CPU's file; a short write poisons the writer.
 */

/* ==== >>tdat_impl ======================================================== */
#if defined(RINGBUF_IMPLEMENTATION) && !defined(RINGBUF_TRACEDAT_IMPLEMENTATION_INCLUDED)
#define RINGBUF_TRACEDAT_IMPLEMENTATION_INCLUDED 1

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define RINGBUF_TDAT__MAX_CPUS 4096u

struct ringbuf_tracedat {
	struct ringbuf_tracedat_info info;
	char clock[64];
	char *path, *part;
	int *fd;              /* per CPU: the temporary file */
	uint64_t *cpu_pages;  /* per CPU: pages in it */
	unsigned char *page;  /* the copy (A1), then finish()'s copy buffer */
	struct ringbuf_tracedat_stats st;
	int broken;           /* a write failed (RINGBUF_ESYS) */
};

/* ---- heap accounting ---------------------------------------------------- */

static void *ringbuf_tdat__alloc(struct ringbuf_tracedat *w, size_t n)
{
	size_t *p = (size_t *)calloc(1, n + sizeof(size_t) * 2);
	if (!p)
		return NULL;
	p[0] = n;
	if (w) {
		w->st.heap_bytes += n;
		w->st.allocs++;
		if (w->st.heap_bytes > w->st.heap_peak)
			w->st.heap_peak = w->st.heap_bytes;
	}
	return p + 2; /* 2 words: keeps 16-byte alignment of calloc on LP64 */
}

static void ringbuf_tdat__free(struct ringbuf_tracedat *w, void *q)
{
	size_t *p;
	if (!q)
		return;
	p = (size_t *)q - 2;
	if (w)
		w->st.heap_bytes -= p[0];
	free(p);
}

/* ---- numbers in the file's byte order ----------------------------------- */

static uint64_t ringbuf_tdat__get(const unsigned char *p, unsigned n, int be)
{
	uint64_t v = 0;
	unsigned i;
	for (i = 0; i < n; i++)
		v |= (uint64_t)p[be ? i : n - 1 - i] << (8 * (n - 1 - i));
	return v;
}

static void ringbuf_tdat__set(unsigned char *p, unsigned n, int be, uint64_t v)
{
	unsigned i;
	for (i = 0; i < n; i++)
		p[be ? n - 1 - i : i] = (unsigned char)(v >> (8 * i));
}

/* ---- the page check (A2) ------------------------------------------------ */

RINGBUF_API int ringbuf_tracedat_check_page(const void *page, size_t page_size, int big_endian,
					    unsigned long_size, uint64_t *events, uint64_t *lost)
{
	const unsigned char *pg = (const unsigned char *)page;
	const int be = big_endian != 0;
	uint64_t commit, nev = 0, nlost = 0;
	size_t hdr, bsize, len, off = 0;
	if (!page || (long_size != 4 && long_size != 8) || page_size < 64 || page_size > ((size_t)1 << 20))
		return RINGBUF_EINVAL;
	hdr = 8 + long_size;
	bsize = page_size - hdr;
	commit = ringbuf_tdat__get(pg + 8, long_size, be);
	len = (size_t)(commit & ((1u << 27) - 1));
	if ((commit >> 32) != 0 || (commit & (7u << 27)) != 0 || len > bsize || (len & 3) != 0)
		return RINGBUF_ECORRUPT;
	if (commit & (1u << 30)) {
		if (!(commit & (1u << 31)) || len + long_size > bsize)
			return RINGBUF_ECORRUPT;
		nlost = ringbuf_tdat__get(pg + hdr + len, long_size, be);
		if (nlost == 0)
			nlost = RINGBUF_TRACE_LOST_UNKNOWN;
	} else if (commit & (1u << 31)) {
		nlost = RINGBUF_TRACE_LOST_UNKNOWN;
	}
	while (off < len) {
		const unsigned char *d = pg + hdr + off;
		size_t left = len - off, rl;
		uint32_t w, t, a0 = 0;
		if (left < 4)
			return RINGBUF_ECORRUPT;
		w = (uint32_t)ringbuf_tdat__get(d, 4, be);
		t = be ? w >> 27 : w & 31u;
		if (left >= 8)
			a0 = (uint32_t)ringbuf_tdat__get(d + 4, 4, be);
		if (t >= 1 && t <= 28) {
			rl = 4 + (size_t)t * 4;
			nev++;
		} else if (t == 0) {
			if (left < 8 || a0 < 4)
				return RINGBUF_ECORRUPT;
			rl = 4 + (((size_t)a0 + 3) & ~(size_t)3);
			nev++;
		} else if (t == 29) {
			if (left < 8 || a0 < 4)
				return RINGBUF_ECORRUPT;
			rl = 4 + (size_t)a0;
		} else {
			if (left < 8)
				return RINGBUF_ECORRUPT;
			rl = 8;
		}
		if (rl > left || (rl & 3) != 0)
			return RINGBUF_ECORRUPT;
		off += rl;
	}
	if (events)
		*events = nev;
	if (lost)
		*lost = nlost;
	return 0;
}

/* ---- open / add / abort ------------------------------------------------- */

static void ringbuf_tdat__release(struct ringbuf_tracedat *w)
{
	unsigned i;
	if (w->fd)
		for (i = 0; i < w->info.ncpu; i++)
			if (w->fd[i] >= 0)
				close(w->fd[i]);
	ringbuf_tdat__free(w, w->fd);
	ringbuf_tdat__free(w, w->cpu_pages);
	ringbuf_tdat__free(w, w->page);
	ringbuf_tdat__free(w, w->path);
	ringbuf_tdat__free(w, w->part);
	free(w);
}

/* A new file next to the output: "<path>.<pid>.<k><suffix>", O_EXCL. */
static int ringbuf_tdat__mkfile(struct ringbuf_tracedat *w, const char *suffix, unsigned mode, char *name,
				size_t size)
{
	unsigned k;
	for (k = 0; k < 100; k++) {
		int fd;
		snprintf(name, size, "%s.%ld.%u%s", w->path, (long)getpid(), k, suffix);
		fd = open(name, O_RDWR | O_CREAT | O_EXCL | RINGBUF__O_CLOEXEC, mode);
		if (fd >= 0)
			return fd;
		if (errno != EEXIST)
			return -1;
	}
	return -1;
}

RINGBUF_API int ringbuf_tracedat_info_of(const struct ringbuf *rb, const struct ringbuf_trace_registry *reg,
					 struct ringbuf_tracedat_info *info)
{
	union { uint16_t u; unsigned char b[2]; } endian;
	struct ringbuf__tscconv conv;
	if (!rb || !info)
		return RINGBUF_EINVAL;
	memset(info, 0, sizeof *info);
	endian.u = 1;
	info->ncpu = ringbuf_ncpu(rb);
	info->page_size = ringbuf_page_size(rb);
	info->big_endian = endian.b[0] != 1;
	info->long_size = (unsigned)sizeof(long);
	info->version = 6;
	info->reg = reg;
	if (ringbuf__tscconv_of(rb, &conv)) {
		info->tsc = 1;
		info->clock = "x86-tsc";
		ringbuf__tscconv_tracecmd(&conv, &info->tsc_mult, &info->tsc_shift, &info->tsc_offset);
	} else {
		info->clock = rb->clock_kind == RINGBUF__CLK_MONO ? "mono" : "local";
	}
	return 0;
}

RINGBUF_API int ringbuf_tracedat_open(const char *path, const struct ringbuf_tracedat_info *info,
				      struct ringbuf_tracedat **out)
{
	struct ringbuf_tracedat *w;
	size_t plen;
	unsigned i;
	if (out)
		*out = NULL;
	if (!path || !*path || !info || !out || info->ncpu < 1 || info->ncpu > RINGBUF_TDAT__MAX_CPUS ||
	    info->page_size < 64 || info->page_size > ((size_t)1 << 20) ||
	    (info->page_size & (info->page_size - 1)) != 0 || (info->long_size != 4 && info->long_size != 8) ||
	    (info->version != 0 && info->version != 6 && info->version != 7) ||
	    (info->clock && strlen(info->clock) >= 64) || (info->file_mode & ~07777u) != 0)
		return RINGBUF_EINVAL;
	w = (struct ringbuf_tracedat *)calloc(1, sizeof *w);
	if (!w)
		return RINGBUF_ENOMEM;
	w->st.heap_bytes = w->st.heap_peak = sizeof *w;
	w->st.allocs = 1;
	w->info = *info;
	if (!w->info.version)
		w->info.version = 6;
	w->info.big_endian = info->big_endian != 0;
	snprintf(w->clock, sizeof w->clock, "%s", info->clock ? info->clock : "mono");
	w->info.clock = w->clock;
	plen = strlen(path);
	w->path = (char *)ringbuf_tdat__alloc(w, plen + 1);
	w->part = (char *)ringbuf_tdat__alloc(w, plen + 48);
	w->fd = (int *)ringbuf_tdat__alloc(w, info->ncpu * sizeof(int));
	w->cpu_pages = (uint64_t *)ringbuf_tdat__alloc(w, info->ncpu * sizeof(uint64_t));
	w->page = (unsigned char *)ringbuf_tdat__alloc(w, info->page_size);
	if (!w->path || !w->part || !w->fd || !w->cpu_pages || !w->page) {
		if (w->fd)
			for (i = 0; i < info->ncpu; i++)
				w->fd[i] = -1;
		ringbuf_tdat__release(w);
		return RINGBUF_ENOMEM;
	}
	memcpy(w->path, path, plen + 1);
	for (i = 0; i < info->ncpu; i++)
		w->fd[i] = -1;
	for (i = 0; i < info->ncpu; i++) {
		char suffix[24];
		snprintf(suffix, sizeof suffix, ".cpu%u", i);
		w->fd[i] = ringbuf_tdat__mkfile(w, suffix, 0600, w->part, plen + 48);
		if (w->fd[i] < 0) {
			int e = errno;
			ringbuf_tdat__release(w);
			errno = e;
			return RINGBUF_ESYS;
		}
		unlink(w->part); /* only the descriptor keeps it */
	}
	w->part[0] = 0;
	*out = w;
	return 0;
}

static int ringbuf_tdat__write_all(int fd, const void *buf, size_t n)
{
	const unsigned char *p = (const unsigned char *)buf;
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k == 0)
				errno = ENOSPC;
			return RINGBUF_ESYS;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* A2..A4 on w->page */
static int ringbuf_tdat__take(struct ringbuf_tracedat *w, unsigned cpu)
{
	const size_t ps = w->info.page_size, ls = w->info.long_size;
	uint64_t nev = 0, lost = 0, commit;
	size_t len, end;
	int r = ringbuf_tracedat_check_page(w->page, ps, w->info.big_endian, (unsigned)ls, &nev, &lost);
	if (r < 0) {
		w->st.pages_rejected++;
		return r;
	}
	commit = ringbuf_tdat__get(w->page + 8, (unsigned)ls, w->info.big_endian);
	len = (size_t)(commit & ((1u << 27) - 1));
	if (len == 0 && !(commit & (1u << 31))) {
		w->st.pages_empty++;
		return 0;
	}
	end = 8 + ls + len + ((commit & (1u << 30)) ? ls : 0);
	memset(w->page + end, 0, ps - end);
	if (ringbuf_tdat__write_all(w->fd[cpu], w->page, ps) < 0) {
		w->broken = 1;
		return RINGBUF_ESYS;
	}
	w->cpu_pages[cpu]++;
	w->st.pages++;
	w->st.events += nev;
	w->st.bytes += len;
	if (lost == RINGBUF_TRACE_LOST_UNKNOWN)
		w->st.lost_unknown++;
	else
		w->st.lost += lost;
	return 1;
}

RINGBUF_API int ringbuf_tracedat_add_page(struct ringbuf_tracedat *w, unsigned cpu, const void *page,
					  size_t size)
{
	if (!w || !page || cpu >= w->info.ncpu || size != w->info.page_size) {
		if (w)
			w->st.pages_rejected++;
		return RINGBUF_EINVAL;
	}
	if (w->broken)
		return RINGBUF_ESYS;
	memcpy(w->page, page, size); /* A1: the only read of the caller's page */
	return ringbuf_tdat__take(w, cpu);
}

RINGBUF_API int ringbuf_tracedat_drain(struct ringbuf_tracedat *w, struct ringbuf *rb, unsigned cpu,
				       unsigned flags)
{
	unsigned c, lo, hi;
	int total = 0, busy = 0;
	if (!w || !rb || ringbuf_ncpu(rb) != w->info.ncpu || ringbuf_page_size(rb) != w->info.page_size ||
	    (cpu != RINGBUF_ALL_CPUS && cpu >= w->info.ncpu))
		return RINGBUF_EINVAL;
	if (w->broken)
		return RINGBUF_ESYS;
	lo = cpu == RINGBUF_ALL_CPUS ? 0 : cpu;
	hi = cpu == RINGBUF_ALL_CPUS ? w->info.ncpu : cpu + 1;
	for (c = lo; c < hi; c++) {
		size_t limit = 2 * (size_t)ringbuf_nr_pages(rb) + 4, n = 0;
		int again = 0;
		while (n < limit) {
			const void *ref = NULL;
			int r = RINGBUF_EAGAIN;
			if (flags & RINGBUF_READ_FULL)
				r = ringbuf_read_page_ref(rb, c, &ref);
			if (r > 0) {
				memcpy(w->page, ref, w->info.page_size); /* A1 */
			} else if (r == RINGBUF_EAGAIN) {
				r = ringbuf_read_page(rb, c, w->page, w->info.page_size, flags);
				if (r == RINGBUF_EAGAIN && ++again < 100)
					continue;
			}
			if (r == RINGBUF_EAGAIN) { /* this CPU later; the others now */
				busy = 1;
				break;
			}
			if (r < 0)
				return total ? total : r;
			if (r == 0)
				break;
			n++;
			r = ringbuf_tdat__take(w, c);
			if (r < 0)
				return r;
			total += r;
		}
	}
	return total || !busy ? total : RINGBUF_EAGAIN;
}

RINGBUF_API void ringbuf_tracedat_abort(struct ringbuf_tracedat *w)
{
	if (!w)
		return;
	if (w->part && w->part[0])
		unlink(w->part);
	ringbuf_tdat__release(w);
}

RINGBUF_API int ringbuf_tracedat_stats(const struct ringbuf_tracedat *w, struct ringbuf_tracedat_stats *st)
{
	if (!w || !st)
		return RINGBUF_EINVAL;
	*st = w->st;
	return 0;
}

/* ---- finish: the metadata, then the pages ------------------------------- */

struct ringbuf_tdat__out {
	struct ringbuf_tracedat *w;
	unsigned char *p;
	size_t len, cap;
	int err, be;
};

static void ringbuf_tdat__put(struct ringbuf_tdat__out *o, const void *d, size_t n)
{
	if (o->err)
		return;
	if (o->len + n > o->cap) {
		size_t nc = o->cap ? o->cap : 4096;
		unsigned char *p;
		while (nc < o->len + n)
			nc *= 2;
		p = (unsigned char *)ringbuf_tdat__alloc(o->w, nc);
		if (!p) {
			o->err = RINGBUF_ENOMEM;
			return;
		}
		if (o->len)
			memcpy(p, o->p, o->len);
		ringbuf_tdat__free(o->w, o->p);
		o->p = p;
		o->cap = nc;
	}
	if (n && d)
		memcpy(o->p + o->len, d, n);
	else if (n)
		memset(o->p + o->len, 0, n);
	o->len += n;
}
static void ringbuf_tdat__num(struct ringbuf_tdat__out *o, unsigned n, uint64_t v)
{
	unsigned char b[8];
	ringbuf_tdat__set(b, n, o->be, v);
	ringbuf_tdat__put(o, b, n);
}
static void ringbuf_tdat__str(struct ringbuf_tdat__out *o, const char *s)
{
	ringbuf_tdat__put(o, s, strlen(s) + 1);
}
static void ringbuf_tdat__set_at(struct ringbuf_tdat__out *o, size_t at, unsigned n, uint64_t v)
{
	if (!o->err)
		ringbuf_tdat__set(o->p + at, n, o->be, v);
}

static void ringbuf_tdat__headers(struct ringbuf_tdat__out *o)
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
	const struct ringbuf_tracedat_info *in = &o->w->info;
	char t[512];
	int n = snprintf(t, sizeof t,
			 "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
			 "\tfield: local_t commit;\toffset:8;\tsize:%u;\tsigned:1;\n"
			 "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
			 "\tfield: char data;\toffset:%u;\tsize:%u;\tsigned:0;\n",
			 in->long_size, 8 + in->long_size, (unsigned)(in->page_size - 8 - in->long_size));
	ringbuf_tdat__put(o, "header_page", 12);
	ringbuf_tdat__num(o, 8, (uint64_t)n);
	ringbuf_tdat__put(o, t, (size_t)n);
	ringbuf_tdat__put(o, "header_event", 13);
	ringbuf_tdat__num(o, 8, sizeof ev - 1);
	ringbuf_tdat__put(o, ev, sizeof ev - 1);
}

/* The ftrace system's formats: ringbuf_trace.h's stack event (kernel_stack)
 * for the file's word size, as ringbuf_trace.h's export writes it. */
static void ringbuf_tdat__ftrace(struct ringbuf_tdat__out *o)
{
	char t[1024];
	unsigned ls = o->w->info.long_size;
	int n = snprintf(t, sizeof t, RINGBUF_TRACE__STACK_FMT, (unsigned)RINGBUF_TRACE_ID_STACK, 8u,
			 ls == 8 ? 16u : 12u, 8 * ls);
	ringbuf_tdat__num(o, 4, 1);
	ringbuf_tdat__num(o, 8, (uint64_t)n);
	ringbuf_tdat__put(o, t, (size_t)n);
}

/* One system, the events of reg in id order (ringbuf_trace.h's list is newest first). */
static void ringbuf_tdat__formats(struct ringbuf_tdat__out *o)
{
	const struct ringbuf_trace_registry *reg = o->w->info.reg;
	const struct ringbuf_trace_event *e;
	unsigned n = 0, last = 0;
	if (!reg) {
		ringbuf_tdat__num(o, 4, 0);
		return;
	}
	for (e = ringbuf_trace__first(reg); e; e = e->next)
		n++;
	ringbuf_tdat__num(o, 4, 1);
	ringbuf_tdat__str(o, reg->system ? reg->system : "ringbuf");
	ringbuf_tdat__num(o, 4, n);
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
		ringbuf_tdat__num(o, 8, (uint64_t)len);
		at = o->len;
		ringbuf_tdat__put(o, NULL, (size_t)len + 1);
		if (!o->err) {
			ringbuf_trace_format_text(next, (char *)o->p + at, (size_t)len + 1);
			o->len--; /* no NUL in the file */
		}
	}
}

/* u64 length + "pid comm\n" lines: the caller's, or reg's (ringbuf_trace.h). */
static void ringbuf_tdat__cmdlines(struct ringbuf_tdat__out *o)
{
	const struct ringbuf_tracedat_info *in = &o->w->info;
	struct ringbuf_trace__out t = {NULL, 0, 0, 0, NULL};
	const char *text = in->cmdlines;
	size_t n = text ? strlen(text) : 0;
	if (!text && in->reg) {
		/* host-order u64 length, then the text */
		ringbuf_trace__cmdlines(&t, in->reg);
		if (t.err || t.len < 8) {
			o->err = t.err ? t.err : RINGBUF_ENOMEM;
			free(t.p);
			return;
		}
		o->w->st.heap_bytes += t.cap; /* counted while it lives */
		if (o->w->st.heap_bytes > o->w->st.heap_peak)
			o->w->st.heap_peak = o->w->st.heap_bytes;
		text = (const char *)t.p + 8;
		n = t.len - 8;
	}
	ringbuf_tdat__num(o, 8, n);
	ringbuf_tdat__put(o, text, n);
	if (t.p) {
		o->w->st.heap_bytes -= t.cap;
		free(t.p);
	}
}

/* v6: TRACECLOCK, [TSC], CPUCOUNT; v7: CPUCOUNT, TRACECLOCK, [TSC] (the
 * order of ringbuf_trace.h's exporter: the two give the same bytes) */
static void ringbuf_tdat__clock_options(struct ringbuf_tdat__out *o, const char *clk)
{
	const struct ringbuf_tracedat_info *in = &o->w->info;
	if (in->version == 7) {
		ringbuf_tdat__num(o, 2, 8); /* CPUCOUNT */
		ringbuf_tdat__num(o, 4, 4);
		ringbuf_tdat__num(o, 4, in->ncpu);
	}
	ringbuf_tdat__num(o, 2, 4); /* TRACECLOCK */
	ringbuf_tdat__num(o, 4, strlen(clk) + 1);
	ringbuf_tdat__str(o, clk);
	if (in->tsc) {
		char buf[32];
		ringbuf_tdat__num(o, 2, 14); /* TSC2NSEC: u32 mult, u32 shift, u64 offset (unused) */
		ringbuf_tdat__num(o, 4, 16);
		ringbuf_tdat__num(o, 4, in->tsc_mult);
		ringbuf_tdat__num(o, 4, in->tsc_shift);
		ringbuf_tdat__num(o, 8, 0);
		snprintf(buf, sizeof buf, "%lld", (long long)in->tsc_offset);
		ringbuf_tdat__num(o, 2, 7); /* OFFSET */
		ringbuf_tdat__num(o, 4, strlen(buf) + 1);
		ringbuf_tdat__str(o, buf);
	}
	if (in->version != 7) {
		ringbuf_tdat__num(o, 2, 8); /* CPUCOUNT */
		ringbuf_tdat__num(o, 4, 4);
		ringbuf_tdat__num(o, 4, in->ncpu);
	}
}

static size_t ringbuf_tdat__align(size_t v, size_t a)
{
	return (v + a - 1) / a * a;
}

/* Append cpu's temporary file to out (through w->page). */
static int ringbuf_tdat__copy_cpu(struct ringbuf_tracedat *w, unsigned cpu, int out)
{
	uint64_t left = w->cpu_pages[cpu];
	if (lseek(w->fd[cpu], 0, SEEK_SET) != 0)
		return RINGBUF_ESYS;
	while (left) {
		size_t got = 0;
		while (got < w->info.page_size) {
			ssize_t k = read(w->fd[cpu], w->page + got, w->info.page_size - got);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				if (k == 0)
					errno = EIO; /* the file got shorter */
				return RINGBUF_ESYS;
			}
			got += (size_t)k;
		}
		if (ringbuf_tdat__write_all(out, w->page, w->info.page_size) < 0)
			return RINGBUF_ESYS;
		left--;
	}
	return 0;
}

static int ringbuf_tdat__flush(struct ringbuf_tdat__out *o, int fd)
{
	int r = o->err ? o->err : ringbuf_tdat__write_all(fd, o->p, o->len);
	o->len = 0;
	return r;
}

/* Everything after the 16-byte file header, version 6. */
static int ringbuf_tdat__v6(struct ringbuf_tdat__out *o, int fd, const char *clk)
{
	struct ringbuf_tracedat *w = o->w;
	const size_t ps = w->info.page_size;
	size_t table, data;
	unsigned i;
	int r;
	ringbuf_tdat__headers(o);
	ringbuf_tdat__ftrace(o); /* ftrace event formats */
	ringbuf_tdat__formats(o);
	ringbuf_tdat__num(o, 4, 0); /* kallsyms */
	ringbuf_tdat__num(o, 4, 0); /* printk formats */
	ringbuf_tdat__cmdlines(o);
	ringbuf_tdat__num(o, 4, w->info.ncpu);
	ringbuf_tdat__put(o, "options  ", 10);
	ringbuf_tdat__clock_options(o, clk);
	ringbuf_tdat__num(o, 2, 0); /* end of options */
	ringbuf_tdat__put(o, "flyrecord", 10);
	table = o->len;
	ringbuf_tdat__put(o, NULL, 16 * (size_t)w->info.ncpu);
	ringbuf_tdat__num(o, 8, strlen(clk)); /* read because TRACECLOCK is there */
	ringbuf_tdat__put(o, clk, strlen(clk));
	data = ringbuf_tdat__align(o->len, ps);
	for (i = 0; i < w->info.ncpu; i++) {
		uint64_t sz = w->cpu_pages[i] * ps;
		ringbuf_tdat__set_at(o, table + 16 * i, 8, data);
		ringbuf_tdat__set_at(o, table + 16 * i + 8, 8, sz);
		data += sz;
	}
	ringbuf_tdat__put(o, NULL, ringbuf_tdat__align(o->len, ps) - o->len);
	if ((r = ringbuf_tdat__flush(o, fd)) < 0)
		return r;
	for (i = 0; i < w->info.ncpu; i++)
		if ((r = ringbuf_tdat__copy_cpu(w, i, fd)) < 0)
			return r;
	return 0;
}

/* v7 section header; returns where its size goes. */
static size_t ringbuf_tdat__section(struct ringbuf_tdat__out *o, uint16_t id, uint32_t str)
{
	size_t at;
	ringbuf_tdat__num(o, 2, id);
	ringbuf_tdat__num(o, 2, 0);
	ringbuf_tdat__num(o, 4, str);
	at = o->len;
	ringbuf_tdat__num(o, 8, 0);
	return at;
}
static void ringbuf_tdat__section_end(struct ringbuf_tdat__out *o, size_t at)
{
	ringbuf_tdat__set_at(o, at, 8, o->len - at - 8);
}

/* Everything after the 16-byte file header, version 7 (o->len counts from 0
 * at the file's start: base = 16 already written into o). */
static int ringbuf_tdat__v7(struct ringbuf_tdat__out *o, int fd, const char *clk)
{
	static const char strings[] = "headers\0ftrace events\0events format\0kallsyms\0printk\0"
				      "command lines\0options\0buffer flyrecord \0strings";
	enum { S_HEADERS = 0, S_FTRACE = 8, S_EVENTS = 22, S_KALLSYMS = 36, S_PRINTK = 45,
	       S_CMDLINES = 52, S_OPTIONS = 66, S_BUFFER = 74, S_STRINGS = 92 };
	struct ringbuf_tracedat *w = o->w;
	const size_t ps = w->info.page_size;
	const unsigned ncpu = w->info.ncpu;
	size_t opt_at, sec[6], at, buf_sec, data, written;
	uint64_t total = 0, off;
	unsigned i;
	int r;
	ringbuf_tdat__put(o, "none", 5);
	ringbuf_tdat__put(o, "", 1);
	opt_at = o->len;
	ringbuf_tdat__num(o, 8, 0);
	at = ringbuf_tdat__section(o, 15, S_STRINGS);
	ringbuf_tdat__put(o, strings, sizeof strings);
	ringbuf_tdat__section_end(o, at);
	sec[0] = o->len;
	at = ringbuf_tdat__section(o, 16, S_HEADERS);
	ringbuf_tdat__headers(o);
	ringbuf_tdat__section_end(o, at);
	sec[1] = o->len;
	at = ringbuf_tdat__section(o, 17, S_FTRACE);
	ringbuf_tdat__ftrace(o);
	ringbuf_tdat__section_end(o, at);
	sec[2] = o->len;
	at = ringbuf_tdat__section(o, 18, S_EVENTS);
	ringbuf_tdat__formats(o);
	ringbuf_tdat__section_end(o, at);
	sec[3] = o->len;
	at = ringbuf_tdat__section(o, 19, S_KALLSYMS);
	ringbuf_tdat__num(o, 4, 0);
	ringbuf_tdat__section_end(o, at);
	sec[4] = o->len;
	at = ringbuf_tdat__section(o, 20, S_PRINTK);
	ringbuf_tdat__num(o, 4, 0);
	ringbuf_tdat__section_end(o, at);
	sec[5] = o->len;
	at = ringbuf_tdat__section(o, 21, S_CMDLINES);
	ringbuf_tdat__cmdlines(o);
	ringbuf_tdat__section_end(o, at);
	buf_sec = o->len;
	at = ringbuf_tdat__section(o, 3, S_BUFFER);
	data = ringbuf_tdat__align(o->len, ps);
	for (i = 0; i < ncpu; i++)
		total += w->cpu_pages[i] * ps;
	ringbuf_tdat__set_at(o, at, 8, data - o->len + total);
	ringbuf_tdat__set_at(o, opt_at, 8, data + total);
	ringbuf_tdat__put(o, NULL, data - o->len);
	written = o->len;
	if ((r = ringbuf_tdat__flush(o, fd)) < 0)
		return r;
	for (i = 0; i < ncpu; i++)
		if ((r = ringbuf_tdat__copy_cpu(w, i, fd)) < 0)
			return r;
	(void)written;
	/* the OPTIONS section, after the data */
	at = ringbuf_tdat__section(o, 0, S_OPTIONS);
	for (i = 0; i < 6; i++) {
		ringbuf_tdat__num(o, 2, 16 + i);
		ringbuf_tdat__num(o, 4, 8);
		ringbuf_tdat__num(o, 8, sec[i]);
	}
	ringbuf_tdat__clock_options(o, clk);
	ringbuf_tdat__num(o, 2, 3); /* BUFFER */
	ringbuf_tdat__num(o, 4, 8 + 1 + strlen(w->clock) + 1 + 4 + 4 + (size_t)ncpu * 20);
	ringbuf_tdat__num(o, 8, buf_sec);
	ringbuf_tdat__str(o, "");
	ringbuf_tdat__str(o, w->clock);
	ringbuf_tdat__num(o, 4, ps);
	ringbuf_tdat__num(o, 4, ncpu);
	off = data;
	for (i = 0; i < ncpu; i++) {
		uint64_t sz = w->cpu_pages[i] * ps;
		ringbuf_tdat__num(o, 4, i);
		ringbuf_tdat__num(o, 8, off);
		ringbuf_tdat__num(o, 8, sz);
		off += sz;
	}
	ringbuf_tdat__num(o, 2, 0); /* DONE */
	ringbuf_tdat__num(o, 4, 8);
	ringbuf_tdat__num(o, 8, 0);
	/* section size relative to the section's own buffer position: o restarted at 0 */
	ringbuf_tdat__section_end(o, at);
	return ringbuf_tdat__flush(o, fd);
}

RINGBUF_API int ringbuf_tracedat_finish(struct ringbuf_tracedat *w, struct ringbuf_tracedat_stats *st)
{
	struct ringbuf_tdat__out o;
	unsigned char hdr[2];
	char clk[80];
	int fd, r;
	if (!w)
		return RINGBUF_EINVAL;
	if (st)
		*st = w->st;
	if (w->broken) {
		ringbuf_tracedat_abort(w);
		return RINGBUF_ESYS;
	}
	memset(&o, 0, sizeof o);
	o.w = w;
	o.be = w->info.big_endian;
	snprintf(clk, sizeof clk, "[%s]", w->clock);
	fd = ringbuf_tdat__mkfile(w, ".part", w->info.file_mode ? w->info.file_mode : 0600, w->part,
				  strlen(w->path) + 48);
	if (fd < 0) {
		int e = errno;
		w->part[0] = 0;
		ringbuf_tracedat_abort(w);
		errno = e;
		return RINGBUF_ESYS;
	}
	/* O_CREAT applied the umask: give the result the mode asked for */
	if (fchmod(fd, w->info.file_mode ? w->info.file_mode : 0600) != 0) {
		r = RINGBUF_ESYS;
		goto out;
	}
	ringbuf_tdat__put(&o, "\x17\x08\x44tracing", 10);
	ringbuf_tdat__str(&o, w->info.version == 7 ? "7" : "6");
	hdr[0] = (unsigned char)o.be;
	hdr[1] = (unsigned char)w->info.long_size;
	ringbuf_tdat__put(&o, hdr, 2);
	ringbuf_tdat__num(&o, 4, w->info.page_size);
	r = w->info.version == 7 ? ringbuf_tdat__v7(&o, fd, clk) : ringbuf_tdat__v6(&o, fd, clk);
out:
	ringbuf_tdat__free(w, o.p);
	if (st)
		*st = w->st;
	if (close(fd) != 0 && !r)
		r = RINGBUF_ESYS;
	if (!r && rename(w->part, w->path) != 0)
		r = RINGBUF_ESYS;
	if (r) {
		int e = errno;
		ringbuf_tracedat_abort(w); /* unlinks the part file */
		errno = e;
		return r;
	}
	w->part[0] = 0;
	ringbuf_tdat__release(w);
	return 0;
}

#endif /* RINGBUF_IMPLEMENTATION */
