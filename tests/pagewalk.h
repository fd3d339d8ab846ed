/* pagewalk.h - independent validator for ftrace ring-buffer data pages
 * SPDX-License-Identifier: MIT
 * Copyright (c) the ringbuf authors. Permission is hereby granted, free of
 * charge, to any person obtaining a copy of this software, to deal in it
 * without restriction, subject to the MIT licence terms (see ringbuf.h).
 *
 * A test oracle: it re-parses, from the byte layout alone, every page the
 * library writes. It deliberately shares no code with ringbuf.h. Header-only,
 * C11, libc only. Pages are in host byte order with the host's `long`, as the
 * kernel writes them (H = 8 + sizeof(long): 16 on 64-bit, 12 on 32-bit).
 *
 * PAGE FORMAT (the kernel's struct buffer_data_page)
 *   +0   u64 time_stamp   absolute time of the page's first event
 *   +8   long commit      bits 0..26: bytes of data[] in use
 *                         bit 31: events were lost before this page
 *                         bit 30: the lost count (a long) is stored at data[commit]
 *   +H   data[]           records, each starting with a 4-byte aligned u32
 *                         header w, the bitfield `u32 type_len:5, time_delta:27`:
 *                         little-endian: type_len = w & 31, time_delta = w >> 5;
 *                         big-endian: type_len = w >> 27, time_delta = w & (2^27-1)
 * RECORDS (len = total bytes, a0 = the u32 right after the header)
 *   type_len 1..28  data, payload type_len*4 bytes at +4, len 4 + type_len*4
 *   type_len 0      data, len 4 + a0, payload a0 - 4 bytes at +8 (a0 >= 4)
 *   29 PADDING      len 4 + a0 (a0 >= 4); when fewer than 8 bytes of the commit
 *                   area remain it is "null" padding: rest of page, stop
 *   30 TIME_EXTEND  len 8, running ts += (a0 << 27) | time_delta
 *   31 TIME_STAMP   len 8, low 59 bits of the absolute ts = (a0 << 27) | delta
 * The running ts starts at time_stamp; the time_delta of data and padding
 * records (the latter like libtraceevent's kbuffer) is added to it. A
 * TIME_STAMP keeps the running ts's top 5 bits and adds 1 << 59 when the
 * result would be below the running ts (wrap-around).
 *
 * ERRORS vs FLAGS. pw_walk_page() fails (negative PW_E_* code, *err says what
 * and where) on anything a reader cannot parse safely or that breaks an
 * invariant of the format. Legal but unusual encodings (a non-zero delta on
 * the first data record, a non-canonical record size, ...) are only counted
 * in struct pw_page so that tests can assert on them.
 */
#ifndef PAGEWALK_H
#define PAGEWALK_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define PW_LONG ((uint32_t)sizeof(long))    /* the commit field and the lost count */
#define PW_PAGE_HDR (8u + PW_LONG)          /* time_stamp + commit */
/* the header word (see PAGE FORMAT), PW_WORD builds one (for tests) */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define PW_BIG_ENDIAN 1
#define PW_TYPE(w) ((uint32_t)(w) >> 27)
#define PW_DELTA(w) ((uint32_t)(w) & ((1u << 27) - 1))
#define PW_WORD(type, delta) (((uint32_t)(type) << 27) | ((uint32_t)(delta) & ((1u << 27) - 1)))
#else
#define PW_BIG_ENDIAN 0
#define PW_TYPE(w) ((uint32_t)(w) & 31u)
#define PW_DELTA(w) ((uint32_t)(w) >> 5)
#define PW_WORD(type, delta) ((uint32_t)(type) | (uint32_t)(delta) << 5)
#endif
/* Bytes of data[] records may use, and the largest payload (ringbuf.h's
 * bsize and max_event): with 8-byte records the area is a multiple of 8. */
#define PW_DATA_SIZE(page_size, align8) (((uint32_t)(page_size) - PW_PAGE_HDR) & ((align8) ? ~7u : ~0u))
#define PW_MAX_EVENT(page_size, align8) (PW_DATA_SIZE(page_size, align8) - 8u)
#define PW_COMMIT_MASK ((1u << 27) - 1)     /* bytes-used field of commit */
#define PW_MISSED_EVENTS (1ull << 31)
#define PW_MISSED_STORED (1ull << 30)
#define PW_TYPE_DATA_MAX 28u
#define PW_TYPE_PADDING 29u
#define PW_TYPE_EXTEND 30u
#define PW_TYPE_STAMP 31u
#define PW_DELTA_BITS 27u
#define PW_MAX_SMALL_DATA 112u              /* largest payload with type_len 1..28 */
#define PW_TS_BITS 59u
#define PW_TS_MASK ((1ull << PW_TS_BITS) - 1)

