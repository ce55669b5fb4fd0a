/* names.c - protected names that are missing stay missing, inside the sandbox only.
 *
 * A protected top-level name (native/src/protected.c) that exists is bound
 * read-only by bubblewrap. One that is missing cannot be bound without an
 * object at that name on the host (a mount needs a dentry), so instead every
 * system call that can make or rename a name is turned into a seccomp user
 * notification and EMULATED here: the call never runs in the command.
 *
 *  - the init's supervisor thread (names_thread) receives each notification,
 *    copies the path strings out of the caller's memory once (the caller may
 *    rewrite them afterwards: nothing is read from it again), opens its base
 *    directories through /proc/PID (cwd, fd/N) and checks that the
 *    notification is still valid (so PID was still the caller). The init is
 *    the commands' ancestor, which Yama's ptrace_scope 1 requires for reading
 *    their memory.
 *  - a helper process (names_helper), forked from the init before the filter
 *    and confined by the command's own Landlock ruleset and seccomp deny-list,
 *    resolves the parent directory, refuses a missing protected name directly
 *    in the workspace root (EACCES), performs the call relative to the parent
 *    with the caller's umask, and answers the notification itself: an opened
 *    file goes into the caller with SECCOMP_IOCTL_NOTIF_ADDFD, and the helper
 *    closes its copy before the answer (answer_fd). The helper can do nothing
 *    the command could not do itself.
 *
 * The init's own calls (server mode makes scratch directories and restores
 * /tmp) are let through: its memory is its own, no command can change it.
 * prctl(PR_SET_DUMPABLE), chdir and fchdir are notified too, only to be
 * noted and let through (struct nodump: a non-dumpable caller's memory).
 * link() and linkat() are still reported as links seen (the "L" status) via
 * a pipe whose read end is cfg->links_fd.
 *
 * With the exec check (cfg->exec_notify), execve and execveat are notified
 * here too (a task has one listener at most): while the running command has
 * rules, each goes to the main thread through the same pipe, which seizes
 * the caller and answers (exectrace.c: ptrace requests come from the thread
 * that seized); without rules it is let through here.
 */
#define _GNU_SOURCE
#include "init.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#if defined(__x86_64__) && !defined(__ILP32__)
#  define NAMES_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__) && defined(__AARCH64EL__)
#  define NAMES_ARCH AUDIT_ARCH_AARCH64
#endif

#ifndef SECCOMP_RET_USER_NOTIF
#  define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif
#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#  define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_USER_NOTIF_FLAG_CONTINUE
#  define SECCOMP_USER_NOTIF_FLAG_CONTINUE (1UL << 0)
#endif
#ifndef SECCOMP_ADDFD_FLAG_SEND
#  define SECCOMP_ADDFD_FLAG_SEND (1UL << 1)
#endif

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#  define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#  define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

#if defined(NAMES_ARCH) && defined(SECCOMP_IOCTL_NOTIF_RECV) && defined(SECCOMP_IOCTL_NOTIF_ADDFD)
#  define NAMES_SUPPORTED 1
#endif

#ifdef NAMES_SUPPORTED

enum op { OP_OPEN, OP_MKDIR, OP_MKNOD, OP_SYMLINK, OP_LINK, OP_RENAME };

/* A call, as the thread hands it to the helper (with up to two base
 * directory fds: -1 for an absolute path). */
struct names_req {
    uint64_t id;
    int op;
    int flags; /* open: the open flags; link, rename: their flags */
    unsigned mode;
    unsigned long long dev;
    unsigned umask;
    bool whole[2];          /* path[i] was the caller's /proc fd link itself (magic_prefix) */
    char path[2][PATH_MAX]; /* the name made (path[0]; link, rename: the old one first) */
    char text[PATH_MAX];    /* symlink: its target */
};

/* On the helper's socket a request is its header and then its three strings,
 * each with its NUL: a few hundred bytes, not the 12 KiB of the struct. */
#  define REQ_HEAD offsetof(struct names_req, path)

static size_t req_pack(const struct names_req *q, struct iovec iov[4]) {
    iov[0] = (struct iovec){.iov_base = (void *)q, .iov_len = REQ_HEAD};
    const char *s[3] = {q->path[0], q->path[1], q->text};
    size_t total = REQ_HEAD;
    for (int i = 0; i < 3; i++) {
        iov[i + 1] = (struct iovec){.iov_base = (void *)s[i], .iov_len = strlen(s[i]) + 1};
        total += iov[i + 1].iov_len;
    }
    return total;
}

/* The request in buf (n bytes) into q; false if it is not one. */
static bool req_unpack(const char *buf, size_t n, struct names_req *q) {
    if (n < REQ_HEAD)
        return false;
    memcpy(q, buf, REQ_HEAD);
    char *d[3] = {q->path[0], q->path[1], q->text};
    size_t at = REQ_HEAD;
    for (int i = 0; i < 3; i++) {
        const char *end = at < n ? memchr(buf + at, '\0', n - at) : NULL;
        if (!end || (size_t)(end - (buf + at)) >= PATH_MAX)
            return false;
        memcpy(d[i], buf + at, (size_t)(end - (buf + at)) + 1);
        at = (size_t)(end - buf) + 1;
    }
    return at == n;
}

/* A process that made itself non-dumpable (prctl(PR_SET_DUMPABLE, 0), as
 * ssh-agent does): from then on a process without CAP_SYS_PTRACE, as the
 * init is, can open none of its /proc/PID/mem, cwd or fd/N. So its mem and
 * working directory are opened while it is blocked in that prctl, still
 * readable; an open mem goes on reading the same memory (the kernel checks
 * at open). Its calls are then emulated as anyone's, with a base directory
 * from here: its cwd until it changes directory (chdir and fchdir are
 * noted), none for a dirfd (refused, EACCES: fail closed). What is read
 * from here is what the helper resolves and checks, as for any caller, so a
 * stale entry can misplace a file of its own process, never make a
 * protected name. A child it forks is non-dumpable from birth and was never
 * readable: its calls are refused (EACCES), as before. */
#  define NODUMP_MAX 64
struct nodump {
    pid_t tgid;               /* 0: a free slot */
    unsigned long long start; /* its start time (/proc/PID/stat): a reused pid is not it */
    int mem;
    int cwd; /* O_PATH; -1 once it changed directory */
};

