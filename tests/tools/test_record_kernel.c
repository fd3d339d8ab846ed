/* tools/ringbuf-record -e: the kernel's events on the user buffers' timeline.
 *
 * ONE TIME BASE. A child pins itself to one CPU and runs two threads that
 * take turns (a pipe ping-pong): A writes an event, wakes B and blocks, B
 * writes one, wakes A and blocks, 200 rounds, into a file-backed buffer
 * (default clock, "mono") that the recorder (ringbuf_record_main in a thread
 * of this process) records with `-e sched:sched_switch`. From the two files
 * alone (the user trace.dat and kernel.dat, parsed here from their bytes,
 * the sched_switch format read from kernel.dat itself), every user event of
 * A and B must fall while the kernel says that thread was on a CPU (between
 * a sched_switch to it and the next one away from it), and two consecutive
 * events of one thread must fall in two different such intervals: the
 * other thread wrote in between on the same CPU, so the kernel switched in
 * between. A clock that differs by more than a context switch breaks one of
 * the two. The kernel's recording covers the user events (it starts before
 * the child's threads are made and ends after they exit: both are waited
 * for, by state, not by time). tracefs is as before afterwards: the same
 * instances, the same global trace_clock, tracing_on, current_tracer,
 * set_event, buffer_size_kb.
 *
 * ERRORS. An unknown event, a buffer clock the kernel has no trace_clock
 * for, tracefs missing (RINGBUF_RECORD_TRACEFS), no permission (run as
 * nobody), an unwritable KERNEL.dat directory, -e with -N and the kernel
 * options without -e: each its exit status, nothing left in tracefs, no
 * output, the user buffer's events still unread.
 *
 * PAGES. The kernel's lost-events flags, sign-extended in a 64-bit commit
 * word, are read (rbrec_kpage_fix), not refused as malformed.
 *
 * SIGNALS. The tool itself (RINGBUF_RECORD_BIN, -d with a COMMAND) stopped by
 * SIGTERM and by SIGINT removes its instance and writes kernel.dat; killed by
 * SIGKILL it leaves the instance, which the next run removes.
 *
 * Needs a writable tracefs (root): mounted at /sys/kernel/tracing when it is
 * not and this runs as root; each test skips, saying why, otherwise.
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

#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "tests/recordutil.h"

#ifndef RINGBUF_RECORD_BIN /* set by the Makefile */
#define RINGBUF_RECORD_BIN "build/tools/ringbuf-record"
#endif

#define ROUNDS 200u

/* ---- tracefs -------------------------------------------------------------- */

static char tfs[400];      /* the tracefs mount; "" when not usable */
static char why_not[800];  /* why not */

static void find_tracefs(void)
{
	FILE *m = fopen("/proc/mounts", "r");
	char line[1024], dev[256], dir[400], type[64];
	tfs[0] = 0;
	while (m && fgets(line, sizeof line, m))
		if (sscanf(line, "%255s %399s %63s", dev, dir, type) == 3 && strcmp(type, "tracefs") == 0) {
			snprintf(tfs, sizeof tfs, "%s", dir);
			break;
		}
	if (m)
		fclose(m);
	if (!tfs[0] && geteuid() == 0) {
		if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0)
			snprintf(tfs, sizeof tfs, "/sys/kernel/tracing");
		else
			snprintf(why_not, sizeof why_not, "tracefs not mounted, and mounting it at "
				 "/sys/kernel/tracing failed: %s", strerror(errno));
	} else if (!tfs[0]) {
		snprintf(why_not, sizeof why_not, "tracefs not mounted (and not root to mount it)");
	}
	if (tfs[0]) {
		char p[512];
		snprintf(p, sizeof p, "%s/instances", tfs);
		if (access(p, W_OK | X_OK) != 0) {
			snprintf(why_not, sizeof why_not, "%s not writable (%s): the kernel's events need root", p,
				 strerror(errno));
			tfs[0] = 0;
		}
	}
}

#define NEED_TRACEFS()                                                   \
	do {                                                             \
		if (!tfs[0]) {                                           \
			print_message("      skipped: %s\n", why_not); \
			skip();                                          \
		}                                                        \
	} while (0)

static char *tpath(const char *rel)
{
	static char buf[4][1100];
	static int k;
	char *b = buf[k++ & 3];
	snprintf(b, sizeof buf[0], "%s/%s", tfs, rel);
	return b;
}

