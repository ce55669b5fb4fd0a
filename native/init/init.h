/* init.h - what a3s_init.c (the modes) and server.c (server mode) share. */
#ifndef A3S_INIT_H
#define A3S_INIT_H

#include "../src/landlock_linux.h"
#include "../src/seccomp_linux.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EXIT_SETUP 125
#define EXIT_TIMEOUT 124
#define MAX_RW 64
#define MAX_CLEAN 16

struct config {
    bool sandbox; /* false: host mode */
    bool server;  /* server mode (also sandbox) */
    int status_fd;
    int lifeline_fd;
    int control_fd; /* server mode: the control socket */
    int host_pidfd; /* server mode: a pidfd of the caller, readable once it has exited */
    uint64_t timeout_ms;
    uint64_t grace_ms;
    const char *rw[MAX_RW];
    size_t nrw;
    const char *clean[MAX_CLEAN]; /* server mode: trees restored after every command */
    size_t nclean;
    bool landlock;
    char **argv; /* the command (server mode: its first words) */
    /* sandbox modes: the caller's user, mnt, net and pid namespace inodes
     * (--host-ns), which ours must all differ from */
    unsigned long long host_ns[4];
    bool host_ns_set;
    bool owns_pidns; /* proven PID 1 of a new pid namespace: kill(-1) reaches only it */
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
    const struct a3s_landlock *ll;
    const struct a3s_seccomp_program *filter;
    int report_fd;
};

_Noreturn void die(const struct config *cfg, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void set_cloexec(int fd);
bool has_capabilities(void);
bool resolve_program(const char *name, char out[PATH_MAX]);
int status_of(int wstatus);
int arm_timer(uint64_t ms);
_Noreturn void run_child(const struct child_spec *c);

/* Server mode (server.c): answers requests on cfg->control_fd until the
 * host shuts it down, hangs up, or the lifeline breaks; never returns. */
_Noreturn void serve(const struct config *cfg, const char *program,
                     const struct a3s_landlock *ll, const struct a3s_seccomp_program *filter,
                     int sfd);

#endif
