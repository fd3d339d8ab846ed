/* soak.c - signal-torture soak test (`make soak`) and cross-thread stress
 * (`make stress`); neither is part of `make test`.
 *
 *   build/tests/soak [seconds]            (default: $SOAK_SECONDS, else 600)
 *   build/tests/soak --stress [seconds]   (default: $STRESS_SECONDS, else 300;
 *                                          STRESS_ONLY=n runs only configuration n)
 *
 * Runs phases of about SOAK_PHASE_SECONDS (default 10) until the time is up,
 * cycling through configurations (overwrite / producer-consumer, page sizes
 * 256 .. 4096, delta / absolute time stamps, 4- / 8-byte alignment). In each
 * phase, for each of SOAK_CPUS (default 2) CPU buffers:
 *   - a writer thread (explicit cpu index = its buffer) writes events
 *     continuously;
 *   - a per-thread timer (SIGEV_THREAD_ID) sends it SIGUSR1 ("IRQ") every
 *     SOAK_IRQ_US (default 50) us; the handler writes 1-3 events, and every
 *     fourth time raises SIGUSR2 ("NMI") on itself while its own event is
 *     still open; the NMI handler writes an event and every fourth time
 *     raises SIGRTMIN (a third level) while its event is open. With the
 *     writer's own event open that is four writers nested on one buffer.
 * A reader thread consumes all CPU buffers (ringbuf_consume, and every
 * eighth round a whole page, re-parsed by tests/pagewalk.h, with
 * ringbuf_read_page, with RINGBUF_READ_FULL, lent by ringbuf_read_page_ref,
 * or lent else copied: the kinds in turn, mixed on each CPU); an iterator
 * thread walks them without consuming.
 *
 * Every event carries (cpu, nesting level, sequence, length, checksum). The
 * readers check: payload intact, right buffer, sequence per (cpu, level)
 * increasing, time stamps never backwards per CPU. At the end of each phase,
 * per CPU: committed == read + overwritten (overrun); every sequence gap is an
 * event lost and counted (overrun + dropped_events + commit_overrun), exactly;
 * every failed reserve counted; nothing left; in overwrite mode the writer is
 * never refused more than STALL_LIMIT times in a row (recording must not
 * stall). Totals are printed at the end.
 *
 * --stress cycles through cross-thread configurations instead, where the
 * threads of different CPUs meet: a merged reader (ringbuf_consume_merged) and
 * an all-CPU iterator that must never go back in time across CPUs (zero
 * inversions, counted and reported), buffer counts of 66 and 256 with the
 * writers on the highest buffers, and a control thread calling record_off /
 * record_on, record_disable_cpu / enable_cpu and set_mode (accounting still
 * exact: refused writes are counted in disabled_events) or ringbuf_reset_cpu
 * (events are thrown away on purpose: integrity, order and no crash/ECORRUPT
 * are checked, not the counts) while writers and their signal handlers write.
 *
 * Exit status 0 when everything held, 1 on a failed check, 2 on a hang.
 */
#define _GNU_SOURCE 1
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pagewalk.h"
#include "sigutil.h"

#define MAXW 16    /* writer threads */
#define MAXBUF 256 /* CPU buffers */
#define NLEVEL 4 /* 0 thread, 1 IRQ, 2 NMI, 3 third level */
#define MAX_PAYLOAD 240
/* Overwrite mode only drops while nested writers fill pages ahead of an
 * uncommitted event (a handful at a time); this many drops in a row from the
 * thread itself means recording has stalled. */
#define STALL_LIMIT 1000

struct ev_hdr {
	uint32_t ctx; /* cpu << 8 | level */
	uint32_t seq;
	uint32_t len;
	uint32_t csum;
};

struct writer {
	unsigned cpu;
	pthread_t th;
	_Atomic(pid_t) tid;
	/* per level, each written by one context only (handlers of one level
	 * do not nest with themselves) */
	uint64_t attempts[NLEVEL], ok[NLEVEL], signals[NLEVEL];
	_Atomic(int) open;      /* events reserved, not yet committed */
	_Atomic(int) max_depth; /* deepest nesting seen with an event open */
	uint64_t depth_hist[RINGBUF_MAX_NEST + 1];
	uint64_t max_streak; /* most consecutive failed writes of the thread */
	int failed;
};

struct expect {
	uint64_t next_seq[NLEVEL];
	uint64_t gaps, read, lost_known, last_ts;
};

