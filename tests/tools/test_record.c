/* tools/ringbuf-record: a child process writes numbered events into a
 * file-backed buffer (producer/consumer mode: a full buffer drops new events
 * and counts them; overwrite mode: it overwrites the oldest and counts
 * overrun); the recorder (ringbuf_record_main in a thread of this
 * process) drains whole pages while the child runs and, once the child has
 * (a) exited or (b) been SIGKILLed in the middle of writing, repairs the
 * buffer and takes the rest. The trace.dat must hold every committed event
 * (the count the buffer's statistics give) exactly once: per CPU the
 * sequence numbers rise, and every gap is a loss the pages report.
 *
 * The child signals through a pipe after it has written at least N events
 * and the recorder has taken at least 4 pages live (the buffer's pages_read),
 * so both paths are exercised whatever the speed: nothing depends on timing.
 * trace-cmd, when installed, must show the same number of events.
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

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "tests/recordutil.h"

/* ---- reading the recorder's trace.dat (version 6 or 7, this host's order) -- */

struct tdat {
	unsigned char *p;
	size_t len, pos;
	uint32_t page_size;
	unsigned ncpu;
	uint64_t off[2], size[2];
	/* from the CPUSTAT options (ringbuf_tracedat_keep_stats), -1: none */
	long long st_entries[2], st_dropped[2], st_read[2];
};

/* A CPUSTAT option's text (len bytes at t->pos): "CPU: n" and the kernel's
 * per_cpu/cpuN/stats lines */
static void cpustat(struct tdat *t, size_t len)
{
	char text[512];
	unsigned cpu;
	long long v[8];
	assert_true(len < sizeof text && t->pos + len <= t->len);
	memcpy(text, t->p + t->pos, len);
	text[len] = 0;
	assert_int_equal(strlen(text) + 1, len); /* NUL-ended, nothing after */
	assert_int_equal(sscanf(text,
				"CPU: %u\nentries: %lld\noverrun: %lld\ncommit overrun: %lld\nbytes: %lld\n"
				"oldest event ts: %*u.%*u\nnow ts: %*u.%*u\ndropped events: %lld\nread events: %lld\n",
				&cpu, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]),
			 7);
	assert_true(cpu < 2);
	assert_int_equal(t->st_entries[cpu], -1); /* one per CPU */
	t->st_entries[cpu] = v[0];
	t->st_dropped[cpu] = v[4];
	t->st_read[cpu] = v[5];
}

static uint64_t rd(struct tdat *t, unsigned n)
{
	/* the recorder writes the file in this host's byte order (the header's
	 * endian byte says which; load() checks it): read n-byte host words */
	uint64_t v;
	uint32_t v32;
	uint16_t v16;
	assert_true(t->pos + n <= t->len);
	switch (n) {
	case 2:
		memcpy(&v16, t->p + t->pos, 2);
		v = v16;
		break;
	case 4:
		memcpy(&v32, t->p + t->pos, 4);
		v = v32;
		break;
	default:
		assert_int_equal(n, 8);
		memcpy(&v, t->p + t->pos, 8);
		break;
	}
	t->pos += n;
	return v;
}
static void skip_str(struct tdat *t)
{
	size_t n = strnlen((char *)t->p + t->pos, t->len - t->pos);
	assert_true(t->pos + n < t->len);
	t->pos += n + 1;
}