/* The /proc/TID directory and open status file of a recent caller thread:
 * both name that thread's struct pid, not its number, so once it is gone
 * they fail (ESRCH, ENOENT) and are opened again, for whoever has the
 * number then. Saves two /proc lookups per call; the status is read again
 * every time (the umask can change at any moment). */
#  define PROC_MAX 32
struct procent {
    pid_t tid; /* 0: a free slot */
    int dir, status;
};

struct names_rt {
    struct procent proc[PROC_MAX];
    unsigned proc_next; /* the slot replaced next */
    int listener;
    int helper;    /* the thread's end of the helper's socket */
    int link_pipe; /* write end: a struct names_note per link, or exec to check */
    size_t notif_size, resp_size;
    struct nodump nodump[NODUMP_MAX];
    size_t nodumps; /* slots in use */
    struct names_shared shared;
};

/* What the pipe to the main thread carries: whole records (one atomic write
 * each, and reads of whole records), a link seen or an exec to check. */
struct names_note {
    uint64_t id;
    int32_t pid;
    int32_t exec; /* 0: a link; 1: an exec; NOTE_NODUMP: prctl(PR_SET_DUMPABLE, 0) */
};
#  define NOTE_NODUMP 2

/* ---- the filter ---------------------------------------------------------- */

/* Every call that makes or renames a name; open and openat only with
 * O_CREAT (their flags are plain arguments); openat2 is refused with ENOSYS
 * by the deny-list (its flags are behind a pointer). */
static int install_filter(bool execs) {
    static const int notify_nr[] = {
#  ifdef SYS_creat
        SYS_creat,
#  endif
#  ifdef SYS_mkdir
        SYS_mkdir,
#  endif
#  ifdef SYS_mknod
        SYS_mknod,
#  endif
#  ifdef SYS_symlink
        SYS_symlink,
#  endif
#  ifdef SYS_link
        SYS_link,
#  endif
#  ifdef SYS_rename
        SYS_rename,
#  endif
#  ifdef SYS_renameat
        SYS_renameat,
#  endif
        SYS_mkdirat,   SYS_mknodat, SYS_symlinkat, SYS_linkat, SYS_renameat2,
        SYS_chdir,     SYS_fchdir, /* let through: only noted (struct nodump) */
        SYS_execve,    SYS_execveat, /* the exec check: the last two, left out without it */
    };
    enum { ALL = sizeof notify_nr / sizeof notify_nr[0] };
    const unsigned N = execs ? ALL : ALL - 2;
    /* jumps go forward only: each flags check ends in returns of its own */
    struct sock_filter f[ALL + 24];
    unsigned n = 0;
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                          offsetof(struct seccomp_data, arch));
    unsigned arch_jump = n++; /* a foreign ABI: allowed here, killed by the deny-list */
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                          offsetof(struct seccomp_data, nr));
    unsigned notify_jumps = n;
    n += N;
    int open_nr[2] = {-1, SYS_openat}; /* open: flags in args[1]; openat: args[2] */
#  ifdef SYS_open
    open_nr[0] = SYS_open;
#  endif
    unsigned open_jump[2];
    for (int k = 0; k < 2; k++)
        open_jump[k] = n++;
    unsigned prctl_jump = n++;
    unsigned allow = n++;
    unsigned notify = n++;
    unsigned check[2];
    for (int k = 0; k < 2; k++) {
        check[k] = n;
        f[n++] = (struct sock_filter)BPF_STMT(
            BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1]) + 8u * (unsigned)k);
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, O_CREAT, 0, 1);
        f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF);
        f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    }
    /* prctl(PR_SET_DUMPABLE, ...): the option is an int (low 32 bits) */
    unsigned dump_check = n;
    f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                          offsetof(struct seccomp_data, args[0]));
    f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PR_SET_DUMPABLE, 0, 1);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF);
    f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    f[prctl_jump] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_prctl,
                                                 (uint8_t)(dump_check - prctl_jump - 1), 0);
    f[arch_jump] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NAMES_ARCH, 0,
                                                (uint8_t)(allow - arch_jump - 1));
    for (unsigned i = 0; i < N; i++) {
        unsigned at = notify_jumps + i;
        f[at] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)notify_nr[i],
                                             (uint8_t)(notify - at - 1), 0);
    }
    for (int k = 0; k < 2; k++)
        f[open_jump[k]] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
                                                       (uint32_t)open_nr[k],
                                                       (uint8_t)(check[k] - open_jump[k] - 1), 0);
    f[allow] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    f[notify] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF);
    struct sock_fprog prog = {.len = (unsigned short)n, .filter = f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -errno;
    long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    return fd < 0 ? -errno : (int)fd;
}

/* ---- answering ------------------------------------------------------------ */

/* The one response to the call id: its error or value, or with flags
 * SECCOMP_USER_NOTIF_FLAG_CONTINUE, that the kernel runs it as it stands. */
static void respond(int listener, uint64_t id, int error, int64_t val, uint32_t flags) {
    union {
        struct seccomp_notif_resp r;
        unsigned char bytes[256];
    } resp;
    memset(&resp, 0, sizeof resp);
    resp.r.id = id;
    resp.r.error = error;
    resp.r.val = val;
    resp.r.flags = flags;
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) != 0) {
        /* ENOENT: the caller is gone (killed, or its call interrupted) */
    }
}

static void answer(int listener, uint64_t id, int error, int64_t val) {
    respond(listener, id, error, val, 0);
}

static void answer_continue(int listener, uint64_t id) {
    respond(listener, id, 0, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE);
}

/* The opened fd into the caller, as the answer of its call; closes fd.
 *
 * The fd is installed first (without SECCOMP_ADDFD_FLAG_SEND), our copy is
 * closed, and only then is the call answered with the caller's number for it:
 * when the caller resumes it holds the file's only reference, so its own
 * close is the last one and the IN_CLOSE_WRITE a change detector waits for is
 * queued then, never later by us. The caller stays stopped in its call until
 * the answer, and a thread of it that finds the new fd early finds the file
 * it asked for. */
static void answer_fd(int listener, uint64_t id, int fd, int oflags) {
    struct seccomp_notif_addfd add;
    memset(&add, 0, sizeof add);
    add.id = id;
    add.srcfd = (uint32_t)fd;
    add.newfd_flags = (uint32_t)(oflags & O_CLOEXEC);
    int newfd = ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add);
    int err = errno;
    close(fd);
    if (newfd >= 0)
        answer(listener, id, 0, newfd);
    else if (err != ENOENT)
        answer(listener, id, -err, 0); /* e.g. EMFILE in the caller */
}

