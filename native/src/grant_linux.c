/* grant_linux.c - the host's side of a network grant (a3s.h, "Network grants").
 *
 * The boundary does the rest: the init makes the proxy's socket and hands
 * it over (native/init/grant.c), Landlock opens the one port, and the init
 * shuts the socket down when the command ends. Here: which handles and
 * options may carry a grant, and the variables that point the command's
 * tools at the proxy.
 */
#define _GNU_SOURCE
#include "a3s/a3s.h"

#if defined(__linux__)

#include "env.h"
#include "internal.h"
#include "sandbox_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

int a3s_grant_check(const a3s_sandbox *sb, const a3s_exec_options *o, a3s_error *err) {
    if (o->policy_digest && (strlen(o->policy_digest) != A3S_POLICY_DIGEST_SIZE - 1 ||
                             strncmp(o->policy_digest, "sha256:", 7) != 0))
        return a3s_fail(err, A3S_E_INVALID, 0, 0,
                        "policy_digest must be \"sha256:\" and 64 hex digits");
    if (!(o->flags & A3S_EXEC_NETWORK_GRANT))
        return A3S_OK;
    if (sb->flags & A3S_SANDBOX_PROCESS_HOST)
        return a3s_fail(err, A3S_E_INVALID, 0, 0,
                        "a network grant needs a sandbox: the process host has no boundary to "
                        "mediate");
    if (sb->flags & A3S_SANDBOX_SHARE_NET)
        return a3s_fail(err, A3S_E_INVALID, 0, 0,
                        "a network grant is for a sandbox without network; this handle shares "
                        "the host's");
    if (!o->policy_digest)
        return a3s_fail(err, A3S_E_INVALID, 0, 0,
                        "a network grant needs the policy_digest it was approved against");
    int domain = 0, type = 0;
    socklen_t len = sizeof domain;
    if (getsockopt(o->grant_fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) < 0 ||
        (len = sizeof type, getsockopt(o->grant_fd, SOL_SOCKET, SO_TYPE, &type, &len)) < 0 ||
        domain != AF_UNIX || type != SOCK_SEQPACKET || o->grant_fd < 3)
        return a3s_fail(err, A3S_E_INVALID, errno, o->grant_fd,
                        "grant_fd %d is not an AF_UNIX SOCK_SEQPACKET socket above stdio",
                        o->grant_fd);
    return A3S_OK;
}

int a3s_grant_env(struct a3s_strvec *env, a3s_error *err) {
    char http[64], socks[64];
    snprintf(http, sizeof http, "http://127.0.0.1:%d", A3S_GRANT_PROXY_PORT);
    snprintf(socks, sizeof socks, "socks5h://127.0.0.1:%d", A3S_GRANT_PROXY_PORT);
    char entries[10][96];
    static const char *const names[] = {"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy",
                                        "ALL_PROXY",  "all_proxy",  "NO_PROXY",    "no_proxy"};
    const char *entry_ptrs[8];
    for (size_t i = 0; i < 8; i++) {
        const char *value = i < 4 ? http : i < 6 ? socks : "";
        snprintf(entries[i], sizeof entries[i], "%s=%s", names[i], value);
        entry_ptrs[i] = entries[i];
    }
    return a3s_env_overlay(env, entry_ptrs, 8, err);
}

#else
typedef int a3s_grant_linux_unused; /* ISO C forbids an empty unit */
#endif
