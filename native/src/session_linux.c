/* session_linux.c - the long-lived sandbox of a handle (A3S_SANDBOX_REUSE).
 *
 * One bubblewrap sandbox per handle, built from the same plan as a one-shot
 * run, with a3s-init as PID 1 in server mode; each command is one request
 * on a control socket (session_msg.h) and one fork inside, so it costs a
 * fork, Landlock, seccomp and the exec of bash instead of a new set of
 * namespaces and a hundred mounts.
 *
 *  - Start: the plan is built (placeholders, masks, the workspace lock held
 *    for the sandbox's lifetime), then bubblewrap is started detached from
 *    the caller's process tree (an intermediate child starts it and exits),
 *    so the caller keeps no child between commands and no thread's exit
 *    can take the sandbox down; a pidfd follows it. The init's lifeline
 *    pipe, whose write end only the caller holds, ties it to the caller:
 *    when the caller dies the sandbox dies. The start waits for READY.
 *  - Once READY, bubblewrap is retired: past the set-up it only waits for
 *    its child, and it held most of an idle sandbox's memory (its libc
 *    and heap, about 2 MiB RSS, against the init's 0.3 MiB). The init is
 *    found as its only child and followed by a pidfd of its own, checked
 *    while bubblewrap still lives; bubblewrap is killed; from then on the
 *    sandbox is its PID 1, whose death takes the whole pid namespace. The
 *    init dropped its parent-death signal just before READY, so only the
 *    lifeline and the caller's pidfd (both watched by the init) tie it to
 *    the caller, as they did already.
 *  - Before each command: the plan must still be current (a3s_plan_current:
 *    a host-side edit that replaced a protected file, a placeholder, a mask
 *    target or the workspace would have detached its bind in the
 *    sandbox); otherwise the sandbox is stopped and a new one built.
 *  - A command: stdout and stderr pipes go with the request (SCM_RIGHTS);
 *    both are drained here with the same head/tail capture as a one-shot
 *    run while the init runs the command, enforces its timeout, takes every
 *    process of the namespace down when it ends and cleans up, then reports
 *    DONE. A cancel becomes a CANCEL request; if the init does not answer
 *    in time (timeout + grace + 3 s), the sandbox is killed.
 *  - Stop: SHUTDOWN, the lifeline closed, the pidfd waited on (SIGKILL if
 *    it lingers), then the placeholders, the lock and the run directory go.
 *  - Idle stop: a thread of the handle (started with each sandbox)
 *    stops a sandbox that ran no command for idle_stop_ms, so an idle
 *    session holds no processes, placeholders, descriptors or watches; the
 *    next command starts a new one. It only ever takes the session lock
 *    with trylock: a command running (or starting) is never disturbed.
 *
 * The handle's session_lock makes it one command at a time; callers that
 * find it busy run one-shot (sandbox_linux.c).
 */
#define _GNU_SOURCE
#include "a3s/a3s.h"

#if defined(__linux__)

#include "cgroup_linux.h"
#include "child_internal.h"
#include "credscan.h"
#include "env.h"
#include "exec_match.h"
#include "internal.h"
#include "posix_util.h"
#include "process_internal.h"
#include "sandbox_internal.h"
#include "session_msg.h"
#include "strvec.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define START_TIMEOUT_MS 30000 /* bubblewrap and the init to READY */
#define MSG_TIMEOUT_MS 5000    /* between the packets of one message; room to send */
#define STOP_WAIT_MS 2000      /* for the sandbox to go after SHUTDOWN, then after SIGKILL */
#define SURVIVED_DRAIN_MS 20   /* the output already written, when the pipes cannot close */
#define BACKSTOP_MS 3000       /* past timeout + grace, the init is presumed stuck */
#define MAX_START_FAILURES 3   /* starts in a row that fail before a handle goes one-shot */

struct a3s_session {
    pid_t owner;  /* the process that started it: a forked copy must not drive it */
    pid_t pid;    /* bubblewrap until READY, then the init; not our child */
    int pidfd;    /* follows pid */
    bool retired; /* bubblewrap is gone: pid is the init */
    bool abandon; /* a process of it cannot be reaped: its end is not waited for */
    int ctl;      /* our end of the control socket */
    int lifeline; /* write end; the init watches the read end */
    int errfd;    /* bubblewrap's stdout and stderr, read if the start fails */
    uint64_t seq; /* commands sent */
    struct plan plan;
    struct a3s_cgroup cg; /* the sandbox's own, where the caller may make one */
};

/* ---- starting bubblewrap, detached ------------------------------------------ */

/* In the intermediate child (a fork of a possibly multi-threaded caller):
 * only async-signal-safe calls. It prepares the process state bubblewrap
 * inherits, starts it with a raw clone (no atfork handlers), reports its
 * pid and waits until the caller has a pidfd on it: until then the pid
 * cannot be reused, since it is our unreaped child at worst.
 *
 * It never execs, so close-on-exec protects nothing here: it closes every
 * descriptor but its own and the sandbox's at once. Another thread's start
 * forks an intermediate of its own at any moment; were each to hold the
 * other's pipes, each would wait for an end of file the other prevents.
 * It dies with the caller's thread that forked it (a parent-death signal:
 * that thread waits in spawn() until this process is reaped) and, should
 * that race the caller's death, with the end of the go pipe. */
/* the control socket, the lifeline, the caller's pidfd, two bind fds, the init image's read fd,
 * the janitor's pipe, an embedded init's fd */
#define MAX_KEEP 8
/* The intermediate reports a pid, -errno, or this minus errno when bubblewrap
 * could not be started in the sandbox's cgroup (see a3s_sandbox_cgroup). */
#define REPORT_JOIN_FAILED (-65536)

struct intermediate_plan {
    char *const *argv;
    int devnull, out; /* become 0, and 1 and 2 */
    const int *keep;  /* for bubblewrap and the init */
    size_t nkeep;
    const struct a3s_cgroup *cg;
    int report, go;  /* the pid (or -errno) goes out; the caller's word comes in */
    pid_t parent;    /* the caller */
    int brute_limit; /* a3s_close_fds_except's last resort */
};

