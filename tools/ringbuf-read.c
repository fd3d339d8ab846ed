/* ringbuf-read - print or export a file-backed ringbuf.h flight-recorder buffer.
 *
 *   ringbuf-read [--recover|--live] [--text|--tracedat OUT.dat] [--cpu N] [--max N] FILE.rb
 *
 * The file is a buffer made with ringbuf_create_file() whose user area holds the
 * event formats and thread names (ringbuf_trace_store_registry()). By default
 * the tool asks whether the process that stored them still runs: if it does,
 * the buffer is read live (a private copy; the file is not changed), otherwise
 * it is opened with RINGBUF_OPEN_RECOVER (events cut by the crash are dropped,
 * every committed one is kept). --recover / --live force the mode.
 *
 * --text (default) prints kernel-style lines, merged over the CPU buffers in
 * time order, with "CPU:N [LOST K EVENTS]" lines; --tracedat writes a trace.dat
 * for trace-cmd report / KernelShark. --cpu N: one CPU buffer only (text);
 * --max N: at most N events (text). Statistics go to stderr at the end.
 *
 * Exit status: 0 success, 1 usage error, 2 file error (missing, foreign,
 * truncated, corrupted buffer or user area; output not writable).
 *
 * Built by `make tools` into build/tools/ringbuf-read. Defining
 * RINGBUF_READ_TOOL_NO_MAIN before including this file gives
 * ringbuf_read_main(argc, argv) instead of main (used by the tests).
 */
#define _GNU_SOURCE 1
#define RINGBUF_IMPLEMENTATION
#include "ringbuf_trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RBREAD_OK 0
#define RBREAD_USAGE 1
#define RBREAD_FILE 2

static void rbread_usage(FILE *f)
{
	fprintf(f, "usage: ringbuf-read [--recover|--live] [--text|--tracedat OUT.dat] [--cpu N] [--max N] FILE.rb\n"
		   "  --recover         the writer is gone: repair a private copy (default when it is gone)\n"
		   "  --live            the writer runs: read a private snapshot (default when it runs)\n"
		   "  --text            print the events as text (default)\n"
		   "  --tracedat FILE   write a trace.dat for trace-cmd report / KernelShark\n"
		   "  --cpu N           text: only CPU buffer N\n"
		   "  --max N           text: at most N events\n"
		   "exit status: 0 ok, 1 usage error, 2 file error\n");
}

/* What an error of ringbuf_open_file() means for a buffer file (after
 * ringbuf_strerror()'s text). */
static const char *rbread_why(int err)
{
	switch (err) {
	case RINGBUF_EFORMAT: return " (not a buffer made by ringbuf_create_file())";
	case RINGBUF_ETRUNC: return " (cut short, e.g. copied while being created)";
	case RINGBUF_ECORRUPT: return " (its header, pages or links failed validation)";
	default: return "";
	}
}

static void rbread_file_error(const char *path, const char *what, int err)
{
	int e = errno;
	if (err == RINGBUF_ESYS)
		fprintf(stderr, "ringbuf-read: %s: %s%s\n", path, what, strerror(e));
	else
		fprintf(stderr, "ringbuf-read: %s: %s%s%s\n", path, what, ringbuf_strerror(err), rbread_why(err));
}

static int rbread_num(const char *s, unsigned long long max, unsigned long long *v)
{
	char *end;
	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || *end || *v > max ? -1 : 0;
}

struct rbread_text {
	const struct ringbuf_trace_registry *reg;
	FILE *out;
	char *line;
	size_t size;
	unsigned long long events, lost, lost_unknown;
	int err;
};

