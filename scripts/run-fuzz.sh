#!/usr/bin/env bash
# run-fuzz.sh - run libFuzzer targets, FUZZ_JOBS at a time (make fuzz).
#
#   scripts/run-fuzz.sh OUTDIR build/fuzz/fuzz_a build/fuzz/fuzz_b ...
#
# Each target runs for FUZZ_SECONDS (60) from its committed seeds in
# fuzz/corpus/<target>/, new inputs into OUTDIR/corpus-<target>, a crash's
# input as OUTDIR/<target>-crash-*. FUZZ_JOBS (default 1) targets run at once,
# each a single process: with no more jobs than cores, each target gets the
# whole FUZZ_SECONDS of one core, as when they ran one after the other. A
# target's output is shown, whole, when it ends. Exits 1 if any target found
# a crash, a leak or a timeout.
set -uo pipefail

out=$1
shift
secs=${FUZZ_SECONDS:-60}
jobs=${FUZZ_JOBS:-1}
case $jobs in '' | *[!0-9]* | 0) echo "run-fuzz: FUZZ_JOBS must be a positive number, not '$jobs'"; exit 2 ;; esac
mkdir -p "$out"
failed=()

# fuzz_one binary: runs it, output into OUTDIR/<name>.log, exit status into .rc
fuzz_one() {
	local b=$1 n=${1##*/} c
	c=$out/corpus-$n
	mkdir -p "$c"
	{
		echo "==== $n ($secs s; seeds fuzz/corpus/$n, new inputs in $c)"
		# shellcheck disable=SC2046
		"$b" -max_total_time="$secs" -timeout=20 -print_final_stats=1 \
			-artifact_prefix="$out/$n-" "$c" $(ls -d "fuzz/corpus/$n" 2>/dev/null)
		echo $? >"$out/$n.rc.tmp"
	} >"$out/$n.log" 2>&1
	mv "$out/$n.rc.tmp" "$out/$n.rc"
}
declare -A running=() # pid -> binary
reap() { # waits until fewer than $1 targets run, showing those that ended
	local p n rc
	while [ ${#running[@]} -ge "$1" ] && [ ${#running[@]} -gt 0 ]; do
		for p in "${!running[@]}"; do
			n=${running[$p]##*/}
			[ -f "$out/$n.rc" ] || continue
			wait "$p" 2>/dev/null
			cat "$out/$n.log"
			read -r rc <"$out/$n.rc"
			[ "$rc" = 0 ] || failed+=("$n (exit $rc)")
			rm -f "$out/$n.rc"
			unset "running[$p]"
		done
		[ ${#running[@]} -ge "$1" ] && sleep 0.5
	done
}
for b in "$@"; do
	rm -f "$out/${b##*/}.rc"
	reap "$jobs"
	fuzz_one "$b" &
	running[$!]=$b
done
reap 1
if [ ${#failed[@]} -gt 0 ]; then
	echo "fuzz: FAILED: ${failed[*]}"
	exit 1
fi
echo "fuzz: $# targets, $secs s each ($jobs at a time): no crash"
