/* ringbuf-record -N HOST:PORT (ringbuf_net.h): the trace goes to a real
 * `trace-cmd listen` over loopback, and the file listen writes must hold the
 * same events as a local recording of the same run.
 *
 * The same run twice: a child writes numbered events into a file-backed
 * buffer and exits; the buffer file is copied, and each copy is recorded
 * (the writer is gone: the recorder repairs and takes every page), one to a
 * local trace.dat, one with -N to trace-cmd listen. `trace-cmd report` of
 * the two must print the same events, line for line, and the count must be
 * what the child committed. Nothing depends on timing: the recorder returns
 * after listen has closed the connection, which it does once its file is
 * written; listen's readiness is read from /proc/net/tcp*.
 *
 * Live: a child writes while `ringbuf-record -N` sends pages to listen
 * (>= 4 pages while it runs, counted); listen's file must hold every event
 * the buffer committed, each CPU's sequence numbers rising.
 *
 * Against fake servers (threads of this test on ports bound to 0): a refused
 * connection (a bound socket that does not listen), a server that is not
 * trace-cmd, one that answers another protocol version, one that closes
 * early, one that never answers (-T 1), and hostile RINIT messages (size too
 * big, port out of range, missing NUL, CPU count mismatch): each gives exit
 * status 3 and a message, never a crash or a hang.
 * And one that, as trace-cmd listen does, sends data ports that listen only
 * after the client has been refused: the connect is retried.
 *
 * Skipped (and says so) when trace-cmd is not installed (the fake-server
 * cases run anyway). NET_TEST_LOG=FILE: trace-cmd listen's output goes there
 * (else /dev/null).
 */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_RECORD_TOOL_NO_MAIN
#include "internal.h" /* the private names the tool and the test use (IMPL: shared) */
#include "tools/ringbuf-record.c"
#define RINGBUF_TRACE_DEFINE_EVENTS
#include "ringbuf_trace.h"
#undef RINGBUF_TRACE_DEFINE_EVENTS

#include <arpa/inet.h>
#include <glob.h>
#include <netinet/in.h>
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
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "tests/recordutil.h"
#include "tests/testutil.h"

#define NEVENTS 20000u

static int have_tracecmd(void)
{
	return system("command -v trace-cmd >/dev/null 2>&1") == 0;
}

/* ---- the run: NEVENTS numbered events, then exit ------------------------- */

