/* Regression tests for the bugs the Linux kernel's ring buffer had to fix
 * (/work/shared/reference/kernel-ring-buffer.md section 4), one test per bug
 * that applies to ringbuf.h's design, each reproduced deterministically with
 * the test-point hook (ringbuf__set_testpoint_hook): a "signal handler" (a
 * nested writer), a reader on "another CPU" or an iterator cuts in at an exact
 * labelled step of the write path.
 *
 * THE ORACLE. The clock is the test's: every read returns a new, strictly
 * larger value, and the test remembers the last value read at each writer
 * nesting depth. The time stamp of an event is the clock value its writer read
 * on its successful reservation attempt, so each event carries in its payload
 * the time stamp it must come back with; the reader must return exactly that
 * (not merely something monotonic). Physical order equals clock order (a
 * writer interrupted before its reservation retries with a new clock read; one
 * interrupted after it reserved first), so every read stream must be strictly
 * increasing. Besides, every page is re-parsed with tests/pagewalk.h (no code
 * shared with ringbuf.h) and the buffer contents, the loss reports and the
 * statistics are checked against the test's model of which events are
 * committed, discarded, read or overwritten.
 *
 * THE SWEEP. A scenario is a fixed-seed workload (writes, discards, consumes,
 * read_page calls, time gaps) on a tiny ring (3 pages of 128 or 256 bytes, so
 * page crossings and head pushes are constant). It runs once to count how
 * often each test point is hit; then, for each chosen point p, each occurrence
 * k of p and each chosen action, it runs again with the action injected at the
 * k-th hit of p. Each run is checked completely. Every test prints how many
 * injected runs it made.
 *
 * BUGS FROM SECTION 4 THAT APPLY (one test each, named after the bug):
 *   1  a389d86f7fd0  nested events get their own running time stamp
 *   2  "zero out time extend if nested and not absolute": page boundaries
 *   3  8785f51a1708  nested event between delta computation and write stamp
 *   4  b803d7c664d5  task -> softirq -> hardirq (3-level) nesting
 *   5  b2dd797543cf  interrupt during a discard: next event absolute
 *   6  a0fcaaed0c46  reader takes the page while the writer pads / resets it
 *   7  deadloop reading trace_pipe: reset then read terminates, entries 0
 *   9  bytes stat == the sizes of the records in the buffer
 *  10  iterator series: concurrent writer detection, recording stays on,
 *      dropped events acknowledged
 *  11  adab66b71abf  8-byte alignment mode
 *  12  59-bit absolute stamps (TS_MSB): clock values near and above 2^59
 * and one user-space extra the kernel cannot have: the writer preempted at
 * any step while a reader runs, resumed by a signal handler that writes
 * (tests/core/test_head_push_race.c has the bug it found, spelled out). After
 * every run exactly one link may carry a HEADER/UPDATE flag.
 *
 * BUGS THAT DO NOT APPLY:
 *   7 (the shrink half) and 8 (2d093282b0d4, cpu_buffer->read zeroed on page
 *     removal): ringbuf.h cannot resize a buffer; no page is ever removed, so
 *     there is no shrink to inflate overrun and no removal to reset `read`.
 *     (The reset half of 7 applies and is tested.)
 *   3/4, the kernel's "slow path" itself (tail != w after the xadd, delta
 *     recomputed from write_stamp) does not exist: reservation is a CAS from
 *     the value read at A, so an interrupted writer retries from A. What the
 *     bugs were about -- exact, monotonic time stamps when a nested writer
 *     cuts in between A and D -- applies and is what tests 3 and 4 check.
 *   "Do not try to put back write_stamp" (dd93942570789): write_stamp is
 *     never restored; the only write is at D.
 */
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

/* LDFLAGS: -Wl,--wrap=thrd_yield -Wl,--wrap=sched_yield */
#include "one_thread.h" /* one thread: the library's yields counted, not made */

#include "pagewalk.h"
/* Payload address mod 8 (align8) or mod 4: ALIGN8 payloads are 8-aligned from
 * data[], which starts 12 bytes into the page with a 32-bit long. */
#define PAYLOAD_MOD(align8) ((align8) ? PW_PAGE_HDR % 8 : 0)

#define MAXEV 8192
#define MAXD (RINGBUF_MAX_NEST + 2)
#define NTP RINGBUF__TP_COUNT

/* ---- the model ----------------------------------------------------------- */

enum ev_state { EV_RESERVED = 1, EV_COMMITTED, EV_DISCARDED };

struct ev {
	uint64_t ts;    /* the clock value its writer read last before reserve returned */
	uint32_t len;   /* payload bytes asked for */
	uint8_t state;  /* enum ev_state */
	uint8_t depth;  /* writer nesting depth (1 = outermost) */
	uint8_t read;   /* returned by the consuming reader */
	uint8_t lost;   /* found missing by the reader (overwritten) */
};

/* The head of every payload; the rest is a byte pattern of (id, offset). */
struct pl {
	uint32_t id;
	uint32_t len;
	uint64_t ts;
};

enum action {
	ACT_NONE = 0,
	ACT_W1,    /* a nested writer commits one event */
	ACT_W2,    /* a nested writer commits two events */
	ACT_WD,    /* a nested writer reserves and discards */
	ACT_NEST3, /* three levels: the nested writer is itself interrupted at the same point, twice */
	ACT_READ,  /* a reader (another CPU) consumes everything it can */
	ACT_PAGE,  /* a reader takes a whole page with ringbuf_read_page */
	ACT_ITER,  /* a non-consuming iterator walks everything it can */
	ACT_READ_W1,  /* the writer is preempted: a reader consumes, then a signal handler writes */
	ACT_PAGE_W1,  /* the same with a whole-page read */
	ACT_READ_WD,  /* a reader consumes, then a signal handler reserves and discards */
	ACT_COUNT
};
static const char *const act_names[ACT_COUNT] = {"none", "W1", "W2", "WD", "NEST3", "READ", "PAGE", "ITER",
						 "READ+W1", "PAGE+W1", "READ+WD"};

struct scenario {
	size_t page_size;
	unsigned nr_pages;
	int mode;
	int ts_mode;
	bool align8;
	int nops;
	uint64_t seed;
	uint64_t clock_start;
	uint64_t clock_step;
	int gap_pct;      /* percent of operations preceded by a time gap >= 2^27 */
	int discard_pct;  /* percent of top-level writes discarded */
	uint32_t len_min, len_span;
};

static struct harness {
	const struct scenario *sc;
	struct ringbuf *rb;
	uint64_t rng;
	/* clock */
	uint64_t now, gap_next;
	uint64_t last_read[MAXD + 1];
	/* writers and readers */
	int depth;
	int in_reader;
	struct ev ev[MAXEV];
	uint32_t nev;
	uint64_t drops; /* reserves that returned NULL */
	/* what the consuming reader saw */
	bool any_read;
	uint64_t last_ts;
	uint64_t reads, lost_seen, lost_reported;
	/* injection */
	int tgt_point;
	uint64_t tgt_k;
	int action;
	bool injected;
	int chain_left, chain_depth;
	uint64_t hits[NTP];
	uint64_t injections;
	unsigned char page[1 << 12];
	char fail[512];
} H;

static uint64_t rnd(void)
{
	H.rng ^= H.rng >> 12;
	H.rng ^= H.rng << 25;
	H.rng ^= H.rng >> 27;
	return H.rng * 2685821657736338717ull;
}

static void failf(const char *fmt, ...)
{
	va_list ap;
	if (H.fail[0])
		return;
	va_start(ap, fmt);
	vsnprintf(H.fail, sizeof H.fail, fmt, ap);
	va_end(ap);
}

static uint64_t test_clock(void *ctx)
{
	(void)ctx;
	H.now += H.sc->clock_step + H.gap_next;
	H.gap_next = 0;
	H.last_read[H.depth <= MAXD ? H.depth : MAXD] = H.now;
	return H.now;
}

static uint32_t rec_len_of(uint32_t len)
{
	/* the payload room the reader reports: kernel length rule minus header */
	uint32_t l = pw_expected_len(len, H.sc->align8);
	return (!H.sc->align8 && l - 4 <= PW_MAX_SMALL_DATA) ? l - 4 : l - 8;
}

static unsigned char pat(uint32_t id, uint32_t i)
{
	return (unsigned char)(id * 13u + i * 7u + 1u);
}

/* ---- writers ------------------------------------------------------------- */

