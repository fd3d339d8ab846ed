/* tracedat_util.h - helpers of the trace.dat tests: files in a temporary
 * directory, running trace-cmd, reading its output
 * SPDX-License-Identifier: MIT   (licence text at the end of ringbuf.h)
 *
 * Include after ringbuf_trace.h (included with RINGBUF_TRACE_DEFINE_EVENTS:
 * the events below are defined here) and <cmocka.h> (and stdio, stdlib,
 * string, stdarg). The test creates tmpdir (mkdtemp) in its setup, or
 * tracedat_setup_once() does; path_of() names files in it. Every function is
 * static inline: a test that does not use a helper gets no warning for it.
 */
#ifndef RINGBUF_TESTS_TRACEDAT_UTIL_H
#define RINGBUF_TESTS_TRACEDAT_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[64];

/* The events the trace.dat tests share, and the registry they go in */
RINGBUF_TRACE_EVENT(tick, RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, seq), RINGBUF_FIELD(int64_t, big)),
		    RINGBUF_PRINT("seq=%u big=%lld", REC->seq, (long long)REC->big));
RINGBUF_TRACE_EVENT(note, RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, seq), RINGBUF_STRING(text)),
		    RINGBUF_PRINT("seq=%u text=%s", REC->seq, __get_str(text)));

static struct ringbuf_trace_registry reg = RINGBUF_TRACE_REGISTRY_INIT("ringbuf");

/* Setup: the first call makes tmpdir from tmpl ("/tmp/NAME-XXXXXX") and
 * registers tick and note in reg (in that order) and returns 1; later calls
 * return 0; -1 if either fails. */
static inline int tracedat_setup_once(const char *tmpl)
{
	if (tmpdir[0])
		return 0;
	snprintf(tmpdir, sizeof tmpdir, "%s", tmpl);
	if (!mkdtemp(tmpdir))
		return -1;
	if (ringbuf_trace_register_event(&reg, &ringbuf_event_tick) < 0 ||
	    ringbuf_trace_register_event(&reg, &ringbuf_event_note) < 0)
		return -1;
	return 1;
}

/* The tests' clock (single-threaded tests set now before each event). */
static uint64_t now;
static inline uint64_t test_clock(void *ctx)
{
	(void)ctx;
	return now;
}

/* tmpdir/name, in one of 4 rotating buffers */
static inline char *path_of(const char *name)
{
	static char buf[4][160];
	static int k;
	char *b = buf[k++ & 3];
	snprintf(b, sizeof buf[0], "%s/%s", tmpdir, name);
	return b;
}

/* Group teardown: remove tmpdir and what is in it (KEEP=1 in the
 * environment keeps it, to look at the files). */
static inline int teardown_all(void **state)
{
	char cmd[128];
	(void)state;
	if (tmpdir[0]) {
		snprintf(cmd, sizeof cmd, getenv("KEEP") ? "true %s" : "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			return -1;
	}
	return 0;
}

/* Is trace-cmd installed? Under CI=true its absence fails the test. */
static inline bool have_trace_cmd(void)
{
	static int have = -1;
	if (have < 0)
		have = system("command -v trace-cmd >/dev/null 2>&1") == 0;
	if (!have) {
		const char *ci = getenv("CI");
		if (ci && strcmp(ci, "true") == 0)
			fail_msg("trace-cmd is not installed (required under CI=true)");
	}
	return have;
}

/* The test needs trace-cmd: skipped without it (failed under CI=true). */
#define NEED_TRACE_CMD()                 \
	do {                             \
		if (!have_trace_cmd())   \
			skip();          \
	} while (0)

/* Output (stdout and stderr) of a shell command; caller frees. */
static inline char *run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline char *run(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	FILE *p;
	size_t len = 0, cap = 65536;
	char *out = malloc(cap);
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	strcat(cmd, " 2>&1");
	assert_non_null(out);
	p = popen(cmd, "r");
	assert_non_null(p);
	for (;;) {
		size_t n;
		if (cap - len < 4096) {
			cap *= 2;
			out = realloc(out, cap);
			assert_non_null(out);
		}
		n = fread(out + len, 1, cap - len - 1, p);
		if (n == 0)
			break;
		len += n;
	}
	out[len] = 0;
	pclose(p);
	return out;
}

/* The whole file (one byte more allocated); caller frees. */
static inline unsigned char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *p;
	long n;
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	p = malloc((size_t)n + 1);
	assert_non_null(p);
	assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return p;
}

/* Occurrences of needle in out (not strstr in a loop: ASan's strstr measures
 * the whole haystack at every call). Overlapping ones count: the tests'
 * needles cannot overlap themselves. */
static inline int count_lines(const char *out, const char *needle)
{
	size_t m = strlen(needle);
	int n = 0;
	const char *p;
	for (p = out; *p; p++)
		if (*p == needle[0] && strncmp(p, needle, m) == 0)
			n++;
	return n;
}

#endif /* RINGBUF_TESTS_TRACEDAT_UTIL_H */
