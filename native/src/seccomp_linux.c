/* seccomp_linux.c - the seccomp filter of the sandboxed command, generated
 * as classic BPF by this file (no libseccomp).
 *
 * The filter is a deny-list on top of the bubblewrap namespaces: a few calls
 * that open kernel attack surface, reach out of the sandbox or undo its
 * namespaces are refused, everything else is allowed. A refused call fails
 * with an errno so tools print a readable message ("Operation not
 * permitted", "Address family not supported by protocol"); nothing is
 * killed except a call made with a foreign ABI (see below).
 *
 * Shape of the program (A is the BPF accumulator):
 *
 *     A = arch;  if A != native arch:   return KILL_PROCESS
 *     A = nr;    [x86_64] if A >= 0x40000000: return ERRNO(ENOSYS)
 *     block 1:   if A == nr_1: <checks on arguments> return ...
 *     block 2:   if A == nr_2: ...
 *     ...
 *     return ALLOW
 *
 * Each block starts with A holding the system call number; when the number
 * is not its own it jumps past itself with A untouched, and once it matched,
 * every path through it ends in a return. So the blocks are independent and
 * short (BPF jump offsets are 8 bits), and generation checks both
 * properties. A call without a rule depends only on (arch, nr), which lets
 * Linux >= 5.11 prove it always allowed and skip the filter for it (the
 * seccomp action cache): read, write, openat... pay nothing.
 *
 * 64-bit arguments: every argument rule compares only the low 32 bits,
 * because that is all the kernel reads for these calls: socket() and
 * socketpair() take int, ioctl()'s cmd and personality()'s argument are
 * unsigned int, and clone() uses lower_32_bits(flags). Matching all 64
 * bits would open a hole, not close one: to the kernel
 * ioctl(fd, 0xffffffff00005412) is TIOCSTI.
 *
 * Only x86_64 and little-endian aarch64 (the arches we ship) have a filter;
 * a3s_seccomp_build answers A3S_E_UNSUPPORTED elsewhere.
 */
#define _GNU_SOURCE
#include "seccomp_linux.h"

#if defined(__linux__)

#include <errno.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SECCOMP_SET_MODE_FILTER
#  define SECCOMP_SET_MODE_FILTER 1
#endif
#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER /* Linux 5.0 */
#  define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_RET_KILL_PROCESS /* Linux 4.14; older kernels kill the thread */
#  define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif

#if defined(__x86_64__) && !defined(__ILP32__)
#  define NATIVE_ARCH AUDIT_ARCH_X86_64
#  define HAVE_X32_ABI 1
#elif defined(__aarch64__) && !defined(__ILP32__) && defined(__BYTE_ORDER__) &&                 \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#  define NATIVE_ARCH AUDIT_ARCH_AARCH64
#endif

#if defined(NATIVE_ARCH)

#define X32_SYSCALL_BIT 0x40000000u /* __X32_SYSCALL_BIT of asm/unistd.h */
#if defined(__X32_SYSCALL_BIT) && __X32_SYSCALL_BIT != 0x40000000
#  error "unexpected __X32_SYSCALL_BIT"
#endif
#ifndef CLONE_NEWCGROUP
#  define CLONE_NEWCGROUP 0x02000000
#endif
#ifndef CLONE_NEWTIME
#  define CLONE_NEWTIME 0x00000080
#endif

#define RET_ALLOW SECCOMP_RET_ALLOW
#define RET_ERRNO(e) (SECCOMP_RET_ERRNO | ((uint32_t)(e) & SECCOMP_RET_DATA))

/* ------------------------------------------------------------------------ */
/* System call numbers                                                       */
/* ------------------------------------------------------------------------ */

/* Every number the filter uses is written here for both architectures, not
 * taken from <sys/syscall.h>: a rule guarded by `#ifdef SYS_x` would vanish
 * without a word when the build machine's headers are older than the call
 * (fchmodat2, mount_setattr ...), and the filter would then let it through
 * on a newer kernel. NR(x86_64, aarch64) picks the build's column; NONE
 * marks a call the architecture does not have (no rule is generated for
 * it). tests/test_seccomp.c checks every pinned number against the
 * headers' SYS_ constants wherever the headers define them. */
#define NONE (-1)
#if defined(__x86_64__)
#  define NR(x86_64, aarch64) (x86_64)
#else
#  define NR(x86_64, aarch64) (aarch64)
#endif

#define NR_socket NR(41, 198)
#define NR_socketpair NR(53, 199)
#define NR_clone NR(56, 220)
#define NR_ioctl NR(16, 29)
#define NR_personality NR(135, 92)
#define NR_chmod NR(90, NONE)
#define NR_fchmod NR(91, 52)
#define NR_fchmodat NR(268, 53)
#define NR_fchmodat2 NR(452, 452)
#define NR_creat NR(85, NONE)
#define NR_open NR(2, NONE)
#define NR_openat NR(257, 56)
#define NR_mknod NR(133, NONE)
#define NR_mknodat NR(259, 33)
#define NR_prlimit64 NR(302, 261)
#define NR_setpriority NR(141, 140)
#define NR_sched_setparam NR(142, 118)
#define NR_sched_setscheduler NR(144, 119)
#define NR_sched_setaffinity NR(203, 122)
#define NR_sched_setattr NR(314, 274)
#define NR_ioprio_set NR(251, 30)
#define NR_seccomp NR(317, 277)
#define NR_link NR(86, NONE)
#define NR_linkat NR(265, 37)
#define NR_ptrace NR(101, 117)
#define NR_execve NR(59, 221)
#define NR_execveat NR(322, 281)
#define NR_prctl NR(157, 167)
#define NR_kill NR(62, 129)
#define NR_tkill NR(200, 130)
#define NR_tgkill NR(234, 131)
#define NR_rt_sigqueueinfo NR(129, 138)
#define NR_rt_tgsigqueueinfo NR(297, 240)
#define NR_pidfd_open NR(434, 434)
#define NR_pidfd_send_signal NR(424, 424)
#define NR_process_vm_readv NR(310, 270)
#define NR_process_vm_writev NR(311, 271)
#define NR_fcntl NR(72, 25)

