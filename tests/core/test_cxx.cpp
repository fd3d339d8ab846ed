// test_cxx.cpp - ringbuf.h and ringbuf_trace.h as C++ (C++11): the
// implementation compiled in this C++ file, the inline fast path, nesting
// from a signal handler, the event macros, and byte identity with C: C and
// C++ writers in one process on one buffer give pages byte for byte equal to
// the same events written from C alone (and from C++ alone). The C side is
// tests/core/cxx_cside.c; tests/core/test_cxx_cimpl.cpp is this file again with the
// implementation in the C file instead.
// C_SOURCES: tests/core/cxx_cside.c
#ifndef CXX_C_IMPL
#define RINGBUF_IMPLEMENTATION
#endif
#define CXX_DEFINE_A // C++ defines sample_a's descriptor, C sample_b's
#include "cxx_shared.h"

#include <atomic> // after the headers: their C11 shim names must be gone
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" { // this cmocka.h has no extern "C" of its own
#include <cmocka.h>
}

#if !defined(ringbuf_reserve) || !defined(ringbuf_commit)
#error "C++ must get the inline fast path"
#endif

namespace {

std::atomic<unsigned> user_atomic(0); // std:: names work next to the headers

std::vector<void *> block_mem; // memory of the ringbuf_init_in buffers

struct ringbuf *make_rb(unsigned ncpu, uint64_t *clock_ctx)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb = nullptr;
	cfg.ncpu = ncpu;
	cfg.size_per_cpu = 64 * 1024;
	cfg.page_size = 4096;
	if (!clock_ctx) {
		assert_int_equal(ringbuf_create(&cfg, &rb), 0);
		return rb;
	}
	// byte identity: the writers leave the bytes after a payload (up to
	// the event size) and between trace fields as the page had them, so
	// every buffer compared starts from zeroed memory
	cfg.clock = cside_clock;
	cfg.clock_ctx = clock_ctx;
	size_t size = 0;
	void *mem = nullptr;
	assert_int_equal(ringbuf_size_needed(&cfg, &size), 0);
	assert_int_equal(posix_memalign(&mem, 64, size), 0);
	std::memset(mem, 0, size);
	assert_int_equal(ringbuf_init_in(mem, size, &cfg, &rb), 0);
	block_mem.push_back(mem);
	return rb;
}

// every record of cpu, each as its payload bytes (rec.len: the length
// rounded up to the event size, so at least what was written)
std::vector<std::vector<unsigned char> > consume_all(struct ringbuf *rb, unsigned cpu)
{
	std::vector<std::vector<unsigned char> > out;
	struct ringbuf_record rec;
	while (ringbuf_consume(rb, cpu, &rec) > 0) {
		const unsigned char *d = static_cast<const unsigned char *>(rec.data);
		out.push_back(std::vector<unsigned char>(d, d + rec.len));
		assert_int_equal(rec.lost, 0);
	}
	return out;
}

int cxx_step(struct ringbuf *rb, unsigned i)
{
	CXX_STEP_BODY(rb, i);
	return 0;
}

struct ringbuf_trace_registry reg = RINGBUF_TRACE_REGISTRY_INIT("cxx");

void register_events()
{
	struct ringbuf_trace_event *evs[] = {&ringbuf_event_sample_a, &ringbuf_event_sample_b};
	if (reg.count == 0)
		assert_int_equal(RINGBUF_TRACE_REGISTER_ARRAY(&reg, evs), 2);
}

// ---- layout -------------------------------------------------------------

void layout_matches_c(void **state)
{
	(void)state;
	std::vector<size_t> c(CXX_LAYOUT_SIZE), v(CXX_LAYOUT_SIZE);
	size_t i = 0;
	CXX_LAYOUT(CXX_LAYOUT_FILL)
	assert_int_equal(i, CXX_LAYOUT_SIZE);
	assert_int_equal(cside_layout(c.data(), c.size()), CXX_LAYOUT_SIZE);
	for (i = 0; i < v.size(); i++) {
		if (v[i] != c[i])
			fail_msg("layout entry %zu (field %zu, item %zu): C++ %zu, C %zu", i, i / 4, i % 4,
				 v[i], c[i]);
	}
	assert_int_equal(cside_inline(), 1);
}

// ---- write / read -------------------------------------------------------

