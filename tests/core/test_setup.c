/* test_setup.c - creating a buffer touches no data page.
 *
 * Pages of a fresh anonymous mapping or of a new (ftruncate'd) file read as
 * zeros, and a zero page header is the empty page (SET-UP in >>design), so
 * ringbuf_create writes only the metadata, and ringbuf_create_file the
 * metadata and two data pages per CPU (page 0 and the reader page). Counted in
 * pages, never in time: mincore() on the data pages of the buffer (anonymous:
 * resident; file: in the page cache), the resident set from /proc/self/statm,
 * and the blocks the file allocated (st_blocks). Also: the buffer works as
 * before on pages it never wrote (events, recovery of a file that was never
 * written), ringbuf_init_in on caller memory full of garbage still writes the
 * page headers it needs, and RINGBUF_F_ZEROED is not stored in the block.
 */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#define NCPU 16
#define PER_CPU ((size_t)2 << 20) /* 16 x 2 MiB: 32 MiB of data pages */

static char dir[256];
static char path[300];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/rb-setup-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof path, "%s/trace.rb", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(path);
	rmdir(dir);
	return 0;
}

static struct ringbuf_config config(void)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	cfg.ncpu = NCPU;
	cfg.size_per_cpu = PER_CPU;
	return cfg;
}

/* system pages of [p, p + len) that mincore() says are resident */
static size_t resident(const void *p, size_t len)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), n, i, r = 0;
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(ps - 1);
	unsigned char *vec;
	len += (uintptr_t)p - a;
	n = (len + ps - 1) / ps;
	vec = malloc(n);
	assert_non_null(vec);
	assert_int_equal(mincore((void *)a, n * ps, vec), 0);
	for (i = 0; i < n; i++)
		r += vec[i] & 1;
	free(vec);
	return r;
}

static long rss_pages(void)
{
	long size = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld %ld", &size, &res), 2);
	fclose(f);
	return res;
}

/* the data pages of rb: [data_off, user_off) */
static const char *data_start(struct ringbuf *rb) { return (const char *)rb + rb->data_off; }
static size_t data_len(struct ringbuf *rb) { return (size_t)(rb->user_off - rb->data_off); }

/* The metadata of this geometry in bytes (everything before the data pages). */
static size_t meta_bytes(struct ringbuf *rb) { return (size_t)rb->data_off; }

static void write_some(struct ringbuf *rb, unsigned cpu, unsigned n)
{
	unsigned i;
	for (i = 0; i < n; i++)
		assert_int_equal(ringbuf_write(rb, cpu, &i, sizeof i), 0);
}

/* ringbuf_create: no data page resident, the RSS grows by the metadata only */
static void anonymous_create_touches_no_data_page(void **state)
{
	struct ringbuf_config cfg = config();
	struct ringbuf *rb;
	long before, after;
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), res;
	unsigned cpu;
	(void)state;
	before = rss_pages();
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	after = rss_pages();
	res = resident(data_start(rb), data_len(rb));
	print_message("anonymous: %zu of %zu data pages resident, RSS +%ld KiB (metadata %zu KiB)\n", res,
		      data_len(rb) / ps, (after - before) * (long)ps / 1024, meta_bytes(rb) / 1024);
	assert_true(res <= 1);
	/* the metadata and some slack (stdio, cmocka, a sanitizer's shadow of the
	 * metadata: +1.6 MiB under TSan), far below the data (writing every page
	 * header made the whole data resident) */
	assert_true((size_t)(after - before) * ps <= meta_bytes(rb) + data_len(rb) / 8);
	/* it works: every CPU reads empty, then a few events each; only the
	 * pages they reach become resident */
	for (cpu = 0; cpu < NCPU; cpu++)
		assert_true(ringbuf_empty_cpu(rb, cpu));
	for (cpu = 0; cpu < NCPU; cpu++)
		write_some(rb, cpu, 100);
	res = resident(data_start(rb), data_len(rb));
	assert_true(res >= NCPU && res <= 3 * NCPU);
	for (cpu = 0; cpu < NCPU; cpu++)
		assert_int_equal(consume_seq(rb, cpu), 100);
	ringbuf_destroy(rb);
}

