/* malloc_check - check the trace.dat files of examples/malloc_trace.so.
 * SPDX-License-Identifier: MIT   (see ringbuf.h)
 *
 *   malloc_check [-q] A.dat B.dat ...      (one per process image, as
 *                                           `ringbuf-record -d` writes them)
 *
 * Reads each file (trace.dat version 6, this host's byte order and word size:
 * what ringbuf-record writes by default) on its own, without ringbuf.h or
 * libtraceevent: the event ids come from the formats in the file (by name),
 * the records from the pages (the kernel's page and record layout). Replays
 * each process's events in time-stamp order (free-like events first at equal
 * stamps; malloc_trace.so stamps a free before the real call and an
 * allocation after it) and checks that
 *   - every free, realloc_free and realloc's old pointer is a live allocation
 *     of that process (a child of fork() starts with what its parent held at
 *     the malloc_trace:fork event its malloc_trace:proc names),
 *   - no allocation returns a pointer that is still live,
 *   - no event was lost (the pages' lost counts).
 * Prints one line per file and a total; exit status 0 when every check
 * passed, 1 when one failed, 2 on a file that cannot be read.
 *
 * Defining MALLOC_CHECK_NO_MAIN before including this file gives the loader
 * and the checker without main (tests/tools/test_malloc_trace.c).
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum mc_kind { MC_MALLOC, MC_CALLOC, MC_FREE, MC_REALLOC_FREE, MC_REALLOC, MC_MEMALIGN, MC_PROC, MC_FORK, MC_NKIND };
static const char *const mc_names[MC_NKIND] = {"malloc", "calloc", "free", "realloc_free",
					       "realloc", "memalign", "proc", "fork"};

struct mc_event {
	uint64_t ts;
	uint64_t f[4];   /* the u64 fields in order */
	uint32_t order;  /* position in the file: ties keep it */
	int32_t tid;
	uint8_t kind;
};

struct mc_trace {
	const char *path;
	struct mc_event *ev;
	size_t n, cap;
	uint64_t lost, lost_unknown; /* events lost (stored counts), pages with an unknown gap */
	uint64_t count[MC_NKIND];
	int64_t pid, ppid, fork_seq, forked; /* from malloc_trace:proc (-1: none) */
};

struct mc_result {
	uint64_t events, allocs, frees, unmatched, double_alloc, live_end, inherited, lost;
};

/* ---- reading --------------------------------------------------------------- */

struct mc_rd {
	const unsigned char *p;
	size_t len, pos;
	int bad;
};

static uint64_t mc_get(struct mc_rd *r, unsigned n)
{
	uint64_t v = 0;
	if (r->bad || n > r->len - r->pos) {
		r->bad = 1;
		return 0;
	}
	if (n == 8) {
		memcpy(&v, r->p + r->pos, 8);
	} else if (n == 4) {
		uint32_t x;
		memcpy(&x, r->p + r->pos, 4);
		v = x;
	} else {
		uint16_t x;
		memcpy(&x, r->p + r->pos, 2);
		v = x;
	}
	r->pos += n;
	return v;
}

static void mc_skip(struct mc_rd *r, uint64_t n)
{
	if (r->bad || n > r->len - r->pos)
		r->bad = 1;
	else
		r->pos += (size_t)n;
}

static const char *mc_str(struct mc_rd *r)
{
	const char *s = (const char *)r->p + r->pos;
	size_t n;
	if (r->bad)
		return "";
	n = strnlen(s, r->len - r->pos);
	if (n == r->len - r->pos) {
		r->bad = 1;
		return "";
	}
	r->pos += n + 1;
	return s;
}

static int mc_push(struct mc_trace *t, const struct mc_event *e)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 4096;
		struct mc_event *p = realloc(t->ev, cap * sizeof *p);
		if (!p)
			return -1;
		t->ev = p;
		t->cap = cap;
	}
	t->ev[t->n] = *e;
	t->ev[t->n].order = (uint32_t)t->n;
	t->n++;
	return 0;
}

