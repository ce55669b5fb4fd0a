/* test_session.c - the long-lived sandbox (A3S_SANDBOX_REUSE) driven from C.
 *
 * Mostly here for the sanitizers: the host side of the long-lived sandbox
 * (start, the exchange of messages, the capture, restarts, stop) runs under
 * ASan, UBSan and the leak checker. It needs bubblewrap and the a3s-init
 * built by `make init` (A3S_INIT overrides the path); without them it says
 * so and passes, since the Python suite is where the boundary is proven.
 */
#define _GNU_SOURCE
#include "a3s/a3s.h"
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static char workspace[PATH_MAX];
static char init_path[PATH_MAX];
static const char *bwrap;

struct run {
    int rc;
    int exit_code;
    uint64_t flags;
    char out[4096];
    char err[4096];
    uint64_t out_total;
    char setup_error[512];
};

static struct run run_options(a3s_sandbox *sb, const a3s_exec_options *o);

static struct run exec_cmd(a3s_sandbox *sb, const char *cmd, uint64_t timeout_ms,
                           uint64_t max_output, const char *const *env, size_t envc,
                           int cancel_fd) {
    a3s_exec_options o = {
        .struct_size = sizeof o,
        .flags = cancel_fd >= 0 ? A3S_EXEC_CANCEL_FD : 0,
        .command = cmd,
        .command_len = strlen(cmd),
        .env = env,
        .envc = envc,
        .timeout_ms = timeout_ms,
        .kill_grace_ms = 200,
        .max_output_bytes = max_output,
        .cancel_fd = cancel_fd,
    };
    return run_options(sb, &o);
}

/* Runs one exec with the options as given and collects what it produced. */
static struct run run_options(a3s_sandbox *sb, const a3s_exec_options *o) {
    struct run r;
    memset(&r, 0, sizeof r);
    a3s_process_result *res = NULL;
    a3s_error err;
    r.rc = a3s_sandbox_exec(sb, o, &res, &err);
    if (r.rc != A3S_OK) {
        snprintf(r.setup_error, sizeof r.setup_error, "%s", err.message);
        return r;
    }
    a3s_process_result_view v = {.struct_size = sizeof v};
    a3s_process_result_get(res, &v, NULL);
    r.exit_code = v.exit_code;
    r.flags = v.flags;
    r.out_total = v.stdout_total;
    snprintf(r.out, sizeof r.out, "%.*s", (int)v.stdout_len, v.stdout_data);
    snprintf(r.err, sizeof r.err, "%.*s", (int)v.stderr_len, v.stderr_data);
    if (v.setup_error)
        snprintf(r.setup_error, sizeof r.setup_error, "%s", v.setup_error);
    a3s_process_result_free(res);
    return r;
}

/* A sandbox over ws with these A3S_SANDBOX_* flags (NULL, a failed check, if it cannot start). */
static a3s_sandbox *new_sandbox_flags(const char *ws, uint64_t flags) {
    a3s_sandbox_config cfg = {
        .struct_size = sizeof cfg,
        .flags = flags,
        .workspace = ws,
        .bwrap_path = bwrap,
        .init_path = init_path,
    };
    a3s_sandbox *sb = NULL;
    a3s_error err;
    int rc = a3s_sandbox_new(&cfg, &sb, &err);
    CHECK(rc == A3S_OK, "a3s_sandbox_new: %s", err.message);
    return sb;
}

/* A long-lived sandbox over ws. */
static a3s_sandbox *new_sandbox(const char *ws) {
    return new_sandbox_flags(ws, A3S_SANDBOX_REUSE);
}

static a3s_sandbox_info info_of(a3s_sandbox *sb) {
    a3s_sandbox_info info = {.struct_size = sizeof info};
    CHECK(a3s_sandbox_info_get(sb, &info, NULL) == A3S_OK, "info");
    return info;
}

struct job {
    a3s_sandbox *sb;
    int n;
    struct run r;
};

