/* ringbuf_net.h - v0.1.0 - send a trace to `trace-cmd listen` on another machine
 * SPDX-License-Identifier: MIT   (licence text at the end of ringbuf.h)
 *
 * A client of trace-cmd's network protocol (the "v3" message protocol that
 * `trace-cmd record -N host:port` speaks): the pages of a ringbuf.h buffer go
 * to a `trace-cmd listen` running elsewhere, which writes the trace.dat
 * there. Written from the protocol as trace-cmd 3.1 implements it (see
 * >>net_design); it contains no code from trace-cmd. POSIX sockets (Linux,
 * BSDs); IPv4 and IPv6.
 *
 * The server is treated as hostile: every length, count and port it sends is
 * checked before use; an answer that does not fit is an error with a
 * message, never a crash; every wait has a timeout (connect, each answer,
 * each page sent), so a server that stops answering cannot hang the caller.
 *
 * USAGE
 *   In the one C file that defines RINGBUF_IMPLEMENTATION:
 *       #define _POSIX_C_SOURCE 200809L      (or _GNU_SOURCE; before any #include)
 *       #define RINGBUF_IMPLEMENTATION
 *       #include "ringbuf_net.h"            (includes ringbuf_tracedat.h)
 *
 *   struct ringbuf_tracedat_info info;
 *   ringbuf_tracedat_info_of(rb, &reg, &info);         // version 6 only
 *   struct ringbuf_net *n;
 *   char err[256];
 *   if (ringbuf_net_connect("host", "7777", &info, 10000, &n, err, sizeof err) < 0)
 *       fprintf(stderr, "%s\n", err);
 *   struct ringbuf_tracedat *w = ringbuf_net_writer(n); // pages go to the server
 *   ... ringbuf_tracedat_drain(w, rb, RINGBUF_ALL_CPUS, RINGBUF_READ_FULL) ...
 *   ringbuf_net_finish(n, &stats, err, sizeof err);    // or ringbuf_net_abort(n)
 *
 * TABLE OF CONTENTS (grep for the anchors)
 *   >>net_api     the client's functions
 *   >>net_design  the protocol, step by step; what is checked
 *   >>net_impl    the implementation (RINGBUF_IMPLEMENTATION only)
 *
 * CONFIGURATION
 *   none of its own; RINGBUF_API, RINGBUF_NAMESPACE, RINGBUF_STATIC as in ringbuf.h
 *
 * CONTEXTS
 *   Ordinary threads only (it allocates, resolves names and blocks on
 *   sockets). One thread at a time per connection. SIGPIPE is never raised
 *   (send with MSG_NOSIGNAL): a peer that has gone gives an error.
 *
 * LIMITS
 *   trace.dat version 6 only (what `trace-cmd listen` 3.1 assembles from
 *   a v3 client: it appends the flyrecord section to the metadata). Data
 *   connections are TCP (the "tcp" option; trace-cmd's default UDP loses
 *   pages under load). No time synchronisation, no instances, no
 *   compression. The thread names are sent when connecting: names stored
 *   later are not in the remote trace. Name resolution (getaddrinfo) has
 *   the system resolver's own timeouts, not timeout_ms. The protocol has no
 *   acknowledgement of pages (see F1).
 */
#ifndef RINGBUF_NET_H
#define RINGBUF_NET_H

#include "ringbuf_tracedat.h"

#ifdef RINGBUF_NAMESPACE
#define ringbuf_net_abort                RINGBUF__NS(ringbuf_net_abort)
#define ringbuf_net_connect              RINGBUF__NS(ringbuf_net_connect)
#define ringbuf_net_finish               RINGBUF__NS(ringbuf_net_finish)
#define ringbuf_net_writer               RINGBUF__NS(ringbuf_net_writer)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ==== >>net_api ========================================================== */

struct ringbuf_net;

