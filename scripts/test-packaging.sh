#!/usr/bin/env bash
# test-packaging.sh - build tiny consumers of ringbuf.h through every way it is
# packaged (run by `make test-packaging`, which `make test` runs):
#
#   install     make install PREFIX=... (headers, ringbuf.pc, CMake config) and
#               make install DESTDIR=... PREFIX=/usr PKGCONFIGDIR=..., then uninstall
#   pkg-config  tests/packaging/consumer.c built with pkg-config --cflags/--libs
#   cmake       find_package(ringbuf CONFIG) after make install and after
#               cmake --install; add_subdirectory; each with a C consumer that
#               runs and a C++-only consumer (tests/packaging/cmake_cxx) that
#               must configure, compile the implementation in C++ and run with
#               no C compiler at all
#   meson       the repository as a subproject, C and C++-only consumers
#   namespace   RINGBUF_NAMESPACE (tests/packaging/namespace.sh)
#
# Everything is built under $BUILD/packaging and installed there; nothing
# outside it is touched. A path whose tool (pkg-config, cmake, meson + ninja,
# nm) is missing is skipped, and the summary says so; scripts/check-deps.sh
# installs them when it can (optional packages). Uses CC and CXX.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$root/$BUILD ;; esac
out=$BUILD/packaging
CC=${CC:-cc}
CXX=${CXX:-c++}
export CC CXX
MAKE=${MAKE:-make}
pk=$root/tests/packaging

