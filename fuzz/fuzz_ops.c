/* fuzz_ops.c - libFuzzer target: random operation sequences against a model.
 *
 * The input is a program: two configuration bytes (page size, ring pages,
 * mode, time-stamp mode, alignment), then one operation per byte with its
 * arguments in the following bytes: write, write+discard, write with a nested
 * writer or a reader injected at a chosen test point of the write path (what a
 * signal handler or another CPU does at that instant), consume, peek, read
 * page, reset, mode switch, time jump, iterator pass, record off/on, per-CPU
 * disable, bad input; and the "preempted writer" pattern: at a test point a
 * reader consumes, then a nested writer writes.
 *
 * The reference model knows every event: its payload, its length and the
 * exact time stamp it must come back with (the clock is ours: strictly
 * increasing, and the model remembers the last value each nesting level read,
 * which is the stamp of the event reserved at that level). Checked:
 *   - the reader returns only committed events, each at most once, intact,
 *     with the exact time stamp, in strictly increasing time order (which is
 *     the physical order), never a discarded, uncommitted or pre-reset event;
 *   - events that never come back were overwritten and reported in rec.lost
 *     (or the read_page missed count) of the next event;
 *   - peek returns what the next consume returns;
 *   - the iterator returns committed, unconsumed events in order;
 *   - the accounting identity: committed == read + overwritten + in buffer,
 *     and every failed reserve is counted under its reason (dropped_events +
 *     commit_overrun, disabled_events, rejected_events);
 *   - with writers quiescent the pages (re-parsed by tests/pagewalk.h) hold
 *     exactly the events the model says are in the buffer, the bytes
 *     statistic equals the records they hold, and exactly one link carries
 *     a HEADER/UPDATE flag.
 */
#define RINGBUF_TESTING 1
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/pagewalk.h"

#define MAXEV 16384
#define MAXD (RINGBUF_MAX_NEST + 2)

static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "fuzz_ops: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	abort();
}

enum { EV_RESERVED = 1, EV_COMMITTED, EV_DISCARDED, EV_GONE /* reset */ };

struct ev {
	uint64_t ts;
	uint32_t len;
	uint8_t state, read, lost;
};

static struct {
	const uint8_t *in;
	size_t n, pos;
	struct ringbuf *rb;
	size_t page_size;
	bool align8;
	/* clock */
	uint64_t now, step, gap_next, last_read[MAXD + 1];
	int depth, in_reader;
	struct ev ev[MAXEV];
	uint32_t nev, lo; /* ids below lo are settled (read, lost, discarded or gone) */
	/* expectations since the last reset */
	uint64_t committed, discarded, drops, disabled, rejected;
	uint64_t reads, lost_seen, lost_reported;
	uint64_t owed; /* vanished events whose count a full read_page page had no room for */
	uint64_t overrun_base; /* overrun before the last reset (the stat restarts) */
	bool any_read;
	uint64_t last_ts;
	bool off, cpu_disabled;
	/* injection */
	int tp_point, tp_action, tp_chain;
	bool tp_armed;
	_Alignas(16) unsigned char page[8192]; /* see tests/tools/test_fuzz_findings.c: read_page needs alignment */
} S;

static unsigned next(void)
{
	return S.pos < S.n ? S.in[S.pos++] : 0;
}

static uint64_t fuzz_clock(void *ctx)
{
	(void)ctx;
	S.now += S.step + S.gap_next;
	S.gap_next = 0;
	S.last_read[S.depth <= MAXD ? S.depth : MAXD] = S.now;
	return S.now;
}

static uint32_t room_of(uint32_t len)
{
	uint32_t l = pw_expected_len(len, S.align8);
	return (!S.align8 && l - 4 <= PW_MAX_SMALL_DATA) ? l - 4 : l - 8;
}

static unsigned char pat(uint32_t id, uint32_t i)
{
	return (unsigned char)(id * 29u + i * 3u + 5u);
}

static bool expect_refused(void)
{
	return S.off || S.cpu_disabled;
}

