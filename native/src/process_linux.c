/* process_linux.c - run one program, capture bounded output, stop its group.
 *
 * The run is one thread's loop: fork a child prepared in advance, then poll
 * its two output pipes, a close-on-exec error pipe, a pidfd (or a short
 * timeout when there is none) and the optional cancel fd until the child is
 * reaped and the pipes are drained. Nothing here is global: the only state
 * is on the caller's stack and heap, so threads may run processes at once.
 */
#define _GNU_SOURCE
#include "internal.h"
#include "cgroup_linux.h"
#include "posix_util.h"
#include "process_internal.h"

#if defined(__linux__)

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CLOSE_RANGE_CLOEXEC
#  define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

#define KNOWN_FLAGS (A3S_PROCESS_CANCEL_FD | A3S_PROCESS_PORTABLE)
#define READ_CHUNK A3S_CAPTURE_CHUNK
#define WAIT_POLL_MS 10        /* waitid polling period without a pidfd */
#define RELEASED_DRAIN_MS 20   /* the output already written, when a survivor holds the pipes */
#define BRUTE_FD_LIMIT 1048576 /* last-resort CLOEXEC sweep stops here */
#define EXIT_CHILD_FAILED 127  /* only seen if the error pipe report is lost */

/* ---- the child: async-signal-safe code only ---------------------------- */

enum child_step { STEP_SETSID = 1, STEP_DUP2, STEP_FDS, STEP_CHDIR, STEP_CGROUP, STEP_EXECVE };

struct linux_dirent64_head {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
};

/* Whether fd is one of the kept ones. */
static bool kept(int fd, const int *a, size_t na, const int *b, size_t nb) {
    for (size_t i = 0; i < na; i++)
        if (a[i] == fd)
            return true;
    for (size_t i = 0; i < nb; i++)
        if (b[i] == fd)
            return true;
    return false;
}

/* The smallest kept fd >= lo, or -1. */
static int next_kept(int lo, const int *a, size_t na, const int *b, size_t nb) {
    int best = -1;
    for (size_t i = 0; i < na + nb; i++) {
        int fd = i < na ? a[i] : b[i - na];
        if (fd >= lo && (best < 0 || fd < best))
            best = fd;
    }
    return best;
}

/* Closes every fd >= 3 listed in /proc/self/fd but the kept ones (the
 * listing goes by fd number, so closing while reading it is safe). */
static bool close_from_proc(const int *a, size_t na, const int *b, size_t nb) {
    int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return false;
    _Alignas(8) char buf[4096];
    for (;;) {
        long n = syscall(SYS_getdents64, dir, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            close(dir);
            return false;
        }
        if (n == 0)
            break;
        for (long off = 0; off < n;) {
            const struct linux_dirent64_head *d = (const void *)(buf + off);
            const char *name = buf + off + offsetof(struct linux_dirent64_head, d_type) + 1;
            off += d->d_reclen;
            int fd = 0;
            bool digits = name[0] != '\0';
            for (const char *c = name; *c; c++) {
                if (*c < '0' || *c > '9' || fd > (INT_MAX - 9) / 10) {
                    digits = false;
                    break;
                }
                fd = fd * 10 + (*c - '0');
            }
            if (digits && fd >= 3 && fd != dir && !kept(fd, a, na, b, nb))
                close(fd);
        }
    }
    close(dir);
    return true;
}

int a3s_close_fds_except(const int *a, size_t na, const int *b, size_t nb, bool try_close_range,
                         int brute_limit) {
    bool done = false;
#ifdef SYS_close_range
    if (try_close_range) {
        done = true;
        for (int lo = 3; done;) {
            int k = next_kept(lo, a, na, b, nb);
            unsigned hi = k < 0 ? ~0u : (unsigned)k - 1u;
            if ((k < 0 || k > lo) && syscall(SYS_close_range, (unsigned)lo, hi, 0u) < 0)
                done = false;
            if (k < 0 || k == INT_MAX)
                break;
            lo = k + 1;
        }
    }
#endif
    if (!done)
        done = close_from_proc(a, na, b, nb);
    if (!done)
        for (int fd = 3; fd < brute_limit; fd++)
            if (!kept(fd, a, na, b, nb))
                close(fd);
    return 0;
}

/* Every fd >= 3 but the kept ones, the report pipe, the image to run and
 * the cgroup files to join is closed now, not at exec: until its execve
 * this child must hold no descriptor of another thread's (a pipe it holds
 * open is a pipe whose reader never sees its end). The kept ones lose
 * close-on-exec. */
static int child_fds(const struct a3s_exec_plan *p) {
    int own[2 + A3S_CGROUP_MAX_DIRS];
    size_t nown = 0;
    own[nown++] = p->report_w;
    if (p->by_fd)
        own[nown++] = p->exec_fd;
    for (size_t i = 0; p->cgroup && i < p->cgroup->ndirs; i++)
        own[nown++] = p->cgroup->procs_fd[i];
    a3s_close_fds_except(p->keep, p->nkeep, own, nown, p->try_close_range, p->brute_limit);
    for (size_t i = 0; i < p->nkeep; i++)
        if (fcntl(p->keep[i], F_SETFD, 0) < 0)
            return -1;
    return 0;
}

/* glibc refuses to touch the signals it reserves (32 and 33), yet an
 * inherited SIG_IGN on them would survive execve (GNU make leaves them so):
 * ask the kernel directly. An all-zero kernel sigaction is SIG_DFL with no
 * flags and an empty mask on every architecture. */
static void raw_default(int sig) {
#ifdef SYS_rt_sigaction
    _Alignas(16) unsigned char ksa[64];
    memset(ksa, 0, sizeof ksa);
    syscall(SYS_rt_sigaction, sig, ksa, NULL, (size_t)((NSIG - 1) / 8));
#else
    (void)sig;
#endif
}

