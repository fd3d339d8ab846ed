/* The streaming trace.dat writer (ringbuf_tracedat.h): its file equals the
 * in-memory export of the same pages (byte for byte, and event for event in
 * `trace-cmd report`), it holds a constant amount of memory whatever the
 * number of pages, it refuses malformed pages and leaves a valid file (or
 * none: abort, temporary files), it writes big-endian / 32-bit-long files that
 * trace-cmd on this host reads like the little-endian ones, and a consumer
 * thread draining a live buffer writes every committed event, none twice.
 *
 * The trace-cmd parts are skipped without trace-cmd (they fail under CI=true);
 * the byte comparisons and counts run everywhere.
 */
#define _GNU_SOURCE 1
/* 64-bit d_off/ino on 32-bit builds: without it readdir() (files_named) fails
 * with EOVERFLOW where the kernel hands out 64-bit directory offsets to a
 * 32-bit process (qemu-user on a 64-bit host: ext4's hashes), and the
 * directory looks empty */
#define _FILE_OFFSET_BITS 64
#define RINGBUF_IMPLEMENTATION
#define RINGBUF_TRACE_DEFINE_EVENTS
/* drain() writes its pages in batches; 3 pages of 4 KiB here (128 KiB by
 * default) so that every test crosses batch boundaries */
#define RINGBUF_TDAT__BATCH ((size_t)3 * 4096)
#include "ringbuf_tracedat.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "tracedat_util.h"
#include "pagewalk.h"
#include "tdatwalk.h"

/* ---- helpers -------------------------------------------------------------- */

/* Files in tmpdir whose name starts with prefix. */
static int files_named(const char *prefix)
{
	DIR *d = opendir(tmpdir);
	struct dirent *e;
	int n = 0;
	assert_non_null(d);
	errno = 0;
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
			n++;
	if (errno)
		fail_msg("readdir %s: %s", tmpdir, strerror(errno));
	closedir(d);
	return n;
}

static struct ringbuf *make_rb(unsigned ncpu, size_t size, size_t page_size, bool own_clock)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	cfg.ncpu = ncpu;
	cfg.size_per_cpu = size;
	cfg.page_size = page_size;
	if (own_clock) /* single-threaded tests: the test's clock */
		cfg.clock = test_clock;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	return rb;
}

/* ticks and notes on every CPU, some gaps over 2^27 ns (TIME_EXTEND) */
static uint32_t fill(struct ringbuf *rb, unsigned ncpu, uint32_t n)
{
	uint32_t i;
	for (i = 0; i < n; i++) {
		unsigned cpu = i % ncpu;
		/* a 0.3 s gap every 500 events: TIME_EXTEND records */
		now = 1000000000ull + (uint64_t)i * 1000 + (uint64_t)(i / 500) * 300000000ull;
		if (i % 7 == 3) {
			char text[80];
			snprintf(text, sizeof text, "note-%u-%.*s", i, (int)(i % 40), "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz");
			assert_int_equal(trace_note(rb, cpu, i, text), 1);
		} else {
			assert_int_equal(trace_tick(rb, cpu, i, (int64_t)i * -1000003), 1);
		}
	}
	return n;
}

static int setup(void **state)
{
	(void)state;
	return tracedat_setup_once("/tmp/ringbuf-tdstream-XXXXXX") < 0 ? -1 : 0;
}

/* ---- streaming == in-memory export --------------------------------------- */

/* The CPUSTAT options' "now ts" (the time ringbuf_tracedat_keep_stats ran)
 * made 0: the one thing two files of the same pages and counters differ in.
 * Returns how many it found. */
static int mask_now_ts(unsigned char *p, size_t len)
{
	static const char key[] = "\nnow ts: ";
	size_t i, k = sizeof key - 1;
	int n = 0;
	for (i = 0; i + k <= len; i++)
		if (memcmp(p + i, key, k) == 0) {
			for (i += k; i < len && p[i] != '\n'; i++)
				if (p[i] >= '0' && p[i] <= '9')
					p[i] = '0';
			n++;
		}
	return n;
}

static void stream_file_equals_export_of_the_same_pages(void **state)
{
	int v;
	(void)state;
	for (v = 6; v <= 7; v++) {
		struct ringbuf *rb = make_rb(3, 64 << 10, 4096, true);
		struct ringbuf_trace_capture *cap = NULL;
		struct ringbuf_trace_tracedat_opts opts = RINGBUF_TRACE_TRACEDAT_INIT;
		struct ringbuf_tracedat_info info;
		struct ringbuf_tracedat_stats st;
		struct ringbuf_tracedat *w;
		unsigned cpu;
		size_t i, la, lb, npages = 0;
		unsigned char *a, *b;
		uint32_t n = fill(rb, 3, 3000);
		char *out1, *out2;

		assert_int_equal(ringbuf_trace_capture_create(rb, &cap), 0);
		assert_true(ringbuf_trace_capture_read(cap, rb, RINGBUF_ALL_CPUS, 0) > 0);
		opts.version = v;
		opts.capture = cap;
		opts.flags = RINGBUF_TRACE_TRACEDAT_NO_DRAIN;
		assert_int_equal(ringbuf_trace_save_tracedat(rb, &reg, path_of("mem.dat"), &opts), 0);

		assert_int_equal(ringbuf_tracedat_info_of(rb, &reg, &info), 0);
		info.version = v;
		assert_int_equal(ringbuf_tracedat_open(path_of("stream.dat"), &info, &w), 0);
		for (cpu = 0; cpu < 3; cpu++)
			for (i = 0; i < ringbuf_trace_capture_pages(cap, cpu); i++, npages++)
				assert_int_equal(ringbuf_tracedat_add_page(w, cpu, ringbuf_trace_capture_page(cap, cpu, i),
									   4096), 1);
		assert_int_equal(ringbuf_tracedat_finish(w, &st), 0);
		assert_int_equal(st.pages, npages);
		assert_int_equal(st.events, n);
		assert_int_equal(st.pages_rejected, 0);

		/* the same layout code path: identical bytes (NO_DRAIN: the
		 * export did not read rb, so neither has its counters) */
		a = read_file(path_of("mem.dat"), &la);
		b = read_file(path_of("stream.dat"), &lb);
		assert_int_equal(la, lb);
		assert_int_equal(mask_now_ts(a, la), 0);
		assert_memory_equal(a, b, la);
		free(a);
		free(b);

		if (have_trace_cmd()) {
			out1 = run("trace-cmd report -t %s", path_of("mem.dat"));
			out2 = run("trace-cmd report -t %s", path_of("stream.dat"));
			assert_string_equal(out1, out2);
			assert_int_equal(count_lines(out2, ": tick:") + count_lines(out2, ": note:"), (int)n);
			assert_null(strstr(out2, "UNKNOWN"));
			free(out1);
			free(out2);
		}
		ringbuf_trace_capture_destroy(cap);
		ringbuf_destroy(rb);
	}
	if (!have_trace_cmd())
		skip(); /* the byte comparison ran; trace-cmd report did not */
}

