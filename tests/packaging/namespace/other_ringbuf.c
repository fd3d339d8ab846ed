/* A stand-in for another library with ringbuf_* names: the function names
 * of rmind/ringbuf's API (ringbuf_setup ... ringbuf_consume, ringbuf_release)
 * and its own struct ringbuf, with trivial bodies written for this test.
 * Linked with a plain ringbuf.h implementation it gives
 * "multiple definition of `ringbuf_consume'"; with RINGBUF_NAMESPACE it links. */
#include <stddef.h>

struct ringbuf {
	size_t size, written, read;
};
struct ringbuf_worker {
	int unused;
};

int ringbuf_setup(struct ringbuf *rb, unsigned nworkers, size_t length)
{
	(void)nworkers;
	rb->size = length;
	rb->written = rb->read = 0;
	return 0;
}
void ringbuf_get_sizes(unsigned nworkers, size_t *ringbuf_size, size_t *worker_size)
{
	(void)nworkers;
	*ringbuf_size = sizeof(struct ringbuf);
	*worker_size = sizeof(struct ringbuf_worker);
}
struct ringbuf_worker *ringbuf_register(struct ringbuf *rb, unsigned i)
{
	static struct ringbuf_worker w;
	(void)rb;
	(void)i;
	return &w;
}
void ringbuf_unregister(struct ringbuf *rb, struct ringbuf_worker *w)
{
	(void)rb;
	(void)w;
}
long ringbuf_acquire(struct ringbuf *rb, struct ringbuf_worker *w, size_t len)
{
	(void)w;
	if (rb->written + len > rb->size)
		return -1;
	rb->written += len;
	return (long)(rb->written - len);
}
void ringbuf_produce(struct ringbuf *rb, struct ringbuf_worker *w)
{
	(void)rb;
	(void)w;
}
size_t ringbuf_consume(struct ringbuf *rb, size_t *offset)
{
	*offset = rb->read;
	return rb->written - rb->read;
}
void ringbuf_release(struct ringbuf *rb, size_t nbytes)
{
	rb->read += nbytes;
}

/* Used by main.c, which must not include both libraries' headers. */
size_t other_roundtrip(void)
{
	struct ringbuf rb;
	size_t off, n;
	ringbuf_setup(&rb, 1, 64);
	if (ringbuf_acquire(&rb, ringbuf_register(&rb, 0), 10) != 0)
		return 0;
	n = ringbuf_consume(&rb, &off);
	ringbuf_release(&rb, n);
	return n;
}