enum pw_kind { PW_DATA = 1, PW_PADDING = 2, PW_EXTEND = 3, PW_STAMP = 4 };

enum pw_error {
	PW_OK = 0,
	PW_E_ARG = -1,      /* NULL page, or page_size < the page header */
	PW_E_COMMIT = -2,   /* commit beyond the data area, or not a multiple of 4 */
	PW_E_FLAGS = -3,    /* reserved commit bits (27..29, 32..63) set */
	PW_E_MISSED = -4,   /* STORED without MISSED, or stored count beyond the page */
	PW_E_ALIGN = -5,    /* record length/offset breaks the 4 (8) byte alignment */
	PW_E_CROSS = -6,    /* data, extend or stamp record crosses commit */
	PW_E_TYPE0 = -7,    /* type-0 data record with array[0] < 4 */
	PW_E_PADDING = -8,  /* padding length below 8 or beyond commit */
	PW_E_EXTEND = -9,   /* TIME_EXTEND/STAMP not followed by a data/padding record */
	PW_E_STAMP = -10,   /* TIME_STAMP goes backwards */
	PW_E_TIME = -11,    /* running time stamp overflows 64 bits */
	PW_E_SEQUENCE = -12 /* pw_check_sequence: page starts before the previous one ended */
};

struct pw_record {
	int kind;             /* enum pw_kind */
	uint32_t offset;      /* from the start of data[] (page offset - PW_PAGE_HDR) */
	uint32_t len;         /* total record bytes, header included */
	const uint8_t *payload; /* data records only, else NULL */
	uint32_t payload_len; /* data: type_len*4 or array[0]-4; else 0 */
	uint64_t ts;          /* running ts after this record's delta / stamp */
	uint32_t delta;       /* the header's raw 27-bit time_delta */
	uint32_t type_len;    /* the header's raw type_len */
	uint64_t value;       /* EXTEND: full delta; STAMP: 59-bit value; else delta */
	bool null_padding;    /* PADDING that ends the page (< 8 bytes left) */
};

struct pw_page {
	uint64_t time_stamp;
	uint64_t commit_raw;  /* the whole commit word, flags included */
	uint32_t commit;      /* bytes of data[] in use */
	bool missed;          /* RB_MISSED_EVENTS */
	bool missed_stored;   /* RB_MISSED_STORED */
	uint64_t missed_count;/* the stored count, 0 unless missed_stored */
	/* counts (records before the error, on failure) */
	uint32_t ndata, npad, nextend, nstamp;
	uint64_t first_ts, last_ts; /* ts of the first / last data record, else time_stamp */
	uint64_t end_ts;      /* running ts after the last record */
	/* flags: legal but worth asserting on */
	bool first_delta_nonzero;   /* record at offset 0 is data with delta != 0 */
	bool null_padding;          /* the page ends with null padding */
	uint32_t stamp_wraps;       /* TIME_STAMPs that needed the 1 << 59 fix-up */
	uint32_t small_extends;     /* TIME_EXTENDs whose delta fits in 27 bits */
	uint32_t delta_after_time;  /* data records after EXTEND/STAMP with delta != 0 */
	uint32_t noncanonical;      /* data records pw_expected_len() would not produce */
	uint32_t first_noncanonical;/* offset of the first of them */
	uint32_t err_offset;        /* data[] offset of the error, on failure */
};

/* Bytes a data record with a payload of len bytes occupies (kernel sizing). */
static inline uint32_t pw_expected_len(uint32_t len, bool align8)
{
	uint32_t a = align8 ? 8u : 4u;
	if (len == 0)
		len = 1;
	if (len > PW_MAX_SMALL_DATA || align8)
		len += 4;           /* array[0] holds the length */
	len += 4;                   /* header word */
	len = (len + a - 1) & ~(a - 1);
	if (len == 12)              /* 12 would look like extend + 4: never used */
		len = 16;
	return len;
}

