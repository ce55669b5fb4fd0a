/* test_seccomp.c - the seccomp deny-list of the sandboxed command.
 *
 * 1. The generated BPF runs in a test interpreter (bpf_interp.c) over
 *    synthetic struct seccomp_data: a table of (arch, nr, args, expected
 *    action) covering every rule and its boundaries, foreign ABIs, x32, and
 *    sweeps over every system call number with zero and all-ones arguments
 *    against this file's own list of what must be refused.
 * 2. Real system calls: a forked child installs the filter and runs probes,
 *    each in its own grandchild, reporting errno values through pipes.
 *    The probes run twice: under the real filter (each refused call must
 *    fail with exactly the documented errno, each allowed one must work),
 *    and under a copy whose ERRNO returns are moved up by MARK (EPERM ->
 *    3001, ...), an errno no kernel produces: a refusal that shows up
 *    marked came from our filter, not from missing capabilities, sysctls or
 *    an outer seccomp profile that would give the same errno.
 */
#define _GNU_SOURCE
#include "a3s/a3s.h"
#include "check.h"

#if defined(__linux__)

#include "../src/seccomp_linux.h"
#include "bpf_interp.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#if defined(__x86_64__) && !defined(__ILP32__)
#  define NATIVE AUDIT_ARCH_X86_64
#  define COMPAT AUDIT_ARCH_I386 /* int 0x80 from a 64-bit process */
#  define OTHER AUDIT_ARCH_AARCH64
#  define SUPPORTED 1
#elif defined(__aarch64__) && !defined(__ILP32__) && defined(__BYTE_ORDER__) &&                 \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#  define NATIVE AUDIT_ARCH_AARCH64
#  define COMPAT AUDIT_ARCH_ARM /* AArch32 task */
#  define OTHER AUDIT_ARCH_X86_64
#  define SUPPORTED 1
#endif

#define ALLOW SECCOMP_RET_ALLOW
#define ERR(e) (SECCOMP_RET_ERRNO | (uint32_t)(e))
#ifndef SECCOMP_RET_KILL_PROCESS
#  define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif
#define KILL SECCOMP_RET_KILL_PROCESS

#ifndef CLONE_NEWCGROUP
#  define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef CLONE_NEWTIME
#  define CLONE_NEWTIME 0x00000080
#endif
#ifndef CLONE_PIDFD
#  define CLONE_PIDFD 0x00001000
#endif

static const char *action_name(uint32_t r, char *buf, size_t cap) {
    if (r == ALLOW)
        snprintf(buf, cap, "ALLOW");
    else if (r == KILL)
        snprintf(buf, cap, "KILL_PROCESS");
    else if ((r & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO)
        snprintf(buf, cap, "ERRNO(%u)", (unsigned)(r & SECCOMP_RET_DATA));
    else
        snprintf(buf, cap, "0x%08x", (unsigned)r);
    return buf;
}

/* Runs the program over one seccomp_data; a refused program is a failure. */
static uint32_t eval(const struct a3s_seccomp_program *p, uint32_t arch, uint32_t nr,
                     const uint64_t args[6], size_t *steps) {
    struct seccomp_data sd;
    memset(&sd, 0, sizeof sd);
    sd.nr = (int)nr;
    sd.arch = arch;
    sd.instruction_pointer = 0x7f0000401000ull;
    for (int i = 0; i < 6; i++)
        sd.args[i] = args[i];
    uint32_t r = 0xdeadbeefu;
    const char *why = "";
    size_t where = 0;
    int rc = bpf_interp_run(p->filter, p->len, &sd, &r, steps, &why, &where);
    CHECK(rc == 0, "interpreter refused the program: %s at %zu", why, where);
    return r;
}

/* ------------------------------------------------------------------------ */
/* 0. The interpreter itself                                                  */
/* ------------------------------------------------------------------------ */

#define STMT(c, k) {(unsigned short)(c), 0, 0, (k)}
#define JMP(c, k, t, f) {(unsigned short)(c), (t), (f), (k)}

static void test_interpreter(void) {
    /* A = nr & 0xf0; if A == 0x10 -> 1; if A > 0x20 -> 2; if A >= 0x20 -> 3;
     * if A & 0x40 -> 4 (unreachable); else JA -> 5 */
    static const struct sock_filter prog[] = {
        STMT(BPF_LD | BPF_W | BPF_ABS, 0),
        STMT(BPF_ALU | BPF_AND | BPF_K, 0xf0),
        JMP(BPF_JMP | BPF_JEQ | BPF_K, 0x10, 5, 0),
        JMP(BPF_JMP | BPF_JGT | BPF_K, 0x20, 5, 0),
        JMP(BPF_JMP | BPF_JGE | BPF_K, 0x20, 5, 0),
        JMP(BPF_JMP | BPF_JSET | BPF_K, 0x08, 5, 0),
        STMT(BPF_JMP | BPF_JA, 5),
        STMT(BPF_RET | BPF_K, 0),
        STMT(BPF_RET | BPF_K, 1),
        STMT(BPF_RET | BPF_K, 2),
        STMT(BPF_RET | BPF_K, 3),
        STMT(BPF_RET | BPF_K, 4),
        STMT(BPF_RET | BPF_K, 5),
    };
    struct a3s_seccomp_program p = {(struct sock_filter *)prog, sizeof prog / sizeof prog[0]};
    static const struct {
        uint32_t nr, want;
    } runs[] = {{0x13, 1}, {0x1f, 1}, {0x30, 2}, {0x2f, 3}, {0x00, 5}, {0x0f, 5}, {0x100, 5}};
    uint64_t args[6] = {0};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        uint32_t r = eval(&p, 0, runs[i].nr, args, NULL);
        CHECK(r == runs[i].want, "interpreter: nr 0x%x -> %u, want %u", runs[i].nr, r,
              runs[i].want);
    }

    const char *why;
    size_t where;
    struct sock_filter bad[3];
    memcpy(bad, prog + 10, sizeof bad); /* three returns */
    CHECK(bpf_interp_check(bad, 3, &why, &where) == 0, "three returns are a program");
    bad[1] = (struct sock_filter)STMT(BPF_LD | BPF_W | BPF_IND, 0);
    CHECK(bpf_interp_check(bad, 3, &why, &where) == -1 && where == 1, "unknown opcode refused");
    bad[1] = (struct sock_filter)STMT(BPF_ALU | BPF_OR | BPF_K, 0);
    CHECK(bpf_interp_check(bad, 3, &why, &where) == -1, "ALU OR refused");
    bad[1] = (struct sock_filter)JMP(BPF_JMP | BPF_JEQ | BPF_X, 0, 0, 0);
    CHECK(bpf_interp_check(bad, 3, &why, &where) == -1, "JEQ X refused");
    bad[1] = (struct sock_filter)JMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0);
    CHECK(bpf_interp_check(bad, 3, &why, &where) == -1, "jump past the end refused");
    bad[1] = (struct sock_filter)STMT(BPF_JMP | BPF_JA, 0xffffffffu);
    CHECK(bpf_interp_check(bad, 3, &why, &where) == -1, "huge JA refused");
    bad[1] = (struct sock_filter)STMT(BPF_LD | BPF_W | BPF_ABS, 2);
    CHECK(bpf_interp_check(bad, 3, &why, &where) == -1, "misaligned load refused");
    bad[1] = (struct sock_filter)STMT(BPF_LD | BPF_W | BPF_ABS, sizeof(struct seccomp_data));
    CHECK(bpf_interp_check(bad, 3, &why, &where) == -1, "load past seccomp_data refused");
    bad[1] = (struct sock_filter)STMT(BPF_LD | BPF_W | BPF_ABS, sizeof(struct seccomp_data) - 4);
    CHECK(bpf_interp_check(bad, 3, &why, &where) == 0, "load of the last word accepted");
    bad[2] = (struct sock_filter)STMT(BPF_ALU | BPF_AND | BPF_K, 0);
    CHECK(bpf_interp_check(bad, 3, &why, &where) == -1 && where == 2, "no final return refused");
    CHECK(bpf_interp_check(bad, 0, &why, &where) == -1, "empty program refused");
}

/* ------------------------------------------------------------------------ */
/* 1. The rules, through the interpreter                                      */
/* ------------------------------------------------------------------------ */

#if defined(SUPPORTED)

/* What must be refused whatever the arguments: this file's own statement
 * of the policy, written independently of src/seccomp_linux.c. */
struct denied {
    const char *name;
    uint32_t nr;
    int err;
};

#define D(name, e) {#name, SYS_##name, e}

