/* test_file_security.c - ringbuf_create_file() in a shared directory.
 *
 * A buffer file is an interface between trust domains: in /var/tmp another
 * user can plant a symlink or a hard link at the path a privileged program is
 * about to create, and every local user can read a world-readable trace. The
 * checks: the file is owner-only unless the caller asks otherwise (mode applied
 * exactly, whatever the umask); a symlink or hard link at the path is replaced,
 * never written through; no temporary file is left behind, on success or
 * failure; bad modes are refused and create nothing; and in a sticky directory
 * a file of another user is not replaced (run as root: a child drops to
 * nobody; skipped otherwise).
 */
#define _GNU_SOURCE 1
/* 64-bit d_off/ino on 32-bit builds: without it readdir() fails with
 * EOVERFLOW under qemu-user (host hashes), and the directory looks empty */
#define _FILE_OFFSET_BITS 64
#define RINGBUF_IMPLEMENTATION
#include "ringbuf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static char dir[256];
static char path[300];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/rb-sec-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(path, sizeof path, "%s/trace.rb", dir);
	return 0;
}

static int teardown(void **state)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char p[600];
	(void)state;
	while (d && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		if (unlink(p) < 0)
			rmdir(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
	return 0;
}

/* Entries of dir other than . and .. (and their count). */
static int entries(char names[][256], int max)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (n < max)
			snprintf(names[n], 256, "%s", e->d_name);
		n++;
	}
	closedir(d);
	return n;
}

static struct ringbuf_config small_cfg(void)
{
	struct ringbuf_config cfg = RINGBUF_CONFIG_INIT;
	cfg.size_per_cpu = 8192;
	return cfg;
}

static void write_file(const char *p, const char *text)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void assert_file_is(const char *p, const char *text)
{
	char buf[256] = {0};
	int fd = open(p, O_RDONLY);
	ssize_t n;
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	assert_int_equal(n, (ssize_t)strlen(text));
	assert_string_equal(buf, text);
}

static void default_mode_is_owner_only(void **state)
{
	struct ringbuf_config cfg = small_cfg();
	struct ringbuf *rb;
	struct stat st;
	mode_t old = umask(0); /* the default must not depend on the umask */
	char names[4][256];
	(void)state;
	assert_int_equal(ringbuf_create_file(path, &cfg, &rb), 0);
	umask(old);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(ringbuf_write(rb, 0, "x", 1), 0);
	ringbuf_destroy(rb);
	/* nothing but the file itself */
	assert_int_equal(entries(names, 4), 1);
	assert_string_equal(names[0], "trace.rb");
	/* and it opens */
	assert_int_equal(ringbuf_open_file(path, 0, &rb), 0);
	ringbuf_destroy(rb);
}

static void mode_is_applied_exactly(void **state)
{
	struct ringbuf_config cfg = small_cfg();
	struct ringbuf *rb;
	struct stat st;
	mode_t old = umask(077); /* would strip the group bits of open()'s mode */
	(void)state;
	cfg.file_mode = 0640;
	assert_int_equal(ringbuf_create_file(path, &cfg, &rb), 0);
	umask(old);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	ringbuf_destroy(rb);
}

static void bad_mode_is_refused_and_creates_nothing(void **state)
{
	struct ringbuf_config cfg = small_cfg();
	struct ringbuf *rb = (struct ringbuf *)&cfg;
	char names[4][256];
	(void)state;
	cfg.file_mode = 010000; /* not a permission bit */
	assert_int_equal(ringbuf_create_file(path, &cfg, &rb), RINGBUF_EINVAL);
	assert_ptr_equal(rb, (struct ringbuf *)&cfg); /* untouched */
	assert_int_equal(ringbuf_create_file("", &cfg, &rb), RINGBUF_EINVAL);
	cfg.file_mode = 0;
	assert_int_equal(ringbuf_create_file(path, NULL, &rb), RINGBUF_EINVAL);
	assert_int_equal(entries(names, 4), 0);
}