static void *concurrent(void *arg) {
    struct job *j = arg;
    char cmd[64];
    snprintf(cmd, sizeof cmd, "sleep 0.3; echo %d", j->n);
    j->r = exec_cmd(j->sb, cmd, 10000, 0, NULL, 0, -1);
    return NULL;
}

static void test_commands(void) {
    a3s_sandbox *sb = new_sandbox(workspace);
    if (!sb)
        return;
    struct run r = exec_cmd(sb, "echo out; echo err >&2; exit 3", 10000, 0, NULL, 0, -1);
    CHECK(r.rc == A3S_OK && r.exit_code == 3 && !strcmp(r.out, "out\n") && !strcmp(r.err, "err\n"),
          "first: rc %d exit %d out '%s' err '%s' setup '%s'", r.rc, r.exit_code, r.out, r.err,
          r.setup_error);
    a3s_sandbox_info info = info_of(sb);
    CHECK(info.starts == 1 && (info.flags & A3S_SANDBOX_INFO_RUNNING) && info.pid > 0, "info");

    r = exec_cmd(sb, "head -c 100000 /dev/zero | tr '\\0' a", 10000, 64, NULL, 0, -1);
    CHECK(r.exit_code == 0 && (r.flags & A3S_RESULT_STDOUT_TRUNCATED) && r.out_total == 100000 &&
              strstr(r.out, "bytes omitted"),
          "flood: exit %d total %llu", r.exit_code, (unsigned long long)r.out_total);

    r = exec_cmd(sb, "sleep 5", 200, 0, NULL, 0, -1);
    CHECK(r.exit_code == 124 && (r.flags & A3S_RESULT_TIMED_OUT), "timeout: %d", r.exit_code);

    int cancel[2];
    CHECK(pipe(cancel) == 0, "pipe");
    CHECK(write(cancel[1], "x", 1) == 1, "write");
    r = exec_cmd(sb, "sleep 5", 10000, 0, NULL, 0, cancel[0]);
    CHECK(r.exit_code == 124 && (r.flags & A3S_RESULT_CANCELLED), "cancel: %d", r.exit_code);
    close(cancel[0]);
    close(cancel[1]);

    const char *env[] = {"FOO=bar baz"};
    r = exec_cmd(sb, "echo \"$FOO|$HOME\"", 10000, 0, env, 1, -1);
    CHECK(!strncmp(r.out, "bar baz|/run/a3s/scratch/", 25), "env: '%s'", r.out);

    const char *bad[] = {"LD_PRELOAD=/x.so"};
    r = exec_cmd(sb, "true", 10000, 0, bad, 1, -1);
    CHECK(r.rc == A3S_E_INVALID, "LD_PRELOAD: rc %d", r.rc);

    r = exec_cmd(sb, "exec /nonexistent/program", 10000, 0, NULL, 0, -1);
    CHECK(r.exit_code == 127, "a missing program is the command's own failure: %d", r.exit_code);
    CHECK(info_of(sb).starts == 1, "one sandbox so far");

    /* two at once: one in the long-lived sandbox, one one-shot */
    struct job a = {.sb = sb, .n = 1}, b = {.sb = sb, .n = 2};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, concurrent, &a);
    pthread_create(&tb, NULL, concurrent, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK(a.r.exit_code == 0 && !strcmp(a.r.out, "1\n"), "thread a: '%s' %s", a.r.out,
          a.r.setup_error);
    CHECK(b.r.exit_code == 0 && !strcmp(b.r.out, "2\n"), "thread b: '%s' %s", b.r.out,
          b.r.setup_error);

    CHECK(a3s_sandbox_stop(sb, NULL) == A3S_OK, "stop");
    info = info_of(sb);
    CHECK(!(info.flags & A3S_SANDBOX_INFO_RUNNING) && info.pid == 0, "stopped");
    r = exec_cmd(sb, "echo again", 10000, 0, NULL, 0, -1);
    CHECK(!strcmp(r.out, "again\n") && info_of(sb).starts == 2, "restart: '%s'", r.out);

    /* a host edit that would detach a bind rebuilds the sandbox */
    char path[PATH_MAX + 16], tmp[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/.gitmodules", workspace);
    snprintf(tmp, sizeof tmp, "%s/.gitmodules.new", workspace);
    CHECK(rmdir(path) == 0, "remove the placeholder (an empty directory)");
    FILE *f = fopen(tmp, "w");
    fputs("saved\n", f);
    fclose(f);
    CHECK(rename(tmp, path) == 0, "rename");
    r = exec_cmd(sb, "echo evil > .gitmodules 2>/dev/null; cat .gitmodules", 10000, 0, NULL, 0,
                 -1);
    CHECK(!strcmp(r.out, "saved\n") && info_of(sb).starts == 3, "rebuilt: '%s'", r.out);
    unlink(path);
    a3s_sandbox_free(sb);
}

static void test_refusal(void) {
    char ws[PATH_MAX + 8], link[PATH_MAX + 16];
    snprintf(ws, sizeof ws, "%s/refused", workspace);
    mkdir(ws, 0700);
    snprintf(link, sizeof link, "%s/.git", ws);
    CHECK(symlink("/etc", link) == 0, "symlink");
    a3s_sandbox *sb = new_sandbox(ws);
    if (!sb)
        return;
    struct run r = exec_cmd(sb, "touch ran", 10000, 0, NULL, 0, -1);
    CHECK(r.exit_code == 125 && (r.flags & A3S_RESULT_SETUP_FAILED) && strstr(r.setup_error, "symlink"),
          "refused: %d '%s'", r.exit_code, r.setup_error);
    CHECK(!(info_of(sb).flags & A3S_SANDBOX_INFO_RUNNING), "nothing runs after a refusal");
    a3s_sandbox_free(sb);
    unlink(link);
    rmdir(ws);
}

/* struct_size versioning of a3s_sandbox_config: a caller built before the
 * resource bounds existed gets the defaults; fields this library does not
 * know are refused unless zero; a bound below the least a sandbox needs is
 * refused; and the bounds reach the commands. */
static void test_config_versions(void) {
    unsigned char buf[sizeof(a3s_sandbox_config) + 16];
    memset(buf, 0, sizeof buf);
    a3s_sandbox_config *cfg = (a3s_sandbox_config *)(void *)buf;
    cfg->workspace = workspace;
    cfg->bwrap_path = bwrap;
    cfg->init_path = init_path;
    a3s_sandbox *sb = NULL;
    a3s_error err;
    size_t before_bounds = offsetof(a3s_sandbox_config, memory_max_bytes);
    cfg->struct_size = before_bounds;
    CHECK(a3s_sandbox_new(cfg, &sb, &err) == A3S_OK, "the older, shorter struct: %s",
          err.message);
    if (sb) {
        struct run r = exec_cmd(sb, "ulimit -u", 10000, 0, NULL, 0, -1);
        CHECK(!strcmp(r.out, "4096\n"), "the older struct gets the default bounds: '%s'", r.out);
    }
    a3s_sandbox_free(sb);
    sb = NULL;
    cfg->struct_size = before_bounds - 1;
    CHECK(a3s_sandbox_new(cfg, &sb, &err) == A3S_E_INVALID, "a struct shorter than any version");
    cfg->struct_size = sizeof buf;
    CHECK(a3s_sandbox_new(cfg, &sb, &err) == A3S_OK, "a longer struct, zero beyond ours");
    a3s_sandbox_free(sb);
    sb = NULL;
    buf[sizeof buf - 1] = 1;
    CHECK(a3s_sandbox_new(cfg, &sb, &err) == A3S_E_INVALID && strstr(err.message, "does not know"),
          "a field this library does not know: %s", err.message);
    buf[sizeof buf - 1] = 0;
    cfg->struct_size = sizeof *cfg;
    cfg->max_processes = 7;
    CHECK(a3s_sandbox_new(cfg, &sb, &err) == A3S_E_INVALID && strstr(err.message, "max_processes"),
          "a process bound below the least: %s", err.message);
    cfg->max_processes = 64;
    cfg->tmpfs_max_bytes = 4u << 20;
    cfg->memory_max_bytes = A3S_NO_LIMIT;
    CHECK(a3s_sandbox_new(cfg, &sb, &err) == A3S_OK, "bounds: %s", err.message);
    if (sb) {
        const char *cmd = "ulimit -u; df -B1 --output=size /tmp | tail -1 | tr -d ' '";
        struct run r = exec_cmd(sb, cmd, 10000, 0, NULL, 0, -1);
        CHECK(!strcmp(r.out, "64\n4194304\n"), "the bounds reach the command: '%s'", r.out);
    }
    a3s_sandbox_free(sb);
}

/* The idle stop: a sandbox that ran nothing for idle_stop_ms is stopped (its
 * placeholders gone from the workspace), the next command starts a new one,
 * and a command longer than the idle time is never stopped under it. */
static void test_idle_stop(void) {
    char ws[PATH_MAX + 16];
    snprintf(ws, sizeof ws, "%s/idle", workspace); /* no other handle's placeholders */
    CHECK(mkdir(ws, 0755) == 0, "mkdir %s", ws);
    a3s_sandbox_config cfg = {
        .struct_size = sizeof cfg,
        .flags = A3S_SANDBOX_REUSE,
        .workspace = ws,
        .bwrap_path = bwrap,
        .init_path = init_path,
        .idle_stop_ms = 300,
    };
    a3s_sandbox *sb = NULL;
    a3s_error err;
    CHECK(a3s_sandbox_new(&cfg, &sb, &err) == A3S_OK, "new: %s", err.message);
    if (!sb)
        return;
    struct run r = exec_cmd(sb, "true", 10000, 0, NULL, 0, -1);
    CHECK(r.exit_code == 0, "the first command: %d %s", r.exit_code, r.setup_error);
    a3s_sandbox_info info = info_of(sb);
    CHECK(info.flags & A3S_SANDBOX_INFO_RUNNING, "up after the command");
    char placeholder[PATH_MAX + 32];
    snprintf(placeholder, sizeof placeholder, "%s/.bashrc", ws);
    struct stat st;
    CHECK(lstat(placeholder, &st) == 0, "its placeholder is in the workspace");
    for (int i = 0; i < 100 && (info_of(sb).flags & A3S_SANDBOX_INFO_RUNNING); i++)
        usleep(20000);
    CHECK(!(info_of(sb).flags & A3S_SANDBOX_INFO_RUNNING), "stopped after 300 ms idle");
    /* (a command that arrives while the stop is still cleaning up runs one-shot: wait) */
    CHECK(a3s_sandbox_stop(sb, NULL) == A3S_OK, "stop waits for the idle stop's end");
    CHECK(lstat(placeholder, &st) < 0 && errno == ENOENT, "and its placeholders removed");
    r = exec_cmd(sb, "echo again", 10000, 0, NULL, 0, -1);
    CHECK(r.exit_code == 0 && !strcmp(r.out, "again\n"), "the next command runs: %d %s",
          r.exit_code, r.setup_error);
    CHECK(info_of(sb).starts == 2, "in a new sandbox (%llu starts)",
          (unsigned long long)info_of(sb).starts);
    r = exec_cmd(sb, "sleep 1; echo long", 10000, 0, NULL, 0, -1);
    CHECK(r.exit_code == 0 && !strcmp(r.out, "long\n"), "a command longer than the idle time");
    CHECK(info_of(sb).starts == 2, "was not stopped under it");
    a3s_sandbox_free(sb); /* with its idle thread waiting */

    cfg.idle_stop_ms = A3S_NO_LIMIT;
    CHECK(a3s_sandbox_new(&cfg, &sb, &err) == A3S_OK, "new: %s", err.message);
    if (!sb)
        return;
    exec_cmd(sb, "true", 10000, 0, NULL, 0, -1);
    usleep(400000);
    CHECK(info_of(sb).flags & A3S_SANDBOX_INFO_RUNNING, "A3S_NO_LIMIT: never stopped");
    a3s_sandbox_free(sb);
}

/* One exec with a grant (grant_fd < 0: none) or a pinned digest, options as given. */
static struct run exec_pinned(a3s_sandbox *sb, const char *cmd, int grant_fd, const char *digest,
                              size_t struct_size) {
    a3s_exec_options o = {
        .struct_size = struct_size,
        .flags = grant_fd >= 0 ? A3S_EXEC_NETWORK_GRANT : 0,
        .command = cmd,
        .command_len = strlen(cmd),
        .timeout_ms = 10000,
        .grant_fd = grant_fd,
        .policy_digest = digest,
    };
    return run_options(sb, &o);
}

/* The mediator's side of a grant in a thread: take the proxy socket, listen, say 'L', accept
 * one connection and greet it; or (refuse) close the grant socket at once. */
struct mediator {
    int fd;
    bool refuse;
    bool got_socket;
    char greeting[32];
};

static void *mediate(void *arg) {
    struct mediator *m = arg;
    char msg[64];
    char control[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {.iov_base = msg, .iov_len = sizeof msg};
    struct msghdr h = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                       .msg_controllen = sizeof control};
    ssize_t n = recvmsg(m->fd, &h, MSG_CMSG_CLOEXEC);
    struct cmsghdr *c = CMSG_FIRSTHDR(&h);
    if (n != A3S_GRANT_MESSAGE_SIZE || !c || c->cmsg_type != SCM_RIGHTS)
        return NULL;
    int listener;
    memcpy(&listener, CMSG_DATA(c), sizeof listener);
    m->got_socket = true;
    if (m->refuse) {
        close(listener);
        shutdown(m->fd, SHUT_RDWR);
        return NULL;
    }
    if (listen(listener, 4) == 0 && send(m->fd, "L", 1, 0) == 1) {
        int conn = accept(listener, NULL, NULL);
        if (conn >= 0) {
            ssize_t w = write(conn, m->greeting, strlen(m->greeting));
            (void)w;
            close(conn);
        }
    }
    close(listener);
    return NULL;
}

/* a3s_sandbox_policy, an exec pinned to its digest, and a grant, in both kinds of sandbox. */
static void test_policy_and_grant(bool reuse) {
    a3s_sandbox *sb = new_sandbox_flags(workspace, reuse ? A3S_SANDBOX_REUSE : 0);
    if (!sb)
        return;
    a3s_error err;
    a3s_policy *policy = NULL;
    CHECK(a3s_sandbox_policy(sb, &policy, &err) == A3S_OK, "policy: %s", err.message);
    size_t len = 0;
    const char *text = a3s_policy_text(policy, &len);
    char digest[A3S_POLICY_DIGEST_SIZE];
    snprintf(digest, sizeof digest, "%s", a3s_policy_digest(policy));
    CHECK(text && len == strlen(text) && !strncmp(text, "codeward sandbox policy 1\n", 26),
          "the text's header");
    CHECK(strlen(digest) == A3S_POLICY_DIGEST_SIZE - 1 && !strncmp(digest, "sha256:", 7),
          "digest '%s'", digest);
    a3s_policy_free(policy);

    struct run r = exec_pinned(sb, "echo pinned", -1, digest, sizeof(a3s_exec_options));
    CHECK(r.rc == A3S_OK && !strcmp(r.out, "pinned\n"), "pinned to the digest: '%s'", r.out);
    char other[A3S_POLICY_DIGEST_SIZE];
    snprintf(other, sizeof other, "sha256:%064d", 0);
    r = exec_pinned(sb, "echo ran", -1, other, sizeof(a3s_exec_options));
    CHECK(r.exit_code == 125 && (r.flags & A3S_RESULT_POLICY_CHANGED) && !strstr(r.out, "ran") &&
              strstr(r.setup_error, "re-approve"),
          "another digest: %d '%s'", r.exit_code, r.setup_error);
    r = exec_pinned(sb, "true", -1, "sha256:short", sizeof(a3s_exec_options));
    CHECK(r.rc == A3S_E_INVALID, "a malformed digest");
    /* a caller built before the grant fields: they are zero */
    r = exec_pinned(sb, "echo old", -1, NULL, offsetof(a3s_exec_options, grant_fd));
    CHECK(r.rc == A3S_OK && !strcmp(r.out, "old\n"), "the older exec options: %s", r.setup_error);

    int sp[2];
    CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == 0, "socketpair");
    r = exec_pinned(sb, "true", sp[1], NULL, sizeof(a3s_exec_options));
    CHECK(r.rc == A3S_E_INVALID && strstr(r.setup_error, "policy_digest"), "a grant needs a digest");
    int pfd[2];
    CHECK(pipe(pfd) == 0, "pipe");
    r = exec_pinned(sb, "true", pfd[0], digest, sizeof(a3s_exec_options));
    CHECK(r.rc == A3S_E_INVALID && strstr(r.setup_error, "SOCK_SEQPACKET"), "a pipe is no grant");
    close(pfd[0]);
    close(pfd[1]);
    /* granted: the command reaches the mediator, once */
    struct mediator m = {.fd = sp[0]};
    snprintf(m.greeting, sizeof m.greeting, "hello %s", reuse ? "long-lived" : "one-shot");
    pthread_t t;
    pthread_create(&t, NULL, mediate, &m);
    r = exec_pinned(sb, "echo $HTTPS_PROXY; exec 3<>/dev/tcp/127.0.0.1/3128 && cat <&3", sp[1],
                    digest, sizeof(a3s_exec_options));
    pthread_join(t, NULL);
    CHECK(r.rc == A3S_OK && r.exit_code == 0 && strstr(r.out, "http://127.0.0.1:3128\n") &&
              strstr(r.out, m.greeting),
          "granted: %d '%s' '%s'", r.exit_code, r.out, r.setup_error);
    /* a mediator that refuses: nothing runs */
    m.refuse = true;
    m.got_socket = false;
    pthread_create(&t, NULL, mediate, &m);
    r = exec_pinned(sb, "echo ran", sp[1], digest, sizeof(a3s_exec_options));
    pthread_join(t, NULL);
    CHECK(m.got_socket && r.exit_code == 125 && !strstr(r.out, "ran") &&
              strstr(r.setup_error, "refused the grant"),
          "refused: %d '%s'", r.exit_code, r.setup_error);
    close(sp[0]);
    close(sp[1]);
    a3s_sandbox_free(sb);
}

