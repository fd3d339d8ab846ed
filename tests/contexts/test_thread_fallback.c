/* RINGBUF_CPU_THREAD with more threads than buffers (>>contexts, THREAD
 * FALLBACK).
 *
 *   - a thread that finds every buffer claimed by a live thread drops its
 *     events (counted) without a system call per event: kill(tid, 0), the
 *     owners' liveness check, runs only on the throttled full scans
 *     (counted through the RINGBUF_TESTING counter ringbuf__kill_calls);
 *     the same for RINGBUF_CPU_CURRENT when every buffer is held;
 *   - a claim given back (ringbuf_thread_release) is claimed at the waiting
 *     thread's next event; a claim left by a thread that exited without
 *     ringbuf_thread_init is taken over at the next due scan, within
 *     RINGBUF_THREAD_RESCAN events;
 *   - ringbuf_thread_shared(rb, n): threads beyond the count write every
 *     event to the shared buffers instead of dropping it (one after another:
 *     no drop at all), and with all threads at once the books balance
 *     exactly (committed + dropped == attempted, each event read back once,
 *     claimers' events only in their buffer, the others' only in the shared
 *     ones);
 *   - a signal handler's event inside a shared event nests on that buffer
 *     (depth 2, and 3 inside that), and a handler that interrupts the take
 *     itself (owner word ours, state not yet stored) nests without taking the
 *     word and without claiming a buffer, even when one has just been freed
 *     (test points), and real signals raised inside shared events nest there;
 *   - a handler that interrupts the takeover of a dead owner's buffer (word
 *     taken, buffer being repaired) is dropped (counted), never writes into
 *     the buffer under repair.
 * Counts, never time: every wait is a barrier or a join.
 */
#define _GNU_SOURCE 1
#define RINGBUF_THREAD_RESCAN 1024u
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"
#include "tidutil.h"

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

struct ev {
	uint32_t thread;
	uint32_t seq;
};

static struct ringbuf *make_rb(unsigned ncpu, size_t per_cpu, int mode)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = NULL;
	cfg.ncpu = ncpu;
	cfg.size_per_cpu = per_cpu;
	cfg.mode = mode;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	return rb;
}

static int write_ev(struct ringbuf *rb, uint32_t thread, uint32_t seq)
{
	struct ev *p = (struct ev *)ringbuf_reserve(rb, RINGBUF_CPU_THREAD, sizeof *p);
	if (!p)
		return -1;
	p->thread = thread;
	p->seq = seq;
	ringbuf_commit(rb, RINGBUF_CPU_THREAD, p);
	return 0;
}

static uint64_t kills(void)
{
	return atomic_load(&ringbuf__kill_calls);
}

static uint64_t owner_word(struct ringbuf *rb, unsigned cpu)
{
	return atomic_load(&ringbuf__cpu(rb, cpu)->owner);
}

/* ---- holders: threads that claim a buffer and keep it until told ------- */

struct holder {
	struct ringbuf *rb;
	uint32_t id;
	long tid;    /* its kernel thread id (wait_tid_gone) */
	int cpu;
	int release; /* 1: ringbuf_thread_release before exiting */
	int init;    /* ringbuf_thread_init first */
	sem_t go, done;
	pthread_t th;
};

static void *holder_main(void *arg)
{
	struct holder *h = (struct holder *)arg;
	h->tid = (long)syscall(SYS_gettid);
	if (h->init)
		assert_int_equal(ringbuf_thread_init(h->rb), 0);
	h->cpu = write_ev(h->rb, h->id, 0) == 0 ? ringbuf_thread_cpu(h->rb) : -1;
	sem_post(&h->done);
	sem_wait(&h->go); /* hold the claim until told */
	if (h->release)
		ringbuf_thread_release(h->rb);
	sem_post(&h->done);
	sem_wait(&h->go);
	return NULL;
}

static void holder_start(struct holder *h, struct ringbuf *rb, uint32_t id)
{
	memset(h, 0, sizeof *h);
	h->rb = rb;
	h->id = id;
	sem_init(&h->go, 0, 0);
	sem_init(&h->done, 0, 0);
	assert_int_equal(pthread_create(&h->th, NULL, holder_main, h), 0);
	sem_wait(&h->done);
	assert_true(h->cpu >= 0);
}

/* step: release (if asked) and wait for it */
static void holder_step(struct holder *h)
{
	sem_post(&h->go);
	sem_wait(&h->done);
}

static void holder_end(struct holder *h)
{
	sem_post(&h->go);
	assert_int_equal(pthread_join(h->th, NULL), 0);
	sem_destroy(&h->go);
	sem_destroy(&h->done);
}

/* ---- a writer thread: n events, counts what happened ------------------ */

struct writer {
	struct ringbuf *rb;
	uint32_t id, n;
	uint64_t ok, failed;
	int cpu_after;        /* ringbuf_thread_cpu after the last write */
	uint32_t first_ok;    /* index of the first event that went in (n: none) */
	pthread_barrier_t *bar;
	pthread_t th;
};

static void *writer_main(void *arg)
{
	struct writer *w = (struct writer *)arg;
	uint32_t i;
	w->first_ok = w->n;
	if (w->bar)
		pthread_barrier_wait(w->bar);
	for (i = 0; i < w->n; i++) {
		if (write_ev(w->rb, w->id, i) == 0) {
			if (!w->ok)
				w->first_ok = i;
			w->ok++;
		} else {
			w->failed++;
		}
	}
	w->cpu_after = ringbuf_thread_cpu(w->rb);
	if (w->bar) /* all alive to the end: no claim of an exited thread taken over */
		pthread_barrier_wait(w->bar);
	return NULL;
}

static void run_writer(struct writer *w)
{
	assert_int_equal(pthread_create(&w->th, NULL, writer_main, w), 0);
	assert_int_equal(pthread_join(w->th, NULL), 0);
}

