/* RINGBUF_CPU_CURRENT's claim by restartable sequence (RSEQ in >>contexts of
 * ringbuf.h): the sequence S1-S5 on the thread's CPU, the gate GT1-GT4 for
 * every other taker of the same word. What can break it, and the shape that
 * breaks it:
 *
 *   (1) which blocks claim by sequence: ringbuf_create's (private memory),
 *       not RINGBUF_F_NO_RSEQ, ringbuf_init_in (caller memory, maybe shared
 *       with another process), ringbuf_create_shm (other processes' writers
 *       are beyond a membarrier of ours);
 *   (2) a sequence and a gated CAS racing for one word from two CPUs: one
 *       buffer (word 0), writers pinned to CPU 0 take it by sequence, writers
 *       pinned to CPU 1 (no buffer of their own: 1 >= ncpu) through the gate,
 *       the gate re-opened every 4 takes (RINGBUF__GATE_USES) so that
 *       sequences and fences alternate all the time. One writer in the buffer
 *       at a time (an `inside` probe between reserve and commit), every event
 *       committed or counted in `unmapped`, every committed event read back
 *       once and whole. With the gate taken out (tests/mutants/no_gate.patch
 *       applied to a copy of ringbuf.h: mkdir -p /tmp/m && cp ringbuf.h /tmp/m
 *       && (cd /tmp/m && patch -p1 < $OLDPWD/tests/mutants/no_gate.patch),
 *       then build this test with -I/tmp/m first: the plain CAS against the
 *       sequence's plain store) the probe finds two owners (the test bites;
 *       not part of make test);
 *   (3) signals and migrations inside the sequence: a writer moved between
 *       the CPUs every 64 events and interrupted by a signal storm whose
 *       handler writes a nested event (it restarts any sequence it lands in,
 *       or nests in the held buffer): exact accounting, each handler event
 *       inside an outer one or alone, payloads whole;
 *   (4) another thread cut in at each gate window (test points GATE_ENTERED:
 *       in flight, not fenced, word not taken; GATE_TAKEN: word taken, gate
 *       not left) of a taker parked there: a writer on the word's CPU never
 *       shares the word, the parked taker gets it or moves on, and a nested
 *       writer of the parked thread itself takes the word through the gate
 *       and gives it back before the outer take resumes.
 *   (5) ringbuf_thread_shared's buffers: their gates pinned (FENCED |
 *       PINNED for good), taken per event by CAS past the gate by the
 *       per-thread writers beyond the claim and by per-CPU writers;
 *   (6) every sequence restarted: the trap flag raises SIGTRAP after each
 *       instruction, so each outer take comes through the gate, and the
 *       handler nests an event after a different instruction of each outer
 *       write (with a wrong signature the kernel kills the process).
 * (1) also checks that the code's decision matches the machine's
 * (glibc >= 2.35's __rseq_size, the membarrier QUERY), so that a claim that
 * silently stopped working fails here instead of skipping the rest.
 * Needs x86-64, glibc's rseq registration and the RSEQ membarrier: skipped
 * without them (qemu-user, ThreadSanitizer, other machines), as is (2)-(5)
 * with fewer than 2 CPUs. */
#define _GNU_SOURCE 1
#ifndef RINGBUF__GATE_USES
#define RINGBUF__GATE_USES 4u
#endif
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cmocka.h>

#include "sigutil.h"

/* LDFLAGS: -lpthread */

struct ev {
	uint32_t who;  /* writer index (+ 100 for a signal handler's event) */
	uint32_t seq;  /* per writer */
	uint32_t sum;  /* who * 2654435761 ^ seq: a torn event does not match */
	uint32_t pad;
};

static uint32_t ev_sum(uint32_t who, uint32_t seq)
{
	return who * 2654435761u ^ seq;
}

/* Should ringbuf_create's blocks claim by sequence here? Decided from the
 * machine, not from the code under test: x86-64, glibc >= 2.35 with its rseq
 * registration (__rseq_size), the RSEQ membarrier, not TSan (it cannot see
 * the sequence), not RINGBUF_PORTABLE, not switched off for the second run
 * of make test. */
static bool rseq_expected(void)
{
#if defined(__x86_64__) && defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 35) && !UNDER_TSAN && \
	!defined(RINGBUF_PORTABLE) && (__GNUC__ >= 11 || defined(__clang__))
	long q = syscall(SYS_membarrier, 0, 0, 0);
	const char *off = getenv("RINGBUF_TEST_NO_RSEQ");
	extern const unsigned int __rseq_size __attribute__((weak));
	return &__rseq_size && __rseq_size >= 8 && q > 0 && (q & 128) && (q & 256) && !(off && *off == '1');
#else
	return false;
#endif
}