static void write_run(const char *path)
{
	pid_t pid = fork();
	int status;
	assert_true(pid >= 0);
	if (pid == 0) {
		/* room for every event: none dropped */
		struct ringbuf *rb = rec_child_create(path, RINGBUF_MODE_PRODUCER_CONSUMER, 1 << 20);
		uint32_t i, seq[2] = {0, 0};
		for (i = 0; i < NEVENTS; i++) {
			unsigned cpu = i & 1;
			if (trace_num(rb, cpu, cpu, seq[cpu]++) != 1)
				_exit(12);
		}
		exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void copy_file(const char *from, const char *to)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
	assert_int_equal(system(cmd), 0);
}

/* ringbuf_record_main with these arguments (NULL-terminated). */
static int record(const char *first, ...)
{
	char *argv[16];
	int argc = 0;
	va_list ap;
	const char *a;
	argv[argc++] = (char *)"ringbuf-record";
	va_start(ap, first);
	for (a = first; a && argc < 15; a = va_arg(ap, const char *))
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	return ringbuf_record_main(argc, argv);
}

/* ---- trace-cmd listen ------------------------------------------------------ */

/* Whether a TCP socket listens on port (any address), from /proc/net/tcp{,6}. */
static int port_listening(unsigned port)
{
	static const char *const files[] = {"/proc/net/tcp", "/proc/net/tcp6"};
	unsigned f;
	for (f = 0; f < 2; f++) {
		FILE *fp = fopen(files[f], "r");
		char line[512];
		if (!fp)
			continue;
		while (fgets(line, sizeof line, fp)) {
			char local[128];
			unsigned st, lp;
			char *colon;
			if (sscanf(line, " %*d: %127s %*s %x", local, &st) != 2)
				continue;
			colon = strrchr(local, ':');
			if (!colon || sscanf(colon + 1, "%x", &lp) != 1)
				continue;
			if (lp == port && st == 0x0A) {
				fclose(fp);
				return 1;
			}
		}
		fclose(fp);
	}
	return 0;
}

/* A port free now (bound to 0 and released); listen may still lose it to
 * another program: start_listen retries. */
static unsigned free_port(void)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

/* the listener running, for teardown when a test fails before stop_listen */
static pid_t listen_pid;

/* trace-cmd listen in the foreground, writing dir/net.*.dat; returns its pid
 * once it listens. */
static pid_t start_listen(const char *dir, unsigned *port)
{
	int tries;
	for (tries = 0; tries < 20; tries++) {
		char p[16];
		pid_t pid;
		*port = free_port();
		snprintf(p, sizeof p, "%u", *port);
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			int null = open(getenv("NET_TEST_LOG") ? getenv("NET_TEST_LOG") : "/dev/null", O_WRONLY | O_CREAT | O_APPEND, 0600);
			if (null >= 0) {
				dup2(null, 1);
				dup2(null, 2);
			}
			execlp("trace-cmd", "trace-cmd", "listen", "-p", p, "-d", dir, "-o", "net", (char *)NULL);
			_exit(127);
		}
		for (;;) {
			int status;
			if (port_listening(*port)) {
				listen_pid = pid;
				return pid;
			}
			if (waitpid(pid, &status, WNOHANG) == pid)
				break; /* it exited: the port was taken meanwhile; another */
			poll(NULL, 0, 10);
		}
	}
	fail_msg("trace-cmd listen did not start (20 ports tried)");
	return -1;
}

static void stop_listen(pid_t pid)
{
	int status;
	kill(pid, SIGINT);
	waitpid(pid, &status, 0);
	listen_pid = 0;
}

/* " cpu=C seq=Q" at s: 1 and c, q set, or 0. (Not sscanf: glibc's takes
 * strlen of the rest of the string each call, quadratic over a report.) */
static int cpu_seq(const char *s, unsigned *c, unsigned *q)
{
	char *end;
	unsigned long v;
	if (strncmp(s, " cpu=", 5) != 0)
		return 0;
	v = strtoul(s + 5, &end, 10);
	if (end == s + 5 || strncmp(end, " seq=", 5) != 0)
		return 0;
	*c = (unsigned)v;
	s = end + 5;
	v = strtoul(s, &end, 10);
	if (end == s)
		return 0;
	*q = (unsigned)v;
	return 1;
}

/* `trace-cmd report` of path into a malloc'ed string; *lines: event lines. */
static char *report(const char *path, unsigned long *lines)
{
	char cmd[512], *out = NULL;
	size_t cap = 0, len = 0, k;
	FILE *p;
	snprintf(cmd, sizeof cmd, "trace-cmd report '%s' 2>&1", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	*lines = 0;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 65536;
			out = realloc(out, cap);
			assert_non_null(out);
		}
		k = fread(out + len, 1, 4096, p);
		if (k == 0)
			break;
		len += k;
	}
	out[len] = 0;
	pclose(p);
	{
		const char *s = out;
		while ((s = find_next(s, " cpu=")) != NULL) {
			unsigned c, q;
			if (cpu_seq(s, &c, &q))
				++*lines;
			s++;
		}
	}
	return out;
}

/* ringbuf_tracedat_header() for the buffer (as the recorder fills info) is
 * byte for byte the start of the local v6 file, up to "flyrecord", but for
 * the local file's CPUSTAT options (one per CPU), which the header sent
 * before the pages cannot have. */
