/* cgroup_linux.h - a cgroup of its own for a sandbox, where the caller may make one (internal).
 *
 * A sandbox (a long-lived one, or a one-shot run) gets its memory and
 * process bounds from the kernel when the caller can create a cgroup with
 * the memory and pids controllers: cgroup v2 (a sibling of the caller's own
 * cgroup, or a child of the root, whose parent already hands those
 * controllers down; a delegated user subtree qualifies) or, where the
 * controllers are still mounted as cgroup v1 hierarchies (hybrid hosts), a
 * child of the caller's cgroup in each (which in practice needs root).
 * Each controller is taken where it is found; a bound no cgroup can carry
 * is left to the fallbacks (RLIMIT_NPROC, the init's memory watchdog).
 *
 * A cgroup lives as long as its sandbox: bubblewrap is started in it (the
 * child writes "0" to cgroup.procs before it execs), and it is removed when
 * the sandbox is gone. Its directory is held open under flock(LOCK_EX), so
 * one left behind by a caller killed with SIGKILL is removed by the next
 * sandbox that can take that lock (and an rmdir never removes a cgroup that
 * still holds a process).
 */
#ifndef A3S_CGROUP_LINUX_H
#define A3S_CGROUP_LINUX_H

#include "internal.h"

#include <limits.h>
#include <stdint.h>

#define A3S_CGROUP_MAX_DIRS 3 /* a v2 cgroup, or v1 memory and pids (and one spare) */

struct a3s_cgroup {
    size_t ndirs;
    char dir[A3S_CGROUP_MAX_DIRS][PATH_MAX];
    int dir_fd[A3S_CGROUP_MAX_DIRS];   /* held with flock(LOCK_EX) */
    int procs_fd[A3S_CGROUP_MAX_DIRS]; /* cgroup.procs, open for writing */
    int oom_fd;                        /* memory.events (v2) or memory.oom_control (v1) */
    bool memory;                       /* memory_max is enforced by the kernel */
    bool pids;                         /* max_processes is enforced by the kernel */
};

/* An empty cgroup record (nothing made, every fd -1). */
void a3s_cgroup_init(struct a3s_cgroup *cg);

/* Makes the cgroup(s) for one sandbox with memory.max = memory_max and
 * pids.max = max_processes (UINT64_MAX: that bound is not wanted), as far
 * as this caller may; cg->memory and cg->pids say which bounds it carries
 * (neither: nothing was made). A bound it cannot set is the caller's to
 * enforce otherwise. With first (the first sandbox of a handle), it also
 * removes the cgroups dead sandboxes left next to the new ones.
 *
 * Whether a process can move into them is not checked here: write access
 * to the cgroups we made is not enough where the common ancestor, a cgroup
 * namespace or delegation rules stand in the way, but a check costs a
 * migration, which waits for an RCU grace period on cgroup v1 (10-20 ms).
 * The process that starts the sandbox joins instead, and the caller that
 * sees it fail (a3s_process_run_in_cgroup's join_refused, the long-lived
 * sandbox's start) stops using cgroups for the handle and starts again
 * without them. */
void a3s_cgroup_create(struct a3s_cgroup *cg, uint64_t memory_max, uint64_t max_processes,
                       bool first);

/* In a child between fork and exec (async-signal-safe): moves the calling
 * process into the cgroup(s). 0, or -errno. */
int a3s_cgroup_join(const struct a3s_cgroup *cg);

/* How many processes the kernel's OOM killer has killed in the cgroup so
 * far (0 without a memory cgroup). */
uint64_t a3s_cgroup_oom_kills(const struct a3s_cgroup *cg);

/* Once every process of the sandbox is gone: removes the cgroup(s) (waiting
 * up to a second for the last processes to leave) and closes the fds. */
void a3s_cgroup_destroy(struct a3s_cgroup *cg);
/* Like a3s_cgroup_destroy, without waiting for the last processes to leave:
 * for a sandbox holding a process that cannot die yet (A3S_RESULT_OUTLIVED).
 * A cgroup still busy is left to the sweep of a later handle. */
void a3s_cgroup_abandon(struct a3s_cgroup *cg);

/* A cgroup of its own for a program that must be owned where no user
 * namespace can be made (a3s_child_spawn's middle tier): one that can be
 * emptied at once, so a process that leaves its parent (setsid, a double
 * fork) is still found. cgroup v2 with cgroup.kill (a sibling of the
 * caller's cgroup, as above) is preferred, else a child of the caller's
 * cgroup in a cgroup v1 freezer hierarchy. No bound is set. false, with
 * why[] saying what is missing, if neither can be made. */
bool a3s_cgroup_create_killable(struct a3s_cgroup *cg, char *why, size_t cap);

/* Kills every process in the cgroup whose directory is open as dfd and
 * waits (about a second, two at the most) until it holds none: cgroup.kill on v2; on v1 it
 * freezes the cgroup (nothing in it can fork or exit, so no pid read from
 * cgroup.procs is stale), SIGKILLs each pid listed, thaws, and repeats
 * until it is empty. Built into the init too (its warden mode, warden.c).
 * true once empty. */
bool a3s_cgroup_kill_all(int dfd);

/* For a copy inherited through fork: closes the fds, removes nothing. */
void a3s_cgroup_forget(struct a3s_cgroup *cg);

#endif