static struct ringbuf *g_rb;
static unsigned g_ncpu;     /* CPU buffers in this phase */
static unsigned g_nwriters; /* writer threads (one buffer each) */
static struct writer g_w[MAXW];
static struct expect g_x[MAXW]; /* by writer */
static int g_wof[MAXBUF];       /* buffer -> writer, -1: none */
/* --stress: what the readers and the control thread of a phase do */
enum { READ_PERCPU, READ_MERGED };
enum { CTL_NONE, CTL_TOGGLE, CTL_RESET };
static int g_read_kind, g_ctl_kind;
static uint64_t g_merged_events, g_merged_eagain, g_inversions, g_inv_max_ns, g_iter_inversions;
static uint64_t g_ctl_calls, g_resets, g_reset_busy;
/* A reset is a reader call of its CPU: rec.data of an event consumed before it
 * is invalid after it (docs/api.md). In reset phases a consumer holds this (read)
 * from its consume to the end of its checks of rec.data, the control thread
 * (write) around each reset; the reset still races with the writers, the
 * iterators, read_page and the consumers' other steps. */
static pthread_rwlock_t g_data_lock = PTHREAD_RWLOCK_INITIALIZER;
static void data_hold(void)
{
	if (g_ctl_kind == CTL_RESET)
		pthread_rwlock_rdlock(&g_data_lock);
}
static void data_release(void)
{
	if (g_ctl_kind == CTL_RESET)
		pthread_rwlock_unlock(&g_data_lock);
}
static _Atomic(int) g_stop, g_writers_done;
static _Thread_local struct writer *t_w __attribute__((tls_model("initial-exec")));
static uint64_t g_iter_events, g_iter_passes, g_pages, g_pages_lent, g_page_events, g_consumed;
static char g_why[512];
static uint32_t g_maxlen = MAX_PAYLOAD; /* min(MAX_PAYLOAD, the max event size) */
static _Atomic(int) g_fail;

static void failf(const char *fmt, ...)
{
	va_list ap;
	int zero = 0;
	if (!atomic_compare_exchange_strong(&g_fail, &zero, 1))
		return;
	va_start(ap, fmt);
	vsnprintf(g_why, sizeof g_why, fmt, ap);
	va_end(ap);
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void raise_self(int sig)
{
	syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), sig);
}

/* ---- writers (async-signal-safe) ------------------------------------------ */

/* Reserve an event for level; fill it; call `inside` while it is open. */
static void write_event(struct writer *w, int level, void (*inside)(void))
{
	uint32_t seq = (uint32_t)w->attempts[level]++;
	uint32_t ctx = w->cpu << 8 | (uint32_t)level;
	uint32_t len = (uint32_t)sizeof(struct ev_hdr) +
		       mix(seq * 5 + ctx) % (g_maxlen - (uint32_t)sizeof(struct ev_hdr));
	unsigned char *p = ringbuf_reserve(g_rb, w->cpu, len);
	int depth, cur;
	if (!p)
		return;
	depth = atomic_fetch_add_explicit(&w->open, 1, memory_order_relaxed) + 1;
	cur = atomic_load_explicit(&w->max_depth, memory_order_relaxed);
	while (depth > cur && !atomic_compare_exchange_weak_explicit(&w->max_depth, &cur, depth,
								    memory_order_relaxed, memory_order_relaxed))
		;
	if (depth <= RINGBUF_MAX_NEST)
		w->depth_hist[depth]++; /* a nested handler may lose an increment here: a statistic */
	{
		struct ev_hdr h = {ctx, seq, len, 0};
		for (uint32_t i = sizeof h; i < len; i++)
			p[i] = (unsigned char)mix(seq ^ (i << 8) ^ (ctx << 20));
		if (inside)
			inside(); /* a nested writer runs while this event is open */
		h.csum = checksum(p + sizeof h, len - sizeof h);
		memcpy(p, &h, sizeof h);
	}
	ringbuf_commit(g_rb, w->cpu, p);
	atomic_fetch_sub_explicit(&w->open, 1, memory_order_relaxed);
	w->ok[level]++;
}

static void raise_level3(void) { raise_self(SIGRTMIN); }
static void raise_nmi(void) { raise_self(SIGUSR2); }

static void on_level3(int sig)
{
	int e = errno;
	(void)sig;
	if (t_w) {
		t_w->signals[3]++;
		write_event(t_w, 3, NULL);
	}
	errno = e;
}

static void on_nmi(int sig)
{
	int e = errno;
	(void)sig;
	if (t_w) {
		uint64_t n = t_w->signals[2]++;
		write_event(t_w, 2, (n & 3) == 0 ? raise_level3 : NULL);
	}
	errno = e;
}

static void on_irq(int sig)
{
	int e = errno;
	(void)sig;
	if (t_w) {
		uint64_t n = t_w->signals[1]++;
		int k = 1 + (int)(mix((uint32_t)n) % 3);
		for (int i = 0; i < k; i++)
			write_event(t_w, 1, (i == 0 && (n & 3) == 0) ? raise_nmi : NULL);
	}
	errno = e;
}

static long g_irq_us = 50;