static void header_is_local_prefix(const char *rbpath, const char *dat)
{
	struct ringbuf_trace_registry reg;
	struct ringbuf_tracedat_info info;
	struct ringbuf *rb;
	unsigned char *file;
	void *hdr;
	size_t len, flen, at;
	unsigned cpustats = 0;
	FILE *f;
	assert_int_equal(ringbuf_open_file(rbpath, 0, &rb), 0);
	assert_int_equal(ringbuf_trace_load_registry(rb, &reg), 0);
	assert_int_equal(ringbuf_tracedat_info_of(rb, &reg, &info), 0);
	if (!info.tsc)
		info.clock = ringbuf_clock_name(rb);
	assert_int_equal(ringbuf_tracedat_header(&info, &hdr, &len), 0);
	free(hdr);
	info.version = 7;
	assert_int_equal(ringbuf_tracedat_header(&info, &hdr, &len), RINGBUF_EINVAL);
	assert_null(hdr);
	info.version = 6;
	assert_int_equal(ringbuf_tracedat_header(&info, &hdr, &len), 0);
	f = fopen(dat, "rb");
	assert_non_null(f);
	file = malloc(len + 64 * 1024);
	assert_non_null(file);
	flen = fread(file, 1, len + 64 * 1024, f);
	fclose(f);
	assert_true(flen >= len + 10);
	/* the same metadata, but for the local file's CPUSTAT options (the
	 * buffer's counters, known only at its end: ringbuf_tracedat_keep_stats),
	 * the last before the options' end */
	assert_memory_equal(file, hdr, len - 2);
	at = len - 2;
	for (;;) {
		uint16_t id = 0;
		uint32_t olen;
		if (at + 6 > flen)
			break;
		memcpy(&id, file + at, 2); /* the file is in this host's order */
		if (id != 2) /* CPUSTAT */
			break;
		memcpy(&olen, file + at + 2, 4);
		at += 6 + olen;
		cpustats++;
	}
	assert_int_equal(cpustats, info.ncpu);
	assert_true(at + 12 <= flen);
	assert_memory_equal(file + at, "\0\0flyrecord", 12);
	free(file);
	free(hdr);
	ringbuf_trace_registry_free(&reg);
	ringbuf_destroy(rb);
}

static void same_run_local_and_via_listen(void **state)
{
	char *local_rep, *net_rep, where[32], dir[200];
	unsigned long local_lines, net_lines;
	unsigned port;
	glob_t g;
	pid_t lp;
	(void)state;
	snprintf(dir, sizeof dir, "%s", path_of("listen")); /* path_of's buffers rotate */
	if (!have_tracecmd()) {
		print_message("      trace-cmd is not installed: the comparison with trace-cmd listen is skipped "
			      "(scripts/check-deps.sh installs it)\n");
		skip();
	}
	write_run(path_of("run.rb"));
	copy_file(path_of("run.rb"), path_of("run-local.rb"));
	copy_file(path_of("run.rb"), path_of("run-net.rb"));
	assert_int_equal(mkdir(dir, 0700), 0);

	assert_int_equal(record("-q", "-o", path_of("local.dat"), path_of("run-local.rb"), NULL), 0);
	assert_int_equal(ringbuf_record_last.events, NEVENTS);

	/* what -N sends as metadata is the local file up to its flyrecord section */
	header_is_local_prefix(path_of("run.rb"), path_of("local.dat"));

	lp = start_listen(dir, &port);
	snprintf(where, sizeof where, "127.0.0.1:%u", port);
	assert_int_equal(record("-q", "-N", where, "-T", "60", path_of("run-net.rb"), NULL), 0);
	assert_int_equal(ringbuf_record_last.events, NEVENTS);
	assert_int_equal(ringbuf_record_last.bad_pages, 0);

	/* listen has written its file before it closed the connection */
	assert_int_equal(glob(path_of("listen/net.*.dat"), 0, NULL, &g), 0);
	assert_int_equal(g.gl_pathc, 1);
	local_rep = report(path_of("local.dat"), &local_lines);
	net_rep = report(g.gl_pathv[0], &net_lines);
	print_message("      local: %lu events; via trace-cmd listen (%s): %lu events\n", local_lines,
		      strrchr(g.gl_pathv[0], '/') + 1, net_lines);
	assert_int_equal(local_lines, NEVENTS);
	assert_int_equal(net_lines, NEVENTS);
	if (strcmp(local_rep, net_rep) != 0) {
		size_t i = 0;
		while (local_rep[i] && local_rep[i] == net_rep[i])
			i++;
		fail_msg("the reports differ at byte %zu:\nlocal: %.200s\nnet:   %.200s", i, local_rep + i,
			 net_rep + i);
	}
	/* a second trace on the same listener: a second file */
	copy_file(path_of("run.rb"), path_of("run-net2.rb"));
	assert_int_equal(record("-q", "-N", where, path_of("run-net2.rb"), NULL), 0);
	globfree(&g);
	assert_int_equal(glob(path_of("listen/net.*.dat"), 0, NULL, &g), 0);
	assert_int_equal(g.gl_pathc, 2);
	globfree(&g);
	stop_listen(lp);
	free(local_rep);
	free(net_rep);
}

