/* test_child.c - owned processes (a3s_child_*) against the real a3s-init and /bin/sh.
 *
 * Pipes both ways, exit statuses, start-up failures, the environment, the
 * descriptors the program sees, and the ownership promises: a setsid daemon
 * is gone after a stop, a program that ignores SIGTERM is killed after the
 * grace, and everything is gone when the caller is SIGKILLed, even while a
 * copy of the caller forked without exec still holds the lifeline. Also a
 * program in a sandbox of its own (a3s_sandbox_spawn) when bubblewrap is
 * there. Runs plain and under ASan/UBSan.
 */
#define _GNU_SOURCE
#include "a3s/a3s.h"
#include "check.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char init_path[PATH_MAX];
static char probe_path[PATH_MAX]; /* child_probe, next to this test */

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int spawn_sh(const char *script, uint64_t grace_ms, a3s_child **c, a3s_child_stdio *io,
                    a3s_error *err) {
    const char *args[] = {"-c", script};
    a3s_child_options o = {
        .struct_size = sizeof o,
        .path = "/bin/sh",
        .args = args,
        .nargs = 2,
        .init_path = init_path,
        .kill_grace_ms = grace_ms,
        .flags = A3S_CHILD_ALLOW_UNOWNED, /* the subreaper's own cases; test_owned below */
    };
    io->struct_size = sizeof *io;
    return a3s_child_spawn(&o, c, io, err);
}

/* Reads until `want` appears or 5 s pass; the text read goes to buf. */
static bool read_until(int fd, const char *want, char *buf, size_t cap) {
    size_t n = 0;
    uint64_t end = now_ms() + 5000;
    buf[0] = '\0';
    while (!strstr(buf, want) && n + 1 < cap && now_ms() < end) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0)
            continue;
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
        buf[n] = '\0';
    }
    return strstr(buf, want) != NULL;
}

static void close_io(a3s_child_stdio *io) {
    close(io->stdin_fd);
    close(io->stdout_fd);
    close(io->stderr_fd);
}

/* Host `sleep` processes whose command line contains `marker`. */
static int count_marked(const char *marker) {
    int found = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9' || atoi(e->d_name) == getpid())
            continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%d/cmdline", atoi(e->d_name));
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
            continue;
        for (ssize_t i = 0; i < n; i++)
            if (buf[i] == '\0')
                buf[i] = ' ';
        buf[n] = '\0';
        found += !strncmp(buf, "sleep ", 6) && strstr(buf, marker) != NULL;
    }
    if (d)
        closedir(d);
    return found;
}

static bool gone_within(const char *marker, uint64_t ms) {
    uint64_t end = now_ms() + ms;
    while (count_marked(marker) > 0 && now_ms() < end)
        poll(NULL, 0, 20);
    return count_marked(marker) == 0;
}

/* How many processes carry the marker once two do (a program and its daemon),
 * or once ms have passed. */
static int two_within(const char *marker, uint64_t ms) {
    uint64_t end = now_ms() + ms;
    while (count_marked(marker) < 2 && now_ms() < end)
        poll(NULL, 0, 10);
    return count_marked(marker);
}

/* spawn_sh, then the script's "ready" line; NULL (a failed check) if either fails. */
static a3s_child *spawn_ready(const char *script, uint64_t grace_ms, a3s_child_stdio *io) {
    a3s_child *c = NULL;
    a3s_error err;
    CHECK(spawn_sh(script, grace_ms, &c, io, &err) == A3S_OK, "spawn: %s", err.message);
    if (!c)
        return NULL;
    char buf[64];
    CHECK(read_until(io->stdout_fd, "ready", buf, sizeof buf), "ready");
    return c;
}

static void test_pipes_and_status(void) {
    a3s_child *c = NULL;
    a3s_child_stdio io;
    a3s_error err;
    int rc = spawn_sh("read line; echo \"got $line\"; echo oops >&2; exit 7", 0, &c, &io, &err);
    CHECK(rc == A3S_OK, "spawn: %s", err.message);
    if (rc)
        return;
    a3s_child_status st = {.struct_size = sizeof st};
    CHECK(a3s_child_info(c, &st, &err) == A3S_OK && st.exit_code == -1 && st.pid > 0,
          "running: %d", st.exit_code);
    CHECK(write(io.stdin_fd, "hello\n", 6) == 6, "write");
    char buf[256];
    CHECK(read_until(io.stdout_fd, "got hello", buf, sizeof buf), "stdout: %s", buf);
    CHECK(read_until(io.stderr_fd, "oops", buf, sizeof buf), "stderr: %s", buf);
    CHECK(a3s_child_wait(c, 5000, &st, &err) == A3S_OK, "wait: %s", err.message);
    CHECK((st.flags & A3S_CHILD_EXITED) && st.exit_code == 7, "exit %d flags %llx",
          st.exit_code, (unsigned long long)st.flags);
    /* end of file once the program is gone */
    CHECK(read(io.stdout_fd, buf, sizeof buf) == 0, "stdout at EOF");
    CHECK(a3s_child_stop(c, &st, &err) == A3S_OK && st.exit_code == 7, "stop after exit");
    a3s_child_free(c);
    close_io(&io);
}

