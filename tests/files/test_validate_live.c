/* Opening a file-backed block while its writer runs (ringbuf-record opens a
 * live block, RINGBUF_OPEN_RDWR): the validation must not call a sound block
 * corrupt because the writer moved the tail or the head under its walk of the
 * ring. Deterministic: test points stop the validation at V1 (tail loaded,
 * before the walk) and V2 (first pass over the links done) while the writer,
 * through the creator's own mapping of the same file, fills pages, in
 * producer/consumer mode (the tail moves) and in overwrite mode (the tail
 * moves and the head is pushed: flags move under the walk). Before the fix,
 * the tail moved at V1 made every open fail with RINGBUF_ECORRUPT.
 */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"
#include "internal.h" /* the implementation's private names (IMPL: shared) */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

static char path[256];

struct live {
	struct ringbuf *w; /* the writer's handle (the creator's mapping) */
	int point;         /* where to write */
	unsigned pages;    /* pages to fill there */
	unsigned hits;     /* times the point was reached on CPU 0 */
	uint32_t seq;
};

static void write_pages(struct live *l, unsigned pages)
{
	struct ringbuf_stats a, b;
	assert_int_equal(ringbuf_stats_cpu(l->w, 0, &a), 0);
	do { /* count pages, not time: until the tail entered `pages` new ones */
		uint32_t *ev = (uint32_t *)ringbuf_reserve(l->w, 0, 64);
		if (ev) {
			memset(ev, 0, 64);
			ev[0] = l->seq++;
			ringbuf_commit(l->w, 0, ev);
		}
		assert_int_equal(ringbuf_stats_cpu(l->w, 0, &b), 0);
	} while (b.pages_touched < a.pages_touched + pages);
}

static void hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	struct live *l = (struct live *)ctx;
	(void)rb;
	if (cpu != 0 || point != l->point)
		return;
	if (l->hits++ == 0) /* the first walk only: later tries see a still writer */
		write_pages(l, l->pages);
}

static void open_while_writing(int mode, int point, unsigned pages, unsigned prefill)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct live l;
	struct ringbuf *r = NULL;
	struct ringbuf_record rec;
	uint64_t n = 0;
	int rc;
	memset(&l, 0, sizeof l);
	snprintf(path, sizeof path, "/tmp/ringbuf-validate-live-%d.rb", (int)getpid());
	unlink(path);
	cfg.ncpu = 1;
	cfg.size_per_cpu = 8 * 4096;
	cfg.page_size = 4096;
	cfg.mode = mode;
	assert_int_equal(ringbuf_create_file(path, &cfg, &l.w), 0);
	write_pages(&l, prefill); /* overwrite mode: a full ring, every page move pushes the head */
	l.point = point;
	l.pages = pages;
	ringbuf__set_testpoint_hook(hook, &l);
	rc = ringbuf_open_file(path, RINGBUF_OPEN_RDWR, &r);
	ringbuf__set_testpoint_hook(NULL, NULL);
	assert_int_equal(l.hits >= 1, 1);
	assert_int_equal(rc, 0);
	/* and the block reads as the writer left it */
	while ((rc = ringbuf_consume(r, 0, &rec)) == 1)
		n++;
	assert_int_equal(rc, 0);
	assert_true(n > 0);
	ringbuf_destroy(r);
	ringbuf_destroy(l.w);
	unlink(path);
}

/* V1: the tail moves by a page after it was loaded (the old check compared
 * the end of its walk with a second load of the tail: ECORRUPT) */
static void tail_moved_before_the_walk_pc(void **state)
{
	(void)state;
	open_while_writing(RINGBUF_MODE_PRODUCER_CONSUMER, RINGBUF__TP_VALIDATE_TAIL, 1, 1);
}

static void tail_moved_before_the_walk_overwrite(void **state)
{
	(void)state;
	open_while_writing(RINGBUF_MODE_OVERWRITE, RINGBUF__TP_VALIDATE_TAIL, 3, 20);
}

/* V2-V3: the head is pushed between the two passes: the flags the first
 * pass counted are not a snapshot; the walk is taken again */
