/* sandbox_internal.h - the sandbox handle and its plans, shared by sandbox_linux.c
 * (planning, one-shot runs) and session_linux.c (the long-lived sandbox). Internal. */
#ifndef A3S_SANDBOX_INTERNAL_H
#define A3S_SANDBOX_INTERNAL_H

#include "credscan.h"
#include "strvec.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <time.h>

#define A3S_INIT_INSIDE A3S_INIT_PATH
#define A3S_DEFAULT_TIMEOUT_MS 120000u
#define A3S_DEFAULT_GRACE_MS 500u /* kill_grace_ms 0; the init has it too (init.h) */

struct a3s_session; /* session_linux.c */

struct a3s_sandbox {
    uint64_t flags;
    char *workspace; /* canonical */
    char *bwrap;
    char *init;
    int init_fd; /* A3S_SANDBOX_SELF_INIT: an O_PATH fd of this program's executable; else -1 */
    int init_image; /* otherwise: the init's bytes, copied at a3s_sandbox_new into a sealed
                       memfd (init_image.h), which every start runs; else -1 */
    bool init_pinned; /* the init is this program or was checked against a SHA-256: only
                         then does the host run it as a placeholder janitor */
    bool names_emulated; /* missing protected names are kept missing by the init's
                            supervisor (init/names.c), not by placeholders */
    char *bash;
    char *scratch_parent;
    char *state_dir;
    char journal_prefix[96]; /* "placeholders-<workspace hash>-" */
    struct a3s_strvec host_env;
    struct a3s_strvec host_code; /* the caller's code inside the workspace: bound read-only */
    struct a3s_credscan *creds;
    pthread_mutex_t lock; /* serializes the credential cache */
    atomic_bool swept;    /* dead callers' run dirs removed once per handle */
    /* the long-lived sandbox (A3S_SANDBOX_REUSE) */
    pthread_mutex_t session_lock; /* held by the one exec using it, and by stop */
    struct a3s_session *session;  /* NULL when none runs */
    int wake[2];                  /* a3s_sandbox_stop interrupts a running exec through it */
    atomic_uint_fast64_t starts;  /* long-lived sandboxes started */
    atomic_int session_pid;       /* host pid of its bubblewrap, then its init; 0 if none */
    atomic_bool one_shot_only;    /* no pidfd, or the long-lived sandbox keeps failing to start */
    unsigned start_failures;      /* in a row (under session_lock) */
    /* resource bounds, defaults resolved; UINT64_MAX: none */
    uint64_t memory_max;
    uint64_t max_processes;
    uint64_t tmpfs_max;
    atomic_bool cgroups_swept;   /* dead sandboxes' cgroups removed, joining checked */
    atomic_bool cgroups_refused; /* a process cannot join the cgroups this caller makes */
    atomic_uint_fast64_t session_bounds; /* A3S_SANDBOX_INFO_*_CGROUP of the last started */
    /* the idle stop of the long-lived sandbox (session_linux.c) */
    uint64_t idle_stop_ms;             /* UINT64_MAX: never */
    atomic_uint_fast64_t last_used_ns; /* monotonic: the last command's start or end */
    pthread_mutex_t idle_lock;         /* guards the five below */
    pthread_cond_t idle_wake;          /* a session started, or the handle is going */
    bool idle_quit;
    bool idle_exited;                  /* the thread ended (no sandbox): join it before another */
    pid_t idle_owner;                  /* the process whose thread it is; 0: none started */
    pthread_t idle_thread;
    pid_t creator; /* the process that made the handle: a forked copy's locks are not to be trusted */
};

/* Ends the idle-stop thread (session_linux.c); before the handle is freed. */
void a3s_session_idle_end(a3s_sandbox *sb);

/* What a plan assumed about one host path when the sandbox was built. */
struct a3s_watch {
    char *path;
    bool exists;
    bool ctime_too; /* placeholders and a .git file: any change counts */
    mode_t type;
    dev_t dev;
    ino_t ino;
    nlink_t nlink; /* regular files: a new hard link counts */
    struct timespec ctime;
    char *target; /* symlinks: where it points (the inode number may be reused at once) */
};

