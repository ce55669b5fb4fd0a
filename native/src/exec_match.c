/* exec_match.c - decides one exec against the bash deny and ask rules.
 *
 * The line reader (bash_split.c) predicts what a line will run; this file
 * judges what actually runs, one exec at a time (the sandbox's init calls it
 * at each exec stop: init/exectrace.c). Its input is not bash but an argv,
 * so it reads no quotes or expansions: only which program this is and
 * which arguments it got. A program is read under every name it may be:
 *  - the base name of the executable the kernel loaded, and of argv[0]
 *    (busybox applets, and git, which runs `git-push` as `git push`);
 *  - the name of the rule program it is a copy, a hard link or a renamed
 *    file of (same device and inode, or same size and SHA-256 as the
 *    executable found on PATH when the sandbox started);
 *  - for a `#!` script, the script's own name (a script called git);
 *  - for git, with its global options left out (git -C dir push).
 * Each reading is "NAME ARG1 ARG2 ..." (one space between words), matched
 * with the same globs as the line's simple commands. A git subcommand git
 * does not know (an alias, or a typo help.autocorrect runs as the command
 * it resembles) and an alias defined on the command line (-c alias.x=...,
 * --config-env) can run any git command: such an exec matches every deny and
 * ask rule whose program is git.
 */
#if !defined(_WIN32)

#define _DEFAULT_SOURCE
#include "exec_match.h"

#include "bash_split.h"
#include "sha256.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct exec_rule {
    int list;
    char *pattern;
    a3s_glob *glob;     /* the whole pattern; NULL: "*", any command */
    a3s_glob *program;  /* its first word (the program); NULL: any */
    char *name;         /* the first word when it is a plain name (git), else NULL */
};

/* An executable a rule names, as found on PATH at start. */
struct located {
    const char *name; /* a rule's name */
    dev_t dev;
    ino_t ino;
    off_t size;
    char *path;
    bool hashed;
    uint8_t sha[32];
};

struct a3s_exec_rules {
    struct exec_rule *rules;
    size_t n, cap;
    char **approved;
    size_t napproved, capapproved;
    struct located *found;
    size_t nfound;
    char **helpers; /* git-<name> programs of git's exec path: names git runs, never aliases */
    size_t nhelpers;
};

a3s_exec_rules *a3s_exec_rules_new(void) { return calloc(1, sizeof(a3s_exec_rules)); }

void a3s_exec_rules_free(a3s_exec_rules *r) {
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->rules[i].pattern);
        free(r->rules[i].name);
        a3s_glob_free(r->rules[i].glob);
        a3s_glob_free(r->rules[i].program);
    }
    for (size_t i = 0; i < r->napproved; i++)
        free(r->approved[i]);
    for (size_t i = 0; i < r->nfound; i++)
        free(r->found[i].path);
    for (size_t i = 0; i < r->nhelpers; i++)
        free(r->helpers[i]);
    free(r->helpers);
    free(r->rules);
    free(r->approved);
    free(r->found);
    free(r);
}

static bool is_plain_name(const char *s, size_t n) {
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '*' || s[i] == '/')
            return false;
    return true;
}

int a3s_exec_rules_add(a3s_exec_rules *r, int list, const char *pattern, a3s_error *err) {
    if (!r || !pattern || (list != A3S_LIST_DENY && list != A3S_LIST_ASK))
        return a3s_fail(err, A3S_E_INVALID, 0, list, "a3s_exec_rules_add: invalid argument");
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 8;
        struct exec_rule *grown = realloc(r->rules, cap * sizeof *grown);
        if (!grown)
            return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory adding an exec rule");
        r->rules = grown;
        r->cap = cap;
    }
    struct exec_rule e = {.list = list};
    size_t len = strlen(pattern);
    size_t first = strcspn(pattern, " ");
    e.pattern = strdup(pattern);
    int rc = e.pattern ? A3S_OK : A3S_E_NOMEM;
    bool any = len == 1 && pattern[0] == '*';
    if (rc == A3S_OK && !any)
        rc = a3s_glob_compile_internal(pattern, len, 0, &e.glob, err);
    if (rc == A3S_OK && !any)
        rc = a3s_glob_compile_internal(pattern, first, 0, &e.program, err);
    if (rc == A3S_OK && first < len && is_plain_name(pattern, first) &&
        !(e.name = strndup(pattern, first)))
        rc = A3S_E_NOMEM;
    if (rc != A3S_OK) {
        free(e.pattern);
        free(e.name);
        a3s_glob_free(e.glob);
        a3s_glob_free(e.program);
        return rc == A3S_E_NOMEM ? a3s_fail(err, rc, 0, 0, "out of memory adding an exec rule")
                                 : rc;
    }
    r->rules[r->n++] = e;
    return a3s_ok(err);
}