static void spin_open(void)
{
	/* keep the thread's event open a little: the timer lands inside it */
	for (volatile int i = 0; i < 2000; i++)
		;
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	timer_t tm;
	unsigned long i;
	uint64_t streak = 0;

	t_w = w;
	atomic_store(&w->tid, (pid_t)syscall(SYS_gettid));
	if (thread_timer(atomic_load(&w->tid), SIGUSR1, (int64_t)g_irq_us * 1000, (int64_t)g_irq_us * 1000, &tm) != 0) {
		failf("timer_create: %s", strerror(errno));
		return NULL;
	}
	for (i = 0; !atomic_load_explicit(&g_stop, memory_order_relaxed); i++) {
		uint64_t before = w->ok[0];
		write_event(w, 0, (i & 7) == 0 ? spin_open : NULL);
		if (w->ok[0] == before) {
			if (++streak > w->max_streak)
				w->max_streak = streak;
			sched_yield(); /* full (producer/consumer): give the reader the CPU */
		} else {
			streak = 0;
		}
	}
	timer_delete(tm);
	for (i = 0; i < 1000; i++) /* let a pending signal land */
		write_event(w, 0, NULL);
	return NULL;
}

/* ---- readers ---------------------------------------------------------------- */

static int check_hdr(const void *data, size_t len, unsigned cpu, struct ev_hdr *h)
{
	if (len < sizeof *h)
		return -1;
	memcpy(h, data, sizeof *h);
	if ((h->ctx >> 8) != cpu || (h->ctx & 255) >= NLEVEL || h->len < sizeof *h || h->len > MAX_PAYLOAD ||
	    len < h->len || len > h->len + 11 ||
	    checksum((const unsigned char *)data + sizeof *h, h->len - (uint32_t)sizeof *h) != h->csum)
		return -1;
	return 0;
}

static void consumed(unsigned cpu, const void *data, size_t len, uint64_t ts, uint64_t lost, bool lost_known)
{
	struct expect *x;
	struct ev_hdr h;
	unsigned level;
	if (cpu >= g_ncpu || g_wof[cpu] < 0) {
		failf("an event from buffer %u, which nobody writes", cpu);
		return;
	}
	x = &g_x[g_wof[cpu]];
	if (check_hdr(data, len, cpu, &h) < 0) {
		failf("cpu %u: torn or corrupt event (record length %zu)", cpu, len);
		return;
	}
	level = h.ctx & 255;
	if (h.seq < x->next_seq[level]) {
		failf("cpu %u level %u: sequence went back %u < %llu", cpu, level, h.seq,
		      (unsigned long long)x->next_seq[level]);
		return;
	}
	x->gaps += h.seq - x->next_seq[level];
	x->next_seq[level] = (uint64_t)h.seq + 1;
	if (ts < x->last_ts) {
		failf("cpu %u: time went backwards %llu < %llu", cpu, (unsigned long long)ts,
		      (unsigned long long)x->last_ts);
		return;
	}
	x->last_ts = ts;
	if (lost_known)
		x->lost_known += lost;
	x->read++;
}

struct page_ctx {
	unsigned cpu;
	bool first;
	uint64_t lost;
	bool known;
};

static int page_cb(const struct pw_record *r, void *vctx)
{
	struct page_ctx *pc = vctx;
	if (r->kind != PW_DATA)
		return 0;
	consumed(pc->cpu, r->payload, r->payload_len, r->ts, pc->first ? pc->lost : 0, pc->known);
	pc->first = false;
	g_page_events++;
	return 0;
}

/* kind: 0 ringbuf_read_page, 1 with RINGBUF_READ_FULL, 2 ringbuf_read_page_ref
 * (a lent page is copied into page at once: it is valid until the next reader
 * call), 3 read_page_ref and read_page when it refuses. One reader mixing them
 * on a CPU lost committed events once (issue 22, defect 1). */
static void read_one_page(unsigned cpu, unsigned char *page, size_t psize, bool align8, unsigned kind)
{
	struct pw_page info;
	const char *err = NULL;
	int r;
	if (kind >= 2) {
		const void *lent;
		r = ringbuf_read_page_ref(g_rb, cpu, &lent);
		if (r > 0) {
			memcpy(page, lent, psize);
			g_pages_lent++;
		} else if (r == RINGBUF_EAGAIN && kind == 3) {
			r = ringbuf_read_page(g_rb, cpu, page, psize, 0);
		}
	} else {
		r = ringbuf_read_page(g_rb, cpu, page, psize, kind == 1 ? RINGBUF_READ_FULL : 0);
	}
	if (r < 0 && r != RINGBUF_EAGAIN && !(r == RINGBUF_EBUSY && g_ctl_kind == CTL_RESET)) {
		failf("read_page cpu %u: %s", cpu, ringbuf_strerror(r));
		return;
	}
	if (r <= 0)
		return;
	if (pw_walk_page(page, psize, align8, NULL, NULL, &info, &err) < 0) {
		failf("read_page cpu %u: invalid page: %s", cpu, err);
		return;
	}
	{
		struct page_ctx pc = {cpu, true, info.missed ? info.missed_count : 0,
				      !info.missed || info.missed_stored};
		pw_walk_page(page, psize, align8, page_cb, &pc, &info, &err);
	}
	g_pages++;
}

