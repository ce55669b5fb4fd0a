/* init_image_linux.c - the init's bytes, pinned in a sealed memfd (see init_image.h). */
#define _GNU_SOURCE
#include "init_image.h"

#if defined(__linux__)

#include "internal.h"
#include "posix_util.h"
#include "sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010u /* Linux 6.3: executable even where memfds default to noexec */
#endif

static bool valid_digest(const char *hex) {
    for (int i = 0; i < 64; i++)
        if (!((hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f') ||
              (hex[i] >= 'A' && hex[i] <= 'F')))
            return false;
    return hex[64] == '\0';
}

static bool lies_under(const char *path, const char *dir) {
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return true;
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static int make_memfd(void) {
    int fd = memfd_create("a3s-init", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
    if (fd < 0 && errno == EINVAL) /* a kernel before 6.3 knows no MFD_EXEC */
        fd = memfd_create("a3s-init", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    return a3s_fd_above_stdio(fd);
}

/* Copies src (size bytes, no more) into dst, hashing what it copies. */
static int copy(int src, int dst, off_t size, char hex[65], const char *path, a3s_error *err) {
    struct a3s_sha256 h;
    a3s_sha256_init(&h);
    char buf[65536];
    off_t done = 0;
    for (;;) {
        ssize_t n = read(src, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return a3s_fail(err, A3S_E_UNSUPPORTED, errno, 0, "a3s-init %s cannot be read: %s",
                            path, strerror(errno));
        if (n == 0)
            break;
        if ((done += n) > size)
            return a3s_fail(err, A3S_E_REFUSED, 0, 0,
                            "a3s-init %s grew while it was being read", path);
        a3s_sha256_update(&h, buf, (size_t)n);
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(dst, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0)
                return a3s_fail(err, A3S_E_SYSTEM, errno, 0, "copying a3s-init: %s",
                                strerror(errno));
            off += w;
        }
    }
    if (done != size)
        return a3s_fail(err, A3S_E_REFUSED, 0, 0, "a3s-init %s shrank while it was being read",
                        path);
    a3s_sha256_hex(&h, hex);
    return A3S_OK;
}

int a3s_init_image_open(const char *path, const char *sha256, const char *workspace, int *out,
                        a3s_error *err) {
    *out = -1;
    if (sha256 && !valid_digest(sha256))
        return a3s_fail(err, A3S_E_INVALID, 0, 0,
                        "init_sha256 must be 64 hexadecimal digits (the SHA-256 of a3s-init)");
    if (!sha256 && workspace) {
        char *real = realpath(path, NULL);
        bool inside = real && lies_under(real, workspace); /* else open() says why */
        free(real);
        if (inside)
            return a3s_fail(err, A3S_E_REFUSED, 0, 0,
                            "a3s-init %s lies inside the workspace %s, where a command can "
                            "replace it, and no init_sha256 was given to check it against: "
                            "install the package outside the workspace, or give its digest",
                            path, workspace);
    }
    int src = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (src < 0)
        return a3s_fail(err, A3S_E_UNSUPPORTED, errno, 0, "a3s-init %s cannot be opened: %s",
                        path, strerror(errno));
    struct stat st;
    int rc = A3S_OK;
    if (fstat(src, &st) < 0)
        rc = a3s_fail(err, A3S_E_UNSUPPORTED, errno, 0, "a3s-init %s: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0, "a3s-init %s is not a regular file", path);
    else if (st.st_size <= 0 || (uint64_t)st.st_size > A3S_INIT_MAX_BYTES)
        rc = a3s_fail(err, A3S_E_UNSUPPORTED, 0, (int64_t)st.st_size,
                      "a3s-init %s has %lld bytes, not between 1 and %u", path,
                      (long long)st.st_size, A3S_INIT_MAX_BYTES);
    int fd = rc == A3S_OK ? make_memfd() : -1;
    if (rc == A3S_OK && fd < 0)
        rc = a3s_fail(err, A3S_E_SYSTEM, errno, 0, "memfd_create for a3s-init: %s",
                      strerror(errno));
    char hex[65];
    if (rc == A3S_OK)
        rc = copy(src, fd, st.st_size, hex, path, err);
    close(src);
    if (rc == A3S_OK && sha256 && strcasecmp(hex, sha256) != 0)
        rc = a3s_fail(err, A3S_E_REFUSED, 0, 0,
                      "a3s-init %s was changed since the package was built (its SHA-256 is %s, "
                      "the package was built with %s): reinstall the package",
                      path, hex, sha256);
    if (rc == A3S_OK && fcntl(fd, F_ADD_SEALS,
                              F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0)
        rc = a3s_fail(err, A3S_E_SYSTEM, errno, 0, "sealing the copy of a3s-init: %s",
                      strerror(errno));
    if (rc != A3S_OK) {
        a3s_close_fd(&fd);
        return rc;
    }
    *out = fd;
    return A3S_OK;
}

int a3s_init_image_reopen(int image) {
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", image);
    return a3s_fd_above_stdio(open(proc, O_RDONLY | O_CLOEXEC));
}

#else
typedef int a3s_init_image_unused; /* ISO C forbids an empty unit */
#endif
