/* policy_linux.c - the canonical text of a sandbox's policy, and its digest (a3s_sandbox_policy).
 *
 * The text is read off a plan, the same structure every run is started
 * from, so it says what the core would really do, not what a second
 * description of it claims: each bubblewrap option and each init option a
 * command would run under becomes one line. Lines that depend on the run
 * rather than on the policy (run directories and their scratch binds, fds,
 * timeouts, the command, the init's mode and how it keeps the memory bound)
 * are left out, so a one-shot plan, a long-lived plan and a described plan
 * of the same handle give the same text. The handle's bounds, the Landlock
 * ABI of the running kernel, the seccomp filter's own digest and the core's
 * version are added. Every line is "key value", bytes outside printable
 * ASCII and backslashes escaped as \xNN, and the lines are sorted: the text
 * does not depend on the order in which a scan found anything, and any
 * change of content changes it. docs/security.md ("Network grants") shows
 * one and explains each key.
 */
#define _GNU_SOURCE
#include "a3s/a3s.h"

#if defined(__linux__)

#include "internal.h"
#include "sandbox_internal.h"
#include "seccomp_linux.h"
#include "sha256.h"
#include "strvec.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER "codeward sandbox policy 1\n"

struct a3s_policy {
    char *text;
    size_t len;
    char digest[A3S_POLICY_DIGEST_SIZE];
};

/* A growable line with escaping. */
struct line {
    char *buf;
    size_t len, cap;
    bool failed;
};

static void put_n(struct line *l, const char *s, size_t n) {
    if (l->failed)
        return;
    if (l->len + n + 1 > l->cap) {
        size_t cap = l->cap ? l->cap : 128;
        while (cap < l->len + n + 1)
            cap *= 2;
        char *grown = realloc(l->buf, cap);
        if (!grown) {
            l->failed = true;
            return;
        }
        l->buf = grown;
        l->cap = cap;
    }
    memcpy(l->buf + l->len, s, n);
    l->len += n;
    l->buf[l->len] = '\0';
}

static void put(struct line *l, const char *s) { put_n(l, s, strlen(s)); }

/* A path or argument: printable ASCII but the backslash as it is, every other byte \xNN. */
static void put_escaped(struct line *l, const char *s) {
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c > 0x20 && *c < 0x7f && *c != '\\') {
            put_n(l, (const char *)c, 1);
        } else {
            char esc[5];
            snprintf(esc, sizeof esc, "\\x%02x", *c);
            put_n(l, esc, 4);
        }
    }
}

/* Adds "key a b ..." (each part escaped) to lines. */
static void add(struct a3s_strvec *lines, const char *key, const char *a, const char *b,
                const char *c) {
    struct line l = {0};
    put(&l, key);
    const char *parts[3] = {a, b, c};
    for (int i = 0; i < 3; i++) {
        if (!parts[i])
            continue;
        put(&l, " ");
        put_escaped(&l, parts[i]);
    }
    if (l.failed)
        lines->failed = true;
    else
        a3s_strvec_push(lines, l.buf);
    free(l.buf);
}

static void add_bound(struct a3s_strvec *lines, const char *name, uint64_t value) {
    char num[32];
    if (value == UINT64_MAX)
        snprintf(num, sizeof num, "unlimited");
    else
        snprintf(num, sizeof num, "%llu", (unsigned long long)value);
    add(lines, "limit", name, num, NULL);
}

/* A bind's source as the policy sees it: the mask objects by their role, and a
 * directory bound from the fd it was checked through (a worktree's gitdir,
 * /proc/self/fd/N of the planning process) as what it is, the destination. */
static const char *source_of(const struct plan *p, const char *src, const char *dst) {
    if (!strcmp(src, p->mask_file))
        return "mask-file";
    if (!strcmp(src, p->mask_dir))
        return "mask-dir";
    if (!strcmp(src, dst))
        return "=";
    if (!strncmp(src, "/proc/self/fd/", 14))
        return "=pinned";
    return src;
}

static bool is(const char *a, const char *b) { return strcmp(a, b) == 0; }

