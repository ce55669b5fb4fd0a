/* a3s_init.c - the supervisor every sandboxed command runs under.
 *
 * In sandbox mode it is PID 1 of the bubblewrap pid namespace: non-dumpable,
 * without capabilities, under the same seccomp filter as the command
 * (installed on itself once prepared), it forks the command with Landlock
 * applied, reaps, enforces the timeout, and exits with the command's
 * status (signals reach it only from commands, and are ignored); when
 * PID 1 exits the kernel kills every process left in the namespace. In host
 * mode (the opted-in process host) it is a child subreaper that runs the
 * command unconfined, forwards TERM/INT/HUP, and still takes every
 * descendant down with it; owned (--own-pidns N, the caller's pid namespace
 * inode) it is PID 1 of a pid namespace bubblewrap made for it, with a /proc
 * of its own, and proves both before it starts the command. In server mode
 * (server.c) it is PID 1 of a long-lived sandbox and runs one command after another, each as a fresh
 * child, on requests from the host's control socket.
 *
 * It watches a lifeline pipe whose write end only the caller holds: when the
 * caller dies, at any moment, the read end hangs up and everything is killed.
 * Outside server mode the caller may also write a SIGNAL request there
 * (session_msg.h; a3s_child_signal): the init sends that signal to every
 * process of the command, the way a stop starts where no signal from
 * outside reaches a sandbox's PID 1. Anything else read there is taken as
 * the caller's end.
 *
 * Usage: a3s-init --mode sandbox|host [--status-fd N] [--lifeline-fd N] [--host-pidfd N]
 *                 [--own-pidns N | --under-warden]
 *                 [--timeout-ms N] [--deadline-ns N] [--grace-ms N] [--rw PATH]... [--no-landlock]
 *                 [--allow-connect]
 *                 [--grant-port N --grant-fd N] [LIMITS] -- PROGRAM [ARG]...
 *        a3s-init --mode server --control-fd N --lifeline-fd N [--host-pidfd N]
 *                 [--rw PATH]... [--clean PATH]... [--no-landlock] [--grant-port N] [LIMITS]
 *                 [--exec-notify] -- PROGRAM [ARG]...
 * --grant-port and --grant-fd: a network grant (grant.c; a3s.h, "Network grants"):
 * one-shot, this command's; in server mode, EXEC requests may carry one.
 * LIMITS (sandbox and server modes; limits.c): --max-processes N (each
 * command's RLIMIT_NPROC), --memory-max N (the memory watchdog's bound, for
 * a sandbox without a memory cgroup) and --watch-tmpfs PATH... (the tmpfs
 * mounts whose contents it counts).
 * --exec-deny PATTERN, --exec-ask PATTERN and --exec-approve COMMAND (sandbox
 * and host modes; repeated): the exec check (exectrace.c) against the
 * patterns of the policy's bash deny and ask rules, with the simple commands
 * approved for this call; a stopped exec makes the exit status 126 and the
 * status fd receives "X<hex of ask|deny TAB PATTERN TAB COMMAND>.".
 * --exec-notify (server mode): the commands will come with such rules (the
 * first did), so every exec is notified to the init and each is seized then
 * (exectrace.c); without it a command with rules is traced from its fork,
 * and a command without them costs nothing. One-shot runs with rules always
 * work the first way where the kernel can.
 * Sandbox and server modes also need --host-ns user:N,mnt:N[,net:N],pid:N,
 * the caller's namespaces, none of which may be the init's (net is left
 * out only with --allow-connect, when the host shares its network).
 * The status fd receives "R" once the command runs, "E<message>" if setting it
 * up failed (the init then exits 125), "T" if it timed out (exit 124), "M" if
 * the memory watchdog killed it, "L" once it made a hard link, "S" if a
 * process was still there after SIGKILL and REAP_MS (one in uninterruptible
 * sleep), and last "D<exit status>." once everything else is done: the caller
 * need not wait for the init's exit, which the kernel holds back for such a
 * process.
 * In server mode each request's command is appended to PROGRAM [ARG]...
 */
#define _GNU_SOURCE
#include "init.h"
#include "../src/mountinfo.h"
#include "../src/session_msg.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <linux/keyctl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void status_write(int fd, const char *text, size_t len) {
    while (fd >= 0 && len > 0) {
        ssize_t n = write(fd, text, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        text += n;
        len -= (size_t)n;
    }
}

/* Reports a setup failure on stderr and the status fd (in server mode: a
 * DONE with the message on the control socket), then exits 125. */
_Noreturn void die(const struct config *cfg, const char *fmt, ...) {
    char msg[512];
    msg[0] = 'E';
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg + 1, sizeof msg - 1, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 1 : (size_t)n + 1 < sizeof msg ? (size_t)n + 1 : sizeof msg - 1;
    if (cfg)
        status_write(cfg->status_fd, msg, len);
    if (cfg && cfg->control_fd >= 0) {
        struct a3s_msg_done d = {.exit_code = EXIT_SETUP, .flags = A3S_DONE_SETUP_FAILED};
        snprintf(d.message, sizeof d.message, "%.*s", (int)(len - 1), msg + 1);
        uint8_t buf[A3S_MSG_HEADER + 16 + A3S_MSG_TEXT_MAX];
        size_t dlen = a3s_msg_encode_done(&d, buf, sizeof buf);
        a3s_msg_send(cfg->control_fd, buf, dlen, NULL, 0, 1000);
    }
    fprintf(stderr, "a3s-init: sandbox setup failed: %.*s\n", (int)(len - 1), msg + 1);
    if (cfg) /* nothing may outlive a failed setup (once we may say so) */
        signal_namespace(cfg, SIGKILL);
    _exit(EXIT_SETUP);
}

