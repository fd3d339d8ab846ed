/* fork() with writers in flight (SPEC section 3: "the child gets a consistent
 * buffer; claims held by threads that do not exist in the child are
 * released").
 *
 * A parent with 4 writer threads writing continuously -- RINGBUF_CPU_THREAD
 * and RINGBUF_CPU_CURRENT on one buffer, an explicit index each on another,
 * small pages in overwrite mode so page crossings and head pushes never stop,
 * some events discarded -- forks from the main thread:
 *   - at random moments (RB_FORKS, default 50);
 *   - with one writer parked at each labelled step of the write path (test
 *     points), and between its reserve and its commit;
 *   - with a reader parked in the middle of a page swap.
 * In each child: both buffers validate (ringbuf__validate), no owner word
 * names a thread the child does not have (only its own tid or 0), the forking
 * thread's claim moved to the child's tid, the child writes new events with
 * RINGBUF_CPU_THREAD, RINGBUF_CPU_CURRENT and an explicit index, and reads
 * back every buffer to the end without a corrupt record; every record is a
 * whole event (checksum) and the child's own events are all there, in order.
 * The child exits with a code naming the first failed check; the parent
 * checks every child's status.
 *
 * A file-backed buffer (ringbuf_create_file, MAP_SHARED) shared by parent and
 * child: both keep tracing into different explicit indexes, at random moments
 * and with the parent's writer parked in the middle of an event; the parent's
 * events and each child's are all there afterwards, in order.
 */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"
#include "internal.h" /* the implementation's private names (IMPL: shared) */

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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "sigutil.h"

#define PERSIST RINGBUF__OWN_PERSIST
#define NWRITERS 4
#define PARK_OPEN RINGBUF__TP_END /* pseudo test point (no library point has its value): between reserve and commit */

static int env_int(const char *name, int def)
{
	const char *s = getenv(name);
	return s && *s ? atoi(s) : def;
}

/* ---- events --------------------------------------------------------------- */

struct fev {
	uint32_t pid;
	uint32_t who;  /* writer index, or 99 for a child */
	uint32_t tag;  /* 'T' thread, 'C' current, 'E' explicit (children: lower case) */
	uint32_t seq;
	uint32_t len;  /* whole payload */
	uint32_t csum; /* over everything but this field */
};

static uint32_t fev_sum(const unsigned char *p, uint32_t len)
{
	return fnv1a_except(p, len, offsetof(struct fev, csum), sizeof(struct fev));
}

static uint32_t fev_build(unsigned char *buf, uint32_t pid, uint32_t who, uint32_t tag, uint32_t seq)
{
	struct fev h = {pid, who, tag, seq, 0, 0};
	uint32_t len = sizeof h + mix(seq * 31u + who + tag) % 96;
	h.len = len;
	memcpy(buf, &h, sizeof h);
	for (uint32_t i = sizeof h; i < len; i++)
		buf[i] = (unsigned char)mix(seq ^ (i << 10) ^ (who << 20) ^ tag);
	h.csum = fev_sum(buf, len);
	memcpy(buf, &h, sizeof h);
	return len;
}

/* 1: a whole event; 0: not. */
static int fev_check(const struct ringbuf_record *rec, struct fev *out)
{
	struct fev h;
	if (rec->len < sizeof h)
		return 0;
	memcpy(&h, rec->data, sizeof h);
	if (h.len < sizeof h || h.len > sizeof h + 96 || rec->len != ((h.len + 3u) & ~3u) ||
	    fev_sum(rec->data, h.len) != h.csum)
		return 0;
	*out = h;
	return 1;
}

/* ---- the parent's writers ------------------------------------------------- */

static struct ringbuf *g_map; /* RINGBUF_CPU_THREAD and RINGBUF_CPU_CURRENT */
static struct ringbuf *g_exp; /* explicit index = writer index */
static _Atomic(int) g_stop;
static _Atomic(int) g_park_point; /* 0: none */
static _Atomic(int) g_parked;     /* a writer is parked */
static sem_t g_parked_sem, g_resume_sem;
static __thread int tls_parkable; /* this thread may park (writers, the reader) */
static _Atomic(uint64_t) g_writes;

struct writer {
	pthread_t th;
	unsigned idx;
	pid_t tid;
	uint32_t seq[3];
	uint64_t ok, fail, discards;
	int bad_rc;
};
static struct writer g_w[NWRITERS];

static void park_here(int point)
{
	int expect = point;
	if (!tls_parkable || atomic_load_explicit(&g_park_point, memory_order_relaxed) != point)
		return;
	/* one parks, once */
	if (!atomic_compare_exchange_strong(&g_park_point, &expect, -point))
		return;
	atomic_store(&g_parked, point);
	sem_post(&g_parked_sem);
	while (sem_wait(&g_resume_sem) != 0)
		;
	atomic_store(&g_parked, 0);
}

static void tp_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	(void)rb;
	(void)cpu;
	(void)ctx;
	park_here(point);
}

