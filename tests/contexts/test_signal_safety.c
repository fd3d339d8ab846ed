/* The write path is async-signal-safe: it never allocates, never locks, and
 * makes no system call beyond the ones listed below. Every ringbuf write in
 * this file is made inside a signal handler, with a thread-local "in writer"
 * flag set around each ringbuf call; malloc, calloc, realloc, free,
 * pthread_mutex_lock/unlock/trylock, syscall, getpid, clock_gettime and
 * sched_getcpu are interposed in this executable (forwarding to the
 * sanitizer's interceptor when there is one, else to libc), and any
 * allocator or mutex call made while the flag is set fails the test.
 * Covered: explicit index, RINGBUF_CPU_THREAD (the thread's FIRST event made
 * in the handler), RINGBUF_CPU_CURRENT, reserve/commit, discard, write, page
 * crossings and overwrite head pushes (128-byte pages), nested signals (an
 * event open when a second signal arrives), taking a buffer when every one is
 * taken, waking a waiting reader, and a timer storm interrupting a thread that
 * is itself inside malloc/free and pthread_mutex calls.
 *
 * CALLS THE WRITE PATH MAKES (ringbuf_reserve / _commit / _discard / _write),
 * from reading ringbuf.h, checked here by the interposed functions:
 *   - clock_gettime(CLOCK_MONOTONIC): the default clock, once per reservation
 *     attempt (step A; again when the reservation CAS is retried). Through
 *     glibc's vDSO: no system call. A cfg.clock function replaces it.
 *   - the CPU number, for RINGBUF_CPU_CURRENT (every outermost event) and for
 *     a RINGBUF_CPU_THREAD first claim (where to start looking): one load from
 *     the thread's rseq area (glibc >= 2.35 registers rseq and exports
 *     __rseq_offset / __rseq_size); sched_getcpu() only when rseq is not
 *     there (glibc: vDSO getcpu, no system call).
 *   - syscall(SYS_gettid): once per thread, at its first RINGBUF_CPU_THREAD or
 *     RINGBUF_CPU_CURRENT event (cached in initial-exec TLS; reset in a fork
 *     child by the atfork handler); with RINGBUF_DEBUG also at a thread's
 *     first explicit-index event (the owner check).
 *   - syscall(SYS_kill, tid, 0): only when every buffer is taken (mapped
 *     modes), once per taken buffer (RINGBUF_CPU_THREAD: on a thread's
 *     throttled full scans only), to find an owner that no longer exists
 *     (thread ids are system-wide, so this also sees owners in other
 *     processes sharing a file-backed buffer); errno is saved and restored. Taking over the buffer of
 *     an owner that died mid-event repairs it (ringbuf__recover_cpu: memory
 *     only, no call).
 *   - syscall(SYS_futex, FUTEX_WAKE_PRIVATE, or FUTEX_WAKE for a buffer
 *     shared with other processes): at the outermost commit, only when a
 *     reader waiting in ringbuf_wait has armed a wake, once per wait (one
 *     relaxed load when none has).
 *   - memcpy: ringbuf_write's copy, discard's read of a 4-byte header.
 *   - the warn hook (user code) on an internal inconsistency, or with
 *     RINGBUF_DEBUG on a contract violation; the test-point hook in
 *     RINGBUF_TESTING builds.
 *   Nothing else: no allocation, no lock, no other system call. Per-thread
 *   state is initial-exec TLS (no lazy TLS allocation, also for a thread's
 *   first event in a handler); ringbuf_thread_init (pthread_key_create,
 *   pthread_setspecific) is the one per-thread call that is not
 *   async-signal-safe, and it is optional.
 */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"
#include "internal.h" /* the implementation's private names (IMPL: shared) */

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "sigutil.h"
/* LDFLAGS: -ldl -lrt */

/* ---- interposition ------------------------------------------------------------ */

static __thread volatile int in_writer;

enum { C_GETTID, C_TGKILL, C_FUTEX, C_GETPID, C_CLOCK, C_GETCPU, C_NCOUNT };
static _Atomic(uint64_t) g_count[C_NCOUNT]; /* allowed calls made by the write path */
static _Atomic(uint64_t) g_forbidden;       /* forbidden calls made by the write path */
static const char *_Atomic g_forbidden_first;
static _Atomic(long) g_forbidden_sysno;

/* The interposed functions run before the sanitizer runtimes are set up
 * (the dynamic loader allocates while they initialise): not instrumented. */
