/* test_record_hostile.c - the recorder's intake against a hostile writer.
 *
 * ringbuf-record maps a buffer that the traced process can change at any
 * moment: every byte it reads there may change between two loads. These tests
 * run the intake while another party keeps changing the shared file and ask
 * for: no crash, no hang, no access outside the mapping or the output (run it
 * under AddressSanitizer: make asan), and either a well-formed trace.dat (every
 * page of it passes the independent page walker tests/pagewalk.h) or a clear
 * error.
 *
 *   recorder_survives_a_mutating_writer   ringbuf_record_main (the whole tool,
 *       in a thread) records a buffer whose "traced process" is a child that
 *       flips MUT_FLIPS seeded values in the shared file (page data, page
 *       headers, page descriptors and links, the per-CPU control (tail,
 *       commit, reader page, read index, reader lock, slots), the header's
 *       control words, the user area) and exits; the recorder drains live
 *       while it mutates, then recovers and takes the rest.
 *   intake_calls_under_a_mutator_thread    the library calls the recorder
 *       uses (ringbuf_open_file RDWR with its validation, ringbuf_tracedat_drain
 *       with and without RINGBUF_READ_FULL, ringbuf_stats, ringbuf_wait)
 *       called in a loop, a fixed number of times, on one MAP_SHARED view
 *       while a thread flips values through another; then ringbuf_recover
 *       and a last drain once it stopped.
 *
 *   kill_at_random_steps_keeps_every_committed_event  100 SIGKILLs of a
 *       writer with nested signal writers, recorded (see its section).
 *   changes_after_the_open_are_errors, recorder_gives_up_on_a_page_it_cannot_take,
 *   a_reader_page_linking_to_itself,
 *   page_check_refuses_times_that_wrap_or_go_back  one change each, no
 *       concurrency: the bugs the mutators found, each of which failed before.
 *
 * Seeds and counts are fixed (rounds, flips, calls, kill steps), nothing is
 * timed. RINGBUF_TEST_HOSTILE_ROUNDS=N runs more mutator rounds,
 * RINGBUF_TEST_KILL_ROUNDS=N more kills. Wall time is mostly the recorder's
 * own wait (100 ms) before it sees a killed child gone: about 20 s.
 *
 *   header_changed_after_the_open  the header's geometry and process-local
 *       fields rewritten after the open, field by field: every reader call
 *       goes on with the geometry it validated (RINGBUF_TEST_GEOM_CASE=k runs
 *       case k alone).
 *
 * The mutators change the header's geometry as well: each process that maps
 * the block works on its own copy of it (PRIVATE HEADER in ringbuf.h), so
 * the changes reach only the opens that come after them (refused, or a
 * geometry validated on the copy).
 */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_RECORD_TOOL_NO_MAIN
#include "internal.h" /* the private names the tool and the test use (IMPL: shared) */
#include "tools/ringbuf-record.c"
#define RINGBUF_TRACE_DEFINE_EVENTS
#include "ringbuf_trace.h"
#undef RINGBUF_TRACE_DEFINE_EVENTS
#include "tests/pagewalk.h"
#include "tests/tdatwalk.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

RINGBUF_TRACE_EVENT(hnum, RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, cpu), RINGBUF_FIELD(uint32_t, seq)),
		    RINGBUF_PRINT("cpu=%u seq=%u", REC->cpu, REC->seq));
/* the kill test's event: seq and three words derived from it (a torn event
 * shows as words that do not match) */
RINGBUF_TRACE_EVENT(kev,
		    RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, seq), RINGBUF_FIELD(uint32_t, a), RINGBUF_FIELD(uint32_t, b),
				   RINGBUF_FIELD(uint32_t, c)),
		    RINGBUF_PRINT("seq=%u", REC->seq));

#define NCPU 2
/* changes in round k of the recorder test: 4 to 2048, doubling */
#define MUT_FLIPS(k) (4u << ((k) % 10))

static char tmpdir[64];

static char *path_of(const char *name)
{
	static char buf[4][160];
	static int k;
	char *b = buf[k++ & 3];
	snprintf(b, sizeof buf[0], "%s/%s", tmpdir, name);
	return b;
}

static _Atomic(long) g_last_tid; /* the thread the test started last (recorder, mutator) */

static void note_thread(void)
{
	atomic_store(&g_last_tid, (long)syscall(SYS_gettid));
}

/* Before each fork: wait until the thread the test joined last is gone from
 * the kernel's list (/proc/PID/task/TID), not only joined. qemu-user (7.2)
 * lets pthread_join return while the exiting thread's host side still runs
 * its destructors, one of which holds glib's slice allocator lock: a child
 * forked then deadlocks in its first translation (g_slice_alloc from
 * tcg_tb_insert, in gdb of the orphaned child of a run that hung 900 s
 * here; the aarch64 run of make test-cross in CI hung the same way).
 * Natively the entry is gone at once. That one thread, not a count of all:
 * a sanitizer's runtime starts threads of its own later (a count taken at
 * the start kept TSan's run waiting 100,000 looks at every fork: 299 s).
 * Bounded by a count of looks; then the fork goes ahead. */
static void settle_threads(void)
{
	char path[64];
	long tid = atomic_load(&g_last_tid);
	unsigned k;
	if (!tid)
		return;
	snprintf(path, sizeof path, "/proc/%ld/task/%ld", (long)getpid(), tid);
	for (k = 0; k < 100000 && access(path, F_OK) == 0; k++)
		sched_yield();
}

