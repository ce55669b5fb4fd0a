/* sandbox_other.c - the native sandbox on every platform but Linux.
 *
 * Not supported in this version (the boundary is bubblewrap's namespaces,
 * seccomp and Landlock): every call that returns a status fails with
 * A3S_E_UNSUPPORTED and a message naming the platform and the call;
 * a3s_sandbox_workspace returns NULL and a3s_sandbox_free accepts the NULL
 * handle a3s_sandbox_new leaves. */
#include "internal.h"
#include "platform.h"

#if !defined(__linux__)
#define UNSUPPORTED(call)                                                                   \
    a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0,                                                 \
             call ": the native sandbox is not supported on " A3S_PLATFORM_NAME             \
             " (it needs Linux namespaces, seccomp and Landlock)")

A3S_API int a3s_sandbox_new(const a3s_sandbox_config *cfg, a3s_sandbox **out, a3s_error *err) {
    (void)cfg;
    if (out)
        *out = NULL;
    return UNSUPPORTED("a3s_sandbox_new");
}

A3S_API int a3s_sandbox_exec(a3s_sandbox *sb, const a3s_exec_options *opts,
                             a3s_process_result **out, a3s_error *err) {
    (void)sb;
    (void)opts;
    if (out)
        *out = NULL;
    return UNSUPPORTED("a3s_sandbox_exec");
}

A3S_API int a3s_sandbox_probe(a3s_sandbox *sb, uint64_t timeout_ms, a3s_error *err) {
    (void)sb;
    (void)timeout_ms;
    return UNSUPPORTED("a3s_sandbox_probe");
}

A3S_API const char *a3s_sandbox_workspace(const a3s_sandbox *sb) {
    (void)sb;
    return NULL;
}

A3S_API int a3s_sandbox_stop(a3s_sandbox *sb, a3s_error *err) {
    (void)sb;
    return UNSUPPORTED("a3s_sandbox_stop");
}

A3S_API int a3s_sandbox_info_get(const a3s_sandbox *sb, a3s_sandbox_info *out, a3s_error *err) {
    (void)sb;
    (void)out;
    return UNSUPPORTED("a3s_sandbox_info_get");
}

A3S_API void a3s_sandbox_free(a3s_sandbox *sb) { (void)sb; }
#else
typedef int a3s_sandbox_other_unused; /* ISO C forbids an empty unit */
#endif