ver=$(sed -n 's/^#define RINGBUF_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' ringbuf.h | paste -sd.)
major=${ver%%.*} rest=${ver#*.} minor=${rest%%.*}
ran=() skipped=()

rm -rf "$out"
mkdir -p "$out"
log=$out/step.log

say() { echo "test-packaging: $*"; }
fail() { echo "test-packaging: FAIL: $*" >&2; exit 1; }
skip() { say "SKIPPED $1: $2"; skipped+=("$1"); }
# Run quietly; on failure show the output.
q() {
	if ! "$@" > "$log" 2>&1; then
		cat "$log" >&2
		fail "$*"
	fi
}
have() { command -v "${1%% *}" >/dev/null 2>&1; }
expect_files() { # dir file...: each must exist
	local d=$1 f
	shift
	for f in "$@"; do [ -f "$d/$f" ] || fail "missing after install: $d/$f"; done
}

have_cxx=0
if have "$CXX"; then have_cxx=1; else say "no C++ compiler ($CXX): C++-only consumers skipped"; fi
have_cmake=0
if have cmake; then have_cmake=1; else skip cmake "cmake not installed (apt-get install cmake)"; fi
have_pc=0
if have pkg-config; then have_pc=1; else skip pkg-config "pkg-config not installed (apt-get install pkg-config)"; fi

# The one consumer, built by pkg-config's flags. $1: flags from pkg-config.
pc_consumer() { # name cflags libs
	# shellcheck disable=SC2086 # the flags are lists
	q "$CC" -std=c11 -Wall -Wextra -pedantic -DEXPECT_MAJOR="$major" -DEXPECT_MINOR="$minor" \
		$2 -o "$out/$1" "$pk/consumer.c" $3
	q "$out/$1"
}
pc_check() { # name: pkg-config with PKG_CONFIG_LIBDIR etc. set by the caller
	[ "$(pkg-config --modversion ringbuf)" = "$ver" ] || fail "$1: ringbuf.pc version is not $ver"
	[ "$(pkg-config --libs ringbuf | xargs)" = "-pthread" ] || fail "$1: Libs is '$(pkg-config --libs ringbuf)', not -pthread"
	pc_consumer "$1" "$(pkg-config --cflags ringbuf)" "$(pkg-config --libs ringbuf)"
}
# CMake consumers: cm_c name args...; cm_cxx name args... (no C compiler).
cm_c() {
	local n=$1
	shift
	q cmake -S "$pk/cmake_c" -B "$out/$n" -DEXPECT_MAJOR="$major" -DEXPECT_MINOR="$minor" \
		-DREQUIRE_VERSION="$major.$minor" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "$@"
	cp "$log" "$out/$n.configure.log"
	q cmake --build "$out/$n"
	q "$out/$n/consumer"
}
cm_cxx() {
	local n=$1
	shift
	[ $have_cxx = 1 ] || return 0
	CC=/nonexistent/cc q cmake -S "$pk/cmake_cxx" -B "$out/$n" \
		-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "$@"
	q cmake --build "$out/$n"
	q "$out/$n/cxx_consumer"
}

# ---- versions -----------------------------------------------------------------
mver=$(sed -n "s/^project('ringbuf', version: '\([0-9.]*\)'.*/\1/p" meson.build)
[ "$mver" = "$ver" ] || fail "meson.build says version '$mver', ringbuf.h says $ver"

# ---- make install PREFIX=... ----------------------------------------------------
prefix=$out/prefix
q "$MAKE" --no-print-directory install BUILD="$BUILD" PREFIX="$prefix"
expect_files "$prefix" include/ringbuf.h include/ringbuf_trace.h include/ringbuf_trace_event.h include/ringbuf_trace_snapshot.h lib/pkgconfig/ringbuf.pc \
	lib/cmake/ringbuf/ringbufConfig.cmake lib/cmake/ringbuf/ringbufConfigVersion.cmake
ran+=(install)
if [ $have_pc = 1 ]; then
	PKG_CONFIG_LIBDIR=$prefix/lib/pkgconfig PKG_CONFIG_PATH='' pc_check pc-consumer
	ran+=(pkg-config)
fi
if [ $have_cmake = 1 ]; then
	cm_c make-find-c -DCMAKE_PREFIX_PATH="$prefix"
	grep -q "found in $prefix/lib/cmake/ringbuf" "$out/make-find-c.configure.log" || fail "find_package found another ringbuf"
	cm_cxx make-find-cxx -DCMAKE_PREFIX_PATH="$prefix"
	# the version file refuses the next minor version (0.x)
	if cmake -S "$pk/cmake_c" -B "$out/make-find-newer" -DEXPECT_MAJOR="$major" \
		-DEXPECT_MINOR="$minor" -DREQUIRE_VERSION="$major.$((minor + 1))" \
		-DCMAKE_PREFIX_PATH="$prefix" > "$log" 2>&1; then
		fail "find_package(ringbuf $major.$((minor + 1))) accepted version $ver"
	fi
	ran+=(cmake-after-make-install)
fi

# ---- make install DESTDIR=... PREFIX=/usr, other directories, uninstall ---------
stage=$out/stage
dirs=(PREFIX=/usr PKGCONFIGDIR=/usr/share/pkgconfig CMAKEDIR=/usr/share/cmake/ringbuf)
q "$MAKE" --no-print-directory install BUILD="$BUILD" DESTDIR="$stage" "${dirs[@]}"
expect_files "$stage/usr" include/ringbuf.h include/ringbuf_trace.h include/ringbuf_trace_event.h include/ringbuf_trace_snapshot.h share/pkgconfig/ringbuf.pc \
	share/cmake/ringbuf/ringbufConfig.cmake share/cmake/ringbuf/ringbufConfigVersion.cmake
grep -qx 'prefix=/usr' "$stage/usr/share/pkgconfig/ringbuf.pc" || fail "ringbuf.pc: prefix is not /usr"
if [ $have_pc = 1 ]; then
	PKG_CONFIG_SYSROOT_DIR=$stage PKG_CONFIG_LIBDIR=$stage/usr/share/pkgconfig PKG_CONFIG_PATH='' \
		pc_check pc-staged
fi
# the CMake config finds the headers relative to itself
[ $have_cmake = 0 ] || cm_c make-staged-c -DCMAKE_PREFIX_PATH="$stage/usr"
q "$MAKE" --no-print-directory uninstall BUILD="$BUILD" DESTDIR="$stage" "${dirs[@]}"
left=$(find "$stage" -type f)
[ -z "$left" ] || fail "uninstall left: $left"
ran+=(install-destdir+uninstall)

# ---- cmake --install, add_subdirectory -------------------------------------------
if [ $have_cmake = 1 ]; then
	cprefix=$out/cmake-prefix
	q cmake -S "$root" -B "$out/cmake-self" -DCMAKE_INSTALL_PREFIX="$cprefix"
	q cmake --install "$out/cmake-self"
	libdir=$(cd "$cprefix" && find . -name ringbufConfig.cmake | sed 's|^\./||; s|/cmake/ringbuf/ringbufConfig.cmake$||')
	expect_files "$cprefix" include/ringbuf.h include/ringbuf_trace.h include/ringbuf_trace_event.h include/ringbuf_trace_snapshot.h "$libdir/pkgconfig/ringbuf.pc" \
		"$libdir/cmake/ringbuf/ringbufConfigVersion.cmake" "$libdir/cmake/ringbuf/ringbufTargets.cmake"
	cm_c cmake-find-c -DCMAKE_PREFIX_PATH="$cprefix"
	grep -q "found in $cprefix/$libdir/cmake/ringbuf" "$out/cmake-find-c.configure.log" || fail "find_package found another ringbuf"
	cm_cxx cmake-find-cxx -DCMAKE_PREFIX_PATH="$cprefix"
	if [ $have_pc = 1 ]; then
		PKG_CONFIG_LIBDIR=$cprefix/$libdir/pkgconfig PKG_CONFIG_PATH='' pc_check pc-cmake
	fi
	ran+=(cmake-install)
	cm_c subdir-c -DRINGBUF_SOURCE_DIR="$root"
	cm_cxx subdir-cxx -DRINGBUF_SOURCE_DIR="$root"
	ran+=(cmake-add_subdirectory)
fi

# ---- meson subproject --------------------------------------------------------------
if ! have meson || ! have ninja; then
	skip meson "meson or ninja not installed (apt-get install meson ninja-build)"
else
	for k in c cxx; do
		[ $k = c ] || [ $have_cxx = 1 ] || continue
		d=$out/meson-$k
		mkdir -p "$d/subprojects/ringbuf"
		cp "$pk/meson_$k/meson.build" "$pk/consumer.c" "$pk/consumer.cpp" "$d/"
		cp meson.build ringbuf.h ringbuf_trace*.h "$d/subprojects/ringbuf/"
		if [ $k = c ]; then
			q meson setup "$d/build" "$d"
		else
			CC=/nonexistent/cc q meson setup --wrap-mode=forcefallback "$d/build" "$d"
		fi
		q ninja -C "$d/build"
	done
	q "$out/meson-c/build/consumer"
	[ $have_cxx = 0 ] || q "$out/meson-cxx/build/cxx_consumer"
	ran+=(meson-subproject)
fi

# ---- RINGBUF_NAMESPACE ----------------------------------------------------------------
if ! have "${NM:-nm}"; then
	skip namespace "nm not installed (binutils)"
else
	"$pk/namespace.sh" "$out/namespace" || fail "namespace"
	ran+=(namespace)
fi

say "ok: ${ran[*]}${skipped[*]:+; skipped: ${skipped[*]}}"