static bool g_align8;

static void *reader_main(void *arg)
{
	size_t psize = ringbuf_page_size(g_rb);
	unsigned char *page = aligned_alloc(64, psize);
	struct ringbuf_record rec;
	unsigned long round;
	(void)arg;
	for (round = 0;; round++) {
		bool any = false, done = atomic_load(&g_writers_done);
		for (unsigned cpu = 0; cpu < g_ncpu; cpu++) {
			if (round % 8 == 7) {
				read_one_page(cpu, page, psize, g_align8, (unsigned)(round / 8 + cpu) % 4);
				continue;
			}
			for (int i = 0; i < 256; i++) {
				int r;
				data_hold();
				r = ringbuf_consume(g_rb, cpu, &rec);
				if (r == 1)
					consumed(cpu, rec.data, rec.len, rec.ts, rec.lost, true);
				data_release();
				if (r == 1) {
					g_consumed++;
					any = true;
					continue;
				}
				if (r < 0 && r != RINGBUF_EAGAIN && !(r == RINGBUF_EBUSY && g_ctl_kind == CTL_RESET))
					failf("consume cpu %u: %s", cpu, ringbuf_strerror(r));
				break;
			}
		}
		if (done && !any && round % 8 != 7)
			break;
		if (!any)
			sched_yield();
	}
	free(page);
	return NULL;
}

static void *iter_main(void *arg)
{
	struct ringbuf_record rec;
	(void)arg;
	while (!atomic_load(&g_writers_done)) {
		for (unsigned cpu = 0; cpu < g_ncpu; cpu++) {
			struct ringbuf_iter *it;
			uint64_t last_seq[NLEVEL], last_ts = 0;
			bool seen[NLEVEL] = {false};
			int r;
			if (ringbuf_iter_start(g_rb, cpu, &it) < 0) {
				failf("iter_start");
				return NULL;
			}
			while ((r = ringbuf_iter_next(it, &rec)) == 1) {
				struct ev_hdr h;
				unsigned level;
				if (check_hdr(rec.data, rec.len, cpu, &h) < 0) {
					failf("iterator cpu %u: torn or corrupt event", cpu);
					break;
				}
				level = h.ctx & 255;
				if (seen[level] && h.seq <= last_seq[level]) {
					failf("iterator cpu %u level %u: sequence %u after %llu", cpu, level, h.seq,
					      (unsigned long long)last_seq[level]);
					break;
				}
				if (rec.ts < last_ts) {
					failf("iterator cpu %u: time went backwards", cpu);
					break;
				}
				seen[level] = true;
				last_seq[level] = h.seq;
				last_ts = rec.ts;
				g_iter_events++;
			}
			if (r < 0 && r != RINGBUF_EAGAIN && !(r == RINGBUF_EBUSY && g_ctl_kind == CTL_RESET))
				failf("iterator cpu %u: %s", cpu, ringbuf_strerror(r));
			ringbuf_iter_finish(it);
			g_iter_passes++;
		}
		usleep(200);
	}
	return NULL;
}

/* --stress: one consumer of every CPU through ringbuf_consume_merged. The
 * stream must never go back in time across CPUs. */
static void *merged_main(void *arg)
{
	struct ringbuf_record rec;
	uint64_t last = 0;
	(void)arg;
	for (;;) {
		bool done = atomic_load(&g_writers_done);
		int r;
		data_hold();
		r = ringbuf_consume_merged(g_rb, &rec);
		if (r == 1) {
			if (rec.ts < last) {
				g_inversions++;
				if (last - rec.ts > g_inv_max_ns)
					g_inv_max_ns = last - rec.ts;
				failf("merged stream went back in time: cpu %u ts %llu after %llu (%llu ns)", rec.cpu,
				      (unsigned long long)rec.ts, (unsigned long long)last,
				      (unsigned long long)(last - rec.ts));
			} else {
				last = rec.ts;
			}
			consumed(rec.cpu, rec.data, rec.len, rec.ts, rec.lost, true);
			data_release();
			g_consumed++;
			g_merged_events++;
			continue;
		}
		data_release();
		if (r == RINGBUF_EAGAIN) {
			g_merged_eagain++;
			sched_yield();
			continue;
		}
		if (r == RINGBUF_EBUSY && g_ctl_kind == CTL_RESET) { /* the reset holds the reader lock */
			sched_yield();
			continue;
		}
		if (r < 0) {
			failf("consume_merged: %s", ringbuf_strerror(r));
			break;
		}
		if (done) /* empty after the writers stopped: drained */
			break;
		sched_yield();
	}
	return NULL;
}

