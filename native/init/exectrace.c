/* exectrace.c - the exec check: every program a command runs is checked,
 * with the argv it really runs, before its first instruction.
 *
 * When the host gives the init bash deny or ask rules (--exec-deny,
 * --exec-ask, --exec-approve; in server mode with each EXEC), every exec of
 * the command stops at a PTRACE_EVENT_EXEC stop of the init's. There the
 * new image is loaded and not one of its instructions has run; its memory
 * is a fresh mm that only the stopped task uses. The init reads the argv
 * from /proc/PID/cmdline and the executable from /proc/PID/exe, decides
 * (native/src/exec_match.c), and either lets it go on or kills it (SIGKILL)
 * with a message on the program's stderr. So what is checked is what runs:
 * unlike a decision on execve's pointer arguments, no other thread can
 * change the memory between the check and its use (the old mm is gone, and
 * the new one is not shared).
 *
 * How the exec stops are had, two ways:
 *  - seized at the notification (t->notify; the sandbox, where the kernel
 *    has seccomp user notification): the init's own listener filter, which
 *    every command inherits and none can remove, turns execve and execveat
 *    into notifications (a3s_seccomp_watch_links, or names.c's filter, which
 *    passes them on: a task has one listener at most). For each, the init
 *    seizes the calling thread (PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL, no
 *    fork following) before it answers CONTINUE, so the exec that follows
 *    stops at its exec stop; there the thread is checked and detached. Forks
 *    cost nothing, an exec two hand-offs. An exec that fails (ENOENT along a
 *    PATH search) makes no exec stop: the thread stays traced (t->held), its
 *    next execs are let through at once (already seized), its signals and
 *    stops are passed on, its exit is reported here. An exec from a thread
 *    other than the leader stops under the leader's pid (PTRACE_GETEVENTMSG
 *    names the old tid). A non-dumpable process cannot be seized (no tracer
 *    without CAP_SYS_PTRACE may), so it is followed whole (TRACE_OPTIONS)
 *    from before it becomes one: at its prctl(PR_SET_DUMPABLE, 0), also a
 *    notification (exectrace_nodump), or at the exec stop of an image whose
 *    exe we may not read (exec'd from an unreadable program); its exec stops
 *    then keep it. A non-dumpable thread not followed so is refused its
 *    exec (EACCES), never let through untraced.
 *  - the whole tree (the process host, which has no seccomp filter, and a
 *    kernel without user notification): the command's process is seized
 *    right after fork (PTRACE_O_TRACEEXEC, TRACEFORK, TRACEVFORK,
 *    TRACECLONE, EXITKILL), so every process and thread it ever makes is
 *    traced too; four hand-offs per fork and exec.
 *
 * What else could write the new image's memory after the check: ptrace,
 * process_vm_writev, pidfd_getfd (the command's seccomp filter refuses
 * them all), and writes to /proc/PID/mem, which Landlock refuses (/proc is
 * read-only to the command, the rest of / too except the writable trees).
 * Without Landlock (an old kernel, A3S_SANDBOX_NO_LANDLOCK, the process
 * host), a process allowed to ptrace-attach to the program (an ancestor, or
 * any process of the same user without Yama) could still rewrite its
 * arguments after the check: docs/security.md says so.
 *
 * The init's own seccomp filter lets it ptrace (A3S_SECCOMP_TRACER); each
 * command stacks the full filter, which refuses ptrace to the command.
 * The first exec of the command's own process (bash -c LINE, the line the
 * host's policy already decided) is not checked; every later one is.
 */
#define _GNU_SOURCE
#include "init.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#define TRACE_OPTIONS                                                                        \
    (PTRACE_O_TRACEEXEC | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | \
     PTRACE_O_EXITKILL)

/* the seize at an exec's notification: its exec stop, nothing it forks */
#define NOTIFY_OPTIONS (PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL)

#define CMDLINE_MAX (8u << 20) /* far above ARG_MAX's usual 2 MiB */