static char *text_of(const char *path)
{
	char *t = rbrec_slurp(path, NULL);
	return t ? t : strdup("(unreadable)");
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The instances, sorted, one a line. */
static char *instances(void)
{
	DIR *d = opendir(tpath("instances"));
	struct dirent *e;
	char *names[256], *out;
	size_t n = 0, len = 1, i;
	assert_non_null(d);
	while ((e = readdir(d)) != NULL && n < 256)
		if (e->d_name[0] != '.')
			names[n++] = strdup(e->d_name);
	closedir(d);
	qsort(names, n, sizeof names[0], cmp_str);
	for (i = 0; i < n; i++)
		len += strlen(names[i]) + 1;
	out = calloc(1, len);
	assert_non_null(out);
	for (i = 0; i < n; i++) {
		strcat(out, names[i]);
		strcat(out, "\n");
		free(names[i]);
	}
	return out;
}

/* The global state the recorder must leave as it was. */
#define NSTATE 6
static const char *const state_files[NSTATE - 1] = {"trace_clock", "tracing_on", "current_tracer", "set_event",
						     "buffer_size_kb"};
struct tstate {
	char *v[NSTATE];
};

static void snapshot(struct tstate *s)
{
	unsigned i;
	for (i = 0; i < NSTATE - 1; i++)
		s->v[i] = text_of(tpath(state_files[i]));
	s->v[NSTATE - 1] = instances();
}

static void same_state(const struct tstate *before)
{
	struct tstate now;
	unsigned i;
	snapshot(&now);
	for (i = 0; i < NSTATE; i++) {
		if (strcmp(before->v[i], now.v[i]) != 0)
			fail_msg("tracefs %s changed: before \"%s\", now \"%s\"",
				 i < NSTATE - 1 ? state_files[i] : "instances/", before->v[i], now.v[i]);
		free(now.v[i]);
	}
}

static void free_state(struct tstate *s)
{
	unsigned i;
	for (i = 0; i < NSTATE; i++)
		free(s->v[i]);
}

/* The instance of recorder process pid once its events are enabled:
 * name into out; 1 found, 0 not (yet). */
static int instance_of(long pid, char *out, size_t len)
{
	DIR *d = opendir(tpath("instances"));
	struct dirent *e;
	char prefix[64];
	int found = 0;
	snprintf(prefix, sizeof prefix, "ringbuf-record-%ld-", pid);
	while (d && !found && (e = readdir(d)) != NULL) {
		char rel[600], *en;
		if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
			continue;
		snprintf(rel, sizeof rel, "instances/%s/events/sched/sched_switch/enable", e->d_name);
		en = rbrec_slurp(tpath(rel), NULL);
		if (en && en[0] == '1') {
			snprintf(out, len, "%s", e->d_name);
			found = 1;
		}
		free(en);
	}
	if (d)
		closedir(d);
	return found;
}

static int exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* ---- reading a version 6 trace.dat (this host's order) -------------------- */

struct tdat {
	unsigned char *p;
	size_t len, pos;
	uint32_t page_size;
	unsigned ncpu;
	unsigned cur_cpu; /* the CPU walk() is in */
	uint64_t off[64], size[64];
	/* kernel.dat: sched_switch's id and fields, from its format */
	int switch_id, prev_pid_at, next_pid_at;
};

static uint64_t rd(struct tdat *t, unsigned n)
{
	uint64_t v = 0;
	assert_true(t->pos + n <= t->len);
	memcpy(&v, t->p + t->pos, n); /* little-endian hosts: the low bytes */
	if (PW_BIG_ENDIAN)
		v >>= 8 * (8 - n);
	t->pos += n;
	return v;
}

static void skip_str(struct tdat *t)
{
	size_t n = strnlen((char *)t->p + t->pos, t->len - t->pos);
	assert_true(t->pos + n < t->len);
	t->pos += n + 1;
}

static int field_at(const char *fmt, const char *decl)
{
	const char *p = strstr(fmt, decl);
	assert_non_null(p);
	p = strstr(p, "offset:");
	assert_non_null(p);
	return atoi(p + 7);
}

static void load(struct tdat *t, const char *path)
{
	FILE *f = fopen(path, "rb");
	long n;
	unsigned i, nsys, nev;
	memset(t, 0, sizeof *t);
	t->switch_id = -1;
	if (!f)
		fail_msg("%s: %s", path, strerror(errno));
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	t->p = malloc((size_t)n);
	assert_non_null(t->p);
	assert_int_equal(fread(t->p, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	t->len = (size_t)n;
	assert_memory_equal(t->p, "\x17\x08\x44tracing6", 11);
	t->pos = 12;
	assert_int_equal(t->p[t->pos], PW_BIG_ENDIAN);
	assert_int_equal(t->p[t->pos + 1], sizeof(long));
	t->pos += 2;
	t->page_size = (uint32_t)rd(t, 4);
	skip_str(t); /* header_page */
	t->pos += (size_t)rd(t, 8);
	skip_str(t); /* header_event */
	t->pos += (size_t)rd(t, 8);
	nev = (unsigned)rd(t, 4); /* ftrace formats */
	while (nev--)
		t->pos += (size_t)rd(t, 8);
	nsys = (unsigned)rd(t, 4);
	while (nsys--) {
		const char *sys = (const char *)t->p + t->pos;
		skip_str(t);
		nev = (unsigned)rd(t, 4);
		while (nev--) {
			size_t len = (size_t)rd(t, 8);
			assert_true(t->pos + len <= t->len);
			if (strcmp(sys, "sched") == 0 && len > 19 &&
			    memcmp(t->p + t->pos, "name: sched_switch\n", 19) == 0) {
				char *fmt = strndup((const char *)t->p + t->pos, len);
				const char *id = strstr(fmt, "\nID: ");
				assert_non_null(id);
				t->switch_id = atoi(id + 5);
				t->prev_pid_at = field_at(fmt, " prev_pid;");
				t->next_pid_at = field_at(fmt, " next_pid;");
				free(fmt);
			}
			t->pos += len;
		}
	}
	t->pos += (size_t)rd(t, 4); /* kallsyms */
	t->pos += (size_t)rd(t, 4); /* printk */
	t->pos += (size_t)rd(t, 8); /* cmdlines */
	t->ncpu = (unsigned)rd(t, 4);
	assert_true(t->ncpu >= 1 && t->ncpu <= 64);
	skip_str(t); /* "options  " */
	for (;;) {
		unsigned id = (unsigned)rd(t, 2);
		if (id == 0)
			break;
		t->pos += (size_t)rd(t, 4);
	}
	assert_string_equal((const char *)t->p + t->pos, "flyrecord");
	skip_str(t);
	for (i = 0; i < t->ncpu; i++) {
		t->off[i] = rd(t, 8);
		t->size[i] = rd(t, 8);
		assert_int_equal(t->off[i] % t->page_size, 0);
		assert_int_equal(t->size[i] % t->page_size, 0);
		assert_true(t->off[i] + t->size[i] <= t->len);
	}
}

/* Every data record of every page, to cb. Returns the pages. */
static uint64_t walk(struct tdat *t, int (*cb)(const struct pw_record *, void *), void *ctx, uint64_t *missed)
{
	unsigned cpu;
	uint64_t pages = 0;
	for (cpu = 0; cpu < t->ncpu; cpu++) {
		uint64_t i;
		for (i = 0; i < t->size[cpu] / t->page_size; i++) {
			struct pw_page info;
			const char *err = NULL;
			memset(&info, 0, sizeof info);
			t->cur_cpu = cpu;
			if (pw_walk_page(t->p + t->off[cpu] + i * t->page_size, t->page_size, false, cb, ctx, &info,
					 &err) != 0)
				fail_msg("cpu %u page %llu: %s", cpu, (unsigned long long)i, err ? err : "?");
			if (info.missed)
				++*missed;
			pages++;
		}
	}
	return pages;
}

/* ---- the two files' events ------------------------------------------------ */

struct kev {
	uint64_t ts;
	int32_t prev, next;
	unsigned cpu; /* of kernel.dat's per-CPU data (< 64) */
};
struct uev {
	uint64_t ts;
	int32_t tid;
	uint32_t cpu, seq;
};

struct events {
	struct tdat *t;
	struct kev *k;
	size_t nk, capk;
	struct uev *u;
	size_t nu, capu;
};

static int on_kernel(const struct pw_record *r, void *ctx)
{
	struct events *e = ctx;
	uint16_t id;
	if (r->kind != PW_DATA)
		return 0;
	assert_true(r->payload_len >= 8);
	memcpy(&id, r->payload, 2);
	if (id != e->t->switch_id)
		return 0;
	assert_true(r->payload_len >= (uint32_t)e->t->next_pid_at + 4);
	if (e->nk == e->capk) {
		e->capk = e->capk ? 2 * e->capk : 1024;
		e->k = realloc(e->k, e->capk * sizeof *e->k);
		assert_non_null(e->k);
	}
	e->k[e->nk].ts = r->ts;
	e->k[e->nk].cpu = e->t->cur_cpu;
	memcpy(&e->k[e->nk].prev, r->payload + e->t->prev_pid_at, 4);
	memcpy(&e->k[e->nk].next, r->payload + e->t->next_pid_at, 4);
	e->nk++;
	return 0;
}

static int on_user(const struct pw_record *r, void *ctx)
{
	struct events *e = ctx;
	uint16_t id;
	if (r->kind != PW_DATA)
		return 0;
	assert_true(r->payload_len >= 16);
	memcpy(&id, r->payload, 2);
	assert_int_equal(id, 1); /* num, the only event */
	if (e->nu == e->capu) {
		e->capu = e->capu ? 2 * e->capu : 1024;
		e->u = realloc(e->u, e->capu * sizeof *e->u);
		assert_non_null(e->u);
	}
	e->u[e->nu].ts = r->ts;
	memcpy(&e->u[e->nu].tid, r->payload + 4, 4); /* common_pid: the thread */
	memcpy(&e->u[e->nu].cpu, r->payload + 8, 4);
	memcpy(&e->u[e->nu].seq, r->payload + 12, 4);
	e->nu++;
	return 0;
}

static int cmp_kev(const void *a, const void *b)
{
	const struct kev *x = a, *y = b;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

struct ivl {
	uint64_t from, to; /* on a CPU from `from` (0: before the recording) to `to` */
};

/* Is pid a task whose switches away the kernel never recorded (switched to,
 * never the prev of a recorded switch)? pid 0 is each CPU's own idle task:
 * on CPU cpu only. */
static int unrecorded(const struct events *e, unsigned cpu, int32_t pid)
{
	size_t i;
	int to = 0;
	for (i = 0; i < e->nk; i++) {
		if (pid == 0 && e->k[i].cpu != cpu)
			continue;
		if (e->k[i].prev == pid)
			return 0;
		to |= e->k[i].next == pid;
	}
	return to;
}

/* Switches the kernel did not record. Each recorded switch on a CPU names as
 * prev the task that the CPU's last recorded switch named as next, except on
 * kernels that record nothing while certain tasks run (seen on a VM's: its
 * agent's threads, PID 1's, and one CPU's idle task): the switch to such a
 * task is recorded, the switch away from it is not. Such a gap is accepted
 * after a task that is never the prev of a recorded switch (unrecorded());
 * a gap after any other task is a switch lost. e->k sorted by time.
 * Returns the gaps lost (0 expected); *seen: the gaps accepted. */
static size_t lost_switches(const struct events *e, size_t *seen)
{
	int32_t last[64];
	unsigned char any[64] = {0};
	size_t i, lost = 0;
	*seen = 0;
	for (i = 0; i < e->nk; i++) {
		unsigned c = e->k[i].cpu;
		assert_true(c < 64);
		if (any[c] && last[c] != e->k[i].prev) {
			if (unrecorded(e, c, last[c]))
				++*seen;
			else {
				print_message("      cpu %u at %llu: switch from %d, but the last switch there was to %d\n",
					      c, (unsigned long long)e->k[i].ts, e->k[i].prev, last[c]);
				lost++;
			}
		}
		last[c] = e->k[i].next;
		any[c] = 1;
	}
	return lost;
}

/* The intervals in which the kernel says tid was on a CPU. A switch away
 * from tid with no switch to it since its last one comes after a gap
 * (lost_switches()): tid came back on that CPU after the CPU's last recorded
 * switch, which bounds the interval's start; 0 where there is none (tid ran
 * there before the kernel recorded). */
static size_t on_cpu(const struct events *e, int32_t tid, struct ivl *out, size_t max)
{
	size_t i, n = 0;
	int on = 0;
	uint64_t from = 0, last[64] = {0};
	for (i = 0; i < e->nk; i++) {
		unsigned c = e->k[i].cpu;
		assert_true(c < 64);
		if (e->k[i].prev == tid) {
			assert_true(n < max);
			out[n].from = on ? from : last[c];
			out[n].to = e->k[i].ts;
			n++;
			on = 0;
		}
		if (e->k[i].next == tid) {
			if (on)
				fail_msg("tid %d switched in twice (%llu, %llu) without a switch out", tid,
					 (unsigned long long)from, (unsigned long long)e->k[i].ts);
			on = 1;
			from = e->k[i].ts;
		}
		last[c] = e->k[i].ts;
	}
	if (on) {
		assert_true(n < max);
		out[n].from = from;
		out[n].to = UINT64_MAX;
		n++;
	}
	return n;
}

/* ---- the traced child ----------------------------------------------------- */

static struct ringbuf *child_rb;
static int ping[2], pong[2];

static void *thread_a(void *arg)
{
	uint32_t i;
	char c;
	(void)arg;
	for (i = 0; i < ROUNDS; i++) {
		if (trace_num(child_rb, 0, 0, i) != 1)
			_exit(20);
		if (write(ping[1], "a", 1) != 1 || read(pong[0], &c, 1) != 1)
			_exit(21);
	}
	return NULL;
}

static void *thread_b(void *arg)
{
	uint32_t i;
	char c;
	(void)arg;
	for (i = 0; i < ROUNDS; i++) {
		if (read(ping[0], &c, 1) != 1)
			_exit(22);
		if (trace_num(child_rb, 1, 1, i) != 1)
			_exit(23);
		if (write(pong[1], "b", 1) != 1)
			_exit(24);
	}
	return NULL;
}

/* Creates path (the TSC clock or the default one), says 'r' on fd, waits
 * for a byte on go, then pins itself to its first allowed CPU and runs A
 * and B. Never returns. */
static void traced_child(const char *path, int tsc, int fd, int go)
{
	static struct ringbuf_trace_registry reg = RINGBUF_TRACE_REGISTRY_INIT("rec");
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	cpu_set_t set;
	pthread_t a, b;
	char c;
	int cpu;
	if (ringbuf_trace_register_event(&reg, &ringbuf_event_num) < 0)
		_exit(10);
	cfg.ncpu = 2;
	cfg.size_per_cpu = 64 << 10;
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
	cfg.user_size = ringbuf_trace_user_size(&reg);
	cfg.clock = tsc ? RINGBUF_CLOCK_TSC : NULL;
	if (ringbuf_create_file(path, &cfg, &child_rb) < 0 || ringbuf_trace_store_registry(child_rb, &reg) < 0)
		_exit(11);
	if (write(fd, "r", 1) != 1 || read(go, &c, 1) != 1)
		_exit(30);
	if (sched_getaffinity(0, sizeof set, &set) != 0)
		_exit(31);
	for (cpu = 0; cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &set); cpu++)
		;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) != 0 || pipe(ping) != 0 || pipe(pong) != 0)
		_exit(32);
	/* A and B inherit the one CPU */
	if (pthread_create(&a, NULL, thread_a, NULL) != 0 || pthread_create(&b, NULL, thread_b, NULL) != 0)
		_exit(33);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	exit(0);
}

/* ---- the tests ------------------------------------------------------------ */

/* The CPU of a trace-cmd report line ("COMM-PID [CPU] TIME: ..."), or -1 */
static int report_cpu(const char *line)
{
	const char *b = strstr(line, " [");
	char *end;
	long c;
	if (!b)
		return -1;
	c = strtol(b + 2, &end, 10);
	return end != b + 2 && *end == ']' && c >= 0 && c < 64 ? (int)c : -1;
}

/* trace-cmd's own merge of the two files (its TSC2NSEC conversion for the
 * TSC clock): every num event of a thread comes after a sched_switch to it
 * and before the next one away from it, or, where the switch to it was not
 * recorded (lost_switches()), before a switch away from it that follows such
 * a gap. e: the kernel's events (unrecorded()). Returns the num events seen. */
static unsigned long long check_merged_report(const char *kfile, const char *ufile, const int32_t tid[2],
					      const struct events *e)
{
	char cmd[600], line[1024], bad[1200] = "", pend[2][300];
	FILE *p;
	int on[2] = {0, 0}, pending[2] = {0, 0};
	int32_t last[64];
	unsigned char any[64] = {0};
	unsigned long long users = 0, switches = 0;
	snprintf(cmd, sizeof cmd, "trace-cmd report -i %s -i %s 2>/dev/null", kfile, ufile);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof line, p)) {
		char *at = strstr(line, " sched_switch: "), *q, *b;
		unsigned w;
		if (at) {
			/* PREV_COMM:PREV_PID [prio] STATE ==> NEXT_COMM:NEXT_PID [prio] */
			long prev = -1, next = -1;
			int c = report_cpu(line), gap;
			at += 15;
			b = strstr(at, " [");
			q = strstr(at, "==> ");
			if (b && q && b < q) {
				*b = 0;
				prev = strrchr(at, ':') ? atol(strrchr(at, ':') + 1) : -1;
				b = strstr(q, " [");
				if (b)
					*b = 0;
				next = strrchr(q, ':') ? atol(strrchr(q, ':') + 1) : -1;
			} else if (!bad[0]) {
				snprintf(bad, sizeof bad, "a sched_switch line not as expected: %.200s", at);
			}
			/* tid back on the CPU after a task whose switches were not recorded */
			gap = c >= 0 && any[c] && last[c] != prev && unrecorded(e, (unsigned)c, last[c]);
			for (w = 0; w < 2; w++) {
				if (pending[w] && (next == tid[w] || (prev == tid[w] && !gap)) && !bad[0])
					snprintf(bad, sizeof bad, "%s", pend[w]);
				if (prev == tid[w] || next == tid[w])
					pending[w] = 0;
				if (prev == tid[w])
					on[w] = 0;
				if (next == tid[w])
					on[w] = 1;
			}
			if (c >= 0) {
				last[c] = (int32_t)next;
				any[c] = 1;
			}
			switches++;
		} else if ((at = strstr(line, " num: ")) != NULL) {
			long t;
			*at = 0;
			b = strstr(line, " [");
			if (b)
				*b = 0;
			t = strrchr(line, '-') ? atol(strrchr(line, '-') + 1) : -1;
			for (w = 0; w < 2 && tid[w] != t; w++)
				;
			if (w == 2 && !bad[0])
				snprintf(bad, sizeof bad, "an event of thread %ld, not of the two", t);
			else if (w < 2 && !on[w] && !pending[w]) {
				/* decided at the thread's next switch */
				pending[w] = 1;
				snprintf(pend[w], sizeof pend[w], "an event of thread %ld (%.200s) while it was switched out",
					 t, at + 6);
			}
			users++;
		}
	}
	pclose(p); /* read to the end first: a failure must not leave trace-cmd blocked on the pipe */
	for (int w = 0; w < 2; w++)
		if (pending[w] && !bad[0])
			snprintf(bad, sizeof bad, "%s (after its last switch)", pend[w]);
	if (bad[0])
		fail_msg("trace-cmd report -i %s -i %s: %s", kfile, ufile, bad);
	assert_true(switches > 0);
	return users;
}