static void test_start_failures(void) {
    a3s_child *c = (a3s_child *)1;
    a3s_child_stdio io = {.struct_size = sizeof io};
    a3s_error err;
    a3s_child_options o = {.struct_size = sizeof o,
                           .path = "/nonexistent/program",
                           .init_path = init_path,
                           .flags = A3S_CHILD_ALLOW_UNOWNED};
    int rc = a3s_child_spawn(&o, &c, &io, &err);
    CHECK(rc == A3S_E_SYSTEM && c == NULL, "missing program: %d", rc);
    CHECK(strstr(err.message, "/nonexistent/program") != NULL, "message: %s", err.message);
    o.path = "relative";
    CHECK(a3s_child_spawn(&o, &c, &io, &err) == A3S_E_INVALID, "relative path");
    o.path = "/bin/true";
    o.flags = 1ull << 9;
    CHECK(a3s_child_spawn(&o, &c, &io, &err) == A3S_E_INVALID, "unknown flags");
    o.flags = A3S_CHILD_ALLOW_UNOWNED;
    o.init_path = "/nonexistent/a3s-init";
    rc = a3s_child_spawn(&o, &c, &io, &err);
    CHECK(rc == A3S_E_UNSUPPORTED && strstr(err.message, "/nonexistent/a3s-init") != NULL,
          "missing init: %s", err.message);
    o.init_path = init_path;
    const char *bad_env[] = {"=x"};
    o.env = bad_env;
    o.envc = 1;
    CHECK(a3s_child_spawn(&o, &c, &io, &err) == A3S_E_INVALID, "malformed env");
    o.env = NULL;
    o.envc = 0;
    o.cwd = "/nonexistent/dir";
    rc = a3s_child_spawn(&o, &c, &io, &err);
    CHECK(rc == A3S_E_SYSTEM && strstr(err.message, "chdir") != NULL, "bad cwd: %s", err.message);
}

static void test_environment_and_fds(void) {
    const char *host[] = {"PATH=/usr/bin:/bin:relative", "HOME=/home/someone", "LANG=C.UTF-8",
                          "GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789",
                          "LD_PRELOAD=/evil.so", "AWS_SECRET_ACCESS_KEY=x"};
    const char *given[] = {"SERVER_TOKEN=configured-by-the-host", "LANG=fr_FR.UTF-8"};
    const char *args[] = {"-c", "env | sort; echo fds; ls /proc/self/fd"};
    a3s_child_options o = {
        .struct_size = sizeof o,
        .path = "/bin/sh",
        .args = args,
        .nargs = 2,
        .env = given,
        .envc = 2,
        .host_env = host,
        .host_envc = 6,
        .init_path = init_path,
        .cwd = "/",
        .flags = A3S_CHILD_ALLOW_UNOWNED,
    };
    a3s_child *c = NULL;
    a3s_child_stdio io = {.struct_size = sizeof io};
    a3s_error err;
    CHECK(a3s_child_spawn(&o, &c, &io, &err) == A3S_OK, "spawn: %s", err.message);
    if (!c)
        return;
    char buf[4096];
    read_until(io.stdout_fd, "\n3\n", buf, sizeof buf);
    CHECK(strstr(buf, "PATH=/usr/bin:/bin\n") != NULL, "PATH cleaned: %s", buf);
    CHECK(strstr(buf, "HOME=/home/someone\n") != NULL, "HOME kept");
    CHECK(strstr(buf, "SERVER_TOKEN=configured-by-the-host\n") != NULL, "given env passes");
    CHECK(strstr(buf, "LANG=fr_FR.UTF-8\n") != NULL && !strstr(buf, "LANG=C.UTF-8"),
          "given env wins");
    CHECK(!strstr(buf, "GITHUB_TOKEN") && !strstr(buf, "LD_PRELOAD") && !strstr(buf, "AWS_"),
          "host secrets and injection dropped: %s", buf);
    const char *fds = strstr(buf, "fds\n");
    /* 0, 1, 2 and the directory ls reads: nothing of the caller or the init */
    CHECK(fds && !strcmp(fds, "fds\n0\n1\n2\n3\n"), "fds: %s", fds ? fds : buf);
    a3s_child_stop(c, NULL, &err);
    a3s_child_free(c);
    close_io(&io);
}

