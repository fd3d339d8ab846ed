/* ringbuf_ftrace.h - v0.1.0 - a function tracer (-finstrument-functions) for ringbuf.h
 * SPDX-License-Identifier: MIT   (licence text: see ringbuf.h)
 *
 * The kernel's function and function_graph tracers for a user-space program:
 * compile the code to trace with -finstrument-functions, and every call and
 * return goes through __cyg_profile_func_enter/exit into a ringbuf.h buffer
 * as the kernel's own ftrace events (funcgraph_entry / funcgraph_exit, or
 * function), with the kernel's field names, types and print formats. The
 * trace.dat export carries the traced program's symbols (every loaded object)
 * as its kallsyms, so `trace-cmd report` prints the function-graph view:
 *
 *     demo-123 [000] 0.000010: funcgraph_entry:                 |  main() {
 *     demo-123 [000] 0.000011: funcgraph_entry:      0.140 us   |    leaf();
 *     demo-123 [000] 0.000015: funcgraph_exit:       5.020 us   |  }
 *
 * Written from the kernel's documented event formats; it contains no code
 * from the kernel, trace-cmd, uftrace or LTTng.
 *
 * USAGE
 *   In exactly one C file, compiled WITHOUT -finstrument-functions (or with
 *   gcc's -finstrument-functions-exclude-file-list=ringbuf):
 *                               #define RINGBUF_IMPLEMENTATION
 *                               #include "ringbuf_ftrace.h"   (includes ringbuf_tracedat.h)
 *   The code to trace:          cc -finstrument-functions ... (no include needed)
 *
 *   ringbuf_create(&rb, ...);                                 // a buffer per thread/CPU
 *   ringbuf_ftrace_set_filter("work_* parse*");               // optional, globs
 *   ringbuf_ftrace_set_notrace("*_hot");                      // optional
 *   ringbuf_ftrace_start(rb, RINGBUF_CPU_THREAD, RINGBUF_FTRACE_GRAPH); // the TSC clock when
 *                                                             // invariant (see >>design, TIME)
 *   run();                                                    // traced
 *   ringbuf_ftrace_stop();
 *   ringbuf_ftrace_save_tracedat(rb, NULL, "ftrace.dat", NULL); // trace-cmd report ftrace.dat
 *   ringbuf_ftrace_free();                                    // symbol tables, filters
 *
 * TABLE OF CONTENTS (grep for the anchors)
 *   >>fapi     the public API: start/stop, filters, per-thread switch, export
 *   >>fentry   dynamic patching of -mfentry NOP sites (x86-64 Linux, gcc)
 *   >>design   hooks, shadow stack, signals, longjmp, exceptions, filters,
 *              FENTRY (the patching sequence and why it is safe)
 *   >>fimpl    the implementation (RINGBUF_IMPLEMENTATION only)
 *
 * CONFIGURATION
 *   RINGBUF_FTRACE_MAX_DEPTH    [impl-only] frames kept per thread (default 256); deeper
 *                                           calls are counted as overrun, not recorded
 *   RINGBUF_FTRACE_SCAN_WORDS   [impl-only] longest scan for a frame key, in words (default 512)
 *   RINGBUF_FTRACE_NO_FRAME_KEYS [global]   no frame keys (see >>design), as on non-x86
 *   RINGBUF_FTRACE_NO_HOOKS     [impl-only] do not define __cyg_profile_func_enter/exit;
 *                                           call ringbuf_ftrace_enter()/exit() yourself
 *   RINGBUF_FTRACE_ID_FUNCTION  [global]    event ids of the ftrace system's events
 *   RINGBUF_FTRACE_ID_GRAPH_ENT             (defaults 32001, 32002, 32003; keep them
 *   RINGBUF_FTRACE_ID_GRAPH_RET             clear of your registry's ids)
 *
 * CONTEXTS
 *   The hooks are async-signal-safe and lock-free: TLS, one atomic load of the
 *   tracer state, a binary search of the filter, ringbuf reserve/commit. No
 *   allocation, no stdio. Everything else (start/stop, filters, export) is for
 *   ordinary threads; start/stop and the filters may change while hooks run.
 *
 *   Dynamic patching instead of -finstrument-functions (x86-64 Linux, gcc;
 *   >>fentry): build the code to trace with
 *       gcc -pg -mfentry -mnop-mcount -mrecord-mcount -fno-pie -no-pie
 *   (a 5-byte NOP at every function's start: no cost until patched), then
 *   ringbuf_ftrace_start(rb, cpu, RINGBUF_FTRACE_FUNCTION);
 *   ringbuf_ftrace_patch();    // the filter's functions now record `function`
 *   ...; ringbuf_ftrace_unpatch(); ringbuf_ftrace_stop();
 *   Safe with other threads running the patched code (>>design, FENTRY).
 *
 * LIMITS
 *   Linux/ELF (dl_iterate_phdr, ELF symbol tables). Functions are named by
 *   the ELF .symtab/.dynsym of each loaded object file (a stripped object
 *   shows its exported names only; the vDSO is skipped). See >>design for
 *   what longjmp, C++ exceptions and sigaltstack do to the depth.
 */
#ifndef RINGBUF_FTRACE_H
#define RINGBUF_FTRACE_H

#include "ringbuf_tracedat.h" /* the events (ringbuf_trace_event.h) and the trace.dat export */

#ifdef RINGBUF_NAMESPACE
#define ringbuf_ftrace_enter             RINGBUF__NS(ringbuf_ftrace_enter)
#define ringbuf_ftrace_exit              RINGBUF__NS(ringbuf_ftrace_exit)
#define ringbuf_ftrace_formats           RINGBUF__NS(ringbuf_ftrace_formats)
#define ringbuf_ftrace_free              RINGBUF__NS(ringbuf_ftrace_free)
#define ringbuf_ftrace_kallsyms          RINGBUF__NS(ringbuf_ftrace_kallsyms)
#define ringbuf_ftrace_load_symbols      RINGBUF__NS(ringbuf_ftrace_load_symbols)
#define ringbuf_ftrace_lookup            RINGBUF__NS(ringbuf_ftrace_lookup)
#define ringbuf_ftrace_save_tracedat     RINGBUF__NS(ringbuf_ftrace_save_tracedat)
#define ringbuf_ftrace_set_filter        RINGBUF__NS(ringbuf_ftrace_set_filter)
#define ringbuf_ftrace_set_notrace       RINGBUF__NS(ringbuf_ftrace_set_notrace)
#define ringbuf_ftrace_start             RINGBUF__NS(ringbuf_ftrace_start)
#define ringbuf_ftrace_get_stats         RINGBUF__NS(ringbuf_ftrace_get_stats)
#define ringbuf_ftrace_stop              RINGBUF__NS(ringbuf_ftrace_stop)
#define ringbuf_ftrace_thread_depth      RINGBUF__NS(ringbuf_ftrace_thread_depth)
#define ringbuf_ftrace_thread_enable     RINGBUF__NS(ringbuf_ftrace_thread_enable)
#define ringbuf_ftrace_patch             RINGBUF__NS(ringbuf_ftrace_patch)
#define ringbuf_ftrace_unpatch           RINGBUF__NS(ringbuf_ftrace_unpatch)
#define ringbuf_ftrace_patch_error       RINGBUF__NS(ringbuf_ftrace_patch_error)
#define ringbuf_ftrace_patch_sites       RINGBUF__NS(ringbuf_ftrace_patch_sites)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ==== >>fapi ============================================================ */

/** 1 where the hooks key frames by their return-address slot (x86-64, i386),
 * which repairs longjmp at the next hook above the abandoned frames; 0
 * elsewhere or with RINGBUF_FTRACE_NO_FRAME_KEYS (repair at the exit of the
 * frame they returned to; see >>design). */
#if (defined(__x86_64__) || defined(__i386__)) && !defined(RINGBUF_FTRACE_NO_FRAME_KEYS)
#define RINGBUF_FTRACE_FRAME_KEYS 1
#else
#define RINGBUF_FTRACE_FRAME_KEYS 0
#endif

#ifndef RINGBUF_FTRACE_ID_FUNCTION
#define RINGBUF_FTRACE_ID_FUNCTION 32001
#endif
#ifndef RINGBUF_FTRACE_ID_GRAPH_RET
#define RINGBUF_FTRACE_ID_GRAPH_RET 32002
#endif
#ifndef RINGBUF_FTRACE_ID_GRAPH_ENT
#define RINGBUF_FTRACE_ID_GRAPH_ENT 32003
#endif

/** The records, as the kernel's ftrace event formats give them (struct
 * ftrace_entry, ftrace_graph_ent_entry, ftrace_graph_ret_entry). Payloads are
 * 4-byte aligned: read the 64-bit fields with memcpy. */
struct ringbuf_ftrace_function {
	struct ringbuf_trace_entry ent;
	unsigned long ip;        /* the traced function */
	unsigned long parent_ip; /* its call site */
};
struct ringbuf_ftrace_graph_ent {
	struct ringbuf_trace_entry ent;
	unsigned long func;
	int depth;               /* 0 for the outermost traced frame of the thread */
};
struct ringbuf_ftrace_graph_ret {
	struct ringbuf_trace_entry ent;
	unsigned long func;
	int depth;
	unsigned int overrun;    /* frames beyond RINGBUF_FTRACE_MAX_DEPTH when it returned */
	unsigned long long calltime; /* ns, the buffer's clock */
	unsigned long long rettime;
};

enum ringbuf_ftrace_mode {
	RINGBUF_FTRACE_GRAPH = 1,    /* funcgraph_entry + funcgraph_exit (function_graph tracer) */
	RINGBUF_FTRACE_FUNCTION = 2, /* function (ip, parent_ip) at each entry (function tracer) */
	RINGBUF_FTRACE_KEEP_CLOCK = 4, /* never switch rb to the TSC clock (see ringbuf_ftrace_start) */
};

/** Start tracing into rb: cpu is what the hooks pass to ringbuf_reserve (an
 * index, RINGBUF_CPU_THREAD: one buffer per thread, the best for the graph
 * view, or RINGBUF_CPU_CURRENT); mode a mix of enum ringbuf_ftrace_mode.
 * Loads the symbol tables on first use. The clock: a buffer made by
 * ringbuf_create() with the default clock that has had no event yet is
 * switched to the TSC clock (RINGBUF_CLOCK_TSC: half the cost of a traced
 * call) when the CPU has an invariant TSC that the kernel uses as its
 * clocksource (x86-64); RINGBUF_FTRACE_KEEP_CLOCK in mode keeps the clock.
 * File, memfd and caller-memory buffers (maybe shared with writers in other
 * processes) keep theirs. Returns 0 or RINGBUF_EINVAL/ENOMEM. */
RINGBUF_API int ringbuf_ftrace_start(struct ringbuf *rb, unsigned cpu, unsigned mode);
/** Stop: hooks record nothing from their next call (a hook already running
 * finishes its record). Frames stay on the threads' shadow stacks, so a
 * restart pairs their exits. */
RINGBUF_API void ringbuf_ftrace_stop(void);
/** set_ftrace_filter / set_ftrace_notrace: globs (`*`, `?`, `[...]`) separated
 * by spaces, commas or newlines, matched against every loaded object's
 * function names and resolved to address sets now (the hooks do a binary
 * search, no strings). NULL or "" clears. A function is traced when the
 * filter is empty or matches it, and notrace does not. Returns the number of
 * functions the globs matched (0: the set is empty: for the filter, nothing
 * is traced, as in the kernel), or RINGBUF_EINVAL/ENOMEM (nothing changed).
 * Old sets are kept until ringbuf_ftrace_free() (a hook may still read one). */
RINGBUF_API int ringbuf_ftrace_set_filter(const char *globs);
RINGBUF_API int ringbuf_ftrace_set_notrace(const char *globs);
/** Per-thread switch (the kernel's set_ftrace_pid): the calling thread's
 * hooks record only while enabled (default true). Async-signal-safe. */
RINGBUF_API void ringbuf_ftrace_thread_enable(bool on);
/** The calling thread's current traced depth (frames on its shadow stack). */
RINGBUF_API unsigned ringbuf_ftrace_thread_depth(void);
/** Counters over all threads: records dropped by the buffer, frames beyond
 * MAX_DEPTH, exits emitted for frames left by longjmp (repaired), hooks
 * skipped because they interrupted a hook (a signal handler); fentry sites
 * (>>fentry): calls that hit a site's int3 while it was being patched, whose
 * effect the SIGTRAP handler emulated. */
struct ringbuf_ftrace_stats {
	uint64_t dropped, overrun, repaired, nested_skipped;
	uint64_t trapped;
};
RINGBUF_API void ringbuf_ftrace_get_stats(struct ringbuf_ftrace_stats *st);

/** (Re)read the symbol tables of every loaded object (after dlopen). */
RINGBUF_API int ringbuf_ftrace_load_symbols(void);
/** The name of the function containing addr ("" when unknown; NULL-safe). */
RINGBUF_API const char *ringbuf_ftrace_lookup(const void *addr);
/** The kallsyms text ("%lx t name\n" per function, sorted), malloc'ed: free it. */
RINGBUF_API char *ringbuf_ftrace_kallsyms(void);
/** The format texts of function, funcgraph_exit, funcgraph_entry (NULL-terminated, static). */
RINGBUF_API const char *const *ringbuf_ftrace_formats(void);
/** ringbuf_trace_save_tracedat() with the ftrace formats and the kallsyms
 * filled in (opts may be NULL; its kallsyms/ftrace_formats are replaced). */
