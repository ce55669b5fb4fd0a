/* process_other.c - the process runner exists on Linux only in this version. */
#include "internal.h"

#if !defined(__linux__)
A3S_API int a3s_process_run(const a3s_process_options *opts, a3s_process_result **out,
                            a3s_error *err) {
    (void)opts;
    if (out)
        *out = NULL;
    return a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0,
                    "a3s_process_run: not supported on this platform");
}

A3S_API int a3s_process_result_get(const a3s_process_result *r, a3s_process_result_view *out,
                                   a3s_error *err) {
    (void)r;
    (void)out;
    return a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0,
                    "a3s_process_result_get: not supported on this platform");
}

A3S_API void a3s_process_result_free(a3s_process_result *r) { (void)r; }
#else
typedef int a3s_process_other_unused; /* ISO C forbids an empty unit */
#endif