/* ringbuf_create_file: no block allocated and no page cached for the data,
 * but for two pages per CPU ([PREFAULT] in ringbuf.h >>file): page 0, where
 * the tail starts, and the reader page, which readers load from; on a full
 * tmpfs either raised SIGBUS later (test_shm) */
static void file_create_allocates_no_data_block(void **state)
{
	struct ringbuf_config cfg = config();
	struct ringbuf *rb, *ro;
	struct stat st;
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), res, meta, dlen;
	const char *ds;
	unsigned cpu;
	(void)state;
	assert_int_equal(ringbuf_create_file(path, &cfg, &rb), 0);
	meta = meta_bytes(rb);
	ds = data_start(rb);
	dlen = data_len(rb);
	res = resident(ds, dlen);
	assert_int_equal(stat(path, &st), 0);
	print_message("file: %zu of %zu data pages cached, %lld KiB of blocks for a %lld KiB file "
		      "(metadata %zu KiB)\n",
		      res, dlen / ps, (long long)st.st_blocks / 2, (long long)st.st_size / 1024, meta / 1024);
	/* qemu-user ignores madvise (MADV_RANDOM), so there the kernel's
	 * read-around caches holes of the data pages (clean, no blocks) */
	if (!getenv("RINGBUF_TEST_QEMU"))
		assert_true(res <= 2 * NCPU);
	assert_true((size_t)st.st_blocks * 512 <= meta + 2 * NCPU * cfg.page_size + 64 * 1024);
	for (cpu = 0; cpu < NCPU; cpu++)
		assert_true(ringbuf_empty_cpu(rb, cpu));
	write_some(rb, 3, 1000);
	ringbuf_destroy(rb); /* the file keeps the events */
	assert_int_equal(stat(path, &st), 0);
	assert_true((size_t)st.st_blocks * 512 <= meta + 2 * NCPU * cfg.page_size + 64 * 1024 + 4 * cfg.page_size);
	/* a crash copy: recovery on pages never written reads them as empty */
	assert_int_equal(ringbuf_open_file(path, RINGBUF_OPEN_RECOVER, &ro), 0);
	for (cpu = 0; cpu < NCPU; cpu++)
		assert_int_equal(consume_seq(ro, cpu), cpu == 3 ? 1000 : 0);
	ringbuf_destroy(ro);
}

/* recovery of a file whose writers never wrote: empty, no error */
static void fresh_file_recovers_empty(void **state)
{
	struct ringbuf_config cfg = config();
	struct ringbuf *rb, *ro;
	struct ringbuf_stats stt;
	unsigned cpu;
	(void)state;
	assert_int_equal(ringbuf_create_file(path, &cfg, &rb), 0);
	ringbuf_destroy(rb);
	assert_int_equal(ringbuf_open_file(path, RINGBUF_OPEN_RDWR | RINGBUF_OPEN_RECOVER, &ro), 0);
	assert_int_equal(ringbuf_stats(ro, &stt), 0);
	assert_int_equal(stt.entries, 0);
	assert_int_equal(stt.bytes, 0);
	for (cpu = 0; cpu < NCPU; cpu++)
		assert_int_equal(consume_seq(ro, cpu), 0);
	/* and it records */
	write_some(ro, 0, 10);
	assert_int_equal(consume_seq(ro, 0), 10);
	ringbuf_destroy(ro);
}

/* Z7: recovery of a memfd buffer (tmpfs: a read fault allocates a hole)
 * reads no page the tail never reached. Before: a 16 x 2 MiB buffer with 1,000
 * events on one CPU went from about 400 KiB to 33,172 KiB allocated. */