RINGBUF_API int ringbuf_ftrace_save_tracedat(struct ringbuf *rb, const struct ringbuf_trace_registry *reg,
					     const char *path, const struct ringbuf_trace_tracedat_opts *opts);
/** Free the symbol tables and every filter set. Call when no hook runs. */
RINGBUF_API void ringbuf_ftrace_free(void);

/* ---- >>fentry: dynamic patching (x86-64 Linux, gcc) ---------------------
 * The code to trace compiled with gcc -pg -mfentry -mnop-mcount
 * -mrecord-mcount -fno-pie -no-pie (see >>design, FENTRY): every function
 * starts with a 5-byte NOP whose address is listed in __mcount_loc, and costs
 * nothing while it is a NOP. ringbuf_ftrace_patch() turns the NOPs of the
 * functions the filter selects into calls to the tracer, which record the
 * `function` event (ip, parent_ip) while ringbuf_ftrace_start()ed with
 * RINGBUF_FTRACE_FUNCTION; ringbuf_ftrace_unpatch() puts the NOPs back. Both
 * are safe with other threads (and their signal handlers) running the code
 * being patched. */

/** Patch: every recorded fentry site (of the objects loaded at the first
 * call) whose function the filter and notrace select now becomes a call to
 * the tracer's trampoline; sites patched before that no longer match are
 * unpatched. Functions named ringbuf_* are never patched. Returns the number
 * of sites patched after the call (0: no site matched), or
 * RINGBUF_ESYS (errno set; ringbuf_ftrace_patch_error() says why: not
 * x86-64 Linux, no fentry sites in the program, membarrier SYNC_CORE
 * unavailable, mprotect refused) / RINGBUF_ENOMEM: then no site changed.
 * Not async-signal-safe; calls from several threads are serialised. */
RINGBUF_API int ringbuf_ftrace_patch(void);
/** Unpatch every patched site (the original NOP again). Returns the number
 * of sites unpatched, or RINGBUF_ESYS (ringbuf_ftrace_patch_error()). */
RINGBUF_API int ringbuf_ftrace_unpatch(void);
/** Why the last ringbuf_ftrace_patch/unpatch failed ("" after a success). */
RINGBUF_API const char *ringbuf_ftrace_patch_error(void);
/** The fentry sites found (0 before the first ringbuf_ftrace_patch, or in a
 * program built without them), and how many are patched now. NULL-safe. */
RINGBUF_API void ringbuf_ftrace_patch_sites(size_t *total, size_t *patched);

/** What the hooks call (fn = the function, site = its call site, frame = a
 * key that orders the caller's frames: lower = deeper; NULL = unknown, no
 * longjmp repair for this call; see >>design). */
RINGBUF_API void ringbuf_ftrace_enter(void *fn, void *site, const void *frame);
RINGBUF_API void ringbuf_ftrace_exit(void *fn, void *site, const void *frame);

/* ==== >>design ===========================================================
 *
 * HOOKS. gcc and clang call __cyg_profile_func_enter(fn, site) after the
 * prologue of every instrumented function and __cyg_profile_func_exit(fn,
 * site) before its epilogue. Both are no_instrument_function, as is all of
 * this header; the implementation TU must not be instrumented itself (see
 * USAGE), and in case it is, a per-thread `busy` flag makes a hook that runs
 * inside a hook return at once (no recursion).
 *
 * SHADOW STACK. Each thread has (TLS, fixed size, no allocation) a stack of
 * {function, frame key, call site, calltime}. Entry pushes and writes
 * funcgraph_entry {func, depth}; exit pops and writes funcgraph_exit {func,
 * depth, overrun, calltime, rettime}. depth = frames below it on the shadow
 * stack, so a filter that hides a function also takes it out of the nesting
 * (as the kernel's function_graph with set_ftrace_filter). A frame whose
 * record the buffer dropped is still pushed, so its exit stays paired.
 *
 * FRAME KEY (x86-64, i386). The address of the stack slot that holds the
 * traced function's return address (the hook's `site` argument): the hook
 * scans up from its own return-address slot for that value (a tail-called
 * exit hook's own slot is that slot; the first 4 words are looked at before
 * any bound: the function's saved registers, always mapped). Siblings called from one frame get the
 * same key, a callee a lower key, whatever the functions' prologues push;
 * an inlined function's hooks run in its container's frame and get the
 * container's key and site. The scan reads at most RINGBUF_FTRACE_SCAN_WORDS
 * words and never above the thread's outermost traced frame (so only mapped
 * stack), or 64 words while no frame is known (the loader's or the thread's
 * data lie above any function). Not found (a larger frame), or another
 * architecture (the return address lives in a register): key unknown, the
 * frame is never taken for dead by a later key; an exit hook with an unknown
 * key whose (traced) function is on the shadow stack below the top pops the
 * frames above its topmost instance (H3 without keys: longjmp and exceptions
 * are then repaired at the exit of the frame they returned to).
 *
 * STEPS of a hook (one thread and its signal handlers; nothing is shared
 * with other threads except the tracer state, read with acquire loads that
 * pair with the release stores of start/stop/set_filter, so a hook that sees
 * a set sees it filled in):
 *   H1 busy check: if set, a hook of this thread is running below us (we are
 *      a signal handler that interrupted it, or instrumented library code it
 *      called): count nested_skipped, return. Set busy, then a compiler
 *      (signal) fence: from here a handler sees busy and keeps off the stack.
 *   H2 load the state (rb, cpu, mode; acquire); not started or the thread is
 *      disabled: return.
 *   H3 repair: pop frames that can no longer be live (longjmp, below).
 *   H4 filter: binary search of fn in the filter/notrace sets (acquire load).
 *   H5 entry: reserve + commit funcgraph_entry, push {fn, key, site, now}.
 *      exit: if the top frame is fn, pop it, reserve + commit funcgraph_exit;
 *      otherwise (its entry was not recorded: before start, filtered, too deep)
 *      nothing.
 *   H6 signal fence, clear busy.
 * A signal handler that runs between two hooks (the normal case: it
 * interrupted the traced code, not a hook) finds busy clear and a consistent
 * stack; its functions nest deeper and pop back before it returns, so the
 * interrupted frames are untouched. A handler that interrupts a hook (H1..H6,
 * a window of some tens of ns) records nothing: its entries and exits are
 * skipped alike, so its depth stays balanced; they are counted.
 *
 * LONGJMP. longjmp (and siglongjmp out of a handler) skips the exit hooks of
 * the frames it discards. The stack grows down, so at a hook with key K:
 *   entry: a shadow frame with a key below K is dead, and so is one with key
 *          K and another call site (a sibling of this call that never
 *          returned; the same site is the inlined case: live);
 *   exit:  frames with keys below K are dead, down to the first frame of fn.
 * H3 pops them and writes their funcgraph_exit with rettime = now (counted as
 * `repaired`): late (at the next hook of the thread above them), not lost,
 * and the depth is right again. Not exact: a dead sibling called again from
 * the same site (a loop around setjmp) is taken for live until its parent
 * returns; a longjmp from a recursive function into an outer instance of
 * itself closes the inner instance at the outer one's return, the outer one
 * at the next hook; frames left by a longjmp after which no hook of the
 * thread runs stay on the stack until one does.
 *
 * C++ EXCEPTIONS. g++ runs the exit hook of each frame an exception unwinds
 * (checked by tests/trace/test_ftrace.c); clang++ calls it on normal returns only,
 * and the next hook's H3 repairs the unwound frames like a longjmp (same
 * graph, with late return times). Names are the mangled symbols (trace-cmd
 * prints them as they are).
 *
 * SIGALTSTACK. A handler on an alternate stack has frames that are not below
 * the interrupted ones; if the alternate stack lies above the thread's stack,
 * H3 in the handler would take the interrupted frames for dead. Threads that
 * trace handlers on an alternate stack should disable the tracer in them
 * (ringbuf_ftrace_thread_enable(false) at handler entry) -- documented, not
 * detected.
 *
 * FILTERS. The symbol table is built once (ringbuf_ftrace_load_symbols; at
 * start): dl_iterate_phdr lists the loaded objects, each object's file is
 * mapped read-only and its .symtab and .dynsym STT_FUNC symbols are copied
 * out with the load bias added; sorted by address, duplicates dropped. A
 * filter is a sorted array of function addresses (or "no set": all); the
 * hooks binary-search it. A new set is published with a release store; old
 * ones are kept on a list until ringbuf_ftrace_free(), since a hook on another
 * thread may still be reading one (there is no grace period to wait for).
 *
 * TIME. calltime and rettime are the time stamps of the entry and exit
 * records themselves (ns; TSC converted inline: one multiply), read back from
 * the CPU buffer's write_stamp right after the reservation: one clock read
 * per hook, two per traced call, the least a duration needs. With
 * RINGBUF_CPU_CURRENT, a dropped record, or a repaired frame, the clock is
 * read (ringbuf_time_stamp). rettime >= calltime always. trace-cmd prints
 * rettime - calltime as the duration. The clock is the buffer's: the two
 * reads are most of a traced call's cost (rdtsc 8-11 ns, clock_gettime ~25 ns
 * on the VM of the numbers in docs/performance.md), so ringbuf_ftrace_start()
 * switches a private buffer with the default clock and no event yet to the
 * TSC clock where the TSC is invariant and the kernel's clocksource
 * (RINGBUF_FTRACE_KEEP_CLOCK keeps it; file, memfd and caller-memory buffers
 * keep theirs, as writers in other processes may share them).
 *
 * COST. The hooks compile the common path into themselves: one TLS access
 * (the thread's struct; initial-exec in a program, a __tls_get_addr call in
 * a shared object), the tracer state, the filter search (when a filter is
 * set), ringbuf.h's >>inline reserve/commit and ringbuf_trace.h's header
 * (ringbuf_trace__reserve_in), the record stamp and its conversion. The
 * repair checks cost one compare with the top frame (the caller's frame on
 * top at an entry, the function's own at an exit); the exit hook looks for
 * its frame key only when a repair needs it. Repairs, drops and overruns are
 * out of line. Measured (make bench-ftrace, its floor row: hooks that write
 * the same two records and do nothing else), the two records through
 * ringbuf.h are about 4/5 of a traced call; the busy flag, the shadow stack
 * and the frame key most of the rest (docs/performance.md, function tracer). *
 * FENTRY (dynamic patching; x86-64 Linux; >>fentry). What gcc 12 emits with
 * -pg -mfentry -mnop-mcount -mrecord-mcount: the first instruction of every
 * function (after an endbr64 under -fcf-protection) is the 5-byte NOP
 * 0f 1f 44 00 00, and the address of each such site is stored in the
 * allocated section __mcount_loc (8-byte link-time addresses). gcc refuses
 * -mnop-mcount with -fPIC/-fPIE ("not implemented"), so the traced code is
 * position-dependent: -fno-pie -no-pie (Debian's gcc makes PIE by default);
 * clang has no -mnop-mcount/-mrecord-mcount on x86. Functions marked
 * no_instrument_function (all of this header) get no site.
 *   SITES (the first ringbuf_ftrace_patch): dl_iterate_phdr lists the loaded
 *      objects; each object's file (/proc/self/exe for the program) is mapped
 *      and its section headers searched for __mcount_loc, whose entries plus
 *      the load bias (0 for a position-dependent program) are the sites. A
 *      site is kept only if it lies in an executable PT_LOAD segment of its
 *      object, its 5 bytes in memory are the NOP, and it is the first
 *      instruction of a function of the symbol table (at the symbol, or 4
 *      bytes in after an endbr64): anything else is left alone. The table
 *      {site, function, state} is sorted by site and never freed (below).
 *   CALL. A patched site is `call tramp` (e8 rel32; an object more than
 *      2 GiB from the trampoline cannot be patched: ESYS). The trampoline
 *      (file-scope asm) aligns the stack, saves what the function has not
 *      saved yet because it has not run: rax (the vector count of a varargs
 *      call), rdi, rsi, rdx, rcx, r8, r9 (arguments), r10 (static chain),
 *      r11, xmm0-7 (arguments, 128-bit); passes ip = its return address - 5
 *      and parent_ip = the word above it (the traced function's return
 *      address); calls the hook; restores; returns to site + 5. The hook is
 *      the `function` path of the -finstrument-functions hooks (H1 busy, H2
 *      state, H4 filter, the record), with the function found by binary
 *      search of the site table: same record, same filters (the filter is
 *      re-checked, so a function whose filter changed after patching is not
 *      recorded). Not saved: the upper halves of ymm/zmm argument registers;
 *      the hook path uses no 256-bit instruction and calls no vector code
 *      unless the implementation file is itself compiled with -mavx and the
 *      compiler vectorises it (then a function taking __m256 by value would
 *      see its argument's upper half zeroed: compile that file without AVX).
 *   CROSS-MODIFYING CODE. Another thread may be executing any site at any
 *      instant, and x86 (Intel SDM vol. 3, 8.1.3) only promises a coherent
 *      view of modified code to a processor that executes a serialising
 *      instruction after the modification and before it runs the modified
 *      bytes; a 5-byte store is not atomic for instruction fetch. The
 *      kernel's text_poke_bp sequence, in user space, one batch for all
 *      the sites that change (ringbuf_ftrace__apply):
 *   P0 make the pages of the changed sites writable with mprotect(READ |
 *      WRITE | EXEC): never without EXEC (other threads run that code; the
 *      patching thread may too). A W^X policy (SELinux execmod, PaX
 *      MPROTECT) refuses: ESYS, nothing written. Each site's `state` (what
 *      it becomes) is stored first, for T below.
 *   P1 write int3 (cc) over the first byte of each site; SYNC.
 *   P2 write bytes 1..4 of the new instruction; SYNC. No thread runs them:
 *      a thread at the site stops at the int3 (P1's SYNC made every core see
 *      it before any could have fetched the new bytes).
 *   P3 write the first byte of the new instruction (e8 call, 0f nop); SYNC.
 *      A thread reads either cc (T) or the whole new instruction.
 *   P4 the pages' protections back (from the segment's PT_LOAD flags).
 *   SYNC = membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) (Linux
 *      4.16: every running thread of the process executes a core-serialising
 *      instruction before it returns, and a thread not running does before
 *      it next returns to user space), registered first with
 *      ..._REGISTER_PRIVATE_EXPEDITED_SYNC_CORE; then cpuid on the patching
 *      thread itself. Where membarrier or SYNC_CORE is missing (old kernels,
 *      seccomp filters, some emulators) nothing is patched: ESYS, never an
 *      unsafe patch.
 *   T  a thread that runs the int3 in P1..P3 takes SIGTRAP (si_code
 *      SI_KERNEL, ip = site + 1); the tracer's handler (installed at the
 *      first patch, SA_SIGINFO | SA_NODEFER | SA_RESTART | SA_ONSTACK)
 *      finds the site in the table and emulates what the site is becoming
 *      (its `state`): the NOP (ip = site + 5) or the call (push site + 5 --
 *      below the interrupted stack pointer is the red zone, free at a
 *      function's first instruction, and the kernel put the signal frame
 *      below it -- ip = tramp). Either is what the site did at some moment
 *      of the transition, so a call is recorded or not, never broken. A trap
 *      at an address that is not a site is passed to the handler that was
 *      installed before (SA_SIGINFO or not); SIG_DFL: the default action
 *      (the process ends, as it would have); SIG_IGN: ignored.
 *   KEPT FOREVER. A thread that trapped may be preempted anywhere between
 *      the int3 and its handler's table lookup, long after the patch
 *      returned; the kernel picks the handler at the trap. So the handler
 *      stays installed and the site table allocated for the life of the
 *      process (ringbuf_ftrace_free unpatches but keeps them); the
 *      trampoline is static code. The program must not replace the SIGTRAP
 *      handler while a patch or unpatch runs, nor block SIGTRAP in a thread
 *      or a handler's sa_mask that may run a site (a blocked SIGTRAP from an
 *      int3 kills the process).
 *   AFTER UNPATCH a thread may still be inside the trampoline or the hook
 *      (preempted there): as with the -finstrument-functions hooks, the
 *      buffer and the filter sets may be freed only when no hook can run
 *      (ringbuf_ftrace_stop, then the threads that ran traced code joined or
 *      past a point known to be outside it); the site table and trampoline
 *      are never freed.
 *   NOT BUILT: function_graph through fentry (it needs the return address
 *      replaced by a return trampoline and a shadow stack of the real ones,
 *      with longjmp, exceptions and unwinders that read return addresses to
 *      handle); a patched program records `function` events only (the
 *      RINGBUF_FTRACE_GRAPH mode records nothing from patched sites). Other
 *      architectures return ESYS: the int3 sequence, the 5-byte call and the
 *      trampoline are x86-64's (aarch64 would use -fpatchable-function-entry
 *      and a single 4-byte instruction write with its own cache maintenance).
 *      Objects dlopen'ed after the first patch are not patched; unpatch
 *      before dlclose of an object that has patched sites. Under a debugger
 *      the int3 traps of P1..P3 stop the program (gdb: `handle SIGTRAP
 *      nostop noprint pass` while patching). ASan and UBSan: works
 *      (tests/trace/test_ftrace_fentry.c runs in make asan-ubsan); TSan: not
 *      supported (it defers the SIGTRAP handler and reports it; make tsan
 *      builds the test without the sites). A fork() while another thread
 *      patches: the child's sites may keep their int3, which its inherited
 *      handler emulates (correct, slower), and the child must not patch (the
 *      patch lock is held by a thread it does not have). User-space shadow
 *      stacks (CET SHSTK, off unless the program opts in) are not
 *      supported: the emulated call pushes no shadow-stack entry.
 */