static uint64_t rnd(uint64_t *s)
{
	uint64_t x = *s;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* ---- the mutator ------------------------------------------------------------ */

struct region {
	uint64_t off, len;
};

struct target {
	unsigned char *base; /* the mutator's own mapping of the file */
	uint64_t size;
	uint32_t nr_pages, bsize, page_size;
	struct region r[9];
	unsigned nr;
};

/* The regions of a block, from a trusted copy of its header. */
static void target_of(struct target *t, unsigned char *base, const struct ringbuf *h)
{
	memset(t, 0, sizeof *t);
	t->base = base;
	t->size = h->total_size;
	t->nr_pages = h->nr_pages;
	t->bsize = h->bsize;
	t->page_size = h->page_size;
	/* the header's control words (after the geometry) */
	t->r[t->nr++] = (struct region){h->cpu_off - sizeof(struct ringbuf__shdr), sizeof(struct ringbuf__shdr)};
	t->r[t->nr++] = (struct region){h->cpu_off, h->bpage_off - h->cpu_off};   /* per-CPU control */
	t->r[t->nr++] = (struct region){h->cpu_off, h->bpage_off - h->cpu_off};   /* (twice the weight) */
	t->r[t->nr++] = (struct region){h->bpage_off, h->data_off - h->bpage_off}; /* descriptors, links */
	t->r[t->nr++] = (struct region){h->data_off, h->user_off - h->data_off};   /* data pages */
	t->r[t->nr++] = (struct region){h->data_off, h->user_off - h->data_off};   /* (page headers, below) */
	if (h->user_size)
		t->r[t->nr++] = (struct region){h->user_off, h->user_size};
	/* the header's geometry and process-local fields: each process that
	 * maps the block has its own copy, which this does not reach (PRIVATE
	 * HEADER); an open after the change reads it */
	t->r[t->nr++] = (struct region){0, sizeof(struct ringbuf)};
}

/* One seeded change: a 4- or 8-byte aligned value somewhere in a region. */
static void mutate_one(struct target *t, uint64_t *s)
{
	uint64_t x = rnd(s), v;
	unsigned ri = (unsigned)(x % t->nr);
	struct region *r = &t->r[ri];
	uint64_t off;
	unsigned kind = (unsigned)((x >> 8) % 8), wide = (unsigned)((x >> 12) & 1);
	if (r->len < 8)
		return;
	off = r->off + (rnd(s) % (r->len - 7) & ~(uint64_t)3);
	if (ri == 5) /* a data page's header: time stamp and commit */
		off = r->off + (rnd(s) % (r->len / t->page_size)) * t->page_size + (rnd(s) & 8);
	if (wide)
		off &= ~(uint64_t)7;
	switch (kind) {
	case 0: v = rnd(s); break;
	case 1: v = 0; break;
	case 2: v = UINT64_MAX; break;
	case 3: v = rnd(s) % (t->nr_pages + 3); break;          /* an index, in range or just past it */
	case 4: v = t->bsize - 16 + rnd(s) % 32; break;         /* a size about the page's end */
	case 5: v = (uint64_t)1 << (rnd(s) % 64); break;        /* one bit (flags, commit bits) */
	case 6: v = rnd(s) % (t->nr_pages + 3) << 2 | (rnd(s) & 3); break; /* a link */
	default: { /* flip one bit of what is there */
		uint64_t cur;
		memcpy(&cur, t->base + off, wide ? 8 : 4);
		v = cur ^ ((uint64_t)1 << (rnd(s) % (wide ? 64 : 32)));
	}
	}
	if (wide) {
		__atomic_store_n((uint64_t *)(void *)(t->base + off), v, __ATOMIC_RELAXED);
	} else {
		__atomic_store_n((uint32_t *)(void *)(t->base + off), (uint32_t)v, __ATOMIC_RELAXED);
	}
}

/* ---- the buffer ------------------------------------------------------------- */

static struct ringbuf_trace_registry reg = RINGBUF_TRACE_REGISTRY_INIT("hostile");

/* A file buffer with formats and nevents events per CPU. */
static struct ringbuf *make_buffer(const char *path, int mode, unsigned nevents)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	unsigned i;
	cfg.ncpu = NCPU;
	cfg.size_per_cpu = 16 << 10;
	cfg.mode = mode;
	cfg.user_size = ringbuf_trace_user_size(&reg);
	assert_int_equal(ringbuf_create_file(path, &cfg, &rb), 0);
	assert_int_equal(ringbuf_trace_store_registry(rb, &reg), 0);
	for (i = 0; i < nevents; i++) {
		int r = trace_hnum(rb, i & 1, i & 1, i >> 1);
		assert_true(r == 1 || r == RINGBUF_ENOSPC);
	}
	return rb;
}

/* ---- checking a trace.dat (version 6, this host's order) --------------------- */

/* Every page of every CPU walks (pagewalk.h), fn (if not NULL) gets each
 * record; returns the events, or fails. */
static uint64_t check_tracedat_fn(const char *path, int (*fn)(const struct pw_record *, void *), void *ctx)
{
	FILE *f = fopen(path, "rb");
	unsigned char *p;
	char why[160];
	uint64_t events = 0;
	long n;
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	assert_true(n > 0);
	p = malloc((size_t)n);
	assert_non_null(p);
	assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	if (tdat_walk_v6(p, (size_t)n, NCPU, fn, ctx, &events, why, sizeof why) != 0)
		fail_msg("%s: %s", path, why);
	free(p);
	return events;
}

static uint64_t check_tracedat(const char *path)
{
	return check_tracedat_fn(path, NULL, NULL);
}

/* ---- the recorder against a mutating writer --------------------------------- */

struct rec_run {
	char *argv[12];
	int argc, rc;
};

static void *recorder(void *arg)
{
	struct rec_run *r = arg;
	note_thread();
	r->rc = ringbuf_record_main(r->argc, r->argv);
	return NULL;
}

/* `ringbuf-record -q -o OUT -p PID FILE` in a thread (OUT and FILE under the
 * test's directory; argv[3] and the last are the caller's to free) */
static void start_recorder(struct rec_run *run, pthread_t *th, char *pidstr, size_t pidlen, pid_t pid,
			   const char *out, const char *name)
{
	snprintf(pidstr, pidlen, "%d", (int)pid);
	memset(run, 0, sizeof *run);
	run->argv[run->argc++] = (char *)"ringbuf-record";
	run->argv[run->argc++] = (char *)"-q";
	run->argv[run->argc++] = (char *)"-o";
	run->argv[run->argc++] = strdup(path_of(out));
	run->argv[run->argc++] = (char *)"-p";
	run->argv[run->argc++] = pidstr;
	run->argv[run->argc++] = strdup(path_of(name));
	assert_int_equal(pthread_create(th, NULL, recorder, run), 0);
}