/* ---- the helper: resolves, refuses, performs ------------------------------ */

struct helper_ctx {
    int listener;
    dev_t root_dev;
    ino_t root_ino;
    const char *const *missing;
    size_t nmissing;
};

/* A resolved path: the parent directory (an O_PATH fd, or AT_FDCWD for the
 * whole path when it names no new entry) and the final name. */
struct resolved {
    int dirfd;
    bool own; /* dirfd is ours to close */
    char name[PATH_MAX];
};

static void resolved_close(struct resolved *r) {
    if (r->own && r->dirfd >= 0)
        close(r->dirfd);
    r->own = false;
    r->dirfd = -1;
}

/* Splits `path` (relative to `base`: -1 for AT_FDCWD) into its parent,
 * opened here as the caller's kernel would walk it, and its final
 * component. A trailing slash stays on the name (the kernel then answers as
 * it would); "", "." and ".." name no new entry and are passed whole. 0 or
 * -errno. */
static int resolve(int base, const char *path, struct resolved *out) {
    out->dirfd = -1;
    out->own = false;
    size_t len = strlen(path);
    size_t end = len;
    while (end > 1 && path[end - 1] == '/')
        end--;
    size_t start = end;
    while (start > 0 && path[start - 1] != '/')
        start--;
    size_t nlen = len - start;
    if (nlen >= sizeof out->name)
        return -ENAMETOOLONG;
    memcpy(out->name, path + start, nlen);
    out->name[nlen] = '\0';
    size_t core = end - start;
    bool no_entry = core == 0 || (core == 1 && path[start] == '.') ||
                    (core == 2 && path[start] == '.' && path[start + 1] == '.');
    if (no_entry) {
        if (len >= sizeof out->name)
            return -ENAMETOOLONG;
        memcpy(out->name, path, len + 1);
        out->dirfd = base >= 0 ? base : AT_FDCWD;
        return 0;
    }
    char dir[PATH_MAX];
    if (start == 0) {
        strcpy(dir, ".");
    } else {
        memcpy(dir, path, start);
        dir[start] = '\0';
    }
    int fd = openat(base >= 0 ? base : AT_FDCWD, dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    out->dirfd = fd;
    out->own = true;
    return 0;
}

/* Whether r names a protected name that is missing, directly in the
 * workspace root. The exact name, as protected.c decides; a trailing slash
 * does not make it another name. */
static bool refused(const struct helper_ctx *h, const struct resolved *r) {
    if (!r->own)
        return false;
    char name[PATH_MAX];
    snprintf(name, sizeof name, "%s", r->name);
    for (size_t l = strlen(name); l > 1 && name[l - 1] == '/'; l--)
        name[l - 1] = '\0';
    bool listed = false;
    for (size_t i = 0; i < h->nmissing && !listed; i++)
        listed = !strcmp(name, h->missing[i]);
    if (!listed)
        return false;
    struct stat st;
    if (fstat(r->dirfd, &st) < 0)
        return true; /* cannot tell: fail closed */
    return st.st_dev == h->root_dev && st.st_ino == h->root_ino;
}

#  define MAX_LINKS 40 /* the kernel's bound on symlinks in one lookup */

/* A blocking open (a FIFO's other end not there yet): done by a child of
 * the helper, which answers for it, so the helper goes on serving. */
static void open_blocking(const struct helper_ctx *h, uint64_t id, int dirfd, const char *name,
                          int flags, unsigned mode) {
    pid_t pid = fork();
    if (pid == 0) {
        int fd = openat(dirfd, name, flags, mode);
        if (fd < 0)
            answer(h->listener, id, -errno, 0);
        else
            answer_fd(h->listener, id, fd, flags);
        _exit(0);
    }
    if (pid < 0)
        answer(h->listener, id, -EAGAIN, 0);
}

/* Answers an open with fd and closes it. Both of do_open's paths open with
 * O_NONBLOCK, so that a FIFO cannot hold the helper; the caller gets the fd
 * in the blocking mode it asked for. */
static void answer_opened(const struct helper_ctx *h, const struct names_req *q, int fd) {
    if (!(q->flags & O_NONBLOCK)) /* the status flags asked for, O_NONBLOCK off */
        fcntl(fd, F_SETFL, q->flags & ~(O_ASYNC | O_NONBLOCK));
    answer_fd(h->listener, q->id, fd, q->flags); /* closes fd */
}

static void do_open(const struct helper_ctx *h, const struct names_req *q, int base) {
    if (q->whole[0]) {
        /* an open file of the caller, reopened (no name is made): as the
         * kernel does, following the link, under our Landlock domain */
        int fd = open(q->path[0], q->flags | O_NONBLOCK, q->mode);
        if (fd < 0 && errno == ENXIO && !(q->flags & O_NONBLOCK)) {
            open_blocking(h, q->id, AT_FDCWD, q->path[0], q->flags, q->mode);
            return;
        }
        if (fd < 0) {
            answer(h->listener, q->id, -errno, 0);
            return;
        }
        answer_opened(h, q, fd);
        return;
    }
    bool follow = !(q->flags & (O_EXCL | O_NOFOLLOW));
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", q->path[0]);
    int cur = base, owned = -1, hops = 0;
    int rc = 0, fd = -1;
    for (;;) {
        struct resolved r;
        if ((rc = resolve(cur, path, &r)) < 0)
            break;
        if (refused(h, &r)) {
            resolved_close(&r);
            rc = -EACCES;
            break;
        }
        /* O_NOFOLLOW: a final symlink is followed here, where the name it
         * leads to is checked; O_NONBLOCK: a FIFO cannot hold the helper */
        fd = openat(r.dirfd, r.name, q->flags | O_NOFOLLOW | O_NONBLOCK, q->mode);
        int err = fd < 0 ? errno : 0;
        if (fd < 0 && err == ELOOP && follow && r.own) {
            char target[PATH_MAX];
            ssize_t n = readlinkat(r.dirfd, r.name, target, sizeof target - 1);
            if (n > 0 && ++hops <= MAX_LINKS) {
                target[n] = '\0';
                snprintf(path, sizeof path, "%s", target);
                if (owned >= 0)
                    close(owned);
                owned = -1;
                cur = -1;
                if (target[0] != '/') { /* from the link's own directory */
                    owned = cur = r.dirfd;
                    r.own = false;
                }
                resolved_close(&r);
                continue;
            }
            /* too many links, or the link went meanwhile: ELOOP as the kernel */
        }
        if (fd < 0 && err == ENXIO && !(q->flags & O_NONBLOCK)) {
            /* a FIFO without a reader: the call waits, in a child of ours */
            open_blocking(h, q->id, r.dirfd, r.name, q->flags | O_NOFOLLOW, q->mode);
            resolved_close(&r);
            if (owned >= 0)
                close(owned);
            return;
        }
        resolved_close(&r);
        rc = fd < 0 ? -err : 0;
        break;
    }
    if (owned >= 0)
        close(owned);
    if (rc < 0) {
        answer(h->listener, q->id, rc, 0);
        return;
    }
    answer_opened(h, q, fd);
}

#  ifndef RENAME_EXCHANGE
#    define RENAME_EXCHANGE (1 << 1)
#  endif

static void perform(const struct helper_ctx *h, const struct names_req *q, int base0, int base1) {
    umask(q->umask & 0777);
    if (q->op == OP_OPEN) {
        do_open(h, q, base0);
        return;
    }
    /* the entry made is path[1] for link and rename, path[0] otherwise */
    struct resolved a = {.dirfd = -1}, b = {.dirfd = -1};
    bool two = q->op == OP_LINK || q->op == OP_RENAME;
    int rc = 0;
    if (two && q->op == OP_LINK && !q->path[0][0] && (q->flags & AT_EMPTY_PATH)) {
        a.dirfd = base0; /* linkat(fd, "", ..., AT_EMPTY_PATH): the file itself */
        a.name[0] = '\0';
    } else {
        rc = resolve(base0, q->path[0], &a);
    }
    if (rc == 0 && two)
        rc = resolve(base1, q->path[1], &b);
    const struct resolved *made = two ? &b : &a;
    if (rc == 0 && (refused(h, made) ||
                    (q->op == OP_RENAME && (q->flags & RENAME_EXCHANGE) && refused(h, &a))))
        rc = -EACCES;
    if (rc == 0) {
        long r = 0;
        switch (q->op) {
        case OP_MKDIR:
            r = mkdirat(a.dirfd, a.name, q->mode);
            break;
        case OP_MKNOD:
            r = mknodat(a.dirfd, a.name, q->mode, (dev_t)q->dev);
            break;
        case OP_SYMLINK:
            r = symlinkat(q->text, a.dirfd, a.name);
            break;
        case OP_LINK:
            r = linkat(a.dirfd, a.name, b.dirfd, b.name, q->flags);
            break;
        default:
            r = syscall(SYS_renameat2, a.dirfd, a.name, b.dirfd, b.name, (unsigned)q->flags);
            break;
        }
        rc = r < 0 ? -errno : 0;
    }
    resolved_close(&a);
    resolved_close(&b);
    answer(h->listener, q->id, rc, 0);
}

/* What a thread needs to start: its confinement, and a pipe to say it is
 * confined (or not: a byte 0). */
struct start {
    int sock;
    const struct config *cfg;
    const struct a3s_landlock *ll; /* NULL: none (the serving thread) */
    const struct a3s_seccomp_program *f1, *f2;
    int ready; /* write end */
    struct names_rt *rt;
};

/* Confines the calling thread as a command is (Landlock, NoNewPrivs, the
 * deny-list): per thread, the init's other threads keep their own. */
static bool confine(const struct start *s) {
    return (!s->ll || a3s_landlock_enforce(s->ll) == 0) &&
           (!s->f1 || a3s_seccomp_install(s->f1) == 0) &&
           (!s->f2 || a3s_seccomp_install(s->f2) == 0);
}

/* The helper thread: a file system context of its own (so the callers'
 * umasks it takes do not become the init's), confined like a command, then
 * serving until the init ends. It carries no names filter: it was started
 * before the filter was installed on the init. */
static void *helper_thread(void *arg) {
    const struct start *s = arg;
    int sock = s->sock;
    struct helper_ctx h = {.listener = -1, .missing = s->cfg->missing,
                           .nmissing = s->cfg->nmissing};
    struct stat st;
    bool ok = stat(s->cfg->names_root, &st) == 0 && unshare(CLONE_FS) == 0;
    h.root_dev = st.st_dev;
    h.root_ino = st.st_ino;
    ok = ok && confine(s);
    char byte = ok ? 1 : 0;
    ssize_t w = write(s->ready, &byte, 1);
    (void)w;
    if (!ok)
        return NULL; /* names_start fails */
    static struct names_req q;
    static char wire[sizeof q];
    for (;;) {
        int fds[3] = {-1, -1, -1};
        union {
            struct cmsghdr h;
            char buf[CMSG_SPACE(sizeof fds)];
        } ctl;
        struct iovec iov = {.iov_base = wire, .iov_len = sizeof wire};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                           .msg_controllen = sizeof ctl.buf};
        ssize_t n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            _exit(EXIT_SETUP); /* cannot serve: the run ends (fail closed) */
        }
        size_t nfds = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                if (nfds > 3)
                    nfds = 3;
                memcpy(fds, CMSG_DATA(c), nfds * sizeof(int));
            }
        if (!req_unpack(wire, (size_t)n, &q)) {
            for (size_t i = 0; i < nfds; i++)
                close(fds[i]);
            continue;
        }
        /* fds[0]: the listener, once, in the first message */
        if (q.op < 0) {
            if (h.listener < 0 && nfds == 1)
                h.listener = fds[0];
            continue;
        }
        /* the base fds, in order; the top bits of q.dev say which are present */
        int base[2] = {-1, -1};
        size_t k = 0;
        for (int slot = 0; slot < 2; slot++)
            if (q.dev >> 62 & (1ull << slot))
                base[slot] = k < nfds ? fds[k++] : -1;
        q.dev &= ~(3ull << 62);
        for (int slot = 0; slot < 2; slot++)
            if (q.whole[slot] && base[slot] >= 0) { /* the caller's fd link, reopened */
                snprintf(q.path[slot], sizeof q.path[slot], "/proc/self/fd/%d", base[slot]);
                base[slot] = -1;
            }
        if (h.listener >= 0)
            perform(&h, &q, base[0], base[1]);
        for (size_t i = 0; i < nfds; i++)
            close(fds[i]);
    }
}

