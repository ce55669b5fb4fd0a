/* features_linux.c - what the running Linux kernel offers the sandbox.
 *
 * The probe's result is the library's only global state: it is computed
 * once per process (pthread_once) because it forks a child.
 */
#define _GNU_SOURCE
#include "internal.h"
#include "process_internal.h"

#if defined(__linux__)

#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/utsname.h>
#include <unistd.h>

#ifndef LANDLOCK_CREATE_RULESET_VERSION
#  define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif

static a3s_features_info probed;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

/* Child exit-status bits; the child only calls async-signal-safe functions. */
#define CHILD_USERNS 1
#define CHILD_PIDNS 2

static uint64_t probe_namespaces(void) {
    pid_t pid = fork();
    if (pid < 0)
        return 0;
    if (pid == 0) {
        /* holds no other thread's descriptor while it runs */
        a3s_close_fds_except(NULL, 0, NULL, 0, true, 3);
        int bits = 0;
        if (unshare(CLONE_NEWUSER) == 0) {
            bits |= CHILD_USERNS;
            if (unshare(CLONE_NEWPID) == 0)
                bits |= CHILD_PIDNS;
        }
        _exit(bits);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status))
        return 0;
    uint64_t flags = 0;
    if (WEXITSTATUS(status) & CHILD_USERNS)
        flags |= A3S_FEATURE_USER_NAMESPACES;
    if (WEXITSTATUS(status) & CHILD_PIDNS)
        flags |= A3S_FEATURE_PID_NAMESPACES;
    return flags;
}

static bool seccomp_filter_available(void) {
#ifdef SYS_seccomp
    uint32_t action = SECCOMP_RET_ERRNO;
    return syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
#else
    return false;
#endif
}

static int landlock_abi(void) {
#ifdef SYS_landlock_create_ruleset
    long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return v > 0 ? (int)v : 0;
#else
    return 0;
#endif
}

static bool pidfd_available(void) {
#ifdef SYS_pidfd_open
    long fd = syscall(SYS_pidfd_open, getpid(), 0);
    if (fd < 0)
        return false;
    close((int)fd);
    return true;
#else
    return false;
#endif
}

/* cgroup v2: the unified hierarchy is at /sys/fs/cgroup (or .../unified on a
 * hybrid host) and our cgroup there has a cgroup.kill file. */
static bool cgroup_kill_available(void) {
    int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    char *line = strstr(buf, "0::");
    if (!line || (line != buf && line[-1] != '\n'))
        return false;
    line += 3;
    char *end = strchr(line, '\n');
    if (end)
        *end = '\0';
    static const char *const roots[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        char path[4096 + 64];
        snprintf(path, sizeof path, "%s%s/cgroup.kill", roots[i], line);
        if (access(path, F_OK) == 0)
            return true;
    }
    return false;
}

/* What names.c needs: user notifications answered with an added fd
 * (SECCOMP_ADDFD_FLAG_SEND, Linux 5.14), on an architecture it knows. */
bool a3s_names_emulation_available(void) {
#if (defined(__x86_64__) && !defined(__ILP32__)) || (defined(__aarch64__) && defined(__AARCH64EL__))
    struct utsname u;
    unsigned major = 0, minor = 0;
    if (uname(&u) != 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2)
        return false;
    return major > 5 || (major == 5 && minor >= 14);
#else
    return false;
#endif
}

static void run_probe(void) {
    probed.struct_size = sizeof probed;
    probed.flags = probe_namespaces();
    if (seccomp_filter_available())
        probed.flags |= A3S_FEATURE_SECCOMP_FILTER;
    probed.landlock_abi = landlock_abi();
    if (probed.landlock_abi > 0)
        probed.flags |= A3S_FEATURE_LANDLOCK;
    if (pidfd_available())
        probed.flags |= A3S_FEATURE_PIDFD;
    if (cgroup_kill_available())
        probed.flags |= A3S_FEATURE_CGROUP_KILL;
    if ((probed.flags & A3S_FEATURE_SECCOMP_FILTER) && a3s_names_emulation_available())
        probed.flags |= A3S_FEATURE_NAMES_EMULATED;
}

A3S_API int a3s_features(a3s_features_info *out, a3s_error *err) {
    if (!out || out->struct_size < sizeof(a3s_features_info))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_features: NULL or too small struct");
    int rc = pthread_once(&probe_once, run_probe);
    if (rc != 0)
        return a3s_fail(err, A3S_E_SYSTEM, rc, 0, "a3s_features: pthread_once failed");
    out->flags = probed.flags;
    out->landlock_abi = probed.landlock_abi;
    return a3s_ok(err);
}

#endif /* __linux__ */
