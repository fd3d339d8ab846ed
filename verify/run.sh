#!/usr/bin/env bash
# verify/run.sh - run the GenMC model-checking harnesses (verify/*.c).
#
# Each harness says how it is to be run on lines of its own:
#
#     /* GENMC-PASS: <genmc options> -- <cflags> */   must explore >= 1 complete
#                                                     execution and find no error
#     /* GENMC-MIN-EXECUTIONS: n */                   a PASS run must explore >= n
#     /* GENMC-FAIL: <genmc options> -- <cflags> */   must find an error (exit 42):
#                                                     the old protocol or a mutant,
#                                                     so the harness is shown to bite
#
# -patch=FILE among the options: the harness is compiled against a copy of
# ringbuf.h with FILE (a unified diff, verify/mutants/) applied: mutants live
# beside the harnesses, not in the shipped header.
#
# -disable-estimation and -disable-instruction-caching are always added (see
# GenMC's README). GenMC is looked for in $GENMC, then ../shared/tools/genmc/
# next to the repository; without it the script says so and exits 0 (or 1
# with VERIFY_REQUIRED=1). Runs go VERIFY_JOBS at a time (default: the
# number of cores), the real header's harnesses first. Usage:
# verify/run.sh [harness.c ...]
set -uo pipefail
cd "$(dirname "$0")/.."

genmc=${GENMC:-}
if [ -z "$genmc" ]; then
	for g in ../shared/tools/genmc/run-genmc /work/shared/tools/genmc/run-genmc; do
		[ -x "$g" ] && { genmc=$g; break; }
	done
fi
if [ -z "$genmc" ] || ! [ -x "$genmc" ]; then
	echo "verify: GenMC not found (set GENMC=/path/to/run-genmc): model checking skipped"
	[ "${VERIFY_REQUIRED:-0}" = 1 ] && exit 1
	exit 0
fi
if ! command -v "${GENMC_CLANG:-clang-14}" >/dev/null 2>&1 && ! [ -x /usr/lib/llvm-14/bin/clang ]; then
	if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "verify: installing clang-14 (GenMC compiles its input with it)"
		(apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y clang-14) >/dev/null 2>&1 || true
	fi
fi
if ! command -v "${GENMC_CLANG:-clang-14}" >/dev/null 2>&1 && ! [ -x /usr/lib/llvm-14/bin/clang ]; then
	echo "verify: clang-14 missing — install it with: sudo apt-get install clang-14"
	[ "${VERIFY_REQUIRED:-0}" = 1 ] && exit 1
	exit 0
fi

