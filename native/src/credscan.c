/* credscan.c - find the credential files of a workspace without re-reading it each time.
 *
 * The sandbox masks credential files (.env*, .netrc, agent auth files ...)
 * anywhere in the workspace. Reading a 100,000-file tree before every
 * command would cost more than the sandbox itself, so the scan keeps a tree
 * of directories with their inode, mtime and ctime: a directory whose
 * metadata did not change since the last scan still has the same entries,
 * so only its subdirectories are visited (one fstatat each), not its files.
 * A directory modified within RACY_NS of the scan that read it is read
 * again next time (the "racy git" problem: timestamps are coarse).
 */
#define _GNU_SOURCE
#include "credscan.h"

#if defined(__linux__)

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RACY_NS 2000000000LL /* two seconds */
#define MAX_DEPTH 1024

struct node {
    char *name;
    dev_t dev;
    ino_t ino;
    int64_t mtime_ns, ctime_ns;
    bool fresh; /* metadata trusted: entries below are current */
    struct node *children;
    size_t nchildren;
    struct a3s_strvec creds; /* credential entries of this directory: 'f' or 'd' + name */
};

struct a3s_credscan {
    char *root;
    struct node top;
    bool have_top;
};

static const char *const CRED_FILES[] = {".netrc", "_netrc", ".npmrc", ".pypirc",
                                         ".git-credentials", ".claude.json", ".pgpass",
                                         ".boto", ".s3cfg"};
static const char *const CRED_DIRS[] = {".ssh", ".gnupg", ".aws"};
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

static void node_clear(struct node *n) {
    for (size_t i = 0; i < n->nchildren; i++) {
        node_clear(&n->children[i]);
        free(n->children[i].name);
    }
    free(n->children);
    n->children = NULL;
    n->nchildren = 0;
    a3s_strvec_free(&n->creds);
}

static int64_t ns(struct timespec t) { return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec; }

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return ns(t);
}

static int cmp_names(const void *a, const void *b) {
    return strcmp(((const struct node *)a)->name, ((const struct node *)b)->name);
}

/* Re-reads the entries of directory fd into n, keeping the caches of
 * subdirectories that are still there. */
static int reread(struct node *n, int fd, const char *dirname, a3s_error *err) {
    int dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    DIR *d = dup >= 0 ? fdopendir(dup) : NULL;
    if (!d) {
        if (dup >= 0)
            close(dup);
        return a3s_fail(err, A3S_E_SYSTEM, errno, 0, "credential scan: cannot read a directory");
    }
    struct node *old = n->children;
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
            struct node *c = realloc(n->children, cap * sizeof *c);
            if (!c) {
                rc = A3S_E_NOMEM;
                break;
            }
            n->children = c;
        }
        struct node *child = &n->children[n->nchildren];
        memset(child, 0, sizeof *child);
        child->name = strdup(e->d_name);
        if (!child->name) {
            rc = A3S_E_NOMEM;
            break;
        }
        n->nchildren++;
        /* keep what we knew about it */
        for (size_t i = 0; i < nold; i++) {
            if (old[i].name && !strcmp(old[i].name, child->name)) {
                free(child->name);
                *child = old[i];
                old[i].name = NULL;
                old[i].children = NULL;
                old[i].nchildren = 0;
                old[i].creds = (struct a3s_strvec){0};
                break;
            }
        }
    }
    closedir(d);
    for (size_t i = 0; i < nold; i++) {
        node_clear(&old[i]);
        free(old[i].name);
    }
    free(old);
    if (rc == A3S_E_NOMEM)
        return a3s_fail(err, rc, 0, 0, "out of memory scanning the workspace");
    if (n->nchildren > 1)
        qsort(n->children, n->nchildren, sizeof *n->children, cmp_names);
    return rc;
}

