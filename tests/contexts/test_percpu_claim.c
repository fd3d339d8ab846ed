/* Per-CPU blocks (RINGBUF_F_CPU_CURRENT; PER-CPU BLOCKS in >>contexts of
 * ringbuf.h): a CPU's buffer is taken from 0 only by a writer on that CPU
 * (by the restartable sequence S1-S5 where the process has one), the
 * shared buffers by CAS, one way per word. What can break it, and the shape
 * that breaks it:
 *
 *   (1) which blocks claim by sequence: ringbuf_create's with
 *       RINGBUF_F_CPU_CURRENT only (not with RINGBUF_F_NO_RSEQ, not an
 *       ordinary block); the flag refused with a clear error and nothing
 *       made by ringbuf_init_in, ringbuf_create_shm and ringbuf_create_file
 *       (memory that other processes may write); a file whose private header
 *       says "rseq" or "per-CPU" does not make its opener claim by sequence;
 *       the shared count fixed (ringbuf_thread_shared refuses to change it);
 *   (2) CPU 0's writers (two threads pinned there) take buffer 0 while
 *       writers on CPU 1 (no buffer of their own: 1 >= ncpu - shared) and
 *       RINGBUF_CPU_THREAD writers take the shared buffer by CAS, and CPU 0's
 *       writers whose buffer is held by the other one (preempted mid-event)
 *       go there too: one writer per buffer at a time (an `inside` probe per
 *       buffer), no event of a CPU 1 or per-thread writer ever in buffer 0,
 *       every event committed or counted in `unmapped`, read back once and
 *       whole. With a CAS taker let onto CPU words
 *       (tests/mutants/cas_on_cpu_words.patch applied to a copy of ringbuf.h:
 *       mkdir -p /tmp/m && cp ringbuf.h /tmp/m && (cd /tmp/m && patch -p1 <
 *       $OLDPWD/tests/mutants/cas_on_cpu_words.patch), then build this test
 *       with -I/tmp/m first) the probe finds two owners or a CPU 1 event in
 *       buffer 0, and the single-step case (5) fails every run (the test
 *       bites; not part of make test);
 *   (3) signals and migrations inside the sequence: a writer moved between
 *       the CPUs every 64 events and interrupted by a signal storm whose
 *       handler writes a nested event (it restarts any sequence it lands in,
 *       or nests in the held buffer): exact accounting, each handler event
 *       inside an outer one or alone, payloads whole;
 *   (4) a dead owner's CPU buffer: a thread that died inside an event on
 *       buffer 0 leaves its word held; CPU 0's next writer goes to the
 *       shared buffer and, at its due scan, takes the word over (a CAS from
 *       the dead word, not from 0), repairs the buffer and gives it back:
 *       the next events of CPU 0 are in buffer 0 again, by sequence;
 *   (4b) fork while a thread holds CPU 0's buffer mid-event: the child's
 *       copy gives it back (no such thread there), the child's CPU 0
 *       writers take it by sequence; the parent's holder commits there;
 *   (4c) a writer of CPU 0 whose buffer is held (alive, or dead inside an
 *       event) takes the shared buffer and scans ([PC-SCAN]): a nested
 *       writer and another thread cut in at PC1 and at PC3 (test points
 *       PERCPU_SCAN, PERCPU_SCANNED): the nested event dropped and counted,
 *       the other thread never waits, a dead owner's buffer taken over and
 *       repaired, every event once;
 *   (5) every sequence restarted: the trap flag raises SIGTRAP after each
 *       instruction, so no sequence of the outer writes completes: each
 *       outer event goes to the shared buffer by CAS, and the handler nests
 *       an event after a different instruction of each outer write (with a
 *       wrong signature the kernel kills the process);
 *   (7) a writer moved to another CPU between its reserve and its commit
 *       (an ordinary block, a per-CPU block by sequence and by CAS, both
 *       ways between CPUs 0 and 1): the event committed in the buffer it
 *       was reserved in, every word given back, the next event in the new
 *       CPU's buffer.
 * (1) also checks that the code's decision matches the machine's (glibc >=
 * 2.35's __rseq_size), so that a claim that silently stopped working fails
 * here instead of skipping the rest. (2)-(4) run with the sequence and with
 * RINGBUF_F_NO_RSEQ (the same rules by CAS, as on other machines). The
 * sequence needs x86-64 and glibc's rseq registration: (5) and the
 * sequence's runs are skipped without them (qemu-user, ThreadSanitizer,
 * other machines), as are (2)-(4) with fewer than 2 CPUs. tests/contexts/
 * test_current_steps.c cuts in at each step G1-G5 of a per-CPU block. */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"
#include "internal.h" /* the implementation's private names (IMPL: shared) */

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
#include <sys/wait.h>
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