static bool rseq_here(void)
{
	uint64_t c[4];
	struct ringbuf *rb;
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	bool ok;
	if (ringbuf_create(&cfg, &rb) != 0)
		return false;
	ringbuf__test_rseq_counts(rb, c);
	ok = c[3] != 0;
	ringbuf_destroy(rb);
	return ok;
}

static bool two_cpus(void)
{
	cpu_set_t s;
	return sched_getaffinity(0, sizeof s, &s) == 0 && CPU_ISSET(0, &s) && CPU_ISSET(1, &s);
}

static void pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	assert_int_equal(sched_setaffinity(0, sizeof s, &s), 0);
}

static uint64_t committed_all(struct ringbuf *rb)
{
	struct ringbuf_stats st;
	uint64_t n = 0;
	unsigned c;
	for (c = 0; c < ringbuf_ncpu(rb); c++) {
		assert_int_equal(ringbuf_stats_cpu(rb, c, &st), 0);
		n += st.committed;
	}
	return n;
}

static uint64_t unmapped(struct ringbuf *rb)
{
	struct ringbuf_stats st = {0};
	assert_int_equal(ringbuf_stats(rb, &st), 0);
	return st.unmapped;
}

/* Reads every CPU buffer out; per writer `who`, the events must come with
 * strictly increasing seq (the writer's order), whole. Returns the count;
 * *nested counts handler events. */
#define MAXW 8
static uint64_t read_back(struct ringbuf *rb, uint64_t *handler_events)
{
	struct ringbuf_record rec;
	uint64_t n = 0;
	unsigned c;
	*handler_events = 0;
	for (c = 0; c < ringbuf_ncpu(rb); c++) {
		int64_t last[2 * MAXW + 200];
		memset(last, -1, sizeof last);
		while (ringbuf_consume(rb, c, &rec) == 1) {
			const struct ev *e = (const struct ev *)rec.data;
			assert_int_equal(rec.len, sizeof *e);
			assert_int_equal(rec.lost, 0);
			assert_int_equal(e->sum, ev_sum(e->who, e->seq));
			assert_true(e->who < 2 * MAXW + 200);
			assert_true((int64_t)e->seq > last[e->who]);
			last[e->who] = e->seq;
			if (e->who >= 100)
				(*handler_events)++;
			n++;
		}
	}
	return n;
}

/* A fresh producer/consumer block in g_rb (size_per_cpu 0: the default),
 * the test's counters zeroed, and handler h installed for sig (0: none). */
static void new_rb(unsigned ncpu, size_t size_per_cpu, int sig, void (*h)(int));

/* -- (1) which blocks claim by sequence -- */
static void only_private_blocks_claim_by_sequence(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	uint64_t c[4];
	size_t need = 0;
	void *mem;
	char path[64];
	(void)state;
	/* the code agrees with the machine (a claim that silently stopped
	 * working would skip the other tests: this one fails instead) */
	assert_int_equal(rseq_here(), rseq_expected());
	if (!rseq_here())
		skip();
	cfg.ncpu = 2;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	ringbuf__test_rseq_counts(rb, c);
	assert_int_equal(c[3], 1);
	ringbuf_destroy(rb);
	cfg.flags = RINGBUF_F_NO_RSEQ;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	ringbuf__test_rseq_counts(rb, c);
	assert_int_equal(c[3], 0);
	ringbuf_destroy(rb);
	cfg.flags = 0;
	assert_int_equal(ringbuf_size_needed(&cfg, &need), 0);
	assert_int_equal(posix_memalign(&mem, 4096, need), 0);
	assert_int_equal(ringbuf_init_in(mem, need, &cfg, &rb), 0);
	ringbuf__test_rseq_counts(rb, c);
	assert_int_equal(c[3], 0);
	ringbuf_destroy(rb);
	free(mem);
	snprintf(path, sizeof path, "/ringbuf-rseq-test-%d", (int)getpid());
	assert_int_equal(ringbuf_create_shm(path, &cfg, &rb), 0);
	ringbuf__test_rseq_counts(rb, c);
	assert_int_equal(c[3], 0);
	ringbuf_destroy(rb);
	/* a file block opened RDWR: the flag is this process's, never the
	 * file's bytes (a file whose header says "rseq" must not make the
	 * opener claim a block that other processes write by plain store) */
	{
		struct ringbuf *w = NULL, *o = NULL;
		char fpath[96];
		uint32_t one = 1;
		FILE *f;
		snprintf(fpath, sizeof fpath, "/tmp/ringbuf-rseq-test-%d.rb", (int)getpid());
		assert_int_equal(ringbuf_create_file(fpath, &cfg, &w), 0);
		ringbuf__test_rseq_counts(w, c);
		assert_int_equal(c[3], 0);
		f = fopen(fpath, "r+b");
		assert_non_null(f);
		assert_int_equal(fseek(f, (long)offsetof(struct ringbuf, rseq), SEEK_SET), 0);
		assert_int_equal(fwrite(&one, sizeof one, 1, f), 1);
		fclose(f);
		assert_int_equal(ringbuf_open_file(fpath, RINGBUF_OPEN_RDWR, &o), 0);
		ringbuf__test_rseq_counts(o, c);
		assert_int_equal(c[3], 0);
		ringbuf_destroy(o);
		ringbuf_destroy(w);
		unlink(fpath);
	}
	/* an unknown flag is still refused */
	cfg.flags = 1u << 7;
	assert_int_equal(ringbuf_create(&cfg, &rb), RINGBUF_EINVAL);
}

