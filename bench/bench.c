/* bench/bench.c - `make bench`: ringbuf.h against the floors of SPEC §6.
 *
 * One process, interleaved rounds: in every round each variant runs once for
 * BENCH_EVENTS events (the order rotates from round to round), so machine
 * noise hits all variants alike. For each variant the table gives the median,
 * min and max over the rounds and the ratio of its median to the median of
 * its floor, measured in the same run. The same numbers, the machine and the
 * compiler go to build/bench.json (BENCH_JSON). Missed targets are reported,
 * never turned into a failure.
 *
 * FLOORS: what a tracer must do minus the library: append a record of u32
 * header + u64 time stamp + payload to a 1 MiB thread-local array with a
 * pointer bump and wrap, in one out-of-line call per event (a tracer call
 * site calls into the tracer), with (a) no clock, (b) clock_gettime
 * (CLOCK_MONOTONIC), (c) rdtsc (x86-64 only). Every loop stores the event
 * number into its source payload and hides the payload from the optimiser
 * (BENCH_OPAQUE), so floors and ringbuf variants copy the same bytes.
 *
 * Environment:
 *   BENCH_QUICK=1        smoke run: 3 rounds of 200 000 events
 *   BENCH_ROUNDS=n       rounds (default 7, at most 31)
 *   BENCH_EVENTS=n       events per variant per round (default 10 000 000)
 *   BENCH_SIG_WRITES=n   writes per signal in the signal variants (default 32)
 *   BENCH_READER_PCT=n   fill level (%) the waiting live reader waits for (default 25)
 *   BENCH_ONLY=id,id     run only these variants (ids as in the table), e.g.
 *                        to profile one loop:  BENCH_ONLY=rb_clock_16 perf record ...
 *   BENCH_TIME=wall      time loops by wall-clock time instead of thread CPU time
 *   BENCH_JSON=path      JSON output (default build/bench.json; "-" for none)
 *
 * C++: the rb_cxx_* variants run the same reserve/fill/commit loop compiled
 * as C++ (bench/bench_cxx.cpp, the inline fast path through ringbuf.h's C++
 * shim), each with the ratio to its C twin in the same run.
 *
 * The per-thread and guarded per-CPU mappings (RINGBUF_CPU_THREAD,
 * RINGBUF_CPU_CURRENT) are measured when ringbuf.h has them, and reported as
 * "no API" otherwise.
 */
#define _GNU_SOURCE 1
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

/* Heap calls made by this program (ringbuf.h included) are counted, to check
 * "no allocation after init" (SPEC §6) on every timed loop. */
/* LDFLAGS: -Wl,--wrap=malloc -Wl,--wrap=calloc -Wl,--wrap=realloc -Wl,--wrap=posix_memalign -Wl,--wrap=aligned_alloc */

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"

#ifndef BENCH_BUILD
#define BENCH_BUILD "(unknown: build with `make bench`)"
#endif

/* ---- heap accounting (-Wl,--wrap) ----------------------------------------- */