/* Should per-CPU blocks claim by sequence here? Decided from the machine,
 * not from the code under test: x86-64, glibc >= 2.35 with its rseq
 * registration (__rseq_size), not TSan (it cannot see the sequence), not
 * RINGBUF_PORTABLE. */
static bool rseq_expected(void)
{
#if defined(__x86_64__) && defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 35) && !UNDER_TSAN && \
	!defined(RINGBUF_PORTABLE) && (__GNUC__ >= 11 || defined(__clang__))
	extern const unsigned int __rseq_size __attribute__((weak));
	return &__rseq_size && __rseq_size >= 8;
#else
	return false;
#endif
}

/* the block kind of the runs of (2)-(4): RINGBUF_F_CPU_CURRENT, with
 * RINGBUF_F_NO_RSEQ or not */
static unsigned g_flags = RINGBUF_F_CPU_CURRENT;

static bool rseq_of(struct ringbuf *rb)
{
	uint64_t c[2];
	ringbuf__test_rseq_counts(rb, c);
	return c[1] != 0;
}

static bool rseq_here(void)
{
	struct ringbuf *rb;
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	bool ok;
	cfg.flags = RINGBUF_F_CPU_CURRENT;
	if (ringbuf_create(&cfg, &rb) != 0)
		return false;
	ok = rseq_of(rb);
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
 * strictly increasing seq (the writer's order), whole; a writer whose bit is
 * set in `not_in0` must have none in buffer 0. Returns the count;
 * *handler_events counts handler events. */
#define MAXW 8
static uint64_t read_back_x(struct ringbuf *rb, uint64_t *handler_events, uint32_t not_in0)
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
			if (c == 0 && e->who < 32 && (not_in0 & (1u << e->who)))
				fail_msg("writer %u (no buffer of its own) wrote to CPU 0's buffer", e->who);
			last[e->who] = e->seq;
			if (e->who >= 100)
				(*handler_events)++;
			n++;
		}
	}
	return n;
}

static uint64_t read_back(struct ringbuf *rb, uint64_t *handler_events)
{
	return read_back_x(rb, handler_events, 0);
}

/* A fresh producer/consumer block of g_flags in g_rb (size_per_cpu 0: the
 * default), `shared` buffers shared, the test's counters zeroed, and
 * handler h installed for sig (0: none). */
static void new_rb(unsigned ncpu, unsigned shared, size_t size_per_cpu, int sig, void (*h)(int));

/* -- (1) which blocks claim by sequence -- */
static void only_per_cpu_blocks_claim_by_sequence(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	size_t need = 0;
	void *mem;
	char path[64], fpath[96];
	(void)state;
	/* the code agrees with the machine (a claim that silently stopped
	 * working would skip the other tests: this one fails instead) */
	assert_int_equal(rseq_here(), rseq_expected());
	cfg.ncpu = 2;
	/* an ordinary block: every word by CAS */
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	assert_false(rseq_of(rb));
	ringbuf_destroy(rb);
	cfg.flags = RINGBUF_F_CPU_CURRENT | RINGBUF_F_NO_RSEQ;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	assert_false(rseq_of(rb));
	ringbuf_destroy(rb);
	cfg.flags = RINGBUF_F_CPU_CURRENT;
	cfg.shared = 1;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	assert_int_equal(rseq_of(rb), rseq_expected());
	/* the shared count is fixed: the same n is fine, another refused */
	assert_int_equal(ringbuf_thread_shared(rb, 1), 0);
	assert_int_equal(ringbuf_thread_shared(rb, 0), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_thread_shared(rb, 2), RINGBUF_EINVAL);
	ringbuf_destroy(rb);
	cfg.shared = 3; /* more than ncpu */
	assert_int_equal(ringbuf_create(&cfg, &rb), RINGBUF_EINVAL);
	cfg.shared = 0;
	/* memory other processes may write: refused, nothing made */
	assert_int_equal(ringbuf_size_needed(&cfg, &need), 0);
	assert_int_equal(posix_memalign(&mem, 4096, need), 0);
	assert_int_equal(ringbuf_init_in(mem, need, &cfg, &rb), RINGBUF_EINVAL);
	free(mem);
	snprintf(path, sizeof path, "/ringbuf-percpu-test-%d", (int)getpid());
	assert_int_equal(ringbuf_create_shm(path, &cfg, &rb), RINGBUF_EINVAL);
	snprintf(fpath, sizeof fpath, "/tmp/ringbuf-percpu-test-%d.rb", (int)getpid());
	unlink(fpath);
	assert_int_equal(ringbuf_create_file(fpath, &cfg, &rb), RINGBUF_EINVAL);
	assert_int_equal(access(fpath, F_OK), -1);
	/* a file block opened RDWR: the kind is this process's, never the
	 * file's bytes (a header that says "rseq" or "per-CPU" must not make
	 * the opener claim a block that other processes write by CAS) */
	{
		struct ringbuf *w = NULL, *o = NULL;
		uint32_t one = 1;
		FILE *f;
		cfg.flags = 0;
		assert_int_equal(ringbuf_create_file(fpath, &cfg, &w), 0);
		assert_false(rseq_of(w));
		f = fopen(fpath, "r+b");
		assert_non_null(f);
		assert_int_equal(fseek(f, (long)offsetof(struct ringbuf, rseq), SEEK_SET), 0);
		assert_int_equal(fwrite(&one, sizeof one, 1, f), 1);
		assert_int_equal(fseek(f, (long)offsetof(struct ringbuf, percpu), SEEK_SET), 0);
		assert_int_equal(fwrite(&one, sizeof one, 1, f), 1);
		fclose(f);
		assert_int_equal(ringbuf_open_file(fpath, RINGBUF_OPEN_RDWR, &o), 0);
		assert_false(rseq_of(o));
		assert_int_equal(o->percpu, 0);
		assert_int_equal(o->cpu_bufs, 2);
		/* an ordinary block's shared count still changes at will */
		assert_int_equal(ringbuf_thread_shared(o, 1), 0);
		assert_int_equal(ringbuf_thread_shared(o, 0), 0);
		ringbuf_destroy(o);
		ringbuf_destroy(w);
		unlink(fpath);
	}
	/* an unknown flag is still refused */
	cfg.flags = 1u << 7;
	assert_int_equal(ringbuf_create(&cfg, &rb), RINGBUF_EINVAL);
}