static _Noreturn void intermediate(const struct intermediate_plan *ip) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            sigaction(s, &dfl, NULL);
    int32_t msg = -1;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != ip->parent)
        _exit(1); /* the caller is gone already */
    if (setsid() < 0 || dup2(ip->devnull, 0) < 0 || dup2(ip->out, 1) < 0 ||
        dup2(ip->out, 2) < 0 || chdir("/") < 0)
        goto fail;
    int own[2 + A3S_CGROUP_MAX_DIRS];
    size_t nown = 0;
    own[nown++] = ip->report;
    own[nown++] = ip->go;
    for (size_t i = 0; i < ip->cg->ndirs; i++)
        own[nown++] = ip->cg->procs_fd[i];
    a3s_close_fds_except(ip->keep, ip->nkeep, own, nown, true, ip->brute_limit);
    /* bubblewrap inherits the kept ones; ours are close-on-exec from birth */
    for (size_t i = 0; i < ip->nkeep; i++)
        if (fcntl(ip->keep[i], F_SETFD, 0) < 0)
            goto fail;
    int joined = a3s_cgroup_join(ip->cg); /* bubblewrap and the whole sandbox start in it */
    if (joined < 0) {
        msg = REPORT_JOIN_FAILED + joined;
        if (write(ip->report, &msg, sizeof msg) < 0) {
        }
        _exit(1);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    char *const empty_env[] = {NULL};
    long pid = syscall(SYS_clone, (unsigned long)SIGCHLD, 0UL, 0UL, 0UL, 0UL);
    if (pid == 0) {
        execve(ip->argv[0], ip->argv, empty_env);
        _exit(127);
    }
    if (pid < 0)
        goto fail;
    msg = (int32_t)pid;
    if (write(ip->report, &msg, sizeof msg) == (ssize_t)sizeof msg) {
        char c;
        while (read(ip->go, &c, 1) < 0 && errno == EINTR) {
        }
        _exit(0);
    }
fail:
    msg = -errno;
    if (write(ip->report, &msg, sizeof msg) < 0) {
    }
    _exit(1);
}

/* Waits for the intermediate's report until `by` (or a cancel on one of
 * the two fds, -1: none). The bytes read, or -ETIMEDOUT / -ECANCELED. */
static ssize_t read_report(int fd, int32_t *msg, uint64_t by, int cancel_fd, int wake_fd) {
    for (;;) {
        struct pollfd p[3] = {{.fd = fd, .events = POLLIN},
                              {.fd = cancel_fd, .events = POLLIN},
                              {.fd = wake_fd, .events = POLLIN}};
        int n = poll(p, 3, a3s_ms_until(a3s_now_ns(), by));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (p[0].revents) {
            ssize_t r;
            do
                r = read(fd, msg, sizeof *msg);
            while (r < 0 && errno == EINTR);
            return r < 0 ? 0 : r;
        }
        if (n == 0)
            return -ETIMEDOUT;
        return -ECANCELED;
    }
}

/* Starts argv[0] detached; s->pid and s->pidfd on success. 1 when this
 * kernel has no pidfd_open (the caller then runs one-shot). *join_refused:
 * it failed because bubblewrap could not be started in the cgroup. The
 * wait is bounded by `by` and the cancel fds: then A3S_E_SYSTEM with
 * ETIMEDOUT or ECANCELED, and the intermediate is killed (bubblewrap, if
 * it got that far, ends with the lifeline its caller closes). */
static int spawn(struct a3s_session *s, char *const *argv, const int *keep, size_t nkeep,
                 int out, uint64_t by, int cancel_fd, int wake_fd, bool *join_refused,
                 a3s_error *err) {
    int report[2] = {-1, -1}, go[2] = {-1, -1};
    int devnull = a3s_fd_above_stdio(open("/dev/null", O_RDWR | O_CLOEXEC));
    if (devnull < 0 || a3s_pipe_above_stdio(report, 0) < 0 || a3s_pipe_above_stdio(go, 0) < 0) {
        int e = errno;
        a3s_close_fd(&devnull);
        a3s_close_fd(&report[0]);
        a3s_close_fd(&report[1]);
        return a3s_fail(err, A3S_E_SYSTEM, e, 0, "cannot start the sandbox: %s", strerror(e));
    }
    struct intermediate_plan ip = {.argv = argv, .devnull = devnull, .out = out, .keep = keep,
                                   .nkeep = nkeep, .cg = &s->cg, .report = report[1],
                                   .go = go[0], .parent = getpid()};
    struct a3s_exec_plan limits = {0};
    a3s_exec_plan_limits(&limits, false);
    ip.brute_limit = limits.brute_limit;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t mid = fork();
    if (mid == 0)
        intermediate(&ip);
    int e = errno;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    close(devnull);
    close(report[1]);
    close(go[0]);
    if (mid < 0) {
        close(report[0]);
        close(go[1]);
        return a3s_fail(err, A3S_E_SYSTEM, e, 0, "fork: %s", strerror(e));
    }
    int32_t msg = 0;
    ssize_t n = read_report(report[0], &msg, by, cancel_fd, wake_fd);
    close(report[0]);
    int rc = A3S_OK;
    if (n == -ETIMEDOUT || n == -ECANCELED) {
        e = (int)-n;
        rc = a3s_fail(err, A3S_E_SYSTEM, e, 0, "the sandbox's start %s",
                      e == ETIMEDOUT ? "took the command's time" : "was cancelled");
    } else if (n == (ssize_t)sizeof msg && msg <= REPORT_JOIN_FAILED) {
        e = REPORT_JOIN_FAILED - msg;
        *join_refused = true;
        rc = a3s_fail(err, A3S_E_SYSTEM, e, 0, "cannot move %s into its cgroup: %s", argv[0],
                      strerror(e));
    } else if (n != (ssize_t)sizeof msg || msg <= 0) {
        e = n == (ssize_t)sizeof msg ? -msg : EIO;
        rc = a3s_fail(err, A3S_E_SYSTEM, e, 0, "cannot start %s: %s", argv[0], strerror(e));
    } else {
        s->pid = (pid_t)msg;
        s->pidfd = (int)syscall(SYS_pidfd_open, s->pid, 0);
        s->pidfd = a3s_fd_above_stdio(s->pidfd);
        if (s->pidfd < 0) {
            kill(s->pid, SIGKILL); /* still the intermediate's child: the pid is ours */
            s->pid = 0;
            rc = 1;
        }
    }
    /* The intermediate has done its part (or failed, or is too late): it
     * goes now. It is our unreaped child, so the signal reaches it and the
     * wait is bounded whatever state it is in. */
    close(go[1]);
    kill(mid, SIGKILL);
    int st;
    while (waitpid(mid, &st, 0) < 0 && errno == EINTR) {
    }
    return rc;
}

/* ---- lifetime ----------------------------------------------------------------- */

static bool alive(const struct a3s_session *s) {
    struct pollfd p[2] = {{.fd = s->ctl, .events = POLLIN}, {.fd = s->pidfd, .events = POLLIN}};
    int rc;
    do
        rc = poll(p, 2, 0);
    while (rc < 0 && errno == EINTR);
    /* idle, nothing may arrive: a message or a hang-up means the init is gone */
    return rc == 0;
}