/* The "traced process": maps the file, waits for the go, flips, exits. */
static void mutator_child(const char *path, int fd, uint64_t seed, unsigned flips)
{
	struct ringbuf h;
	struct target t;
	unsigned char *base;
	char c;
	unsigned i;
	int f = open(path, O_RDWR);
	if (f < 0 || read(f, &h, sizeof h) != (ssize_t)sizeof h)
		_exit(20);
	base = mmap(NULL, (size_t)h.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
	if (base == MAP_FAILED)
		_exit(21);
	close(f);
	target_of(&t, base, &h);
	if (read(fd, &c, 1) != 1)
		_exit(22);
	for (i = 0; i < flips; i++) {
		mutate_one(&t, &seed);
		if ((i & 63) == 0)
			sched_yield(); /* let the recorder read between changes */
	}
	_exit(0);
}

static unsigned rounds(unsigned dflt)
{
	const char *e = getenv("RINGBUF_TEST_HOSTILE_ROUNDS");
	return e && atoi(e) > 0 ? (unsigned)atoi(e) : dflt;
}

static void recorder_survives_a_mutating_writer(void **state)
{
	unsigned round, n = rounds(20), ok = 0, refused = 0;
	uint64_t events = 0, flips = 0;
	(void)state;
	for (round = 0; round < n; round++) {
		char name[32], out[32], pidstr[24];
		struct rec_run run;
		struct ringbuf *rb;
		pthread_t th;
		int fds[2], status;
		pid_t pid;
		snprintf(name, sizeof name, "h%u.rb", round);
		snprintf(out, sizeof out, "h%u.dat", round);
		rb = make_buffer(path_of(name), round & 1 ? RINGBUF_MODE_OVERWRITE : RINGBUF_MODE_PRODUCER_CONSUMER,
				 200 + 97 * round);
		assert_int_equal(pipe(fds), 0);
		settle_threads();
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			close(fds[1]);
			mutator_child(path_of(name), fds[0], 0x9e3779b97f4a7c15ull * (round + 1), MUT_FLIPS(round));
		}
		close(fds[0]);
		ringbuf_destroy(rb); /* the child is the writer from here on */
		start_recorder(&run, &th, pidstr, sizeof pidstr, pid, out, name);
		assert_int_equal(write(fds[1], "g", 1), 1);
		close(fds[1]);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		assert_int_equal(pthread_join(th, NULL), 0);
		/* a clear error, or a well-formed trace */
		if (run.rc == RBREC_OK) {
			events += check_tracedat(path_of(out));
			ok++;
		} else {
			struct stat sb;
			/* what was taken before the error is written, well-formed */
			assert_int_equal(run.rc, RBREC_FILE);
			if (stat(path_of(out), &sb) == 0)
				events += check_tracedat(path_of(out));
			refused++;
		}
		flips += MUT_FLIPS(round);
		unlink(path_of(name));
		unlink(path_of(out));
		free(run.argv[3]);
		free(run.argv[run.argc - 1]);
	}
	print_message("  %u rounds, %llu changes: %u traces well-formed (%llu events), %u runs ended with an "
		      "error (what they took before it well-formed)\n",
		      n, (unsigned long long)flips, ok, (unsigned long long)events, refused);
}

/* ---- the library calls under a mutator thread --------------------------------- */

struct mut_thread {
	struct target t;
	uint64_t seed, flips;
	atomic_int stop;
};

static void *mutator_thread(void *arg)
{
	struct mut_thread *m = arg;
	note_thread();
	while (!atomic_load(&m->stop)) {
		mutate_one(&m->t, &m->seed);
		m->flips++;
		if ((m->flips & 15) == 0)
			sched_yield();
	}
	return NULL;
}

#define CALLS 400 /* intake calls per round */

