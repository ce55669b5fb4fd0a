/* child_other.c - owned processes where only Linux is implemented: every call says so. */
#include "a3s/a3s.h"

#if !defined(__linux__)
#include "internal.h"

#if defined(__APPLE__)
#  define PLATFORM "macOS"
#elif defined(_WIN32)
#  define PLATFORM "Windows"
#else
#  define PLATFORM "this platform"
#endif

A3S_API int a3s_child_spawn(const a3s_child_options *opts, a3s_child **out,
                            a3s_child_stdio *stdio, a3s_error *err) {
    (void)opts;
    (void)stdio;
    if (out)
        *out = NULL;
    return a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0,
                    "owned processes (a3s_child_spawn) are not implemented on " PLATFORM);
}

A3S_API int a3s_sandbox_spawn(a3s_sandbox *sb, const a3s_child_options *opts, a3s_child **out,
                              a3s_child_stdio *stdio, a3s_error *err) {
    (void)sb;
    (void)opts;
    (void)stdio;
    if (out)
        *out = NULL;
    return a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0,
                    "a3s_sandbox_spawn is not implemented on " PLATFORM);
}

A3S_API int a3s_child_wait(a3s_child *c, uint64_t timeout_ms, a3s_child_status *out,
                           a3s_error *err) {
    (void)c;
    (void)timeout_ms;
    (void)out;
    return a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0, "owned processes are not implemented on " PLATFORM);
}

A3S_API int a3s_child_stop(a3s_child *c, a3s_child_status *out, a3s_error *err) {
    (void)c;
    (void)out;
    return a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0, "owned processes are not implemented on " PLATFORM);
}

A3S_API int a3s_child_info(const a3s_child *c, a3s_child_status *out, a3s_error *err) {
    (void)c;
    (void)out;
    return a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0, "owned processes are not implemented on " PLATFORM);
}

A3S_API void a3s_child_free(a3s_child *c) { (void)c; }

#else
typedef int a3s_child_other_unused; /* ISO C forbids an empty unit */
#endif