/* -- (2) CPU writers against shared takes -- */
#define RACE_EVENTS 60000u
static struct ringbuf *g_rb;
static _Atomic(int) g_inside_b[3], g_overlap, g_go;

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
	unsigned mode; /* RINGBUF_CPU_CURRENT (0: the same) or RINGBUF_CPU_THREAD */
};

static bool write_mode(unsigned mode, uint32_t who, uint32_t seq)
{
	struct ev *e = (struct ev *)ringbuf_reserve(g_rb, mode, sizeof *e);
	int b;
	if (!e) {
		atomic_fetch_add(&g_refused, 1);
		return false;
	}
	b = ringbuf_thread_cpu(g_rb);
	if (b < 0 || b > 2 || atomic_fetch_add(&g_inside_b[b], 1) != 0)
		atomic_store(&g_overlap, 1);
	e->who = who;
	e->seq = seq;
	e->sum = ev_sum(who, seq);
	e->pad = 0;
	if (b >= 0 && b <= 2)
		atomic_fetch_sub(&g_inside_b[b], 1);
	ringbuf_commit(g_rb, mode, e);
	atomic_fetch_add(&g_written, 1);
	return true;
}

static bool write_one(uint32_t who, uint32_t seq)
{
	return write_mode(RINGBUF_CPU_CURRENT, who, seq);
}

static void *race_writer(void *arg)
{
	struct wargs *a = (struct wargs *)arg;
	uint32_t i;
	pin_and_wait(a->cpu);
	for (i = 0; i < a->n; i++)
		write_mode(a->mode ? a->mode : RINGBUF_CPU_CURRENT, a->who, i);
	a->done = i;
	return NULL;
}

/* Two buffers: buffer 0 is CPU 0's, buffer 1 shared (cfg.shared = 1).
 * Writers 0 and 2 on CPU 0 (RINGBUF_CPU_CURRENT), 1 and 3 on CPU 1 (no
 * buffer of their own), 4 and 5 RINGBUF_CPU_THREAD on CPU 1 and 0. */