int a3s_exec_rules_approve(a3s_exec_rules *r, const char *command) {
    if (r->napproved == r->capapproved) {
        size_t cap = r->capapproved ? 2 * r->capapproved : 8;
        char **grown = realloc(r->approved, cap * sizeof *grown);
        if (!grown)
            return A3S_E_NOMEM;
        r->approved = grown;
        r->capapproved = cap;
    }
    if (!(r->approved[r->napproved] = strdup(command)))
        return A3S_E_NOMEM;
    r->napproved++;
    return A3S_OK;
}

size_t a3s_exec_rules_count(const a3s_exec_rules *r) { return r ? r->n : 0; }

const char *a3s_exec_rules_pattern(const a3s_exec_rules *r, size_t index, int *list) {
    if (!r || index >= r->n)
        return NULL;
    if (list)
        *list = r->rules[index].list;
    return r->rules[index].pattern;
}

/* ---- identity: what a copy or link of a named program is ------------------- */

/* The git-<name> programs of git's exec paths (where git looks for its
 * commands that are not builtins). */
static void find_git_helpers(a3s_exec_rules *r) {
    static const char *const DIRS[] = {"/usr/lib/git-core", "/usr/libexec/git-core",
                                       "/usr/local/libexec/git-core", "/usr/local/lib/git-core"};
    for (size_t d = 0; d < sizeof DIRS / sizeof DIRS[0]; d++) {
        DIR *dir = opendir(DIRS[d]);
        struct dirent *e;
        while (dir && (e = readdir(dir)) != NULL) {
            if (strncmp(e->d_name, "git-", 4) != 0 || !e->d_name[4])
                continue;
            char **grown = realloc(r->helpers, (r->nhelpers + 1) * sizeof *grown);
            char *name = grown ? strdup(e->d_name + 4) : NULL;
            if (grown)
                r->helpers = grown;
            if (!name)
                break; /* out of memory: fewer names known, so stricter */
            r->helpers[r->nhelpers++] = name;
        }
        if (dir)
            closedir(dir);
    }
}

void a3s_exec_rules_locate(a3s_exec_rules *r, const char *path) {
    find_git_helpers(r);
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (size_t i = 0; i < r->n; i++) {
        const char *name = r->rules[i].name;
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = r->rules[k].name && !strcmp(r->rules[k].name, name ? name : "");
        if (!name || seen)
            continue;
        for (const char *at = path; *at;) {
            size_t dl = strcspn(at, ":");
            char full[4096];
            struct stat st;
            if (dl && dl + 2 + strlen(name) < sizeof full) {
                memcpy(full, at, dl);
                full[dl] = '/';
                strcpy(full + dl + 1, name);
                struct located *grown = NULL;
                if (stat(full, &st) == 0 && S_ISREG(st.st_mode) &&
                    (grown = realloc(r->found, (r->nfound + 1) * sizeof *grown)) != NULL) {
                    r->found = grown;
                    r->found[r->nfound] = (struct located){
                        .name = name, .dev = st.st_dev, .ino = st.st_ino, .size = st.st_size,
                        .path = strdup(full)};
                    if (r->found[r->nfound].path)
                        r->nfound++;
                }
            }
            at += dl + (at[dl] == ':');
        }
    }
}

size_t a3s_exec_rules_located(const a3s_exec_rules *r) { return r ? r->nfound : 0; }

static bool hash_fd(int fd, uint8_t out[32]) {
    struct a3s_sha256 s;
    a3s_sha256_init(&s);
    char buf[65536];
    off_t at = 0;
    for (;;) {
        ssize_t n = pread(fd, buf, sizeof buf, at);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return false;
        if (n == 0)
            break;
        a3s_sha256_update(&s, buf, (size_t)n);
        at += n;
    }
    a3s_sha256_final(&s, out);
    return true;
}

