/* credscan.c - find the credential files of a workspace without re-reading it each time.
 *
 * The sandbox masks credential files (.env*, .netrc, agent auth files ...)
 * anywhere in the workspace. Reading a 100,000-file tree before every
 * command would cost more than the sandbox itself, so the scan keeps a tree
 * of the workspace's directories and their credential entries, and learns
 * what changed in two ways:
 *  - inotify: every directory read is watched (the watch is added before
 *    the read, so no change between the two is lost); a directory with no
 *    event since it was read is current, and costs no system call at all;
 *  - metadata, where a watch cannot be had (the handle's watch budget, the
 *    per-user limit, an inotify queue overflow): a directory whose inode,
 *    mtime and ctime did not change still has the same entries, unless it
 *    was modified within RACY_NS of the scan that read it (timestamps are
 *    coarse).
 */
#define _GNU_SOURCE
#include "credscan.h"

#if defined(__linux__)

#include "posix_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/inotify.h>
#include <unistd.h>

#define RACY_NS 2000000000LL /* two seconds */
#define MAX_DEPTH 1024

struct node {
    char *name;
    dev_t dev;
    ino_t ino;
    int64_t mtime_ns, ctime_ns;
    bool read;  /* entries below were read at least once */
    bool fresh; /* metadata trusted (not racy) */
    bool dirty; /* an inotify event arrived since the entries were read */
    int wd;     /* inotify watch, -1 if none */
    struct node **children;
    size_t nchildren;
    struct a3s_strvec creds; /* credential entries of this directory: 'f'/'d'/'l' + name */
};

struct a3s_credscan {
    char *root;
    struct node *top;
    int ifd;               /* inotify instance, -1 if unavailable */
    struct node **by_wd;   /* watch descriptor -> node */
    size_t nwd;
    uint64_t deadline_ns;  /* CLOCK_MONOTONIC; 0: none */
    int cancel_fd;         /* -1: none */
    size_t watches;        /* held now */
    uint64_t budget;       /* at most this many (a3s_credscan_set_watch_budget) */
    /* Nothing changed since the last run: every node was watched and no event
     * has arrived since, so `last` (what it found) still holds. */
    bool quiet;
    struct a3s_strvec last;
    bool released; /* a3s_credscan_release: the next run makes the instance and tree again */
    bool unwatched_first; /* a3s_credscan_watch_later: the first run makes no instance */
};

#define WATCH_MASK                                                                             \
    (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF |      \
     IN_ONLYDIR | IN_DONT_FOLLOW)

static const char *const CRED_FILES[] = {".netrc", "_netrc", ".npmrc", ".pypirc",
                                         ".git-credentials", ".claude.json", ".pgpass",
                                         ".boto", ".s3cfg"};
static const char *const CRED_DIRS[] = {".ssh", ".gnupg", ".aws", ".password-store"};
/* (directory, file) pairs: agent and tool credential files */
static const char *const CRED_PAIRS[][2] = {
    {".a3s", "os-auth.json"},   {".codex", "auth.json"}, {".claude", ".credentials.json"},
    {".docker", "config.json"}, {".kube", "config"},     {".cargo", "credentials.toml"},
    {".cargo", "credentials"},  {".config", "gh"},
};
/* Trees that are not the user's own files and can be huge. */
static const char *const SKIP_DIRS[] = {".git", "node_modules", "target", ".venv", "__pycache__"};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static bool eq_nocase(const char *a, const char *b) {
    for (; *a && *b; a++, b++)
        if (a3s_lower((unsigned char)*a) != a3s_lower((unsigned char)*b))
            return false;
    return *a == *b;
}

static bool in(const char *name, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (eq_nocase(name, list[i]))
            return true;
    return false;
}

static bool in_exact(const char *name, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(name, list[i]))
            return true;
    return false;
}

