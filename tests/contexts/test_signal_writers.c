/* Proves that writers nested by real signals never corrupt each other and that
 * nothing is lost uncounted, while a reader consumes concurrently on another
 * thread:
 *   - a writer thread writes events (context 0);
 *   - a per-thread timer (timer_create, SIGEV_THREAD_ID) interrupts it with
 *     SIGUSR1 ("IRQ") every 50 us; the handler writes 1-3 events (context 1)
 *     and sometimes sends itself SIGUSR2 ("NMI"), left unblocked, whose handler
 *     writes an event (context 2) nested inside the first;
 *   - a reader thread consumes continuously and checks every event: context,
 *     sequence, length and a checksum over the payload; per-context sequences
 *     only increase; time stamps never go backwards;
 *   - at the end: committed events == read + overwritten, and every sequence
 *     gap is covered by a lost count reported in the stream or by a drop the
 *     statistics counted.
 * Both modes, small pages so page crossings and head pushes are constant.
 */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "sigutil.h"
/* LDFLAGS: -lrt */

#define NCTX 3
#define MAX_PAYLOAD 300

struct ev_hdr {
	uint32_t ctx;
	uint32_t seq;
	uint32_t len; /* whole payload, header included */
	uint32_t csum;
};

static struct ringbuf *g_rb;
static pid_t g_writer_tid;
/* Per context: attempts (sequence numbers handed out) and successes. Only the
 * writer thread and its handlers write them; read after the writer joined. */
static uint64_t g_attempts[NCTX], g_ok[NCTX];
static _Atomic(uint64_t) g_irqs, g_nmis;
/* times the writer found its signals blocked (sig_unblock_pair: TSan only) */
static uint64_t g_mask_repairs;

/* Async-signal-safe: reserve, fill, commit. */
static void write_event(uint32_t ctx)
{
	uint32_t seq = (uint32_t)g_attempts[ctx]++;
	uint32_t len = sizeof(struct ev_hdr) + mix(seq * 3 + ctx) % (MAX_PAYLOAD - sizeof(struct ev_hdr));
	unsigned char *p = ringbuf_reserve(g_rb, 0, len);
	if (!p)
		return;
	struct ev_hdr h = {ctx, seq, len, 0};
	for (uint32_t i = sizeof h; i < len; i++)
		p[i] = (unsigned char)mix(seq ^ (i << 8) ^ (ctx << 24));
	h.csum = checksum(p + sizeof h, len - sizeof h);
	memcpy(p, &h, sizeof h);
	ringbuf_commit(g_rb, 0, p);
	g_ok[ctx]++;
}

static void on_nmi(int sig)
{
	(void)sig;
	int e = errno;
	atomic_fetch_add(&g_nmis, 1);
	write_event(2);
	errno = e;
}

static void on_irq(int sig)
{
	(void)sig;
	int e = errno;
	uint64_t n = atomic_fetch_add(&g_irqs, 1);
	int k = 1 + (int)(mix((uint32_t)n) % 3);
	for (int i = 0; i < k; i++) {
		write_event(1);
		if (i == 0 && (n & 3) == 0) /* an NMI in the middle of the IRQ */
			syscall(SYS_tgkill, getpid(), g_writer_tid, SIGUSR2);
	}
	errno = e;
}

static void *writer(void *arg)
{
	double seconds = *(double *)arg;
	timer_t tm;
	struct timespec t0, t;

	g_writer_tid = (pid_t)syscall(SYS_gettid);
	if (thread_timer(g_writer_tid, SIGUSR1, 50000, 50000, &tm) != 0)
		return (void *)1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned long i = 0;; i++) {
		write_event(0);
		if ((i & 255) == 0) {
			g_mask_repairs += (uint64_t)sig_unblock_pair(SIGUSR1, SIGUSR2);
			clock_gettime(CLOCK_MONOTONIC, &t);
			/* at least `seconds`, and until the handlers have done what
			 * the checks ask for (counted, so a loaded machine only makes
			 * the run longer) */
			if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 > seconds &&
			    atomic_load(&g_irqs) > 100 && atomic_load(&g_nmis) > 10 &&
			    ((volatile uint64_t *)g_ok)[1] > 0 && ((volatile uint64_t *)g_ok)[2] > 0)
				break;
		}
	}
	timer_delete(tm);
	/* let a last pending signal land before we report */
	for (int i = 0; i < 1000; i++)
		write_event(0);
	return NULL;
}