struct walk {
    struct a3s_strvec *found;
    char path[4096];
    int64_t started;
    a3s_error *err;
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

/* Visits the directory at w->path[0..len) (fd open on it), stat'ed as st. */
static int visit(struct walk *w, struct node *n, int fd, const struct stat *st, size_t len,
                 const char *dirname, int depth) {
    bool same = n->fresh && n->dev == st->st_dev && n->ino == st->st_ino &&
                n->mtime_ns == ns(st->st_mtim) && n->ctime_ns == ns(st->st_ctim);
    if (!same) {
        int rc = reread(n, fd, dirname, w->err);
        if (rc)
            return rc;
        n->dev = st->st_dev;
        n->ino = st->st_ino;
        n->mtime_ns = ns(st->st_mtim);
        n->ctime_ns = ns(st->st_ctim);
    }
    /* trust these entries next time only if the directory is not "racy" */
    n->fresh = w->started - n->mtime_ns > RACY_NS && w->started - n->ctime_ns > RACY_NS;
    for (size_t i = 0; i < n->creds.len; i++)
        report(w, len, n->creds.items[i]);
    if (depth >= MAX_DEPTH && n->nchildren)
        return a3s_fail(w->err, A3S_E_REFUSED, 0, depth,
                        "the workspace nests directories deeper than %d levels (at %s): it "
                        "cannot be checked for credential files",
                        MAX_DEPTH, w->path);
    for (size_t i = 0; i < n->nchildren; i++) {
        struct node *c = &n->children[i];
        size_t nl = strlen(c->name);
        if (len + 1 + nl >= sizeof w->path)
            return a3s_fail(w->err, A3S_E_REFUSED, 0, 0,
                            "a path in the workspace is longer than %zu bytes: it cannot be "
                            "checked for credential files",
                            sizeof w->path);
        /* a cached leaf directory whose metadata did not change needs one
         * fstatat and no open: its entries, and so its credentials, are known */
        struct stat cst;
        if (c->fresh && c->nchildren == 0 &&
            fstatat(fd, c->name, &cst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(cst.st_mode) &&
            c->dev == cst.st_dev && c->ino == cst.st_ino && c->mtime_ns == ns(cst.st_mtim) &&
            c->ctime_ns == ns(cst.st_ctim)) {
            c->fresh = w->started - c->mtime_ns > RACY_NS && w->started - c->ctime_ns > RACY_NS;
            if (c->creds.len) {
                w->path[len] = '/';
                memcpy(w->path + len + 1, c->name, nl + 1);
                for (size_t k = 0; k < c->creds.len; k++)
                    report(w, len + 1 + nl, c->creds.items[k]);
                w->path[len] = '\0';
            }
            continue;
        }
        int cfd = openat(fd, c->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (cfd < 0) {
            if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP)
                return a3s_fail(w->err, A3S_E_REFUSED, errno, 0,
                                "cannot open %s/%s to check it for credential files: %s",
                                w->path, c->name, strerror(errno));
            c->fresh = false; /* vanished or replaced: re-read its parent next time */
            n->fresh = false;
            continue;
        }
        if (fstat(cfd, &cst) == 0) {
            w->path[len] = '/';
            memcpy(w->path + len + 1, c->name, nl + 1);
            int rc = visit(w, c, cfd, &cst, len + 1 + nl, c->name, depth + 1);
            w->path[len] = '\0';
            if (rc) {
                close(cfd);
                return rc;
            }
        }
        close(cfd);
    }
    return A3S_OK;
}

int a3s_credscan_new(const char *root, struct a3s_credscan **out, a3s_error *err) {
    struct a3s_credscan *cs = calloc(1, sizeof *cs);
    if (!cs || !(cs->root = strdup(root))) {
        free(cs);
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory");
    }
    *out = cs;
    return A3S_OK;
}

int a3s_credscan_run(struct a3s_credscan *cs, struct a3s_strvec *found, a3s_error *err) {
    struct walk w = {.found = found, .started = now_ns(), .err = err};
    size_t len = strlen(cs->root);
    if (len >= sizeof w.path)
        return a3s_fail(err, A3S_E_TOO_LARGE, 0, 0, "workspace path too long");
    memcpy(w.path, cs->root, len + 1);
    int fd = open(cs->root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return a3s_fail(err, A3S_E_SYSTEM, errno, 0, "cannot open the workspace %s: %s",
                        cs->root, strerror(errno));
    struct stat st;
    int rc = fstat(fd, &st) == 0 ? visit(&w, &cs->top, fd, &st, len, NULL, 0)
                                 : a3s_fail(err, A3S_E_SYSTEM, errno, 0, "fstat workspace");
    close(fd);
    if (rc == A3S_OK && found->failed)
        rc = a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory listing credential files");
    return rc;
}

void a3s_credscan_free(struct a3s_credscan *cs) {
    if (!cs)
        return;
    node_clear(&cs->top);
    free(cs->root);
    free(cs);
}

#else
typedef int a3s_credscan_unused;
#endif
