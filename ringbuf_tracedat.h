/* ringbuf_tracedat.h - v0.1.0 - trace.dat for ringbuf.h: the in-memory export and the streaming writer
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
 *   In the one C file that defines RINGBUF_IMPLEMENTATION:
 *       #define RINGBUF_IMPLEMENTATION
 *       #include "ringbuf_tracedat.h"       (includes ringbuf_trace_text.h,
 *                   ringbuf_trace_flight.h, ringbuf_trace_filter.h,
 *                   ringbuf_trace_snapshot.h, ringbuf_trace_event.h, ringbuf.h)
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
 *   ringbuf_tracedat_keep_stats(w, rb);                 // its counters, losses too
 *   ringbuf_tracedat_finish(w, NULL);                   // or ringbuf_tracedat_abort(w)
 *
 * The same file in one call: ringbuf_trace_write_tracedat() /
 * ringbuf_trace_save_tracedat() export a buffer (and captured pages) of this
 * process (>>tracedat); both paths describe the file to one layout writer.
 *
 * TABLE OF CONTENTS (grep for the anchors)
 *   >>tracedat    the one-call export: captures written, CLOCK, FILTERS; the
 *                 layout writer ("the file") and the filters' reader
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
 *   few pages of a file with 1 KiB pages (the one-call export too);
 *   2 KiB and more are read whole.
 */
#ifdef __cplusplus
#ifndef RINGBUF__CXX_SHIM_KEEP
/* C++: ringbuf.h's C11-atomics shim (>>cxx in ringbuf.h) stays in force until
 * the end of the outermost ringbuf_trace*.h being included, which ends it */
#define RINGBUF__CXX_SHIM_KEEP 1
#define RINGBUF__CXX_SHIM_BY_TRACEDAT 1
#endif
#endif
#include "ringbuf_trace_text.h"
#include "ringbuf_trace_filter.h"

#ifndef RINGBUF_TRACEDAT_H
#define RINGBUF_TRACEDAT_H

#ifdef RINGBUF_NAMESPACE
#define ringbuf_trace_save_tracedat      RINGBUF__NS(ringbuf_trace_save_tracedat)
#define ringbuf_trace_tracedat_filters   RINGBUF__NS(ringbuf_trace_tracedat_filters)
#define ringbuf_trace_write_tracedat     RINGBUF__NS(ringbuf_trace_write_tracedat)
#define ringbuf_tracedat_abort           RINGBUF__NS(ringbuf_tracedat_abort)
#define ringbuf_tracedat_add_page        RINGBUF__NS(ringbuf_tracedat_add_page)
#define ringbuf_tracedat_check_page      RINGBUF__NS(ringbuf_tracedat_check_page)
#define ringbuf_tracedat_drain           RINGBUF__NS(ringbuf_tracedat_drain)
#define ringbuf_tracedat_finish          RINGBUF__NS(ringbuf_tracedat_finish)
#define ringbuf_tracedat_header          RINGBUF__NS(ringbuf_tracedat_header)
#define ringbuf_tracedat_info_of         RINGBUF__NS(ringbuf_tracedat_info_of)
#define ringbuf_tracedat_keep_stats      RINGBUF__NS(ringbuf_tracedat_keep_stats)
#define ringbuf_tracedat_open            RINGBUF__NS(ringbuf_tracedat_open)
#define ringbuf_tracedat_open_fds        RINGBUF__NS(ringbuf_tracedat_open_fds)
#define ringbuf_tracedat_stats           RINGBUF__NS(ringbuf_tracedat_stats)
#endif

