/* ringbuf-record -d (a process tree, one buffer per process image) and the
 * LD_PRELOAD example examples/malloc_trace.so, end to end.
 *
 * tree: this binary, run by the recorder as its COMMAND (`--tree`), writes
 * numbered events through the library directly into a buffer of its own that
 * it announces as malloc_trace.so does (dot name, flock, rename), forks three
 * children that each make their own buffer before closing the inherited lock;
 * the third execs this binary again (`--tree-exec`: same pid, new image, new
 * buffer); the parent writes more after the forks. Buffers are large enough
 * that nothing is ever dropped, so the recorder's files must hold every event
 * exactly once (each process image's sequence complete, none twice) and as
 * many as the buffer counts as committed (the files are kept with -k).
 *
 * preload: the recorder runs this binary (`--malloc`) with LD_PRELOAD=
 * malloc_trace.so: known allocations (distinct sizes) in the parent and in
 * two fork children that also free blocks they inherited; malloc_check's
 * checker must find every free matching a live allocation, no pointer
 * allocated twice, nothing lost, each known allocation exactly once in its
 * process's trace, and events == committed for each buffer. Skipped (and
 * says so) when the .so was not built or under a sanitizer.
 *
 * inprocess: the same program with malloc_trace.so's in-process mode
 * (MALLOC_TRACE_OUT, no recorder), started through an exec of its own: one
 * trace.dat per process image, written by the image itself (the one before
 * the exec included), the same checks.
 *
 * wait: -d's wait between rounds (rbrec_wait_ms) against the writers' rate;
 * a buffer announced during the wait ends it (rbrec_watch).
 *
 * Nothing here waits for time: the recorder stops when the whole tree is
 * reaped and every buffer is finished.
 */
#define _GNU_SOURCE 1
/* IMPL: shared (no option of its own: linked with the implementation object, tests/README.md) */
#define RINGBUF_RECORD_TOOL_NO_MAIN
#include "internal.h" /* the private names the tool and the test use (IMPL: shared) */
#include "tools/ringbuf-record.c"
#define MALLOC_CHECK_NO_MAIN
#include "examples/malloc_check.c"
#define RINGBUF_TRACE_DEFINE_EVENTS
#include "ringbuf_trace.h"
#undef RINGBUF_TRACE_DEFINE_EVENTS

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

/* the same names and fields as malloc_trace.so's (malloc_check reads them) */
RINGBUF_TRACE_EVENT(malloc, RINGBUF_FIELDS(RINGBUF_FIELD(uint64_t, ptr), RINGBUF_FIELD(uint64_t, size)),
		    RINGBUF_PRINT("ptr=0x%llx size=%llu", (unsigned long long)REC->ptr,
				  (unsigned long long)REC->size));
RINGBUF_TRACE_EVENT(proc,
		    RINGBUF_FIELDS(RINGBUF_FIELD(uint64_t, pid), RINGBUF_FIELD(uint64_t, ppid),
				   RINGBUF_FIELD(uint64_t, fork_seq), RINGBUF_FIELD(uint64_t, forked)),
		    RINGBUF_PRINT("pid=%llu", (unsigned long long)REC->pid));

#define TREE_N 20000u   /* events per process image per phase */
#define TREE_IMAGES 5u  /* parent, 3 children, the exec'd image of the third */

static char self_exe[4096];

/* ---- the tree, through the library -------------------------------------------- */

static struct ringbuf_trace_registry tree_reg = RINGBUF_TRACE_REGISTRY_INIT("malloc_trace");
static struct ringbuf *tree_rb;
static int tree_lock = -1;

/* malloc_trace.c's B1-B3: dot name, flock(LOCK_EX), rename. */
static void tree_buffer(unsigned index)
{
	const char *dir = getenv("RINGBUF_RECORD_DIR");
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	char tmp[4096], final[4096];
	int fd;
	if (!dir)
		_exit(20);
	static int registered; /* a fork child inherits the registry */
	if (!registered && (ringbuf_trace_register_event(&tree_reg, &ringbuf_event_malloc) < 0 ||
			    ringbuf_trace_register_event(&tree_reg, &ringbuf_event_proc) < 0))
		_exit(21);
	registered = 1;
	cfg.ncpu = 1;
	cfg.size_per_cpu = 2u << 20; /* > 2 * TREE_N events: never full */
	cfg.mode = RINGBUF_MODE_PRODUCER_CONSUMER;
	cfg.user_size = ringbuf_trace_user_size(&tree_reg);
	snprintf(tmp, sizeof tmp, "%s/.%ld.tmp", dir, (long)getpid());
	snprintf(final, sizeof final, "%s/%ld-%u.rb", dir, (long)getpid(), index);
	if (ringbuf_create_file(tmp, &cfg, &tree_rb) < 0 || ringbuf_trace_store_registry(tree_rb, &tree_reg) < 0)
		_exit(22);
	fd = open(tmp, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || flock(fd, LOCK_EX) != 0 || rename(tmp, final) != 0)
		_exit(23);
	tree_lock = fd;
	if (trace_proc(tree_rb, 0, index, (uint64_t)getppid(), 0, 0) != 1)
		_exit(24);
}

