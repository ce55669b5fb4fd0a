/* test_init_pin.c - the handle runs the init it was given, never a later file.
 *
 * The init lies in the workspace (a package installed in the project's
 * .venv), where a sandboxed command can rewrite it: in place (same inode)
 * or by rename. After either, the handle's next one-shot start, long-lived
 * start, owned program in a sandbox and process-host start must still run
 * the genuine init (the copy pinned at a3s_sandbox_new), and nothing may
 * run the command's program; an owned host process given the digest is
 * refused, as is a new handle over the changed file. Needs build/a3s-init
 * and /usr/bin/bwrap (skips the sandboxed cases without it). Runs plain and
 * under ASan/UBSan.
 */
#define _GNU_SOURCE
#include "a3s/a3s.h"
#include "check.h"
#include "../src/sha256.h"

#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char ws[] = "/tmp/a3s-test-init-pin-XXXXXX";
static char genuine[PATH_MAX]; /* build/a3s-init */
static char pinned[PATH_MAX];  /* its copy in the workspace's .venv */
static char fake[PATH_MAX];    /* what a command writes in its place */
static char marker[PATH_MAX];  /* the fake init leaves this behind */
static char digest[65];

static bool sh(const char *fmt, const char *a, const char *b) {
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof cmd, fmt, a, b);
    return system(cmd) == 0;
}

static bool file_digest(const char *path, char hex[65]) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    struct a3s_sha256 h;
    a3s_sha256_init(&h);
    char buf[8192];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        a3s_sha256_update(&h, buf, n);
    fclose(f);
    a3s_sha256_hex(&h, hex);
    return true;
}

/* Our SHA-256 agrees with sha256sum's on the init and on the empty input. */
static void test_digest(void) {
    struct a3s_sha256 h;
    char hex[65];
    a3s_sha256_init(&h);
    a3s_sha256_hex(&h, hex);
    CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
          "empty: %s", hex);
    char cmd[PATH_MAX + 32], line[128] = "";
    snprintf(cmd, sizeof cmd, "sha256sum '%s'", genuine);
    FILE *p = popen(cmd, "r");
    CHECK(p && fgets(line, sizeof line, p), "sha256sum");
    if (p)
        pclose(p);
    CHECK(!strncmp(line, digest, 64), "the init's digest: ours %s, sha256sum %s", digest, line);
}

static a3s_sandbox *handle(uint64_t flags, const char *init, const char *sha, const char *bwrap,
                           a3s_error *err) {
    a3s_sandbox_config cfg = {.struct_size = sizeof cfg,
                              .flags = flags,
                              .workspace = ws,
                              .bwrap_path = bwrap,
                              .init_path = init,
                              .init_sha256 = sha,
                              .idle_stop_ms = A3S_NO_LIMIT};
    a3s_sandbox *sb = NULL;
    int rc = a3s_sandbox_new(&cfg, &sb, err);
    return rc == A3S_OK ? sb : NULL;
}

/* Runs command; true if it exited 0 with `want` in its output. */
static bool run(a3s_sandbox *sb, const char *command, const char *want, char *why, size_t cap) {
    a3s_exec_options o = {.struct_size = sizeof o,
                          .command = command,
                          .command_len = strlen(command),
                          .timeout_ms = 20000};
    a3s_process_result *r = NULL;
    a3s_error err;
    if (a3s_sandbox_exec(sb, &o, &r, &err) != A3S_OK) {
        snprintf(why, cap, "exec: %s", err.message);
        return false;
    }
    a3s_process_result_view v = {.struct_size = sizeof v};
    a3s_process_result_get(r, &v, NULL);
    bool ok = v.exit_code == 0 && v.stdout_data && strstr(v.stdout_data, want);
    snprintf(why, cap, "exit %d, stdout [%.*s], stderr [%.*s], setup [%s]", v.exit_code,
             (int)v.stdout_len, v.stdout_data ? v.stdout_data : "", (int)v.stderr_len,
             v.stderr_data ? v.stderr_data : "", v.setup_error ? v.setup_error : "");
    a3s_process_result_free(r);
    return ok;
}