/* --stress: a non-consuming iterator over all CPUs at once (merged order). */
static void *iter_all_main(void *arg)
{
	struct ringbuf_record rec;
	(void)arg;
	while (!atomic_load(&g_writers_done)) {
		struct ringbuf_iter *it;
		uint64_t last_ts = 0;
		int r;
		if (ringbuf_iter_start(g_rb, RINGBUF_ALL_CPUS, &it) < 0) {
			failf("iter_start(RINGBUF_ALL_CPUS)");
			return NULL;
		}
		while ((r = ringbuf_iter_next(it, &rec)) == 1) {
			struct ev_hdr h;
			if (check_hdr(rec.data, rec.len, rec.cpu, &h) < 0) {
				failf("all-CPU iterator: torn or corrupt event on cpu %u", rec.cpu);
				break;
			}
			if (rec.ts < last_ts) {
				g_iter_inversions++;
				failf("all-CPU iterator went back in time: cpu %u ts %llu after %llu (%llu ns)", rec.cpu,
				      (unsigned long long)rec.ts, (unsigned long long)last_ts,
				      (unsigned long long)(last_ts - rec.ts));
				break;
			}
			last_ts = rec.ts;
			g_iter_events++;
		}
		if (r < 0 && r != RINGBUF_EAGAIN)
			failf("all-CPU iterator: %s", ringbuf_strerror(r));
		ringbuf_iter_finish(it);
		g_iter_passes++;
		usleep(200);
	}
	return NULL;
}

/* --stress: control calls racing the writers. */
static void *control_main(void *arg)
{
	unsigned long i;
	(void)arg;
	for (i = 0; !atomic_load(&g_stop); i++) {
		unsigned w = (unsigned)(mix((uint32_t)i) % g_nwriters), cpu = g_w[w].cpu;
		if (g_ctl_kind == CTL_RESET) {
			int r;
			pthread_rwlock_wrlock(&g_data_lock);
			r = (i % 16 == 15) ? ringbuf_reset(g_rb) : ringbuf_reset_cpu(g_rb, cpu);
			pthread_rwlock_unlock(&g_data_lock);
			if (r == RINGBUF_EBUSY)
				g_reset_busy++;
			else if (r < 0)
				failf("reset: %s", ringbuf_strerror(r));
			else
				g_resets++;
		} else {
			switch (i % 4) {
			case 0:
				ringbuf_record_off(g_rb);
				spin_open();
				ringbuf_record_on(g_rb);
				break;
			case 1:
				ringbuf_record_disable_cpu(g_rb, cpu);
				spin_open();
				ringbuf_record_enable_cpu(g_rb, cpu);
				break;
			case 2:
				ringbuf_set_mode(g_rb, ringbuf_get_mode(g_rb) == RINGBUF_MODE_OVERWRITE
							       ? RINGBUF_MODE_PRODUCER_CONSUMER
							       : RINGBUF_MODE_OVERWRITE);
				break;
			default:
				ringbuf_record_disable(g_rb);
				ringbuf_record_enable(g_rb);
				break;
			}
		}
		g_ctl_calls++;
		usleep(100 + mix((uint32_t)i * 7) % 400);
	}
	return NULL;
}

/* ---- phases ------------------------------------------------------------------- */

struct config {
	int mode, ts_mode;
	size_t page_size;
	unsigned flags;
	const char *name;
	/* --stress */
	unsigned ncpu;     /* CPU buffers (0: one per writer); writers take the highest ones */
	int read_kind;     /* READ_PERCPU or READ_MERGED */
	int ctl_kind;      /* CTL_* */
};

static const struct config configs[] = {
	{RINGBUF_MODE_OVERWRITE, RINGBUF_TS_DELTA, 512, 0, "overwrite, 512 B pages, delta", 0, READ_PERCPU,
	 CTL_NONE},
	{RINGBUF_MODE_PRODUCER_CONSUMER, RINGBUF_TS_DELTA, 512, 0, "producer/consumer, 512 B pages, delta", 0,
	 READ_PERCPU, CTL_NONE},
	{RINGBUF_MODE_OVERWRITE, RINGBUF_TS_ABSOLUTE, 4096, 0, "overwrite, 4 KiB pages, absolute", 0,
	 READ_PERCPU, CTL_NONE},
	{RINGBUF_MODE_OVERWRITE, RINGBUF_TS_DELTA, 1024, RINGBUF_F_ALIGN8, "overwrite, 1 KiB pages, align8", 0,
	 READ_PERCPU, CTL_NONE},
	{RINGBUF_MODE_PRODUCER_CONSUMER, RINGBUF_TS_ABSOLUTE, 256, RINGBUF_F_ALIGN8,
	 "producer/consumer, 256 B pages, absolute, align8", 0, READ_PERCPU, CTL_NONE},
};