static _Noreturn void child_fail(const struct a3s_exec_plan *p, enum child_step step) {
    struct a3s_exec_report r = {(int32_t)step, (int32_t)errno};
    ssize_t n;
    do
        n = write(p->report_w, &r, sizeof r);
    while (n < 0 && errno == EINTR);
    _exit(EXIT_CHILD_FAILED);
}

static _Noreturn void child_exec(const struct a3s_exec_plan *p) {
    /* Dispositions first, while every signal is still blocked (the parent
     * blocked them around fork): ignored signals would survive execve. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP && sigaction(s, &dfl, NULL) < 0)
            raw_default(s);
    if (setsid() < 0)
        child_fail(p, STEP_SETSID);
    if (dup2(p->in, 0) < 0 || dup2(p->out, 1) < 0 || dup2(p->err, 2) < 0)
        child_fail(p, STEP_DUP2);
    if (child_fds(p) < 0)
        child_fail(p, STEP_FDS);
    if (p->cwd && chdir(p->cwd) < 0)
        child_fail(p, STEP_CHDIR);
    int joined = p->cgroup ? a3s_cgroup_join(p->cgroup) : 0;
    if (joined < 0) {
        errno = -joined;
        child_fail(p, STEP_CGROUP);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (p->by_fd) /* a raw system call: async-signal-safe, and in every libc */
        syscall(SYS_execveat, p->exec_fd, "", p->argv, p->envp, AT_EMPTY_PATH);
    else
        execve(p->path, p->argv, p->envp);
    child_fail(p, STEP_EXECVE);
}

/* ---- output capture: head + ring-buffer tail --------------------------- */

static bool grow(char **buf, size_t *alloc, size_t need, size_t cap) {
    if (need <= *alloc)
        return true;
    size_t n = *alloc ? *alloc : 4096;
    while (n < need)
        n = n > cap / 2 ? cap : n * 2;
    if (n > cap)
        n = cap;
    char *b = realloc(*buf, n);
    if (!b)
        return false;
    *buf = b;
    *alloc = n;
    return true;
}

static void capture_add(struct a3s_capture *c, const char *data, size_t n) {
    c->total += n;
    if (c->oom)
        return;
    if (c->head_len < c->head_cap) {
        size_t take = c->head_cap - c->head_len < n ? c->head_cap - c->head_len : n;
        if (!grow(&c->head, &c->head_alloc, c->head_len + take, c->head_cap)) {
            c->oom = true;
            return;
        }
        memcpy(c->head + c->head_len, data, take);
        c->head_len += take;
        data += take;
        n -= take;
    }
    if (n == 0 || c->tail_cap == 0)
        return;
    if (n >= c->tail_cap) { /* only the last tail_cap bytes can survive */
        data += n - c->tail_cap;
        n = c->tail_cap;
    }
    /* Until the ring is full it never wraps, so a shorter allocation works. */
    size_t need = c->tail_len + n < c->tail_cap ? c->tail_len + n : c->tail_cap;
    if (!grow(&c->tail, &c->tail_alloc, need, c->tail_cap)) {
        c->oom = true;
        return;
    }
    size_t end = (c->tail_start + c->tail_len) % c->tail_cap;
    size_t first = c->tail_cap - end < n ? c->tail_cap - end : n;
    memcpy(c->tail + end, data, first);
    memcpy(c->tail, data + first, n - first);
    if (c->tail_len + n > c->tail_cap) {
        c->tail_start = (c->tail_start + (c->tail_len + n - c->tail_cap)) % c->tail_cap;
        c->tail_len = c->tail_cap;
    } else {
        c->tail_len += n;
    }
}

/* Turns the head into the final buffer: head [marker] tail, NUL-terminated. */
static bool capture_finish(struct a3s_capture *c, char **data, size_t *len, bool *truncated) {
    uint64_t kept = c->head_len + c->tail_len;
    char marker[64];
    int mlen = 0;
    *truncated = c->total > kept;
    if (*truncated)
        mlen = snprintf(marker, sizeof marker, "\n[... a3s: %llu bytes omitted ...]\n",
                        (unsigned long long)(c->total - kept));
    size_t n = c->head_len + (size_t)mlen + c->tail_len;
    char *b = realloc(c->head, n + 1);
    if (!b)
        return false;
    c->head = NULL;
    memcpy(b + c->head_len, marker, (size_t)mlen);
    char *t = b + c->head_len + mlen;
    size_t first = c->tail_cap - c->tail_start < c->tail_len ? c->tail_cap - c->tail_start
                                                             : c->tail_len;
    if (c->tail_len) {
        memcpy(t, c->tail + c->tail_start, first);
        memcpy(t + first, c->tail, c->tail_len - first);
    }
    b[n] = '\0';
    *data = b;
    *len = n;
    return true;
}

void a3s_capture_release(struct a3s_capture *c) {
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    free(c->head);
    free(c->tail);
    c->head = c->tail = NULL;
}

void a3s_capture_init(struct a3s_capture *c, int fd, uint64_t max_output_bytes) {
    memset(c, 0, sizeof *c);
    uint64_t max = max_output_bytes ? max_output_bytes : A3S_PROCESS_DEFAULT_MAX_OUTPUT;
    c->fd = fd;
    c->head_cap = (size_t)(max / 2);
    c->tail_cap = (size_t)(max - max / 2);
}

void a3s_capture_sink(struct a3s_capture *c, const struct a3s_output_sink *sink, int stream) {
    c->sink = sink ? sink->fn : NULL;
    c->sink_ctx = sink ? sink->ctx : NULL;
    c->stream = stream;
}