static void w_event(struct writer *w, struct ringbuf *rb, unsigned cpu, uint32_t tag, unsigned slot)
{
	unsigned char buf[sizeof(struct fev) + 96];
	uint32_t seq = w->seq[slot]++;
	uint32_t len = fev_build(buf, (uint32_t)getpid(), w->idx, tag, seq);
	unsigned kind = mix(seq ^ tag ^ (w->idx << 8)) % 8;
	if (kind == 0) {
		int r = ringbuf_write(rb, cpu, buf, len);
		if (r == 0)
			w->ok++;
		else if (r == RINGBUF_ENOSPC)
			w->fail++;
		else
			w->bad_rc = r;
		return;
	}
	unsigned char *p = ringbuf_reserve(rb, cpu, len);
	if (!p) {
		w->fail++;
		return;
	}
	memcpy(p, buf, len / 2);
	park_here(PARK_OPEN);
	memcpy(p + len / 2, buf + len / 2, len - len / 2);
	if (kind == 1) {
		ringbuf_discard(rb, cpu, p);
		w->discards++;
		return;
	}
	ringbuf_commit(rb, cpu, p);
	w->ok++;
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	w->tid = my_tid();
	tls_parkable = 1;
	ringbuf_thread_init(g_map);
	while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
		w_event(w, g_map, RINGBUF_CPU_THREAD, 'T', 0);
		w_event(w, g_map, RINGBUF_CPU_CURRENT, 'C', 1);
		w_event(w, g_exp, w->idx, 'E', 2);
		atomic_fetch_add_explicit(&g_writes, 1, memory_order_relaxed);
		if ((w->seq[0] & 127) == 0)
			sched_yield();
	}
	return NULL;
}

/* ---- the child's checks ---------------------------------------------------- */

enum child_fail {
	CF_OK = 0,
	CF_VALIDATE_MAP = 10,
	CF_VALIDATE_EXP,
	CF_OWNER_FOREIGN,
	CF_OWNER_MAIN_CLAIM,
	CF_THREAD_CPU,
	CF_COMMITTING,
	CF_WRITE_THREAD,
	CF_WRITE_CURRENT,
	CF_WRITE_EXPLICIT,
	CF_CONSUME_ERROR,
	CF_CORRUPT_RECORD,
	CF_CHILD_EVENTS,
	CF_VALIDATE_AFTER,
	CF_OWNER_AFTER,
	CF_OWNER_EVENT,
};

static const char *cf_name(int code)
{
	switch (code) {
	case CF_OK: return "ok";
	case CF_VALIDATE_MAP: return "mapped-mode buffer does not validate";
	case CF_VALIDATE_EXP: return "explicit-index buffer does not validate";
	case CF_OWNER_FOREIGN: return "an owner word names a thread the child does not have";
	case CF_OWNER_MAIN_CLAIM: return "the forking thread's claim is not the child's";
	case CF_THREAD_CPU: return "ringbuf_thread_cpu changed in the child";
	case CF_COMMITTING: return "a buffer is left with writers in flight (committing != 0)";
	case CF_WRITE_THREAD: return "a RINGBUF_CPU_THREAD write failed in the child";
	case CF_WRITE_CURRENT: return "a RINGBUF_CPU_CURRENT write failed in the child";
	case CF_WRITE_EXPLICIT: return "an explicit-index write failed in the child";
	case CF_CONSUME_ERROR: return "ringbuf_consume returned an error";
	case CF_CORRUPT_RECORD: return "a record read back is not a whole event";
	case CF_CHILD_EVENTS: return "the child's own events are not all there, in order";
	case CF_VALIDATE_AFTER: return "a buffer does not validate after the child's writes and reads";
	case CF_OWNER_AFTER: return "an owner word is left set after the child's writes";
	case CF_OWNER_EVENT: return "the child's RINGBUF_CPU_CURRENT event holds a word that names another thread";
	default: return "killed or crashed";
	}
}

static char g_child_msg[256];
static void child_say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(g_child_msg, sizeof g_child_msg, fmt, ap);
	va_end(ap);
	ssize_t r = write(2, g_child_msg, strlen(g_child_msg));
	(void)r;
}

#define CHILD_K 20
_Static_assert(CHILD_K <= 32, "child_read_all: one bit per seq");

/* Read every event of rb; count the child's own events (pid == me) per tag
 * and check they come in order on each CPU, each seq once. Not in order
 * across CPUs: RINGBUF_CPU_CURRENT writes into the buffer of the CPU the
 * child runs on, and a child that migrates between its 'c' events leaves
 * 0..9 on one CPU and 10..19 on the other (TSan's CI run failed so: "mapped
 * cpu 0: own event c seq 10, expected 0", the child's events all there).
 * Returns 0 or a failure code. */