/* -- (2) sequence against gated CAS on one word -- */
#define RACE_EVENTS 75000u
static struct ringbuf *g_rb;
static _Atomic(int) g_inside, g_overlap, g_go;

/* a writer thread's start: on its CPU, then held until g_go */
static void pin_and_wait(int cpu)
{
	pin(cpu);
	while (!atomic_load(&g_go))
		;
}
static _Atomic(uint64_t) g_written, g_refused;

struct wargs {
	int cpu;      /* pinned there; -1: moves between 0 and 1 */
	uint32_t who;
	uint32_t n;
	uint32_t done;
};
static uint64_t g_gated0; /* the gate's count of takes before the test */
static _Atomic(int) g_cap_hit;

static bool write_one(uint32_t who, uint32_t seq)
{
	struct ev *e = (struct ev *)ringbuf_reserve(g_rb, RINGBUF_CPU_CURRENT, sizeof *e);
	if (!e) {
		atomic_fetch_add(&g_refused, 1);
		return false;
	}
	if (atomic_fetch_add(&g_inside, 1) != 0)
		atomic_store(&g_overlap, 1);
	e->who = who;
	e->seq = seq;
	e->sum = ev_sum(who, seq);
	e->pad = 0;
	atomic_fetch_sub(&g_inside, 1);
	ringbuf_commit(g_rb, RINGBUF_CPU_CURRENT, e);
	atomic_fetch_add(&g_written, 1);
	return true;
}

/* Words taken by sequence so far (inline or out of line): every write
 * succeeded with one take, and the gate counts its own. */
static uint64_t seq_taken(void)
{
	uint64_t c[4];
	ringbuf__test_rseq_counts(g_rb, c);
	return atomic_load(&g_written) - (c[2] - g_gated0);
}

/* Writes until a->n of its events are in (a writer whose word is held by a
 * preempted one only drops meanwhile: counted, not timed) and until the
 * sequences took the word 1,000 times; a->done attempts. At most 2 * a->n
 * events each (the buffer holds them all). */
static void *race_until(void *arg)
{
	struct wargs *a = (struct wargs *)arg;
	uint32_t ok = 0, seq = 0;
	pin_and_wait(a->cpu);
	while (ok < a->n || (seq % 256 == 0 && seq_taken() < 1000)) {
		if (ok >= 2 * a->n) {
			atomic_store(&g_cap_hit, 1);
			break;
		}
		ok += write_one(a->who, seq++);
	}
	a->done = seq;
	return NULL;
}

static void *race_writer(void *arg)
{
	struct wargs *a = (struct wargs *)arg;
	uint32_t i;
	pin_and_wait(a->cpu);
	for (i = 0; i < a->n; i++)
		write_one(a->who, i);
	return NULL;
}