static const struct config stress_configs[] = {
	{RINGBUF_MODE_PRODUCER_CONSUMER, RINGBUF_TS_DELTA, 512, 0, "merged, producer/consumer, 3 buffers", 0,
	 READ_MERGED, CTL_NONE},
	{RINGBUF_MODE_OVERWRITE, RINGBUF_TS_DELTA, 1024, 0, "merged, overwrite, 66 buffers", 66, READ_MERGED,
	 CTL_NONE},
	{RINGBUF_MODE_PRODUCER_CONSUMER, RINGBUF_TS_ABSOLUTE, 256, RINGBUF_F_ALIGN8,
	 "merged, producer/consumer, 256 buffers, abs, align8", 256, READ_MERGED, CTL_NONE},
	{RINGBUF_MODE_OVERWRITE, RINGBUF_TS_DELTA, 512, 0, "per-CPU + control calls (off/on, mode)", 0,
	 READ_PERCPU, CTL_TOGGLE},
	{RINGBUF_MODE_PRODUCER_CONSUMER, RINGBUF_TS_DELTA, 512, 0, "merged + control calls, 130 buffers", 130,
	 READ_MERGED, CTL_TOGGLE},
	{RINGBUF_MODE_OVERWRITE, RINGBUF_TS_DELTA, 512, 0, "per-CPU + ringbuf_reset_cpu racing writers", 0,
	 READ_PERCPU, CTL_RESET},
	{RINGBUF_MODE_PRODUCER_CONSUMER, RINGBUF_TS_DELTA, 256, 0, "merged + ringbuf_reset racing, 70 buffers",
	 70, READ_MERGED, CTL_RESET},
};

struct totals {
	uint64_t attempts, committed, read, overrun, dropped, commit_overrun, signals[NLEVEL];
	uint64_t lost_known, depth_hist[RINGBUF_MAX_NEST + 1];
	int max_depth;
	unsigned phases;
};

static bool join_by(pthread_t th, double deadline)
{
	struct timespec ts;
	double d = deadline;
	ts.tv_sec = (time_t)d;
	ts.tv_nsec = (long)((d - (double)ts.tv_sec) * 1e9);
	/* pthread_timedjoin_np takes CLOCK_REALTIME */
	return pthread_timedjoin_np(th, NULL, &ts) == 0;
}