#ifdef __cplusplus
extern "C" {
#endif

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
 * The pages go through the streaming writer below (>>tdat_api), kept in
 * memory instead of files: each is copied, checked and counted as
 * ringbuf_tracedat_add_page() does, so a page without records or a malformed
 * one is left out of the file, and the bytes after a page's records are zeros.
 * The clock name is shorter than 64 characters (else RINGBUF_EINVAL).
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
 * then prints [UNKNOWN EVENT]). Consumes rb (see above). When it read rb
 * (not RINGBUF_TRACE_TRACEDAT_NO_DRAIN), the file has rb's counters (CPUSTAT
 * options, as ringbuf_tracedat_keep_stats()).
 * Allocates a copy of the pages read from rb. Returns 0, or a negative RINGBUF_E* error
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
				 * >>tracedat CLOCK */
	const struct ringbuf_trace_registry *reg; /* event formats (NULL: none) and, at
				 * finish(), thread names and event filters
				 * (>>tracedat FILTERS); must stay valid until finish() */
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
/** Keep rb's counters for finish(), which writes them into the file as
 * CPUSTAT options, one per CPU, in the form of the kernel's
 * per_cpu/cpuN/stats (`trace-cmd report --stat` prints them): entries left
 * in the buffer, overrun, commit overrun, bytes, the oldest event's time and
 * the time of this call, dropped events, read events. They carry what no
 * page can: the events lost after a CPU's last event (a full
 * producer/consumer buffer that drops until the end, a file system with no
 * room for a new page). Call it after the last drain; a later call replaces
 * what an earlier one kept. rb's geometry must match info's. Returns 0,
 * RINGBUF_EINVAL (NULL, another geometry, a writer of open_fds(), whose
 * metadata went out before its pages) or RINGBUF_ENOMEM. */
RINGBUF_API int ringbuf_tracedat_keep_stats(struct ringbuf_tracedat *w, struct ringbuf *rb);
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
 * FILE. Written by the layout writer (>>tracedat: the file; the
 * one-call export uses the same code), with every number in the
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

/* ---- >>tracedat: the file -------------------------------------------------
 *
 * ONE PATH: every page of every trace.dat goes through the streaming writer
 * (>>tdat_impl: add_page's steps A1-A4), which keeps the pages in per-CPU
 * files (any byte order and long), or in memory for the one-call export
 * ringbuf_trace_write_tracedat() (this host's byte order and long; >>tdat_impl:
 * the one-call export), and describes the file in a struct
 * ringbuf_trace__layout for ringbuf_trace__layout_write().
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

/* CPUSTAT (trace-cmd's option 2), one per CPU that has a text, in CPU
 * order: "CPU: n\n" and the kernel's per_cpu/cpuN/stats lines, NUL-ended
 * (ringbuf_tracedat_keep_stats). Measuring the room (cpustat NULL,
 * cpustat_max not 0): ncpu options of the longest such text. */
