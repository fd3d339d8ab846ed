/* malloc_trace.so - an LD_PRELOAD malloc tracer built on ringbuf_trace.h.
 * SPDX-License-Identifier: MIT   (see ringbuf.h)
 *
 *   make examples                       (builds build/examples/malloc_trace.so)
 *   build/tools/ringbuf-record -d /dev/shm/mt -o out/ \
 *       --preload build/examples/malloc_trace.so -- sqlite3 db.sqlite < inserts.sql
 *   build/examples/malloc_check out/[0-9]*.dat (every free matches an allocation)
 *   trace-cmd report -i out/A.dat -i out/B.dat ...
 *
 * Records every malloc, free, calloc, realloc, memalign, posix_memalign,
 * aligned_alloc, valloc and pvalloc of any dynamically linked program as typed
 * events (malloc_trace:malloc ptr= size=, ...) into a shared file buffer that
 * tools/ringbuf-record drains while the program runs. Nothing is traced
 * unless RINGBUF_RECORD_DIR (set by `ringbuf-record -d DIR -- cmd`) names a
 * directory.
 *
 * ONE BUFFER PER PROCESS IMAGE. The first allocation of a process creates
 * DIR/<pid>-<ns>.rb (ringbuf_create_file: 0600, O_EXCL, a fresh name), where
 * <ns> is CLOCK_MONOTONIC at creation, so an image that exec()s keeps its
 * pid and still gets a new name. The protocol with the recorder:
 *   B1  create the buffer at DIR/.<name>.tmp (a dot name: the recorder skips
 *       it), store the event formats (ringbuf_trace_store_registry)
 *   B2  open it again (O_CLOEXEC) and take flock(LOCK_EX) on that descriptor:
 *       the lock says "a writer may still write here"
 *   B3  rename it to DIR/<name>.rb: the recorder sees it only now, complete
 *       and locked
 *   The kernel drops the lock when the last descriptor of that open file
 *   goes: at exit, at a crash or SIGKILL, and at exec (close-on-exec). The
 *   recorder takes the lock shared (LOCK_SH | LOCK_NB) to learn the writer is
 *   gone, then repairs the buffer (ringbuf_recover) and drains the rest.
 * FORK. A child of fork() gets a buffer of its own: the pthread_atfork child
 * handler forgets ringbuf_trace.h's cached thread id, creates and locks the
 * child's buffer (B1-B3), then unmaps the parent's block and closes the
 * inherited lock descriptor (the parent's lock stays: the parent holds the
 * same open file). Since the child's buffer is visible before the inherited
 * lock goes, a recorder that sees the parent's buffer unlocked already sees
 * the child's. The child's first event is malloc_trace:proc (its pid, its
 * parent, and the fork sequence number of the parent's malloc_trace:fork
 * event, emitted by the prepare handler): a checker knows which of the
 * parent's allocations the child inherited (tools: examples/malloc_check.c).
 * Children made without the atfork handlers (a raw clone() or _Fork() that
 * then allocates) would write into the parent's buffer: not supported.
 * posix_spawn and vfork children that exec (what gcc and sh do) are fine.
 *
 * RECURSION. The real functions come from dlsym(RTLD_NEXT) (so another
 * preloaded allocator still works). dlsym may itself call calloc/malloc: while
 * the real functions are being looked up, allocations are served from a
 * static bootstrap arena (never freed; free() of an arena pointer is a no-op).
 * Creating the buffer (stdio-free, but ringbuf_create_file and
 * ringbuf_trace_store_registry allocate) runs with a per-thread "busy" flag
 * set: the allocations it makes go straight to the real functions,
 * untraced (they are the tracer's own, counted in the `untraced` total).
 * THREADS. Events go to RINGBUF_CPU_THREAD buffers (a thread claims one at
 * its first event, lock-free; threads beyond MALLOC_TRACE_BUFS - 2 share the
 * last two buffers, one event at a time). The one-time set-up is guarded by
 * an atomic state: a thread that allocates while another sets up calls the
 * real function untraced (counted).
 * SIGNALS. The emitters are async-signal-safe and nest (a handler that
 * allocates, if its libc lets it, interrupts an event and writes its own
 * inside). The busy flag covers set-up only, never the emit path, so a
 * handler's allocation is not lost because it interrupted an emit.
 * ORDER. malloc-like events are emitted after the real call (the pointer is
 * known), free before it (the address cannot be handed out again before the
 * free's time stamp): in time-stamp order a pointer is never allocated twice.
 * realloc(p, n) with p != NULL emits realloc_free(p) before the call and
 * realloc(old, ptr, size) after it (ptr 0 and size != 0: failed, p still
 * live).
 *
 * IN-PROCESS (MALLOC_TRACE_OUT=DIR, no recorder): the way to record from
 * inside a program. Each process image keeps its events in a private buffer
 * (ringbuf_create: anonymous memory, nothing in /dev/shm) and a consumer
 * thread of its own writes them as they fill to DIR/<pid>-<ns>.dat
 * (ringbuf_wait, then ringbuf_tracedat_drain of whole pages: the loop in
 * ringbuf_tracedat.h's USAGE). At exit (an atexit handler) the tracing stops,
 * the writers in flight are waited for (ringbuf_quiesce), the rest is taken
 * and the trace.dat written. The consumer's own allocations are not traced
 * (its busy flag stays set). A fork child starts its own buffer, writer and
 * consumer (the parent's pages stay the parent's); execve writes the
 * image's file first (see execve below). Limits: an image that ends without
 * exit() or execve (_exit, a fatal signal, glibc's execvp/execl/posix_spawn)
 * writes no trace.dat; an allocation a thread makes while exit() runs the
 * handler may be missing (MALLOC_TRACE_VERBOSE shows committed against
 * written).
 *
 * ENVIRONMENT
 *   RINGBUF_RECORD_DIR   directory of the buffers (set by ringbuf-record; created 0700 if absent)
 *   MALLOC_TRACE_OUT     without RINGBUF_RECORD_DIR: record in-process, DIR/<pid>-<ns>.dat
 *   MALLOC_TRACE_BUFS    per-thread buffers per process (default 8, 3..64)
 *   MALLOC_TRACE_KB      KiB per buffer (default 2048)
 *   MALLOC_TRACE_VERBOSE 1: one line at exit on stderr (events, dropped, untraced)
 */