static void run_race(void)
{
	pthread_t th[6];
	struct wargs a[6];
	uint64_t handler_events, got, done = 0, in0, seq0 = 0, c[2];
	struct ringbuf_stats st;
	int i;
	new_rb(2, 1, (size_t)8 * RACE_EVENTS * 32 + (1 << 20), 0, NULL);
	ringbuf__test_rseq_counts(g_rb, c);
	seq0 = c[0];
	for (i = 0; i < 6; i++) {
		a[i].cpu = i == 5 ? 0 : i & 1;
		a[i].who = (uint32_t)i;
		a[i].n = RACE_EVENTS;
		a[i].mode = i >= 4 ? RINGBUF_CPU_THREAD : RINGBUF_CPU_CURRENT;
		assert_int_equal(pthread_create(&th[i], NULL, race_writer, &a[i]), 0);
	}
	atomic_store(&g_go, 1);
	for (i = 0; i < 6; i++) {
		pthread_join(th[i], NULL);
		done += a[i].done;
	}
	assert_int_equal(ringbuf_stats_cpu(g_rb, 0, &st), 0);
	in0 = st.committed;
	ringbuf__test_rseq_counts(g_rb, c);
	printf("race (%s): %llu writes: %llu written, %llu refused (unmapped %llu); %llu in CPU 0's buffer, %llu "
	       "words taken by sequence out of line\n",
	       rseq_of(g_rb) ? "sequence" : "CAS", (unsigned long long)done, (unsigned long long)atomic_load(&g_written),
	       (unsigned long long)atomic_load(&g_refused), (unsigned long long)unmapped(g_rb),
	       (unsigned long long)in0, (unsigned long long)(c[0] - seq0));
	assert_int_equal(atomic_load(&g_overlap), 0);
	/* every write committed or counted; nothing dropped for space */
	assert_int_equal(unmapped(g_rb), atomic_load(&g_refused));
	assert_int_equal(committed_all(g_rb), atomic_load(&g_written));
	/* writers 1, 3 (CPU 1) and 4, 5 (per thread) never in buffer 0 */
	got = read_back_x(g_rb, &handler_events, (1u << 1) | (1u << 3) | (1u << 4) | (1u << 5));
	assert_int_equal(got, atomic_load(&g_written));
	/* CPU 0's writers took their buffer (how often depends on preemption
	 * mid-event, which sends the other one to the shared buffer: at least
	 * once, not a count) */
	assert_true(in0 >= 1);
	ringbuf_destroy(g_rb);
}

static void cpu_writers_and_shared_takes_never_both_own_a_word(void **state)
{
	(void)state;
	if (!two_cpus())
		skip();
	g_flags = RINGBUF_F_CPU_CURRENT | RINGBUF_F_NO_RSEQ;
	run_race();
	g_flags = RINGBUF_F_CPU_CURRENT;
	if (rseq_here())
		run_race();
	else
		print_message("no restartable sequence here: the CAS run only\n");
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

/* shared 0: two CPU buffers; 1: a third, shared, for a writer whose CPU's
 * buffer is held (and its due scans, [PC-SCAN], which the handlers cut
 * into) */
static void run_signals(unsigned shared)
{
	pthread_t sig_th, other;
	struct wargs a = { -1, 1, SIG_EVENTS, 0, 0 }, b = { 0, 2, SIG_EVENTS, 0, 0 };
	uint64_t handler_events, got;
	g_flags = RINGBUF_F_CPU_CURRENT;
	/* room for all: the victim's <= 4 * SIG_EVENTS, the other's SIG_EVENTS,
	 * the handlers' <= SIG_HCAP (+ the few sent before the cap was seen) */
	new_rb(2 + shared, shared, (size_t)(5 * SIG_EVENTS + 2 * SIG_HCAP) * 32 + (1 << 20), SIGUSR1, handler);
	atomic_store(&g_hseq, 0);
	atomic_store(&g_go, 1);
	/* the victim moves between the CPUs, a second writer stays on CPU 0 */
	assert_int_equal(pthread_create(&g_victim, NULL, mover, &a), 0);
	assert_int_equal(pthread_create(&other, NULL, race_writer, &b), 0);
	assert_int_equal(pthread_create(&sig_th, NULL, signaller, NULL), 0);
	pthread_join(sig_th, NULL);
	pthread_join(g_victim, NULL);
	pthread_join(other, NULL);
	signal(SIGUSR1, SIG_IGN);
	printf("signals (%u shared): %llu written, %llu refused; handlers %llu written, %llu refused\n", shared,
	       (unsigned long long)atomic_load(&g_written), (unsigned long long)atomic_load(&g_refused),
	       (unsigned long long)atomic_load(&g_hwritten), (unsigned long long)atomic_load(&g_hrefused));
	assert_int_equal(unmapped(g_rb), atomic_load(&g_refused) + atomic_load(&g_hrefused));
	assert_int_equal(committed_all(g_rb), atomic_load(&g_written) + atomic_load(&g_hwritten));
	got = read_back(g_rb, &handler_events);
	assert_int_equal(got, atomic_load(&g_written) + atomic_load(&g_hwritten));
	assert_int_equal(handler_events, atomic_load(&g_hwritten));
	assert_true(atomic_load(&g_hwritten) + atomic_load(&g_hrefused) >= 2000); /* the storm landed */
	ringbuf_destroy(g_rb);
}

static void signals_and_migrations_inside_the_sequence(void **state)
{
	(void)state;
	if (!rseq_here() || !two_cpus())
		skip();
	run_signals(0);
	run_signals(1);
}

/* -- (4) a dead owner's CPU buffer: taken over from another way than 0 -- */
static void *die_in_event(void *arg)
{
	(void)arg;
	pin(0);
	/* buffer 0's word held, committing 1: the thread ends mid-event */
	assert_non_null(ringbuf_reserve(g_rb, RINGBUF_CPU_CURRENT, sizeof(struct ev)));
	return NULL;
}

static void run_dead_owner(void)
{
	pthread_t th;
	uint64_t he, got, word;
	uint32_t i, in0 = 0, in1 = 0;
	struct ringbuf_record rec;
	new_rb(2, 1, 0, 0, NULL);
	assert_int_equal(pthread_create(&th, NULL, die_in_event, NULL), 0);
	pthread_join(th, NULL);
	word = atomic_load(&ringbuf__cpu(g_rb, 0)->owner);
	assert_int_not_equal(word, 0);
	pin(0);
	/* the first event of this thread is due a full scan: the dead word
	 * is judged, taken over (CAS from it), buffer 0 repaired; either that
	 * event or a later due one gets buffer 0 back; meanwhile the events
	 * go to the shared buffer, never lost */
	for (i = 0; i < 64; i++)
		assert_true(write_one(1, i));
	assert_int_equal(atomic_load(&ringbuf__cpu(g_rb, 0)->owner), 0);
	assert_int_equal(RINGBUF__LOAD(&ringbuf__cpu(g_rb, 0)->committing), 0);
	assert_int_equal(unmapped(g_rb), 0);
	for (i = 0; i < 2; i++)
		while (ringbuf_consume(g_rb, i, &rec) == 1)
			i == 0 ? in0++ : in1++;
	printf("dead owner (%s): %u events in CPU 0's buffer, %u in the shared one\n",
	       rseq_of(g_rb) ? "sequence" : "CAS", in0, in1);
	assert_int_equal(in0 + in1, 64);
	assert_true(in0 >= 1); /* CPU 0's buffer is back */
	(void)he;
	(void)got;
	ringbuf_destroy(g_rb);
}

static void a_dead_owners_cpu_buffer_is_taken_over_and_given_back(void **state)
{
	cpu_set_t old;
	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof old, &old), 0);
	g_flags = RINGBUF_F_CPU_CURRENT | RINGBUF_F_NO_RSEQ;
	run_dead_owner();
	g_flags = RINGBUF_F_CPU_CURRENT;
	if (rseq_here())
		run_dead_owner();
	else
		print_message("no restartable sequence here: the CAS run only\n");
	assert_int_equal(sched_setaffinity(0, sizeof old, &old), 0);
}

