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
# with VERIFY_REQUIRED=1). Usage: verify/run.sh [harness.c ...]
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
fail=0 runs=0
log=${VERIFY_LOG:-build/verify}
mkdir -p "$log"
for f in "${files[@]}"; do
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
		out="$log/$(basename "$f" .c).$runs.log"
		inc=-I.
		if [[ " $opts " == *" -patch="* ]]; then
			patchf=${opts#*-patch=}
			patchf=${patchf%% *}
			opts=${opts/-patch=$patchf/}
			mdir="$log/mutant.$runs"
			rm -rf "$mdir" && mkdir -p "$mdir" && cp ringbuf.h "$mdir/" &&
				(cd "$mdir" && patch -p1 -s) <"$patchf" || {
				echo "verify: FAILED  $f: $patchf does not apply to ringbuf.h"
				fail=1
				continue
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
		if [ "$kind" = "/* GENMC-PASS" ]; then
			if [ $rc -eq 0 ] && [ -n "$execs" ] && [ "$execs" -ge "$min_execs" ]; then
				echo "verify: ok      $what"
			else
				echo "verify: FAILED  $what (exit $rc; log $out)"
				grep -m 5 -E 'Error|violation|race|Assertion' "$out" | sed 's/^/    /'
				fail=1
			fi
		else
			if [ $rc -eq 42 ]; then
				echo "verify: bites   $what: $(grep -m 1 -E 'Error|violation|race' "$out")"
			else
				echo "verify: FAILED  $what: expected a violation, got exit $rc (log $out)"
				fail=1
			fi
		fi
	done < <(grep -E '^/\* GENMC-(PASS|FAIL): ' "$f")
done
echo "verify: $runs runs, $([ $fail = 0 ] && echo all as expected || echo FAILURES)"
exit $fail