/** Connect to `trace-cmd listen` at host:port, agree on protocol v3, announce
 * info's CPUs and page size, connect one TCP data connection per CPU to the
 * ports the server gives, and send the trace's metadata
 * (ringbuf_tracedat_header(): formats, thread names, clock). timeout_ms
 * (> 0) bounds every wait (each connect, each answer, each page sent).
 * Returns 0 (*out set), RINGBUF_EINVAL (bad argument; info not version 6),
 * RINGBUF_ENOMEM, RINGBUF_ESYS (name not resolved, connection refused,
 * timed out, closed early: errno says which), RINGBUF_EVERSION (the server
 * does not speak protocol v3), RINGBUF_EFORMAT (not a trace-cmd server, or
 * an answer that does not fit the protocol). err (may be NULL) gets a
 * one-line message saying what failed. */
RINGBUF_API int ringbuf_net_connect(const char *host, const char *port, const struct ringbuf_tracedat_info *info,
				    int timeout_ms, struct ringbuf_net **out, char *err, size_t errlen);
/** The writer that sends pages to the server (ringbuf_tracedat_add_page,
 * ringbuf_tracedat_drain, ringbuf_tracedat_stats); owned by n: do not
 * finish or abort it yourself. RINGBUF_ESYS from it: the server went away
 * (or stopped reading for timeout_ms); call ringbuf_net_abort(). */
RINGBUF_API struct ringbuf_tracedat *ringbuf_net_writer(struct ringbuf_net *n);
/** End the trace: close the data connections and wait until the server has
 * taken every page, send MSG_CLOSE and wait until the server closes the
 * connection (it has written its trace.dat then). st (may be NULL) gets the
 * writer's counters. Frees n (also on error). Returns 0, RINGBUF_ESYS
 * (timed out, connection lost) or RINGBUF_EFORMAT; err as for connect. */
RINGBUF_API int ringbuf_net_finish(struct ringbuf_net *n, struct ringbuf_tracedat_stats *st, char *err,
				   size_t errlen);
/** Close everything at once (the server drops the trace) and free n. NULL is a no-op. */
RINGBUF_API void ringbuf_net_abort(struct ringbuf_net *n);

#ifdef __cplusplus
}
#endif
#endif /* RINGBUF_NET_H */

/* ==== >>net_design =======================================================
 *
 * PROTOCOL (trace-cmd 3.1's lib/trace-cmd/trace-msg.c and
 * tracecmd/trace-listen.c, read for the byte layout). Numbers in messages
 * are big-endian 32-bit; a message is
 *     u32 size (all of it, 12 .. 8192), u32 cmd, u32 cmd_size, cmd_size
 *     bytes of the command's fixed part, size - 12 - cmd_size bytes of data
 * with cmd 0 CLOSE, 1 TINIT, 2 RINIT, 3 SEND_DATA, 4 FIN_DATA, 5 NOT_SUPP.
 *
 *   N1 connect (TCP) to host:port: each address getaddrinfo gives, in turn,
 *      non-blocking with a timeout;
 *   N2 the server says "tracecmd" (8 bytes): anything else is not trace-cmd;
 *   N3 send "-1V3\0" (the v1 CPU count -1, then the version); the server
 *      answers "V3\0" (a v1-only server closes or answers otherwise:
 *      RINGBUF_EVERSION);
 *   N4 send the magic "766679\0\0" (8 bytes); the server answers "OK";
 *   N5 send TINIT: cmd_size 12 = {cpus, page_size, opt_num 1}, data "tcp\0";
 *   N6 receive RINIT: cmd_size >= 4 = {cpus} (must equal ours), data: one
 *      decimal port per CPU, each NUL-terminated, 1..65535, inside the
 *      message; CLOSE or NOT_SUPP instead: the server refused;
 *   N7 connect one TCP connection per CPU to host:port[cpu] (the address of
 *      N1); each carries that CPU's pages, raw, page after page. listen's
 *      reader processes listen() on those ports after RINIT is sent: a
 *      refused connect is retried (pauses of 1, 2, 4 .. 64 ms, adding up
 *      to timeout_ms at most);
 *   N8 send the metadata (a version 6 trace.dat up to its flyrecord
 *      section) in SEND_DATA messages of at most 8180 bytes, then FIN_DATA;
 *      listen writes it to its output file as it comes;
 *   ... pages (ringbuf_tracedat_open_fds: checked, copied, sent whole) ...
 *   F1 shut each data connection down for writing and wait for the
 *      server's end of it to close: its reader process has read every page
 *      into its per-CPU file and exited;
 *   F2 send CLOSE; the server stops its readers, appends the flyrecord
 *      section (the per-CPU files) to the metadata and closes the control
 *      connection, which F3 waits for: the trace.dat is complete then.
 *
 * Why F1 waits: listen signals its readers to stop about a second after
 * CLOSE; a reader still draining its socket then would lose the rest. With
 * F1, CLOSE goes only when every reader has seen the end of its data. The
 * protocol has no acknowledgement of pages: a server that closes a data
 * connection early is seen when the kernel reports it (a send failing with
 * EPIPE/ECONNRESET, or F1's read with ECONNRESET: an error), not in every
 * interleaving.
 *
 * TIMEOUTS. Connects poll for writability; reads poll before each read;
 * the control connection's sends poll too; the data connections get
 * SO_SNDTIMEO (the tracedat writer writes them). Each wait is bounded by
 * timeout_ms; nothing loops without reading or writing something, but N7's
 * retries of a refused connect, whose pauses add up to timeout_ms at most.
 */

