/* limits.c - what bounds a command and keeps PID 1's own settings its own.
 *
 *  - OOM score: every command starts with oom_score_adj OOM_ADJ_COMMAND
 *    (the kernel's maximum), so when memory runs out anywhere on the
 *    machine the sandbox's processes are the first the OOM killer takes,
 *    and within the sandbox never its init. The init keeps the value it
 *    started with: it writes the command's value just before each fork and
 *    its own right after, and puts its own back after every command (a
 *    root caller's command owns /proc/1/oom_score_adj and could change
 *    it), and so its coredump_filter, which a fork inherits too. It writes
 *    through descriptors opened while it was still dumpable: once it is
 *    not, /proc/self belongs to root, which an unprivileged caller's init
 *    is not. (What else of /proc/1 such a command can write is not passed
 *    on: comm and autogroup, which a command's setsid replaces, and
 *    statistics.)
 *  - Processes: each command's RLIMIT_NPROC (set in the child, see
 *    run_child), counted per user inside the sandbox's user namespace.
 *    The kernel does not apply it to a root caller (uid 0 on the host):
 *    there the pids cgroup the host made, if it could, is the bound.
 *  - Memory, where the host could not make a memory cgroup: a watchdog
 *    that, every WATCH_MS while a command runs, adds up the resident
 *    anonymous memory of every process of the pid namespace (/proc/N/statm:
 *    resident minus file-backed and shared pages, so a mapped workspace
 *    file does not count), the contents of the sandbox's own tmpfs mounts
 *    and the SysV shared memory segments, and kills the command when the
 *    sum passes the bound. Kernel memory a command can pin without mapping
 *    it counts too: the data queued in the sockets of the sandbox's own
 *    network namespace (sock_diag: each AF_UNIX socket's send and receive
 *    allocation, which queued data is charged to; a command holding 1 GiB
 *    in socketpair buffers is killed like a balloon) and the bytes queued
 *    in every pipe a process of the namespace holds (FIONREAD on a copy
 *    opened through /proc/N/fd, each pipe once). With a memory cgroup, which
 *    may not charge those buffers, the watchdog counts them alone against
 *    the same bound (--kernel-memory-max). It is a bound after the fact: a command can
 *    overshoot it for up to WATCH_MS, and memory no process maps and no
 *    tmpfs holds (an unmapped memfd) is not seen; every command's OOM score
 *    is the kernel's maximum, so if the machine runs out of memory anyway,
 *    the command's processes are the ones the kernel kills.
 */
#define _GNU_SOURCE
#include "init.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define OOM_ADJ_COMMAND 1000 /* OOM_SCORE_ADJ_MAX */
#define WATCH_MS 100
#define NS_NET_INDEX 2 /* host_ns: user, mnt, net, pid */

static bool write_adj(int fd, int value) {
    char buf[16];
    int n = snprintf(buf, sizeof buf, "%d", value);
    return fd >= 0 && pwrite(fd, buf, (size_t)n, 0) == n;
}

/* Reads the number in a /proc file (base 10, or 16 for coredump_filter). */
static bool read_number(int fd, int base, long long *out) {
    char buf[32] = {0};
    ssize_t n = fd >= 0 ? pread(fd, buf, sizeof buf - 1, 0) : -1;
    char *end;
    *out = n > 0 ? strtoll(buf, &end, base) : 0;
    return n > 0 && end != buf;
}

bool own_settings_open(struct config *cfg) {
    long long v;
    cfg->oom_fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
    if (!read_number(cfg->oom_fd, 10, &v) || v < -1000 || v > 1000)
        return false;
    cfg->oom_base = (int)v;
    cfg->dump_fd = open("/proc/self/coredump_filter", O_RDWR | O_CLOEXEC);
    if (!read_number(cfg->dump_fd, 16, &v) || v < 0)
        return false;
    cfg->dump_base = (unsigned long long)v;
    return true;
}

void oom_adj_for_command(const struct config *cfg) {
    write_adj(cfg->oom_fd, OOM_ADJ_COMMAND);
}