/* Kills the sandbox: its PID 1, whose death takes the whole namespace.
 * Before READY that is bubblewrap's child: the real init also dies with
 * bubblewrap then (its parent-death signal), but an init that is not ours,
 * or is stuck, must not survive a stop. It is found as bubblewrap's child
 * and only signalled once known to be that child while bubblewrap still
 * lives (so its pid cannot have been reused). */
static void kill_now(struct a3s_session *s) {
    if (s->pidfd < 0)
        return;
    if (!s->retired)
        a3s_signal_children(s->pid, s->pidfd, SIGKILL);
    syscall(SYS_pidfd_send_signal, s->pidfd, SIGKILL, NULL, 0);
}

/* After READY: follows the init instead of bubblewrap, and ends bubblewrap
 * (see the top of this file). False if the init cannot be followed, which
 * ends the start like any other failure. */
static bool retire_bubblewrap(struct a3s_session *s) {
    pid_t init = 0;
    int fd = a3s_only_child_pidfd(s->pid, s->pidfd, &init);
    if (fd < 0)
        return false;
    if (syscall(SYS_pidfd_send_signal, s->pidfd, SIGKILL, NULL, 0) < 0 ||
        !a3s_readable(s->pidfd, STOP_WAIT_MS) || a3s_readable(fd, 0)) {
        syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0); /* ours: checked above */
        close(fd);
        return false;
    }
    close(s->pidfd);
    s->pidfd = fd;
    s->pid = init;
    s->retired = true;
    return true;
}

/* Ends the sandbox and releases its plan. A copy inherited through fork
 * only closes its fds: the sandbox, its placeholders and its lock belong
 * to the process that started it. */
static void session_end(a3s_sandbox *sb, struct a3s_session *s) {
    if (s->owner == getpid()) {
        if (s->ctl >= 0) {
            uint8_t b[A3S_MSG_HEADER];
            a3s_msg_send(s->ctl, b, a3s_msg_encode_empty(A3S_MSG_SHUTDOWN, b), NULL, 0, 0);
        }
        a3s_close_fd(&s->ctl);
        a3s_close_fd(&s->lifeline); /* the init also stops on this alone */
        /* a PID 1 whose namespace holds a process in uninterruptible sleep
         * cannot finish exiting until that process wakes: killed at once, not
         * awaited (the caller's result says OUTLIVED; the process dies as it
         * wakes), so the result is not held back (the timeout's bound) */
        if (s->abandon)
            kill_now(s);
        else if (s->pidfd >= 0 && !a3s_readable(s->pidfd, STOP_WAIT_MS)) {
            kill_now(s);
            a3s_readable(s->pidfd, STOP_WAIT_MS);
        }
        a3s_plan_release(sb, &s->plan);
        if (s->abandon)
            a3s_cgroup_abandon(&s->cg);
        else
            a3s_cgroup_destroy(&s->cg);
    } else {
        a3s_plan_forget(&s->plan); /* nothing of the parent's is removed here */
        a3s_cgroup_forget(&s->cg);
    }
    a3s_close_fd(&s->ctl);
    a3s_close_fd(&s->lifeline);
    a3s_close_fd(&s->pidfd);
    a3s_close_fd(&s->errfd);
    free(s);
}

static void stop_locked(a3s_sandbox *sb) {
    struct a3s_session *s = sb->session;
    if (!s)
        return;
    sb->session = NULL;
    atomic_store(&sb->session_pid, 0);
    session_end(sb, s);
}

void a3s_session_stop(a3s_sandbox *sb) {
    pthread_mutex_lock(&sb->session_lock);
    stop_locked(sb);
    pthread_mutex_unlock(&sb->session_lock);
}

/* ---- idle stop ------------------------------------------------------------------- */

/* Stops the sandbox if it is still idle, and releases what close() does
 * (a3s_sandbox_stop): the credential scan's watches and inotify instance
 * (the thread itself ends in idle_main). */
static void idle_stop_now(a3s_sandbox *sb) {
    /* never wait for a command: a busy handle is not idle */
    if (pthread_mutex_trylock(&sb->session_lock) != 0)
        return;
    uint64_t idle_ns = sb->idle_stop_ms * 1000000u;
    if (sb->session && sb->session->owner == getpid() &&
        a3s_now_ns() - atomic_load(&sb->last_used_ns) >= idle_ns) {
        stop_locked(sb);
        if (sb->creator == getpid()) { /* see a3s_sandbox_stop */
            pthread_mutex_lock(&sb->lock);
            a3s_credscan_release(sb->creds);
            pthread_mutex_unlock(&sb->lock);
        }
    }
    pthread_mutex_unlock(&sb->session_lock);
}

/* The thread: sleeps until the sandbox has been idle for idle_stop_ms and
 * stops it. With no sandbox left it ends (marked idle_exited, under the
 * idle lock, so a start either finds it still serving or joins it and
 * makes another): a stopped handle holds no thread. */
static void *idle_main(void *arg) {
    a3s_sandbox *sb = arg;
    pthread_mutex_lock(&sb->idle_lock);
    while (!sb->idle_quit) {
        if (!atomic_load(&sb->session_pid))
            break;
        uint64_t due = a3s_after_ms(atomic_load(&sb->last_used_ns), sb->idle_stop_ms);
        uint64_t now = a3s_now_ns();
        if (now < due) {
            struct timespec at = {.tv_sec = (time_t)(due / 1000000000u),
                                  .tv_nsec = (long)(due % 1000000000u)};
            pthread_cond_timedwait(&sb->idle_wake, &sb->idle_lock, &at);
            continue;
        }
        pthread_mutex_unlock(&sb->idle_lock);
        idle_stop_now(sb);
        pthread_mutex_lock(&sb->idle_lock);
        if (atomic_load(&sb->session_pid) && !sb->idle_quit) {
            /* busy (a long command, or one starting): look again a period later */
            struct timespec at;
            uint64_t again = a3s_after_ms(a3s_now_ns(), sb->idle_stop_ms);
            at.tv_sec = (time_t)(again / 1000000000u);
            at.tv_nsec = (long)(again % 1000000000u);
            pthread_cond_timedwait(&sb->idle_wake, &sb->idle_lock, &at);
        }
    }
    sb->idle_exited = true;
    pthread_mutex_unlock(&sb->idle_lock);
    return NULL;
}

/* A sandbox just started: make sure the handle's idle thread runs (in this
 * process; a forked copy never stops its parent's sandbox) and knows. */