/* ---- the thread: reads the caller, hands the call on ---------------------- */

/* A NUL-terminated string from the caller's memory (its /proc/PID/mem,
 * open: the deny-list refuses process_vm_readv), page by page; 0 or -errno. */
static int read_string(int mem, uint64_t addr, char *out, size_t cap) {
    size_t got = 0;
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        page = 4096;
    while (got < cap) {
        uint64_t at = addr + got;
        size_t chunk = (size_t)page - (size_t)(at % (uint64_t)page);
        if (chunk > cap - got)
            chunk = cap - got;
        if (at > (uint64_t)INT64_MAX)
            return -EFAULT;
        ssize_t n = pread(mem, out + got, chunk, (off_t)at);
        if (n <= 0)
            return got ? -ENAMETOOLONG : -EFAULT;
        if (memchr(out + got, '\0', (size_t)n))
            return 0;
        got += (size_t)n;
    }
    return -ENAMETOOLONG;
}

static void proc_forget(struct procent *p) {
    if (p->tid) {
        close(p->dir);
        close(p->status);
    }
    *p = (struct procent){0};
}

/* The cached entry of thread tid (fresh: opened again); NULL if it has none. */
static struct procent *proc_of(struct names_rt *rt, pid_t tid, bool fresh) {
    struct procent *p = NULL;
    for (size_t i = 0; i < PROC_MAX && !p; i++)
        if (rt->proc[i].tid == tid)
            p = &rt->proc[i];
    if (p && !fresh)
        return p;
    if (!p)
        p = &rt->proc[rt->proc_next++ % PROC_MAX];
    proc_forget(p);
    char path[32];
    snprintf(path, sizeof path, "/proc/%d", (int)tid);
    int dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return NULL;
    int status = openat(dir, "status", O_RDONLY | O_CLOEXEC);
    if (status < 0) {
        close(dir);
        return NULL;
    }
    *p = (struct procent){.tid = tid, .dir = dir, .status = status};
    return p;
}

