/* tools/ringbuf-read: the flight-recorder reader, run as a real process.
 *
 * A child process traces typed events from three threads and a timer-signal
 * handler into a file-backed buffer (registry stored in the user area) and is
 * killed with SIGKILL; the tool (tools/ringbuf-read.c, its main compiled in as
 * ringbuf_read_main and run in a fork()ed child with stdout/stderr in files)
 * must print every event whose emitter returned 1 before the kill, exactly once
 * and with the values written, and write a trace.dat that the real
 * `trace-cmd report` shows with the same events. Also: reading live while the
 * writer runs; foreign, truncated, user-area-corrupted and registry-less files
 * (exit 2, clear message); usage errors (exit 1); 500 random byte flips in the
 * user area never crash the tool; the registry parser on mutated areas (checksum
 * off) never crashes and its loaded formats print exactly like the compiled ones.
 * RBREAD_KEEP=1 keeps the temporary directory (/tmp/rbread-*) for a look.
 */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_READ_TOOL_NO_MAIN
#include "internal.h" /* the private names the tool and the test use (IMPL: shared) */
#include "tools/ringbuf-read.c"
#define RINGBUF_TRACE_DEFINE_EVENTS
#include "ringbuf_trace.h"
#undef RINGBUF_TRACE_DEFINE_EVENTS

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "tests/testutil.h"

RINGBUF_TRACE_EVENT(work,
	RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, thread),
		       RINGBUF_FIELD(uint32_t, seq),
		       RINGBUF_FIELD(int16_t, small),
		       RINGBUF_FIELD(uint64_t, value),
		       RINGBUF_CHARS(msg, 12),
		       RINGBUF_STRING(label)),
	RINGBUF_PRINT("thread=%u seq=%u small=%hd value=0x%llx msg=%s label=%s", REC->thread, REC->seq,
		      REC->small, (unsigned long long)REC->value, REC->msg, __get_str(label)));
RINGBUF_TRACE_EVENT(tick,
	RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, seq), RINGBUF_ARRAY(uint16_t, hist, 3),
		       RINGBUF_FIELD(int8_t, tiny), RINGBUF_FIELD(int64_t, big), RINGBUF_FIELD(uint8_t, letter)),
	RINGBUF_PRINT("seq=%u hist=%u,%u,%u tiny=%hhd big=%lld [%5x|%-4d|%08llx|%c]%%", REC->seq,
		      REC->hist[0], REC->hist[1], REC->hist[2], REC->tiny, (long long)REC->big, REC->seq,
		      REC->tiny, (unsigned long long)REC->big, REC->letter));

static struct ringbuf_trace_registry reg = RINGBUF_TRACE_REGISTRY_INIT("flight");
static char tmpdir[64];

#define NT 3            /* writer threads */
#define MAXSEQ 20000    /* events per thread */
#define MAXH 100000     /* handler events */
#define NSTREAM (NT + 1)

/* Shared with the writer child: done[s][seq] = 1 once the emitter returned 1. */
struct progress {
	volatile uint8_t done[NSTREAM][MAXH];
	volatile uint32_t started;
	volatile uint32_t finished;
};
static struct progress *prog;

static const char *path_of(const char *name)
{
	static char buf[8][256];
	static int k;
	k = (k + 1) % 8;
	snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
	return buf[k];
}

static int16_t small_of(uint32_t seq) { return (int16_t)-(int)(seq % 300); }
static uint64_t value_of(uint32_t t, uint32_t seq) { return (uint64_t)seq * 0x100000001ull + t; }

static void register_events(void)
{
	static int done;
	if (done)
		return;
	assert_int_equal(ringbuf_trace_register_event(&reg, &ringbuf_event_work), 1);
	assert_int_equal(ringbuf_trace_register_event_id(&reg, &ringbuf_event_tick, 300), 300);
	done = 1;
}

/* ---- the writer child ------------------------------------------------------ */

static struct ringbuf *wrb;
static volatile uint32_t spin_per_event;
static _Atomic uint32_t hseq;

static void on_alarm(int sig)
{
	uint32_t s = atomic_fetch_add(&hseq, 1);
	uint16_t hist[3] = {(uint16_t)s, (uint16_t)(s * 3), 7};
	int e = errno;
	(void)sig;
	ringbuf_trace_signal_enter();
	if (s < MAXH &&
	    trace_tick(wrb, RINGBUF_CPU_THREAD, s, hist, (int8_t)-(int)(s % 100), -(int64_t)s * 1000003,
		       (uint8_t)('a' + s % 26)) == 1)
		prog->done[NT][s] = 1;
	ringbuf_trace_signal_exit();
	errno = e;
}