static int child_read_all(struct ringbuf *rb, const char *name, uint32_t me, uint32_t counts[3],
			  const uint32_t tags[3])
{
	struct ringbuf_record rec;
	uint32_t seen[3] = {0, 0, 0}; /* bit seq: read (CHILD_K <= 32) */
	for (unsigned cpu = 0; cpu < ringbuf_ncpu(rb); cpu++) {
		int r;
		uint32_t next[3] = {0, 0, 0}; /* on this CPU: the lowest seq still in order */
		while ((r = ringbuf_consume(rb, cpu, &rec)) == 1) {
			struct fev h;
			if (!fev_check(&rec, &h)) {
				child_say("  child: %s cpu %u: a record that is not a whole event (len %zu)\n", name,
					  cpu, rec.len);
				return CF_CORRUPT_RECORD;
			}
			if (h.pid != me)
				continue;
			for (int k = 0; k < 3; k++)
				if (h.tag == tags[k]) {
					if (h.seq >= CHILD_K || h.seq < next[k] || (seen[k] >> h.seq & 1u)) {
						child_say("  child: %s cpu %u: own event %c seq %u after %u on this "
							  "CPU (%s)\n", name, cpu, h.tag, h.seq, next[k],
							  h.seq < CHILD_K && (seen[k] >> h.seq & 1u) ? "twice"
												 : "out of order");
						return CF_CHILD_EVENTS;
					}
					seen[k] |= 1u << h.seq;
					next[k] = h.seq + 1;
					counts[k]++;
				}
		}
		if (r < 0) {
			child_say("  child: %s cpu %u: consume: %s\n", name, cpu, ringbuf_strerror(r));
			return CF_CONSUME_ERROR;
		}
	}
	return 0;
}

/* Halfway through its writes the child moves to another CPU, so that its
 * RINGBUF_CPU_CURRENT events are on two CPUs' buffers (when it runs on at
 * least two CPUs): child_read_all must take them in order per CPU, not
 * across CPUs. Best effort: without a second CPU, or if the affinity cannot
 * be set, the child stays. */
static void child_migrate(void)
{
	cpu_set_t all, one;
	int here = sched_getcpu(), c;
	if (here < 0 || sched_getaffinity(0, sizeof all, &all) != 0)
		return;
	for (c = 0; c < CPU_SETSIZE; c++)
		if (c != here && CPU_ISSET(c, &all)) {
			CPU_ZERO(&one);
			CPU_SET(c, &one);
			(void)sched_setaffinity(0, sizeof one, &one);
			return;
		}
}

static int child_check(int main_claim)
{
	uint32_t me = (uint32_t)getpid(), tid = (uint32_t)my_tid();
	unsigned char buf[sizeof(struct fev) + 96];
	int r;
	if ((r = ringbuf__validate(g_map, g_map->total_size)) != 0) {
		child_say("  child: mapped buffer: validate: %s\n", ringbuf_strerror(r));
		return CF_VALIDATE_MAP;
	}
	if ((r = ringbuf__validate(g_exp, g_exp->total_size)) != 0) {
		child_say("  child: explicit buffer: validate: %s\n", ringbuf_strerror(r));
		return CF_VALIDATE_EXP;
	}
	for (unsigned c = 0; c < ringbuf_ncpu(g_map); c++) {
		uint32_t o = atomic_load(&ringbuf__cpu(g_map, c)->owner);
		if (o != 0 && (o & ~PERSIST) != tid) {
			child_say("  child: cpu %u owner %#x (child tid %u)\n", c, o, tid);
			return CF_OWNER_FOREIGN;
		}
		if ((int)c == main_claim && o != (tid | PERSIST)) {
			child_say("  child: forking thread's claim: owner %#x, expected %#x\n", o, tid | PERSIST);
			return CF_OWNER_MAIN_CLAIM;
		}
	}
	if (ringbuf_thread_cpu(g_map) != main_claim)
		return CF_THREAD_CPU;
	for (unsigned c = 0; c < ringbuf_ncpu(g_map); c++)
		if (atomic_load(&ringbuf__cpu(g_map, c)->committing) != 0)
			return CF_COMMITTING;
	for (unsigned c = 0; c < ringbuf_ncpu(g_exp); c++)
		if (atomic_load(&ringbuf__cpu(g_exp, c)->committing) != 0)
			return CF_COMMITTING;

	/* new events in every mode (the parent's writers' explicit index 0 is
	 * free here: they do not exist in the child) */
	for (uint32_t i = 0; i < CHILD_K; i++) {
		uint32_t len;
		if (i == CHILD_K / 2)
			child_migrate();
		len = fev_build(buf, me, 99, 't', i);
		if ((r = ringbuf_write(g_map, RINGBUF_CPU_THREAD, buf, len)) != 0) {
			child_say("  child: THREAD write: %s\n", ringbuf_strerror(r));
			return CF_WRITE_THREAD;
		}
		len = fev_build(buf, me, 99, 'c', i);
		{
			/* the inline claim's owner id is the child's: the
			 * forking thread's [TCUR] slot (armed by its event
			 * before the fork) named the parent's tid */
			void *p = ringbuf_reserve(g_map, RINGBUF_CPU_CURRENT, len);
			if (!p) {
				child_say("  child: CURRENT reserve failed\n");
				return CF_WRITE_CURRENT;
			}
			for (unsigned c = 0; c < ringbuf_ncpu(g_map); c++) {
				uint32_t o = (uint32_t)atomic_load(&ringbuf__cpu(g_map, c)->owner);
				if (o != 0 && (o & ~PERSIST) != tid) {
					child_say("  child: in its event, cpu %u owner %#x (child tid %u)\n", c, o, tid);
					return CF_OWNER_EVENT;
				}
			}
			memcpy(p, buf, len);
			ringbuf_commit(g_map, RINGBUF_CPU_CURRENT, p);
		}
		len = fev_build(buf, me, 99, 'e', i);
		if ((r = ringbuf_write(g_exp, 0, buf, len)) != 0) {
			child_say("  child: explicit write: %s\n", ringbuf_strerror(r));
			return CF_WRITE_EXPLICIT;
		}
	}
	for (unsigned c = 0; c < ringbuf_ncpu(g_map); c++) {
		uint32_t o = atomic_load(&ringbuf__cpu(g_map, c)->owner);
		if (o != 0 && !((int)c == main_claim && o == (tid | PERSIST)))
			return CF_OWNER_AFTER;
	}
	uint32_t counts[3] = {0, 0, 0};
	const uint32_t tags_map[3] = {'t', 'c', 0}, tags_exp[3] = {'e', 0, 0};
	if ((r = child_read_all(g_map, "mapped", me, counts, tags_map)) != 0)
		return r;
	uint32_t counts_e[3] = {0, 0, 0};
	if ((r = child_read_all(g_exp, "explicit", me, counts_e, tags_exp)) != 0)
		return r;
	/* overwrite mode: the child wrote less than one ring, so all of it is there */
	if (counts[0] != CHILD_K || counts[1] != CHILD_K || counts_e[0] != CHILD_K) {
		child_say("  child: own events read back: %u %u %u of %u\n", counts[0], counts[1], counts_e[0],
			  CHILD_K);
		return CF_CHILD_EVENTS;
	}
	if (ringbuf__validate(g_map, g_map->total_size) != 0 || ringbuf__validate(g_exp, g_exp->total_size) != 0)
		return CF_VALIDATE_AFTER;
	return 0;
}

