/* test_cgroup.c - a sandbox's own cgroup: made with its bounds, joined, swept, removed.
 *
 * Where this caller may make no cgroup (an unprivileged user without a
 * delegated subtree), a3s_cgroup_create must make nothing and say so; the
 * rest is checked where it can (root, or a delegated cgroup v2 subtree).
 */
#define _GNU_SOURCE
#include "../src/cgroup_linux.h"
#include "check.h"

#if defined(__linux__)

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

static long long read_number(const char *dir, const char *file) {
    char path[PATH_MAX + 64], buf[64] = {0};
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n > 0 ? atoll(buf) : -1;
}

static bool exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* A child that joins and reports how many forks it managed before EAGAIN. */
static int forks_in(const struct a3s_cgroup *cg) {
    int p[2];
    if (pipe(p) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        setpgid(0, 0); /* its own group: the kill below takes it and its children only */
        int n = 0;
        if (a3s_cgroup_join(cg) == 0) {
            for (; n < 64; n++) {
                pid_t k = fork();
                if (k == 0) {
                    pause();
                    _exit(0);
                }
                if (k < 0)
                    break;
            }
        }
        int e = n < 64 && errno == EAGAIN ? n : -n - 1;
        ssize_t w = write(p[1], &e, sizeof e);
        (void)w;
        kill(0, SIGKILL);
        _exit(0);
    }
    close(p[1]);
    int got = -1000;
    ssize_t r = read(p[0], &got, sizeof got);
    (void)r;
    close(p[0]);
    int st;
    waitpid(pid, &st, 0);
    return got;
}

/* A process in the cgroup dfd whose setsid grandchild outlives it: the
 * grandchild's pid in *daemon. The child itself is reaped here. */