static void intake_calls_under_a_mutator_thread(void **state)
{
	unsigned round, n = rounds(8), k;
	uint64_t flips = 0, errors = 0, pages = 0;
	(void)state;
	for (round = 0; round < n; round++) {
		char name[32], out[32];
		struct ringbuf *wr, *rb = NULL;
		struct ringbuf_trace_registry lreg;
		struct ringbuf_tracedat_info info;
		struct ringbuf_tracedat *w = NULL;
		struct ringbuf h;
		struct mut_thread m;
		pthread_t th;
		unsigned char *base;
		int fd, r;
		snprintf(name, sizeof name, "t%u.rb", round);
		snprintf(out, sizeof out, "t%u.dat", round);
		wr = make_buffer(path_of(name), round & 1 ? RINGBUF_MODE_OVERWRITE : RINGBUF_MODE_PRODUCER_CONSUMER,
				 300 + 211 * round);
		memcpy(&h, wr, sizeof h);
		/* the recorder's view, before the mutation starts */
		assert_int_equal(ringbuf_open_file(path_of(name), RINGBUF_OPEN_RDWR, &rb), 0);
		assert_int_equal(ringbuf_trace_load_registry(rb, &lreg), 0);
		ringbuf_tracedat_info_of(rb, &lreg, &info);
		info.version = 6;
		assert_int_equal(ringbuf_tracedat_open(path_of(out), &info, &w), 0);
		/* the mutator's own view */
		fd = open(path_of(name), O_RDWR);
		assert_true(fd >= 0);
		base = mmap(NULL, (size_t)h.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		assert_true(base != MAP_FAILED);
		close(fd);
		memset(&m, 0, sizeof m);
		target_of(&m.t, base, &h);
		m.seed = 0x2545f4914f6cdd1dull * (round + 1);
		atomic_init(&m.stop, 0);
		assert_int_equal(pthread_create(&th, NULL, mutator_thread, &m), 0);
		for (k = 0; k < CALLS; k++) {
			struct ringbuf_stats st;
			struct ringbuf *rb2;
			switch (k % 8) {
			case 0: case 1: case 2:
				r = ringbuf_tracedat_drain(w, rb, RINGBUF_ALL_CPUS, RINGBUF_READ_FULL);
				break;
			case 3: case 4:
				r = ringbuf_tracedat_drain(w, rb, RINGBUF_ALL_CPUS, 0);
				break;
			case 5:
			case 6:
				r = ringbuf_stats(rb, &st);
				if (r == 0)
					r = ringbuf_wait(rb, RINGBUF_ALL_CPUS, 50, 0);
				break;
			default:
				r = ringbuf_open_file(path_of(name), RINGBUF_OPEN_RDWR, &rb2);
				if (r == 0)
					ringbuf_destroy(rb2);
				break;
			}
			if (r > 0 && k % 8 < 5)
				pages += (uint64_t)r;
			if (r < 0) {
				/* a clear error: the open's refusals, a corruption, a
				 * page or lock in transition */
				if (r != RINGBUF_ECORRUPT && r != RINGBUF_EAGAIN && r != RINGBUF_EBUSY &&
				    r != RINGBUF_EINVAL && r != RINGBUF_EFORMAT && r != RINGBUF_EVERSION &&
				    r != RINGBUF_ETRUNC)
					fail_msg("round %u call %u (kind %u): %s", round, k, k % 8, ringbuf_strerror(r));
				errors++;
			}
		}
		atomic_store(&m.stop, 1);
		assert_int_equal(pthread_join(th, NULL), 0);
		flips += m.flips;
		/* the writer gone (the mutator stopped): repair, take the rest,
		 * as the recorder does (ringbuf_recover racing a writer that is
		 * still there is outside what it withstands: docs/files-and-recorder.md) */
		r = ringbuf_recover(rb);
		if (r == 0)
			r = ringbuf_tracedat_drain(w, rb, RINGBUF_ALL_CPUS, 0);
		assert_true(r >= 0 || r == RINGBUF_ECORRUPT || r == RINGBUF_EBUSY || r == RINGBUF_EAGAIN);
		/* what the writer made of the file is well-formed */
		r = ringbuf_tracedat_finish(w, NULL);
		assert_int_equal(r, 0);
		check_tracedat(path_of(out));
		munmap(base, (size_t)h.total_size);
		ringbuf_trace_registry_free(&lreg);
		ringbuf_destroy(rb);
		ringbuf_destroy(wr);
		unlink(path_of(name));
		unlink(path_of(out));
	}
	print_message("  %u rounds of %u calls: %llu pages taken, %llu calls refused, %llu changes made\n", n,
		      CALLS, (unsigned long long)pages, (unsigned long long)errors, (unsigned long long)flips);
}


/* ---- killed at random moments, nested signal writers running ---------------
 *
 * The writer child writes kev events (seq from one counter, taken before the
 * reserve) on 2 CPU buffers; its test-point hook (RINGBUF_TESTING: every step
 * of the write path) raises SIGUSR1 at seeded steps, whose handler writes one
 * more event nested in the interrupted one (itself interruptible: up to 3
 * deep), and raises SIGKILL at a seeded step count, in an outer or a nested
 * writer alike. After each commit that returned, the child marks the seq in
 * a shared anonymous mapping (the side channel: it survives the kill). The
 * recorder (ringbuf_record_main in a thread, -p the child) drains live, then
 * repairs and takes the rest. The trace must hold every marked seq, none
 * twice, every event whole (its words match its seq), and nothing never
 * written. KILL_ROUNDS kills (RINGBUF_TEST_KILL_ROUNDS=N: N). */

#define KILL_MAXSEQ 65536
#define KILL_ROUNDS 100

struct kill_side {
	_Atomic(uint32_t) next;            /* seq counter (the child's) */
	_Atomic(uint8_t) done[KILL_MAXSEQ];  /* commit returned */
	_Atomic(uint32_t) nested;          /* events written by handlers */
	_Atomic(uint32_t) killed_nested;   /* the kill came in a handler */
};

static struct kill_side *g_side;
static struct ringbuf *g_krb;
static uint64_t g_khits, g_kill_at, g_kseed;
static volatile sig_atomic_t g_depth;

static uint32_t kword(uint32_t seq, unsigned k)
{
	return k == 0 ? ~seq : k == 1 ? seq * 2654435761u : seq ^ 0x5bd1e995u;
}

static void kill_write(unsigned cpu)
{
	uint32_t seq = atomic_fetch_add(&g_side->next, 1);
	int r;
	if (seq >= KILL_MAXSEQ)
		_exit(3); /* the seeded kill point is always reached before */
	r = trace_kev(g_krb, cpu, seq, kword(seq, 0), kword(seq, 1), kword(seq, 2));
	if (r == 1)
		atomic_store(&g_side->done[seq], 1);
	else if (r != RINGBUF_ENOSPC)
		_exit(4);
}

static void on_usr1(int sig)
{
	(void)sig;
	g_depth++;
	atomic_fetch_add(&g_side->nested, 1);
	kill_write((unsigned)(g_kseed >> 7) & 1);
	g_depth--;
}

static void kill_point(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	uint64_t h;
	(void)rb;
	(void)cpu;
	(void)ctx;
	if (point >= RINGBUF__TP_COUNT)
		return; /* the write path's steps only */
	h = ++g_khits;
	if (h == g_kill_at) {
		if (g_depth)
			atomic_store(&g_side->killed_nested, 1);
		raise(SIGKILL);
	}
	g_kseed = g_kseed * 6364136223846793005ull + 1442695040888963407ull;
	if (g_depth < 3 && (g_kseed >> 33) % 11 == 0)
		raise(SIGUSR1); /* a nested writer at this very step */
}

static void kill_child(const char *path, int fd, uint64_t seed)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct sigaction sa;
	uint32_t i;
	cfg.ncpu = NCPU;
	cfg.size_per_cpu = 256 << 10; /* holds every event of a round: none dropped */
	cfg.user_size = ringbuf_trace_user_size(&reg);
	if (ringbuf_create_file(path, &cfg, &g_krb) < 0 || ringbuf_trace_store_registry(g_krb, &reg) < 0)
		_exit(11);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_NODEFER; /* a handler's writer may be interrupted too */
	sigaction(SIGUSR1, &sa, NULL);
	g_kseed = seed;
	g_kill_at = 100 + (seed >> 40) % 30000; /* write-path steps: about 3,000 events at most */
	if (write(fd, "r", 1) != 1)
		_exit(12);
	ringbuf__set_testpoint_hook(kill_point, NULL);
	for (i = 0;; i++) {
		kill_write(i & 1);
		if (i == 256) {
			/* let the recorder take pages while this runs. The count
			 * is read without a lock: ringbuf_stats takes each CPU's
			 * reader lock, and called in this loop it kept the
			 * recorder's drain waiting for that lock (up to its
			 * bound, then RINGBUF_EBUSY) */
			while (atomic_load_explicit(&ringbuf__cpu(g_krb, 0)->pages_read, memory_order_relaxed) +
				       atomic_load_explicit(&ringbuf__cpu(g_krb, 1)->pages_read, memory_order_relaxed) ==
			       0)
				sched_yield();
		}
	}
}

