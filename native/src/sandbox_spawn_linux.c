/* sandbox_spawn_linux.c - a long-lived program (an MCP server) in a sandbox of its own.
 *
 * The plan is a one-shot command's (sandbox_linux.c) with the program in
 * place of bash -c and no timeout; it is held, placeholders, lock and run
 * directory included, for as long as the program runs, and released by the
 * child handle once bubblewrap is reaped (child_linux.c does the rest:
 * pipes, start-up report, stop and reaping). Like a command's, the plan
 * starts from a3s_plan_init (no fd of the caller's is taken for one of its
 * own) and bubblewrap inherits its O_PATH binds; what it neutralized has no
 * result to be reported in.
 */
#define _GNU_SOURCE
#include "a3s/a3s.h"

#if defined(__linux__)

#include "child_internal.h"
#include "internal.h"
#include "sandbox_internal.h"

#include <stdlib.h>
#include <string.h>

struct held_plan {
    a3s_sandbox *sb;
    struct plan plan;
};

static void release_plan(void *ctx, bool owner) {
    struct held_plan *h = ctx;
    if (owner)
        a3s_plan_release(h->sb, &h->plan);
    else
        a3s_plan_forget(&h->plan); /* a forked copy leaves the file system to its parent */
    free(h);
}

A3S_API int a3s_sandbox_spawn(a3s_sandbox *sb, const a3s_child_options *opts, a3s_child **out,
                              a3s_child_stdio *stdio, a3s_error *err) {
    int rc = a3s_child_check_options(opts, out, stdio, "a3s_sandbox_spawn", err);
    if (rc)
        return rc;
    if (!sb)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_sandbox_spawn: NULL sandbox");
    if (sb->flags & A3S_SANDBOX_PROCESS_HOST)
        return a3s_fail(err, A3S_E_INVALID, 0, 0,
                        "a3s_sandbox_spawn: a process-host handle has no sandbox to spawn in; "
                        "use a3s_child_spawn");
    struct held_plan *h = calloc(1, sizeof *h);
    if (!h)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory");
    h->sb = sb;
    a3s_plan_init(&h->plan); /* no fds yet: nothing of the caller's is closed on release */
    h->plan.spawn = opts;
    struct a3s_child_fds f;
    rc = a3s_child_fds_open(&f, err);
    if (rc) {
        free(h);
        return rc;
    }
    struct plan_fds fds = {.status_fd = f.status[1],
                           .lifeline_fd = f.lifeline[0],
                           .control_fd = -1,
                           .host_pidfd = f.host_pidfd};
    const a3s_exec_options none = {.struct_size = sizeof none};
    rc = a3s_plan_build(sb, &none, &h->plan, &fds, err);
    h->plan.spawn = NULL; /* the options are the caller's: nothing may use them later */
    if (rc) {
        a3s_child_fds_close(&f);
        release_plan(h, true);
        return rc; /* A3S_E_REFUSED says what the plan found */
    }
    /* bubblewrap binds a worktree's gitdirs, and an embedded init, from these; the
     * janitor's pipe stays open in the sandbox while it lives */
    int keep[] = {h->plan.bind_fds[0], h->plan.bind_fds[1], h->plan.bind_fds[2],
                  h->plan.bind_fds[3], sb->init_fd};
    struct a3s_child_launch l = {
        .path = h->plan.argv.items[0],
        .argv = h->plan.argv.items,
        .envp = h->plan.env.items,
        .cwd = sb->workspace,
        .keep = keep,
        .nkeep = sizeof keep / sizeof *keep,
        .nested = true,
        .exec_fd = -1,
        .sandboxed = true,
        .pid_namespace = true,
        .grace_ms = opts->kill_grace_ms,
        .release = release_plan,
        .release_ctx = h,
    };
    return a3s_child_launch(&l, &f, out, stdio, err);
}

#else
typedef int a3s_sandbox_spawn_linux_unused; /* ISO C forbids an empty unit */
#endif