static atomic_ulong heap_calls;
void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
int __real_posix_memalign(void **p, size_t a, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
int __wrap_posix_memalign(void **p, size_t a, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);
void *__wrap_malloc(size_t n) { atomic_fetch_add(&heap_calls, 1); return __real_malloc(n); }
void *__wrap_calloc(size_t k, size_t n) { atomic_fetch_add(&heap_calls, 1); return __real_calloc(k, n); }
void *__wrap_realloc(void *p, size_t n) { atomic_fetch_add(&heap_calls, 1); return __real_realloc(p, n); }
int __wrap_posix_memalign(void **p, size_t a, size_t n)
{
	atomic_fetch_add(&heap_calls, 1);
	return __real_posix_memalign(p, a, n);
}
void *__wrap_aligned_alloc(size_t a, size_t n)
{
	atomic_fetch_add(&heap_calls, 1);
	return __real_aligned_alloc(a, n);
}
static unsigned long timed_heap_calls; /* heap calls made inside timed loops */

/* ---- small utilities ------------------------------------------------------ */

static _Noreturn void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("bench: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static int ncpus_online;
static atomic_bool pin_ok = true;

static void pin_to(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
		pin_ok = false;
}

static struct ringbuf *make_rb_flags(unsigned ncpu, size_t per_cpu, int mode, ringbuf_clock_fn clock,
				     unsigned flags)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	int r;
	cfg.flags = flags;
	cfg.ncpu = ncpu;
	cfg.size_per_cpu = per_cpu;
	cfg.mode = mode;
	cfg.clock = clock;
	if ((r = ringbuf_create(&cfg, &rb)) < 0)
		die("ringbuf_create: %s", ringbuf_strerror(r));
	return rb;
}

static struct ringbuf *make_rb(unsigned ncpu, size_t per_cpu, int mode, ringbuf_clock_fn clock)
{
	return make_rb_flags(ncpu, per_cpu, mode, clock, 0);
}

static uint64_t lost_of(struct ringbuf *rb, unsigned cpu)
{
	struct ringbuf_stats st;
	if (ringbuf_stats_cpu(rb, cpu, &st) < 0)
		return 0;
	return st.dropped_events + st.commit_overrun;
}

static void reset_cpu(struct ringbuf *rb, unsigned cpu)
{
	int r = ringbuf_reset_cpu(rb, cpu);
	if (r < 0)
		die("ringbuf_reset_cpu: %s", ringbuf_strerror(r));
}

/* ---- clocks for cfg.clock ------------------------------------------------- */

/* The TSC variant uses the library's built-in TSC clock (rdtsc inline in
 * the writer, converted to ns by the readers) when it has one. */
#ifdef RINGBUF_CLOCK_TSC
#define tsc_clock RINGBUF_CLOCK_TSC
#else
static uint64_t tsc_clock(void *ctx)
{
	(void)ctx;
	return rdtsc();
}
#endif

static uint64_t counter_value;
static uint64_t counter_clock(void *ctx)
{
	(void)ctx;
	return counter_value++;
}

/* ---- floors and loops (bench_common.h) ----------------------------------- */

DEFINE_FLOOR(floor_none_16, 16, TS_NONE)
DEFINE_FLOOR(floor_clock_8, 8, TS_GETTIME)
DEFINE_FLOOR(floor_clock_16, 16, TS_GETTIME)
DEFINE_FLOOR(floor_clock_64, 64, TS_GETTIME)
DEFINE_FLOOR(floor_clock_256, 256, TS_GETTIME)
DEFINE_FLOOR(floor_clock_1024, 1024, TS_GETTIME)
DEFINE_FLOOR(floor_tsc_16, 16, TS_RDTSC)

DEFINE_RB_LOOP(8)
DEFINE_RB_LOOP(16)
DEFINE_RB_LOOP(64)
DEFINE_RB_LOOP(256)
DEFINE_RB_LOOP(1024)

static BENCH_NOINLINE uint64_t rb_write_loop_16(struct ringbuf *rb, unsigned cpu, size_t n)
{
	unsigned char src[16] __attribute__((aligned(8)));
	uint64_t fails = 0;
	memset(src, 0x5a, sizeof src);
	for (size_t i = 0; i < n; i++) {
		memcpy(src, &i, 8);
		BENCH_OPAQUE(src);
		if (BENCH_UNLIKELY(ringbuf_write(rb, cpu, src, 16) < 0))
			fails++;
	}
	return fails;
}

/* ---- variants ------------------------------------------------------------- */

#define MAX_ROUNDS 31

enum unit { NS_EVENT, MEV_S, MB_S };
static const char *const unit_name[] = { "ns/ev", "Mev/s", "MB/s" };

struct variant {
	const char *id;
	const char *what;
	enum unit unit;
	const char *vs; /* id of the variant the median is divided by, or NULL */
	void (*setup)(struct variant *v);
	double (*run)(struct variant *v, size_t n); /* one sample in `unit` */
	void (*floor_loop)(size_t n);
	uint64_t (*rb_loop)(struct ringbuf *rb, unsigned cpu, size_t n);
	ringbuf_clock_fn clock;
	int mode;
	const char *skip; /* why it is not run, or NULL */
	long extra_cfg;   /* variant-specific setting */
	/* state */
	struct ringbuf *rb;
	bool enabled;
	/* results */
	double s[MAX_ROUNDS];
	int ns;
	double med, min, max, ratio; /* ratio < 0: none */
	double ratio_min;            /* min / min of the floor: the least disturbed pair */
	uint64_t lost, nulls, events, extra; /* summed over rounds */
	uint64_t lost_max;                   /* largest loss of one round */
	uint64_t waits, timeouts;            /* live reader: ringbuf_wait calls, timeouts */
	double extra_d[MAX_ROUNDS];          /* variant-specific per-round value */
};

/* Timing. A loop is timed by the CPU time of its thread by default
 * (CLOCK_THREAD_CPUTIME_ID), so that time the scheduler gives other processes
 * on a shared machine is not counted; BENCH_TIME=wall times wall-clock time
 * instead. Either way a timed loop whose wall time exceeds its CPU time by
 * more than 5% is counted as disturbed, and the count is reported. */
static bool time_wall;
static atomic_ulong samples_total, samples_disturbed;

struct stamp {
	uint64_t wall, cpu;
};

static struct stamp stamp_now(void)
{
	struct stamp s;
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	s.cpu = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
	s.wall = now_ns();
	return s;
}

/* Nanoseconds from a to b, by the selected clock. */
static uint64_t stamp_span(struct stamp a, struct stamp b)
{
	uint64_t wall = b.wall - a.wall, cpu = b.cpu - a.cpu;
	atomic_fetch_add(&samples_total, 1);
	if (wall > cpu + cpu / 20)
		atomic_fetch_add(&samples_disturbed, 1);
	return time_wall ? wall : cpu;
}

static double per(uint64_t ns, size_t n)
{
	return (double)ns / (double)n;
}

/* Begin/end of a timed loop: also counts heap calls made inside it. */
static unsigned long heap_mark;
static struct stamp timed_begin(void)
{
	heap_mark = atomic_load(&heap_calls);
	return stamp_now();
}
static uint64_t timed_end(struct stamp t0)
{
	uint64_t ns = stamp_span(t0, stamp_now());
	timed_heap_calls += atomic_load(&heap_calls) - heap_mark;
	return ns;
}

static double run_floor(struct variant *v, size_t n)
{
	struct stamp t0 = timed_begin();
	v->floor_loop(n);
	uint64_t ns = timed_end(t0);
	v->events += n;
	return per(ns, n);
}

static void setup_rb1(struct variant *v)
{
	v->rb = make_rb(1, (size_t)1 << 20, v->mode, v->clock);
}

static double run_rb(struct variant *v, size_t n)
{
	struct stamp t0 = timed_begin();
	uint64_t nulls = v->rb_loop(v->rb, 0, n);
	uint64_t ns = timed_end(t0);
	v->nulls += nulls;
	v->events += n;
	return per(ns, n);
}

/* Producer/consumer mode, writer alone: writes in chunks that fit (about 60%
 * of the ring), the ring emptied by reset between chunks (not timed), so every
 * reservation succeeds and what is timed is the P/C fast path. */
static double run_rb_pc(struct variant *v, size_t n)
{
	size_t chunk = (size_t)ringbuf_nr_pages(v->rb) * (ringbuf_page_size(v->rb) - 16) / 20 * 6 / 10;
	uint64_t total = 0;
	size_t done = 0;
	while (done < n) {
		size_t k = n - done < chunk ? n - done : chunk;
		reset_cpu(v->rb, 0);
		struct stamp t0 = timed_begin();
		v->nulls += rb_loop_16(v->rb, 0, k);
		total += timed_end(t0);
		done += k;
	}
	v->lost += lost_of(v->rb, 0);
	v->events += n;
	return (double)total / (double)n;
}

/* -- mapped writer contexts: the thread's own buffer, or the current CPU's
 * (guarded); one buffer per configured CPU, the main thread pinned to CPU 0 -- */

enum { MAP_THREAD = 1, MAP_CURRENT = 2 };
#if defined(RINGBUF_CPU_THREAD) && defined(RINGBUF_CPU_CURRENT)
#define BENCH_HAVE_MAPPED 1
static unsigned mapped_cpu(const struct variant *v)
{
	return v->extra_cfg == MAP_CURRENT || v->extra_cfg == 5 /* MAP_CURRENT_CAS */ ? RINGBUF_CPU_CURRENT
										      : RINGBUF_CPU_THREAD;
}
static unsigned mapped_cpu_thread(void)
{
	return RINGBUF_CPU_THREAD;
}
#else
#define BENCH_HAVE_MAPPED 0
static unsigned mapped_cpu(const struct variant *v)
{
	(void)v;
	return 0;
}
static unsigned mapped_cpu_thread(void)
{
	return 0;
}
#endif

/* RINGBUF_CPU_CURRENT writes to a per-CPU block (RINGBUF_F_CPU_CURRENT:
 * the restartable sequence where the machine has it; MAP_CURRENT_CAS with
 * RINGBUF_F_NO_RSEQ: the same rules by CAS, as on other machines);
 * RINGBUF_CPU_THREAD to an ordinary one. */
enum { MAP_CURRENT_CAS = 5 };
static void setup_mapped(struct variant *v)
{
	long conf = sysconf(_SC_NPROCESSORS_CONF);
	unsigned flags = v->extra_cfg == MAP_CURRENT	   ? RINGBUF_F_CPU_CURRENT
			 : v->extra_cfg == MAP_CURRENT_CAS ? RINGBUF_F_CPU_CURRENT | RINGBUF_F_NO_RSEQ
							   : 0u;
	v->rb = make_rb_flags(conf > 0 ? (unsigned)conf : 1, (size_t)1 << 20, RINGBUF_MODE_OVERWRITE, NULL, flags);
}

/* RINGBUF_CPU_THREAD for a thread beyond the buffer count (>>contexts,
 * THREAD FALLBACK). MAP_THREAD_SHARED: every buffer kept for sharing
 * (ringbuf_thread_shared(rb, ncpu)), so each event takes one for itself (the
 * cost a thread beyond the count pays instead of dropping). MAP_THREAD_DROP: the
 * only buffer claimed by a parked thread, every event dropped (counted): what
 * such a thread pays per event without shared buffers (it used to be a
 * kill(tid, 0) per owner, 450-925 ns). */
enum { MAP_THREAD_SHARED = 3, MAP_THREAD_DROP = 4 };
static sem_t drop_holder_ready;

static void *drop_holder(void *arg)
{
	struct ringbuf *rb = (struct ringbuf *)arg;
	void *p = ringbuf_reserve(rb, mapped_cpu_thread(), 16);
	if (p) {
		memset(p, 0, 16);
		ringbuf_commit(rb, mapped_cpu_thread(), p);
	}
	sem_post(&drop_holder_ready);
	for (;;)
		pause(); /* keeps the claim while the process runs */
	return NULL;
}

static void setup_mapped_beyond(struct variant *v)
{
	pthread_t th;
	v->rb = make_rb(v->extra_cfg == MAP_THREAD_DROP ? 1 : 2, (size_t)1 << 20, RINGBUF_MODE_OVERWRITE, NULL);
#if BENCH_HAVE_MAPPED && defined(RINGBUF__RESCAN_FIRST)
	if (v->extra_cfg == MAP_THREAD_SHARED) {
		if (ringbuf_thread_shared(v->rb, 2) != 0)
			die("ringbuf_thread_shared failed");
		return;
	}
	sem_init(&drop_holder_ready, 0, 0);
	if (pthread_create(&th, NULL, drop_holder, v->rb) != 0)
		die("pthread_create failed");
	pthread_detach(th);
	sem_wait(&drop_holder_ready);
#else
	(void)th;
	v->skip = "no shared fallback in this ringbuf.h";
#endif
}

/* the mapped modes as callers write them: the constant in the call (the
 * inline path for it, >>inline in ringbuf.h); rb_loop_16 with the mode in a
 * variable goes through the branch kept for an index (about +0.3 ns for the
 * per-thread mapping on the 2-vCPU VM) */
#if BENCH_HAVE_MAPPED
DEFINE_RB_LOOP_AT(rb_loop_16_thread, 16, RINGBUF_CPU_THREAD)
DEFINE_RB_LOOP_AT(rb_loop_16_current, 16, RINGBUF_CPU_CURRENT)
#else
#define rb_loop_16_thread rb_loop_16
#define rb_loop_16_current rb_loop_16
#endif

static double run_mapped_here(struct variant *v, size_t n)
{
	struct stamp t0 = timed_begin();
	uint64_t nulls = v->extra_cfg == MAP_CURRENT || v->extra_cfg == MAP_CURRENT_CAS
				 ? rb_loop_16_current(v->rb, mapped_cpu(v), n)
				 : rb_loop_16_thread(v->rb, mapped_cpu(v), n);
	uint64_t ns = timed_end(t0);
	v->nulls += nulls;
	v->events += n;
	return per(ns, n);
}

/* The rows beyond the buffer count (MAP_THREAD_SHARED, MAP_THREAD_DROP) run
 * each round on a new thread of their own, timed there (thread CPU time):
 * the main thread already writes to four mapped handles (rb_thread_16 and
 * the rb_current rows), the most one thread may (docs/contexts.md), so there
 * a fifth handle's every event was dropped, uncounted by the row: until
 * stop 35 rb_thread_shared_16 in a full run measured drops (about 40 ns, as
 * rb_thread_drop_16) and printed "reservations returned NULL"; with
 * BENCH_ONLY, which leaves fewer handles, it measured shared events (about
 * 55-59 ns on the Intel Xeon VM). A new thread's first events make its entry
 * and run its first scans: a few events of the round. */
struct mapped_job {
	struct variant *v;
	size_t n;
	double per_event;
};

static void *mapped_job_run(void *arg)
{
	struct mapped_job *j = (struct mapped_job *)arg;
	j->per_event = run_mapped_here(j->v, j->n);
	return NULL;
}

static double run_mapped(struct variant *v, size_t n)
{
	struct mapped_job j = {v, n, 0};
	pthread_t th;
	if (v->extra_cfg != MAP_THREAD_SHARED && v->extra_cfg != MAP_THREAD_DROP)
		return run_mapped_here(v, n);
	if (pthread_create(&th, NULL, mapped_job_run, &j) != 0 || pthread_join(th, NULL) != 0)
		die("pthread_create failed");
	return j.per_event;
}

/* RINGBUF_CPU_CURRENT through the out-of-line G1-G5 only (>>contexts): what
 * the inline claim falls back to, and what every event paid before it. The
 * same loop as rb_loop_16, calling the out-of-line entries directly. */
static BENCH_NOINLINE uint64_t rb_outline_loop_16(struct ringbuf *rb, unsigned cpu, size_t n)
{
	unsigned char src[16] __attribute__((aligned(8)));
	uint64_t nulls = 0;
	memset(src, 0x5a, sizeof src);
	for (size_t i = 0; i < n; i++) {
		void *p;
		memcpy(src, &i, 8);
		BENCH_OPAQUE(src);
		p = ringbuf__reserve_slow(rb, cpu, 16);
		if (BENCH_UNLIKELY(!p)) {
			nulls++;
			continue;
		}
		memcpy(p, src, 16);
		ringbuf__commit_slow(rb, cpu, p);
	}
	return nulls;
}

static double run_mapped_outline(struct variant *v, size_t n)
{
	struct stamp t0 = timed_begin();
	uint64_t nulls = rb_outline_loop_16(v->rb, mapped_cpu(v), n);
	uint64_t ns = timed_end(t0);
	v->nulls += nulls;
	v->events += n;
	return per(ns, n);
}

/* -- the owner-word claim of RINGBUF_CPU_CURRENT alone (issue 13) --
 * What one event's G2 + G5 (>>contexts) cost, without the ring buffer:
 *   claim_cas   the portable protocol (RINGBUF_F_NO_RSEQ, other machines):
 *               CAS owner 0 -> id (acq_rel, one LOCK CMPXCHG on x86-64) and
 *               the release store of 0;
 *   claim_rseq  the restartable sequence: checks the CPU number and that the
 *               word is free, and claims it with a plain store (the commit
 *               instruction); the release store frees it, as ringbuf.h's
 *               sequence (ringbuf__rseq_take, PER-CPU BLOCKS in >>contexts).
 * Both read the CPU number from the thread's rseq area, index a per-CPU
 * word array and hide the word from the optimiser, so they differ only in
 * the claim. x86-64 with glibc's rseq registration only. */
#if defined(__x86_64__) && defined(__linux__) && defined(RINGBUF__HAVE_RSEQ)
#define BENCH_HAVE_RSEQ 1
#define BENCH_CLAIM_WORDS 1024
static _Atomic(uint64_t) claim_words[BENCH_CLAIM_WORDS];
#define BENCH_CLAIM_ID ((uint64_t)7 << 32 | 1234u)

static bool rseq_ok(void)
{
	return &__rseq_size && __rseq_size >= 8;
}

static inline unsigned rseq_area_cpu(void)
{
	return *(volatile uint32_t *)((char *)__builtin_thread_pointer() + __rseq_offset + 4);
}

/* 0: claimed; 1: the word was not free or the thread is on another CPU;
 * -1: the sequence was aborted (preemption, migration, signal): retry. The
 * abort handler sits in its own section behind glibc's signature
 * (RSEQ_SIG, 0x53053053 on x86, the 4 bytes before the abort address). */
static inline int rseq_claim(_Atomic(uint64_t) *w, uint32_t cpu, uint64_t id)
{
	char *rs = (char *)__builtin_thread_pointer() + __rseq_offset;
	__asm__ goto(".pushsection __rseq_cs, \"aw\"\n\t"
		     ".balign 32\n\t"
		     "3: .long 0, 0\n\t"
		     ".quad 1f, 2f - 1f, 4f\n\t"
		     ".popsection\n\t"
		     ".pushsection __rseq_failure, \"ax\"\n\t"
		     ".byte 0x0f, 0xb9, 0x3d\n\t"
		     ".long 0x53053053\n\t"
		     "4: jmp %l[aborted]\n\t"
		     ".popsection\n\t"
		     "leaq 3b(%%rip), %%rax\n\t"
		     "movq %%rax, 8(%[rs])\n\t"
		     "1: cmpl %[cpu], 4(%[rs])\n\t"
		     "jnz %l[other]\n\t"
		     "cmpq $0, (%[w])\n\t"
		     "jnz %l[other]\n\t"
		     "movq %[id], (%[w])\n\t"
		     "2:\n\t"
		     :
		     : [rs] "r"(rs), [cpu] "r"(cpu), [w] "r"(w), [id] "r"(id)
		     : "memory", "cc", "rax"
		     : aborted, other);
	return 0;
aborted:
	return -1;
other:
	return 1;
}

static double run_claim(struct variant *v, size_t n)
{
	uint64_t misses = 0;
	struct stamp t0 = timed_begin();
	for (size_t k = 0; k < n; k++) {
		unsigned cpu = rseq_area_cpu() % BENCH_CLAIM_WORDS;
		_Atomic(uint64_t) *w = &claim_words[cpu];
		if (v->extra_cfg) {
			int r;
			while ((r = rseq_claim(w, cpu, BENCH_CLAIM_ID)) != 0) {
				cpu = rseq_area_cpu() % BENCH_CLAIM_WORDS; /* moved or aborted */
				w = &claim_words[cpu];
				misses++;
			}
		} else {
			uint64_t zero = 0;
			if (!atomic_compare_exchange_strong_explicit(w, &zero, BENCH_CLAIM_ID, memory_order_acq_rel,
								     memory_order_relaxed))
				misses++;
		}
		BENCH_OPAQUE(w);
		atomic_store_explicit(w, 0, memory_order_release);
	}
	uint64_t ns = timed_end(t0);
	v->extra += misses;
	v->events += n;
	return per(ns, n);
}

/* rb_cpunum_16: an explicit index read from rseq's CPU number at each event,
 * no claim (one writer: nothing else writes to any buffer): the floor of
 * RINGBUF_CPU_CURRENT, which must read the CPU number and index with it
 * before its claim (G2), its state stores (G3, G4) and its checks. The
 * offset of the rseq area is copied once, as ringbuf.h copies it (rb->rseq). */
static ptrdiff_t cpunum_off;

static BENCH_NOINLINE uint64_t rb_cpunum_loop_16(struct ringbuf *rb, size_t n)
{
	unsigned char src[16] __attribute__((aligned(8)));
	uint64_t nulls = 0;
	memset(src, 0x5a, sizeof src);
	for (size_t i = 0; i < n; i++) {
		unsigned b = *(volatile uint32_t *)((char *)__builtin_thread_pointer() + cpunum_off + 4);
		void *p;
		memcpy(src, &i, 8);
		BENCH_OPAQUE(src);
		p = ringbuf_reserve(rb, b, 16);
		if (BENCH_UNLIKELY(!p)) {
			nulls++;
			continue;
		}
		memcpy(p, src, 16);
		ringbuf_commit(rb, b, p);
	}
	return nulls;
}

static double run_cpunum(struct variant *v, size_t n)
{
	struct stamp t0;
	uint64_t nulls, ns;
	cpunum_off = __rseq_offset;
	t0 = timed_begin();
	nulls = rb_cpunum_loop_16(v->rb, n);
	ns = timed_end(t0);
	v->nulls += nulls;
	v->events += n;
	return per(ns, n);
}
#else
#define BENCH_HAVE_RSEQ 0
static bool rseq_ok(void)
{
	return false;
}
static double run_claim(struct variant *v, size_t n)
{
	(void)v;
	(void)n;
	return 0;
}
static double run_cpunum(struct variant *v, size_t n)
{
	(void)v;
	(void)n;
	return 0;
}
#endif

/* -- nested write from a signal handler -- */

static struct ringbuf *sig_rb;
static volatile unsigned sig_writes = 32;
static volatile uint64_t sig_ns, sig_nulls, sig_count;
static uint64_t timer_overhead_ns; /* one now_ns() pair, subtracted per signal */

static void sig_handler(int signo)
{
	unsigned char src[16] __attribute__((aligned(8)));
	int saved = errno;
	unsigned m = sig_writes;
	uint64_t nulls = 0, t0, t1;
	(void)signo;
	memset(src, 0x5a, sizeof src);
	t0 = now_ns();
	for (unsigned k = 0; k < m; k++) {
		void *p;
		memcpy(src, &k, sizeof k);
		BENCH_OPAQUE(src);
		p = ringbuf_reserve(sig_rb, 0, 16);
		if (BENCH_UNLIKELY(!p)) {
			nulls++;
			continue;
		}
		memcpy(p, src, 16);
		ringbuf_commit(sig_rb, 0, p);
	}
	t1 = now_ns();
	sig_ns += t1 - t0;
	sig_nulls += nulls;
	sig_count++;
	errno = saved;
}

static void setup_signal(struct variant *v)
{
	struct sigaction sa;
	uint64_t best = UINT64_MAX;
	setup_rb1(v);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = sig_handler;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) != 0)
		die("sigaction: %s", strerror(errno));
	/* cost of the two clock reads around the handler's writes (the minimum
	 * of many tries: what the pair costs when nothing else happens) */
	for (int k = 0; k < 10000; k++) {
		uint64_t a = now_ns(), b = now_ns();
		if (b - a < best)
			best = b - a;
	}
	timer_overhead_ns = best;
}

