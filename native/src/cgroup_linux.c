/* cgroup_linux.c - a cgroup of its own for a sandbox (see cgroup_linux.h).
 *
 * Where it goes:
 *  - cgroup v2: the caller's own cgroup holds processes (the caller), so it
 *    cannot hand controllers down ("no internal processes"); the new cgroup
 *    is made next to it, in its parent, when that parent already enables
 *    the controllers for its children and lets this caller move a process
 *    between its children (write access to its cgroup.procs). A caller in
 *    the root cgroup makes it under the root. Nothing is ever enabled or
 *    changed in a cgroup that is not ours.
 *  - cgroup v1 (a controller still mounted as its own hierarchy): a child
 *    of the caller's cgroup in that hierarchy, if the caller may make one.
 * Paths come from /proc/self/mountinfo and /proc/self/cgroup; a mount
 * point with escaped characters, a deleted cgroup or anything unexpected
 * means "no cgroup", never a guess.
 */
#define _GNU_SOURCE
#include "cgroup_linux.h"
#include "mountinfo.h"

#if defined(__linux__)

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NAME_PREFIX "codeward-"
#define REMOVE_WAIT_MS 1000 /* for the last processes to leave before rmdir gives up */

void a3s_cgroup_init(struct a3s_cgroup *cg) {
    memset(cg, 0, sizeof *cg);
    for (size_t i = 0; i < A3S_CGROUP_MAX_DIRS; i++)
        cg->dir_fd[i] = cg->procs_fd[i] = -1;
    cg->oom_fd = -1;
}

/* ---- where the caller's cgroups are ------------------------------------------ */

static bool has_token(const char *list, const char *token, char sep) {
    size_t n = strlen(token);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, sep);
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && !strncmp(p, token, n))
            return true;
        p = end ? end + 1 : NULL;
    }
    return false;
}

/* The mount point and root of the cgroup2 mount (controller NULL) or of the
 * v1 hierarchy carrying `controller`. */
static bool find_mount(const char *controller, char mnt[PATH_MAX], char root[PATH_MAX]) {
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return false;
    char line[4096];
    struct a3s_mount m;
    bool found = false;
    int rc;
    while (!found && (rc = a3s_mountinfo_next(f, line, sizeof line, &m)) != 0) {
        if (rc < 0)
            continue;
        bool match = controller ? !strcmp(m.fstype, "cgroup") &&
                                      has_token(m.super_options, controller, ',')
                                : !strcmp(m.fstype, "cgroup2");
        /* an escaped character (\040 ...) in a path: not worth the risk */
        if (!match || m.escaped || strlen(m.root) >= PATH_MAX ||
            strlen(m.mount_point) >= PATH_MAX)
            continue;
        snprintf(root, PATH_MAX, "%s", m.root);
        snprintf(mnt, PATH_MAX, "%s", m.mount_point);
        found = true;
    }
    fclose(f);
    return found;
}

/* The caller's cgroup in the v2 hierarchy (controller NULL) or in the v1
 * hierarchy of `controller`, as a file system path. */
static bool own_cgroup(const char *controller, char out[PATH_MAX]) {
    char mnt[PATH_MAX], root[PATH_MAX];
    if (!find_mount(controller, mnt, root))
        return false;
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f)
        return false;
    char line[4096], path[PATH_MAX] = "";
    while (!path[0] && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c1 = *c2 = '\0';
        bool match = controller ? has_token(c1 + 1, controller, ',')
                                : !strcmp(line, "0") && c1[1] == '\0';
        if (match && c2[1] == '/' && strlen(c2 + 1) < PATH_MAX)
            snprintf(path, sizeof path, "%s", c2 + 1);
    }
    fclose(f);
    if (!path[0] || strstr(path, " (deleted)") || strstr(path, "/.."))
        return false;
    const char *rel = path;
    size_t rl = strlen(root);
    if (strcmp(root, "/") != 0) {
        if (strncmp(path, root, rl) != 0 || (path[rl] != '/' && path[rl] != '\0'))
            return false; /* outside the part of the hierarchy mounted here */
        rel = path + rl;
    }
    if (!strcmp(rel, "/"))
        rel = "";
    return snprintf(out, PATH_MAX, "%s%s", mnt, rel) < PATH_MAX;
}