/* Live: the child writes while the recorder sends pages to listen; it exits
 * once it has written 100000 events and the recorder has taken >= 4 pages
 * (counted, not timed). listen's file must hold every committed event, each
 * CPU's sequence rising. */
static void live_recording_via_listen(void **state)
{
	char where[32], dir[200], path[200], *rep;
	struct rec_run run;
	struct ringbuf_stats st;
	struct ringbuf *rb;
	unsigned long lines;
	unsigned port, c;
	uint32_t next[2] = {0, 0};
	const char *s;
	pthread_t th;
	glob_t g;
	pid_t lp, pid;
	int fds[2], status;
	char ch;
	(void)state;
	snprintf(dir, sizeof dir, "%s", path_of("listen-live")); /* path_of's buffers rotate */
	snprintf(path, sizeof path, "%s", path_of("live.rb"));
	if (!have_tracecmd()) {
		print_message("      trace-cmd is not installed: skipped\n");
		skip();
	}
	assert_int_equal(mkdir(dir, 0700), 0);
	lp = start_listen(dir, &port);
	snprintf(where, sizeof where, "localhost:%u", port);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		rec_traced_child(path, fds[1], END_EXIT, RINGBUF_MODE_PRODUCER_CONSUMER, 100000);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &ch, 1), 1);
	close(fds[0]);
	memset(&run, 0, sizeof run);
	run.rc = -1;
	atomic_init(&run.done, 0);
	run.argv[run.argc++] = (char *)"ringbuf-record";
	run.argv[run.argc++] = (char *)"-q";
	run.argv[run.argc++] = (char *)"-N";
	run.argv[run.argc++] = where;
	run.argv[run.argc++] = (char *)"-T";
	run.argv[run.argc++] = (char *)"60";
	run.argv[run.argc++] = path;
	assert_int_equal(pthread_create(&th, NULL, rec_recorder, &run), 0);
	/* a recorder that stops while the child runs would leave it waiting
	 * for pages_read forever: fails at once instead (the listener is
	 * stopped by the test's teardown, stop_listener) */
	assert_int_equal(rec_child_end(pid, &status, &run), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(run.rc, 0);
	assert_true(ringbuf_record_last.live_pages >= 4);
	assert_int_equal(ringbuf_open_file(path, 0, &rb), 0);
	assert_int_equal(ringbuf_stats(rb, &st), 0);
	ringbuf_destroy(rb);
	assert_int_equal(ringbuf_record_last.events, st.committed);

	assert_int_equal(glob(path_of("listen-live/net.*.dat"), 0, NULL, &g), 0);
	assert_int_equal(g.gl_pathc, 1);
	rep = report(g.gl_pathv[0], &lines);
	print_message("      live: %llu events committed (%llu dropped), %lu in listen's file; %llu pages sent "
		      "while it ran\n", (unsigned long long)st.committed, (unsigned long long)st.dropped_events,
		      lines, (unsigned long long)ringbuf_record_last.live_pages);
	assert_int_equal(lines, st.committed);
	/* per CPU the sequence rises (gaps only where events were dropped) */
	for (s = rep; (s = find_next(s, " cpu=")) != NULL; s++) {
		unsigned q;
		if (!cpu_seq(s, &c, &q))
			continue;
		assert_true(c < 2);
		if (q < next[c])
			fail_msg("cpu %u: seq %u after %u", c, q, next[c] - 1);
		next[c] = q + 1;
	}
	globfree(&g);
	free(rep);
	stop_listen(lp);
}