/* extra_cfg = 1: the signal interrupts a writer that holds a reservation (the
 * handler's writes are nested, depth 2); 0: raised between two writes. */
static double run_signal(struct variant *v, size_t n)
{
	unsigned char src[16] __attribute__((aligned(8)));
	unsigned m = sig_writes;
	size_t signals = (n + m - 1) / m;
	uint64_t ns;
	memset(src, 0x5a, sizeof src);
	sig_rb = v->rb;
	sig_ns = sig_nulls = sig_count = 0;
	unsigned long h0 = atomic_load(&heap_calls);
	for (size_t s = 0; s < signals; s++) {
		void *p = NULL;
		if (v->extra_cfg) {
			memcpy(src, &s, 8);
			p = ringbuf_reserve(v->rb, 0, 16);
			if (p)
				memcpy(p, src, 16);
		}
		raise(SIGUSR1);
		if (p)
			ringbuf_commit(v->rb, 0, p);
	}
	timed_heap_calls += atomic_load(&heap_calls) - h0;
	if (sig_count != signals)
		die("%s: %llu of %zu signals handled", v->id, (unsigned long long)sig_count, signals);
	ns = sig_ns > sig_count * timer_overhead_ns ? sig_ns - sig_count * timer_overhead_ns : 0;
	v->nulls += sig_nulls;
	v->events += signals * m;
	return (double)ns / (double)(signals * m);
}

/* -- a consuming reader thread on the other core (producer/consumer mode) --
 * v->extra_cfg selects the reader:
 *   READER_WAIT  consume until empty, then ringbuf_wait() until the ring is
 *                half full (the kernel's default buffer_percent) -- how a
 *                trace recorder reads;
 *   READER_SPIN  consume, and poll again at once when empty (a few pauses):
 *                the worst case for the writer, whose cache lines the reader
 *                keeps pulling over, event by event. */
enum { READER_WAIT = 0, READER_SPIN = 1 };
static int reader_wait_pct = 25; /* BENCH_READER_PCT */

struct reader_ctx {
	struct ringbuf *rb;
	int how;
	atomic_int ready, stop;
	uint64_t got, errors, waits, timeouts;
};

static int reader_take(struct reader_ctx *x)
{
	struct ringbuf_record rec;
	int r = ringbuf_consume(x->rb, 0, &rec);
	if (r > 0)
		x->got++;
	else if (r < 0 && r != RINGBUF_EAGAIN)
		x->errors++;
	return r;
}

static void *reader_main(void *arg)
{
	struct reader_ctx *x = arg;
	pin_to(1);
	atomic_store_explicit(&x->ready, 1, memory_order_release);
	for (;;) {
		int r = reader_take(x);
		if (r > 0)
			continue;
		if (r < 0 && r != RINGBUF_EAGAIN)
			break;
		if (r == 0 && atomic_load_explicit(&x->stop, memory_order_acquire)) {
			/* the writer is done: drain what is left, then stop */
			while ((r = reader_take(x)) != 0)
				if (r < 0 && r != RINGBUF_EAGAIN)
					break;
			break;
		}
		if (x->how == READER_WAIT) {
			x->waits++;
			/* a timeout while the writer still writes at full speed
			 * (the ring fills to the watermark in well under 10 ms)
			 * would be a missed wake-up */
			if (ringbuf_wait(x->rb, 0, reader_wait_pct, 10) == 0 &&
			    !atomic_load_explicit(&x->stop, memory_order_acquire))
				x->timeouts++;
		} else {
			for (int k = 0; k < 16; k++)
				cpu_relax();
		}
	}
	return NULL;
}

static double run_live_reader(struct variant *v, size_t n)
{
	struct reader_ctx x;
	pthread_t th;
	struct stamp t0;
	uint64_t ns, nulls, lost;
	memset(&x, 0, sizeof x);
	reset_cpu(v->rb, 0);
	x.rb = v->rb;
	x.how = (int)v->extra_cfg;
	atomic_init(&x.ready, 0);
	atomic_init(&x.stop, 0);
	if (pthread_create(&th, NULL, reader_main, &x) != 0)
		die("pthread_create: %s", strerror(errno));
	while (!atomic_load_explicit(&x.ready, memory_order_acquire))
		cpu_relax();
	t0 = timed_begin();
	nulls = rb_loop_16(v->rb, 0, n);
	ns = timed_end(t0);
	atomic_store_explicit(&x.stop, 1, memory_order_release);
	ringbuf_wake_waiters(v->rb);
	pthread_join(th, NULL);
	lost = lost_of(v->rb, 0);
	if (x.errors)
		die("%s: the reader got %llu errors", v->id, (unsigned long long)x.errors);
	if (x.got + lost != n)
		fprintf(stderr, "bench: %s: %llu read + %llu lost != %zu written\n", v->id,
			(unsigned long long)x.got, (unsigned long long)lost, n);
	v->nulls += nulls;
	v->lost += lost;
	v->extra += x.got;
	v->waits += x.waits;
	v->timeouts += x.timeouts;
	if (lost > v->lost_max)
		v->lost_max = lost;
	v->events += n;
	return per(ns, n);
}

/* -- reader throughput: pre-fill a big buffer, time the drain -- */

#define BIG_PER_CPU ((size_t)64 << 20)
static struct ringbuf *big_rb;
static unsigned char page_out[1 << 20];

static void setup_big(struct variant *v)
{
	if (!big_rb)
		big_rb = make_rb(1, BIG_PER_CPU, RINGBUF_MODE_OVERWRITE, counter_clock);
	v->rb = big_rb;
}

static uint64_t fill_big(void)
{
	struct ringbuf_stats st;
	size_t n = BIG_PER_CPU / 20 + BIG_PER_CPU / 200; /* a little more than full */
	reset_cpu(big_rb, 0);
	(void)rb_loop_16(big_rb, 0, n);
	ringbuf_stats_cpu(big_rb, 0, &st);
	return st.entries;
}

static double run_drain_consume(struct variant *v, size_t n)
{
	struct ringbuf_record rec;
	uint64_t entries = fill_big(), got = 0, ns;
	struct stamp t0;
	int r;
	(void)n;
	t0 = timed_begin();
	while ((r = ringbuf_consume(big_rb, 0, &rec)) > 0)
		got++;
	ns = timed_end(t0);
	if (r < 0)
		die("ringbuf_consume: %s", ringbuf_strerror(r));
	if (got != entries)
		fprintf(stderr, "bench: %s: drained %llu of %llu entries\n", v->id,
			(unsigned long long)got, (unsigned long long)entries);
	v->events += got;
	return (double)got / ((double)ns / 1e3); /* events per µs = M events/s */
}

static double run_drain_pages(struct variant *v, size_t n)
{
	uint64_t bytes = 0, pages = 0, ns;
	struct stamp t0;
	int r;
	(void)n;
	(void)fill_big();
	t0 = timed_begin();
	while ((r = ringbuf_read_page(big_rb, 0, page_out, sizeof page_out, 0)) > 0) {
		bytes += (uint64_t)r;
		pages++;
	}
	ns = timed_end(t0);
	if (r < 0)
		die("ringbuf_read_page: %s", ringbuf_strerror(r));
	v->extra += pages;
	return (double)bytes / ((double)ns / 1e3); /* bytes per µs = MB/s */
}

/* -- one writer vs two writers on two cores, each on its own CPU index -- */

static struct ringbuf *two_rb;

static void setup_two(struct variant *v)
{
	if (!two_rb)
		two_rb = make_rb(2, (size_t)1 << 20, RINGBUF_MODE_OVERWRITE, NULL);
	v->rb = two_rb;
}