/* ---- writers ---------------------------------------------------------------- */

static void write_event(unsigned len_byte, bool discard)
{
	uint32_t max = (uint32_t)ringbuf_max_event_size(S.rb);
	uint32_t len = 4 + len_byte * 7 % (max - 3); /* 4 .. max */
	unsigned char *p;
	int d;
	S.depth++;
	d = S.depth;
	p = ringbuf_reserve(S.rb, 0, len);
	if (!p) {
		if (expect_refused())
			S.disabled++;
		else
			S.drops++;
		S.depth--;
		return;
	}
	if (expect_refused())
		fail("reserve succeeded while recording is off/disabled");
	if (S.nev >= MAXEV) {
		ringbuf_discard(S.rb, 0, p);
		S.discarded++;
		S.depth--;
		return;
	}
	uint32_t id = S.nev++;
	struct ev *e = &S.ev[id];
	e->ts = S.last_read[d];
	e->len = len;
	e->state = EV_RESERVED;
	if ((uintptr_t)p % (S.align8 ? 8 : 4))
		fail("misaligned payload");
	memcpy(p, &id, 4);
	for (uint32_t i = 4; i < len; i++)
		p[i] = pat(id, i);
	if (discard) {
		e->state = EV_DISCARDED;
		ringbuf_discard(S.rb, 0, p);
		S.discarded++;
	} else {
		e->state = EV_COMMITTED;
		ringbuf_commit(S.rb, 0, p);
		S.committed++;
	}
	S.depth--;
}

/* ---- readers ---------------------------------------------------------------- */

static void settle(void)
{
	while (S.lo < S.nev) {
		struct ev *e = &S.ev[S.lo];
		if (e->state == EV_COMMITTED && !e->read && !e->lost)
			break;
		if (e->state == EV_RESERVED)
			break;
		S.lo++;
	}
}

/* may_defer: the first event of a read_page page that leaves no room for a
 * lost count: the count then comes with a later page or event. */
static void check_event(const void *data, size_t len, uint64_t ts, uint64_t lost, const char *via,
			bool may_defer)
{
	uint32_t id;
	uint64_t missing = 0;
	if (len < 4)
		fail("%s: short event", via);
	memcpy(&id, data, 4);
	if (id >= S.nev)
		fail("%s: garbage event id %u", via, id);
	struct ev *e = &S.ev[id];
	if (e->state != EV_COMMITTED)
		fail("%s: event %u returned in state %d", via, id, e->state);
	if (e->read)
		fail("%s: event %u returned twice", via, id);
	if (len != room_of(e->len))
		fail("%s: event %u length %zu, expected %u", via, id, len, room_of(e->len));
	for (uint32_t i = 4; i < e->len; i++)
		if (((const unsigned char *)data)[i] != pat(id, i))
			fail("%s: event %u byte %u corrupt", via, id, i);
	if (ts != e->ts)
		fail("%s: event %u ts %llu, expected %llu", via, id, (unsigned long long)ts,
		     (unsigned long long)e->ts);
	if (S.any_read && ts <= S.last_ts)
		fail("%s: event %u ts %llu not after %llu", via, id, (unsigned long long)ts,
		     (unsigned long long)S.last_ts);
	for (uint32_t i = S.lo; i < S.nev; i++) {
		struct ev *x = &S.ev[i];
		if (x->read || x->lost || x->ts >= ts || (S.any_read && x->ts <= S.last_ts))
			continue;
		if (x->state == EV_RESERVED)
			fail("%s: event %u read past uncommitted event %u", via, id, i);
		if (x->state == EV_COMMITTED) {
			x->lost = 1;
			missing++;
		}
	}
	if (lost == UINT64_MAX)
		lost = missing ? missing : 1;
	S.lost_seen += missing;
	missing += S.owed;
	S.owed = 0;
	if (lost == 0 && may_defer)
		S.owed = missing;
	else if (missing > lost)
		fail("%s: %llu events vanished before %u, reported %llu", via, (unsigned long long)missing, id,
		     (unsigned long long)lost);
	S.lost_reported += lost;
	e->read = 1;
	S.any_read = true;
	S.last_ts = ts;
	S.reads++;
	settle();
}