struct kill_check {
	uint8_t *seen;
	uint64_t events, twice, torn, unwritten;
};

static int on_kev(const struct pw_record *r, void *ctx)
{
	struct kill_check *k = ctx;
	uint16_t id;
	uint32_t w[4];
	if (r->kind != PW_DATA)
		return 0;
	if (r->payload_len < 24)
		return k->torn++, 0;
	memcpy(&id, r->payload, 2);
	memcpy(w, r->payload + 8, 16);
	if (id != 2 || w[0] >= KILL_MAXSEQ || w[1] != kword(w[0], 0) || w[2] != kword(w[0], 1) ||
	    w[3] != kword(w[0], 2)) {
		k->torn++;
		return 0;
	}
	if (w[0] >= atomic_load(&g_side->next))
		k->unwritten++;
	if (k->seen[w[0]]++)
		k->twice++;
	k->events++;
	return 0;
}

static void kill_at_random_steps_keeps_every_committed_event(void **state)
{
	const char *e = getenv("RINGBUF_TEST_KILL_ROUNDS");
	unsigned round, n = e && atoi(e) > 0 ? (unsigned)atoi(e) : KILL_ROUNDS, nested_kills = 0;
	uint64_t committed = 0, extra = 0, nested = 0, live = 0;
	struct kill_check k;
	(void)state;
	g_side = mmap(NULL, sizeof *g_side, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(g_side != MAP_FAILED);
	memset(&k, 0, sizeof k);
	k.seen = malloc(KILL_MAXSEQ);
	assert_non_null(k.seen);
	for (round = 0; round < n; round++) {
		char name[32], out[32], pidstr[24], c;
		struct rec_run run;
		pthread_t th;
		int fds[2], status;
		uint32_t s, top;
		pid_t pid;
		uint64_t before = k.events;
		snprintf(name, sizeof name, "k%u.rb", round);
		snprintf(out, sizeof out, "k%u.dat", round);
		memset(g_side, 0, sizeof *g_side);
		memset(k.seen, 0, KILL_MAXSEQ);
		assert_int_equal(pipe(fds), 0);
		settle_threads();
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			close(fds[0]);
			kill_child(path_of(name), fds[1], 0x9e3779b97f4a7c15ull * (round + 7) ^ 0xd1b54a32d192ed03ull);
		}
		close(fds[1]);
		assert_int_equal(read(fds[0], &c, 1), 1);
		close(fds[0]);
		start_recorder(&run, &th, pidstr, sizeof pidstr, pid, out, name);
		/* the recorder first: it returns when it finds the child gone,
		 * or on an error; then the child may still be waiting for a
		 * page to be taken (kill_child, event 256) and never ends: a
		 * failure that says so, not a hang */
		assert_int_equal(pthread_join(th, NULL), 0);
		if (waitpid(pid, &status, WNOHANG) == 0) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			fail_msg("round %u: the recorder returned %d (live pages %llu) while the writer was still "
				 "running", round, run.rc, (unsigned long long)ringbuf_record_last.live_pages);
		}
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
			fail_msg("round %u: child %s %d", round, WIFEXITED(status) ? "exit" : "signal",
				 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		assert_int_equal(run.rc, RBREC_OK);
		assert_int_equal(ringbuf_record_last.recovered, 1);
		assert_int_equal(ringbuf_record_last.bad_pages, 0);
		live += ringbuf_record_last.live_pages;
		check_tracedat_fn(path_of(out), on_kev, &k);
		if (k.twice || k.torn || k.unwritten)
			fail_msg("round %u: %llu events twice, %llu torn, %llu never written", round,
				 (unsigned long long)k.twice, (unsigned long long)k.torn,
				 (unsigned long long)k.unwritten);
		top = atomic_load(&g_side->next);
		for (s = 0; s < top && s < KILL_MAXSEQ; s++) {
			if (atomic_load(&g_side->done[s]) && !k.seen[s])
				fail_msg("round %u: seq %u committed (its commit returned) but not in the trace", round, s);
			committed += atomic_load(&g_side->done[s]);
		}
		extra += (k.events - before) - 0; /* counted below against committed */
		nested += atomic_load(&g_side->nested);
		nested_kills += atomic_load(&g_side->killed_nested);
		unlink(path_of(name));
		unlink(path_of(out));
		free(run.argv[3]);
		free(run.argv[run.argc - 1]);
	}
	print_message("  %u kills (%u inside a nested writer): %llu events committed, all in the traces "
		      "(%llu events there: the others were cut inside their commit, kept whole), none twice, "
		      "none torn; %llu written by nested handlers; %llu pages taken live\n",
		      n, nested_kills, (unsigned long long)committed, (unsigned long long)extra,
		      (unsigned long long)nested, (unsigned long long)live);
	free(k.seen);
	munmap(g_side, sizeof *g_side);
}


/* ---- one change after the open, no concurrency: each failed before ----------
 * The recorder's view was validated when it opened the file; these changes
 * come after. Before the fixes: head_hint and prev were used as page indices
 * unchecked (reads far outside the mapping: SIGSEGV), the reader lock's
 * contention path found the block from c->index (SIGSEGV for a changed
 * index), and rbrec_drain retried a page the reader could not consume
 * forever (a hang). */
enum { C_HINT, C_PREV, C_READER_PAGE, C_LOCK_INDEX, C_COUNT };

