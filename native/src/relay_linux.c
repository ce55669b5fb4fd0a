/* relay_linux.c - bytes both ways between two connected stream sockets (a3s_relay).
 *
 * The network grant's mediator (docs/security.md, "Network grants") hands
 * each admitted connection here once its proxy handshake is done: one side
 * is the command's connection inside the sandbox, the other the connection
 * to the granted origin. Each direction runs through a pipe of its own with
 * splice(2), so the payload moves between the two sockets as page
 * references, never through a user-space copy: the relay costs about what
 * the second loopback hop costs, not a second copy of every byte.
 *
 * Backpressure: a direction reads from its source only while its pipe has
 * room, and the pipe is bounded (pipe_bytes), so a slow receiver stops the
 * reading, the kernel's receive window closes and the sender waits; memory
 * stays bounded whatever the volume. A source that reaches end of file is
 * passed on as a half-close (shutdown(SHUT_WR)) once its pipe is drained,
 * so request-then-response protocols and TLS close_notify work. An error on
 * either side (a reset, a write to a closed peer) ends both directions, and
 * both sockets are shut down so each peer sees the end at once.
 *
 * Both descriptors must be stream sockets (TCP or AF_UNIX stream), which
 * every kernel this core supports splices.
 */
#define _GNU_SOURCE
#include "a3s/a3s.h"

#if defined(__linux__)

#include "internal.h"
#include "posix_util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define DEFAULT_PIPE_BYTES (1u << 20)
#define MIN_PIPE_BYTES 4096u

struct direction {
    int src, dst;
    int pipe[2];       /* src -> pipe[1], pipe[0] -> dst */
    size_t in_pipe;    /* bytes spliced in and not yet out */
    size_t cap;        /* the pipe's capacity */
    bool eof;          /* src reached end of file */
    bool closed;       /* dst was shut down for writing: this direction is over */
    uint64_t moved;
};

enum step { STEP_IDLE, STEP_MOVED, STEP_DONE, STEP_FAILED };

static bool pending(const struct direction *d) { return d->in_pipe > 0; }

static bool room(const struct direction *d) { return !d->eof && d->in_pipe < d->cap; }

static bool would_block(int e) { return e == EAGAIN || e == EWOULDBLOCK || e == EINTR; }

/* Moves what can move without blocking, in both halves of one direction. */
static enum step pump(struct direction *d) {
    enum step st = STEP_IDLE;
    if (room(d)) {
        ssize_t n = splice(d->src, NULL, d->pipe[1], NULL, d->cap - d->in_pipe,
                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
            d->in_pipe += (size_t)n;
            st = STEP_MOVED;
        } else if (n == 0) {
            d->eof = true;
            st = STEP_MOVED;
        } else if (!would_block(errno)) {
            return STEP_FAILED;
        }
    }
    while (pending(d)) {
        ssize_t n = splice(d->pipe[0], NULL, d->dst, NULL, d->in_pipe,
                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n <= 0) {
            if (n < 0 && would_block(errno))
                break;
            return STEP_FAILED;
        }
        d->moved += (uint64_t)n;
        d->in_pipe -= (size_t)n;
        st = STEP_MOVED;
    }
    if (d->eof && !pending(d) && !d->closed) {
        shutdown(d->dst, SHUT_WR); /* the half-close, passed on */
        d->closed = true;
        st = STEP_MOVED;
    }
    return d->closed ? STEP_DONE : st;
}

static void release(struct direction *d) {
    a3s_close_fd(&d->pipe[0]);
    a3s_close_fd(&d->pipe[1]);
}

static bool is_stream_socket(int fd) {
    int type = 0;
    socklen_t len = sizeof type;
    return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
}