/* ---- the largest CPU's file becomes the result ---------------------------- */

/* Version 7: the BUFFER option (in the OPTIONS section at the end) lists
 * the CPUs in id order (as trace-cmd writes it, and as readers that index
 * by position expect), each section whole pages inside the file; returns
 * the offset of cpu's pages. */
static uint64_t v7_cpu_offset(const unsigned char *p, size_t len, unsigned ncpu, unsigned cpu)
{
	size_t pos = 18, n;
	uint64_t opt, want = 0;
	uint32_t v32;
	uint16_t v16;
	unsigned i;
	n = strnlen((const char *)p + pos, len - pos); /* "none" */
	pos += n + 1;
	n = strnlen((const char *)p + pos, len - pos); /* "" */
	pos += n + 1;
	memcpy(&opt, p + pos, 8);
	assert_true(opt + 16 < len);
	pos = (size_t)opt + 16; /* the OPTIONS section's header */
	for (;;) {
		assert_true(pos + 6 <= len);
		memcpy(&v16, p + pos, 2);
		memcpy(&v32, p + pos + 2, 4);
		pos += 6;
		assert_int_not_equal(v16, 0); /* no BUFFER option before the end */
		if (v16 == 3)
			break;
		pos += v32;
	}
	pos += 8;
	pos += strnlen((const char *)p + pos, len - pos) + 1; /* "" */
	pos += strnlen((const char *)p + pos, len - pos) + 1; /* clock */
	pos += 4; /* page size */
	memcpy(&v32, p + pos, 4);
	assert_int_equal(v32, ncpu);
	pos += 4;
	for (i = 0; i < ncpu; i++) {
		uint64_t off, size;
		memcpy(&v32, p + pos, 4);
		memcpy(&off, p + pos + 4, 8);
		memcpy(&size, p + pos + 12, 8);
		pos += 20;
		assert_int_equal(v32, i);
		assert_true(off % 4096 == 0 && size % 4096 == 0 && off + size <= len);
		if (i == cpu)
			want = off;
	}
	return want;
}

/* finish() writes the metadata into the room kept before the largest CPU's
 * pages in its unnamed file and appends the other CPUs after them
 * (>>tdat_design UNNAMED FILES): the largest CPU here is the last one, so its
 * pages come first in the file. The thread names (info.cmdlines, read at
 * finish) change after open(): unchanged (the metadata fills the room to
 * its page boundary), shrunk by pages (zeros between the metadata and the
 * pages), grown past the room (finish() copies every CPU, in order). Each
 * file holds every event (tdatwalk.h, version 6) and reads in trace-cmd
 * like a file written with the final names from the start, whose layout is
 * the plain one (checked byte for byte against a copy made by hand). */
