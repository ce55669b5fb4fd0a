/* test_process.c - the process runner: statuses, output capture, stopping
 * process groups, fds, environment, failures, cancellation, threads.
 *
 * Children are /bin/sh and child_probe (built next to this test). Most cases
 * run twice: with pidfd/close_range and with A3S_PROCESS_PORTABLE.
 */
#define _GNU_SOURCE
#include "a3s/a3s.h"
#include "check.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static char probe[PATH_MAX]; /* absolute path of child_probe */

static const uint64_t modes[] = {0, A3S_PROCESS_PORTABLE};
static const char *mode_name(uint64_t m) { return m ? "portable" : "default"; }

/* Must match child_probe.c. */
static unsigned char pattern_byte(unsigned long long i, unsigned salt) {
    return (unsigned char)((i * 131u) ^ (i >> 9) ^ (i >> 17) ^ salt);
}

static const char *const default_env[] = {"PATH=/usr/bin:/bin", "LC_ALL=C"};

static a3s_process_options options(const char *path, const char *const *argv, size_t argc,
                                   uint64_t flags) {
    a3s_process_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.flags = flags;
    o.path = path;
    o.argv = argv;
    o.argc = argc;
    o.envp = default_env;
    o.envc = COUNT(default_env);
    return o;
}

/* Runs o; on success fills *v and returns the result to free, else NULL. */
static a3s_process_result *run(const a3s_process_options *o, a3s_process_result_view *v,
                               a3s_error *err) {
    a3s_process_result *r = NULL;
    int rc = a3s_process_run(o, &r, err);
    if (rc != A3S_OK)
        return NULL;
    memset(v, 0, sizeof *v);
    v->struct_size = sizeof *v;
    if (a3s_process_result_get(r, v, err) != A3S_OK) {
        a3s_process_result_free(r);
        return NULL;
    }
    return r;
}

static bool bytes_eq(const char *a, size_t an, const char *b) {
    return an == strlen(b) && memcmp(a, b, an) == 0;
}

static double ms(uint64_t us) { return (double)us / 1000.0; }