static void one_timeline(int tsc)
{
	struct tstate before;
	struct rec_run run;
	struct tdat kt, ut;
	struct events ev;
	struct ivl *iv[2];
	size_t niv[2], i;
	char pidstr[24], c, inst[256];
	int fds[2], go[2], status;
	int32_t tid[2] = {0, 0};
	uint64_t missed = 0, kpages, first_u = UINT64_MAX, last_u = 0;
	long last_idx[2] = {-1, -1};
	size_t gaps;
	pthread_t th;
	pid_t pid;
	snapshot(&before);
	unlink(path_of("kernel.dat"));
	unlink(path_of("align.rb"));

	assert_int_equal(pipe(fds), 0);
	assert_int_equal(pipe(go), 0);
	pid = fork(); /* before the recorder's thread: the child makes threads */
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		close(go[1]);
		traced_child(path_of("align.rb"), tsc, fds[1], go[0]);
	}
	close(fds[1]);
	close(go[0]);
	assert_int_equal(read(fds[0], &c, 1), 1);
	assert_int_equal(c, 'r');
	close(fds[0]);

	snprintf(pidstr, sizeof pidstr, "%d", (int)pid);
	memset(&run, 0, sizeof run);
	atomic_init(&run.done, 0);
	run.argv[run.argc++] = (char *)"ringbuf-record";
	run.argv[run.argc++] = (char *)"-q";
	run.argv[run.argc++] = (char *)"-o";
	run.argv[run.argc++] = path_of("align.dat");
	run.argv[run.argc++] = (char *)"-p";
	run.argv[run.argc++] = pidstr;
	run.argv[run.argc++] = (char *)"-e";
	run.argv[run.argc++] = (char *)"sched:sched_switch";
	run.argv[run.argc++] = (char *)"-b";
	run.argv[run.argc++] = (char *)"8192"; /* ample: a starved recorder loses nothing */
	run.argv[run.argc++] = path_of("align.rb");
	assert_int_equal(pthread_create(&th, NULL, rec_recorder, &run), 0);
	/* the threads start once the kernel records their switches */
	while (!instance_of((long)getpid(), inst, sizeof inst)) {
		if (atomic_load(&run.done))
			rec_stopped_early(&run, pid);
		poll(NULL, 0, 5);
	}
	assert_int_equal(write(go[1], "g", 1), 1);
	close(go[1]);
	assert_int_equal(rec_child_end(pid, &status, &run), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("child: %s %d", WIFEXITED(status) ? "exit" : "signal",
			 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(run.rc, 0);
	assert_int_equal(ringbuf_record_last.events, 2 * ROUNDS);
	assert_true(ringbuf_record_last.kernel_events > 0);
	assert_int_equal(ringbuf_record_last.kernel_lost, 0);
	assert_int_equal(ringbuf_record_last.kernel_lost_unknown, 0);
	assert_int_equal(ringbuf_record_last.kernel_bad_pages, 0);
	same_state(&before); /* the instance is gone, nothing global changed */

	/* the two files, from their bytes */
	memset(&ev, 0, sizeof ev);
	load(&kt, path_of("kernel.dat")); /* beside the output */
	assert_true(kt.switch_id > 0);
	ev.t = &kt;
	kpages = walk(&kt, on_kernel, &ev, &missed);
	assert_int_equal(kpages, ringbuf_record_last.kernel_pages);
	assert_int_equal(missed, 0);
	load(&ut, path_of("align.dat"));
	ev.t = &ut;
	walk(&ut, on_user, &ev, &missed);
	assert_int_equal(ev.nu, 2 * ROUNDS);
	qsort(ev.k, ev.nk, sizeof ev.k[0], cmp_kev);
	assert_int_equal(lost_switches(&ev, &gaps), 0);
	for (i = 0; i < ev.nu; i++) {
		assert_true(ev.u[i].cpu < 2);
		if (!tid[ev.u[i].cpu])
			tid[ev.u[i].cpu] = ev.u[i].tid;
		assert_int_equal(ev.u[i].tid, tid[ev.u[i].cpu]); /* one thread per buffer CPU */
		if (ev.u[i].ts < first_u)
			first_u = ev.u[i].ts;
		if (ev.u[i].ts > last_u)
			last_u = ev.u[i].ts;
	}
	assert_true(tid[0] != tid[1]);
	/* the kernel's recording covers the user events */
	assert_true(ev.nk > 0);
	assert_true(ev.k[0].ts < first_u);
	assert_true(ev.k[ev.nk - 1].ts > last_u);

	for (i = 0; i < 2; i++) {
		iv[i] = calloc(ev.nk + 1, sizeof *iv[i]);
		assert_non_null(iv[i]);
		niv[i] = on_cpu(&ev, tid[i], iv[i], ev.nk + 1);
	}
	/* the user buffer's per-CPU pages hold each thread's events in order */
	for (i = 0; i < ev.nu; i++) {
		const struct uev *u = &ev.u[i];
		unsigned w = u->cpu;
		size_t j;
		long idx = -1;
		for (j = 0; j < niv[w]; j++)
			if (iv[w][j].from <= u->ts && u->ts <= iv[w][j].to) {
				idx = (long)j;
				break;
			}
		if (idx < 0) {
			size_t before_i = 0;
			while (before_i < niv[w] && iv[w][before_i].to < u->ts)
				before_i++;
			fail_msg("thread %d event %u at %llu ns: the kernel had it off the CPU (switched out at "
				 "%llu, next in at %llu)",
				 u->tid, u->seq, (unsigned long long)u->ts,
				 before_i ? (unsigned long long)iv[w][before_i - 1].to : 0ull,
				 before_i < niv[w] ? (unsigned long long)iv[w][before_i].from : 0ull);
		}
		if (iv[w][idx].from == 0)
			fail_msg("thread %d event %u: in an interval that began before the kernel recorded", u->tid,
				 u->seq);
		if (idx == last_idx[w])
			fail_msg("thread %d events %u and %u in one on-CPU interval [%llu, %llu]: the other "
				 "thread wrote between them on the same CPU", u->tid, u->seq - 1, u->seq,
				 (unsigned long long)iv[w][idx].from, (unsigned long long)iv[w][idx].to);
		last_idx[w] = idx;
	}
	print_message("      %zu user events of 2 threads, each inside its own on-CPU interval of the kernel's "
		      "(%zu and %zu intervals; %zu sched_switch, %llu kernel pages; %zu switches after a task "
		      "the kernel does not record)\n",
		      ev.nu, niv[0], niv[1], ev.nk, (unsigned long long)kpages, gaps);

	/* one command shows them interleaved, aligned */
	if (system("command -v trace-cmd >/dev/null 2>&1") == 0)
		assert_int_equal(check_merged_report(path_of("kernel.dat"), path_of("align.dat"), tid, &ev), 2 * ROUNDS);
	free(iv[0]);
	free(iv[1]);
	free(ev.k);
	free(ev.u);
	free(kt.p);
	free(ut.p);
	free_state(&before);
}

/* pagewalk.h reads this build's pages: the kernel's must have its long and
 * byte order (not so for a 32-bit build on a 64-bit kernel, or a
 * foreign-endian one under qemu-user: test-cross) */
#define NEED_KERNEL_PAGES_HERE()                                                                        \
	do {                                                                                            \
		char *hp = text_of(tpath("events/header_page"));                                       \
		long off = 0, size = rbrec_kfield(hp, "commit;", &off);                                 \
		free(hp);                                                                               \
		if (size != (long)sizeof(long) || rbrec_kernel_big_endian() != PW_BIG_ENDIAN) {         \
			print_message("      skipped: the kernel's pages (long %ld, %s-endian) are not "   \
				      "this build's (long %zu)\n", size,                                \
				      rbrec_kernel_big_endian() ? "big" : "little", sizeof(long));      \
			skip();                                                                         \
		}                                                                                       \
	} while (0)

static void user_events_fall_while_the_kernel_runs_their_thread(void **state)
{
	(void)state;
	NEED_TRACEFS();
	NEED_KERNEL_PAGES_HERE();
	one_timeline(0);
}

/* The TSC clock: the instance stamps with x86-tsc, KERNEL.dat gets the
 * buffer's own TSC2NSEC and OFFSET (trace-cmd's merge checked too). */
static void the_tsc_clock_is_matched_too(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	char *clocks;
	int tsc;
	(void)state;
	NEED_TRACEFS();
	NEED_KERNEL_PAGES_HERE();
	cfg.ncpu = 1;
	cfg.size_per_cpu = 4096;
	cfg.clock = RINGBUF_CLOCK_TSC;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	tsc = strcmp(ringbuf_clock_name(rb), "x86-tsc") == 0;
	ringbuf_destroy(rb);
	clocks = text_of(tpath("trace_clock"));
	if (!tsc || !strstr(clocks, "x86-tsc")) {
		print_message("      skipped: %s\n", tsc ? "the kernel has no x86-tsc trace clock" : "no TSC clock here");
		free(clocks);
		skip();
	}
	free(clocks);
	one_timeline(1);
}

/* A buffer made here with 10 events (clock_name NULL: the default clock). */
static struct ringbuf *ten_events(const char *path, const char *clock_name)
{
	static struct ringbuf_trace_registry reg = RINGBUF_TRACE_REGISTRY_INIT("rec");
	static int registered;
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	uint32_t i;
	if (!registered) {
		assert_true(ringbuf_trace_register_event(&reg, &ringbuf_event_num) >= 0);
		registered = 1;
	}
	cfg.ncpu = 2;
	cfg.size_per_cpu = 64 << 10;
	cfg.user_size = ringbuf_trace_user_size(&reg);
	cfg.clock_name = clock_name;
	assert_int_equal(ringbuf_create_file(path, &cfg, &rb), 0);
	assert_int_equal(ringbuf_trace_store_registry(rb, &reg), 0);
	for (i = 0; i < 10; i++)
		assert_int_equal(trace_num(rb, 0, 0, i), 1);
	return rb;
}

static int run_args(const char *first, ...)
{
	char *argv[24];
	int argc = 0;
	const char *a;
	va_list ap;
	argv[argc++] = (char *)"ringbuf-record";
	va_start(ap, first);
	for (a = first; a && argc < 23; a = va_arg(ap, const char *))
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	return ringbuf_record_main(argc, argv);
}

static void untouched(struct ringbuf *rb)
{
	struct ringbuf_stats st;
	assert_int_equal(ringbuf_stats(rb, &st), 0);
	assert_int_equal(st.entries, 10);
	assert_int_equal(st.pages_read, 0);
	assert_false(exists(path_of("err.dat")));
	assert_false(exists(path_of("kernel.dat")));
}

static void bad_input_and_no_permission_change_nothing(void **state)
{
	struct tstate before;
	struct ringbuf *rb, *rb_local;
	char pidstr[24];
	pid_t pid;
	int status;
	(void)state;
	NEED_TRACEFS();
	unlink(path_of("kernel.dat"));
	snapshot(&before);
	snprintf(pidstr, sizeof pidstr, "%d", (int)getpid());
	rb = ten_events(path_of("err.rb"), NULL);
	rb_local = ten_events(path_of("local.rb"), "local");

	/* an unknown event */
	assert_int_equal(run_args("-o", path_of("err.dat"), "-p", pidstr, "-e", "sched:sched_switch", "-e",
				  "nosuch:event", path_of("err.rb"), NULL),
			 RBREC_KERNEL);
	same_state(&before);
	untouched(rb);
	assert_int_equal(run_args("-o", path_of("err.dat"), "-p", pidstr, "-e", "sched:no_such_*", path_of("err.rb"),
				  NULL),
			 RBREC_KERNEL);
	same_state(&before);
	untouched(rb);
	/* a clock the kernel cannot match */
	assert_int_equal(run_args("-o", path_of("err.dat"), "-p", pidstr, "-e", "sched", path_of("local.rb"), NULL),
			 RBREC_KERNEL);
	same_state(&before);
	untouched(rb_local);
	/* tracefs missing */
	assert_int_equal(setenv("RINGBUF_RECORD_TRACEFS", path_of("no-tracefs"), 1), 0);
	assert_int_equal(run_args("-o", path_of("err.dat"), "-p", pidstr, "-e", "sched", path_of("err.rb"), NULL),
			 RBREC_KERNEL);
	assert_int_equal(unsetenv("RINGBUF_RECORD_TRACEFS"), 0);
	same_state(&before);
	untouched(rb);
	/* KERNEL.dat's directory missing: a file error, after nothing was made */
	assert_int_equal(run_args("-o", path_of("err.dat"), "-p", pidstr, "-e", "sched", "-K",
				  path_of("missing/kernel.dat"), path_of("err.rb"), NULL),
			 RBREC_FILE);
	same_state(&before);
	untouched(rb);
	/* usage errors */
	assert_int_equal(run_args("-N", "1234", "-e", "sched", path_of("err.rb"), NULL), RBREC_USAGE);
	assert_int_equal(run_args("-K", path_of("k.dat"), path_of("err.rb"), NULL), RBREC_USAGE);
	assert_int_equal(run_args("-b", "64", path_of("err.rb"), NULL), RBREC_USAGE);
	assert_int_equal(run_args("-C", "mono", "-e", "sched", path_of("err.rb"), NULL), RBREC_USAGE);
	assert_int_equal(run_args("-e", "sched", "-b", "0", path_of("err.rb"), NULL), RBREC_USAGE);
	assert_int_equal(run_args("-o", path_of("err.dat"), "-e", "sched", "-K", path_of("err.dat"),
				  path_of("err.rb"), NULL),
			 RBREC_USAGE);
	assert_int_equal(run_args("-d", path_of("d-clock"), "-e", "sched", "-C", "local", "--", "true", NULL),
			 RBREC_KERNEL);
	assert_false(exists(path_of("d-clock")));
	same_state(&before);
	untouched(rb);

	/* no permission: the same as nobody, -d with a command (nothing to open first) */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
		    setresuid(65534, 65534, 65534) != 0)
			_exit(99);
		_exit(run_args("-q", "-d", path_of("nobody"), "-o", path_of("nobody-out"), "-e", "sched", "--", "true",
			       NULL));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 99) {
		print_message("      (no permission: could not become nobody here, not checked)\n");
	} else {
		assert_int_equal(WEXITSTATUS(status), RBREC_KERNEL);
		assert_false(exists(path_of("nobody")));
		assert_false(exists(path_of("nobody-out")));
	}
	same_state(&before);

	ringbuf_destroy(rb);
	ringbuf_destroy(rb_local);
	free_state(&before);
}