static void recovery_allocates_no_unwritten_page(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb, *peer;
	struct stat st;
	char proc[64];
	long before, after;
	int fd;
	(void)state;
	cfg.ncpu = 16;
	cfg.size_per_cpu = 2 << 20;
	assert_int_equal(ringbuf_create_shm("recover", &cfg, &rb), 0);
	fd = ringbuf_fd(rb);
	assert_true(fd >= 0);
	write_some(rb, 5, 1000);
	assert_int_equal(fstat(fd, &st), 0);
	before = (long)st.st_blocks / 2;
	/* a recorder's view of it once the writer is gone */
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	assert_int_equal(ringbuf_open_file(proc, RINGBUF_OPEN_RDWR, &peer), 0);
	assert_int_equal(ringbuf_recover(peer), 0);
	assert_int_equal(fstat(fd, &st), 0);
	after = (long)st.st_blocks / 2;
	print_message("memfd 16 x 2 MiB, 1,000 events: %ld KiB allocated before recovery, %ld KiB after\n", before,
		      after);
	assert_true(after <= before + 128); /* the reader pages at most (16 x 4 KiB) */
	assert_int_equal(consume_seq(peer, 5), 1000);
	ringbuf_destroy(peer);
	ringbuf_destroy(rb);
}

/* ringbuf_init_in on memory full of garbage: the page headers are written
 * (Z5), so every page reads empty and a full wrap works */
static void init_in_on_garbage_memory(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	struct ringbuf_stats st;
	struct ringbuf_record rec;
	struct ringbuf_iter *it;
	size_t need = 0;
	unsigned i, n, last;
	void *mem;
	(void)state;
	cfg.ncpu = 2;
	cfg.size_per_cpu = 16 * 4096;
	assert_int_equal(ringbuf_size_needed(&cfg, &need), 0);
	assert_int_equal(posix_memalign(&mem, 4096, need), 0);
	memset(mem, 0xa5, need);
	assert_int_equal(ringbuf_init_in(mem, need, &cfg, &rb), 0);
	assert_int_equal(ringbuf_stats(rb, &st), 0);
	assert_int_equal(st.entries, 0);
	assert_true(ringbuf_empty_cpu(rb, 0) && ringbuf_empty_cpu(rb, 1));
	assert_int_equal(ringbuf_iter_start(rb, RINGBUF_ALL_CPUS, &it), 0);
	assert_int_equal(ringbuf_iter_next(it, &rec), 0);
	ringbuf_iter_finish(it);
	/* overwrite mode: far more than the ring holds, then the newest read back in order */
	for (i = 0; i < 100000; i++)
		assert_int_equal(ringbuf_write(rb, 1, &i, sizeof i), 0);
	for (n = 0, last = 0; ringbuf_consume(rb, 1, &rec) > 0; n++) {
		unsigned v = *(const unsigned *)rec.data;
		if (n > 0)
			assert_int_equal(v, last + 1);
		last = v;
	}
	assert_true(n > 100);
	assert_int_equal(last, 99999);
	assert_true(ringbuf_empty_cpu(rb, 0));
	ringbuf_destroy(rb);
	free(mem);
}

/* RINGBUF_F_ZEROED on zeroed caller memory: works and leaves the data pages
 * alone; the flag is not kept in the block; unknown flags are refused */
static void zeroed_flag(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	size_t need = 0, len;
	void *map;
	(void)state;
	cfg.ncpu = 2;
	cfg.size_per_cpu = 64 * 4096;
	cfg.flags = RINGBUF_F_ZEROED | RINGBUF_F_ALIGN8;
	assert_int_equal(ringbuf_size_needed(&cfg, &need), 0);
	len = need;
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(map != MAP_FAILED);
	assert_int_equal(ringbuf_init_in(map, len, &cfg, &rb), 0);
	assert_int_equal(rb->flags, RINGBUF_F_ALIGN8);
	assert_true(resident(data_start(rb), data_len(rb)) <= 1);
	write_some(rb, 1, 50);
	assert_int_equal(consume_seq(rb, 1), 50);
	assert_int_equal(consume_seq(rb, 0), 0);
	ringbuf_destroy(rb);
	munmap(map, len);
	cfg.flags = 1u << 4; /* after ALIGN8, ZEROED, NO_RSEQ, CPU_CURRENT */
	assert_int_equal(ringbuf_size_needed(&cfg, &need), RINGBUF_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(anonymous_create_touches_no_data_page),
		cmocka_unit_test_setup_teardown(file_create_allocates_no_data_block, setup, teardown),
		cmocka_unit_test_setup_teardown(fresh_file_recovers_empty, setup, teardown),
		cmocka_unit_test(recovery_allocates_no_unwritten_page),
		cmocka_unit_test(init_in_on_garbage_memory),
		cmocka_unit_test(zeroed_flag),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