/* ------------------------------------------------------------------------ */
/* Calls refused whatever their arguments                                    */
/* ------------------------------------------------------------------------ */

#define DENY(name, x86_64, aarch64, err) {#name, NR(x86_64, aarch64), err}

static const struct a3s_seccomp_denial denies[] = {
/* Servers: the sandbox may be a network client (socket + connect over
 * AF_INET/AF_INET6, when its namespace has a network at all), never a
 * server that something outside could connect to. */
    DENY(listen, 50, 201, EPERM),
    DENY(accept, 43, 202, EPERM),
    DENY(accept4, 288, 242, EPERM),

/* io_uring: a large and fast-moving kernel interface with a long record of
 * privilege escalations, whose operations (IORING_OP_OPENAT, _SOCKET, ...)
 * are not system calls and so bypass this filter. EPERM is also what
 * kernel.io_uring_disabled=2 answers, so runtimes that try it (libuv,
 * liburing users) already fall back to their thread pools on it. */
    DENY(io_uring_setup, 425, 425, EPERM),
    DENY(io_uring_enter, 426, 426, EPERM),
    DENY(io_uring_register, 427, 427, EPERM),

/* Native AIO: an io_submit of O_DIRECT reads or writes can leave the process
 * in uninterruptible sleep until the device answers, beyond any kill, and a
 * queued write can land after the command's result was returned (and the
 * workspace compared). ENOSYS, what a kernel built without CONFIG_AIO
 * answers, makes libaio users (databases, fio, qemu) fall back to
 * synchronous I/O or threads; POSIX aio (aio_read) is threads in glibc. */
    DENY(io_setup, 206, 0, ENOSYS),
    DENY(io_destroy, 207, 1, ENOSYS),
    DENY(io_getevents, 208, 4, ENOSYS),
    DENY(io_submit, 209, 2, ENOSYS),
    DENY(io_cancel, 210, 3, ENOSYS),
    DENY(io_pgetevents, 333, 292, ENOSYS),

/* Reaching into other processes: ptrace (PTRACE_TRACEME itself was a root
 * exploit, CVE-2019-13272; before Linux 4.8 a tracer could also rewrite a
 * call after seccomp had allowed it), and the calls with the same power
 * without ptrace: reading/writing another process's memory, stealing its
 * file descriptors, advising its memory. Debuggers and strace do not work
 * in the sandbox. */
    DENY(ptrace, 101, 117, EPERM),
    DENY(process_vm_readv, 310, 270, EPERM),
    DENY(process_vm_writev, 311, 271, EPERM),
    DENY(pidfd_getfd, 438, 438, EPERM),
    DENY(process_madvise, 440, 440, EPERM),

/* Namespaces: the ones bubblewrap set up are the boundary. A new user
 * namespace hands its creator every capability inside it, which turns the
 * many kernel interfaces gated on CAP_SYS_ADMIN or CAP_NET_ADMIN "in the
 * namespace" into attack surface (the usual first step of recent container
 * escapes); setns could join a namespace reachable through an inherited
 * fd. unshare is refused whole: its non-namespace flags (CLONE_FILES,
 * CLONE_FS, CLONE_SYSVSEM) are not used by the tools we run. clone() and
 * clone3() have their own rules below. */
    DENY(unshare, 272, 97, EPERM),
    DENY(setns, 308, 268, EPERM),

/* Mounts: the file system view is bubblewrap's and must stay so. Without
 * a new user namespace these already fail for lack of CAP_SYS_ADMIN; the
 * rule keeps it so if a capability ever leaks in, and shuts the new mount
 * API (open_tree, fsopen, ...) whose code is young. (Neither architecture
 * has the old one-argument umount.) */
    DENY(mount, 165, 40, EPERM),
    DENY(umount2, 166, 39, EPERM),
    DENY(pivot_root, 155, 41, EPERM),
    DENY(chroot, 161, 51, EPERM),
    DENY(open_tree, 428, 428, EPERM),
    DENY(move_mount, 429, 429, EPERM),
    DENY(fsopen, 430, 430, EPERM),
    DENY(fsconfig, 431, 431, EPERM),
    DENY(fsmount, 432, 432, EPERM),
    DENY(fspick, 433, 433, EPERM),
    DENY(mount_setattr, 442, 442, EPERM),

/* Kernel keyrings are not walled off by the namespaces: the session
 * keyring is inherited from the caller and key permissions go by uid, so
 * the user's keys (Kerberos tickets, fscrypt and ecryptfs keys, cached
 * credentials) would be in reach. */
    DENY(add_key, 248, 217, EPERM),
    DENY(request_key, 249, 218, EPERM),
    DENY(keyctl, 250, 219, EPERM),

/* Kernel attack surface with no use in a coding sandbox: the eBPF verifier
 * and JIT, perf events (also a window on other processes and the kernel),
 * and userfaultfd, the standard tool for stretching race windows in kernel
 * exploits. */
    DENY(bpf, 321, 280, EPERM),
    DENY(perf_event_open, 298, 241, EPERM),
    DENY(userfaultfd, 323, 282, EPERM),

/* Administration of the whole machine: new kernels and modules, reboot
 * (inside a pid namespace it kills that namespace's init, us), swap,
 * process accounting, and the kernel log (addresses, host activity). They
 * all need a capability the sandbox does not hold; refusing them here
 * keeps it so if one ever leaks in (bwrap --cap-add, a setuid helper). */
    DENY(kexec_load, 246, 104, EPERM),
    DENY(kexec_file_load, 320, 294, EPERM),
    DENY(init_module, 175, 105, EPERM),
    DENY(finit_module, 313, 273, EPERM),
    DENY(delete_module, 176, 106, EPERM),
    DENY(reboot, 169, 142, EPERM),
    DENY(swapon, 167, 224, EPERM),
    DENY(swapoff, 168, 225, EPERM),
    DENY(acct, 163, 89, EPERM),
    DENY(syslog, 103, 116, EPERM),

/* x86 only: raw I/O port access (iopl, ioperm) and the local descriptor
 * table (modify_ldt: 16-bit segments, a recurring source of kernel bugs,
 * used by Wine and DOSEMU only). arm64 has none of them. */
    DENY(iopl, 172, NONE, EPERM),
    DENY(ioperm, 173, NONE, EPERM),
    DENY(modify_ldt, 154, NONE, EPERM),

/* File handles: open_by_handle_at opens any file of a mounted file system
 * from its handle, outside the mount namespace's view (the "shocker"
 * container escape; it needs CAP_DAC_READ_SEARCH), and name_to_handle_at
 * is where such handles come from. */
    DENY(name_to_handle_at, 303, 264, EPERM),
    DENY(open_by_handle_at, 304, 265, EPERM),

/* clone3(): the flags are in a struct in user memory, which seccomp cannot
 * read, so a CLONE_NEW* flag could not be caught. ENOSYS is what a kernel
 * older than 5.3 answers, and on it glibc (pthread_create, posix_spawn)
 * falls back to clone(), whose flags the rule below checks. EPERM would
 * make thread creation fail instead. */
    DENY(clone3, 435, 435, ENOSYS),
/* openat2(): its mode is in a struct the filter cannot read, so the set-id
 * rule below could not see it. ENOSYS: callers fall back to openat. */
    DENY(openat2, 437, 437, ENOSYS),
};

