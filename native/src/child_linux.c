/* child_linux.c - owned processes: a long-lived program behind pipes, taken down whole.
 *
 * The caller's direct child is a supervisor that already knows how to own a
 * process tree: a3s-init in host mode (a child subreaper, so a daemon that
 * calls setsid is reparented to it and still killed), or, for
 * a3s_sandbox_spawn, bubblewrap with a3s-init as PID 1 of the sandbox. The
 * program is never the caller's child, so the caller reaps one pid only,
 * by pid (waitid P_PID, followed by a pidfd where the kernel has one).
 *
 * A stop is three escalating steps, each waited on through the pidfd:
 *   1. a SIGNAL request (session_msg.h) for SIGTERM on the lifeline: the
 *      init sends it to every process it owns. A request, not a signal to
 *      the init, because a sandbox's init, PID 1 of its namespace, takes no
 *      signal from outside (a3s_init.c); should the request not be written
 *      (the init gone or not reading), SIGTERM to the init instead;
 *   2. after the grace, the lifeline closes: the init kills everything at
 *      once and exits (its own grace timer would too);
 *   3. should the init itself be stuck 2 s later, SIGKILL to the direct
 *      child (bubblewrap's death takes the sandbox's namespace with it).
 * Signals reach only what the code proves it owns: the direct child through
 * its pidfd (or by pid before it is reaped, under the handle's lock), and
 * bubblewrap's init only as a verified child of a still-running bubblewrap.
 */
#define _GNU_SOURCE
#include "a3s/a3s.h"

#if defined(__linux__)

#include "cgroup_linux.h"
#include "child_internal.h"
#include "child_owned.h"
#include "env.h"
#include "init_image.h"
#include "internal.h"
#include "posix_util.h"
#include "process_internal.h"
#include "session_msg.h"
#include "strvec.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define START_TIMEOUT_MS 30000u /* from fork until the init says the program runs */
#define WAIT_POLL_MS 10         /* waitid polling period without a pidfd */
#define BACKSTOP_MS 2000u       /* after the lifeline closed, before SIGKILL to the init */
#define EXIT_RUNNING (-1)

struct a3s_child {
    pid_t owner; /* the process that spawned it: a forked copy must not signal or reap */
    pid_t pid;   /* the direct child: a3s-init, or bubblewrap */
    int pidfd;   /* -1 without pidfd_open: waitid is polled */
    int lifeline;
    bool nested;
    bool sandboxed;
    bool pid_namespace; /* PID 1 of a pid namespace of its own (owned, or sandboxed) */
    bool cgroup;        /* owned by a cgroup of its own, under a warden */
    uint64_t grace_ms;
    pthread_mutex_t lock; /* guards the fields below and every signal sent by pid */
    bool reaped, killed, released;
    int32_t exit_code;
    a3s_child_release_fn release;
    void *release_ctx;
};

/* ---- the fds of one launch ---------------------------------------------------- */

void a3s_child_fds_close(struct a3s_child_fds *f) {
    for (int i = 0; i < 2; i++) {
        a3s_close_fd(&f->in[i]);
        a3s_close_fd(&f->out[i]);
        a3s_close_fd(&f->err[i]);
        a3s_close_fd(&f->status[i]);
        a3s_close_fd(&f->lifeline[i]);
    }
    a3s_close_fd(&f->host_pidfd);
}

int a3s_child_fds_open(struct a3s_child_fds *f, a3s_error *err) {
    *f = (struct a3s_child_fds){{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}, -1};
    char eb[128];
    if (a3s_pipe_above_stdio(f->in, 0) < 0 || a3s_pipe_above_stdio(f->out, 0) < 0 ||
        a3s_pipe_above_stdio(f->err, 0) < 0 || a3s_pipe_above_stdio(f->status, 0) < 0 ||
        a3s_pipe_above_stdio(f->lifeline, 0) < 0) {
        int e = errno;
        a3s_child_fds_close(f);
        return a3s_fail(err, A3S_E_SYSTEM, e, 0, "pipe: %s", a3s_errstr(e, eb, sizeof eb));
    }
#ifdef SYS_pidfd_open
    f->host_pidfd = a3s_fd_above_stdio((int)syscall(SYS_pidfd_open, getpid(), 0));
    if (f->host_pidfd >= 0)
        fcntl(f->host_pidfd, F_SETFD, FD_CLOEXEC);
#endif
    return A3S_OK;
}

/* ---- signals to what we own --------------------------------------------------- */

