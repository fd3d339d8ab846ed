/* fuzz_intake.c - libFuzzer target: ringbuf-record's intake on a hostile buffer image.
 *
 * ringbuf-record (tools/ringbuf-record.c) maps another process's buffer file
 * MAP_SHARED: every byte of it is the traced process's to write. This target
 * builds such a file from the fuzzer's bytes and runs the recorder's own
 * intake on it, the functions of the tool itself (compiled in with
 * RINGBUF_RECORD_TOOL_NO_MAIN, as tests/tools/test_record_hostile.c does):
 *
 *   rbrec_attach      ringbuf_open_file(RDWR: MAP_SHARED) and its validation,
 *                     ringbuf_trace_load_registry (the user area), the writer's pid
 *   ringbuf_tracedat_open  the streaming trace.dat writer (to a temporary
 *                     directory, on /dev/shm when there is one)
 *   rbrec_drain       live rounds: ringbuf_wait(timeout 0), then pages taken
 *                     with RINGBUF_READ_FULL (or not) by ringbuf_tracedat_drain
 *                     (ringbuf_read_page_ref / ringbuf_read_page, the writer's
 *                     page check), a bounded number of RINGBUF_ECORRUPT in a row
 *   rbrec_take_rest   ringbuf_recover when the writer is "gone", then the last
 *                     drain (flags 0)
 *   rbrec_on_warning  the corruption dump (>>diagnostics), into the temporary
 *                     directory: a copy of the block and its text description
 *                     (rbrec_dump_text reads the hostile copy); also after a
 *                     failed open (rbrec_dump from the file)
 *   ringbuf_tracedat_finish  the trace.dat
 *
 * INPUT. Not the raw file (the magic, layout version and geometry checks
 * would stop nearly every input at the open) but edits of a valid image:
 * four templates are made at start-up with the library (ringbuf_create_file,
 * the event formats stored in the user area, events written by this process
 * with a fixed clock; several CPUs, small pages):
 *   0  overwrite mode, 2 CPUs, 128-byte pages x 4, wrapped (overrun), a
 *      partial read on CPU 0 (the reader page and its position in use)
 *   1  producer-consumer, 3 CPUs, 256-byte pages x 3, CPU 2 empty, big events
 *   2  overwrite, 2 CPUs, 128-byte pages x 4, a writer in flight on CPU 0 with
 *      a nested one inside it (taken while both are reserved: committing 2,
 *      slots in use), as a killed process leaves it
 *   3  RINGBUF_F_ALIGN8, 1 CPU, 64-byte pages x 8
 * Byte 0: the template (bits 0-1), the writer gone (bit 2: recover, then the
 * last drain), live rounds (bits 3-4), RINGBUF_READ_FULL in the live rounds
 * (bit 5), ringbuf_wait before each (bit 6), trace.dat version 7 (bit 7).
 * Then edits of 4 bytes and a value, until the input ends:
 *   op     bits 0-2 region: 0 the header's geometry (struct ringbuf, the
 *          private part; not the pad behind it), 1 the header's control
 *          words (struct ringbuf__shdr), 2 the per-CPU
 *          state, 3 the page descriptors and links, 4 a data page's header
 *          (time stamp, commit), 5 data pages (events), 6 the user area
 *          (formats, pid), 7 anywhere; bits 3-5 the value's kind: 0 raw
 *          bytes from the input, 1 zero, 2 all ones, 3 a page index (in
 *          range or just past), 4 a size about the page's end, 5 one bit,
 *          6 a link word (index << 2 | flags), 7 the value there plus a
 *          signed byte; bits 6-7 the width: 1, 2, 4 or 8 bytes
 *   off    u16, little-endian: where in the region (modulo its length; for
 *          region 4 the page, then the byte in its 16-byte header)
 *   arg    one byte (the kind's argument; kind 0: the value's bytes instead)
 * Region 7 with kind 7 changes the file's length instead (cut or zero-extended
 * by off * 8 bytes): the open must refuse a block its file does not hold.
 * The op byte 0xff (region 7, kind 7, width 8) ends the edits made before the
 * open: the edits after it are made to the header (region 0 whatever their
 * region bits: the geometry and the process-local fields, struct ringbuf)
 * AFTER the open (issue 22.8), as a traced process rewriting it while the
 * recorder reads: once right after rbrec_attach, then over and over by a
 * second thread, through its own MAP_SHARED mapping of the file, each edit
 * and the template's bytes in turn, concurrently with every drain, until
 * the trace.dat is finished. The recorder must use only the geometry it
 * validated at the open (its private copy, PRIVATE HEADER in ringbuf.h):
 * the same checks hold, and no access leaves its mapping.
 *
 * CHECKS. Every call returns a result or one of the library's errors (a
 * RINGBUF_E* code with a message); no crash, no access outside the mapping or
 * the heap (AddressSanitizer), no undefined behaviour (UBSan), no endless
 * loop (libFuzzer's -timeout; every loop here is bounded); no leak (LeakSanitizer:
 * every open is closed, also on the error paths); the trace.dat (version 6)
 * is well formed, and every page in it walks with the independent page walker
 * (tests/pagewalk.h): every record lies inside its page's commit, and the
 * walker counts the events the writer says it wrote.
 *
 * FOUND (each with its input in fuzz/corpus/fuzz_intake/ and a test in
 * tests/tools/test_fuzz_findings.c): the corruption dump read a per-CPU struct at a
 * misaligned copied offset (8b86ae10..., UBSan); a head page's prev naming
 * the reader page survived recovery and left the reader answering
 * RINGBUF_EAGAIN, retried for 20 s by the last drain (70b5bff2..., a slow unit),
 * or, without recovery, for seconds per live drain (984282f9...); the
 * trace.dat writer's page check let a time record followed by another one
 * into the trace.dat, which pagewalk refuses (8c315fc7...).
 *
 * Deterministic: the templates use a fixed clock, and the fuzz process's pid
 * (stored in the user area) is the "traced process", alive; the live rounds
 * never wait (timeout 0).
 */
