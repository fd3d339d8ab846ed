/* internal_impl.h - the definitions behind tests/internal.h for ringbuf.h's
 * private names: included, after the implementation, by ringbuf_impl.c and
 * all_impl.c (the shared objects, compiled with RINGBUF_TESTING). Each is a
 * plain call or read of the implementation's own static function, variable or
 * macro: what a test that compiles the implementation itself calls directly.
 * RINGBUF_TEST_IMPL: tests/internal.h declares them, so that the compiler
 * checks each definition against what the shared tests see. */
#define RINGBUF_TEST_IMPL 1
#include "../internal.h"

/* a private constant, with a check that its declared type is the macro's */
#define RINGBUF_TEST__CONST(type, name, value) \
	_Static_assert(_Generic((value), type: 1, default: 0), #value " is not " #type); \
	const type name = (value)

RINGBUF_TEST__CONST(uint32_t, ringbuf_test__own_persist, RINGBUF__OWN_PERSIST);
RINGBUF_TEST__CONST(uint32_t, ringbuf_test__own_releasing, RINGBUF__OWN_RELEASING);
RINGBUF_TEST__CONST(uint32_t, ringbuf_test__own_tid, RINGBUF__OWN_TID);
RINGBUF_TEST__CONST(uint32_t, ringbuf_test__ownf_mixed_ns, RINGBUF__OWNF_MIXED_NS);
RINGBUF_TEST__CONST(uint32_t, ringbuf_test__reset_bit, RINGBUF__RESET_BIT);
RINGBUF_TEST__CONST(uint32_t, ringbuf_test__rescan_first, RINGBUF__RESCAN_FIRST);
RINGBUF_TEST__CONST(uint32_t, ringbuf_test__thread_rescan, RINGBUF_THREAD_RESCAN);
RINGBUF_TEST__CONST(uint32_t, ringbuf_test__rl_tid, RINGBUF__RL_TID);
RINGBUF_TEST__CONST(uint64_t, ringbuf_test__cur_scanning, RINGBUF__CUR_SCANNING);
/* counts, int literals there: unsigned here, as the tests compare them with
 * unsigned counters (a constant int is known not negative, a variable is not:
 * -Wsign-compare) */
#define RINGBUF_TEST__COUNT(name, value) \
	_Static_assert(_Generic((value), int: 1, default: 0) && (value) >= 0, #value " is not a count"); \
	const uint32_t name = (value)
RINGBUF_TEST__COUNT(ringbuf_test__rl_yields, RINGBUF__RL_YIELDS);
RINGBUF_TEST__COUNT(ringbuf_test__rl_sleeps, RINGBUF__RL_SLEEPS);

uint32_t ringbuf_test__cur_owned(uint64_t v) { return RINGBUF__CUR_OWNED(v); }
uint32_t ringbuf_test__cur_depth(uint64_t v) { return RINGBUF__CUR_DEPTH(v); }
uint32_t ringbuf_test__rl_ns(uint64_t w) { return RINGBUF__RL_NS(w); }

_Atomic(uint64_t) *ringbuf_test__kill_calls(void) { return &ringbuf__kill_calls; }
_Atomic(uint64_t) *ringbuf_test__rl_waits(void) { return &ringbuf__rl_waits; }
_Atomic(uint64_t) *ringbuf_test__rl_takeovers(void) { return &ringbuf__rl_takeovers; }
const char **ringbuf_test__invalid_why(void) { return &ringbuf__invalid_why; }

int ringbuf_test__validate(struct ringbuf *rb, uint64_t size) { return ringbuf__validate(rb, size); }
uint64_t ringbuf_test__page_gen(const struct ringbuf *rb, unsigned cpu, uint32_t idx)
{
	return ringbuf__page_gen(rb, cpu, idx);
}
uint32_t ringbuf_test__page_commit(const struct ringbuf *rb, unsigned cpu, uint32_t idx)
{
	return ringbuf__page_commit(rb, cpu, idx);
}
bool ringbuf_test__gen_live(uint64_t gen) { return ringbuf__gen_live(gen); }
uint64_t ringbuf_test__rl_self(void) { return ringbuf__rl_self(); }
int ringbuf_test__reader_lock(struct ringbuf *rb, struct ringbuf__cpu *c) { return ringbuf__reader_lock(rb, c); }
void ringbuf_test__reader_unlock(struct ringbuf__cpu *c) { ringbuf__reader_unlock(c); }
uint32_t ringbuf_test__dirty_pages(struct ringbuf__cpu *c) { return ringbuf__dirty_pages(c); }
int ringbuf_test__find_head(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c, uint32_t *head,
			    uint64_t *plink)
{
	return ringbuf__find_head(rb, cpu, c, head, plink);
}
