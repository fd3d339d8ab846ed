#!/usr/bin/env bash
# run-tests.sh - run test executables, TEST_JOBS at a time, and summarise.
#
#   scripts/run-tests.sh build/tests/test_a build/tests/test_b ...
#
# Each test runs under `timeout $TEST_TIMEOUT` (default 300 s), prefixed by
# $TEST_WRAPPER if set (for example `setarch x86_64 -R` for TSan).
# TEST_JOBS (default 1) tests run at a time: the suite counts events and never
# measures time, so a test's result does not depend on what else runs. With
# one job a test's output is shown as it runs; with more, each test's output
# goes to <executable>.log and is shown, whole, when it ends. Tests named in
# TEST_SERIAL (names, not paths) run alone, after the others. A PASS/FAIL line
# per executable follows its output, and again all together at the end, in
# the order given. Exits 1 if any test failed or timed out.
set -uo pipefail

timeout_s=${TEST_TIMEOUT:-300}
jobs=${TEST_JOBS:-1}
read -r -a wrapper <<<"${TEST_WRAPPER:-}"
read -r -a serial <<<"${TEST_SERIAL:-}"
declare -A line=()
failed=0

if [ $# -eq 0 ]; then
	echo "run-tests: no tests found (tests/*/test_*.c)"
	exit 0
fi
case $jobs in '' | *[!0-9]* | 0) echo "run-tests: TEST_JOBS must be a positive number, not '$jobs'"; exit 2 ;; esac

# result name rc secs: the PASS/FAIL/TIMEOUT line
result() {
	if [ "$2" -eq 0 ]; then
		echo "PASS     $1 (${3}s)"
	elif [ "$2" -eq 124 ]; then
		echo "TIMEOUT  $1 (killed after ${timeout_s}s)"
	else
		echo "FAIL     $1 (exit $2, ${3}s)"
	fi
}
# run_one path log: runs the test, its output into log; writes "rc secs" to path.rc
run_one() {
	local start rc
	start=$(date +%s.%N)
	timeout "$timeout_s" "${wrapper[@]}" "$1" >"$2" 2>&1
	rc=$?
	echo "$rc $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')" >"$1.rc.tmp"
	mv "$1.rc.tmp" "$1.rc"
}
is_serial() {
	local s
	for s in ${serial[@]+"${serial[@]}"}; do [ "$s" = "${1##*/}" ] && return 0; done
	return 1
}
# finish path: shows a parallel test's log and its line
finish() {
	local t=$1 name=${1##*/} rc=1 secs=?
	[ -f "$t.rc" ] && read -r rc secs <"$t.rc"
	echo "==== $name"
	cat "$t.log"
	line[$t]=$(result "$name" "$rc" "$secs")
	echo "${line[$t]}"
	[ "$rc" -eq 0 ] || failed=$((failed + 1))
	rm -f "$t.rc" "$t.log"
}

parallel=() alone=()
for t in "$@"; do
	if [ "$jobs" -gt 1 ] && ! is_serial "$t"; then parallel+=("$t"); else alone+=("$t"); fi
done

# TEST_JOBS at a time; a test's output is shown when it ends
declare -A running=() # pid -> test
reap() { # shows the tests that ended; at least one when $1 = wait
	local p n=0
	while :; do
		for p in "${!running[@]}"; do
			if [ -f "${running[$p]}.rc" ]; then
				wait "$p" 2>/dev/null
				finish "${running[$p]}"
				unset "running[$p]"
				n=$((n + 1))
			fi
		done
		[ "$1" = wait ] && [ $n -eq 0 ] && [ ${#running[@]} -gt 0 ] || return 0
		wait -n 2>/dev/null || sleep 0.1
	done
}
for t in ${parallel[@]+"${parallel[@]}"}; do
	while [ ${#running[@]} -ge "$jobs" ]; do reap wait; done
	rm -f "$t.rc" "$t.rc.tmp"
	run_one "$t" "$t.log" &
	running[$!]=$t
done
while [ ${#running[@]} -gt 0 ]; do reap wait; done

# one at a time, the output shown as it runs
for t in ${alone[@]+"${alone[@]}"}; do
	name=${t##*/}
	echo "==== $name"
	start=$(date +%s.%N)
	timeout "$timeout_s" "${wrapper[@]}" "$t"
	rc=$?
	secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
	line[$t]=$(result "$name" "$rc" "$secs")
	echo "${line[$t]}"
	[ "$rc" -eq 0 ] || failed=$((failed + 1))
done

echo
echo "==== summary"
for t in "$@"; do echo "${line[$t]}"; done
echo "$(($# - failed)) of $# test executables passed"
[ $failed -eq 0 ]