/* "Every process" is ours to signal only once prove_isolation showed we are
 * PID 1 of a new pid namespace: a bubblewrap that did not isolate would make
 * kill(-1) reach every process the caller can. */
void signal_namespace(const struct config *cfg, int sig) {
    if (cfg->owns_pidns)
        kill(-1, sig);
}

static uint64_t parse_u64(const char *s, const char *what) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *s == '\0' || *end != '\0' || s[0] == '-')
        die(NULL, "bad %s value '%s'", what, s);
    return v;
}

static int parse_fd(const char *s, const char *what) {
    uint64_t v = parse_u64(s, what);
    if (v > INT_MAX)
        die(NULL, "bad %s value '%s'", what, s);
    return (int)v;
}

static const char *const NS_KINDS[4] = {"user", "mnt", "net", "pid"};

#define NS_NET 2

/* "user:N,mnt:N,net:N,pid:N": the caller's namespaces (inode numbers) that
 * bubblewrap was asked to replace. net is missing when the host shares its
 * network with the sandbox (A3S_SANDBOX_SHARE_NET); the others never are. */
static void parse_host_ns(const char *v, struct config *cfg) {
    const char *at = v;
    for (int i = 0; i < 4; i++) {
        size_t n = strlen(NS_KINDS[i]);
        char *end;
        if (i == NS_NET && strncmp(at, "net:", 4) != 0)
            continue; /* host_ns[NS_NET] stays 0: not replaced */
        if (strncmp(at, NS_KINDS[i], n) != 0 || at[n] != ':' || at[n + 1] < '0' ||
            at[n + 1] > '9')
            die(NULL, "bad --host-ns value '%s'", v);
        errno = 0;
        cfg->host_ns[i] = strtoull(at + n + 1, &end, 10);
        if (errno || cfg->host_ns[i] == 0 || *end != (i < 3 ? ',' : '\0'))
            die(NULL, "bad --host-ns value '%s'", v);
        at = end + 1;
    }
    cfg->host_ns_set = true;
}

/* Sandbox modes: refuses to run unless bubblewrap isolated us, i.e. we are
 * PID 1 of a pid namespace whose parent is outside it (getppid() is 0 there)
 * and no namespace bubblewrap was asked to replace is the caller's (the
 * network is the caller's only when the host granted it, which also says
 * --allow-connect). Only then may "every process" be signalled
 * (docs/security.md). */
static void prove_isolation(struct config *cfg) {
    if (getpid() != 1 || getppid() != 0)
        die(cfg, "sandbox mode must run as PID 1 of a new pid namespace: bubblewrap did not "
                 "isolate the command");
    if (!cfg->host_ns_set)
        die(cfg, "sandbox mode needs --host-ns to check its namespaces");
    if (!cfg->host_ns[NS_NET] && !cfg->allow_connect)
        die(cfg, "--host-ns leaves out the network namespace, which only a network grant "
                 "(--allow-connect) shares");
    for (int i = 0; i < 4; i++) {
        char path[32];
        struct stat st;
        if (i == NS_NET && !cfg->host_ns[i])
            continue; /* the network the host granted */
        snprintf(path, sizeof path, "/proc/self/ns/%s", NS_KINDS[i]);
        if (stat(path, &st) < 0)
            die(cfg, "cannot check the %s namespace: %s", NS_KINDS[i], strerror(errno));
        if ((unsigned long long)st.st_ino == cfg->host_ns[i])
            die(cfg, "bubblewrap did not isolate the command: it shares the caller's %s "
                     "namespace",
                NS_KINDS[i]);
    }
    cfg->owns_pidns = true;
}

/* Owned host mode: no proc file system but the namespace's own /proc may be
 * reachable by path. A proc mount elsewhere (a chroot's, a container
 * runtime's) would show the host's processes, their environment and memory
 * maps; the caller covers each with a tmpfs, and this checks it did: every
 * proc mount point listed resolves to our /proc or to something that is not
 * a proc file system. A line it cannot read could be such a mount: refused. */
static void check_no_foreign_proc(const struct config *cfg) {
    struct stat own;
    if (stat("/proc", &own) < 0)
        die(cfg, "cannot stat /proc: %s", strerror(errno));
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        die(cfg, "cannot read /proc/self/mountinfo: %s", strerror(errno));
    char line[65536]; /* two paths of PATH_MAX, each escaped up to four times */
    struct a3s_mount m;
    int rc;
    while ((rc = a3s_mountinfo_next(f, line, sizeof line, &m)) != 0) {
        if (rc < 0) {
            fclose(f);
            die(cfg, "a line of /proc/self/mountinfo cannot be read");
        }
        if (strcmp(m.fstype, "proc") != 0)
            continue;
        struct statfs sf;
        struct stat st;
        if (statfs(m.mount_point, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC &&
            stat(m.mount_point, &st) == 0 && st.st_dev != own.st_dev) {
            fclose(f);
            die(cfg, "a proc file system other than the namespace's own is reachable at %s",
                m.mount_point);
        }
    }
    fclose(f);
}

/* Owned host mode: refuses to run unless we are PID 1 of a pid namespace
 * that is not the caller's, with a /proc of that namespace (its "self" is
 * 1) and no other proc reachable. Only then may "every process" be
 * signalled, and only then does the program see no process of the host. */
static void prove_own_pidns(struct config *cfg) {
    if (getpid() != 1 || getppid() != 0)
        die(cfg, "owned host mode must run as PID 1 of a new pid namespace");
    struct stat st;
    if (stat("/proc/self/ns/pid", &st) < 0)
        die(cfg, "cannot check the pid namespace: %s", strerror(errno));
    if ((unsigned long long)st.st_ino == cfg->own_pidns)
        die(cfg, "the program would share the caller's pid namespace");
    char self[16];
    ssize_t n = readlink("/proc/self", self, sizeof self - 1);
    if (n != 1 || self[0] != '1')
        die(cfg, "/proc is not the pid namespace's own");
    check_no_foreign_proc(cfg);
    cfg->owns_pidns = true;
    /* the caller's session keyring (and the keys it possesses through it) stays the
     * caller's: the program starts with an empty one of its own */
    if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0 && errno != ENOSYS)
        die(cfg, "cannot give the program a session keyring of its own: %s", strerror(errno));
}