static pid_t parent_of(pid_t pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    const char *end = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
    int ppid = -1;
    char state;
    if (!end || sscanf(end + 1, " %c %d", &state, &ppid) != 2)
        return -1;
    return (pid_t)ppid;
}

#if defined(SYS_pidfd_open)
/* parent's children as listed in /proc (NULL if parent is gone or unreadable) */
static FILE *children_of(pid_t parent, int parent_pidfd) {
    if (parent_pidfd < 0 || a3s_readable(parent_pidfd, 0))
        return NULL; /* gone: its former children's pids prove nothing */
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)parent, (int)parent);
    return fopen(path, "re");
}

/* A pidfd on child, or -1. The pidfd pins the process; it is the one we mean
 * if, after it was taken, it is still parent's child and parent has not
 * exited. */
static int child_pidfd(pid_t parent, int parent_pidfd, pid_t child) {
    int fd = a3s_fd_above_stdio((int)syscall(SYS_pidfd_open, child, 0));
    if (fd >= 0 && (parent_of(child) != parent || a3s_readable(parent_pidfd, 0))) {
        close(fd);
        fd = -1;
    }
    return fd;
}
#endif

int a3s_signal_children(pid_t parent, int parent_pidfd, int sig) {
    int sent = 0;
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
    FILE *f = children_of(parent, parent_pidfd);
    int child;
    while (f && fscanf(f, "%d", &child) == 1) {
        int cfd = child_pidfd(parent, parent_pidfd, child);
        if (cfd >= 0 && syscall(SYS_pidfd_send_signal, cfd, sig, NULL, 0) == 0)
            sent++;
        if (cfd >= 0)
            close(cfd);
    }
    if (f)
        fclose(f);
#else
    (void)parent;
    (void)parent_pidfd;
    (void)sig;
#endif
    return sent;
}

int a3s_only_child_pidfd(pid_t parent, int parent_pidfd, pid_t *child) {
#if defined(SYS_pidfd_open)
    FILE *f = children_of(parent, parent_pidfd);
    int pid, more;
    bool one = f && fscanf(f, "%d", &pid) == 1 && fscanf(f, "%d", &more) != 1;
    if (f)
        fclose(f);
    int fd = one ? child_pidfd(parent, parent_pidfd, (pid_t)pid) : -1;
    if (fd >= 0)
        *child = (pid_t)pid;
    return fd;
#else
    (void)parent;
    (void)parent_pidfd;
    (void)child;
#endif
    return -1;
}

/* Signals the direct child; under c->lock, so it cannot have been reaped. */
static void signal_direct(struct a3s_child *c, int sig) {
    if (c->reaped)
        return;
#ifdef SYS_pidfd_send_signal
    if (c->pidfd >= 0 && syscall(SYS_pidfd_send_signal, c->pidfd, sig, NULL, 0) == 0)
        return;
#endif
    kill(c->pid, sig);
}

/* ---- waiting -------------------------------------------------------------------- */

static int32_t status_code(const siginfo_t *si) {
    return si->si_code == CLD_EXITED ? si->si_status : 128 + si->si_status;
}

/* Reaps the direct child if it has exited (under c->lock). 0, or -1 with errno. */
static int try_reap(struct a3s_child *c) {
    if (c->reaped)
        return 0;
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int rc;
    do
        rc = waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG);
    while (rc < 0 && errno == EINTR);
    if (rc < 0)
        return -1;
    if (si.si_pid == 0)
        return 0;
    c->reaped = true;
    c->exit_code = status_code(&si);
    return 0;
}

static void fill(const struct a3s_child *c, a3s_child_status *out) {
    out->flags = (c->reaped ? A3S_CHILD_EXITED : 0) | (c->killed ? A3S_CHILD_KILLED : 0) |
                 (c->sandboxed ? A3S_CHILD_SANDBOXED : 0) |
                 (c->sandboxed || c->pid_namespace ? A3S_CHILD_PID_NAMESPACE : 0) |
                 (c->cgroup ? A3S_CHILD_CGROUP : 0);
    out->exit_code = c->reaped ? c->exit_code : EXIT_RUNNING;
    out->pid = (int32_t)c->pid;
    out->pidfd = c->pidfd;
    out->reserved = 0;
}

/* Waits up to timeout_ms for the direct child's end (UINT64_MAX: no limit).
 * 1 when reaped, 0 when still running, -1 with errno. */