static void do_write(bool discard)
{
	uint32_t len = H.sc->len_min + (uint32_t)(rnd() % H.sc->len_span);
	unsigned char *p;
	int d;
	H.depth++;
	d = H.depth;
	p = ringbuf_reserve(H.rb, 0, len);
	if (!p) {
		H.drops++;
		H.depth--;
		return;
	}
	if (H.nev >= MAXEV) {
		failf("model full");
		ringbuf_discard(H.rb, 0, p);
		H.depth--;
		return;
	}
	uint32_t id = H.nev++;
	struct ev *e = &H.ev[id];
	e->ts = H.last_read[d];
	e->len = len;
	e->depth = (uint8_t)d;
	e->state = EV_RESERVED;
	if ((uintptr_t)p % (H.sc->align8 ? 8 : 4) != PAYLOAD_MOD(H.sc->align8))
		failf("reserve returned a payload at %p, not %d-byte aligned", (void *)p, H.sc->align8 ? 8 : 4);
	{
		struct pl h = {id, len, e->ts};
		memcpy(p, &h, sizeof h);
		for (uint32_t i = sizeof h; i < len; i++)
			p[i] = pat(id, i);
	}
	if (discard) {
		e->state = EV_DISCARDED; /* from now on a reader must never return it */
		ringbuf_discard(H.rb, 0, p);
	} else {
		e->state = EV_COMMITTED; /* a reader cutting in during the commit may see it */
		ringbuf_commit(H.rb, 0, p);
	}
	H.depth--;
}

/* ---- readers ------------------------------------------------------------- */

/* Check one event handed out by the consuming reader (consume or read_page).
 * lost: what the reader reported before it (UINT64_MAX: "some, count unknown"). */
static void check_consumed(const void *data, size_t len, uint64_t ts, uint64_t lost, const char *via)
{
	struct pl h;
	uint64_t missing = 0;
	if (len < sizeof h) {
		failf("%s: short event (%zu bytes)", via, len);
		return;
	}
	memcpy(&h, data, sizeof h);
	if (h.id >= H.nev) {
		failf("%s: garbage event (id %u of %u)", via, h.id, H.nev);
		return;
	}
	struct ev *e = &H.ev[h.id];
	if (e->state == EV_RESERVED) {
		failf("%s: returned event %u before it was committed", via, h.id);
		return;
	}
	if (e->state == EV_DISCARDED) {
		failf("%s: returned discarded event %u", via, h.id);
		return;
	}
	if (e->read) {
		failf("%s: returned event %u twice", via, h.id);
		return;
	}
	if (h.len != e->len || h.ts != e->ts || len != rec_len_of(e->len)) {
		failf("%s: event %u corrupt (len %u/%u, record %zu)", via, h.id, h.len, e->len, len);
		return;
	}
	for (uint32_t i = sizeof h; i < e->len; i++)
		if (((const unsigned char *)data)[i] != pat(h.id, i)) {
			failf("%s: event %u payload byte %u corrupt", via, h.id, i);
			return;
		}
	if (ts != e->ts) {
		failf("%s: event %u (depth %u) time stamp %llu, its writer read %llu (off by %lld)", via,
		      h.id, e->depth, (unsigned long long)ts, (unsigned long long)e->ts,
		      (long long)(ts - e->ts));
		return;
	}
	if (H.any_read && ts <= H.last_ts) {
		failf("%s: event %u time stamp %llu not after the previous %llu", via, h.id,
		      (unsigned long long)ts, (unsigned long long)H.last_ts);
		return;
	}
	/* events between the previous read and this one that never came back:
	 * they must have been overwritten, and reported */
	for (uint32_t i = 0; i < H.nev; i++) {
		struct ev *x = &H.ev[i];
		if (x->read || x->lost || x->ts >= ts || (H.any_read && x->ts <= H.last_ts))
			continue;
		if (x->state == EV_RESERVED) {
			failf("%s: event %u read past event %u that is not committed yet", via, h.id, i);
			return;
		}
		if (x->state == EV_COMMITTED) {
			x->lost = 1;
			missing++;
		}
	}
	if (lost == UINT64_MAX)
		lost = missing ? missing : 1;
	if (missing > lost) {
		failf("%s: %llu events vanished before event %u, reported lost %llu", via,
		      (unsigned long long)missing, h.id, (unsigned long long)lost);
		return;
	}
	H.lost_seen += missing;
	H.lost_reported += lost;
	e->read = 1;
	H.any_read = true;
	H.last_ts = ts;
	H.reads++;
}

static void do_consume(int max)
{
	struct ringbuf_record rec;
	struct ringbuf__cpu *c = ringbuf__cpu(H.rb, 0);
	H.in_reader++;
	for (int i = 0; i < max && !H.fail[0]; i++) {
		int r = ringbuf_consume(H.rb, 0, &rec);
		if (r == 0)
			break;
		if (r < 0) {
			if (r != RINGBUF_EAGAIN)
				failf("consume: %s", ringbuf_strerror(r));
			break;
		}
		/* the reader never reads past the commit of its page */
		{
			uint32_t rp = atomic_load(&c->reader_page);
			const unsigned char *d = ringbuf__dp(H.rb, 0, rp)->data;
			uint32_t commit = (uint32_t)(atomic_load(&ringbuf__dp(H.rb, 0, rp)->commit) &
						     PW_COMMIT_MASK);
			const unsigned char *p = rec.data;
			if (p < d || p + rec.len > d + commit)
				failf("consume: event at data offset %td + %zu beyond the page commit %u",
				      p - d, rec.len, commit);
			if ((uintptr_t)p % (H.sc->align8 ? 8 : 4) != PAYLOAD_MOD(H.sc->align8))
				failf("consume: payload misaligned");
		}
		check_consumed(rec.data, rec.len, rec.ts, rec.lost, "consume");
	}
	H.in_reader--;
}

struct page_cb {
	bool first;
	uint64_t lost;
};

static int page_event_cb(const struct pw_record *r, void *vctx)
{
	struct page_cb *pc = vctx;
	if (r->kind != PW_DATA)
		return 0;
	check_consumed(r->payload, r->payload_len, r->ts, pc->first ? pc->lost : 0, "read_page");
	pc->first = false;
	return H.fail[0] ? 1 : 0;
}

static void do_read_page(unsigned flags)
{
	struct pw_page info;
	const char *err = NULL;
	int r;
	H.in_reader++;
	r = ringbuf_read_page(H.rb, 0, H.page, H.sc->page_size, flags);
	if (r < 0 && r != RINGBUF_EAGAIN)
		failf("read_page: %s", ringbuf_strerror(r));
	if (r > 0) {
		struct page_cb pc = {true, 0};
		if (pw_walk_page(H.page, H.sc->page_size, H.sc->align8, NULL, NULL, &info, &err) < 0) {
			failf("read_page: output page invalid: %s", err);
		} else {
			pc.lost = info.missed ? (info.missed_stored ? info.missed_count : UINT64_MAX) : 0;
			if (info.commit != (uint32_t)r)
				failf("read_page returned %d, page commit %u", r, info.commit);
			pw_walk_page(H.page, H.sc->page_size, H.sc->align8, page_event_cb, &pc, &info, &err);
		}
	}
	H.in_reader--;
}

/* A full pass of a fresh iterator: every event it returns is committed, with
 * its exact time stamp, in strictly increasing order, never one already
 * consumed. Returns the number of events; ids in *ids when ids. */
static uint32_t do_iter(uint32_t *ids, uint32_t max)
{
	struct ringbuf_iter *it;
	struct ringbuf_record rec;
	uint64_t last = 0;
	uint32_t n = 0;
	int r;
	H.in_reader++;
	if ((r = ringbuf_iter_start(H.rb, 0, &it)) < 0) {
		failf("iter_start: %s", ringbuf_strerror(r));
		H.in_reader--;
		return 0;
	}
	while ((r = ringbuf_iter_next(it, &rec)) == 1) {
		struct pl h;
		if (rec.len < sizeof h) {
			failf("iter: short event");
			break;
		}
		memcpy(&h, rec.data, sizeof h);
		if (h.id >= H.nev || H.ev[h.id].state != EV_COMMITTED || H.ev[h.id].read ||
		    h.ts != H.ev[h.id].ts || rec.ts != h.ts || rec.len != rec_len_of(H.ev[h.id].len)) {
			failf("iter: bad event id %u (state %d, read %d) ts %llu", h.id,
			      h.id < H.nev ? H.ev[h.id].state : -1, h.id < H.nev ? H.ev[h.id].read : -1,
			      (unsigned long long)rec.ts);
			break;
		}
		if (n && rec.ts <= last) {
			failf("iter: time stamp %llu not after %llu", (unsigned long long)rec.ts,
			      (unsigned long long)last);
			break;
		}
		last = rec.ts;
		if (ids && n < max)
			ids[n] = h.id;
		n++;
	}
	if (r < 0 && r != RINGBUF_EAGAIN)
		failf("iter_next: %s", ringbuf_strerror(r));
	ringbuf_iter_finish(it);
	H.in_reader--;
	return n;
}