static bool spawned_runs(a3s_sandbox *sb, char *why, size_t cap) {
    const char *args[] = {"-c", "echo spawned-ok"};
    a3s_child_options o = {.struct_size = sizeof o, .path = "/bin/sh", .args = args, .nargs = 2};
    a3s_child *c = NULL;
    a3s_child_stdio io = {.struct_size = sizeof io};
    a3s_error err;
    if (a3s_sandbox_spawn(sb, &o, &c, &io, &err) != A3S_OK) {
        snprintf(why, cap, "spawn: %s", err.message);
        return false;
    }
    char buf[256] = "";
    ssize_t n = 0, got;
    while ((got = read(io.stdout_fd, buf + n, sizeof buf - 1 - (size_t)n)) > 0)
        n += got;
    buf[n] = '\0';
    a3s_child_status st = {.struct_size = sizeof st};
    a3s_child_stop(c, &st, NULL);
    a3s_child_free(c);
    close(io.stdin_fd);
    close(io.stdout_fd);
    close(io.stderr_fd);
    snprintf(why, cap, "exit %d, stdout [%s]", st.exit_code, buf);
    return st.exit_code == 0 && strstr(buf, "spawned-ok");
}

/* Every kind of start of the handles made before the change runs the genuine init. */
static void check_genuine_runs(const char *how, a3s_sandbox *one, a3s_sandbox *reuse,
                               a3s_sandbox *host) {
    char why[1024];
    if (one) {
        CHECK(run(one, "echo one-ok", "one-ok", why, sizeof why), "%s: one-shot: %s", how, why);
        CHECK(spawned_runs(one, why, sizeof why), "%s: owned program in a sandbox: %s", how, why);
    }
    if (reuse) {
        a3s_sandbox_stop(reuse, NULL); /* the next command starts a new long-lived sandbox */
        CHECK(run(reuse, "echo reuse-ok", "reuse-ok", why, sizeof why), "%s: long-lived: %s",
              how, why);
    }
    CHECK(run(host, "echo host-ok", "host-ok", why, sizeof why), "%s: process host: %s", how, why);
    CHECK(access(marker, F_OK) != 0, "%s: the replaced init ran", how);
    unlink(marker);
    /* an owned host process: the init is read at every spawn, so the digest refuses it */
    const char *args[] = {"-c", "true"};
    a3s_child_options o = {.struct_size = sizeof o,
                           .path = "/bin/sh",
                           .args = args,
                           .nargs = 2,
                           .init_path = pinned,
                           .init_sha256 = digest};
    a3s_child *c = NULL;
    a3s_child_stdio io = {.struct_size = sizeof io};
    a3s_error err = {0};
    int rc = a3s_child_spawn(&o, &c, &io, &err);
    CHECK(rc == A3S_E_REFUSED && strstr(err.message, pinned) &&
              strstr(err.message, "changed since the package was built"),
          "%s: owned host process: %d %s", how, rc, err.message);
    if (rc == A3S_OK)
        a3s_child_free(c);
    CHECK(access(marker, F_OK) != 0, "%s: the replaced init ran for an owned process", how);
    /* a new handle over the changed file is refused, naming it */
    a3s_sandbox *later = handle(A3S_SANDBOX_PROCESS_HOST, pinned, digest, NULL, &err);
    CHECK(!later && err.code == A3S_E_REFUSED && strstr(err.message, pinned) &&
              strstr(err.message, "changed since the package was built"),
          "%s: a new handle: %s", how, err.message);
    a3s_sandbox_free(later);
}

static void test_replaced(const char *bwrap) {
    a3s_error err;
    a3s_sandbox *one = bwrap ? handle(0, pinned, digest, bwrap, &err) : NULL;
    CHECK(!bwrap || one, "one-shot handle: %s", err.message);
    a3s_sandbox *reuse = bwrap ? handle(A3S_SANDBOX_REUSE, pinned, digest, bwrap, &err) : NULL;
    CHECK(!bwrap || reuse, "long-lived handle: %s", err.message);
    a3s_sandbox *host = handle(A3S_SANDBOX_PROCESS_HOST, pinned, digest, NULL, &err);
    CHECK(host != NULL, "process-host handle: %s", err.message);
    if (!host)
        return;
    char why[1024];
    if (reuse) /* a long-lived sandbox runs while its init is rewritten */
        CHECK(run(reuse, "echo before", "before", why, sizeof why), "long-lived: %s", why);
    struct stat before, after;
    stat(pinned, &before);
    /* in place, as a sandboxed command does it: same inode, new bytes */
    /* (commands start in the workspace) */
    const char *rewrite = "cat fake-init > .venv/bin/a3s-init && echo rewritten";
    CHECK(run(one ? one : host, rewrite, "rewritten", why, sizeof why), "rewrite in place: %s",
          why);
    stat(pinned, &after);
    CHECK(after.st_ino == before.st_ino && after.st_size != before.st_size, "same inode, new bytes");
    check_genuine_runs("in place", one, reuse, host);
    /* by rename: a new inode under the same name */
    CHECK(sh("cp '%s' '%s'", genuine, pinned), "restore");
    const char *rename = "cp fake-init .venv/bin/new && mv .venv/bin/new .venv/bin/a3s-init && "
                         "echo renamed";
    CHECK(run(one ? one : host, rename, "renamed", why, sizeof why), "rename: %s", why);
    stat(pinned, &after);
    CHECK(after.st_ino != before.st_ino, "a new inode");
    check_genuine_runs("by rename", one, reuse, host);
    a3s_sandbox_free(one);
    a3s_sandbox_free(reuse);
    a3s_sandbox_free(host);
    CHECK(sh("cp '%s' '%s'", genuine, pinned), "restore");
}