static void sequence_and_gated_cas_never_both_own_the_word(void **state)
{
	pthread_t th[4];
	struct wargs a[4];
	uint64_t c0[4], c1[4], handler_events, got;
	int i;
	(void)state;
	if (!rseq_here() || !two_cpus())
		skip();
	/* one word: CPU 0 by sequence, CPU 1 through the gate */
	new_rb(1, (size_t)8 * RACE_EVENTS * 32 + (1 << 20), 0, NULL);
	ringbuf__test_rseq_counts(g_rb, c0);
	g_gated0 = c0[2];
	for (i = 0; i < 4; i++) {
		a[i].cpu = i & 1;
		a[i].who = (uint32_t)i;
		a[i].n = RACE_EVENTS;
		assert_int_equal(pthread_create(&th[i], NULL, race_until, &a[i]), 0);
	}
	atomic_store(&g_go, 1);
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	ringbuf__test_rseq_counts(g_rb, c1);
	printf("race: %llu written, %llu refused (unmapped %llu); fences %llu, words taken through the "
	       "gate %llu, out of line by sequence %llu\n",
	       (unsigned long long)atomic_load(&g_written), (unsigned long long)atomic_load(&g_refused),
	       (unsigned long long)unmapped(g_rb), (unsigned long long)(c1[0] - c0[0]),
	       (unsigned long long)(c1[2] - c0[2]), (unsigned long long)(c1[1] - c0[1]));
	assert_int_equal(atomic_load(&g_overlap), 0);
	assert_int_equal(atomic_load(&g_cap_hit), 0);
	/* every write committed or counted; nothing dropped for space */
	assert_int_equal(atomic_load(&g_written) + atomic_load(&g_refused),
			 (uint64_t)a[0].done + a[1].done + a[2].done + a[3].done);
	assert_int_equal(unmapped(g_rb), atomic_load(&g_refused));
	assert_int_equal(committed_all(g_rb), atomic_load(&g_written));
	got = read_back(g_rb, &handler_events);
	assert_int_equal(got, atomic_load(&g_written));
	/* both kinds of take happened: the CPU 1 writers' events all came
	 * through the gate (fenced at least once), the sequences took the word
	 * 1,000 times or more */
	assert_true(c1[2] - c0[2] >= 2ull * RACE_EVENTS);
	assert_true(c1[0] - c0[0] >= 1);
	assert_true(atomic_load(&g_written) - (c1[2] - c0[2]) >= 1000);
	ringbuf_destroy(g_rb);
}

/* -- (3) signals and migrations inside the sequence -- */
#define SIG_EVENTS 200000u
static _Atomic(uint32_t) g_hseq;
static _Atomic(uint64_t) g_hwritten, g_hrefused;
static pthread_t g_victim;
static _Atomic(int) g_stop;

static void handler(int sig)
{
	uint32_t s = atomic_fetch_add(&g_hseq, 1);
	struct ev *e;
	(void)sig;
	e = (struct ev *)ringbuf_reserve(g_rb, RINGBUF_CPU_CURRENT, sizeof *e);
	if (!e) {
		atomic_fetch_add(&g_hrefused, 1);
		return;
	}
	e->who = 100;
	e->seq = s;
	e->sum = ev_sum(100, s);
	e->pad = 0;
	ringbuf_commit(g_rb, RINGBUF_CPU_CURRENT, e);
	atomic_fetch_add(&g_hwritten, 1);
}

/* at most SIG_HCAP handler events: the buffer holds every event (a slow
 * victim, under ASan, got 1.1 M handler events and a full buffer's drops) */
#define SIG_HCAP 100000u
static void *signaller(void *arg)
{
	(void)arg;
	while (!atomic_load(&g_stop) && atomic_load(&g_hwritten) + atomic_load(&g_hrefused) < SIG_HCAP) {
		pthread_kill(g_victim, SIGUSR1);
		for (volatile int k = 0; k < 200; k++)
			;
	}
	return NULL;
}

static uint32_t g_victim_events;

/* at least a->n events, and on until 2,000 handler events landed, at most
 * 4 * a->n (counted, not timed: a busy machine only makes it longer) */
static void *mover(void *arg)
{
	struct wargs *a = (struct wargs *)arg;
	uint32_t i;
	for (i = 0; i < a->n || (atomic_load(&g_hwritten) + atomic_load(&g_hrefused) < 2000 && i < 4 * a->n); i++) {
		if (i % 64 == 0)
			pin((int)((i / 64) & 1));
		write_one(a->who, i);
	}
	g_victim_events = i;
	atomic_store(&g_stop, 1); /* the signaller stops before we are joined */
	return NULL;
}

