# Makefile for ringbuf.h (GNU make). `make help` lists the targets.
#
# Everything is built under $(BUILD) (default build/). Tests and examples are
# one .c file each, and each defines RINGBUF_IMPLEMENTATION itself (tests
# marked `IMPL: shared` are linked with the implementation compiled once per
# build directory instead: tests/README.md). A test or example that needs more
# libraries (or compile flags) says so on a line of its own:
#     /* LDFLAGS: -ltraceevent */
#     /* CFLAGS: -finstrument-functions */

## Variables (override on the command line, e.g. `make test CC=clang BUILD=build/clang`):
##   CC, CFLAGS      compiler and optimisation/debug flags (cc, -O2 $(DEBUG_FLAGS))
##   DEBUG_FLAGS     the debug part of CFLAGS' and CXXFLAGS' defaults and of make fuzz's
##                   flags (-g; .ci/run: -g1, line tables)
##   CXX, CXXFLAGS   C++ compiler and flags for tests/*/test_*.cpp (make's default, -O2 $(DEBUG_FLAGS);
##                   the C++ tests and checks are skipped, and say so, without it)
##   CXXSTD          C++ standard of the C++ tests (c++11: the oldest supported)
##   CXX_CHECK       C++ compilers of the C++ compile checks (CXX, g++ and clang++: those present)
##   LDFLAGS         extra link flags
##   BUILD           output directory (build)
##   SAN_CC          compiler for asan/ubsan/tsan (same as CC)
##   TEST_TIMEOUT    seconds each test executable may run (300)
##   TEST_JOBS       test executables make test runs at a time (2; TEST_SERIAL: alone)
##   C_CHECKS        make test: 0 leaves out the C compile checks (tests/compile/*.c; 1)
##   PREFIX, DESTDIR install location (/usr/local)
##   INCLUDEDIR, LIBDIR, PKGCONFIGDIR, CMAKEDIR
##                   install directories ($(PREFIX)/include, $(PREFIX)/lib,
##                   $(LIBDIR)/pkgconfig, $(LIBDIR)/cmake/ringbuf)
##   BENCH_QUICK=1   make bench: a short smoke run (also BENCH_ROUNDS, BENCH_EVENTS, BENCH_ONLY)
##   FUZZ_SECONDS, FUZZ_JOBS
##                   make fuzz: seconds per target (60), targets at a time (the cores)
##   VERIFY_JOBS     make verify: GenMC runs at a time (the cores)

CC      ?= cc
DEBUG_FLAGS ?= -g
CFLAGS  ?= -O2 $(DEBUG_FLAGS)
CXXFLAGS ?= -O2 $(DEBUG_FLAGS)
CXXSTD  ?= c++11
BUILD   ?= build
SAN_CC  ?= $(CC)
PREFIX  ?= /usr/local
INCLUDEDIR   ?= $(PREFIX)/include
LIBDIR       ?= $(PREFIX)/lib
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
CMAKEDIR     ?= $(LIBDIR)/cmake/ringbuf
TEST_TIMEOUT ?= 300
TEST_JOBS ?= 2
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
# targets fuzzed at a time, each on a core of its own for FUZZ_SECONDS
FUZZ_JOBS ?= $(shell nproc 2>/dev/null || echo 1)

# Always on, whatever CFLAGS says. SAN_FLAGS is set by the sanitizer targets.
WARN      := -std=c11 -Wall -Wextra -pedantic
SAN_FLAGS ?=
ALL_CFLAGS = $(WARN) $(CFLAGS) $(SAN_FLAGS) -pthread -I.
ALL_CXXFLAGS = -std=$(CXXSTD) -Wall -Wextra -pedantic $(CXXFLAGS) $(SAN_FLAGS) -pthread -I.
HAVE_CXX := $(shell command -v $(firstword $(CXX)) >/dev/null 2>&1 && echo 1)
CXX_CHECK ?= $(sort $(CXX) g++ clang++)
CXX_CHECK_STDS := c++11 c++14 c++17 c++20

# Tests: tests/<layer>/test_*.c (tests/README.md: which layer is which; a
# tests/test_*.c is built too), each into $(BUILD)/tests/<name>: names are
# unique across the folders. vpath finds a test's source by its name.
TEST_SRCS    := $(wildcard tests/test_*.c tests/*/test_*.c)
TEST_NAMES   := $(basename $(notdir $(TEST_SRCS) $(wildcard tests/test_*.cpp tests/*/test_*.cpp)))
ifneq ($(words $(TEST_NAMES)),$(words $(sort $(TEST_NAMES))))
$(error two tests with one name in tests/*/: $(shell printf '%s\n' $(TEST_NAMES) | sort | uniq -d))
endif
TEST_DIRS    := $(sort $(dir $(TEST_SRCS) $(wildcard tests/*/test_*.cpp)))
vpath test_%.c $(TEST_DIRS)
vpath test_%.cpp $(TEST_DIRS)
vpath cxx_%.c $(TEST_DIRS)
# The *_outline variants: these tests again against $(OUTLINE_DIR), a copy of
# the headers with tests/variants/current_outline.patch applied
# (RINGBUF_CPU_CURRENT's claim through the out-of-line path for every event),
# built from the same source by the %_outline rule below.
OUTLINE_TESTS = test_contexts test_owners test_signal_writers test_reset test_quiesce
OUTLINE_DIR   = $(BUILD)/outline
OUTLINE_H     = $(OUTLINE_DIR)/ringbuf.h
# -iquote: searched for #include "..." before the -I directories (-I.)
OUTLINE_INC   = -iquote $(OUTLINE_DIR)
TEST_BINS    := $(patsubst %.c,$(BUILD)/tests/%,$(notdir $(TEST_SRCS))) \
	$(patsubst %,$(BUILD)/tests/%_outline,$(OUTLINE_TESTS))