/* ---- injection ----------------------------------------------------------- */

static void act(int point)
{
	switch (H.action) {
	case ACT_W1:
	case ACT_NEST3:
		do_write(false);
		break;
	case ACT_W2:
		do_write(false);
		do_write(false);
		break;
	case ACT_WD:
		do_write(true);
		break;
	case ACT_READ:
		if (!H.in_reader)
			do_consume(1 << 20);
		break;
	case ACT_PAGE:
		if (!H.in_reader)
			do_read_page(0);
		break;
	case ACT_ITER:
		if (!H.in_reader)
			(void)do_iter(NULL, 0);
		break;
	case ACT_READ_W1:
	case ACT_READ_WD:
		if (!H.in_reader)
			do_consume(1 << 20);
		do_write(H.action == ACT_READ_WD);
		break;
	case ACT_PAGE_W1:
		if (!H.in_reader)
			do_read_page(0);
		do_write(false);
		break;
	default:
		break;
	}
	(void)point;
}

static void hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	bool fire = false;
	(void)rb;
	(void)cpu;
	(void)ctx;
	if (point <= 0 || point >= NTP)
		return;
	H.hits[point]++;
	if (point != H.tgt_point || H.action == ACT_NONE)
		return;
	if (!H.injected && H.hits[point] == H.tgt_k) {
		fire = true;
		H.injected = true;
		H.chain_depth = H.depth;
		H.chain_left = H.action == ACT_NEST3 ? 2 : 0;
	} else if (H.chain_left > 0 && H.depth == H.chain_depth + 1) {
		fire = true;
		H.chain_left--;
		H.chain_depth = H.depth;
	}
	if (!fire || H.depth >= RINGBUF_MAX_NEST - 1)
		return;
	H.injections++;
	act(point);
}

/* ---- whole-buffer checks ------------------------------------------------- */

struct walk {
	uint32_t read_off;   /* consumed part of the reader page */
	uint64_t last_ts;
	uint64_t bytes;      /* record bytes at or after read_off (reader page) / all (ring) */
	uint64_t data_bytes; /* of which data records, by the kernel length rule */
	uint32_t ids[MAXEV];
	uint32_t nids;
	uint64_t ring_min_ts;/* oldest data event on a ring page */
	bool on_reader;
	const char *err;
	int rc;
};

static int walk_rec_cb(const struct pw_record *r, void *vctx)
{
	struct walk *w = vctx;
	uint32_t from = w->on_reader ? w->read_off : 0;
	if (r->offset == 0 && (r->kind == PW_EXTEND || r->kind == PW_STAMP)) {
		w->err = "a page starts with a time record (the page time stamp must carry the time)";
		return 1;
	}
	if (r->offset < from)
		return 0;
	if (!r->null_padding)
		w->bytes += r->len;
	if (r->kind == PW_DATA) {
		struct pl h;
		if (r->payload_len < sizeof h) {
			w->err = "short event in a page";
			return 1;
		}
		memcpy(&h, r->payload, sizeof h);
		if (h.id >= H.nev || H.ev[h.id].state != EV_COMMITTED || H.ev[h.id].read ||
		    H.ev[h.id].lost || h.ts != H.ev[h.id].ts || r->ts != h.ts) {
			w->err = "a page holds an event that is not committed-and-unread, or with a wrong time";
			return 1;
		}
		w->data_bytes += pw_expected_len(H.ev[h.id].len, H.sc->align8);
		if (w->nids < MAXEV)
			w->ids[w->nids++] = h.id;
		if (!w->on_reader && h.ts < w->ring_min_ts)
			w->ring_min_ts = h.ts;
	}
	return 0;
}

static int walk_page_cb(const void *page, size_t size, int role, void *vctx)
{
	struct walk *w = vctx;
	struct pw_page info;
	const char *err = NULL;
	w->on_reader = role == RINGBUF__PAGE_READER;
	if (pw_check_sequence(w->last_ts, page, size, H.sc->align8, &w->last_ts, &err) < 0) {
		w->err = err;
		return 1;
	}
	if (pw_walk_page(page, size, H.sc->align8, walk_rec_cb, w, &info, &err) != 0) {
		if (!w->err)
			w->err = err;
		return 1;
	}
	if (info.first_delta_nonzero) {
		w->err = "the first event of a page has a non-zero delta";
		return 1;
	}
	return 0;
}

/* With writers quiescent: the pages hold exactly the committed events that
 * are neither read nor overwritten, in order, with the right times, and the
 * statistics agree with the model. */
static void check_buffer(const char *where)
{
	static struct walk w;
	struct ringbuf_stats st;
	uint64_t candidates = 0, committed = 0, discarded = 0, gone;
	memset(&w, 0, sizeof w);
	w.read_off = ringbuf__cpu(H.rb, 0)->read;
	w.ring_min_ts = UINT64_MAX;
	if (ringbuf__walk_pages(H.rb, 0, walk_page_cb, &w) != 0 || w.err) {
		failf("%s: pages: %s", where, w.err ? w.err : "walk failed");
		return;
	}
	{
		/* exactly one link carries a flag: the one into the head page */
		int flags = 0;
		for (uint32_t k = 0; k <= ringbuf_nr_pages(H.rb); k++)
			flags += (atomic_load(&ringbuf__bp(H.rb, 0, k)->next) & RINGBUF__F_MASK) != 0;
		if (flags != 1) {
			failf("%s: %d links carry HEADER/UPDATE flags (expected 1)", where, flags);
			return;
		}
	}
	ringbuf_stats_cpu(H.rb, 0, &st);
	for (uint32_t i = 0; i < H.nev; i++) {
		struct ev *e = &H.ev[i];
		if (e->state == EV_RESERVED) {
			failf("%s: event %u still reserved while quiescent", where, i);
			return;
		}
		if (e->state == EV_DISCARDED) {
			discarded++;
			continue;
		}
		committed++;
		if (!e->read && !e->lost)
			candidates++;
	}
	if (st.committed != committed || st.discarded != discarded) {
		failf("%s: stats committed %llu discarded %llu, model %llu %llu", where,
		      (unsigned long long)st.committed, (unsigned long long)st.discarded,
		      (unsigned long long)committed, (unsigned long long)discarded);
		return;
	}
	if (st.overrun < H.lost_seen) {
		failf("%s: overrun %llu < events the reader found missing %llu", where,
		      (unsigned long long)st.overrun, (unsigned long long)H.lost_seen);
		return;
	}
	/* overwritten, not yet noticed by the reader */
	gone = st.overrun - H.lost_seen;
	if (w.nids + gone != candidates) {
		failf("%s: %u events in the pages + %llu overwritten != %llu committed and unread", where,
		      w.nids, (unsigned long long)gone, (unsigned long long)candidates);
		return;
	}
	/* the overwritten ones are older than everything on the ring pages */
	for (uint32_t i = 0; i < H.nev && gone; i++) {
		struct ev *e = &H.ev[i];
		bool found = false;
		if (e->state != EV_COMMITTED || e->read || e->lost)
			continue;
		for (uint32_t j = 0; j < w.nids && !found; j++)
			found = w.ids[j] == i;
		if (!found && e->ts > w.ring_min_ts) {
			failf("%s: event %u is missing but newer than events still in the ring", where, i);
			return;
		}
	}
	if (st.read_events != H.reads) {
		failf("%s: read_events %llu, model %llu", where, (unsigned long long)st.read_events,
		      (unsigned long long)H.reads);
		return;
	}
	/* kernel bug 9: bytes is what the records in the buffer occupy */
	if (st.bytes != w.bytes) {
		failf("%s: bytes stat %llu, records in the pages %llu", where, (unsigned long long)st.bytes,
		      (unsigned long long)w.bytes);
		return;
	}
	if (st.entries != w.nids) {
		failf("%s: entries %llu, events in the pages %u", where, (unsigned long long)st.entries, w.nids);
		return;
	}
	if (H.drops != st.dropped_events + st.commit_overrun ||
	    st.nest_overflow + st.rejected_events + st.disabled_events != 0) {
		failf("%s: %llu failed reserves, stats dropped %llu commit_overrun %llu other %llu", where,
		      (unsigned long long)H.drops, (unsigned long long)st.dropped_events,
		      (unsigned long long)st.commit_overrun,
		      (unsigned long long)(st.nest_overflow + st.rejected_events + st.disabled_events));
		return;
	}
	if (H.sc->mode == RINGBUF_MODE_PRODUCER_CONSUMER && st.overrun)
		failf("%s: overrun %llu in producer/consumer mode", where, (unsigned long long)st.overrun);
}