#define _GNU_SOURCE 1
#define RINGBUF_STATIC /* nothing of the library is exported from the .so */
#define RINGBUF_IMPLEMENTATION
#define RINGBUF_TRACE_DEFINE_EVENTS
#define RINGBUF_TRACE_INLINE /* the write path inlined in each emitter (ringbuf_trace_event.h) */
#include "ringbuf_tracedat.h" /* ringbuf_trace.h, and the trace.dat writer (IN-PROCESS) */

/* CFLAGS: -fPIC -fvisibility=hidden */
/* LDFLAGS: -shared -ldl */

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MT_EXPORT __attribute__((visibility("default")))

RINGBUF_TRACE_EVENT(malloc, RINGBUF_FIELDS(RINGBUF_FIELD(uint64_t, ptr), RINGBUF_FIELD(uint64_t, size)),
		    RINGBUF_PRINT("ptr=0x%llx size=%llu", (unsigned long long)REC->ptr,
				  (unsigned long long)REC->size));
RINGBUF_TRACE_EVENT(calloc,
		    RINGBUF_FIELDS(RINGBUF_FIELD(uint64_t, ptr), RINGBUF_FIELD(uint64_t, nmemb),
				   RINGBUF_FIELD(uint64_t, size)),
		    RINGBUF_PRINT("ptr=0x%llx nmemb=%llu size=%llu", (unsigned long long)REC->ptr,
				  (unsigned long long)REC->nmemb, (unsigned long long)REC->size));
RINGBUF_TRACE_EVENT(free, RINGBUF_FIELDS(RINGBUF_FIELD(uint64_t, ptr)),
		    RINGBUF_PRINT("ptr=0x%llx", (unsigned long long)REC->ptr));
RINGBUF_TRACE_EVENT(realloc_free, RINGBUF_FIELDS(RINGBUF_FIELD(uint64_t, ptr)),
		    RINGBUF_PRINT("ptr=0x%llx", (unsigned long long)REC->ptr));
RINGBUF_TRACE_EVENT(realloc,
		    RINGBUF_FIELDS(RINGBUF_FIELD(uint64_t, old), RINGBUF_FIELD(uint64_t, ptr),
				   RINGBUF_FIELD(uint64_t, size)),
		    RINGBUF_PRINT("old=0x%llx ptr=0x%llx size=%llu", (unsigned long long)REC->old,
				  (unsigned long long)REC->ptr, (unsigned long long)REC->size));
