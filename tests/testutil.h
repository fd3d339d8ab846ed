/* testutil.h - small helpers shared by the tests of ringbuf.h
 * SPDX-License-Identifier: MIT   (licence text at the end of ringbuf.h)
 *
 * Include after ringbuf.h and <cmocka.h>. Everything is static inline: a test
 * that does not use a helper gets no warning for it.
 */
#ifndef RINGBUF_TESTS_TESTUTIL_H
#define RINGBUF_TESTS_TESTUTIL_H

/* Consume every record of cpu, each an unsigned counting 0, 1, 2...;
 * returns how many. */
static inline unsigned consume_seq(struct ringbuf *rb, unsigned cpu)
{
	struct ringbuf_record rec;
	unsigned n = 0;
	int r;
	while ((r = ringbuf_consume(rb, cpu, &rec)) > 0) {
		assert_int_equal(*(const unsigned *)rec.data, n);
		n++;
	}
	assert_int_equal(r, 0);
	return n;
}

/* strstr(s, needle) without the C library, for loops that walk a long text
 * match by match. The sanitizers' strstr checks the whole rest of s on each
 * call (it takes its length first), so `for (p = out; (p = strstr(p, x));
 * p++)` over a tool's 2 MB output is quadratic under them: test_record_net
 * spent 200 of its 207 s under TSan there. This one reads only up to the
 * match. */
static inline const char *find_next(const char *s, const char *needle)
{
	for (; *s; s++) {
		size_t i = 0;
		while (needle[i] && s[i] == needle[i])
			i++;
		if (!needle[i])
			return s;
	}
	return NULL;
}

#endif /* RINGBUF_TESTS_TESTUTIL_H */
