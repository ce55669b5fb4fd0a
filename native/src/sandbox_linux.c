/* sandbox_linux.c - the native Linux boundary: plan a bubblewrap sandbox, run one command in it.
 *
 * Layers, outermost first (docs/security.md explains each):
 *   bubblewrap   user, pid, net, ipc, uts and cgroup namespaces, no nested
 *                user namespaces, every capability dropped, new session,
 *                read-only root, private /dev and /proc (kernel knobs
 *                read-only), tmpfs over /tmp, /var/tmp, /run and the homes,
 *                the workspace and a private scratch dir as the only
 *                writable binds, protected names and credential files masked;
 *   a3s-init     PID 1: non-dumpable, applies Landlock and seccomp to the
 *                command, forwards signals, enforces the timeout, and takes
 *                the whole tree down when the command or the caller ends.
 * Nothing here falls back to running on the host: every failure is either
 * an error or a result with exit status 125 and a message.
 *
 * A plan is either one-shot (one bwrap per command, the init in sandbox
 * mode) or for a long-lived sandbox (A3S_SANDBOX_REUSE: the init in server
 * mode runs command after command; session_linux.c). A long-lived plan also
 * records what it was built over, so that a3s_plan_current can tell, before
 * each command, whether a host-side change (a replaced protected file, a new
 * credential file ...) has made it stale.
 */
#define _GNU_SOURCE
#include "a3s/a3s.h"

#if defined(__linux__)

#include "cgroup_linux.h"
#include "credscan.h"
#include "env.h"
#include "internal.h"
#include "process_internal.h"
#include "sandbox_internal.h"
#include "strvec.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

#define DEFAULT_TIMEOUT_MS A3S_DEFAULT_TIMEOUT_MS
#define MAX_MASKS 4096
#define INIT_INSIDE A3S_INIT_INSIDE

/* Top-level names that stay read-only even though the workspace is writable. */
static const char *const PROTECTED_DIRS[] = {".git",    ".a3s",    ".agents", ".codex",
                                             ".claude", ".vscode", ".idea"};
static const char *const PROTECTED_FILES[] = {".gitmodules", ".mcp.json",     ".ripgreprc",
                                              ".bashrc",     ".bash_profile", ".zshrc",
                                              ".zprofile",   ".profile"};
/* Kernel interfaces under /proc a root caller could write through. */
/* (bubblewrap already makes /proc/irq and /proc/bus read-only itself) */
static const char *const PROC_READONLY[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/fs"};
/* Toolchain roots re-exposed (read-only) when they live under a masked home. */
static const char *const TOOLCHAIN_VARS[] = {
    "CARGO_HOME", "RUSTUP_HOME", "GOPATH",    "GOROOT",      "NVM_DIR",    "JAVA_HOME",
    "PYENV_ROOT", "VOLTA_HOME",  "PNPM_HOME", "BUN_INSTALL", "SDKMAN_DIR", "ASDF_DATA_DIR",
    "ASDF_DIR",   "RBENV_ROOT",  "GEM_HOME",  "DOTNET_ROOT", "CONDA_PREFIX", "VIRTUAL_ENV",
};
/* Directory names under a home that hold credentials: never re-exposed. */
static const char *const HOME_SECRETS[] = {".ssh",   ".gnupg", ".aws",   ".azure", ".kube",
                                           ".docker", ".config", ".netrc", ".password-store"};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- small helpers ------------------------------------------------------- */

static bool path_is_under(const char *path, const char *dir) {
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return path[0] == '/';
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static bool is_dir_nofollow(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static const char *env_get(const struct a3s_strvec *env, const char *name) {
    size_t n = strlen(name);
    for (size_t i = 0; i < env->len; i++)
        if (strncmp(env->items[i], name, n) == 0 && env->items[i][n] == '=')
            return env->items[i] + n + 1;
    return NULL;
}

/* out = a + "/" + b; false (and out empty) if it does not fit. */
static bool join(char *out, size_t cap, const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    if (na + 1 + nb + 1 > cap) {
        out[0] = '\0';
        return false;
    }
    memcpy(out, a, na);
    out[na] = '/';
    memcpy(out + na + 1, b, nb + 1);
    return true;
}

static bool eq_nocase(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (a3s_lower((unsigned char)*a) != a3s_lower((unsigned char)*b))
            return false;
    return *a == *b;
}

static void push2(struct a3s_strvec *v, const char *a, const char *b) {
    a3s_strvec_push(v, a);
    a3s_strvec_push(v, b);
}

static void push3(struct a3s_strvec *v, const char *a, const char *b, const char *c) {
    a3s_strvec_push(v, a);
    a3s_strvec_push(v, b);
    a3s_strvec_push(v, c);
}

static int remove_tree_at(int parent, const char *name) {
    struct stat st;
    if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
        fchmodat(parent, name, 0700, 0); /* the mask dir is mode 0: unreadable even to us */
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return unlinkat(parent, name, 0);
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            remove_tree_at(dirfd(d), e->d_name);
    closedir(d);
    return unlinkat(parent, name, AT_REMOVEDIR);
}

/* Removes a run directory without following symlinks planted inside it. */
static void remove_tree(const char *path) {
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", path);
    char *slash = strrchr(parent, '/');
    if (!slash || slash == parent)
        return;
    *slash = '\0';
    int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pfd < 0)
        return;
    remove_tree_at(pfd, slash + 1);
    close(pfd);
}

/* ---- configuration ------------------------------------------------------- */

static char *resolve_bash(void) {
    static const char *const candidates[] = {"/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash"};
    for (size_t i = 0; i < COUNT(candidates); i++)
        if (access(candidates[i], X_OK) == 0)
            return strdup(candidates[i]);
    return NULL;
}

A3S_API void a3s_sandbox_free(a3s_sandbox *sb) {
    if (!sb)
        return;
    if (sb->wake[0] >= 0) { /* made with the session lock: the handle was fully set up */
        a3s_session_stop(sb);
        close(sb->wake[0]);
        close(sb->wake[1]);
        pthread_mutex_destroy(&sb->session_lock);
    }
    a3s_credscan_free(sb->creds);
    a3s_strvec_free(&sb->host_env);
    free(sb->workspace);
    free(sb->bwrap);
    free(sb->init);
    free(sb->bash);
    free(sb->scratch_parent);
    free(sb->state_dir);
    pthread_mutex_destroy(&sb->lock);
    free(sb);
}

static int check_abs_file(const char *what, const char *path, a3s_error *err) {
    if (!path || path[0] != '/')
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "%s must be an absolute path", what);
    if (access(path, X_OK) != 0)
        return a3s_fail(err, A3S_E_UNSUPPORTED, errno, 0, "%s %s is not executable: %s", what,
                        path, strerror(errno));
    return A3S_OK;
}

/* mkdir -p with mode 0700 for the components we create. */
static bool make_dirs(const char *path) {
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return false;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0700) < 0 && errno != EEXIST)
            return false;
        *p = '/';
    }
    return (mkdir(buf, 0700) == 0 || errno == EEXIST) && is_dir_nofollow(buf);
}

/* Where placeholder journals live: somewhere that survives the caller and
 * that no command can write, i.e. never inside the workspace. */
static char *choose_state_dir(const char *given, const struct a3s_strvec *env,
                              const char *fallback, const char *workspace) {
    const char *xdg = env_get(env, "XDG_STATE_HOME");
    const char *home = env_get(env, "HOME");
    char candidates[6][PATH_MAX];
    int n = 0;
    if (given) {
        snprintf(candidates[n++], PATH_MAX, "%s", given);
    } else {
        if (xdg && xdg[0] == '/')
            snprintf(candidates[n++], PATH_MAX, "%s/codeward", xdg);
        if (home && home[0] == '/' && strcmp(home, "/") != 0)
            snprintf(candidates[n++], PATH_MAX, "%s/.local/state/codeward", home);
        static const char *const shared[] = {NULL, "/var/tmp", "/tmp", "/dev/shm"};
        for (size_t i = 0; i < COUNT(shared); i++)
            snprintf(candidates[n++], PATH_MAX, "%s/codeward-state-%d",
                     shared[i] ? shared[i] : fallback, (int)getuid());
    }
    for (int i = 0; i < n; i++) {
        if (!make_dirs(candidates[i]))
            continue;
        char *real = realpath(candidates[i], NULL);
        if (real && !path_is_under(real, workspace))
            return real;
        free(real);
    }
    return NULL;
}

/* ---- resource bounds --------------------------------------------------------- */

#define MIN_MEMORY (16ull << 20)
#define MIN_PROCESSES 8
#define MIN_TMPFS (1ull << 20)
#define DEFAULT_PROCESSES 4096
#define FALLBACK_WATCH_BUDGET 2048 /* a quarter of the kernels' old fixed 8192 */

static uint64_t physical_memory(void) {
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 8ull << 30;
}

/* A quarter of fs.inotify.max_user_watches: the whole user's, shared with
 * its editors and file watchers (since Linux 5.11 the kernel sizes it to
 * about 1% of memory, a watch pinning about 1 KiB). */