bool exectrace_add_rule(struct exectrace *t, const char *kind, const char *value, char *why,
                        size_t cap) {
    if (!t->rules && !(t->rules = a3s_exec_rules_new())) {
        snprintf(why, cap, "out of memory");
        return false;
    }
    if (!strcmp(kind, "approve")) {
        if (a3s_exec_rules_approve(t->rules, value) == A3S_OK)
            return true;
        snprintf(why, cap, "out of memory");
        return false;
    }
    a3s_error err = {0};
    int list = !strcmp(kind, "deny") ? A3S_LIST_DENY : A3S_LIST_ASK;
    if (a3s_exec_rules_add(t->rules, list, value, &err) == A3S_OK)
        return true;
    snprintf(why, cap, "bad exec rule '%s': %s", value, err.message);
    return false;
}

bool exectrace_active(const struct exectrace *t) {
    return t->rules && a3s_exec_rules_count(t->rules) > 0;
}

void exectrace_reset(struct exectrace *t) {
    a3s_exec_rules_free(t->rules);
    free(t->held);
    if (t->tell_fd >= 0)
        close(t->tell_fd);
    *t = (struct exectrace){.root = -1, .tell_fd = -1};
}

void exectrace_locate(struct exectrace *t, char *const *envp) {
    const char *path = NULL;
    for (size_t i = 0; envp && envp[i]; i++)
        if (!strncmp(envp[i], "PATH=", 5))
            path = envp[i] + 5;
    if (exectrace_active(t))
        a3s_exec_rules_locate(t->rules, path);
}

/* In the forked child (async-signal-safe): becomes traceable, says so,
 * and waits until the init has seized it. */
bool exectrace_await(int ready_fd, int go_fd) {
    if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
        return false;
    ssize_t n;
    do
        n = write(ready_fd, "r", 1);
    while (n < 0 && errno == EINTR);
    close(ready_fd);
    char b;
    do
        n = read(go_fd, &b, 1);
    while (n == 1 ? false : n < 0 && errno == EINTR);
    close(go_fd);
    return n == 1;
}

int exectrace_seize(struct exectrace *t, pid_t child, int ready_fd, int go_fd) {
    int rc = 0;
    char b;
    ssize_t n;
    do
        n = read(ready_fd, &b, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1)
        rc = n < 0 ? errno : ECHILD; /* it died before it could be traced */
    else if (ptrace(PTRACE_SEIZE, child, NULL, (void *)(long)TRACE_OPTIONS) < 0)
        rc = errno;
    else if (write(go_fd, "g", 1) != 1)
        rc = errno ? errno : EIO;
    close(ready_fd);
    close(go_fd);
    if (rc == 0)
        t->root = child;
    return rc;
}

/* The argv of the process whose /proc directory is `proc` as its cmdline
 * holds it: a heap buffer of NUL-separated strings and a NULL-terminated
 * vector into it, or NULL. */