static void head_pushed_under_the_walk(void **state)
{
	(void)state;
	open_while_writing(RINGBUF_MODE_OVERWRITE, RINGBUF__TP_VALIDATE_WALKED, 1, 20);
	open_while_writing(RINGBUF_MODE_OVERWRITE, RINGBUF__TP_VALIDATE_WALKED, 5, 20);
}

/* V4: the writer commits its event in flight and describes the next one
 * between the validation's load of the slot's offset and its load of the
 * event offset (a live writer of another process does this whenever the
 * timing falls so): an old offset and a new event, a pair the slot never
 * held. Before the fix the open checked the slots and returned
 * RINGBUF_ECORRUPT ("V4: slot: ..."); now only recovery (writers gone) checks
 * them, and the open leaves them alone. */
struct slot_live {
	struct ringbuf *w;
	uint32_t *ev; /* the event in flight at depth 1 */
	unsigned hits;
};

static void slot_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	struct slot_live *l = (struct slot_live *)ctx;
	(void)rb;
	if (cpu != 0 || point != RINGBUF__TP_VALIDATE_SLOT || l->hits++ != 0)
		return;
	/* commit the event in flight and reserve the next: slot 0 gets the
	 * next event's offset and event offset ([SLOT] P1) */
	ringbuf_commit(l->w, 0, l->ev);
	l->ev = (uint32_t *)ringbuf_reserve(l->w, 0, 64);
	assert_non_null(l->ev);
}

static void slot_rewritten_under_the_check(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct slot_live l;
	struct ringbuf *r = NULL;
	struct ringbuf_record rec;
	uint64_t n = 0;
	int rc, k;
	(void)state;
	memset(&l, 0, sizeof l);
	snprintf(path, sizeof path, "/tmp/ringbuf-validate-slot-%d.rb", (int)getpid());
	unlink(path);
	cfg.ncpu = 1;
	cfg.size_per_cpu = 8 * 4096;
	cfg.page_size = 4096;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
	assert_int_equal(ringbuf_create_file(path, &cfg, &l.w), 0);
	for (k = 0; k < 3; k++) { /* a few events before: the slot's offset is not 0 */
		uint32_t *ev = (uint32_t *)ringbuf_reserve(l.w, 0, 64);
		assert_non_null(ev);
		memset(ev, 0, 64);
		ringbuf_commit(l.w, 0, ev);
	}
	l.ev = (uint32_t *)ringbuf_reserve(l.w, 0, 64); /* in flight while the block is opened */
	assert_non_null(l.ev);
	memset(l.ev, 0, 64);
	ringbuf__set_testpoint_hook(slot_hook, &l);
	rc = ringbuf_open_file(path, RINGBUF_OPEN_RDWR, &r);
	ringbuf__set_testpoint_hook(NULL, NULL);
	if (rc == RINGBUF_ECORRUPT)
		fail_msg("open: %s", ringbuf__invalid_why ? ringbuf__invalid_why : "?");
	assert_int_equal(rc, 0);
	/* the writer goes on: its event in flight commits, and the block reads
	 * as it left it */
	memset(l.ev, 0, 64);
	ringbuf_commit(l.w, 0, l.ev);
	while ((rc = ringbuf_consume(r, 0, &rec)) == 1)
		n++;
	assert_int_equal(rc, 0);
	assert_int_equal(n, 3 + 1 + (l.hits ? 1 : 0));
	ringbuf_destroy(r);

	/* the check itself stays where the writers are gone: an event in
	 * flight whose slot is out of range fails recovery's validation */
	l.ev = (uint32_t *)ringbuf_reserve(l.w, 0, 64);
	assert_non_null(l.ev);
	ringbuf__cpu(l.w, 0)->slots[0].event = ringbuf__cpu(l.w, 0)->slots[0].off + 64;
	assert_int_equal(ringbuf_open_file(path, RINGBUF_OPEN_RECOVER, &r), RINGBUF_ECORRUPT);
	assert_string_equal(ringbuf__invalid_why, "V4: slot: page, offset, length or event out of range");
	ringbuf_destroy(l.w);
	unlink(path);
}