static const struct denied plain_denied[] = {
    D(listen, EPERM),
    D(accept, EPERM),
    D(accept4, EPERM),
#ifdef SYS_io_uring_setup
    D(io_uring_setup, EPERM),
    D(io_uring_enter, EPERM),
    D(io_uring_register, EPERM),
#endif
    D(io_setup, ENOSYS),
    D(io_destroy, ENOSYS),
    D(io_getevents, ENOSYS),
    D(io_submit, ENOSYS),
    D(io_cancel, ENOSYS),
#ifdef SYS_io_pgetevents
    D(io_pgetevents, ENOSYS),
#endif
    D(ptrace, EPERM),
    D(process_vm_readv, EPERM),
    D(process_vm_writev, EPERM),
#ifdef SYS_pidfd_getfd
    D(pidfd_getfd, EPERM),
#endif
#ifdef SYS_process_madvise
    D(process_madvise, EPERM),
#endif
    D(unshare, EPERM),
    D(setns, EPERM),
    D(mount, EPERM),
#ifdef SYS_umount
    D(umount, EPERM),
#endif
    D(umount2, EPERM),
    D(pivot_root, EPERM),
    D(chroot, EPERM),
#ifdef SYS_move_mount
    D(move_mount, EPERM),
    D(open_tree, EPERM),
    D(fsopen, EPERM),
    D(fsconfig, EPERM),
    D(fsmount, EPERM),
    D(fspick, EPERM),
#endif
#ifdef SYS_mount_setattr
    D(mount_setattr, EPERM),
#endif
    D(keyctl, EPERM),
    D(add_key, EPERM),
    D(request_key, EPERM),
    D(bpf, EPERM),
    D(perf_event_open, EPERM),
    D(userfaultfd, EPERM),
    D(kexec_load, EPERM),
#ifdef SYS_kexec_file_load
    D(kexec_file_load, EPERM),
#endif
    D(init_module, EPERM),
    D(finit_module, EPERM),
    D(delete_module, EPERM),
    D(reboot, EPERM),
    D(swapon, EPERM),
    D(swapoff, EPERM),
    D(acct, EPERM),
    D(syslog, EPERM),
#if defined(__x86_64__)
    D(iopl, EPERM),
    D(ioperm, EPERM),
    D(modify_ldt, EPERM),
#endif
    D(name_to_handle_at, EPERM),
    D(open_by_handle_at, EPERM),
#ifdef SYS_clone3
    D(clone3, ENOSYS),
#endif
    {"openat2", 437, ENOSYS},
};

#define NDENIED (sizeof plain_denied / sizeof plain_denied[0])

/* The expected answer for (native arch, nr) with every argument equal to
 * `arg` (0 or all ones), from the policy above and the argument rules. */
static uint32_t expected_uniform(uint32_t nr, uint64_t arg) {
    for (size_t i = 0; i < NDENIED; i++)
        if (plain_denied[i].nr == nr)
            return ERR(plain_denied[i].err);
    if (nr == SYS_socket || nr == SYS_socketpair)
        return ERR(EAFNOSUPPORT); /* family 0 (AF_UNSPEC) or 0xffffffff */
    if (nr == SYS_clone)
        return arg ? ERR(EPERM) : ALLOW; /* all ones holds every CLONE_NEW* */
    /* calls that take a file mode: all ones holds the set-id bits */
    static const uint32_t mode_calls[] = {
#ifdef SYS_chmod
        SYS_chmod,
#endif
#ifdef SYS_creat
        SYS_creat,
#endif
#ifdef SYS_open
        SYS_open,
#endif
#ifdef SYS_mknod
        SYS_mknod,
#endif
        SYS_fchmod, SYS_fchmodat, 452 /* fchmodat2 */, SYS_openat, SYS_mknodat,
    };
    for (size_t i = 0; i < sizeof mode_calls / sizeof mode_calls[0]; i++)
        if (nr == mode_calls[i])
            return arg ? ERR(EPERM) : ALLOW;
    /* ioctl cmd 0 / 0xffffffff, personality 0 / query: allowed */
    return ALLOW;
}

struct tcase {
    const char *what;
    uint32_t arch;
    uint32_t nr;
    uint64_t args[6];
    uint32_t want;
};

#define C(what, nr, want, ...) {what, NATIVE, (uint32_t)(nr), {__VA_ARGS__}, want}
#define HI(x) ((uint64_t)(x) << 32)
#define THREAD_FLAGS                                                                       \
    (CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |        \
     CLONE_SETTLS | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID)