/* One page of a CPU: the kernel's buffer_data_page. Returns 0 or -1. */
static int mc_page(struct mc_trace *t, const unsigned char *pg, uint32_t page_size, unsigned lsize,
		   const int *kind_of_id)
{
	uint64_t ts, commit, size, pos;
	unsigned hdr = 8 + lsize;
	memcpy(&ts, pg, 8);
	if (lsize == 8) {
		memcpy(&commit, pg + 8, 8);
	} else {
		uint32_t c;
		memcpy(&c, pg + 8, 4);
		commit = c;
	}
	size = commit & ((1u << 27) - 1);
	if (size > page_size - hdr)
		return -1;
	if (commit & (1ull << 31)) {
		if (commit & (1ull << 30)) {
			uint64_t lost = 0;
			if (size + lsize <= page_size - hdr)
				memcpy(&lost, pg + hdr + size, lsize);
			t->lost += lost;
		} else {
			t->lost_unknown++;
		}
	}
	for (pos = 0; pos + 4 <= size;) {
		uint32_t w, a0 = 0, type, delta;
		const unsigned char *rec = pg + hdr + pos;
		memcpy(&w, rec, 4);
		type = w & 31;
		delta = w >> 5;
		if (pos + 8 <= size)
			memcpy(&a0, rec + 4, 4);
		if (type == 29) { /* padding */
			if (size - pos < 8)
				break;
			ts += delta;
			pos += 4 + (uint64_t)a0;
		} else if (type == 30) { /* time extend */
			ts += ((uint64_t)a0 << 27) | delta;
			pos += 8;
		} else if (type == 31) { /* absolute stamp */
			uint64_t abs = ((uint64_t)a0 << 27) | delta;
			ts = (ts & ~((1ull << 59) - 1)) | abs;
			pos += 8;
		} else {
			const unsigned char *pl;
			uint64_t len;
			struct mc_event e;
			uint16_t id;
			unsigned i, nf;
			ts += delta;
			if (type == 0) {
				if (a0 < 4)
					return -1;
				pl = rec + 8;
				len = a0 - 4;
				pos += 4 + (uint64_t)a0;
			} else {
				pl = rec + 4;
				len = (uint64_t)type * 4;
				pos += 4 + len;
			}
			if (pos > size || len < 8)
				return -1;
			memset(&e, 0, sizeof e);
			memcpy(&id, pl, 2);
			memcpy(&e.tid, pl + 4, 4);
			if (id >= 64 || kind_of_id[id] < 0)
				continue; /* not one of ours */
			e.kind = (uint8_t)kind_of_id[id];
			e.ts = ts;
			nf = (unsigned)((len - 8) / 8);
			for (i = 0; i < nf && i < 4; i++)
				memcpy(&e.f[i], pl + 8 + 8 * i, 8);
			if (mc_push(t, &e) < 0)
				return -1;
			t->count[e.kind]++;
		}
	}
	return 0;
}