static inline const char *pw_strerror(int code)
{
	switch (code) {
	case PW_OK: return "ok";
	case PW_E_ARG: return "bad argument";
	case PW_E_COMMIT: return "bad commit";
	case PW_E_FLAGS: return "reserved commit bits set";
	case PW_E_MISSED: return "bad missed-events flags";
	case PW_E_ALIGN: return "misaligned record";
	case PW_E_CROSS: return "record crosses commit";
	case PW_E_TYPE0: return "bad type-0 length";
	case PW_E_PADDING: return "padding length out of range";
	case PW_E_EXTEND: return "time record not followed by an event";
	case PW_E_STAMP: return "TIME_STAMP goes backwards";
	case PW_E_TIME: return "time stamp overflow";
	case PW_E_SEQUENCE: return "page starts before the previous page ended";
	default: return "callback or unknown code";
	}
}

/* ---- internals ---------------------------------------------------------- */

static inline uint32_t pw__rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof v); /* no alignment assumption on the page */
	return v;
}

static inline uint64_t pw__rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

/* A long-sized field (commit, lost count), zero-extended. */
static inline uint64_t pw__rdlong(const uint8_t *p)
{
	unsigned long v;
	memcpy(&v, p, sizeof v);
	return v;
}

/* Format the error message (per thread, valid until the next failing call). */
static inline int pw__fail(const char **err, struct pw_page *info, int code, uint32_t off,
			   const char *fmt, ...)
{
	static _Thread_local char buf[256];
	int n = snprintf(buf, sizeof buf, "pagewalk: %s at data offset %u (page offset %u): ",
			 pw_strerror(code), (unsigned)off, (unsigned)(off + PW_PAGE_HDR));
	va_list ap;
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof buf)
		vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
	va_end(ap);
	info->err_offset = off;
	if (err)
		*err = buf;
	return code;
}

/* Add a delta to the running ts, refusing to wrap 64 bits. */
static inline bool pw__add(uint64_t *ts, uint64_t d)
{
	if (*ts > UINT64_MAX - d)
		return false;
	*ts += d;
	return true;
}

/* One validating pass; cb (may be NULL) sees each record as it is parsed. */
static inline int pw__walk(const uint8_t *pg, size_t page_size, bool align8,
			   int (*cb)(const struct pw_record *, void *), void *ctx,
			   struct pw_page *in, const char **err)
{
	const uint8_t *data = pg + PW_PAGE_HDR;
	uint64_t ts, flags, size = page_size - PW_PAGE_HDR;
	uint32_t off = 0, commit, a = align8 ? 8u : 4u;
	uint32_t tpending = UINT32_MAX; /* offset of an EXTEND/STAMP awaiting its event */
	int crc;

	memset(in, 0, sizeof *in);
	in->time_stamp = ts = pw__rd64(pg);
	in->commit_raw = pw__rdlong(pg + 8);
	in->commit = commit = (uint32_t)(in->commit_raw & PW_COMMIT_MASK);
	in->missed = (in->commit_raw & PW_MISSED_EVENTS) != 0;
	in->missed_stored = (in->commit_raw & PW_MISSED_STORED) != 0;
	in->first_ts = in->last_ts = in->end_ts = ts;
	flags = in->commit_raw & ~(uint64_t)PW_COMMIT_MASK;
	if (flags & ~(PW_MISSED_EVENTS | PW_MISSED_STORED))
		return pw__fail(err, in, PW_E_FLAGS, 0, "commit word 0x%llx",
				(unsigned long long)in->commit_raw);
	if (commit > size)
		return pw__fail(err, in, PW_E_COMMIT, 0, "commit %u > data size %llu",
				(unsigned)commit, (unsigned long long)size);
	if (commit % 4)
		return pw__fail(err, in, PW_E_COMMIT, 0, "commit %u not a multiple of 4",
				(unsigned)commit);
	if (in->missed_stored) {
		if (!in->missed)
			return pw__fail(err, in, PW_E_MISSED, commit, "MISSED_STORED without MISSED_EVENTS");
		if ((uint64_t)commit + PW_LONG > size)
			return pw__fail(err, in, PW_E_MISSED, commit,
					"stored missed count does not fit (data size %llu)",
					(unsigned long long)size);
		in->missed_count = pw__rdlong(data + commit);
	}