RINGBUF_TRACE_EVENT(memalign,
		    RINGBUF_FIELDS(RINGBUF_FIELD(uint64_t, ptr), RINGBUF_FIELD(uint64_t, align),
				   RINGBUF_FIELD(uint64_t, size)),
		    RINGBUF_PRINT("ptr=0x%llx align=%llu size=%llu", (unsigned long long)REC->ptr,
				  (unsigned long long)REC->align, (unsigned long long)REC->size));
RINGBUF_TRACE_EVENT(proc,
		    RINGBUF_FIELDS(RINGBUF_FIELD(uint64_t, pid), RINGBUF_FIELD(uint64_t, ppid),
				   RINGBUF_FIELD(uint64_t, fork_seq), RINGBUF_FIELD(uint64_t, forked)),
		    RINGBUF_PRINT("pid=%llu ppid=%llu fork_seq=%llu forked=%llu", (unsigned long long)REC->pid,
				  (unsigned long long)REC->ppid, (unsigned long long)REC->fork_seq,
				  (unsigned long long)REC->forked));
RINGBUF_TRACE_EVENT(fork, RINGBUF_FIELDS(RINGBUF_FIELD(uint64_t, seq)),
		    RINGBUF_PRINT("seq=%llu", (unsigned long long)REC->seq));

/* The ids are fixed (1..8 in this order): malloc_check.c reads them by name
 * from the trace.dat formats all the same. */
static struct ringbuf_trace_event *const mt_events[] = {
	&ringbuf_event_malloc,   &ringbuf_event_calloc,  &ringbuf_event_free, &ringbuf_event_realloc_free,
	&ringbuf_event_realloc,  &ringbuf_event_memalign, &ringbuf_event_proc, &ringbuf_event_fork,
};

/* ---- the real functions and the bootstrap arena ---------------------------- */

static void *(*real_malloc)(size_t);
static void (*real_free)(void *);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void *(*real_memalign)(size_t, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);
static int (*real_execve)(const char *, char *const[], char *const[]);

static _Alignas(64) unsigned char mt_arena[64 << 10];
static atomic_size_t mt_arena_used;

static void *mt_arena_alloc(size_t n, size_t align)
{
	size_t old = atomic_load_explicit(&mt_arena_used, memory_order_relaxed), start;
	if (align < 16)
		align = 16;
	do {
		start = (old + align - 1) & ~(align - 1);
		if (start + n > sizeof mt_arena || start + n < start)
			return NULL;
	} while (!atomic_compare_exchange_weak_explicit(&mt_arena_used, &old, start + n, memory_order_relaxed,
							memory_order_relaxed));
	return mt_arena + start; /* static storage: already zero (calloc) */
}

static int mt_in_arena(const void *p)
{
	return (const unsigned char *)p >= mt_arena && (const unsigned char *)p < mt_arena + sizeof mt_arena;
}

/* 0 not looked up, 1 looking up (dlsym may allocate: the arena serves), 2 done */
static atomic_int mt_resolved;

static _Thread_local __attribute__((tls_model("initial-exec"))) int mt_resolving;

/* dlsym's object pointer into a function pointer (POSIX guarantees it works;
 * ISO C has no conversion, so copy the bytes) */
#define MT_SYM(var, name)                                   \
	do {                                                \
		void *mt_s_ = dlsym(RTLD_NEXT, name);       \
		memcpy(&(var), &mt_s_, sizeof(var));        \
	} while (0)

static void mt_resolve(void)
{
	int expect = 0;
	if (mt_resolving)
		return; /* dlsym allocating: the caller serves it from the arena */
	if (!atomic_compare_exchange_strong(&mt_resolved, &expect, 1)) {
		while (atomic_load(&mt_resolved) != 2) /* another thread looks up (once, brief) */
			;
		return;
	}
	mt_resolving = 1;
	MT_SYM(real_malloc, "malloc");
	MT_SYM(real_free, "free");
	MT_SYM(real_calloc, "calloc");
	MT_SYM(real_realloc, "realloc");
	MT_SYM(real_memalign, "memalign");
	MT_SYM(real_posix_memalign, "posix_memalign");
	MT_SYM(real_aligned_alloc, "aligned_alloc");
	MT_SYM(real_valloc, "valloc");
	MT_SYM(real_pvalloc, "pvalloc");
	MT_SYM(real_execve, "execve");
	mt_resolving = 0;
	atomic_store(&mt_resolved, 2);
}