/* bubblewrap's options up to "--"; returns the index after it. */
static size_t bwrap_lines(const struct plan *p, struct a3s_strvec *lines, size_t i) {
    const struct a3s_strvec *v = &p->argv;
    const char *size = NULL, *perms = NULL;
    while (i < v->len && !is(v->items[i], "--")) {
        const char *opt = v->items[i];
        const char *x = i + 1 < v->len ? v->items[i + 1] : NULL;
        const char *y = i + 2 < v->len ? v->items[i + 2] : NULL;
        if (is(opt, "--die-with-parent")) { /* the lifetime mechanism: the lifeline for both */
            i += 1;
        } else if (is(opt, "--unshare-all") || is(opt, "--unshare-user") ||
                   is(opt, "--disable-userns") || is(opt, "--new-session") ||
                   is(opt, "--as-pid-1") || is(opt, "--share-net")) {
            add(lines, "bwrap", opt, NULL, NULL);
            i += 1;
        } else if ((is(opt, "--cap-drop") || is(opt, "--chdir")) && x) {
            add(lines, "bwrap", opt, x, NULL);
            i += 2;
        } else if (is(opt, "--size") && x) {
            size = x;
            i += 2;
        } else if (is(opt, "--perms") && x) {
            perms = x;
            i += 2;
        } else if (is(opt, "--ro-bind-data") && x && y) {
            /* the handle's pinned copy of the init, through a descriptor of this run */
            char what[48];
            snprintf(what, sizeof what, "pinned perms=%s", perms ? perms : "default");
            add(lines, "mount", y, "ro-bind-data", what);
            perms = NULL;
            i += 3;
        } else if ((is(opt, "--tmpfs") || is(opt, "--dev") || is(opt, "--proc")) && x) {
            char bound[48];
            snprintf(bound, sizeof bound, "size=%s", size ? size : "none");
            add(lines, "mount", x, opt + 2, is(opt, "--tmpfs") ? bound : NULL);
            size = NULL;
            i += 2;
        } else if ((is(opt, "--ro-bind") || is(opt, "--bind") || is(opt, "--ro-bind-try")) && x &&
                   y) {
            if (!(is(opt, "--bind") && is(y, p->home))) /* a one-shot run's scratch */
                add(lines, "mount", y, opt + 2, source_of(p, x, y));
            i += 3;
        } else { /* anything else is kept as it is: its content still counts */
            add(lines, "bwrap-arg", opt, NULL, NULL);
            i += 1;
        }
    }
    return i + 1;
}

/* The init's options up to "--", then the program. */
static void init_lines(const struct plan *p, struct a3s_strvec *lines, size_t i) {
    static const char *const per_run[] = {
        "--mode",      "--control-fd", "--host-pidfd",   "--status-fd",  "--lifeline-fd",
        "--grace-ms",  "--timeout-ms", "--max-processes", "--memory-max", "--watch-tmpfs",
        "--kernel-memory-max", "--deadline-ns",
        "--clean",     "--grant-fd",   "--grant-port",    "--host-ns",
    };
    const struct a3s_strvec *v = &p->argv;
    const char *root = NULL;
    if (i < v->len)
        i++; /* the init's own path: the bind to /run/a3s/init names it */
    while (i < v->len && !is(v->items[i], "--")) {
        const char *opt = v->items[i];
        const char *x = i + 1 < v->len ? v->items[i + 1] : NULL;
        bool skipped = false;
        for (size_t k = 0; k < sizeof per_run / sizeof *per_run && !skipped; k++)
            skipped = is(opt, per_run[k]);
        if (skipped) {
            i += x ? 2 : 1;
        } else if (is(opt, "--no-landlock")) {
            add(lines, "landlock", "off", NULL, NULL);
            i += 1;
        } else if (is(opt, "--exec-notify")) {
            i += 1; /* how the exec check sees execs, not what the sandbox allows */
        } else if (is(opt, "--allow-connect")) {
            add(lines, "landlock", "allow-connect", NULL, NULL);
            i += 1;
        } else if (is(opt, "--names-root") && x) {
            root = x; /* the workspace: its line says it */
            i += 2;
        } else if (is(opt, "--protect-missing") && x && root) {
            /* kept missing by the init (init/names.c), no placeholder */
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%s/%s", root, x);
            add(lines, "protected", path, "missing", NULL);
            i += 2;
        } else if (is(opt, "--rw") && x) {
            if (!is(x, p->home))
                add(lines, "writable", x, NULL, NULL);
            i += 2;
        } else {
            add(lines, "init-arg", opt, NULL, NULL);
            i += 1;
        }
    }
    /* the program: bash -c (a one-shot plan's command follows: not policy) */
    if (i + 1 < v->len)
        add(lines, "program", v->items[i + 1], i + 2 < v->len ? v->items[i + 2] : NULL, NULL);
}