static void idle_arm(a3s_sandbox *sb) {
    if (sb->idle_stop_ms == UINT64_MAX)
        return;
    atomic_store(&sb->last_used_ns, a3s_now_ns());
    pthread_mutex_lock(&sb->idle_lock);
    if (sb->idle_owner == getpid() && sb->idle_exited) {
        /* it ended after an idle stop (it marks that last, under this lock) */
        pthread_join(sb->idle_thread, NULL);
        sb->idle_owner = 0;
    }
    if (sb->idle_owner != getpid()) {
        sb->idle_exited = false;
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old); /* signals stay with the caller's threads */
        if (pthread_create(&sb->idle_thread, NULL, idle_main, sb) == 0)
            sb->idle_owner = getpid();
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    pthread_cond_signal(&sb->idle_wake);
    pthread_mutex_unlock(&sb->idle_lock);
}

void a3s_session_idle_end(a3s_sandbox *sb) {
    pthread_mutex_lock(&sb->idle_lock);
    bool ours = sb->idle_owner == getpid();
    sb->idle_quit = true;
    pthread_cond_signal(&sb->idle_wake);
    pthread_mutex_unlock(&sb->idle_lock);
    if (ours)
        pthread_join(sb->idle_thread, NULL);
}

/* Ends this process's idle thread and lets the next start make a new one. */
static void idle_release(a3s_sandbox *sb) {
    pthread_mutex_lock(&sb->idle_lock);
    bool ours = sb->idle_owner == getpid();
    if (ours) {
        sb->idle_quit = true;
        pthread_cond_signal(&sb->idle_wake);
    }
    pthread_mutex_unlock(&sb->idle_lock);
    if (!ours)
        return;
    pthread_join(sb->idle_thread, NULL);
    pthread_mutex_lock(&sb->idle_lock);
    sb->idle_quit = false;
    sb->idle_exited = false;
    sb->idle_owner = 0;
    pthread_mutex_unlock(&sb->idle_lock);
}

/* The first line bubblewrap (or the init) wrote, for a start that failed. */
static void start_message(int fd, char *out, size_t cap) {
    char buf[1024];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    out[0] = '\0';
    if (n <= 0)
        return;
    buf[n] = '\0';
    const char *s = strstr(buf, "bwrap: ");
    if (!s)
        s = buf;
    snprintf(out, cap, "%.*s", (int)strcspn(s, "\n"), s);
}

/* Why a start or a run could not happen: the command's result is then 125. */
struct failure {
    uint64_t flags; /* A3S_RESULT_SETUP_FAILED, or _CANCELLED for a cancel during the start */
    bool fallback;  /* the plan held but the sandbox did not come up: try one-shot */
    char message[A3S_MSG_TEXT_MAX];
};

/* Builds and starts a new sandbox and waits for READY. A3S_OK with
 * sb->session set; A3S_OK with f->flags set when it could not start (or
 * was cancelled); 1 without pidfd; another code for the caller's errors. */