/* Reads what is available once; closes the fd at EOF or on a hard error. */
void a3s_capture_read(struct a3s_capture *c, char *buf) {
    ssize_t n;
    do
        n = read(c->fd, buf, READ_CHUNK);
    while (n < 0 && errno == EINTR);
    if (n > 0) {
        if (c->sink)
            c->sink(c->sink_ctx, c->stream, buf, (size_t)n);
        capture_add(c, buf, (size_t)n);
    } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
        close(c->fd);
        c->fd = -1;
    }
}

/* ---- the parent -------------------------------------------------------- */

struct a3s_process_result {
    int32_t exit_code, term_signal;
    uint64_t flags;
    char *out, *errout;
    size_t out_len, err_len;
    uint64_t out_total, err_total, duration_us;
    int32_t pid;
    char *setup_error;
    char *neutralized;
    int32_t exec_stop_list;
    char *exec_stop_rule, *exec_stop_command;
};

/* ---- standard input fed from memory --------------------------------------------- */

int a3s_stdin_feed_open(struct a3s_stdin_feed *f, const struct a3s_stdin_bytes *in,
                        int *child_end) {
    f->fd = *child_end = -1;
    f->next = NULL;
    f->left = 0;
    if (!in || !in->data)
        return 0;
    int p[2];
    if (a3s_pipe_above_stdio(p, 0) < 0)
        return -1;
    if (a3s_set_nonblock(p[1]) < 0) {
        int e = errno;
        close(p[0]);
        close(p[1]);
        errno = e;
        return -1;
    }
    *child_end = p[0];
    f->fd = p[1];
    f->next = in->data;
    f->left = in->len;
    if (f->left == 0)
        a3s_close_fd(&f->fd); /* empty input: the command reads end of file at once */
    return 0;
}

/* write() that turns a reader's absence into EPIPE without a SIGPIPE for the
 * process (a host may not ignore it): SIGPIPE is blocked on this thread for
 * the call and one it raised is taken back before unblocking. */
ssize_t a3s_write_no_sigpipe(int fd, const void *data, size_t n) {
    sigset_t pipe_set, old, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    bool was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
    ssize_t w;
    do
        w = write(fd, data, n);
    while (w < 0 && errno == EINTR);
    int e = errno;
    if (w < 0 && e == EPIPE && !was_pending) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return w;
}

void a3s_stdin_feed_write(struct a3s_stdin_feed *f) {
    while (f->fd >= 0 && f->left > 0) {
        size_t n = f->left < A3S_CAPTURE_CHUNK ? f->left : A3S_CAPTURE_CHUNK;
        ssize_t w = a3s_write_no_sigpipe(f->fd, f->next, n);
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return; /* the pipe is full: poll says when it drains */
        if (w <= 0) {
            a3s_close_fd(&f->fd); /* EPIPE: the command closed its input; it keeps running */
            return;
        }
        f->next += w;
        f->left -= (size_t)w;
    }
    a3s_close_fd(&f->fd); /* all written: end of file */
}

void a3s_stdin_feed_close(struct a3s_stdin_feed *f) {
    a3s_close_fd(&f->fd);
    f->left = 0;
}

static bool fd_is_open(int fd) { return fd >= 0 && fcntl(fd, F_GETFD) >= 0; }

static int check_options(const a3s_process_options *o, a3s_error *err) {
    if (o->flags & ~(uint64_t)KNOWN_FLAGS)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_process_run: unknown flags 0x%llx",
                        (unsigned long long)(o->flags & ~(uint64_t)KNOWN_FLAGS));
    if (!o->path || o->path[0] != '/')
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_process_run: path must be absolute");
    if (!o->argv || o->argc == 0)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_process_run: argv is NULL or empty");
    for (size_t i = 0; i < o->argc; i++)
        if (!o->argv[i])
            return a3s_fail(err, A3S_E_INVALID, 0, (int64_t)i, "a3s_process_run: argv[%zu] is NULL",
                            i);
    if (o->envc && !o->envp)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_process_run: envp is NULL");
    for (size_t i = 0; i < o->envc; i++)
        if (!o->envp[i])
            return a3s_fail(err, A3S_E_INVALID, 0, (int64_t)i, "a3s_process_run: envp[%zu] is NULL",
                            i);
    if (o->keep_fd_count && !o->keep_fds)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_process_run: keep_fds is NULL");
    for (size_t i = 0; i < o->keep_fd_count; i++)
        if (o->keep_fds[i] < 3 || !fd_is_open(o->keep_fds[i]))
            return a3s_fail(err, A3S_E_INVALID, 0, o->keep_fds[i],
                            "a3s_process_run: keep fd %d is < 3 or not open", o->keep_fds[i]);
    if ((o->flags & A3S_PROCESS_CANCEL_FD) && !fd_is_open(o->cancel_fd))
        return a3s_fail(err, A3S_E_INVALID, 0, o->cancel_fd,
                        "a3s_process_run: cancel_fd %d is not open", o->cancel_fd);
    if (o->max_output_bytes > SIZE_MAX / 4)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_process_run: max_output_bytes too large");
    /* An ignored SIGCHLD makes the kernel reap the child: no status to report. */
    struct sigaction sa;
    if (sigaction(SIGCHLD, NULL, &sa) == 0 &&
        (sa.sa_handler == SIG_IGN || (sa.sa_flags & SA_NOCLDWAIT)))
        return a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0,
                        "a3s_process_run: SIGCHLD is ignored in this process");
    return A3S_OK;
}

/* NULL-terminated copies of the pointer arrays execve wants. */
static char **string_array(const char *const *v, size_t n) {
    char **a = calloc(n + 1, sizeof *a);
    if (a)
        for (size_t i = 0; i < n; i++)
            a[i] = (char *)v[i];
    return a;
}