/* The rule name the file exe_fd is open on is a copy or link of, or NULL. */
static const char *identify(a3s_exec_rules *r, int exe_fd) {
    struct stat st;
    if (exe_fd < 0 || !r->nfound || fstat(exe_fd, &st) < 0)
        return NULL;
    for (size_t i = 0; i < r->nfound; i++)
        if (r->found[i].dev == st.st_dev && r->found[i].ino == st.st_ino)
            return r->found[i].name;
    uint8_t mine[32];
    bool hashed = false;
    for (size_t i = 0; i < r->nfound; i++) {
        struct located *l = &r->found[i];
        if (l->size != st.st_size)
            continue;
        if (!hashed && !(hashed = hash_fd(exe_fd, mine)))
            return NULL;
        if (!l->hashed) {
            int fd = open(l->path, O_RDONLY | O_CLOEXEC);
            l->hashed = fd >= 0 && hash_fd(fd, l->sha);
            if (fd >= 0)
                close(fd);
        }
        if (l->hashed && memcmp(l->sha, mine, 32) == 0)
            return l->name;
    }
    return NULL;
}

/* ---- readings ---------------------------------------------------------------- */

/* How many leading arguments may name the program that really runs (a
 * script after its interpreter's option, a binary after a loader's options). */
#define ARG_PROGRAMS 4

struct readings {
    const a3s_exec_rules *rules;
    char **items;
    size_t n, cap;
    bool any_git;   /* git may run any of its commands */
    char *git_rest; /* then: the arguments after its subcommand (" a b", or ""), malloc'd */
    bool oom;
};

static const char *base_name(const char *p) {
    const char *slash = strrchr(p, '/');
    return slash ? slash + 1 : p;
}

/* Appends "name argv[from] ... argv[argc-1]" (argv[skip0..skip1) left out). */
static void add_reading(struct readings *rd, const char *name, size_t name_len,
                        const char *const *argv, size_t argc, size_t from, size_t skip0,
                        size_t skip1) {
    size_t len = name_len + 1;
    for (size_t i = from; i < argc; i++)
        if (i < skip0 || i >= skip1)
            len += strlen(argv[i]) + 1;
    char *s = malloc(len);
    if (!s) {
        rd->oom = true;
        return;
    }
    for (size_t i = 0; i < name_len; i++) /* the program by its lower-case name */
        s[i] = (char)a3s_lower((unsigned char)name[i]);
    size_t at = name_len;
    for (size_t i = from; i < argc; i++) {
        if (i >= skip0 && i < skip1)
            continue;
        s[at++] = ' ';
        size_t n = strlen(argv[i]);
        memcpy(s + at, argv[i], n);
        at += n;
    }
    s[at] = '\0';
    for (size_t i = 0; i < rd->n; i++)
        if (!strcmp(rd->items[i], s)) {
            free(s);
            return;
        }
    if (rd->n == rd->cap) {
        size_t cap = rd->cap ? 2 * rd->cap : 8;
        char **grown = realloc(rd->items, cap * sizeof *grown);
        if (!grown) {
            free(s);
            rd->oom = true;
            return;
        }
        rd->items = grown;
        rd->cap = cap;
    }
    rd->items[rd->n++] = s;
}

/* git's builtin commands: no alias can take their names. Any other
 * subcommand is an alias, a typo help.autocorrect may run as one of these,
 * or a program of git's exec path (git-svn, git-remote-https ...), which
 * a3s_exec_rules_locate adds as it finds them there: a command git ships
 * but this machine lacks can be an alias. Sorted for bsearch. */