static void test_setsid_daemon_and_stop(void) {
    char marker[32], script[256];
    snprintf(marker, sizeof marker, "731.%d", getpid());
    snprintf(script, sizeof script,
             "setsid sh -c 'exec sleep %s' </dev/null >/dev/null 2>&1 & echo ready; exec sleep %s9",
             marker, marker);
    a3s_child_stdio io;
    a3s_child *c = spawn_ready(script, 500, &io);
    if (!c)
        return;
    a3s_error err;
    int running = two_within(marker, 3000);
    CHECK(running == 2, "daemon and program run: %d", running);
    a3s_child_status st = {.struct_size = sizeof st};
    CHECK(a3s_child_stop(c, &st, &err) == A3S_OK, "stop: %s", err.message);
    CHECK(st.flags & A3S_CHILD_EXITED, "reaped");
    CHECK(!(st.flags & A3S_CHILD_KILLED), "the init did the killing");
    CHECK(gone_within(marker, 1000), "the setsid daemon is gone: %d left", count_marked(marker));
    a3s_child_free(c);
    close_io(&io);
}

static void test_ignores_term(void) {
    char marker[32], script[160];
    snprintf(marker, sizeof marker, "732.%d", getpid());
    snprintf(script, sizeof script, "trap '' TERM; echo ready; sleep %s; sleep %s", marker,
             marker);
    a3s_child_stdio io;
    a3s_child *c = spawn_ready(script, 300, &io);
    if (!c)
        return;
    a3s_error err;
    uint64_t t0 = now_ms();
    a3s_child_status st = {.struct_size = sizeof st};
    CHECK(a3s_child_stop(c, &st, &err) == A3S_OK, "stop: %s", err.message);
    uint64_t took = now_ms() - t0;
    CHECK(took >= 280, "killed only after the grace: %llu ms", (unsigned long long)took);
    CHECK(st.exit_code == 128 + SIGKILL, "killed: %d", st.exit_code);
    CHECK(gone_within(marker, 1000), "gone");
    a3s_child_free(c);
    close_io(&io);
}

/* A helper process spawns the program (and, with fork_copy, forks a copy of
 * itself that keeps the lifeline's write end), then is SIGKILLed. */
static void test_caller_death(bool fork_copy) {
    char marker[32], script[256];
    snprintf(marker, sizeof marker, "733.%d%d", getpid(), fork_copy);
    snprintf(script, sizeof script,
             "setsid sh -c 'exec sleep %s' </dev/null >/dev/null 2>&1 & exec sleep %s", marker,
             marker);
    int ready[2];
    CHECK(pipe(ready) == 0, "pipe");
    pid_t helper = fork();
    if (helper == 0) {
        a3s_child *c = NULL;
        a3s_child_stdio io;
        a3s_error err;
        if (spawn_sh(script, 0, &c, &io, &err) != A3S_OK)
            _exit(1);
        pid_t copy = fork_copy ? fork() : 1;
        if (copy == 0) {
            pause(); /* holds every fd of the helper, the lifeline's write end included */
            _exit(0);
        }
        char pidtext[16];
        int n = snprintf(pidtext, sizeof pidtext, "%d\n", (int)copy);
        if (write(ready[1], pidtext, (size_t)n) < 0)
            _exit(1);
        pause();
        _exit(0);
    }
    close(ready[1]);
    char buf[32] = {0};
    CHECK(read(ready[0], buf, sizeof buf - 1) > 0, "helper ready");
    close(ready[0]);
    pid_t copy = atoi(buf);
    int running = two_within(marker, 3000);
    CHECK(running == 2, "running: %d", running);
    kill(helper, SIGKILL);
    waitpid(helper, NULL, 0);
    CHECK(gone_within(marker, 2000), "gone after the caller's SIGKILL (fork copy %d): %d left",
          fork_copy, count_marked(marker));
    if (fork_copy && copy > 1)
        kill(copy, SIGKILL); /* reparented to init or a subreaper: not ours to reap */
}

