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
#include "exec_match.h"
#include "init_image.h"
#include "internal.h"
#include "posix_util.h"
#include "process_internal.h"
#include "sandbox_internal.h"
#include "strvec.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define DEFAULT_TIMEOUT_MS A3S_DEFAULT_TIMEOUT_MS
#define DEFAULT_IDLE_STOP_MS 300000u /* a long-lived sandbox idle this long is stopped */
#define MAX_MASKS 4096
#define INIT_INSIDE A3S_INIT_INSIDE

/* Top-level names that stay read-only even though the workspace is writable
 * are protected.c's a3s_protected_dirs and a3s_protected_files. */
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

/* Removes a run directory with its lock file last: a caller killed while
 * removing it leaves a directory a sweep recognizes (an unlocked lock) or an
 * empty one (recover_run_dirs removes those), never a lockless tree. */
static void remove_run_dir(const char *path) {
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", path);
    char *slash = strrchr(parent, '/');
    if (!slash || slash == parent)
        return;
    *slash = '\0';
    int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pfd < 0)
        return;
    int fd = openat(pfd, slash + 1, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "lock"))
                remove_tree_at(dirfd(d), e->d_name);
        unlinkat(dirfd(d), "lock", 0);
        closedir(d);
    } else if (fd >= 0) {
        close(fd);
    }
    unlinkat(pfd, slash + 1, AT_REMOVEDIR);
    close(pfd);
}

/* ---- workspace content, read as an attacker wrote it ----------------------
 * The host reads a few workspace files (a worktree's .git pointer and its
 * commondir) and follows a few workspace paths (a symlinked credential
 * name's target). A read takes only a regular file, opened without
 * following a symlink and without blocking (a FIFO would hang the caller,
 * a terminal would read the user's keyboard), and at most cap - 2 bytes; a
 * path is followed only beneath the workspace, through no symlink. */

/* The regular file open as fd (read from where it is) into buf,
 * NUL-terminated: its length, or -1 (not a regular file, too big). */