static int session_start(a3s_sandbox *sb, const a3s_exec_options *o, uint64_t deadline,
                         struct failure *f, a3s_error *err) {
    struct a3s_session *s = calloc(1, sizeof *s);
    if (!s)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory");
    s->owner = getpid();
    s->ctl = s->lifeline = s->pidfd = s->errfd = -1;
    a3s_plan_init(&s->plan);
    /* a session whose first command has exec rules has them with every command (the
     * policy's): its init then checks each exec at its notification, cheaper than
     * tracing every fork, which a session without them would pay for nothing */
    s->plan.exec_notify = a3s_exec_options_trace(o);
    /* planning counts against the command's time and its cancel */
    s->plan.deadline = deadline;
    s->plan.cancel_fd = (o->flags & A3S_EXEC_CANCEL_FD) ? o->cancel_fd : -1;
    a3s_cgroup_init(&s->cg);
    int sp[2] = {-1, -1}, life[2] = {-1, -1}, out[2] = {-1, -1};
    int rc = A3S_OK;
    /* the init also watches this process itself: no pidfd, no long-lived sandbox */
    int self = a3s_fd_above_stdio((int)syscall(SYS_pidfd_open, getpid(), 0));
    if (self < 0) {
        free(s);
        atomic_store(&sb->one_shot_only, true);
        return 1;
    }
    if (fcntl(self, F_SETFD, FD_CLOEXEC) < 0 ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0 ||
        (sp[0] = a3s_fd_above_stdio(sp[0])) < 0 || (sp[1] = a3s_fd_above_stdio(sp[1])) < 0 ||
        a3s_pipe_above_stdio(life, 0) < 0 || a3s_pipe_above_stdio(out, 0) < 0 || a3s_set_nonblock(out[0]) < 0) {
        int e = errno;
        for (int i = 0; i < 2; i++) {
            a3s_close_fd(&sp[i]);
            a3s_close_fd(&life[i]);
            a3s_close_fd(&out[i]);
        }
        a3s_close_fd(&self);
        free(s);
        return a3s_fail(err, A3S_E_SYSTEM, e, 0, "cannot start the sandbox: %s", strerror(e));
    }
    s->ctl = sp[0];
    s->lifeline = life[1];
    s->errfd = out[0];
    struct plan_fds fds = {
        .status_fd = -1, .lifeline_fd = life[0], .control_fd = sp[1], .host_pidfd = self};
    a3s_error perr = {0};
    a3s_sandbox_cgroup(sb, &s->cg);
    s->plan.memory_cgroup = s->cg.memory;
    rc = a3s_plan_build(sb, NULL, &s->plan, &fds, &perr);
    bool planned = rc == A3S_OK;
    bool join_refused = false;
    s->plan.cancel_fd = -1; /* the caller's fd: not to be kept past this call */
    if (planned) {
        int keep[MAX_KEEP] = {sp[1], life[0], self};
        size_t nkeep = 3;
        for (size_t i = 0; i < sizeof s->plan.bind_fds / sizeof *s->plan.bind_fds; i++)
            if (s->plan.bind_fds[i] >= 0 && nkeep < MAX_KEEP)
                keep[nkeep++] = s->plan.bind_fds[i];
        if (sb->init_fd >= 0) /* bubblewrap binds an embedded init from it */
            keep[nkeep++] = sb->init_fd;
        uint64_t by = a3s_after_ms(a3s_now_ns(), START_TIMEOUT_MS);
        if (deadline && deadline < by)
            by = deadline;
        rc = spawn(s, s->plan.argv.items, keep, nkeep, out[1], by,
                   (o->flags & A3S_EXEC_CANCEL_FD) ? o->cancel_fd : -1, sb->wake[0],
                   &join_refused, &perr);
        /* bubblewrap has them now (it binds from /proc/self/fd and the init
         * marks them close-on-exec): the sandbox must not hold the host's
         * open directories */
        for (size_t i = 0; i < sizeof s->plan.bind_fds / sizeof *s->plan.bind_fds; i++)
            a3s_close_fd(&s->plan.bind_fds[i]);
    }
    close(sp[1]);
    close(life[0]);
    close(out[1]);
    close(self);
    if (rc != A3S_OK) {
        if (join_refused) /* the fallback (one-shot) and later starts go without */
            atomic_store(&sb->cgroups_refused, true);
        session_end(sb, s);
        if (rc == 1) {
            atomic_store(&sb->one_shot_only, true); /* no pidfd_open on this kernel */
            return 1;
        }
        if (perr.code != A3S_E_REFUSED && perr.code != A3S_E_SYSTEM) {
            if (err)
                *err = perr;
            return rc;
        }
        /* planning, or the start, took the command's time or was cancelled */
        bool stopped = perr.code == A3S_E_SYSTEM &&
                       (perr.sys_errno == ETIMEDOUT || perr.sys_errno == ECANCELED);
        f->flags = A3S_RESULT_SETUP_FAILED;
        if (stopped)
            f->flags = perr.sys_errno == ETIMEDOUT ? A3S_RESULT_TIMED_OUT : A3S_RESULT_CANCELLED;
        f->fallback = planned && !stopped;
        snprintf(f->message, sizeof f->message, "%s", perr.message);
        return A3S_OK;
    }
    atomic_fetch_add(&sb->starts, 1);
    atomic_store(&sb->session_pid, (int)s->pid);
    idle_arm(sb);
    atomic_store(&sb->session_bounds, (s->cg.memory ? A3S_SANDBOX_INFO_MEMORY_CGROUP : 0) |
                                          (s->cg.pids ? A3S_SANDBOX_INFO_PIDS_CGROUP : 0));

    /* READY, or why not */
    bool watch_cancel = (o->flags & A3S_EXEC_CANCEL_FD) != 0;
    /* no longer than the command itself may take (a hung init must not
     * hold a short call), nor than START_TIMEOUT_MS */
    uint64_t budget = (o->timeout_ms ? o->timeout_ms : A3S_DEFAULT_TIMEOUT_MS) +
                      (o->kill_grace_ms ? o->kill_grace_ms : A3S_DEFAULT_GRACE_MS) + BACKSTOP_MS;
    if (budget > START_TIMEOUT_MS)
        budget = START_TIMEOUT_MS;
    uint64_t ready_by = a3s_after_ms(a3s_now_ns(), budget);
    for (;;) {
        struct pollfd p[3] = {
            {.fd = s->ctl, .events = POLLIN},
            {.fd = watch_cancel ? o->cancel_fd : -1, .events = POLLIN},
            {.fd = sb->wake[0], .events = POLLIN},
        };
        int n = poll(p, 3, a3s_ms_until(a3s_now_ns(), ready_by));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            /* no one-shot retry: the same init would hang there too */
            f->flags = A3S_RESULT_SETUP_FAILED;
            snprintf(f->message, sizeof f->message, "the sandbox did not start within %llu ms",
                     (unsigned long long)budget);
            break;
        }
        if (p[1].revents || p[2].revents) {
            f->flags = A3S_RESULT_CANCELLED;
            break;
        }
        uint8_t *buf = NULL;
        size_t len = 0, nfds = 0;
        int stray[1];
        int got = a3s_msg_recv(s->ctl, &buf, &len, stray, 0, &nfds, MSG_TIMEOUT_MS);
        uint16_t type = 0;
        uint32_t total = 0;
        if (got == 0 && a3s_msg_header(buf, len, &type, &total, NULL) == A3S_OK &&
            type == A3S_MSG_READY) {
            free(buf);
            if (!retire_bubblewrap(s)) {
                f->flags = A3S_RESULT_SETUP_FAILED;
                f->fallback = true;
                snprintf(f->message, sizeof f->message,
                         "the sandbox's init could not be followed once it was up");
                break;
            }
            atomic_store(&sb->session_pid, (int)s->pid);
            sb->session = s;
            return A3S_OK;
        }
        struct a3s_msg_done d;
        f->flags = A3S_RESULT_SETUP_FAILED;
        f->fallback = true;
        if (got == 0 && type == A3S_MSG_DONE && a3s_msg_decode_done(buf, len, &d, NULL) == A3S_OK)
            snprintf(f->message, sizeof f->message, "%s", d.message);
        else
            start_message(s->errfd, f->message, sizeof f->message);
        if (!f->message[0])
            snprintf(f->message, sizeof f->message, "the sandbox did not start");
        free(buf);
        break;
    }
    atomic_store(&sb->session_pid, 0);
    session_end(sb, s);
    return A3S_OK;
}

/* ---- one command ---------------------------------------------------------------- */

static int exec_attempt(a3s_sandbox *sb, const a3s_exec_options *o, uint64_t deadline,
                        a3s_process_result **out, a3s_error *err);
static int session_exec_locked(a3s_sandbox *sb, const a3s_exec_options *o,
                               a3s_process_result **out, a3s_error *err);

struct exchange {
    struct a3s_capture out, err;
    bool done, dead, forced, cancel_sent;
    bool oom_killed; /* the memory cgroup's OOM killer struck during the command */
    struct a3s_msg_done d;
    uint64_t start, finished;
    struct a3s_stdin_feed in; /* the command's standard input, fed while it runs */
};

/* Sends the request; the pipes' write ends travel with it and are closed
 * here. 0, or -errno. */