static void signals_and_migrations_inside_the_sequence(void **state)
{
	pthread_t sig_th, other;
	struct wargs a = { -1, 1, SIG_EVENTS, 0 }, b = { 0, 2, SIG_EVENTS, 0 };
	uint64_t handler_events, got;
	(void)state;
	if (!rseq_here() || !two_cpus())
		skip();
	/* room for all: the victim's <= 4 * SIG_EVENTS, the other's SIG_EVENTS,
	 * the handlers' <= SIG_HCAP (+ the few sent before the cap was seen) */
	new_rb(2, (size_t)(5 * SIG_EVENTS + 2 * SIG_HCAP) * 32 + (1 << 20), SIGUSR1, handler);
	atomic_store(&g_go, 1);
	/* the victim moves between the CPUs, a second writer stays on CPU 0 */
	assert_int_equal(pthread_create(&g_victim, NULL, mover, &a), 0);
	assert_int_equal(pthread_create(&other, NULL, race_writer, &b), 0);
	assert_int_equal(pthread_create(&sig_th, NULL, signaller, NULL), 0);
	pthread_join(sig_th, NULL);
	pthread_join(g_victim, NULL);
	pthread_join(other, NULL);
	signal(SIGUSR1, SIG_IGN);
	printf("signals: %llu written, %llu refused; handlers %llu written, %llu refused\n",
	       (unsigned long long)atomic_load(&g_written), (unsigned long long)atomic_load(&g_refused),
	       (unsigned long long)atomic_load(&g_hwritten), (unsigned long long)atomic_load(&g_hrefused));
	assert_int_equal(atomic_load(&g_written) + atomic_load(&g_refused), (uint64_t)g_victim_events + SIG_EVENTS);
	assert_int_equal(unmapped(g_rb), atomic_load(&g_refused) + atomic_load(&g_hrefused));
	assert_int_equal(committed_all(g_rb), atomic_load(&g_written) + atomic_load(&g_hwritten));
	got = read_back(g_rb, &handler_events);
	assert_int_equal(got, atomic_load(&g_written) + atomic_load(&g_hwritten));
	assert_int_equal(handler_events, atomic_load(&g_hwritten));
	assert_true(atomic_load(&g_hwritten) + atomic_load(&g_hrefused) >= 2000); /* the storm landed */
	ringbuf_destroy(g_rb);
}

/* -- (4) cut in at each gate window -- */
enum cut { CUT_OTHER, CUT_NESTED };
struct gate_run {
	int point;
	enum cut act;
	_Atomic(int) armed, hits, parked, release;
	uint32_t gate_seen;    /* the gate word at the point */
	int other_ok;          /* the other thread's event was written */
	unsigned other_buffer; /* ... to this buffer */
	int nested_ok;
	unsigned nested_buffer;
};
static struct gate_run *g_run;

/* One RINGBUF_CPU_CURRENT event of `who` (seq 0); *buffer: the buffer it
 * went to, read while the event is held. Returns whether it was written. */
static bool write_marked(struct ringbuf *rb, uint32_t who, unsigned *buffer)
{
	struct ev *e = (struct ev *)ringbuf_reserve(rb, RINGBUF_CPU_CURRENT, sizeof *e);
	if (!e)
		return false;
	*buffer = (unsigned)ringbuf_thread_cpu(rb);
	e->who = who;
	e->seq = 0;
	e->sum = ev_sum(who, 0);
	e->pad = 0;
	ringbuf_commit(rb, RINGBUF_CPU_CURRENT, e);
	return true;
}

static void *other_on_cpu0(void *arg)
{
	struct gate_run *r = (struct gate_run *)arg;
	pin(0);
	r->other_ok = write_marked(g_rb, 3, &r->other_buffer);
	return NULL;
}

static void gate_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	struct gate_run *r = (struct gate_run *)ctx;
	(void)cpu;
	if (rb != g_rb || point != r->point || !atomic_exchange(&r->armed, 0))
		return;
	atomic_fetch_add(&r->hits, 1);
	r->gate_seen = atomic_load(&ringbuf__cpu(rb, 0)->rseq_gate);
	if (r->act == CUT_OTHER) {
		/* another thread on the word's CPU writes while we are parked */
		pthread_t th;
		assert_int_equal(pthread_create(&th, NULL, other_on_cpu0, r), 0);
		pthread_join(th, NULL);
	} else {
		/* a handler of ours: its event takes a word through the gate
		 * too (nested in our take), and gives it back */
		r->nested_ok = write_marked(rb, 102, &r->nested_buffer);
	}
}

static void *gated_writer(void *arg)
{
	(void)arg;
	pin(1); /* 1 >= ncpu: its takes go through the gate of word 0 */
	write_one(1, 0);
	return NULL;
}