#if defined(__has_attribute)
#if __has_attribute(disable_sanitizer_instrumentation)
#define NOSAN __attribute__((disable_sanitizer_instrumentation))
#endif
#endif
#ifdef NOSAN
#elif defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 8)
#define NOSAN __attribute__((no_sanitize("address", "thread", "undefined")))
#else
#define NOSAN
#endif

NOSAN static void forbidden(const char *what)
{
	const char *none = NULL;
	atomic_compare_exchange_strong(&g_forbidden_first, &none, what);
	atomic_fetch_add(&g_forbidden, 1);
}

#define IN_WRITER() (in_writer != 0)

/* The sanitizers' interceptors, when a sanitizer runtime is linked in. */
extern void *__interceptor_malloc(size_t) __attribute__((weak));
extern void *__interceptor_calloc(size_t, size_t) __attribute__((weak));
extern void *__interceptor_realloc(void *, size_t) __attribute__((weak));
extern void __interceptor_free(void *) __attribute__((weak));
extern int __interceptor_pthread_mutex_lock(pthread_mutex_t *) __attribute__((weak));
extern int __interceptor_pthread_mutex_unlock(pthread_mutex_t *) __attribute__((weak));
extern int __interceptor_pthread_mutex_trylock(pthread_mutex_t *) __attribute__((weak));
extern int __interceptor_clock_gettime(clockid_t, struct timespec *) __attribute__((weak));
/* glibc's own entry points */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
static int (*real_mutex_lock)(pthread_mutex_t *);
static int (*real_mutex_unlock)(pthread_mutex_t *);
static int (*real_mutex_trylock)(pthread_mutex_t *);

/* dlsym's result as a function pointer (POSIX guarantees it converts) */
#define RESOLVE(ptr, name) (*(void **)&(ptr) = dlsym(RTLD_NEXT, name))

NOSAN void *malloc(size_t n)
{
	if (IN_WRITER())
		forbidden("malloc");
	return __interceptor_malloc ? __interceptor_malloc(n) : __libc_malloc(n);
}

NOSAN void *calloc(size_t n, size_t m)
{
	if (IN_WRITER())
		forbidden("calloc");
	return __interceptor_calloc ? __interceptor_calloc(n, m) : __libc_calloc(n, m);
}

NOSAN void *realloc(void *p, size_t n)
{
	if (IN_WRITER())
		forbidden("realloc");
	return __interceptor_realloc ? __interceptor_realloc(p, n) : __libc_realloc(p, n);
}

NOSAN void free(void *p)
{
	if (IN_WRITER())
		forbidden("free");
	if (__interceptor_free)
		__interceptor_free(p);
	else
		__libc_free(p);
}

NOSAN int pthread_mutex_lock(pthread_mutex_t *m)
{
	if (IN_WRITER())
		forbidden("pthread_mutex_lock");
	if (__interceptor_pthread_mutex_lock)
		return __interceptor_pthread_mutex_lock(m);
	if (!real_mutex_lock)
		RESOLVE(real_mutex_lock, "pthread_mutex_lock");
	return real_mutex_lock(m);
}

NOSAN int pthread_mutex_unlock(pthread_mutex_t *m)
{
	if (IN_WRITER())
		forbidden("pthread_mutex_unlock");
	if (__interceptor_pthread_mutex_unlock)
		return __interceptor_pthread_mutex_unlock(m);
	if (!real_mutex_unlock)
		RESOLVE(real_mutex_unlock, "pthread_mutex_unlock");
	return real_mutex_unlock(m);
}

NOSAN int pthread_mutex_trylock(pthread_mutex_t *m)
{
	if (IN_WRITER())
		forbidden("pthread_mutex_trylock");
	if (__interceptor_pthread_mutex_trylock)
		return __interceptor_pthread_mutex_trylock(m);
	if (!real_mutex_trylock)
		RESOLVE(real_mutex_trylock, "pthread_mutex_trylock");
	return real_mutex_trylock(m);
}

/* Allowed calls: counted. Resolved before main (dlsym is no signal-safe
 * call; the handlers only use the pointers). */
static long (*real_syscall)(long, ...);
static pid_t (*real_getpid)(void);
static int (*real_clock_gettime)(clockid_t, struct timespec *);
static int (*real_sched_getcpu)(void);

__attribute__((constructor)) static void resolve_real(void)
{
	RESOLVE(real_syscall, "syscall");
	RESOLVE(real_getpid, "getpid");
	RESOLVE(real_clock_gettime, "clock_gettime");
	RESOLVE(real_sched_getcpu, "sched_getcpu");
	RESOLVE(real_mutex_lock, "pthread_mutex_lock");
	RESOLVE(real_mutex_unlock, "pthread_mutex_unlock");
	RESOLVE(real_mutex_trylock, "pthread_mutex_trylock");
}

