# bench/peers/peers.mk - `make bench-peers`: LTTng-UST next to ringbuf.h.
# Invoked by the top-level Makefile (make -f bench/peers/peers.mk BUILD=...).
# Skips with a message, and succeeds, when LTTng-UST or lttng-tools is missing.
# Install them with: apt-get install -y liblttng-ust-dev lttng-tools

CC     ?= cc
CFLAGS ?= -O2 -g
BUILD  ?= build

PEERS_CFLAGS = -std=gnu11 -Wall -Wextra $(CFLAGS) -pthread -I. -Ibench/peers
PEERS_LIBS   = -llttng-ust -ldl
PEERS_BIN    = $(BUILD)/bench/peers
HAVE_UST    := $(shell printf '\#include <lttng/tracepoint.h>\n' | $(CC) -E -x c - >/dev/null 2>&1 && echo yes)
HAVE_TOOLS  := $(shell command -v lttng >/dev/null 2>&1 && command -v lttng-sessiond >/dev/null 2>&1 && echo yes)

.PHONY: run
run:
ifneq ($(HAVE_UST)$(HAVE_TOOLS),yesyes)
	@echo "bench-peers: skipped: needs liblttng-ust-dev (lttng/tracepoint.h: $(or $(HAVE_UST),missing))" \
		"and lttng-tools (lttng, lttng-sessiond: $(or $(HAVE_TOOLS),missing));" \
		"apt-get install -y liblttng-ust-dev lttng-tools"
else
	@$(MAKE) --no-print-directory -f bench/peers/peers.mk $(PEERS_BIN)
	@sh bench/peers/run.sh $(PEERS_BIN) $(BUILD)/bench-peers.json
endif

$(PEERS_BIN): bench/peers/peers.c bench/peers/tp.c bench/peers/ringbuf_bench_tp.h \
		bench/bench_common.h ringbuf.h
	@mkdir -p $(dir $@)
	$(CC) $(PEERS_CFLAGS) -DBENCH_BUILD='"$(CC) $(PEERS_CFLAGS)"' -o $@ \
		bench/peers/peers.c bench/peers/tp.c $(PEERS_LIBS)