static int mc_cmp(const void *a, const void *b)
{
	const struct mc_event *x = a, *y = b;
	int fx = x->kind == MC_FREE || x->kind == MC_REALLOC_FREE, fy = y->kind == MC_FREE || y->kind == MC_REALLOC_FREE;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (fx != fy)
		return fx ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Load path into t. Returns 0, or -1 with a message on stderr. */
static int mc_load(const char *path, struct mc_trace *t)
{
	struct mc_rd r;
	struct stat sb;
	int kind_of_id[64];
	unsigned i, nsys, ncpu, lsize;
	uint32_t page_size;
	void *map;
	int fd, rc = -1;
	const char *why = "malformed";
	memset(t, 0, sizeof *t);
	t->path = path;
	t->pid = t->ppid = t->fork_seq = t->forked = -1;
	for (i = 0; i < 64; i++)
		kind_of_id[i] = -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &sb) != 0) {
		fprintf(stderr, "malloc_check: %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	map = sb.st_size ? mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
	close(fd);
	if (map == MAP_FAILED) {
		fprintf(stderr, "malloc_check: %s: cannot map\n", path);
		return -1;
	}
	memset(&r, 0, sizeof r);
	r.p = map;
	r.len = (size_t)sb.st_size;
	if (r.len < 20 || memcmp(r.p, "\x17\x08\x44tracing", 10) != 0) {
		why = "not a trace.dat";
		goto out;
	}
	r.pos = 10;
	if (strcmp(mc_str(&r), "6") != 0) {
		why = "not version 6 (record with -V 6)";
		goto out;
	}
	if (r.len - r.pos < 6)
		goto out;
	{ /* byte order (0 little, 1 big), then sizeof(long) */
		unsigned char big = r.p[r.pos], ls = r.p[r.pos + 1];
		uint16_t one = 1;
		unsigned char host_big = *(unsigned char *)&one == 0;
		if (big != host_big || (ls != 4 && ls != 8)) {
			why = "another byte order";
			goto out;
		}
		lsize = ls;
		r.pos += 2;
	}
	page_size = (uint32_t)mc_get(&r, 4);
	if (page_size < 64 || page_size > (1u << 20))
		goto out;
	mc_str(&r); /* header_page */
	mc_skip(&r, mc_get(&r, 8));
	mc_str(&r); /* header_event */
	mc_skip(&r, mc_get(&r, 8));
	for (i = (unsigned)mc_get(&r, 4); i-- && !r.bad;) /* ftrace formats */
		mc_skip(&r, mc_get(&r, 8));
	nsys = (unsigned)mc_get(&r, 4);
	while (nsys-- && !r.bad) {
		unsigned nev;
		mc_str(&r);
		nev = (unsigned)mc_get(&r, 4);
		while (nev-- && !r.bad) {
			uint64_t len = mc_get(&r, 8);
			char text[4096];
			size_t n = len < sizeof text - 1 ? (size_t)len : sizeof text - 1;
			unsigned k, id;
			if (r.bad || len > r.len - r.pos)
				break;
			memcpy(text, r.p + r.pos, n);
			text[n] = 0;
			mc_skip(&r, len);
			for (k = 0; k < MC_NKIND; k++) {
				char key[64];
				const char *idp;
				snprintf(key, sizeof key, "name: %s\n", mc_names[k]);
				if (strncmp(text, key, strlen(key)) != 0)
					continue;
				idp = strstr(text, "ID: ");
				if (idp && sscanf(idp, "ID: %u", &id) == 1 && id < 64)
					kind_of_id[id] = (int)k;
			}
		}
	}
	mc_skip(&r, mc_get(&r, 4)); /* kallsyms */
	mc_skip(&r, mc_get(&r, 4)); /* printk */
	mc_skip(&r, mc_get(&r, 8)); /* cmdlines */
	ncpu = (unsigned)mc_get(&r, 4);
	if (strncmp(mc_str(&r), "options", 7) != 0)
		goto out;
	for (;;) {
		unsigned id = (unsigned)mc_get(&r, 2);
		if (r.bad || id == 0)
			break;
		mc_skip(&r, mc_get(&r, 4));
	}
	if (strcmp(mc_str(&r), "flyrecord") != 0)
		goto out;
	for (i = 0; i < ncpu && !r.bad; i++) {
		uint64_t off = mc_get(&r, 8), size = mc_get(&r, 8), p;
		if (r.bad || off > r.len || size > r.len - off || off % page_size || size % page_size)
			goto out;
		for (p = 0; p < size; p += page_size)
			if (mc_page(t, r.p + off + p, page_size, lsize, kind_of_id) < 0) {
				why = "malformed page";
				goto out;
			}
	}
	if (r.bad)
		goto out;
	qsort(t->ev, t->n, sizeof *t->ev, mc_cmp);
	for (i = 0; i < t->n; i++)
		if (t->ev[i].kind == MC_PROC) {
			t->pid = (int64_t)t->ev[i].f[0];
			t->ppid = (int64_t)t->ev[i].f[1];
			t->fork_seq = (int64_t)t->ev[i].f[2];
			t->forked = (int64_t)t->ev[i].f[3];
			break;
		}
	rc = 0;
out:
	if (rc < 0)
		fprintf(stderr, "malloc_check: %s: %s\n", path, why);
	munmap(map, (size_t)sb.st_size);
	return rc;
}

static void mc_free_trace(struct mc_trace *t)
{
	free(t->ev);
	t->ev = NULL;
	t->n = t->cap = 0;
}

/* ---- the live set: open addressing, backward-shift deletion ----------------- */

struct mc_set {
	uint64_t *k;
	size_t mask, n;
};

static uint64_t mc_hash(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static int mc_set_init(struct mc_set *s, size_t cap)
{
	size_t c = 1024;
	while (c < cap * 2)
		c *= 2;
	s->k = calloc(c, sizeof *s->k);
	s->mask = c - 1;
	s->n = 0;
	return s->k ? 0 : -1;
}

static int mc_set_add(struct mc_set *s, uint64_t key) /* 0 added, 1 was there, -1 no memory */
{
	size_t i;
	if ((s->n + 1) * 2 > s->mask + 1) {
		struct mc_set b;
		size_t j;
		if (mc_set_init(&b, s->mask + 1) < 0)
			return -1;
		for (j = 0; j <= s->mask; j++)
			if (s->k[j])
				mc_set_add(&b, s->k[j]);
		free(s->k);
		*s = b;
	}
	i = (size_t)mc_hash(key) & s->mask;
	while (s->k[i]) {
		if (s->k[i] == key)
			return 1;
		i = (i + 1) & s->mask;
	}
	s->k[i] = key;
	s->n++;
	return 0;
}

static int mc_set_del(struct mc_set *s, uint64_t key) /* 1 removed, 0 absent */
{
	size_t i = (size_t)mc_hash(key) & s->mask, j;
	while (s->k[i] && s->k[i] != key)
		i = (i + 1) & s->mask;
	if (!s->k[i])
		return 0;
	j = i;
	for (;;) { /* shift back what probed past i */
		size_t h;
		j = (j + 1) & s->mask;
		if (!s->k[j])
			break;
		h = (size_t)mc_hash(s->k[j]) & s->mask;
		if (((j - h) & s->mask) >= ((j - i) & s->mask)) {
			s->k[i] = s->k[j];
			i = j;
		}
	}
	s->k[i] = 0;
	s->n--;
	return 1;
}

/* Replay t's events (up to the fork event with sequence upto, if upto > 0)
 * into s; counts into res (may be NULL). */
static int mc_replay(const struct mc_trace *t, struct mc_set *s, uint64_t upto, struct mc_result *res)
{
	size_t i;
	struct mc_result dummy;
	if (!res)
		res = &dummy;
	for (i = 0; i < t->n; i++) {
		const struct mc_event *e = &t->ev[i];
		int r = 0;
		switch (e->kind) {
		case MC_MALLOC:
		case MC_CALLOC:
		case MC_MEMALIGN:
			if (e->f[0]) {
				res->allocs++;
				r = mc_set_add(s, e->f[0]);
				if (r == 1)
					res->double_alloc++;
			}
			break;
		case MC_FREE:
		case MC_REALLOC_FREE:
			res->frees++;
			if (!mc_set_del(s, e->f[0]))
				res->unmatched++;
			break;
		case MC_REALLOC: /* old, ptr, size */
			if (e->f[1]) {
				res->allocs++;
				r = mc_set_add(s, e->f[1]);
				if (r == 1)
					res->double_alloc++;
			} else if (e->f[0] && e->f[2]) {
				r = mc_set_add(s, e->f[0]); /* failed: the old block lives on */
			}
			break;
		case MC_FORK:
			if (upto && e->f[0] == upto)
				return 0;
			break;
		default:
			break;
		}
		if (r < 0)
			return -1;
	}
	return upto ? 1 : 0; /* 1: the fork event was not found */
}

/* What trace i's process held when it started: for a fork child, its
 * parent's live set at the fork event it names (the parent's own inheritance
 * first). depth bounds a malformed cycle. */
static int mc_inherit(struct mc_trace *t, size_t n, size_t i, struct mc_set *s, unsigned depth)
{
	size_t j, best = n;
	if (t[i].forked != 1 || depth > 64)
		return 0;
	/* The parent's pid may name several images (an image that execs keeps
	 * its pid and gets a new buffer): the fork was made by the last one
	 * that started before the child's first event, if their times tell;
	 * else the first one that holds the fork event. */
	for (j = 0; j < n; j++)
		if (j != i && t[j].pid == t[i].ppid && t[j].n && t[i].n && t[j].ev[0].ts <= t[i].ev[0].ts &&
		    (best == n || t[j].ev[0].ts > t[best].ev[0].ts))
			best = j;
	for (j = 0; j < n; j++) {
		struct mc_set p;
		int r;
		if (j == i || t[j].pid != t[i].ppid || (best < n && j != best))
			continue;
		if (mc_set_init(&p, 1024) < 0)
			return -1;
		if (mc_inherit(t, n, j, &p, depth + 1) < 0 ||
		    (r = mc_replay(&t[j], &p, (uint64_t)t[i].fork_seq, NULL)) < 0) {
			free(p.k);
			return -1;
		}
		if (r == 0) { /* this image of the parent made that fork */
			free(s->k);
			*s = p;
			return 0;
		}
		free(p.k);
	}
	return 0;
}

/* Check every trace (all of a process tree). res[i] gets trace i's counts.
 * Returns 0 when every check passed, 1 otherwise, -1 out of memory. */
static int mc_check(struct mc_trace *t, size_t n, struct mc_result *res)
{
	size_t i;
	int bad = 0;
	for (i = 0; i < n; i++) {
		struct mc_set s;
		memset(&res[i], 0, sizeof res[i]);
		if (mc_set_init(&s, 1024) < 0)
			return -1;
		if (mc_inherit(t, n, i, &s, 0) < 0) {
			free(s.k);
			return -1;
		}
		res[i].inherited = s.n;
		if (mc_replay(&t[i], &s, 0, &res[i]) < 0) {
			free(s.k);
			return -1;
		}
		res[i].events = t[i].n;
		res[i].live_end = s.n;
		res[i].lost = t[i].lost + t[i].lost_unknown;
		if (res[i].unmatched || res[i].double_alloc || res[i].lost)
			bad = 1;
		free(s.k);
	}
	return bad;
}

#ifndef MALLOC_CHECK_NO_MAIN
int main(int argc, char **argv)
{
	struct mc_trace *t;
	struct mc_result *res, tot;
	int i, n = 0, quiet = 0, first = 1, r;
	if (argc > 1 && strcmp(argv[1], "-q") == 0) {
		quiet = 1;
		first = 2;
	}
	if (argc <= first) {
		fprintf(stderr, "usage: malloc_check [-q] A.dat [B.dat...]\n");
		return 2;
	}
	t = calloc((size_t)argc, sizeof *t);
	res = calloc((size_t)argc, sizeof *res);
	if (!t || !res)
		return 2;
	for (i = first; i < argc; i++, n++)
		if (mc_load(argv[i], &t[n]) < 0)
			return 2;
	r = mc_check(t, (size_t)n, res);
	if (r < 0) {
		fprintf(stderr, "malloc_check: out of memory\n");
		return 2;
	}
	memset(&tot, 0, sizeof tot);
	for (i = 0; i < n; i++) {
		if (!quiet)
			printf("%s: pid %lld%s: %llu events, %llu allocations, %llu frees, %llu inherited, "
			       "%llu frees unmatched, %llu allocations of a live pointer, %llu live at the end, %llu lost\n",
			       t[i].path, (long long)t[i].pid, t[i].forked == 1 ? " (fork child)" : "",
			       (unsigned long long)res[i].events, (unsigned long long)res[i].allocs,
			       (unsigned long long)res[i].frees, (unsigned long long)res[i].inherited,
			       (unsigned long long)res[i].unmatched, (unsigned long long)res[i].double_alloc,
			       (unsigned long long)res[i].live_end, (unsigned long long)res[i].lost);
		tot.events += res[i].events;
		tot.allocs += res[i].allocs;
		tot.frees += res[i].frees;
		tot.unmatched += res[i].unmatched;
		tot.double_alloc += res[i].double_alloc;
		tot.lost += res[i].lost;
		mc_free_trace(&t[i]);
	}
	printf("total: %d processes, %llu events, %llu allocations, %llu frees, %llu unmatched frees, "
	       "%llu allocations of a live pointer, %llu lost: %s\n",
	       n, (unsigned long long)tot.events, (unsigned long long)tot.allocs, (unsigned long long)tot.frees,
	       (unsigned long long)tot.unmatched, (unsigned long long)tot.double_alloc,
	       (unsigned long long)tot.lost, r ? "FAILED" : "ok");
	free(t);
	free(res);
	return r ? 1 : 0;
}
#endif
