/* Compile test (-std=c11 -Werror): system headers first, so glibc's strict
 * C11 mode hides POSIX names (O_CLOEXEC among them) from the implementation.
 * ringbuf.h used to define O_CLOEXEC as 0 then: files and mappings opened
 * by ringbuf_open / the trace.dat export leaked into exec'ed children. Now the
 * flag is glibc's own value (or the build stops with #error). */
#include <fcntl.h>
#include <stdio.h>

#define RINGBUF_IMPLEMENTATION
#include "ringbuf_trace.h"

_Static_assert(RINGBUF__O_CLOEXEC != 0, "files opened without O_CLOEXEC");
#ifdef O_CLOEXEC
_Static_assert(O_CLOEXEC != 0, "O_CLOEXEC defined as 0");
#endif

int feature_macros_sys_first(void);
int feature_macros_sys_first(void)
{
	return printf("%s\n", ringbuf_strerror(RINGBUF_EINVAL)) < 0;
}