struct writer_ctx {
	void (*floor_loop)(size_t n); /* NULL: ringbuf writer */
	struct ringbuf *rb;
	unsigned cpu;
	size_t n;
	atomic_int *go;
	atomic_int ready;
	struct stamp t0, t1;
	uint64_t nulls;
};

static void *writer_main(void *arg)
{
	struct writer_ctx *w = arg;
	pin_to((int)w->cpu);
	atomic_store_explicit(&w->ready, 1, memory_order_release);
	while (!atomic_load_explicit(w->go, memory_order_acquire))
		cpu_relax();
	w->t0 = stamp_now();
	if (w->floor_loop)
		w->floor_loop(w->n);
	else
		w->nulls = rb_loop_16(w->rb, w->cpu, w->n);
	w->t1 = stamp_now();
	return NULL;
}

static double run_one_writer(struct variant *v, size_t n)
{
	struct stamp t0 = timed_begin();
	v->nulls += rb_loop_16(v->rb, 0, n);
	uint64_t ns = timed_end(t0);
	v->events += n;
	return per(ns, n);
}

/* sample: the aggregate time per event, 1 / (1/a + 1/b) from each writer's
 * own ns/event a and b (BENCH_TIME=wall: wall time from the common start to
 * the last finish, / 2n); extra_d: the slower writer's own ns/event. With
 * v->floor_loop set, the
 * two threads run that floor instead (each its own thread-local array): how
 * well this machine scales the same work without the library. */
static double run_two_writers(struct variant *v, size_t n)
{
	atomic_int go;
	struct writer_ctx w[2];
	pthread_t th;
	double a, b;
	atomic_init(&go, 0);
	for (int k = 0; k < 2; k++) {
		memset(&w[k], 0, sizeof w[k]);
		w[k].floor_loop = v->floor_loop;
		w[k].rb = v->rb;
		w[k].cpu = (unsigned)k;
		w[k].n = n;
		w[k].go = &go;
		atomic_init(&w[k].ready, 0);
	}
	if (pthread_create(&th, NULL, writer_main, &w[1]) != 0)
		die("pthread_create: %s", strerror(errno));
	while (!atomic_load_explicit(&w[1].ready, memory_order_acquire))
		cpu_relax();
	unsigned long h0 = atomic_load(&heap_calls);
	atomic_store_explicit(&go, 1, memory_order_release);
	w[0].t0 = stamp_now();
	if (v->floor_loop)
		v->floor_loop(n);
	else
		w[0].nulls = rb_loop_16(v->rb, 0, n);
	w[0].t1 = stamp_now();
	pthread_join(th, NULL);
	timed_heap_calls += atomic_load(&heap_calls) - h0;
	v->nulls += w[0].nulls + w[1].nulls;
	v->events += 2 * n;
	a = per(stamp_span(w[0].t0, w[0].t1), n);
	b = per(stamp_span(w[1].t0, w[1].t1), n);
	v->extra_d[v->ns] = a > b ? a : b;
	if (time_wall) {
		uint64_t start = w[0].t0.wall < w[1].t0.wall ? w[0].t0.wall : w[1].t0.wall;
		uint64_t end = w[0].t1.wall > w[1].t1.wall ? w[0].t1.wall : w[1].t1.wall;
		return (double)(end - start) / (double)(2 * n);
	}
	return 1 / (1 / a + 1 / b);
}

/* ---- the kernel's own way: a write() to trace_marker ---------------------------
 * A 16-byte write to the trace_marker of a tracefs instance made for the run
 * (instances/ringbuf-bench-PID-START: the global buffer is not written;
 * removed at exit, and by the next `ringbuf-record -e` if this is killed), the
 * peer of an event from user space into the kernel's ring buffer. A write
 * costs a system call (~0.5 us), so a round makes n/16 of them; the time is
 * per write. Skipped, with the reason, where it cannot be opened (no tracefs,
 * not root). */
static int marker_fd = -1;
static char marker_inst[700];

static void marker_cleanup(void)
{
	if (marker_fd >= 0)
		close(marker_fd);
	marker_fd = -1;
	if (marker_inst[0])
		rmdir(marker_inst);
	marker_inst[0] = 0;
}

static void setup_marker(struct variant *v)
{
	static char why[1000];
	char tfs[400] = "", line[1024], dev[256], dir[400], type[64], stat[1024], path[800], *p;
	unsigned long long start = 0;
	FILE *f = fopen("/proc/mounts", "r");
	int field;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "%255s %399s %63s", dev, dir, type) == 3 && !strcmp(type, "tracefs")) {
			snprintf(tfs, sizeof tfs, "%s", dir);
			break;
		}
	if (f)
		fclose(f);
	if (!tfs[0]) {
		v->skip = "tracefs not mounted (mount -t tracefs nodev /sys/kernel/tracing)";
		return;
	}
	f = fopen("/proc/self/stat", "r"); /* field 22: the start time, as ringbuf-record names instances */
	if (f && fgets(stat, sizeof stat, f) && (p = strrchr(stat, ')')) != NULL)
		for (field = 2, p++; *p && field < 22; p++)
			if (*p == ' ' && ++field == 22)
				start = strtoull(p + 1, NULL, 10);
	if (f)
		fclose(f);
	snprintf(marker_inst, sizeof marker_inst, "%s/instances/ringbuf-bench-%ld-%llu", tfs, (long)getpid(), start);
	if (mkdir(marker_inst, 0750) != 0) {
		snprintf(why, sizeof why, "%s/instances: %s (trace_marker needs root)", tfs, strerror(errno));
		marker_inst[0] = 0;
		v->skip = why;
		return;
	}
	atexit(marker_cleanup);
	snprintf(path, sizeof path, "%s/trace_marker", marker_inst);
	marker_fd = open(path, O_WRONLY | O_CLOEXEC);
	if (marker_fd < 0) {
		snprintf(why, sizeof why, "%s: %s", path, strerror(errno));
		v->skip = why;
		marker_cleanup();
	}
}

static double run_marker(struct variant *v, size_t n)
{
	unsigned char src[16] __attribute__((aligned(8)));
	size_t k = n / 16 ? n / 16 : 1, i;
	struct stamp t0;
	memset(src, 0x5a, sizeof src);
	t0 = timed_begin();
	for (i = 0; i < k; i++) {
		memcpy(src, &i, 8);
		BENCH_OPAQUE(src);
		if (BENCH_UNLIKELY(write(marker_fd, src, 16) != 16))
			v->nulls++;
	}
	uint64_t ns = timed_end(t0);
	v->events += k;
	return per(ns, k);
}

/* ---- C++ ------------------------------------------------------------------- */

/* bench/bench_cxx.cpp: rb_loop_16 compiled as C++ (linked in by `make bench`
 * when there is a C++ compiler; BENCH_HAVE_CXX). */
#ifdef BENCH_HAVE_CXX
uint64_t bench_cxx_rb_loop_16(struct ringbuf *rb, unsigned cpu, size_t n);
#define CXX_LOOP_16 bench_cxx_rb_loop_16
#else
#define BENCH_HAVE_CXX 0
#define CXX_LOOP_16 rb_loop_16 /* not run (skipped) */
#endif
#ifndef BENCH_CXX_BUILD
#define BENCH_CXX_BUILD "(none)"
#endif

/* ---- the variant table ---------------------------------------------------- */

#define FLOOR_V(ID, WHAT, FN) \
	{ .id = ID, .what = WHAT, .unit = NS_EVENT, .run = run_floor, .floor_loop = FN }
#define RB_V(ID, WHAT, VS, LOOP, CLOCK)                                              \
	{ .id = ID, .what = WHAT, .unit = NS_EVENT, .vs = VS, .setup = setup_rb1, \
	  .run = run_rb, .rb_loop = LOOP, .clock = CLOCK }

static struct variant variants[] = {
	/* floors */
	FLOOR_V("floor_none_16", "floor (a) no clock, 16 B", floor_none_16_loop),
	FLOOR_V("floor_clock_8", "floor (b) clock_gettime, 8 B", floor_clock_8_loop),
	FLOOR_V("floor_clock_16", "floor (b) clock_gettime, 16 B", floor_clock_16_loop),
	FLOOR_V("floor_clock_64", "floor (b) clock_gettime, 64 B", floor_clock_64_loop),
	FLOOR_V("floor_clock_256", "floor (b) clock_gettime, 256 B", floor_clock_256_loop),
	FLOOR_V("floor_clock_1024", "floor (b) clock_gettime, 1024 B", floor_clock_1024_loop),
	FLOOR_V("floor_tsc_16", "floor (c) rdtsc, 16 B", floor_tsc_16_loop),
	/* reserve + fill + commit, CPU 0, 1 MiB, 4 KiB pages, overwrite */
	RB_V("rb_clock_8", "rb default clock, 8 B", "floor_clock_8", rb_loop_8, NULL),
	RB_V("rb_clock_16", "rb default clock, 16 B", "floor_clock_16", rb_loop_16, NULL),
	RB_V("rb_clock_64", "rb default clock, 64 B", "floor_clock_64", rb_loop_64, NULL),
	RB_V("rb_clock_256", "rb default clock, 256 B", "floor_clock_256", rb_loop_256, NULL),
	RB_V("rb_clock_1024", "rb default clock, 1024 B", "floor_clock_1024", rb_loop_1024, NULL),
	RB_V("rb_tsc_16", "rb TSC clock, 16 B", "floor_tsc_16", rb_loop_16, tsc_clock),
	RB_V("rb_counter_16", "rb counter clock (machinery), 16 B", "floor_none_16", rb_loop_16,
	     counter_clock),
	RB_V("rb_write_16", "rb ringbuf_write (copy), 16 B", "floor_clock_16", rb_write_loop_16,
	     NULL),
	/* the same loop compiled as C++ (bench/bench_cxx.cpp), ratio to the C loop */
	RB_V("rb_cxx_clock_16", "rb from C++, default clock, 16 B", "rb_clock_16", CXX_LOOP_16, NULL),
	RB_V("rb_cxx_tsc_16", "rb from C++, TSC clock, 16 B", "rb_tsc_16", CXX_LOOP_16, tsc_clock),
	RB_V("rb_cxx_counter_16", "rb from C++, counter clock, 16 B", "rb_counter_16", CXX_LOOP_16,
	     counter_clock),
	{ .id = "rb_pc_16", .what = "rb producer/consumer, no reader, 16 B", .unit = NS_EVENT,
	  .vs = "floor_clock_16", .setup = setup_rb1, .run = run_rb_pc,
	  .mode = RINGBUF_MODE_PRODUCER_CONSUMER },
	/* mapped writer contexts (SPEC §6: <= +2 ns and <= +10 ns over rb_clock_16) */
	{ .id = "rb_thread_16", .what = "rb per-thread mapping, 16 B", .unit = NS_EVENT,
	  .vs = "rb_clock_16", .setup = setup_mapped, .run = run_mapped, .extra_cfg = MAP_THREAD },
	{ .id = "rb_current_16", .what = "rb guarded per-CPU mapping, 16 B", .unit = NS_EVENT,
	  .vs = "rb_clock_16", .setup = setup_mapped, .run = run_mapped, .extra_cfg = MAP_CURRENT },
	{ .id = "rb_cpunum_16", .what = "rb index = rseq CPU number, no claim, 16 B", .unit = NS_EVENT,
	  .vs = "rb_clock_16", .setup = setup_mapped, .run = run_cpunum },
	{ .id = "rb_current_cas_16", .what = "rb guarded per-CPU mapping, CAS claim, 16 B", .unit = NS_EVENT,
	  .vs = "rb_clock_16", .setup = setup_mapped, .run = run_mapped, .extra_cfg = MAP_CURRENT_CAS },
	{ .id = "rb_current_outline_16", .what = "rb guarded per-CPU, out-of-line claim, 16 B",
	  .unit = NS_EVENT, .vs = "rb_clock_16", .setup = setup_mapped, .run = run_mapped_outline,
	  .extra_cfg = MAP_CURRENT },
	/* the owner-word claim of RINGBUF_CPU_CURRENT alone: the CAS (the
	 * portable path, RINGBUF_F_NO_RSEQ) and the restartable sequence */
	{ .id = "claim_cas", .what = "owner claim+release: CAS (portable)", .unit = NS_EVENT,
	  .run = run_claim },
	{ .id = "claim_rseq", .what = "owner claim+release: rseq store", .unit = NS_EVENT,
	  .vs = "claim_cas", .run = run_claim, .extra_cfg = 1 },
	/* RINGBUF_CPU_THREAD, a thread beyond the buffer count, against an owner's */
	{ .id = "rb_thread_shared_16", .what = "rb per-thread, beyond count: shared, 16 B",
	  .unit = NS_EVENT, .vs = "rb_thread_16", .setup = setup_mapped_beyond, .run = run_mapped,
	  .extra_cfg = MAP_THREAD_SHARED },
	{ .id = "rb_thread_drop_16", .what = "rb per-thread, beyond count: dropped, 16 B",
	  .unit = NS_EVENT, .vs = "rb_thread_16", .setup = setup_mapped_beyond, .run = run_mapped,
	  .extra_cfg = MAP_THREAD_DROP },
	/* the kernel's way for user events: write() to trace_marker, against rb */
	{ .id = "trace_marker_16", .what = "kernel trace_marker write(), 16 B", .unit = NS_EVENT,
	  .vs = "rb_clock_16", .setup = setup_marker, .run = run_marker },
	{ .id = "rb_signal_nested_16", .what = "rb nested in a signal handler, 16 B",
	  .unit = NS_EVENT, .vs = "rb_clock_16", .setup = setup_signal, .run = run_signal,
	  .extra_cfg = 1 },
	{ .id = "rb_signal_flat_16", .what = "rb in a signal handler, not nested, 16 B",
	  .unit = NS_EVENT, .vs = "rb_clock_16", .setup = setup_signal, .run = run_signal },
	{ .id = "rb_live_reader_16", .what = "rb P/C, reader on CPU 1 (consume+wait), 16 B",
	  .unit = NS_EVENT, .vs = "floor_clock_16", .setup = setup_rb1, .run = run_live_reader,
	  .mode = RINGBUF_MODE_PRODUCER_CONSUMER, .extra_cfg = READER_WAIT },
	{ .id = "rb_live_spin_16", .what = "rb P/C, reader on CPU 1 (busy-polling), 16 B",
	  .unit = NS_EVENT, .vs = "floor_clock_16", .setup = setup_rb1, .run = run_live_reader,
	  .mode = RINGBUF_MODE_PRODUCER_CONSUMER, .extra_cfg = READER_SPIN },
	{ .id = "rd_consume", .what = "reader drain, ringbuf_consume (64 MiB)", .unit = MEV_S,
	  .setup = setup_big, .run = run_drain_consume },
	{ .id = "rd_read_page", .what = "reader drain, ringbuf_read_page (64 MiB)", .unit = MB_S,
	  .setup = setup_big, .run = run_drain_pages },
	{ .id = "floor_two_clock_16", .what = "floor (b) 16 B, 2 threads on 2 cores, aggregate",
	  .unit = NS_EVENT, .vs = "floor_clock_16", .run = run_two_writers,
	  .floor_loop = floor_clock_16_loop },
	{ .id = "rb_one_writer_16", .what = "rb 1 writer (2-CPU buffer), 16 B", .unit = NS_EVENT,
	  .vs = "floor_clock_16", .setup = setup_two, .run = run_one_writer },
	{ .id = "rb_two_writers_16", .what = "rb 2 writers on 2 cores, aggregate, 16 B",
	  .unit = NS_EVENT, .vs = "floor_clock_16", .setup = setup_two, .run = run_two_writers },
};
#define NVARIANTS (sizeof variants / sizeof variants[0])

