/* ringbuf-record - record a running process's file-backed ringbuf.h buffer to trace.dat.
 *
 *   ringbuf-record [-o OUT.dat | -N HOST:PORT [-T SECONDS]] [-p PID] [-V 6|7] [-q]
 *                  [-e SYSTEM:EVENT... [-K KERNEL.dat] [-b KB]] FILE.rb
 *   ringbuf-record -d DIR [-o OUTDIR] [-k] [-V 6|7] [-q] [--preload LIB.so]
 *                  [-e SYSTEM:EVENT... [-K KERNEL.dat] [-C CLOCK] [-b KB]] [-- COMMAND ARGS...]
 *
 * Like `trace-cmd record` for this library. FILE.rb is a buffer made with
 * ringbuf_create_file() whose user area holds the event formats and thread
 * names (ringbuf_trace_store_registry()); the process writing it must not
 * read it itself. The recorder maps it shared, takes whole pages out of it
 * while the process runs (ringbuf_read_page_ref / ringbuf_read_page with
 * RINGBUF_READ_FULL, woken by ringbuf_wait) and writes them to OUT.dat
 * (default trace.dat) with the streaming writer (ringbuf_tracedat.h:
 * constant memory). When the traced process is gone (PID given with -p, else
 * the pid stored in the user area; exited, killed, or a zombie whose threads
 * are all gone) it repairs the buffer (ringbuf_recover: events cut in the
 * middle are dropped, events committed by nested writers are kept) and
 * takes everything left, so that the trace holds every committed event: the
 * pages taken live were consumed from the buffer, none comes twice. On
 * SIGINT/SIGTERM it takes what is committed now and stops (no repair: the
 * process still runs).
 *
 * With -N HOST:PORT the trace goes to a `trace-cmd listen -p PORT` on HOST
 * instead of a file (like `trace-cmd record -N`), over trace-cmd's own
 * network protocol (ringbuf_net.h: protocol v3, TCP data connections, one
 * per CPU; trace.dat version 6); the listener writes the trace.dat on its
 * side. -T bounds each network wait (default 30 s): a server that stops
 * answering ends the run with an error, never a hang.
 *
 * The mapping is shared with a process that may be broken or hostile: every
 * page is copied once and checked from the copy (a malformed page is
 * counted and left out), the user area is validated by
 * ringbuf_trace_load_registry(), every index the reader loads is checked
 * (HOSTILE MEMORY in ringbuf.h's >>design), and a corruption the reader
 * cannot get past (the same page refused again and again) ends the
 * recording with exit status 2 after a bounded number of tries, what was
 * taken before it written (tests/tools/test_record_hostile.c).
 *
 * FOLLOWING A PROCESS TREE (-d DIR). Every process of the tree makes its own
 * buffer in DIR and announces it by the protocol of examples/malloc_trace.c
 * (>>follow below): created under a dot name, locked with flock(LOCK_EX) on a
 * descriptor the process keeps (close-on-exec), then renamed to NAME.rb. The
 * recorder watches DIR (inotify: a rename ends its wait), scans it when a
 * name appeared, follows every NAME.rb it finds (drains whole pages while
 * the writer runs) and, when the lock can be taken shared (the writer exited,
 * was killed or exec'd: the kernel dropped the lock), repairs the buffer,
 * takes the rest and writes OUTDIR/NAME.dat (one trace.dat per process
 * image; `trace-cmd report -i A.dat -i B.dat` merges them by time), then
 * removes NAME.rb (-k keeps it). With a COMMAND, the recorder starts it with
 * RINGBUF_RECORD_DIR=DIR (and LD_PRELOAD=LIB.so with --preload) in its
 * environment, as a child subreaper (PR_SET_CHILD_SUBREAPER: orphans of the
 * tree become its children), and stops once every process of the tree has
 * been reaped and every buffer in DIR is finished. Without one it stops on
 * SIGINT/SIGTERM. A child made by fork() creates and locks its buffer before
 * it lets go of the lock it inherited (malloc_trace.c, FORK), so when a
 * parent's buffer looks finished, the child's is already in DIR.
 *
 * THE KERNEL'S EVENTS (-e SYSTEM:EVENT, repeatable): recorded at the same
 * time into KERNEL.dat beside the output, in the user buffers' clock, from a
 * tracefs instance of the recorder's own, so that `trace-cmd report -i
 * kernel.dat -i trace.dat` shows one timeline (>>kernel below;
 * docs/kernel-timeline.md). Not with -N.
 *
 * Exit status: 0 success, 1 usage error, 2 file error (buffer missing,
 * foreign or corrupted; output not writable), 3 network error (-N: name not
 * resolved, connection refused, protocol mismatch, the server closed early
 * or timed out, a malformed answer), 4 kernel tracing error (-e: tracefs
 * missing, no permission, an unknown event, a clock the kernel does not
 * have, tracefs failing while recording). Statistics go to stderr
 * (-q: none).
 *
 * Built by `make tools` into build/tools/ringbuf-record. Defining
 * RINGBUF_RECORD_TOOL_NO_MAIN before including this file gives
 * ringbuf_record_main(argc, argv) instead of main (used by the tests), and
 * ringbuf_record_last, the counters of the last run.
 */
#define _GNU_SOURCE 1
#define RINGBUF_IMPLEMENTATION
#include "ringbuf_net.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#endif

#define RBREC_OK 0
#define RBREC_USAGE 1
#define RBREC_FILE 2
#define RBREC_NET 3
#define RBREC_KERNEL 4
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define RBREC_BIG_ENDIAN 1
#else
#define RBREC_BIG_ENDIAN 0
#endif

/* Counters of the last ringbuf_record_main() run. */
struct ringbuf_record_counts {
	uint64_t live_pages;      /* pages taken while the process ran */
	uint64_t recovered_pages; /* pages taken after it was gone */
	uint64_t events, lost, bad_pages;
	uint64_t lost_after;      /* of lost: after the last event of their CPU (rbrec_lost_after) */
	int recovered;            /* the process was gone: the buffer was repaired */
	uint64_t buffers;         /* -d: buffers followed to the end (one per process image) */
	uint64_t bad_buffers;     /* -d: NAME.rb files that could not be opened or written */
	int command_status;       /* -d with a COMMAND: its wait status */
	uint64_t kernel_events, kernel_pages, kernel_lost; /* -e: KERNEL.dat (written or not) */
	uint64_t kernel_lost_unknown, kernel_bad_pages;
};
static struct ringbuf_record_counts ringbuf_record_last;

static volatile sig_atomic_t rbrec_stop; /* SIGINT/SIGTERM (main only) */

static void rbrec_usage(FILE *f)
{
	fprintf(f, "usage: ringbuf-record [-o OUT.dat | -N HOST:PORT [-T SECONDS]] [-p PID] [-V 6|7] [-q]\n"
		   "                      [-e SYSTEM:EVENT... [-K KERNEL.dat] [-b KB]] FILE.rb\n"
		   "       ringbuf-record -d DIR [-o OUTDIR] [-k] [-V 6|7] [-q] [--preload LIB]\n"
		   "                      [-e SYSTEM:EVENT... [-K KERNEL.dat] [-C CLOCK] [-b KB]] [-- COMMAND...]\n"
		   "  -d DIR        follow every process's buffer DIR/NAME.rb, write OUTDIR/NAME.dat each\n"
		   "  -k            -d: keep the NAME.rb files (default: removed once recorded)\n"
		   "  --preload LIB -d with COMMAND: run it with LD_PRELOAD=LIB\n"
		   "  -o FILE       trace.dat to write (default trace.dat)\n"
		   "  -N HOST:PORT  send the trace to `trace-cmd listen -p PORT` running on HOST\n"
		   "                (trace-cmd's network protocol v3, as `trace-cmd record -N`; TCP;\n"
		   "                the listener writes the trace.dat; version 6 only)\n"
		   "  -T SECONDS    -N: the longest wait for the server at each step (default 30)\n"
		   "  -p PID        the traced process (default: the pid stored in FILE.rb's user area)\n"
		   "  -V 6|7        trace.dat file version (default 6)\n"
		   "  -q            no statistics on stderr\n"
		   "  -e EVENT      also record the kernel's events (repeatable; SYSTEM:EVENT, SYSTEM, EVENT,\n"
		   "                globs as sched:*, or all) from a tracefs instance of its own, in the\n"
		   "                user buffers' clock, into KERNEL.dat; then one timeline:\n"
		   "                  trace-cmd report -i kernel.dat -i OUT.dat  (-d: an -i per .dat)\n"
		   "                needs root (tracefs); not with -N\n"
		   "  -K FILE       -e: the kernel's trace.dat (default kernel.dat beside OUT.dat, or\n"
		   "                OUTDIR/kernel.dat with -d)\n"
		   "  -C CLOCK      -e with -d: the buffers' clock, mono (default), mono_raw, boot, tai\n"
		   "                or x86-tsc (with FILE.rb the buffer's own clock is used)\n"
		   "  -b KB         -e: the kernel's buffer per CPU, in KiB (default: the kernel's)\n"
		   "exit status: 0 ok, 1 usage error, 2 file error, 3 network error, 4 kernel tracing\n"
		   "error (-e: no tracefs, no permission, unknown event, no such kernel clock)\n");
}

/* -N's argument: "HOST:PORT", "[IPV6]:PORT", or "PORT" (localhost, as
 * trace-cmd). 0 or -1. */
static int rbrec_hostport(const char *s, char *host, size_t hl, char *port, size_t pl)
{
	const char *colon = strrchr(s, ':'), *h = s, *p;
	size_t n;
	if (!colon) {
		h = "localhost";
		n = strlen(h);
		p = s;
	} else if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || close[1] != ':')
			return -1;
		h = s + 1;
		n = (size_t)(close - h);
		p = close + 2;
	} else {
		n = (size_t)(colon - s);
		p = colon + 1;
	}
	if (n == 0 || n >= hl || !*p || strlen(p) >= pl || strspn(p, "0123456789") != strlen(p) || atol(p) < 1 ||
	    atol(p) > 65535)
		return -1;
	memcpy(host, h, n);
	host[n] = 0;
	strcpy(port, p);
	return 0;
}

/* Start time (clock ticks since boot) and state of pid from /proc; 0 if none. */
static unsigned long long rbrec_proc(long pid, char *state)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	FILE *f;
	size_t n;
	int field;
	*state = 0;
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
	if (!p || p[1] != ' ')
		return 0;
	*state = p[2];
	p += 2;
	for (field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (p)
		start = strtoull(p, NULL, 10);
	return start;
}