static void changes_after_the_open_are_errors(void **state)
{
	unsigned k;
	(void)state;
	for (k = 0; k < C_COUNT; k++) {
		char name[32];
		struct ringbuf *wr, *rb;
		struct ringbuf__cpu *c;
		struct ringbuf_stats st;
		unsigned char page[4096];
		const void *ref;
		uint32_t i;
		int r;
		snprintf(name, sizeof name, "c%u.rb", k);
		wr = make_buffer(path_of(name), RINGBUF_MODE_PRODUCER_CONSUMER, 3000);
		assert_int_equal(ringbuf_open_file(path_of(name), RINGBUF_OPEN_RDWR, &rb), 0);
		c = ringbuf__cpu(rb, 0);
		switch (k) {
		case C_HINT:
			c->head_hint = 0x3ffffff0u;
			break;
		case C_PREV:
			for (i = 0; i <= rb->nr_pages; i++)
				ringbuf__bp(rb, 0, i)->prev = 0x3ffffff0u;
			break;
		case C_READER_PAGE:
			atomic_store(&c->reader_page, 0x3ffffff0u);
			break;
		default:
			atomic_store(&c->reader_lock, 1); /* held by someone else */
			c->index = 0x3ffffff0u;
			break;
		}
		r = ringbuf_read_page(rb, 0, page, sizeof page, 0);
		assert_true(r >= 0 || r == RINGBUF_ECORRUPT || r == RINGBUF_EBUSY);
		r = ringbuf_read_page_ref(rb, 0, &ref);
		assert_true(r >= 0 || r == RINGBUF_ECORRUPT || r == RINGBUF_EBUSY || r == RINGBUF_EAGAIN);
		assert_int_equal(ringbuf_stats(rb, &st), 0);
		if (k == C_PREV || k == C_READER_PAGE)
			assert_int_equal(ringbuf_read_page(rb, 0, page, sizeof page, 0), RINGBUF_ECORRUPT);
		ringbuf_destroy(rb);
		ringbuf_destroy(wr);
		unlink(path_of(name));
	}
}

/* A reader page that links to itself, named by the head hint (a change
 * after the open; ringbuf_recover leaves both alone): before, every read
 * went round the reader page 3n times and returned RINGBUF_EAGAIN, and
 * ringbuf-record's last drain retried that for about a minute per CPU (a
 * read-only review found it). The walk now enters the ring at the tail
 * page; a ring page that links to itself is RINGBUF_ECORRUPT (before: the
 * same RINGBUF_EAGAIN). */
static void a_reader_page_linking_to_itself(void **state)
{
	struct ringbuf *wr, *rb;
	struct ringbuf__cpu *c;
	unsigned char page[4096];
	uint32_t rp, t;
	(void)state;
	wr = make_buffer(path_of("s.rb"), RINGBUF_MODE_PRODUCER_CONSUMER, 3000);
	assert_int_equal(ringbuf_open_file(path_of("s.rb"), RINGBUF_OPEN_RDWR, &rb), 0);
	c = ringbuf__cpu(rb, 0);
	rp = atomic_load(&c->reader_page);
	atomic_store(&ringbuf__bp(rb, 0, rp)->next, (uint64_t)rp << 2);
	c->head_hint = rp;
	assert_true(ringbuf_read_page(rb, 0, page, sizeof page, 0) > 0);
	assert_true(ringbuf_read_page(rb, 0, page, sizeof page, 0) > 0);
	/* a ring page that links to itself, on the walk's way */
	t = atomic_load(&c->tail_page);
	atomic_store(&ringbuf__bp(rb, 0, t)->next, (uint64_t)t << 2);
	c->head_hint = t;
	assert_int_equal(ringbuf_read_page(rb, 0, page, sizeof page, 0), RINGBUF_ECORRUPT);
	ringbuf_destroy(rb);
	ringbuf_destroy(wr);
	unlink(path_of("s.rb"));
}

static void recorder_gives_up_on_a_page_it_cannot_take(void **state)
{
	struct ringbuf *wr, *rb;
	struct ringbuf_trace_registry lreg;
	struct ringbuf_tracedat_info info;
	struct ringbuf_tracedat *w;
	uint64_t bad = 0;
	uint32_t h;
	uint64_t link;
	(void)state;
	wr = make_buffer(path_of("g.rb"), RINGBUF_MODE_PRODUCER_CONSUMER, 3000);
	assert_int_equal(ringbuf_open_file(path_of("g.rb"), RINGBUF_OPEN_RDWR, &rb), 0);
	assert_int_equal(ringbuf_trace_load_registry(rb, &lreg), 0);
	ringbuf_tracedat_info_of(rb, &lreg, &info);
	info.version = 6;
	assert_int_equal(ringbuf_tracedat_open(path_of("g.dat"), &info, &w), 0);
	/* the head page of CPU 0 (full, not the commit page) says it holds
	 * more than a page: the reader swaps it in and refuses it, every time */
	assert_int_equal(ringbuf__find_head(rb, 0, ringbuf__cpu(rb, 0), &h, &link), 0);
	atomic_store(&ringbuf__dp(rb, 0, h)->commit, (long)rb->bsize + 64);
	assert_int_equal(rbrec_drain(w, rb, RINGBUF_READ_FULL, &bad, 1), RINGBUF_ECORRUPT);
	assert_true(bad > 0);
	ringbuf_tracedat_abort(w);
	ringbuf_trace_registry_free(&lreg);
	ringbuf_destroy(rb);
	ringbuf_destroy(wr);
}


/* The trace.dat writer's page check (A2) on times a hostile page can hold:
 * before, a running time past 2^64 and a TIME_STAMP that goes back passed
 * (pagewalk.h refused the trace: "ts overflow" in intake_calls...). */
