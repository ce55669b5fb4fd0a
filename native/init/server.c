/* server.c - a3s-init's server mode: PID 1 of a long-lived sandbox, one command at a time.
 *
 * The host starts one sandbox per handle and sends it commands over the
 * control socket (native/src/session_msg.h). For each EXEC the init forks a
 * fresh child: a new session and process group, a private scratch
 * directory (mode 0700, under /run/a3s/scratch) that the request's
 * environment names as HOME, TMPDIR and XDG_*, NoNewPrivs, Landlock, the
 * seccomp filter (the init's own, inherited) and the bounds of limits.c,
 * then execve(bash -c COMMAND) with the stdout and stderr fds that came with
 * the request. When the command's main process ends, or its
 * timeout or a CANCEL stops it (TERM to every process of the namespace,
 * KILL after the grace), every other process of the namespace is killed
 * and reaped; the writable trees (/tmp, /var/tmp, /run, /dev, the masked
 * homes) are put back as they were when the sandbox started, SysV IPC
 * objects are removed, and only then is DONE sent. The next command starts
 * with nothing of the previous one but what it left in the workspace.
 *
 * If the cleanup cannot finish (a tree too deep to remove, a directory made
 * unremovable), the init reports DONE and exits: the host starts a fresh
 * sandbox for the next command. Whatever goes wrong with the host (the
 * control socket closes, a malformed request, the lifeline breaks, the
 * caller's pidfd says it has exited), the init kills everything and exits.
 * The pidfd matters because the sandbox outlives single commands: a child
 * the caller forked without exec (a multiprocessing worker) holds copies of
 * the lifeline's write end and of the control socket, but not the caller's
 * life.
 */
#define _GNU_SOURCE
#include "init.h"
#include "../src/session_msg.h"

#include <dirent.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <linux/magic.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ENTRIES 8192     /* entries of the clean trees at start */
#define MAX_DEPTH 128        /* directories nested in a clean tree */
#define RECV_TIMEOUT_MS 5000 /* between the packets of one message */
#define SEND_TIMEOUT_MS 5000

/* ---- the state of the writable trees at start ----------------------------- */

/* An extended attribute an entry had at start (ACLs are ones too). */
struct xattr {
    char *name;
    char *value;
    size_t len;
};

struct entry {
    char *path;
    dev_t dev;
    ino_t ino;
    mode_t mode;
    char *target; /* symlinks */
    bool seen;
    struct timespec atime, mtime;
    struct xattr *xattrs;
    size_t nxattrs;
};

static struct entry *snap;
static size_t nsnap, capsnap;

static int by_path(const void *a, const void *b) {
    return strcmp(((const struct entry *)a)->path, ((const struct entry *)b)->path);
}

static struct entry *find(const char *path) {
    struct entry key = {.path = (char *)path};
    return nsnap ? bsearch(&key, snap, nsnap, sizeof *snap, by_path) : NULL;
}

/* The names in a directory (without . and ..), read before anything in it
 * changes; NULL-terminated, or NULL if it cannot be read. */
static char **list_names(int dfd) {
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    rewinddir(d);
    size_t n = 0, cap = 16;
    char **names = malloc(cap * sizeof *names);
    struct dirent *e;
    while (names && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (n + 1 == cap) {
            char **grown = realloc(names, (cap *= 2) * sizeof *names);
            if (!grown)
                break;
            names = grown;
        }
        if (!(names[n] = strdup(e->d_name)))
            break;
        n++;
    }
    closedir(d);
    if (names)
        names[n] = NULL;
    return names;
}

static void free_names(char **names) {
    for (size_t i = 0; names && names[i]; i++)
        free(names[i]);
    free(names);
}

#define XATTR_LIST_MAX_BYTES 65536

/* The names of path's extended attributes into a malloc'd buffer (*n bytes,
 * NUL-separated); NULL with *n 0 when there are none or they cannot be had
 * (*failed then set unless the file system has none at all). */
static char *list_xattrs(const char *path, ssize_t *n, bool *failed) {
    *n = llistxattr(path, NULL, 0);
    *failed = *n < 0 && errno != ENOTSUP;
    if (*n <= 0) {
        *n = 0;
        return NULL;
    }
    char *names = malloc(XATTR_LIST_MAX_BYTES);
    *n = names ? llistxattr(path, names, XATTR_LIST_MAX_BYTES) : -1;
    if (*n <= 0) {
        *failed = *n < 0;
        *n = 0;
        free(names);
        return NULL;
    }
    return names;
}