static double wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* True once pid no longer runs (gone, or a zombie waiting for init). */
static bool pid_gone(int pid) {
    for (int i = 0; i < 200; i++) {
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%d/stat", pid);
        FILE *f = fopen(path, "r");
        if (!f)
            return true;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        const char *paren = strrchr(buf, ')');
        if (paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X'))
            return true;
        usleep(10000);
    }
    return false;
}

#if defined(__x86_64__) || defined(__aarch64__)
#  include <sys/syscall.h>
static void ignore_reserved_signals(void) {
    struct { /* the kernel's struct sigaction on these architectures */
        void *handler;
        unsigned long flags;
        void *restorer;
        uint64_t mask;
    } ksa = {(void *)1 /* SIG_IGN */, 0, NULL, 0};
    syscall(SYS_rt_sigaction, 32, &ksa, NULL, sizeof ksa.mask);
    syscall(SYS_rt_sigaction, 33, &ksa, NULL, sizeof ksa.mask);
}
#else
static void ignore_reserved_signals(void) {}
#endif

static int count_open_fds(void) {
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* ---- exit codes, signals, stream separation ---------------------------- */

struct sh_case {
    const char *script;
    int exit_code;
    int term_signal;
    const char *out;
    const char *err;
};

static const struct sh_case sh_cases[] = {
    {"exit 0", 0, 0, "", ""},
    {"exit 1", 1, 0, "", ""},
    {"exit 42", 42, 0, "", ""},
    {"exit 255", 255, 0, "", ""},
    {"kill -TERM $$", 128 + SIGTERM, SIGTERM, "", ""},
    {"kill -KILL $$", 128 + SIGKILL, SIGKILL, "", ""},
    {"kill -INT $$", 128 + SIGINT, SIGINT, "", ""},
    {"kill -USR1 $$", 128 + SIGUSR1, SIGUSR1, "", ""},
    /* The test ignores SIGPIPE (as Python does): the child must not inherit that. */
    {"kill -PIPE $$", 128 + SIGPIPE, SIGPIPE, "", ""},
    {"printf out; printf err >&2; printf more", 0, 0, "outmore", "err"},
    {"echo one; echo two >&2; echo three; exit 7", 7, 0, "one\nthree\n", "two\n"},
    {"printf 'no newline'", 0, 0, "no newline", ""},
    {"cat; echo \"stdin:$?\"", 0, 0, "stdin:0\n", ""}, /* /dev/null: immediate EOF */
};

static void test_sh_cases(void) {
    for (size_t m = 0; m < COUNT(modes); m++) {
        for (size_t i = 0; i < COUNT(sh_cases); i++) {
            const struct sh_case *c = &sh_cases[i];
            const char *argv[] = {"sh", "-c", c->script};
            a3s_process_options o = options("/bin/sh", argv, 3, modes[m]);
            a3s_process_result_view v;
            a3s_error e;
            a3s_process_result *r = run(&o, &v, &e);
            CHECK(r != NULL, "%s [%s]: %s", c->script, mode_name(modes[m]), e.message);
            if (!r)
                continue;
            CHECK(v.exit_code == c->exit_code && v.term_signal == c->term_signal,
                  "%s [%s]: exit %d signal %d", c->script, mode_name(modes[m]), v.exit_code,
                  v.term_signal);
            CHECK(bytes_eq(v.stdout_data, v.stdout_len, c->out) &&
                      bytes_eq(v.stderr_data, v.stderr_len, c->err),
                  "%s: out '%.*s' err '%.*s'", c->script, (int)v.stdout_len, v.stdout_data,
                  (int)v.stderr_len, v.stderr_data);
            CHECK(v.flags == 0 && v.stdout_total == v.stdout_len && v.pid > 0,
                  "%s: flags %llu", c->script, (unsigned long long)v.flags);
            a3s_process_result_free(r);
        }
    }
}

/* ---- output capture ---------------------------------------------------- */

/* What the runner must return for `gen total salt` with cap max. */
static char *expected_capture(uint64_t total, uint64_t max, unsigned salt, size_t *len) {
    uint64_t head = max / 2, tail = max - max / 2;
    char marker[80] = "";
    if (total > max)
        snprintf(marker, sizeof marker, "\n[... a3s: %llu bytes omitted ...]\n",
                 (unsigned long long)(total - max));
    else
        head = total, tail = 0;
    size_t n = (size_t)(head + strlen(marker) + tail);
    char *b = malloc(n + 1);
    size_t k = 0;
    for (uint64_t i = 0; i < head; i++)
        b[k++] = (char)pattern_byte(i, salt);
    memcpy(b + k, marker, strlen(marker));
    k += strlen(marker);
    for (uint64_t i = total - tail; i < total; i++)
        b[k++] = (char)pattern_byte(i, salt);
    *len = k;
    return b;
}

struct cap_case {
    uint64_t total;
    uint64_t max; /* 0: the default */
};

static const struct cap_case cap_cases[] = {
    {0, 10},        {10, 10},         {11, 10},         {1000, 10},    {1000, 1},
    {1000, 2},      {65536, 4096},    {65537, 65536},   {300000, 999}, {1000, 0},
    {102400, 0},    {102401, 0},      {1000000, 0},     {500000, 300001},
};

static void test_caps(void) {
    for (size_t i = 0; i < COUNT(cap_cases); i++) {
        const struct cap_case *c = &cap_cases[i];
        char total[32];
        snprintf(total, sizeof total, "%llu", (unsigned long long)c->total);
        const char *argv[] = {"child_probe", "gen", total, "5"};
        a3s_process_options o = options(probe, argv, 4, 0);
        o.max_output_bytes = c->max;
        uint64_t max = c->max ? c->max : A3S_PROCESS_DEFAULT_MAX_OUTPUT;
        a3s_process_result_view v;
        a3s_error e;
        a3s_process_result *r = run(&o, &v, &e);
        CHECK(r != NULL, "gen %s: %s", total, e.message);
        if (!r)
            continue;
        size_t want_len;
        char *want = expected_capture(c->total, max, 5, &want_len);
        bool trunc = c->total > max;
        CHECK(v.exit_code == 0 && v.stdout_total == c->total && v.stderr_total == 0,
              "gen %s: exit %d total %llu", total, v.exit_code,
              (unsigned long long)v.stdout_total);
        CHECK(!!(v.flags & A3S_RESULT_STDOUT_TRUNCATED) == trunc &&
                  !(v.flags & A3S_RESULT_STDERR_TRUNCATED),
              "gen %s cap %llu: flags %llu", total, (unsigned long long)max,
              (unsigned long long)v.flags);
        CHECK(v.stdout_len == want_len && memcmp(v.stdout_data, want, want_len) == 0 &&
                  v.stdout_data[v.stdout_len] == '\0',
              "gen %s cap %llu: content differs (len %zu, want %zu)", total,
              (unsigned long long)max, v.stdout_len, want_len);
        free(want);
        a3s_process_result_free(r);
    }
}

/* 100 MB on each stream at once through a 4 KB cap. */
static void test_flood(void) {
    const uint64_t total = 100ull << 20, max = 4096;
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    char total_s[32];
    snprintf(total_s, sizeof total_s, "%llu", (unsigned long long)total);
    const char *argv[] = {"child_probe", "flood", total_s};
    a3s_process_options o = options(probe, argv, 3, 0);
    o.max_output_bytes = max;
    o.timeout_ms = 20000;
    a3s_process_result_view v;
    a3s_error e;
    a3s_process_result *r = run(&o, &v, &e);
    CHECK(r != NULL, "flood: %s", e.message);
    if (!r)
        return;
    getrusage(RUSAGE_SELF, &after);
    CHECK(v.exit_code == 0 && v.flags == (A3S_RESULT_STDOUT_TRUNCATED |
                                          A3S_RESULT_STDERR_TRUNCATED),
          "flood: exit %d flags %llu", v.exit_code, (unsigned long long)v.flags);
    CHECK(v.stdout_total == total && v.stderr_total == total, "flood totals %llu %llu",
          (unsigned long long)v.stdout_total, (unsigned long long)v.stderr_total);
    size_t want_len;
    char *want = expected_capture(total, max, 1, &want_len);
    CHECK(v.stdout_len == want_len && memcmp(v.stdout_data, want, want_len) == 0,
          "flood stdout content");
    free(want);
    want = expected_capture(total, max, 2, &want_len);
    CHECK(v.stderr_len == want_len && memcmp(v.stderr_data, want, want_len) == 0,
          "flood stderr content");
    free(want);
    long grown_kb = after.ru_maxrss - before.ru_maxrss;
    CHECK(grown_kb < 32 * 1024, "flood: max RSS grew by %ld KB", grown_kb);
    a3s_process_result_free(r);
}

static void test_binary(void) {
    const char *argv[] = {"child_probe", "bin"};
    a3s_process_options o = options(probe, argv, 2, 0);
    a3s_process_result_view v;
    a3s_error e;
    a3s_process_result *r = run(&o, &v, &e);
    CHECK(r != NULL, "bin: %s", e.message);
    if (!r)
        return;
    static const char want[] = {'a', '\0', 'b', '\xff', '\xfe', '\xc3', '(', '\0', '\x80'};
    CHECK(v.stdout_len == sizeof want && memcmp(v.stdout_data, want, sizeof want) == 0,
          "bin stdout (%zu bytes)", v.stdout_len);
    CHECK(v.stderr_len == 3 && memcmp(v.stderr_data, want + 3, 3) == 0, "bin stderr");
    a3s_process_result_free(r);
}

/* ---- timeouts and process groups --------------------------------------- */

static void test_timeouts(void) {
    for (size_t m = 0; m < COUNT(modes); m++) {
        const char *mn = mode_name(modes[m]);
        /* A plain sleeper ends at the SIGTERM. */
        const char *argv1[] = {"sh", "-c", "echo started; exec sleep 100"};
        a3s_process_options o = options("/bin/sh", argv1, 3, modes[m]);
        o.timeout_ms = 200;
        a3s_process_result_view v;
        a3s_error e;
        a3s_process_result *r = run(&o, &v, &e);
        CHECK(r != NULL, "timeout [%s]: %s", mn, e.message);
        if (r) {
            CHECK(v.exit_code == 124 && v.term_signal == SIGTERM &&
                      v.flags == A3S_RESULT_TIMED_OUT,
                  "timeout [%s]: exit %d signal %d flags %llu", mn, v.exit_code, v.term_signal,
                  (unsigned long long)v.flags);
            CHECK(v.duration_us >= 200000 && v.duration_us < 1500000, "timeout [%s]: %.1f ms", mn,
                  ms(v.duration_us));
            CHECK(bytes_eq(v.stdout_data, v.stdout_len, "started\n"), "output before timeout");
            a3s_process_result_free(r);
        }

        /* One that ignores SIGTERM gets SIGKILL after the grace period. */
        const char *argv2[] = {"child_probe", "ignterm"};
        o = options(probe, argv2, 2, modes[m]);
        o.timeout_ms = 300;
        o.kill_grace_ms = 300;
        r = run(&o, &v, &e);
        CHECK(r != NULL, "ignterm [%s]: %s", mn, e.message);
        if (r) {
            CHECK(v.exit_code == 124 && v.term_signal == SIGKILL &&
                      v.flags == A3S_RESULT_TIMED_OUT,
                  "ignterm [%s]: exit %d signal %d", mn, v.exit_code, v.term_signal);
            CHECK(v.duration_us >= 600000 && v.duration_us < 2000000, "ignterm [%s]: %.1f ms",
                  mn, ms(v.duration_us));
            CHECK(bytes_eq(v.stdout_data, v.stdout_len, "ready\n"), "ignterm output");
            a3s_process_result_free(r);
        }

        /* The whole group is stopped, not just the child. */
        const char *argv3[] = {"sh", "-c", "sleep 100 & echo $!; wait"};
        o = options("/bin/sh", argv3, 3, modes[m]);
        o.timeout_ms = 200;
        r = run(&o, &v, &e);
        CHECK(r != NULL, "group timeout [%s]: %s", mn, e.message);
        if (r) {
            int gc = atoi(v.stdout_data);
            CHECK(v.exit_code == 124 && gc > 0 && pid_gone(gc),
                  "group timeout [%s]: exit %d, grandchild %d still runs", mn, v.exit_code, gc);
            a3s_process_result_free(r);
        }
    }
}

static void test_grandchildren(void) {
    for (size_t m = 0; m < COUNT(modes); m++) {
        const char *mn = mode_name(modes[m]);
        /* A background job holding stdout dies with the group; no hang. */
        const char *argv1[] = {"sh", "-c", "sleep 100 & echo $!"};
        a3s_process_options o = options("/bin/sh", argv1, 3, modes[m]);
        a3s_process_result_view v;
        a3s_error e;
        a3s_process_result *r = run(&o, &v, &e);
        CHECK(r != NULL, "background [%s]: %s", mn, e.message);
        if (r) {
            int gc = atoi(v.stdout_data);
            CHECK(v.exit_code == 0 && v.flags == 0, "background [%s]: exit %d", mn, v.exit_code);
            CHECK(v.duration_us < 1000000, "background [%s]: took %.1f ms", mn,
                  ms(v.duration_us));
            CHECK(gc > 0 && pid_gone(gc), "background [%s]: grandchild %d outlived the run", mn,
                  gc);
            a3s_process_result_free(r);
        }

        /* A grandchild in its own session keeps the pipes open: the run
         * returns after the drain window anyway (the grandchild survives;
         * the sandbox's pid namespace is what kills those). */
        const char *argv2[] = {"child_probe", "setsid_hold", "5"};
        o = options(probe, argv2, 3, modes[m]);
        double t0 = wall_ms();
        r = run(&o, &v, &e);
        double took = wall_ms() - t0;
        CHECK(r != NULL, "setsid [%s]: %s", mn, e.message);
        if (r) {
            int gc = atoi(v.stdout_data);
            CHECK(v.exit_code == 0 && gc > 0, "setsid [%s]: exit %d", mn, v.exit_code);
            CHECK(took >= A3S_PROCESS_DRAIN_MS - 20 && took < A3S_PROCESS_DRAIN_MS + 800,
                  "setsid [%s]: took %.1f ms", mn, took);
            if (gc > 0)
                kill(gc, SIGKILL);
            a3s_process_result_free(r);
        }
    }
}

/* ---- fds, environment, cwd, signals ------------------------------------ */

static void test_fds(void) {
    /* A leaked fd without CLOEXEC, and two kept fds, one of them CLOEXEC. */
    int leaked = open("/dev/null", O_RDONLY);
    int kept_plain = open("/dev/null", O_RDONLY);
    int tmp = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int kept_cloexec = fcntl(tmp, F_DUPFD_CLOEXEC, 40);
    close(tmp);
    CHECK(leaked >= 3 && kept_plain >= 3 && kept_cloexec >= 40, "test fds");
    int keep[] = {kept_cloexec, kept_plain};
    char want[64];
    snprintf(want, sizeof want, "0 1 2 %d %d", kept_plain, kept_cloexec);
    for (size_t m = 0; m < COUNT(modes); m++) {
        const char *argv[] = {"child_probe", "fds"};
        a3s_process_options o = options(probe, argv, 2, modes[m]);
        a3s_process_result_view v;
        a3s_error e;
        a3s_process_result *r = run(&o, &v, &e);
        CHECK(r && bytes_eq(v.stdout_data, v.stdout_len, "0 1 2"), "fds [%s]: '%.*s' %s",
              mode_name(modes[m]), r ? (int)v.stdout_len : 0, r ? v.stdout_data : "",
              r ? "" : e.message);
        a3s_process_result_free(r);

        o.keep_fds = keep;
        o.keep_fd_count = COUNT(keep);
        r = run(&o, &v, &e);
        CHECK(r && bytes_eq(v.stdout_data, v.stdout_len, want), "keep_fds [%s]: '%.*s' want '%s'",
              mode_name(modes[m]), r ? (int)v.stdout_len : 0, r ? v.stdout_data : "", want);
        a3s_process_result_free(r);
    }
    /* CLOEXEC is cleared in the child only. */
    CHECK(fcntl(kept_cloexec, F_GETFD) == FD_CLOEXEC, "parent's fd flags changed");
    close(leaked);
    close(kept_plain);
    close(kept_cloexec);
}

static void test_env_cwd(void) {
    static const char *const env[] = {"A=1", "B=two words", "EMPTY=", "X=y=z", "NONASCII=\xc3\xa9"};
    const char *argv[] = {"child_probe", "env"};
    a3s_process_options o = options(probe, argv, 2, 0);
    o.envp = env;
    o.envc = COUNT(env);
    a3s_process_result_view v;
    a3s_error e;
    a3s_process_result *r = run(&o, &v, &e);
    CHECK(r && bytes_eq(v.stdout_data, v.stdout_len,
                        "A=1\nB=two words\nEMPTY=\nX=y=z\nNONASCII=\xc3\xa9\n"),
          "env: '%.*s'", r ? (int)v.stdout_len : 0, r ? v.stdout_data : e.message);
    a3s_process_result_free(r);

    o.envp = NULL;
    o.envc = 0;
    r = run(&o, &v, &e);
    CHECK(r && v.stdout_len == 0, "empty env: '%.*s'", r ? (int)v.stdout_len : 0,
          r ? v.stdout_data : e.message);
    a3s_process_result_free(r);

    char dir[] = "/tmp/a3s-test-cwd-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    const char *argv2[] = {"child_probe", "cwd"};
    o = options(probe, argv2, 2, 0);
    o.cwd = dir;
    r = run(&o, &v, &e);
    CHECK(r && bytes_eq(v.stdout_data, v.stdout_len, dir), "cwd: '%.*s'",
          r ? (int)v.stdout_len : 0, r ? v.stdout_data : e.message);
    a3s_process_result_free(r);
    rmdir(dir);

    /* Now it is gone: chdir fails in the child and is reported as such. */
    r = run(&o, &v, &e);
    char want[PATH_MAX + 128];
    snprintf(want, sizeof want, "chdir %s (for %s): No such file or directory", dir, probe);
    CHECK(r == NULL && e.code == A3S_E_SYSTEM && e.sys_errno == ENOENT &&
              strcmp(e.message, want) == 0,
          "missing cwd: code %d errno %d '%s'", e.code, e.sys_errno, e.message);
    a3s_process_result_free(r);
}

static void test_child_state(void) {
    /* Block a signal in this thread (SIGPIPE is ignored by main): the child
     * must start with an empty mask, default dispositions, its own session. */
    sigset_t usr2, old;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &usr2, &old);
    for (size_t m = 0; m < COUNT(modes); m++) {
        const char *argv[] = {"child_probe", "self"};
        a3s_process_options o = options(probe, argv, 2, modes[m]);
        a3s_process_result_view v;
        a3s_error e;
        a3s_process_result *r = run(&o, &v, &e);
        CHECK(r && bytes_eq(v.stdout_data, v.stdout_len,
                            "sigblk=0000000000000000 sigign=0000000000000000 session=1 group=1 "
                            "stdin=/dev/null"),
              "child state [%s]: '%.*s'", mode_name(modes[m]), r ? (int)v.stdout_len : 0,
              r ? v.stdout_data : e.message);
        a3s_process_result_free(r);
    }
    sigset_t now;
    pthread_sigmask(SIG_SETMASK, &old, &now);
    CHECK(sigismember(&now, SIGUSR2) == 1, "the caller's mask was not restored");
}

/* ---- failures and invalid options -------------------------------------- */

static void test_exec_failures(void) {
    char noexec[] = "/tmp/a3s-test-noexec-XXXXXX";
    int fd = mkstemp(noexec);
    CHECK(fd >= 0, "mkstemp");
    close(fd);
    chmod(noexec, 0644);
    struct {
        const char *path;
        int sys_errno;
    } cases[] = {{"/nope", ENOENT}, {"/nope/deeper", ENOENT}, {noexec, EACCES}, {"/tmp", EACCES}};
    for (size_t m = 0; m < COUNT(modes); m++) {
        for (size_t i = 0; i < COUNT(cases); i++) {
            const char *argv[] = {"x"};
            a3s_process_options o = options(cases[i].path, argv, 1, modes[m]);
            a3s_process_result *r = (a3s_process_result *)&o; /* must be reset to NULL */
            a3s_error e;
            int rc = a3s_process_run(&o, &r, &e);
            char want[256];
            snprintf(want, sizeof want, "execve %s: %s", cases[i].path,
                     strerror(cases[i].sys_errno));
            CHECK(rc == A3S_E_SYSTEM && r == NULL && e.code == A3S_E_SYSTEM &&
                      e.sys_errno == cases[i].sys_errno && strcmp(e.message, want) == 0,
                  "exec %s: rc %d errno %d '%s'", cases[i].path, rc, e.sys_errno, e.message);
        }
    }
    unlink(noexec);
}

static void test_invalid(void) {
    const char *argv[] = {"sh", "-c", "exit 0"};
    const char *null_argv[] = {"sh", NULL};
    const char *null_env[] = {"A=1", NULL};
    int bad_keep_low[] = {2};
    int bad_keep_closed[] = {987654};
    enum {
        V_NULL_OPTS, V_NULL_OUT, V_SIZE_SMALL, V_SIZE_ZERO, V_FLAGS, V_PATH_NULL,
        V_PATH_RELATIVE, V_ARGV_NULL, V_ARGC_ZERO, V_ARGV_ENTRY, V_ENVP_NULL, V_ENVP_ENTRY,
        V_KEEP_NULL, V_KEEP_LOW, V_KEEP_CLOSED, V_CANCEL_BAD, V_COUNT
    };
    for (int k = 0; k < V_COUNT; k++) {
        a3s_process_options o = options("/bin/sh", argv, 3, 0);
        a3s_process_result *r = (a3s_process_result *)&o;
        a3s_process_result **out = &r;
        const a3s_process_options *op = &o;
        switch (k) {
        case V_NULL_OPTS: op = NULL; break;
        case V_NULL_OUT: out = NULL; break;
        case V_SIZE_SMALL: o.struct_size = sizeof o - 1; break;
        case V_SIZE_ZERO: o.struct_size = 0; break;
        case V_FLAGS: o.flags = 1ull << 40; break;
        case V_PATH_NULL: o.path = NULL; break;
        case V_PATH_RELATIVE: o.path = "bin/sh"; break;
        case V_ARGV_NULL: o.argv = NULL; break;
        case V_ARGC_ZERO: o.argc = 0; break;
        case V_ARGV_ENTRY: o.argv = null_argv, o.argc = 2; break;
        case V_ENVP_NULL: o.envp = NULL; break;
        case V_ENVP_ENTRY: o.envp = null_env, o.envc = 2; break;
        case V_KEEP_NULL: o.keep_fd_count = 1; break;
        case V_KEEP_LOW: o.keep_fds = bad_keep_low, o.keep_fd_count = 1; break;
        case V_KEEP_CLOSED: o.keep_fds = bad_keep_closed, o.keep_fd_count = 1; break;
        case V_CANCEL_BAD: o.flags = A3S_PROCESS_CANCEL_FD, o.cancel_fd = -1; break;
        }
        a3s_error e;
        int rc = a3s_process_run(op, out, &e);
        CHECK(rc == A3S_E_INVALID && e.code == A3S_E_INVALID, "invalid case %d: rc %d", k, rc);
        CHECK(out == NULL || r == NULL, "invalid case %d: *out not reset", k);
    }

    /* Views that are too small, NULL handles. */
    const char *ok_argv[] = {"sh", "-c", "exit 0"};
    a3s_process_options o = options("/bin/sh", ok_argv, 3, 0);
    a3s_process_result_view v;
    a3s_error e;
    a3s_process_result *r = run(&o, &v, &e);
    CHECK(r != NULL, "exit 0: %s", e.message);
    v.struct_size = sizeof v - 1;
    CHECK(a3s_process_result_get(r, &v, &e) == A3S_E_INVALID, "small view");
    v.struct_size = sizeof v;
    CHECK(a3s_process_result_get(NULL, &v, &e) == A3S_E_INVALID, "NULL result");
    CHECK(a3s_process_result_get(r, NULL, &e) == A3S_E_INVALID, "NULL view");
    a3s_process_result_free(r);
    a3s_process_result_free(NULL);
}

/* ---- cancellation ------------------------------------------------------ */

static void test_cancel(void) {
    for (size_t m = 0; m < COUNT(modes); m++) {
        const char *mn = mode_name(modes[m]);
        const char *argv[] = {"sh", "-c", "exec sleep 100"};
        /* A timerfd becomes readable after 200 ms. */
        int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
        struct itimerspec its = {{0, 0}, {0, 200 * 1000000}};
        timerfd_settime(tfd, 0, &its, NULL);
        a3s_process_options o = options("/bin/sh", argv, 3, modes[m] | A3S_PROCESS_CANCEL_FD);
        o.cancel_fd = tfd;
        o.timeout_ms = 10000;
        a3s_process_result_view v;
        a3s_error e;
        a3s_process_result *r = run(&o, &v, &e);
        CHECK(r && v.exit_code == 124 && v.flags == A3S_RESULT_CANCELLED &&
                  v.term_signal == SIGTERM,
              "cancel [%s]: %s exit %d flags %llu", mn, r ? "" : e.message, r ? v.exit_code : 0,
              r ? (unsigned long long)v.flags : 0ull);
        CHECK(r && v.duration_us >= 190000 && v.duration_us < 1500000, "cancel [%s]: %.1f ms",
              mn, r ? ms(v.duration_us) : 0.0);
        a3s_process_result_free(r);
        close(tfd);

        /* Already cancelled: stops at once (and the fd is not consumed). */
        int efd = eventfd(1, EFD_CLOEXEC);
        o.cancel_fd = efd;
        for (int again = 0; again < 2; again++) {
            r = run(&o, &v, &e);
            CHECK(r && v.flags == A3S_RESULT_CANCELLED && v.duration_us < 1000000,
                  "pre-cancelled [%s] #%d", mn, again);
            a3s_process_result_free(r);
        }
        close(efd);

        /* A cancel fd that never fires changes nothing. */
        int p[2];
        CHECK(pipe2(p, O_CLOEXEC) == 0, "pipe");
        const char *argv2[] = {"sh", "-c", "echo hi"};
        o = options("/bin/sh", argv2, 3, modes[m] | A3S_PROCESS_CANCEL_FD);
        o.cancel_fd = p[0];
        r = run(&o, &v, &e);
        CHECK(r && v.exit_code == 0 && v.flags == 0 &&
                  bytes_eq(v.stdout_data, v.stdout_len, "hi\n"),
              "idle cancel fd [%s]", mn);
        a3s_process_result_free(r);
        close(p[0]);
        close(p[1]);
    }
}

/* ---- threads ----------------------------------------------------------- */

/* How many slow runs are in progress at once, and the most seen: two threads
 * whose runs never overlapped were serialised by the runner. */
struct overlap {
    pthread_mutex_t lock;
    int running;
    int most;
};

struct worker {
    int id;
    int failures;
    char first_failure[256];
    struct overlap *overlap;
};

static void overlap_enter(struct overlap *o) {
    pthread_mutex_lock(&o->lock);
    if (++o->running > o->most)
        o->most = o->running;
    pthread_mutex_unlock(&o->lock);
}

static void overlap_leave(struct overlap *o) {
    pthread_mutex_lock(&o->lock);
    o->running--;
    pthread_mutex_unlock(&o->lock);
}

static void worker_fail(struct worker *w, const char *what) {
    if (w->failures++ == 0)
        snprintf(w->first_failure, sizeof w->first_failure, "%s", what);
}

static void *worker_main(void *arg) {
    struct worker *w = arg;
    char salt[16], script[64];
    snprintf(salt, sizeof salt, "%d", 10 + w->id);
    /* Slow runs overlap with the other thread's... */
    for (int i = 0; i < 3; i++) {
        snprintf(script, sizeof script, "sleep 0.3; echo T%d-%d", w->id, i);
        const char *argv[] = {"sh", "-c", script};
        a3s_process_options o = options("/bin/sh", argv, 3, i % 2 ? A3S_PROCESS_PORTABLE : 0);
        a3s_process_result_view v;
        a3s_error e;
        overlap_enter(w->overlap);
        a3s_process_result *r = run(&o, &v, &e);
        overlap_leave(w->overlap);
        char want[32];
        snprintf(want, sizeof want, "T%d-%d\n", w->id, i);
        if (!r || !bytes_eq(v.stdout_data, v.stdout_len, want))
            worker_fail(w, r ? "slow run output" : e.message);
        a3s_process_result_free(r);
    }
    /* ...and many quick ones race on fork and fds. */
    for (int i = 0; i < 30; i++) {
        const char *argv[] = {"child_probe", "gen", "3000", salt};
        a3s_process_options o = options(probe, argv, 4, i % 2 ? A3S_PROCESS_PORTABLE : 0);
        a3s_process_result_view v;
        a3s_error e;
        a3s_process_result *r = run(&o, &v, &e);
        size_t want_len;
        char *want = expected_capture(3000, A3S_PROCESS_DEFAULT_MAX_OUTPUT,
                                      (unsigned)(10 + w->id), &want_len);
        if (!r || v.stdout_len != want_len || memcmp(v.stdout_data, want, want_len) != 0)
            worker_fail(w, r ? "quick run output" : e.message);
        free(want);
        a3s_process_result_free(r);
    }
    return NULL;
}

static void test_threads(void) {
    struct overlap overlap = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct worker w[2] = {{1, 0, "", &overlap}, {2, 0, "", &overlap}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, worker_main, &w[i]) == 0, "pthread_create");
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++)
        CHECK(w[i].failures == 0, "thread %d: %d failures, first: %s", w[i].id, w[i].failures,
              w[i].first_failure);
    /* Each slow run sleeps 300 ms: unless the runner serialises them, the
     * two threads' runs are in progress at the same time. */
    CHECK(overlap.most == 2, "the threads' runs never overlapped");
}