static bool start_daemon_in(int dfd, pid_t *daemon) {
    int p[2];
    if (pipe(p) < 0)
        return false;
    pid_t child = fork();
    if (child == 0) {
        int procs = openat(dfd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
        if (procs < 0 || write(procs, "0", 1) != 1)
            _exit(1);
        pid_t d = fork();
        if (d == 0) {
            setsid();
            close(p[1]);
            for (;;)
                pause();
        }
        ssize_t w = write(p[1], &d, sizeof d);
        _exit(w == (ssize_t)sizeof d ? 0 : 1);
    }
    close(p[1]);
    bool ok = read(p[0], daemon, sizeof *daemon) == (ssize_t)sizeof *daemon;
    close(p[0]);
    int st;
    waitpid(child, &st, 0);
    return ok && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* a3s_cgroup_kill_all empties the cgroup dfd, a setsid daemon included. */
static void check_kill_all(int dfd, const char *what) {
    pid_t daemon = -1;
    CHECK(start_daemon_in(dfd, &daemon), "%s: a daemon in the cgroup", what);
    CHECK(daemon > 0 && kill(daemon, 0) == 0, "%s: the daemon runs", what);
    CHECK(a3s_cgroup_kill_all(dfd), "%s: the cgroup was emptied", what);
    /* reparented to the system's init, which reaps it; gone or a zombie for a moment */
    char stat_path[64], buf[256] = "";
    snprintf(stat_path, sizeof stat_path, "/proc/%d/stat", (int)daemon);
    FILE *f = fopen(stat_path, "re");
    if (f) {
        if (!fgets(buf, sizeof buf, f))
            buf[0] = '\0';
        fclose(f);
    }
    const char *state = strrchr(buf, ')');
    CHECK(!f || (state && (state[2] == 'Z' || state[2] == 'X')), "%s: the daemon is gone",
          what);
}

/* The cgroup that owns a program where no user namespace can be made
 * (a3s_child_spawn's middle tier), and the v1 freezer's kill where there is
 * a freezer hierarchy this caller may write to. */
static void test_killable(void) {
    struct a3s_cgroup cg;
    char why[256];
    if (!a3s_cgroup_create_killable(&cg, why, sizeof why)) {
        CHECK(cg.ndirs == 0 && strstr(why, "no cgroup of its own"), "refused: %s", why);
        printf("test_cgroup: no killable cgroup here: %s\n", why);
        return;
    }
    check_kill_all(cg.dir_fd[0], cg.dir[0]);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", cg.dir[0]);
    a3s_cgroup_destroy(&cg);
    CHECK(!exists(dir), "%s removed", dir);
    char v1[PATH_MAX];
    snprintf(v1, sizeof v1, "/sys/fs/cgroup/freezer/codeward-test-%d", (int)getpid());
    if (mkdir(v1, 0755) < 0)
        return; /* no v1 freezer hierarchy, or not ours to write to */
    int dfd = open(v1, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        check_kill_all(dfd, "v1 freezer");
        close(dfd);
    }
    CHECK(rmdir(v1) == 0, "the v1 cgroup is empty and removed: %s", strerror(errno));
}

int main(void) {
    test_killable();
    struct a3s_cgroup cg;
    a3s_cgroup_create(&cg, UINT64_MAX, UINT64_MAX, false);
    CHECK(cg.ndirs == 0 && !cg.memory && !cg.pids, "nothing is made without a bound");

    a3s_cgroup_create(&cg, 64ull << 20, 8, true);
    if (cg.ndirs == 0) {
        CHECK(!cg.memory && !cg.pids && cg.oom_fd < 0, "nothing made, nothing claimed");
        printf("test_cgroup: this caller may make no cgroup here (the fallbacks apply)\n");
        return check_report("test_cgroup");
    }
    printf("test_cgroup: %zu cgroup(s), memory %d, pids %d\n", cg.ndirs, cg.memory, cg.pids);
    for (size_t i = 0; i < cg.ndirs; i++) {
        CHECK(exists(cg.dir[i]), "%s made", cg.dir[i]);
        long long mem = read_number(cg.dir[i], "memory.max");
        if (mem < 0)
            mem = read_number(cg.dir[i], "memory.limit_in_bytes");
        long long pids = read_number(cg.dir[i], "pids.max");
        CHECK(mem < 0 || mem == 64ll << 20, "%s: memory bound %lld", cg.dir[i], mem);
        CHECK(pids < 0 || pids == 8, "%s: pids bound %lld", cg.dir[i], pids);
    }
    CHECK(a3s_cgroup_oom_kills(&cg) == 0, "no OOM kill yet");
    if (cg.pids) {
        int n = forks_in(&cg);
        CHECK(n >= 0 && n < 8, "forks in the cgroup stop at EAGAIN below pids.max (%d)", n);
    }

    /* a sweep removes what a dead owner left, never one whose owner lives */
    struct a3s_cgroup other;
    a3s_cgroup_create(&other, 64ull << 20, 8, false);
    CHECK(other.ndirs == cg.ndirs, "a second cgroup");
    char stale[PATH_MAX + 8];
    snprintf(stale, sizeof stale, "%s", cg.dir[0]);
    char *slash = strrchr(stale, '/');
    snprintf(slash + 1, sizeof stale - (size_t)(slash + 1 - stale), "codeward-stale-test");
    CHECK(mkdir(stale, 0755) == 0, "a stale cgroup: %s", strerror(errno));
    struct a3s_cgroup third;
    a3s_cgroup_create(&third, 64ull << 20, 8, true);
    CHECK(!exists(stale), "the unlocked cgroup was swept");
    CHECK(exists(cg.dir[0]) && exists(other.dir[0]), "locked cgroups were kept");
    if (exists(stale))
        rmdir(stale);

    char gone[A3S_CGROUP_MAX_DIRS][PATH_MAX];
    size_t n = cg.ndirs;
    for (size_t i = 0; i < n; i++)
        snprintf(gone[i], PATH_MAX, "%s", cg.dir[i]);
    a3s_cgroup_destroy(&cg);
    for (size_t i = 0; i < n; i++)
        CHECK(!exists(gone[i]), "%s removed", gone[i]);
    CHECK(cg.ndirs == 0 && cg.oom_fd < 0, "record reset");
    a3s_cgroup_destroy(&other);
    a3s_cgroup_destroy(&third);
    return check_report("test_cgroup");
}

#else
int main(void) {
    printf("test_cgroup: not Linux\n");
    return 0;
}
#endif