/* Before a handle exists: the digest decides; without one, an init in the
 * workspace is refused and one outside it is taken. */
static void test_new_handle(void) {
    a3s_error err;
    a3s_sandbox *sb = handle(A3S_SANDBOX_PROCESS_HOST, pinned, NULL, NULL, &err);
    CHECK(!sb && err.code == A3S_E_REFUSED && strstr(err.message, "inside the workspace"),
          "no digest, init in the workspace: %s", err.message);
    a3s_sandbox_free(sb);
    sb = handle(A3S_SANDBOX_PROCESS_HOST, genuine, NULL, NULL, &err);
    CHECK(sb != NULL, "no digest, init outside the workspace: %s", err.message);
    a3s_sandbox_free(sb);
    char wrong[65];
    memcpy(wrong, digest, sizeof wrong);
    wrong[0] = wrong[0] == '0' ? '1' : '0';
    sb = handle(A3S_SANDBOX_PROCESS_HOST, genuine, wrong, NULL, &err);
    CHECK(!sb && err.code == A3S_E_REFUSED && strstr(err.message, genuine) &&
              strstr(err.message, "changed since the package was built"),
          "a wrong digest: %s", err.message);
    a3s_sandbox_free(sb);
    sb = handle(A3S_SANDBOX_PROCESS_HOST, genuine, "abc", NULL, &err);
    CHECK(!sb && err.code == A3S_E_INVALID, "a malformed digest: %s", err.message);
    a3s_sandbox_free(sb);
    /* a symlink to the init, a directory, a FIFO: not regular files opened without following */
    char link[PATH_MAX + 8];
    snprintf(link, sizeof link, "%s.lnk", pinned);
    CHECK(symlink(genuine, link) == 0, "symlink");
    sb = handle(A3S_SANDBOX_PROCESS_HOST, link, digest, NULL, &err);
    CHECK(!sb && err.code == A3S_E_UNSUPPORTED, "a symlinked init: %s", err.message);
    a3s_sandbox_free(sb);
    unlink(link);
    CHECK(mkfifo(link, 0755) == 0, "fifo");
    sb = handle(A3S_SANDBOX_PROCESS_HOST, link, digest, NULL, &err);
    CHECK(!sb && err.code == A3S_E_UNSUPPORTED, "a FIFO init (and no hang): %s", err.message);
    a3s_sandbox_free(sb);
    unlink(link);
}

int main(void) {
    const char *init = getenv("A3S_INIT") ? getenv("A3S_INIT") : "build/a3s-init";
    if (!realpath(init, genuine) || !file_digest(genuine, digest)) {
        printf("test_init_pin: %s is missing (make init)\n", init);
        return 1;
    }
    CHECK(mkdtemp(ws) != NULL, "mkdtemp");
    snprintf(pinned, sizeof pinned, "%s/.venv/bin/a3s-init", ws);
    snprintf(fake, sizeof fake, "%s/fake-init", ws);
    snprintf(marker, sizeof marker, "%s/pwned", ws);
    CHECK(sh("mkdir -p '%s/.venv/bin'%s", ws, ""), "the workspace's .venv");
    CHECK(sh("cp '%s' '%s'", genuine, pinned), "copy the init into the workspace");
    FILE *f = fopen(fake, "w");
    CHECK(f != NULL, "fake");
    if (f) {
        fprintf(f, "#!/bin/sh\necho pwned > '%s'\necho pwned-one-ok pwned-reuse-ok pwned-host-ok "
                   "spawned-ok\nexit 0\n",
                marker);
        fclose(f);
        chmod(fake, 0755);
    }
    test_digest();
    test_new_handle();
    const char *bwrap = access("/usr/bin/bwrap", X_OK) == 0 ? "/usr/bin/bwrap" : NULL;
    if (!bwrap)
        printf("test_init_pin: the sandboxed cases need /usr/bin/bwrap\n");
    test_replaced(bwrap);
    CHECK(sh("rm -rf '%s'%s", ws, ""), "cleanup");
    return check_report("test_init_pin");
}