#define _GNU_SOURCE 1
#include <stdio.h>
/* the tool's messages (a corrupt page dumped, a recovery failed) go to
 * /dev/null, a few per input; FUZZ_INTAKE_VERBOSE=1 keeps them on stderr */
static FILE *fz_err;
#undef stderr
#define stderr fz_err
#define RINGBUF_RECORD_TOOL_NO_MAIN
#include "tools/ringbuf-record.c"
#undef stderr
#define stderr stderr
#define RINGBUF_TRACE_DEFINE_EVENTS
#include "ringbuf_trace.h"
#undef RINGBUF_TRACE_DEFINE_EVENTS
#include "tests/pagewalk.h"
#include "tests/tdatwalk.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHECK(c)                                                                          \
	do {                                                                              \
		if (!(c)) {                                                               \
			fprintf(stderr, "fuzz_intake: check failed: %s (line %d)\n", #c, __LINE__); \
			abort();                                                          \
		}                                                                         \
	} while (0)

RINGBUF_TRACE_EVENT(fznum, RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, cpu), RINGBUF_FIELD(uint32_t, seq)),
		    RINGBUF_PRINT("cpu=%u seq=%u", REC->cpu, REC->seq));

static struct ringbuf_trace_registry fz_reg = RINGBUF_TRACE_REGISTRY_INIT("fuzz");

#define NTEMPL 4
struct templ {
	unsigned char *img;
	size_t len;
	struct ringbuf hdr; /* a trusted copy of its header: the regions */
};
static struct templ templ[NTEMPL];
static char tmpdir[64], dumpdir[96], outpath[128], bufpath[128];
static int memfd = -1;

static uint64_t fz_now;
static uint64_t fz_clock(void *ctx)
{
	(void)ctx;
	return fz_now += 1000;
}

static void take_now(struct ringbuf *rb, struct templ *t);
static uint64_t check_tracedat(unsigned ncpu, uint32_t page_size);

/* A template: created in tmpdir, written by fill(), copied while rb is live
 * (as the recorder would find it). */