static char **read_argv(int proc, char **buf, size_t *argc) {
    int fd = openat(proc, "cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 4096, len = 0;
    char *b = malloc(cap + 1);
    while (b) {
        if (len == cap) {
            char *grown = cap < CMDLINE_MAX ? realloc(b, 2 * cap + 1) : NULL;
            if (!grown) {
                free(b);
                b = NULL;
                break;
            }
            b = grown;
            cap *= 2;
        }
        ssize_t n = read(fd, b + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            free(b);
            b = NULL;
        }
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    if (!b || len == 0) {
        free(b);
        return NULL;
    }
    b[len] = '\0';
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += b[i] == '\0';
    if (b[len - 1] != '\0')
        n++;
    char **argv = calloc(n + 1, sizeof *argv);
    if (!argv) {
        free(b);
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < len && k < n; i += strlen(b + i) + 1)
        argv[k++] = b + i;
    *argc = k;
    *buf = b;
    return argv;
}

/* Tells the command why, on the stderr it was started with (the one the
 * host reads). Never through the stopped program's own fd 2: that could be
 * a file the command may only read (Landlock binds the command, not the
 * init), and the init must not write where the command cannot. */
static void tell(const struct exectrace *t, const char *msg) {
    if (t->tell_fd < 0)
        return;
    ssize_t ignored = write(t->tell_fd, msg, strlen(msg)); /* non-blocking: never stalls us */
    (void)ignored;
}

int exectrace_tell_to(struct exectrace *t, int fd) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    /* a description of our own, so O_NONBLOCK is not the command's too */
    int own = open(path, O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (t->tell_fd >= 0)
        close(t->tell_fd);
    t->tell_fd = own;
    return own;
}

static void record(struct exectrace *t, int list, const char *pattern, const char *reading) {
    t->stops++;
    if (t->stops == 1)
        snprintf(t->first, sizeof t->first, "%s\t%s\t%.*s", list == A3S_LIST_DENY ? "deny" : "ask",
                 pattern, 2048, reading);
}

/* The threads seized at an exec's notification and not let go yet (their
 * exec stop, or their end, is still to come). Few: one per exec in flight. */
static bool held(const struct exectrace *t, pid_t tid) {
    for (size_t i = 0; i < t->nheld; i++)
        if (t->held[i] == tid)
            return true;
    return false;
}

static void unhold(struct exectrace *t, pid_t tid) {
    for (size_t i = 0; i < t->nheld; i++)
        if (t->held[i] == tid) {
            t->held[i] = t->held[--t->nheld];
            return;
        }
}

static bool hold(struct exectrace *t, pid_t tid) {
    if (t->nheld == t->held_cap) {
        size_t cap = t->held_cap ? 2 * t->held_cap : 16;
        pid_t *grown = realloc(t->held, cap * sizeof *grown);
        if (!grown)
            return false;
        t->held = grown;
        t->held_cap = cap;
    }
    t->held[t->nheld++] = tid;
    return true;
}

/* Whether thread tid is traced by us: a held thread, checked again (were
 * its end ever missed, its number could name another thread, which must
 * not exec unseized). Only on the path of an exec after a failed one. */
static bool traced_by_us(pid_t tid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/status", (int)tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    const char *line = strstr(buf, "\nTracerPid:");
    return line && strtol(line + 11, NULL, 10) == (long)getpid();
}

static void record(struct exectrace *t, int list, const char *pattern, const char *reading);
static void tell(const struct exectrace *t, const char *msg);

/* An execve or execveat of thread `tid`, held by the kernel until answered.
 * The decision is never taken here, on the call's pointers (another thread
 * could change what they point to after we read it): the thread is seized
 * with PTRACE_O_TRACEEXEC and let go on, and its exec stop, where the new
 * image's private memory holds the argv, is checked as in the full trace.
 * A thread that cannot be seized does not exec (fail closed). */
int exectrace_answer(struct exectrace *t, int listener, pid_t tid, uint64_t id) {
    if (!t || !t->notify || !t->rules)
        return a3s_seccomp_notif_answer(listener, id, 0); /* no rules: nothing to check */
    if (tid == t->root && !t->root_execd) {
        t->root_execd = true; /* bash -c LINE: the host decided the line */
        return a3s_seccomp_notif_answer(listener, id, 0);
    }
    if (held(t, tid) && traced_by_us(tid)) /* seized at an exec that failed (ENOENT...) */
        return a3s_seccomp_notif_answer(listener, id, 0);
    unhold(t, tid);
    if (!hold(t, tid))
        return a3s_seccomp_notif_answer(listener, id, ENOMEM);
    if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(long)NOTIFY_OPTIONS) == 0)
        return a3s_seccomp_notif_answer(listener, id, 0);
    int e = errno;
    unhold(t, tid);
    if (e == EPERM && traced_by_us(tid)) /* followed whole: its exec stop comes */
        return a3s_seccomp_notif_answer(listener, id, 0);
    if (e != ESRCH) { /* ESRCH: it died meanwhile, and nothing is left to answer */
        /* non-dumpable and not followed since (a thread other than the one
         * that made it so, or a child of that one's other threads): no
         * tracer without CAP_SYS_PTRACE may follow it, so it may not exec */
        char msg[256];
        snprintf(msg, sizeof msg,
                 "codeward: refused an exec of process %d: the exec check cannot follow it "
                 "(ptrace: %s; a process that made itself non-dumpable cannot exec)\n",
                 (int)tid, strerror(e));
        tell(t, msg);
        record(t, A3S_LIST_DENY, "", "an exec of a non-dumpable process");
    }
    return a3s_seccomp_notif_answer(listener, id, EACCES);
}

/* prctl(PR_SET_DUMPABLE, 0) of thread tid, held by the kernel until
 * answered: once it runs, no tracer without CAP_SYS_PTRACE may seize the
 * process or the children it forks. So it is seized now, while it still
 * can be, and followed whole from here (TRACE_OPTIONS: its forks, clones
 * and every exec, as the full trace does); its exec stops keep it
 * (check_exec). One that cannot be seized so may not run it (EPERM): a
 * thread seized at a failed exec (held: its options cannot change outside
 * a stop), or one another tracer holds. */
