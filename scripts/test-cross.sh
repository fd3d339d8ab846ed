#!/usr/bin/env bash
# test-cross.sh - the test suite on other architectures (make test-cross).
#
#   scripts/test-cross.sh [arch...]      arch: i686 aarch64 s390x armhf (default: all)
#
# Builds the tests `make list-tests-c` names (tests/*/test_*.c and the
# *_outline variants; tests/*/test_*.cpp where the cross g++ is
# installed: C and C++ writers, byte-identical pages and layouts on each
# architecture) with Debian's cross compilers and runs them under
# qemu-user (i686 natively where the kernel runs 32-bit executables, else
# under qemu-i386, whose pthread_create hung on an older machine), two
# architectures at a time and two tests of each at a time (CROSS_TEST_JOBS),
# each one's log in $BUILD/cross/<arch>/test.log.
# What each architecture adds to the x86-64 runs of `make test`:
#   i686     32-bit long and size_t: 12-byte page header, 32-bit links
#   aarch64  the portable C11 atomics (no x86 local ops), no rdtsc
#   s390x    big-endian: header words in the kernel's big-endian bitfield
#            layout, trace.dat marked big-endian and read by the host's
#            trace-cmd (the tests start it; qemu-user runs host binaries as
#            they are)
#   armhf    32-bit with strict alignment and 8-byte aligned long long
# Also: the compile checks (tests/compile/*.c) with every compiler at -Os and
# with -Wcast-align; the demo's trace.dat from s390x through the host's
# `trace-cmd report` (every event shown, none unknown); a shared object with
# the implementation dlopen'ed under glibc and musl (RINGBUF_TLS_MODEL).
#
# Skipped under qemu-user (RINGBUF_TEST_QEMU=1 tells the tests), and why:
#   test_readers, test_contexts, test_signal_writers, test_fork,
#   test_signal_safety, test_head_push_race, test_kernel_selftest,
#   test_merged_order, test_wait, test_reader_lock, test_reset, test_owners
#   (and their *_outline variants):
#       threads and signals only; qemu-user runs a weakly ordered guest with
#       the x86 host's ordering, so they test nothing x86-64 does not, and
#       they take most of the time (they run natively on i686)
#   aarch64: test_file, test_read_tool, armhf: test_file, test_interleave:
#       the slowest under qemu, with no word-size or byte-order specific path
#       that x86-64 (64-bit little-endian), i686 (32-bit, native) and s390x
#       do not run
#   test_file: sigkill_at_random_moments: see the test (flaky under qemu)
#   test_read_tool: the live read: qemu-user fakes /proc/self/stat
#   test_tracedat: the string filter on big-endian files (libtraceevent
#       reads __data_loc in the host's order)
# CROSS_SKIP="arch:test ..." skips more; CROSS_ONLY="test_a test_b" runs only
# those. Packages: installed when run as root (apt-get, multiarch), otherwise
# printed. Exits 1 if anything failed.
set -uo pipefail

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=$BUILD/cross
JOBS=${CROSS_JOBS:-2}
TESTS_AT_ONCE=${CROSS_TEST_JOBS:-2} # tests run at a time per architecture
# a hang guard: under qemu-user with four tests on two cores the slowest
# (aarch64 test_ftrace_live, about 60-100 s) takes longer than alone. A hang
# shows the test's last case and log lines. One qemu-user hazard met so far:
# a child forked just after a thread was joined can deadlock inside qemu
# (glib's slice lock, held by the exiting thread's host side);
# test_record_hostile waits for /proc/self/task to shrink before forking
TIMEOUT=${TEST_TIMEOUT:-600}
CFLAGS_CROSS=${CROSS_CFLAGS:--O2}
start_all=$(date +%s)

# arch -> triplet, Debian architecture, runner
declare -A TRIPLET=([i686]=i686-linux-gnu [aarch64]=aarch64-linux-gnu [s390x]=s390x-linux-gnu
		    [armhf]=arm-linux-gnueabihf)
declare -A DEBARCH=([i686]=i386 [aarch64]=arm64 [s390x]=s390x [armhf]=armhf)
declare -A QEMU=([i686]= [aarch64]=qemu-aarch64 [s390x]=qemu-s390x [armhf]=qemu-arm)