struct reader_state {
	uint64_t read;
	uint64_t lost;
	uint64_t next_seq[NCTX]; /* lowest sequence still expected per context */
	uint64_t gaps;           /* sum of per-context sequence gaps */
	uint64_t last_ts;
	int failures;
	char why[256];
};

static void check_one(struct reader_state *rs, const struct ringbuf_record *rec)
{
	struct ev_hdr h;
	if (rec->len < sizeof h) {
		snprintf(rs->why, sizeof rs->why, "short event %zu", rec->len);
		rs->failures++;
		return;
	}
	memcpy(&h, rec->data, sizeof h);
	if (h.ctx >= NCTX || h.len < sizeof h || h.len > MAX_PAYLOAD || rec->len != ((h.len + 3u) & ~3u) + (h.len <= 8 ? 4u : 0u) ||
	    checksum((const unsigned char *)rec->data + sizeof h, h.len - sizeof h) != h.csum) {
		snprintf(rs->why, sizeof rs->why, "torn event ctx=%u seq=%u len=%u reclen=%zu", h.ctx, h.seq,
			 h.len, rec->len);
		rs->failures++;
		return;
	}
	if (h.seq < rs->next_seq[h.ctx]) {
		snprintf(rs->why, sizeof rs->why, "ctx %u seq went back: %u < %llu", h.ctx, h.seq,
			 (unsigned long long)rs->next_seq[h.ctx]);
		rs->failures++;
		return;
	}
	rs->gaps += h.seq - rs->next_seq[h.ctx];
	rs->next_seq[h.ctx] = (uint64_t)h.seq + 1;
	if (rec->ts < rs->last_ts) {
		snprintf(rs->why, sizeof rs->why, "time went backwards: %llu < %llu",
			 (unsigned long long)rec->ts, (unsigned long long)rs->last_ts);
		rs->failures++;
	}
	rs->last_ts = rec->ts;
	rs->lost += rec->lost;
	rs->read++;
}

static _Atomic(int) g_writer_done;

static void *reader(void *arg)
{
	struct reader_state *rs = arg;
	struct ringbuf_record rec;
	for (;;) {
		int r = ringbuf_consume(g_rb, 0, &rec);
		if (r == 1) {
			check_one(rs, &rec);
			continue;
		}
		if (r < 0 && r != RINGBUF_EAGAIN) {
			snprintf(rs->why, sizeof rs->why, "consume: %s", ringbuf_strerror(r));
			rs->failures++;
			return NULL;
		}
		if (atomic_load(&g_writer_done))
			break;
		sched_yield();
	}
	/* drain what is left */
	while (ringbuf_consume(g_rb, 0, &rec) == 1)
		check_one(rs, &rec);
	return NULL;
}