/* The whole state of one run, so that every exit path can clean it up. */
struct run {
    const a3s_process_options *o;
    struct a3s_exec_plan plan;
    int out_p[2], err_p[2], report_p[2];
    int pidfd;
    pid_t pid;
    bool exited, killed, stopping;
    uint64_t stop_flag; /* A3S_RESULT_TIMED_OUT or _CANCELLED */
    siginfo_t status;
    struct a3s_capture out, err;
    struct a3s_exec_report report;
    bool reported;
    char *buf;
    const struct a3s_stdin_bytes *in; /* NULL or no data: /dev/null */
    struct a3s_stdin_feed feed;
    struct a3s_status_watch *watch; /* NULL: none */
};

/* Signals the child and its group. The child itself is signalled by pid
 * too: it may not have called setsid yet. Only called before the reap, so
 * neither id can have been reused. */
static void signal_group(struct run *r, int sig) {
    kill(-r->pid, sig);
    kill(r->pid, sig);
}

static void begin_stop(struct run *r, uint64_t why, uint64_t now, uint64_t *kill_at) {
    r->stopping = true;
    r->stop_flag = why;
    signal_group(r, SIGTERM);
    signal_group(r, SIGCONT); /* a stopped member would never see the SIGTERM */
    uint64_t grace = r->o->kill_grace_ms ? r->o->kill_grace_ms : A3S_PROCESS_DEFAULT_GRACE_MS;
    *kill_at = a3s_after_ms(now, grace);
}

/* Reads the child's pre-exec failure report, if any (non-blocking). */
static void read_report(struct run *r) {
    ssize_t n;
    do
        n = read(r->report_p[0], &r->report, sizeof r->report);
    while (n < 0 && errno == EINTR);
    if (n == (ssize_t)sizeof r->report)
        r->reported = true;
    if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
        a3s_close_fd(&r->report_p[0]);
}

/* Checks for the child's exit without reaping it; once it has exited, kills
 * what is left of its group (the zombie still pins the pgid), then reaps.
 * Returns -1 with errno if waitid fails. */
static int check_exit(struct run *r) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int rc;
    do
        rc = waitid(P_PID, (id_t)r->pid, &si, WEXITED | WNOHANG | WNOWAIT);
    while (rc < 0 && errno == EINTR);
    if (rc < 0)
        return -1;
    if (si.si_pid == 0)
        return 0;
    kill(-r->pid, SIGKILL);
    do
        rc = waitid(P_PID, (id_t)r->pid, &r->status, WEXITED);
    while (rc < 0 && errno == EINTR);
    if (rc < 0)
        return -1;
    r->exited = true;
    a3s_close_fd(&r->pidfd);
    /* A failure report is written before the child's _exit, so it is there
     * now; no data means execve succeeded, even if a process forked meanwhile
     * by another thread still holds the write end. */
    if (r->report_p[0] >= 0)
        read_report(r);
    a3s_close_fd(&r->report_p[0]);
    return 0;
}

/* Last resort when the loop itself fails: never leave the child running or
 * unreaped. */
static void abandon_child(struct run *r) {
    if (r->exited)
        return;
    signal_group(r, SIGKILL);
    siginfo_t si;
    while (waitid(P_PID, (id_t)r->pid, &si, WEXITED) < 0 && errno == EINTR) {
    }
    r->exited = true;
}

static int wait_min(int a, int b) { return a < 0 ? b : (b < 0 || a < b ? a : b); }

bool a3s_status_watch_read(struct a3s_status_watch *w) {
    for (;;) {
        char scratch[256];
        bool full = w->len + 1 >= w->cap; /* read on, keeping nothing: the pipe must not fill */
        char *to = full ? scratch : w->buf + w->len;
        size_t room = full ? sizeof scratch : w->cap - 1 - w->len;
        ssize_t n = read(w->fd, to, room);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
        if (!full) {
            w->len += (size_t)n;
            w->buf[w->len] = '\0';
        }
    }
}

/* The init ran the command ("R"), left a process it could not reap ("S")
 * and said its exit status ("D<code>."): nothing more will come from it. */
static bool status_released(const struct a3s_status_watch *w) {
    if (w->len == 0 || w->buf[0] != 'R' || !strchr(w->buf, 'S'))
        return false;
    const char *d = strchr(w->buf, 'D');
    return d && strchr(d, '.');
}

/* Ends the run at the init's word: bubblewrap, which waits for the init's
 * exit, is killed and reaped (it is not what holds on); what the pipes hold
 * is read for a moment, not until their end (the survivor holds them). */
static int release_run(struct run *r, uint64_t *drain_at) {
    signal_group(r, SIGKILL);
    int rc;
    do
        rc = waitid(P_PID, (id_t)r->pid, &r->status, WEXITED);
    while (rc < 0 && errno == EINTR);
    if (rc < 0)
        return -1;
    r->exited = true;
    r->watch->released = true;
    a3s_close_fd(&r->pidfd);
    a3s_close_fd(&r->report_p[0]);
    *drain_at = a3s_after_ms(a3s_now_ns(), RELEASED_DRAIN_MS);
    return 0;
}

/* Polls until the child is reaped and its pipes are drained (or the drain
 * window closed). Returns 0, or -1 with errno from poll or waitid. */