#ifdef __cplusplus
}
#endif

/* ==== >>fimpl =========================================================== */
#if defined(RINGBUF_IMPLEMENTATION) && !defined(RINGBUF_FTRACE_IMPLEMENTATION_INCLUDED)
#define RINGBUF_FTRACE_IMPLEMENTATION_INCLUDED 1

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef RINGBUF_FTRACE_MAX_DEPTH
#define RINGBUF_FTRACE_MAX_DEPTH 256
#endif
/* glibc declares dl_iterate_phdr and struct dl_phdr_info only under
 * _GNU_SOURCE, which a strict -std=c11 program may not define (before its
 * first include): then its leading fields, stable ABI, are declared here. */
#if defined(__GLIBC__) && !defined(__USE_GNU)
struct ringbuf_ftrace__phdr_info {
	ElfW(Addr) dlpi_addr;
	const char *dlpi_name;
	const ElfW(Phdr) *dlpi_phdr;
	ElfW(Half) dlpi_phnum;
};
extern int dl_iterate_phdr(int (*cb)(struct ringbuf_ftrace__phdr_info *, size_t, void *), void *data);
#define RINGBUF_FTRACE__PHDR_INFO struct ringbuf_ftrace__phdr_info
#else
#define RINGBUF_FTRACE__PHDR_INFO struct dl_phdr_info
#endif

#if RINGBUF_FTRACE_MAX_DEPTH < 1 || RINGBUF_FTRACE_MAX_DEPTH > 65536
#error "RINGBUF_FTRACE_MAX_DEPTH must be between 1 and 65536"
#endif

#define RINGBUF_FTRACE__NOINSTR __attribute__((no_instrument_function))