/* ---- set-up -------------------------------------------------------------------- */

static struct ringbuf_trace_registry mt_reg = RINGBUF_TRACE_REGISTRY_INIT("malloc_trace");
static struct ringbuf *mt_rb;     /* this process's buffer; NULL: not tracing */
static int mt_lock_fd = -1;       /* holds flock(LOCK_EX) on the buffer file */
static atomic_int mt_state;       /* 0 not set up, 1 setting up, 2 tracing, 3 off */
static atomic_ulong mt_fork_seq;  /* malloc_trace:fork events of this process */
static _Thread_local __attribute__((tls_model("initial-exec"))) unsigned long mt_parent_fork_seq;
					/* the fork being made by this thread (the child inherits it) */
static atomic_ulong mt_untraced;  /* allocations of the set-up and of threads that raced it */
static _Thread_local __attribute__((tls_model("initial-exec"))) int mt_busy; /* this thread is inside the set-up */

static unsigned long mt_env(const char *name, unsigned long def, unsigned long lo, unsigned long hi)
{
	const char *s = getenv(name);
	char *end;
	unsigned long v;
	if (!s || !*s)
		return def;
	v = strtoul(s, &end, 10);
	return *end || v < lo || v > hi ? def : v;
}

/* ---- in-process recording (IN-PROCESS above) ------------------------------------ */

static int mt_inproc;                   /* MALLOC_TRACE_OUT: this image records itself */
static pid_t mt_owner;                  /* the process that records (a vfork child is not) */
static struct ringbuf_tracedat *mt_w;   /* its trace.dat writer */
static pthread_t mt_consumer_th;
static atomic_int mt_consumer_stop;
static atomic_ulong mt_drain_errors;    /* drains that failed (other than RINGBUF_EAGAIN) */

static void *mt_consumer(void *arg)
{
	(void)arg;
	mt_busy = 1; /* the writer's own allocations are not traced */
	while (!atomic_load_explicit(&mt_consumer_stop, memory_order_acquire)) {
		int r;
		ringbuf_wait(mt_rb, RINGBUF_ALL_CPUS, 50, 100);
		r = ringbuf_tracedat_drain(mt_w, mt_rb, RINGBUF_ALL_CPUS, RINGBUF_READ_FULL);
		if (r < 0 && r != RINGBUF_EAGAIN)
			atomic_fetch_add(&mt_drain_errors, 1);
	}
	return NULL;
}

/* The private buffer, its writer for DIR/<name>.dat and the consumer.
 * Returns 0 or -1 (nothing is traced then). */
static int mt_create_inproc(const char *dir, const char *name, const struct ringbuf_config *cfg)
{
	struct ringbuf_tracedat_info info;
	char path[4096];
	struct ringbuf *rb;
	if ((size_t)snprintf(path, sizeof path, "%s/%s.dat", dir, name) >= sizeof path)
		return -1;
	if (ringbuf_create(cfg, &rb) < 0)
		return -1;
	if (ringbuf_thread_shared(rb, 2) < 0 || ringbuf_tracedat_info_of(rb, &mt_reg, &info) < 0 ||
	    ringbuf_tracedat_open(path, &info, &mt_w) < 0) {
		ringbuf_destroy(rb);
		return -1;
	}
	mt_rb = rb;
	mt_owner = getpid();
	atomic_store(&mt_consumer_stop, 0);
	if (pthread_create(&mt_consumer_th, NULL, mt_consumer, NULL) != 0) {
		ringbuf_tracedat_abort(mt_w);
		mt_w = NULL;
		mt_rb = NULL;
		ringbuf_destroy(rb);
		return -1;
	}
	return 0;
}

/* At exit: stop tracing, wait for the writers in flight, take the rest,
 * write the trace.dat. */