/* ---- making one cgroup --------------------------------------------------------- */

static bool write_at(int dfd, const char *file, const char *text) {
    int fd = openat(dfd, file, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    size_t len = strlen(text);
    bool ok = write(fd, text, len) == (ssize_t)len;
    close(fd);
    return ok;
}

static bool write_u64_at(int dfd, const char *file, uint64_t v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    return write_at(dfd, file, buf);
}

/* Removes the cgroups dead sandboxes left in `parent`: whoever made one
 * holds a lock on its directory while it lives; rmdir fails on a cgroup
 * that still holds a process. */
static void sweep(const char *parent) {
    DIR *d = opendir(parent);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, NAME_PREFIX, strlen(NAME_PREFIX)) != 0)
            continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            continue;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
        close(fd);
    }
    closedir(d);
}

/* Makes parent/codeward-<pid>-<random> with the given bounds and records it
 * in cg. v2 and v1 differ only in file names. */
static bool make_one(struct a3s_cgroup *cg, const char *parent, bool v2, uint64_t memory_max,
                     uint64_t max_processes, bool do_sweep) {
    if (cg->ndirs == A3S_CGROUP_MAX_DIRS)
        return false;
    if (do_sweep)
        sweep(parent);
    size_t i = cg->ndirs;
    for (int attempt = 0; attempt < 2; attempt++) { /* a sweep elsewhere may take a new one */
        uint32_t rnd = 0;
        if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd)
            rnd = (uint32_t)time(NULL) ^ (uint32_t)clock();
        if (snprintf(cg->dir[i], PATH_MAX, "%s/%s%d-%08x", parent, NAME_PREFIX, (int)getpid(),
                     (unsigned)rnd) >= PATH_MAX)
            return false;
        if (mkdir(cg->dir[i], 0755) < 0)
            return false; /* no permission, or not a cgroup file system after all */
        int dfd = open(cg->dir[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        bool ok = dfd >= 0 && flock(dfd, LOCK_EX | LOCK_NB) == 0;
        int procs = ok ? openat(dfd, "cgroup.procs", O_WRONLY | O_CLOEXEC) : -1;
        int oom = -1;
        ok = procs >= 0;
        if (ok && memory_max != UINT64_MAX) {
            if (v2) {
                ok = write_u64_at(dfd, "memory.max", memory_max);
                write_at(dfd, "memory.swap.max", "0"); /* absent without swap accounting */
            } else {
                ok = write_u64_at(dfd, "memory.limit_in_bytes", memory_max);
                write_u64_at(dfd, "memory.memsw.limit_in_bytes", memory_max); /* likewise */
            }
            oom = ok ? openat(dfd, v2 ? "memory.events" : "memory.oom_control",
                              O_RDONLY | O_CLOEXEC)
                     : -1;
            ok = oom >= 0;
        }
        if (ok && max_processes != UINT64_MAX)
            ok = write_u64_at(dfd, "pids.max", max_processes);
        if (ok) {
            cg->dir_fd[i] = dfd;
            cg->procs_fd[i] = procs;
            if (oom >= 0)
                cg->oom_fd = oom;
            cg->ndirs++;
            cg->memory |= memory_max != UINT64_MAX;
            cg->pids |= max_processes != UINT64_MAX;
            return true;
        }
        if (oom >= 0)
            close(oom);
        if (procs >= 0)
            close(procs);
        if (dfd >= 0)
            close(dfd);
        rmdir(cg->dir[i]);
        cg->dir[i][0] = '\0';
    }
    return false;
}

/* Whether the cgroup v2 file `file` in `dir` lists `controller`. */
static bool lists_controller(const char *dir, const char *file, const char *controller) {
    char path[PATH_MAX + 32], buf[512];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return has_token(buf, controller, ' ');
}

/* The v2 cgroup under which ours would go: the parent of the caller's own
 * (its own, if that is the root), if it hands `controller` to its
 * children and lets this caller move processes between them. */
static bool v2_parent(char parent[PATH_MAX], char mnt[PATH_MAX]) {
    char own[PATH_MAX], root[PATH_MAX];
    if (!find_mount(NULL, mnt, root) || !own_cgroup(NULL, own))
        return false;
    snprintf(parent, PATH_MAX, "%s", own);
    if (strcmp(own, mnt) != 0) {
        char *slash = strrchr(parent, '/');
        if (!slash || (size_t)(slash - parent) < strlen(mnt))
            return false;
        *slash = '\0';
    }
    char procs[PATH_MAX + 16];
    snprintf(procs, sizeof procs, "%s/cgroup.procs", parent);
    return access(procs, W_OK) == 0;
}

void a3s_cgroup_create(struct a3s_cgroup *cg, uint64_t memory_max, uint64_t max_processes,
                       bool first) {
    a3s_cgroup_init(cg);
    bool want_mem = memory_max != UINT64_MAX, want_pids = max_processes != UINT64_MAX;
    if (!want_mem && !want_pids)
        return;
    bool do_sweep = first;
    char parent[PATH_MAX], mnt[PATH_MAX];
    if (v2_parent(parent, mnt)) {
        bool mem = want_mem && lists_controller(parent, "cgroup.subtree_control", "memory");
        bool pids = want_pids && lists_controller(parent, "cgroup.subtree_control", "pids");
        if (mem || pids)
            make_one(cg, parent, true, mem ? memory_max : UINT64_MAX,
                     pids ? max_processes : UINT64_MAX, do_sweep);
    }
    /* what v2 could not carry, from the v1 hierarchies (hybrid hosts) */
    char own_mem[PATH_MAX], own_pids[PATH_MAX];
    bool mem_v1 = want_mem && !cg->memory && own_cgroup("memory", own_mem);
    bool pids_v1 = want_pids && !cg->pids && own_cgroup("pids", own_pids);
    if (mem_v1 && pids_v1 && !strcmp(own_mem, own_pids)) { /* one hierarchy carries both */
        make_one(cg, own_mem, false, memory_max, max_processes, do_sweep);
    } else {
        if (mem_v1)
            make_one(cg, own_mem, false, memory_max, UINT64_MAX, do_sweep);
        if (pids_v1)
            make_one(cg, own_pids, false, UINT64_MAX, max_processes, do_sweep);
    }
}

int a3s_cgroup_join(const struct a3s_cgroup *cg) {
    for (size_t i = 0; i < cg->ndirs; i++)
        if (write(cg->procs_fd[i], "0", 1) != 1)
            return -errno;
    return 0;
}

uint64_t a3s_cgroup_oom_kills(const struct a3s_cgroup *cg) {
    char buf[4096];
    ssize_t n = cg->oom_fd >= 0 ? pread(cg->oom_fd, buf, sizeof buf - 1, 0) : -1;
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    for (const char *line = buf; line && *line;) {
        if (!strncmp(line, "oom_kill ", 9))
            return strtoull(line + 9, NULL, 10);
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    return 0;
}

static void close_all(struct a3s_cgroup *cg) {
    for (size_t i = 0; i < A3S_CGROUP_MAX_DIRS; i++) {
        if (cg->procs_fd[i] >= 0)
            close(cg->procs_fd[i]);
        if (cg->dir_fd[i] >= 0)
            close(cg->dir_fd[i]); /* releases the lock */
        cg->procs_fd[i] = cg->dir_fd[i] = -1;
    }
    if (cg->oom_fd >= 0)
        close(cg->oom_fd);
    cg->oom_fd = -1;
}

void a3s_cgroup_destroy(struct a3s_cgroup *cg) {
    for (size_t i = 0; i < cg->ndirs; i++) {
        for (int waited = 0; rmdir(cg->dir[i]) < 0 && errno == EBUSY && waited < REMOVE_WAIT_MS;
             waited += 10) {
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    close_all(cg);
    a3s_cgroup_init(cg);
}

/* ---- a cgroup to own a program by ---------------------------------------------- */

bool a3s_cgroup_create_killable(struct a3s_cgroup *cg, char *why, size_t cap) {
    a3s_cgroup_init(cg);
    char parent[PATH_MAX], mnt[PATH_MAX], own[PATH_MAX];
    if (v2_parent(parent, mnt) && make_one(cg, parent, true, UINT64_MAX, UINT64_MAX, true)) {
        if (faccessat(cg->dir_fd[0], "cgroup.kill", W_OK, 0) == 0)
            return true;
        a3s_cgroup_destroy(cg); /* before Linux 5.14: no cgroup.kill */
    }
    if (own_cgroup("freezer", own) && make_one(cg, own, false, UINT64_MAX, UINT64_MAX, true)) {
        if (faccessat(cg->dir_fd[0], "freezer.state", W_OK, 0) == 0)
            return true;
        a3s_cgroup_destroy(cg);
    }
    snprintf(why, cap,
             "no cgroup of its own can be made (neither a cgroup v2 parent this process may "
             "create a cgroup with cgroup.kill under, nor a cgroup v1 freezer hierarchy it may "
             "write to)");
    return false;
}

static bool read_at(int dfd, const char *file, char *buf, size_t cap) {
    int fd = openat(dfd, file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, buf, cap - 1);
    close(fd);
    if (n < 0)
        return false;
    buf[n] = '\0';
    return true;
}

/* Whether cgroup.procs lists no process (unreadable: not known to be empty). */
static bool empty(int dfd) {
    char c[2];
    return read_at(dfd, "cgroup.procs", c, sizeof c) && c[0] == '\0';
}

static void pause_ms(long ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* v1: FROZEN until freezer.state says so (up to 100 ms a round), or THAWED. */
static bool set_freezer(int dfd, const char *state) {
    if (!write_at(dfd, "freezer.state", state))
        return false;
    char now[32];
    for (int i = 0; i < 100; i++) {
        if (read_at(dfd, "freezer.state", now, sizeof now) &&
            !strncmp(now, state, strlen(state)))
            return true;
        pause_ms(1);
    }
    return false;
}

/* v1: every pid in the frozen cgroup gets SIGKILL, delivered once it thaws. */
static void kill_frozen(int dfd) {
    int fd = openat(dfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
    FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return;
    }
    int pid;
    while (fscanf(f, "%d", &pid) == 1)
        if (pid > 0)
            kill(pid, SIGKILL);
    fclose(f);
}

bool a3s_cgroup_kill_all(int dfd) {
    bool v2 = faccessat(dfd, "cgroup.kill", F_OK, 0) == 0;
    for (int round = 0; round < 20; round++) {
        if (empty(dfd))
            return true;
        if (v2) {
            write_at(dfd, "cgroup.kill", "1");
        } else {
            /* a pid is signalled only while the cgroup is frozen: then it cannot
             * exit and be reused by a process that is not ours */
            if (set_freezer(dfd, "FROZEN"))
                kill_frozen(dfd);
            set_freezer(dfd, "THAWED");
        }
        pause_ms(5 * (round + 1));
    }
    return empty(dfd);
}

void a3s_cgroup_abandon(struct a3s_cgroup *cg) {
    for (size_t i = 0; i < cg->ndirs; i++)
        rmdir(cg->dir[i]); /* busy: the next handle's sweep removes it once empty */
    close_all(cg);
    a3s_cgroup_init(cg);
}

void a3s_cgroup_forget(struct a3s_cgroup *cg) {
    close_all(cg);
    a3s_cgroup_init(cg);
}

#else
typedef int a3s_cgroup_linux_unused; /* ISO C forbids an empty unit */
#endif