static void tree_write(unsigned index, uint32_t from, uint32_t to)
{
	uint32_t i;
	for (i = from; i < to; i++) /* ptr: unique per image and event; size: the sequence */
		if (trace_malloc(tree_rb, 0, ((uint64_t)index << 32) | (i + 1u), i) != 1)
			_exit(25);
}

static int tree_main(void)
{
	unsigned k;
	tree_buffer(0);
	tree_write(0, 0, TREE_N);
	for (k = 1; k <= 3; k++) {
		pid_t p = fork();
		if (p < 0)
			return 30;
		if (p == 0) {
			int inherited = tree_lock;
			ringbuf_trace_thread_reset();
			/* the child's buffer is visible before the inherited lock goes */
			tree_buffer(k);
			close(inherited);
			tree_write(k, 0, TREE_N);
			if (k == 3) {
				char arg[16];
				snprintf(arg, sizeof arg, "%u", TREE_IMAGES - 1);
				execl(self_exe, self_exe, "--tree-exec", arg, (char *)NULL);
				_exit(31);
			}
			_exit(0);
		}
	}
	tree_write(0, TREE_N, 2 * TREE_N);
	for (k = 1; k <= 3; k++) {
		int st;
		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			return 32;
	}
	return 0;
}

static int tree_exec_main(const char *arg)
{
	unsigned index = (unsigned)atoi(arg);
	tree_buffer(index);
	tree_write(index, 0, TREE_N);
	return 0;
}

/* ---- the preload workload --------------------------------------------------------- */

#define PARENT_N 1000u
#define CHILD_N 500u

static void *volatile sink;

static int malloc_main(void)
{
	static void *p[PARENT_N];
	unsigned i, k;
	for (i = 0; i < PARENT_N; i++)
		if (!(p[i] = malloc(3000 + i)))
			return 40;
	for (k = 0; k < 2; k++) {
		pid_t c = fork();
		if (c < 0)
			return 41;
		if (c == 0) {
			static void *q[CHILD_N];
			void *a = NULL;
			for (i = 0; i < CHILD_N; i++)
				if (!(q[i] = malloc(20000 + k * 1000 + i)))
					_exit(42);
			for (i = 0; i < CHILD_N; i += 2) /* realloc, calloc, aligned forms */
				q[i] = realloc(q[i], 40000 + i);
			/* through a volatile: the compiler may not elide the pairs */
			sink = calloc(3, 100);
			free(sink);
			if (posix_memalign(&a, 64, 777) == 0)
				free(a);
			sink = aligned_alloc(128, 1024);
			free(sink);
			for (i = 0; i < CHILD_N; i++)
				free(q[i]);
			for (i = k; i < PARENT_N; i += 2) /* blocks the parent allocated */
				free(p[i]);
			exit(0);
		}
	}
	for (k = 0; k < 2; k++) {
		int st;
		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			return 43;
	}
	for (i = 0; i < PARENT_N; i++)
		free(p[i]);
	return 0;
}

#define PRE_N 300u /* the image before the exec (--malloc-exec): sizes 7000 + i */

/* --malloc-exec: known allocations, then this binary again with --malloc
 * through execve (malloc_trace.so's in-process mode writes this image's
 * trace.dat before the exec) */
static int malloc_exec_main(char **envp)
{
	static void *p[PRE_N];
	char *argv[] = {self_exe, (char *)"--malloc", NULL};
	unsigned i;
	pid_t c;
	int st;
	for (i = 0; i < PRE_N; i++)
		if (!(p[i] = malloc(7000 + i)))
			return 44;
	for (i = 0; i < PRE_N; i += 2)
		free(p[i]);
	/* a child of this image: its fork is seq 1, as the first fork of the
	 * image after the exec (same pid): malloc_check must take each child's
	 * inheritance from the image that made its fork */
	c = fork();
	if (c < 0)
		return 46;
	if (c == 0) {
		sink = malloc(9000);
		for (i = 1; i < PRE_N; i += 2)
			free(p[i]);
		exit(0);
	}
	if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 47;
	execve(self_exe, argv, envp);
	return 45;
}

