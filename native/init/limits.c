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
 *    sum passes the bound. It is a bound after the fact: a command can
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/timerfd.h>
#include <unistd.h>

#define OOM_ADJ_COMMAND 1000 /* OOM_SCORE_ADJ_MAX */
#define WATCH_MS 100

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
    if (!cfg->memory_max)
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

bool watchdog_over(const struct config *cfg, int tfd) {
    uint64_t ticks;
    if (read(tfd, &ticks, sizeof ticks) < 0)
        return false;
    long page = sysconf(_SC_PAGESIZE);
    uint64_t total = processes_memory(page > 0 ? page : 4096) + sysv_shm_memory();
    for (size_t i = 0; i < cfg->nwatch_tmpfs; i++) {
        struct statvfs sv;
        if (statvfs(cfg->watch_tmpfs[i], &sv) == 0 && sv.f_blocks >= sv.f_bfree)
            total += (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
    }
    return total > cfg->memory_max;
}
