/* internal.h - the implementation's private names a white-box test uses,
 * whether the test compiles the implementation itself or is linked with the
 * shared object (tests/README.md, IMPL: shared).
 *
 * A test that compiles the implementation sees its static functions,
 * variables and macros directly: this file then defines nothing. A test
 * marked `IMPL: shared` is compiled without the implementation (the Makefile
 * predefines the headers' implementation guards and RINGBUF_TEST_SHARED): the
 * names below then refer to small extern definitions in the shared object
 * (tests/impl/internal_impl.h: a wrapper per static function, the address of
 * each static variable, each private constant's value), so that the test's
 * body reads the same either way. Nothing here is a second definition: the
 * values and types come from ringbuf.h, where they are defined once. Include
 * it after the ringbuf headers (the tools' tests: before the tool's source,
 * which uses two of these names; it includes the headers itself then). */
#ifndef RINGBUF_TESTS_INTERNAL_H
#define RINGBUF_TESTS_INTERNAL_H
#if defined(RINGBUF_TEST_SHARED) || defined(RINGBUF_TEST_IMPL)
/* the declarations: seen by the shared tests, and by the shared object's
 * definitions (RINGBUF_TEST_IMPL: tests/impl/internal_impl.h), so that the
 * compiler checks one against the other */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ringbuf.h"

/* ---- ringbuf.h (tests/impl/ringbuf_impl.c and all_impl.c) ---- */
/* private constants of >>impl */
extern const uint32_t ringbuf_test__own_persist, ringbuf_test__own_releasing, ringbuf_test__own_tid,
	ringbuf_test__ownf_mixed_ns, ringbuf_test__reset_bit, ringbuf_test__rescan_first,
	ringbuf_test__thread_rescan, ringbuf_test__rl_tid, ringbuf_test__rl_yields, ringbuf_test__rl_sleeps;
extern const uint64_t ringbuf_test__cur_scanning;
uint32_t ringbuf_test__cur_owned(uint64_t v);
uint32_t ringbuf_test__cur_depth(uint64_t v);
uint32_t ringbuf_test__rl_ns(uint64_t w);
_Atomic(uint64_t) *ringbuf_test__kill_calls(void);
_Atomic(uint64_t) *ringbuf_test__rl_waits(void);
_Atomic(uint64_t) *ringbuf_test__rl_takeovers(void);
const char **ringbuf_test__invalid_why(void);
int ringbuf_test__validate(struct ringbuf *rb, uint64_t size);
uint64_t ringbuf_test__page_gen(const struct ringbuf *rb, unsigned cpu, uint32_t idx);
uint32_t ringbuf_test__page_commit(const struct ringbuf *rb, unsigned cpu, uint32_t idx);
bool ringbuf_test__gen_live(uint64_t gen);
uint64_t ringbuf_test__rl_self(void);
int ringbuf_test__reader_lock(struct ringbuf *rb, struct ringbuf__cpu *c);
void ringbuf_test__reader_unlock(struct ringbuf__cpu *c);
uint32_t ringbuf_test__dirty_pages(struct ringbuf__cpu *c);
int ringbuf_test__find_head(struct ringbuf *rb, unsigned cpu, struct ringbuf__cpu *c, uint32_t *head,
			    uint64_t *plink);
/* extern in the implementation (RINGBUF_TESTING), declared only there */
RINGBUF_API void ringbuf__set_reset_hook(void (*fn)(struct ringbuf *rb, unsigned cpu, int step, void *ctx),
					 void *ctx);
RINGBUF_API void ringbuf__set_membarrier_fail(int fail);
RINGBUF_API void ringbuf__test_rseq_counts(const struct ringbuf *rb, uint64_t out[2]);
/* the companion headers' (tests/impl/all_impl.c only) */
_Atomic unsigned *ringbuf_test__net_refused(void);
int ringbuf_test__tdat_write_fd(int fd, const void *buf, size_t n, int sock);
struct ringbuf_trace_registry;
struct ringbuf_trace_event;
int ringbuf_test__trace_parse(const void *area, size_t size, struct ringbuf_trace_registry *reg, bool check_sum);
struct ringbuf_trace_event *ringbuf_test__trace_first(const struct ringbuf_trace_registry *reg);
#endif

#if defined(RINGBUF_TEST_SHARED)
/* the names, for a test without the implementation */
#define RINGBUF__OWN_PERSIST ringbuf_test__own_persist
#define RINGBUF__OWN_RELEASING ringbuf_test__own_releasing
#define RINGBUF__OWN_TID ringbuf_test__own_tid
#define RINGBUF__OWNF_MIXED_NS ringbuf_test__ownf_mixed_ns
#define RINGBUF__RESET_BIT ringbuf_test__reset_bit
#define RINGBUF__RESCAN_FIRST ringbuf_test__rescan_first
#define RINGBUF_THREAD_RESCAN ringbuf_test__thread_rescan
#define RINGBUF__RL_TID ringbuf_test__rl_tid
#define RINGBUF__CUR_SCANNING ringbuf_test__cur_scanning
#define RINGBUF__RL_YIELDS ringbuf_test__rl_yields
#define RINGBUF__RL_SLEEPS ringbuf_test__rl_sleeps
/* private function-like macros */
#define RINGBUF__CUR_OWNED(v) ringbuf_test__cur_owned(v)
#define RINGBUF__CUR_DEPTH(v) ringbuf_test__cur_depth(v)
#define RINGBUF__RL_NS(w) ringbuf_test__rl_ns(w)
/* static variables: their objects (the thread's own for a thread-local one) */
#define ringbuf__kill_calls (*ringbuf_test__kill_calls())
#define ringbuf__rl_waits (*ringbuf_test__rl_waits())
#define ringbuf__rl_takeovers (*ringbuf_test__rl_takeovers())
#define ringbuf__invalid_why (*ringbuf_test__invalid_why())
/* static functions */
#define ringbuf__validate ringbuf_test__validate
#define ringbuf__page_gen ringbuf_test__page_gen
#define ringbuf__page_commit ringbuf_test__page_commit
#define ringbuf__gen_live ringbuf_test__gen_live
#define ringbuf__rl_self ringbuf_test__rl_self
#define ringbuf__reader_lock ringbuf_test__reader_lock
#define ringbuf__reader_unlock ringbuf_test__reader_unlock
#define ringbuf__dirty_pages ringbuf_test__dirty_pages
#define ringbuf__find_head ringbuf_test__find_head

/* ---- the companion headers (tests/impl/all_impl.c only) ---- */
#define ringbuf_net__refused (*ringbuf_test__net_refused())
#define ringbuf_tdat__write_fd ringbuf_test__tdat_write_fd
#define ringbuf_trace__parse ringbuf_test__trace_parse
#define ringbuf_trace__first ringbuf_test__trace_first
#endif /* RINGBUF_TEST_SHARED */
#endif