static void *writer(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg, seq;
	char name[16], msg[16], label[40];
	snprintf(name, sizeof name, "worker-%u", t);
	prctl(PR_SET_NAME, (unsigned long)name, 0ul, 0ul, 0ul);
	/* a timer signal may have hit this thread before the rename and recorded
	 * the inherited name: record the new one (published to the file again) */
	ringbuf_trace_thread_name(NULL);
	__atomic_fetch_add(&prog->started, 1, __ATOMIC_SEQ_CST);
	for (seq = 0; seq < MAXSEQ; seq++) {
		volatile uint32_t k;
		snprintf(msg, sizeof msg, "m%u", seq);
		snprintf(label, sizeof label, "L%u-%.*s", seq, (int)(seq % 17), "abcdefghijklmnopq");
		if (trace_work(wrb, RINGBUF_CPU_THREAD, t, seq, small_of(seq), value_of(t, seq), msg, label) == 1)
			prog->done[t][seq] = 1;
		for (k = 0; k < spin_per_event; k++)
			;
	}
	__atomic_fetch_add(&prog->finished, 1, __ATOMIC_SEQ_CST);
	for (;;)
		pause();
	return NULL;
}

/* Runs in the child: never returns. */
static void writer_main(const char *file, uint32_t spin, unsigned timer_us)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct sigaction sa;
	struct itimerval it;
	pthread_t th[NT];
	unsigned i;
	ringbuf_trace_thread_reset();
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0ul, 0ul, 0ul); /* never outlive a failed test */
	prctl(PR_SET_NAME, (unsigned long)"flight-main", 0ul, 0ul, 0ul);
	spin_per_event = spin;
	cfg.ncpu = NT + 1;
	cfg.size_per_cpu = (size_t)2 << 20;
	cfg.user_size = ringbuf_trace_user_size(&reg);
	if (ringbuf_create_file(file, &cfg, &wrb) < 0 || ringbuf_trace_store_registry(wrb, &reg) < 0)
		_exit(99);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	for (i = 0; i < NT; i++)
		pthread_create(&th[i], NULL, writer, (void *)(uintptr_t)i);
	memset(&it, 0, sizeof it);
	it.it_interval.tv_usec = (suseconds_t)timer_us;
	it.it_value.tv_usec = (suseconds_t)timer_us;
	setitimer(ITIMER_REAL, &it, NULL);
	for (;;)
		pause();
}

static pid_t start_writer(const char *file, uint32_t spin, unsigned timer_us)
{
	pid_t pid;
	memset((void *)prog, 0, sizeof *prog);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		writer_main(file, spin, timer_us);
	while (prog->started < NT)
		usleep(1000);
	return pid;
}

/* Until the writer has committed n events (counted: however loaded the
 * machine, the checks that follow have something to find). */
static void wait_for_committed(unsigned n)
{
	for (;;) {
		unsigned got = 0;
		for (unsigned st = 0; st < NSTREAM; st++)
			for (unsigned q = 0; q < MAXH && got < n; q++)
				got += prog->done[st][q] != 0;
		if (got >= n)
			return;
		usleep(1000);
	}
}