static int supervise(struct run *r, uint64_t start) {
    const a3s_process_options *o = r->o;
    bool watch_cancel = (o->flags & A3S_PROCESS_CANCEL_FD) != 0;
    uint64_t timeout_at = o->timeout_ms ? a3s_after_ms(start, o->timeout_ms) : UINT64_MAX;
    uint64_t kill_at = UINT64_MAX, drain_at = UINT64_MAX;
    for (;;) {
        uint64_t now = a3s_now_ns();
        if (!r->exited) {
            if (!r->stopping && now >= timeout_at)
                begin_stop(r, A3S_RESULT_TIMED_OUT, now, &kill_at);
            if (r->stopping && !r->killed && now >= kill_at) {
                signal_group(r, SIGKILL);
                r->killed = true;
            }
        }
        if (r->exited && (now >= drain_at || (r->out.fd < 0 && r->err.fd < 0)))
            return 0;

        if (r->exited)
            a3s_stdin_feed_close(&r->feed); /* nobody is left to read it */
        struct pollfd pfd[7];
        int idx_out = -1, idx_err = -1, idx_rep = -1, idx_pid = -1, idx_cancel = -1, idx_in = -1;
        int idx_st = -1;
        nfds_t n = 0;
        if (r->out.fd >= 0)
            pfd[idx_out = (int)n++] = (struct pollfd){r->out.fd, POLLIN, 0};
        if (r->err.fd >= 0)
            pfd[idx_err = (int)n++] = (struct pollfd){r->err.fd, POLLIN, 0};
        if (r->report_p[0] >= 0)
            pfd[idx_rep = (int)n++] = (struct pollfd){r->report_p[0], POLLIN, 0};
        if (!r->exited && r->pidfd >= 0)
            pfd[idx_pid = (int)n++] = (struct pollfd){r->pidfd, POLLIN, 0};
        if (!r->exited && !r->stopping && watch_cancel)
            pfd[idx_cancel = (int)n++] = (struct pollfd){o->cancel_fd, POLLIN, 0};
        if (r->feed.fd >= 0)
            pfd[idx_in = (int)n++] = (struct pollfd){r->feed.fd, POLLOUT, 0};
        if (!r->exited && r->watch && r->watch->fd >= 0)
            pfd[idx_st = (int)n++] = (struct pollfd){r->watch->fd, POLLIN, 0};

        int wait_ms = -1;
        if (r->exited) {
            wait_ms = a3s_ms_until(now, drain_at);
        } else {
            if (r->pidfd < 0)
                wait_ms = WAIT_POLL_MS;
            if (!r->stopping && timeout_at != UINT64_MAX)
                wait_ms = wait_min(wait_ms, a3s_ms_until(now, timeout_at));
            if (r->stopping && !r->killed)
                wait_ms = wait_min(wait_ms, a3s_ms_until(now, kill_at));
        }
        int rc = poll(pfd, n, wait_ms);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0)
            return -1;

        if (idx_out >= 0 && pfd[idx_out].revents)
            a3s_capture_read(&r->out, r->buf);
        if (idx_err >= 0 && pfd[idx_err].revents)
            a3s_capture_read(&r->err, r->buf);
        if (idx_rep >= 0 && pfd[idx_rep].revents)
            read_report(r);
        if (idx_in >= 0 && pfd[idx_in].revents)
            a3s_stdin_feed_write(&r->feed);
        if (idx_cancel >= 0 && pfd[idx_cancel].revents)
            begin_stop(r, A3S_RESULT_CANCELLED, a3s_now_ns(), &kill_at);
        if (idx_st >= 0 && pfd[idx_st].revents) {
            if (!a3s_status_watch_read(r->watch))
                a3s_close_fd(&r->watch->fd); /* the init has ended: its exit comes by the pidfd */
            if (status_released(r->watch) && release_run(r, &drain_at) < 0)
                return -1;
        }
        if (!r->exited && (r->pidfd < 0 || (idx_pid >= 0 && pfd[idx_pid].revents))) {
            if (check_exit(r) < 0)
                return -1;
            if (r->exited)
                drain_at = a3s_after_ms(a3s_now_ns(), A3S_PROCESS_DRAIN_MS);
        }
    }
}

static void run_release(struct run *r) {
    a3s_close_fd(&r->out_p[0]);
    a3s_close_fd(&r->out_p[1]);
    a3s_close_fd(&r->err_p[0]);
    a3s_close_fd(&r->err_p[1]);
    a3s_close_fd(&r->report_p[0]);
    a3s_close_fd(&r->report_p[1]);
    a3s_close_fd(&r->plan.in);
    a3s_close_fd(&r->pidfd);
    a3s_stdin_feed_close(&r->feed);
    a3s_capture_release(&r->out);
    a3s_capture_release(&r->err);
    free(r->plan.argv);
    free(r->plan.envp);
    free(r->buf);
}

static const char *step_name(int32_t step) {
    switch (step) {
    case STEP_SETSID: return "setsid";
    case STEP_DUP2: return "dup2";
    case STEP_FDS: return "keep_fds";
    case STEP_CHDIR: return "chdir";
    case STEP_CGROUP: return "cgroup.procs";
    default: return "execve";
    }
}

int a3s_exec_report_fail(const struct a3s_exec_report *rep, const char *path, const char *cwd,
                         a3s_error *err) {
    char eb[128];
    const char *msg = a3s_errstr(rep->err, eb, sizeof eb);
    if (rep->step == STEP_EXECVE)
        return a3s_fail(err, A3S_E_SYSTEM, rep->err, 0, "execve %s: %s", path, msg);
    if (rep->step == STEP_CHDIR)
        return a3s_fail(err, A3S_E_SYSTEM, rep->err, 0, "chdir %s (for %s): %s",
                        cwd ? cwd : "?", path, msg);
    return a3s_fail(err, A3S_E_SYSTEM, rep->err, 0, "%s (for %s): %s", step_name(rep->step), path,
                    msg);
}

static int report_failure(const struct run *r, a3s_error *err) {
    return a3s_exec_report_fail(&r->report, r->o->path, r->o->cwd, err);
}

