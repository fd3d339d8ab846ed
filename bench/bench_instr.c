/* bench_instr.c - instructions per event on the write path, counted by
 * valgrind's callgrind (make bench runs it; skipped, and says so, without
 * valgrind). Instructions, not seconds: the same count on a loaded or an idle
 * machine, so a change to the write path shows as a number that does not
 * drift (issue 24: <= 110 per 16-byte event with an explicit index, <= 125
 * with RINGBUF_CPU_THREAD).
 *
 *   build/bench/bench_instr            the table (runs itself under callgrind)
 *   build/bench/bench_instr --run K N  N events of kind K (what callgrind counts)
 *
 * Per kind: callgrind counts the whole program for N = 100,000 and 200,000
 * events; (I(200k) - I(100k)) / 100,000 is the cost of one event, set-up and
 * exit cancelled out. The clock is a counter (its cost is the call), so the
 * count is the library's own work. Kinds:
 *   rb_16          ringbuf_reserve(rb, 0, 16) + 16-byte copy + ringbuf_commit,
 *                  overwrite mode, 1 MiB: pages wrap (head pushes included)
 *   rb_thread_16   the same through RINGBUF_CPU_THREAD
 *   rb_current_16  the same through RINGBUF_CPU_CURRENT (under valgrind
 *                  glibc does not register rseq: the CAS claim is counted)
 *   rb_thread_shared_16  the same for a thread beyond the buffer count,
 *                  every buffer kept shared (ringbuf_thread_shared): each
 *                  event takes a buffer and gives it back (THREAD FALLBACK)
 *   floor_append_24  a bare thread-local append of the same 24 bytes (header
 *                  word, delta, payload) into a 1 MiB array: the floor
 * With BENCH_JSON=path (make bench), writes bench_instr.json next to it.
 */
#define _GNU_SOURCE 1
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t counter;
static uint64_t counter_clock(void *ctx)
{
	(void)ctx;
	return counter++;
}

static const char *const kinds[] = {"rb_16", "rb_thread_16", "rb_current_16", "floor_append_24",
				     "rb_thread_shared_16"};
#define NKINDS (sizeof kinds / sizeof kinds[0])

static unsigned char floor_buf[1 << 20];

static int run(unsigned k, unsigned long n)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	unsigned char payload[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
	unsigned long i;
	if (k == 3) {
		size_t off = 0;
		for (i = 0; i < n; i++) {
			uint32_t hdr = (uint32_t)(counter_clock(NULL) & 0x7ffffff) << 5 | 4;
			if (off + 24 > sizeof floor_buf)
				off = 0;
			memcpy(floor_buf + off, &hdr, 4);
			memcpy(floor_buf + off + 4, payload, 16);
			off += 24;
			__asm__ volatile("" ::: "memory");
		}
		return floor_buf[5] == 0;
	}
	cfg.ncpu = k == 4 ? 2 : 1;
	cfg.size_per_cpu = 1 << 20;
	cfg.mode = RINGBUF_MODE_OVERWRITE;
	cfg.clock = counter_clock;
	if (ringbuf_create(&cfg, &rb) != 0)
		return 2;
	if (k == 4 && ringbuf_thread_shared(rb, 2) != 0)
		return 2;
	for (i = 0; i < n; i++) {
		void *p;
		switch (k) {
		case 0:
			if ((p = ringbuf_reserve(rb, 0, 16))) {
				memcpy(p, payload, 16);
				ringbuf_commit(rb, 0, p);
			}
			break;
		case 1:
		case 4:
			if ((p = ringbuf_reserve(rb, RINGBUF_CPU_THREAD, 16))) {
				memcpy(p, payload, 16);
				ringbuf_commit(rb, RINGBUF_CPU_THREAD, p);
			}
			break;
		default:
			if ((p = ringbuf_reserve(rb, RINGBUF_CPU_CURRENT, 16))) {
				memcpy(p, payload, 16);
				ringbuf_commit(rb, RINGBUF_CPU_CURRENT, p);
			}
			break;
		}
	}
	ringbuf_destroy(rb);
	return 0;
}

/* callgrind's total for `self --run k n`, or 0 */
static unsigned long long count(const char *self, unsigned k, unsigned long n)
{
	char cmd[4096], line[512];
	unsigned long long total = 0;
	FILE *f;
	snprintf(cmd, sizeof cmd,
		 "valgrind --tool=callgrind --callgrind-out-file=/dev/null %s --run %u %lu 2>&1 >/dev/null", self,
		 k, n);
	if (!(f = popen(cmd, "r")))
		return 0;
	while (fgets(line, sizeof line, f)) {
		const char *p = strstr(line, "Collected : ");
		if (p)
			total = strtoull(p + 12, NULL, 10);
	}
	return pclose(f) == 0 ? total : 0;
}

int main(int argc, char **argv)
{
	double per[NKINDS];
	const char *json = getenv("BENCH_JSON");
	unsigned k;
	if (argc == 4 && !strcmp(argv[1], "--run"))
		return run((unsigned)atoi(argv[2]), strtoul(argv[3], NULL, 10));
	if (system("valgrind --version >/dev/null 2>&1") != 0) {
		printf("bench_instr: skipped (valgrind not installed: apt-get install valgrind)\n");
		return 0;
	}
	printf("instructions per event (callgrind: (I(200k) - I(100k)) / 100k, counter clock)\n");
	for (k = 0; k < NKINDS; k++) {
		unsigned long long a = count(argv[0], k, 100000), b = count(argv[0], k, 200000);
		if (!a || !b || b < a) {
			printf("  %-16s  (callgrind failed)\n", kinds[k]);
			per[k] = -1;
			continue;
		}
		per[k] = (double)(b - a) / 100000.0;
		printf("  %-16s %8.1f\n", kinds[k], per[k]);
	}
	if (json && strcmp(json, "-")) {
		char path[4096];
		const char *slash = strrchr(json, '/');
		FILE *f;
		snprintf(path, sizeof path, "%.*sbench_instr.json", slash ? (int)(slash - json + 1) : 0, json);
		if ((f = fopen(path, "w"))) {
			fprintf(f, "{\n  \"unit\": \"instructions per event\",\n");
			for (k = 0; k < NKINDS; k++)
				fprintf(f, "  \"%s\": %.1f%s\n", kinds[k], per[k], k + 1 < NKINDS ? "," : "");
			fprintf(f, "}\n");
			fclose(f);
			printf("  -> %s\n", path);
		}
	}
	return 0;
}