/* Threads starting long-lived sandboxes at once (issue 26): each start's
 * intermediate child used to hold the other starts' pipes and wait for an end
 * of file they prevented, forever. A deadlock here ends in SIGALRM. */
#define START_THREADS 6
#define START_ROUNDS 4

static void *start_use_free(void *arg) {
    struct job *j = arg;
    char ws[PATH_MAX + 16], cmd[64];
    snprintf(ws, sizeof ws, "%.*s/starts-%d", PATH_MAX - 16, workspace, j->n);
    CHECK(mkdir(ws, 0700) == 0, "mkdir %s", ws);
    for (int r = 0; r < START_ROUNDS; r++) {
        a3s_sandbox *sb = new_sandbox(ws);
        snprintf(cmd, sizeof cmd, "echo %d-%d", j->n, r);
        struct run run = exec_cmd(sb, cmd, 30000, 0, NULL, 0, -1);
        char want[64];
        snprintf(want, sizeof want, "%d-%d\n", j->n, r);
        CHECK(run.rc == A3S_OK && !strcmp(run.out, want), "start %d round %d: %s (%s)", j->n, r,
              run.out, run.setup_error);
        a3s_sandbox_free(sb);
    }
    return NULL;
}

static void test_concurrent_starts(void) {
    struct job jobs[START_THREADS];
    pthread_t t[START_THREADS];
    alarm(240); /* seconds of work at most; a deadlock is forever */
    for (int i = 0; i < START_THREADS; i++) {
        jobs[i] = (struct job){.n = i};
        pthread_create(&t[i], NULL, start_use_free, &jobs[i]);
    }
    for (int i = 0; i < START_THREADS; i++)
        pthread_join(t[i], NULL);
    alarm(0);
}