#ifdef __cplusplus
extern "C" {
#endif

struct ringbuf_ftrace__frame {
	uintptr_t func, frame, site;
	uint64_t calltime;
};
struct ringbuf_ftrace__thread {
	uint32_t depth; /* frames pushed, including those beyond MAX_DEPTH */
	volatile sig_atomic_t busy;
	uint32_t off;   /* ringbuf_ftrace_thread_enable(false) */
	struct ringbuf_ftrace__frame st[RINGBUF_FTRACE_MAX_DEPTH];
};
static _Thread_local struct ringbuf_ftrace__thread ringbuf_ftrace__t;

struct ringbuf_ftrace__set {
	size_t n;
	struct ringbuf_ftrace__set *next_old; /* retired list */
	uintptr_t addr[];
};
struct ringbuf_ftrace__sym {
	uintptr_t addr;
	char *name;
};

static struct {
	RINGBUF__ATOMIC(struct ringbuf *) rb;
	RINGBUF__ATOMIC(unsigned) cpu;
	RINGBUF__ATOMIC(unsigned) mode;
	RINGBUF__ATOMIC(struct ringbuf_ftrace__set *) filter; /* NULL: all */
	RINGBUF__ATOMIC(struct ringbuf_ftrace__set *) notrace;
	struct ringbuf_ftrace__set *old;
	RINGBUF__ATOMIC(uint64_t) dropped, overrun, repaired, nested, trapped;
	struct ringbuf_ftrace__sym *syms;
	size_t nsyms, symcap;
} ringbuf_ftrace__g;

/* ---- >>fimpl: hooks ------------------------------------------------------ */

/* Is a in the set? A binary search without a branch on the data (a
 * conditional move per halving): b is the last element <= a, or the first
 * when there is none, so that a is in the set exactly when *b == a. An empty
 * set holds one 0 (ringbuf_ftrace__build), which no function's address is:
 * one load and one compare for a set of 1 (the hooks' H4, per call). */
RINGBUF_FTRACE__NOINSTR static inline bool ringbuf_ftrace__in(const struct ringbuf_ftrace__set *s, uintptr_t a)
{
	const uintptr_t *b = s->addr;
	size_t n = s->n;
	while (n > 1) {
		size_t half = n / 2;
		b = b[half] <= a ? b + half : b;
		n -= half;
	}
	return *b == a;
}

RINGBUF_FTRACE__NOINSTR static void ringbuf_ftrace__count(RINGBUF__ATOMIC(uint64_t) *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* Store one field of a record in place (payloads are 4-byte aligned: memcpy;
 * one store each, never a read of what the reserve just wrote). */
#define RINGBUF_FTRACE__PUT(p, type, field, ftype, v)                                    \
	do {                                                                             \
		ftype ringbuf__v = (ftype)(v);                                           \
		memcpy((char *)(p) + offsetof(type, field), &ringbuf__v, sizeof ringbuf__v); \
	} while (0)

/* The hooks' common path is compiled into the hooks themselves (no call into
 * the library: ringbuf.h's >>inline reserve/commit, the trace header, the
 * frame key, the time stamps); what is rare (repairs, drops, overruns) is out
 * of line. */
#if defined(__SANITIZE_ADDRESS__)
#define RINGBUF_FTRACE__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RINGBUF_FTRACE__ASAN 1
#endif
#endif
#ifdef RINGBUF_FTRACE__ASAN
/* Under AddressSanitizer the common path is out of line: inlined into the
 * hooks, which ASan does not instrument (the frame key's scan reads the
 * caller's frame, redzones included), the instrumented body's scope markers
 * poisoned the hook's stack and nothing unpoisoned it at the hook's return
 * (a later frame there read as use-after-scope: test_ftrace under ASan). The
 * key's scan alone stays uninstrumented, as its own function. */
#define RINGBUF_FTRACE__HOT RINGBUF_FTRACE__NOINSTR static __attribute__((noinline, unused))
#define RINGBUF_FTRACE__KEYFN                                                                     \
	RINGBUF_FTRACE__NOINSTR static __attribute__((noinline, unused, no_sanitize_address))
#else
#define RINGBUF_FTRACE__HOT RINGBUF_FTRACE__NOINSTR static inline __attribute__((always_inline))
#define RINGBUF_FTRACE__KEYFN RINGBUF_FTRACE__HOT
#endif
#define RINGBUF_FTRACE__COLD RINGBUF_FTRACE__NOINSTR static __attribute__((noinline, cold))

/* ns of a time stamp of rb's clock: ringbuf_ts_to_ns without the call (the
 * TSC's conversion, ns0 + (ts - tsc0) * mult >> 32, one 64x64->128 multiply
 * where the compiler has one; the same value as ringbuf.h's mulshift32). */
RINGBUF_FTRACE__HOT uint64_t ringbuf_ftrace__ns(const struct ringbuf *rb, uint64_t ts)
{
	if (RINGBUF__LIKELY(rb->clock_kind != RINGBUF__CLK_TSC))
		return ts;
#ifdef __SIZEOF_INT128__
	if (RINGBUF__LIKELY(ts >= rb->tsc0))
		return rb->tsc_ns0 +
		       (uint64_t)(__extension__(((unsigned __int128)(ts - rb->tsc0) * rb->tsc_mult) >> 32));
#endif
	return ringbuf_ts_to_ns(rb, ts);
}

/* The time stamp (ns) of the record this writer just reserved on the CPU
 * buffer `at` (ringbuf_trace__reserve_in's): the buffer's write_stamp, which
 * every reservation stores (step D of ringbuf.h's >>design) before it
 * returns; read by the same thread, so the relaxed load sees it, or a later
 * one when a nested writer (a signal handler's event) came in between: then
 * that writer's, a little later. Saves a clock read per record.
 * RINGBUF_CPU_CURRENT (`at` NULL, unknown): the clock is read. */
RINGBUF_FTRACE__HOT uint64_t ringbuf_ftrace__rec_ts(struct ringbuf *rb, struct ringbuf__cpu *at)
{
	if (RINGBUF__UNLIKELY(!at))
		return ringbuf_time_stamp(rb);
	return ringbuf_ftrace__ns(rb, RINGBUF__LOAD(&at->write_stamp));
}

RINGBUF_FTRACE__COLD void ringbuf_ftrace__dropped(void)
{
	ringbuf_ftrace__count(&ringbuf_ftrace__g.dropped);
}

RINGBUF_FTRACE__HOT void ringbuf_ftrace__emit_ret(struct ringbuf *rb, unsigned cpu,
						   const struct ringbuf_ftrace__frame *f, uint32_t depth,
						   uint32_t overrun, uint64_t now)
{
	struct ringbuf__cpu *at;
	void *p = ringbuf_trace__reserve_in(rb, cpu, RINGBUF_FTRACE_ID_GRAPH_RET,
					    sizeof(struct ringbuf_ftrace_graph_ret), &at);
	if (RINGBUF__UNLIKELY(!p)) {
		ringbuf_ftrace__dropped();
		return;
	}
	if (!now) /* the record's own time stamp */
		now = ringbuf_ftrace__rec_ts(rb, at);
	if (RINGBUF__UNLIKELY(now < f->calltime))
		now = f->calltime;
	RINGBUF_FTRACE__PUT(p, struct ringbuf_ftrace_graph_ret, func, unsigned long, f->func);
	RINGBUF_FTRACE__PUT(p, struct ringbuf_ftrace_graph_ret, depth, int, depth);
	RINGBUF_FTRACE__PUT(p, struct ringbuf_ftrace_graph_ret, overrun, unsigned int, overrun);
	RINGBUF_FTRACE__PUT(p, struct ringbuf_ftrace_graph_ret, calltime, unsigned long long, f->calltime);
	RINGBUF_FTRACE__PUT(p, struct ringbuf_ftrace_graph_ret, rettime, unsigned long long, now);
	ringbuf_commit(rb, cpu, p);
}

/* H3: entry (fn == 0): pop the frames below `frame`, and those at `frame`
 * from another call site (dead siblings; same site: an inlined parent).
 * Exit: pop the frames below `frame` down to the first frame of fn. The
 * hooks call it only when the top frame fails the first test (the common
 * case, the caller's frame on top at an entry, the function's own at an
 * exit, pops nothing and costs no call). */
RINGBUF_FTRACE__COLD void ringbuf_ftrace__repair(struct ringbuf_ftrace__thread *t, struct ringbuf *rb,
						 unsigned cpu, unsigned mode, uintptr_t frame, uintptr_t site,
						 uintptr_t fn)
{
	uint64_t now = 0; /* one time stamp for the frames popped together */
	while (t->depth) {
		uint32_t d = t->depth - 1;
		struct ringbuf_ftrace__frame *f;
		if (d >= RINGBUF_FTRACE_MAX_DEPTH)
			return; /* untracked frames on top: nothing to compare */
		f = &t->st[d];
		if (fn ? f->frame >= frame || f->func == fn
		       : f->frame > frame || (f->frame == frame && f->site == site))
			return;
		t->depth = d;
		ringbuf_ftrace__count(&ringbuf_ftrace__g.repaired);
		if (rb && (mode & RINGBUF_FTRACE_GRAPH)) {
			if (!now)
				now = ringbuf_time_stamp(rb);
			ringbuf_ftrace__emit_ret(rb, cpu, f, d, 0, now);
		}
	}
}

/* H3 without frame keys, at an exit whose function is not on top: if fn is
 * traced and on the shadow stack, the frames above its topmost instance are
 * dead (longjmp, an exception without exit hooks): pop them. */
RINGBUF_FTRACE__COLD void ringbuf_ftrace__repair_to(struct ringbuf_ftrace__thread *t, struct ringbuf *rb,
						    unsigned cpu, unsigned mode, uintptr_t fn)
{
	uint64_t now = 0; /* one time stamp for the frames popped together */
	const struct ringbuf_ftrace__set *s;
	uint32_t i = t->depth;
	s = atomic_load_explicit(&ringbuf_ftrace__g.filter, memory_order_acquire);
	if (s && !ringbuf_ftrace__in(s, fn))
		return; /* not traced: cannot be on the stack */
	s = atomic_load_explicit(&ringbuf_ftrace__g.notrace, memory_order_acquire);
	if (s && ringbuf_ftrace__in(s, fn))
		return;
	while (i && t->st[i - 1].func != fn)
		i--;
	if (!i)
		return;
	while (t->depth > i) {
		uint32_t d = --t->depth;
		ringbuf_ftrace__count(&ringbuf_ftrace__g.repaired);
		if (rb && (mode & RINGBUF_FTRACE_GRAPH)) {
			if (!now)
				now = ringbuf_time_stamp(rb);
			ringbuf_ftrace__emit_ret(rb, cpu, &t->st[d], d, 0, now);
		}
	}
}

RINGBUF_FTRACE__COLD void ringbuf_ftrace__nested(void)
{
	ringbuf_ftrace__count(&ringbuf_ftrace__g.nested);
}

RINGBUF_FTRACE__COLD void ringbuf_ftrace__overrun(struct ringbuf_ftrace__thread *t, uint32_t d)
{
	t->depth = d + 1;
	ringbuf_ftrace__count(&ringbuf_ftrace__g.overrun);
}

/* FUNCTION mode: one `function` record {ip, parent_ip} per call */
RINGBUF_FTRACE__HOT void ringbuf_ftrace__emit_fn(struct ringbuf *rb, unsigned cpu, uintptr_t a, uintptr_t site)
{
	struct ringbuf__cpu *at;
	void *p = ringbuf_trace__reserve_in(rb, cpu, RINGBUF_FTRACE_ID_FUNCTION,
					    sizeof(struct ringbuf_ftrace_function), &at);
	if (RINGBUF__UNLIKELY(!p)) {
		ringbuf_ftrace__dropped();
		return;
	}
	RINGBUF_FTRACE__PUT(p, struct ringbuf_ftrace_function, ip, unsigned long, a);
	RINGBUF_FTRACE__PUT(p, struct ringbuf_ftrace_function, parent_ip, unsigned long, site);
	ringbuf_commit(rb, cpu, p);
}

/* The frame key of the instrumented function that called a hook: the
 * address of the stack slot holding its return address (site), found by
 * scanning up from the hook's own return address slot (a tail-called exit
 * hook's slot is that very slot). Siblings called from one frame get the
 * same key, a callee a lower one, whatever their own prologues push; an
 * inlined function gets its container's key. x86 only (the return address is
 * on the stack at the call); NULL (unknown: no repair) elsewhere or when it
 * is not found. The scan never reads above the thread's outermost traced
 * frame (mapped stack) when there is one, and reads at most
 * RINGBUF_FTRACE_SCAN_WORDS (64 words when no frame is known: the stack top
 * holds at least the loader's or the thread's data above any function).
 * Inlined into the hooks, which are not instrumented by ASan themselves (the
 * scan reads the caller's frame, redzones included). */
#ifndef RINGBUF_FTRACE_SCAN_WORDS
#define RINGBUF_FTRACE_SCAN_WORDS 512
#endif
#if RINGBUF_FTRACE_FRAME_KEYS
RINGBUF_FTRACE__KEYFN const void *ringbuf_ftrace__key(const void *hookframe, const void *site)
{
	const struct ringbuf_ftrace__thread *t = &ringbuf_ftrace__t;
	const void *const *p = (const void *const *)hookframe + 1; /* the hook's return address */
	uintptr_t n = 64, top;
	unsigned i;
	if (p[0] == site)
		return p; /* tail-called hook */
	p += sizeof(void *) == 4 ? 3 : 1; /* i386: over the hook's two argument words */
	/* the common case first, before any bound is computed: the slot within
	 * a few words (the function's saved registers); these words are always
	 * mapped (the function's frame, else its caller's: every function has
	 * one, a thread's start routine too) */
	/* (unrolled: a compare and a jump each, no loop counter) */
	if (p[0] == site)
		return &p[0];
	if (p[1] == site)
		return &p[1];
	if (p[2] == site)
		return &p[2];
	if (p[3] == site)
		return &p[3];
	if (t->depth && t->depth <= RINGBUF_FTRACE_MAX_DEPTH &&
	    (top = t->st[0].frame) != UINTPTR_MAX && top >= (uintptr_t)p) {
		n = (top - (uintptr_t)p) / sizeof(void *) + 1;
		if (n > RINGBUF_FTRACE_SCAN_WORDS)
			n = RINGBUF_FTRACE_SCAN_WORDS;
	}
	for (i = 4; i < n; i++)
		if (p[i] == site)
			return &p[i];
	return NULL;
}
#define RINGBUF_FTRACE__NOASAN __attribute__((no_sanitize_address))
#else
#define RINGBUF_FTRACE__NOASAN
#endif

/* hookframe: the entry hook's own frame, from which the frame key is found
 * when the shadow stack is in use (funcgraph, or frames left on it); NULL:
 * `frame` is the key (ringbuf_ftrace_enter). */
RINGBUF_FTRACE__HOT void ringbuf_ftrace__enter(void *fn, void *site, const void *frame, const void *hookframe)
{
	struct ringbuf_ftrace__thread *t = &ringbuf_ftrace__t; /* the one TLS access */
	struct ringbuf_ftrace__set *s;
	struct ringbuf *rb;
	unsigned cpu, mode;
	uint32_t d;
	uintptr_t a = (uintptr_t)fn;
	/* H1 */
	if (RINGBUF__UNLIKELY(t->busy)) {
		ringbuf_ftrace__nested();
		return;
	}
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	/* H2: acquire pairs with the release store in ringbuf_ftrace_start */
	rb = atomic_load_explicit(&ringbuf_ftrace__g.rb, memory_order_acquire);
	if (!rb || t->off)
		goto out;
	cpu = atomic_load_explicit(&ringbuf_ftrace__g.cpu, memory_order_relaxed);
	mode = atomic_load_explicit(&ringbuf_ftrace__g.mode, memory_order_relaxed);
	/* H3 (an unknown frame key: no repair, and the frame is never taken
	 * for dead: key UINTPTR_MAX). The caller's frame on top (its key
	 * above ours) is the common case: nothing to pop, no call. */
	d = t->depth;
#if RINGBUF_FTRACE_FRAME_KEYS
	if (hookframe && ((mode & RINGBUF_FTRACE_GRAPH) || d)) /* `function` alone: no stack, no key */
		frame = ringbuf_ftrace__key(hookframe, site);
#else
	(void)hookframe;
#endif
	/* d - 1 wraps for 0: one compare for 1 <= d <= MAX_DEPTH */
	if (frame && d - 1 < RINGBUF_FTRACE_MAX_DEPTH && t->st[d - 1].frame <= (uintptr_t)frame)
		ringbuf_ftrace__repair(t, rb, cpu, mode, (uintptr_t)frame, (uintptr_t)site, 0);
	/* H4: acquire pairs with the release store of set_filter/notrace */
	s = atomic_load_explicit(&ringbuf_ftrace__g.filter, memory_order_acquire);
	if (s && !ringbuf_ftrace__in(s, a))
		goto out;
	s = atomic_load_explicit(&ringbuf_ftrace__g.notrace, memory_order_acquire);
	if (s && ringbuf_ftrace__in(s, a))
		goto out;
	/* H5 */
	if (mode & RINGBUF_FTRACE_FUNCTION)
		ringbuf_ftrace__emit_fn(rb, cpu, a, (uintptr_t)site);
	if (mode & RINGBUF_FTRACE_GRAPH) {
		struct ringbuf__cpu *at;
		void *p;
		d = t->depth;
		if (RINGBUF__UNLIKELY(d >= RINGBUF_FTRACE_MAX_DEPTH)) {
			ringbuf_ftrace__overrun(t, d);
			goto out;
		}
		p = ringbuf_trace__reserve_in(rb, cpu, RINGBUF_FTRACE_ID_GRAPH_ENT,
					      sizeof(struct ringbuf_ftrace_graph_ent), &at);
		if (RINGBUF__LIKELY(p != NULL)) {
			t->st[d].calltime = ringbuf_ftrace__rec_ts(rb, at); /* the record's time */
			RINGBUF_FTRACE__PUT(p, struct ringbuf_ftrace_graph_ent, func, unsigned long, a);
			RINGBUF_FTRACE__PUT(p, struct ringbuf_ftrace_graph_ent, depth, int, d);
			ringbuf_commit(rb, cpu, p);
		} else {
			ringbuf_ftrace__dropped();
			t->st[d].calltime = ringbuf_time_stamp(rb);
		}
		/* pushed even when the record was dropped: the exit stays paired */
		t->st[d].func = a;
		t->st[d].frame = frame ? (uintptr_t)frame : UINTPTR_MAX;
		t->st[d].site = (uintptr_t)site;
		t->depth = d + 1;
	}
out:	/* H6 */
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
}

/* hookframe: the exit hook's own frame, from which the frame key is found
 * only when it is needed (the function's frame is not on top: a repair);
 * NULL: `frame` is the key (ringbuf_ftrace_exit). */
RINGBUF_FTRACE__HOT void ringbuf_ftrace__exit(void *fn, void *site, const void *frame, const void *hookframe)
{
	struct ringbuf_ftrace__thread *t = &ringbuf_ftrace__t; /* the one TLS access */
	struct ringbuf *rb;
	unsigned cpu, mode;
	uintptr_t a = (uintptr_t)fn;
	uint32_t d;
	if (RINGBUF__UNLIKELY(t->busy)) { /* H1 */
		ringbuf_ftrace__nested();
		return;
	}
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	rb = atomic_load_explicit(&ringbuf_ftrace__g.rb, memory_order_acquire); /* H2 */
	cpu = atomic_load_explicit(&ringbuf_ftrace__g.cpu, memory_order_relaxed);
	mode = atomic_load_explicit(&ringbuf_ftrace__g.mode, memory_order_relaxed);
	/* stopped or disabled: keep the stack paired, record nothing */
	if (!rb || t->off)
		rb = NULL;
	/* H3: the function's own frame on top is the common case (no call) */
	d = t->depth;
	if (d - 1 < RINGBUF_FTRACE_MAX_DEPTH && t->st[d - 1].func != a) { /* 1 <= d <= MAX_DEPTH */
#if RINGBUF_FTRACE_FRAME_KEYS
		if (hookframe)
			frame = ringbuf_ftrace__key(hookframe, site);
#else
		(void)hookframe;
#endif
		if (frame) {
			if (t->st[d - 1].frame < (uintptr_t)frame)
				ringbuf_ftrace__repair(t, rb, cpu, mode, (uintptr_t)frame, (uintptr_t)site, a);
		} else {
			ringbuf_ftrace__repair_to(t, rb, cpu, mode, a); /* H3 without keys */
		}
		d = t->depth;
	}
	if (!d)
		goto out;
	if (RINGBUF__UNLIKELY(d > RINGBUF_FTRACE_MAX_DEPTH)) {
		/* the top frame was not tracked: assume it is this one */
		t->depth = d - 1;
		goto out;
	}
	if (t->st[d - 1].func != a)
		goto out; /* H5: not ours (entry filtered or before start) */
	t->depth = d - 1;
	if (rb && (mode & RINGBUF_FTRACE_GRAPH))
		ringbuf_ftrace__emit_ret(rb, cpu, &t->st[d - 1], d - 1, 0, 0);
out:	/* H6 */
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
}

RINGBUF_FTRACE__NOINSTR RINGBUF_API void ringbuf_ftrace_enter(void *fn, void *site, const void *frame)
{
	ringbuf_ftrace__enter(fn, site, frame, NULL);
}

RINGBUF_FTRACE__NOINSTR RINGBUF_API void ringbuf_ftrace_exit(void *fn, void *site, const void *frame)
{
	ringbuf_ftrace__exit(fn, site, frame, NULL);
}

#ifndef RINGBUF_FTRACE_NO_HOOKS
RINGBUF_FTRACE__NOINSTR RINGBUF_FTRACE__NOASAN __attribute__((noinline)) void __cyg_profile_func_enter(void *fn,
												      void *site);
RINGBUF_FTRACE__NOINSTR RINGBUF_FTRACE__NOASAN __attribute__((noinline)) void __cyg_profile_func_exit(void *fn,
												     void *site);
RINGBUF_FTRACE__NOINSTR RINGBUF_FTRACE__NOASAN __attribute__((noinline)) void __cyg_profile_func_enter(void *fn,
												      void *site)
{
#if RINGBUF_FTRACE_FRAME_KEYS
	ringbuf_ftrace__enter(fn, site, NULL, __builtin_frame_address(0)); /* the key when needed */
#else
	ringbuf_ftrace__enter(fn, site, NULL, NULL);
#endif
}
RINGBUF_FTRACE__NOINSTR RINGBUF_FTRACE__NOASAN __attribute__((noinline)) void __cyg_profile_func_exit(void *fn,
												     void *site)
{
#if RINGBUF_FTRACE_FRAME_KEYS
	ringbuf_ftrace__exit(fn, site, NULL, __builtin_frame_address(0)); /* the key when needed */
#else
	ringbuf_ftrace__exit(fn, site, NULL, NULL);
#endif
}
#endif

RINGBUF_API void ringbuf_ftrace_thread_enable(bool on)
{
	ringbuf_ftrace__t.off = !on;
}

RINGBUF_API unsigned ringbuf_ftrace_thread_depth(void)
{
	return ringbuf_ftrace__t.depth;
}

RINGBUF_API void ringbuf_ftrace_get_stats(struct ringbuf_ftrace_stats *st)
{
	if (!st)
		return;
	st->dropped = atomic_load_explicit(&ringbuf_ftrace__g.dropped, memory_order_relaxed);
	st->overrun = atomic_load_explicit(&ringbuf_ftrace__g.overrun, memory_order_relaxed);
	st->repaired = atomic_load_explicit(&ringbuf_ftrace__g.repaired, memory_order_relaxed);
	st->nested_skipped = atomic_load_explicit(&ringbuf_ftrace__g.nested, memory_order_relaxed);
	st->trapped = atomic_load_explicit(&ringbuf_ftrace__g.trapped, memory_order_relaxed);
}

/* ---- >>fimpl: symbols ---------------------------------------------------- */

static int ringbuf_ftrace__add_sym(uintptr_t addr, const char *name, size_t len)
{
	char *s;
	if (ringbuf_ftrace__g.nsyms == ringbuf_ftrace__g.symcap) {
		size_t nc = ringbuf_ftrace__g.symcap ? ringbuf_ftrace__g.symcap * 2 : 1024;
		struct ringbuf_ftrace__sym *p = (struct ringbuf_ftrace__sym *)realloc(ringbuf_ftrace__g.syms,
										 nc * sizeof *p);
		if (!p)
			return RINGBUF_ENOMEM;
		ringbuf_ftrace__g.syms = p;
		ringbuf_ftrace__g.symcap = nc;
	}
	s = (char *)malloc(len + 1);
	if (!s)
		return RINGBUF_ENOMEM;
	memcpy(s, name, len);
	s[len] = 0;
	ringbuf_ftrace__g.syms[ringbuf_ftrace__g.nsyms].addr = addr;
	ringbuf_ftrace__g.syms[ringbuf_ftrace__g.nsyms].name = s;
	ringbuf_ftrace__g.nsyms++;
	return 0;
}

/* The STT_FUNC symbols of one mapped ELF file (every offset checked: a
 * truncated or corrupt file gives what is readable, never a crash). */
static int ringbuf_ftrace__elf(const unsigned char *m, size_t size, uintptr_t bias)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)(const void *)m;
	size_t i;
	if (size < sizeof *eh || memcmp(m, ELFMAG, SELFMAG) != 0 || eh->e_shentsize != sizeof(ElfW(Shdr)) ||
	    eh->e_shoff > size || (size - eh->e_shoff) / sizeof(ElfW(Shdr)) < eh->e_shnum)
		return 0;
	for (i = 0; i < eh->e_shnum; i++) {
		const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(const void *)(m + eh->e_shoff) + i;
		const ElfW(Shdr) *strh;
		size_t k, n;
		if ((sh->sh_type != SHT_SYMTAB && sh->sh_type != SHT_DYNSYM) || sh->sh_link >= eh->e_shnum ||
		    sh->sh_entsize != sizeof(ElfW(Sym)) || sh->sh_offset > size ||
		    sh->sh_size > size - sh->sh_offset)
			continue;
		strh = (const ElfW(Shdr) *)(const void *)(m + eh->e_shoff) + sh->sh_link;
		if (strh->sh_offset > size || strh->sh_size > size - strh->sh_offset)
			continue;
		n = sh->sh_size / sizeof(ElfW(Sym));
		for (k = 1; k < n; k++) {
			const ElfW(Sym) *sym = (const ElfW(Sym) *)(const void *)(m + sh->sh_offset) + k;
			const char *name, *end;
			int r;
			if (ELF64_ST_TYPE(sym->st_info) != STT_FUNC || !sym->st_value || sym->st_shndx == SHN_UNDEF ||
			    sym->st_name >= strh->sh_size)
				continue;
			name = (const char *)m + strh->sh_offset + sym->st_name;
			end = (const char *)memchr(name, 0, strh->sh_size - sym->st_name);
			if (!end || end == name)
				continue;
			if ((r = ringbuf_ftrace__add_sym(bias + (uintptr_t)sym->st_value, name, (size_t)(end - name))) < 0)
				return r;
		}
	}
	return 0;
}