static uint64_t default_watch_budget(void) {
    uint64_t budget = FALLBACK_WATCH_BUDGET;
    FILE *f = fopen("/proc/sys/fs/inotify/max_user_watches", "re");
    unsigned long long max = 0;
    if (f && fscanf(f, "%llu", &max) == 1 && max >= 4)
        budget = max / 4;
    if (f)
        fclose(f);
    return budget;
}

/* value, the default for 0, UINT64_MAX for A3S_NO_LIMIT; A3S_E_INVALID below min. */
static int resolve_bound(const char *name, uint64_t value, uint64_t dflt, uint64_t min,
                         uint64_t *out, a3s_error *err) {
    if (value == A3S_NO_LIMIT) {
        *out = UINT64_MAX;
        return A3S_OK;
    }
    *out = value ? value : dflt;
    if (*out < min)
        return a3s_fail(err, A3S_E_INVALID, 0, (int64_t)value,
                        "%s %llu is below the least a sandbox can run with (%llu)", name,
                        (unsigned long long)value, (unsigned long long)min);
    return A3S_OK;
}

A3S_API int a3s_sandbox_new(const a3s_sandbox_config *given, a3s_sandbox **out, a3s_error *err) {
    /* struct_size versioning: a caller built before the resource bounds
     * existed passes the shorter struct; the fields it lacks are zero. */
    size_t known_size = offsetof(a3s_sandbox_config, memory_max_bytes);
    if (!given || !out || given->struct_size < known_size)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_sandbox_new: NULL or too small config");
    a3s_sandbox_config copy;
    memset(&copy, 0, sizeof copy);
    memcpy(&copy, given, given->struct_size < sizeof copy ? given->struct_size : sizeof copy);
    for (size_t i = sizeof copy; i < given->struct_size; i++)
        if (((const unsigned char *)given)[i] != 0)
            return a3s_fail(err, A3S_E_INVALID, 0, (int64_t)i,
                            "a3s_sandbox_new: the config sets a field this library does not "
                            "know (byte %zu)",
                            i);
    const a3s_sandbox_config *cfg = &copy;
    uint64_t memory_max, max_processes, tmpfs_max;
    int brc = resolve_bound("memory_max_bytes", cfg->memory_max_bytes, physical_memory() / 2,
                            MIN_MEMORY, &memory_max, err);
    if (brc == A3S_OK)
        brc = resolve_bound("max_processes", cfg->max_processes, DEFAULT_PROCESSES,
                            MIN_PROCESSES, &max_processes, err);
    if (brc == A3S_OK)
        brc = resolve_bound("tmpfs_max_bytes", cfg->tmpfs_max_bytes, physical_memory() / 8,
                            MIN_TMPFS, &tmpfs_max, err);
    if (brc != A3S_OK)
        return brc;
    uint64_t watch_budget = cfg->inotify_watch_budget == A3S_NO_LIMIT ? UINT64_MAX
                            : cfg->inotify_watch_budget        ? cfg->inotify_watch_budget
                                                               : default_watch_budget();
    *out = NULL;
    uint64_t known = A3S_SANDBOX_PROCESS_HOST | A3S_SANDBOX_NO_LANDLOCK | A3S_SANDBOX_REUSE |
                     A3S_SANDBOX_WORKSPACE_READONLY | A3S_SANDBOX_SHARE_NET;
    if (cfg->flags & ~known)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_sandbox_new: unknown flag bits");
    bool host = cfg->flags & A3S_SANDBOX_PROCESS_HOST;
    if (!cfg->workspace || cfg->workspace[0] != '/')
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "the workspace must be an absolute path");
    struct stat st;
    if (lstat(cfg->workspace, &st) < 0)
        return a3s_fail(err, A3S_E_INVALID, errno, 0, "workspace %s: %s", cfg->workspace,
                        strerror(errno));
    if (S_ISLNK(st.st_mode))
        return a3s_fail(err, A3S_E_REFUSED, 0, 0,
                        "workspace %s is a symlink; give the real directory", cfg->workspace);
    if (!S_ISDIR(st.st_mode))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "workspace %s is not a directory",
                        cfg->workspace);
    int rc = check_abs_file("a3s-init", cfg->init_path, err);
    if (rc == A3S_OK && !host)
        rc = check_abs_file("bubblewrap", cfg->bwrap_path, err);
    if (rc)
        return rc;

    a3s_sandbox *sb = calloc(1, sizeof *sb);
    if (!sb)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory");
    pthread_mutex_init(&sb->lock, NULL);
    sb->wake[0] = sb->wake[1] = -1;
    if (pipe2(sb->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
        int e = errno;
        sb->wake[0] = sb->wake[1] = -1;
        a3s_sandbox_free(sb);
        return a3s_fail(err, A3S_E_SYSTEM, e, 0, "pipe2: %s", strerror(e));
    }
    pthread_mutex_init(&sb->session_lock, NULL);
    sb->flags = cfg->flags;
    sb->workspace = realpath(cfg->workspace, NULL);
    sb->init = strdup(cfg->init_path);
    sb->bwrap = host ? NULL : strdup(cfg->bwrap_path);
    sb->bash = resolve_bash();
    const char *tmp = cfg->scratch_parent;
    if (!tmp) {
        const char *env_tmp = getenv("TMPDIR");
        tmp = env_tmp && env_tmp[0] == '/' && is_dir_nofollow(env_tmp) ? env_tmp : "/tmp";
    }
    sb->scratch_parent = realpath(tmp, NULL);
    const char *const *henv = cfg->host_env ? cfg->host_env : (const char *const *)environ;
    size_t nhenv = cfg->host_env ? cfg->host_envc : 0;
    if (!cfg->host_env)
        while (henv[nhenv])
            nhenv++;
    for (size_t i = 0; i < nhenv; i++)
        a3s_strvec_push(&sb->host_env, henv[i]);
    if (!sb->workspace || !sb->init || (!host && !sb->bwrap) || sb->host_env.failed) {
        a3s_sandbox_free(sb);
        return a3s_fail(err, A3S_E_NOMEM, errno, 0, "cannot set up the sandbox: %s",
                        strerror(errno));
    }
    if (!sb->bash) {
        a3s_sandbox_free(sb);
        return a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0, "bash not found in /bin or /usr/bin");
    }
    if (!sb->scratch_parent) {
        a3s_sandbox_free(sb);
        return a3s_fail(err, A3S_E_INVALID, errno, 0, "scratch parent %s: %s", tmp,
                        strerror(errno));
    }
    sb->state_dir =
        choose_state_dir(cfg->state_dir, &sb->host_env, sb->scratch_parent, sb->workspace);
    if (!sb->state_dir) {
        a3s_sandbox_free(sb);
        return a3s_fail(err, A3S_E_INVALID, errno, 0,
                        "no usable state directory for placeholder journals outside the "
                        "workspace");
    }
    uint64_t h = 1469598103934665603ull;
    for (const char *c = sb->workspace; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    snprintf(sb->journal_prefix, sizeof sb->journal_prefix, "placeholders-%016llx-",
             (unsigned long long)h);
    if ((rc = a3s_credscan_new(sb->workspace, &sb->creds, err)) != A3S_OK) {
        a3s_sandbox_free(sb);
        return rc;
    }
    a3s_credscan_set_watch_budget(sb->creds, watch_budget);
    sb->memory_max = memory_max;
    sb->max_processes = max_processes;
    sb->tmpfs_max = tmpfs_max;
    *out = sb;
    return a3s_ok(err);
}

A3S_API const char *a3s_sandbox_workspace(const a3s_sandbox *sb) {
    return sb ? sb->workspace : NULL;
}

/* ---- the plan ------------------------------------------------------------ */

static void plan_free(struct plan *p) {
    a3s_strvec_free(&p->argv);
    a3s_strvec_free(&p->env);
    a3s_strvec_free(&p->placeholders);
    a3s_strvec_free(&p->masks);
    a3s_strvec_free(&p->found);
    a3s_strvec_free(&p->names);
    a3s_strvec_free(&p->link_dirs);
    a3s_strvec_free(&p->extra);
    for (size_t i = 0; i < p->nwatch; i++) {
        free(p->watch[i].path);
        free(p->watch[i].target);
    }
    free(p->watch);
    p->watch = NULL;
    p->nwatch = 0;
    if (p->link_ifd >= 0)
        close(p->link_ifd);
    p->link_ifd = -1;
}

/* The private run directory: scratch (HOME, TMPDIR) plus mask objects. */
static int make_run_dir(const a3s_sandbox *sb, struct plan *p, a3s_error *err) {
    if (snprintf(p->run_dir, sizeof p->run_dir, "%s/a3s-run-%d-XXXXXX", sb->scratch_parent,
                 (int)getpid()) >= (int)sizeof p->run_dir)
        return a3s_fail(err, A3S_E_TOO_LARGE, 0, 0, "scratch path too long");
    if (!mkdtemp(p->run_dir))
        return a3s_fail(err, A3S_E_SYSTEM, errno, 0, "cannot create a scratch directory in %s: %s",
                        sb->scratch_parent, strerror(errno));
    if (!join(p->home, sizeof p->home, p->run_dir, "home") ||
        !join(p->mask_file, sizeof p->mask_file, p->run_dir, "mask") ||
        !join(p->mask_dir, sizeof p->mask_dir, p->run_dir, "maskdir"))
        return a3s_fail(err, A3S_E_TOO_LARGE, 0, 0, "scratch path too long");
    int fd;
    if (mkdir(p->home, 0700) < 0 || mkdir(p->mask_dir, 0000) < 0 ||
        (fd = open(p->mask_file, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0000)) < 0)
        return a3s_fail(err, A3S_E_SYSTEM, errno, 0, "cannot prepare the scratch directory: %s",
                        strerror(errno));
    close(fd);
    struct stat st;
    if (lstat(p->home, &st) < 0 || !S_ISDIR(st.st_mode))
        return a3s_fail(err, A3S_E_REFUSED, 0, 0, "the scratch directory was replaced");
    return A3S_OK;
}