static void parse_args(int argc, char **argv, struct config *cfg, struct exectrace *trace) {
    *cfg = (struct config){.trace = trace,
                           .status_fd = -1,
                           .links_fd = -1,
                           .diag_fd = -1,
                           .lifeline_fd = -1,
                           .control_fd = -1,
                           .host_pidfd = -1,
                           .oom_fd = -1,
                           .dump_fd = -1,
                           .grant_fd = -1,
                           .grant_ll = {.ruleset_fd = -1},
                           .grant_listener = -1,
                           .grace_ms = GRACE_MS_DEFAULT,
                           .landlock = true};
    bool mode_set = false;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        } else if (strcmp(a, "--no-landlock") == 0) {
            cfg->landlock = false;
            continue;
        } else if (strcmp(a, "--allow-connect") == 0) {
            cfg->allow_connect = true;
            continue;
        } else if (strcmp(a, "--exec-notify") == 0) {
            cfg->exec_notify = true; /* server mode: main() keeps it only if it can */
            continue;
        } else if (strcmp(a, "--under-warden") == 0) {
            cfg->under_warden = true;
            continue;
        }
        if (!v)
            die(NULL, "option %s needs a value", a);
        if (strcmp(a, "--mode") == 0) {
            if (strcmp(v, "sandbox") != 0 && strcmp(v, "host") != 0 && strcmp(v, "server") != 0)
                die(NULL, "--mode must be sandbox, host or server, not '%s'", v);
            cfg->sandbox = strcmp(v, "host") != 0;
            cfg->server = strcmp(v, "server") == 0;
            mode_set = true;
        } else if (strcmp(a, "--control-fd") == 0) {
            cfg->control_fd = parse_fd(v, a);
        } else if (strcmp(a, "--host-pidfd") == 0) {
            cfg->host_pidfd = parse_fd(v, a);
        } else if (strcmp(a, "--status-fd") == 0) {
            cfg->status_fd = parse_fd(v, a);
        } else if (strcmp(a, "--lifeline-fd") == 0) {
            cfg->lifeline_fd = parse_fd(v, a);
        } else if (strcmp(a, "--timeout-ms") == 0) {
            cfg->timeout_ms = parse_u64(v, a);
        } else if (strcmp(a, "--deadline-ns") == 0) {
            cfg->deadline_ns = parse_u64(v, a);
        } else if (strcmp(a, "--grace-ms") == 0) {
            cfg->grace_ms = parse_u64(v, a);
        } else if (strcmp(a, "--rw") == 0) {
            if (cfg->nrw == MAX_RW)
                die(NULL, "too many --rw paths (limit %d)", MAX_RW);
            cfg->rw[cfg->nrw++] = v;
        } else if (strcmp(a, "--host-ns") == 0) {
            parse_host_ns(v, cfg);
        } else if (strcmp(a, "--own-pidns") == 0) {
            cfg->own_pidns = parse_u64(v, a);
            if (cfg->own_pidns == 0)
                die(NULL, "bad %s value '%s'", a, v);
        } else if (strcmp(a, "--clean") == 0) {
            if (cfg->nclean == MAX_CLEAN)
                die(NULL, "too many --clean paths (limit %d)", MAX_CLEAN);
            cfg->clean[cfg->nclean++] = v;
        } else if (strcmp(a, "--max-processes") == 0) {
            cfg->max_processes = parse_u64(v, a);
        } else if (strcmp(a, "--memory-max") == 0) {
            cfg->memory_max = parse_u64(v, a);
        } else if (strcmp(a, "--kernel-memory-max") == 0) {
            cfg->kernel_memory_max = parse_u64(v, a);
        } else if (strcmp(a, "--grant-port") == 0) {
            uint64_t port = parse_u64(v, a);
            if (port == 0 || port > 65535)
                die(NULL, "bad %s value '%s'", a, v);
            cfg->grant_port = (uint16_t)port;
        } else if (strcmp(a, "--grant-fd") == 0) {
            cfg->grant_fd = parse_fd(v, a);
        } else if (strncmp(a, "--exec-", 7) == 0 &&
                   (!strcmp(a + 7, "deny") || !strcmp(a + 7, "ask") || !strcmp(a + 7, "approve"))) {
            char why[256];
            if (!exectrace_add_rule(cfg->trace, a + 7, v, why, sizeof why))
                die(NULL, "%s", why);
        } else if (strcmp(a, "--names-root") == 0) {
            cfg->names_root = v;
        } else if (strcmp(a, "--protect-missing") == 0) {
            if (cfg->nmissing == MAX_MISSING)
                die(NULL, "too many --protect-missing names (limit %d)", MAX_MISSING);
            if (!v[0] || strchr(v, '/') || !strcmp(v, ".") || !strcmp(v, ".."))
                die(NULL, "bad --protect-missing name '%s'", v);
            cfg->missing[cfg->nmissing++] = v;
        } else if (strcmp(a, "--watch-tmpfs") == 0) {
            if (cfg->nwatch_tmpfs == MAX_CLEAN)
                die(NULL, "too many --watch-tmpfs paths (limit %d)", MAX_CLEAN);
            cfg->watch_tmpfs[cfg->nwatch_tmpfs++] = v;
        } else {
            die(NULL, "unknown option '%s'", a);
        }
        i++;
    }
    if (!mode_set)
        die(NULL, "--mode is required");
    if (cfg->server && (cfg->control_fd < 0 || cfg->lifeline_fd < 0))
        die(NULL, "server mode needs --control-fd and --lifeline-fd");
    if (cfg->own_pidns && cfg->sandbox)
        die(NULL, "--own-pidns is for host mode");
    if (cfg->under_warden && (cfg->sandbox || cfg->own_pidns))
        die(NULL, "--under-warden is for host mode without --own-pidns");
    if (cfg->exec_notify && !cfg->server)
        die(NULL, "--exec-notify is for server mode (a one-shot run's rules say it)");
    if (cfg->server && exectrace_active(cfg->trace))
        die(NULL, "--exec-* options are for one-shot runs: a server's come with each command");
    if (cfg->grant_fd >= 0 && (cfg->server || !cfg->sandbox || !cfg->grant_port))
        die(NULL, "--grant-fd is for a one-shot sandbox with --grant-port");
    if (cfg->nmissing && (!cfg->sandbox || !cfg->names_root))
        die(NULL, "--protect-missing is for a sandbox with --names-root");
    if (i >= argc)
        die(cfg, "no command given after --");
    cfg->argv = argv + i;
}