/* The exec check through the C API, long-lived and one-shot: a denied exec
 * the line hides is stopped (the result's exec_stop_* and exit 126), an ask
 * waived for its approved command, a malformed pattern refused, and an older
 * caller's shorter result view still read. */
static void test_exec_check(bool reuse) {
    a3s_sandbox *sb = new_sandbox_flags(workspace, reuse ? A3S_SANDBOX_REUSE : 0);
    if (!sb)
        return;
    a3s_error err;
    const char *deny[] = {"touch **"};
    const char *cmd = "x=touch; $x stopped-marker; echo after";
    a3s_exec_options o = {.struct_size = sizeof o,
                          .command = cmd,
                          .command_len = strlen(cmd),
                          .timeout_ms = 30000,
                          .exec_deny = deny,
                          .exec_deny_count = 1};
    a3s_process_result *res = NULL;
    CHECK(a3s_sandbox_exec(sb, &o, &res, &err) == A3S_OK, "exec: %s", err.message);
    a3s_process_result_view v = {.struct_size = sizeof v};
    if (res && a3s_process_result_get(res, &v, &err) == A3S_OK) {
        CHECK(v.exit_code == 126 && (v.flags & A3S_RESULT_EXEC_STOPPED), "reuse %d: exit %d",
              reuse, v.exit_code);
        CHECK(v.exec_stop_list == A3S_LIST_DENY, "list %d", v.exec_stop_list);
        CHECK(v.exec_stop_rule && !strcmp(v.exec_stop_rule, "bash(touch **)"), "rule %s",
              v.exec_stop_rule ? v.exec_stop_rule : "NULL");
        CHECK(v.exec_stop_command && !strcmp(v.exec_stop_command, "touch stopped-marker"),
              "command %s", v.exec_stop_command ? v.exec_stop_command : "NULL");
        CHECK(strstr(v.stdout_data, "after") != NULL, "the line went on");
        CHECK(strstr(v.stderr_data, "codeward: stopped exec of `touch stopped-marker`"),
              "told: %s", v.stderr_data);
        /* a caller built before the exec check fields: the older view size */
        a3s_process_result_view old = {.struct_size =
                                           offsetof(a3s_process_result_view, exec_stop_list)};
        CHECK(a3s_process_result_get(res, &old, NULL) == A3S_OK, "the older view");
    }
    a3s_process_result_free(res);
    char marker[PATH_MAX + 32];
    snprintf(marker, sizeof marker, "%s/stopped-marker", workspace);
    CHECK(access(marker, F_OK) != 0, "the denied touch ran");
    /* an ask, approved for this very command */
    const char *ask[] = {"touch **"}, *approved[] = {"touch approved-marker"};
    const char *cmd2 = "x=touch; $x approved-marker";
    a3s_exec_options o2 = {.struct_size = sizeof o2,
                           .command = cmd2,
                           .command_len = strlen(cmd2),
                           .timeout_ms = 30000,
                           .exec_ask = ask,
                           .exec_ask_count = 1,
                           .exec_approved = approved,
                           .exec_approved_count = 1};
    struct run r = run_options(sb, &o2);
    CHECK(r.rc == A3S_OK && r.exit_code == 0 && !(r.flags & A3S_RESULT_EXEC_STOPPED),
          "approved: exit %d %s", r.exit_code, r.err);
    snprintf(marker, sizeof marker, "%s/approved-marker", workspace);
    CHECK(access(marker, F_OK) == 0, "the approved touch did not run");
    unlink(marker);
    /* a pattern the glob compiler refuses is the caller's mistake */
    const char *bad[] = {""};
    char long_rule[A3S_RULE_MAX_LENGTH + 2];
    memset(long_rule, 'a', sizeof long_rule - 1);
    long_rule[sizeof long_rule - 1] = '\0';
    bad[0] = long_rule;
    o.exec_deny = bad;
    CHECK(a3s_sandbox_exec(sb, &o, &res, &err) == A3S_E_TOO_LARGE, "a rule too long");
    o.exec_deny = NULL;
    CHECK(a3s_sandbox_exec(sb, &o, &res, &err) == A3S_E_INVALID, "a NULL list with a count");
    a3s_sandbox_free(sb);
}