static int setup(struct direction *d, int src, int dst, size_t want, a3s_error *err) {
    memset(d, 0, sizeof *d);
    d->src = src;
    d->dst = dst;
    d->pipe[0] = d->pipe[1] = -1;
    char eb[128];
    if (pipe2(d->pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
        int e = errno;
        return a3s_fail(err, A3S_E_SYSTEM, e, 0, "a3s_relay: pipe2: %s",
                        a3s_errstr(e, eb, sizeof eb));
    }
    /* the kernel may give less than asked (fs.pipe-max-size): use what it gave */
    fcntl(d->pipe[1], F_SETPIPE_SZ, (int)want);
    int got = fcntl(d->pipe[1], F_GETPIPE_SZ);
    d->cap = got > 0 ? (size_t)got : 65536u;
    return A3S_OK;
}

A3S_API int a3s_relay(int a, int b, const a3s_relay_options *opts, a3s_relay_stats *out,
                      a3s_error *err) {
    if (a < 0 || b < 0 || a == b || (opts && opts->struct_size < sizeof *opts) ||
        (out && out->struct_size < sizeof *out))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_relay: invalid argument");
    uint64_t flags = opts ? opts->flags : 0;
    if (flags & ~(uint64_t)A3S_RELAY_CANCEL_FD)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_relay: unknown flag bits");
    int cancel_fd = (flags & A3S_RELAY_CANCEL_FD) ? opts->cancel_fd : -1;
    if ((flags & A3S_RELAY_CANCEL_FD) && fcntl(cancel_fd, F_GETFD) < 0)
        return a3s_fail(err, A3S_E_INVALID, 0, cancel_fd, "a3s_relay: cancel_fd is not open");
    if (!is_stream_socket(a) || !is_stream_socket(b))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_relay: both fds must be stream sockets");
    size_t want = opts && opts->pipe_bytes ? opts->pipe_bytes : DEFAULT_PIPE_BYTES;
    if (want < MIN_PIPE_BYTES)
        want = MIN_PIPE_BYTES;
    char eb[128]; /* a3s_errstr: relays run in many threads at once */
    if (a3s_set_nonblock(a) < 0 || a3s_set_nonblock(b) < 0) {
        int e = errno;
        return a3s_fail(err, A3S_E_INVALID, e, 0, "a3s_relay: the descriptors: %s",
                        a3s_errstr(e, eb, sizeof eb));
    }
    struct direction d[2];
    int rc = setup(&d[0], a, b, want, err);
    if (rc == A3S_OK && (rc = setup(&d[1], b, a, want, err)) != A3S_OK)
        release(&d[0]);
    if (rc != A3S_OK)
        return rc;

    uint64_t result = 0;
    for (;;) {
        bool failed = false, moved = false;
        for (int i = 0; i < 2; i++) {
            if (d[i].closed)
                continue;
            enum step st = pump(&d[i]);
            failed |= st == STEP_FAILED;
            moved |= st == STEP_MOVED;
        }
        if (failed) {
            result |= A3S_RELAY_RESET;
            break;
        }
        if (d[0].closed && d[1].closed)
            break;
        if (moved)
            continue; /* more may move without waiting */
        /* wait for what each direction needs: its source readable while its
         * pipe has room, its destination writable while it holds bytes */
        short ev_a = 0, ev_b = 0;
        for (int i = 0; i < 2; i++) {
            if (d[i].closed)
                continue;
            short *src_ev = d[i].src == a ? &ev_a : &ev_b;
            short *dst_ev = d[i].dst == a ? &ev_a : &ev_b;
            if (room(&d[i]))
                *src_ev |= POLLIN;
            if (pending(&d[i]))
                *dst_ev |= POLLOUT;
        }
        /* an fd with nothing asked is left out: its hang-up alone would wake
         * poll at once, again and again, while the other side is not ready */
        struct pollfd p[3] = {
            {.fd = ev_a ? a : -1, .events = ev_a},
            {.fd = ev_b ? b : -1, .events = ev_b},
            {.fd = cancel_fd, .events = POLLIN},
        };
        int n = poll(p, 3, -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            for (int i = 0; i < 2; i++)
                release(&d[i]);
            return a3s_fail(err, A3S_E_SYSTEM, e, 0, "a3s_relay: poll: %s",
                            a3s_errstr(e, eb, sizeof eb));
        }
        if (p[2].revents) {
            result |= A3S_RELAY_CANCELLED;
            break;
        }
        /* an error or hang-up on an fd polled for something: the next pump meets it */
    }
    if (result & (A3S_RELAY_RESET | A3S_RELAY_CANCELLED)) {
        shutdown(a, SHUT_RDWR); /* each peer learns at once that the relay is over */
        shutdown(b, SHUT_RDWR);
    }
    if (out) {
        out->a_to_b = d[0].moved;
        out->b_to_a = d[1].moved;
        out->flags = result;
    }
    for (int i = 0; i < 2; i++)
        release(&d[i]);
    return a3s_ok(err);
}

#else
typedef int a3s_relay_linux_unused; /* ISO C forbids an empty unit */
#endif