/* The iterator, with writers quiescent, returns exactly the events in the
 * pages, oldest first. */
static void check_iterator_matches_pages(void)
{
	static struct walk w;
	static uint32_t ids[MAXEV];
	uint32_t n;
	memset(&w, 0, sizeof w);
	w.read_off = ringbuf__cpu(H.rb, 0)->read;
	w.ring_min_ts = UINT64_MAX;
	if (ringbuf__walk_pages(H.rb, 0, walk_page_cb, &w) != 0 || w.err)
		return; /* check_buffer reports it */
	n = do_iter(ids, MAXEV);
	if (H.fail[0])
		return;
	if (n != w.nids) {
		failf("iterator returned %u events, the pages hold %u", n, w.nids);
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		if (ids[i] != w.ids[i]) {
			failf("iterator event %u is id %u, the pages say %u", i, ids[i], w.ids[i]);
			return;
		}
}

static void drain_and_check_accounting(void)
{
	struct ringbuf_stats st;
	uint64_t committed = 0, unaccounted = 0;
	do_consume(1 << 30);
	if (H.fail[0])
		return;
	ringbuf_stats_cpu(H.rb, 0, &st);
	for (uint32_t i = 0; i < H.nev; i++) {
		struct ev *e = &H.ev[i];
		if (e->state != EV_COMMITTED)
			continue;
		committed++;
		if (!e->read && !e->lost)
			unaccounted++; /* overwritten after the last event read */
	}
	if (H.reads + H.lost_seen + unaccounted != committed || H.lost_seen + unaccounted != st.overrun) {
		failf("drained: read %llu + lost %llu + unaccounted %llu, committed %llu, overrun %llu",
		      (unsigned long long)H.reads, (unsigned long long)H.lost_seen,
		      (unsigned long long)unaccounted, (unsigned long long)committed,
		      (unsigned long long)st.overrun);
		return;
	}
	/* reported losses: every overwritten event the reader noticed, plus at
	 * most the failed reserves */
	if (H.lost_reported < H.lost_seen || H.lost_reported - H.lost_seen > st.dropped_events + st.commit_overrun)
		failf("drained: reported lost %llu, missing %llu, drops %llu", (unsigned long long)H.lost_reported,
		      (unsigned long long)H.lost_seen,
		      (unsigned long long)(st.dropped_events + st.commit_overrun));
	if (st.entries != 0 || st.bytes != 0)
		failf("drained: entries %llu bytes %llu", (unsigned long long)st.entries,
		      (unsigned long long)st.bytes);
}

/* ---- running scenarios --------------------------------------------------- */

static void open_buffer(const struct scenario *sc)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	memset(&H, 0, sizeof H);
	H.sc = sc;
	H.rng = sc->seed * 0x9E3779B97F4A7C15ull + 7;
	H.now = sc->clock_start;
	cfg.page_size = sc->page_size;
	cfg.size_per_cpu = sc->nr_pages * sc->page_size;
	cfg.mode = sc->mode;
	cfg.ts_mode = sc->ts_mode;
	cfg.flags = sc->align8 ? RINGBUF_F_ALIGN8 : 0;
	cfg.clock = test_clock;
	assert_int_equal(ringbuf_create(&cfg, &H.rb), 0);
	assert_int_equal(ringbuf_nr_pages(H.rb), sc->nr_pages);
}

static void workload(void)
{
	const struct scenario *sc = H.sc;
	for (int i = 0; i < sc->nops && !H.fail[0]; i++) {
		int r = (int)(rnd() % 100);
		if ((int)(rnd() % 100) < sc->gap_pct)
			H.gap_next = (1ull << 27) + rnd() % 5000;
		if (r < 60)
			do_write((int)(rnd() % 100) < sc->discard_pct);
		else if (r < 75)
			do_consume(1 + (int)(rnd() % 3));
		else if (r < 85)
			do_read_page(rnd() % 4 == 0 ? RINGBUF_READ_FULL : 0);
		else
			for (int k = 0; k < 4; k++)
				do_write(false);
	}
}

/* One run: the workload with (point, k, action) injected; everything checked.
 * Returns false (with H.fail set) on a failure. */
static bool run_one(const struct scenario *sc, int point, uint64_t k, int action, bool iter_check)
{
	open_buffer(sc);
	H.tgt_point = point;
	H.tgt_k = k;
	H.action = action;
	ringbuf__set_testpoint_hook(hook, NULL);
	workload();
	ringbuf__set_testpoint_hook(NULL, NULL);
	if (!H.fail[0])
		check_buffer("after the workload");
	if (!H.fail[0] && iter_check)
		check_iterator_matches_pages();
	if (!H.fail[0])
		drain_and_check_accounting();
	ringbuf_destroy(H.rb);
	H.rb = NULL;
	return H.fail[0] == 0;
}

static const char *const tp_names[] = {
	"", "A_TIME", "B_BEFORE", "C_RESERVED", "D_WRITE_STAMP", "CROSS_CLAIMED", "CROSS_PADDED",
	"MOVE_TAIL", "H1_COUNTED", "H1_UPDATE", "H2_NEW_HEAD", "H3_DONE", "U1_INTCNT", "U2_RESET",
	"U3_MOVED", "COMMIT_PAGE", "COMMIT_END", "DISCARD_INVAL", "READER_S2"};

static const char *tp_name(int p)
{
	return p > 0 && p < (int)(sizeof tp_names / sizeof tp_names[0]) ? tp_names[p] : "?";
}

struct sweep_stats {
	uint64_t runs, injections;
	uint64_t points_hit[NTP];
};

static uint64_t g_total_runs, g_total_injections;

/* Every occurrence of every point in points[], with every action in acts[]. */
static void sweep(const struct scenario *sc, const int *points, int np, const int *acts, int na,
		  struct sweep_stats *ss, bool iter_check)
{
	uint64_t base[NTP];
	if (!run_one(sc, 0, 0, ACT_NONE, iter_check))
		fail_msg("seed %llu, no injection: %s", (unsigned long long)sc->seed, H.fail);
	memcpy(base, H.hits, sizeof base);
	for (int i = 0; i < np; i++) {
		int p = points[i];
		for (uint64_t k = 1; k <= base[p]; k++)
			for (int a = 0; a < na; a++) {
				if (p == RINGBUF__TP_READER_S2 &&
				    (acts[a] == ACT_READ || acts[a] == ACT_PAGE || acts[a] == ACT_ITER ||
				     acts[a] == ACT_READ_W1 || acts[a] == ACT_PAGE_W1 || acts[a] == ACT_READ_WD))
					continue; /* the reader is already running there */
				if (!run_one(sc, p, k, acts[a], iter_check))
					fail_msg("page %zu pages %u mode %s ts %s align%d seed %llu: %s at "
						 "hit %llu of %s: %s",
						 sc->page_size, sc->nr_pages,
						 sc->mode ? "producer/consumer" : "overwrite",
						 sc->ts_mode ? "absolute" : "delta", sc->align8 ? 8 : 4,
						 (unsigned long long)sc->seed, act_names[acts[a]],
						 (unsigned long long)k, tp_name(p), H.fail);
				ss->runs++;
				ss->injections += H.injections;
				if (H.injections)
					ss->points_hit[p]++;
			}
	}
}

static void report(const char *what, const struct sweep_stats *ss, const int *points, int np)
{
	print_message("  %s: %llu injected runs (%llu cut-ins)\n", what, (unsigned long long)ss->runs,
		      (unsigned long long)ss->injections);
	for (int i = 0; i < np; i++)
		if (!ss->points_hit[points[i]])
			fail_msg("%s: no injection ever happened at %s", what, tp_name(points[i]));
	g_total_runs += ss->runs;
	g_total_injections += ss->injections;
}

static struct scenario base_scenario(uint64_t seed)
{
	struct scenario sc = {
		.page_size = 128,
		.nr_pages = 3,
		.mode = RINGBUF_MODE_OVERWRITE,
		.ts_mode = RINGBUF_TS_DELTA,
		.align8 = false,
		.nops = 28,
		.seed = seed,
		.clock_start = 1000,
		.clock_step = 10,
		.gap_pct = 8,
		.discard_pct = 12,
		.len_min = (uint32_t)sizeof(struct pl),
		.len_span = 36,
	};
	return sc;
}

