/* A consumer of an installed or vendored ringbuf.h, built by every packaging
 * path that scripts/test-packaging.sh checks (pkg-config, find_package after
 * make install / cmake --install, add_subdirectory, meson subproject): the
 * one file with the implementation of both headers, linked with what the
 * package says (-pthread). Prints "consumer ok" and exits 0. */
#define RINGBUF_IMPLEMENTATION
#define RINGBUF_TRACE_DEFINE_EVENTS
#include <ringbuf_trace.h>

#include <stdio.h>

#if RINGBUF_VERSION_MAJOR != EXPECT_MAJOR || RINGBUF_VERSION_MINOR != EXPECT_MINOR
#error "the package found is not the version built"
#endif

RINGBUF_TRACE_EVENT(pkg_sample,
	RINGBUF_FIELDS(RINGBUF_FIELD(uint32_t, seq)),
	RINGBUF_PRINT("seq=%u", REC->seq));

int main(void)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf_trace_registry reg = RINGBUF_TRACE_REGISTRY_INIT("pkg");
	struct ringbuf_stats st;
	struct ringbuf *rb;
	char text[128];

	cfg.size_per_cpu = 16384;
	if (ringbuf_create(&cfg, &rb) < 0 ||
	    ringbuf_trace_register_event(&reg, &ringbuf_event_pkg_sample) < 0)
		return 1;
	/* RINGBUF_CPU_THREAD: the pthread-key path (thread exit hook) */
	if (ringbuf_thread_init(rb) < 0 || trace_pkg_sample(rb, RINGBUF_CPU_THREAD, 7) != 1)
		return 1;
	if (ringbuf_trace_format_text(&ringbuf_event_pkg_sample, text, sizeof text) < 0)
		return 1;
	if (ringbuf_stats(rb, &st) < 0 || st.committed != 1)
		return 1;
	ringbuf_thread_release(rb);
	ringbuf_destroy(rb);
	printf("consumer ok (ringbuf %d.%d.%d)\n", RINGBUF_VERSION_MAJOR, RINGBUF_VERSION_MINOR,
	       RINGBUF_VERSION_PATCH);
	return 0;
}