/* Recovery racing a writer of another process (HOSTILE MEMORY in ringbuf.h):
 * the commit walk of recovery's step 3 loads the commit and tail pages and
 * follows links after the validation checked them. A test point there
 * (RINGBUF__TP_RECOVER_COMMIT) rewrites one of them out of range, as a
 * process still mapping the block could. Before the fix the walk used the
 * index as loaded: a data page far outside the mapping was written
 * (SIGSEGV); now the walk stops with a warning and the recovery's final
 * validation refuses the block. */
enum { BAD_COMMIT_PAGE, BAD_TAIL_PAGE, BAD_LINK, BAD_COUNT };

struct bad_live {
	int what;
	unsigned hits;
};

static void bad_index_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	struct bad_live *l = (struct bad_live *)ctx;
	struct ringbuf__cpu *c = ringbuf__cpu(rb, cpu);
	const uint32_t bad = (uint32_t)RINGBUF__IDX_MASK;
	if (cpu != 0 || point != RINGBUF__TP_RECOVER_COMMIT || l->hits++ != 0)
		return;
	if (l->what == BAD_COMMIT_PAGE) {
		RINGBUF__STORE(&c->commit_page, bad);
	} else if (l->what == BAD_TAIL_PAGE) {
		RINGBUF__STORE(&c->tail_page, bad);
	} else {
		struct ringbuf__bpage *bp = ringbuf__bp(rb, cpu, RINGBUF__LOAD(&c->commit_page));
		uint64_t link = RINGBUF__LOAD(&bp->next);
		RINGBUF__STORE(&bp->next, ringbuf__link_make(link, bad, link & RINGBUF__F_MASK));
	}
}

static void recovery_walk_meets_indexes_out_of_range(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	(void)state;
	snprintf(path, sizeof path, "/tmp/ringbuf-validate-walk-%d.rb", (int)getpid());
	for (int what = 0; what < BAD_COUNT; what++) {
		struct ringbuf *w = NULL, *r = NULL;
		struct bad_live l = {what, 0};
		struct ringbuf_stats st;
		uint32_t *outer;
		int rc;
		unlink(path);
		cfg.ncpu = 1;
		cfg.size_per_cpu = 8 * 4096;
		cfg.page_size = 4096;
		cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
		assert_int_equal(ringbuf_create_file(path, &cfg, &w), 0);
		/* an event in flight (its writer "killed"), and nested events
		 * after it filling three pages: the commit page stays behind
		 * the tail, so step 3 walks links */
		outer = (uint32_t *)ringbuf_reserve(w, 0, 64);
		assert_non_null(outer);
		memset(outer, 0, 64);
		do {
			uint32_t *ev = (uint32_t *)ringbuf_reserve(w, 0, 200);
			assert_non_null(ev);
			memset(ev, 0, 200);
			ringbuf_commit(w, 0, ev);
			assert_int_equal(ringbuf_stats_cpu(w, 0, &st), 0);
		} while (st.pages_touched < 4);
		assert_int_not_equal(RINGBUF__LOAD(&ringbuf__cpu(w, 0)->commit_page),
				     RINGBUF__LOAD(&ringbuf__cpu(w, 0)->tail_page));
		ringbuf__set_testpoint_hook(bad_index_hook, &l);
		rc = ringbuf_open_file(path, RINGBUF_OPEN_RECOVER, &r);
		ringbuf__set_testpoint_hook(NULL, NULL);
		print_message("  index out of range in the %s: %s (%s)\n",
			      what == BAD_COMMIT_PAGE ? "commit page" : what == BAD_TAIL_PAGE ? "tail page" : "commit page's link",
			      ringbuf_strerror(rc), ringbuf__invalid_why ? ringbuf__invalid_why : "-");
		assert_int_equal(l.hits, 1);
		assert_int_equal(rc, RINGBUF_ECORRUPT);
		assert_null(r);
		ringbuf_destroy(w);
	}
	unlink(path);
}