/* ---- the checks ------------------------------------------------------------------- */

static char tmpdir[64];

static int run_recorder(const char *mode, const char *preload, const char *dir, const char *out)
{
	char *argv[16];
	int argc = 0;
	argv[argc++] = (char *)"ringbuf-record";
	argv[argc++] = (char *)"-q";
	argv[argc++] = (char *)"-k";
	argv[argc++] = (char *)"-d";
	argv[argc++] = (char *)dir;
	argv[argc++] = (char *)"-o";
	argv[argc++] = (char *)out;
	if (preload) {
		argv[argc++] = (char *)"--preload";
		argv[argc++] = (char *)preload;
	}
	argv[argc++] = (char *)"--";
	argv[argc++] = self_exe;
	argv[argc++] = (char *)mode;
	argv[argc] = NULL;
	return ringbuf_record_main(argc, argv);
}

/* Load every .dat of out (n at most max), and check that each buffer in
 * dir (NULL: none, in-process) counted as committed what its file holds. */
static size_t load_all(const char *dir, const char *out, struct mc_trace *t, size_t max)
{
	DIR *d = opendir(out);
	struct dirent *e;
	size_t n = 0;
	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		char path[512], rbpath[512];
		struct ringbuf *rb;
		struct ringbuf_stats st;
		size_t len = strlen(e->d_name);
		if (len < 5 || strcmp(e->d_name + len - 4, ".dat") != 0)
			continue;
		assert_true(n < max);
		snprintf(path, sizeof path, "%s/%s", out, e->d_name);
		assert_int_equal(mc_load(strdup(path), &t[n]), 0);
		if (!dir) { /* in-process: no buffer file */
			n++;
			continue;
		}
		snprintf(rbpath, sizeof rbpath, "%s/%.*s.rb", dir, (int)(len - 4), e->d_name);
		memset(&st, 0, sizeof st);
		assert_int_equal(ringbuf_open_file(rbpath, 0, &rb), 0);
		assert_int_equal(ringbuf_stats(rb, &st), 0);
		/* every committed event in the file, and nothing left behind */
		assert_int_equal(st.committed, t[n].n);
		assert_int_equal(st.entries, 0);
		assert_int_equal(st.dropped_events + st.unmapped, 0);
		ringbuf_destroy(rb);
		n++;
	}
	closedir(d);
	return n;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void tree_every_event_once_in_one_file_per_image(void **state)
{
	char dir[128], out[128];
	struct mc_trace t[8];
	size_t n, i, j;
	unsigned seen[TREE_IMAGES] = {0};
	uint64_t total = 0;
	(void)state;
	snprintf(dir, sizeof dir, "%s/tree.rb", tmpdir);
	snprintf(out, sizeof out, "%s/tree.out", tmpdir);
	assert_int_equal(run_recorder("--tree", NULL, dir, out), 0);
	assert_int_equal(WIFEXITED(ringbuf_record_last.command_status), 1);
	assert_int_equal(WEXITSTATUS(ringbuf_record_last.command_status), 0);
	assert_int_equal(ringbuf_record_last.buffers, TREE_IMAGES);
	assert_int_equal(ringbuf_record_last.bad_buffers, 0);
	n = load_all(dir, out, t, 8);
	assert_int_equal(n, TREE_IMAGES);
	for (i = 0; i < n; i++) {
		uint64_t *ptr = malloc(t[i].n * sizeof *ptr), m = 0, index, want;
		assert_non_null(ptr);
		assert_true(t[i].pid >= 0 && t[i].pid < (int64_t)TREE_IMAGES); /* proc: the image's index */
		index = (uint64_t)t[i].pid;
		seen[index]++;
		for (j = 0; j < t[i].n; j++)
			if (t[i].ev[j].kind == MC_MALLOC)
				ptr[m++] = t[i].ev[j].f[0];
		qsort(ptr, m, sizeof *ptr, cmp_u64);
		want = index == 0 ? 2 * TREE_N : TREE_N;
		assert_int_equal(m, want);
		for (j = 0; j < m; j++) /* 1..want, each once */
			if (ptr[j] != ((index << 32) | (j + 1)))
				fail_msg("image %llu: event %llu is 0x%llx", (unsigned long long)index,
					 (unsigned long long)j, (unsigned long long)ptr[j]);
		total += m + 1;
		free(ptr);
		free((char *)t[i].path);
		mc_free_trace(&t[i]);
	}
	for (i = 0; i < TREE_IMAGES; i++)
		assert_int_equal(seen[i], 1);
	assert_int_equal(ringbuf_record_last.events, total);
	print_message("      tree: %zu process images, %llu events, each once\n", n, (unsigned long long)total);
}

