/* Reproducers for what the fuzz targets (fuzz/fuzz_page.c, fuzz/fuzz_ops.c)
 * found, as deterministic tests, so that a fix stays fixed without a fuzzer.
 *
 * 1. In 8-byte alignment mode (RINGBUF_F_ALIGN8) the record parser accepts a
 *    PADDING record whose length is a multiple of 4 but not of 8 (the check on
 *    data records has the 8-byte rule, the one on padding does not). A
 *    corrupted page (from a file, shared memory, a crash) with such a padding
 *    makes the reader hand out the next event's payload 4 bytes off the
 *    8-byte grid the API promises -- undefined behaviour for callers that read
 *    8-byte fields in place, a trap on strict-alignment machines (the reason
 *    the kernel kept its 8-byte mode, adab66b71abf). ringbuf.h never writes
 *    such a padding itself; tests/pagewalk.h rejects the page (PW_E_ALIGN).
 *    Expected: ringbuf_consume() reports RINGBUF_ECORRUPT for the page.
 *
 * 2. ringbuf_read_page() stores the output page's time_stamp and commit with
 *    atomic stores through a `struct ringbuf__dpage *` cast of the caller's
 *    buffer, so a caller buffer that is not 8-byte aligned (the API states no
 *    alignment requirement: "page (size >= ringbuf_page_size(rb))") is
 *    accessed misaligned: undefined behaviour, reported by
 *    -fsanitize=undefined ("member access within misaligned address ... for
 *    type 'struct ringbuf__dpage'"), and a bus error on strict-alignment
 *    machines. Expected: the page is written correctly at any alignment (the
 *    output page is private to the caller: plain memcpy stores suffice), or
 *    an alignment requirement is documented and a misaligned buffer refused
 *    with RINGBUF_EINVAL. This test fails under `make ubsan`.
 *
 * 3. (fuzz/fuzz_intake.c) ringbuf-record's corruption dump describes a copy
 *    of a block that failed its checks (rbrec_dump_text, >>diagnostics in
 *    tools/ringbuf-record.c). It checked that the per-CPU state, the page
 *    descriptors and the pages the copy's header names lie inside the copy,
 *    not that they are aligned: a header whose cpu_off is off the 64-byte
 *    grid (one byte of the traced process's) made it read the per-CPU struct
 *    misaligned (UBSan: "member access within misaligned address ... for type
 *    'struct ringbuf__cpu', which requires 64 byte alignment"). Expected: the
 *    header is reported as not usable, nothing is read through it.
 *    This test compiles the tool in (RINGBUF_RECORD_TOOL_NO_MAIN), which
 *    brings ringbuf.h with its implementation.
 *
 * 4. (fuzz/fuzz_intake.c) A block whose head page's prev names the reader
 *    page (one bit of the page descriptors changed; the reader page links to
 *    the head page, without the HEADER flag) passes ringbuf_recover (the
 *    validation checks that a prev is in range, not that it names the ring
 *    predecessor), and then the reader never finds the head page: find_head
 *    looks for the page whose prev links to it with HEADER. Every
 *    ringbuf_read_page answered RINGBUF_EAGAIN, for a block no writer can
 *    change any more; ringbuf-record's last drain retried it for 20 s per
 *    CPU (libFuzzer -timeout), and every live drain spent 100 x 64 tries
 *    with yields per CPU on it (seconds on a loaded machine). Expected: a
 *    reader refuses such a ring (RINGBUF_ECORRUPT: a ring page's prev must
 *    be its ring predecessor, which links to it), and recovery sets the
 *    prevs from the ring's links (or refuses the block); then the committed
 *    events are read.
 *
 * 5. (fuzz/fuzz_intake.c) The trace.dat writer's page check (A2,
 *    ringbuf_tracedat_check_page) took a page where a TIME_EXTEND is followed
 *    by another time record (or ends the page), which tests/pagewalk.h
 *    refuses ("time record not followed by an event") and the kernel never
 *    writes (a time record is reserved with its event): ringbuf-record wrote
 *    such a page of a corrupted buffer into the trace.dat. Expected:
 *    RINGBUF_ECORRUPT (the page left out and counted), as pagewalk.
 */
#define _GNU_SOURCE 1 /* as the tool defines it, and as all_impl.o is compiled */
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_RECORD_TOOL_NO_MAIN
#include "internal.h" /* the private names the tool and the test use (IMPL: shared) */
#include "tools/ringbuf-record.c"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "pagewalk.h"

static uint64_t now = 1000;
static uint64_t test_clock(void *ctx)
{
	(void)ctx;
	return now += 10;
}

