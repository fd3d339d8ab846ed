/* ringbuf_trace_snapshot.h - v0.1.0 - snapshot buffers and stack-trace events for ringbuf.h's trace events
 * SPDX-License-Identifier: MIT   (licence text at the end of ringbuf.h)
 *
 * A copy of a buffer's committed events taken while its writers go on (the
 * kernel's `snapshot` file and trigger), and the stack event (the kernel's
 * kernel_stack of the "ftrace" system) that ringbuf_trace_stacktrace() and
 * the `stacktrace` trigger write. The triggers themselves are
 * ringbuf_trace_filter.h's; this header is usable without it.
 *
 * USAGE
 *   In the one C file that defines RINGBUF_IMPLEMENTATION:
 *       #define RINGBUF_IMPLEMENTATION
 *       #include "ringbuf_trace_snapshot.h"   (includes ringbuf_trace_event.h, ringbuf.h)
 *   Everywhere else:  #include "ringbuf_trace_snapshot.h"  (or ringbuf_trace.h: every part)
 *
 * TABLE OF CONTENTS (grep for the anchors)
 *   >>snapshot   snapshot buffers and stack traces: API, design, implementation
 *
 * CONFIGURATION
 *   RINGBUF_TRACE_STACK_MAX     [impl-only] frames a stack event holds (default 16)
 *   RINGBUF_TRACE_ID_STACK      [global]    event id of the stack event (kernel_stack of the
 *                               "ftrace" system; default 32004, clear of registry ids)
 *   RINGBUF_API, RINGBUF_NAMESPACE, RINGBUF_STATIC as in ringbuf.h
 *
 * CONTEXTS
 *   ringbuf_trace_snapshot() and ringbuf_trace_stacktrace() are
 *   async-signal-safe (>>snapshot CONTEXTS); create/destroy/attach are for
 *   ordinary threads.
 */
#ifdef __cplusplus
#ifndef RINGBUF__CXX_SHIM_KEEP
/* C++: ringbuf.h's C11-atomics shim (>>cxx in ringbuf.h) stays in force until
 * the end of the outermost ringbuf_trace*.h being included, which ends it */
#define RINGBUF__CXX_SHIM_KEEP 1
#define RINGBUF__CXX_SHIM_BY_SNAPSHOT 1
#endif
#endif
#include "ringbuf_trace_event.h"

#ifndef RINGBUF_TRACE_SNAPSHOT_H
#define RINGBUF_TRACE_SNAPSHOT_H

#ifdef RINGBUF_NAMESPACE
#define ringbuf_trace__snapshot_testing  RINGBUF__NS(ringbuf_trace__snapshot_testing)
#define ringbuf_trace_snapshot_attach    RINGBUF__NS(ringbuf_trace_snapshot_attach)
#define ringbuf_trace_snapshot_buffer    RINGBUF__NS(ringbuf_trace_snapshot_buffer)
#define ringbuf_trace_snapshot_create    RINGBUF__NS(ringbuf_trace_snapshot_create)
#define ringbuf_trace_snapshot_destroy   RINGBUF__NS(ringbuf_trace_snapshot_destroy)
#define ringbuf_trace_snapshot_stats     RINGBUF__NS(ringbuf_trace_snapshot_stats)
#define ringbuf_trace_stack_format       RINGBUF__NS(ringbuf_trace_stack_format)
#define ringbuf_trace_stacktrace         RINGBUF__NS(ringbuf_trace_stacktrace)
#endif