void write_read(void **state)
{
	(void)state;
	struct ringbuf *rb = make_rb(2, nullptr);
	std::vector<std::vector<unsigned char> > want;
	for (unsigned i = 0; i < 300; i++) {
		size_t len = 1 + (i * 7) % 150;
		unsigned char *p = static_cast<unsigned char *>(ringbuf_reserve(rb, 1, len));
		assert_non_null(p);
		for (size_t j = 0; j < len; j++)
			p[j] = static_cast<unsigned char>(i + j);
		want.push_back(std::vector<unsigned char>(p, p + len));
		ringbuf_commit(rb, 1, p);
	}
	const uint32_t last = 0xdeadbeef;
	assert_int_equal(ringbuf_write(rb, 1, &last, sizeof last), 0);
	const unsigned char *lp = reinterpret_cast<const unsigned char *>(&last);
	want.push_back(std::vector<unsigned char>(lp, lp + sizeof last));
	// a discarded reservation leaves nothing
	void *d = ringbuf_reserve(rb, 1, 16);
	assert_non_null(d);
	ringbuf_discard(rb, 1, d);
	std::vector<std::vector<unsigned char> > got = consume_all(rb, 1);
	assert_int_equal(got.size(), want.size());
	for (size_t i = 0; i < got.size(); i++) {
		assert_true(got[i].size() >= want[i].size() && got[i].size() < want[i].size() + 8);
		assert_memory_equal(got[i].data(), want[i].data(), want[i].size());
	}
	assert_true(consume_all(rb, 0).empty());
	struct ringbuf_stats st;
	assert_int_equal(ringbuf_stats_cpu(rb, 1, &st), 0);
	assert_int_equal(st.committed, 301);
	assert_int_equal(st.read_events, 301);
	assert_int_equal(st.discarded, 1);
	assert_int_equal(st.overrun + st.dropped_events + st.commit_overrun, 0);
	ringbuf_destroy(rb);
	user_atomic.fetch_add(1, std::memory_order_relaxed);
}

// ---- nesting from a signal handler ----------------------------------------

struct ringbuf *sig_rb;
volatile sig_atomic_t sig_runs;

extern "C" void cxx_handler(int sig)
{
	(void)sig;
	ringbuf_trace_signal_enter();
	uint32_t *p = static_cast<uint32_t *>(ringbuf_reserve(sig_rb, 0, sizeof *p));
	if (p) {
		*p = 0x5151;
		ringbuf_commit(sig_rb, 0, p);
	}
	uint16_t h[3] = {4, 5, 6};
	(void)trace_sample_a(sig_rb, 0, 77, 0, 0, false, h, "sig", "handler");
	ringbuf_trace_signal_exit();
	sig_runs = sig_runs + 1;
}

void nesting_from_signal_handler(void **state)
{
	(void)state;
	register_events();
	struct sigaction sa, old;
	std::memset(&sa, 0, sizeof sa);
	sa.sa_handler = cxx_handler;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	sig_rb = make_rb(1, nullptr);
	for (int outer_c = 0; outer_c < 2; outer_c++) {
		// outer writer: C++ (inline), then C (its inline path); the handler is C++
		const size_t len = 8;
		uint32_t *p = static_cast<uint32_t *>(outer_c ? cside_reserve(sig_rb, 0, len)
							      : ringbuf_reserve(sig_rb, 0, len));
		assert_non_null(p);
		p[0] = 0x0101;
		p[1] = static_cast<uint32_t>(outer_c);
		sig_runs = 0;
		raise(SIGUSR1);
		assert_int_equal(sig_runs, 1);
		if (outer_c)
			cside_commit(sig_rb, 0, p);
		else
			ringbuf_commit(sig_rb, 0, p);
		// reserved in this order: outer, nested raw event, nested trace event
		struct ringbuf_record rec;
		assert_int_equal(ringbuf_consume(sig_rb, 0, &rec), 1);
		assert_true(rec.len >= 8);
		assert_int_equal(static_cast<const uint32_t *>(rec.data)[0], 0x0101);
		assert_int_equal(static_cast<const uint32_t *>(rec.data)[1], outer_c);
		assert_int_equal(ringbuf_consume(sig_rb, 0, &rec), 1);
		assert_int_equal(rec.len, 4);
		assert_int_equal(*static_cast<const uint32_t *>(rec.data), 0x5151);
		assert_int_equal(ringbuf_consume(sig_rb, 0, &rec), 1);
		const struct ringbuf_ev_sample_a *e = static_cast<const struct ringbuf_ev_sample_a *>(rec.data);
		assert_int_equal(e->ent.type, ringbuf_event_sample_a.id);
		assert_int_equal(e->seq, 77);
		// nested in a writer, inside signal_enter: depth 2, HARDIRQ
		assert_int_equal(e->ent.flags, RINGBUF_TRACE_FLAG_HARDIRQ);
		assert_int_equal(e->ent.preempt_count, 1);
		assert_int_equal(ringbuf_consume(sig_rb, 0, &rec), 0);
	}
	struct ringbuf_stats st;
	assert_int_equal(ringbuf_stats_cpu(sig_rb, 0, &st), 0);
	assert_int_equal(st.committed, 6);
	assert_int_equal(st.overrun + st.dropped_events + st.nest_overflow, 0);
	ringbuf_destroy(sig_rb);
	assert_int_equal(sigaction(SIGUSR1, &old, nullptr), 0);
}