/* ---- fake servers ------------------------------------------------------------ */

enum fake_kind {
	FAKE_NOT_TRACECMD, FAKE_OTHER_VERSION, FAKE_CLOSE_AFTER_GREETING, FAKE_SILENT, FAKE_RINIT_TOO_BIG,
	FAKE_RINIT_BAD_PORT, FAKE_RINIT_NO_NUL, FAKE_RINIT_CPUS, FAKE_RINIT_ZERO_PORT, FAKE_CLOSE_MSG
};

struct fake {
	int lfd;
	enum fake_kind kind;
	pthread_t th;
};

static int read_n(int fd, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t k = read(fd, (char *)buf + got, n - got);
		if (k <= 0)
			return -1;
		got += (size_t)k;
	}
	return 0;
}

static void put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* The server's side of the protocol after its "tracecmd" greeting: the
 * client's version (answered V3, or V4 with other_version: then -1), its
 * options (answered OK) and its TINIT. 0, or -1 when the client went away. */
static int fake_handshake(int c, int other_version)
{
	unsigned char buf[32];
	if (read_n(c, buf, 5) < 0)
		return -1;
	if (other_version) {
		(void)!write(c, "V4", 3);
		return -1;
	}
	(void)!write(c, "V3", 3);
	if (read_n(c, buf, 8) < 0)
		return -1;
	(void)!write(c, "OK", 2);
	if (read_n(c, buf, 28) < 0) /* TINIT with "tcp" */
		return -1;
	return 0;
}

static void *fake_server(void *arg)
{
	struct fake *f = arg;
	unsigned char buf[256], msg[64];
	int c = accept(f->lfd, NULL, NULL);
	if (c < 0)
		return NULL;
	if (f->kind == FAKE_NOT_TRACECMD) {
		(void)!write(c, "SSH-2.0-", 8);
		goto out;
	}
	(void)!write(c, "tracecmd", 8);
	if (f->kind == FAKE_CLOSE_AFTER_GREETING)
		goto out;
	if (f->kind == FAKE_SILENT) { /* reads and never answers: the client's timeout ends it */
		while (read(c, buf, sizeof buf) > 0)
			;
		goto out;
	}
	if (fake_handshake(c, f->kind == FAKE_OTHER_VERSION) < 0)
		goto out;
	memset(msg, 0, sizeof msg);
	put_be32(msg + 4, 2);      /* RINIT */
	put_be32(msg + 8, 4);
	put_be32(msg + 12, 2);     /* cpus */
	switch (f->kind) {
	case FAKE_CLOSE_MSG:
		put_be32(msg, 12);
		put_be32(msg + 4, 0);
		put_be32(msg + 8, 0);
		(void)!write(c, msg, 12);
		break;
	case FAKE_RINIT_TOO_BIG:
		put_be32(msg, 100000);
		(void)!write(c, msg, 16);
		break;
	case FAKE_RINIT_BAD_PORT:
		memcpy(msg + 16, "70000\0" "1\0", 8);
		put_be32(msg, 24);
		(void)!write(c, msg, 24);
		break;
	case FAKE_RINIT_ZERO_PORT:
		memcpy(msg + 16, "0\0" "1\0", 4);
		put_be32(msg, 20);
		(void)!write(c, msg, 20);
		break;
	case FAKE_RINIT_NO_NUL:
		memcpy(msg + 16, "1234\0" "12", 7);
		put_be32(msg, 23);
		(void)!write(c, msg, 23);
		break;
	case FAKE_RINIT_CPUS:
		put_be32(msg + 12, 64);
		memcpy(msg + 16, "1\0" "2\0", 4);
		put_be32(msg, 20);
		(void)!write(c, msg, 20);
		break;
	default:
		break;
	}
	/* wait for the client to hang up */
	while (read(c, buf, sizeof buf) > 0)
		;
out:
	close(c);
	return NULL;
}