/* PH1-PH3 (PRIVATE HEADER): another process rewrites the file's header
 * while the block is being opened RDWR, through a mapping of its own.
 * Before the copy (OPEN_MAPPED: the private header still reads the file) the
 * change is what gets validated: a changed geometry, or a total size other
 * than the one the open read and mapped, is refused. After the copy
 * (OPEN_COPIED) the change reaches only the file: the open validates, and the
 * handle keeps, the geometry it copied, and reads every event. The last case
 * rewrites the creator's header between its create and its writes: the
 * creator's copy is unchanged too. */
struct hdr_change {
	unsigned char *file; /* the other process's mapping of the header */
	int point;
	size_t off;
	uint32_t v32;
	uint64_t v64;
	int wide;
	unsigned hits;
};

static void hdr_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	struct hdr_change *h = (struct hdr_change *)ctx;
	(void)rb;
	(void)cpu;
	if (point != h->point || h->hits++ != 0)
		return;
	if (h->wide)
		__atomic_store_n((uint64_t *)(void *)(h->file + h->off), h->v64, __ATOMIC_RELAXED);
	else
		__atomic_store_n((uint32_t *)(void *)(h->file + h->off), h->v32, __ATOMIC_RELAXED);
}

static void open_under_a_header_change(int point, size_t off, int wide, uint64_t v, int expect)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct hdr_change h;
	struct ringbuf *w, *r = NULL;
	struct ringbuf_record rec;
	uint32_t k, got = 0;
	int fd, rc;
	memset(&h, 0, sizeof h);
	snprintf(path, sizeof path, "/tmp/ringbuf-validate-hdr-%d.rb", (int)getpid());
	unlink(path);
	cfg.ncpu = 2;
	cfg.size_per_cpu = 4 * 4096;
	cfg.page_size = 4096;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
	assert_int_equal(ringbuf_create_file(path, &cfg, &w), 0);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	h.file = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(h.file != MAP_FAILED);
	close(fd);
	h.point = point;
	h.off = off;
	h.wide = wide;
	h.v32 = (uint32_t)v;
	h.v64 = wide && off == offsetof(struct ringbuf, total_size) ? v + w->total_size : v;
	if (point == 0) /* the creator's header, rewritten after its create */
		hdr_hook(w, 0, 0, &h);
	for (k = 0; k < 100; k++)
		assert_int_equal(ringbuf_write(w, k & 1, &k, sizeof k), 0);
	ringbuf__set_testpoint_hook(hdr_hook, &h);
	rc = ringbuf_open_file(path, RINGBUF_OPEN_RDWR, &r);
	ringbuf__set_testpoint_hook(NULL, NULL);
	if (point != 0)
		assert_int_equal(h.hits, 1);
	if (expect == 0 && rc != 0)
		fail_msg("open: %s (%s)", ringbuf_strerror(rc), ringbuf__invalid_why ? ringbuf__invalid_why : "?");
	assert_int_equal(rc, expect);
	if (rc == 0) {
		assert_int_equal(ringbuf_ncpu(r), 2);
		assert_int_equal(ringbuf_nr_pages(r), 4);
		assert_int_equal(ringbuf_page_size(r), 4096);
		assert_int_equal(r->total_size, w->total_size);
		for (k = 0; k < 2; k++) {
			uint32_t next = k;
			while ((rc = ringbuf_consume(r, k, &rec)) == 1) {
				assert_int_equal(*(const uint32_t *)rec.data, next);
				next += 2;
				got++;
			}
			assert_int_equal(rc, 0);
		}
		assert_int_equal(got, 100);
		ringbuf_destroy(r);
	}
	munmap(h.file, 4096);
	ringbuf_destroy(w);
	unlink(path);
}