static int run_phase(const struct config *cf, double seconds, struct totals *T)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	pthread_t rt, it, ct;
	sigset_t block;
	double t_end;
	struct timespec rnow;

	struct totals P = *T;
	g_ncpu = cf->ncpu ? cf->ncpu : g_nwriters;
	g_read_kind = cf->read_kind;
	g_ctl_kind = cf->ctl_kind;
	cfg.ncpu = g_ncpu;
	cfg.mode = cf->mode;
	cfg.ts_mode = cf->ts_mode;
	cfg.page_size = cf->page_size;
	cfg.size_per_cpu = 16 * cf->page_size;
	cfg.flags = cf->flags;
	g_align8 = (cf->flags & RINGBUF_F_ALIGN8) != 0;
	if (ringbuf_create(&cfg, &g_rb) < 0) {
		fprintf(stderr, "soak: ringbuf_create failed\n");
		return 1;
	}
	g_maxlen = (uint32_t)ringbuf_max_event_size(g_rb);
	if (g_maxlen > MAX_PAYLOAD)
		g_maxlen = MAX_PAYLOAD;
	memset(g_w, 0, sizeof g_w);
	memset(g_x, 0, sizeof g_x);
	/* writer k on buffer ncpu - 1 - k * (ncpu / writers): the highest buffer
	 * is always written (a buffer >= 64 when there are more than 64) */
	for (unsigned b = 0; b < MAXBUF; b++)
		g_wof[b] = -1;
	for (unsigned k = 0; k < g_nwriters; k++) {
		g_w[k].cpu = g_ncpu - 1 - k * (g_ncpu / g_nwriters);
		g_wof[g_w[k].cpu] = (int)k;
	}
	atomic_store(&g_stop, 0);
	atomic_store(&g_writers_done, 0);

	/* readers never take the writers' signals */
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGUSR2);
	sigaddset(&block, SIGRTMIN);
	pthread_sigmask(SIG_BLOCK, &block, NULL);
	pthread_create(&rt, NULL, g_read_kind == READ_MERGED ? merged_main : reader_main, NULL);
	pthread_create(&it, NULL, g_read_kind == READ_MERGED ? iter_all_main : iter_main, NULL);
	if (g_ctl_kind != CTL_NONE)
		pthread_create(&ct, NULL, control_main, NULL);
	pthread_sigmask(SIG_UNBLOCK, &block, NULL);
	for (unsigned k = 0; k < g_nwriters; k++)
		pthread_create(&g_w[k].th, NULL, writer_main, &g_w[k]);
	t_end = now_s() + seconds;
	while (now_s() < t_end && !atomic_load(&g_fail))
		usleep(20000);
	atomic_store(&g_stop, 1);

	/* everything must finish within a minute: otherwise it hangs */
	clock_gettime(CLOCK_REALTIME, &rnow);
	{
		double deadline = (double)rnow.tv_sec + (double)rnow.tv_nsec * 1e-9 + 60;
		for (unsigned k = 0; k < g_nwriters; k++)
			if (!join_by(g_w[k].th, deadline)) {
				fprintf(stderr, "soak: writer %u did not finish: hang\n", k);
				_exit(2);
			}
		if (g_ctl_kind != CTL_NONE && !join_by(ct, deadline)) {
			fprintf(stderr, "soak: the control thread did not finish: hang\n");
			_exit(2);
		}
		if (g_ctl_kind != CTL_NONE) /* the control calls are over: recording on, no disable left */
			ringbuf_record_on(g_rb);
		atomic_store(&g_writers_done, 1);
		if (!join_by(rt, deadline) || !join_by(it, deadline)) {
			fprintf(stderr, "soak: a reader did not finish: hang\n");
			_exit(2);
		}
	}

	for (unsigned k = 0; k < g_nwriters; k++) {
		unsigned c = g_w[k].cpu;
		struct writer *w = &g_w[k];
		struct expect *x = &g_x[k];
		bool ctl = g_ctl_kind != CTL_NONE;
		struct ringbuf_stats st;
		uint64_t attempts = 0, ok = 0, drops;
		ringbuf_stats_cpu(g_rb, c, &st);
		for (int l = 0; l < NLEVEL; l++) {
			attempts += w->attempts[l];
			ok += w->ok[l];
			x->gaps += w->attempts[l] - x->next_seq[l]; /* lost after the last read */
			T->signals[l] += w->signals[l];
		}
		drops = st.dropped_events + st.commit_overrun + (ctl ? st.disabled_events : 0);
		if (atomic_load(&g_fail))
			; /* already failed: only add up the totals */
		else if (g_ctl_kind == CTL_RESET)
			; /* resets throw events away uncounted, on purpose: integrity and order were checked */
		else if (st.committed != ok || x->read + st.overrun != ok || st.read_events != x->read ||
		    st.entries != 0)
			failf("cpu %u: committed %llu (model %llu), read %llu + overrun %llu, entries %llu", c,
			      (unsigned long long)st.committed, (unsigned long long)ok,
			      (unsigned long long)x->read, (unsigned long long)st.overrun,
			      (unsigned long long)st.entries);
		else if (attempts - ok != drops)
			failf("cpu %u: %llu failed reserves, counted %llu", c,
			      (unsigned long long)(attempts - ok), (unsigned long long)drops);
		else if (x->gaps != st.overrun + drops)
			failf("cpu %u: sequence gaps %llu != overrun %llu + drops %llu", c,
			      (unsigned long long)x->gaps, (unsigned long long)st.overrun,
			      (unsigned long long)drops);
		else if (st.rejected_events + st.nest_overflow + (ctl ? 0 : st.disabled_events) != 0)
			failf("cpu %u: unexpected rejected/nest_overflow/disabled", c);
		else if (x->lost_known > st.overrun + drops)
			failf("cpu %u: reported lost %llu > overrun + drops %llu", c,
			      (unsigned long long)x->lost_known, (unsigned long long)(st.overrun + drops));
		else if (!ctl && cf->mode == RINGBUF_MODE_OVERWRITE && w->max_streak > STALL_LIMIT)
			failf("cpu %u: %llu writes in a row dropped in overwrite mode (commit_overrun %llu): "
			      "recording stalled", c, (unsigned long long)w->max_streak,
			      (unsigned long long)st.commit_overrun);
		else if (!ctl && ((cf->mode == RINGBUF_MODE_OVERWRITE && st.dropped_events) ||
				  (cf->mode != RINGBUF_MODE_OVERWRITE && st.overrun)))
			failf("cpu %u: overrun/dropped in the wrong mode", c);
		T->attempts += attempts;
		T->committed += ok;
		T->read += x->read;
		T->overrun += st.overrun;
		T->dropped += st.dropped_events;
		T->commit_overrun += st.commit_overrun;
		T->lost_known += x->lost_known;
		if (w->max_depth > T->max_depth)
			T->max_depth = w->max_depth;
		for (int d = 0; d <= RINGBUF_MAX_NEST; d++)
			T->depth_hist[d] += w->depth_hist[d];
	}
	T->phases++;
	printf("phase %3u  %-48s  %s  committed %llu overrun %llu dropped %llu commit_overrun %llu\n", T->phases,
	       cf->name, atomic_load(&g_fail) ? "FAILED" : "ok", (unsigned long long)(T->committed - P.committed),
	       (unsigned long long)(T->overrun - P.overrun), (unsigned long long)(T->dropped - P.dropped),
	       (unsigned long long)(T->commit_overrun - P.commit_overrun));
	fflush(stdout);
	ringbuf_destroy(g_rb);
	g_rb = NULL;
	return atomic_load(&g_fail) ? 1 : 0;
}

