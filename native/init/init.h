/* init.h - what a3s_init.c (the modes) and server.c (server mode) share. */
#ifndef A3S_INIT_H
#define A3S_INIT_H

#include "../src/exec_match.h"
#include "../src/landlock_linux.h"
#include "../src/seccomp_linux.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define EXIT_SETUP 125
#define EXIT_TIMEOUT 124
#define EXIT_EXEC_STOPPED 126 /* the exec check stopped a program of the command */
/* kill_grace_ms 0 means this (A3S_DEFAULT_GRACE_MS of the host, sandbox_internal.h) */
#define GRACE_MS_DEFAULT 500
/* After SIGKILL, how long the init reaps before it reports what is left (a process in
 * uninterruptible sleep, which dies as it wakes) instead of waiting for it: with the grace
 * this bounds the result of a timeout (timeout_ms + kill_grace_ms + REAP_MS). */
#define REAP_MS 250
#define MAX_RW 64
#define MAX_CLEAN 16
#define MAX_MISSING 64

struct exectrace;

/* names.c's state that the main thread shares (the exec check). */
struct names_shared {
    atomic_bool execs_checked; /* the running command has exec rules: execs go to the main
                                  thread (else names.c lets them through at once) */
    atomic_bool link_missed;   /* a link report did not fit in the pipe */
    int listener;              /* the listener, whose exec notifications the main thread
                                  answers */
};

struct config {
    bool sandbox; /* false: host mode */
    bool server;  /* server mode (also sandbox) */
    int status_fd;
    int lifeline_fd;
    int control_fd; /* server mode: the control socket */
    int host_pidfd; /* server mode: a pidfd of the caller, readable once it has exited */
    int diag_fd;    /* the memory watchdog's NETLINK_SOCK_DIAG socket, opened before the
                       seccomp filter (which refuses it); -1: socket buffers not counted */
    int links_fd;   /* sandbox: the listener of link() and linkat() calls (every one is
                       let through and reported); -1: they cannot be watched here, so every
                       command is reported as having made links */
    bool exec_notify; /* links_fd also gets every execve and execveat (exectrace.c) */
    uint64_t timeout_ms;
    uint64_t deadline_ns; /* --deadline-ns: when the command's time ends (CLOCK_MONOTONIC, the
                             caller's clock too); 0: timeout_ms from the command's start */
    uint64_t grace_ms;
    const char *rw[MAX_RW];
    size_t nrw;
    const char *clean[MAX_CLEAN]; /* server mode: trees restored after every command */
    size_t nclean;
    bool landlock;
    bool allow_connect; /* --allow-connect: Landlock leaves TCP connect alone (a network grant) */
    char **argv; /* the command (server mode: its first words) */
    /* sandbox modes: the caller's user, mnt, net and pid namespace inodes
     * (--host-ns), which ours must all differ from */
    unsigned long long host_ns[4];
    bool host_ns_set;
    bool owns_pidns; /* proven PID 1 of a new pid namespace: kill(-1) reaches only it */
    /* owned host mode (--own-pidns N): the caller's pid namespace inode, which
     * ours must differ from; 0: host mode under the subreaper */
    unsigned long long own_pidns;
    bool under_warden; /* --under-warden: the parent is the cgroup tier's warden (warden.c) */
    /* limits.c */
    int oom_fd;             /* the init's own /proc/self/oom_score_adj, opened while dumpable */
    int oom_base;           /* its value at start */
    int dump_fd;            /* likewise /proc/self/coredump_filter */
    unsigned long long dump_base;
    uint64_t max_processes; /* each command's RLIMIT_NPROC; 0: none */
    uint64_t memory_max;    /* the watchdog's bound on the sandbox's memory; 0: no watchdog */
    uint64_t kernel_memory_max; /* with a memory cgroup: the watchdog's bound on the socket
                                   and pipe buffers alone, which the cgroup may not charge */
    const char *watch_tmpfs[MAX_CLEAN]; /* the sandbox's tmpfs mounts: their contents count */
    size_t nwatch_tmpfs;
    /* network grants (grant.c) */
    uint16_t grant_port;           /* --grant-port: where the proxy's socket is bound; 0: none */
    int grant_fd;                  /* --grant-fd (one-shot): the caller's grant socket */
    struct a3s_landlock grant_ll;  /* Landlock for a granted command: connect to grant_port */
    int grant_listener;            /* the running command's proxy socket, -1 if none */
    /* the exec check (exectrace.c): --exec-deny, --exec-ask and --exec-approve of a
     * one-shot run (server mode: each EXEC brings its own) */
    struct exectrace *trace;
    /* names.c: protected names missing from the workspace (--protect-missing),
     * kept missing by emulating every call that makes a name; none: not used */
    const char *names_root; /* --names-root: the workspace, as the sandbox sees it */
    const char *missing[MAX_MISSING];
    size_t nmissing;
    struct names_shared *names; /* set by names_start */
};