// ---- event macros -----------------------------------------------------------

std::string format_text(const struct ringbuf_trace_event *ev)
{
	char buf[4096];
	int n = ringbuf_trace_format_text(ev, buf, sizeof buf);
	assert_true(n > 0 && static_cast<size_t>(n) < sizeof buf);
	return std::string(buf, static_cast<size_t>(n));
}

void event_macros(void **state)
{
	(void)state;
	register_events();
	const struct ringbuf_trace_event &a = ringbuf_event_sample_a, &b = ringbuf_event_sample_b;
	// the descriptor generated by C++ and the one generated by C agree
	assert_int_equal(a.nfields, 7);
	assert_int_equal(a.nfields, b.nfields);
	assert_int_equal(a.size, b.size);
	assert_int_equal(a.size, sizeof(struct ringbuf_ev_sample_a));
	assert_string_equal(a.print_fmt, b.print_fmt);
	for (unsigned i = 0; i < a.nfields; i++) {
		assert_string_equal(a.fields[i].type, b.fields[i].type);
		assert_string_equal(a.fields[i].name, b.fields[i].name);
		assert_int_equal(a.fields[i].offset, b.fields[i].offset);
		assert_int_equal(a.fields[i].size, b.fields[i].size);
		assert_int_equal(a.fields[i].count, b.fields[i].count);
		assert_int_equal(a.fields[i].is_signed, b.fields[i].is_signed);
		assert_int_equal(a.fields[i].kind, b.fields[i].kind);
	}
	assert_int_equal(a.fields[1].is_signed, 1); // int64_t
	assert_int_equal(a.fields[1].offset, 12);   // 4-byte aligned after the u32
	std::string ta = format_text(&a), tb = format_text(&b);
	ta.replace(ta.find("sample_a"), 8, "sample_X");
	tb.replace(tb.find("sample_b"), 8, "sample_X");
	ta.replace(ta.find("ID: "), ta.find('\n', ta.find("ID: ")) - ta.find("ID: "), "ID: n");
	tb.replace(tb.find("ID: "), tb.find('\n', tb.find("ID: ")) - tb.find("ID: "), "ID: n");
	assert_string_equal(ta.c_str(), tb.c_str());

	struct ringbuf *rb = make_rb(1, nullptr);
	uint16_t h[3] = {1, 2, 3};
	assert_int_equal(trace_sample_a(rb, 0, 5, -7, 200, true, h, "a-very-long-message", "cxx"), 1);
	assert_int_equal(cside_emit(rb, 0, 6, "from-c"), 1);
	assert_int_equal(trace_sample_b(rb, 0, 8, 1LL << 40, 0, false, nullptr, nullptr, nullptr), 1);
	assert_int_equal(ringbuf_trace_disable(&reg, "sample_a"), 1);
	assert_false(ringbuf_trace_is_enabled(&a));
	assert_int_equal(trace_sample_a(rb, 0, 9, 0, 0, false, h, "x", "x"), 0); // disabled
	assert_int_equal(ringbuf_trace_enable(&reg, "sample_*"), 2);
	const char *want[] = {
		"sample_a: seq=5 delta=-7 flag=200 yes=1 hist=1,2,3 msg=a-very-long label=cxx",
		"sample_b: seq=6 delta=-1 flag=1 yes=1 hist=1,2,3 msg=c label=from-c",
		"sample_b: seq=8 delta=1099511627776 flag=0 yes=0 hist=0,0,0 msg=(null) label=(null)",
	};
	struct ringbuf_record rec;
	for (const char *w : want) {
		char line[512];
		assert_int_equal(ringbuf_consume(rb, 0, &rec), 1);
		assert_true(ringbuf_trace_format_record(&reg, &rec, 0, line, sizeof line) > 0);
		const char *ev = std::strstr(line, "sample_");
		assert_non_null(ev);
		assert_string_equal(ev, w);
	}
	assert_int_equal(ringbuf_consume(rb, 0, &rec), 0);
	ringbuf_destroy(rb);
}