/* The attributes e had at start (usually none on a fresh tmpfs). */
static bool record_xattrs(struct entry *e) {
    ssize_t n;
    bool failed;
    char *names = list_xattrs(e->path, &n, &failed);
    for (ssize_t at = 0; names && at < n && !failed; at += (ssize_t)strlen(names + at) + 1) {
        ssize_t len = lgetxattr(e->path, names + at, NULL, 0);
        struct xattr *grown = realloc(e->xattrs, (e->nxattrs + 1) * sizeof *grown);
        char *value = len >= 0 ? malloc((size_t)len + 1) : NULL;
        if (!grown || !value) {
            free(value);
            if (grown)
                e->xattrs = grown;
            failed = true;
            break;
        }
        e->xattrs = grown;
        len = lgetxattr(e->path, names + at, value, (size_t)len);
        e->xattrs[e->nxattrs++] = (struct xattr){strdup(names + at), value, len < 0 ? 0 : (size_t)len};
        failed = len < 0 || !e->xattrs[e->nxattrs - 1].name;
    }
    free(names);
    return !failed;
}

static bool record(const char *path, const struct stat *st, int dfd, const char *name) {
    if (nsnap == MAX_ENTRIES)
        return false;
    if (nsnap == capsnap) {
        size_t cap = capsnap ? capsnap * 2 : 64;
        struct entry *grown = realloc(snap, cap * sizeof *snap);
        if (!grown)
            return false;
        snap = grown;
        capsnap = cap;
    }
    struct entry *e = &snap[nsnap];
    memset(e, 0, sizeof *e);
    e->path = strdup(path);
    e->dev = st->st_dev;
    e->ino = st->st_ino;
    e->mode = st->st_mode;
    e->atime = st->st_atim;
    e->mtime = st->st_mtim;
    if (!e->path || !record_xattrs(e))
        return false;
    if (S_ISLNK(st->st_mode)) {
        char target[PATH_MAX];
        ssize_t n = readlinkat(dfd, name, target, sizeof target - 1);
        if (n < 0)
            return false;
        target[n] = '\0';
        e->target = strdup(target);
    }
    if (S_ISLNK(st->st_mode) && !e->target)
        return false;
    nsnap++;
    return true;
}

/* Records every entry under the directory dfd (path) on device dev. */
static bool snapshot_dir(int dfd, const char *path, dev_t dev, int depth) {
    if (depth > MAX_DEPTH)
        return false;
    char **names = list_names(dfd);
    if (!names)
        return false;
    bool ok = true;
    for (size_t i = 0; ok && names[i]; i++) {
        struct stat st;
        char sub[PATH_MAX];
        if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != dev)
            continue; /* gone, or another mount: never ours to touch */
        if (snprintf(sub, sizeof sub, "%s/%s", path, names[i]) >= (int)sizeof sub) {
            ok = false;
            break;
        }
        ok = record(sub, &st, dfd, names[i]);
        if (ok && S_ISDIR(st.st_mode)) {
            int cfd = openat(dfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            ok = cfd >= 0 && snapshot_dir(cfd, sub, dev, depth + 1);
            if (cfd >= 0)
                close(cfd);
        }
    }
    free_names(names);
    return ok;
}

static bool snapshot_root(const char *root) {
    struct stat st;
    if (lstat(root, &st) < 0)
        return errno == ENOENT; /* not in this sandbox */
    if (!S_ISDIR(st.st_mode))
        return false;
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || !record(root, &st, AT_FDCWD, root)) {
        if (fd >= 0)
            close(fd);
        return false;
    }
    bool ok = snapshot_dir(fd, root, st.st_dev, 0);
    close(fd);
    return ok;
}

/* ---- the mounts at start ---------------------------------------------------- */

/* A bind mount is detached in this namespace when the host unlinks or
 * renames over its mount point: a protection would be gone. The host checks
 * the objects it bound before each command, but an inode number reused at
 * once (ext4 does) can fool it; the mount table cannot be fooled. */
#define MAX_MOUNTS 8192

static int *mount_ids;
static size_t nmounts;

static int by_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

/* The mount ids of /proc/self/mountinfo, sorted, into *out (malloc). */
static bool read_mounts(int **out, size_t *n) {
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return false;
    size_t cap = 128, k = 0;
    int *ids = malloc(cap * sizeof *ids);
    char line[8192];
    bool ok = ids != NULL;
    while (ok && fgets(line, sizeof line, f)) {
        bool whole = strchr(line, '\n') != NULL;
        int id;
        if (sscanf(line, "%d", &id) == 1) {
            if (k == cap) {
                int *grown = k < MAX_MOUNTS ? realloc(ids, (cap *= 2) * sizeof *ids) : NULL;
                if (!grown) {
                    ok = false;
                    break;
                }
                ids = grown;
            }
            ids[k++] = id;
        }
        while (!whole && fgets(line, sizeof line, f)) /* the rest of a long line */
            whole = strchr(line, '\n') != NULL;
    }
    fclose(f);
    if (!ok) {
        free(ids);
        return false;
    }
    qsort(ids, k, sizeof *ids, by_int);
    *out = ids;
    *n = k;
    return true;
}

