/* dlopen() the object built from tests/dlopen/plugin.c (argv[1]) and run it:
 * exit 0 when it loaded and its 100 events came back. */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	void *h;
	int (*run)(void);
	int n;
	if (argc != 2) {
		fprintf(stderr, "usage: %s plugin.so\n", argv[0]);
		return 2;
	}
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		printf("dlopen %s: %s\n", argv[1], dlerror());
		return 1;
	}
	*(void **)&run = dlsym(h, "plugin_run");
	if (!run) {
		printf("dlsym plugin_run: %s\n", dlerror());
		return 1;
	}
	n = run();
	printf("%s: %d events written and read back\n", argv[1], n);
	return n == 100 ? 0 : 1;
}
