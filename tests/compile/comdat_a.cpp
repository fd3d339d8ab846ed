// tests/compile/comdat_a.cpp - with comdat_b.cpp, one program whose two C++
// units both emit the inline comdat_log() (comdat.h): it must link, and its
// two events come back. Built and run by compile-checks.
#define RINGBUF_IMPLEMENTATION
#include "comdat.h"

#include <cstdio>

int main()
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	struct ringbuf_record rec;
	struct ringbuf *rb;
	unsigned c, n = 0;
	cfg.ncpu = 256;
	cfg.size_per_cpu = 8192;
	if (ringbuf_create(&cfg, &rb) != 0)
		return 1;
	if (!comdat_log(rb, 1) || !comdat_b(rb))
		return 2;
	for (c = 0; c < ringbuf_ncpu(rb); c++)
		while (ringbuf_consume(rb, c, &rec) == 1)
			n++;
	ringbuf_destroy(rb);
	std::printf("comdat: %u events\n", n);
	return n == 2 ? 0 : 3;
}
