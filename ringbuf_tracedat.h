/* ringbuf_tracedat.h - v0.1.0 - streaming trace.dat writer for ringbuf.h: pages in, file out
 * SPDX-License-Identifier: MIT   (licence text at the end of ringbuf.h)
 *
 * Writes a trace.dat file (version 6, or 7 uncompressed) that `trace-cmd
 * report` and KernelShark read, one kernel-format page at a time, with
 * memory that does not grow with the trace: each page is checked, copied into
 * one page of the writer's own and appended to a temporary file of its CPU
 * (as `trace-cmd record` keeps one file per CPU); finish() writes the
 * headers, the event formats and the thread names into the room kept for
 * them at the start of the largest CPU's file, appends the other CPUs'
 * pages to it, page-aligned, and gives it the path (where the system allows:
 * >>tdat_design UNNAMED FILES; else it copies every CPU into a new file).
 * Until then nothing is at the path: abort(), a failed finish() or a crash
 * leave no partial trace.dat (the temporary per-CPU files have no name, or
 * are unlinked as soon as they are made). Written from the published file format (trace-cmd.dat.v6(5),
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
 *   CPUs other than the largest twice for a moment (all of them where
 *   UNNAMED FILES do not apply). One open file
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
#define ringbuf_tracedat_header          RINGBUF__NS(ringbuf_tracedat_header)
#define ringbuf_tracedat_info_of         RINGBUF__NS(ringbuf_tracedat_info_of)
#define ringbuf_tracedat_open            RINGBUF__NS(ringbuf_tracedat_open)
#define ringbuf_tracedat_open_fds        RINGBUF__NS(ringbuf_tracedat_open_fds)
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
				 * finish(), thread names and event filters (ringbuf_trace.h
				 * >>tracedat FILTERS); must stay valid until finish() */
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
/** A writer that streams each CPU's pages to the caller's descriptor
 * fds[cpu] (a socket, a pipe; one per CPU, info->ncpu of them) as they come,
 * instead of keeping them for a file: add_page() and drain() check and copy
 * each page as for a file, then write it whole to fds[cpu] (drain(): a
 * CPU's pages in batches of up to 128 KiB, all sent before it returns; a
 * write that fails or times out, e.g. SO_SNDTIMEO on a socket, gives
 * RINGBUF_ESYS and poisons the writer). finish() writes no file and leaves the descriptors
 * open (the caller closes them); it gives the counters. The metadata for
 * the other end is ringbuf_tracedat_header(). Returns 0, RINGBUF_EINVAL,
 * RINGBUF_ENOMEM. Used by ringbuf_net.h (trace-cmd listen). */
RINGBUF_API int ringbuf_tracedat_open_fds(const struct ringbuf_tracedat_info *info, const int *fds,
					  struct ringbuf_tracedat **out);
/** The start of a version 6 trace.dat for info: everything before the
 * flyrecord section (file header, header_page, header_event, formats,
 * kallsyms, printk, thread names, CPU count, options), the part of the file
 * that `trace-cmd record -N` sends to `trace-cmd listen`, which appends the
 * flyrecord section itself. The thread names are info's (reg's) now.
 * *buf is malloc'ed (free() it). Returns 0, RINGBUF_EINVAL (bad info, or a
 * version other than 6), RINGBUF_ENOMEM. */