/* Whether every mount the sandbox started with is still there. */
static bool mounts_intact(void) {
    int *now;
    size_t n;
    if (!read_mounts(&now, &n))
        return false;
    bool ok = true;
    for (size_t i = 0; ok && i < nmounts; i++)
        ok = bsearch(&mount_ids[i], now, n, sizeof *now, by_int) != NULL;
    free(now);
    return ok;
}

/* ---- putting the trees back ----------------------------------------------- */

/* Removes name (a whole tree) from dfd without leaving device dev or
 * following a symlink. */
static bool remove_at(int dfd, const char *name, dev_t dev, int depth) {
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT;
    if (st.st_dev != dev)
        return true; /* a mount point: the command cannot have made it */
    if (!S_ISDIR(st.st_mode))
        return unlinkat(dfd, name, 0) == 0 || errno == ENOENT;
    if (depth > MAX_DEPTH)
        return false;
    fchmodat(dfd, name, 0700, 0); /* a mode-0 directory is unreadable even to its owner */
    int cfd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (cfd < 0)
        return false;
    char **names = list_names(cfd);
    bool ok = names != NULL;
    for (size_t i = 0; names && names[i]; i++)
        ok &= remove_at(cfd, names[i], dev, depth + 1);
    free_names(names);
    close(cfd);
    return unlinkat(dfd, name, AT_REMOVEDIR) == 0 && ok;
}

static bool restore_dir(int dfd, const char *path, dev_t dev, int depth) {
    if (depth > MAX_DEPTH)
        return false;
    char **names = list_names(dfd);
    if (!names)
        return false;
    bool ok = true;
    for (size_t i = 0; names[i]; i++) {
        struct stat st;
        char sub[PATH_MAX];
        if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_dev != dev)
            continue;
        struct entry *e = NULL;
        if (snprintf(sub, sizeof sub, "%s/%s", path, names[i]) < (int)sizeof sub)
            e = find(sub);
        if (!e || e->ino != st.st_ino || (e->mode & S_IFMT) != (st.st_mode & S_IFMT)) {
            ok &= remove_at(dfd, names[i], dev, depth);
            continue;
        }
        e->seen = true;
        if (!S_ISLNK(st.st_mode) && (st.st_mode & 07777) != (e->mode & 07777))
            ok &= fchmodat(dfd, names[i], e->mode & 07777, 0) == 0;
        if (S_ISDIR(st.st_mode)) {
            int cfd = openat(dfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            ok &= cfd >= 0 && restore_dir(cfd, sub, dev, depth + 1);
            if (cfd >= 0)
                close(cfd);
        }
    }
    free_names(names);
    return ok;
}

/* Every tree back to its snapshot: what is new is removed, what changed
 * mode gets it back, what is missing (directories, symlinks) is made again. */
static bool restore_trees(const struct config *cfg) {
    bool ok = true;
    for (size_t i = 0; i < nsnap; i++)
        snap[i].seen = false;
    for (size_t r = 0; r < cfg->nclean; r++) {
        struct entry *root = find(cfg->clean[r]);
        if (!root)
            continue;
        root->seen = true;
        int fd = open(root->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || st.st_ino != root->ino || st.st_dev != root->dev) {
            ok = false; /* a tmpfs root is a mount point: it cannot have been replaced */
        } else {
            if ((st.st_mode & 07777) != (root->mode & 07777))
                ok &= fchmod(fd, root->mode & 07777) == 0;
            ok &= restore_dir(fd, root->path, root->dev, 0);
        }
        if (fd >= 0)
            close(fd);
    }
    /* sorted by path: a parent is made before what it holds */
    for (size_t i = 0; i < nsnap; i++) {
        const struct entry *e = &snap[i];
        if (e->seen)
            continue;
        if (S_ISDIR(e->mode))
            ok &= mkdir(e->path, e->mode & 07777) == 0 && chmod(e->path, e->mode & 07777) == 0;
        else if (S_ISLNK(e->mode))
            ok &= symlink(e->target, e->path) == 0;
        else
            ok = false; /* a file or node we cannot make again */
    }
    return ok;
}

/* Every entry's metadata back as at start: extended attributes (a default
 * ACL on /tmp would make the next command's files mode 000; user.* ones
 * would carry data to it), the mode an ACL change moved, and the access and
 * modification times (which the cleanup itself moves). Runs after
 * restore_trees: every path is again the object recorded, or made anew. */