static void header_changed_under_the_open(void **state)
{
	(void)state;
	/* before the copy: what the open validates */
	open_under_a_header_change(RINGBUF__TP_OPEN_MAPPED, offsetof(struct ringbuf, ncpu), 0, 3,
				   RINGBUF_ECORRUPT);
	open_under_a_header_change(RINGBUF__TP_OPEN_MAPPED, offsetof(struct ringbuf, nr_pages), 0, 1000,
				   RINGBUF_ECORRUPT);
	open_under_a_header_change(RINGBUF__TP_OPEN_MAPPED, offsetof(struct ringbuf, total_size), 1, 4096,
				   RINGBUF_ECORRUPT); /* + 4096: not what was mapped */
	/* after it: the file's, not the handle's */
	open_under_a_header_change(RINGBUF__TP_OPEN_COPIED, offsetof(struct ringbuf, ncpu), 0, 65536, 0);
	open_under_a_header_change(RINGBUF__TP_OPEN_COPIED, offsetof(struct ringbuf, data_off), 1, 1ull << 44, 0);
	open_under_a_header_change(RINGBUF__TP_OPEN_COPIED, offsetof(struct ringbuf, total_size), 1, 1ull << 32, 0);
	/* the creator's copy: a later open reads the changed file (refused) */
	open_under_a_header_change(0, offsetof(struct ringbuf, nr_pages), 0, 1000, RINGBUF_ECORRUPT);
}

/* A block laid out for one process (ringbuf_create: its shared part right
 * behind the header, in the header's page) written to a file: an RDWR open
 * cannot give it a private header (PH1's 64 KiB would cover its shared
 * part) and refuses it, before mapping anything privately; a private view
 * still opens it. */
static void one_process_block_is_not_opened_rdwr(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb, *r;
	struct ringbuf_record rec;
	size_t need = 0;
	uint32_t k;
	FILE *f;
	(void)state;
	cfg.ncpu = 1;
	cfg.size_per_cpu = 4 * 4096;
	cfg.page_size = 4096;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
	assert_int_equal(ringbuf_size_needed(&cfg, &need), 0);
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	for (k = 0; k < 10; k++)
		assert_int_equal(ringbuf_write(rb, 0, &k, sizeof k), 0);
	snprintf(path, sizeof path, "/tmp/ringbuf-validate-one-%d.rb", (int)getpid());
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(rb, 1, need, f), need);
	fclose(f);
	ringbuf_destroy(rb);
	assert_int_equal(ringbuf_open_file(path, RINGBUF_OPEN_RDWR, &r), RINGBUF_EFORMAT);
	assert_int_equal(ringbuf_open_file(path, 0, &r), 0);
	for (k = 0; ringbuf_consume(r, 0, &rec) == 1; k++)
		assert_int_equal(*(const uint32_t *)rec.data, k);
	assert_int_equal(k, 10);
	ringbuf_destroy(r);
	unlink(path);
}

/* A file whose CPU 1 page 0 has a bad prev (1 instead of its ring
 * predecessor): ringbuf__repair_reader took "the first page its prev does not
 * link to" for the old reader page of a swap cut after S2 and made that ring
 * page the reader page; the validation after the repair refused the block (V2:
 * the walk met the reader page), the open returned RINGBUF_ECORRUPT with the
 * file already changed, and no open took it again, CPU 0 included (helper
 * review, 2026-11-30). Now only the shape a cut swap leaves is undone, and
 * repair_prev sets the prev from the ring: the open recovers both CPUs. */
static void recovery_of_a_bad_prev_is_not_a_cut_swap(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	struct ringbuf_record rec;
	uint32_t one = 1, i;
	size_t off;
	int fd, k, r;
	unsigned cpu;
	(void)state;
	snprintf(path, sizeof path, "/tmp/ringbuf-validate-prev-%d.rb", (int)getpid());
	cfg.ncpu = 2;
	cfg.page_size = 128;
	cfg.size_per_cpu = 4 * 128;
	cfg.user_size = 40;
	assert_int_equal(ringbuf_create_file(path, &cfg, &rb), 0);
	for (i = 0; i < 30; i++) {
		uint32_t v[5] = {i, 1, 2, 3, 4};
		assert_int_equal(ringbuf_write(rb, i & 1, v, 4 + 4 * (i % 5)), 0);
	}
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
	off = (size_t)((char *)&ringbuf__bp(rb, 1, 0)->prev - (char *)rb);
	assert_int_not_equal(ringbuf__bp(rb, 1, 0)->prev, 1);
	ringbuf_destroy(rb);
	fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, &one, 4, (off_t)off), 4);
	close(fd);
	assert_int_equal(ringbuf_open_file(path, RINGBUF_OPEN_RDWR | RINGBUF_OPEN_RECOVER, &rb), 0);
	for (cpu = 0; cpu < 2; cpu++) {
		for (k = 0; (r = ringbuf_consume(rb, cpu, &rec)) == 1; k++)
			;
		assert_int_equal(r, 0);
		assert_int_equal(k, cpu == 0 ? 14 : 15);
	}
	ringbuf_destroy(rb);
	assert_int_equal(ringbuf_open_file(path, 0, &rb), 0);
	ringbuf_destroy(rb);
	unlink(path);
}