#define NDENIES (sizeof denies / sizeof denies[0])

/* ------------------------------------------------------------------------ */
/* A tiny assembler with per-block forward labels                            */
/* ------------------------------------------------------------------------ */

#define PROG_MAX 512 /* 221 are used on x86_64; the kernel's limit is BPF_MAXINSNS = 4096 */
#define FIX_MAX 16   /* jumps per block */

/* Labels of the current block. L_FALL is "the next instruction". */
enum label { L_FALL = -1, L_NEXT = 0, L_ALLOW, L_DENY, L_FAMILY, L_COUNT };

struct fix {
    size_t at;
    int jt, jf;
};

struct prog {
    struct sock_filter insn[PROG_MAX];
    size_t len;
    bool broken; /* too long, or a block broke its contract: a bug here */
    size_t block_start;
    bool in_rule;
    size_t label[L_COUNT];
    struct fix fix[FIX_MAX];
    size_t nfix;
};

static void put(struct prog *p, uint16_t code, uint8_t jt, uint8_t jf, uint32_t k) {
    if (p->len == PROG_MAX) {
        p->broken = true;
        return;
    }
    p->insn[p->len].code = code;
    p->insn[p->len].jt = jt;
    p->insn[p->len].jf = jf;
    p->insn[p->len].k = k;
    p->len++;
}

static void load(struct prog *p, size_t offset) {
    put(p, BPF_LD | BPF_W | BPF_ABS, 0, 0, (uint32_t)offset);
}

static void load_nr(struct prog *p) {
    load(p, offsetof(struct seccomp_data, nr));
}

static void load_arch(struct prog *p) {
    load(p, offsetof(struct seccomp_data, arch));
}

/* The low 32 bits of argument i (both supported arches are little-endian). */
static void load_arg_low(struct prog *p, unsigned i) {
    load(p, offsetof(struct seccomp_data, args) + 8 * (size_t)i);
}

static void and_k(struct prog *p, uint32_t k) {
    put(p, BPF_ALU | BPF_AND | BPF_K, 0, 0, k);
}

static void ret(struct prog *p, uint32_t action) {
    put(p, BPF_RET | BPF_K, 0, 0, action);
}

/* A conditional jump (op: BPF_JEQ, BPF_JGE, BPF_JSET) to labels of the
 * current block. Inside a rule only its first instruction may leave for
 * L_NEXT: later ones may have loaded an argument into A. */
static void jump(struct prog *p, uint16_t op, uint32_t k, int jt, int jf) {
    if (p->nfix == FIX_MAX ||
        (p->in_rule && p->len != p->block_start && (jt == L_NEXT || jf == L_NEXT))) {
        p->broken = true;
        return;
    }
    p->fix[p->nfix].at = p->len;
    p->fix[p->nfix].jt = jt;
    p->fix[p->nfix].jf = jf;
    p->nfix++;
    put(p, BPF_JMP | op | BPF_K, 0, 0, k);
}

static void block_begin(struct prog *p, bool rule) {
    for (int i = 0; i < L_COUNT; i++)
        p->label[i] = SIZE_MAX;
    p->nfix = 0;
    p->block_start = p->len;
    p->in_rule = rule;
}

static void here(struct prog *p, enum label l) {
    p->label[l] = p->len;
}

static uint8_t offset_to(struct prog *p, size_t at, int l) {
    if (l == L_FALL)
        return 0;
    size_t target = p->label[l];
    if (target == SIZE_MAX || target <= at || target - at - 1 > 255) {
        p->broken = true;
        return 0;
    }
    return (uint8_t)(target - at - 1);
}

static void block_end(struct prog *p) {
    for (size_t i = 0; i < p->nfix; i++) {
        struct fix *f = &p->fix[i];
        if (f->at >= p->len)
            continue; /* its put() overflowed; broken is set */
        p->insn[f->at].jt = offset_to(p, f->at, f->jt);
        p->insn[f->at].jf = offset_to(p, f->at, f->jf);
    }
    p->nfix = 0;
    p->in_rule = false;
}