static void load(struct tdat *t, const char *path)
{
	FILE *f = fopen(path, "rb");
	long n;
	unsigned i, nsys, nev;
	int version;
	memset(t, 0, sizeof *t);
	for (i = 0; i < 2; i++)
		t->st_entries[i] = t->st_dropped[i] = t->st_read[i] = -1;
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	t->p = malloc((size_t)n);
	assert_non_null(t->p);
	assert_int_equal(fread(t->p, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	t->len = (size_t)n;
	assert_memory_equal(t->p, "\x17\x08\x44tracing", 10);
	version = t->p[10] - '0';
	t->pos = 12;
	assert_int_equal(t->p[t->pos], PW_BIG_ENDIAN); /* this host's order */
	assert_int_equal(t->p[t->pos + 1], sizeof(long));
	t->pos += 2;
	t->page_size = (uint32_t)rd(t, 4);
	if (version == 7) {
		/* the OPTIONS section: the BUFFER option has the CPUs */
		uint64_t opt;
		skip_str(t);
		skip_str(t);
		opt = rd(t, 8);
		t->pos = (size_t)opt;
		assert_int_equal(rd(t, 2), 0);
		rd(t, 2);
		rd(t, 4);
		rd(t, 8);
		for (;;) {
			unsigned id = (unsigned)rd(t, 2), len = (unsigned)rd(t, 4);
			size_t next = t->pos + len;
			if (id == 0)
				break;
			if (id == 3) {
				rd(t, 8);
				skip_str(t);
				skip_str(t);
				rd(t, 4);
				t->ncpu = (unsigned)rd(t, 4);
				assert_int_equal(t->ncpu, 2);
				for (i = 0; i < t->ncpu; i++) {
					assert_int_equal(rd(t, 4), i);
					t->off[i] = rd(t, 8);
					t->size[i] = rd(t, 8);
				}
			}
			if (id == 2)
				cpustat(t, len);
			t->pos = next;
		}
		return;
	}
	skip_str(t);                           /* "header_page" */
	t->pos += (size_t)rd(t, 8);
	skip_str(t);                           /* "header_event" */
	t->pos += (size_t)rd(t, 8);
	nev = (unsigned)rd(t, 4);              /* ftrace formats: kernel_stack */
	assert_int_equal(nev, 1);
	while (nev--)
		t->pos += (size_t)rd(t, 8);
	nsys = (unsigned)rd(t, 4);
	while (nsys--) {
		skip_str(t);
		nev = (unsigned)rd(t, 4);
		while (nev--)
			t->pos += (size_t)rd(t, 8);
	}
	t->pos += (size_t)rd(t, 4);            /* kallsyms */
	t->pos += (size_t)rd(t, 4);            /* printk */
	t->pos += (size_t)rd(t, 8);            /* cmdlines */
	t->ncpu = (unsigned)rd(t, 4);
	assert_int_equal(t->ncpu, 2);
	skip_str(t);                           /* "options  " */
	for (;;) {
		unsigned id = (unsigned)rd(t, 2);
		size_t len;
		if (id == 0)
			break;
		len = (size_t)rd(t, 4);
		if (id == 2)
			cpustat(t, len);
		t->pos += len;
	}
	skip_str(t);                           /* "flyrecord" */
	for (i = 0; i < t->ncpu; i++) {
		t->off[i] = rd(t, 8);
		t->size[i] = rd(t, 8);
	}
}

struct seqcheck {
	uint32_t next;    /* the sequence number expected */
	uint64_t events, gaps, lost, unknown;
	unsigned cpu;
	bool page_lost;   /* the page's first event follows a loss */
	uint64_t page_count;
};

static int on_record(const struct pw_record *r, void *ctx)
{
	struct seqcheck *c = ctx;
	uint32_t cpu, seq;
	if (r->kind != PW_DATA)
		return 0;
	assert_true(r->payload_len >= 16);
	assert_int_equal(*(const uint16_t *)r->payload, 1); /* the child registered num first: id 1 */
	memcpy(&cpu, r->payload + 8, 4);
	memcpy(&seq, r->payload + 12, 4);
	assert_int_equal(cpu, c->cpu);
	if (seq < c->next)
		fail_msg("cpu %u: seq %u after %u: an event twice or out of order", cpu, seq, c->next - 1);
	if (seq > c->next) {
		/* a gap: only where the page says events were lost */
		if (!c->page_lost)
			fail_msg("cpu %u: seq %u after %u: a gap the trace does not report", cpu, seq, c->next - 1);
		c->gaps += seq - c->next;
		if (c->page_count != UINT64_MAX)
			assert_int_equal(seq - c->next, c->page_count);
	}
	c->page_lost = false;
	c->next = seq + 1;
	c->events++;
	return 0;
}

static uint64_t cpu_events[2];
static uint32_t cpu_next[2];

/* Walk the trace's pages: returns the events; checks the sequences. */
static uint64_t check_trace(const char *path)
{
	struct tdat t;
	uint64_t total = 0;
	unsigned cpu;
	load(&t, path);
	for (cpu = 0; cpu < t.ncpu; cpu++) {
		struct seqcheck c;
		uint64_t i;
		memset(&c, 0, sizeof c);
		c.cpu = cpu;
		assert_int_equal(t.off[cpu] % t.page_size, 0);
		assert_int_equal(t.size[cpu] % t.page_size, 0);
		assert_true(t.off[cpu] + t.size[cpu] <= t.len);
		for (i = 0; i < t.size[cpu] / t.page_size; i++) {
			const unsigned char *pg = t.p + t.off[cpu] + i * t.page_size;
			struct pw_page info;
			const char *err = NULL;
			memset(&info, 0, sizeof info);
			/* a first pass for the page's loss flags, then the records */
			assert_int_equal(pw_walk_page(pg, t.page_size, false, NULL, NULL, &info, &err), 0);
			c.page_lost = info.missed;
			c.page_count = info.missed_stored ? info.missed_count : UINT64_MAX;
			if (info.missed_stored)
				c.lost += info.missed_count;
			else if (info.missed)
				c.unknown++;
			if (pw_walk_page(pg, t.page_size, false, on_record, &c, &info, &err) != 0)
				fail_msg("cpu %u page %llu: %s", cpu, (unsigned long long)i, err ? err : "?");
		}
		/* every gap is a reported loss (exactly, where the count is stored) */
		if (!c.unknown)
			assert_int_equal(c.gaps, c.lost);
		/* the buffer's counters are in the file: all it holds was read,
		 * and what the pages hold is what it counts read */
		assert_int_equal(t.st_entries[cpu], 0);
		assert_int_equal(t.st_read[cpu], c.events);
		cpu_events[cpu] = c.events;
		cpu_next[cpu] = c.next;
		total += c.events;
	}
	free(t.p);
	return total;
}

/* ---- the scenario ------------------------------------------------------------ */

/* Wait for one byte from the child (or its end) while the recorder runs. */
static int child_byte(int fd, struct rec_run *run, pid_t pid)
{
	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		char c;
		if (poll(&p, 1, 10) == 1)
			return read(fd, &c, 1) == 1 ? c : -1;
		if (atomic_load(&run->done))
			rec_stopped_early(run, pid);
	}
}

static void record(int end, int version, int mode)
{
	char pidstr[24], vstr[8], name[32], outname[32], c;
	struct rec_run run;
	struct ringbuf *rb;
	struct ringbuf_stats st;
	pthread_t th;
	int fds[2], status;
	pid_t pid;
	uint64_t events;

	snprintf(name, sizeof name, "buf-%d-%d-%d.rb", end, version, mode);
	snprintf(outname, sizeof outname, "rec-%d-%d-%d.dat", end, version, mode);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		rec_traced_child(path_of(name), fds[1], end, mode, 100000);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &c, 1), 1);
	assert_int_equal(c, 'r');

	snprintf(pidstr, sizeof pidstr, "%d", (int)pid);
	snprintf(vstr, sizeof vstr, "%d", version);
	memset(&run, 0, sizeof run);
	atomic_init(&run.done, 0);
	run.argv[run.argc++] = (char *)"ringbuf-record";
	run.argv[run.argc++] = (char *)"-q";
	run.argv[run.argc++] = (char *)"-o";
	run.argv[run.argc++] = strdup(path_of(outname));
	run.argv[run.argc++] = (char *)"-p";
	run.argv[run.argc++] = pidstr;
	run.argv[run.argc++] = (char *)"-V";
	run.argv[run.argc++] = vstr;
	run.argv[run.argc++] = strdup(path_of(name));
	assert_int_equal(pthread_create(&th, NULL, rec_recorder, &run), 0);

	if (end == END_KILL) {
		if (child_byte(fds[0], &run, pid) != 'k') {
			waitpid(pid, &status, 0);
			fail_msg("child ended early: %s %d", WIFEXITED(status) ? "exit" : "signal",
				 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		}
		assert_int_equal(kill(pid, SIGKILL), 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
			fail_msg("child: %s %d", WIFEXITED(status) ? "exit" : "signal",
				 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	} else {
		assert_int_equal(rec_child_end(pid, &status, &run), pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			fail_msg("child: %s %d", WIFEXITED(status) ? "exit" : "signal",
				 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
	}
	close(fds[0]);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(run.rc, 0);
	assert_int_equal(ringbuf_record_last.recovered, 1);
	assert_true(ringbuf_record_last.live_pages >= 4); /* drained while it ran */
	assert_int_equal(ringbuf_record_last.bad_pages, 0);

	/* every event the buffer counts as committed, once */
	events = check_trace(path_of(outname));
	assert_int_equal(events, ringbuf_record_last.events);
	assert_int_equal(ringbuf_open_file(path_of(name), 0, &rb), 0);
	assert_int_equal(ringbuf_stats(rb, &st), 0);
	assert_int_equal(st.entries, 0);
	/* the child tried at least 100000: each committed or dropped (counted) */
	assert_true(st.committed + st.dropped_events + st.commit_overrun >= 100000);
	if (mode == RINGBUF_MODE_OVERWRITE && st.committed - st.overrun != events) {
		unsigned k;
		for (k = 0; k < 2; k++) {
			struct ringbuf_stats s1;
			ringbuf_stats_cpu(rb, k, &s1);
			print_message("cpu %u: committed %llu overrun %llu read %llu entries %llu pages_lost %llu; trace %llu events, next seq %u\n",
				      k, (unsigned long long)s1.committed, (unsigned long long)s1.overrun,
				      (unsigned long long)s1.read_events, (unsigned long long)s1.entries,
				      (unsigned long long)s1.pages_lost, (unsigned long long)cpu_events[k], cpu_next[k]);
		}
	}
	/* every loss the buffer counts is in the recorder's count: reported
	 * by a page, or after the last event of its CPU */
	assert_int_equal(ringbuf_record_last.lost, st.dropped_events + st.commit_overrun + st.overrun);
	if (mode == RINGBUF_MODE_OVERWRITE) /* what was overwritten is not in the trace */
		assert_int_equal(st.committed - st.overrun, events);
	else
		assert_int_equal(st.committed, events);
	assert_true(st.committed > 0);
	ringbuf_destroy(rb);
	print_message("      end %s, v%d, %s: %llu events (%llu pages live, %llu recovered), %llu dropped, "
		      "%llu overwritten\n", end == END_KILL ? "SIGKILL" : "exit", version,
		      mode == RINGBUF_MODE_OVERWRITE ? "overwrite" : "producer/consumer",
		      (unsigned long long)events, (unsigned long long)ringbuf_record_last.live_pages,
		      (unsigned long long)ringbuf_record_last.recovered_pages,
		      (unsigned long long)st.dropped_events, (unsigned long long)st.overrun);

	if (system("command -v trace-cmd >/dev/null 2>&1") == 0) {
		char cmd[256];
		FILE *p;
		unsigned long long lines = 0;
		snprintf(cmd, sizeof cmd, "trace-cmd report %s 2>&1 | grep -c ' cpu=[01] seq='", path_of(outname));
		p = popen(cmd, "r");
		assert_non_null(p);
		assert_int_equal(fscanf(p, "%llu", &lines), 1);
		pclose(p);
		assert_int_equal(lines, events);
	}
	free(run.argv[3]);
	free(run.argv[run.argc - 1]);
}

static void exit_leaves_every_committed_event_in_the_trace(void **state)
{
	(void)state;
	record(END_EXIT, 6, RINGBUF_MODE_PRODUCER_CONSUMER);
	record(END_EXIT, 7, RINGBUF_MODE_PRODUCER_CONSUMER);
}

static void sigkill_leaves_every_committed_event_in_the_trace(void **state)
{
	(void)state;
	record(END_KILL, 6, RINGBUF_MODE_PRODUCER_CONSUMER);
	record(END_KILL, 7, RINGBUF_MODE_PRODUCER_CONSUMER);
}

/* Overwrite mode, recorded live from another process, then exit or SIGKILL:
 * committed - overrun is the events in the trace, and every gap is a
 * reported loss. Once per run (RINGBUF_TEST_RECORD_OVERWRITE=N: N times).
 * History: about one run in 250 stopped the recorder with RINGBUF_ECORRUPT
 * (ringbuf_open_file's validation walking the ring while the child moved
 * tail and head; fixed: V1-V3, tests/files/test_validate_live.c). Once in about
 * 3,400 recordings after a SIGKILL, committed - overrun differed by one
 * from the events in the trace. Two kill windows in the accounting were
 * found and closed since (ringbuf.h, EXACT ACCOUNTING AFTER A KILL in
 * >>design; tests/files/test_crash_accounting.c kills at every writer step): a
 * kill between a head push's claim and its add to overrun (the page's
 * events counted nowhere: a gap the trace would not report), and one
 * between clearing a slot and counting the event committed (one event in
 * the trace not counted committed). 400 runs here (800 recordings, 400
 * killed) passed after the fix; neither window gives exactly one event
 * more counted than recorded, so that one report is not explained. */
static void overwrite_mode_recording_keeps_the_accounting(void **state)
{
	const char *n = getenv("RINGBUF_TEST_RECORD_OVERWRITE");
	int k, runs = n ? atoi(n) : 1;
	(void)state;
	for (k = 0; k < runs; k++) {
		record(END_EXIT, 6, RINGBUF_MODE_OVERWRITE);
		record(END_KILL, 7, RINGBUF_MODE_OVERWRITE);
	}
}

/* A writer that drops until it ends (a full producer/consumer buffer, or a
 * file system with no room for a new page: test_shm) leaves its last losses
 * in the buffer's counters only: a page reports a loss before its first
 * event, and no event follows these. The recorder counts them (lost,
 * lost_after). Before, it said 0 lost: CPython traced by malloc_trace.so on
 * a full 3 MiB tmpfs, 1.5 M events dropped and counted by the buffer, and a
 * summary of "0 lost". */
static void drops_after_the_last_event_are_counted(void **state)
{
	char *argv[6];
	struct ringbuf *rb;
	struct ringbuf_stats st;
	int status;
	pid_t pid;
	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		uint32_t i;
		rb = rec_child_create(path_of("trail.rb"), RINGBUF_MODE_PRODUCER_CONSUMER, 64 << 10);
		for (i = 0; i < 20000; i++) /* 16 pages of 64 KiB hold about 4,000 */
			if (trace_num(rb, 0, 0, i) != 1 && ringbuf_stats(rb, &st) == 0 && st.dropped_events == 0)
				_exit(20);
		exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	argv[0] = (char *)"ringbuf-record";
	argv[1] = (char *)"-q";
	argv[2] = (char *)"-o";
	argv[3] = strdup(path_of("trail.dat"));
	argv[4] = strdup(path_of("trail.rb"));
	argv[5] = NULL;
	assert_int_equal(ringbuf_record_main(5, argv), 0);
	assert_int_equal(ringbuf_open_file(argv[4], 0, &rb), 0);
	assert_int_equal(ringbuf_stats(rb, &st), 0);
	ringbuf_destroy(rb);
	print_message("      %llu events recorded, %llu dropped after them: recorder's lost %llu (%llu after)\n",
		      (unsigned long long)ringbuf_record_last.events, (unsigned long long)st.dropped_events,
		      (unsigned long long)ringbuf_record_last.lost, (unsigned long long)ringbuf_record_last.lost_after);
	assert_true(st.dropped_events > 10000);
	assert_int_equal(ringbuf_record_last.events + st.dropped_events, 20000);
	assert_int_equal(ringbuf_record_last.lost, st.dropped_events);
	assert_int_equal(ringbuf_record_last.lost_after, st.dropped_events);
	assert_int_equal(check_trace(argv[3]), ringbuf_record_last.events);
	/* and so does the file: its CPUSTAT options (trace-cmd report --stat) */
	{
		struct tdat t;
		load(&t, argv[3]);
		assert_int_equal(t.st_dropped[0] + t.st_dropped[1], st.dropped_events);
		free(t.p);
	}
	free(argv[3]);
	free(argv[4]);
}

static void bad_arguments_and_files_are_refused(void **state)
{
	char *a1[] = {(char *)"ringbuf-record", NULL};
	char *a2[] = {(char *)"ringbuf-record", (char *)"-V", (char *)"5", (char *)"x.rb", NULL};
	char *a3[] = {(char *)"ringbuf-record", (char *)"-p", (char *)"abc", (char *)"x.rb", NULL};
	char *a4[] = {(char *)"ringbuf-record", (char *)"-q", path_of("missing.rb"), NULL};
	char *a5[] = {(char *)"ringbuf-record", (char *)"-q", path_of("junk.rb"), NULL};
	FILE *f = fopen(path_of("junk.rb"), "w");
	(void)state;
	assert_non_null(f);
	fputs("not a buffer", f);
	fclose(f);
	assert_int_equal(ringbuf_record_main(1, a1), RBREC_USAGE);
	assert_int_equal(ringbuf_record_main(4, a2), RBREC_USAGE);
	assert_int_equal(ringbuf_record_main(4, a3), RBREC_USAGE);
	assert_int_equal(ringbuf_record_main(3, a4), RBREC_FILE);
	assert_int_equal(ringbuf_record_main(3, a5), RBREC_FILE);
}

static int setup_all(void **state)
{
	(void)state;
	return rec_make_tmpdir("/tmp/ringbuf-record-XXXXXX");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(exit_leaves_every_committed_event_in_the_trace),
		cmocka_unit_test(sigkill_leaves_every_committed_event_in_the_trace),
		cmocka_unit_test(overwrite_mode_recording_keeps_the_accounting),
		cmocka_unit_test(drops_after_the_last_event_are_counted),
		cmocka_unit_test(bad_arguments_and_files_are_refused),
	};
	return cmocka_run_group_tests(tests, setup_all, rec_remove_tmpdir);
}
