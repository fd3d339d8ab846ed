/* Calls each part linked in (see namespace.sh): two copies of ringbuf.h,
 * a plain one and one built with RINGBUF_NAMESPACE=rbns_, or the namespaced
 * copy and another library with ringbuf_* names. No ringbuf header here. */
#include <stddef.h>
#include <stdio.h>

int copy_plain(unsigned n);
int copy_ns(unsigned n);
int user_roundtrip(void);
int user_cxx_roundtrip(void);
size_t other_roundtrip(void);

int main(void)
{
	int fails = 0;
#ifdef WITH_PLAIN
	/* the plain copy's buffer holds exactly its own 5 + 3 events */
	fails += copy_plain(5) != 8;
#endif
	fails += copy_ns(9) != 12;
#ifdef WITH_PLAIN
	fails += copy_plain(1) != 4; /* again, after the other copy ran */
#endif
	fails += user_roundtrip() != 1;
#ifdef WITH_CXX
	fails += user_cxx_roundtrip() != 1;
#endif
#ifdef WITH_OTHER
	fails += other_roundtrip() != 10;
#endif
	printf("namespace: %s\n", fails ? "FAILED" : "ok");
	return fails != 0;
}