/* ---- results shaped by the sandbox layer ------------------------------- */

/* Internal (not exported): the sandbox layer's view of them. */
a3s_process_result *a3s_process_result_synthetic(int32_t exit_code, uint64_t flags,
                                                 const char *setup_error);
int a3s_process_result_override(a3s_process_result *r, int32_t exit_code, int32_t term_signal,
                                uint64_t flags, const char *setup_error);
int a3s_process_result_set_neutralized(a3s_process_result *r, const char *text);

static void test_shaped_results(void) {
    const uint64_t setup_failed = 1ull << 4;
    a3s_process_result *r = a3s_process_result_synthetic(125, setup_failed, "bwrap: no");
    a3s_process_result_view v;
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    CHECK(r && a3s_process_result_get(r, &v, NULL) == A3S_OK, "synthetic");
    CHECK(r && v.exit_code == 125 && v.flags == setup_failed && v.pid == 0 && v.setup_error &&
              strcmp(v.setup_error, "bwrap: no") == 0 && v.stdout_data && v.stdout_len == 0 &&
              v.stderr_data && v.stderr_len == 0,
          "synthetic view");
    a3s_process_result_free(r);

    const char *argv[] = {"sh", "-c", "echo hi; exit 3"};
    a3s_process_options o = options("/bin/sh", argv, 3, 0);
    a3s_error e;
    r = run(&o, &v, &e);
    CHECK(r && v.setup_error == NULL, "real run has no setup_error");
    CHECK(a3s_process_result_override(r, 124, 0, A3S_RESULT_TIMED_OUT, NULL) == A3S_OK,
          "override");
    a3s_process_result_get(r, &v, NULL);
    CHECK(v.exit_code == 124 && v.flags == A3S_RESULT_TIMED_OUT && v.setup_error == NULL &&
              bytes_eq(v.stdout_data, v.stdout_len, "hi\n"),
          "override view: exit %d", v.exit_code);
    a3s_process_result_override(r, 125, 0, setup_failed, "first");
    a3s_process_result_override(r, 125, 0, setup_failed, "second");
    a3s_process_result_get(r, &v, NULL);
    CHECK(v.exit_code == 125 && v.flags == (A3S_RESULT_TIMED_OUT | setup_failed) &&
              strcmp(v.setup_error, "second") == 0,
          "second override");
    a3s_process_result_free(r);
}