static bool restore_metadata(void) {
    bool ok = true;
    for (size_t i = 0; i < nsnap; i++) {
        const struct entry *e = &snap[i];
        struct stat st;
        if (lstat(e->path, &st) < 0 || (st.st_mode & S_IFMT) != (e->mode & S_IFMT)) {
            ok = false;
            continue;
        }
        ssize_t n;
        bool failed;
        char *names = list_xattrs(e->path, &n, &failed);
        ok &= !failed;
        for (ssize_t at = 0; names && at < n; at += (ssize_t)strlen(names + at) + 1) {
            bool known = false;
            for (size_t k = 0; k < e->nxattrs && !known; k++)
                known = !strcmp(e->xattrs[k].name, names + at);
            if (!known)
                ok &= lremovexattr(e->path, names + at) == 0 || errno == ENODATA;
        }
        free(names);
        for (size_t k = 0; k < e->nxattrs; k++) {
            char now[256];
            const struct xattr *x = &e->xattrs[k];
            ssize_t len = lgetxattr(e->path, x->name, now, sizeof now);
            if (len < 0 || (size_t)len != x->len || memcmp(now, x->value, x->len) != 0)
                ok &= lsetxattr(e->path, x->name, x->value, x->len, 0) == 0;
        }
        if (!S_ISLNK(e->mode) && (st.st_mode & 07777) != (e->mode & 07777))
            ok &= fchmodat(AT_FDCWD, e->path, e->mode & 07777, 0) == 0;
        if (st.st_atim.tv_sec != e->atime.tv_sec || st.st_atim.tv_nsec != e->atime.tv_nsec ||
            st.st_mtim.tv_sec != e->mtime.tv_sec || st.st_mtim.tv_nsec != e->mtime.tv_nsec) {
            struct timespec times[2] = {e->atime, e->mtime};
            ok &= utimensat(AT_FDCWD, e->path, times, AT_SYMLINK_NOFOLLOW) == 0;
        }
    }
    return ok;
}

/* A tree the init cleans after every command must be one bubblewrap made
 * for this sandbox: a tmpfs, and not the file system of anything the host
 * bound in writable (the workspace). Whatever the configuration, a host
 * bind is never a cleanup target (docs/security.md). */
static void check_clean_root(const struct config *cfg, const char *root) {
    struct stat st, other;
    struct statfs fs;
    if (lstat(root, &st) < 0)
        return; /* not in this sandbox: nothing to clean */
    if (statfs(root, &fs) < 0 || fs.f_type != TMPFS_MAGIC)
        die(cfg, "%s is not a tmpfs of this sandbox: the init cleans only what it owns", root);
    for (size_t i = 0; i < cfg->nrw; i++) {
        bool clean = false;
        for (size_t k = 0; k < cfg->nclean && !clean; k++)
            clean = !strcmp(cfg->rw[i], cfg->clean[k]);
        if (!clean && stat(cfg->rw[i], &other) == 0 && other.st_dev == st.st_dev)
            die(cfg, "%s is on the file system of %s, which the host bound in: the init cleans "
                     "only what it owns",
                root, cfg->rw[i]);
    }
}

/* SysV IPC objects live in the sandbox's IPC namespace, not in a process:
 * without this a command could leave a segment or a queue for the next. */
static bool remove_ipc(void) {
    static const char *const tables[] = {"/proc/sysvipc/shm", "/proc/sysvipc/sem",
                                         "/proc/sysvipc/msg"};
    bool ok = true;
    for (int t = 0; t < 3; t++) {
        FILE *f = fopen(tables[t], "re");
        if (!f)
            continue;
        char line[512];
        bool header = true;
        while (fgets(line, sizeof line, f)) {
            if (header) {
                header = false;
                continue;
            }
            long key, id;
            if (sscanf(line, "%ld %ld", &key, &id) != 2)
                continue;
            int rc = t == 0   ? shmctl((int)id, IPC_RMID, NULL)
                     : t == 1 ? semctl((int)id, 0, IPC_RMID)
                              : msgctl((int)id, IPC_RMID, NULL);
            ok &= rc == 0 || errno == EINVAL || errno == EIDRM;
        }
        fclose(f);
    }
    return ok;
}

/* ---- the control socket ----------------------------------------------------- */

static const struct config *cfg_g;
static int devnull = -1;

/* Takes everything down: PID 1 exiting makes the kernel kill what is left. */
static _Noreturn void shut_down(void) {
    signal_namespace(cfg_g, SIGKILL);
    _exit(0);
}

static void send_done(const struct a3s_msg_done *d) {
    uint8_t buf[A3S_MSG_HEADER + 16 + A3S_MSG_TEXT_MAX];
    size_t n = a3s_msg_encode_done(d, buf, sizeof buf);
    if (n == 0 || a3s_msg_send(cfg_g->control_fd, buf, n, NULL, 0, SEND_TIMEOUT_MS) < 0)
        shut_down(); /* the host is gone or stuck */
}

static void close_all(int *fds, size_t n) {
    for (size_t i = 0; i < n; i++)
        close(fds[i]);
}

/* Reads one request; anything but a well-formed one ends the sandbox. */
static uint16_t receive(uint8_t **buf, size_t *len, int fds[4], size_t *nfds) {
    int rc = a3s_msg_recv(cfg_g->control_fd, buf, len, fds, 4, nfds, RECV_TIMEOUT_MS);
    uint16_t type = 0;
    uint32_t total = 0;
    if (rc != 0 || a3s_msg_header(*buf, *len, &type, &total, NULL) != A3S_OK)
        shut_down();
    return type;
}