static int wait_for(struct a3s_child *c, uint64_t timeout_ms) {
    uint64_t deadline = a3s_after_ms(a3s_now_ns(), timeout_ms);
    for (;;) {
        pthread_mutex_lock(&c->lock);
        int rc = try_reap(c);
        int e = errno;
        bool done = c->reaped;
        pthread_mutex_unlock(&c->lock);
        if (rc < 0) {
            errno = e;
            return -1;
        }
        if (done)
            return 1;
        uint64_t now = a3s_now_ns();
        if (now >= deadline)
            return 0;
        int ms = a3s_ms_until(now, deadline);
        if (c->pidfd >= 0)
            a3s_readable(c->pidfd, ms);
        else
            poll(NULL, 0, ms < WAIT_POLL_MS ? ms : WAIT_POLL_MS);
    }
}

static void release_once(struct a3s_child *c, bool owner) {
    pthread_mutex_lock(&c->lock);
    bool run = !c->released;
    c->released = true;
    pthread_mutex_unlock(&c->lock);
    if (run && c->release)
        c->release(c->release_ctx, owner);
}

static int check_handle(const a3s_child *c, const a3s_child_status *out, bool need_out,
                        const char *fn, a3s_error *err) {
    if (!c || (need_out && !out) || (out && out->struct_size < sizeof(a3s_child_status)))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "%s: NULL argument or too small struct", fn);
    return A3S_OK;
}

static int wait_failed(const struct a3s_child *c, int e, a3s_error *err) {
    char eb[128];
    if (e == ECHILD)
        return a3s_fail(err, A3S_E_SYSTEM, e, 0,
                        "waitid %d: the child was reaped by someone else", (int)c->pid);
    return a3s_fail(err, A3S_E_SYSTEM, e, 0, "waiting for %d: %s", (int)c->pid,
                    a3s_errstr(e, eb, sizeof eb));
}

/* ---- the API ---------------------------------------------------------------------- */

A3S_API int a3s_child_wait(a3s_child *c, uint64_t timeout_ms, a3s_child_status *out,
                           a3s_error *err) {
    int rc = check_handle(c, out, true, "a3s_child_wait", err);
    if (rc)
        return rc;
    if (c->owner != getpid())
        return a3s_fail(err, A3S_E_INVALID, 0, 0,
                        "a3s_child_wait: the child belongs to the process that spawned it");
    int done = wait_for(c, timeout_ms);
    if (done < 0)
        return wait_failed(c, errno, err);
    /* a warden killed with SIGKILL did not empty the cgroup: the program has not
     * ended while anything of it is left */
    if (done == 1 && c->cgroup)
        release_once(c, true);
    pthread_mutex_lock(&c->lock);
    fill(c, out);
    pthread_mutex_unlock(&c->lock);
    return a3s_ok(err);
}

/* Asks the init to send sig to every process of the program: a SIGNAL
 * request on the lifeline, which only this process writes. 1 when written;
 * 0 when there is nothing to signal (reaped, or the lifeline is closed: it
 * is being killed); -1 with errno when it could not be written (EPIPE: the
 * init is gone; EAGAIN: it has not read the requests before). */
static int request_signal(struct a3s_child *c, int sig) {
    uint8_t msg[A3S_MSG_SIGNAL_LEN];
    size_t len = a3s_msg_encode_signal(sig, msg);
    pthread_mutex_lock(&c->lock);
    int rc = 0;
    if (!c->reaped && c->lifeline >= 0) {
        ssize_t n = a3s_write_no_sigpipe(c->lifeline, msg, len);
        rc = n == (ssize_t)len ? 1 : -1; /* a pipe takes a write this small whole or not at all */
    }
    int e = errno;
    pthread_mutex_unlock(&c->lock);
    errno = e;
    return rc;
}

/* The old way of step 1, for an init that cannot be asked: the signal to the
 * init, which passes it on where it takes signals from the caller (host
 * mode; a sandbox's init ignores it). */
static void signal_init(struct a3s_child *c, int sig) {
    if (c->nested) {
        a3s_signal_children(c->pid, c->pidfd, sig);
        return;
    }
    pthread_mutex_lock(&c->lock);
    signal_direct(c, sig);
    pthread_mutex_unlock(&c->lock);
}

static bool signal_ok(int sig) { return sig >= 1 && sig <= A3S_MSG_SIGNAL_MAX; }