static unsigned fake_start(struct fake *f, enum fake_kind kind)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof sa;
	f->kind = kind;
	f->lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(f->lfd >= 0);
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(listen(f->lfd, 1), 0);
	assert_int_equal(getsockname(f->lfd, (struct sockaddr *)&sa, &len), 0);
	assert_int_equal(pthread_create(&f->th, NULL, fake_server, f), 0);
	return ntohs(sa.sin_port);
}

static void fake_run(enum fake_kind kind, const char *timeout, const char *what)
{
	struct fake f;
	char where[32], rb[64];
	unsigned port = fake_start(&f, kind);
	snprintf(where, sizeof where, "127.0.0.1:%u", port);
	snprintf(rb, sizeof rb, "fake-%d.rb", (int)kind);
	copy_file(path_of("run.rb"), path_of(rb));
	print_message("      %s: ", what);
	fflush(stdout);
	assert_int_equal(record("-q", "-N", where, "-T", timeout, path_of(rb), NULL), RBREC_NET);
	assert_int_equal(pthread_join(f.th, NULL), 0);
	close(f.lfd);
}

static void bad_servers_give_clear_errors(void **state)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof sa;
	char where[32];
	int fd;
	(void)state;
	write_run(path_of("run.rb"));

	/* refused: bound, not listening (no other program can take the port meanwhile) */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	snprintf(where, sizeof where, "127.0.0.1:%u", ntohs(sa.sin_port));
	copy_file(path_of("run.rb"), path_of("refused.rb"));
	print_message("      refused: ");
	fflush(stdout);
	assert_int_equal(record("-q", "-N", where, path_of("refused.rb"), NULL), RBREC_NET);
	close(fd);

	fake_run(FAKE_NOT_TRACECMD, "30", "not trace-cmd");
	fake_run(FAKE_OTHER_VERSION, "30", "version mismatch");
	fake_run(FAKE_CLOSE_AFTER_GREETING, "30", "closes early");
	fake_run(FAKE_SILENT, "1", "never answers (-T 1)");
	fake_run(FAKE_CLOSE_MSG, "30", "CLOSE instead of RINIT");
	fake_run(FAKE_RINIT_TOO_BIG, "30", "RINIT size 100000");
	fake_run(FAKE_RINIT_BAD_PORT, "30", "RINIT port 70000");
	fake_run(FAKE_RINIT_ZERO_PORT, "30", "RINIT port 0");
	fake_run(FAKE_RINIT_NO_NUL, "30", "RINIT ports without NUL");
	fake_run(FAKE_RINIT_CPUS, "30", "RINIT for 64 CPUs");

	/* usage errors */
	assert_int_equal(record("-q", "-N", "host:", path_of("run.rb"), NULL), RBREC_USAGE);
	assert_int_equal(record("-q", "-N", "host:99999", path_of("run.rb"), NULL), RBREC_USAGE);
	assert_int_equal(record("-q", "-N", "1234", "-V", "7", path_of("run.rb"), NULL), RBREC_USAGE);
	assert_int_equal(record("-q", "-N", "1234", "-T", "0", path_of("run.rb"), NULL), RBREC_USAGE);
	assert_int_equal(record("-q", "-N", "1234", "-o", "x.dat", path_of("run.rb"), NULL), RBREC_USAGE);
}

/* trace-cmd listen sends RINIT with data ports its reader processes have
 * bound but listen on only once they run (they are forked after the bind): a
 * client faster than them is refused. This server does the same on purpose:
 * RINIT names two bound ports, and it listens on them only after the client
 * has been refused once (ringbuf_net__refused counts the refusals it
 * retries), or gives up when the client hangs up. Counted, not timed. */
struct late {
	int lfd, data[2];
	unsigned ports[2];
	pthread_t th;
};