/* Our own fds must not leak into the command. */
void set_cloexec(int fd) {
    if (fd >= 0) {
        int flags = fcntl(fd, F_GETFD);
        if (flags >= 0)
            fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
    }
}

bool has_capabilities(void) {
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capget, &hdr, data) < 0)
        return true; /* cannot tell: assume the worst */
    for (int i = 0; i < 2; i++)
        if (data[i].effective || data[i].permitted || data[i].inheritable)
            return true;
    return false;
}

/* execvp's PATH search, done before fork so the child only calls execve. */
bool resolve_program(const char *name, char out[PATH_MAX]) {
    if (strchr(name, '/')) {
        if (strlen(name) >= PATH_MAX)
            return false;
        strcpy(out, name);
        return true;
    }
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *end = strchr(path, ':');
        size_t len = end ? (size_t)(end - path) : strlen(path);
        if (len > 0 && len + 1 + strlen(name) < PATH_MAX) {
            memcpy(out, path, len);
            out[len] = '/';
            strcpy(out + len + 1, name);
            if (access(out, X_OK) == 0)
                return true;
        }
        path += len + (end ? 1 : 0);
    }
    return false;
}

/* The cgroup tier (--under-warden): the warden, our parent, and we are all
 * that empties the program's cgroup once the caller is gone, and the program
 * runs as our uid. Its guard filter (a3s_seccomp_build_guard) refuses what
 * would signal, trace or limit either of us: our pids, our process group
 * (the warden's too: we did not leave it; the command does, by setsid) and
 * -1, every process of the uid. The pids are fixed for our lifetime: the
 * warden lives until we end, and we are the program's parent. */
static void build_guard(const struct config *cfg, struct a3s_seccomp_program *guard) {
    pid_t self = getpid(), warden = getppid();
    pid_t group = getpgid(0), warden_group = getpgid(warden);
    if (warden <= 1 || group <= 0 || warden_group <= 0)
        die(cfg, "--under-warden: the warden (our parent, pid %d) is gone", (int)warden);
    const int32_t targets[] = {self, warden, -group, -warden_group, -1};
    a3s_error err;
    if (a3s_seccomp_build_guard(targets, sizeof targets / sizeof *targets, guard, &err) !=
        A3S_OK)
        die(cfg, "%s", err.message);
}

/* In the forked child: only async-signal-safe calls from here to execve. */
_Noreturn void run_child(const struct child_spec *c) {
    struct exec_failure f = {0};
    sigset_t none;
    sigemptyset(&none);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        sigaction(sig, &dfl, NULL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    const struct a3s_landlock *ll = c->ll;
    const struct a3s_seccomp_program *filter = c->filter;
    if (c->trace_fd[0] >= 0 && !exectrace_await(c->trace_fd[1], c->trace_fd[0])) {
        f.err = EPERM; /* never run untraced */
        memcpy(f.step, "exec trace", 11);
    } else if (setsid() < 0) {
        f.err = errno;
        memcpy(f.step, "setsid", 7);
    } else if ((c->in >= 0 && dup2(c->in, 0) < 0) || (c->out >= 0 && dup2(c->out, 1) < 0) ||
               (c->err >= 0 && dup2(c->err, 2) < 0)) {
        f.err = errno;
        memcpy(f.step, "dup2", 5);
    } else if (c->cwd && chdir(c->cwd) < 0) {
        f.err = errno;
        memcpy(f.step, "chdir", 6);
    } else if (c->nproc &&
               setrlimit(RLIMIT_NPROC, &(struct rlimit){c->nproc, c->nproc}) < 0) {
        f.err = errno;
        memcpy(f.step, "rlimit_nproc", 13);
    } else if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
        f.err = errno;
        memcpy(f.step, "no_new_privs", 13);
    } else if (ll && (f.err = -a3s_landlock_enforce(ll)) != 0) {
        memcpy(f.step, "landlock", 9);
    } else if (filter && (f.err = -a3s_seccomp_install(filter)) != 0) {
        memcpy(f.step, "seccomp", 8);
    } else {
        execve(c->program, c->argv, c->envp);
        f.err = errno;
        memcpy(f.step, "execve", 7);
    }
    ssize_t ignored = write(c->report_fd, &f, sizeof f);
    (void)ignored;
    _exit(127);
}