/* What a child reports through its close-on-exec pipe when it cannot exec. */
struct exec_failure {
    int err;
    char step[32];
};

/* Everything a forked child needs; run_child makes only async-signal-safe
 * calls: default signals, setsid, the stdio fds (-1: keep), NoNewPrivs,
 * Landlock and seccomp (NULL: none), execve; a failure is written to
 * report_fd and the child exits 127. */
struct child_spec {
    const char *program;
    char *const *argv;
    char *const *envp;
    int in, out, err;
    const char *cwd; /* NULL: stay where the init is */
    const struct a3s_landlock *ll;
    const struct a3s_seccomp_program *filter;
    uint64_t nproc; /* RLIMIT_NPROC to set (0: leave it) */
    int report_fd;
    int trace_fd[2]; /* the exec check (exectrace.c): the child becomes traceable, writes a
                        byte to trace_fd[1] and waits for one on trace_fd[0] before anything
                        else; -1: not traced */
};

_Noreturn void die(const struct config *cfg, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Sandbox modes: sig to every other process of the pid namespace, only
 * once the init proved it is PID 1 of one it owns (cfg->owns_pidns); else
 * nothing. Every kill(-1, ...) of the init goes through here. */
void signal_namespace(const struct config *cfg, int sig);
void set_cloexec(int fd);
bool has_capabilities(void);
bool resolve_program(const char *name, char out[PATH_MAX]);
int status_of(int wstatus);
int arm_timer(uint64_t ms);
_Noreturn void run_child(const struct child_spec *c);

/* The init's own settings a fork passes on (limits.c). own_settings_open
 * opens its /proc/self/oom_score_adj and coredump_filter (call it while
 * still dumpable) and records their values; oom_adj_for_command sets the
 * OOM score a command inherits through the next fork (the kernel's
 * maximum); own_settings_restore puts the init's own back (false if it
 * cannot). */
bool own_settings_open(struct config *cfg);
void oom_adj_for_command(const struct config *cfg);
bool own_settings_restore(const struct config *cfg);

/* The RLIMIT_NPROC a command gets: cfg->max_processes, or less if the
 * init's own hard limit is lower (it cannot raise it); 0 for none. */
uint64_t command_nproc(const struct config *cfg);

/* The memory watchdog (limits.c), for a sandbox without a memory cgroup:
 * watchdog_arm returns a timerfd ticking while a command runs (-1 when
 * there is no bound, or no timer); watchdog_over, on a tick, says whether
 * the sandbox's memory (its processes' resident anonymous memory, the
 * contents of its tmpfs mounts and of SysV shared memory) is above the
 * bound: the caller then kills the command. */
int watchdog_socket(const struct config *cfg);
int watchdog_arm(const struct config *cfg);
bool watchdog_over(const struct config *cfg, int tfd);

/* Network grants (grant.c): grant_open binds the proxy's socket to
 * 127.0.0.1:port, hands it to the caller through grant_fd and waits until
 * the caller listens; the socket, or -1 with `why` filled. grant_close
 * shuts it down (it stops listening in every process that holds it) and
 * closes it. */
int grant_open(int grant_fd, uint16_t port, char *why, size_t cap);
void grant_close(int *listener);

/* names.c: forks the helper (confined by ll and the filters f1 then f2, as
 * a command is), installs the filter that notifies every call making a name
 * and starts the thread that serves it. Returns the read end of a pipe that
 * gets a byte for each link() or linkat() (cfg->links_fd), or -1 with `why`. */
int names_start(struct config *cfg, const struct a3s_landlock *ll,
                const struct a3s_seccomp_program *f1, const struct a3s_seccomp_program *f2,
                char *why, size_t cap);
/* After poll finds cfg->links_fd readable: takes what it reports (a link
 * call let through and *linked set, the names pipe drained, or an exec:
 * exectrace_take). 1, or -errno. */
int links_take(const struct config *cfg, struct exectrace *t, bool *linked);
/* After fork: reads the child's exec failure report from fd (what read
 * returns), answering the listener meanwhile when execs come through it
 * (cfg->exec_notify: the child's own exec is one). */
ssize_t read_report(const struct config *cfg, struct exectrace *t, int fd,
                    struct exec_failure *f, bool *linked);

/* janitor.c: janitor mode (a3s-init --mode janitor ...), run by the core on
 * the host next to a sandbox that made placeholders; removes them once the
 * sandbox and its caller are gone. The exit status. */
int janitor_main(int argc, char **argv);

/* A descriptor number given as an argument (janitor and warden modes); -1 if it is not one. */
int fd_number(const char *s);

/* Warden mode (warden.c): on the host, the direct child of a3s_child_spawn for
 * a program owned by a cgroup of its own; empties the cgroup when the init
 * or the caller ends. The exit status. */
int warden_main(int argc, char **argv);

/* The self-test's seccomp check (probe_seccomp.c): calls every system call
 * the filter refuses whatever its arguments, without running any of them,
 * and checks each errno. The number checked, or minus the number that
 * were not refused as the table says; `detail` names the calls checked, or
 * the failures. */
int probe_denials(char *detail, size_t cap);

/* The exec check (exectrace.c): one command's tracer. Zero rules: no
 * tracing at all (exectrace_wait is then waitpid). */
struct exectrace {
    a3s_exec_rules *rules; /* the bash deny and ask rules, and the approved commands */
    pid_t root;            /* the command's own process (seized unless notify); -1: none yet */
    bool notify;           /* execs come as notifications of the init's listener, and each
                              execing thread is seized then (exectrace_take), not the tree */
    pid_t *held;           /* notify: the threads seized, their exec stop still to come */
    size_t nheld, held_cap;
    bool root_execd;       /* its first exec (bash -c LINE) went by unchecked */
    int stops;             /* execs stopped */
    int tell_fd;           /* where the command is told what was stopped (its original
                              stderr, a description of our own), or -1 */
    char first[2560];      /* the first: "deny|ask \t PATTERN \t COMMAND" */
};

/* Adds --exec-<kind> (deny, ask or approve) VALUE; false with `why` on a bad one. */
bool exectrace_add_rule(struct exectrace *t, const char *kind, const char *value, char *why,
                        size_t cap);
/* Whether there are rules to trace for. */
bool exectrace_active(const struct exectrace *t);
/* Frees the rules and resets t to "no rules, nothing traced". */
void exectrace_reset(struct exectrace *t);
/* Says what is stopped on fd (the command's stderr as the host gave it):
 * opens a non-blocking description of its own; -1 if it cannot. */
int exectrace_tell_to(struct exectrace *t, int fd);
/* Records the identity of the executables the rules name, on envp's PATH. */
void exectrace_locate(struct exectrace *t, char *const *envp);
/* In the forked child, async-signal-safe: becomes traceable (dumpable),
 * writes a byte to ready_fd and waits for the init's byte on go_fd; false
 * if it did not come. */
bool exectrace_await(int ready_fd, int go_fd);
/* In the init, after fork: waits for the child's byte on ready_fd, seizes
 * it with every option and lets it go on (a byte to go_fd); closes both.
 * 0, or the errno of the failure (the caller then kills the child: it must
 * not run untraced). */
int exectrace_seize(struct exectrace *t, pid_t child, int ready_fd, int go_fd);
/* waitpid(-1, status, flags), with every ptrace stop of the traced tree
 * handled (an exec checked, and let go on or killed) on the way: returns
 * only an exit (or 0 / -1 as waitpid does). After 256 stops in one call it
 * returns 0 and raises SIGCHLD (blocked: the signalfd holds it), so that a
 * caller polling its signalfd comes back for the rest after its other
 * duties. t may be NULL. */
pid_t exectrace_wait(struct exectrace *t, int *status, int flags);
/* The listener (cfg->links_fd) is readable: takes one notification. A link
 * call is let through and sets *linked; an exec is let through, seized first
 * when t->notify (its exec stop is checked in exectrace_wait), or refused if
 * it cannot be seized. t may be NULL (no rules: every exec goes on). 0, or
 * -errno if the listener cannot be answered. */
int exectrace_take(struct exectrace *t, int listener, bool *linked);
/* The exec of thread tid, notification id of listener (taken by names.c):
 * answered as exectrace_take does. 0, or -errno. */
int exectrace_answer(struct exectrace *t, int listener, pid_t tid, uint64_t id);
/* prctl(PR_SET_DUMPABLE, 0) of thread tid, notification id of listener:
 * with rules, the thread is seized (followed whole from then on) before it
 * runs, or it fails (EPERM). 0, or -errno. */
int exectrace_nodump(struct exectrace *t, int listener, pid_t tid, uint64_t id);
/* The status-fd record of the first stop, "X<hex of first>.", in out; its
 * length (0: nothing was stopped). */
size_t exectrace_report(const struct exectrace *t, char *out, size_t cap);

/* Server mode (server.c): answers requests on cfg->control_fd until the
 * host shuts it down, hangs up, or the lifeline breaks; never returns. */
_Noreturn void serve(const struct config *cfg, const char *program,
                     const struct a3s_landlock *ll, const struct a3s_seccomp_program *filter,
                     int sfd);

#endif