static void *late_listen_server(void *arg)
{
	struct late *l = arg;
	unsigned char buf[256], msg[64];
	unsigned i, off;
	int c = accept(l->lfd, NULL, NULL), a[2] = {-1, -1};
	if (c < 0)
		return NULL;
	(void)!write(c, "tracecmd", 8);
	if (fake_handshake(c, 0) < 0)
		goto out;
	memset(msg, 0, sizeof msg);
	put_be32(msg + 4, 2);  /* RINIT */
	put_be32(msg + 8, 4);
	put_be32(msg + 12, 2); /* cpus */
	off = 16;
	for (i = 0; i < 2; i++)
		off += (unsigned)snprintf((char *)msg + off, sizeof msg - off, "%u", l->ports[i]) + 1;
	put_be32(msg, off);
	(void)!write(c, msg, off);
	for (;;) {
		struct pollfd p = {c, POLLIN, 0};
		if (atomic_load_explicit(&ringbuf_net__refused, memory_order_relaxed) > 0)
			break;
		if (poll(&p, 1, 1) == 1 && read(c, buf, sizeof buf) <= 0)
			goto out; /* the client gave up: refused for good */
	}
	for (i = 0; i < 2; i++) {
		assert_int_equal(listen(l->data[i], 1), 0);
		a[i] = accept(l->data[i], NULL, NULL);
	}
	/* the metadata, then the client's abort */
	while (read(c, buf, sizeof buf) > 0)
		;
out:
	for (i = 0; i < 2; i++)
		if (a[i] >= 0)
			close(a[i]);
	close(c);
	return NULL;
}

