/* floor.c - the least a funcgraph call costs with this ring buffer, for
 * bench/ftrace/run.sh (built without instrumentation, linked instead of
 * impl.c into fib_rb_floor). Hooks that write the same two records per call
 * as ringbuf_ftrace.h (funcgraph_entry {func, depth}, funcgraph_exit {func,
 * depth, overrun, calltime, rettime}) through the same trace header,
 * reserve/commit and record stamps (one clock read per record), and nothing
 * else: no busy flag (not async-signal-safe), no shadow stack (calltime is
 * not kept: 0), no frame key (no longjmp repair), no filter, no drop or
 * depth accounting. Not a tracer: a measure of what the real hooks add to
 * the ring buffer's write path.
 *
 * With -DCLOCK_ONLY (fib_rb_clock): hooks that read the buffer's clock once
 * each (the TSC after ringbuf_ftrace_start, as the tracer's two records do)
 * and write nothing: the part of a traced call's cost that any tracer
 * recording entry and return times pays on this machine, whatever its
 * buffer. */
#define RINGBUF_IMPLEMENTATION
#define RINGBUF_FTRACE_NO_HOOKS
#include "ringbuf_ftrace.h"

void __cyg_profile_func_enter(void *fn, void *site);
void __cyg_profile_func_exit(void *fn, void *site);

#ifdef CLOCK_ONLY
static _Thread_local uint64_t clock_sum; /* keeps the reads */

RINGBUF_FTRACE__NOINSTR static inline void clock_read(void)
{
	struct ringbuf *rb = atomic_load_explicit(&ringbuf_ftrace__g.rb, memory_order_acquire);
	if (rb)
		clock_sum += ringbuf__clock(rb);
}

RINGBUF_FTRACE__NOINSTR void __cyg_profile_func_enter(void *fn, void *site)
{
	(void)fn;
	(void)site;
	clock_read();
}

RINGBUF_FTRACE__NOINSTR void __cyg_profile_func_exit(void *fn, void *site)
{
	(void)fn;
	(void)site;
	clock_read();
}
#else
static _Thread_local int floor_depth;

RINGBUF_FTRACE__NOINSTR void __cyg_profile_func_enter(void *fn, void *site)
{
	struct ringbuf *rb = atomic_load_explicit(&ringbuf_ftrace__g.rb, memory_order_acquire);
	unsigned cpu;
	struct ringbuf__cpu *at;
	void *p;
	(void)site;
	if (!rb)
		return;
	cpu = atomic_load_explicit(&ringbuf_ftrace__g.cpu, memory_order_relaxed);
	p = ringbuf_trace__reserve_in(rb, cpu, RINGBUF_FTRACE_ID_GRAPH_ENT, sizeof(struct ringbuf_ftrace_graph_ent),
				      &at);
	if (!p)
		return;
	RINGBUF_FTRACE__PUT(p, struct ringbuf_ftrace_graph_ent, func, unsigned long, (uintptr_t)fn);
	RINGBUF_FTRACE__PUT(p, struct ringbuf_ftrace_graph_ent, depth, int, floor_depth++);
	ringbuf_commit(rb, cpu, p);
}

RINGBUF_FTRACE__NOINSTR void __cyg_profile_func_exit(void *fn, void *site)
{
	struct ringbuf *rb = atomic_load_explicit(&ringbuf_ftrace__g.rb, memory_order_acquire);
	unsigned cpu;
	struct ringbuf__cpu *at;
	void *p;
	(void)site;
	if (!rb)
		return;
	cpu = atomic_load_explicit(&ringbuf_ftrace__g.cpu, memory_order_relaxed);
	p = ringbuf_trace__reserve_in(rb, cpu, RINGBUF_FTRACE_ID_GRAPH_RET, sizeof(struct ringbuf_ftrace_graph_ret),
				      &at);
	if (!p)
		return;
	RINGBUF_FTRACE__PUT(p, struct ringbuf_ftrace_graph_ret, func, unsigned long, (uintptr_t)fn);
	RINGBUF_FTRACE__PUT(p, struct ringbuf_ftrace_graph_ret, depth, int, --floor_depth);
	RINGBUF_FTRACE__PUT(p, struct ringbuf_ftrace_graph_ret, overrun, unsigned int, 0);
	RINGBUF_FTRACE__PUT(p, struct ringbuf_ftrace_graph_ret, calltime, unsigned long long, 0);
	RINGBUF_FTRACE__PUT(p, struct ringbuf_ftrace_graph_ret, rettime, unsigned long long,
			    ringbuf_ftrace__rec_ts(rb, at));
	ringbuf_commit(rb, cpu, p);
}
#endif