/* ringbuf-record (the tool) -d DIR -e sched:sched_switch -- cat, its stdin
 * a pipe; returns its pid once its instance records; *in: the pipe. */
static pid_t start_tool(const char *tag, int *in, char *inst, size_t len)
{
	int p[2];
	pid_t pid;
	char dir[64], out[64];
	snprintf(dir, sizeof dir, "%s-rb", tag);
	snprintf(out, sizeof out, "%s-out", tag);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(p[0], 0);
		close(p[0]);
		close(p[1]);
		execl(RINGBUF_RECORD_BIN, "ringbuf-record", "-q", "-d", path_of(dir), "-o", path_of(out), "-e",
		      "sched:sched_switch", "--", "cat", (char *)NULL);
		_exit(127);
	}
	close(p[0]);
	*in = p[1];
	for (;;) {
		int status;
		if (instance_of((long)pid, inst, len))
			return pid;
		if (waitpid(pid, &status, WNOHANG) == pid)
			fail_msg("%s ended before its instance was made (status %d)", RINGBUF_RECORD_BIN, status);
		poll(NULL, 0, 5);
	}
}

static void signals_remove_the_instance_and_sigkill_is_cleaned_next_time(void **state)
{
	static const int sigs[2] = {SIGTERM, SIGINT};
	struct tstate before;
	char inst[256], rel[400], tag[32], outk[64];
	int in, status, k;
	pid_t pid;
	(void)state;
	NEED_TRACEFS();
	if (access(RINGBUF_RECORD_BIN, X_OK) != 0) {
		print_message("      skipped: %s: %s (built by the Makefile's rule for this test)\n", RINGBUF_RECORD_BIN,
			      strerror(errno));
		skip();
	}
	snapshot(&before);
	for (k = 0; k < 2; k++) {
		snprintf(tag, sizeof tag, "sig%d", sigs[k]);
		pid = start_tool(tag, &in, inst, sizeof inst);
		assert_int_equal(kill(pid, sigs[k]), 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		close(in); /* cat ends */
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fail_msg("after signal %d: %s %d", sigs[k], WIFEXITED(status) ? "exit" : "signal",
				 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		snprintf(outk, sizeof outk, "%s-out/kernel.dat", tag);
		assert_true(exists(path_of(outk)));
		same_state(&before);
	}
	/* SIGKILL leaves the instance; the next run removes it */
	pid = start_tool("kill", &in, inst, sizeof inst);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	close(in);
	snprintf(rel, sizeof rel, "instances/%s", inst);
	assert_true(exists(tpath(rel)));
	assert_int_equal(run_args("-q", "-d", path_of("next-rb"), "-o", path_of("next-out"), "-e",
				  "sched:sched_switch", "--", "true", NULL),
			 0);
	assert_false(exists(tpath(rel)));
	same_state(&before);
	free_state(&before);
}

/* The kernel's "events lost" flags come sign-extended on a 64-bit long
 * (found recording raw_syscalls: 5 to 11 pages a run were refused as
 * malformed, and their losses not counted, before rbrec_kpage_fix). */
static void kernel_lost_flags_sign_extended_are_read(void **state)
{
	unsigned char page[4096];
	uint64_t commit, events = 0, lost = 0, count = 7;
	uint32_t w = PW_WORD(2, 0), payload[2] = {1, 2};
	(void)state;
	if (sizeof(long) != 8)
		skip();
	memset(page, 0, sizeof page);
	memcpy(page + 16, &w, 4);
	memcpy(page + 20, payload, 8);
	/* commit 12 + RB_MISSED_EVENTS + RB_MISSED_STORED, added as ints */
	commit = (uint64_t)(12 + (int64_t)(int)(1u << 31) + (1 << 30));
	memcpy(page + 8, &commit, 8);
	memcpy(page + 16 + 12, &count, 8);
	assert_int_equal(ringbuf_tracedat_check_page(page, sizeof page, 0, 8, &events, &lost), RINGBUF_ECORRUPT);
	rbrec_kpage_fix(page, 8);
	assert_int_equal(ringbuf_tracedat_check_page(page, sizeof page, 0, 8, &events, &lost), 0);
	assert_int_equal(events, 1);
	assert_int_equal(lost, 7);
	/* anything else above bit 31 stays refused */
	commit = 12 | (1ull << 40);
	memcpy(page + 8, &commit, 8);
	rbrec_kpage_fix(page, 8);
	assert_int_equal(ringbuf_tracedat_check_page(page, sizeof page, 0, 8, &events, &lost), RINGBUF_ECORRUPT);
}

/* The intervals without tracefs: T's return after a task whose switches away
 * the kernel never records (H, and CPU 1's idle task) is bounded by the last
 * switch recorded there; a gap after a task recorded elsewhere is a loss. */
static void a_switch_the_kernel_did_not_record_bounds_the_interval(void **state)
{
	enum { T = 100, A = 200, H = 59 };
	struct kev k[] = {
		{10, A, T, 0}, {20, T, H, 0},  /* H: never a prev */
		{30, T, A, 0},                 /* T came back unrecorded: (20, 30] */
		{40, A, T, 0}, {50, T, 0, 0},  /* CPU 0's idle is recorded (60, 80) */
		{55, A, 0, 1}, {57, T, A, 1},  /* CPU 1's idle never is: T back after 55 */
		{60, 0, T, 0}, {70, T, A, 0}, {75, A, 0, 0}, {80, 0, A, 0},
	};
	struct events e;
	struct ivl iv[8];
	size_t seen;
	(void)state;
	memset(&e, 0, sizeof e);
	e.k = k;
	e.nk = sizeof k / sizeof k[0];
	assert_int_equal(lost_switches(&e, &seen), 0);
	assert_int_equal(seen, 2);
	assert_int_equal(on_cpu(&e, T, iv, 8), 5);
	assert_true(iv[0].from == 10 && iv[0].to == 20);
	assert_true(iv[1].from == 20 && iv[1].to == 30); /* not 0: not before the recording */
	assert_true(iv[2].from == 40 && iv[2].to == 50);
	assert_true(iv[3].from == 55 && iv[3].to == 57);
	assert_true(iv[4].from == 60 && iv[4].to == 70);
	/* the same gap after A, which the kernel records elsewhere: lost */
	k[1].next = A;
	assert_int_equal(lost_switches(&e, &seen), 1);
	assert_int_equal(seen, 1);
	/* CPU 0's idle task is recorded there: a gap after it is lost too */
	k[1].next = H;
	k[7].prev = A;
	assert_int_equal(lost_switches(&e, &seen), 1);
	assert_int_equal(seen, 2);
}

static int setup_all(void **state)
{
	(void)state;
	find_tracefs();
	if (tfs[0]) {
		/* instances an earlier killed run left: the recorder removes them,
		 * which the state comparisons would count as a change */
		struct rbrec_kernel k;
		memset(&k, 0, sizeof k);
		snprintf(k.tracefs, sizeof k.tracefs, "%s", tfs);
		rbrec_kclean_stale(&k);
	}
	return rec_make_tmpdir("/tmp/ringbuf-record-kernel-XXXXXX");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(user_events_fall_while_the_kernel_runs_their_thread),
		cmocka_unit_test(the_tsc_clock_is_matched_too),
		cmocka_unit_test(bad_input_and_no_permission_change_nothing),
		cmocka_unit_test(signals_remove_the_instance_and_sigkill_is_cleaned_next_time),
		cmocka_unit_test(kernel_lost_flags_sign_extended_are_read),
		cmocka_unit_test(a_switch_the_kernel_did_not_record_bounds_the_interval),
	};
	return cmocka_run_group_tests(tests, setup_all, rec_remove_tmpdir);
}