static void page_check_refuses_times_that_wrap_or_go_back(void **state)
{
	unsigned char pg[4096];
	uint64_t ts;
	unsigned long commit;
	uint32_t w[4];
	const size_t hdr = 8 + sizeof(long);
	const int be = PW_BIG_ENDIAN;
	(void)state;
	/* one data event (type_len 1, 4 bytes) with delta 5 */
	memset(pg, 0, sizeof pg);
	w[0] = be ? (1u << 27) | 5u : (5u << 5) | 1u;
	w[1] = 42;
	memcpy(pg + hdr, w, 8);
	commit = 8;
	memcpy(pg + 8, &commit, sizeof commit);
	ts = 1000;
	memcpy(pg, &ts, 8);
	assert_int_equal(ringbuf_tracedat_check_page(pg, sizeof pg, be, sizeof(long), NULL, NULL), 0);
	ts = UINT64_MAX - 2; /* + 5: past 2^64 */
	memcpy(pg, &ts, 8);
	assert_int_equal(ringbuf_tracedat_check_page(pg, sizeof pg, be, sizeof(long), NULL, NULL), RINGBUF_ECORRUPT);
	/* a TIME_STAMP (type 31) to 100 after a page stamp of 1000: back */
	ts = 1000;
	memcpy(pg, &ts, 8);
	w[0] = be ? (31u << 27) | 100u : (100u << 5) | 31u;
	w[1] = 0;
	w[2] = be ? (1u << 27) : (0u << 5) | 1u;
	w[3] = 42;
	memcpy(pg + hdr, w, 16);
	commit = 16;
	memcpy(pg + 8, &commit, sizeof commit);
	assert_int_equal(ringbuf_tracedat_check_page(pg, sizeof pg, be, sizeof(long), NULL, NULL), RINGBUF_ECORRUPT);
	/* ... to 2000: forward, fine */
	w[0] = be ? (31u << 27) | 2000u : (2000u << 5) | 31u;
	memcpy(pg + hdr, w, 4);
	assert_int_equal(ringbuf_tracedat_check_page(pg, sizeof pg, be, sizeof(long), NULL, NULL), 0);
}

/* ---- the header's geometry changed after the open ---------------------------
 * The traced process rewrites the header of the block (through a mapping of
 * its own: any process that maps the file can) after the recorder opened and
 * validated it: the geometry (CPU count, page count and size, data size, the
 * offsets, the total size), one field at a time and all together, and the
 * process-local fields (the kind of mapping, its address, the clock). Every
 * call the recorder makes on its handle must go on with the geometry it
 * validated: the events read are exactly those written (the creator writes
 * more after the change, through its own handle), and destroying the handle
 * unmaps what the open mapped. A new open of the changed file is refused.
 * Before the private header (PRIVATE HEADER in ringbuf.h), the handle was
 * the shared header itself: the first case (ncpu) crashed in ringbuf_stats
 * (SIGSEGV), and the process-local case made the recorder call a function
 * the traced process named and free() an address it chose. */
#define G_EVENTS 640 /* make_buffer: 320 per CPU, seq 0..319 */
#define G_MORE 40    /* written by the creator after the change: 20 per CPU */

static atomic_int hostile_called;
static uint64_t hostile_clock(void *ctx)
{
	(void)ctx;
	atomic_store(&hostile_called, 1);
	return 1;
}

struct gfield {
	const char *name;
	size_t off, size;
	uint64_t v;
};
#define GF(f, v) {#f, offsetof(struct ringbuf, f), sizeof(((struct ringbuf *)0)->f), (uint64_t)(v)}
static const struct gfield gfields[] = {
	GF(ncpu, 65536),
	GF(nr_pages, 0x7ffffffe),
	GF(page_size, 1u << 30),
	GF(bsize, 64),
	GF(page_shift, 31),
	GF(max_event, 0xfffffff0u),
	GF(flags, 0xffffffffu),
	GF(cpu_off, 1ull << 44),
	GF(bpage_off, 1ull << 44),
	GF(data_off, 1ull << 44),
	GF(user_off, 1ull << 44),
	GF(user_size, 1ull << 40),
	GF(total_size, 0), /* 0: the real one + 4 GiB (what destroy unmaps) */
};
#define G_NFIELDS (sizeof gfields / sizeof gfields[0])

static void put_field(unsigned char *base, size_t off, size_t size, uint64_t v)
{
	if (off == offsetof(struct ringbuf, total_size) && v == 0)
		v = ((struct ringbuf *)(void *)base)->total_size + (1ull << 32);
	if (size == 8) {
		__atomic_store_n((uint64_t *)(void *)(base + off), v, __ATOMIC_RELAXED);
	} else {
		__atomic_store_n((uint32_t *)(void *)(base + off), (uint32_t)v, __ATOMIC_RELAXED);
	}
}

static void put_ptr(unsigned char *base, size_t off, const void *p)
{
	memcpy(base + off, &p, sizeof p);
}

/* the events of cpu from seq *next on, in order */
static void expect_hnum(const struct ringbuf_record *rec, unsigned cpu, uint32_t *next)
{
	const struct ringbuf_ev_hnum *e = rec->data;
	assert_true(rec->len >= sizeof *e);
	if (rec->cpu != cpu || e->cpu != cpu || e->seq != *next)
		fail_msg("cpu %u: got cpu %u/%u seq %u, expected seq %u", cpu, rec->cpu, e->cpu, e->seq, *next);
	(*next)++;
}

/* case k < G_NFIELDS: gfields[k]; G_NFIELDS: every geometry field;
 * G_NFIELDS + 1: the process-local ones */