static double env_num(const char *name, double dflt)
{
	const char *s = getenv(name);
	double v = s ? strtod(s, NULL) : 0;
	return v > 0 ? v : dflt;
}

int main(int argc, char **argv)
{
	bool stress = argc > 1 && strcmp(argv[1], "--stress") == 0;
	const struct config *cfs = stress ? stress_configs : configs;
	size_t ncfs = stress ? sizeof stress_configs / sizeof stress_configs[0] : sizeof configs / sizeof configs[0];
	double total = argc > 1 + stress ? strtod(argv[1 + stress], NULL)
					 : stress ? env_num("STRESS_SECONDS", 300) : env_num("SOAK_SECONDS", 600);
	double phase = env_num("SOAK_PHASE_SECONDS", 10), t0 = now_s(), left;
	struct totals T;
	struct sigaction sa;
	int rc = 0;
	unsigned k, only;

	if (total <= 0)
		total = 600;
	g_nwriters = (unsigned)env_num("SOAK_CPUS", stress ? 3 : 2);
	if (g_nwriters > MAXW)
		g_nwriters = MAXW;
	g_irq_us = (long)env_num("SOAK_IRQ_US", 50);
	memset(&T, 0, sizeof T);

	memset(&sa, 0, sizeof sa);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = on_irq;
	sigemptyset(&sa.sa_mask); /* NMI and level 3 may interrupt the IRQ handler */
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_nmi;
	sigaddset(&sa.sa_mask, SIGUSR1);
	sigaction(SIGUSR2, &sa, NULL);
	sa.sa_handler = on_level3;
	sigaddset(&sa.sa_mask, SIGUSR2);
	sigaction(SIGRTMIN, &sa, NULL);

	printf("%s: %.0f s, phases of %.0f s, %u writer threads, IRQ every %ld us\n", stress ? "stress" : "soak",
	       total, phase, g_nwriters, g_irq_us);
	only = (unsigned)env_num("STRESS_ONLY", 0); /* 1..n: run only that configuration */
	for (k = 0; (left = total - (now_s() - t0)) > 0.5 && rc == 0; k++)
		rc = run_phase(&cfs[only && only <= ncfs ? only - 1 : k % ncfs], left < phase ? left : phase, &T);

	printf("\nsoak totals after %.1f s, %u phases:\n", now_s() - t0, T.phases);
	printf("  events written      %14llu (committed %llu)\n", (unsigned long long)T.attempts,
	       (unsigned long long)T.committed);
	printf("  events verified     %14llu by the consuming reader (%llu via whole pages: %llu pages, %llu "
	       "lent by read_page_ref)\n",
	       (unsigned long long)T.read, (unsigned long long)g_page_events, (unsigned long long)g_pages,
	       (unsigned long long)g_pages_lent);
	printf("                      %14llu by the iterator (%llu passes)\n", (unsigned long long)g_iter_events,
	       (unsigned long long)g_iter_passes);
	if (stress) {
		printf("  merged stream       %14llu events (%llu EAGAIN), %llu inversions (max %llu ns back)\n",
		       (unsigned long long)g_merged_events, (unsigned long long)g_merged_eagain,
		       (unsigned long long)g_inversions, (unsigned long long)g_inv_max_ns);
		printf("  all-CPU iterator    %14llu inversions\n", (unsigned long long)g_iter_inversions);
		printf("  control calls       %14llu (resets %llu done, %llu EBUSY)\n", (unsigned long long)g_ctl_calls,
		       (unsigned long long)g_resets, (unsigned long long)g_reset_busy);
	}
	printf("  signals handled     %14llu IRQ, %llu NMI, %llu level-3\n", (unsigned long long)T.signals[1],
	       (unsigned long long)T.signals[2], (unsigned long long)T.signals[3]);
	printf("  max nesting depth   %14d (events reserved at depth 1..4: %llu %llu %llu %llu)\n", T.max_depth,
	       (unsigned long long)T.depth_hist[1], (unsigned long long)T.depth_hist[2],
	       (unsigned long long)T.depth_hist[3], (unsigned long long)T.depth_hist[4]);
	printf("  lost: overrun       %14llu\n", (unsigned long long)T.overrun);
	printf("        dropped       %14llu (+ commit_overrun %llu)\n", (unsigned long long)T.dropped,
	       (unsigned long long)T.commit_overrun);
	printf("        reported      %14llu in rec.lost / page missed counts\n", (unsigned long long)T.lost_known);
	if (rc || atomic_load(&g_fail)) {
		printf("%s FAILED: %s\n", stress ? "STRESS" : "SOAK", g_why);
		return 1;
	}
	if (T.max_depth < 3)
		printf("note: nesting never went deeper than %d\n", T.max_depth);
	printf("%s PASSED\n", stress ? "STRESS" : "SOAK");
	return 0;
}