static void do_consume(int max)
{
	struct ringbuf_record rec;
	S.in_reader++;
	for (int i = 0; i < max; i++) {
		int r = ringbuf_consume(S.rb, 0, &rec);
		if (r == 0)
			break;
		if (r < 0) {
			if (r != RINGBUF_EAGAIN)
				fail("consume: %s", ringbuf_strerror(r));
			break;
		}
		if ((uintptr_t)rec.data % (S.align8 ? 8 : 4))
			fail("consume: misaligned payload");
		check_event(rec.data, rec.len, rec.ts, rec.lost, "consume", false);
	}
	S.in_reader--;
}

static void do_peek(void)
{
	struct ringbuf_record a, b;
	int r1, r2;
	S.in_reader++;
	r1 = ringbuf_peek(S.rb, 0, &a);
	if (r1 == 1) {
		uint32_t ida, idb;
		memcpy(&ida, a.data, 4);
		r2 = ringbuf_consume(S.rb, 0, &b);
		if (r2 != 1)
			fail("peek found an event, consume returned %d", r2);
		memcpy(&idb, b.data, 4);
		if (ida != idb || a.ts != b.ts || a.lost != b.lost || a.len != b.len)
			fail("peek (%u) and consume (%u) disagree", ida, idb);
		check_event(b.data, b.len, b.ts, b.lost, "peek+consume", false);
	} else if (r1 < 0 && r1 != RINGBUF_EAGAIN) {
		fail("peek: %s", ringbuf_strerror(r1));
	}
	S.in_reader--;
}

struct page_ctx {
	bool first;
	uint64_t lost;
	bool no_room; /* no room for a lost count after the page's data */
};

static int page_cb(const struct pw_record *r, void *vctx)
{
	struct page_ctx *pc = vctx;
	if (r->kind != PW_DATA)
		return 0;
	check_event(r->payload, r->payload_len, r->ts, pc->first ? pc->lost : 0, "read_page",
		    pc->first && pc->no_room);
	pc->first = false;
	return 0;
}

static void do_read_page(unsigned flags)
{
	struct pw_page info;
	const char *err = NULL;
	int r;
	S.in_reader++;
	r = ringbuf_read_page(S.rb, 0, S.page, S.page_size, flags);
	if (r < 0 && r != RINGBUF_EAGAIN)
		fail("read_page: %s", ringbuf_strerror(r));
	if (r > 0) {
		struct page_ctx pc = {true, 0, (size_t)r + sizeof(long) > S.page_size - 16};
		if (pw_walk_page(S.page, S.page_size, S.align8, NULL, NULL, &info, &err) < 0)
			fail("read_page: invalid page: %s", err);
		if (info.commit != (uint32_t)r)
			fail("read_page: returned %d, commit %u", r, info.commit);
		pc.lost = info.missed ? (info.missed_stored ? info.missed_count : UINT64_MAX) : 0;
		pw_walk_page(S.page, S.page_size, S.align8, page_cb, &pc, &info, &err);
	}
	S.in_reader--;
}

static void do_iter(void)
{
	struct ringbuf_iter *it;
	struct ringbuf_record rec;
	uint64_t last = 0;
	bool first = true;
	int r, n = 0;
	S.in_reader++;
	if (ringbuf_iter_start(S.rb, 0, &it) < 0)
		fail("iter_start");
	while ((r = ringbuf_iter_next(it, &rec)) == 1) {
		uint32_t id;
		if (rec.len < 4)
			fail("iter: short event");
		memcpy(&id, rec.data, 4);
		if (id >= S.nev || S.ev[id].state != EV_COMMITTED || S.ev[id].read || rec.ts != S.ev[id].ts ||
		    rec.len != room_of(S.ev[id].len))
			fail("iter: bad event %u", id);
		for (uint32_t i = 4; i < S.ev[id].len; i++)
			if (((const unsigned char *)rec.data)[i] != pat(id, i))
				fail("iter: event %u corrupt", id);
		if (!first && rec.ts <= last)
			fail("iter: out of order");
		first = false;
		last = rec.ts;
		if (++n > MAXEV)
			fail("iter: endless");
	}
	if (r < 0 && r != RINGBUF_EAGAIN)
		fail("iter_next: %s", ringbuf_strerror(r));
	ringbuf_iter_finish(it);
	S.in_reader--;
}