static void mt_finish_inproc(void)
{
	struct ringbuf_tracedat_stats ts;
	struct ringbuf_stats st;
	int i, r;
	if (atomic_load(&mt_state) != 2 || !mt_inproc || getpid() != mt_owner)
		return;
	mt_busy = 1; /* what is allocated from here is not traced */
	atomic_store_explicit(&mt_state, 3, memory_order_release);
	atomic_store_explicit(&mt_consumer_stop, 1, memory_order_release);
	ringbuf_wake_waiters(mt_rb);
	pthread_join(mt_consumer_th, NULL);
	ringbuf_quiesce(mt_rb, 1000);
	for (i = 0; i < 100; i++) { /* RINGBUF_EAGAIN: a writer in the middle of moving a page */
		r = ringbuf_tracedat_drain(mt_w, mt_rb, RINGBUF_ALL_CPUS, 0);
		if (r == 0 || (r < 0 && r != RINGBUF_EAGAIN))
			break;
	}
	if (r < 0 && r != RINGBUF_EAGAIN)
		atomic_fetch_add(&mt_drain_errors, 1);
	memset(&ts, 0, sizeof ts);
	ringbuf_tracedat_keep_stats(mt_w, mt_rb); /* the losses after the last page too */
	r = ringbuf_tracedat_finish(mt_w, &ts);
	mt_w = NULL;
	if (mt_env("MALLOC_TRACE_VERBOSE", 0, 0, 1) == 1 && ringbuf_stats(mt_rb, &st) == 0)
		fprintf(stderr, "malloc_trace[%ld]: %llu events committed, %llu written%s, %llu dropped, %lu untraced, "
				"%lu drain errors\n",
			(long)getpid(), (unsigned long long)st.committed, (unsigned long long)ts.events,
			r < 0 ? " (the trace.dat could not be written)" : "",
			(unsigned long long)(st.dropped_events + st.unmapped), atomic_load(&mt_untraced),
			atomic_load(&mt_drain_errors));
}

/* B1-B3 above (in-process: mt_create_inproc). Returns 0 or -1 (nothing is
 * traced then). */
static int mt_create(void)
{
	const char *dir = getenv("RINGBUF_RECORD_DIR");
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	char tmp[4096], final[4096];
	struct timespec ts;
	struct ringbuf *rb;
	int fd, n;
	mt_inproc = 0;
	if (!dir || !*dir) {
		dir = getenv("MALLOC_TRACE_OUT");
		mt_inproc = dir && *dir;
	}
	if (!dir || !*dir)
		return -1;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return -1;
	cfg.ncpu = (unsigned)mt_env("MALLOC_TRACE_BUFS", 8, 3, 64);
	cfg.size_per_cpu = (size_t)mt_env("MALLOC_TRACE_KB", 2048, 16, 1 << 20) << 10;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER; /* a full buffer drops (counted), never overwrites */
	cfg.user_size = ringbuf_trace_user_size(&mt_reg);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (mt_inproc) {
		n = snprintf(final, sizeof final, "%ld-%lld%09ld", (long)getpid(), (long long)ts.tv_sec, ts.tv_nsec);
		return n < 0 || (size_t)n >= sizeof final ? -1 : mt_create_inproc(dir, final, &cfg);
	}
	n = snprintf(final, sizeof final, "%s/%ld-%lld%09ld.rb", dir, (long)getpid(), (long long)ts.tv_sec,
		     ts.tv_nsec);
	if (n < 0 || (size_t)n >= sizeof final ||
	    snprintf(tmp, sizeof tmp, "%s/.%ld.tmp", dir, (long)getpid()) >= (int)sizeof tmp)
		return -1;
	if (ringbuf_create_file(tmp, &cfg, &rb) < 0) /* B1 */
		return -1;
	if (ringbuf_trace_store_registry(rb, &mt_reg) < 0 || ringbuf_thread_shared(rb, 2) < 0)
		goto fail;
	fd = open(tmp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW); /* B2 */
	if (fd < 0)
		goto fail;
	if (flock(fd, LOCK_EX) != 0 || rename(tmp, final) != 0) { /* B3 */
		close(fd);
		goto fail;
	}
	mt_rb = rb;
	mt_lock_fd = fd;
	return 0;
fail:
	ringbuf_destroy(rb);
	unlink(tmp);
	return -1;
}

static void mt_emit_proc(int forked)
{
	trace_proc(mt_rb, RINGBUF_CPU_THREAD, (uint64_t)getpid(), (uint64_t)getppid(),
		   forked ? mt_parent_fork_seq : 0, (uint64_t)forked);
}

static void mt_atfork_prepare(void)
{
	/* the child inherits this value: its proc event names this fork */
	unsigned long seq = atomic_fetch_add(&mt_fork_seq, 1) + 1;
	if (atomic_load_explicit(&mt_state, memory_order_acquire) == 2) {
		mt_parent_fork_seq = seq;
		trace_fork(mt_rb, RINGBUF_CPU_THREAD, seq);
	}
}

