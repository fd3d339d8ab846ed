// tests/compile/comdat_b.cpp - the second unit of comdat_a.cpp's program.
#include "comdat.h"

bool comdat_b(struct ringbuf *rb)
{
	return comdat_log(rb, 2);
}