/* A rule's block: entered with A = nr. */
static void rule_begin(struct prog *p, uint32_t nr) {
    block_begin(p, true);
    jump(p, BPF_JEQ, nr, L_FALL, L_NEXT);
}

static void rule_end(struct prog *p) {
    /* Once matched, the body must return: falling through into the next
     * block with an argument in A would skip that block's check. */
    if (p->len == 0 || BPF_CLASS(p->insn[p->len - 1].code) != BPF_RET)
        p->broken = true;
    here(p, L_NEXT);
    block_end(p);
}

/* The end of a rule whose jumps lead to L_DENY (EPERM) or L_ALLOW. */
static void deny_or_allow(struct prog *p) {
    here(p, L_DENY);
    ret(p, RET_ERRNO(EPERM));
    here(p, L_ALLOW);
    ret(p, RET_ALLOW);
    rule_end(p);
}

/* ------------------------------------------------------------------------ */
/* Rules with argument checks                                                */
/* ------------------------------------------------------------------------ */

/* socket(): only AF_INET and AF_INET6. The other families reach things a
 * sandbox must not: AF_UNIX connects to host daemons through any socket
 * file visible inside, even on a read-only bind mount (the D-Bus session
 * bus, the Docker socket, ssh-agent, X11) and, when the network namespace
 * is shared, to abstract sockets, which are not files at all; AF_NETLINK is the kernel's
 * configuration interface (routes, netfilter, audit, uevents) and a common
 * home of kernel bugs; AF_PACKET is raw link-level access (CVE-2016-8655,
 * CVE-2017-7308); AF_VSOCK talks to the hypervisor; AF_ALG, AF_BLUETOOTH,
 * AF_KEY, ... are attack surface nobody here needs. The answer is
 * EAFNOSUPPORT, the errno of a kernel built without the family, so
 * libraries take their "family not available" path (glibc's getaddrinfo,
 * for one, assumes IPv4 and IPv6 when it cannot open its netlink socket).
 * The family is an int to the kernel: low 32 bits only. */
static void rule_socket(struct prog *p) {
    rule_begin(p, NR_socket);
    load_arg_low(p, 0);
    jump(p, BPF_JEQ, AF_INET, L_ALLOW, L_FALL);
    jump(p, BPF_JEQ, AF_INET6, L_ALLOW, L_FALL);
    ret(p, RET_ERRNO(EAFNOSUPPORT));
    here(p, L_ALLOW);
    ret(p, RET_ALLOW);
    rule_end(p);
}

/* socketpair(): only AF_UNIX with SOCK_STREAM or SOCK_SEQPACKET, with
 * SOCK_NONBLOCK and SOCK_CLOEXEC allowed in the type. A pair is two
 * anonymous, already connected ends, so it reaches nothing outside the
 * sandbox, and the stream form is what subprocess plumbing uses (Python's
 * socket.socketpair() and multiprocessing, asyncio's self-pipe, libuv's
 * IPC channels). Datagram (and raw) pairs are refused with EPERM to keep
 * the allowed surface to what is used; a type with any other flag bit is
 * refused too (the kernel would say EINVAL). Other families get
 * EAFNOSUPPORT like socket(). Both are ints: low 32 bits only. */
static void rule_socketpair(struct prog *p) {
    rule_begin(p, NR_socketpair);
    load_arg_low(p, 0);
    jump(p, BPF_JEQ, AF_UNIX, L_FALL, L_FAMILY);
    load_arg_low(p, 1);
    and_k(p, ~(uint32_t)(SOCK_NONBLOCK | SOCK_CLOEXEC));
    jump(p, BPF_JEQ, SOCK_STREAM, L_ALLOW, L_FALL);
    jump(p, BPF_JEQ, SOCK_SEQPACKET, L_ALLOW, L_FALL);
    ret(p, RET_ERRNO(EPERM));
    here(p, L_FAMILY);
    ret(p, RET_ERRNO(EAFNOSUPPORT));
    here(p, L_ALLOW);
    ret(p, RET_ALLOW);
    rule_end(p);
}

/* clone(): refused with EPERM (what an unprivileged caller gets) when the
 * flags hold any CLONE_NEW* bit, for the reasons given at unshare; fork,
 * vfork, posix_spawn and thread creation pass. The flags are the first
 * argument on x86_64 and on arm64 (the CLONE_BACKWARDS variants only move
 * tls and child_tid; s390's CLONE_BACKWARDS2, which swaps flags and stack,
 * is not supported here), and the kernel reads only lower_32_bits(flags),
 * where every CLONE_NEW* bit lives. CLONE_NEWTIME (0x80) lies in clone()'s
 * exit-signal byte (CSIGNAL), so clone() never creates a time namespace;
 * keeping it in the mask costs nothing (no signal number reaches 128). */
#define CLONE_NEW_ANY                                                                      \
    ((uint32_t)(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |    \
                CLONE_NEWNET | CLONE_NEWCGROUP | CLONE_NEWTIME))

/* EPERM when the low word of argument `arg` has any bit of `mask`. */
static void rule_deny_bits(struct prog *p, uint32_t nr, unsigned arg, uint32_t mask) {
    rule_begin(p, nr);
    load_arg_low(p, arg);
    jump(p, BPF_JSET, mask, L_DENY, L_ALLOW);
    deny_or_allow(p);
}

/* CLONE_UNTRACED, refused as well: a child made with it is not traced by
 * the init's exec check (init/exectrace.c), whose tracing every process of
 * a command inherits; nothing but the kernel's own threads needs it. */
#ifndef CLONE_UNTRACED
#  define CLONE_UNTRACED 0x00800000
#endif

static void rule_clone(struct prog *p) {
    rule_deny_bits(p, NR_clone, 0, CLONE_NEW_ANY | (uint32_t)CLONE_UNTRACED);
}