static void mt_atfork_child(void)
{
	struct ringbuf *old = mt_rb;
	int old_fd = mt_lock_fd;
	ringbuf_trace_thread_reset(); /* whatever order the atfork handlers run in */
	if (atomic_load(&mt_state) != 2)
		return;
	mt_busy = 1;
	atomic_store(&mt_fork_seq, 0);
	mt_rb = NULL;
	if (mt_inproc) {
		/* the parent's writer: its temporary files have no name, so
		 * closing the child's descriptors leaves the parent's as they
		 * are; the parent's consumer thread is not in the child */
		ringbuf_tracedat_abort(mt_w);
		mt_w = NULL;
	}
	if (mt_create() == 0) {
		if (old)
			ringbuf_destroy(old); /* unmaps the parent's block, which stays as it is */
		if (old_fd >= 0)
			close(old_fd); /* after the child's buffer is visible (see FORK) */
		mt_busy = 0;
		mt_emit_proc(1);
		return;
	}
	/* no buffer of its own: the child must not write into the parent's */
	atomic_store(&mt_state, 3);
	if (old)
		ringbuf_destroy(old);
	if (old_fd >= 0)
		close(old_fd);
	mt_busy = 0;
}

static void mt_report(void)
{
	struct ringbuf_stats st;
	if (atomic_load(&mt_state) != 2 || mt_env("MALLOC_TRACE_VERBOSE", 0, 0, 1) != 1)
		return;
	if (ringbuf_stats(mt_rb, &st) < 0)
		return;
	fprintf(stderr, "malloc_trace[%ld]: %llu events committed, %llu dropped, %lu untraced\n", (long)getpid(),
		(unsigned long long)st.committed, (unsigned long long)(st.dropped_events + st.unmapped),
		atomic_load(&mt_untraced));
}

static int mt_setup(int s);

/* Returns whether this call is traced: the common case inline (one load and
 * one TLS load per event), the set-up (the first call) out of line. */
static inline int mt_ready(void)
{
	int s = atomic_load_explicit(&mt_state, memory_order_acquire);
	if (__builtin_expect(s == 2, 1))
		return !mt_busy;
	return mt_setup(s);
}

/* mt_ready's state s other than 2 (tracing): set up at the first call */
static __attribute__((noinline)) int mt_setup(int s)
{
	int expect = 0;
	if (s == 3 || mt_busy)
		return 0;
	if (s == 1 || !atomic_compare_exchange_strong(&mt_state, &expect, 1)) {
		atomic_fetch_add_explicit(&mt_untraced, 1, memory_order_relaxed); /* raced the set-up */
		return 0;
	}
	mt_busy = 1;
	mt_resolve();
	if (RINGBUF_TRACE_REGISTER_ARRAY(&mt_reg, mt_events) < 0 ||
	    mt_create() != 0) {
		atomic_store_explicit(&mt_state, 3, memory_order_release);
		mt_busy = 0;
		return 0;
	}
	pthread_atfork(mt_atfork_prepare, NULL, mt_atfork_child);
	atexit(mt_inproc ? mt_finish_inproc : mt_report);
	mt_busy = 0;
	/* release: a thread that sees 2 sees mt_rb (and the registry) */
	atomic_store_explicit(&mt_state, 2, memory_order_release);
	mt_emit_proc(0);
	return 1;
}

static void mt_need_real(void)
{
	if (__builtin_expect(atomic_load_explicit(&mt_resolved, memory_order_acquire) != 2, 0))
		mt_resolve();
}

/* ---- the interposers ------------------------------------------------------------ */

MT_EXPORT void *malloc(size_t size)
{
	void *p;
	mt_need_real();
	if (!real_malloc)
		return mt_arena_alloc(size, 16);
	if (!mt_ready()) {
		if (mt_busy)
			atomic_fetch_add_explicit(&mt_untraced, 1, memory_order_relaxed);
		return real_malloc(size);
	}
	p = real_malloc(size);
	trace_malloc(mt_rb, RINGBUF_CPU_THREAD, (uint64_t)(uintptr_t)p, size);
	return p;
}

MT_EXPORT void free(void *p)
{
	if (!p || mt_in_arena(p))
		return;
	mt_need_real();
	if (mt_ready())
		trace_free(mt_rb, RINGBUF_CPU_THREAD, (uint64_t)(uintptr_t)p);
	real_free(p);
}