/* Standard input from memory, in the long-lived and the one-shot sandbox. This
 * program keeps SIGPIPE's default (death): a command that leaves its input
 * unread must give the writer EPIPE, never the signal. */
static void test_stdin(bool reuse) {
    a3s_sandbox *sb = new_sandbox_flags(workspace, reuse ? A3S_SANDBOX_REUSE : 0);
    if (!sb)
        return;
    size_t big = 4u << 20;
    char *data = malloc(big);
    memset(data, 'a', big);
    struct {
        const char *cmd;
        size_t len;
        uint64_t timeout_ms;
        int exit_code;
        const char *out;
    } cases[] = {
        {"cat", 6, 10000, 0, "aaaaaa"},
        {"wc -c", big, 10000, 0, "4194304\n"},
        {"echo ignored", big, 10000, 0, "ignored\n"},
        {"head -c 3", big, 10000, 0, "aaa"},
        {"exec 0<&-; sleep 0.1; echo closed", big, 10000, 0, "closed\n"},
        {"sleep 60", big, 200, 124, ""},
        {"wc -c", 0, 10000, 0, "0\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        a3s_exec_options o = {
            .struct_size = sizeof o,
            .command = cases[i].cmd,
            .command_len = strlen(cases[i].cmd),
            .timeout_ms = cases[i].timeout_ms,
            .kill_grace_ms = 200,
            .stdin_data = data,
            .stdin_len = cases[i].len,
        };
        struct run r = run_options(sb, &o);
        CHECK(r.rc == A3S_OK && r.exit_code == cases[i].exit_code && !strcmp(r.out, cases[i].out),
              "stdin (%s) %s: rc %d exit %d out '%.40s' setup '%s'",
              reuse ? "long-lived" : "one-shot", cases[i].cmd, r.rc, r.exit_code, r.out,
              r.setup_error);
    }
    /* a length without bytes is refused; an older caller's struct has no stdin */
    a3s_exec_options o = {.struct_size = sizeof o, .command = "cat", .command_len = 3,
                          .stdin_len = 1};
    CHECK(run_options(sb, &o).rc == A3S_E_INVALID, "stdin_len without stdin_data");
    o.stdin_data = data;
    o.struct_size = offsetof(a3s_exec_options, stdin_data);
    struct run r = run_options(sb, &o);
    CHECK(r.rc == A3S_OK && r.exit_code == 0 && !strcmp(r.out, ""), "short struct: '%s'", r.out);
    free(data);
    a3s_sandbox_free(sb);
}