A3S_API int a3s_child_signal(a3s_child *c, int sig, a3s_error *err) {
    int rc = check_handle(c, NULL, false, "a3s_child_signal", err);
    if (rc)
        return rc;
    if (!signal_ok(sig))
        return a3s_fail(err, A3S_E_INVALID, 0, sig,
                        "a3s_child_signal: %d is not a signal number (1 to %d)", sig,
                        A3S_MSG_SIGNAL_MAX);
    if (c->owner != getpid())
        return a3s_fail(err, A3S_E_INVALID, 0, 0,
                        "a3s_child_signal: the child belongs to the process that spawned it");
    if (request_signal(c, sig) >= 0)
        return a3s_ok(err);
    char eb[128];
    int e = errno;
    if (e == EPIPE) /* the init is gone: the program has ended, or is ending */
        return a3s_ok(err);
    return a3s_fail(err, A3S_E_SYSTEM, e, sig,
                    "signal %d for %d could not be passed to its init: %s", sig, (int)c->pid,
                    a3s_errstr(e, eb, sizeof eb));
}

A3S_API int a3s_child_stop(a3s_child *c, a3s_child_status *out, a3s_error *err) {
    return a3s_child_stop_with(c, SIGTERM, out, err);
}

A3S_API int a3s_child_stop_with(a3s_child *c, int sig, a3s_child_status *out, a3s_error *err) {
    int rc = check_handle(c, out, false, "a3s_child_stop", err);
    if (rc)
        return rc;
    if (!signal_ok(sig))
        return a3s_fail(err, A3S_E_INVALID, 0, sig,
                        "a3s_child_stop_with: %d is not a signal number (1 to %d)", sig,
                        A3S_MSG_SIGNAL_MAX);
    if (c->owner != getpid())
        return a3s_fail(err, A3S_E_INVALID, 0, 0,
                        "a3s_child_stop: the child belongs to the process that spawned it");
    int done = wait_for(c, 0);
    if (done == 0 && sig != SIGKILL) {
        if (request_signal(c, sig) < 0)
            signal_init(c, sig); /* not delivered: the grace and the kill below still come */
        done = wait_for(c, c->grace_ms);
    }
    if (done == 0) {
        pthread_mutex_lock(&c->lock);
        a3s_close_fd(&c->lifeline); /* the init kills everything now */
        pthread_mutex_unlock(&c->lock);
        done = wait_for(c, BACKSTOP_MS);
    }
    if (done == 0) {
        pthread_mutex_lock(&c->lock);
        if (!c->reaped) {
            c->killed = true;
            signal_direct(c, SIGKILL);
        }
        pthread_mutex_unlock(&c->lock);
        done = wait_for(c, UINT64_MAX);
    }
    if (done < 0)
        return wait_failed(c, errno, err);
    release_once(c, true);
    if (out) {
        pthread_mutex_lock(&c->lock);
        fill(c, out);
        pthread_mutex_unlock(&c->lock);
    }
    return a3s_ok(err);
}

A3S_API int a3s_child_info(const a3s_child *c, a3s_child_status *out, a3s_error *err) {
    int rc = check_handle(c, out, true, "a3s_child_info", err);
    if (rc)
        return rc;
    a3s_child *m = (a3s_child *)c; /* the lock only: reading does not change the handle */
    pthread_mutex_lock(&m->lock);
    fill(c, out);
    pthread_mutex_unlock(&m->lock);
    return a3s_ok(err);
}

A3S_API void a3s_child_free(a3s_child *c) {
    if (!c)
        return;
    bool owner = c->owner == getpid();
    if (owner)
        a3s_child_stop(c, NULL, NULL);
    release_once(c, owner);
    a3s_close_fd(&c->pidfd);
    a3s_close_fd(&c->lifeline);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* ---- launching -------------------------------------------------------------------- */

/* The first line of what the direct child wrote to stderr before it died
 * (bubblewrap's "bwrap: ..."), read without blocking. */
static void first_error_line(int fd, char *out, size_t cap) {
    char buf[1024];
    out[0] = '\0';
    if (a3s_set_nonblock(fd) < 0)
        return;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n <= 0)
        return;
    buf[n] = '\0';
    const char *s = strstr(buf, "bwrap: ");
    if (!s)
        s = buf;
    snprintf(out, cap, "%.*s", (int)strcspn(s, "\n"), s);
}

/* Reads the init's status until "R", a complete "E<message>", or its end.
 * 1 when the program runs; 0 with why[] set when it will not. */