/* -- (4b) fork: the child's copy of a per-CPU block -- */
/* A thread of the parent holds CPU 0's buffer (parked inside an event) when
 * another thread forks: in the child (its own copy of the private block)
 * that holder does not exist; the child's writers on CPU 0 must get the
 * buffer back (the fork handler frees the words of threads the child does
 * not have) and write by sequence, every event read back; the parent's
 * holder then finishes its event in the parent's copy. */
static _Atomic(int) g_held, g_release;

static void *hold_cpu0(void *arg)
{
	struct ev *e;
	(void)arg;
	pin(0);
	e = (struct ev *)ringbuf_reserve(g_rb, RINGBUF_CPU_CURRENT, sizeof *e);
	assert_non_null(e);
	e->who = 3;
	e->seq = 0;
	e->sum = ev_sum(3, 0);
	e->pad = 0;
	atomic_store(&g_held, 1);
	while (!atomic_load(&g_release))
		;
	ringbuf_commit(g_rb, RINGBUF_CPU_CURRENT, e);
	return NULL;
}

static void a_fork_child_gets_the_cpu_buffers_of_threads_it_does_not_have(void **state)
{
	pthread_t th;
	pid_t pid;
	int st = -1;
	uint64_t he;
	cpu_set_t old;
	(void)state;
	g_flags = RINGBUF_F_CPU_CURRENT;
	new_rb(2, 1, 0, 0, NULL);
	atomic_store(&g_held, 0);
	atomic_store(&g_release, 0);
	assert_int_equal(sched_getaffinity(0, sizeof old, &old), 0);
	assert_int_equal(pthread_create(&th, NULL, hold_cpu0, NULL), 0);
	while (!atomic_load(&g_held))
		;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* the child: CPU 0's buffer is free here, 100 events into it */
		struct ringbuf_stats s0;
		uint32_t i, ok = 1;
		pin(0);
		for (i = 0; i < 100; i++)
			ok &= write_one(1, i);
		if (ringbuf_stats_cpu(g_rb, 0, &s0) != 0 || !ok || s0.committed != 100 ||
		    atomic_load(&ringbuf__cpu(g_rb, 0)->owner) != 0 || unmapped(g_rb) != 0 ||
		    read_back(g_rb, &he) != 100)
			_exit(1);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	/* the parent's holder commits its event in the parent's copy */
	atomic_store(&g_release, 1);
	pthread_join(th, NULL);
	assert_int_equal(read_back(g_rb, &he), 1);
	assert_int_equal(atomic_load(&ringbuf__cpu(g_rb, 0)->owner), 0);
	assert_int_equal(sched_setaffinity(0, sizeof old, &old), 0);
	ringbuf_destroy(g_rb);
}