/* The 8 combinations of mode x time-stamp mode x alignment. */
static void sweep_all_configs(struct scenario sc, const int *points, int np, const int *acts, int na,
			      struct sweep_stats *ss, bool iter_check)
{
	for (int m = 0; m < 8; m++) {
		sc.mode = m & 1 ? RINGBUF_MODE_PRODUCER_CONSUMER : RINGBUF_MODE_OVERWRITE;
		sc.ts_mode = m & 2 ? RINGBUF_TS_ABSOLUTE : RINGBUF_TS_DELTA;
		sc.align8 = (m & 4) != 0;
		sc.page_size = m & 4 ? 256 : 128;
		sweep(&sc, points, np, acts, na, ss, iter_check);
	}
}

/* ---- raw page inspection for the targeted tests --------------------------- */

struct find {
	uint32_t id;
	int kind_before; /* kind of the record just before the event on its page, 0: page start */
	int prev_kind;
	bool found;
	uint64_t ts;
	uint32_t delta;
};

static int find_rec_cb(const struct pw_record *r, void *vctx)
{
	struct find *f = vctx;
	if (r->offset == 0)
		f->prev_kind = 0;
	if (r->kind == PW_DATA && !f->found) {
		struct pl h;
		memcpy(&h, r->payload, sizeof h);
		if (h.id == f->id) {
			f->found = true;
			f->kind_before = f->prev_kind;
			f->ts = r->ts;
			f->delta = r->delta;
		}
	}
	f->prev_kind = r->kind;
	return 0;
}

static int find_page_cb(const void *page, size_t size, int role, void *vctx)
{
	(void)role;
	return pw_walk_page(page, size, H.sc->align8, find_rec_cb, vctx, NULL, NULL) < 0;
}

/* What precedes event id in the pages: PW_STAMP / PW_EXTEND / PW_DATA /
 * PW_PADDING, or 0 when it starts its page. */
static struct find find_event(uint32_t id)
{
	struct find f;
	memset(&f, 0, sizeof f);
	f.id = id;
	ringbuf__walk_pages(H.rb, 0, find_page_cb, &f);
	assert_true(f.found);
	return f;
}

/* A hook for the targeted tests: run fn at the n-th hit of point. */
static int t_point;
static uint64_t t_n, t_hits;
static void (*t_fn)(void);
static void once_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	(void)rb;
	(void)cpu;
	(void)ctx;
	if (point == t_point && ++t_hits == t_n && t_fn)
		t_fn();
}
static void at_hit(int point, uint64_t n, void (*fn)(void))
{
	t_point = point;
	t_n = n;
	t_hits = 0;
	t_fn = fn;
	ringbuf__set_testpoint_hook(once_hook, NULL);
}
static void hook_off(void)
{
	ringbuf__set_testpoint_hook(NULL, NULL);
}
static void nested_write(void)
{
	do_write(false);
}

static const int write_points[] = {
	RINGBUF__TP_A_TIME,      RINGBUF__TP_B_BEFORE,     RINGBUF__TP_C_RESERVED,
	RINGBUF__TP_D_WRITE_STAMP, RINGBUF__TP_CROSS_CLAIMED, RINGBUF__TP_CROSS_PADDED,
	RINGBUF__TP_MOVE_TAIL,   RINGBUF__TP_H1_COUNTED,   RINGBUF__TP_H1_UPDATE,
	RINGBUF__TP_H2_NEW_HEAD, RINGBUF__TP_H3_DONE,      RINGBUF__TP_U1_INTCNT,
	RINGBUF__TP_U2_RESET,    RINGBUF__TP_U3_MOVED,     RINGBUF__TP_COMMIT_PAGE,
	RINGBUF__TP_COMMIT_END,  RINGBUF__TP_DISCARD_INVAL};
#define N_WRITE_POINTS ((int)(sizeof write_points / sizeof write_points[0]))

/* ==== 1. a389d86f7fd0 "Have nested events still record running time stamp" ====
 * Before it, an event written by an interrupt inside another event's
 * reservation got delta 0, i.e. the interrupted event's time. ringbuf.h keeps
 * the kernel's before/write stamp pair, so the same mistake is possible: a
 * nested writer must get the time it read, distinct from the outer event's. */
static void bug_a389d86f7fd0_nested_events_record_their_own_running_time_stamp(void **state)
{
	static const int points[] = {RINGBUF__TP_A_TIME, RINGBUF__TP_B_BEFORE, RINGBUF__TP_C_RESERVED,
				     RINGBUF__TP_D_WRITE_STAMP};
	static const int acts[] = {ACT_W1, ACT_W2};
	struct sweep_stats ss = {0};
	struct scenario sc = base_scenario(11);
	(void)state;

	/* the plain case, spelled out: outer event O, nested N inside it at D */
	sc.gap_pct = 0;
	sc.discard_pct = 0;
	sc.len_span = 1; /* 16-byte payloads: everything fits one page */
	open_buffer(&sc);
	do_write(false); /* id 0 */
	at_hit(RINGBUF__TP_D_WRITE_STAMP, 1, nested_write);
	do_write(false); /* O; N, nested in O's reservation, returns first: id 1, O is id 2 */
	hook_off();
	assert_int_equal(H.nev, 3);
	assert_int_equal(H.ev[1].depth, 2);
	assert_int_equal(H.ev[2].depth, 1);
	assert_true(H.ev[1].ts > H.ev[2].ts); /* N read the clock after O */
	do_consume(10);
	if (H.fail[0])
		fail_msg("%s", H.fail);
	assert_int_equal(H.reads, 3); /* each came back with the time its writer read */
	ringbuf_destroy(H.rb);

	for (uint64_t seed = 1; seed <= 3; seed++) {
		sc = base_scenario(seed);
		sweep_all_configs(sc, points, 4, acts, 2, &ss, false);
	}
	report("nested writers at A..D", &ss, points, 4);
}

/* ==== 2. "Zero out time extend if it is nested and not absolute" ====
 * A nested event's TIME_EXTEND carried a delta relative to the wrong event, so
 * time jumped and then went backwards at the next page. Here an extend is
 * written only when before_stamp == write_stamp, and a page's first event
 * takes the page time stamp: with a time gap before nearly every event (so
 * extends everywhere) and nested writers at every step, including page
 * crossings, every page must start without a time record, chain in time with
 * the previous page, and every event must come back with its exact time. */
static void bug_nested_time_extend_at_page_boundaries_time_never_goes_backwards(void **state)
{
	static const int acts[] = {ACT_W1, ACT_NEST3};
	struct sweep_stats ss = {0};
	(void)state;
	for (uint64_t seed = 21; seed <= 22; seed++) {
		struct scenario sc = base_scenario(seed);
		sc.gap_pct = 90;
		sc.ts_mode = RINGBUF_TS_DELTA;
		sweep(&sc, write_points, N_WRITE_POINTS, acts, 2, &ss, false);
		sc.page_size = 256;
		sc.align8 = true;
		sweep(&sc, write_points, N_WRITE_POINTS, acts, 2, &ss, false);
	}
	report("time gaps before every event, nested at every write step", &ss, write_points,
	       N_WRITE_POINTS - 1 /* DISCARD_INVAL needs discards: test 5 */);
}

/* ==== 3. 8785f51a1708 "Set the right timestamp in the slow path" ====
 * A nested event between the delta computation (A) and the write stamp (D).
 * Spelled out: at C (outer reserved, write_stamp not yet its time) the nested
 * event must be absolute (the stamps disagree), and the event after the outer
 * one must be absolute too (write_stamp holds the outer time while the nested
 * event is physically last). */
static void bug_8785f51a1708_nested_event_between_delta_and_write_stamp(void **state)
{
	static const int points[] = {RINGBUF__TP_A_TIME, RINGBUF__TP_B_BEFORE, RINGBUF__TP_C_RESERVED};
	static const int acts[] = {ACT_W1, ACT_W2, ACT_WD, ACT_NEST3};
	struct sweep_stats ss = {0};
	struct scenario sc = base_scenario(31);
	struct find f;
	(void)state;

	sc.gap_pct = 0;
	sc.discard_pct = 0;
	sc.len_span = 1; /* 16-byte payloads: everything fits one page */
	open_buffer(&sc);
	do_write(false); /* 0 */
	at_hit(RINGBUF__TP_C_RESERVED, 1, nested_write);
	do_write(false); /* outer = id 2; nested at its C returns first: id 1 */
	hook_off();
	do_write(false); /* 3 */
	assert_int_equal(H.nev, 4);
	assert_int_equal(H.ev[1].depth, 2);
	f = find_event(2);
	assert_int_equal(f.kind_before, PW_DATA); /* a plain delta from event 0 */
	f = find_event(1);
	assert_int_equal(f.kind_before, PW_STAMP);
	assert_int_equal(f.ts, H.ev[1].ts);
	f = find_event(3);
	assert_int_equal(f.kind_before, PW_STAMP);
	assert_int_equal(f.ts, H.ev[3].ts);
	do_consume(10);
	if (H.fail[0])
		fail_msg("%s", H.fail);
	assert_int_equal(H.reads, 4);
	ringbuf_destroy(H.rb);

	for (uint64_t seed = 31; seed <= 33; seed++) {
		sc = base_scenario(seed);
		sweep_all_configs(sc, points, 3, acts, 4, &ss, false);
	}
	report("nested between A and D", &ss, points, 3);
}

