/* A writer unit built without RINGBUF_DEBUG, linked with an implementation
 * built with it (debug_mix_impl.c): a discard of the thread's inline event
 * ([TCUR] BUSY) with a wrong pointer is reported, and changes nothing: the
 * event stays held (its owner word ours, committing 1) and its commit
 * afterwards ends it. (The out-of-line end gave the slot and the owner word
 * back before the debug check refused the discard: the event was never
 * committed, its buffer left with committing 1 and no owner.) Makefile:
 * variant-checks. */
#define _GNU_SOURCE 1
#include "ringbuf.h"
#include "tcur_check.h"
#include <string.h>

static int g_warns;
static void warn(const char *msg, unsigned cpu, void *ctx)
{
	(void)cpu;
	(void)ctx;
	g_warns++;
	printf("debug_mix: reported: %s\n", msg);
}

int main(void)
{
	struct ringbuf *rb;
	struct ringbuf_stats st;
	char fake[32];
	int cpu, r = tc_start("debug_mix", &rb, &cpu);
	unsigned char *p;
	uint64_t own;
	memset(fake, 0, sizeof fake);
	if (r != 0)
		return r;
	ringbuf_set_warn_hook(warn, NULL);
	TC_CHECK(tc_write(rb, 1) == 0); /* out of line: arms the slot */
	p = (unsigned char *)ringbuf_reserve(rb, RINGBUF_CPU_CURRENT, 16); /* inline: BUSY */
	TC_CHECK(p != NULL);
	own = atomic_load(&ringbuf__cpu(rb, (unsigned)cpu)->owner);
	TC_CHECK(own != 0);
	ringbuf_discard(rb, RINGBUF_CPU_CURRENT, fake + 4); /* reported */
	TC_CHECK(g_warns == 1);
	TC_CHECK(atomic_load(&ringbuf__cpu(rb, (unsigned)cpu)->owner) == own);
	TC_CHECK(atomic_load(&ringbuf__cpu(rb, (unsigned)cpu)->committing) == 1);
	p[0] = 2;
	ringbuf_commit(rb, RINGBUF_CPU_CURRENT, p);
	TC_CHECK(g_warns == 1);
	TC_CHECK(atomic_load(&ringbuf__cpu(rb, (unsigned)cpu)->owner) == 0);
	TC_CHECK(atomic_load(&ringbuf__cpu(rb, (unsigned)cpu)->committing) == 0);
	TC_CHECK(ringbuf_stats(rb, &st) == 0);
	TC_CHECK(st.committed == 2);
	ringbuf_destroy(rb);
	printf("debug_mix: the wrong discard reported, the event then committed\n");
	return 0;
}