static void cut_in_at_each_gate_window(void **state)
{
	static const int points[2] = { RINGBUF__TP_GATE_ENTERED, RINGBUF__TP_GATE_TAKEN };
	int pi, act;
	(void)state;
	if (!rseq_here() || !two_cpus())
		skip();
	for (pi = 0; pi < 2; pi++)
		for (act = CUT_OTHER; act <= CUT_NESTED; act++) {
			struct gate_run r;
			pthread_t th;
			uint64_t he, got;
			memset(&r, 0, sizeof r);
			r.point = points[pi];
			r.act = (enum cut)act;
			atomic_store(&r.armed, 1);
			new_rb(1, 0, 0, NULL);
			g_run = &r;
			ringbuf__set_testpoint_hook(gate_hook, &r);
			assert_int_equal(pthread_create(&th, NULL, gated_writer, NULL), 0);
			pthread_join(th, NULL);
			ringbuf__set_testpoint_hook(NULL, NULL);
			assert_int_equal(atomic_load(&r.hits), 1);
			/* the gate is up at both points (we are in flight) */
			assert_true((r.gate_seen & 0xffffu) >= 1);
			assert_int_equal(atomic_load(&g_overlap), 0);
			got = read_back(g_rb, &he);
			if (act == CUT_OTHER) {
				/* at ENTERED the word is free: the other thread
				 * (on CPU 0, its sequence refused by the gate)
				 * takes it through the gate and gives it back; at
				 * TAKEN it is ours: the other drops, counted */
				if (pi == 0) {
					assert_true(r.other_ok);
					assert_int_equal(r.other_buffer, 0);
				} else {
					assert_false(r.other_ok);
				}
				assert_int_equal(got, atomic_load(&g_written) + (r.other_ok ? 1 : 0));
				assert_int_equal(unmapped(g_rb), atomic_load(&g_refused) + (r.other_ok ? 0 : 1));
			} else {
				/* at ENTERED our handler takes the free word and
				 * gives it back before our CAS; at TAKEN the word is
				 * ours and the handler nests in our take (found
				 * ours: took = false), then its event is written in
				 * the same buffer */
				assert_true(r.nested_ok);
				assert_int_equal(r.nested_buffer, 0);
				assert_int_equal(he, 1);
				assert_int_equal(got, atomic_load(&g_written) + 1);
			}
			/* the parked writer's own event: written (never lost) */
			assert_int_equal(atomic_load(&g_written), 1);
			assert_int_equal(atomic_load(&ringbuf__cpu(g_rb, 0)->owner), 0);
			assert_int_equal(atomic_load(&ringbuf__cpu(g_rb, 0)->rseq_gate) & 0xffffu, 0);
			ringbuf_destroy(g_rb);
		}
}

/* -- (5) ringbuf_thread_shared's buffers: pinned gates -- */
#define PIN_EVENTS 40000u
static _Atomic(int) g_inside_b[2];

static bool write_mode(unsigned mode, uint32_t who, uint32_t seq)
{
	struct ev *e = (struct ev *)ringbuf_reserve(g_rb, mode, sizeof *e);
	int b;
	if (!e) {
		atomic_fetch_add(&g_refused, 1);
		return false;
	}
	b = ringbuf_thread_cpu(g_rb);
	if (b < 0 || b > 1 || atomic_fetch_add(&g_inside_b[b], 1) != 0)
		atomic_store(&g_overlap, 1);
	e->who = who;
	e->seq = seq;
	e->sum = ev_sum(who, seq);
	e->pad = 0;
	if (b >= 0 && b <= 1)
		atomic_fetch_sub(&g_inside_b[b], 1);
	ringbuf_commit(g_rb, mode, e);
	atomic_fetch_add(&g_written, 1);
	return true;
}

struct pargs {
	int cpu;
	unsigned mode;
	uint32_t who;
	uint32_t done;
};

static void *pin_writer(void *arg)
{
	struct pargs *a = (struct pargs *)arg;
	uint32_t i;
	pin_and_wait(a->cpu);
	for (i = 0; i < PIN_EVENTS; i++)
		write_mode(a->mode, a->who, i);
	a->done = i;
	return NULL;
}