/* ---- one command -------------------------------------------------------------- */

/* Handles what the signalfd holds: reaps children (noting the command's
 * status). Any other signal is ignored, whoever seems to send it: the host
 * stops the sandbox only through what a command cannot forge (the control
 * socket, the lifeline, the caller's pidfd, or SIGKILL), while a command
 * can queue a signal to PID 1 with any si_pid it likes (rt_sigqueueinfo)
 * where Landlock does not scope signals. */
static void drain_signals(struct exectrace *t, int sfd, pid_t child, int *status, bool *reaped) {
    /* a batch per read: a wake-up of the tracer is one read, not two */
    struct signalfd_siginfo si[8];
    bool reap = false;
    ssize_t n;
    do {
        n = read(sfd, si, sizeof si);
        for (ssize_t i = 0; i < n / (ssize_t)sizeof *si; i++)
            reap |= si[i].ssi_signo == SIGCHLD;
    } while (n == (ssize_t)sizeof si);
    /* once per wake-up: with a tracer busy past its bound, the next SIGCHLD
     * (exectrace_wait raises one) comes back through poll */
    int st;
    pid_t p;
    while (reap && (p = exectrace_wait(t, &st, WNOHANG)) > 0) {
        if (p == child && !*reaped) {
            *status = st;
            *reaped = true;
        }
    }
}

/* Kills every process but this one and reaps them; records the command's
 * status if it was still to be reaped. Once nothing is left to reap at once it
 * waits REAP_MS at most: false if something is still there then (a process in
 * uninterruptible sleep, which dies as it wakes: its SIGKILL is pending). */
static bool kill_and_reap(struct exectrace *t, int sfd, pid_t child, int *status, bool *reaped) {
    int tfd = -1;
    bool gone = false;
    for (;;) {
        signal_namespace(cfg_g, SIGKILL);
        int st;
        pid_t p = exectrace_wait(t, &st, WNOHANG);
        if (p < 0 && errno == EINTR)
            continue;
        if (p < 0) {
            gone = true; /* ECHILD: nobody is left */
            break;
        }
        if (p > 0) {
            if (p == child && !*reaped) {
                *status = st;
                *reaped = true;
            }
            continue;
        }
        if (tfd < 0 && (tfd = arm_timer(REAP_MS)) < 0)
            break; /* no timer: report what is left rather than wait without bound */
        struct pollfd q[2] = {{.fd = sfd, .events = POLLIN}, {.fd = tfd, .events = POLLIN}};
        if (poll(q, 2, -1) < 0 && errno != EINTR)
            break;
        if (q[1].revents & POLLIN)
            break; /* the time is up: survivors */
        if (q[0].revents & POLLIN)
            drain_signals(t, sfd, child, status, reaped);
    }
    if (tfd >= 0)
        close(tfd);
    return gone;
}

static void fail_setup(struct a3s_msg_done *d, const char *fmt, const char *a, int e) {
    d->exit_code = EXIT_SETUP;
    d->flags = A3S_DONE_SETUP_FAILED;
    snprintf(d->message, sizeof d->message, fmt, a, strerror(e));
}

static char **command_argv(const struct config *cfg, char *command) {
    size_t n = 0;
    while (cfg->argv[n])
        n++;
    char **argv = calloc(n + 2, sizeof *argv);
    if (argv) {
        memcpy(argv, cfg->argv, n * sizeof *argv);
        argv[n] = command;
    }
    return argv;
}

/* Runs one command to its end; fills d. in (-1: /dev/null), out, err and
 * grant_fd (-1: no network grant) are closed here. */