static struct ringbuf *make(size_t page_size, unsigned flags)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	cfg.page_size = page_size;
	cfg.size_per_cpu = 3 * page_size;
	cfg.flags = flags;
	cfg.clock = test_clock;
	now = 1000;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	return rb;
}

static void quiet(const char *what, unsigned cpu, void *ctx)
{
	(void)what;
	(void)cpu;
	(void)ctx;
}

static void align8_page_with_4_mod_8_padding_is_rejected_not_misaligned(void **state)
{
	struct ringbuf *rb = make(128, RINGBUF_F_ALIGN8);
	struct ringbuf__cpu *c = ringbuf__cpu(rb, 0);
	struct ringbuf__dpage *dp;
	struct ringbuf_record rec;
	uint32_t payload[4] = {1, 2, 3, 4}, w;
	unsigned char *d;
	int r;
	(void)state;

	/* fill page 0 so that the tail moves on and page 0 is a complete head page */
	while (atomic_load(&c->tail_page) == 0)
		assert_int_equal(ringbuf_write(rb, 0, payload, 16), 0);
	/* corrupt it: a 12-byte padding, then a 24-byte data event (type 0,
	 * array[0] = 20: a multiple of 8 long, as in 8-byte mode), commit 36 */
	dp = ringbuf__dp(rb, 0, 0);
	d = dp->data;
	memset(d, 0, rb->bsize);
	w = 29u | (1u << 5); /* PADDING, delta 1 */
	memcpy(d, &w, 4);
	w = 8; /* array[0]: 8 more bytes -> a 12-byte record */
	memcpy(d + 4, &w, 4);
	w = 0; /* type_len 0, delta 0 */
	memcpy(d + 12, &w, 4);
	w = 20;
	memcpy(d + 16, &w, 4);
	atomic_store(&dp->commit, 36);
	{
		/* the independent validator refuses this page in 8-byte mode */
		struct pw_page info;
		const char *err = NULL;
		assert_int_equal(pw_walk_page(dp, 128, true, NULL, NULL, &info, &err), PW_E_ALIGN);
	}
	ringbuf_set_warn_hook(quiet, NULL);
	r = ringbuf_consume(rb, 0, &rec);
	ringbuf_set_warn_hook(NULL, NULL);
	if (r == 1)
		fail_msg("consume returned an event from a page the 8-byte format forbids, payload at "
			 "data offset %td (address %% 8 = %u)",
			 (const unsigned char *)rec.data - d, (unsigned)((uintptr_t)rec.data % 8));
	assert_int_equal(r, RINGBUF_ECORRUPT);
	ringbuf_destroy(rb);
}

static void read_page_into_a_buffer_that_is_not_8_byte_aligned(void **state)
{
	struct ringbuf *rb = make(256, 0);
	_Alignas(16) unsigned char buf[256 + 8];
	unsigned char *page = buf + 4; /* 4-byte aligned only */
	uint32_t payload[4] = {7, 8, 9, 10};
	struct pw_page info;
	const char *err = NULL;
	uint64_t ts;
	int r;
	(void)state;

	for (int i = 0; i < 3; i++)
		assert_int_equal(ringbuf_write(rb, 0, payload, 16), 0);
	r = ringbuf_read_page(rb, 0, page, 256, 0);
	if (r == RINGBUF_EINVAL) {
		/* acceptable if documented: the buffer must be aligned */
		ringbuf_destroy(rb);
		return;
	}
	assert_int_equal(r, 3 * 20);
	assert_int_equal(pw_walk_page(page, 256, false, NULL, NULL, &info, &err), 0);
	assert_int_equal(info.ndata, 3);
	assert_int_equal(info.commit, 60);
	memcpy(&ts, page, 8);
	assert_int_equal(ts, 1010);
	ringbuf_destroy(rb);
}

/* The dump's text of a copy of rb's block whose header field at off is
 * moved by delta bytes (a 4096-aligned copy, as rbrec_dump makes it). */
static char *dump_text_moved(struct ringbuf *rb, size_t off, uint64_t delta)
{
	size_t len = (size_t)rb->total_size, n = 0;
	unsigned char *copy = NULL;
	char *text = NULL;
	uint64_t v;
	FILE *f;
	assert_int_equal(posix_memalign((void **)&copy, 4096, len), 0);
	memcpy(copy, rb, len);
	memcpy(&v, copy + off, 8);
	v += delta;
	memcpy(copy + off, &v, 8);
	f = open_memstream(&text, &n);
	assert_non_null(f);
	rbrec_dump_text(f, (struct ringbuf *)(void *)copy, len);
	fclose(f);
	free(copy);
	return text;
}