static int ringbuf_ftrace__object(RINGBUF_FTRACE__PHDR_INFO *info, size_t size, void *ctx)
{
	const char *path = info->dlpi_name;
	struct stat stbuf;
	void *m;
	int fd, *err = (int *)ctx, r;
	(void)size;
	if (!path || !*path)
		path = "/proc/self/exe"; /* the main program */
	if (path[0] != '/')
		return 0; /* the vDSO ("linux-vdso.so.1"), or a name we cannot open */
	fd = open(path, O_RDONLY | RINGBUF__O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &stbuf) != 0 || stbuf.st_size <= 0) {
		close(fd);
		return 0;
	}
	m = mmap(NULL, (size_t)stbuf.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return 0;
	r = ringbuf_ftrace__elf((const unsigned char *)m, (size_t)stbuf.st_size, (uintptr_t)info->dlpi_addr);
	munmap(m, (size_t)stbuf.st_size);
	if (r < 0) {
		*err = r;
		return 1;
	}
	return 0;
}

static int ringbuf_ftrace__sym_cmp(const void *a, const void *b)
{
	const struct ringbuf_ftrace__sym *x = (const struct ringbuf_ftrace__sym *)a;
	const struct ringbuf_ftrace__sym *y = (const struct ringbuf_ftrace__sym *)b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void ringbuf_ftrace__free_syms(void)
{
	size_t i;
	for (i = 0; i < ringbuf_ftrace__g.nsyms; i++)
		free(ringbuf_ftrace__g.syms[i].name);
	free(ringbuf_ftrace__g.syms);
	ringbuf_ftrace__g.syms = NULL;
	ringbuf_ftrace__g.nsyms = ringbuf_ftrace__g.symcap = 0;
}

RINGBUF_API int ringbuf_ftrace_load_symbols(void)
{
	int err = 0;
	size_t i, o;
	ringbuf_ftrace__free_syms();
	dl_iterate_phdr(ringbuf_ftrace__object, &err);
	if (err < 0) {
		ringbuf_ftrace__free_syms();
		return err;
	}
	if (!ringbuf_ftrace__g.nsyms)
		return 0;
	qsort(ringbuf_ftrace__g.syms, ringbuf_ftrace__g.nsyms, sizeof *ringbuf_ftrace__g.syms,
	      ringbuf_ftrace__sym_cmp);
	for (i = 1, o = 1; i < ringbuf_ftrace__g.nsyms; i++) {
		struct ringbuf_ftrace__sym *p = &ringbuf_ftrace__g.syms[o - 1], *s = &ringbuf_ftrace__g.syms[i];
		if (s->addr == p->addr && !strcmp(s->name, p->name)) {
			free(s->name);
			continue;
		}
		ringbuf_ftrace__g.syms[o++] = *s;
	}
	ringbuf_ftrace__g.nsyms = o;
	return (int)(o > INT32_MAX ? INT32_MAX : o);
}

RINGBUF_API const char *ringbuf_ftrace_lookup(const void *addr)
{
	uintptr_t a = (uintptr_t)addr;
	size_t lo = 0, hi = ringbuf_ftrace__g.nsyms;
	while (lo < hi) { /* first symbol above a */
		size_t mid = lo + (hi - lo) / 2;
		if (ringbuf_ftrace__g.syms[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? ringbuf_ftrace__g.syms[lo - 1].name : "";
}

RINGBUF_API char *ringbuf_ftrace_kallsyms(void)
{
	size_t i, len = 1, at = 0;
	char *t;
	if (!ringbuf_ftrace__g.nsyms && ringbuf_ftrace_load_symbols() < 0)
		return NULL;
	for (i = 0; i < ringbuf_ftrace__g.nsyms; i++)
		len += 2 * sizeof(uintptr_t) + 4 + strlen(ringbuf_ftrace__g.syms[i].name);
	t = (char *)malloc(len);
	if (!t)
		return NULL;
	for (i = 0; i < ringbuf_ftrace__g.nsyms; i++)
		at += (size_t)snprintf(t + at, len - at, "%0*llx t %s\n", (int)(2 * sizeof(uintptr_t)),
				       (unsigned long long)ringbuf_ftrace__g.syms[i].addr,
				       ringbuf_ftrace__g.syms[i].name);
	t[at] = 0;
	return t;
}

/* ---- >>fimpl: filters ---------------------------------------------------- */

static int ringbuf_ftrace__uaddr_cmp(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

/* Split globs; every symbol matching one goes into a new set (*out, NULL
 * for an empty text). */
static int ringbuf_ftrace__build(const char *globs, struct ringbuf_ftrace__set **out)
{
	char *copy;
	struct ringbuf_ftrace__set *s;
	size_t i, n = 0;
	int r;
	*out = NULL;
	if (!globs || !globs[strspn(globs, " ,\t\n")])
		return 0;
	if (!ringbuf_ftrace__g.nsyms && (r = ringbuf_ftrace_load_symbols()) < 0)
		return r;
	s = (struct ringbuf_ftrace__set *)malloc(sizeof *s + (ringbuf_ftrace__g.nsyms + 1) * sizeof(uintptr_t));
	copy = (char *)malloc(strlen(globs) + 2);
	if (!s || !copy) {
		free(s);
		free(copy);
		return RINGBUF_ENOMEM;
	}
	/* the globs, each NUL-terminated, then an empty one */
	{
		const char *g = globs;
		char *d = copy;
		while (*(g += strspn(g, " ,\t\n"))) {
			size_t k = strcspn(g, " ,\t\n");
			memcpy(d, g, k);
			d[k] = 0;
			d += k + 1;
			g += k;
		}
		*d = 0;
	}
	for (i = 0; i < ringbuf_ftrace__g.nsyms; i++) {
		const char *g;
		for (g = copy; *g; g += strlen(g) + 1)
			if (ringbuf_trace_glob_match(g, ringbuf_ftrace__g.syms[i].name)) {
				s->addr[n++] = ringbuf_ftrace__g.syms[i].addr;
				break;
			}
	}
	free(copy);
	qsort(s->addr, n, sizeof(uintptr_t), ringbuf_ftrace__uaddr_cmp);
	if (!n)
		s->addr[0] = 0; /* ringbuf_ftrace__in reads one element */
	s->n = n;
	s->next_old = NULL;
	*out = s;
	return (int)(n > INT32_MAX ? INT32_MAX : n);
}

static int ringbuf_ftrace__set(RINGBUF__ATOMIC(struct ringbuf_ftrace__set *) *slot, const char *globs)
{
	struct ringbuf_ftrace__set *s, *old;
	int r = ringbuf_ftrace__build(globs, &s);
	if (r < 0)
		return r;
	/* release: a hook that loads s (acquire, H4) sees its addresses */
	old = atomic_exchange_explicit(slot, s, memory_order_acq_rel);
	if (old) { /* a hook may still read it: retire, free in ringbuf_ftrace_free */
		old->next_old = ringbuf_ftrace__g.old;
		ringbuf_ftrace__g.old = old;
	}
	return r;
}

RINGBUF_API int ringbuf_ftrace_set_filter(const char *globs)
{
	return ringbuf_ftrace__set(&ringbuf_ftrace__g.filter, globs);
}

RINGBUF_API int ringbuf_ftrace_set_notrace(const char *globs)
{
	return ringbuf_ftrace__set(&ringbuf_ftrace__g.notrace, globs);
}

/* ---- >>fimpl: start, stop, export ---------------------------------------- */

/* An invariant TSC (CPUID 0x80000007 EDX bit 8) that the kernel uses as its
 * clocksource (when the sysfs file can be read): what RINGBUF_CLOCK_TSC
 * assumes (synchronized across CPUs). x86-64 only. */
static bool ringbuf_ftrace__tsc_ok(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	unsigned a, b, c, d;
	char buf[16];
	ssize_t n;
	int fd;
	__asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000u), "c"(0u));
	if (a < 0x80000007u)
		return false;
	__asm__ __volatile__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000007u), "c"(0u));
	if (!(d & (1u << 8)))
		return false;
	fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | RINGBUF__O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	return n >= 4 && memcmp(buf, "tsc\n", 4) == 0;
#else
	return false;
#endif
}

/* The TSC clock for a private buffer that has the default clock and no
 * event yet (see ringbuf_ftrace_start). */
static void ringbuf_ftrace__pick_clock(struct ringbuf *rb, unsigned mode)
{
	unsigned i;
	if ((mode & RINGBUF_FTRACE_KEEP_CLOCK) || rb->clock_kind != RINGBUF__CLK_MONO ||
	    (rb->owned != 1 && rb->owned != 3))
		return;
	for (i = 0; i < rb->ncpu; i++) /* an outermost writer ever: not empty */
		if (atomic_load_explicit(&ringbuf__cpu(rb, i)->commits, memory_order_acquire) != 0)
			return;
	if (ringbuf_ftrace__tsc_ok())
		(void)ringbuf_set_clock(rb, RINGBUF_CLOCK_TSC, NULL);
}

RINGBUF_API int ringbuf_ftrace_start(struct ringbuf *rb, unsigned cpu, unsigned mode)
{
	int r;
	if (!rb || !(mode & (RINGBUF_FTRACE_GRAPH | RINGBUF_FTRACE_FUNCTION)) ||
	    (mode & ~(unsigned)(RINGBUF_FTRACE_GRAPH | RINGBUF_FTRACE_FUNCTION | RINGBUF_FTRACE_KEEP_CLOCK)))
		return RINGBUF_EINVAL;
	if (cpu >= ringbuf_ncpu(rb) && cpu != RINGBUF_CPU_THREAD && cpu != RINGBUF_CPU_CURRENT)
		return RINGBUF_EINVAL;
	if (!ringbuf_ftrace__g.nsyms && (r = ringbuf_ftrace_load_symbols()) < 0)
		return r;
	ringbuf_ftrace__pick_clock(rb, mode);
	mode &= ~(unsigned)RINGBUF_FTRACE_KEEP_CLOCK;
	atomic_store_explicit(&ringbuf_ftrace__g.cpu, cpu, memory_order_relaxed);
	atomic_store_explicit(&ringbuf_ftrace__g.mode, mode, memory_order_relaxed);
	/* release: pairs with the hooks' acquire load of rb (H2): cpu and mode are seen */
	atomic_store_explicit(&ringbuf_ftrace__g.rb, rb, memory_order_release);
	return 0;
}

RINGBUF_API void ringbuf_ftrace_stop(void)
{
	atomic_store_explicit(&ringbuf_ftrace__g.rb, NULL, memory_order_release);
}

RINGBUF_API const char *const *ringbuf_ftrace_formats(void)
{
#define RINGBUF_FTRACE__COMMON                                                                     \
	"format:\n"                                                                                 \
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"                      \
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"                      \
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"              \
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
	static char fn[1024], ret[1024], ent[1024];
	static const char *const list[] = {fn, ret, ent, NULL};
	const unsigned L = (unsigned)sizeof(unsigned long);
	if (!fn[0]) { /* same text every time: a race writes the same bytes */
		snprintf(fn, sizeof fn,
			 "name: function\nID: %u\n" RINGBUF_FTRACE__COMMON
			 "\tfield:unsigned long ip;\toffset:%u;\tsize:%u;\tsigned:0;\n"
			 "\tfield:unsigned long parent_ip;\toffset:%u;\tsize:%u;\tsigned:0;\n\n"
			 "print fmt: \" %%ps <-- %%ps\", (void *)REC->ip, (void *)REC->parent_ip\n",
			 (unsigned)RINGBUF_FTRACE_ID_FUNCTION,
			 (unsigned)offsetof(struct ringbuf_ftrace_function, ip), L,
			 (unsigned)offsetof(struct ringbuf_ftrace_function, parent_ip), L);
		snprintf(ret, sizeof ret,
			 "name: funcgraph_exit\nID: %u\n" RINGBUF_FTRACE__COMMON
			 "\tfield:unsigned long func;\toffset:%u;\tsize:%u;\tsigned:0;\n"
			 "\tfield:int depth;\toffset:%u;\tsize:4;\tsigned:1;\n"
			 "\tfield:unsigned int overrun;\toffset:%u;\tsize:4;\tsigned:0;\n"
			 "\tfield:unsigned long long calltime;\toffset:%u;\tsize:8;\tsigned:0;\n"
			 "\tfield:unsigned long long rettime;\toffset:%u;\tsize:8;\tsigned:0;\n\n"
			 "print fmt: \"<-- %%ps (%%d) (start: %%llx  end: %%llx) over: %%d\", (void *)REC->func, "
			 "REC->depth, REC->calltime, REC->rettime, REC->depth\n",
			 (unsigned)RINGBUF_FTRACE_ID_GRAPH_RET,
			 (unsigned)offsetof(struct ringbuf_ftrace_graph_ret, func), L,
			 (unsigned)offsetof(struct ringbuf_ftrace_graph_ret, depth),
			 (unsigned)offsetof(struct ringbuf_ftrace_graph_ret, overrun),
			 (unsigned)offsetof(struct ringbuf_ftrace_graph_ret, calltime),
			 (unsigned)offsetof(struct ringbuf_ftrace_graph_ret, rettime));
		snprintf(ent, sizeof ent,
			 "name: funcgraph_entry\nID: %u\n" RINGBUF_FTRACE__COMMON
			 "\tfield:unsigned long func;\toffset:%u;\tsize:%u;\tsigned:0;\n"
			 "\tfield:int depth;\toffset:%u;\tsize:4;\tsigned:1;\n\n"
			 "print fmt: \"--> %%ps (%%d)\", (void *)REC->func, REC->depth\n",
			 (unsigned)RINGBUF_FTRACE_ID_GRAPH_ENT,
			 (unsigned)offsetof(struct ringbuf_ftrace_graph_ent, func), L,
			 (unsigned)offsetof(struct ringbuf_ftrace_graph_ent, depth));
	}
	return list;
#undef RINGBUF_FTRACE__COMMON
}

RINGBUF_API int ringbuf_ftrace_save_tracedat(struct ringbuf *rb, const struct ringbuf_trace_registry *reg,
					     const char *path, const struct ringbuf_trace_tracedat_opts *opts)
{
	struct ringbuf_trace_tracedat_opts o = RINGBUF_TRACE_TRACEDAT_INIT;
	char *ks;
	int r;
	if (opts)
		o = *opts;
	ks = ringbuf_ftrace_kallsyms();
	if (!ks)
		return RINGBUF_ENOMEM;
	o.kallsyms = ks;
	o.ftrace_formats = ringbuf_ftrace_formats();
	r = ringbuf_trace_save_tracedat(rb, reg, path, &o);
	free(ks);
	return r;
}

/* ---- >>fimpl: fentry patching (>>design, FENTRY) ------------------------- */

/* the reason of the last failure: a static string (relaxed: any one of them) */
static RINGBUF__ATOMIC(const char *) ringbuf_ftrace__perr;
#define RINGBUF_FTRACE__PERR(text) atomic_store_explicit(&ringbuf_ftrace__perr, (text), memory_order_relaxed)

#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__)) && defined(SA_SIGINFO)
#define RINGBUF_FTRACE__FENTRY 1
#else
#define RINGBUF_FTRACE__FENTRY 0
#endif

#if RINGBUF_FTRACE__FENTRY
/* the flags hidden by a strict -std=c11 (Linux's values on x86-64) */
#ifndef SA_RESTART
#define SA_RESTART 0x10000000
#endif
#ifndef SA_NODEFER
#define SA_NODEFER 0x40000000
#endif
#ifndef SA_ONSTACK
#define SA_ONSTACK 0x08000000
#endif
#define RINGBUF_FTRACE__SI_KERNEL 0x80
/* the registers in the handler's ucontext: the kernel's x86-64 signal frame
 * ABI (struct ucontext: uc_flags, uc_link, uc_stack (24 bytes), then the
 * sigcontext r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip: glibc's
 * gregs[REG_RSP = 15], gregs[REG_RIP = 16]), named here because a strict
 * -std=c11 file has no ucontext_t */
#define RINGBUF_FTRACE__UC_GREGS 40
#define RINGBUF_FTRACE__REG_RSP 15
#define RINGBUF_FTRACE__REG_RIP 16
#if defined(__USE_GNU) && defined(REG_RIP)
_Static_assert(RINGBUF_FTRACE__REG_RIP == REG_RIP && RINGBUF_FTRACE__REG_RSP == REG_RSP, "x86-64 gregs");
_Static_assert(offsetof(ucontext_t, uc_mcontext.gregs) == RINGBUF_FTRACE__UC_GREGS, "x86-64 ucontext");
#endif

/* The site table: sorted by site, built once, never freed (KEPT FOREVER) */
struct ringbuf_ftrace__site {
	uintptr_t site, func;
	_Atomic(unsigned char) state; /* 1: a call (patched or becoming so), 0: the NOP */
	unsigned char skip;           /* a ringbuf_* function: never patched */
	unsigned short seg;           /* its segment in ringbuf_ftrace__segs */
};
struct ringbuf_ftrace__seg {
	uintptr_t lo, hi; /* an executable PT_LOAD segment with sites */
	int prot;         /* its protection (PT_LOAD flags) */
};
static struct {
	RINGBUF__ATOMIC(struct ringbuf_ftrace__site *) tab; /* release: filled in */
	size_t n, patched;
	struct ringbuf_ftrace__seg *segs;
	size_t nsegs, cap, segcap;
	bool built, handler, mb;
	struct sigaction old;
	pthread_mutex_t lock;
} ringbuf_ftrace__fe = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The trampoline (CALL in >>design). Entered by `call` from a site, with
 * [rsp] = site + 5 and [rsp + 8] = the traced function's return address. */
RINGBUF_FTRACE__NOINSTR __attribute__((used, noinline)) static void
ringbuf_ftrace__fentry_hook(uintptr_t site, uintptr_t parent) __asm__("ringbuf_ftrace__fentry_hook");
__asm__(".pushsection .text\n" /* and back: the compiler keeps track of its section */
	".p2align 4\n"
	".type ringbuf_ftrace__tramp, @function\n"
	"ringbuf_ftrace__tramp:\n"
	".cfi_startproc\n"
	"\tpushq %rbp\n"
	".cfi_adjust_cfa_offset 8\n"
	".cfi_rel_offset %rbp, 0\n"
	"\tmovq %rsp, %rbp\n"
	".cfi_def_cfa_register %rbp\n"
	"\tandq $-16, %rsp\n"
	"\tsubq $208, %rsp\n"
	"\tmovq %rax, 0(%rsp)\n"
	"\tmovq %rdi, 8(%rsp)\n"
	"\tmovq %rsi, 16(%rsp)\n"
	"\tmovq %rdx, 24(%rsp)\n"
	"\tmovq %rcx, 32(%rsp)\n"
	"\tmovq %r8, 40(%rsp)\n"
	"\tmovq %r9, 48(%rsp)\n"
	"\tmovq %r10, 56(%rsp)\n"
	"\tmovq %r11, 64(%rsp)\n"
	"\tmovaps %xmm0, 80(%rsp)\n"
	"\tmovaps %xmm1, 96(%rsp)\n"
	"\tmovaps %xmm2, 112(%rsp)\n"
	"\tmovaps %xmm3, 128(%rsp)\n"
	"\tmovaps %xmm4, 144(%rsp)\n"
	"\tmovaps %xmm5, 160(%rsp)\n"
	"\tmovaps %xmm6, 176(%rsp)\n"
	"\tmovaps %xmm7, 192(%rsp)\n"
	"\tmovq 8(%rbp), %rdi\n"  /* site + 5 */
	"\tsubq $5, %rdi\n"
	"\tmovq 16(%rbp), %rsi\n" /* parent_ip */
	"\tcall ringbuf_ftrace__fentry_hook\n"
	"\tmovaps 192(%rsp), %xmm7\n"
	"\tmovaps 176(%rsp), %xmm6\n"
	"\tmovaps 160(%rsp), %xmm5\n"
	"\tmovaps 144(%rsp), %xmm4\n"
	"\tmovaps 128(%rsp), %xmm3\n"
	"\tmovaps 112(%rsp), %xmm2\n"
	"\tmovaps 96(%rsp), %xmm1\n"
	"\tmovaps 80(%rsp), %xmm0\n"
	"\tmovq 64(%rsp), %r11\n"
	"\tmovq 56(%rsp), %r10\n"
	"\tmovq 48(%rsp), %r9\n"
	"\tmovq 40(%rsp), %r8\n"
	"\tmovq 32(%rsp), %rcx\n"
	"\tmovq 24(%rsp), %rdx\n"
	"\tmovq 16(%rsp), %rsi\n"
	"\tmovq 8(%rsp), %rdi\n"
	"\tmovq 0(%rsp), %rax\n"
	"\tmovq %rbp, %rsp\n"
	"\tpopq %rbp\n"
	".cfi_def_cfa %rsp, 8\n"
	"\tret\n"
	".cfi_endproc\n"
	".size ringbuf_ftrace__tramp, .-ringbuf_ftrace__tramp\n"
	".popsection\n");

RINGBUF_FTRACE__NOINSTR static inline uintptr_t ringbuf_ftrace__tramp_addr(void)
{
	uintptr_t a;
	__asm__("leaq ringbuf_ftrace__tramp(%%rip), %0" : "=r"(a));
	return a;
}

/* the entry for site, or NULL (binary search; async-signal-safe) */
RINGBUF_FTRACE__NOINSTR static inline struct ringbuf_ftrace__site *ringbuf_ftrace__site_find(uintptr_t site)
{
	/* acquire: pairs with the release store that published the table */
	struct ringbuf_ftrace__site *t = atomic_load_explicit(&ringbuf_ftrace__fe.tab, memory_order_acquire);
	size_t lo = 0, hi;
	if (!t)
		return NULL;
	hi = ringbuf_ftrace__fe.n; /* written before the table was published */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t[mid].site < site)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < ringbuf_ftrace__fe.n && t[lo].site == site ? &t[lo] : NULL;
}