#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ==== >>snapshot ======================================================== *
 *
 * A snapshot is a copy of a buffer's committed events, taken while its
 * writers go on (the kernel's `snapshot` file and trigger; the kernel swaps
 * the per-CPU buffer with a spare one, this library copies into one):
 *
 *   ringbuf_trace_snapshot_create(rb, &snap);          set-up: allocates the copy
 *   ringbuf_trace_snapshot_attach(&reg, snap);         for the `snapshot` trigger
 *   ringbuf_trace_set_trigger(&reg, "error_ev", "snapshot:1", &err);
 *   ... writers emit; the first error_ev takes the snapshot ...
 *   ringbuf_trace_save_tracedat(ringbuf_trace_snapshot_buffer(snap), &reg, "snap.dat", NULL);
 *
 * The snapshot buffer is an ordinary buffer of the source's geometry (ncpu,
 * page size, two pages more per CPU, producer/consumer mode, the source's
 * clock name; a TSC source's stamps are copied as nanoseconds, name "mono"):
 * read it, print it or export it like any other. Each event keeps its CPU,
 * payload and time stamp. Each snapshot replaces the previous one.
 *
 * WHAT IT HOLDS. Per CPU, a run of complete events in the order written:
 * everything committed, not consumed and stamped no later than the moment
 * the copy of that CPU began, from the oldest event still there (a clock that
 * stands still lets later events in; a clock's stamps that go back on a CPU
 * end the copy early). Events that writers overwrote (overwrite
 * mode) while the copy walked that CPU are not in it and are counted (`lost`:
 * what ringbuf.h's iterator reports skipped, so it may include overwritten
 * events stamped after the limit);
 * events the snapshot buffer could not take are counted (`dropped`). A CPU
 * whose reader lock a consumer held is left out and counted (`cpus_skipped`):
 * the snapshot never waits. So is, from where its walk got to, a CPU of an
 * overwrite-mode source whose head push stays claimed and not yet counted
 * through 8 tries with a sched_yield() between them: a writer the snapshot
 * interrupted mid push (a trigger in a signal handler), or a writer thread
 * preempted there on a loaded machine (RINGBUF_TRACE__SNAP_RETRIES). The trigger runs after the commit of its event, so
 * the snapshot holds it, unless that writer is nested (a signal handler) in
 * a writer of the same CPU buffer that it interrupted mid-event: then the
 * events of both are committed only when the interrupted writer commits, after
 * the snapshot (the events before them are in it).
 *
 * CONTEXTS. ringbuf_trace_snapshot() is async-signal-safe and never blocks
 * the writers: it is a reader (ringbuf.h's non-consuming iterator, set up at
 * create in the snapshot's own memory, NOWAIT) of the source and the only
 * writer of the snapshot buffer. One snapshot at a time: a call that finds
 * one in progress (another thread, or a signal handler that interrupted it)
 * returns RINGBUF_EBUSY at once and is counted (`busy`; a `snapshot:N`
 * trigger that fired into a refused snapshot has still used one of its N). Its ringbuf_reset()
 * of the snapshot buffer uses membarrier(2) (a system call, async-signal-safe)
 * and may wait for another thread's reader call on the snapshot buffer (T2).
 * Create, destroy and attach are for ordinary threads; destroy a snapshot only
 * once no trigger names it (remove the triggers) and no call runs.
 *
 * >>design: a snapshot (ringbuf_trace_snapshot)
 *   T1  busy: CAS 0 -> 1 (acquire; pairs with T5's release: the previous
 *       snapshot's writes to the snapshot buffer and stats happen before this
 *       one's). Failed: busy++ (relaxed), RINGBUF_EBUSY.
 *   T2  ringbuf_reset(snapshot buffer): no writer of it is in flight (only the
 *       holder of busy writes it), so this only waits for its readers' calls.
 *   T3  per CPU c: limit = ringbuf_time_stamp(source) (the clock now: the
 *       copy ends at the first event stamped later, so writers that keep
 *       writing cannot keep it going; per CPU the stamps do not go back);
 *       ringbuf_iter_init_in(scratch, c, NOWAIT): the reader-side
 *       page protocol of ringbuf.h's iterator (copy the record out of the page,
 *       then check the page's update count with an acquire fence: a seqlock
 *       read; a page reused under the copy restarts the walk at the oldest
 *       event and counts what was overwritten). The writers of the source take
 *       no lock and see no change: the iterator only loads their words.
 *   T4  for each event handed out: stamp = its time stamp (the snapshot
 *       buffer's clock reads it: a plain field, single writer), ringbuf_write()
 *       to the snapshot buffer's CPU c; rec.lost adds to `lost`, a refused
 *       write to `dropped`; the end of what is committed ends CPU c.
 *   T5  stats (relaxed stores), then busy = 0 (release).
 *   Why every event in the snapshot is complete: T3 hands out only records
 *   below the page's commit (acquire load; pairs with the writer's release
 *   commit: the record's bytes happen before) whose copy the page's update
 *   count validated: the writer bumps it at U1 and issues a release fence
 *   before it writes the page again; the iterator loads the count (acquire)
 *   before the copy, and after the copy issues an acquire fence and loads it
 *   again. If the copy read any byte of the reuse, that byte's store comes
 *   after the release fence, so (C11 7.17.4, fence-fence synchronization)
 *   U1 happens before the second load, which then sees the bump (or a later
 *   value) and the copy is thrown away (ringbuf.h, >>reader, non-consuming
 *   iterator). The writers of the source are never waited for and never
 *   see the snapshot: it stores to nothing of theirs but the reader lock
 *   word, which they do not read.
 *   Why it never blocks: T1 is one CAS; T3 is one CAS on the reader lock
 *   (NOWAIT); the iterator's loops are bounded (EAGAIN after its limit,
 *   RINGBUF_TRACE__SNAP_RETRIES tries, then the CPU is skipped and counted);
 *   T2's ringbuf_reset has no writer to wait for (busy excludes them) and
 *   waits at most for a reader call on the snapshot buffer made by another
 *   thread (ringbuf.h's reader lock: a few microseconds, or its bound of about
 *   half a second if that reader is preempted holding it; then RINGBUF_EBUSY
 *   and nothing copied). That is the one wait: read the snapshot buffer once
 *   no snapshot can fire (the trigger's count spent or removed) to avoid it.
 *   RINGBUF_TESTING: ringbuf_trace__snapshot_testing() installs a hook called
 *   at each step, with the step's number, so tests cut in there.
 */

struct ringbuf_trace_snapshot;

/** Counters of a snapshot (ringbuf_trace_snapshot_stats). The last four
 * describe the last snapshot taken. */
struct ringbuf_trace_snapshot_stats {
	uint64_t taken;        /* snapshots taken */
	uint64_t busy;         /* requests refused: one was in progress */
	uint64_t events;       /* events copied */
	uint64_t lost;         /* events of the source overwritten while the copy walked */
	uint64_t dropped;      /* events the snapshot buffer refused */
	uint64_t cpus_skipped; /* CPUs left out (reader lock held, or a walk that could not finish) */
};

/** A snapshot of src: allocates the snapshot buffer and the scratch memory
 * of the copy. Returns 0, RINGBUF_EINVAL or RINGBUF_ENOMEM. */
RINGBUF_API int ringbuf_trace_snapshot_create(struct ringbuf *src, struct ringbuf_trace_snapshot **out);
/** Free it (NULL: nothing). Not while a trigger names it or a call runs. */
RINGBUF_API void ringbuf_trace_snapshot_destroy(struct ringbuf_trace_snapshot *snap);
/** The snapshot buffer: read, print or export it like any buffer. */
RINGBUF_API struct ringbuf *ringbuf_trace_snapshot_buffer(struct ringbuf_trace_snapshot *snap);
/** Take a snapshot now (T1-T5 above). Returns the number of events copied,
 * RINGBUF_EBUSY (one in progress, counted; or a reader of the snapshot buffer
 * kept it from being emptied), RINGBUF_ESYS (no membarrier: the snapshot
 * buffer cannot be emptied while readers may run) or RINGBUF_EINVAL; on an
 * error nothing was copied. Async-signal-safe. */
RINGBUF_API int ringbuf_trace_snapshot(struct ringbuf_trace_snapshot *snap);
/** Its counters (relaxed loads; exact once no snapshot runs). */
RINGBUF_API void ringbuf_trace_snapshot_stats(const struct ringbuf_trace_snapshot *snap,
					      struct ringbuf_trace_snapshot_stats *st);
/** The snapshot the `snapshot` triggers of reg take (set before setting them:
 * a trigger keeps the snapshot it was set with; NULL detaches). */
RINGBUF_API int ringbuf_trace_snapshot_attach(struct ringbuf_trace_registry *reg,
					      struct ringbuf_trace_snapshot *snap);

/* STACK TRACES. ringbuf_trace_stacktrace() (and the `stacktrace` trigger)
 * writes the kernel's kernel_stack event of the "ftrace" system (id
 * RINGBUF_TRACE_ID_STACK): `int size` (frames) and `unsigned long caller[]`,
 * the return addresses of the calling function's callers, innermost first
 * (for the trigger: from the function that called the emitter; the emitter
 * itself first where the compiler did not inline it).
 * The export adds its format to every trace.dat; `trace-cmd report` prints it
 * as "<stack trace >" and one "=> name (address)" line per frame, with names
 * when the file carries the program's symbols (ringbuf_ftrace.h's
 * ringbuf_ftrace_save_tracedat writes them as its kallsyms).
 * How the frames are found: a frame-pointer walk (x86-64, i386, AArch64:
 * the frame record {previous frame, return address}), bounded by
 * RINGBUF_TRACE_STACK_MAX frames; each record beyond the first is read with
 * process_vm_readv(2) on the process itself (a system call: an unmapped
 * address ends the walk with EFAULT instead of a fault), and the chain must
 * go up the stack (each frame above the last, less than 1 MiB away). No
 * allocation, no lock, no glibc backtrace() (which may load libgcc_s and
 * malloc on first use): async-signal-safe. It needs the code on the stack
 * compiled with frame pointers (-fno-omit-frame-pointer; the default of
 * -O0, not of -O2 on x86-64): a frame without one is skipped or ends the walk
 * (the chain is checked, never trusted). Elsewhere, or when
 * process_vm_readv is refused (seccomp), only the first frame is recorded. */
#ifndef RINGBUF_TRACE_ID_STACK
#define RINGBUF_TRACE_ID_STACK 32004
#endif
/** The record of a kernel_stack event (caller[size] are used). */
RINGBUF__FLEX_BEGIN
struct ringbuf_trace_stack {
	struct ringbuf_trace_entry ent;
	int size;               /* frames in caller[] */
	unsigned long caller[]; /* return addresses, innermost first */
};
RINGBUF__FLEX_END
/** Write a stack event of the caller's stack to rb's cpu, skipping the skip
 * innermost frames (0: the first is the call site of ringbuf_trace_stacktrace
 * in its caller). Returns the frames recorded, or RINGBUF_ENOSPC (dropped,
 * counted by the buffer), RINGBUF_EINVAL. Async-signal-safe. */
RINGBUF_API int ringbuf_trace_stacktrace(struct ringbuf *rb, unsigned cpu, unsigned skip);
/** The kernel_stack format text for the "ftrace" system of a trace.dat. */
RINGBUF_API const char *ringbuf_trace_stack_format(void);
/* Its text, with the id, the offset of size, the offset and size of caller
 * (ringbuf_tracedat.h writes it for other word sizes). */
#define RINGBUF_TRACE__STACK_FMT                                                                       \
	"name: kernel_stack\nID: %u\nformat:\n"                                                       \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"                         \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"                         \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"                 \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"                                   \
	"\tfield:int size;\toffset:%u;\tsize:4;\tsigned:1;\n"                                          \
	"\tfield:unsigned long caller[8];\toffset:%u;\tsize:%u;\tsigned:0;\n\n"                        \
	"print fmt: \"\\t=> %%ps\\n\\t=> %%ps\\n\\t=> %%ps\\n\\t=> %%ps\\n\\t=> %%ps\\n"                     \
	"\\t=> %%ps\\n\\t=> %%ps\\n\\t=> %%ps\\n\", (void *)REC->caller[0], "                                \
	"(void *)REC->caller[1], (void *)REC->caller[2], (void *)REC->caller[3], "                     \
	"(void *)REC->caller[4], (void *)REC->caller[5], (void *)REC->caller[6], "                     \
	"(void *)REC->caller[7]\n"
#ifdef RINGBUF_TESTING
/** Tests: fn(step, ctx) at each step T1..T5 of ringbuf_trace_snapshot (T4:
 * after each event copied); NULL removes it. */
RINGBUF_API void ringbuf_trace__snapshot_testing(void (*fn)(int step, void *ctx), void *ctx);
#endif


#ifdef __cplusplus
}
#endif
#endif /* RINGBUF_TRACE_SNAPSHOT_H */

#if defined(RINGBUF_IMPLEMENTATION) && !defined(RINGBUF_TRACE_SNAPSHOT_IMPLEMENTATION_INCLUDED)
#define RINGBUF_TRACE_SNAPSHOT_IMPLEMENTATION_INCLUDED 1

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>
/* kill(): declared by ringbuf_trace_event.h's implementation (once: clang++
 * refuses a second declaration without glibc's throw()) */

/* ---- >>snapshot ------------------------------------------------------------ */

struct ringbuf_trace_snapshot {
	struct ringbuf *src, *dst;
	_Atomic(uint64_t) stamp; /* [T4] what the snapshot buffer's clock returns */
	_Atomic(uint32_t) busy;  /* [T1]/[T5] */
	_Atomic(uint64_t) taken, nbusy, events, lost, dropped, skipped;
	size_t scratch_size;
	void *scratch;           /* an iterator of one CPU of src (ringbuf_iter_init_in) */
};

#ifdef RINGBUF_TESTING
static void (*ringbuf_trace__snap_hook)(int step, void *ctx);
static void *ringbuf_trace__snap_hook_ctx;
RINGBUF_API void ringbuf_trace__snapshot_testing(void (*fn)(int step, void *ctx), void *ctx)
{
	ringbuf_trace__snap_hook_ctx = ctx;
	ringbuf_trace__snap_hook = fn;
}
#define RINGBUF_TRACE__SNAP_STEP(n)                                                   \
	do {                                                                          \
		if (ringbuf_trace__snap_hook)                                         \
			ringbuf_trace__snap_hook((n), ringbuf_trace__snap_hook_ctx);  \
	} while (0)
#else
#define RINGBUF_TRACE__SNAP_STEP(n) ((void)0)
#endif

static uint64_t ringbuf_trace__snap_clock(void *ctx)
{
	return atomic_load_explicit(&((struct ringbuf_trace_snapshot *)ctx)->stamp, memory_order_relaxed);
}

RINGBUF_API int ringbuf_trace_snapshot_create(struct ringbuf *src, struct ringbuf_trace_snapshot **out)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf_trace_snapshot *s;
	const char *name;
	int r;
	if (!src || !out)
		return RINGBUF_EINVAL;
	s = (struct ringbuf_trace_snapshot *)calloc(1, sizeof *s);
	if (!s)
		return RINGBUF_ENOMEM;
	s->src = src;
	s->scratch_size = ringbuf_iter_size(src, 0);
	s->scratch = malloc(s->scratch_size);
	name = ringbuf_clock_name(src);
	cfg.ncpu = ringbuf_ncpu(src);
	cfg.page_size = ringbuf_page_size(src);
	/* the reader page and the ring, and a page for the other page breaks */
	cfg.size_per_cpu = ((size_t)ringbuf_nr_pages(src) + 2) * cfg.page_size;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER; /* nothing overwritten: refusals are counted */
	cfg.clock = ringbuf_trace__snap_clock;
	cfg.clock_ctx = s;
	cfg.clock_name = !name || !strcmp(name, "x86-tsc") ? "mono" : name; /* readers give ns */
	if (!s->scratch) {
		free(s);
		return RINGBUF_ENOMEM;
	}
	r = ringbuf_create(&cfg, &s->dst);
	if (r < 0) {
		free(s->scratch);
		free(s);
		return r;
	}
	*out = s;
	return 0;
}