static void record_dump_refuses_a_misaligned_header(void **state)
{
	struct ringbuf *rb = make(128, 0);
	uint32_t payload[4] = {1, 2, 3, 4};
	const size_t fields[] = {offsetof(struct ringbuf, cpu_off), offsetof(struct ringbuf, bpage_off),
				 offsetof(struct ringbuf, data_off)};
	char *text;
	unsigned i;
	(void)state;
	assert_int_equal(ringbuf_write(rb, 0, payload, 16), 0);
	/* the copy as it is: described */
	text = dump_text_moved(rb, fields[0], 0);
	assert_non_null(strstr(text, "cpu 0: reader"));
	free(text);
	/* each offset 32 bytes on (still inside the block, off the grid) */
	for (i = 0; i < 3; i++) {
		text = dump_text_moved(rb, fields[i], i == 0 ? 32 : 4);
		if (!strstr(text, "header not usable"))
			fail_msg("field %u moved off its alignment: the dump read through it:\n%.200s", i, text);
		free(text);
	}
	ringbuf_destroy(rb);
}

/* A buffer of 3 ring pages, the head page full of events, whose head page's
 * prev names the reader page, which links to the head (no flag). */
static struct ringbuf *make_prev_hides_head(int *written)
{
	struct ringbuf *rb = make(128, 0);
	struct ringbuf__cpu *c = ringbuf__cpu(rb, 0);
	uint32_t payload[4] = {1, 2, 3, 4}, n = rb->nr_pages, rp, head = n + 1, i;
	*written = 0;
	/* two pages full, the third started: the head page holds events */
	while (atomic_load(&c->tail_page) != 2) {
		assert_int_equal(ringbuf_write(rb, 0, payload, 16), 0);
		++*written;
	}
	assert_int_equal(ringbuf_write(rb, 0, payload, 16), 0);
	++*written;
	rp = atomic_load(&c->reader_page);
	for (i = 0; i <= n; i++) {
		uint64_t l = atomic_load(&ringbuf__bp(rb, 0, i)->next);
		if (i != rp && (l & RINGBUF__F_MASK) == RINGBUF__F_HEADER)
			head = ringbuf__link_idx(l);
	}
	assert_true(head <= n && head != rp);
	ringbuf__bp(rb, 0, head)->prev = rp;
	atomic_store(&ringbuf__bp(rb, 0, rp)->next,
		     ringbuf__link_make(atomic_load(&ringbuf__bp(rb, 0, rp)->next), head, 0));
	return rb;
}

static void recovery_repairs_a_prev_that_hides_the_head(void **state)
{
	unsigned char page[128];
	int r, written, events = 0, tries;
	struct ringbuf *rb = make_prev_hides_head(&written);
	(void)state;

	ringbuf_set_warn_hook(quiet, NULL);
	/* read as it is (a live recorder, no recovery): a clear error */
	r = ringbuf_read_page(rb, 0, page, sizeof page, 0);
	if (r == RINGBUF_EAGAIN)
		fail_msg("read_page answers RINGBUF_EAGAIN for a head no writer can ever make visible");
	assert_int_equal(r, RINGBUF_ECORRUPT);
	ringbuf_destroy(rb);

	/* recovered (the writers gone): every event read */
	rb = make_prev_hides_head(&written);
	r = ringbuf_recover(rb);
	if (r == 0) {
		for (tries = 0; tries < 16; tries++) {
			struct pw_page info;
			const char *err = NULL;
			r = ringbuf_read_page(rb, 0, page, sizeof page, 0);
			if (r <= 0)
				break;
			assert_int_equal(pw_walk_page(page, sizeof page, false, NULL, NULL, &info, &err), 0);
			events += (int)info.ndata;
		}
		if (r == RINGBUF_EAGAIN)
			fail_msg("recovered block: read_page answers RINGBUF_EAGAIN (no writer left: the "
				 "head page cannot be found), %d of %d events read", events, written);
		assert_int_equal(r, 0);
		assert_int_equal(events, written);
	} else {
		assert_int_equal(r, RINGBUF_ECORRUPT); /* refusing it is fine too */
	}
	ringbuf_set_warn_hook(NULL, NULL);
	ringbuf_destroy(rb);
}

/* A page of 64 bytes (this host's order and long) holding the records w[];
 * header words are built with H(type, delta): the kernel's layout for this
 * host's byte order (type_len in the low 5 bits on little-endian, the top 5
 * on big-endian, as RINGBUF__HDR_WORD writes them). */
