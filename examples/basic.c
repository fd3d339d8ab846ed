/* Demonstrates the basics: create a buffer, write events (zero-copy with
 * ringbuf_reserve/ringbuf_commit, or copied with ringbuf_write), read them
 * back with their time stamps, print the statistics and destroy the buffer. */
#define RINGBUF_IMPLEMENTATION /* in exactly one .c file of your program */
#include "ringbuf.h"

#include <inttypes.h>
#include <stdio.h>

/* An event is any plain bytes. Payloads are 4-byte aligned (8 with
 * RINGBUF_F_ALIGN8), so this struct can be read in place. */
struct sample {
	uint32_t id;
	uint32_t value;
};

int main(void)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT; /* 1 CPU, 1 MiB, 4 KiB pages */
	struct ringbuf *rb;
	int err = ringbuf_create(&cfg, &rb);
	if (err < 0) {
		fprintf(stderr, "ringbuf_create: %s\n", ringbuf_strerror(err));
		return 1;
	}

	/* Zero-copy: reserve room on CPU buffer 0, fill it in place, commit.
	 * NULL means the event was dropped; the statistics count it. */
	for (uint32_t i = 0; i < 3; i++) {
		struct sample *s = ringbuf_reserve(rb, 0, sizeof *s);
		if (s) {
			s->id = i;
			s->value = i * 100;
			ringbuf_commit(rb, 0, s);
		}
	}
	/* Copying: one call when the payload already exists. */
	struct sample last = { 3, 300 };
	err = ringbuf_write(rb, 0, &last, sizeof last);
	if (err < 0)
		fprintf(stderr, "ringbuf_write: %s\n", ringbuf_strerror(err));

	/* Read: rec.data points into the buffer until the next reader call. */
	struct ringbuf_record rec;
	while (ringbuf_consume(rb, 0, &rec) > 0) {
		const struct sample *s = rec.data;
		printf("ts=%" PRIu64 " ns  id=%" PRIu32 " value=%" PRIu32 "\n",
		       rec.ts, s->id, s->value);
		if (rec.lost)
			printf("  (%" PRIu64 " events lost before this one)\n", rec.lost);
	}

	struct ringbuf_stats st;
	if (ringbuf_stats_cpu(rb, 0, &st) == 0)
		printf("entries=%" PRIu64 " overrun=%" PRIu64 " read_events=%" PRIu64 "\n",
		       st.entries, st.overrun, st.read_events);

	ringbuf_destroy(rb);
	return 0;
}