/* Two buffers, the second kept for sharing (ringbuf_thread_shared(rb, 1)):
 * its gate is pinned (FENCED | PINNED, for good), so the RINGBUF_CPU_THREAD
 * writers beyond the one claim take it per event by CAS without entering
 * the gate; RINGBUF_CPU_CURRENT writers on CPU 1 find their sequence refused
 * and take it by CAS too, and those on CPU 0 (word 0 claimed for good by the
 * first RINGBUF_CPU_THREAD writer) come through the same way. One writer per
 * buffer at a time, exact accounting, every event back. */
static void shared_buffers_are_pinned_and_taken_by_cas(void **state)
{
	struct pargs a[6];
	pthread_t th[6];
	uint64_t he, got, p0, done = 0;
	uint32_t g1;
	int i;
	(void)state;
	if (!rseq_here() || !two_cpus())
		skip();
	new_rb(2, (size_t)6 * PIN_EVENTS * 32 + (1 << 20), 0, NULL);
	assert_int_equal(ringbuf_thread_shared(g_rb, 1), 0);
	g1 = atomic_load(&ringbuf__cpu(g_rb, 1)->rseq_gate);
	assert_int_equal(g1 & (RINGBUF__GATE_PINNED | RINGBUF__GATE_FENCED),
			 RINGBUF__GATE_PINNED | RINGBUF__GATE_FENCED);
	assert_int_equal(g1 & 0xffffu, 0);
	assert_int_equal(atomic_load(&ringbuf__cpu(g_rb, 0)->rseq_gate) & RINGBUF__GATE_PINNED, 0);
	p0 = ringbuf__test_pinned_count();
	for (i = 0; i < 6; i++) {
		a[i].cpu = i & 1;
		a[i].mode = i < 4 ? RINGBUF_CPU_THREAD : RINGBUF_CPU_CURRENT;
		a[i].who = (uint32_t)i;
		assert_int_equal(pthread_create(&th[i], NULL, pin_writer, &a[i]), 0);
	}
	atomic_store(&g_go, 1);
	for (i = 0; i < 6; i++) {
		pthread_join(th[i], NULL);
		done += a[i].done;
	}
	printf("pinned: %llu written, %llu refused, %llu taken past the pinned gate\n",
	       (unsigned long long)atomic_load(&g_written), (unsigned long long)atomic_load(&g_refused),
	       (unsigned long long)(ringbuf__test_pinned_count() - p0));
	assert_int_equal(atomic_load(&g_overlap), 0);
	assert_int_equal(atomic_load(&g_written) + atomic_load(&g_refused), done);
	assert_int_equal(unmapped(g_rb), atomic_load(&g_refused));
	assert_int_equal(committed_all(g_rb), atomic_load(&g_written));
	got = read_back(g_rb, &he);
	assert_int_equal(got, atomic_load(&g_written));
	/* three of the four per-thread writers have no claim: every event they
	 * wrote went to the shared buffer past its pinned gate */
	assert_true(ringbuf__test_pinned_count() - p0 >= 1);
	/* still pinned, nobody in flight */
	g1 = atomic_load(&ringbuf__cpu(g_rb, 1)->rseq_gate);
	assert_int_equal(g1 & (RINGBUF__GATE_PINNED | 0xffffu), RINGBUF__GATE_PINNED);
	ringbuf_destroy(g_rb);
}

/* -- (6) every sequence restarted: a signal after every instruction -- */
#define STEP_EVENTS 40u
static volatile sig_atomic_t g_traps, g_ev_traps, g_nest_at;
static _Atomic(uint64_t) g_step_nested;

static void on_trap(int sig)
{
	(void)sig;
	g_traps++;
	/* the kernel clears the trap flag for the handler: its own event runs
	 * untrapped, nested after instruction g_nest_at of the outer write
	 * (one per outer event, a different instruction each time: a nested
	 * event after every few instructions would keep the outer commit's
	 * walk chasing new events forever, as an interrupt storm would) */
	if (++g_ev_traps == g_nest_at) {
		struct ev *e = (struct ev *)ringbuf_reserve(g_rb, RINGBUF_CPU_CURRENT, sizeof *e);
		if (e) {
			uint32_t s = (uint32_t)atomic_fetch_add(&g_step_nested, 1);
			e->who = 101;
			e->seq = s;
			e->sum = ev_sum(101, s);
			e->pad = 0;
			ringbuf_commit(g_rb, RINGBUF_CPU_CURRENT, e);
		} else {
			atomic_fetch_add(&g_hrefused, 1);
		}
	}
}