/* Fork; the child runs child_check and exits with its code. Returns the
 * child's exit code (or 200 + signal). */
static int fork_and_check(int main_claim)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return 300;
	if (pid == 0)
		_exit(child_check(main_claim));
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 200 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static int setup_buffers(void)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	cfg.ncpu = 8;
	cfg.page_size = 256;
	cfg.size_per_cpu = 32 * 256; /* small: head pushes all the time */
	cfg.mode = RINGBUF_MODE_OVERWRITE;
	if (ringbuf_create(&cfg, &g_map) != 0)
		return -1;
	cfg.ncpu = NWRITERS;
	if (ringbuf_create(&cfg, &g_exp) != 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	ringbuf__set_testpoint_hook(NULL, NULL);
	ringbuf_set_warn_hook(NULL, NULL);
	if (g_map) {
		ringbuf_thread_release(g_map);
		ringbuf_destroy(g_map);
	}
	if (g_exp)
		ringbuf_destroy(g_exp);
	g_map = g_exp = NULL;
	return 0;
}

static void start_writers(void)
{
	atomic_store(&g_stop, 0);
	atomic_store(&g_park_point, 0);
	atomic_store(&g_writes, 0);
	sem_init(&g_parked_sem, 0, 0);
	sem_init(&g_resume_sem, 0, 0);
	/* installed once, before the threads start, removed after they stop */
	ringbuf__set_testpoint_hook(tp_hook, NULL);
	for (unsigned i = 0; i < NWRITERS; i++) {
		memset(&g_w[i], 0, sizeof g_w[i]);
		g_w[i].idx = i;
		assert_int_equal(pthread_create(&g_w[i].th, NULL, writer_main, &g_w[i]), 0);
	}
	/* let them get going */
	while (atomic_load(&g_writes) < 1000)
		sched_yield();
}

static void stop_writers(void)
{
	atomic_store(&g_stop, 1);
	atomic_store(&g_park_point, 0);
	for (unsigned i = 0; i < NWRITERS; i++)
		pthread_join(g_w[i].th, NULL);
	ringbuf__set_testpoint_hook(NULL, NULL);
	sem_destroy(&g_parked_sem);
	sem_destroy(&g_resume_sem);
	for (unsigned i = 0; i < NWRITERS; i++)
		assert_int_equal(g_w[i].bad_rc, 0);
}

/* The parent's own buffers after its writers stopped: they validate, and
 * every record reads back whole. */
static void parent_reads_everything(void)
{
	struct ringbuf_record rec;
	struct fev h;
	struct ringbuf *rbs[2] = {g_map, g_exp};
	for (int b = 0; b < 2; b++) {
		assert_int_equal(ringbuf__validate(rbs[b], rbs[b]->total_size), 0);
		for (unsigned cpu = 0; cpu < ringbuf_ncpu(rbs[b]); cpu++) {
			int r;
			assert_int_equal(atomic_load(&ringbuf__cpu(rbs[b], cpu)->committing), 0);
			while ((r = ringbuf_consume(rbs[b], cpu, &rec)) == 1)
				assert_true(fev_check(&rec, &h));
			assert_int_equal(r, 0);
		}
	}
}

