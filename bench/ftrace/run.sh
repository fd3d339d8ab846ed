#!/usr/bin/env bash
# run.sh - cost per traced call (entry + exit) of the function tracer, side by
# side with uftrace and LTTng-UST's cyg-profile wrapper when they are installed
# (make bench-ftrace).
#
#   bench/ftrace/run.sh BUILD_DIR        (CC, CFLAGS, FTRACE_N, FTRACE_ROUNDS)
#
# bench/ftrace/fib.c is built: untraced; -finstrument-functions with
# ringbuf_ftrace.h (a 1 MiB per-CPU buffer, overwrite mode: a flight recorder,
# no live reader): funcgraph_entry/exit with the clock ringbuf_ftrace_start
# picks (the TSC when it is invariant), the same with CLOCK_MONOTONIC
# (RINGBUF_FTRACE_KEEP_CLOCK), the `function` event (one record per call),
# and funcgraph in producer/consumer mode with a live recorder thread
# reading whole pages (ringbuf_read_page) and sleeping in ringbuf_wait until
# half the ring is unread, as ringbuf-record does (its losses are reported); and the
# floor (bench/ftrace/floor.c: hooks that write the same two records per call
# through the same trace header, reserve/commit and record stamps, and do
# nothing else: not a tracer, the least this ring buffer's write path costs
# for function_graph); the clock alone (the same hooks reading the buffer's
# clock once each and writing nothing: what recording entry and return times
# costs any tracer here); the graph tracer without its filter on "fib" (the
# peers trace every function; fib is the only one called); -pg for `uftrace record`
# (its default options, recording to a temporary directory);
# -finstrument-functions with LD_PRELOAD=liblttng-ust-cyg-profile.so and
# -fast.so, in an LTTng session of its own (a user-space channel of 4 x 256 KiB
# sub-buffers = 1 MiB per CPU, discard mode, both providers' events enabled).
# Each round runs every variant once, in turn; the program times its own
# fib(n) call (thread CPU time: other processes on a shared machine, the live
# recorder thread and LTTng's consumer daemon do not count), so start-up and
# the recorders' file writing are outside the timed part. Reported: the median
# ns per call over the rounds, the overhead per call (traced - untraced) and
# the ratios of overheads to uftrace's and LTTng's, all from the same run.
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
rounds=${FTRACE_ROUNDS:-7}
mkdir -p "$out"
rbvariants="rb rb_nofilter rb_mono rb_func rb_live rb_floor rb_clock"
# shellcheck disable=SC2086 # CFLAGS is a list of flags
{
	$CC $CFLAGS $FIBFLAGS -I"$root" -o "$out/fib_plain" "$root/bench/ftrace/fib.c"
	$CC $CFLAGS -std=c11 -pthread -I"$root" -c -o "$out/impl.o" "$root/bench/ftrace/impl.c"
	$CC $CFLAGS -std=c11 -pthread -I"$root" -c -o "$out/floor.o" "$root/bench/ftrace/floor.c"
	$CC $CFLAGS -std=c11 -pthread -DCLOCK_ONLY -I"$root" -c -o "$out/clock.o" "$root/bench/ftrace/floor.c"
	for v in $rbvariants; do
		impl=impl
		case $v in
		rb) d="" ;; rb_nofilter) d=-DNOFILTER ;; rb_mono) d=-DKEEP ;; rb_func) d=-DFUNC ;; rb_live) d=-DLIVE ;;
		rb_floor) d="" impl=floor ;; rb_clock) d="" impl=clock ;;
		esac
		$CC $CFLAGS $FIBFLAGS -DRB $d -finstrument-functions -pthread -I"$root" -o "$out/fib_$v" \
			"$root/bench/ftrace/fib.c" "$out/$impl.o"
	done
}
# the fentry NOP sites (gcc, x86-64): never patched, and patched for the
# `function` event (compiled with -pg, linked without: gcrt1.o writes gmon.out)
FENTRY="-pg -mfentry -mnop-mcount -mrecord-mcount -fno-pie"
have_fentry=0
# shellcheck disable=SC2086
if [ "$(uname -m)" = x86_64 ] &&
	$CC $CFLAGS $FIBFLAGS $FENTRY -I"$root" -c -o "$out/fib_fnop.o" "$root/bench/ftrace/fib.c" 2>/dev/null &&
	$CC $CFLAGS $FIBFLAGS $FENTRY -DRB -DFUNC -DFENTRY -pthread -I"$root" -c -o "$out/fib_fentry.o" \
		"$root/bench/ftrace/fib.c" &&
	$CC -no-pie -o "$out/fib_fnop" "$out/fib_fnop.o" &&
	$CC -no-pie -pthread -o "$out/fib_rb_fentry" "$out/fib_fentry.o" "$out/impl.o"; then
	have_fentry=1
	rbvariants="$rbvariants rb_fentry"
