/* features_other.c - platforms without a native sandbox in this version. */
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