/* ---- injection -------------------------------------------------------------- */

static void tp_hook(struct ringbuf *rb, unsigned cpu, int point, void *ctx)
{
	(void)rb;
	(void)cpu;
	(void)ctx;
	if (!S.tp_armed || point != S.tp_point)
		return;
	if (S.depth >= RINGBUF_MAX_NEST - 1)
		return;
	S.tp_armed = S.tp_chain-- > 0; /* a chain re-arms for the nested writer's own hit */
	switch (S.tp_action) {
	case 0:
		write_event(next(), false);
		break;
	case 1:
		write_event(next(), true);
		break;
	case 2:
		write_event(next(), false);
		write_event(next(), next() & 1);
		break;
	case 3:
		if (!S.in_reader)
			do_consume(1 + (int)(next() % 16));
		break;
	case 4:
		if (!S.in_reader)
			do_read_page(0);
		break;
	case 5:
		if (!S.in_reader)
			do_iter();
		break;
	case 6:
		/* the writer was preempted: a reader runs, then a signal handler writes */
		if (!S.in_reader)
			do_consume(1 + (int)(next() % 32));
		write_event(next(), next() & 1);
		break;
	}
	if (S.tp_chain < 0)
		S.tp_armed = false;
}

/* ---- whole-buffer check ------------------------------------------------------ */

struct walk {
	uint32_t read_off;
	bool on_reader;
	uint64_t bytes, events, last_ts;
	const char *err;
};

static int walk_rec(const struct pw_record *r, void *vctx)
{
	struct walk *w = vctx;
	if (w->on_reader && r->offset < w->read_off)
		return 0;
	if (!r->null_padding)
		w->bytes += r->len;
	if (r->kind == PW_DATA) {
		uint32_t id;
		memcpy(&id, r->payload, 4);
		if (id >= S.nev || S.ev[id].state != EV_COMMITTED || S.ev[id].read || S.ev[id].lost ||
		    r->ts != S.ev[id].ts) {
			w->err = "page holds an event that should not be there";
			return 1;
		}
		w->events++;
	}
	return 0;
}

static int walk_page(const void *page, size_t size, int role, void *vctx)
{
	struct walk *w = vctx;
	const char *err = NULL;
	w->on_reader = role == RINGBUF__PAGE_READER;
	if (pw_check_sequence(w->last_ts, page, size, S.align8, &w->last_ts, &err) < 0 ||
	    pw_walk_page(page, size, S.align8, walk_rec, w, NULL, &err) != 0) {
		if (!w->err)
			w->err = err;
		return 1;
	}
	return 0;
}