/* Is `name` inside directory `dir` (its last component) a credential? */
static bool is_credential(const char *dir, const char *name, bool is_dir) {
    if (name[0] == '.' && a3s_lower((unsigned char)name[1]) == 'e' &&
        a3s_lower((unsigned char)name[2]) == 'n' && a3s_lower((unsigned char)name[3]) == 'v')
        return true; /* .env, .env.local, .envrc, .ENV ... */
    if (is_dir)
        return in(name, CRED_DIRS, COUNT(CRED_DIRS)) ||
               (dir && eq_nocase(dir, ".config") && eq_nocase(name, "gh"));
    if (in(name, CRED_FILES, COUNT(CRED_FILES)))
        return true;
    for (size_t i = 0; dir && i < COUNT(CRED_PAIRS); i++)
        if (eq_nocase(dir, CRED_PAIRS[i][0]) && eq_nocase(name, CRED_PAIRS[i][1]))
            return true;
    return false;
}

/* Drops n's watch if n still owns it (a moved directory keeps its inode, so
 * its new node may have been handed the same watch descriptor). */
static void unwatch(struct a3s_credscan *cs, struct node *n) {
    if (n->wd >= 0 && (size_t)n->wd < cs->nwd && cs->by_wd[n->wd] == n) {
        cs->by_wd[n->wd] = NULL;
        cs->watches--;
        inotify_rm_watch(cs->ifd, n->wd);
    }
    n->wd = -1;
}

static void node_free(struct a3s_credscan *cs, struct node *n) {
    if (!n)
        return;
    for (size_t i = 0; i < n->nchildren; i++)
        node_free(cs, n->children[i]);
    unwatch(cs, n);
    free(n->children);
    a3s_strvec_free(&n->creds);
    free(n->name);
    free(n);
}

static struct node *node_new(const char *name) {
    struct node *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->wd = -1;
    n->name = strdup(name ? name : "");
    if (!n->name) {
        free(n);
        return NULL;
    }
    return n;
}

static int64_t ns(struct timespec t) { return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec; }

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return ns(t);
}

static int cmp_nodes(const void *a, const void *b) {
    return strcmp((*(struct node *const *)a)->name, (*(struct node *const *)b)->name);
}

/* Watches n (at path) before its entries are read; false if no watch can be
 * had (none left in the budget, or the kernel refuses one). */
static bool watch(struct a3s_credscan *cs, struct node *n, const char *path) {
    if (cs->ifd < 0 || n->wd >= 0)
        return n->wd >= 0;
    if (cs->watches >= cs->budget)
        return false;
    int wd = inotify_add_watch(cs->ifd, path, WATCH_MASK);
    if (wd < 0)
        return false;
    if ((size_t)wd >= cs->nwd) {
        size_t cap = cs->nwd ? cs->nwd : 1024;
        while (cap <= (size_t)wd)
            cap *= 2;
        struct node **grown = realloc(cs->by_wd, cap * sizeof *grown);
        if (!grown) {
            inotify_rm_watch(cs->ifd, wd);
            return false;
        }
        memset(grown + cs->nwd, 0, (cap - cs->nwd) * sizeof *grown);
        cs->by_wd = grown;
        cs->nwd = cap;
    }
    if (cs->by_wd[wd] && cs->by_wd[wd] != n)
        cs->by_wd[wd]->wd = -1; /* the same directory watched through another node */
    else if (!cs->by_wd[wd])
        cs->watches++;
    cs->by_wd[wd] = n;
    n->wd = wd;
    return true;
}

static void mark_all_dirty(struct node *n) {
    n->dirty = true;
    for (size_t i = 0; i < n->nchildren; i++)
        mark_all_dirty(n->children[i]);
}

/* Applies the queued inotify events: each names a directory whose entries changed. */
static void drain_events(struct a3s_credscan *cs) {
    if (cs->ifd < 0)
        return;
    char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        ssize_t len = read(cs->ifd, buf, sizeof buf);
        if (len <= 0)
            return; /* EAGAIN: nothing more */
        cs->quiet = false;
        for (char *p = buf; p < buf + len;) {
            const struct inotify_event *ev = (const struct inotify_event *)p;
            p += sizeof *ev + ev->len;
            if (ev->mask & IN_Q_OVERFLOW) {
                if (cs->top)
                    mark_all_dirty(cs->top);
                continue;
            }
            if (ev->wd < 0 || (size_t)ev->wd >= cs->nwd || !cs->by_wd[ev->wd])
                continue;
            struct node *n = cs->by_wd[ev->wd];
            n->dirty = true;
            if (ev->mask & IN_IGNORED) { /* the kernel dropped the watch */
                cs->by_wd[ev->wd] = NULL;
                cs->watches--;
                n->wd = -1;
            }
        }
    }
}