static struct variant *find(const char *id)
{
	for (size_t k = 0; k < NVARIANTS; k++)
		if (!strcmp(variants[k].id, id))
			return &variants[k];
	return NULL;
}

static bool have(const struct variant *v) { return v && v->enabled && !v->skip && v->ns > 0; }

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median_of(const double *s, int n)
{
	double t[MAX_ROUNDS];
	memcpy(t, s, sizeof(double) * (size_t)n);
	qsort(t, (size_t)n, sizeof t[0], cmp_double);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

static void summarise(struct variant *v)
{
	v->ratio = -1;
	if (!have(v))
		return;
	v->med = median_of(v->s, v->ns);
	v->min = v->max = v->s[0];
	for (int k = 1; k < v->ns; k++) {
		if (v->s[k] < v->min)
			v->min = v->s[k];
		if (v->s[k] > v->max)
			v->max = v->s[k];
	}
}

static void summarise_ratio(struct variant *v)
{
	struct variant *f = v->vs ? find(v->vs) : NULL;
	if (have(v) && have(f) && f->med > 0 && f->min > 0) {
		v->ratio = v->med / f->med;
		v->ratio_min = v->min / f->min;
	}
}

/* ---- SPEC §6 targets ------------------------------------------------------ */

enum cmp { LE, GE, EQ };
struct target {
	const char *what;
	enum cmp cmp;
	double limit;
	const char *unit; /* "x", "ns", "%", "ev", "MB/s", ... */
	double value;
	bool measured;
	const char *note;
};

static struct target targets[32];
static int ntargets;

static void target(const char *what, enum cmp cmp, double limit, const char *unit, bool measured,
		   double value, const char *note)
{
	struct target *t = &targets[ntargets++];
	t->what = what;
	t->cmp = cmp;
	t->limit = limit;
	t->unit = unit;
	t->measured = measured;
	t->value = value;
	t->note = note;
}

static bool target_met(const struct target *t)
{
	switch (t->cmp) {
	case LE: return t->value <= t->limit;
	case GE: return t->value >= t->limit;
	default: return t->value == t->limit;
	}
}

static void ratio_target(const char *what, double limit, const char *id)
{
	struct variant *v = find(id);
	bool ok = have(v) && v->ratio >= 0;
	target(what, LE, limit, "x", ok, ok ? v->ratio : 0, ok ? NULL : "not run");
}

static void delta_target(const char *what, double limit, const char *id, const char *base)
{
	struct variant *v = find(id), *b = find(base);
	bool ok = have(v) && have(b);
	target(what, LE, limit, "ns", ok, ok ? v->med - b->med : 0,
	       ok ? NULL : v && v->skip ? v->skip : "not run");
}

/* memory overhead of a configuration: (size needed - page bytes) / page bytes */
static double mem_overhead(unsigned ncpu, size_t per_cpu, size_t page)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	size_t need, pages;
	cfg.ncpu = ncpu;
	cfg.size_per_cpu = per_cpu;
	cfg.page_size = page;
	if (ringbuf_size_needed(&cfg, &need) < 0 || ringbuf_create(&cfg, &rb) < 0)
		die("memory overhead: bad configuration");
	pages = (size_t)ringbuf_nr_pages(rb) * ringbuf_page_size(rb) * ncpu;
	ringbuf_destroy(rb);
	return 100.0 * (double)(need - pages) / (double)pages;
}

static double mem_default, mem_cfgs[4];
static const struct {
	unsigned ncpu;
	size_t per_cpu, page;
	const char *what;
} mem_cfg[4] = {
	{ 1, (size_t)1 << 20, 4096, "1 CPU, 1 MiB, 4 KiB pages" },
	{ 2, (size_t)1 << 20, 4096, "2 CPUs, 1 MiB, 4 KiB pages" },
	{ 64, (size_t)1 << 20, 4096, "64 CPUs, 1 MiB, 4 KiB pages" },
	{ 4, (size_t)64 << 10, 1024, "4 CPUs, 64 KiB, 1 KiB pages" },
};

/* ---- set-up cost: create + destroy of 16 x 8 MiB ------------------------------
 * Each flavour is created and destroyed `rounds` times (wall-clock, the kernel's
 * work included: page faults, zeroing, freeing); between create and destroy the
 * resident set added (/proc/self/statm) and the blocks of the file or memfd
 * (st_blocks) are read. The "touch" rows are the same mappings built with every
 * data page header written (ringbuf_init_in without RINGBUF_F_ZEROED: what
 * creation did before 0.1.0's zero-page set-up), as the reference of the same
 * run, measured after the others. BENCH_SETUP_DIR (default build) is where
 * the disk files go. */

static int rounds = 7;
static size_t events = 10000000;

#define SETUP_NCPU 16
#define SETUP_PER_CPU ((size_t)8 << 20)

enum setup_kind { SU_ANON, SU_ANON_TOUCH, SU_FILE, SU_FILE_TOUCH, SU_SHM_FILE, SU_MEMFD, SU_N };
static struct setup_res {
	const char *id, *what;
	int ref; /* index of the reference row, -1 */
	double ms[MAX_ROUNDS];
	int n;
	double ms_med, ms_min, rss_mib, blocks_mib; /* blocks < 0: not a file */
	const char *skip;
} setup_res[SU_N] = {
	{ "setup_anon", "ringbuf_create (anonymous mmap)", SU_ANON_TOUCH, {0}, 0, 0, 0, 0, -1, NULL },
	{ "setup_anon_touch", "anonymous, every page header written", -1, {0}, 0, 0, 0, 0, -1, NULL },
	{ "setup_file", "ringbuf_create_file (disk dir)", SU_FILE_TOUCH, {0}, 0, 0, 0, 0, 0, NULL },
	{ "setup_file_touch", "disk file, every page header written", -1, {0}, 0, 0, 0, 0, 0, NULL },
	{ "setup_shm_file", "ringbuf_create_file (/dev/shm)", -1, {0}, 0, 0, 0, 0, 0, NULL },
	{ "setup_memfd", "ringbuf_create_shm (memfd)", -1, {0}, 0, 0, 0, 0, 0, NULL },
};
static bool setup_enabled;
static char setup_dir[200] = "build";

static long statm_resident(void)
{
	long size = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%ld %ld", &size, &res) != 2)
			res = 0;
		fclose(f);
	}
	return res;
}

/* one create + destroy; fills *rss_pages and *blocks (512-byte units, -1: none) */
static double setup_once(enum setup_kind k, long *rss_pages, long long *blocks)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	char path[300];
	struct stat st;
	size_t need = 0;
	void *map = NULL;
	int fd = -1, r = 0;
	long r0 = statm_resident(), r1;
	uint64_t t0, t1, t2, t3;
	cfg.ncpu = SETUP_NCPU;
	cfg.size_per_cpu = SETUP_PER_CPU;
	if (ringbuf_size_needed(&cfg, &need) < 0)
		die("setup: bad configuration");
	snprintf(path, sizeof path, "%s/bench-setup-%d.rb",
		 k == SU_SHM_FILE ? "/dev/shm" : setup_dir, (int)getpid());
	unlink(path);
	*blocks = -1;
	t0 = now_ns();
	switch (k) {
	case SU_ANON:
		r = ringbuf_create(&cfg, &rb);
		break;
	case SU_ANON_TOUCH:
		map = mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		r = map == MAP_FAILED ? -1 : ringbuf_init_in(map, need, &cfg, &rb);
		break;
	case SU_FILE:
	case SU_SHM_FILE:
		r = ringbuf_create_file(path, &cfg, &rb);
		break;
	case SU_FILE_TOUCH:
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 || ftruncate(fd, (off_t)need) < 0)
			r = -1;
		else {
			map = mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			r = map == MAP_FAILED ? -1 : ringbuf_init_in(map, need, &cfg, &rb);
		}
		break;
	case SU_MEMFD:
		r = ringbuf_create_shm("bench-setup", &cfg, &rb);
		break;
	default:
		break;
	}
	t1 = now_ns();
	if (r < 0)
		die("setup %s: %s (%s)", setup_res[k].id, ringbuf_strerror(r), strerror(errno));
	r1 = statm_resident();
	if (k == SU_MEMFD ? fstat(ringbuf_fd(rb), &st) == 0
	    : (k == SU_FILE || k == SU_SHM_FILE || k == SU_FILE_TOUCH) ? stat(path, &st) == 0 : false)
		*blocks = (long long)st.st_blocks;
	*rss_pages = r1 - r0;
	t2 = now_ns();
	ringbuf_destroy(rb);
	if (map && map != MAP_FAILED)
		munmap(map, need);
	if (fd >= 0)
		close(fd);
	t3 = now_ns();
	unlink(path);
	return (double)((t1 - t0) + (t3 - t2)) / 1e6;
}