static void run_one(const char *program, const struct a3s_landlock *ll,
                    const struct a3s_seccomp_program *filter, int sfd,
                    const struct a3s_msg_exec *m, int in, int out, int err, int grant_fd,
                    struct a3s_msg_done *d) {
    const struct config *cfg = cfg_g;
    int listener = -1;
    char why[256];
    char scratch[sizeof A3S_SCRATCH_PARENT + A3S_MSG_SCRATCH_MAX + 2];
    struct stat st;
    snprintf(scratch, sizeof scratch, "%s/%s", A3S_SCRATCH_PARENT, m->scratch);
    char **argv = command_argv(cfg, m->command);
    int report[2] = {-1, -1}, go[2] = {-1, -1}, ready[2] = {-1, -1};
    pid_t child = -1;
    /* the exec check (exectrace.c) for this command's rules, if it has any */
    struct exectrace trace = {.root = -1, .tell_fd = -1};
    bool rules_ok = true;
    char rule_why[256] = "";
    static const char *const KINDS[3] = {"deny", "ask", "approve"};
    for (int l = 0; l < 3 && rules_ok; l++)
        for (size_t i = 0; i < m->nrules[l] && rules_ok; i++)
            rules_ok = exectrace_add_rule(&trace, KINDS[l], m->rules[l][i], rule_why,
                                          sizeof rule_why);
    bool tracing = rules_ok && exectrace_active(&trace);
    trace.notify = cfg->exec_notify; /* else the whole tree is traced, from its fork */
    bool seize_tree = tracing && !trace.notify;
    if (tracing) {
        exectrace_locate(&trace, m->env);
        exectrace_tell_to(&trace, err); /* the stderr the host reads */
    }
    if (cfg->names) /* names.c passes execs on to us, or lets them through */
        atomic_store(&cfg->names->execs_checked, tracing && trace.notify);
    oom_adj_for_command(cfg);
    if (!argv) {
        fail_setup(d, "%s: %s", "out of memory", ENOMEM);
    } else if (mkdir(A3S_SCRATCH_PARENT, 0700) < 0 && errno != EEXIST) {
        fail_setup(d, "cannot make %s: %s", A3S_SCRATCH_PARENT, errno);
    } else if (lstat(A3S_SCRATCH_PARENT, &st) < 0 || !S_ISDIR(st.st_mode)) {
        fail_setup(d, "%s is not a directory: %s", A3S_SCRATCH_PARENT, ENOTDIR);
    } else if (mkdir(scratch, 0700) < 0) {
        fail_setup(d, "cannot make the scratch directory %s: %s", scratch, errno);
    } else if (grant_fd >= 0 &&
               (listener = grant_open(grant_fd, cfg->grant_port, why, sizeof why)) < 0) {
        d->exit_code = EXIT_SETUP;
        d->flags = A3S_DONE_SETUP_FAILED;
        snprintf(d->message, sizeof d->message, "%s", why);
    } else if (!rules_ok) {
        d->exit_code = EXIT_SETUP;
        d->flags = A3S_DONE_SETUP_FAILED;
        snprintf(d->message, sizeof d->message, "%s", rule_why);
    } else if (pipe2(report, O_CLOEXEC) < 0 ||
               (seize_tree && (pipe2(go, O_CLOEXEC) < 0 || pipe2(ready, O_CLOEXEC) < 0))) {
        fail_setup(d, "%s: %s", "pipe2", errno);
    } else if ((child = fork()) < 0) {
        fail_setup(d, "%s: %s", "fork", errno);
    } else if (child == 0) {
        close(report[0]);
        if (seize_tree) {
            close(go[1]);
            close(ready[0]);
        }
        struct child_spec spec = {
            .program = program,
            .argv = argv,
            .envp = m->env,
            .in = in >= 0 ? in : devnull,
            .out = out,
            .err = err,
            .cwd = m->cwd,
            .ll = listener >= 0 ? &cfg->grant_ll : ll,
            .filter = filter,
            .nproc = command_nproc(cfg),
            .report_fd = report[1],
            .trace_fd = {go[0], ready[1]},
        };
        run_child(&spec);
    }
    own_settings_restore(cfg); /* the child was forked with the command's OOM score */
    close(out);
    close(err);
    if (in >= 0)
        close(in); /* only the command reads it: its end of file is the host's to give */
    if (grant_fd >= 0)
        close(grant_fd);
    if (report[1] >= 0)
        close(report[1]);
    int status = 0;
    bool reaped = false;
    bool linked = cfg->links_fd < 0; /* unwatchable: assume the command made links */
    trace.root = child;
    if (seize_tree && child > 0) {
        close(go[0]);
        close(ready[1]);
        int terr = exectrace_seize(&trace, child, ready[0], go[1]);
        if (terr) { /* it must not run untraced: killed below with everything else */
            signal_namespace(cfg, SIGKILL);
            fail_setup(d, "cannot trace the command's execs for the exec check (%s): %s",
                       "ptrace", terr);
        }
    } else {
        for (int i = 0; i < 2; i++) {
            if (go[i] >= 0)
                close(go[i]);
            if (ready[i] >= 0)
                close(ready[i]);
        }
    }
    if (child > 0 && !(d->flags & A3S_DONE_SETUP_FAILED)) {
        struct exec_failure f;
        ssize_t n = read_report(cfg, &trace, report[0], &f, &linked);
        if (n == (ssize_t)sizeof f) {
            f.step[sizeof f.step - 1] = '\0';
            char what[384];
            bool in_cwd = m->cwd && strcmp(f.step, "chdir") == 0;
            snprintf(what, sizeof what, "%.16s %.360s", f.step, in_cwd ? m->cwd : cfg->argv[0]);
            fail_setup(d, "%s: %s", what, f.err);
        }
    }
    if (report[0] >= 0)
        close(report[0]);

    bool stopping = false, timed_out = false, cancelled = false, oom_killed = false;
    int links_fd = cfg->links_fd;
    int tfd = -1, wfd = -1;
    if (child > 0 && !(d->flags & A3S_DONE_SETUP_FAILED)) {
        tfd = m->timeout_ms ? arm_timer(m->timeout_ms) : -1;
        wfd = watchdog_arm(cfg);
        uint64_t grace = m->grace_ms ? m->grace_ms : GRACE_MS_DEFAULT;
        while (!reaped) {
            struct pollfd p[7] = {
                {.fd = sfd, .events = POLLIN},
                {.fd = tfd, .events = POLLIN},
                {.fd = cfg->control_fd, .events = POLLIN},
                {.fd = cfg->lifeline_fd, .events = POLLIN},
                {.fd = cfg->host_pidfd, .events = POLLIN},
                {.fd = wfd, .events = POLLIN},
                {.fd = links_fd, .events = POLLIN},
            };
            if (poll(p, 7, -1) < 0) {
                if (errno == EINTR)
                    continue;
                shut_down();
            }
            if (p[6].revents & POLLIN) {
                if (links_take(cfg, &trace, &linked) < 0)
                    shut_down(); /* a link call we cannot answer would hang the command */
            }
            if (p[3].revents || p[4].revents)
                shut_down(); /* the caller is gone */
            if (p[2].revents & POLLIN) {
                uint8_t *buf;
                size_t len, nfds;
                int fds[4];
                uint16_t type = receive(&buf, &len, fds, &nfds);
                free(buf);
                close_all(fds, nfds);
                if (type != A3S_MSG_CANCEL)
                    shut_down(); /* SHUTDOWN, or a request out of turn */
                if (!stopping) {
                    cancelled = stopping = true;
                    signal_namespace(cfg, SIGTERM);
                    /* a stopped process would never see the TERM */
                    signal_namespace(cfg, SIGCONT);
                    if (tfd >= 0)
                        close(tfd);
                    tfd = arm_timer(grace);
                }
            } else if (p[2].revents) {
                shut_down();
            }
            if (p[1].revents & POLLIN) {
                if (stopping)
                    break; /* the grace is over: everything is killed below */
                timed_out = stopping = true;
                signal_namespace(cfg, SIGTERM);
                signal_namespace(cfg, SIGCONT);
                close(tfd);
                tfd = arm_timer(grace);
            }
            if ((p[5].revents & POLLIN) && !oom_killed && watchdog_over(cfg, wfd)) {
                oom_killed = true; /* over the memory bound: the command goes */
                signal_namespace(cfg, SIGKILL);
            }
            if (p[0].revents & POLLIN)
                drain_signals(&trace, sfd, child, &status, &reaped);
        }
    }
    if (tfd >= 0)
        close(tfd);
    if (wfd >= 0)
        close(wfd);
    /* the grant ends with the command's main process: the proxy stops listening before
     * anything it left behind is killed, so nothing left behind can still reach it */
    grant_close(&listener);
    bool survived = child > 0 && !kill_and_reap(&trace, sfd, child, &status, &reaped);
    if (survived) /* something of the command may still run: this sandbox serves no more */
        d->flags |= A3S_DONE_SURVIVED | A3S_DONE_CLOSING;
    if (!(d->flags & A3S_DONE_SETUP_FAILED)) {
        if (timed_out || cancelled) {
            d->exit_code = EXIT_TIMEOUT;
            d->flags = (d->flags & (A3S_DONE_SURVIVED | A3S_DONE_CLOSING)) |
                       (timed_out ? A3S_DONE_TIMED_OUT : A3S_DONE_CANCELLED);
        } else {
            d->exit_code = trace.stops ? EXIT_EXEC_STOPPED : status_of(status);
        }
        if (trace.stops) { /* what the exec check stopped first, for the result */
            d->flags |= A3S_DONE_EXEC_STOPPED;
            snprintf(d->message, sizeof d->message, "%.*s", (int)sizeof d->message - 1,
                     trace.first);
        }
        if (oom_killed)
            d->flags |= A3S_DONE_OOM_KILLED;
        if (linked)
            d->flags |= A3S_DONE_LINKED;
        d->pid = child;
    }
    if (cfg->names)
        atomic_store(&cfg->names->execs_checked, false); /* nothing of the command is left */
    exectrace_reset(&trace);
    free(argv);
}

