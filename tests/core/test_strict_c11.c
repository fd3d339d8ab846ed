/* ringbuf_create in a unit built as strict C11 (-std=c11, no feature macro
 * before the first include), where glibc's <sys/mman.h> defines neither
 * MAP_ANONYMOUS nor its internal __MAP_ANONYMOUS: the buffer must still be a
 * fresh anonymous mapping that costs no memory until written, not the
 * allocator's memory with every page header written. Before, the
 * implementation found no name for the flag and fell back to the allocator:
 * every data page resident (8208 of 8208 in the issue 25 build, which
 * linked an implementation object compiled this way). Counts pages, not time.
 */
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include <sys/mman.h>
#include <unistd.h>

/* hidden by strict -std=c11 in glibc; the same prototype as glibc's */
extern int mincore(void *addr, size_t length, unsigned char *vec);

static void strict_c11_create_is_an_untouched_anonymous_mapping(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), n, i, res = 0;
	const char *data;
	uintptr_t a;
	size_t len;
	unsigned char *vec;
	(void)state;
#ifdef MAP_ANONYMOUS
	print_message("  (MAP_ANONYMOUS is visible in this build: the strict case is not exercised)\n");
#endif
	cfg.ncpu = 4;
	cfg.size_per_cpu = (size_t)8 << 20;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	assert_int_equal(rb->owned, 3); /* ringbuf_create's anonymous mapping, not RINGBUF_MALLOC (1) */
	data = (const char *)rb + rb->data_off;
	len = (size_t)(rb->user_off - rb->data_off);
	a = (uintptr_t)data & ~(uintptr_t)(ps - 1);
	len += (uintptr_t)data - a;
	n = (len + ps - 1) / ps;
	vec = malloc(n);
	assert_non_null(vec);
	assert_int_equal(mincore((void *)a, n * ps, vec), 0);
	for (i = 0; i < n; i++)
		res += vec[i] & 1;
	free(vec);
	print_message("  strict C11: %zu of %zu data pages resident\n", res, n);
	assert_true(res <= 1);
	assert_int_equal(ringbuf_write(rb, 0, &res, sizeof res), 0);
	ringbuf_destroy(rb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(strict_c11_create_is_an_untouched_anonymous_mapping),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