else
	echo "fentry: gcc's -pg -mfentry -mnop-mcount -mrecord-mcount (x86-64) not available: no fentry rows"
fi
have_uftrace=0
if command -v uftrace >/dev/null 2>&1; then
	# shellcheck disable=SC2086
	$CC $CFLAGS $FIBFLAGS -pg -o "$out/fib_pg" "$root/bench/ftrace/fib.c" && have_uftrace=1
else
	echo "uftrace: not installed (apt-get install -y uftrace): no uftrace numbers"
fi

# LTTng-UST: the cyg-profile wrappers (liblttng-ust-dev) and the session tools
# (lttng-tools); installed here when run as root, else the line to run
lttng_libs() { ldconfig -p 2>/dev/null | grep -q 'liblttng-ust-cyg-profile-fast\.so\.1 ' && command -v lttng >/dev/null 2>&1 && command -v lttng-sessiond >/dev/null 2>&1; }
have_lttng=0
if ! lttng_libs && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "LTTng: installing liblttng-ust-dev lttng-tools (apt-get, as root)"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q liblttng-ust-dev lttng-tools >/dev/null 2>&1 || true
fi
if lttng_libs; then
	# shellcheck disable=SC2086
	$CC $CFLAGS $FIBFLAGS -finstrument-functions -o "$out/fib_cyg" "$root/bench/ftrace/fib.c" && have_lttng=1
else
	echo "LTTng: skipped: liblttng-ust-cyg-profile or lttng-tools missing (apt-get install -y liblttng-ust-dev lttng-tools)"