/* struct_size versioning of a3s_process_result_view: a caller built before
 * `neutralized` existed passes the shorter view, which is filled up to its
 * end and not a byte beyond; a size that is no version's is refused (as is
 * sizeof - 1 in test_invalid). */
static void test_view_versions(void) {
    a3s_process_result *r = a3s_process_result_synthetic(125, 1ull << 4, "older");
    CHECK(r && a3s_process_result_set_neutralized(r, "a note") == A3S_OK, "result");
    if (!r)
        return;
    a3s_process_result_view v;
    unsigned char *bytes = (unsigned char *)&v;
    size_t oldest = offsetof(a3s_process_result_view, neutralized);
    memset(&v, 0xab, sizeof v);
    v.struct_size = oldest;
    CHECK(a3s_process_result_get(r, &v, NULL) == A3S_OK && v.exit_code == 125 &&
              v.setup_error && strcmp(v.setup_error, "older") == 0,
          "the older, shorter view");
    bool untouched = true;
    for (size_t i = oldest; i < sizeof v; i++)
        untouched &= bytes[i] == 0xab;
    CHECK(untouched, "nothing written past the older view");
    v.struct_size = oldest - 1;
    CHECK(a3s_process_result_get(r, &v, NULL) == A3S_E_INVALID, "a view shorter than any");
    v.struct_size = oldest + 1;
    CHECK(a3s_process_result_get(r, &v, NULL) == A3S_E_INVALID, "a size between versions");
    v.struct_size = sizeof v;
    CHECK(a3s_process_result_get(r, &v, NULL) == A3S_OK && v.neutralized &&
              strcmp(v.neutralized, "a note") == 0,
          "the current view");
    a3s_process_result_free(r);
}