RINGBUF_API void ringbuf_trace_snapshot_destroy(struct ringbuf_trace_snapshot *snap)
{
	if (!snap)
		return;
	ringbuf_destroy(snap->dst);
	free(snap->scratch);
	free(snap);
}

RINGBUF_API struct ringbuf *ringbuf_trace_snapshot_buffer(struct ringbuf_trace_snapshot *snap)
{
	return snap ? snap->dst : NULL;
}

RINGBUF_API int ringbuf_trace_snapshot_attach(struct ringbuf_trace_registry *reg,
					      struct ringbuf_trace_snapshot *snap)
{
	if (!reg)
		return RINGBUF_EINVAL;
	pthread_mutex_lock(&ringbuf_trace__fmutex);
	reg->snapshot = snap;
	pthread_mutex_unlock(&ringbuf_trace__fmutex);
	return 0;
}

RINGBUF_API void ringbuf_trace_snapshot_stats(const struct ringbuf_trace_snapshot *snap,
					      struct ringbuf_trace_snapshot_stats *st)
{
	struct ringbuf_trace_snapshot *s = (struct ringbuf_trace_snapshot *)snap;
	if (!st)
		return;
	memset(st, 0, sizeof *st);
	if (!s)
		return;
	st->taken = atomic_load_explicit(&s->taken, memory_order_relaxed);
	st->busy = atomic_load_explicit(&s->nbusy, memory_order_relaxed);
	st->events = atomic_load_explicit(&s->events, memory_order_relaxed);
	st->lost = atomic_load_explicit(&s->lost, memory_order_relaxed);
	st->dropped = atomic_load_explicit(&s->dropped, memory_order_relaxed);
	st->cpus_skipped = atomic_load_explicit(&s->skipped, memory_order_relaxed);
}