static void kill_writer(pid_t pid)
{
	int st;
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

/* ---- running the tool -------------------------------------------------------- */

static char *slurp(const char *file)
{
	FILE *f = fopen(file, "rb");
	char *buf;
	long n;
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = 0;
	fclose(f);
	return buf;
}

/* Run the tool in a child process with these arguments; its stdout and stderr
 * go to files, read back into *out / *err (may be NULL). Returns the exit
 * status, or 128 + signal when it was killed (a crash).
 * The child executes this test again as `test_read_tool --tool ARGS`, which
 * runs ringbuf_read_main(ARGS) in a fresh process: LeakSanitizer's check at
 * the tool's exit then scans only the tool's own heap, not everything this
 * test has allocated and freed before the fork (a forked child's check took
 * 0.2 s under ASan, 500 children in the byte-flip test 109 s; executed, a
 * small fraction). Under qemu-user (RINGBUF_TEST_QEMU), which cannot execute
 * a guest binary from inside the guest, the forked child calls the tool
 * itself as before. */
static int run_tool(char **out, char **err, ...)
{
	char *argv[16];
	int argc = 0, st;
	va_list ap;
	pid_t pid;
	char o[128], e[128];
	snprintf(o, sizeof o, "%s/tool.out", tmpdir);
	snprintf(e, sizeof e, "%s/tool.err", tmpdir);
	argv[argc++] = "ringbuf-read";
	va_start(ap, err);
	while (argc < 15 && (argv[argc] = va_arg(ap, char *)) != NULL)
		argc++;
	va_end(ap);
	argv[argc] = NULL;
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fo = open(o, O_WRONLY | O_CREAT | O_TRUNC, 0644), fe = open(e, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fo < 0 || fe < 0)
			_exit(98);
		dup2(fo, 1);
		dup2(fe, 2);
		if (!getenv("RINGBUF_TEST_QEMU")) {
			char *xargv[18];
			int i;
			xargv[0] = (char *)"test_read_tool";
			xargv[1] = (char *)"--tool";
			for (i = 0; i <= argc; i++)
				xargv[2 + i] = argv[i];
			execv("/proc/self/exe", xargv);
			_exit(97); /* not executed: the parent sees 97, not the tool's status */
		}
		st = ringbuf_read_main(argc, argv);
		fflush(NULL);
		exit(st); /* not _exit: LeakSanitizer checks the tool too */
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (out)
		*out = slurp(o);
	if (err)
		*err = slurp(e);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* ---- checking what the tool printed ------------------------------------------ */

struct seen {
	uint16_t n[NSTREAM][MAXH];
	unsigned bad;     /* lines whose values do not match their seq */
	unsigned events;
	unsigned others;  /* the tool's lines that are neither (printed: a lead when one is missing) */
};

/* A "work: thread=.. seq=.." or "tick: seq=.." event line (text or trace-cmd). */
static void bad_line(struct seen *s, const char *line)
{
	if (s->bad++ < 3)
		print_message("unexpected line: %s\n", line);
}

static void parse_event(struct seen *s, const char *line, bool check_comm)
{
	const char *w = strstr(line, " work:"), *t = strstr(line, " tick:");
	unsigned th, seq, h0, h1, h2;
	short small;
	unsigned long long value, big8;
	char msg[32], label[64], c;
	int tiny, tiny2;
	unsigned seq2;
	long long big;
	if (w) {
		w = strstr(w, "thread=");
		if (!w || sscanf(w, "thread=%u seq=%u small=%hd value=0x%llx msg=%31s label=%63s", &th, &seq, &small,
				 &value, msg, label) != 6 || th >= NT || seq >= MAXSEQ) {
			bad_line(s, line);
			return;
		}
		{
			char em[16], el[40], comm[32];
			snprintf(em, sizeof em, "m%u", seq);
			snprintf(el, sizeof el, "L%u-%.*s", seq, (int)(seq % 17), "abcdefghijklmnopq");
			snprintf(comm, sizeof comm, "worker-%u-", th);
			if (small != small_of(seq) || value != value_of(th, seq) || strcmp(msg, em) ||
			    strcmp(label, el) || (check_comm && !strstr(line, comm)))
				bad_line(s, line);
		}
		s->n[th][seq]++;
		s->events++;
	} else if (t) {
		t = strstr(t, "seq=");
		if (!t || sscanf(t, "seq=%u hist=%u,%u,%u tiny=%d big=%lld", &seq, &h0, &h1, &h2, &tiny, &big) != 6 ||
		    seq >= MAXH) {
			bad_line(s, line);
			return;
		}
		if (h0 != (uint16_t)seq || h1 != (uint16_t)(seq * 3) || h2 != 7 || tiny != -(int)(seq % 100) ||
		    big != -(long long)seq * 1000003)
			bad_line(s, line);
		/* the part only the library's interpreter prints (trace-cmd has its own) */
		if (check_comm) {
			const char *b = strchr(t, '[');
			if (!b || sscanf(b, "[%x |%d |%llx |%c]", &seq2, &tiny2, &big8, &c) != 4 ||
			    (unsigned)seq2 != seq || tiny2 != tiny || big8 != (unsigned long long)big ||
			    c != (char)(seq % 26 + 'a') || !strstr(b, "]%"))
				bad_line(s, line);
		}
		s->n[NT][seq]++;
		s->events++;
	} else if (check_comm && s->others++ < 3) {
		print_message("a line neither work nor tick: %s\n", line);
	}
}

static void parse_all(struct seen *s, char *text, bool check_comm)
{
	char *save = NULL, *line;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		parse_event(s, line, check_comm);
}

/* Every event whose emitter returned 1 was printed exactly once; events
 * printed without that mark can only be those in flight at the kill (at most
 * one per thread plus the handler's few). */
static void check_against_progress(const struct seen *s, unsigned *committed)
{
	unsigned st, q, extra = 0, dup = 0, missing = 0;
	*committed = 0;
	for (st = 0; st < NSTREAM; st++)
		for (q = 0; q < (st < NT ? MAXSEQ : MAXH); q++) {
			if (prog->done[st][q]) {
				(*committed)++;
				if (s->n[st][q] == 0 && missing++ < 5)
					print_message("missing stream %u seq %u\n", st, q);
			} else if (s->n[st][q]) {
				extra++;
			}
			if (s->n[st][q] > 1)
				dup++;
		}
	assert_int_equal(missing, 0);
	assert_int_equal(dup, 0);
	assert_int_equal(s->bad, 0);
	assert_true(extra <= NT + 2);
}

static bool have_trace_cmd(void)
{
	static int have = -1;
	if (have < 0)
		have = system("command -v trace-cmd >/dev/null 2>&1") == 0;
	return have;
}

static char *run_cmd(const char *fmt, ...)
{
	char cmd[512], *buf = NULL;
	size_t len = 0, cap = 0, n;
	char tmp[4096];
	va_list ap;
	FILE *p;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	p = popen(cmd, "r");
	assert_non_null(p);
	while ((n = fread(tmp, 1, sizeof tmp, p)) > 0) {
		if (len + n + 1 > cap) {
			cap = (len + n + 1) * 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		memcpy(buf + len, tmp, n);
		len += n;
	}
	pclose(p);
	if (!buf)
		buf = calloc(1, 1);
	else
		buf[len] = 0;
	return buf;
}

/* ---- tests ------------------------------------------------------------------- */

/* SIGKILLed writer: text has every committed event exactly once with its
 * values, and trace-cmd reads the trace.dat with the same set of events. */
static void test_killed_writer_text_and_tracedat_hold_every_committed_event(void **state)
{
	unsigned round;
	(void)state;
	srand(12345);
	for (round = 0; round < 4; round++) {
		const char *file = path_of("crash.rb");
		struct seen *s = calloc(1, sizeof *s), *d;
		char *out, *err;
		unsigned committed;
		pid_t pid = start_writer(file, 2000, 200);
		wait_for_committed(1);
		usleep((useconds_t)(5000 + rand() % 60000));
		kill_writer(pid);
		assert_int_equal(run_tool(&out, &err, "--text", file, NULL), 0);
		assert_non_null(strstr(err, "(recovered,"));
		assert_non_null(strstr(err, "committed "));
		assert_non_null(strstr(err, "(gone)"));
		parse_all(s, out, true);
		check_against_progress(s, &committed);
		assert_true(committed > 0);
		assert_int_equal(strstr(out, "[LOST") == NULL, 1); /* 2 MiB per CPU: nothing overwritten */
		print_message("round %u: %u committed, %u printed, %u finished threads\n", round, committed,
			      s->events, prog->finished);
		free(out);
		free(err);

		/* the same file again (recovery worked on a private copy), as trace.dat */
		assert_int_equal(run_tool(NULL, &err, "--tracedat", path_of("crash.dat"), file, NULL), 0);
		free(err);
		if (!have_trace_cmd()) {
			free(s);
			continue;
		}
		d = calloc(1, sizeof *d);
		out = run_cmd("trace-cmd report %s 2>/dev/null", path_of("crash.dat"));
		/* the comms came from the user area: every thread with an event
		 * in the trace shows its name (a thread the kill came before may
		 * have none under load) */
		for (unsigned t = 0; t < NT; t++) {
			char comm[32];
			bool any = false;
			for (unsigned q = 0; q < MAXSEQ; q++)
				any |= s->n[t][q] != 0;
			snprintf(comm, sizeof comm, "worker-%u-", t);
			if (any && !strstr(out, comm))
				fail_msg("trace-cmd report: no %s line, though thread %u has events", comm, t);
		}
		parse_all(d, out, false);
		assert_int_equal(d->bad, 0);
		assert_int_equal(d->events, s->events);
		assert_memory_equal(d->n, s->n, sizeof s->n);
		free(out);
		free(d);
		free(s);
	}
	if (!have_trace_cmd()) {
		if (getenv("CI") && strcmp(getenv("CI"), "true") == 0)
			fail_msg("trace-cmd is not installed (required under CI=true)");
		print_message("trace-cmd not installed: trace.dat not checked\n");
	}
}

/* Reading while the writer runs: the default mode is live, the file is not
 * changed, and every event committed before the tool started is printed. */
static void test_live_read_while_writer_runs(void **state)
{
	const char *file = path_of("live.rb");
	struct seen *s = calloc(1, sizeof *s);
	uint8_t *before = malloc(sizeof prog->done);
	char *out, *err;
	unsigned st, q, expected = 0, missing = 0;
	struct stat a, b;
	pid_t pid;
	(void)state;
	if (getenv("RINGBUF_TEST_QEMU")) {
		/* qemu-user answers /proc/self/stat itself: the writer's start time
		 * it records never matches /proc/<pid>/stat, so the tool takes the
		 * writer for a recycled pid (gone) */
		print_message("under qemu-user (RINGBUF_TEST_QEMU): live read not checked\n");
		free(s);
		free(before);
		skip();
	}
	pid = start_writer(file, 200000, 1000); /* slow: still writing during the read */
	wait_for_committed(1);
	assert_int_equal(stat(file, &a), 0);
	memcpy(before, (const void *)prog->done, sizeof prog->done);
	assert_int_equal(run_tool(&out, &err, file, NULL), 0);
	assert_int_equal(prog->finished, 0); /* it really was running */
	if (!strstr(err, "(live,"))
		fail_msg("not live: %s", err);
	assert_non_null(strstr(err, "(running)"));
	/* live: a thread whose first events were committed after the tool had
	 * loaded the thread names prints as <...>; names are checked on the
	 * recovered files above */
	parse_all(s, out, false);
	assert_int_equal(s->bad, 0);
	for (st = 0; st < NSTREAM; st++)
		for (q = 0; q < MAXH; q++) {
			if (before[st * MAXH + q]) {
				expected++;
				missing += s->n[st][q] == 0;
			}
			assert_true(s->n[st][q] <= 1);
		}
	print_message("live: %u committed before the read, %u printed\n", expected, s->events);
	assert_true(expected > 0);
	assert_int_equal(missing, 0);
	free(out);
	free(err);
	/* --recover on a running writer warns but works */
	assert_int_equal(run_tool(&out, &err, "--recover", "--max", "5", file, NULL), 0);
	assert_non_null(strstr(err, "still runs"));
	free(out);
	free(err);
	kill_writer(pid);
	assert_int_equal(stat(file, &b), 0);
	assert_int_equal(a.st_size, b.st_size);
	/* dead now: the default is recovery */
	assert_int_equal(run_tool(&out, &err, "--max", "10", "--cpu", "0", file, NULL), 0);
	assert_non_null(strstr(err, "(recovered,"));
	free(out);
	free(err);
	free(before);
	free(s);
}

/* A small file with a few events and the registry, written in-process. */
static void make_small(const char *file, size_t user_size, bool store)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	uint16_t hist[3] = {1, 2, 3};
	uint32_t i;
	cfg.ncpu = 2;
	cfg.size_per_cpu = 16384;
	cfg.user_size = user_size;
	assert_int_equal(ringbuf_create_file(file, &cfg, &rb), 0);
	if (store)
		assert_int_equal(ringbuf_trace_store_registry(rb, &reg), 0);
	for (i = 0; i < 20; i++) {
		assert_int_equal(trace_work(rb, i % 2, 0, i, small_of(i), value_of(0, i), "m", "l"), 1);
		assert_int_equal(trace_tick(rb, 1, i, hist, -1, -5, (uint8_t)('a' + i % 26)), 1);
	}
	ringbuf_destroy(rb);
}

static size_t user_area_offset(const char *file, size_t *size)
{
	struct ringbuf *rb;
	size_t off;
	assert_int_equal(ringbuf_open_file(file, 0, &rb), 0);
	off = (size_t)((char *)ringbuf_user_area(rb, size) - (char *)rb);
	ringbuf_destroy(rb);
	return off;
}

static void copy_file(const char *from, const char *to, long cut)
{
	char *cmd;
	if (cut < 0)
		cmd = run_cmd("cp %s %s", from, to);
	else
		cmd = run_cmd("head -c %ld %s > %s", cut, from, to);
	free(cmd);
}

static void poke(const char *file, size_t off, unsigned char xor)
{
	int fd = open(file, O_RDWR);
	unsigned char c;
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, (off_t)off), 1);
	c ^= xor;
	assert_int_equal(pwrite(fd, &c, 1, (off_t)off), 1);
	close(fd);
}