RINGBUF_API int ringbuf_tracedat_header(const struct ringbuf_tracedat_info *info, void **buf, size_t *len);
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
 * returned when that left nothing written: call again later. The pages of
 * one CPU go out in batches (up to 128 KiB per write(); >>tdat_design
 * MEMORY), each batch written before the next CPU's pages and before the
 * call returns: when it returns, every page it counts is written (a failed
 * write: RINGBUF_ESYS, the writer broken, that batch's pages not counted). */
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
 * FILE. Written by ringbuf_trace.h's layout writer (>>tracedat: the file
 * there; its in-memory export uses the same code), with every number in the
 * byte order chosen by info.big_endian, and the header_page text's commit
 * size = info.long_size:
 *
 *   v6: magic "6" endian long page_size | header_page | header_event | 0
 *       ftrace formats (kernel_stack) | 1 system {formats} | 0 kallsyms | 0 printk |
 *       cmdlines | ncpu | options (TRACECLOCK, [TSC2NSEC, OFFSET], CPUCOUNT,
 *       [FILTERS])
 *       | flyrecord {offset, size} per CPU, "[clock]" | zeros to a page
 *       boundary | CPU 0's pages | CPU 1's pages | ...
 *   v7: magic "7" ... "none" "" options-offset | strings | sections 16..21 |
 *       BUFFER section (zeros to a page boundary, the CPUs' pages) | OPTIONS
 *
 * Both need each CPU's pages contiguous, and v6 needs the thread names
 * before the data, so pages wait in one temporary file per CPU and finish()
 * puts them after the metadata.
 *
 * UNNAMED FILES (Linux, O_TMPFILE in the output's directory). open() builds
 * the metadata once to learn its size M (to the next page boundary: where
 * the sequential layout puts the first page), and every CPU's file starts
 * its pages at offset M (a hole before them). finish() takes the CPU with
 * the most pages, builds the metadata again (now with the thread names of
 * then) and, if it still ends by M, writes it at the start of that CPU's
 * file, appends the other CPUs' pages after its own (copy_file_range), in
 * CPU order, and links the file next to the output (linkat of
 * /proc/self/fd/N, or AT_EMPTY_PATH) and renames it over the path: that
 * CPU's pages are written once (the recorder's sqlite trace: one CPU, 200
 * MB that finish() no longer copies). The file's CPU sections are then in
 * the order largest, the others ascending (the flyrecord offsets and v7's
 * BUFFER option say where each is; readers seek there); when the metadata
 * came out shorter than at open() (thread names given by info.cmdlines and
 * shortened), whole pages of zeros (the hole) separate it from the pages.
 * When the metadata has outgrown M (more thread names than at open, past
 * the page boundary), no CPU has a page, or the file cannot be linked, the
 * pages are copied as below. A crash or SIGKILL leaves nothing: an unnamed
 * file goes with its last descriptor.
 * ELSEWHERE (no O_TMPFILE, or a filesystem without it) each CPU's file is
 * made with O_EXCL next to the output and unlinked at once, so only the
 * descriptor keeps it, and finish() copies every CPU into a new file
 * (copy_file_range, else through one page of memory).
 *
 * MEMORY. The writer holds: itself, 4 words per CPU, one batch of pages
 * (RINGBUF_TDAT__BATCH = 128 KiB, or one page when pages are bigger: the
 * copies of the pages being added, then the copy buffer of finish()) and, in open()
 * for a moment and during finish(), the metadata (proportional to the
 * registry and the thread names, not to the pages). heap_bytes/heap_peak
 * count all of it; nothing is allocated per page.
 *
 * STEPS OF add_page:
 *   A1 copy the caller's page into the writer's page (one read of each byte:
 *      the source may be a buffer mapped from another process);
 *   A2 check the copy (ringbuf_tracedat_check_page): commit bits 0..26 <= data
 *      size, bits 27..29 and above 31 clear, bit 30 only with bit 31, the
 *      stored count inside the page, every record's header 4-aligned and
 *      inside commit, type_len 0 with array[0] >= 4 (a multiple of 4), padding with array[0] >= 4,
 *      extends and stamps complete, each followed by an event or a padding
 *      (not by another time record, not last: tests/pagewalk.h's rule, the
 *      kernel's shape; found by fuzz/fuzz_intake.c); the running time (page stamp plus the
 *      deltas) never past 2^64, a TIME_STAMP never back (only a wrap of its
 *      59 bits, as kbuffer reads it): a hostile page's times stay readable;
 *   A3 zero the bytes after commit (after the stored count);
 *   A4 write the page to the CPU's file; a short write poisons the writer.
 * A1 copies into the next slot of the batch; A4 writes the batch whole, one
 * write() for up to 128 KiB of one CPU's pages (a write() per 4 KiB page cost
 * the recorder most of its system time): when the batch is full, when the
 * next page is another CPU's, at the end of drain()'s pages of a CPU, and at
 * once for add_page(). Nothing stays in the batch between calls, so the
 * counters (pages, events, bytes, lost: added when the batch is written)
 * are exact whenever the caller looks, and a process killed between calls
 * has lost only what a killed process loses anyway (its unwritten files).
 */

/* ==== >>tdat_impl ======================================================== */
#if defined(RINGBUF_IMPLEMENTATION) && !defined(RINGBUF_TRACEDAT_IMPLEMENTATION_INCLUDED)
#define RINGBUF_TRACEDAT_IMPLEMENTATION_INCLUDED 1

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define RINGBUF_TDAT__MAX_CPUS 4096u
#ifndef RINGBUF_TDAT__BATCH /* bytes of pages per write() (a test makes it small) */
#define RINGBUF_TDAT__BATCH ((size_t)128 << 10)
#endif

