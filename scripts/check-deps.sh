#!/usr/bin/env bash
# check-deps.sh - make sure what the test suite needs is installed.
#
# Each dependency is one line in the table below:
#
#     dep <debian-package> <required|optional> '<shell test, exit 0 when present>'
#
# Missing packages are installed with apt-get when running as root; otherwise
# the script prints how to install them. Exits 1 if a required package is
# still missing; optional packages only produce a note.
set -euo pipefail

pkgs=() kinds=() checks=()
dep() { pkgs+=("$1") kinds+=("$2") checks+=("$3"); }

# ---- the table -------------------------------------------------------------
dep libcmocka-dev     required 'test -f /usr/include/cmocka.h || pkg-config --exists cmocka'
dep libtraceevent-dev required 'pkg-config --exists libtraceevent || test -f /usr/include/traceevent/kbuffer.h'
dep trace-cmd         required 'command -v trace-cmd'
# the *_outline tests' headers (tests/variants/current_outline.patch)
dep patch             required 'command -v patch'
# make test-packaging: each consumer path is skipped (and says so) without its tool
dep pkg-config        optional 'command -v pkg-config'
dep cmake             optional 'command -v cmake'
dep meson             optional 'command -v meson'
dep ninja-build       optional 'command -v ninja'
# ----------------------------------------------------------------------------

# Fill the arrays required/optional with the packages whose test fails.
find_missing() {
	required=() optional=()
	local i
	for i in "${!pkgs[@]}"; do
		bash -c "${checks[$i]}" >/dev/null 2>&1 && continue
		if [ "${kinds[$i]}" = required ]; then
			required+=("${pkgs[$i]}")
		else
			optional+=("${pkgs[$i]}")
		fi
	done
}

find_missing
[ ${#required[@]} -eq 0 ] && [ ${#optional[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
	export DEBIAN_FRONTEND=noninteractive
	all=("${required[@]}" "${optional[@]}")
	echo "check-deps: installing ${all[*]}"
	apt-get update || true
	# Required and optional separately, so that an optional package the
	# distribution lacks cannot block a required one.
	[ ${#required[@]} -eq 0 ] || apt-get install -y "${required[@]}" || true
	[ ${#optional[@]} -eq 0 ] || apt-get install -y "${optional[@]}" || true
	find_missing
fi

for pkg in "${optional[@]}"; do
	echo "optional: $pkg — install it with: sudo apt-get install $pkg" >&2
done
for pkg in "${required[@]}"; do
	echo "missing: $pkg — install it with: sudo apt-get install $pkg" >&2
done
[ ${#required[@]} -eq 0 ]