static int await_start(struct a3s_child *c, int status_fd, int report_fd, const char *path,
                       char *why, size_t cap, struct a3s_exec_report *rep, bool *reported) {
    char buf[640];
    size_t got = 0;
    uint64_t deadline = a3s_after_ms(a3s_now_ns(), START_TIMEOUT_MS);
    *reported = false;
    why[0] = '\0';
    for (;;) {
        uint64_t now = a3s_now_ns();
        if (now >= deadline) {
            snprintf(why, cap, "%s did not start within %u ms", path, START_TIMEOUT_MS);
            return 0;
        }
        struct pollfd p[3] = {{.fd = status_fd, .events = POLLIN},
                              {.fd = report_fd, .events = POLLIN},
                              {.fd = c->pidfd, .events = POLLIN}};
        int ms = a3s_ms_until(now, deadline);
        int n = poll(p, 3, c->pidfd >= 0 ? ms : (ms < WAIT_POLL_MS ? ms : WAIT_POLL_MS));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            char eb[128];
            snprintf(why, cap, "poll: %s", a3s_errstr(errno, eb, sizeof eb));
            return 0;
        }
        if (report_fd >= 0 && p[1].revents) {
            ssize_t r = read(report_fd, rep, sizeof *rep);
            if (r == (ssize_t)sizeof *rep) {
                *reported = true;
                return 0;
            }
            if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
                report_fd = -1; /* exec'd */
        }
        if (p[0].revents) {
            ssize_t r = read(status_fd, buf + got, sizeof buf - 1 - got);
            if (r > 0) {
                got += (size_t)r;
                if (buf[0] == 'R')
                    return 1;
                if (got < sizeof buf - 1)
                    continue; /* the rest of "E<message>" */
            }
            if (r < 0 && errno == EINTR)
                continue;
            buf[got] = '\0';
            if (got > 1 && buf[0] == 'E')
                snprintf(why, cap, "%.*s", (int)(cap - 1), buf + 1);
            return 0;
        }
        if (c->pidfd >= 0 ? p[2].revents != 0 : false) {
            /* gone without a word: whatever it said is on stderr */
            return 0;
        }
        if (c->pidfd < 0) {
            siginfo_t si;
            memset(&si, 0, sizeof si);
            if (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
                si.si_pid != 0)
                return 0;
        }
    }
}

int a3s_child_launch(const struct a3s_child_launch *l, struct a3s_child_fds *f, a3s_child **out,
                     a3s_child_stdio *stdio, a3s_error *err) {
    char eb[128];
    int report[2] = {-1, -1};
    struct a3s_child *c = calloc(1, sizeof *c);
    if (!c || a3s_pipe_above_stdio(report, 0) < 0 || a3s_set_nonblock(report[0]) < 0) {
        int e = c ? errno : ENOMEM;
        free(c);
        a3s_close_fd(&report[0]);
        a3s_close_fd(&report[1]);
        a3s_child_fds_close(f);
        if (l->release)
            l->release(l->release_ctx, true);
        return e == ENOMEM ? a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory")
                           : a3s_fail(err, A3S_E_SYSTEM, e, 0, "pipe: %s",
                                      a3s_errstr(e, eb, sizeof eb));
    }
    pthread_mutex_init(&c->lock, NULL);
    c->owner = getpid();
    c->pidfd = -1;
    c->lifeline = -1;
    c->nested = l->nested;
    c->sandboxed = l->sandboxed;
    c->pid_namespace = l->pid_namespace;
    c->cgroup = l->cgroup;
    c->grace_ms = l->grace_ms ? l->grace_ms : A3S_CHILD_DEFAULT_GRACE_MS;
    c->exit_code = EXIT_RUNNING;
    c->release = l->release;
    c->release_ctx = l->release_ctx;

    int keep[3 + A3S_CHILD_MAX_EXTRA_KEEP];
    size_t nkeep = 0;
    keep[nkeep++] = f->status[1];
    keep[nkeep++] = f->lifeline[0];
    if (f->host_pidfd >= 0)
        keep[nkeep++] = f->host_pidfd;
    for (size_t i = 0; i < l->nkeep && i < A3S_CHILD_MAX_EXTRA_KEEP; i++)
        if (l->keep[i] >= 0)
            keep[nkeep++] = l->keep[i];
    struct a3s_exec_plan plan = {
        .path = l->path,
        .argv = l->argv,
        .envp = l->envp,
        .cwd = l->cwd,
        .in = f->in[0],
        .out = f->out[1],
        .err = f->err[1],
        .report_w = report[1],
        .keep = keep,
        .nkeep = nkeep,
        .by_fd = l->exec_fd >= 0,
        .exec_fd = l->exec_fd,
    };
    a3s_exec_plan_limits(&plan, false);
    pid_t pid = a3s_exec_fork(&plan);
    int e = errno;
    a3s_close_fd(&report[1]);
    /* the caller keeps its ends only */
    a3s_close_fd(&f->in[0]);
    a3s_close_fd(&f->out[1]);
    a3s_close_fd(&f->err[1]);
    a3s_close_fd(&f->status[1]);
    a3s_close_fd(&f->lifeline[0]);
    a3s_close_fd(&f->host_pidfd);
    if (pid < 0) {
        a3s_close_fd(&report[0]);
        a3s_child_fds_close(f);
        c->reaped = true; /* nothing to wait for */
        a3s_child_free(c);
        return a3s_fail(err, A3S_E_SYSTEM, e, 0, "fork for %s: %s", l->path,
                        a3s_errstr(e, eb, sizeof eb));
    }
    c->pid = pid;
#ifdef SYS_pidfd_open
    c->pidfd = a3s_fd_above_stdio((int)syscall(SYS_pidfd_open, pid, 0)); /* -1: poll waitid */
    if (c->pidfd >= 0)
        fcntl(c->pidfd, F_SETFD, FD_CLOEXEC);
#endif
    c->lifeline = f->lifeline[1];
    f->lifeline[1] = -1;
    /* a request must never block a stop: a full pipe is a request not delivered */
    a3s_set_nonblock(c->lifeline);

    char why[A3S_ERROR_MESSAGE_MAX];
    struct a3s_exec_report rep;
    bool reported = false;
    int running = await_start(c, f->status[0], report[0], l->path, why, sizeof why, &rep,
                              &reported);
    a3s_close_fd(&report[0]);
    a3s_close_fd(&f->status[0]);
    if (!running) {
        a3s_close_fd(&f->in[1]); /* a program that did start sees its input end */
        a3s_child_stop(c, NULL, NULL);
        if (l->silent) /* the init never said a word: its supervisor ended on its own */
            *l->silent = !why[0] && !reported;
        if (!why[0] && !reported)
            first_error_line(f->err[0], why, sizeof why);
        a3s_child_fds_close(f);
        int code = A3S_E_SYSTEM;
        if (reported)
            code = a3s_exec_report_fail(&rep, l->path, l->cwd, err);
        else
            a3s_fail(err, A3S_E_SYSTEM, 0, c->exit_code, "%s",
                     why[0] ? why : "the program did not start");
        a3s_child_free(c);
        return code;
    }
    stdio->stdin_fd = f->in[1];
    stdio->stdout_fd = f->out[0];
    stdio->stderr_fd = f->err[0];
    stdio->reserved = 0;
    f->in[1] = f->out[0] = f->err[0] = -1;
    a3s_child_fds_close(f);
    *out = c;
    return a3s_ok(err);
}

