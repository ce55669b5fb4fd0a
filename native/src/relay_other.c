/* relay_other.c - a3s_relay exists on Linux only in this version. */
#include "internal.h"

#if !defined(__linux__)
A3S_API int a3s_relay(int a, int b, const a3s_relay_options *opts, a3s_relay_stats *out,
                      a3s_error *err) {
    (void)a;
    (void)b;
    (void)opts;
    (void)out;
    return a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0, "a3s_relay: not supported on this platform");
}
#else
typedef int a3s_relay_other_unused; /* ISO C forbids an empty unit */
#endif