MT_EXPORT void *calloc(size_t nmemb, size_t size)
{
	void *p;
	mt_need_real();
	if (!real_calloc) {
		if (size && nmemb > SIZE_MAX / size)
			return NULL;
		return mt_arena_alloc(nmemb * size, 16);
	}
	if (!mt_ready()) {
		if (mt_busy)
			atomic_fetch_add_explicit(&mt_untraced, 1, memory_order_relaxed);
		return real_calloc(nmemb, size);
	}
	p = real_calloc(nmemb, size);
	trace_calloc(mt_rb, RINGBUF_CPU_THREAD, (uint64_t)(uintptr_t)p, nmemb, size);
	return p;
}

MT_EXPORT void *realloc(void *old, size_t size)
{
	void *p;
	int traced;
	mt_need_real();
	if (mt_in_arena(old) || !real_realloc) { /* out of the arena: copy */
		size_t have = old ? (size_t)(mt_arena + sizeof mt_arena - (unsigned char *)old) : 0;
		p = malloc(size);
		if (p && old)
			memcpy(p, old, have < size ? have : size);
		return p;
	}
	traced = mt_ready();
	if (traced && old)
		trace_realloc_free(mt_rb, RINGBUF_CPU_THREAD, (uint64_t)(uintptr_t)old);
	p = real_realloc(old, size);
	if (traced)
		trace_realloc(mt_rb, RINGBUF_CPU_THREAD, (uint64_t)(uintptr_t)old, (uint64_t)(uintptr_t)p, size);
	return p;
}

static void *mt_aligned(void *p, size_t align, size_t size)
{
	if (mt_ready())
		trace_memalign(mt_rb, RINGBUF_CPU_THREAD, (uint64_t)(uintptr_t)p, align, size);
	return p;
}

MT_EXPORT void *memalign(size_t align, size_t size)
{
	mt_need_real();
	if (!real_memalign)
		return mt_arena_alloc(size, align);
	return mt_aligned(real_memalign(align, size), align, size);
}

MT_EXPORT void *aligned_alloc(size_t align, size_t size)
{
	mt_need_real();
	if (!real_aligned_alloc)
		return mt_arena_alloc(size, align);
	return mt_aligned(real_aligned_alloc(align, size), align, size);
}

MT_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	int r;
	mt_need_real();
	if (!real_posix_memalign) {
		*out = mt_arena_alloc(size, align);
		return *out ? 0 : ENOMEM;
	}
	r = real_posix_memalign(out, align, size);
	if (r == 0)
		mt_aligned(*out, align, size);
	return r;
}

MT_EXPORT void *valloc(size_t size)
{
	mt_need_real();
	if (!real_valloc)
		return mt_arena_alloc(size, 4096);
	return mt_aligned(real_valloc(size), 4096, size);
}

MT_EXPORT void *pvalloc(size_t size)
{
	mt_need_real();
	if (!real_pvalloc)
		return mt_arena_alloc(size, 4096);
	return mt_aligned(real_pvalloc(size), 4096, size);
}

/* In-process: an exec replaces the image and its buffer, so the image's
 * trace.dat is written first (the pyenv shim, a bash script, forks 41 times
 * and then execs python: without this its events, and so what its children
 * inherited, were lost). If the exec fails, this image records on into a new
 * trace.dat (whose frees of earlier blocks malloc_check then reports as
 * unmatched). A vfork child shares the parent's memory: it only execs (its
 * allocations, if any, went to the parent's buffer); the real execve was
 * looked up with the others, so it calls no dlsym. Only execve itself is
 * interposed: glibc's execvp, execl and posix_spawn call the kernel's
 * directly, and an image that execs through them writes no trace.dat. */
MT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	int r, e;
	mt_need_real();
	if (!real_execve) {
		errno = ENOSYS;
		return -1;
	}
	if (!mt_inproc || atomic_load(&mt_state) != 2 || getpid() != mt_owner)
		return real_execve(path, argv, envp);
	mt_finish_inproc();
	r = real_execve(path, argv, envp);
	e = errno;
	/* still this image: a new buffer and trace.dat (mt_busy is set) */
	ringbuf_destroy(mt_rb);
	mt_rb = NULL;
	if (mt_create() == 0) {
		mt_busy = 0;
		atomic_store_explicit(&mt_state, 2, memory_order_release);
		mt_emit_proc(0);
	} else {
		mt_busy = 0;
	}
	errno = e;
	return r;
}
