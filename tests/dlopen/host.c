/* dlopen() the object built from tests/dlopen/plugin.c (argv[1]) and run it:
 * exit 0 when it loaded and its 100 events came back. */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>

static volatile sig_atomic_t usr1;

static void on_usr1(int sig)
{
	(void)sig;
	usr1++;
}

int main(int argc, char **argv)
{
	void *h;
	int (*run)(void);
	int i, n;
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
	/* unloaded, the plugin's code (and a restartable sequence's
	 * descriptor, if one ran there) is gone: signals and context switches
	 * must not reach for it (the kernel kills a thread whose rseq_cs names
	 * unmapped memory) */
	signal(SIGUSR1, on_usr1);
	if (dlclose(h) != 0) {
		printf("dlclose: %s\n", dlerror());
		return 1;
	}
	for (i = 0; i < 100; i++) {
		raise(SIGUSR1);
		sched_yield();
	}
	printf("%s: unloaded, %d signals handled\n", argv[1], (int)usr1);
	return n == 100 && usr1 == 100 ? 0 : 1;
}