/* ---- a3s_child_spawn ------------------------------------------------------------- */

static int check_options(const a3s_child_options *o, const char *fn, uint64_t known,
                         a3s_error *err) {
    if (o->flags & ~known)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "%s: unknown flags 0x%llx", fn,
                        (unsigned long long)o->flags);
    if (!o->path || o->path[0] != '/')
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "%s: the program path must be absolute", fn);
    if (o->cwd && o->cwd[0] != '/')
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "%s: cwd must be absolute", fn);
    if (o->nargs && !o->args)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "%s: args is NULL", fn);
    for (size_t i = 0; i < o->nargs; i++)
        if (!o->args[i])
            return a3s_fail(err, A3S_E_INVALID, 0, (int64_t)i, "%s: args[%zu] is NULL", fn, i);
    if (o->envc && !o->env)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "%s: env is NULL", fn);
    struct sigaction sa;
    if (sigaction(SIGCHLD, NULL, &sa) == 0 &&
        (sa.sa_handler == SIG_IGN || (sa.sa_flags & SA_NOCLDWAIT)))
        return a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0, "%s: SIGCHLD is ignored in this process",
                        fn);
    return A3S_OK;
}

int a3s_child_check_options(const a3s_child_options *o, a3s_child **out, a3s_child_stdio *stdio,
                            const char *fn, a3s_error *err) {
    if (out)
        *out = NULL;
    if (!o || !out || !stdio || o->struct_size < offsetof(a3s_child_options, init_sha256) ||
        stdio->struct_size < sizeof(a3s_child_stdio))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "%s: NULL argument or too small struct", fn);
    return check_options(o, fn, 0, err);
}

static void push_num(struct a3s_strvec *v, const char *opt, long long n) {
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", n);
    a3s_strvec_push(v, opt);
    a3s_strvec_push(v, buf);
}

/* How a3s_child_spawn owns the program, best first (docs/mcp.md). */
enum own_by { OWN_PIDNS, OWN_CGROUP, OWN_NONE };