/* ioctl(): TIOCSTI pushes bytes into a terminal's input queue. Given the
 * user's terminal (an inherited fd, or the controlling tty), a sandboxed
 * process could type commands that the user's shell runs, outside the
 * sandbox, once it exits (CVE-2017-5226 in bubblewrap). The init's
 * setsid() and Linux 6.2's dev.tty.legacy_tiocsti=0 also stop it, but the
 * first does not cover an inherited fd and the second is a host setting.
 * TIOCLINUX's TIOCL_PASTESEL does the same on a virtual console
 * (CVE-2023-1523). The kernel truncates cmd to unsigned int, so only the
 * low 32 bits are compared: 0xffffffff00005412 is caught as TIOCSTI. */
static void rule_ioctl(struct prog *p) {
    rule_begin(p, NR_ioctl);
    load_arg_low(p, 1);
    jump(p, BPF_JEQ, TIOCSTI, L_DENY, L_FALL);
    jump(p, BPF_JEQ, TIOCLINUX, L_DENY, L_ALLOW);
    deny_or_allow(p);
}

/* personality(): only the query (0xffffffff) and the harmless personas
 * PER_LINUX (0), PER_LINUX32 (8: `linux32`, `setarch i686` builds; it only
 * changes uname's machine) and UNAME26 (uname reports 2.6), alone or
 * together - the set of Docker's default profile. Refused with EPERM: the
 * flags that weaken the memory layout of every program exec'd afterwards
 * (ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, MMAP_PAGE_ZERO,
 * ADDR_COMPAT_LAYOUT, ...), classic aids to exploits, and the foreign
 * personas. Cost, as under Docker: `setarch -R` fails, and so do
 * ThreadSanitizer binaries on kernels with high ASLR entropy, where they
 * re-exec themselves with ADDR_NO_RANDOMIZE. The argument is unsigned int:
 * low 32 bits. */
static void rule_personality(struct prog *p) {
    static const uint32_t allowed[] = {
        PER_LINUX, PER_LINUX32, UNAME26, PER_LINUX32 | UNAME26, 0xffffffffu,
    };
    rule_begin(p, NR_personality);
    load_arg_low(p, 0);
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        jump(p, BPF_JEQ, allowed[i], L_ALLOW, L_FALL);
    ret(p, RET_ERRNO(EPERM));
    here(p, L_ALLOW);
    ret(p, RET_ALLOW);
    rule_end(p);
}

/* chmod family, open with O_CREAT, mknod: no set-user-ID or set-group-ID
 * bit. The command runs with the caller's uid, root for a root caller, and
 * the workspace is the host's: a set-id executable left there would run
 * with the caller's identity for whoever starts it on the host after the
 * run. EPERM, what chmod answers without the privilege to set the bit. The
 * mode is an unsigned int (umode_t): low 32 bits. Other rules keep their
 * own argument: only the mode word is tested here. */
#define SETID_BITS ((uint32_t)(S_ISUID | S_ISGID))

static void rule_setid(struct prog *p, uint32_t nr, unsigned mode_arg) {
    rule_deny_bits(p, nr, mode_arg, SETID_BITS);
}

static void rules_setid(struct prog *p) {
    static const struct {
        int nr;
        unsigned mode_arg;
    } calls[] = {
        {NR_chmod, 1},  {NR_fchmod, 1}, {NR_fchmodat, 2}, {NR_fchmodat2, 2}, {NR_creat, 1},
        {NR_open, 2},   {NR_openat, 3}, {NR_mknod, 1},    {NR_mknodat, 2},
    };
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++)
        if (calls[i].nr != NONE)
            rule_setid(p, (uint32_t)calls[i].nr, calls[i].mode_arg);
}

/* PID 1 is the sandbox's init, and in a long-lived sandbox every command
 * is a fork of it: a command that changed the init's scheduling policy,
 * nice value, CPU affinity, I/O priority or resource limits would hand
 * them to every later command (nice 19, one CPU, idle I/O, an RLIMIT_AS
 * that kills each of them at start), and an unprivileged process cannot
 * undo most of those changes. The kernel lets a command make them (same
 * uid), so the filter refuses them with EPERM:
 *  - calls that name one process (prlimit64, sched_setaffinity,
 *    sched_setscheduler, sched_setparam, sched_setattr) when the pid is 1;
 *  - calls that name a set (setpriority, ioprio_set) when `who` is 1 (the
 *    process or process group 1, the init's) or when `which` is a user
 *    (every process of a uid: the init runs as the command's uid).
 * Pid 0 (the caller itself) and any other pid pass: every other process
 * in the sandbox belongs to the command and dies with it. pid_t and the
 * `which`/`who` ints are 32 bits to the kernel: low words only. */
#define WHICH_PRIO_USER 2   /* setpriority(PRIO_USER, ...) */
#define WHICH_IOPRIO_USER 3 /* ioprio_set(IOPRIO_WHO_USER, ...) */

static void rule_not_pid1(struct prog *p, int nr, unsigned pid_arg) {
    rule_begin(p, (uint32_t)nr);
    load_arg_low(p, pid_arg);
    jump(p, BPF_JEQ, 1, L_DENY, L_ALLOW);
    deny_or_allow(p);
}

static void rule_not_pid1_nor_user(struct prog *p, int nr, uint32_t user_which) {
    rule_begin(p, (uint32_t)nr);
    load_arg_low(p, 0);
    jump(p, BPF_JEQ, user_which, L_DENY, L_FALL);
    load_arg_low(p, 1);
    jump(p, BPF_JEQ, 1, L_DENY, L_ALLOW);
    deny_or_allow(p);
}

static void rules_pid1(struct prog *p) {
    static const int by_pid[] = {NR_prlimit64, NR_sched_setaffinity, NR_sched_setscheduler,
                                 NR_sched_setparam, NR_sched_setattr};
    for (size_t i = 0; i < sizeof by_pid / sizeof by_pid[0]; i++)
        rule_not_pid1(p, by_pid[i], 0);
    rule_not_pid1_nor_user(p, NR_setpriority, WHICH_PRIO_USER);
    rule_not_pid1_nor_user(p, NR_ioprio_set, WHICH_IOPRIO_USER);
}