NOSAN long syscall(long n, ...)
{
	va_list ap;
	long a[6];
	va_start(ap, n);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (IN_WRITER()) {
		if (n == SYS_gettid)
			atomic_fetch_add(&g_count[C_GETTID], 1);
		else if ((n == SYS_tgkill && a[2] == 0) || (n == SYS_kill && a[1] == 0))
			atomic_fetch_add(&g_count[C_TGKILL], 1); /* existence checks (signal 0) */
		else if (n == SYS_futex && (a[1] == 1 || a[1] == (1 | 128)) /* FUTEX_WAKE[_PRIVATE] */)
			atomic_fetch_add(&g_count[C_FUTEX], 1);
		else {
			atomic_store(&g_forbidden_sysno, n);
			forbidden("syscall");
		}
	}
	return real_syscall(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}

NOSAN pid_t getpid(void)
{
	if (IN_WRITER())
		atomic_fetch_add(&g_count[C_GETPID], 1);
	return real_getpid ? real_getpid() : (pid_t)real_syscall(SYS_getpid);
}

NOSAN int clock_gettime(clockid_t id, struct timespec *ts)
{
	if (IN_WRITER())
		atomic_fetch_add(&g_count[C_CLOCK], 1);
	if (__interceptor_clock_gettime)
		return __interceptor_clock_gettime(id, ts);
	return real_clock_gettime(id, ts);
}

NOSAN int sched_getcpu(void)
{
	if (IN_WRITER())
		atomic_fetch_add(&g_count[C_GETCPU], 1);
	return real_sched_getcpu();
}

/* ---- the write path, flagged ------------------------------------------------- */

static void *w_reserve(struct ringbuf *rb, unsigned cpu, size_t len)
{
	int saved = in_writer;
	void *p;
	in_writer = 1;
	atomic_signal_fence(memory_order_seq_cst);
	p = ringbuf_reserve(rb, cpu, len);
	atomic_signal_fence(memory_order_seq_cst);
	in_writer = saved;
	return p;
}

static void w_commit(struct ringbuf *rb, unsigned cpu, void *p)
{
	int saved = in_writer;
	in_writer = 1;
	atomic_signal_fence(memory_order_seq_cst);
	ringbuf_commit(rb, cpu, p);
	atomic_signal_fence(memory_order_seq_cst);
	in_writer = saved;
}

static void w_discard(struct ringbuf *rb, unsigned cpu, void *p)
{
	int saved = in_writer;
	in_writer = 1;
	atomic_signal_fence(memory_order_seq_cst);
	ringbuf_discard(rb, cpu, p);
	atomic_signal_fence(memory_order_seq_cst);
	in_writer = saved;
}

static int w_write(struct ringbuf *rb, unsigned cpu, const void *d, size_t len)
{
	int saved = in_writer, r;
	in_writer = 1;
	atomic_signal_fence(memory_order_seq_cst);
	r = ringbuf_write(rb, cpu, d, len);
	atomic_signal_fence(memory_order_seq_cst);
	in_writer = saved;
	return r;
}

/* ---- events ------------------------------------------------------------------------- */

struct ev {
	uint32_t tag, seq, len, csum;
};

static uint32_t ev_sum(const unsigned char *p, uint32_t len)
{
	return fnv1a_except(p, len, offsetof(struct ev, csum), sizeof(struct ev));
}

static uint32_t ev_fill(unsigned char *p, uint32_t tag, uint32_t seq, uint32_t len)
{
	struct ev h = {tag, seq, len, 0};
	memcpy(p, &h, sizeof h);
	for (uint32_t i = sizeof h; i < len; i++)
		p[i] = (unsigned char)mix(seq ^ (i << 9) ^ tag);
	h.csum = ev_sum(p, len);
	memcpy(p, &h, sizeof h);
	return len;
}

/* ---- scenarios: what the handlers do ------------------------------------------ */

struct scen {
	struct ringbuf *rb;
	unsigned cpu;      /* explicit index, RINGBUF_CPU_THREAD or RINGBUF_CPU_CURRENT */
	pid_t tid;         /* the thread whose handlers write */
	int nest_every;    /* raise the nested signal in every n-th first-level event */
	uint64_t calls, ok, fail, discards, nested;
	uint32_t seq;
};
static struct scen *volatile g_sc;
static __thread int tls_is_target;

/* One round of writes (async-signal-safe): reserve/commit (with a nested
 * signal while open), ringbuf_write, reserve/discard, and one large event. */
static void do_writes(struct scen *s, int level)
{
	unsigned char buf[120];
	uint32_t len = 16 + mix(s->seq * 7u + (uint32_t)level) % 64;
	unsigned char *p = w_reserve(s->rb, s->cpu, len);
	if (p) {
		ev_fill(p, 'R', s->seq++, len);
		if (level == 1 && s->nest_every && (s->calls % (uint64_t)s->nest_every) == 0) {
			/* a second signal while this event is open: nested writes */
			pthread_kill(pthread_self(), SIGUSR2);
		}
		w_commit(s->rb, s->cpu, p);
		s->ok++;
	} else {
		s->seq++;
		s->fail++;
	}
	len = 16 + mix(s->seq) % 80;
	len = ev_fill(buf, 'W', s->seq++, len);
	if (w_write(s->rb, s->cpu, buf, len) == 0)
		s->ok++;
	else
		s->fail++;
	p = w_reserve(s->rb, s->cpu, 24);
	if (p) {
		ev_fill(p, 'D', 0, 24);
		w_discard(s->rb, s->cpu, p);
		s->discards++;
	} else {
		s->fail++;
	}
	/* a large one: crosses pages whenever it does not fit */
	len = ev_fill(buf, 'L', s->seq++, 100);
	if (w_write(s->rb, s->cpu, buf, len) == 0)
		s->ok++;
	else
		s->fail++;
}

static void on_usr1(int sig)
{
	(void)sig;
	int e = errno;
	struct scen *s = g_sc;
	if (s && tls_is_target) {
		s->calls++;
		do_writes(s, 1);
	}
	errno = e;
}

static void on_usr2(int sig)
{
	(void)sig;
	int e = errno;
	struct scen *s = g_sc;
	if (s && tls_is_target) {
		s->nested++;
		do_writes(s, 2);
	}
	errno = e;
}

static void counts_reset(void)
{
	for (int i = 0; i < C_NCOUNT; i++)
		atomic_store(&g_count[i], 0);
	atomic_store(&g_forbidden, 0);
	atomic_store(&g_forbidden_first, NULL);
	atomic_store(&g_forbidden_sysno, 0);
}

static void counts_print(const char *name)
{
	print_message("  %s: write path called clock_gettime %llu, sched_getcpu %llu, gettid %llu, "
		      "getpid %llu, tgkill(0) %llu, futex wake %llu; forbidden calls %llu%s%s\n",
		      name, (unsigned long long)atomic_load(&g_count[C_CLOCK]),
		      (unsigned long long)atomic_load(&g_count[C_GETCPU]),
		      (unsigned long long)atomic_load(&g_count[C_GETTID]),
		      (unsigned long long)atomic_load(&g_count[C_GETPID]),
		      (unsigned long long)atomic_load(&g_count[C_TGKILL]),
		      (unsigned long long)atomic_load(&g_count[C_FUTEX]),
		      (unsigned long long)atomic_load(&g_forbidden),
		      atomic_load(&g_forbidden) ? ", first: " : "",
		      atomic_load(&g_forbidden) ? atomic_load(&g_forbidden_first) : "");
}

static void expect_no_forbidden(void)
{
	uint64_t n = atomic_load(&g_forbidden);
	if (n)
		fail_msg("the write path made %llu forbidden call(s), first: %s (syscall %ld)",
			 (unsigned long long)n, atomic_load(&g_forbidden_first),
			 atomic_load(&g_forbidden_sysno));
}

static void install_handlers(void)
{
	install_irq_nmi(SIGUSR1, on_usr1, SIGUSR2, on_usr2); /* SIGUSR2 stays deliverable in on_usr1 */
}

/* A fresh thread that makes no ringbuf call of its own: it only sends itself
 * `rounds` signals (each handled before pthread_kill returns; pthread_kill to
 * itself, because ThreadSanitizer defers a signal sent any other way). */
struct target {
	struct scen *s;
	int rounds;
	int thread_cpu; /* ringbuf_thread_cpu afterwards, outside the handlers */
};

static void *target_main(void *arg)
{
	struct target *t = arg;
	tls_is_target = 1;
	t->s->tid = (pid_t)real_syscall(SYS_gettid);
	for (int i = 0; i < t->rounds; i++)
		pthread_kill(pthread_self(), SIGUSR1);
	tls_is_target = 0;
	t->thread_cpu = ringbuf_thread_cpu(t->s->rb);
	return NULL;
}

static struct ringbuf *g_rb;

static struct ringbuf *make_rb(unsigned ncpu, size_t page, size_t pages, int mode)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	cfg.ncpu = ncpu;
	cfg.page_size = page;
	cfg.size_per_cpu = page * pages;
	cfg.mode = mode;
	assert_int_equal(ringbuf_create(&cfg, &g_rb), 0);
	return g_rb;
}