static const struct tcase cases[] = {
    /* no set-id bit through any call that takes a mode */
    C("fchmod 0755", SYS_fchmod, ALLOW, 3, 0755),
    C("fchmod 04755", SYS_fchmod, ERR(EPERM), 3, 04755),
    C("fchmod 02755", SYS_fchmod, ERR(EPERM), 3, 02755),
    C("fchmod 04755 in the high word only", SYS_fchmod, ALLOW, 3, HI(04755)),
    C("fchmodat 0644", SYS_fchmodat, ALLOW, (uint64_t)AT_FDCWD, 0x1000, 0644),
    C("fchmodat 06755", SYS_fchmodat, ERR(EPERM), (uint64_t)AT_FDCWD, 0x1000, 06755),
    C("fchmodat2 04711", 452, ERR(EPERM), (uint64_t)AT_FDCWD, 0x1000, 04711, 0),
    C("openat O_CREAT 0644", SYS_openat, ALLOW, (uint64_t)AT_FDCWD, 0x1000, O_CREAT, 0644),
    C("openat O_CREAT 04755", SYS_openat, ERR(EPERM), (uint64_t)AT_FDCWD, 0x1000, O_CREAT, 04755),
    C("mknodat S_IFREG|04755", SYS_mknodat, ERR(EPERM), (uint64_t)AT_FDCWD, 0x1000,
      S_IFREG | 04755, 0),
    C("mknodat S_IFIFO|0644", SYS_mknodat, ALLOW, (uint64_t)AT_FDCWD, 0x1000, S_IFIFO | 0644, 0),
#ifdef SYS_chmod
    C("chmod 4755", SYS_chmod, ERR(EPERM), 0x1000, 04755),
    C("chmod 755", SYS_chmod, ALLOW, 0x1000, 0755),
#endif
    C("openat2 (mode unreadable)", 437, ERR(ENOSYS), (uint64_t)AT_FDCWD, 0x1000, 0x2000, 24),
    /* PID 1 (the init every later command is forked from) is out of reach */
    C("prlimit64(1, RLIMIT_AS)", SYS_prlimit64, ERR(EPERM), 1, RLIMIT_AS, 0x1000, 0),
    C("prlimit64(1) read only", SYS_prlimit64, ERR(EPERM), 1, RLIMIT_NOFILE, 0, 0x1000),
    C("prlimit64(1 with high bits)", SYS_prlimit64, ERR(EPERM), HI(7) | 1, RLIMIT_AS, 0x1000, 0),
    C("prlimit64(0) (self)", SYS_prlimit64, ALLOW, 0, RLIMIT_NOFILE, 0x1000, 0),
    C("prlimit64(2)", SYS_prlimit64, ALLOW, 2, RLIMIT_NOFILE, 0x1000, 0),
    /* no user-notification listener: it would receive the init's link() notifications */
    C("seccomp filter with a listener", SYS_seccomp, ERR(EPERM), 1, 8, 0x1000),
    C("seccomp filter, listener among flags", SYS_seccomp, ERR(EPERM), 1, 8 | 2, 0x1000),
    C("seccomp filter, listener in the high word", SYS_seccomp, ALLOW, 1, HI(8), 0x1000),
    C("seccomp filter", SYS_seccomp, ALLOW, 1, 0, 0x1000),
    C("seccomp filter with TSYNC", SYS_seccomp, ALLOW, 1, 1, 0x1000),
    C("seccomp get notif sizes", SYS_seccomp, ALLOW, 3, 0, 0x1000),
    C("seccomp strict with flag 8", SYS_seccomp, ALLOW, 0, 8, 0),
    C("sched_setaffinity(1)", SYS_sched_setaffinity, ERR(EPERM), 1, 8, 0x1000),
    C("sched_setaffinity(0)", SYS_sched_setaffinity, ALLOW, 0, 8, 0x1000),
    C("sched_setscheduler(1, SCHED_IDLE)", SYS_sched_setscheduler, ERR(EPERM), 1, 5, 0x1000),
    C("sched_setscheduler(0, SCHED_IDLE)", SYS_sched_setscheduler, ALLOW, 0, 5, 0x1000),
    C("sched_setparam(1)", SYS_sched_setparam, ERR(EPERM), 1, 0x1000),
    C("sched_setattr(1)", SYS_sched_setattr, ERR(EPERM), 1, 0x1000, 0),
    C("sched_setattr(3)", SYS_sched_setattr, ALLOW, 3, 0x1000, 0),
    C("setpriority(PRIO_PROCESS, 1, 19)", SYS_setpriority, ERR(EPERM), 0, 1, 19),
    C("setpriority(PRIO_PGRP, 1, 19)", SYS_setpriority, ERR(EPERM), 1, 1, 19),
    C("setpriority(PRIO_USER, 0, 19)", SYS_setpriority, ERR(EPERM), 2, 0, 19),
    C("setpriority(PRIO_USER, 1000, 19)", SYS_setpriority, ERR(EPERM), 2, 1000, 19),
    C("setpriority(PRIO_PROCESS, 0, 19)", SYS_setpriority, ALLOW, 0, 0, 19),
    C("setpriority(PRIO_PGRP, 0, 19)", SYS_setpriority, ALLOW, 1, 0, 19),
    C("setpriority(PRIO_PROCESS, 42, 19)", SYS_setpriority, ALLOW, 0, 42, 19),
    C("ioprio_set(WHO_PROCESS, 1, IDLE)", SYS_ioprio_set, ERR(EPERM), 1, 1, 3 << 13),
    C("ioprio_set(WHO_PGRP, 1, IDLE)", SYS_ioprio_set, ERR(EPERM), 2, 1, 3 << 13),
    C("ioprio_set(WHO_USER, 0, IDLE)", SYS_ioprio_set, ERR(EPERM), 3, 0, 3 << 13),
    C("ioprio_set(WHO_PROCESS, 0, IDLE)", SYS_ioprio_set, ALLOW, 1, 0, 3 << 13),
    C("ioprio_set(WHO_PROCESS, 9, IDLE)", SYS_ioprio_set, ALLOW, 1, 9, 3 << 13),
    /* ordinary calls stay allowed */
    C("read", SYS_read, ALLOW, 0, 0, 16),
    C("write", SYS_write, ALLOW, 1, 0, 16),
    C("openat", SYS_openat, ALLOW, (uint64_t)AT_FDCWD, 0, O_RDONLY),
    C("close", SYS_close, ALLOW, 3),
    C("execve", SYS_execve, ALLOW, 0x1000, 0x2000, 0x3000),
    C("execveat", SYS_execveat, ALLOW, 3, 0, 0, 0, 0),
    C("linkat (python semaphores)", SYS_linkat, ALLOW, (uint64_t)AT_FDCWD, 0, (uint64_t)AT_FDCWD,
      0, 0),
#ifdef SYS_link
    C("link (python semaphores)", SYS_link, ALLOW, 0x1000, 0x2000),
#endif
#ifdef SYS_fork
    C("fork", SYS_fork, ALLOW, 0),
    C("vfork", SYS_vfork, ALLOW, 0),
#endif
    C("pipe2", SYS_pipe2, ALLOW, 0, O_CLOEXEC),
    C("wait4", SYS_wait4, ALLOW, (uint64_t)-1, 0, 0, 0),
    C("kill", SYS_kill, ALLOW, 1, SIGTERM),
    C("prctl", SYS_prctl, ALLOW, PR_SET_NO_NEW_PRIVS, 1),
    C("seccomp (adding filters only restricts)", SYS_seccomp, ALLOW, 1, 0, 0),
    C("kcmp", SYS_kcmp, ALLOW, 1, 2, 0, 3, 4),
    C("connect", SYS_connect, ALLOW, 3, 0x1000, 16),
    C("bind", SYS_bind, ALLOW, 3, 0x1000, 16),
    C("sendto", SYS_sendto, ALLOW, 3, 0x1000, 16, 0, 0, 0),
    C("recvfrom", SYS_recvfrom, ALLOW, 3, 0x1000, 16, 0, 0, 0),
    C("getsockopt", SYS_getsockopt, ALLOW, 3, SOL_SOCKET, SO_ERROR, 0, 0),

    /* socket(): only AF_INET / AF_INET6 */
    C("socket(AF_INET, SOCK_STREAM)", SYS_socket, ALLOW, AF_INET, SOCK_STREAM, 0),
    C("socket(AF_INET, SOCK_DGRAM|SOCK_CLOEXEC)", SYS_socket, ALLOW, AF_INET,
      SOCK_DGRAM | SOCK_CLOEXEC, 0),
    C("socket(AF_INET6, SOCK_STREAM)", SYS_socket, ALLOW, AF_INET6, SOCK_STREAM, 0),
    C("socket(AF_INET with high bits)", SYS_socket, ALLOW, HI(0xffffffff) | AF_INET,
      SOCK_STREAM, 0),
    C("socket(AF_UNIX)", SYS_socket, ERR(EAFNOSUPPORT), AF_UNIX, SOCK_STREAM, 0),
    C("socket(AF_UNIX, SOCK_DGRAM|SOCK_CLOEXEC)", SYS_socket, ERR(EAFNOSUPPORT), AF_UNIX,
      SOCK_DGRAM | SOCK_CLOEXEC, 0),
    C("socket(AF_UNIX with high bits)", SYS_socket, ERR(EAFNOSUPPORT), HI(1) | AF_UNIX,
      SOCK_STREAM, 0),
    C("socket(AF_UNSPEC)", SYS_socket, ERR(EAFNOSUPPORT), AF_UNSPEC, SOCK_STREAM, 0),
    C("socket(AF_NETLINK)", SYS_socket, ERR(EAFNOSUPPORT), AF_NETLINK, SOCK_RAW, 0),
    C("socket(AF_PACKET)", SYS_socket, ERR(EAFNOSUPPORT), AF_PACKET, SOCK_RAW, 0),
    C("socket(AF_VSOCK)", SYS_socket, ERR(EAFNOSUPPORT), AF_VSOCK, SOCK_STREAM, 0),
    C("socket(AF_ALG)", SYS_socket, ERR(EAFNOSUPPORT), AF_ALG, SOCK_SEQPACKET, 0),
    C("socket(AF_BLUETOOTH)", SYS_socket, ERR(EAFNOSUPPORT), AF_BLUETOOTH, SOCK_RAW, 0),
    C("socket(AF_KEY)", SYS_socket, ERR(EAFNOSUPPORT), AF_KEY, SOCK_RAW, 0),
    C("socket(AF_INET + 1)", SYS_socket, ERR(EAFNOSUPPORT), AF_INET + 1, SOCK_STREAM, 0),
    C("socket(AF_INET6 - 1)", SYS_socket, ERR(EAFNOSUPPORT), AF_INET6 - 1, SOCK_STREAM, 0),
    C("socket(family in arg1 only)", SYS_socket, ERR(EAFNOSUPPORT), AF_UNIX, AF_INET, 0),

    /* socketpair(): AF_UNIX stream/seqpacket only */
    C("socketpair(AF_UNIX, SOCK_STREAM)", SYS_socketpair, ALLOW, AF_UNIX, SOCK_STREAM, 0, 0),
    C("socketpair(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC)", SYS_socketpair, ALLOW, AF_UNIX,
      SOCK_STREAM | SOCK_CLOEXEC, 0, 0),
    C("socketpair(AF_UNIX, SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC)", SYS_socketpair, ALLOW,
      AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, 0),
    C("socketpair(AF_UNIX, SOCK_SEQPACKET|SOCK_NONBLOCK)", SYS_socketpair, ALLOW, AF_UNIX,
      SOCK_SEQPACKET | SOCK_NONBLOCK, 0, 0),
    C("socketpair(AF_UNIX, SOCK_STREAM) with high bits", SYS_socketpair, ALLOW,
      HI(0xdead) | AF_UNIX, HI(0xffffffff) | SOCK_STREAM, 0, 0),
    C("socketpair(AF_UNIX, SOCK_DGRAM)", SYS_socketpair, ERR(EPERM), AF_UNIX, SOCK_DGRAM, 0, 0),
    C("socketpair(AF_UNIX, SOCK_DGRAM|SOCK_CLOEXEC)", SYS_socketpair, ERR(EPERM), AF_UNIX,
      SOCK_DGRAM | SOCK_CLOEXEC, 0, 0),
    C("socketpair(AF_UNIX, SOCK_RAW)", SYS_socketpair, ERR(EPERM), AF_UNIX, SOCK_RAW, 0, 0),
    C("socketpair(AF_UNIX, 0)", SYS_socketpair, ERR(EPERM), AF_UNIX, 0, 0, 0),
    C("socketpair(AF_UNIX, SOCK_STREAM|unknown flag)", SYS_socketpair, ERR(EPERM), AF_UNIX,
      SOCK_STREAM | 0x100, 0, 0),
    C("socketpair(AF_UNIX, SOCK_STREAM|SOCK_DGRAM)", SYS_socketpair, ERR(EPERM), AF_UNIX,
      SOCK_STREAM | SOCK_DGRAM, 0, 0),
    C("socketpair(AF_INET, SOCK_STREAM)", SYS_socketpair, ERR(EAFNOSUPPORT), AF_INET,
      SOCK_STREAM, 0, 0),
    C("socketpair(AF_NETLINK, SOCK_STREAM)", SYS_socketpair, ERR(EAFNOSUPPORT), AF_NETLINK,
      SOCK_STREAM, 0, 0),
    C("socketpair(AF_UNIX with high bits, SOCK_DGRAM)", SYS_socketpair, ERR(EPERM),
      HI(1) | AF_UNIX, SOCK_DGRAM, 0, 0),

    /* listen / accept */
    C("listen", SYS_listen, ERR(EPERM), 3, 128),
    C("accept", SYS_accept, ERR(EPERM), 3, 0, 0),
    C("accept4", SYS_accept4, ERR(EPERM), 3, 0, 0, SOCK_CLOEXEC),

    /* clone(): no CLONE_NEW* */
    C("clone(SIGCHLD) (fork)", SYS_clone, ALLOW, SIGCHLD, 0, 0, 0, 0),
    C("clone(glibc fork flags)", SYS_clone, ALLOW,
      CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD, 0, 0, 0, 0),
    C("clone(pthread flags)", SYS_clone, ALLOW, THREAD_FLAGS, 0x7f0000000000ull, 0, 0, 0),
    C("clone(CLONE_VM|CLONE_VFORK|SIGCHLD) (posix_spawn)", SYS_clone, ALLOW,
      CLONE_VM | CLONE_VFORK | SIGCHLD, 0x7f0000000000ull, 0, 0, 0),
    C("clone(CLONE_PIDFD|SIGCHLD)", SYS_clone, ALLOW, CLONE_PIDFD | SIGCHLD, 0, 0, 0, 0),
    C("clone(CLONE_NEWUSER only in the ignored high word)", SYS_clone, ALLOW,
      HI(CLONE_NEWUSER) | SIGCHLD, 0, 0, 0, 0),
    C("clone(CLONE_NEWUSER in arg1, not the flags)", SYS_clone, ALLOW, SIGCHLD, CLONE_NEWUSER,
      CLONE_NEWUSER, CLONE_NEWUSER, CLONE_NEWUSER),
    C("clone(CLONE_NEWUSER|SIGCHLD)", SYS_clone, ERR(EPERM), CLONE_NEWUSER | SIGCHLD, 0, 0, 0,
      0),
    C("clone(CLONE_NEWUSER with high bits)", SYS_clone, ERR(EPERM),
      HI(0xffffffff) | CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0),
    C("clone(CLONE_NEWNS)", SYS_clone, ERR(EPERM), CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0),
    C("clone(CLONE_NEWUTS)", SYS_clone, ERR(EPERM), CLONE_NEWUTS | SIGCHLD, 0, 0, 0, 0),
    C("clone(CLONE_NEWIPC)", SYS_clone, ERR(EPERM), CLONE_NEWIPC | SIGCHLD, 0, 0, 0, 0),
    C("clone(CLONE_NEWPID)", SYS_clone, ERR(EPERM), CLONE_NEWPID | SIGCHLD, 0, 0, 0, 0),
    C("clone(CLONE_NEWNET)", SYS_clone, ERR(EPERM), CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0),
    C("clone(CLONE_NEWCGROUP)", SYS_clone, ERR(EPERM), CLONE_NEWCGROUP | SIGCHLD, 0, 0, 0, 0),
    C("clone(CLONE_NEWTIME bit)", SYS_clone, ERR(EPERM), CLONE_NEWTIME, 0, 0, 0, 0),
    /* a child out of the exec check's reach */
    C("clone(CLONE_UNTRACED|SIGCHLD)", SYS_clone, ERR(EPERM), 0x00800000 | SIGCHLD, 0, 0, 0, 0),
    C("clone(thread flags + CLONE_NEWNET)", SYS_clone, ERR(EPERM), THREAD_FLAGS | CLONE_NEWNET,
      0, 0, 0, 0),
#ifdef SYS_clone3
    C("clone3 -> ENOSYS (glibc falls back to clone)", SYS_clone3, ERR(ENOSYS), 0x1000, 88),
#endif
    C("unshare(CLONE_NEWUSER)", SYS_unshare, ERR(EPERM), CLONE_NEWUSER),
    C("unshare(0)", SYS_unshare, ERR(EPERM), 0),
    C("unshare(CLONE_FILES)", SYS_unshare, ERR(EPERM), CLONE_FILES),
    C("setns", SYS_setns, ERR(EPERM), 3, CLONE_NEWNET),

    /* ioctl(): TIOCSTI / TIOCLINUX on the low 32 bits of cmd */
    C("ioctl(TIOCSTI)", SYS_ioctl, ERR(EPERM), 0, TIOCSTI, 0x1000),
    C("ioctl(TIOCSTI with high bits all set)", SYS_ioctl, ERR(EPERM), 0,
      HI(0xffffffff) | TIOCSTI, 0x1000),
    C("ioctl(TIOCSTI with one high bit)", SYS_ioctl, ERR(EPERM), 0, HI(1) | TIOCSTI, 0x1000),
    C("ioctl(TIOCLINUX)", SYS_ioctl, ERR(EPERM), 0, TIOCLINUX, 0x1000),
    C("ioctl(TIOCLINUX with high bits)", SYS_ioctl, ERR(EPERM), 5, HI(0x80000000) | TIOCLINUX,
      0),
    C("ioctl(FIONREAD)", SYS_ioctl, ALLOW, 0, FIONREAD, 0x1000),
    C("ioctl(TIOCGWINSZ = TIOCSTI + 1)", SYS_ioctl, ALLOW, 0, TIOCGWINSZ, 0x1000),
    C("ioctl(TIOCOUTQ = TIOCSTI - 1)", SYS_ioctl, ALLOW, 0, TIOCOUTQ, 0x1000),
    C("ioctl(TCGETS)", SYS_ioctl, ALLOW, 0, TCGETS, 0x1000),
    C("ioctl(TIOCSCTTY)", SYS_ioctl, ALLOW, 0, TIOCSCTTY, 0),
    C("ioctl(fd = TIOCSTI, cmd FIONREAD)", SYS_ioctl, ALLOW, TIOCSTI, FIONREAD, TIOCSTI),

    /* personality() */
    C("personality(query)", SYS_personality, ALLOW, 0xffffffffu),
    C("personality(query, 64-bit -1)", SYS_personality, ALLOW, ~0ull),
    C("personality(PER_LINUX)", SYS_personality, ALLOW, PER_LINUX),
    C("personality(PER_LINUX32)", SYS_personality, ALLOW, PER_LINUX32),
    C("personality(UNAME26)", SYS_personality, ALLOW, UNAME26),
    C("personality(PER_LINUX32|UNAME26)", SYS_personality, ALLOW, PER_LINUX32 | UNAME26),
    C("personality(PER_LINUX, high bits)", SYS_personality, ALLOW, HI(1)),
    C("personality(ADDR_NO_RANDOMIZE)", SYS_personality, ERR(EPERM), ADDR_NO_RANDOMIZE),
    C("personality(READ_IMPLIES_EXEC)", SYS_personality, ERR(EPERM), READ_IMPLIES_EXEC),
    C("personality(MMAP_PAGE_ZERO)", SYS_personality, ERR(EPERM), MMAP_PAGE_ZERO),
    C("personality(PER_LINUX32|ADDR_NO_RANDOMIZE)", SYS_personality, ERR(EPERM),
      PER_LINUX32 | ADDR_NO_RANDOMIZE),
    C("personality(PER_BSD)", SYS_personality, ERR(EPERM), PER_BSD),
    C("personality(0xfffffffe)", SYS_personality, ERR(EPERM), 0xfffffffeu),

    /* the x32 ABI and out-of-table numbers */
#if defined(__x86_64__)
    C("x32 read", 0x40000000u | SYS_read, ERR(ENOSYS), 0, 0, 16),
    C("x32 socket(AF_INET)", 0x40000000u | SYS_socket, ERR(ENOSYS), AF_INET, SOCK_STREAM, 0),
    C("x32 socket(AF_UNIX)", 0x40000000u | SYS_socket, ERR(ENOSYS), AF_UNIX, SOCK_STREAM, 0),
    C("x32 rt_sigaction (512)", 0x40000000u | 512, ERR(ENOSYS), 0),
    C("x32 ioctl(TIOCSTI) (514)", 0x40000000u | 514, ERR(ENOSYS), 0, TIOCSTI),
    C("nr 0x3fffffff (kernel: ENOSYS)", 0x3fffffffu, ALLOW, 0),
    C("nr -1", 0xffffffffu, ERR(ENOSYS), 0),
    C("nr 0x80000000", 0x80000000u, ERR(ENOSYS), 0),
#else
    C("nr with bit 30 (no x32 here; kernel: ENOSYS)", 0x40000000u | SYS_read, ALLOW, 0),
    C("nr -1 (kernel: ENOSYS)", 0xffffffffu, ALLOW, 0),
#endif

    /* foreign ABIs: killed, whatever the call */
    {"compat read", COMPAT, 3, {0}, KILL},
    {"compat 0", COMPAT, 0, {0}, KILL},
    {"compat socketcall", COMPAT, 102, {1, 0}, KILL},
    {"other 64-bit arch, read", OTHER, SYS_read, {0}, KILL},
    {"other 64-bit arch, socket(AF_INET)", OTHER, SYS_socket, {AF_INET, SOCK_STREAM}, KILL},
    {"arch 0", 0, SYS_read, {0}, KILL},
    {"arch all ones", 0xffffffffu, SYS_read, {0}, KILL},
    {"native arch without the 64-bit flag", NATIVE & ~(uint32_t)__AUDIT_ARCH_64BIT, SYS_read,
     {0},
     KILL},
    {"native arch with the LE flag off", NATIVE & ~(uint32_t)__AUDIT_ARCH_LE, SYS_read, {0},
     KILL},
};