/* Threads of pid still listed (a zombie whose process is gone lists one). */
static int rbrec_threads(long pid)
{
	char path[64];
	struct dirent *e;
	DIR *d;
	int n = 0;
	snprintf(path, sizeof path, "/proc/%ld/task", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* Whether the process (pid, started at start) can still write. */
static int rbrec_gone(long pid, unsigned long long start)
{
	char state;
	unsigned long long now;
	if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
		return 1;
	now = rbrec_proc(pid, &state);
	if (!now)
		return 1; /* no /proc entry: gone (or no /proc: then kill() decides) */
	if (start && now != start)
		return 1; /* the pid was given to another process */
	/* a zombie has left its memory; its other threads too when only the
	 * leader is listed */
	return (state == 'Z' || state == 'X') && rbrec_threads(pid) <= 1;
}

/* ==== >>diagnostics: what a corrupt buffer looked like ====================
 *
 * A buffer that fails validation (open, recovery) or a page check while it is
 * drained is reported with the check that failed (the library's warning, or
 * ringbuf__invalid_why for a validation) and dumped: PATH.corrupt-K.rb, a
 * copy of the whole block taken as soon as the failure is seen (the writer
 * may still run: the copy is of a moment just after the check, not of the
 * check itself), and PATH.corrupt-K.txt, per CPU the reader, head, commit and
 * tail pages, the nesting depth, the reader's position, the slots in flight
 * and every page's link, count and commit, then the first bytes of the pages
 * the reader and the writers are on. Next to FILE.rb, or in the directory
 * RINGBUF_RECORD_DUMP names; at most 4 dumps per run. This reads the block
 * through the implementation's internal layout (the tool compiles it in),
 * from the copy only. */
struct rbrec_diag {
	const char *path;  /* the buffer file */
	struct ringbuf *rb; /* its mapping once open, else NULL (read the file) */
	size_t len;         /* the mapping's length, read once at open (the block's
			     * own total_size is the traced process's to change) */
	unsigned dumps;
};
static struct rbrec_diag rbrec_diag;

static void rbrec_hex(FILE *f, const unsigned char *p, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++)
		fprintf(f, "%02x%s", p[i], (i & 31) == 31 ? "\n    " : (i & 3) == 3 ? " " : "");
	fputc('\n', f);
}

static void rbrec_dump_text(FILE *f, struct ringbuf *rb, size_t len)
{
	unsigned cpu, i;
	/* the copy is ours, but what it holds is the traced process's: every
	 * part it names must lie inside it, aligned as its type (the copy is
	 * 4096-aligned: a per-CPU struct at a cpu_off that is not a multiple
	 * of 64, or a page not at a multiple of 8, is a misaligned access,
	 * undefined behaviour; found by fuzz/fuzz_intake.c under UBSan) */
	if (len < sizeof *rb || rb->magic != RINGBUF__MAGIC || rb->total_size > len || rb->nr_pages > 1u << 20 ||
	    rb->nr_pages == 0 || rb->ncpu == 0 || rb->ncpu > 4096 || rb->page_size < 64 ||
	    rb->page_size > 1u << 20 || rb->cpu_off % _Alignof(struct ringbuf__cpu) != 0 ||
	    rb->cpu_off < sizeof(struct ringbuf__shdr) ||
	    rb->bpage_off % _Alignof(struct ringbuf__bpage) != 0 || rb->data_off % _Alignof(struct ringbuf__dpage) != 0 ||
	    rb->page_size % _Alignof(struct ringbuf__dpage) != 0 || rb->cpu_off > len ||
	    (len - rb->cpu_off) / sizeof(struct ringbuf__cpu) < rb->ncpu || rb->bpage_off > len ||
	    (len - rb->bpage_off) / sizeof(struct ringbuf__bpage) / RINGBUF__BP_STRIDE(rb->nr_pages) < rb->ncpu ||
	    rb->data_off > len ||
	    (len - rb->data_off) / rb->page_size / ((uint64_t)rb->nr_pages + 1) < rb->ncpu) {
		fprintf(f, "header not usable: no per-CPU state\n");
		return;
	}
	fprintf(f, "ncpu %u nr_pages %u page_size %u bsize %u mode %d\n", rb->ncpu, rb->nr_pages, rb->page_size,
		rb->bsize, atomic_load_explicit(&ringbuf__sh(rb)->mode, memory_order_relaxed));
	for (cpu = 0; cpu < rb->ncpu; cpu++) {
		struct ringbuf__cpu *c = ringbuf__cpu(rb, cpu);
		uint32_t rp = RINGBUF__LOAD(&c->reader_page), cp = RINGBUF__LOAD(&c->commit_page),
			 tp = RINGBUF__LOAD(&c->tail_page), d = RINGBUF__LOAD(&c->committing);
		uint32_t show[3];
		fprintf(f, "cpu %u: reader %u commit %u tail %u head_hint %u committing %u read %u reader_lock %llx "
			   "corrupt %u disabled %u pages_read %llu\n",
			cpu, rp, cp, tp, c->head_hint, d, c->read,
			(unsigned long long)RINGBUF__LOAD(&c->reader_lock), RINGBUF__LOAD(&c->corrupt),
			RINGBUF__LOAD(&c->disabled), (unsigned long long)RINGBUF__LOAD(&c->pages_read));
		for (i = 0; i < RINGBUF_MAX_NEST && i <= d; i++) {
			const struct ringbuf__slot *sl = &c->slots[i];
			fprintf(f, "  slot %u: page %u off %u len %#x event %u counted %u\n", i, sl->page, sl->off,
				RINGBUF__LOAD(&sl->len), sl->event, RINGBUF__LOAD(&sl->counted));
		}
		if (rp > rb->nr_pages || cp > rb->nr_pages || tp > rb->nr_pages)
			continue;
		for (i = 0; i <= rb->nr_pages; i++) {
			const struct ringbuf__bpage *bp = ringbuf__bp(rb, cpu, i);
			uint64_t l = RINGBUF__LOAD(&((struct ringbuf__bpage *)bp)->next);
			fprintf(f, "  page %u: next %u%s%s tag %llu prev %u write %#llx entries %#llx commit %#lx%s%s%s\n",
				i, ringbuf__link_idx(l), (l & RINGBUF__F_HEADER) ? " HEADER" : "",
				(l & RINGBUF__F_UPDATE) ? " UPDATE" : "", (unsigned long long)(l >> RINGBUF__TAG_SHIFT),
				bp->prev, (unsigned long long)RINGBUF__LOAD(&((struct ringbuf__bpage *)bp)->write),
				(unsigned long long)RINGBUF__LOAD(&((struct ringbuf__bpage *)bp)->entries),
				(unsigned long)atomic_load_explicit(&ringbuf__dp(rb, cpu, i)->commit, memory_order_relaxed),
				i == rp ? " <reader" : "", i == cp ? " <commit" : "", i == tp ? " <tail" : "");
		}
		show[0] = rp;
		show[1] = cp;
		show[2] = tp;
		for (i = 0; i < 3; i++) {
			if (i && show[i] == show[i - 1])
				continue;
			fprintf(f, "  page %u bytes (header and the first 256 of data[]):\n    ", show[i]);
			rbrec_hex(f, (const unsigned char *)ringbuf__dp(rb, cpu, show[i]),
				  rb->page_size < 16 + 256 ? rb->page_size : 16 + 256);
		}
	}
}

static void rbrec_dump(const char *what, unsigned cpu)
{
	const char *dir = getenv("RINGBUF_RECORD_DUMP");
	char name[512];
	unsigned char *copy = NULL;
	size_t len = 0;
	FILE *f;
	if (!rbrec_diag.path || rbrec_diag.dumps >= 4)
		return;
	/* the copy first: as near the failure as this can get */
	/* aligned as the block (struct ringbuf is read from the copy) */
	if (rbrec_diag.rb) {
		len = rbrec_diag.len;
		if (posix_memalign((void **)&copy, 4096, len ? len : 1) != 0)
			copy = NULL;
		else
			memcpy(copy, rbrec_diag.rb, len);
	} else {
		FILE *in = fopen(rbrec_diag.path, "rb");
		if (in) {
			long n = (fseek(in, 0, SEEK_END) == 0) ? ftell(in) : -1;
			rewind(in);
			if (n > 0 && posix_memalign((void **)&copy, 4096, (size_t)n) != 0)
				copy = NULL;
			if (n > 0 && copy)
				len = fread(copy, 1, (size_t)n, in);
			fclose(in);
		}
	}
	if (!copy)
		return;
	if (dir) {
		const char *base = strrchr(rbrec_diag.path, '/');
		snprintf(name, sizeof name, "%s/%s.%ld.corrupt-%u", dir, base ? base + 1 : rbrec_diag.path,
			 (long)getpid(), rbrec_diag.dumps);
	} else {
		snprintf(name, sizeof name, "%s.corrupt-%u", rbrec_diag.path, rbrec_diag.dumps);
	}
	rbrec_diag.dumps++;
	strcat(name, ".rb");
	f = fopen(name, "wb");
	if (f) {
		fwrite(copy, 1, len, f);
		fclose(f);
	}
	strcpy(name + strlen(name) - 3, ".txt");
	f = fopen(name, "w");
	if (f) {
		fprintf(f, "%s: cpu %u: %s\n", rbrec_diag.path, cpu, what);
		rbrec_dump_text(f, (struct ringbuf *)(void *)copy, len);
		fclose(f);
	}
	fprintf(stderr, "ringbuf-record: %s: cpu %u: %s (state in %.*s.{rb,txt})\n", rbrec_diag.path, cpu, what,
		(int)strlen(name) - 4, name);
	free(copy);
}

/* The library's warnings (a page that fails its check disables its CPU). */
static void rbrec_on_warning(const char *what, unsigned cpu, void *ctx)
{
	(void)ctx;
	rbrec_dump(what, cpu);
}

/* Take pages until none is left (or the call fails). Returns pages taken or
 * < 0. RINGBUF_EAGAIN (a writer in the middle of moving a page): live, try
 * at the next wake-up; at the end (no writer left) it cannot last, but is
 * retried a bounded number of times. */
static int rbrec_drain(struct ringbuf_tracedat *w, struct ringbuf *rb, unsigned flags, uint64_t *bad,
		       int live)
{
	int total = 0, again = 0, corrupt = 0;
	for (;;) {
		int r = ringbuf_tracedat_drain(w, rb, RINGBUF_ALL_CPUS, flags);
		if (r == RINGBUF_ECORRUPT) {
			/* a malformed page left out, the writer goes on; but a
			 * corruption the reader cannot get past (a page it does not
			 * consume, an index out of range) comes back at every call:
			 * a bounded number in a row, then the error (a hostile or
			 * broken writer must not keep the recorder here) */
			++*bad;
			if (++corrupt <= 2 * (int)(ringbuf_nr_pages(rb) + 1) * (int)ringbuf_ncpu(rb) + 8)
				continue;
			return r;
		}
		corrupt = 0;
		if (r == RINGBUF_EAGAIN) {
			if (live)
				return total;
			if (++again < 1000)
				continue;
		}
		if (r < 0)
			return r;
		if (r == 0)
			return total;
		total += r;
	}
}

/* ==== >>intake: attaching to a buffer and taking what is left ==============
 *
 * The two steps every recording makes on a buffer (FILE.rb, or each NAME.rb
 * with -d), shared by both modes and by fuzz/fuzz_intake.c, which runs them
 * (with rbrec_drain between them) on buffer images it corrupts. */

/* Attach: map FILE.rb shared (RDWR: the recorder consumes pages, recovery
 * repairs in place), load the event formats and thread names from its user
 * area (validated: ringbuf_trace_load_registry) and fill info for the
 * trace.dat writer (version, and the buffer's clock when not a TSC). Returns
 * 0, or < 0 with nothing left open and *what naming the step that failed
 * ("open": ringbuf_open_file's error, *rb NULL; "event formats"). */
static int rbrec_attach(const char *path, int version, struct ringbuf **rb, struct ringbuf_trace_registry *reg,
			struct ringbuf_tracedat_info *info, const char **what)
{
	int r;
	*what = "open";
	*rb = NULL;
	r = ringbuf_open_file(path, RINGBUF_OPEN_RDWR, rb);
	if (r < 0) {
		*rb = NULL;
		return r;
	}
	*what = "event formats";
	r = ringbuf_trace_load_registry(*rb, reg);
	if (r < 0) {
		ringbuf_destroy(*rb);
		*rb = NULL;
		return r;
	}
	ringbuf_tracedat_info_of(*rb, reg, info);
	info->version = version;
	if (!info->tsc)
		info->clock = ringbuf_clock_name(*rb);
	return 0;
}

/* The end of a recording: when the writers are gone, repair the buffer
 * (ringbuf_recover: events cut in the middle dropped), then take every page
 * left (flags 0: partly written pages too; while a writer may still run, no
 * repair and RINGBUF_EAGAIN ends it). Returns the pages taken, or < 0 with
 * *what naming the step that failed ("recovery", "reading"). */
static int rbrec_take_rest(struct ringbuf_tracedat *w, struct ringbuf *rb, int gone, uint64_t *bad,
			   const char **what)
{
	int r;
	*what = "recovery";
	if (gone && (r = ringbuf_recover(rb)) < 0)
		return r;
	*what = "reading";
	return rbrec_drain(w, rb, 0, bad, !gone);
}

/* ringbuf_tracedat_finish() with rb's counters in the file (CPUSTAT options:
 * `trace-cmd report --stat` shows them, the losses after a CPU's last event
 * too); the writer is gone either way */
static int rbrec_finish(struct ringbuf_tracedat *w, struct ringbuf *rb, struct ringbuf_tracedat_stats *st)
{
	int r = ringbuf_tracedat_keep_stats(w, rb);
	if (r < 0) {
		ringbuf_tracedat_stats(w, st);
		ringbuf_tracedat_abort(w);
		return r;
	}
	return ringbuf_tracedat_finish(w, st);
}

/* Events the buffer counts as lost (dropped, overwritten) beyond the page_lost
 * its pages reported: those after the last event a CPU kept. A page reports
 * a loss only before its first event (the kernel's format), so a writer that
 * drops until it ends (a full producer/consumer buffer, a file system with
 * no room for a new page) left them in the counters only: the summary adds
 * them. Taken after rbrec_take_rest. */
static uint64_t rbrec_lost_after(struct ringbuf *rb, uint64_t page_lost)
{
	struct ringbuf_stats s;
	uint64_t all;
	if (ringbuf_stats(rb, &s) < 0)
		return 0;
	all = s.dropped_events + s.commit_overrun + s.overrun;
	return all > page_lost ? all - page_lost : 0;
}

/* ==== >>kernel: the kernel's own events beside the user buffers (-e) ======
 *
 * `-e SYSTEM:EVENT` (repeatable; trace-cmd's forms: SYSTEM, SYSTEM:EVENT,
 * EVENT alone for that event in any system, globs, `all`) records the
 * kernel's events while the user buffers are recorded, into KERNEL.dat
 * (default kernel.dat beside the output: OUTDIR/kernel.dat with -d, the
 * directory of OUT.dat otherwise; -K names another), a trace.dat of its own
 * with the kernel's event formats, so that
 *     trace-cmd report -i kernel.dat -i trace.dat
 * (and KernelShark with both files) shows one timeline. Plain POSIX calls on
 * tracefs, no library (libtracefs would add a build dependency for a dozen
 * file operations): the tool builds wherever the headers do.
 *
 * K1 prepare (nothing changed anywhere): tracefs found (RINGBUF_RECORD_TRACEFS,
 *    else the tracefs line of /proc/mounts, else mounted at
 *    /sys/kernel/tracing when allowed, as trace-cmd does), its instances/
 *    writable, the user clock matched to a kernel trace_clock (mono,
 *    mono_raw, boot, tai, x86-tsc: the same counter in user space and in the
 *    kernel) that this kernel offers, every -e matched to at least one event.
 * K2 start: KERNEL.dat's per-CPU temporary files (unnamed, in its
 *    directory), then an instance of our own, instances/ringbuf-record-PID-
 *    START-N (as `trace-cmd record -B`: the global tracing state is never
 *    touched), its trace_clock, buffer_size_kb (-b), the events enabled, the
 *    per-CPU trace_pipe_raw files opened non-blocking. Instances named so
 *    whose process is gone (PID not running, or running with another start
 *    time: SIGKILLed recorders, and bench.c's ringbuf-bench-...) are removed
 *    first.
 * K3 take (each turn of the recording loop): the pages each CPU has, one
 *    read() of trace_pipe_raw per page (the kernel's buffer_data_page, the
 *    format the recorder already writes), checked by
 *    ringbuf_tracedat_check_page (events, losses counted) and appended to
 *    the CPU's file; at most 256 pages per CPU per turn, and only from a
 *    CPU poll() says is filled to the instance's buffer_percent (else each
 *    read takes the page the kernel is filling: pages of a few events).
 * K4 stop (the traced process gone, SIGINT/SIGTERM, or an error): tracing_on
 *    0, everything left read, the files closed, the instance removed (also
 *    on every error path after K2: rbrec_run's caller calls it last).
 * K5 finish: header_page, header_event, the ftrace formats, the enabled
 *    events' formats, /proc/kallsyms, printk_formats, saved_cmdlines,
 *    options (TRACECLOCK; for x86-tsc TSC2NSEC and OFFSET with the user
 *    buffer's own calibration, so both files convert cycles alike; with -d
 *    the recorder's own), then each CPU's pages, in the kernel's byte order
 *    and long; written to a temporary name and renamed: no partial
 *    KERNEL.dat. Mode 0600 (kallsyms holds the kernel's addresses).
 * Exit status 4 for K1/K2 failures and for a failed read of tracefs. */

#define RBREC_KMAX_SPECS 64
#define RBREC_KMAX_EVENTS 4096

struct rbrec_kernel {
	const char *spec[RBREC_KMAX_SPECS]; /* -e, as given */
	unsigned nspec;
	const char *out;        /* KERNEL.dat (-K, else beside the output) */
	char *out_owned;
	const char *clock;      /* the kernel's name for the user clock */
	long buffer_kb;         /* -b (0: the kernel's default) */
	int quiet;
	int tsc;                /* x86-tsc: TSC2NSEC, OFFSET from the user buffer */
	uint32_t tsc_mult, tsc_shift;
	int64_t tsc_offset;
	char tracefs[512];
	char inst[1024];        /* tracefs/instances/NAME once made (K2), else "" */
	char *ev[RBREC_KMAX_EVENTS]; /* "system/event" enabled */
	unsigned nev;
	unsigned ncpu;
	size_t page_size;
	unsigned long_size;     /* the kernel's (header_page): 8 for a 32-bit tool on a 64-bit kernel */
	int big_endian;         /* the kernel's byte order (rbrec_kernel_big_endian) */
	int *rfd;               /* per CPU: trace_pipe_raw (-1: none) */
	int *tfd;               /* per CPU: the temporary file of its pages */
	uint64_t *pages;        /* per CPU: pages in it */
	unsigned char *page;
	uint64_t events, lost, lost_unknown, bad_pages, npages;
	int stopped, failed;
};

static struct rbrec_kernel rbrec_k; /* the run's (one at a time) */

static int rbrec_kfail(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int rbrec_kfail(int rc, const char *fmt, ...)
{
	va_list ap;
	fputs("ringbuf-record: -e: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return rc;
}

/* The whole of a (small, tracefs or /proc) file, NUL-terminated; NULL with
 * errno on failure. *len (may be NULL) gets its length. */
static char *rbrec_slurp(const char *path, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *p = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || !p) {
		int e = errno;
		free(p);
		if (fd >= 0)
			close(fd);
		errno = e;
		return NULL;
	}
	for (;;) {
		ssize_t r;
		if (n + 1 >= cap) {
			char *q = realloc(p, cap * 2);
			if (!q) {
				free(p);
				close(fd);
				errno = ENOMEM;
				return NULL;
			}
			p = q;
			cap *= 2;
		}
		r = read(fd, p + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			free(p);
			close(fd);
			errno = e;
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	p[n] = 0;
	if (len)
		*len = n;
	return p;
}

/* Write s to the file (a tracefs control file). 0 or -1 (errno). */
static int rbrec_put(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC), e;
	ssize_t r;
	if (fd < 0)
		return -1;
	r = write(fd, s, strlen(s));
	e = errno;
	close(fd);
	errno = e;
	return r == (ssize_t)strlen(s) ? 0 : -1;
}

static char *rbrec_kpath(const struct rbrec_kernel *k, const char *base, const char *rel)
{
	static char buf[4][2048];
	static unsigned i;
	char *b = buf[i++ & 3];
	snprintf(b, sizeof buf[0], "%s/%s", base ? base : k->tracefs, rel);
	return b;
}

/* The kernel's trace_clock for a user buffer's clock name, or NULL: the
 * same counter read in user space and in the kernel. */
static const char *rbrec_kclock(const char *user)
{
	static const char *const same[] = {"mono", "mono_raw", "boot", "tai", "x86-tsc"};
	unsigned i;
	for (i = 0; i < sizeof same / sizeof same[0]; i++)
		if (strcmp(user, same[i]) == 0)
			return same[i];
	return NULL;
}

/* Where tracefs is: 0, or an error printed and RBREC_KERNEL. */
static int rbrec_kfind(struct rbrec_kernel *k)
{
	const char *env = getenv("RINGBUF_RECORD_TRACEFS");
	struct stat st;
	if (env && *env) {
		if (strlen(env) >= 400)
			return rbrec_kfail(RBREC_KERNEL, "RINGBUF_RECORD_TRACEFS: a path of at most 399 bytes");
		snprintf(k->tracefs, sizeof k->tracefs, "%s", env);
	} else {
		FILE *m = fopen("/proc/mounts", "r");
		char line[1024], dev[256], dir[400], type[64];
		k->tracefs[0] = 0;
		while (m && fgets(line, sizeof line, m))
			if (sscanf(line, "%255s %399s %63s", dev, dir, type) == 3 && strcmp(type, "tracefs") == 0) {
				snprintf(k->tracefs, sizeof k->tracefs, "%s", dir);
				break;
			}
		if (m)
			fclose(m);
#if defined(__linux__)
		/* not mounted: mount it where the kernel documents it, as
		 * trace-cmd (libtracefs) does; it stays mounted */
		if (!k->tracefs[0] && mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0)
			snprintf(k->tracefs, sizeof k->tracefs, "/sys/kernel/tracing");
#endif
		if (!k->tracefs[0])
			return rbrec_kfail(RBREC_KERNEL, "tracefs is not mounted (mount it as root: mount -t tracefs "
							 "nodev /sys/kernel/tracing)");
	}
	if (stat(rbrec_kpath(k, NULL, "instances"), &st) != 0 || !S_ISDIR(st.st_mode)) {
		if (errno == EACCES)
			return rbrec_kfail(RBREC_KERNEL, "%s: permission denied (the kernel's events need root, "
							 "or CAP_SYS_ADMIN)", k->tracefs);
		return rbrec_kfail(RBREC_KERNEL, "%s is not a tracefs mount (no instances/; set "
						 "RINGBUF_RECORD_TRACEFS or mount -t tracefs nodev /sys/kernel/tracing)",
				   k->tracefs);
	}
	if (access(rbrec_kpath(k, NULL, "instances"), W_OK | X_OK) != 0 ||
	    access(rbrec_kpath(k, NULL, "trace_clock"), R_OK) != 0)
		return rbrec_kfail(RBREC_KERNEL, "%s: %s (the kernel's events need root, or CAP_SYS_ADMIN)",
				   k->tracefs, errno == EACCES ? "permission denied" : strerror(errno));
	return 0;
}

/* The field "size:N" (with the offset) of field name in header_page. */
static long rbrec_kfield(const char *text, const char *name, long *offset)
{
	const char *p = strstr(text, name), *q;
	if (!p)
		return -1;
	q = strstr(p, "offset:");
	if (!q)
		return -1;
	*offset = atol(q + 7);
	q = strstr(p, "size:");
	return q ? atol(q + 5) : -1;
}

static int rbrec_kadd(struct rbrec_kernel *k, const char *sys, const char *ev)
{
	unsigned i;
	char buf[512];
	snprintf(buf, sizeof buf, "%s/%s", sys, ev);
	for (i = 0; i < k->nev; i++)
		if (strcmp(k->ev[i], buf) == 0)
			return 0;
	if (k->nev == RBREC_KMAX_EVENTS || !(k->ev[k->nev] = strdup(buf)))
		return -1;
	k->nev++;
	return 0;
}

/* Every event one -e names: 0 and how many in *found, or -1 (errno). */
static int rbrec_kmatch(struct rbrec_kernel *k, const char *spec, unsigned *found)
{
	char sys_pat[256], ev_pat[256];
	const char *colon = strchr(spec, ':');
	DIR *d = opendir(rbrec_kpath(k, NULL, "events"));
	struct dirent *s;
	*found = 0;
	if (!d)
		return -1;
	if (strcmp(spec, "all") == 0)
		spec = "*:*", colon = spec + 1;
	if (colon) {
		snprintf(sys_pat, sizeof sys_pat, "%.*s", (int)(colon - spec), spec);
		snprintf(ev_pat, sizeof ev_pat, "%s", colon[1] ? colon + 1 : "*");
	} else {
		snprintf(sys_pat, sizeof sys_pat, "%s", spec);
		snprintf(ev_pat, sizeof ev_pat, "%s", spec);
	}
	while ((s = readdir(d)) != NULL) {
		char sub[600];
		DIR *e;
		struct dirent *x;
		int whole;
		if (s->d_name[0] == '.' || strcmp(s->d_name, "ftrace") == 0)
			continue; /* ftrace's own events cannot be enabled */
		whole = fnmatch(sys_pat, s->d_name, 0) == 0;
		if (colon && !whole)
			continue;
		snprintf(sub, sizeof sub, "events/%s", s->d_name);
		e = opendir(rbrec_kpath(k, NULL, sub));
		if (!e)
			continue; /* a file (enable, header_page...) */
		while ((x = readdir(e)) != NULL) {
			char en[900];
			if (x->d_name[0] == '.')
				continue;
			if (colon ? !whole || fnmatch(ev_pat, x->d_name, 0) != 0
				  : !whole && fnmatch(ev_pat, x->d_name, 0) != 0)
				continue;
			snprintf(en, sizeof en, "events/%s/%s/enable", s->d_name, x->d_name);
			if (access(rbrec_kpath(k, NULL, en), F_OK) != 0)
				continue;
			if (rbrec_kadd(k, s->d_name, x->d_name) < 0) {
				closedir(e);
				closedir(d);
				errno = ENOMEM;
				return -1;
			}
			++*found;
		}
		closedir(e);
	}
	closedir(d);
	return 0;
}

/* The kernel's byte order: the tool's, unless the first ELF note of the
 * running kernel (/sys/kernel/notes: u32 namesz, a few bytes) reads as
 * byte-swapped (a foreign-endian tool under qemu-user). */
static int rbrec_kernel_big_endian(void)
{
	unsigned char b[4];
	uint32_t n;
	int fd = open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC), got;
	if (fd < 0)
		return RBREC_BIG_ENDIAN;
	got = read(fd, b, 4) == 4;
	close(fd);
	if (!got)
		return RBREC_BIG_ENDIAN;
	memcpy(&n, b, 4);
	if (n > 0 && n < 256)
		return RBREC_BIG_ENDIAN;
	n = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
	if (n > 0 && n < 256)
		return 1; /* reads right as big-endian */
	n = (uint32_t)b[3] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[1] << 8 | b[0];
	return n > 0 && n < 256 ? 0 : RBREC_BIG_ENDIAN;
}

/* K1. user_clock: the user buffers' clock name (-C's with -d: its_name).
 * 0, or RBREC_KERNEL (said). */
static int rbrec_kernel_prepare(struct rbrec_kernel *k, const char *user_clock, const char *its_name)
{
	char *clocks, *hp, *p;
	long off = 0, size;
	unsigned i, found;
	int r;
	k->clock = rbrec_kclock(user_clock);
	if (!k->clock)
		return rbrec_kfail(RBREC_KERNEL, "%s \"%s\" has no kernel trace_clock (the kernel stamps with mono, "
						 "mono_raw, boot, tai or x86-tsc: make the buffers with the default "
						 "clock or RINGBUF_CLOCK_TSC)", its_name, user_clock);
	if ((r = rbrec_kfind(k)) != 0)
		return r;
	clocks = rbrec_slurp(rbrec_kpath(k, NULL, "trace_clock"), NULL);
	if (!clocks)
		return rbrec_kfail(RBREC_KERNEL, "%s/trace_clock: %s", k->tracefs, strerror(errno));
	for (p = strtok(clocks, " []\n"); p; p = strtok(NULL, " []\n"))
		if (strcmp(p, k->clock) == 0)
			break;
	if (!p) {
		char *all = rbrec_slurp(rbrec_kpath(k, NULL, "trace_clock"), NULL);
		if (all)
			all[strcspn(all, "\n")] = 0;
		rbrec_kfail(RBREC_KERNEL, "this kernel has no trace_clock \"%s\" for the user buffers' clock "
					  "(it has: %s)", k->clock, all ? all : "?");
		free(all);
		free(clocks);
		return RBREC_KERNEL;
	}
	free(clocks);
	hp = rbrec_slurp(rbrec_kpath(k, NULL, "events/header_page"), NULL);
	if (!hp)
		return rbrec_kfail(RBREC_KERNEL, "%s/events/header_page: %s", k->tracefs, strerror(errno));
	size = rbrec_kfield(hp, "commit;", &off);
	k->long_size = size == 4 || size == 8 ? (unsigned)size : 0;
	size = rbrec_kfield(hp, " data;", &off);
	free(hp);
	if (!k->long_size || size <= 0 || off <= 0 || (size_t)(off + size) < 64 ||
	    (size_t)(off + size) > 1u << 20 || ((size_t)(off + size) & (size_t)(off + size - 1)) != 0)
		return rbrec_kfail(RBREC_KERNEL, "%s/events/header_page: not a page layout this tool reads",
				   k->tracefs);
	k->page_size = (size_t)(off + size);
	k->big_endian = rbrec_kernel_big_endian();
	for (i = 0; i < k->nspec; i++) {
		if (rbrec_kmatch(k, k->spec[i], &found) < 0)
			return rbrec_kfail(RBREC_KERNEL, "%s/events: %s", k->tracefs, strerror(errno));
		if (!found)
			return rbrec_kfail(RBREC_KERNEL, "%s: no such kernel event (SYSTEM:EVENT, SYSTEM or EVENT, "
							 "globs allowed; the list: %s/available_events)",
					   k->spec[i], k->tracefs);
	}
	return 0;
}

/* instances/ringbuf-{record,bench}-PID-START[-N] whose process is gone */
static void rbrec_kclean_stale(struct rbrec_kernel *k)
{
	DIR *d = opendir(rbrec_kpath(k, NULL, "instances"));
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL) {
		long pid;
		unsigned long long start;
		char rel[600];
		int tries;
		if (sscanf(e->d_name, "ringbuf-record-%ld-%llu", &pid, &start) != 2 &&
		    sscanf(e->d_name, "ringbuf-bench-%ld-%llu", &pid, &start) != 2)
			continue;
		if (pid > 0 && !rbrec_gone(pid, start))
			continue; /* its process runs (same pid, same start time) */
		snprintf(rel, sizeof rel, "instances/%s", e->d_name);
		/* a child the killed recorder forked may hold its files until
		 * its exec (close-on-exec): EBUSY for that moment */
		for (tries = 0; rmdir(rbrec_kpath(k, NULL, rel)) != 0 && errno == EBUSY && tries < 20; tries++)
			poll(NULL, 0, 50);
		if (access(rbrec_kpath(k, NULL, rel), F_OK) != 0 && !k->quiet)
			fprintf(stderr, "ringbuf-record: removed the tracefs instance %s of a recorder that was "
					"killed\n", e->d_name);
	}
	if (d)
		closedir(d);
}

/* An unnamed file in dir (O_TMPFILE), else one unlinked at once. */
static int rbrec_ktmp(const char *dir)
{
	char *name;
	int fd = -1;
#ifdef O_TMPFILE
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
#endif
	name = malloc(strlen(dir) + 32);
	if (!name)
		return -1;
	sprintf(name, "%s/.kernel.dat.XXXXXX", dir);
	fd = mkstemp(name);
	if (fd >= 0)
		unlink(name);
	free(name);
	return fd;
}

static char *rbrec_dirname(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *d;
	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	d = malloc((size_t)(slash - path) + 1);
	if (d) {
		memcpy(d, path, (size_t)(slash - path));
		d[slash - path] = 0;
	}
	return d;
}

/* K2. 0, or an error said and RBREC_FILE (KERNEL.dat's directory) or
 * RBREC_KERNEL (tracefs); what was made is undone by rbrec_kernel_stop. */
static int rbrec_kernel_start(struct rbrec_kernel *k)
{
	static unsigned seq;
	char state, name[128], rel[700];
	char *dir;
	DIR *d;
	struct dirent *e;
	unsigned i, cpu;
	k->ncpu = 0;
	d = opendir(rbrec_kpath(k, NULL, "per_cpu"));
	while (d && (e = readdir(d)) != NULL)
		if (sscanf(e->d_name, "cpu%u", &cpu) == 1 && cpu + 1 > k->ncpu && cpu < 4096)
			k->ncpu = cpu + 1;
	if (d)
		closedir(d);
	if (!k->ncpu)
		return rbrec_kfail(RBREC_KERNEL, "%s/per_cpu: no CPUs", k->tracefs);
	k->rfd = malloc(k->ncpu * sizeof *k->rfd);
	k->tfd = malloc(k->ncpu * sizeof *k->tfd);
	k->pages = calloc(k->ncpu, sizeof *k->pages);
	k->page = malloc(k->page_size);
	dir = rbrec_dirname(k->out);
	for (i = 0; i < k->ncpu; i++) { /* -1 before anything can fail: free() closes tfd[] */
		if (k->rfd)
			k->rfd[i] = -1;
		if (k->tfd)
			k->tfd[i] = -1;
	}
	if (!k->rfd || !k->tfd || !k->pages || !k->page || !dir) {
		free(dir);
		return rbrec_kfail(RBREC_FILE, "out of memory");
	}
	for (i = 0; i < k->ncpu; i++)
		if ((k->tfd[i] = rbrec_ktmp(dir)) < 0) {
			rbrec_kfail(RBREC_FILE, "%s: cannot write there: %s", dir, strerror(errno));
			free(dir);
			return RBREC_FILE;
		}
	free(dir);
	rbrec_kclean_stale(k);
	snprintf(name, sizeof name, "ringbuf-record-%ld-%llu-%u", (long)getpid(),
		 rbrec_proc((long)getpid(), &state), seq++);
	snprintf(rel, sizeof rel, "instances/%s", name);
	if (mkdir(rbrec_kpath(k, NULL, rel), 0750) != 0)
		return rbrec_kfail(RBREC_KERNEL, "%s/%s: %s", k->tracefs, rel, strerror(errno));
	snprintf(k->inst, sizeof k->inst, "%s/instances/%s", k->tracefs, name);
	if (rbrec_put(rbrec_kpath(k, k->inst, "trace_clock"), k->clock) != 0)
		return rbrec_kfail(RBREC_KERNEL, "%s/trace_clock: %s: %s", k->inst, k->clock, strerror(errno));
	if (k->buffer_kb > 0) {
		char kb[32];
		snprintf(kb, sizeof kb, "%ld", k->buffer_kb);
		if (rbrec_put(rbrec_kpath(k, k->inst, "buffer_size_kb"), kb) != 0)
			return rbrec_kfail(RBREC_KERNEL, "%s/buffer_size_kb: %s: %s", k->inst, kb, strerror(errno));
	}
	for (i = 0; i < k->nev; i++) {
		snprintf(rel, sizeof rel, "events/%s/enable", k->ev[i]);
		if (rbrec_put(rbrec_kpath(k, k->inst, rel), "1") != 0)
			return rbrec_kfail(RBREC_KERNEL, "%s/%s: %s", k->inst, rel, strerror(errno));
	}
	for (i = 0; i < k->ncpu; i++) {
		snprintf(rel, sizeof rel, "per_cpu/cpu%u/trace_pipe_raw", i);
		k->rfd[i] = open(rbrec_kpath(k, k->inst, rel), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (k->rfd[i] < 0 && errno != ENOENT && errno != ENODEV)
			return rbrec_kfail(RBREC_KERNEL, "%s/%s: %s", k->inst, rel, strerror(errno));
	}
	if (rbrec_put(rbrec_kpath(k, k->inst, "tracing_on"), "1") != 0)
		return rbrec_kfail(RBREC_KERNEL, "%s/tracing_on: %s", k->inst, strerror(errno));
	return 0;
}

/* The kernel adds its "events lost" flags to the commit word as ints
 * (RB_MISSED_EVENTS is 1 << 31): on a 64-bit long the add sign-extends,
 * and bits 32..63 come set with bit 31 (0xffffffffc0000fc0). Readers
 * (libtraceevent) look at bits 30, 31 and the length only; the page check
 * refuses bits above 31. Clear them when they are that sign extension. */
static void rbrec_kpage_fix(unsigned char *page, unsigned long_size)
{
	uint64_t c;
	if (long_size != 8)
		return;
	memcpy(&c, page + 8, 8);
	if ((c >> 31) == 0x1ffffffffull) {
		c &= 0xffffffffull;
		memcpy(page + 8, &c, 8);
	}
}

/* K3. Pages taken (all CPUs), or -1 (an error said; k->failed). */
static long rbrec_kernel_take(struct rbrec_kernel *k, int all)
{
	long total = 0;
	unsigned cpu;
	if (!k->inst[0] || k->failed)
		return 0;
	for (cpu = 0; cpu < k->ncpu; cpu++) {
		unsigned n;
		struct pollfd p;
		if (k->rfd[cpu] < 0)
			continue;
		/* while recording, a CPU whose buffer is filled to the
		 * instance's buffer_percent (poll says so), else a read would
		 * take the page the kernel is writing: mostly empty pages */
		p.fd = k->rfd[cpu];
		p.events = POLLIN;
		p.revents = 0;
		if (!all && poll(&p, 1, 0) <= 0)
			continue;
		for (n = 0; all || n < 256; n++) {
			uint64_t events = 0, lost = 0;
			ssize_t r = read(k->rfd[cpu], k->page, k->page_size);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0 && errno == EAGAIN)
				break;
			if (r < 0) {
				k->failed = RBREC_KERNEL;
				rbrec_kfail(RBREC_KERNEL, "%s/per_cpu/cpu%u/trace_pipe_raw: %s", k->inst, cpu,
					    strerror(errno));
				return -1;
			}
			if (r == 0)
				break;
			if (k->big_endian == RBREC_BIG_ENDIAN)
				rbrec_kpage_fix(k->page, k->long_size);
			if ((size_t)r != k->page_size ||
			    ringbuf_tracedat_check_page(k->page, k->page_size, k->big_endian, k->long_size, &events,
							&lost) < 0) {
				k->bad_pages++;
				continue;
			}
			if (lost == RINGBUF_TRACE_LOST_UNKNOWN)
				k->lost_unknown++;
			else
				k->lost += lost;
			if (events == 0)
				continue;
			if (write(k->tfd[cpu], k->page, k->page_size) != (ssize_t)k->page_size) {
				k->failed = RBREC_FILE;
				rbrec_kfail(RBREC_FILE, "%s: cannot write: %s", k->out, strerror(errno ? errno : ENOSPC));
				return -1;
			}
			k->pages[cpu]++;
			k->npages++;
			k->events += events;
			total++;
		}
	}
	return total;
}

/* K4: idempotent; the instance is gone when it returns (or said why not). */
static void rbrec_kernel_stop(struct rbrec_kernel *k)
{
	unsigned cpu;
	if (k->inst[0]) {
		rbrec_put(rbrec_kpath(k, k->inst, "tracing_on"), "0");
		if (!k->failed && !k->stopped)
			rbrec_kernel_take(k, 1);
		for (cpu = 0; k->rfd && cpu < k->ncpu; cpu++)
			if (k->rfd[cpu] >= 0) {
				close(k->rfd[cpu]);
				k->rfd[cpu] = -1;
			}
		/* the kernel disables the instance's events itself; it refuses
		 * (EBUSY) while anyone has a file of the instance open (a
		 * `cat trace_pipe` of its own): a few tries, then say so */
		int r;
		for (cpu = 0; (r = rmdir(k->inst)) != 0 && errno == EBUSY && cpu < 20; cpu++)
			poll(NULL, 0, 50);
		if (r != 0)
			fprintf(stderr, "ringbuf-record: -e: cannot remove the tracefs instance %s: %s (remove it "
					"with rmdir)\n", k->inst, strerror(errno));
		k->inst[0] = 0;
	}
	k->stopped = 1;
}

/* Append a block's bytes to the metadata being built. */
struct rbrec_kbuf {
	char *p;
	size_t len, cap;
	int err;
	int be; /* numbers in big-endian order (the kernel's, as its pages) */
};

static void rbrec_kb(struct rbrec_kbuf *b, const void *d, size_t n)
{
	if (b->err)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 65536;
		char *q;
		while (cap < b->len + n)
			cap *= 2;
		if (!(q = realloc(b->p, cap))) {
			b->err = 1;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
	if (d)
		memcpy(b->p + b->len, d, n);
	else
		memset(b->p + b->len, 0, n);
	b->len += n;
}

/* v as an n-byte number of the file's order into d */
static void rbrec_knum(const struct rbrec_kbuf *b, unsigned char *d, uint64_t v, unsigned n)
{
	unsigned i;
	for (i = 0; i < n; i++)
		d[b->be ? n - 1 - i : i] = (unsigned char)(v >> (8 * i));
}

static void rbrec_kn(struct rbrec_kbuf *b, uint64_t v, unsigned n)
{
	unsigned char d[8];
	rbrec_knum(b, d, v, n);
	rbrec_kb(b, d, n);
}

/* A file's text as {size of width, bytes}; a file that cannot be read is
 * written empty (counted in *missing). */
static void rbrec_kfile(struct rbrec_kbuf *b, const char *path, unsigned width, unsigned *missing)
{
	size_t n = 0;
	char *t = rbrec_slurp(path, &n);
	if (!t) {
		++*missing;
		n = 0;
	}
	rbrec_kn(b, n, width);
	rbrec_kb(b, t, n);
	free(t);
}

static int rbrec_kcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* K5. 0, or RBREC_FILE (said); no KERNEL.dat on failure. */
static int rbrec_kernel_finish(struct rbrec_kernel *k)
{
	struct rbrec_kbuf b = {NULL, 0, 0, 0, 0};
	char *tmp = NULL, rel[700], opt[64];
	unsigned i, j, nsys = 0, missing = 0, cpu;
	DIR *d;
	struct dirent *e;
	size_t at;
	uint64_t off;
	int fd = -1, rc = RBREC_FILE;

	b.be = k->big_endian;
	{
		/* magic, version "6", the kernel's byte order and long (its
		 * pages'; the numbers of the file are written in that order) */
		char head[14] = "\x17\x08\x44tracing6";
		head[12] = (char)k->big_endian;
		head[13] = (char)k->long_size;
		rbrec_kb(&b, head, sizeof head);
	}
	rbrec_kn(&b, k->page_size, 4);
	rbrec_kb(&b, "header_page", 12);
	rbrec_kfile(&b, rbrec_kpath(k, NULL, "events/header_page"), 8, &missing);
	rbrec_kb(&b, "header_event", 13);
	rbrec_kfile(&b, rbrec_kpath(k, NULL, "events/header_event"), 8, &missing);
	/* the ftrace formats: every events/ftrace/NAME/format */
	at = b.len;
	rbrec_kn(&b, 0, 4);
	i = 0;
	d = opendir(rbrec_kpath(k, NULL, "events/ftrace"));
	while (d && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(rel, sizeof rel, "events/ftrace/%s/format", e->d_name);
		if (access(rbrec_kpath(k, NULL, rel), R_OK) != 0)
			continue;
		rbrec_kfile(&b, rbrec_kpath(k, NULL, rel), 8, &missing);
		i++;
	}
	if (d)
		closedir(d);
	if (!b.err)
		rbrec_knum(&b, (unsigned char *)b.p + at, i, 4);
	/* the enabled events, by system (k->ev sorted: one system's together) */
	qsort(k->ev, k->nev, sizeof k->ev[0], rbrec_kcmp);
	for (i = 0; i < k->nev; i = j) {
		size_t sl = strcspn(k->ev[i], "/");
		for (j = i + 1; j < k->nev && strncmp(k->ev[j], k->ev[i], sl + 1) == 0; j++)
			;
		nsys++;
	}
	rbrec_kn(&b, nsys, 4);
	for (i = 0; i < k->nev; i = j) {
		size_t sl = strcspn(k->ev[i], "/");
		for (j = i + 1; j < k->nev && strncmp(k->ev[j], k->ev[i], sl + 1) == 0; j++)
			;
		rbrec_kb(&b, k->ev[i], sl);
		rbrec_kb(&b, NULL, 1);
		rbrec_kn(&b, j - i, 4);
		for (; i < j; i++) {
			snprintf(rel, sizeof rel, "events/%s/format", k->ev[i]);
			rbrec_kfile(&b, rbrec_kpath(k, NULL, rel), 8, &missing);
		}
	}
	rbrec_kfile(&b, "/proc/kallsyms", 4, &missing);
	rbrec_kfile(&b, rbrec_kpath(k, NULL, "printk_formats"), 4, &missing);
	rbrec_kfile(&b, rbrec_kpath(k, NULL, "saved_cmdlines"), 8, &missing);
	rbrec_kn(&b, k->ncpu, 4);
	rbrec_kb(&b, "options  ", 10);
	snprintf(opt, sizeof opt, "[%s]", k->clock);
	rbrec_kn(&b, 4, 2); /* TRACECLOCK */
	rbrec_kn(&b, strlen(opt) + 1, 4);
	rbrec_kb(&b, opt, strlen(opt) + 1);
	if (k->tsc) {
		char num[32];
		rbrec_kn(&b, 14, 2); /* TSC2NSEC: u32 mult, u32 shift, u64 offset (unused) */
		rbrec_kn(&b, 16, 4);
		rbrec_kn(&b, k->tsc_mult, 4);
		rbrec_kn(&b, k->tsc_shift, 4);
		rbrec_kn(&b, 0, 8);
		snprintf(num, sizeof num, "%lld", (long long)k->tsc_offset);
		rbrec_kn(&b, 7, 2); /* OFFSET */
		rbrec_kn(&b, strlen(num) + 1, 4);
		rbrec_kb(&b, num, strlen(num) + 1);
	}
	rbrec_kn(&b, 8, 2); /* CPUCOUNT */
	rbrec_kn(&b, 4, 4);
	rbrec_kn(&b, k->ncpu, 4);
	rbrec_kn(&b, 0, 2);
	rbrec_kb(&b, "flyrecord", 10);
	at = b.len;
	rbrec_kb(&b, NULL, 16 * (size_t)k->ncpu);
	rbrec_kn(&b, strlen(opt), 8);
	rbrec_kb(&b, opt, strlen(opt));
	off = (b.len + k->page_size - 1) / k->page_size * k->page_size;
	for (cpu = 0; cpu < k->ncpu && !b.err; cpu++) {
		uint64_t size = k->pages[cpu] * k->page_size;
		rbrec_knum(&b, (unsigned char *)b.p + at + 16 * cpu, off, 8);
		rbrec_knum(&b, (unsigned char *)b.p + at + 16 * cpu + 8, size, 8);
		off += size;
	}
	rbrec_kb(&b, NULL, (k->page_size - b.len % k->page_size) % k->page_size);
	if (b.err) {
		rbrec_kfail(RBREC_FILE, "%s: out of memory", k->out);
		goto out;
	}
	tmp = malloc(strlen(k->out) + 16);
	if (!tmp)
		goto out;
	sprintf(tmp, "%s.XXXXXX", k->out);
	fd = mkstemp(tmp);
	if (fd < 0) {
		rbrec_kfail(RBREC_FILE, "%s: cannot write: %s", k->out, strerror(errno));
		free(tmp);
		tmp = NULL;
		goto out;
	}
	if (ringbuf_tdat__write_fd(fd, b.p, b.len, 0) != 0)
		goto werr;
	for (cpu = 0; cpu < k->ncpu; cpu++) {
		uint64_t left = k->pages[cpu];
		if (lseek(k->tfd[cpu], 0, SEEK_SET) != 0)
			goto werr;
		while (left) {
			ssize_t r = read(k->tfd[cpu], k->page, k->page_size);
			if (r != (ssize_t)k->page_size || ringbuf_tdat__write_fd(fd, k->page, k->page_size, 0) != 0)
				goto werr;
			left--;
		}
	}
	if (fsync(fd) != 0 || close(fd) != 0) {
		fd = -1;
		goto werr;
	}
	fd = -1;
	if (rename(tmp, k->out) != 0)
		goto werr;
	rc = RBREC_OK;
	if (missing && !k->quiet)
		fprintf(stderr, "ringbuf-record: -e: %u tracefs files could not be read (written empty)\n",
			missing);
	goto out;
werr:
	rbrec_kfail(RBREC_FILE, "%s: cannot write: %s", k->out, strerror(errno));
	if (fd >= 0)
		close(fd);
	unlink(tmp);
out:
	free(tmp);
	free(b.p);
	return rc;
}

static void rbrec_kernel_report(const struct rbrec_kernel *k)
{
	unsigned i;
	if (k->quiet)
		return;
	fprintf(stderr, "ringbuf-record: kernel ->%s %s: %llu events in %llu pages (clock %s;",
		k->failed ? " (not written)" : "", k->out, (unsigned long long)k->events,
		(unsigned long long)k->npages, k->clock);
	for (i = 0; i < k->nev && i < 8; i++)
		fprintf(stderr, " %s", k->ev[i]);
	if (k->nev > 8)
		fprintf(stderr, " and %u more", k->nev - 8);
	fprintf(stderr, "), %llu lost%s, %llu malformed pages left out\n", (unsigned long long)k->lost,
		k->lost_unknown ? " (and gaps of unknown size)" : "", (unsigned long long)k->bad_pages);
}

/* K4 and K5 at the end of a recording: 0 or the error (said). */
static int rbrec_kernel_end(struct rbrec_kernel *k)
{
	int rc;
	rbrec_kernel_stop(k);
	rc = k->failed ? k->failed : rbrec_kernel_finish(k);
	if (rc && !k->failed)
		k->failed = rc;
	ringbuf_record_last.kernel_events = k->events;
	ringbuf_record_last.kernel_pages = k->npages;
	ringbuf_record_last.kernel_lost = k->lost;
	ringbuf_record_last.kernel_lost_unknown = k->lost_unknown;
	ringbuf_record_last.kernel_bad_pages = k->bad_pages;
	rbrec_kernel_report(k);
	return rc;
}

/* Free everything (after stop). */
static void rbrec_kernel_free(struct rbrec_kernel *k)
{
	unsigned i;
	for (i = 0; k->tfd && i < k->ncpu; i++)
		if (k->tfd[i] >= 0)
			close(k->tfd[i]);
	for (i = 0; i < k->nev; i++)
		free(k->ev[i]);
	free(k->rfd);
	free(k->tfd);
	free(k->pages);
	free(k->page);
	free(k->out_owned);
	memset(k, 0, sizeof *k);
}


/* ==== >>follow: a process tree, one buffer per process image in a directory ==== */

struct rbrec_buf {
	struct rbrec_buf *next;
	char *name;                  /* NAME.rb in the directory */
	struct ringbuf *rb;          /* NULL: could not be followed (counted), or finished */
	struct ringbuf_trace_registry reg;
	struct ringbuf_tracedat *w;
	int lock_fd;                 /* the writer holds LOCK_EX while it may write */
	uint64_t live_pages;
};

struct rbrec_follow {
	const char *dir, *outdir;
	int version, quiet, keep;
	struct rbrec_buf *bufs;      /* every NAME.rb seen (never opened twice) */
	unsigned active;
};

static int rbrec_is_buffer_name(const char *n)
{
	size_t len = strlen(n);
	return n[0] != '.' && len > 3 && strcmp(n + len - 3, ".rb") == 0 && !strchr(n, '/');
}

static char *rbrec_join(const char *dir, const char *name, const char *newext)
{
	size_t d = strlen(dir), n = strlen(name);
	char *p;
	if (newext)
		n -= 3; /* ".rb" */
	p = malloc(d + n + 2 + (newext ? strlen(newext) : 0));
	if (!p)
		return NULL;
	memcpy(p, dir, d);
	p[d] = '/';
	memcpy(p + d + 1, name, n);
	p[d + 1 + n] = 0;
	if (newext)
		strcat(p, newext);
	return p;
}

/* Open a new NAME.rb: the buffer (shared), its formats, its lock, the output. */
static void rbrec_follow_open(struct rbrec_follow *f, struct rbrec_buf *b)
{
	struct ringbuf_tracedat_info info;
	char *path = rbrec_join(f->dir, b->name, NULL), *out = rbrec_join(f->outdir, b->name, ".dat");
	int r = RINGBUF_ENOMEM;
	const char *what = "out of memory";
	b->lock_fd = -1;
	if (!path || !out)
		goto fail;
	if (rbrec_k.nspec && strcmp(out, rbrec_k.out) == 0) {
		r = RINGBUF_EINVAL;
		what = "the same output as the kernel's events (-K)";
		goto fail;
	}
	r = rbrec_attach(path, f->version, &b->rb, &b->reg, &info, &what);
	if (r < 0)
		goto fail;
	if (rbrec_k.nspec && strcmp(rbrec_kclock(ringbuf_clock_name(b->rb)) ? ringbuf_clock_name(b->rb) : "",
				    rbrec_k.clock) != 0)
		fprintf(stderr, "ringbuf-record: %s: clock \"%s\", the kernel's events are stamped with \"%s\" "
				"(-C): not on one timeline\n", path, ringbuf_clock_name(b->rb), rbrec_k.clock);
	b->lock_fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (b->lock_fd < 0) {
		r = RINGBUF_ESYS;
		what = "open";
		ringbuf_trace_registry_free(&b->reg);
		goto fail;
	}
	what = "output";
	r = ringbuf_tracedat_open(out, &info, &b->w);
	if (r < 0) {
		ringbuf_trace_registry_free(&b->reg);
		goto fail;
	}
	f->active++;
	free(path);
	free(out);
	return;
fail:
	fprintf(stderr, "ringbuf-record: %s: %s: %s%s%s (left out)\n", path ? path : b->name, what,
		ringbuf_strerror(r), r == RINGBUF_ESYS ? ": " : "", r == RINGBUF_ESYS ? strerror(errno) : "");
	ringbuf_record_last.bad_buffers++;
	if (b->rb)
		ringbuf_destroy(b->rb);
	b->rb = NULL;
	if (b->lock_fd >= 0)
		close(b->lock_fd);
	b->lock_fd = -1;
	free(path);
	free(out);
}

/* Find the NAME.rb files not seen yet. Returns how many were added. */
static int rbrec_follow_scan(struct rbrec_follow *f)
{
	DIR *d = opendir(f->dir);
	struct dirent *e;
	int added = 0;
	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL) {
		struct rbrec_buf *b;
		if (!rbrec_is_buffer_name(e->d_name))
			continue;
		for (b = f->bufs; b; b = b->next)
			if (strcmp(b->name, e->d_name) == 0)
				break;
		if (b)
			continue;
		b = calloc(1, sizeof *b);
		if (!b || !(b->name = strdup(e->d_name))) {
			free(b);
			break;
		}
		b->next = f->bufs;
		f->bufs = b;
		rbrec_follow_open(f, b);
		added++;
	}
	closedir(d);
	return added;
}

/* The end of one buffer: gone (the writer let go of its lock): repair, take
 * the rest, write the file; stop (SIGINT with the writer alive): take what is
 * committed, no repair. */
static void rbrec_follow_finish(struct rbrec_follow *f, struct rbrec_buf *b, int gone)
{
	struct ringbuf_tracedat_stats st;
	uint64_t bad = 0;
	const char *what;
	int r, rec;
	memset(&st, 0, sizeof st);
	rec = rbrec_take_rest(b->w, b->rb, gone, &bad, &what);
	r = rec < 0 ? rec : 0;
	if (r < 0) {
		fprintf(stderr, "ringbuf-record: %s/%s: %s\n", f->dir, b->name, ringbuf_strerror(r));
		ringbuf_tracedat_abort(b->w);
		ringbuf_record_last.bad_buffers++;
	} else if ((r = rbrec_finish(b->w, b->rb, &st)) < 0) {
		fprintf(stderr, "ringbuf-record: %s/%s: cannot write: %s\n", f->outdir, b->name, ringbuf_strerror(r));
		ringbuf_record_last.bad_buffers++;
	} else {
		uint64_t after = rbrec_lost_after(b->rb, st.lost);
		ringbuf_record_last.buffers++;
		ringbuf_record_last.events += st.events;
		ringbuf_record_last.lost += st.lost + after;
		ringbuf_record_last.lost_after += after;
		ringbuf_record_last.live_pages += b->live_pages;
		ringbuf_record_last.recovered_pages += (uint64_t)rec;
		ringbuf_record_last.bad_pages += bad;
		if (!f->quiet)
			fprintf(stderr, "ringbuf-record: %s: %llu events (%llu pages while it ran, %llu %s), %llu lost%s%s\n",
				b->name, (unsigned long long)st.events, (unsigned long long)b->live_pages,
				(unsigned long long)rec, gone ? "after" : "at the stop",
				(unsigned long long)(st.lost + after),
				after ? " (some after the last event of their CPU)" : "",
				st.lost_unknown ? " (and gaps of unknown size)" : "");
	}
	b->w = NULL;
	ringbuf_trace_registry_free(&b->reg);
	ringbuf_destroy(b->rb);
	b->rb = NULL;
	close(b->lock_fd);
	b->lock_fd = -1;
	f->active--;
	if (gone && !f->keep) {
		char *path = rbrec_join(f->dir, b->name, NULL);
		if (path)
			unlink(path);
		free(path);
	}
}

/* The wait of -d's loop when no page is full (ms): 1 where the pages taken
 * since the last wait (since, over the last ms milliseconds) say that 10 ms
 * would fill a quarter of the smallest ring followed (ring pages; 0: none),
 * else the time a writer at 100 pages a ms (400 MB/s) takes to fill that
 * ring, 1 to 10 ms: 5 for 2 MiB. A writer may start at full speed while the
 * recorder waits: sqlite under malloc_trace.so writes 200 MB/s from its
 * first insert and filled a 2 MiB ring in a wait of 10 ms (8 to 137 k
 * events lost in 18 of 80 runs). A wake-up every ms costs CPU where writers
 * are slow (CPython: 10 pages a ms). With no ring, 10 ms: a new buffer ends
 * the wait (rbrec_watch). */
static int rbrec_wait_ms(uint64_t since, double ms, size_t ring)
{
	size_t fill = ring / 100;
	if (!ring)
		return 10;
	if ((double)since * 10.0 * 4.0 >= ms * (double)ring)
		return 1;
	return fill < 1 ? 1 : fill > 10 ? 10 : (int)fill;
}

/* A descriptor that becomes readable when a file is created in or renamed
 * into dir (inotify; -1 where there is none: then the loop scans dir on
 * every round). A buffer is announced by a rename (>>follow), and must be
 * found before its writer fills it: the loop scans dir only when this
 * fired, and its wait ends when it fires. */
static int rbrec_watch(const char *dir)
{
#if defined(__linux__) && defined(IN_CLOEXEC)
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fd >= 0 && inotify_add_watch(fd, dir, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
#else
	(void)dir;
	return -1;
#endif
}

/* 1 when rbrec_watch's descriptor fired since the last call (its events
 * read and dropped: the scan finds the names), or when there is none. */
static int rbrec_watch_fired(int fd)
{
	char ev[4096] __attribute__((aligned(8)));
	int fired = 0;
	ssize_t n;
	if (fd < 0)
		return 1;
	while ((n = read(fd, ev, sizeof ev)) > 0 || (n < 0 && errno == EINTR))
		fired |= n > 0;
	return fired;
}

static int rbrec_follow_run(const char *dir, const char *outdir, int version, int quiet, int keep,
			    const char *preload, char **cmd)
{
	struct rbrec_follow f;
	pid_t child = -1;
	int children = 0, rc = RBREC_OK;
	uint64_t since = 0; /* pages taken since the last wait */
	int watch, scan = 1; /* rbrec_watch(dir); scan: the first round looks */
	struct timespec t0;
	memset(&f, 0, sizeof f);
	f.dir = dir;
	f.outdir = outdir;
	f.version = version;
	f.quiet = quiet;
	f.keep = keep;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		fprintf(stderr, "ringbuf-record: %s: %s\n", dir, strerror(errno));
		return RBREC_FILE;
	}
	if (mkdir(outdir, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "ringbuf-record: %s: %s\n", outdir, strerror(errno));
		return RBREC_FILE;
	}
	if (rbrec_k.nspec && (rc = rbrec_kernel_start(&rbrec_k)) != 0)
		return rc; /* the caller removes what was made */
	watch = rbrec_watch(dir); /* before the command starts */
	if (cmd && cmd[0]) {
#if defined(__linux__) && defined(PR_SET_CHILD_SUBREAPER)
		prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); /* orphans of the tree come here */
#endif
		int ex[2] = {-1, -1};
		/* -e: until the exec, the child holds the trace_pipe_raw
		 * descriptors (close-on-exec), and the instance cannot be
		 * removed while it does: wait for the exec (ex[1] closes) */
		if (rbrec_k.nspec && pipe2(ex, O_CLOEXEC) != 0)
			ex[0] = ex[1] = -1;
		child = fork();
		if (child < 0) {
			fprintf(stderr, "ringbuf-record: fork: %s\n", strerror(errno));
			if (watch >= 0)
				close(watch);
			return RBREC_FILE;
		}
		if (child == 0) {
			if (setenv("RINGBUF_RECORD_DIR", dir, 1) != 0 ||
			    (preload && setenv("LD_PRELOAD", preload, 1) != 0))
				_exit(127);
			execvp(cmd[0], cmd);
			fprintf(stderr, "ringbuf-record: %s: %s\n", cmd[0], strerror(errno));
			_exit(127);
		}
		if (ex[1] >= 0) {
			char c;
			close(ex[1]);
			while (read(ex[0], &c, 1) < 0 && errno == EINTR)
				;
			close(ex[0]);
		}
		children = 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		struct rbrec_buf *b;
		int taken = 0;
		size_t ring = 0; /* the smallest ring followed, in pages */
		if (rbrec_watch_fired(watch) || scan) {
			scan = 0;
			rbrec_follow_scan(&f);
		}
		for (b = f.bufs; b; b = b->next) {
			int r;
			if (!b->rb)
				continue;
			if (!ring || ringbuf_nr_pages(b->rb) < ring)
				ring = ringbuf_nr_pages(b->rb);
			/* the lock first, then the pages: once the writer is gone
			 * everything it committed is in the buffer */
			if (flock(b->lock_fd, LOCK_SH | LOCK_NB) == 0) {
				rbrec_follow_finish(&f, b, 1);
				continue;
			}
			r = rbrec_drain(b->w, b->rb, RINGBUF_READ_FULL, &ringbuf_record_last.bad_pages, 1);
			if (r > 0) {
				b->live_pages += (uint64_t)r;
				taken += r;
			}
		}
		if (rbrec_kernel_take(&rbrec_k, 0) > 0)
			taken++;
		while (children) {
			int status;
			pid_t p = waitpid(-1, &status, WNOHANG);
			if (p == child)
				ringbuf_record_last.command_status = status;
			if (p == 0)
				break;
			if (p < 0) /* ECHILD: the whole tree is reaped */
				children = 0;
		}
		if (rbrec_stop)
			break;
		/* the tree is gone: a last scan finds the buffers of its last
		 * processes; stop when nothing is left to follow */
		if (child > 0 && !children && !f.active && rbrec_follow_scan(&f) == 0)
			break;
		since += (uint64_t)taken;
		if (!taken) {
			struct timespec t1;
			struct pollfd pw = {watch, POLLIN, 0};
			clock_gettime(CLOCK_MONOTONIC, &t1);
			poll(&pw, watch >= 0,
			     rbrec_wait_ms(since,
					   (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
						   (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
					   ring));
			since = 0;
			t0 = t1;
		}
	}
	if (watch >= 0)
		close(watch);
	while (f.bufs) {
		struct rbrec_buf *b = f.bufs;
		if (b->rb)
			rbrec_follow_finish(&f, b, flock(b->lock_fd, LOCK_SH | LOCK_NB) == 0);
		f.bufs = b->next;
		free(b->name);
		free(b);
	}
	if (ringbuf_record_last.bad_buffers)
		rc = RBREC_FILE;
	if (rbrec_k.nspec) {
		int kr = rbrec_kernel_end(&rbrec_k);
		if (rc == RBREC_OK)
			rc = kr;
	}
	if (!quiet) {
		struct rusage ru;
		memset(&ru, 0, sizeof ru);
		getrusage(RUSAGE_SELF, &ru); /* the recorder alone, not the tree */
		fprintf(stderr, "ringbuf-record: %s -> %s: %llu buffers, %llu events, %llu lost, %llu pages while "
				"running, %llu after, %llu malformed pages, %llu buffers left out; recorder CPU "
				"%.3f s user, %.3f s system\n",
			dir, outdir, (unsigned long long)ringbuf_record_last.buffers,
			(unsigned long long)ringbuf_record_last.events, (unsigned long long)ringbuf_record_last.lost,
			(unsigned long long)ringbuf_record_last.live_pages,
			(unsigned long long)ringbuf_record_last.recovered_pages,
			(unsigned long long)ringbuf_record_last.bad_pages,
			(unsigned long long)ringbuf_record_last.bad_buffers,
			(double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
			(double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
	}
	return rc;
}

/* -d with -e: the kernel's clock (-C, default mono) checked, and for
 * x86-tsc a calibration of this process's TSC for KERNEL.dat's TSC2NSEC */
static int rbrec_kernel_prepare_dir(struct rbrec_kernel *k, const char *clock)
{
	int r = rbrec_kernel_prepare(k, clock ? clock : "mono", "-C");
	if (r == 0 && strcmp(k->clock, "x86-tsc") == 0) {
		struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
		struct ringbuf_tracedat_info info;
		struct ringbuf *rb;
		cfg.ncpu = 1;
		cfg.size_per_cpu = 4096;
		cfg.clock = RINGBUF_CLOCK_TSC;
		if (ringbuf_create(&cfg, &rb) == 0) {
			if (ringbuf_tracedat_info_of(rb, NULL, &info) == 0 && info.tsc) {
				k->tsc = 1;
				k->tsc_mult = info.tsc_mult;
				k->tsc_shift = info.tsc_shift;
				k->tsc_offset = info.tsc_offset;
			}
			ringbuf_destroy(rb);
		}
	}
	return r;
}

static int rbrec_run1(int argc, char **argv)
{
	const char *path = NULL, *out = NULL, *dir = NULL, *preload = NULL, *net = NULL, *kclock = NULL;
	struct rbrec_kernel *k = &rbrec_k;
	char **cmd = NULL;
	const char *what;
	int keep = 0;
	char host[256], port[32], neterr[320];
	struct ringbuf_net *conn = NULL;
	long timeout_s = 30;
	struct ringbuf_trace_registry reg;
	struct ringbuf_tracedat_info info;
	struct ringbuf_tracedat_stats st;
	struct ringbuf_tracedat *w = NULL;
	struct ringbuf *rb = NULL;
	unsigned long long start = 0;
	long pid = 0;
	int version = 6, quiet = 0, i, r, rc = RBREC_OK, gone = 0, have_out = 0;
	char state;

	memset(&ringbuf_record_last, 0, sizeof ringbuf_record_last);
	rbrec_stop = 0;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		char *end;
		if (strcmp(a, "-o") == 0 && i + 1 < argc) {
			out = argv[++i];
			have_out = 1;
		} else if (strcmp(a, "-N") == 0 && i + 1 < argc) {
			net = argv[++i];
		} else if (strcmp(a, "-T") == 0 && i + 1 < argc) {
			errno = 0;
			timeout_s = strtol(argv[++i], &end, 10);
			if (errno || *end || timeout_s <= 0 || timeout_s > 86400) {
				fprintf(stderr, "ringbuf-record: -T %s: seconds, 1..86400\n", argv[i]);
				return RBREC_USAGE;
			}
		} else if (strcmp(a, "-p") == 0 && i + 1 < argc) {
			errno = 0;
			pid = strtol(argv[++i], &end, 10);
			if (errno || *end || pid <= 0) {
				fprintf(stderr, "ringbuf-record: -p %s: not a process id\n", argv[i]);
				return RBREC_USAGE;
			}
		} else if (strcmp(a, "-V") == 0 && i + 1 < argc) {
			version = atoi(argv[++i]);
			if (version != 6 && version != 7) {
				fprintf(stderr, "ringbuf-record: -V %s: the version is 6 or 7\n", argv[i]);
				return RBREC_USAGE;
			}
		} else if (strcmp(a, "-q") == 0) {
			quiet = 1;
		} else if (strcmp(a, "-e") == 0 && i + 1 < argc) {
			if (k->nspec == RBREC_KMAX_SPECS || !argv[i + 1][0]) {
				fprintf(stderr, "ringbuf-record: -e: at most %d, each a SYSTEM:EVENT, SYSTEM or EVENT\n",
					RBREC_KMAX_SPECS);
				return RBREC_USAGE;
			}
			k->spec[k->nspec++] = argv[++i];
		} else if (strcmp(a, "-K") == 0 && i + 1 < argc) {
			k->out = argv[++i];
		} else if (strcmp(a, "-C") == 0 && i + 1 < argc) {
			kclock = argv[++i];
		} else if (strcmp(a, "-b") == 0 && i + 1 < argc) {
			errno = 0;
			k->buffer_kb = strtol(argv[++i], &end, 10);
			if (errno || *end || k->buffer_kb <= 0 || k->buffer_kb > (1L << 30)) {
				fprintf(stderr, "ringbuf-record: -b %s: kilobytes per CPU, 1..%ld\n", argv[i], 1L << 30);
				return RBREC_USAGE;
			}
		} else if (strcmp(a, "-d") == 0 && i + 1 < argc) {
			dir = argv[++i];
		} else if (strcmp(a, "-k") == 0) {
			keep = 1;
		} else if (strcmp(a, "--preload") == 0 && i + 1 < argc) {
			preload = argv[++i];
		} else if (strcmp(a, "--") == 0 && dir) {
			cmd = argv + i + 1;
			break;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			rbrec_usage(stdout);
			return RBREC_OK;
		} else if (a[0] == '-' || path) {
			rbrec_usage(stderr);
			return RBREC_USAGE;
		} else {
			path = a;
		}
	}
	k->quiet = quiet;
	if (!k->nspec && (k->out || kclock || k->buffer_kb)) {
		fprintf(stderr, "ringbuf-record: -K, -C and -b go with -e (the kernel's events)\n");
		return RBREC_USAGE;
	}
	if (k->nspec && net) {
		fprintf(stderr, "ringbuf-record: -e and -N: the kernel's events cannot go to trace-cmd listen with the "
				"user buffer's (one buffer per connection); record to files, or run trace-cmd on "
				"the kernel side\n");
		return RBREC_USAGE;
	}
	if (kclock && !dir) {
		fprintf(stderr, "ringbuf-record: -C goes with -d (with FILE.rb the buffer's clock is the kernel's)\n");
		return RBREC_USAGE;
	}
	if (dir) {
		int r1;
		if (path || pid || net || (cmd && !cmd[0]) || (preload && !cmd)) {
			rbrec_usage(stderr);
			return RBREC_USAGE;
		}
		if (k->nspec) {
			if (!k->out) {
				k->out = k->out_owned = rbrec_join(out ? out : ".", "kernel.rb", ".dat");
				if (!k->out)
					return RBREC_FILE;
			}
			if ((r1 = rbrec_kernel_prepare_dir(k, kclock)) != 0)
				return r1;
		}
		return rbrec_follow_run(dir, out ? out : ".", version, quiet, keep, preload, cmd);
	}
	if (!path || keep || preload) {
		rbrec_usage(stderr);
		return RBREC_USAGE;
	}
	if (net && rbrec_hostport(net, host, sizeof host, port, sizeof port) < 0) {
		fprintf(stderr, "ringbuf-record: -N %s: not HOST:PORT (or PORT, or [IPV6]:PORT)\n", net);
		return RBREC_USAGE;
	}
	if (net && have_out) {
		fprintf(stderr, "ringbuf-record: -o and -N: one or the other (with -N the listener writes the file)\n");
		return RBREC_USAGE;
	}
	if (net && version != 6) {
		fprintf(stderr, "ringbuf-record: -N: trace-cmd listen takes version 6 only\n");
		return RBREC_USAGE;
	}
	if (!out)
		out = "trace.dat";
	memset(&rbrec_diag, 0, sizeof rbrec_diag);
	rbrec_diag.path = path;
	r = rbrec_attach(path, version, &rb, &reg, &info, &what);
	if (r < 0 && strcmp(what, "open") == 0) {
		fprintf(stderr, "ringbuf-record: %s: %s%s%s\n", path, ringbuf_strerror(r),
			r == RINGBUF_ESYS ? ": " : "", r == RINGBUF_ESYS ? strerror(errno) : "");
		if (r == RINGBUF_ECORRUPT)
			rbrec_dump(ringbuf__invalid_why ? ringbuf__invalid_why : "?", RINGBUF_ALL_CPUS);
		return RBREC_FILE;
	}
	if (r < 0) {
		fprintf(stderr, "ringbuf-record: %s: no valid event formats in the user area (%s)\n", path,
			ringbuf_strerror(r));
		return RBREC_FILE;
	}
	if (k->nspec) {
		char *d = NULL;
		if (!k->out) {
			d = rbrec_dirname(out);
			k->out = k->out_owned = d ? rbrec_join(d, "kernel.rb", ".dat") : NULL;
			free(d);
		}
		if (!k->out) {
			r = RBREC_FILE;
		} else if (strcmp(k->out, out) == 0) {
			fprintf(stderr, "ringbuf-record: %s: the output and the kernel's events' file (-K) are the same\n",
				out);
			r = RBREC_USAGE;
		} else if ((r = rbrec_kernel_prepare(k, ringbuf_clock_name(rb), "the buffer's clock")) == 0) {
			k->tsc = info.tsc; /* the buffer's own calibration: both files convert alike */
			k->tsc_mult = info.tsc_mult;
			k->tsc_shift = info.tsc_shift;
			k->tsc_offset = info.tsc_offset;
			r = rbrec_kernel_start(k);
		}
		if (r != 0) {
			ringbuf_trace_registry_free(&reg);
			ringbuf_destroy(rb);
			return r;
		}
	}
	if (!pid)
		pid = (long)ringbuf_trace_writer_pid(rb);
	if (pid > 0)
		start = rbrec_proc(pid, &state);
	if (net) {
		out = net;
		r = ringbuf_net_connect(host, port, &info, (int)(timeout_s * 1000), &conn, neterr, sizeof neterr);
		if (r < 0) {
			fprintf(stderr, "ringbuf-record: -N %s\n", neterr);
			ringbuf_trace_registry_free(&reg);
			ringbuf_destroy(rb);
			return RBREC_NET;
		}
		w = ringbuf_net_writer(conn);
	} else {
		r = ringbuf_tracedat_open(out, &info, &w);
	}
	if (r < 0) {
		fprintf(stderr, "ringbuf-record: %s: cannot write: %s%s%s\n", out, ringbuf_strerror(r),
			r == RINGBUF_ESYS ? ": " : "", r == RINGBUF_ESYS ? strerror(errno) : "");
		ringbuf_trace_registry_free(&reg);
		ringbuf_destroy(rb);
		return RBREC_FILE;
	}

	/* corrupt pages are dumped (>>diagnostics) */
	rbrec_diag.len = (size_t)rb->total_size; /* as validated by the open */
	rbrec_diag.rb = rb;
	ringbuf_set_warn_hook(rbrec_on_warning, NULL);
	/* live: whole pages while the process runs */
	while (!rbrec_stop) {
		if (pid <= 0 ? ringbuf_trace_writer_alive(rb) == 0 : rbrec_gone(pid, start)) {
			gone = 1;
			break;
		}
		ringbuf_wait(rb, RINGBUF_ALL_CPUS, 50, 100);
		r = rbrec_drain(w, rb, RINGBUF_READ_FULL, &ringbuf_record_last.bad_pages, 1);
		if (r < 0) {
			fprintf(stderr, "ringbuf-record: %s: %s stopped: %s%s%s\n", path,
				conn && r == RINGBUF_ESYS ? "sending" : "reading", ringbuf_strerror(r),
				r == RINGBUF_ESYS ? ": " : "", r == RINGBUF_ESYS ? strerror(errno) : "");
			rc = conn && r == RINGBUF_ESYS ? RBREC_NET : RBREC_FILE;
			break;
		}
		ringbuf_record_last.live_pages += (uint64_t)r;
		rbrec_kernel_take(k, 0);
	}
	/* the kernel's events end with the process (or the stop) */
	if (k->nspec)
		rbrec_kernel_stop(k);
	/* the end: repair a buffer whose writers are gone, then take the rest */
	if (gone)
		ringbuf_record_last.recovered = 1;
	if (rc == RBREC_OK) {
		r = rbrec_take_rest(w, rb, gone, &ringbuf_record_last.bad_pages, &what);
		if (r < 0 && strcmp(what, "recovery") == 0) {
			fprintf(stderr, "ringbuf-record: %s: recovery failed: %s\n", path, ringbuf_strerror(r));
			if (r == RINGBUF_ECORRUPT)
				rbrec_dump(ringbuf__invalid_why ? ringbuf__invalid_why : "?", RINGBUF_ALL_CPUS);
			rc = RBREC_FILE;
		} else if (r < 0) {
			fprintf(stderr, "ringbuf-record: %s: %s stopped: %s%s%s\n", path,
				conn && r == RINGBUF_ESYS ? "sending" : "reading", ringbuf_strerror(r),
				r == RINGBUF_ESYS ? ": " : "", r == RINGBUF_ESYS ? strerror(errno) : "");
			rc = conn && r == RINGBUF_ESYS ? RBREC_NET : RBREC_FILE;
		} else {
			ringbuf_record_last.recovered_pages = (uint64_t)r;
		}
	}
	if (conn) {
		memset(&st, 0, sizeof st);
		if (rc != RBREC_OK) {
			ringbuf_tracedat_stats(w, &st);
			ringbuf_net_abort(conn);
		} else if (ringbuf_net_finish(conn, &st, neterr, sizeof neterr) < 0) {
			fprintf(stderr, "ringbuf-record: -N %s\n", neterr);
			rc = RBREC_NET;
		}
	} else if ((r = rbrec_finish(w, rb, &st)) < 0) {
		fprintf(stderr, "ringbuf-record: %s: cannot write: %s%s%s\n", out, ringbuf_strerror(r),
			r == RINGBUF_ESYS ? ": " : "", r == RINGBUF_ESYS ? strerror(errno) : "");
		rc = RBREC_FILE;
	}
	ringbuf_record_last.events = st.events;
	ringbuf_record_last.lost_after = rc == RBREC_OK ? rbrec_lost_after(rb, st.lost) : 0;
	ringbuf_record_last.lost = st.lost + ringbuf_record_last.lost_after;
	if (!quiet)
		fprintf(stderr, "ringbuf-record: %s -> %s: %llu events in %llu pages (%llu while it ran, %llu %s), "
				"%llu lost before them, %llu after the last event of their CPU%s, "
				"%llu malformed pages left out\n",
			path, out, (unsigned long long)st.events, (unsigned long long)st.pages,
			(unsigned long long)ringbuf_record_last.live_pages,
			(unsigned long long)ringbuf_record_last.recovered_pages,
			gone ? "recovered after it was gone" : "at the stop", (unsigned long long)st.lost,
			(unsigned long long)ringbuf_record_last.lost_after,
			st.lost_unknown ? " (and gaps of unknown size)" : "",
			(unsigned long long)ringbuf_record_last.bad_pages);
	if (k->nspec) {
		r = rbrec_kernel_end(k);
		if (rc == RBREC_OK)
			rc = r;
	}
	ringbuf_set_warn_hook(NULL, NULL);
	rbrec_diag.rb = NULL;
	rbrec_diag.path = NULL;
	ringbuf_trace_registry_free(&reg);
	ringbuf_destroy(rb);
	return rc;
}

static int rbrec_run(int argc, char **argv)
{
	int rc;
	memset(&rbrec_k, 0, sizeof rbrec_k);
	rc = rbrec_run1(argc, argv);
	rbrec_kernel_stop(&rbrec_k); /* the instance never outlives a run */
	rbrec_kernel_free(&rbrec_k);
	return rc;
}

#ifdef RINGBUF_RECORD_TOOL_NO_MAIN
static int ringbuf_record_main(int argc, char **argv)
{
	return rbrec_run(argc, argv);
}
#else
static void rbrec_on_signal(int sig)
{
	(void)sig;
	rbrec_stop = 1;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = rbrec_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	return rbrec_run(argc, argv);
}
#endif