static int has_size(const struct mc_trace *t, uint64_t size)
{
	size_t j;
	for (j = 0; j < t->n; j++)
		if (t->ev[j].kind == MC_MALLOC && t->ev[j].f[1] == size)
			return 1;
	return 0;
}

/* The traces of a --malloc run (and of --malloc-exec's first image): every
 * free matches, nothing lost, each known allocation exactly once in its
 * image's trace. Counts the images of each kind (pre_exec may be NULL when
 * none is expected); frees the traces; returns the events. */
static uint64_t check_malloc_traces(struct mc_trace *t, size_t n, struct mc_result *res, unsigned *parents,
				    unsigned *children, unsigned *pre_exec)
{
	unsigned none = 0;
	uint64_t events = 0;
	size_t i, j;
	if (!pre_exec)
		pre_exec = &none;
	assert_int_equal(mc_check(t, n, res), 0);
	for (i = 0; i < n; i++) {
		unsigned marks = 0;
		uint64_t lo, hi;
		assert_int_equal(res[i].unmatched, 0);
		assert_int_equal(res[i].double_alloc, 0);
		assert_int_equal(res[i].lost, 0);
		if (t[i].forked == 1 && has_size(&t[i], 9000)) {
			lo = 9000; /* the child of the image before the exec */
			hi = lo + 1;
			++*pre_exec;
			/* it freed half of that image's blocks: inherited from it */
			assert_true(res[i].inherited >= PRE_N / 2);
		} else if (t[i].forked == 1) {
			/* which child: its sizes 20000 + k * 1000 + i */
			uint64_t k = 2;
			for (j = 0; j < t[i].n; j++)
				if (t[i].ev[j].kind == MC_MALLOC && t[i].ev[j].f[1] >= 20000 && t[i].ev[j].f[1] < 22000) {
					k = (t[i].ev[j].f[1] - 20000) / 1000;
					break;
				}
			assert_true(k < 2);
			lo = 20000 + k * 1000;
			hi = lo + CHILD_N;
			++*children;
			/* it freed half of the parent's blocks: inherited, matched */
			assert_true(res[i].inherited >= PARENT_N);
		} else if (t[i].count[MC_MALLOC] && has_size(&t[i], 7000)) {
			lo = 7000; /* the image before the exec */
			hi = lo + PRE_N;
			++*pre_exec;
		} else {
			lo = 3000;
			hi = lo + PARENT_N;
			++*parents;
		}
		for (j = 0; j < t[i].n; j++)
			if (t[i].ev[j].kind == MC_MALLOC && t[i].ev[j].f[1] >= lo && t[i].ev[j].f[1] < hi)
				marks++;
		assert_int_equal(marks, hi - lo); /* each known allocation once (sizes distinct) */
		if (lo >= 20000) /* a --malloc child: 500 malloc, 250 realloc, calloc, posix_memalign, aligned_alloc */
			assert_true(t[i].count[MC_CALLOC] >= 1 && t[i].count[MC_MEMALIGN] >= 2 &&
				    t[i].count[MC_REALLOC] >= CHILD_N / 2 && t[i].count[MC_REALLOC_FREE] >= CHILD_N / 2);
		events += t[i].n;
		print_message("      pid %lld%s: %llu events, %llu allocations, %llu frees, %llu inherited\n",
			      (long long)t[i].pid, t[i].forked == 1 ? " (fork child)" : "",
			      (unsigned long long)res[i].events, (unsigned long long)res[i].allocs,
			      (unsigned long long)res[i].frees, (unsigned long long)res[i].inherited);
		free((char *)t[i].path);
		mc_free_trace(&t[i]);
	}
	assert_int_equal(none, 0);
	return events;
}

/* malloc_trace.so's path into so, or the test is skipped (and says why). */
static void preload_so(char *so, size_t size)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	skip(); /* the sanitizer's runtime must come first: no LD_PRELOAD of another object */
#endif
#ifdef MALLOC_TRACE_SO
	snprintf(so, size, "%s", MALLOC_TRACE_SO);