/* Between commands the init needs none of its own code: its pages go back
 * (the next command reads them again from the page cache), so an idle
 * sandbox costs the memory it wrote, not the size of this static binary.
 * MADV_PAGEOUT, not MADV_DONTNEED: pages left in the page cache would be
 * mapped back around the next fault (fault-around), and pageout never
 * discards what was written (the relocated data after the code). */
static void page_out_code(void) {
#ifdef MADV_PAGEOUT
    extern const char __executable_start[], __data_start[];
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t from = (uintptr_t)__executable_start & ~(page - 1);
    uintptr_t to = (uintptr_t)__data_start & ~(page - 1);
    if (to > from)
        madvise((void *)from, to - from, MADV_PAGEOUT); /* advice: its failure changes nothing */
#endif
#ifdef __GLIBC__
    malloc_trim(0); /* and the heap pages the command's bookkeeping freed */
#endif
}

_Noreturn void serve(const struct config *cfg, const char *program,
                     const struct a3s_landlock *ll, const struct a3s_seccomp_program *filter,
                     int sfd) {
    cfg_g = cfg;
    if (!cfg->owns_pidns) /* main proves it first; every kill here relies on it */
        die(cfg, "server mode runs only as proven PID 1 of a new pid namespace");
    devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0)
        die(cfg, "open /dev/null: %s", strerror(errno));
    for (size_t i = 0; i < cfg->nclean; i++)
        check_clean_root(cfg, cfg->clean[i]);
    for (size_t i = 0; i < cfg->nclean; i++)
        if (!snapshot_root(cfg->clean[i]))
            die(cfg, "cannot record the state of %s (more than %d entries?)", cfg->clean[i],
                MAX_ENTRIES);
    qsort(snap, nsnap, sizeof *snap, by_path);
    if (!read_mounts(&mount_ids, &nmounts))
        die(cfg, "cannot read /proc/self/mountinfo");
    /* The host retires bubblewrap once READY arrives (session_linux.c): from
     * here on the lifeline and the caller's pidfd, watched below, are what
     * tie this sandbox to its caller, not the parent's death. */
    if (prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0) < 0)
        die(cfg, "prctl(PR_SET_PDEATHSIG): %s", strerror(errno));
    uint8_t ready[A3S_MSG_HEADER];
    if (a3s_msg_send(cfg->control_fd, ready, a3s_msg_encode_empty(A3S_MSG_READY, ready), NULL, 0,
                     SEND_TIMEOUT_MS) < 0)
        shut_down();
    /* from here on everything goes over the control socket */
    dup2(devnull, 1);
    dup2(devnull, 2);

    for (;;) {
        page_out_code();
        struct pollfd p[4] = {
            {.fd = cfg->control_fd, .events = POLLIN},
            {.fd = cfg->lifeline_fd, .events = POLLIN},
            {.fd = sfd, .events = POLLIN},
            {.fd = cfg->host_pidfd, .events = POLLIN},
        };
        if (poll(p, 4, -1) < 0) {
            if (errno == EINTR)
                continue;
            shut_down();
        }
        if (p[1].revents || p[3].revents)
            shut_down(); /* the caller is gone */
        if (p[2].revents & POLLIN) {
            int st;
            bool reaped = false;
            drain_signals(NULL, sfd, -1, &st, &reaped);
        }
        if (!(p[0].revents & POLLIN)) {
            if (p[0].revents)
                shut_down();
            continue;
        }
        uint8_t *buf;
        size_t len, nfds;
        int fds[4];
        uint16_t type = receive(&buf, &len, fds, &nfds);
        if (type == A3S_MSG_CANCEL) { /* for a command that already ended */
            free(buf);
            close_all(fds, nfds);
            continue;
        }
        struct a3s_msg_exec m;
        if (type != A3S_MSG_EXEC || nfds < 2 || a3s_msg_decode_exec(buf, len, &m, NULL) != A3S_OK)
            shut_down(); /* SHUTDOWN, or a malformed request */
        bool grant = m.flags & A3S_MSG_EXEC_GRANT;
        bool has_in = m.flags & A3S_MSG_EXEC_STDIN;
        if (nfds != 2u + grant + has_in || (grant && !cfg->grant_port))
            shut_down(); /* an fd without its flag, or a grant this sandbox cannot give */
        free(buf);
        struct a3s_msg_done d = {0};
        if (!mounts_intact()) {
            close_all(fds, nfds);
            d.exit_code = EXIT_SETUP;
            d.flags = A3S_DONE_SETUP_FAILED | A3S_DONE_STALE | A3S_DONE_CLOSING;
            snprintf(d.message, sizeof d.message,
                     "a mount of the sandbox is gone: its mount point was replaced on the host");
            send_done(&d);
            shut_down();
        }
        run_one(program, ll, filter, sfd, &m, has_in ? fds[2 + grant] : -1, fds[0], fds[1],
                grant ? fds[2] : -1, &d);
        a3s_msg_exec_free(&m);
        if (d.flags & A3S_DONE_SURVIVED) {
            send_done(&d); /* now: the host must not wait for what cannot be reaped */
            shut_down();
        }
        bool trees_restored = restore_trees(cfg); /* all run, whatever the others found */
        bool metadata_restored = restore_metadata();   /* after the trees: see there */
        bool ipc_removed = remove_ipc();
        bool settings_restored = own_settings_restore(cfg); /* a root caller's command owns them */
        bool clean = trees_restored && metadata_restored && ipc_removed && settings_restored;
        if (!clean)
            d.flags |= A3S_DONE_CLOSING;
        send_done(&d);
        if (!clean)
            shut_down(); /* the host starts a fresh sandbox for the next command */
    }
}