/* /proc/TID/<name> of a caller thread, opened with flags; -1 and errno. */
static int proc_open(struct names_rt *rt, pid_t tid, const char *name, int flags) {
    struct procent *p = proc_of(rt, tid, false);
    if (p)
        return openat(p->dir, name, flags);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)tid, name);
    return open(path, flags);
}

/* The caller's umask and thread group, from its /proc/TID/status. */
static void caller_status(struct names_rt *rt, pid_t tid, unsigned *umask_out, pid_t *tgid) {
    char buf[4096];
    *umask_out = 022;
    *tgid = tid;
    ssize_t n = -1;
    for (int fresh = 0; fresh < 2 && n <= 0; fresh++) {
        struct procent *p = proc_of(rt, tid, fresh);
        if (!p)
            return;
        n = pread(p->status, buf, sizeof buf - 1, 0);
    }
    if (n <= 0)
        return;
    buf[n] = '\0';
    const char *u = strstr(buf, "\nUmask:");
    if (u)
        *umask_out = (unsigned)strtoul(u + 7, NULL, 8);
    const char *t = strstr(buf, "\nTgid:");
    if (t)
        *tgid = (pid_t)strtol(t + 6, NULL, 10);
}

/* Paths through the caller's own /proc entries: /proc/self, /proc/thread-self,
 * /dev/fd, /dev/std{in,out,err} mean the caller, not us, and the helper (in a
 * Landlock domain of its own) may not walk another process's cwd, root or fd
 * links. So a path that starts with the caller's /proc/PID/{cwd,root,fd/N}
 * (PID its thread or its process) starts from that link, opened here
 * (O_PATH), and goes on with the rest; *whole says the path was the link
 * itself (an fd reopened, as `> /dev/stderr` does: the helper opens it
 * through its own /proc/self/fd, which Landlock checks as the caller's
 * reopening). *base stays -1 for any other path; 0 or -errno. */
static int magic_prefix(pid_t tid, pid_t tgid, char *path, int *base, bool *whole) {
    *base = -1;
    *whole = false;
    static const struct {
        const char *from, *to;
    } alias[] = {
        {"/dev/stdin", "/fd/0"},     {"/dev/stdout", "/fd/1"}, {"/dev/stderr", "/fd/2"},
        {"/dev/fd", "/fd"},          {"/proc/self", ""},       {"/proc/thread-self", "/task/T"},
    };
    char tmp[PATH_MAX];
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++) {
        size_t n = strlen(alias[i].from);
        if (strncmp(path, alias[i].from, n) != 0 || (path[n] != '/' && path[n] != '\0'))
            continue;
        int w;
        if (!strcmp(alias[i].to, "/task/T"))
            w = snprintf(tmp, sizeof tmp, "/proc/%d/task/%d%s", (int)tid, (int)tid, path + n);
        else
            w = snprintf(tmp, sizeof tmp, "/proc/%d%s%s", (int)tid, alias[i].to, path + n);
        if (w < 0 || (size_t)w >= sizeof tmp)
            return -ENAMETOOLONG;
        strcpy(path, tmp);
        break;
    }
    /* /proc/PID[/task/TID]/(cwd|root|fd/N)[/rest] */
    const char *p = path;
    if (strncmp(p, "/proc/", 6) != 0)
        return 0;
    char *end;
    long pid = strtol(p + 6, &end, 10);
    if (end == p + 6 || *end != '/' || (pid != tid && pid != tgid))
        return 0;
    p = end + 1;
    if (!strncmp(p, "task/", 5)) {
        long t = strtol(p + 5, &end, 10);
        if (end == p + 5 || *end != '/' || t != tid)
            return 0;
        p = end + 1;
    }
    if (!strncmp(p, "cwd", 3) || !strncmp(p, "root", 4)) {
        p += p[0] == 'c' ? 3 : 4;
    } else if (!strncmp(p, "fd/", 3)) {
        (void)strtol(p + 3, &end, 10);
        if (end == p + 3)
            return 0;
        p = end;
    } else {
        return 0;
    }
    if (*p != '/' && *p != '\0')
        return 0;
    size_t plen = (size_t)(p - path);
    memcpy(tmp, path, plen);
    tmp[plen] = '\0';
    int fd = open(tmp, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    while (*p == '/')
        p++;
    if (!*p) {
        *whole = true;
        path[0] = '\0';
    } else {
        memmove(path, p, strlen(p) + 1);
    }
    *base = fd;
    return 0;
}