static int teardown(void **state)
{
	(void)state;
	g_sc = NULL;
	signal(SIGUSR1, SIG_DFL);
	signal(SIGUSR2, SIG_DFL);
	ringbuf_set_warn_hook(NULL, NULL);
	ringbuf__set_testpoint_hook(NULL, NULL);
	if (g_rb)
		ringbuf_destroy(g_rb);
	g_rb = NULL;
	return 0;
}

/* Every event left in the buffer is whole; returns how many. */
static uint64_t read_back(struct ringbuf *rb)
{
	struct ringbuf_record rec;
	uint64_t n = 0;
	for (unsigned c = 0; c < ringbuf_ncpu(rb); c++) {
		int r;
		while ((r = ringbuf_consume(rb, c, &rec)) == 1) {
			struct ev h;
			assert_true(rec.len >= sizeof h);
			memcpy(&h, rec.data, sizeof h);
			assert_true(h.len >= sizeof h && h.len <= 120);
			assert_int_equal(ev_sum(rec.data, h.len), h.csum);
			assert_true(h.tag != 'D'); /* discarded events never show */
			n++;
		}
		assert_int_equal(r, 0);
	}
	return n;
}

static void run_target(struct scen *s, int rounds, struct target *t)
{
	pthread_t th;
	memset(t, 0, sizeof *t);
	t->s = s;
	t->rounds = rounds;
	g_sc = s;
	assert_int_equal(pthread_create(&th, NULL, target_main, t), 0);
	pthread_join(th, NULL);
	g_sc = NULL;
}