/* seccomp(SECCOMP_SET_MODE_FILTER) with SECCOMP_FILTER_FLAG_NEW_LISTENER:
 * EPERM. The init watches link() and linkat() through a user-notification
 * filter of its own (a3s_seccomp_watch_links: a hard link made and removed
 * again can change a file where no directory watch sees it, so the host's
 * change detection must know). A command that stacked a notifying filter of
 * its own would receive those notifications first and could hide its links;
 * any other filter it installs, and a listener-less one, stay allowed. */
static void rule_seccomp_listener(struct prog *p) {
    rule_begin(p, NR_seccomp);
    load_arg_low(p, 0);
    jump(p, BPF_JEQ, SECCOMP_SET_MODE_FILTER, L_FALL, L_ALLOW);
    load_arg_low(p, 1);
    jump(p, BPF_JSET, (uint32_t)SECCOMP_FILTER_FLAG_NEW_LISTENER, L_DENY, L_ALLOW);
    deny_or_allow(p);
}

/* ------------------------------------------------------------------------ */
/* The program                                                               */
/* ------------------------------------------------------------------------ */

/* Every filter's first block: a foreign ABI is killed, x32 refused. */
static void arch_block(struct prog *p) {
    /* The architecture first: system call numbers mean different calls in
     * each ABI, and a 64-bit process can still make 32-bit calls (int 0x80
     * on x86_64; AArch32 tasks on arm64) which would slip past every number
     * below. The whole process is killed (SIGSYS, "Bad system call") rather
     * than given an errno: a foreign-ABI program cannot run under this
     * filter anyway, and an errno from exit() could leave it spinning. */
    block_begin(p, false);
    load_arch(p);
    jump(p, BPF_JEQ, NATIVE_ARCH, L_ALLOW, L_FALL);
    ret(p, SECCOMP_RET_KILL_PROCESS);
    here(p, L_ALLOW);
    load_nr(p);
#ifdef HAVE_X32_ABI
    /* x32 calls arrive with AUDIT_ARCH_X86_64 and nr | __X32_SYSCALL_BIT,
     * so none of the numbers below would match them. Refused (ENOSYS, as
     * on a kernel without x32) together with every larger number, which the
     * kernel would answer with ENOSYS anyway - what libseccomp does too. */
    jump(p, BPF_JGE, X32_SYSCALL_BIT, L_FALL, L_NEXT);
    ret(p, RET_ERRNO(ENOSYS));
#endif
    here(p, L_NEXT);
    block_end(p);
}

static void generate(struct prog *p, uint64_t flags) {
    arch_block(p);

    /* Argument rules first: ioctl and clone are frequent, and these calls
     * run the filter on every use (the action cache cannot cover them). */
    rule_ioctl(p);
    rule_clone(p);
    rule_socket(p);
    rule_socketpair(p);
    rule_personality(p);
    rules_setid(p);
    rules_pid1(p);
    rule_seccomp_listener(p);
    for (size_t i = 0; i < NDENIES; i++) {
        if (denies[i].nr == NONE)
            continue;
        if ((flags & A3S_SECCOMP_TRACER) && denies[i].nr == NR_ptrace)
            continue; /* the tracing init's own filter: its commands stack the full one */
        rule_begin(p, (uint32_t)denies[i].nr);
        ret(p, RET_ERRNO(denies[i].err));
        rule_end(p);
    }
    ret(p, RET_ALLOW);
}

/* ------------------------------------------------------------------------ */
/* The guard of a cgroup-tier program (a3s_seccomp_build_guard)              */
/* ------------------------------------------------------------------------ */

#define F_SETOWN_NR 8     /* fcntl: the pid or -pgid that SIGIO / F_SETSIG goes to */
#define F_SETOWN_EX_NR 15 /* fcntl: the same through a struct the filter cannot read */
#define IOCTL_FIOSETOWN 0x8901u
#define IOCTL_SIOCSPGRP 0x8902u

/* nr whose arguments `args` (a bit per argument) are refused (EPERM) when
 * one's low word is one of the targets: pid_t is an int to the kernel. */
static void rule_not_targets(struct prog *p, uint32_t nr, unsigned args, const int32_t *targets,
                             size_t n) {
    rule_begin(p, nr);
    unsigned last = 0;
    for (unsigned a = 0; a < 6; a++)
        if (args & (1u << a))
            last = a;
    for (unsigned a = 0; a < 6; a++) {
        if (!(args & (1u << a)))
            continue;
        load_arg_low(p, a);
        for (size_t i = 0; i < n; i++)
            jump(p, BPF_JEQ, (uint32_t)targets[i], L_DENY,
                 a == last && i + 1 == n ? L_ALLOW : L_FALL);
    }
    deny_or_allow(p);
}

/* fcntl(F_SETOWN) to a target: the file's SIGIO, or the signal F_SETSIG
 * chose (SIGKILL and SIGSTOP included), would go to it on the next I/O;
 * F_SETOWN_EX names its owner in a struct, so it is refused whatever it
 * holds. */
static void rule_fcntl_owner(struct prog *p, const int32_t *targets, size_t n) {
    rule_begin(p, NR_fcntl);
    load_arg_low(p, 1);
    jump(p, BPF_JEQ, F_SETOWN_EX_NR, L_DENY, L_FALL);
    jump(p, BPF_JEQ, F_SETOWN_NR, L_FALL, L_ALLOW);
    load_arg_low(p, 2);
    for (size_t i = 0; i < n; i++)
        jump(p, BPF_JEQ, (uint32_t)targets[i], L_DENY, i + 1 == n ? L_ALLOW : L_FALL);
    deny_or_allow(p);
}