static int main_claim_setup(void)
{
	unsigned char buf[sizeof(struct fev) + 96];
	uint32_t len = fev_build(buf, (uint32_t)getpid(), 98, 'M', 0);
	assert_int_equal(ringbuf_write(g_map, RINGBUF_CPU_THREAD, buf, len), 0);
	/* and a RINGBUF_CPU_CURRENT event of its own (its inline path armed:
	 * the child's events must not take words in the parent's name) */
	assert_int_equal(ringbuf_write(g_map, RINGBUF_CPU_CURRENT, buf, len), 0);
	assert_int_equal(ringbuf_write(g_map, RINGBUF_CPU_CURRENT, buf, len), 0);
	int claim = ringbuf_thread_cpu(g_map);
	assert_true(claim >= 0);
	return claim;
}

static void fork_at_random_moments_child_buffers_are_consistent(void **state)
{
	(void)state;
	int nforks = env_int("RB_FORKS", 50), failed = 0, first = 0, mid = 0;
	assert_int_equal(setup_buffers(), 0);
	int claim = main_claim_setup(); /* the forking thread holds a claim too */
	start_writers();
	for (int i = 0; i < nforks; i++) {
		struct timespec nap = {0, (long)(mix((uint32_t)i) % 2000) * 1000L};
		nanosleep(&nap, NULL);
		/* (a sample taken just before: some writer was inside an event) */
		for (unsigned c = 0; c < 8; c++)
			if (atomic_load(&ringbuf__cpu(g_map, c)->committing) ||
			    (c < NWRITERS && atomic_load(&ringbuf__cpu(g_exp, c)->committing))) {
				mid++;
				break;
			}
		int code = fork_and_check(claim);
		if (code) {
			if (!failed++)
				first = code;
			print_message("  fork %d: child failed: %s (%d)\n", i, cf_name(code), code);
		}
	}
	stop_writers();
	print_message("  %d forks with 4 writers running (%d with a writer inside an event just before), "
		      "%d children failed\n",
		      nforks, mid, failed);
	if (failed)
		fail_msg("%d of %d children failed, first: %s", failed, nforks, cf_name(first));
	parent_reads_everything();
}

static const struct {
	int point;
	const char *name;
} g_points[] = {
	{RINGBUF__TP_A_TIME, "A_TIME"},
	{RINGBUF__TP_B_BEFORE, "B_BEFORE"},
	{RINGBUF__TP_C_RESERVED, "C_RESERVED"},
	{RINGBUF__TP_D_WRITE_STAMP, "D_WRITE_STAMP"},
	{PARK_OPEN, "reserved, payload half written"},
	{RINGBUF__TP_CROSS_CLAIMED, "CROSS_CLAIMED"},
	{RINGBUF__TP_CROSS_PADDED, "CROSS_PADDED"},
	{RINGBUF__TP_MOVE_TAIL, "MOVE_TAIL"},
	{RINGBUF__TP_H1_COUNTED, "H1_COUNTED"},
	{RINGBUF__TP_H1_UPDATE, "H1_UPDATE"},
	{RINGBUF__TP_H2_NEW_HEAD, "H2_NEW_HEAD"},
	{RINGBUF__TP_H3_DONE, "H3_DONE"},
	{RINGBUF__TP_U1_INTCNT, "U1_INTCNT"},
	{RINGBUF__TP_U2_RESET, "U2_RESET"},
	{RINGBUF__TP_U3_MOVED, "U3_MOVED"},
	{RINGBUF__TP_COMMIT_PAGE, "COMMIT_PAGE"},
	{RINGBUF__TP_COMMIT_END, "COMMIT_END"},
	{RINGBUF__TP_DISCARD_INVAL, "DISCARD_INVAL"},
};
#define NPOINTS (sizeof g_points / sizeof g_points[0])

static void fork_with_a_writer_parked_at_each_write_step_child_buffers_are_consistent(void **state)
{
	(void)state;
	int failed = 0, missed = 0, forks = 0;
	char first[128] = "";
	assert_int_equal(setup_buffers(), 0);
	int claim = main_claim_setup();
	start_writers();
	for (unsigned i = 0; i < NPOINTS; i++) {
		/* three rounds per point: the parked writer's mode differs */
		for (int round = 0; round < 3; round++) {
			atomic_store(&g_park_point, g_points[i].point);
			if (sem_wait_ms(&g_parked_sem, -1) != 0) {
				int expect = g_points[i].point;
				if (atomic_compare_exchange_strong(&g_park_point, &expect, 0)) {
					missed++;
					print_message("  %s: no writer got there\n", g_points[i].name);
					break;
				}
				sem_wait(&g_parked_sem); /* it parked just now */
			}
			int code = fork_and_check(claim);
			forks++;
			atomic_store(&g_park_point, 0);
			sem_post(&g_resume_sem);
			if (code) {
				if (!failed++)
					snprintf(first, sizeof first, "%s: %s", g_points[i].name, cf_name(code));
				print_message("  writer parked at %s: child failed: %s (%d)\n", g_points[i].name,
					      cf_name(code), code);
			}
			while (atomic_load(&g_parked))
				sched_yield();
		}
	}
	stop_writers();
	print_message("  %d forks, each with a writer parked at one of %u steps, %d children failed\n",
		      forks, (unsigned)NPOINTS, failed);
	if (failed)
		fail_msg("%d children failed, first: %s", failed, first);
	assert_int_equal(missed, 0);
	parent_reads_everything();
}