static void largest_cpu_file_becomes_the_result(void **state)
{
	enum { SAME, SHRUNK, GROWN };
	int v, how;
	(void)state;
	for (v = 6; v <= 7; v++)
		for (how = SAME; how <= GROWN; how++) {
			struct ringbuf *rb = make_rb(3, 256 << 10, 4096, true);
			struct ringbuf_trace_capture *cap = NULL;
			struct ringbuf_tracedat_info info;
			struct ringbuf_tracedat_stats st;
			struct ringbuf_tracedat *w, *w2;
			static char names[64 << 10], final[64 << 10];
			size_t i, la, lb, len = 0, npages = 0;
			unsigned cpu, lines = how == SAME ? 200 : how == SHRUNK ? 900 : 20, k;
			int unnamed;
			unsigned char *a, *b;
			uint32_t n = 0;
			for (k = 0; k < lines; k++)
				len += (size_t)snprintf(names + len, sizeof names - len, "%u thread-name-%u\n", 1000 + k, k);
			/* CPU 2 gets 5 of every 7 events */
			for (i = 0; i < 4000; i++, n++) {
				now = 1000000000ull + (uint64_t)i * 1000;
				assert_int_equal(trace_tick(rb, i % 7 < 5 ? 2 : (unsigned)(i % 7) - 5, (uint32_t)i, (int64_t)i), 1);
			}
			assert_int_equal(ringbuf_trace_capture_create(rb, &cap), 0);
			assert_true(ringbuf_trace_capture_read(cap, rb, RINGBUF_ALL_CPUS, 0) > 0);
			assert_true(ringbuf_trace_capture_pages(cap, 2) > ringbuf_trace_capture_pages(cap, 0) + 1);
			assert_int_equal(ringbuf_tracedat_info_of(rb, &reg, &info), 0);
			info.version = v;
			info.cmdlines = names;
			assert_int_equal(ringbuf_tracedat_open(path_of("direct.dat"), &info, &w), 0);
			/* without O_TMPFILE (the system or tmpdir's filesystem) every
			 * file has the plain layout */
			unnamed = w->unnamed;
			for (cpu = 0; cpu < 3; cpu++)
				for (i = 0; i < ringbuf_trace_capture_pages(cap, cpu); i++, npages++)
					assert_int_equal(ringbuf_tracedat_add_page(w, cpu, ringbuf_trace_capture_page(cap, cpu, i),
										   4096), 1);
			if (how == SHRUNK)
				names[strlen("1000 thread-name-0\n")] = 0; /* one line: pages less */
			if (how == GROWN)
				for (k = lines; k < 900; k++)
					len += (size_t)snprintf(names + len, sizeof names - len, "%u thread-name-%u\n", 1000 + k, k);
			memcpy(final, names, sizeof final);
			/* the CPUSTAT options fit in the room kept at the open */
			if (how != GROWN)
				assert_int_equal(ringbuf_tracedat_keep_stats(w, rb), 0);
			assert_int_equal(ringbuf_tracedat_finish(w, &st), 0);
			assert_int_equal(st.pages, npages);
			assert_int_equal(st.events, n);
			assert_int_equal(files_named("direct.dat."), 0); /* no part file left */
			/* the reference: the final names from the start */
			info.cmdlines = final;
			assert_int_equal(ringbuf_tracedat_open(path_of("ref.dat"), &info, &w2), 0);
			for (cpu = 0; cpu < 3; cpu++)
				for (i = 0; i < ringbuf_trace_capture_pages(cap, cpu); i++)
					assert_int_equal(ringbuf_tracedat_add_page(w2, cpu, ringbuf_trace_capture_page(cap, cpu, i),
										   4096), 1);
			if (how != GROWN)
				assert_int_equal(ringbuf_tracedat_keep_stats(w2, rb), 0);
			assert_int_equal(ringbuf_tracedat_finish(w2, NULL), 0);
			a = read_file(path_of("direct.dat"), &la);
			b = read_file(path_of("ref.dat"), &lb);
			assert_int_equal(mask_now_ts(a, la), how != GROWN ? 3 : 0);
			assert_int_equal(mask_now_ts(b, lb), how != GROWN ? 3 : 0);
			if (how == SHRUNK && unnamed) /* the room kept: whole pages of zeros */
				assert_true(la > lb && (la - lb) % 4096 == 0);
			else
				assert_int_equal(la, lb);
			if (how == SAME)
				assert_memory_equal(a, b, la);
			if (v == 7 && how != GROWN) /* CPU 2 first, then 0 and 1 */
				assert_true((v7_cpu_offset(a, la, 3, 2) < v7_cpu_offset(a, la, 3, 0)) == unnamed);
			if (v == 7)
				assert_true((v7_cpu_offset(b, lb, 3, 2) < v7_cpu_offset(b, lb, 3, 0)) == unnamed);
			if (v == 6) {
				uint64_t events = 0;
				char why[160];
				if (tdat_walk_v6(a, la, 3, NULL, NULL, &events, why, sizeof why) != 0)
					fail_msg("direct.dat: %s", why);
				assert_int_equal(events, n);
				assert_int_equal(tdat_walk_v6(b, lb, 3, NULL, NULL, &events, why, sizeof why), 0);
				assert_int_equal(events, n);
			}
			free(a);
			free(b);
			if (have_trace_cmd()) {
				char *out1 = run("trace-cmd report %s", path_of("direct.dat"));
				char *out2 = run("trace-cmd report %s", path_of("ref.dat"));
				assert_string_equal(out1, out2);
				assert_int_equal(count_lines(out1, ": tick:"), (int)n);
				assert_true(count_lines(out1, "thread-name-") > 0 || count_lines(out1, "<...>") > 0);
				free(out1);
				free(out2);
			}
			ringbuf_trace_capture_destroy(cap);
			ringbuf_destroy(rb);
		}
	if (!have_trace_cmd())
		skip();
}

/* ---- the buffer's counters: CPUSTAT ----------------------------------------- */

/* ringbuf_tracedat_keep_stats: one CPUSTAT option per CPU, in the room
 * the open kept (32 CPUs' texts outgrow any page's slack: without that
 * room finish() copies, and CPU 5, the largest, is no longer first), with
 * the losses no page reports (a producer/consumer CPU full until the end);
 * trace-cmd report --stat prints them; bad arguments change nothing. */