/* The iterator's EAGAIN: a head push claimed and not yet counted (H1-H3 of
 * ringbuf.h), or a head in transition. Its owner is either a writer this call
 * interrupted (a trigger in a signal handler: it cannot go on before we
 * return, so no number of tries helps) or another thread, which a loaded
 * machine may have preempted there for a whole time slice: each retry yields
 * the CPU first so that one can finish. Tries before the CPU is given up and
 * counted in cpus_skipped (what was copied of it stays). */
#define RINGBUF_TRACE__SNAP_RETRIES 8

RINGBUF_API int ringbuf_trace_snapshot(struct ringbuf_trace_snapshot *snap)
{
	uint64_t events = 0, lost = 0, dropped = 0, skipped = 0;
	uint32_t zero = 0;
	unsigned cpu, ncpu;
	int saved = errno, r;
	if (!snap)
		return RINGBUF_EINVAL;
	/* [T1] one snapshot at a time; never wait */
	if (!atomic_compare_exchange_strong_explicit(&snap->busy, &zero, 1, memory_order_acquire,
						     memory_order_relaxed)) {
		atomic_fetch_add_explicit(&snap->nbusy, 1, memory_order_relaxed);
		return RINGBUF_EBUSY;
	}
	RINGBUF_TRACE__SNAP_STEP(1);
	/* [T2] the previous snapshot goes (else nothing is copied: the old
	 * one and a new one together would not be one run per CPU) */
	if ((r = ringbuf_reset(snap->dst)) < 0) {
		atomic_store_explicit(&snap->busy, 0, memory_order_release);
		errno = saved;
		return r;
	}
	RINGBUF_TRACE__SNAP_STEP(2);
	ncpu = ringbuf_ncpu(snap->src);
	for (cpu = 0; cpu < ncpu; cpu++) {
		struct ringbuf_iter *it = NULL;
		struct ringbuf_record rec;
		unsigned tries = 0;
		uint64_t limit;
		/* [T3] a non-consuming walk in our own memory, never waiting, up
		 * to the events stamped before now */
		if (ringbuf_iter_init_in(snap->scratch, snap->scratch_size, snap->src, cpu, RINGBUF_ITER_NOWAIT,
					 &it) < 0) {
			skipped++;
			continue;
		}
		limit = ringbuf_time_stamp(snap->src);
		RINGBUF_TRACE__SNAP_STEP(3);
		for (;;) {
			r = ringbuf_iter_next(it, &rec);
			if (r == RINGBUF_EAGAIN && ++tries < RINGBUF_TRACE__SNAP_RETRIES) {
				sched_yield(); /* a system call: async-signal-safe on Linux */
				continue;
			}
			if (r <= 0)
				break;
			lost += rec.lost;
			if (rec.ts > limit) {
				r = 0; /* written after the copy began: the end */
				break;
			}
			/* [T4] the event, with its time stamp, to the same CPU */
			atomic_store_explicit(&snap->stamp, rec.ts, memory_order_relaxed);
			if (ringbuf_write(snap->dst, cpu, rec.data, rec.len) == 0)
				events++;
			else
				dropped++;
			RINGBUF_TRACE__SNAP_STEP(4);
		}
		if (r < 0)
			skipped++; /* EBUSY (a consumer), EAGAIN to the end, ECORRUPT */
		ringbuf_iter_finish(it);
	}
	/* [T5] */
	atomic_store_explicit(&snap->events, events, memory_order_relaxed);
	atomic_store_explicit(&snap->lost, lost, memory_order_relaxed);
	atomic_store_explicit(&snap->dropped, dropped, memory_order_relaxed);
	atomic_store_explicit(&snap->skipped, skipped, memory_order_relaxed);
	atomic_fetch_add_explicit(&snap->taken, 1, memory_order_relaxed);
	RINGBUF_TRACE__SNAP_STEP(5);
	atomic_store_explicit(&snap->busy, 0, memory_order_release);
	errno = saved;
	return events > (uint64_t)INT32_MAX ? INT32_MAX : (int)events;
}