/* ---- no system call per dropped event ---------------------------------- */

#define DROP_EVENTS 100000u

static void drops_beyond_the_buffer_count_pay_kill_per_scan_not_per_event(void **state)
{
	struct ringbuf *rb = make_rb(2, 64 << 10, RINGBUF_MODE_OVERWRITE);
	struct holder a, b;
	struct writer w[2];
	struct ringbuf_stats st;
	uint64_t k0, k, bound, scans = 0, next = 0, wait = RINGBUF__RESCAN_FIRST;
	unsigned i;
	(void)state;
	holder_start(&a, rb, 100);
	holder_start(&b, rb, 101);
	assert_int_not_equal(a.cpu, b.cpu);
	k0 = kills();
	for (i = 0; i < 2; i++) {
		memset(&w[i], 0, sizeof w[i]);
		w[i].rb = rb;
		w[i].id = i;
		w[i].n = DROP_EVENTS;
		run_writer(&w[i]);
	}
	k = kills() - k0;
	/* the full scans one thread makes in DROP_EVENTS events: at the first,
	 * then after each wait (16, 32, .. RINGBUF_THREAD_RESCAN events) */
	while (next < DROP_EVENTS) {
		scans++;
		next += wait + 1;
		wait = wait >= RINGBUF_THREAD_RESCAN / 2 ? RINGBUF_THREAD_RESCAN : 2 * wait;
	}
	bound = 2 * scans * 2; /* 2 threads, 2 owners judged per scan */
	assert_int_equal(ringbuf_stats(rb, &st), 0);
	print_message("  2 buffers held by live threads; 2 more threads x %u events: %llu + %llu dropped, "
		      "%llu kill(tid, 0) calls (bound %llu; one per owner per event would be %llu)\n",
		      DROP_EVENTS, (unsigned long long)w[0].failed, (unsigned long long)w[1].failed,
		      (unsigned long long)k, (unsigned long long)bound, 2ull * 2 * DROP_EVENTS);
	for (i = 0; i < 2; i++) {
		assert_int_equal(w[i].ok, 0);
		assert_int_equal(w[i].failed, DROP_EVENTS);
		assert_int_equal(w[i].cpu_after, -1);
	}
	assert_int_equal(st.unmapped, 2 * DROP_EVENTS);
	assert_int_equal(st.committed, 2); /* the holders' */
	assert_int_equal(k, bound); /* no tid reuse here: every owner judged alive */
	holder_step(&a);
	holder_step(&b);
	holder_end(&a);
	holder_end(&b);
	ringbuf_destroy(rb);
}

/* RINGBUF_CPU_CURRENT with every buffer held by a live thread: the drops do
 * not pay a kill(tid, 0) each either. */
struct cur_dropper {
	struct ringbuf *rb;
	uint32_t n, failed;
};

static void *cur_dropper_main(void *arg)
{
	struct cur_dropper *d = (struct cur_dropper *)arg;
	uint32_t i;
	for (i = 0; i < d->n; i++) {
		uint32_t *p = (uint32_t *)ringbuf_reserve(d->rb, RINGBUF_CPU_CURRENT, 4);
		if (!p) {
			d->failed++;
			continue;
		}
		*p = i;
		ringbuf_commit(d->rb, RINGBUF_CPU_CURRENT, p);
	}
	return NULL;
}