static void planted_symlink_is_replaced_not_followed(void **state)
{
	struct ringbuf_config cfg = small_cfg();
	struct ringbuf *rb;
	struct stat st;
	char victim[300];
	(void)state;
	snprintf(victim, sizeof victim, "%s/victim", dir);
	write_file(victim, "precious data\n");
	assert_int_equal(symlink(victim, path), 0);
	assert_int_equal(ringbuf_create_file(path, &cfg, &rb), 0);
	ringbuf_destroy(rb);
	assert_file_is(victim, "precious data\n"); /* neither truncated nor overwritten */
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode)); /* the link itself was replaced */
	assert_int_equal(ringbuf_open_file(path, 0, &rb), 0);
	ringbuf_destroy(rb);
}

static void hard_link_is_not_written_through(void **state)
{
	struct ringbuf_config cfg = small_cfg();
	struct ringbuf *rb;
	char other[300];
	(void)state;
	snprintf(other, sizeof other, "%s/other-name", dir);
	write_file(path, "old contents\n");
	assert_int_equal(link(path, other), 0);
	assert_int_equal(ringbuf_create_file(path, &cfg, &rb), 0);
	ringbuf_destroy(rb);
	assert_file_is(other, "old contents\n");
}

static void failure_leaves_no_temporary_file(void **state)
{
	struct ringbuf_config cfg = small_cfg();
	struct ringbuf *rb = NULL;
	char names[4][256];
	(void)state;
	/* path is a non-empty directory: the final rename fails */
	assert_int_equal(mkdir(path, 0700), 0);
	{
		char inner[400];
		snprintf(inner, sizeof inner, "%s/keep", path);
		write_file(inner, "x");
	}
	assert_int_equal(ringbuf_create_file(path, &cfg, &rb), RINGBUF_ESYS);
	assert_null(rb);
	assert_int_equal(entries(names, 4), 1);
	assert_string_equal(names[0], "trace.rb");
	/* bad geometry: refused before anything is created */
	{
		char p2[320];
		snprintf(p2, sizeof p2, "%s/geom.rb", dir);
		cfg.page_size = 1000; /* not a power of two */
		assert_int_equal(ringbuf_create_file(p2, &cfg, &rb), RINGBUF_EINVAL);
		assert_int_equal(entries(names, 4), 1);
	}
	/* a directory that does not exist */
	{
		char p3[320];
		cfg = small_cfg();
		snprintf(p3, sizeof p3, "%s/no/such/dir.rb", dir);
		assert_int_equal(ringbuf_create_file(p3, &cfg, &rb), RINGBUF_ESYS);
		assert_int_equal(errno, ENOENT);
	}
}

/* In a sticky world-writable directory (what /tmp and /var/tmp are), a user
 * cannot replace another user's file. Needs root to make the two users. */
static void sticky_directory_protects_other_users_file(void **state)
{
	struct ringbuf_config cfg = small_cfg();
	pid_t pid;
	int status;
	(void)state;
	if (geteuid() != 0) {
		skip(); /* needs two users */
		return;
	}
	assert_int_equal(chmod(dir, 01777), 0);
	write_file(path, "root's file\n");
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ringbuf *rb = NULL;
		int r;
		if (setgid(65534) < 0 || setuid(65534) < 0)
			_exit(3);
		r = ringbuf_create_file(path, &cfg, &rb);
		_exit(r == RINGBUF_ESYS && errno == EPERM && rb == NULL ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_file_is(path, "root's file\n");
	{
		char names[4][256];
		assert_int_equal(entries(names, 4), 1); /* the child's temporary file is gone */
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(default_mode_is_owner_only, setup, teardown),
		cmocka_unit_test_setup_teardown(mode_is_applied_exactly, setup, teardown),
		cmocka_unit_test_setup_teardown(bad_mode_is_refused_and_creates_nothing, setup, teardown),
		cmocka_unit_test_setup_teardown(planted_symlink_is_replaced_not_followed, setup, teardown),
		cmocka_unit_test_setup_teardown(hard_link_is_not_written_through, setup, teardown),
		cmocka_unit_test_setup_teardown(failure_leaves_no_temporary_file, setup, teardown),
		cmocka_unit_test_setup_teardown(sticky_directory_protects_other_users_file, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