/* Re-reads the entries of the directory open as fd into n, keeping the
 * nodes (caches and watches) of subdirectories that are still there. */
static int reread(struct a3s_credscan *cs, struct node *n, int fd, const char *dirname,
                  a3s_error *err) {
    int dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
    if (!d) {
        if (dup >= 0)
            close(dup);
        return a3s_fail(err, A3S_E_SYSTEM, errno, 0, "credential scan: cannot read a directory");
    }
    struct node **old = n->children;
    size_t nold = n->nchildren;
    n->children = NULL;
    n->nchildren = 0;
    a3s_strvec_free(&n->creds);
    size_t cap = 0;
    int rc = A3S_OK;
    struct dirent *e;
    while (rc == A3S_OK && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        unsigned char type = e->d_type;
        if (type == DT_UNKNOWN) {
            struct stat st;
            if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                continue;
            type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
        }
        bool is_dir = type == DT_DIR;
        /* a symlink may stand for a credential file or directory: test both */
        if (is_credential(dirname, e->d_name, is_dir) ||
            (type == DT_LNK && is_credential(dirname, e->d_name, true))) {
            char tag[2] = {is_dir ? 'd' : (type == DT_LNK ? 'l' : 'f'), 0};
            a3s_strvec_push2(&n->creds, tag, e->d_name);
            if (n->creds.failed)
                rc = A3S_E_NOMEM;
            continue; /* a masked directory is not scanned further */
        }
        if (!is_dir || in_exact(e->d_name, SKIP_DIRS, COUNT(SKIP_DIRS)))
            continue;
        if (n->nchildren == cap) {
            cap = cap ? 2 * cap : 8;
            struct node **c = realloc(n->children, cap * sizeof *c);
            if (!c) {
                rc = A3S_E_NOMEM;
                break;
            }
            n->children = c;
        }
        struct node *child = NULL;
        for (size_t i = 0; i < nold && !child; i++) {
            if (old[i] && !strcmp(old[i]->name, e->d_name)) {
                child = old[i];
                old[i] = NULL;
            }
        }
        if (!child && !(child = node_new(e->d_name))) {
            rc = A3S_E_NOMEM;
            break;
        }
        n->children[n->nchildren++] = child;
    }
    closedir(d);
    for (size_t i = 0; i < nold; i++)
        node_free(cs, old[i]); /* gone: drop their watches too */
    free(old);
    if (rc == A3S_E_NOMEM)
        return a3s_fail(err, rc, 0, 0, "out of memory scanning the workspace");
    if (n->nchildren > 1)
        qsort(n->children, n->nchildren, sizeof *n->children, cmp_nodes);
    return rc;
}

struct walk {
    struct a3s_credscan *cs;
    struct a3s_strvec *found;
    char path[4096];
    int64_t started;
    a3s_error *err;
    bool unsettled; /* a node has no watch, or must be read again next time */
};

static void report(struct walk *w, size_t len, const char *tagged) {
    /* "f/abs/path" or "d/abs/path" */
    char buf[4096 + 260];
    int n = snprintf(buf, sizeof buf, "%c%.*s/%s", tagged[0], (int)len, w->path, tagged + 1);
    if (n > 0 && (size_t)n < sizeof buf)
        a3s_strvec_push(w->found, buf);
    else
        w->found->failed = true;
}

/* Brings node n (the directory at w->path[0..len)) up to date. 1 if it is
 * still a directory, 0 if it vanished or was replaced, negative on error. */