/* ==== 4. b803d7c664d5 "Fix slowpath of interrupted event" ====
 * Task -> softirq -> hardirq: three writers nested at the same step. The
 * kernel trusted write_stamp where it was only valid when equal to
 * before_stamp. Every step of the write path, three levels deep. */
static void bug_b803d7c664d5_three_level_nesting_at_every_write_step(void **state)
{
	static const int acts[] = {ACT_NEST3};
	struct sweep_stats ss = {0};
	(void)state;
	for (uint64_t seed = 41; seed <= 42; seed++) {
		struct scenario sc = base_scenario(seed);
		sc.discard_pct = 25;
		sweep_all_configs(sc, write_points, N_WRITE_POINTS, acts, 1, &ss, false);
	}
	report("three levels at every write step", &ss, write_points, N_WRITE_POINTS);
}

/* ==== 5. b2dd797543cf "Force absolute timestamp on discard of event" ====
 * An interrupt during a discard took the discarded event's time as its base.
 * Spelled out: (a) a writer nested in the discard, after the stamp was
 * invalidated and before the roll-back, is absolute and makes the discarded
 * event padding; (b) one nested after the roll-back (in the discard's
 * end_commit) is absolute too; (c) in both cases the next event is exact. */
static void discard_outer_with_nested_at(int point)
{
	struct find f;
	struct scenario sc = base_scenario(51);
	sc.gap_pct = 0;
	sc.discard_pct = 0;
	sc.len_span = 1; /* 16-byte payloads: everything fits one page */
	open_buffer(&sc);
	do_write(false); /* 0 */
	at_hit(point, 1, nested_write);
	do_write(true); /* 1 discarded, 2 nested inside the discard */
	hook_off();
	do_write(false); /* 3 */
	assert_int_equal(H.nev, 4);
	assert_int_equal(H.ev[1].state, EV_DISCARDED);
	f = find_event(2);
	/* after padding (a) or at the rolled-back position (b): absolute */
	assert_int_equal(f.kind_before, PW_STAMP);
	assert_int_equal(f.ts, H.ev[2].ts);
	f = find_event(3);
	assert_int_equal(f.ts, H.ev[3].ts);
	do_consume(10);
	if (H.fail[0])
		fail_msg("%s", H.fail);
	assert_int_equal(H.reads, 3);
	ringbuf_destroy(H.rb);
}

static void bug_b2dd797543cf_interrupt_during_discard_is_absolute_and_exact(void **state)
{
	static const int points[] = {RINGBUF__TP_DISCARD_INVAL, RINGBUF__TP_COMMIT_END};
	static const int acts[] = {ACT_W1, ACT_W2, ACT_WD, ACT_NEST3};
	struct sweep_stats ss = {0};
	(void)state;
	discard_outer_with_nested_at(RINGBUF__TP_DISCARD_INVAL);
	/* the second COMMIT_END hit: the first is event 0's commit */
	discard_outer_with_nested_at(RINGBUF__TP_COMMIT_END);
	{
		/* (b) spelled out with the hit count: event 0 commits (hit 1), the
		 * discard's end_commit is hit 2 */
		struct scenario sc = base_scenario(52);
		struct find f;
		sc.gap_pct = 0;
		sc.len_span = 1;
		open_buffer(&sc);
		do_write(false);
		at_hit(RINGBUF__TP_COMMIT_END, 1, nested_write);
		do_write(true); /* 1 rolled back; 2 written inside the discard's end_commit */
		hook_off();
		assert_int_equal(H.nev, 3);
		f = find_event(2);
		assert_int_equal(f.kind_before, PW_STAMP);
		assert_int_equal(f.ts, H.ev[2].ts);
		do_consume(10);
		if (H.fail[0])
			fail_msg("%s", H.fail);
		assert_int_equal(H.reads, 2);
		ringbuf_destroy(H.rb);
	}
	for (uint64_t seed = 51; seed <= 54; seed++) {
		struct scenario sc = base_scenario(seed);
		sc.discard_pct = 50;
		sweep_all_configs(sc, points, 2, acts, 4, &ss, false);
	}
	report("nested inside discards", &ss, points, 2);
}

/* ==== 6. a0fcaaed0c46 "Fix race between reset page and reading page" ====
 * The reader swapped out the page a writer had claimed the end of, before the
 * writer padded it and set `write` back, and read past the end. Here the
 * reader only trusts `commit`. Spelled out: the tail page is the head page
 * (reader page empty); the writer claims its end; the reader, at that exact
 * step, swaps it out and reads the committed events; at the next step
 * (padding written, write not restored) a second read finds nothing; after
 * the writer finishes, the new event is read on the next page. */
static uint32_t g_cross_page;
static void reader_takes_the_crossing_page(void)
{
	uint32_t rp;
	do_consume(100);
	rp = atomic_load(&ringbuf__cpu(H.rb, 0)->reader_page);
	if (rp != g_cross_page)
		failf("the reader did not take the page being crossed (reader page %u, tail %u)", rp,
		      g_cross_page);
}
static void reader_finds_nothing_more(void)
{
	uint64_t before = H.reads;
	do_consume(100);
	if (H.reads != before)
		failf("the reader returned %llu events from a page being padded",
		      (unsigned long long)(H.reads - before));
}
static void two_step_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	(void)rb;
	(void)cpu;
	(void)ctx;
	if (point == RINGBUF__TP_CROSS_CLAIMED)
		reader_takes_the_crossing_page();
	else if (point == RINGBUF__TP_CROSS_PADDED)
		reader_finds_nothing_more();
}

static void bug_a0fcaaed0c46_reader_takes_page_between_pad_and_reset(void **state)
{
	static const int points[] = {RINGBUF__TP_CROSS_CLAIMED, RINGBUF__TP_CROSS_PADDED,
				     RINGBUF__TP_MOVE_TAIL,     RINGBUF__TP_H1_COUNTED,
				     RINGBUF__TP_H1_UPDATE,     RINGBUF__TP_H2_NEW_HEAD,
				     RINGBUF__TP_H3_DONE,       RINGBUF__TP_U1_INTCNT,
				     RINGBUF__TP_U2_RESET,      RINGBUF__TP_U3_MOVED,
				     RINGBUF__TP_COMMIT_PAGE,   RINGBUF__TP_COMMIT_END};
	static const int acts[] = {ACT_READ, ACT_PAGE};
	struct sweep_stats ss = {0};
	struct scenario sc = base_scenario(61);
	(void)state;

	sc.gap_pct = 0;
	sc.discard_pct = 0;
	sc.len_span = 1; /* 16-byte payloads: 20-byte events, 5 per 112-byte page */
	open_buffer(&sc);
	for (int i = 0; i < 5; i++)
		do_write(false);
	g_cross_page = atomic_load(&ringbuf__cpu(H.rb, 0)->tail_page);
	assert_int_equal(ringbuf__bp(H.rb, 0, g_cross_page)->write & RINGBUF__WRITE_MASK, 100);
	ringbuf__set_testpoint_hook(two_step_hook, NULL);
	do_write(false); /* id 5 does not fit: crosses */
	hook_off();
	if (H.fail[0])
		fail_msg("%s", H.fail);
	assert_int_equal(H.reads, 5);
	assert_int_not_equal(atomic_load(&ringbuf__cpu(H.rb, 0)->tail_page), g_cross_page);
	do_consume(100);
	if (H.fail[0])
		fail_msg("%s", H.fail);
	assert_int_equal(H.reads, 6);
	assert_int_equal(H.lost_reported, 0);
	ringbuf_destroy(H.rb);

	for (uint64_t seed = 61; seed <= 64; seed++) {
		sc = base_scenario(seed);
		sweep_all_configs(sc, points, 12, acts, 2, &ss, false);
	}
	report("reader at page-crossing steps", &ss, points, 12);
}