static const char *const GIT_COMMANDS[] = {
    "add", "am", "annotate", "apply", "archive", "backfill", "bisect", "blame", "branch",
    "bugreport", "bundle", "cat-file", "check-attr", "check-ignore", "check-mailmap",
    "check-ref-format", "checkout", "checkout-index", "cherry", "cherry-pick", "clean", "clone",
    "column", "commit", "commit-graph", "commit-tree", "config", "count-objects", "credential",
    "credential-cache", "credential-cache--daemon", "credential-store", "describe", "diagnose",
    "diff", "diff-files", "diff-index", "diff-pairs", "diff-tree", "difftool", "fast-export",
    "fast-import", "fetch", "fetch-pack", "fmt-merge-msg", "for-each-ref", "for-each-repo",
    "format-patch", "fsck", "fsck-objects", "fsmonitor--daemon", "gc", "get-tar-commit-id", "grep",
    "hash-object", "help", "hook", "index-pack", "init", "init-db", "interpret-trailers",
    "last-modified", "log", "ls-files", "ls-remote", "ls-tree", "mailinfo", "mailsplit",
    "maintenance", "merge", "merge-base", "merge-file", "merge-index", "merge-ours",
    "merge-recursive", "merge-subtree", "merge-tree", "mktag", "mktree", "multi-pack-index", "mv",
    "name-rev", "notes", "pack-objects", "pack-redundant", "pack-refs", "patch-id", "prune",
    "prune-packed", "pull", "push", "range-diff", "read-tree", "rebase", "receive-pack", "reflog",
    "refs", "remote", "remote-ext", "remote-fd", "repack", "replace", "replay", "repo",
    "rerere", "reset", "restore", "rev-list", "rev-parse", "revert", "rm", "send-pack",
    "shortlog", "show", "show-branch", "show-index", "show-ref", "sparse-checkout", "stage",
    "stash", "status", "stripspace", "submodule", "switch", "symbolic-ref", "tag",
    "unpack-file", "unpack-objects", "update-index", "update-ref", "update-server-info",
    "upload-archive", "upload-pack", "var", "verify-commit", "verify-pack", "verify-tag",
    "version", "whatchanged", "worktree", "write-tree",
};

