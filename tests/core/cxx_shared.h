/* cxx_shared.h - what test_cxx.cpp (C++) and cxx_cside.c (C) both compile:
 * the events (one descriptor defined by each language), the layout table and
 * the C side's functions. CXX_DEFINE_A / CXX_DEFINE_B say which of the two
 * event descriptors this translation unit defines. */
#ifndef CXX_SHARED_H
#define CXX_SHARED_H

/* sample_a and sample_b have the same fields: one descriptor is generated
 * by the C++ translation unit, the other by the C one, and their field
 * tables must agree. */
#define CXX_SAMPLE_EVENT(name)                                                         \
	RINGBUF_TRACE_EVENT(name,                                                      \
		RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, seq),                          \
			       RINGBUF_FIELD(int64_t, delta),                         \
			       RINGBUF_FIELD(uint8_t, flag),                          \
			       RINGBUF_FIELD(bool, yes),                              \
			       RINGBUF_ARRAY(uint16_t, hist, 3),                      \
			       RINGBUF_CHARS(msg, 12),                                \
			       RINGBUF_STRING(label)),                                \
		RINGBUF_PRINT("seq=%u delta=%lld flag=%u yes=%d hist=%u,%u,%u msg=%s label=%s", \
			      REC->seq, (long long)REC->delta, REC->flag, (int)REC->yes,  \
			      REC->hist[0], REC->hist[1], REC->hist[2], REC->msg,     \
			      __get_str(label)))
#endif

#ifdef CXX_DEFINE_A
#define RINGBUF_TRACE_DEFINE_EVENTS
#endif
#include "ringbuf_trace.h"
#ifndef CXX_SAMPLE_A_DONE
#define CXX_SAMPLE_A_DONE
CXX_SAMPLE_EVENT(sample_a);
#endif
#undef RINGBUF_TRACE_DEFINE_EVENTS
#ifdef CXX_DEFINE_B
#define RINGBUF_TRACE_DEFINE_EVENTS
#endif
#include "ringbuf_trace.h"
#ifndef CXX_SAMPLE_B_DONE
#define CXX_SAMPLE_B_DONE
CXX_SAMPLE_EVENT(sample_b);
#endif
#undef RINGBUF_TRACE_DEFINE_EVENTS

#ifndef CXX_SHARED_FUNCS
#define CXX_SHARED_FUNCS
/* Sizes and offsets of every shared struct and of its fields, computed by
 * each language from the same list. */
#define CXX_LAYOUT(X)                                                                    \
	X(ringbuf, magic) X(ringbuf, clock_name) X(ringbuf, user_off) X(ringbuf, ncpu)      \
	X(ringbuf, tsc_shift) X(ringbuf, tsc_mult) X(ringbuf, total_size) X(ringbuf, cpu_off) \
	X(ringbuf, clock) X(ringbuf, clock_ctx) X(ringbuf, mem) X(ringbuf, map_len)         \
	X(ringbuf, gen) X(ringbuf, shared) X(ringbuf, data_off)                            \
	X(ringbuf__shdr, record_disabled) X(ringbuf__shdr, mode) X(ringbuf__shdr, waiters)  \
	X(ringbuf__shdr, wait_seq) X(ringbuf__shdr, wait_kick) X(ringbuf__shdr, wait_unreg) \
	X(ringbuf__shdr, unmapped) X(ringbuf__shdr, owner_seq) X(ringbuf__shdr, owner_flags) \
	X(ringbuf__shdr, pidns) X(ringbuf__shdr, release_gen) X(ringbuf__shdr, thread_shared) \
	X(ringbuf__cpu, tail_page) X(ringbuf__cpu, commit_page) X(ringbuf__cpu, bp_off)     \
	X(ringbuf__cpu, dp_off) X(ringbuf__cpu, committing) X(ringbuf__cpu, disabled)       \
	X(ringbuf__cpu, dbg_owner) X(ringbuf__cpu, owner) X(ringbuf__cpu, commits)          \
	X(ringbuf__cpu, inflight_ts) X(ringbuf__cpu, before_stamp) X(ringbuf__cpu, write_stamp) \
	X(ringbuf__cpu, entries_d) X(ringbuf__cpu, slots) X(ringbuf__cpu, overrun_d)        \
	X(ringbuf__cpu, commit_overrun) X(ringbuf__cpu, dropped_events)                     \
	X(ringbuf__cpu, disabled_events) X(ringbuf__cpu, rejected_events)                   \
	X(ringbuf__cpu, nest_overflow) X(ringbuf__cpu, discarded) X(ringbuf__cpu, pages_touched) \
	X(ringbuf__cpu, pages_lost_d) X(ringbuf__cpu, wake_seen) X(ringbuf__cpu, reader_page) \
	X(ringbuf__cpu, reader_lock) X(ringbuf__cpu, head_hint) X(ringbuf__cpu, read)       \
	X(ringbuf__cpu, read_stamp) X(ringbuf__cpu, last_overrun) X(ringbuf__cpu, last_drops) \
	X(ringbuf__cpu, lost_pending) X(ringbuf__cpu, read_events) X(ringbuf__cpu, pages_read) \
	X(ringbuf__cpu, corrupt) X(ringbuf__cpu, index) X(ringbuf__cpu, reset_gen)            \
	X(ringbuf__bpage, next) X(ringbuf__bpage, write) X(ringbuf__bpage, entries)         \
	X(ringbuf__bpage, drops) X(ringbuf__bpage, prev)                                    \
	X(ringbuf__dpage, time_stamp) X(ringbuf__dpage, commit)                              \
	X(ringbuf__slot, page) X(ringbuf__slot, event) X(ringbuf__slot, counted) X(ringbuf__slot, push_page) X(ringbuf__slot, push_link) \
	X(ringbuf__tctx, gen) X(ringbuf__tctx, cur) X(ringbuf__tctx, claimed) X(ringbuf__tctx, token) \
	X(ringbuf_config, ncpu) X(ringbuf_config, clock) X(ringbuf_config, file_mode)       \
	X(ringbuf_record, data) X(ringbuf_record, ts) X(ringbuf_record, cpu)                \
	X(ringbuf_stats, entries) X(ringbuf_stats, unmapped)                                \
	X(ringbuf_trace_entry, type) X(ringbuf_trace_entry, pid)                            \
	X(ringbuf_trace_event, state) X(ringbuf_trace_event, id) X(ringbuf_trace_event, name) \
	X(ringbuf_trace_event, print) X(ringbuf_trace_event, next)                          \
	X(ringbuf_trace_registry, first) X(ringbuf_trace_registry, lock)                    \
	X(ringbuf_trace_registry, loaded)                                                   \
	X(ringbuf_ev_sample_a, seq) X(ringbuf_ev_sample_a, delta) X(ringbuf_ev_sample_a, flag) \
	X(ringbuf_ev_sample_a, yes) X(ringbuf_ev_sample_a, hist) X(ringbuf_ev_sample_a, msg) \
	X(ringbuf_ev_sample_a, label)