	while (off < commit) {
		struct pw_record r;
		uint32_t rem = commit - off, w, a0 = 0;
		uint64_t len;

		memset(&r, 0, sizeof r);
		if (rem < 4) /* unreachable while commit and lengths are multiples of 4 */
			return pw__fail(err, in, PW_E_CROSS, off, "header crosses commit %u", commit);
		w = pw__rd32(data + off);
		r.offset = off;
		r.type_len = PW_TYPE(w);
		r.value = r.delta = PW_DELTA(w);
		if (r.type_len == PW_TYPE_PADDING && rem < 8) {
			/* null padding: rest of page; the delta is not applied */
			if (tpending != UINT32_MAX)
				return pw__fail(err, in, PW_E_EXTEND, tpending,
						"time record followed by null padding at %u", off);
			r.kind = PW_PADDING;
			r.len = rem;
			r.ts = ts;
			r.null_padding = in->null_padding = true;
			in->npad++;
			if (cb && (crc = cb(&r, ctx)) != 0)
				return crc;
			break;
		}
		if (rem < 8) /* every other record is at least 8 bytes */
			return pw__fail(err, in, PW_E_CROSS, off, "type_len %u needs 8 bytes, %u left",
					(unsigned)r.type_len, (unsigned)rem);
		a0 = pw__rd32(data + off + 4);

		if (r.type_len <= PW_TYPE_DATA_MAX) {
			bool canon;
			if (r.type_len == 0) {
				if (a0 < 4)
					return pw__fail(err, in, PW_E_TYPE0, off, "array[0] = %u < 4",
							(unsigned)a0);
				len = 4 + (uint64_t)a0;
				r.payload_len = a0 - 4;
				r.payload = data + off + 8;
			} else {
				if (align8)
					return pw__fail(err, in, PW_E_ALIGN, off,
							"type_len %u record in 8-byte mode",
							(unsigned)r.type_len);
				len = 4 + 4 * (uint64_t)r.type_len;
				r.payload_len = 4 * r.type_len;
				r.payload = data + off + 4;
			}
			if (len > rem)
				return pw__fail(err, in, PW_E_CROSS, off,
						"data record of %llu bytes, %u left before commit",
						(unsigned long long)len, (unsigned)rem);
			if (len % a || off % a)
				return pw__fail(err, in, PW_E_ALIGN, off,
						"data record length %llu, offset not %u-aligned",
						(unsigned long long)len, (unsigned)a);
			canon = len == pw_expected_len(r.payload_len, align8) &&
				(r.type_len == 0) == (align8 || r.payload_len > PW_MAX_SMALL_DATA);
			if (!canon && in->noncanonical++ == 0)
				in->first_noncanonical = off;
			if (off == 0 && r.delta)
				in->first_delta_nonzero = true;
			if (tpending != UINT32_MAX && r.delta)
				in->delta_after_time++;
			if (!pw__add(&ts, r.delta))
				return pw__fail(err, in, PW_E_TIME, off, "ts overflow");
			r.kind = PW_DATA;
			if (in->ndata++ == 0)
				in->first_ts = ts;
			in->last_ts = ts;
			tpending = UINT32_MAX;
		} else if (r.type_len == PW_TYPE_PADDING) {
			if (a0 < 4 || (uint64_t)a0 + 4 > rem)
				return pw__fail(err, in, PW_E_PADDING, off,
						"array[0] = %u (need 4..%u)", (unsigned)a0,
						(unsigned)(rem - 4));
			if (a0 % 4)
				return pw__fail(err, in, PW_E_ALIGN, off,
						"padding array[0] = %u not a multiple of 4", (unsigned)a0);
			len = 4 + (uint64_t)a0;
			if (!pw__add(&ts, r.delta))
				return pw__fail(err, in, PW_E_TIME, off, "ts overflow");
			r.kind = PW_PADDING;
			in->npad++;
			tpending = UINT32_MAX; /* a discarded event after its time record */
		} else {
			if (tpending != UINT32_MAX)
				return pw__fail(err, in, PW_E_EXTEND, tpending,
						"time record followed by another at %u", off);
			len = 8;
			r.value = ((uint64_t)a0 << PW_DELTA_BITS) | r.delta;
			tpending = off;
			if (r.type_len == PW_TYPE_EXTEND) {
				if (!pw__add(&ts, r.value))
					return pw__fail(err, in, PW_E_TIME, off, "ts overflow");
				if (r.value < (1ull << PW_DELTA_BITS))
					in->small_extends++;
				r.kind = PW_EXTEND;
				in->nextend++;
			} else {
				uint64_t nts = (ts & ~PW_TS_MASK) | r.value;
				if (nts < ts) {
					/* a real wrap jumps from near 2^59 to near 0 */
					uint64_t back = (ts & PW_TS_MASK) - r.value;
					if (back < (1ull << (PW_TS_BITS - 1)))
						return pw__fail(err, in, PW_E_STAMP, off,
								"to 0x%llx, %llu before 0x%llx",
								(unsigned long long)r.value,
								(unsigned long long)back,
								(unsigned long long)ts);
					if (!pw__add(&nts, 1ull << PW_TS_BITS))
						return pw__fail(err, in, PW_E_TIME, off, "ts overflow");
					in->stamp_wraps++;
				}
				ts = nts;
				r.kind = PW_STAMP;
				in->nstamp++;
			}
		}
		r.len = (uint32_t)len;
		r.ts = in->end_ts = ts;
		if (cb && (crc = cb(&r, ctx)) != 0)
			return crc;
		off += r.len;
	}
	if (tpending != UINT32_MAX)
		return pw__fail(err, in, PW_E_EXTEND, tpending, "time record is the last record");
	in->end_ts = ts;
	return PW_OK;
}

