#!/usr/bin/env bash
# run.sh - cost per traced call (entry + exit) of the function tracer, side by
# side with uftrace when it is installed (make bench-ftrace).
#
#   bench/ftrace/run.sh BUILD_DIR        (CC, CFLAGS, FTRACE_N, FTRACE_ROUNDS)
#
# bench/ftrace/fib.c is built three ways: untraced; -finstrument-functions with
# ringbuf_ftrace.h (funcgraph_entry/exit into a 1 MiB per-CPU buffer,
# overwrite mode: a flight recorder, no live reader), with the default clock
# and with the TSC clock (each traced call reads the clock four times: two
# record time stamps, calltime and rettime); -pg for `uftrace record`
# (its default options, recording to a temporary directory). Each round runs
# every variant once, in turn; the program times its own fib(n) call (thread
# CPU time: other processes on a shared machine do not count), so
# start-up and the recorder's file writing are outside the timed part.
# Reported: the median ns per call over the rounds, the overhead per call
# (traced - untraced) and the ratio of overheads, all from the same run.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-build}/bench-ftrace
CC=${CC:-cc}
CFLAGS=${CFLAGS:--O2 -g}
# every fib call stays a call in every variant: no tail recursion with an
# accumulator (gcc turns one of the two calls into a loop otherwise, but not
# under -finstrument-functions)
FIBFLAGS=-fno-optimize-sibling-calls
n=${FTRACE_N:-27}
rounds=${FTRACE_ROUNDS:-5}
mkdir -p "$out"
# shellcheck disable=SC2086 # CFLAGS is a list of flags
{
	$CC $CFLAGS $FIBFLAGS -I"$root" -o "$out/fib_plain" "$root/bench/ftrace/fib.c"
	$CC $CFLAGS -std=c11 -pthread -I"$root" -c -o "$out/impl.o" "$root/bench/ftrace/impl.c"
	$CC $CFLAGS $FIBFLAGS -DRB -finstrument-functions -pthread -I"$root" -o "$out/fib_rb" \
		"$root/bench/ftrace/fib.c" "$out/impl.o"
	$CC $CFLAGS $FIBFLAGS -DRB -DTSC -finstrument-functions -pthread -I"$root" -o "$out/fib_rb_tsc" \
		"$root/bench/ftrace/fib.c" "$out/impl.o"
}
have_uftrace=0
if command -v uftrace >/dev/null 2>&1; then
	# shellcheck disable=SC2086
	$CC $CFLAGS $FIBFLAGS -pg -o "$out/fib_pg" "$root/bench/ftrace/fib.c" && have_uftrace=1
fi

ns_of() { sed -n 's/.*ns_per_call=\([0-9.]*\).*/\1/p'; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
: > "$out/plain"; : > "$out/rb"; : > "$out/rb_tsc"; : > "$out/uftrace"
for ((r = 0; r < rounds; r++)); do
	"$out/fib_plain" "$n" | ns_of >> "$out/plain"
	line=$("$out/fib_rb" "$n")
	echo "$line" | ns_of >> "$out/rb"
	"$out/fib_rb_tsc" "$n" | ns_of >> "$out/rb_tsc"
	if [ $have_uftrace = 1 ]; then
		rm -rf "$out/uftrace.data"
		uftrace record -d "$out/uftrace.data" "$out/fib_pg" "$n" 2>/dev/null | ns_of >> "$out/uftrace"
	fi
done
plain=$(median < "$out/plain")
rb=$(median < "$out/rb")
rbt=$(median < "$out/rb_tsc")
echo "function tracer: fib($n), $(sed -n 's/.*calls=\([0-9]*\).*/\1/p' <<<"$line") calls, median of $rounds rounds (ns per call, entry + exit)"
echo "  ringbuf run: ${line#* calls=* }"
awk -v p="$plain" -v r="$rb" -v t="$rbt" 'BEGIN {
	printf "  %-34s %8.2f ns\n", "untraced", p
	printf "  %-34s %8.2f ns   overhead %7.2f ns/call  (%.1fx untraced)\n", "ringbuf_ftrace, CLOCK_MONOTONIC", r, r - p, r / p
	printf "  %-34s %8.2f ns   overhead %7.2f ns/call  (%.1fx untraced)\n", "ringbuf_ftrace, TSC clock", t, t - p, t / p }'
if [ $have_uftrace = 1 ] && [ -s "$out/uftrace" ]; then
	uf=$(median < "$out/uftrace")
	awk -v p="$plain" -v r="$rb" -v t="$rbt" -v u="$uf" 'BEGIN {
	printf "  %-34s %8.2f ns   overhead %7.2f ns/call  (%.1fx untraced)\n", "uftrace record (-pg)", u, u - p, u / p
	printf "  overhead ratio ringbuf_ftrace / uftrace: %.2f (CLOCK_MONOTONIC), %.2f (TSC) (goal <= 0.33)\n", (r - p) / (u - p), (t - p) / (u - p) }'
else
	echo "  uftrace: not installed (apt-get install uftrace): no side-by-side numbers"
fi
