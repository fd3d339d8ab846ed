/* ringbuf-record - record a running process's file-backed ringbuf.h buffer to trace.dat.
 *
 *   ringbuf-record [-o OUT.dat | -N HOST:PORT [-T SECONDS]] [-p PID] [-V 6|7] [-q] FILE.rb
 *   ringbuf-record -d DIR [-o OUTDIR] [-k] [-V 6|7] [-q] [--preload LIB.so] [-- COMMAND ARGS...]
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
 * recorder scans DIR, follows every NAME.rb it finds (drains whole pages while
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
 * Exit status: 0 success, 1 usage error, 2 file error (buffer missing,
 * foreign or corrupted; output not writable), 3 network error (-N: name not
 * resolved, connection refused, protocol mismatch, the server closed early
 * or timed out, a malformed answer). Statistics go to stderr
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
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#define RBREC_OK 0
#define RBREC_USAGE 1
#define RBREC_FILE 2
#define RBREC_NET 3

/* Counters of the last ringbuf_record_main() run. */
struct ringbuf_record_counts {
	uint64_t live_pages;      /* pages taken while the process ran */
	uint64_t recovered_pages; /* pages taken after it was gone */
	uint64_t events, lost, bad_pages;
	int recovered;            /* the process was gone: the buffer was repaired */
	uint64_t buffers;         /* -d: buffers followed to the end (one per process image) */
	uint64_t bad_buffers;     /* -d: NAME.rb files that could not be opened or written */
	int command_status;       /* -d with a COMMAND: its wait status */
};
static struct ringbuf_record_counts ringbuf_record_last;

static volatile sig_atomic_t rbrec_stop; /* SIGINT/SIGTERM (main only) */

static void rbrec_usage(FILE *f)
{
	fprintf(f, "usage: ringbuf-record [-o OUT.dat | -N HOST:PORT [-T SECONDS]] [-p PID] [-V 6|7] [-q] FILE.rb\n"
		   "       ringbuf-record -d DIR [-o OUTDIR] [-k] [-V 6|7] [-q] [--preload LIB] [-- COMMAND...]\n"
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
		   "exit status: 0 ok, 1 usage error, 2 file error, 3 network error\n");
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
	r = rbrec_attach(path, f->version, &b->rb, &b->reg, &info, &what);
	if (r < 0)
		goto fail;
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
	} else if ((r = ringbuf_tracedat_finish(b->w, &st)) < 0) {
		fprintf(stderr, "ringbuf-record: %s/%s: cannot write: %s\n", f->outdir, b->name, ringbuf_strerror(r));
		ringbuf_record_last.bad_buffers++;
	} else {
		ringbuf_record_last.buffers++;
		ringbuf_record_last.events += st.events;
		ringbuf_record_last.lost += st.lost;
		ringbuf_record_last.live_pages += b->live_pages;
		ringbuf_record_last.recovered_pages += (uint64_t)rec;
		ringbuf_record_last.bad_pages += bad;
		if (!f->quiet)
			fprintf(stderr, "ringbuf-record: %s: %llu events (%llu pages while it ran, %llu %s), %llu lost%s\n",
				b->name, (unsigned long long)st.events, (unsigned long long)b->live_pages,
				(unsigned long long)rec, gone ? "after" : "at the stop", (unsigned long long)st.lost,
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

static int rbrec_follow_run(const char *dir, const char *outdir, int version, int quiet, int keep,
			    const char *preload, char **cmd)
{
	struct rbrec_follow f;
	pid_t child = -1;
	int children = 0, rc = RBREC_OK;
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
	if (cmd && cmd[0]) {
#if defined(__linux__) && defined(PR_SET_CHILD_SUBREAPER)
		prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); /* orphans of the tree come here */
#endif
		child = fork();
		if (child < 0) {
			fprintf(stderr, "ringbuf-record: fork: %s\n", strerror(errno));
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
		children = 1;
	}
	for (;;) {
		struct rbrec_buf *b;
		int taken = 0;
		rbrec_follow_scan(&f);
		for (b = f.bufs; b; b = b->next) {
			int r;
			if (!b->rb)
				continue;
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
		if (!taken)
			poll(NULL, 0, 10);
	}
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

static int rbrec_run(int argc, char **argv)
{
	const char *path = NULL, *out = NULL, *dir = NULL, *preload = NULL, *net = NULL;
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
	if (dir) {
		if (path || pid || net || (cmd && !cmd[0]) || (preload && !cmd)) {
			rbrec_usage(stderr);
			return RBREC_USAGE;
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
	}
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
	} else if ((r = ringbuf_tracedat_finish(w, &st)) < 0) {
		fprintf(stderr, "ringbuf-record: %s: cannot write: %s%s%s\n", out, ringbuf_strerror(r),
			r == RINGBUF_ESYS ? ": " : "", r == RINGBUF_ESYS ? strerror(errno) : "");
		rc = RBREC_FILE;
	}
	ringbuf_record_last.events = st.events;
	ringbuf_record_last.lost = st.lost;
	if (!quiet)
		fprintf(stderr, "ringbuf-record: %s -> %s: %llu events in %llu pages (%llu while it ran, %llu %s), "
				"%llu lost before them%s, %llu malformed pages left out\n",
			path, out, (unsigned long long)st.events, (unsigned long long)st.pages,
			(unsigned long long)ringbuf_record_last.live_pages,
			(unsigned long long)ringbuf_record_last.recovered_pages,
			gone ? "recovered after it was gone" : "at the stop", (unsigned long long)st.lost,
			st.lost_unknown ? " (and gaps of unknown size)" : "",
			(unsigned long long)ringbuf_record_last.bad_pages);
	ringbuf_set_warn_hook(NULL, NULL);
	rbrec_diag.rb = NULL;
	rbrec_diag.path = NULL;
	ringbuf_trace_registry_free(&reg);
	ringbuf_destroy(rb);
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