/* ---- API ---------------------------------------------------------------- */

/* Validate one page of page_size bytes; page needs no alignment. Returns 0 or
 * a negative PW_E_* code, with *err (if err) a message naming the problem and
 * its offset (thread-local buffer, valid until the next failure on this
 * thread; NULL on success). cb (may be NULL) is called for every record in
 * order, but only once the whole page has validated; a non-zero return stops
 * the walk and is returned (use positive values). info may be NULL. Never
 * reads outside [page, page + page_size). */
static inline int pw_walk_page(const void *page, size_t page_size, bool align8,
			       int (*cb)(const struct pw_record *, void *), void *ctx,
			       struct pw_page *info, const char **err)
{
	struct pw_page tmp;
	int rc;

	if (!info)
		info = &tmp;
	if (err)
		*err = NULL;
	if (!page || page_size < PW_PAGE_HDR) {
		memset(info, 0, sizeof *info);
		return pw__fail(err, info, PW_E_ARG, 0, "page %s, page_size %zu (need >= %u)",
				page ? "given" : "NULL", page_size, (unsigned)PW_PAGE_HDR);
	}
	rc = pw__walk(page, page_size, align8, NULL, NULL, info, err);
	if (rc == 0 && cb)
		rc = pw__walk(page, page_size, align8, cb, ctx, info, err);
	return rc;
}

/* Summary counts of a page; any pointer may be NULL. first_ts/last_ts are
 * those of the first/last data record (the page time_stamp if none).
 * Returns what pw_walk_page() returns. */
static inline int pw_count(const void *page, size_t page_size, bool align8,
			   uint32_t *ndata, uint32_t *npad, uint32_t *nextend,
			   uint32_t *nstamp, uint64_t *first_ts, uint64_t *last_ts)
{
	struct pw_page in;
	int rc = pw_walk_page(page, page_size, align8, NULL, NULL, &in, NULL);

	if (ndata) *ndata = in.ndata;
	if (npad) *npad = in.npad;
	if (nextend) *nextend = in.nextend;
	if (nstamp) *nstamp = in.nstamp;
	if (first_ts) *first_ts = in.first_ts;
	if (last_ts) *last_ts = in.last_ts;
	return rc;
}

/* Chain the pages of one CPU in order: validates page and checks that its
 * first data record is not older than prev_last_ts (the previous page's last
 * data ts; 0 for the first page). *last_ts (may be NULL) receives this page's
 * last data ts, or prev_last_ts if it has no data record, ready for the next
 * call. Returns 0, a PW_E_* code from the walk, or PW_E_SEQUENCE. */
static inline int pw_check_sequence(uint64_t prev_last_ts, const void *page, size_t page_size,
				    bool align8, uint64_t *last_ts, const char **err)
{
	struct pw_page in;
	int rc = pw_walk_page(page, page_size, align8, NULL, NULL, &in, err);

	if (last_ts)
		*last_ts = prev_last_ts;
	if (rc)
		return rc;
	if (in.ndata && in.first_ts < prev_last_ts)
		return pw__fail(err, &in, PW_E_SEQUENCE, 0,
				"first data ts %llu < previous page's last ts %llu",
				(unsigned long long)in.first_ts, (unsigned long long)prev_last_ts);
	if (last_ts && in.ndata)
		*last_ts = in.last_ts;
	return PW_OK;
}

#endif /* PAGEWALK_H */