/* A described plan's run directory: names only, nothing on disk (the
 * policy text names the mask objects by their role, not by these paths). */
static int describe_run_dir(struct plan *p) {
    snprintf(p->home, sizeof p->home, "/a3s-describe/home");
    snprintf(p->mask_file, sizeof p->mask_file, "/a3s-describe/mask");
    snprintf(p->mask_dir, sizeof p->mask_dir, "/a3s-describe/maskdir");
    return A3S_OK;
}

/* ---- placeholder journals --------------------------------------------------
 * A run that is killed (SIGKILL of the caller) cannot remove its
 * placeholders, so each run records them in a journal named after the
 * workspace and the caller's pid; the next run over the same workspace
 * removes what a dead caller left, with the same "still the untouched
 * object we created" test as a normal run. */

/* Only a protected name directly in this workspace can be a placeholder: a
 * journal is data, and a forged one must not make us delete anything else. */
static bool is_placeholder_path(const a3s_sandbox *sb, const char *path) {
    size_t n = strlen(sb->workspace);
    if (strncmp(path, sb->workspace, n) != 0 || path[n] != '/')
        return false;
    const char *name = path + n + 1;
    for (size_t i = 0; i < COUNT(PROTECTED_DIRS); i++)
        if (!strcmp(name, PROTECTED_DIRS[i]))
            return true;
    for (size_t i = 0; i < COUNT(PROTECTED_FILES); i++)
        if (!strcmp(name, PROTECTED_FILES[i]))
            return true;
    return false;
}

static void remove_placeholder(const a3s_sandbox *sb, const char *tagged) {
    unsigned long dev, ino;
    long long csec;
    long cnsec;
    int off = 0;
    if (sscanf(tagged + 1, "%lu:%lu:%lld.%ld:%n", &dev, &ino, &csec, &cnsec, &off) != 4 ||
        off == 0)
        return;
    const char *path = tagged + 1 + off;
    if (!is_placeholder_path(sb, path))
        return;
    /* the same inode number is not enough (ext4 reuses freed ones at once):
     * the change time and our read-only mode must match too */
    struct stat st;
    if (lstat(path, &st) < 0 || st.st_dev != dev || st.st_ino != ino ||
        st.st_ctim.tv_sec != csec || st.st_ctim.tv_nsec != cnsec ||
        (st.st_mode & 07777) != (tagged[0] == 'f' ? 0444 : 0555))
        return;
    if (tagged[0] == 'f' && S_ISREG(st.st_mode) && st.st_size == 0)
        unlink(path);
    else if (tagged[0] == 'd' && S_ISDIR(st.st_mode))
        rmdir(path); /* fails, as it should, unless still empty */
}

/* Runs over one workspace share a lock: a run holds it shared while it
 * runs, and removes placeholders only if it can take it exclusively, i.e.
 * when no other run still relies on them (removing a mount point detaches
 * the mount in every other mount namespace). Placeholders left behind are
 * journaled "done" and removed by the next run that finds itself alone. */
static int lock_workspace(const a3s_sandbox *sb) {
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%slock", sb->state_dir, sb->journal_prefix) >=
        (int)sizeof path)
        return -1;
    int fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0 && flock(fd, LOCK_SH) < 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static bool alone(int lock_fd) { return lock_fd >= 0 && flock(lock_fd, LOCK_EX | LOCK_NB) == 0; }

static bool pid_is_dead(int pid) {
    return pid > 0 && pid != (int)getpid() && kill(pid, 0) < 0 && errno == ESRCH;
}

/* Run directories of callers that died: their scratch and mask objects. */
static void recover_run_dirs(const a3s_sandbox *sb) {
    DIR *d = opendir(sb->scratch_parent);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "a3s-run-", 8) != 0)
            continue;
        char path[PATH_MAX];
        struct stat st;
        if (!pid_is_dead(atoi(e->d_name + 8)) || !join(path, sizeof path, sb->scratch_parent,
                                                       e->d_name))
            continue;
        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid())
            remove_tree(path);
    }
    closedir(d);
}

static void recover_journals(a3s_sandbox *sb, int lock_fd) {
    /* run dirs of dead callers: once per handle, the scratch parent can be big */
    if (!atomic_exchange(&sb->swept, true))
        recover_run_dirs(sb);
    if (!alone(lock_fd))
        return; /* another run may rely on what those journals name */
    DIR *d = opendir(sb->state_dir);
    if (!d)
        return;
    size_t plen = strlen(sb->journal_prefix);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, sb->journal_prefix, plen) != 0)
            continue;
        if (!pid_is_dead(atoi(e->d_name + plen)) && !strstr(e->d_name, ".done"))
            continue; /* its owner may still be running */
        char path[PATH_MAX];
        if (!join(path, sizeof path, sb->state_dir, e->d_name))
            continue;
        FILE *f = fopen(path, "re");
        char line[PATH_MAX + 64];
        while (f && fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = '\0';
            remove_placeholder(sb, line);
        }
        if (f)
            fclose(f);
        unlink(path);
    }
    closedir(d);
}

/* Opens this run's journal (created on the first placeholder). */
static FILE *open_journal(const a3s_sandbox *sb, char *path, size_t cap) {
    static const char hex[] = "0123456789abcdef";
    unsigned char rnd[6];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, rnd, sizeof rnd) != (ssize_t)sizeof rnd) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    close(fd);
    char tag[13];
    for (size_t i = 0; i < sizeof rnd; i++) {
        tag[2 * i] = hex[rnd[i] >> 4];
        tag[2 * i + 1] = hex[rnd[i] & 15];
    }
    tag[12] = '\0';
    if (snprintf(path, cap, "%s/%s%d-%s.journal", sb->state_dir, sb->journal_prefix,
                 (int)getpid(), tag) >= (int)cap)
        return NULL;
    fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
    return fd < 0 ? NULL : fdopen(fd, "we");
}

/* A worktree's gitdir names the repository's common dir (objects, refs,
 * config): git needs it, read-only, wherever it lives. */
static void bind_commondir(struct a3s_strvec *binds, const char *gitdir) {
    char file[PATH_MAX], line[PATH_MAX], joined[PATH_MAX * 2 + 2];
    if (!join(file, sizeof file, gitdir, "commondir"))
        return;
    FILE *f = fopen(file, "re");
    if (!f)
        return;
    if (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '/')
            snprintf(joined, sizeof joined, "%s", line);
        else
            snprintf(joined, sizeof joined, "%s/%s", gitdir, line);
        char *real = realpath(joined, NULL);
        if (real && is_dir_nofollow(real))
            push3(binds, "--ro-bind", real, real);
        free(real);
    }
    fclose(f);
}

/* ---- hard-link aliases --------------------------------------------------
 * A file under a protected or masked directory that has a second name
 * elsewhere in the workspace could be written or read through that name.
 * These walks look for regular files with more than one link; git's object
 * store is left out (clones share objects through hard links, and objects
 * are content-addressed, so an altered one is detected by git). */

#define LINK_WALK_BUDGET 50000

struct link_walk {
    int budget;
    int ifd;        /* >= 0: every directory read is watched for new names and links */
    bool unwatched; /* a watch could not be added */
    char found[PATH_MAX];
};

/* What makes a walked directory stale: a new name (perhaps a hard link to
 * a file elsewhere), a changed link count of a file in it (IN_ATTRIB), or
 * the directory itself going away. */
#define LINK_WATCH_MASK                                                                          \
    (IN_ATTRIB | IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR |          \
     IN_DONT_FOLLOW)

/* 1 found (walk->found set), 0 none, -1 over budget. */
static int linked_file_at(int at, const char *path, bool is_git, struct link_walk *w, int depth) {
    /* the watch goes on before the read, so nothing changed in between is missed */
    if (w->ifd >= 0 && inotify_add_watch(w->ifd, path, LINK_WATCH_MASK) < 0)
        w->unwatched = true;
    DIR *d = NULL;
    int fd = openat(at, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0)
        d = fdopendir(fd);
    if (!d) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (--w->budget < 0) {
            rc = -1;
            break;
        }
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        char sub[PATH_MAX];
        if (!join(sub, sizeof sub, path, e->d_name))
            continue;
        if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
            snprintf(w->found, sizeof w->found, "%s", sub);
            rc = 1;
        } else if (S_ISDIR(st.st_mode) && depth < 64 &&
                   !(is_git && depth == 0 && !strcmp(e->d_name, "objects"))) {
            int cfd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (cfd >= 0) {
                rc = linked_file_at(cfd, sub, is_git, w, depth + 1);
                close(cfd);
            }
        }
    }
    closedir(d);
    return rc;
}