static int send_request(a3s_sandbox *sb, struct a3s_session *s, const a3s_exec_options *o,
                        int out_w, int err_w, int in_r, a3s_error *err) {
    char name[32], home[64];
    snprintf(name, sizeof name, "c%llu", (unsigned long long)++s->seq);
    snprintf(home, sizeof home, "%s/%s", A3S_SCRATCH_PARENT, name);
    struct a3s_strvec env = {0};
    bool grant = o->flags & A3S_EXEC_NETWORK_GRANT;
    int rc = a3s_env_build((const char *const *)sb->host_env.items, sb->host_env.len, o->env,
                           o->envc, home, &env, err);
    if (rc == A3S_OK && grant)
        rc = a3s_grant_env(&env, err);
    uint8_t *msg = NULL;
    size_t len = 0;
    if (rc == A3S_OK)
        rc = a3s_msg_encode_exec(o->timeout_ms ? o->timeout_ms : A3S_DEFAULT_TIMEOUT_MS,
                                 o->kill_grace_ms ? o->kill_grace_ms : A3S_DEFAULT_GRACE_MS,
                                 o->command, o->command_len, name,
                                 (const char *const *)env.items, env.len, &msg, &len, err);
    a3s_strvec_free(&env);
    if (rc == A3S_OK && grant)
        a3s_msg_exec_set_flags(msg, A3S_MSG_EXEC_GRANT);
    if (rc == A3S_OK && o->cwd)
        rc = a3s_msg_exec_append_cwd(&msg, &len, o->cwd, err);
    if (rc == A3S_OK && a3s_exec_options_trace(o)) { /* the exec check (init/exectrace.c) */
        const char *const *const lists[3] = {o->exec_deny, o->exec_ask, o->exec_approved};
        const size_t counts[3] = {o->exec_deny_count, o->exec_ask_count, o->exec_approved_count};
        rc = a3s_msg_exec_add_rules(&msg, &len, lists, counts, err);
    }
    if (rc == A3S_OK) {
        /* the fds in order: stdout, stderr, [grant socket], [stdin] */
        int fds[4] = {out_w, err_w, -1, -1};
        size_t nfds = 2;
        if (grant)
            fds[nfds++] = o->grant_fd;
        if (in_r >= 0) {
            fds[nfds++] = in_r;
            a3s_msg_exec_set_flags(msg, a3s_msg_exec_flags(msg) | A3S_MSG_EXEC_STDIN);
        }
        int sent = a3s_msg_send(s->ctl, msg, len, fds, nfds, MSG_TIMEOUT_MS);
        if (sent < 0)
            rc = a3s_fail(err, A3S_E_SYSTEM, -sent, 0,
                          "the sandbox ended before the command could start: %s",
                          strerror(-sent));
    }
    free(msg);
    close(out_w);
    close(err_w);
    if (in_r >= 0)
        close(in_r);
    return rc;
}

/* Drains both streams until DONE (and the pipes' end), the init's death,
 * or the backstop; a cancel or a stop becomes a CANCEL request. */
static void exchange(a3s_sandbox *sb, struct a3s_session *s, const a3s_exec_options *o,
                     struct exchange *x) {
    char *buf = malloc(A3S_CAPTURE_CHUNK);
    char small[256];
    if (!buf) { /* drain anyway, keeping nothing */
        buf = small;
        x->out.oom = x->err.oom = true;
    }
    size_t chunk = buf == small ? sizeof small : A3S_CAPTURE_CHUNK;
    uint64_t grace = o->kill_grace_ms ? o->kill_grace_ms : A3S_DEFAULT_GRACE_MS;
    uint64_t timeout = o->timeout_ms ? o->timeout_ms : A3S_DEFAULT_TIMEOUT_MS;
    uint64_t backstop = a3s_after_ms(x->start, timeout + grace + BACKSTOP_MS);
    uint64_t drain_at = UINT64_MAX;
    bool watch_cancel = (o->flags & A3S_EXEC_CANCEL_FD) != 0;
    for (;;) {
        uint64_t now = a3s_now_ns();
        bool over = x->done || x->dead;
        if (over)
            a3s_stdin_feed_close(&x->in); /* the command ended: nobody reads the rest */
        if (over && ((x->out.fd < 0 && x->err.fd < 0) || now >= drain_at))
            break;
        if (!over && now >= backstop) {
            kill_now(s); /* the init is stuck: the whole sandbox goes */
            x->forced = x->dead = true;
            x->finished = now;
            drain_at = a3s_after_ms(now, A3S_PROCESS_DRAIN_MS);
            continue;
        }
        struct pollfd p[6];
        int io = -1, ie = -1, ic = -1, ix = -1, iw = -1, ii = -1;
        nfds_t n = 0;
        if (x->out.fd >= 0)
            p[io = (int)n++] = (struct pollfd){x->out.fd, POLLIN, 0};
        if (x->err.fd >= 0)
            p[ie = (int)n++] = (struct pollfd){x->err.fd, POLLIN, 0};
        if (!over) {
            p[ic = (int)n++] = (struct pollfd){s->ctl, POLLIN, 0};
            if (!x->cancel_sent) {
                if (watch_cancel)
                    p[ix = (int)n++] = (struct pollfd){o->cancel_fd, POLLIN, 0};
                p[iw = (int)n++] = (struct pollfd){sb->wake[0], POLLIN, 0};
            }
        }
        if (x->in.fd >= 0)
            p[ii = (int)n++] = (struct pollfd){x->in.fd, POLLOUT, 0};
        int rc = poll(p, n, a3s_ms_until(now, over ? drain_at : backstop));
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc < 0) {
            kill_now(s);
            x->forced = x->dead = true;
            x->finished = a3s_now_ns();
            drain_at = a3s_after_ms(x->finished, A3S_PROCESS_DRAIN_MS);
            continue;
        }
        if (io >= 0 && p[io].revents) {
            if (chunk == A3S_CAPTURE_CHUNK)
                a3s_capture_read(&x->out, buf);
            else if (read(x->out.fd, buf, chunk) <= 0)
                a3s_close_fd(&x->out.fd);
        }
        if (ie >= 0 && p[ie].revents) {
            if (chunk == A3S_CAPTURE_CHUNK)
                a3s_capture_read(&x->err, buf);
            else if (read(x->err.fd, buf, chunk) <= 0)
                a3s_close_fd(&x->err.fd);
        }
        if (ii >= 0 && p[ii].revents)
            a3s_stdin_feed_write(&x->in);
        if ((ix >= 0 && p[ix].revents) || (iw >= 0 && p[iw].revents)) {
            uint8_t b[A3S_MSG_HEADER];
            x->cancel_sent = true;
            if (a3s_msg_send(s->ctl, b, a3s_msg_encode_empty(A3S_MSG_CANCEL, b), NULL, 0,
                             MSG_TIMEOUT_MS) < 0)
                kill_now(s);
            uint64_t by = a3s_after_ms(a3s_now_ns(), grace + BACKSTOP_MS);
            if (by < backstop)
                backstop = by;
        }
        if (ic >= 0 && p[ic].revents) {
            uint8_t *msg = NULL;
            size_t len = 0, nfds = 0;
            int stray[1];
            int got = (p[ic].revents & POLLIN)
                          ? a3s_msg_recv(s->ctl, &msg, &len, stray, 0, &nfds, MSG_TIMEOUT_MS)
                          : 1;
            if (got == 0 && a3s_msg_decode_done(msg, len, &x->d, NULL) == A3S_OK)
                x->done = true;
            else
                x->dead = true; /* the init ended, or said something it should not */
            free(msg);
            x->finished = a3s_now_ns();
            /* a process that could not be reaped holds the pipes open: what they hold
             * now is read, their end is not awaited */
            drain_at = a3s_after_ms(x->finished, x->done && (x->d.flags & A3S_DONE_SURVIVED)
                                                     ? SURVIVED_DRAIN_MS
                                                     : A3S_PROCESS_DRAIN_MS);
        }
    }
    if (buf != small)
        free(buf);
}