static void trap_flag(int on)
{
#if defined(__x86_64__)
	if (on)
		__asm__ __volatile__("pushfq\n\torq $0x100, (%%rsp)\n\tpopfq" ::: "memory", "cc");
	else
		__asm__ __volatile__("pushfq\n\tandq $~0x100, (%%rsp)\n\tpopfq" ::: "memory", "cc");
#else
	(void)on;
#endif
}

/* With the trap flag set the CPU raises SIGTRAP after every instruction, so
 * every sequence is interrupted between S2 and S5 and restarted by the
 * kernel at the abort handler (an rseq_cs it rejected would kill the
 * thread): each outer event must come through the gate, none twice, the
 * handlers' events nested at every instruction of the outer write path,
 * exact accounting. */
static void every_sequence_restarted_by_a_signal_after_each_instruction(void **state)
{
	uint64_t c0[4], c1[4], he, got;
	uint32_t i, ok = 0;
	(void)state;
	if (!rseq_here())
		skip();
	new_rb(2, 0, SIGTRAP, on_trap);
	/* the thread's entry and token first (its first event goes out of
	 * line anyway) */
	assert_true(write_one(1, 0));
	ringbuf__test_rseq_counts(g_rb, c0);
	g_traps = 0;
	for (i = 1; i <= STEP_EVENTS; i++) {
		bool w;
		g_ev_traps = 0;
		g_nest_at = (sig_atomic_t)(1 + 13 * (i - 1)); /* 1 .. 508 */
		trap_flag(1);
		w = write_one(1, i);
		trap_flag(0);
		ok += w;
	}
	signal(SIGTRAP, SIG_DFL);
	ringbuf__test_rseq_counts(g_rb, c1);
	printf("single step: %d traps, %u events, %llu nested, %llu taken through the gate, fences %llu\n",
	       (int)g_traps, ok, (unsigned long long)atomic_load(&g_step_nested),
	       (unsigned long long)(c1[2] - c0[2]), (unsigned long long)(c1[0] - c0[0]));
	assert_int_equal(ok, STEP_EVENTS);
	assert_true(g_traps > 100 * (sig_atomic_t)STEP_EVENTS); /* the flag did trap */
	assert_int_equal(atomic_load(&g_hrefused), 0);
	/* no sequence of the outer writes completed: each took the word through
	 * the gate (the handlers' untrapped events may take it by sequence) */
	assert_true(c1[2] - c0[2] >= STEP_EVENTS);
	assert_int_equal(atomic_load(&g_overlap), 0);
	assert_int_equal(committed_all(g_rb), atomic_load(&g_written) + atomic_load(&g_step_nested));
	got = read_back(g_rb, &he);
	assert_int_equal(got, atomic_load(&g_written) + atomic_load(&g_step_nested));
	assert_int_equal(he, atomic_load(&g_step_nested));
	assert_true(he > 0);
	assert_int_equal(atomic_load(&ringbuf__cpu(g_rb, 0)->owner), 0);
	assert_int_equal(atomic_load(&ringbuf__cpu(g_rb, 1)->owner), 0);
	ringbuf_destroy(g_rb);
}

static void new_rb(unsigned ncpu, size_t size_per_cpu, int sig, void (*h)(int))
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	cfg.ncpu = ncpu;
	if (size_per_cpu)
		cfg.size_per_cpu = size_per_cpu;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
	assert_int_equal(ringbuf_create(&cfg, &g_rb), 0);
	atomic_store(&g_inside, 0);
	atomic_store(&g_inside_b[0], 0);
	atomic_store(&g_inside_b[1], 0);
	atomic_store(&g_overlap, 0);
	atomic_store(&g_go, 0);
	atomic_store(&g_cap_hit, 0);
	atomic_store(&g_written, 0);
	atomic_store(&g_refused, 0);
	atomic_store(&g_hwritten, 0);
	atomic_store(&g_hrefused, 0);
	atomic_store(&g_hseq, 0);
	atomic_store(&g_stop, 0);
	atomic_store(&g_step_nested, 0);
	if (sig) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = h;
		sigemptyset(&sa.sa_mask);
		assert_int_equal(sigaction(sig, &sa, NULL), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(only_private_blocks_claim_by_sequence),
		cmocka_unit_test(sequence_and_gated_cas_never_both_own_the_word),
		cmocka_unit_test(signals_and_migrations_inside_the_sequence),
		cmocka_unit_test(cut_in_at_each_gate_window),
		cmocka_unit_test(shared_buffers_are_pinned_and_taken_by_cas),
		cmocka_unit_test(every_sequence_restarted_by_a_signal_after_each_instruction),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