/* Sends `sig` to every process we are responsible for. `child` is the
 * command while it is unreaped (its pid and group are ours), else -1: a
 * reaped pid may already name another process. */
static void signal_all(const struct config *cfg, pid_t child, int sig) {
    if (cfg->sandbox || cfg->owns_pidns) {
        signal_namespace(cfg, sig); /* every other process of our namespace */
        return;
    }
    if (child > 0) {
        kill(-child, sig); /* the command's process group */
        kill(child, sig);
    }
    /* descendants were reparented to us (subreaper): unreaped, their pids are ours */
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    int pid;
    while (fscanf(f, "%d", &pid) == 1) {
        kill(-pid, sig);
        kill(pid, sig);
    }
    fclose(f);
}

/* Host mode: kill and reap until no child is left. */
static void reap_everything(const struct config *cfg, pid_t child) {
    for (int round = 0; round < 1000; round++) {
        signal_all(cfg, child, SIGKILL);
        pid_t p;
        int st;
        while ((p = exectrace_wait(cfg->trace, &st, WNOHANG)) > 0) {
            if (p == child)
                child = -1;
        }
        if (p < 0 && errno == ECHILD)
            return;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

int status_of(int wstatus) {
    if (WIFEXITED(wstatus))
        return WEXITSTATUS(wstatus);
    if (WIFSIGNALED(wstatus))
        return 128 + WTERMSIG(wstatus);
    return 1;
}

ssize_t read_report(const struct config *cfg, struct exectrace *t, int fd,
                    struct exec_failure *f, bool *linked) {
    for (;;) {
        if (cfg->exec_notify && cfg->links_fd >= 0) {
            struct pollfd p[2] = {{.fd = fd, .events = POLLIN},
                                  {.fd = cfg->links_fd, .events = POLLIN}};
            if (poll(p, 2, -1) < 0) {
                if (errno == EINTR)
                    continue;
                return -1;
            }
            if ((p[1].revents & POLLIN) && links_take(cfg, t, linked) < 0)
                return -1;
            if (!p[0].revents)
                continue;
        }
        ssize_t n = read(fd, f, sizeof *f);
        if (n >= 0 || errno != EINTR)
            return n;
    }
}

/* Sandbox mode: kills every other process and reaps for at most REAP_MS;
 * one still there (uninterruptible sleep) is reported as "S" (the caller's
 * A3S_RESULT_OUTLIVED): this PID 1's exit then waits for it in the kernel. */
static void kill_namespace(const struct config *cfg) {
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0); /* by the clock: a loaded machine sleeps longer */
    for (;;) {
        signal_namespace(cfg, SIGKILL);
        int st;
        pid_t p;
        while ((p = waitpid(-1, &st, WNOHANG | __WALL)) > 0) {
        }
        if (p < 0 && errno == ECHILD)
            return;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long waited = (now.tv_sec - t0.tv_sec) * 1000LL + (now.tv_nsec - t0.tv_nsec) / 1000000;
        if (waited >= REAP_MS) {
            status_write(cfg->status_fd, "S", 1);
            return;
        }
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
    }
}

/* Ends the run with `code`, said first on the status fd as "D<code>.": the
 * caller has its result from it, without waiting for this process's exit,
 * which the kernel holds back until every process of the namespace is gone. */
static _Noreturn void finish(struct config *cfg, pid_t child, int code) {
    grant_close(&cfg->grant_listener); /* the grant ends with the command */
    if (cfg->sandbox)
        kill_namespace(cfg);
    else
        reap_everything(cfg, child);
    char done[16];
    int n = snprintf(done, sizeof done, "D%d.", code);
    status_write(cfg->status_fd, done, (size_t)n);
    _exit(code);
}

/* The lifeline is readable: a SIGNAL request of the caller's (its signal),
 * nothing after all (-1: a wake-up without data), or the caller's end or
 * anything else (0: take everything down; what is not a whole request is
 * not trusted to be one). Each request is one atomic write of
 * A3S_MSG_SIGNAL_LEN bytes, so one read takes one whole request. */
static int lifeline_request(int fd) {
    uint8_t buf[A3S_MSG_SIGNAL_LEN];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return -1;
    return n < 0 ? 0 : a3s_msg_decode_signal(buf, (size_t)n);
}

/* A timer that fires at `ns` of CLOCK_MONOTONIC (at once if that has passed). */
static int arm_timer_at(uint64_t ns) {
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    if (fd < 0)
        return -1;
    struct itimerspec its = {0};
    its.it_value.tv_sec = (time_t)(ns / 1000000000u);
    its.it_value.tv_nsec = (long)(ns % 1000000000u);
    if (ns == 0)
        its.it_value.tv_nsec = 1;
    timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
    return fd;
}

int arm_timer(uint64_t ms) {
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    if (fd < 0)
        return -1;
    struct itimerspec its = {0};
    its.it_value.tv_sec = (time_t)(ms / 1000);
    its.it_value.tv_nsec = (long)(ms % 1000) * 1000000L;
    if (ms == 0)
        its.it_value.tv_nsec = 1;
    timerfd_settime(fd, 0, &its, NULL);
    return fd;
}

/* ---- the readiness self-test ------------------------------------------------
 * Run as the sandboxed command ("a3s-init --probe") to prove the boundary is
 * what it claims: each check prints one line, the last line is the verdict. */

static int probe_failures;

static void probe_check(bool ok, const char *what, const char *detail) {
    printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what, detail ? ": " : "", detail ? detail : "");
    if (!ok)
        probe_failures++;
}