/* ioctl(FIOSETOWN) and ioctl(SIOCSPGRP): F_SETOWN through a pointer. */
static void rule_ioctl_owner(struct prog *p) {
    rule_begin(p, NR_ioctl);
    load_arg_low(p, 1);
    jump(p, BPF_JEQ, IOCTL_FIOSETOWN, L_DENY, L_FALL);
    jump(p, BPF_JEQ, IOCTL_SIOCSPGRP, L_DENY, L_ALLOW);
    deny_or_allow(p);
}

static void generate_guard(struct prog *p, const int32_t *targets, size_t n) {
    arch_block(p);
    /* signals: kill's pid (a pid, -pgid, or -1: every process of the uid),
     * the thread-directed calls' tgid and tid */
    rule_not_targets(p, NR_kill, 1u << 0, targets, n);
    rule_not_targets(p, NR_tkill, 1u << 0, targets, n);
    rule_not_targets(p, NR_rt_sigqueueinfo, 1u << 0, targets, n);
    rule_not_targets(p, NR_tgkill, 1u << 0 | 1u << 1, targets, n);
    rule_not_targets(p, NR_rt_tgsigqueueinfo, 1u << 0 | 1u << 1, targets, n);
    /* a pidfd of a target (pidfd_send_signal then needs none of the rules
     * above); prlimit64 (RLIMIT_CPU's hard limit is a SIGKILL); ptrace's
     * pid is its second argument; the memory of a target */
    rule_not_targets(p, NR_pidfd_open, 1u << 0, targets, n);
    rule_not_targets(p, NR_prlimit64, 1u << 0, targets, n);
    rule_not_targets(p, NR_ptrace, 1u << 1, targets, n);
    rule_not_targets(p, NR_process_vm_writev, 1u << 0, targets, n);
    rule_not_targets(p, NR_process_vm_readv, 1u << 0, targets, n);
    rule_fcntl_owner(p, targets, n);
    rule_ioctl_owner(p);
    /* pidfd_send_signal takes a /proc/<pid> directory fd as well as a pidfd,
     * and which process an fd names is not an argument the filter can see */
    rule_begin(p, NR_pidfd_send_signal);
    ret(p, RET_ERRNO(EPERM));
    rule_end(p);
    ret(p, RET_ALLOW);
}

/* A generated program, copied into out (for a3s_seccomp_build and
 * a3s_seccomp_build_guard, which `who` names in the errors); p is freed
 * either way. A broken or empty program is a bug here, not the caller's:
 * A3S_E_TOO_LARGE with its length. */
static int take_program(struct prog *p, const char *who, struct a3s_seccomp_program *out,
                        a3s_error *err) {
    if (p->broken || p->len == 0 || p->len > BPF_MAXINSNS) {
        size_t len = p->len;
        free(p);
        return a3s_fail(err, A3S_E_TOO_LARGE, 0, (int64_t)len,
                        "%s: internal error generating the filter", who);
    }
    struct sock_filter *filter = malloc(p->len * sizeof *filter);
    if (!filter) {
        free(p);
        return a3s_fail(err, A3S_E_NOMEM, ENOMEM, 0, "%s: out of memory", who);
    }
    memcpy(filter, p->insn, p->len * sizeof *filter);
    out->filter = filter;
    out->len = (unsigned short)p->len;
    free(p);
    return a3s_ok(err);
}

#endif /* NATIVE_ARCH */

const struct a3s_seccomp_denial *a3s_seccomp_denials(size_t *count) {
#if defined(NATIVE_ARCH)
    *count = NDENIES;
    return denies;
#else
    *count = 0;
    return NULL;
#endif
}

int a3s_seccomp_build(uint64_t flags, struct a3s_seccomp_program *out, a3s_error *err) {
    if (!out)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_seccomp_build: NULL output");
    out->filter = NULL;
    out->len = 0;
    if ((flags & ~(uint64_t)(A3S_SECCOMP_TRACER | A3S_SECCOMP_PTRACE_ONLY)) ||
        flags == (A3S_SECCOMP_TRACER | A3S_SECCOMP_PTRACE_ONLY))
        return a3s_fail(err, A3S_E_INVALID, 0, (int64_t)flags,
                        "a3s_seccomp_build: unknown flags 0x%llx", (unsigned long long)flags);
#if defined(NATIVE_ARCH)
    if (flags & A3S_SECCOMP_PTRACE_ONLY) {
        /* what a command of a tracing init stacks on the init's filter, which
         * refuses everything else already: ptrace (and a foreign ABI, whose
         * numbers mean other calls) */
        static const struct sock_filter only[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)NR_ptrace, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, RET_ERRNO(EPERM)),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        out->filter = malloc(sizeof only);
        if (!out->filter)
            return a3s_fail(err, A3S_E_NOMEM, ENOMEM, 0, "a3s_seccomp_build: out of memory");
        memcpy(out->filter, only, sizeof only);
        out->len = (unsigned short)(sizeof only / sizeof only[0]);
        return a3s_ok(err);
    }
    struct prog *p = calloc(1, sizeof *p);
    if (!p)
        return a3s_fail(err, A3S_E_NOMEM, ENOMEM, 0, "a3s_seccomp_build: out of memory");
    generate(p, flags);
    return take_program(p, "a3s_seccomp_build", out, err);
#else
    return a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0,
                    "a3s_seccomp_build: no seccomp filter for this architecture");
#endif
}