/* The hook (CALL): the `function` path of ringbuf_ftrace__enter */
RINGBUF_FTRACE__NOINSTR __attribute__((used, noinline)) static void ringbuf_ftrace__fentry_hook(uintptr_t site,
												uintptr_t parent)
{
	struct ringbuf_ftrace__thread *t = &ringbuf_ftrace__t;
	const struct ringbuf_ftrace__site *e;
	struct ringbuf_ftrace__set *s;
	struct ringbuf *rb;
	unsigned mode;
	if (RINGBUF__UNLIKELY(t->busy)) { /* H1 */
		ringbuf_ftrace__nested();
		return;
	}
	t->busy = 1;
	atomic_signal_fence(memory_order_seq_cst);
	/* H2: acquire pairs with the release store in ringbuf_ftrace_start */
	rb = atomic_load_explicit(&ringbuf_ftrace__g.rb, memory_order_acquire);
	if (!rb || t->off)
		goto out;
	mode = atomic_load_explicit(&ringbuf_ftrace__g.mode, memory_order_relaxed);
	if (!(mode & RINGBUF_FTRACE_FUNCTION) || !(e = ringbuf_ftrace__site_find(site)))
		goto out;
	/* H4: acquire pairs with the release store of set_filter/notrace */
	s = atomic_load_explicit(&ringbuf_ftrace__g.filter, memory_order_acquire);
	if (s && !ringbuf_ftrace__in(s, e->func))
		goto out;
	s = atomic_load_explicit(&ringbuf_ftrace__g.notrace, memory_order_acquire);
	if (s && ringbuf_ftrace__in(s, e->func))
		goto out;
	ringbuf_ftrace__emit_fn(rb, atomic_load_explicit(&ringbuf_ftrace__g.cpu, memory_order_relaxed), e->func,
				parent);
out:
	atomic_signal_fence(memory_order_seq_cst);
	t->busy = 0;
#ifdef RINGBUF_TESTING
	/* a hook that uses every register the trampoline saves, as a larger
	 * one may: the traced function's arguments survive by those saves only
	 * (tests/trace/test_ftrace_fentry.c checks them) */
	__asm__ __volatile__("xorps %%xmm0, %%xmm0\n\txorps %%xmm1, %%xmm1\n\txorps %%xmm2, %%xmm2\n\t"
			     "xorps %%xmm3, %%xmm3\n\txorps %%xmm4, %%xmm4\n\txorps %%xmm5, %%xmm5\n\t"
			     "xorps %%xmm6, %%xmm6\n\txorps %%xmm7, %%xmm7\n\tmovq $-1, %%rax\n\t"
			     "movq $-1, %%rdi\n\tmovq $-1, %%rsi\n\tmovq $-1, %%rdx\n\tmovq $-1, %%rcx\n\t"
			     "movq $-1, %%r8\n\tmovq $-1, %%r9\n\tmovq $-1, %%r10\n\tmovq $-1, %%r11"
			     :
			     :
			     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "rax", "rdi", "rsi",
			       "rdx", "rcx", "r8", "r9", "r10", "r11");
#endif
}