static void make_templ(struct templ *t, unsigned ncpu, size_t page_size, unsigned pages, int mode, unsigned flags,
		       void (*fill)(struct ringbuf *rb, struct templ *t))
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	char path[160];
	snprintf(path, sizeof path, "%s/templ.rb", tmpdir);
	cfg.ncpu = ncpu;
	cfg.page_size = page_size;
	cfg.size_per_cpu = page_size * pages;
	cfg.mode = mode;
	cfg.flags = flags;
	cfg.clock = fz_clock;
	cfg.user_size = ringbuf_trace_user_size(&fz_reg);
	fz_now = 1000000;
	CHECK(ringbuf_create_file(path, &cfg, &rb) == 0);
	CHECK(ringbuf_trace_store_registry(rb, &fz_reg) == 0);
	fill(rb, t);
	if (!t->img) /* fill() did not take it itself */
		take_now(rb, t);
	memcpy(&t->hdr, t->img, sizeof t->hdr);
	ringbuf_destroy(rb);
	unlink(path);
}

static void take_now(struct ringbuf *rb, struct templ *t)
{
	char path[160];
	int fd;
	off_t n;
	(void)rb;
	snprintf(path, sizeof path, "%s/templ.rb", tmpdir);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0);
	n = lseek(fd, 0, SEEK_END);
	CHECK(n > (off_t)sizeof(struct ringbuf));
	t->len = (size_t)n;
	t->img = malloc(t->len);
	CHECK(t->img && pread(fd, t->img, t->len, 0) == (ssize_t)t->len);
	close(fd);
}

static void write_raw(struct ringbuf *rb, unsigned cpu, size_t len, unsigned seed)
{
	unsigned char buf[256];
	size_t i;
	for (i = 0; i < len && i < sizeof buf; i++)
		buf[i] = (unsigned char)(seed + i * 7);
	(void)ringbuf_write(rb, cpu, buf, len);
}

static void fill_wrapped(struct ringbuf *rb, struct templ *t)
{
	struct ringbuf_record ev;
	unsigned i;
	(void)t;
	for (i = 0; i < 60; i++) {
		unsigned cpu = i & 1;
		if (i % 5 == 0)
			write_raw(rb, cpu, 4 + i % 40, i);
		else
			(void)trace_fznum(rb, cpu, cpu, i);
		if (i % 17 == 0)
			fz_now += (uint64_t)1 << 28; /* a time extend */
	}
	/* a partial read: the reader page swapped in, its position moved */
	for (i = 0; i < 2; i++)
		(void)ringbuf_consume(rb, 0, &ev);
}

static void fill_pc(struct ringbuf *rb, struct templ *t)
{
	unsigned i;
	(void)t;
	for (i = 0; i < 30; i++) {
		unsigned cpu = i % 2;
		if (i % 3 == 0)
			write_raw(rb, cpu, 100 + i * 3, i); /* > 112 bytes: the length in array[0] */
		else
			(void)trace_fznum(rb, cpu, cpu, i);
	}
}

static void fill_inflight(struct ringbuf *rb, struct templ *t)
{
	void *outer, *inner;
	unsigned i;
	for (i = 0; i < 25; i++)
		(void)trace_fznum(rb, i & 1, i & 1, i);
	outer = ringbuf_reserve(rb, 0, 24);
	CHECK(outer);
	memset(outer, 0xab, 24);
	inner = ringbuf_reserve(rb, 0, 12); /* as a signal handler's write */
	CHECK(inner);
	memset(inner, 0xcd, 12);
	take_now(rb, t); /* the process dies here */
	ringbuf_commit(rb, 0, inner);
	ringbuf_commit(rb, 0, outer);
}

static void fill_align8(struct ringbuf *rb, struct templ *t)
{
	unsigned i;
	(void)t;
	for (i = 0; i < 20; i++) {
		if (i & 1)
			write_raw(rb, 0, 1 + i * 2, i);
		else
			(void)trace_fznum(rb, 0, 0, i);
	}
}

static void quiet_warn(const char *what, unsigned cpu, void *ctx)
{
	(void)what;
	(void)cpu;
	(void)ctx;
}