/* -- (4c) cut in at [PC-SCAN]'s steps -- */
/* Two buffers: CPU 0's and a shared one. A thread holds CPU 0's buffer
 * (parked inside an event, alive) or died inside one; the main thread, on
 * CPU 0, writes: its CPU's buffer is held, it takes the shared one, and its
 * first such event is due a scan ([PC-SCAN] PC1-PC3). Parked at PERCPU_SCAN
 * (SCANNING set, the shared buffer held) and at PERCPU_SCANNED (the
 * shared buffer given back if CPU 0's was taken over, SCANNING still set):
 *   nested   a handler's event there is dropped, counted in `unmapped`
 *            (the scan may be repairing a buffer it would write to);
 *   other    another thread on CPU 0 writes: to a buffer nobody else holds,
 *            or dropped, counted; never waits.
 * Then: the main thread's event written once (CPU 0's buffer when its
 * owner was dead: taken over and repaired; else the shared one), every word
 * 0, nothing in flight, every event read back once, the accounting exact. */
struct scan_run {
	int point, nested, dead;
	pthread_t main;
	_Atomic(int) hits;
	int nested_ok, other_ok;
	uint64_t cur_at;
};

static void *other_writer_cpu0(void *arg)
{
	struct scan_run *r = (struct scan_run *)arg;
	pin(0);
	r->other_ok = write_one(4, 0);
	return NULL;
}

static void scan_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	struct scan_run *r = (struct scan_run *)ctx;
	(void)cpu;
	if (rb != g_rb || point != r->point || !pthread_equal(pthread_self(), r->main) ||
	    atomic_fetch_add(&r->hits, 1) != 0)
		return;
	r->cur_at = atomic_load(&ringbuf__tctx_at_last()->cur);
	if (r->nested) {
		r->nested_ok = write_one(5, 0);
	} else {
		pthread_t th;
		assert_int_equal(pthread_create(&th, NULL, other_writer_cpu0, r), 0);
		pthread_join(th, NULL);
	}
}

static void run_scan_case(int point, int nested, int dead)
{
	struct scan_run r;
	pthread_t th;
	uint64_t he, got;
	struct ringbuf_stats s0;
	memset(&r, 0, sizeof r);
	r.point = point;
	r.nested = nested;
	r.dead = dead;
	r.main = pthread_self();
	new_rb(2, 1, 0, 0, NULL);
	atomic_store(&g_held, 0);
	atomic_store(&g_release, 0);
	if (dead) {
		assert_int_equal(pthread_create(&th, NULL, die_in_event, NULL), 0);
		pthread_join(th, NULL);
	} else {
		assert_int_equal(pthread_create(&th, NULL, hold_cpu0, NULL), 0);
		while (!atomic_load(&g_held))
			;
	}
	pin(0);
	ringbuf__set_testpoint_hook(scan_hook, &r);
	assert_true(write_one(1, 0));
	ringbuf__set_testpoint_hook(NULL, NULL);
	assert_int_equal(atomic_load(&r.hits), 1);
	assert_true(r.cur_at & RINGBUF__CUR_SCANNING);
	if (nested)
		assert_false(r.nested_ok); /* dropped while SCANNING, counted below */
	if (!dead) {
		atomic_store(&g_release, 1);
		pthread_join(th, NULL);
	}
	/* every write committed or counted */
	assert_int_equal(unmapped(g_rb), atomic_load(&g_refused));
	assert_int_equal(committed_all(g_rb), atomic_load(&g_written) + (dead ? 0u : 1u));
	assert_int_equal(ringbuf_stats_cpu(g_rb, 0, &s0), 0);
	/* the main thread's event: CPU 0's buffer once its dead owner was
	 * taken over, else the shared one */
	got = read_back_x(g_rb, &he, dead ? 0u : 1u << 1);
	assert_int_equal(got, atomic_load(&g_written) + (dead ? 0u : 1u));
	assert_int_equal(atomic_load(&ringbuf__cpu(g_rb, 0)->owner), 0);
	assert_int_equal(atomic_load(&ringbuf__cpu(g_rb, 1)->owner), 0);
	assert_int_equal(RINGBUF__LOAD(&ringbuf__cpu(g_rb, 0)->committing), 0);
	assert_int_equal(RINGBUF__LOAD(&ringbuf__cpu(g_rb, 1)->committing), 0);
	print_message("  %s, %s, owner %s: main's event in buffer %s; nested %d, other %d; unmapped %llu\n",
		      point == RINGBUF__TP_PERCPU_SCAN ? "PC1" : "PC3", nested ? "nested" : "other",
		      dead ? "dead" : "alive", dead ? "0" : "1", r.nested_ok, r.other_ok,
		      (unsigned long long)unmapped(g_rb));
	ringbuf_destroy(g_rb);
}