a3s_process_result *a3s_process_result_captured(struct a3s_capture *out, struct a3s_capture *err,
                                                int32_t exit_code, int32_t term_signal,
                                                uint64_t flags, uint64_t duration_us, int32_t pid,
                                                const char *setup_error) {
    a3s_process_result *res = calloc(1, sizeof *res);
    bool tout = false, terr = false;
    if (!res || out->oom || err->oom || !capture_finish(out, &res->out, &res->out_len, &tout) ||
        !capture_finish(err, &res->errout, &res->err_len, &terr) ||
        (setup_error && !(res->setup_error = strdup(setup_error)))) {
        a3s_process_result_free(res);
        return NULL;
    }
    res->exit_code = exit_code;
    res->term_signal = term_signal;
    res->flags = flags;
    if (tout)
        res->flags |= A3S_RESULT_STDOUT_TRUNCATED;
    if (terr)
        res->flags |= A3S_RESULT_STDERR_TRUNCATED;
    res->out_total = out->total;
    res->err_total = err->total;
    res->duration_us = duration_us;
    res->pid = pid;
    return res;
}

static int build_result(struct run *r, uint64_t start, a3s_process_result **out, a3s_error *err) {
    const siginfo_t *st = &r->status;
    int32_t code, sig = 0;
    if (st->si_code == CLD_EXITED) {
        code = st->si_status;
    } else {
        sig = st->si_status;
        code = 128 + st->si_status;
    }
    if (r->stop_flag)
        code = 124;
    a3s_process_result *res = a3s_process_result_captured(
        &r->out, &r->err, code, sig, r->stop_flag, (a3s_now_ns() - start) / 1000u, (int32_t)r->pid,
        NULL);
    if (!res)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory capturing the output of %s",
                        r->o->path);
    *out = res;
    return a3s_ok(err);
}

/* Opens everything the child needs; returns 0 or an A3S_E_* code. */
static int prepare(struct run *r, a3s_error *err) {
    const a3s_process_options *o = r->o;
    struct a3s_exec_plan *p = &r->plan;
    char eb[128];
    p->path = o->path;
    p->cwd = o->cwd;
    p->keep = o->keep_fds;
    p->nkeep = o->keep_fd_count;
    a3s_exec_plan_limits(p, (o->flags & A3S_PROCESS_PORTABLE) != 0);
    p->argv = string_array(o->argv, o->argc);
    p->envp = string_array(o->envp, o->envc);
    r->buf = malloc(READ_CHUNK);
    if (!p->argv || !p->envp || !r->buf)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory preparing %s", o->path);

    if (a3s_stdin_feed_open(&r->feed, r->in, &p->in) < 0)
        return a3s_fail(err, A3S_E_SYSTEM, errno, 0, "pipe for the standard input of %s: %s",
                        o->path, a3s_errstr(errno, eb, sizeof eb));
    if (p->in < 0)
        p->in = a3s_fd_above_stdio(open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (p->in < 0)
        return a3s_fail(err, A3S_E_SYSTEM, errno, 0, "open /dev/null: %s",
                        a3s_errstr(errno, eb, sizeof eb));
    if (a3s_pipe_above_stdio(r->out_p, 0) < 0 || a3s_pipe_above_stdio(r->err_p, 0) < 0 ||
        a3s_pipe_above_stdio(r->report_p, 0) < 0)
        return a3s_fail(err, A3S_E_SYSTEM, errno, 0, "pipe for %s: %s", o->path,
                        a3s_errstr(errno, eb, sizeof eb));
    if (a3s_set_nonblock(r->out_p[0]) < 0 || a3s_set_nonblock(r->err_p[0]) < 0 ||
        a3s_set_nonblock(r->report_p[0]) < 0)
        return a3s_fail(err, A3S_E_SYSTEM, errno, 0, "fcntl for %s: %s", o->path,
                        a3s_errstr(errno, eb, sizeof eb));
    p->out = r->out_p[1];
    p->err = r->err_p[1];
    p->report_w = r->report_p[1];

    /* The captures own the read ends from here on. */
    a3s_capture_init(&r->out, r->out_p[0], o->max_output_bytes);
    a3s_capture_init(&r->err, r->err_p[0], o->max_output_bytes);
    r->out_p[0] = r->err_p[0] = -1;
    return A3S_OK;
}

void a3s_exec_plan_limits(struct a3s_exec_plan *p, bool portable) {
    p->try_close_range = !portable;
    struct rlimit rl;
    p->brute_limit = BRUTE_FD_LIMIT;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < BRUTE_FD_LIMIT)
        p->brute_limit = (int)rl.rlim_cur;
}

#define SHARED_CHILD_STACK (64 * 1024)

/* AddressSanitizer cannot follow a child that runs on another stack in the
 * same memory (its shadow and its signal stack are the caller's): under it,
 * the child is a copy (fork), which behaves the same but for the cost. */
#if defined(__SANITIZE_ADDRESS__)
#  define SHARED_CHILD_COPIES 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define SHARED_CHILD_COPIES 1
#  endif
#endif
#ifndef SHARED_CHILD_COPIES
#  define SHARED_CHILD_COPIES 0
#endif

/* A copy of the caller (fork) costs time in proportion to the caller's memory:
 * for a Python host, more than the child's whole work. The child here shares
 * the caller's memory instead (CLONE_VM), on a stack of its own, and the caller
 * waits until it has exec'd or exited (CLONE_VFORK), as posix_spawn does. So the
 * child must write no memory of the caller's (errno aside, which the caller
 * does not read after a success); it has its own fd table, working directory,
 * signal dispositions and mask. Every signal is blocked in this thread first and
 * stays blocked in the child until it has reset the dispositions (the handlers
 * are the caller's, and would run on its memory). */