# run alone by make test (none: every test counts events, none measures time,
# and each names its files by pid or mkstemp; a test that another running test
# disturbs goes here, with the reason)
TEST_SERIAL  =
# started first when they run two at a time (the longest, with gcc -O2 or
# under a sanitizer: 10-45 s each in CI), so that the others fill the other
# core instead of one waiting for them at the end
TEST_FIRST   = test_ftrace test_interleave test_contexts_outline test_record_hostile test_read_tool test_file \
	test_kernel_regressions test_readers test_crash_accounting test_ftrace_live test_contexts
# C++ tests: tests/*/test_*.cpp, each linked with the C file its
# `// C_SOURCES: tests/x.c` line names (compiled with CC)
TEST_CXX_SRCS := $(wildcard tests/test_*.cpp tests/*/test_*.cpp)
TEST_CXX_BINS := $(if $(HAVE_CXX),$(patsubst %.cpp,$(BUILD)/tests/%,$(notdir $(TEST_CXX_SRCS))))
TEST_HDRS    := $(wildcard tests/*.h tests/*/*.h)
HEADERS      := $(wildcard ringbuf*.h)
EXAMPLE_SRCS := $(wildcard examples/*.c)
# examples/malloc_trace.c is an LD_PRELOAD shared object (malloc_trace.so)
EXAMPLE_SO_SRCS := examples/malloc_trace.c
EXAMPLE_BINS := $(patsubst examples/%.c,$(BUILD)/examples/%,$(filter-out $(EXAMPLE_SO_SRCS),$(EXAMPLE_SRCS))) \
	$(patsubst examples/%.c,$(BUILD)/examples/%.so,$(EXAMPLE_SO_SRCS))
TOOL_SRCS    := $(wildcard tools/*.c)
TOOL_BINS    := $(patsubst tools/%.c,$(BUILD)/tools/%,$(TOOL_SRCS))
BENCH_SRCS   := $(wildcard bench/*.c)
BENCH_BINS   := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))
FUZZ_SRCS    := $(wildcard fuzz/*.c)
FUZZ_BINS    := $(patsubst fuzz/%.c,$(BUILD)/fuzz/%,$(FUZZ_SRCS))
COMPILE_TESTS := $(wildcard tests/compile/*.c)
COMPILE_TESTS_CXX := $(wildcard tests/compile/*.cpp)

# Extra link flags a source file declares on `/* LDFLAGS: ... */` lines.
extra_ldflags = $(shell sed -n 's|^[[:space:]]*/\*[[:space:]]*LDFLAGS:[[:space:]]*\(.*[^[:space:]]\)[[:space:]]*\*/.*|\1|p' $(1))
# The C file a C++ test links with (`// C_SOURCES: tests/x.c`).
c_sources = $(shell sed -n 's|^[[:space:]]*//[[:space:]]*C_SOURCES:[[:space:]]*\(.*[^[:space:]]\)[[:space:]]*$$|\1|p' $(1))

# Extra compile flags a source file declares on `/* CFLAGS: ... */` lines
# (-finstrument-functions for the function tracer's test and demo).
extra_cflags = $(shell sed -n 's|^[[:space:]]*/\*[[:space:]]*CFLAGS:[[:space:]]*\(.*[^[:space:]]\)[[:space:]]*\*/.*|\1|p' $(1))

VERSION = $(shell sed -n 's/^\#define RINGBUF_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' ringbuf.h | paste -sd.)

.DELETE_ON_ERROR:
.PHONY: test-cross verify all test tests compile-checks variant-checks examples tools demo demo-ftrace asan ubsan tsan sanitize lint bench bench-ftrace bench-peers bench-real fuzz \
	install uninstall clean help

all: examples tools tests ## build the examples, the tools and the tests (without running them)

help: ## list the targets and variables
	@echo "Targets:"
	@awk -F':.*## ' '/^[a-z][a-z_-]*:.*## / { printf "  %-10s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)
	@echo
	@grep -E '^## ' $(MAKEFILE_LIST) | sed 's/^## //'

# ---- tests ------------------------------------------------------------------

test: ## check dependencies (installs cmocka when root), build and run all tests
	@scripts/check-deps.sh
	@tests/check-docs.sh
	@$(if $(SAN_FLAGS),echo "test-packaging: not repeated in sanitizer runs")
	@$(MAKE) --no-print-directory $(if $(filter output-sync,$(.FEATURES)),--output-sync=target) compile-checks $(if $(SAN_FLAGS),,test-packaging) tests
	@$(if $(HAVE_CXX),:,echo "test: no C++ compiler ($(CXX)): tests/*/test_*.cpp skipped")
	@$(RUN_TESTS) $(filter $(addprefix %/,$(TEST_FIRST)),$(TEST_BINS)) \
		$(filter-out $(addprefix %/,$(TEST_FIRST)),$(TEST_BINS)) $(TEST_CXX_BINS)

RUN_TESTS = TEST_TIMEOUT=$(TEST_TIMEOUT) TEST_WRAPPER="$(TEST_WRAPPER)" TEST_JOBS=$(TEST_JOBS) \
	TEST_SERIAL="$(TEST_SERIAL)" scripts/run-tests.sh

tests: $(TEST_BINS) $(TEST_CXX_BINS) # build only (used by test)
	@:

list-tests-c: # the C test executables' names, one a line (scripts/test-cross.sh)
	@printf '%s\n' $(notdir $(TEST_BINS))

# Compile checks of the header part as users see it: tests/compile/*.c with
# -Werror (RINGBUF_NO_INLINE, declarations only...), and tests/compile/*.cpp
# (the API with the inline path; the implementation and the event macros) with
# each of CXX_CHECK that is installed, as C++11, 14, 17 and 20 with -Werror
# (11 and 20 compiled with -O2, for the optimiser's warnings; 14, 17 parsed).
CXX_COMPILE_CHECKS = set -e; n=0; for cxx in $(CXX_CHECK); do \
		if ! command -v $$cxx >/dev/null 2>&1; then echo "compile-checks: $$cxx not found: skipped"; continue; fi; \
		for std in $(CXX_CHECK_STDS); do for f in $(COMPILE_TESTS_CXX); do \
			case $$std in c++11|c++20) o="-O2 -c -o /dev/null";; *) o=-fsyntax-only;; esac; \
			echo "$$cxx -std=$$std $$o -Wall -Wextra -pedantic -Werror -I. $$f"; \
			$$cxx -std=$$std $$o -Wall -Wextra -pedantic -Werror -pthread -I. $$f; \
			n=$$((n + 1)); done; done; done; \
	if [ $$n = 0 ]; then echo "compile-checks: no C++ compiler ($(CXX_CHECK)): C++ compile checks skipped"; fi; \
	mkdir -p $(BUILD); for cxx in $(CXX_CHECK); do command -v $$cxx >/dev/null 2>&1 || continue; \
		echo "$$cxx: link and run tests/compile/comdat_a.cpp + comdat_b.cpp (one inline writer in two units)"; \
		$$cxx -std=c++11 -O2 -Wall -Wextra -pedantic -Werror -pthread -I. -o $(BUILD)/comdat-$$cxx \
			tests/compile/comdat_a.cpp tests/compile/comdat_b.cpp; \
		$(BUILD)/comdat-$$cxx; done