/* Refuses the run if the directory holds a file with another name. For a
 * long-lived sandbox (p->server), the directory is remembered and every
 * directory under it watched, so that a link made later is noticed. */
static int refuse_linked_files(struct plan *p, const char *dir, bool is_git, const char *what,
                               a3s_error *err) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return A3S_OK;
    struct link_walk w = {.budget = LINK_WALK_BUDGET, .ifd = p ? p->link_ifd : -1};
    if (p && p->server) {
        a3s_strvec_push2(&p->link_dirs, is_git ? "g" : "-", dir);
        if (p->link_ifd < 0)
            w.unwatched = true;
    }
    int rc = linked_file_at(fd, dir, is_git, &w, 0);
    close(fd);
    if (w.unwatched && p && p->link_ifd >= 0) {
        close(p->link_ifd); /* an incomplete watch is no watch: walk again at each check */
        p->link_ifd = -1;
    }
    if (rc > 0)
        return a3s_fail(err, A3S_E_REFUSED, 0, 0,
                        "%s has extra hard links; another name could reach this %s file",
                        w.found, what);
    if (rc < 0)
        return a3s_fail(err, A3S_E_REFUSED, 0, 0,
                        "%s holds more than %d entries: too many to check for hard links", dir,
                        LINK_WALK_BUDGET);
    return A3S_OK;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_protected_name(const char *name) {
    for (size_t i = 0; i < COUNT(PROTECTED_DIRS); i++)
        if (eq_nocase(name, PROTECTED_DIRS[i]))
            return true;
    for (size_t i = 0; i < COUNT(PROTECTED_FILES); i++)
        if (eq_nocase(name, PROTECTED_FILES[i]))
            return true;
    return false;
}

/* The names at the workspace top level that are protected (any case), sorted. */
static bool list_protected(const char *workspace, struct a3s_strvec *out) {
    DIR *d = opendir(workspace);
    if (!d)
        return false;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (is_protected_name(e->d_name))
            a3s_strvec_push(out, e->d_name);
    closedir(d);
    if (out->len > 1)
        qsort(out->items, out->len, sizeof *out->items, by_name);
    return !out->failed;
}

/* Protected top-level names: read-only binds, placeholders where missing.
 * p->names gets every name bound (sorted). */
static int protect_names(const a3s_sandbox *sb, struct plan *p, struct a3s_strvec *binds,
                         FILE **journal, a3s_error *err) {
    char path[PATH_MAX];
    /* case variants present on disk count as the protected name itself */
    DIR *d = opendir(sb->workspace);
    if (!d)
        return a3s_fail(err, A3S_E_SYSTEM, errno, 0, "cannot list the workspace: %s",
                        strerror(errno));
    bool present_dirs[COUNT(PROTECTED_DIRS)] = {0};
    bool present_files[COUNT(PROTECTED_FILES)] = {0};
    struct dirent *e;
    int rc = A3S_OK;
    while (rc == A3S_OK && (e = readdir(d)) != NULL) {
        bool is_dir_name = false, match = false;
        for (size_t i = 0; i < COUNT(PROTECTED_DIRS); i++)
            if (eq_nocase(e->d_name, PROTECTED_DIRS[i])) {
                match = is_dir_name = true;
                if (!strcmp(e->d_name, PROTECTED_DIRS[i]))
                    present_dirs[i] = true;
            }
        for (size_t i = 0; i < COUNT(PROTECTED_FILES); i++)
            if (eq_nocase(e->d_name, PROTECTED_FILES[i])) {
                match = true;
                if (!strcmp(e->d_name, PROTECTED_FILES[i]))
                    present_files[i] = true;
            }
        if (!match)
            continue;
        snprintf(path, sizeof path, "%s/%s", sb->workspace, e->d_name);
        struct stat st;
        if (lstat(path, &st) < 0)
            continue;
        if (S_ISLNK(st.st_mode)) {
            rc = a3s_fail(err, A3S_E_REFUSED, 0, 0,
                          "%s is a symlink; a protected name must be a real %s", path,
                          is_dir_name ? "directory" : "file");
        } else if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
            rc = a3s_fail(err, A3S_E_REFUSED, 0, 0,
                          "%s has %lu hard links; another name could write to this protected "
                          "file",
                          path, (unsigned long)st.st_nlink);
        } else if (S_ISDIR(st.st_mode) &&
                   (rc = refuse_linked_files(p, path, eq_nocase(e->d_name, ".git"), "protected",
                                             err)) != A3S_OK) {
            break;
        } else {
            push3(binds, "--ro-bind", path, path);
            a3s_strvec_push(&p->names, e->d_name);
            /* a worktree or submodule: .git is a file naming the real gitdir */
            if (S_ISREG(st.st_mode) && eq_nocase(e->d_name, ".git")) {
                FILE *f = fopen(path, "re");
                char line[PATH_MAX + 16];
                if (f && fgets(line, sizeof line, f) && !strncmp(line, "gitdir: ", 8)) {
                    line[strcspn(line, "\r\n")] = '\0';
                    char joined[PATH_MAX * 2];
                    const char *g = line + 8;
                    if (g[0] != '/')
                        snprintf(joined, sizeof joined, "%s/%s", sb->workspace, g);
                    else
                        snprintf(joined, sizeof joined, "%s", g);
                    char *real = realpath(joined, NULL);
                    if (real && is_dir_nofollow(real)) {
                        push3(binds, "--ro-bind", real, real);
                        bind_commondir(binds, real);
                    }
                    free(real);
                }
                if (f)
                    fclose(f);
            }
        }
    }
    closedir(d);
    if (rc)
        return rc;

    /* A missing name gets a read-only placeholder for the run: always an empty
     * directory, even for a file name, because git lists no empty directory, so
     * a placeholder never shows up in the host's `git status`, nor is it staged
     * by `git add -A`, while a long-lived sandbox keeps it (docs/security.md).
     * Journals of older versions may still name file placeholders ('f'). */
    bool readonly = sb->flags & A3S_SANDBOX_WORKSPACE_READONLY; /* nothing can be created */
    for (int kind = 0; kind < 2 && !readonly; kind++) {
        const char *const *names = kind ? PROTECTED_FILES : PROTECTED_DIRS;
        size_t n = kind ? COUNT(PROTECTED_FILES) : COUNT(PROTECTED_DIRS);
        for (size_t i = 0; i < n; i++) {
            if (kind ? present_files[i] : present_dirs[i])
                continue;
            snprintf(path, sizeof path, "%s/%s", sb->workspace, names[i]);
            if (p->describe) { /* the bind a run would make, over nothing made */
                push3(binds, "--ro-bind", path, path);
                a3s_strvec_push(&p->names, names[i]);
                continue;
            }
            int made = mkdir(path, 0555);
            if (made < 0 && errno != EEXIST)
                return a3s_fail(err, A3S_E_SYSTEM, errno, 0,
                                "cannot create a placeholder for %s: %s", path, strerror(errno));
            struct stat st;
            if (lstat(path, &st) < 0 || S_ISLNK(st.st_mode))
                return a3s_fail(err, A3S_E_REFUSED, 0, 0, "%s changed while being protected",
                                path);
            if (made >= 0) {
                char tagged[PATH_MAX + 64];
                snprintf(tagged, sizeof tagged, "d%lu:%lu:%lld.%09ld:%s",
                         (unsigned long)st.st_dev, (unsigned long)st.st_ino,
                         (long long)st.st_ctim.tv_sec, (long)st.st_ctim.tv_nsec, path);
                a3s_strvec_push(&p->placeholders, tagged);
                if (!*journal)
                    *journal = open_journal(sb, p->journal, sizeof p->journal);
                if (*journal) {
                    fprintf(*journal, "%s\n", tagged);
                    fflush(*journal); /* in the page cache: survives a SIGKILL of the caller */
                }
            }
            push3(binds, "--ro-bind", path, path);
            a3s_strvec_push(&p->names, names[i]);
        }
    }
    if (p->names.len > 1)
        qsort(p->names.items, p->names.len, sizeof *p->names.items, by_name);
    return A3S_OK;
}