arches=("$@")
[ ${#arches[@]} -gt 0 ] || arches=(i686 aarch64 s390x armhf)
for a in "${arches[@]}"; do
	[ -n "${TRIPLET[$a]:-}" ] || { echo "test-cross: unknown architecture $a (i686 aarch64 s390x armhf)"; exit 2; }
done

# test_malloc_trace: re-executes itself (exec from inside qemu-user) and
# LD_PRELOADs a guest object; it runs natively on i686 (passes there).
# test_record_kernel: its signal test execs the guest's ringbuf-record, which
# qemu-user cannot start without binfmt_misc (exit 127: seen on aarch64); it
# runs natively on i686 and on the host.
QEMU_SKIP="test_readers test_contexts test_signal_writers test_fork test_signal_safety
	   test_head_push_race test_kernel_selftest test_merged_order test_wait test_reader_lock
	   test_reset test_owners test_malloc_trace test_thread_churn test_record_kernel
	   test_takeover_hb test_percpu_claim test_claim_before_shared"
NATIVE_SKIP=""
SLOW_SKIP="aarch64:test_file aarch64:test_read_tool armhf:test_file armhf:test_interleave"
# OPEN_SKIP: tests that fail here for a reason not understood yet ("arch:test";
# each entry is open work, not a platform limit). Empty: the entries of
# 2026-11-25 were test assumptions qemu-user or the architecture broke
# (s390x test_record read the trace.dat as little-endian; test_ftrace took the
# task name qemu-s390x for an unnamed function's 0x; armhf
# test_tracedat_stream's readdir got EOVERFLOW from 64-bit directory offsets;
# test_thread_fallback expected a joined thread gone from the kernel's table,
# which under qemu-user it often is not yet) and one library bug (a renamed
# thread's new name lost to a signal handler's event, seen in s390x
# test_read_tool). Not explained: s390x test_filter_race failed once (an
# emitter result neither 1 nor 0; 40+ passing runs since) and test_read_tool's
# killed-writer case once missed a committed event (330+ passing rounds
# since); both now print what a next failure needs.
OPEN_SKIP=""

# ---- dependencies ------------------------------------------------------------
pkgs_for() {
	local a=$1 d=${DEBARCH[$1]}
	echo "gcc-${TRIPLET[$a]} libc6-dev-$d-cross libcmocka-dev:$d libtraceevent-dev:$d"
	[ -z "${QEMU[$a]}" ] || echo qemu-user
}
missing=()
for a in "${arches[@]}"; do
	d=${DEBARCH[$a]}
	command -v "${TRIPLET[$a]}-gcc" >/dev/null || missing+=("gcc-${TRIPLET[$a]}" "libc6-dev-$d-cross")
	[ -e "/usr/lib/${TRIPLET[$a]/i686/i386}/libcmocka.so" ] || missing+=("libcmocka-dev:$d")
	[ -e "/usr/lib/${TRIPLET[$a]/i686/i386}/libtraceevent.so" ] || missing+=("libtraceevent-dev:$d")
	[ -z "${QEMU[$a]}" ] || command -v "${QEMU[$a]}" >/dev/null || missing+=(qemu-user)
done
command -v trace-cmd >/dev/null || missing+=(trace-cmd)
# optional: the C++ tests run where the cross g++ is installed (installed
# with the rest as root; otherwise they are skipped, and the log says so)
optional=()
for a in "${arches[@]}"; do
	command -v "${TRIPLET[$a]}-g++" >/dev/null || optional+=("g++-${TRIPLET[$a]}")
	[ -e "/usr/lib/${TRIPLET[$a]/i686/i386}/libstdc++.so.6" ] || optional+=("libstdc++6:${DEBARCH[$a]}")
done
if [ ${#optional[@]} -gt 0 ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
	if [ ${#missing[@]} -gt 0 ]; then
		missing+=("${optional[@]}")
	else
		echo "test-cross: installing ${optional[*]} (C++ tests)"
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${optional[@]}" ||
			{ apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y \
				--no-install-recommends "${optional[@]}"; } || true
	fi
fi
command -v musl-gcc >/dev/null || missing+=(musl-tools)
if [ ${#missing[@]} -gt 0 ]; then
	mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
	archs=$(printf '%s\n' "${missing[@]}" | sed -n 's/.*:\(.*\)/\1/p' | sort -u)
	if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
		echo "test-cross: installing ${missing[*]}"
		for d in $archs; do dpkg --add-architecture "$d"; done
		export DEBIAN_FRONTEND=noninteractive
		apt-get update || true
		apt-get install -y --no-install-recommends "${missing[@]}" || true
	else
		echo "test-cross: missing packages; as root:"
		for d in $archs; do echo "  dpkg --add-architecture $d"; done
		echo "  apt-get update && apt-get install ${missing[*]}"
		exit 1
	fi
fi

# ---- per architecture: build, then run ----------------------------------------
skipped() { # arch test -> reason or nothing
	local a=$1 t=$2 x
	for x in $NATIVE_SKIP; do
		[ "$x" = "$a:$t" ] && { echo "NATIVE_SKIP"; return; }
	done
	for x in ${CROSS_SKIP:-}; do
		[ "$x" = "$a:$t" ] && { echo "CROSS_SKIP"; return; }
	done
	for x in $SLOW_SKIP; do
		[ "$x" = "$a:$t" ] && { echo "skipped: slow under qemu, covered by the other runs"; return; }
	done
	for x in $OPEN_SKIP; do
		[ "$x" = "$a:$t" ] && { echo "OPEN_SKIP: fails here, not investigated yet (see scripts/test-cross.sh)"; return; }
	done
	if [ -n "${QEMU[$a]}" ]; then
		# a test's *_outline variant (the same cases, the out-of-line
		# claim) goes with it: test_contexts_outline's signal storms took
		# 12 s in one CI run and 148-598 s in others under qemu
		for x in $QEMU_SKIP; do
			[ "$x" = "$t" ] || [ "${x}_outline" = "$t" ] &&
				{ echo "skipped under qemu (threads/signals only)"; return; }
		done
	fi
	if [ -n "${CROSS_ONLY:-}" ]; then
		for x in $CROSS_ONLY; do [ "$x" = "$t" ] && return; done
		echo "not in CROSS_ONLY"
	fi
}

run_arch() {
	local a=$1 cc=${TRIPLET[$1]}-gcc cxx=${TRIPLET[$1]}-g++ dir=$OUT/$1 t n rc s reason fails running
	local -a run=() bins=()
	mkdir -p "$dir"
	exec >"$dir/test.log" 2>&1
	echo "==== $a ($cc, ${QEMU[$a]:-native}) $(date -u +%H:%M:%S)"
	[ -z "${QEMU[$a]}" ] || run=("${QEMU[$a]}" -L /)
	# i686 runs natively where the kernel runs 32-bit x86 executables (IA32
	# emulation); on a kernel without it (Exec format error, seen on a
	# machine of 2026-12-02) under qemu-i386, as the other architectures
	if [ "$a" = i686 ] && [ -z "${QEMU[$a]}" ] && command -v qemu-i386 >/dev/null &&
		"$cc" -o "$dir/true" -x c - <<<'int main(void) { return 0; }' && ! "$dir/true" 2>/dev/null; then
		QEMU[$a]=qemu-i386
		run=(qemu-i386 -L /)
		SLOW_SKIP+=" i686:test_read_tool i686:test_interleave"
		# qemu-i386's nested signals: test_filter_race counted tens of
		# millions of writers nested too deep and a head push with no
		# writer in flight, test_filter_trigger's handler case ended
		# with exit 255 (2026-12-02); native i686 and the other qemu
		# runs pass them. Not investigated further.
		OPEN_SKIP+=" i686:test_filter_race i686:test_filter_trigger"
		echo "i686: this kernel does not run 32-bit x86 executables: under qemu-i386"
	fi
	if ! "$cc" -o "$dir/true" -x c - <<<'int main(void) { return 0; }' || ! "${run[@]}" "$dir/true"; then
		echo "FAIL     $a: cannot build or run a $a executable here"
		return 1
	fi
	for n in $(make --no-print-directory -s list-tests-c); do
		reason=$(skipped "$a" "$n")
		if [ -n "$reason" ]; then
			echo "SKIP     $n ($reason)"
			continue
		fi
		bins+=("$dir/tests/$n")
	done
	if command -v "$cxx" >/dev/null; then
		for t in tests/test_*.cpp tests/*/test_*.cpp; do
			[ -f "$t" ] || continue
			n=${t##*/}; n=${n%.cpp}
			reason=$(skipped "$a" "$n")
			if [ -n "$reason" ]; then
				echo "SKIP     $n ($reason)"
				continue
			fi
			bins+=("$dir/tests/$n")
		done
	else
		echo "SKIP     tests/*/test_*.cpp (no $cxx: apt-get install g++-${TRIPLET[$a]})"
	fi
	s=$(date +%s)
	if ! make --no-print-directory -j"$JOBS" "${bins[@]}" examples BUILD="$dir" CC="$cc" CXX="$cxx" \
		CFLAGS="$CFLAGS_CROSS" CXXFLAGS="$CFLAGS_CROSS" >"$dir/build.log" 2>&1; then
		tail -n 30 "$dir/build.log"
		echo "FAIL     $a: build (see $dir/build.log)"
		return 1
	fi
	echo "built in $(($(date +%s) - s)) s"
	# TESTS_AT_ONCE tests at a time: a qemu-user run keeps about 0.6 of a core
	# busy (aarch64's tests one at a time: 257 CPU s in 420 s)
	fails=$(mktemp -d)
	running=0
	for t in "${bins[@]}"; do
		if [ $running -ge "$TESTS_AT_ONCE" ]; then
			wait -n
			running=$((running - 1))
		fi
		run_test "$t" "$fails" &
		running=$((running + 1))
	done
	wait
	rc=0
	[ -z "$(ls -A "$fails")" ] || rc=1
	rm -rf "$fails"
	return $rc
}

# run_test EXECUTABLE FAILDIR: runs one test of run_arch's architecture ($a,
# $run), prints its PASS or FAIL lines in one write (tests run side by side),
# marks a failure in FAILDIR
run_test() {
	local t=$1 n=${1##*/} s st secs out
	s=$(date +%s)
	env CI=true ${QEMU[$a]:+RINGBUF_TEST_QEMU=1} timeout "$TIMEOUT" "${run[@]}" "$t" >"$t.log" 2>&1
	st=$?
	secs=$(($(date +%s) - s))
	if [ $st -eq 0 ]; then
		out="PASS     $n (${secs}s, $(grep '^\[  SKIPPED \] ' "$t.log" | grep -v ' test(s)' | sort -u | wc -l) cases skipped)"
	else
		# the failed assertions, and the case that ran last with the
		# log's last lines (a hang: where it stopped)
		out="FAIL     $n (exit $st, ${secs}s; $t.log):"$'\n'"$(grep -E '^\[  (ERROR|FAILED) |^ERROR|LINE' "$t.log" | head -n 8 | sed 's/^/           /')"
		out+=$'\n'"$( (grep -E '^\[ RUN ' "$t.log" | tail -n 1; tail -n 12 "$t.log") | cut -c1-300 | sed 's/^/         | /')"
		: >"$2/$n"
	fi
	printf '%s\n' "$out"
}

# The demo on s390x: its trace.dat read by the host's trace-cmd, every event
# shown (the summary line names how many the trace holds).
demo_s390x() {
	local dir=$OUT/s390x dat want got unknown
	dat=$dir/demo.dat
	exec >"$dir/demo.log" 2>&1
	qemu-s390x -L / "$dir/examples/demo" "$dat" >"$dir/demo.out" 2>&1 || { cat "$dir/demo.out"; return 1; }
	want=$(sed -n 's/^ *events in trace: *\([0-9]*\) from threads, *\([0-9]*\) from timer handlers, *\([0-9]*\) from nested.*/\1 + \2 + \3/p' "$dir/demo.out")
	[ -n "$want" ] || { echo "demo: no 'events in trace' line"; cat "$dir/demo.out"; return 1; }
	want=$((want))
	trace-cmd report "$dat" >"$dir/demo.report" 2>/dev/null || { echo "trace-cmd report failed"; return 1; }
	got=$(grep -cE '\[[0-9]{3}\] ' "$dir/demo.report")
	unknown=$(grep -c 'UNKNOWN' "$dir/demo.report")
	trace-cmd dump --summary "$dat" 2>/dev/null | grep -q '1.\[Big endian\]' || { echo "demo.dat not marked big-endian"; return 1; }
	echo "demo on s390x: $want events in the trace, trace-cmd report shows $got, $unknown unknown"
	[ "$got" -eq "$want" ] && [ "$unknown" -eq 0 ]
}

# Compile checks with every compiler: -Werror at -Os (gcc's maybe-uninitialized
# analysis) and with -Wcast-align; host gcc also at -O1.
# The compiles run JOBS at a time (each is one compiler process); a failure's
# messages are kept in compile.log.
compile_one() { # cc opt file: compiles, prints a FAIL block on failure
	local err
	err=$(mktemp)
	if ! "$1" -std=c11 -Wall -Wextra -pedantic -Werror -Wcast-align "$2" -pthread -I. \
		-c -o /dev/null "$3" 2>"$err"; then
		echo "FAIL     $1 $2 $3:"
		grep -v 'note: the alignment of' "$err" | head -n 10
		rm -f "$err"
		return 1
	fi
	rm -f "$err"
}
export -f compile_one
compile_matrix() {
	local f cc o
	local -a ccs=(gcc clang musl-gcc)
	for a in "${arches[@]}"; do ccs+=("${TRIPLET[$a]}-gcc"); done
	exec >"$OUT/compile.log" 2>&1
	for cc in "${ccs[@]}"; do
		command -v "$cc" >/dev/null || { echo "SKIP     compile checks with $cc (not installed)"; continue; }
		for o in -Os -O1; do
			[ "$o" = -O1 ] && [ "$cc" != gcc ] && continue
			for f in tests/compile/*.c; do printf '%s %s %s\n' "$cc" "$o" "$f"; done
		done
	done | xargs -P "$JOBS" -n 3 bash -c 'compile_one "$@"' _
	local rc=$?
	echo "compile checks with ${ccs[*]}: done"
	[ $rc -eq 0 ]
}

# A shared object with the implementation, dlopen'ed (RINGBUF_TLS_MODEL): with
# glibc and with musl; under musl, initial-exec must fail (the check bites).
dlopen_check() {
	local cc dir=$OUT/dlopen rc=0
	mkdir -p "$dir"
	exec >"$dir/dlopen.log" 2>&1
	for cc in gcc musl-gcc; do
		command -v "$cc" >/dev/null || { echo "SKIP     dlopen with $cc (not installed)"; continue; }
		"$cc" -std=c11 -O2 -pthread -fPIC -shared -I. -o "$dir/plugin-$cc.so" tests/dlopen/plugin.c &&
		"$cc" -std=c11 -O2 -pthread -fPIC -shared -I. -DRINGBUF_TLS_MODEL='"initial-exec"' \
			-o "$dir/plugin-$cc-ie.so" tests/dlopen/plugin.c &&
		"$cc" -O2 -o "$dir/host-$cc" tests/dlopen/host.c -ldl || { echo "FAIL     dlopen build ($cc)"; rc=1; continue; }
		"$dir/host-$cc" "$dir/plugin-$cc.so" || { echo "FAIL     dlopen with $cc, default TLS model"; rc=1; }
		if [ "$cc" = musl-gcc ]; then
			if "$dir/host-$cc" "$dir/plugin-$cc-ie.so"; then
				echo "FAIL     musl loaded initial-exec TLS from a dlopen'ed object: the check does not bite"
				rc=1
			fi
		else
			"$dir/host-$cc" "$dir/plugin-$cc-ie.so" || { echo "FAIL     dlopen with glibc, initial-exec"; rc=1; }
		fi
	done
	return $rc
}

mkdir -p "$OUT"
declare -A result
pids=()
names=()
# two at a time: qemu runs are single-threaded mostly
start_job() { "$@" & pids+=($!); names+=("$1 ${2:-}"); }
wait_jobs() {
	local i
	for i in "${!pids[@]}"; do
		wait "${pids[$i]}"
		result["${names[$i]}"]=$?
	done
	pids=()
	names=()
}
# The compile checks and the dlopen check run beside the architectures, at a
# lower priority (nice): they take the CPU the architectures leave idle (the
# last architecture's tests run alone, one at a time) instead of running
# first with the architectures waiting for them (CI: about 3 minutes).
niced() { renice -n 10 -p "$BASHPID" >/dev/null; "$@"; }
start_job niced compile_matrix
start_job niced dlopen_check
# Two architectures at a time, the next one starting as soon as either ends
# (not in pairs: a pair waited for its slower half with a core idle).
queue=("${arches[@]}")
declare -A arch_of=() # pid -> architecture
while [ ${#queue[@]} -gt 0 ] || [ ${#arch_of[@]} -gt 0 ]; do
	while [ ${#queue[@]} -gt 0 ] && [ ${#arch_of[@]} -lt 2 ]; do
		run_arch "${queue[0]}" &
		arch_of[$!]=${queue[0]}
		queue=("${queue[@]:1}")
	done
	wait -n -p done_pid "${!arch_of[@]}"
	rc=$?
	result["run_arch ${arch_of[$done_pid]}"]=$rc
	unset "arch_of[$done_pid]"
done
wait_jobs
for a in "${arches[@]}"; do
	if [ "$a" = s390x ] && [ -x "$OUT/s390x/examples/demo" ]; then
		(demo_s390x)
		result["demo s390x"]=$?
	fi
done

failed=0
echo "==== test-cross ($(($(date +%s) - start_all)) s)"
for f in "$OUT/compile.log" "$OUT/dlopen/dlopen.log"; do [ -f "$f" ] && grep -E '^(FAIL|SKIP)' "$f"; done
for a in "${arches[@]}"; do
	echo "---- $a"
	grep -E '^(PASS|FAIL|SKIP|built|    )' "$OUT/$a/test.log"
done
[ -f "$OUT/s390x/demo.log" ] && cat "$OUT/s390x/demo.log"
for k in "${!result[@]}"; do
	if [ "${result[$k]}" -ne 0 ]; then
		echo "FAILED: $k"
		failed=1
	fi
done
[ $failed -eq 0 ] && echo "test-cross: all passed"
exit $failed