static void buffer_counters_go_into_the_file(void **state)
{
	struct ringbuf *rb = make_rb(32, 16 << 10, 4096, true), *other = make_rb(2, 16 << 10, 4096, true);
	struct ringbuf_tracedat_info info;
	struct ringbuf_tracedat_stats st;
	struct ringbuf_stats bs;
	struct ringbuf_tracedat *w;
	unsigned char *a;
	size_t la;
	uint64_t events = 0;
	uint32_t i, n = 0, n5 = 0, dropped = 0;
	char why[160];
	int unnamed, fds[32];
	(void)state;
	assert_int_equal(ringbuf_set_mode(rb, RINGBUF_MODE_PRODUCER_CONSUMER), 0);
	for (i = 0; i < 6000; i++) { /* CPU 5 fills up (4 pages of 16 KiB) and drops */
		int r;
		now = 1000000000ull + (uint64_t)i * 1000;
		r = trace_tick(rb, i % 40 ? 5 : 0, i, (int64_t)i); /* CPU 0: 150, one page */
		if (r == 1) {
			n++;
			n5 += i % 40 != 0;
		} else {
			assert_true(i % 40 != 0);
			dropped++;
		}
	}
	assert_true(dropped > 1000);
	assert_int_equal(ringbuf_tracedat_info_of(rb, &reg, &info), 0);
	assert_int_equal(ringbuf_tracedat_open(path_of("stats.dat"), &info, &w), 0);
	unnamed = w->unnamed;
	assert_true(ringbuf_tracedat_drain(w, rb, RINGBUF_ALL_CPUS, 0) > 0);
	/* bad arguments: refused, the writer as it was */
	assert_int_equal(ringbuf_tracedat_keep_stats(NULL, rb), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_tracedat_keep_stats(w, NULL), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_tracedat_keep_stats(w, other), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_tracedat_keep_stats(w, rb), 0);
	assert_int_equal(ringbuf_tracedat_keep_stats(w, rb), 0); /* again: replaces */
	assert_int_equal(ringbuf_tracedat_finish(w, &st), 0);
	assert_int_equal(st.events, n);
	assert_int_equal(ringbuf_stats(rb, &bs), 0);
	assert_int_equal(bs.dropped_events, dropped);

	a = read_file(path_of("stats.dat"), &la);
	assert_int_equal(tdat_walk_v6(a, la, 32, NULL, NULL, &events, why, sizeof why), 0);
	assert_int_equal(events, n);
	assert_true((tdat_cpu_offset_v6(a, la, 5) < tdat_cpu_offset_v6(a, la, 0)) == (unnamed != 0));
	assert_int_equal(mask_now_ts(a, la), 32);
	assert_non_null(memmem(a, la, "CPU: 31\nentries: 0\n", strlen("CPU: 31\nentries: 0\n")));
	{ /* CPU 5's text has its drops and the events read of it */
		const unsigned char *c5 = memmem(a, la, "CPU: 5\n", 7);
		char line[64];
		assert_non_null(c5);
		snprintf(line, sizeof line, "\ndropped events: %u\nread events: %u\n", dropped, n5);
		assert_non_null(memmem(c5, 320, line, strlen(line)));
	}
	free(a);
	if (have_trace_cmd()) {
		char *out = run("trace-cmd report --stat %s", path_of("stats.dat"));
		char line[64];
		snprintf(line, sizeof line, "dropped events: %u\n", dropped);
		assert_non_null(strstr(out, "CPU: 5\n"));
		assert_non_null(strstr(out, line));
		free(out);
	}
	/* the one-call export that reads the buffer writes them too */
	{
		struct ringbuf *rb2 = make_rb(2, 16 << 10, 4096, true);
		uint32_t d2 = 0;
		char line[48];
		assert_int_equal(ringbuf_set_mode(rb2, RINGBUF_MODE_PRODUCER_CONSUMER), 0);
		for (i = 0; i < 3000; i++) {
			now = 1000000000ull + (uint64_t)i * 1000;
			d2 += trace_tick(rb2, 1, i, (int64_t)i) != 1;
		}
		assert_true(d2 > 0);
		assert_int_equal(ringbuf_trace_save_tracedat(rb2, &reg, path_of("export.dat"), NULL), 0);
		a = read_file(path_of("export.dat"), &la);
		assert_int_equal(mask_now_ts(a, la), 2);
		snprintf(line, sizeof line, "\ndropped events: %u\n", d2);
		assert_non_null(memmem(a, la, line, strlen(line)));
		free(a);
		ringbuf_destroy(rb2);
	}
	/* a writer whose metadata went out first has nowhere to put them */
	for (i = 0; i < 32; i++)
		fds[i] = open("/dev/null", O_WRONLY);
	assert_int_equal(ringbuf_tracedat_open_fds(&info, fds, &w), 0);
	assert_int_equal(ringbuf_tracedat_keep_stats(w, rb), RINGBUF_EINVAL);
	ringbuf_tracedat_abort(w);
	for (i = 0; i < 32; i++)
		close(fds[i]);
	ringbuf_destroy(other);
	ringbuf_destroy(rb);
	if (!have_trace_cmd())
		skip();
}

/* ---- memory ----------------------------------------------------------------- */

static void memory_is_constant_in_the_number_of_pages(void **state)
{
	struct ringbuf *rb = make_rb(2, 32 << 10, 4096, true);
	struct ringbuf_trace_capture *cap = NULL;
	struct ringbuf_tracedat_info info;
	struct ringbuf_tracedat_stats st, st10 = {0};
	struct ringbuf_tracedat *w;
	size_t i, k = 0, np;
	(void)state;
	fill(rb, 2, 600);
	assert_int_equal(ringbuf_trace_capture_create(rb, &cap), 0);
	assert_true(ringbuf_trace_capture_read(cap, rb, RINGBUF_ALL_CPUS, 0) > 0);
	np = ringbuf_trace_capture_pages(cap, 0);
	assert_true(np > 0);
	assert_int_equal(ringbuf_tracedat_info_of(rb, &reg, &info), 0);
	info.version = 7;
	assert_int_equal(ringbuf_tracedat_open(path_of("big.dat"), &info, &w), 0);
	for (i = 0; i < 10; i++, k++)
		assert_int_equal(ringbuf_tracedat_add_page(w, k & 1, ringbuf_trace_capture_page(cap, 0, k % np), 4096), 1);
	assert_int_equal(ringbuf_tracedat_stats(w, &st10), 0);
	for (i = 0; i < 3000; i++, k++)
		assert_int_equal(ringbuf_tracedat_add_page(w, k & 1, ringbuf_trace_capture_page(cap, 0, k % np), 4096), 1);
	assert_int_equal(ringbuf_tracedat_stats(w, &st), 0);
	/* nothing allocated per page; the batch (RINGBUF_TDAT__BATCH bytes of
	 * pages) + the writer + per-CPU words */
	assert_int_equal(st.allocs, st10.allocs);
	assert_int_equal(st.heap_peak, st10.heap_peak);
	assert_int_equal(st.heap_bytes, st10.heap_bytes);
	assert_true(st.heap_bytes <= RINGBUF_TDAT__BATCH + 2048 + 2 * strlen(path_of("big.dat")));
	/* open() built the metadata once, to size the room for it before the
	 * pages (>>tdat_design UNNAMED FILES): freed at once */
	assert_true(st.heap_peak <= RINGBUF_TDAT__BATCH + 2048 + 2 * strlen(path_of("big.dat")) + 16384);
	assert_int_equal(st.pages, 3010);
	assert_int_equal(ringbuf_tracedat_finish(w, &st), 0);
	/* finish: + the metadata (formats, names), still independent of the pages */
	assert_true(st.heap_peak <= st10.heap_peak + 16384);
	if (have_trace_cmd()) {
		char *out = run("trace-cmd report --stat %s", path_of("big.dat"));
		char want[64];
		snprintf(want, sizeof want, "%zu bytes in size", (size_t)1505 * 4096);
		assert_int_equal(count_lines(out, want), 2);
		free(out);
	}
	ringbuf_trace_capture_destroy(cap);
	ringbuf_destroy(rb);
}