/* ---- >>snapshot: stack traces ---------------------------------------------- */

#ifndef RINGBUF_TRACE_STACK_MAX
#define RINGBUF_TRACE_STACK_MAX 16
#endif

RINGBUF_API const char *ringbuf_trace_stack_format(void)
{
	static char text[1024];
	if (!text[0]) /* same text every time: a race writes the same bytes */
		snprintf(text, sizeof text, RINGBUF_TRACE__STACK_FMT, (unsigned)RINGBUF_TRACE_ID_STACK,
			 (unsigned)offsetof(struct ringbuf_trace_stack, size),
			 (unsigned)offsetof(struct ringbuf_trace_stack, caller),
			 (unsigned)(8 * sizeof(unsigned long)));
	return text;
}

#if (defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)) && defined(__linux__) && \
	defined(SYS_process_vm_readv)
#define RINGBUF_TRACE__FP_WALK 1
#include <sys/uio.h>
/* Two words at addr, or false (unmapped: EFAULT, never a fault). */
static bool ringbuf_trace__read_words(uintptr_t addr, uintptr_t w[2])
{
	struct iovec local, remote;
	local.iov_base = w;
	local.iov_len = 2 * sizeof(uintptr_t);
	remote.iov_base = (void *)addr;
	remote.iov_len = 2 * sizeof(uintptr_t);
	return syscall(SYS_process_vm_readv, (long)getpid(), &local, 1UL, &remote, 1UL, 0UL) ==
	       (long)(2 * sizeof(uintptr_t));
}
#endif