static void run_torture(int mode, size_t page_size, double seconds)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct reader_state rs;
	struct ringbuf_stats st;
	pthread_t wt, rt;
	sigset_t block;

	cfg.mode = mode;
	cfg.page_size = page_size;
	cfg.size_per_cpu = 8 * page_size;
	assert_int_equal(ringbuf_create(&cfg, &g_rb), 0);
	memset(&rs, 0, sizeof rs);
	memset(g_attempts, 0, sizeof g_attempts);
	memset(g_ok, 0, sizeof g_ok);
	atomic_store(&g_irqs, 0);
	atomic_store(&g_nmis, 0);
	atomic_store(&g_writer_done, 0);
	g_mask_repairs = 0;

	install_irq_nmi(SIGUSR1, on_irq, SIGUSR2, on_nmi); /* SIGUSR2 stays deliverable inside on_irq */

	/* only the writer thread takes the signals */
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	sigaddset(&block, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &block, NULL);
	assert_int_equal(pthread_create(&rt, NULL, reader, &rs), 0);
	pthread_sigmask(SIG_UNBLOCK, &block, NULL);
	assert_int_equal(pthread_create(&wt, NULL, writer, &seconds), 0);
	void *wret;
	pthread_join(wt, &wret);
	assert_null(wret);
	atomic_store(&g_writer_done, 1);
	pthread_join(rt, NULL);

	if (rs.failures)
		fail_msg("%d failures, last: %s", rs.failures, rs.why);

	assert_int_equal(ringbuf_stats_cpu(g_rb, 0, &st), 0);
	uint64_t attempts = 0, ok = 0;
	for (int i = 0; i < NCTX; i++) {
		attempts += g_attempts[i];
		ok += g_ok[i];
		/* the gap after the last event read of each context */
		rs.gaps += g_attempts[i] - rs.next_seq[i];
	}
	print_message("  mode=%s page=%zu: %llu events (%llu irq, %llu nmi signals), read %llu, "
		      "lost in stream %llu, overrun %llu, dropped %llu, commit_overrun %llu, "
		      "signal mask repairs %llu\n",
		      mode == RINGBUF_MODE_OVERWRITE ? "overwrite" : "producer/consumer", page_size,
		      (unsigned long long)attempts, (unsigned long long)atomic_load(&g_irqs),
		      (unsigned long long)atomic_load(&g_nmis), (unsigned long long)rs.read,
		      (unsigned long long)rs.lost, (unsigned long long)st.overrun,
		      (unsigned long long)st.dropped_events, (unsigned long long)st.commit_overrun,
		      (unsigned long long)g_mask_repairs);
	if (!UNDER_TSAN)
		assert_int_equal(g_mask_repairs, 0);

	assert_true(atomic_load(&g_irqs) > 100);
	assert_true(atomic_load(&g_nmis) > 10);
	assert_true(g_ok[1] > 0 && g_ok[2] > 0);
	/* every committed event is read or overwritten, exactly */
	assert_int_equal(st.committed, ok);
	assert_int_equal(rs.read + st.overrun, ok);
	assert_int_equal(st.read_events, rs.read);
	assert_int_equal(st.entries, 0);
	/* every failed reserve is counted */
	assert_int_equal(attempts - ok, st.dropped_events + st.commit_overrun);
	assert_int_equal(st.rejected_events + st.nest_overflow + st.disabled_events, 0);
	/* lost counts in the stream: all overwritten events, plus the drops that
	 * happened before the last page the tail entered */
	assert_true(rs.lost >= st.overrun);
	assert_true(rs.lost <= st.overrun + st.dropped_events + st.commit_overrun);
	/* every sequence gap is an event lost (reported or counted), and vice versa */
	assert_int_equal(rs.gaps, st.overrun + st.dropped_events + st.commit_overrun);
	if (mode == RINGBUF_MODE_OVERWRITE)
		assert_int_equal(st.dropped_events, 0);
	else
		assert_int_equal(st.overrun, 0);
	ringbuf_destroy(g_rb);
	g_rb = NULL;
}

static void signal_nested_writers_overwrite_small_pages(void **state)
{
	(void)state;
	run_torture(RINGBUF_MODE_OVERWRITE, 512, 1.5);
}

static void signal_nested_writers_producer_consumer_small_pages(void **state)
{
	(void)state;
	run_torture(RINGBUF_MODE_PRODUCER_CONSUMER, 512, 1.5);
}

static void signal_nested_writers_overwrite_4k_pages(void **state)
{
	(void)state;
	run_torture(RINGBUF_MODE_OVERWRITE, 4096, 1.0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(signal_nested_writers_overwrite_small_pages),
		cmocka_unit_test(signal_nested_writers_producer_consumer_small_pages),
		cmocka_unit_test(signal_nested_writers_overwrite_4k_pages),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