/* ---- hand-made pages: any byte order, any long --------------------------- */

struct pb {
	unsigned char *p;
	size_t ps, off; /* off: in data[] */
	int be;
	unsigned ls;
	uint64_t last_ts;
};

static void put(unsigned char *p, unsigned n, int be, uint64_t v)
{
	unsigned i;
	for (i = 0; i < n; i++)
		p[be ? n - 1 - i : i] = (unsigned char)(v >> (8 * i));
}

static void pb_start(struct pb *b, unsigned char *page, size_t ps, int be, unsigned ls, uint64_t ts)
{
	memset(page, 0, ps);
	b->p = page;
	b->ps = ps;
	b->off = 0;
	b->be = be;
	b->ls = ls;
	b->last_ts = ts;
	put(page, 8, be, ts);
}

static uint32_t hdr_word(int be, uint32_t type, uint32_t delta)
{
	return be ? type << 27 | (delta & ((1u << 27) - 1)) : (delta << 5) | type;
}

/* a tick record: common fields, seq, big at the descriptor's offsets */
static void pb_tick(struct pb *b, uint64_t ts, int32_t pid, uint32_t seq, int64_t big)
{
	const struct ringbuf_trace_event *ev = &ringbuf_event_tick;
	unsigned char *d = b->p + 8 + b->ls + b->off;
	size_t size = (ev->size + 3) & ~(size_t)3;
	uint64_t delta = ts - b->last_ts;
	unsigned f;
	if (delta >> 27) {
		put(d, 4, b->be, hdr_word(b->be, 30, (uint32_t)(delta & ((1u << 27) - 1))));
		put(d + 4, 4, b->be, delta >> 27);
		d += 8;
		b->off += 8;
		delta = 0;
	}
	put(d, 4, b->be, hdr_word(b->be, (uint32_t)(size / 4), (uint32_t)delta));
	put(d + 4, 2, b->be, ev->id);
	put(d + 8, 4, b->be, (uint32_t)pid);
	for (f = 0; f < ev->nfields; f++) {
		const struct ringbuf_trace_field *fl = &ev->fields[f];
		if (strcmp(fl->name, "seq") == 0)
			put(d + 4 + fl->offset, 4, b->be, seq);
		else if (strcmp(fl->name, "big") == 0)
			put(d + 4 + fl->offset, 8, b->be, (uint64_t)big);
	}
	b->off += 4 + size;
	b->last_ts = ts;
	put(b->p + 8, b->ls, b->be, b->off);
}

static void pb_lost(struct pb *b, uint64_t n)
{
	put(b->p + 8, b->ls, b->be, b->off | 1u << 31 | 1u << 30);
	put(b->p + 8 + b->ls + b->off, b->ls, b->be, n);
}

/* The same events in a file of byte order be and long ls. */
static void write_handmade(const char *path, int version, int be, unsigned ls)
{
	struct ringbuf_tracedat_info info;
	struct ringbuf_tracedat *w;
	unsigned char page[4096];
	struct pb b;
	unsigned cpu;
	int k, i;
	memset(&info, 0, sizeof info);
	info.ncpu = 2;
	info.page_size = sizeof page;
	info.big_endian = be;
	info.long_size = ls;
	info.version = version;
	info.clock = "mono";
	info.reg = &reg;
	info.cmdlines = "4242 producer\n4343 consumer\n";
	assert_int_equal(ringbuf_tracedat_open(path, &info, &w), 0);
	for (cpu = 0; cpu < 2; cpu++)
		for (k = 0; k < 3; k++) {
			uint64_t t = 1000000000ull * (k + 1) + cpu * 700;
			pb_start(&b, page, sizeof page, be, ls, t);
			for (i = 0; i < 20; i++) {
				pb_tick(&b, t, cpu ? 4343 : 4242, cpu * 1000 + k * 100 + (uint32_t)i,
					-((int64_t)i << 33));
				t += i == 10 ? 300000000ull : 1500; /* one TIME_EXTEND */
			}
			if (k == 1)
				pb_lost(&b, 7);
			assert_int_equal(ringbuf_tracedat_add_page(w, cpu, page, sizeof page), 1);
		}
	assert_int_equal(ringbuf_tracedat_finish(w, NULL), 0);
}

static void big_endian_and_32bit_files_read_like_native_ones(void **state)
{
	static const struct { int be; unsigned ls; const char *name; } kinds[] = {
		{0, 8, "le64"}, {1, 4, "be32"}, {1, 8, "be64"}, {0, 4, "le32"}};
	char *ref = NULL;
	int v;
	size_t k;
	(void)state;
	for (v = 6; v <= 7; v++)
		for (k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
			char name[32];
			snprintf(name, sizeof name, "%s-v%d.dat", kinds[k].name, v);
			write_handmade(path_of(name), v, kinds[k].be, kinds[k].ls);
			if (have_trace_cmd()) {
				char *out = run("trace-cmd report -t %s", path_of(name));
				char *dump = run("trace-cmd dump --summary %s", path_of(name));
				assert_non_null(strstr(dump, kinds[k].be ? "[Big endian]" : "[Little endian]"));
				free(dump);
				if (!ref) {
					ref = out;
					/* 2 CPUs x 3 pages x 20 ticks, the pids' names, the losses */
					assert_int_equal(count_lines(out, ": tick:"), 120);
					assert_int_equal(count_lines(out, "producer-4242"), 60);
					assert_int_equal(count_lines(out, "consumer-4343"), 60);
					assert_int_equal(count_lines(out, "[7 EVENTS DROPPED]"), 2);
					assert_non_null(strstr(out, "producer-4242  [000]     1.000000000: tick:"));
					assert_non_null(strstr(out, "seq=1119 big=-163208757248"));
					assert_null(strstr(out, "UNKNOWN"));
				} else {
					assert_string_equal(out, ref); /* every kind reads the same */
					free(out);
				}
			}
		}
	free(ref);
	if (!have_trace_cmd())
		skip();
}

/* ---- malformed pages ------------------------------------------------------- */