pid_t a3s_spawn_shared(int (*fn)(void *), void *arg) {
    if (SHARED_CHILD_COPIES) {
        sigset_t all, old;
        sigfillset(&all);
        int rc = pthread_sigmask(SIG_SETMASK, &all, &old);
        if (rc != 0) {
            errno = rc;
            return -1;
        }
        pid_t pid = fork();
        if (pid == 0)
            _exit(fn(arg));
        int e = errno;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        errno = e;
        return pid;
    }
    /* the stack, with a guard page below it: an overflow faults, never writes past */
    size_t guard = (size_t)sysconf(_SC_PAGESIZE);
    char *map = mmap(NULL, SHARED_CHILD_STACK + guard, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (map == MAP_FAILED)
        return -1;
    if (mprotect(map, guard, PROT_NONE) < 0) {
        int e = errno;
        munmap(map, SHARED_CHILD_STACK + guard);
        errno = e;
        return -1;
    }
    sigset_t all, old;
    sigfillset(&all);
    int rc = pthread_sigmask(SIG_SETMASK, &all, &old);
    if (rc != 0) {
        munmap(map, SHARED_CHILD_STACK + guard);
        errno = rc;
        return -1;
    }
    pid_t pid = clone(fn, map + guard + SHARED_CHILD_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, arg);
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    munmap(map, SHARED_CHILD_STACK + guard); /* the child has exec'd or exited */
    errno = e;
    return pid;
}

static int child_main(void *arg) {
    child_exec(arg);
}

pid_t a3s_exec_fork(const struct a3s_exec_plan *p) {
    return a3s_spawn_shared(child_main, (void *)p);
}

static int spawn(struct run *r, a3s_error *err) {
    char eb[128];
    pid_t pid = a3s_exec_fork(&r->plan);
    int e = errno;
    if (pid < 0)
        return a3s_fail(err, A3S_E_SYSTEM, e, 0, "fork for %s: %s", r->o->path,
                        a3s_errstr(e, eb, sizeof eb));
    r->pid = pid;
    /* The parent keeps only the read ends. */
    a3s_close_fd(&r->out_p[1]);
    a3s_close_fd(&r->err_p[1]);
    a3s_close_fd(&r->report_p[1]);
    a3s_close_fd(&r->plan.in);
#ifdef SYS_pidfd_open
    if (!(r->o->flags & A3S_PROCESS_PORTABLE))
        r->pidfd = (int)syscall(SYS_pidfd_open, pid, 0); /* -1: poll waitid instead */
#endif
    return A3S_OK;
}

static int run_process(const a3s_process_options *opts, int exec_fd, const struct a3s_cgroup *cg,
                       const struct a3s_output_sink *sink, const struct a3s_stdin_bytes *in,
                       struct a3s_status_watch *watch, a3s_process_result **out,
                       bool *join_refused, a3s_error *err);

A3S_API int a3s_process_run(const a3s_process_options *opts, a3s_process_result **out,
                            a3s_error *err) {
    return run_process(opts, -1, NULL, NULL, NULL, NULL, out, NULL, err);
}

int a3s_process_run_in_cgroup(const a3s_process_options *opts, const struct a3s_cgroup *cg,
                              const struct a3s_output_sink *sink,
                              const struct a3s_stdin_bytes *in, struct a3s_status_watch *watch,
                              a3s_process_result **out, bool *join_refused, a3s_error *err) {
    return run_process(opts, -1, cg, sink, in, watch, out, join_refused, err);
}

int a3s_process_run_fd_in_cgroup(const a3s_process_options *opts, int exec_fd,
                                 const struct a3s_cgroup *cg, const struct a3s_output_sink *sink,
                                 const struct a3s_stdin_bytes *in,
                                 struct a3s_status_watch *watch, a3s_process_result **out,
                                 bool *join_refused, a3s_error *err) {
    return run_process(opts, exec_fd, cg, sink, in, watch, out, join_refused, err);
}

static int run_process(const a3s_process_options *opts, int exec_fd, const struct a3s_cgroup *cg,
                       const struct a3s_output_sink *sink, const struct a3s_stdin_bytes *in,
                       struct a3s_status_watch *watch, a3s_process_result **out,
                       bool *join_refused, a3s_error *err) {
    if (out)
        *out = NULL;
    if (join_refused)
        *join_refused = false;
    if (!opts || !out || opts->struct_size < sizeof(a3s_process_options))
        return a3s_fail(err, A3S_E_INVALID, 0, 0,
                        "a3s_process_run: NULL argument or too small struct");
    int rc = check_options(opts, err);
    if (rc != A3S_OK)
        return rc;

    struct run r;
    memset(&r, 0, sizeof r);
    r.o = opts;
    r.out_p[0] = r.out_p[1] = r.err_p[0] = r.err_p[1] = -1;
    r.report_p[0] = r.report_p[1] = r.plan.in = r.pidfd = -1;
    r.out.fd = r.err.fd = -1;
    r.in = in;
    r.feed.fd = -1;
    r.watch = watch;
    r.plan.cgroup = cg;
    r.plan.by_fd = exec_fd >= 0;
    r.plan.exec_fd = exec_fd;
    rc = prepare(&r, err);
    if (rc == A3S_OK) {
        a3s_capture_sink(&r.out, sink, 1);
        a3s_capture_sink(&r.err, sink, 2);
    }
    uint64_t start = a3s_now_ns();
    if (rc == A3S_OK)
        rc = spawn(&r, err);
    if (rc != A3S_OK) {
        run_release(&r);
        return rc;
    }
    if (supervise(&r, start) < 0) {
        int e = errno;
        char eb[128];
        if (e == ECHILD)
            r.exited = true; /* the pid may be reused already: signal nothing */
        abandon_child(&r);
        run_release(&r);
        if (e == ECHILD)
            return a3s_fail(err, A3S_E_SYSTEM, e, 0,
                            "waitid %d (%s): the child was reaped by someone else", (int)r.pid,
                            opts->path);
        return a3s_fail(err, A3S_E_SYSTEM, e, 0, "waiting for %s: %s", opts->path,
                        a3s_errstr(e, eb, sizeof eb));
    }
    rc = r.reported ? report_failure(&r, err) : build_result(&r, start, out, err);
    if (r.reported && r.report.step == STEP_CGROUP && join_refused)
        *join_refused = true;
    run_release(&r);
    return rc;
}

/* struct_size versioning of the view: fields are only appended, and a
 * caller built before `neutralized` existed passes the view up to it. Any
 * other size short of the current struct is no version's: refused. */
#define VIEW_V1_SIZE offsetof(a3s_process_result_view, neutralized)
#define VIEW_V2_SIZE offsetof(a3s_process_result_view, exec_stop_list)
#define VIEW_HOLDS(v, field)                                                                   \
    ((v)->struct_size >= offsetof(a3s_process_result_view, field) + sizeof((v)->field))

A3S_API int a3s_process_result_get(const a3s_process_result *r, a3s_process_result_view *out,
                                   a3s_error *err) {
    if (!r || !out ||
        (out->struct_size < sizeof(a3s_process_result_view) && out->struct_size != VIEW_V1_SIZE &&
         out->struct_size != VIEW_V2_SIZE))
        return a3s_fail(err, A3S_E_INVALID, 0, 0,
                        "a3s_process_result_get: NULL argument or small view");
    out->exit_code = r->exit_code;
    out->term_signal = r->term_signal;
    out->flags = r->flags;
    out->stdout_data = r->out;
    out->stdout_len = r->out_len;
    out->stderr_data = r->errout;
    out->stderr_len = r->err_len;
    out->stdout_total = r->out_total;
    out->stderr_total = r->err_total;
    out->duration_us = r->duration_us;
    out->pid = r->pid;
    out->setup_error = r->setup_error;
    if (VIEW_HOLDS(out, neutralized)) /* nothing past the caller's struct is written */
        out->neutralized = r->neutralized;
    if (VIEW_HOLDS(out, exec_stop_command)) {
        out->exec_stop_list = r->exec_stop_list;
        out->exec_stop_rule = r->exec_stop_rule;
        out->exec_stop_command = r->exec_stop_command;
    }
    return a3s_ok(err);
}

A3S_API void a3s_process_result_free(a3s_process_result *r) {
    if (!r)
        return;
    free(r->out);
    free(r->errout);
    free(r->setup_error);
    free(r->neutralized);
    free(r->exec_stop_rule);
    free(r->exec_stop_command);
    free(r);
}

/* ---- results shaped by the layer above (internal, not exported) -------- */

/* A result for a run that never started: no process, empty outputs, the
 * given status, flags and setup_error (copied; may be NULL). NULL if out of
 * memory. The sandbox layer uses it for refusals and setup failures. */
a3s_process_result *a3s_process_result_synthetic(int32_t exit_code, uint64_t flags,
                                                 const char *setup_error) {
    a3s_process_result *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->out = calloc(1, 1);
    r->errout = calloc(1, 1);
    r->setup_error = setup_error ? strdup(setup_error) : NULL;
    if (!r->out || !r->errout || (setup_error && !r->setup_error)) {
        a3s_process_result_free(r);
        return NULL;
    }
    r->exit_code = exit_code;
    r->flags = flags;
    return r;
}

/* Rewrites the outcome of a finished run when the layer above knows better
 * (e.g. its init reported a timeout): sets exit_code and term_signal, adds
 * flags (the truncation flags stay), and replaces setup_error when it is
 * non-NULL. A3S_OK, or A3S_E_INVALID / A3S_E_NOMEM (r unchanged). */
int a3s_process_result_override(a3s_process_result *r, int32_t exit_code, int32_t term_signal,
                                uint64_t flags, const char *setup_error) {
    if (!r)
        return A3S_E_INVALID;
    if (setup_error) {
        char *copy = strdup(setup_error);
        if (!copy)
            return A3S_E_NOMEM;
        free(r->setup_error);
        r->setup_error = copy;
    }
    r->exit_code = exit_code;
    r->term_signal = term_signal;
    r->flags |= flags;
    return A3S_OK;
}

void a3s_process_result_set_duration(a3s_process_result *r, uint64_t duration_us) {
    if (r)
        r->duration_us = duration_us;
}

int a3s_process_result_set_neutralized(a3s_process_result *r, const char *text) {
    char *copy = text ? strdup(text) : NULL;
    if (!r || (text && !copy)) {
        free(copy);
        return r ? A3S_E_NOMEM : A3S_E_INVALID;
    }
    free(r->neutralized);
    r->neutralized = copy;
    return A3S_OK;
}

int a3s_process_result_set_exec_stop(a3s_process_result *r, int32_t list, const char *rule,
                                     const char *command) {
    char *rc = rule ? strdup(rule) : NULL, *cc = command ? strdup(command) : NULL;
    if (!r || (rule && !rc) || (command && !cc)) {
        free(rc);
        free(cc);
        return r ? A3S_E_NOMEM : A3S_E_INVALID;
    }
    free(r->exec_stop_rule);
    free(r->exec_stop_command);
    r->exec_stop_list = list;
    r->exec_stop_rule = rc;
    r->exec_stop_command = cc;
    return A3S_OK;
}

void a3s_process_result_add_flags(a3s_process_result *r, uint64_t flags) {
    if (r)
        r->flags |= flags;
}

#endif /* __linux__ */