/* The directory a relative path of the caller starts from, opened O_PATH;
 * -1 for an absolute path (the sandbox's root is everyone's), or -errno. */
static int open_base(struct names_rt *rt, pid_t tid, int64_t dirfd, const char *path,
                     bool empty_ok, const struct nodump *nd) {
    if (path[0] == '/')
        return -1;
    if (!path[0] && !empty_ok)
        return -ENOENT;
    char name[32];
    if ((int)dirfd == AT_FDCWD)
        snprintf(name, sizeof name, "cwd");
    else if ((int)dirfd >= 0)
        snprintf(name, sizeof name, "fd/%d", (int)dirfd);
    else
        return -EBADF;
    int fd = proc_open(rt, tid, name, O_PATH | O_CLOEXEC);
    if (fd < 0 && nd && (errno == EACCES || errno == EPERM)) {
        /* non-dumpable: its cwd as noted, a dirfd of its never (fail closed) */
        if ((int)dirfd != AT_FDCWD || nd->cwd < 0)
            return -EACCES;
        fd = fcntl(nd->cwd, F_DUPFD_CLOEXEC, 0);
    }
    if (fd < 0)
        return errno == ENOENT ? -EBADF : -errno;
    return fd;
}

/* ---- non-dumpable callers (struct nodump) ---------------------------------- */

/* The start time of process pid (field 22 of /proc/PID/stat, readable for
 * any process); 0 if it cannot be read. */