/* ==== 7. "Fix deadloop issue on reading trace_pipe" ====
 * After a reset, stale page state made entries read 0 while the reader kept
 * finding "data" and looped forever. Reset in every awkward state (partially
 * read reader page, lost events pending, pages overwritten, after
 * read_page), then read: returns 0 at once, entries/bytes/overrun 0, and the
 * next events come back exactly with no loss reported. A watchdog alarm
 * turns an endless loop into a failure. */
static void reset_then_read(int state_kind)
{
	struct ringbuf_stats st;
	struct ringbuf_record rec;
	struct scenario sc = base_scenario(71);
	sc.gap_pct = 0;
	sc.len_span = 1; /* 20-byte events: 40 overwrite the 3 pages, the 7 after the reset fit */
	open_buffer(&sc);
	for (int i = 0; i < 40; i++)
		do_write(false); /* overwrites: 3 pages hold ~12 of them */
	switch (state_kind) {
	case 0: /* lost events pending, nothing read */
		break;
	case 1: /* partially read reader page */
		do_consume(2);
		break;
	case 2: /* after a whole page was read */
		do_read_page(0);
		break;
	case 3: /* drained completely, then more overwrites */
		do_consume(1000);
		for (int i = 0; i < 30; i++)
			do_write(false);
		break;
	}
	if (H.fail[0])
		fail_msg("state %d: %s", state_kind, H.fail);
	alarm(10);
	assert_int_equal(ringbuf_reset_cpu(H.rb, 0), 0);
	assert_int_equal(ringbuf_consume(H.rb, 0, &rec), 0);
	assert_int_equal(ringbuf_peek(H.rb, 0, &rec), 0);
	assert_true(ringbuf_empty_cpu(H.rb, 0));
	assert_int_equal(ringbuf_read_page(H.rb, 0, H.page, sc.page_size, 0), 0);
	ringbuf_stats_cpu(H.rb, 0, &st);
	assert_int_equal(st.entries, 0);
	assert_int_equal(st.bytes, 0);
	assert_int_equal(st.overrun, 0);
	assert_int_equal(st.read_events, 0);
	assert_int_equal(st.committed, 0);
	/* start the model afresh and write again */
	for (uint32_t i = 0; i < H.nev; i++)
		H.ev[i].state = EV_DISCARDED; /* gone with the reset: must never come back */
	H.any_read = false;
	H.reads = H.lost_seen = H.lost_reported = 0;
	uint32_t first = H.nev;
	for (int i = 0; i < 7; i++)
		do_write(false);
	for (int i = 0; i < 7; i++) {
		assert_int_equal(ringbuf_consume(H.rb, 0, &rec), 1);
		assert_int_equal(rec.lost, 0);
		check_consumed(rec.data, rec.len, rec.ts, rec.lost, "after reset");
		if (H.fail[0])
			fail_msg("state %d: %s", state_kind, H.fail);
		{
			struct pl h;
			memcpy(&h, rec.data, sizeof h); /* payloads are 4-byte aligned */
			assert_int_equal(h.id, first + (uint32_t)i);
		}
	}
	assert_int_equal(ringbuf_consume(H.rb, 0, &rec), 0);
	alarm(0);
	ringbuf_destroy(H.rb);
}

static void bug_deadloop_reset_then_read_terminates_with_no_entries(void **state)
{
	(void)state;
	for (int k = 0; k < 4; k++)
		reset_then_read(k);
}

/* ==== 9. "Fix bytes info in per_cpu buffer stats" ====
 * The bytes counter used the page size instead of the page's commit and
 * counted padding twice. In every run of a sweep with discards (padding),
 * page-end padding, overwritten pages and partial reads, check_buffer()
 * compares the bytes statistic with the records really in the pages; here
 * additionally the data part equals the kernel length rule applied to the
 * payloads the model says are in the buffer. */
static struct walk g_w9;
static void bug_9_bytes_stat_equals_sizes_of_the_records_in_the_buffer(void **state)
{
	static const int points[] = {RINGBUF__TP_D_WRITE_STAMP, RINGBUF__TP_CROSS_PADDED,
				     RINGBUF__TP_DISCARD_INVAL};
	static const int acts[] = {ACT_W1, ACT_WD};
	struct sweep_stats ss = {0};
	(void)state;
	for (uint64_t seed = 91; seed <= 95; seed++) {
		struct scenario sc = base_scenario(seed);
		struct ringbuf_stats st;
		uint64_t want = 0;
		sc.discard_pct = 40;
		sc.gap_pct = 0;
		/* a run without injection, then an independent byte count */
		open_buffer(&sc);
		for (int i = 0; i < 30; i++) {
			at_hit(RINGBUF__TP_D_WRITE_STAMP, 1, nested_write); /* discards become padding */
			do_write(i % 3 == 0);
			hook_off();
			if (i % 7 == 3)
				do_consume(2);
		}
		if (H.fail[0])
			fail_msg("%s", H.fail);
		memset(&g_w9, 0, sizeof g_w9);
		g_w9.read_off = ringbuf__cpu(H.rb, 0)->read;
		g_w9.ring_min_ts = UINT64_MAX;
		assert_int_equal(ringbuf__walk_pages(H.rb, 0, walk_page_cb, &g_w9), 0);
		ringbuf_stats_cpu(H.rb, 0, &st);
		assert_int_equal(st.bytes, g_w9.bytes);
		/* the data records: exactly the unread, not overwritten events */
		for (uint32_t j = 0; j < g_w9.nids; j++)
			want += pw_expected_len(H.ev[g_w9.ids[j]].len, sc.align8);
		assert_int_equal(g_w9.data_bytes, want);
		assert_true(st.bytes > want); /* padding and page ends are counted too */
		ringbuf_destroy(H.rb);
		sweep_all_configs(sc, points, 3, acts, 2, &ss, false);
	}
	report("bytes with padding, overwrite and partial reads", &ss, points, 3);
}

/* ==== 10. Iterator series (page_stamp, "handle concurrent writer", 1039221cc278
 * "Do not disable recording when there is an iterator", "acknowledge dropped
 * events") ====
 * ringbuf.h has a non-consuming iterator that copies events out of pages
 * writers may be reusing. (a) At every step of the write path an iterator pass
 * returns only committed events, exact, in order (never the event being
 * written); with writers quiescent it returns exactly what the pages hold.
 * (b) Writers overwrite the page under an open iterator: it skips to what is
 * still there, reports the skip (rec.lost and ringbuf_iter_dropped), and never
 * returns garbage. (c) An open iterator does not stop recording. (d), in the
 * next test: after such a skip it never goes back to events it already
 * returned. */
static void bug_iterator_series_concurrent_writer_dropped_events_recording_on(void **state)
{
	static const int acts[] = {ACT_ITER};
	struct sweep_stats ss = {0};
	struct scenario sc = base_scenario(101);
	struct ringbuf_iter *it;
	struct ringbuf_record rec;
	struct ringbuf_stats st;
	uint64_t last = 0;
	uint32_t got = 0, skipped_reports = 0;
	(void)state;

	/* (b) and (c) */
	sc.gap_pct = 0;
	sc.discard_pct = 0;
	sc.len_span = 1;
	open_buffer(&sc);
	for (int i = 0; i < 10; i++)
		do_write(false);
	assert_int_equal(ringbuf_iter_start(H.rb, 0, &it), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(ringbuf_iter_next(it, &rec), 1);
		last = rec.ts;
	}
	for (int i = 0; i < 60; i++) /* many times around the 3-page ring */
		do_write(false);
	for (;;) {
		int r = ringbuf_iter_next(it, &rec);
		struct pl h;
		if (r == 0)
			break;
		assert_int_equal(r, 1);
		memcpy(&h, rec.data, sizeof h);
		assert_true(h.id < H.nev);
		assert_int_equal(rec.ts, H.ev[h.id].ts);
		assert_int_equal(h.ts, H.ev[h.id].ts);
		assert_true(rec.ts > last);
		if (rec.lost)
			skipped_reports++;
		last = rec.ts;
		got++;
	}
	assert_true(ringbuf_iter_dropped(it) > 0);
	assert_true(skipped_reports > 0);
	assert_true(got > 0 && got < 60);
	ringbuf_stats_cpu(H.rb, 0, &st);
	assert_int_equal(st.disabled_events, 0);
	assert_int_equal(st.committed, 70);
	ringbuf_iter_finish(it);
	ringbuf_destroy(H.rb);

	/* (a) */
	for (uint64_t seed = 101; seed <= 102; seed++) {
		sc = base_scenario(seed);
		sweep_all_configs(sc, write_points, N_WRITE_POINTS, acts, 1, &ss, true);
	}
	report("iterator at every write step", &ss, write_points, N_WRITE_POINTS);
}