int main(void) {
    /* placeholders, the fallback of kernels without SECCOMP_ADDFD_FLAG_SEND: these tests edit
     * them on the host; the emulation (init/names.c) is tests/sandbox/test_fs_names.py's */
    setenv("A3S_CODE_PROTECT_NAMES", "placeholders", 1);
    static const char *const candidates[] = {"/usr/bin/bwrap", "/bin/bwrap"};
    for (size_t i = 0; i < 2 && !bwrap; i++)
        if (access(candidates[i], X_OK) == 0)
            bwrap = candidates[i];
    const char *init = getenv("A3S_INIT") ? getenv("A3S_INIT") : "build/a3s-init";
    if (!bwrap || !realpath(init, init_path)) {
        printf("test_session: skipped (no bubblewrap or no %s)\n", init);
        return check_report("test_session");
    }
    char tmpl[] = "/tmp/a3s-test-session-XXXXXX";
    CHECK(mkdtemp(tmpl) != NULL, "mkdtemp");
    snprintf(workspace, sizeof workspace, "%s", tmpl);
    test_commands();
    test_concurrent_starts();
    test_refusal();
    test_config_versions();
    test_idle_stop();
    test_policy_and_grant(true);
    test_policy_and_grant(false);
    test_exec_check(true);
    test_exec_check(false);
    test_stdin(true);
    test_stdin(false);
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf %s", workspace);
    CHECK(system(cmd) == 0, "cleanup");
    return check_report("test_session");
}