static int refresh(struct walk *w, struct node *n, const char *dirname) {
    /* watched and quiet since it was read: current without a system call */
    if (n->read && n->wd >= 0 && !n->dirty)
        return 1;
    /* no watch to be had (the budget is spent): one lstat tells whether the
     * directory read before is unchanged */
    struct stat st;
    if (n->read && !n->dirty && n->fresh && (w->cs->ifd < 0 || w->cs->watches >= w->cs->budget) &&
        lstat(w->path, &st) == 0 && S_ISDIR(st.st_mode) && n->dev == st.st_dev &&
        n->ino == st.st_ino && n->mtime_ns == ns(st.st_mtim) && n->ctime_ns == ns(st.st_ctim)) {
        n->fresh = w->started - n->mtime_ns > RACY_NS && w->started - n->ctime_ns > RACY_NS;
        return 1;
    }
    int fd = open(w->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP)
            return 0;
        return a3s_fail(w->err, A3S_E_REFUSED, errno, 0,
                        "cannot open %s to check it for credential files: %s", w->path,
                        strerror(errno));
    }
    bool watched = watch(w->cs, n, w->path); /* before reading: no change is lost */
    if (fstat(fd, &st) < 0) {
        close(fd);
        return 0;
    }
    bool same = n->read && !n->dirty && n->fresh && n->dev == st.st_dev && n->ino == st.st_ino &&
                n->mtime_ns == ns(st.st_mtim) && n->ctime_ns == ns(st.st_ctim);
    int rc = 1;
    if (!same) {
        n->dirty = false;
        rc = reread(w->cs, n, fd, dirname, w->err);
        rc = rc == A3S_OK ? 1 : rc;
        n->read = rc == 1;
    }
    n->dev = st.st_dev;
    n->ino = st.st_ino;
    n->mtime_ns = ns(st.st_mtim);
    n->ctime_ns = ns(st.st_ctim);
    /* without a watch, trust these entries next time only if not "racy" */
    n->fresh = watched || (w->started - n->mtime_ns > RACY_NS && w->started - n->ctime_ns > RACY_NS);
    close(fd);
    return rc;
}

/* A3S_OK, or the failure of a scan past its deadline or cancelled. */
static int interrupted(const struct a3s_credscan *cs, a3s_error *err) {
    int why = a3s_stop_reason(cs->deadline_ns, cs->cancel_fd);
    if (why)
        return a3s_fail(err, A3S_E_SYSTEM, why, 0,
                        "%s while the workspace was checked for credential files",
                        why == ETIMEDOUT ? "the command's time ran out" : "cancelled");
    return A3S_OK;
}

/* Visits node n at w->path[0..len): refreshes it, reports its credentials, descends. */
static int visit(struct walk *w, struct node *n, size_t len, const char *dirname, int depth) {
    int rc = w->cs->deadline_ns || w->cs->cancel_fd >= 0 ? interrupted(w->cs, w->err) : A3S_OK;
    if (rc != A3S_OK)
        return rc;
    rc = refresh(w, n, dirname);
    if (rc <= 0)
        return rc;
    if (n->wd < 0)
        w->unsettled = true;
    for (size_t i = 0; i < n->creds.len; i++)
        report(w, len, n->creds.items[i]);
    if (depth >= MAX_DEPTH && n->nchildren)
        return a3s_fail(w->err, A3S_E_REFUSED, 0, depth,
                        "the workspace nests directories deeper than %d levels (at %s): it "
                        "cannot be checked for credential files",
                        MAX_DEPTH, w->path);
    for (size_t i = 0; i < n->nchildren; i++) {
        struct node *c = n->children[i];
        size_t nl = strlen(c->name);
        if (len + 1 + nl >= sizeof w->path)
            return a3s_fail(w->err, A3S_E_REFUSED, 0, 0,
                            "a path in the workspace is longer than %zu bytes: it cannot be "
                            "checked for credential files",
                            sizeof w->path);
        w->path[len] = '/';
        memcpy(w->path + len + 1, c->name, nl + 1);
        rc = visit(w, c, len + 1 + nl, c->name, depth + 1);
        w->path[len] = '\0';
        if (rc < 0)
            return rc;
        if (rc == 0) {
            n->dirty = true; /* a child vanished: read this directory again next time */
            n->fresh = false;
            w->unsettled = true;
        }
    }
    return 1;
}