static unsigned long long start_time(pid_t pid) {
    char proc[64], buf[1024];
    snprintf(proc, sizeof proc, "/proc/%d/stat", (int)pid);
    int fd = open(proc, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* after the command name, which may hold anything */
    for (int field = 2; p && field < 22; field++)
        p = strchr(p + 1, ' ');
    return p ? strtoull(p + 1, NULL, 10) : 0;
}

static void nodump_drop(struct names_rt *rt, struct nodump *d) {
    close(d->mem);
    if (d->cwd >= 0)
        close(d->cwd);
    *d = (struct nodump){0};
    rt->nodumps--;
}

/* The entry of process tgid if it is still that process; a stale one is
 * dropped. */
static struct nodump *nodump_find(struct names_rt *rt, pid_t tgid) {
    if (!rt->nodumps)
        return NULL;
    for (size_t i = 0; i < NODUMP_MAX; i++) {
        struct nodump *d = &rt->nodump[i];
        if (d->tgid != tgid)
            continue;
        if (start_time(tgid) == d->start)
            return d;
        nodump_drop(rt, d);
    }
    return NULL;
}


/* prctl(PR_SET_DUMPABLE): the caller waits in it, still as readable as it
 * was; what it would no longer let us open is opened now. */
static void nodump_note(struct names_rt *rt, const struct seccomp_notif *n) {
    pid_t tid = (pid_t)n->pid, tgid;
    unsigned um;
    caller_status(rt, tid, &um, &tgid);
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/%d/mem", (int)tid);
    int mem = open(proc, O_RDONLY | O_CLOEXEC);
    if (mem < 0)
        return; /* not readable already: nothing to keep (its calls are refused) */
    snprintf(proc, sizeof proc, "/proc/%d/cwd", (int)tid);
    int cwd = open(proc, O_PATH | O_CLOEXEC);
    unsigned long long start = start_time(tgid);
    /* the pid named the caller all along (not a reused one) */
    if (!start || ioctl(rt->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &n->id) != 0) {
        close(mem);
        if (cwd >= 0)
            close(cwd);
        return;
    }
    struct nodump *d = nodump_find(rt, tgid); /* again (after an exec: a new memory) */
    if (d)
        nodump_drop(rt, d);
    for (size_t i = 0; i < NODUMP_MAX && rt->nodumps == NODUMP_MAX; i++)
        if (start_time(rt->nodump[i].tgid) != rt->nodump[i].start)
            nodump_drop(rt, &rt->nodump[i]); /* full: make room from the dead */
    for (size_t i = 0; i < NODUMP_MAX; i++)
        if (!rt->nodump[i].tgid) {
            rt->nodump[i] = (struct nodump){.tgid = tgid, .start = start, .mem = mem, .cwd = cwd};
            rt->nodumps++;
            return;
        }
    close(mem); /* full of live ones: its calls will be refused */
    if (cwd >= 0)
        close(cwd);
}

/* chdir or fchdir: a non-dumpable caller's directory is not known any more. */
static void nodump_moved(struct names_rt *rt, pid_t tid) {
    if (!rt->nodumps)
        return;
    pid_t tgid;
    unsigned um;
    caller_status(rt, tid, &um, &tgid);
    struct nodump *d = nodump_find(rt, tgid);
    if (d && d->cwd >= 0) {
        close(d->cwd);
        d->cwd = -1;
    }
}

/* Reads one notified call into q and its base fds; 0 or -errno (answered
 * by the caller of this). */
static int take_args(struct names_rt *rt, const struct seccomp_notif *n, struct names_req *q,
                     int base[2], int mem, pid_t tgid, const struct nodump *nd);

static int take_call(struct names_rt *rt, const struct seccomp_notif *n, struct names_req *q,
                     int base[2]) {
    pid_t tid = (pid_t)n->pid;
    memset(q, 0, offsetof(struct names_req, path));
    q->whole[0] = q->whole[1] = false;
    q->id = n->id;
    q->path[0][0] = q->path[1][0] = q->text[0] = '\0';
    pid_t tgid;
    caller_status(rt, tid, &q->umask, &tgid);
    int mem = proc_open(rt, tid, "mem", O_RDONLY | O_CLOEXEC);
    const struct nodump *nd = NULL;
    if (mem < 0) {
        if (errno == ENOENT || errno == ESRCH)
            return -ENOENT;
        if (!(nd = nodump_find(rt, tgid)))
            return -EACCES; /* unreadable and not seen readable: fail closed */
        mem = nd->mem;
    }
    int rc = take_args(rt, n, q, base, mem, tgid, nd);
    if (!nd)
        close(mem);
    return rc;
}

static int take_args(struct names_rt *rt, const struct seccomp_notif *n, struct names_req *q,
                     int base[2], int mem, pid_t tgid, const struct nodump *nd) {
    const __u64 *a = n->data.args;
    pid_t tid = (pid_t)n->pid;
    int64_t dfd[2] = {AT_FDCWD, AT_FDCWD};
    uint64_t addr[2] = {0, 0};
    int npaths = 1;
    bool empty_ok = false;
    long nr = n->data.nr;
    switch (nr) {
#  ifdef SYS_open
    case SYS_open:
        q->op = OP_OPEN, addr[0] = a[0], q->flags = (int)a[1], q->mode = (unsigned)a[2];
        break;
#  endif
#  ifdef SYS_creat
    case SYS_creat:
        q->op = OP_OPEN, addr[0] = a[0], q->flags = O_CREAT | O_WRONLY | O_TRUNC;
        q->mode = (unsigned)a[1];
        break;
#  endif
    case SYS_openat:
        q->op = OP_OPEN, dfd[0] = (int)a[0], addr[0] = a[1], q->flags = (int)a[2];
        q->mode = (unsigned)a[3];
        break;
#  ifdef SYS_mkdir
    case SYS_mkdir:
        q->op = OP_MKDIR, addr[0] = a[0], q->mode = (unsigned)a[1];
        break;
#  endif
    case SYS_mkdirat:
        q->op = OP_MKDIR, dfd[0] = (int)a[0], addr[0] = a[1], q->mode = (unsigned)a[2];
        break;
#  ifdef SYS_mknod
    case SYS_mknod:
        q->op = OP_MKNOD, addr[0] = a[0], q->mode = (unsigned)a[1], q->dev = a[2];
        break;
#  endif
    case SYS_mknodat:
        q->op = OP_MKNOD, dfd[0] = (int)a[0], addr[0] = a[1], q->mode = (unsigned)a[2];
        q->dev = a[3];
        break;
#  ifdef SYS_symlink
    case SYS_symlink:
        q->op = OP_SYMLINK, addr[0] = a[1];
        if (read_string(mem, a[0], q->text, sizeof q->text) < 0)
            return -EFAULT;
        break;
#  endif
    case SYS_symlinkat:
        q->op = OP_SYMLINK, dfd[0] = (int)a[1], addr[0] = a[2];
        if (read_string(mem, a[0], q->text, sizeof q->text) < 0)
            return -EFAULT;
        break;
#  ifdef SYS_link
    case SYS_link:
        q->op = OP_LINK, addr[0] = a[0], addr[1] = a[1], npaths = 2;
        break;
#  endif
    case SYS_linkat:
        q->op = OP_LINK, dfd[0] = (int)a[0], addr[0] = a[1], dfd[1] = (int)a[2], addr[1] = a[3];
        q->flags = (int)a[4], npaths = 2;
        if (q->flags & ~(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH))
            return -EINVAL;
        empty_ok = q->flags & AT_EMPTY_PATH;
        break;
#  ifdef SYS_rename
    case SYS_rename:
        q->op = OP_RENAME, addr[0] = a[0], addr[1] = a[1], npaths = 2;
        break;
#  endif
#  ifdef SYS_renameat
    case SYS_renameat:
        q->op = OP_RENAME, dfd[0] = (int)a[0], addr[0] = a[1], dfd[1] = (int)a[2];
        addr[1] = a[3], npaths = 2;
        break;
#  endif
    case SYS_renameat2:
        q->op = OP_RENAME, dfd[0] = (int)a[0], addr[0] = a[1], dfd[1] = (int)a[2];
        addr[1] = a[3], q->flags = (int)a[4], npaths = 2;
        break;
    default:
        return -ENOSYS;
    }
    for (int i = 0; i < npaths; i++) {
        int rc = read_string(mem, addr[i], q->path[i], sizeof q->path[i]);
        if (rc < 0)
            return rc;
        bool empty = !q->path[i][0], whole = false;
        if (empty && !(i == 0 && empty_ok))
            return -ENOENT;
        int fd = -1;
        if ((rc = magic_prefix(tid, tgid, q->path[i], &fd, &whole)) < 0)
            return rc;
        q->whole[i] = whole;
        if (fd < 0 && (fd = open_base(rt, tid, dfd[i], q->path[i], empty, nd)) < -1)
            return fd;
        base[i] = fd;
    }
    return 0;
}

/* The serving thread: under the deny-list (not Landlock: a domain of its
 * own would keep it from reading the commands, which are in another). */
static void *names_thread(void *arg) {
    const struct start *st = arg;
    struct names_rt *rt = st->rt;
    char byte = confine(st) ? 1 : 0;
    ssize_t wr = write(st->ready, &byte, 1);
    (void)wr;
    if (!byte)
        return NULL;
    pid_t self = getpid();
    static union {
        struct seccomp_notif n;
        unsigned char bytes[512];
    } req;
    static struct names_req q;
    for (;;) {
        memset(&req, 0, sizeof req);
        if (ioctl(rt->listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) {
            if (errno == EINTR || errno == ENOENT)
                continue;
            _exit(EXIT_SETUP); /* no one could answer the commands' calls any more */
        }
        const struct seccomp_notif *n = &req.n;
        if ((pid_t)n->pid == self) {
            answer_continue(rt->listener, n->id); /* the init's own: no command wrote it */
            continue;
        }
        long nr = n->data.nr;
        if (nr == SYS_execve || nr == SYS_execveat) {
            struct names_note note = {.id = n->id, .pid = (int32_t)n->pid, .exec = 1};
            if (!atomic_load(&rt->shared.execs_checked))
                answer_continue(rt->listener, n->id); /* no rules: nothing to check */
            else if (write(rt->link_pipe, &note, sizeof note) != (ssize_t)sizeof note)
                answer(rt->listener, n->id, EAGAIN, 0); /* never unchecked (fail closed) */
            continue;
        }
        if (nr == SYS_linkat
#  ifdef SYS_link
            || nr == SYS_link
#  endif
        ) {
            struct names_note note = {.exec = 0};
            if (write(rt->link_pipe, &note, sizeof note) != (ssize_t)sizeof note)
                atomic_store(&rt->shared.link_missed, true); /* full: said at the next take */
        }
        int base[2] = {-1, -1};
        if (nr == SYS_prctl) { /* PR_SET_DUMPABLE (the filter): makes no name */
            nodump_note(rt, n);
            /* with exec rules, the main thread follows it before it becomes
             * non-dumpable (exectrace_nodump), and answers */
            struct names_note note = {.id = n->id, .pid = (int32_t)n->pid, .exec = NOTE_NODUMP};
            if (n->data.args[1] != 0 || !atomic_load(&rt->shared.execs_checked))
                answer_continue(rt->listener, n->id);
            else if (write(rt->link_pipe, &note, sizeof note) != (ssize_t)sizeof note)
                answer(rt->listener, n->id, EAGAIN, 0); /* never unfollowed (fail closed) */
            continue;
        }
        if (nr == SYS_chdir || nr == SYS_fchdir) { /* makes no name */
            nodump_moved(rt, (pid_t)n->pid);
            answer_continue(rt->listener, n->id);
            continue;
        }
        int rc = take_call(rt, n, &q, base);
        /* the pid named the caller all along: its /proc entries were its own */
        if (rc == 0 && ioctl(rt->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &n->id) != 0)
            rc = -ENOENT;
        if (rc == 0) {
            int fds[2];
            size_t nfds = 0;
            for (int s = 0; s < 2; s++)
                if (base[s] >= 0) {
                    fds[nfds++] = base[s];
                    q.dev |= (1ull << s) << 62;
                }
            union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof fds)];
            } ctl;
            memset(&ctl, 0, sizeof ctl);
            struct iovec iov[4];
            size_t len = req_pack(&q, iov);
            struct msghdr m = {.msg_iov = iov, .msg_iovlen = 4};
            if (nfds) {
                m.msg_control = ctl.buf;
                m.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
                struct cmsghdr *c = CMSG_FIRSTHDR(&m);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
                memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
            }
            ssize_t s;
            do
                s = sendmsg(rt->helper, &m, MSG_NOSIGNAL);
            while (s < 0 && errno == EINTR);
            if (s != (ssize_t)len)
                _exit(EXIT_SETUP); /* the helper is gone: nothing can be made safely */
        } else {
            answer(rt->listener, n->id, rc, 0);
        }
        for (int s = 0; s < 2; s++)
            if (base[s] >= 0)
                close(base[s]);
    }
    return NULL;
}