static void test_bad_files_exit_2_with_a_clear_message(void **state)
{
	const char *good = path_of("good.rb"), *bad = path_of("bad.rb");
	char *out, *err;
	size_t uoff, usz;
	struct stat st;
	FILE *f;
	(void)state;
	make_small(good, ringbuf_trace_user_size(&reg), true);
	assert_int_equal(run_tool(&out, &err, good, NULL), 0);
	assert_non_null(strstr(out, "work: thread=0 seq=19 small=-19 value=0x1300000013 msg=m label=l"));
	assert_non_null(strstr(out, "tick: seq=19 hist=1,2,3 tiny=-1 big=-5 [   13|-1  |fffffffffffffffb|t]%"));
	free(out);
	free(err);

	/* missing */
	assert_int_equal(run_tool(NULL, &err, path_of("nonexistent.rb"), NULL), 2);
	assert_non_null(strstr(err, "No such file"));
	free(err);
	/* foreign */
	f = fopen(bad, "w");
	fputs("this is not a ring buffer, just text that is long enough to hold a header..........\n", f);
	for (int i = 0; i < 100; i++)
		fputs("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n", f);
	fclose(f);
	assert_int_equal(run_tool(NULL, &err, bad, NULL), 2);
	assert_non_null(strstr(err, "not a ringbuf block"));
	free(err);
	/* truncated */
	assert_int_equal(stat(good, &st), 0);
	copy_file(good, bad, (long)st.st_size / 2);
	assert_int_equal(run_tool(NULL, &err, bad, NULL), 2);
	assert_non_null(strstr(err, "truncated"));
	free(err);
	/* empty */
	copy_file(good, bad, 0);
	assert_int_equal(run_tool(NULL, &err, bad, NULL), 2);
	assert_non_null(strstr(err, "not a ringbuf block"));
	free(err);
	/* corrupted user area: one byte of the stored formats (checksum), and the header's version */
	uoff = user_area_offset(good, &usz);
	copy_file(good, bad, -1);
	poke(bad, uoff + ringbuf_trace_user_size(&reg) - 1, 0x20); /* last byte of the blob */
	assert_int_equal(run_tool(&out, &err, bad, NULL), 2);
	assert_non_null(strstr(err, "corrupted user area"));
	assert_string_equal(out, "");
	free(out);
	free(err);
	copy_file(good, bad, -1);
	poke(bad, uoff + 8, 0x40); /* version */
	assert_int_equal(run_tool(NULL, &err, bad, NULL), 2);
	assert_non_null(strstr(err, "corrupted user area"));
	free(err);
	/* no registry stored, and no user area at all */
	make_small(bad, 4096, false);
	assert_int_equal(run_tool(NULL, &err, bad, NULL), 2);
	assert_non_null(strstr(err, "no event formats"));
	free(err);
	make_small(bad, 0, false);
	assert_int_equal(run_tool(NULL, &err, bad, NULL), 2);
	assert_non_null(strstr(err, "no event formats"));
	free(err);
	/* a user area too small for the registry */
	{
		struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
		struct ringbuf *rb;
		cfg.user_size = 100;
		assert_int_equal(ringbuf_create_file(bad, &cfg, &rb), 0);
		assert_int_equal(ringbuf_trace_store_registry(rb, &reg), RINGBUF_ENOMEM);
		ringbuf_destroy(rb);
	}
	/* the output cannot be written */
	assert_int_equal(run_tool(NULL, &err, "--tracedat", path_of("no/such/dir.dat"), good, NULL), 2);
	assert_non_null(strstr(err, "cannot write trace.dat"));
	free(err);
}