/* T: SIGTRAP. An int3 of ours (ip - 1 is a site): emulate what the site is
 * becoming; otherwise the handler installed before ours. */
/* not instrumented by ASan: it writes the interrupted thread's red zone */
RINGBUF_FTRACE__NOINSTR __attribute__((no_sanitize_address)) static void ringbuf_ftrace__trap(int sig, siginfo_t *si, void *uc)
{
	uint64_t *g = (uint64_t *)(void *)((char *)uc + RINGBUF_FTRACE__UC_GREGS);
	struct ringbuf_ftrace__site *e = NULL;
	if (si && si->si_code == RINGBUF_FTRACE__SI_KERNEL && uc)
		e = ringbuf_ftrace__site_find((uintptr_t)g[RINGBUF_FTRACE__REG_RIP] - 1);
	if (e) {
		ringbuf_ftrace__count(&ringbuf_ftrace__g.trapped);
		/* relaxed: either value is what the site did at some moment */
		if (atomic_load_explicit(&e->state, memory_order_relaxed)) {
			g[RINGBUF_FTRACE__REG_RSP] -= 8; /* the call's push: the red zone */
			*(uint64_t *)(uintptr_t)g[RINGBUF_FTRACE__REG_RSP] = e->site + 5;
			g[RINGBUF_FTRACE__REG_RIP] = ringbuf_ftrace__tramp_addr();
		} else {
			g[RINGBUF_FTRACE__REG_RIP] = e->site + 5;
		}
		return;
	}
	if (ringbuf_ftrace__fe.old.sa_flags & SA_SIGINFO) {
		if (ringbuf_ftrace__fe.old.sa_sigaction)
			ringbuf_ftrace__fe.old.sa_sigaction(sig, si, uc);
	} else if (ringbuf_ftrace__fe.old.sa_handler == SIG_IGN) {
		return;
	} else if (ringbuf_ftrace__fe.old.sa_handler == SIG_DFL) {
		/* the default action, as without us: delivered at our return */
		signal(SIGTRAP, SIG_DFL);
		raise(SIGTRAP);
	} else {
		ringbuf_ftrace__fe.old.sa_handler(sig);
	}
}

/* SITES: one object's __mcount_loc (file mapped read-only, every offset checked) */
struct ringbuf_ftrace__scan {
	RINGBUF_FTRACE__PHDR_INFO *info;
	int err;
};

RINGBUF_FTRACE__NOINSTR static int ringbuf_ftrace__add_site(uintptr_t site, RINGBUF_FTRACE__PHDR_INFO *info)
{
	static const unsigned char nop5[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
	static const unsigned char endbr[4] = {0xf3, 0x0f, 0x1e, 0xfa};
	size_t i, lo = 0, hi = ringbuf_ftrace__g.nsyms;
	uintptr_t func, seglo = 0, seghi = 0;
	int prot = 0;
	struct ringbuf_ftrace__site *t;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = (uintptr_t)info->dlpi_addr + (uintptr_t)ph->p_vaddr;
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || site < a || site - a > ph->p_memsz ||
		    ph->p_memsz - (site - a) < 5)
			continue;
		seglo = a;
		seghi = a + (uintptr_t)ph->p_memsz;
		prot = PROT_EXEC | (ph->p_flags & PF_R ? PROT_READ : 0) | (ph->p_flags & PF_W ? PROT_WRITE : 0);
		break;
	}
	if (!seghi || memcmp((const void *)site, nop5, 5) != 0)
		return 0; /* not in executable memory of its object, or not the NOP */
	while (lo < hi) { /* the last symbol at or below site */
		size_t mid = lo + (hi - lo) / 2;
		if (ringbuf_ftrace__g.syms[mid].addr <= site)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return 0;
	func = ringbuf_ftrace__g.syms[lo - 1].addr;
	if (site != func && !(site - func == 4 && func >= seglo && !memcmp((const void *)func, endbr, 4)))
		return 0; /* not a function's first instruction */
	for (i = 0; i < ringbuf_ftrace__fe.nsegs; i++)
		if (ringbuf_ftrace__fe.segs[i].lo == seglo)
			break;
	if (i == ringbuf_ftrace__fe.nsegs) {
		if (i == ringbuf_ftrace__fe.segcap) {
			size_t nc = i ? 2 * i : 8;
			struct ringbuf_ftrace__seg *p =
				(struct ringbuf_ftrace__seg *)realloc(ringbuf_ftrace__fe.segs, nc * sizeof *p);
			if (!p || nc > 65535)
				return RINGBUF_ENOMEM;
			ringbuf_ftrace__fe.segs = p;
			ringbuf_ftrace__fe.segcap = nc;
		}
		ringbuf_ftrace__fe.segs[i].lo = seglo;
		ringbuf_ftrace__fe.segs[i].hi = seghi;
		ringbuf_ftrace__fe.segs[i].prot = prot;
		ringbuf_ftrace__fe.nsegs++;
	}
	if (ringbuf_ftrace__fe.n == ringbuf_ftrace__fe.cap) {
		size_t nc = ringbuf_ftrace__fe.cap ? 2 * ringbuf_ftrace__fe.cap : 256;
		t = (struct ringbuf_ftrace__site *)realloc(
			atomic_load_explicit(&ringbuf_ftrace__fe.tab, memory_order_relaxed), nc * sizeof *t);
		if (!t)
			return RINGBUF_ENOMEM;
		atomic_store_explicit(&ringbuf_ftrace__fe.tab, t, memory_order_relaxed); /* not published yet */
		ringbuf_ftrace__fe.cap = nc;
	}
	t = atomic_load_explicit(&ringbuf_ftrace__fe.tab, memory_order_relaxed);
	t += ringbuf_ftrace__fe.n++;
	t->site = site;
	t->func = func;
	atomic_init(&t->state, 0);
	t->skip = !strncmp(ringbuf_ftrace_lookup((const void *)site), "ringbuf_", 8);
	t->seg = (unsigned short)i;
	return 0;
}

RINGBUF_FTRACE__NOINSTR static int ringbuf_ftrace__mcount(RINGBUF_FTRACE__PHDR_INFO *info, size_t size, void *ctx)
{
	int *err = (int *)ctx, fd;
	const char *path = info->dlpi_name;
	struct stat stbuf;
	const unsigned char *m;
	const ElfW(Ehdr) *eh;
	size_t i;
	(void)size;
	if (!path || !*path)
		path = "/proc/self/exe";
	if (path[0] != '/')
		return 0; /* the vDSO */
	fd = open(path, O_RDONLY | RINGBUF__O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &stbuf) != 0 || stbuf.st_size <= 0) {
		close(fd);
		return 0;
	}
	m = (const unsigned char *)mmap(NULL, (size_t)stbuf.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == (const unsigned char *)MAP_FAILED)
		return 0;
	eh = (const ElfW(Ehdr) *)(const void *)m;
	if ((size_t)stbuf.st_size < sizeof *eh || memcmp(m, ELFMAG, SELFMAG) != 0 ||
	    eh->e_shentsize != sizeof(ElfW(Shdr)) || eh->e_shoff > (size_t)stbuf.st_size ||
	    ((size_t)stbuf.st_size - eh->e_shoff) / sizeof(ElfW(Shdr)) < eh->e_shnum || eh->e_shstrndx >= eh->e_shnum)
		goto done;
	{
		const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(const void *)(m + eh->e_shoff);
		const ElfW(Shdr) *str = &sh[eh->e_shstrndx];
		size_t fsize = (size_t)stbuf.st_size;
		if (str->sh_offset > fsize || str->sh_size > fsize - str->sh_offset)
			goto done;
		for (i = 0; i < eh->e_shnum; i++) {
			size_t k, n;
			if (sh[i].sh_name >= str->sh_size || str->sh_size - sh[i].sh_name < sizeof "__mcount_loc" ||
			    memcmp(m + str->sh_offset + sh[i].sh_name, "__mcount_loc", sizeof "__mcount_loc") != 0 ||
			    sh[i].sh_type != SHT_PROGBITS || sh[i].sh_offset > fsize ||
			    sh[i].sh_size > fsize - sh[i].sh_offset)
				continue;
			n = sh[i].sh_size / sizeof(uint64_t);
			for (k = 0; k < n; k++) {
				uint64_t a;
				int r;
				memcpy(&a, m + sh[i].sh_offset + k * sizeof a, sizeof a);
				if ((r = ringbuf_ftrace__add_site((uintptr_t)info->dlpi_addr + (uintptr_t)a, info)) < 0) {
					*err = r;
					munmap((void *)(uintptr_t)m, (size_t)stbuf.st_size);
					return 1;
				}
			}
		}
	}
done:
	munmap((void *)(uintptr_t)m, (size_t)stbuf.st_size);
	return 0;
}

RINGBUF_FTRACE__NOINSTR static int ringbuf_ftrace__site_cmp(const void *a, const void *b)
{
	uintptr_t x = ((const struct ringbuf_ftrace__site *)a)->site;
	uintptr_t y = ((const struct ringbuf_ftrace__site *)b)->site;
	return x < y ? -1 : x > y;
}

/* SYNC: every thread of the process executes a core-serialising instruction
 * (membarrier), then this one (cpuid) */
