/* Compile test (-std=c11 -Werror): the implementation included first defines
 * no feature-test macro for the rest of the file. ringbuf.h used to define
 * _GNU_SOURCE here, which stayed in force for the user's own includes
 * (strerror_r became the GNU one returning char *). */
#define RINGBUF_IMPLEMENTATION
#include "ringbuf_trace.h"

#include <string.h>

#if defined(_GNU_SOURCE) || defined(__USE_GNU)
#error "ringbuf.h leaked _GNU_SOURCE into the including file"
#endif
/* (glibc itself turns -pthread's _REENTRANT into _POSIX_C_SOURCE 199506L) */
#if defined(_DEFAULT_SOURCE) || defined(_XOPEN_SOURCE) || defined(_BSD_SOURCE)
#error "ringbuf.h leaked a feature-test macro into the including file"
#endif

/* close-on-exec is the real flag, also in a strict C11 file */
_Static_assert(RINGBUF__O_CLOEXEC != 0, "files opened without O_CLOEXEC");

int feature_macros_impl_first(void);
int feature_macros_impl_first(void)
{
	return (int)strlen(ringbuf_strerror(RINGBUF_EINVAL));
}
