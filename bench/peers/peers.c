/* bench/peers/peers.c - ringbuf.h and LTTng-UST side by side (`make bench-peers`).
 *
 * Run by bench/peers/run.sh inside a tracing session it set up: channel
 * "discard" (discard mode) holds ringbuf_bench:discard16, channel "overwrite"
 * holds ringbuf_bench:overwrite16, and ringbuf_bench:off16 is never enabled.
 * Interleaved rounds as in bench/bench.c: every round runs every variant for
 * PEERS_EVENTS events; the table gives median/min/max ns/event and the ratio
 * of the median to the clock_gettime floor of the same run (bench_common.h).
 *
 * Loops are timed by the thread's CPU time, as in bench/bench.c (BENCH_TIME=wall
 * for wall-clock time); the consumer daemon's work on other CPUs is not counted.
 *
 * Environment: BENCH_QUICK=1, BENCH_ROUNDS, BENCH_EVENTS (default 2 000 000),
 * BENCH_TIME=wall, BENCH_JSON (default build/bench-peers.json).
 */
#define _GNU_SOURCE 1
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <sched.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench_common.h"
#include "ringbuf_bench_tp.h"

#ifndef BENCH_BUILD
#define BENCH_BUILD "(unknown: build with `make bench-peers`)"
#endif

#define MAX_ROUNDS 31

DEFINE_FLOOR(floor_clock_16, 16, TS_GETTIME)
DEFINE_RB_LOOP(16)

static struct ringbuf *rb;

/* One loop per tracepoint: the tracepoint() call site is expanded in place. */
#define DEFINE_LTTNG_LOOP(EV)                                                  \
	static BENCH_NOINLINE void lttng_loop_##EV(size_t n)                   \
	{                                                                      \
		uint64_t src[2] = { 0, 0x5a5a5a5a5a5a5a5aull };                \
		for (size_t i = 0; i < n; i++) {                               \
			src[0] = i;                                            \
			BENCH_OPAQUE(src);                                     \
			tracepoint(ringbuf_bench, EV, src[0], src[1]);         \
		}                                                              \
	}
DEFINE_LTTNG_LOOP(discard16)
DEFINE_LTTNG_LOOP(overwrite16)
DEFINE_LTTNG_LOOP(off16)

static void rb_16(size_t n) { (void)rb_loop_16(rb, 0, n); }

static bool time_wall;