static void cut_in_at_each_step_of_a_per_cpu_scan(void **state)
{
	static const int points[2] = { RINGBUF__TP_PERCPU_SCAN, RINGBUF__TP_PERCPU_SCANNED };
	cpu_set_t old;
	unsigned kind;
	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof old, &old), 0);
	for (kind = 0; kind < 2; kind++) {
		g_flags = RINGBUF_F_CPU_CURRENT | (kind ? RINGBUF_F_NO_RSEQ : 0u);
		if (!kind && !rseq_here())
			continue;
		for (int pi = 0; pi < 2; pi++)
			for (int nested = 0; nested < 2; nested++)
				for (int dead = 0; dead < 2; dead++)
					run_scan_case(points[pi], nested, dead);
	}
	assert_int_equal(sched_setaffinity(0, sizeof old, &old), 0);
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
 * every sequence is interrupted between S2 and S4 and restarted by the
 * kernel at the abort handler (an rseq_cs it rejected would kill the
 * thread): no outer event takes CPU 0's buffer (two buffers: CPU 0's and a
 * shared one; the writer pinned to CPU 0), each goes to the shared buffer
 * by CAS, none twice, the handlers' events nested at every instruction of
 * the outer write path, exact accounting. */
static void every_sequence_restarted_by_a_signal_after_each_instruction(void **state)
{
	uint64_t c0[2], c1[2], he, got;
	struct ringbuf_stats st;
	uint32_t i, ok = 0;
	cpu_set_t old;
	(void)state;
	if (!rseq_here())
		skip();
	g_flags = RINGBUF_F_CPU_CURRENT;
	new_rb(2, 1, 0, SIGTRAP, on_trap);
	assert_int_equal(sched_getaffinity(0, sizeof old, &old), 0);
	pin(0);
	/* the thread's entry and token first (its first event goes out of
	 * line anyway), as writer 2 */
	assert_true(write_one(2, 0));
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
	assert_int_equal(sched_setaffinity(0, sizeof old, &old), 0);
	ringbuf__test_rseq_counts(g_rb, c1);
	assert_int_equal(ringbuf_stats_cpu(g_rb, 1, &st), 0);
	printf("single step: %d traps, %u events, %llu nested, %llu in the shared buffer, %llu words taken "
	       "by sequence out of line (the handlers')\n",
	       (int)g_traps, ok, (unsigned long long)atomic_load(&g_step_nested), (unsigned long long)st.committed,
	       (unsigned long long)(c1[0] - c0[0]));
	assert_int_equal(ok, STEP_EVENTS);
	assert_true(g_traps > 100 * (sig_atomic_t)STEP_EVENTS); /* the flag did trap */
	/* a handler's event is dropped (counted) only while a due scan of its
	 * outer writer runs ([PC-SCAN]) */
	assert_int_equal(unmapped(g_rb), atomic_load(&g_hrefused));
	/* no sequence of the outer writes completed: each took the shared
	 * buffer (read_back_x: writer 1 never in buffer 0; the handlers'
	 * untrapped events may take buffer 0 by sequence) */
	assert_true(st.committed >= STEP_EVENTS);
	assert_int_equal(atomic_load(&g_overlap), 0);
	assert_int_equal(committed_all(g_rb), atomic_load(&g_written) + atomic_load(&g_step_nested));
	got = read_back_x(g_rb, &he, 1u << 1);
	assert_int_equal(got, atomic_load(&g_written) + atomic_load(&g_step_nested));
	assert_int_equal(he, atomic_load(&g_step_nested));
	assert_true(he > 0);
	assert_int_equal(atomic_load(&ringbuf__cpu(g_rb, 0)->owner), 0);
	assert_int_equal(atomic_load(&ringbuf__cpu(g_rb, 1)->owner), 0);
	ringbuf_destroy(g_rb);
}

/* -- (7) an event committed after its writer moved to another CPU -- */
/* The inline commit takes the CPU struct from the CPU rseq names at the
 * commit, confirmed by the entry's cur (INLINE in >>contexts): a writer that
 * reserved on CPU `from` and commits on CPU `to` must commit on `from`'s
 * buffer and give its word back, not touch `to`'s. In an ordinary block
 * (every word by CAS), in a per-CPU block by sequence and by CAS. */