static void corrupt_pages_are_refused_and_the_file_stays_valid(void **state)
{
	struct ringbuf_tracedat_info info;
	struct ringbuf_tracedat_stats st;
	struct ringbuf_tracedat *w;
	unsigned char good[4096], bad[4096];
	const unsigned ls = (unsigned)sizeof(long);
	const int be = 0;
	struct pb b;
	int i, rejected = 0, accepted = 0, checked_bad = 0;
	uint64_t events = 0;
	unsigned seed = 12345;
	(void)state;
	pb_start(&b, good, sizeof good, be, ls, 5000000000ull);
	for (i = 0; i < 30; i++)
		pb_tick(&b, 5000000000ull + (uint64_t)i * 10, 4242, (uint32_t)i, i);
	memset(&info, 0, sizeof info);
	info.ncpu = 1;
	info.page_size = sizeof good;
	info.big_endian = be;
	info.long_size = ls;
	info.reg = &reg;
	assert_int_equal(ringbuf_tracedat_open(path_of("corrupt.dat"), &info, &w), 0);
	/* only the part file's name could show up before finish: nothing does */
	assert_int_equal(files_named("corrupt.dat"), 0);

#define BAD(mutate)                                                                     \
	do {                                                                            \
		memcpy(bad, good, sizeof bad);                                          \
		mutate;                                                                 \
		assert_int_equal(ringbuf_tracedat_add_page(w, 0, bad, sizeof bad), RINGBUF_ECORRUPT); \
		rejected++;                                                             \
	} while (0)
	BAD(put(bad + 8, ls, be, 4096));                        /* commit beyond the page */
	BAD(put(bad + 8, ls, be, b.off | 1u << 28));            /* reserved bit */
	BAD(put(bad + 8, ls, be, b.off | 1u << 30));            /* STORED without MISSED */
	BAD(put(bad + 8, ls, be, (4096 - 8 - ls) | 3u << 30));  /* no room for the count */
	BAD(put(bad + 8, ls, be, b.off - 2));                   /* commit not 4-aligned */
	BAD(put(bad + 8, ls, be, b.off + 4));                   /* header cut at the end */
	BAD(put(bad + 8 + ls, 4, be, hdr_word(be, 0, 0)); put(bad + 12 + ls, 4, be, 2)); /* array[0] < 4 */
	BAD(put(bad + 8 + ls, 4, be, hdr_word(be, 0, 0)); put(bad + 12 + ls, 4, be, 0x7fffffff));
	BAD(put(bad + 8 + ls, 4, be, hdr_word(be, 29, 0)); put(bad + 12 + ls, 4, be, 0)); /* null pad inside */
	BAD(put(bad + 8 + ls, 4, be, hdr_word(be, 29, 0)); put(bad + 12 + ls, 4, be, 100000));
	BAD(put(bad + 8 + ls, 4, be, hdr_word(be, 28, 0)); put(bad + 8, ls, be, 64)); /* record past commit */
	BAD(put(bad + 8, ls, be, 4); put(bad + 8 + ls, 4, be, hdr_word(be, 30, 0))); /* cut extend */
#undef BAD
	assert_int_equal(ringbuf_tracedat_add_page(w, 0, good, sizeof good), 1);
	accepted++;
	events += 30;
	assert_int_equal(ringbuf_tracedat_add_page(w, 1, good, sizeof good), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_tracedat_add_page(w, 0, good, 2048), RINGBUF_EINVAL);
	rejected += 2;
	/* random damage to the header and the first records: refused or
	 * parsed, never a crash, and the counts agree */
	for (i = 0; i < 20000; i++) {
		uint64_t nev = 0;
		int r, j, nflip = 1 + (int)((seed >> 8) % 3);
		memcpy(bad, good, sizeof bad);
		for (j = 0; j < nflip; j++) {
			seed = seed * 1103515245u + 12345u;
			bad[(seed >> 4) % (8 + ls + 96)] ^= (unsigned char)(1u << ((seed >> 20) & 7));
		}
		r = ringbuf_tracedat_check_page(bad, sizeof bad, be, ls, &nev, NULL);
		if (r < 0)
			checked_bad++;
		if (i >= 3000)
			continue; /* the check alone: the file stays small */
		assert_int_equal(ringbuf_tracedat_add_page(w, 0, bad, sizeof bad), r == 0 ? (nev || (bad[8 + 3] & 0x80) ? 1 : 0) : r);
		if (r < 0)
			rejected++;
		else if (nev || (bad[8 + 3] & 0x80))
			accepted++, events += nev;
	}
	assert_int_equal(ringbuf_tracedat_stats(w, &st), 0);
	assert_int_equal(st.pages_rejected, rejected);
	assert_int_equal(st.pages, accepted);
	assert_int_equal(st.events, events);
	print_message("      %d pages refused, %d written; random flips: %d of 20000 refused by the check\n",
		      rejected, accepted, checked_bad);
	assert_true(rejected > 50 && accepted > 50 && checked_bad > 200);
	assert_int_equal(ringbuf_tracedat_finish(w, NULL), 0);
	assert_int_equal(files_named("corrupt.dat"), 1);
	if (have_trace_cmd()) {
		char *out = run("trace-cmd report %s", path_of("corrupt.dat"));
		assert_non_null(strstr(out, "cpus=1"));
		assert_null(strstr(out, "bad page"));
		assert_true(count_lines(out, "\n") >= 30);
		free(out);
	}
}