static void run_setup(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	struct stat st;
	for (int k = 0; k < SU_N; k++)
		if (k == SU_SHM_FILE && (stat("/dev/shm", &st) < 0 || !S_ISDIR(st.st_mode)))
			setup_res[k].skip = "no /dev/shm";
	/* interleaved like the variants, every flavour once per round; the
	 * references in a second pass, so that the write-back of their 128 MiB
	 * of dirty pages does not land in the rounds of the others */
	for (int pass = 0; pass < 2; pass++)
	for (int r = 0; r < rounds; r++)
		for (int j = 0; j < SU_N; j++) {
			int k = (j + r) % SU_N;
			struct setup_res *x = &setup_res[k];
			bool is_ref = k == SU_ANON_TOUCH || k == SU_FILE_TOUCH;
			long rss;
			long long blocks;
			if (x->skip || is_ref != (pass == 1))
				continue;
			x->ms[x->n++] = setup_once((enum setup_kind)k, &rss, &blocks);
			/* the largest seen: resident and allocated at their worst */
			if ((double)rss * (double)ps / 1048576.0 > x->rss_mib || x->n == 1)
				x->rss_mib = (double)rss * (double)ps / 1048576.0;
			if (blocks >= 0 && ((double)blocks * 512 / 1048576.0 > x->blocks_mib || x->n == 1))
				x->blocks_mib = (double)blocks * 512 / 1048576.0;
		}
	for (int k = 0; k < SU_N; k++) {
		struct setup_res *x = &setup_res[k];
		double tmp[MAX_ROUNDS];
		if (x->skip || !x->n)
			continue;
		memcpy(tmp, x->ms, sizeof tmp);
		x->ms_med = median_of(tmp, x->n);
		x->ms_min = x->ms[0];
		for (int i = 1; i < x->n; i++)
			if (x->ms[i] < x->ms_min)
				x->ms_min = x->ms[i];
	}
}

static void print_setup(void)
{
	printf("\nset-up of %d x %zu MiB (%d rounds, wall-clock create + destroy; RSS and blocks: the "
	       "largest seen between the two)\n", SETUP_NCPU, SETUP_PER_CPU >> 20, rounds);
	printf("%-18s %-40s %9s %9s %10s %11s  %s\n", "id", "flavour", "median ms", "min ms",
	       "RSS MiB+", "blocks MiB", "vs reference");
	for (int k = 0; k < SU_N; k++) {
		struct setup_res *x = &setup_res[k];
		char blocks[32] = "-";
		if (x->skip) {
			printf("%-18s %-40s skipped: %s\n", x->id, x->what, x->skip);
			continue;
		}
		if (x->blocks_mib >= 0)
			snprintf(blocks, sizeof blocks, "%.2f", x->blocks_mib);
		printf("%-18s %-40s %9.3f %9.3f %10.2f %11s", x->id, x->what, x->ms_med, x->ms_min,
		       x->rss_mib, blocks);
		if (getenv("BENCH_SETUP_SAMPLES"))
			for (int i = 0; i < x->n; i++)
				printf("%s%.2f", i ? " " : " [", x->ms[i]);
		if (getenv("BENCH_SETUP_SAMPLES"))
			printf("]");
		if (x->ref >= 0 && !setup_res[x->ref].skip && x->ms_med > 0)
			printf("  %s / this: %.0fx time, %.0fx RSS", setup_res[x->ref].id,
			       setup_res[x->ref].ms_med / x->ms_med,
			       x->rss_mib > 0.01 ? setup_res[x->ref].rss_mib / x->rss_mib : 0.0);
		putchar('\n');
	}
	printf("  disk files in %s (BENCH_SETUP_DIR)\n", setup_dir);
}

/* The first lap of a fresh buffer (after the set-up rows): one 8 MiB CPU
 * buffer filled once with 16-byte events (default clock), then once more;
 * wall-clock ms of each lap, median of `rounds` fresh buffers per flavour,
 * interleaved. The first lap pays for making each data page present: since
 * [BACKED] (ringbuf.h >>writer) one madvise per page instead of the fault
 * of its first store; the second lap is the same loop on present pages. */
#define LAP_EVENTS ((long)(SETUP_PER_CPU / 24)) /* 16 B + header + delta: one lap */
static struct lap_res {
	const char *id, *what;
	double lap1[MAX_ROUNDS], lap2[MAX_ROUNDS];
	int n;
	double lap1_med, lap2_med;
} lap_res[2] = {
	{ "first_lap_anon", "ringbuf_create, 1 x 8 MiB", {0}, {0}, 0, 0, 0 },
	{ "first_lap_shm_file", "ringbuf_create_file (/dev/shm), 1 x 8 MiB", {0}, {0}, 0, 0, 0 },
};

static void run_first_lap(void)
{
	struct stat st;
	bool shm = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode);
	for (int r = 0; r < rounds; r++)
		for (int j = 0; j < 2; j++) {
			int k = (j + r) % 2;
			struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
			struct ringbuf *rb;
			char path[64];
			uint64_t v[2] = {1, 2}, t0, t1, t2;
			int e;
			if (k == 1 && !shm)
				continue;
			cfg.size_per_cpu = SETUP_PER_CPU;
			snprintf(path, sizeof path, "/dev/shm/bench-lap-%d.rb", (int)getpid());
			unlink(path);
			e = k == 0 ? ringbuf_create(&cfg, &rb) : ringbuf_create_file(path, &cfg, &rb);
			if (e < 0)
				die("first lap: %s", ringbuf_strerror(e));
			t0 = now_ns();
			for (long i = 0; i < LAP_EVENTS; i++)
				(void)ringbuf_write(rb, 0, v, sizeof v);
			t1 = now_ns();
			for (long i = 0; i < LAP_EVENTS; i++)
				(void)ringbuf_write(rb, 0, v, sizeof v);
			t2 = now_ns();
			ringbuf_destroy(rb);
			unlink(path);
			lap_res[k].lap1[lap_res[k].n] = (double)(t1 - t0) / 1e6;
			lap_res[k].lap2[lap_res[k].n++] = (double)(t2 - t1) / 1e6;
		}
	for (int k = 0; k < 2; k++)
		if (lap_res[k].n) {
			double tmp[MAX_ROUNDS];
			memcpy(tmp, lap_res[k].lap1, sizeof tmp);
			lap_res[k].lap1_med = median_of(tmp, lap_res[k].n);
			memcpy(tmp, lap_res[k].lap2, sizeof tmp);
			lap_res[k].lap2_med = median_of(tmp, lap_res[k].n);
		}
}

static void print_first_lap(void)
{
	printf("\nfirst lap of a fresh buffer: %ld events of 16 B into 1 x 8 MiB, then as many again "
	       "(%d rounds, wall-clock, medians)\n", LAP_EVENTS, rounds);
	printf("%-18s %-42s %11s %11s  %s\n", "id", "flavour", "lap 1 ms", "lap 2 ms", "lap 1 / lap 2");
	for (int k = 0; k < 2; k++) {
		struct lap_res *x = &lap_res[k];
		if (!x->n) {
			printf("%-18s %-42s skipped: no /dev/shm\n", x->id, x->what);
			continue;
		}
		printf("%-18s %-42s %11.2f %11.2f  %.2fx\n", x->id, x->what, x->lap1_med, x->lap2_med,
		       x->lap2_med > 0 ? x->lap1_med / x->lap2_med : 0.0);
	}
}

/* How much of the machinery the clock read hides (issue 24, goal 2). The
 * machinery is what the write path adds over the bare append with a clock
 * that costs nothing: rb_counter_16 - floor_none_16 (M). With a real clock
 * it adds rb_clock_16 - floor_clock_16 (default) and rb_tsc_16 -
 * floor_tsc_16 (TSC); hidden = 1 - added / M: near 1 where the CPU runs the
 * machinery while the clock read is in flight, near 0 (or below) where the
 * read does not overlap other work. Where nothing is hidden, a ratio goal R
 * against a floor F is a budget for the machinery: M <= (R - 1) * F. */
struct overlap {
	bool ok;
	double machinery, added_clock, added_tsc, floor_clock, floor_tsc;
};

static struct overlap clock_overlap(void)
{
	struct overlap o = {false, 0, 0, 0, 0, 0};
	struct variant *cn = find("rb_counter_16"), *fn = find("floor_none_16"), *rc = find("rb_clock_16"),
		       *fc = find("floor_clock_16"), *rt = find("rb_tsc_16"), *ft = find("floor_tsc_16");
	if (!have(cn) || !have(fn) || !have(rc) || !have(fc) || cn->med <= fn->med)
		return o;
	o.ok = true;
	o.machinery = cn->med - fn->med;
	o.added_clock = rc->med - fc->med;
	o.floor_clock = fc->med;
	if (have(rt) && have(ft)) {
		o.added_tsc = rt->med - ft->med;
		o.floor_tsc = ft->med;
	}
	return o;
}

static void print_overlap(void)
{
	struct overlap o = clock_overlap();
	if (!o.ok)
		return;
	printf("  clock overlap: the machinery (rb_counter_16 - floor_none_16) %.2f ns; with clock_gettime "
	       "it adds %.2f ns (%.0f%% hidden by the clock read)",
	       o.machinery, o.added_clock, 100 * (1 - o.added_clock / o.machinery));
	if (o.floor_tsc > 0)
		printf(", with rdtsc %.2f ns (%.0f%% hidden)", o.added_tsc, 100 * (1 - o.added_tsc / o.machinery));
	printf("\n  where none is hidden, the ratio goals are machinery budgets: default clock 1.15x: "
	       "%.2f ns",
	       0.15 * o.floor_clock);
	if (o.floor_tsc > 0)
		printf(", TSC 1.05x (issue 24): %.2f ns", 0.05 * o.floor_tsc);
	printf(" (machinery now %.2f ns)\n", o.machinery);
}