static void ringbuf_trace__cpustat_options(struct ringbuf_trace__out *o)
{
	const struct ringbuf_trace__layout *l = o->l;
	unsigned i;
	if (!l->cpustat && !l->cpustat_max)
		return;
	for (i = 0; i < l->ncpu; i++) {
		const char *t = l->cpustat ? l->cpustat + (size_t)i * l->cpustat_max : NULL;
		size_t n = t ? strlen(t) : l->cpustat_max;
		if (n == 0)
			continue;
		ringbuf_trace__num(o, 2, 2);
		ringbuf_trace__num(o, 4, n + (t != NULL));
		ringbuf_trace__put(o, t, n + (t != NULL));
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
	ringbuf_trace__cpustat_options(o);
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
	ringbuf_trace__cpustat_options(o);
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

/* -- pages held in memory (up to two captures per CPU), for the layout writer: the
 * one-call export's pages, kept by the streaming writer (>>tdat_impl: the
 * one-call export) -- */

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


/* ---- >>tdat_impl: the streaming writer ------------------------------------ */

#define RINGBUF_TDAT__MAX_CPUS 4096u
#ifndef RINGBUF_TDAT__BATCH /* bytes of pages per write() (a test makes it small) */
#define RINGBUF_TDAT__BATCH ((size_t)128 << 10)
#endif
/* bytes of one CPUSTAT text with its NUL: room for 20-digit counts */
#define RINGBUF_TDAT__CPUSTAT 320

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
	/* the one-call export (ringbuf_trace_write_tracedat): A4 appends the
	 * pages to mem instead of a file, and the file goes to the caller's
	 * descriptor, with what info cannot say */
	struct ringbuf_trace_capture *mem;
	char *cpustat;        /* ncpu CPUSTAT texts, RINGBUF_TDAT__CPUSTAT bytes apart
			       * (ringbuf_tracedat_keep_stats; NULL: none kept) */
	int own_threads;      /* struct ringbuf_trace__layout's */
	const char *kallsyms;
	const char *const *ftrace_formats;
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
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && defined(__ORDER_BIG_ENDIAN__)
	/* the file's order is the host's (a trace of this machine: every page
	 * that ringbuf_tracedat_drain and ringbuf-record check): one load, not
	 * a byte at a time (the page check's loop: a consumer thread spent 6%
	 * of a traced sqlite's CPU there, perf) */
	if (be == (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)) {
		if (n == 4) {
			uint32_t x;
			memcpy(&x, p, 4);
			return x;
		}
		if (n == 8) {
			memcpy(&v, p, 8);
			return v;
		}
	}
#endif
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
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && defined(__ORDER_BIG_ENDIAN__)
		if (be == (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__) && ts <= ~(uint64_t)0 - ((uint64_t)len << 24)) {
			/* the host's order, the time far from 2^64 (a record of
			 * 8 bytes or more adds less than 2^27: len / 8 of them
			 * less than len << 24): a run of the common record, a
			 * data event of 4 + 4 * type_len bytes (the case
			 * type_len 1..28 below), one load a record and no check
			 * but the type; off stays 4-aligned below len (a
			 * multiple of 4), so 4 bytes are there to read. A record
			 * that ends past len ends the run past it: refused, as
			 * below. The page check took 27 instructions a record
			 * with a shortcut for this record in the loop below, 14
			 * with this loop instead (callgrind, ringbuf-record on
			 * sqlite). */
			size_t o = off;
			while (o < len) {
				uint32_t w0, t0;
				memcpy(&w0, pg + hdr + o, 4);
				t0 = be ? w0 >> 27 : w0 & 31u;
				if (t0 - 1u >= 28u)
					break;
				ts += be ? w0 & ((1u << 27) - 1) : w0 >> 5;
				nev++;
				o += 4 + (size_t)t0 * 4;
			}
			if (o > len)
				return RINGBUF_ECORRUPT;
			if (o != off) {
				timed = 0;
				off = o;
				continue;
			}
		}
#endif
		if (left < 4)
			return RINGBUF_ECORRUPT;
		w = (uint32_t)ringbuf_tdat__get(d, 4, be);
		t = be ? w >> 27 : w & 31u;
		add = be ? w & ((1u << 27) - 1) : w >> 5; /* the record's time delta */
		if (left >= 8)
			a0 = (uint32_t)ringbuf_tdat__get(d + 4, 4, be);
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
	ringbuf_tdat__free(w, w->cpustat);
	ringbuf_trace_capture_destroy(w->mem);
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
		 * names so far, the longest CPUSTAT options that
		 * keep_stats() can add) to the next page boundary, what the
		 * sequential layout gives it; only finish() writes there. If
		 * it outgrows that (many more thread names), finish() copies */
		ringbuf_tdat__layout(w, &l);
		l.cpustat_max = RINGBUF_TDAT__CPUSTAT;
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

/* A4 of the one-call export: n pages of the batch appended to cpu's pages
 * in memory (w->mem). 0 or RINGBUF_ENOMEM. */
static int ringbuf_tdat__mem_append(struct ringbuf_tracedat *w, unsigned cpu, size_t n)
{
	struct ringbuf_trace__cpages *cp = &w->mem->cpu[cpu];
	const size_t ps = w->info.page_size;
	if (cp->n + n > cp->cap) {
		size_t nc = cp->cap ? cp->cap : 16;
		unsigned char *q;
		while (nc < cp->n + n)
			nc *= 2;
		q = (unsigned char *)realloc(cp->pages, nc * ps);
		if (!q)
			return RINGBUF_ENOMEM;
		w->st.heap_bytes += (nc - cp->cap) * ps;
		w->st.allocs++;
		if (w->st.heap_bytes > w->st.heap_peak)
			w->st.heap_peak = w->st.heap_bytes;
		cp->pages = q;
		cp->cap = nc;
	}
	memcpy(cp->pages + cp->n * ps, w->page, n * ps);
	cp->n += n;
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
	if (w->mem) {
		int r = ringbuf_tdat__mem_append(w, cpu, n);
		if (r < 0) {
			memset(&w->pend, 0, sizeof w->pend);
			w->broken = 1;
			return r;
		}
	} else if (ringbuf_tdat__write_fd(w->fd[cpu], w->page, n * w->info.page_size, w->streamed) < 0) {
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
	int r, k;
	if (!w || !page || cpu >= w->info.ncpu || size != w->info.page_size) {
		if (w)
			w->st.pages_rejected++;
		return RINGBUF_EINVAL;
	}
	if (w->broken || !(pg = ringbuf_tdat__slot(w, cpu)))
		return RINGBUF_ESYS;
	memcpy(pg, page, size); /* A1: the only read of the caller's page */
	r = ringbuf_tdat__take(w, pg);
	if (r > 0 && (k = ringbuf_tdat__flush(w)) < 0) /* written before it returns */
		return k;
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

RINGBUF_API int ringbuf_tracedat_keep_stats(struct ringbuf_tracedat *w, struct ringbuf *rb)
{
	uint64_t now;
	unsigned c;
	if (!w || !rb || w->streamed || ringbuf_ncpu(rb) != w->info.ncpu ||
	    ringbuf_page_size(rb) != w->info.page_size)
		return RINGBUF_EINVAL;
	if (!w->cpustat &&
	    !(w->cpustat = (char *)ringbuf_tdat__alloc(w, (size_t)w->info.ncpu * RINGBUF_TDAT__CPUSTAT)))
		return RINGBUF_ENOMEM;
	now = ringbuf_time_stamp(rb);
	for (c = 0; c < w->info.ncpu; c++) {
		char *t = w->cpustat + (size_t)c * RINGBUF_TDAT__CPUSTAT;
		struct ringbuf_stats s;
		if (ringbuf_stats_cpu(rb, c, &s) < 0) {
			t[0] = 0; /* no option for it */
			continue;
		}
		/* the kernel's lines and order; times in seconds.microseconds */
		snprintf(t, RINGBUF_TDAT__CPUSTAT,
			 "CPU: %u\nentries: %llu\noverrun: %llu\ncommit overrun: %llu\nbytes: %llu\n"
			 "oldest event ts: %5llu.%06llu\nnow ts: %5llu.%06llu\ndropped events: %llu\n"
			 "read events: %llu\n",
			 c, (unsigned long long)s.entries, (unsigned long long)s.overrun,
			 (unsigned long long)s.commit_overrun, (unsigned long long)s.bytes,
			 (unsigned long long)(s.oldest_event_ts / 1000000000u),
			 (unsigned long long)(s.oldest_event_ts % 1000000000u / 1000u),
			 (unsigned long long)(now / 1000000000u), (unsigned long long)(now % 1000000000u / 1000u),
			 (unsigned long long)s.dropped_events, (unsigned long long)s.read_events);
	}
	return 0;
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

/* The file's layout is the layout writer's (>>tracedat: the file), fed
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

/* w described for the layout writer (>>tracedat: the file) */
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
	l->own_threads = w->own_threads;
	l->kallsyms = w->kallsyms;
	l->ftrace_formats = w->ftrace_formats;
	l->cpustat = w->cpustat;
	l->cpustat_max = w->cpustat ? RINGBUF_TDAT__CPUSTAT : 0;
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

/* ---- the one-call export: pages through the writer, the file to fd ------
 *
 * ringbuf_trace_write_tracedat() is this writer with its pages kept in
 * memory (w->mem) instead of per-CPU files: the captured pages, then the
 * pages drained from rb, go through add_page (A1-A4: copied, checked, the
 * bytes after commit zeroed, counted; a page without records or a malformed
 * one is left out, as for a file), and the layout writer writes the whole
 * file to the caller's descriptor, sequentially (a pipe is fine). */

RINGBUF_API int ringbuf_trace_write_tracedat(struct ringbuf *rb, const struct ringbuf_trace_registry *reg,
					     int fd, const struct ringbuf_trace_tracedat_opts *opts)
{
	static const struct ringbuf_trace_tracedat_opts defaults = RINGBUF_TRACE_TRACEDAT_INIT;
	const struct ringbuf_trace_capture *caps[2] = {NULL, NULL};
	struct ringbuf_trace_capture *drained = NULL;
	struct ringbuf_tracedat_info info;
	struct ringbuf_tracedat *w = NULL;
	struct ringbuf_trace__layout l;
	struct ringbuf__tscconv conv;
	const struct ringbuf__tscconv *tsc = NULL;
	union { uint16_t u; unsigned char b[2]; } endian;
	unsigned cpu;
	int r, version, k;

	if (!opts)
		opts = &defaults;
	version = opts->version ? opts->version : 6;
	if (fd < 0 || (version != 6 && version != 7) || (!rb && !opts->capture))
		return RINGBUF_EINVAL;
	memset(&info, 0, sizeof info);
	if (opts->capture) {
		info.ncpu = opts->capture->ncpu;
		info.page_size = opts->capture->page_size;
		if (rb && (ringbuf_ncpu(rb) != info.ncpu || ringbuf_page_size(rb) != info.page_size))
			return RINGBUF_EINVAL;
	} else {
		info.ncpu = ringbuf_ncpu(rb);
		info.page_size = ringbuf_page_size(rb);
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
		info.tsc = 1;
		ringbuf__tscconv_tracecmd(tsc, &info.tsc_mult, &info.tsc_shift, &info.tsc_offset);
	}
	info.clock = opts->clock;
	if (!info.clock)
		info.clock = tsc ? "x86-tsc"
			   : !rb || rb->clock_kind == RINGBUF__CLK_MONO ? "mono"
								       : "local";
	endian.u = 1;
	info.version = version;
	info.big_endian = endian.b[0] != 1;
	info.long_size = (unsigned)sizeof(long);
	info.reg = reg;
	r = ringbuf_tdat__info_ok(&info) ? ringbuf_tdat__new("", &info, &w) : RINGBUF_EINVAL;
	if (r == 0) {
		w->mem = (struct ringbuf_trace_capture *)calloc(1, sizeof *w->mem);
		if (w->mem)
			w->mem->cpu = (struct ringbuf_trace__cpages *)calloc(info.ncpu, sizeof *w->mem->cpu);
		if (!w->mem || !w->mem->cpu)
			r = RINGBUF_ENOMEM;
		else {
			w->mem->ncpu = info.ncpu;
			w->mem->page_size = info.page_size;
		}
	}
	for (cpu = 0; r == 0 && cpu < info.ncpu; cpu++)
		for (k = 0; r == 0 && k < 2; k++) {
			size_t i;
			if (!caps[k])
				continue;
			for (i = 0; r == 0 && i < caps[k]->cpu[cpu].n; i++) {
				int a = ringbuf_tracedat_add_page(w, cpu, caps[k]->cpu[cpu].pages + i * info.page_size,
								  info.page_size);
				if (a < 0 && a != RINGBUF_ECORRUPT)
					r = a; /* ENOMEM (a refused page is left out) */
			}
			if (caps[k] == drained) { /* its pages are the writer's now */
				free(drained->cpu[cpu].pages);
				memset(&drained->cpu[cpu], 0, sizeof drained->cpu[cpu]);
			}
		}
	if (r == 0) {
		w->own_threads = 1; /* rb is this process's: so are its writers' names */
		w->kallsyms = opts->kallsyms;
		w->ftrace_formats = opts->ftrace_formats;
		if (drained) /* the file holds what was read of rb: its counters */
			r = ringbuf_tracedat_keep_stats(w, rb); /* CPUSTAT: its losses */
	}
	if (r == 0) {
		caps[0] = w->mem;
		caps[1] = NULL;
		ringbuf_tdat__layout(w, &l);
		l.ioerr = RINGBUF_EINVAL;
		l.cpu_pages = ringbuf_trace__caps_pages;
		l.write_cpu = ringbuf_trace__caps_write;
		l.ctx = (void *)caps;
		r = ringbuf_trace__layout_write(&l, fd);
	}
	if (w)
		ringbuf_tdat__release(w);
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

#endif /* RINGBUF_IMPLEMENTATION */

/* C++: end ringbuf.h's shim where this header started it */
#if defined(__cplusplus) && defined(RINGBUF__CXX_SHIM_BY_TRACEDAT)
#undef RINGBUF__CXX_SHIM_BY_TRACEDAT
#undef RINGBUF__CXX_SHIM_KEEP
#include "ringbuf.h"
#endif