/* A reader parked between S2 (reader page published) and S3 (the CAS that
 * swaps it into the ring) when the main thread forks: the child has no
 * reader, so it must not be left with a half-swapped ring. */
static void *reader_main(void *arg)
{
	(void)arg;
	struct ringbuf_record rec;
	tls_parkable = 1;
	while (!atomic_load(&g_stop))
		for (unsigned cpu = 0; cpu < ringbuf_ncpu(g_map); cpu++)
			while (ringbuf_consume(g_map, cpu, &rec) == 1)
				;
	return NULL;
}

static void fork_with_a_reader_parked_in_a_page_swap_child_buffers_are_consistent(void **state)
{
	(void)state;
	int failed = 0;
	assert_int_equal(setup_buffers(), 0);
	int claim = main_claim_setup();
	start_writers();
	pthread_t rt;
	assert_int_equal(pthread_create(&rt, NULL, reader_main, NULL), 0);
	for (int round = 0; round < 5; round++) {
		atomic_store(&g_park_point, RINGBUF__TP_READER_S2);
		assert_int_equal(sem_wait_ms(&g_parked_sem, -1), 0);
		int code = fork_and_check(claim);
		atomic_store(&g_park_point, 0);
		sem_post(&g_resume_sem);
		if (code) {
			failed++;
			print_message("  reader parked at READER_S2: child failed: %s (%d)\n", cf_name(code), code);
		}
		while (atomic_load(&g_parked))
			sched_yield();
	}
	atomic_store(&g_stop, 1);
	pthread_join(rt, NULL);
	stop_writers();
	if (failed)
		fail_msg("%d of 5 children failed", failed);
	parent_reads_everything();
}

/* ---- file-backed buffer shared with the child ------------------------------ */

static char g_path[256];
static struct ringbuf *g_file;
struct fwriter {
	pthread_t th;
	uint32_t seq;
	uint64_t ok, fail;
	int bad_rc;
};
static struct fwriter g_fw;

static void *file_writer(void *arg)
{
	struct fwriter *w = arg;
	unsigned char buf[sizeof(struct fev) + 96];
	tls_parkable = 1;
	while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
		uint32_t len = fev_build(buf, (uint32_t)getpid(), 0, 'P', w->seq);
		unsigned char *p = ringbuf_reserve(g_file, 0, len);
		if (!p) {
			w->fail++;
			w->seq++;
			continue;
		}
		memcpy(p, buf, len / 2);
		park_here(PARK_OPEN);
		memcpy(p + len / 2, buf + len / 2, len - len / 2);
		ringbuf_commit(g_file, 0, p);
		w->ok++;
		w->seq++;
		atomic_fetch_add_explicit(&g_writes, 1, memory_order_relaxed);
		if ((w->seq & 63) == 0) {
			struct timespec nap = {0, 20000};
			nanosleep(&nap, NULL);
		}
	}
	return NULL;
}

#define FILE_CHILD_N 500

static void file_child(uint32_t k)
{
	unsigned char buf[sizeof(struct fev) + 96];
	for (uint32_t i = 0; i < FILE_CHILD_N; i++) {
		uint32_t len = fev_build(buf, (uint32_t)getpid(), 1, 'K', k * FILE_CHILD_N + i);
		if (ringbuf_write(g_file, 1, buf, len) != 0)
			_exit(CF_WRITE_EXPLICIT);
	}
	_exit(0);
}

static int file_fork(uint32_t k)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return 300;
	if (pid == 0)
		file_child(k);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 200 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static int file_teardown(void **state)
{
	(void)state;
	ringbuf__set_testpoint_hook(NULL, NULL);
	if (g_file) {
		ringbuf_thread_release(g_file);
		ringbuf_destroy(g_file);
	}
	g_file = NULL;
	if (g_path[0])
		unlink(g_path);
	g_path[0] = 0;
	return 0;
}

/* What the shared block holds so far, read by the parent: its own events in
 * order (and as many as it committed), each child's in order. */
struct file_read {
	uint64_t pread, pbad, porder, kread, kbad;
	uint32_t pnext, knext;
	int r0, r1;
};