/* The templates themselves go through the intake whole: the formats load,
 * every committed event comes out (a target that failed at the open would
 * fuzz nothing). */
static void self_check(void)
{
	unsigned i;
	for (i = 0; i < NTEMPL; i++) {
		struct ringbuf_trace_registry reg;
		struct ringbuf_tracedat_info info;
		struct ringbuf_tracedat_stats st;
		struct ringbuf_tracedat *w;
		struct ringbuf *rb;
		const char *what;
		uint64_t bad = 0;
		CHECK(ftruncate(memfd, 0) == 0);
		CHECK(pwrite(memfd, templ[i].img, templ[i].len, 0) == (ssize_t)templ[i].len);
		CHECK(rbrec_attach(bufpath, 6, &rb, &reg, &info, &what) == 0);
		CHECK(reg.count == 1);
		CHECK(ringbuf_tracedat_open(outpath, &info, &w) == 0);
		CHECK(rbrec_take_rest(w, rb, 1, &bad, &what) > 0 && bad == 0);
		CHECK(ringbuf_tracedat_finish(w, &st) == 0 && st.events > 0);
		CHECK(check_tracedat(info.ncpu, (uint32_t)info.page_size) == st.events);
		if (getenv("FUZZ_INTAKE_VERBOSE"))
			fprintf(stderr, "fuzz_intake: template %u: %zu bytes, %llu events in %llu pages\n", i,
				templ[i].len, (unsigned long long)st.events, (unsigned long long)st.pages);
		ringbuf_trace_registry_free(&reg);
		ringbuf_destroy(rb);
		unlink(outpath);
	}
}

/* How far the inputs got (FUZZ_INTAKE_VERBOSE=1: printed at exit): a
 * target whose inputs all stop at the open fuzzes little. */
static struct {
	unsigned long long runs, attached, written, recovered, finished, events, header_edited;
} fz_st;
static unsigned long long hed_total_flips; /* header rewrites after the open */