/* A cgroup launch's release: whatever is left in the cgroup goes with it. */
static void release_cgroup(void *ctx, bool owner) {
    struct a3s_cgroup *cg = ctx;
    if (owner) {
        a3s_cgroup_kill_all(cg->dir_fd[0]);
        a3s_cgroup_destroy(cg);
    } else {
        a3s_cgroup_forget(cg); /* a forked copy leaves the caller's cgroup alone */
    }
    free(cg);
}

/* One launch of a3s_child_spawn: under bubblewrap in namespaces of its own
 * (OWN_PIDNS), under the warden in the cgroup cg (OWN_CGROUP, which takes
 * cg), or under the subreaper init. *silent says the supervisor was
 * executed but ended without a word from the init. */
static int launch_host(const a3s_child_options *opts, int image, enum own_by by, const char *bwrap,
                       struct a3s_cgroup *cg, struct a3s_strvec *env, a3s_child **out,
                       a3s_child_stdio *stdio, bool *silent, a3s_error *err) {
    struct a3s_strvec argv = {0};
    struct a3s_child_fds f;
    int rc = a3s_child_fds_open(&f, err);
    if (rc) {
        if (cg)
            release_cgroup(cg, true);
        return rc;
    }
    uint64_t grace = opts->kill_grace_ms ? opts->kill_grace_ms : A3S_CHILD_DEFAULT_GRACE_MS;
    unsigned long long pidns = 0;
    if (by == OWN_PIDNS) {
        rc = a3s_child_owned_argv(bwrap, image, &argv, &pidns, err);
        if (rc) {
            a3s_strvec_free(&argv);
            a3s_child_fds_close(&f);
            return rc;
        }
    } else if (by == OWN_CGROUP) {
        /* the warden, outside the cgroup, runs the init (this image again) in it */
        a3s_strvec_push(&argv, opts->init_path);
        a3s_strvec_push(&argv, "--mode");
        a3s_strvec_push(&argv, "warden");
        push_num(&argv, "--cgroup-fd", cg->dir_fd[0]);
        push_num(&argv, "--init-fd", image);
        push_num(&argv, "--status-fd", f.status[1]);
        push_num(&argv, "--lifeline-fd", f.lifeline[0]);
        if (f.host_pidfd >= 0)
            push_num(&argv, "--host-pidfd", f.host_pidfd);
        a3s_strvec_push(&argv, "--");
        a3s_strvec_push(&argv, opts->init_path);
    } else {
        a3s_strvec_push(&argv, opts->init_path);
    }
    a3s_strvec_push(&argv, "--mode");
    a3s_strvec_push(&argv, "host");
    if (by == OWN_PIDNS)
        push_num(&argv, "--own-pidns", (long long)pidns);
    if (by == OWN_CGROUP) /* the program cannot end the warden or the init (a3s_init.c) */
        a3s_strvec_push(&argv, "--under-warden");
    push_num(&argv, "--status-fd", f.status[1]);
    push_num(&argv, "--lifeline-fd", f.lifeline[0]);
    if (f.host_pidfd >= 0)
        push_num(&argv, "--host-pidfd", f.host_pidfd);
    push_num(&argv, "--grace-ms", (long long)grace);
    a3s_strvec_push(&argv, "--");
    a3s_strvec_push(&argv, opts->path);
    for (size_t i = 0; i < opts->nargs; i++)
        a3s_strvec_push(&argv, opts->args[i]);
    if (argv.failed || env->failed) {
        a3s_strvec_free(&argv);
        a3s_child_fds_close(&f);
        if (cg)
            release_cgroup(cg, true);
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory");
    }
    int keep[] = {image, cg ? cg->dir_fd[0] : -1};
    struct a3s_child_launch l = {
        .path = by == OWN_PIDNS ? bwrap : opts->init_path,
        .exec_fd = by == OWN_PIDNS ? -1 : image, /* owned: bubblewrap runs the image by its fd */
        .argv = argv.items,
        .envp = env->items,
        .cwd = opts->cwd,
        .keep = by == OWN_NONE ? NULL : keep,
        .nkeep = by == OWN_NONE ? 0 : 2,
        .nested = by != OWN_NONE, /* the init is bubblewrap's or the warden's child */
        .pid_namespace = by == OWN_PIDNS,
        .cgroup = by == OWN_CGROUP,
        .grace_ms = grace,
        .release = cg ? release_cgroup : NULL,
        .release_ctx = cg,
        .silent = silent,
    };
    rc = a3s_child_launch(&l, &f, out, stdio, err);
    a3s_strvec_free(&argv);
    /* the init's own failures name the program; ours name the init */
    return rc;
}

