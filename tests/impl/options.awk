# options.awk - the macros a test defines before its first ringbuf header that
# an implementation compiled in another file would not see: one a line, none
# when the test may be linked with the shared implementation object
# (RINGBUF_TESTING is allowed: the objects are compiled with it; so are the
# tools' *_TOOL_NO_MAIN, read by the tool's source, not by a header). The Makefile
# stops with an error when a test marked `IMPL: shared` prints one.
/^[ \t]*#[ \t]*include[ \t]*"(ringbuf|tools\/)/ { exit }
/^[ \t]*#[ \t]*(define|undef)[ \t]/ {
	line = $0
	sub(/^[ \t]*#[ \t]*(define|undef)[ \t]+/, "", line)
	sub(/[^A-Za-z0-9_].*$/, "", line)
	if (line != "_GNU_SOURCE" && line != "RINGBUF_IMPLEMENTATION" && line != "RINGBUF_TRACE_DEFINE_EVENTS" &&
	    line != "RINGBUF_TESTING" && line != "RINGBUF_RECORD_TOOL_NO_MAIN" && line != "RINGBUF_READ_TOOL_NO_MAIN")
		print FILENAME ": " line
}