/* One run's plan: everything decided before bubblewrap starts. */
struct plan {
    bool server;                    /* a long-lived sandbox (init in server mode) */
    bool exec_notify;               /* server: its first command came with exec rules, so the
                                       init watches every exec (init/exectrace.c) */
    struct a3s_strvec argv;
    struct a3s_strvec env;          /* one-shot only: a long-lived sandbox gets it per command */
    struct a3s_strvec placeholders; /* 'f'/'d' + path: remove afterwards if untouched */
    struct a3s_strvec masks;        /* paths masked inside the workspace */
    char run_dir[PATH_MAX];         /* host dir holding scratch and mask objects */
    char home[PATH_MAX];            /* the scratch dir: HOME and TMPDIR (one-shot) */
    char mask_file[PATH_MAX];
    char mask_dir[PATH_MAX];
    char journal[PATH_MAX]; /* this run's placeholder journal, "" if none */
    int lock_fd;            /* the workspace lock, held shared during the run */
    int ws_lock_fd;         /* the workspace directory, locked shared too (-1: not taken) */
    /* server plans: what must stay true for the sandbox to stay valid */
    struct a3s_strvec found;     /* the credential scan's answer */
    struct a3s_strvec link_dirs; /* 'g'/'-' + directory walked for hard links */
    struct a3s_strvec extra;     /* more paths whose state is watched */
    struct a3s_strvec missing;   /* protected names missing from the workspace, kept
                                    missing by the init (init/names.c) */
    struct a3s_watch *watch;
    size_t nwatch;
    dev_t ws_dev;
    ino_t ws_ino;
    int link_ifd;         /* inotify over link_dirs; -1: walk them again at each check */
    /* ownership and hostile content (docs/security.md, "Host safety") */
    int run_lock_fd;              /* flock held on run_dir/lock while the run dir lives */
    int journal_fd;               /* this run's journal, flock held while it is ours; -1 */
    int bind_fds[4];              /* O_PATH fds of a worktree's gitdir and common dir, a
                                     read fd of the init's image (--ro-bind-data), and the
                                     write end of the janitor's pipe (sandbox_linux.c),
                                     which the sandbox holds while it lives; -1 */
    struct a3s_strvec notes;      /* what the plan neutralized or did not follow, one line each */
    uint64_t deadline;            /* a3s_now_ns() by which planning must end; 0: none */
    int cancel_fd;                /* readable: planning stops; -1: none */
    char host_ns[128];            /* the caller's namespaces, for the init to compare */
    /* a3s_sandbox_spawn: the program to start instead of bash -c, with no
     * timeout (set by the caller before a3s_plan_build; NULL for commands) */
    const a3s_child_options *spawn;
    bool memory_cgroup;   /* set by the caller: a memory cgroup bounds the sandbox, so the
                             init needs no watchdog */
    bool describe;        /* set by the caller (a3s_sandbox_policy): plan only, make nothing
                             (no lock, run directory, journal or placeholder); release it with
                             a3s_plan_forget */
};

/* Sets what a plan starts with: no fds, no deadline, nothing noted. */
void a3s_plan_init(struct plan *p);

/* The notes of p as one NUL-terminated string, a line each (malloc); NULL
 * when there are none or memory ran out. */
char *a3s_plan_notes(const struct plan *p);

/* The fds the init gets: one-shot runs pass status_fd and lifeline_fd, a
 * long-lived sandbox control_fd, lifeline_fd and host_pidfd (the others -1). */
struct plan_fds {
    int status_fd;
    int lifeline_fd;
    int control_fd;
    int host_pidfd; /* long-lived: a pidfd of the caller, so a forked copy cannot keep it up */
};

/* Builds the plan for `o` (NULL for a long-lived sandbox). A3S_E_REFUSED or
 * A3S_E_SYSTEM: the run cannot start (a result of exit 125; with sys_errno
 * ETIMEDOUT or ECANCELED when planning passed p->deadline or p->cancel_fd
 * fired: a result of 124); other codes are the caller's errors. The plan
 * (set up with a3s_plan_init) must be released with a3s_plan_release
 * whatever the result. */
int a3s_plan_build(a3s_sandbox *sb, const a3s_exec_options *o, struct plan *p,
                   const struct plan_fds *fds, a3s_error *err);

/* After the run: placeholders removed if untouched and no other run relies
 * on them, the lock dropped, the run directory removed, memory freed. */
void a3s_plan_release(a3s_sandbox *sb, struct plan *p);

/* For a copy of a plan inherited through fork: frees it and closes its
 * fds without touching the file system (the placeholders, the journal and
 * the run directory belong to the process that made them). */
void a3s_plan_forget(struct plan *p);

/* For a long-lived sandbox, before each command: whether everything the
 * plan was built over is still there (the workspace, every protected name
 * and placeholder, every mask target and host secret, the same credential
 * files, no new hard link under a protected or masked directory). 1: current; 0: stop it and build a new one; -1 (errno
 * ETIMEDOUT or ECANCELED): checking passed p->deadline or was cancelled. */
int a3s_plan_current(a3s_sandbox *sb, struct plan *p);

/* The cgroup of one sandbox of the handle (cgroup_linux.h), unless the
 * handle found that its processes cannot join the cgroups it makes. */
struct a3s_cgroup;
void a3s_sandbox_cgroup(a3s_sandbox *sb, struct a3s_cgroup *cg);

/* policy_linux.c: the digest of the policy a plan runs a command under
 * (a3s_sandbox_policy's, for any plan of the same handle and the same
 * policy, one-shot, long-lived or described). */
int a3s_plan_digest(const a3s_sandbox *sb, const struct plan *p,
                    char out[A3S_POLICY_DIGEST_SIZE], a3s_error *err);

/* Whether the policy a plan runs under no longer has the digest the caller
 * named (sandbox_linux.c); the result a changed one gets says this: */
int a3s_policy_check(const a3s_sandbox *sb, const struct plan *p, const char *digest,
                     bool *changed, a3s_error *err);
#define POLICY_CHANGED_MESSAGE                                                                    \
    "the sandbox policy changed since the command was approved against it: re-approve against "  \
    "the current policy (nothing ran)"

/* grant_linux.c: a network grant's part of a run (see a3s.h, "Network grants"). */
/* Checks the grant options of an exec against the handle. */
int a3s_grant_check(const a3s_sandbox *sb, const a3s_exec_options *o, a3s_error *err);
/* Adds the proxy variables to a command's environment. */
int a3s_grant_env(struct a3s_strvec *env, a3s_error *err);

/* session_linux.c */
int a3s_session_exec(a3s_sandbox *sb, const a3s_exec_options *o, a3s_process_result **out,
                     a3s_error *err);
void a3s_session_stop(a3s_sandbox *sb);

#endif