# The C++ checks use no sanitizer flags: not repeated in the sanitizer runs.
# The trace layer: ringbuf_trace.h includes one header per concern (and ringbuf_tracedat.h)
TRACE_HDRS = ringbuf_trace.h ringbuf_trace_event.h ringbuf_trace_text.h ringbuf_trace_flight.h \
	ringbuf_trace_filter.h ringbuf_trace_snapshot.h ringbuf_tracedat.h

# C_CHECKS=0 leaves the C compile checks out: they take neither CFLAGS nor
# SAN_FLAGS, so a sanitizer run with make test's compiler would repeat the
# same commands (.ci/run's ASan step, gcc, when cc is gcc).
C_CHECKS ?= 1
compile-checks: # used by test; the C++ part is skipped when there is no C++ compiler
	@if [ "$(C_CHECKS)" = 0 ]; then echo "compile-checks: C compile checks not repeated (C_CHECKS=0)"; \
	else set -e; for f in $(COMPILE_TESTS); do \
		echo "$(CC) $(WARN) -Werror -I. -c $$f"; \
		$(CC) $(WARN) -Werror -pthread -I. -c -o /dev/null $$f; \
	done; fi
	@$(if $(SAN_FLAGS),echo "compile-checks: C++ compile checks not repeated in sanitizer runs",$(CXX_COMPILE_CHECKS))
	@$(if $(SAN_FLAGS),echo "variant-checks: not repeated in sanitizer runs",$(MAKE) --no-print-directory variant-checks)

# Build variants one compile of the tests cannot show (tests/variants/*.c):
# -masm=intel (x86-64 only), and a writer unit without RINGBUF_DEBUG linked
# with an implementation built with it. A program exits 77 where it cannot
# check (no rseq CPU number: no inline path).
VARIANT_RUN = run() { st=0; "$$1" || st=$$?; \
	if [ $$st = 77 ]; then echo "variant-checks: $$1: skipped"; \
	elif [ $$st != 0 ]; then echo "variant-checks: $$1 FAILED" >&2; exit 1; fi; }
variant-checks: # used by test (compile-checks)
	@set -e; mkdir -p $(BUILD)/variants; $(VARIANT_RUN); \
	if [ "$$($(CC) -dumpmachine | cut -d- -f1)" = x86_64 ]; then \
		echo "$(CC) $(WARN) -Werror -masm=intel -DRINGBUF_PORTABLE tests/variants/masm_intel.c"; \
		$(CC) $(WARN) -Werror -O2 -masm=intel -DRINGBUF_PORTABLE -pthread -I. \
			-o $(BUILD)/variants/masm_intel tests/variants/masm_intel.c; \
		run $(BUILD)/variants/masm_intel; fi; \
	echo "$(CC) $(WARN) -Werror tests/variants/debug_mix.c tests/variants/debug_mix_impl.c"; \
	$(CC) $(WARN) -Werror -O2 -pthread -I. -o $(BUILD)/variants/debug_mix \
		tests/variants/debug_mix.c tests/variants/debug_mix_impl.c; \
	run $(BUILD)/variants/debug_mix