/* The filter's table of plain denials is pinned per architecture
 * (src/seccomp_linux.c): every number must be the headers' wherever they
 * define it, and nothing this file says is refused may be missing. */
static void test_pinned_numbers(void) {
    size_t n = 0;
    const struct a3s_seccomp_denial *table = a3s_seccomp_denials(&n);
    CHECK(table != NULL && n > 0, "the filter's table of denials is empty");
    size_t unchecked = 0;
    for (size_t i = 0; i < n; i++) {
        const struct denied *d = NULL;
        for (size_t j = 0; j < NDENIED && !d; j++)
            if (!strcmp(plain_denied[j].name, table[i].name))
                d = &plain_denied[j];
        if (table[i].nr < 0) {
            CHECK(d == NULL, "%s: pinned as absent on this architecture, the headers have %u",
                  table[i].name, d ? d->nr : 0);
        } else if (d) {
            CHECK(d->nr == (uint32_t)table[i].nr && d->err == table[i].err,
                  "%s: pinned %d (errno %d), headers and policy say %u (errno %d)", table[i].name,
                  table[i].nr, table[i].err, d->nr, d->err);
        } else {
            unchecked++; /* newer than these headers */
        }
    }
    for (size_t j = 0; j < NDENIED; j++) {
        bool found = false;
        for (size_t i = 0; i < n && !found; i++)
            found = !strcmp(plain_denied[j].name, table[i].name) && table[i].nr >= 0;
        CHECK(found, "%s is refused by the policy but missing from the filter's table",
              plain_denied[j].name);
    }
    if (unchecked)
        printf("test_seccomp: %zu pinned numbers are newer than these headers\n", unchecked);
}