int a3s_seccomp_build_guard(const int32_t *targets, size_t n, struct a3s_seccomp_program *out,
                            a3s_error *err) {
    if (!out)
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_seccomp_build_guard: NULL output");
    out->filter = NULL;
    out->len = 0;
    if (!targets || n == 0 || n > A3S_SECCOMP_GUARD_MAX)
        return a3s_fail(err, A3S_E_INVALID, 0, (int64_t)n,
                        "a3s_seccomp_build_guard: %zu targets (1 to %d)", n,
                        A3S_SECCOMP_GUARD_MAX);
#if defined(NATIVE_ARCH)
    struct prog *p = calloc(1, sizeof *p);
    if (!p)
        return a3s_fail(err, A3S_E_NOMEM, ENOMEM, 0, "a3s_seccomp_build_guard: out of memory");
    generate_guard(p, targets, n);
    return take_program(p, "a3s_seccomp_build_guard", out, err);
#else
    return a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0,
                    "a3s_seccomp_build_guard: no seccomp filter for this architecture");
#endif
}

void a3s_seccomp_program_free(struct a3s_seccomp_program *p) {
    if (!p)
        return;
    free(p->filter);
    p->filter = NULL;
    p->len = 0;
}

int a3s_seccomp_install(const struct a3s_seccomp_program *p) {
    if (!p || !p->filter || p->len == 0)
        return -EINVAL;
    struct sock_fprog prog = {.len = p->len, .filter = p->filter};
    /* Required to install a filter without CAP_SYS_ADMIN; it also keeps
     * setuid binaries from gaining privileges (the init sets it too). */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -errno;
#ifdef SYS_seccomp
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0)
        return 0;
    if (errno != ENOSYS)
        return -errno;
#endif
    /* Linux < 3.17: no seccomp() system call. */
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0)
        return -errno;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Watching link() and linkat()                                             */
/* ------------------------------------------------------------------------ */

#ifndef SECCOMP_RET_USER_NOTIF /* Linux 5.0 */
#  define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif
#ifndef SECCOMP_USER_NOTIF_FLAG_CONTINUE /* Linux 5.5 */
#  define SECCOMP_USER_NOTIF_FLAG_CONTINUE (1UL << 0)
#endif

#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS /* Linux 6.6 */
#  define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#  define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

int a3s_seccomp_watch_links(bool execs) {
#if defined(NATIVE_ARCH) && defined(SECCOMP_IOCTL_NOTIF_RECV) && defined(SYS_seccomp)
    /* foreign architectures: allowed here, killed by the deny-list */
    struct sock_filter insn[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 0, 8),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)NR_link, 7, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)NR_linkat, 6, 0),
        /* without execs these never match: execve's number is not NONE's */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, execs ? (uint32_t)NR_execve : (uint32_t)NONE, 5, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, execs ? (uint32_t)NR_execveat : (uint32_t)NONE, 4, 0),
        /* prctl(PR_SET_DUMPABLE, ...) (the option an int: the low word): the
         * exec check follows a process before it becomes non-dumpable */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, execs ? (uint32_t)NR_prctl : (uint32_t)NONE, 0, 2),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PR_SET_DUMPABLE, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
    };
    struct sock_fprog prog = {.len = (unsigned short)(sizeof insn / sizeof insn[0]),
                              .filter = insn};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -errno;
    long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    if (fd < 0)
        return -errno;
    /* Linux 6.6: the caller and the init are woken on the waker's CPU, as a
     * hand-off (each exec is a round trip); older kernels refuse the flag
     * and wake as before */
    if (execs)
        (void)!ioctl((int)fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP);
    return (int)fd;
#else
    (void)execs;
    return -ENOSYS;
#endif
}

int a3s_seccomp_notif_take(int listener, struct a3s_seccomp_call *call) {
#if defined(NATIVE_ARCH) && defined(SECCOMP_IOCTL_NOTIF_RECV) && defined(SYS_seccomp)
    /* the kernel's structures may be larger than these headers': ask (once) */
    static struct seccomp_notif_sizes sizes;
    if (!sizes.seccomp_notif && syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) != 0)
        return -errno;
    union {
        struct seccomp_notif n;
        unsigned char bytes[512];
    } req;
    if (sizes.seccomp_notif > sizeof req || sizes.seccomp_notif_resp > 512)
        return -EOVERFLOW;
    memset(&req, 0, sizeof req); /* the kernel wants it zeroed */
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0)
        return errno == ENOENT ? 0 : -errno; /* ENOENT: its caller died meanwhile */
    call->id = req.n.id;
    call->pid = (int32_t)req.n.pid;
    call->exec = req.n.data.nr == NR_execve || req.n.data.nr == NR_execveat;
    /* only 0 makes it non-dumpable (the kernel compares the whole long) */
    call->prctl = req.n.data.nr == NR_prctl; /* the filter: PR_SET_DUMPABLE */
    call->nodump = call->prctl && (uint32_t)req.n.data.args[0] == PR_SET_DUMPABLE &&
                   req.n.data.args[1] == 0;
    return 1;
#else
    (void)listener, (void)call;
    return -ENOSYS;
#endif
}

int a3s_seccomp_notif_answer(int listener, uint64_t id, int err) {
#if defined(NATIVE_ARCH) && defined(SECCOMP_IOCTL_NOTIF_RECV) && defined(SYS_seccomp)
    union {
        struct seccomp_notif_resp r;
        unsigned char bytes[512];
    } resp;
    memset(&resp, 0, sizeof resp);
    resp.r.id = id;
    resp.r.error = err ? -err : 0;
    resp.r.flags = err ? 0 : SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) != 0 && errno != ENOENT)
        return -errno; /* ENOENT: its caller died meanwhile */
    return 0;
#else
    (void)listener, (void)id, (void)err;
    return -ENOSYS;
#endif
}

int a3s_seccomp_continue_link(int listener) {
    struct a3s_seccomp_call call;
    int rc = a3s_seccomp_notif_take(listener, &call);
    if (rc <= 0)
        return rc < 0 ? rc : 1;
    rc = a3s_seccomp_notif_answer(listener, call.id, 0);
    return rc < 0 ? rc : 1;
}

#else
typedef int a3s_seccomp_unused; /* ISO C forbids an empty unit */
#endif /* __linux__ */
