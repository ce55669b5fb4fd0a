/* probe_seccomp.c - the self-test's proof that every denial of the filter holds.
 *
 * The readiness probe (a3s-init --probe, run as the sandboxed command)
 * calls each system call of the filter's table of plain denials on the
 * running kernel and checks that it fails with the errno the table names:
 * a rule the build lost, a number that is wrong for this kernel, or a
 * filter that was never installed shows up here, before any command runs.
 *
 * None of the calls may run for real if a rule were missing (reboot,
 * kexec_load, mount ...). So a child first adds a filter of its own that
 * answers SECCOMP_RET_TRACE for each of them: with no tracer attached the
 * kernel skips such a call and returns ENOSYS, unless an earlier filter
 * (the sandbox's) answered SECCOMP_RET_ERRNO, which takes precedence over
 * TRACE. The calls the table refuses with ENOSYS itself (clone3, openat2)
 * cannot be told apart that way; they are made for real with all-zero
 * arguments, which the kernel refuses (EINVAL for a zero-sized struct)
 * without doing anything.
 */
#define _GNU_SOURCE
#include "init.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_DENIALS 128

/* A filter answering TRACE for every call of the table but the ENOSYS ones. */
static size_t trace_filter(const struct a3s_seccomp_denial *t, size_t n,
                           struct sock_filter *out, size_t cap) {
    size_t len = 0;
    if (cap < 2)
        return 0;
    out[len++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                              offsetof(struct seccomp_data, nr));
    for (size_t i = 0; i < n; i++) {
        if (t[i].nr < 0 || t[i].err == ENOSYS)
            continue;
        if (len + 3 > cap)
            return 0;
        out[len++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)t[i].nr,
                                                  0, 1);
        out[len++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE);
    }
    out[len++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    return len;
}

/* In the child: every call's errno into got[] (0 when it succeeded). */
static _Noreturn void run_calls(const struct a3s_seccomp_denial *t, size_t n, int report) {
    static struct sock_filter insns[2 * MAX_DENIALS + 2];
    struct sock_fprog prog = {.len = (unsigned short)trace_filter(t, n, insns, 2 * MAX_DENIALS + 2),
                              .filter = insns};
    if (prog.len == 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
        _exit(2);
    int got[MAX_DENIALS];
    for (size_t i = 0; i < n; i++) {
        got[i] = -1;
        if (t[i].nr < 0)
            continue;
        errno = 0;
        long rc = syscall(t[i].nr, 0L, 0L, 0L, 0L, 0L, 0L);
        got[i] = rc < 0 ? errno : 0;
    }
    ssize_t w = write(report, got, n * sizeof got[0]);
    _exit(w == (ssize_t)(n * sizeof got[0]) ? 0 : 3);
}

int probe_denials(char *detail, size_t cap) {
    size_t n = 0;
    const struct a3s_seccomp_denial *t = a3s_seccomp_denials(&n);
    detail[0] = '\0';
    if (!t || n == 0 || n > MAX_DENIALS) {
        snprintf(detail, cap, "no table of denials for this architecture");
        return -1;
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        snprintf(detail, cap, "pipe2: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        run_calls(t, n, p[1]);
    }
    close(p[1]);
    int got[MAX_DENIALS];
    ssize_t r = -1;
    if (pid > 0) {
        do
            r = read(p[0], got, n * sizeof got[0]);
        while (r < 0 && errno == EINTR);
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
        }
    }
    close(p[0]);
    if (r != (ssize_t)(n * sizeof got[0])) {
        snprintf(detail, cap, "the checking process failed");
        return -1;
    }
    /* the detail lists the failures, or else every call checked */
    int failures = 0, checked = 0;
    for (size_t i = 0; i < n; i++)
        failures += t[i].nr >= 0 && got[i] != t[i].err;
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i].nr < 0)
            continue;
        checked++;
        bool ok = got[i] == t[i].err;
        int w = 0;
        if (failures && !ok)
            w = snprintf(detail + used, cap - used, "%s%s got %s, want %s", used ? "; " : "",
                         t[i].name, got[i] ? strerror(got[i]) : "success", strerror(t[i].err));
        else if (!failures)
            w = snprintf(detail + used, cap - used, "%s%s", used ? " " : "", t[i].name);
        if (w > 0)
            used = used + (size_t)w < cap ? used + (size_t)w : cap - 1;
    }
    return failures ? -failures : checked;
}