bool own_settings_restore(const struct config *cfg) {
    long long v;
    bool ok = true;
    if (!read_number(cfg->oom_fd, 10, &v) || v != cfg->oom_base)
        ok = write_adj(cfg->oom_fd, cfg->oom_base);
    if (!read_number(cfg->dump_fd, 16, &v) || (unsigned long long)v != cfg->dump_base) {
        char buf[32]; /* written in hex: the kernel reads a leading 0 as octal */
        int n = snprintf(buf, sizeof buf, "0x%llx", cfg->dump_base);
        ok = pwrite(cfg->dump_fd, buf, (size_t)n, 0) == n && ok;
    }
    return ok;
}

uint64_t command_nproc(const struct config *cfg) {
    struct rlimit rl;
    if (!cfg->max_processes || getrlimit(RLIMIT_NPROC, &rl) < 0)
        return cfg->max_processes;
    return rl.rlim_max != RLIM_INFINITY && rl.rlim_max < cfg->max_processes ? rl.rlim_max
                                                                            : cfg->max_processes;
}

int watchdog_arm(const struct config *cfg) {
    if (!cfg->memory_max && !cfg->kernel_memory_max)
        return -1;
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    struct itimerspec its = {.it_interval = {0, WATCH_MS * 1000000L},
                             .it_value = {0, WATCH_MS * 1000000L}};
    if (fd >= 0 && timerfd_settime(fd, 0, &its, NULL) < 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Resident anonymous bytes of every process of the namespace but PID 1. */
static uint64_t processes_memory(long page) {
    uint64_t total = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9' || !strcmp(e->d_name, "1"))
            continue;
        char path[64], buf[256];
        snprintf(path, sizeof path, "/proc/%.20s/statm", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
        if (fd >= 0)
            close(fd);
        unsigned long long size, resident, shared;
        if (n <= 0)
            continue; /* gone meanwhile */
        buf[n] = '\0';
        if (sscanf(buf, "%llu %llu %llu", &size, &resident, &shared) == 3 && resident > shared)
            total += (resident - shared) * (uint64_t)page;
    }
    if (d)
        closedir(d);
    return total;
}

/* Bytes held by SysV shared memory segments (the "rss" column). */
static uint64_t sysv_shm_memory(void) {
    FILE *f = fopen("/proc/sysvipc/shm", "re");
    if (!f)
        return 0;
    char line[512];
    int column = -1;
    uint64_t total = 0;
    if (fgets(line, sizeof line, f)) { /* the header names the columns */
        int i = 0;
        for (char *save = NULL, *t = strtok_r(line, " \n", &save); t;
             t = strtok_r(NULL, " \n", &save), i++)
            if (!strcmp(t, "rss"))
                column = i;
    }
    while (column >= 0 && fgets(line, sizeof line, f)) {
        int i = 0;
        for (char *save = NULL, *t = strtok_r(line, " \n", &save); t;
             t = strtok_r(NULL, " \n", &save), i++)
            if (i == column)
                total += strtoull(t, NULL, 10);
    }
    fclose(f);
    return total;
}

/* Bytes queued in the AF_UNIX sockets of this network namespace: each
 * socket's send allocation (what queued data is charged to) and receive
 * allocation, as sock_diag reports them. Only called when the namespace is
 * the sandbox's own: every socket in it is the command's. */
int watchdog_socket(const struct config *cfg) {
    if (!cfg->memory_max && !cfg->kernel_memory_max)
        return -1;
    if (!cfg->host_ns_set || !cfg->host_ns[NS_NET_INDEX])
        return -1; /* the host's network: its sockets are not the command's */
    return socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
}

static uint64_t socket_memory(int fd) {
    if (fd < 0)
        return 0;
    struct {
        struct nlmsghdr nlh;
        struct unix_diag_req req;
    } msg;
    memset(&msg, 0, sizeof msg);
    msg.nlh.nlmsg_len = sizeof msg;
    msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    msg.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    msg.req.sdiag_family = AF_UNIX;
    msg.req.udiag_states = ~0u;
    msg.req.udiag_show = UDIAG_SHOW_MEMINFO;
    uint64_t total = 0;
    static char buf[32768]; /* PID 1 is single-threaded: no stack for a large buffer */
    while (recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0) {
        /* what an earlier dump left unread */
    }
    if (send(fd, &msg, sizeof msg, 0) != (ssize_t)sizeof msg)
        return 0;
    for (bool done = false; !done;) {
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
             h = NLMSG_NEXT(h, n)) {
            if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
                done = true;
                break;
            }
            struct unix_diag_msg *m = NLMSG_DATA(h);
            int left = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof *m));
            for (struct rtattr *a = (struct rtattr *)(m + 1); RTA_OK(a, left);
                 a = RTA_NEXT(a, left)) {
                if (a->rta_type != UNIX_DIAG_MEMINFO ||
                    RTA_PAYLOAD(a) < (SK_MEMINFO_WMEM_ALLOC + 1) * sizeof(uint32_t))
                    continue;
                const uint32_t *mem = RTA_DATA(a);
                total += (uint64_t)mem[SK_MEMINFO_RMEM_ALLOC] + mem[SK_MEMINFO_WMEM_ALLOC];
            }
        }
    }
    return total;
}