static int by_name(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool git_knows(const struct readings *rd, const char *sub) {
    size_t n = sizeof GIT_COMMANDS / sizeof GIT_COMMANDS[0];
    if (bsearch(&sub, GIT_COMMANDS, n, sizeof *GIT_COMMANDS, by_name))
        return true;
    const a3s_exec_rules *r = rd->rules;
    for (size_t i = 0; r && i < r->nhelpers; i++)
        if (!strcmp(r->helpers[i], sub))
            return true;
    return false;
}

static bool prefix_ci(const char *s, const char *prefix) {
    for (; *prefix; s++, prefix++)
        if (a3s_lower((unsigned char)*s) != (unsigned char)*prefix)
            return false;
    return true;
}

/* Marks that git may run any of its commands here, with argv[from..) after
 * the command it runs (the arguments an alias is given). */
static void mark_any_git(struct readings *rd, const char *const *argv, size_t argc,
                         size_t from) {
    rd->any_git = true;
    if (rd->git_rest || rd->oom)
        return;
    size_t len = 1;
    for (size_t i = from; i < argc; i++)
        len += strlen(argv[i]) + 1;
    if (!(rd->git_rest = malloc(len))) {
        rd->oom = true;
        return;
    }
    size_t at = 0;
    for (size_t i = from; i < argc; i++) {
        rd->git_rest[at++] = ' ';
        memcpy(rd->git_rest + at, argv[i], strlen(argv[i]));
        at += strlen(argv[i]);
    }
    rd->git_rest[at] = '\0';
}

/* The readings of git run with argv[from..): as given, and with its global
 * options left out; marks any_git for an alias or unknown subcommand. */
static void read_git(struct readings *rd, const char *const *argv, size_t argc, size_t from) {
    add_reading(rd, "git", 3, argv, argc, from, 0, 0);
    size_t j = from;
    bool defines = false;
    while (j < argc && argv[j][0] == '-') {
        const char *v = argv[j];
        if (!strcmp(v, "--"))
            break;
        size_t vl = strcspn(v, "=");
        bool takes = v[vl] == '\0' && a3s_git_option_takes_value(v, vl);
        const char *value = takes ? (j + 1 < argc ? argv[j + 1] : "") : v + vl + (v[vl] == '=');
        /* an alias defined here, or config taken from the environment, can be anything */
        defines |= (!strncmp(v, "-c", 2) && prefix_ci(v[2] ? v + 2 : value, "alias.")) ||
                   !strncmp(v, "--config-env", 12);
        j += takes ? 2 : 1;
    }
    if (j < argc && !strcmp(argv[j], "--"))
        j++;
    if (j > from)
        add_reading(rd, "git", 3, argv, argc, j, 0, 0);
    if (defines || (j < argc && !git_knows(rd, argv[j])))
        mark_any_git(rd, argv, argc, j < argc ? j + 1 : argc);
}

/* The readings of a program called `name` run with argv[from..). */
static void read_named(struct readings *rd, const char *name, const char *const *argv,
                       size_t argc, size_t from) {
    size_t n = strlen(name);
    if (n == 3 && prefix_ci(name, "git")) {
        read_git(rd, argv, argc, from);
        return;
    }
    if (n > 4 && prefix_ci(name, "git-")) { /* git's helpers: git-push is git push */
        const char **with = malloc((argc - from + 2) * sizeof *with);
        if (!with) {
            rd->oom = true;
            return;
        }
        with[0] = name + 4;
        for (size_t i = from; i < argc; i++)
            with[1 + i - from] = argv[i];
        size_t wn = argc - from + 1;
        add_reading(rd, "git", 3, with, wn, 0, 0, 0);
        if (!git_knows(rd, name + 4))
            mark_any_git(rd, argv, argc, from);
        free(with);
        return;
    }
    add_reading(rd, name, n, argv, argc, from, 0, 0);
}

/* Whether argv[k] names a `#!` script (the kernel runs a script as
 * INTERPRETER [ARG] SCRIPT ARGS...). */
static bool is_script(const char *path, int cwd_fd) {
    if (path[0] != '/' && cwd_fd < 0)
        return false; /* relative to a directory we were not given */
    struct stat pre;
    if (fstatat(path[0] == '/' ? AT_FDCWD : cwd_fd, path, &pre, 0) < 0 || !S_ISREG(pre.st_mode))
        return false; /* only a regular file is opened: no device, no FIFO */
    int fd = path[0] == '/' ? open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
                                          : openat(cwd_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY |
                                                                     O_NONBLOCK);
    if (fd < 0)
        return false;
    char head[2];
    struct stat st;
    bool yes = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && pread(fd, head, 2, 0) == 2 &&
               head[0] == '#' && head[1] == '!';
    close(fd);
    return yes;
}

/* Whether any located program has this size or is this very file: the
 * only files worth opening to identify. */
static bool may_be_located(const a3s_exec_rules *r, const struct stat *st) {
    for (size_t i = 0; i < r->nfound; i++)
        if (r->found[i].size == st->st_size ||
            (r->found[i].dev == st->st_dev && r->found[i].ino == st->st_ino))
            return true;
    return false;
}

/* argv[k] may name the program that really runs: a `#!` script the kernel
 * runs through its interpreter (INTERPRETER [ARG] SCRIPT ARGS...), or a
 * binary run by a loader (`/lib64/ld-linux-x86-64.so.2 /usr/bin/git push`,
 * with `--argv0 NAME` telling git which command it is): read it as that
 * program with the arguments after it. */
static void read_argument_program(a3s_exec_rules *r, const struct a3s_exec_call *c, size_t k,
                                  struct readings *rd) {
    const char *const *argv = c->argv;
    const char *path = argv[k];
    if (!path[0] || path[0] == '-' || (path[0] != '/' && c->cwd_fd < 0))
        return;
    struct stat st;
    int at = path[0] == '/' ? AT_FDCWD : c->cwd_fd;
    if (fstatat(at, path, &st, 0) < 0 || !S_ISREG(st.st_mode))
        return; /* only a regular file is opened: no device, no FIFO */
    if (is_script(path, c->cwd_fd))
        read_named(rd, base_name(path), argv, c->argc, k + 1);
    if (!may_be_located(r, &st))
        return;
    int fd = openat(at, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    const char *same = fd >= 0 ? identify(r, fd) : NULL;
    if (fd >= 0)
        close(fd);
    if (!same)
        return;
    read_named(rd, same, argv, c->argc, k + 1);
    if (strcmp(same, "git") != 0)
        return;
    if (prefix_ci(base_name(path), "git-"))
        read_named(rd, base_name(path), argv, c->argc, k + 1);
    for (size_t i = 1; i + 1 < k; i++) /* the loader's --argv0: git's own argv[0] */
        if (!strcmp(argv[i], "--argv0") && prefix_ci(base_name(argv[i + 1]), "git-"))
            read_named(rd, base_name(argv[i + 1]), argv, c->argc, k + 1);
}

static void read_exec(a3s_exec_rules *r, const struct a3s_exec_call *c, struct readings *rd) {
    if (c->argc == 0)
        return;
    const char *const *argv = c->argv;
    if (c->exe)
        read_named(rd, base_name(c->exe), argv, c->argc, 1);
    read_named(rd, base_name(argv[0]), argv, c->argc, 1);
    const char *same = identify(r, c->exe_fd);
    if (same) {
        read_named(rd, same, argv, c->argc, 1);
        /* git reads its command from argv[0]'s name: a copy of git called
         * git-push is git push */
        if (!strcmp(same, "git") && prefix_ci(base_name(argv[0]), "git-"))
            read_named(rd, base_name(argv[0]), argv, c->argc, 1);
    }
    for (size_t k = 1; k <= ARG_PROGRAMS && k < c->argc; k++)
        read_argument_program(r, c, k, rd);
}

static bool approved(const a3s_exec_rules *r, const char *reading) {
    for (size_t i = 0; i < r->napproved; i++)
        if (!strcmp(r->approved[i], reading))
            return true;
    return false;
}

static bool rule_matches(const struct exec_rule *e, const char *s) {
    return !e->glob || a3s_glob_match(e->glob, s, strlen(s)) == 1;
}

/* Whether rule e may name some git command (its program matches git). */
static bool rule_names_git(const struct exec_rule *e) {
    return !e->program || a3s_glob_match(e->program, "git", 3) == 1;
}

/* Whether rule e may match what git runs for an alias or an unknown
 * subcommand: its program is git, or it matches "git CMD REST" for one of
 * git's commands (an alias of `push` given the same arguments). -1: memory. */
static int may_match_any_git(const struct exec_rule *e, const char *rest) {
    if (rule_names_git(e))
        return 1;
    size_t rl = strlen(rest), n = sizeof GIT_COMMANDS / sizeof GIT_COMMANDS[0];
    char *buf = malloc(4 + 32 + rl + 1);
    if (!buf)
        return -1;
    int hit = 0;
    for (size_t i = 0; i < n && !hit; i++) {
        size_t cl = strlen(GIT_COMMANDS[i]);
        if (cl > 32)
            continue;
        memcpy(buf, "git ", 4);
        memcpy(buf + 4, GIT_COMMANDS[i], cl);
        memcpy(buf + 4 + cl, rest, rl + 1);
        hit = rule_matches(e, buf);
    }
    free(buf);
    return hit;
}

int a3s_exec_decide(a3s_exec_rules *r, const struct a3s_exec_call *c,
                    struct a3s_exec_decision *out) {
    *out = (struct a3s_exec_decision){.list = A3S_LIST_NONE, .rule = SIZE_MAX};
    struct readings rd = {.rules = r};
    read_exec(r, c, &rd);
    int found = A3S_LIST_NONE;
    size_t rule = SIZE_MAX, which = SIZE_MAX;
    for (int pass = A3S_LIST_DENY; pass <= A3S_LIST_ASK && found == A3S_LIST_NONE && !rd.oom;
         pass += 2) {
        for (size_t i = 0; i < r->n && found == A3S_LIST_NONE; i++) {
            if (r->rules[i].list != pass)
                continue;
            for (size_t k = 0; k < rd.n; k++) {
                if (!rule_matches(&r->rules[i], rd.items[k]))
                    continue;
                if (pass == A3S_LIST_ASK && approved(r, rd.items[k]))
                    continue; /* the human approved this very command */
                found = pass;
                rule = i;
                which = k;
                break;
            }
            int maybe = found == A3S_LIST_NONE && rd.any_git
                            ? may_match_any_git(&r->rules[i], rd.git_rest ? rd.git_rest : "")
                            : 0;
            if (maybe < 0)
                rd.oom = true;
            if (maybe > 0) {
                bool ok = false;
                for (size_t k = 0; pass == A3S_LIST_ASK && k < rd.n && !ok; k++)
                    ok = approved(r, rd.items[k]);
                if (!ok) {
                    found = pass;
                    rule = i;
                    which = 0;
                    for (size_t k = rd.n; k-- > 0;) /* the first reading as git */
                        if (!strncmp(rd.items[k], "git", 3) && strchr(" ", rd.items[k][3]))
                            which = k;
                }
            }
        }
    }
    int rc = A3S_OK;
    if (rd.oom) {
        found = A3S_LIST_DENY; /* fail closed */
        rc = A3S_E_NOMEM;
    }
    out->list = found;
    out->rule = rule;
    if (found != A3S_LIST_NONE) {
        const char *text = which < rd.n ? rd.items[which] : c->argc ? c->argv[0] : "";
        out->reading = strdup(text);
    }
    for (size_t k = 0; k < rd.n; k++)
        free(rd.items[k]);
    free(rd.items);
    free(rd.git_rest);
    return rc;
}

#else
typedef int a3s_exec_match_unused;
#endif