# The implementation compiled once per build directory (one per compiler,
# flags and sanitizer): ringbuf_impl.o (ringbuf.h) and all_impl.o (every
# header), each also against $(OUTLINE_DIR) for the outline variants.
# A test marked `/* IMPL: shared */` (tests/README.md) is compiled without the
# implementation (its include guards predefined) and linked with the object
# for its first ringbuf header: ringbuf_impl.o for ringbuf.h, all_impl.o for
# the others (and for a tool's source: the tools include the companions).
# White-box tests reach the implementation's private names through
# tests/internal.h. Other tests (an option or CFLAGS of their own, a private
# struct dereferenced) compile it themselves.
# IMPL_SKIP: each header's guard, `#if defined(RINGBUF_IMPLEMENTATION) &&
# !defined(RINGBUF_..._IMPLEMENTATION_INCLUDED)`, read from the headers (a new
# header needs no edit here; tests/impl/all_impl.c must include it).
# RINGBUF_TEST_SHARED: tests/internal.h then names the implementation's
# private functions, variables and constants a white-box test uses through the
# shared object's definitions of them (tests/impl/internal_impl.h).
IMPL_SKIP := $(patsubst %,-D%=1,$(shell sed -n 's/^\#if defined(RINGBUF_IMPLEMENTATION) && !defined(\(RINGBUF_[A-Z_]*IMPLEMENTATION_INCLUDED\)).*/\1/p' $(HEADERS))) \
	-DRINGBUF_TEST_SHARED=1
SHARED_SRCS := $(if $(TEST_SRCS),$(shell grep -l '^/\* IMPL: shared' $(TEST_SRCS)))
# _GNU_SOURCE before the first include changes the implementation too (with
# strict C11, <sys/mman.h> has no MAP_ANONYMOUS: an anonymous buffer comes
# from the allocator, every page touched): ringbuf_impl_gnu.o is compiled with
# it, for the tests that define it; all_impl.c defines it (ringbuf_net.h).
# $(1): a test's name -> its implementation object (empty: its own), $(2): outline suffix
impl_obj = $(foreach f,$(filter %/$(1).c,$(SHARED_SRCS)),$(BUILD)/impl/$(if $(call includes_companion,$(f)),all_impl,ringbuf_impl$(if \
	$(call defines_gnu,$(f)),_gnu))$(2).o)
includes_companion = $(shell grep -l '^[[:space:]]*\#[[:space:]]*include[[:space:]]*"\(ringbuf_\|tools/\)' $(1))
defines_gnu = $(shell sed -n '1,/^[[:space:]]*\#[[:space:]]*include[[:space:]]*"\(ringbuf\|tools\/\)/p' $(1) | \
	grep -l '^[[:space:]]*\#[[:space:]]*define[[:space:]]*_GNU_SOURCE')
# Named as targets, so not intermediate files: kept, and a missing one is
# built (an intermediate one would not make its tests out of date).
IMPL_TEST_HDRS := tests/internal.h tests/impl/internal_impl.h
IMPL_OBJS := $(foreach o,ringbuf_impl ringbuf_impl_gnu all_impl,$(BUILD)/impl/$(o).o $(BUILD)/impl/$(o)_outline.o)
$(IMPL_OBJS): | $(BUILD)/impl
$(BUILD)/impl/%.o: tests/impl/%.c $(HEADERS) $(IMPL_TEST_HDRS) | $(BUILD)/impl
	$(CC) $(ALL_CFLAGS) -DRINGBUF_TESTING -c -o $@ $<
$(BUILD)/impl/%_outline.o: tests/impl/%.c $(HEADERS) $(IMPL_TEST_HDRS) $(OUTLINE_H) | $(BUILD)/impl
	$(CC) $(ALL_CFLAGS) -DRINGBUF_TESTING $(OUTLINE_INC) -c -o $@ $<
$(BUILD)/impl/%_gnu.o: tests/impl/%.c $(HEADERS) $(IMPL_TEST_HDRS) | $(BUILD)/impl
	$(CC) $(ALL_CFLAGS) -D_GNU_SOURCE=1 -DRINGBUF_TESTING -c -o $@ $<
$(BUILD)/impl/%_gnu_outline.o: tests/impl/%.c $(HEADERS) $(IMPL_TEST_HDRS) $(OUTLINE_H) | $(BUILD)/impl
	$(CC) $(ALL_CFLAGS) -D_GNU_SOURCE=1 -DRINGBUF_TESTING $(OUTLINE_INC) -c -o $@ $<
# The headers of the outline variants: every header copied (a companion's
# #include "ringbuf.h" then finds the copy beside it), the patch applied.
$(OUTLINE_H): $(HEADERS) tests/variants/current_outline.patch
	@rm -rf $(OUTLINE_DIR) && mkdir -p $(OUTLINE_DIR) && cp $(HEADERS) $(OUTLINE_DIR)/
	@patch -s --fuzz=0 -p1 -d $(OUTLINE_DIR) <tests/variants/current_outline.patch || { rm -rf $(OUTLINE_DIR); \
		echo "tests/variants/current_outline.patch does not apply to ringbuf.h: update its context lines" >&2; exit 1; }
# A shared test must not define an option the object would not see (and one
# that includes a companion header defines _GNU_SOURCE, as all_impl.c does),
# nor have a CFLAGS line (-finstrument-functions, -fno-omit-frame-pointer:
# the flags its test needs in the implementation's code too).
check_shared = $(if $(2),@o=$$(awk -f tests/impl/options.awk $(1)); if [ -n "$$o" ]; then \
	echo "$$o: a test marked IMPL: shared defines an option; remove the mark (tests/README.md)" >&2; exit 1; fi \
	$(if $(call includes_companion,$(1)),$(if $(call defines_gnu,$(1)),,; \
	echo "$(1): marked IMPL: shared, includes a companion header: define _GNU_SOURCE first, as tests/impl/all_impl.c does" >&2; exit 1)) \
	$(if $(call extra_cflags,$(1)),; \
	echo "$(1): marked IMPL: shared with a CFLAGS line: its flags would not compile the implementation (tests/README.md)" >&2; exit 1))