static void test_usage_errors_exit_1(void **state)
{
	const char *good = path_of("good.rb");
	char *err;
	(void)state;
	make_small(good, ringbuf_trace_user_size(&reg), true);
	assert_int_equal(run_tool(NULL, &err, NULL), 1);
	assert_non_null(strstr(err, "usage:"));
	free(err);
	assert_int_equal(run_tool(NULL, &err, "--bogus", good, NULL), 1);
	assert_non_null(strstr(err, "--bogus"));
	free(err);
	assert_int_equal(run_tool(NULL, &err, "--cpu", "x", good, NULL), 1);
	free(err);
	assert_int_equal(run_tool(NULL, &err, "--cpu", "7", good, NULL), 1);
	assert_non_null(strstr(err, "2 CPU buffers"));
	free(err);
	assert_int_equal(run_tool(NULL, &err, "--live", "--recover", good, NULL), 1);
	free(err);
	assert_int_equal(run_tool(NULL, &err, good, good, NULL), 1);
	free(err);
	assert_int_equal(run_tool(NULL, &err, "--tracedat", NULL), 1);
	free(err);
}

/* --cpu, --max and the lost-event lines of an overwritten buffer. */
static void test_cpu_max_and_lost_lines(void **state)
{
	const char *file = path_of("over.rb");
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf *rb;
	char *out, *err;
	const char *p;
	uint16_t hist[3] = {0, 0, 7};
	unsigned i, n = 0, first = ~0u, last = 0;
	(void)state;
	cfg.ncpu = 2;
	cfg.size_per_cpu = 8192; /* 2 pages: overwritten many times */
	cfg.page_size = 4096;
	cfg.user_size = ringbuf_trace_user_size(&reg);
	assert_int_equal(ringbuf_create_file(file, &cfg, &rb), 0);
	assert_int_equal(ringbuf_trace_store_registry(rb, &reg), 0);
	for (i = 0; i < 2000; i++) {
		hist[0] = (uint16_t)i;
		hist[1] = (uint16_t)(i * 3);
		assert_int_equal(trace_tick(rb, 1, i, hist, (int8_t)-(int)(i % 100), -(int64_t)i * 1000003,
					    (uint8_t)('a' + i % 26)), 1);
		assert_int_equal(trace_work(rb, 0, 0, i, small_of(i), value_of(0, i), "x", "y"), 1);
	}
	ringbuf_destroy(rb);
	assert_int_equal(run_tool(&out, &err, "--cpu", "1", file, NULL), 0);
	assert_null(strstr(out, " work:"));
	assert_non_null(strstr(out, "CPU:1 [LOST "));
	/* the events kept are the newest, consecutive, ending at 1999, and the
	 * lost count plus those printed is 2000 */
	for (p = out; (p = find_next(p, " tick: seq=")) != NULL; p++) {
		unsigned s = (unsigned)strtoul(p + 11, NULL, 10);
		if (first == ~0u)
			first = s;
		assert_int_equal(s, first + n);
		last = s;
		n++;
	}
	assert_int_equal(last, 1999);
	{
		unsigned long long lost = strtoull(strstr(out, "CPU:1 [LOST ") + 12, NULL, 10);
		assert_int_equal(lost, first);
	}
	assert_non_null(strstr(err, "overrun "));
	free(out);
	free(err);
	assert_int_equal(run_tool(&out, &err, "--max", "3", file, NULL), 0);
	for (n = 0, p = out; (p = find_next(p, ": seq=")) != NULL; p++)
		n++;
	assert_int_equal(n, 3);
	assert_non_null(strstr(err, "3 events printed"));
	free(out);
	free(err);
}