static void test_sandboxed(const char *bwrap) {
    char ws[] = "/tmp/a3s-test-child-XXXXXX";
    CHECK(mkdtemp(ws) != NULL, "mkdtemp");
    /* a worktree's .git pointer to a gitdir inside the workspace: bubblewrap
     * binds it from an fd the plan opened, which must reach bubblewrap */
    char gitdir[PATH_MAX + 16], pointer[PATH_MAX + 16];
    snprintf(gitdir, sizeof gitdir, "%s/wt-gitdir", ws);
    snprintf(pointer, sizeof pointer, "%s/.git", ws);
    FILE *gf = fopen(pointer, "w");
    CHECK(mkdir(gitdir, 0755) == 0 && gf && fputs("gitdir: wt-gitdir\n", gf) >= 0, "worktree");
    if (gf)
        fclose(gf);
    /* the caller's stdin is readable (EOF): no spawn may take it for a
     * cancel fd, nor close it when the program is done with */
    int saved_stdin = dup(0), null_fd = open("/dev/null", O_RDONLY);
    CHECK(saved_stdin >= 0 && null_fd >= 0 && dup2(null_fd, 0) == 0, "stdin /dev/null");
    close(null_fd);
    a3s_sandbox_config cfg = {.struct_size = sizeof cfg,
                              .flags = A3S_SANDBOX_WORKSPACE_READONLY,
                              .workspace = ws,
                              .bwrap_path = bwrap,
                              .init_path = init_path};
    a3s_sandbox *sb = NULL;
    a3s_error err;
    CHECK(a3s_sandbox_new(&cfg, &sb, &err) == A3S_OK, "sandbox: %s", err.message);
    if (!sb)
        return;
    const char *args[] = {"-c", "read x; echo \"in $x\"; touch ./created 2>&1 || echo ro; "
                                "test -d wt-gitdir && echo gitdir-bound; "
                                "ls /proc | grep -c '^[0-9]'"};
    const char *env[] = {"GIVEN=yes"};
    a3s_child_options o = {.struct_size = sizeof o,
                           .path = "/bin/sh",
                           .args = args,
                           .nargs = 2,
                           .env = env,
                           .envc = 1};
    a3s_child *c = NULL;
    a3s_child_stdio io = {.struct_size = sizeof io};
    int rc = a3s_sandbox_spawn(sb, &o, &c, &io, &err);
    CHECK(rc == A3S_OK, "sandbox spawn: %s", err.message);
    if (rc == A3S_OK) {
        a3s_child_status st = {.struct_size = sizeof st};
        a3s_child_info(c, &st, NULL);
        CHECK(st.flags & A3S_CHILD_SANDBOXED, "sandboxed flag");
        CHECK(write(io.stdin_fd, "box\n", 4) == 4, "write");
        char buf[512];
        CHECK(read_until(io.stdout_fd, "in box", buf, sizeof buf), "stdout: %s", buf);
        CHECK(a3s_child_wait(c, 5000, &st, &err) == A3S_OK && (st.flags & A3S_CHILD_EXITED),
              "exits");
        char rest[512];
        ssize_t n = read(io.stdout_fd, rest, sizeof rest - 1);
        rest[n > 0 ? n : 0] = '\0';
        strncat(buf, rest, sizeof buf - strlen(buf) - 1);
        CHECK(strstr(buf, "ro") != NULL, "the workspace is read-only: %s", buf);
        CHECK(strstr(buf, "gitdir-bound") != NULL, "the worktree's gitdir is bound: %s", buf);
        struct stat sst;
        CHECK(stat("/tmp", &sst) == 0, "stat");
        a3s_child_free(c);
        close_io(&io);
    }
    /* a program the sandbox cannot start */
    o.path = "/nonexistent/server";
    io.struct_size = sizeof io;
    rc = a3s_sandbox_spawn(sb, &o, &c, &io, &err);
    CHECK(rc == A3S_E_SYSTEM && strstr(err.message, "/nonexistent/server"), "missing: %d %s", rc,
          err.message);
    a3s_sandbox_free(sb);
    CHECK(fcntl(0, F_GETFD) >= 0, "the caller's stdin is still open after the spawns");
    if (saved_stdin >= 0) {
        dup2(saved_stdin, 0);
        close(saved_stdin);
    }
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf %s", ws);
    CHECK(system(cmd) == 0, "cleanup");
}

/* Owned by a cgroup (no bwrap_path, and this caller may make a cgroup of its
 * own: the middle tier): the program ignores TERM, starts a setsid daemon and
 * tries to SIGKILL its init (the guard filter refuses it), then ends; the
 * warden then empties the cgroup, daemon included. */
