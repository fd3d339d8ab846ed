/* Built with -masm=intel (and RINGBUF_PORTABLE: the restartable sequence's
 * asm is AT&T only): [TCUR]'s K load names its operands in both dialects,
 * so the slot reads back as written. (Written in AT&T alone, the load
 * became a store of a stale register and the slot held garbage: events
 * lost, a bogus BUSY word.) Makefile: variant-checks, x86-64 only. */
#define _GNU_SOURCE 1
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"
#include "tcur_check.h"

int main(void)
{
	struct ringbuf *rb;
	struct ringbuf_stats st;
	int cpu, r = tc_start("masm_intel", &rb, &cpu);
	unsigned c;
	if (r != 0)
		return r;
	TC_CHECK(tc_write(rb, 1) == 0); /* out of line: arms the slot */
	TC_CHECK(ringbuf__tcur.word == (rb->tclaim_key | 1));
	TC_CHECK((uint32_t)ringbuf__tcur.me == (uint32_t)syscall(SYS_gettid));
	TC_CHECK(tc_write(rb, 2) == 0); /* inline */
	TC_CHECK(tc_write(rb, 3) == 0);
	TC_CHECK(ringbuf__tcur.word == (rb->tclaim_key | 1));
	TC_CHECK(ringbuf_stats(rb, &st) == 0);
	TC_CHECK(st.committed == 3);
	for (c = 0; c <= (unsigned)cpu; c++) {
		TC_CHECK(atomic_load(&ringbuf__cpu(rb, c)->owner) == 0);
		TC_CHECK(atomic_load(&ringbuf__cpu(rb, c)->committing) == 0);
	}
	ringbuf_destroy(rb);
	printf("masm_intel: 3 events, the slot ARMED with this thread's id\n");
	return 0;
}