static void file_read_more(struct file_read *fr)
{
	struct ringbuf_record rec;
	struct fev h;
	int r;
	while ((r = ringbuf_consume(g_file, 0, &rec)) == 1) {
		if (!fev_check(&rec, &h) || h.tag != 'P') {
			fr->pbad++;
			continue;
		}
		if (fr->pread && h.seq < fr->pnext)
			fr->porder++;
		fr->pnext = h.seq + 1;
		fr->pread++;
	}
	fr->r0 = r;
	while ((r = ringbuf_consume(g_file, 1, &rec)) == 1) {
		if (!fev_check(&rec, &h) || h.tag != 'K' || h.seq != fr->knext) {
			fr->kbad++;
			continue;
		}
		fr->knext++;
		fr->kread++;
	}
	fr->r1 = r;
}

static void file_start_writer(void)
{
	atomic_store(&g_stop, 0);
	atomic_store(&g_writes, 0);
	assert_int_equal(pthread_create(&g_fw.th, NULL, file_writer, &g_fw), 0);
	while (atomic_load(&g_writes) < 200)
		sched_yield();
}

/* The body runs in a process of its own (see below). 0 or a failure code;
 * what went wrong is printed. */
static int file_shared_body(void)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	int nforks = env_int("RB_FILE_FORKS", 20);
	struct file_read fr;
	uint32_t k = 0;
	cfg.ncpu = 2;
	cfg.page_size = 1024;
	cfg.size_per_cpu = 8u << 20; /* producer/consumer, big enough: nothing is lost */
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
	if (ringbuf_create_file(g_path, &cfg, &g_file) != 0)
		return 1;
	memset(&g_fw, 0, sizeof g_fw);
	memset(&fr, 0, sizeof fr);
	atomic_store(&g_park_point, 0);
	sem_init(&g_parked_sem, 0, 0);
	sem_init(&g_resume_sem, 0, 0);
	ringbuf__set_testpoint_hook(tp_hook, NULL);

	/* 1. the parent's writer parked in the middle of its event while a child
	 * forks, writes to index 1 and exits; then the writer finishes that
	 * event and stops (so that a broken state cannot crash this process) */
	for (int i = 0; i < 3; i++, k++) {
		file_start_writer();
		atomic_store(&g_park_point, PARK_OPEN);
		if (sem_wait_ms(&g_parked_sem, -1) != 0)
			return 2;
		uint32_t before = atomic_load(&ringbuf__cpu(g_file, 0)->committing);
		int code = file_fork(k);
		uint32_t after = atomic_load(&ringbuf__cpu(g_file, 0)->committing);
		atomic_store(&g_stop, 1);
		atomic_store(&g_park_point, 0);
		sem_post(&g_resume_sem);
		pthread_join(g_fw.th, NULL);
		uint32_t final = atomic_load(&ringbuf__cpu(g_file, 0)->committing);
		uint64_t had = fr.pread;
		file_read_more(&fr);
		printf("  parent writer parked in its event, child %u forked: child exit %d; parent's "
		       "committing %u before the fork, %u after the child ran, %u after the parent's "
		       "commit; parent events %llu committed, %llu read back\n",
		       k, code, before, after, final, (unsigned long long)g_fw.ok, (unsigned long long)fr.pread);
		(void)had;
		if (code)
			return 3;
		if (after != before || final != 0)
			return 4; /* the child changed the parent's live writer state */
		if (fr.pread != g_fw.ok || fr.pbad || fr.porder || fr.r0 || fr.r1 || fr.kbad ||
		    fr.kread != (uint64_t)(k + 1) * FILE_CHILD_N)
			return 5;
	}
	/* 2. forks at random moments while the parent writes */
	file_start_writer();
	for (int i = 0; i < nforks; i++, k++) {
		struct timespec nap = {0, (long)(mix((uint32_t)i) % 2000) * 1000L};
		nanosleep(&nap, NULL);
		int code = file_fork(k);
		if (code) {
			printf("  file child %u failed: %d\n", k, code);
			return 6;
		}
	}
	atomic_store(&g_stop, 1);
	pthread_join(g_fw.th, NULL);
	ringbuf__set_testpoint_hook(NULL, NULL);
	file_read_more(&fr);
	uint32_t c0 = atomic_load(&ringbuf__cpu(g_file, 0)->committing),
		 c1 = atomic_load(&ringbuf__cpu(g_file, 1)->committing);
	int v = ringbuf__validate(g_file, g_file->total_size);
	struct ringbuf_stats st;
	ringbuf_stats_cpu(g_file, 0, &st);
	printf("  %u children in all: parent committed %llu (%llu dropped), read back %llu (%llu not "
	       "whole, %llu out of order); children wrote %u, read back %llu in order (%llu wrong); "
	       "committing %u %u, validate %d\n",
	       k, (unsigned long long)g_fw.ok, (unsigned long long)g_fw.fail, (unsigned long long)fr.pread,
	       (unsigned long long)fr.pbad, (unsigned long long)fr.porder, k * FILE_CHILD_N,
	       (unsigned long long)fr.kread, (unsigned long long)fr.kbad, c0, c1, v);
	if (v || c0 || c1 || fr.r0 || fr.r1 || fr.pbad || fr.porder || fr.kbad)
		return 7;
	if (fr.pread != g_fw.ok || g_fw.fail != st.dropped_events + st.commit_overrun)
		return 8;
	if (fr.kread != (uint64_t)k * FILE_CHILD_N)
		return 9;
	return 0;
}