// ---- byte identity ------------------------------------------------------------

struct pages {
	std::vector<unsigned char> bytes;
	unsigned n = 0;
};

extern "C" int collect_page(const void *page, size_t size, int role, void *ctx)
{
	pages *p = static_cast<pages *>(ctx);
	const unsigned char *b = static_cast<const unsigned char *>(page);
	(void)role;
	p->bytes.insert(p->bytes.end(), b, b + size);
	p->n++;
	return 0;
}

pages all_pages(struct ringbuf *rb)
{
	pages p;
	for (unsigned cpu = 0; cpu < ringbuf_ncpu(rb); cpu++)
		assert_int_equal(ringbuf__walk_pages(rb, cpu, collect_page, &p), 0);
	return p;
}

enum who { ALL_C, ALL_CXX, MIXED };

// The sequence: N steps, and in the middle an outer writer with a nested
// writer inside its reservation (as a signal handler would be).
void write_sequence(struct ringbuf *rb, who w, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		bool cxx = w == ALL_CXX || (w == MIXED && i % 3 != 0);
		assert_int_equal(cxx ? cxx_step(rb, i) : cside_step(rb, i), 0);
		if (i == n / 2) {
			bool outer_cxx = w == ALL_CXX || w == MIXED;
			bool inner_cxx = w == ALL_CXX;
			unsigned char *p = static_cast<unsigned char *>(
				outer_cxx ? ringbuf_reserve(rb, 0, 24) : cside_reserve(rb, 0, 24));
			assert_non_null(p);
			std::memset(p, 0xab, 24);
			assert_int_equal(inner_cxx ? cxx_step(rb, 1000) : cside_step(rb, 1000), 0);
			assert_int_equal(inner_cxx ? cxx_step(rb, 1002) : cside_step(rb, 1002), 0);
			if (outer_cxx)
				ringbuf_commit(rb, 0, p);
			else
				cside_commit(rb, 0, p);
		}
	}
}

void byte_identity(void **state)
{
	(void)state;
	register_events();
	const unsigned n = 400;
	uint64_t clk[3] = {1000, 1000, 1000};
	struct ringbuf *rb[3];
	pages pg[3];
	struct ringbuf_stats st[3];
	for (int w = 0; w < 3; w++) {
		rb[w] = make_rb(2, &clk[w]);
		write_sequence(rb[w], static_cast<who>(w), n);
		pg[w] = all_pages(rb[w]);
		assert_int_equal(ringbuf_stats(rb[w], &st[w]), 0);
	}
	assert_int_equal(st[ALL_C].committed, n + 3);
	assert_int_equal(st[ALL_C].overrun + st[ALL_C].dropped_events, 0);
	assert_true(pg[ALL_C].n >= 2 * 4); // several pages on each CPU
	for (int w = 1; w < 3; w++) {
		assert_int_equal(clk[w], clk[ALL_C]);
		assert_int_equal(pg[w].n, pg[ALL_C].n);
		assert_int_equal(pg[w].bytes.size(), pg[ALL_C].bytes.size());
		for (size_t i = 0; i < pg[w].bytes.size(); i++)
			if (pg[w].bytes[i] != pg[ALL_C].bytes[i])
				fail_msg("%s: page byte %zu differs (page %zu, offset %zu): %u vs C %u",
					 w == ALL_CXX ? "C++ alone" : "C and C++", i, i / 4096, i % 4096,
					 pg[w].bytes[i], pg[ALL_C].bytes[i]);
		assert_int_equal(st[w].committed, st[ALL_C].committed);
		assert_int_equal(st[w].entries, st[ALL_C].entries);
		assert_int_equal(st[w].bytes, st[ALL_C].bytes);
		assert_int_equal(st[w].pages_touched, st[ALL_C].pages_touched);
	}
	for (int w = 0; w < 3; w++)
		ringbuf_destroy(rb[w]);
	for (void *m : block_mem)
		std::free(m);
	block_mem.clear();
}

} // namespace

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(layout_matches_c),
		cmocka_unit_test(write_read),
		cmocka_unit_test(nesting_from_signal_handler),
		cmocka_unit_test(event_macros),
		cmocka_unit_test(byte_identity),
	};
	return cmocka_run_group_tests(tests, nullptr, nullptr);
}
