/* clock_floor.c - make bench-real's floor: the part of a malloc tracer's cost
 * that every tracer of these calls pays, whatever its buffer.
 * SPDX-License-Identifier: MIT
 *
 * An LD_PRELOAD object (built as BUILD/bench/clock_floor.so by make
 * bench-real) that interposes what examples/malloc_trace.c and LTTng-UST's
 * libc wrapper interpose (malloc, free, calloc, realloc, memalign,
 * aligned_alloc, posix_memalign, valloc, pvalloc), calls the real function
 * through the pointer dlsym(RTLD_NEXT) gave, and reads CLOCK_MONOTONIC once
 * per call (free(NULL) excepted), the time stamp of the one event a tracer
 * writes for it. Nothing is recorded: the value goes to a thread-local sum.
 * bench_real.py's `floor` mode; its overhead is subtracted from the traced
 * modes' and LTTng's to compare what each adds above it.
 *
 * While the real functions are being looked up (dlsym may allocate), calls
 * are served from a static arena (never freed; realloc out of it copies). */
#define _GNU_SOURCE 1

/* CFLAGS: -fPIC -fvisibility=hidden */
/* LDFLAGS: -shared -ldl */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define CF_EXPORT __attribute__((visibility("default")))

static void *(*real_malloc)(size_t);
static void (*real_free)(void *);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void *(*real_memalign)(size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_valloc)(size_t);
static void *(*real_pvalloc)(size_t);

static _Thread_local __attribute__((tls_model("initial-exec"))) volatile uint64_t cf_sum;
static _Thread_local __attribute__((tls_model("initial-exec"))) int cf_resolving;
static atomic_int cf_state; /* 0 not looked up, 1 looking up, 2 done */

static _Alignas(64) unsigned char cf_arena[64 << 10];
static atomic_size_t cf_arena_used;

/* the event's time stamp: one clock read */
static inline void cf_stamp(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	cf_sum += (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *cf_arena_alloc(size_t n, size_t align)
{
	size_t old = atomic_load_explicit(&cf_arena_used, memory_order_relaxed), start;
	if (align < 16)
		align = 16;
	do {
		start = (old + align - 1) & ~(align - 1);
		if (start + n > sizeof cf_arena || start + n < start)
			return NULL;
	} while (!atomic_compare_exchange_weak_explicit(&cf_arena_used, &old, start + n, memory_order_relaxed,
							memory_order_relaxed));
	return cf_arena + start; /* static storage: already zero (calloc) */
}

static int cf_in_arena(const void *p)
{
	return (const unsigned char *)p >= cf_arena && (const unsigned char *)p < cf_arena + sizeof cf_arena;
}

#define CF_SYM(var, name)                                  \
	do {                                               \
		void *cf_s_ = dlsym(RTLD_NEXT, name);      \
		memcpy(&(var), &cf_s_, sizeof(var));       \
	} while (0)

/* 1 when the real functions can be called; 0 while this thread looks them up */
static int cf_ready(void)
{
	int expect = 0;
	if (__builtin_expect(atomic_load_explicit(&cf_state, memory_order_acquire) == 2, 1))
		return 1;
	if (cf_resolving)
		return 0;
	if (!atomic_compare_exchange_strong(&cf_state, &expect, 1)) {
		while (atomic_load(&cf_state) != 2) /* another thread looks up */
			;
		return 1;
	}
	cf_resolving = 1;
	CF_SYM(real_malloc, "malloc");
	CF_SYM(real_free, "free");
	CF_SYM(real_calloc, "calloc");
	CF_SYM(real_realloc, "realloc");
	CF_SYM(real_memalign, "memalign");
	CF_SYM(real_aligned_alloc, "aligned_alloc");
	CF_SYM(real_posix_memalign, "posix_memalign");
	CF_SYM(real_valloc, "valloc");
	CF_SYM(real_pvalloc, "pvalloc");
	cf_resolving = 0;
	atomic_store(&cf_state, 2);
	return 1;
}

CF_EXPORT void *malloc(size_t size)
{
	void *p;
	if (!cf_ready())
		return cf_arena_alloc(size, 16);
	p = real_malloc(size);
	cf_stamp();
	return p;
}

CF_EXPORT void free(void *p)
{
	if (!p || cf_in_arena(p))
		return;
	if (!cf_ready())
		return; /* not reached: a pointer not from the arena came from the real malloc */
	cf_stamp();
	real_free(p);
}

CF_EXPORT void *calloc(size_t nmemb, size_t size)
{
	void *p;
	if (!cf_ready()) {
		if (size && nmemb > SIZE_MAX / size)
			return NULL;
		return cf_arena_alloc(nmemb * size, 16);
	}
	p = real_calloc(nmemb, size);
	cf_stamp();
	return p;
}

CF_EXPORT void *realloc(void *old, size_t size)
{
	void *p;
	if (cf_in_arena(old) || !cf_ready()) { /* out of the arena: copy */
		size_t have = old ? (size_t)(cf_arena + sizeof cf_arena - (unsigned char *)old) : 0;
		p = malloc(size);
		if (p && old)
			memcpy(p, old, have < size ? have : size);
		return p;
	}
	p = real_realloc(old, size);
	cf_stamp();
	return p;
}

CF_EXPORT void *memalign(size_t align, size_t size)
{
	void *p;
	if (!cf_ready())
		return cf_arena_alloc(size, align);
	p = real_memalign(align, size);
	cf_stamp();
	return p;
}

CF_EXPORT void *aligned_alloc(size_t align, size_t size)
{
	void *p;
	if (!cf_ready())
		return cf_arena_alloc(size, align);
	p = real_aligned_alloc(align, size);
	cf_stamp();
	return p;
}

CF_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	int r;
	if (!cf_ready()) {
		*out = cf_arena_alloc(size, align);
		return *out ? 0 : 12; /* ENOMEM */
	}
	r = real_posix_memalign(out, align, size);
	cf_stamp();
	return r;
}

CF_EXPORT void *valloc(size_t size)
{
	void *p;
	if (!cf_ready())
		return cf_arena_alloc(size, 4096);
	p = real_valloc(size);
	cf_stamp();
	return p;
}

CF_EXPORT void *pvalloc(size_t size)
{
	void *p;
	if (!cf_ready())
		return cf_arena_alloc((size + 4095) & ~(size_t)4095, 4096);
	p = real_pvalloc(size);
	cf_stamp();
	return p;
}
