/* process_other.c - the process runner on every platform but Linux.
 *
 * Not supported in this version (it is built on pidfds, process groups it
 * can prove it owns, and the Linux boundary): a3s_process_run and
 * a3s_process_result_get fail with A3S_E_UNSUPPORTED and a message naming
 * the platform; a3s_process_result_free accepts the NULL result they leave. */
#include "internal.h"
#include "platform.h"

#if !defined(__linux__)
A3S_API int a3s_process_run(const a3s_process_options *opts, a3s_process_result **out,
                            a3s_error *err) {
    (void)opts;
    if (out)
        *out = NULL;
    return a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0,
                    "a3s_process_run: the process runner is not supported on " A3S_PLATFORM_NAME
                    " (Linux only in this version)");
}

A3S_API int a3s_process_result_get(const a3s_process_result *r, a3s_process_result_view *out,
                                   a3s_error *err) {
    (void)r;
    (void)out;
    return a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0,
                    "a3s_process_result_get: the process runner is not supported on "
                    A3S_PLATFORM_NAME " (Linux only in this version)");
}

A3S_API void a3s_process_result_free(a3s_process_result *r) { (void)r; }
#else
typedef int a3s_process_other_unused; /* ISO C forbids an empty unit */
#endif