static ssize_t read_small_fd(int fd, char *buf, size_t cap) {
    struct stat st;
    size_t got = 0;
    bool ok = cap >= 2 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= 0 &&
              (uint64_t)st.st_size <= cap - 2;
    while (ok) {
        ssize_t r = pread(fd, buf + got, cap - 1 - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        ok = r >= 0;
        if (r <= 0)
            break;
        got += (size_t)r;
        ok = got <= cap - 2; /* it grew while being read */
    }
    if (!ok)
        return -1;
    buf[got] = '\0';
    return (ssize_t)got;
}

/* The regular file `name` in dirfd into buf, NUL-terminated: its length, or
 * -1 (missing, a symlink or anything but a regular file, too big). */
static ssize_t read_small_at(int dirfd, const char *name, char *buf, size_t cap) {
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
        return -1; /* checked before open: opening a device node can act on it */
    int fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read_small_fd(fd, buf, cap);
    close(fd);
    return n;
}

/* Normalizes the relative path `in` lexically ("a/./b/../c" is "a/c", "" is
 * the start itself) into out; false if it is absolute, climbs above its
 * start or does not fit. Sound only for a path with no symlink on the way,
 * which open_beneath then checks. */
static bool normalize_rel(const char *in, char *out, size_t cap) {
    size_t n = 0;
    if (in[0] == '/' || cap == 0)
        return false;
    while (*in) {
        const char *end = strchr(in, '/');
        size_t len = end ? (size_t)(end - in) : strlen(in);
        if (len == 2 && in[0] == '.' && in[1] == '.') {
            if (n == 0)
                return false;
            while (n > 0 && out[n - 1] != '/')
                n--;
            if (n > 0)
                n--;
        } else if (len > 0 && !(len == 1 && in[0] == '.')) {
            if (n + 1 + len + 1 > cap)
                return false;
            if (n)
                out[n++] = '/';
            memcpy(out + n, in, len);
            n += len;
        }
        in += len + (end ? 1 : 0);
    }
    out[n] = '\0';
    return true;
}

/* Opens the normalized relative path `rel` beneath dirfd as an O_PATH fd
 * (>= 3), with no symlink on the way and a directory at every step but the
 * last; -1 with errno otherwise (ELOOP: a symlink). "" opens dirfd again. */
static int open_beneath(int dirfd, const char *rel) {
    int fd = a3s_fd_above_stdio(openat(dirfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
    char comp[NAME_MAX + 1];
    while (fd >= 0 && *rel) {
        const char *end = strchr(rel, '/');
        size_t len = end ? (size_t)(end - rel) : strlen(rel);
        int next = -1, e = ENAMETOOLONG;
        if (len <= NAME_MAX) {
            memcpy(comp, rel, len);
            comp[len] = '\0';
            next = a3s_fd_above_stdio(openat(fd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC));
            e = errno;
            struct stat st;
            if (next >= 0 && fstat(next, &st) < 0)
                e = errno;
            else if (next >= 0 && S_ISLNK(st.st_mode))
                e = ELOOP;
            else if (next >= 0 && end && !S_ISDIR(st.st_mode))
                e = ENOTDIR;
            else
                e = 0;
            if (e && next >= 0) {
                close(next);
                next = -1;
            }
        }
        close(fd);
        fd = next;
        errno = e;
        rel += len + (end ? 1 : 0);
    }
    return fd;
}

/* realpath(), except that it fails (NULL, errno ELOOP) when a symlink on
 * the way lies inside the workspace: what the workspace holds must never
 * choose a host path that the sandbox mounts. */
static char *realpath_outside(const char *path, const char *workspace) {
    char todo[PATH_MAX], done[PATH_MAX] = "";
    if (path[0] != '/' || snprintf(todo, sizeof todo, "%s", path) >= (int)sizeof todo)
        return NULL;
    size_t dlen = 0;
    const char *rest = todo;
    for (int hops = 0; *rest;) {
        while (*rest == '/')
            rest++;
        const char *end = strchr(rest, '/');
        size_t len = end ? (size_t)(end - rest) : strlen(rest);
        if (len == 0)
            break;
        if (len == 2 && rest[0] == '.' && rest[1] == '.') {
            while (dlen > 0 && done[dlen - 1] != '/')
                dlen--;
            if (dlen > 0)
                dlen--;
            done[dlen] = '\0';
        } else if (!(len == 1 && rest[0] == '.')) {
            if (dlen + 1 + len + 1 > sizeof done)
                return NULL;
            size_t keep = dlen;
            done[dlen++] = '/';
            memcpy(done + dlen, rest, len);
            dlen += len;
            done[dlen] = '\0';
            struct stat st;
            if (lstat(done, &st) < 0)
                return NULL;
            if (S_ISLNK(st.st_mode)) {
                char target[PATH_MAX], next[PATH_MAX];
                ssize_t n = readlink(done, target, sizeof target - 1);
                if (n < 0 || ++hops > 40)
                    return NULL;
                if (path_is_under(done, workspace) && strcmp(done, workspace) != 0) {
                    errno = ELOOP;
                    return NULL;
                }
                target[n] = '\0';
                const char *after = rest + len;
                if (snprintf(next, sizeof next, "%s%s", target, after) >= (int)sizeof next)
                    return NULL;
                memcpy(todo, next, strlen(next) + 1);
                rest = todo;
                dlen = target[0] == '/' ? 0 : keep;
                done[dlen] = '\0';
                continue;
            }
        }
        rest += len;
    }
    return strdup(dlen ? done : "/");
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
        a3s_session_idle_end(sb);
        a3s_session_stop(sb);
        close(sb->wake[0]);
        close(sb->wake[1]);
        pthread_mutex_destroy(&sb->session_lock);
        pthread_cond_destroy(&sb->idle_wake);
        pthread_mutex_destroy(&sb->idle_lock);
    }
    a3s_credscan_free(sb->creds);
    a3s_strvec_free(&sb->host_env);
    a3s_strvec_free(&sb->host_code);
    free(sb->workspace);
    free(sb->bwrap);
    free(sb->init);
    if (sb->init_fd >= 0)
        close(sb->init_fd);
    if (sb->init_image >= 0)
        close(sb->init_image);
    free(sb->bash);
    free(sb->scratch_parent);
    free(sb->state_dir);
    pthread_mutex_destroy(&sb->lock);
    free(sb);
}

/* Defined when the init is compiled into this program (native/init/embed.c,
 * the Go package); a weak, hidden reference, so that other builds link
 * without it and no other library can provide it. */
extern int a3s_init_main(int argc, char **argv) __attribute__((weak, visibility("hidden")));

static int check_self_init(a3s_error *err) {
    if (!a3s_init_main)
        return a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0,
                        "A3S_SANDBOX_SELF_INIT: this build of the library has no embedded init "
                        "(give init_path instead)");
    return A3S_OK;
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
        struct stat st;
        /* ours alone: another user's directory could hold forged journals */
        if (real && !path_is_under(real, workspace) && lstat(real, &st) == 0 &&
            st.st_uid == geteuid() && !(st.st_mode & 022))
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

/* ---- the host's own code ---------------------------------------------------
 * A program run from inside the workspace (a project's .venv, node_modules, a
 * Go binary built there) loads code a command could rewrite, which would then
 * run on the host as written. So every place the caller says it loads code
 * from, and this program's executable and library directories, is bound
 * read-only in the sandbox when it lies inside the workspace. */

static void note(struct plan *p, const char *fmt, ...) A3S_PRINTF(2, 3);

/* Adds `path` (resolved) to the handle's host code if it is inside the workspace
 * and not the workspace itself, once. */
static void add_host_code(a3s_sandbox *sb, const char *path) {
    char *real = path && path[0] == '/' ? realpath(path, NULL) : NULL;
    if (!real)
        return;
    bool keep = path_is_under(real, sb->workspace) && strcmp(real, sb->workspace) != 0;
    for (size_t i = 0; keep && i < sb->host_code.len; i++)
        keep = strcmp(sb->host_code.items[i], real) != 0;
    if (keep)
        a3s_strvec_push(&sb->host_code, real);
    free(real);
}

/* The directory part of `path` into out ("" if none). */
static void dir_of(const char *path, char *out, size_t cap) {
    const char *slash = path ? strrchr(path, '/') : NULL;
    size_t n = slash ? (size_t)(slash - path) : 0;
    if (n >= cap)
        n = 0;
    memcpy(out, path ? path : "", n);
    out[n] = '\0';
}

static void find_host_code(a3s_sandbox *sb, const a3s_sandbox_config *cfg) {
    for (size_t i = 0; cfg->host_code && i < cfg->host_code_count; i++)
        add_host_code(sb, cfg->host_code[i]);
    char exe[PATH_MAX], dir[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        dir_of(exe, dir, sizeof dir);
        add_host_code(sb, dir);
    }
    Dl_info info;
    /* the file this core was loaded from: where one of its objects lives */
    if (dladdr((const void *)a3s_protected_dirs, &info) && info.dli_fname) {
        dir_of(info.dli_fname, dir, sizeof dir);
        add_host_code(sb, dir);
    }
}

/* Binds the host's code read-only; a long-lived plan watches each one (a
 * directory replaced on the host detaches its bind). One that is missing
 * now is noted: nothing holds its place. */
static void protect_host_code(const a3s_sandbox *sb, struct plan *p, struct a3s_strvec *binds) {
    for (size_t i = 0; i < sb->host_code.len; i++) {
        const char *path = sb->host_code.items[i];
        struct stat st;
        if (lstat(path, &st) < 0 || S_ISLNK(st.st_mode)) {
            note(p, "the host's code at %s is missing or a symlink now: not protected", path);
            continue;
        }
        push3(binds, "--ro-bind", path, path);
        if (p->server)
            a3s_strvec_push(&p->extra, path);
    }
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
                     A3S_SANDBOX_WORKSPACE_READONLY | A3S_SANDBOX_SHARE_NET |
                     A3S_SANDBOX_SELF_INIT;
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
    bool self_init = cfg->flags & A3S_SANDBOX_SELF_INIT;
    int rc = self_init ? check_self_init(err) : check_abs_file("a3s-init", cfg->init_path, err);
    if (rc == A3S_OK && !host)
        rc = check_abs_file("bubblewrap", cfg->bwrap_path, err);
    if (rc)
        return rc;

    a3s_sandbox *sb = calloc(1, sizeof *sb);
    if (!sb)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory");
    pthread_mutex_init(&sb->lock, NULL);
    sb->wake[0] = sb->wake[1] = -1;
    sb->init_fd = sb->init_image = -1;
    if (pipe2(sb->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
        int e = errno;
        sb->wake[0] = sb->wake[1] = -1;
        a3s_sandbox_free(sb);
        return a3s_fail(err, A3S_E_SYSTEM, e, 0, "pipe2: %s", strerror(e));
    }
    pthread_mutex_init(&sb->session_lock, NULL);
    pthread_mutex_init(&sb->idle_lock, NULL);
    pthread_condattr_t monotonic;
    pthread_condattr_init(&monotonic);
    pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
    pthread_cond_init(&sb->idle_wake, &monotonic);
    pthread_condattr_destroy(&monotonic);
    sb->creator = getpid();
    sb->idle_stop_ms = cfg->idle_stop_ms == A3S_NO_LIMIT ? UINT64_MAX
                       : cfg->idle_stop_ms             ? cfg->idle_stop_ms
                                                       : DEFAULT_IDLE_STOP_MS;
    sb->flags = cfg->flags;
    sb->workspace = realpath(cfg->workspace, NULL);
    /* the embedded init: this executable, held open so that the image that
     * runs is this one (an O_PATH fd: a program may be execute-only) */
    if (self_init &&
        (sb->init_fd = a3s_fd_above_stdio(open("/proc/self/exe", O_PATH | O_CLOEXEC))) < 0) {
        int e = errno;
        a3s_sandbox_free(sb);
        return a3s_fail(err, A3S_E_UNSUPPORTED, e, 0, "cannot open this program's executable "
                        "(/proc/self/exe) to run its embedded init: %s", strerror(e));
    }
    sb->init = strdup(self_init ? "/proc/self/exe" : cfg->init_path);
    sb->init_pinned = self_init || (cfg->init_sha256 && cfg->init_sha256[0]);
    /* A3S_CODE_PROTECT_NAMES=placeholders: the fallback, as on an older
     * kernel (for tests and for comparing the two) */
    const char *names_mode = getenv("A3S_CODE_PROTECT_NAMES");
    sb->names_emulated = !host && a3s_names_emulation_available() &&
                         !(names_mode && !strcmp(names_mode, "placeholders"));
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
    if (sb->workspace && !host)
        find_host_code(sb, cfg);
    if (!sb->workspace || !sb->init || (!host && !sb->bwrap) || sb->host_env.failed ||
        sb->host_code.failed) {
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
    /* the workspace must not hold what the sandbox is built from: its own
     * /proc, /dev and /run (a workspace inside them is fine: /dev/shm/x) */
    static const char *const system_trees[] = {"/proc", "/dev", "/sys", "/run"};
    for (size_t i = 0; i < COUNT(system_trees); i++) {
        if (!path_is_under(system_trees[i], sb->workspace))
            continue;
        char ws[PATH_MAX];
        snprintf(ws, sizeof ws, "%s", sb->workspace);
        a3s_sandbox_free(sb);
        return a3s_fail(err, A3S_E_REFUSED, 0, 0,
                        "workspace %s overlaps %s, which the sandbox provides itself; give a "
                        "project directory",
                        ws, system_trees[i]);
    }
    /* the init's bytes, pinned now: every later start runs this copy,
     * whatever a command does to the file (it may lie in the workspace) */
    if (!self_init &&
        (rc = a3s_init_image_open(sb->init, cfg->init_sha256, sb->workspace, &sb->init_image,
                                  err)) != A3S_OK) {
        a3s_sandbox_free(sb);
        return rc;
    }
    if (path_is_under(sb->scratch_parent, sb->workspace)) {
        /* the scratch parent inside the workspace: run directories elsewhere */
        static const char *const others[] = {"/var/tmp", "/dev/shm", "/tmp"};
        char *other = NULL;
        for (size_t i = 0; i < COUNT(others) && !other; i++) {
            other = realpath(others[i], NULL);
            if (other && (path_is_under(other, sb->workspace) || !is_dir_nofollow(other))) {
                free(other);
                other = NULL;
            }
        }
        if (!other) {
            a3s_sandbox_free(sb);
            return a3s_fail(err, A3S_E_INVALID, 0, 0,
                            "no directory outside the workspace for the sandbox's run "
                            "directories; set scratch_parent");
        }
        free(sb->scratch_parent);
        sb->scratch_parent = other;
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
    if (!(cfg->flags & A3S_SANDBOX_REUSE))
        a3s_credscan_watch_later(sb->creds); /* one-shot: often one command, then gone */
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
    a3s_strvec_free(&p->missing);
    a3s_strvec_free(&p->masks);
    a3s_strvec_free(&p->found);
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
    for (size_t i = 0; i < COUNT(p->bind_fds); i++)
        a3s_close_fd(&p->bind_fds[i]);
    a3s_strvec_free(&p->notes);
}

void a3s_plan_init(struct plan *p) {
    memset(p, 0, sizeof *p);
    p->lock_fd = p->ws_lock_fd = p->link_ifd = p->run_lock_fd = p->journal_fd = p->cancel_fd = -1;
    p->bind_fds[0] = p->bind_fds[1] = p->bind_fds[2] = p->bind_fds[3] = -1;
}

char *a3s_plan_notes(const struct plan *p) {
    size_t n = 0;
    for (size_t i = 0; i < p->notes.len; i++)
        n += strlen(p->notes.items[i]) + 1;
    char *text = n ? malloc(n) : NULL;
    if (!text)
        return NULL;
    char *at = text;
    for (size_t i = 0; i < p->notes.len; i++) {
        size_t len = strlen(p->notes.items[i]);
        memcpy(at, p->notes.items[i], len);
        at[len] = i + 1 < p->notes.len ? '\n' : '\0';
        at += len + 1;
    }
    return text;
}

/* Records a note (one line) on what the plan did not follow or neutralized.
 * The names in it come from the workspace: control bytes become '?', so a
 * note printed on a terminal cannot drive it. */
static void note(struct plan *p, const char *fmt, ...) A3S_PRINTF(2, 3);
static void note(struct plan *p, const char *fmt, ...) {
    char line[PATH_MAX + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    for (char *c = line; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    a3s_strvec_push(&p->notes, line);
}

/* Planning counts against the command's time and its cancel: A3S_OK, or a
 * failure with sys_errno ETIMEDOUT or ECANCELED (the run's result is 124). */
static int plan_interrupted(const struct plan *p, a3s_error *err) {
    int why = a3s_stop_reason(p->deadline, p->cancel_fd);
    if (why == ETIMEDOUT)
        return a3s_fail(err, A3S_E_SYSTEM, why, 0,
                        "the command's time ran out while the sandbox was being prepared");
    if (why)
        return a3s_fail(err, A3S_E_SYSTEM, why, 0,
                        "cancelled while the sandbox was being prepared");
    return A3S_OK;
}

/* Takes (without waiting) the lock a run directory's owner holds for its
 * whole life: the fd (>= 0) if it was free, i.e. its owner is gone, or -1.
 * A lock proves liveness where a pid cannot (callers in other pid
 * namespaces share the scratch parent). */
static int take_run_lock(int dirfd) {
    struct stat st;
    if (fstatat(dirfd, "lock", &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
        return -1;
    int fd = openat(dirfd, "lock", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
        return fd;
    if (fd >= 0)
        close(fd);
    return -1;
}

/* The private run directory: scratch (HOME, TMPDIR) plus mask objects.
 * It is born locked, so that at every step a sweep that can take the lock
 * its owner holds knows the owner is gone (a pid says nothing across pid
 * namespaces): first the lock file a3s-new-R.lock (R random), made and then
 * locked; then the directory a3s-new-R beside it, the same file linked into
 * it as its "lock", the directory renamed to a3s-run-R (the name a sweep of
 * run directories looks at), and the outer name removed. A sweep removes a
 * lock file only while holding it (recover_run_dirs), so an owner that
 * finds its own unlinked once it holds it (a sweep came between open and
 * flock) starts again under a new name. */
#define NEW_PREFIX "a3s-new-"
#define NEW_LOCK_SUFFIX ".lock"

/* The run directory's own lock: the held lock file itself, linked in; where
 * the file system has no hard links, a second file, locked while the outer
 * one still guards the directory (no sweep looks inside a3s-new-R). */
static int inner_lock(int pfd, const char *lock, const char *inner, int held) {
    if (linkat(pfd, lock, pfd, inner, 0) == 0)
        return fcntl(held, F_DUPFD_CLOEXEC, 3); /* the same open file: the lock stays held */
    if (errno != EPERM && errno != EOPNOTSUPP && errno != EMLINK && errno != ENOSYS)
        return -1;
    int fd = a3s_fd_above_stdio(
        openat(pfd, inner, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int make_run_dir_at(const a3s_sandbox *sb, int pfd, struct plan *p) {
    for (int attempt = 0; attempt < 16; attempt++) {
        unsigned long long rnd = 0;
        if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd)
            rnd = a3s_now_ns() ^ ((unsigned long long)getpid() << 32) ^ (unsigned)attempt;
        char name[64], lock[80], inner[80], run[64];
        snprintf(name, sizeof name, NEW_PREFIX "%016llx", rnd);
        snprintf(lock, sizeof lock, "%s" NEW_LOCK_SUFFIX, name);
        snprintf(inner, sizeof inner, "%s/lock", name);
        snprintf(run, sizeof run, "a3s-run-%016llx", rnd);
        int fd = a3s_fd_above_stdio(
            openat(pfd, lock, O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC, 0600));
        if (fd < 0 && errno == EEXIST)
            continue;
        if (fd < 0)
            return errno;
        /* never waits: a lock held already is a sweep's, which unlinks the file;
         * one unlinked once we hold it was a sweep's before */
        struct stat st;
        int taken = flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : errno;
        if (!taken && fstat(fd, &st) < 0)
            taken = errno;
        if (taken || st.st_nlink == 0) {
            close(fd);
            if (taken && taken != EWOULDBLOCK)
                return taken;
            continue;
        }
        int e = 0, run_lock = -1;
        if (mkdirat(pfd, name, 0700) < 0)
            e = errno;
        else if ((run_lock = inner_lock(pfd, lock, inner, fd)) < 0 ||
                 (renameat2(pfd, name, pfd, run, RENAME_NOREPLACE) < 0 &&
                  (errno != EINVAL || renameat(pfd, name, pfd, run) < 0))) {
            e = errno;
            unlinkat(pfd, inner, 0);
            unlinkat(pfd, name, AT_REMOVEDIR);
        }
        unlinkat(pfd, lock, 0); /* held: nothing else removes or replaces it */
        close(fd);
        if (!e && !join(p->run_dir, sizeof p->run_dir, sb->scratch_parent, run))
            e = ENAMETOOLONG; /* cannot be: the parent's path fit in PATH_MAX with room */
        if (e) {
            if (run_lock >= 0)
                close(run_lock);
            if (e == EEXIST)
                continue;
            return e;
        }
        p->run_lock_fd = run_lock;
        return 0;
    }
    return EEXIST;
}

static int make_run_dir(const a3s_sandbox *sb, struct plan *p, a3s_error *err) {
    int pfd = open(sb->scratch_parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pfd < 0)
        return a3s_fail(err, A3S_E_SYSTEM, errno, 0, "cannot create a scratch directory in %s: %s",
                        sb->scratch_parent, strerror(errno));
    int e = make_run_dir_at(sb, pfd, p);
    close(pfd);
    if (e) {
        p->run_dir[0] = '\0';
        return a3s_fail(err, e == ENAMETOOLONG ? A3S_E_TOO_LARGE : A3S_E_SYSTEM, e, 0,
                        "cannot create a scratch directory in %s: %s", sb->scratch_parent,
                        strerror(e));
    }
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
    for (size_t i = 0; i < a3s_protected_ndirs; i++)
        if (!strcmp(name, a3s_protected_dirs[i]))
            return true;
    for (size_t i = 0; i < a3s_protected_nfiles; i++)
        if (!strcmp(name, a3s_protected_files[i]))
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

/* A placeholder a dead run was about to make ("?path" in its journal) and
 * never recorded: removed only if no later line records it (that one
 * decides) and it is what only a placeholder looks like, an empty
 * read-only directory of ours (rmdir fails on anything in it). */
static void remove_intended(const a3s_sandbox *sb, const char *path, const char *rest) {
    if (!is_placeholder_path(sb, path))
        return;
    for (const char *r = rest; r && *r;) {
        const char *end = strchr(r, '\n');
        size_t len = end ? (size_t)(end - r) : strlen(r), plen = strlen(path);
        if (r[0] != '?' && len > plen && r[len - plen - 1] == ':' &&
            !strncmp(r + len - plen, path, plen))
            return;
        r = end ? end + 1 : r + len;
    }
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
        (st.st_mode & 07777) == 0555)
        rmdir(path);
}

/* Runs over one workspace share a lock: a run holds it shared while it
 * runs, and removes placeholders only if it can take it exclusively, i.e.
 * when no other run still relies on them (removing a mount point detaches
 * the mount in every other mount namespace). Placeholders left behind are
 * journaled "done" and removed by the next run that finds itself alone.
 *
 * That lock is two. The workspace directory itself, locked shared for the
 * run: its inode is the one thing every caller over the workspace shares,
 * whatever its state directory (another HOME or XDG_STATE_HOME, another
 * user, a container), where the lock file in the state directory
 * (lock_workspace) orders only callers that share a state directory.
 * Without it a caller that found itself alone removed the placeholders
 * another caller's live sandbox had bound, and so detached them from it
 * mid-run.
 *
 * Any process that can open the workspace can hold it exclusively (but no
 * command of a sandbox whose run holds a share: that share stops it).
 * How long a run waits for it depends on whether placeholders are in play:
 *  - names emulated (no placeholders): one try, no wait. Nothing of the run
 *    depends on it: a placeholder it finds is bound so that losing it is
 *    harmless (protect_names). Its share, when it gets one, keeps its own
 *    commands from taking the lock, and an exclusive holder only keeps it
 *    from cleaning up journals of older runs, left to a later run.
 *  - the fallback: it waits at most WS_LOCK_WAIT_MS, not to clean up (being
 *    alone is only ever tried) but for the run's binds: without a share a
 *    caller of another state directory could find itself alone and remove a
 *    placeholder this run binds. The only legitimate exclusive holder is
 *    such a caller removing its placeholders (alone, below, or a janitor),
 *    for milliseconds (3-100 ms for all of them on a loaded machine:
 *    docs/security.md); one past five times that is taken to be hostile.
 * Either way a run that did not get it goes on without it (-1) and is never
 * alone, so it leaves its placeholders to a later run: a holder costs a run
 * on the fallback at most WS_LOCK_WAIT_MS and one with names emulated
 * nothing. */
#define WS_LOCK_WAIT_MS 500

/* fd, locked shared within the wait above (lock_workspace_dir), or -1
 * (closed). */
static int take_share(const a3s_sandbox *sb, int fd) {
    int wait_ms = sb->names_emulated ? 0 : WS_LOCK_WAIT_MS;
    for (int waited = 0; fd >= 0; waited += 10) {
        if (flock(fd, LOCK_SH | LOCK_NB) == 0)
            return fd;
        if ((errno != EWOULDBLOCK && errno != EINTR) || waited >= wait_ms)
            break;
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (fd >= 0)
        close(fd);
    return -1;
}

static int open_workspace_dir(const a3s_sandbox *sb) {
    return a3s_fd_above_stdio(
        open(sb->workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

static int lock_workspace_dir(const a3s_sandbox *sb) {
    return take_share(sb, open_workspace_dir(sb));
}

/* The state directory's lock file: no command's to open, unless the state
 * directory is somewhere a sandbox of another state directory sees (an
 * XDG_STATE_HOME outside the homes), so it is taken the same way, and a
 * command holding it cannot stall a run either. */
static int lock_workspace(const a3s_sandbox *sb) {
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%slock", sb->state_dir, sb->journal_prefix) >=
        (int)sizeof path)
        return -1;
    return take_share(sb, open(path, O_CREAT | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600));
}

/* Whether no other run over the workspace is active: both locks taken
 * exclusively (the caller turns them back to shared, or closes them). */
static bool alone(const struct plan *p) {
    if (p->lock_fd < 0 || p->ws_lock_fd < 0 || flock(p->lock_fd, LOCK_EX | LOCK_NB) < 0)
        return false;
    if (flock(p->ws_lock_fd, LOCK_EX | LOCK_NB) == 0)
        return true;
    flock(p->lock_fd, LOCK_SH); /* another caller, of another state directory, is active */
    return false;
}

static void back_to_shared(const struct plan *p) {
    flock(p->lock_fd, LOCK_SH);
    if (p->ws_lock_fd >= 0)
        flock(p->ws_lock_fd, LOCK_SH);
}

/* Whether st may be a placeholder: one of this caller's, or another's
 * (another state directory, user or version), which its maker removes as
 * soon as it finds itself alone. What remove_placeholder and remove_intended
 * would remove: a read-only empty directory (an empty file, from older
 * versions); by mode and size alone, so a non-empty one counts too. */
static bool placeholder_like(const struct stat *st) {
    mode_t mode = st->st_mode & 07777;
    return (S_ISDIR(st->st_mode) && mode == 0555) ||
           (S_ISREG(st->st_mode) && mode == 0444 && st->st_size == 0);
}

/* A run directory its owner died making (see make_run_dir): by its lock
 * file a3s-new-R.lock, taken here, then a3s-new-R (if any; ours), then the
 * lock file, unlinked while held. A live owner holds that lock from the
 * moment it can see it locked; an a3s-new-PID-* of an older version (no
 * lock file beside it) is left alone. */
static void recover_new_dir(const a3s_sandbox *sb, int pfd, const char *lock_name) {
    size_t n = strlen(lock_name), sl = strlen(NEW_LOCK_SUFFIX);
    char name[NAME_MAX + 1], path[PATH_MAX];
    if (n <= sl || n > NAME_MAX || strcmp(lock_name + n - sl, NEW_LOCK_SUFFIX) != 0)
        return;
    snprintf(name, sizeof name, "%.*s", (int)(n - sl), lock_name);
    int fd = openat(pfd, lock_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st, now;
    if (fd < 0)
        return;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
        flock(fd, LOCK_EX | LOCK_NB) == 0 &&
        fstatat(pfd, lock_name, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == st.st_dev &&
        now.st_ino == st.st_ino) {
        int dfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd >= 0 && fstat(dfd, &now) == 0 && now.st_uid == geteuid() &&
            join(path, sizeof path, sb->scratch_parent, name))
            remove_run_dir(path);
        if (dfd >= 0)
            close(dfd);
        unlinkat(pfd, lock_name, 0);
    }
    close(fd);
}

/* Run directories of callers that are gone: their scratch and mask objects.
 * One is removed only while its lock is held here, which its owner holds
 * for as long as it lives (a pid says nothing across pid namespaces); one
 * without a lock file (an older version's) is left alone unless it is empty
 * (a removal cut short by the caller's death: see remove_run_dir). */
static void recover_run_dirs(const a3s_sandbox *sb) {
    DIR *d = opendir(sb->scratch_parent);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strncmp(e->d_name, NEW_PREFIX, strlen(NEW_PREFIX))) {
            recover_new_dir(sb, dirfd(d), e->d_name);
            continue;
        }
        if (strncmp(e->d_name, "a3s-run-", 8) != 0)
            continue;
        char path[PATH_MAX];
        struct stat st;
        int dfd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
            continue;
        bool mine = fstat(dfd, &st) == 0 && st.st_uid == geteuid();
        int lock = mine ? take_run_lock(dfd) : -1;
        if (lock >= 0 && join(path, sizeof path, sb->scratch_parent, e->d_name))
            remove_run_dir(path);
        else if (mine && faccessat(dfd, "lock", F_OK, AT_SYMLINK_NOFOLLOW) < 0)
            unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR); /* only if empty: a removal cut short */
        if (lock >= 0)
            close(lock);
        close(dfd);
    }
    closedir(d);
}

/* ---- the janitor --------------------------------------------------------------
 * Placeholders are visible on the host while the sandbox lives (docs/security.md,
 * "Why placeholders are on the host"). The caller removes them when the sandbox
 * ends; if the caller is killed, a janitor does: a3s-init in janitor mode
 * (native/init/janitor.c), started here on the host with the plan, detached
 * (the caller keeps no child), that waits until every process of the sandbox
 * has exited and the caller has let go of the plan, and then, only if the
 * caller died holding its journal, removes what the journal names. The pipe's
 * write end is plan slot bind_fds[3], which every launcher passes on to
 * bubblewrap (and so to the init): it reads end-of-file only when the sandbox
 * is gone, so a janitor never detaches a mount a running sandbox relies on. */

struct janitor_spawn {
    int exec_fd;
    char *const *argv;
    const int *keep;
    size_t nkeep;
};

/* The janitor's child, sharing the caller's memory (a3s_spawn_shared: a fork
 * of a large, threaded host cost more than the whole sandbox's start): async-
 * signal-safe calls only, nothing of the caller's memory written. It execs
 * the init in janitor mode with --detach 1, which forks the janitor (a copy
 * of a small static process) and exits at once. */
static int janitor_child(void *arg) {
    const struct janitor_spawn *js = arg;
    int exec_fd = js->exec_fd;
    char *const *argv = js->argv;
    const int *keep = js->keep;
    size_t nkeep = js->nkeep;
    sigset_t none;
    sigemptyset(&none);
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0 || setsid() < 0 || dup2(devnull, 0) < 0 || dup2(devnull, 1) < 0 ||
        dup2(devnull, 2) < 0 || chdir("/") < 0)
        _exit(1);
    if (syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */) < 0)
        for (int fd = 3; fd < 65536; fd++)
            fcntl(fd, F_SETFD, FD_CLOEXEC);
    for (size_t i = 0; i < nkeep; i++)
        if (fcntl(keep[i], F_SETFD, 0) < 0)
            _exit(1);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            sigaction(s, &dfl, NULL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    char *const empty_env[] = {NULL};
    syscall(SYS_execveat, exec_fd, "", argv, empty_env, AT_EMPTY_PATH);
    _exit(127);
}

/* Starts the janitor of plan p, whose journal is open. Without one (no
 * pipe, no fork, no init to run) the placeholders are left to the next run's
 * sweep, as before janitors; the run itself is not refused for that. The
 * janitor runs on the host, unconfined, so only an init that is this program
 * or was checked against its SHA-256 is started as one (an unpinned init, a
 * developer's or a test's, gets no janitor). */
static void start_janitor(const a3s_sandbox *sb, struct plan *p) {
    if (!sb->init_pinned)
        return;
    int exec_fd = sb->init_fd >= 0 ? sb->init_fd : sb->init_image;
    int alive[2] = {-1, -1}, lock = -1, journal = -1, wsdir = -1;
    char lock_path[PATH_MAX];
    if (exec_fd < 0 || p->journal_fd < 0 || !p->journal[0] || p->bind_fds[3] >= 0 ||
        snprintf(lock_path, sizeof lock_path, "%s/%slock", sb->state_dir, sb->journal_prefix) >=
            (int)sizeof lock_path)
        return;
    if (a3s_pipe_above_stdio(alive, 0) < 0)
        return;
    lock = a3s_fd_above_stdio(open(lock_path, O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    journal = a3s_fd_above_stdio(open(p->journal, O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    /* the workspace directory's lock (lock_workspace_dir), through another open
     * file description than the plan's */
    wsdir = open_workspace_dir(sb);
    /* the janitor takes the workspace locks only at the end (holding them shared
     * meanwhile would keep this caller from ever being alone to clean up) */
    if (lock < 0 || journal < 0 || wsdir < 0)
        goto out;
    char num[4][16];
    snprintf(num[0], sizeof num[0], "%d", alive[0]);
    snprintf(num[1], sizeof num[1], "%d", lock);
    snprintf(num[2], sizeof num[2], "%d", journal);
    snprintf(num[3], sizeof num[3], "%d", wsdir);
    char *const argv[] = {(char *)(sb->init_fd >= 0 ? INIT_INSIDE : "a3s-init"),
                          "--mode", "janitor", "--alive-fd", num[0], "--lock-fd", num[1],
                          "--workspace-fd", num[3], "--journal-fd", num[2], "--journal",
                          p->journal, "--workspace", sb->workspace, "--detach", "1", NULL};
    int keep[] = {alive[0], lock, journal, wsdir, exec_fd};
    struct janitor_spawn js = {.exec_fd = exec_fd, .argv = argv, .keep = keep, .nkeep = COUNT(keep)};
    pid_t mid = a3s_spawn_shared(janitor_child, &js);
    if (mid > 0) {
        int st;
        while (waitpid(mid, &st, 0) < 0 && errno == EINTR) {
        }
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
            p->bind_fds[3] = alive[1]; /* the sandbox holds it from here on, too */
            alive[1] = -1;
        }
    }
out:
    a3s_close_fd(&alive[0]);
    a3s_close_fd(&alive[1]);
    a3s_close_fd(&lock);
    a3s_close_fd(&journal);
    a3s_close_fd(&wsdir);
}

/* The workspace's journal directory, state_dir/placeholders-<hash>.d: runs
 * look for dead callers' journals there, not in the whole state directory,
 * which keeps one lock file for every workspace ever used (thousands, on a
 * machine that runs the test suite) and was listed twice per sandbox. */
static bool journal_dir(const a3s_sandbox *sb, char *out, size_t cap) {
    size_t plen = strlen(sb->journal_prefix); /* "placeholders-<hash>-" */
    return plen > 1 && snprintf(out, cap, "%s/%.*s.d", sb->state_dir, (int)(plen - 1),
                                sb->journal_prefix) < (int)cap;
}

/* The journal directory, opened without following a symlink, only if it is
 * ours alone (a journal is data that decides what we delete); -1 if not. */
static int open_journal_dir(const a3s_sandbox *sb, bool create) {
    char dir[PATH_MAX];
    if (!journal_dir(sb, dir, sizeof dir))
        return -1;
    if (create && mkdir(dir, 0700) < 0 && errno != EEXIST)
        return -1;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 0077))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

#define MAX_JOURNAL_BYTES 65536 /* far more than every protected name takes */

/* Journals of runs that are over: each one is read only while its lock is
 * held here, which its writer holds until its run ends (a pid says nothing
 * across pid namespaces), and only when no other run over the workspace is
 * active (alone). */
static void recover_journals(a3s_sandbox *sb, const struct plan *p) {
    /* run dirs of dead callers: once per handle, the scratch parent can be big */
    if (!atomic_exchange(&sb->swept, true))
        recover_run_dirs(sb);
    if (!alone(p))
        return; /* another run may rely on what those journals name */
    int dfd = open_journal_dir(sb, false);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return;
    }
    char *text = malloc(MAX_JOURNAL_BYTES);
    struct dirent *e;
    while (text && (e = readdir(d)) != NULL) {
        if (!strstr(e->d_name, ".journal"))
            continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
            continue;
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
            close(fd); /* its run still goes on */
            continue;
        }
        /* read from the locked file itself: it may have been renamed meanwhile */
        ssize_t n = read_small_fd(fd, text, MAX_JOURNAL_BYTES);
        for (char *line = text; n > 0 && *line;) {
            char *end = strchr(line, '\n');
            if (end)
                *end = '\0';
            if (line[0] == '?')
                remove_intended(sb, line + 1, end ? end + 1 : NULL);
            else
                remove_placeholder(sb, line);
            line = end ? end + 1 : line + strlen(line);
        }
        unlinkat(dirfd(d), e->d_name, 0);
        close(fd);
    }
    free(text);
    closedir(d);
}

/* Opens this run's journal (created on the first placeholder) and locks it
 * for the run's life; the fd, or -1. */
static int open_journal(const a3s_sandbox *sb, char *path, size_t cap) {
    static const char hex[] = "0123456789abcdef";
    unsigned char rnd[6];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, rnd, sizeof rnd) != (ssize_t)sizeof rnd) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    char tag[13];
    for (size_t i = 0; i < sizeof rnd; i++) {
        tag[2 * i] = hex[rnd[i] >> 4];
        tag[2 * i + 1] = hex[rnd[i] & 15];
    }
    tag[12] = '\0';
    char dir[PATH_MAX];
    int dfd = open_journal_dir(sb, true);
    if (dfd < 0)
        return -1;
    close(dfd); /* checked: ours alone; the path below names the same directory */
    if (!journal_dir(sb, dir, sizeof dir) ||
        snprintf(path, cap, "%s/%d-%s.journal", dir, (int)getpid(), tag) >= (int)cap)
        return -1;
    fd = a3s_fd_above_stdio(open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (fd >= 0 && flock(fd, LOCK_EX) < 0) {
        close(fd);
        unlink(path);
        fd = -1;
    }
    if (fd < 0)
        path[0] = '\0';
    return fd;
}

/* ---- hard-link aliases --------------------------------------------------
 * A file under a protected or masked directory that has a second name
 * elsewhere in the workspace could be written or read through that name.
 * These walks look for regular files with more than one link; git's object
 * store is left out (clones share objects through hard links, and objects
 * are content-addressed, so an altered one is detected by git). */

#define LINK_WALK_BUDGET 50000

/* A file with more than one name (dev, ino), and how many of them were
 * found in the workspace. */
struct linked_file {
    dev_t dev;
    ino_t ino;
    nlink_t nlink;
    nlink_t names;
    char path[PATH_MAX];
};

struct linked_set {
    struct linked_file *items;
    size_t len, cap;
    bool failed;
};

static void linked_add(struct linked_set *set, const struct stat *st, const char *path) {
    for (size_t i = 0; i < set->len; i++)
        if (set->items[i].dev == st->st_dev && set->items[i].ino == st->st_ino)
            return;
    if (set->len == set->cap) {
        size_t cap = set->cap ? 2 * set->cap : 8;
        struct linked_file *grown = realloc(set->items, cap * sizeof *grown);
        if (!grown) {
            set->failed = true;
            return;
        }
        set->items = grown;
        set->cap = cap;
    }
    struct linked_file *f = &set->items[set->len++];
    f->dev = st->st_dev;
    f->ino = st->st_ino;
    f->nlink = st->st_nlink;
    f->names = 0;
    snprintf(f->path, sizeof f->path, "%s", path);
}

struct link_walk {
    int budget;
    int ifd;                  /* >= 0: every directory read is watched for new names and links */
    bool unwatched;           /* a watch could not be added */
    const struct plan *plan;  /* its deadline and cancel stop the walk; NULL: none */
    struct linked_set *collect; /* non-NULL: every linked file is added here, none refused */
    char found[PATH_MAX];
};

/* What makes a walked directory stale: a new name (perhaps a hard link to
 * a file elsewhere), a changed link count of a file in it (IN_ATTRIB), or
 * the directory itself going away. */
#define LINK_WATCH_MASK                                                                          \
    (IN_ATTRIB | IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR |          \
     IN_DONT_FOLLOW)

/* 1 found (walk->found set), 0 none, -1 over budget, -2 past the plan's
 * deadline or cancelled. */
static int linked_file_at(int at, const char *path, bool is_git, struct link_walk *w, int depth) {
    /* the watch goes on before the read, so nothing changed in between is missed;
     * on the directory open as `at`, whatever its path leads to by now */
    char self[64];
    snprintf(self, sizeof self, "/proc/self/fd/%d", at);
    if (w->ifd >= 0 && inotify_add_watch(w->ifd, self, LINK_WATCH_MASK & ~IN_DONT_FOLLOW) < 0)
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
        if (w->plan && (w->budget & 1023) == 0 && plan_interrupted(w->plan, NULL) != A3S_OK) {
            rc = -2;
            break;
        }
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        char sub[PATH_MAX];
        if (!join(sub, sizeof sub, path, e->d_name))
            continue;
        if (S_ISREG(st.st_mode) && st.st_nlink > 1 && w->collect) {
            linked_add(w->collect, &st, sub);
        } else if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
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

/* Refuses the run if the directory holds a file with another name (or,
 * with `collect`, adds every such file to it instead). For a long-lived
 * sandbox (p->server), the directory is remembered and every directory
 * under it watched, so that a link made later is noticed. */
static int check_linked_files(struct plan *p, const char *dir, bool is_git, const char *what,
                              struct linked_set *collect, a3s_error *err) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return A3S_OK;
    struct link_walk w = {
        .budget = LINK_WALK_BUDGET, .ifd = p ? p->link_ifd : -1, .plan = p, .collect = collect};
    if (p && p->server) {
        /* the plan's inotify instance is made for its first such directory only: a
         * workspace without one (no .git, no masked directory) holds none */
        if (p->link_dirs.len == 0 && p->link_ifd < 0)
            p->link_ifd = w.ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC); /* -1: walk */
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
    if (rc == -2)
        return plan_interrupted(p, err);
    if (rc < 0)
        return a3s_fail(err, A3S_E_REFUSED, 0, 0,
                        "%s holds more than %d entries: too many to check for hard links", dir,
                        LINK_WALK_BUDGET);
    return A3S_OK;
}

static int refuse_linked_files(struct plan *p, const char *dir, bool is_git, const char *what,
                               a3s_error *err) {
    return check_linked_files(p, dir, is_git, what, NULL, err);
}

/* ---- every name of a linked credential ----------------------------------
 * A credential file with a second name, or a file with one under a masked
 * credential directory, would be readable through that name. A command can
 * make such a pair (it writes .env, then links it) but never one to a file
 * that is already masked (another mount: EXDEV); refusing the run would let
 * it disable every later command. So every name of such a file in the
 * workspace is found and masked; only a name outside the workspace (which
 * only the host can make) still refuses the run. */

#define ALIAS_WALK_BUDGET 2000000 /* entries; past it the workspace cannot be checked */
#define ALIAS_WALK_DEPTH 1024

/* Adds an 'f' target for every name under the directory open as fd (path)
 * of a file in `set`. 0, -1 over budget or too deep, -2 past the deadline. */
static int find_names_at(int fd, const char *path, struct linked_set *set,
                         struct a3s_strvec *targets, int *budget, const struct plan *p,
                         int depth) {
    if (depth > ALIAS_WALK_DEPTH)
        return -1;
    int dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
    if (!d) {
        if (dup >= 0)
            close(dup);
        return 0; /* unreadable: the credential scan has refused or masked it */
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (--*budget < 0) {
            rc = -1;
            break;
        }
        if ((*budget & 4095) == 0 && plan_interrupted(p, NULL) != A3S_OK) {
            rc = -2;
            break;
        }
        if (e->d_type != DT_UNKNOWN && e->d_type != DT_REG && e->d_type != DT_DIR)
            continue;
        struct stat st;
        char sub[PATH_MAX];
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
            !join(sub, sizeof sub, path, e->d_name))
            continue;
        if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
            for (size_t i = 0; i < set->len; i++) {
                if (set->items[i].dev == st.st_dev && set->items[i].ino == st.st_ino) {
                    set->items[i].names++;
                    a3s_strvec_push2(targets, "f", sub);
                }
            }
        } else if (S_ISDIR(st.st_mode)) {
            int cfd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (cfd >= 0) {
                rc = find_names_at(cfd, sub, set, targets, budget, p, depth + 1);
                close(cfd);
            }
        }
    }
    closedir(d);
    return rc;
}

/* Masks every name in the workspace of each file in `set` (as 'f' targets)
 * and refuses the run when one has a name outside it. */
static int mask_every_name(const a3s_sandbox *sb, struct plan *p, struct linked_set *set,
                           struct a3s_strvec *targets, a3s_error *err) {
    if (set->failed)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory checking hard links");
    int fd = open(sb->workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return a3s_fail(err, A3S_E_SYSTEM, errno, 0, "cannot open the workspace: %s",
                        strerror(errno));
    int budget = ALIAS_WALK_BUDGET;
    int rc = find_names_at(fd, sb->workspace, set, targets, &budget, p, 0);
    close(fd);
    if (rc == -2)
        return plan_interrupted(p, err);
    if (rc < 0)
        return a3s_fail(err, A3S_E_REFUSED, 0, 0,
                        "%s has hard links, and the workspace is too big to find them all",
                        set->items[0].path);
    for (size_t i = 0; i < set->len; i++) {
        const struct linked_file *f = &set->items[i];
        if (f->names < f->nlink)
            return a3s_fail(err, A3S_E_REFUSED, 0, 0,
                            "%s has %lu hard links, %lu of them outside the workspace; an alias "
                            "could expose this credential file",
                            f->path, (unsigned long)f->nlink,
                            (unsigned long)(f->nlink - f->names));
        note(p, "%s has %lu hard links: every name is masked", f->path,
             (unsigned long)f->nlink);
    }
    return A3S_OK;
}

/* The workspace-relative form of `target` (what a link or pointer file names,
 * relative to the workspace directory `base`, "" for the top) in out,
 * normalized; false if it is outside the workspace or does not fit. */
static bool workspace_relative(const a3s_sandbox *sb, const char *base, const char *target,
                               char *out, size_t cap) {
    char joined[PATH_MAX * 2 + 2];
    if (target[0] == '/') {
        if (!path_is_under(target, sb->workspace))
            return false;
        target += strlen(sb->workspace);
        while (*target == '/')
            target++;
        snprintf(joined, sizeof joined, "%s", target);
    } else {
        snprintf(joined, sizeof joined, "%s%s%s", base, base[0] ? "/" : "", target);
    }
    return normalize_rel(joined, out, cap);
}

/* Binds, read-only, the directory at workspace-relative `rel` named by the
 * pointer file `what`, from an O_PATH fd (so the bind is the object checked
 * here, whatever is renamed meanwhile); its fd, or -1 with a note saying why
 * it was not followed. */
static int bind_pointed_dir(const a3s_sandbox *sb, struct plan *p, struct a3s_strvec *binds,
                            int wsfd, const char *rel, const char *what, size_t slot) {
    int fd = rel[0] ? open_beneath(wsfd, rel) : -1;
    int e = rel[0] ? errno : EISDIR;
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode))) {
        close(fd);
        fd = -1;
        e = ENOTDIR;
    }
    if (fd < 0) {
        if (e == ELOOP)
            note(p, "%s names %s, which is reached through a symlink: not followed", what, rel);
        else if (e == EISDIR)
            note(p, "%s names the workspace itself: not followed", what);
        return -1;
    }
    char src[64], dst[PATH_MAX];
    snprintf(src, sizeof src, "/proc/self/fd/%d", fd);
    snprintf(dst, sizeof dst, "%s/%s", sb->workspace, rel);
    push3(binds, "--ro-bind", src, dst);
    p->bind_fds[slot] = fd;
    return fd;
}

/* A worktree's or submodule's .git is a file naming its gitdir, which names
 * the repository's common dir (objects, refs, config) in `commondir`: git
 * writes there, so both are bound read-only when they are directories
 * inside the workspace, reached through no symlink. Git follows only the
 * exact name .git; nothing else is followed, and a pointer that leaves the
 * workspace is only noted: no host path outside the workspace is ever
 * mounted because of what the workspace holds. */
static void bind_gitdirs(const a3s_sandbox *sb, struct plan *p, struct a3s_strvec *binds,
                         int wsfd) {
    char text[PATH_MAX + 16], rel[PATH_MAX], common[PATH_MAX];
    if (read_small_at(wsfd, ".git", text, sizeof text) < 0 || strncmp(text, "gitdir: ", 8))
        return;
    char *gitdir = text + 8;
    gitdir[strcspn(gitdir, "\r\n")] = '\0';
    if (!workspace_relative(sb, "", gitdir, rel, sizeof rel)) {
        note(p, ".git names the gitdir %s outside the workspace: not mounted", gitdir);
        return;
    }
    int gfd = bind_pointed_dir(sb, p, binds, wsfd, rel, ".git", 0);
    if (gfd < 0 || read_small_at(gfd, "commondir", text, sizeof text) < 0)
        return;
    text[strcspn(text, "\r\n")] = '\0';
    if (!workspace_relative(sb, rel, text, common, sizeof common)) {
        note(p, "%s/commondir names %s outside the workspace: not mounted", rel, text);
        return;
    }
    if (strcmp(common, rel) != 0)
        bind_pointed_dir(sb, p, binds, wsfd, common, "commondir", 1);
}

/* Protected top-level names: each exact name is bound read-only, or held by
 * a read-only placeholder where it is missing. Another spelling (.GIT,
 * .Vscode) is an ordinary name on a case-sensitive file system; on a
 * case-insensitive one the exact name finds it and it is protected as the
 * name itself. A symlink or a file with extra hard links at a protected
 * name refuses the run: no command can make one (the name is read-only in
 * every running sandbox), so it is the host's. */
static int protect_names(const a3s_sandbox *sb, struct plan *p, struct a3s_strvec *binds,
                         a3s_error *err) {
    int wsfd = open(sb->workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (wsfd < 0)
        return a3s_fail(err, A3S_E_SYSTEM, errno, 0, "cannot open the workspace: %s",
                        strerror(errno));
    int rc = A3S_OK;
    /* pass 0 checks and binds the names present, so that a refusal changes
     * nothing; pass 1 holds the missing ones with placeholders, unless the
     * workspace is bound read-only (nothing can be created there). Another
     * run over the same workspace may make or remove its placeholders in
     * between, so pass 1 goes by what pass 0 bound, not by what it finds:
     * a name that has appeared since (another run's placeholder) is checked
     * and bound as in pass 0, one that has gone since gets a placeholder
     * under its pass-0 bind, and every name is bound exactly once. */
    uint64_t bound = 0; /* bit i: protected name i is bound */
    if (a3s_protected_ndirs + a3s_protected_nfiles > 64) {
        close(wsfd);
        return a3s_fail(err, A3S_E_SYSTEM, 0, 0, "protect_names: too many protected names");
    }
    int passes = (sb->flags & A3S_SANDBOX_WORKSPACE_READONLY) ? 1 : 2;
    for (int pass = 0; pass < passes && rc == A3S_OK; pass++) {
        for (size_t i = 0; i < a3s_protected_ndirs + a3s_protected_nfiles && rc == A3S_OK; i++) {
            bool was_bound = bound & (1ull << i);
            bool file = i >= a3s_protected_ndirs;
            const char *name = file ? a3s_protected_files[i - a3s_protected_ndirs]
                                    : a3s_protected_dirs[i];
            char path[PATH_MAX];
            struct stat st;
            snprintf(path, sizeof path, "%s/%s", sb->workspace, name);
            if ((rc = plan_interrupted(p, err)) != A3S_OK)
                break;
            int made = -1;
            if (fstatat(wsfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno != ENOENT) {
                    rc = a3s_fail(err, A3S_E_SYSTEM, errno, 0, "cannot check %s: %s", path,
                                  strerror(errno));
                    break;
                }
                if (pass == 0)
                    continue;
                if (sb->names_emulated) {
                    /* kept missing inside the sandbox only: the init refuses
                     * every call that would make it (init/names.c); nothing
                     * appears on the host. A long-lived sandbox is not reused
                     * once the host has made it meanwhile (p->extra). */
                    if (!was_bound) {
                        a3s_strvec_push(&p->missing, name);
                        if (p->server)
                            a3s_strvec_push(&p->extra, path);
                    }
                    continue;
                }
                if (p->describe) { /* the bind a run would make, over nothing made */
                    if (!was_bound)
                        push3(binds, "--ro-bind", path, path);
                    bound |= 1ull << i;
                    continue;
                }
                /* journaled before it exists: a caller killed between the mkdir
                 * and the line naming the new directory leaves an intent the next
                 * run can act on (remove_intended) */
                if (p->journal_fd < 0)
                    p->journal_fd = open_journal(sb, p->journal, sizeof p->journal);
                if (p->journal_fd >= 0 && dprintf(p->journal_fd, "?%s\n", path) < 0) {
                }
                /* a read-only placeholder for the run (docs/security.md: always an
                 * empty directory, which git never lists or stages) */
                if (((made = mkdirat(wsfd, name, 0555)) < 0 && errno != EEXIST) ||
                    fstatat(wsfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                    rc = a3s_fail(err, A3S_E_SYSTEM, errno, 0,
                                  "cannot create a placeholder for %s: %s", path,
                                  strerror(errno));
                    break;
                }
            } else if (was_bound) {
                continue; /* present: bound in pass 0 */
            }
            if (made >= 0) {
                char tagged[PATH_MAX + 64];
                snprintf(tagged, sizeof tagged, "d%lu:%lu:%lld.%09ld:%s",
                         (unsigned long)st.st_dev, (unsigned long)st.st_ino,
                         (long long)st.st_ctim.tv_sec, (long)st.st_ctim.tv_nsec, path);
                a3s_strvec_push(&p->placeholders, tagged);
                if (p->journal_fd < 0)
                    p->journal_fd = open_journal(sb, p->journal, sizeof p->journal);
                /* in the page cache at once: survives a SIGKILL of the caller */
                if (p->journal_fd >= 0 && dprintf(p->journal_fd, "%s\n", tagged) < 0) {
                }
            } else if (S_ISLNK(st.st_mode)) {
                rc = a3s_fail(err, A3S_E_REFUSED, 0, 0,
                              "%s is a symlink; a protected name must be a real %s", path,
                              file ? "file" : "directory");
                break;
            } else if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
                rc = a3s_fail(err, A3S_E_REFUSED, 0, 0,
                              "%s has %lu hard links; another name could write to this "
                              "protected file",
                              path, (unsigned long)st.st_nlink);
                break;
            } else if (S_ISDIR(st.st_mode) &&
                       (rc = refuse_linked_files(p, path, !strcmp(name, ".git"), "protected",
                                                 err)) != A3S_OK) {
                break;
            }
            if (was_bound)
                continue; /* our placeholder, under the bind pass 0 made */
            if (sb->names_emulated && made < 0 && placeholder_like(&st)) {
                /* perhaps another caller's placeholder (one on the fallback),
                 * which it removes when it finds itself alone: this run may
                 * hold no share of the workspace directory's lock to stop it
                 * (lock_workspace_dir does not wait for it). Its bind may then
                 * be detached, or find nothing to bind (-try), so the name is
                 * kept missing by the init as well, as if it had been. */
                push3(binds, "--ro-bind-try", path, path);
                a3s_strvec_push(&p->missing, name);
                bound |= 1ull << i;
                continue;
            }
            push3(binds, "--ro-bind", path, path);
            bound |= 1ull << i;
            if (made < 0 && S_ISREG(st.st_mode) && !strcmp(name, ".git"))
                bind_gitdirs(sb, p, binds, wsfd);
        }
    }
    close(wsfd);
    return rc;
}

/* The credential scan, stopped by p's deadline or cancel. */
static int scan_credentials(a3s_sandbox *sb, const struct plan *p, struct a3s_strvec *found,
                            a3s_error *err) {
    pthread_mutex_lock(&sb->lock);
    a3s_credscan_set_deadline(sb->creds, p->deadline, p->cancel_fd);
    int rc = a3s_credscan_run(sb->creds, found, err);
    a3s_credscan_set_deadline(sb->creds, 0, -1);
    pthread_mutex_unlock(&sb->lock);
    return rc;
}

static int by_string(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Where a credential name that is a symlink leads: the workspace-relative
 * path of its target in rel ('d' or 'f' for what it is), or 0 when nothing
 * is to be masked. The target is masked when it is inside the workspace and
 * reached through no further symlink; nothing else is followed. A link to
 * the workspace itself or through another link is noted: masking what it
 * names would let a command choose what the next one cannot see (`ln -s ..
 * sub/.env` would mask the whole workspace). */
static char symlink_target(const a3s_sandbox *sb, struct plan *p, int wsfd, const char *path,
                           char *rel, size_t cap) {
    char target[PATH_MAX], base[PATH_MAX];
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n <= 0)
        return 0;
    target[n] = '\0';
    snprintf(base, sizeof base, "%s", path + strlen(sb->workspace) + 1);
    char *slash = strrchr(base, '/');
    *(slash ? slash : base) = '\0';
    if (!workspace_relative(sb, base, target, rel, cap))
        return 0; /* outside: covered by the other masks, or the host's to show */
    if (!rel[0]) {
        note(p, "%s is a credential name linked to the workspace itself: not followed", path);
        return 0;
    }
    int fd = open_beneath(wsfd, rel);
    if (fd < 0) {
        if (errno == ELOOP)
            note(p, "%s is a credential name linked through another symlink: not followed",
                 path);
        return 0;
    }
    struct stat st;
    char kind = fstat(fd, &st) == 0 ? (S_ISDIR(st.st_mode) ? 'd' : 'f') : 0;
    close(fd);
    return kind;
}

/* Credential files inside the workspace: bind an unreadable object over each. */
static int mask_credentials(a3s_sandbox *sb, struct plan *p, struct a3s_strvec *binds,
                            a3s_error *err) {
    struct a3s_strvec found = {0}, targets = {0};
    struct linked_set linked = {0};
    int rc = scan_credentials(sb, p, &found, err);
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
    int wsfd = open(sb->workspace, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (wsfd < 0)
        rc = a3s_fail(err, A3S_E_SYSTEM, errno, 0, "cannot open the workspace: %s",
                      strerror(errno));
    for (size_t i = 0; rc == A3S_OK && i < found.len; i++) {
        const char *path = found.items[i] + 1;
        struct stat st;
        if ((rc = plan_interrupted(p, err)) != A3S_OK)
            break;
        if (lstat(path, &st) < 0)
            continue; /* gone since the scan */
        if (S_ISLNK(st.st_mode)) {
            /* a credential name pointing into the workspace exposes its target */
            char rel[PATH_MAX], tagged[PATH_MAX + 2];
            char kind = symlink_target(sb, p, wsfd, path, rel, sizeof rel);
            if (kind && snprintf(tagged, sizeof tagged, "%c%s/%s", kind, sb->workspace, rel) <
                            (int)sizeof tagged)
                a3s_strvec_push(&targets, tagged);
            continue;
        }
        if (S_ISREG(st.st_mode) && st.st_nlink > 1)
            linked_add(&linked, &st, path); /* every name is masked below */
        if (S_ISDIR(st.st_mode) &&
            (rc = check_linked_files(p, path, false, "credential", &linked, err)) != A3S_OK)
            break;
        a3s_strvec_push2(&targets, S_ISDIR(st.st_mode) ? "d" : "f", path);
    }
    if (wsfd >= 0)
        close(wsfd);
    if (rc == A3S_OK && (linked.len || linked.failed))
        rc = mask_every_name(sb, p, &linked, &targets, err);
    free(linked.items);
    /* one mask per path, none inside a masked directory (bubblewrap could not
     * make its mount point in the mode-0 mask): sorted, directories first, and
     * a parent before what it holds */
    if (targets.len > 1)
        qsort(targets.items, targets.len, sizeof *targets.items, by_string);
    struct a3s_strvec dirs = {0};
    for (size_t i = 0; rc == A3S_OK && i < targets.len; i++) {
        const char *t = targets.items[i] + 1;
        bool covered = i > 0 && !strcmp(targets.items[i], targets.items[i - 1]);
        for (size_t j = 0; j < dirs.len && !covered; j++)
            covered = path_is_under(t, dirs.items[j]);
        if (covered)
            continue;
        bool dir = targets.items[i][0] == 'd';
        push3(binds, "--ro-bind", dir ? p->mask_dir : p->mask_file, t);
        a3s_strvec_push(&p->masks, t);
        if (dir)
            a3s_strvec_push(&dirs, t);
    }
    a3s_strvec_free(&dirs);
    a3s_strvec_free(&targets);
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

/* The trees the sandbox covers with a fresh tmpfs, canonical, none inside
 * another: /tmp, /var/tmp, /run and the homes (/home, /root, $HOME), and
 * in `homes` the homes alone (where toolchain roots come back from). A home
 * reached through a symlink in the workspace is not one (the workspace's
 * content would choose the host path). */
static void masked_trees(const a3s_sandbox *sb, struct a3s_strvec *out, struct a3s_strvec *homes) {
    const char *trees[] = {"/tmp", "/var/tmp", "/run", "/home", "/root",
                           env_get(&sb->host_env, "HOME")};
    for (size_t i = 3; i < COUNT(trees); i++) {
        struct stat st;
        char *real = trees[i] && trees[i][0] == '/' && stat(trees[i], &st) == 0 &&
                             S_ISDIR(st.st_mode)
                         ? realpath_outside(trees[i], sb->workspace)
                         : NULL;
        if (real && strcmp(real, "/") != 0)
            a3s_strvec_push(homes, real);
        free(real);
    }
    for (size_t i = 0; i < COUNT(trees); i++) {
        const char *t = trees[i];
        bool fixed = i < 3; /* always masked, made by bubblewrap if missing */
        struct stat st; /* a home may be a symlink (/home/u -> /data/u): its target is masked */
        if (!t || t[0] != '/' || !strcmp(t, "/") ||
            (!fixed && (stat(t, &st) < 0 || !S_ISDIR(st.st_mode))))
            continue;
        char *real = realpath_outside(t, sb->workspace);
        if (!real && fixed && errno == ENOENT)
            real = strdup(t);
        bool skip = !real || !strcmp(real, "/");
        for (size_t j = 0; j < out->len && !skip; j++)
            skip = path_is_under(real, out->items[j]);
        if (!skip)
            a3s_strvec_push(out, real);
        free(real);
    }
}

/* Which side of the workspace bind a masked tree goes: before it when the
 * tree holds the workspace (the workspace then shows through), after it
 * otherwise (a tree inside the workspace is masked there too). A tree that
 * is the workspace is not masked at all: it is the workspace, and the init
 * never cleans it. */
static bool mounts_before_workspace(const a3s_sandbox *sb, const char *tree) {
    return path_is_under(sb->workspace, tree) && strcmp(sb->workspace, tree) != 0;
}

/* The masked trees of one side of the workspace bind, and the toolchain
 * roots under them that come back read-only. */
static void mask_trees(const a3s_sandbox *sb, struct plan *p, struct a3s_strvec *args,
                       const struct a3s_strvec *trees, const struct a3s_strvec *homes,
                       bool before) {
    for (size_t i = 0; i < trees->len; i++) {
        const char *t = trees->items[i];
        if (strcmp(t, sb->workspace) != 0 && mounts_before_workspace(sb, t) == before) {
            push_tmpfs(sb, args, t);
        }
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
        char *real = realpath_outside(roots.items[i], sb->workspace);
        if (!real || !is_dir_nofollow(real)) {
            free(real);
            continue;
        }
        const char *tree = NULL;
        bool secret = false, dup = false;
        for (size_t j = 0; j < homes->len && !tree; j++) {
            if (strcmp(homes->items[j], sb->workspace) != 0 &&
                path_is_under(real, homes->items[j])) {
                tree = homes->items[j];
                secret = !strcmp(real, tree); /* never the home itself */
            }
        }
        for (size_t j = 0; j < homes->len && !secret; j++)
            secret = is_home_secret(real, homes->items[j]);
        if (home && home[0] == '/')
            secret |= is_home_secret(real, home);
        /* a root inside one already exposed adds nothing but a mount */
        for (size_t j = 0; j < exposed.len && !dup; j++)
            dup = path_is_under(real, exposed.items[j]);
        /* under a tree that holds the workspace, the workspace shows it already */
        bool shown = path_is_under(real, sb->workspace) && tree &&
                     mounts_before_workspace(sb, tree);
        if (tree && !secret && !dup && !shown && mounts_before_workspace(sb, tree) == before) {
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
}

/* A home that is the workspace is not masked (it is the workspace); its
 * credential stores are, one by one, as a masked home would hide them. */
static void mask_home_secrets_in_workspace(const a3s_sandbox *sb, struct plan *p,
                                           struct a3s_strvec *args) {
    const char *homes[] = {"/home", "/root", env_get(&sb->host_env, "HOME")};
    bool is_home = false;
    for (size_t i = 0; i < COUNT(homes) && !is_home; i++) {
        char *real = homes[i] && homes[i][0] == '/' ? realpath_outside(homes[i], sb->workspace)
                                                    : NULL;
        is_home = real && !strcmp(real, sb->workspace);
        free(real);
    }
    for (size_t i = 0; is_home && i < COUNT(HOME_SECRETS); i++) {
        char c[PATH_MAX];
        struct stat st;
        snprintf(c, sizeof c, "%s/%s", sb->workspace, HOME_SECRETS[i]);
        if (lstat(c, &st) == 0 && !S_ISLNK(st.st_mode)) {
            push3(args, "--ro-bind", S_ISDIR(st.st_mode) ? p->mask_dir : p->mask_file, c);
            a3s_strvec_push(&p->masks, c);
        }
        if (p->server) /* one made later is masked by the next sandbox */
            a3s_strvec_push(&p->extra, c);
    }
}

static void push_num(struct a3s_strvec *v, const char *opt, uint64_t n) {
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)n);
    a3s_strvec_push(v, opt);
    a3s_strvec_push(v, buf);
}

static void push_init(const a3s_sandbox *sb, const struct plan *p, const a3s_exec_options *o,
                      struct a3s_strvec *a, bool sandbox, const struct plan_fds *fds) {
    /* an embedded init answers to its name, wherever it runs from */
    a3s_strvec_push(a, sandbox || sb->init_fd >= 0 ? INIT_INSIDE : sb->init);
    a3s_strvec_push(a, "--mode");
    a3s_strvec_push(a, p->server ? "server" : sandbox ? "sandbox" : "host");
    if (p->server) {
        push_num(a, "--control-fd", (uint64_t)fds->control_fd);
        push_num(a, "--host-pidfd", (uint64_t)fds->host_pidfd);
        if (p->exec_notify)
            a3s_strvec_push(a, "--exec-notify");
    } else if (p->spawn) {
        /* a server runs until it is stopped */
        push_num(a, "--status-fd", (uint64_t)fds->status_fd);
        push_num(a, "--grace-ms",
                 p->spawn->kill_grace_ms ? p->spawn->kill_grace_ms : A3S_CHILD_DEFAULT_GRACE_MS);
        if (fds->host_pidfd >= 0)
            push_num(a, "--host-pidfd", (uint64_t)fds->host_pidfd);
    } else {
        push_num(a, "--status-fd", (uint64_t)fds->status_fd);
        /* what is left of the command's time after planning */
        uint64_t now = a3s_now_ns(), timeout = o->timeout_ms ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
        if (p->deadline && p->deadline != UINT64_MAX)
            timeout = p->deadline > now ? (p->deadline - now + 999999u) / 1000000u : 1;
        push_num(a, "--timeout-ms", timeout);
        /* and the same end by the clock, so bubblewrap's start counts too */
        push_num(a, "--deadline-ns", a3s_after_ms(now, timeout));
        push_num(a, "--grace-ms", o->kill_grace_ms ? o->kill_grace_ms : A3S_DEFAULT_GRACE_MS);
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
        a3s_strvec_push(a, "--host-ns");
        a3s_strvec_push(a, p->host_ns);
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
        } else if (sb->memory_max != UINT64_MAX) {
            /* a memory cgroup bounds the processes; the socket and pipe buffers
             * a command can pin, which it may not charge, the init counts, to
             * three quarters of the bound: where the cgroup does charge them,
             * the command is killed before the cgroup is full (where the init's
             * own allocations could fail) */
            push_num(a, "--kernel-memory-max", sb->memory_max / 4 * 3);
        }
        if (p->missing.len) {
            push2(a, "--names-root", sb->workspace);
            for (size_t i = 0; i < p->missing.len; i++)
                push2(a, "--protect-missing", p->missing.items[i]);
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
    if (!p->server && !p->spawn && a3s_exec_options_trace(o)) {
        /* the exec check (init/exectrace.c): server mode gets them with each command */
        for (size_t i = 0; i < o->exec_deny_count; i++)
            push2(a, "--exec-deny", o->exec_deny[i]);
        for (size_t i = 0; i < o->exec_ask_count; i++)
            push2(a, "--exec-ask", o->exec_ask[i]);
        for (size_t i = 0; i < o->exec_approved_count; i++)
            push2(a, "--exec-approve", o->exec_approved[i]);
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

/* The caller's user, mount, network and pid namespaces, for the init to
 * prove that bubblewrap gave it new ones (a bubblewrap that does not
 * isolate must not run anything: docs/security.md). The network is left
 * out when the handle shares it (A3S_SANDBOX_SHARE_NET, --share-net). */
static int host_namespaces(const a3s_sandbox *sb, struct plan *p, a3s_error *err) {
    static const char *const kinds[] = {"user", "mnt", "net", "pid"};
    size_t at = 0;
    for (size_t i = 0; i < COUNT(kinds); i++) {
        char path[32];
        struct stat st;
        if ((sb->flags & A3S_SANDBOX_SHARE_NET) && !strcmp(kinds[i], "net"))
            continue;
        snprintf(path, sizeof path, "/proc/self/ns/%s", kinds[i]);
        if (stat(path, &st) < 0)
            return a3s_fail(err, A3S_E_SYSTEM, errno, 0,
                            "cannot read this process's %s namespace in /proc: %s", kinds[i],
                            strerror(errno));
        at += (size_t)snprintf(p->host_ns + at, sizeof p->host_ns - at, "%s%s:%llu",
                               at ? "," : "", kinds[i], (unsigned long long)st.st_ino);
    }
    return A3S_OK;
}

int a3s_plan_build(a3s_sandbox *sb, const a3s_exec_options *o, struct plan *p,
                   const struct plan_fds *fds, a3s_error *err) {
    bool sandbox = !(sb->flags & A3S_SANDBOX_PROCESS_HOST);
    p->server = fds->control_fd >= 0;
    p->link_ifd = -1;
    p->lock_fd = p->ws_lock_fd = -1;
    if (sandbox && !p->describe) {
        p->lock_fd = lock_workspace(sb);
        p->ws_lock_fd = lock_workspace_dir(sb);
    }
    struct stat st;
    if (lstat(sb->workspace, &st) < 0 || !S_ISDIR(st.st_mode))
        return a3s_fail(err, A3S_E_REFUSED, 0, 0,
                        "the workspace %s is gone or is no longer a directory", sb->workspace);
    p->ws_dev = st.st_dev;
    p->ws_ino = st.st_ino;
    int rc = plan_interrupted(p, err);
    if (rc == A3S_OK && sandbox)
        rc = host_namespaces(sb, p, err);
    if (rc == A3S_OK)
        rc = p->describe ? describe_run_dir(p) : make_run_dir(sb, p, err);
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

    struct a3s_strvec *a = &p->argv;
    a3s_strvec_push(a, sb->bwrap);
    static const char *const ns[] = {"--unshare-all", "--unshare-user", "--disable-userns",
                                     "--die-with-parent", "--new-session", "--as-pid-1",
                                     "--cap-drop", "ALL"};
    for (size_t i = 0; i < COUNT(ns); i++) {
        /* a long-lived sandbox's parent exits at once (it is detached from the
         * caller's process tree), and an owned process's bubblewrap must not die
         * with the caller's thread that spawned it (the parent-death signal
         * follows the forking thread, and a host's threads come and go): the
         * lifeline and the caller's pidfd, both watched by the init, are what
         * tie them to the caller. A one-shot run's thread waits for it. */
        if ((p->server || fds->host_pidfd >= 0) && !strcmp(ns[i], "--die-with-parent"))
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
    /* the private trees (tmpfs) and the workspace bind, in the order that
     * keeps each where it belongs whichever holds the other (docs/security.md) */
    struct a3s_strvec trees = {0}, homes = {0};
    masked_trees(sb, &trees, &homes);
    mask_trees(sb, p, a, &trees, &homes, true);
    push3(a, (sb->flags & A3S_SANDBOX_WORKSPACE_READONLY) ? "--ro-bind" : "--bind", sb->workspace,
          sb->workspace);
    mask_trees(sb, p, a, &trees, &homes, false);
    bool trees_failed = trees.failed || homes.failed;
    a3s_strvec_free(&trees);
    a3s_strvec_free(&homes);
    if (trees_failed)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory planning the sandbox");
    mask_home_secrets_in_workspace(sb, p, a);
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
    if (!p->describe) {
        recover_journals(sb, p);
        back_to_shared(p); /* for the run */
    }
    if ((rc = plan_interrupted(p, err)) != A3S_OK ||
        (rc = protect_names(sb, p, a, err)) != A3S_OK)
        return rc;
    if (p->placeholders.len)
        start_janitor(sb, p); /* removes them if this caller is killed */
    protect_host_code(sb, p, a);
    if ((rc = mask_credentials(sb, p, a, err)) != A3S_OK)
        return rc;
    if (!p->server)
        push3(a, "--bind", p->home, p->home);
    if (sb->init_fd >= 0) { /* kept open in bubblewrap by every launcher */
        /* bubblewrap binds it by the path it has now, checked to be this file */
        if (fstat(sb->init_fd, &st) == 0 && st.st_nlink == 0)
            return a3s_fail(err, A3S_E_REFUSED, 0, 0,
                            "this program's executable, whose init the sandbox runs, was "
                            "deleted or replaced since it started: restart the program");
        push_num(a, "--ro-bind-fd", (uint64_t)sb->init_fd);
        a3s_strvec_push(a, INIT_INSIDE);
    } else {
        /* the copy made at a3s_sandbox_new, through a descriptor of its own
         * (bubblewrap reads it from its position to the end) */
        if ((p->bind_fds[2] = a3s_init_image_reopen(sb->init_image)) < 0)
            return a3s_fail(err, A3S_E_SYSTEM, errno, 0, "reopening the copy of a3s-init: %s",
                            strerror(errno));
        a3s_strvec_push(a, "--perms");
        a3s_strvec_push(a, "0755");
        push_num(a, "--ro-bind-data", (uint64_t)p->bind_fds[2]);
        a3s_strvec_push(a, INIT_INSIDE);
    }
    a3s_strvec_push(a, "--chdir");
    a3s_strvec_push(a, p->spawn && p->spawn->cwd ? p->spawn->cwd
                       : o && o->cwd              ? o->cwd
                                                  : sb->workspace);
    a3s_strvec_push(a, "--");
    push_init(sb, p, o, a, true, fds);
    if (p->server && (rc = record_watch(sb, p, err)) != A3S_OK)
        return rc;
    if (a->failed || p->env.failed || p->placeholders.failed || p->masks.failed || p->missing.failed ||
        p->notes.failed || p->extra.failed || p->link_dirs.failed || p->found.failed)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory planning the sandbox");
    return A3S_OK;
}

/* Removes placeholders that are still the untouched objects we created. */
static void remove_placeholders(a3s_sandbox *sb, struct plan *p) {
    if (p->placeholders.len && !alone(p)) {
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
    recover_journals(sb, p); /* and what earlier concurrent runs left */
}

void a3s_plan_release(a3s_sandbox *sb, struct plan *p) {
    remove_placeholders(sb, p);
    a3s_close_fd(&p->journal_fd); /* a journal left ".done" is the next run's from here */
    a3s_close_fd(&p->lock_fd);
    a3s_close_fd(&p->ws_lock_fd);
    if (p->run_dir[0])
        remove_run_dir(p->run_dir);
    p->run_dir[0] = '\0';
    a3s_close_fd(&p->run_lock_fd);
    plan_free(p);
}

void a3s_plan_forget(struct plan *p) {
    /* closing a forked copy leaves the locks with the process that took them */
    a3s_close_fd(&p->journal_fd);
    a3s_close_fd(&p->lock_fd);
    a3s_close_fd(&p->ws_lock_fd);
    a3s_close_fd(&p->run_lock_fd);
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

int a3s_plan_current(a3s_sandbox *sb, struct plan *p) {
    struct stat ws;
    if (lstat(sb->workspace, &ws) < 0 || !S_ISDIR(ws.st_mode) || ws.st_dev != p->ws_dev ||
        ws.st_ino != p->ws_ino)
        return 0;
    for (size_t i = 0; i < p->nwatch; i++)
        if (!watch_holds(&p->watch[i]))
            return 0;
    if (!links_hold(p))
        return 0;
    struct a3s_strvec found = {0};
    a3s_error err = {0};
    int rc = scan_credentials(sb, p, &found, &err);
    bool same = rc == A3S_OK && same_strings(&found, &p->found);
    a3s_strvec_free(&found);
    if (rc != A3S_OK && (err.sys_errno == ETIMEDOUT || err.sys_errno == ECANCELED)) {
        errno = err.sys_errno;
        return -1;
    }
    return same;
}

/* ---- running -------------------------------------------------------------- */

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

/* Whether the run ended because the caller's cancel fired or its timeout
 * expired (the process layer stopped it) rather than by itself. */
static bool stopped_by_caller(const a3s_process_result *r) {
    a3s_process_result_view v = {.struct_size = sizeof v};
    if (a3s_process_result_get(r, &v, NULL) != A3S_OK)
        return false;
    return (v.flags & (A3S_RESULT_CANCELLED | A3S_RESULT_TIMED_OUT)) != 0;
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
    int xrc = a3s_exec_options_check(o, err);
    if (xrc != A3S_OK)
        return xrc;
    for (size_t i = 0; i < o->envc; i++) {
        int rc = a3s_env_check_extra(o->env[i], err);
        if (rc)
            return rc;
    }
    if ((o->flags & A3S_EXEC_CANCEL_FD) && fcntl(o->cancel_fd, F_GETFD) < 0)
        return a3s_fail(err, A3S_E_INVALID, 0, o->cancel_fd,
                        "a3s_sandbox_exec: cancel_fd %d is not open", o->cancel_fd);
    if (!o->stdin_data && o->stdin_len)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_sandbox_exec: stdin_len without stdin_data");
    /* a working directory relative to the workspace becomes absolute (the workspace has the
     * same path inside the sandbox) */
    char cwd[PATH_MAX];
    if (copy.cwd) {
        size_t n = strlen(copy.cwd);
        int w = copy.cwd[0] == '/' ? snprintf(cwd, sizeof cwd, "%s", copy.cwd)
                                   : snprintf(cwd, sizeof cwd, "%s/%s", sb->workspace, copy.cwd);
        if (n == 0 || w < 0 || (size_t)w >= sizeof cwd)
            return a3s_fail(err, A3S_E_INVALID, 0, 0,
                            "the working directory must be a non-empty path of at most %d bytes",
                            PATH_MAX - 1);
        copy.cwd = cwd;
        if (sb->flags & A3S_SANDBOX_PROCESS_HOST) {
            /* the host's view is the command's: a missing directory is the run's outcome */
            struct stat st;
            int e = stat(cwd, &st) < 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
            if (e) {
                char why[PATH_MAX + 64], eb[128];
                snprintf(why, sizeof why, "chdir %s: %s", cwd, a3s_errstr(e, eb, sizeof eb));
                *out = a3s_process_result_synthetic(125, A3S_RESULT_SETUP_FAILED, why);
                return *out ? a3s_ok(err) : a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory");
            }
        }
    }
    /* The long-lived sandbox runs one command at a time; a caller that
     * finds it busy runs its command in a sandbox of its own instead of
     * waiting behind a long command. */
    uint64_t start = a3s_now_ns();
    int rc = 1;
    if ((sb->flags & A3S_SANDBOX_REUSE) && !(sb->flags & A3S_SANDBOX_PROCESS_HOST) &&
        !atomic_load(&sb->one_shot_only) && pthread_mutex_trylock(&sb->session_lock) == 0) {
        rc = a3s_session_exec(sb, o, out, err);
        pthread_mutex_unlock(&sb->session_lock);
        /* 1: no long-lived sandbox on this kernel; one-shot below */
    }
    if (rc == 1)
        rc = exec_one_shot(sb, o, out, err);
    /* the command's time includes preparing its sandbox, which its timeout counts too */
    if (rc == A3S_OK && *out)
        a3s_process_result_set_duration(*out, (a3s_now_ns() - start) / 1000u);
    return rc;
}

void a3s_sandbox_cgroup(a3s_sandbox *sb, struct a3s_cgroup *cg) {
    if (atomic_load(&sb->cgroups_refused)) {
        a3s_cgroup_init(cg);
        return;
    }
    bool first = !atomic_exchange(&sb->cgroups_swept, true);
    a3s_cgroup_create(cg, sb->memory_max, sb->max_processes, first);
}

int a3s_policy_check(const a3s_sandbox *sb, const struct plan *p, const char *digest,
                     bool *changed, a3s_error *err) {
    char now[A3S_POLICY_DIGEST_SIZE];
    int rc = a3s_plan_digest(sb, p, now, err);
    *changed = rc == A3S_OK && strcmp(now, digest) != 0;
    return rc;
}

/* One bubblewrap for this command (the arguments are checked). *join_refused:
 * it did not start because its process could not move into the cgroup. */
static int one_shot_attempt(a3s_sandbox *sb, const a3s_exec_options *o, a3s_process_result **out,
                            bool *join_refused, a3s_error *err) {
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
    a3s_plan_init(&p);
    /* planning counts against the command's time and its cancel */
    p.deadline = a3s_after_ms(a3s_now_ns(), o->timeout_ms ? o->timeout_ms : DEFAULT_TIMEOUT_MS);
    p.cancel_fd = (o->flags & A3S_EXEC_CANCEL_FD) ? o->cancel_fd : -1;
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
    /* the letters, a message, an exec check record; read while bubblewrap runs, so the run
     * ends when the init says it is done (see struct a3s_status_watch) */
    char st[640 + 2 * 2560 + 4];
    st[0] = '\0';
    struct a3s_status_watch watch = {.fd = status[0], .buf = st, .cap = sizeof st};
    fcntl(status[0], F_SETFL, O_NONBLOCK);
    if (rc == A3S_OK && o->policy_digest)
        rc = a3s_policy_check(sb, &p, o->policy_digest, &changed, &plan_err);
    if (rc == A3S_OK && changed) {
        result = a3s_process_result_synthetic(125, A3S_RESULT_SETUP_FAILED |
                                                       A3S_RESULT_POLICY_CHANGED,
                                              POLICY_CHANGED_MESSAGE);
        rc = result ? A3S_OK : a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory");
    } else if (rc == A3S_OK) {
        bool host = sb->flags & A3S_SANDBOX_PROCESS_HOST;
        /* bubblewrap binds a worktree's gitdirs, and an embedded init, from these */
        /* status, lifeline, a grant, the binds, an embedded init */
        int keep[4 + COUNT(p.bind_fds)] = {status[1], lifeline[0]};
        size_t nkeep = 2;
        if (o->flags & A3S_EXEC_NETWORK_GRANT)
            keep[nkeep++] = o->grant_fd;
        for (size_t i = 0; i < COUNT(p.bind_fds); i++)
            if (p.bind_fds[i] >= 0)
                keep[nkeep++] = p.bind_fds[i];
        if (!host && sb->init_fd >= 0)
            keep[nkeep++] = sb->init_fd;
        a3s_process_options po = {
            .struct_size = sizeof po,
            .flags = (o->flags & A3S_EXEC_CANCEL_FD) ? A3S_PROCESS_CANCEL_FD : 0,
            /* argv[0] of an embedded init is its name, not its path */
            .path = host ? sb->init : p.argv.items[0],
            .argv = (const char *const *)p.argv.items,
            .argc = p.argv.len,
            .envp = (const char *const *)p.env.items,
            .envc = p.env.len,
            .cwd = host && o->cwd ? o->cwd : sb->workspace,
            /* the init enforces the timeout; this is the backstop behind it */
            .timeout_ms = (o->timeout_ms ? o->timeout_ms : DEFAULT_TIMEOUT_MS) +
                          (o->kill_grace_ms ? o->kill_grace_ms : A3S_DEFAULT_GRACE_MS) + 3000,
            /* longer than the init's own grace, so that on cancel the init (which
             * knows every descendant) does the killing, not the runner */
            .kill_grace_ms = (o->kill_grace_ms ? o->kill_grace_ms : A3S_DEFAULT_GRACE_MS) + 1000,
            .max_output_bytes = o->max_output_bytes,
            .keep_fds = keep,
            .keep_fd_count = nkeep,
            .cancel_fd = o->cancel_fd,
        };
        /* the process host runs the init's pinned copy (an embedded init: this program) */
        struct a3s_output_sink sink = {o->on_output, o->on_output_ctx};
        struct a3s_stdin_bytes in = {o->stdin_data, o->stdin_len};
        rc = host && sb->init_image >= 0
                 ? a3s_process_run_fd_in_cgroup(&po, sb->init_image, cg.ndirs ? &cg : NULL,
                                                &sink, &in, &watch, &result, join_refused, err)
                 : a3s_process_run_in_cgroup(&po, cg.ndirs ? &cg : NULL, &sink, &in, &watch,
                                             &result, join_refused, err);
        launched = rc == A3S_OK;
    } else if (plan_err.code == A3S_E_SYSTEM &&
               (plan_err.sys_errno == ETIMEDOUT || plan_err.sys_errno == ECANCELED)) {
        /* planning took the command's whole time, or was cancelled: as for the command */
        result = a3s_process_result_synthetic(
            124, plan_err.sys_errno == ETIMEDOUT ? A3S_RESULT_TIMED_OUT : A3S_RESULT_CANCELLED,
            NULL);
        rc = result ? A3S_OK : a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory");
    } else if (plan_err.code == A3S_E_REFUSED || plan_err.code == A3S_E_SYSTEM) {
        /* a refusal is the run's outcome (exit 125), not the caller's mistake */
        result = a3s_process_result_synthetic(125, A3S_RESULT_SETUP_FAILED, plan_err.message);
        rc = result ? A3S_OK : a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory");
    } else if (err) {
        *err = plan_err;
    }
    close(status[1]);
    close(lifeline[0]);
    if (watch.fd >= 0 && !watch.released) /* what came after the watch ended */
        a3s_status_watch_read(&watch);
    a3s_close_fd(&watch.fd);
    close(lifeline[1]); /* only now: the run is over */
    char *notes = a3s_plan_notes(&p);
    a3s_plan_release(sb, &p);
    if (result && notes)
        a3s_process_result_set_neutralized(result, notes);
    free(notes);
    bool oom_killed = (cg.memory && a3s_cgroup_oom_kills(&cg) > oom_kills) || strchr(st, 'M');
    if (watch.released)
        a3s_cgroup_abandon(&cg); /* the survivor is in it: the next sweep removes it */
    else
        a3s_cgroup_destroy(&cg);

    if (launched) {
        if (st[0] != 'R' && stopped_by_caller(result)) {
            /* cancelled or timed out before the init said ready: the caller's stop
             * (124), not a failed start, which would also drop a kept probe */
        } else if (st[0] != 'R') {
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
        if (st[0] == 'R' && strchr(st, 'L'))
            a3s_process_result_add_flags(result, A3S_RESULT_HARD_LINKED);
        char *stopped = st[0] == 'R' ? a3s_exec_stop_unhex(st) : NULL;
        if (stopped)
            a3s_exec_stop_apply(result, stopped);
        free(stopped);
        const char *done = st[0] == 'R' ? strchr(st, 'D') : NULL;
        if (watch.released && !strchr(st, 'T')) /* its status, not bubblewrap's SIGKILL */
            a3s_process_result_override(result, (int32_t)strtol(done + 1, NULL, 10), 0, 0, NULL);
        if (st[0] == 'R' && strchr(st, 'S')) /* a process the init could not reap */
            a3s_process_result_add_flags(result, A3S_RESULT_OUTLIVED);
        if (st[0] == 'R' && !done) /* the init did not finish (the runner's backstop killed it,
                                      or a cancel): what it knew is lost, as in a forced kill of
                                      the long-lived sandbox (session_linux.c, outcome) */
            a3s_process_result_add_flags(result, A3S_RESULT_HARD_LINKED | A3S_RESULT_OUTLIVED);
    }
    if (rc != A3S_OK) {
        a3s_process_result_free(result);
        return rc == A3S_OK ? A3S_E_INVALID : rc;
    }
    *out = result;
    return a3s_ok(err);
}

/* A one-shot run. The cgroups are made without first checking that a
 * process can join them (the check cost a migration, which on cgroup v1
 * waits for an RCU grace period: 10-20 ms on every command line run); a
 * join that fails instead stops the run before bubblewrap starts, marks
 * this handle's cgroups refused (the fallbacks carry the bounds) and runs
 * it again without them. */
static int exec_one_shot(a3s_sandbox *sb, const a3s_exec_options *o, a3s_process_result **out,
                         a3s_error *err) {
    bool join_refused = false;
    int rc = one_shot_attempt(sb, o, out, &join_refused, err);
    if (rc != A3S_OK && join_refused) {
        atomic_store(&sb->cgroups_refused, true);
        rc = one_shot_attempt(sb, o, out, NULL, err);
    }
    return rc;
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
