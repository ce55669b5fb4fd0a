/* child_internal.h - launching owned processes (child_linux.c), shared with the sandbox
 * (sandbox_spawn_linux.c). Internal. */
#ifndef A3S_CHILD_INTERNAL_H
#define A3S_CHILD_INTERNAL_H

#include "internal.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Every fd one launch needs, opened before its argv is built (the init is
 * told the numbers of the status, lifeline and host pidfd ends). */
struct a3s_child_fds {
    int in[2], out[2], err[2]; /* the program's stdin, stdout, stderr */
    int status[2];             /* the init writes "R" once the program runs, "E<why>" if not */
    int lifeline[2];           /* only the caller holds the write end */
    int host_pidfd;            /* a pidfd of the caller for the init; -1 without pidfd_open */
};

/* Opens them all (close-on-exec, >= 3). On failure nothing stays open. */
int a3s_child_fds_open(struct a3s_child_fds *f, a3s_error *err);

/* Closes every fd still open (each is set to -1 when it changes hands). */
void a3s_child_fds_close(struct a3s_child_fds *f);

/* Called once when a launched child is done with (reaped, or never started):
 * owner is false in a process forked from the launching one, which must
 * leave the file system alone. */
typedef void (*a3s_child_release_fn)(void *ctx, bool owner);

/* What to start: argv[0] is `path`; the direct child gets f's stdio ends as
 * 0-2 and keeps the init's three fds, and the `keep` fds (at most
 * A3S_CHILD_MAX_EXTRA_KEEP: a sandbox plan's O_PATH fds, its read fd of
 * the init's image and an embedded init's, which bubblewrap binds from
 * /proc/self/fd, and the plan's janitor pipe). exec_fd >= 0: run that file (the init's pinned image)
 * with execveat instead of `path`, which still names it in messages. `nested`: the
 * supervisor (the init) is the direct child's own child (bubblewrap's),
 * which a stop signals. */
#define A3S_CHILD_MAX_EXTRA_KEEP 5

struct a3s_child_launch {
    const char *path;
    char **argv;
    char **envp;
    const char *cwd;
    const int *keep; /* -1 entries are skipped */
    size_t nkeep;
    bool nested;
    bool sandboxed;
    bool pid_namespace; /* the program runs in a pid namespace of its own */
    bool cgroup;        /* ... or in a cgroup of its own, under a warden (warden.c) */
    int exec_fd; /* set it: -1 runs `path` */
    uint64_t grace_ms;
    a3s_child_release_fn release; /* may be NULL */
    void *release_ctx;
    bool *silent; /* may be NULL: set on a failed start when the direct child was executed
                     but ended before the init reported anything */
};

/* Forks and execs l->path, waits until the init reports the program runs,
 * and fills *out and *stdio. Takes f (every fd is closed or handed out on
 * every path) and l->release_ctx (released on failure). */
int a3s_child_launch(const struct a3s_child_launch *l, struct a3s_child_fds *f, a3s_child **out,
                     a3s_child_stdio *stdio, a3s_error *err);

/* The checks every spawn makes first (NULLs, sizes, flags, absolute paths,
 * NULL strings, SIGCHLD not ignored); sets *out to NULL. fn names the
 * caller in messages. */
int a3s_child_check_options(const a3s_child_options *o, a3s_child **out, a3s_child_stdio *stdio,
                            const char *fn, a3s_error *err);

/* Sends sig to every child of `parent`, each one checked through a pidfd to
 * be parent's child while parent (followed by parent_pidfd) still lives, so
 * no reused pid is ever signalled. Returns how many were signalled. */
int a3s_signal_children(pid_t parent, int parent_pidfd, int sig);

/* A pidfd on the one child of `parent` (followed by parent_pidfd), checked as
 * a3s_signal_children checks: taken, then found to be parent's child while
 * parent still lives. Its pid in *child. -1 if parent has exited, has no
 * child or more than one, or the check fails. */
int a3s_only_child_pidfd(pid_t parent, int parent_pidfd, pid_t *child);

#endif