static void check_quiescent(void)
{
	struct walk w;
	struct ringbuf_stats st;
	uint64_t candidates = 0, overrun;
	memset(&w, 0, sizeof w);
	w.read_off = ringbuf__cpu(S.rb, 0)->read;
	if (ringbuf__walk_pages(S.rb, 0, walk_page, &w) != 0 || w.err)
		fail("pages: %s", w.err ? w.err : "walk failed");
	{
		int flags = 0;
		for (uint32_t k = 0; k <= ringbuf_nr_pages(S.rb); k++)
			flags += (atomic_load(&ringbuf__bp(S.rb, 0, k)->next) & RINGBUF__F_MASK) != 0;
		if (flags != 1)
			fail("%d links carry HEADER/UPDATE (expected exactly 1)", flags);
	}
	ringbuf_stats_cpu(S.rb, 0, &st);
	for (uint32_t i = S.lo; i < S.nev; i++)
		if (S.ev[i].state == EV_COMMITTED && !S.ev[i].read && !S.ev[i].lost)
			candidates++;
	overrun = st.overrun;
	if (st.committed != S.committed || st.discarded != S.discarded || st.read_events != S.reads)
		fail("stats committed %llu/%llu discarded %llu/%llu read %llu/%llu",
		     (unsigned long long)st.committed, (unsigned long long)S.committed,
		     (unsigned long long)st.discarded, (unsigned long long)S.discarded,
		     (unsigned long long)st.read_events, (unsigned long long)S.reads);
	if (overrun < S.lost_seen || w.events + (overrun - S.lost_seen) != candidates)
		fail("%llu in pages + %llu overwritten (overrun %llu, seen %llu) != %llu committed unread",
		     (unsigned long long)w.events, (unsigned long long)(overrun - S.lost_seen),
		     (unsigned long long)overrun, (unsigned long long)S.lost_seen, (unsigned long long)candidates);
	if (st.entries != w.events || st.bytes != w.bytes)
		fail("entries %llu/%llu bytes %llu/%llu", (unsigned long long)st.entries,
		     (unsigned long long)w.events, (unsigned long long)st.bytes, (unsigned long long)w.bytes);
	if (st.dropped_events + st.commit_overrun != S.drops || st.disabled_events != S.disabled ||
	    st.rejected_events != S.rejected || st.nest_overflow != 0)
		fail("failed reserves: dropped %llu + commit_overrun %llu (model %llu), disabled %llu/%llu, "
		     "rejected %llu/%llu",
		     (unsigned long long)st.dropped_events, (unsigned long long)st.commit_overrun,
		     (unsigned long long)S.drops, (unsigned long long)st.disabled_events,
		     (unsigned long long)S.disabled, (unsigned long long)st.rejected_events,
		     (unsigned long long)S.rejected);
	if (S.lost_reported + S.owed < S.lost_seen ||
	    S.lost_reported + S.owed - S.lost_seen > st.dropped_events + st.commit_overrun)
		fail("reported lost %llu, missing %llu, drops %llu", (unsigned long long)S.lost_reported,
		     (unsigned long long)S.lost_seen,
		     (unsigned long long)(st.dropped_events + st.commit_overrun));
}

static void model_reset(void)
{
	for (uint32_t i = S.lo; i < S.nev; i++)
		if (S.ev[i].state == EV_COMMITTED && !S.ev[i].read && !S.ev[i].lost)
			S.ev[i].state = EV_GONE;
	S.lo = S.nev;
	S.committed = S.discarded = S.drops = S.disabled = S.rejected = 0;
	S.reads = S.lost_seen = S.lost_reported = S.owed = 0;
}

/* ---- the program ------------------------------------------------------------ */