int a3s_credscan_new(const char *root, struct a3s_credscan **out, a3s_error *err) {
    struct a3s_credscan *cs = calloc(1, sizeof *cs);
    if (!cs || !(cs->root = strdup(root)) || !(cs->top = node_new(""))) {
        if (cs)
            free(cs->root);
        free(cs);
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory");
    }
    cs->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    cs->cancel_fd = -1;
    cs->budget = UINT64_MAX;
    *out = cs;
    return A3S_OK;
}

void a3s_credscan_watch_later(struct a3s_credscan *cs) {
    if (cs->released || (cs->top && cs->top->read))
        return; /* only before the first run */
    if (cs->ifd >= 0)
        close(cs->ifd); /* no watch yet: closing it waits for nothing */
    cs->ifd = -1;
    cs->released = true; /* the run after the first makes the instance */
    cs->unwatched_first = true;
}

void a3s_credscan_set_watch_budget(struct a3s_credscan *cs, uint64_t budget) {
    cs->budget = budget;
}

size_t a3s_credscan_watches(const struct a3s_credscan *cs) {
    return cs->watches;
}

/* Appends copies of from->items[first..] to to. */
static void copy_tail(struct a3s_strvec *to, const struct a3s_strvec *from, size_t first) {
    for (size_t i = first; i < from->len; i++)
        a3s_strvec_push(to, from->items[i]);
}

int a3s_credscan_run(struct a3s_credscan *cs, struct a3s_strvec *found, a3s_error *err) {
    struct walk w = {.cs = cs, .found = found, .started = now_ns(), .err = err};
    size_t len = strlen(cs->root);
    if (len >= sizeof w.path)
        return a3s_fail(err, A3S_E_TOO_LARGE, 0, 0, "workspace path too long");
    memcpy(w.path, cs->root, len + 1);
    if (cs->unwatched_first) {
        cs->unwatched_first = false; /* this run reads every directory, unwatched */
    } else if (cs->released) {
        cs->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC); /* -1: walk every time */
        cs->released = false;
    }
    if (!cs->top && !(cs->top = node_new("")))
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory");
    drain_events(cs);
    size_t first = found->len;
    if (cs->quiet) { /* no event since a run that watched everything: no walk at all */
        copy_tail(found, &cs->last, 0);
    } else {
        int rc = visit(&w, cs->top, len, NULL, 0);
        if (rc == 0)
            return a3s_fail(err, A3S_E_SYSTEM, errno, 0, "cannot open the workspace %s",
                            cs->root);
        if (rc < 0)
            return rc;
        a3s_strvec_free(&cs->last);
        copy_tail(&cs->last, found, first);
        cs->quiet = cs->ifd >= 0 && !w.unsettled && !cs->last.failed;
    }
    if (found->failed)
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory listing credential files");
    return A3S_OK;
}

void a3s_credscan_set_deadline(struct a3s_credscan *cs, uint64_t deadline_ns, int cancel_fd) {
    cs->deadline_ns = deadline_ns;
    cs->cancel_fd = cancel_fd;
}

void a3s_credscan_release(struct a3s_credscan *cs) {
    int ifd = cs->ifd;
    cs->ifd = -1; /* every watch goes with the instance: none is removed one by one */
    node_free(cs, cs->top);
    if (ifd >= 0)
        close(ifd);
    cs->top = NULL; /* made again by the next run */
    free(cs->by_wd);
    cs->by_wd = NULL;
    cs->nwd = 0;
    cs->watches = 0;
    cs->quiet = false;
    a3s_strvec_free(&cs->last);
    cs->released = true;
}

void a3s_credscan_free(struct a3s_credscan *cs) {
    if (!cs)
        return;
    node_free(cs, cs->top);
    a3s_strvec_free(&cs->last);
    if (cs->ifd >= 0)
        close(cs->ifd);
    free(cs->by_wd);
    free(cs->root);
    free(cs);
}

#else
typedef int a3s_credscan_unused;
#endif