static void test_table(const struct a3s_seccomp_program *p) {
    char got[32], want[32];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct tcase *c = &cases[i];
        uint32_t r = eval(p, c->arch, c->nr, c->args, NULL);
        CHECK(r == c->want, "%s: got %s, want %s", c->what, action_name(r, got, sizeof got),
              action_name(c->want, want, sizeof want));
    }
    /* every plain rule by name, with ordinary arguments */
    for (size_t i = 0; i < NDENIED; i++) {
        const uint64_t args[6] = {3, 0x1000, 16, 0, 0, 0};
        uint32_t r = eval(p, NATIVE, plain_denied[i].nr, args, NULL);
        CHECK(r == ERR(plain_denied[i].err), "%s: got %s, want %s", plain_denied[i].name,
              action_name(r, got, sizeof got),
              action_name(ERR(plain_denied[i].err), want, sizeof want));
    }
    /* each CLONE_NEW* flag alone, CLONE_UNTRACED (the exec check's), and every other single
     * bit of the low word */
    const uint32_t ns = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
                        CLONE_NEWNET | CLONE_NEWCGROUP | CLONE_NEWTIME | 0x00800000u;
    for (int bit = 0; bit < 64; bit++) {
        const uint64_t args[6] = {1ull << bit, 0, 0, 0, 0, 0};
        uint32_t w = (bit < 32 && (ns & (1u << bit))) ? ERR(EPERM) : ALLOW;
        uint32_t r = eval(p, NATIVE, SYS_clone, args, NULL);
        CHECK(r == w, "clone(1<<%d): got %s, want %s", bit, action_name(r, got, sizeof got),
              action_name(w, want, sizeof want));
    }
}

/* Every number, with all-zero and all-one arguments: nothing is refused
 * that the policy does not name, and the worst path stays short. */
static void test_sweep(const struct a3s_seccomp_program *p) {
    char got[32], want[32];
    size_t worst = 0, mismatches = 0;
    for (uint32_t nr = 0; nr < 2048; nr++) {
        for (int ones = 0; ones < 2; ones++) {
            uint64_t v = ones ? ~0ull : 0;
            const uint64_t args[6] = {v, v, v, v, v, v};
            size_t steps = 0;
            uint32_t r = eval(p, NATIVE, nr, args, &steps);
            uint32_t w = expected_uniform(nr, v);
            if (r != w && mismatches++ < 20)
                CHECK(r == w, "nr %u args %s: got %s, want %s", nr, ones ? "~0" : "0",
                      action_name(r, got, sizeof got), action_name(w, want, sizeof want));
            if (steps > worst)
                worst = steps;
        }
    }
    CHECK(mismatches == 0, "%zu sweep mismatches", mismatches);
#if defined(__x86_64__)
    for (uint32_t nr = 0x40000000u; nr < 0x40000000u + 1024; nr++) {
        const uint64_t args[6] = {0};
        uint32_t r = eval(p, NATIVE, nr, args, NULL);
        if (r != ERR(ENOSYS)) {
            CHECK(r == ERR(ENOSYS), "x32 nr 0x%x: got %s", nr, action_name(r, got, sizeof got));
            break;
        }
    }
#endif
    /* foreign arch over the whole number range: never anything but a kill */
    for (uint32_t nr = 0; nr < 1024; nr++) {
        const uint64_t args[6] = {0};
        uint32_t r = eval(p, COMPAT, nr, args, NULL);
        if (r != KILL) {
            CHECK(r == KILL, "compat nr %u: got %s", nr, action_name(r, got, sizeof got));
            break;
        }
    }
    /* a linear chain of ~60 rules: the longest path is a bit over 2 per rule */
    CHECK(worst > 0 && worst <= 200, "worst path %zu instructions", worst);
    printf("test_seccomp: %u instructions, worst path %zu\n", (unsigned)p->len, worst);
}

/* ------------------------------------------------------------------------ */
/* 2. Real system calls under the installed filter                            */
/* ------------------------------------------------------------------------ */

#define MARK 3000          /* added to every ERRNO of the marked program */
#define R_SKIP (-1)        /* not run in this mode */
#define R_LOST (-2)        /* the probe process reported nothing */
#define R_HARNESS (-3)     /* pipe or fork failed */
#define R_SIGNAL(s) (-100 - (s))

static char tmp_dir[64];
static char link_src[128], link_dst[128], link_dst2[128];
static char self_exe[4096];
static bool have_ptmx;

static int err_of(long rc) {
    return rc < 0 ? errno : 0;
}

static int close_ok(int fd) {
    if (fd < 0)
        return errno;
    close(fd);
    return 0;
}

static int pair_ok(int rc, int sv[2]) {
    if (rc < 0)
        return errno;
    close(sv[0]);
    close(sv[1]);
    return 0;
}