/* Credential files inside the workspace: bind an unreadable object over each. */
static int mask_credentials(a3s_sandbox *sb, struct plan *p, struct a3s_strvec *binds,
                            a3s_error *err) {
    struct a3s_strvec found = {0};
    pthread_mutex_lock(&sb->lock);
    int rc = a3s_credscan_run(sb->creds, &found, err);
    pthread_mutex_unlock(&sb->lock);
    if (rc) {
        a3s_strvec_free(&found);
        return rc;
    }
    if (found.len > MAX_MASKS) {
        size_t n = found.len;
        a3s_strvec_free(&found);
        return a3s_fail(err, A3S_E_REFUSED, 0, (int64_t)n,
                        "the workspace holds %zu credential files; the sandbox masks at most %d",
                        n, MAX_MASKS);
    }
    for (size_t i = 0; rc == A3S_OK && i < found.len; i++) {
        const char *path = found.items[i] + 1;
        struct stat st;
        if (lstat(path, &st) < 0)
            continue; /* gone since the scan */
        if (S_ISLNK(st.st_mode)) {
            /* a credential name pointing into the workspace exposes its target */
            char *real = realpath(path, NULL);
            if (real && path_is_under(real, sb->workspace) && stat(real, &st) == 0) {
                push3(binds, "--ro-bind", S_ISDIR(st.st_mode) ? p->mask_dir : p->mask_file,
                      real);
                a3s_strvec_push(&p->masks, real);
            }
            free(real);
            continue;
        }
        if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
            rc = a3s_fail(err, A3S_E_REFUSED, 0, 0,
                          "credential file %s has %lu hard links; an alias could expose it", path,
                          (unsigned long)st.st_nlink);
            break;
        }
        if (S_ISDIR(st.st_mode) &&
            (rc = refuse_linked_files(p, path, false, "credential", err)) != A3S_OK)
            break;
        push3(binds, "--ro-bind", S_ISDIR(st.st_mode) ? p->mask_dir : p->mask_file, path);
        a3s_strvec_push(&p->masks, path);
    }
    if (p->server) {
        /* whatever becomes of each name (gone, replaced, linked) must be seen */
        for (size_t i = 0; i < found.len; i++)
            a3s_strvec_push(&p->extra, found.items[i] + 1);
        a3s_strvec_free(&p->found);
        p->found = found;
    } else {
        a3s_strvec_free(&found);
    }
    return rc;
}

static bool is_home_secret(const char *path, const char *home) {
    for (size_t i = 0; i < COUNT(HOME_SECRETS); i++) {
        char secret[PATH_MAX];
        snprintf(secret, sizeof secret, "%s/%s", home, HOME_SECRETS[i]);
        if (path_is_under(path, secret) || path_is_under(secret, path))
            return true;
    }
    return false;
}

static int by_length(const void *a, const void *b) {
    size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);
    return la < lb ? -1 : la > lb;
}

static void push_num(struct a3s_strvec *v, const char *opt, uint64_t n);

/* A tmpfs the sandbox writes to, at most tmpfs_max bytes (bubblewrap's
 * default is half the machine's memory, for each one). */
static void push_tmpfs(const a3s_sandbox *sb, struct a3s_strvec *args, const char *path) {
    if (sb->tmpfs_max != UINT64_MAX)
        push_num(args, "--size", sb->tmpfs_max);
    a3s_strvec_push(args, "--tmpfs");
    a3s_strvec_push(args, path);
}

/* Homes are masked whole; toolchains under them come back read-only. */
static void mask_homes(const a3s_sandbox *sb, struct plan *p, struct a3s_strvec *args) {
    const char *homes[3] = {"/home", "/root", env_get(&sb->host_env, "HOME")};
    struct a3s_strvec masked = {0};
    for (size_t i = 0; i < 3; i++) {
        const char *h = homes[i];
        if (!h || h[0] != '/' || !strcmp(h, "/") || !is_dir_nofollow(h))
            continue;
        char *real = realpath(h, NULL);
        if (!real)
            continue;
        bool covered = false;
        for (size_t j = 0; j < masked.len; j++)
            covered |= path_is_under(real, masked.items[j]);
        if (!covered && strcmp(real, "/") != 0) {
            push_tmpfs(sb, args, real);
            a3s_strvec_push(&masked, real);
        }
        free(real);
    }
    /* re-expose toolchain roots and absolute PATH entries under a masked home */
    struct a3s_strvec roots = {0};
    for (size_t i = 0; i < COUNT(TOOLCHAIN_VARS); i++) {
        const char *v = env_get(&sb->host_env, TOOLCHAIN_VARS[i]);
        if (v && v[0] == '/')
            a3s_strvec_push(&roots, v);
    }
    const char *path = env_get(&sb->host_env, "PATH");
    while (path && *path) {
        const char *end = strchr(path, ':');
        size_t n = end ? (size_t)(end - path) : strlen(path);
        if (n && path[0] == '/')
            a3s_strvec_push_n(&roots, path, n);
        path += n + (end ? 1 : 0);
    }
    /* shortest first, so a root is exposed before anything inside it */
    if (roots.len > 1)
        qsort(roots.items, roots.len, sizeof *roots.items, by_length);
    const char *home = env_get(&sb->host_env, "HOME");
    struct a3s_strvec exposed = {0};
    for (size_t i = 0; i < roots.len; i++) {
        char *real = realpath(roots.items[i], NULL);
        if (!real || !is_dir_nofollow(real)) {
            free(real);
            continue;
        }
        bool under = false, secret = false, dup = false;
        for (size_t j = 0; j < masked.len; j++) {
            if (path_is_under(real, masked.items[j])) {
                under = true;
                secret |= !strcmp(real, masked.items[j]); /* never the home itself */
            }
        }
        for (size_t j = 0; j < masked.len && !secret; j++)
            secret = is_home_secret(real, masked.items[j]);
        if (home && home[0] == '/')
            secret |= is_home_secret(real, home);
        /* a root inside one already exposed adds nothing but a mount */
        for (size_t j = 0; j < exposed.len && !dup; j++)
            dup = path_is_under(real, exposed.items[j]);
        if (under && !secret && !dup && !path_is_under(real, sb->workspace)) {
            push3(args, "--ro-bind", real, real);
            a3s_strvec_push(&exposed, real);
            /* cargo keeps its registry token inside CARGO_HOME */
            static const char *const inner[] = {"credentials", "credentials.toml"};
            for (size_t k = 0; k < COUNT(inner); k++) {
                char c[PATH_MAX];
                snprintf(c, sizeof c, "%s/%s", real, inner[k]);
                struct stat st;
                if (lstat(c, &st) == 0 && S_ISREG(st.st_mode))
                    push3(args, "--ro-bind", p->mask_file, c);
                if (p->server)
                    a3s_strvec_push(&p->extra, c);
            }
        }
        free(real);
    }
    a3s_strvec_free(&exposed);
    a3s_strvec_free(&roots);
    a3s_strvec_free(&masked);
}

static void push_num(struct a3s_strvec *v, const char *opt, uint64_t n) {
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)n);
    a3s_strvec_push(v, opt);
    a3s_strvec_push(v, buf);
}

static void push_init(const a3s_sandbox *sb, const struct plan *p, const a3s_exec_options *o,
                      struct a3s_strvec *a, bool sandbox, const struct plan_fds *fds) {
    a3s_strvec_push(a, sandbox ? INIT_INSIDE : sb->init);
    a3s_strvec_push(a, "--mode");
    a3s_strvec_push(a, p->server ? "server" : sandbox ? "sandbox" : "host");
    if (p->server) {
        push_num(a, "--control-fd", (uint64_t)fds->control_fd);
        push_num(a, "--host-pidfd", (uint64_t)fds->host_pidfd);
    } else if (p->spawn) {
        /* a server runs until it is stopped */
        push_num(a, "--status-fd", (uint64_t)fds->status_fd);
        push_num(a, "--grace-ms",
                 p->spawn->kill_grace_ms ? p->spawn->kill_grace_ms : A3S_CHILD_DEFAULT_GRACE_MS);
        if (fds->host_pidfd >= 0)
            push_num(a, "--host-pidfd", (uint64_t)fds->host_pidfd);
    } else {
        push_num(a, "--status-fd", (uint64_t)fds->status_fd);
        push_num(a, "--timeout-ms", o->timeout_ms ? o->timeout_ms : DEFAULT_TIMEOUT_MS);
        push_num(a, "--grace-ms", o->kill_grace_ms ? o->kill_grace_ms : 2000);
    }
    push_num(a, "--lifeline-fd", (uint64_t)fds->lifeline_fd);
    /* network grants (a3s.h): a long-lived sandbox may get one with any
     * command, a one-shot run only when its command has one */
    bool can_grant = sandbox && !(sb->flags & A3S_SANDBOX_SHARE_NET) && !p->spawn;
    if (can_grant && (p->server || (o && (o->flags & A3S_EXEC_NETWORK_GRANT))))
        push_num(a, "--grant-port", A3S_GRANT_PROXY_PORT);
    if (can_grant && !p->server && o && (o->flags & A3S_EXEC_NETWORK_GRANT))
        push_num(a, "--grant-fd", (uint64_t)o->grant_fd);
    if (sandbox) {
        if (sb->flags & A3S_SANDBOX_NO_LANDLOCK)
            a3s_strvec_push(a, "--no-landlock");
        if (sb->flags & A3S_SANDBOX_SHARE_NET)
            a3s_strvec_push(a, "--allow-connect"); /* the network the host granted */
        if (sb->max_processes != UINT64_MAX)
            push_num(a, "--max-processes", sb->max_processes);
        if (sb->memory_max != UINT64_MAX && !p->memory_cgroup) {
            /* no memory cgroup: the init watches the sandbox's memory itself,
             * its processes' and that of every tmpfs it writes to */
            push_num(a, "--memory-max", sb->memory_max);
            size_t end = a->len; /* bubblewrap's arguments and the init's first */
            for (size_t i = 0; i + 1 < end; i++)
                if (!strcmp(a->items[i], "--tmpfs"))
                    push2(a, "--watch-tmpfs", a->items[i + 1]);
            push2(a, "--watch-tmpfs", "/dev");
        }
        /* a long-lived sandbox's scratch directories are under /run */
        static const char *const rw[] = {"/tmp", "/var/tmp", "/dev", "/run"};
        for (size_t i = 0; i < COUNT(rw); i++) {
            a3s_strvec_push(a, "--rw");
            a3s_strvec_push(a, rw[i]);
        }
        if (!(sb->flags & A3S_SANDBOX_WORKSPACE_READONLY)) {
            a3s_strvec_push(a, "--rw");
            a3s_strvec_push(a, sb->workspace);
        }
        if (!p->server) {
            a3s_strvec_push(a, "--rw");
            a3s_strvec_push(a, p->home);
        }
    }
    if (p->server) {
        /* the trees the init puts back after every command: each tmpfs, and /dev */
        for (size_t i = 0; i + 1 < p->argv.len; i++) {
            if (strcmp(p->argv.items[i], "--tmpfs") != 0)
                continue;
            a3s_strvec_push(a, "--clean");
            a3s_strvec_push(a, p->argv.items[i + 1]);
        }
        a3s_strvec_push(a, "--clean");
        a3s_strvec_push(a, "/dev");
    }
    a3s_strvec_push(a, "--");
    if (p->spawn) {
        a3s_strvec_push(a, p->spawn->path);
        for (size_t i = 0; i < p->spawn->nargs; i++)
            a3s_strvec_push(a, p->spawn->args[i]);
        return;
    }
    a3s_strvec_push(a, sb->bash);
    a3s_strvec_push(a, "-c");
    if (!p->server)
        a3s_strvec_push_n(a, o->command, o->command_len);
}