/* ---- tests ------------------------------------------------------------------------- */

static void explicit_index_writes_in_handlers_are_signal_safe_with_crossings_and_head_pushes(void **state)
{
	(void)state;
	struct ringbuf *rb = make_rb(1, 128, 8, RINGBUF_MODE_OVERWRITE);
	struct scen s;
	struct target t;
	memset(&s, 0, sizeof s);
	s.rb = rb;
	s.cpu = 0;
	s.nest_every = 3;
	install_handlers();
	counts_reset();
	run_target(&s, 3000, &t);
	counts_print("explicit index");
	expect_no_forbidden();
	struct ringbuf_stats st;
	ringbuf_stats(rb, &st);
	print_message("  %llu handler rounds (%llu nested), %llu events, %llu discards; pages touched "
		      "%llu, head pushes (pages lost) %llu, overrun %llu\n",
		      (unsigned long long)s.calls, (unsigned long long)s.nested, (unsigned long long)s.ok,
		      (unsigned long long)s.discards, (unsigned long long)st.pages_touched,
		      (unsigned long long)st.pages_lost, (unsigned long long)st.overrun);
	assert_int_equal(s.calls, 3000);
	assert_true(s.nested >= 900);
	/* nested writers can fill the small ring before the outer commits:
	 * such drops are commit_overrun, counted */
	assert_int_equal(s.fail, st.commit_overrun + st.dropped_events);
	assert_true(st.pages_touched > 1000); /* page crossings */
	assert_true(st.pages_lost > 100);     /* head pushes */
	assert_int_equal(st.committed, s.ok);
	assert_int_equal(st.discarded, s.discards);
	/* an explicit index needs no thread id, no liveness check, no wake */
	assert_int_equal(atomic_load(&g_count[C_GETTID]), 0);
	assert_int_equal(atomic_load(&g_count[C_TGKILL]), 0);
	assert_int_equal(atomic_load(&g_count[C_FUTEX]), 0);
	assert_true(atomic_load(&g_count[C_CLOCK]) >= s.ok);
	uint64_t n = read_back(rb);
	assert_int_equal(n + st.overrun, s.ok);
}

