#!/usr/bin/env bash
# namespace.sh - RINGBUF_NAMESPACE: no unprefixed symbol, two copies in one program.
#
#   tests/packaging/namespace.sh BUILD_DIR      (run by scripts/test-packaging.sh)
#
# 1. The implementation (ringbuf.h + ringbuf_trace.h; and with ringbuf_ftrace.h)
#    and a user file of the inline fast path, in C and C++, are compiled with RINGBUF_NAMESPACE=rbns_
#    under several configurations; nm must show no global symbol, defined or
#    referenced, that starts with ringbuf (the program's own event descriptors
#    ringbuf_event_<name> aside), and every name the headers' rename lists hold
#    must turn up prefixed (no stale entry).
# 2. A plain copy and a namespaced, vendored copy (include <ringbuf/...>) are
#    linked into one program and each sees only its own events.
# 3. The namespaced copy links next to a library with rmind/ringbuf's function
#    names; the plain copy does not (multiple definition of ringbuf_consume):
#    the check that the test bites.
# Uses CC, CXX (C++ part skipped when absent), NM (nm).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
src=$root/tests/packaging/namespace
out=${1:?usage: namespace.sh BUILD_DIR}
CC=${CC:-cc}
CXX=${CXX:-c++}
NM=${NM:-nm}
ns=rbns_
flags=(-std=c11 -Wall -Wextra -pedantic -Werror -O0 -pthread)

rm -rf "$out"
mkdir -p "$out/vendor/ringbuf"
cp "$root/ringbuf.h" "$root"/ringbuf_trace*.h "$root/ringbuf_net.h" "$out/vendor/ringbuf/"
have_cxx=0
command -v "${CXX%% *}" >/dev/null 2>&1 && have_cxx=1

fail() { echo "namespace: FAIL: $*" >&2; exit 1; }

# ---- 1. nm: nothing unprefixed, nothing stale ------------------------------
: > "$out/symbols"
check_nm() { # object: global symbols (defined and undefined)
	"$NM" -g "$1" | awk '{ print $NF }' >> "$out/symbols"
	local bad
	bad=$("$NM" -g "$1" | awk '{ print $NF }' | sed 's/^_//' |
		grep -i '^ringbuf' | grep -v '^ringbuf_event_' || true)
	[ -z "$bad" ] || fail "$1 has unprefixed symbols (add them to the RINGBUF_NAMESPACE list):
$bad"
}
variants=("" "-DRINGBUF_TESTING" "-DRINGBUF_DEBUG -DRINGBUF_PORTABLE" "-DRINGBUF_NO_INLINE")
i=0
for v in "${variants[@]}"; do
	i=$((i + 1))
	# shellcheck disable=SC2086 # $v is a list of flags
	$CC "${flags[@]}" $v -DRINGBUF_NAMESPACE=$ns -DCOPY_FN=copy_ns -I"$root" \
		-c -o "$out/impl$i.o" "$src/copy.c"
	check_nm "$out/impl$i.o"
	# shellcheck disable=SC2086
	$CC "${flags[@]}" $v -DRINGBUF_NAMESPACE=$ns -I"$root" -c -o "$out/user$i.o" "$src/user.c"
	check_nm "$out/user$i.o"
	# the function tracer (ringbuf_ftrace.h) on top of the same two headers
	# shellcheck disable=SC2086
	$CC "${flags[@]}" $v -DRINGBUF_NAMESPACE=$ns -I"$root" -c -o "$out/ftrace$i.o" "$src/ftrace.c"
	check_nm "$out/ftrace$i.o"
done
if [ $have_cxx = 1 ]; then
	$CXX -std=c++11 -Wall -Wextra -pedantic -Werror -DRINGBUF_NAMESPACE=$ns -I"$root" \
		-c -o "$out/user_cxx.o" "$src/user_cxx.cpp"
	check_nm "$out/user_cxx.o"
else
	echo "namespace: no C++ compiler ($CXX): C++ part skipped"
fi
listed=$(sed -n 's/^#define \(ringbuf[a-z0-9_]*\)  *RINGBUF__NS(\1)$/\1/p' \
		"$root/ringbuf.h" "$root"/ringbuf_trace*.h "$root/ringbuf_net.h" \
		"$root/ringbuf_ftrace.h"
	 sed -n 's/.*RINGBUF__NS_LABEL(\(ringbuf[a-z0-9_]*\));.*/\1/p' "$root/ringbuf.h")
[ "$(echo "$listed" | wc -l)" -gt 50 ] || fail "could not read the rename lists from the headers"
stale=$(for s in $listed; do grep -qx "_\{0,1\}$ns$s" "$out/symbols" || echo "$s"; done)
[ -z "$stale" ] || fail "listed for RINGBUF_NAMESPACE but no such symbol: $stale"
echo "namespace: $(echo "$listed" | wc -l) names renamed, no unprefixed symbol in ${#variants[@]} configurations"

# ---- 2. two copies in one program ------------------------------------------
$CC "${flags[@]}" -DCOPY_FN=copy_plain -I"$root" -c -o "$out/plain.o" "$src/copy.c"
# the vendored copy, with the prefix in the file itself
{ echo '#define RINGBUF_NAMESPACE rbns_'; sed -e 's|#include "ringbuf_tracedat.h"|#include <ringbuf/ringbuf_tracedat.h>|' \
	-e 's|#include "ringbuf_net.h"|#include <ringbuf/ringbuf_net.h>|' "$src/copy.c"; } \
	> "$out/copy_vendored.c"
$CC "${flags[@]}" -DCOPY_FN=copy_ns -I"$out/vendor" -c -o "$out/vendored.o" "$out/copy_vendored.c"
objs=("$out/plain.o" "$out/vendored.o" "$out/user1.o")
defs=(-DWITH_PLAIN)
link=$CC
if [ $have_cxx = 1 ]; then
	objs+=("$out/user_cxx.o") defs+=(-DWITH_CXX) link=$CXX
fi
$CC "${flags[@]}" "${defs[@]}" -c -o "$out/main_two.o" "$src/main.c"
$link -pthread -o "$out/two_copies" "$out/main_two.o" "${objs[@]}"
"$out/two_copies" || fail "two copies in one program"

# ---- 3. next to another ringbuf_* library ----------------------------------
$CC "${flags[@]}" -c -o "$out/other.o" "$src/other_ringbuf.c"
$CC "${flags[@]}" -DWITH_OTHER -c -o "$out/main_other.o" "$src/main.c"
$CC -pthread -o "$out/with_other" "$out/main_other.o" "$out/vendored.o" "$out/user1.o" "$out/other.o"
"$out/with_other" || fail "namespaced copy next to another ringbuf library"
# the control: without the prefix the link must fail on ringbuf_consume
$CC "${flags[@]}" -DCOPY_FN=copy_ns -I"$root" -c -o "$out/plain_ns_name.o" "$src/copy.c"
if $CC -pthread -o "$out/collide" "$out/main_other.o" "$out/plain_ns_name.o" "$out/other.o" \
	2> "$out/collide.log"; then
	fail "the plain copy linked next to the other library: the test does not bite"
fi
grep -q 'ringbuf_consume' "$out/collide.log" ||
	fail "the plain copy failed to link for another reason: $(cat "$out/collide.log")"
echo "namespace: without RINGBUF_NAMESPACE the link fails as expected ($(grep -m1 -o 'multiple definition of [^ ]*ringbuf_consume[^ ]*' "$out/collide.log" || echo 'ringbuf_consume'))"