static void abort_and_bad_arguments_leave_nothing(void **state)
{
	struct ringbuf_tracedat_info info;
	struct ringbuf_tracedat *w = NULL;
	unsigned char page[4096];
	struct pb b;
	(void)state;
	memset(&info, 0, sizeof info);
	info.ncpu = 4;
	info.page_size = 4096;
	info.long_size = (unsigned)sizeof(long);
	assert_int_equal(ringbuf_tracedat_open(path_of("gone.dat"), &info, &w), 0);
	pb_start(&b, page, sizeof page, 0, info.long_size, 1);
	pb_tick(&b, 1, 1, 1, 1);
	assert_int_equal(ringbuf_tracedat_add_page(w, 3, page, sizeof page), 1);
	assert_int_equal(files_named("gone.dat"), 0);
	ringbuf_tracedat_abort(w);
	assert_int_equal(files_named("gone.dat"), 0);
	ringbuf_tracedat_abort(NULL);

	/* an existing file at the path stays until finish() succeeds */
	{
		FILE *f = fopen(path_of("old.dat"), "w");
		size_t len;
		unsigned char *c;
		assert_non_null(f);
		fputs("old", f);
		fclose(f);
		assert_int_equal(ringbuf_tracedat_open(path_of("old.dat"), &info, &w), 0);
		assert_int_equal(ringbuf_tracedat_add_page(w, 0, page, sizeof page), 1);
		ringbuf_tracedat_abort(w);
		c = read_file(path_of("old.dat"), &len);
		assert_int_equal(len, 3);
		assert_memory_equal(c, "old", 3);
		free(c);
		assert_int_equal(files_named("old.dat"), 1);
	}
	info.page_size = 1000; /* not a power of two */
	assert_int_equal(ringbuf_tracedat_open(path_of("x.dat"), &info, &w), RINGBUF_EINVAL);
	assert_null(w);
	info.page_size = 4096;
	info.long_size = 2;
	assert_int_equal(ringbuf_tracedat_open(path_of("x.dat"), &info, &w), RINGBUF_EINVAL);
	info.long_size = 8;
	info.version = 5;
	assert_int_equal(ringbuf_tracedat_open(path_of("x.dat"), &info, &w), RINGBUF_EINVAL);
	info.version = 7;
	info.ncpu = 0;
	assert_int_equal(ringbuf_tracedat_open(path_of("x.dat"), &info, &w), RINGBUF_EINVAL);
	info.ncpu = 1;
	assert_int_equal(ringbuf_tracedat_open(NULL, &info, &w), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_tracedat_open("/nonexistent-dir/x.dat", &info, &w), RINGBUF_ESYS);
	assert_int_equal(ringbuf_tracedat_open(path_of("x.dat"), NULL, &w), RINGBUF_EINVAL);
	assert_int_equal(files_named("x.dat"), 0);
	assert_int_equal(ringbuf_tracedat_add_page(NULL, 0, page, sizeof page), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_tracedat_finish(NULL, NULL), RINGBUF_EINVAL);
}

/* ---- drain() writes in batches ------------------------------------------- */

/* Batches of 3 pages: drains of 1..13 pages end a batch at every place (a
 * full batch, 1 or 2 pages over); every page is written once, in order:
 * the file holds every event (tdatwalk.h) and the counters count them. */
static void drain_batches_end_anywhere(void **state)
{
	unsigned k, seen[3] = {0, 0, 0};
	(void)state;
	for (k = 1; k <= 24; k++) {
		struct ringbuf *rb = make_rb(2, 64 << 10, 4096, true);
		struct ringbuf_tracedat_info info;
		struct ringbuf_tracedat_stats st;
		struct ringbuf_tracedat *w;
		uint32_t i, n = k * 90;
		uint64_t events = 0;
		unsigned char *a;
		size_t la;
		char why[160];
		int r;
		for (i = 0; i < n; i++) {
			now = 1000000000ull + (uint64_t)i * 1000;
			assert_int_equal(trace_tick(rb, i % 9 == 0 ? 1 : 0, i, (int64_t)i), 1);
		}
		assert_int_equal(ringbuf_tracedat_info_of(rb, &reg, &info), 0);
		assert_int_equal(ringbuf_tracedat_open(path_of("batch.dat"), &info, &w), 0);
		r = ringbuf_tracedat_drain(w, rb, 0, 0);
		assert_true(r > 0);
		seen[r % 3]++;
		assert_int_equal(ringbuf_tracedat_stats(w, &st), 0);
		assert_int_equal(st.pages, (uint64_t)r); /* all written when it returns */
		assert_int_equal(w->batch_n, 0);
		assert_true(ringbuf_tracedat_drain(w, rb, RINGBUF_ALL_CPUS, 0) > 0); /* CPU 1 */
		assert_int_equal(ringbuf_tracedat_drain(w, rb, RINGBUF_ALL_CPUS, 0), 0);
		assert_int_equal(ringbuf_tracedat_finish(w, &st), 0);
		assert_int_equal(st.events, n);
		assert_int_equal(st.lost, 0);
		a = read_file(path_of("batch.dat"), &la);
		if (tdat_walk_v6(a, la, 2, NULL, NULL, &events, why, sizeof why) != 0)
			fail_msg("batch.dat, %u events: %s", n, why);
		assert_int_equal(events, n);
		free(a);
		ringbuf_destroy(rb);
	}
	/* drains ended on every place of a batch */
	assert_true(seen[0] > 0 && seen[1] > 0 && seen[2] > 0);
}

/* A write that fails in the middle of a batch (the file size limit falls
 * inside its second page) makes drain() return RINGBUF_ESYS; the counters
 * keep only the batch written before; the writer is broken: finish() fails
 * and leaves nothing. A streamed writer whose peer has gone likewise. */
