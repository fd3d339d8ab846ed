// tests/compile/comdat.h - an inline function that writes a
// RINGBUF_CPU_CURRENT event, used by two C++ translation units
// (comdat_a.cpp, comdat_b.cpp: compile-checks links and runs them). Each unit
// emits the function in a COMDAT group and the linker keeps one copy: the
// restartable sequence's descriptor and abort stub must go with it (RSEQ in
// ringbuf.h's >>contexts; without the "?" section flag the link failed:
// "referenced in section __rseq_cs ... defined in discarded section").
#ifndef COMDAT_H
#define COMDAT_H
#include "ringbuf.h"

inline bool comdat_log(struct ringbuf *rb, unsigned v)
{
	unsigned *p = static_cast<unsigned *>(ringbuf_reserve(rb, RINGBUF_CPU_CURRENT, sizeof *p));
	if (!p)
		return false;
	*p = v;
	ringbuf_commit(rb, RINGBUF_CPU_CURRENT, p);
	return true;
}
bool comdat_b(struct ringbuf *rb);
#endif