static void quiet(const char *what, unsigned cpu, void *ctx)
{
	(void)cpu;
	(void)ctx;
	fail("library warning: %s", what); /* no corruption can come from valid use */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	unsigned c0, c1;

	memset(&S, 0, sizeof S);
	S.in = data;
	S.n = size;
	c0 = next();
	c1 = next();
	S.page_size = (size_t)64 << (c0 & 3); /* 64 .. 512 */
	S.align8 = (c0 >> 2) & 1;
	cfg.page_size = S.page_size;
	cfg.size_per_cpu = (2 + ((c0 >> 3) & 3)) * S.page_size;
	cfg.mode = (c0 >> 5) & 1 ? RINGBUF_MODE_PRODUCER_CONSUMER : RINGBUF_MODE_OVERWRITE;
	cfg.ts_mode = (c0 >> 6) & 1 ? RINGBUF_TS_ABSOLUTE : RINGBUF_TS_DELTA;
	cfg.flags = S.align8 ? RINGBUF_F_ALIGN8 : 0;
	cfg.clock = fuzz_clock;
	S.now = (c0 >> 7) ? (1ull << 59) - 5000 : 1000;
	S.step = 1 + (c1 & 15);
	if (ringbuf_create(&cfg, &S.rb) < 0)
		fail("create");
	ringbuf_set_warn_hook(quiet, NULL);
	ringbuf__set_testpoint_hook(tp_hook, NULL);

	while (S.pos < S.n) {
		unsigned op = next() % 16;
		switch (op) {
		case 0:
		case 1:
		case 2:
			write_event(next(), false);
			break;
		case 3:
			write_event(next(), true);
			break;
		case 4: {
			unsigned a = next(), b = next();
			S.tp_point = 1 + (int)(a % (RINGBUF__TP_COUNT - 1));
			S.tp_action = (int)(b % 7);
			S.tp_chain = (b >> 4) & 3; /* extra nesting levels at the same point */
			S.tp_armed = true;
			write_event(next(), (b >> 3) & 1);
			S.tp_armed = false;
			break;
		}
		case 5:
			do_consume(1 + (int)(next() % 8));
			break;
		case 6:
			do_peek();
			break;
		case 7:
			do_read_page(next() & 1 ? RINGBUF_READ_FULL : 0);
			break;
		case 8:
			if (ringbuf_reset_cpu(S.rb, 0) != 0)
				fail("reset");
			model_reset();
			break;
		case 9:
			ringbuf_set_mode(S.rb, ringbuf_get_mode(S.rb) == RINGBUF_MODE_OVERWRITE
						       ? RINGBUF_MODE_PRODUCER_CONSUMER
						       : RINGBUF_MODE_OVERWRITE);
			break;
		case 10: {
			unsigned v = next(), sh = next() % 40;
			S.gap_next = (uint64_t)v << sh;
			break;
		}
		case 11:
			do_iter();
			break;
		case 12:
			if (S.off)
				ringbuf_record_on(S.rb);
			else
				ringbuf_record_off(S.rb);
			S.off = !S.off;
			break;
		case 13:
			if (S.cpu_disabled)
				ringbuf_record_enable_cpu(S.rb, 0);
			else
				ringbuf_record_disable_cpu(S.rb, 0);
			S.cpu_disabled = !S.cpu_disabled;
			break;
		case 14: {
			/* bad input: rejected and counted, changes nothing */
			unsigned char b[8] = {0};
			size_t len = next() & 1 ? 0 : ringbuf_max_event_size(S.rb) + 1 + next();
			if (ringbuf_write(S.rb, 0, b, len) >= 0)
				fail("bad write accepted");
			S.rejected++;
			break;
		}
		case 15:
			check_quiescent();
			break;
		}
	}
	ringbuf__set_testpoint_hook(NULL, NULL);
	check_quiescent();
	/* drain and close the books */
	do_consume(1 << 30);
	{
		struct ringbuf_stats st;
		uint64_t unaccounted = 0;
		ringbuf_stats_cpu(S.rb, 0, &st);
		for (uint32_t i = S.lo; i < S.nev; i++)
			if (S.ev[i].state == EV_COMMITTED && !S.ev[i].read && !S.ev[i].lost)
				unaccounted++;
		if (S.reads + S.lost_seen + unaccounted != S.committed ||
		    S.lost_seen + unaccounted != st.overrun || st.entries != 0 || st.bytes != 0)
			fail("drained: read %llu + lost %llu + unaccounted %llu != committed %llu (overrun %llu, "
			     "entries %llu, bytes %llu)",
			     (unsigned long long)S.reads, (unsigned long long)S.lost_seen,
			     (unsigned long long)unaccounted, (unsigned long long)S.committed,
			     (unsigned long long)st.overrun, (unsigned long long)st.entries,
			     (unsigned long long)st.bytes);
	}
	ringbuf_set_warn_hook(NULL, NULL);
	ringbuf_destroy(S.rb);
	return 0;
}