/* The stack event: first (a return address known good), then the frame
 * records above frame (this function's caller's frame record), skip frames
 * left out. */
static int ringbuf_trace__stack_write(struct ringbuf *rb, unsigned cpu, uintptr_t first,
				      void *frame, unsigned skip)
{
	unsigned long pcs[RINGBUF_TRACE_STACK_MAX];
	struct ringbuf_trace_stack *e;
	unsigned n = 0;
	size_t len;
	int saved = errno;
	if (skip)
		skip--;
	else
		pcs[n++] = (unsigned long)first;
#ifdef RINGBUF_TRACE__FP_WALK
	{
		/* frame: our caller's record {previous frame, return address};
		 * its first word is the next record, read from our own frame */
		uintptr_t cur = (uintptr_t)frame, next = ((const uintptr_t *)frame)[0], w[2];
		while (n < RINGBUF_TRACE_STACK_MAX) {
			if (next <= cur || next - cur > ((uintptr_t)1 << 20) || (next & (sizeof(uintptr_t) - 1)))
				break; /* not a frame further up the stack: no frame pointer */
			if (!ringbuf_trace__read_words(next, w) || w[1] == 0)
				break;
			if (skip)
				skip--;
			else
				pcs[n++] = (unsigned long)w[1];
			cur = next;
			next = w[0];
		}
	}
#else
	(void)frame;
#endif
	len = offsetof(struct ringbuf_trace_stack, caller) + (size_t)n * sizeof(unsigned long);
	e = (struct ringbuf_trace_stack *)ringbuf_trace__reserve(rb, cpu, RINGBUF_TRACE_ID_STACK, len);
	errno = saved;
	if (!e)
		return RINGBUF_ENOSPC;
	/* the payload is 4-aligned only (8 with RINGBUF_F_ALIGN8): fields by
	 * offset and memcpy, never through the struct's 8-aligned type (UBSan:
	 * misaligned member access) */
	{
		int size = (int)n;
		unsigned char *b = (unsigned char *)e;
		memset(b + offsetof(struct ringbuf_trace_stack, size), 0,
		       len - offsetof(struct ringbuf_trace_stack, size));
		memcpy(b + offsetof(struct ringbuf_trace_stack, size), &size, sizeof size);
		memcpy(b + offsetof(struct ringbuf_trace_stack, caller), pcs, (size_t)n * sizeof(unsigned long));
	}
	ringbuf_commit(rb, cpu, e);
	return (int)n;
}

RINGBUF_API __attribute__((noinline)) int ringbuf_trace_stacktrace(struct ringbuf *rb, unsigned cpu,
								    unsigned skip)
{
	if (!rb || (cpu >= ringbuf_ncpu(rb) && cpu != RINGBUF_CPU_THREAD && cpu != RINGBUF_CPU_CURRENT))
		return RINGBUF_EINVAL;
	return ringbuf_trace__stack_write(rb, cpu, (uintptr_t)__builtin_return_address(0),
					  __builtin_frame_address(0), skip);
}

#endif /* RINGBUF_IMPLEMENTATION (ringbuf_trace_snapshot.h) */

/* C++: end ringbuf.h's shim where this header started it */
#if defined(__cplusplus) && defined(RINGBUF__CXX_SHIM_BY_SNAPSHOT)
#undef RINGBUF__CXX_SHIM_BY_SNAPSHOT
#undef RINGBUF__CXX_SHIM_KEEP
#include "ringbuf.h"
#endif
