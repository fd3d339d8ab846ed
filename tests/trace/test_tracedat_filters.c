/* Event filters in trace.dat files (ringbuf_trace.h >>tracedat FILTERS): the
 * in-memory export and ringbuf_tracedat.h's streaming writer write the filter
 * text of every event that has one, v6 and v7, any byte order and long;
 * ringbuf_trace_tracedat_filters() gives them back exactly; a file without
 * filters is byte for byte what it was before; trace-cmd report reads files
 * with filters as it reads them without; truncated or corrupted files give
 * an error, never a crash.
 *
 * The trace-cmd parts are skipped without trace-cmd (they fail under CI=true).
 */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#define RINGBUF_TRACE_DEFINE_EVENTS
#include "ringbuf_tracedat.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <cmocka.h>

#include "tracedat_util.h"

/* tick and note, and reg: tracedat_util.h */
RINGBUF_TRACE_EVENT(idle, RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, seq)), RINGBUF_PRINT("seq=%u", REC->seq));

#define TICK_FILTER "seq < 50 && big != 3"
#define NOTE_FILTER "text ~ \"a*\" || (seq & 1)"

/* ---- collecting what the reader gives back ---------------------------------- */

struct got {
	int n;
	char text[1024];
};

static int collect(void *ctx, const char *event, const char *filter)
{
	struct got *g = (struct got *)ctx;
	size_t l = strlen(g->text);
	g->n++;
	snprintf(g->text + l, sizeof g->text - l, "%s: %s\n", event, filter);
	return 0;
}

static int read_filters(const char *path, struct got *g)
{
	memset(g, 0, sizeof *g);
	return ringbuf_trace_tracedat_filters(path, collect, g);
}

static int stop_at_first(void *ctx, const char *event, const char *filter)
{
	(void)event;
	(void)filter;
	++*(int *)ctx;
	return 1;
}

static struct ringbuf *filled_rb(void)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	uint32_t i;
	cfg.ncpu = 2;
	cfg.size_per_cpu = 64 << 10;
	cfg.page_size = 4096;
	cfg.clock = test_clock;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	for (i = 0; i < 80; i++) { /* written before any filter: all recorded */
		now = 1000000000ull + (uint64_t)i * 1000;
		if (i & 1)
			assert_int_equal(trace_note(rb, i & 2 ? 1 : 0, i, i & 4 ? "abc" : "xyz"), 1);
		else
			assert_int_equal(trace_tick(rb, i & 2 ? 1 : 0, i, (int64_t)i), 1);
	}
	return rb;
}

static void save(struct ringbuf *rb, const struct ringbuf_trace_capture *cap, const char *file, int version)
{
	struct ringbuf_trace_tracedat_opts o = RINGBUF_TRACE_TRACEDAT_INIT;
	o.version = version;
	o.capture = cap;
	o.flags = RINGBUF_TRACE_TRACEDAT_NO_DRAIN;
	assert_int_equal(ringbuf_trace_save_tracedat(rb, &reg, path_of(file), &o), 0);
}

static void files_equal(const char *a, const char *b, bool equal)
{
	size_t la, lb;
	unsigned char *pa = read_file(path_of(a), &la), *pb = read_file(path_of(b), &lb);
	if (equal) {
		assert_int_equal(la, lb);
		assert_memory_equal(pa, pb, la);
	} else {
		assert_true(la != lb || memcmp(pa, pb, la) != 0);
	}
	free(pa);
	free(pb);
}

static int setup(void **state)
{
	int first = tracedat_setup_once("/tmp/ringbuf-tdfilter-XXXXXX");
	(void)state;
	if (first < 0 || (first == 1 && ringbuf_trace_register_event(&reg, &ringbuf_event_idle) < 0))
		return -1;
	/* each test starts without filters */
	return ringbuf_trace_set_filter(&reg, "*", NULL, NULL) < 0 ? -1 : 0;
}

/* ---- the in-memory export ---------------------------------------------------- */