/* A destination bubblewrap mounts over, if it is a host path the plan
 * relies on (not the sandbox's own /proc, /dev and init). */
static bool host_destination(const char *path) {
    return !path_is_under(path, "/proc") && !path_is_under(path, "/dev") &&
           !path_is_under(path, "/run/a3s");
}

static bool is_placeholder(const struct plan *p, const char *path) {
    for (size_t i = 0; i < p->placeholders.len; i++) {
        const char *tagged = p->placeholders.items[i];
        const char *at = strchr(tagged, '/');
        if (at && !strcmp(at, path))
            return true;
    }
    return false;
}

/* readlink into a new string; "" if it cannot be read. */
static char *link_target(const char *path) {
    char buf[PATH_MAX];
    ssize_t n = readlink(path, buf, sizeof buf - 1);
    buf[n < 0 ? 0 : n] = '\0';
    return strdup(buf);
}

static void watch_one(struct a3s_watch *w, const char *path, bool ctime_too) {
    struct stat st;
    memset(w, 0, sizeof *w);
    w->path = strdup(path);
    w->ctime_too = ctime_too;
    if (lstat(path, &st) == 0) {
        w->exists = true;
        w->type = st.st_mode & S_IFMT;
        w->dev = st.st_dev;
        w->ino = st.st_ino;
        w->nlink = S_ISREG(st.st_mode) ? st.st_nlink : 0;
        w->ctime = st.st_ctim;
        if (S_ISLNK(st.st_mode))
            w->target = link_target(path);
    }
}

/* Records the state of every host path the long-lived sandbox was built
 * over: the bind and tmpfs destinations, and the extra paths. */
static int record_watch(const a3s_sandbox *sb, struct plan *p, a3s_error *err) {
    size_t cap = p->argv.len + p->extra.len;
    p->watch = calloc(cap ? cap : 1, sizeof *p->watch);
    if (!p->watch)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory");
    char git_file[PATH_MAX];
    join(git_file, sizeof git_file, sb->workspace, ".git");
    for (size_t i = 0; i + 1 < p->argv.len; i++) {
        const char *opt = p->argv.items[i];
        const char *dst = NULL;
        if (!strcmp(opt, "--tmpfs"))
            dst = p->argv.items[i + 1];
        else if ((!strcmp(opt, "--bind") || !strcmp(opt, "--ro-bind") ||
                  !strcmp(opt, "--ro-bind-try")) &&
                 i + 2 < p->argv.len)
            dst = p->argv.items[i + 2];
        else if (!strcmp(opt, "--"))
            break;
        if (!dst || !host_destination(dst))
            continue;
        bool ctime_too = is_placeholder(p, dst) || !strcmp(dst, git_file);
        watch_one(&p->watch[p->nwatch++], dst, ctime_too);
    }
    for (size_t i = 0; i < p->extra.len; i++)
        watch_one(&p->watch[p->nwatch++], p->extra.items[i], false);
    for (size_t i = 0; i < p->nwatch; i++)
        if (!p->watch[i].path)
            return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory");
    return A3S_OK;
}

int a3s_plan_build(a3s_sandbox *sb, const a3s_exec_options *o, struct plan *p,
                   const struct plan_fds *fds, a3s_error *err) {
    bool sandbox = !(sb->flags & A3S_SANDBOX_PROCESS_HOST);
    p->server = fds->control_fd >= 0;
    p->link_ifd = -1;
    p->lock_fd = -1;
    if (sandbox && !p->describe)
        p->lock_fd = lock_workspace(sb);
    struct stat st;
    if (lstat(sb->workspace, &st) < 0 || !S_ISDIR(st.st_mode))
        return a3s_fail(err, A3S_E_REFUSED, 0, 0,
                        "the workspace %s is gone or is no longer a directory", sb->workspace);
    p->ws_dev = st.st_dev;
    p->ws_ino = st.st_ino;
    p->ws_mtime = st.st_mtim; /* before the names are read: a later change is seen */
    p->ws_ctime = st.st_ctim;
    int rc = p->describe ? describe_run_dir(p) : make_run_dir(sb, p, err);
    if (rc)
        return rc;
    if (p->spawn &&
        ((rc = a3s_env_build((const char *const *)sb->host_env.items, sb->host_env.len, NULL, 0,
                             p->home, &p->env, err)) != A3S_OK ||
         (rc = a3s_env_overlay(&p->env, p->spawn->env, p->spawn->envc, err)) != A3S_OK))
        return rc;
    if (!p->server && !p->spawn &&
        (rc = a3s_env_build((const char *const *)sb->host_env.items, sb->host_env.len, o->env,
                            o->envc, p->home, &p->env, err)) != A3S_OK)
        return rc;
    if (!p->server && !p->spawn && (o->flags & A3S_EXEC_NETWORK_GRANT) &&
        (rc = a3s_grant_env(&p->env, err)) != A3S_OK)
        return rc;
    if (!sandbox) {
        /* the process host keeps the real HOME: it has no boundary to keep it from */
        const char *home = env_get(&sb->host_env, "HOME");
        for (size_t i = 0; home && i < p->env.len; i++) {
            if (!strncmp(p->env.items[i], "HOME=", 5)) {
                char *h = malloc(strlen(home) + 6);
                if (h) {
                    sprintf(h, "HOME=%s", home);
                    free(p->env.items[i]);
                    p->env.items[i] = h;
                }
            }
        }
        push_init(sb, p, o, &p->argv, false, fds);
        return p->argv.failed || p->env.failed ? a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory")
                                               : A3S_OK;
    }
    if (p->server)
        p->link_ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC); /* -1: walk at each check */

    struct a3s_strvec *a = &p->argv;
    a3s_strvec_push(a, sb->bwrap);
    static const char *const ns[] = {"--unshare-all", "--unshare-user", "--disable-userns",
                                     "--die-with-parent", "--new-session", "--as-pid-1",
                                     "--cap-drop", "ALL"};
    for (size_t i = 0; i < COUNT(ns); i++) {
        /* a long-lived sandbox's parent exits at once (it is detached from the
         * caller's process tree); the lifeline is what ties it to the caller */
        if (p->server && !strcmp(ns[i], "--die-with-parent"))
            continue;
        a3s_strvec_push(a, ns[i]);
    }
    if (sb->flags & A3S_SANDBOX_SHARE_NET)
        a3s_strvec_push(a, "--share-net"); /* granted by the host for this handle */
    push3(a, "--ro-bind", "/", "/");
    a3s_strvec_push(a, "--dev");
    a3s_strvec_push(a, "/dev");
    push_tmpfs(sb, a, "/dev/shm"); /* bubblewrap's /dev itself takes no size */
    a3s_strvec_push(a, "--proc");
    a3s_strvec_push(a, "/proc");
    for (size_t i = 0; i < COUNT(PROC_READONLY); i++)
        push3(a, "--ro-bind-try", PROC_READONLY[i], PROC_READONLY[i]);
    static const char *const tmpfs[] = {"/tmp", "/var/tmp", "/run"};
    for (size_t i = 0; i < COUNT(tmpfs); i++)
        push_tmpfs(sb, a, tmpfs[i]);
    mask_homes(sb, p, a);
    /* host credential files outside any home */
    static const char *const host_secrets[] = {"/etc/shadow", "/etc/gshadow", "/etc/shadow-",
                                               "/etc/gshadow-", "/etc/sudoers", "/etc/ssh"};
    for (size_t i = 0; i < COUNT(host_secrets); i++) {
        if (lstat(host_secrets[i], &st) == 0 && !S_ISLNK(st.st_mode))
            push3(a, "--ro-bind", S_ISDIR(st.st_mode) ? p->mask_dir : p->mask_file,
                  host_secrets[i]);
        if (p->server) /* e.g. passwd creates /etc/shadow- later */
            a3s_strvec_push(&p->extra, host_secrets[i]);
    }
    push3(a, (sb->flags & A3S_SANDBOX_WORKSPACE_READONLY) ? "--ro-bind" : "--bind", sb->workspace,
          sb->workspace);
    if (!p->describe) {
        recover_journals(sb, p->lock_fd);
        flock(p->lock_fd, LOCK_SH); /* back to shared for the run */
    }
    FILE *journal = NULL;
    rc = protect_names(sb, p, a, &journal, err);
    if (journal)
        fclose(journal);
    if (rc != A3S_OK)
        return rc;
    if ((rc = mask_credentials(sb, p, a, err)) != A3S_OK)
        return rc;
    if (!p->server)
        push3(a, "--bind", p->home, p->home);
    push3(a, "--ro-bind", sb->init, INIT_INSIDE);
    a3s_strvec_push(a, "--chdir");
    a3s_strvec_push(a, p->spawn && p->spawn->cwd ? p->spawn->cwd : sb->workspace);
    a3s_strvec_push(a, "--");
    push_init(sb, p, o, a, true, fds);
    if (p->server && (rc = record_watch(sb, p, err)) != A3S_OK)
        return rc;
    if (a->failed || p->env.failed || p->placeholders.failed || p->masks.failed ||
        p->names.failed || p->extra.failed || p->link_dirs.failed || p->found.failed)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory planning the sandbox");
    return A3S_OK;
}