static a3s_process_result *outcome(struct exchange *x) {
    uint64_t us = (x->finished > x->start ? x->finished - x->start : 0) / 1000u;
    if (x->done && !(x->d.flags & A3S_DONE_SETUP_FAILED)) {
        uint64_t flags = ((x->d.flags & A3S_DONE_TIMED_OUT) ? A3S_RESULT_TIMED_OUT : 0) |
                         ((x->d.flags & A3S_DONE_CANCELLED) ? A3S_RESULT_CANCELLED : 0) |
                         ((x->d.flags & A3S_DONE_OOM_KILLED) || x->oom_killed
                              ? A3S_RESULT_OOM_KILLED
                              : 0) |
                         ((x->d.flags & A3S_DONE_LINKED) ? A3S_RESULT_HARD_LINKED : 0) |
                         ((x->d.flags & A3S_DONE_SURVIVED) ? A3S_RESULT_OUTLIVED : 0);
        a3s_process_result *r = a3s_process_result_captured(&x->out, &x->err, x->d.exit_code, 0,
                                                            flags, us, x->d.pid, NULL);
        if (r && (x->d.flags & A3S_DONE_EXEC_STOPPED))
            a3s_exec_stop_apply(r, x->d.message);
        return r;
    }
    if (x->done)
        return a3s_process_result_captured(&x->out, &x->err, 125, 0, A3S_RESULT_SETUP_FAILED,
                                           us, 0, x->d.message[0] ? x->d.message
                                                                  : "the command did not start");
    if (x->forced) /* the init was stuck: whatever it knew is lost, so every flag that
                      asks the caller for more care is set (a link may have been made) */
        return a3s_process_result_captured(
            &x->out, &x->err, 124, 0,
            (x->cancel_sent ? A3S_RESULT_CANCELLED : A3S_RESULT_TIMED_OUT) |
                (x->oom_killed ? A3S_RESULT_OOM_KILLED : 0) | A3S_RESULT_HARD_LINKED |
                A3S_RESULT_OUTLIVED,
            us, 0, NULL);
    return a3s_process_result_captured(&x->out, &x->err, 125, 0, A3S_RESULT_SETUP_FAILED, us, 0,
                                       "the sandbox ended while running the command");
}

/* 2 when the init refused the command because its mounts changed. */
static int run_command(a3s_sandbox *sb, struct a3s_session *s, const a3s_exec_options *o,
                       a3s_process_result **out, a3s_error *err) {
    int po[2] = {-1, -1}, pe[2] = {-1, -1};
    if (a3s_pipe_above_stdio(po, 0) < 0 || a3s_pipe_above_stdio(pe, 0) < 0 || a3s_set_nonblock(po[0]) < 0 ||
        a3s_set_nonblock(pe[0]) < 0) {
        int e = errno;
        a3s_close_fd(&po[0]);
        a3s_close_fd(&po[1]);
        a3s_close_fd(&pe[0]);
        a3s_close_fd(&pe[1]);
        return a3s_fail(err, A3S_E_SYSTEM, e, 0, "pipe: %s", strerror(e));
    }
    struct exchange x;
    memset(&x, 0, sizeof x);
    int in_r = -1;
    struct a3s_stdin_bytes in = {o->stdin_data, o->stdin_len};
    if (a3s_stdin_feed_open(&x.in, &in, &in_r) < 0) {
        int e = errno;
        a3s_close_fd(&po[0]);
        a3s_close_fd(&po[1]);
        a3s_close_fd(&pe[0]);
        a3s_close_fd(&pe[1]);
        return a3s_fail(err, A3S_E_SYSTEM, e, 0, "pipe for the standard input: %s", strerror(e));
    }
    a3s_capture_init(&x.out, po[0], o->max_output_bytes);
    a3s_capture_init(&x.err, pe[0], o->max_output_bytes);
    struct a3s_output_sink sink = {o->on_output, o->on_output_ctx};
    a3s_capture_sink(&x.out, &sink, 1);
    a3s_capture_sink(&x.err, &sink, 2);
    x.start = a3s_now_ns();
    uint64_t oom_kills = a3s_cgroup_oom_kills(&s->cg);
    a3s_error serr = {0};
    int rc = send_request(sb, s, o, po[1], pe[1], in_r, &serr);
    if (rc != A3S_OK) {
        a3s_stdin_feed_close(&x.in);
        a3s_capture_release(&x.out);
        a3s_capture_release(&x.err);
        if (serr.code != A3S_E_SYSTEM) {
            if (err)
                *err = serr; /* e.g. a refused per-call variable */
            return rc;
        }
        stop_locked(sb);
        *out = a3s_process_result_synthetic(125, A3S_RESULT_SETUP_FAILED, serr.message);
        return *out ? a3s_ok(err) : a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory");
    }
    exchange(sb, s, o, &x);
    x.oom_killed = s->cg.memory && a3s_cgroup_oom_kills(&s->cg) > oom_kills;
    if (x.done && (x.d.flags & A3S_DONE_STALE)) {
        /* not run: the init found a mount of its sandbox gone */
        a3s_capture_release(&x.out);
        a3s_capture_release(&x.err);
        stop_locked(sb);
        return 2;
    }
    *out = outcome(&x);
    a3s_capture_release(&x.out);
    a3s_capture_release(&x.err);
    if (x.forced || (x.done && (x.d.flags & A3S_DONE_SURVIVED))) {
        /* killed now; its teardown (placeholders, run directory) is left to the next
         * command, a stop or the idle stop, so the result is not held back: the
         * timeout bounds when it returns (A3S_RESULT_OUTLIVED) */
        s->abandon = true;
        kill_now(s);
    } else if (x.dead || (x.done && (x.d.flags & A3S_DONE_CLOSING))) {
        stop_locked(sb);
    }
    return *out ? a3s_ok(err) : a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory");
}