static void current_mode_drops_pay_kill_per_scan_not_per_event(void **state)
{
	struct ringbuf *rb = make_rb(2, 64 << 10, RINGBUF_MODE_OVERWRITE);
	struct holder a, b;
	struct cur_dropper d = {rb, DROP_EVENTS, 0};
	struct ringbuf_stats st;
	pthread_t th;
	uint64_t k0, k, scans = 0, next = 0, wait = RINGBUF__RESCAN_FIRST;
	(void)state;
	holder_start(&a, rb, 100);
	holder_start(&b, rb, 101);
	k0 = kills();
	assert_int_equal(pthread_create(&th, NULL, cur_dropper_main, &d), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	k = kills() - k0;
	while (next < DROP_EVENTS) {
		scans++;
		next += wait + 1;
		wait = wait >= RINGBUF_THREAD_RESCAN / 2 ? RINGBUF_THREAD_RESCAN : 2 * wait;
	}
	assert_int_equal(ringbuf_stats(rb, &st), 0);
	print_message("  RINGBUF_CPU_CURRENT, 2 buffers claimed by live threads: %u of %u dropped, %llu kill "
		      "calls (%llu full scans x 2 owners; one per owner per drop would be %llu)\n",
		      d.failed, DROP_EVENTS, (unsigned long long)k, (unsigned long long)scans,
		      2ull * DROP_EVENTS);
	assert_int_equal(d.failed, DROP_EVENTS);
	assert_int_equal(st.unmapped, DROP_EVENTS);
	assert_int_equal(k, 2 * scans);
	holder_step(&a);
	holder_step(&b);
	holder_end(&a);
	holder_end(&b);
	ringbuf_destroy(rb);
}

/* A claim given back is claimed at the waiting thread's next event, however
 * long its backoff: the release generation moved. */
struct waiter {
	struct ringbuf *rb;
	sem_t go, done;
	int phase_ok[3];
	int cpu;
	uint64_t kills_in_wait;
};

static void *waiter_main(void *arg)
{
	struct waiter *wt = (struct waiter *)arg;
	uint32_t i;
	int fails = 0;
	uint64_t k0;
	/* phase 0: everything taken, 5000 drops (the backoff grows) */
	for (i = 0; i < 5000; i++)
		fails += write_ev(wt->rb, 7, i) != 0;
	wt->phase_ok[0] = fails == 5000;
	sem_post(&wt->done);
	sem_wait(&wt->go); /* a holder released its claim */
	k0 = kills();
	wt->phase_ok[1] = write_ev(wt->rb, 7, 5000) == 0;
	wt->kills_in_wait = kills() - k0;
	wt->cpu = ringbuf_thread_cpu(wt->rb);
	sem_post(&wt->done);
	return NULL;
}

static void a_released_claim_is_claimed_at_the_next_event(void **state)
{
	struct ringbuf *rb = make_rb(2, 64 << 10, RINGBUF_MODE_OVERWRITE);
	struct holder a, b;
	struct waiter wt;
	pthread_t th;
	(void)state;
	holder_start(&a, rb, 100);
	holder_start(&b, rb, 101);
	memset(&wt, 0, sizeof wt);
	wt.rb = rb;
	sem_init(&wt.go, 0, 0);
	sem_init(&wt.done, 0, 0);
	assert_int_equal(pthread_create(&th, NULL, waiter_main, &wt), 0);
	sem_wait(&wt.done);
	b.release = 1;
	holder_step(&b); /* b gives its buffer back */
	assert_int_equal(owner_word(rb, (unsigned)b.cpu), 0);
	sem_post(&wt.go);
	sem_wait(&wt.done);
	assert_int_equal(pthread_join(th, NULL), 0);
	print_message("  5000 drops, then b released buffer %d: the waiter's next event claimed buffer %d "
		      "(%llu kill calls for it)\n",
		      b.cpu, wt.cpu, (unsigned long long)wt.kills_in_wait);
	assert_true(wt.phase_ok[0]);
	assert_true(wt.phase_ok[1]);
	assert_int_equal(wt.cpu, b.cpu);
	holder_step(&a);
	holder_end(&a);
	holder_end(&b);
	sem_destroy(&wt.go);
	sem_destroy(&wt.done);
	ringbuf_destroy(rb);
}

/* A holder that exits without ringbuf_thread_init leaves its claim (no
 * release, no generation bump): found dead at the next due scan. */
struct dead_waiter {
	struct ringbuf *rb;
	sem_t go, done;
	uint32_t drops_before, events_after;
	int cpu;
};

static void *dead_waiter_main(void *arg)
{
	struct dead_waiter *d = (struct dead_waiter *)arg;
	uint32_t i = 0;
	/* grow the backoff to its maximum while the holder lives */
	while (i < 4 * RINGBUF_THREAD_RESCAN && write_ev(d->rb, 9, i) != 0)
		i++;
	d->drops_before = i;
	sem_post(&d->done);
	sem_wait(&d->go); /* the holder has exited */
	for (i = 0; i < 4 * RINGBUF_THREAD_RESCAN; i++)
		if (write_ev(d->rb, 9, 100000 + i) == 0)
			break;
	d->events_after = i + 1;
	d->cpu = ringbuf_thread_cpu(d->rb);
	sem_post(&d->done);
	return NULL;
}

static void a_dead_holders_claim_is_taken_over_within_the_rescan_bound(void **state)
{
	struct ringbuf *rb = make_rb(1, 64 << 10, RINGBUF_MODE_OVERWRITE);
	struct holder h;
	struct dead_waiter d;
	pthread_t th, hth;
	(void)state;
	memset(&h, 0, sizeof h);
	h.rb = rb;
	h.id = 1;
	memset(&d, 0, sizeof d);
	d.rb = rb;
	sem_init(&d.go, 0, 0);
	sem_init(&d.done, 0, 0);
	/* the holder keeps running (joined only later) until d's backoff is
	 * long: it is blocked on a semaphore after its claim */
	h.release = 0;
	sem_init(&h.go, 0, 0);
	sem_init(&h.done, 0, 0);
	assert_int_equal(pthread_create(&hth, NULL, holder_main, &h), 0);
	sem_wait(&h.done);
	assert_int_equal(h.cpu, 0);
	assert_int_equal(pthread_create(&th, NULL, dead_waiter_main, &d), 0);
	sem_wait(&d.done);
	sem_post(&h.go); /* the holder exits without releasing */
	sem_wait(&h.done);
	sem_post(&h.go);
	assert_int_equal(pthread_join(hth, NULL), 0);
	wait_tid_gone(h.tid); /* dead to kill(tid, 0) too */
	assert_int_not_equal(owner_word(rb, 0), 0); /* a dead owner's claim */
	sem_post(&d.go);
	sem_wait(&d.done);
	assert_int_equal(pthread_join(th, NULL), 0);
	print_message("  %u drops while the holder lived; after its exit (no release) the claim was taken "
		      "over at event %u (bound RINGBUF_THREAD_RESCAN + 1 = %u), buffer %d\n",
		      d.drops_before, d.events_after, RINGBUF_THREAD_RESCAN + 1, d.cpu);
	assert_int_equal(d.drops_before, 4 * RINGBUF_THREAD_RESCAN);
	assert_int_equal(d.cpu, 0);
	assert_true(d.events_after <= RINGBUF_THREAD_RESCAN + 1);
	sem_destroy(&d.go);
	sem_destroy(&d.done);
	sem_destroy(&h.go);
	sem_destroy(&h.done);
	ringbuf_destroy(rb);
}

/* ---- shared buffers ----------------------------------------------------- */

static void thread_shared_rejects_more_than_ncpu(void **state)
{
	struct ringbuf *rb = make_rb(3, 64 << 10, RINGBUF_MODE_OVERWRITE);
	(void)state;
	assert_int_equal(ringbuf_thread_shared(rb, 4), RINGBUF_EINVAL);
	assert_int_equal(atomic_load(&ringbuf__sh(rb)->thread_shared), 0);
	assert_int_equal(ringbuf_thread_shared(NULL, 0), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_thread_shared(rb, 3), 0);
	assert_int_equal(ringbuf_thread_shared(rb, 0), 0);
	ringbuf_destroy(rb);
}

#define SEQ_EVENTS 20000u

/* Two buffers claimed, one shared: threads beyond the count, one after
 * another, lose nothing. */
static void beyond_count_threads_write_to_the_shared_buffer_instead_of_dropping(void **state)
{
	struct ringbuf *rb = make_rb(3, 1 << 20, RINGBUF_MODE_PRODUCER_CONSUMER);
	struct holder a, b;
	struct writer w[3];
	struct ringbuf_stats st;
	struct ringbuf_record rec;
	uint32_t next[3] = {0, 0, 0};
	uint64_t k0;
	unsigned i, n = 0;
	(void)state;
	assert_int_equal(ringbuf_thread_shared(rb, 1), 0);
	holder_start(&a, rb, 100);
	holder_start(&b, rb, 101);
	assert_true(a.cpu < 2 && b.cpu < 2); /* the shared buffer is never claimed */
	k0 = kills();
	for (i = 0; i < 3; i++) {
		memset(&w[i], 0, sizeof w[i]);
		w[i].rb = rb;
		w[i].id = i;
		w[i].n = SEQ_EVENTS;
		run_writer(&w[i]);
	}
	assert_int_equal(ringbuf_stats(rb, &st), 0);
	print_message("  3 threads beyond 2 claimed buffers, one after another: committed %llu + %llu + %llu "
		      "of %u each, unmapped %llu, kill calls %llu\n",
		      (unsigned long long)w[0].ok, (unsigned long long)w[1].ok, (unsigned long long)w[2].ok,
		      SEQ_EVENTS, (unsigned long long)st.unmapped, (unsigned long long)(kills() - k0));
	for (i = 0; i < 3; i++) {
		assert_int_equal(w[i].ok, SEQ_EVENTS);
		assert_int_equal(w[i].failed, 0);
		assert_int_equal(w[i].cpu_after, -1); /* no claim, no event in flight */
	}
	assert_int_equal(st.unmapped, 0);
	assert_int_equal(owner_word(rb, 2), 0);
	/* buffer 2 holds them all, each thread's in order, one thread after
	 * the other */
	while (ringbuf_consume(rb, 2, &rec) == 1) {
		const struct ev *e = (const struct ev *)rec.data;
		assert_true(e->thread < 3);
		assert_int_equal(e->seq, next[e->thread]);
		next[e->thread]++;
		n++;
	}
	assert_int_equal(n, 3 * SEQ_EVENTS);
	holder_step(&a);
	holder_step(&b);
	holder_end(&a);
	holder_end(&b);
	ringbuf_destroy(rb);
}

/* All at once: 2 claimers + 6 threads beyond the count on 2 shared buffers.
 * Whatever the interleaving: committed + dropped == attempted, every
 * committed event read back once, in order per thread and buffer, claimers'
 * events only in their claimed buffer, the others' only in shared ones. */
#define CONC_THREADS 8u
#define CONC_EVENTS 20000u

static void concurrent_shared_writers_balance_exactly(void **state)
{
	struct ringbuf *rb = make_rb(4, 4 << 20, RINGBUF_MODE_PRODUCER_CONSUMER);
	static struct writer w[CONC_THREADS];
	static unsigned char seen[CONC_THREADS][CONC_EVENTS];
	int64_t last[CONC_THREADS][4];
	pthread_barrier_t bar;
	struct ringbuf_stats st;
	struct ringbuf_record rec;
	uint64_t ok = 0, failed = 0, read = 0;
	unsigned i, cpu, claimers = 0;
	(void)state;
	memset(seen, 0, sizeof seen);
	assert_int_equal(ringbuf_thread_shared(rb, 2), 0);
	assert_int_equal(pthread_barrier_init(&bar, NULL, CONC_THREADS), 0);
	for (i = 0; i < CONC_THREADS; i++) {
		memset(&w[i], 0, sizeof w[i]);
		w[i].rb = rb;
		w[i].id = i;
		w[i].n = CONC_EVENTS;
		w[i].bar = &bar;
		assert_int_equal(pthread_create(&w[i].th, NULL, writer_main, &w[i]), 0);
	}
	for (i = 0; i < CONC_THREADS; i++)
		assert_int_equal(pthread_join(w[i].th, NULL), 0);
	for (i = 0; i < CONC_THREADS; i++) {
		assert_int_equal(w[i].ok + w[i].failed, CONC_EVENTS);
		ok += w[i].ok;
		failed += w[i].failed;
		if (w[i].cpu_after >= 0) {
			assert_true(w[i].cpu_after < 2); /* claims only in 0..1 */
			claimers++;
		}
	}
	memset(last, 0xff, sizeof last);
	for (cpu = 0; cpu < 4; cpu++)
		while (ringbuf_consume(rb, cpu, &rec) == 1) {
			const struct ev *e = (const struct ev *)rec.data;
			assert_true(e->thread < CONC_THREADS && e->seq < CONC_EVENTS);
			assert_int_equal(seen[e->thread][e->seq], 0);
			seen[e->thread][e->seq] = 1;
			assert_true((int64_t)e->seq > last[e->thread][cpu]);
			last[e->thread][cpu] = e->seq;
			if (w[e->thread].cpu_after >= 0)
				assert_int_equal(cpu, (unsigned)w[e->thread].cpu_after);
			else
				assert_true(cpu >= 2);
			read++;
		}
	assert_int_equal(ringbuf_stats(rb, &st), 0);
	print_message("  %u threads, 2 claimable + 2 shared buffers: %u claimed; %llu attempted, %llu committed, "
		      "%llu dropped (unmapped %llu, full %llu), %llu read back\n",
		      CONC_THREADS, claimers, (unsigned long long)CONC_THREADS * CONC_EVENTS,
		      (unsigned long long)ok, (unsigned long long)failed, (unsigned long long)st.unmapped,
		      (unsigned long long)st.dropped_events, (unsigned long long)read);
	assert_int_equal(claimers, 2);
	assert_int_equal(ok + failed, (uint64_t)CONC_THREADS * CONC_EVENTS);
	assert_int_equal(st.committed, ok);
	assert_int_equal(failed, st.unmapped + st.dropped_events + st.commit_overrun);
	assert_int_equal(read, ok);
	for (cpu = 0; cpu < 4; cpu++) {
		assert_int_equal(RINGBUF__LOAD(&ringbuf__cpu(rb, cpu)->committing), 0);
		if (cpu >= 2)
			assert_int_equal(owner_word(rb, cpu), 0);
	}
	pthread_barrier_destroy(&bar);
	ringbuf_destroy(rb);
}

/* ---- handlers inside a shared event ------------------------------------- */

struct nest_ctx {
	struct ringbuf *rb;
	struct holder *a;     /* released from inside the take (buffer 0 freed) */
	int armed;            /* only the test thread's first event */
	int taken_hits, held_hits;
	int in_taken_cpu;     /* ringbuf_thread_cpu inside the nested event at TAKEN */
	int after_taken_claim;/* ringbuf_thread_cpu after the nested event at TAKEN */
	uint32_t depth_held[3];
	uint64_t word_in_taken;
	int nested_ok[3];
};

static __thread int hook_thread; /* the hook acts only on the test's writer thread */

static void nest_hook(struct ringbuf *rb, unsigned cpu, int point, void *vctx)
{
	struct nest_ctx *n = (struct nest_ctx *)vctx;
	if (!hook_thread || !n->armed || rb != n->rb)
		return;
	if (point == RINGBUF__TP_SHARED_TAKEN && n->taken_hits++ == 0) {
		/* a handler between F4b and G3: the word is ours, cur is PENDING.
		 * Buffer 0 has just been freed (and the generation bumped): the
		 * handler must not claim it (our commit would go there). */
		holder_step(n->a);
		n->word_in_taken = owner_word(rb, cpu);
		n->armed = 0;
		n->nested_ok[0] = write_ev(rb, 200, 0) == 0;
		n->armed = 1;
		n->after_taken_claim = ringbuf_thread_cpu(rb);
		return;
	}
	if (point == RINGBUF__TP_SHARED_HELD) {
		/* the outer event's own HELD point (the nested writes below
		 * nest through cur's depth and do not pass here) */
		n->held_hits++;
		n->depth_held[0] = RINGBUF__LOAD(&ringbuf__cpu(rb, cpu)->committing);
		n->armed = 0;
		{
			/* an "IRQ" inside the shared event, and an "NMI" inside it */
			struct ev *p = (struct ev *)ringbuf_reserve(rb, RINGBUF_CPU_THREAD, sizeof *p);
			n->nested_ok[1] = p != NULL;
			if (p) {
				n->depth_held[1] = RINGBUF__LOAD(&ringbuf__cpu(rb, cpu)->committing);
				p->thread = 201;
				p->seq = 0;
				n->nested_ok[2] = write_ev(rb, 202, 0) == 0;
				n->in_taken_cpu = ringbuf_thread_cpu(rb);
				ringbuf_commit(rb, RINGBUF_CPU_THREAD, p);
			}
		}
		n->depth_held[2] = RINGBUF__LOAD(&ringbuf__cpu(rb, cpu)->committing);
	}
}

struct nest_writer {
	struct ringbuf *rb;
	int outer_ok, next_ok, cpu_mid, cpu_next;
};

static void *nest_writer_main(void *arg)
{
	struct nest_writer *w = (struct nest_writer *)arg;
	hook_thread = 1;
	w->outer_ok = write_ev(w->rb, 300, 0) == 0;
	w->cpu_mid = ringbuf_thread_cpu(w->rb);
	hook_thread = 0;
	w->next_ok = write_ev(w->rb, 300, 1) == 0;
	w->cpu_next = ringbuf_thread_cpu(w->rb);
	return NULL;
}

static void handlers_nest_in_a_shared_event_and_never_claim_during_the_take(void **state)
{
	struct ringbuf *rb = make_rb(2, 64 << 10, RINGBUF_MODE_OVERWRITE);
	struct holder a;
	struct nest_ctx n;
	struct nest_writer w;
	struct ringbuf_record rec;
	pthread_t th;
	uint32_t order[8][2];
	int got = 0, i;
	(void)state;
	assert_int_equal(ringbuf_thread_shared(rb, 1), 0);
	holder_start(&a, rb, 100);
	assert_int_equal(a.cpu, 0);
	a.release = 1;
	(void)ringbuf_consume(rb, 0, &rec); /* the holder's event */
	memset(&n, 0, sizeof n);
	n.rb = rb;
	n.a = &a;
	n.armed = 1;
	n.in_taken_cpu = -2;
	memset(&w, 0, sizeof w);
	w.rb = rb;
	ringbuf__set_testpoint_hook(nest_hook, &n);
	assert_int_equal(pthread_create(&th, NULL, nest_writer_main, &w), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	ringbuf__set_testpoint_hook(NULL, NULL);
	print_message("  handler inside the take: owner word %#llx, its event %d, claim after it %d; "
		      "inside the event: depth %u, IRQ %d (depth %u), NMI %d, thread cpu %d, depth after %u; "
		      "outer %d; next event: %d on buffer %d\n",
		      (unsigned long long)n.word_in_taken, n.nested_ok[0], n.after_taken_claim, n.depth_held[0],
		      n.nested_ok[1], n.depth_held[1], n.nested_ok[2], n.in_taken_cpu, n.depth_held[2],
		      w.outer_ok, w.next_ok, w.cpu_next);
	assert_int_equal(n.taken_hits, 1);
	assert_int_equal(n.held_hits, 1);
	assert_int_not_equal(n.word_in_taken, 0);
	assert_int_equal(n.word_in_taken & RINGBUF__OWN_PERSIST, 0);
	assert_true(n.nested_ok[0]);
	assert_int_equal(n.after_taken_claim, -1); /* no claim made mid-take */
	assert_int_equal(n.depth_held[0], 1);
	assert_true(n.nested_ok[1]);
	assert_int_equal(n.depth_held[1], 2);
	assert_true(n.nested_ok[2]);
	assert_int_equal(n.in_taken_cpu, 1);
	assert_int_equal(n.depth_held[2], 1);
	assert_true(w.outer_ok);
	assert_int_equal(w.cpu_mid, -1);
	/* the freed buffer 0 is claimed at the next event, not before */
	assert_true(w.next_ok);
	assert_int_equal(w.cpu_next, 0);
	assert_int_equal(owner_word(rb, 1), 0);
	assert_int_equal(RINGBUF__LOAD(&ringbuf__cpu(rb, 1)->committing), 0);
	/* buffer 1: the handler's event inside the take (it went first), then
	 * the outer with the IRQ and NMI events inside it (commit order:
	 * reserve order) */
	while (got < 8 && ringbuf_consume(rb, 1, &rec) == 1) {
		const struct ev *e = (const struct ev *)rec.data;
		order[got][0] = e->thread;
		order[got][1] = e->seq;
		got++;
	}
	for (i = 0; i < got; i++)
		print_message("  buffer 1 event %d: thread %u seq %u\n", i, order[i][0], order[i][1]);
	assert_int_equal(got, 4);
	assert_int_equal(order[0][0], 200);
	assert_int_equal(order[1][0], 300);
	assert_int_equal(order[2][0], 201);
	assert_int_equal(order[3][0], 202);
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
	assert_int_equal(((const struct ev *)rec.data)->thread, 300);
	assert_int_equal(((const struct ev *)rec.data)->seq, 1);
	holder_end(&a);
	ringbuf_destroy(rb);
}

/* The same with real signals: a thread beyond the count raises a signal to
 * itself inside each of its shared events (delivered before pthread_kill
 * returns) and the handler writes RINGBUF_CPU_THREAD events (one nested in
 * the other by a second signal raised inside the handler's event). */
#define SIG_EVENTS 2000u
static struct ringbuf *g_sig_rb;
static _Atomic(int) g_sig_depth_bad, g_sig_ok, g_sig_fail;

static void sig_inner(int signo)
{
	(void)signo;
	if (write_ev(g_sig_rb, 401, 0) == 0)
		atomic_fetch_add(&g_sig_ok, 1);
	else
		atomic_fetch_add(&g_sig_fail, 1);
}

static void sig_outer(int signo)
{
	struct ev *p;
	(void)signo;
	p = (struct ev *)ringbuf_reserve(g_sig_rb, RINGBUF_CPU_THREAD, sizeof *p);
	if (!p) {
		atomic_fetch_add(&g_sig_fail, 1);
		return;
	}
	if (ringbuf_thread_cpu(g_sig_rb) != 1 ||
	    RINGBUF__LOAD(&ringbuf__cpu(g_sig_rb, 1)->committing) != 2)
		atomic_fetch_add(&g_sig_depth_bad, 1);
	p->thread = 400;
	p->seq = 0;
	pthread_kill(pthread_self(), SIGUSR2); /* "NMI": depth 3 */
	ringbuf_commit(g_sig_rb, RINGBUF_CPU_THREAD, p);
	atomic_fetch_add(&g_sig_ok, 1);
}

static void *sig_writer_main(void *arg)
{
	uint32_t i, *ok = (uint32_t *)arg;
	for (i = 0; i < SIG_EVENTS; i++) {
		struct ev *p = (struct ev *)ringbuf_reserve(g_sig_rb, RINGBUF_CPU_THREAD, sizeof *p);
		if (!p)
			continue;
		p->thread = 300;
		p->seq = i;
		pthread_kill(pthread_self(), SIGUSR1); /* "IRQ" inside the shared event */
		ringbuf_commit(g_sig_rb, RINGBUF_CPU_THREAD, p);
		(*ok)++;
	}
	return NULL;
}

static void signal_handlers_nest_in_shared_events(void **state)
{
	struct ringbuf *rb = make_rb(2, 1 << 20, RINGBUF_MODE_PRODUCER_CONSUMER);
	struct sigaction sa;
	struct holder a;
	struct ringbuf_record rec;
	struct ringbuf_stats st;
	pthread_t th;
	uint32_t ok = 0, outer = 0, irq = 0, nmi = 0, next = 0, expect = 300;
	(void)state;
	assert_int_equal(ringbuf_thread_shared(rb, 1), 0);
	holder_start(&a, rb, 100); /* buffer 0 claimed: the writer is beyond the count */
	g_sig_rb = rb;
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = sig_outer;
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	sa.sa_handler = sig_inner;
	assert_int_equal(sigaction(SIGUSR2, &sa, NULL), 0);
	assert_int_equal(pthread_create(&th, NULL, sig_writer_main, &ok), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	signal(SIGUSR1, SIG_DFL);
	signal(SIGUSR2, SIG_DFL);
	/* buffer 1: per outer event, the outer, the IRQ's, the NMI's (reserve order) */
	while (ringbuf_consume(rb, 1, &rec) == 1) {
		const struct ev *e = (const struct ev *)rec.data;
		assert_int_equal(e->thread, expect);
		if (e->thread == 300) {
			assert_int_equal(e->seq, next);
			next++;
			outer++;
			expect = 400;
		} else if (e->thread == 400) {
			irq++;
			expect = 401;
		} else {
			nmi++;
			expect = 300;
		}
	}
	assert_int_equal(ringbuf_stats(rb, &st), 0);
	print_message("  %u shared events, each with a signal inside (and one inside that): read back %u "
		      "outer, %u IRQ, %u NMI events; %d handler writes failed, %d at a wrong depth; unmapped %llu\n",
		      ok, outer, irq, nmi, atomic_load(&g_sig_fail), atomic_load(&g_sig_depth_bad),
		      (unsigned long long)st.unmapped);
	assert_int_equal(ok, SIG_EVENTS); /* alone on the shared buffer: nothing dropped */
	assert_int_equal(outer, SIG_EVENTS);
	assert_int_equal(irq, SIG_EVENTS);
	assert_int_equal(nmi, SIG_EVENTS);
	assert_int_equal(atomic_load(&g_sig_fail), 0);
	assert_int_equal(atomic_load(&g_sig_depth_bad), 0);
	assert_int_equal(st.unmapped, 0);
	assert_int_equal(owner_word(rb, 1), 0);
	assert_int_equal(RINGBUF__LOAD(&ringbuf__cpu(rb, 1)->committing), 0);
	holder_step(&a);
	holder_end(&a);
	ringbuf_destroy(rb);
}

/* A handler that interrupts a takeover (the dead owner's word just taken,
 * its buffer about to be repaired) must not write there: the word is ours
 * now, so without the SCANNING bit its event would nest in the buffer while
 * ringbuf__recover_cpu, which assumes no writer of the buffer runs, rewrites
 * the dead event's slots and links. The test point sits at the start of that
 * window. The event is dropped (counted); the interrupted write goes on and
 * commits. Both mapped modes. (Before, the handler's event went in at this
 * point: the recovery that followed happened to commit it; in the middle of
 * the recovery nothing did.) */
struct tk_ctx {
	struct ringbuf *rb;
	unsigned mode;
	int hits, nested_ok;
	uint64_t unmapped_before, unmapped_after;
};
static __thread int tk_thread;

static void takeover_hook(struct ringbuf *rb, unsigned cpu, int point, void *vctx)
{
	struct tk_ctx *t = (struct tk_ctx *)vctx;
	struct ringbuf_stats st;
	(void)cpu;
	if (!tk_thread || rb != t->rb || point != RINGBUF__TP_TAKEOVER || t->hits++)
		return;
	/* (no assert here: another thread; a failure shows as a wrong count) */
	t->unmapped_before = ringbuf_stats(rb, &st) == 0 ? st.unmapped : UINT64_MAX;
	if (t->mode == RINGBUF_CPU_THREAD) {
		t->nested_ok = write_ev(rb, 500, 0) == 0;
	} else {
		struct ev *p = (struct ev *)ringbuf_reserve(rb, RINGBUF_CPU_CURRENT, sizeof *p);
		t->nested_ok = p != NULL;
		if (p) {
			p->thread = 500;
			p->seq = 0;
			ringbuf_commit(rb, RINGBUF_CPU_CURRENT, p);
		}
	}
	t->unmapped_after = ringbuf_stats(rb, &st) == 0 ? st.unmapped : UINT64_MAX;
}

struct tk_dier {
	struct ringbuf *rb;
	unsigned mode;
	long tid;
};

static void *tk_dier_main(void *arg)
{
	struct tk_dier *d = (struct tk_dier *)arg;
	struct ev *p;
	d->tid = (long)syscall(SYS_gettid);
	p = (struct ev *)ringbuf_reserve(d->rb, d->mode, sizeof *p);
	if (p) {
		p->thread = 666;
		p->seq = 0;
	}
	return p; /* dies mid-event */
}

struct tk_writer {
	struct ringbuf *rb;
	unsigned mode;
	int ok;
};

static void *tk_writer_main(void *arg)
{
	struct tk_writer *w = (struct tk_writer *)arg;
	struct ev *p;
	tk_thread = 1;
	p = (struct ev *)ringbuf_reserve(w->rb, w->mode, sizeof *p);
	tk_thread = 0;
	if (!p)
		return NULL;
	p->thread = 600;
	p->seq = 0;
	ringbuf_commit(w->rb, w->mode, p);
	w->ok = 1;
	return NULL;
}

static void handler_during_a_takeover(unsigned mode)
{
	struct ringbuf *rb = make_rb(1, 64 << 10, RINGBUF_MODE_OVERWRITE);
	struct tk_dier d = {rb, mode, 0};
	struct tk_writer w = {rb, mode, 0};
	struct tk_ctx t;
	struct ringbuf_record rec;
	pthread_t th;
	void *res;
	int n = 0, mine = 0;
	memset(&t, 0, sizeof t);
	t.rb = rb;
	t.mode = mode;
	assert_int_equal(pthread_create(&th, NULL, tk_dier_main, &d), 0);
	assert_int_equal(pthread_join(th, &res), 0);
	assert_non_null(res);
	wait_tid_gone(d.tid); /* the writer's kill(tid, 0) finds it dead */
	assert_int_equal(RINGBUF__LOAD(&ringbuf__cpu(rb, 0)->committing), 1);
	ringbuf__set_testpoint_hook(takeover_hook, &t);
	assert_int_equal(pthread_create(&th, NULL, tk_writer_main, &w), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	ringbuf__set_testpoint_hook(NULL, NULL);
	while (ringbuf_consume(rb, 0, &rec) == 1) {
		n++;
		mine += ((const struct ev *)rec.data)->thread == 600;
	}
	print_message("  %s: handler inside the takeover: its write %s (unmapped %llu -> %llu); the "
		      "interrupted write %s; read back %d event(s), %d of them its\n",
		      mode == RINGBUF_CPU_THREAD ? "RINGBUF_CPU_THREAD" : "RINGBUF_CPU_CURRENT",
		      t.nested_ok ? "went in" : "dropped", (unsigned long long)t.unmapped_before,
		      (unsigned long long)t.unmapped_after, w.ok ? "committed" : "failed", n, mine);
	assert_int_equal(t.hits, 1);
	assert_int_equal(t.nested_ok, 0);
	assert_int_equal(t.unmapped_after, t.unmapped_before + 1);
	assert_true(w.ok);
	assert_int_equal(n, 1);
	assert_int_equal(mine, 1);
	assert_int_equal(RINGBUF__LOAD(&ringbuf__cpu(rb, 0)->committing), 0);
	ringbuf_destroy(rb);
}

static void thread_mode_handler_during_a_takeover_is_dropped_not_nested(void **state)
{
	(void)state;
	handler_during_a_takeover(RINGBUF_CPU_THREAD);
}

static void current_mode_handler_during_a_takeover_is_dropped_not_nested(void **state)
{
	(void)state;
	handler_during_a_takeover(RINGBUF_CPU_CURRENT);
}

/* A takeover's repair is published by its last store, committing = 0
 * (release, [REC-M3] in ringbuf.h): a ringbuf_reset_cpu that cuts in before
 * it must find the buffer busy (R4 waits for committing == 0, then gives up
 * with RINGBUF_EBUSY) rather than re-initialise the pages the repair is still
 * writing. Cut in at both steps of the repair's window (RECOVER_COMMIT: slots
 * padded, before the commit walk; RECOVER_DONE: everything but the 0). Before
 * (issue 22 defect 5) the repair stored 0 (relaxed) right after the commit
 * walk: a reset at RECOVER_DONE succeeded and re-initialised the buffer while
 * the repair went on recounting its pages. */
struct rc_ctx {
	struct ringbuf *rb;
	int point, hits, reset_rc;
};

static void *rc_reset_main(void *arg)
{
	struct rc_ctx *t = (struct rc_ctx *)arg;
	t->reset_rc = ringbuf_reset_cpu(t->rb, 0);
	return NULL;
}

static void recover_hook(struct ringbuf *rb, unsigned cpu, int point, void *vctx)
{
	struct rc_ctx *t = (struct rc_ctx *)vctx;
	pthread_t th;
	(void)cpu;
	if (!tk_thread || rb != t->rb || point != t->point || t->hits++)
		return;
	/* another thread: this one holds the buffer in the middle of the repair */
	if (pthread_create(&th, NULL, rc_reset_main, t) == 0)
		pthread_join(th, NULL);
}

static void a_reset_cannot_cut_into_a_takeovers_repair(void **state)
{
	static const int points[] = {RINGBUF__TP_RECOVER_COMMIT, RINGBUF__TP_RECOVER_DONE};
	(void)state;
	for (size_t i = 0; i < sizeof points / sizeof points[0]; i++) {
		struct ringbuf *rb = make_rb(1, 64 << 10, RINGBUF_MODE_OVERWRITE);
		struct tk_dier d = {rb, RINGBUF_CPU_THREAD, 0};
		struct tk_writer w = {rb, RINGBUF_CPU_THREAD, 0};
		struct rc_ctx t = {rb, points[i], 0, 1};
		struct ringbuf_record rec;
		pthread_t th;
		void *res;
		int n = 0, mine = 0;
		assert_int_equal(pthread_create(&th, NULL, tk_dier_main, &d), 0);
		assert_int_equal(pthread_join(th, &res), 0);
		assert_non_null(res);
		wait_tid_gone(d.tid);
		ringbuf__set_testpoint_hook(recover_hook, &t);
		assert_int_equal(pthread_create(&th, NULL, tk_writer_main, &w), 0);
		assert_int_equal(pthread_join(th, NULL), 0);
		ringbuf__set_testpoint_hook(NULL, NULL);
		while (ringbuf_consume(rb, 0, &rec) == 1) {
			n++;
			mine += ((const struct ev *)rec.data)->thread == 600;
		}
		print_message("  reset cut into the repair at %s: %s; read back %d event(s), %d of them the "
			      "taker's\n",
			      points[i] == RINGBUF__TP_RECOVER_DONE ? "RECOVER_DONE" : "RECOVER_COMMIT",
			      ringbuf_strerror(t.reset_rc), n, mine);
		assert_int_equal(t.hits, 1);
		assert_int_equal(t.reset_rc, RINGBUF_EBUSY);
		assert_true(w.ok);
		assert_int_equal(n, 1); /* the dead writer's half event padded, the taker's kept */
		assert_int_equal(mine, 1);
		assert_int_equal(RINGBUF__LOAD(&ringbuf__cpu(rb, 0)->committing), 0);
		ringbuf_destroy(rb);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(drops_beyond_the_buffer_count_pay_kill_per_scan_not_per_event),
		cmocka_unit_test(current_mode_drops_pay_kill_per_scan_not_per_event),
		cmocka_unit_test(a_released_claim_is_claimed_at_the_next_event),
		cmocka_unit_test(a_dead_holders_claim_is_taken_over_within_the_rescan_bound),
		cmocka_unit_test(thread_shared_rejects_more_than_ncpu),
		cmocka_unit_test(beyond_count_threads_write_to_the_shared_buffer_instead_of_dropping),
		cmocka_unit_test(concurrent_shared_writers_balance_exactly),
		cmocka_unit_test(handlers_nest_in_a_shared_event_and_never_claim_during_the_take),
		cmocka_unit_test(signal_handlers_nest_in_shared_events),
		cmocka_unit_test(thread_mode_handler_during_a_takeover_is_dropped_not_nested),
		cmocka_unit_test(current_mode_handler_during_a_takeover_is_dropped_not_nested),
		cmocka_unit_test(a_reset_cannot_cut_into_a_takeovers_repair),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
