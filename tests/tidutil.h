/* tidutil.h - wait_tid_gone(): the tests that expect a dead thread's claim or
 * owner word to be taken over (test_thread_fallback.c, test_owners.c)
 * SPDX-License-Identifier: MIT   (licence text at the end of ringbuf.h)
 */
#ifndef RINGBUF_TESTS_TIDUTIL_H
#define RINGBUF_TESTS_TIDUTIL_H

#include <errno.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Wait until the kernel has forgotten thread tid, as the library's liveness
 * check (kill(tid, 0): ESRCH) sees it. pthread_join may return before that:
 * the exiting thread clears its tid word (CLONE_CHILD_CLEARTID, what join
 * waits for) before it leaves the thread table, and under qemu-user the
 * emulator clears the guest's word and wakes the joiner, then runs its own
 * clean-up on the host thread. A takeover of a dead owner's claim can only
 * be expected after this: a thread still in the table is alive to the
 * library, rightly (a live owner is never judged dead). Waits on the
 * condition, not for a time (the test's timeout bounds it). */
static inline void wait_tid_gone(long tid)
{
	for (;;) {
		long r = syscall(SYS_kill, tid, 0L);
		if (r != 0 && errno == ESRCH)
			return;
		sched_yield();
	}
}

#endif /* RINGBUF_TESTS_TIDUTIL_H */
