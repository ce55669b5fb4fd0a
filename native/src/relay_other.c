/* relay_other.c - a3s_relay on every platform but Linux: not supported in this version (it
 * splices, and it serves the network grants of the Linux sandbox). */
#include "internal.h"
#include "platform.h"

#if !defined(__linux__)
A3S_API int a3s_relay(int a, int b, const a3s_relay_options *opts, a3s_relay_stats *out,
                      a3s_error *err) {
    (void)a;
    (void)b;
    (void)opts;
    (void)out;
    return a3s_fail(err, A3S_E_UNSUPPORTED, 0, 0,
                    "a3s_relay: not supported on " A3S_PLATFORM_NAME " (it needs splice(2))");
}
#else
typedef int a3s_relay_other_unused; /* ISO C forbids an empty unit */
#endif