/* ---- host requirements ------------------------------------------------- */

static void test_sigchld_ignored(void) {
    struct sigaction ign, old;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(SIGCHLD, &ign, &old);
    const char *argv[] = {"sh", "-c", "exit 0"};
    a3s_process_options o = options("/bin/sh", argv, 3, 0);
    a3s_process_result *r = NULL;
    a3s_error e;
    CHECK(a3s_process_run(&o, &r, &e) == A3S_E_UNSUPPORTED && r == NULL,
          "SIGCHLD ignored: %s", e.message);
    sigaction(SIGCHLD, &old, NULL);
}

int main(void) {
    char self[PATH_MAX - 32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 1;
    self[n] = '\0';
    *strrchr(self, '/') = '\0';
    snprintf(probe, sizeof probe, "%s/child_probe", self);
    /* Ignored dispositions survive execve: ignore what hosts ignore (Python
     * SIGPIPE, GNU make the libc-reserved 32 and 33, which glibc will not
     * let sigaction change) and check that children start from defaults. */
    signal(SIGPIPE, SIG_IGN);
    signal(SIGUSR1, SIG_IGN);
    ignore_reserved_signals();

    int fds_before = count_open_fds();
    double t0 = wall_ms();
    test_flood(); /* first, so that max RSS measures the runner alone */
    test_sh_cases();
    test_caps();
    test_binary();
    test_timeouts();
    test_grandchildren();
    test_fds();
    test_env_cwd();
    test_child_state();
    test_exec_failures();
    test_invalid();
    test_cancel();
    test_threads();
    test_shaped_results();
    test_view_versions();
    test_sigchld_ignored();

    CHECK(count_open_fds() == fds_before, "fds leaked: %d before, %d after", fds_before,
          count_open_fds());
    CHECK(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD, "a child was left unreaped");
    int subreaper = -1;
    prctl(PR_GET_CHILD_SUBREAPER, &subreaper);
    CHECK(subreaper == 0, "the caller became a subreaper");
    printf("test_process: %.1f s\n", (wall_ms() - t0) / 1000.0);
    return check_report("test_process");
}
