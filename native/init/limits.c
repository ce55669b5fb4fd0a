/* limits.c - what bounds a command and keeps PID 1's own settings its own.
 *
 *  - OOM score: every command starts with oom_score_adj OOM_ADJ_COMMAND
 *    (the kernel's maximum), so when memory runs out anywhere on the
 *    machine the sandbox's processes are the first the OOM killer takes,
 *    and within the sandbox never its init. The init keeps the value it
 *    started with: it writes the command's value just before each fork and
 *    its own right after, and puts its own back after every command (a
 *    root caller's command owns /proc/1/oom_score_adj and could change
 *    it). It writes through a descriptor opened while it was still
 *    dumpable: once it is not, /proc/self belongs to root, which an
 *    unprivileged caller's init is not.
 *  - Processes: each command's RLIMIT_NPROC (set in the child, see
 *    run_child), counted per user inside the sandbox's user namespace.
 */
#define _GNU_SOURCE
#include "init.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define OOM_ADJ_COMMAND 1000 /* OOM_SCORE_ADJ_MAX */

static bool write_adj(int fd, int value) {
    char buf[16];
    int n = snprintf(buf, sizeof buf, "%d", value);
    return fd >= 0 && pwrite(fd, buf, (size_t)n, 0) == n;
}

bool oom_adj_open(struct config *cfg) {
    cfg->oom_fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
    char buf[16] = {0};
    ssize_t n = cfg->oom_fd >= 0 ? pread(cfg->oom_fd, buf, sizeof buf - 1, 0) : -1;
    if (n <= 0)
        return false;
    char *end;
    long v = strtol(buf, &end, 10);
    if (end == buf || v < -1000 || v > 1000)
        return false;
    cfg->oom_base = (int)v;
    return true;
}

void oom_adj_for_command(const struct config *cfg) {
    write_adj(cfg->oom_fd, OOM_ADJ_COMMAND);
}

bool oom_adj_for_init(const struct config *cfg) {
    char buf[16] = {0};
    ssize_t n = pread(cfg->oom_fd, buf, sizeof buf - 1, 0);
    if (n > 0 && atoi(buf) == cfg->oom_base)
        return true;
    return write_adj(cfg->oom_fd, cfg->oom_base);
}