/* A cgroup of its own for the program (NULL, with why[] set, if none can be made). */
static struct a3s_cgroup *own_cgroup(char *why, size_t cap) {
    struct a3s_cgroup *cg = malloc(sizeof *cg);
    if (!cg) {
        snprintf(why, cap, "out of memory");
        return NULL;
    }
    if (!a3s_cgroup_create_killable(cg, why, cap)) {
        free(cg);
        return NULL;
    }
    return cg;
}

/* The field of opts at `offset` if the caller's struct has it. */
#define HAS_FIELD(o, field)                                                                       \
    ((o)->struct_size >= offsetof(a3s_child_options, field) + sizeof(o)->field)

A3S_API int a3s_child_spawn(const a3s_child_options *opts, a3s_child **out,
                            a3s_child_stdio *stdio, a3s_error *err) {
    if (out)
        *out = NULL;
    if (!opts || !out || !stdio || opts->struct_size < offsetof(a3s_child_options, init_sha256) ||
        stdio->struct_size < sizeof(a3s_child_stdio))
        return a3s_fail(err, A3S_E_INVALID, 0, 0,
                        "a3s_child_spawn: NULL argument or too small struct");
    int rc = check_options(opts, "a3s_child_spawn", A3S_CHILD_ALLOW_UNOWNED, err);
    if (rc)
        return rc;
    if (!opts->init_path || opts->init_path[0] != '/')
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_child_spawn: init_path must be absolute");
    /* the init's bytes, checked and pinned: what runs is what was checked */
    bool has_digest = HAS_FIELD(opts, init_sha256);
    int image = -1;
    rc = a3s_init_image_open(opts->init_path, has_digest ? opts->init_sha256 : NULL, NULL, &image,
                             err);
    if (rc)
        return rc;
    const char *bwrap = HAS_FIELD(opts, bwrap_path) ? opts->bwrap_path : NULL;
    bool allow = opts->flags & A3S_CHILD_ALLOW_UNOWNED;
    char why[256], why_cgroup[256];
    struct a3s_cgroup *cg = NULL;
    enum own_by by = OWN_PIDNS;
    if (!a3s_child_can_own(bwrap, why, sizeof why))
        by = (cg = own_cgroup(why_cgroup, sizeof why_cgroup)) ? OWN_CGROUP : OWN_NONE;
    if (by == OWN_NONE && !allow) {
        close(image);
        return a3s_fail(err, A3S_E_UNSUPPORTED, 0, A3S_CHILD_UNOWNABLE,
                        "cannot be owned here: %s, so no pid namespace of its own would keep "
                        "it from escaping or from this process's /proc; and %s",
                        why, why_cgroup);
    }
    const char *const *host = opts->host_env ? opts->host_env : (const char *const *)environ;
    size_t nhost = opts->host_env ? opts->host_envc : 0;
    if (!opts->host_env)
        while (host[nhost])
            nhost++;
    struct a3s_strvec env = {0};
    rc = a3s_env_build_host(host, nhost, opts->env, opts->envc, &env, err);
    bool silent = false;
    if (rc == A3S_OK)
        rc = launch_host(opts, image, by, bwrap, cg, &env, out, stdio, &silent, err);
    else if (cg)
        release_cgroup(cg, true);
    if (rc != A3S_OK && by == OWN_PIDNS && silent) {
        /* bubblewrap ended before the init said a word: it could not make the
         * namespaces here (a kernel or LSM that refuses them to this caller) */
        char bwrap_said[A3S_ERROR_MESSAGE_MAX];
        snprintf(bwrap_said, sizeof bwrap_said, "%s", err ? err->message : "");
        by = (cg = own_cgroup(why_cgroup, sizeof why_cgroup)) ? OWN_CGROUP : OWN_NONE;
        if (by != OWN_NONE || allow)
            rc = launch_host(opts, image, by, bwrap, cg, &env, out, stdio, &silent, err);
        else
            rc = a3s_fail(err, A3S_E_UNSUPPORTED, 0, A3S_CHILD_UNOWNABLE,
                          "cannot be owned here: bubblewrap could not make its namespaces (%s); "
                          "and %s",
                          bwrap_said[0] ? bwrap_said : "no message", why_cgroup);
    }
    close(image); /* the init runs from its own mapping now */
    a3s_strvec_free(&env);
    return rc;
}

#else
typedef int a3s_child_linux_unused; /* ISO C forbids an empty unit */
#endif
