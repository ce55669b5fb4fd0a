/* child_owned_linux.c - where a3s_child_spawn's program runs when it is owned.
 *
 * A program on the host (an MCP server the host trusts) keeps the host's
 * file system and network, but runs in a user and a pid namespace of its
 * own, under a3s-init as PID 1 (bubblewrap makes them: it already does the
 * uid map and mount dance every sandbox relies on). The pid namespace is
 * what makes ownership hold: the kernel drops a SIGKILL from inside the
 * namespace to its init, every orphan is reparented to the init, and when
 * the init exits every process left is killed. Its own /proc keeps the
 * host's processes out of sight: their environment (the host's secrets)
 * and memory.
 *
 * `--dev-bind / /` copies every mount of the host, the host's /proc among
 * them; `--proc /proc` covers that one, and every other proc mount of the
 * host (a chroot's, a container runtime's) is covered with an empty tmpfs
 * here, which the init checks before it starts the program. The host's
 * SysV IPC and /dev/shm are replaced by the namespace's own, and the init
 * gives the program a session keyring of its own. The program
 * gets no capability (`--cap-drop ALL`), so it cannot unmount what covers
 * them; in a user namespace it makes itself, the copied mounts are locked
 * together and cannot be taken apart either.
 */
#define _GNU_SOURCE
#include "a3s/a3s.h"

#if defined(__linux__)

#include "child_owned.h"
#include "mountinfo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool a3s_child_can_own(const char *bwrap, char *why, size_t cap) {
    a3s_features_info f = {.struct_size = sizeof f};
    if (!bwrap) {
        snprintf(why, cap, "bubblewrap (bwrap) was not found");
        return false;
    }
    if (bwrap[0] != '/' || access(bwrap, X_OK) != 0) {
        snprintf(why, cap, "bubblewrap %s is not an executable absolute path", bwrap);
        return false;
    }
    if (a3s_features(&f, NULL) != A3S_OK ||
        (f.flags & (A3S_FEATURE_USER_NAMESPACES | A3S_FEATURE_PID_NAMESPACES)) !=
            (A3S_FEATURE_USER_NAMESPACES | A3S_FEATURE_PID_NAMESPACES)) {
        snprintf(why, cap, "this process cannot create user and pid namespaces");
        return false;
    }
    return true;
}

static void push_pair(struct a3s_strvec *v, const char *opt, const char *value) {
    a3s_strvec_push(v, opt);
    a3s_strvec_push(v, value);
}

/* `--tmpfs P` for every proc mount of this process's view but /proc and
 * what lies under it (covered by the new /proc). */
static void cover_other_procs(struct a3s_strvec *argv) {
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return; /* the init's check still refuses a reachable one */
    char line[8192];
    struct a3s_mount m;
    int rc;
    while ((rc = a3s_mountinfo_next(f, line, sizeof line, &m)) != 0) {
        if (rc < 0 || strcmp(m.fstype, "proc") != 0)
            continue; /* one we cannot read: the init's check refuses it if it is proc */
        if (strcmp(m.mount_point, "/proc") == 0 || strncmp(m.mount_point, "/proc/", 6) == 0)
            continue;
        push_pair(argv, "--tmpfs", m.mount_point);
    }
    fclose(f);
}

int a3s_child_owned_argv(const char *bwrap, int image_fd, struct a3s_strvec *argv,
                         unsigned long long *pidns, a3s_error *err) {
    struct stat st;
    if (stat("/proc/self/ns/pid", &st) < 0)
        return a3s_fail(err, A3S_E_UNSUPPORTED, 0, A3S_CHILD_UNOWNABLE,
                        "a3s_child_spawn: the program cannot be owned: this process's pid "
                        "namespace cannot be read from /proc/self/ns/pid");
    *pidns = (unsigned long long)st.st_ino;
    /* the IPC namespace too: the host's SysV shared memory is not the program's to read */
    static const char *const ns[] = {"--unshare-user", "--unshare-pid", "--unshare-ipc",
                                     "--as-pid-1", "--cap-drop", "ALL"};
    a3s_strvec_push(argv, bwrap);
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
        a3s_strvec_push(argv, ns[i]);
    push_pair(argv, "--dev-bind", "/");
    a3s_strvec_push(argv, "/");
    push_pair(argv, "--proc", "/proc");
    cover_other_procs(argv);
    /* POSIX shared memory of the host's processes stays theirs (a private, empty one) */
    if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode))
        push_pair(argv, "--tmpfs", "/dev/shm");
    /* no --chdir: bubblewrap starts in its own working directory, which the
     * launch already set (a missing one fails there, with its own error), and
     * finds at the same path under the host's root */
    a3s_strvec_push(argv, "--");
    /* the init's pinned image, inherited by bubblewrap, seen through the new /proc */
    char self[48];
    snprintf(self, sizeof self, "/proc/self/fd/%d", image_fd);
    a3s_strvec_push(argv, self);
    return A3S_OK;
}

#else
typedef int a3s_child_owned_linux_unused; /* ISO C forbids an empty unit */
#endif