static void run_moved(unsigned flags, int from, int to)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf_record rec;
	struct ringbuf *rb;
	struct ev *e;
	unsigned c;
	cfg.ncpu = flags ? 3 : 2; /* a per-CPU block: CPUs 0, 1 and one shared */
	cfg.shared = flags ? 1 : 0;
	cfg.flags = flags;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	pin(from);
	e = (struct ev *)ringbuf_reserve(rb, RINGBUF_CPU_CURRENT, sizeof *e);
	assert_non_null(e);
	assert_int_equal(ringbuf_thread_cpu(rb), from);
	assert_int_not_equal(atomic_load(&ringbuf__cpu(rb, (unsigned)from)->owner), 0);
	e->who = 7;
	e->seq = 0;
	e->sum = ev_sum(7, 0);
	e->pad = 0;
	pin(to); /* sched_setaffinity moves the thread before it returns */
	if (ringbuf__rseq_cpu() >= 0)
		assert_int_equal(ringbuf__rseq_cpu(), to);
	ringbuf_commit(rb, RINGBUF_CPU_CURRENT, e);
	for (c = 0; c < cfg.ncpu; c++) {
		assert_int_equal(atomic_load(&ringbuf__cpu(rb, c)->owner), 0);
		assert_int_equal(RINGBUF__LOAD(&ringbuf__cpu(rb, c)->committing), 0);
	}
	assert_int_equal(ringbuf_thread_cpu(rb), -1); /* no event in flight */
	/* the next event: the new CPU's buffer */
	assert_true((e = (struct ev *)ringbuf_reserve(rb, RINGBUF_CPU_CURRENT, sizeof *e)) != NULL);
	e->who = 7;
	e->seq = 1;
	e->sum = ev_sum(7, 1);
	e->pad = 0;
	ringbuf_commit(rb, RINGBUF_CPU_CURRENT, e);
	for (c = 0; c < cfg.ncpu; c++) {
		uint32_t want = c == (unsigned)from ? 0 : c == (unsigned)to ? 1 : 99;
		if (want == 99) {
			assert_int_equal(ringbuf_consume(rb, c, &rec), 0);
			continue;
		}
		assert_int_equal(ringbuf_consume(rb, c, &rec), 1);
		assert_int_equal(rec.len, sizeof *e);
		e = (struct ev *)rec.data;
		assert_int_equal(e->seq, want);
		assert_int_equal(e->sum, ev_sum(7, want));
		assert_int_equal(ringbuf_consume(rb, c, &rec), 0);
	}
	assert_int_equal(unmapped(rb), 0);
	assert_int_equal(committed_all(rb), 2);
	ringbuf_destroy(rb);
}

static void an_event_committed_after_its_writer_moved_to_another_cpu(void **state)
{
	cpu_set_t old;
	static const unsigned kinds[] = {0, RINGBUF_F_CPU_CURRENT, RINGBUF_F_CPU_CURRENT | RINGBUF_F_NO_RSEQ};
	unsigned k;
	(void)state;
	if (!two_cpus())
		skip();
	assert_int_equal(sched_getaffinity(0, sizeof old, &old), 0);
	for (k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
		run_moved(kinds[k], 0, 1);
		run_moved(kinds[k], 1, 0);
	}
	assert_int_equal(sched_setaffinity(0, sizeof old, &old), 0);
}

static void new_rb(unsigned ncpu, unsigned shared, size_t size_per_cpu, int sig, void (*h)(int))
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	cfg.ncpu = ncpu;
	cfg.shared = shared;
	cfg.flags = g_flags;
	if (size_per_cpu)
		cfg.size_per_cpu = size_per_cpu;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
	assert_int_equal(ringbuf_create(&cfg, &g_rb), 0);
	atomic_store(&g_inside_b[0], 0);
	atomic_store(&g_inside_b[1], 0);
	atomic_store(&g_inside_b[2], 0);
	atomic_store(&g_overlap, 0);
	atomic_store(&g_go, 0);
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
		cmocka_unit_test(only_per_cpu_blocks_claim_by_sequence),
		cmocka_unit_test(cpu_writers_and_shared_takes_never_both_own_a_word),
		cmocka_unit_test(signals_and_migrations_inside_the_sequence),
		cmocka_unit_test(a_dead_owners_cpu_buffer_is_taken_over_and_given_back),
		cmocka_unit_test(a_fork_child_gets_the_cpu_buffers_of_threads_it_does_not_have),
		cmocka_unit_test(cut_in_at_each_step_of_a_per_cpu_scan),
		cmocka_unit_test(every_sequence_restarted_by_a_signal_after_each_instruction),
		cmocka_unit_test(an_event_committed_after_its_writer_moved_to_another_cpu),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