static void geometry_case(unsigned k)
{
	char name[32], out[32];
	struct ringbuf *wr, *rb, *again;
	struct ringbuf_trace_registry lreg;
	struct ringbuf_tracedat_info info;
	struct ringbuf_tracedat *w;
	struct ringbuf_stats st;
	struct ringbuf_record rec;
	struct ringbuf_iter *it = NULL;
	unsigned char page[4096];
	const void *ref;
	unsigned char *base;
	uint32_t next0 = 0, i, ndata = 0;
	uint64_t taken1 = 0, total = G_EVENTS + G_MORE;
	void *probe;
	int fd, r;
	snprintf(name, sizeof name, "geo%u.rb", k);
	snprintf(out, sizeof out, "geo%u.dat", k);
	wr = make_buffer(path_of(name), RINGBUF_MODE_PRODUCER_CONSUMER, G_EVENTS);
	assert_int_equal(ringbuf_open_file(path_of(name), RINGBUF_OPEN_RDWR, &rb), 0);
	/* the traced process's own mapping of the header */
	fd = open(path_of(name), O_RDWR);
	assert_true(fd >= 0);
	base = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(base != MAP_FAILED);
	close(fd);
	if (k < G_NFIELDS) {
		put_field(base, gfields[k].off, gfields[k].size, gfields[k].v);
	} else if (k == G_NFIELDS) {
		for (i = 0; i < G_NFIELDS; i++)
			put_field(base, gfields[i].off, gfields[i].size, gfields[i].v);
	} else {
		static char fake[64];
		put_field(base, offsetof(struct ringbuf, owned), 4, 1); /* "malloc'd" */
		put_ptr(base, offsetof(struct ringbuf, mem), fake);
		put_field(base, offsetof(struct ringbuf, map_len), 8, 1ull << 46);
		put_field(base, offsetof(struct ringbuf, clock_kind), 4, RINGBUF__CLK_USER);
		put_ptr(base, offsetof(struct ringbuf, clock), (const void *)(uintptr_t)hostile_clock);
	}
	/* the creator goes on writing, through its handle */
	for (i = G_EVENTS; i < G_EVENTS + G_MORE; i++)
		assert_int_equal(trace_hnum(wr, i & 1, i & 1, i >> 1), 1);
	/* the recorder's calls, as ringbuf-record makes them */
	assert_int_equal(ringbuf_stats(rb, &st), 0);
	assert_int_equal(st.entries, total);
	(void)ringbuf_time_stamp(rb);
	assert_int_equal(ringbuf_peek(rb, 0, &rec), 1);
	expect_hnum(&rec, 0, &next0);
	next0 = 0;
	for (i = 0; i < 10; i++) {
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
		expect_hnum(&rec, 0, &next0);
	}
	r = ringbuf_read_page(rb, 1, page, sizeof page, 0);
	assert_true(r > 0);
	assert_int_equal(pw_count(page, sizeof page, false, &ndata, NULL, NULL, NULL, NULL, NULL), 0);
	taken1 += ndata;
	r = ringbuf_read_page_ref(rb, 1, &ref);
	assert_true(r >= 0 || r == RINGBUF_EAGAIN);
	if (r > 0) {
		assert_int_equal(pw_count(ref, sizeof page, false, &ndata, NULL, NULL, NULL, NULL, NULL), 0);
		taken1 += ndata;
	}
	assert_int_equal(ringbuf_iter_start(rb, 0, &it), 0);
	i = next0;
	while ((r = ringbuf_iter_next(it, &rec)) == 1)
		expect_hnum(&rec, 0, &i);
	assert_int_equal(r, 0);
	assert_int_equal(i, (G_EVENTS + G_MORE) / 2);
	ringbuf_iter_finish(it);
	/* the rest into a trace.dat */
	assert_int_equal(ringbuf_trace_load_registry(rb, &lreg), 0);
	ringbuf_tracedat_info_of(rb, &lreg, &info);
	info.version = 6;
	assert_int_equal(ringbuf_tracedat_open(path_of(out), &info, &w), 0);
	r = ringbuf_tracedat_drain(w, rb, RINGBUF_ALL_CPUS, 0);
	assert_true(r > 0);
	assert_int_equal(ringbuf_tracedat_finish(w, NULL), 0);
	assert_int_equal(check_tracedat(path_of(out)), total - next0 - taken1);
	assert_int_equal(atomic_load(&hostile_called), 0);
	assert_int_equal(ringbuf_ncpu(rb), NCPU);
	assert_int_equal(ringbuf_page_size(rb), 4096);
	ringbuf_trace_registry_free(&lreg);
	/* a new open reads the changed header: refused (the process-local
	 * fields of the file are nobody's: an open writes its own) */
	r = ringbuf_open_file(path_of(name), RINGBUF_OPEN_RDWR, &again);
	if (k <= G_NFIELDS)
		assert_true(r == RINGBUF_ECORRUPT || r == RINGBUF_ETRUNC || r == RINGBUF_EFORMAT);
	else {
		assert_int_equal(r, 0);
		ringbuf_destroy(again);
	}
	ringbuf_destroy(rb);
	/* the process is whole: destroy unmapped the block, nothing else */
	probe = malloc(4096);
	assert_non_null(probe);
	memset(probe, 1, 4096);
	free(probe);
	assert_int_equal(ringbuf_write(wr, 0, &i, sizeof i), 0);
	munmap(base, 4096);
	ringbuf_destroy(wr);
	unlink(path_of(name));
	unlink(path_of(out));
}

static void header_changed_after_the_open(void **state)
{
	const char *one = getenv("RINGBUF_TEST_GEOM_CASE"); /* run only case N */
	unsigned k;
	(void)state;
	for (k = 0; k < G_NFIELDS + 2; k++)
		if (!one || (unsigned)atoi(one) == k)
			geometry_case(k);
	print_message("  %u geometry fields changed one at a time, then all, then the process-local fields: "
		      "every read exact\n",
		      (unsigned)G_NFIELDS);
}

static int setup_all(void **state)
{
	(void)state;
	if (ringbuf_trace_register_event(&reg, &ringbuf_event_hnum) < 0 ||
	    ringbuf_trace_register_event(&reg, &ringbuf_event_kev) < 0)
		return -1;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/ringbuf-hostile-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_all(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof cmd, getenv("KEEP") ? "true %s" : "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(recorder_survives_a_mutating_writer),
		cmocka_unit_test(intake_calls_under_a_mutator_thread),
		cmocka_unit_test(kill_at_random_steps_keeps_every_committed_event),
		cmocka_unit_test(changes_after_the_open_are_errors),
		cmocka_unit_test(recorder_gives_up_on_a_page_it_cannot_take),
		cmocka_unit_test(a_reader_page_linking_to_itself),
		cmocka_unit_test(page_check_refuses_times_that_wrap_or_go_back),
		cmocka_unit_test(header_changed_after_the_open),
	};
	if (getenv("RINGBUF_TEST_GEOM_CASE")) /* one case of it, alone */
		cmocka_set_test_filter("header_changed_after_the_open");
	return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