/* Removes placeholders that are still the untouched objects we created. */
static void remove_placeholders(a3s_sandbox *sb, struct plan *p) {
    if (p->placeholders.len && !alone(p->lock_fd)) {
        /* another run is using them: leave them to whoever is last */
        char done[PATH_MAX + 8];
        snprintf(done, sizeof done, "%s.done", p->journal);
        if (p->journal[0])
            rename(p->journal, done);
        return;
    }
    for (size_t i = 0; i < p->placeholders.len; i++)
        remove_placeholder(sb, p->placeholders.items[i]);
    if (p->journal[0])
        unlink(p->journal);
    recover_journals(sb, p->lock_fd); /* and what earlier concurrent runs left */
}

void a3s_plan_release(a3s_sandbox *sb, struct plan *p) {
    remove_placeholders(sb, p);
    if (p->lock_fd >= 0)
        close(p->lock_fd);
    p->lock_fd = -1;
    if (p->run_dir[0])
        remove_tree(p->run_dir);
    p->run_dir[0] = '\0';
    plan_free(p);
}

void a3s_plan_forget(struct plan *p) {
    if (p->lock_fd >= 0)
        close(p->lock_fd);
    p->lock_fd = -1;
    plan_free(p);
}

/* ---- is a long-lived sandbox still what its plan says? -------------------- */

static bool same_time(struct timespec a, struct timespec b) {
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static bool watch_holds(const struct a3s_watch *w) {
    struct stat st;
    if (lstat(w->path, &st) < 0)
        return !w->exists && errno == ENOENT;
    if (!w->exists || (st.st_mode & S_IFMT) != w->type || st.st_dev != w->dev ||
        st.st_ino != w->ino)
        return false;
    if (S_ISREG(st.st_mode) && st.st_nlink != w->nlink)
        return false;
    if (S_ISLNK(st.st_mode)) {
        char *now = link_target(w->path);
        bool same = now && w->target && !strcmp(now, w->target);
        free(now);
        if (!same)
            return false;
    }
    return !w->ctime_too || same_time(st.st_ctim, w->ctime);
}

static bool same_strings(const struct a3s_strvec *a, const struct a3s_strvec *b) {
    if (a->len != b->len || a->failed || b->failed)
        return false;
    for (size_t i = 0; i < a->len; i++)
        if (strcmp(a->items[i], b->items[i]) != 0)
            return false;
    return true;
}

/* No new hard link under a protected or masked directory: nothing arrived
 * on the watch, or (without one) the walks still find none. */
static bool links_hold(struct plan *p) {
    if (p->link_ifd >= 0) {
        char buf[4096];
        ssize_t n = read(p->link_ifd, buf, sizeof buf);
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
    for (size_t i = 0; i < p->link_dirs.len; i++) {
        const char *tagged = p->link_dirs.items[i];
        if (refuse_linked_files(NULL, tagged + 1, tagged[0] == 'g', "protected", NULL) != A3S_OK)
            return false;
    }
    return true;
}

bool a3s_plan_current(a3s_sandbox *sb, struct plan *p) {
    struct stat ws;
    if (lstat(sb->workspace, &ws) < 0 || !S_ISDIR(ws.st_mode) || ws.st_dev != p->ws_dev ||
        ws.st_ino != p->ws_ino)
        return false;
    for (size_t i = 0; i < p->nwatch; i++)
        if (!watch_holds(&p->watch[i]))
            return false;
    /* a new case variant of a protected name is not bound: the top level
     * is listed again whenever it changed (a command's own writes included) */
    if (!same_time(ws.st_mtim, p->ws_mtime) || !same_time(ws.st_ctim, p->ws_ctime)) {
        struct a3s_strvec names = {0};
        bool same = list_protected(sb->workspace, &names) && same_strings(&names, &p->names);
        a3s_strvec_free(&names);
        if (!same)
            return false;
        p->ws_mtime = ws.st_mtim;
        p->ws_ctime = ws.st_ctim;
    }
    if (!links_hold(p))
        return false;
    struct a3s_strvec found = {0};
    pthread_mutex_lock(&sb->lock);
    int rc = a3s_credscan_run(sb->creds, &found, NULL);
    pthread_mutex_unlock(&sb->lock);
    bool same = rc == A3S_OK && same_strings(&found, &p->found);
    a3s_strvec_free(&found);
    return same;
}

/* ---- running -------------------------------------------------------------- */

static void read_status(int fd, char *buf, size_t cap) {
    size_t n = 0;
    fcntl(fd, F_SETFL, O_NONBLOCK);
    while (n + 1 < cap) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r > 0)
            n += (size_t)r;
        else if (r < 0 && errno == EINTR)
            continue;
        else
            break;
    }
    buf[n] = '\0';
}

/* The first "bwrap: ..." line of stderr, for a failure before our init ran. */
static void bwrap_message(const a3s_process_result *r, char *out, size_t cap) {
    a3s_process_result_view v = {.struct_size = sizeof v};
    out[0] = '\0';
    if (a3s_process_result_get(r, &v, NULL) != A3S_OK || !v.stderr_data)
        return;
    const char *s = strstr(v.stderr_data, "bwrap: ");
    if (!s)
        s = v.stderr_data;
    size_t n = strcspn(s, "\n");
    snprintf(out, cap, "%.*s", (int)n, s);
}

static int exec_one_shot(a3s_sandbox *sb, const a3s_exec_options *o, a3s_process_result **out,
                         a3s_error *err);

A3S_API int a3s_sandbox_exec(a3s_sandbox *sb, const a3s_exec_options *given,
                             a3s_process_result **out, a3s_error *err) {
    /* struct_size versioning: a caller built before grant_fd existed passes
     * the shorter struct, and the fields it lacks are zero */
    size_t known_size = offsetof(a3s_exec_options, grant_fd);
    if (!sb || !given || !out || given->struct_size < known_size)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_sandbox_exec: invalid argument");
    a3s_exec_options copy;
    memset(&copy, 0, sizeof copy);
    memcpy(&copy, given, given->struct_size < sizeof copy ? given->struct_size : sizeof copy);
    copy.struct_size = sizeof copy;
    const a3s_exec_options *o = &copy;
    if ((!o->command && o->command_len) || (!o->env && o->envc))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_sandbox_exec: invalid argument");
    *out = NULL;
    if (o->flags & ~(uint64_t)(A3S_EXEC_CANCEL_FD | A3S_EXEC_NETWORK_GRANT))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_sandbox_exec: unknown flag bits");
    int grc = a3s_grant_check(sb, o, err);
    if (grc != A3S_OK)
        return grc;
    if (memchr(o->command, '\0', o->command_len))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "the command contains a NUL byte");
    for (size_t i = 0; i < o->envc; i++) {
        int rc = a3s_env_check_extra(o->env[i], err);
        if (rc)
            return rc;
    }
    if ((o->flags & A3S_EXEC_CANCEL_FD) && fcntl(o->cancel_fd, F_GETFD) < 0)
        return a3s_fail(err, A3S_E_INVALID, 0, o->cancel_fd,
                        "a3s_sandbox_exec: cancel_fd %d is not open", o->cancel_fd);
    /* The long-lived sandbox runs one command at a time; a caller that
     * finds it busy runs its command in a sandbox of its own instead of
     * waiting behind a long command. */
    if ((sb->flags & A3S_SANDBOX_REUSE) && !(sb->flags & A3S_SANDBOX_PROCESS_HOST) &&
        !atomic_load(&sb->one_shot_only) && pthread_mutex_trylock(&sb->session_lock) == 0) {
        int rc = a3s_session_exec(sb, o, out, err);
        pthread_mutex_unlock(&sb->session_lock);
        if (rc != 1)
            return rc;
        /* 1: no long-lived sandbox on this kernel; one-shot below */
    }
    return exec_one_shot(sb, o, out, err);
}