/* per field: sizeof and alignof the struct, offset and size of the field */
#ifdef __cplusplus
#define CXX_ALIGNOF(t) alignof(t)
#else
#define CXX_ALIGNOF(t) _Alignof(t)
#endif
#define CXX_LAYOUT_N(s, f) 4 +
#define CXX_LAYOUT_FILL(s, f)                                                     \
	v[i++] = sizeof(struct s);                                                \
	v[i++] = CXX_ALIGNOF(struct s);                                           \
	v[i++] = offsetof(struct s, f);                                           \
	v[i++] = sizeof(((struct s *)0)->f);
#define CXX_LAYOUT_SIZE (CXX_LAYOUT(CXX_LAYOUT_N) 0)

#ifdef __cplusplus
extern "C" {
#endif
/* the C side (tests/core/cxx_cside.c) */
size_t cside_layout(size_t *v, size_t n);
int cside_inline(void); /* 1: C's ringbuf_reserve is the inline fast path */
uint64_t cside_clock(void *ctx); /* *(uint64_t *)ctx += 3 */
/* one step of the byte-identity sequence, written with C's inline path */
int cside_step(struct ringbuf *rb, unsigned i);
/* a writer that a signal handler of the other language interrupts */
void *cside_reserve(struct ringbuf *rb, unsigned cpu, size_t len);
void cside_commit(struct ringbuf *rb, unsigned cpu, void *p);
int cside_emit(struct ringbuf *rb, unsigned cpu, unsigned seq, const char *label);
#ifdef __cplusplus
}
#endif

/* The byte-identity sequence: step i writes event i; which language writes
 * it is up to the caller, what is written only depends on i. Kinds: inline
 * reserve/commit of a payload of 1..200 bytes, ringbuf_write, and the two
 * trace events (emitters). WRITE_STEP is a macro so that each language
 * compiles its own copy (its inline path, its emitters). */
#define CXX_STEP_BODY(rb, i)                                                                 \
	do {                                                                                   \
		unsigned cpu_ = ((i) / 7) % 2, k_ = (i) % 4;                                   \
		size_t len_ = 1 + ((i) * 37) % 200, j_;                                        \
		unsigned char buf_[200];                                                       \
		for (j_ = 0; j_ < len_; j_++)                                                  \
			buf_[j_] = (unsigned char)((i) * 13 + j_);                             \
		if (k_ == 0) {                                                                 \
			unsigned char *p_ = (unsigned char *)ringbuf_reserve((rb), cpu_, len_); \
			if (!p_)                                                               \
				return -1;                                                     \
			memcpy(p_, buf_, len_);                                                \
			ringbuf_commit((rb), cpu_, p_);                                        \
		} else if (k_ == 1) {                                                          \
			if (ringbuf_write((rb), cpu_, buf_, len_) < 0)                         \
				return -1;                                                     \
		} else {                                                                       \
			uint16_t h_[3] = {(uint16_t)(i), (uint16_t)((i) * 3), 7};              \
			char s_[40];                                                           \
			snprintf(s_, sizeof s_, "label-%u", (unsigned)(i));                    \
			if ((k_ == 2 ? trace_sample_a : trace_sample_b)(                       \
				    (rb), cpu_, (uint32_t)(i), -(int64_t)(i) * 1000003,        \
				    (uint8_t)(i), (i) % 3 == 0, h_, "msg", s_) != 1)           \
				return -1;                                                     \
		}                                                                              \
	} while (0)
#endif