/* 10 (d): an iterator ahead of the consumer, overwritten under it, must not
 * go back to events it already returned. The kernel's iterator restarts at
 * the reader page when it detects the overwrite; a port that does the same
 * hands out duplicates, older than what it returned before, and time goes
 * backwards in the iterator's stream. */
static void bug_iterator_never_returns_an_event_twice_after_an_overwrite(void **state)
{
	struct scenario sc = base_scenario(103);
	struct ringbuf_iter *it;
	struct ringbuf_record rec;
	uint64_t last = 0;
	(void)state;
	sc.gap_pct = 0;
	sc.discard_pct = 0;
	sc.len_span = 1;
	/* the consumer has read event 0, the iterator returns 1..4 (reader page)
	 * and 5..6 (the next page), the writers wrap the ring; what follows
	 * must be newer than event 6 */
	open_buffer(&sc);
	for (int i = 0; i < 12; i++)
		do_write(false); /* 20-byte events: 5 per page */
	do_consume(1);
	assert_int_equal(H.reads, 1);
	assert_int_equal(ringbuf_iter_start(H.rb, 0, &it), 0);
	for (int i = 1; i <= 6; i++) {
		struct pl h;
		assert_int_equal(ringbuf_iter_next(it, &rec), 1);
		memcpy(&h, rec.data, sizeof h);
		assert_int_equal(h.id, i);
		last = rec.ts;
	}
	for (int i = 0; i < 20; i++)
		do_write(false);
	for (int n = 0; n < 40; n++) {
		struct pl h;
		int r = ringbuf_iter_next(it, &rec);
		if (r == 0)
			break;
		assert_int_equal(r, 1);
		memcpy(&h, rec.data, sizeof h);
		if (rec.ts <= last)
			fail_msg("after the overwrite the iterator went back to event %u (ts %llu, lost %llu) "
				 "after returning event 6 (ts %llu)",
				 h.id, (unsigned long long)rec.ts, (unsigned long long)rec.lost,
				 (unsigned long long)last);
		last = rec.ts;
	}
	ringbuf_iter_finish(it);
	ringbuf_destroy(H.rb);
}

/* ==== 11. adab66b71abf Revert "Remove HAVE_64BIT_ALIGNED_ACCESS" ====
 * sparc64 trapped on 8-byte fields of 4-byte aligned events. With
 * RINGBUF_F_ALIGN8 every payload (reserve and read side) is 8-byte aligned (from
 * data[], which is 4 mod 8 with a 32-bit long: PAYLOAD_MOD) and
 * every record a multiple of 8, also after time records, padding, discards
 * and nesting at every step. (do_write and do_consume check the pointers;
 * pagewalk checks the records.) */
static void bug_adab66b71abf_8_byte_alignment_mode_under_nesting(void **state)
{
	static const int acts[] = {ACT_W1, ACT_NEST3, ACT_WD, ACT_READ};
	struct sweep_stats ss = {0};
	(void)state;
	for (uint64_t seed = 111; seed <= 112; seed++) {
		struct scenario sc = base_scenario(seed);
		sc.align8 = true;
		sc.page_size = 256;
		sc.gap_pct = 20;
		sc.len_span = 61; /* payload lengths of every residue mod 8 */
		sweep(&sc, write_points, N_WRITE_POINTS, acts, 4, &ss, false);
		sc.ts_mode = RINGBUF_TS_ABSOLUTE;
		sweep(&sc, write_points, N_WRITE_POINTS, acts, 4, &ss, false);
	}
	report("8-byte alignment", &ss, write_points, N_WRITE_POINTS);
}

/* ==== 12. 59-bit absolute time stamps (TS_MSB, 2022) ====
 * A TIME_STAMP holds 59 bits; clocks with any of the top 5 bits set lost them.
 * The clock starts just below 2^59 (crossing it during the run) and, second,
 * with all top 5 bits set; both time-stamp modes, nested writers everywhere,
 * consume and read_page: every time stamp comes back as the full 64-bit
 * value. */
static void bug_ts_msb_59_bit_stamps_clock_near_and_above_2_pow_59(void **state)
{
	static const int acts[] = {ACT_W1, ACT_NEST3, ACT_PAGE};
	static const uint64_t starts[] = {(1ull << 59) - 700, 0xF800000000000000ull + (1ull << 40),
					  (3ull << 59) - 500};
	struct sweep_stats ss = {0};
	(void)state;
	for (unsigned s = 0; s < 3; s++) {
		struct scenario sc = base_scenario(121 + s);
		sc.clock_start = starts[s];
		sc.clock_step = 9;
		sc.gap_pct = 10;
		sweep(&sc, write_points, N_WRITE_POINTS, acts, 3, &ss, false);
		sc.ts_mode = RINGBUF_TS_ABSOLUTE;
		sweep(&sc, write_points, N_WRITE_POINTS, acts, 3, &ss, false);
	}
	{
		/* spelled out: one event on each side of 2^59 on the same page */
		struct scenario sc = base_scenario(125);
		struct ringbuf_record rec;
		sc.clock_start = (1ull << 59) - 15;
		sc.gap_pct = 0;
		sc.ts_mode = RINGBUF_TS_ABSOLUTE;
		open_buffer(&sc);
		do_write(false);
		do_write(false);
		do_write(false);
		assert_true(H.ev[0].ts < (1ull << 59) && H.ev[2].ts > (1ull << 59));
		for (int i = 0; i < 3; i++) {
			assert_int_equal(ringbuf_consume(H.rb, 0, &rec), 1);
			assert_int_equal(rec.ts, H.ev[i].ts);
		}
		ringbuf_destroy(H.rb);
	}
	report("clock near and above 2^59", &ss, write_points, N_WRITE_POINTS - 1);
}

/* ==== Not a kernel bug: the preempted writer ====
 * The kernel's writers run with preemption off; a user-space writer can be
 * preempted at any step for milliseconds while a reader on another CPU
 * consumes and swaps pages, and then resume with a signal pending whose
 * handler writes first. At every step of the write path: a reader consumes
 * everything it can (or takes a page), then a nested writer writes (or
 * discards). This is how tests/core/test_head_push_race.c's bug is reached at H2;
 * here every other step gets the same treatment (check_buffer() asserts
 * after every run that exactly one link carries a flag: the one into the
 * head page). */
static void preempted_writer_reader_then_signal_at_every_write_step(void **state)
{
	static const int acts[] = {ACT_READ_W1, ACT_PAGE_W1, ACT_READ_WD};
	struct sweep_stats ss = {0};
	(void)state;
	for (uint64_t seed = 131; seed <= 133; seed++) {
		struct scenario sc = base_scenario(seed);
		sc.nops = 36;
		sweep_all_configs(sc, write_points, N_WRITE_POINTS, acts, 3, &ss, false);
	}
	report("preempted writer: reader, then a signal handler, at every write step", &ss, write_points,
	       N_WRITE_POINTS);
}

static void totals(void **state)
{
	(void)state;
	print_message("  all tests: %llu injected runs, %llu cut-ins\n", (unsigned long long)g_total_runs,
		      (unsigned long long)g_total_injections);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bug_a389d86f7fd0_nested_events_record_their_own_running_time_stamp),
		cmocka_unit_test(bug_nested_time_extend_at_page_boundaries_time_never_goes_backwards),
		cmocka_unit_test(bug_8785f51a1708_nested_event_between_delta_and_write_stamp),
		cmocka_unit_test(bug_b803d7c664d5_three_level_nesting_at_every_write_step),
		cmocka_unit_test(bug_b2dd797543cf_interrupt_during_discard_is_absolute_and_exact),
		cmocka_unit_test(bug_a0fcaaed0c46_reader_takes_page_between_pad_and_reset),
		cmocka_unit_test(bug_deadloop_reset_then_read_terminates_with_no_entries),
		cmocka_unit_test(bug_9_bytes_stat_equals_sizes_of_the_records_in_the_buffer),
		cmocka_unit_test(bug_iterator_series_concurrent_writer_dropped_events_recording_on),
		cmocka_unit_test(bug_iterator_never_returns_an_event_twice_after_an_overwrite),
		cmocka_unit_test(bug_adab66b71abf_8_byte_alignment_mode_under_nesting),
		cmocka_unit_test(bug_ts_msb_59_bit_stamps_clock_near_and_above_2_pow_59),
		cmocka_unit_test(preempted_writer_reader_then_signal_at_every_write_step),
		cmocka_unit_test(totals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