/* 500 random byte flips in the used part of the user area: the tool exits 0
 * or 2, never crashes. */
static void test_user_area_byte_flips_never_crash_the_tool(void **state)
{
	char good[256], bad[256], dat[256];
	size_t uoff, usz, used = ringbuf_trace_user_size(&reg);
	unsigned i, ok = 0, rejected = 0;
	(void)state;
	snprintf(good, sizeof good, "%s", path_of("fuzzbase.rb"));
	snprintf(bad, sizeof bad, "%s", path_of("fuzz.rb"));
	snprintf(dat, sizeof dat, "%s", path_of("fuzz.dat"));
	srand(4242);
	make_small(good, used, true);
	uoff = user_area_offset(good, &usz);
	assert_true(usz >= used);
	for (i = 0; i < 500; i++) {
		int rc, k, nflip = 1 + rand() % 3;
		copy_file(good, bad, -1);
		for (k = 0; k < nflip; k++) {
			/* header and comm slots in use, or anywhere in the blob */
			size_t blob = sizeof(struct ringbuf_trace__uhdr) +
				      RINGBUF_TRACE_USER_COMMS * sizeof(struct ringbuf_trace__ucomm);
			int where = rand() % 4;
			size_t at = where == 0 ? (size_t)(rand() % 160)
				    : where == 1 ? (size_t)rand() % used
						 : blob + (size_t)rand() % (used - blob);
			poke(bad, uoff + at, (unsigned char)(1u << (rand() % 8)));
		}
		if (rand() % 2)
			rc = run_tool(NULL, NULL, "--text", bad, NULL);
		else
			rc = run_tool(NULL, NULL, "--tracedat", dat, bad, NULL);
		if (rc != 0 && rc != 2) /* a signal, or a sanitizer's exit status */
			fail_msg("flip round %u: the tool exited with %d", i, rc);
		ok += rc == 0;
		rejected += rc == 2;
	}
	print_message("byte flips: %u printed, %u rejected\n", ok, rejected);
	assert_int_equal(ok + rejected, 500);
	assert_true(rejected > 0);
}