static void export_carries_the_filters_v6_and_v7(void **state)
{
	struct ringbuf *rb = filled_rb();
	struct ringbuf_trace_capture *cap = NULL;
	struct ringbuf_trace_filter_error err;
	struct got g;
	int v, calls = 0;
	(void)state;
	assert_int_equal(ringbuf_trace_capture_create(rb, &cap), 0);
	assert_true(ringbuf_trace_capture_read(cap, rb, RINGBUF_ALL_CPUS, 0) > 0);
	for (v = 6; v <= 7; v++) {
		char plain[32], both[32], one[32], cleared[32];
		snprintf(plain, sizeof plain, "plain%d.dat", v);
		snprintf(both, sizeof both, "both%d.dat", v);
		snprintf(one, sizeof one, "one%d.dat", v);
		snprintf(cleared, sizeof cleared, "cleared%d.dat", v);

		save(rb, cap, plain, v);
		assert_int_equal(read_filters(path_of(plain), &g), 0);
		assert_string_equal(g.text, "");

		assert_int_equal(ringbuf_trace_set_filter(&reg, "tick", TICK_FILTER, &err), 1);
		assert_int_equal(ringbuf_trace_set_filter(&reg, "note", NOTE_FILTER, &err), 1);
		save(rb, cap, both, v);
		assert_int_equal(read_filters(path_of(both), &g), 2);
		/* id order (registration order), the text as set */
		assert_string_equal(g.text, "tick: " TICK_FILTER "\nnote: " NOTE_FILTER "\n");
		files_equal(plain, both, false);
		/* fn returning nonzero stops the walk */
		assert_int_equal(ringbuf_trace_tracedat_filters(path_of(both), stop_at_first, &calls), 1);
		assert_int_equal(calls, 1);
		calls = 0;

		assert_int_equal(ringbuf_trace_set_filter(&reg, "tick", "", &err), 1);
		save(rb, cap, one, v);
		assert_int_equal(read_filters(path_of(one), &g), 1);
		assert_string_equal(g.text, "note: " NOTE_FILTER "\n");

		/* no filter left: the file of before, byte for byte */
		assert_int_equal(ringbuf_trace_set_filter(&reg, "*", NULL, &err), 3);
		save(rb, cap, cleared, v);
		assert_int_equal(read_filters(path_of(cleared), &g), 0);
		files_equal(plain, cleared, true);

		if (have_trace_cmd()) {
			/* the option changes nothing in the report */
			char *a = run("trace-cmd report %s", path_of(plain));
			char *b = run("trace-cmd report %s", path_of(both));
			char *d = run("trace-cmd dump --options %s", path_of(both));
			assert_string_equal(a, b);
			assert_int_equal(count_lines(b, ": tick:") + count_lines(b, ": note:"), 80);
			assert_int_equal(count_lines(b, "UNKNOWN"), 0);
			assert_int_equal(count_lines(b, "nknown option"), 0);
			assert_int_equal(count_lines(d, "21062"), 1); /* skipped as unknown */
			free(a);
			free(b);
			free(d);
		}
	}
	ringbuf_trace_capture_destroy(cap);
	ringbuf_destroy(rb);
	if (!have_trace_cmd())
		skip(); /* the filter checks ran; trace-cmd report did not */
}

/* ---- the streaming writer ---------------------------------------------------- */

static void streaming_writer_carries_the_same_filters(void **state)
{
	struct ringbuf *rb = filled_rb();
	struct ringbuf_trace_capture *cap = NULL;
	struct got g;
	int v, be;
	(void)state;
	assert_int_equal(ringbuf_trace_capture_create(rb, &cap), 0);
	assert_true(ringbuf_trace_capture_read(cap, rb, RINGBUF_ALL_CPUS, 0) > 0);
	assert_int_equal(ringbuf_trace_set_filter(&reg, "tick", TICK_FILTER, NULL), 1);
	assert_int_equal(ringbuf_trace_set_filter(&reg, "note", NOTE_FILTER, NULL), 1);
	for (v = 6; v <= 7; v++)
		for (be = 0; be <= 1; be++) {
			struct ringbuf_tracedat_info info;
			struct ringbuf_tracedat *w;
			char name[32];
			unsigned cpu;
			size_t i;
			assert_int_equal(ringbuf_tracedat_info_of(rb, &reg, &info), 0);
			info.version = v;
			snprintf(name, sizeof name, "stream%d%s.dat", v, be ? "be32" : "");
			if (be) { /* another machine's file: no pages of this host in it */
				info.big_endian = !info.big_endian;
				info.long_size = info.long_size == 8 ? 4 : 8;
				info.cmdlines = "4242 producer\n";
			}
			assert_int_equal(ringbuf_tracedat_open(path_of(name), &info, &w), 0);
			for (cpu = 0; cpu < 2 && !be; cpu++)
				for (i = 0; i < ringbuf_trace_capture_pages(cap, cpu); i++)
					assert_int_equal(ringbuf_tracedat_add_page(w, cpu, ringbuf_trace_capture_page(cap, cpu, i),
										   4096), 1);
			assert_int_equal(ringbuf_tracedat_finish(w, NULL), 0);
			assert_int_equal(read_filters(path_of(name), &g), 2);
			assert_string_equal(g.text, "tick: " TICK_FILTER "\nnote: " NOTE_FILTER "\n");
			if (!be) { /* the in-memory export of the same pages: the same bytes */
				char mem[32];
				snprintf(mem, sizeof mem, "mem%d.dat", v);
				save(rb, cap, mem, v);
				files_equal(mem, name, true);
			}
			if (have_trace_cmd()) {
				char *out = run("trace-cmd report %s", path_of(name));
				assert_int_equal(count_lines(out, ": tick:") + count_lines(out, ": note:"), be ? 0 : 80);
				assert_int_equal(count_lines(out, "UNKNOWN"), 0);
				assert_int_equal(count_lines(out, "rror"), 0);
				assert_int_equal(count_lines(out, "failed"), 0);
				free(out);
			}
		}
	ringbuf_trace_capture_destroy(cap);
	ringbuf_destroy(rb);
	if (!have_trace_cmd())
		skip();
}