#define MAX_PIPES 4096 /* pipes counted per round; past it, each further one counts a full 1 MiB */

/* Bytes queued in the pipes the processes of the namespace hold, each pipe
 * once: a copy of the descriptor opened through /proc/N/fd (non-blocking,
 * read-only: no reader or writer is waited for) says how much it holds. */
static uint64_t pipe_memory(void) {
    static unsigned long long seen[MAX_PIPES];
    size_t nseen = 0;
    uint64_t total = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9' || !strcmp(e->d_name, "1"))
            continue;
        char path[96];
        snprintf(path, sizeof path, "/proc/%.20s/fd", e->d_name);
        DIR *fds = opendir(path);
        struct dirent *f;
        while (fds && (f = readdir(fds)) != NULL) {
            char target[64];
            if (f->d_name[0] < '0' || f->d_name[0] > '9')
                continue;
            snprintf(path, sizeof path, "/proc/%.20s/fd/%.20s", e->d_name, f->d_name);
            ssize_t n = readlink(path, target, sizeof target - 1);
            if (n <= 6 || strncmp(target, "pipe:[", 6) != 0)
                continue;
            target[n] = '\0';
            unsigned long long ino = strtoull(target + 6, NULL, 10);
            bool counted = false;
            for (size_t i = 0; i < nseen && !counted; i++)
                counted = seen[i] == ino;
            if (counted)
                continue;
            if (nseen == MAX_PIPES) {
                total += 1u << 20; /* pipe-max-size's default: what one can hold */
                continue;
            }
            seen[nseen++] = ino;
            int p = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
            int queued = 0;
            if (p >= 0 && ioctl(p, FIONREAD, &queued) == 0 && queued > 0)
                total += (uint64_t)queued;
            if (p >= 0)
                close(p);
        }
        if (fds)
            closedir(fds);
    }
    if (d)
        closedir(d);
    return total;
}

bool watchdog_over(const struct config *cfg, int tfd) {
    uint64_t ticks;
    if (read(tfd, &ticks, sizeof ticks) < 0)
        return false;
    uint64_t total = pipe_memory();
    total += socket_memory(cfg->diag_fd); /* -1 unless the network namespace is its own */
    if (!cfg->memory_max) /* a memory cgroup bounds the rest */
        return total > cfg->kernel_memory_max;
    long page = sysconf(_SC_PAGESIZE);
    total += processes_memory(page > 0 ? page : 4096) + sysv_shm_memory();
    for (size_t i = 0; i < cfg->nwatch_tmpfs; i++) {
        struct statvfs sv;
        if (statvfs(cfg->watch_tmpfs[i], &sv) == 0 && sv.f_blocks >= sv.f_bfree)
            total += (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
    }
    return total > cfg->memory_max;
}