static void thread_mode_first_event_in_handler_is_signal_safe(void **state)
{
	(void)state;
	struct ringbuf *rb = make_rb(2, 128, 8, RINGBUF_MODE_OVERWRITE);
	struct scen s;
	struct target t;
	memset(&s, 0, sizeof s);
	s.rb = rb;
	s.cpu = RINGBUF_CPU_THREAD;
	s.nest_every = 2;
	install_handlers();
	counts_reset();
	run_target(&s, 1000, &t);
	counts_print("RINGBUF_CPU_THREAD");
	expect_no_forbidden();
	assert_true(t.thread_cpu >= 0);
	/* the thread id is read once: at the thread's first event, in a handler */
	assert_int_equal(atomic_load(&g_count[C_GETTID]), 1);
	assert_int_equal(atomic_load(&g_count[C_TGKILL]), 0);
	assert_int_equal(atomic_load(&g_count[C_GETPID]), 0);
	struct ringbuf_stats st;
	ringbuf_stats(rb, &st);
	assert_int_equal(s.fail, st.commit_overrun + st.dropped_events + st.unmapped);
	assert_int_equal(st.unmapped, 0);
	assert_int_equal(st.committed, s.ok);
	assert_true(st.pages_lost > 10);
	uint64_t n = read_back(rb);
	assert_int_equal(n + st.overrun, s.ok);
}

static void current_mode_writes_in_handlers_are_signal_safe(void **state)
{
	(void)state;
	struct ringbuf *rb = make_rb(4, 128, 8, RINGBUF_MODE_OVERWRITE);
	struct scen s;
	struct target t;
	memset(&s, 0, sizeof s);
	s.rb = rb;
	s.cpu = RINGBUF_CPU_CURRENT;
	s.nest_every = 2;
	install_handlers();
	counts_reset();
	run_target(&s, 1000, &t);
	counts_print("RINGBUF_CPU_CURRENT");
	expect_no_forbidden();
	assert_int_equal(atomic_load(&g_count[C_GETTID]), 1);
	assert_int_equal(atomic_load(&g_count[C_TGKILL]), 0);
	struct ringbuf_stats st;
	ringbuf_stats(rb, &st);
	assert_int_equal(s.fail, st.commit_overrun + st.dropped_events + st.unmapped);
	assert_int_equal(st.unmapped, 0);
	assert_int_equal(st.committed, s.ok);
	uint64_t n = read_back(rb);
	assert_int_equal(n + st.overrun, s.ok);
	for (unsigned c = 0; c < 4; c++)
		assert_int_equal(atomic_load(&ringbuf__cpu(rb, c)->owner), 0);
}

/* Every buffer claimed by a live thread: the handler's writes are refused,
 * the owners' liveness checked (kill(tid, 0) per owner) only on the thread's
 * throttled full scans. */
static sem_t g_hold_ready, g_hold_go;
static void *claim_holder(void *arg)
{
	struct ringbuf *rb = arg;
	uint32_t v[4] = {1, 2, 3, 4};
	ringbuf_write(rb, RINGBUF_CPU_THREAD, v, sizeof v);
	sem_post(&g_hold_ready);
	sem_wait(&g_hold_go);
	return NULL;
}

static void thread_mode_all_buffers_taken_in_handler_is_signal_safe(void **state)
{
	(void)state;
	struct ringbuf *rb = make_rb(2, 1024, 4, RINGBUF_MODE_OVERWRITE);
	pthread_t h1, h2;
	struct scen s;
	struct target t;
	sem_init(&g_hold_ready, 0, 0);
	sem_init(&g_hold_go, 0, 0);
	assert_int_equal(pthread_create(&h1, NULL, claim_holder, rb), 0);
	assert_int_equal(pthread_create(&h2, NULL, claim_holder, rb), 0);
	sem_wait(&g_hold_ready);
	sem_wait(&g_hold_ready);
	memset(&s, 0, sizeof s);
	s.rb = rb;
	s.cpu = RINGBUF_CPU_THREAD;
	install_handlers();
	counts_reset();
	run_target(&s, 50, &t);
	sem_post(&g_hold_go);
	sem_post(&g_hold_go);
	pthread_join(h1, NULL);
	pthread_join(h2, NULL);
	sem_destroy(&g_hold_ready);
	sem_destroy(&g_hold_go);
	counts_print("RINGBUF_CPU_THREAD, every buffer taken");
	expect_no_forbidden();
	struct ringbuf_stats st;
	ringbuf_stats(rb, &st);
	/* 4 attempts per round, all refused: 3 reserves/writes + the discard's reserve */
	assert_int_equal(s.ok, 0);
	assert_int_equal(s.fail, 50 * 4);
	assert_int_equal(st.unmapped, 50 * 4);
	assert_int_equal(t.thread_cpu, -1);
	/* both owners judged (kill(tid, 0): no getpid) on the full scans only
	 * (>>contexts, THREAD FALLBACK F1-F3): the first attempt, then one after
	 * each wait of 16, 32, 64, .. attempts; not once per refused attempt */
	{
		uint64_t scans = 0, next = 0, wait = RINGBUF__RESCAN_FIRST;
		while (next < 50 * 4) { /* attempts 0, 17, 50, 115, ... */
			scans++;
			next += wait + 1;
			wait = wait >= RINGBUF_THREAD_RESCAN / 2 ? RINGBUF_THREAD_RESCAN : 2 * wait;
		}
		print_message("  %llu liveness checks for %d refused attempts (%llu full scans)\n",
			      (unsigned long long)atomic_load(&g_count[C_TGKILL]), 50 * 4,
			      (unsigned long long)scans);
		assert_int_equal(atomic_load(&g_count[C_TGKILL]), 2 * scans);
	}
	assert_int_equal(atomic_load(&g_count[C_GETPID]), 0);
	assert_int_equal(atomic_load(&g_count[C_GETTID]), 1);
}