/* ---- bad input ------------------------------------------------------------------ */

static void write_bytes(const char *path, const unsigned char *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

/* The walk is bounded by the file: every truncation and every corrupted byte
 * of the metadata gives RINGBUF_ECORRUPT or a count, never a crash or a read
 * out of bounds (the sanitizer builds check the latter). */
static void truncated_or_corrupt_files_give_an_error(void **state)
{
	struct ringbuf *rb = filled_rb();
	struct ringbuf_trace_capture *cap = NULL;
	struct got g;
	int v;
	(void)state;
	assert_int_equal(ringbuf_trace_capture_create(rb, &cap), 0);
	assert_true(ringbuf_trace_capture_read(cap, rb, RINGBUF_ALL_CPUS, 0) > 0);
	assert_int_equal(ringbuf_trace_set_filter(&reg, "tick", TICK_FILTER, NULL), 1);
	assert_int_equal(ringbuf_trace_set_filter(&reg, "note", NOTE_FILTER, NULL), 1);
	for (v = 6; v <= 7; v++) {
		char name[32];
		size_t len, n, meta, pos;
		unsigned char *p;
		int fd;
		snprintf(name, sizeof name, "good%d.dat", v);
		save(rb, cap, name, v);
		p = read_file(path_of(name), &len);
		/* the metadata: up to the zeros before the first page (4096), and
		 * v7's OPTIONS section in the last bytes */
		for (meta = 4096; meta > 0 && p[meta - 1] == 0; meta--)
			;
		meta += 8;
		fd = open(path_of("bad.dat"), O_RDWR | O_CREAT | O_TRUNC, 0600);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, p, len), (ssize_t)len);
		for (n = len; n-- > 0;) { /* shorter and shorter: the prefix stays */
			int r;
			if (n >= meta && n < len - 400 && n % 4096 != 0)
				continue;
			assert_int_equal(ftruncate(fd, (off_t)n), 0);
			r = read_filters(path_of("bad.dat"), &g);
			if (v == 7 || n < meta)
				assert_true(r == RINGBUF_ECORRUPT || (v == 6 && r == 2)); /* v6: the options were in */
			else
				assert_int_equal(r, 2);
		}
		assert_int_equal(pwrite(fd, p, len, 0), (ssize_t)len);
		for (pos = 0; pos < len; pos = pos < meta || pos >= len - 400 ? pos + 1 : len - 400) {
			static const unsigned char flip[] = {0xff, 0x00, 0x80};
			unsigned k;
			for (k = 0; k < sizeof flip; k++) {
				int r;
				if (p[pos] == flip[k])
					continue;
				assert_int_equal(pwrite(fd, &flip[k], 1, (off_t)pos), 1);
				r = read_filters(path_of("bad.dat"), &g);
				if (!(r == RINGBUF_ECORRUPT || r >= 0)) /* a count: the walk was still well-formed */
					fail_msg("v%d pos %zu flip %u: %d", v, pos, k, r);
			}
			assert_int_equal(pwrite(fd, &p[pos], 1, (off_t)pos), 1);
		}
		close(fd);
		free(p);
	}
	/* not a trace.dat, arguments */
	write_bytes(path_of("junk.dat"), (const unsigned char *)"hello, world, not a trace.dat at all", 36);
	assert_int_equal(read_filters(path_of("junk.dat"), &g), RINGBUF_ECORRUPT);
	write_bytes(path_of("empty.dat"), (const unsigned char *)"", 0);
	assert_int_equal(read_filters(path_of("empty.dat"), &g), RINGBUF_ECORRUPT);
	assert_int_equal(read_filters(path_of("missing.dat"), &g), RINGBUF_ESYS);
	assert_int_equal(ringbuf_trace_tracedat_filters(NULL, collect, &g), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_trace_tracedat_filters(path_of("good6.dat"), NULL, NULL), RINGBUF_EINVAL);
	ringbuf_trace_capture_destroy(cap);
	ringbuf_destroy(rb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(export_carries_the_filters_v6_and_v7, setup),
		cmocka_unit_test_setup(streaming_writer_carries_the_same_filters, setup),
		cmocka_unit_test_setup(truncated_or_corrupt_files_give_an_error, setup),
	};
	return cmocka_run_group_tests(tests, NULL, teardown_all);
}