/* HOSTILE MEMORY, the iterator: another process changes CPU 0's reader_page,
 * or the head page's link index, of a block this handle opened RDWR (a
 * recorder reading live). ringbuf_iter_next indexed pages with them unchecked:
 * a SIGSEGV outside the block (helper review, 2026-11-30). Now
 * RINGBUF_ECORRUPT, as every other reader. */
static void iterator_checks_indexes_another_process_changed(void **state)
{
	int variant;
	(void)state;
	for (variant = 0; variant < 2; variant++) {
		struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
		struct ringbuf *w, *rb;
		struct ringbuf_iter *it;
		struct ringbuf_record rec;
		uint32_t i;
		int r, k = 0;
		snprintf(path, sizeof path, "/tmp/ringbuf-validate-iter-%d.rb", (int)getpid());
		cfg.ncpu = 1;
		cfg.page_size = 128;
		cfg.size_per_cpu = 4 * 128;
		assert_int_equal(ringbuf_create_file(path, &cfg, &w), 0);
		for (i = 0; i < 12; i++) {
			uint32_t v[4] = {i, 0, 0, 0};
			assert_int_equal(ringbuf_write(w, 0, v, sizeof v), 0);
		}
		assert_int_equal(ringbuf_open_file(path, RINGBUF_OPEN_RDWR, &rb), 0);
		assert_int_equal(ringbuf_iter_start(rb, 0, &it), 0);
		if (variant == 0) {
			/* the other process's store, through the creator's mapping */
			atomic_store(&ringbuf__cpu(w, 0)->reader_page, 0x10000000u);
		} else {
			uint32_t rp = atomic_load(&ringbuf__cpu(w, 0)->reader_page), h = 0;
			uint64_t l;
			for (i = 0; i <= ringbuf_nr_pages(w); i++)
				if (i != rp &&
				    (atomic_load(&ringbuf__bp(w, 0, ringbuf__bp(w, 0, i)->prev)->next) & RINGBUF__F_MASK) ==
					    RINGBUF__F_HEADER)
					h = i;
			l = atomic_load(&ringbuf__bp(w, 0, h)->next);
			l = (l & ~((uint64_t)RINGBUF__IDX_MASK << 2)) | ((uint64_t)0x100000 << 2);
			atomic_store(&ringbuf__bp(w, 0, h)->next, l);
		}
		while ((r = ringbuf_iter_next(it, &rec)) == 1 && k < 100)
			k++;
		assert_int_equal(r, RINGBUF_ECORRUPT);
		ringbuf_iter_finish(it);
		ringbuf_destroy(rb);
		ringbuf_destroy(w);
		unlink(path);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(iterator_checks_indexes_another_process_changed),
		cmocka_unit_test(recovery_of_a_bad_prev_is_not_a_cut_swap),
		cmocka_unit_test(tail_moved_before_the_walk_pc),
		cmocka_unit_test(tail_moved_before_the_walk_overwrite),
		cmocka_unit_test(head_pushed_under_the_walk),
		cmocka_unit_test(slot_rewritten_under_the_check),
		cmocka_unit_test(recovery_walk_meets_indexes_out_of_range),
		cmocka_unit_test(header_changed_under_the_open),
		cmocka_unit_test(one_process_block_is_not_opened_rdwr),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