fi
tmp=""
sd=""
session="ringbuf-ftrace-$$"
cleanup() {
	if [ -n "$tmp" ]; then
		lttng destroy "$session" >/dev/null 2>&1 || true
		if [ -n "$sd" ]; then
			kill "$sd" 2>/dev/null || true
			wait "$sd" 2>/dev/null || true
		fi
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT INT TERM
if [ $have_lttng = 1 ]; then
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/ringbuf-ftrace.XXXXXX")
	# a session daemon already running (another user of the machine) is
	# shared, with a session of our own; else one of our own, stopped after
	if ! lttng list >/dev/null 2>&1; then
		lttng-sessiond --no-kernel >"$tmp/sessiond.log" 2>&1 &
		sd=$!
		i=0
		until lttng list >/dev/null 2>&1; do
			i=$((i + 1))
			if [ $i -gt 100 ] || ! kill -0 "$sd" 2>/dev/null; then
				echo "LTTng: skipped: lttng-sessiond did not start:"
				sed 's/^/  /' "$tmp/sessiond.log"
				have_lttng=0
				break
			fi
			sleep 0.1
		done
	fi
fi
if [ $have_lttng = 1 ]; then
	if lttng create "$session" --output="$tmp/trace" >/dev/null &&
		lttng enable-channel -s "$session" -u --discard --subbuf-size=256K --num-subbuf=4 cyg >/dev/null &&
		lttng enable-event -s "$session" -u -c cyg 'lttng_ust_cyg_profile:*' >/dev/null &&
		lttng enable-event -s "$session" -u -c cyg 'lttng_ust_cyg_profile_fast:*' >/dev/null &&
		lttng start "$session" >/dev/null; then
		echo "LTTng: $(lttng --version | head -n 1), session $session (1 MiB per CPU, discard mode)"
	else
		echo "LTTng: skipped: could not set up the session"
		have_lttng=0
	fi
fi

ns_of() { sed -n 's/.*ns_per_call=\([0-9.]*\).*/\1/p'; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }
for v in plain fnop $rbvariants uftrace lttng lttng_fast rb_live.lost; do : > "$out/$v"; done
for ((r = 0; r < rounds; r++)); do
	"$out/fib_plain" "$n" | ns_of >> "$out/plain"
	[ $have_fentry = 0 ] || "$out/fib_fnop" "$n" | ns_of >> "$out/fnop"
	for v in $rbvariants; do
		line=$("$out/fib_$v" "$n")
		echo "$line" | ns_of >> "$out/$v"
		echo "$line" > "$out/$v.last"
		if [ "$v" = rb_live ]; then
			echo "$line" | sed -n 's/.*lost=\([0-9]*\).*/\1/p' >> "$out/rb_live.lost"
			echo "$line" | sed -n 's/.*pinned=\([a-z]*\).*/\1/p' > "$out/rb_live.pinned"
		fi
	done
	if [ $have_uftrace = 1 ]; then
		rm -rf "$out/uftrace.data"
		uftrace record -d "$out/uftrace.data" "$out/fib_pg" "$n" 2>/dev/null | ns_of >> "$out/uftrace"
	fi
	if [ $have_lttng = 1 ]; then
		LD_PRELOAD=liblttng-ust-cyg-profile.so.1 "$out/fib_cyg" "$n" | ns_of >> "$out/lttng"
		LD_PRELOAD=liblttng-ust-cyg-profile-fast.so.1 "$out/fib_cyg" "$n" | ns_of >> "$out/lttng_fast"
	fi
done
if [ $have_lttng = 1 ]; then
	stop_out=$(lttng stop "$session" 2>&1 || true)
	discarded=$(printf '%s\n' "$stop_out" | sed -n 's/.*[^0-9]\([0-9][0-9]*\) events* were discarded.*/\1/p' | head -n 1)
	echo "LTTng: events discarded by its 1 MiB per-CPU channel (all LTTng rounds): ${discarded:-0}"
fi

plain=$(median < "$out/plain")
calls=$(sed -n 's/.*calls=\([0-9]*\).*/\1/p' "$out/rb.last")
echo "function tracer: fib($n), $calls calls, median of $rounds rounds (ns per call, entry + exit; thread CPU time)"
echo "  last ringbuf run: $(sed 's/.*calls=[0-9]* //' "$out/rb.last")"
echo "  live recorder (producer/consumer, 1 MiB, a thread reading whole pages and sleeping in ringbuf_wait until half the ring is unread, started first; recorder and fib on CPUs 1 and 0: $(cat "$out/rb_live.pinned" 2>/dev/null || echo no)): records lost per round: $(tr '\n' ' ' < "$out/rb_live.lost")(of $((2 * calls)))"
uf=$(median < "$out/uftrace")
lt=$(median < "$out/lttng")
ltf=$(median < "$out/lttng_fast")
row() { # label median
	awk -v l="$1" -v x="$2" -v p="$plain" -v u="$uf" -v t="$lt" -v f="$ltf" 'BEGIN {
		o = x - p; s = ""
		if (u != "") s = s sprintf("  %.2fx uftrace", o / (u - p))
		if (t != "") s = s sprintf("  %.2fx lttng", o / (t - p))
		if (f != "") s = s sprintf("  %.2fx lttng-fast", o / (f - p))
		printf "  %-40s %8.2f ns   overhead %7.2f ns/call%s\n", l, x, o, s }'
}
printf "  %-40s %8.2f ns\n" "untraced" "$plain"
row "ringbuf_ftrace graph, TSC (default)" "$(median < "$out/rb")"
row "graph, no filter (as the peers run)" "$(median < "$out/rb_nofilter")"
row "ringbuf_ftrace graph, CLOCK_MONOTONIC" "$(median < "$out/rb_mono")"
row "ringbuf_ftrace function (1 record)" "$(median < "$out/rb_func")"
row "graph, live recorder (waits for 50%)" "$(median < "$out/rb_live")"
row "floor: 2 bare records/call (no tracer)" "$(median < "$out/rb_floor")"
row "clock alone: 2 reads/call, no record" "$(median < "$out/rb_clock")"
if [ $have_fentry = 1 ]; then
	row "fentry NOP sites, not patched" "$(median < "$out/fnop")"
	row "ringbuf_ftrace function, fentry patched" "$(median < "$out/rb_fentry")"
fi
[ -n "$uf" ] && row "uftrace record (-pg)" "$uf"
[ -n "$lt" ] && row "lttng-ust cyg-profile" "$lt"
[ -n "$ltf" ] && row "lttng-ust cyg-profile-fast" "$ltf"
echo "  (ratios: overhead / the peer's overhead; goal <= 0.33 for the graph tracer vs uftrace and LTTng)"