RINGBUF_FTRACE__NOINSTR static int ringbuf_ftrace__sync(void)
{
	unsigned a = 0, b, c = 0, d;
	if (syscall(SYS_membarrier, 32 /* MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE */, 0, 0) != 0)
		return -1;
	__asm__ __volatile__("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d) : : "memory");
	return 0;
}

/* Build the table, register membarrier, install the handler: once */
RINGBUF_FTRACE__NOINSTR static int ringbuf_ftrace__fe_init(void)
{
	int err = 0;
	long q;
	if (!ringbuf_ftrace__fe.mb) {
		q = syscall(SYS_membarrier, 0 /* MEMBARRIER_CMD_QUERY */, 0, 0);
		if (q < 0 || !(q & 32) || !(q & 64)) {
			RINGBUF_FTRACE__PERR("membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) is not available "
					       "(Linux >= 4.16, not filtered by seccomp): patching would be unsafe");
			if (q >= 0)
				errno = ENOSYS;
			return RINGBUF_ESYS;
		}
		if (syscall(SYS_membarrier, 64 /* REGISTER_PRIVATE_EXPEDITED_SYNC_CORE */, 0, 0) != 0) {
			RINGBUF_FTRACE__PERR("membarrier: registering for PRIVATE_EXPEDITED_SYNC_CORE failed");
			return RINGBUF_ESYS;
		}
		ringbuf_ftrace__fe.mb = true;
	}
	if (!ringbuf_ftrace__fe.built) {
		struct ringbuf_ftrace__site *t;
		if (!ringbuf_ftrace__g.nsyms && (err = ringbuf_ftrace_load_symbols()) < 0) {
			RINGBUF_FTRACE__PERR("reading the symbol tables failed");
			return err;
		}
		err = 0;
		dl_iterate_phdr(ringbuf_ftrace__mcount, &err);
		t = atomic_load_explicit(&ringbuf_ftrace__fe.tab, memory_order_relaxed);
		if (err < 0) {
			free(t);
			free(ringbuf_ftrace__fe.segs);
			atomic_store_explicit(&ringbuf_ftrace__fe.tab, NULL, memory_order_relaxed);
			ringbuf_ftrace__fe.segs = NULL;
			ringbuf_ftrace__fe.n = ringbuf_ftrace__fe.cap = ringbuf_ftrace__fe.nsegs = 0;
			ringbuf_ftrace__fe.segcap = 0;
			RINGBUF_FTRACE__PERR("out of memory reading the fentry sites");
			return err;
		}
		if (!ringbuf_ftrace__fe.n) {
			RINGBUF_FTRACE__PERR("no fentry sites: build the code to trace with gcc -pg -mfentry "
					       "-mnop-mcount -mrecord-mcount -fno-pie -no-pie (x86-64)");
			errno = ENOENT;
			return RINGBUF_ESYS;
		}
		qsort(t, ringbuf_ftrace__fe.n, sizeof *t, ringbuf_ftrace__site_cmp);
		/* release: a handler or hook that loads the table sees it sorted, n set */
		atomic_store_explicit(&ringbuf_ftrace__fe.tab, t, memory_order_release);
		ringbuf_ftrace__fe.built = true;
	}
	if (!ringbuf_ftrace__fe.handler) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = ringbuf_ftrace__trap;
		sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART | SA_ONSTACK;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGTRAP, &sa, &ringbuf_ftrace__fe.old) != 0) {
			RINGBUF_FTRACE__PERR("sigaction(SIGTRAP) failed");
			return RINGBUF_ESYS;
		}
		ringbuf_ftrace__fe.handler = true;
	}
	return 0;
}

#ifdef RINGBUF_TESTING
/* Test point: called on the patching thread after P1's SYNC (step 1: every
 * changed site holds int3) and after P2's (step 2), so a test can run a site
 * in the middle of the sequence and take the trap deterministically. */
static void (*ringbuf_ftrace__patch_tp)(int step);
#define RINGBUF_FTRACE__PATCH_TP(s)                 \
	do {                                        \
		if (ringbuf_ftrace__patch_tp)       \
			ringbuf_ftrace__patch_tp(s); \
	} while (0)
#else
#define RINGBUF_FTRACE__PATCH_TP(s) ((void)0)
#endif

/* P0..P4 for the sites whose state differs from want(site) */
RINGBUF_FTRACE__NOINSTR static int ringbuf_ftrace__apply(bool all_off)
{
	struct ringbuf_ftrace__site *t = atomic_load_explicit(&ringbuf_ftrace__fe.tab, memory_order_relaxed);
	const struct ringbuf_ftrace__set *f = atomic_load_explicit(&ringbuf_ftrace__g.filter, memory_order_acquire);
	const struct ringbuf_ftrace__set *nt = atomic_load_explicit(&ringbuf_ftrace__g.notrace, memory_order_acquire);
	uintptr_t tramp = ringbuf_ftrace__tramp_addr(), pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	unsigned char *want;
	uintptr_t *lo, *hi;
	size_t i, k, changed = 0, done;
	int r = 0;
	want = (unsigned char *)malloc(ringbuf_ftrace__fe.n + 1);
	lo = (uintptr_t *)calloc(ringbuf_ftrace__fe.nsegs + 1, sizeof *lo);
	hi = (uintptr_t *)calloc(ringbuf_ftrace__fe.nsegs + 1, sizeof *hi);
	if (!want || !lo || !hi) {
		RINGBUF_FTRACE__PERR("out of memory");
		r = RINGBUF_ENOMEM;
		goto out;
	}
	for (i = 0; i < ringbuf_ftrace__fe.n; i++) {
		uintptr_t fn = t[i].func;
		long long d = (long long)tramp - (long long)(t[i].site + 5);
		want[i] = !all_off && !t[i].skip && (!f || ringbuf_ftrace__in(f, fn)) && !(nt && ringbuf_ftrace__in(nt, fn));
		if (want[i] == atomic_load_explicit(&t[i].state, memory_order_relaxed))
			continue;
		if (want[i] && (d < INT32_MIN || d > INT32_MAX)) {
			RINGBUF_FTRACE__PERR("a site is more than 2 GiB from the trampoline (the tracer in a shared "
					       "object far from the traced program): nothing patched");
			errno = ERANGE;
			r = RINGBUF_ESYS;
			goto out;
		}
		k = t[i].seg;
		if (!hi[k] || t[i].site < lo[k])
			lo[k] = t[i].site & ~(pg - 1);
		if (!hi[k] || t[i].site + 5 > hi[k])
			hi[k] = (t[i].site + 5 + pg - 1) & ~(pg - 1);
		changed++;
	}
	if (!changed)
		goto out;
	/* P0: writable and still executable, every segment or none */
	for (k = 0; k < ringbuf_ftrace__fe.nsegs; k++) {
		if (hi[k] && mprotect((void *)lo[k], hi[k] - lo[k], PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
			int e = errno;
			while (k--)
				if (hi[k])
					(void)mprotect((void *)lo[k], hi[k] - lo[k], ringbuf_ftrace__fe.segs[k].prot);
			errno = e;
			RINGBUF_FTRACE__PERR("mprotect(READ|WRITE|EXEC) of the code refused (a W^X policy: SELinux "
					       "execmod, PaX MPROTECT): nothing patched");
			r = RINGBUF_ESYS;
			goto out;
		}
	}
	for (i = 0; i < ringbuf_ftrace__fe.n; i++)
		if (want[i] != atomic_load_explicit(&t[i].state, memory_order_relaxed))
			atomic_store_explicit(&t[i].state, want[i], memory_order_relaxed); /* what T emulates */
	/* P1..P3. The stores are volatile (each done, in order); the membarrier
	 * system call between the steps is a full barrier for this thread's
	 * stores and orders them before every other thread's next instruction
	 * fetch (SYNC_CORE). A failure of SYNC after P1 (it was just checked
	 * and registered: not expected) leaves the int3s, which T emulates:
	 * the remaining steps are still done. */
	{
		int s1, s2, s3;
		for (i = 0; i < ringbuf_ftrace__fe.n; i++)
			if (hi[t[i].seg] && atomic_load_explicit(&t[i].state, memory_order_relaxed) !=
						   (*(volatile unsigned char *)t[i].site == 0xe8))
				*(volatile unsigned char *)t[i].site = 0xcc;
		s1 = ringbuf_ftrace__sync();
		RINGBUF_FTRACE__PATCH_TP(1);
		for (i = 0; i < ringbuf_ftrace__fe.n; i++) {
			volatile unsigned char *p = (volatile unsigned char *)t[i].site;
			if (*p != 0xcc)
				continue;
			if (atomic_load_explicit(&t[i].state, memory_order_relaxed)) {
				uint32_t rel = (uint32_t)(tramp - (t[i].site + 5));
				p[1] = (unsigned char)rel;
				p[2] = (unsigned char)(rel >> 8);
				p[3] = (unsigned char)(rel >> 16);
				p[4] = (unsigned char)(rel >> 24);
			} else {
				p[1] = 0x1f;
				p[2] = 0x44;
				p[3] = 0x00;
				p[4] = 0x00;
			}
		}
		s2 = ringbuf_ftrace__sync();
		RINGBUF_FTRACE__PATCH_TP(2);
		for (i = 0, done = 0; i < ringbuf_ftrace__fe.n; i++) {
			volatile unsigned char *p = (volatile unsigned char *)t[i].site;
			if (*p != 0xcc)
				continue;
			*p = atomic_load_explicit(&t[i].state, memory_order_relaxed) ? 0xe8 : 0x0f;
			done++;
		}
		s3 = ringbuf_ftrace__sync();
		(void)done;
		if (s1 || s2 || s3)
			RINGBUF_FTRACE__PERR("membarrier SYNC_CORE failed during the patch (the sites are complete)");
	}
	/* P4 */
	for (k = 0; k < ringbuf_ftrace__fe.nsegs; k++)
		if (hi[k])
			(void)mprotect((void *)lo[k], hi[k] - lo[k], ringbuf_ftrace__fe.segs[k].prot);
out:
	for (i = 0, k = 0; i < ringbuf_ftrace__fe.n; i++)
		k += atomic_load_explicit(&t[i].state, memory_order_relaxed);
	ringbuf_ftrace__fe.patched = k;
	free(want);
	free(lo);
	free(hi);
	return r;
}
#endif /* RINGBUF_FTRACE__FENTRY */

RINGBUF_API int ringbuf_ftrace_patch(void)
{
#if RINGBUF_FTRACE__FENTRY
	int r;
	pthread_mutex_lock(&ringbuf_ftrace__fe.lock);
	RINGBUF_FTRACE__PERR("");
	if ((r = ringbuf_ftrace__fe_init()) == 0 && (r = ringbuf_ftrace__apply(false)) == 0)
		r = (int)(ringbuf_ftrace__fe.patched > INT32_MAX ? INT32_MAX : ringbuf_ftrace__fe.patched);
	pthread_mutex_unlock(&ringbuf_ftrace__fe.lock);
	return r;
#else
	RINGBUF_FTRACE__PERR("fentry patching is implemented for x86-64 Linux only (gcc -mfentry NOP sites, the "
			       "int3 patching sequence, the x86-64 trampoline), in a file with POSIX signals "
			       "(_POSIX_C_SOURCE or _GNU_SOURCE)");
	errno = ENOSYS;
	return RINGBUF_ESYS;
#endif
}

RINGBUF_API int ringbuf_ftrace_unpatch(void)
{
#if RINGBUF_FTRACE__FENTRY
	size_t before;
	int r = 0;
	pthread_mutex_lock(&ringbuf_ftrace__fe.lock);
	RINGBUF_FTRACE__PERR("");
	before = ringbuf_ftrace__fe.patched;
	if (before && (r = ringbuf_ftrace__apply(true)) == 0)
		r = (int)(before > INT32_MAX ? INT32_MAX : before);
	pthread_mutex_unlock(&ringbuf_ftrace__fe.lock);
	return r;
#else
	return 0; /* nothing can have been patched */
#endif
}

RINGBUF_API const char *ringbuf_ftrace_patch_error(void)
{
	const char *e = atomic_load_explicit(&ringbuf_ftrace__perr, memory_order_relaxed);
	return e ? e : "";
}

RINGBUF_API void ringbuf_ftrace_patch_sites(size_t *total, size_t *patched)
{
#if RINGBUF_FTRACE__FENTRY
	pthread_mutex_lock(&ringbuf_ftrace__fe.lock);
	if (total)
		*total = ringbuf_ftrace__fe.built ? ringbuf_ftrace__fe.n : 0;
	if (patched)
		*patched = ringbuf_ftrace__fe.patched;
	pthread_mutex_unlock(&ringbuf_ftrace__fe.lock);
#else
	if (total)
		*total = 0;
	if (patched)
		*patched = 0;
#endif
}

RINGBUF_API void ringbuf_ftrace_free(void)
{
	struct ringbuf_ftrace__set *s;
	(void)ringbuf_ftrace_unpatch(); /* the site table and SIGTRAP handler stay (KEPT FOREVER) */
	ringbuf_ftrace_stop();
	s = atomic_exchange_explicit(&ringbuf_ftrace__g.filter, NULL, memory_order_acq_rel);
	free(s);
	s = atomic_exchange_explicit(&ringbuf_ftrace__g.notrace, NULL, memory_order_acq_rel);
	free(s);
	while ((s = ringbuf_ftrace__g.old)) {
		ringbuf_ftrace__g.old = s->next_old;
		free(s);
	}
	ringbuf_ftrace__free_syms();
}

#ifdef __cplusplus
}
#endif

#endif /* RINGBUF_IMPLEMENTATION */
#endif /* RINGBUF_FTRACE_H */