static void check_cgroup_owned(a3s_child *c, a3s_child_stdio *io, const char *marker) {
    a3s_child_status st = {.struct_size = sizeof st};
    a3s_error err;
    CHECK(a3s_child_info(c, &st, &err) == A3S_OK && (st.flags & A3S_CHILD_CGROUP) &&
              !(st.flags & A3S_CHILD_PID_NAMESPACE),
          "owned by a cgroup: flags %llx", (unsigned long long)st.flags);
    char buf[256];
    CHECK(read_until(io->stdout_fd, "ready", buf, sizeof buf), "ready: %s", buf);
    /* the daemon first (it may not have exec'd sleep yet), then its end */
    uint64_t end = now_ms() + 10000;
    while (count_marked(marker) == 0 && now_ms() < end)
        poll(NULL, 0, 10);
    CHECK(read_until(io->stdout_fd, "tried", buf, sizeof buf), "the kill was tried: %s", buf);
    end = now_ms() + 30000; /* generous: a loaded machine, not a bound under test */
    while (count_marked(marker) > 0 && now_ms() < end)
        poll(NULL, 0, 10);
    CHECK(count_marked(marker) == 0, "left once the program ended: %d", count_marked(marker));
    CHECK(a3s_child_stop(c, &st, &err) == A3S_OK, "stop: %s", err.message);
    a3s_child_free(c);
    close_io(io);
}

/* Owned (bwrap_path): the program is in a pid namespace of its own. It
 * SIGKILLs its init and its parent, ignores TERM, starts a setsid daemon,
 * and looks for the caller in /proc: the init lives on, the caller is not
 * there, and once a3s_child_stop returns nothing of it is left. Without
 * bubblewrap, and without A3S_CHILD_ALLOW_UNOWNED, the spawn is refused. */