files=("$@")
[ ${#files[@]} -eq 0 ] && files=(verify/*.c)
# The harnesses that run the real header under IMM take minutes each: started
# first, so that the short runs fill the other cores meanwhile.
VERIFY_FIRST="verify/swap_writer.c verify/takeover.c"
ordered=()
for f in $VERIFY_FIRST; do
	for g in "${files[@]}"; do [ "$g" = "$f" ] && ordered+=("$f"); done
done
for g in "${files[@]}"; do
	[[ " $VERIFY_FIRST " == *" $g "* ]] || ordered+=("$g")
done
# GenMC explores on one core: VERIFY_JOBS runs at a time (default: the cores)
jobs=${VERIFY_JOBS:-$(nproc 2>/dev/null || echo 1)}
case $jobs in '' | *[!0-9]* | 0) echo "verify: VERIFY_JOBS must be a positive number, not '$jobs'"; exit 2 ;; esac
log=${VERIFY_LOG:-build/verify}
mkdir -p "$log"
rm -f "$log"/*.result

# run_one n harness kind opts cflags min_execs: one GenMC run; its line (and
# the first lines of a failure) into $log/<n>.result, "1" into <n>.failed
run_one() {
	local n=$1 f=$2 kind=$3 opts=$4 cflags=$5 min_execs=$6 out inc patchf mdir start rc secs execs blocked what
	local res=$log/$n.result
	out="$log/$(basename "$f" .c).$n.log"
	inc=-I.
	if [[ " $opts " == *" -patch="* ]]; then
		patchf=${opts#*-patch=}
		patchf=${patchf%% *}
		opts=${opts/-patch=$patchf/}
		mdir="$log/mutant.$n"
		rm -rf "$mdir" && mkdir -p "$mdir" && cp ringbuf.h "$mdir/" &&
			(cd "$mdir" && patch -p1 -s) <"$patchf" || {
			echo "verify: FAILED  $f: $patchf does not apply to ringbuf.h" >"$res.tmp"
			echo 1 >"$log/$n.failed"
			mv "$res.tmp" "$res"
			return
		}
		inc="-I$mdir -I."
	fi
	start=$(date +%s.%N)
	# shellcheck disable=SC2086
	"$genmc" -disable-estimation -disable-instruction-caching $opts -- $inc -Iverify $cflags "$f" >"$out" 2>&1
	rc=$?
	secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
	execs=$(sed -n 's/^Number of complete executions explored: //p' "$out" | tail -n 1)
	blocked=$(sed -n 's/^Number of blocked executions seen: //p' "$out" | tail -n 1)
	what="$f [$opts${cflags:+ -- $cflags}]: ${execs:-?} executions (${blocked:-0} blocked), ${secs} s"
	{
		if [ "$kind" = "/* GENMC-PASS" ]; then
			if [ $rc -eq 0 ] && [ -n "$execs" ] && [ "$execs" -ge "$min_execs" ]; then
				echo "verify: ok      $what"
			else
				echo "verify: FAILED  $what (exit $rc; log $out)"
				grep -m 5 -E 'Error|violation|race|Assertion' "$out" | sed 's/^/    /'
				echo 1 >"$log/$n.failed"
			fi
		else
			if [ $rc -eq 42 ]; then
				echo "verify: bites   $what: $(grep -m 1 -E 'Error|violation|race' "$out")"
			else
				echo "verify: FAILED  $what: expected a violation, got exit $rc (log $out)"
				echo 1 >"$log/$n.failed"
			fi
		fi
	} >"$res.tmp"
	mv "$res.tmp" "$res"
}

# Each run's line is printed as it ends; all of them again, in the harnesses'
# order, at the end.
rm -f "$log"/*.failed
runs=0
declare -A running=() # pid -> run number
reap() { # waits until fewer than $1 runs are going, printing those that ended
	local p
	while [ ${#running[@]} -ge "$1" ] && [ ${#running[@]} -gt 0 ]; do
		for p in "${!running[@]}"; do
			if [ -f "$log/${running[$p]}.result" ]; then
				wait "$p" 2>/dev/null
				cat "$log/${running[$p]}.result"
				unset "running[$p]"
			fi
		done
		[ ${#running[@]} -ge "$1" ] && sleep 0.2
	done
}
for f in "${ordered[@]}"; do
	[ -f "$f" ] || continue
	# /* GENMC-MIN-EXECUTIONS: n */ in a harness: a PASS run that explored
	# fewer complete executions exercised less than the harness is for (a
	# loop past -unroll ends each execution early, and GenMC still says
	# "no errors": swap_writer.c once passed with 1 execution per run)
	min_execs=$(sed -n 's|^/\* GENMC-MIN-EXECUTIONS: \([0-9]*\) \*/.*|\1|p' "$f" | head -n 1)
	min_execs=${min_execs:-1}
	while IFS= read -r line; do
		kind=${line%%:*}
		spec=${line#*: }
		spec=${spec% \*/}
		opts=${spec%% -- *}
		cflags=
		[[ $spec == *" -- "* ]] && cflags=${spec#* -- }
		runs=$((runs + 1))
		reap "$jobs"
		run_one "$runs" "$f" "$kind" "$opts" "$cflags" "$min_execs" &
		running[$!]=$runs
	done < <(grep -E '^/\* GENMC-(PASS|FAIL): ' "$f")
done
reap 1
fail=0
echo "==== verify: every run, in order"
for ((n = 1; n <= runs; n++)); do
	cat "$log/$n.result" 2>/dev/null || { echo "verify: FAILED  run $n left no result"; fail=1; }
	[ -f "$log/$n.failed" ] && fail=1
done
echo "verify: $runs runs ($jobs at a time), $([ $fail = 0 ] && echo all as expected || echo FAILURES)"
exit $fail
