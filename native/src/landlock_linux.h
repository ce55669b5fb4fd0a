/* landlock_linux.h - the Landlock layer the init applies to the sandboxed command.
 * Internal: not part of the ABI. */
#ifndef A3S_LANDLOCK_LINUX_H
#define A3S_LANDLOCK_LINUX_H

#include "internal.h"

/* A prepared ruleset: built before fork, enforced in the child. */
struct a3s_landlock {
    int ruleset_fd; /* -1 when Landlock is unavailable */
    int abi;        /* the kernel's Landlock ABI version, 0 if none */
};

/* Builds a ruleset that allows reading and executing everywhere, writing
 * only beneath the `rw` paths (as seen by the calling process), no TCP bind
 * or connect (ABI >= 4), and scopes abstract Unix sockets and signals to
 * the sandbox (ABI >= 6). With no Landlock in the kernel, returns A3S_OK
 * with ruleset_fd -1 and abi 0: Landlock is defence in depth here, the
 * namespaces and seccomp are the boundary. */
int a3s_landlock_prepare(const char *const *rw, size_t nrw, struct a3s_landlock *out,
                         a3s_error *err);

/* As a3s_landlock_prepare, but with allow_connect TCP connect stays
 * unrestricted (bind does not): for a sandbox the host granted the network
 * (A3S_SANDBOX_SHARE_NET). */
int a3s_landlock_prepare_net(const char *const *rw, size_t nrw, bool allow_connect,
                             struct a3s_landlock *out, a3s_error *err);

/* As a3s_landlock_prepare, but TCP connect is allowed to connect_port (0:
 * none), whatever the address: for a command with a network grant, whose
 * network namespace holds only loopback, where the grant's proxy listens on
 * that port (ABI >= 4; before that Landlock does not restrict TCP). */
int a3s_landlock_prepare_port(const char *const *rw, size_t nrw, uint16_t connect_port,
                              struct a3s_landlock *out, a3s_error *err);

/* Enforces the prepared ruleset on the calling thread and its future
 * children (sets NO_NEW_PRIVS). Only system calls: async-signal-safe, for
 * use between fork and exec. Returns 0 or -errno. */
int a3s_landlock_enforce(const struct a3s_landlock *ll);

void a3s_landlock_close(struct a3s_landlock *ll);

#endif