/* ==== >>net_impl ========================================================= */
#if defined(RINGBUF_IMPLEMENTATION) && !defined(RINGBUF_NET_IMPLEMENTATION_INCLUDED)
#define RINGBUF_NET_IMPLEMENTATION_INCLUDED 1

#if !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE) && !defined(_DEFAULT_SOURCE) && !defined(_XOPEN_SOURCE) && \
	defined(__STRICT_ANSI__)
#error "ringbuf_net.h: define _POSIX_C_SOURCE 200809L (or _GNU_SOURCE) before the first #include"
#endif

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0 /* then the caller must ignore SIGPIPE */
#endif

#define RINGBUF_NET__MSG_MAX 8192u
#define RINGBUF_NET__HDR 12u
enum { RINGBUF_NET__CLOSE = 0, RINGBUF_NET__TINIT = 1, RINGBUF_NET__RINIT = 2, RINGBUF_NET__SEND_DATA = 3,
       RINGBUF_NET__FIN_DATA = 4, RINGBUF_NET__NOT_SUPP = 5 };

struct ringbuf_net {
	int ctl;                     /* the control connection */
	int *data;                   /* per CPU: the data connection */
	unsigned ncpu;
	int timeout_ms;
	struct ringbuf_tracedat *w;  /* streams to data[] */
	char where[160];             /* "host:port" for messages */
};