/* Called with sb->session_lock held. 1: run it one-shot instead. */
int a3s_session_exec(a3s_sandbox *sb, const a3s_exec_options *o, a3s_process_result **out,
                     a3s_error *err) {
    atomic_store(&sb->last_used_ns, a3s_now_ns());
    int rc = session_exec_locked(sb, o, out, err);
    atomic_store(&sb->last_used_ns, a3s_now_ns()); /* idle from its end */
    return rc;
}

static int session_exec_locked(a3s_sandbox *sb, const a3s_exec_options *o,
                               a3s_process_result **out, a3s_error *err) {
    /* checking and planning count against the command's time */
    uint64_t deadline =
        a3s_after_ms(a3s_now_ns(), o->timeout_ms ? o->timeout_ms : A3S_DEFAULT_TIMEOUT_MS);
    /* a sandbox the init itself finds stale did not run the command: once
     * more in a new one (a host changing the workspace that fast twice in a
     * row gets a 125) */
    for (int attempt = 0; attempt < 2; attempt++) {
        int rc = exec_attempt(sb, o, deadline, out, err);
        if (rc != 2)
            return rc;
    }
    *out = a3s_process_result_synthetic(
        125, A3S_RESULT_SETUP_FAILED,
        "the workspace kept changing under the sandbox: a mount point was replaced twice");
    return *out ? a3s_ok(err) : a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory");
}

/* A result of 124 for a command whose time ran out, or that was cancelled,
 * before it started. */
static int not_started(int e, a3s_process_result **out, a3s_error *err) {
    *out = a3s_process_result_synthetic(
        124, e == ECANCELED ? A3S_RESULT_CANCELLED : A3S_RESULT_TIMED_OUT, NULL);
    return *out ? a3s_ok(err) : a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory");
}

/* One try: 0 (a result), 1 (run it one-shot), 2 (stale: try again), or an error. */
static int exec_attempt(a3s_sandbox *sb, const a3s_exec_options *o, uint64_t deadline,
                        a3s_process_result **out, a3s_error *err) {
    struct a3s_session *s = sb->session;
    int current = 1;
    if (s && s->owner == getpid() && !s->abandon && alive(s)) {
        s->plan.deadline = deadline;
        s->plan.cancel_fd = (o->flags & A3S_EXEC_CANCEL_FD) ? o->cancel_fd : -1;
        current = a3s_plan_current(sb, &s->plan);
        s->plan.cancel_fd = -1;
        if (current < 0)
            return not_started(errno, out, err);
    }
    if (s && (s->owner != getpid() || s->abandon || !alive(s) || !current)) {
        stop_locked(sb);
        s = NULL;
    }
    if (!s) {
        struct failure f = {0};
        int rc = session_start(sb, o, deadline, &f, err);
        if (rc != A3S_OK)
            return rc;
        if (f.fallback) {
            /* The plan held, but the long-lived sandbox did not come up (bubblewrap
             * or the init failed): this command runs one-shot, whose own failure,
             * if the boundary cannot start at all, is the 125 the caller gets.
             * After a few in a row, the handle stops trying. */
            if (++sb->start_failures >= MAX_START_FAILURES)
                atomic_store(&sb->one_shot_only, true);
            return 1;
        }
        if (f.flags) {
            bool stopped = f.flags & (A3S_RESULT_CANCELLED | A3S_RESULT_TIMED_OUT);
            *out = a3s_process_result_synthetic(stopped ? 124 : 125, f.flags,
                                                stopped ? NULL : f.message);
            return *out ? a3s_ok(err) : a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory");
        }
        s = sb->session;
        sb->start_failures = 0;
    }
    if (o->policy_digest) {
        /* the plan this sandbox runs under must be the one the caller approved */
        bool changed = false;
        int prc = a3s_policy_check(sb, &s->plan, o->policy_digest, &changed, err);
        if (prc != A3S_OK)
            return prc;
        if (changed) {
            *out = a3s_process_result_synthetic(
                125, A3S_RESULT_SETUP_FAILED | A3S_RESULT_POLICY_CHANGED, POLICY_CHANGED_MESSAGE);
            return *out ? a3s_ok(err) : a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory");
        }
    }
    /* the command gets what is left of its time */
    a3s_exec_options left = *o;
    uint64_t now = a3s_now_ns();
    if (deadline != UINT64_MAX)
        left.timeout_ms = deadline > now ? (deadline - now + 999999u) / 1000000u : 1;
    int rc = run_command(sb, s, &left, out, err);
    char *notes = rc == A3S_OK && *out ? a3s_plan_notes(&s->plan) : NULL;
    if (notes)
        a3s_process_result_set_neutralized(*out, notes);
    free(notes);
    return rc;
}

/* ---- the API ------------------------------------------------------------------- */

A3S_API int a3s_sandbox_stop(a3s_sandbox *sb, a3s_error *err) {
    if (!sb)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_sandbox_stop: NULL sandbox");
    if (pthread_mutex_trylock(&sb->session_lock) != 0) {
        /* a command is running in it: cancel it, then wait for the lock */
        ssize_t w = write(sb->wake[1], "x", 1);
        (void)w;
        pthread_mutex_lock(&sb->session_lock);
    }
    char drain[64];
    while (read(sb->wake[0], drain, sizeof drain) > 0) {
    }
    stop_locked(sb);
    /* A stopped handle holds no watches and no thread (issue 26): the next
     * command sets them up again. Under the session lock no sandbox starts
     * meanwhile, and the idle thread never waits for that lock. Not in a
     * forked copy: the locks and the condition variable it inherited may
     * have been in use by threads that did not come along. */
    if (sb->creator == getpid()) {
        idle_release(sb);
        pthread_mutex_lock(&sb->lock);
        a3s_credscan_release(sb->creds);
        pthread_mutex_unlock(&sb->lock);
    }
    pthread_mutex_unlock(&sb->session_lock);
    return a3s_ok(err);
}

A3S_API int a3s_sandbox_info_get(const a3s_sandbox *sb, a3s_sandbox_info *out, a3s_error *err) {
    if (!sb || !out || out->struct_size < sizeof(a3s_sandbox_info))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_sandbox_info_get: NULL or small struct");
    a3s_sandbox *m = (a3s_sandbox *)sb; /* atomics only: reading does not change the handle */
    int pid = atomic_load(&m->session_pid);
    out->flags = pid ? A3S_SANDBOX_INFO_RUNNING : 0;
    if (pid)
        out->flags |= atomic_load(&m->session_bounds);
    out->starts = (uint64_t)atomic_load(&m->starts);
    out->pid = pid;
    out->reserved = 0;
    return a3s_ok(err);
}

#else
typedef int a3s_session_linux_unused; /* ISO C forbids an empty unit */
#endif