static void check_targets(void)
{
	struct variant *v, *w;
	char *note;
	ratio_target("16 B event, default clock, vs floor (b)", 1.15, "rb_clock_16");
	ratio_target("16 B event, TSC clock, vs floor (c)", 1.2, "rb_tsc_16");
	ratio_target("machinery alone (counter clock) vs floor (a)", 2.0, "rb_counter_16");
	ratio_target("C++ fast path vs C (16 B, default clock)", 1.05, "rb_cxx_clock_16");
	ratio_target("nested write in a signal handler vs fast path", 1.5, "rb_signal_nested_16");
	delta_target("per-thread mapping over explicit index", 2, "rb_thread_16", "rb_clock_16");
	delta_target("guarded per-CPU mapping over explicit index", 10, "rb_current_16",
		     "rb_clock_16");
	/* issue 13's goals for the same two rows */
	delta_target("per-thread mapping over explicit index (issue 13)", 1, "rb_thread_16", "rb_clock_16");
	delta_target("guarded per-CPU, rseq claim, over explicit index (issue 13)", 3, "rb_current_16",
		     "rb_clock_16");
	ratio_target("writer with a consuming reader vs floor (b)", 1.3, "rb_live_reader_16");
	v = find("rb_live_reader_16");
	target("events lost with the reader (P/C, 1 MiB, all rounds)", EQ, 0, "ev", have(v),
	       have(v) ? (double)v->lost : 0, have(v) ? NULL : "not run");
	v = find("rd_consume");
	target("reader drain via ringbuf_consume", GE, 30, "Mev/s", have(v), have(v) ? v->med : 0,
	       have(v) ? NULL : "not run");
	v = find("rd_read_page");
	target("reader drain via whole pages", GE, 1000, "MB/s", have(v), have(v) ? v->med : 0,
	       have(v) ? NULL : "not run");
	target("memory: metadata over configured pages (1 CPU, 1 MiB)", LE, 2, "%", true,
	       mem_default, NULL);
	target("no heap call inside timed loops", EQ, 0, "calls", true, (double)timed_heap_calls,
	       NULL);
	v = find("rb_one_writer_16");
	w = find("rb_two_writers_16");
	note = (have(v) && have(w)) ? NULL : "not run";
	target("scaling: 2 writers on 2 cores vs 1", GE, 1.9, "x", !note,
	       !note && w->med > 0 ? v->med / w->med : 0, note);
	note = setup_enabled ? NULL : "not run";
	target("set-up 16 x 8 MiB anonymous: create + destroy", LE, 2, "ms", !note,
	       setup_res[SU_ANON].ms_med, note);
	target("set-up 16 x 8 MiB file: create + destroy", LE, 2, "ms", !note, setup_res[SU_FILE].ms_med,
	       note);
	target("set-up 16 x 8 MiB anonymous: resident memory added", LE, 4, "MiB", !note,
	       setup_res[SU_ANON].rss_mib, note);
	target("set-up 16 x 8 MiB file: blocks allocated", LE, 4, "MiB", !note,
	       setup_res[SU_FILE].blocks_mib, note);
}

/* ---- machine description -------------------------------------------------- */

static char cpu_model[256] = "unknown", kernel[256] = "unknown", clocksource[64] = "unknown";
/* What makes two machines of one kind differ for the mapped modes (issue 24):
 * the microcode, whether per-CPU blocks claim by restartable sequence
 * (glibc's rseq registration), which membarrier
 * commands the kernel has, and the TLS model the writer state was built with. */
static char microcode[64] = "unknown";
static int mach_rseq_claim = -1, mach_rseq_usable = -1;
static long membarrier_cmds = -1;
static char load_before[64] = "unknown", load_after[64] = "unknown";

/* The 1, 5 and 15 minute load averages: other work on the machine shows here
 * (the run itself adds about 1, 2 during the two-thread variants). */
static void read_load(char *out, size_t size)
{
	FILE *f = fopen("/proc/loadavg", "r");
	double a, b, c;
	if (f) {
		if (fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3)
			snprintf(out, size, "%.2f %.2f %.2f", a, b, c);
		fclose(f);
	}
}

static void trim(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = 0;
}

static void describe_machine(void)
{
	char line[512];
	struct utsname u;
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (f) {
		while (fgets(line, sizeof line, f)) {
			char *colon = strchr(line, ':');
			if (colon && !strncmp(line, "microcode", 9) && !strcmp(microcode, "unknown")) {
				char *p = colon + 1;
				while (*p == ' ')
					p++;
				snprintf(microcode, sizeof microcode, "%s", p);
				trim(microcode);
				continue;
			}
			if (colon && !strcmp(cpu_model, "unknown") &&
			    (!strncmp(line, "model name", 10) || !strncmp(line, "Processor", 9) ||
			     !strncmp(line, "uarch", 5))) {
				char *p = colon + 1;
				while (*p == ' ')
					p++;
				snprintf(cpu_model, sizeof cpu_model, "%s", p);
				trim(cpu_model);
			}
		}
		fclose(f);
	}
	if (uname(&u) == 0)
		snprintf(kernel, sizeof kernel, "%s %s %s", u.sysname, u.release, u.machine);
	f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
	if (f) {
		if (fgets(clocksource, sizeof clocksource, f))
			trim(clocksource);
		fclose(f);
	}
	ncpus_online = (int)sysconf(_SC_NPROCESSORS_ONLN);
#ifdef SYS_membarrier
	membarrier_cmds = syscall(SYS_membarrier, 0 /* MEMBARRIER_CMD_QUERY */, 0, 0);
#endif
#ifdef RINGBUF__RSEQ_CLAIM
	mach_rseq_usable = ringbuf__rseq_usable();
#endif
	{
		struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
		struct ringbuf *rb = NULL;
		cfg.ncpu = 1;
		cfg.size_per_cpu = 1 << 16;
		cfg.flags = RINGBUF_F_CPU_CURRENT;
		if (ringbuf_create(&cfg, &rb) == 0) {
			mach_rseq_claim = rb->rseq != 0;
			ringbuf_destroy(rb);
		}
	}
}

static const char *compiler(void)
{
#if defined(__clang__)
	return "clang " __clang_version__;
#elif defined(__GNUC__)
	return "gcc " __VERSION__;
#else
	return "unknown";
#endif
}

/* ---- output --------------------------------------------------------------- */


static void print_table(void)
{
	printf("\n%-22s %-44s %9s %9s %9s  %-5s  %-17s %6s %6s\n", "id", "variant", "median", "min",
	       "max", "unit", "vs", "ratio", "(min)");
	for (size_t k = 0; k < NVARIANTS; k++) {
		struct variant *v = &variants[k];
		if (!v->enabled)
			continue;
		if (v->skip) {
			printf("%-22s %-44s skipped: %s\n", v->id, v->what, v->skip);
			continue;
		}
		printf("%-22s %-44s %9.2f %9.2f %9.2f  %-5s", v->id, v->what, v->med, v->min, v->max,
		       unit_name[v->unit]);
		if (v->ratio >= 0)
			printf("  %-17s %5.2fx %5.2fx", v->vs, v->ratio, v->ratio_min);
		putchar('\n');
	}
	printf("  ratio = median / median of the `vs` variant; (min) = min / min of it\n");
	{
		static const char *const live[] = { "rb_live_reader_16", "rb_live_spin_16" };
		struct variant *v;
		for (int k = 0; k < 2; k++)
			if (have(v = find(live[k])))
				printf("  %s: %llu events read, %llu lost in all rounds (worst round %llu)"
				       "; %llu waits, %llu timed out while the writer ran\n",
				       v->id, (unsigned long long)v->extra, (unsigned long long)v->lost,
				       (unsigned long long)v->lost_max, (unsigned long long)v->waits,
				       (unsigned long long)v->timeouts);
		v = find("rb_two_writers_16");
		if (have(v))
			printf("  rb_two_writers_16: the slower writer's own ns/event, median %.2f\n",
			       median_of(v->extra_d, v->ns));
		{
			struct variant *cn = find("rb_cpunum_16"), *cur = find("rb_current_16"),
				       *ex = find("rb_clock_16");
			if (have(cn) && have(cur) && have(ex))
				printf("  rb_cpunum_16: the CPU number as the index %+.2f ns over the explicit index; "
				       "rb_current_16 %+.2f ns over that (the claim, its state and checks)\n",
				       cn->med - ex->med, cur->med - cn->med);
		}
		print_overlap();
		v = find("floor_two_clock_16");
		if (have(v) && v->ratio > 0)
			printf("  floor_two_clock_16: this machine scales the floor %.2fx on 2 cores "
			       "(slower thread %.2f ns/event)\n", 1 / v->ratio, median_of(v->extra_d, v->ns));
		for (size_t k = 0; k < NVARIANTS; k++)
			if (have(&variants[k]) && variants[k].nulls)
				printf("  %s: %llu reservations returned NULL%s\n", variants[k].id,
				       (unsigned long long)variants[k].nulls,
				       variants[k].run != run_mapped ? ""
				       : variants[k].extra_cfg == MAP_THREAD_DROP
					       ? " (every one: the row's point)"
					       : ": WARNING, a mapped row that should write every event");
	}
	printf("\nmemory overhead (ringbuf_size_needed - page bytes) / page bytes:");
	for (int k = 0; k < 4; k++)
		printf("%s %s: %.3f%%", k ? ";" : "", mem_cfg[k].what, mem_cfgs[k]);
	printf("\n");
}