static int count_lines(const char *path) {
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    int n = 0, c;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

static int run_probe(void) {
    probe_check(!has_capabilities(), "no capabilities", NULL);
    probe_check(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1, "no_new_privs", NULL);
    FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    bool filter = false;
    while (f && fgets(line, sizeof line, f))
        filter |= strncmp(line, "Seccomp:\t2", 10) == 0;
    if (f)
        fclose(f);
    probe_check(filter, "seccomp filter mode", NULL);
    int fd = open("/a3s-probe", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    probe_check(fd < 0, "no write outside the workspace", fd < 0 ? NULL : "created /a3s-probe");
    if (fd >= 0) {
        close(fd);
        unlink("/a3s-probe");
    }
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    probe_check(s < 0, "no AF_UNIX socket", NULL);
    if (s >= 0)
        close(s);
    s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool listened = false;
    if (s >= 0) {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        listened = bind(s, (struct sockaddr *)&a, sizeof a) == 0 && listen(s, 1) == 0;
        close(s);
    }
    probe_check(!listened, "no listening socket", NULL);
    /* no network: only the loopback device and no route (nothing is sent) */
    probe_check(count_lines("/proc/net/route") <= 1, "no network route", NULL);
    probe_check(count_lines("/proc/net/dev") <= 3, "no network device but lo", NULL);
    int pids = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        pids += e->d_name[0] >= '1' && e->d_name[0] <= '9';
    if (d)
        closedir(d);
    probe_check(d && pids <= 3, "no host processes visible", NULL);
    char denied[2048];
    int checked = probe_denials(denied, sizeof denied);
    char what[64];
    snprintf(what, sizeof what, "every denied system call refused (%d)", checked);
    probe_check(checked > 0, what, denied);
    printf("a3s-probe: %s\n", probe_failures ? "FAILED" : "ok");
    return probe_failures ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--probe") == 0)
        return run_probe();
    if (argc > 2 && strcmp(argv[1], "--mode") == 0 && strcmp(argv[2], "janitor") == 0)
        return janitor_main(argc, argv); /* on the host, outside any sandbox (janitor.c) */
    if (argc > 2 && strcmp(argv[1], "--mode") == 0 && strcmp(argv[2], "warden") == 0)
        return warden_main(argc, argv); /* a host program's cgroup (warden.c) */
    struct config cfg;
    struct exectrace trace = {.root = -1, .tell_fd = -1};
    parse_args(argc, argv, &cfg, &trace);
    bool tracing = exectrace_active(&trace);
    /* nothing we were given reaches a command: our own fds, and whatever
     * bubblewrap passed on (the host's O_PATH fds it bound from) */
    if (syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */) < 0)
        for (int fd = 3; fd < 1024; fd++)
            set_cloexec(fd);
    set_cloexec(cfg.status_fd);
    set_cloexec(cfg.lifeline_fd);
    set_cloexec(cfg.control_fd);
    set_cloexec(cfg.host_pidfd);
    set_cloexec(cfg.grant_fd);

    /* Opened while /proc/self is still ours (limits.c). */
    if (cfg.sandbox && !own_settings_open(&cfg))
        die(&cfg, "cannot open /proc/self/oom_score_adj and coredump_filter: %s",
            strerror(errno));
    /* Nobody may ptrace or read the memory of the supervisor. */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        die(&cfg, "prctl(PR_SET_DUMPABLE): %s", strerror(errno));
    if (cfg.sandbox) {
        /* bwrap's parent-death signal does not survive every start-up path */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
            die(&cfg, "prctl(PR_SET_PDEATHSIG): %s", strerror(errno));
        prove_isolation(&cfg);
        if (has_capabilities())
            die(&cfg, "the init still holds capabilities; refusing to run the command");
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
            die(&cfg, "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
    } else if (cfg.own_pidns) {
        /* bubblewrap's child: its death (the caller's SIGKILL of it) takes us along */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
            die(&cfg, "prctl(PR_SET_PDEATHSIG): %s", strerror(errno));
        prove_own_pidns(&cfg);
    } else if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
        die(&cfg, "prctl(PR_SET_CHILD_SUBREAPER): %s", strerror(errno));
    }
    if (cfg.lifeline_fd >= 0) {
        struct pollfd p[2] = {{.fd = cfg.lifeline_fd, .events = POLLIN},
                              {.fd = cfg.host_pidfd, .events = POLLIN}};
        if (poll(p, 2, 0) > 0)
            die(&cfg, "the caller is already gone");
    }

    signal(SIGPIPE, SIG_IGN); /* a closed status pipe must not kill the supervisor */

    /* Everything the child needs is prepared before fork. */
    char program[PATH_MAX];
    if (!resolve_program(cfg.argv[0], program))
        die(&cfg, "%s: command not found", cfg.argv[0]);
    struct a3s_landlock ll = {.ruleset_fd = -1};
    struct a3s_seccomp_program filter = {0}, own_filter = {0}, guard = {0};
    a3s_error err;
    if (cfg.under_warden)
        build_guard(&cfg, &guard);
    if (cfg.sandbox) {
        if (cfg.landlock &&
            a3s_landlock_prepare_net(cfg.rw, cfg.nrw, cfg.allow_connect, &ll, &err) != A3S_OK)
            die(&cfg, "%s", err.message);
        /* a granted command may connect to the proxy's port, and nowhere else */
        if (cfg.landlock && cfg.grant_port &&
            a3s_landlock_prepare_port(cfg.rw, cfg.nrw, cfg.grant_port, &cfg.grant_ll, &err) !=
                A3S_OK)
            die(&cfg, "%s", err.message);
        if (a3s_seccomp_build(0, &filter, &err) != A3S_OK)
            die(&cfg, "%s", err.message);
        /* The exec check (exectrace.c) traces commands: the init's own
         * filter then lets it ptrace, and each command stacks the rest
         * (ptrace refused): together, the full filter. A server may get
         * rules with any command. */
        if (tracing || cfg.server) {
            a3s_seccomp_program_free(&filter);
            if (a3s_seccomp_build(A3S_SECCOMP_TRACER, &own_filter, &err) != A3S_OK ||
                a3s_seccomp_build(A3S_SECCOMP_PTRACE_ONLY, &filter, &err) != A3S_OK)
                die(&cfg, "%s", err.message);
        }
        /* Before the deny-list, which refuses any later listener: every
         * link() and linkat() of a command is reported to us, because a
         * hard link made and removed again can change a file where no
         * directory watch of the host sees it (docs/verification.md). */
        /* The exec check sees each exec as a notification of our listener
         * and seizes only the thread that makes it (exectrace.c): forks
         * cost nothing. A server watches when told its commands come with
         * rules (--exec-notify): every exec costs a hand-off then. */
        cfg.exec_notify = tracing || (cfg.server && cfg.exec_notify);
        int links;
        if (cfg.nmissing) { /* protected names kept missing: names.c */
            char why[256];
            links = names_start(&cfg, &ll, own_filter.filter ? &own_filter : &filter,
                                own_filter.filter ? &filter : NULL, why, sizeof why);
            if (links < 0)
                die(&cfg, "%s", why);
        } else {
            links = a3s_seccomp_watch_links(cfg.exec_notify);
            if (links < 0 && cfg.exec_notify) /* the full trace then, from each fork */
                cfg.exec_notify = false, links = a3s_seccomp_watch_links(false);
        }
        cfg.links_fd = links >= 0 ? links : -1;
        trace.notify = cfg.exec_notify; /* else the whole tree is traced, from its fork */
        /* the watchdog's sock_diag socket: the filter refuses AF_NETLINK after this */
        cfg.diag_fd = watchdog_socket(&cfg);
        /* The init runs under the command's filter too, installed once here
         * with everything prepared (nothing it does later is refused by
         * it): a process of ours in the sandbox without a filter would be
         * the one a command tries to reach. Every command inherits it (and,
         * under the tracer's, stacks the ptrace rule). */
        int rc = a3s_seccomp_install(own_filter.filter ? &own_filter : &filter);
        if (rc != 0)
            die(&cfg, "cannot install the seccomp filter on the init: %s", strerror(-rc));
    }

    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGQUIT);
    if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
        die(&cfg, "sigprocmask: %s", strerror(errno));
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0)
        die(&cfg, "signalfd: %s", strerror(errno));
    if (cfg.server)
        serve(&cfg, program, &ll, &filter, sfd); /* never returns; commands stack the filter */

    if (cfg.grant_fd >= 0) {
        char why[256];
        cfg.grant_listener = grant_open(cfg.grant_fd, cfg.grant_port, why, sizeof why);
        if (cfg.grant_listener < 0)
            die(&cfg, "%s", why);
        close(cfg.grant_fd);
        cfg.grant_fd = -1;
    }
    int report[2], go[2] = {-1, -1}, ready[2] = {-1, -1};
    bool seize_tree = tracing && !trace.notify; /* the full trace, from the fork */
    if (pipe2(report, O_CLOEXEC) < 0 ||
        (seize_tree && (pipe2(go, O_CLOEXEC) < 0 || pipe2(ready, O_CLOEXEC) < 0)))
        die(&cfg, "pipe2: %s", strerror(errno));
    if (tracing) {
        exectrace_locate(&trace, environ);
        exectrace_tell_to(&trace, 2); /* the command's stderr is ours */
        if (cfg.names && trace.notify)
            atomic_store(&cfg.names->execs_checked, true);
    }
    if (cfg.sandbox)
        oom_adj_for_command(&cfg);
    pid_t child = fork();
    if (cfg.sandbox && child != 0)
        own_settings_restore(&cfg);
    if (child < 0)
        die(&cfg, "fork: %s", strerror(errno));
    if (child == 0) {
        close(report[0]);
        if (seize_tree) {
            close(go[1]);
            close(ready[0]);
        }
        struct child_spec spec = {
            .program = program,
            .argv = cfg.argv,
            .envp = environ,
            .in = -1,
            .out = -1,
            .err = -1,
            .ll = !cfg.sandbox ? NULL : cfg.grant_listener >= 0 ? &cfg.grant_ll : &ll,
            /* inherited from the init (sandbox mode), or stacked on the tracer's */
            .filter = own_filter.filter ? &filter : guard.filter ? &guard : NULL,
            .nproc = cfg.sandbox ? command_nproc(&cfg) : 0,
            .report_fd = report[1],
            .trace_fd = {go[0], ready[1]},
        };
        run_child(&spec);
    }
    close(report[1]);
    trace.root = child;
    if (seize_tree) {
        close(go[0]);
        close(ready[1]);
        int terr = exectrace_seize(&trace, child, ready[0], go[1]);
        if (terr) {
            kill(child, SIGKILL); /* it must not run untraced */
            int st;
            waitpid(child, &st, __WALL);
            die(&cfg, "cannot trace the command's execs for the exec check (ptrace: %s)",
                strerror(terr));
        }
    }
    struct exec_failure f;
    bool linked = cfg.sandbox && cfg.links_fd < 0; /* unwatchable: assume links */
    ssize_t n = read_report(&cfg, &trace, report[0], &f, &linked);
    close(report[0]);
    a3s_landlock_close(&ll);
    a3s_landlock_close(&cfg.grant_ll);
    a3s_seccomp_program_free(&filter);
    a3s_seccomp_program_free(&own_filter);
    a3s_seccomp_program_free(&guard);
    if (n == (ssize_t)sizeof f) {
        f.step[sizeof f.step - 1] = '\0';
        int st;
        waitpid(child, &st, __WALL);
        die(&cfg, "%s %s: %s", f.step, cfg.argv[0], strerror(f.err));
    }
    status_write(cfg.status_fd, "R", 1);
    if (linked)
        status_write(cfg.status_fd, "L", 1);

    /* the caller's deadline counts bubblewrap's start too: the result's bound is
     * from the caller's call, as in the long-lived sandbox */
    int tfd = cfg.deadline_ns ? arm_timer_at(cfg.deadline_ns)
              : cfg.timeout_ms ? arm_timer(cfg.timeout_ms)
                               : -1;
    int wfd = cfg.sandbox ? watchdog_arm(&cfg) : -1;
    bool timed_out = false, stopping = false;
    for (;;) {
        struct pollfd fds[6] = {
            {.fd = sfd, .events = POLLIN},
            {.fd = tfd, .events = POLLIN},
            {.fd = cfg.lifeline_fd, .events = POLLIN},
            /* a copy of the lifeline in a child the caller forked must not keep us up */
            {.fd = cfg.host_pidfd, .events = POLLIN},
            {.fd = wfd, .events = POLLIN},
            {.fd = cfg.links_fd, .events = POLLIN},
        };
        int rc = poll(fds, 6, -1);
        if (rc < 0 && errno != EINTR)
            finish(&cfg, child, EXIT_SETUP);
        if (fds[5].revents & POLLIN) {
            bool was = linked;
            if (links_take(&cfg, &trace, &linked) < 0) {
                /* unanswerable: the command's link (and exec) calls fail */
                close(cfg.links_fd);
                cfg.links_fd = -1;
                linked = true;
            }
            if (linked && !was)
                status_write(cfg.status_fd, "L", 1);
        }
        if (fds[2].revents && !fds[3].revents) {
            /* a request to pass a signal on (a stop's first step), or the caller's end */
            int sig = (fds[2].revents & POLLIN) ? lifeline_request(cfg.lifeline_fd) : 0;
            if (sig == 0)
                finish(&cfg, child, 128 + SIGKILL);
            if (sig > 0)
                signal_all(&cfg, child, sig);
        }
        if (fds[3].revents) /* the caller is gone: take everything down */
            finish(&cfg, child, 128 + SIGKILL);
        if ((fds[4].revents & POLLIN) && watchdog_over(&cfg, wfd)) {
            /* over the memory bound: the command goes, as if the kernel's OOM
             * killer had struck in a memory cgroup */
            status_write(cfg.status_fd, "M", 1);
            signal_all(&cfg, child, SIGKILL);
            close(wfd);
            wfd = -1;
        }
        if (fds[1].revents & POLLIN) {
            uint64_t ticks;
            ssize_t ignored = read(tfd, &ticks, sizeof ticks);
            (void)ignored;
            if (stopping) {
                finish(&cfg, child, 128 + SIGKILL);
            } else if (!timed_out) {
                timed_out = true;
                status_write(cfg.status_fd, "T", 1);
                signal_all(&cfg, child, SIGTERM);
                close(tfd);
                tfd = arm_timer(cfg.grace_ms);
            } else {
                finish(&cfg, child, EXIT_TIMEOUT);
            }
        }
        if (fds[0].revents & POLLIN) {
            /* a batch per read: a wake-up of the tracer is one read, not two */
            struct signalfd_siginfo sis[8];
            bool reap = false;
            ssize_t got;
            do {
                got = read(sfd, sis, sizeof sis);
                for (ssize_t i = 0; i < got / (ssize_t)sizeof *sis; i++) {
                    const struct signalfd_siginfo si = sis[i];
                    if (si.ssi_signo != SIGCHLD && cfg.sandbox) {
                        /* In a sandbox nothing outside sends these to PID 1: the
                         * caller stops a run by killing bubblewrap (whose death
                         * kills us: the parent-death signal) or through the
                         * lifeline. So a signal here came from a command, and
                         * whatever it claims to be (rt_sigqueueinfo forges any
                         * si_pid), it does not stop the run. */
                        continue;
                    }
                    if (si.ssi_signo != SIGCHLD && cfg.owns_pidns &&
                        !(si.ssi_code == SI_USER && si.ssi_pid == 0)) {
                        /* Owned host mode: a stop request comes from outside the
                         * namespace (kill or pidfd_send_signal: SI_USER, and a
                         * sender we cannot see has pid 0 here); the program's
                         * own signals to its init are ignored. SI_USER cannot be
                         * forged with rt_sigqueueinfo. */
                        continue;
                    }
                    if (si.ssi_signo != SIGCHLD) {
                        /* host mode: a stop request from the caller's cancel or
                         * timeout: pass it on, then KILL everything after the grace */
                        signal_all(&cfg, child, (int)si.ssi_signo);
                        if (!stopping) {
                            stopping = true;
                            if (tfd >= 0)
                                close(tfd);
                            tfd = arm_timer(cfg.grace_ms);
                        }
                        continue;
                    }
                    reap = true;
                }
            } while (got == (ssize_t)sizeof sis);
            /* once per wake-up: with a tracer busy past its bound, the next
             * SIGCHLD (exectrace_wait raises one) comes back through poll */
            int st;
            pid_t p;
            while (reap && (p = exectrace_wait(&trace, &st, WNOHANG)) > 0) {
                if (p != child)
                    continue;
                /* reaped: its pid is no longer ours to signal */
                char rec[sizeof trace.first * 2 + 3];
                size_t rl = exectrace_report(&trace, rec, sizeof rec);
                if (rl)
                    status_write(cfg.status_fd, rec, rl);
                finish(&cfg, -1,
                       timed_out    ? EXIT_TIMEOUT
                       : trace.stops ? EXIT_EXEC_STOPPED
                                     : status_of(st));
            }
        }
    }
}