static void test_owned(const char *bwrap) {
    char marker[32], script[PATH_MAX + 1024], shm[64];
    snprintf(marker, sizeof marker, "734.%d", getpid());
    snprintf(shm, sizeof shm, "/dev/shm/codeward-test-%d", (int)getpid());
    int shm_fd = open(shm, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    /* a key in this process's session keyring, which the program must not possess */
    long key = syscall(SYS_add_key, "user", "codeward-test-owned", "secret", (size_t)6,
                       -3 /* KEY_SPEC_SESSION_KEYRING */);
    snprintf(script, sizeof script,
             "trap '' TERM; setsid sh -c 'exec sleep %s' </dev/null >/dev/null 2>&1 & "
             "kill -9 1; kill -9 $PPID; [ -e /proc/%d ] && echo sees-caller; "
             "cat /proc/1/environ >/dev/null 2>&1 && echo reads-init; "
             "[ -e %s ] && echo sees-shm; %s keyread %ld; echo ready; sleep %s9; sleep %s9",
             marker, (int)getpid(), shm, probe_path, key, marker, marker);
    const char *args[] = {"-c", script};
    a3s_child_options o = {.struct_size = sizeof o,
                           .path = "/bin/sh",
                           .args = args,
                           .nargs = 2,
                           .init_path = init_path,
                           .kill_grace_ms = 300};
    a3s_child *c = NULL;
    a3s_child_stdio io = {.struct_size = sizeof io};
    a3s_error err;
    /* the middle tier's program: no `kill -9 1`, which would reach the host's init */
    char cg_script[256];
    snprintf(cg_script, sizeof cg_script,
             "trap '' TERM; setsid sh -c 'exec sleep %s' </dev/null >/dev/null 2>&1 & "
             "echo ready; sleep 0.2; kill -9 $PPID 2>/dev/null; echo tried",
             marker);
    const char *cg_args[] = {"-c", cg_script};
    o.args = cg_args;
    int rc = a3s_child_spawn(&o, &c, &io, &err);
    if (rc == A3S_OK && c)
        check_cgroup_owned(c, &io, marker);
    else
        CHECK(rc == A3S_E_UNSUPPORTED && err.detail == A3S_CHILD_UNOWNABLE && c == NULL &&
                  strstr(err.message, "no cgroup of its own"),
              "no bwrap_path, no cgroup, not allowed: refused (%d %s)", rc, err.message);
    c = NULL;
    o.args = args;
    /* a bubblewrap that ends before the init says a word (as one the kernel refuses its
     * namespaces does): refused as unownable, or, where allowed, run under the subreaper */
    const char *quick[] = {"-c", "echo unowned-ran"};
    a3s_child_options q = {.struct_size = sizeof q,
                           .path = "/bin/sh",
                           .args = quick,
                           .nargs = 2,
                           .init_path = init_path,
                           .bwrap_path = "/bin/false"};
    rc = a3s_child_spawn(&q, &c, &io, &err);
    if (rc == A3S_OK && c) { /* the middle tier took it: a cgroup of its own */
        a3s_child_status qs = {.struct_size = sizeof qs};
        CHECK(a3s_child_info(c, &qs, &err) == A3S_OK && (qs.flags & A3S_CHILD_CGROUP),
              "a failing bubblewrap: owned by a cgroup: flags %llx", (unsigned long long)qs.flags);
        a3s_child_free(c);
        close_io(&io);
        c = NULL;
    } else {
        CHECK(rc == A3S_E_UNSUPPORTED && err.detail == A3S_CHILD_UNOWNABLE &&
                  strstr(err.message, "bubblewrap could not make its namespaces"),
              "a failing bubblewrap: refused (%d %s)", rc, err.message);
    }
    q.flags = A3S_CHILD_ALLOW_UNOWNED;
    rc = a3s_child_spawn(&q, &c, &io, &err);
    CHECK(rc == A3S_OK, "a failing bubblewrap, unowned allowed: %s", err.message);
    if (c) {
        char out[64];
        CHECK(read_until(io.stdout_fd, "unowned-ran", out, sizeof out), "ran: %s", out);
        a3s_child_status qs = {.struct_size = sizeof qs};
        CHECK(a3s_child_info(c, &qs, &err) == A3S_OK && !(qs.flags & A3S_CHILD_PID_NAMESPACE),
              "under the subreaper: flags %llx", (unsigned long long)qs.flags);
        a3s_child_free(c);
        close_io(&io);
        c = NULL;
    }
    o.bwrap_path = bwrap;
    rc = a3s_child_spawn(&o, &c, &io, &err);
    if (rc == A3S_E_UNSUPPORTED && err.detail == A3S_CHILD_UNOWNABLE) {
        printf("test_child: owned cases skipped: %s\n", err.message);
        return;
    }
    CHECK(rc == A3S_OK, "owned spawn: %s", err.message);
    if (!c)
        return;
    char buf[256];
    CHECK(read_until(io.stdout_fd, "ready", buf, sizeof buf), "ready: %s", buf);
    CHECK(!strstr(buf, "sees-caller") && !strstr(buf, "reads-init") && !strstr(buf, "sees-shm"),
          "contained: %s", buf);
    if (key > 0) /* where keyrings exist: the caller's session key is out of reach */
        CHECK(strstr(buf, "key-denied") != NULL, "the caller's session key: %s", buf);
    if (shm_fd >= 0) {
        close(shm_fd);
        unlink(shm);
    }
    if (key > 0)
        syscall(SYS_keyctl, 21 /* KEYCTL_INVALIDATE */, key);
    int running = two_within(marker, 3000);
    CHECK(running == 2, "daemon and program run: %d", running);
    a3s_child_status st = {.struct_size = sizeof st};
    CHECK(a3s_child_info(c, &st, &err) == A3S_OK && (st.flags & A3S_CHILD_PID_NAMESPACE) &&
              !(st.flags & A3S_CHILD_EXITED),
          "the init survived its program's SIGKILL: flags %llx", (unsigned long long)st.flags);
    CHECK(a3s_child_stop(c, &st, &err) == A3S_OK, "stop: %s", err.message);
    CHECK(count_marked(marker) == 0, "left after stop returned: %d", count_marked(marker));
    a3s_child_free(c);
    close_io(&io);
    /* owned, a missing working directory is that error, not "cannot be owned" */
    o.cwd = "/nonexistent/dir";
    rc = a3s_child_spawn(&o, &c, &io, &err);
    CHECK(rc == A3S_E_SYSTEM && strstr(err.message, "chdir") != NULL, "owned, bad cwd: %d %s",
          rc, err.message);
    o.cwd = "/tmp";
    const char *pwd_args[] = {"-c", "pwd"};
    o.args = pwd_args;
    rc = a3s_child_spawn(&o, &c, &io, &err);
    CHECK(rc == A3S_OK, "owned, cwd: %s", err.message);
    if (c) {
        char out[64];
        CHECK(read_until(io.stdout_fd, "/tmp\n", out, sizeof out), "owned, cwd: %s", out);
        a3s_child_free(c);
        close_io(&io);
    }
}

/* ---- graceful stops: TERM reaches the program in every mode ---------------------- */

enum mode { SUBREAPER, OWNED, CGROUP, SANDBOX, SANDBOX_REUSE };
static const char *const MODE_NAMES[] = {"subreaper", "owned", "cgroup", "sandbox",
                                         "sandbox-reuse"};

/* Starts script under `mode`: 1 when it runs, 0 when the mode cannot be had
 * here (reported, not failed), -1 on a failure (checked). *sb is the sandbox
 * handle for the sandboxed modes (free it after the child). */
static int spawn_mode(enum mode mode, const char *bwrap, const char *ws, const char *script,
                      uint64_t grace_ms, a3s_sandbox **sb, a3s_child **c, a3s_child_stdio *io) {
    const char *args[] = {"-c", script};
    a3s_child_options o = {.struct_size = sizeof o,
                           .path = "/bin/sh",
                           .args = args,
                           .nargs = 2,
                           .init_path = init_path,
                           .kill_grace_ms = grace_ms};
    a3s_error err;
    *sb = NULL;
    *c = NULL;
    io->struct_size = sizeof *io;
    int rc;
    if (mode == SANDBOX || mode == SANDBOX_REUSE) {
        a3s_sandbox_config cfg = {.struct_size = sizeof cfg,
                                  .flags = mode == SANDBOX_REUSE ? A3S_SANDBOX_REUSE : 0,
                                  .workspace = ws,
                                  .bwrap_path = bwrap,
                                  .init_path = init_path};
        rc = a3s_sandbox_new(&cfg, sb, &err);
        CHECK(rc == A3S_OK, "%s: sandbox: %s", MODE_NAMES[mode], err.message);
        if (rc != A3S_OK)
            return -1;
        rc = a3s_sandbox_spawn(*sb, &o, c, io, &err);
    } else {
        o.flags = mode == SUBREAPER ? A3S_CHILD_ALLOW_UNOWNED : 0;
        o.bwrap_path = mode == OWNED ? bwrap : NULL;
        rc = a3s_child_spawn(&o, c, io, &err);
        if (rc == A3S_E_UNSUPPORTED && err.detail == A3S_CHILD_UNOWNABLE) {
            printf("test_child: graceful stop, %s: not here (%s)\n", MODE_NAMES[mode],
                   err.message);
            return 0;
        }
    }
    CHECK(rc == A3S_OK, "%s: spawn: %s", MODE_NAMES[mode], err.message);
    if (rc == A3S_OK && mode != SUBREAPER) {
        a3s_child_status st = {.struct_size = sizeof st};
        a3s_child_info(*c, &st, NULL);
        uint64_t want = mode == CGROUP ? A3S_CHILD_CGROUP : A3S_CHILD_PID_NAMESPACE;
        if (!(st.flags & want)) { /* a cgroup where a pid namespace was asked: not this mode */
            printf("test_child: graceful stop, %s: not here (flags %llx)\n", MODE_NAMES[mode],
                   (unsigned long long)st.flags);
            a3s_child_free(*c);
            close_io(io);
            a3s_sandbox_free(*sb);
            *c = NULL;
            *sb = NULL;
            return 0;
        }
    }
    return rc == A3S_OK ? 1 : -1;
}

/* A program that handles TERM (and USR1): a signal reaches it and it goes on;
 * a stop with a grace far longer than any test ends with its own status (0:
 * its handler ran), not the KILL after the grace. Then one that ignores TERM
 * is killed after the grace, its setsid daemon with it. */
static void test_graceful(enum mode mode, const char *bwrap, const char *ws) {
    const char *name = MODE_NAMES[mode];
    a3s_sandbox *sb = NULL;
    a3s_child *c = NULL;
    a3s_child_stdio io;
    a3s_error err;
    const char *script = "trap 'echo term-handled; exit 0' TERM; trap 'echo got-usr1' USR1; "
                         "echo ready; while :; do sleep 1; done";
    int ok = spawn_mode(mode, bwrap, ws, script, 120000, &sb, &c, &io);
    if (ok <= 0)
        return;
    char buf[256];
    CHECK(read_until(io.stdout_fd, "ready", buf, sizeof buf), "%s: ready: %s", name, buf);
    CHECK(a3s_child_signal(c, 0, &err) == A3S_E_INVALID, "%s: signal 0 refused", name);
    CHECK(a3s_child_signal(c, 65, &err) == A3S_E_INVALID, "%s: signal 65 refused", name);
    CHECK(a3s_child_signal(c, SIGUSR1, &err) == A3S_OK, "%s: USR1: %s", name, err.message);
    CHECK(read_until(io.stdout_fd, "got-usr1", buf, sizeof buf), "%s: USR1 handled: %s", name,
          buf);
    a3s_child_status st = {.struct_size = sizeof st};
    CHECK(a3s_child_info(c, &st, NULL) == A3S_OK && !(st.flags & A3S_CHILD_EXITED),
          "%s: still runs after USR1", name);
    CHECK(a3s_child_stop(c, &st, &err) == A3S_OK, "%s: stop: %s", name, err.message);
    CHECK(st.exit_code == 0 && !(st.flags & A3S_CHILD_KILLED),
          "%s: TERM reached the program, which exited 0 itself: %d", name, st.exit_code);
    CHECK(read_until(io.stdout_fd, "term-handled", buf, sizeof buf), "%s: handler: %s", name,
          buf);
    CHECK(a3s_child_signal(c, SIGTERM, &err) == A3S_OK, "%s: a signal after the end: %s", name,
          err.message);
    a3s_child_free(c);
    close_io(&io);
    a3s_sandbox_free(sb);

    /* the first signal of a stop chosen by the caller */
    ok = spawn_mode(mode, bwrap, ws, "trap 'exit 3' INT; echo ready; while :; do sleep 1; done",
                    120000, &sb, &c, &io);
    if (ok <= 0)
        return;
    CHECK(read_until(io.stdout_fd, "ready", buf, sizeof buf), "%s: ready: %s", name, buf);
    CHECK(a3s_child_stop_with(c, 99, &st, &err) == A3S_E_INVALID, "%s: stop_with 99", name);
    CHECK(a3s_child_stop_with(c, SIGINT, &st, &err) == A3S_OK && st.exit_code == 3,
          "%s: stopped by INT: %d %s", name, st.exit_code, err.message);
    a3s_child_free(c);
    close_io(&io);
    a3s_sandbox_free(sb);

    char marker[32], ignoring[256];
    snprintf(marker, sizeof marker, "735.%d%d", getpid(), (int)mode);
    snprintf(ignoring, sizeof ignoring,
             "trap '' TERM; setsid sh -c 'trap \"\" TERM; exec sleep %s' </dev/null >/dev/null "
             "2>&1 & echo ready; sleep %s9; sleep %s9",
             marker, marker, marker);
    ok = spawn_mode(mode, bwrap, ws, ignoring, 300, &sb, &c, &io);
    if (ok <= 0)
        return;
    CHECK(read_until(io.stdout_fd, "ready", buf, sizeof buf), "%s: ready: %s", name, buf);
    int running = two_within(marker, 10000);
    CHECK(running == 2, "%s: daemon and program run: %d", name, running);
    uint64_t t0 = now_ms();
    CHECK(a3s_child_stop(c, &st, &err) == A3S_OK, "%s: stop: %s", name, err.message);
    CHECK(now_ms() - t0 >= 280, "%s: killed only after the grace", name);
    CHECK(st.exit_code == 128 + SIGKILL, "%s: TERM ignored, then killed: %d", name,
          st.exit_code);
    CHECK(gone_within(marker, 2000), "%s: nothing of it is left: %d", name,
          count_marked(marker));
    a3s_child_free(c);
    close_io(&io);
    a3s_sandbox_free(sb);
}

static void test_graceful_stops(const char *bwrap) {
    char ws[] = "/tmp/a3s-test-stop-XXXXXX";
    CHECK(mkdtemp(ws) != NULL, "mkdtemp");
    test_graceful(SUBREAPER, bwrap, ws);
    test_graceful(CGROUP, bwrap, ws);
    if (bwrap) {
        test_graceful(OWNED, bwrap, ws);
        test_graceful(SANDBOX, bwrap, ws);
        test_graceful(SANDBOX_REUSE, bwrap, ws);
    }
    CHECK(a3s_child_signal(NULL, SIGTERM, NULL) == A3S_E_INVALID, "NULL handle");
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf %s", ws);
    CHECK(system(cmd) == 0, "cleanup");
}

int main(void) {
    const char *init = getenv("A3S_INIT") ? getenv("A3S_INIT") : "build/a3s-init";
    char self[PATH_MAX - 32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 1;
    self[n] = '\0';
    *strrchr(self, '/') = '\0';
    snprintf(probe_path, sizeof probe_path, "%s/child_probe", self);
    if (!realpath(init, init_path)) {
        printf("test_child: %s is missing (make init)\n", init);
        return 1;
    }
    test_pipes_and_status();
    test_start_failures();
    test_environment_and_fds();
    test_setsid_daemon_and_stop();
    test_ignores_term();
    test_caller_death(false);
    test_caller_death(true);
    const char *bwrap = access("/usr/bin/bwrap", X_OK) == 0 ? "/usr/bin/bwrap" : NULL;
    test_graceful_stops(bwrap);
    if (bwrap) {
        test_sandboxed(bwrap);
        test_owned(bwrap);
    }
    else
        printf("test_child: the sandboxed cases need /usr/bin/bwrap\n");
    return check_report("test_child");
}