/* A reader waits in ringbuf_wait: the handler's commit wakes it (futex). */
static _Atomic(int) g_wait_result;
static void *waiter(void *arg)
{
	struct ringbuf *rb = arg;
	atomic_store(&g_wait_result, ringbuf_wait(rb, 0, 0, 5000));
	return NULL;
}

static void commit_wakes_a_waiting_reader_signal_safely(void **state)
{
	(void)state;
	struct ringbuf *rb = make_rb(1, 1024, 8, RINGBUF_MODE_OVERWRITE);
	pthread_t w;
	struct scen s;
	struct target t;
	atomic_store(&g_wait_result, -100);
	assert_int_equal(pthread_create(&w, NULL, waiter, rb), 0);
	while (atomic_load(&ringbuf__sh(rb)->waiters) == 0)
		sched_yield();
	memset(&s, 0, sizeof s);
	s.rb = rb;
	s.cpu = 0;
	install_handlers();
	counts_reset();
	run_target(&s, 1, &t);
	pthread_join(w, NULL);
	counts_print("explicit index, a reader waiting");
	expect_no_forbidden();
	assert_int_equal(atomic_load(&g_wait_result), 1);
	assert_true(atomic_load(&g_count[C_FUTEX]) >= 1);
	assert_true(s.ok > 0);
}

/* A timer storm (SIGEV_THREAD_ID, 20 kHz) interrupts a thread that is itself
 * busy in malloc/calloc/realloc/free and pthread_mutex calls; the handler
 * writes in all three modes (the thread's first mapped events come from the
 * handler), nesting a second signal now and then. A write path that
 * allocated or locked could deadlock here; it must not even try. */
static struct ringbuf *g_storm_rb[3];
static struct scen g_storm[3];
static __thread int tls_storm;

static void on_storm(int sig)
{
	(void)sig;
	int e = errno;
	if (tls_storm) {
		for (int m = 0; m < 3; m++) {
			g_storm[m].calls++;
			do_writes(&g_storm[m], 3); /* level 3: no nested signal from here */
		}
	}
	errno = e;
}

static void *storm_target(void *arg)
{
	int ms = *(int *)arg;
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	timer_t tm;
	struct timespec t0, t1;
	pid_t tid = my_tid();
	for (int m = 0; m < 3; m++)
		g_storm[m].tid = tid;
	tls_storm = 1;
	if (thread_timer(tid, SIGRTMIN, 50000, 50000, &tm) != 0)
		return (void *)1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned long i = 0;; i++) {
		void *a = malloc(16 + i % 512);
		void *b = calloc(4, 8 + i % 64);
		a = realloc(a, 32 + i % 1024);
		pthread_mutex_lock(&mu);
		free(b);
		pthread_mutex_unlock(&mu);
		if (pthread_mutex_trylock(&mu) == 0)
			pthread_mutex_unlock(&mu);
		free(a);
		if ((i & 255) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 > ms)
				break;
		}
	}
	timer_delete(tm);
	sigset_t block;
	sigemptyset(&block);
	sigaddset(&block, SIGRTMIN);
	pthread_sigmask(SIG_BLOCK, &block, NULL);
	tls_storm = 0;
	return NULL;
}