static void cleanup(void)
{
	unsigned i;
	if (getenv("FUZZ_INTAKE_VERBOSE"))
		fprintf(stderr, "fuzz_intake: %llu inputs: %llu attached, %llu trace.dat writers, %llu recovered, "
				"%llu trace.dat files checked (%llu events), %llu with the header rewritten after the "
				"open (%llu rewrites)\n",
			fz_st.runs, fz_st.attached, fz_st.written, fz_st.recovered, fz_st.finished, fz_st.events,
			fz_st.header_edited, hed_total_flips);
	if (memfd >= 0)
		close(memfd);
	for (i = 0; i < NTEMPL; i++)
		free(templ[i].img);
	rmdir(dumpdir);
	rmdir(tmpdir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	(void)ringbuf_record_main; /* the whole tool: tests/tools/test_record_hostile.c */
	fz_err = getenv("FUZZ_INTAKE_VERBOSE") ? stderr : fopen("/dev/null", "w");
	CHECK(fz_err);
	snprintf(tmpdir, sizeof tmpdir, "/dev/shm/fuzz_intake.XXXXXX");
	if (!mkdtemp(tmpdir)) {
		snprintf(tmpdir, sizeof tmpdir, "/tmp/fuzz_intake.XXXXXX");
		CHECK(mkdtemp(tmpdir));
	}
	snprintf(dumpdir, sizeof dumpdir, "%s/dump", tmpdir);
	CHECK(mkdir(dumpdir, 0700) == 0);
	snprintf(outpath, sizeof outpath, "%s/out.dat", tmpdir);
	setenv("RINGBUF_RECORD_DUMP", dumpdir, 1);
	CHECK(ringbuf_trace_register_event(&fz_reg, &ringbuf_event_fznum) > 0);
	ringbuf_set_warn_hook(quiet_warn, NULL);
	make_templ(&templ[0], 2, 128, 4, RINGBUF_MODE_OVERWRITE, 0, fill_wrapped);
	make_templ(&templ[1], 3, 256, 3, RINGBUF_MODE_PRODUCER_CONSUMER, 0, fill_pc);
	make_templ(&templ[2], 2, 128, 4, RINGBUF_MODE_OVERWRITE, 0, fill_inflight);
	make_templ(&templ[3], 1, 64, 8, RINGBUF_MODE_OVERWRITE, RINGBUF_F_ALIGN8, fill_align8);
	ringbuf_set_warn_hook(NULL, NULL);
	memfd = memfd_create("fuzz_intake.rb", MFD_CLOEXEC);
	CHECK(memfd >= 0);
	snprintf(bufpath, sizeof bufpath, "/proc/self/fd/%d", memfd);
	atexit(cleanup);
	self_check();
	return 0;
}

/* ---- the edits ---------------------------------------------------------------- */

struct region {
	uint64_t off, len;
};

/* *stop: where the edits made after the open start in `in` (after 0xff), or n */
static size_t apply_edits(unsigned char *img, size_t len, size_t cap, const struct templ *t, const uint8_t *in,
			  size_t n, bool header_only, size_t *stop)
{
	const struct ringbuf *h = &t->hdr;
	uint64_t npages = (uint64_t)h->ncpu * (h->nr_pages + 1);
	struct region r[8];
	size_t pos = 0;
	*stop = n;
	r[0] = (struct region){0, sizeof(struct ringbuf)}; /* the fields, not the pad behind them */
	r[1] = (struct region){h->cpu_off - sizeof(struct ringbuf__shdr), sizeof(struct ringbuf__shdr)};
	r[2] = (struct region){h->cpu_off, h->bpage_off - h->cpu_off};
	r[3] = (struct region){h->bpage_off, h->data_off - h->bpage_off};
	r[4] = (struct region){h->data_off, npages * h->page_size};
	r[5] = r[4];
	r[6] = (struct region){h->user_off, h->user_size};
	r[7] = (struct region){0, t->len};
	while (pos + 4 <= n) {
		unsigned op = in[pos], ri = header_only ? 0 : op & 7, kind = (op >> 3) & 7, width = 1u << (op >> 6);
		unsigned off16 = (unsigned)in[pos + 1] | (unsigned)in[pos + 2] << 8, arg = in[pos + 3];
		uint64_t at, v = 0, cur = 0;
		if (op == 0xff && !header_only) {
			*stop = pos + 1; /* the rest: after the open */
			return len;
		}
		pos += 4;
		if (ri == 7 && kind == 7) { /* the file's length */
			size_t d = (size_t)off16 * 8;
			if (arg & 1)
				len = d < len ? len - d : 0;
			else
				len = len + d <= cap ? len + d : cap;
			continue;
		}
		if (r[ri].len < width)
			continue;
		if (ri == 4)
			at = r[4].off + (off16 % npages) * h->page_size + (off16 / npages) % (16 - width + 1);
		else
			at = r[ri].off + off16 % (r[ri].len - width + 1);
		if (at + width > t->len)
			continue;
		memcpy(&cur, img + at, width); /* little-endian hosts: the low bytes */
		switch (kind) {
		case 0: /* raw: the bytes from arg on */
			if (pos - 1 + width > n)
				return len;
			memcpy(&v, in + pos - 1, width);
			pos += width - 1;
			break;
		case 1: v = 0; break;
		case 2: v = UINT64_MAX; break;
		case 3: v = arg % (h->nr_pages + 3); break;
		case 4: v = h->bsize - 16 + arg % 32; break;
		case 5: v = (uint64_t)1 << (arg % (width * 8)); break;
		case 6: v = (uint64_t)(arg % (h->nr_pages + 3)) << 2 | (arg >> 6); break;
		default: v = cur + (uint64_t)(int64_t)(int8_t)arg; break;
		}
		memcpy(img + at, &v, width);
	}
	return len;
}

/* ---- the header rewritten after the open --------------------------------------- */

/* The traced process's view of the file's header (MAP_SHARED) and two
 * versions of it: as the file held it at the open, and with the edits made
 * after the open; a thread writes them in turn until told to stop. */
static struct {
	unsigned char *map;  /* the file's first sizeof(struct ringbuf) bytes, shared */
	unsigned char orig[sizeof(struct ringbuf)], edited[sizeof(struct ringbuf)];
	_Atomic(int) stop;
	unsigned long long flips;
} hed;

static void *header_editor(void *arg)
{
	unsigned i = 0;
	(void)arg;
	while (!atomic_load_explicit(&hed.stop, memory_order_relaxed)) {
		/* byte by byte, as a racing writer tears fields */
		const unsigned char *src = (i++ & 1) ? hed.orig : hed.edited;
		size_t k;
		for (k = 0; k < sizeof hed.orig; k++)
			if (hed.map[k] != src[k])
				__atomic_store_n(&hed.map[k], src[k], __ATOMIC_RELAXED);
		hed.flips++;
	}
	return NULL;
}

/* Apply the after-open edits (in, n: after 0xff) to the file's header now,
 * and start the thread; false (nothing started) when there are none. */
static bool header_edits_start(const struct templ *t, const uint8_t *in, size_t n, pthread_t *th)
{
	unsigned char *img;
	void *m;
	if (n < 4)
		return false;
	m = mmap(NULL, sizeof(struct ringbuf), PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (m == MAP_FAILED)
		return false; /* a file cut shorter than its header: the open refused it */
	hed.map = m;
	memcpy(hed.orig, hed.map, sizeof hed.orig);
	img = calloc(1, t->len);
	CHECK(img);
	memcpy(img, hed.orig, sizeof hed.orig);
	(void)apply_edits(img, t->len, t->len, t, in, n, true, &n);
	memcpy(hed.edited, img, sizeof hed.edited);
	free(img);
	memcpy(hed.map, hed.edited, sizeof hed.edited); /* right after the open */
	atomic_store(&hed.stop, 0);
	CHECK(pthread_create(th, NULL, header_editor, NULL) == 0);
	return true;
}

static void header_edits_stop(pthread_t th)
{
	atomic_store(&hed.stop, 1);
	CHECK(pthread_join(th, NULL) == 0);
	hed_total_flips += hed.flips;
	hed.flips = 0;
	munmap(hed.map, sizeof(struct ringbuf));
	hed.map = NULL;
}

/* ---- the output ---------------------------------------------------------------- */

/* The trace.dat (version 6) at outpath: well formed, ncpu CPUs of
 * page_size pages, every page walks; returns the events the walker counts. */
static uint64_t check_tracedat(unsigned ncpu, uint32_t page_size)
{
	FILE *f = fopen(outpath, "rb");
	unsigned char *buf;
	char why[160];
	uint64_t events = 0;
	uint32_t ps = 0;
	long n;
	CHECK(f);
	CHECK(fseek(f, 0, SEEK_END) == 0);
	n = ftell(f);
	rewind(f);
	CHECK(n > 0);
	buf = malloc((size_t)n);
	CHECK(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	CHECK(n > 18);
	memcpy(&ps, buf + 14, 4);
	CHECK(ps == page_size);
	if (tdat_walk_v6(buf, (size_t)n, ncpu, NULL, NULL, &events, why, sizeof why) != 0) {
		fprintf(stderr, "fuzz_intake: trace.dat: %s\n", why);
		CHECK(!"the trace.dat walks");
	}
	free(buf);
	return events;
}

/* ---- one input ------------------------------------------------------------------ */

static int known_error(int r)
{
	return r >= RINGBUF_ESYS && r <= RINGBUF_EINVAL && ringbuf_strerror(r) != NULL;
}

/* what the dumps left: removed (each run makes at most 4 pairs) */
static void clear_dumps(void)
{
	DIR *d = opendir(dumpdir);
	struct dirent *e;
	char p[400];
	CHECK(d);
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "%s/%s", dumpdir, e->d_name);
		unlink(p);
	}
	closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct templ *t;
	struct ringbuf_trace_registry reg;
	struct ringbuf_tracedat_info info;
	struct ringbuf_tracedat_stats st;
	struct ringbuf_tracedat *w = NULL;
	struct ringbuf *rb = NULL;
	unsigned char *img;
	const char *what;
	size_t len, cap, later;
	unsigned ctl, live, i;
	uint64_t bad = 0;
	int r, gone, ok = 1, version;
	pthread_t editor;
	bool editing = false;

	if (size < 1)
		return 0;
	ctl = data[0];
	t = &templ[ctl & 3];
	gone = (ctl >> 2) & 1;
	live = (ctl >> 3) & 3;
	version = (ctl & 0x80) ? 7 : 6;
	fz_st.runs++;
	cap = t->len + 65536 * 8;
	img = calloc(1, cap);
	CHECK(img);
	memcpy(img, t->img, t->len);
	len = apply_edits(img, t->len, cap, t, data + 1, size - 1, false, &later);
	later += 1;
	CHECK(ftruncate(memfd, 0) == 0);
	CHECK(pwrite(memfd, img, len, 0) == (ssize_t)len);
	free(img);

	/* as rbrec_run: attach (a corrupt header dumped from the file) */
	memset(&rbrec_diag, 0, sizeof rbrec_diag);
	rbrec_diag.path = bufpath;
	ringbuf_set_warn_hook(rbrec_on_warning, NULL);
	r = rbrec_attach(bufpath, version, &rb, &reg, &info, &what);
	if (r < 0) {
		CHECK(known_error(r) && !rb);
		if (r == RINGBUF_ECORRUPT && strcmp(what, "open") == 0)
			rbrec_dump(ringbuf__invalid_why ? ringbuf__invalid_why : "?", RINGBUF_ALL_CPUS);
		goto out;
	}
	CHECK(rb);
	fz_st.attached++;
	/* the traced process rewrites the header from here on */
	editing = header_edits_start(t, data + later, size - later, &editor);
	(void)ringbuf_trace_writer_pid(rb);
	r = ringbuf_trace_writer_alive(rb);
	CHECK(r == 0 || r == 1 || known_error(r));
	r = ringbuf_tracedat_open(outpath, &info, &w);
	if (r < 0) {
		CHECK(known_error(r));
		ringbuf_trace_registry_free(&reg);
		ringbuf_destroy(rb);
		goto out;
	}
	fz_st.written++;
	if (editing)
		fz_st.header_edited++;
	rbrec_diag.len = (size_t)rb->total_size;
	rbrec_diag.rb = rb;
	/* live rounds, then the end */
	for (i = 0; i < live && ok; i++) {
		if (ctl & 0x40) {
			r = ringbuf_wait(rb, RINGBUF_ALL_CPUS, 50, 0);
			CHECK(r == 0 || r == 1 || known_error(r));
		}
		r = rbrec_drain(w, rb, (ctl & 0x20) ? RINGBUF_READ_FULL : 0, &bad, 1);
		CHECK(r >= 0 || known_error(r));
		if (r < 0)
			ok = 0;
	}
	if (ok) {
		r = rbrec_take_rest(w, rb, gone, &bad, &what);
		CHECK(r >= 0 || known_error(r));
		if (gone && strcmp(what, "reading") == 0)
			fz_st.recovered++;
		if (r == RINGBUF_ECORRUPT && strcmp(what, "recovery") == 0)
			rbrec_dump(ringbuf__invalid_why ? ringbuf__invalid_why : "?", RINGBUF_ALL_CPUS);
	}
	memset(&st, 0, sizeof st);
	r = ringbuf_tracedat_finish(w, &st);
	CHECK(r == 0 || known_error(r));
	if (r == 0 && version == 6) {
		CHECK(check_tracedat(info.ncpu, (uint32_t)info.page_size) == st.events);
		fz_st.finished++;
		fz_st.events += st.events;
	}
	ringbuf_trace_registry_free(&reg);
	ringbuf_destroy(rb);
	unlink(outpath);
out:
	if (editing)
		header_edits_stop(editor);
	ringbuf_set_warn_hook(NULL, NULL);
	rbrec_diag.rb = NULL;
	rbrec_diag.path = NULL;
	clear_dumps();
	return 0;
}