#else
	(void)size;
	so[0] = 0;
#endif
	if (!so[0] || access(so, R_OK) != 0) {
		print_message("      skipped: malloc_trace.so not built (%s)\n", so[0] ? so : "MALLOC_TRACE_SO unset");
		skip();
	}
}

static void preload_every_free_matches_an_allocation(void **state)
{
	char dir[128], out[128], so[4096];
	struct mc_trace t[8];
	struct mc_result res[8];
	size_t n;
	unsigned parents = 0, children = 0;
	uint64_t events = 0;
	(void)state;
	preload_so(so, sizeof so);
	snprintf(dir, sizeof dir, "%s/preload.rb", tmpdir);
	snprintf(out, sizeof out, "%s/preload.out", tmpdir);
	assert_int_equal(run_recorder("--malloc", so, dir, out), 0);
	assert_int_equal(WIFEXITED(ringbuf_record_last.command_status), 1);
	assert_int_equal(WEXITSTATUS(ringbuf_record_last.command_status), 0);
	if (ringbuf_record_last.buffers == 0) {
		print_message("      skipped: LD_PRELOAD had no effect here\n");
		skip();
	}
	n = load_all(dir, out, t, 8);
	assert_int_equal(n, 3);
	events = check_malloc_traces(t, n, res, &parents, &children, NULL);
	assert_int_equal(parents, 1);
	assert_int_equal(children, 2);
	assert_int_equal(ringbuf_record_last.events, events);
}

/* In-process (MALLOC_TRACE_OUT, no recorder): this binary runs --malloc-exec
 * with malloc_trace.so preloaded, and each process image writes its own
 * trace.dat from a consumer thread of its own: the image before the exec,
 * and its fork child, the --malloc parent after it (same pid, its first
 * fork also seq 1), its two fork children. The same checks as with the
 * recorder; the first image's trace exists only because the .so writes it
 * before the exec. */
static void inprocess_every_free_matches_an_allocation(void **state)
{
	char out[128], so[4096], env_out[192], env_pre[4200];
	char *argv[] = {self_exe, (char *)"--malloc-exec", NULL};
	char *envp[] = {env_out, env_pre, NULL};
	struct mc_trace t[8];
	struct mc_result res[8];
	unsigned parents = 0, children = 0, pre = 0;
	size_t n;
	int st;
	pid_t c;
	(void)state;
	preload_so(so, sizeof so);
	snprintf(out, sizeof out, "%s/inproc.out", tmpdir);
	snprintf(env_out, sizeof env_out, "MALLOC_TRACE_OUT=%s", out);
	snprintf(env_pre, sizeof env_pre, "LD_PRELOAD=%s", so);
	c = fork();
	assert_true(c >= 0);
	if (c == 0) {
		execve(self_exe, argv, envp);
		_exit(127);
	}
	assert_int_equal(waitpid(c, &st, 0), c);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	if (access(out, F_OK) != 0) {
		print_message("      skipped: LD_PRELOAD had no effect here\n");
		skip();
	}
	n = load_all(NULL, out, t, 8);
	assert_int_equal(n, 5);
	check_malloc_traces(t, n, res, &parents, &children, &pre);
	assert_int_equal(parents, 1);
	assert_int_equal(children, 2);
	assert_int_equal(pre, 2);
}

static void bad_follow_arguments_are_refused(void **state)
{
	char *a1[] = {(char *)"r", (char *)"-d", (char *)"/nonexistent-dir/x", (char *)"-o", tmpdir, NULL};
	char *a2[] = {(char *)"r", (char *)"-d", tmpdir, (char *)"-p", (char *)"1", NULL};
	char *a3[] = {(char *)"r", (char *)"-d", tmpdir, (char *)"--", NULL};
	char *a4[] = {(char *)"r", (char *)"--preload", (char *)"x.so", (char *)"f.rb", NULL};
	(void)state;
	assert_int_equal(ringbuf_record_main(5, a1), RBREC_FILE);
	assert_int_equal(ringbuf_record_main(5, a2), RBREC_USAGE);
	assert_int_equal(ringbuf_record_main(4, a3), RBREC_USAGE);
	assert_int_equal(ringbuf_record_main(4, a4), RBREC_USAGE);
}