int exectrace_nodump(struct exectrace *t, int listener, pid_t tid, uint64_t id) {
    if (!t || !t->notify || !t->rules)
        return a3s_seccomp_notif_answer(listener, id, 0); /* no rules: nothing to follow */
    if (!(held(t, tid) && traced_by_us(tid))) {
        unhold(t, tid); /* a stale entry: its number names another thread now */
        if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(long)TRACE_OPTIONS) == 0 || errno == ESRCH)
            return a3s_seccomp_notif_answer(listener, id, 0);
        if (errno == EPERM && traced_by_us(tid)) /* followed whole already */
            return a3s_seccomp_notif_answer(listener, id, 0);
    }
    char msg[256];
    snprintf(msg, sizeof msg,
             "codeward: refused prctl(PR_SET_DUMPABLE, 0) of process %d: the exec check "
             "could not follow it then\n",
             (int)tid);
    tell(t, msg);
    return a3s_seccomp_notif_answer(listener, id, EPERM);
}

int exectrace_take(struct exectrace *t, int listener, bool *linked) {
    struct a3s_seccomp_call call;
    int rc = a3s_seccomp_notif_take(listener, &call);
    if (rc <= 0)
        return rc;
    if (call.exec)
        return exectrace_answer(t, listener, (pid_t)call.pid, call.id);
    if (call.nodump)
        return exectrace_nodump(t, listener, (pid_t)call.pid, call.id);
    if (call.prctl) /* PR_SET_DUMPABLE, 1: nothing to follow */
        return a3s_seccomp_notif_answer(listener, call.id, 0);
    *linked = true;
    return a3s_seccomp_notif_answer(listener, call.id, 0);
}

/* An exec stop: let it go on, or kill it. `seized`: t->notify, and the
 * thread was seized at its exec's notification (else it is followed whole:
 * traced since its fork, its prctl, or an unreadable program's exec). */
static void check_exec(struct exectrace *t, pid_t pid, bool seized) {
    if (pid == t->root && !t->root_execd) {
        t->root_execd = true; /* bash -c LINE: the host decided the line */
        ptrace(PTRACE_CONT, pid, NULL, NULL);
        return;
    }
    /* /proc/PID looked up once: each lookup of a pid's directory makes its
     * proc inode anew, and every exec pays for it. The pid is the stopped
     * tracee's (not reaped, so not reused): its entries are its own. */
    char path[64], exe[PATH_MAX];
    snprintf(path, sizeof path, "/proc/%d", (int)pid);
    int proc = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    char *buf = NULL;
    size_t argc = 0;
    char **argv = proc >= 0 ? read_argv(proc, &buf, &argc) : NULL;
    ssize_t el = proc >= 0 ? readlinkat(proc, "exe", exe, sizeof exe - 1) : -1;
    if (el >= 0)
        exe[el] = '\0';
    /* opened only when the decision may need them: each open costs every exec */
    int exe_fd = proc >= 0 && a3s_exec_rules_located(t->rules)
                     ? openat(proc, "exe", O_RDONLY | O_CLOEXEC)
                     : -1;
    bool relative = false;
    for (size_t k = 1; k <= 4 && argv && k < argc; k++) /* exec_match.c's ARG_PROGRAMS */
        relative |= argv[k][0] && argv[k][0] != '/' && argv[k][0] != '-';
    int cwd_fd = relative ? openat(proc, "cwd", O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
    if (proc >= 0)
        close(proc);
    struct a3s_exec_decision d = {.list = A3S_LIST_DENY, .rule = SIZE_MAX};
    if (argv) {
        struct a3s_exec_call call = {.exe = el >= 0 ? exe : NULL,
                                     .exe_fd = exe_fd,
                                     .argv = (const char *const *)argv,
                                     .argc = argc,
                                     .cwd_fd = cwd_fd};
        a3s_exec_decide(t->rules, &call, &d);
    }
    if (exe_fd >= 0)
        close(exe_fd);
    if (cwd_fd >= 0)
        close(cwd_fd);
    if (d.list == A3S_LIST_NONE && seized && el >= 0) {
        /* seized at its notification: let go, its forks are not ours to follow */
        ptrace(PTRACE_DETACH, pid, NULL, NULL);
    } else if (d.list == A3S_LIST_NONE) {
        /* A new image whose exe we may not read is non-dumpable (a program
         * the command may run but not read: --x), and no later seize would
         * take it or its children: keep it, followed whole from here. One
         * followed whole already stays so. */
        if (seized)
            ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(long)TRACE_OPTIONS);
        ptrace(PTRACE_CONT, pid, NULL, NULL);
    } else {
        /* fail closed: an exec that cannot be read is stopped too */
        int list = A3S_LIST_DENY;
        const char *pattern = d.rule != SIZE_MAX ? a3s_exec_rules_pattern(t->rules, d.rule, &list)
                                                 : NULL;
        const char *what = d.reading ? d.reading : argv && argc ? argv[0] : "a program";
        char msg[1024];
        if (!pattern)
            snprintf(msg, sizeof msg, "codeward: stopped exec of `%.600s`: it could not be read\n",
                     what);
        else if (list == A3S_LIST_DENY)
            snprintf(msg, sizeof msg, "codeward: stopped exec of `%.600s`: denied by bash(%.300s)\n",
                     what, pattern);
        else
            snprintf(msg, sizeof msg,
                     "codeward: stopped exec of `%.600s`: bash(%.300s) asks, and it was not "
                     "approved for this call\n",
                     what, pattern);
        tell(t, msg);
        kill(pid, SIGKILL); /* wakes it from the stop, and it never runs */
        record(t, list, pattern ? pattern : "", what);
    }
    free(d.reading);
    free(argv);
    free(buf);
}

