/* warden.c - warden mode: a host-mode program owned by a cgroup of its own.
 *
 * Where no user namespace can be made, a3s_child_spawn owns a program on the
 * host through a cgroup (cgroup_linux.c, a3s_cgroup_create_killable) and
 * starts this warden as its direct child, outside that cgroup:
 *
 *   a3s-init --mode warden --cgroup-fd N --init-fd N --status-fd N --lifeline-fd N
 *            [--host-pidfd N] -- INIT-ARGV...
 *
 * --cgroup-fd   the cgroup's directory;
 * --init-fd     the caller's pinned image of this init, which the warden's
 *               child runs (INIT-ARGV: host mode, the subreaper) once it has
 *               moved itself into the cgroup, so everything the program
 *               starts is in it, a setsid double-forked daemon included;
 * --status-fd   where a failure before that exec is reported ("E<why>");
 * --lifeline-fd, --host-pidfd: as for the init, the caller's life (the
 *               warden watches only for the lifeline's hang-up: a signal
 *               request written there is the init's to read).
 *
 * The warden ends the cgroup, every process in it at once, when the init
 * ends (the program exited, or killed its supervisor: as a pid namespace
 * dies with its init), or when the caller is gone (even by SIGKILL), and
 * then, the caller being gone, removes it. Signals from the program's
 * terminal or session are not its to obey; the program, though of the
 * caller's uid, cannot signal, trace or limit the warden or the init: the
 * init starts it under a guard filter that refuses it (--under-warden,
 * a3s_seccomp_build_guard). A root program can still leave (docs/mcp.md).
 */
#define _GNU_SOURCE
#include "init.h"
#include "../src/cgroup_linux.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* In the child (async-signal-safe): "E<what>: <errno text>" to the status fd, exit 125. */
static _Noreturn void warden_fail(int status_fd, const char *what, int err) {
    char msg[256];
    size_t n = 0;
    const char *parts[] = {"E", what, ": ", strerror(err)};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        for (const char *p = parts[i]; *p && n < sizeof msg; p++)
            msg[n++] = *p;
    ssize_t ignored = write(status_fd, msg, n);
    (void)ignored;
    _exit(EXIT_SETUP);
}

/* The caller is gone: the cgroup goes, every process in it, and then the directory. */
static _Noreturn void warden_end(int cgroup, pid_t child, int code) {
    a3s_cgroup_kill_all(cgroup);
    int st;
    while (child > 0 && waitpid(child, &st, 0) < 0 && errno == EINTR) {
    }
    char self[64], path[PATH_MAX];
    snprintf(self, sizeof self, "/proc/self/fd/%d", cgroup);
    ssize_t n = readlink(self, path, sizeof path - 1);
    if (n > 0) {
        path[n] = '\0';
        rmdir(path); /* the caller's sweep removes one left busy */
    }
    _exit(code);
}

int warden_main(int argc, char **argv) {
    int cgroup = -1, image = -1, status = -1, lifeline = -1, host = -1, i = 1;
    const struct {
        const char *name;
        int *fd;
    } fds[] = {{"--cgroup-fd", &cgroup},
               {"--init-fd", &image},
               {"--status-fd", &status},
               {"--lifeline-fd", &lifeline},
               {"--host-pidfd", &host}};
    const size_t nfds = sizeof fds / sizeof *fds;
    for (; i + 1 < argc && strcmp(argv[i], "--") != 0; i += 2) {
        size_t k = 0;
        while (k < nfds && strcmp(argv[i], fds[k].name) != 0)
            k++;
        if (k < nfds)
            *fds[k].fd = fd_number(argv[i + 1]);
        else if (strcmp(argv[i], "--mode") != 0)
            return 2;
    }
    if (cgroup < 0 || image < 0 || status < 0 || lifeline < 0 || i + 1 >= argc ||
        strcmp(argv[i], "--") != 0)
        return 2;
    char **init_argv = argv + i + 1;
    set_cloexec(cgroup);
    set_cloexec(image);
    /* the program (of our uid) may neither trace us nor open our /proc files
     * (they become root's); the init does the same, and the program's guard
     * filter refuses what else would signal either of us (a3s_init.c) */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    /* The OOM killer must not end us before the program: with
     * CAP_SYS_RESOURCE, never (-1000); the init gets our old value back.
     * Without it the write fails and nothing changes. */
    char oom[16] = "0";
    int oom_fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
    ssize_t oom_len = oom_fd >= 0 ? read(oom_fd, oom, sizeof oom - 1) : -1;
    if (oom_len > 0 && pwrite(oom_fd, "-1000", 5, 0) == 5)
        oom[oom_len] = '\0';
    else
        oom_len = 0; /* unchanged: nothing to restore */
    /* no signal but SIGKILL stops the warden (the program's terminal, its session, a
     * SIGUSR1 of the program's); SIGCHLD is read */
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    int procs = openat(cgroup, "cgroup.procs", O_WRONLY | O_CLOEXEC);
    if (sfd < 0 || procs < 0)
        warden_fail(status, sfd < 0 ? "signalfd" : "cannot open the cgroup's cgroup.procs",
                    errno);
    struct pollfd life[2] = {{.fd = lifeline, .events = POLLIN}, {.fd = host, .events = POLLIN}};
    if (poll(life, 2, 0) > 0)
        warden_end(cgroup, -1, 128 + SIGKILL); /* the caller is already gone */

    pid_t child = fork();
    if (child < 0)
        warden_fail(status, "fork", errno);
    if (child == 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        if (oom_len > 0 && pwrite(oom_fd, oom, (size_t)oom_len, 0) != oom_len)
            warden_fail(status, "cannot restore the init's oom_score_adj", errno);
        if (write(procs, "0", 1) != 1)
            warden_fail(status, "cannot join the program's cgroup", errno);
        syscall(SYS_execveat, image, "", init_argv, environ, AT_EMPTY_PATH);
        warden_fail(status, "cannot run the init", errno);
    }
    close(procs);
    if (oom_fd >= 0)
        close(oom_fd);
    close(status); /* the init reports through its own copy */
    for (;;) {
        /* the lifeline's hang-up only: what the caller writes there (a signal request)
         * is the init's to read */
        struct pollfd p[3] = {{.fd = sfd, .events = POLLIN},
                              {.fd = lifeline, .events = 0},
                              {.fd = host, .events = POLLIN}};
        if (poll(p, 3, -1) < 0 && errno != EINTR)
            warden_end(cgroup, child, EXIT_SETUP);
        if (p[1].revents || p[2].revents)
            warden_end(cgroup, child, 128 + SIGKILL);
        struct signalfd_siginfo si;
        while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        }
        int st;
        if (waitpid(child, &st, WNOHANG) == child) {
            /* the init is gone, by its own end or killed: nothing of the program stays */
            a3s_cgroup_kill_all(cgroup);
            _exit(status_of(st));
        }
    }
}