static uint64_t bench_clock(void)
{
	struct timespec t;
	if (time_wall)
		return now_ns();
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

struct variant {
	const char *id, *what;
	void (*loop)(size_t n);
	int enabled; /* 1: run; 0: tracepoint not enabled by the session (skipped) */
	double s[MAX_ROUNDS];
	int ns;
	double med, min, max;
};

#define V(ID, WHAT, LOOP) { .id = ID, .what = WHAT, .loop = LOOP, .enabled = 1 }
static struct variant variants[] = {
	V("floor_clock_16", "floor (b) clock_gettime, 16 B", floor_clock_16_loop),
	V("rb_clock_16", "ringbuf.h reserve+fill+commit, 16 B", rb_16),
	V("lttng_discard_16", "LTTng-UST, discard channel, 16 B", lttng_loop_discard16),
	V("lttng_overwrite_16", "LTTng-UST, overwrite channel, 16 B", lttng_loop_overwrite16),
	V("lttng_off_16", "LTTng-UST, tracepoint not enabled, 16 B", lttng_loop_off16),
};
#define NV (sizeof variants / sizeof variants[0])

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static long env_long(const char *name, long def)
{
	const char *s = getenv(name);
	long v = s && *s ? strtol(s, NULL, 10) : def;
	return v > 0 ? v : def;
}

int main(void)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	const char *json = getenv("BENCH_JSON");
	bool quick = getenv("BENCH_QUICK") && strcmp(getenv("BENCH_QUICK"), "0");
	int rounds = (int)env_long("BENCH_ROUNDS", quick ? 3 : 7);
	size_t events = (size_t)env_long("BENCH_EVENTS", quick ? 200000 : 2000000);
	double floor_med = 0;
	cpu_set_t set;
	FILE *f;

	if (rounds > MAX_ROUNDS)
		rounds = MAX_ROUNDS;
	time_wall = getenv("BENCH_TIME") && !strcmp(getenv("BENCH_TIME"), "wall");
	if (!json)
		json = "build/bench-peers.json";
	setvbuf(stdout, NULL, _IOLBF, 0);
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	(void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
	if (ringbuf_create(&cfg, &rb) < 0) {
		fprintf(stderr, "peers: ringbuf_create failed\n");
		return 1;
	}
	if (!tracepoint_enabled(ringbuf_bench, discard16))
		variants[2].enabled = 0;
	if (!tracepoint_enabled(ringbuf_bench, overwrite16))
		variants[3].enabled = 0;
	if (!variants[2].enabled && !variants[3].enabled)
		printf("warning: no LTTng tracepoint is enabled: no session daemon or session?\n");

	printf("peers: %d rounds x %zu events per variant%s, timed by %s\nbuild: %s\n", rounds,
	       events, quick ? " (BENCH_QUICK)" : "", time_wall ? "wall-clock time" : "thread CPU time",
	       BENCH_BUILD);
	for (size_t k = 0; k < NV; k++) /* warm-up, not recorded */
		if (variants[k].enabled)
			variants[k].loop(events < 200000 ? events : 200000);
	for (int r = 0; r < rounds; r++) {
		for (size_t j = 0; j < NV; j++) {
			struct variant *v = &variants[(j + (size_t)r) % NV];
			uint64_t t0;
			if (!v->enabled)
				continue;
			t0 = bench_clock();
			v->loop(events);
			v->s[v->ns++] = (double)(bench_clock() - t0) / (double)events;
		}
	}
	for (size_t k = 0; k < NV; k++) {
		struct variant *v = &variants[k];
		double t[MAX_ROUNDS];
		if (!v->ns)
			continue;
		memcpy(t, v->s, sizeof(double) * (size_t)v->ns);
		qsort(t, (size_t)v->ns, sizeof t[0], cmp_double);
		v->min = t[0];
		v->max = t[v->ns - 1];
		v->med = v->ns % 2 ? t[v->ns / 2] : (t[v->ns / 2 - 1] + t[v->ns / 2]) / 2;
	}
	floor_med = variants[0].med;

	printf("\n%-20s %-42s %9s %9s %9s  %s\n", "id", "variant", "median", "min", "max",
	       "x floor (b)");
	for (size_t k = 0; k < NV; k++) {
		struct variant *v = &variants[k];
		if (!v->ns) {
			printf("%-20s %-42s skipped: tracepoint not enabled\n", v->id, v->what);
			continue;
		}
		printf("%-20s %-42s %9.2f %9.2f %9.2f  %6.2fx\n", v->id, v->what, v->med, v->min,
		       v->max, floor_med > 0 ? v->med / floor_med : 0);
	}

	if (!strcmp(json, "-"))
		return 0;
	f = fopen(json, "w");
	if (!f) {
		perror(json);
		return 1;
	}
	fprintf(f, "{\n  \"build\": \"%s\", \"rounds\": %d, \"events_per_round\": %zu, \"timing\": \"%s\",\n",
		BENCH_BUILD, rounds, events, time_wall ? "wall" : "thread_cpu");
	fprintf(f, "  \"variants\": [\n");
	for (size_t k = 0; k < NV; k++) {
		struct variant *v = &variants[k];
		fprintf(f, "    { \"id\": \"%s\", \"what\": \"%s\"", v->id, v->what);
		if (v->ns)
			fprintf(f, ", \"median\": %.4g, \"min\": %.4g, \"max\": %.4g, \"ratio\": %.4g }",
				v->med, v->min, v->max, floor_med > 0 ? v->med / floor_med : 0);
		else
			fprintf(f, ", \"skipped\": \"tracepoint not enabled\" }");
		fprintf(f, "%s\n", k + 1 < NV ? "," : "");
	}
	/* run.sh fills this in after stopping the session */
	fprintf(f, "  ],\n  \"lttng_discarded_events\": null\n}\n");
	fclose(f);
	printf("\nwrote %s\n", json);
	ringbuf_destroy(rb);
	return 0;
}