static int p_socket_unix(void) {
    return close_ok(socket(AF_UNIX, SOCK_STREAM, 0));
}
static int p_socket_netlink(void) {
    return close_ok(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0 /* NETLINK_ROUTE */));
}
static int p_socket_packet(void) {
    return close_ok(socket(AF_PACKET, SOCK_RAW, 0));
}
static int p_socket_vsock(void) {
    return close_ok(socket(AF_VSOCK, SOCK_STREAM, 0));
}
static int p_socket_inet(void) {
    return close_ok(socket(AF_INET, SOCK_STREAM, 0));
}
static int p_socket_inet_dgram(void) {
    return close_ok(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
}
static int p_socketpair_dgram(void) {
    int sv[2];
    return pair_ok(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv), sv);
}
static int p_socketpair_inet(void) {
    int sv[2];
    return pair_ok(socketpair(AF_INET, SOCK_STREAM, 0, sv), sv);
}
static int p_socketpair_stream(void) {
    int sv[2];
    return pair_ok(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), sv);
}
static int p_socketpair_stream_cloexec(void) {
    int sv[2];
    return pair_ok(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), sv);
}
static int p_socketpair_seqpacket(void) {
    int sv[2];
    return pair_ok(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, sv), sv);
}
static int p_listen(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return R_HARNESS;
    int r = err_of(listen(fd, 1)); /* unfiltered: auto-binds and succeeds */
    close(fd);
    return r;
}
static int p_accept4(void) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return R_HARNESS;
    int r = err_of(accept4(fd, NULL, NULL, SOCK_CLOEXEC)); /* unfiltered: EINVAL */
    close(fd);
    return r;
}
static int p_unshare_user(void) {
    return err_of(unshare(CLONE_NEWUSER));
}
static int p_unshare_zero(void) {
    return err_of(unshare(0)); /* unfiltered: a no-op that succeeds */
}
static int p_setns(void) {
    return err_of(setns(-1, 0)); /* unfiltered: EBADF */
}
/* clone() as fork: a child that got through exits at once. */
static int raw_clone(unsigned long flags) {
    long pid = syscall(SYS_clone, flags | SIGCHLD, 0, 0, 0, 0);
    if (pid == 0)
        _exit(0);
    if (pid < 0)
        return errno;
    int st;
    waitpid((pid_t)pid, &st, 0);
    return 0;
}
static int p_clone_newnet(void) {
    return raw_clone(CLONE_NEWNET);
}
static int p_clone_newuser(void) {
    return raw_clone(CLONE_NEWUSER);
}
static int p_clone_plain(void) {
    return raw_clone(0);
}
static int p_clone3(void) {
#ifdef SYS_clone3
    return err_of(syscall(SYS_clone3, NULL, 0)); /* unfiltered: EINVAL */
#else
    return ENOSYS;
#endif
}
static int p_ptrace(void) {
    /* unfiltered this succeeds; the probe process then just exits */
    return err_of(syscall(SYS_ptrace, 0 /* PTRACE_TRACEME */, 0, 0, 0));
}
static int p_process_vm_readv(void) {
    return err_of(process_vm_readv(getpid(), NULL, 0, NULL, 0, 0)); /* unfiltered: 0 */
}
static int p_io_uring_setup(void) {
#ifdef SYS_io_uring_setup
    unsigned char params[120]; /* struct io_uring_params */
    memset(params, 0, sizeof params);
    long fd = syscall(SYS_io_uring_setup, 1, params);
    return close_ok((int)fd);
#else
    return EPERM;
#endif
}
static int p_keyctl(void) {
    return err_of(syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3 /* session */, 0));
}
static int p_request_key(void) {
    return err_of(syscall(SYS_request_key, "user", "a3s-test-no-such-key", NULL, 0));
}
static int p_bpf(void) {
    return err_of(syscall(SYS_bpf, 0 /* BPF_MAP_CREATE */, NULL, 0));
}
static int p_perf_event_open(void) {
    return err_of(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
}
static int p_userfaultfd(void) {
    return close_ok((int)syscall(SYS_userfaultfd, O_CLOEXEC));
}
/* Targets that do not exist: should the filter ever let these through,
 * even as root they fail without changing anything. */
static int p_mount(void) {
    return err_of(mount("none", "/a3s-test-nonexistent", "tmpfs", 0, NULL));
}
static int p_umount2(void) {
    return err_of(umount2("/a3s-test-nonexistent", 0));
}
static int p_chroot(void) {
    return err_of(chroot("/a3s-test-nonexistent"));
}
static int p_open_tree(void) {
#ifdef SYS_open_tree
    return close_ok((int)syscall(SYS_open_tree, AT_FDCWD, "/a3s-test-nonexistent", 0));
#else
    return EPERM;
#endif
}
static int p_swapoff(void) {
    return err_of(syscall(SYS_swapoff, "/a3s-test-nonexistent"));
}
static int p_reboot(void) {
    return err_of(syscall(SYS_reboot, 0, 0, 0, NULL)); /* bad magic: EINVAL even as root */
}
static int p_delete_module(void) {
    return err_of(syscall(SYS_delete_module, "a3s_test_no_such_module", O_NONBLOCK));
}
static int p_finit_module(void) {
    return err_of(syscall(SYS_finit_module, -1, "", 0)); /* unfiltered: EBADF or EPERM */
}
static int p_syslog(void) {
    return err_of(syscall(SYS_syslog, 10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0));
}
static int p_name_to_handle_at(void) {
    uint32_t handle[4] = {0}; /* handle_bytes 0: unfiltered EOVERFLOW */
    int mount_id;
    return err_of(syscall(SYS_name_to_handle_at, AT_FDCWD, "/", handle, &mount_id, 0));
}
static int p_pidfd_getfd(void) {
#ifdef SYS_pidfd_getfd
    return err_of(syscall(SYS_pidfd_getfd, -1, 0, 0)); /* unfiltered: EBADF */
#else
    return EPERM;
#endif
}
#if defined(__x86_64__)
static int p_iopl(void) {
    return err_of(syscall(SYS_iopl, 0)); /* level 0: harmless unfiltered */
}
static int p_modify_ldt(void) {
    unsigned char buf[16];
    return err_of(syscall(SYS_modify_ldt, 0, buf, sizeof buf)); /* read: harmless */
}
#endif
/* A terminal for TIOCSTI: a new pty if there is one, else a pipe (the
 * filter decides before the kernel looks at the fd). */
static int tty_fd(void) {
    int fd = have_ptmx ? posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC) : -1;
    if (fd >= 0)
        return fd;
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    close(p[1]);
    return p[0];
}
static int tty_ioctl(unsigned long cmd) {
    int fd = tty_fd();
    if (fd < 0)
        return R_HARNESS;
    char c = '\n';
    int r = err_of(ioctl(fd, cmd, &c));
    close(fd);
    return r;
}
static int p_tiocsti(void) {
    return tty_ioctl(TIOCSTI);
}
static int p_tiocsti_high(void) {
    return tty_ioctl((unsigned long)0xffffffff00000000ull | TIOCSTI);
}
static int p_tioclinux(void) {
    return tty_ioctl(TIOCLINUX);
}
static int p_fionread(void) {
    int p[2];
    if (pipe(p) < 0)
        return errno;
    int n = -1;
    int r = err_of(ioctl(p[0], FIONREAD, &n));
    close(p[0]);
    close(p[1]);
    return r == 0 && n != 0 ? R_HARNESS : r;
}
static int p_personality_aslr_off(void) {
    return err_of(syscall(SYS_personality, ADDR_NO_RANDOMIZE));
}
static int p_personality_query(void) {
    return err_of(syscall(SYS_personality, 0xffffffffUL));
}
static int p_pipe(void) {
    int p[2];
    if (pipe(p) < 0)
        return errno;
    int r = write(p[1], "x", 1) == 1 ? 0 : errno;
    char c;
    if (r == 0 && read(p[0], &c, 1) != 1)
        r = errno ? errno : R_HARNESS;
    close(p[0]);
    close(p[1]);
    return r;
}
static int wait_status(pid_t pid) {
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return errno;
    if (WIFEXITED(st))
        return WEXITSTATUS(st) == 0 ? 0 : 1000 + WEXITSTATUS(st);
    return R_SIGNAL(WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}
static int p_fork(void) {
    pid_t pid = fork();
    if (pid < 0)
        return errno;
    if (pid == 0)
        _exit(0);
    return wait_status(pid);
}
static char *const true_argv[] = {"true", NULL};
static const char *true_path(void) {
    return access("/bin/true", X_OK) == 0 ? "/bin/true" : "/usr/bin/true";
}
static int p_execve(void) {
    const char *path = true_path();
    pid_t pid = fork();
    if (pid < 0)
        return errno;
    if (pid == 0) {
        execve(path, true_argv, environ);
        _exit(100);
    }
    return wait_status(pid);
}
static int p_posix_spawn(void) {
    pid_t pid;
    int rc = posix_spawn(&pid, true_path(), NULL, NULL, true_argv, environ);
    if (rc != 0)
        return rc;
    return wait_status(pid);
}
static void *thread_main(void *arg) {
    return arg;
}
static int p_pthread(void) {
    pthread_t t;
    int rc = pthread_create(&t, NULL, thread_main, NULL);
    if (rc != 0)
        return rc;
    return pthread_join(t, NULL);
}
static int p_link(void) {
    int r = err_of(link(link_src, link_dst));
    unlink(link_dst);
    return r;
}
static int p_linkat(void) {
    int r = err_of(linkat(AT_FDCWD, link_src, AT_FDCWD, link_dst2, 0));
    unlink(link_dst2);
    return r;
}
static int p_dev_null(void) {
    int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return errno;
    char c;
    int r = write(fd, "x", 1) == 1 && read(fd, &c, 1) == 0 ? 0 : errno;
    close(fd);
    return r;
}
/* The filter must survive execve: run this binary again, which tries
 * socket(AF_UNIX) and writes the errno to an inherited pipe. */
static int p_exec_inherits(void) {
    int p[2];
    if (pipe(p) < 0)
        return R_HARNESS;
    char fdarg[16];
    snprintf(fdarg, sizeof fdarg, "%d", p[1]);
    pid_t pid = fork();
    if (pid < 0)
        return R_HARNESS;
    if (pid == 0) {
        char *argv[] = {"test_seccomp", "--exec-probe", fdarg, NULL};
        close(p[0]);
        execve(self_exe, argv, environ);
        _exit(100);
    }
    close(p[1]);
    int r = R_LOST;
    if (read(p[0], &r, sizeof r) != (ssize_t)sizeof r)
        r = R_LOST;
    close(p[0]);
    int st = wait_status(pid);
    return st != 0 ? st : r;
}

/* Probe flags */
#define EXACT_ONLY 1 /* relies on the exact ENOSYS of clone3: not under MARK */

struct probe {
    const char *what;
    int (*fn)(void);
    int want; /* 0: must work; else the errno the filter answers */
    int flags;
};

static const struct probe probes[] = {
    /* refused */
    {"socket(AF_UNIX, SOCK_STREAM)", p_socket_unix, EAFNOSUPPORT, 0},
    {"socket(AF_NETLINK, SOCK_RAW)", p_socket_netlink, EAFNOSUPPORT, 0},
    {"socket(AF_PACKET, SOCK_RAW)", p_socket_packet, EAFNOSUPPORT, 0},
    {"socket(AF_VSOCK, SOCK_STREAM)", p_socket_vsock, EAFNOSUPPORT, 0},
    {"socketpair(AF_UNIX, SOCK_DGRAM)", p_socketpair_dgram, EPERM, 0},
    {"socketpair(AF_INET, SOCK_STREAM)", p_socketpair_inet, EAFNOSUPPORT, 0},
    {"listen(AF_INET socket)", p_listen, EPERM, 0},
    {"accept4(AF_INET socket)", p_accept4, EPERM, 0},
    {"unshare(CLONE_NEWUSER)", p_unshare_user, EPERM, 0},
    {"unshare(0)", p_unshare_zero, EPERM, 0},
    {"setns(-1, 0)", p_setns, EPERM, 0},
    {"clone(CLONE_NEWNET|SIGCHLD)", p_clone_newnet, EPERM, 0},
    {"clone(CLONE_NEWUSER|SIGCHLD)", p_clone_newuser, EPERM, 0},
    {"clone3(NULL, 0)", p_clone3, ENOSYS, 0},
    {"ptrace(PTRACE_TRACEME)", p_ptrace, EPERM, 0},
    {"process_vm_readv(self, 0 iovecs)", p_process_vm_readv, EPERM, 0},
    {"io_uring_setup(1)", p_io_uring_setup, EPERM, 0},
    {"keyctl(KEYCTL_GET_KEYRING_ID)", p_keyctl, EPERM, 0},
    {"request_key(user)", p_request_key, EPERM, 0},
    {"bpf(BPF_MAP_CREATE)", p_bpf, EPERM, 0},
    {"perf_event_open", p_perf_event_open, EPERM, 0},
    {"userfaultfd", p_userfaultfd, EPERM, 0},
    {"mount(tmpfs)", p_mount, EPERM, 0},
    {"umount2", p_umount2, EPERM, 0},
    {"chroot", p_chroot, EPERM, 0},
    {"open_tree", p_open_tree, EPERM, 0},
    {"swapoff", p_swapoff, EPERM, 0},
    {"reboot(bad magic)", p_reboot, EPERM, 0},
    {"delete_module", p_delete_module, EPERM, 0},
    {"finit_module(-1)", p_finit_module, EPERM, 0},
    {"syslog(SIZE_BUFFER)", p_syslog, EPERM, 0},
    {"name_to_handle_at(/)", p_name_to_handle_at, EPERM, 0},
    {"pidfd_getfd(-1)", p_pidfd_getfd, EPERM, 0},
#if defined(__x86_64__)
    {"iopl(0)", p_iopl, EPERM, 0},
    {"modify_ldt(read)", p_modify_ldt, EPERM, 0},
#endif
    {"ioctl(tty, TIOCSTI)", p_tiocsti, EPERM, 0},
    {"ioctl(tty, TIOCSTI | 0xffffffff00000000)", p_tiocsti_high, EPERM, 0},
    {"ioctl(tty, TIOCLINUX)", p_tioclinux, EPERM, 0},
    {"personality(ADDR_NO_RANDOMIZE)", p_personality_aslr_off, EPERM, 0},
    {"after execve: socket(AF_UNIX)", p_exec_inherits, EAFNOSUPPORT, 0},
    /* allowed */
    {"socket(AF_INET, SOCK_STREAM)", p_socket_inet, 0, 0},
    {"socket(AF_INET, SOCK_DGRAM)", p_socket_inet_dgram, 0, 0},
    {"socketpair(AF_UNIX, SOCK_STREAM)", p_socketpair_stream, 0, 0},
    {"socketpair(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC)", p_socketpair_stream_cloexec, 0, 0},
    {"socketpair(AF_UNIX, SOCK_SEQPACKET|SOCK_NONBLOCK)", p_socketpair_seqpacket, 0, 0},
    {"pipe + write + read", p_pipe, 0, 0},
    {"ioctl(pipe, FIONREAD)", p_fionread, 0, 0},
    {"open/read/write /dev/null", p_dev_null, 0, 0},
    {"fork", p_fork, 0, 0},
    {"clone(SIGCHLD)", p_clone_plain, 0, 0},
    {"fork + execve(/bin/true)", p_execve, 0, 0},
    {"posix_spawn(/bin/true) (clone3 -> clone)", p_posix_spawn, 0, EXACT_ONLY},
    {"pthread_create (clone3 -> clone)", p_pthread, 0, EXACT_ONLY},
    {"link() in a temp dir", p_link, 0, 0},
    {"linkat() in a temp dir", p_linkat, 0, 0},
    {"personality(query)", p_personality_query, 0, 0},
};

#define NPROBES (sizeof probes / sizeof probes[0])

static bool write_all(int fd, const void *buf, size_t len) {
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

static bool read_all(int fd, void *buf, size_t len) {
    char *p = buf;
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

/* In the filtered child: one probe in its own process, so side effects
 * (a new namespace, being traced) die with it. */
static int run_isolated(int (*fn)(void)) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return R_HARNESS;
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return R_HARNESS;
    }
    if (pid == 0) {
        close(p[0]);
        errno = 0;
        int r = fn();
        _exit(write_all(p[1], &r, sizeof r) ? 0 : 1);
    }
    close(p[1]);
    int r;
    if (!read_all(p[0], &r, sizeof r))
        r = R_LOST;
    close(p[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(st))
        r = R_SIGNAL(WTERMSIG(st));
    return r;
}

/* Forks a child that installs `prog` and runs every probe; fills results.
 * Returns the child's install result (0 or -errno), or 1 on a harness
 * failure. */
static int run_probes(const struct a3s_seccomp_program *prog, bool marked, int results[]) {
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return 1;
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0) {
        close(p[0]);
        int rc = a3s_seccomp_install(prog);
        if (!write_all(p[1], &rc, sizeof rc) || rc != 0)
            _exit(1);
        for (size_t i = 0; i < NPROBES; i++) {
            int r = (marked && (probes[i].flags & EXACT_ONLY)) ? R_SKIP
                                                                 : run_isolated(probes[i].fn);
            if (!write_all(p[1], &r, sizeof r))
                _exit(1);
        }
        _exit(0); /* not exit(): no atexit handlers (LeakSanitizer) under the filter */
    }
    close(p[1]);
    int rc = 1;
    bool ok = read_all(p[0], &rc, sizeof rc);
    if (ok && rc == 0)
        ok = read_all(p[0], results, NPROBES * sizeof results[0]);
    close(p[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (!ok && rc == 0)
        rc = 1;
    if (rc == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
        rc = 1;
    return rc;
}

/* A copy of the program whose ERRNO returns carry errno + MARK. */
static int mark_program(const struct a3s_seccomp_program *src, struct a3s_seccomp_program *dst) {
    dst->len = src->len;
    dst->filter = malloc(src->len * sizeof *src->filter);
    if (!dst->filter)
        return -1;
    memcpy(dst->filter, src->filter, src->len * sizeof *src->filter);
    int n = 0;
    for (size_t i = 0; i < dst->len; i++) {
        struct sock_filter *in = &dst->filter[i];
        if (in->code == (BPF_RET | BPF_K) &&
            (in->k & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO) {
            in->k = SECCOMP_RET_ERRNO | ((in->k & SECCOMP_RET_DATA) + MARK);
            n++;
        }
    }
    return n;
}

static void test_probes(const struct a3s_seccomp_program *prog) {
    a3s_features_info f = {.struct_size = sizeof f};
    a3s_error err;
    if (a3s_features(&f, &err) != A3S_OK || !(f.flags & A3S_FEATURE_SECCOMP_FILTER)) {
        printf("test_seccomp: real system call probes skipped: no seccomp filter support\n");
        return;
    }
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/a3s-seccomp-XXXXXX");
    CHECK(mkdtemp(tmp_dir) != NULL, "mkdtemp: %s", strerror(errno));
    snprintf(link_src, sizeof link_src, "%s/src", tmp_dir);
    snprintf(link_dst, sizeof link_dst, "%s/dst", tmp_dir);
    snprintf(link_dst2, sizeof link_dst2, "%s/dst2", tmp_dir);
    int fd = open(link_src, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    CHECK(fd >= 0, "create %s: %s", link_src, strerror(errno));
    if (fd >= 0)
        close(fd);
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
    CHECK(n > 0, "readlink /proc/self/exe: %s", strerror(errno));
    self_exe[n > 0 ? n : 0] = '\0';
    have_ptmx = access("/dev/ptmx", R_OK | W_OK) == 0;
    if (!have_ptmx)
        printf("test_seccomp: no /dev/ptmx, TIOCSTI probed on a pipe\n");

    struct a3s_seccomp_program marked = {NULL, 0};
    int nmarked = mark_program(prog, &marked);
    CHECK(nmarked >= 40, "marked %d ERRNO returns", nmarked);

    for (int mode = 0; mode < 2; mode++) {
        bool is_marked = mode == 1;
        int results[NPROBES];
        int rc = run_probes(is_marked ? &marked : prog, is_marked, results);
        CHECK(rc == 0, "%s filter: install or harness failed: %d (%s)",
              is_marked ? "marked" : "real", rc, rc < 0 ? strerror(-rc) : "harness");
        if (rc != 0)
            continue;
        for (size_t i = 0; i < NPROBES; i++) {
            const struct probe *pr = &probes[i];
            int r = results[i];
            if (r == R_SKIP)
                continue;
            int want = pr->want == 0 ? 0 : pr->want + (is_marked ? MARK : 0);
            CHECK(r == want, "%s filter: %s: got %d (%s), want %d (%s)",
                  is_marked ? "marked" : "real", pr->what, r,
                  r > 0 && r < 4096 ? strerror(r) : "-", want, want ? strerror(pr->want) : "ok");
        }
    }
    a3s_seccomp_program_free(&marked);

    /* Nothing of the probes may be left behind. */
    unlink(link_dst);
    unlink(link_dst2);
    unlink(link_src);
    CHECK(rmdir(tmp_dir) == 0, "rmdir %s: %s", tmp_dir, strerror(errno));
}

#endif /* SUPPORTED */

/* ------------------------------------------------------------------------ */

static void test_api(void) {
    a3s_error err;
    struct a3s_seccomp_program p = {(struct sock_filter *)1, 7};
    CHECK(a3s_seccomp_build(1, &p, &err) == A3S_E_INVALID, "unknown flag refused");
    CHECK(err.code == A3S_E_INVALID && err.message[0], "error filled");
    CHECK(p.filter == NULL && p.len == 0, "output reset on failure");
    CHECK(a3s_seccomp_build(0, NULL, &err) == A3S_E_INVALID, "NULL output refused");
    CHECK(a3s_seccomp_install(NULL) == -EINVAL, "install(NULL)");
    CHECK(a3s_seccomp_install(&p) == -EINVAL, "install of an empty program");
    a3s_seccomp_program_free(NULL);
    a3s_seccomp_program_free(&p);
#if defined(SUPPORTED)
    CHECK(a3s_seccomp_build(0, &p, NULL) == A3S_OK, "build without an error struct");
    CHECK(p.filter != NULL && p.len > 0, "program built");
    a3s_seccomp_program_free(&p);
    CHECK(p.filter == NULL && p.len == 0, "free resets");
    a3s_seccomp_program_free(&p); /* twice is fine */
#else
    CHECK(a3s_seccomp_build(0, &p, &err) == A3S_E_UNSUPPORTED, "unsupported arch");
#endif
}

/* `test_seccomp --exec-probe FD`: run by p_exec_inherits under the filter. */
static int exec_probe(const char *fdarg) {
    int fd = atoi(fdarg);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    int r = s < 0 ? errno : 0;
    if (s >= 0)
        close(s);
    _exit(write_all(fd, &r, sizeof r) ? 0 : 1);
}

#if defined(SUPPORTED)
/* The filter of an init that traces execs (A3S_SECCOMP_TRACER) lets ptrace
 * through and differs from the full one in nothing else: same answer for
 * every other call the sweep tries. */
static void test_tracer_variant(const struct a3s_seccomp_program *full) {
    struct a3s_seccomp_program t = {NULL, 0};
    a3s_error err;
    CHECK(a3s_seccomp_build(A3S_SECCOMP_TRACER, &t, &err) == A3S_OK, "tracer: %s", err.message);
    if (!t.filter)
        return;
    uint64_t args[6] = {PTRACE_SEIZE, 2, 0, 0, 0, 0};
    CHECK(eval(&t, NATIVE, SYS_ptrace, args, NULL) == SECCOMP_RET_ALLOW, "tracer may ptrace");
    CHECK(eval(full, NATIVE, SYS_ptrace, args, NULL) == (SECCOMP_RET_ERRNO | EPERM),
          "a command may not");
    int differ = 0;
    for (uint32_t nr = 0; nr < 512; nr++) {
        if (nr == SYS_ptrace)
            continue;
        uint64_t a[6] = {0, 1, 2, 3, 4, 5};
        differ += eval(&t, NATIVE, nr, a, NULL) != eval(full, NATIVE, nr, a, NULL);
    }
    CHECK(differ == 0, "%d other calls answered differently", differ);
    a3s_seccomp_program_free(&t);
    /* what each command stacks on it: with it, the full filter again */
    struct a3s_seccomp_program only = {NULL, 0};
    CHECK(a3s_seccomp_build(A3S_SECCOMP_PTRACE_ONLY, &only, &err) == A3S_OK, "ptrace-only");
    CHECK(a3s_seccomp_build(A3S_SECCOMP_TRACER | A3S_SECCOMP_PTRACE_ONLY, &t, &err) ==
                  A3S_E_INVALID ||
              (a3s_seccomp_program_free(&t), 0),
          "both flags refused");
    if (only.filter) {
        const char *why = "";
        size_t where = 0;
        CHECK(bpf_interp_check(only.filter, only.len, &why, &where) == 0, "%s at %zu", why, where);
        int wrong = 0;
        struct a3s_seccomp_program tr = {NULL, 0};
        a3s_seccomp_build(A3S_SECCOMP_TRACER, &tr, &err);
        for (uint32_t nr = 0; nr < 512 && tr.filter; nr++) {
            uint64_t a[6] = {0, 1, 2, 3, 4, 5};
            uint32_t x = eval(&tr, NATIVE, nr, a, NULL), y = eval(&only, NATIVE, nr, a, NULL);
            uint32_t both = x != SECCOMP_RET_ALLOW ? x : y;
            wrong += both != eval(full, NATIVE, nr, a, NULL);
        }
        CHECK(wrong == 0, "%d calls differ from the full filter when stacked", wrong);
        uint64_t none[6] = {0};
        CHECK(eval(&only, COMPAT, 1, none, NULL) == SECCOMP_RET_KILL_PROCESS, "foreign ABI");
        a3s_seccomp_program_free(&tr);
    }
    a3s_seccomp_program_free(&only);
}
#endif

#if defined(SUPPORTED)
/* The cgroup tier's guard (a3s_seccomp_build_guard): what names a target is
 * refused, compared as the kernel's int; the same call naming anyone else,
 * and every call it has no rule for, passes. */
static void test_guard(void) {
    const int32_t targets[] = {1000, 1001, -1000, -77, -1};
    struct a3s_seccomp_program g = {NULL, 0};
    a3s_error err;
    CHECK(a3s_seccomp_build_guard(targets, 0, &g, &err) == A3S_E_INVALID, "no targets");
    CHECK(a3s_seccomp_build_guard(targets, A3S_SECCOMP_GUARD_MAX + 1, &g, &err) ==
              A3S_E_INVALID,
          "too many targets");
    CHECK(a3s_seccomp_build_guard(targets, 5, &g, &err) == A3S_OK, "guard: %s", err.message);
    if (!g.filter)
        return;
    const char *why = "";
    size_t where = 0;
    CHECK(bpf_interp_check(g.filter, g.len, &why, &where) == 0, "%s at %zu", why, where);
    const uint32_t deny = SECCOMP_RET_ERRNO | EPERM;
    const struct {
        uint32_t nr;
        uint64_t args[6];
        uint32_t want;
        const char *what;
    } guard_cases[] = {
        {SYS_kill, {1000, SIGKILL}, deny, "kill(init)"},
        {SYS_kill, {1001, 0}, deny, "kill(warden, 0)"},
        {SYS_kill, {0xffffffff00000000ull | 1001, SIGKILL}, deny, "high bits: an int"},
        {SYS_kill, {(uint64_t)-1000, SIGKILL}, deny, "kill(-pgid)"},
        {SYS_kill, {(uint32_t)-77, SIGKILL}, deny, "kill(-pgid), 32-bit"},
        {SYS_kill, {(uint64_t)-1, SIGKILL}, deny, "kill(-1)"},
        {SYS_kill, {1002, SIGKILL}, ALLOW, "kill(another)"},
        {SYS_kill, {0, SIGKILL}, ALLOW, "kill(own group)"},
        {SYS_kill, {(uint64_t)-1002, SIGKILL}, ALLOW, "kill(-another group)"},
        {SYS_tkill, {1000, SIGKILL}, deny, "tkill"},
        {SYS_tgkill, {5, 1001, SIGKILL}, deny, "tgkill's tid"},
        {SYS_tgkill, {1001, 5, SIGKILL}, deny, "tgkill's tgid"},
        {SYS_tgkill, {5, 6, SIGKILL}, ALLOW, "tgkill(another)"},
        {SYS_rt_sigqueueinfo, {1000, SIGKILL, 0}, deny, "rt_sigqueueinfo"},
        {SYS_rt_tgsigqueueinfo, {5, 1000, SIGKILL, 0}, deny, "rt_tgsigqueueinfo's tid"},
        {SYS_pidfd_open, {1001, 0}, deny, "pidfd_open(warden)"},
        {SYS_pidfd_open, {5, 0}, ALLOW, "pidfd_open(another)"},
        {SYS_pidfd_send_signal, {3, SIGKILL, 0, 0}, deny, "pidfd_send_signal, any fd"},
        {SYS_prlimit64, {1000, RLIMIT_CPU, 8, 0}, deny, "prlimit64(init)"},
        {SYS_prlimit64, {0, RLIMIT_CPU, 8, 0}, ALLOW, "prlimit64(self)"},
        {SYS_ptrace, {PTRACE_SEIZE, 1001, 0, 0}, deny, "ptrace(warden)"},
        {SYS_ptrace, {PTRACE_SEIZE, 5, 0, 0}, ALLOW, "ptrace(another)"},
        {SYS_process_vm_writev, {1001, 0, 1, 0, 1, 0}, deny, "process_vm_writev(warden)"},
        {SYS_process_vm_readv, {1000, 0, 1, 0, 1, 0}, deny, "process_vm_readv(init)"},
        {SYS_fcntl, {3, F_SETOWN, 1001}, deny, "F_SETOWN(warden)"},
        {SYS_fcntl, {3, F_SETOWN, (uint64_t)-1000}, deny, "F_SETOWN(-pgid)"},
        {SYS_fcntl, {3, F_SETOWN, 5}, ALLOW, "F_SETOWN(another)"},
        {SYS_fcntl, {3, F_SETOWN_EX, 0}, deny, "F_SETOWN_EX, any owner"},
        {SYS_fcntl, {3, F_GETFL, 1001}, ALLOW, "F_GETFL"},
        {SYS_ioctl, {3, 0x8901, 0}, deny, "ioctl(FIOSETOWN)"},
        {SYS_ioctl, {3, 0x8902, 0}, deny, "ioctl(SIOCSPGRP)"},
        {SYS_ioctl, {3, 0x5401, 0}, ALLOW, "ioctl(TCGETS)"},
        {SYS_getpid, {1000}, ALLOW, "a call without a rule"},
    };
    for (size_t i = 0; i < sizeof guard_cases / sizeof guard_cases[0]; i++)
        CHECK(eval(&g, NATIVE, guard_cases[i].nr, guard_cases[i].args, NULL) ==
                  guard_cases[i].want,
              "guard: %s", guard_cases[i].what);
    uint64_t none[6] = {0};
    CHECK(eval(&g, COMPAT, 1, none, NULL) == SECCOMP_RET_KILL_PROCESS, "guard: foreign ABI");
    a3s_seccomp_program_free(&g);
}
#endif

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--exec-probe") == 0)
        return exec_probe(argv[2]);
    test_interpreter();
    test_api();
#if defined(SUPPORTED)
    struct a3s_seccomp_program prog = {NULL, 0};
    a3s_error err;
    int rc = a3s_seccomp_build(0, &prog, &err);
    CHECK(rc == A3S_OK, "build: %s", err.message);
    if (rc == A3S_OK) {
        const char *why = "";
        size_t where = 0;
        CHECK(bpf_interp_check(prog.filter, prog.len, &why, &where) == 0,
              "generated program: %s at %zu", why, where);
        test_pinned_numbers();
        test_table(&prog);
        test_sweep(&prog);
        test_probes(&prog);
        test_tracer_variant(&prog);
        test_guard();
    }
    a3s_seccomp_program_free(&prog);
#else
    printf("test_seccomp: no filter for this architecture (A3S_E_UNSUPPORTED checked)\n");
#endif
    return check_report("test_seccomp");
}

#else /* !__linux__ */

int main(void) {
    printf("test_seccomp: not Linux, nothing to test\n");
    return check_report("test_seccomp");
}

#endif
