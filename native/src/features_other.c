/* features_other.c - what the kernel offers, on every platform but Linux.
 *
 * Supported everywhere: the policy (glob, rule set, path normalization),
 * versions, status names and this call, which reports that none of the
 * boundary's kernel features exists here (flags 0, no Landlock). The process
 * runner (process_other.c) and the sandbox (sandbox_other.c) are Linux-only
 * in this version; their calls fail with A3S_E_UNSUPPORTED naming the
 * platform. */
#include "internal.h"

#if !defined(__linux__)
A3S_API int a3s_features(a3s_features_info *out, a3s_error *err) {
    if (!out || out->struct_size < sizeof(a3s_features_info))
        return a3s_fail(err, A3S_E_INVALID, 0, 0, "a3s_features: NULL or too small struct");
    out->flags = 0;
    out->landlock_abi = 0;
    return a3s_ok(err);
}
#else
typedef int a3s_features_other_unused; /* ISO C forbids an empty unit */
#endif