static void handle_stop(struct exectrace *t, pid_t pid, int status) {
    int sig = WSTOPSIG(status);
    int event = (int)((unsigned)status >> 16);
    if (event == PTRACE_EVENT_EXEC) {
        bool seized = false;
        if (t->notify) {
            /* done with it either way; an exec of a thread other than the
             * leader stops under the leader's pid, the message is its own */
            unsigned long old = 0;
            if (ptrace(PTRACE_GETEVENTMSG, pid, NULL, &old) == 0 && held(t, (pid_t)old)) {
                seized = true;
                unhold(t, (pid_t)old);
            }
            seized |= held(t, pid);
            unhold(t, pid);
        }
        check_exec(t, pid, seized);
    } else if (event == PTRACE_EVENT_STOP) {
        /* a group stop (SIGSTOP and friends) stays one; the first stop of a
         * new traced process, or any other, goes on */
        bool group = sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
        ptrace(group ? PTRACE_LISTEN : PTRACE_CONT, pid, NULL, NULL);
    } else if (event) {
        ptrace(PTRACE_CONT, pid, NULL, NULL); /* fork, vfork, clone */
    } else {
        ptrace(PTRACE_CONT, pid, NULL, (void *)(long)sig); /* the signal, delivered */
    }
}

/* Stops handled in one call: a command that makes them as fast as we take
 * them must not keep the init from its timeout, lifeline and cancel. */
#define STOPS_PER_CALL 256

pid_t exectrace_wait(struct exectrace *t, int *status, int flags) {
    for (int handled = 0;; handled++) {
        if (handled == STOPS_PER_CALL) {
            raise(SIGCHLD); /* blocked, so it waits in the signalfd: the caller comes back */
            return 0;
        }
        pid_t p = waitpid(-1, status, flags | (t && t->rules ? __WALL : 0));
        if (p <= 0 || !t || !t->rules || !WIFSTOPPED(*status)) {
            if (p > 0 && t && t->notify)
                unhold(t, p); /* gone, or never held: its tid may be reused */
            return p;
        }
        handle_stop(t, p, *status);
    }
}

size_t exectrace_report(const struct exectrace *t, char *out, size_t cap) {
    static const char hex[] = "0123456789abcdef";
    if (!t->stops || cap < 3)
        return 0;
    size_t n = 0;
    out[n++] = 'X';
    for (const char *s = t->first; *s && n + 3 < cap; s++) {
        out[n++] = hex[(unsigned char)*s >> 4];
        out[n++] = hex[(unsigned char)*s & 15];
    }
    out[n++] = '.';
    return n;
}
