/* child_other.c - owned processes on every platform but Linux.
 *
 * Not supported in this version (they run under a3s-init with pidfds and a
 * lifeline): every call that returns a status fails with A3S_E_UNSUPPORTED
 * and a message naming the call and the platform (platform.h);
 * a3s_child_free accepts the NULL handle a spawn leaves. */
#include "a3s/a3s.h"

#if !defined(__linux__)
#include "internal.h"
#include "platform.h"

#define UNSUPPORTED(call)                                                                   \
    a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0,                                                 \
             call ": owned processes are not supported on " A3S_PLATFORM_NAME               \
             " (Linux only in this version)")

A3S_API int a3s_child_spawn(const a3s_child_options *opts, a3s_child **out,
                            a3s_child_stdio *stdio, a3s_error *err) {
    (void)opts;
    (void)stdio;
    if (out)
        *out = NULL;
    return UNSUPPORTED("a3s_child_spawn");
}

A3S_API int a3s_sandbox_spawn(a3s_sandbox *sb, const a3s_child_options *opts, a3s_child **out,
                              a3s_child_stdio *stdio, a3s_error *err) {
    (void)sb;
    (void)opts;
    (void)stdio;
    if (out)
        *out = NULL;
    return UNSUPPORTED("a3s_sandbox_spawn");
}

A3S_API int a3s_child_wait(a3s_child *c, uint64_t timeout_ms, a3s_child_status *out,
                           a3s_error *err) {
    (void)c;
    (void)timeout_ms;
    (void)out;
    return UNSUPPORTED("a3s_child_wait");
}

A3S_API int a3s_child_stop(a3s_child *c, a3s_child_status *out, a3s_error *err) {
    (void)c;
    (void)out;
    return UNSUPPORTED("a3s_child_stop");
}

A3S_API int a3s_child_stop_with(a3s_child *c, int sig, a3s_child_status *out, a3s_error *err) {
    (void)c;
    (void)sig;
    (void)out;
    return UNSUPPORTED("a3s_child_stop_with");
}

A3S_API int a3s_child_signal(a3s_child *c, int sig, a3s_error *err) {
    (void)c;
    (void)sig;
    return UNSUPPORTED("a3s_child_signal");
}

A3S_API int a3s_child_info(const a3s_child *c, a3s_child_status *out, a3s_error *err) {
    (void)c;
    (void)out;
    return UNSUPPORTED("a3s_child_info");
}

A3S_API void a3s_child_free(a3s_child *c) { (void)c; }

#else
typedef int a3s_child_other_unused; /* ISO C forbids an empty unit */
#endif