#define H(type, delta) RINGBUF__HDR_WORD(type, delta)
static void time_page(unsigned char *pg, const uint32_t *w, unsigned n)
{
	uint64_t ts = 1000, commit = 4 * n;
	memset(pg, 0, 64);
	memcpy(pg, &ts, 8);
	memcpy(pg + 8, &commit, sizeof(long));
	memcpy(pg + 8 + sizeof(long), w, 4 * n);
}

static void tracedat_refuses_a_time_record_without_its_event(void **state)
{
	/* records: TIME_EXTEND (type 30) = 2 words, data of 4 bytes (type 1) = 2 words */
	const uint32_t ext_data[] = {H(30, 1), 0, H(1, 0), 0xabcd};
	const uint32_t ext_ext_data[] = {H(30, 1), 0, H(30, 2), 0, H(1, 0), 0xabcd};
	const uint32_t data_ext[] = {H(1, 0), 0xabcd, H(30, 1), 0};
	const uint32_t stamp_ext_data[] = {H(31, 2000), 0, H(30, 1), 0, H(1, 0), 0xabcd};
	unsigned char pg[64];
	struct pw_page info;
	const char *err;
	uint64_t ev = 0;
	(void)state;

	time_page(pg, ext_data, 4); /* the kernel's shape */
	assert_int_equal(pw_walk_page(pg, 64, false, NULL, NULL, &info, &err), 0);
	assert_int_equal(ringbuf_tracedat_check_page(pg, 64, PW_BIG_ENDIAN, sizeof(long), &ev, NULL), 0);
	assert_int_equal(ev, 1);

	time_page(pg, ext_ext_data, 6);
	assert_int_equal(pw_walk_page(pg, 64, false, NULL, NULL, &info, &err), PW_E_EXTEND);
	assert_int_equal(ringbuf_tracedat_check_page(pg, 64, PW_BIG_ENDIAN, sizeof(long), NULL, NULL), RINGBUF_ECORRUPT);

	time_page(pg, data_ext, 4); /* a time record last */
	assert_int_equal(pw_walk_page(pg, 64, false, NULL, NULL, &info, &err), PW_E_EXTEND);
	assert_int_equal(ringbuf_tracedat_check_page(pg, 64, PW_BIG_ENDIAN, sizeof(long), NULL, NULL), RINGBUF_ECORRUPT);

	time_page(pg, stamp_ext_data, 6);
	assert_int_equal(pw_walk_page(pg, 64, false, NULL, NULL, &info, &err), PW_E_EXTEND);
	assert_int_equal(ringbuf_tracedat_check_page(pg, 64, PW_BIG_ENDIAN, sizeof(long), NULL, NULL), RINGBUF_ECORRUPT);
}

/* Found reading the check beside pagewalk (the same kind as 5): a type_len 0
 * record whose array[0] is not a multiple of 4 was rounded up and taken;
 * ringbuf.h's own parser and pagewalk refuse it. */
static void tracedat_refuses_an_unaligned_type0_length(void **state)
{
	/* type 0, array[0] 8 (itself and 4 payload bytes), then a type 1 event */
	const uint32_t ok[] = {H(0, 0), 8, 0x1234, H(1, 0), 0xabcd};
	const uint32_t odd[] = {H(0, 0), 7, 0x1234, H(1, 0), 0xabcd}; /* array[0] 7 */
	unsigned char pg[64];
	struct pw_page info;
	const char *err;
	(void)state;
	time_page(pg, ok, 5);
	assert_int_equal(pw_walk_page(pg, 64, false, NULL, NULL, &info, &err), 0);
	assert_int_equal(ringbuf_tracedat_check_page(pg, 64, PW_BIG_ENDIAN, sizeof(long), NULL, NULL), 0);
	time_page(pg, odd, 5);
	assert_int_not_equal(pw_walk_page(pg, 64, false, NULL, NULL, &info, &err), 0);
	assert_int_equal(ringbuf_tracedat_check_page(pg, 64, PW_BIG_ENDIAN, sizeof(long), NULL, NULL), RINGBUF_ECORRUPT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(align8_page_with_4_mod_8_padding_is_rejected_not_misaligned),
		cmocka_unit_test(read_page_into_a_buffer_that_is_not_8_byte_aligned),
		cmocka_unit_test(record_dump_refuses_a_misaligned_header),
		cmocka_unit_test(recovery_repairs_a_prev_that_hides_the_head),
		cmocka_unit_test(tracedat_refuses_a_time_record_without_its_event),
		cmocka_unit_test(tracedat_refuses_an_unaligned_type0_length),
	};
	(void)ringbuf_record_main; /* the whole tool comes with rbrec_dump_text */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