static void ringbuf_net__msg(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static void ringbuf_net__put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static uint32_t ringbuf_net__get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Wait for fd to be readable (events POLLIN) or writable (POLLOUT).
 * 0, or RINGBUF_ESYS with errno ETIMEDOUT. */
static int ringbuf_net__wait(int fd, short events, int timeout_ms)
{
	for (;;) {
		struct pollfd p;
		int r;
		p.fd = fd;
		p.events = events;
		p.revents = 0;
		r = poll(&p, 1, timeout_ms);
		if (r < 0 && errno == EINTR)
			continue; /* restarts the full timeout: bounded by the signals sent */
		if (r < 0)
			return RINGBUF_ESYS;
		if (r == 0) {
			errno = ETIMEDOUT;
			return RINGBUF_ESYS;
		}
		return 0;
	}
}

/* Send all of buf on a non-blocking socket. */
static int ringbuf_net__send(int fd, const void *buf, size_t n, int timeout_ms)
{
	const unsigned char *p = (const unsigned char *)buf;
	while (n) {
		ssize_t k;
		if (ringbuf_net__wait(fd, POLLOUT, timeout_ms) < 0)
			return RINGBUF_ESYS;
		k = send(fd, p, n, MSG_NOSIGNAL);
		if (k < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (k <= 0)
			return RINGBUF_ESYS;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* Read exactly n bytes. RINGBUF_ESYS: errno ECONNRESET for an early close
 * (*got says how many came), ETIMEDOUT, or the read's. */
static int ringbuf_net__recv(int fd, void *buf, size_t n, int timeout_ms, size_t *got)
{
	unsigned char *p = (unsigned char *)buf;
	size_t have = 0;
	int r = 0;
	while (have < n) {
		ssize_t k;
		if ((r = ringbuf_net__wait(fd, POLLIN, timeout_ms)) < 0)
			break;
		k = recv(fd, p + have, n - have, 0);
		if (k < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (k < 0) {
			r = RINGBUF_ESYS;
			break;
		}
		if (k == 0) {
			errno = ECONNRESET;
			r = RINGBUF_ESYS;
			break;
		}
		have += (size_t)k;
	}
	if (got)
		*got = have;
	return r;
}

/* Wait until the peer closes fd (reading and dropping at most limit bytes
 * meanwhile). 0, or RINGBUF_ESYS (ETIMEDOUT; EMSGSIZE: it kept sending;
 * ECONNRESET: it closed without reading everything we sent). */
static int ringbuf_net__wait_eof(int fd, int timeout_ms, size_t limit)
{
	unsigned char buf[256];
	size_t total = 0;
	for (;;) {
		ssize_t k;
		if (ringbuf_net__wait(fd, POLLIN, timeout_ms) < 0)
			return RINGBUF_ESYS;
		k = recv(fd, buf, sizeof buf, 0);
		if (k < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (k < 0)
			return RINGBUF_ESYS;
		if (k == 0)
			return 0;
		total += (size_t)k;
		if (total > limit) {
			errno = EMSGSIZE;
			return RINGBUF_ESYS;
		}
	}
}

static int ringbuf_net__nonblock(int fd, int on)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -1;
	return fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

/* N1/N7: a connected, non-blocking TCP socket to addr, or -1 (errno). */
static int ringbuf_net__connect_addr(const struct addrinfo *ai, int timeout_ms)
{
	int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol), e = 0;
	socklen_t len = sizeof e;
	if (fd < 0)
		return -1;
	(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
	if (ringbuf_net__nonblock(fd, 1) < 0)
		goto fail;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
		return fd;
	if (errno != EINPROGRESS && errno != EINTR)
		goto fail;
	if (ringbuf_net__wait(fd, POLLOUT, timeout_ms) < 0)
		goto fail;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) < 0)
		goto fail;
	if (e) {
		errno = e;
		goto fail;
	}
	return fd;
fail:
	e = errno;
	close(fd);
	errno = e;
	return -1;
}

#ifdef RINGBUF_TESTING
/* N7's refused connects that were retried (tests wait on it: a fake server
 * starts listening once the client has been refused). Relaxed: a count,
 * nothing is published with it. */
static _Atomic unsigned ringbuf_net__refused;
#endif

/* N7: a data connection. trace-cmd listen sends RINIT with ports it has only
 * bound: each CPU's reader process, forked after the bind, calls listen() on
 * its own, and a client that connects first is refused (ECONNREFUSED; seen
 * under load, in the live recording test). A refused connect is retried, 1 ms
 * after the first, the pause doubling up to 64 ms, while the pauses add up to
 * less than timeout_ms; any other error, or a refusal after that, is the
 * error. */
static int ringbuf_net__connect_data(const struct addrinfo *ai, int timeout_ms)
{
	int waited = 0, pause = 1;
	for (;;) {
		int fd = ringbuf_net__connect_addr(ai, timeout_ms);
		if (fd >= 0 || errno != ECONNREFUSED || waited >= timeout_ms)
			return fd;
#ifdef RINGBUF_TESTING
		atomic_fetch_add_explicit(&ringbuf_net__refused, 1, memory_order_relaxed);
#endif
		(void)poll(NULL, 0, pause);
		waited += pause;
		if (pause < 64)
			pause *= 2;
	}
}

/* One message: header + fixed part + data. */
static int ringbuf_net__send_msg(struct ringbuf_net *n, uint32_t cmd, const void *fixed, uint32_t fixed_len,
				 const void *data, uint32_t data_len)
{
	unsigned char hdr[RINGBUF_NET__HDR];
	ringbuf_net__put32(hdr, RINGBUF_NET__HDR + fixed_len + data_len);
	ringbuf_net__put32(hdr + 4, cmd);
	ringbuf_net__put32(hdr + 8, fixed_len);
	if (ringbuf_net__send(n->ctl, hdr, sizeof hdr, n->timeout_ms) < 0 ||
	    (fixed_len && ringbuf_net__send(n->ctl, fixed, fixed_len, n->timeout_ms) < 0) ||
	    (data_len && ringbuf_net__send(n->ctl, data, data_len, n->timeout_ms) < 0))
		return RINGBUF_ESYS;
	return 0;
}

static const char *ringbuf_net__why(int e)
{
	return e == ECONNRESET ? "the server closed the connection (early)"
	       : e == ETIMEDOUT ? "no answer within the timeout (connection timed out)"
				: strerror(e);
}

static void ringbuf_net__free(struct ringbuf_net *n)
{
	unsigned i;
	if (n->w)
		ringbuf_tracedat_abort(n->w);
	if (n->data)
		for (i = 0; i < n->ncpu; i++)
			if (n->data[i] >= 0)
				close(n->data[i]);
	if (n->ctl >= 0)
		close(n->ctl);
	free(n->data);
	free(n);
}

RINGBUF_API void ringbuf_net_abort(struct ringbuf_net *n)
{
	if (n)
		ringbuf_net__free(n);
}

RINGBUF_API struct ringbuf_tracedat *ringbuf_net_writer(struct ringbuf_net *n)
{
	return n ? n->w : NULL;
}

/* N6: parse RINIT's data (len bytes at d) into ports[ncpu]. 0 or -1. */
static int ringbuf_net__ports(const unsigned char *d, size_t len, unsigned ncpu, unsigned *ports)
{
	size_t at = 0;
	unsigned i;
	if (len == 0 || d[len - 1] != 0)
		return -1;
	for (i = 0; i < ncpu; i++) {
		unsigned long v = 0;
		size_t start = at;
		while (at < len && d[at] >= '0' && d[at] <= '9') {
			v = v * 10 + (unsigned long)(d[at] - '0');
			if (v > 65535)
				return -1;
			at++;
		}
		if (at == start || at >= len || d[at] != 0 || v == 0)
			return -1;
		at++; /* the NUL */
		ports[i] = (unsigned)v;
	}
	return 0;
}

RINGBUF_API int ringbuf_net_connect(const char *host, const char *port, const struct ringbuf_tracedat_info *info,
				    int timeout_ms, struct ringbuf_net **out, char *err, size_t errlen)
{
	static const unsigned char magic[8] = {'7', '6', '6', '6', '7', '9', 0, 0};
	struct addrinfo hints, *res = NULL, *ai;
	struct ringbuf_net *n = NULL;
	unsigned char buf[RINGBUF_NET__MSG_MAX], fixed[12];
	unsigned *ports = NULL;
	void *meta = NULL;
	size_t meta_len = 0, got = 0, off;
	uint32_t size, cmd, cmd_size;
	unsigned i;
	int r, e;

	ringbuf_net__msg(err, errlen, "ok");
	if (out)
		*out = NULL;
	if (!host || !*host || !port || !*port || !info || !out || timeout_ms <= 0) {
		ringbuf_net__msg(err, errlen, "bad argument");
		return RINGBUF_EINVAL;
	}
	if (info->version != 0 && info->version != 6) {
		ringbuf_net__msg(err, errlen, "trace-cmd listen takes trace.dat version 6 only");
		return RINGBUF_EINVAL;
	}
	r = ringbuf_tracedat_header(info, &meta, &meta_len);
	if (r < 0) {
		ringbuf_net__msg(err, errlen, "cannot make the trace's metadata: %s", ringbuf_strerror(r));
		return r;
	}
	n = (struct ringbuf_net *)calloc(1, sizeof *n);
	ports = (unsigned *)calloc(info->ncpu, sizeof *ports);
	if (n)
		n->data = (int *)malloc(info->ncpu * sizeof(int));
	if (!n || !ports || !n->data) {
		ringbuf_net__msg(err, errlen, "out of memory");
		r = RINGBUF_ENOMEM;
		if (n)
			n->ctl = -1;
		goto out;
	}
	n->ctl = -1;
	n->ncpu = info->ncpu;
	n->timeout_ms = timeout_ms;
	for (i = 0; i < n->ncpu; i++)
		n->data[i] = -1;
	snprintf(n->where, sizeof n->where, "%s:%s", host, port);

	/* N1 */
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	r = getaddrinfo(host, port, &hints, &res);
	if (r != 0) {
		ringbuf_net__msg(err, errlen, "%s: cannot resolve: %s", n->where, gai_strerror(r));
		errno = EHOSTUNREACH;
		r = RINGBUF_ESYS;
		goto out;
	}
	e = 0;
	for (ai = res; ai; ai = ai->ai_next) {
		n->ctl = ringbuf_net__connect_addr(ai, timeout_ms);
		if (n->ctl >= 0)
			break;
		e = errno;
	}
	if (n->ctl < 0) {
		ringbuf_net__msg(err, errlen, "%s: cannot connect: %s%s", n->where, strerror(e),
				 e == ECONNREFUSED ? " (is trace-cmd listen running there?)" : "");
		errno = e;
		r = RINGBUF_ESYS;
		goto out;
	}
	/* N2 */
	if (ringbuf_net__recv(n->ctl, buf, 8, timeout_ms, &got) < 0) {
		e = errno;
		ringbuf_net__msg(err, errlen, "%s: no greeting from the server: %s", n->where, ringbuf_net__why(e));
		errno = e;
		r = RINGBUF_ESYS;
		goto out;
	}
	if (memcmp(buf, "tracecmd", 8) != 0) {
		ringbuf_net__msg(err, errlen, "%s: not a trace-cmd listener (it did not greet with \"tracecmd\")",
				 n->where);
		r = RINGBUF_EFORMAT;
		goto out;
	}
	/* N3 */
	if (ringbuf_net__send(n->ctl, "-1V3", 5, timeout_ms) < 0)
		goto io_error;
	r = ringbuf_net__recv(n->ctl, buf, 3, timeout_ms, &got);
	if (r < 0 && errno == ECONNRESET) {
		ringbuf_net__msg(err, errlen, "%s: the server closed the connection when asked for protocol V3 "
				 "(a trace-cmd too old to speak it?)", n->where);
		r = RINGBUF_EVERSION;
		goto out;
	}
	if (r < 0)
		goto io_error;
	if (memcmp(buf, "V3", 3) != 0) {
		char v[8];
		for (i = 0; i < 3; i++)
			v[i] = buf[i] >= 0x20 && buf[i] < 0x7f ? (char)buf[i] : '?';
		v[3] = 0;
		ringbuf_net__msg(err, errlen, "%s: protocol version mismatch: the server answered \"%s\", this "
				 "client speaks V3 only", n->where, v);
		r = RINGBUF_EVERSION;
		goto out;
	}
	/* N4 */
	if (ringbuf_net__send(n->ctl, magic, sizeof magic, timeout_ms) < 0 ||
	    ringbuf_net__recv(n->ctl, buf, 2, timeout_ms, &got) < 0)
		goto io_error;
	if (memcmp(buf, "OK", 2) != 0) {
		ringbuf_net__msg(err, errlen, "%s: the server did not accept the V3 handshake", n->where);
		r = RINGBUF_EVERSION;
		goto out;
	}
	/* N5 */
	ringbuf_net__put32(fixed, n->ncpu);
	ringbuf_net__put32(fixed + 4, (uint32_t)info->page_size);
	ringbuf_net__put32(fixed + 8, 1);
	if (ringbuf_net__send_msg(n, RINGBUF_NET__TINIT, fixed, 12, "tcp", 4) < 0)
		goto io_error;
	/* N6 */
	if (ringbuf_net__recv(n->ctl, buf, RINGBUF_NET__HDR, timeout_ms, &got) < 0)
		goto io_error;
	size = ringbuf_net__get32(buf);
	cmd = ringbuf_net__get32(buf + 4);
	cmd_size = ringbuf_net__get32(buf + 8);
	if (size < RINGBUF_NET__HDR || size > RINGBUF_NET__MSG_MAX || cmd_size > size - RINGBUF_NET__HDR) {
		ringbuf_net__msg(err, errlen, "%s: malformed answer to TINIT (size %u, command size %u)", n->where,
				 (unsigned)size, (unsigned)cmd_size);
		r = RINGBUF_EFORMAT;
		goto out;
	}
	if (cmd != RINGBUF_NET__RINIT) {
		ringbuf_net__msg(err, errlen, "%s: the server refused the trace (%s instead of RINIT)", n->where,
				 cmd == RINGBUF_NET__CLOSE ? "CLOSE" : cmd == RINGBUF_NET__NOT_SUPP ? "NOT_SUPP" : "a message");
		r = RINGBUF_EFORMAT;
		goto out;
	}
	if (cmd_size < 4) {
		ringbuf_net__msg(err, errlen, "%s: RINIT without a CPU count", n->where);
		r = RINGBUF_EFORMAT;
		goto out;
	}
	if (ringbuf_net__recv(n->ctl, buf, size - RINGBUF_NET__HDR, timeout_ms, &got) < 0)
		goto io_error;
	if (ringbuf_net__get32(buf) != n->ncpu) {
		ringbuf_net__msg(err, errlen, "%s: the server offers %u CPUs, the trace has %u", n->where,
				 (unsigned)ringbuf_net__get32(buf), n->ncpu);
		r = RINGBUF_EFORMAT;
		goto out;
	}
	if (ringbuf_net__ports(buf + cmd_size, size - RINGBUF_NET__HDR - cmd_size, n->ncpu, ports) < 0) {
		ringbuf_net__msg(err, errlen, "%s: RINIT holds no valid port list for %u CPUs", n->where, n->ncpu);
		r = RINGBUF_EFORMAT;
		goto out;
	}
	/* N7: the address the control connection reached */
	for (i = 0; i < n->ncpu; i++) {
		struct sockaddr_storage sa;
		struct addrinfo one = *ai;
		struct timeval tv;
		if (ai->ai_addrlen > sizeof sa) {
			errno = EAFNOSUPPORT;
			goto data_error;
		}
		memcpy(&sa, ai->ai_addr, ai->ai_addrlen);
		if (sa.ss_family == AF_INET)
			((struct sockaddr_in *)(void *)&sa)->sin_port = htons((uint16_t)ports[i]);
		else if (sa.ss_family == AF_INET6)
			((struct sockaddr_in6 *)(void *)&sa)->sin6_port = htons((uint16_t)ports[i]);
		one.ai_addr = (struct sockaddr *)(void *)&sa;
		one.ai_next = NULL;
		n->data[i] = ringbuf_net__connect_data(&one, timeout_ms);
		if (n->data[i] < 0)
			goto data_error;
		/* the tracedat writer writes whole pages: blocking, bounded by SO_SNDTIMEO */
		tv.tv_sec = timeout_ms / 1000;
		tv.tv_usec = (timeout_ms % 1000) * 1000;
		if (ringbuf_net__nonblock(n->data[i], 0) < 0 ||
		    setsockopt(n->data[i], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) < 0)
			goto data_error;
	}
	/* N8 */
	for (off = 0; off < meta_len;) {
		size_t k = meta_len - off;
		if (k > RINGBUF_NET__MSG_MAX - RINGBUF_NET__HDR)
			k = RINGBUF_NET__MSG_MAX - RINGBUF_NET__HDR;
		if (ringbuf_net__send_msg(n, RINGBUF_NET__SEND_DATA, NULL, 0, (const char *)meta + off, (uint32_t)k) < 0)
			goto io_error;
		off += k;
	}
	if (ringbuf_net__send_msg(n, RINGBUF_NET__FIN_DATA, NULL, 0, NULL, 0) < 0)
		goto io_error;
	r = ringbuf_tracedat_open_fds(info, n->data, &n->w);
	if (r < 0) {
		ringbuf_net__msg(err, errlen, "cannot start the writer: %s", ringbuf_strerror(r));
		goto out;
	}
	ringbuf_net__msg(err, errlen, "connected to %s", n->where);
	*out = n;
	n = NULL;
	r = 0;
	goto out;
data_error:
	e = errno;
	ringbuf_net__msg(err, errlen, "%s: cannot connect the data connection of CPU %u (port %u): %s", n->where, i,
			 ports[i], strerror(e));
	errno = e;
	r = RINGBUF_ESYS;
	goto out;
io_error:
	e = errno;
	ringbuf_net__msg(err, errlen, "%s: %s", n->where, ringbuf_net__why(e));
	errno = e;
	r = RINGBUF_ESYS;
out:
	e = errno;
	if (res)
		freeaddrinfo(res);
	if (n)
		ringbuf_net__free(n);
	free(ports);
	free(meta);
	errno = e;
	return r;
}

RINGBUF_API int ringbuf_net_finish(struct ringbuf_net *n, struct ringbuf_tracedat_stats *st, char *err,
				   size_t errlen)
{
	unsigned i;
	int r, e;
	ringbuf_net__msg(err, errlen, "ok");
	if (!n) {
		ringbuf_net__msg(err, errlen, "bad argument");
		return RINGBUF_EINVAL;
	}
	r = ringbuf_tracedat_finish(n->w, st); /* no file: the counters, the writer freed */
	n->w = NULL;
	if (r < 0) {
		e = errno;
		ringbuf_net__msg(err, errlen, "%s: sending pages failed: %s", n->where, ringbuf_net__why(e));
		ringbuf_net__free(n);
		errno = e;
		return r;
	}
	/* F1 */
	for (i = 0; i < n->ncpu; i++) {
		if (shutdown(n->data[i], SHUT_WR) < 0 || ringbuf_net__wait_eof(n->data[i], n->timeout_ms, 1 << 20) < 0) {
			e = errno;
			ringbuf_net__msg(err, errlen, "%s: the server did not confirm the pages of CPU %u: %s", n->where,
					 i, ringbuf_net__why(e));
			ringbuf_net__free(n);
			errno = e;
			return RINGBUF_ESYS;
		}
	}
	/* F2, F3 */
	if (ringbuf_net__send_msg(n, RINGBUF_NET__CLOSE, NULL, 0, NULL, 0) < 0 ||
	    ringbuf_net__wait_eof(n->ctl, n->timeout_ms, 1 << 20) < 0) {
		e = errno;
		ringbuf_net__msg(err, errlen, "%s: closing: %s", n->where, ringbuf_net__why(e));
		ringbuf_net__free(n);
		errno = e;
		return RINGBUF_ESYS;
	}
	ringbuf_net__free(n);
	return 0;
}

#endif /* RINGBUF_IMPLEMENTATION */