static int storm_teardown(void **state)
{
	(void)state;
	signal(SIGRTMIN, SIG_DFL);
	for (int m = 0; m < 3; m++) {
		if (g_storm_rb[m])
			ringbuf_destroy(g_storm_rb[m]);
		g_storm_rb[m] = NULL;
	}
	return 0;
}

static void timer_storm_over_malloc_and_mutex_calls_never_reaches_them_from_the_write_path(void **state)
{
	(void)state;
	const unsigned modes[3] = {0, RINGBUF_CPU_THREAD, RINGBUF_CPU_CURRENT};
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct sigaction sa;
	pthread_t th;
	void *ret;
	int ms = 400;
	cfg.page_size = 256;
	cfg.size_per_cpu = 256 * 8;
	for (int m = 0; m < 3; m++) {
		cfg.ncpu = m == 0 ? 1 : 4;
		assert_int_equal(ringbuf_create(&cfg, &g_storm_rb[m]), 0);
		memset(&g_storm[m], 0, sizeof g_storm[m]);
		g_storm[m].rb = g_storm_rb[m];
		g_storm[m].cpu = modes[m];
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_storm;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGRTMIN, &sa, NULL);
	counts_reset();
	assert_int_equal(pthread_create(&th, NULL, storm_target, &ms), 0);
	pthread_join(th, &ret);
	assert_null(ret);
	counts_print("timer storm, 3 modes");
	print_message("  %llu timer signals handled\n", (unsigned long long)g_storm[0].calls);
	expect_no_forbidden();
	assert_true(g_storm[0].calls > 100);
	for (int m = 0; m < 3; m++) {
		struct ringbuf_stats st;
		ringbuf_stats(g_storm_rb[m], &st);
		assert_int_equal(g_storm[m].fail, st.commit_overrun + st.dropped_events + st.unmapped);
		assert_int_equal(st.unmapped, 0);
		assert_int_equal(st.committed, g_storm[m].ok);
		uint64_t n = read_back(g_storm_rb[m]);
		assert_int_equal(n + st.overrun, g_storm[m].ok);
	}
	assert_int_equal(atomic_load(&g_count[C_GETTID]), 1);
}

/* The detector itself: calls made with the flag set are caught, including the
 * library's own allocations (ringbuf_iter_start allocates: not a writer call,
 * used here only because it is a ringbuf call that does allocate). */
static void interposition_catches_allocator_mutex_and_syscalls_made_with_the_flag_set(void **state)
{
	(void)state;
	struct ringbuf *rb = make_rb(1, 1024, 4, RINGBUF_MODE_OVERWRITE);
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	struct ringbuf_iter *it = NULL;
	counts_reset();
	in_writer = 1;
	/* through a volatile pointer, so that the compiler keeps the pairs */
	static void *volatile sink;
	sink = malloc(10);
	sink = realloc(sink, 20);
	free(sink);
	sink = calloc(1, 8);
	free(sink);
	pthread_mutex_lock(&mu);
	pthread_mutex_unlock(&mu);
	if (pthread_mutex_trylock(&mu) == 0)
		pthread_mutex_unlock(&mu);
	(void)syscall(SYS_getppid);
	in_writer = 0;
	assert_int_equal(atomic_load(&g_forbidden), 10);
	assert_int_equal(atomic_load(&g_forbidden_sysno), SYS_getppid);
	counts_reset();
	in_writer = 1;
	int r = ringbuf_iter_start(rb, 0, &it);
	in_writer = 0;
	assert_int_equal(r, 0);
	ringbuf_iter_finish(it);
	assert_true(atomic_load(&g_forbidden) >= 1);
	const char *first = atomic_load(&g_forbidden_first);
	assert_true(strcmp(first, "malloc") == 0 || strcmp(first, "calloc") == 0);
	counts_reset();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(interposition_catches_allocator_mutex_and_syscalls_made_with_the_flag_set,
					  teardown),
		cmocka_unit_test_teardown(
			explicit_index_writes_in_handlers_are_signal_safe_with_crossings_and_head_pushes, teardown),
		cmocka_unit_test_teardown(thread_mode_first_event_in_handler_is_signal_safe, teardown),
		cmocka_unit_test_teardown(current_mode_writes_in_handlers_are_signal_safe, teardown),
		cmocka_unit_test_teardown(thread_mode_all_buffers_taken_in_handler_is_signal_safe, teardown),
		cmocka_unit_test_teardown(commit_wakes_a_waiting_reader_signal_safely, teardown),
		cmocka_unit_test_teardown(
			timer_storm_over_malloc_and_mutex_calls_never_reaches_them_from_the_write_path,
			storm_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