/* -d's wait when no page is full (rbrec_wait_ms): 1 ms while the pages taken
 * since the last wait would fill a quarter of the smallest ring in 10 ms,
 * else the time 100 pages a ms take to fill that ring (1 to 10 ms). With a
 * flat 10 ms, sqlite under malloc_trace.so with 2 MiB rings lost 1,406,590
 * of its 8,419,943 events (its rate: 500 pages in 10 ms); with 10 ms while
 * it had not yet shown that rate, 8 to 137 k events at its start in 18 of
 * 80 runs. CPython writes about 105 pages in 10 ms and must not wake the
 * recorder every ms. */
static void the_wait_follows_the_writers_rate(void **state)
{
	(void)state;
	assert_int_equal(rbrec_wait_ms(500, 10.0, 512), 1);  /* sqlite, 2 MiB rings */
	assert_int_equal(rbrec_wait_ms(50, 1.0, 512), 1);    /* the same after a 1 ms wait */
	assert_int_equal(rbrec_wait_ms(105, 10.0, 512), 5);  /* CPython: half of 2 MiB at sqlite's rate */
	assert_int_equal(rbrec_wait_ms(128, 10.0, 512), 1);  /* a quarter in 10 ms */
	assert_int_equal(rbrec_wait_ms(127, 10.0, 512), 5);  /* less */
	assert_int_equal(rbrec_wait_ms(500, 10.0, 2048), 10); /* 8 MiB rings: 40 ms of room */
	assert_int_equal(rbrec_wait_ms(0, 0.5, 512), 5);     /* nothing taken */
	assert_int_equal(rbrec_wait_ms(0, 10.0, 256), 2);    /* 1 MiB rings */
	assert_int_equal(rbrec_wait_ms(0, 10.0, 64), 1);     /* 256 KiB rings */
	assert_int_equal(rbrec_wait_ms(100, 10.0, 0), 10);   /* no ring followed: the watch ends it */
}

/* A buffer announced while -d's loop waits ends the wait (rbrec_watch):
 * the loop used to find it only at its next scan, up to 10 ms later, and
 * sqlite filled its 2 MiB ring before that. The rename that announces a
 * buffer (malloc_trace.c) fires the watch; poll() returns at once (it would
 * give 0 after 10 s without it); the events are read once. */
static void a_buffer_announced_during_a_wait_ends_it(void **state)
{
	char dir[300], tmp[340], name[340];
	struct pollfd p;
	int w, fd;
	(void)state;
#if !defined(__linux__)
	skip();
#endif
	snprintf(dir, sizeof dir, "%s/watch", tmpdir);
	assert_int_equal(mkdir(dir, 0700), 0);
	w = rbrec_watch(dir);
	assert_true(w >= 0);
	assert_int_equal(rbrec_watch_fired(w), 0); /* nothing yet */
	snprintf(tmp, sizeof tmp, "%s/.1-2.rb.tmp", dir);
	snprintf(name, sizeof name, "%s/1-2.rb", dir);
	fd = open(tmp, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(rbrec_watch_fired(w), 1); /* the dot name: a scan skips it */
	assert_int_equal(rename(tmp, name), 0);
	p.fd = w;
	p.events = POLLIN;
	p.revents = 0;
	assert_int_equal(poll(&p, 1, 10000), 1);
	assert_int_equal(rbrec_watch_fired(w), 1);
	assert_int_equal(rbrec_watch_fired(w), 0); /* read once */
	assert_int_equal(rbrec_watch_fired(-1), 1); /* no watch: scan every round */
	close(fd);
	close(w);
}

static int setup_all(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/rb-malloc-trace-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_all(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tree_every_event_once_in_one_file_per_image),
		cmocka_unit_test(preload_every_free_matches_an_allocation),
		cmocka_unit_test(inprocess_every_free_matches_an_allocation),
		cmocka_unit_test(bad_follow_arguments_are_refused),
		cmocka_unit_test(the_wait_follows_the_writers_rate),
		cmocka_unit_test(a_buffer_announced_during_a_wait_ends_it),
	};
	ssize_t len = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
	if (len > 0)
		self_exe[len] = 0;
	else
		snprintf(self_exe, sizeof self_exe, "%s", argv[0]);
	if (argc >= 2 && strcmp(argv[1], "--tree") == 0)
		return tree_main();
	if (argc >= 3 && strcmp(argv[1], "--tree-exec") == 0)
		return tree_exec_main(argv[2]);
	if (argc >= 2 && strcmp(argv[1], "--malloc") == 0)
		return malloc_main();
	if (argc >= 2 && strcmp(argv[1], "--malloc-exec") == 0)
		return malloc_exec_main(environ);
	return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