static int by_text(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The whole canonical text into a new string. */
static int plan_text(const a3s_sandbox *sb, const struct plan *p, char **out, size_t *out_len,
                     a3s_error *err) {
    struct a3s_strvec lines = {0};
    bool sandbox = !(sb->flags & A3S_SANDBOX_PROCESS_HOST);
    add(&lines, "core", a3s_version()->string, NULL, NULL);
    add(&lines, "boundary", sandbox ? "bwrap" : "process-host", NULL, NULL);
    add(&lines, "workspace", sb->workspace,
        (sb->flags & A3S_SANDBOX_WORKSPACE_READONLY) ? "read-only" : "read-write", NULL);
    add(&lines, "network",
        !sandbox || (sb->flags & A3S_SANDBOX_SHARE_NET) ? "host" : "loopback-only", NULL, NULL);
    if (sandbox) {
        add_bound(&lines, "memory_max_bytes", sb->memory_max);
        add_bound(&lines, "max_processes", sb->max_processes);
        add_bound(&lines, "tmpfs_max_bytes", sb->tmpfs_max);
        a3s_features_info f = {.struct_size = sizeof f};
        char abi[16];
        snprintf(abi, sizeof abi, "%d",
                 a3s_features(&f, NULL) == A3S_OK ? (int)f.landlock_abi : 0);
        add(&lines, "landlock-abi", abi, NULL, NULL);
        struct a3s_seccomp_program prog = {0};
        int rc = a3s_seccomp_build(0, &prog, err);
        if (rc != A3S_OK) {
            a3s_strvec_free(&lines);
            return rc;
        }
        char digest[A3S_SHA256_TEXT_SIZE];
        a3s_sha256_text(prog.filter, (size_t)prog.len * sizeof *prog.filter, digest);
        a3s_seccomp_program_free(&prog);
        add(&lines, "seccomp", digest, NULL, NULL);
    }
    size_t i = 0;
    if (p->argv.len && sb->bwrap && is(p->argv.items[0], sb->bwrap))
        i = bwrap_lines(p, &lines, 1);
    init_lines(p, &lines, i);
    if (lines.failed) {
        a3s_strvec_free(&lines);
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory describing the policy");
    }
    if (lines.len > 1)
        qsort(lines.items, lines.len, sizeof *lines.items, by_text);
    struct line text = {0};
    put(&text, HEADER);
    for (size_t k = 0; k < lines.len; k++) {
        put(&text, lines.items[k]);
        put(&text, "\n");
    }
    a3s_strvec_free(&lines);
    if (text.failed) {
        free(text.buf);
        return a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory describing the policy");
    }
    *out = text.buf;
    *out_len = text.len;
    return A3S_OK;
}

int a3s_plan_digest(const a3s_sandbox *sb, const struct plan *p,
                    char out[A3S_POLICY_DIGEST_SIZE], a3s_error *err) {
    char *text = NULL;
    size_t len = 0;
    int rc = plan_text(sb, p, &text, &len, err);
    if (rc == A3S_OK)
        a3s_sha256_text(text, len, out);
    free(text);
    return rc;
}

A3S_API int a3s_sandbox_policy(a3s_sandbox *sb, a3s_policy **out, a3s_error *err) {
    if (!sb || !out)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_sandbox_policy: NULL argument");
    *out = NULL;
    struct plan p;
    a3s_plan_init(&p);
    p.describe = true;
    /* a command's plan, one-shot form (the long-lived form gives the same text) */
    a3s_exec_options o = {.struct_size = sizeof o, .command = "", .command_len = 0};
    struct plan_fds fds = {.status_fd = -1, .lifeline_fd = -1, .control_fd = -1,
                           .host_pidfd = -1};
    int rc = a3s_plan_build(sb, &o, &p, &fds, err);
    a3s_policy *policy = NULL;
    if (rc == A3S_OK) {
        policy = calloc(1, sizeof *policy);
        if (!policy)
            rc = a3s_fail(err, A3S_E_NOMEM, 0, 0, "out of memory");
    }
    if (rc == A3S_OK && (rc = plan_text(sb, &p, &policy->text, &policy->len, err)) == A3S_OK)
        a3s_sha256_text(policy->text, policy->len, policy->digest);
    a3s_plan_forget(&p);
    if (rc != A3S_OK) {
        a3s_policy_free(policy);
        return rc;
    }
    *out = policy;
    return a3s_ok(err);
}

A3S_API const char *a3s_policy_text(const a3s_policy *p, size_t *len) {
    if (len)
        *len = p ? p->len : 0;
    return p ? p->text : NULL;
}

A3S_API const char *a3s_policy_digest(const a3s_policy *p) { return p ? p->digest : NULL; }

A3S_API void a3s_policy_free(a3s_policy *p) {
    if (!p)
        return;
    free(p->text);
    free(p);
}

#else
typedef int a3s_policy_linux_unused; /* ISO C forbids an empty unit */
#endif