void a3s_sandbox_cgroup(a3s_sandbox *sb, struct a3s_cgroup *cg) {
    if (atomic_load(&sb->cgroups_refused)) {
        a3s_cgroup_init(cg);
        return;
    }
    bool first = !atomic_exchange(&sb->cgroups_swept, true);
    if (a3s_cgroup_create(cg, sb->memory_max, sb->max_processes, first) < 0)
        atomic_store(&sb->cgroups_refused, true); /* the fallbacks carry the bounds */
}

int a3s_policy_check(const a3s_sandbox *sb, const struct plan *p, const char *digest,
                     bool *changed, a3s_error *err) {
    char now[A3S_POLICY_DIGEST_SIZE];
    int rc = a3s_plan_digest(sb, p, now, err);
    *changed = rc == A3S_OK && strcmp(now, digest) != 0;
    return rc;
}

/* One bubblewrap for this command (the arguments are checked). */
static int exec_one_shot(a3s_sandbox *sb, const a3s_exec_options *o, a3s_process_result **out,
                         a3s_error *err) {
    int status[2] = {-1, -1}, lifeline[2] = {-1, -1};
    if (pipe2(status, O_CLOEXEC) < 0 || pipe2(lifeline, O_CLOEXEC) < 0) {
        int e = errno;
        for (int i = 0; i < 2; i++) {
            if (status[i] >= 0)
                close(status[i]);
        }
        return a3s_fail(err, A3S_E_SYSTEM, e, 0, "pipe2: %s", strerror(e));
    }
    struct plan p;
    memset(&p, 0, sizeof p);
    /* this run's own cgroup, where the caller may make one */
    struct a3s_cgroup cg;
    if (!(sb->flags & A3S_SANDBOX_PROCESS_HOST))
        a3s_sandbox_cgroup(sb, &cg);
    else
        a3s_cgroup_init(&cg);
    p.memory_cgroup = cg.memory;
    uint64_t oom_kills = a3s_cgroup_oom_kills(&cg);
    a3s_error plan_err = {0};
    struct plan_fds fds = {
        .status_fd = status[1], .lifeline_fd = lifeline[0], .control_fd = -1, .host_pidfd = -1};
    int rc = a3s_plan_build(sb, o, &p, &fds, &plan_err);
    a3s_process_result *result = NULL;
    bool launched = false;
    bool changed = false;
    if (rc == A3S_OK && o->policy_digest)
        rc = a3s_policy_check(sb, &p, o->policy_digest, &changed, &plan_err);
    if (rc == A3S_OK && changed) {
        result = a3s_process_result_synthetic(125, A3S_RESULT_SETUP_FAILED |
                                                       A3S_RESULT_POLICY_CHANGED,
                                              POLICY_CHANGED_MESSAGE);
        rc = result ? A3S_OK : a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory");
    } else if (rc == A3S_OK) {
        bool grant = o->flags & A3S_EXEC_NETWORK_GRANT;
        int keep[3] = {status[1], lifeline[0], grant ? o->grant_fd : -1};
        a3s_process_options po = {
            .struct_size = sizeof po,
            .flags = (o->flags & A3S_EXEC_CANCEL_FD) ? A3S_PROCESS_CANCEL_FD : 0,
            .path = p.argv.items[0],
            .argv = (const char *const *)p.argv.items,
            .argc = p.argv.len,
            .envp = (const char *const *)p.env.items,
            .envc = p.env.len,
            .cwd = sb->workspace,
            /* the init enforces the timeout; this is the backstop behind it */
            .timeout_ms = (o->timeout_ms ? o->timeout_ms : DEFAULT_TIMEOUT_MS) +
                          (o->kill_grace_ms ? o->kill_grace_ms : 2000) + 3000,
            /* longer than the init's own grace, so that on cancel the init (which
             * knows every descendant) does the killing, not the runner */
            .kill_grace_ms = (o->kill_grace_ms ? o->kill_grace_ms : 2000) + 1000,
            .max_output_bytes = o->max_output_bytes,
            .keep_fds = keep,
            .keep_fd_count = grant ? 3 : 2,
            .cancel_fd = o->cancel_fd,
        };
        rc = a3s_process_run_in_cgroup(&po, cg.ndirs ? &cg : NULL, &result, err);
        launched = rc == A3S_OK;
    } else if (plan_err.code == A3S_E_REFUSED || plan_err.code == A3S_E_SYSTEM) {
        /* a refusal is the run's outcome (exit 125), not the caller's mistake */
        result = a3s_process_result_synthetic(125, A3S_RESULT_SETUP_FAILED, plan_err.message);
        rc = result ? A3S_OK : a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory");
    } else if (err) {
        *err = plan_err;
    }
    close(status[1]);
    close(lifeline[0]);
    char st[640];
    read_status(status[0], st, sizeof st);
    close(status[0]);
    close(lifeline[1]); /* only now: the run is over */
    a3s_plan_release(sb, &p);
    bool oom_killed = (cg.memory && a3s_cgroup_oom_kills(&cg) > oom_kills) || strchr(st, 'M');
    a3s_cgroup_destroy(&cg);

    if (launched) {
        if (st[0] != 'R') {
            char msg[sizeof st];
            if (st[0] == 'E')
                snprintf(msg, sizeof msg, "%s", st + 1);
            else
                bwrap_message(result, msg, sizeof msg);
            a3s_process_result_override(result, 125, 0, A3S_RESULT_SETUP_FAILED,
                                        msg[0] ? msg : "the sandbox did not start");
        } else if (strchr(st, 'T')) {
            a3s_process_result_override(result, 124, 0, A3S_RESULT_TIMED_OUT, NULL);
        } else if (oom_killed) {
            a3s_process_result_add_flags(result, A3S_RESULT_OOM_KILLED);
        }
    }
    if (rc != A3S_OK) {
        a3s_process_result_free(result);
        return rc == A3S_OK ? A3S_E_INVALID : rc;
    }
    *out = result;
    return a3s_ok(err);
}

/* The self-test through one path: one-shot, or the long-lived sandbox (1
 * when that did not come up: the caller then tests the one-shot path). */
static int probe_once(a3s_sandbox *sb, uint64_t timeout_ms, bool session, a3s_error *err) {
    bool host = sb->flags & A3S_SANDBOX_PROCESS_HOST;
    const char *cmd = host ? "exit 0" : "exec " INIT_INSIDE " --probe";
    a3s_exec_options o = {
        .struct_size = sizeof o,
        .command = cmd,
        .command_len = strlen(cmd),
        .timeout_ms = timeout_ms ? timeout_ms : 10000,
        .kill_grace_ms = 200,
        .max_output_bytes = 16384,
    };
    a3s_process_result *r = NULL;
    int rc;
    if (session) {
        pthread_mutex_lock(&sb->session_lock);
        rc = a3s_session_exec(sb, &o, &r, err);
        pthread_mutex_unlock(&sb->session_lock);
        if (rc == 1)
            return 1;
    } else {
        rc = exec_one_shot(sb, &o, &r, err);
    }
    if (rc)
        return rc;
    a3s_process_result_view v = {.struct_size = sizeof v};
    a3s_process_result_get(r, &v, NULL);
    if (v.flags & A3S_RESULT_SETUP_FAILED) {
        rc = a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0, "the sandbox cannot start: %s",
                      v.setup_error ? v.setup_error : "unknown error");
    } else if (v.flags & A3S_RESULT_TIMED_OUT) {
        rc = a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0, "the sandbox self-test timed out");
    } else if (v.exit_code != 0 || (!host && !strstr(v.stdout_data, "a3s-probe: ok"))) {
        const char *fail = strstr(v.stdout_data, "FAIL ");
        size_t n = fail ? strcspn(fail, "\n") : 0;
        rc = a3s_fail(err, A3S_E_UNSUPPORTED, 0, v.exit_code,
                      "the sandbox self-test failed (exit %d): %.*s", (int)v.exit_code, (int)n,
                      fail ? fail : "no verdict");
    } else {
        rc = a3s_ok(err);
    }
    a3s_process_result_free(r);
    return rc;
}

A3S_API int a3s_sandbox_probe(a3s_sandbox *sb, uint64_t timeout_ms, a3s_error *err) {
    if (!sb)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_sandbox_probe: NULL sandbox");
    /* a reusing handle runs its commands in the long-lived sandbox: test that;
     * if it does not come up, commands run one-shot: test that instead */
    int rc = 1;
    if ((sb->flags & A3S_SANDBOX_REUSE) && !(sb->flags & A3S_SANDBOX_PROCESS_HOST) &&
        !atomic_load(&sb->one_shot_only))
        rc = probe_once(sb, timeout_ms, true, err);
    if (rc == 1)
        rc = probe_once(sb, timeout_ms, false, err);
    return rc;
}

#else
typedef int a3s_sandbox_linux_unused;
#endif