static void print_targets(void)
{
	static const char *const op[] = { "<=", ">=", "==" };
	int met = 0, missed = 0, open = 0;
	printf("\nSPEC §6 targets (ratios to floors of this run; reported, never enforced)\n");
	printf("%-58s %14s %12s  %s\n", "target", "goal", "measured", "status");
	for (int k = 0; k < ntargets; k++) {
		struct target *t = &targets[k];
		char goal[32], got[32];
		snprintf(goal, sizeof goal, "%s %g %s", op[t->cmp], t->limit, t->unit);
		if (t->measured)
			snprintf(got, sizeof got, !strcmp(t->unit, "x") ? "%.3f %s" : "%.2f %s", t->value,
				 t->unit);
		else
			snprintf(got, sizeof got, "-");
		printf("%-58s %14s %12s  %s\n", t->what, goal, got,
		       !t->measured ? (t->note ? t->note : "not measured")
				    : target_met(t) ? "met" : "MISSED");
		if (!t->measured)
			open++;
		else if (target_met(t))
			met++;
		else
			missed++;
	}
	printf("%d met, %d missed, %d not measured\n", met, missed, open);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_num(FILE *f, double x)
{
	fprintf(f, "%.4g", x);
}

static void write_json(const char *path)
{
	static const char *const op[] = { "<=", ">=", "==" };
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "bench: cannot write %s: %s\n", path, strerror(errno));
		return;
	}
	fprintf(f, "{\n  \"machine\": { \"cpu_model\": ");
	json_str(f, cpu_model);
	fprintf(f, ", \"cores\": %d, \"kernel\": ", ncpus_online);
	json_str(f, kernel);
	fprintf(f, ", \"clocksource\": ");
	json_str(f, clocksource);
	fprintf(f, ", \"microcode\": ");
	json_str(f, microcode);
	fprintf(f, ", \"rseq_claim\": %d, \"rseq_usable\": %d, \"membarrier_cmds\": %ld, \"tls_model\": ",
		mach_rseq_claim, mach_rseq_usable, membarrier_cmds);
	json_str(f, RINGBUF_TLS_MODEL);
	fprintf(f, ", \"pinned\": %s, \"loadavg_before\": ", pin_ok ? "true" : "false");
	json_str(f, load_before);
	fprintf(f, ", \"loadavg_after\": ");
	json_str(f, load_after);
	fprintf(f, " },\n");
	fprintf(f, "  \"compiler\": { \"version\": ");
	json_str(f, compiler());
	fprintf(f, ", \"command\": ");
	json_str(f, BENCH_BUILD);
	fprintf(f, ", \"cxx_command\": ");
	json_str(f, BENCH_CXX_BUILD);
	fprintf(f, " },\n  \"rounds\": %d, \"events_per_round\": %zu, \"signal_writes\": %u,\n", rounds,
		events, sig_writes);
	fprintf(f, "  \"timing\": \"%s\", \"timed_loops\": %lu, \"disturbed_loops\": %lu,\n",
		time_wall ? "wall" : "thread_cpu", atomic_load(&samples_total),
		atomic_load(&samples_disturbed));
	fprintf(f, "  \"variants\": [\n");
	bool first = true;
	for (size_t k = 0; k < NVARIANTS; k++) {
		struct variant *v = &variants[k];
		if (!v->enabled)
			continue;
		fprintf(f, "%s    { \"id\": ", first ? "" : ",\n");
		first = false;
		json_str(f, v->id);
		fprintf(f, ", \"what\": ");
		json_str(f, v->what);
		fprintf(f, ", \"unit\": ");
		json_str(f, unit_name[v->unit]);
		if (v->skip) {
			fprintf(f, ", \"skipped\": ");
			json_str(f, v->skip);
			fprintf(f, " }");
			continue;
		}
		fprintf(f, ", \"median\": ");
		json_num(f, v->med);
		fprintf(f, ", \"min\": ");
		json_num(f, v->min);
		fprintf(f, ", \"max\": ");
		json_num(f, v->max);
		if (v->ratio >= 0) {
			fprintf(f, ", \"vs\": ");
			json_str(f, v->vs);
			fprintf(f, ", \"ratio\": ");
			json_num(f, v->ratio);
			fprintf(f, ", \"ratio_of_mins\": ");
			json_num(f, v->ratio_min);
		}
		fprintf(f, ", \"events\": %llu, \"nulls\": %llu, \"lost\": %llu, \"samples\": [",
			(unsigned long long)v->events, (unsigned long long)v->nulls,
			(unsigned long long)v->lost);
		for (int r = 0; r < v->ns; r++) {
			if (r)
				fputs(", ", f);
			json_num(f, v->s[r]);
		}
		fprintf(f, "] }");
	}
	fprintf(f, "\n  ],\n  \"memory_overhead_pct\": [");
	for (int k = 0; k < 4; k++) {
		fprintf(f, "%s{ \"config\": ", k ? ", " : "");
		json_str(f, mem_cfg[k].what);
		fprintf(f, ", \"pct\": ");
		json_num(f, mem_cfgs[k]);
		fprintf(f, " }");
	}
	fprintf(f, "],\n  \"clock_overlap\": ");
	{
		struct overlap o = clock_overlap();
		if (!o.ok)
			fprintf(f, "null");
		else {
			fprintf(f, "{ \"machinery_ns\": ");
			json_num(f, o.machinery);
			fprintf(f, ", \"added_clock_ns\": ");
			json_num(f, o.added_clock);
			fprintf(f, ", \"added_tsc_ns\": ");
			json_num(f, o.floor_tsc > 0 ? o.added_tsc : 0);
			fprintf(f, ", \"budget_clock_1_15_ns\": ");
			json_num(f, 0.15 * o.floor_clock);
			fprintf(f, ", \"budget_tsc_1_05_ns\": ");
			json_num(f, 0.05 * o.floor_tsc);
			fprintf(f, " }");
		}
	}
	fprintf(f, ",\n  \"first_lap_8MiB\": [");
	for (int k = 0, first_l = 1; setup_enabled && k < 2; k++) {
		if (!lap_res[k].n)
			continue;
		fprintf(f, "%s{ \"id\": ", first_l ? "" : ", ");
		first_l = 0;
		json_str(f, lap_res[k].id);
		fprintf(f, ", \"lap1_ms_median\": ");
		json_num(f, lap_res[k].lap1_med);
		fprintf(f, ", \"lap2_ms_median\": ");
		json_num(f, lap_res[k].lap2_med);
		fprintf(f, " }");
	}
	fprintf(f, "]");
	fprintf(f, ",\n  \"setup_16x8MiB\": [");
	for (int k = 0, first_s = 1; setup_enabled && k < SU_N; k++) {
		struct setup_res *x = &setup_res[k];
		if (x->skip)
			continue;
		fprintf(f, "%s{ \"id\": ", first_s ? "" : ", ");
		first_s = 0;
		json_str(f, x->id);
		fprintf(f, ", \"what\": ");
		json_str(f, x->what);
		fprintf(f, ", \"ms_median\": ");
		json_num(f, x->ms_med);
		fprintf(f, ", \"ms_min\": ");
		json_num(f, x->ms_min);
		fprintf(f, ", \"rss_added_mib\": ");
		json_num(f, x->rss_mib);
		if (x->blocks_mib >= 0) {
			fprintf(f, ", \"blocks_mib\": ");
			json_num(f, x->blocks_mib);
		}
		fprintf(f, " }");
	}
	fprintf(f, "],\n  \"targets\": [\n");
	for (int k = 0; k < ntargets; k++) {
		struct target *t = &targets[k];
		fprintf(f, "    { \"what\": ");
		json_str(f, t->what);
		fprintf(f, ", \"goal\": \"%s %g\", \"unit\": ", op[t->cmp], t->limit);
		json_str(f, t->unit);
		if (t->measured) {
			fprintf(f, ", \"measured\": ");
			json_num(f, t->value);
			fprintf(f, ", \"status\": \"%s\"", target_met(t) ? "met" : "missed");
		} else {
			fprintf(f, ", \"measured\": null, \"status\": ");
			json_str(f, t->note ? t->note : "not measured");
		}
		fprintf(f, " }%s\n", k + 1 < ntargets ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
	if (fclose(f) != 0)
		fprintf(stderr, "bench: error writing %s\n", path);
	else
		printf("\nwrote %s\n", path);
}

/* ---- main ----------------------------------------------------------------- */

static long env_long(const char *name, long def)
{
	const char *s = getenv(name);
	char *end;
	long v;
	if (!s || !*s)
		return def;
	v = strtol(s, &end, 10);
	if (*end || v <= 0)
		die("%s=%s: expected a positive number", name, s);
	return v;
}

static bool selected(const char *only, const char *id)
{
	size_t n = strlen(id);
	const char *p = only;
	if (!only || !*only)
		return true;
	while ((p = strstr(p, id)) != NULL) {
		if ((p == only || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
			return true;
		p += n;
	}
	return false;
}

int main(void)
{
	const char *json = getenv("BENCH_JSON");
	const char *only = getenv("BENCH_ONLY");
	bool quick = getenv("BENCH_QUICK") && strcmp(getenv("BENCH_QUICK"), "0");
	uint64_t t_start = now_ns();

	rounds = (int)env_long("BENCH_ROUNDS", quick ? 3 : 7);
	events = (size_t)env_long("BENCH_EVENTS", quick ? 200000 : 10000000);
	sig_writes = (unsigned)env_long("BENCH_SIG_WRITES", 32);
	reader_wait_pct = (int)env_long("BENCH_READER_PCT", 25);
	time_wall = getenv("BENCH_TIME") && !strcmp(getenv("BENCH_TIME"), "wall");
	setup_enabled = selected(only, "setup");
	if (getenv("BENCH_SETUP_DIR") && *getenv("BENCH_SETUP_DIR"))
		snprintf(setup_dir, sizeof setup_dir, "%s", getenv("BENCH_SETUP_DIR"));
	if (rounds > MAX_ROUNDS)
		die("BENCH_ROUNDS: at most %d", MAX_ROUNDS);
	if (!json)
		json = "build/bench.json";
	setvbuf(stdout, NULL, _IOLBF, 0);

	describe_machine();
	read_load(load_before, sizeof load_before);
	pin_to(0);
	printf("ringbuf.h %d.%d.%d benchmark: %d rounds x %zu events per variant%s\n",
	       RINGBUF_VERSION_MAJOR, RINGBUF_VERSION_MINOR, RINGBUF_VERSION_PATCH, rounds, events,
	       quick ? " (BENCH_QUICK)" : "");
	printf("machine:  %s, %d online CPUs, %s, clocksource %s%s\n", cpu_model, ncpus_online, kernel,
	       clocksource, pin_ok ? "" : " (could not pin threads)");
	printf("mapped:   microcode %s, rseq claim %s (glibc rseq: %s), membarrier "
	       "commands 0x%lx, TLS model %s\n",
	       microcode, mach_rseq_claim == 1 ? "yes" : mach_rseq_claim == 0 ? "no (CAS)" : "unknown",
	       mach_rseq_usable == 1 ? "yes" : mach_rseq_usable == 0 ? "no" : "not built", membarrier_cmds < 0 ? 0 : membarrier_cmds,
	       RINGBUF_TLS_MODEL);
	printf("compiler: %s\nbuild:    %s\nC++:      %s\nload:     %s (1/5/15 min) before the run\n",
	       compiler(), BENCH_BUILD, BENCH_CXX_BUILD, load_before);
	printf("timing:   %s\n", time_wall ? "wall-clock time (BENCH_TIME=wall)"
					    : "thread CPU time (BENCH_TIME=wall for wall-clock)");

	for (size_t k = 0; k < NVARIANTS; k++) {
		struct variant *v = &variants[k];
		v->enabled = selected(only, v->id);
		if (!v->enabled)
			continue;
		if (!BENCH_HAVE_TSC && (v->clock == tsc_clock || !strcmp(v->id, "floor_tsc_16")))
			v->skip = "no rdtsc on this architecture";
		else if (!BENCH_HAVE_CXX && v->rb_loop == CXX_LOOP_16 && !strncmp(v->id, "rb_cxx_", 7))
			v->skip = "no C++ compiler (CXX) when bench was built";
		else if ((v->run == run_claim || v->run == run_cpunum) && !(BENCH_HAVE_RSEQ && rseq_ok()))
			v->skip = "needs x86-64 and glibc's rseq registration";
		else if (!BENCH_HAVE_MAPPED && (v->run == run_mapped || v->run == run_mapped_outline))
			v->skip = "no API (RINGBUF_CPU_THREAD/CURRENT) in this ringbuf.h";
		else if (ncpus_online < 2 &&
			 (v->run == run_live_reader || v->run == run_two_writers))
			v->skip = "needs 2 online CPUs";
		if (!v->skip && v->setup)
			v->setup(v);
	}

	/* Warm-up (not recorded): faults in and caches every buffer, wraps each ring. */
	for (size_t k = 0; k < NVARIANTS; k++) {
		struct variant *v = &variants[k];
		if (v->enabled && !v->skip)
			(void)v->run(v, events < 300000 ? events : 300000);
		v->nulls = v->lost = v->lost_max = v->events = v->extra = v->waits = v->timeouts = 0;
	}
	timed_heap_calls = 0;
	atomic_store(&samples_total, 0);
	atomic_store(&samples_disturbed, 0);

	for (int r = 0; r < rounds; r++) {
		for (size_t j = 0; j < NVARIANTS; j++) {
			struct variant *v = &variants[(j + (size_t)r * 5) % NVARIANTS];
			if (!v->enabled || v->skip)
				continue;
			v->s[v->ns] = v->run(v, events);
			v->ns++;
		}
		printf("round %d/%d done (%.1f s)\n", r + 1, rounds, (double)(now_ns() - t_start) / 1e9);
	}
	read_load(load_after, sizeof load_after);
	for (size_t k = 0; k < NVARIANTS; k++)
		summarise(&variants[k]);
	for (size_t k = 0; k < NVARIANTS; k++)
		summarise_ratio(&variants[k]);
	for (int k = 0; k < 4; k++)
		mem_cfgs[k] = mem_overhead(mem_cfg[k].ncpu, mem_cfg[k].per_cpu, mem_cfg[k].page);
	mem_default = mem_cfgs[0];
	if (setup_enabled) {
		run_setup();
		run_first_lap();
	}
	check_targets();

	print_table();
	if (setup_enabled) {
		print_setup();
		print_first_lap();
	}
	print_targets();
	if (strcmp(json, "-"))
		write_json(json);
	printf("load %s after the run; %lu of %lu timed loops disturbed (wall > CPU time + 5%%); "
	       "total %.1f s\n", load_after, atomic_load(&samples_disturbed),
	       atomic_load(&samples_total), (double)(now_ns() - t_start) / 1e9);
	return 0;
}