static int rbread_print_one(const struct ringbuf_record *rec, void *ctx)
{
	struct rbread_text *t = (struct rbread_text *)ctx;
	int n;
	if (rec->lost == RINGBUF_TRACE_LOST_UNKNOWN) {
		fprintf(t->out, "CPU:%u [LOST EVENTS]\n", rec->cpu);
		t->lost_unknown++;
	} else if (rec->lost) {
		fprintf(t->out, "CPU:%u [LOST %llu EVENTS]\n", rec->cpu, (unsigned long long)rec->lost);
		t->lost += rec->lost;
	}
	n = ringbuf_trace_format_record(t->reg, rec, 0, t->line, t->size);
	if (n < 0)
		return n;
	if ((size_t)n >= t->size) {
		char *l = (char *)realloc(t->line, (size_t)n + 1);
		if (!l)
			return RINGBUF_ENOMEM;
		t->line = l;
		t->size = (size_t)n + 1;
		ringbuf_trace_format_record(t->reg, rec, 0, t->line, t->size);
	}
	fputs(t->line, t->out);
	fputc('\n', t->out);
	t->events++;
	return 0;
}

#ifdef RINGBUF_READ_TOOL_NO_MAIN
int ringbuf_read_main(int argc, char **argv);
int ringbuf_read_main(int argc, char **argv)
#else
int main(int argc, char **argv)
#endif
{
	const char *path = NULL, *dat = NULL, *mode;
	int force = 0; /* 1 recover, 2 live */
	unsigned cpu = RINGBUF_ALL_CPUS;
	unsigned long long max = 0, v;
	struct ringbuf *rb = NULL;
	struct ringbuf_trace_registry reg;
	struct ringbuf_stats st;
	int i, r, alive, rc = RBREAD_OK;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--recover") == 0 || strcmp(a, "--live") == 0) {
			int want = a[2] == 'r' ? 1 : 2;
			if (force && force != want) {
				fprintf(stderr, "ringbuf-read: --recover and --live exclude each other\n");
				return RBREAD_USAGE;
			}
			force = want;
		} else if (strcmp(a, "--text") == 0) {
			dat = NULL;
		} else if (strcmp(a, "--tracedat") == 0 && i + 1 < argc) {
			dat = argv[++i];
		} else if (strcmp(a, "--cpu") == 0 && i + 1 < argc) {
			if (rbread_num(argv[++i], 1u << 20, &v) < 0) {
				fprintf(stderr, "ringbuf-read: bad --cpu '%s'\n", argv[i]);
				return RBREAD_USAGE;
			}
			cpu = (unsigned)v;
		} else if (strcmp(a, "--max") == 0 && i + 1 < argc) {
			if (rbread_num(argv[++i], (unsigned long long)SIZE_MAX, &max) < 0) {
				fprintf(stderr, "ringbuf-read: bad --max '%s'\n", argv[i]);
				return RBREAD_USAGE;
			}
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			rbread_usage(stdout);
			return RBREAD_OK;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "ringbuf-read: unknown or incomplete option '%s'\n", a);
			rbread_usage(stderr);
			return RBREAD_USAGE;
		} else if (!path) {
			path = a;
		} else {
			fprintf(stderr, "ringbuf-read: more than one FILE ('%s', '%s')\n", path, a);
			return RBREAD_USAGE;
		}
	}
	if (!path) {
		rbread_usage(stderr);
		return RBREAD_USAGE;
	}

	/* Read-only first: the header, the geometry and the user area (a private
	 * copy), to learn whether the writer still runs. */
	r = ringbuf_open_file(path, 0, &rb);
	if (r < 0) {
		rbread_file_error(path, "", r);
		return RBREAD_FILE;
	}
	alive = ringbuf_trace_writer_alive(rb);
	if (alive < 0) {
		if (alive == RINGBUF_EFORMAT)
			fprintf(stderr, "ringbuf-read: %s: no event formats in the user area: the writer "
					"must size it with ringbuf_trace_user_size() and call "
					"ringbuf_trace_store_registry()\n", path);
		else
			fprintf(stderr, "ringbuf-read: %s: corrupted user area: %s\n", path,
				alive == RINGBUF_EVERSION ? "written by another ringbuf_trace.h version"
							  : "bad header");
		ringbuf_destroy(rb);
		return RBREAD_FILE;
	}
	if (force == 1 || (!force && !alive)) {
		ringbuf_destroy(rb);
		rb = NULL;
		r = ringbuf_open_file(path, RINGBUF_OPEN_RECOVER, &rb);
		if (r < 0) {
			rbread_file_error(path, "recovery failed: ", r);
			return RBREAD_FILE;
		}
		mode = "recovered";
		if (alive)
			fprintf(stderr, "ringbuf-read: warning: writer %d still runs; --recover reads a copy "
					"that may hold events it is writing\n",
				(int)ringbuf_trace_writer_pid(rb));
	} else {
		mode = "live";
	}
	r = ringbuf_trace_load_registry(rb, &reg);
	if (r < 0) {
		fprintf(stderr, "ringbuf-read: %s: %s\n", path,
			r == RINGBUF_ECORRUPT ? "corrupted user area: the stored event formats failed validation"
			: r == RINGBUF_EVERSION ? "corrupted user area: written by another ringbuf_trace.h version"
			: r == RINGBUF_EFORMAT ? "no event formats in the user area"
					       : ringbuf_strerror(r));
		ringbuf_destroy(rb);
		return RBREAD_FILE;
	}
	if (cpu != RINGBUF_ALL_CPUS && cpu >= ringbuf_ncpu(rb)) {
		fprintf(stderr, "ringbuf-read: --cpu %u: the buffer has %u CPU buffers (0..%u)\n", cpu,
			ringbuf_ncpu(rb), ringbuf_ncpu(rb) - 1);
		ringbuf_trace_registry_free(&reg);
		ringbuf_destroy(rb);
		return RBREAD_USAGE;
	}
	if (dat && (cpu != RINGBUF_ALL_CPUS || max))
		fprintf(stderr, "ringbuf-read: note: --cpu and --max apply to text only; trace.dat gets all\n");

	/* statistics before reading: read_events changes as we consume */
	memset(&st, 0, sizeof st);
	ringbuf_stats(rb, &st);

	if (dat) {
		struct ringbuf_trace_tracedat_opts o = RINGBUF_TRACE_TRACEDAT_INIT;
		o.clock = ringbuf_clock_name(rb);
		r = ringbuf_trace_save_tracedat(rb, &reg, dat, &o);
		if (r < 0) {
			fprintf(stderr, "ringbuf-read: %s: cannot write trace.dat: %s (%s)\n", dat,
				ringbuf_strerror(r), strerror(errno));
			rc = RBREAD_FILE;
		}
		fprintf(stderr, "ringbuf-read: %s (%s, %u CPU buffers) -> %s\n", path, mode, ringbuf_ncpu(rb),
			dat);
	} else {
		struct rbread_text t;
		memset(&t, 0, sizeof t);
		t.reg = &reg;
		t.out = stdout;
		t.size = 512;
		t.line = (char *)malloc(t.size);
		if (!t.line) {
			fprintf(stderr, "ringbuf-read: out of memory\n");
			rc = RBREAD_FILE;
		} else {
			r = ringbuf_trace_consume_foreach(rb, cpu, (size_t)max, rbread_print_one, &t);
			if (r < 0) {
				rbread_file_error(path, "reading stopped: ", r);
				rc = RBREAD_FILE;
			}
			if (fflush(stdout) != 0 || ferror(stdout)) {
				fprintf(stderr, "ringbuf-read: writing the text failed: %s\n", strerror(errno));
				rc = RBREAD_FILE;
			}
			fprintf(stderr, "ringbuf-read: %s (%s, %u CPU buffers): %llu events printed, "
					"%llu lost before them%s\n",
				path, mode, ringbuf_ncpu(rb), t.events, t.lost,
				t.lost_unknown ? " (and gaps of unknown size)" : "");
			free(t.line);
		}
	}
	fprintf(stderr, "ringbuf-read: committed %llu, overrun %llu, lost %llu (dropped %llu, commit overrun %llu), "
			"entries %llu, writer pid %d %s\n",
		(unsigned long long)st.committed, (unsigned long long)st.overrun,
		(unsigned long long)(st.overrun + st.dropped_events + st.commit_overrun),
		(unsigned long long)st.dropped_events, (unsigned long long)st.commit_overrun,
		(unsigned long long)st.entries, (int)ringbuf_trace_writer_pid(rb),
		alive ? "(running)" : "(gone)");
	ringbuf_trace_registry_free(&reg);
	ringbuf_destroy(rb);
	return rc;
}