# A test that compiles the implementation itself compiles it as a one-unit
# user would, with RINGBUF_STATIC: the compiler drops the functions the test
# does not call (a third to two fifths of such a test's compile time; the
# shared objects keep external linkage, so both ways are tested).
OWN_IMPL = -DRINGBUF_STATIC
.SECONDEXPANSION:
$(BUILD)/tests/test_%: test_%.c $(HEADERS) $(TEST_HDRS) $$(call impl_obj,test_$$*) | $(BUILD)/tests
	$(call check_shared,$<,$(call impl_obj,test_$*))
	$(CC) $(ALL_CFLAGS) $(call extra_cflags,$<) -DRINGBUF_TESTING -Itests $(if $(call impl_obj,test_$*),$(IMPL_SKIP),$(OWN_IMPL)) \
		$(LDFLAGS) -o $@ $< $(call impl_obj,test_$*) -lcmocka $(call extra_ldflags,$<)
$(BUILD)/tests/test_%_outline: test_%.c $(HEADERS) $(TEST_HDRS) $(OUTLINE_H) $$(call impl_obj,test_$$*,_outline) | $(BUILD)/tests
	$(call check_shared,$<,$(call impl_obj,test_$*,_outline))
	$(CC) $(ALL_CFLAGS) $(call extra_cflags,$<) -DRINGBUF_TESTING -Itests $(OUTLINE_INC) \
		$(if $(call impl_obj,test_$*,_outline),$(IMPL_SKIP),$(OWN_IMPL)) \
		$(LDFLAGS) -o $@ $< $(call impl_obj,test_$*,_outline) -lcmocka $(call extra_ldflags,$<)
# tests/trace/test_ftrace_fentry.c: gcc's x86-64 -mfentry NOP sites (ringbuf_ftrace.h
# >>fentry) when $(CC) makes them; other compilers and architectures build it
# without them (it checks that patching refuses, and skips). Compiled with
# -pg, linked without it: -pg at link time adds gcrt1.o, which writes gmon.out.
FENTRY_FLAGS := -pg -mfentry -mnop-mcount -mrecord-mcount -fno-pie
# (not under TSan, which defers the tracer's SIGTRAP handler and reports it)
fentry_ok = $(if $(findstring thread,$(SAN_FLAGS)),,$(shell printf 'int main(void) { return 0; }\n' | $(CC) $(FENTRY_FLAGS) -no-pie $(SAN_FLAGS) -x c -o /dev/null - >/dev/null 2>&1 && echo 1))
$(BUILD)/tests/test_ftrace_fentry: tests/trace/test_ftrace_fentry.c ringbuf.h $(TRACE_HDRS) ringbuf_ftrace.h | $(BUILD)/tests
	$(CC) $(ALL_CFLAGS) $(if $(fentry_ok),$(FENTRY_FLAGS) -DTEST_FENTRY) -DRINGBUF_TESTING -Itests -c -o $@.o $<
	$(CC) $(ALL_CFLAGS) $(if $(fentry_ok),-no-pie) $(LDFLAGS) -o $@ $@.o -lcmocka
# a test that includes another test's source
$(BUILD)/tests/test_trace_inline: tests/trace/test_trace_events.c
# tests that include a tool's source
$(BUILD)/tests/test_read_tool: tools/ringbuf-read.c
$(BUILD)/tests/test_record: tools/ringbuf-record.c
$(BUILD)/tests/test_record_net: tools/ringbuf-record.c
$(BUILD)/tests/test_record_hostile: tools/ringbuf-record.c
# -e's test also runs the tool itself (signals, SIGKILL)
$(BUILD)/tests/test_record_kernel: tools/ringbuf-record.c $(BUILD)/tools/ringbuf-record
$(BUILD)/tests/test_record_kernel: ALL_CFLAGS += -DRINGBUF_RECORD_BIN='"$(abspath $(BUILD))/tools/ringbuf-record"'
$(BUILD)/tests/test_fuzz_findings: tools/ringbuf-record.c
# the preload example's end-to-end test: runs the .so it names
$(BUILD)/tests/test_malloc_trace: tools/ringbuf-record.c examples/malloc_check.c $(BUILD)/examples/malloc_trace.so
$(BUILD)/tests/test_malloc_trace: ALL_CFLAGS += -DMALLOC_TRACE_SO='"$(abspath $(BUILD))/examples/malloc_trace.so"'

