/* sandbox_other.c - platforms without the native boundary in this version. */
#include "internal.h"

#if !defined(__linux__)
A3S_API int a3s_sandbox_new(const a3s_sandbox_config *cfg, a3s_sandbox **out, a3s_error *err) {
    (void)cfg;
    if (out)
        *out = NULL;
    return a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0,
                    "the native sandbox is not supported on this platform");
}

A3S_API int a3s_sandbox_exec(a3s_sandbox *sb, const a3s_exec_options *opts,
                             a3s_process_result **out, a3s_error *err) {
    (void)sb;
    (void)opts;
    if (out)
        *out = NULL;
    return a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0,
                    "the native sandbox is not supported on this platform");
}

A3S_API int a3s_sandbox_probe(a3s_sandbox *sb, uint64_t timeout_ms, a3s_error *err) {
    (void)sb;
    (void)timeout_ms;
    return a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0,
                    "the native sandbox is not supported on this platform");
}

A3S_API const char *a3s_sandbox_workspace(const a3s_sandbox *sb) {
    (void)sb;
    return NULL;
}

A3S_API int a3s_sandbox_stop(a3s_sandbox *sb, a3s_error *err) {
    (void)sb;
    return a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0,
                    "the native sandbox is not supported on this platform");
}

A3S_API int a3s_sandbox_info_get(const a3s_sandbox *sb, a3s_sandbox_info *out, a3s_error *err) {
    (void)sb;
    (void)out;
    return a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0,
                    "the native sandbox is not supported on this platform");
}

A3S_API void a3s_sandbox_free(a3s_sandbox *sb) { (void)sb; }
#else
typedef int a3s_sandbox_other_unused; /* ISO C forbids an empty unit */
#endif
