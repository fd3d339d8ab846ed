/* tests/variants/tcur_check.h - shared by the build-variant programs of
 * this directory (Makefile: variant-checks, run by `make test`): one
 * thread pinned to the first CPU it may run on writes RINGBUF_CPU_CURRENT
 * events, the second and later inline ([TCUR] in ringbuf.h). Each program
 * returns 0 when every check holds, 1 when one fails (it says which), 77
 * after saying why it cannot check here (no rseq CPU number: the inline
 * path does not run). */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#define TC_CHECK(cond)                                                       \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond); \
			return 1;                                            \
		}                                                            \
	} while (0)

/* pins the calling thread to the first CPU it may run on; its index, or -1 */
static int tc_pin(void)
{
	cpu_set_t set, one;
	int i;
	if (sched_getaffinity(0, sizeof set, &set) != 0)
		return -1;
	for (i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set)) {
			CPU_ZERO(&one);
			CPU_SET(i, &one);
			return sched_setaffinity(0, sizeof one, &one) == 0 ? i : -1;
		}
	return -1;
}

static int tc_write(struct ringbuf *rb, unsigned char tag)
{
	unsigned char *p = (unsigned char *)ringbuf_reserve(rb, RINGBUF_CPU_CURRENT, 16);
	if (!p)
		return -1;
	p[0] = tag;
	ringbuf_commit(rb, RINGBUF_CPU_CURRENT, p);
	return 0;
}

/* The programs' start: pin to the first CPU, skip (77, saying why) without
 * an rseq CPU number there, make a ring buffer with that CPU's buffer last
 * (*rb, *cpu). Returns 0, 77, or 1 when the creation fails. */
static int tc_start(const char *name, struct ringbuf **rb, int *cpu)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	*cpu = tc_pin();
	if (*cpu < 0 || ringbuf__rseq_cpu() != *cpu) {
		printf("%s: no rseq CPU number here: the inline path does not run, nothing to check\n", name);
		return 77;
	}
	cfg.ncpu = (unsigned)*cpu + 1;
	cfg.size_per_cpu = 64 << 10;
	TC_CHECK(ringbuf_create(&cfg, rb) == 0);
	return 0;
}