static void file_backed_buffer_shared_with_children_both_trace_into_their_own_index(void **state)
{
	(void)state;
	snprintf(g_path, sizeof g_path, "/tmp/test_fork_%d.rb", (int)getpid());
	/* In a process of its own: if a child's fork handler breaks the
	 * parent's live writer state, the parent's next reserve can crash. */
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int code = file_shared_body();
		fflush(NULL);
		_exit(code);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	unlink(g_path);
	g_path[0] = 0;
	if (WIFSIGNALED(st))
		fail_msg("the tracing process was killed by signal %d", WTERMSIG(st));
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st))
		fail_msg("failed at check %d (see above)", WEXITSTATUS(st));
}

/* The parent's RINGBUF_CPU_THREAD claims on a shared (file-backed) block
 * belong to live threads of the parent: a child that forks must neither
 * release them nor take them over in the shared memory. */
static sem_t g_claim_ready, g_claim_go;
static _Atomic(int) g_claim_cpu;
static void *claim_holder(void *arg)
{
	(void)arg;
	unsigned char buf[sizeof(struct fev) + 96];
	uint32_t len = fev_build(buf, (uint32_t)getpid(), 1, 'H', 0);
	if (ringbuf_write(g_file, RINGBUF_CPU_THREAD, buf, len) == 0)
		atomic_store(&g_claim_cpu, ringbuf_thread_cpu(g_file));
	sem_post(&g_claim_ready);
	sem_wait(&g_claim_go);
	ringbuf_thread_release(g_file);
	return NULL;
}

static void file_backed_buffer_fork_keeps_the_parents_thread_claims(void **state)
{
	(void)state;
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	pthread_t th;
	snprintf(g_path, sizeof g_path, "/tmp/test_fork_claim_%d.rb", (int)getpid());
	cfg.ncpu = 2;
	cfg.page_size = 1024;
	cfg.size_per_cpu = 64 << 10;
	assert_int_equal(ringbuf_create_file(g_path, &cfg, &g_file), 0);
	unsigned char buf[sizeof(struct fev) + 96];
	uint32_t len = fev_build(buf, (uint32_t)getpid(), 0, 'M', 0);
	assert_int_equal(ringbuf_write(g_file, RINGBUF_CPU_THREAD, buf, len), 0);
	int x = ringbuf_thread_cpu(g_file); /* the forking thread's claim */
	assert_true(x >= 0);
	sem_init(&g_claim_ready, 0, 0);
	sem_init(&g_claim_go, 0, 0);
	atomic_store(&g_claim_cpu, -1);
	assert_int_equal(pthread_create(&th, NULL, claim_holder, NULL), 0);
	sem_wait(&g_claim_ready);
	int y = atomic_load(&g_claim_cpu); /* another live thread's claim */
	assert_int_equal(y, 1 - x);
	uint32_t ox = atomic_load(&ringbuf__cpu(g_file, (unsigned)x)->owner);
	uint32_t oy = atomic_load(&ringbuf__cpu(g_file, (unsigned)y)->owner);
	assert_int_equal(ox, (uint32_t)my_tid() | PERSIST);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* the child's thread forgot the parent's claims in the shared
		 * block, its claim word too ([TCLAIM] K0 in the fork child): its
		 * write finds every buffer claimed by the parent's live threads
		 * and is dropped (counted), not written into the forking
		 * thread's buffer through the inherited word (exit 3: it was) */
		len = fev_build(buf, (uint32_t)getpid(), 1, 'C', 0);
		_exit(ringbuf_write(g_file, RINGBUF_CPU_THREAD, buf, len) == 0 ? 3 : 0);
	}
	int st;
	waitpid(pid, &st, 0);
	uint32_t ox2 = atomic_load(&ringbuf__cpu(g_file, (unsigned)x)->owner);
	uint32_t oy2 = atomic_load(&ringbuf__cpu(g_file, (unsigned)y)->owner);
	sem_post(&g_claim_go);
	pthread_join(th, NULL);
	sem_destroy(&g_claim_ready);
	sem_destroy(&g_claim_go);
	print_message("  forking thread's claim (cpu %d): owner %#x before the fork, %#x after the child "
		      "ran (child pid %d); other thread's claim (cpu %d): %#x before, %#x after\n",
		      x, ox, ox2, (int)pid, y, oy, oy2);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(ox2, ox);
	assert_int_equal(oy2, oy);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(fork_at_random_moments_child_buffers_are_consistent, teardown),
		cmocka_unit_test_teardown(
			fork_with_a_writer_parked_at_each_write_step_child_buffers_are_consistent, teardown),
		cmocka_unit_test_teardown(
			fork_with_a_reader_parked_in_a_page_swap_child_buffers_are_consistent, teardown),
		cmocka_unit_test_teardown(
			file_backed_buffer_shared_with_children_both_trace_into_their_own_index, file_teardown),
		cmocka_unit_test_teardown(file_backed_buffer_fork_keeps_the_parents_thread_claims,
					  file_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