static void failed_batch_write_breaks_the_writer(void **state)
{
	struct ringbuf *rb = make_rb(1, 64 << 10, 4096, true);
	struct ringbuf_tracedat_info info;
	struct ringbuf_tracedat_stats st;
	struct ringbuf_tracedat *w;
	struct rlimit old, lim;
	void (*old_xfsz)(int);
	int sv[2];
	uint32_t i;
	(void)state;
	for (i = 0; i < 2000; i++) { /* about 12 pages */
		now = 1000000000ull + (uint64_t)i * 1000;
		assert_int_equal(trace_tick(rb, 0, i, (int64_t)i), 1);
	}
	assert_int_equal(ringbuf_tracedat_info_of(rb, &reg, &info), 0);
	assert_int_equal(ringbuf_tracedat_open(path_of("efbig.dat"), &info, &w), 0);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = (rlim_t)(w->reserve + 4 * 4096 + 100); /* inside batch 2's 2nd page */
	old_xfsz = signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	assert_int_equal(ringbuf_tracedat_drain(w, rb, 0, 0), RINGBUF_ESYS);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, old_xfsz);
	assert_int_equal(ringbuf_tracedat_stats(w, &st), 0);
	assert_int_equal(st.pages, 3);
	assert_int_equal(ringbuf_tracedat_drain(w, rb, 0, 0), RINGBUF_ESYS);
	assert_int_equal(ringbuf_tracedat_finish(w, NULL), RINGBUF_ESYS);
	assert_int_equal(files_named("efbig.dat"), 0);

	/* streamed: the other end closed (send: EPIPE, no SIGPIPE) */
	for (i = 0; i < 2000; i++) {
		now = 2000000000ull + (uint64_t)i * 1000;
		assert_int_equal(trace_tick(rb, 0, i, (int64_t)i), 1);
	}
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	close(sv[1]);
	assert_int_equal(ringbuf_tracedat_open_fds(&info, sv, &w), 0);
	assert_int_equal(ringbuf_tracedat_drain(w, rb, 0, 0), RINGBUF_ESYS);
	assert_int_equal(ringbuf_tracedat_stats(w, &st), 0);
	assert_int_equal(st.pages, 0);
	assert_int_equal(ringbuf_tracedat_finish(w, NULL), RINGBUF_ESYS);
	close(sv[0]);
	ringbuf_destroy(rb);
}

/* ---- a consumer thread draining a live buffer ------------------------------ */

struct live {
	struct ringbuf *rb;
	uint32_t n;
	atomic_int done;
};

static void *producer(void *arg)
{
	struct live *l = arg;
	uint32_t i;
	for (i = 0; i < l->n; i++) {
		int r = trace_tick(l->rb, i & 1, i, (int64_t)i);
		if (r != 1 && r != RINGBUF_ENOSPC)
			abort(); /* not a cmocka assert: another thread */
	}
	atomic_store(&l->done, 1);
	ringbuf_wake_waiters(l->rb);
	return NULL;
}

static void live_run(int version)
{
	/* 4 KiB pages: trace-cmd 3.1.6 shows only the first few pages of a file
	 * with 1 KiB pages (the in-memory export's files too) */
	struct ringbuf *rb = make_rb(2, 32 << 10, 4096, false);
	struct ringbuf_tracedat_info info;
	struct ringbuf_tracedat_stats st;
	struct ringbuf_stats rs;
	struct ringbuf_tracedat *w;
	struct live l;
	pthread_t t;
	uint64_t written = 0;
	/* producer/consumer: a full buffer drops new events (counted), so the
	 * file must hold exactly what was committed */
	assert_int_equal(ringbuf_set_mode(rb, RINGBUF_MODE_PRODUCER_CONSUMER), 0);
	l.rb = rb;
	l.n = 200000;
	atomic_init(&l.done, 0);
	assert_int_equal(ringbuf_tracedat_info_of(rb, &reg, &info), 0);
	info.version = version;
	assert_int_equal(ringbuf_tracedat_open(path_of("live.dat"), &info, &w), 0);
	assert_int_equal(pthread_create(&t, NULL, producer, &l), 0);
	while (!atomic_load(&l.done)) {
		int r;
		ringbuf_wait(rb, RINGBUF_ALL_CPUS, 25, 20);
		r = ringbuf_tracedat_drain(w, rb, RINGBUF_ALL_CPUS, RINGBUF_READ_FULL);
		assert_true(r >= 0);
		written += (uint64_t)r;
	}
	pthread_join(t, NULL);
	assert_true(ringbuf_tracedat_drain(w, rb, RINGBUF_ALL_CPUS, 0) >= 0);
	assert_int_equal(ringbuf_stats(rb, &rs), 0);
	assert_int_equal(ringbuf_tracedat_finish(w, &st), 0);
	assert_int_equal(st.pages_rejected, 0);
	assert_int_equal(st.events, rs.committed);
	assert_int_equal(rs.committed + rs.dropped_events, l.n);
	assert_int_equal(rs.entries, 0);
	if (have_trace_cmd()) {
		char *out = run("trace-cmd report %s", path_of("live.dat"));
		char *p;
		long last[2] = {-1, -1};
		uint64_t lines = 0;
		/* per CPU, seqs rise: none twice, none out of order (a plain
		 * scan: ASan's strstr measures the whole rest at every call) */
		for (p = out; *p; p++) {
			long s;
			if (p[0] != ' ' || strncmp(p, " seq=", 5) != 0)
				continue;
			s = strtol(p + 5, &p, 10);
			assert_true(s > last[s & 1]);
			last[s & 1] = s;
			lines++;
			p--;
		}
		assert_int_equal(lines, rs.committed);
		free(out);
	}
	ringbuf_destroy(rb);
	(void)written;
}

static void drained_live_buffer_holds_every_committed_event_once(void **state)
{
	(void)state;
	live_run(6);
	live_run(7);
	if (!have_trace_cmd())
		skip(); /* the counts ran; trace-cmd report did not */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(stream_file_equals_export_of_the_same_pages, setup),
		cmocka_unit_test_setup(largest_cpu_file_becomes_the_result, setup),
		cmocka_unit_test_setup(memory_is_constant_in_the_number_of_pages, setup),
		cmocka_unit_test_setup(big_endian_and_32bit_files_read_like_native_ones, setup),
		cmocka_unit_test_setup(corrupt_pages_are_refused_and_the_file_stays_valid, setup),
		cmocka_unit_test_setup(abort_and_bad_arguments_leave_nothing, setup),
		cmocka_unit_test_setup(drain_batches_end_anywhere, setup),
		cmocka_unit_test_setup(failed_batch_write_breaks_the_writer, setup),
		cmocka_unit_test_setup(drained_live_buffer_holds_every_committed_event_once, setup),
		cmocka_unit_test_setup(buffer_counters_go_into_the_file, setup),
	};
	return cmocka_run_group_tests(tests, NULL, teardown_all);
}