static void data_port_listening_late_is_retried(void **state)
{
	union { uint16_t u; unsigned char b[2]; } endian;
	struct ringbuf_tracedat_info info;
	struct ringbuf_net *n = NULL;
	struct sockaddr_in sa;
	struct late l;
	char port[16], err[256];
	unsigned i;
	int *fd[3] = {&l.lfd, &l.data[0], &l.data[1]};
	(void)state;
	for (i = 0; i < 3; i++) {
		socklen_t len = sizeof sa;
		*fd[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_true(*fd[i] >= 0);
		memset(&sa, 0, sizeof sa);
		sa.sin_family = AF_INET;
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		assert_int_equal(bind(*fd[i], (struct sockaddr *)&sa, sizeof sa), 0);
		assert_int_equal(getsockname(*fd[i], (struct sockaddr *)&sa, &len), 0);
		if (i)
			l.ports[i - 1] = ntohs(sa.sin_port);
		else
			snprintf(port, sizeof port, "%u", ntohs(sa.sin_port));
	}
	assert_int_equal(listen(l.lfd, 1), 0);
	atomic_store(&ringbuf_net__refused, 0);
	assert_int_equal(pthread_create(&l.th, NULL, late_listen_server, &l), 0);
	endian.u = 1;
	memset(&info, 0, sizeof info);
	info.ncpu = 2;
	info.page_size = 4096;
	info.big_endian = endian.b[0] != 1;
	info.long_size = sizeof(long);
	info.version = 6;
	err[0] = 0;
	i = (unsigned)-ringbuf_net_connect("127.0.0.1", port, &info, 30000, &n, err, sizeof err);
	print_message("      data ports listening late: %s (%u refused connects retried)\n", err,
		      atomic_load(&ringbuf_net__refused));
	assert_int_equal(i, 0);
	assert_true(atomic_load(&ringbuf_net__refused) > 0);
	ringbuf_net_abort(n);
	assert_int_equal(pthread_join(l.th, NULL), 0);
	for (i = 0; i < 3; i++)
		close(*fd[i]);
}

/* ringbuf_tracedat_open_fds: each page checked and written whole to its
 * CPU's descriptor; bad arguments refused; finish() leaves the descriptors
 * open and gives the counters; a peer gone is RINGBUF_ESYS, not SIGPIPE. */
static void tracedat_streams_to_descriptors(void **state)
{
	union { uint16_t u; unsigned char b[2]; } endian;
	struct ringbuf_tracedat_info info;
	struct ringbuf_tracedat_stats st;
	struct ringbuf_tracedat *w;
	unsigned char page[4096], got[4096];
	int fds[2][2], use[2], bad[2] = {3, -1};
	long commit = 8;
	uint32_t word, payload = 0x12345678;
	unsigned i;
	(void)state;
	endian.u = 1;
	memset(&info, 0, sizeof info);
	info.ncpu = 2;
	info.page_size = sizeof page;
	info.big_endian = endian.b[0] != 1;
	info.long_size = sizeof(long);
	info.version = 6;
	for (i = 0; i < 2; i++) {
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds[i]), 0);
		use[i] = fds[i][0];
	}
	assert_int_equal(ringbuf_tracedat_open_fds(&info, bad, &w), RINGBUF_EINVAL);
	assert_null(w);
	assert_int_equal(ringbuf_tracedat_open_fds(NULL, use, &w), RINGBUF_EINVAL);
	assert_int_equal(ringbuf_tracedat_open_fds(&info, use, &w), 0);
	/* one 4-byte record (type_len 1), garbage after commit: sent as zeros */
	memset(page, 0xee, sizeof page);
	memset(page, 0, 8);
	memcpy(page + 8, &commit, sizeof commit);
	word = info.big_endian ? 1u << 27 : 1u;
	memcpy(page + 8 + sizeof(long), &word, 4);
	memcpy(page + 12 + sizeof(long), &payload, 4);
	assert_int_equal(ringbuf_tracedat_add_page(w, 1, page, sizeof page), 1);
	assert_int_equal(read_n(fds[1][1], got, sizeof got), 0);
	assert_memory_equal(got, page, 16 + sizeof(long));
	for (i = 16 + sizeof(long); i < sizeof got; i++)
		assert_int_equal(got[i], 0);
	/* a malformed page: refused, nothing sent */
	commit = 5000;
	memcpy(page + 8, &commit, sizeof commit);
	assert_int_equal(ringbuf_tracedat_add_page(w, 0, page, sizeof page), RINGBUF_ECORRUPT);
	assert_int_equal(ringbuf_tracedat_finish(w, &st), 0);
	assert_int_equal(st.pages, 1);
	assert_int_equal(st.events, 1);
	assert_int_equal(st.pages_rejected, 1);
	/* still open: the caller's; nothing arrived on CPU 0's */
	assert_int_equal(write(use[0], "x", 1), 1);
	assert_int_equal(read_n(fds[0][1], got, 1), 0);
	assert_int_equal(got[0], 'x');
	/* the peer gone: an error, no SIGPIPE (this test does ignore SIGPIPE,
	 * the error is what is checked) */
	assert_int_equal(ringbuf_tracedat_open_fds(&info, use, &w), 0);
	close(fds[1][1]);
	commit = 8;
	memcpy(page + 8, &commit, sizeof commit);
	assert_int_equal(ringbuf_tracedat_add_page(w, 1, page, sizeof page), RINGBUF_ESYS);
	assert_int_equal(errno, EPIPE);
	assert_int_equal(ringbuf_tracedat_finish(w, NULL), RINGBUF_ESYS);
	close(fds[0][0]);
	close(fds[0][1]);
	close(fds[1][0]);
}

/* after each test, also a failed one: no listener left behind */
static int stop_listener(void **state)
{
	(void)state;
	if (listen_pid > 0)
		stop_listen(listen_pid);
	return 0;
}

static int setup(void **state)
{
	(void)state;
	return rec_make_tmpdir("/tmp/ringbuf-net-XXXXXX");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(same_run_local_and_via_listen, stop_listener),
		cmocka_unit_test_teardown(live_recording_via_listen, stop_listener),
		cmocka_unit_test(tracedat_streams_to_descriptors),
		cmocka_unit_test(bad_servers_give_clear_errors),
		cmocka_unit_test(data_port_listening_late_is_retried),
	};
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, rec_remove_tmpdir);
}
