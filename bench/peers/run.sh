#!/bin/sh
# bench/peers/run.sh BINARY JSON - run the peers benchmark inside its own
# LTTng session: starts a private lttng-sessiond (no kernel tracing), creates
# a session that records to a temporary directory with a discard-mode and an
# overwrite-mode channel (4 x 256 KiB sub-buffers = 1 MiB per CPU, like the
# ringbuf variants), runs BINARY, stops and destroys the session, stops the
# daemon it started and removes the temporary directory.
set -u
bin=$1
json=$2

if lttng list >/dev/null 2>&1; then
	echo "bench-peers: skipped: a session daemon is already running (not touching it)"
	exit 0
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ringbuf-peers.XXXXXX") || exit 1
export LTTNG_HOME="$tmp"
session="ringbuf-bench-$$"
sd=""

cleanup() {
	lttng destroy "$session" >/dev/null 2>&1
	if [ -n "$sd" ]; then
		kill "$sd" 2>/dev/null
		wait "$sd" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

lttng-sessiond --no-kernel >"$tmp/sessiond.log" 2>&1 &
sd=$!
i=0
until lttng list >/dev/null 2>&1; do
	i=$((i + 1))
	if [ $i -gt 100 ] || ! kill -0 "$sd" 2>/dev/null; then
		echo "bench-peers: skipped: lttng-sessiond did not start:"
		sed 's/^/  /' "$tmp/sessiond.log"
		exit 0
	fi
	sleep 0.1
done

set -e
lttng create "$session" --output="$tmp/trace" >/dev/null
lttng enable-channel -u --discard --subbuf-size=256K --num-subbuf=4 discard >/dev/null
lttng enable-channel -u --overwrite --subbuf-size=256K --num-subbuf=4 overwrite >/dev/null
lttng enable-event -u -c discard ringbuf_bench:discard16 >/dev/null
lttng enable-event -u -c overwrite ringbuf_bench:overwrite16 >/dev/null
lttng start >/dev/null
set +e

echo "LTTng: $(lttng --version | head -n 1); session $session, trace in a temporary directory"
BENCH_JSON="$json" "$bin"
rc=$?

stop_out=$(lttng stop "$session" 2>&1)
discarded=$(printf '%s\n' "$stop_out" | sed -n 's/.*[^0-9]\([0-9][0-9]*\) events* were discarded.*/\1/p' | head -n 1)
[ -n "$discarded" ] || discarded=0
echo "LTTng discarded events (discard channel, whole run): $discarded"
echo "trace size: $(du -sh "$tmp/trace" 2>/dev/null | cut -f1)"
if [ $rc -eq 0 ] && [ "$json" != "-" ] && [ -f "$json" ]; then
	sed -i "s/\"lttng_discarded_events\": null/\"lttng_discarded_events\": $discarded/" "$json"
fi
exit $rc