/* Starts fn in a thread that takes no signal (the init's signalfd gets
 * them all) and waits until it says it is confined; false if not. */
static bool start_thread(void *(*fn)(void *), struct start *s) {
    int ready[2];
    if (pipe2(ready, O_CLOEXEC) < 0)
        return false;
    s->ready = ready[1];
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, fn, s);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    char byte = 0;
    ssize_t n = -1;
    if (rc == 0)
        do
            n = read(ready[0], &byte, 1);
        while (n < 0 && errno == EINTR);
    close(ready[0]);
    close(ready[1]);
    return n == 1 && byte == 1;
}

int names_start(struct config *cfg, const struct a3s_landlock *ll,
                const struct a3s_seccomp_program *f1, const struct a3s_seccomp_program *f2,
                char *why, size_t cap) {
    static struct names_rt rt;
    static struct start helper, server;
    int sv[2], lp[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0 ||
        pipe2(lp, O_CLOEXEC | O_NONBLOCK) < 0) {
        snprintf(why, cap, "names: socketpair: %s", strerror(errno));
        return -1;
    }
    int big = 1 << 20; /* a request holds three paths */
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    /* the helper first: the filter installed next is not on it */
    helper = (struct start){.sock = sv[1], .cfg = cfg, .ll = ll, .f1 = f1, .f2 = f2};
    if (!start_thread(helper_thread, &helper)) {
        snprintf(why, cap, "names: cannot start the confined helper");
        return -1;
    }
    int listener = install_filter(cfg->exec_notify);
    if (listener < 0) {
        snprintf(why, cap, "names: cannot install the filter: %s", strerror(-listener));
        return -1;
    }
    /* Linux 6.6: a caller and whoever answers it are woken on the waker's
     * CPU, as a hand-off (each call is a round trip); older kernels refuse
     * the flag, and wake as before */
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) != 0) {
    }
    /* the listener to the helper, which answers every call */
    struct names_req *hello = calloc(1, sizeof *hello);
    if (!hello) {
        snprintf(why, cap, "names: out of memory");
        return -1;
    }
    hello->op = -1;
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    memset(&ctl, 0, sizeof ctl);
    struct iovec iov[4];
    req_pack(hello, iov);
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = 4, .msg_control = ctl.buf,
                       .msg_controllen = sizeof ctl.buf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &listener, sizeof(int));
    ssize_t sent = sendmsg(sv[0], &m, MSG_NOSIGNAL);
    free(hello);
    if (sent < 0) {
        snprintf(why, cap, "names: cannot reach the helper: %s", strerror(errno));
        return -1;
    }
    rt = (struct names_rt){.listener = listener, .helper = sv[0], .link_pipe = lp[1]};
    rt.shared.listener = listener;
    cfg->names = &rt.shared;
    server = (struct start){.sock = -1, .cfg = cfg, .f1 = f1, .f2 = f2, .rt = &rt};
    if (!start_thread(names_thread, &server)) {
        snprintf(why, cap, "names: cannot start the supervisor thread");
        return -1;
    }
    return lp[0];
}

#else /* !NAMES_SUPPORTED */

int names_start(struct config *cfg, const struct a3s_landlock *ll,
                const struct a3s_seccomp_program *f1, const struct a3s_seccomp_program *f2,
                char *why, size_t cap) {
    (void)cfg, (void)ll, (void)f1, (void)f2;
    snprintf(why, cap, "names: this build cannot emulate calls (no user notification)");
    return -1;
}

#endif

int links_take(const struct config *cfg, struct exectrace *t, bool *linked) {
    if (!cfg->nmissing) {
        int rc = exectrace_take(t, cfg->links_fd, linked);
        return rc < 0 ? rc : 1;
    }
#ifdef NAMES_SUPPORTED
    struct names_shared *sh = cfg->names;
    if (atomic_exchange(&sh->link_missed, false))
        *linked = true;
    struct names_note notes[64];
    ssize_t n;
    while ((n = read(cfg->links_fd, notes, sizeof notes)) > 0) {
        for (size_t i = 0; i < (size_t)n / sizeof *notes; i++) {
            if (!notes[i].exec) {
                *linked = true;
                continue;
            }
            pid_t tid = (pid_t)notes[i].pid;
            int rc = notes[i].exec == NOTE_NODUMP
                         ? exectrace_nodump(t, sh->listener, tid, notes[i].id)
                         : exectrace_answer(t, sh->listener, tid, notes[i].id);
            if (rc < 0)
                return rc;
        }
        if (n < (ssize_t)sizeof notes)
            break;
    }
#endif
    return 1;
}
