#!/usr/bin/env bash
# run-tests.sh - run test executables, one at a time, and summarise.
#
#   tools/run-tests.sh build/tests/test_a build/tests/test_b ...
#
# Each test runs under `timeout $TEST_TIMEOUT` (default 300 s), prefixed by
# $TEST_WRAPPER if set (for example `setarch x86_64 -R` for TSan). Its output
# is shown as it runs; a PASS/FAIL line per executable follows, and again all
# together at the end. Exits 1 if any test failed or timed out.
set -uo pipefail

timeout_s=${TEST_TIMEOUT:-300}
read -r -a wrapper <<<"${TEST_WRAPPER:-}"
summary=()
failed=0

if [ $# -eq 0 ]; then
	echo "run-tests: no tests found (tests/test_*.c)"
	exit 0
fi

for t in "$@"; do
	name=${t##*/}
	echo "==== $name"
	start=$(date +%s.%N)
	timeout "$timeout_s" "${wrapper[@]}" "$t"
	rc=$?
	secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
	if [ $rc -eq 0 ]; then
		line="PASS     $name (${secs}s)"
	elif [ $rc -eq 124 ]; then
		line="TIMEOUT  $name (killed after ${timeout_s}s)"
		failed=$((failed + 1))
	else
		line="FAIL     $name (exit $rc, ${secs}s)"
		failed=$((failed + 1))
	fi
	echo "$line"
	summary+=("$line")
done

echo
echo "==== summary"
printf '%s\n' "${summary[@]}"
echo "$(($# - failed)) of $# test executables passed"
[ $failed -eq 0 ]