$(BUILD)/tests/test_%: test_%.cpp ringbuf.h $(TRACE_HDRS) $(TEST_HDRS) $(wildcard tests/*/cxx_*.c) | $(BUILD)/tests
	$(CC) $(ALL_CFLAGS) -DRINGBUF_TESTING -Itests -c -o $@-c.o $(call c_sources,$<)
	$(CXX) $(ALL_CXXFLAGS) -DRINGBUF_TESTING -Itests $(LDFLAGS) -o $@ $< $@-c.o -lcmocka $(call extra_ldflags,$<)

# Sanitizer builds: the same tests, their own build directory, their own flags.
# Each report makes the test fail (no recovery, halt on the first error).
# The C++ tests link a C object: the C++ compiler must match SAN_CC's runtime.
SAN_CXX ?= $(if $(findstring clang,$(SAN_CC)),$(subst clang,clang++,$(SAN_CC)),$(CXX))
SAN_MAKE = $(MAKE) --no-print-directory test CC=$(SAN_CC) CXX=$(SAN_CXX) TEST_TIMEOUT=$(TEST_TIMEOUT)

asan: ## build and run the tests with AddressSanitizer (+ leak checks) in build/asan/
	@+ASAN_OPTIONS=detect_leaks=1 $(SAN_MAKE) BUILD=$(BUILD)/asan \
		SAN_FLAGS="-fsanitize=address -fno-omit-frame-pointer"

ubsan: ## build and run the tests with UndefinedBehaviorSanitizer in build/ubsan/
	@+UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 $(SAN_MAKE) BUILD=$(BUILD)/ubsan \
		SAN_FLAGS="-fsanitize=undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"

# TSan cannot map its shadow memory under high ASLR entropy (vm.mmap_rnd_bits
# = 32 on recent kernels); running under `setarch -R` avoids that when allowed.
TSAN_WRAPPER = $(shell setarch $$(uname -m) -R true >/dev/null 2>&1 && echo setarch $$(uname -m) -R)

tsan: ## build and run the tests with ThreadSanitizer in build/tsan/
	@+TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 $(SAN_MAKE) BUILD=$(BUILD)/tsan \
		SAN_FLAGS="-fsanitize=thread" TEST_WRAPPER="$(TSAN_WRAPPER)"

# AddressSanitizer and UndefinedBehaviorSanitizer in one build and one run
# (what CI uses: half the time of asan + ubsan).
asan-ubsan: ## build and run the tests with ASan (+ leak checks) and UBSan together in build/asan-ubsan/
	@+ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		$(SAN_MAKE) BUILD=$(BUILD)/asan-ubsan \
		SAN_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"

# ThreadSanitizer and UndefinedBehaviorSanitizer in one clang build and run
# (what CI uses for its clang runs: clang's UBSan checks without a build and a
# run of their own; TSan cannot be combined with ASan, UBSan can).
tsan-ubsan: ## build and run the tests with TSan and UBSan together (clang) in build/tsan-ubsan/
	@+TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		$(SAN_MAKE) BUILD=$(BUILD)/tsan-ubsan \
		SAN_FLAGS="-fsanitize=thread,undefined -fno-sanitize-recover=all" TEST_WRAPPER="$(TSAN_WRAPPER)"

sanitize: asan ubsan tsan ## all three sanitizer runs

# ---- examples and demo ------------------------------------------------------

examples: $(EXAMPLE_BINS) ## build examples/*.c into build/examples/

$(BUILD)/examples/%: examples/%.c ringbuf.h $(TRACE_HDRS) ringbuf_ftrace.h | $(BUILD)/examples
	$(CC) $(ALL_CFLAGS) $(call extra_cflags,$<) $(LDFLAGS) -o $@ $< $(call extra_ldflags,$<)

$(BUILD)/examples/%.so: examples/%.c ringbuf.h $(TRACE_HDRS) | $(BUILD)/examples
	$(CC) $(ALL_CFLAGS) $(call extra_cflags,$<) $(LDFLAGS) -o $@ $< $(call extra_ldflags,$<)

tools: $(TOOL_BINS) ## build tools/*.c (ringbuf-read) into build/tools/

$(BUILD)/tools/%: tools/%.c ringbuf.h $(TRACE_HDRS) ringbuf_net.h | $(BUILD)/tools
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(call extra_ldflags,$<)

demo-ftrace: ## the function tracer: build and run examples/ftrace_demo.c, write build/ftrace.dat, show trace-cmd report
	@$(MAKE) --no-print-directory $(BUILD)/examples/ftrace_demo
	$(BUILD)/examples/ftrace_demo $(BUILD)/ftrace.dat
	@if command -v trace-cmd >/dev/null 2>&1; then \
		echo "trace-cmd report $(BUILD)/ftrace.dat (head):"; \
		trace-cmd report $(BUILD)/ftrace.dat 2>&1 | head -n 60; \
	else echo "trace-cmd not installed: open $(BUILD)/ftrace.dat with trace-cmd report or KernelShark"; fi

demo: ## build and run the demo (examples/demo.c, else examples/basic.c)
ifneq ($(wildcard examples/demo.c),)
	@$(MAKE) --no-print-directory $(BUILD)/examples/demo
	$(BUILD)/examples/demo
else
	@$(MAKE) --no-print-directory $(BUILD)/examples/basic
	$(BUILD)/examples/basic
endif

# ---- lint -------------------------------------------------------------------

lint: ## cppcheck the implementation; compile tests/compile/*.c and *.cpp with -Werror
	cppcheck --error-exitcode=1 --enable=warning,portability --std=c11 --language=c -q \
		-D__ORDER_LITTLE_ENDIAN__=1234 -D__ORDER_BIG_ENDIAN__=4321 -D__BYTE_ORDER__=1234 \
		-DRINGBUF_IMPLEMENTATION ringbuf.h
	@set -e; for f in $(COMPILE_TESTS); do \
		echo "$(CC) $(WARN) -Werror -I. -c $$f"; \
		$(CC) $(WARN) -Werror -pthread -I. -c -o /dev/null $$f; \
	done
	@$(CXX_COMPILE_CHECKS)

# ---- benchmarks and fuzzing (placeholders until bench/ and fuzz/ exist) -----

bench: ## build and run bench/*.c: a table and $(BUILD)/bench.json (BENCH_QUICK=1: smoke run)
ifeq ($(BENCH_SRCS),)
	@echo "no benchmarks yet"
else
	@$(MAKE) --no-print-directory $(BENCH_BINS)
	@set -e; for b in $(BENCH_BINS); do echo "==== $$b"; BENCH_JSON=$(BUILD)/bench.json $$b; done
endif

# Every function of a benchmark starts on a 64-byte boundary, so that a row's
# loop does not move by a change elsewhere in the program: the same 181
# instructions of rb_loop_16_thread measured +0.5 and +1.2 ns over the explicit
# index at two placements (Intel Xeon VM), with no line of them changed.
BENCH_ALIGN ?= -falign-functions=64

# The build command is compiled in, so the report names the flags it ran with.
# bench/bench_cxx.cpp (the write loop compiled as C++) is linked into bench.c
# when there is a C++ compiler (no C++ runtime needed: no exceptions, no RTTI).
BENCH_CXX_OBJ := $(if $(HAVE_CXX),$(if $(wildcard bench/bench_cxx.cpp),$(BUILD)/bench/bench_cxx.o))
BENCH_CXX_FLAGS = $(ALL_CXXFLAGS) $(BENCH_ALIGN) -fno-exceptions -fno-rtti

$(BUILD)/bench/bench_cxx.o: bench/bench_cxx.cpp ringbuf.h bench/bench_common.h | $(BUILD)/bench
	$(CXX) $(BENCH_CXX_FLAGS) -c -o $@ $<

$(BUILD)/bench/%: bench/%.c ringbuf.h $(TRACE_HDRS) $(wildcard bench/*.h) $(BENCH_CXX_OBJ) | $(BUILD)/bench
	$(CC) $(ALL_CFLAGS) $(BENCH_ALIGN) $(LDFLAGS) -DBENCH_BUILD='"$(CC) $(ALL_CFLAGS) $(BENCH_ALIGN) $(LDFLAGS)"' \
		$(if $(BENCH_CXX_OBJ),-DBENCH_HAVE_CXX=1 -DBENCH_CXX_BUILD='"$(CXX) $(BENCH_CXX_FLAGS)"') \
		-o $@ $< $(BENCH_CXX_OBJ) $(call extra_ldflags,$<)

bench-ftrace: ## the function tracer's cost per traced call, vs untraced, uftrace, LTTng, a 2-record floor and the clock alone (bench/ftrace/; FTRACE_N, FTRACE_ROUNDS)
	@CC="$(CC)" CFLAGS="$(CFLAGS)" bench/ftrace/run.sh $(BUILD)

bench-real: ## malloc tracer on sqlite3, CPython, gcc: plain / the clock floor / malloc_trace.so + ringbuf-record / the same in-process / LTTng libc wrapper (not CI; BENCH_REAL_ROUNDS, BENCH_REAL_ONLY)
	@$(MAKE) --no-print-directory $(BUILD)/tools/ringbuf-record $(BUILD)/examples/malloc_trace.so $(BUILD)/examples/malloc_check \
		$(BUILD)/bench/clock_floor.so
	@python3 bench/real/bench_real.py $(BUILD)

# bench-real's floor mode: the allocation calls interposed, one clock read each
$(BUILD)/bench/clock_floor.so: bench/real/clock_floor.c | $(BUILD)/bench
	$(CC) $(ALL_CFLAGS) $(call extra_cflags,$<) $(LDFLAGS) -o $@ $< $(call extra_ldflags,$<)

bench-peers: ## LTTng-UST side by side with ringbuf.h (bench/peers/; skipped if not installed)
	@$(MAKE) --no-print-directory -f bench/peers/peers.mk BUILD=$(BUILD) CC="$(CC)" CFLAGS="$(CFLAGS)"

fuzz: ## build fuzz/*.c with libFuzzer (FUZZ_CC) and run each for FUZZ_SECONDS
ifeq ($(FUZZ_SRCS),)
	@echo "no fuzz targets yet"
else
	@$(MAKE) --no-print-directory $(FUZZ_BINS)
	@FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(FUZZ_JOBS) scripts/run-fuzz.sh $(BUILD)/fuzz $(FUZZ_BINS)
endif

# RINGBUF_TESTING is defined by the targets that need the test-point hook.
# fuzz_intake.c compiles ringbuf-record in (and every header through it)
$(BUILD)/fuzz/%: fuzz/%.c $(wildcard ringbuf*.h) tools/ringbuf-record.c $(TEST_HDRS) | $(BUILD)/fuzz
	$(FUZZ_CC) $(WARN) $(DEBUG_FLAGS) -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-pthread -I. -o $@ $< $(call extra_ldflags,$<)

# ---- soak -------------------------------------------------------------------

##   SOAK_SECONDS    make soak: how long the signal torture runs (600)
SOAK_SECONDS ?= 600
.PHONY: soak stress asan-ubsan tsan-ubsan

soak: $(BUILD)/tests/soak ## signal-torture soak (tests/soak.c) for SOAK_SECONDS; prints totals
	$(BUILD)/tests/soak $(SOAK_SECONDS)

##   STRESS_SECONDS  make stress: how long the cross-thread stress runs (300)
STRESS_SECONDS ?= 300
stress: $(BUILD)/tests/soak $(BUILD)/tests/test_model ## cross-thread stress (merged readers, 66-256 buffers, control calls, resets) for STRESS_SECONDS, then the model-based random test over MODEL_SEEDS (400) seeds
	$(BUILD)/tests/soak --stress $(STRESS_SECONDS)
	MODEL_SEEDS=$${MODEL_SEEDS:-400} $(BUILD)/tests/test_model

# Not a test_*.c file, so `make test` does not run it; built without
# RINGBUF_TESTING (the production write path).
$(BUILD)/tests/soak: tests/soak.c ringbuf.h $(TEST_HDRS) | $(BUILD)/tests
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< -lrt

# ---- 32-bit -----------------------------------------------------------------

##   CC32, TESTS32   make test32: the i686 compiler (i686-linux-gnu-gcc) and the
##                   tests it builds and runs (owner words, word widths, contexts, fork)
CC32    ?= i686-linux-gnu-gcc
TESTS32 ?= test_owners test_contexts test_fork
.PHONY: test32

# i686 binaries run natively on x86-64 (libc6:i386, libcmocka-dev:i386 or the
# cross libc); skipped, and says so, without the compiler. -Wno-psabi: the
# note that GCC 11 changed the alignment of _Atomic 64-bit fields on i386.
test32: ## build and run TESTS32 with CC32 (gcc -m32 class: 64-bit words on a 32-bit build)
	@if ! command -v $(CC32) >/dev/null 2>&1; then echo "test32: $(CC32) not found: skipped"; exit 0; fi; \
	$(MAKE) --no-print-directory $(addprefix $(BUILD)/i686/tests/,$(TESTS32)) BUILD=$(BUILD)/i686 CC=$(CC32) \
		CFLAGS="$(CFLAGS) -Wno-psabi" LDFLAGS="-L/usr/lib/i386-linux-gnu" SAN_FLAGS= && \
	$(RUN_TESTS) $(addprefix $(BUILD)/i686/tests/,$(TESTS32))

# ---- model checking ---------------------------------------------------------

verify: ## model-check verify/*.c with GenMC under RC11 and IMM (skipped, and says so, without GenMC)
	@VERIFY_LOG=$(BUILD)/verify verify/run.sh

# ---- other architectures ----------------------------------------------------

##   CROSS_ARCHES    make test-cross: which (i686 aarch64 s390x armhf)
test-cross: ## the tests on i686, aarch64, s390x, armhf (cross compilers + qemu-user; installs them when root)
	@BUILD=$(BUILD) scripts/test-cross.sh $(CROSS_ARCHES)

# ---- install ----------------------------------------------------------------

# ringbuf.pc and the CMake config are written at install time, from the
# templates in cmake/, so that they carry these directories. The CMake config
# finds the headers relative to itself: a DESTDIR staging tree works as is.
# Libs: -pthread: the implementation calls pthread_key_create, pthread_atfork
# (libpthread before glibc 2.34) and thrd_yield (C11 threads); clock_gettime
# is in libc since glibc 2.17, so no -lrt. ringbuf_trace.h needs nothing more.
INC_REL = $(shell realpath -m --relative-to='$(CMAKEDIR)' '$(INCLUDEDIR)' 2>/dev/null)
PC_INCLUDEDIR = $(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))
CMAKE_INCLUDE = $(if $(INC_REL),$${CMAKE_CURRENT_LIST_DIR}/$(INC_REL),$(INCLUDEDIR))

install: | $(BUILD) ## install ringbuf.h, ringbuf_trace*.h, ringbuf_tracedat.h, ringbuf_net.h, ringbuf_ftrace.h, ringbuf.pc and the CMake config under DESTDIR
	sed -e 's|@prefix@|$(PREFIX)|' -e 's|@includedir@|$(PC_INCLUDEDIR)|' \
		-e 's|@version@|$(VERSION)|' cmake/ringbuf.pc.in > $(BUILD)/ringbuf.pc
	sed -e 's|@INCLUDE@|$(CMAKE_INCLUDE)|' cmake/ringbufConfig.make.in > $(BUILD)/ringbufConfig.cmake
	sed -e 's|@VERSION@|$(VERSION)|' -e 's|@MAJOR@|$(word 1,$(subst ., ,$(VERSION)))|' \
		-e 's|@MINOR@|$(word 2,$(subst ., ,$(VERSION)))|' \
		cmake/ringbufConfigVersion.make.in > $(BUILD)/ringbufConfigVersion.cmake
	install -d $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(CMAKEDIR)
	install -m 644 $(HEADERS) $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 $(BUILD)/ringbuf.pc $(DESTDIR)$(PKGCONFIGDIR)/ringbuf.pc
	install -m 644 $(BUILD)/ringbufConfig.cmake $(BUILD)/ringbufConfigVersion.cmake $(DESTDIR)$(CMAKEDIR)/

uninstall: ## remove what install installed (same DESTDIR, PREFIX and directories)
	rm -f $(addprefix $(DESTDIR)$(INCLUDEDIR)/,$(HEADERS)) \
		$(DESTDIR)$(PKGCONFIGDIR)/ringbuf.pc \
		$(DESTDIR)$(CMAKEDIR)/ringbufConfig.cmake $(DESTDIR)$(CMAKEDIR)/ringbufConfigVersion.cmake
	rmdir $(DESTDIR)$(CMAKEDIR) 2>/dev/null || true

# ---- packaging tests --------------------------------------------------------

.PHONY: test-packaging

test-packaging: ## consumers of make install, pkg-config, CMake, meson; RINGBUF_NAMESPACE (tests/packaging/)
	@CC="$(CC)" CXX="$(CXX)" BUILD="$(BUILD)" scripts/test-packaging.sh

clean: ## remove the build directory (BUILD)
	rm -rf $(BUILD)

$(BUILD) $(BUILD)/tests $(BUILD)/impl $(BUILD)/examples $(BUILD)/tools $(BUILD)/bench $(BUILD)/fuzz:
	mkdir -p $@
