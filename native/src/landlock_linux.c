/* landlock_linux.c - Landlock rules for the sandboxed command (defence in depth).
 *
 * The kernel headers on build machines may be older than the running
 * kernel, so the ABI pieces newer than ABI 1 are defined here and chosen
 * at run time from the version the kernel reports.
 */
#define _GNU_SOURCE
#include "landlock_linux.h"

#if defined(__linux__)

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_landlock_create_ruleset
#  define SYS_landlock_create_ruleset 444
#  define SYS_landlock_add_rule 445
#  define SYS_landlock_restrict_self 446
#endif

#define LL_CREATE_RULESET_VERSION (1u << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_RULE_NET_PORT 2 /* ABI 4 */

#define LL_FS_EXECUTE (1ull << 0)
#define LL_FS_WRITE_FILE (1ull << 1)
#define LL_FS_READ_FILE (1ull << 2)
#define LL_FS_READ_DIR (1ull << 3)
#define LL_FS_REMOVE_DIR (1ull << 4)
#define LL_FS_REMOVE_FILE (1ull << 5)
#define LL_FS_MAKE_CHAR (1ull << 6)
#define LL_FS_MAKE_DIR (1ull << 7)
#define LL_FS_MAKE_REG (1ull << 8)
#define LL_FS_MAKE_SOCK (1ull << 9)
#define LL_FS_MAKE_FIFO (1ull << 10)
#define LL_FS_MAKE_BLOCK (1ull << 11)
#define LL_FS_MAKE_SYM (1ull << 12)
#define LL_FS_REFER (1ull << 13)    /* ABI 2 */
#define LL_FS_TRUNCATE (1ull << 14) /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ull << 15) /* ABI 5 */
#define LL_NET_BIND_TCP (1ull << 0)  /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ull << 1)
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ull << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ull << 1)

struct ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};

struct ll_path_beneath_attr {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

struct ll_net_port_attr {
    uint64_t allowed_access;
    uint64_t port;
};

#define LL_FS_READ (LL_FS_EXECUTE | LL_FS_READ_FILE | LL_FS_READ_DIR)
#define LL_FS_WRITE                                                                              \
    (LL_FS_WRITE_FILE | LL_FS_REMOVE_DIR | LL_FS_REMOVE_FILE | LL_FS_MAKE_CHAR | LL_FS_MAKE_DIR | \
     LL_FS_MAKE_REG | LL_FS_MAKE_SOCK | LL_FS_MAKE_FIFO | LL_FS_MAKE_BLOCK | LL_FS_MAKE_SYM)

/* What this ABI version knows how to restrict. */
static uint64_t fs_rights(int abi) {
    uint64_t all = LL_FS_READ | LL_FS_WRITE;
    if (abi >= 2)
        all |= LL_FS_REFER;
    if (abi >= 3)
        all |= LL_FS_TRUNCATE;
    if (abi >= 5)
        all |= LL_FS_IOCTL_DEV;
    return all;
}

static int add_path(int ruleset, const char *path, uint64_t access, a3s_error *err) {
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return a3s_fail(err, A3S_E_SYSTEM, errno, 0, "landlock: open %s: %s", path,
                        strerror(errno));
    struct ll_path_beneath_attr attr = {.allowed_access = access, .parent_fd = fd};
    long rc = syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &attr, 0);
    int saved = errno;
    close(fd);
    if (rc < 0)
        return a3s_fail(err, A3S_E_SYSTEM, saved, 0, "landlock: add rule for %s: %s", path,
                        strerror(saved));
    return A3S_OK;
}

int a3s_landlock_prepare(const char *const *rw, size_t nrw, struct a3s_landlock *out,
                         a3s_error *err) {
    return a3s_landlock_prepare_net(rw, nrw, false, out, err);
}

static int prepare(const char *const *rw, size_t nrw, bool allow_connect, uint16_t connect_port,
                   struct a3s_landlock *out, a3s_error *err);

int a3s_landlock_prepare_net(const char *const *rw, size_t nrw, bool allow_connect,
                             struct a3s_landlock *out, a3s_error *err) {
    return prepare(rw, nrw, allow_connect, 0, out, err);
}

int a3s_landlock_prepare_port(const char *const *rw, size_t nrw, uint16_t connect_port,
                              struct a3s_landlock *out, a3s_error *err) {
    return prepare(rw, nrw, false, connect_port, out, err);
}

static int prepare(const char *const *rw, size_t nrw, bool allow_connect, uint16_t connect_port,
                   struct a3s_landlock *out, a3s_error *err) {
    out->ruleset_fd = -1;
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
    out->abi = abi > 0 ? (int)abi : 0;
    if (out->abi <= 0)
        return a3s_ok(err);

    struct ll_ruleset_attr attr = {.handled_access_fs = fs_rights(out->abi)};
    size_t size = sizeof attr.handled_access_fs;
    if (out->abi >= 4) {
        attr.handled_access_net = LL_NET_BIND_TCP | (allow_connect ? 0 : LL_NET_CONNECT_TCP);
        size += sizeof attr.handled_access_net;
    }
    if (out->abi >= 6) {
        attr.scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL;
        size += sizeof attr.scoped;
    }
    long fd = syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (fd < 0)
        return a3s_fail(err, A3S_E_SYSTEM, errno, 0, "landlock: create ruleset (ABI %d): %s",
                        out->abi, strerror(errno));
    out->ruleset_fd = (int)fd;

    uint64_t all = fs_rights(out->abi);
    uint64_t read = LL_FS_READ | (all & LL_FS_IOCTL_DEV);
    int rc = add_path(out->ruleset_fd, "/", read, err);
    for (size_t i = 0; rc == A3S_OK && i < nrw; i++)
        rc = add_path(out->ruleset_fd, rw[i], all, err);
    if (rc == A3S_OK && connect_port && out->abi >= 4) {
        /* a network grant: the proxy's port, and no other */
        struct ll_net_port_attr port = {.allowed_access = LL_NET_CONNECT_TCP,
                                        .port = connect_port};
        if (syscall(SYS_landlock_add_rule, out->ruleset_fd, LL_RULE_NET_PORT, &port, 0) < 0)
            rc = a3s_fail(err, A3S_E_SYSTEM, errno, 0, "landlock: add a rule for port %u: %s",
                          (unsigned)connect_port, strerror(errno));
    }
    if (rc != A3S_OK)
        a3s_landlock_close(out);
    return rc;
}

int a3s_landlock_enforce(const struct a3s_landlock *ll) {
    if (ll->ruleset_fd < 0)
        return 0;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return -errno;
    if (syscall(SYS_landlock_restrict_self, ll->ruleset_fd, 0) < 0)
        return -errno;
    return 0;
}

void a3s_landlock_close(struct a3s_landlock *ll) {
    if (ll->ruleset_fd >= 0)
        close(ll->ruleset_fd);
    ll->ruleset_fd = -1;
}

#else
typedef int a3s_landlock_unused;
#endif