struct ringbuf_tracedat {
	struct ringbuf_tracedat_info info;
	char clock[64];
	char *path, *part;
	int *fd;              /* per CPU: the temporary file */
	uint64_t *cpu_pages;  /* per CPU: pages in it */
	unsigned char *page;  /* the batch: batch_max pages (A1 copies into its next
			       * slot); finish()'s copy buffer */
	size_t batch_max;     /* pages it holds: RINGBUF_TDAT__BATCH bytes, at least 1 */
	size_t batch_n;       /* pages in it, all of batch_cpu; 0 between calls */
	unsigned batch_cpu;
	struct ringbuf_tracedat_stats pend; /* events, bytes, lost, lost_unknown of
			       * the batch: added to st when written */
	struct ringbuf_tracedat_stats st;
	int broken;           /* a write failed (RINGBUF_ESYS) */
	int streamed;         /* open_fds(): fd[] are the caller's, no file at finish() */
	int unnamed;          /* fd[] are O_TMPFILE files: finish() can give one a name */
	uint64_t reserve;     /* bytes before the pages in each fd[] (unnamed: room for
			       * the metadata; else 0) */
	unsigned direct;      /* finish(): the CPU whose file becomes the result
			       * (ncpu: none) */
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

/* ---- the page check (A2) ------------------------------------------------ */

RINGBUF_API int ringbuf_tracedat_check_page(const void *page, size_t page_size, int big_endian,
					    unsigned long_size, uint64_t *events, uint64_t *lost)
{
	const unsigned char *pg = (const unsigned char *)page;
	const int be = big_endian != 0;
	uint64_t commit, nev = 0, nlost = 0, ts, add;
	size_t hdr, bsize, len, off = 0;
	int timed = 0; /* the last record was a time extend or stamp */
	if (!page || (long_size != 4 && long_size != 8) || page_size < 64 || page_size > ((size_t)1 << 20))
		return RINGBUF_EINVAL;
	hdr = 8 + long_size;
	bsize = page_size - hdr;
	commit = ringbuf_tdat__get(pg + 8, long_size, be);
	ts = ringbuf_tdat__get(pg, 8, be);
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
		add = be ? w & ((1u << 27) - 1) : w >> 5; /* the record's time delta */
		if (t == 30)
			add |= (uint64_t)a0 << 27;
		if (t == 31) {
			/* the low 59 bits of the time, the top 5 kept: below the
			 * running time only as a wrap (from near 2^59 to near 0,
			 * as kbuffer reads it); a stamp that goes back is refused */
			const uint64_t m = ((uint64_t)1 << 59) - 1;
			uint64_t val = ((uint64_t)a0 << 27 | add) & m, v = (ts & ~m) | val;
			add = 0;
			if (v < ts) {
				if ((ts & m) - val < ((uint64_t)1 << 58) || v + ((uint64_t)1 << 59) < v)
					return RINGBUF_ECORRUPT;
				v += (uint64_t)1 << 59;
			}
			ts = v;
		}
		/* A2: the running time never wraps past 2^64 (a reader would
		 * put the events before the page's start) */
		if (ts + add < ts)
			return RINGBUF_ECORRUPT;
		ts += add;
		if (t >= 1 && t <= 28) {
			rl = 4 + (size_t)t * 4;
			nev++;
		} else if (t == 0) {
			/* array[0] a multiple of 4, as ringbuf.h's parser and
			 * pagewalk take it (kbuffer would round it up) */
			if (left < 8 || a0 < 4 || (a0 & 3) != 0)
				return RINGBUF_ECORRUPT;
			rl = 4 + (size_t)a0;
			nev++;
		} else if (t == 29) {
			if (left < 8 || a0 < 4)
				return RINGBUF_ECORRUPT;
			rl = 4 + (size_t)a0;
		} else {
			/* a time record belongs to the event after it (or to
			 * the padding a discarded one became): never two in a
			 * row, never the last record */
			if (left < 8 || timed)
				return RINGBUF_ECORRUPT;
			rl = 8;
		}
		timed = t >= 30;
		if (rl > left || (rl & 3) != 0)
			return RINGBUF_ECORRUPT;
		off += rl;
	}
	if (timed)
		return RINGBUF_ECORRUPT;
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
	if (w->fd && !w->streamed)
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

/* Linux's values (strict -std=c11 hides them): AT_FDCWD, AT_SYMLINK_FOLLOW,
 * AT_EMPTY_PATH; O_TMPFILE from glibc's internal name when hidden */
#define RINGBUF_TDAT__AT_FDCWD (-100)
#define RINGBUF_TDAT__AT_SYMLINK_FOLLOW 0x400
#define RINGBUF_TDAT__AT_EMPTY_PATH 0x1000
#if defined(__linux__) && defined(O_TMPFILE)
#define RINGBUF_TDAT__O_TMPFILE O_TMPFILE
#elif defined(__linux__) && defined(__O_TMPFILE)
#define RINGBUF_TDAT__O_TMPFILE __O_TMPFILE
#endif

/* An unnamed file in the output's directory (O_TMPFILE: gone with its last
 * descriptor, whatever ends the process; finish() can link it); -1 where the
 * system or the filesystem has none. */
static int ringbuf_tdat__mktmp(struct ringbuf_tracedat *w)
{
#if defined(RINGBUF_TDAT__O_TMPFILE) && defined(SYS_linkat)
	char *slash = strrchr(w->path, '/');
	int fd;
	if (!slash)
		return open(".", RINGBUF_TDAT__O_TMPFILE | O_RDWR | RINGBUF__O_CLOEXEC, 0600);
	snprintf(w->part, strlen(w->path) + 48, "%.*s", slash == w->path ? 1 : (int)(slash - w->path), w->path);
	fd = open(w->part, RINGBUF_TDAT__O_TMPFILE | O_RDWR | RINGBUF__O_CLOEXEC, 0600);
	w->part[0] = 0;
	return fd;
#else
	(void)w;
	return -1;
#endif
}

/* Give the unnamed file fd a name next to the output (w->part): 0 or -1. */
static int ringbuf_tdat__link(struct ringbuf_tracedat *w, int fd)
{
#if defined(RINGBUF_TDAT__O_TMPFILE) && defined(SYS_linkat)
	char proc[40];
	unsigned k;
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	for (k = 0; k < 100; k++) {
		long r;
		snprintf(w->part, strlen(w->path) + 48, "%s.%ld.%u.part", w->path, (long)getpid(), k);
		/* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; /proc needs /proc */
		r = syscall(SYS_linkat, fd, "", RINGBUF_TDAT__AT_FDCWD, w->part, RINGBUF_TDAT__AT_EMPTY_PATH);
		if (r != 0 && errno != EEXIST)
			r = syscall(SYS_linkat, RINGBUF_TDAT__AT_FDCWD, proc, RINGBUF_TDAT__AT_FDCWD, w->part,
				    RINGBUF_TDAT__AT_SYMLINK_FOLLOW);
		if (r == 0)
			return 0;
		if (errno != EEXIST)
			break;
	}
#else
	(void)fd;
#endif
	w->part[0] = 0;
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

static int ringbuf_tdat__info_ok(const struct ringbuf_tracedat_info *info)
{
	return info && info->ncpu >= 1 && info->ncpu <= RINGBUF_TDAT__MAX_CPUS && info->page_size >= 64 &&
	       info->page_size <= ((size_t)1 << 20) && (info->page_size & (info->page_size - 1)) == 0 &&
	       (info->long_size == 4 || info->long_size == 8) &&
	       (info->version == 0 || info->version == 6 || info->version == 7) &&
	       !(info->clock && strlen(info->clock) >= 64) && (info->file_mode & ~07777u) == 0;
}

/* A writer for info with its memory (path: its copy; "" for a streamed one),
 * no descriptors yet (all -1). */
static int ringbuf_tdat__new(const char *path, const struct ringbuf_tracedat_info *info,
			     struct ringbuf_tracedat **out)
{
	struct ringbuf_tracedat *w;
	size_t plen;
	unsigned i;
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
	w->direct = info->ncpu;
	plen = strlen(path);
	w->path = (char *)ringbuf_tdat__alloc(w, plen + 1);
	w->part = (char *)ringbuf_tdat__alloc(w, plen + 48);
	w->fd = (int *)ringbuf_tdat__alloc(w, info->ncpu * sizeof(int));
	w->cpu_pages = (uint64_t *)ringbuf_tdat__alloc(w, info->ncpu * sizeof(uint64_t));
	w->batch_max = info->page_size >= RINGBUF_TDAT__BATCH ? 1 : RINGBUF_TDAT__BATCH / info->page_size;
	w->page = (unsigned char *)ringbuf_tdat__alloc(w, w->batch_max * info->page_size);
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
	*out = w;
	return 0;
}

static void ringbuf_tdat__layout(struct ringbuf_tracedat *w, struct ringbuf_trace__layout *l);

RINGBUF_API int ringbuf_tracedat_open(const char *path, const struct ringbuf_tracedat_info *info,
				      struct ringbuf_tracedat **out)
{
	struct ringbuf_tracedat *w;
	size_t plen;
	unsigned i;
	int r;
	if (out)
		*out = NULL;
	if (!path || !*path || !out || !ringbuf_tdat__info_ok(info))
		return RINGBUF_EINVAL;
	if ((r = ringbuf_tdat__new(path, info, &w)) < 0)
		return r;
	plen = strlen(path);
	w->fd[0] = ringbuf_tdat__mktmp(w);
	if (w->fd[0] >= 0) {
		uint64_t meta = 0;
		struct ringbuf_trace__layout l;
		w->unnamed = 1;
		/* the room for the metadata: its size now (formats, thread
		 * names so far) to the next page boundary, what the
		 * sequential layout gives it; only finish() writes there. If
		 * it outgrows that (many more thread names), finish() copies */
		ringbuf_tdat__layout(w, &l);
		l.meta_end = &meta;
		if ((r = ringbuf_trace__layout_write(&l, -1)) < 0) {
			ringbuf_tdat__release(w);
			return r;
		}
		w->reserve = meta; /* page-aligned */
	}
	for (i = 0; i < info->ncpu; i++) {
		char suffix[24];
		if (w->unnamed) {
			if (i > 0)
				w->fd[i] = ringbuf_tdat__mktmp(w);
			if (w->fd[i] >= 0 && lseek(w->fd[i], (off_t)w->reserve, SEEK_SET) != (off_t)w->reserve) {
				close(w->fd[i]);
				w->fd[i] = -1;
			}
		} else {
			snprintf(suffix, sizeof suffix, ".cpu%u", i);
			w->fd[i] = ringbuf_tdat__mkfile(w, suffix, 0600, w->part, plen + 48);
			if (w->fd[i] >= 0)
				unlink(w->part); /* only the descriptor keeps it */
		}
		if (w->fd[i] < 0) {
			int e = errno;
			ringbuf_tdat__release(w);
			errno = e;
			return RINGBUF_ESYS;
		}
	}
	w->part[0] = 0;
	*out = w;
	return 0;
}

RINGBUF_API int ringbuf_tracedat_open_fds(const struct ringbuf_tracedat_info *info, const int *fds,
					  struct ringbuf_tracedat **out)
{
	struct ringbuf_tracedat *w;
	unsigned i;
	int r;
	if (out)
		*out = NULL;
	if (!fds || !out || !ringbuf_tdat__info_ok(info))
		return RINGBUF_EINVAL;
	for (i = 0; i < info->ncpu; i++)
		if (fds[i] < 0)
			return RINGBUF_EINVAL;
	if ((r = ringbuf_tdat__new("", info, &w)) < 0)
		return r;
	w->streamed = 1;
	for (i = 0; i < info->ncpu; i++)
		w->fd[i] = fds[i];
	*out = w;
	return 0;
}

/* sock: fd may be a socket of a streamed writer: send() without SIGPIPE when
 * the peer has gone (EPIPE instead), write() for anything else */
static int ringbuf_tdat__write_fd(int fd, const void *buf, size_t n, int sock)
{
	const unsigned char *p = (const unsigned char *)buf;
	while (n) {
		ssize_t k;
#if defined(MSG_NOSIGNAL)
		if (sock) {
			k = send(fd, p, n, MSG_NOSIGNAL);
			if (k < 0 && errno == ENOTSOCK)
				k = write(fd, p, n);
		} else
#endif
			k = write(fd, p, n);
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
	(void)sock;
	return 0;
}

/* A4: write the batch (batch_n pages of batch_cpu) with one write() and
 * count its pages; a failed write poisons the writer (its pages are lost,
 * not counted). 0 or RINGBUF_ESYS. */
static int ringbuf_tdat__flush(struct ringbuf_tracedat *w)
{
	size_t n = w->batch_n;
	unsigned cpu = w->batch_cpu;
	if (!n)
		return 0;
	w->batch_n = 0;
	if (ringbuf_tdat__write_fd(w->fd[cpu], w->page, n * w->info.page_size, w->streamed) < 0) {
		memset(&w->pend, 0, sizeof w->pend);
		w->broken = 1;
		return RINGBUF_ESYS;
	}
	w->cpu_pages[cpu] += n;
	w->st.pages += n;
	w->st.events += w->pend.events;
	w->st.bytes += w->pend.bytes;
	w->st.lost += w->pend.lost;
	w->st.lost_unknown += w->pend.lost_unknown;
	memset(&w->pend, 0, sizeof w->pend);
	return 0;
}

/* The batch's next slot, for cpu's next page (A1 copies into it): the batch
 * is written first if it is full or holds another CPU's pages. NULL: that
 * write failed (RINGBUF_ESYS, the writer is broken). */
static unsigned char *ringbuf_tdat__slot(struct ringbuf_tracedat *w, unsigned cpu)
{
	if (w->batch_n && (w->batch_n == w->batch_max || w->batch_cpu != cpu) && ringbuf_tdat__flush(w) < 0)
		return NULL;
	w->batch_cpu = cpu;
	return w->page + w->batch_n * w->info.page_size;
}

/* A2, A3 on the slot pg that A1 filled: 1 (the page joins the batch), 0
 * (no records: skipped), RINGBUF_ECORRUPT (refused; the slot is reused). */
static int ringbuf_tdat__take(struct ringbuf_tracedat *w, unsigned char *pg)
{
	const size_t ps = w->info.page_size, ls = w->info.long_size;
	uint64_t nev = 0, lost = 0, commit;
	size_t len, end;
	int r = ringbuf_tracedat_check_page(pg, ps, w->info.big_endian, (unsigned)ls, &nev, &lost);
	if (r < 0) {
		w->st.pages_rejected++;
		return r;
	}
	commit = ringbuf_tdat__get(pg + 8, (unsigned)ls, w->info.big_endian);
	len = (size_t)(commit & ((1u << 27) - 1));
	if (len == 0 && !(commit & (1u << 31))) {
		w->st.pages_empty++;
		return 0;
	}
	end = 8 + ls + len + ((commit & (1u << 30)) ? ls : 0);
	memset(pg + end, 0, ps - end);
	w->batch_n++;
	w->pend.events += nev;
	w->pend.bytes += len;
	if (lost == RINGBUF_TRACE_LOST_UNKNOWN)
		w->pend.lost_unknown++;
	else
		w->pend.lost += lost;
	return 1;
}

RINGBUF_API int ringbuf_tracedat_add_page(struct ringbuf_tracedat *w, unsigned cpu, const void *page,
					  size_t size)
{
	unsigned char *pg;
	int r;
	if (!w || !page || cpu >= w->info.ncpu || size != w->info.page_size) {
		if (w)
			w->st.pages_rejected++;
		return RINGBUF_EINVAL;
	}
	if (w->broken || !(pg = ringbuf_tdat__slot(w, cpu)))
		return RINGBUF_ESYS;
	memcpy(pg, page, size); /* A1: the only read of the caller's page */
	r = ringbuf_tdat__take(w, pg);
	if (r > 0 && ringbuf_tdat__flush(w) < 0) /* written before it returns */
		return RINGBUF_ESYS;
	return r;
}

/* drain()'s loop on one CPU: pages join the batch, written when it is
 * full and before it returns (nothing waits between calls). Adds the pages
 * taken to *total; returns 1 (this CPU is busy: RINGBUF_EAGAIN), 0, or an
 * error: *read_err set for the reader's (drain() then returns *total when
 * > 0, as before), clear for a refused page or a failed write. */
static int ringbuf_tdat__drain_cpu(struct ringbuf_tracedat *w, struct ringbuf *rb, unsigned c, unsigned flags,
				   int *total, int *read_err)
{
	size_t limit = 2 * (size_t)ringbuf_nr_pages(rb) + 4, n = 0;
	int again = 0, busy = 0, r = 0;
	while (n < limit) {
		const void *ref = NULL;
		unsigned char *pg = ringbuf_tdat__slot(w, c);
		if (!pg)
			return RINGBUF_ESYS;
		r = RINGBUF_EAGAIN;
		if (flags & RINGBUF_READ_FULL)
			r = ringbuf_read_page_ref(rb, c, &ref);
		if (r > 0) {
			memcpy(pg, ref, w->info.page_size); /* A1 */
		} else if (r == RINGBUF_EAGAIN) {
			r = ringbuf_read_page(rb, c, pg, w->info.page_size, flags);
			if (r == RINGBUF_EAGAIN && ++again < 100)
				continue;
		}
		if (r == RINGBUF_EAGAIN) { /* this CPU later; the others now */
			busy = 1;
			r = 0;
			break;
		}
		if (r <= 0) {
			*read_err = r < 0;
			break;
		}
		n++;
		r = ringbuf_tdat__take(w, pg);
		if (r < 0)
			break;
		*total += r;
		r = 0;
	}
	if (ringbuf_tdat__flush(w) < 0) {
		*read_err = 0;
		return RINGBUF_ESYS;
	}
	return r < 0 ? r : busy;
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
		int read_err = 0, r = ringbuf_tdat__drain_cpu(w, rb, c, flags, &total, &read_err);
		if (r < 0)
			return read_err && total ? total : r;
		busy |= r;
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

/* The file's layout is ringbuf_trace.h's (>>tracedat: the file there), fed
 * from the per-CPU temporary files. */

static uint64_t ringbuf_tdat__cpu_pages(void *ctx, unsigned cpu)
{
	return ((const struct ringbuf_tracedat *)ctx)->cpu_pages[cpu];
}

/* Append len bytes of src from off to out: in the kernel (copy_file_range:
 * no copy through user memory, one call for many pages; the temporary file
 * is next to out, on the same filesystem), else, or for what it did not
 * copy (an old kernel, another filesystem), through w->page. */
static int ringbuf_tdat__copy_range(struct ringbuf_tracedat *w, int src, int64_t off, uint64_t left, int out)
{
#if defined(__linux__) && defined(SYS_copy_file_range)
	while (left) {
		size_t chunk = left > ((uint64_t)1 << 30) ? (size_t)1 << 30 : (size_t)left;
		long k = syscall(SYS_copy_file_range, src, &off, out, NULL, chunk, 0u);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break; /* the rest through user memory, from off */
		left -= (uint64_t)k;
	}
#endif
	if (!left)
		return 0;
	if (lseek(src, (off_t)off, SEEK_SET) != (off_t)off)
		return RINGBUF_ESYS;
	while (left) {
		size_t want = left < w->info.page_size ? (size_t)left : w->info.page_size, got = 0;
		while (got < want) {
			ssize_t k = read(src, w->page + got, want - got);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				if (k == 0)
					errno = EIO; /* the file got shorter */
				return RINGBUF_ESYS;
			}
			got += (size_t)k;
		}
		if (ringbuf_trace__write_all(out, w->page, want) < 0)
			return RINGBUF_ESYS;
		left -= want;
	}
	return 0;
}

/* The layout writer's write_cpu: append cpu's pages to out, from its
 * temporary file; the direct CPU's are in out already (after the room for
 * the metadata): only move past them. */
static int ringbuf_tdat__copy_cpu(void *ctx, unsigned cpu, int out)
{
	struct ringbuf_tracedat *w = (struct ringbuf_tracedat *)ctx;
	uint64_t len = w->cpu_pages[cpu] * (uint64_t)w->info.page_size;
	if (cpu == w->direct) {
		off_t end = (off_t)(w->reserve + len);
		return lseek(out, end, SEEK_SET) == end ? 0 : RINGBUF_ESYS;
	}
	return ringbuf_tdat__copy_range(w, w->fd[cpu], (int64_t)w->reserve, len, out);
}

/* w described for ringbuf_trace.h's layout writer */
static void ringbuf_tdat__layout(struct ringbuf_tracedat *w, struct ringbuf_trace__layout *l)
{
	memset(l, 0, sizeof *l);
	l->version = w->info.version;
	l->be = w->info.big_endian;
	l->long_size = w->info.long_size;
	l->ncpu = w->info.ncpu;
	l->page_size = w->info.page_size;
	l->clock = w->clock;
	l->reg = w->info.reg;
	l->cmdlines = w->info.cmdlines;
	l->tsc = w->info.tsc;
	l->tsc_mult = w->info.tsc_mult;
	l->tsc_shift = w->info.tsc_shift;
	l->tsc_offset = w->info.tsc_offset;
	l->ioerr = RINGBUF_ESYS;
	l->cpu_pages = ringbuf_tdat__cpu_pages;
	l->write_cpu = ringbuf_tdat__copy_cpu;
	l->ctx = w;
	if (w->direct < w->info.ncpu) {
		l->first_cpu = w->direct;
		l->data_at = w->reserve;
	}
	l->heap = &w->st.heap_bytes;
	l->peak = &w->st.heap_peak;
	l->allocs = &w->st.allocs;
}

/* finish() without the copy of the largest CPU's pages: its unnamed file
 * (the pages after w->reserve bytes) gets the metadata at its start and the
 * other CPUs' pages after its own, then a name (w->part), then the path.
 * Returns 0 (done: w->part renamed over the path), 1 (not possible: the
 * metadata has outgrown the room, no CPU has a page; nothing changed: do
 * it by copying), or an error (w->part, when set, must be unlinked). */
static int ringbuf_tdat__finish_direct(struct ringbuf_tracedat *w, struct ringbuf_tracedat_stats *st)
{
	struct ringbuf_trace__layout l;
	uint64_t meta = 0, most = 0;
	unsigned i, d = w->info.ncpu;
	int fd, r;
	for (i = 0; i < w->info.ncpu; i++)
		if (w->cpu_pages[i] > most) {
			most = w->cpu_pages[i];
			d = i;
		}
	if (d == w->info.ncpu)
		return 1;
	w->direct = d;
	ringbuf_tdat__layout(w, &l);
	l.meta_end = &meta;
	r = ringbuf_trace__layout_write(&l, -1);
	if (st)
		*st = w->st;
	if (r < 0)
		return r;
	if (meta > w->reserve) {
		w->direct = w->info.ncpu;
		return 1;
	}
	fd = w->fd[d];
	if (fchmod(fd, w->info.file_mode ? w->info.file_mode : 0600) != 0 || lseek(fd, 0, SEEK_SET) != 0)
		return RINGBUF_ESYS;
	ringbuf_tdat__layout(w, &l);
	r = ringbuf_trace__layout_write(&l, fd);
	if (st)
		*st = w->st;
	if (r < 0)
		return r;
	if (ringbuf_tdat__link(w, fd) != 0) {
		/* no name for it (no /proc, no CAP_DAC_READ_SEARCH): copy the
		 * whole file into a new one */
		off_t end = lseek(fd, 0, SEEK_END);
		int out = ringbuf_tdat__mkfile(w, ".part", w->info.file_mode ? w->info.file_mode : 0600, w->part,
					       strlen(w->path) + 48);
		if (out < 0 || end < 0) {
			if (out >= 0)
				close(out);
			return RINGBUF_ESYS;
		}
		r = fchmod(out, w->info.file_mode ? w->info.file_mode : 0600) != 0
			    ? RINGBUF_ESYS
			    : ringbuf_tdat__copy_range(w, fd, 0, (uint64_t)end, out);
		if (close(out) != 0 && !r)
			r = RINGBUF_ESYS;
		if (r)
			return r;
	}
	if (rename(w->part, w->path) != 0)
		return RINGBUF_ESYS;
	return 0;
}

RINGBUF_API int ringbuf_tracedat_finish(struct ringbuf_tracedat *w, struct ringbuf_tracedat_stats *st)
{
	struct ringbuf_trace__layout l;
	int fd, r;
	if (!w)
		return RINGBUF_EINVAL;
	if (st)
		*st = w->st;
	if (w->broken) {
		ringbuf_tracedat_abort(w);
		return RINGBUF_ESYS;
	}
	if (w->streamed) { /* every page went out already */
		ringbuf_tdat__release(w);
		return 0;
	}
	if (w->unnamed && (r = ringbuf_tdat__finish_direct(w, st)) != 1) {
		if (r < 0) {
			int e = errno;
			ringbuf_tracedat_abort(w); /* unlinks a part file */
			errno = e;
			return r;
		}
		w->part[0] = 0;
		ringbuf_tdat__release(w);
		return 0;
	}
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
	ringbuf_tdat__layout(w, &l);
	r = ringbuf_trace__layout_write(&l, fd);
out:
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

RINGBUF_API int ringbuf_tracedat_header(const struct ringbuf_tracedat_info *info, void **buf, size_t *len)
{
	struct ringbuf_tracedat *w;
	struct ringbuf_trace__layout l;
	int r;
	if (buf)
		*buf = NULL;
	if (len)
		*len = 0;
	if (!buf || !len || !ringbuf_tdat__info_ok(info) || info->version == 7)
		return RINGBUF_EINVAL;
	if ((r = ringbuf_tdat__new("", info, &w)) < 0)
		return r;
	ringbuf_tdat__layout(w, &l);
	r = ringbuf_trace__layout_v6_header(&l, buf, len);
	ringbuf_tdat__release(w);
	return r;
}

#endif /* RINGBUF_IMPLEMENTATION */