/* The loaded registry prints exactly like the compiled one, and mutated areas
 * (checksum not checked, so the structural checks are what stands) never
 * crash the parser or the interpreter. */
static void test_loaded_registry_matches_and_parser_survives_mutation(void **state)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf_trace_registry lr;
	struct ringbuf *rb = NULL;
	struct ringbuf_record recs[64];
	unsigned char *area, *copy, *payload[64];
	size_t usz, used;
	unsigned i, n = 0, parsed = 0;
	int32_t tid;
	(void)state;
	cfg.ncpu = 1;
	cfg.user_size = ringbuf_trace_user_size(&reg);
	used = cfg.user_size;
	assert_int_equal(ringbuf_create(&cfg, &rb), 0);
	assert_int_equal(ringbuf_trace_store_registry(rb, &reg), 0);
	ringbuf_trace_thread_name("reader-test");
	tid = ringbuf_trace_thread_id();
	for (i = 0; i < 32; i++) {
		uint16_t hist[3] = {(uint16_t)(i * 1000), 65535, (uint16_t)i};
		char label[64];
		snprintf(label, sizeof label, "%.*s", (int)(i * 2), "zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA0123456789");
		assert_int_equal(trace_work(rb, 0, i, i * 77, (int16_t)(i * 1111 - 20000), ~(uint64_t)i, "twelve-chars!", label), 1);
		assert_int_equal(trace_tick(rb, 0, i, hist, (int8_t)(i * 9 - 128), (int64_t)i * (INT64_MIN / 64),
					    (uint8_t)('A' + i)), 1);
	}
	area = ringbuf_user_area(rb, &usz);
	assert_int_equal(ringbuf_trace_load_registry(rb, &lr), 0);
	assert_string_equal(lr.system, "flight");
	assert_int_equal(lr.count, 2);
	assert_non_null(ringbuf_trace_find_id(&lr, 300));
	/* the format text (what trace.dat carries) is the same */
	{
		char a[4096], b[4096];
		ringbuf_trace_format_text(&ringbuf_event_work, a, sizeof a);
		ringbuf_trace_format_text(ringbuf_trace_find(&lr, "work"), b, sizeof b);
		assert_string_equal(a, b);
		ringbuf_trace_format_text(&ringbuf_event_tick, a, sizeof a);
		ringbuf_trace_format_text(ringbuf_trace_find(&lr, "tick"), b, sizeof b);
		assert_string_equal(a, b);
	}
	/* every record: the interpreter's line equals the compiled print's */
	while (n < 64 && ringbuf_consume(rb, 0, &recs[n]) > 0) {
		char a[1024], b[1024];
		payload[n] = malloc(recs[n].len);
		memcpy(payload[n], recs[n].data, recs[n].len);
		recs[n].data = payload[n];
		ringbuf_trace_format_record(&reg, &recs[n], 0, a, sizeof a);
		ringbuf_trace_format_record(&lr, &recs[n], 0, b, sizeof b);
		assert_string_equal(a, b);
		assert_non_null(strstr(b, "reader-test-"));
		n++;
	}
	assert_int_equal(n, 64);
	(void)tid;
	ringbuf_trace_registry_free(&lr);
	assert_null(lr.loaded);

	/* mutation: 20000 rounds of 1-4 flipped bytes or a random overwrite */
	copy = malloc(usz);
	srand(777);
	for (i = 0; i < 20000; i++) {
		int k, nm = 1 + rand() % 4;
		memcpy(copy, area, usz);
		for (k = 0; k < nm; k++) {
			/* half of them in the registry blob (after the header and the comm slots) */
			size_t blob = sizeof(struct ringbuf_trace__uhdr) +
				      RINGBUF_TRACE_USER_COMMS * sizeof(struct ringbuf_trace__ucomm);
			size_t at = rand() % 2 ? blob + (size_t)rand() % (used - blob) : (size_t)rand() % used;
			if (rand() % 3)
				copy[at] ^= (unsigned char)(1u << (rand() % 8));
			else
				copy[at] = (unsigned char)rand();
		}
		if (ringbuf_trace__parse(copy, usz, &lr, false) == 0) {
			char line[512];
			unsigned j;
			parsed++;
			for (j = 0; j < n; j++)
				ringbuf_trace_format_record(&lr, &recs[j], 0, line, sizeof line);
			{
				const struct ringbuf_trace_event *e;
				for (e = ringbuf_trace__first(&lr); e; e = e->next)
					ringbuf_trace_format_text(e, line, sizeof line);
			}
			ringbuf_trace_registry_free(&lr);
		} else {
			assert_null(lr.loaded);
		}
	}
	print_message("mutated areas: %u of 20000 still parsed\n", parsed);
	/* and with the checksum on, a flipped blob byte is always caught */
	for (i = 0; i < 200; i++) {
		size_t regoff = used - 1; /* the blob ends the used part */
		memcpy(copy, area, usz);
		copy[regoff - (size_t)rand() % 64] ^= 0x10;
		assert_int_equal(ringbuf_trace_parse_registry(copy, usz, &lr), RINGBUF_ECORRUPT);
	}
	free(copy);
	for (i = 0; i < n; i++)
		free(payload[i]);
	ringbuf_destroy(rb);
}

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/rbread-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	prog = mmap(NULL, sizeof *prog, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (prog == MAP_FAILED)
		return -1;
	register_events();
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof cmd, getenv("RBREAD_KEEP") ? "true %s" : "rm -rf %s", tmpdir);
	if (system(cmd) != 0)
		return -1;
	munmap(prog, sizeof *prog);
	return 0;
}

int main(int argc, char **argv)
{
	/* run_tool's child: the tool, argv[2] being its argv[0] */
	if (argc >= 3 && strcmp(argv[1], "--tool") == 0) {
		int st = ringbuf_read_main(argc - 2, argv + 2);
		fflush(NULL);
		return st; /* exit: LeakSanitizer checks the tool */
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loaded_registry_matches_and_parser_survives_mutation),
		cmocka_unit_test(test_bad_files_exit_2_with_a_clear_message),
		cmocka_unit_test(test_usage_errors_exit_1),
		cmocka_unit_test(test_cpu_max_and_lost_lines),
		cmocka_unit_test(test_killed_writer_text_and_tracedat_hold_every_committed_event),
		cmocka_unit_test(test_live_read_while_writer_runs),
		cmocka_unit_test(test_user_area_byte_flips_never_crash_the_tool),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
