/* Small POSIX helpers shared by the process runner, the long-lived sandbox and
 * owned processes.
 *
 * Everything here is async-signal-safe except the clock reads and
 * a3s_errstr, so a child may use the descriptor helpers between fork and
 * exec. Includers define _GNU_SOURCE first (glibc's strerror_r differs). */
#ifndef A3S_POSIX_UTIL_H
#define A3S_POSIX_UTIL_H

/* Only the *_linux.c files use these (pipe2 and F_DUPFD_CLOEXEC are not
 * everywhere), so other platforms see an empty header. */
#if defined(__linux__)
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The monotonic clock in nanoseconds. */
static inline uint64_t a3s_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* now + ms, saturating at UINT64_MAX (no deadline). */
static inline uint64_t a3s_after_ms(uint64_t now, uint64_t ms) {
    return ms > (UINT64_MAX - now) / 1000000u ? UINT64_MAX : now + ms * 1000000u;
}

/* Milliseconds from now until at, rounded up, for poll(); 0 once it passed. */
static inline int a3s_ms_until(uint64_t now, uint64_t at) {
    if (at <= now)
        return 0;
    uint64_t ms = (at - now + 999999u) / 1000000u;
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

/* Closes *fd if open and marks it closed. */
static inline void a3s_close_fd(int *fd) {
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Moves fd to a number >= 3 (close-on-exec), so a child's dup2 onto 0-2
 * cannot clobber it when the host runs with stdio closed; errno survives. */
static inline int a3s_fd_above_stdio(int fd) {
    if (fd < 0 || fd >= 3)
        return fd;
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    int e = errno;
    close(fd);
    errno = e;
    return moved;
}

/* pipe2(O_CLOEXEC | flags) with both ends above stdio; -1 with errno set. */
static inline int a3s_pipe_above_stdio(int p[2], int flags) {
    if (pipe2(p, O_CLOEXEC | flags) < 0)
        return -1;
    p[0] = a3s_fd_above_stdio(p[0]);
    p[1] = a3s_fd_above_stdio(p[1]);
    if (p[0] < 0 || p[1] < 0) {
        int e = errno;
        a3s_close_fd(&p[0]);
        a3s_close_fd(&p[1]);
        errno = e;
        return -1;
    }
    return 0;
}

/* Whether work bounded by a deadline and a cancel must stop: 0 while there
 * is time, ETIMEDOUT once the monotonic clock passed deadline (0: none),
 * ECANCELED once cancel_fd (-1: none) is readable. */
static inline int a3s_stop_reason(uint64_t deadline, int cancel_fd) {
    if (deadline && a3s_now_ns() >= deadline)
        return ETIMEDOUT;
    struct pollfd c = {.fd = cancel_fd, .events = POLLIN};
    if (cancel_fd >= 0 && poll(&c, 1, 0) > 0)
        return ECANCELED;
    return 0;
}

/* Whether fd becomes readable (or hangs up) within timeout_ms (-1: no limit). */
static inline bool a3s_readable(int fd, int timeout_ms) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int rc;
    do
        rc = poll(&p, 1, timeout_ms);
    while (rc < 0 && errno == EINTR);
    return rc > 0;
}

/* Thread-safe strerror for both the GNU and the XSI strerror_r. */
static inline const char *a3s_errstr(int e, char *buf, size_t len) {
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
    return strerror_r(e, buf, len);
#else
    if (strerror_r(e, buf, len) != 0)
        snprintf(buf, len, "errno %d", e);
    return buf;
#endif
}

static inline int a3s_set_nonblock(int fd) {
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

#endif /* __linux__ */

#endif
