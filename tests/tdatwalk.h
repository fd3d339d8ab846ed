/* tdatwalk.h - walk a whole trace.dat of version 6 in this host's byte order:
 * its metadata skipped with every length checked, then every page of every
 * CPU through pagewalk.h (test_record_hostile.c, fuzz/fuzz_intake.c)
 * SPDX-License-Identifier: MIT   (licence text at the end of ringbuf.h)
 *
 * Include after pagewalk.h. No cmocka: the fuzz target uses it too. Never
 * reads outside the bytes given.
 */
#ifndef RINGBUF_TESTS_TDATWALK_H
#define RINGBUF_TESTS_TDATWALK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct tdat {
	const unsigned char *p;
	size_t len, pos;
	int bad;
};

/* a number of n = 2, 4 or 8 bytes in host order; sets bad past the end */
static inline uint64_t tdat_rd(struct tdat *t, unsigned n)
{
	uint64_t v = 0;
	uint32_t v32;
	uint16_t v16;
	if (t->bad || n > t->len - t->pos) {
		t->bad = 1;
		return 0;
	}
	if (n == 2) {
		memcpy(&v16, t->p + t->pos, 2);
		v = v16;
	} else if (n == 4) {
		memcpy(&v32, t->p + t->pos, 4);
		v = v32;
	} else {
		memcpy(&v, t->p + t->pos, 8);
	}
	t->pos += n;
	return v;
}

static inline void tdat_skip(struct tdat *t, uint64_t n)
{
	if (t->bad || n > t->len - t->pos)
		t->bad = 1;
	else
		t->pos += (size_t)n;
}

static inline void tdat_skip_str(struct tdat *t)
{
	size_t n;
	if (t->bad || t->pos >= t->len) {
		t->bad = 1;
		return;
	}
	n = strnlen((const char *)t->p + t->pos, t->len - t->pos);
	if (t->pos + n >= t->len)
		t->bad = 1;
	else
		t->pos += n + 1;
}

/* Skips a version 6 trace.dat's metadata up to its options (t->pos at the
 * first option's id): *page_size, *ncpu; sets bad where it is not one */
static inline void tdat_to_options_v6(struct tdat *t, uint32_t *page_size, unsigned *ncpu)
{
	unsigned nsys, nev;
	if (t->len < 14 || memcmp(t->p, "\x17\x08\x44tracing6", 11) != 0) {
		t->bad = 1;
		return;
	}
	t->pos = 14;
	*page_size = (uint32_t)tdat_rd(t, 4);
	tdat_skip_str(t); /* header_page */
	tdat_skip(t, tdat_rd(t, 8));
	tdat_skip_str(t); /* header_event */
	tdat_skip(t, tdat_rd(t, 8));
	nev = (unsigned)tdat_rd(t, 4); /* ftrace event formats */
	while (nev-- && !t->bad)
		tdat_skip(t, tdat_rd(t, 8));
	nsys = (unsigned)tdat_rd(t, 4);
	while (nsys-- && !t->bad) {
		tdat_skip_str(t);
		nev = (unsigned)tdat_rd(t, 4);
		while (nev-- && !t->bad)
			tdat_skip(t, tdat_rd(t, 8));
	}
	tdat_skip(t, tdat_rd(t, 4)); /* kallsyms */
	tdat_skip(t, tdat_rd(t, 4)); /* printk */
	tdat_skip(t, tdat_rd(t, 8)); /* cmdlines */
	*ncpu = (unsigned)tdat_rd(t, 4);
	tdat_skip_str(t); /* "options  " */
}

/* Where cpu's pages start in the version 6 trace.dat p[0, len) (its
 * flyrecord entry); UINT64_MAX: not such a file, or no such CPU. */
static inline uint64_t tdat_cpu_offset_v6(const unsigned char *p, size_t len, unsigned cpu)
{
	struct tdat t = {p, len, 0, 0};
	uint32_t page_size = 0;
	unsigned i, n = 0;
	uint64_t off = UINT64_MAX;
	tdat_to_options_v6(&t, &page_size, &n);
	for (i = 0; i < 64 && !t.bad && tdat_rd(&t, 2) != 0; i++)
		tdat_skip(&t, tdat_rd(&t, 4));
	tdat_skip_str(&t); /* "flyrecord" */
	for (i = 0; i < n && i <= cpu && !t.bad; i++) {
		off = tdat_rd(&t, 8);
		tdat_rd(&t, 8);
	}
	return t.bad || cpu >= n ? UINT64_MAX : off;
}

/* Walks the trace.dat in p[0, len): version 6, ncpu CPUs (0: any), every page
 * of every CPU valid for pagewalk (fn, if not NULL, gets each record). 0 with
 * *events (data records), else -1 with why[] saying what is wrong. */
static inline int tdat_walk_v6(const unsigned char *p, size_t len, unsigned ncpu,
			       int (*fn)(const struct pw_record *, void *), void *ctx, uint64_t *events,
			       char *why, size_t whylen)
{
	struct tdat t = {p, len, 0, 0};
	uint32_t page_size = 0;
	unsigned i, n = 0;
	*events = 0;
	if (len < 14 || memcmp(p, "\x17\x08\x44tracing6", 11) != 0) {
		snprintf(why, whylen, "not a version 6 trace.dat");
		return -1;
	}
	tdat_to_options_v6(&t, &page_size, &n);
	for (i = 0; i < 64 && !t.bad && tdat_rd(&t, 2) != 0; i++)
		tdat_skip(&t, tdat_rd(&t, 4));
	tdat_skip_str(&t); /* "flyrecord" */
	if (t.bad || i == 64 || page_size < 64 || (ncpu && n != ncpu)) {
		snprintf(why, whylen, "metadata: %s", t.bad ? "truncated" : i == 64 ? "options do not end"
							 : page_size < 64 ? "page size below 64" : "CPU count");
		return -1;
	}
	for (i = 0; i < n; i++) {
		uint64_t off = tdat_rd(&t, 8), size = tdat_rd(&t, 8), k;
		if (t.bad || off % page_size || size % page_size || off > len || size > len - off) {
			snprintf(why, whylen, "cpu %u: section out of the file or not whole pages", i);
			return -1;
		}
		for (k = 0; k < size / page_size; k++) {
			struct pw_page info;
			const char *err = NULL;
			memset(&info, 0, sizeof info);
			if (pw_walk_page(p + off + k * page_size, page_size, false, fn, ctx, &info, &err) != 0) {
				snprintf(why, whylen, "cpu %u page %llu: %s", i, (unsigned long long)k, err ? err : "?");
				return -1;
			}
			*events += info.ndata;
		}
	}
	return 0;
}

#endif /* RINGBUF_TESTS_TDATWALK_H */
