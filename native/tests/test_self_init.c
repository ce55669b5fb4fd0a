/* test_self_init.c - a program that carries the init itself (A3S_SANDBOX_SELF_INIT).
 *
 * This test is linked with the init's sources renamed by init/embed.h and
 * init/embed.c, as the Go package is, so its own executable is the init: a
 * long-lived sandbox, a one-shot run, the self-test and the process host
 * all run it as /run/a3s/init. The hostile case: the program's path is
 * replaced after the handle was made, by a script that would run
 * unconfined as the init: the sandbox refuses to start (125) rather than
 * run it, and the process host still runs the running image. It
 * needs bubblewrap; without it it says so and passes (the Go suite is where
 * the binding is proven).
 */
#define _GNU_SOURCE
#include "a3s/a3s.h"
#include "check.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *bwrap;

struct run {
    int rc;
    int exit_code;
    char out[4096];
    char setup_error[512];
};

static struct run run(a3s_sandbox *sb, const char *cmd) {
    struct run r;
    memset(&r, 0, sizeof r);
    a3s_exec_options o = {.struct_size = sizeof o,
                          .command = cmd,
                          .command_len = strlen(cmd),
                          .timeout_ms = 20000,
                          .kill_grace_ms = 200};
    a3s_process_result *res = NULL;
    a3s_error err;
    r.rc = a3s_sandbox_exec(sb, &o, &res, &err);
    if (r.rc != A3S_OK) {
        snprintf(r.setup_error, sizeof r.setup_error, "%s", err.message);
        return r;
    }
    a3s_process_result_view v = {.struct_size = sizeof v};
    a3s_process_result_get(res, &v, NULL);
    r.exit_code = v.exit_code;
    snprintf(r.out, sizeof r.out, "%.*s", (int)v.stdout_len, v.stdout_data);
    if (v.setup_error)
        snprintf(r.setup_error, sizeof r.setup_error, "%s", v.setup_error);
    a3s_process_result_free(res);
    return r;
}

static a3s_sandbox *new_sandbox(const char *ws, uint64_t flags) {
    a3s_sandbox_config cfg = {
        .struct_size = sizeof cfg,
        .flags = flags | A3S_SANDBOX_SELF_INIT,
        .workspace = ws,
        .bwrap_path = (flags & A3S_SANDBOX_PROCESS_HOST) ? NULL : bwrap,
    };
    a3s_sandbox *sb = NULL;
    a3s_error err;
    int rc = a3s_sandbox_new(&cfg, &sb, &err);
    CHECK(rc == A3S_OK, "a3s_sandbox_new: %s", err.message);
    return sb;
}

/* PID 1 of the sandbox (or the command's parent on the host) is this program as the init. */
static const char *const WHO_INIT =
    "tr '\\0' ' ' < /proc/$PPID/cmdline | cut -d' ' -f1-3; echo ran";

static void test_each_way(const char *ws) {
    static const struct {
        const char *name;
        uint64_t flags;
        const char *expect;
    } ways[] = {
        {"long-lived", A3S_SANDBOX_REUSE, "/run/a3s/init --mode server\nran\n"},
        {"one-shot", 0, "/run/a3s/init --mode sandbox\nran\n"},
        {"process host", A3S_SANDBOX_PROCESS_HOST, "/run/a3s/init --mode host\nran\n"},
    };
    for (size_t i = 0; i < sizeof ways / sizeof ways[0]; i++) {
        a3s_sandbox *sb = new_sandbox(ws, ways[i].flags);
        if (!sb)
            continue;
        struct run r = run(sb, WHO_INIT);
        CHECK(r.rc == A3S_OK && r.exit_code == 0 && strcmp(r.out, ways[i].expect) == 0,
              "%s: rc %d exit %d out '%s' setup '%s'", ways[i].name, r.rc, r.exit_code, r.out,
              r.setup_error);
        a3s_error err;
        int rc = a3s_sandbox_probe(sb, 10000, &err);
        CHECK(rc == A3S_OK, "%s: the self-test: %s", ways[i].name, err.message);
        a3s_sandbox_free(sb);
    }
}

/* Run as a copy of this program whose path is then replaced by a script. */
static int replaced_child(const char *ws, const char *self) {
    a3s_sandbox *sb = new_sandbox(ws, A3S_SANDBOX_REUSE);
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.new", self);
    FILE *f = fopen(tmp, "w");
    CHECK(f != NULL, "fopen %s", tmp);
    if (f) {
        fputs("#!/bin/sh\necho unconfined\nexit 0\n", f);
        fclose(f);
    }
    CHECK(chmod(tmp, 0755) == 0 && rename(tmp, self) == 0, "replacing %s", self);
    /* refused, and the script never runs as the init */
    struct run r = {.rc = -1};
    if (sb)
        r = run(sb, "echo confined");
    CHECK(sb && r.rc == A3S_OK && r.exit_code == 125 && strstr(r.setup_error, "replaced") &&
              !strstr(r.out, "unconfined"),
          "after the replacement: rc %d exit %d out '%s' setup '%s'", r.rc, r.exit_code, r.out,
          r.setup_error);
    /* and on the process host, where /proc/self/exe is still the running image */
    a3s_sandbox *host = new_sandbox(ws, A3S_SANDBOX_PROCESS_HOST);
    if (host)
        r = run(host, "echo host");
    CHECK(host && r.rc == A3S_OK && strcmp(r.out, "host\n") == 0, "process host: '%s' '%s'",
          r.out, r.setup_error);
    a3s_sandbox_free(host);
    a3s_sandbox_free(sb);
    return check_report("test_self_init (replaced)");
}

static void test_replaced_path(const char *ws) {
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s-bin/test_self_init", ws);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s-bin", ws);
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cp /proc/%d/exe %s", dir, (int)getpid(), copy);
    CHECK(system(cmd) == 0, "%s", cmd);
    snprintf(cmd, sizeof cmd, "%s --replaced %s", copy, ws);
    CHECK(system(cmd) == 0, "the copy whose path was replaced failed");
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0, "cleanup");
}

int main(int argc, char **argv) {
    static const char *const candidates[] = {"/usr/bin/bwrap", "/bin/bwrap"};
    for (size_t i = 0; i < 2 && !bwrap; i++)
        if (access(candidates[i], X_OK) == 0)
            bwrap = candidates[i];
    if (argc == 3 && strcmp(argv[1], "--replaced") == 0) {
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        self[n > 0 ? n : 0] = '\0';
        return replaced_child(argv[2], self);
    }
    if (!bwrap) {
        printf("test_self_init: skipped (no bubblewrap)\n");
        return check_report("test_self_init");
    }
    char tmpl[] = "/tmp/a3s-test-self-init-XXXXXX";
    CHECK(mkdtemp(tmpl) != NULL, "mkdtemp");
    test_each_way(tmpl);
    test_replaced_path(tmpl);
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpl);
    CHECK(system(cmd) == 0, "cleanup");
    return check_report("test_self_init");
}
